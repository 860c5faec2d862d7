"""A full disk, for real: a small tmpfs filled to ENOSPC under the stream and the store
(issue 12 item 1). Nothing is glued, nothing is lost, the error names the disk."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gg.board.sqlite import SqliteStore
from gg.disk import is_disk_full, mount_point
from gg.errors import DiskFull
from gg.seal import Checker
from gg.stream import ErrorTurn, RunStarted, StreamWriter, read_events
from support import fill_disk, small_tmpfs


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256k tmpfs mounted at a fresh directory."""
    with small_tmpfs(tmp_path / "disk", "256k") as mnt:
        yield mnt


def _started() -> RunStarted:
    return RunStarted(run_id="r1", pid=os.getpid(), workspace="/w", settings={}, isolation="x")


def _turn(i: int, size: int = 3000) -> ErrorTurn:
    return ErrorTurn(run_id="r1", session_id="s1", turn=i, kind="no_tool_call", message="f" * size)


def test_a_full_disk_never_glues_a_cut_line_to_the_next(small_disk: Path) -> None:
    path = small_disk / "runs" / "stream.jsonl"
    writer = StreamWriter(path, fsync="turn", seal_dir=small_disk / "seal")
    writer.emit(_started())
    for i in range(3):
        writer.emit(_turn(i))
    writer.sync()
    filler = fill_disk(small_disk)
    with pytest.raises(DiskFull) as caught:
        for i in range(3, 200):
            writer.emit(_turn(i))
    assert str(small_disk) in str(caught.value) and "full" in str(caught.value)
    assert caught.value.mount == small_disk
    # every byte in the file is whole lines
    data = path.read_bytes()
    assert data.endswith(b"\n")
    written = data.count(b"\n")
    filler.unlink()  # space again: the next event goes on a line of its own
    writer.emit(_turn(999, size=10))
    writer.close()
    events = list(read_events(path, check=Checker(path, seal_dir=small_disk / "seal")))
    assert len(events) == written + 1
    last = events[-1]
    assert isinstance(last, ErrorTurn) and last.turn == 999


def test_a_damaged_line_is_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "stream.jsonl"
    writer = StreamWriter(path, fsync="never")
    writer.emit(_started())
    writer.emit(_turn(1, size=10))
    writer.close()
    with path.open("ab") as f:  # what an old gg left after a full disk: a glued line
        f.write(b'{"type":"error_turn","ses{"type":"error_turn"}\n')
        f.write(_turn(2, size=10).model_dump_json().encode() + b"\n")
    damaged: list[tuple[int, str]] = []
    events = list(read_events(path, on_damaged=lambda n, why: damaged.append((n, why))))
    assert [e.type for e in events] == ["run_started", "error_turn", "error_turn"]
    assert [n for n, _ in damaged] == [3] and "line 3" in damaged[0][1]
    with pytest.raises(Exception, match="line 3"):  # without a reporter: refused, as before
        list(read_events(path))


def test_the_store_on_a_full_disk_raises_disk_full_and_keeps_what_it_had(
    small_disk: Path,
) -> None:
    store = SqliteStore(small_disk / "board.sqlite3")
    first = store.add_issue("before the disk filled", "")
    filler = fill_disk(small_disk)
    with pytest.raises(DiskFull) as caught:
        for i in range(500):
            store.add_issue(f"issue {i} " + "x" * 2000, "y" * 4000)
    assert "board store" in str(caught.value) and str(small_disk) in str(caught.value)
    filler.unlink()
    after = store.add_issue("after space came back", "")
    assert store.issue(first.number).title == "before the disk filled"
    assert after.number > first.number
    store.close()


def test_is_disk_full_knows_the_shapes() -> None:
    assert is_disk_full(OSError(28, "No space left on device"))
    assert is_disk_full(OSError(122, "Disk quota exceeded"))
    assert not is_disk_full(OSError(13, "Permission denied"))
    assert not is_disk_full(ValueError("disk is full"))


def test_mount_point_of_a_missing_path_is_its_nearest_existing_mount(small_disk: Path) -> None:
    assert mount_point(small_disk / "not" / "there") == small_disk
    assert mount_point(Path("/")) == Path("/")
