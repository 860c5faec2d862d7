"""The run page (issue 15 item 2): real streams of real sessions rendered as HTML, parsed back.

Every stream here is written by a real run (the scripted model drives the loop, the real
sandbox runs programs, real hooks run at the ending gate, a real board runs in a real git
repository), read back with :func:`gg.stream.read_events`, rendered by
:func:`gg.web.runpage.render_run` / :func:`render_event`, and parsed by the standard
library's HTML parser into a tree the assertions walk. Only the oversized and deeply nested
values a forged stream could hold (which gg's own writer bounds) are built as events directly.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

import gg
from gg.board import Board
from gg.config import settings_from_dict
from gg.models.base import Message, ToolMessage, ToolSpec, Usage
from gg.seal import Altered, Checker, Intact, Running, Truncated, Unended, Unkeyed, Verdict
from gg.stream import (
    EndingDeclared,
    Event,
    RunStarted,
    SessionEnded,
    SessionStarted,
    StreamAltered,
    ToolCalled,
    ToolResult,
    TurnEvent,
    read_events,
)
from gg.terminal import inert
from gg.testing import FunctionModel, ScriptedModel, call, text
from gg.web.markup import Markup, el
from gg.web.runpage import RUN_CSS, RUN_JS, render_event, render_run, render_sessions
from support import RunScripted

VOID = {"br", "hr", "img", "input", "meta", "link", "wbr"}


@dataclass(eq=False)
class Node:
    """One element of a parsed page."""

    tag: str
    attrs: dict[str, str | None]
    parent: Node | None = None
    children: list[Node | str] = field(default_factory=list)

    def iter(self) -> Iterator[Node]:
        """This element and every element under it, in document order."""
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def text(self) -> str:
        """All the text under this element."""
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        """Elements under this one (itself included) with ``tag``, class ``cls`` and ``attrs``
        (``data_kind="turn"`` matches ``data-kind``)."""
        wanted = {k.replace("_", "-"): v for k, v in attrs.items()}
        return [
            n
            for n in self.iter()
            if (tag is None or n.tag == tag)
            and (cls is None or cls in n.classes())
            and all(n.attrs.get(k) == v for k, v in wanted.items())
        ]

    def ancestors(self) -> Iterator[Node]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class Tree(HTMLParser):
    """Builds a :class:`Node` tree; every end tag must close the element open (well formed)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), parent=self.stack[-1])
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, dict(attrs), parent=self.stack[-1]))

    def handle_endtag(self, tag: str) -> None:
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(fragment: str) -> Node:
    """The fragment as a tree (asserting it is well formed: every element closed)."""
    tree = Tree()
    tree.feed(fragment)
    tree.close()
    assert tree.stack == [tree.root], "an element was left open"
    return tree.root


def run_doc(events: Sequence[Event], verdict: str | None = None) -> Node:
    return parse(render_run(events, verdict=verdict))


def events_of(result: gg.RunResult) -> list[Event]:
    return list(read_events(result.stream))


def kind(doc: Node, event_type: str) -> list[Node]:
    """The rendered events of ``event_type``."""
    return [n for n in doc.find("div", data_kind=event_type) if "ev" in n.classes()]


def card(doc: Node, sid: str) -> Node:
    (found,) = doc.find("div", "card", data_session=sid)
    return found


def fact(node: Node, name: str) -> Node:
    """The ``<dd>`` after the ``<dt>`` named ``name`` in a summary."""
    for dl in node.find("dl", "facts"):
        kids = [c for c in dl.children if isinstance(c, Node)]
        for dt, dd in itertools.pairwise(kids):
            if dt.tag == "dt" and dt.text() == name:
                return dd
    raise AssertionError(f"no fact {name!r}")


def program(source: str) -> gg.Reply:
    return gg.Reply(tool_calls=(gg.ToolCall(name="submit_program", arguments={"program": source}),))


PROGRAMS = {
    "python": (
        "gg.session.finish('done')\nraise ValueError('boom after declaring')",
        "for i in range(3):\n    gg.session.finish(f'v{i}')\nprint('ran on')",
    ),
    "javascript": (
        "await gg.session.finish('done');\nthrow new Error('boom after declaring');",
        "for (let i = 0; i < 3; i++) { await gg.session.finish(`v${i}`); }\nconsole.log('ran on');",
    ),
}


@pytest.mark.parametrize("lang", ["python", "javascript"])
def test_a_revoked_ending_a_superseded_count_and_a_highlighted_program(
    run_scripted: RunScripted, lang: str
) -> None:
    revoke, three = PROGRAMS[lang]
    result, _ = run_scripted([program(revoke), program(three)], mode="code", language=lang)
    assert result.ending == gg.Finish(summary="v2")
    doc = run_doc(events_of(result))

    (revoked,) = kind(doc, "ending_revoked")
    assert "finish revoked" in revoked.text() and "boom after declaring" in revoked.text()
    (superseded,) = kind(doc, "ending_superseded")
    assert "2 earlier declarations superseded" in superseded.text()
    summary = card(doc, "s1")
    declarations = fact(summary, "declarations")
    assert "finish x4" in declarations.text()
    assert "2 declarations superseded" in declarations.text()
    assert "finish revoked" in declarations.text()
    assert (
        "ended by finish" in fact(summary, "ended").text() and "v2" in fact(summary, "ended").text()
    )

    blocks = doc.find("pre", "gg-code")
    assert len(blocks) == 2 and all(b.attrs["data-language"] == lang for b in blocks)
    assert blocks[1].text() == three  # the program, character for character
    token_classes = {c for b in blocks for n in b.find("span") for c in n.classes()}
    assert {"k", "s1"} <= token_classes or {"kd", "k"} <= token_classes, token_classes
    keyword = "for" if lang == "python" else "let"
    assert any(n.text() == keyword for n in blocks[1].find("span")), "keywords are coloured"


def test_a_blocked_gate_shows_its_hook_and_reason_and_a_broken_hook_is_blamed(
    run_scripted: RunScripted,
) -> None:
    def needs_tests(event: gg.StopEvent) -> str | None:
        return None if "tests" in event.ending["summary"] else "say how you tested it"

    result, _ = run_scripted(
        [call("finish", summary="done"), call("finish", summary="done; tests pass")],
        hooks=[needs_tests],
    )
    doc = run_doc(events_of(result))
    (blocked,) = kind(doc, "gate_blocked")
    assert "ending gate blocked" in blocked.text() and "needs_tests" in blocked.text()
    assert blocked.find("div", "reason")[0].text().strip() == "say how you tested it"
    gate = fact(card(doc, "s1"), "ending gate")
    assert "passed 1" in gate.text() and "blocked 1" in gate.text()
    (row,) = gate.find("li", "blocked")
    assert "say how you tested it" in row.text() and "the hook itself failed" not in row.text()

    broken, _ = run_scripted(
        [call("finish", summary=f"try {i}") for i in range(2)],
        hooks=[gg.CommandHook(command="no-such-command-gg-web-test", timeout_s=5)],
        ceilings={"gate_blocks": 2},
    )
    doc = run_doc(events_of(broken))
    assert len(kind(doc, "gate_blocked")) == 2
    assert all("the hook itself failed" in b.text() for b in kind(doc, "gate_blocked"))
    (tripped,) = kind(doc, "ceiling_tripped")
    assert "ceiling tripped: gate_blocks" in tripped.text()
    assert "is broken" in tripped.find("div", "diagnosis")[0].text()


def test_a_ceiling_shows_its_diagnosis_and_the_session_is_not_dressed_up_as_ended(
    run_scripted: RunScripted,
) -> None:
    result, _ = run_scripted([text("Done!"), text("done"), text("DONE")])
    assert result.status == "stopped"
    doc = run_doc(events_of(result))
    summary = card(doc, "s1")
    (ceiling,) = fact(summary, "ceiling").find("div", "ceiling")
    assert ceiling.attrs["data-ceiling"] == "consecutive_errors"
    said = ceiling.find("div", "diagnosis")[0].text()
    assert "replied with prose 3 times in a row; it never called a tool" in said
    assert fact(summary, "error turns").text() == "3 (no_tool_call x3)"
    assert fact(summary, "ended").text() == "stopped (consecutive_errors)"
    assert fact(summary, "declarations").text() == "none"
    header = doc.find("header", "run-head")[0]
    assert "stopped (exit 1)" in fact(header, "ended").text()
    (tripped,) = kind(doc, "ceiling_tripped")
    assert said in tripped.text()


def _task(messages: list[Message]) -> str:
    return messages[1].content


def test_the_session_tree_nests_each_subagent_under_its_parent(workspace: Path) -> None:
    nested = {"root": "child", "child": "grandchild"}

    def model(messages: list[Message], tools: list[ToolSpec]) -> gg.Reply:
        done = messages[-1] if isinstance(messages[-1], ToolMessage) else None
        task = _task(messages)
        if task in nested and done is None:
            return call("spawn", task=nested[task])
        return call("finish", summary=f"{task} done")

    settings = settings_from_dict(
        {"tools": {"capabilities": ["files", "agents"]}, "agents": {"max_depth": 2}}
    )
    agent = gg.Agent(model=FunctionModel(model), workspace=workspace, settings=settings)
    result = agent.run("root")
    assert result.status == "ended"
    doc = run_doc(events_of(result))
    tree = doc.find("ul", "root")[0]
    by_sid = {n.attrs["data-session"]: n for n in tree.find("li", "node")}
    assert set(by_sid) == {"s1", "s2", "s3"}
    assert [a for a in by_sid["s2"].ancestors() if a.tag == "li"] == [by_sid["s1"]]
    assert [a for a in by_sid["s3"].ancestors() if a.tag == "li"] == [by_sid["s2"], by_sid["s1"]]
    assert by_sid["s1"].parent is tree  # the root agent at the top
    for sid in ("s1", "s2", "s3"):  # each session's events, under its own heading
        (section,) = doc.find("section", id=f"session-{sid}")
        assert {n.attrs["data-session"] for n in section.find("div", "ev")} == {sid}


def test_the_chart_has_one_point_per_turn_for_tokens_and_seconds(
    run_scripted: RunScripted,
) -> None:
    replies = [
        gg.Reply(
            tool_calls=(gg.ToolCall(name="list_dir", arguments={}),),
            usage=Usage(input_tokens=100 * i, output_tokens=10 * i),
        )
        for i in range(1, 5)
    ]
    replies.append(gg.Reply(text="prose", usage=Usage(input_tokens=7, output_tokens=3)))
    replies.append(call("finish", summary="listed"))
    result, _ = run_scripted(replies, ceilings={"repeated_calls": 0})
    assert result.status == "ended"
    events = events_of(result)
    turns = [e for e in events if isinstance(e, TurnEvent)]
    assert len(turns) == 6
    doc = run_doc(events)
    (chart,) = doc.find("div", "session-chart", data_session="s1")
    (svg,) = chart.find("svg")
    for series in ("tokens", "seconds"):
        points = [n for n in svg.find("circle", "pt") if series in n.classes()]
        assert [p.attrs["data-turn"] for p in points] == [str(t.turn) for t in turns]
    tips = [n.find("title")[0].text() for n in svg.find("circle", "tokens")]
    assert tips[1].startswith("turn 2: 220 tokens") and tips[4].startswith("turn 5: 10 tokens")
    heights = [float(n.attrs["cy"] or 0) for n in svg.find("circle", "tokens")]
    assert heights[3] == min(heights), "the turn with the most tokens is drawn highest"
    assert not doc.find("script") and not svg.find("image")  # drawn here, nothing fetched


HOSTILE = [
    "<script>alert('x')</script>",
    '"><img src=x onerror=alert(1)>',
    "</textarea><textarea autofocus onfocus=alert(2)>",
    "javascript:alert(document.cookie)",
    "</pre></div></section><b>bold</b><!--",
    "&lt;already escaped&gt; &amp;",
    "nul\x00byte and \u202eoverride",
]
EVIL = "\n".join(HOSTILE)


def assert_inert(doc: Node) -> None:
    """No element or attribute came from the data: only gg's own tags, no handlers, no links out."""
    tags = {n.tag for n in doc.iter()}
    assert not tags & {"script", "img", "textarea", "b", "iframe", "object"}, tags
    for n in doc.iter():
        assert not [a for a in n.attrs if a.startswith("on") or a in ("autofocus", "src")], n.attrs
        assert (n.attrs.get("href") or "#").startswith("#"), n.attrs


def test_hostile_text_everywhere_is_shown_as_text(
    run_scripted: RunScripted, workspace: Path
) -> None:
    on_disk = "\n".join(HOSTILE[:-1])  # read_file reads text: no NUL in the file
    (workspace / "evil.txt").write_text(on_disk)

    def block_once(event: gg.StopEvent) -> str | None:
        return None if event.blocked_before else EVIL

    replies = [
        gg.Reply(
            text=EVIL, tool_calls=(gg.ToolCall(name="read_file", arguments={"path": "evil.txt"}),)
        ),
        call("write_file", path=EVIL[:40].replace("/", "_"), content=EVIL),
        call("finish", summary=EVIL),
        call("finish", summary=EVIL),
    ]
    result, _ = run_scripted(replies, task=EVIL, hooks=[block_once])
    assert result.status == "ended"
    events = events_of(result)
    html = render_run(events, verdict=EVIL)
    doc = parse(html)
    assert_inert(doc)
    shown = doc.text()
    for s in HOSTILE:
        assert inert(s) in shown, s
    assert "\x00" not in html and "\\x00" in shown and "\\u202e" in shown
    assert doc.find("p", "verdict")[0].classes() == {"verdict", "bad"}  # not a known good one
    (result_ev,) = [n for n in kind(doc, "tool_result") if "read_file" in n.text()]
    assert on_disk in result_ev.text()
    (blocked,) = kind(doc, "gate_blocked")
    assert inert(EVIL) in blocked.text()
    for e in events:  # each event alone, as the app appends it live
        assert_inert(parse(render_event(e)))


def test_each_event_fragment_is_one_element_naming_its_session_and_kind(
    run_scripted: RunScripted,
) -> None:
    result, _ = run_scripted(
        [text("hi"), call("read_file", path="README.md"), call("finish", summary="ok")]
    )
    events = events_of(result)
    kinds = {e.type for e in events}
    assert {"run_started", "session_started", "turn", "tool_call", "tool_result"} <= kinds
    assert {"error_turn", "ending_declared", "gate_passed", "session_ended", "run_ended"} <= kinds
    for e in events:
        root = parse(render_event(e))
        elements = [c for c in root.children if isinstance(c, Node)]
        assert len(elements) == 1 and not [c for c in root.children if isinstance(c, str)]
        (ev,) = elements
        assert ev.attrs["data-kind"] == e.type
        assert ev.attrs["data-session"] == (e.session_id or "")


def test_long_outputs_fold_and_huge_or_deep_values_stay_bounded(
    run_scripted: RunScripted, workspace: Path
) -> None:
    (workspace / "long.txt").write_text("".join(f"line {i}\n" for i in range(300)))
    result, _ = run_scripted([call("read_file", path="long.txt"), call("finish", summary="read")])
    doc = run_doc(events_of(result))
    (out,) = [n for n in kind(doc, "tool_result") if "line 0" in n.text()]
    head = [c for c in out.children if isinstance(c, Node) and c.tag == "pre"][0]
    assert head.text().count("\n") == 20 and "line 19" in head.text()
    (folded,) = out.find("details", "fold")
    assert "more lines" in folded.find("summary")[0].text()

    ids: dict[str, Any] = {"run_id": result.run_id, "session_id": "s1", "turn": 1}
    huge = ToolResult(**ids, name="run_command", ok=True, excerpt="A<" * 5_000_000)
    html = render_event(huge)
    assert len(html) < 1_500_000
    assert "9800000 more characters cut" in parse(html).text()
    deep: Any = "bottom"
    for _ in range(50_000):
        deep = {"k": [deep]}
    nested = ToolCalled.model_construct(**ids, name="write_file", arguments=deep)
    fragment = render_event(nested)
    assert "nested deeper" in fragment and len(fragment) < 20_000
    wide = ToolCalled(**ids, name="t", arguments={f"k{i}": "v" for i in range(10_000)})
    assert "[… 9900 more]" in parse(render_event(wide)).text()
    surrogate = ToolResult(**ids, name="t", ok=False, excerpt="lone \ud800 surrogate")
    rendered = render_event(surrogate)
    rendered.encode("utf-8")  # no surrogate left: the page encodes
    assert "\\ud800" in rendered


def _verdict(stream: Path) -> tuple[list[Event], str]:
    """The events and the verdict line, read as ``gg show`` reads them."""
    check = Checker(stream, seal_dir=stream.parent)
    events: list[Event] = []
    with contextlib.suppress(StreamAltered):
        events.extend(read_events(stream, check=check))
    verdict = check.finish(check.head_at_start)
    return events[: verdict.trusted], verdict.message()


def test_the_tamper_checks_verdict_is_in_the_header(run_scripted: RunScripted) -> None:
    result, _ = run_scripted([call("finish", summary="all good")])
    events, said = _verdict(result.stream)
    (line,) = run_doc(events, said).find("p", "verdict")
    assert line.classes() == {"verdict", "ok"} and line.text().startswith("stream intact: ")

    lines = result.stream.read_text().splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if '"session_ended"' in ln)
    lines[at] = lines[at].replace("all good", "all fine")
    result.stream.write_text("".join(lines))
    events, said = _verdict(result.stream)
    doc = run_doc(events, said)
    (line,) = doc.find("p", "verdict")
    assert line.classes() == {"verdict", "bad"} and line.text().startswith(
        "STREAM ALTERED at event"
    )
    assert not kind(doc, "session_ended")  # nothing from the damage on is shown
    assert "no run_ended" in fact(doc.find("header")[0], "ended").text()


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_a_board_runs_sessions_are_labelled_by_their_board_role(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "greet.py").write_text("def greet():\n    return 'hi'\n")
    (repo / "gg.toml").write_text("")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "initial")
    model = ScriptedModel(
        [
            call("write_file", path="greet.py", content="def greet():\n    return 'hello'\n"),
            call("finish", summary="greet says hello"),
            call("approve"),
            call("finish", summary="merged"),
        ]
    )
    board = Board(repo, model=model, max_rounds=1, concurrency=1, reviewers=1)
    board.add("Greet with hello")
    result = board.run()
    doc = run_doc(list(read_events(result.stream)))
    labels = [n.text() for n in doc.find("span", "board-role")]
    assert labels == ["implementer of issue #1", "reviewer of issue #1", "merge agent of issue #1"]
    (group,) = doc.find("li", "issue-group")
    assert group.attrs["data-issue"] == "1" and group.parent is doc.find("ul", "root")[0]
    assert [n.attrs["data-session"] for n in group.find("li", "node")] == ["s1", "s2", "s3"]
    assert "approve" in fact(card(doc, "s2"), "ended").text()
    assert [n.text() for n in kind(doc, "issue_state")][0].endswith("→ implementing (round 1)")


def test_the_session_tree_alone_is_the_one_in_the_page(run_scripted: RunScripted) -> None:
    result, _ = run_scripted([text("hm"), call("finish", summary="done")])
    events = events_of(result)
    assert render_sessions(events) in render_run(events, verdict=None)
    (section,) = parse(render_sessions(events)).find("section", "sessions")
    assert fact(card(section, "s1"), "error turns").text() == "1 (no_tool_call x1)"


def test_the_page_assets_are_inline_and_local() -> None:
    assert ".gg-code .k" in RUN_CSS and "@import" not in RUN_CSS and "url(" not in RUN_CSS
    script = RUN_JS.replace('"http://www.w3.org/2000/svg"', "")  # SVG's namespace, not a fetch
    assert "ggAppendEvent" in script and "http" not in script and "eval(" not in script
    assert "textContent" in RUN_JS  # a session id it writes is text, never markup
    assert "innerHTML" not in RUN_JS.replace("holder.innerHTML = fragment", "")


def test_a_forged_stream_with_hostile_ids_and_stamps_stays_inert(
    run_scripted: RunScripted, tmp_path: Path
) -> None:
    # gg names sessions s1, s2...; a forged stream (which gg show reads as unverified)
    # may put anything in an id, a parent, a stamp or a ceiling's hook name
    result, _ = run_scripted([text("no"), text("no"), text("no")])
    sid = '"><img src=x onerror=alert(1)><a href="javascript:alert(2)">'
    forged = tmp_path / "forged.jsonl"
    with forged.open("w") as out:
        for line in result.stream.read_text().splitlines():
            obj = json.loads(line)
            if obj.get("session_id") == "s1":
                obj["session_id"] = sid
            if obj["type"] == "turn":
                obj["at"] = "<script>alert(3)</script>"
            out.write(json.dumps(obj) + "\n")
    events = list(read_events(forged))
    doc = run_doc(events, verdict="STREAM UNVERIFIED: forged")
    assert_inert(doc)
    tree = doc.find("ul", "root")[0]
    assert [n.attrs["data-session"] for n in tree.find("li", "node")] == [sid]
    (section,) = doc.find("section", id=f"session-{sid}")
    assert {n.attrs["data-session"] for n in section.find("div", "ev")} == {sid}
    assert doc.find("a", "sid")[0].attrs["href"] == f"#session-{sid}"
    stamps = [n.find("time")[0] for n in kind(doc, "turn")]
    assert [t.attrs["datetime"] for t in stamps] == ["<script>alert(3)</script>"] * 3


# The pieces on their own: folding at its edges, programs, the chart, the one escaping path.


def test_folding_starts_past_twenty_lines_and_keeps_every_character() -> None:
    ids: dict[str, Any] = {"run_id": "r", "session_id": "s1", "turn": 1}
    twenty = "".join(f"{i}\n" for i in range(20))
    (ev,) = parse(render_event(ToolResult(**ids, name="t", ok=True, excerpt=twenty))).find(
        "div", "ev"
    )
    assert not ev.find("details") and ev.find("pre")[0].text() == twenty
    more = twenty + "20\n21"
    (ev,) = parse(render_event(ToolResult(**ids, name="t", ok=True, excerpt=more))).find(
        "div", "ev"
    )
    (folded,) = ev.find("details", "fold")
    assert folded.find("summary")[0].text() == "show 2 more lines (5 characters)"
    assert "".join(p.text() for p in ev.find("pre")) == more


def test_a_long_hostile_program_is_highlighted_folded_and_inert() -> None:
    source = "x = '</pre><script>alert(1)</script>'\n" + "".join(
        f'y{i} = """<img src=x onerror=alert({i})>"""\n' for i in range(60)
    )
    ids: dict[str, Any] = {"run_id": "r", "session_id": "s1", "turn": 1}
    call_ev = ToolCalled(**ids, name="submit_program", arguments={"program": source})
    doc = parse(render_event(call_ev, language="python"))
    assert_inert(doc)
    head, rest = doc.find("pre", "gg-code")
    assert head.text().count("\n") == 39 and "show 21 more lines" in doc.find("summary")[0].text()
    assert head.text() + "\n" + rest.text() == source.removesuffix("\n")
    assert "s2" in {c for n in head.find("span") for c in n.classes()}  # strings coloured


def test_a_programs_language_comes_from_its_session_or_its_look() -> None:
    ids: dict[str, Any] = {"run_id": "r", "session_id": "s1", "turn": 1}
    js = ToolCalled(
        **ids, name="submit_program", arguments={"program": "await gg.session.approve();"}
    )
    assert parse(render_event(js)).find("pre", "gg-code")[0].attrs["data-language"] == "javascript"
    py = ToolCalled(**ids, name="submit_program", arguments={"program": "gg.session.approve()"})
    assert parse(render_event(py)).find("pre", "gg-code")[0].attrs["data-language"] == "python"
    told = parse(render_event(py, language="javascript")).find("pre", "gg-code")[0]
    assert told.attrs["data-language"] == "javascript"


def test_a_forged_turns_odd_numbers_are_drawn_as_zero_and_no_turns_say_so() -> None:
    ids: dict[str, Any] = {"run_id": "r", "session_id": "s1"}
    start = SessionStarted(
        **ids, role="standard", mode="code", language="python", arm="all", model="m"
    )
    turns = [
        TurnEvent(
            **ids, turn=1, text="", calls=[], usage=Usage(input_tokens=5), seconds=float("nan")
        ),
        TurnEvent(**ids, turn=2, text="", calls=[], usage=Usage(input_tokens=-9), seconds=-1.0),
        TurnEvent(**ids, turn=3, text="", calls=[], usage=Usage(), seconds=float("inf")),
    ]
    doc = run_doc([start, *turns])
    tips = [n.find("title")[0].text().split(" (")[0] for n in doc.find("circle", "seconds")]
    assert tips == ["turn 1: 0.00 s", "turn 2: 0.00 s", "turn 3: 0.00 s"]
    assert [n.find("title")[0].text().split(" (")[0] for n in doc.find("circle", "tokens")] == [
        "turn 1: 5 tokens",
        "turn 2: 0 tokens",
        "turn 3: 0 tokens",
    ]
    alone = run_doc([start])
    assert alone.find("p", "empty")[0].text() == "no turns yet"


def test_markup_escapes_what_is_added_to_it_and_refuses_odd_names() -> None:
    bold = el("b", None, "x")
    assert bold + "<i>" == "<b>x</b>&lt;i&gt;" and isinstance(bold + "<i>", Markup)
    assert "<i>" + bold == "&lt;i&gt;<b>x</b>"
    assert el("p", {"title": '"><script>', "hidden": True, "x": None}) == (
        '<p title="&quot;&gt;&lt;script&gt;" hidden></p>'
    )
    with pytest.raises(ValueError):
        el("img src=x", None)
    with pytest.raises(ValueError):
        el("p", {"onclick=alert(1) x": "y"})


def test_secrets_in_a_forged_stream_are_redacted_on_the_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GG_WEB_TEST_API_KEY", "hunter2-very-secret-value")
    ids: dict[str, Any] = {"run_id": "r", "session_id": "s1", "turn": 1}
    leaked = ToolResult(**ids, name="t", ok=True, excerpt="the key is hunter2-very-secret-value")
    assert "hunter2" not in render_event(leaked) and "[redacted]" in render_event(leaked)
    assert "hunter2" not in render_run([leaked], verdict=None)


@pytest.mark.parametrize(
    ("verdict", "cls"),
    [
        (Intact(events=3), "ok"),
        (Running(events=3), "ok"),
        (Unended(events=3), "warn"),
        (Altered(at=2, reason="its chain does not match"), "bad"),
        (Truncated(after=2, of=5), "bad"),
        (Unkeyed(events=3, sealed=True, why="no key for this run"), "bad"),
    ],
)
def test_each_verdict_of_the_tamper_check_has_its_colour(verdict: Verdict, cls: str) -> None:
    (line,) = run_doc([], verdict.message()).find("p", "verdict")
    assert line.classes() == {"verdict", cls} and line.text() == verdict.message()


def test_a_forged_chain_of_thousands_of_subagents_or_a_parent_cycle_still_renders() -> None:
    ids: dict[str, Any] = {"run_id": "r"}
    common: dict[str, Any] = {"role": "standard", "mode": "code", "language": "python"}
    chain = [
        SessionStarted(
            **ids,
            session_id=f"s{i}",
            parent=f"s{i - 1}" if i > 1 else None,
            arm="a",
            model="m",
            **common,
        )
        for i in range(1, 3001)
    ]
    doc = run_doc(chain)
    nodes = doc.find("li", "node")
    assert [n.attrs["data-session"] for n in nodes] == [f"s{i}" for i in range(1, 3001)]
    depth = max(sum(1 for a in n.ancestors() if a.tag == "li") for n in nodes)
    assert depth <= 30  # nested up to a depth, listed flat below it
    loop = [
        SessionStarted(**ids, session_id="a", parent="b", arm="x", model="m", **common),
        SessionStarted(**ids, session_id="b", parent="a", arm="x", model="m", **common),
    ]
    doc = run_doc(loop)
    assert sorted(n.attrs["data-session"] or "" for n in doc.find("li", "node")) == ["a", "b"]


def test_deeply_nested_values_in_any_free_form_field_are_shown_bounded() -> None:
    # only the fields typed as free-form JSON (settings, arguments, ending records) can
    # hold this when a forged stream is read: every other field is validated
    deep: Any = "bottom"
    for _ in range(50_000):
        deep = [deep]
    ids: dict[str, Any] = {"run_id": "r", "session_id": "s1", "turn": 1}
    events: list[Event] = [
        RunStarted.model_construct(
            run_id="r",
            settings={"model": {"spec": deep}, "session": {"mode": deep}},
            isolation="x",
            workspace="/w",
        ),
        SessionStarted(**ids, role="review", mode="code", language="python", arm="a", model="m"),
        EndingDeclared.model_construct(
            **ids, call="request_changes", arguments={"items": [deep, "ok"]}
        ),
        EndingDeclared.model_construct(**ids, call="finish", arguments={"summary": deep}),
        SessionEnded.model_construct(**ids, ending={"call": deep, "summary": deep}, turns=1),
    ]
    html = render_run(events, verdict=None)
    assert len(html) < 200_000
    doc = parse(html)
    assert "nested deeper" in fact(doc.find("header")[0], "model").text()
    (items,) = doc.find("ol", "items")
    assert [li.text().strip() for li in items.find("li")][1] == "ok"


def test_the_chart_drawn_live_in_a_browser_is_the_one_the_server_draws(
    run_scripted: RunScripted,
) -> None:
    # the page of a run's first turns, then each later event appended as the app does
    # (ggAppendEvent): the chart grows one point per turn and ends as the full page's
    replies = [
        gg.Reply(
            tool_calls=(gg.ToolCall(name="list_dir", arguments={"path": "."}),),
            usage=Usage(input_tokens=40 * i * i, output_tokens=5),
        )
        for i in range(1, 7)
    ]
    result, _ = run_scripted(
        [*replies, call("finish", summary="ok")], ceilings={"repeated_calls": 0}
    )
    events = events_of(result)
    cut = next(i for i, e in enumerate(events) if isinstance(e, TurnEvent) and e.turn == 3)
    start = render_run(events[:cut], verdict=None)
    doc = (
        f"<!doctype html><html><head><style>{RUN_CSS}</style></head>"
        f"<body>{start}<script>{RUN_JS}</script></body></html>"
    )
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "the system's Chromium is needed (apt-get install chromium)"
    shape = "ns => ns.map(n => [n.getAttribute('cy'), n.querySelector('title').textContent])"
    with sync_playwright() as play:
        browser = play.chromium.launch(
            executable_path=chromium, headless=True, args=["--no-sandbox"]
        )
        try:
            tab = browser.new_page()
            errors: list[str] = []
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.set_content(doc)
            assert tab.locator("circle.pt.tokens").count() == 2
            counts = []
            for e in events[cut:]:
                tab.evaluate("html => window.ggAppendEvent(html)", render_event(e))
                counts.append(tab.locator("circle.pt.tokens").count())
            assert counts[0] == 3 and counts[-1] == 7 and not errors
            live = {
                k: tab.eval_on_selector_all(f"circle.pt.{k}", shape) for k in ("tokens", "seconds")
            }
            labels = tab.locator(".session-chart text").all_text_contents()
            heading = tab.locator(".session-chart h3").text_content()
            tab.set_content(f"<html><body>{render_run(events, verdict=None)}</body></html>")
            server = {
                k: tab.eval_on_selector_all(f"circle.pt.{k}", shape) for k in ("tokens", "seconds")
            }
            assert (
                live == server and labels == tab.locator(".session-chart text").all_text_contents()
            )
            assert (
                heading == tab.locator(".session-chart h3").text_content() == "session s1: 7 turns"
            )
            tab.set_content(doc)  # the tree, stale on the first page, replaced whole
            card_turns = "[data-session='s1'] dl.facts dt:text-is('turns') + dd"
            assert tab.locator(card_turns).text_content() == "2"
            assert tab.evaluate("html => !!window.ggReplaceSessions(html)", render_sessions(events))
            assert tab.locator(card_turns).text_content() == "7"
            assert "ended by finish" in (tab.locator(".gg-run .sessions").text_content() or "")
        finally:
            browser.close()


def test_a_one_line_program_of_a_megabyte_is_folded_and_cut() -> None:
    ids: dict[str, Any] = {"run_id": "r", "session_id": "s1", "turn": 1}
    source = "x=1;" * 250_000  # a minified megabyte on one line
    html = render_event(ToolCalled(**ids, name="submit_program", arguments={"program": source}))
    doc = parse(html)
    unfolded = doc.find("pre", "gg-code")[0]
    assert unfolded.parent is not None and unfolded.parent.tag == "div"
    assert len(unfolded.text()) == 4001
    (folded,) = doc.find("details", "fold")
    assert "20000 characters" in folded.find("summary")[0].text()
    assert "980000 more characters cut" in doc.text() and len(html) < 1_000_000
