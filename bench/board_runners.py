"""Issues/hour of a board on PostgreSQL: one runner vs several runners at once (issue 17).

A benchmark, not a test. It starts a throwaway PostgreSQL server on 127.0.0.1
(tests/pgcluster.py), then for each configuration a fresh database with N
scripted issues (each writes one file, one reviewer approves, the merge agent
merges) and R board runners, each a process in its own clone of one
repository, all claiming from the one board (tests/board/pg_driver.py). The
model answers at once, or after ``--latency`` seconds per implementer step
(a stand-in for a real model's time). ``--ray`` adds Ray dispatch
(gg.board.raydispatch) with the same worker counts on a local Ray cluster, run
in a network namespace with only loopback (``unshare --net``, as root), the
workers cloning one bare remote; its time includes each task's clone and start.
Prints a markdown table.

    python bench/board_runners.py --issues 12 --runners 1,2,4 --latency 0,2 --ray
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHS = [str(ROOT / "tests"), str(ROOT / "tests" / "board"), str(ROOT / "src")]
sys.path[:0] = PATHS

from board_support import GREET_FIXED, TEST_GREET, git, make_repo  # noqa: E402

from gg.board import Board  # noqa: E402
from gg.board.postgres import PostgresStore  # noqa: E402
from pgcluster import PgCluster  # noqa: E402


def one(cluster: PgCluster, issues: int, runners: int, concurrency: int, latency: float) -> float:
    """Seconds for ``runners`` runners to take ``issues`` issues to done."""
    url = cluster.new_database()
    store = PostgresStore(url)
    for n in range(1, issues + 1):
        store.add_issue(f"Write issue_{n}.py")
    with tempfile.TemporaryDirectory(prefix="gg-bench-") as tmp:
        origin = make_repo(
            Path(tmp) / "origin", files={"greet.py": GREET_FIXED, "test_greet.py": TEST_GREET}
        )
        clones = [origin]
        for r in range(1, runners):
            git(Path(tmp), "clone", "-q", str(origin), str(Path(tmp) / f"clone{r}"))
            clones.append(Path(tmp) / f"clone{r}")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(PATHS),
            "GG_STATE_HOME": str(Path(tmp) / "state"),
            "GG_TEST_PAUSE_S": str(latency),
            "GG_TEST_CONCURRENCY": str(concurrency),
        }
        driver = ROOT / "tests" / "board" / "pg_driver.py"
        started = time.monotonic()
        procs = [
            subprocess.Popen([sys.executable, str(driver), str(c), url], env=env) for c in clones
        ]
        codes = [p.wait() for p in procs]
        elapsed = time.monotonic() - started
    done = sum(1 for i in store.issues() if i.state.value == "done")
    store.close()
    if codes != [0] * runners or done != issues:
        raise SystemExit(f"runners exited {codes}; {done} of {issues} done")
    return elapsed


def on_ray(cluster: PgCluster, issues: int, workers: int, latency: float) -> float:
    """Seconds for a Ray dispatch with ``workers`` workers (a child in a loopback-only netns)."""
    url = cluster.new_database()
    store = PostgresStore(url)
    for n in range(1, issues + 1):
        store.add_issue(f"Write issue_{n}.py")
    with tempfile.TemporaryDirectory(prefix="gg-bench-") as tmp:
        seed = make_repo(
            Path(tmp) / "seed", files={"greet.py": GREET_FIXED, "test_greet.py": TEST_GREET}
        )
        git(Path(tmp), "clone", "-q", "--bare", str(seed), str(Path(tmp) / "origin.git"))
        git(Path(tmp), "clone", "-q", str(Path(tmp) / "origin.git"), str(Path(tmp) / "driver"))
        toml = Path(tmp) / "driver.toml"
        toml.write_text(f'[board]\nstore = "{cluster.socket_url(url)}"\n')
        env = {**os.environ, "GG_STATE_HOME": str(Path(tmp) / "state")}
        child = [sys.executable, __file__, "--ray-child", str(workers), str(Path(tmp) / "driver")]
        command = ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
        done = subprocess.run(
            [*command, *child, str(toml), str(latency)], env=env, capture_output=True, text=True
        )
        if done.returncode:
            raise SystemExit(f"the Ray child failed: {done.stderr[-3000:]}")
        out = done.stdout
    done = sum(1 for i in store.issues() if i.state.value == "done")
    store.close()
    if done != issues:
        raise SystemExit(f"ray: {done} of {issues} done")
    return float(json.loads(out.splitlines()[-1])["seconds"])


def ray_child(workers: int, workspace: Path, toml: Path, latency: float) -> None:
    """In the namespace: a local Ray cluster of ``workers`` CPUs, one timed dispatch."""
    import pg_driver
    import ray

    from gg.board.raydispatch import dispatch
    from gg.testing import FunctionModel

    env = {
        "PYTHONPATH": os.pathsep.join(PATHS),
        "GG_STATE_HOME": os.environ["GG_STATE_HOME"],
        "GG_TEST_PAUSE_S": str(latency),
    }
    ray.init(num_cpus=workers, _node_ip_address="127.0.0.1", include_dashboard=False,
             log_to_driver=False, runtime_env={"env_vars": env})  # fmt: skip
    board = Board(workspace, config=toml, model=FunctionModel(pg_driver.answer), reviewers=1)
    started = time.monotonic()
    result = dispatch(board, address="local", workers=workers)
    elapsed = time.monotonic() - started
    ray.shutdown()
    print(json.dumps({"seconds": elapsed, "exit_code": result.exit_code}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=12)
    parser.add_argument("--runners", default="1,2,4", help="runner counts, comma-separated")
    parser.add_argument("--latency", default="0,2", help="model seconds per implementer step")
    parser.add_argument("--ray", action="store_true", help="also Ray dispatch (root: unshare)")
    parser.add_argument("--ray-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ray_child:
        workers, workspace, toml, latency = args.ray_child
        ray_child(int(workers), Path(workspace), Path(toml), float(latency))
        return
    cluster = PgCluster().init()
    rows = []
    try:
        for latency in [float(x) for x in args.latency.split(",")]:
            base = None
            configs = [(r, 1) for r in map(int, args.runners.split(","))]
            configs.append((1, max(r for r, _ in configs)))  # one process, asyncio concurrency
            for runners, concurrency in configs:
                secs = one(cluster, args.issues, runners, concurrency, latency)
                rate = args.issues * 3600 / secs
                base = base or rate
                rows.append((latency, str(runners), concurrency, secs, rate, rate / base))
                print(f"latency {latency}s: {runners} runner(s) x {concurrency}: {secs:.1f}s "
                      f"{rate:.0f} issues/h", file=sys.stderr, flush=True)  # fmt: skip
            for workers in map(int, args.runners.split(",")) if args.ray else ():
                secs = on_ray(cluster, args.issues, workers, latency)
                rate = args.issues * 3600 / secs
                rows.append((latency, f"Ray {workers}", 1, secs, rate, rate / (base or rate)))
                print(f"latency {latency}s: Ray x {workers}: {secs:.1f}s {rate:.0f} issues/h",
                      file=sys.stderr, flush=True)  # fmt: skip
    finally:
        cluster.stop()
    print(f"\n{args.issues} issues, {os.cpu_count()} cores\n")
    print("| model latency | runners | issues at once each | seconds | issues/hour | vs 1 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for latency, runners, concurrency, secs, rate, ratio in rows:
        print(
            f"| {latency:g}s | {runners} | {concurrency} | {secs:.1f} | {rate:.0f} | {ratio:.2f}x |"
        )


if __name__ == "__main__":
    main()
