"""The settings app through the sandbox backend: defaults, no-op writes, side effects, permissions."""

from __future__ import annotations

from typing import Any

import pytest

from apps.settings import DEFAULTS
from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Effect, ErrorKind, Feedback, Fixtures, TaskSpec
from phoneenv.state import diff_tables
from phoneenv.tools import ArgumentError

READ = "android.permission.READ_CONTACTS"
WRITE = "android.permission.WRITE_CONTACTS"


def make_task(
    records: dict[str, list[dict[str, Any]]] | None = None,
    permissions: dict[str, dict[str, bool]] | None = None,
) -> TaskSpec:
    return TaskSpec(
        id="settings-test",
        domain="device",
        goal="test",
        criteria=[AnswerCriterion(equals="ok")],
        fixtures=Fixtures(
            records=records or {},
            permissions=permissions or {},
            clock="2026-11-29T09:00:00",
            timezone="Europe/Berlin",
            accounts={"mail": {"account": "sam@example.com", "signed_in": False}},
            vault={"sam@example.com": "hunter2-secret"},
        ),
    )


UNSEEDED = make_task()
SEEDED = make_task(
    {
        "settings.settings": [
            {"id": "bluetooth", "value": True},
            {"id": "brightness", "value": 30},
            {"id": "wifi_network", "value": "CafeNet"},
        ]
    },
    permissions={"contacts": {WRITE: False}},
)


class Phone:
    """A sandbox backend reset to a task, called the way the env calls it."""

    def __init__(self, task: TaskSpec) -> None:
        self.backend = SandboxBackend()
        self.backend.reset(task)

    def __call__(self, name: str, **args: Any) -> Feedback:
        entry = self.backend.tools()[name]
        return self.backend.call(name, entry.validator.validate(args))

    @property
    def settings(self) -> dict[str, Any]:
        return {k: r["value"] for k, r in self.backend.tables().get("settings.settings", {}).items()}


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def test_defaults_when_fixtures_seed_nothing() -> None:
    phone = Phone(UNSEEDED)
    assert ok(phone("settings.get", key="wifi")) == {"key": "wifi", "value": True}
    assert ok(phone("settings.get", key="wifi_network")) == {"key": "wifi_network", "value": "HomeNet"}
    assert ok(phone("settings.list_all")) == {
        "settings": [
            {"key": "wifi", "value": True},
            {"key": "bluetooth", "value": False},
            {"key": "dnd", "value": False},
            {"key": "airplane_mode", "value": False},
            {"key": "location", "value": True},
            {"key": "brightness", "value": 60},
            {"key": "volume_ring", "value": 70},
            {"key": "volume_media", "value": 50},
            {"key": "dark_mode", "value": False},
            {"key": "wifi_network", "value": "HomeNet"},
        ]
    }
    assert "settings.settings" not in phone.backend.tables()  # reading creates nothing
    with pytest.raises(ArgumentError):
        phone("settings.get", key="volume")


def test_seeded_values_override_defaults() -> None:
    phone = Phone(SEEDED)
    values = {s["key"]: s["value"] for s in ok(phone("settings.list_all"))["settings"]}
    assert values == {**DEFAULTS, "bluetooth": True, "brightness": 30, "wifi_network": "CafeNet"}


def test_writing_the_current_value_is_a_no_op() -> None:
    phone = Phone(SEEDED)
    before = phone.backend.snapshot()
    for name, args in [
        ("settings.set_wifi", {"enabled": True}),  # default, no record
        ("settings.set_bluetooth", {"enabled": True}),  # seeded record
        ("settings.set_brightness", {"level": 30}),
        ("settings.set_volume", {"stream": "ring", "level": 70}),
        ("settings.set_dark_mode", {"enabled": False}),
        ("settings.set_airplane_mode", {"enabled": False}),
    ]:
        res = ok(phone(name, **args))
        assert res["changed"] is False and res["changes"] == [], name
    assert phone.backend.tables() == before.tables
    assert diff_tables(before.tables, phone.backend.tables()) == []
    assert phone.backend.tables()["settings.settings"]["bluetooth"] is before.tables["settings.settings"]["bluetooth"]


def test_writes_insert_or_update_records() -> None:
    phone = Phone(SEEDED)
    assert ok(phone("settings.set_wifi", enabled=False)) == {
        "key": "wifi",
        "value": False,
        "changed": True,
        "changes": [{"key": "wifi", "old": True, "new": False}],
    }
    assert ok(phone("settings.set_brightness", level=85))["changes"] == [{"key": "brightness", "old": 30, "new": 85}]
    assert ok(phone("settings.set_volume", stream="media", level=0))["changes"] == [
        {"key": "volume_media", "old": 50, "new": 0}
    ]
    ok(phone("settings.set_dnd", enabled=True))
    ok(phone("settings.set_location", enabled=False))
    ok(phone("settings.set_dark_mode", enabled=True))
    assert phone.settings == {
        "bluetooth": True,
        "brightness": 85,
        "wifi_network": "CafeNet",
        "wifi": False,
        "volume_media": 0,
        "dnd": True,
        "location": False,
        "dark_mode": True,
    }
    assert ok(phone("settings.get", key="volume_media"))["value"] == 0
    assert ok(phone("settings.get", key="volume_ring"))["value"] == 70


def test_airplane_mode_turns_radios_off() -> None:
    phone = Phone(SEEDED)  # wifi on by default, bluetooth seeded on
    before = phone.backend.snapshot()
    res = ok(phone("settings.set_airplane_mode", enabled=True))
    assert res == {
        "key": "airplane_mode",
        "value": True,
        "changed": True,
        "changes": [
            {"key": "airplane_mode", "old": False, "new": True},
            {"key": "wifi", "old": True, "new": False},
            {"key": "bluetooth", "old": True, "new": False},
        ],
    }
    changes = diff_tables(before.tables, phone.backend.tables())
    assert [(c.table, c.id, c.kind) for c in changes] == [
        ("settings.settings", "airplane_mode", "created"),
        ("settings.settings", "bluetooth", "updated"),
        ("settings.settings", "wifi", "created"),
    ]
    off = ok(phone("settings.set_airplane_mode", enabled=False))
    assert off["changes"] == [{"key": "airplane_mode", "old": True, "new": False}]
    assert phone.settings["wifi"] is False and phone.settings["bluetooth"] is False


def test_airplane_mode_with_radios_already_off_records_only_itself() -> None:
    phone = Phone(UNSEEDED)
    ok(phone("settings.set_wifi", enabled=False))
    res = ok(phone("settings.set_airplane_mode", enabled=True))
    assert res["changes"] == [{"key": "airplane_mode", "old": False, "new": True}]
    assert phone.settings == {"wifi": False, "airplane_mode": True}


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("settings.set_brightness", {"level": 101}),
        ("settings.set_brightness", {"level": -1}),
        ("settings.set_brightness", {"level": "50"}),
        ("settings.set_volume", {"stream": "alarm", "level": 5}),
        ("settings.set_wifi", {"enabled": "true"}),
    ],
)
def test_bad_arguments(name: str, args: dict[str, Any]) -> None:
    with pytest.raises(ArgumentError):
        Phone(UNSEEDED)(name, **args)


def test_app_permissions_list_revoke_grant() -> None:
    phone = Phone(SEEDED)
    assert ok(phone("settings.list_app_permissions", app="contacts")) == {
        "app": "contacts",
        "permissions": [{"permission": READ, "granted": True}, {"permission": WRITE, "granted": False}],
    }
    assert ok(phone("settings.list_app_permissions", app="clock")) == {"app": "clock", "permissions": []}

    assert ok(phone("settings.revoke_permission", app="contacts", permission=READ)) == {
        "app": "contacts",
        "permission": READ,
        "granted": False,
        "changed": True,
    }
    assert phone.backend.tables()["system.permissions"][f"contacts/{READ}"]["granted"] is False
    denied = phone("contacts.list")
    assert denied.error is ErrorKind.PERMISSION_DENIED

    assert ok(phone("settings.grant_permission", app="contacts", permission=READ))["granted"] is True
    assert ok(phone("contacts.list"))["total"] == 0
    again = ok(phone("settings.grant_permission", app="contacts", permission=READ))
    assert again["changed"] is False


def test_permission_errors() -> None:
    phone = Phone(SEEDED)
    before = phone.backend.snapshot()
    fb = phone("settings.revoke_permission", app="contacts", permission="android.permission.CAMERA")
    assert fb.error is ErrorKind.NOT_FOUND and fb.candidates == [READ, WRITE]
    assert "settings.list_app_permissions" in (fb.hint or "")
    fb = phone("settings.grant_permission", app="nosuch", permission=READ)
    assert fb.error is ErrorKind.NOT_FOUND and "contacts" in (fb.candidates or [])
    assert phone("settings.list_app_permissions", app="nosuch").error is ErrorKind.NOT_FOUND
    assert phone.backend.tables() == before.tables


def test_restore_undoes_writes_and_results_do_not_alias_state() -> None:
    phone = Phone(SEEDED)
    before = phone.backend.snapshot()
    res = ok(phone("settings.set_airplane_mode", enabled=True))
    res["changes"][0]["new"] = "mutated"
    listing = ok(phone("settings.list_all"))
    listing["settings"][0]["value"] = "mutated"
    perms = ok(phone("settings.list_app_permissions", app="contacts"))
    perms["permissions"][0]["granted"] = "mutated"
    assert phone.settings["airplane_mode"] is True
    assert phone.settings["wifi"] is False
    assert phone.backend.tables()["system.permissions"][f"contacts/{READ}"]["granted"] is True
    ok(phone("settings.revoke_permission", app="contacts", permission=READ))
    phone.backend.restore(before)
    assert phone.backend.tables() == before.tables
    assert phone.settings == {"bluetooth": True, "brightness": 30, "wifi_network": "CafeNet"}


def test_tool_specs() -> None:
    tools = SandboxBackend().tools()
    effects = {n: e.spec.effect for n, e in tools.items() if n.startswith("settings.")}
    reads = {"settings.get", "settings.list_all", "settings.list_app_permissions", "settings.dnd_status"}
    sensitive = {"settings.grant_permission", "settings.revoke_permission", "settings.delete_dnd_schedule"}
    assert len(effects) >= 13
    for name, effect in effects.items():
        want = Effect.READ if name in reads else Effect.SENSITIVE if name in sensitive else Effect.WRITE
        assert effect is want, name
        spec = tools[name].spec
        assert spec.domain == "device" and spec.description and not spec.permissions and not spec.requires_login
    keys = tools["settings.get"].spec.parameters["properties"]["key"]["enum"]
    assert keys == list(DEFAULTS)


def test_screen_shows_effective_values() -> None:
    phone = Phone(SEEDED)
    app = phone.backend.phone.apps["settings"]
    meta = phone.backend.phone.state.meta
    ok(phone("settings.set_airplane_mode", enabled=True))
    assert app.screen(meta["view"]) == ("Settings", ["Airplane mode: on", "Wi-Fi: off", "Bluetooth: off"])
    ok(phone("settings.get", key="wifi_network"))
    assert app.screen(meta["view"]) == ("Settings", ["Wi-Fi network: CafeNet"])
    ok(phone("settings.list_app_permissions", app="contacts"))
    assert app.screen(meta["view"]) == ("Settings", ["READ_CONTACTS: allowed", "WRITE_CONTACTS: denied"])
    assert app.screen(None)[1][4:6] == ["Location: on", "Brightness: 30"]
    assert phone.backend.screenshot().shape == (640, 360, 3)
