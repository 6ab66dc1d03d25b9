"""The review queue: what the loop is unsure of waits here for a person's decision.

Items are queued by the loop's parts (``propose``: unproven tasks; ``eval``: low-confidence
verdicts, simulated episodes flagged inconsistent, episodes that called a sensitive tool;
``evolve``: skill, instruction and data-mix edits). A person lists them, looks at the evidence
(``phoneenv review show ID``), and approves, rejects (with a reason) or edits them. Every decision
is recorded with who took it and when; nothing is overwritten: an item is decided once, and an
edit keeps the payload it replaced.

Nothing enters the training mix, the benchmark split or a harness version from the queue without
an approval: the readers (:meth:`ReviewQueue.approved`) return approved items only.

The queue is one SQLite file (the stdlib :mod:`sqlite3`, write-ahead log, a busy timeout, every
write in an immediate transaction), so several processes (an eval, a proposer, a person at the
CLI) can use it at once. Connections are kept per thread and process (:mod:`phoneenv.loop._db`),
not by the :class:`ReviewQueue`, which can be passed between threads and processes.

Payloads by kind (extra keys are kept):

=====================  =========================================================================
``task``               ``{"task": TaskSpec.model_dump(mode="json"), "provenance": {...}}``
``skill_edit``         ``{"skill": name, "path": "<app>/<name>/SKILL.md", "before": str|None,
                       "after": str, "diff": unified diff}``
``instruction_edit``   ``{"before": str, "after": str, "diff": str}``
``mix_weight``         ``{"group": str, "before": float, "after": float}``
``verdict``,           ``{"task_id", "seed", "run", "verdict": ..., "why": ...}``
``sim_inconsistent``,
``sensitive``
=====================  =========================================================================
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from phoneenv.loop._db import transaction

__all__ = [
    "ACTIONS",
    "KINDS",
    "STATUSES",
    "Decision",
    "ReviewItem",
    "ReviewQueue",
    "canonical_json",
    "check_payload",
    "episode_flags",
    "submit_episode",
]

KINDS = ("task", "verdict", "sim_inconsistent", "sensitive", "skill_edit", "instruction_edit", "mix_weight")
"""What an item can be (see the module docstring for each kind's payload)."""
STATUSES = ("pending", "approved", "rejected")
"""An item's status: ``pending`` until approved or rejected (an edit keeps it pending)."""
ACTIONS = ("approve", "reject", "edit")
"""What a :class:`Decision` did."""

_REQUIRED: dict[str, tuple[str, ...]] = {
    "task": ("task", "provenance"),
    "skill_edit": ("skill", "path", "before", "after", "diff"),
    "instruction_edit": ("before", "after", "diff"),
    "mix_weight": ("group", "before", "after"),
    "verdict": ("task_id", "seed", "run", "verdict", "why"),
    "sim_inconsistent": ("task_id", "seed", "run", "verdict", "why"),
    "sensitive": ("task_id", "seed", "run", "verdict", "why"),
}

_EPISODE_TYPES: dict[str, tuple[type, ...]] = {
    "task_id": (str,),
    "seed": (int, type(None)),
    "run": (str,),
    "verdict": (dict, type(None)),
    "why": (str,),
}
_TYPES: dict[str, dict[str, tuple[type, ...]]] = {
    "skill_edit": {"skill": (str,), "path": (str,), "before": (str, type(None)), "diff": (str,)},
    "instruction_edit": {"before": (str,), "diff": (str,)},
    "mix_weight": {"group": (str,), "before": (int, float)},
    "verdict": _EPISODE_TYPES,
    "sim_inconsistent": _EPISODE_TYPES,
    "sensitive": _EPISODE_TYPES,
}
"""The JSON types of each kind's keys (beside ``after`` and ``task``, checked on their own): what
``review show`` and ``evolve apply`` read them as."""
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", dict: "an object", list: "a list"}


def _json_type(value: Any) -> str:
    """What ``value`` is in JSON's words (``a string``, ``null``...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


class Decision(BaseModel):
    """One decision on an item: ``action`` (``approve``, ``reject`` or ``edit``), the ``reviewer``
    who took it, when (``at``, ISO 8601 UTC), a ``note`` (a rejection's reason), and for an edit
    the payload it replaced (``payload_before``)."""

    action: str
    reviewer: str
    at: str
    note: str = ""
    payload_before: dict[str, Any] | None = None


class ReviewItem(BaseModel):
    """An item of the queue: its ``id``, ``kind`` (one of :data:`KINDS`), ``status`` (one of
    :data:`STATUSES`), a one-line ``title``, the ``payload`` (the thing to approve, as edited),
    the ``evidence`` (references to traces: ``{"run", "task_id", "seed", "trace": path or
    inline}``...), who queued it (``source``: ``propose``, ``eval``, ``evolve``...), why it needs a
    person (``reason``), when it was queued (``created_at``, ISO 8601 UTC) and every decision
    taken on it, oldest first."""

    id: int
    kind: str
    status: str
    title: str
    payload: dict[str, Any]
    evidence: list[dict[str, Any]] = Field(default_factory=list)
    source: str = ""
    reason: str = ""
    created_at: str
    decisions: list[Decision] = Field(default_factory=list)

    @property
    def decided(self) -> Decision | None:
        """The approval or rejection that closed the item (None while pending)."""
        return next((d for d in reversed(self.decisions) if d.action in ("approve", "reject")), None)


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: keys sorted, no spaces, non-ASCII kept.

    Raises:
        ValueError: ``value`` is not JSON (a set, an object, NaN...).
    """
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not JSON: {exc}") from None


def check_payload(kind: str, payload: Any) -> None:
    """Check that ``payload`` fits ``kind``: a JSON object with the kind's keys (see the module
    docstring), each of JSON type the readers take (a ``diff`` a string, a ``seed`` an integer or
    null...); for ``task``, ``payload["task"]`` must be a valid :class:`~phoneenv.contract.TaskSpec`;
    for ``mix_weight``, ``after`` must be a number >= 0.

    Raises:
        ValueError: an unknown kind, or a payload that does not fit (the message says what).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown review kind {kind!r}; one of {', '.join(KINDS)}")
    if not isinstance(payload, dict):
        raise ValueError(f"a {kind} payload must be a JSON object, not {type(payload).__name__}")
    canonical_json(payload)
    missing = [k for k in _REQUIRED[kind] if k not in payload]
    if missing:
        raise ValueError(f"a {kind} payload needs {', '.join(missing)} (has {', '.join(sorted(payload)) or 'nothing'})")
    if kind == "task":
        from phoneenv.contract import TaskSpec

        try:
            TaskSpec.model_validate(payload["task"])
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "/".join(str(p) for p in first.get("loc", ()))
            raise ValueError(f"payload.task is not a valid TaskSpec ({where}: {first['msg']})") from None
        if not isinstance(payload["provenance"], dict):
            raise ValueError("payload.provenance must be a JSON object")
    elif kind == "mix_weight":
        after = payload["after"]
        if isinstance(after, bool) or not isinstance(after, (int, float)) or after < 0:
            raise ValueError(f"payload.after must be a weight >= 0, not {after!r}")
    elif kind in ("skill_edit", "instruction_edit") and not isinstance(payload["after"], str):
        raise ValueError("payload.after must be the new text")
    for key, types in _TYPES.get(kind, {}).items():
        value = payload[key]
        if isinstance(value, bool) or not isinstance(value, types):
            names = " or ".join("null" if t is type(None) else _TYPE_NAMES[t] for t in types)
            raise ValueError(f"payload.{key} must be {names}, not {_json_type(value)}")


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    title TEXT NOT NULL,
    payload TEXT NOT NULL,
    submit_key TEXT NOT NULL UNIQUE,
    evidence TEXT NOT NULL DEFAULT '[]',
    source TEXT NOT NULL DEFAULT '',
    reason TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS items_status_kind ON items (status, kind);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id INTEGER NOT NULL REFERENCES items (id),
    action TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    at TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    payload_before TEXT
);
CREATE INDEX IF NOT EXISTS decisions_item ON decisions (item_id);
"""


class ReviewQueue:
    """The review queue kept in the SQLite file ``path`` (created, with its folder, on first use).

    Raises (every method):
        sqlite3.DatabaseError: ``path`` is not a SQLite file, or another process held it locked
            for longer than :data:`phoneenv.loop._db.BUSY_TIMEOUT_S`.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"ReviewQueue({str(self.path)!r})"

    def _connect(self, *, write: bool = False) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return transaction(self.path, _SCHEMA, write=write)

    # -- writing ---------------------------------------------------------------------------------

    def submit(
        self,
        kind: str,
        title: str,
        payload: dict[str, Any],
        *,
        evidence: list[dict[str, Any]] | None = None,
        source: str = "",
        reason: str = "",
    ) -> int:
        """Queue an item and return its id. Idempotent: an item of the same ``kind`` and the same
        payload (compared as :func:`canonical_json`, as first submitted) is not queued twice; its
        id is returned and the new ``evidence`` entries it lacked are appended to it (whatever its
        status: a decided item is not reopened).

        Args:
            kind: one of :data:`KINDS`.
            title: one line a person reads in the list (not empty).
            payload: what is to be approved (see the module docstring for each kind's keys).
            evidence: references to the traces behind the item (JSON objects).
            source: who queues it (``propose``, ``eval``, ``evolve``...).
            reason: why it needs a person.

        Raises:
            ValueError: an unknown kind, an empty title, or a payload or evidence that is not JSON
                or does not fit the kind.
        """
        check_payload(kind, payload)
        if not title.strip():
            raise ValueError("a review item needs a title")
        evidence = list(evidence or [])
        if not all(isinstance(e, dict) for e in evidence):
            raise ValueError("evidence must be a list of JSON objects")
        canonical_json(evidence)
        key = hashlib.sha256(f"{kind}\n{canonical_json(payload)}".encode()).hexdigest()
        with self._connect(write=True) as con:
            row = con.execute("SELECT id, evidence FROM items WHERE submit_key = ?", (key,)).fetchone()
            if row is None:
                cur = con.execute(
                    "INSERT INTO items (kind, title, payload, submit_key, evidence, source, reason, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        kind,
                        title.strip(),
                        canonical_json(payload),
                        key,
                        canonical_json(evidence),
                        source,
                        reason,
                        _now(),
                    ),
                )
                return int(cur.lastrowid or 0)
            old = json.loads(row["evidence"])
            seen = {canonical_json(e) for e in old}
            new = []
            for e in evidence:
                text = canonical_json(e)
                if text not in seen:
                    seen.add(text)
                    new.append(e)
            if new:
                con.execute("UPDATE items SET evidence = ? WHERE id = ?", (canonical_json(old + new), row["id"]))
            return int(row["id"])

    def approve(self, item_id: int, reviewer: str, note: str = "") -> ReviewItem:
        """Approve a pending item (its payload as last edited); returns the item as it now is.

        Raises:
            KeyError: no item ``item_id``.
            ValueError: the item is already decided, or ``reviewer`` is empty.
        """
        return self._decide(item_id, "approve", reviewer, note)

    def reject(self, item_id: int, reviewer: str, reason: str) -> ReviewItem:
        """Reject a pending item, saying why (kept as the decision's note); returns the item.

        Raises:
            KeyError: no item ``item_id``.
            ValueError: no reason given, the item is already decided, or ``reviewer`` is empty.
        """
        if not reason or not reason.strip():
            raise ValueError(f"rejecting item {item_id} needs a reason")
        return self._decide(item_id, "reject", reviewer, reason.strip())

    def edit(self, item_id: int, reviewer: str, payload: dict[str, Any], note: str = "") -> ReviewItem:
        """Replace a pending item's payload with ``payload`` (checked as on :meth:`submit`); the
        decision keeps the payload it replaced. The item stays pending: an edit is approved like
        any other item. Returns the item.

        Raises:
            KeyError: no item ``item_id``.
            ValueError: the payload does not fit the item's kind, the item is already decided, or
                ``reviewer`` is empty.
        """
        return self._decide(item_id, "edit", reviewer, note, payload=payload)

    def _decide(
        self, item_id: int, action: str, reviewer: str, note: str, *, payload: dict[str, Any] | None = None
    ) -> ReviewItem:
        if not reviewer or not reviewer.strip():
            raise ValueError("a decision needs a reviewer's name")
        with self._connect(write=True) as con:
            item = self._load(con, item_id)
            if item.status != "pending":
                last = item.decided
                who = f" by {last.reviewer} at {last.at}" if last else ""
                raise ValueError(f"review item {item_id} is already {item.status}{who}; a decision is not overwritten")
            before = None
            if action == "edit":
                assert payload is not None
                check_payload(item.kind, payload)
                before = canonical_json(item.payload)
                con.execute("UPDATE items SET payload = ? WHERE id = ?", (canonical_json(payload), item_id))
            else:
                status = "approved" if action == "approve" else "rejected"
                con.execute("UPDATE items SET status = ? WHERE id = ?", (status, item_id))
            con.execute(
                "INSERT INTO decisions (item_id, action, reviewer, at, note, payload_before) VALUES (?, ?, ?, ?, ?, ?)",
                (item_id, action, reviewer.strip(), _now(), note, before),
            )
            return self._load(con, item_id)

    # -- reading ---------------------------------------------------------------------------------

    def get(self, item_id: int) -> ReviewItem:
        """The item ``item_id`` with its decisions.

        Raises:
            KeyError: no item ``item_id`` (the message names the id and the file).
        """
        with self._connect() as con:
            return self._load(con, item_id)

    def items(self, *, status: str | None = None, kind: str | None = None) -> list[ReviewItem]:
        """The items, oldest first, optionally only those of ``status`` and/or ``kind``.

        Raises:
            ValueError: an unknown status or kind.
        """
        if status is not None and status not in STATUSES:
            raise ValueError(f"unknown review status {status!r}; one of {', '.join(STATUSES)}")
        if kind is not None and kind not in KINDS:
            raise ValueError(f"unknown review kind {kind!r}; one of {', '.join(KINDS)}")
        where, args = [], []
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        sql = "SELECT * FROM items" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY id"
        with self._connect() as con:
            rows = con.execute(sql, args).fetchall()
            decisions = self._decisions(con, [r["id"] for r in rows])
            return [self._item(r, decisions.get(r["id"], [])) for r in rows]

    def approved(self, kind: str | None = None) -> list[ReviewItem]:
        """The approved items (of ``kind`` when given), oldest first: all the loop may act on.

        Raises:
            ValueError: an unknown kind.
        """
        return self.items(status="approved", kind=kind)

    def counts(self) -> dict[str, dict[str, int]]:
        """How many items there are per status and kind: ``{status: {kind: n}}`` (only non-zero)."""
        with self._connect() as con:
            out: dict[str, dict[str, int]] = {}
            for r in con.execute("SELECT status, kind, COUNT(*) AS n FROM items GROUP BY status, kind"):
                out.setdefault(r["status"], {})[r["kind"]] = int(r["n"])
            return out

    def _load(self, con: sqlite3.Connection, item_id: int) -> ReviewItem:
        row = con.execute("SELECT * FROM items WHERE id = ?", (int(item_id),)).fetchone()
        if row is None:
            raise KeyError(f"no review item {item_id} in {self.path}")
        return self._item(row, self._decisions(con, [row["id"]]).get(row["id"], []))

    @staticmethod
    def _decisions(con: sqlite3.Connection, ids: list[int]) -> dict[int, list[Decision]]:
        out: dict[int, list[Decision]] = {}
        if not ids:
            return out
        rows = con.execute(
            "SELECT * FROM decisions WHERE item_id IN (SELECT value FROM json_each(?)) ORDER BY id",
            (json.dumps(ids),),
        )
        for r in rows:
            out.setdefault(r["item_id"], []).append(
                Decision(
                    action=r["action"],
                    reviewer=r["reviewer"],
                    at=r["at"],
                    note=r["note"],
                    payload_before=json.loads(r["payload_before"]) if r["payload_before"] is not None else None,
                )
            )
        return out

    @staticmethod
    def _item(row: sqlite3.Row, decisions: list[Decision]) -> ReviewItem:
        return ReviewItem(
            id=row["id"],
            kind=row["kind"],
            status=row["status"],
            title=row["title"],
            payload=json.loads(row["payload"]),
            evidence=json.loads(row["evidence"]),
            source=row["source"],
            reason=row["reason"],
            created_at=row["created_at"],
            decisions=decisions,
        )


# -- what an episode sends to the queue -----------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _sensitive_tools() -> frozenset[str]:
    """The names of every sandbox tool whose effect is ``sensitive`` (dotted and ``app__verb``)."""
    from apps import APP_CLASSES
    from phoneenv.contract import Effect

    names = {d.spec.name for cls in APP_CLASSES.values() for d in cls.tool_defs() if d.spec.effect is Effect.SENSITIVE}
    return frozenset(names | {n.replace(".", "__") for n in names})


def episode_flags(trace: Any) -> list[tuple[str, str]]:
    """Why an episode needs a person, as ``(kind, why)`` pairs (empty when it does not):

    * ``verdict``: the verdict contradicts itself: success although milestones were not met
      (progress < 1: the end state is right but the way there is not what the task expects), or
      an answer criterion the rules passed and the LLM judge failed (its reason starts with
      ``judge``), or the judge itself failed.
    * ``sim_inconsistent``: the simulated world contradicted itself (``verdict.inconsistent``).
    * ``sensitive``: a sensitive tool (payment, sending, deleting, sharing, granting; see
      :class:`~phoneenv.contract.Effect`) ran successfully.

    Args:
        trace: a :class:`~phoneenv.contract.Trace`.
    """
    v = trace.verdict
    flags: list[tuple[str, str]] = []
    if v is None:
        return flags
    why = []
    if v.success and v.milestones_met < v.milestones_total:
        why.append(f"success with {v.milestones_met}/{v.milestones_total} milestones met (progress {v.progress:.2f})")
    judged = [c for c in v.criteria if not c.passed and c.reason.startswith("judge")]
    why += [f"{c.id}: the rules passed it, {c.reason}" for c in judged]
    if why:
        flags.append(("verdict", "; ".join(why)))
    if v.inconsistent:
        flags.append(("sim_inconsistent", "; ".join(v.inconsistencies) or "the simulated world contradicted itself"))
    sensitive = _sensitive_tools()
    ran = [s.action.name for s in trace.steps if s.action is not None and s.feedback.ok and s.action.name in sensitive]
    if ran:
        flags.append(("sensitive", "sensitive tools ran: " + ", ".join(dict.fromkeys(ran))))
    return flags


def submit_episode(
    queue: ReviewQueue,
    trace: Any,
    *,
    run: str,
    trace_ref: str | None = None,
    source: str = "eval",
) -> list[int]:
    """Queue ``trace`` once per flag :func:`episode_flags` raises; returns the items' ids.

    Each item's payload is ``{"task_id", "seed", "run", "verdict", "why"}``, its evidence
    ``[{"run", "task_id", "seed", "trace": trace_ref}]`` (the trace file's path; the whole trace as
    JSON when no path is given). Idempotent, like :meth:`ReviewQueue.submit`.
    """
    ids = []
    for kind, why in episode_flags(trace):
        verdict = trace.verdict.model_dump(mode="json") if trace.verdict is not None else None
        payload = {"task_id": trace.task_id, "seed": trace.seed, "run": run, "verdict": verdict, "why": why}
        evidence = [
            {"run": run, "task_id": trace.task_id, "seed": trace.seed, "trace": trace_ref or trace.model_dump_json()}
        ]
        title = f"{trace.task_id} seed {trace.seed}: {why}"
        if len(title) > 160:
            title = title[:157] + "..."
        ids.append(queue.submit(kind, title, payload, evidence=evidence, source=source, reason=why))
    return ids
