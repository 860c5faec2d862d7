"""Model specs (SPEC §10 ``--model``, C3): parsing, validation, construction."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from _servers import Json, serve

from gg.config import ModelSettings
from gg.errors import ModelError, ModelUnavailable, UserError
from gg.models.anthropic import AnthropicModel
from gg.models.base import Model, UserMessage
from gg.models.factory import VALID_FORMS, ModelSpec, model_from_spec, parse_spec, validate_spec
from gg.models.openai_compat import OpenAICompatModel
from gg.models.retry import RetryPolicy


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("local", ModelSpec(scheme="local")),
        (" local ", ModelSpec(scheme="local")),
        ("scripted:replies.json", ModelSpec(scheme="scripted", target="replies.json")),
        (
            "scripted:dir with space/r.json",
            ModelSpec(scheme="scripted", target="dir with space/r.json"),
        ),
        ("openai:gpt-4o-mini", ModelSpec(scheme="openai", target="gpt-4o-mini")),
        ("anthropic:claude-sonnet-4-5", ModelSpec(scheme="anthropic", target="claude-sonnet-4-5")),
        (
            "openai-compat:qwen2.5-7b@http://127.0.0.1:8000/v1",
            ModelSpec(
                scheme="openai-compat", target="qwen2.5-7b", base_url="http://127.0.0.1:8000/v1"
            ),
        ),
        (
            "openai-compat:llama3.2:3b@https://models.internal:11434/v1",
            ModelSpec(
                scheme="openai-compat",
                target="llama3.2:3b",
                base_url="https://models.internal:11434/v1",
            ),
        ),
        (
            "openai-compat:org/model@rev@http://127.0.0.1:1/v1",
            ModelSpec(
                scheme="openai-compat", target="org/model@rev", base_url="http://127.0.0.1:1/v1"
            ),
        ),
    ],
)
def test_valid_specs_parse(spec: str, parsed: ModelSpec) -> None:
    assert parse_spec(spec) == parsed
    validate_spec(spec)


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("", "empty"),
        ("gpt-4o", "unknown scheme 'gpt-4o'"),
        ("Local", "unknown scheme 'Local'"),
        ("ollama:llama3", "unknown scheme 'ollama'"),
        ("scripted:", "file path"),
        ("openai:", "model name"),
        ("anthropic:claude sonnet", "model name"),
        ("openai-compat:qwen", "MODEL@BASE_URL"),
        ("openai-compat:qwen@127.0.0.1:8000", "http(s) URL"),
        ("openai-compat:@http://127.0.0.1:8000", "MODEL@BASE_URL"),
    ],
)
def test_bad_specs_are_one_line_user_errors_listing_the_valid_forms(spec: str, why: str) -> None:
    with pytest.raises(UserError) as caught:
        validate_spec(spec)
    message = str(caught.value)
    assert "\n" not in message
    assert why in message
    assert message.endswith(f"valid forms: {VALID_FORMS}")


def test_validate_reads_no_file_and_no_key() -> None:
    validate_spec("scripted:/no/such/file.json")
    validate_spec("openai:gpt-x")
    validate_spec("anthropic:claude-x")


def test_scripted_spec_loads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps({"replies": [{"text": "hi"}]}), encoding="utf-8")
    model = model_from_spec(f"scripted:{path}", on_delta=print)
    assert isinstance(model, Model)
    assert model.name == f"scripted:{path}"


def test_scripted_spec_with_a_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read"):
        model_from_spec(f"scripted:{tmp_path / 'missing.json'}")


def test_openai_spec_needs_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelUnavailable, match="'OPENAI_API_KEY'"):
        model_from_spec("openai:gpt-x")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    model = model_from_spec("openai:gpt-x", constrained=True)  # an option it does not take
    assert isinstance(model, OpenAICompatModel)
    assert model.name == "openai:gpt-x"


def test_anthropic_spec_needs_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelUnavailable, match="'ANTHROPIC_API_KEY'") as caught:
        model_from_spec("anthropic:claude-x")
    assert caught.value.provider == "anthropic"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    model = model_from_spec("anthropic:claude-x", max_tokens=100)
    assert isinstance(model, AnthropicModel)
    assert model.name == "anthropic:claude-x"


async def test_compat_spec_builds_a_working_model_with_options_and_prices() -> None:
    answer = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500},
    }
    prices = {"m": {"input_per_mtok": 2.0, "output_per_mtok": 4.0}}
    with serve([Json(body=answer)]) as server:
        model = model_from_spec(
            f"openai-compat:m@{server.url}/v1",
            prices=prices,
            stream=False,
            retry=RetryPolicy(max_retries=0, timeout_s=5.0),
            progress=print,  # a local-model option: dropped here
        )
        reply = await model.respond([UserMessage(content="hello")], [])
    assert model.name == f"openai-compat:m@{server.url}/v1"
    assert reply.text == "hi"
    assert reply.usage.cost == pytest.approx((1000 * 2.0 + 500 * 4.0) / 1e6)


@pytest.mark.skipif(
    importlib.util.find_spec("gg.models.local") is None, reason="gg.models.local not there yet"
)
def test_local_spec_builds_the_embedded_model_lazily() -> None:
    model = model_from_spec("local", constrained=False, progress=print, on_delta=print)
    assert isinstance(model, Model)
    assert model.name == "local"


async def test_timeout_and_retries_from_settings_reach_the_http_provider() -> None:
    with serve([Json(status=503, body={"error": {"message": "busy"}})]) as server:
        model = model_from_spec(
            f"openai-compat:m@{server.url}/v1", timeout_s=5.0, max_retries=1, stream=False
        )
        with pytest.raises(ModelError, match="HTTP 503: busy"):
            await model.respond([UserMessage(content="hello")], [])
    assert len(server.requests) == 2  # one retry, as configured


def test_a_retry_policy_wins_over_timeout_and_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    policy = RetryPolicy(max_retries=0, timeout_s=1.0)
    model = model_from_spec("anthropic:claude-x", retry=policy, timeout_s=99.0, max_retries=9)
    assert model._retry is policy  # type: ignore[attr-defined]


def test_an_unknown_provider_option_is_refused_naming_it_and_the_accepted_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    with pytest.raises(UserError, match="'stremm'") as caught:
        model_from_spec("openai:gpt-x", stremm=False)
    assert "stream" in str(caught.value) and "text_tools" in str(caught.value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    with pytest.raises(UserError, match="'text_tools'"):
        model_from_spec("anthropic:claude-x", text_tools=True)  # an openai-compat option


def test_options_the_spec_sets_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    for option in ("provider", "base_url", "model"):
        extra: dict[str, Any] = {option: "x"}
        with pytest.raises(UserError, match=repr(option)):
            model_from_spec("openai:gpt-x", **extra)


def test_a_scripted_model_takes_no_option(tmp_path: Path) -> None:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps({"replies": [{"text": "hi"}]}), encoding="utf-8")
    with pytest.raises(UserError, match=r"'stream'.*takes: none"):
        model_from_spec(f"scripted:{path}", stream=False)
    # the run-wide settings are fine for every spec
    model = model_from_spec(f"scripted:{path}", max_tokens=5, constrained=True, timeout_s=3.0)
    assert model.name == f"scripted:{path}"


def test_the_default_retry_policy_is_the_model_section_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    model = model_from_spec("anthropic:claude-x")
    defaults = ModelSettings()
    retry = model._retry  # type: ignore[attr-defined]
    assert (retry.max_retries, retry.timeout_s) == (defaults.max_retries, defaults.timeout_s)
