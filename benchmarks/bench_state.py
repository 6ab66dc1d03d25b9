"""State at scale: reset, verification and search on a phone with 1k, 10k and 100k records,
each against a baseline measured in the same run.

Run: ``make bench`` (or ``.venv/bin/python benchmarks/bench_state.py [--quick]``).

The phone: task ``messages.text_contact/0`` padded with N filler contacts and N filler messages
(:func:`phoneenv.tasks.world.pad_fixtures`, the documented way to seed a big phone).

- reset: median ``env.reset`` to the padded task (fixture snapshot built and cached). Baseline:
  what a reset copied before tables were copy-on-write (every table of the fixture snapshot
  copied for the restore, and again for verification's before-state).
- first write: median ``env.step`` of the episode's first ``messages.send`` after a reset (the
  table copied on its first write, the thread found in the table's line index). Baseline: the
  same step on the bare task, so the ratio is what the phone's size costs.
- finish: median ``env.step`` of ``finish`` after one ``messages.send`` (verification: the
  diff, the criteria, the verdict). Baseline: the record-by-record diff of every table that
  finish ran before (``diff_tables`` over plain copies), the diff alone. The task's criteria
  are state criteria (a message to a person).
- finish (people): the same on task ``messages.last_texter/0`` padded alike, whose answer names
  a person (``"Karen Morrison texted last"``: the answer's people are found through the contact
  indexes). Baseline: reading the people of that answer as verification did before, by scanning
  the address book (``answers.claims`` over a plain list of the contacts), that step alone; run
  once at 100k (it takes seconds there).
- reset, finish (hybrid): the same two on the hybrid backend (sandbox plus simulated apps, as
  ``--backend hybrid`` runs), same baselines.
- reset across the suite: ``env.reset`` to each sandbox task of the suite in turn (what an eval
  or an RL run does), on a first visit (the task's world built, its skills scoped, its fixtures
  scanned for secrets) and a second (baseline: what is left when the task was seen before);
  beside them a reset to the first task again and again.
- messages.search: median ``messages.search`` for "dinner" (every filler message is a match
  candidate; its total counts them all). Baseline: ``contacts.search`` for "ana" on the same
  phone.

Targets (issue #15): at 100,000 records, reset and finish ≤ 2 ms (on either backend), messages.search ≤ 10×
contacts.search. Nothing here is asserted: the table prints value, target and ratio.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import statistics
import time
from collections.abc import Callable

from phoneenv.backends import sandbox
from phoneenv.env import PhonePlanEnv
from phoneenv.state import diff_tables
from phoneenv.tasks import get_task, load_suite
from phoneenv.tasks.answers import claims
from phoneenv.tasks.identity import CONTACTS_TABLE
from phoneenv.tasks.predicates import Context
from phoneenv.tasks.world import pad_fixtures

TASK = "messages.text_contact/0"
PEOPLE_TASK = "messages.last_texter/0"
SEND = '{"name": "messages.send", "arguments": {"to": "+4915112345678", "body": "hi"}}'
FINISH = '{"name": "finish", "arguments": {"answer": "done"}}'


def median_ms(fn: Callable[[], object], n: int, setup: Callable[[], object] | None = None) -> float:
    """Median milliseconds of ``fn()`` over ``n`` runs, ``setup()`` (untimed) before each."""
    xs = []
    for _ in range(n):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - t0)
    return statistics.median(xs) * 1e3


def padded(task_id: str, n_records: int):
    """Task ``task_id`` with ``n_records`` filler contacts and as many filler messages."""
    base = get_task(task_id)
    counts = {"contacts.contacts": n_records, "messages.messages": n_records}
    return base.model_copy(update={"fixtures": pad_fixtures(base.fixtures, counts)})


def measure_people(n_records: int, reps: int) -> tuple[str, float, str, float, str]:
    """The row of a ``finish`` whose answer names a person (see the module docstring)."""
    base = get_task(PEOPLE_TASK)
    want = next(c.value for c in base.criteria if c.kind == "answer")
    who = next(c for c in base.fixtures.records[CONTACTS_TABLE] if c["id"] == want)
    dictated = re.search(r'"([^"]+)"', base.goal)[1]  # the reply the goal dictates
    send = json.dumps({"name": "messages.send", "arguments": {"to": who["phone"], "body": dictated}})
    answer = f"{who['name']} texted last; I replied."
    finish = json.dumps({"name": "finish", "arguments": {"answer": answer}})
    task = padded(PEOPLE_TASK, n_records)
    env = PhonePlanEnv(task=task, memory=False, max_steps=10**9)
    opts = {"task": task}
    env.reset(seed=0, options=opts)  # builds and caches the fixture snapshot
    gc.collect()
    gc.freeze()

    def after_send() -> None:
        env.reset(seed=0, options=opts)
        env.step(send)

    outcome: list[float] = []
    value = median_ms(lambda: outcome.append(env.step(finish)[1]), reps, after_send)
    assert outcome and all(r == 1.0 for r in outcome), f"the answer should pass: {outcome}"
    contacts = tuple(env.unwrapped.backend.tables()[CONTACTS_TABLE].values())
    found = claims(answer, "contact", Context(contacts=contacts))
    assert [set(c.value) for c in found] == [{who["id"]}], found
    base_ms = median_ms(lambda: claims(answer, "contact", Context(contacts=contacts)), 1 if n_records > 10_000 else 3)
    env.close()
    return ("finish (people)", value, "≤ 2 ms at 100k", base_ms, "scan the contacts")


def measure(n_records: int, reps: int) -> list[tuple[str, float, str, float, str]]:
    """Rows (figure, value ms, target, baseline ms, baseline name) for a phone of ``n_records``."""
    task = padded(TASK, n_records)
    env = PhonePlanEnv(task=task, memory=False, max_steps=10**9)
    opts = {"task": task}
    env.reset(seed=0, options=opts)  # builds and caches the fixture snapshot
    snap = sandbox._fixture_cache[id(task.fixtures)][1]
    gc.collect()
    gc.freeze()  # the padded fixtures are not garbage: keep full collections off the clock

    def old_reset() -> None:
        restored = {k: v.copy() for k, v in snap.tables.items()}
        _ = {k: dict(v) for k, v in restored.items()}

    reset = median_ms(lambda: env.reset(seed=0, options=opts), reps)
    reset_base = median_ms(old_reset, reps)

    def after_send() -> None:
        env.reset(seed=0, options=opts)
        env.step(SEND)

    # the first write of an episode (a send into a thread), against the same on the bare task
    first_write = median_ms(lambda: env.step(SEND), reps, lambda: env.reset(seed=0, options=opts))
    bare = PhonePlanEnv(task=get_task(TASK), memory=False, max_steps=10**9)
    bare.reset(seed=0)
    first_write_base = median_ms(lambda: bare.step(SEND), reps, lambda: bare.reset(seed=0))
    bare.close()
    finish = median_ms(lambda: env.step(FINISH), reps, after_send)
    after_send()
    end = env.unwrapped.backend.tables()
    plain_before = {k: dict(v) for k, v in snap.tables.items()}
    finish_base = median_ms(lambda: diff_tables(plain_before, end), reps)

    hybrid = PhonePlanEnv(task=task, memory=False, max_steps=10**9, backend="hybrid")
    hybrid.reset(seed=0, options=opts)
    h_reset = median_ms(lambda: hybrid.reset(seed=0, options=opts), reps)

    def hybrid_after_send() -> None:
        hybrid.reset(seed=0, options=opts)
        hybrid.step(SEND)

    h_finish = median_ms(lambda: hybrid.step(FINISH), reps, hybrid_after_send)
    hybrid.close()

    env.reset(seed=0, options=opts)
    search = '{"name": "messages.search", "arguments": {"query": "dinner"}}'
    contacts = '{"name": "contacts.search", "arguments": {"query": "ana"}}'
    env.step(search)  # the first search on a fixture builds its index
    ms = median_ms(lambda: env.step(search), reps)
    cs = median_ms(lambda: env.step(contacts), reps)
    env.close()
    return [
        ("reset", reset, "≤ 2 ms at 100k", reset_base, "copy every table"),
        ("first write", first_write, "≤ 5 ms at 100k", first_write_base, "the same on the bare task"),
        ("finish", finish, "≤ 2 ms at 100k", finish_base, "diff every record"),
        ("reset (hybrid)", h_reset, "≤ 2 ms at 100k", reset_base, "copy every table"),
        ("finish (hybrid)", h_finish, "≤ 2 ms at 100k", finish_base, "diff every record"),
        measure_people(n_records, reps),
        ("messages.search", ms, "≤ 10× baseline", cs, "contacts.search"),
    ]


def suite_resets(limit: int | None) -> list[tuple[str, float, float]]:
    """(figure, median ms, mean ms) of ``env.reset`` to each sandbox task of the suite in turn,
    first when every task is new to the process, then a second pass (the baseline), and a reset
    to the first task again and again (what the padded rows above time)."""
    tasks = [t for t in load_suite() if "sandbox" in t.backends][:limit]
    env = PhonePlanEnv()
    env.reset(seed=0, options={"task": tasks[0]})
    same = [median_ms(lambda: env.reset(seed=0, options={"task": tasks[0]}), 1) for _ in range(len(tasks))]
    rows = [("the same task again", statistics.median(same), statistics.fmean(same))]
    for name in ("each task, first visit", "each task, second visit"):
        xs = [median_ms(lambda t=t: env.reset(seed=0, options={"task": t}), 1) for t in tasks]
        rows.append((name, statistics.median(xs), statistics.fmean(xs)))
    env.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, 100k left out (smoke run)")
    args = ap.parse_args()
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    reps = 5 if args.quick else 21
    print(
        f"{'records':>8}  {'figure':<16} {'value ms':>10}  {'target':<16} {'baseline ms':>11}  {'ratio':>7}  baseline"
    )
    for n in sizes:
        for fig, value, target, base, name in measure(n, reps):
            print(f"{n:>8}  {fig:<16} {value:>10.3f}  {target:<16} {base:>11.3f}  {value / base:>7.3f}  {name}")
    rows = suite_resets(300 if args.quick else None)
    print(f"\nreset across the suite's sandbox tasks ({'300' if args.quick else 'all'}, in suite order):")
    for fig, med, mean in rows:
        print(f"  {fig:<26} median {med:.3f} ms  mean {mean:.3f} ms  ({mean / rows[2][2]:.1f}x a second visit, mean)")


if __name__ == "__main__":
    main()
