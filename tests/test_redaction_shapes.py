"""Credential-shaped text is redacted everywhere gg writes or prints (issue 12 item 8).

The shapes are built at random within each family (other lengths, alphabets and
prefixes than any one example), and ordinary text that merely looks technical
(hashes, UUIDs, hyphenated words, paths) must come through unchanged.
"""

from __future__ import annotations

import base64
import json
import random
import string
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gg.cli import app
from gg.terminal import inert
from gg.text import REDACTED, cut, redact

_RNG = random.Random(12)
_ALNUM = string.ascii_letters + string.digits


def _chars(n: int, alphabet: str = _ALNUM) -> str:
    """``n`` random characters of ``alphabet``, a digit and a letter of it among them."""
    body = "".join(_RNG.choice(alphabet) for _ in range(n - 2))
    digits = [c for c in alphabet if c.isdigit()] or list(alphabet)
    letters = [c for c in alphabet if c.isalpha()] or list(alphabet)
    return _RNG.choice(letters) + body + _RNG.choice(digits)


def _shapes() -> list[str]:
    """One fresh token of each family, at random lengths."""
    url = _ALNUM + "-_"
    return [
        f"sk-{_chars(_RNG.randint(32, 60))}",
        f"sk-proj-{_chars(_RNG.randint(40, 150), url)}",
        f"sk-svcacct-{_chars(48, url)}",
        f"sk-ant-api03-{_chars(_RNG.randint(80, 100), url)}AA",
        f"sk-ant-admin01-{_chars(60, url)}",
        f"sk-or-v1-{_chars(64, string.hexdigits.lower())}",
        f"ghp_{_chars(36)}",
        f"gho_{_chars(36)}",
        f"ghs_{_chars(36)}",
        f"github_pat_{_chars(22)}_{_chars(59)}",
        f"glpat-{_chars(20, url)}",
        f"AKIA{_chars(16, string.ascii_uppercase + string.digits)}",
        f"ASIA{_chars(16, string.ascii_uppercase + string.digits)}",
        f"xoxb-{_chars(12, string.digits)}-{_chars(13, string.digits)}-{_chars(24)}",
        f"xoxp-{_chars(11, string.digits)}-{_chars(12, string.digits)}-{_chars(32)}",
        f"AIza{_chars(35, url)}",
        f"hf_{_chars(34)}",
        f"npm_{_chars(36)}",
        f"sk_live_{_chars(24)}",
        "eyJ" + _chars(20, url) + ".eyJ" + _chars(30, url) + "." + _chars(43, url),
    ]


@pytest.mark.parametrize("token", _shapes())
@pytest.mark.parametrize(
    "context",
    ["{}", "key: {} (done)", "export X={}", '{{"out": "line one\\n{}"}}', "'{}',", "\t{}\n"],
)
def test_each_family_is_redacted_in_any_context(token: str, context: str) -> None:
    text = context.format(token)
    out = redact(text, ())
    assert token not in out and REDACTED in out, out
    assert out == context.format(REDACTED)  # nothing around the token is eaten


@pytest.mark.parametrize("token", _shapes())
def test_a_redacted_json_line_still_parses(token: str) -> None:
    record = {"a": f"x {token}", "b": "Authorization: Bearer " + token, "c": [token, "y"]}
    body = base64.b64encode(token.encode() * 3).decode()
    record["d"] = (
        f"-----BEGIN PRIVATE KEY-----\n{body[:64]}\n{body[64:]}\n-----END PRIVATE KEY-----"
    )
    record["e"] = "-----BEGIN RSA PRIVATE KEY-----"  # a block cut by a string's end
    record["f"] = "-----END RSA PRIVATE KEY-----"
    line = json.dumps(record)
    back = json.loads(redact(line, ()))
    assert set(back) == set(record) and token not in json.dumps(back)
    assert back["d"] == "[redacted]"
    assert back["e"] == record["e"] and back["f"] == record["f"]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"Authorization: Bearer {_chars(40, _ALNUM + '._-')}", "Authorization: Bearer "),
        (f"authorization: Basic {_chars(24)}==", "authorization: Basic "),
        (f'{{"Authorization": "token {_chars(40)}"}}', '{"Authorization": "token '),
        (f"curl -H 'Authorization: {_chars(32)}'", "curl -H 'Authorization: "),
        (f"sent bearer {_chars(30, _ALNUM + '.-_')}", "sent bearer "),
        (f"aws_secret_access_key = {_chars(40, _ALNUM + '/+')}", "aws_secret_access_key = "),
        (f"https://deploy:{_chars(20)}@git.example.com/r.git", "https://"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----", ""),
    ],
)
def test_headers_and_named_credentials_keep_their_name(text: str, kept: str) -> None:
    out = redact(text, ())
    assert out.startswith(kept + REDACTED), out


@pytest.mark.parametrize(
    "text",
    [
        "pip install scikit-learn; the sk-learn API; sk-based-approach-to-everything-here-now",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "id 123e4567-e89b-12d3-a456-426614174000",
        "AKIA is a prefix; the ASIAN markets; AKIAshort; ghp_short; xoxb-1",
        "the bearer of bad news; Authorization required; authorization: no",
        "/usr/lib/python3/dist-packages/sk-something/__init__.py",
        "https://example.com:8080/path?q=1 and user@example.com",
        "sk-2023-annual-report-final-version-two",
        "a JWT starts with eyJ but this is prose",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text, ()) == text
    assert inert(text) == text


def test_the_terminal_view_redacts_shapes_and_env_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain-env-value-42")
    shown = inert(f"title with plain-env-value-42 and {_shapes()[1]}")
    assert shown == f"title with {REDACTED} and {REDACTED}"


# --- through every artefact -----------------------------------------------------------


def _tokens() -> tuple[str, str, str]:
    return (
        f"sk-proj-{_chars(48, _ALNUM + '-_')}",
        f"ghp_{_chars(36)}",
        f"AKIA{_chars(16, string.ascii_uppercase + string.digits)}",
    )


def test_secret_shapes_printed_by_a_tool_reach_no_artefact(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    tokens = _tokens()
    header = f"Authorization: Bearer {_chars(40)}"
    (ws / "notes.txt").write_text("\n".join([*tokens, header]) + "\n")
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                    {
                        "text": f"I found {tokens[0]}",
                        "tool_calls": [
                            {"name": "finish", "arguments": {"summary": f"keys: {tokens[1]}"}}
                        ],
                    },
                ]
            }
        )
    )
    record = tmp_path / "rec.json"
    runner = CliRunner()
    done = runner.invoke(
        app,
        [
            *("run", "read", "-w", str(ws), "--model", f"scripted:{script}", "--json"),
            *("--record", str(record)),
        ],
    )
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["ending"]["summary"] == f"keys: {REDACTED}"
    stream = Path(result["stream"]).read_text()
    shown = runner.invoke(app, ["show", result["run_id"], "-w", str(ws)])
    assert shown.exit_code == 0, shown.output
    artefacts = {
        "--json": done.stdout,
        "live view": done.stderr,
        "stream": stream,
        "recording": record.read_text(),
        "gg show": shown.stdout,
    }
    for name, text in artefacts.items():
        for secret in (*tokens, header.split()[-1]):
            assert secret not in text, (name, secret)
    assert REDACTED in stream and REDACTED in artefacts["recording"]
    assert "Authorization: Bearer [redacted]" in stream


def test_board_titles_and_bodies_show_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    env_secret = "env-only-secret-value-9f3a"
    monkeypatch.setenv("DEPLOY_PASSWORD", env_secret)
    tokens = _tokens()
    runner = CliRunner()
    title = f"rotate {tokens[0]} and {env_secret}"
    body = f"old keys {tokens[1]} {tokens[2]}"
    body_file = tmp_path / "body.md"
    body_file.write_text(body)
    added = runner.invoke(
        app, ["board", "add", title, "--body-file", str(body_file), "-w", str(repo)]
    )
    assert added.exit_code == 0, added.output
    listed = runner.invoke(app, ["board", "list", "-w", str(repo)])
    shown = runner.invoke(app, ["board", "show", "1", "-w", str(repo)])
    for out in (added, listed, shown):
        assert out.exit_code == 0, out.output
        for secret in (*tokens, env_secret):
            assert secret not in out.output, (secret, out.output)
    assert REDACTED in listed.output and "rotate" in listed.output
    assert REDACTED in shown.output


@pytest.mark.parametrize("kind", ["RSA PRIVATE KEY", "EC PRIVATE KEY", "PGP PRIVATE KEY BLOCK"])
def test_a_private_key_cut_before_its_end_line_is_still_redacted(kind: str) -> None:
    """The stream cuts long results before it redacts: the key's start must go too (F3)."""
    body = "".join(random.choice(string.ascii_letters + string.digits + "+/") for _ in range(3000))
    block = f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----\n"
    for shown in (cut(block, 300), json.dumps({"excerpt": cut(block, 300)})):
        out = redact(shown)
        assert body[:20] not in out and "BEGIN" not in out
    assert json.loads(redact(json.dumps({"excerpt": cut(block, 300)})))  # still JSON


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("postgres://app:s3cr/etpass@db:5432/x", "s3cr/etpass"),
        ("redis://:hunter2hunter2@cache:6379", "hunter2hunter2"),
        (
            '{"AccessKeyId": "ASIA'
            + "Q" * 16
            + '", "SecretAccessKey": "'
            + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
            + '"}',
            "wJalrXUtnFEMI/K7MDENG",
        ),
    ],
)
def test_url_passwords_and_the_aws_json_secret_are_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text)
