"""The one truncation helper and the one redaction helper (issue 10 item 5, SPEC C3)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gg.text import REDACTED, cut, cut_marker, redact, secret_values

_MARKER = re.compile(r"\[… ([\d,]+) characters cut …\]")


@given(
    st.text(max_size=4_000),
    st.integers(min_value=40, max_value=3_000),
    st.sampled_from(["head", "middle", "tail"]),
)
def test_cut_fits_keeps_its_ends_and_counts_what_it_cut(text: str, limit: int, keep: str) -> None:
    out = cut(text, limit, keep=keep)  # type: ignore[arg-type]
    assert len(out) <= limit
    if len(text) <= limit:
        assert out == text
        return
    match = list(_MARKER.finditer(out))[-1 if keep == "head" else 0]
    before, after = out[: match.start()], out[match.end() :]
    if keep == "head":
        before, after = before.removesuffix(" "), after
    else:
        before, after = before.removesuffix("\n"), after.removeprefix("\n")
    assert text.startswith(before) and text.endswith(after)
    assert int(match.group(1).replace(",", "")) == len(text) - len(before) - len(after)
    if keep == "tail":
        assert before == ""
    if keep == "head":
        assert after == ""


def test_a_limit_narrower_than_the_marker_gives_the_marker_alone() -> None:
    assert cut("x" * 100, 5) == cut_marker(100)
    assert cut("x" * 100, 0, keep="middle") == cut_marker(100)


def test_one_marker_form_for_bytes_too() -> None:
    assert cut_marker(1234, "bytes") == "[… 1,234 bytes cut …]"


def test_redact_replaces_environment_secrets_in_every_json_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = 'pa"ss\\wörd-0123'
    monkeypatch.setenv("SOME_API_TOKEN", secret)
    monkeypatch.setenv("HARMLESS", "not-a-secret-value")
    monkeypatch.setenv("SHORT_KEY", "abc")
    for text in (secret, json.dumps(secret), json.dumps(secret, ensure_ascii=False)):
        out = redact(f"before {text} after")
        assert REDACTED in out and "wörd" not in out and "w\\u00f6rd" not in out
    assert redact("not-a-secret-value abc") == "not-a-secret-value abc"
    assert secret in secret_values()


def test_redact_with_given_secrets_ignores_short_ones() -> None:
    key = "sk-test-0123456789abcdef"
    assert redact(f"bad key {key}", (key, "")) == f"bad key {REDACTED}"
    assert redact("abc", ("abc",)) == "abc"
