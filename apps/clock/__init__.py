"""Clock: the current time, alarms, countdown timers and world time.

Tables:

- ``clock.alarms``: ``{"id": "al_1", "time": "HH:MM", "label": str | None, "enabled": bool,
  "days": ("mon", "fri")}``; ``days`` empty means a one-off alarm (it rings at the next ``time``).
- ``clock.timers``: ``{"id": "tm_1", "label": str | None, "duration_s": int,
  "started": "YYYY-MM-DDTHH:MM:SS", "ends": "YYYY-MM-DDTHH:MM:SS", "running": bool}``; ``running``
  turns false only when the timer is cancelled. A timer whose ``ends`` has passed has finished
  (rung): results show it with ``status`` ``finished`` and ``remaining_s`` 0.

All times are the phone's local time; timer times and ``remaining_s`` come from the phone clock.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import zoneinfo
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, Deleted, format_local_time
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import (
    BOOL,
    EMPTY_IS_NONE,
    WEEKDAY_MASK,
    AndroidDriver,
    Column,
    Ctx,
    MappingError,
    ProviderTable,
    Split,
    Wire,
)
from phoneenv.tools import ToolError, tool

Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

AlarmTime = Annotated[
    str,
    Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="24-hour time HH:MM, e.g. 07:30"),
]
Label = Annotated[str, Field(min_length=1, max_length=60)]


class TimeInfo(TypedDict):
    """The time somewhere."""

    local_time: str
    timezone: str
    weekday: str
    utc_offset: str


class WorldTime(TimeInfo):
    """The time in another timezone, compared with the phone's."""

    hours_ahead: float


class Alarm(TypedDict):
    """An alarm; "next_ring" is when it rings next (None while it is off)."""

    id: str
    time: str
    label: str | None
    enabled: bool
    days: list[str]
    next_ring: str | None


class AlarmCreated(Alarm):
    """A new alarm; "same_time" lists other alarms already set for the same time."""

    same_time: list[str]


class StoredAlarm(TypedDict):
    """An alarm as stored (``next_ring`` is computed when read)."""

    id: str
    time: str
    label: str | None
    enabled: bool
    days: list[str]


class StoredTimer(TypedDict):
    """A timer as stored (``status`` and ``remaining_s`` are computed when read)."""

    id: str
    label: str | None
    duration_s: int
    started: str
    ends: str
    running: bool


class AlarmList(TypedDict):
    """Alarms ordered by time of day."""

    alarms: list[Alarm]
    total: int


class Timer(TypedDict):
    """A countdown timer: "status" is running, finished (it rang) or cancelled."""

    id: str
    label: str | None
    duration_s: int
    started: str
    ends: str
    running: bool
    status: Literal["running", "finished", "cancelled"]
    remaining_s: int


class TimerList(TypedDict):
    """Timers, running ones first, soonest to end first."""

    timers: list[Timer]
    total: int


@functools.lru_cache(maxsize=1)
def _zone_names() -> tuple[str, ...]:
    return tuple(sorted(zoneinfo.available_timezones()))


def _offset(value: dt.timedelta | None) -> str:
    """``+01:00`` for a UTC offset."""
    minutes = int((value or dt.timedelta()).total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _time_info(moment: dt.datetime, zone: str) -> TimeInfo:
    return {
        "local_time": format_local_time(moment.replace(tzinfo=None), seconds=True),
        "timezone": zone,
        "weekday": DAY_NAMES[moment.weekday()],
        "utc_offset": _offset(moment.utcoffset()),
    }


def _hm_encode(value: Any, ctx: Ctx) -> tuple[Wire, ...]:
    try:
        at = dt.time.fromisoformat(value)
    except (TypeError, ValueError):
        raise MappingError(f"alarm time must be HH:MM, got {value!r}") from None
    return at.hour, at.minute


def _hm_decode(wires: Sequence[Wire], ctx: Ctx) -> Any:
    hour, minute = (int(w or 0) for w in wires)
    return f"{hour:02d}:{minute:02d}"


ANDROID = AndroidDriver(
    tables={
        "alarms": ProviderTable(
            table="alarms",
            uri="content://com.google.android.deskclock/alarms",
            fields={
                "time": Split((Column("hour", "i"), Column("minutes", "i")), _hm_encode, _hm_decode),
                "label": Column("label", "s", EMPTY_IS_NONE, default=""),
                "enabled": Column("enabled", "i", BOOL, default=0),
                "days": Column("daysofweek", "i", WEEKDAY_MASK, default=0),
            },
            derived={"vibrate": ("i", lambda rec, ctx: 1)},
            root=True,
            order=("time", "label", "enabled", "days"),
            notes="DeskClock's ClockContract.AlarmsColumns (AOSP packages/apps/DeskClock): time → hour and "
            "minutes, label → label ('' for none), enabled → enabled, days → daysofweek (Monday bit 0 .. Sunday "
            "bit 6). The provider is not exported (needs adb root); its authority is the clock package's "
            "(com.android.deskclock on AOSP images). DeskClock reschedules written alarms when it next starts.",
        )
    },
    tools=(
        "clock.create_alarm",
        "clock.delete_alarm",
        "clock.list_alarms",
        "clock.now",
        "clock.set_alarm_enabled",
        "clock.update_alarm",
        "clock.world_time",
    ),
    unavailable={
        "clock.start_timer": "DeskClock keeps timers in its private preferences: no provider or shell command "
        "reads them back (AlarmClock.ACTION_SET_TIMER only starts one)",
        "clock.list_timers": "timers cannot be read from a device",
        "clock.cancel_timer": "timers cannot be read from a device",
    },
)
"""The clock on a device: DeskClock's alarms provider; the time comes from the episode clock."""


class Clock(App):
    """Alarms, timers and the time around the world."""

    name = "clock"
    title = "Clock"
    domain = Domain.TIME
    package = "com.google.android.deskclock"
    tables: ClassVar[dict[str, str]] = {"alarms": "al_", "timers": "tm_"}
    records: ClassVar[dict[str, Any]] = {"alarms": StoredAlarm, "timers": StoredTimer}
    android = ANDROID

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "alarms":
            days = ",".join(record["days"]) or "once"
            label = f"  {record['label']}" if record.get("label") else ""
            return f"{record['time']}{label}  {days}  {'on' if record['enabled'] else 'off'}"
        timer = self._timer_view(record)
        label = f"{record['label']}  " if record.get("label") else ""
        left = timer["remaining_s"]
        return f"{label}{left // 3600:d}:{left % 3600 // 60:02d}:{left % 60:02d}  {timer['status']}"

    # -- helpers --------------------------------------------------------------------------------
    def _epoch(self, local: str) -> float:
        """Epoch seconds of a local ``YYYY-MM-DDTHH:MM:SS`` stored by this app."""
        return dt.datetime.fromisoformat(local).replace(tzinfo=self.phone.tz).timestamp()

    def _next_ring(self, record: dict[str, Any]) -> str | None:
        if not record["enabled"]:
            return None
        now = self.now()
        at = dt.time.fromisoformat(record["time"])
        for ahead in range(8):
            day = now.date() + dt.timedelta(days=ahead)
            when = dt.datetime.combine(day, at)
            if when > now and (not record["days"] or WEEKDAYS[day.weekday()] in record["days"]):
                return format_local_time(when)
        return None  # unreachable: some day of the next eight always matches

    def _alarm_view(self, record: dict[str, Any]) -> Alarm:
        return {**record, "days": list(record["days"]), "next_ring": self._next_ring(record)}  # type: ignore[typeddict-item]

    def _timer_view(self, record: dict[str, Any]) -> Timer:
        left = max(0, round(self._epoch(record["ends"]) - self.phone.state.meta["now"]))
        if not record["running"]:
            status, left = "cancelled", 0
        else:
            status = "running" if left > 0 else "finished"
        return {**record, "running": status == "running", "status": status, "remaining_s": left}  # type: ignore[typeddict-item]

    def _same_time(self, time: str, exclude: str) -> list[str]:
        return sorted(
            (r["id"] for r in self.t("alarms").values() if r["time"] == time and r["id"] != exclude),
            key=lambda i: (len(i), i),
        )

    @staticmethod
    def _days(days: list[str]) -> tuple[str, ...]:
        """Weekday codes deduplicated, in week order (Monday first)."""
        return tuple(d for d in WEEKDAYS if d in days)

    # -- time -----------------------------------------------------------------------------------
    @tool(name="now")
    def now_(self) -> TimeInfo:
        """Get the phone's current local date and time, weekday, timezone and UTC offset."""
        moment = dt.datetime.fromtimestamp(self.phone.state.meta["now"], self.phone.tz)
        return _time_info(moment, self.phone.fixtures.timezone)

    @tool()
    def world_time(self, timezone: Annotated[str, Field(min_length=1, max_length=64)]) -> WorldTime:
        """Get the current time in another timezone and how many hours it is ahead of the phone.

        Args:
            timezone: IANA timezone name, e.g. "Asia/Tokyo", "America/New_York", "UTC".
        """
        names = _zone_names()
        wanted = timezone.strip().replace(" ", "_")
        zone = next((n for n in names if n.casefold() == wanted.casefold()), None)
        if zone is None:
            city = [n for n in names if n.rsplit("/", 1)[-1].casefold() == wanted.casefold()]
            close = difflib.get_close_matches(wanted, names, n=5, cutoff=0.5)
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"unknown timezone {timezone!r}",
                hint='use an IANA name "Region/City", e.g. "Europe/Paris"',
                candidates=list(dict.fromkeys(city + close))[:5],
            )
        now = self.phone.state.meta["now"]
        there = dt.datetime.fromtimestamp(now, zoneinfo.ZoneInfo(zone))
        here = dt.datetime.fromtimestamp(now, self.phone.tz)
        ahead = ((there.utcoffset() or dt.timedelta()) - (here.utcoffset() or dt.timedelta())).total_seconds()
        return {**_time_info(there, zone), "hours_ahead": ahead / 3600}

    # -- alarms ---------------------------------------------------------------------------------
    @tool()
    def list_alarms(self) -> AlarmList:
        """List all alarms, on and off, ordered by time of day."""
        recs = sorted(self.t("alarms").values(), key=lambda r: (r["time"], len(r["id"]), r["id"]))
        self.show_list("alarms", [r["id"] for r in recs])
        return {"alarms": [self._alarm_view(r) for r in recs], "total": len(recs)}

    @tool(effect=Effect.WRITE, writes=("alarms",))
    def create_alarm(
        self,
        time: AlarmTime,
        label: Label | None = None,
        days: list[Weekday] = [],  # noqa: B006 - the schema's default; never mutated
    ) -> AlarmCreated:
        """Set a new alarm, switched on. Another alarm at the same time is allowed: a second
        alarm is created and "same_time" lists the ids of the existing ones.

        Args:
            time: When it rings, 24-hour HH:MM, e.g. "06:45".
            label: Name shown when it rings, e.g. "Gym".
            days: Weekdays it repeats on, e.g. ["mon", "wed", "fri"]; leave empty for a one-off
                alarm that rings once at the next occurrence of the time.
        """
        rid = self.new_id("alarms")
        same = self._same_time(time, rid)
        rec = {"id": rid, "time": time, "label": label, "enabled": True, "days": self._days(days)}
        self.put("alarms", rec)
        self.show_detail("alarms", rid)
        return {**self._alarm_view(rec), "same_time": same}  # type: ignore[typeddict-item]

    @tool(effect=Effect.WRITE, writes=("alarms",))
    def update_alarm(
        self,
        alarm_id: str,
        time: AlarmTime | None = None,
        label: Label | None = None,
        days: list[Weekday] | None = None,
    ) -> Alarm:
        """Change an alarm's time, label or repeat days; fields left out stay as they are. Whether
        the alarm is on does not change (use clock.set_alarm_enabled).

        Args:
            alarm_id: The alarm's id, e.g. "al_2".
            time: New time, 24-hour HH:MM.
            label: New label.
            days: New repeat weekdays, e.g. ["sat", "sun"]; an empty list makes it a one-off alarm.
        """
        self.require("alarms", alarm_id, "alarm", "clock.list_alarms")
        changes: dict[str, Any] = {}
        if time is not None:
            changes["time"] = time
        if label is not None:
            changes["label"] = label
        if days is not None:
            changes["days"] = self._days(days)
        if not changes:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "nothing to update",
                hint="pass at least one of time, label, days",
            )
        rec = self.patch("alarms", alarm_id, **changes)
        self.show_detail("alarms", alarm_id)
        return self._alarm_view(rec)

    @tool(effect=Effect.WRITE, writes=("alarms",))
    def set_alarm_enabled(self, alarm_id: str, enabled: bool) -> Alarm:
        """Switch an alarm on or off without deleting it.

        Args:
            alarm_id: The alarm's id.
            enabled: True to switch it on, false to switch it off.
        """
        rec = self.require("alarms", alarm_id, "alarm", "clock.list_alarms")
        if rec["enabled"] != enabled:
            rec = self.patch("alarms", alarm_id, enabled=enabled)
        self.show_detail("alarms", alarm_id)
        return self._alarm_view(rec)

    @tool(effect=Effect.SENSITIVE, writes=("alarms",))
    def delete_alarm(self, alarm_id: str) -> Deleted:
        """Delete an alarm.

        Args:
            alarm_id: The alarm's id.
        """
        self.require("alarms", alarm_id, "alarm", "clock.list_alarms")
        self.remove("alarms", alarm_id)
        self.show_list("alarms", list(self.t("alarms")))
        return {"deleted": alarm_id}

    # -- timers ---------------------------------------------------------------------------------
    @tool(effect=Effect.WRITE, writes=("timers",))
    def start_timer(
        self,
        duration_seconds: Annotated[int, Field(ge=1, le=86400)],
        label: Label | None = None,
    ) -> Timer:
        """Start a countdown timer that rings when it reaches zero.

        Args:
            duration_seconds: Length in seconds, 1 to 86400 (e.g. 600 for 10 minutes).
            label: Name shown when it rings, e.g. "Pasta".
        """
        now = self.phone.state.meta["now"]
        start = dt.datetime.fromtimestamp(now, self.phone.tz).replace(tzinfo=None)
        end = dt.datetime.fromtimestamp(now + duration_seconds, self.phone.tz).replace(tzinfo=None)
        rec = {
            "id": self.new_id("timers"),
            "label": label,
            "duration_s": duration_seconds,
            "started": format_local_time(start, seconds=True),
            "ends": format_local_time(end, seconds=True),
            "running": True,
        }
        self.put("timers", rec)
        self.show_detail("timers", rec["id"])
        return self._timer_view(rec)

    @tool()
    def list_timers(self) -> TimerList:
        """List timers with the seconds each has left: running ones first, then finished and
        cancelled ones."""
        views = [self._timer_view(r) for r in self.t("timers").values()]
        order = {"running": 0, "finished": 1, "cancelled": 2}
        views.sort(key=lambda v: (order[v["status"]], v["ends"], len(v["id"]), v["id"]))
        self.show_list("timers", [v["id"] for v in views])
        return {"timers": views, "total": len(views)}

    @tool(effect=Effect.WRITE, writes=("timers",))
    def cancel_timer(self, timer_id: str) -> Timer:
        """Stop a running timer before it rings.

        Args:
            timer_id: The timer's id, e.g. "tm_1".
        """
        rec = self.require("timers", timer_id, "timer", "clock.list_timers")
        status = self._timer_view(rec)["status"]
        if status != "running":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"timer {timer_id} is not running (it {'already rang' if status == 'finished' else 'was cancelled'})",
                hint="call clock.list_timers to see running timers",
            )
        rec = self.patch("timers", timer_id, running=False)
        self.show_detail("timers", timer_id)
        return self._timer_view(rec)
