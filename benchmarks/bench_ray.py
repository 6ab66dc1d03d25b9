"""Episodes per second on Ray against the number of workers, with virtual devices behind the real
adb server, and the scaling efficiency against one worker, all measured in one run.

Run: ``.venv/bin/python benchmarks/bench_ray.py [--quick] [--sizes 1,2,4,8] [--sandbox]`` (part of
``make bench``; needs ``pip install -e '.[ray,device]'`` and ``adb``; says why and exits 0 when
one is missing).

Setup: a private adb server (``adb -P <free port> nodaemon server``), 8 virtual devices each served
by its own ``phoneenv device serve --port 0`` process and ``adb connect``-ed, and one local Ray
(``num_cpus`` = the largest size, whatever the machine's cores: the figures say how many cores
there are). For each size N, :func:`phoneenv.farm.distributed.run_episodes_ray` plays the same
tasks (the reference agent on adb-runnable Tool tasks) on N actors, each episode on a device leased
from the first N devices.

Figures per size: episodes/s over the whole call (starting N actors included) and in the steady
state (episodes after the first one back, over the time from it to the last), and the scaling
efficiency ``rate(N) / (N × rate(1))`` of the steady rate. With ``--sandbox`` the same on the
sandbox backend (no devices). Every run must score the same as the first (checked).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the adb server helpers live in tests/adb.py
    sys.path.insert(0, str(ROOT))


def missing() -> str | None:
    """Why the benchmark cannot run here, or None."""
    try:
        import adbutils  # noqa: F401
        import ray  # noqa: F401
    except ModuleNotFoundError as exc:
        return f"{exc.name} is not installed (pip install -e '.[ray,device]')"
    from tests.adb import adb_binary

    if adb_binary() is None:
        return "adb is not installed (Debian: apt-get install adb)"
    return None


@contextlib.contextmanager
def devices(n: int, client, home: Path):
    """``n`` virtual devices, each served by a ``phoneenv device serve`` process and connected
    to the adb server of ``client``; yields their serials."""
    from tests.adb import clean_env, connect_device

    procs, serials = [], []
    try:
        for k in range(n):
            log = (home / f"device{k}.log").open("w+")
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "phoneenv.cli", "device", "serve", "--port", "0"],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env={**clean_env(), "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
                    start_new_session=True,
                )
            )  # fmt: skip
            deadline = time.monotonic() + 60
            while True:
                text = (home / f"device{k}.log").read_text()
                found = re.search(r"serving .* on (127\.0\.0\.1:\d+)", text)
                if found:
                    serials.append(found.group(1))
                    break
                if procs[-1].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"device {k} did not start:\n{text}")
                time.sleep(0.1)
            connect_device(client, serials[-1])
        yield serials
    finally:
        for serial in serials:
            with contextlib.suppress(Exception):
                client.disconnect(serial)
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def measure(tasks, sizes, serials=None, adb_port=None) -> list[dict]:
    """One row per size: episodes, seconds, episodes/s whole and steady, successes."""
    from phoneenv.farm.distributed import AgentSpec, run_episodes_ray

    rows = []
    for n in sizes:
        stamps: list[float] = []
        t0 = time.perf_counter()
        run = run_episodes_ray(
            AgentSpec("reference"),
            tasks,
            None,
            workers=n,
            on_episode=lambda r, s=stamps: s.append(time.perf_counter()),
            **({"devices": serials[:n], "adb_port": adb_port} if serials else {"env_kwargs": {"backend": "sandbox"}}),
        )
        wall = time.perf_counter() - t0
        steady = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 and stamps[-1] > stamps[0] else 0.0
        rows.append(
            {
                "workers": n,
                "episodes": len(run.results),
                "wall_s": wall,
                "eps_whole": len(run.results) / wall,
                "eps_steady": steady,
                "successes": sum(r.success for r in run.results),
                "infra": sum(r.infrastructure_error for r in run.results),
                "reruns": len(run.reruns),
            }
        )
    base = rows[0]["eps_steady"] / rows[0]["workers"] if rows and rows[0]["eps_steady"] else 0.0
    for row in rows:
        row["efficiency"] = row["eps_steady"] / (row["workers"] * base) if base else 0.0
    return rows


def show(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    print(
        f"{'workers':>7} {'episodes':>8} {'wall s':>7} {'eps/s (whole)':>13} {'eps/s (steady)':>14} {'efficiency':>10}"
    )
    for r in rows:
        print(
            f"{r['workers']:>7} {r['episodes']:>8} {r['wall_s']:>7.1f} {r['eps_whole']:>13.2f} {r['eps_steady']:>14.2f} "
            f"{100 * r['efficiency']:>9.0f}%"
        )
    bad = [r for r in rows if (r["successes"], r["infra"]) != (rows[0]["successes"], rows[0]["infra"])]
    if bad:
        raise SystemExit(f"runs scored differently: {bad}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer episodes (a smoke run)")
    parser.add_argument("--sizes", default="1,2,4,8", help="worker counts, comma-separated")
    parser.add_argument("--sandbox", action="store_true", help="also measure the sandbox backend (no devices)")
    args = parser.parse_args()
    why = missing()
    if why:
        print(f"bench_ray skipped: {why}")
        return
    from phoneenv.backends.adb import AdbBackend
    from phoneenv.farm.distributed import init_ray
    from phoneenv.tasks import select
    from tests.adb import AdbServer

    sizes = [int(x) for x in args.sizes.split(",")]
    probe = AdbBackend(serial="none")
    runnable = [t for t in select("category:tool") if probe.can_run(t)]
    count = 16 if args.quick else 64
    tasks = (
        (runnable * (count // len(runnable) + 1))[:count]
        if len(runnable) < count
        else runnable[:: len(runnable) // count][:count]
    )
    print(f"machine: {os.cpu_count()} CPU cores; Ray with {max(sizes)} worker slots; {len(tasks)} episodes per size")
    with tempfile.TemporaryDirectory(prefix="bench_ray") as tmp:
        home = Path(tmp)
        started = init_ray("local", num_cpus=max(sizes), object_store_memory=200_000_000)
        try:
            with AdbServer(home / "adb") as server, devices(max(sizes), server.client, home) as serials:
                show("virtual devices (one per worker), reference agent", measure(tasks, sizes, serials, server.port))
            if args.sandbox:
                show("sandbox, reference agent", measure(tasks, sizes))
        finally:
            if started:
                import ray

                ray.shutdown()


if __name__ == "__main__":
    main()
