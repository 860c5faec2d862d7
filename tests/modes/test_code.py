"""Responses as code through the public API, scripted model, real sandbox, both languages.

Covers issue 3's must-show list: SPEC S2-S5, S8, S9, S12, S13, M2.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import gg
from gg.endings import Language
from gg.modes.code import run_on_use_script
from gg.stream import Event, EventIds
from gg.testing import text
from support import RunScripted, events_of


def program(source: str) -> gg.Reply:
    return gg.Reply(tool_calls=(gg.ToolCall(name="submit_program", arguments={"program": source}),))


# The same programs in each language arm.
P: dict[str, dict[str, str]] = {
    "python": {
        "finish_ok": "gg.session.finish('ok')",
        "write_marker": "gg.tools.write_file(path='marker.txt', content='ran')",
        "syntax": "x = (1,\nprint('hi'",
        "finish_then_raise": "gg.session.finish('done')\nraise ValueError('boom after declaring')",
        "three": "for i in range(3):\n    gg.session.finish(f'v{i}')\nprint('ran on')",
        "finish": "gg.session.finish('lgtm')",
        "approve": "gg.session.approve()",
        "rc_empty": "try:\n    gg.session.request_changes([])\n"
        "except Exception as e:\n    print(e)",
        "rc_padded": "gg.session.request_changes(['  ', ' fix x '])",
        "read_then_finish": "print(gg.tools.read_file(path='README.md'))\n"
        "gg.session.finish('read it')",
        "on_use_finish": "try:\n    gg.session.finish('from script')\nexcept Exception as e:\n"
        "    print('refused:', e)\nprint('script went on')",
    },
    "javascript": {
        "finish_ok": "await gg.session.finish('ok');",
        "write_marker": "await gg.tools.writeFile({path: 'marker.txt', content: 'ran'});",
        "syntax": "let x = (1,;\nconsole.log('hi'",
        "finish_then_raise": "await gg.session.finish('done');\n"
        "throw new Error('boom after declaring');",
        "three": "for (let i = 0; i < 3; i++) { await gg.session.finish(`v${i}`); }\n"
        "console.log('ran on');",
        "finish": "await gg.session.finish('lgtm');",
        "approve": "await gg.session.approve();",
        "rc_empty": "try { await gg.session.requestChanges([]); } "
        "catch (e) { console.log(String(e.message)); }",
        "rc_padded": "await gg.session.requestChanges(['  ', ' fix x ']);",
        "read_then_finish": "console.log(await gg.tools.readFile({path: 'README.md'}));\n"
        "await gg.session.finish('read it');",
        "on_use_finish": "try { await gg.session.finish('from script'); } "
        "catch (e) { console.log('refused: ' + e.message); }\n"
        "console.log('script went on');",
    },
}

LANGS = ["python", "javascript"]


@pytest.fixture(params=LANGS)
def lang(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def code_run(
    run_scripted: RunScripted, lang: str, replies: list[gg.Reply], **kw: Any
) -> tuple[gg.RunResult, Any]:
    return run_scripted(replies, mode="code", language=lang, **kw)


def test_text_with_a_code_block_is_never_run(
    run_scripted: RunScripted, lang: str, workspace: Path
) -> None:
    block = f"```{lang}\n{P[lang]['write_marker']}\n{P[lang]['finish_ok']}\n```"
    result, _ = code_run(run_scripted, lang, [text(block), program(P[lang]["finish_ok"])])
    assert result.ending == gg.Finish(summary="ok")
    assert not (workspace / "marker.txt").exists()
    errors = [e for e in events_of(result) if e.type == "error_turn"]
    assert [e.kind for e in errors] == ["no_program"]
    assert "never run" in errors[0].message


def test_compile_error_has_line_and_column(run_scripted: RunScripted, lang: str) -> None:
    result, model = code_run(
        run_scripted, lang, [program(P[lang]["syntax"]), program(P[lang]["finish_ok"])]
    )
    assert result.status == "ended"
    errors = [e for e in events_of(result) if e.type == "error_turn"]
    assert [e.kind for e in errors] == ["compile_error"]
    assert "line " in errors[0].message and "column " in errors[0].message
    assert "does not compile" in model.calls[1][0][-1].content


def test_finish_then_raise_is_revoked(run_scripted: RunScripted, lang: str) -> None:
    result, model = code_run(
        run_scripted, lang, [program(P[lang]["finish_then_raise"]), program(P[lang]["finish_ok"])]
    )
    assert result.ending == gg.Finish(summary="ok")  # the session continued
    evs = events_of(result)
    revoked = [e for e in evs if e.type == "ending_revoked"]
    assert len(revoked) == 1 and revoked[0].call == "finish"
    assert "boom after declaring" in revoked[0].error
    feedback = model.calls[1][0][-1].content
    assert "boom after declaring" in feedback
    assert "revoked" not in feedback.lower() and "Output" not in feedback  # the error alone
    assert [e.type for e in evs].count("gate_passed") == 1


def test_last_of_three_declarations_is_read(run_scripted: RunScripted, lang: str) -> None:
    result, _ = code_run(run_scripted, lang, [program(P[lang]["three"])])
    assert result.ending == gg.Finish(summary="v2")
    evs = events_of(result)
    assert [e.count for e in evs if e.type == "ending_superseded"] == [2]
    assert any(e.type == "tool_result" and "ran on" in e.excerpt for e in evs)


def test_reviewer_finish_is_refused_as_unavailable(run_scripted: RunScripted, lang: str) -> None:
    result, _ = code_run(
        run_scripted, lang, [program(P[lang]["finish"]), program(P[lang]["approve"])], role="review"
    )
    assert result.ending == gg.Approve()
    refused = next(e for e in events_of(result) if e.type == "ending_refused")
    assert refused.reason == "unavailable"
    rc = "requestChanges" if lang == "javascript" else "request_changes"
    assert "approve()" in refused.message and rc in refused.message
    kinds = [e.kind for e in events_of(result) if e.type == "error_turn"]
    assert kinds == ["ending_refused"]


def test_implementer_request_changes_is_not_its_call(run_scripted: RunScripted, lang: str) -> None:
    result, model = code_run(
        run_scripted, lang, [program(P[lang]["rc_empty"]), program(P[lang]["finish_ok"])]
    )
    assert result.ending == gg.Finish(summary="ok")
    refused = next(e for e in events_of(result) if e.type == "ending_refused")
    assert refused.reason == "unavailable"
    assert "not the one to give verdicts" in refused.message
    assert "not the one to give verdicts" in model.calls[1][0][-1].content  # raised inside


def test_request_changes_trims_and_drops_blanks(run_scripted: RunScripted, lang: str) -> None:
    result, _ = code_run(run_scripted, lang, [program(P[lang]["rc_padded"])], role="review")
    assert result.ending == gg.RequestChanges(items=("fix x",))


def test_gate_blocks_then_passes(run_scripted: RunScripted, lang: str) -> None:
    seen: list[int] = []

    def second_time(event: gg.StopEvent) -> str | None:
        seen.append(event.blocked_before)
        return "run the tests first" if event.blocked_before == 0 else None

    result, model = code_run(
        run_scripted, lang, [program(P[lang]["read_then_finish"])] * 2, hooks=[second_time]
    )
    assert result.ending == gg.Finish(summary="read it") and seen == [0, 1]
    assert any("run the tests first" in m.content for m in model.calls[1][0])


def test_on_use_script_cannot_end_a_session(workspace: Path, lang: Language) -> None:
    agent = gg.Agent(model=gg.testing.ScriptedModel([]), workspace=workspace)
    run = agent.new_run()
    emitted: list[Event] = []

    async def go() -> Any:
        try:
            return await run_on_use_script(
                P[lang]["on_use_finish"],
                language=lang,
                sandbox=run.sandbox(),
                tools=[],
                context=run.tool_context(),
                emit=emitted.append,
                ids=EventIds(run_id=run.run_id, session_id=None, turn=None),
            )
        finally:
            await run.aclose()
            run.end("ended")

    result = asyncio.run(go())
    assert "on-use scripts cannot end a session" in result.output
    assert "script went on" in result.output
    refusals = [e for e in emitted if e.type == "ending_refused"]
    assert len(refusals) == 1 and refusals[0].reason == "unavailable"


def test_isolation_is_named_on_the_stream(run_scripted: RunScripted) -> None:
    result, _ = run_scripted([program(P["python"]["finish_ok"])], mode="code")
    started = events_of(result)[0]
    assert started.type == "run_started"
    assert started.isolation.split()[0] in {"bwrap", "unshare", "rlimit"}
