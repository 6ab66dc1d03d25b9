"""The sandbox phone's state: tables of immutable records, cheap snapshots, and diffs.

State is a dict of tables (``"contacts.contacts"``, ``"system.permissions"``, ...), each a dict
from record id to a record dict. Records are never mutated in place: a write replaces the record
with a new dict (:meth:`PhoneState.update`). That makes a snapshot a shallow copy of each table
(O(records) pointer copies, no deep copy) and lets a diff compare records by identity first.

    >>> s = PhoneState({"notes.notes": [{"id": "n1", "title": "a"}]}, now=0.0)
    >>> snap = s.snapshot()
    >>> s.update("notes.notes", "n1", title="b")["title"]
    'b'
    >>> s.restore(snap); s.get("notes.notes", "n1")["title"]
    'a'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

__all__ = ["Change", "PhoneState", "Snapshot", "diff_tables", "next_id"]

Record = dict[str, Any]


class Snapshot(NamedTuple):
    """A frozen copy of the phone: tables (id → record) and the meta dict (clock, counters, UI)."""

    tables: dict[str, dict[str, Record]]
    meta: dict[str, Any]


class Change(NamedTuple):
    """One record that differs between two states: ``kind`` is created, updated or deleted."""

    table: str
    id: str
    kind: str
    old: Record | None
    new: Record | None


def next_id(seq: dict[str, int], table: str, existing: Mapping[str, Any], prefix: str) -> str:
    """The next free id ``<prefix><n>`` of ``table``: ``n`` counts up from ``seq[table]`` (the
    largest number handed out or seeded so far), skipping ids in ``existing``; ``seq`` is updated,
    so a number is never handed out twice, even after its record is deleted."""
    n = seq.get(table, 0)
    while True:
        n += 1
        rid = f"{prefix}{n}"
        if rid not in existing:
            break
    seq[table] = n
    return rid


class PhoneState:
    """Mutable phone state with O(records) snapshots.

    Args:
        records: seeded rows per table; each row needs a unique string ``id``.
        now: the phone clock, seconds since the Unix epoch (float).

    Raises:
        ValueError: a row without ``id`` or with a duplicate id.
    """

    __slots__ = ("meta", "tables")

    def __init__(self, records: Mapping[str, Iterable[Record]] | None = None, *, now: float = 0.0) -> None:
        self.tables: dict[str, dict[str, Record]] = {}
        self.meta: dict[str, Any] = {"now": now, "seq": {}}
        for table, rows in (records or {}).items():
            tbl = self.tables.setdefault(table, {})
            for row in rows:
                rid = row.get("id")
                if not isinstance(rid, str) or not rid:
                    raise ValueError(f"record in {table!r} needs a non-empty string 'id': {row!r}")
                if rid in tbl:
                    raise ValueError(f"duplicate id {rid!r} in {table!r}")
                tbl[rid] = dict(row)
        seq = self.meta["seq"]
        for table, tbl in self.tables.items():
            top = 0
            for rid in tbl:
                digits = rid[len(rid.rstrip("0123456789")) :]
                if digits:
                    top = max(top, int(digits))
            seq[table] = top

    # -- reads ----------------------------------------------------------------------------------
    def table(self, name: str) -> dict[str, Record]:
        """The live table ``name`` (id → record). Callers must not mutate the records."""
        tbl = self.tables.get(name)
        if tbl is None:
            tbl = self.tables[name] = {}
        return tbl

    def get(self, table: str, rid: str) -> Record | None:
        """The record ``rid`` of ``table``, or None."""
        tbl = self.tables.get(table)
        return None if tbl is None else tbl.get(rid)

    # -- writes ---------------------------------------------------------------------------------
    def new_id(self, table: str, prefix: str) -> str:
        """A fresh id ``<prefix><n>``: the counter starts above the largest number among the
        seeded ids, so an id deleted during an episode is never handed out again."""
        return next_id(self.meta["seq"], table, self.table(table), prefix)

    def insert(self, table: str, record: Record) -> Record:
        """Insert ``record`` (which has an ``id``); returns it. Raises KeyError on a duplicate id."""
        tbl = self.table(table)
        if record["id"] in tbl:
            raise KeyError(f"duplicate id {record['id']!r} in {table!r}")
        tbl[record["id"]] = record
        return record

    def update(self, table: str, rid: str, **changes: Any) -> Record:
        """Replace record ``rid`` by a copy with ``changes`` applied; returns the new record.
        Raises KeyError if it does not exist."""
        tbl = self.tables[table]
        new = {**tbl[rid], **changes}
        tbl[rid] = new
        return new

    def delete(self, table: str, rid: str) -> Record:
        """Remove record ``rid``; returns it. Raises KeyError if it does not exist."""
        return self.tables[table].pop(rid)

    # -- snapshots ------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """A snapshot sharing the (immutable) records; O(total records)."""
        meta = dict(self.meta)
        meta["seq"] = dict(meta["seq"])
        return Snapshot({k: v.copy() for k, v in self.tables.items()}, meta)

    def restore(self, snap: Snapshot) -> None:
        """Make this state equal to ``snap``; the snapshot stays usable for later restores."""
        self.tables = {k: v.copy() for k, v in snap.tables.items()}
        meta = dict(snap.meta)
        meta["seq"] = dict(meta["seq"])
        self.meta = meta


def diff_tables(
    before: Mapping[str, Mapping[str, Record]],
    after: Mapping[str, Mapping[str, Record]],
    ignore: Iterable[str] = (),
) -> list[Change]:
    """Every record created, updated or deleted from ``before`` to ``after``, sorted by table, id.

    Records are compared by identity first (unchanged records are shared), then by value.
    Tables named in ``ignore`` are skipped.
    """
    skip = set(ignore)
    out: list[Change] = []
    for table in sorted(set(before) | set(after)):
        if table in skip:
            continue
        old_t = before.get(table, {})
        new_t = after.get(table, {})
        if old_t is new_t:
            continue
        for rid, old in old_t.items():
            new = new_t.get(rid)
            if new is None:
                out.append(Change(table, rid, "deleted", old, None))
            elif new is not old and new != old:
                out.append(Change(table, rid, "updated", old, new))
        for rid, new in new_t.items():
            if rid not in old_t:
                out.append(Change(table, rid, "created", None, new))
    out.sort(key=lambda c: (c.table, c.id))
    return out
