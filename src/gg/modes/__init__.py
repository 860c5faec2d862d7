"""Execution modes: tool-calling and responses as code (SPEC M1, M2).

Owns turning one reply into actions and feedback: :mod:`~gg.modes.base` (the
``Mode`` protocol, ``TurnContext``, the typed ``Emit`` seam and ``close_turn``,
the one close-out of a turn's declarations both modes use),
:mod:`~gg.modes.tool_calling` and :mod:`~gg.modes.code`. The ending check itself
is :mod:`gg.endings`'s; the gate and the ceilings are the session loop's.
"""
