"""Ray dispatch of a board (issue 17): board runners as Ray tasks, each in its own clone.

``gg board run --ray ADDRESS --workers N`` (the ``ray`` extra) starts ``N``
Ray tasks on the cluster. Each task is a whole board runner: it clones the
repository's remote into a directory of its own on its worker, and runs the
board there against the shared PostgreSQL store, taking issues by claims
(:meth:`gg.board.store.Store.claim_next`), so every issue goes to exactly one
worker at a time. Git stays correct across machines through the remote, the
one meeting point:

- an implementer's branch is pushed to the remote as soon as it is committed
  (before the issue moves to ``reviewing``), and a worker that claims an issue
  whose branch it lacks fetches it first: a worker that died mid-issue is
  taken over elsewhere, from the store and that branch;
- merges hold a lock shared by every worker (a PostgreSQL advisory lock, let
  go by the server when a worker's connection dies); under it the worker
  brings its base branch to the remote's, merges, and pushes the merge to the
  remote before the issue is recorded ``done``.

A worker that dies is retried by Ray (``max_retries``) under the same runner
key, so the new attempt reclaims its issues at once; a worker lost for good
leaves its claims to run out (:data:`gg.board.board.CLAIM_LEASE_S`) for the
others. Whatever the point it died at, the end state is an uninterrupted
run's: a branch made again starts at the base commit its issue's start
recorded, an implementer's finish whose files went with the dead clone is done
again, a merge already pushed is found on the remote and recorded. The named
points (:data:`POINTS`) are told to a ``probe`` (tests kill there).

Each worker's run writes its own sealed stream and ships it to the driver with
its seal; the driver verifies every part and merges them into one ordered,
sealed stream of the dispatch, ``<state>/runs/<dispatch id>/stream.jsonl``,
with the parts and an ``index.json`` beside it (:mod:`gg.board.merged`):
``gg show <dispatch id>`` replays and verifies it as any run.

``[board] executor = "ray"`` with ``ray_address`` is ``--ray ADDRESS`` in
``gg.toml``. ``address=None`` runs the same workers, each in its own clone, in
threads of the driver's process: a dispatched board finished without Ray.

What each worker needs: gg installed with the ``postgres`` and ``ray`` extras,
``git``, a route to the PostgreSQL server and to the remote (read and push),
and the model's credentials in its environment.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import gg
from gg.board.board import Board
from gg.board.errors import BoardError, IssueMoved
from gg.board.git import branch_name
from gg.board.gitsafe import config_args, driver_overrides, git_env
from gg.board.merged import Part, merge
from gg.board.postgres import PostgresStore, is_postgres_url, split_board_url
from gg.board.store import Issue, IssueDetail, IssueState, SessionKind, SessionStatus, Verdict
from gg.deferred import deferred, installed
from gg.seal import HEAD_NAME, KEY_NAME
from gg.state import private_dir, workspace_state

if TYPE_CHECKING:
    import psycopg
    import ray
else:  # the 'ray' and 'postgres' extras, imported when a dispatch first needs them
    psycopg = deferred("psycopg")
    ray = deferred("ray")

__all__ = [
    "POINTS",
    "DispatchResult",
    "Probe",
    "WorkerFailed",
    "WorkerJob",
    "WorkerReport",
    "dispatch",
    "parts_of",
    "remote_protocol",
    "run_worker",
    "was_dispatched",
]

_MERGE_LOCK = 0x67670018
"""The advisory lock key of a board's merges (one per database)."""

Probe = Callable[[str, int], None]
"""``probe(point, issue)``: told when a worker or the driver reaches one of :data:`POINTS`."""

POINTS = (
    "implementer_ended",  # the implementer's finish is recorded; nothing committed yet
    "branch_committed",  # the round's commit is in the worker's clone, not pushed
    "branch_pushed",  # the branch is on the remote; the store still says implementing
    "reviewer_ended",  # a verdict is recorded; the issue is still reviewing
    "merge_ended",  # the merge agent's finish is recorded; no merge commit yet
    "base_merged",  # the merge commit is on the clone's base branch, not pushed
    "base_pushed",  # the merge is on the remote's base branch; the issue is still merging
    "dispatching",  # the driver: Ray is up, no task is started (issue 0)
    "workers_done",  # the driver: every task returned; the checkout is not pulled (issue 0)
    "pulled",  # the driver: the checkout is pulled; the streams are not merged (issue 0)
)
"""The named points of a dispatched run a :data:`Probe` is told of, in the order they come."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerJob:
    """What a Ray worker needs to run the board (pickled to it).

    Attributes:
        slot: the worker's index (its runner key, kept across Ray's retries).
        remote: the repository's remote (a URL or path every worker reaches and pushes to).
        store: the PostgreSQL URI of the board.
        base_branch: the base branch.
        model: a model spec (``openai:...``) or a picklable :class:`gg.Model`.
        reviewers / max_rounds: ``[board]`` overrides, ``None`` for the repository's.
        lease_s / poll_s: the claim lease and poll period (seconds).
        probe: called as ``probe(point, issue)`` at each of :data:`POINTS` (a test's
            kill points; picklable: a module-level function), or ``None``.
    """

    slot: int
    remote: str
    store: str
    base_branch: str
    model: Any
    reviewers: int | None = None
    max_rounds: int | None = None
    lease_s: float = 60.0
    poll_s: float = 2.0
    probe: Probe | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerReport:
    """What one worker's run did (returned to the driver).

    Attributes:
        slot / host / pid: which worker ran it, where.
        run_id / status / exit_code: its board run's.
        issues: the numbers of the issues its run took.
        stream: its run's stream, as JSONL text.
        seal: its stream's seal files, ``{"seal.key": text, "seal.head": text}``, so the
            driver verifies the stream before it merges it (:mod:`gg.board.merged`).
    """

    slot: int
    host: str
    pid: int
    run_id: str
    status: Literal["ended", "stopped"]
    exit_code: int
    issues: tuple[int, ...]
    stream: str
    seal: dict[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class DispatchResult:
    """A dispatched board run: every worker's report and the board as it ended.

    Attributes:
        dispatch_id: the run id of the merged stream (``gg show DISPATCH_ID``).
        index: ``<state>/runs/<dispatch_id>/index.json``.
        workers: the workers' reports, by slot.
        issues: every issue of the board, by number.
        lost: the workers Ray gave up on, one line each (their issues went to others).
    """

    dispatch_id: str
    index: Path
    workers: tuple[WorkerReport, ...]
    issues: tuple[Issue, ...]
    lost: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """0 when every issue of the board is done, else 1 (SPEC O3)."""
        return 0 if all(i.state is IssueState.DONE for i in self.issues) else 1


_HELPER_URL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.-]*::")
"""A transport-helper URL (``ext::``, ``fd::``, ``X::...``): git would run a program."""

_SCHEMES = {"file": "file", "ssh": "ssh", "git+ssh": "ssh", "ssh+git": "ssh", "https": "https"}
"""The URL schemes a remote may have, and the one git protocol each needs."""


def remote_protocol(url: str) -> str:
    """The one git protocol ``url`` needs: ``"file"``, ``"ssh"`` or ``"https"`` (issue 9 item 4).

    A path (no ``:`` before the first ``/``) or ``file://`` is ``file``; ``ssh://`` or
    git's ``[user@]host:path`` is ``ssh``; ``https://`` is ``https``. Nothing else is
    taken: a transport-helper URL (``ext::sh -c ...``, ``fd::3``, any ``X::...``) would
    have git run a program, and ``http://``/``git://`` are unauthenticated.

    Args:
        url: a remote's URL, as ``git remote get-url`` printed it.

    Returns:
        The protocol's name, for ``-c protocol.<name>.allow=always``.

    Raises:
        UserError: the URL is empty, starts with ``-``, holds a control character, is a
            transport-helper URL or has another scheme.
    """
    if not url or url.startswith("-") or any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise gg.UserError(f"--ray: the remote URL {url!r} is not one gg passes to git")
    if _HELPER_URL.match(url):
        raise gg.UserError(
            f"--ray: the remote URL {url[:200]!r} is a git transport-helper URL (which runs "
            "a program); workers need a path, file://, ssh:// or https:// remote"
        )
    scheme, sep, _ = url.partition("://")
    if sep:
        if scheme.lower() not in _SCHEMES:
            raise gg.UserError(
                f"--ray: the remote URL {url[:200]!r} has scheme {scheme!r}; workers need a "
                "path, file://, ssh:// or https:// remote"
            )
        return _SCHEMES[scheme.lower()]
    colon, slash = url.find(":"), url.find("/")
    return "ssh" if colon > 0 and (slash < 0 or colon < slash) else "file"


_HOME: list[Path] = []


def _git_home() -> Path:
    """An empty gg-private directory for git's ``HOME`` (one per process).

    It is removed when the process exits (every driver and Ray worker process used to
    leave its own in the temp directory).
    """
    if not _HOME:
        home = Path(tempfile.mkdtemp(prefix="gg-git-home-"))
        atexit.register(shutil.rmtree, home, ignore_errors=True)
        _HOME.append(home)
    return _HOME[0]


def _git_binary() -> str:
    """The absolute path of git on ``PATH``.

    Raises:
        UserError: there is none.
    """
    found = shutil.which("git")
    if found is None:
        raise gg.UserError("--ray needs git, and `git` is not on PATH")
    return os.path.abspath(found)


def _run_git(argv: list[str], *, cwd: Path, env: dict[str, str], op: str) -> str:
    """Run one git command line; its stdout (stripped).

    Raises:
        BoardError: git failed or timed out (code ``"git"``, retryable).
    """
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            encoding="utf-8",
            errors="surrogateescape",
            timeout=300,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise BoardError(f"{op} timed out", code="git", operation=op, retryable=True) from None
    if done.returncode != 0:
        raise BoardError(
            f"{op} failed: {done.stderr.strip()[-500:]}",
            code="git",
            operation=op,
            retryable=True,
        )
    return done.stdout.strip()


def _git_dir(repo: Path, *, git: str) -> Path:
    """The git dir of the checkout ``repo``: ``repo/.git``, or where its ``.git`` file points.

    A ``.git`` file (a linked worktree, a submodule) is resolved as
    :class:`gg.board.git.Git` does, by ``git rev-parse`` under gg's safe settings; a
    ``.git`` that is a link or anything else is refused.

    Raises:
        BoardError: ``repo`` is not a checkout's top level (code ``"git"``, not retryable).
    """
    dotgit = repo / ".git"
    try:
        mode = os.lstat(dotgit).st_mode
    except OSError:
        mode = 0
    if stat.S_ISDIR(mode):
        return dotgit
    if stat.S_ISREG(mode):
        argv = [git, *config_args(), "rev-parse", "--show-toplevel", "--absolute-git-dir"]
        found = _run_git(argv, cwd=repo, env=git_env(git=git, home=_git_home()), op="git rev-parse")
        lines = found.splitlines()
        if len(lines) == 2 and os.path.realpath(lines[0]) == os.path.realpath(repo):
            return Path(lines[1])
    raise BoardError(
        f"{str(repo)!r} is not a git checkout's top level (its .git is missing, a link or "
        "not one git reads)",
        code="git",
        operation=f"check {dotgit}",
    )


def _git(repo: Path | None, *args: str, remote: str | None = None, cwd: Path | None = None) -> str:
    """Run host git as :class:`gg.board.git.Git` does, only ``remote``'s protocol allowed.

    What :mod:`gg.board.gitsafe` gives every git gg runs: an environment built from
    nothing (:func:`~gg.board.gitsafe.git_env`; ``SSH_AUTH_SOCK`` added for an ssh
    remote), :data:`~gg.board.gitsafe.SAFE_CONFIG` on the command line, every filter
    and merge driver the repository's configuration defines turned off
    (:func:`~gg.board.gitsafe.driver_overrides`), and ``--git-dir``/``--work-tree``
    explicit. On top, only the protocol ``remote`` needs (:func:`remote_protocol`) is
    allowed, never ``protocol.allow=always``: no ``ext::`` or other helper runs.

    Args:
        repo: the repository's top level (its ``.git`` a real directory), or ``None``
            for a command outside any repository (``clone``, run in ``cwd``).
        args: git's arguments (user-controlled names after ``--end-of-options``).
        remote: the URL the command reaches, or ``None`` when it reaches none.
        cwd: where to run it (default ``repo``).

    Raises:
        UserError: ``remote`` is not a URL gg passes to git; git is not on PATH.
        BoardError: git failed (code ``"git"``, retryable: the remote may be back).
    """
    git = _git_binary()
    base = [git]
    if repo is not None:
        base += [f"--git-dir={_git_dir(repo, git=git)}", f"--work-tree={repo}"]
    base += config_args()
    env = git_env(git=git, home=_git_home())
    if remote is not None:
        protocol = remote_protocol(remote)
        base += ["-c", f"protocol.{protocol}.allow=always"]
        if protocol == "ssh":
            base += ["-c", "core.sshCommand=ssh"]
            if "SSH_AUTH_SOCK" in os.environ:
                env["SSH_AUTH_SOCK"] = os.environ["SSH_AUTH_SOCK"]
    where = cwd or repo or Path.cwd()
    overrides: dict[str, str] = {}
    if repo is not None:
        listing = _run_git([*base, "config", "--list", "-z"], cwd=where, env=env, op="git config")
        overrides = driver_overrides(listing.encode("utf-8", "surrogateescape"), git=git)
    env = git_env(git=git, home=_git_home(), overrides=overrides) | {
        k: v for k, v in env.items() if k == "SSH_AUTH_SOCK"
    }
    return _run_git([*base, *args], cwd=where, env=env, op=f"git {' '.join(args[:2])}")


def worker_key(slot: int) -> str:
    """The runner key of worker ``slot``'s claims: ``ray-worker-SLOT``."""
    return f"ray-worker-{slot}"


class RemoteStore:
    """A :class:`PostgresStore` that keeps the worker's clone in step with the remote.

    Claiming an issue fetches its branch when the clone lacks it; moving an issue to
    ``reviewing`` pushes its branch first; moving it to ``done`` pushes the base first.
    A failed push raises a retryable :class:`BoardError` and nothing is recorded.
    """

    def __init__(
        self,
        store: PostgresStore,
        *,
        clone: Path,
        remote: str,
        base: str,
        probe: Probe | None = None,
        runner: str | None = None,
        lease_s: float = 60.0,
    ) -> None:
        self.inner = store
        self.clone = clone
        self.remote = remote
        self.base = base
        self.probe = probe
        self.runner = runner
        self.lease_s = lease_s
        self._records: dict[int, tuple[int, SessionKind]] = {}

    def _at(self, point: str, number: int) -> None:
        if self.probe is not None:
            self.probe(point, number)

    def _fetch_branch(self, number: int) -> None:
        branch = branch_name(number)
        if _git(self.clone, "branch", "--list", branch):
            return
        if _git(
            self.clone,
            "ls-remote",
            "--heads",
            "--end-of-options",
            self.remote,
            branch,
            remote=self.remote,
        ):
            _git(
                self.clone,
                "fetch",
                "--quiet",
                "--end-of-options",
                self.remote,
                f"refs/heads/{branch}:refs/heads/{branch}",
                remote=self.remote,
            )

    def claim_next(
        self, runner: str, *, lease_s: float, skip: Collection[int] = ()
    ) -> Issue | None:
        """Claim as :meth:`PostgresStore.claim_next`; fetch the issue's branch if missing."""
        issue = self.inner.claim_next(runner, lease_s=lease_s, skip=skip)
        if issue is not None:
            self._fetch_branch(issue.number)
        return issue

    def transition(
        self,
        number: int,
        *,
        event: str,
        to: IssueState | None = None,
        expect: Collection[IssueState] | None = None,
        detail: dict[str, Any] | None = None,
        **fields: Any,
    ) -> Issue:
        """Push what the transition relies on, then record it (:meth:`PostgresStore.transition`).

        A change of state is fenced by the claim: when ``runner`` no longer holds the
        issue (its lease ran out and another runner took it over), nothing is pushed
        or recorded.

        Raises:
            IssueMoved: the issue is another runner's now, or not in an ``expect`` state.
            BoardError: a push failed (retryable).
        """
        held = (
            self.inner.renew(self.runner, lease_s=self.lease_s)
            if to is not None and self.runner is not None
            else {number}
        )
        if number not in held:
            raise IssueMoved(
                f"issue #{number} is no longer {self.runner}'s: another runner took it over",
                operation=f"transition to {to}",
            )
        if to is IssueState.REVIEWING:
            self._at("branch_committed", number)
            branch = branch_name(number)
            _git(
                self.clone,
                "push",
                "--quiet",
                "--force",
                "--end-of-options",
                self.remote,
                f"refs/heads/{branch}:refs/heads/{branch}",
                remote=self.remote,
            )
            self._at("branch_pushed", number)
        elif to is IssueState.DONE:
            self._at("base_merged", number)
            _git(
                self.clone,
                "push",
                "--quiet",
                "--end-of-options",
                self.remote,
                f"refs/heads/{self.base}:refs/heads/{self.base}",
                remote=self.remote,
            )
            self._at("base_pushed", number)
        return self.inner.transition(
            number, event=event, to=to, expect=expect, detail=detail, **fields
        )

    # -- the rest as the PostgreSQL store does it ----------------------------------------

    def add_issue(self, title: str, body: str = "") -> Issue:
        """:meth:`PostgresStore.add_issue`."""
        return self.inner.add_issue(title, body)

    def issue(self, number: int) -> Issue:
        """:meth:`PostgresStore.issue`."""
        return self.inner.issue(number)

    def issues(self) -> list[Issue]:
        """:meth:`PostgresStore.issues`."""
        return self.inner.issues()

    def start_session(
        self, number: int, *, kind: SessionKind, round: int, reviewer: int | None, run_id: str
    ) -> int:
        """:meth:`PostgresStore.start_session`."""
        record = self.inner.start_session(
            number, kind=kind, round=round, reviewer=reviewer, run_id=run_id
        )
        self._records[record] = (number, kind)
        return record

    def session_started(self, record: int, session_id: str) -> None:
        """:meth:`PostgresStore.session_started`."""
        self.inner.session_started(record, session_id)

    def end_session(
        self,
        record: int,
        *,
        status: SessionStatus,
        ending: dict[str, Any] | None = None,
        diagnosis: str | None = None,
        messages: str | None = None,
        verdict: Verdict | None = None,
    ) -> None:
        """:meth:`PostgresStore.end_session`; then the probe's ``<kind>_ended`` point."""
        self.inner.end_session(
            record,
            status=status,
            ending=ending,
            diagnosis=diagnosis,
            messages=messages,
            verdict=verdict,
        )
        number, kind = self._records.pop(record, (0, "implementer"))
        if status == "ended" and number:
            self._at(f"{kind}_ended", number)

    def abandon_running(self, runner: str | None = None) -> int:
        """:meth:`PostgresStore.abandon_running`."""
        return self.inner.abandon_running(runner)

    def renew(self, runner: str, *, lease_s: float) -> set[int]:
        """:meth:`PostgresStore.renew`."""
        return self.inner.renew(runner, lease_s=lease_s)

    def release(self, runner: str, number: int | None = None) -> None:
        """:meth:`PostgresStore.release`."""
        self.inner.release(runner, number)

    def claimed_elsewhere(self, runner: str) -> list[int]:
        """:meth:`PostgresStore.claimed_elsewhere`."""
        return self.inner.claimed_elsewhere(runner)

    def conversation(self, number: int) -> str | None:
        """:meth:`PostgresStore.conversation`."""
        return self.inner.conversation(number)

    def verdicts(self, number: int, round: int | None = None) -> list[Verdict]:
        """:meth:`PostgresStore.verdicts`."""
        return self.inner.verdicts(number, round)

    def detail(self, number: int) -> IssueDetail:
        """:meth:`PostgresStore.detail`."""
        return self.inner.detail(number)

    def close(self) -> None:
        """:meth:`PostgresStore.close`."""
        self.inner.close()


class SharedMergeLock(asyncio.Lock):
    """The merge lock of a worker: in-process, and a PostgreSQL advisory lock across workers.

    Acquired, it brings the clone's base branch to the remote's (the worker's own
    checkout: nobody else works there). The server lets the advisory lock go when
    the worker's connection dies, so a killed worker never blocks the others.
    """

    def __init__(self, *, url: str, sync: Callable[[], None], poll_s: float = 0.2) -> None:
        super().__init__()
        self._url = split_board_url(url)[0]  # libpq refuses gg's ?board=NAME
        self._sync = sync
        self._poll_s = poll_s
        self._conn: psycopg.Connection[Any] | None = None

    async def acquire(self) -> Literal[True]:
        """Take the lock here, then across workers, then sync the base branch."""
        await super().acquire()
        try:
            conn = await asyncio.to_thread(self._connect)
            self._conn = conn
            while not conn.execute("SELECT pg_try_advisory_lock(%s)", (_MERGE_LOCK,)).fetchone()[0]:  # type: ignore[index]
                await asyncio.sleep(self._poll_s)
            await asyncio.to_thread(self._sync)
        except BaseException:
            self._close()
            super().release()
            raise
        return True

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self._url, autocommit=True, application_name="gg-merge-lock")

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()  # the server drops the advisory lock with the session
            finally:
                self._conn = None

    def release(self) -> None:
        """Let go across workers, then here."""
        try:
            self._close()
        finally:
            super().release()


class WorkerBoard(Board):
    """The board a Ray worker runs in its own clone (see the module's description)."""

    def __init__(self, clone: Path, job: WorkerJob, **agent: Any) -> None:
        store = RemoteStore(
            PostgresStore(job.store),
            clone=clone,
            remote=job.remote,
            base=job.base_branch,
            probe=job.probe,
            runner=worker_key(job.slot),
            lease_s=job.lease_s,
        )
        super().__init__(
            clone,
            store=store,
            model=job.model,
            reviewers=job.reviewers,
            max_rounds=job.max_rounds,
            base_branch=job.base_branch,
            concurrency=1,
            **agent,
        )
        self.job = job
        self.claim_lease_s = job.lease_s
        self.claim_poll_s = job.poll_s

    @property
    def runner(self) -> str:
        """``ray-worker-SLOT``: the same key for Ray's retry of a dead worker's task."""
        return worker_key(self.job.slot)

    def merge_lock(self) -> asyncio.Lock:
        """The :class:`SharedMergeLock` of the board's database."""
        return SharedMergeLock(url=self.job.store, sync=self._sync_base)

    def _sync_base(self) -> None:
        """Make the clone's base branch (and its checkout) the remote's."""
        base = self.job.base_branch
        remote = self.job.remote
        _git(
            self.workspace,
            "fetch",
            "--quiet",
            "--end-of-options",
            remote,
            f"refs/heads/{base}",
            remote=remote,
        )
        _git(self.workspace, "reset", "--quiet", "--hard", "FETCH_HEAD")


def run_worker(job: WorkerJob) -> WorkerReport:
    """One worker's board run, in a fresh clone of ``job.remote`` (on the Ray worker).

    The clone is removed once the run ended with every issue done.

    Raises:
        BoardError: the clone failed; gg errors of the run as :meth:`Board.run` raises them.
    """
    root = Path(tempfile.mkdtemp(prefix=f"gg-worker-{job.slot}-"))
    clone = root / "repo"
    _git(
        None,
        "clone",
        "--quiet",
        f"--branch={job.base_branch}",
        "--end-of-options",
        job.remote,
        str(clone),
        remote=job.remote,
        cwd=root,
    )
    with WorkerBoard(clone, job) as board:
        result = board.run()
    seal = {name: (result.stream.parent / name).read_text() for name in (KEY_NAME, HEAD_NAME)}
    report = WorkerReport(
        slot=job.slot,
        host=socket.gethostname(),
        pid=os.getpid(),
        run_id=result.run_id,
        status=result.status,
        exit_code=result.exit_code,
        issues=tuple(i.number for i in result.issues),
        stream=result.stream.read_text(encoding="utf-8"),
        seal=seal,
    )
    if result.status == "ended":  # kept otherwise, for a look at what the worker left
        shutil.rmtree(root, ignore_errors=True)
    return report


class WorkerFailed(RuntimeError):
    """A worker's run raised: the error's type and message, as one picklable exception."""


def _task(job: WorkerJob) -> WorkerReport:
    """:func:`run_worker` as Ray runs it: gg's errors become :class:`WorkerFailed`."""
    try:
        return run_worker(job)
    except gg.GGError as e:
        raise WorkerFailed(f"worker {job.slot}: {type(e).__name__}: {e}") from None


def _remote_of(workspace: Path, name: str) -> str:
    """The URL of ``workspace``'s remote ``name`` (workers clone it and push to it).

    Raises:
        UserError: there is no such remote.
    """
    try:
        url = _git(workspace, "remote", "get-url", "--end-of-options", name)
    except BoardError:
        raise gg.UserError(
            f"--ray: the repository has no remote {name!r}; workers clone it and push to it "
            "(a bare repository or a git server every worker reaches)"
        ) from None
    remote_protocol(url)  # a helper URL (ext::, fd::) or another scheme is refused here
    return url


def _reachable(address: str, timeout_s: float = 5.0) -> None:
    """Refuse a cluster address nothing answers on (``ray.init`` would wait for minutes).

    Raises:
        UserError: no TCP connection to ``HOST:PORT`` within ``timeout_s`` seconds.
    """
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host:  # ray://HOST: Ray's client port
        host, port = address.removeprefix("ray://"), "10001"
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except (OSError, ValueError) as e:
        raise gg.UserError(
            f"--ray: cannot reach the Ray cluster at {address!r} ({e}); start it "
            "(ray start --head) or fix [board] ray_address"
        ) from None


def _start_ray(address: str) -> None:
    """Connect to the cluster at ``address`` (``local``: start one here, on 127.0.0.1).

    Raises:
        UserError: no ``ray`` extra, or nothing answers at ``address``.
    """
    if not installed(ray):
        raise gg.UserError("--ray needs the 'ray' extra (pip install 'gg-agent[ray]')")
    if not ray.is_initialized():
        local = address == "local"
        if not local:
            _reachable(address)
        ray.init(
            address=None if local else address,
            include_dashboard=False if local else None,
            _node_ip_address="127.0.0.1" if local else None,
            log_to_driver=False,
        )


def _in_process(jobs: list[WorkerJob]) -> list[tuple[WorkerJob, WorkerReport]]:
    """The workers' runs in threads of this process, without Ray (``address=None``).

    Returns:
        Each job with its report, in the jobs' order.
    """
    with ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="gg-worker") as pool:
        return list(zip(jobs, pool.map(_task, jobs), strict=True))


def was_dispatched(board: Board) -> bool:
    """Whether ``board`` (on PostgreSQL) was run by dispatched workers before.

    Its issues' branches and merges are then on the remote, not in this checkout:
    ``gg board run`` without Ray finishes it with the same workers in this process
    (:func:`dispatch` with ``address=None``), never in this checkout.
    """
    if not is_postgres_url(board.settings.board.store):
        return False
    for issue in board.store.issues():
        for entry in board.store.detail(issue.number).history:
            runner = entry.detail.get("runner") if entry.event == "claimed" else None
            if isinstance(runner, str) and runner.startswith("ray-worker-"):
                return True
    return False


def _job(
    board: Board, *, slot: int, remote: str, lease_s: float | None, probe: Probe | None
) -> WorkerJob:
    """Worker ``slot``'s job: the board's store, base branch, model and claim timings."""
    return WorkerJob(
        slot=slot,
        remote=remote,
        store=board.settings.board.store,
        base_branch=board.base_branch(),  # settled and recorded: every worker agrees
        model=board._agent.get("model") or board.settings.model.spec,
        lease_s=lease_s or board.claim_lease_s,
        poll_s=board.claim_poll_s,
        probe=probe,
    )


def dispatch(
    board: Board,
    *,
    address: str | None,
    workers: int,
    remote: str = "origin",
    max_retries: int = 2,
    lease_s: float | None = None,
    probe: Probe | None = None,
) -> DispatchResult:
    """Run ``board`` on a Ray cluster: ``workers`` board runners as Ray tasks (issue 17).

    Args:
        board: the driver's board (its workspace gives the remote, its settings the store).
        address: the Ray cluster (``ray://HOST:10001``, ``HOST:6379``, or ``local`` for a
            cluster of this machine on 127.0.0.1); ``None``: the same runners, each in its
            own clone, in threads of this process (finishing a board without its cluster).
        workers: how many runners (tasks) at once.
        remote: the workspace's remote the workers clone and push to.
        max_retries: Ray's retries of a task whose worker died.
        lease_s: the claim lease (default :attr:`Board.claim_lease_s`).
        probe: told of every point of :data:`POINTS` (tests' kill points), on the workers too.

    Returns:
        The workers' reports, the board's issues, the dispatch's merged stream and index.

    Raises:
        UserError: no ``ray`` extra, a store that is not PostgreSQL, no such remote.
        ConfigError: a changed config newly asks for Ray or another weakening setting,
            without ``trust_config`` (the trust rule, issue 9).
    """
    spec = board.settings.board.store
    if not is_postgres_url(spec):
        raise gg.UserError(
            "--ray: the board's store must be PostgreSQL ([board] store = 'postgresql://...'), "
            "which every worker reaches"
        )
    url = _remote_of(board.workspace, remote)
    approval = board.approval()
    if address is not None:
        _start_ray(address)
    approval.record()  # the dispatch starts: its config is the workspace's approved one
    jobs = [
        _job(board, slot=i, remote=url, lease_s=lease_s, probe=probe) for i in range(1, workers + 1)
    ]
    tell = probe or (lambda point, number: None)
    tell("dispatching", 0)
    lost: list[str] = []
    if address is None:
        shipped = _in_process(jobs)
    else:
        task = ray.remote(max_retries=max_retries, retry_exceptions=False)(_task)
        shipped, lost = _gather([task.remote(job) for job in jobs], jobs)
    tell("workers_done", 0)
    _pull(board.workspace, url, board.base_branch())
    tell("pulled", 0)
    return _record(board, sorted(shipped, key=lambda pair: pair[0].slot), tuple(lost))


def _pull(workspace: Path, url: str, base: str) -> None:
    """Bring the driver's checkout to the remote's base branch (fast-forward only).

    A fetch of ``refs/heads/BASE`` then ``merge --ff-only``: ``git pull`` would pass
    the branch on to fetch after its options, where ``--upload-pack=...`` is one.

    Raises:
        UserError: ``url`` is not one gg passes to git.
        BoardError: git failed (a driver the configuration defines never runs).
    """
    if base.startswith("-"):  # git pull hands its refspecs to fetch after its options
        raise gg.UserError(f"--ray: the base branch {base!r} is not a branch name gg uses")
    _git(workspace, "fetch", "--quiet", "--end-of-options", url, f"refs/heads/{base}", remote=url)
    _git(workspace, "merge", "--quiet", "--ff-only", "FETCH_HEAD")


def _gather(
    refs: list[Any], jobs: list[WorkerJob]
) -> tuple[list[tuple[WorkerJob, WorkerReport]], list[str]]:
    """Every task's report, waiting for all; the workers Ray gave up on, one line each.

    A worker that died for good (its retries spent, its node gone) is no failure of the
    dispatch: the others take its issues over once its claims run out.

    Raises:
        WorkerFailed: a worker's run raised a gg error (after every task is waited for).
    """
    reports: list[tuple[WorkerJob, WorkerReport]] = []
    lost: list[str] = []
    failed: BaseException | None = None
    for ref, job in zip(refs, jobs, strict=True):
        try:
            reports.append((job, ray.get(ref)))
        except ray.exceptions.RayTaskError as e:  # the task raised: WorkerFailed
            failed = failed or e
        except ray.exceptions.RayError as e:  # the worker or its node died for good
            lost.append(f"worker {job.slot}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
    if failed is not None:
        raise failed
    return reports, lost


def parts_of(shipped: list[tuple[WorkerJob, WorkerReport]]) -> list[Part]:
    """The parts to merge: each report's stream under the slot of the job the driver made.

    A report's own ``slot`` is what the worker says; the driver's job says which worker
    it is (the report's slot is kept in the index as ``reported_slot`` when it differs).

    Args:
        shipped: each job with the report its task returned.

    Returns:
        One :class:`~gg.board.merged.Part` per report, in the given order.
    """
    parts: list[Part] = []
    for job, r in shipped:
        meta: dict[str, Any] = {"host": r.host, "pid": r.pid, "status": r.status}
        meta["issues"] = list(r.issues)
        if r.slot != job.slot:
            meta["reported_slot"] = r.slot
        parts.append(Part(slot=job.slot, run_id=r.run_id, stream=r.stream, seal=r.seal, meta=meta))
    return parts


def _record(
    board: Board, shipped: list[tuple[WorkerJob, WorkerReport]], lost: tuple[str, ...] = ()
) -> DispatchResult:
    """Verify and merge every worker's stream into ``<state>/runs/<dispatch id>/`` (one record).

    :func:`gg.board.merged.merge` writes the parts, the index and the merged stream;
    each part's slot is its job's (:func:`parts_of`).
    """
    dispatch_id = time.strftime("ray-%Y%m%dT%H%M%S-") + uuid.uuid4().hex[:6]
    folder = private_dir(workspace_state(board.workspace) / "runs" / dispatch_id)
    issues = tuple(board.store.issues())
    index = merge(
        folder,
        dispatch_id=dispatch_id,
        parts=parts_of(shipped),
        workspace=board.workspace,
        settings=board.settings.model_dump(mode="json"),
        done=all(i.state is IssueState.DONE for i in issues),
        lost=lost,
    )
    reports = tuple(report for _, report in shipped)
    return DispatchResult(
        dispatch_id=dispatch_id, index=index, workers=reports, issues=issues, lost=lost
    )
