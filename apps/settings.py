"""Settings: radios, do-not-disturb, display and sound, and apps' runtime permissions.

Table ``settings.settings`` is keyed by setting name: ``{"id": "wifi", "value": True}``. Fixtures
need not seed it: a setting without a record has its value from :data:`DEFAULTS`, and the first
write of a different value inserts the record. Writing the value a setting already has writes
nothing (``"changed": false``), so it leaves no change in the state diff.

Runtime permissions live in the system's ``system.permissions`` table (id ``app/permission``);
this app lists, grants and revokes them as the user would in Settings > Apps.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App
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
    tables: ClassVar[dict[str, str]] = {"settings": "set_"}
    implied: ClassVar[dict[str, dict[str, dict[str, Any]]]] = {
        "settings": {k: {"id": k, "value": v} for k, v in DEFAULTS.items()}
    }
    records: ClassVar[dict[str, Any]] = {"settings": StoredSetting}
    android = ANDROID

    def row(self, table: str, record: dict[str, Any]) -> str:
        key, value = record["id"], record["value"]
        shown = ("on" if value else "off") if isinstance(value, bool) else ("none" if value is None else str(value))
        return f"{_LABELS.get(key, key)}: {shown}"

    def screen(self, view: tuple[Any, ...] | None) -> tuple[str, list[str]]:
        """Every setting with its current value (defaults included); a permission list when shown."""
        if view is not None and view[1] == "list" and view[2] == "permissions":
            perms = self.phone.state.table("system.permissions")
            return self.title, [
                f"{perms[i]['permission'].rsplit('.', 1)[-1]}: {'allowed' if perms[i]['granted'] else 'denied'}"
                for i in view[3]
                if i in perms
            ]
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
    @tool(effect=Effect.WRITE)
    def set_wifi(self, enabled: bool) -> SetResult:
        """Turn Wi-Fi on or off.

        Args:
            enabled: True for on, false for off.
        """
        return self._set("wifi", enabled)

    @tool(effect=Effect.WRITE)
    def set_bluetooth(self, enabled: bool) -> SetResult:
        """Turn Bluetooth on or off.

        Args:
            enabled: True for on, false for off.
        """
        return self._set("bluetooth", enabled)

    @tool(effect=Effect.WRITE)
    def set_dnd(self, enabled: bool) -> SetResult:
        """Turn do-not-disturb (silences calls and notifications) on or off.

        Args:
            enabled: True for on, false for off.
        """
        return self._set("dnd", enabled)

    @tool(effect=Effect.WRITE)
    def set_airplane_mode(self, enabled: bool) -> SetResult:
        """Turn airplane mode on or off. Turning it on also turns Wi-Fi and Bluetooth off; turning
        it off leaves them off (turn them on with settings.set_wifi / settings.set_bluetooth).

        Args:
            enabled: True for on, false for off.
        """
        if enabled:
            return self._set("airplane_mode", True, ("wifi", False), ("bluetooth", False))
        return self._set("airplane_mode", False)

    @tool(effect=Effect.WRITE)
    def set_location(self, enabled: bool) -> SetResult:
        """Turn location services (GPS) on or off.

        Args:
            enabled: True for on, false for off.
        """
        return self._set("location", enabled)

    @tool(effect=Effect.WRITE)
    def set_brightness(self, level: Level) -> SetResult:
        """Set the screen brightness.

        Args:
            level: Brightness from 0 (dimmest) to 100 (brightest).
        """
        return self._set("brightness", level)

    @tool(effect=Effect.WRITE)
    def set_volume(self, stream: Literal["ring", "media"], level: Level) -> SetResult:
        """Set the ring volume (calls and notifications) or the media volume (music, videos).

        Args:
            stream: "ring" or "media".
            level: Volume from 0 (silent) to 100 (loudest).
        """
        return self._set(f"volume_{stream}", level)

    @tool(effect=Effect.WRITE)
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

    @tool(effect=Effect.SENSITIVE)
    def grant_permission(self, app: AppName, permission: Permission) -> PermissionResult:
        """Grant a runtime permission to an app.

        Args:
            app: The app's name.
            permission: The permission, as listed by settings.list_app_permissions.
        """
        return self._permission(app, permission, True)

    @tool(effect=Effect.SENSITIVE)
    def revoke_permission(self, app: AppName, permission: Permission) -> PermissionResult:
        """Revoke a runtime permission from an app.

        Args:
            app: The app's name.
            permission: The permission, as listed by settings.list_app_permissions.
        """
        return self._permission(app, permission, False)
