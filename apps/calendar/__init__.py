"""Calendar: events with a start and end in the phone's local time, attendees and notes.

Table ``calendar.events``: ``{"id": "ev_1", "title": str, "start": "YYYY-MM-DDTHH:MM",
"end": "YYYY-MM-DDTHH:MM", "location": str | None, "attendees": tuple[str, ...] (contact names or
emails), "notes": str | None, "all_day": bool}``. An all-day event runs from midnight to midnight
and does not block time: it is never reported as a conflict and ``free_slots`` ignores it.
Overlapping timed events are allowed; creating or moving one reports the overlaps as ``conflicts``.

Two optional fields, absent at their empty value (so existing records and fixtures keep their
meaning): ``reminders``, minutes before the start at which the phone alerts (ascending, distinct,
e.g. ``[10, 1440]``), and ``timezone``, the IANA zone the event was set in when it is not the
phone's own (``"America/New_York"``). ``start``/``end`` are always the phone's local time, so
listing, conflicts and free slots need no conversion; tools also answer with the zone and the
times in it (``zone_start``/``zone_end``).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field
from typing_extensions import NotRequired, TypedDict

from phoneenv.app import TIME_PATTERN, App, Deleted, check_year, format_local_time, id_key, parse_local_time
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import (
    BOOL,
    INT,
    AndroidDriver,
    Codec,
    Column,
    Ctx,
    ListRows,
    MappingError,
    ProviderTable,
    Wire,
    event_time_codec,
    tz_name,
)
from phoneenv.tools import ToolError, tool

READ = "android.permission.READ_CALENDAR"
WRITE = "android.permission.WRITE_CALENDAR"

DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
CLOCK_PATTERN = r"^([01]\d|2[0-3]):[0-5]\d$"

LocalTime = Annotated[
    str,
    Field(pattern=TIME_PATTERN, description="Local time YYYY-MM-DDTHH:MM, e.g. 2026-11-30T16:00"),
]
Date = Annotated[str, Field(pattern=DATE_PATTERN, description="Date YYYY-MM-DD")]
ClockTime = Annotated[str, Field(pattern=CLOCK_PATTERN, description="Time of day HH:MM (24-hour)")]
Title = Annotated[str, Field(min_length=1, max_length=200)]
Location = Annotated[str, Field(min_length=1, max_length=200)]
Notes = Annotated[str, Field(max_length=2000)]
Attendee = Annotated[str, Field(min_length=1, max_length=100, description="A contact's name or an email address")]
MinutesBefore = Annotated[
    int, Field(ge=0, le=40320, description="Minutes before the start, 0 to 40320 (four weeks), e.g. 10 or 1440")
]
Zone = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+){0,2}$",
        description='An IANA time zone, e.g. "America/New_York", "Europe/London", "Asia/Tokyo"',
    ),
]
MAX_REMINDERS = 5
"""Reminders one event may have (a calendar's ``Calendars.MAX_REMINDERS``; 5 in Google Calendar)."""


class Event(TypedDict):
    """A calendar event."""

    id: str
    title: str
    start: str
    end: str
    location: str | None
    attendees: list[str]
    notes: str | None
    all_day: bool
    reminders: NotRequired[list[int]]
    timezone: NotRequired[str]


class EventOut(TypedDict):
    """A calendar event as tools show it: ``timezone`` is the event's zone (the phone's when it
    has none of its own), ``zone_start``/``zone_end`` its times in that zone, ``reminders`` the
    minutes before the start at which the phone alerts (ascending)."""

    id: str
    title: str
    start: str
    end: str
    location: str | None
    attendees: list[str]
    notes: str | None
    all_day: bool
    reminders: list[int]
    timezone: str
    zone_start: str
    zone_end: str


class EventChange(EventOut):
    """An event just created or changed, with the ids of timed events it overlaps."""

    conflicts: list[str]


class EventList(TypedDict):
    """Events sorted by start."""

    events: list[EventOut]
    total: int


class DayEvents(TypedDict):
    """Events overlapping the days from ``date`` to ``last_date`` (inclusive), sorted by start."""

    date: str
    last_date: str
    events: list[EventOut]
    total: int


class Slot(TypedDict):
    """A free interval."""

    start: str
    end: str
    minutes: int


class FreeSlots(TypedDict):
    """Free intervals of a day at least ``duration_minutes`` long, in order."""

    date: str
    duration_minutes: int
    slots: list[Slot]


def _by_start(rec: dict[str, Any]) -> tuple[str, str, tuple[str, int]]:
    return rec["start"], rec["end"], id_key(rec["id"])


def parse_date(value: str, arg: str) -> dt.date:
    """Parse a ``YYYY-MM-DD`` argument; an impossible date, or one outside the years
    :data:`~phoneenv.app.MIN_YEAR` to :data:`~phoneenv.app.MAX_YEAR`, is ``invalid_arguments``
    at ``/arg``."""
    try:
        parsed = dt.date.fromisoformat(value)
    except ValueError:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"argument {arg!r}: {value!r} is not a valid date",
            hint="use YYYY-MM-DD, e.g. 2026-11-30",
            path=f"/{arg}",
        ) from None
    check_year(parsed, value, arg)
    return parsed


def _minute(value: str, arg: str) -> dt.datetime:
    return parse_local_time(value, arg).replace(second=0, microsecond=0)


def _whole_days(start: dt.datetime, end: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """Widen ``[start, end)`` to midnights: start's midnight to the first midnight at or after end."""
    first = dt.datetime.combine(start.date(), dt.time())
    last = dt.datetime.combine(end.date(), dt.time())
    if last < end or last <= first:
        last += dt.timedelta(days=1)
    return first, last


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


EVENT_TIME = event_time_codec("all_day", "allDay")


def _zone_enc(v: Any, ctx: Ctx) -> Wire:
    if ctx.record is not None and ctx.record.get("all_day"):
        if v is not None:
            raise MappingError("an all-day event has no time zone of its own")
        return "UTC"
    if v is not None and not isinstance(v, str):
        raise MappingError(f"expected an IANA zone, got {v!r}")
    return v if v is not None else tz_name(ctx.tz)


def _zone_dec(w: Wire, ctx: Ctx) -> Any:
    if ctx.row is not None and ctx.row.get("allDay") not in (None, 0, "0"):
        return None
    if w is None or str(w) == tz_name(ctx.tz):
        return None
    return str(w)


EVENT_ZONE = Codec("event_zone", _zone_enc, _zone_dec)
"""An event's own zone ↔ ``eventTimezone``: None (the phone's zone) is the device's zone name and
reads back as None; all-day events are ``UTC`` (as Android requires) and have no zone."""

ANDROID = AndroidDriver(
    tables={
        "events": ProviderTable(
            table="events",
            uri="content://com.android.calendar/events",
            write_uri="content://com.android.calendar/events?caller_is_syncadapter=true"
            "&account_name=phoneenv&account_type=LOCAL",
            read_where="deleted=0",
            computed={"deleted": lambda row, rows: 0},
            fields={
                "title": Column("title"),
                "start": Column("dtstart", "l", EVENT_TIME),
                "end": Column("dtend", "l", EVENT_TIME),
                "location": Column("eventLocation"),
                "notes": Column("description"),
                "all_day": Column("allDay", "i", BOOL, default=0),
                "timezone": Column("eventTimezone", codec=EVENT_ZONE),
            },
            children=(
                ListRows(
                    field="attendees",
                    uri="content://com.android.calendar/attendees",
                    parent_column="event_id",
                    item=Column("attendeeName"),
                    derived={"attendeeEmail": ("s", lambda a: a if "@" in a else None)},
                ),
                ListRows(
                    field="reminders",
                    uri="content://com.android.calendar/reminders",
                    parent_column="event_id",
                    item=Column("minutes", "i", INT),
                    derived={"method": ("i", lambda m: 1)},
                ),
            ),
            derived={
                "calendar_id": ("i", lambda rec, ctx: 1),
                "hasAlarm": ("i", lambda rec, ctx: int(bool(rec.get("reminders")))),
            },
            optional=("reminders", "timezone"),
            order=("title", "start", "end", "location", "attendees", "notes", "all_day", "reminders", "timezone"),
            notes="CalendarContract.Events in the local calendar with _id 1: start/end → dtstart/dtend (epoch "
            "ms; UTC midnights for all-day events, as Android requires), location → eventLocation, notes → "
            "description, all_day → allDay; each attendee is an Attendees row (attendeeName, and attendeeEmail "
            "when it is an address), in _id order; each reminder is a Reminders row (minutes, METHOD_ALERT 1) in "
            "ascending order, with hasAlarm set; an event's own zone is eventTimezone (the device's zone when it "
            "has none, UTC for all-day events).",
        )
    },
    tools=(
        "calendar.add_attendee",
        "calendar.add_reminder",
        "calendar.create_event",
        "calendar.delete_event",
        "calendar.free_slots",
        "calendar.get_event",
        "calendar.list_events",
        "calendar.remove_attendee",
        "calendar.remove_reminder",
        "calendar.search_events",
        "calendar.update_event",
    ),
    notes="Needs a local calendar with _id 1 (the Calendar app creates it on first start).",
)
"""The calendar on a device: ``content://com.android.calendar`` events and attendees."""


class Calendar(App):
    """The calendar."""

    name = "calendar"
    title = "Calendar"
    domain = Domain.SCHEDULING
    package = "com.google.android.calendar"
    permissions = (READ, WRITE)
    tables: ClassVar[dict[str, str]] = {"events": "ev_"}
    records: ClassVar[dict[str, Any]] = {"events": Event}
    android = ANDROID

    # -- helpers --------------------------------------------------------------------------------
    def _out(self, rec: dict[str, Any]) -> EventOut:
        zone = rec.get("timezone")
        tz = ZoneInfo(zone) if zone else self.phone.tz
        return {
            "id": rec["id"],
            "title": rec["title"],
            "start": rec["start"],
            "end": rec["end"],
            "location": rec.get("location"),
            "attendees": list(rec.get("attendees") or ()),
            "notes": rec.get("notes"),
            "all_day": bool(rec.get("all_day", False)),
            "reminders": list(rec.get("reminders") or ()),
            "timezone": zone or tz_name(self.phone.tz),
            "zone_start": rec["start"] if rec.get("all_day") else self._to_zone(rec["start"], tz),
            "zone_end": rec["end"] if rec.get("all_day") else self._to_zone(rec["end"], tz),
        }

    def _to_zone(self, local: str, tz: dt.tzinfo) -> str:
        """Phone-local time ``local`` as the wall-clock time in ``tz``."""
        moment = dt.datetime.fromisoformat(local).replace(tzinfo=self.phone.tz)
        return format_local_time(moment.astimezone(tz).replace(tzinfo=None))

    def _from_zone(self, wall: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
        """Wall-clock time ``wall`` in ``tz`` as the phone's local time."""
        return wall.replace(tzinfo=tz).astimezone(self.phone.tz).replace(tzinfo=None)

    def _zone(self, zone: str) -> tuple[dt.tzinfo, str | None]:
        """The zone named ``zone`` and what the event stores (None when it is the phone's own)."""
        try:
            tz = ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"argument 'timezone': {zone!r} is not a known time zone",
                hint='give an IANA zone such as "America/New_York" or "Europe/Berlin"',
                path="/timezone",
            ) from None
        return tz, (None if zone == tz_name(self.phone.tz) else zone)

    @staticmethod
    def _reminders(minutes: list[int]) -> list[int]:
        seen: set[int] = set()
        for i, m in enumerate(minutes):
            if m in seen:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"the reminder {m} minutes before is listed twice",
                    hint="list each reminder once",
                    path=f"/reminders/{i}",
                )
            seen.add(m)
        if len(seen) > MAX_REMINDERS:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{len(seen)} reminders; an event may have at most {MAX_REMINDERS}",
                hint="keep the reminders the user asked for",
                path="/reminders",
            )
        return sorted(seen)

    @staticmethod
    def _with(rec: dict[str, Any], **fields: Any) -> dict[str, Any]:
        """``rec`` with ``fields`` set; an optional field at its empty value is dropped."""
        new = {**rec, **fields}
        for key in ("reminders", "timezone"):
            if key in new and not new[key]:
                del new[key]
        return new

    def _conflicts(self, start: str, end: str, all_day: bool, skip: str | None = None) -> list[str]:
        """Ids of timed events other than ``skip`` overlapping ``[start, end)``, by start."""
        if all_day:
            return []
        hits = [
            r
            for r in self.t("events").values()
            if r["id"] != skip and not r.get("all_day", False) and r["start"] < end and start < r["end"]
        ]
        return [r["id"] for r in sorted(hits, key=_by_start)]

    def _times(self, start: dt.datetime, end: dt.datetime, all_day: bool, end_given: bool) -> tuple[str, str]:
        if all_day:
            start, end = _whole_days(start, end)
        elif end <= start:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"the event would end ({format_local_time(end)}) before it starts ({format_local_time(start)})",
                hint="give an end after the start",
                path="/end" if end_given else "/start",
            )
        return format_local_time(start), format_local_time(end)

    def _attendees(self, attendees: list[str]) -> tuple[str, ...]:
        seen: dict[str, int] = {}
        out = []
        for i, raw in enumerate(attendees):
            name = " ".join(raw.split())
            if not name:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"attendee {i} is blank",
                    hint="give each attendee's name or email",
                    path=f"/attendees/{i}",
                )
            key = name.casefold()
            if key in seen:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"attendee {name!r} is listed twice (positions {seen[key]} and {i})",
                    hint="list each attendee once",
                    path=f"/attendees/{i}",
                )
            seen[key] = i
            out.append(name)
        return tuple(out)

    def row(self, table: str, record: dict[str, Any]) -> str:
        when = record["start"][:10] + (" all day" if record.get("all_day") else f" {record['start'][11:16]}")
        where = f" @ {record['location']}" if record.get("location") else ""
        return f"{when}  {record['title']}{where}"

    # -- tools ----------------------------------------------------------------------------------
    @tool(permissions=(READ,))
    def list_events(
        self,
        date: Date | None = None,
        days: Annotated[int, Field(ge=1, le=31)] = 1,
    ) -> DayEvents:
        """List the events on a day, or on several days from it, sorted by start. Events that
        began earlier but are still running are included.

        Args:
            date: The first day, YYYY-MM-DD; today (on the phone's clock) if left out.
            days: How many days to list, 1 for just that day, 7 for a week.
        """
        first = parse_date(date, "date") if date is not None else self.now().date()
        last = first + dt.timedelta(days=days - 1)
        lo = format_local_time(dt.datetime.combine(first, dt.time()))
        hi = format_local_time(dt.datetime.combine(last + dt.timedelta(days=1), dt.time()))
        recs = sorted(
            (r for r in self.t("events").values() if r["start"] < hi and (lo < r["end"] or r["start"] >= lo)),
            key=_by_start,
        )
        self.show_list("events", [r["id"] for r in recs])
        return {
            "date": first.isoformat(),
            "last_date": last.isoformat(),
            "events": [self._out(r) for r in recs],
            "total": len(recs),
        }

    @tool(permissions=(READ,))
    def get_event(self, event_id: str) -> EventOut:
        """Get one event by id.

        Args:
            event_id: The event's id, e.g. "ev_3".
        """
        rec = self.require("events", event_id, "event", "calendar.search_events or calendar.list_events")
        self.show_detail("events", event_id)
        return self._out(rec)

    @tool(permissions=(READ,))
    def search_events(
        self,
        query: Annotated[str, Field(min_length=1, max_length=100)],
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
    ) -> EventList:
        """Find events whose title, location or an attendee contains the query (case-insensitive),
        sorted by start.

        Args:
            query: Words to look for, e.g. "dentist", a place, or an attendee's name.
            limit: Maximum number of events returned.
        """
        q = _norm(query)
        hits = [
            r
            for r in self.t("events").values()
            if q in _norm(r["title"])
            or q in _norm(r.get("location") or "")
            or any(q in _norm(a) for a in r.get("attendees") or ())
        ]
        hits.sort(key=_by_start)
        page = hits[:limit]
        self.show_list("events", [r["id"] for r in page])
        return {"events": [self._out(r) for r in page], "total": len(hits)}

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("events",))
    def create_event(
        self,
        title: Title,
        start: LocalTime,
        end: LocalTime,
        location: Location | None = None,
        attendees: Annotated[list[Attendee], Field(max_length=50)] | None = None,
        notes: Notes | None = None,
        all_day: bool = False,
        timezone: Zone | None = None,
        reminders: Annotated[list[MinutesBefore], Field(max_length=MAX_REMINDERS)] | None = None,
    ) -> EventChange:
        """Create an event. Overlapping another event is allowed: the result's "conflicts" lists
        the ids of the timed events it overlaps, so you can tell the user or reschedule.

        Args:
            title: What the event is, e.g. "Dentist".
            start: When it starts, local time YYYY-MM-DDTHH:MM.
            end: When it ends, local time YYYY-MM-DDTHH:MM; must be after start.
            location: Where it takes place.
            attendees: Who else attends: contact names or email addresses.
            notes: Free-text notes.
            all_day: An all-day event: start and end are widened to whole days (midnight to
                midnight) and it never conflicts with other events.
            timezone: The time zone start and end are given in, when it is not the phone's
                (an event "at 9:00 New York time": "America/New_York"); the event keeps it and
                is shown in it. Not for all-day events.
            reminders: When to alert before the start, in minutes (10, 60, 1440 for a day).
        """
        s_local, e_local = _minute(start, "start"), _minute(end, "end")
        zone: str | None = None
        if timezone is not None:
            if all_day:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    "an all-day event has no time zone",
                    hint="leave out timezone for an all-day event",
                    path="/timezone",
                )
            tz, zone = self._zone(timezone)
            s_local, e_local = self._from_zone(s_local, tz), self._from_zone(e_local, tz)
        s, e = self._times(s_local, e_local, all_day, end_given=True)
        title = title.strip()
        if not title:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "the title is blank", hint="give the event a title", path="/title"
            )
        rec = {
            "id": self.new_id("events"),
            "title": title,
            "start": s,
            "end": e,
            "location": location.strip() if location else None,
            "attendees": self._attendees(attendees or []),
            "notes": notes or None,
            "all_day": all_day,
        }
        rec = self._with(rec, reminders=tuple(self._reminders(reminders or [])), timezone=zone)  # absent when empty
        conflicts = self._conflicts(s, e, all_day)
        self.put("events", rec)
        self.show_detail("events", rec["id"])
        return {**self._out(rec), "conflicts": conflicts}

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("events",))
    def update_event(
        self,
        event_id: str,
        title: Title | None = None,
        start: LocalTime | None = None,
        end: LocalTime | None = None,
        location: Location | None = None,
        notes: Notes | None = None,
        timezone: Zone | None = None,
    ) -> EventChange:
        """Change an event; fields left out stay as they are. Moving the start without giving an
        end keeps the event's length. Start and end are read in the event's time zone (the new
        one when timezone is given); changing only the time zone keeps the clock times, as the
        Calendar app does ("make it 9:00 London time"). The result's "conflicts" lists the ids of
        the timed events it now overlaps.

        Args:
            event_id: The event's id, e.g. "ev_3".
            title: New title.
            start: New start, local time YYYY-MM-DDTHH:MM.
            end: New end, local time YYYY-MM-DDTHH:MM; must be after the start.
            location: New location.
            notes: New notes (replace the old ones).
            timezone: The event's new time zone, an IANA name ("Europe/London").
        """
        rec = self.require("events", event_id, "event", "calendar.search_events or calendar.list_events")
        changes: dict[str, Any] = {}
        old_tz = ZoneInfo(rec["timezone"]) if rec.get("timezone") else self.phone.tz
        new_tz = old_tz
        if timezone is not None:
            if rec.get("all_day"):
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    "an all-day event has no time zone",
                    hint="leave out timezone for an all-day event",
                    path="/timezone",
                )
            new_tz, changes["timezone"] = self._zone(timezone)
        if title is not None:
            if not title.strip():
                raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the title is blank", hint="give a title", path="/title")
            changes["title"] = title.strip()
        if location is not None:
            changes["location"] = location.strip()
        if notes is not None:
            changes["notes"] = notes
        if start is not None or end is not None or timezone is not None:
            all_day = bool(rec.get("all_day", False))
            if all_day:
                old_s = dt.datetime.fromisoformat(rec["start"])
                old_e = dt.datetime.fromisoformat(rec["end"])
            else:  # the clock times in the event's zone
                old_s = dt.datetime.fromisoformat(self._to_zone(rec["start"], old_tz))
                old_e = dt.datetime.fromisoformat(self._to_zone(rec["end"], old_tz))
            new_s = _minute(start, "start") if start is not None else old_s
            if all_day:  # an all-day event moves by whole days
                new_s = dt.datetime.combine(new_s.date(), dt.time())
            new_e = _minute(end, "end") if end is not None else new_s + (old_e - old_s)
            if not all_day:
                new_s, new_e = self._from_zone(new_s, new_tz), self._from_zone(new_e, new_tz)
            changes["start"], changes["end"] = self._times(new_s, new_e, all_day, end_given=end is not None)
        if not changes:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "nothing to update",
                hint="pass at least one field to change",
            )
        new = self.rewrite("events", event_id, self._with(rec, **changes))
        conflicts = self._conflicts(new["start"], new["end"], bool(new.get("all_day", False)), skip=event_id)
        self.show_detail("events", event_id)
        return {**self._out(new), "conflicts": conflicts}

    @tool(effect=Effect.SENSITIVE, permissions=(READ, WRITE), writes=("events",))
    def delete_event(self, event_id: str) -> Deleted:
        """Delete an event.

        Args:
            event_id: The event's id, e.g. "ev_3".
        """
        rec = self.require("events", event_id, "event", "calendar.search_events or calendar.list_events")
        self.remove("events", event_id)
        day = rec["start"][:10]
        same_day = [r for r in self.t("events").values() if r["start"][:10] == day]
        self.show_list("events", [r["id"] for r in sorted(same_day, key=_by_start)])
        return {"deleted": event_id}

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("events",))
    def add_attendee(self, event_id: str, attendee: Attendee) -> EventOut:
        """Invite someone to an event.

        Args:
            event_id: The event's id, e.g. "ev_3".
            attendee: The contact's name or email address.
        """
        rec = self.require("events", event_id, "event", "calendar.search_events or calendar.list_events")
        name = " ".join(attendee.split())
        if not name:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the attendee is blank", path="/attendee")
        current = tuple(rec.get("attendees") or ())
        for a in current:
            if a.casefold() == name.casefold():
                raise ToolError(
                    ErrorKind.CONFLICT,
                    f"{a} already attends {rec['title']!r}",
                    hint="nothing to do; calendar.get_event shows the attendees",
                    candidates=list(current),
                )
        new = self.patch("events", event_id, attendees=(*current, name))
        self.show_detail("events", event_id)
        return self._out(new)

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("events",))
    def remove_attendee(self, event_id: str, attendee: Attendee) -> EventOut:
        """Remove someone from an event's attendees.

        Args:
            event_id: The event's id, e.g. "ev_3".
            attendee: The attendee's name or email address as listed on the event.
        """
        rec = self.require("events", event_id, "event", "calendar.search_events or calendar.list_events")
        current = tuple(rec.get("attendees") or ())
        key = " ".join(attendee.split()).casefold()
        kept = tuple(a for a in current if a.casefold() != key)
        if len(kept) == len(current):
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"{attendee!r} does not attend {rec['title']!r}",
                hint="use one of the event's attendees" if current else "the event has no attendees",
                candidates=list(current),
            )
        new = self.patch("events", event_id, attendees=kept)
        self.show_detail("events", event_id)
        return self._out(new)

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("events",))
    def add_reminder(self, event_id: str, minutes_before: MinutesBefore) -> EventOut:
        """Add a reminder to an event: the phone alerts this many minutes before it starts. An
        event may have several reminders (at most five).

        Args:
            event_id: The event's id, e.g. "ev_3".
            minutes_before: Minutes before the start: 0 (at the start), 10, 60 (an hour),
                1440 (a day).
        """
        rec = self.require("events", event_id, "event", "calendar.search_events or calendar.list_events")
        current = tuple(rec.get("reminders") or ())
        if minutes_before in current:
            raise ToolError(
                ErrorKind.CONFLICT,
                f"{rec['title']!r} already has a reminder {minutes_before} minutes before",
                hint="nothing to do; calendar.get_event shows the reminders",
                candidates=[str(m) for m in current],
            )
        if len(current) >= MAX_REMINDERS:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"{rec['title']!r} already has {MAX_REMINDERS} reminders, the most an event may have",
                hint="remove one with calendar.remove_reminder first",
                candidates=[str(m) for m in current],
            )
        new = self.patch("events", event_id, reminders=tuple(sorted((*current, minutes_before))))
        self.show_detail("events", event_id)
        return self._out(new)

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("events",))
    def remove_reminder(self, event_id: str, minutes_before: MinutesBefore) -> EventOut:
        """Remove one reminder from an event.

        Args:
            event_id: The event's id, e.g. "ev_3".
            minutes_before: The reminder to remove, as minutes before the start (as
                calendar.get_event lists it).
        """
        rec = self.require("events", event_id, "event", "calendar.search_events or calendar.list_events")
        current = tuple(rec.get("reminders") or ())
        if minutes_before not in current:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"{rec['title']!r} has no reminder {minutes_before} minutes before",
                hint="use one of the event's reminders" if current else "the event has no reminders",
                candidates=[str(m) for m in current],
            )
        kept = tuple(m for m in current if m != minutes_before)
        new = self.rewrite("events", event_id, self._with(rec, reminders=kept))
        self.show_detail("events", event_id)
        return self._out(new)

    @tool(permissions=(READ,))
    def free_slots(
        self,
        date: Date,
        duration_minutes: Annotated[int, Field(ge=1, le=1440)],
        from_time: ClockTime = "09:00",
        to_time: ClockTime = "18:00",
    ) -> FreeSlots:
        """Find free time on a day: the gaps between timed events, within working hours, that are
        at least as long as the meeting you want to place. All-day events do not block time.

        Args:
            date: The day, YYYY-MM-DD.
            duration_minutes: The minimum length of a free slot in minutes, e.g. 30.
            from_time: Earliest time of day to consider, HH:MM.
            to_time: Latest time of day a slot may end, HH:MM; after from_time.
        """
        day = parse_date(date, "date")
        lo = dt.datetime.combine(day, dt.time.fromisoformat(from_time))
        hi = dt.datetime.combine(day, dt.time.fromisoformat(to_time))
        if hi <= lo:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"to_time {to_time} is not after from_time {from_time}",
                hint="give a to_time later in the day than from_time",
                path="/to_time",
            )
        lo_s, hi_s = format_local_time(lo), format_local_time(hi)
        busy = sorted(
            (
                r
                for r in self.t("events").values()
                if not r.get("all_day", False) and r["start"] < hi_s and lo_s < r["end"]
            ),
            key=_by_start,
        )
        slots: list[Slot] = []
        cursor = lo
        need = dt.timedelta(minutes=duration_minutes)
        for r in busy:
            b_start = max(dt.datetime.fromisoformat(r["start"]), lo)
            if b_start - cursor >= need:
                slots.append(self._slot(cursor, b_start))
            cursor = max(cursor, min(dt.datetime.fromisoformat(r["end"]), hi))
        if hi - cursor >= need:
            slots.append(self._slot(cursor, hi))
        self.show_list("events", [r["id"] for r in busy])
        return {"date": day.isoformat(), "duration_minutes": duration_minutes, "slots": slots}

    @staticmethod
    def _slot(start: dt.datetime, end: dt.datetime) -> Slot:
        return {
            "start": format_local_time(start),
            "end": format_local_time(end),
            "minutes": int((end - start).total_seconds() // 60),
        }
