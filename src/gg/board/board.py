"""The board's Python API (SPEC B1-B5, C2): add, list, show and run issues.

Example::

    from gg.board import Board

    board = Board("path/to/repo", model="scripted:replies.json")
    board.add("Make divide by zero return None", body="See test_calc.py.")
    result = board.run(concurrency=2)
    for issue in result.issues:
        print(issue.number, issue.state, issue.merge_sha or issue.diagnosis)

A board run is one :class:`gg.Run` (one stream, one budget, one gate): each
issue's implementer, reviewers and merge agent are sessions of it, and up to
``concurrency`` issues go at once, each in its own asyncio task (B5); the
run's claims on them are renewed from a thread of its own
(:mod:`gg.board.lease`). The run holds a file lock (``board.lock`` in the
repository's gg-private state directory, beside the store; :mod:`gg.state`)
so two runs never drive the same board; a killed run's lock dies with it,
and running again resumes every issue from its stored state.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar, Unpack

import gg
from gg.agent import AgentOptions
from gg.board.basebranch import settle_base
from gg.board.errors import BoardError
from gg.board.git import Git, worktree_path
from gg.board.gitsafe import write_gg_ignore
from gg.board.lease import LeaseKeeper
from gg.board.merge import MergeGuard
from gg.board.postgres import PostgresStore, is_postgres_url
from gg.board.sqlite import SqliteStore, default_path
from gg.board.store import Issue, IssueDetail, IssueState, Store
from gg.board.tracker import Tracker
from gg.board.workflow import BoardContext, IssueFlow, Progress
from gg.config import settings_from_dict
from gg.run import Run
from gg.signals import cancel_on_signals
from gg.state import (
    open_private,
    private_dir,
    private_file,
    state_path,
    warn_legacy,
    workspace_state,
)
from gg.trust import Approval, check

__all__ = ["CLAIM_LEASE_S", "CLAIM_POLL_S", "Board", "BoardResult", "open_store"]

_T = TypeVar("_T")

CLAIM_LEASE_S = 60.0
"""Seconds a runner's claim on an issue lasts unless renewed (issue 17): how long a dead
runner on another machine holds its issues before another runner takes them over."""

CLAIM_POLL_S = 2.0
"""Seconds between looks at the store while waiting for issues other runners hold."""


def open_store(spec: str, workspace: Path) -> Store:
    """The store ``[board] store`` names (SPEC B1).

    ``sqlite`` (the default file), ``sqlite:PATH``, or a PostgreSQL URI
    ``postgresql://USER@HOST:PORT/DB[?board=NAME]`` (the ``postgres`` extra; issue 17).

    Raises:
        UserError: an unknown store, or PostgreSQL without the ``postgres`` extra.
        BoardError: the store cannot be opened (a newer schema, a server that is gone).
    """
    if spec == "sqlite":
        warn_legacy(workspace)
        return SqliteStore(private_file(default_path(workspace)))  # gg's state, never a link
    if spec.startswith("sqlite:"):
        path = Path(spec.removeprefix("sqlite:")).expanduser()
        return SqliteStore(path if path.is_absolute() else workspace / path)
    if is_postgres_url(spec):
        return PostgresStore(spec)
    raise gg.UserError(
        f"board.store: unknown store {spec!r} (use 'sqlite', 'sqlite:PATH' or "
        "'postgresql://USER@HOST:PORT/DB')"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BoardResult:
    """What a board run did.

    Attributes:
        run_id: the run's id (its stream: ``<state>/runs/<run_id>/stream.jsonl``).
        status: ``"ended"`` when every issue the run took is ``done``, else ``"stopped"``.
        issues: the issues the run took, as they are now, by number.
        diagnosis: which issues are not done and why, ``None`` when all are.
        stream: the stream file.
        on_board: how many issues the board has in all (taken or not).
    """

    run_id: str
    status: Literal["ended", "stopped"]
    issues: tuple[Issue, ...]
    diagnosis: str | None
    stream: Path
    on_board: int = 0
    signal: int | None = None
    """The stop signal that interrupted the run (:mod:`gg.signals`), else ``None``."""

    @property
    def exit_code(self) -> int:
        """0 when every issue taken is done, else 1 (SPEC O3).

        ``128 + signal`` when a signal stopped the run: 130, 143, 129 (issue 12).
        """
        if self.signal is not None:
            return 128 + self.signal
        return 0 if self.status == "ended" else 1

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON object.

        Returns:
            ``{"run_id", "status", "diagnosis", "stream", "on_board", "issues": [{number,
            title, state, round, merge_sha, diagnosis}]}``.
        """
        return {
            "run_id": self.run_id,
            "status": self.status,
            "diagnosis": self.diagnosis,
            "stream": str(self.stream),
            "on_board": self.on_board,
            "issues": [issue_json(i) for i in self.issues],
        }


def issue_json(issue: Issue) -> dict[str, Any]:
    """An issue as a JSON object (``--json`` outputs)."""
    return {
        "number": issue.number,
        "title": issue.title,
        "state": issue.state.value,
        "round": issue.round,
        "branch": issue.branch,
        "merge_sha": issue.merge_sha,
        "diagnosis": issue.diagnosis,
    }


class _RunLock:
    """An exclusive ``flock`` on ``<state>/board.lock`` for the length of a board run.

    The lock file is opened with ``O_NOFOLLOW`` in the gg-private state directory.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> None:
        private_dir(self.path.parent)
        try:
            fd = open_private(self.path, os.O_RDWR, create=True)
        except FileExistsError:
            fd = open_private(self.path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise gg.UserError(
                f"another `gg board run` is running on this board (it holds {str(self.path)!r})"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class Board:
    """A board of issues in a git repository (SPEC B1-B5).

    A run takes each issue by a claim on the store (issue 17), renewed every
    ``claim_lease_s / 3`` seconds while it works: several runners sharing one
    PostgreSQL board take disjoint issues, a runner waits while another holds
    an unfinished issue, and takes it over once that runner's lease runs out.
    The renewal runs in a daemon thread of its own
    (:class:`~gg.board.lease.LeaseKeeper`, named ``gg-board-lease[<runner>]``),
    not on the event loop that drives the issues: a loop blocked for longer
    than the lease (a synchronous store call or ``git push``, a model, tool or
    hook that blocks) would otherwise let a live runner's claims run out and
    its work be taken over and wasted (issue 17, lease renewal). An issue
    whose claim the thread finds lost has its work stopped on the loop's
    thread; the thread is joined before :meth:`run` returns or raises.

    Args:
        workspace: the repository's top level (must exist; a git repo to ``run``).
        store: a :class:`Store` to use instead of the one ``[board] store`` names.
        reviewers, max_rounds, concurrency, base_branch: override ``[board]``.
        observers: called with a :class:`Progress` on every issue change (displays).
        **agent: any :class:`gg.agent.AgentOptions` (``model``, ``settings``/``config``
            (default: the workspace's ``gg.toml``), ``ceilings`` e.g.
            ``{"max_turns": 4}``, ``mode``, ``tools``, ``hooks`` (agent-stop hooks
            added to the ``gg.toml`` ones and the merge guard), ``listeners`` (every
            stream event), ``progress``, ``trust_config``...), handed to the
            :class:`gg.Agent` whose run drives every session; ``role`` and
            ``workspace`` are the board's.

    Raises:
        UserError: a missing workspace; ConfigError: a bad setting (names the key).
    """

    def __init__(
        self,
        workspace: str | Path = ".",
        *,
        store: Store | None = None,
        reviewers: int | None = None,
        max_rounds: int | None = None,
        concurrency: int | None = None,
        base_branch: str | None = None,
        observers: Sequence[Callable[[Progress], None]] = (),
        **agent: Unpack[AgentOptions],
    ) -> None:
        ws = Path(workspace).expanduser()
        if not ws.is_dir():
            raise gg.UserError(f"workspace {str(ws)!r} does not exist or is not a directory")
        self.workspace = ws.resolve()
        config = agent.pop("config", None)
        self.config_path = Path(config).resolve() if config else None
        """The ``--config`` file the settings came from, if any (the trust rule hashes it)."""
        base = agent.pop("settings", None) or gg.load_settings(
            Path(config) if config else None, workspace=self.workspace
        )
        overrides = {
            "reviewers": reviewers,
            "max_rounds": max_rounds,
            "concurrency": concurrency,
            "base_branch": base_branch,
        }
        data = base.model_dump(mode="json")
        data["board"].update({k: v for k, v in overrides.items() if v is not None})
        self.settings = settings_from_dict(data, source="board options")
        self._agent = agent
        self.observers = list(observers)
        self._run: Run | None = None
        self._store = store
        self.claim_lease_s = CLAIM_LEASE_S
        self.claim_poll_s = CLAIM_POLL_S

    # -- the store ---------------------------------------------------------------------------

    @property
    def runner(self) -> str:
        """This workspace's runner key for claims: ``host:<state dir>`` (issue 17)."""
        return f"{socket.gethostname()}:{workspace_state(self.workspace)}"

    def approval(self) -> Approval:
        """The trust rule (issue 9) for this board's config, without starting a run.

        A changed ``gg.toml`` (or ``--config`` file inside the workspace) that newly asks
        for a weakening setting (a store other than gg's SQLite file, Ray...) is refused
        unless the board was made with ``trust_config=True``: a store names where the
        issues go, and libpq sends ``PGPASSWORD`` to whatever server the URL names.

        Returns:
            The :class:`~gg.trust.Approval` (recorded by whoever starts work under it).

        Raises:
            ConfigError: the rule refuses (exit 2 on the CLI; nothing opened or sent).
        """
        keys = ["gg.toml"]
        if self.config_path is not None:
            inside = self.config_path.is_relative_to(self.workspace)
            keys.append(
                self.config_path.relative_to(self.workspace).as_posix()
                if inside
                else str(self.config_path)
            )
        trusted = bool(self._agent.get("trust_config"))
        return check(self.workspace, self.settings, configs=keys, trust=trusted)

    @property
    def store(self) -> Store:
        """The board's store, opened on first use.

        A store other than gg's own SQLite file is opened only under the trust rule
        (:meth:`approval`).

        Raises:
            ConfigError: the store cannot be opened, or the trust rule refuses it.
        """
        if self._store is None:
            spec = self.settings.board.store
            if spec != "sqlite":
                self.approval()
            try:
                self._store = open_store(spec, self.workspace)
            except (OSError, BoardError) as e:
                why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                raise gg.ConfigError(
                    f"board.store: cannot open {spec!r}: {why}", key="board.store"
                ) from None
            _ignore_gg_dir(self.workspace)
        return self._store

    def _exists(self) -> bool:
        spec = self.settings.board.store
        return (
            self._store is not None
            or spec != "sqlite"
            or (state_path(self.workspace) / "board.sqlite3").exists()
        )

    def add(self, title: str, body: str = "") -> Issue:
        """Add an ``open`` issue (B1).

        Raises:
            UserError: an empty title; the workspace is not a git repository's top level;
                no base branch can be settled (:meth:`base_branch`).
        """
        title = " ".join(title.split())
        if not title:
            raise gg.UserError("an issue needs a title")
        self.base_branch()
        return self.store.add_issue(title, body.strip())

    def base_branch(self) -> str:
        """The branch the board merges into, settled once (SPEC B4; :mod:`gg.board.basebranch`).

        ``[board] base_branch`` when set; else the branch recorded when the board was made;
        else the repository's current branch, recorded now. ``settings.board.base_branch``
        holds it afterwards.

        Raises:
            UserError: not a git repository's top level, or HEAD is detached with no base
                branch configured or recorded.
        """
        git = Git(self.workspace)
        configured = self.settings.board.base_branch
        base = _blocking(lambda: settle_base(git, self.workspace, configured))
        self._use_base(base)
        return base

    def _use_base(self, base: str) -> None:
        board = self.settings.board.model_copy(update={"base_branch": base})
        self.settings = self.settings.model_copy(update={"board": board})

    def list(self) -> list[Issue]:
        """Every issue, by number (none when the board has no store yet).

        Raises:
            UserError: no board yet and the workspace is not a git repository's top level
                (:class:`gg.board.git.Git`'s check: most likely the wrong directory).
        """
        if self._exists():
            return self.store.issues()
        _blocking(lambda: Git(self.workspace).current_branch())  # checks the repository
        return []

    def show(self, number: int) -> IssueDetail:
        """Issue ``#number`` with its sessions, verdicts and history.

        Raises:
            UserError: no such issue.
        """
        if not self._exists():
            raise gg.UserError(f"no issue #{number}: this workspace has no board yet")
        return self.store.detail(number)

    def retry(self, number: int) -> Issue:
        """Give a ``stuck`` issue another go: back to the state it was stuck in (issue 12).

        An issue stuck because every reviewer answered and changes were still
        asked for after ``board.max_rounds`` rounds goes back to
        ``implementing`` for one more round with their items; any other
        (a ceiling stopped a session, a git refusal) goes back to the state it left
        (``open``, ``implementing``, ``reviewing`` or ``merging``), its
        diagnosis cleared. The next ``gg board run`` (or one running now)
        takes it.

        Raises:
            UserError: no such issue, or it is not ``stuck`` (an issue left
                paused in another state is resumed by ``gg board run`` itself).
        """
        issue = self._issue(number)
        if issue.state is not IssueState.STUCK:
            raise gg.UserError(_not_state(issue, "stuck", "retry"))
        record = self.store.detail(number)
        came_from = _stuck_from(record)
        fields: dict[str, Any] = {"diagnosis": None}
        detail: dict[str, Any] = {"by": "retry", "stuck": issue.diagnosis}
        verdicts = [v for v in record.verdicts if v.round == issue.round]
        if (
            came_from is IssueState.REVIEWING
            and len(verdicts) >= self.settings.board.reviewers
            and any(v.call == "request_changes" for v in verdicts)
        ):  # every reviewer answered and changes were still asked for: one more round
            came_from = IssueState.IMPLEMENTING
            fields["round"] = issue.round + 1
            detail["items"] = list(dict.fromkeys(i for v in verdicts for i in v.items))
        return self.store.transition(
            number,
            event="retried",
            to=came_from,
            expect={IssueState.STUCK},
            detail=detail,
            **fields,
        )

    def reopen(self, number: int) -> Issue:
        """Open a ``done`` issue again: the next run works on it from the current base.

        Its branch (merged, so every commit of it is on the base branch) is
        moved to the base branch when the implementer starts; its merge commit
        and diagnosis are cleared; rounds go on numbering (a round's records
        stay its own) while ``board.max_rounds`` counts this go's rounds only;
        its history keeps everything.

        Raises:
            UserError: no such issue, or it is not ``done`` (use :meth:`retry`
                for a stuck one).
        """
        issue = self._issue(number)
        if issue.state is not IssueState.DONE:
            hint = "; use retry for a stuck issue" if issue.state is IssueState.STUCK else ""
            raise gg.UserError(_not_state(issue, "done", "reopen") + hint)
        return self.store.transition(
            number,
            event="reopened",
            to=IssueState.OPEN,
            expect={IssueState.DONE},
            detail={"by": "reopen", "merge_sha": issue.merge_sha},
            merge_sha=None,
            diagnosis=None,
        )

    def _issue(self, number: int) -> Issue:
        if not self._exists():
            raise gg.UserError(f"no issue #{number}: this workspace has no board yet")
        return self.store.issue(number)

    def _say(self, text: str) -> None:
        """A status line for the operator (the ``progress`` callback), if any."""
        progress = self._agent.get("progress")
        if progress is not None:
            with contextlib.suppress(Exception):
                progress(text)

    def notify(self, progress: Progress) -> None:
        """Tell every observer (an observer's failure is ignored)."""
        for observer in self.observers:
            with contextlib.suppress(Exception):
                observer(progress)

    def close(self) -> None:
        """Close the store."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Board:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- running -----------------------------------------------------------------------------

    def run(self, *, concurrency: int | None = None, signals: bool = False) -> BoardResult:
        """Run every issue not done or stuck (blocking wrapper of :meth:`arun`).

        ``signals``: SIGINT, SIGTERM and SIGHUP stop the run cleanly (``gg board run``):
        the run's sessions are cancelled, ``run_ended`` names the signal, and the result
        is ``stopped`` with exit code ``128 + signal``; the issues resume next run.
        """
        if not signals:
            return asyncio.run(self.arun(concurrency=concurrency))
        return asyncio.run(self._arun_signalled(concurrency))

    async def _arun_signalled(self, concurrency: int | None) -> BoardResult:
        with cancel_on_signals() as caught:
            try:
                return await self.arun(concurrency=concurrency)
            except asyncio.CancelledError:
                run = self._run
                if caught.signum is None or run is None:
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
        issues = self.store.issues()
        return BoardResult(
            run_id=run.run_id,
            status="stopped",
            issues=tuple(i for i in issues if i.state is not IssueState.DONE),
            diagnosis=run.ended[1] if run.ended else None,
            stream=run.stream.path,
            on_board=len(issues),
            signal=caught.signum,
        )

    async def arun(self, *, concurrency: int | None = None) -> BoardResult:
        """Run every issue that is not ``done`` or ``stuck``, up to ``concurrency`` at once.

        Issues added while it runs are taken too. Never raises for what a
        model does; an issue that fails in gg itself is left in its state.

        Raises:
            UserError: not a git repository's top level, no base branch, bad
                ``concurrency``, a bad model spec, or another run holds the board.
        """
        k = concurrency or self.settings.board.concurrency
        if k < 1:
            raise gg.UserError(f"--concurrency: must be at least 1, not {k}")
        git = Git(self.workspace)
        base = await settle_base(git, self.workspace, self.settings.board.base_branch)
        await git.check_repo(base)
        self._use_base(base)
        guard = MergeGuard(git)
        options: AgentOptions = {
            **self._agent,
            "settings": self.settings,
            "hooks": [*self._agent.get("hooks", ()), guard.hook()],
            "listeners": [Tracker(self), *self._agent.get("listeners", ())],
        }
        agent = gg.Agent(workspace=self.workspace, **options)
        with _RunLock(workspace_state(self.workspace) / "board.lock"):
            await self._recover(git)
            self._run = run = agent.new_run()
            async with run:  # ends the run however this block leaves
                ctx = BoardContext(
                    run=run,
                    store=self.store,
                    git=git,
                    settings=self.settings.board,
                    workspace=self.workspace,
                    notify=self.notify,
                    guard=guard,
                    merge_lock=self.merge_lock(),
                )
                taken = await self._schedule(ctx, k)
                status, diagnosis = _outcome(taken, self.store.issues(), ctx.halt)
                run.conclude(status, diagnosis)
        return BoardResult(
            run_id=run.run_id,
            status=status,
            issues=tuple(taken),
            diagnosis=diagnosis,
            stream=run.stream.path,
            on_board=len(self.store.issues()),
        )

    def merge_lock(self) -> asyncio.Lock:
        """The lock every merge step of a run holds (B4): in-process by default.

        Runners that share one base branch through a remote (:mod:`gg.board.raydispatch`)
        return one that is also held across machines.
        """
        return asyncio.Lock()

    async def _recover(self, git: Git) -> None:
        """Clean up after a crash.

        Abandons sessions still marked running, clears stale git locks, and removes
        the worktrees of issues already done.
        """
        locked_at = time.time()
        _ignore_gg_dir(self.workspace)
        self.store.abandon_running(self.runner)
        for lock in await git.clear_stale_locks(locked_at):
            self._say(f"removed a stale git lock a killed git left: {lock}")
        for issue in self.store.issues():
            if issue.state is IssueState.DONE:
                for name in (f"issue-{issue.number}", f"issue-{issue.number}-review"):
                    if worktree_path(self.workspace, name).exists():
                        await git.remove_worktree(worktree_path(self.workspace, name))

    async def _schedule(self, ctx: BoardContext, k: int) -> builtins.list[Issue]:
        """Claim and drive up to ``k`` unfinished issues at once until none is left.

        Waits (polling every ``claim_poll_s``) while another runner holds an unfinished
        issue, so a dead runner's issues are taken over when its lease runs out. The
        claims are renewed by a :class:`~gg.board.lease.LeaseKeeper` thread (issue 17),
        started here and joined before this returns or raises.

        Raises:
            Exception: what broke the renewal thread (a defect, not a :class:`gg.GGError`),
                within ``claim_poll_s``; the issues' work is stopped and the claims released.
        """
        runner = self.runner
        tasks: dict[asyncio.Task[Issue], int] = {}
        seen: set[int] = set()
        results: dict[int, Issue] = {}
        keeper = self._lease_keeper(ctx, tasks)
        keeper.start()
        try:
            while True:
                keeper.check()
                while ctx.halt is None and len(tasks) < k:
                    issue = ctx.store.claim_next(runner, lease_s=self.claim_lease_s, skip=seen)
                    if issue is None:
                        break
                    seen.add(issue.number)
                    tasks[asyncio.create_task(self._one(ctx, issue.number))] = issue.number
                    keeper.hold(issue.number)
                if not tasks:
                    if ctx.halt is None and ctx.store.claimed_elsewhere(runner):
                        await asyncio.sleep(self.claim_poll_s)
                        continue
                    break
                finished, _ = await asyncio.wait(
                    tasks, timeout=self.claim_poll_s, return_when=asyncio.FIRST_COMPLETED
                )
                for task in finished:
                    number = tasks.pop(task)
                    keeper.drop(number)
                    results[number] = ctx.store.issue(number) if task.cancelled() else task.result()
                    ctx.store.release(runner, number)
        finally:
            keeper.stop()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            with contextlib.suppress(gg.GGError):
                ctx.store.release(runner)
        keeper.check()  # a renewal that broke in the run's last moments
        return [results[n] for n in sorted(results)]

    def _lease_keeper(
        self, ctx: BoardContext, tasks: dict[asyncio.Task[Issue], int]
    ) -> LeaseKeeper:
        """The renewal thread of one schedule (issue 17, lease renewal; not started).

        It renews this runner's claims every ``claim_lease_s / 3`` seconds from a
        thread of its own, so a loop blocked for longer than the lease (a synchronous
        store call, ``git push`` or model) does not let the claims run out. An issue
        whose claim it finds lost has its task cancelled on the loop's thread.
        """
        store, runner, lease_s = ctx.store, self.runner, self.claim_lease_s

        def stop_lost(lost: set[int]) -> None:  # on the loop's thread
            for task, number in list(tasks.items()):
                if number in lost and not task.done():
                    self._say(f"issue #{number}: lost its claim to another runner; stopping it")
                    task.cancel()

        return LeaseKeeper(
            lambda: store.renew(runner, lease_s=lease_s),
            every_s=lease_s / 3,
            on_lost=stop_lost,
            loop=asyncio.get_running_loop(),
            name=f"gg-board-lease[{runner}]",
        )

    async def _one(self, ctx: BoardContext, number: int) -> Issue:
        flow = IssueFlow(ctx, number)
        if ctx.halt is not None:
            return ctx.store.issue(number)
        try:
            return await flow.drive()
        except (gg.GGError, OSError, ValueError, RuntimeError) as e:
            return flow.pause(f"gg failed on issue #{number}: {type(e).__name__}: {e}")


def _outcome(
    taken: list[Issue], board: list[Issue], halt: str | None
) -> tuple[Literal["ended", "stopped"], str | None]:
    """The run's status and diagnosis: ``ended`` only when every issue on the board is done.

    An issue the run did not take because it was already ``stuck`` still makes
    the run ``stopped`` (exit 1), with the command that retries it (issue 12).
    """
    numbers = {i.number for i in taken}
    left = [i for i in taken if i.state is not IssueState.DONE]
    left += [i for i in board if i.number not in numbers and i.state is not IssueState.DONE]
    if not left and halt is None:
        return "ended", None
    parts = [_why(i, taken=i.number in numbers) for i in sorted(left, key=lambda i: i.number)]
    if halt:
        parts.insert(0, f"the run stopped early: {halt}")
    return "stopped", f"{len(left)} of {len(board)} issue(s) not done. " + " | ".join(parts)


def _why(issue: Issue, *, taken: bool) -> str:
    """One issue's line in the diagnosis, with what the operator can do."""
    text = f"#{issue.number} {issue.state.value}" + (
        f": {issue.diagnosis}" if issue.diagnosis else ""
    )
    if issue.state is IssueState.STUCK:
        text += f" (to try again: gg board retry {issue.number})"
        if not taken:
            text = "already " + text
    elif not taken:
        text += " (not taken by this run)"
    return text


def _not_state(issue: Issue, want: str, verb: str) -> str:
    return f"cannot {verb} issue #{issue.number}: it is {issue.state.value}, not {want}"


def _stuck_from(detail: IssueDetail) -> IssueState:
    """The state the issue was in when it last became ``stuck`` (``open`` if unknown)."""
    for entry in reversed(detail.history):
        if entry.to_state is IssueState.STUCK and entry.from_state is not None:
            return entry.from_state
    return IssueState.OPEN


def _blocking(make: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run the coroutine ``make()`` gives to its end from sync code, inside a loop or not."""
    try:
        asyncio.get_running_loop()
        inside = True
    except RuntimeError:
        inside = False
    if not inside:
        return asyncio.run(make())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gg-board") as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def _ignore_gg_dir(workspace: Path) -> None:
    """Make git ignore ``.gg/`` (runs, store, worktrees) without touching the user's files.

    No link is followed: :func:`~gg.board.gitsafe.write_gg_ignore`.
    """
    write_gg_ignore(workspace)
