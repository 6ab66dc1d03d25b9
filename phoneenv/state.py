"""The sandbox phone's state: tables of immutable records, copy-on-write snapshots, and diffs.

State is a dict of tables (``"contacts.contacts"``, ``"system.permissions"``, ...), each a dict
from record id to a record dict. Records are never mutated in place: a write replaces the record
with a new dict (:meth:`PhoneState.update`). Tables are copy-on-write: a snapshot or a restore
shares every table (O(tables), whatever the number of records), and the first write to a table
after one copies that table into a :class:`Table`, which remembers the table it descends from
(its ``origin``) and the ids written since. A diff between two states descended from the same
tables looks only at the tables and ids written (:func:`diff_tables`), so a reset and a
verification cost what the episode touched, not what the phone holds.

Tables handed out by :meth:`PhoneState.table` may be shared with snapshots: write through
:meth:`~PhoneState.insert`, :meth:`~PhoneState.update`, :meth:`~PhoneState.replace` and
:meth:`~PhoneState.delete` (or :meth:`~PhoneState.writable`), never into a table directly.

    >>> s = PhoneState({"notes.notes": [{"id": "n1", "title": "a"}]}, now=0.0)
    >>> snap = s.snapshot()
    >>> s.update("notes.notes", "n1", title="b")["title"]
    'b'
    >>> [(c.id, c.kind) for c in diff_tables(snap.tables, s.tables)]
    [('n1', 'updated')]
    >>> s.restore(snap); s.get("notes.notes", "n1")["title"]
    'a'
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Set
from typing import Any, NamedTuple, TypeVar

__all__ = ["Change", "PhoneState", "Snapshot", "Table", "diff_tables", "next_id", "table_index"]

Record = dict[str, Any]


class Table(dict):  # type: ignore[type-arg]
    """A table (id → record) copied on a write from a shared table: ``origin`` is the table
    it descends from (None when it started empty) and ``touched`` the ids created, updated or
    deleted since (a superset: an id written back to its old record stays in it). Two tables
    with the same ``origin`` agree on every id neither touched, which is what lets
    :func:`diff_tables` skip the rest. A plain ``dict``; nothing else should set the two fields.
    """

    __slots__ = ("origin", "touched")

    origin: dict[str, Record] | None
    touched: set[str]


def _lineage(tbl: Mapping[str, Record]) -> tuple[Mapping[str, Record] | None, frozenset[str] | set[str]]:
    """``(origin, touched)`` of a table: a plain mapping is its own origin, with nothing touched."""
    if isinstance(tbl, Table):
        return tbl.origin, tbl.touched
    return tbl, frozenset()


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


IndexT = TypeVar("IndexT")
_INDEX_CACHE_SIZE = 256
_indexes: OrderedDict[tuple[int, str], tuple[Mapping[str, Record], Any]] = OrderedDict()
_EMPTY: dict[str, Record] = {}


def table_index(
    tbl: Mapping[str, Record], kind: str, build: Callable[[Mapping[str, Record]], IndexT]
) -> tuple[IndexT, Set[str]]:
    """An index of a table that tools search, built once per shared table: ``(index, touched)``.

    ``index`` is ``build(origin)`` for the table ``tbl`` descends from (its :class:`Table`
    origin, or ``tbl`` itself when it is a plain dict, which nothing writes in place), cached
    per origin and ``kind`` (the name of what ``build`` makes). ``touched`` are the ids whose
    records in ``tbl`` may differ from the origin's (created, updated or deleted since; all of
    ``tbl``'s ids when it descends from no table): a search answers from the index for every
    other id and looks at these records themselves. Building costs what ``build`` costs, once
    per fixture table; a lookup after that costs the episode's writes, not the table's size.
    """
    origin, touched = _lineage(tbl)
    if origin is None:
        return build(_EMPTY), tbl.keys()
    key = (id(origin), kind)
    hit = _indexes.get(key)
    if hit is not None and hit[0] is origin:  # the entry holds origin, so its id is not reused
        _indexes.move_to_end(key)
        return hit[1], touched
    index = build(origin)
    _indexes[key] = (origin, index)
    if len(_indexes) > _INDEX_CACHE_SIZE:
        _indexes.popitem(last=False)
    return index, touched


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
    """Mutable phone state with copy-on-write tables: O(tables) snapshots and restores.

    Args:
        records: seeded rows per table; each row needs a unique string ``id``.
        now: the phone clock, seconds since the Unix epoch (float).

    Raises:
        ValueError: a row without ``id`` or with a duplicate id.
    """

    __slots__ = ("_own", "meta", "tables")

    def __init__(self, records: Mapping[str, Iterable[Record]] | None = None, *, now: float = 0.0) -> None:
        self.tables: dict[str, dict[str, Record]] = {}
        self.meta: dict[str, Any] = {"now": now, "seq": {}}
        # name -> the Table this state copied and may write in place (shared with no snapshot).
        # A plain dict is never written in place: its first write copies it, so a plain table
        # can be indexed once and for all (see table_index).
        self._own: dict[str, dict[str, Record]] = {}
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
        """The live table ``name`` (id → record), created empty if missing. It may be shared
        with snapshots: read it, never write into it (see :meth:`writable`)."""
        tbl = self.tables.get(name)
        if tbl is None:
            tbl = self.tables[name] = {}
        return tbl

    def get(self, table: str, rid: str) -> Record | None:
        """The record ``rid`` of ``table``, or None."""
        tbl = self.tables.get(table)
        return None if tbl is None else tbl.get(rid)

    # -- writes ---------------------------------------------------------------------------------
    def writable(self, name: str, rid: str) -> dict[str, Record]:
        """Table ``name`` ready for a write to record ``rid``: copied on the first write after a
        snapshot or restore (O(records of that table), once), with ``rid`` noted as touched.
        The one way to write into a table in place."""
        tbl = self.tables.get(name)
        if tbl is None or tbl is not self._own.get(name):
            origin, touched = _lineage(tbl) if tbl is not None else (None, frozenset())
            new = Table() if tbl is None else Table(tbl)
            new.origin = origin
            new.touched = set(touched)
            self.tables[name] = self._own[name] = tbl = new
        if isinstance(tbl, Table):
            tbl.touched.add(rid)
        return tbl

    def new_id(self, table: str, prefix: str) -> str:
        """A fresh id ``<prefix><n>``: the counter starts above the largest number among the
        seeded ids, so an id deleted during an episode is never handed out again."""
        return next_id(self.meta["seq"], table, self.table(table), prefix)

    def insert(self, table: str, record: Record) -> Record:
        """Insert ``record`` (which has an ``id``); returns it. Raises KeyError on a duplicate id."""
        rid = record["id"]
        if rid in self.tables.get(table, ()):
            raise KeyError(f"duplicate id {rid!r} in {table!r}")
        self.writable(table, rid)[rid] = record
        return record

    def update(self, table: str, rid: str, **changes: Any) -> Record:
        """Replace record ``rid`` by a copy with ``changes`` applied; returns the new record.
        Raises KeyError if it does not exist."""
        new = {**self.tables[table][rid], **changes}
        self.writable(table, rid)[rid] = new
        return new

    def replace(self, table: str, rid: str, record: Record) -> Record:
        """Make ``record`` (whose ``id`` is ``rid``) record ``rid`` of ``table``, whether or not
        one exists; returns it."""
        self.writable(table, rid)[rid] = record
        return record

    def delete(self, table: str, rid: str) -> Record:
        """Remove record ``rid``; returns it. Raises KeyError if it does not exist."""
        if rid not in self.tables[table]:
            raise KeyError(rid)
        return self.writable(table, rid).pop(rid)

    # -- snapshots ------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """A snapshot sharing every table with this state: O(tables). A later write to a table
        copies it first, so the snapshot never changes."""
        meta = dict(self.meta)
        meta["seq"] = dict(meta["seq"])
        self._own = {}
        return Snapshot(dict(self.tables), meta)

    def restore(self, snap: Snapshot) -> None:
        """Make this state equal to ``snap`` (O(tables)); the snapshot stays usable for later
        restores."""
        self.tables = dict(snap.tables)
        self._own = {}
        meta = dict(snap.meta)
        meta["seq"] = dict(meta["seq"])
        self.meta = meta


def diff_tables(
    before: Mapping[str, Mapping[str, Record]],
    after: Mapping[str, Mapping[str, Record]],
    ignore: Iterable[str] = (),
) -> list[Change]:
    """Every record created, updated or deleted from ``before`` to ``after``, sorted by table, id.

    A table that is the same object in both is skipped; two tables descended from the same
    origin (:class:`Table`) are compared on the ids either touched; any other pair record by
    record. Records are compared by identity first (unchanged records are shared), then by
    value. Tables named in ``ignore`` are skipped.
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
        old_origin, old_touched = _lineage(old_t)
        new_origin, new_touched = _lineage(new_t)
        if old_origin is not None and old_origin is new_origin:
            for rid in old_touched | new_touched:
                old = old_t.get(rid)
                new = new_t.get(rid)
                if old is None:
                    if new is not None:
                        out.append(Change(table, rid, "created", None, new))
                elif new is None:
                    out.append(Change(table, rid, "deleted", old, None))
                elif new is not old and new != old:
                    out.append(Change(table, rid, "updated", old, new))
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
