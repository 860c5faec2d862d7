"""Which retry schedule a PostgreSQL store gets while it opens (issue 17, adversarial review).

A server never reached gets :data:`gg.board.postgres.OPEN_RETRY_DELAYS_S` (a wrong URL says
so quickly); one reached once and then lost gets :data:`~gg.board.postgres.RETRY_DELAYS_S`
(long enough for a restart), also when it is lost inside the very first call, the schema's
migration, right after the connection was made.
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from gg.board.postgres import _MIGRATE_LOCK, PostgresStore, StoreLost
from pgcluster import PgCluster, wait_for

LONG = (0.3, 0.3, 0.3)
SHORT = (0.01,)


def _waiting_on_the_migration_lock(cluster: PgCluster) -> bool:
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'gg-board' "
            "AND wait_event_type = 'Lock'"
        ).fetchone()
    return bool(row and row[0])


def test_a_server_lost_during_the_first_call_gets_the_long_retries() -> None:
    cluster = PgCluster().init()
    try:
        url = cluster.new_database()
        holder = psycopg.connect(url)  # another opener, mid-migration: holds the lock
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
        outcome: dict[str, object] = {}

        def open_store() -> None:
            started = time.monotonic()
            try:
                PostgresStore(url, retry_delays=LONG, open_retry_delays=SHORT)
            except StoreLost as e:
                outcome["error"] = str(e)
            outcome["took"] = time.monotonic() - started

        opener = threading.Thread(target=open_store)
        opener.start()
        wait_for(lambda: _waiting_on_the_migration_lock(cluster))  # reached, then waiting
        cluster.kill()
        opener.join(60)
        assert not opener.is_alive()
        error = str(outcome["error"])
        assert "lost the PostgreSQL board store" in error
        assert f"{len(LONG) + 1} tries over {sum(LONG):g}s" in error, error
        assert float(str(outcome["took"])) >= sum(LONG)
    finally:
        cluster.stop()


def test_a_server_never_reached_gets_the_short_retries() -> None:
    cluster = PgCluster().init()
    try:
        url = cluster.url()
        cluster.kill()
        started = time.monotonic()
        with pytest.raises(StoreLost) as info:
            PostgresStore(url, retry_delays=LONG, open_retry_delays=SHORT)
        error = str(info.value)
        assert "cannot reach the PostgreSQL board store" in error
        assert f"{len(SHORT) + 1} tries over {sum(SHORT):g}s" in error, error
        assert time.monotonic() - started < sum(LONG)
    finally:
        cluster.stop()
