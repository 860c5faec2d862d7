"""A harness small models can finish in (issue 16 item 2), through the public API with the
scripted model and the real sandbox: repeated calls, call forms in feedback, the ending
reminder, lenient ending arguments, SDK lines that compile, a reviewer that cannot write."""

from __future__ import annotations

from pathlib import Path

import pytest

import gg
from gg.endings import Approve, Finish, Refusal, RequestChanges, Role, check_ending
from gg.models.base import Message, SystemMessage, ToolMessage
from gg.sandbox import Isolation
from gg.testing import ScriptedModel, call
from support import RunScripted, events_of


def program(source: str) -> gg.Reply:
    return gg.Reply(tool_calls=(gg.ToolCall(name="submit_program", arguments={"program": source}),))


def kinds(result: gg.RunResult) -> list[str]:
    return [e.kind for e in events_of(result) if e.type == "error_turn"]


def result_text(result: gg.RunResult) -> str:
    """The excerpt of the last tool result on the stream."""
    return str([e.excerpt for e in events_of(result) if e.type == "tool_result"][-1])


def tool_texts(model: ScriptedModel) -> list[str]:
    messages: list[Message] = model.calls[-1][0]
    return [m.content for m in messages if isinstance(m, ToolMessage)]


READ = call("read_file", path="README.md")
FINISH = call("finish", summary="done")


# ---------------------------------------------------------------- repeated calls


def test_a_third_identical_read_is_a_repeated_call_with_what_to_do_instead(
    run_scripted: RunScripted,
) -> None:
    result, model = run_scripted([READ, READ, READ, FINISH])
    assert result.ending == Finish(summary="done")
    assert kinds(result) == ["repeated_call"]
    third = tool_texts(model)[2]
    assert third.startswith('Not run: you already made read_file(path="README.md") 2 times')
    # the write shown names the file last read, so a copy of it is aimed at a real file
    write = '{"name": "write_file", "arguments": {"path": "README.md", "content": "<the whole'
    assert write in third
    assert '{"name": "finish", "arguments": {"summary": "' in third
    assert tool_texts(model)[1] == "# demo\n"  # the second one still ran


def test_repeated_calls_trip_the_ceilings_with_a_diagnosis(run_scripted: RunScripted) -> None:
    result, _ = run_scripted([READ] * 6)
    assert result.status == "stopped"
    assert kinds(result) == ["repeated_call"] * 3
    tripped = [e for e in events_of(result) if e.type == "ceiling_tripped"]
    assert [e.ceiling for e in tripped] == ["consecutive_errors"]
    assert "repeated a call it had already made 3 times in a row" in tripped[0].diagnosis


def test_a_write_between_resets_the_count_but_the_same_write_repeats(
    run_scripted: RunScripted, workspace: Path
) -> None:
    write = call("write_file", path="a.txt", content="x")
    result, _ = run_scripted([READ, READ, write, READ, READ, write, write, write, FINISH])
    # READ READ | the write resets: READ READ run again | the write again (its 2nd time: the
    # reads changed nothing), then a 3rd and 4th time: those two repeat
    assert kinds(result) == ["repeated_call", "repeated_call"]
    assert (workspace / "a.txt").read_text() == "x"


def test_the_threshold_is_the_config_key(run_scripted: RunScripted) -> None:
    result, _ = run_scripted([READ, READ, FINISH], ceilings={"repeated_calls": 1})
    assert kinds(result) == ["repeated_call"]
    result, _ = run_scripted([READ] * 5 + [FINISH], ceilings={"repeated_calls": 0})
    assert kinds(result) == []
    assert gg.config.Settings().ceilings.repeated_calls == 2


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_the_same_program_resubmitted_is_a_repeated_call(
    run_scripted: RunScripted, language: str
) -> None:
    src = (
        "print(gg.tools.read_file(path='README.md'))"
        if language == "python"
        else "console.log(await gg.tools.readFile({path: 'README.md'}));"
    )
    end = "gg.session.finish('ok')" if language == "python" else "await gg.session.finish('ok');"
    replies = [program(src), program(src + "\n"), program(src), program(end)]
    result, model = run_scripted(replies, mode="code", language=language)
    assert result.ending == Finish(summary="ok")
    assert kinds(result) == ["repeated_call"]
    text = tool_texts(model)[2]
    assert "Not run: you already made this same program 2 times" in text
    form = 'gg.session.finish(summary="' if language == "python" else 'await gg.session.finish("'
    assert form in text


# ---------------------------------------------------------------- call forms in feedback


def test_bad_arguments_feedback_shows_the_json_of_a_correct_call(run_scripted: RunScripted) -> None:
    result, model = run_scripted([call("read_file", file="README.md"), FINISH])
    assert kinds(result) == ["bad_arguments"]
    assert tool_texts(model)[0].endswith('{"name": "read_file", "arguments": {"path": "<path>"}}')


def test_code_mode_feedback_shows_a_one_line_program(run_scripted: RunScripted) -> None:
    bad_call = "gg.tools.read_file(file='README.md')"
    copied_stub = "gg.tools.read_file(path: str) -> Any"
    replies = [program(bad_call), program(copied_stub), program("gg.session.finish('ok')")]
    result, model = run_scripted(replies, mode="code")
    assert kinds(result) == ["compile_error"]
    first, second = tool_texts(model)[:2]
    assert 'Call it like this: gg.tools.read_file(path="<path>")' in first
    assert "The program does not compile" in second
    assert 'result = gg.tools.read_file(path="<path>")' in second  # the example program


def test_a_refused_ending_shows_the_form_to_send(run_scripted: RunScripted) -> None:
    result, model = run_scripted([call("finish", summary="  "), FINISH])
    assert kinds(result) == ["ending_refused"]
    assert '{"name": "finish", "arguments": {"summary": "' in tool_texts(model)[0]


# ---------------------------------------------------------------- the ending reminder


def test_the_reminder_points_at_the_ending_after_a_write_and_a_passing_command(
    run_scripted: RunScripted,
) -> None:
    replies = [
        call("run_command", command="true"),
        call("write_file", path="a.txt", content="x"),
        call("run_command", command="test -f a.txt"),
        FINISH,
    ]
    result, model = run_scripted(replies)
    texts = tool_texts(model)
    assert not any("Reminder:" in t for t in texts[:2])  # a pass before any write: not done
    assert "Reminder: you changed the workspace and a command you ran after that passed" in texts[2]
    assert '{"name": "finish"' in texts[2]
    assert result.ending == Finish(summary="done")


def test_the_reminder_after_turns_that_only_repeat(run_scripted: RunScripted) -> None:
    other = call("list_dir")
    result, model = run_scripted([READ, other, READ, other, FINISH])
    texts = tool_texts(model)
    assert [("Reminder:" in t) for t in texts[:4]] == [False, False, False, True]
    assert "your last 2 turns only repeated calls you had already made" in texts[3]
    assert kinds(result) == []


# ---------------------------------------------------------------- lenient ending arguments


def test_endings_drop_echoed_schema_words_and_keep_s3_s4() -> None:
    echo = {"summary": "fixed it", "type": "string", "description": "What you did"}
    assert check_ending("finish", echo, role=Role.STANDARD) == Finish(summary="fixed it")
    wrapped = {"type": "object", "properties": {"summary": "fixed it"}}
    assert check_ending("finish", wrapped, role=Role.STANDARD) == Finish(summary="fixed it")
    assert check_ending("approve", {"type": "object"}, role=Role.REVIEW) == Approve()
    rc = {"items": [" a "], "description": "x"}
    assert check_ending("request_changes", rc, role=Role.REVIEW) == RequestChanges(items=("a",))
    refused = [
        check_ending("finish", {"summary": " ", "type": "string"}, role=Role.STANDARD),
        check_ending("finish", {"type": "string", "description": "x"}, role=Role.STANDARD),
        check_ending("request_changes", {"items": [" "], "type": "array"}, role=Role.REVIEW),
        check_ending("approve", {"items": ["fix the loop"]}, role=Role.REVIEW),
    ]
    assert all(isinstance(r, Refusal) and r.reason == "shape" for r in refused)
    # role before shape, whatever was echoed beside the arguments
    s3 = check_ending("request_changes", {"items": [], "type": "array"}, role=Role.STANDARD)
    assert isinstance(s3, Refusal) and s3.reason == "unavailable"


def test_an_approve_with_echoed_schema_ends_the_review(run_scripted: RunScripted) -> None:
    replies = [call("approve", type="object", description="End the review")]
    result, _ = run_scripted(replies, role="review")
    assert result.ending == Approve() and kinds(result) == []


# ---------------------------------------------------------------- SDK lines that compile


def sdk_lines(model: ScriptedModel) -> list[str]:
    """The SDK listing of the session's system prompt, comments cut off."""
    prompt = next(m.content for m in model.calls[0][0] if isinstance(m, SystemMessage))
    lines = [ln for ln in prompt.splitlines() if ln.startswith(("gg.", "await gg."))]
    return [ln.split("  #")[0].split("  //")[0] for ln in lines]


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_the_prompts_sdk_lines_run_as_they_stand(
    run_scripted: RunScripted, workspace: Path, language: str
) -> None:
    noop = "pass" if language == "python" else ";"
    _, first = run_scripted([program(noop), program(noop + "\n")], mode="code", language=language)
    lines = sdk_lines(first)
    tools = [ln for ln in lines if ".tools." in ln]
    finish = [ln for ln in lines if ".session.finish(" in ln]
    assert len(tools) == 6 and len(finish) == 1
    assert not any("->" in ln or ": str" in ln for ln in lines)  # no annotated stubs
    # the lines with the model's own values in place of the placeholders, as the prompt says
    values = {
        "<path>": "README.md",
        "<content>": "new",
        "<old>": "new",  # edit_file runs after write_file: its old is what that wrote
        "<new>": "newer",
        "<pattern>": "demo",
        "<command>": "true",
    }
    source = "\n".join([*tools, *finish])
    for placeholder, value in values.items():
        source = source.replace(placeholder, value)
    result, model = run_scripted([program(source)], mode="code", language=language)
    assert kinds(result) == []
    assert result.ending == Finish(summary="<what you did and how you checked it>")
    prompt = next(m.content for m in model.calls[0][0] if isinstance(m, SystemMessage))
    assert "An example program:" in prompt


# ---------------------------------------------------------------- a reviewer cannot write


def test_a_reviewer_is_not_offered_write_file_and_its_call_is_refused(
    run_scripted: RunScripted, workspace: Path
) -> None:
    replies = [call("write_file", path="README.md", content="mine"), call("approve")]
    result, model = run_scripted(replies, role="review")
    assert "write_file" not in model.calls[0][1] and "run_command" in model.calls[0][1]
    assert kinds(result) == ["unknown_tool"]
    assert (workspace / "README.md").read_text() == "# demo\n"


def test_a_reviewers_command_cannot_change_the_workspace(
    run_scripted: RunScripted, workspace: Path, layer: Isolation
) -> None:
    replies = [
        call("run_command", command="echo x > f; echo y > README.md; cat README.md"),
        call("approve"),
    ]
    result, model = run_scripted(replies, role="review")
    assert result.ending == Approve()
    assert not (workspace / "f").exists()
    assert (workspace / "README.md").read_text() == "# demo\n"
    assert "# demo" in tool_texts(model)[0]  # it ran, and could read
    # the same command from a Standard session does change it: the test can fail
    run_scripted([replies[0], FINISH])
    assert (workspace / "f").read_text() == "x\n"


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_a_reviewers_program_cannot_change_the_workspace(
    run_scripted: RunScripted, workspace: Path, layer: Isolation, language: str
) -> None:
    if language == "python":
        src = (
            "try:\n    open('f', 'w').write('x')\nexcept OSError as e:\n    print('refused', e)\n"
            "try:\n    gg.tools.write_file(path='README.md', content='mine')\n"
            "except AttributeError as e:\n    print('refused', e)\n"  # not in a reviewer's SDK
            "print(gg.tools.read_file(path='README.md'))\ngg.session.approve()"
        )
    else:
        src = (
            "try { Deno.writeTextFileSync('f', 'x'); }"
            " catch (e) { console.log('refused', e.name); }\n"
            "try { await gg.tools.writeFile({path: 'README.md', content: 'mine'}); }"
            " catch (e) { console.log('refused', e.name); }\n"
            "console.log(await gg.tools.readFile({path: 'README.md'}));\n"
            "await gg.session.approve();"
        )
    result, model = run_scripted([program(src)], role="review", mode="code", language=language)
    out = tool_texts(model)[0] if model.calls[1:] else ""
    assert result.ending == Approve(), out
    assert not (workspace / "f").exists()
    assert (workspace / "README.md").read_text() == "# demo\n"
    out = result_text(result)
    assert out.count("refused") == 2 and "# demo" in out, out


@gg.tool
def deploy(target: str) -> str:
    """Deploy somewhere (a user tool that says nothing of its access: may write)."""
    return f"deployed {target}"


@gg.tool(access="read")
def word_count(text: str) -> int:
    """Count words (a user tool that says it only reads)."""
    return len(text.split())


def test_a_reviewer_gets_only_the_tools_that_cannot_write(workspace: Path) -> None:
    model = ScriptedModel([call("approve"), FINISH])
    tools = [deploy, word_count]
    gg.Agent(model=model, workspace=workspace, tools=tools, role="review").run("review it")
    gg.Agent(model=model, workspace=workspace, tools=tools).run("do it")
    review, standard = (set(c[1]) for c in model.calls)
    assert {"read_file", "list_dir", "search_text", "run_command", "word_count"} <= review
    assert not {"write_file", "deploy", "spawn_agent"} & review
    assert {"write_file", "deploy", "word_count"} <= standard


def test_a_copied_placeholder_is_refused_and_nothing_is_written(
    run_scripted: RunScripted, workspace: Path
) -> None:
    replies = [call("write_file", path="<path>", content="<content>"), FINISH]
    result, model = run_scripted(replies)
    assert kinds(result) == ["bad_arguments"]
    assert "the example's placeholder" in tool_texts(model)[0]
    assert not (workspace / "<path>").exists()
    echo = call("write_file", path="README.md", content="<the whole new content of README.md>")
    result, model = run_scripted([echo, FINISH])
    assert kinds(result) == ["bad_arguments"]
    assert (workspace / "README.md").read_text() == "# demo\n"
    src = "gg.tools.write_file(path='<path>', content='x')"
    result, model = run_scripted([program(src), program("gg.session.finish('ok')")], mode="code")
    assert "the example's placeholder" in tool_texts(model)[0]
    assert not (workspace / "<path>").exists()


def test_a_missing_file_under_an_invented_prefix_names_the_real_one(
    run_scripted: RunScripted,
) -> None:
    reads = [call("read_file", path="/workspace/README.md"), call("read_file", path="x/README.md")]
    _, model = run_scripted([*reads, FINISH])
    first, second = tool_texts(model)[:2]
    assert "did you mean 'README.md'?" in first and "did you mean 'README.md'?" in second
