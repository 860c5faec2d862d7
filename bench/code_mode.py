"""The code-mode bench (issue 11 item 4): a turn whose answer is a program, beside smolagents.

Every subject gets a zero-latency model that answers each turn with the same
program, then with its ending. The time between two model calls of a session
is what the harness does for one turn: run the program and build the next
request. Workloads: ``x = 1 + 1``, a loop of 1,000 additions, and 100 calls
of a ``noop`` tool through the SDK. Subjects: gg in code mode (Python and
JavaScript, its real session loop: the sandbox, the membrane, the stream
written to a real file) and smolagents' ``CodeAgent`` (its in-process AST
interpreter, no isolation), and ``pydantic-monty`` when it is installed. The
subjects' sessions are interleaved, round after round, in one process, so a
busy machine slows them alike; the table gives medians and gg's ratios.

Also measured: membrane calls per second from one gg program (the program
times 2,000 calls itself and prints the rate), and the floor under gg's
Python turn: ``gg-python-sandbox-only``, the warm sandbox alone (one
``Sandbox.run`` per turn, calls answered at once, no session loop and no
stream), so the table shows what the sandbox costs and what the session
loop adds.

``--think-ms N`` gives every model call N ms of latency and takes it off each
turn: a warm JavaScript Deno is started while the model thinks, which a
zero-latency model never does (there, every turn also pays most of the next
program's process start; ``gg-javascript-cold`` starts each one on demand).

Run it through ``bench/run code`` (the peers' venv), or directly with a Python
that has gg and smolagents: ``python bench/code_mode.py --rounds 10``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import re
import statistics
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from gg.config import settings_from_dict
from gg.hooks import Gate
from gg.models.base import Message, Reply, ToolCall, ToolSpec
from gg.run import Run
from gg.sandbox import CallAnswer, CallRequest, Sandbox
from gg.testing import FunctionModel
from gg.tools.registry import Registry, tool

WORKLOADS = ("x", "loop", "sdk")
PROGRAMS: dict[str, dict[str, str]] = {
    "python": {
        "x": "x = 1 + 1",
        "loop": "s = 0\nfor i in range(1000):\n    s += i",
        "sdk": "for i in range(100):\n    gg.tools.noop()",
        "rate": (
            "import time\nt = time.perf_counter()\nfor i in range(2000):\n    gg.tools.noop()\n"
            "print('rate', 2000 / (time.perf_counter() - t))"
        ),
        "end": "gg.session.finish('done')",
    },
    "javascript": {
        "x": "let x = 1 + 1;",
        "loop": "let s = 0; for (let i = 0; i < 1000; i++) { s += i; }",
        "sdk": "for (let i = 0; i < 100; i++) { await gg.tools.noop(); }",
        "rate": (
            "const t = performance.now(); for (let i = 0; i < 2000; i++) { await gg.tools.noop(); }"
            "\nconsole.log('rate', 2000 / ((performance.now() - t) / 1000));"
        ),
        "end": "await gg.session.finish('done');",
    },
    "smolagents": {
        "x": "x = 1 + 1",
        "loop": "s = 0\nfor i in range(1000):\n    s += i",
        "sdk": "for i in range(100):\n    noop()",
        "end": "final_answer('done')",
    },
}
_RATE = re.compile(r"rate (\d+(?:\.\d+)?)")
THINK_S = [0.0]
"""How long each model call takes (``--think-ms``; 0: a zero-latency model). It is taken
off every measured turn: with it, a turn is what the harness adds to a thinking model."""


def noop() -> str:
    """Do nothing and say so."""
    return "ok"


class GgCode:
    """gg in code mode for one language: one run (one warm sandbox), a session per call.

    Args:
        language: ``"python"`` or ``"javascript"``.
        warm: fork Python programs from a warm sandbox, run JavaScript ones in a Deno
            started before them (``False``: a sandbox started for each program).
        fsync: the ``[stream] fsync`` setting (``"turn"``, the default, or ``"never"``).
    """

    def __init__(self, language: str, *, warm: bool = True, fsync: str = "turn") -> None:
        self.language = language
        self._tmp = tempfile.TemporaryDirectory(prefix="gg-bench-code-")
        self._program, self._turns, self.outputs = "", 0, list[str]()
        self.stamps: list[float] = []
        registry = Registry()
        registry.register(tool(noop), capability="bench")
        settings = settings_from_dict(
            {
                "tools": {"capabilities": ["bench"]},
                "ceilings": {"max_turns": 10_000, "repeated_calls": 0},  # the same program
                "session": {"mode": "code", "language": language},
                "stream": {"fsync": fsync},
            }
        )
        model = FunctionModel(self._respond, name="zero-latency")
        self.run = Run(workspace=Path(self._tmp.name), model=model, settings=settings,
                       registry=registry, gate=Gate())  # fmt: skip
        self.run.sandbox().warm = warm

    def _respond(self, messages: list[Message], tools: Any) -> Reply | Awaitable[Reply]:
        self.stamps.append(time.perf_counter())
        if THINK_S[0]:
            return _after(THINK_S[0], self._reply(messages))
        return self._reply(messages)

    def _reply(self, messages: list[Message]) -> Reply:
        if messages and isinstance(messages[-1].content, str):
            self.outputs.append(messages[-1].content)
        done = len(messages) >= 2 + 2 * self._turns
        source = PROGRAMS[self.language]["end" if done else self._program]
        call = ToolCall(
            name="submit_program", arguments={"program": source}, id=f"c{len(messages)}"
        )
        return Reply(tool_calls=(call,))

    async def session(self, workload: str, turns: int) -> list[float]:
        """One session of ``turns`` program turns; the model-call times."""
        self._program, self._turns = workload, turns
        self.stamps, self.outputs = [], []
        result = await self.run.session("bench")
        if result.status != "ended":
            raise RuntimeError(f"gg {self.language} session did not finish: {result}")
        return self.stamps

    async def close(self) -> None:
        """Close the run (its warm sandbox) and remove the workspace."""
        await self.run.aclose()
        self.run.end("ended")
        self._tmp.cleanup()


class SmolCode:
    """smolagents' ``CodeAgent`` with a canned model answering with code blocks."""

    def __init__(self) -> None:
        from smolagents import CodeAgent
        from smolagents import tool as smol_tool
        from smolagents.models import ChatMessage, MessageRole, Model
        from smolagents.monitoring import LogLevel

        stamps = self.stamps = list[float]()
        plan = self._plan = {"program": "x", "turns": 0, "served": 0}

        class Canned(Model):  # type: ignore[misc]
            def generate(self, messages: list[Any], **kwargs: Any) -> Any:
                stamps.append(time.perf_counter())
                time.sleep(THINK_S[0])
                plan["served"] += 1
                done = plan["served"] > plan["turns"]
                code = PROGRAMS["smolagents"]["end" if done else str(plan["program"])]
                text = f"Thought: go.\n<code>\n{code}\n</code>"
                return ChatMessage(role=MessageRole.ASSISTANT, content=text)

        warnings.filterwarnings("ignore", message="Function 'noop' has decorators")

        @smol_tool
        def noop() -> str:
            """Do nothing and say so."""
            return "ok"

        self._agent = lambda turns: CodeAgent(
            tools=[noop], model=Canned(model_id="canned"), max_steps=turns + 2,
            verbosity_level=LogLevel.OFF,
        )  # fmt: skip

    async def session(self, workload: str, turns: int) -> list[float]:
        """One run of ``turns`` code steps; the model-call times."""
        self._plan.update(program=workload, turns=turns, served=0)
        self.stamps.clear()
        out = self._agent(turns).run("Run the code.")
        if out != "done":
            raise RuntimeError(f"smolagents run did not go as scripted: {out!r}")
        return list(self.stamps)

    async def close(self) -> None:
        """Nothing to close."""


DEFAULT_SUBJECTS = [
    *("gg-python", "gg-python-nofsync", "gg-python-cold"),
    *("gg-javascript", "gg-javascript-cold", "smolagents", "gg-python-sandbox-only"),
]


async def _after(seconds: float, reply: Reply) -> Reply:
    await asyncio.sleep(seconds)
    return reply


def make_subjects(names: list[str]) -> dict[str, Any]:
    """The subjects by name; one whose package is missing is left out (and said so)."""
    makers: dict[str, Callable[[], Any]] = {
        "gg-python": lambda: GgCode("python"),
        "gg-python-nofsync": lambda: GgCode("python", fsync="never"),
        "gg-python-cold": lambda: GgCode("python", warm=False),
        "gg-javascript": lambda: GgCode("javascript"),
        "gg-javascript-cold": lambda: GgCode("javascript", warm=False),
        "smolagents": SmolCode,
        "gg-python-sandbox-only": BareSandbox,
    }
    subjects = {}
    for name in names:
        try:
            subjects[name] = makers[name]()
        except ImportError as exc:
            print(f"{name}: not measured ({exc})")
    return subjects


async def measure(subjects: dict[str, Any], rounds: int, turns: int) -> dict[str, list[float]]:
    """Interleaved rounds; per ``subject/workload`` the turn times (ms), first turns apart."""
    times: dict[str, list[float]] = {}
    order = [(s, w) for w in WORKLOADS for s in subjects]
    for r in range(rounds):
        rotated = order[r % len(order) :] + order[: r % len(order)]
        for name, workload in rotated:
            stamps = await subjects[name].session(workload, turns)
            gaps = [(b - a - THINK_S[0]) * 1000 for a, b in itertools.pairwise(stamps)]
            times.setdefault(f"{name}/{workload}", []).extend(gaps[1:])
            times.setdefault(f"{name}/{workload}/first", []).append(gaps[0])
    return times


async def membrane_rates(subjects: dict[str, Any], rounds: int) -> dict[str, float]:
    """Median SDK calls per second of one gg program making 2,000 calls, per language."""
    rates: dict[str, float] = {}
    for name, subject in subjects.items():
        found = []
        for _ in range(max(3, rounds // 2)):
            if isinstance(subject, BareSandbox):
                found.append(await subject.rate())
                continue
            if not isinstance(subject, GgCode):
                break
            await subject.session("rate", 1)
            found += [float(m.group(1)) for o in subject.outputs if (m := _RATE.search(o))]
        if found:
            rates[name] = statistics.median(found)
    return rates


class BareSandbox:
    """gg's warm Python sandbox alone (no session loop, no stream): the floor of a turn.

    Each measured "turn" is one ``Sandbox.run`` of the workload's program, whose calls a
    handler answers at once; interleaved with the subjects, it is not a subject itself.
    """

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="gg-bench-bare-")
        self.workspace = Path(self._tmp.name)
        self.sandbox = Sandbox()
        self.spec = ToolSpec(name="noop", description="noop", parameters={"type": "object"})

    async def _answer(self, request: CallRequest) -> CallAnswer:
        return CallAnswer(ok=True, value="ok")

    async def run(self, program: str) -> Any:
        """One program; its :class:`gg.sandbox.ProgramResult`."""
        return await self.sandbox.run(
            program, language="python", workspace=self.workspace, tools=[self.spec],
            handler=self._answer,
        )  # fmt: skip

    async def session(self, workload: str, turns: int) -> list[float]:
        """``turns`` runs of the workload; stamps before each run and after the last.

        With ``--think-ms`` each run waits that long first, as a session's turn waits for
        its model (the wait is taken off each turn like the sessions' ones).
        """
        stamps = [time.perf_counter()]
        for _ in range(turns + 1):
            if THINK_S[0]:
                await asyncio.sleep(THINK_S[0])
            await self.run(PROGRAMS["python"][workload])
            stamps.append(time.perf_counter())
        return stamps

    async def rate(self) -> float:
        """Calls per second of one program making 2,000 calls."""
        found = _RATE.search((await self.run(PROGRAMS["python"]["rate"])).output)
        return float(found.group(1)) if found else 0.0

    async def close(self) -> None:
        """Close the sandbox, remove the workspace."""
        await self.sandbox.aclose()
        self._tmp.cleanup()


def report(times: dict[str, list[float]], rates: dict[str, float], names: list[str]) -> str:
    """The markdown table: median ms per turn, and gg's ratio to smolagents."""
    lines = ["| workload | " + " | ".join(names) + " | gg-python / smolagents |"]
    lines.append("| --- |" + " --- |" * (len(names) + 1))
    for workload in (*WORKLOADS, *(f"{w}/first" for w in WORKLOADS)):
        cells, med = [], {}
        for name in names:
            values = times.get(f"{name}/{workload}", [])
            med[name] = statistics.median(values) if values else None
            cells.append(f"{med[name]:.2f} ms" if med[name] is not None else "-")
        py, smol = med.get("gg-python"), med.get("smolagents")
        ratio = f"{py / smol:.1f}x" if py and smol else "-"
        label = workload.replace("/first", " (first turn)")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
    for name, rate in rates.items():
        lines.append(f"\nmembrane calls/s, one {name} program of 2,000 calls: {rate:,.0f}")
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> None:
    """Measure, print the table, write it to ``--out``."""
    THINK_S[0] = args.think_ms / 1000
    subjects = make_subjects(args.subjects)
    try:
        await measure(subjects, 1, 2)  # warm-up: imports, first sandboxes
        times = await measure(subjects, args.rounds, args.turns)
        rates = await membrane_rates(subjects, args.rounds)
    finally:
        for subject in subjects.values():
            await subject.close()
    text = report(times, rates, list(subjects))
    head = f"{args.rounds} interleaved rounds x {args.turns} turns per session; medians."
    think = f" The model thinks {args.think_ms:g} ms per call (taken off each turn)."
    head += (think if args.think_ms else "") + "\n\n"
    print(head + text)
    if args.out:
        Path(args.out).write_text("# code-mode bench\n\n" + head + text + "\n")


def parse() -> argparse.Namespace:
    """The options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=10, help="interleaved rounds")
    p.add_argument("--turns", type=int, default=10, help="program turns per session")
    p.add_argument(
        "--subjects",
        nargs="+",
        default=DEFAULT_SUBJECTS,
    )
    p.add_argument("--think-ms", type=float, default=0, help="each model call's latency")
    p.add_argument("--out", default=str(Path(__file__).parent / "results-code.md"))
    return p.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse()))
