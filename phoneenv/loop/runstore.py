"""The run store: every rollout of eval and RL, failures and infrastructure errors included.

One SQLite file (``<loop>/runs.sqlite``, see :mod:`phoneenv.loop`), one row per episode, with the
episode's verdict figures, the task's tags and version, and the whole trace as JSON. ``phoneenv
eval`` adds every finished episode of a run (``--store``, the default), ``train rl`` every rollout
episode with its optimiser step, and :meth:`RunStore.ingest_run` reads an earlier eval run folder.
:meth:`RunStore.to_dataset` gives the rows as a Hugging Face ``datasets.Dataset``.

Row columns (:data:`COLUMNS`): ``id``, ``run`` (the run folder or name as given), ``origin``
(``eval`` or ``rl``), ``mode`` (``train`` or ``eval`` for RL rollouts, None for eval runs),
``step`` (the optimiser step of an RL rollout), ``task_id``, ``task_version`` (the first 16 hex of
SHA-256 of the task's canonical JSON: the same id with other criteria or fixtures is another
version), ``template``, ``source``, ``category``, ``domain``, ``capabilities`` (list), ``seed``,
``backend``, ``agent``, ``model`` (the planner's model record), ``harness`` (the harness version's
name or None), ``success``, ``progress``, ``infrastructure_error``, ``output_tokens``,
``tool_calls``, ``error_kinds`` (the distinct error kinds of the steps' feedback, sorted),
``failed_criteria`` (the failed criteria's descriptions, or ids where a criterion has none),
``created_at`` (ISO 8601 UTC) and ``trace`` (the whole trace as JSON).

In SQLite and in :meth:`RunStore.to_dataset` the list and record columns are JSON text; in
:meth:`RunStore.rows` they are decoded (lists, dicts) and ``trace`` stays JSON text
(:meth:`RunStore.traces` gives :class:`~phoneenv.contract.Trace` objects).

Secrets are not in traces to begin with (the env records them as ``***``), and task fixtures'
vault values are hashed as their masked form.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from phoneenv.contract import TaskSpec, Trace
from phoneenv.loop._db import transaction
from phoneenv.loop.review import canonical_json

__all__ = [
    "COLUMNS",
    "JSON_COLUMNS",
    "EvalRecorder",
    "RunStore",
    "episode_record",
    "suite_version",
    "task_version",
    "trace_key",
]

COLUMNS: dict[str, tuple[str, str]] = {
    "id": ("int64", "the row's id (insertion order)"),
    "run": ("string", "the run: an eval output folder or an RL output folder, as given"),
    "origin": ("string", "eval or rl"),
    "mode": ("string", "train or eval for an RL rollout; null for an eval run"),
    "step": ("int64", "the optimiser step of an RL rollout; null for an eval run"),
    "task_id": ("string", "the task's id"),
    "task_version": ("string", "first 16 hex of SHA-256 of the task's canonical JSON (null: task unknown)"),
    "template": ("string", "the template the task came from"),
    "source": ("string", "the task's source: template, generated, ..."),
    "category": ("string", "tool, memory, skills or subagent"),
    "domain": ("string", "the task's domain"),
    "capabilities": ("string", "JSON list: the task's capability tags"),
    "seed": ("int64", "the episode seed"),
    "backend": ("string", "the world the episode ran on"),
    "agent": ("string", "the planner's name"),
    "model": ("string", "JSON: the planner's model record (null for no model)"),
    "harness": ("string", "the harness version (null: none named)"),
    "success": ("bool", "the verdict's success (false without a verdict)"),
    "progress": ("float64", "the verdict's progress in [0, 1]"),
    "infrastructure_error": ("bool", "the episode was lost to the world, not the agent"),
    "output_tokens": ("int64", "the agent's output tokens (null when it reported none)"),
    "tool_calls": ("int64", "steps that called a tool"),
    "error_kinds": ("string", "JSON list: the distinct error kinds of the steps' feedback, sorted"),
    "failed_criteria": ("string", "JSON list: the failed criteria's descriptions (ids where none)"),
    "created_at": ("string", "when the row was stored (ISO 8601, UTC)"),
    "trace": ("string", "JSON: the whole trace (Trace.model_validate_json reads it back)"),
}
"""Every column, with its Arrow type in :meth:`RunStore.to_dataset` and its meaning."""

JSON_COLUMNS = ("capabilities", "model", "error_kinds", "failed_criteria")
"""The columns stored as JSON text that :meth:`RunStore.rows` decodes."""

_BOOL_COLUMNS = ("success", "infrastructure_error")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS episodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run TEXT NOT NULL,
    origin TEXT NOT NULL,
    mode TEXT,
    step INTEGER,
    task_id TEXT NOT NULL,
    task_version TEXT,
    template TEXT,
    source TEXT,
    category TEXT,
    domain TEXT,
    capabilities TEXT NOT NULL DEFAULT '[]',
    seed INTEGER,
    backend TEXT,
    agent TEXT,
    model TEXT,
    harness TEXT,
    success INTEGER NOT NULL,
    progress REAL NOT NULL,
    infrastructure_error INTEGER NOT NULL,
    output_tokens INTEGER,
    tool_calls INTEGER NOT NULL,
    error_kinds TEXT NOT NULL DEFAULT '[]',
    failed_criteria TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    trace TEXT NOT NULL,
    key TEXT UNIQUE
);
CREATE INDEX IF NOT EXISTS episodes_run ON episodes (run, origin);
CREATE INDEX IF NOT EXISTS episodes_task ON episodes (task_id, success);
"""


def task_version(task: TaskSpec) -> str:
    """The first 16 hex digits of SHA-256 of ``task``'s canonical JSON (``model_dump(mode="json")``
    with sorted keys): two tasks of one id differ in version when anything of them differs."""
    return hashlib.sha256(canonical_json(task.model_dump(mode="json")).encode()).hexdigest()[:16]


def suite_version(tasks: Iterable[TaskSpec]) -> str:
    """The version of a task set: the first 16 hex digits of SHA-256 over its sorted lines
    ``"<id> <task_version>"`` (:func:`task_version`), so it changes when a task is added, removed
    or changed, and not with the order the tasks ran in."""
    lines = sorted(f"{t.id} {task_version(t)}" for t in tasks)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def _task_of(task_id: str) -> TaskSpec | None:
    from phoneenv.tasks import get_task

    try:
        return get_task(task_id)
    except KeyError:
        return None


def episode_record(trace: Trace, task: TaskSpec | None = None) -> dict[str, Any]:
    """The columns of ``trace`` that come from the episode and its task (no ``id``, ``run``,
    ``origin``, ``mode``, ``step``, ``harness`` or ``created_at``), JSON columns decoded.

    ``task`` (its TaskSpec, found by id in the suite when None; the task columns stay null for an
    unknown id) gives the version, tags and the failed criteria's descriptions.
    """
    if task is None:
        task = _task_of(trace.task_id)
    v = trace.verdict
    failed: list[str] = []
    if v is not None:
        described = {}
        if task is not None:  # the verdict's criteria are the task's, in order (ids made unique)
            described = {
                k: (c.description or r.id) for k, (c, r) in enumerate(zip(task.criteria, v.criteria, strict=False))
            }
        failed = [described.get(k, r.id) for k, r in enumerate(v.criteria) if not r.passed]
    kinds = sorted({s.feedback.error.value for s in trace.steps if s.feedback.error is not None})
    return {
        "task_id": trace.task_id,
        "task_version": task_version(task) if task is not None else None,
        "template": task.template if task is not None else None,
        "source": task.source if task is not None else None,
        "category": trace.category.value,
        "domain": trace.domain.value,
        "capabilities": list(task.capabilities) if task is not None else [],
        "seed": trace.seed,
        "backend": trace.backend,
        "agent": trace.agent,
        "model": trace.model_dump(mode="json")["model"],
        "success": bool(v and v.success),
        "progress": float(v.progress) if v is not None else 0.0,
        "infrastructure_error": bool(v and v.infrastructure_error),
        "output_tokens": v.output_tokens if v is not None else None,
        "tool_calls": v.tool_calls if v is not None else sum(s.action is not None for s in trace.steps),
        "error_kinds": kinds,
        "failed_criteria": failed,
    }


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


class RunStore:
    """The run store kept in the SQLite file ``path`` (created, with its folder, on first use).

    Safe with several threads and processes (connections are kept per thread, see
    :mod:`phoneenv.loop._db`); the object itself holds none and can be passed around.

    Raises (every method):
        sqlite3.DatabaseError: ``path`` is not a SQLite file, or stayed locked past the timeout.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunStore({str(self.path)!r})"

    def _connect(self, *, write: bool = False) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return transaction(self.path, _SCHEMA, write=write)

    # -- writing ---------------------------------------------------------------------------------

    def add(
        self,
        trace: Trace,
        *,
        run: str,
        origin: str,
        task: TaskSpec | None = None,
        harness: str | None = None,
        step: int | None = None,
        mode: str | None = None,
        key: str | None = None,
    ) -> int:
        """Store one episode and return its row id.

        Args:
            trace: the episode (any outcome: failures and infrastructure errors are kept).
            run: the run it belongs to (an output folder or a name).
            origin: ``eval`` or ``rl``.
            task: its TaskSpec (looked up in the suite by id when None).
            harness: the harness version; None takes ``trace.harness`` when the trace has one.
            step: the RL optimiser step.
            mode: ``train`` or ``eval`` for an RL rollout.
            key: makes the add idempotent: a row of the same key is replaced by this one (and
                keeps its id). :meth:`ingest_run` keys rows by trace file, so a run stored while it
                ran and ingested later is stored once.

        Raises:
            ValueError: an empty run or an origin other than ``eval`` or ``rl``.
        """
        if origin not in ("eval", "rl"):
            raise ValueError(f"origin must be 'eval' or 'rl', not {origin!r}")
        if not run:
            raise ValueError("a stored episode needs its run")
        return self.add_many([(trace, task, key)], run=run, origin=origin, harness=harness, step=step, mode=mode)[0]

    def add_many(
        self,
        episodes: list[tuple[Trace, TaskSpec | None, str | None]],
        *,
        run: str,
        origin: str,
        harness: str | None = None,
        step: int | None = None,
        mode: str | None = None,
    ) -> list[int]:
        """Store several episodes (``(trace, task, key)`` each, see :meth:`add`) in one
        transaction; returns their row ids in order."""
        if origin not in ("eval", "rl"):
            raise ValueError(f"origin must be 'eval' or 'rl', not {origin!r}")
        rows = []
        for trace, task, key in episodes:
            rec = episode_record(trace, task)
            rec.update(
                run=str(run),
                origin=origin,
                mode=mode,
                step=step,
                harness=harness if harness is not None else getattr(trace, "harness", None),
                created_at=_now(),
                trace=trace.model_dump_json(),
                key=key,
            )
            for name in JSON_COLUMNS:
                rec[name] = json.dumps(rec[name], ensure_ascii=False) if rec[name] is not None else None
            rows.append(rec)
        if not rows:
            return []
        names = list(rows[0])
        updates = ", ".join(f"{n} = excluded.{n}" for n in names if n != "key")
        sql = (
            f"INSERT INTO episodes ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
            f" ON CONFLICT (key) DO UPDATE SET {updates} RETURNING id"
        )
        with self._connect(write=True) as con:
            return [int(con.execute(sql, [r[n] for n in names]).fetchone()[0]) for r in rows]

    def ingest_run(self, run_dir: str | Path, *, origin: str = "eval") -> int:
        """Store every trace of an eval run folder (``traces/**/*.jsonl``; see
        :func:`phoneenv.tracefiles.find_trace_files`), the run named as ``str(run_dir)`` and the
        harness read from its ``run.json`` when the traces name none. Idempotent: each trace is
        keyed by its file and line, so ingesting again (or a run stored while it ran) adds
        nothing. Returns how many traces were read.

        Raises:
            FileNotFoundError: ``run_dir`` does not exist.
            ValueError: a line of a trace file is not a trace (the message names the file and line).
        """
        from phoneenv.tracefiles import find_trace_files

        run_dir = Path(run_dir)
        harness = _run_harness(run_dir)
        episodes = []
        for path in find_trace_files(run_dir):
            with path.open(encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        trace = Trace.model_validate_json(line)
                    except ValueError as exc:
                        raise ValueError(f"{path}, line {n}: not a trace ({exc})") from None
                    episodes.append((trace, None, trace_key(path, n)))
        for k in range(0, len(episodes), 200):
            self.add_many(episodes[k : k + 200], run=str(run_dir), origin=origin, harness=harness)
        return len(episodes)

    # -- reading ---------------------------------------------------------------------------------

    def _select(self, columns: str, filters: dict[str, Any]) -> tuple[str, list[Any]]:
        allowed = {"run", "origin", "success", "task_id", "harness", "mode", "step", "backend", "source"}
        unknown = set(filters) - allowed
        if unknown:
            raise TypeError(
                f"unknown run-store filter {', '.join(sorted(unknown))}; one of {', '.join(sorted(allowed))}"
            )
        where, args = [], []
        for name, value in filters.items():
            if value is None:
                continue
            where.append(f"{name} = ?")
            args.append(int(bool(value)) if name == "success" else (str(value) if name == "run" else value))
        sql = f"SELECT {columns} FROM episodes" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY id"
        return sql, args

    def rows(
        self,
        *,
        run: str | None = None,
        origin: str | None = None,
        success: bool | None = None,
        **more: Any,
    ) -> list[dict[str, Any]]:
        """The stored episodes, oldest first, as dicts of :data:`COLUMNS` (JSON columns decoded,
        ``success`` and ``infrastructure_error`` as bools, ``trace`` as JSON text). Filters left
        None match everything; ``more`` takes ``task_id``, ``harness``, ``mode``, ``step``,
        ``backend`` and ``source`` filters too.

        Raises:
            TypeError: an unknown filter.
        """
        sql, args = self._select(", ".join(COLUMNS), {"run": run, "origin": origin, "success": success, **more})
        if not self.path.exists():
            return []
        with self._connect() as con:
            out = []
            for r in con.execute(sql, args):
                row = dict(r)
                for name in JSON_COLUMNS:
                    row[name] = json.loads(row[name]) if row[name] is not None else None
                for name in _BOOL_COLUMNS:
                    row[name] = bool(row[name])
                out.append(row)
            return out

    def traces(self, **filters: Any) -> Iterator[Trace]:
        """The stored traces, oldest first, filtered as :meth:`rows`."""
        sql, args = self._select("trace", filters)
        if not self.path.exists():
            return
        with self._connect() as con:
            texts = [r[0] for r in con.execute(sql, args)]
        for text in texts:
            yield Trace.model_validate_json(text)

    def to_dataset(self, **filters: Any) -> Any:
        """The rows (filtered as :meth:`rows`) as a ``datasets.Dataset`` with the types of
        :data:`COLUMNS` (list and record columns as JSON text). Needs the ``data`` extra.

        Raises:
            phoneenv.extras.MissingExtra: ``datasets`` is not installed.
        """
        from phoneenv.extras import require

        require("data", "datasets", feature="RunStore.to_dataset")
        from datasets import Dataset, Features, Value

        rows = self.rows(**filters)
        for row in rows:
            for name in JSON_COLUMNS:
                row[name] = json.dumps(row[name], ensure_ascii=False) if row[name] is not None else None
        features = Features({name: Value(dtype) for name, (dtype, _) in COLUMNS.items()})
        return Dataset.from_list(rows, features=features)

    def __len__(self) -> int:
        if not self.path.exists():
            return 0
        with self._connect() as con:
            return int(con.execute("SELECT COUNT(*) FROM episodes").fetchone()[0])


def trace_key(path: str | Path, line: int = 1) -> str:
    """The idempotency key of the trace on ``line`` of the trace file ``path`` (resolved)."""
    return f"file:{Path(path).resolve()}:{line}"


def _run_harness(run_dir: Path) -> str | None:
    """The harness a run folder's ``run.json`` names (``harness`` as a name or ``{"name": ...}``)."""
    try:
        meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    harness = meta.get("harness") if isinstance(meta, dict) else None
    if isinstance(harness, dict):
        harness = harness.get("name")
    return harness if isinstance(harness, str) else None


class EvalRecorder:
    """``phoneenv eval``'s hook: each finished episode (handed over as its
    :class:`~phoneenv.evaluation.EpisodeResult`, its trace already on disk) goes into the run store
    ``<loop>/runs.sqlite``, and, when :func:`phoneenv.loop.review.episode_flags` raises a flag, into
    the review queue ``<loop>/review.sqlite``.

    The run never stops for the loop: a store that cannot be written (a locked or broken file)
    is reported once (``error``) and the run goes on; the episodes stay in the run folder, and
    :meth:`RunStore.ingest_run` adds them later.

    Args:
        loop: the loop directory.
        run: the run's name in the store (its output folder).
        review: also queue flagged episodes.
    """

    def __init__(self, loop: str | Path, run: str, *, review: bool = True) -> None:
        from phoneenv.loop import REVIEW_DB, RUNS_DB
        from phoneenv.loop.review import ReviewQueue

        self.store = RunStore(Path(loop) / RUNS_DB)
        self.queue = ReviewQueue(Path(loop) / REVIEW_DB) if review else None
        self.run = str(run)
        self.stored = 0
        self.flagged: list[int] = []
        self.error: str | None = None

    def __call__(self, result: Any) -> None:
        """Store the episode of ``result`` (its ``trace_path``); a result without a trace file is skipped."""
        import logging

        from phoneenv.loop.review import submit_episode

        if self.error is not None or result.trace_path is None:
            return
        path = Path(result.trace_path)
        try:
            with path.open(encoding="utf-8") as fh:
                trace = Trace.model_validate_json(fh.readline())
            self.store.add(trace, run=self.run, origin="eval", key=trace_key(path))
            self.stored += 1
            if self.queue is not None:
                for item in submit_episode(self.queue, trace, run=self.run, trace_ref=str(path)):
                    if item not in self.flagged:
                        self.flagged.append(item)
        except (sqlite3.Error, OSError, ValueError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            logging.getLogger(__name__).warning(
                "the run store stopped recording at %s (%s); the run goes on, its traces stay in the run folder",
                path,
                self.error,
            )
