"""Speed of the local catalogue models on this machine (issue 16 items 1 and 4).

Usage: ``python bench/local_models.py speed [NAME...]`` prints, per model and
thread count, tokens per second free (plain text) and under gg's grammar
(one constrained call). ``python bench/local_models.py long [NAME]`` runs a
scripted 30-turn session that overflows the context and prints the seconds
per turn, so turn 30 can be compared with turn 10 (the KV cache is reused
when the prompt's start stays the same). ``python bench/local_models.py threads
[NAME] [ROUNDS]`` times one realistic turn (a fresh prompt of about 1,300 tokens,
then one grammar-constrained write call) with 1 and 2 threads, interleaved round
by round so both see the same load, and prints the medians and their ratio: the
data behind the default thread count (README, issue 16 item 1).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time

from gg.models.base import AssistantMessage, Message, ToolMessage, ToolSpec, UserMessage
from gg.models.catalogue import CATALOGUE
from gg.models.local import LocalModel

WRITE = ToolSpec(
    name="write_file",
    description="Write a file.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)
READ = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


async def _rate(model: LocalModel, messages: list[Message], tools: list[ToolSpec]) -> float:
    """Output tokens per second of one reply (the prompt is evaluated by a first call)."""
    await model.respond(messages, tools)
    started = time.perf_counter()
    reply = await model.respond(messages, tools)
    elapsed = time.perf_counter() - started
    return reply.usage.output_tokens / elapsed


async def speed(names: list[str]) -> None:
    """Print tok/s free and under the grammar, threads 1 and 2, for each model."""
    ask: list[Message] = [
        UserMessage(content="Write a Python module with ten small utility functions.")
    ]
    for name in names:
        for threads in (1, 2):
            model = LocalModel(model=name, n_threads=threads, max_tokens=96, n_ctx=2048)
            free = await _rate(model, ask, [])
            grammar = await _rate(model, ask, [WRITE])
            model.close()
            print(
                f"{name:22} threads={threads}  free {free:5.1f} tok/s  "
                f"grammar {grammar:5.1f} tok/s",
                flush=True,
            )


async def long(name: str, turns: int = 30) -> None:
    """Print seconds per turn of a scripted session that outgrows a 2048-token context."""
    model = LocalModel(model=name, n_ctx=2048, max_tokens=48, n_threads=2)
    messages: list[Message] = [UserMessage(content="Read the files one by one and summarise them.")]
    for turn in range(1, turns + 1):
        started = time.perf_counter()
        reply = await model.respond(messages, [READ])
        elapsed = time.perf_counter() - started
        call = reply.tool_calls[0]
        messages.append(AssistantMessage(content="", tool_calls=(call,)))
        body = "\n".join(f"line {turn}.{i}: value = {turn * 100 + i}" for i in range(18))
        messages.append(ToolMessage(call_id=call.id, name=call.name, content=body))
        print(
            f"turn {turn:2}  {elapsed:6.2f} s  prompt {reply.usage.input_tokens} tokens", flush=True
        )


_FILLER = "\n".join(
    f"def helper_{i}(values: list[int]) -> int:\n    return sum(v * {i} for v in values)\n"
    for i in range(40)
)


async def _turn(model: LocalModel, round_no: int) -> tuple[float, int]:
    """Seconds of one turn on a prompt no earlier round saw (nothing reused from the cache)."""
    ask: list[Message] = [
        UserMessage(
            content=f"Round {round_no}. Here is utils.py:\n{_FILLER}\n"
            "Write utils.py again with a docstring on helper_0."
        )
    ]
    started = time.perf_counter()
    reply = await model.respond(ask, [WRITE, READ])
    return time.perf_counter() - started, reply.usage.input_tokens


async def threads(name: str, rounds: int) -> None:
    """Print per-turn medians with 1 and 2 threads, interleaved, and the ratio."""
    models = {n: LocalModel(model=name, n_threads=n, max_tokens=80, n_ctx=4096) for n in (1, 2)}
    times: dict[int, list[float]] = {1: [], 2: []}
    for r in range(rounds):
        order = (1, 2) if r % 2 == 0 else (2, 1)  # alternate who goes first
        for n in order:
            seconds, prompt = await _turn(models[n], r * 2 + n)
            times[n].append(seconds)
            load = os.getloadavg()[0]
            print(
                f"round {r + 1} threads={n}: {seconds:6.2f} s ({prompt} prompt tokens, "
                f"load {load:.1f})",
                flush=True,
            )
    for m in models.values():
        m.close()
    one, two = statistics.median(times[1]), statistics.median(times[2])
    print(
        f"{name}: median turn 1 thread {one:.2f} s, 2 threads {two:.2f} s; "
        f"2 threads take {two / one:.2f}x the time of 1 ({os.cpu_count()} CPUs)"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["threads"]:
        asyncio.run(
            threads(
                sys.argv[2] if len(sys.argv) > 2 else "qwen2.5-coder-1.5b",
                int(sys.argv[3]) if len(sys.argv) > 3 else 5,
            )
        )
    elif sys.argv[1:2] == ["long"]:
        asyncio.run(long(sys.argv[2] if len(sys.argv) > 2 else "gemma3-270m"))
    else:
        asyncio.run(speed(sys.argv[2:] or list(CATALOGUE)))
