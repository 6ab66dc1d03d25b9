"""Home: a smart-home app with rooms, lights, thermostats, locks, plugs and scenes.

Tables:

- ``home.rooms``: ``{"id": "r_1", "name": "Living room"}``.
- ``home.devices``: ``{"id": "d_1", "name": "Ceiling light", "room_id": "r_1",
  "kind": "light" | "thermostat" | "lock" | "plug", "on": bool | None, "brightness": int | None,
  "target": float | None, "unit": "C" | "F" | None, "locked": bool | None}``: lights have ``on``
  and ``brightness`` (1-100 %), plugs ``on``, thermostats ``target`` in their ``unit`` (the
  locale's: Fahrenheit in the US, Celsius elsewhere), locks ``locked``; other fields are None.
- ``home.scenes``: ``{"id": "sc_1", "name": "Movie night", "actions": ({"device_id": "d_1",
  "on": True, "brightness": 20, "target": None, "locked": None}, ...)}``; running a scene applies
  each action's non-None fields. A scene may lock a door but never unlock one.

Unlocking is ``sensitive`` (a door opens): the phone may ask for confirmation or a PIN.

No Android path: smart-home apps talk to their hubs over vendor clouds; Android has no content
provider for devices and no shell command that switches them, so ``android`` is None.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import Required, TypedDict

from phoneenv.app import App, Deleted
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.tools import ToolError, tool

Kind = Literal["light", "thermostat", "lock", "plug"]
RANGES = {"C": (5.0, 30.0), "F": (41.0, 86.0)}
"""Settable thermostat targets per unit (inclusive)."""


class Room(TypedDict):
    """A room of the home."""

    id: str
    name: str


class Device(TypedDict):
    """A connected device; fields that do not apply to its kind are None."""

    id: str
    name: str
    room_id: str
    kind: str
    on: bool | None
    brightness: int | None
    target: float | None
    unit: str | None
    locked: bool | None


class Action(TypedDict):
    """What a scene does to one device; None fields are left as they are."""

    device_id: str
    on: bool | None
    brightness: int | None
    target: float | None
    locked: bool | None


class ActionIn(TypedDict, total=False):
    """One step of a scene: a device and the state to put it in (give only what applies)."""

    device_id: Required[str]
    on: bool
    brightness: Annotated[int, Field(ge=1, le=100)]
    target: float
    locked: bool


class Scene(TypedDict):
    """A named set of device states applied together."""

    id: str
    name: str
    actions: list[Action]


class RoomList(TypedDict):
    """The rooms."""

    rooms: list[Room]


class DeviceList(TypedDict):
    """Devices, by room then name."""

    devices: list[Device]


class SceneList(TypedDict):
    """The scenes."""

    scenes: list[Scene]


class SceneRun(TypedDict):
    """The devices a scene changed, as they are now."""

    scene_id: str
    devices: list[Device]


def _scene(rec: dict[str, Any]) -> Scene:
    return {**rec, "actions": [dict(a) for a in rec["actions"]]}  # type: ignore[typeddict-item]


class Home(App):
    """A smart-home app."""

    name = "home"
    title = "Home"
    domain = Domain.DEVICE
    package = "com.example.smarthome"
    tables: ClassVar[dict[str, str]] = {"devices": "d_", "rooms": "r_", "scenes": "sc_"}
    records: ClassVar[dict[str, Any]] = {"devices": Device, "rooms": Room, "scenes": Scene}

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "rooms":
            return record["name"]
        if table == "scenes":
            return f"{record['name']} ({len(record['actions'])} devices)"
        room = self.t("rooms").get(record["room_id"], {}).get("name", record["room_id"])
        kind = record["kind"]
        if kind == "light":
            status = f"on {record['brightness']}%" if record["on"] else "off"
        elif kind == "plug":
            status = "on" if record["on"] else "off"
        elif kind == "thermostat":
            status = f"{record['target']} {record['unit']}"
        else:
            status = "locked" if record["locked"] else "unlocked"
        return f"{room}: {record['name']}  {status}"

    # -- helpers --------------------------------------------------------------------------------
    def _device(self, device_id: str, *kinds: str, path: str = "/device_id") -> dict[str, Any]:
        dev = self.require("devices", device_id, "device", "home.list_devices")
        if kinds and dev["kind"] not in kinds:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{dev['name']} ({device_id}) is a {dev['kind']}, not a {' or '.join(kinds)}",
                hint="call home.list_devices with the kind you need",
                path=path,
            )
        return dev

    def _check_target(self, dev: dict[str, Any], target: float, path: str) -> float:
        lo, hi = RANGES[dev["unit"]]
        if not lo <= target <= hi:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{target} °{dev['unit']} is outside the thermostat's range {lo:g}-{hi:g} °{dev['unit']}",
                hint=f"the thermostat works in °{dev['unit']}",
                path=path,
            )
        return round(target * 2) / 2

    def _apply(self, dev: dict[str, Any], **changes: Any) -> dict[str, Any]:
        diff = {k: v for k, v in changes.items() if dev[k] != v}
        return self.patch("devices", dev["id"], **diff) if diff else dev

    # -- reading --------------------------------------------------------------------------------
    @tool()
    def list_rooms(self) -> RoomList:
        """The rooms of the home."""
        recs = sorted(self.t("rooms").values(), key=lambda r: r["name"])
        self.show_list("rooms", [r["id"] for r in recs])
        return {"rooms": [dict(r) for r in recs]}  # type: ignore[misc]

    @tool()
    def list_devices(self, room_id: str | None = None, kind: Kind | None = None) -> DeviceList:
        """Devices with their state, by room then name.

        Args:
            room_id: Only devices in this room (from home.list_rooms).
            kind: Only lights, thermostats, locks or plugs.
        """
        if room_id is not None:
            self.require("rooms", room_id, "room", "home.list_rooms")
        rooms = self.t("rooms")
        recs = [
            d
            for d in self.t("devices").values()
            if (room_id is None or d["room_id"] == room_id) and (kind is None or d["kind"] == kind)
        ]
        recs.sort(key=lambda d: (rooms.get(d["room_id"], {}).get("name", ""), d["name"], d["id"]))
        self.show_list("devices", [d["id"] for d in recs])
        return {"devices": [dict(d) for d in recs]}  # type: ignore[misc]

    # -- controlling ----------------------------------------------------------------------------
    @tool(effect=Effect.WRITE, writes=("devices",))
    def switch(self, device_id: str, on: bool) -> Device:
        """Turn a light or plug on or off.

        Args:
            device_id: The device's id, e.g. "d_3".
            on: True for on, false for off.
        """
        dev = self._apply(self._device(device_id, "light", "plug"), on=on)
        self.show_detail("devices", device_id)
        return dev  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("devices",))
    def set_brightness(self, device_id: str, level: Annotated[int, Field(ge=1, le=100)]) -> Device:
        """Set a light's brightness (it turns on).

        Args:
            device_id: The light's id.
            level: Brightness in percent, 1-100.
        """
        dev = self._apply(self._device(device_id, "light"), on=True, brightness=level)
        self.show_detail("devices", device_id)
        return dev  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("devices",))
    def set_temperature(self, device_id: str, target: Annotated[float, Field(ge=-100, le=200)]) -> Device:
        """Set a thermostat's target temperature, in the thermostat's unit (see its "unit":
        C or F), rounded to half a degree.

        Args:
            device_id: The thermostat's id.
            target: The temperature to hold, e.g. 21 (°C) or 70 (°F).
        """
        dev = self._device(device_id, "thermostat")
        dev = self._apply(dev, target=self._check_target(dev, target, "/target"))
        self.show_detail("devices", device_id)
        return dev  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("devices",))
    def lock(self, device_id: str) -> Device:
        """Lock a door lock.

        Args:
            device_id: The lock's id.
        """
        dev = self._apply(self._device(device_id, "lock"), locked=True)
        self.show_detail("devices", device_id)
        return dev  # type: ignore[return-value]

    @tool(effect=Effect.SENSITIVE, writes=("devices",))
    def unlock(self, device_id: str) -> Device:
        """Unlock a door lock (the door can then be opened by anyone).

        Args:
            device_id: The lock's id.
        """
        dev = self._apply(self._device(device_id, "lock"), locked=False)
        self.show_detail("devices", device_id)
        return dev  # type: ignore[return-value]

    # -- scenes ---------------------------------------------------------------------------------
    @tool()
    def list_scenes(self) -> SceneList:
        """The saved scenes with their actions."""
        recs = sorted(self.t("scenes").values(), key=lambda s: s["name"])
        self.show_list("scenes", [s["id"] for s in recs])
        return {"scenes": [_scene(s) for s in recs]}

    @tool(effect=Effect.WRITE, writes=("scenes",))
    def create_scene(
        self,
        name: Annotated[str, Field(min_length=1, max_length=60)],
        actions: Annotated[list[ActionIn], Field(min_length=1, max_length=30)],
    ) -> Scene:
        """Save a scene: a name and, per device, the state to put it in when the scene runs.

        Args:
            name: The scene's name, e.g. "Movie night".
            actions: One per device, e.g. [{"device_id": "d_1", "on": true, "brightness": 20}];
                lights take on/brightness, plugs on, thermostats target, locks locked (true only).
        """
        clean = " ".join(name.split())
        if any(s["name"].casefold() == clean.casefold() for s in self.t("scenes").values()):
            raise ToolError(
                ErrorKind.CONFLICT, f"a scene named {clean!r} exists", hint="pick another name", path="/name"
            )
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        allowed = {"light": {"on", "brightness"}, "plug": {"on"}, "thermostat": {"target"}, "lock": {"locked"}}
        for i, act in enumerate(actions):
            path = f"/actions/{i}"
            if "device_id" not in act:
                raise ToolError(ErrorKind.INVALID_ARGUMENTS, "an action names no device", path=f"{path}/device_id")
            dev = self._device(act["device_id"], path=f"{path}/device_id")
            if dev["id"] in seen:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS, f"{dev['id']} appears twice", hint="one action per device", path=path
                )
            seen.add(dev["id"])
            fields = {k for k in act if k != "device_id"}
            if not fields:
                raise ToolError(ErrorKind.INVALID_ARGUMENTS, f"the action on {dev['id']} changes nothing", path=path)
            bad = fields - allowed[dev["kind"]]
            if bad:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"a {dev['kind']} has no {', '.join(sorted(bad))}",
                    hint=f"a {dev['kind']} takes {', '.join(sorted(allowed[dev['kind']]))}",
                    path=path,
                )
            if act.get("locked") is False:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    "a scene cannot unlock a door",
                    hint="unlock doors one at a time with home.unlock",
                    path=f"{path}/locked",
                )
            target = act.get("target")
            out.append(
                {
                    "device_id": dev["id"],
                    "on": act.get("on"),
                    "brightness": act.get("brightness"),
                    "target": None if target is None else self._check_target(dev, target, f"{path}/target"),
                    "locked": act.get("locked"),
                }
            )
        rec = self.put("scenes", {"id": self.new_id("scenes"), "name": clean, "actions": tuple(out)})
        self.show_detail("scenes", rec["id"])
        return _scene(rec)

    @tool(effect=Effect.WRITE, writes=("devices",))
    def run_scene(self, scene_id: str) -> SceneRun:
        """Run a scene: put each of its devices in the scene's state.

        Args:
            scene_id: The scene's id, e.g. "sc_2" (from home.list_scenes).
        """
        scene = self.require("scenes", scene_id, "scene", "home.list_scenes")
        changed = []
        for act in scene["actions"]:
            dev = self.t("devices").get(act["device_id"])
            if dev is None:  # removed since the scene was saved
                continue
            changes = {k: act[k] for k in ("on", "brightness", "target", "locked") if act[k] is not None}
            if changes.get("brightness") is not None:
                changes.setdefault("on", True)
            changed.append(dict(self._apply(dev, **changes)))
        self.show_list("devices", [d["id"] for d in changed])
        return {"scene_id": scene_id, "devices": changed}  # type: ignore[typeddict-item]

    @tool(effect=Effect.SENSITIVE, writes=("scenes",))
    def delete_scene(self, scene_id: str) -> Deleted:
        """Delete a scene (the devices stay as they are).

        Args:
            scene_id: The scene's id.
        """
        self.require("scenes", scene_id, "scene", "home.list_scenes")
        self.remove("scenes", scene_id)
        return {"deleted": scene_id}
