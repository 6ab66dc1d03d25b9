"""The phone model: the device the sandbox apps run on, the state a task starts from, and the apps.

:class:`Phone` holds one :class:`~phoneenv.state.PhoneState`, the app instances bound to it, the
timezone and the task's fixtures; :func:`build_fixture_state` builds a task's starting state
(seeded records plus the system tables of apps, permissions and accounts); :func:`app_classes`
finds the apps (the modules of :mod:`apps`). The sandbox backend runs on a :class:`Phone`, the
device backends on one whose state is on a device, and the virtual device keeps its state in one.
"""

from __future__ import annotations

import datetime as dt
import functools
import typing
from collections.abc import Mapping, Sequence
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import TypeAdapter, ValidationError

from phoneenv.app import App
from phoneenv.contract import Fixtures
from phoneenv.state import PhoneState, Snapshot

__all__ = ["SECONDS_PER_CALL", "Phone", "app_classes", "build_fixture_state", "check_records"]

SECONDS_PER_CALL = 1.0
"""Simulated seconds the phone clock advances per tool call."""


def app_classes() -> dict[str, type[App]]:
    """All sandbox app classes by name (imports :mod:`apps` lazily)."""
    from apps import APP_CLASSES

    return APP_CLASSES


class Phone:
    """The sandbox device: one :class:`PhoneState`, the app instances bound to it, the timezone,
    and the simulated user's answers and the credential vault from the task's fixtures."""

    def __init__(self, classes: Mapping[str, type[App]]) -> None:
        self.apps: dict[str, App] = {name: cls(self) for name, cls in classes.items()}
        self.state = PhoneState()
        self.tz: dt.tzinfo = dt.timezone.utc
        self.fixtures = Fixtures()
        self.screen_size: tuple[int, int] = (360, 640)

    def local_now(self) -> dt.datetime:
        """The phone's local time (naive datetime in the phone's timezone)."""
        return dt.datetime.fromtimestamp(self.state.meta["now"], self.tz).replace(tzinfo=None)

    def notify(self, app: str, title: str, text: str) -> None:
        """Post a notification (table ``system.notifications``)."""
        st = self.state
        rid = st.new_id("system.notifications", "ntf_")
        when = dt.datetime.fromtimestamp(st.meta["now"], self.tz).replace(tzinfo=None)
        st.insert(
            "system.notifications",
            {
                "id": rid,
                "app": app,
                "title": title,
                "text": text,
                "time": when.isoformat(timespec="seconds"),
                "read": False,
            },
        )

    def permission_granted(self, app: str, permission: str) -> bool:
        """Whether ``app`` holds runtime ``permission`` now."""
        rec = self.state.get("system.permissions", f"{app}/{permission}")
        return bool(rec and rec["granted"])

    def account(self, app: str) -> Mapping[str, Any] | None:
        """``app``'s account now (``system.accounts``: ``account``, ``signed_in``), or None."""
        return self.state.get("system.accounts", app)


@functools.cache
def _layout(kind: Any) -> tuple[TypeAdapter[Any], frozenset[str]]:
    """A record TypedDict's validator and field names (built once per layout)."""
    return TypeAdapter(kind), frozenset(kind.__required_keys__ | kind.__optional_keys__)


@functools.cache
def _defaults(kind: Any) -> dict[str, Any]:
    """The required fields of a record TypedDict that have an obvious empty value: None for a
    type that admits None (``email: str | None``), False for a flag (``favorite: bool``)."""
    hints = typing.get_type_hints(kind)
    out: dict[str, Any] = {}
    for k in sorted(kind.__required_keys__):
        if hints[k] is bool:
            out[k] = False
        elif type(None) in typing.get_args(hints[k]) or hints[k] is type(None):
            out[k] = None
    return out


def with_defaults(records: Mapping[str, Sequence[Any]], classes: Mapping[str, type[App]]) -> dict[str, list[Any]]:
    """``records`` with every missing field that has an obvious empty value filled: None where
    the field may be None, False for a flag (a hand-written contact needs no ``"birthday": None``
    nor ``"favorite": False``); rows of tables without a declared layout are kept as they are.
    The rows are copied where a field is added, never changed in place."""
    out: dict[str, list[Any]] = {}
    for table, rows in records.items():
        app, _, name = table.partition(".")
        cls = classes.get(app)
        kind = cls.records.get(name) if cls is not None and cls.records else None
        fill = _defaults(kind) if kind is not None else {}
        out[table] = [
            {**{k: v for k, v in fill.items() if k not in r}, **r}
            if isinstance(r, dict) and any(k not in r for k in fill)
            else r
            for r in rows
        ]
    return out


def check_records(records: Mapping[str, Sequence[Any]], classes: Mapping[str, type[App]]) -> None:
    """Check seeded ``records`` (``app.table`` → rows) against the record layouts the apps in
    ``classes`` declare (:attr:`App.records <phoneenv.app.App.records>`): every row an object,
    every field one of the layout's, every value of the field's type, no required field missing
    (a field that may be None, or a flag, may be left out: :func:`with_defaults` fills it).

    Tables of apps outside ``classes`` (simulated apps) and of apps that declare no layout are
    not checked.

    Raises:
        ValueError: naming the table, the row (its ``id``, else ``#index``) and the field, e.g.
            ``contacts.contacts record c_3: field 'phone': Input should be a valid string``; or
            a table the app does not declare.
    """
    for table, rows in records.items():
        app, _, name = table.partition(".")
        cls = classes.get(app)
        if cls is None or not cls.records:
            continue
        kind = cls.records.get(name)
        if kind is None:
            declared = sorted(f"{app}.{t}" for t in cls.records)
            raise ValueError(f"no sandbox table {table!r} (declared: {declared})")
        adapter, fields = _layout(kind)
        for i, rec in enumerate(rows):
            rid = rec.get("id", f"#{i}") if isinstance(rec, dict) else f"#{i}"
            where = f"{table} record {rid}"
            if not isinstance(rec, dict):
                raise ValueError(f"{where}: a record must be an object, not {type(rec).__name__}")
            extra = sorted(set(rec) - fields)
            if extra:
                raise ValueError(f"{where}: field {extra[0]!r}: not a field of {table} (fields: {sorted(fields)})")
            try:
                adapter.validate_python({**_defaults(kind), **rec})
            except ValidationError as err:
                first = err.errors()[0]
                field = ".".join(str(p) for p in first["loc"]) or "?"
                raise ValueError(f"{where}: field {field!r}: {first['msg']}") from None


def _fill_system_tables(
    apps_t: dict[str, Any],
    perms: dict[str, Any],
    installed: tuple[str, ...],
    fixtures: Fixtures,
    classes: Mapping[str, type[App]],
) -> None:
    """Add the installed apps' rows to ``system.apps`` and their permissions (granted unless the
    fixtures deny them) to ``system.permissions``."""
    for name in installed:
        cls = classes[name]
        apps_t[name] = {"id": name, "name": name, "title": cls.title, "package": cls.package}
        declared = fixtures.permissions.get(name, {})
        for perm in cls.permissions:
            perms[f"{name}/{perm}"] = {
                "id": f"{name}/{perm}",
                "app": name,
                "permission": perm,
                "granted": declared.get(perm, True),
            }


_SYSTEM_KEPT = 256
"""Distinct (apps, grants) whose system tables are kept."""
_system: dict[tuple[Any, ...], tuple[dict[str, Any], dict[str, Any]]] = {}


def _system_tables(
    installed: tuple[str, ...], fixtures: Fixtures, classes: Mapping[str, type[App]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(system.apps, system.permissions)`` for these apps and grants, made once per process and
    shared by every fixture state with the same (a state copies a table on its first write, so
    a shared one is never written in place; ~5 KiB a task otherwise)."""
    grants = tuple(sorted((app, tuple(sorted(p.items()))) for app, p in fixtures.permissions.items()))
    key = (tuple((n, classes[n]) for n in installed), grants)  # the classes are held: ids stay theirs
    hit = _system.get(key)
    if hit is None:
        hit = ({}, {})
        _fill_system_tables(hit[0], hit[1], installed, fixtures, classes)
        if len(_system) >= _SYSTEM_KEPT:
            _system.clear()
        _system[key] = hit
    return hit


def build_fixture_state(fixtures: Fixtures, classes: Mapping[str, type[App]]) -> tuple[Snapshot, tuple[str, ...]]:
    """Build the phone state a task starts from: seeded records plus system tables.

    Returns the snapshot and the installed app names. Raises ``ValueError`` for an unknown app,
    a bad timezone or clock, or a seeded record that breaks its app's record layout
    (:func:`check_records`: the table, row and field named).
    """
    check_records(fixtures.records, classes)
    records = with_defaults(fixtures.records, classes)
    installed = tuple(fixtures.installed_apps) if fixtures.installed_apps is not None else tuple(classes)
    for name in installed:
        if name not in classes:
            raise ValueError(f"fixtures install unknown app {name!r}; known: {sorted(classes)}")
    try:
        tz = ZoneInfo(fixtures.timezone)
        local = dt.datetime.fromisoformat(fixtures.clock)
    except Exception as exc:  # zoneinfo raises several types
        raise ValueError(f"bad clock/timezone in fixtures: {exc}") from exc
    now = local.replace(tzinfo=tz).timestamp() if local.tzinfo is None else local.timestamp()
    state = PhoneState(records, now=now)
    for name in installed:
        for perm in fixtures.permissions.get(name, {}):
            if perm not in classes[name].permissions:
                raise ValueError(f"fixtures set permission {perm!r} that app {name!r} does not declare")
    if "system.apps" in state.tables or "system.permissions" in state.tables:  # seeded: added to
        _fill_system_tables(state.table("system.apps"), state.table("system.permissions"), installed, fixtures, classes)
    else:  # the same for every task with these apps and grants: built once, shared (never written in place)
        state.tables["system.apps"], state.tables["system.permissions"] = _system_tables(installed, fixtures, classes)
    accounts = state.table("system.accounts")
    for app, acc in fixtures.accounts.items():
        accounts[app] = {
            "id": app,
            "app": app,
            "account": acc["account"],
            "signed_in": bool(acc.get("signed_in", False)),
        }
    for name in installed:
        if classes[name].requires_account and name not in accounts:
            accounts[name] = {"id": name, "app": name, "account": None, "signed_in": False}
    state.table("system.notifications")
    state.meta["view"] = None
    state.meta["foreground"] = "launcher"
    return state.snapshot(), installed
