"""Vector envs and the step path, each figure against a baseline measured in the same run.

Run: ``make bench`` (or ``.venv/bin/python benchmarks/bench_vector.py [--quick]``).

- one env: ``env.step`` of a read call through ``gym.make``, one process: the baseline of the
  vector rows.
- SyncVectorEnv(N): env-steps/s per env against one env (``copy=True``, Gymnasium's default,
  deep-copies the batched observations every step; ``copy=False`` hands out its own buffers).
- AsyncVectorEnv(2): env-steps/s of two worker processes (``shared_memory=False``: text cannot
  live in shared memory) against one env in one process.
- unknown tool: a step calling a misspelt tool (a fresh typo of a real tool each step, so
  nothing is answered from a cache) against a step calling a known tool that fails
  (``not_found``).
- bytes a step pickles: what an AsyncVectorEnv worker sends per step. Baseline: the same step
  with ``info["tools"]`` added (every step carried it before tools travelled once per reset).
- memory: Python allocations (tracemalloc) per live env, 64 envs each reset to a different task.
  Baseline: the same plus what each env built for itself before spaces and tool lists were
  shared (its five ``Text`` spaces and its OpenAI rendering of the tool specs, measured here).
- make_vec(N, W): ``gym.make_vec("PhonePlan-v0", num_envs=N, vectorization_mode="vector_entry_point",
  workers=W)`` (:class:`phoneenv.vector.PhonePlanVectorEnv`: one message per worker and step):
  env-steps/s against one env in one process; W=2 on 2 cores (target ≥ 1.6×), W=0 in process
  (target ≥ 0.9×). The process's objects are frozen (:func:`phoneenv.freeze_gc`) after each
  vector env is made, as its docs advise.
- Gymnasium alone: the same vector envs over an env that does nothing (same spaces, observation
  and info keys): what the vector machinery itself costs per env-step, the floor under the rows.
- gc: the share of a step loop's CPU spent in full garbage collections (episodes of 20 steps,
  every trace kept, as an eval keeps them), before and after :func:`phoneenv.freeze_gc` (called
  once after set-up; the rest of this script runs frozen).

Targets (issue #15): Async(2) and make_vec(64, workers=2) ≥ 1.6× one env; make_vec(64, workers=0) ≥ 0.9×; Sync(N) ≥ 0.9× one env per env; unknown-tool step
≤ 2× a known-tool error step; ≤ 64 KiB per live env.
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import random
import string
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import gymnasium as gym

import phoneenv
from phoneenv.env import CHARSET, MAX_TEXT, PhonePlanEnv, TextSpace
from phoneenv.tasks import load_suite

ACTION = '{"name": "contacts.get", "arguments": {"contact_id": "c_1"}}'
KNOWN_ERROR = '{"name": "contacts.get", "arguments": {"contact_id": "c_nobody"}}'
TASK = "contacts.favorite/0"


def rate(step: Callable[[], Any], calls: int, repeats: int, between: Callable[[], Any], per_call: int = 1) -> float:
    """Best of ``repeats`` runs: ``per_call × calls / seconds`` of ``calls`` calls of ``step``, in
    chunks of at most 500 calls with ``between()`` (untimed: a reset, so no trace grows long)."""
    best = 0.0
    for _ in range(repeats):
        spent, done = 0.0, 0
        while done < calls:
            chunk = min(500, calls - done)
            between()
            t0 = time.perf_counter()
            for _ in range(chunk):
                step()
            spent += time.perf_counter() - t0
            done += chunk
        best = max(best, per_call * calls / spent)
    return best


def make_env(**kwargs: Any) -> Any:
    return gym.make("PhonePlan-v0", task=TASK, max_steps=10**9, **kwargs)


def vector_rate(vec: Any, n: int, calls: int, repeats: int) -> float:
    actions = (ACTION,) * n
    try:
        return rate(lambda: vec.step(actions), calls, repeats, lambda: vec.reset(seed=0), per_call=n)
    finally:
        vec.close()


class Idle(gym.Env):
    """An env that does nothing, with PhonePlan-v0's spaces and a step's observation and info
    keys: the vector envs over it measure Gymnasium's own cost per env-step."""

    def __init__(self) -> None:
        probe = PhonePlanEnv(task=TASK)
        self.observation_space, self.action_space = probe.observation_space, probe.action_space
        self._obs, _ = probe.reset(seed=0)
        self._step = probe.step(ACTION)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        return self._obs, {}

    def step(self, action: Any) -> tuple[Any, ...]:
        obs, reward, term, trunc, info = self._step
        return obs, reward, term, trunc, dict(info)


def typos(names: list[str], count: int, seed: int = 0) -> list[str]:
    """``count`` misspellings of ``names`` (one edit each), distinct so no cache answers them."""
    rng = random.Random(seed)
    out: set[str] = set()
    while len(out) < count:
        name = rng.choice(names)
        i = rng.randrange(len(name))
        c = rng.choice(string.ascii_lowercase)
        typo = rng.choice([name[:i] + name[i + 1 :], name[:i] + c + name[i:], name[:i] + c + name[i + 1 :]])
        if typo not in names:
            out.add(typo)
    return sorted(out)


def step_bytes(env: Any) -> tuple[int, int]:
    """(bytes an AsyncVectorEnv worker pickles for one step, the same with ``info["tools"]``)."""
    env.reset(seed=0)
    obs, reward, term, trunc, info = env.step(ACTION)
    now = len(pickle.dumps(((obs, reward, term, trunc, info), True)))
    tools = env.unwrapped.tools
    before = len(pickle.dumps(((obs, reward, term, trunc, {**info, "tools": tools}), True)))
    return now, before


def per_env_kib(suite: list[Any], n: int) -> tuple[float, float]:
    """(KiB of Python allocations per live env, KiB each env built for itself before sharing)."""
    warm = PhonePlanEnv(tasks=suite)
    warm.reset(seed=0, options={"task": suite[0]})
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    envs = []
    for i in range(n):
        e = PhonePlanEnv(tasks=suite)
        e.reset(seed=i, options={"task": suite[(i * 7) % len(suite)]})
        e.step(ACTION)
        envs.append(e)
    gc.collect()
    live = (tracemalloc.get_traced_memory()[0] - start) / n
    start = tracemalloc.get_traced_memory()[0]
    copies = []
    for _ in range(8):  # what each env built before: five Text spaces and its own rendering
        spaces = [TextSpace(max_length=MAX_TEXT, charset=CHARSET) for _ in range(5)]
        copies.append((spaces, [s.to_openai() for s in warm.tool_specs]))
    unshared = (tracemalloc.get_traced_memory()[0] - start) / 8
    tracemalloc.stop()
    del envs, copies
    return live / 1024, (live + unshared) / 1024


def gc_share(env: Any, steps: int) -> tuple[float, float]:
    """(CPU seconds of a step loop, CPU seconds in full collections): ``steps`` read steps in
    episodes of 20, each finished episode's trace kept (as an eval or a rollout keeps them)."""
    spent = [0.0]
    started = [0.0]

    def watch(phase: str, info: dict[str, Any]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                started[0] = time.process_time()
            else:
                spent[0] += time.process_time() - started[0]

    kept = []
    gc.callbacks.append(watch)
    try:
        t0 = time.process_time()
        for i in range(steps):
            if i % 20 == 0:
                if i:
                    kept.append(env.unwrapped.trace)
                env.reset(seed=i)
            env.step(ACTION)
        return time.process_time() - t0, spent[0]
    finally:
        gc.callbacks.remove(watch)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations (smoke run, under a minute)")
    args = ap.parse_args()
    calls = 2_000 if args.quick else 20_000
    repeats = 2 if args.quick else 5
    n_sync = 4
    suite = [t for t in load_suite() if "sandbox" in t.backends]
    env = make_env()
    gc_loop, gc_full = gc_share(env, 10 * calls)
    frozen = phoneenv.freeze_gc()  # the suite, the specs, the env: what a full collection re-scans
    gc_loop_frozen, gc_full_frozen = gc_share(env, 10 * calls)

    one = rate(lambda: env.step(ACTION), calls, repeats, lambda: env.reset(seed=0))
    sync_copy = vector_rate(gym.vector.SyncVectorEnv([make_env] * n_sync), n_sync, calls // n_sync, repeats)
    sync_nocopy = vector_rate(
        gym.vector.SyncVectorEnv([make_env] * n_sync, copy=False), n_sync, calls // n_sync, repeats
    )
    async2 = vector_rate(gym.vector.AsyncVectorEnv([make_env] * 2, shared_memory=False), 2, calls // 2, repeats)
    n_vec = 64
    ours = {}
    for w in (2, 0):
        vec = gym.make_vec(
            "PhonePlan-v0",
            num_envs=n_vec,
            vectorization_mode="vector_entry_point",
            workers=w,
            task=TASK,
            max_steps=10**9,
        )
        phoneenv.freeze_gc()
        ours[w] = vector_rate(vec, n_vec, max(calls // n_vec, 200), repeats)
    # Gymnasium's own cost per env-step: the same vector envs over an env that does nothing.
    sync_idle = vector_rate(gym.vector.SyncVectorEnv([Idle] * n_sync), n_sync, calls // n_sync, repeats)
    async_idle = vector_rate(gym.vector.AsyncVectorEnv([Idle] * 2, shared_memory=False), 2, calls // 2, repeats)

    raw = PhonePlanEnv(task=TASK, max_steps=10**9)
    names = [s.name for s in raw.tool_specs]
    wrong = [json.dumps({"name": t, "arguments": {}}) for t in typos(names, calls)]
    it = iter(wrong * (2 * repeats + 1))
    unknown = known = 0.0
    for _ in range(2 * repeats):  # interleaved, so a busy spell does not favour one of them
        unknown = max(unknown, rate(lambda: raw.step(next(it)), calls, 1, lambda: raw.reset(seed=0)))
        known = max(known, rate(lambda: raw.step(KNOWN_ERROR), calls, 1, lambda: raw.reset(seed=0)))
    sent, sent_before = step_bytes(env)
    kib, kib_before = per_env_kib(suite, 16 if args.quick else 64)

    rows = [
        ("figure", "value", "target", "ratio", "baseline (same run)"),
        ("one env, gym.make (steps/s)", f"{one:,.0f}", "-", "1.00×", "the vector rows' baseline"),
        (
            f"SyncVectorEnv({n_sync}), copy=True (env-steps/s)",
            f"{sync_copy:,.0f}",
            "≥ 0.9× one env",
            f"{sync_copy / one:.2f}×",
            f"one env {one:,.0f}/s; Gymnasium alone {1e6 / sync_idle:.1f} µs/env-step",
        ),
        (
            f"SyncVectorEnv({n_sync}), copy=False (env-steps/s)",
            f"{sync_nocopy:,.0f}",
            "≥ 0.9× one env",
            f"{sync_nocopy / one:.2f}×",
            f"one env {one:,.0f}/s",
        ),
        (
            "AsyncVectorEnv(2) (env-steps/s)",
            f"{async2:,.0f}",
            "≥ 1.6× one env",
            f"{async2 / one:.2f}×",
            f"one env {one:,.0f}/s; Gymnasium alone {1e6 / async_idle:.1f} µs/env-step",
        ),
        (
            f"make_vec({n_vec}, workers=2) (env-steps/s)",
            f"{ours[2]:,.0f}",
            "≥ 1.6× one env",
            f"{ours[2] / one:.2f}×",
            f"one env {one:,.0f}/s; phoneenv's vector_entry_point",
        ),
        (
            f"make_vec({n_vec}, workers=0) (env-steps/s)",
            f"{ours[0]:,.0f}",
            "≥ 0.9× one env",
            f"{ours[0] / one:.2f}×",
            f"one env {one:,.0f}/s; in process",
        ),
        (
            "unknown-tool step (µs)",
            f"{1e6 / unknown:.1f}",
            "≤ 2× known-tool error",
            f"{known / unknown:.2f}×",
            f"known-tool error step {1e6 / known:.1f} µs",
        ),
        (
            "bytes pickled per step",
            f"{sent:,}",
            "tools once per reset",
            f"{sent / sent_before:.3f}×",
            f"with info['tools'] {sent_before:,}",
        ),
        (
            "KiB per live env",
            f"{kib:.1f}",
            "≤ 64",
            f"{kib / kib_before:.2f}×",
            f"with per-env spaces and specs {kib_before:.1f}",
        ),
        (
            "full gc share of a step loop (%)",
            f"{100 * gc_full_frozen / gc_loop_frozen:.1f}",
            "after freeze_gc()",
            f"{frozen:,} objects frozen",
            f"before freeze {100 * gc_full / gc_loop:.1f}%",
        ),
    ]
    width = [max(len(r[i]) for r in rows) for i in range(5)]
    print(f"suite: {len(suite)} tasks; {calls:,} env-steps per run, best of {repeats}")
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)).rstrip())


if __name__ == "__main__":
    main()
