"""The sandbox: isolation, limits, the membrane and the generated SDKs (SPEC M2, M3).

Public surface (what ``gg.modes.code`` and the ``run_command`` built-in use)::

    Sandbox(limits=Limits(), isolation=None, warm=True)  # None: probe() (GG_SANDBOX)
      .isolation                                # Isolation in force
      .warm_up(workspace, language=...)         # start the warm sandbox (issue 11)
      .describe()                               # for run_started
      .compile(program, language=...)           # -> CompileProblem | None (never in gg)
      await .acompile(...)                      # the same, off the event loop
      await .precheck(...)                      # before run: size, Unicode (no process)
      await .run(program, language=..., workspace=..., tools=..., handler=...)
                                                # -> ProgramResult
      await .run_shell(command, workspace=..., timeout_s=...)  # -> ShellResult
      await .aclose()
    Handler = async (CallRequest) -> CallAnswer
    sdk_source(tools, language=...), sdk_signatures(tools, language=...)
    probe(forced=None) -> Isolation

Modules: ``limits`` (Limits), ``host`` (Isolation, what the machine has),
``isolation`` (probe), ``seccomp`` (the filter), ``accounts`` (slot uids,
workspace ACLs), ``launch`` (command lines), ``runs`` (per-run setup),
``process`` (supervision), ``membrane`` (host end of the SDK pipe, its JSON bounded
by :mod:`gg.bounded`), ``checks`` (program text and syntax checks), ``quiet``
(live processes, for trusted hooks), ``tree`` (walks and removal of agent trees),
``writes`` (the write cap), ``zygote`` (the warm sandbox: a fork server per workspace),
``sdk`` (SDK generation), ``core`` (Sandbox); ``guest/`` holds the code that runs
inside (``boot.py``, ``zygote.py``, ``runner.py``, ``runner.js``; stdlib/Deno only).
"""

from __future__ import annotations

from gg.sandbox.core import CompileProblem, ProgramResult, Sandbox, ShellResult
from gg.sandbox.host import Isolation
from gg.sandbox.isolation import probe
from gg.sandbox.limits import Limits
from gg.sandbox.membrane import CallAnswer, CallRequest, Handler
from gg.sandbox.sdk import sdk_signatures, sdk_source

__all__ = [
    "CallAnswer",
    "CallRequest",
    "CompileProblem",
    "Handler",
    "Isolation",
    "Limits",
    "ProgramResult",
    "Sandbox",
    "ShellResult",
    "probe",
    "sdk_signatures",
    "sdk_source",
]
