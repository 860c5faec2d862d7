"""System prompts and the ending rule (SPEC S10).

Every session's whole system prompt is assembled here, once (:func:`session_prompt`),
and the ending rule is stated here, once (SPEC S10).

The rule covers: sessions end only by the role's ending calls; the ending
gate (agent-stop hooks) checks an ending before the session ends; declaring
does not stop anything and the last declaration counts (S8); an ending is
revoked when the turn fails after it (S9). Feedback texts elsewhere never
restate it: they say what went wrong and what to send instead.
"""

from __future__ import annotations

import functools

from gg.endings import Language, Role, spell

__all__ = [
    "ENDING_RULE_MARK",
    "SUBAGENT_NOTE",
    "ending_reminder",
    "ending_rule",
    "repeated_call_feedback",
    "session_prompt",
    "system_prompt",
]

ENDING_RULE_MARK = "How your session ends"
"""The heading of the rule; tests count it to check the rule is stated once."""

SUBAGENT_NOTE = (
    "## You are a subagent\n"
    "Another agent (session {parent}) gave you this task. Do it yourself with your tools; "
    "your finish summary is the answer it receives, so make it complete and self-contained."
)
"""What a subagent's prompt adds (SPEC T2); ``{parent}`` is the spawning session's id."""


def _endings_text(role: Role, language: Language) -> str:
    if role is Role.STANDARD:
        return (
            f"You are doing the work. Your one ending call is {spell('finish', language)}"
            "(summary): call it when the work is done, with a summary of what you did and "
            "how you checked it. Read a file before you change it."
        )
    return (
        f"You are reviewing. Your ending calls are {spell('approve', language)}() when the "
        f"work is acceptable, or {spell('request_changes', language)}(items) with the list of "
        "changes the implementer must make. Your verdict is read from the call alone, not "
        "from your prose. Look at the work first (read the change and the code it touches, "
        "run its tests): a verdict given before looking is a guess."
    )


def ending_rule(role: Role, *, mode: str, language: Language = "python") -> str:
    """The ending rule for ``role`` in ``mode`` (``"tool-calling"`` or ``"code"``), SPEC S10."""
    if mode == "code":
        unit = "program"
        failing = "your program raises an error after declaring"
        turn = "Every reply must call submit_program with a program; text in a reply is never run."
    else:
        unit = "reply"
        failing = "any call in the same reply fails (an error or a tool failure)"
        turn = "Every reply must call at least one tool; a reply with text alone does nothing."
    return (
        f"## {ENDING_RULE_MARK}\n"
        f"{turn} Your session ends only by an ending call; nothing else ends it. "
        f"{_endings_text(role, language)}\n"
        f"Declaring an ending does not stop your {unit}: it runs on, and you may declare "
        f"again; the last declaration counts. If {failing}, the ending is revoked and the "
        "session continues. Before the session ends, the run's agent-stop hooks check the "
        "ending; if one blocks, you are given its reason: fix the problem and declare again."
    )


@functools.lru_cache(maxsize=64)
def system_prompt(
    role: Role,
    *,
    mode: str,
    language: Language = "python",
    mode_part: str = "",
    extra: str = "",
) -> str:
    """The whole system prompt of a session.

    Cached: the sessions of a run mostly share one prompt, and so one string.

    Args:
        role: the session's role (decides the endings named).
        mode: ``"tool-calling"`` or ``"code"``.
        language: the language arm (spelling of the calls in code mode).
        mode_part: what the mode adds (e.g. the SDK's signatures).
        extra: anything else the caller adds (skills list, instructions).

    Returns:
        The prompt text, with the ending rule stated exactly once.
    """
    parts = [
        "You are an agent driven by gg. You work in a workspace through the tools you are "
        "offered, one turn at a time, until you end your session.",
        ending_rule(role, mode=mode, language=language),
    ]
    if mode_part:
        parts.append(mode_part)
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)


def session_prompt(
    role: Role,
    *,
    mode: str,
    language: Language,
    mode_part: str = "",
    overview: str = "",
    parent: str | None = None,
    skills: str = "",
    instructions: str = "",
) -> str:
    """The whole system prompt of any session: root, subagent and board sessions alike.

    The parts, in order: gg's opening, the ending rule (SPEC S10), the mode's part,
    the workspace overview, the subagent note (when ``parent`` is given, SPEC T2), the
    skills section (SPEC T3) and the caller's instructions; empty parts are left out.

    Args:
        role: the session's role.
        mode: ``"tool-calling"`` or ``"code"``.
        language: the language arm.
        mode_part: what the mode adds (:meth:`gg.modes.base.Mode.prompt_part`).
        overview: the workspace's top level (:meth:`gg.Run.workspace_overview`).
        parent: the spawning session's id, for a subagent.
        skills: the skills section (:func:`gg.skills.skills_section`).
        instructions: anything else the caller adds.

    Returns:
        The prompt text.
    """
    note = SUBAGENT_NOTE.format(parent=parent) if parent is not None else ""
    extra = "\n\n".join(p for p in (overview, note, skills, instructions) if p)
    return system_prompt(role, mode=mode, language=language, mode_part=mode_part, extra=extra)


def repeated_call_feedback(
    role: Role, *, what: str, times: int, unit: str, change: str | None, endings: str
) -> str:
    """The feedback of a ``repeated_call`` error turn (SPEC S5, :mod:`gg.progress`).

    It says what was repeated, that it did not run, and what to send instead, as call
    forms to copy.

    Args:
        role: the session's role (decides what "instead" is).
        what: the repeated call as the model would recognise it
            (``read_file(path="calc.py")``, or ``the same program``).
        times: how many times it was made with nothing changed.
        unit: ``"call"`` or ``"program"``.
        change: the form of a call that changes the workspace (a write), or ``None`` when
            the session has none (a reviewer).
        endings: the form of the role's ending call(s), ready to send.

    Returns:
        The feedback text.
    """
    ran = "result is" if unit == "call" else "output is"
    head = (
        f"Not run: you already made {what} {times} times and nothing has changed since, "
        f"so its {ran} above. Do not repeat it."
    )
    if role is Role.REVIEW:
        return f"{head} If you have seen enough, give your verdict now: {endings}"
    # the ending first: a small model copies the first form it sees, and a task that only
    # asked a question is done once the answer was read
    step = f"change a file, e.g. {change}" if change else "do a different step"
    return f"{head} If the task is done, end now with: {endings} Otherwise {step}."


def ending_reminder(role: Role, *, why: str, endings: str) -> str:
    """The per-turn reminder once the task looks done.

    One short rule pointing at the ending, added to the turn's feedback, once
    :meth:`gg.progress.Progress.looks_done` says so.

    Args:
        role: the session's role.
        why: why the task looks done (``"you changed ... and a command ... passed"``).
        endings: the form of the role's ending call(s), ready to send.

    Returns:
        ``"Reminder: <why>. If the task is done, end the session now: <form>"``.
    """
    if role is Role.REVIEW:
        return f"Reminder: {why}. If you have seen enough, give your verdict now: {endings}"
    return (
        f"Reminder: {why}. If the task is done, end the session now: {endings} "
        "Otherwise make the next change."
    )
