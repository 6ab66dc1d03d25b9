"""Memory retrieval: cold first query, warm query on a busy machine, and the whole reference eval
with and without memory, each against a baseline measured in the same run.

Run: ``make bench`` (or ``.venv/bin/python benchmarks/bench_memory.py [--quick]``).

- cold: in a fresh process, the first ``memory.search`` step (it loads the all-MiniLM-L6-v2
  encoder, NumPy: :mod:`phoneenv.harness.minilm`). Baselines: a warm search step in that process;
  and (full run only) the same first query through sentence-transformers, as memory loaded before
  (imports torch).
- warm query, busy: one ``memory.search`` step whose query was never encoded (the task's entries
  already are), while a CPU-burning process (``--burners``) runs beside it; median and p95. The
  encoder caps BLAS at ``$PHONEENV_EMBED_THREADS`` (default 1) while it encodes. Baseline: the
  same queries with BLAS at one thread per core (the library default: threads contend).
- reference eval: ``run_episodes(ReferenceAgent(), tasks)`` in a fresh process (model load
  included), with memory (the default) against ``memory=False`` (no memory tools; the memory
  tasks then fail, which costs about the same steps). ``--quick`` runs every 16th suite task.
  Each child process gets an empty on-disk vector cache (``$PHONEENV_VECTOR_CACHE``), except
  a second eval with memory, which reads what the first one cached (a later eval, training run
  or Ray worker on the same machine).

Targets (issue #15): first query loads lazily (no torch; only episodes that search memory pay
it), one warm query ≤ 25 ms on a busy machine, the eval with memory ≤ 1.5× the eval without.
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


def _child_env(vectors: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PHONEENV_VECTOR_CACHE"] = vectors
    return env


def _run_child(*args: str, vectors: str | None = None) -> dict:
    """Run ``--child args`` in a fresh process; its on-disk vector cache is ``vectors`` (a
    folder), or a new empty folder."""
    with tempfile.TemporaryDirectory(prefix="bench-vectors-") as fresh:
        proc = subprocess.run(
            [sys.executable, __file__, "--child", *args],
            capture_output=True,
            text=True,
            env=_child_env(vectors or fresh),
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _search_tasks():
    from phoneenv.tasks import load_suite

    return [t for t in load_suite() if t.reference_plan and t.reference_plan[0].name == "memory.search"]


# -- children (fresh processes) ----------------------------------------------------------------


def child_cold(engine: str) -> dict:
    """First memory.search step of a fresh process, then a warm one (a new query)."""
    from phoneenv.env import PhonePlanEnv
    from phoneenv.harness import memory

    if engine == "sentence-transformers":  # the previous default: on the CPU, torch's default threads
        memory.default_embedder = _st_embedder  # what memory.shared_embedder loads
    task = _search_tasks()[0]
    env = PhonePlanEnv(task=task)
    env.reset(seed=0)
    call = task.reference_plan[0].model_dump()
    t0 = time.perf_counter()
    _, _, _, _, info = env.step(call)
    cold = time.perf_counter() - t0
    assert info["feedback"].ok, info["feedback"]
    env.reset(seed=0)
    call["arguments"]["query"] = call["arguments"]["query"] + " today"
    t0 = time.perf_counter()
    env.step(call)
    warm = time.perf_counter() - t0
    return {"cold_s": cold, "warm_s": warm, "torch": "torch" in sys.modules}


def _st_embedder():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    from phoneenv.harness.memory import SentenceEmbedder
    from phoneenv.harness.minilm import packaged_model_path

    return SentenceEmbedder(SentenceTransformer(str(packaged_model_path()), device="cpu", local_files_only=True))


def child_eval(memory: str, stride: int) -> dict:
    """The reference agent over the suite (every ``stride``-th task), memory on or off."""
    from agents.reference import ReferenceAgent
    from phoneenv.evaluation import run_episodes
    from phoneenv.tasks import load_suite

    tasks = load_suite()[::stride]
    t0 = time.perf_counter()
    results = run_episodes(ReferenceAgent(), tasks, env_kwargs={"memory": memory == "on"})
    spent = time.perf_counter() - t0
    searches = sum(c.name == "memory.search" for t in tasks for c in t.reference_plan)
    return {
        "eval_s": spent,
        "tasks": len(tasks),
        "solved": sum(r.success for r in results),
        "searches": searches,
        "torch": "torch" in sys.modules,
    }


# -- in this process ---------------------------------------------------------------------------


def warm_queries(encoder, threads: int, n: int) -> list[float]:
    """Seconds per memory.search step whose query is new (entries already encoded), with
    ``encoder`` (a MiniLMEmbedder) capped at ``threads`` BLAS threads."""
    from phoneenv.env import PhonePlanEnv
    from phoneenv.harness.episode_memory import EpisodeMemory

    encoder.threads = threads
    env = PhonePlanEnv(memory=EpisodeMemory(embedder=encoder), tasks=_search_tasks())  # a fresh text cache
    seen: set[str] = set()
    times = []
    for task in _search_tasks():
        call = task.reference_plan[0].model_dump()
        if call["arguments"]["query"] in seen:
            continue
        seen.add(call["arguments"]["query"])
        env.reset(options={"task": task})
        env.step({"name": "memory.search", "arguments": {"query": f"warm-up {len(seen)}"}})  # encodes the entries
        t0 = time.perf_counter()
        _, _, _, _, info = env.step(call)
        times.append(time.perf_counter() - t0)
        assert info["feedback"].ok, info["feedback"]
        if len(times) == n:
            break
    env.close()
    return times


class Burners:
    """``n`` CPU-burning processes, for the length of a ``with`` block."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self) -> Burners:
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.n)]
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a subset (≤ 60 s)")
    ap.add_argument("--burners", type=int, default=1, help="CPU-burning processes beside the warm queries")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, *rest = args.child
        out = child_cold(rest[0]) if kind == "cold" else child_eval(rest[0], int(rest[1]))
        print(json.dumps(out))
        return

    from phoneenv.harness.minilm import MiniLMEmbedder, default_threads

    n_queries = 15 if args.quick else 150
    stride = 16 if args.quick else 1
    cores = os.cpu_count() or 1
    threads = default_threads()

    cold = _run_child("cold", "numpy")
    st = None if args.quick else _run_child("cold", "sentence-transformers")
    encoder = MiniLMEmbedder()
    with Burners(args.burners):
        busy = warm_queries(encoder, threads, n_queries)
        busy_all = warm_queries(encoder, cores, n_queries)
    idle = warm_queries(encoder, threads, n_queries)
    off = _run_child("eval", "off", str(stride))
    with tempfile.TemporaryDirectory(prefix="bench-vectors-") as vectors:
        on = _run_child("eval", "on", str(stride), vectors=vectors)  # an empty vector cache
        on_warm = _run_child("eval", "on", str(stride), vectors=vectors)  # what the first run cached

    med, p95 = statistics.median(busy) * 1e3, pct(busy, 0.95) * 1e3
    med_all = statistics.median(busy_all) * 1e3
    ratio = on["eval_s"] / off["eval_s"]
    ratio_warm = on_warm["eval_s"] / off["eval_s"]
    rows = [
        ("figure", "value", "target", "ratio", "baseline (same run)"),
        (
            "cold first memory.search (s)",
            f"{cold['cold_s']:.2f}",
            "lazy; no torch",
            f"torch imported: {cold['torch']}",
            f"warm step {cold['warm_s'] * 1e3:.1f} ms"
            + (
                ""
                if st is None
                else f"; sentence-transformers cold {st['cold_s']:.2f} s ({st['cold_s'] / cold['cold_s']:.0f}× slower)"
            ),
        ),
        (
            f"warm query, busy ({args.burners} burner), {threads} thread (ms)",
            f"median {med:.1f}, p95 {p95:.1f}",
            "≤ 25",
            f"{25 / med:.2f}× under target" if med <= 25 else f"{med / 25:.2f}× OVER target",
            f"{cores} BLAS threads: median {med_all:.1f}, p95 {pct(busy_all, 0.95) * 1e3:.1f} "
            f"({med_all / med:.1f}× slower); idle: median {statistics.median(idle) * 1e3:.1f}",
        ),
        (
            f"reference eval, {on['tasks']} tasks, {on['searches']} searches (s)",
            f"{on['eval_s']:.1f}",
            "≤ 1.5× no memory",
            f"{ratio:.2f}×",
            f"memory=False {off['eval_s']:.1f} s (solved {off['solved']}/{off['tasks']} vs {on['solved']}); "
            f"torch imported: {on['torch']}; an empty vector cache",
        ),
        (
            "the same eval again, a new process (s)",
            f"{on_warm['eval_s']:.1f}",
            "≤ 1.5× no memory",
            f"{ratio_warm:.2f}×",
            f"memory=False {off['eval_s']:.1f} s; the vectors the first run cached on disk",
        ),
    ]
    width = [max(len(r[i]) for r in rows) for i in range(5)]
    print(f"memory retrieval: {n_queries} warm queries per setting, eval every {stride} task(s); {cores} cores")
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)))


if __name__ == "__main__":
    main()
