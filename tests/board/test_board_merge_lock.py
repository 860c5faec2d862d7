"""The workers' shared merge lock (issue 17) on a real PostgreSQL server.

A board's store URL may name the board (``?board=NAME``, as the README suggests); libpq
refuses that parameter, so the lock must connect without it.
"""

from __future__ import annotations

import asyncio

from gg.board.raydispatch import SharedMergeLock


def test_the_merge_lock_takes_a_url_that_names_the_board(pg_url: str) -> None:
    synced: list[int] = []
    lock = SharedMergeLock(url=f"{pg_url}?board=team-a", sync=lambda: synced.append(1))
    other = SharedMergeLock(url=f"{pg_url}?board=team-a", sync=lambda: None, poll_s=0.05)

    async def go() -> bool:
        async with lock:
            waiting = asyncio.create_task(other.acquire())
            await asyncio.sleep(0.3)
            held_out = not waiting.done()  # the advisory lock is held across "workers"
        await asyncio.wait_for(waiting, 10)
        other.release()
        return held_out

    assert asyncio.run(go())
    assert synced == [1]
