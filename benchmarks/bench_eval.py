"""Eval throughput: episodes/s of ``run_episodes`` with N episodes in flight against a served
model with a fixed latency, and of a reference eval with the run's trace writer against
serialising the traces alone, all measured in one run.

Run: ``.venv/bin/python benchmarks/bench_eval.py [--quick] [--latency 0.1]`` (part of ``make bench``).

Served model: ``tests/latency_openai.py`` in its own process (so its CPU is not this process's),
an OpenAI-compatible server on 127.0.0.1 that answers every chat completion after ``--latency``
seconds with the next call of the task's reference plan. The LLM planner
(:class:`agents.planner.LLMPlanner` over :class:`agents.llm.client.OpenAIChatClient`, tool filter
``task``) plays sandbox Tool and Sub-agent tasks through it, N = 1, 8 and 32 episodes at once
(``run_episodes(concurrency=N)``); every N must score what N = 1 scores (checked). Figures:
episodes/s over the whole call (envs built included) and the ratio to N = 1 (target: >= 20x at
N = 32).

Traces: ``run_episodes(out_dir=...)`` with the reference agent on sandbox Tool tasks, every
trace serialised, and written nowhere (the floor), one file per episode on the episode's
thread (``atomic_write``, as ``eval`` did before), or by the run's
:class:`~phoneenv.evaluation.TraceWriter` thread (now); then the writer with ``gc.freeze()``
after set-up. Each figure is the median of the repetitions, interleaved.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import Future
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the latency server lives in tests/latency_openai.py
    sys.path.insert(0, str(ROOT))

from agents.llm.client import OpenAIChatClient  # noqa: E402
from agents.planner import LLMPlanner  # noqa: E402
from agents.reference import ReferenceAgent  # noqa: E402
from phoneenv import evaluation  # noqa: E402
from phoneenv.evaluation import atomic_write, run_episodes  # noqa: E402
from phoneenv.tasks import load_suite  # noqa: E402
from tests.latency_openai import plans_by_goal  # noqa: E402


def pick_tasks(n: int) -> list:
    """``n`` sandbox Tool and Sub-agent tasks whose goals no other task has (the server finds a
    task's plan by its goal)."""
    suite = load_suite()
    goals = Counter(t.goal for t in suite)
    ok = [t for t in suite if t.backends[0] == "sandbox" and t.category.value in ("tool", "subagent")]
    return [t for t in ok if goals[t.goal] == 1][:n]


class Server:
    """``tests/latency_openai.py`` in a child process; ``base_url`` once it listens."""

    def __init__(self, tasks: list, latency_s: float) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(plans_by_goal(tasks), fh)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.latency_openai", "--latency", str(latency_s), "--plans", fh.name],
            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        line = self.proc.stdout.readline()
        os.unlink(fh.name)
        if not line.startswith("PORT "):
            self.close()
            raise RuntimeError(f"the latency server did not start: {line!r}")
        self.base_url = f"http://127.0.0.1:{int(line.split()[1])}/v1"

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def served(tasks: list, latency_s: float, sizes: list[int], episodes_per_slot: int, minimum: int) -> list[tuple]:
    """Rows (figure, value, target, ratio) of episodes/s at each N against the latency server."""
    server = Server(tasks, latency_s)
    rows: list[tuple] = []
    base: float | None = None
    scores: dict[str, tuple[bool, int]] = {}
    try:
        client = OpenAIChatClient(server.base_url, "m", max_attempts=1)

        def planner() -> LLMPlanner:
            return LLMPlanner(client, tool_filter="task")

        run_episodes(planner(), tasks[:2], None)  # warm: imports, the first connection
        for n in sizes:
            count = max(minimum, episodes_per_slot * n)
            batch = [tasks[k % len(tasks)] for k in range(count)]
            t0 = time.perf_counter()
            results = run_episodes(planner(), batch, None, concurrency=n, agent_factory=planner)
            rate = count / (time.perf_counter() - t0)
            lost = [r for r in results if r.infrastructure_error]
            if lost:
                raise SystemExit(f"N = {n}: {len(lost)} episodes ended in an infrastructure error ({lost[0].task_id})")
            for r in results:  # every episode of a task must end as it did in the first run that played it
                if scores.setdefault(r.task_id, (r.success, r.steps)) != (r.success, r.steps):
                    raise SystemExit(f"N = {n}: {r.task_id} ended otherwise than before ({r.success}, {r.steps} steps)")
            base = base or rate
            target = ">= 20x N=1" if n == 32 else ""
            rows.append(
                (f"llm eval, {latency_s * 1000:.0f} ms server, N = {n} (episodes/s)", rate, target, rate / base)
            )
        fails = sum(not r.success for r in results)
        if fails:
            print(f"note: {fails} of {len(results)} episodes at the last N did not succeed", file=sys.stderr)
    finally:
        server.close()
    return rows


class _Inline(evaluation.TraceWriter):
    """Writes each trace on the episode's thread, as ``eval`` did before the writer thread."""

    def submit(self, task_id: str, text: str) -> Future:
        done: Future = Future()
        path = self.path_for(task_id)
        atomic_write(path, text, sync=False)
        done.set_result(path)
        return done


class _Nowhere(evaluation.TraceWriter):
    """Takes the serialised trace and writes nothing: the floor."""

    def submit(self, task_id: str, text: str) -> Future:
        done: Future = Future()
        done.set_result(self.path_for(task_id))
        return done


def traces(tasks: list, reps: int) -> list[tuple]:
    """Rows of reference-eval episodes/s through ``run_episodes`` (traces serialised in every
    mode): written nowhere, one file per episode inline, the run's writer thread; and the
    writer with ``gc.freeze()`` after set-up."""
    agent = ReferenceAgent()
    writers = {
        "serialise": _Nowhere,
        "inline": _Inline,
        "writer": evaluation.TraceWriter,
        "frozen": evaluation.TraceWriter,
    }
    real = evaluation.TraceWriter
    run_episodes(agent, tasks[:5], None)  # warm
    rates: dict[str, list[float]] = {m: [] for m in writers}
    try:
        for _ in range(reps):
            for name, cls in writers.items():
                evaluation.TraceWriter = cls
                if name == "frozen":  # once per process after set-up, as an eval would: not timed
                    gc.collect()
                    gc.freeze()
                with tempfile.TemporaryDirectory() as d:
                    t0 = time.perf_counter()
                    run_episodes(agent, tasks, Path(d))
                    rates[name].append(len(tasks) / (time.perf_counter() - t0))
                if name == "frozen":
                    gc.unfreeze()
    finally:
        evaluation.TraceWriter = real
    med = {m: statistics.median(v) for m, v in rates.items()}
    floor = med["serialise"]
    return [
        ("reference eval, traces serialised only (episodes/s)", floor, "baseline", 1.0),
        ("reference eval, a file per episode inline (before)", med["inline"], "", med["inline"] / floor),
        ("reference eval, the run's trace writer (now)", med["writer"], "~1x serialise", med["writer"] / floor),
        ("reference eval, writer + gc.freeze() after set-up", med["frozen"], "", med["frozen"] / floor),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer episodes (well under a minute)")
    parser.add_argument("--latency", type=float, default=0.1, help="the server's latency, seconds")
    args = parser.parse_args()
    tasks = pick_tasks(64)
    per_slot, minimum, reps, ref_n = (4, 8, 3, 60) if args.quick else (8, 16, 5, 200)
    rows = served(tasks, args.latency, [1, 8, 32], per_slot, minimum)
    ref_tasks = [t for t in load_suite() if t.backends[0] == "sandbox" and t.category.value == "tool"][:ref_n]
    rows += traces(ref_tasks, reps)
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    width = max(len(r[0]) for r in rows)
    print(f"{'figure':<{width}}  {'value':>9}  {'target':<14}  ratio")
    for figure, value, target, ratio in rows:
        print(f"{figure:<{width}}  {value:9.1f}  {target:<14}  {ratio:.2f}x")


if __name__ == "__main__":
    main()
