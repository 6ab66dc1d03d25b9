"""Calendar: events with a start and end in the phone's local time, attendees and notes.

Table ``calendar.events``: ``{"id": "ev_1", "title": str, "start": "YYYY-MM-DDTHH:MM",
"end": "YYYY-MM-DDTHH:MM", "location": str | None, "attendees": tuple[str, ...] (contact names or
emails), "notes": str | None, "all_day": bool}``. An all-day event runs from midnight to midnight
and does not block time: it is never reported as a conflict and ``free_slots`` ignores it.
Overlapping timed events are allowed; creating or moving one reports the overlaps as ``conflicts``.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import TIME_PATTERN, App, Deleted, check_year, format_local_time, id_key, parse_local_time
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import BOOL, AndroidDriver, Column, ListRows, ProviderTable, event_time_codec, tz_name
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


class EventChange(Event):
    """An event just created or changed, with the ids of timed events it overlaps."""

    conflicts: list[str]


class EventList(TypedDict):
    """Events sorted by start."""

    events: list[Event]
    total: int


class DayEvents(TypedDict):
    """Events overlapping the days from ``date`` to ``last_date`` (inclusive), sorted by start."""

    date: str
    last_date: str
    events: list[Event]
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
            },
            children=(
                ListRows(
                    field="attendees",
                    uri="content://com.android.calendar/attendees",
                    parent_column="event_id",
                    item=Column("attendeeName"),
                    derived={"attendeeEmail": ("s", lambda a: a if "@" in a else None)},
                ),
            ),
            derived={
                "calendar_id": ("i", lambda rec, ctx: 1),
                "eventTimezone": ("s", lambda rec, ctx: "UTC" if rec.get("all_day") else tz_name(ctx.tz)),
            },
            order=("title", "start", "end", "location", "attendees", "notes", "all_day"),
            notes="CalendarContract.Events in the local calendar with _id 1: start/end → dtstart/dtend (epoch "
            "ms; UTC midnights for all-day events, as Android requires), location → eventLocation, notes → "
            "description, all_day → allDay; each attendee is an Attendees row (attendeeName, and attendeeEmail "
            "when it is an address), in _id order.",
        )
    },
    tools=(
        "calendar.add_attendee",
        "calendar.create_event",
        "calendar.delete_event",
        "calendar.free_slots",
        "calendar.get_event",
        "calendar.list_events",
        "calendar.remove_attendee",
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
    @staticmethod
    def _out(rec: dict[str, Any]) -> Event:
        return {
            "id": rec["id"],
            "title": rec["title"],
            "start": rec["start"],
            "end": rec["end"],
            "location": rec.get("location"),
            "attendees": list(rec.get("attendees") or ()),
            "notes": rec.get("notes"),
            "all_day": bool(rec.get("all_day", False)),
        }

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
    def get_event(self, event_id: str) -> Event:
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

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE))
    def create_event(
        self,
        title: Title,
        start: LocalTime,
        end: LocalTime,
        location: Location | None = None,
        attendees: Annotated[list[Attendee], Field(max_length=50)] | None = None,
        notes: Notes | None = None,
        all_day: bool = False,
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
        """
        s, e = self._times(_minute(start, "start"), _minute(end, "end"), all_day, end_given=True)
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
        conflicts = self._conflicts(s, e, all_day)
        self.put("events", rec)
        self.show_detail("events", rec["id"])
        return {**self._out(rec), "conflicts": conflicts}

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE))
    def update_event(
        self,
        event_id: str,
        title: Title | None = None,
        start: LocalTime | None = None,
        end: LocalTime | None = None,
        location: Location | None = None,
        notes: Notes | None = None,
    ) -> EventChange:
        """Change an event; fields left out stay as they are. Moving the start without giving an
        end keeps the event's length. The result's "conflicts" lists the ids of the timed events
        it now overlaps.

        Args:
            event_id: The event's id, e.g. "ev_3".
            title: New title.
            start: New start, local time YYYY-MM-DDTHH:MM.
            end: New end, local time YYYY-MM-DDTHH:MM; must be after the start.
            location: New location.
            notes: New notes (replace the old ones).
        """
        rec = self.require("events", event_id, "event", "calendar.search_events or calendar.list_events")
        changes: dict[str, Any] = {}
        if title is not None:
            if not title.strip():
                raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the title is blank", hint="give a title", path="/title")
            changes["title"] = title.strip()
        if location is not None:
            changes["location"] = location.strip()
        if notes is not None:
            changes["notes"] = notes
        if start is not None or end is not None:
            old_s = dt.datetime.fromisoformat(rec["start"])
            old_e = dt.datetime.fromisoformat(rec["end"])
            all_day = bool(rec.get("all_day", False))
            new_s = _minute(start, "start") if start is not None else old_s
            if all_day:  # an all-day event moves by whole days
                new_s = dt.datetime.combine(new_s.date(), dt.time())
            new_e = _minute(end, "end") if end is not None else new_s + (old_e - old_s)
            changes["start"], changes["end"] = self._times(new_s, new_e, all_day, end_given=end is not None)
        if not changes:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "nothing to update",
                hint="pass at least one field to change",
            )
        new = self.patch("events", event_id, **changes)
        conflicts = self._conflicts(new["start"], new["end"], bool(new.get("all_day", False)), skip=event_id)
        self.show_detail("events", event_id)
        return {**self._out(new), "conflicts": conflicts}

    @tool(effect=Effect.SENSITIVE, permissions=(READ, WRITE))
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

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE))
    def add_attendee(self, event_id: str, attendee: Attendee) -> Event:
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

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE))
    def remove_attendee(self, event_id: str, attendee: Attendee) -> Event:
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
