"""One task without the whole suite: the time to a first observation for one task, against the
full suite's build, in fresh processes of the same run.

    python benchmarks/bench_load.py            # 3 rounds each (about a minute on 2 cores)
    python benchmarks/bench_load.py --rounds 1

Figures (CPU seconds of the child process, user + system, from ``resource.getrusage``; medians
over the rounds):

* one task: ``gym.make("PhonePlan-v0", task=ID)`` and ``reset()`` in a fresh interpreter, imports
  included, with the apps' tool specs in the on-disk cache (:mod:`phoneenv.toolcache`; the usual
  case after a machine's first process) and cold (an empty cache: the specs are built and
  written). Baseline: the same after ``load_suite()`` (what every process paid before tasks were
  built alone). Target: <= 0.5 s of the first call's own cost (the make and reset), and a ratio.
  The bench keeps its caches in a temporary folder of its own.
* MCP: ``phoneenv mcp serve --task ID`` over stdio, wall seconds from launch until the official
  SDK client has listed the tools (an MCP client such as the Inspector gives up after 15 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "clock.set_alarm/0"

CHILD = """
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0 = cpu()
import gymnasium as gym
import phoneenv
if sys.argv[2] == "suite":
    from phoneenv.tasks import load_suite
    load_suite()
t1 = cpu()
env = gym.make("PhonePlan-v0", task=sys.argv[1])
env.reset(seed=0)
t2 = cpu()
print(json.dumps({"total": t2 - t0, "first_call": t2 - t1}))
"""


def child(mode: str, cache: str) -> dict[str, float]:
    """One fresh interpreter's figures; ``cache`` is its tool-spec cache folder."""
    env = {**os.environ, "PHONEENV_TOOL_CACHE": cache}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, TASK, mode],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=600, env=env,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def mcp_ready() -> float | None:
    """Wall seconds from launching ``phoneenv mcp serve --task`` until its tools are listed; None
    without the ``mcp`` extra."""
    try:
        import anyio
        from mcp import Client, StdioServerParameters
    except ImportError:
        return None
    params = StdioServerParameters(command=sys.executable, args=["-m", "phoneenv", "mcp", "serve", "--task", TASK])

    async def main() -> float:
        t0 = time.perf_counter()
        async with Client(params, read_timeout_seconds=120) as client:
            await client.list_tools()
            return time.perf_counter() - t0

    return anyio.run(main)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    one, cold, suite, mcp = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        warm_cache = str(Path(tmp) / "warm")
        os.environ["PHONEENV_TOOL_CACHE"] = warm_cache  # mcp serve too
        child("one", warm_cache)  # fills the cache the warm rounds read
        for k in range(args.rounds):  # interleaved, so load on the machine hits all alike
            one.append(child("one", warm_cache))
            cold.append(child("one", str(Path(tmp) / f"cold-{k}")))
            suite.append(child("suite", warm_cache))
            if (m := mcp_ready()) is not None:
                mcp.append(m)
    med = {k: statistics.median(r[k] for r in one) for k in ("total", "first_call")}
    med_cold = {k: statistics.median(r[k] for r in cold) for k in ("total", "first_call")}
    base = {k: statistics.median(r[k] for r in suite) for k in ("total", "first_call")}
    print(f"one task {TASK}: {med['total']:.2f} s CPU in all, make+reset {med['first_call']:.2f} s (target <= 0.5 s)")
    print(
        f"  cold tool-spec cache (built and written): {med_cold['total']:.2f} s CPU in all, "
        f"make+reset {med_cold['first_call']:.2f} s"
    )
    print(f"  baseline, the whole suite built first: {base['total']:.2f} s CPU ({base['total'] / med['total']:.1f}x)")
    if mcp:
        print(f"mcp serve --task {TASK}: tools listed after {statistics.median(mcp):.2f} s wall (target <= 2 s)")
    else:
        print("mcp serve: skipped (pip install -e '.[mcp]')")


if __name__ == "__main__":
    main()
