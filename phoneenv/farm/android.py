"""Android mappings of the sandbox apps: where each sandbox table lives on a real Android device.

An app that works on a device declares, beside its tools, an :class:`AndroidDriver`::

    class Messages(App):
        android = AndroidDriver(
            tables={"messages": ProviderTable(
                table="messages", uri="content://sms",
                fields={"number": Column("address"), "body": Column("body"), ...})},
            tools=("messages.search", "messages.send", ...),
        )

A table maps to one Android mechanism:

- :class:`ProviderTable`: rows of a content provider (``content query|insert|update|delete``), one
  row per record, with optional child rows (:class:`DataRows`, the contacts ``data`` table keyed by
  MIME type, with :class:`LabelledKind` for several labelled rows of one type such as a contact's
  numbers; :class:`ListRows`, one row per list element, such as calendar attendees and reminders);
- :class:`SettingsTable`: one record per key of ``settings get|put <namespace> <key>``;
- :class:`PermissionTable`: runtime permissions, written with ``pm grant|revoke`` and read back from
  ``dumpsys package <pkg>``'s ``runtime permissions:`` section;
- :class:`PackageTable`: the installed apps, from ``pm list packages``;
- :class:`CallStateTable`: whether a call is in progress, from ``dumpsys telephony.registry``.

Both sides use the same declarations: the host (:mod:`phoneenv.backends.adb`) turns records into
shell commands and parses what the device prints; the virtual device
(:mod:`phoneenv.farm.virtual`) serves the sandbox phone's tables through them. Values round-trip
losslessly (:func:`encode_record` then :func:`decode_record` gives the record back): strings of any
characters, booleans (``0``/``1``), None (SQL ``NULL``), ints, local times (epoch milliseconds in
the device's timezone), and lists (as child rows or bit masks, each documented on its codec).

Ids: a sandbox id ``<prefix><n>`` (``c_3``, prefix from the app's ``tables``) is the provider row
``_id`` ``n``; :func:`android_id` and :func:`sandbox_id` convert.

Sources: the column names and constants are Android's own, from the Android SDK reference for
``android.provider.Telephony.Sms``, ``CallLog.Calls``, ``ContactsContract`` (``RawContacts``,
``Data``, ``CommonDataKinds``), ``CalendarContract`` (``Events``, ``Attendees``, ``Reminders``),
``VoicemailContract.Voicemails``,
``BlockedNumberContract.BlockedNumbers``, ``Settings.Global|Secure|System``, and AOSP DeskClock's
``ClockContract.AlarmsColumns`` (``packages/apps/DeskClock``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from phoneenv.errors import PhoneEnvError

__all__ = [
    "BIRTHDAY",
    "BOOL",
    "EMPTY_IS_NONE",
    "INT",
    "TEXT",
    "WEEKDAY_MASK",
    "AndroidDriver",
    "BindType",
    "CallStateTable",
    "Codec",
    "Column",
    "Ctx",
    "DataKind",
    "DataRows",
    "Intent",
    "LabelledKind",
    "ListRows",
    "MappingError",
    "PackageTable",
    "PermissionTable",
    "ProviderTable",
    "SettingKey",
    "SettingsTable",
    "Split",
    "TableMapping",
    "TypedInsert",
    "Wire",
    "android_id",
    "decode_record",
    "encode_children",
    "encode_row",
    "enum_codec",
    "event_time_codec",
    "flag_codec",
    "local_time_codec",
    "sandbox_id",
    "scaled_codec",
    "tz_name",
]

Wire = Union[str, int, float, None]
"""A value as a provider stores it: text, integer, real, or SQL ``NULL`` (None)."""

BindType = Literal["s", "i", "l", "b", "f", "d", "n"]
"""The type letter of ``content --bind COLUMN:TYPE:VALUE`` (string, integer, long, boolean,
float, double, null), as Android's ``content`` command defines them."""


class MappingError(PhoneEnvError, ValueError):
    """A value or an id that a mapping cannot carry (e.g. an id without the table's prefix)."""


@dataclass(frozen=True)
class Ctx:
    """What a codec may consult: the device's timezone and the whole record or row.

    Args:
        tz: the device's timezone (local times are encoded as epoch milliseconds in it).
        record: the sandbox record being encoded (so a codec may depend on another field).
        row: the provider row being decoded (column → wire value).
    """

    tz: dt.tzinfo
    record: Mapping[str, Any] | None = None
    row: Mapping[str, Wire] | None = None


@dataclass(frozen=True)
class Codec:
    """Converts one sandbox value to its wire value and back.

    Args:
        name: a short name for documentation and errors.
        encode: ``(value, ctx) -> wire``; raises :class:`MappingError` for a value it cannot carry.
        decode: ``(wire, ctx) -> value``; raises :class:`MappingError` for a wire value it cannot read.
    """

    name: str
    encode: Callable[[Any, Ctx], Wire]
    decode: Callable[[Wire, Ctx], Any]


def _text_enc(v: Any, ctx: Ctx) -> Wire:
    if v is not None and not isinstance(v, str):
        raise MappingError(f"expected text or None, got {v!r}")
    return v


def _text_dec(w: Wire, ctx: Ctx) -> Any:
    if w is None or isinstance(w, str):
        return w
    return str(w)


def _int_enc(v: Any, ctx: Ctx) -> Wire:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise MappingError(f"expected an integer, got {v!r}")
    return v


def _int_dec(w: Wire, ctx: Ctx) -> Any:
    return None if w is None else int(w)


def _bool_enc(v: Any, ctx: Ctx) -> Wire:
    if not isinstance(v, bool):
        raise MappingError(f"expected a boolean, got {v!r}")
    return int(v)


def _bool_dec(w: Wire, ctx: Ctx) -> Any:
    if w is None:
        return False
    return int(w) != 0


TEXT = Codec("text", _text_enc, _text_dec)
"""Text or None ↔ a text column or ``NULL``; any characters, unchanged."""
INT = Codec("int", _int_enc, _int_dec)
"""An integer (or None) ↔ an integer column."""
BOOL = Codec("bool", _bool_enc, _bool_dec)
"""True/False ↔ ``1``/``0`` (SQLite has no boolean type; Android providers store 0/1)."""


def enum_codec(name: str, values: Mapping[Any, int]) -> Codec:
    """A codec for a closed set of values stored as integer constants (``{"in": 1, "out": 2}``)."""
    back = {v: k for k, v in values.items()}

    def enc(v: Any, ctx: Ctx) -> Wire:
        if v not in values:
            raise MappingError(f"{name}: {v!r} is not one of {sorted(values)}")
        return values[v]

    def dec(w: Wire, ctx: Ctx) -> Any:
        if w is None or int(w) not in back:
            raise MappingError(f"{name}: {w!r} is not one of {sorted(back)}")
        return back[int(w)]

    return Codec(name, enc, dec)


def local_time_codec(timespec: Literal["seconds", "minutes"]) -> Codec:
    """Local ISO time text (``YYYY-MM-DDTHH:MM[:SS]`` in the device's timezone) ↔ epoch
    milliseconds (UTC), as Android stores ``date``/``dtstart`` columns. Lossless for every local
    time that exists; a time in a daylight-saving gap is normalised the way Android's calendar
    would (so it reads back an hour later)."""

    def enc(v: Any, ctx: Ctx) -> Wire:
        if v is None:
            return None
        try:
            local = dt.datetime.fromisoformat(v)
        except (TypeError, ValueError):
            raise MappingError(f"not a local time: {v!r}") from None
        return round(local.replace(tzinfo=ctx.tz).timestamp() * 1000)

    def dec(w: Wire, ctx: Ctx) -> Any:
        if w is None:
            return None
        moment = dt.datetime.fromtimestamp(int(w) / 1000, ctx.tz).replace(tzinfo=None)
        return moment.isoformat(timespec=timespec)

    return Codec(f"local_time_{timespec}", enc, dec)


def event_time_codec(all_day_field: str, all_day_column: str) -> Codec:
    """A calendar event bound: like ``local_time_codec("minutes")`` for timed events; for all-day
    events Android requires UTC midnight (``CalendarContract.Events``: "If allDay is set to 1
    eventTimezone must be UTC and the time must correspond to a midnight boundary")."""
    timed = local_time_codec("minutes")

    def enc(v: Any, ctx: Ctx) -> Wire:
        if ctx.record is not None and ctx.record.get(all_day_field):
            day = dt.datetime.fromisoformat(v)
            return round(day.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
        return timed.encode(v, ctx)

    def dec(w: Wire, ctx: Ctx) -> Any:
        if ctx.row is not None and ctx.row.get(all_day_column) not in (None, 0, "0"):
            moment = dt.datetime.fromtimestamp(int(w) / 1000, dt.timezone.utc).replace(tzinfo=None)  # type: ignore[arg-type]
            return moment.isoformat(timespec="minutes")
        return timed.decode(w, ctx)

    return Codec("event_time", enc, dec)


def tz_name(tz: dt.tzinfo) -> str:
    """The IANA name of ``tz`` (``ZoneInfo.key``; ``UTC`` for :data:`datetime.timezone.utc`)."""
    key = getattr(tz, "key", None)
    if key:
        return str(key)
    if tz is dt.timezone.utc:
        return "UTC"
    raise MappingError(f"timezone {tz!r} has no IANA name")


def _birthday_enc(v: Any, ctx: Ctx) -> Wire:
    if v is None:
        return None
    if not isinstance(v, str) or not re.fullmatch(r"\d{2}-\d{2}", v):
        raise MappingError(f"birthday must be MM-DD, got {v!r}")
    return f"--{v}"


def _birthday_dec(w: Wire, ctx: Ctx) -> Any:
    if w is None:
        return None
    text = str(w)
    return text[2:] if text.startswith("--") else text[-5:]


BIRTHDAY = Codec("birthday", _birthday_enc, _birthday_dec)
"""A birthday ``MM-DD`` ↔ ``--MM-DD``, the year-less date form the Contacts app writes into a
``contact_event`` row (``ContactsContract.CommonDataKinds.Event.START_DATE``)."""

WEEKDAY_BITS = {"mon": 0x01, "tue": 0x02, "wed": 0x04, "thu": 0x08, "fri": 0x10, "sat": 0x20, "sun": 0x40}
"""AOSP DeskClock's ``Weekdays`` bits for ``daysofweek`` (Monday is bit 0, Sunday bit 6)."""


def _days_enc(v: Any, ctx: Ctx) -> Wire:
    bits = 0
    for day in v or ():
        if day not in WEEKDAY_BITS:
            raise MappingError(f"unknown weekday {day!r}")
        bits |= WEEKDAY_BITS[day]
    return bits


def _days_dec(w: Wire, ctx: Ctx) -> Any:
    bits = int(w or 0)
    return tuple(day for day, bit in WEEKDAY_BITS.items() if bits & bit)


WEEKDAY_MASK = Codec("weekdays", _days_enc, _days_dec)
"""Repeat days, a tuple of ``mon``..``sun`` in week order ↔ DeskClock's ``daysofweek`` bit mask
(the sandbox keeps days deduplicated in week order, so the mask loses nothing)."""


def _empty_none_enc(v: Any, ctx: Ctx) -> Wire:
    if v is not None and (not isinstance(v, str) or v == ""):
        raise MappingError(f"expected non-empty text or None, got {v!r}")
    return "" if v is None else v


def _empty_none_dec(w: Wire, ctx: Ctx) -> Any:
    return None if w in (None, "") else str(w)


EMPTY_IS_NONE = Codec("empty_is_none", _empty_none_enc, _empty_none_dec)
"""None ↔ the empty string (DeskClock stores "no label" as ``""``; an empty label cannot be
given to a sandbox tool, so nothing is lost)."""


def flag_codec(name: str, on: str, off: str, also_on: Sequence[str] = (), also_off: Sequence[str] = ()) -> Codec:
    """A boolean setting stored as text: True ↔ ``on``, False ↔ ``off``; ``also_on``/``also_off``
    are other values Android uses for the same state (``wifi_on`` is ``2`` when Wi-Fi stays on
    in airplane mode). Any other text cannot be read (:class:`MappingError`)."""
    ons, offs = {on, *also_on}, {off, *also_off}

    def enc(v: Any, ctx: Ctx) -> Wire:
        if not isinstance(v, bool):
            raise MappingError(f"{name}: expected a boolean, got {v!r}")
        return on if v else off

    def dec(w: Wire, ctx: Ctx) -> Any:
        text = None if w is None else str(w)
        if text in ons:
            return True
        if text in offs:
            return False
        raise MappingError(f"{name}: cannot read {w!r} (known: {sorted(ons | offs)})")

    return Codec(name, enc, dec)


def scaled_codec(name: str, top: int) -> Codec:
    """A percentage 0–100 ↔ an integer 0–``top`` as text (``screen_brightness`` is 0–255), rounded
    both ways; lossless because each percent step is wider than one unit of ``top`` ≥ 100."""
    if top < 100:
        raise ValueError("a scale below 100 cannot hold every percentage")

    def enc(v: Any, ctx: Ctx) -> Wire:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 100:
            raise MappingError(f"{name}: expected a percentage 0-100, got {v!r}")
        return str(round(v * top / 100))

    def dec(w: Wire, ctx: Ctx) -> Any:
        try:
            raw = int(str(w))
        except ValueError:
            raise MappingError(f"{name}: cannot read {w!r}") from None
        return round(raw * 100 / top)

    return Codec(name, enc, dec)


# ---------------------------------------------------------------------------------------------
# Columns and tables
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One sandbox field stored in one provider column.

    Args:
        name: the Android column (``address``, ``body``, ``date``...).
        type: the ``content --bind`` type letter used to write it.
        codec: converts the sandbox value to the column's value and back (default :data:`TEXT`).
        default: the value the provider stores when an insert leaves the column out.
    """

    name: str
    type: BindType = "s"
    codec: Codec = TEXT
    default: Wire = None

    @property
    def columns(self) -> tuple[Column, ...]:
        """The provider columns this field occupies (just this one)."""
        return (self,)

    def encode_field(self, value: Any, ctx: Ctx) -> tuple[Wire, ...]:
        """The wire values of ``value`` (one per column)."""
        return (self.codec.encode(value, ctx),)

    def decode_field(self, wires: Sequence[Wire], ctx: Ctx) -> Any:
        """The sandbox value from the wire values of :attr:`columns`."""
        return self.codec.decode(wires[0], ctx)


@dataclass(frozen=True)
class Split:
    """One sandbox field stored in several columns (an alarm's ``HH:MM`` as ``hour`` and ``minutes``).

    Args:
        columns: the provider columns, in order.
        encode: ``(value, ctx) -> tuple of wire values`` (one per column).
        decode: ``(tuple of wire values, ctx) -> value``.
    """

    columns: tuple[Column, ...]
    encode: Callable[[Any, Ctx], tuple[Wire, ...]]
    decode: Callable[[Sequence[Wire], Ctx], Any]

    def encode_field(self, value: Any, ctx: Ctx) -> tuple[Wire, ...]:
        """The wire values of ``value`` (one per column)."""
        return self.encode(value, ctx)

    def decode_field(self, wires: Sequence[Wire], ctx: Ctx) -> Any:
        """The sandbox value from the wire values of :attr:`columns`."""
        return self.decode(wires, ctx)


FieldMap = Union[Column, Split]


@dataclass(frozen=True)
class DataKind:
    """One sandbox field stored as a contacts ``data`` row of one MIME type.

    Args:
        mimetype: the row's ``mimetype`` (``vnd.android.cursor.item/phone_v2``).
        value: the column holding the value (``data1``); None means no row at all.
        extra: constant columns every such row carries (``{"data2": ("i", 2)}``: TYPE_MOBILE).
    """

    mimetype: str
    value: Column
    extra: Mapping[str, tuple[BindType, Wire]] = field(default_factory=dict)


@dataclass(frozen=True)
class LabelledKind:
    """Several values of one MIME type kept as ``data`` rows (a contact's phone numbers): the
    primary one (``is_primary`` 1) with its label in ``TYPE`` (``data2``), and the others, each
    a ``{"label": ..., item_key: value}`` dict, as rows with ``is_primary`` 0 in ``_id`` order.

    Args:
        mimetype: the rows' ``mimetype`` (``vnd.android.cursor.item/phone_v2``).
        primary: the sandbox field of the primary value (``phone``); None: no primary row.
        label: the sandbox field of the primary value's label (``phone_label``); absent or None
            means ``default_label``.
        others: the sandbox list field of the other values (``other_phones``).
        item_key: the key of the value in each of ``others`` (``number``).
        labels: label → the kind's ``TYPE`` constant (``{"home": 1, "mobile": 2, ...}``).
        default_label: the label a record leaves out.
    """

    mimetype: str
    primary: str
    label: str
    others: str
    item_key: str
    labels: Mapping[str, int]
    default_label: str
    value_column: str = "data1"
    type_column: str = "data2"
    primary_column: str = "is_primary"

    @property
    def fields(self) -> tuple[str, str, str]:
        """The sandbox fields these rows carry."""
        return (self.primary, self.label, self.others)

    def encode(self, record: Mapping[str, Any]) -> list[dict[str, Wire]]:
        """The rows of ``record``'s values (primary first), ``mimetype`` included."""
        rows: list[dict[str, Wire]] = []
        value = record.get(self.primary)
        if value is not None:
            rows.append(self._row(value, record.get(self.label) or self.default_label, 1))
        for item in record.get(self.others) or ():
            rows.append(self._row(item[self.item_key], item["label"], 0))
        return rows

    def _row(self, value: Any, label: Any, primary: int) -> dict[str, Wire]:
        if not isinstance(value, str) or label not in self.labels:
            raise MappingError(f"{self.mimetype}: cannot carry {value!r} labelled {label!r}")
        return {
            "mimetype": self.mimetype,
            self.value_column: value,
            self.type_column: self.labels[label],
            self.primary_column: primary,
        }

    def decode(self, rows: Sequence[Mapping[str, Wire]]) -> dict[str, Any]:
        """The sandbox fields from this kind's rows (in ``_id`` order): the first primary row is
        the primary value (with no row marked primary, the first row, as Android then uses the
        first number), the rest the others; a row without ``TYPE`` has the default label, and a
        label equal to the default reads as None."""
        back = {v: k for k, v in self.labels.items()}
        marked = next((i for i, r in enumerate(rows) if int(r.get(self.primary_column) or 0)), 0)
        primary, others = None, []
        for i, row in enumerate(rows):
            kind = row.get(self.type_column)
            label = self.default_label if kind is None else back.get(int(kind))
            if label is None:
                raise MappingError(f"{self.mimetype}: unknown TYPE {kind!r}")
            value = None if row.get(self.value_column) is None else str(row.get(self.value_column))
            if i == marked:
                primary = (value, label)
            else:
                others.append({"label": label, self.item_key: value})
        return {
            self.primary: primary[0] if primary else None,
            self.label: primary[1] if primary and primary[1] != self.default_label else None,
            self.others: tuple(others),
        }


@dataclass(frozen=True)
class DataRows:
    """Fields of a record kept as child rows keyed by MIME type (``ContactsContract.Data``).

    A field whose value is None has no row. Rows are written after their parent.

    Args:
        uri: the child rows' URI (``content://com.android.contacts/data``).
        parent_column: the column holding the parent's ``_id`` (``raw_contact_id``).
        kinds: sandbox field → :class:`DataKind`.
        kind_column: the column naming the kind (``mimetype``).
        labelled: kinds with several rows each (:class:`LabelledKind`).
    """

    uri: str
    parent_column: str
    kinds: Mapping[str, DataKind]
    kind_column: str = "mimetype"
    labelled: tuple[LabelledKind, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column these rows use, ``_id`` first."""
        cols = ["_id", self.parent_column, self.kind_column]
        for kind in self.kinds.values():
            for name in (kind.value.name, *kind.extra):
                if name not in cols:
                    cols.append(name)
        for lk in self.labelled:
            for name in (lk.value_column, lk.type_column, lk.primary_column):
                if name not in cols:
                    cols.append(name)
        return tuple(cols)

    @property
    def mimetypes(self) -> tuple[str, ...]:
        """Every MIME type these rows carry."""
        return (*(k.mimetype for k in self.kinds.values()), *(lk.mimetype for lk in self.labelled))

    @property
    def fields(self) -> tuple[str, ...]:
        """Every sandbox field these rows carry."""
        return (*self.kinds, *(f for lk in self.labelled for f in lk.fields))

    def decode(self, rows: Sequence[Mapping[str, Wire]], ctx: Ctx) -> dict[str, Any]:
        """The sandbox fields from a record's rows (``_id`` order); rows of another MIME type (a
        photo) are not ours and are skipped; of a simple kind, the last row counts."""
        out: dict[str, Any] = {name: None for name in self.kinds}
        by_kind = {kind.mimetype: name for name, kind in self.kinds.items()}
        for crow in rows:
            name = by_kind.get(str(crow.get(self.kind_column)))
            if name is not None:
                kind = self.kinds[name]
                out[name] = kind.value.codec.decode(crow.get(kind.value.name), ctx)
        for lk in self.labelled:
            out.update(lk.decode([r for r in rows if str(r.get(self.kind_column)) == lk.mimetype]))
        return out


@dataclass(frozen=True)
class ListRows:
    """A list field kept as one child row per element, in ``_id`` order (calendar attendees).

    Args:
        field: the sandbox list field (``attendees``).
        uri: the child rows' URI.
        parent_column: the column holding the parent's ``_id`` (``event_id``).
        item: the column holding each element.
        derived: columns computed from each element (``attendeeEmail``: the element when it is
            an email address), written but never read back.
    """

    field: str
    uri: str
    parent_column: str
    item: Column
    derived: Mapping[str, tuple[BindType, Callable[[Any], Wire]]] = field(default_factory=dict)

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column these rows use, ``_id`` first."""
        return ("_id", self.parent_column, self.item.name, *self.derived)


ChildRows = Union[DataRows, ListRows]


@dataclass(frozen=True)
class ProviderTable:
    """A sandbox table stored as the rows of a content provider.

    Args:
        table: the sandbox table inside its app (``messages``; stored as ``messages.messages``).
        uri: the provider URI queried for reads.
        fields: sandbox field → :class:`Column` / :class:`Split` (``id`` excluded: it is ``_id``).
        children: fields kept as child rows (:class:`DataRows`, :class:`ListRows`).
        write_uri: the URI for inserts, updates and deletes when it differs (a sync-adapter
            URI, so deletes really delete instead of flagging rows ``deleted``).
        derived: columns every insert binds, computed from the record and the device's
            timezone (``{"eventTimezone": ("s", fn)}``); never read back.
        read_where: a ``--where`` every read adds (``deleted=0``: rows a provider keeps as
            deleted until a sync are not records).
        computed: columns the device derives and shows (``thread_id``), never written; the
            device side computes them with ``(row, all rows) -> wire``.
        root: the provider is not exported: reading or writing it needs ``adb root``.
        order: the sandbox record's field order (``id`` first implied), so decoded records
            print like the sandbox's; default: fields, then child fields.
        optional: fields the sandbox leaves out of a record at their empty value (None, an
            empty list): a decoded record leaves them out too.
        notes: how the mapping chose where Android has no column for a sandbox field.
    """

    table: str
    uri: str
    fields: Mapping[str, FieldMap]
    children: tuple[ChildRows, ...] = ()
    write_uri: str | None = None
    derived: Mapping[str, tuple[BindType, Callable[[Mapping[str, Any], Ctx], Wire]]] = field(default_factory=dict)
    read_where: str | None = None
    computed: Mapping[str, Callable[[Mapping[str, Wire], Sequence[Mapping[str, Wire]]], Wire]] = field(
        default_factory=dict
    )
    root: bool = False
    order: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    notes: str = ""

    @property
    def columns(self) -> tuple[Column, ...]:
        """The provider columns of the main rows (``_id`` excluded), in field order."""
        return tuple(c for fm in self.fields.values() for c in fm.columns)

    @property
    def writes_to(self) -> str:
        """The URI writes go to."""
        return self.write_uri or self.uri


@dataclass(frozen=True)
class SettingKey:
    """One setting stored in Android's settings provider.

    Args:
        namespace: ``system``, ``secure`` or ``global``.
        key: the Android key (``wifi_on``).
        codec: sandbox value ↔ the setting's text (``True`` ↔ ``"1"``).
        setter: the command that really changes the device (``svc wifi enable``) given the
            sandbox value, for settings a plain ``settings put`` would only record; None:
            ``settings put``.
    """

    namespace: Literal["system", "secure", "global"]
    key: str
    codec: Codec
    setter: Callable[[Any], list[str]] | None = None

    def put_args(self, value: Any, ctx: Ctx) -> list[str]:
        """The argument list that sets this setting to ``value`` on a device."""
        if self.setter is not None:
            return self.setter(value)
        return ["settings", "put", self.namespace, self.key, str(self.codec.encode(value, ctx))]

    def get_args(self) -> list[str]:
        """The argument list that prints the setting's value (``null`` when unset)."""
        return ["settings", "get", self.namespace, self.key]

    def delete_args(self) -> list[str]:
        """The argument list that removes the setting (it then reads as the app's default)."""
        return ["settings", "delete", self.namespace, self.key]


@dataclass(frozen=True)
class SettingsTable:
    """A sandbox table keyed by setting name (``{"id": "wifi", "value": True}``), one record per
    mapped key; a key whose Android setting is unset (``null``) has no record.

    Args:
        table: the sandbox table inside its app.
        keys: sandbox key → :class:`SettingKey`.
        unmapped: sandbox keys with no lossless Android home → why (documented, never faked).
    """

    table: str
    keys: Mapping[str, SettingKey]
    unmapped: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PermissionTable:
    """``system.permissions`` (id ``app/android.permission.X``, ``granted``): written with
    ``pm grant|revoke <package> <permission>``, read from the ``runtime permissions:`` section of
    ``dumpsys package <package>``; the package comes from each app's ``package``."""

    table: str = "permissions"


@dataclass(frozen=True)
class PackageTable:
    """``system.apps``: the sandbox apps whose package ``pm list packages`` lists (read-only)."""

    table: str = "apps"


@dataclass(frozen=True)
class CallStateTable:
    """``phone.active``: empty while ``dumpsys telephony.registry`` reports ``mCallState=0``
    (idle); read-only (a call in progress that the driver did not place cannot be described)."""

    table: str = "active"


TableMapping = Union[ProviderTable, SettingsTable, PermissionTable, PackageTable, CallStateTable]


@dataclass(frozen=True)
class Intent:
    """An activity intent for ``am start``; ``data`` may name record fields (``smsto:{number}``).

    Args:
        action: the intent action.
        data: the data URI template, formatted with the record's fields.
        category: an optional category.
        package: the package that should handle it (appended as ``am start``'s last argument).
    """

    action: str
    data: str | None = None
    category: str | None = None
    package: str | None = None

    def args(self, record: Mapping[str, Any] | None = None) -> list[str]:
        """``am start`` argument list for ``record``."""
        out = ["am", "start", "-W", "-a", self.action]
        if self.category:
            out += ["-c", self.category]
        if self.data:
            out += ["-d", self.data.format(**(record or {}))]
        if self.package:
            out.append(self.package)
        return out


@dataclass(frozen=True)
class TypedInsert:
    """Inserts of some records that a tool makes through the app's UI instead of the provider:
    open ``compose`` (focusing the text field), type the ``text_field`` with ``input text``, and
    press ``submit``; the app then writes the row itself. Only during tool calls (fixtures are
    seeded through the provider).

    Args:
        when: the record fields that select the inserts made this way (``{"direction": "out"}``).
        compose: the intent that opens the editor with its text field focused.
        text_field: the field typed into that text field.
        submit: key events that submit (``KEYCODE_ENTER``: Messages with "Enter sends").
    """

    when: Mapping[str, Any]
    compose: Intent
    text_field: str
    submit: tuple[str, ...] = ("KEYCODE_ENTER",)

    def applies(self, record: Mapping[str, Any]) -> bool:
        """Whether ``record`` is inserted through the UI."""
        return all(record.get(k) == v for k, v in self.when.items())


@dataclass(frozen=True)
class AndroidDriver:
    """How an app works on an Android device.

    Args:
        tables: sandbox table (inside the app) → its mapping.
        tools: the tools that work on a device, by full name; every table they read or write
            must be mapped. A tool not listed is not offered on a device (never faked).
        typed: sandbox table → a :class:`TypedInsert` for inserts made through the UI.
        unavailable: tools left out → why.
        notes: device requirements (root, default SMS app, an input method...).
    """

    tables: Mapping[str, TableMapping]
    tools: tuple[str, ...]
    typed: Mapping[str, TypedInsert] = field(default_factory=dict)
    unavailable: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""

    def check_layouts(self, app: str, records: Mapping[str, Any]) -> None:
        """Check that every sandbox field this driver names is a field of its table's record
        layout (``records``: table → the TypedDict an :class:`~phoneenv.app.App` declares), so
        fixtures, tools and the device mapping share one definition. Called when an app class
        is defined.

        Raises:
            MappingError: naming the app's table and the field, e.g. ``contacts.contacts: the
                Android mapping names field 'nick' that the record layout Contact lacks``.
        """
        for table, mapping in self.tables.items():
            named: list[str] = []
            if isinstance(mapping, ProviderTable):
                named += [*mapping.fields, *mapping.order]
                for child in mapping.children:
                    named += list(child.kinds) if isinstance(child, DataRows) else [child.field]
            if table in self.typed:
                named += [*self.typed[table].when, self.typed[table].text_field]
            if not named:
                continue
            layout = records.get(table)
            if layout is None:
                raise MappingError(f"{app}.{table}: mapped to Android but the app declares no record layout for it")
            fields = layout.__required_keys__ | layout.__optional_keys__
            for name in named:
                if name not in fields:
                    raise MappingError(
                        f"{app}.{table}: the Android mapping names field {name!r} that the record layout "
                        f"{layout.__name__} lacks (fields: {', '.join(sorted(fields))})"
                    )


# ---------------------------------------------------------------------------------------------
# Ids and records
# ---------------------------------------------------------------------------------------------


def android_id(rid: str, prefix: str) -> int:
    """The provider ``_id`` of sandbox id ``rid`` (``"c_3"``, prefix ``"c_"`` → 3).

    Raises :class:`MappingError` for an id without the prefix or a positive number after it.
    """
    if not isinstance(rid, str) or not rid.startswith(prefix) or not rid[len(prefix) :].isdigit():
        raise MappingError(f"id {rid!r} is not {prefix}<number>, so it has no provider _id")
    n = int(rid[len(prefix) :])
    if n < 1:
        raise MappingError(f"id {rid!r}: provider ids start at 1")
    return n


def sandbox_id(n: Wire, prefix: str) -> str:
    """The sandbox id of provider ``_id`` ``n`` (3, ``"c_"`` → ``"c_3"``)."""
    if n is None:
        raise MappingError("a row without _id")
    return f"{prefix}{int(n)}"


def encode_row(mapping: ProviderTable, record: Mapping[str, Any], tz: dt.tzinfo) -> dict[str, Wire]:
    """The main provider row of ``record`` (column → wire value; ``_id`` not included).

    Raises :class:`MappingError` for a field the mapping lacks or a value a codec cannot carry.
    """
    ctx = Ctx(tz, record=record)
    row: dict[str, Wire] = {}
    child_fields = _child_fields(mapping)
    for name in record:
        if name != "id" and name not in mapping.fields and name not in child_fields:
            raise MappingError(f"{mapping.table}: field {name!r} has no Android column")
    for name, fm in mapping.fields.items():
        try:
            wires = fm.encode_field(record.get(name), ctx)
        except MappingError as exc:
            raise MappingError(f"{mapping.table}.{name}: {exc}") from None
        for col, wire in zip(fm.columns, wires, strict=True):
            row[col.name] = wire
    for col, (_, fn) in mapping.derived.items():
        row[col] = fn(record, ctx)
    return row


def encode_children(
    mapping: ProviderTable, record: Mapping[str, Any], tz: dt.tzinfo
) -> list[tuple[ChildRows, list[dict[str, Wire]]]]:
    """The child rows of ``record`` per child mapping (parent column not included), in order."""
    ctx = Ctx(tz, record=record)
    out: list[tuple[ChildRows, list[dict[str, Wire]]]] = []
    for child in mapping.children:
        rows: list[dict[str, Wire]] = []
        if isinstance(child, DataRows):
            for name, kind in child.kinds.items():
                value = record.get(name)
                if value is None:
                    continue
                row: dict[str, Wire] = {child.kind_column: kind.mimetype}
                row[kind.value.name] = kind.value.codec.encode(value, ctx)
                for col, (_, wire) in kind.extra.items():
                    row[col] = wire
                rows.append(row)
            for lk in child.labelled:
                rows += lk.encode(record)
        else:
            for item in record.get(child.field) or ():
                row = {child.item.name: child.item.codec.encode(item, ctx)}
                for col, (_, fn) in child.derived.items():
                    row[col] = fn(item)
                rows.append(row)
        out.append((child, rows))
    return out


def decode_record(
    mapping: ProviderTable,
    prefix: str,
    row: Mapping[str, Wire],
    children: Mapping[str, Sequence[Mapping[str, Wire]]],
    tz: dt.tzinfo,
) -> dict[str, Any]:
    """The sandbox record of provider ``row`` (with ``_id``) and its child rows by child URI
    (each list in ``_id`` order). Fields come in the mapping's order, ``id`` first.

    Raises :class:`MappingError` for a value a codec cannot read.
    """
    ctx = Ctx(tz, row=row)
    rec: dict[str, Any] = {"id": sandbox_id(row.get("_id"), prefix)}
    for name, fm in mapping.fields.items():
        rec[name] = fm.decode_field(tuple(row.get(c.name) for c in fm.columns), ctx)
    for child in mapping.children:
        rows = children.get(child.uri, ())
        if isinstance(child, DataRows):
            rec.update(child.decode(rows, ctx))
        else:
            rec[child.field] = tuple(child.item.codec.decode(crow.get(child.item.name), ctx) for crow in rows)
    for name in mapping.optional:
        if rec.get(name) in (None, (), []):
            rec.pop(name, None)
    return _ordered(mapping, rec)


def _child_fields(mapping: ProviderTable) -> set[str]:
    names: set[str] = set()
    for child in mapping.children:
        if isinstance(child, DataRows):
            names.update(child.fields)
        else:
            names.add(child.field)
    return names


def _ordered(mapping: ProviderTable, rec: dict[str, Any]) -> dict[str, Any]:
    if not mapping.order:
        return rec
    return {k: rec[k] for k in ("id", *mapping.order) if k in rec}
