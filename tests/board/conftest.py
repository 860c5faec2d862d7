"""Fixtures for board tests: real git repositories in temp dirs, a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from board_support import make_repo

from pgcluster import PgCluster


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository on ``main`` with a failing test and an agent-stop hook running it."""
    return make_repo(tmp_path / "repo")


@pytest.fixture(scope="session")
def pg() -> Iterator[PgCluster]:
    """One throwaway PostgreSQL server on 127.0.0.1 for the session, stopped at the end."""
    cluster = PgCluster().init()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg: PgCluster) -> str:
    """The URI of a new, empty database on the session's server."""
    return pg.new_database()
