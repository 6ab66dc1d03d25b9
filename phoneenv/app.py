"""The base class of sandbox apps: state access, the phone clock, the screen, and tool discovery.

An app is one folder under ``apps/`` (``apps/<name>/__init__.py``; its own task templates and
skills beside it, see :mod:`apps`): a subclass of :class:`App` declaring its tables, Android
package and permissions, with ``@tool`` methods (see :mod:`phoneenv.tools`) and an optional
``row()`` that says how a record looks in the app's list view.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

from typing_extensions import TypedDict

from phoneenv import toolcache
from phoneenv.contract import Domain, ErrorKind, Fixtures
from phoneenv.farm.android import AndroidDriver
from phoneenv.state import PhoneState
from phoneenv.tools import ToolDef, ToolError, build_tool, tool_def_from_spec

__all__ = [
    "MAX_YEAR",
    "MIN_YEAR",
    "App",
    "AppHost",
    "Deleted",
    "check_year",
    "format_local_time",
    "id_key",
    "parse_local_time",
]

TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$"
"""Local phone time as tools take it: ``YYYY-MM-DDTHH:MM`` (seconds optional)."""

MIN_YEAR = 1900
"""Earliest year a date or time argument may name (a phone's calendar; Python's own range,
years 1 to 9999, would let a day's or a week's arithmetic overflow at its ends)."""
MAX_YEAR = 2199
"""Latest year a date or time argument may name (see :data:`MIN_YEAR`)."""


class Deleted(TypedDict):
    """Confirmation of a deletion."""

    deleted: str


def id_key(rid: str) -> tuple[str, int]:
    """Sort key for ids like ``m_12`` that orders ``m_9`` before ``m_10``: (prefix, number),
    or (id, -1) for an id without a trailing number."""
    m = _ID_NUMBER.match(rid)
    return (m.group(1), int(m.group(2))) if m else (rid, -1)


_ID_NUMBER = re.compile(r"^(.*?)(\d+)$")
_MISSING = object()


def check_year(value: dt.date, text: str, arg: str) -> None:
    """Raise :class:`ToolError` (``invalid_arguments`` at ``/arg``) when ``value`` (parsed from
    ``text``) lies outside the years :data:`MIN_YEAR` to :data:`MAX_YEAR`."""
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"argument {arg!r}: {text!r} is outside the years {MIN_YEAR} to {MAX_YEAR}",
            hint="give a date in the phone's calendar range",
            path=f"/{arg}",
        )


def parse_local_time(value: str, arg: str) -> dt.datetime:
    """Parse a local ``YYYY-MM-DDTHH:MM[:SS]`` argument to a naive datetime.

    Raises :class:`ToolError` (``invalid_arguments``, with ``path`` ``/arg``) for an impossible
    date such as ``2026-02-30T10:00``, or a year outside :data:`MIN_YEAR` to :data:`MAX_YEAR`.
    """
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"argument {arg!r}: {value!r} is not a valid local time",
            hint="use YYYY-MM-DDTHH:MM, e.g. 2026-11-30T16:00",
            path=f"/{arg}",
        ) from None
    check_year(parsed, value, arg)
    return parsed


def format_local_time(value: dt.datetime, seconds: bool = False) -> str:
    """Format a naive local datetime as ``YYYY-MM-DDTHH:MM`` (``:SS`` when ``seconds``)."""
    return value.isoformat(timespec="seconds" if seconds else "minutes")


class AppHost(Protocol):
    """What an app uses of the phone it runs on (:class:`phoneenv.phone.Phone`, which holds the
    apps: named here so that the apps need not import the phone)."""

    state: PhoneState
    apps: Mapping[str, App]
    tz: dt.tzinfo
    fixtures: Fixtures
    screen_size: tuple[int, int]

    def local_now(self) -> dt.datetime: ...

    def notify(self, app: str, title: str, text: str) -> None: ...


class App:
    """A sandbox app bound to one :class:`AppHost` (a :class:`~phoneenv.phone.Phone`).

    Class attributes a subclass sets: ``name`` (tool prefix), ``title`` (screen title),
    ``domain``, ``package`` (Android package), ``android`` (its :class:`~phoneenv.farm.android.AndroidDriver`,
    or None when no faithful Android path exists), ``permissions`` (runtime permissions it declares),
    ``tables`` (table → id prefix; stored as ``<name>.<table>``), ``records`` (table → the
    TypedDict of a stored record), ``requires_account``,
    ``transient`` (tables of session state that verification's collateral rule ignores).
    """

    name: ClassVar[str]
    title: ClassVar[str]
    domain: ClassVar[Domain]
    package: ClassVar[str]
    android: ClassVar[AndroidDriver | None] = None
    """How the app works on an Android device (tables, tools offered); None: sandbox only."""
    permissions: ClassVar[tuple[str, ...]] = ()
    tables: ClassVar[dict[str, str]] = {}
    records: ClassVar[dict[str, Any]] = {}
    """Table → the TypedDict of a record as stored (what task fixtures seed); checked when a
    template builds a task (:func:`phoneenv.tasks.schemas.check_fixtures`)."""
    requires_account: ClassVar[bool] = False
    transient: ClassVar[tuple[str, ...]] = ()
    """Tables holding session state (an ongoing call, notifications): never collateral damage."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Check the app's Android mapping against its record layouts (raises
        :class:`~phoneenv.farm.android.MappingError` naming the table and the field)."""
        super().__init_subclass__(**kwargs)
        if cls.android is not None:
            cls.android.check_layouts(getattr(cls, "name", cls.__name__), cls.records)

    implied: ClassVar[dict[str, dict[str, dict[str, Any]]]] = {}
    """Records that exist by default while none is stored (table → id → record), such as a
    setting at its default value: verification counts them in the fixture state."""
    system: ClassVar[bool] = False
    _tool_defs: ClassVar[list[ToolDef] | None] = None

    def __init__(self, phone: AppHost) -> None:
        self.phone = phone

    # -- discovery ------------------------------------------------------------------------------
    @classmethod
    def tool_defs(cls) -> list[ToolDef]:
        """This app's tools, built once per class from the ``@tool`` methods, sorted by name."""
        if cls.__dict__.get("_tool_defs") is None:
            methods: dict[str, Callable[..., Any]] = {}
            for attr, member in vars(cls).items():
                if callable(member) and hasattr(member, "__phoneenv_tool__"):
                    if attr in App.__dict__:
                        raise TypeError(
                            f"{cls.__name__}.{attr} shadows App.{attr}; name the method otherwise and pass @tool(name=...)"
                        )
                    verb = member.__phoneenv_tool__.name or member.__name__
                    methods[f"{cls.name}.{verb}" if cls.name else verb] = member
            names = sorted(methods)
            owner, folders = f"{cls.__module__}.{cls.__qualname__}", _source_folders(cls)
            cached = toolcache.load(cls.name, owner, names, folders) if folders else None
            if cached is not None:
                defs = [tool_def_from_spec(spec, methods[spec.name]) for spec in cached]
            else:
                defs = sorted(
                    (build_tool(cls.name, cls.domain, m) for m in methods.values()), key=lambda d: d.spec.name
                )
                if folders:
                    toolcache.store(cls.name, owner, [d.spec for d in defs], folders)
            cls._tool_defs = defs
        return cls._tool_defs  # type: ignore[return-value]

    # -- state helpers --------------------------------------------------------------------------
    def t(self, table: str) -> dict[str, dict[str, Any]]:
        """The live table ``<app>.<table>`` (id → record); do not mutate records in place."""
        return self.phone.state.table(f"{self.name}.{table}")

    def new_id(self, table: str) -> str:
        """A fresh id for ``table`` with the app's declared prefix."""
        return self.phone.state.new_id(f"{self.name}.{table}", self.tables[table])

    def put(self, table: str, record: dict[str, Any]) -> dict[str, Any]:
        """Insert a record into ``<app>.<table>``; returns it."""
        return self.phone.state.insert(f"{self.name}.{table}", record)

    def patch(self, table: str, rid: str, **changes: Any) -> dict[str, Any]:
        """Replace record ``rid`` with ``changes`` applied; returns the new record."""
        return self.phone.state.update(f"{self.name}.{table}", rid, **changes)

    def remove(self, table: str, rid: str) -> dict[str, Any]:
        """Delete record ``rid``; returns it."""
        return self.phone.state.delete(f"{self.name}.{table}", rid)

    def rewrite(self, table: str, rid: str, record: dict[str, Any]) -> dict[str, Any]:
        """Make record ``rid`` equal ``record`` (which has the same ``id``), dropping the fields
        ``record`` leaves out: a patch when no field goes, else a delete and an insert (optional
        fields are absent at their empty value, so clearing one must remove its key). Returns the
        stored record."""
        old = self.t(table)[rid]
        if set(old) <= set(record):
            return self.patch(table, rid, **{k: v for k, v in record.items() if old.get(k, _MISSING) != v})
        self.remove(table, rid)
        return self.put(table, record)

    def require(self, table: str, rid: str, what: str, finder: str) -> dict[str, Any]:
        """The record ``rid`` or a ``not_found`` :class:`ToolError` naming the tool to find it."""
        rec = self.t(table).get(rid)
        if rec is None:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no {what} with id {rid!r}",
                hint=f"call {finder} to find the right id",
            )
        return rec

    def now(self) -> dt.datetime:
        """The phone's local time (naive, in the phone's timezone), frozen per task."""
        return self.phone.local_now()

    def now_str(self, seconds: bool = True) -> str:
        """The phone's local time as ISO text (``YYYY-MM-DDTHH:MM:SS``)."""
        return format_local_time(self.now(), seconds=seconds)

    def notify(self, title: str, text: str) -> None:
        """Post a notification from this app."""
        self.phone.notify(self.name, title, text)

    # -- screen ---------------------------------------------------------------------------------
    def show_list(self, table: str, ids: list[str] | tuple[str, ...]) -> None:
        """Make the screen show ``ids`` of ``table`` as a list (rendered lazily)."""
        self.phone.state.meta["view"] = (self.name, "list", table, tuple(ids))

    def show_detail(self, table: str, rid: str) -> None:
        """Make the screen show record ``rid`` of ``table`` in detail (rendered lazily)."""
        self.phone.state.meta["view"] = (self.name, "detail", table, rid)

    def row(self, table: str, record: dict[str, Any]) -> str:
        """One line of the list view for ``record``; apps override for a nicer line."""
        for key in ("name", "title", "label", "body", "number"):
            if key in record:
                return str(record[key])
        return str(record.get("id", ""))

    def screen(self, view: tuple[Any, ...] | None) -> tuple[str, list[str]]:
        """``(title, lines)`` of this app's screen for ``view`` (from :meth:`show_list` /
        :meth:`show_detail`), or the app's main list when ``view`` is None."""
        if view is not None and view[1] == "detail":
            rec = self.phone.state.get(f"{self.name}.{view[2]}", view[3])
            if rec is not None:
                return self.title, [f"{k}: {_show(v)}" for k, v in rec.items() if k != "id"]
        if view is not None and view[1] == "list":
            tbl = self.t(view[2])
            return self.title, [self.row(view[2], tbl[i]) for i in view[3] if i in tbl]
        if not self.tables:
            return self.title, []
        main = next(iter(self.tables))
        return self.title, [self.row(main, r) for r in list(self.t(main).values())[:20]]


def _show(value: Any) -> str:
    """A record value as a person reads it on screen (lists joined, None as a dash)."""
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def listing(records: list[dict[str, Any]], key: Callable[[dict[str, Any]], Any] | None = None) -> list[dict[str, Any]]:
    """Copies of ``records`` (so results never alias phone state), optionally sorted by ``key``."""
    if key is not None:
        records = sorted(records, key=key)
    return [dict(r) for r in records]


def _source_folders(cls: type) -> tuple[str, ...]:
    """The folders an app class's tool specs are built from, beside the ``phoneenv`` package: its
    top-level package's path (``apps/`` and the ``PHONEENV_APPS_PATH`` folders for the apps
    package), else its module's folder; empty (no caching) for a class of no file."""
    top = sys.modules.get(cls.__module__.partition(".")[0])
    path = getattr(top, "__path__", None)
    if path is not None:
        return tuple(str(p) for p in path)
    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    return (os.path.dirname(os.path.abspath(file)),) if file else ()
