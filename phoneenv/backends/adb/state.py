"""The device-backed state the sandbox apps run on: :class:`DeviceState` (what the apps use of
:class:`~phoneenv.state.PhoneState`, every read and write going to the device through the
backend) and :class:`DevicePhone` (the sandbox's :class:`~phoneenv.phone.Phone` over it)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from phoneenv.app import App
from phoneenv.backends.adb.faults import UnmappedTable
from phoneenv.farm import android as A
from phoneenv.phone import Phone
from phoneenv.state import next_id

if TYPE_CHECKING:
    from phoneenv.backends.adb import AdbBackend

__all__ = ["DevicePhone", "DeviceState"]


@dataclass(frozen=True)
class Table:
    """A mapped table: its full name, app, mapping and id prefix."""

    name: str
    app: str
    mapping: A.TableMapping
    prefix: str


class _Tables(Mapping[str, dict[str, dict[str, Any]]]):
    """``state.tables`` for the apps: mapped tables read from the device on access."""

    def __init__(self, state: DeviceState) -> None:
        self._state = state

    def __getitem__(self, name: str) -> dict[str, dict[str, Any]]:
        if name not in self._state.mapped:
            raise KeyError(name)
        return self._state.table(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._state.mapped)

    def __len__(self) -> int:
        return len(self._state.mapped)


class DeviceState:
    """What the apps and :class:`~phoneenv.phone.Phone` use of
    :class:`~phoneenv.state.PhoneState` (``table``, ``get``, ``insert``, ``update``, ``delete``,
    ``new_id``, ``meta``, ``tables``), over a device.

    Reads go through the mapping of each table and are cached until the end of the tool call or
    the next write to that table. ``meta`` holds the episode clock (``now``, epoch seconds), the
    id counters (``seq``) and the screen bookkeeping (``view``, ``foreground``), as in the sandbox.

    Raises :class:`UnmappedTable` for a table without a mapping, :class:`DeviceFault` when the
    device fails, :class:`~phoneenv.farm.android.MappingError` for a value it cannot carry.
    """

    def __init__(self, backend: AdbBackend) -> None:
        self._backend = backend
        self.meta: dict[str, Any] = {"now": 0.0, "seq": {}, "view": None, "foreground": "launcher"}
        self.mapped: dict[str, Table] = backend.mapped_tables()
        self._cache: dict[str, dict[str, dict[str, Any]]] = {}
        self._written: dict[tuple[str, str], dict[str, Any]] = {}
        self.in_call = False
        self.tables = _Tables(self)

    # -- call scope ------------------------------------------------------------------------------
    def begin_call(self) -> None:
        """Start a tool call: nothing read before is trusted."""
        self._cache.clear()
        self._written.clear()
        self.in_call = True

    def end_call(self) -> None:
        """End a tool call."""
        self.in_call = False
        self._cache.clear()
        self._written.clear()

    def remember(self, tables: Mapping[str, dict[str, dict[str, Any]]]) -> None:
        """Seed the cache with tables just read (a verified reset's state)."""
        self._cache = {k: v for k, v in tables.items() if k in self.mapped}

    def _spec(self, name: str) -> Table:
        spec = self.mapped.get(name)
        if spec is None:
            raise UnmappedTable(f"table {name!r} has no Android mapping")
        return spec

    # -- reads -----------------------------------------------------------------------------------
    def table(self, name: str) -> dict[str, dict[str, Any]]:
        """The table ``name`` as the device holds it now (id → record); do not mutate."""
        cached = self._cache.get(name)
        if cached is None:
            cached = self._backend.read_table(self._spec(name))
            self._cache[name] = cached
        return cached

    def get(self, table: str, rid: str) -> dict[str, Any] | None:
        """The record ``rid`` of ``table``, or None (None too for a table with no mapping)."""
        if table not in self.mapped:
            return None
        return self.table(table).get(rid)

    # -- writes ----------------------------------------------------------------------------------
    def new_id(self, table: str, prefix: str) -> str:
        """A fresh id ``<prefix><n>``, counted as the sandbox counts (never reusing a number)."""
        return next_id(self.meta["seq"], table, self.table(table), prefix)

    def insert(self, table: str, record: dict[str, Any]) -> dict[str, Any]:
        """Write a new record to the device; returns it."""
        spec = self._spec(table)
        self._backend.write_insert(spec, record, typed=self.in_call)
        self._cache.pop(table, None)
        self._written[(table, record["id"])] = record
        return record

    def update(self, table: str, rid: str, **changes: Any) -> dict[str, Any]:
        """Replace record ``rid`` with ``changes`` applied, on the device; returns the new record.
        Raises ``KeyError`` when it does not exist."""
        spec = self._spec(table)
        old = self._written.get((table, rid)) or self.table(table).get(rid)
        if old is None:
            raise KeyError(f"no {rid!r} in {table!r}")
        new = {**old, **changes}
        self._backend.write_update(spec, old, new)
        self._cache.pop(table, None)
        self._written[(table, rid)] = new
        return new

    def delete(self, table: str, rid: str) -> dict[str, Any]:
        """Delete record ``rid`` on the device; returns it. Raises ``KeyError`` when absent."""
        spec = self._spec(table)
        old = self._written.get((table, rid)) or self.table(table).get(rid)
        if old is None:
            raise KeyError(f"no {rid!r} in {table!r}")
        self._backend.write_delete(spec, old)
        self._cache.pop(table, None)
        self._written.pop((table, rid), None)
        return old


class DevicePhone(Phone):
    """The sandbox :class:`~phoneenv.phone.Phone` with its state on a device: the same app
    instances, timezone, fixtures and screen size, over a :class:`DeviceState`."""

    def __init__(self, classes: Mapping[str, type[App]], state: DeviceState) -> None:
        super().__init__(classes)
        self.state = state  # type: ignore[assignment]

    def account(self, app: str) -> Mapping[str, Any] | None:
        """``app``'s account as the fixtures declare it (``account``, ``signed_in``), or None: a
        device keeps logins in the apps' own data, which reset makes the fixtures' (and no tool
        offered on a device signs in or out)."""
        return self.fixtures.accounts.get(app)
