"""The smart-home app through the sandbox backend: lights, thermostats (°C and °F), locks,
plugs and scenes."""

from __future__ import annotations

from typing import Any

import jsonschema

from apps.home import Home
from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, ErrorKind, Feedback, Fixtures, TaskSpec


def dev(i: int, name: str, room: str, kind: str, **state: Any) -> dict[str, Any]:
    base = {"on": None, "brightness": None, "target": None, "unit": None, "locked": None}
    return {"id": f"d_{i}", "name": name, "room_id": room, "kind": kind, **base, **state}


DEVICES = [
    dev(1, "Ceiling light", "r_1", "light", on=False, brightness=80),
    dev(2, "Floor lamp", "r_1", "light", on=True, brightness=50),
    dev(3, "Thermostat", "r_1", "thermostat", target=20.0, unit="C"),
    dev(4, "Front door", "r_2", "lock", locked=True),
    dev(5, "Coffee machine", "r_3", "plug", on=True),
    dev(6, "Porch thermostat", "r_2", "thermostat", target=68.0, unit="F"),
]
TASK = TaskSpec(
    id="home-test",
    domain="device",
    goal="test",
    criteria=[AnswerCriterion(equals="ok")],
    fixtures=Fixtures(
        records={
            "home.rooms": [
                {"id": "r_1", "name": "Living room"},
                {"id": "r_2", "name": "Hallway"},
                {"id": "r_3", "name": "Kitchen"},
            ],
            "home.devices": DEVICES,
            "home.scenes": [],
        },
    ),
)


class Phone:
    def __init__(self) -> None:
        self.backend = SandboxBackend()
        self.backend.reset(TASK)

    def __call__(self, tool: str, /, **args: Any) -> Feedback:
        return self.backend.call(tool, self.backend.tools()[tool].validator.validate(args))

    def device(self, rid: str) -> dict[str, Any]:
        return dict(self.backend.tables()["home.devices"][rid])


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def test_every_tool_schema_is_valid_and_described() -> None:
    for d in Home.tool_defs():
        jsonschema.Draft202012Validator.check_schema(d.spec.parameters)
        for prop, schema in d.spec.parameters["properties"].items():
            assert schema.get("description"), (d.spec.name, prop)


def test_list_devices_by_room_and_kind() -> None:
    phone = Phone()
    assert [d["id"] for d in ok(phone("home.list_devices", room_id="r_1"))["devices"]] == ["d_1", "d_2", "d_3"]
    assert [d["id"] for d in ok(phone("home.list_devices", kind="thermostat"))["devices"]] == ["d_6", "d_3"]
    assert phone("home.list_devices", room_id="r_9").error is ErrorKind.NOT_FOUND


def test_lights_plugs_and_kinds() -> None:
    phone = Phone()
    assert ok(phone("home.set_brightness", device_id="d_1", level=30))["on"] is True
    assert phone.device("d_1")["brightness"] == 30
    ok(phone("home.switch", device_id="d_5", on=False))
    assert phone.device("d_5")["on"] is False
    fb = phone("home.switch", device_id="d_4", on=True)
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and "lock" in fb.message
    fb = phone("home.set_brightness", device_id="d_5", level=10)
    assert fb.error is ErrorKind.INVALID_ARGUMENTS


def test_thermostat_in_its_unit() -> None:
    phone = Phone()
    assert ok(phone("home.set_temperature", device_id="d_3", target=21.3))["target"] == 21.5
    assert ok(phone("home.set_temperature", device_id="d_6", target=72))["target"] == 72.0
    fb = phone("home.set_temperature", device_id="d_3", target=70)  # Fahrenheit on a Celsius thermostat
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/target"
    fb = phone("home.set_temperature", device_id="d_6", target=21)  # Celsius on a Fahrenheit one
    assert fb.error is ErrorKind.INVALID_ARGUMENTS


def test_locks_and_unlock_is_sensitive() -> None:
    phone = Phone()
    assert {d.spec.name: d.spec.effect.value for d in Home.tool_defs()}["home.unlock"] == "sensitive"
    ok(phone("home.unlock", device_id="d_4"))
    assert phone.device("d_4")["locked"] is False
    ok(phone("home.lock", device_id="d_4"))
    assert phone.device("d_4")["locked"] is True


def test_scenes_create_run_and_refuse_unlocking() -> None:
    phone = Phone()
    scene = ok(
        phone(
            "home.create_scene",
            name=" Movie  night ",
            actions=[
                {"device_id": "d_1", "brightness": 15},
                {"device_id": "d_2", "on": False},
                {"device_id": "d_3", "target": 22},
                {"device_id": "d_4", "locked": True},
            ],
        )
    )
    assert scene["id"] == "sc_1" and scene["name"] == "Movie night"
    assert phone("home.create_scene", name="movie night", actions=[{"device_id": "d_1", "on": True}]).error is (
        ErrorKind.CONFLICT
    )
    fb = phone("home.create_scene", name="Open", actions=[{"device_id": "d_4", "locked": False}])
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/actions/0/locked"
    fb = phone("home.create_scene", name="Odd", actions=[{"device_id": "d_5", "brightness": 10}])
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/actions/0"
    ok(phone("home.unlock", device_id="d_4"))
    ok(phone("home.run_scene", scene_id="sc_1"))
    assert (phone.device("d_1")["on"], phone.device("d_1")["brightness"]) == (True, 15)
    assert phone.device("d_2")["on"] is False
    assert phone.device("d_3")["target"] == 22.0
    assert phone.device("d_4")["locked"] is True
    assert phone.device("d_5")["on"] is True  # not in the scene
    assert phone("home.run_scene", scene_id="sc_9").error is ErrorKind.NOT_FOUND
