"""Settings: radios, do-not-disturb, display and sound, and apps' runtime permissions.

Table ``settings.settings`` is keyed by setting name: ``{"id": "wifi", "value": True}``. Fixtures
need not seed it: a setting without a record has its value from :data:`DEFAULTS`, and the first
write of a different value inserts the record. Writing the value a setting already has writes
nothing (``"changed": false``), so it leaves no change in the state diff.

Do-not-disturb can also be on until a time (table ``settings.dnd_timer``: at most one record,
``{"id": "until", "until": "YYYY-MM-DDTHH:MM"}``, present while ``dnd`` is on with an end) or on
a schedule (table ``settings.dnd_schedules``: ``{"id": "dnds_1", "name": str, "days": ["mon",
...], "start": "HH:MM", "end": "HH:MM", "enabled": bool}``, local time; an end at or before the
start runs past midnight into the next day). Turning do-not-disturb on or off by hand ends a timer.

Runtime permissions live in the system's ``system.permissions`` table (id ``app/permission``);
this app lists, grants and revokes them as the user would in Settings > Apps.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import TIME_PATTERN, App, Deleted, format_local_time, id_key, parse_local_time
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import AndroidDriver, SettingKey, SettingsTable, flag_codec, scaled_codec
from phoneenv.tools import ToolError, tool

DEFAULTS: dict[str, bool | int | str | None] = {
    "wifi": True,
    "bluetooth": False,
    "dnd": False,
    "airplane_mode": False,
    "location": True,
    "brightness": 60,
    "volume_ring": 70,
    "volume_media": 50,
    "dark_mode": False,
    "wifi_network": "HomeNet",
}
"""Every setting with the value it has when the fixtures do not seed it."""

Key = Literal[
    "wifi",
    "bluetooth",
    "dnd",
    "airplane_mode",
    "location",
    "brightness",
    "volume_ring",
    "volume_media",
    "dark_mode",
    "wifi_network",
]
Value = Union[bool, int, str, None]
Level = Annotated[int, Field(ge=0, le=100, description="0 to 100 (percent)")]
AppName = Annotated[
    str, Field(min_length=1, max_length=40, description="App name as in system.list_apps, e.g. 'phone'")
]
Permission = Annotated[
    str,
    Field(min_length=1, max_length=100, description='Android permission, e.g. "android.permission.CAMERA"'),
]

WEEKDAYS: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
ClockTime = Annotated[str, Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="Time of day HH:MM (24-hour)")]
LocalTime = Annotated[
    str, Field(pattern=TIME_PATTERN, description="Local time YYYY-MM-DDTHH:MM, e.g. 2026-11-30T07:00")
]
MAX_TIMER_DAYS = 7
"""How far ahead a do-not-disturb end may lie (a phone offers hours, not weeks)."""
MAX_SCHEDULES = 10

_LABELS = {
    "wifi": "Wi-Fi",
    "bluetooth": "Bluetooth",
    "dnd": "Do not disturb",
    "airplane_mode": "Airplane mode",
    "location": "Location",
    "brightness": "Brightness",
    "volume_ring": "Ring volume",
    "volume_media": "Media volume",
    "dark_mode": "Dark theme",
    "wifi_network": "Wi-Fi network",
}


class Setting(TypedDict):
    """A setting and its current value."""

    key: str
    value: Value


class StoredSetting(TypedDict):
    """A setting as stored: its key is the record id."""

    id: str
    value: Value


class SettingList(TypedDict):
    """Every setting with its current value."""

    settings: list[Setting]


class Change(TypedDict):
    """One setting that changed."""

    key: str
    old: Value
    new: Value


class SetResult(TypedDict):
    """The setting's value now; "changed" is false when it already had that value. "changes"
    lists every setting that changed, side effects included."""

    key: str
    value: Value
    changed: bool
    changes: list[Change]


class StoredTimer(TypedDict):
    """Do-not-disturb's end, while it is on until a time."""

    id: str
    until: str


class StoredSchedule(TypedDict):
    """A do-not-disturb schedule as stored."""

    id: str
    name: str
    days: list[Weekday]
    start: str
    end: str
    enabled: bool


class Schedule(StoredSchedule):
    """A do-not-disturb schedule; ``overnight`` when it ends the next morning."""

    overnight: bool


class DndStatus(TypedDict):
    """Whether do-not-disturb is on now, until when (None: until turned off), why (``"manual"``
    or a schedule's id), and every schedule."""

    on: bool
    until: str | None
    because: str | None
    schedules: list[Schedule]


class AppPermission(TypedDict):
    """A runtime permission an app declares and whether it is granted."""

    permission: str
    granted: bool


class AppPermissions(TypedDict):
    """The runtime permissions an app declares."""

    app: str
    permissions: list[AppPermission]


class PermissionResult(TypedDict):
    """A permission's state now; "changed" is false when it already was so."""

    app: str
    permission: str
    granted: bool
    changed: bool


def _switch(*words: str) -> Any:
    """A setter ``words + (on|off word)``: ``_switch("svc", "wifi")(True)`` → ``svc wifi enable``."""
    *cmd, on, off = words
    return lambda value: [*cmd, on if value else off]


ANDROID = AndroidDriver(
    tables={
        "settings": SettingsTable(
            table="settings",
            keys={
                "wifi": SettingKey(
                    "global",
                    "wifi_on",
                    flag_codec("wifi_on", "1", "0", ("2",), ("3",)),
                    _switch("svc", "wifi", "enable", "disable"),
                ),
                "bluetooth": SettingKey(
                    "global",
                    "bluetooth_on",
                    flag_codec("bluetooth_on", "1", "0"),
                    _switch("svc", "bluetooth", "enable", "disable"),
                ),
                "dnd": SettingKey(
                    "global",
                    "zen_mode",
                    flag_codec("zen_mode", "1", "0", ("2", "3")),
                    _switch("cmd", "notification", "set_dnd", "priority", "off"),
                ),
                "airplane_mode": SettingKey(
                    "global",
                    "airplane_mode_on",
                    flag_codec("airplane_mode_on", "1", "0"),
                    _switch("cmd", "connectivity", "airplane-mode", "enable", "disable"),
                ),
                "location": SettingKey("secure", "location_mode", flag_codec("location_mode", "3", "0", ("1", "2"))),
                "brightness": SettingKey("system", "screen_brightness", scaled_codec("screen_brightness", 255)),
                "dark_mode": SettingKey(
                    "secure",
                    "ui_night_mode",
                    flag_codec("ui_night_mode", "2", "1", (), ("0",)),
                    _switch("cmd", "uimode", "night", "yes", "no"),
                ),
            },
            unmapped={
                "volume_ring": "AudioService keeps the ring volume as a stream index 0-7, which cannot hold a "
                "percentage losslessly",
                "volume_media": "AudioService keeps the media volume as a stream index 0-15, which cannot hold a "
                "percentage losslessly",
                "wifi_network": "the joined network is Wi-Fi state, not a setting, and has no shell setter",
            },
        )
    },
    # settings.dnd_timer and settings.dnd_schedules have no mapping: see unavailable below.
    tools=(
        "settings.grant_permission",
        "settings.list_app_permissions",
        "settings.revoke_permission",
        "settings.set_airplane_mode",
        "settings.set_bluetooth",
        "settings.set_brightness",
        "settings.set_dark_mode",
        "settings.set_dnd",
        "settings.set_location",
        "settings.set_wifi",
    ),
    unavailable={
        "settings.get": "reads volume and Wi-Fi network settings, which have no lossless Android home",
        "settings.list_all": "reads volume and Wi-Fi network settings, which have no lossless Android home",
        "settings.set_volume": "a percentage does not survive AudioService's stream indices",
        "settings.set_dnd_until": "Android keeps a timed do-not-disturb as the countdown condition of the manual "
        "zen rule in ZenModeConfig, which only NotificationManager.setZenMode with a condition id sets; "
        "`cmd notification set_dnd` takes a mode only and no shell command reads the end back",
        "settings.add_dnd_schedule": "schedules are ZenModeConfig automatic rules, created only through "
        "NotificationManager.addAutomaticZenRule by an app with notification-policy access; no shell command "
        "creates, lists or changes them",
        "settings.update_dnd_schedule": "see settings.add_dnd_schedule",
        "settings.delete_dnd_schedule": "see settings.add_dnd_schedule",
        "settings.dnd_status": "reads the timer and the schedules (see settings.add_dnd_schedule)",
    },
    notes="Radios, do-not-disturb, airplane mode and the night theme are switched with the services' "
    "own shell commands (svc, cmd notification|connectivity|uimode), which also update the setting read "
    "back with settings get; location and brightness with settings put. Permissions are "
    "system.permissions (pm grant|revoke).",
)
"""Settings on a device: Android's settings provider and services (``settings``, ``svc``, ``cmd``)."""


class Settings(App):
    """The device settings."""

    name = "settings"
    title = "Settings"
    domain = Domain.DEVICE
    package = "com.android.settings"
    tables: ClassVar[dict[str, str]] = {"settings": "set_", "dnd_timer": "dndt_", "dnd_schedules": "dnds_"}
    implied: ClassVar[dict[str, dict[str, dict[str, Any]]]] = {
        "settings": {k: {"id": k, "value": v} for k, v in DEFAULTS.items()}
    }
    records: ClassVar[dict[str, Any]] = {
        "settings": StoredSetting,
        "dnd_timer": StoredTimer,
        "dnd_schedules": StoredSchedule,
    }
    android = ANDROID

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "dnd_schedules":
            days = ",".join(record["days"])
            state = "on" if record.get("enabled") else "off"
            return f"{record['name']}: {days} {record['start']}-{record['end']} ({state})"
        if table == "dnd_timer":
            return f"Do not disturb until {record['until'].replace('T', ' ')}"
        key, value = record["id"], record["value"]
        shown = ("on" if value else "off") if isinstance(value, bool) else ("none" if value is None else str(value))
        return f"{_LABELS.get(key, key)}: {shown}"

    def screen(self, view: tuple[Any, ...] | None) -> tuple[str, list[str]]:
        """Every setting with its current value (defaults included); a permission list when shown;
        do-not-disturb schedules and timers as the records they are."""
        if view is not None and view[1] == "list" and view[2] == "permissions":
            perms = self.phone.state.table("system.permissions")
            return self.title, [
                f"{perms[i]['permission'].rsplit('.', 1)[-1]}: {'allowed' if perms[i]['granted'] else 'denied'}"
                for i in view[3]
                if i in perms
            ]
        if view is not None and view[2] != "settings":  # a do-not-disturb schedule or timer: the records themselves
            return super().screen(view)
        keys = view[3] if view is not None and view[1] == "list" else tuple(DEFAULTS)
        if view is not None and view[1] == "detail":
            keys = (view[3],)
        return self.title, [self.row("settings", {"id": k, "value": self.value(k)}) for k in keys]

    # -- helpers --------------------------------------------------------------------------------
    def value(self, key: str) -> Value:
        """The current value of setting ``key`` (its default when no record exists)."""
        rec = self.phone.state.get("settings.settings", key)
        return DEFAULTS[key] if rec is None else rec["value"]

    def _write(self, key: str, value: Value) -> Change | None:
        """Set ``key`` to ``value``; writes nothing and returns None when it already has it."""
        old = self.value(key)
        if old == value and type(old) is type(value):
            return None
        if self.phone.state.get("settings.settings", key) is not None:
            self.patch("settings", key, value=value)
        else:
            self.put("settings", {"id": key, "value": value})
        return {"key": key, "old": old, "new": value}

    def _set(self, key: str, value: Value, *also: tuple[str, Value]) -> SetResult:
        changes = [c for c in (self._write(k, v) for k, v in ((key, value), *also)) if c is not None]
        self.show_list("settings", [key, *(k for k, _ in also)])
        return {"key": key, "value": value, "changed": any(c["key"] == key for c in changes), "changes": changes}

    def _declared(self, app: str) -> list[dict[str, Any]]:
        """Permission records of installed ``app`` (not_found for an app not installed)."""
        if self.phone.state.get("system.apps", app) is None:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no installed app {app!r}",
                hint="call system.list_apps",
                candidates=sorted(self.phone.state.table("system.apps")),
            )
        recs = [r for r in self.phone.state.table("system.permissions").values() if r["app"] == app]
        return sorted(recs, key=lambda r: r["permission"])

    def _permission(self, app: str, permission: str, granted: bool) -> PermissionResult:
        recs = self._declared(app)
        rid = f"{app}/{permission}"
        rec = self.phone.state.get("system.permissions", rid)
        if rec is None:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"{app} does not declare {permission}",
                hint=f"call settings.list_app_permissions with app={app!r}",
                candidates=[r["permission"] for r in recs],
            )
        changed = rec["granted"] != granted
        if changed:
            self.phone.state.update("system.permissions", rid, granted=granted)
        self.show_list("permissions", [r["id"] for r in recs])
        return {"app": app, "permission": permission, "granted": granted, "changed": changed}

    # -- reading --------------------------------------------------------------------------------
    @tool()
    def get(self, key: Key) -> Setting:
        """Get the current value of one setting.

        Args:
            key: The setting: wifi, bluetooth, dnd (do not disturb), airplane_mode, location,
                dark_mode (on/off), brightness, volume_ring, volume_media (0-100), or wifi_network
                (the Wi-Fi network the phone joins).
        """
        self.show_detail("settings", key)
        return {"key": key, "value": self.value(key)}

    @tool()
    def list_all(self) -> SettingList:
        """List every setting with its current value."""
        self.show_list("settings", list(DEFAULTS))
        return {"settings": [{"key": k, "value": self.value(k)} for k in DEFAULTS]}

    # -- writing --------------------------------------------------------------------------------
    @tool(effect=Effect.WRITE, writes=("settings",))
    def set_wifi(self, enabled: bool) -> SetResult:
        """Turn Wi-Fi on or off.

        Args:
            enabled: True for on, false for off.
        """
        return self._set("wifi", enabled)

    @tool(effect=Effect.WRITE, writes=("settings",))
    def set_bluetooth(self, enabled: bool) -> SetResult:
        """Turn Bluetooth on or off.

        Args:
            enabled: True for on, false for off.
        """
        return self._set("bluetooth", enabled)

    @tool(effect=Effect.WRITE, writes=("dnd_timer", "settings"))
    def set_dnd(self, enabled: bool) -> SetResult:
        """Turn do-not-disturb (silences calls and notifications) on or off, until changed
        again; this ends a do-not-disturb set until a time. Schedules stay as they are.

        Args:
            enabled: True for on, false for off.
        """
        self._end_timer()
        return self._set("dnd", enabled)

    def _end_timer(self) -> None:
        # phone.state.get: None on a device, where the timer has no mapping (never set there)
        if self.phone.state.get("settings.dnd_timer", "until") is not None:
            self.remove("dnd_timer", "until")

    def _schedule(self, rec: dict[str, Any]) -> Schedule:
        return {
            "id": rec["id"],
            "name": rec["name"],
            "days": list(rec["days"]),
            "start": rec["start"],
            "end": rec["end"],
            "enabled": bool(rec["enabled"]),
            "overnight": rec["end"] <= rec["start"],
        }

    def _active_schedule(self, now: dt.datetime) -> str | None:
        """The id of an enabled schedule that covers ``now`` (the first by id), or None."""
        hm, today = now.strftime("%H:%M"), WEEKDAYS[now.weekday()]
        yesterday = WEEKDAYS[(now.weekday() - 1) % 7]
        for rec in sorted(self.t("dnd_schedules").values(), key=lambda r: id_key(r["id"])):
            if not rec["enabled"]:
                continue
            if rec["start"] < rec["end"]:
                if today in rec["days"] and rec["start"] <= hm < rec["end"]:
                    return rec["id"]
            elif (today in rec["days"] and hm >= rec["start"]) or (yesterday in rec["days"] and hm < rec["end"]):
                return rec["id"]
        return None

    @staticmethod
    def _days(days: list[str]) -> tuple[str, ...]:
        if not days:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "a schedule needs at least one day",
                hint='e.g. ["sat", "sun"]',
                path="/days",
            )
        for i, d in enumerate(days):
            if days.index(d) != i:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS, f"{d!r} is listed twice", hint="list each day once", path=f"/days/{i}"
                )
        return tuple(d for d in WEEKDAYS if d in days)

    @tool(effect=Effect.WRITE, writes=("dnd_timer", "settings"))
    def set_dnd_until(self, until: LocalTime) -> SetResult:
        """Turn do-not-disturb on until a time, after which it goes off by itself ("until 7 tomorrow
        morning", "until my meeting ends").

        Args:
            until: When it ends, local time YYYY-MM-DDTHH:MM; later than now and at most 7 days ahead.
        """
        end = parse_local_time(until, "until").replace(second=0, microsecond=0)
        now = self.now()
        if end <= now:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{format_local_time(end)} is not in the future (it is {format_local_time(now)})",
                hint="give a later time; settings.set_dnd turns it on with no end",
                path="/until",
            )
        if end - now > dt.timedelta(days=MAX_TIMER_DAYS):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{format_local_time(end)} is more than {MAX_TIMER_DAYS} days ahead",
                hint="use settings.set_dnd for an open end, or a schedule for a recurring quiet time",
                path="/until",
            )
        value = format_local_time(end)
        if self.phone.state.get("settings.dnd_timer", "until") is not None:
            self.patch("dnd_timer", "until", until=value)
        else:
            self.put("dnd_timer", {"id": "until", "until": value})
        return self._set("dnd", True)

    @tool()
    def dnd_status(self) -> DndStatus:
        """Whether do-not-disturb is on now, until when, and the do-not-disturb schedules."""
        timer = self.phone.state.get("settings.dnd_timer", "until")
        now = self.now()
        until = timer["until"] if timer is not None else None
        manual = bool(self.value("dnd")) and (until is None or format_local_time(now) < until)
        active = self._active_schedule(now)
        recs = sorted(self.t("dnd_schedules").values(), key=lambda r: id_key(r["id"]))
        self.show_list("dnd_schedules", [r["id"] for r in recs])
        return {
            "on": manual or active is not None,
            "until": until if manual else None,
            "because": "manual" if manual else active,
            "schedules": [self._schedule(r) for r in recs],
        }

    @tool(effect=Effect.WRITE, writes=("dnd_schedules",))
    def add_dnd_schedule(
        self,
        name: Annotated[str, Field(min_length=1, max_length=60)],
        days: Annotated[list[Weekday], Field(min_length=1, max_length=7)],
        start: ClockTime,
        end: ClockTime,
    ) -> Schedule:
        """Add a do-not-disturb schedule: on the given days from start to end, local time. An end
        at or before the start runs overnight into the next morning (22:00 to 07:00).

        Args:
            name: What to call it, e.g. "Sleeping" or "Weekend".
            days: The days it starts on, e.g. ["mon", "tue", "wed", "thu", "fri"].
            start: When it starts, HH:MM.
            end: When it ends, HH:MM.
        """
        if start == end:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "start and end are the same time", hint="give an end", path="/end"
            )
        name = " ".join(name.split())
        if not name:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the name is blank", hint="name the schedule", path="/name")
        recs = self.t("dnd_schedules").values()
        if any(r["name"].casefold() == name.casefold() for r in recs):
            raise ToolError(
                ErrorKind.CONFLICT,
                f"a schedule named {name!r} exists",
                hint="change it with settings.update_dnd_schedule",
                candidates=[r["id"] for r in recs if r["name"].casefold() == name.casefold()],
            )
        if len(recs) >= MAX_SCHEDULES:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED, f"there are {MAX_SCHEDULES} schedules", hint="delete one first"
            )
        rec = {
            "id": self.new_id("dnd_schedules"),
            "name": name,
            "days": self._days(days),
            "start": start,
            "end": end,
            "enabled": True,
        }
        self.put("dnd_schedules", rec)
        self.show_detail("dnd_schedules", rec["id"])
        return self._schedule(rec)

    @tool(effect=Effect.WRITE, writes=("dnd_schedules",))
    def update_dnd_schedule(
        self,
        schedule_id: str,
        days: Annotated[list[Weekday], Field(min_length=1, max_length=7)] | None = None,
        start: ClockTime | None = None,
        end: ClockTime | None = None,
        enabled: bool | None = None,
    ) -> Schedule:
        """Change a do-not-disturb schedule, or switch it off or on; fields left out stay.

        Args:
            schedule_id: The schedule's id, e.g. "dnds_1", from settings.dnd_status.
            days: New days.
            start: New start, HH:MM.
            end: New end, HH:MM.
            enabled: False to pause the schedule, true to resume it.
        """
        rec = self.require("dnd_schedules", schedule_id, "schedule", "settings.dnd_status")
        changes: dict[str, Any] = {}
        if days is not None:
            changes["days"] = self._days(days)
        for key, val in (("start", start), ("end", end), ("enabled", enabled)):
            if val is not None and val != rec[key]:
                changes[key] = val
        if "days" in changes and tuple(changes["days"]) == tuple(rec["days"]):
            del changes["days"]
        if not changes:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "nothing to change",
                hint="pass a field with a value different from the schedule's",
            )
        if changes.get("start", rec["start"]) == changes.get("end", rec["end"]):
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "start and end are the same time", path="/end")
        new = self.patch("dnd_schedules", schedule_id, **changes)
        self.show_detail("dnd_schedules", schedule_id)
        return self._schedule(new)

    @tool(effect=Effect.SENSITIVE, writes=("dnd_schedules",))
    def delete_dnd_schedule(self, schedule_id: str) -> Deleted:
        """Delete a do-not-disturb schedule (settings.update_dnd_schedule with enabled=false
        only pauses it).

        Args:
            schedule_id: The schedule's id, e.g. "dnds_1".
        """
        self.require("dnd_schedules", schedule_id, "schedule", "settings.dnd_status")
        self.remove("dnd_schedules", schedule_id)
        self.show_list("dnd_schedules", sorted(self.t("dnd_schedules"), key=id_key))
        return {"deleted": schedule_id}

    @tool(effect=Effect.WRITE, writes=("settings",))
    def set_airplane_mode(self, enabled: bool) -> SetResult:
        """Turn airplane mode on or off. Turning it on also turns Wi-Fi and Bluetooth off; turning
        it off leaves them off (turn them on with settings.set_wifi / settings.set_bluetooth).

        Args:
            enabled: True for on, false for off.
        """
        if enabled:
            return self._set("airplane_mode", True, ("wifi", False), ("bluetooth", False))
        return self._set("airplane_mode", False)

    @tool(effect=Effect.WRITE, writes=("settings",))
    def set_location(self, enabled: bool) -> SetResult:
        """Turn location services (GPS) on or off.

        Args:
            enabled: True for on, false for off.
        """
        return self._set("location", enabled)

    @tool(effect=Effect.WRITE, writes=("settings",))
    def set_brightness(self, level: Level) -> SetResult:
        """Set the screen brightness.

        Args:
            level: Brightness from 0 (dimmest) to 100 (brightest).
        """
        return self._set("brightness", level)

    @tool(effect=Effect.WRITE, writes=("settings",))
    def set_volume(self, stream: Literal["ring", "media"], level: Level) -> SetResult:
        """Set the ring volume (calls and notifications) or the media volume (music, videos).

        Args:
            stream: "ring" or "media".
            level: Volume from 0 (silent) to 100 (loudest).
        """
        return self._set(f"volume_{stream}", level)

    @tool(effect=Effect.WRITE, writes=("settings",))
    def set_dark_mode(self, enabled: bool) -> SetResult:
        """Turn the dark theme on or off.

        Args:
            enabled: True for dark, false for light.
        """
        return self._set("dark_mode", enabled)

    # -- app permissions ------------------------------------------------------------------------
    @tool()
    def list_app_permissions(self, app: AppName) -> AppPermissions:
        """List the runtime permissions an app declares and whether each is granted.

        Args:
            app: The app's name, e.g. "camera".
        """
        recs = self._declared(app)
        self.show_list("permissions", [r["id"] for r in recs])
        return {
            "app": app,
            "permissions": [{"permission": r["permission"], "granted": r["granted"]} for r in recs],
        }

    @tool(effect=Effect.SENSITIVE, writes=("system.permissions",))
    def grant_permission(self, app: AppName, permission: Permission) -> PermissionResult:
        """Grant a runtime permission to an app.

        Args:
            app: The app's name.
            permission: The permission, as listed by settings.list_app_permissions.
        """
        return self._permission(app, permission, True)

    @tool(effect=Effect.SENSITIVE, writes=("system.permissions",))
    def revoke_permission(self, app: AppName, permission: Permission) -> PermissionResult:
        """Revoke a runtime permission from an app.

        Args:
            app: The app's name.
            permission: The permission, as listed by settings.list_app_permissions.
        """
        return self._permission(app, permission, False)
