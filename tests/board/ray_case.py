"""A Ray-dispatched board run, for the Ray tests: ``python ray_case.py WORKSPACE CONFIG OUT``.

Run in a network namespace of its own with only the loopback interface
(``unshare --net``), so that no Ray traffic can leave it whatever addresses Ray
binds (it listens on every interface it finds); PostgreSQL is reached through
its Unix socket. Starts a local Ray cluster (2 CPUs, node address 127.0.0.1),
dispatches the board with 2 workers, writes ``{"exit_code", "index"}`` to OUT.
``GG_TEST_INLINE=1``: the same two workers in this process, without Ray
(``dispatch(address=None)``). The kill points of :func:`ray_model.probe` are on.
``GG_TEST_RETRIES=N``: Ray's retries of a dead worker's task (default 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ray
import ray_model

from gg.board import Board
from gg.board.raydispatch import dispatch
from gg.testing import FunctionModel

HERE = Path(__file__).parent


def main() -> int:
    addresses = subprocess.run(
        ["ip", "-o", "addr"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    outward = [a for a in addresses if a.split()[1] != "lo"]
    if outward:
        raise SystemExit(f"not in a loopback-only network namespace: {outward}")
    env = {
        "PYTHONPATH": f"{HERE}:{HERE.parent}:{HERE.parents[1] / 'src'}",
        "GG_STATE_HOME": os.environ["GG_STATE_HOME"],
        "GG_TEST_PAUSE_S": os.environ.get("GG_TEST_PAUSE_S", "1.0"),
        "GG_TEST_HANG": os.environ.get("GG_TEST_HANG", ""),
        "GG_TEST_CRASH": os.environ.get("GG_TEST_CRASH", ""),
        "GG_TEST_CRASH_DIR": os.environ.get("GG_TEST_CRASH_DIR", ""),
        "GG_TEST_DRIVER_PID": str(os.getpid()),
    }
    os.environ["GG_TEST_DRIVER_PID"] = str(os.getpid())
    inline = os.environ.get("GG_TEST_INLINE") == "1"
    if not inline:
        ray.init(
            num_cpus=2,
            _node_ip_address="127.0.0.1",
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": env},
        )
    try:
        board = Board(
            Path(sys.argv[1]),
            config=Path(sys.argv[2]),
            model=FunctionModel(ray_model.answer),
            reviewers=1,
            max_rounds=2,
        )
        result = dispatch(
            board,
            address=None if inline else "local",
            workers=2,
            lease_s=10,
            probe=ray_model.probe,
            max_retries=int(os.environ.get("GG_TEST_RETRIES", "2")),
        )
        board.close()
    finally:
        ray.shutdown()
    Path(sys.argv[3]).write_text(
        json.dumps({"exit_code": result.exit_code, "index": str(result.index)})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
