"""The clock app through the sandbox backend: time, alarms, timers, world time.

The fixture clock is Sunday 2026-11-29 09:00:00 in Europe/Berlin (UTC+01:00); every call advances
it by one second, so the n-th call of a test runs at 09:00:0n.
"""

from __future__ import annotations

from typing import Any

import pytest

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Effect, ErrorKind, Feedback, Fixtures, TaskSpec
from phoneenv.tools import ArgumentError


def make_task(records: dict[str, list[dict[str, Any]]] | None = None, timezone: str = "Europe/Berlin") -> TaskSpec:
    return TaskSpec(
        id="clock-test",
        domain="time",
        goal="test",
        criteria=[AnswerCriterion(equals="ok")],
        fixtures=Fixtures(
            records=records or {},
            clock="2026-11-29T09:00:00",
            timezone=timezone,
            accounts={"mail": {"account": "sam@example.com", "signed_in": False}},
            vault={"sam@example.com": "hunter2-secret"},
        ),
    )


EMPTY = make_task()
SEEDED = make_task(
    {
        "clock.alarms": [{"id": "al_1", "time": "06:00", "label": None, "enabled": True, "days": ("mon",)}],
        "clock.timers": [
            {
                "id": "tm_1",
                "label": "Eggs",
                "duration_s": 60,
                "started": "2026-11-29T08:58:00",
                "ends": "2026-11-29T08:59:00",
                "running": True,
            }
        ],
    }
)


class Phone:
    """A sandbox backend reset to a task, called the way the env calls it."""

    def __init__(self, task: TaskSpec) -> None:
        self.backend = SandboxBackend()
        self.backend.reset(task)

    def __call__(self, name: str, **args: Any) -> Feedback:
        entry = self.backend.tools()[name]
        return self.backend.call(name, entry.validator.validate(args))

    def table(self, name: str) -> dict[str, dict[str, Any]]:
        return dict(self.backend.tables().get(name, {}))


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def test_now_reports_local_time_zone_weekday_and_offset() -> None:
    phone = Phone(EMPTY)
    assert ok(phone("clock.now")) == {
        "local_time": "2026-11-29T09:00:01",
        "timezone": "Europe/Berlin",
        "weekday": "Sunday",
        "utc_offset": "+01:00",
    }
    assert ok(phone("clock.now"))["local_time"] == "2026-11-29T09:00:02"


@pytest.mark.parametrize(
    ("zone", "offset", "local"),
    [("Asia/Kolkata", "+05:30", "2026-11-29T09:00:01"), ("America/St_Johns", "-03:30", "2026-11-29T09:00:01")],
)
def test_now_in_other_phone_timezones(zone: str, offset: str, local: str) -> None:
    phone = Phone(make_task(timezone=zone))
    res = ok(phone("clock.now"))
    assert (res["timezone"], res["utc_offset"], res["local_time"]) == (zone, offset, local)


def test_world_time() -> None:
    phone = Phone(EMPTY)
    # 09:00:01 in Berlin is 08:00:01 UTC.
    assert ok(phone("clock.world_time", timezone="Asia/Tokyo")) == {
        "local_time": "2026-11-29T17:00:01",
        "timezone": "Asia/Tokyo",
        "weekday": "Sunday",
        "utc_offset": "+09:00",
        "hours_ahead": 8.0,
    }
    ny = ok(phone("clock.world_time", timezone="america/new_york"))
    assert ny == {
        "local_time": "2026-11-29T03:00:02",
        "timezone": "America/New_York",
        "weekday": "Sunday",
        "utc_offset": "-05:00",
        "hours_ahead": -6.0,
    }
    assert ok(phone("clock.world_time", timezone="Pacific/Kiritimati"))["weekday"] == "Sunday"
    assert ok(phone("clock.world_time", timezone="Pacific/Kiritimati"))["local_time"] == "2026-11-29T22:00:04"


def test_world_time_unknown_zone_suggests_candidates() -> None:
    phone = Phone(EMPTY)
    fb = phone("clock.world_time", timezone="Tokyo")
    assert not fb.ok and fb.error is ErrorKind.NOT_FOUND and fb.recoverable
    assert fb.candidates and fb.candidates[0] == "Asia/Tokyo"
    fb = phone("clock.world_time", timezone="Europe/Pari")
    assert fb.error is ErrorKind.NOT_FOUND
    assert fb.candidates and fb.candidates[0] == "Europe/Paris"
    assert "Region/City" in (fb.hint or "")


def test_alarms_create_list_and_duplicate_time_allowed() -> None:
    phone = Phone(EMPTY)
    first = ok(phone("clock.create_alarm", time="07:30", label="Work", days=["fri", "mon", "mon"]))
    assert first == {
        "id": "al_1",
        "time": "07:30",
        "label": "Work",
        "enabled": True,
        "days": ["mon", "fri"],
        "next_ring": "2026-11-30T07:30",  # today is Sunday: next Monday
        "same_time": [],
    }
    second = ok(phone("clock.create_alarm", time="07:30"))
    assert second["id"] == "al_2"
    assert second["same_time"] == ["al_1"]
    assert second["days"] == [] and second["label"] is None
    assert second["next_ring"] == "2026-11-30T07:30"  # 07:30 today has passed
    third = ok(phone("clock.create_alarm", time="21:15", days=["sun"]))
    assert third["next_ring"] == "2026-11-29T21:15"
    assert third["same_time"] == []

    listed = ok(phone("clock.list_alarms"))
    assert listed["total"] == 3
    assert [a["id"] for a in listed["alarms"]] == ["al_1", "al_2", "al_3"]
    assert phone.table("clock.alarms") == {
        "al_1": {"id": "al_1", "time": "07:30", "label": "Work", "enabled": True, "days": ("mon", "fri")},
        "al_2": {"id": "al_2", "time": "07:30", "label": None, "enabled": True, "days": ()},
        "al_3": {"id": "al_3", "time": "21:15", "label": None, "enabled": True, "days": ("sun",)},
    }


def test_alarm_ids_continue_after_seeded_ones_and_next_ring_wraps_a_week() -> None:
    phone = Phone(SEEDED)
    alarm = ok(phone("clock.create_alarm", time="06:00", days=["sun"]))
    assert alarm["id"] == "al_2"
    assert alarm["same_time"] == ["al_1"]
    assert alarm["next_ring"] == "2026-12-06T06:00"  # Sunday 06:00 today has passed


def test_alarm_update_enable_delete() -> None:
    phone = Phone(SEEDED)
    res = ok(phone("clock.update_alarm", alarm_id="al_1", time="06:45", label="Gym"))
    assert res == {
        "id": "al_1",
        "time": "06:45",
        "label": "Gym",
        "enabled": True,
        "days": ["mon"],
        "next_ring": "2026-11-30T06:45",
    }
    res = ok(phone("clock.update_alarm", alarm_id="al_1", days=[]))
    assert res["days"] == [] and res["time"] == "06:45"
    fb = phone("clock.update_alarm", alarm_id="al_1")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS

    res = ok(phone("clock.set_alarm_enabled", alarm_id="al_1", enabled=False))
    assert res["enabled"] is False and res["next_ring"] is None
    assert phone.table("clock.alarms")["al_1"]["enabled"] is False

    assert ok(phone("clock.delete_alarm", alarm_id="al_1")) == {"deleted": "al_1"}
    assert phone.table("clock.alarms") == {}
    fb = phone("clock.delete_alarm", alarm_id="al_1")
    assert fb.error is ErrorKind.NOT_FOUND
    assert "clock.list_alarms" in (fb.hint or "")
    assert phone("clock.set_alarm_enabled", alarm_id="al_9", enabled=True).error is ErrorKind.NOT_FOUND


@pytest.mark.parametrize(
    "args",
    [{"time": "24:00"}, {"time": "7:30"}, {"time": "07:60"}, {"time": "07:30", "days": ["monday"]}, {"time": 730}],
)
def test_create_alarm_rejects_bad_arguments(args: dict[str, Any]) -> None:
    phone = Phone(EMPTY)
    with pytest.raises(ArgumentError):
        phone("clock.create_alarm", **args)


def test_timers_count_down_with_the_phone_clock() -> None:
    phone = Phone(EMPTY)
    tea = ok(phone("clock.start_timer", duration_seconds=300, label="Tea"))  # 09:00:01
    assert tea == {
        "id": "tm_1",
        "label": "Tea",
        "duration_s": 300,
        "started": "2026-11-29T09:00:01",
        "ends": "2026-11-29T09:05:01",
        "running": True,
        "status": "running",
        "remaining_s": 300,
    }
    assert ok(phone("clock.list_timers"))["timers"][0]["remaining_s"] == 299  # 09:00:02
    ok(phone("clock.start_timer", duration_seconds=60))  # 09:00:03, ends 09:01:03
    listed = ok(phone("clock.list_timers"))  # 09:00:04
    assert [(t["id"], t["remaining_s"], t["ends"]) for t in listed["timers"]] == [
        ("tm_2", 59, "2026-11-29T09:01:03"),
        ("tm_1", 297, "2026-11-29T09:05:01"),
    ]
    assert listed["total"] == 2

    cancelled = ok(phone("clock.cancel_timer", timer_id="tm_1"))  # 09:00:05
    assert (cancelled["running"], cancelled["status"], cancelled["remaining_s"]) == (False, "cancelled", 0)
    assert phone.table("clock.timers")["tm_1"]["running"] is False
    fb = phone("clock.cancel_timer", timer_id="tm_1")
    assert fb.error is ErrorKind.PRECONDITION_FAILED and "cancelled" in (fb.message or "")
    assert [t["status"] for t in ok(phone("clock.list_timers"))["timers"]] == ["running", "cancelled"]
    assert phone("clock.cancel_timer", timer_id="tm_7").error is ErrorKind.NOT_FOUND


def test_finished_timer_cannot_be_cancelled() -> None:
    phone = Phone(SEEDED)
    timers = ok(phone("clock.list_timers"))["timers"]
    assert timers == [
        {
            "id": "tm_1",
            "label": "Eggs",
            "duration_s": 60,
            "started": "2026-11-29T08:58:00",
            "ends": "2026-11-29T08:59:00",
            "running": False,
            "status": "finished",
            "remaining_s": 0,
        }
    ]
    fb = phone("clock.cancel_timer", timer_id="tm_1")
    assert fb.error is ErrorKind.PRECONDITION_FAILED and "rang" in (fb.message or "")
    assert phone.table("clock.timers")["tm_1"]["running"] is True  # unchanged
    with pytest.raises(ArgumentError):
        phone("clock.start_timer", duration_seconds=0)
    with pytest.raises(ArgumentError):
        phone("clock.start_timer", duration_seconds=86401)


def test_restore_undoes_writes_and_results_do_not_alias_state() -> None:
    phone = Phone(SEEDED)
    before = phone.backend.snapshot()
    clock = phone.backend.clock()
    res = ok(phone("clock.create_alarm", time="05:00", days=["tue"]))
    res["days"].append("wed")
    res["label"] = "mutated"
    listed = ok(phone("clock.list_alarms"))
    listed["alarms"][0]["time"] = "00:00"
    timers = ok(phone("clock.list_timers"))
    timers["timers"][0]["label"] = "mutated"
    assert phone.table("clock.alarms")["al_2"] == {
        "id": "al_2",
        "time": "05:00",
        "label": None,
        "enabled": True,
        "days": ("tue",),
    }
    assert phone.table("clock.alarms")["al_1"]["time"] == "06:00"
    assert phone.table("clock.timers")["tm_1"]["label"] == "Eggs"
    ok(phone("clock.delete_alarm", alarm_id="al_1"))
    phone.backend.restore(before)
    assert phone.backend.tables() == before.tables
    assert phone.backend.clock() == clock
    assert ok(phone("clock.create_alarm", time="05:00"))["id"] == "al_2"


def test_tool_specs() -> None:
    tools = SandboxBackend().tools()
    names = {n for n in tools if n.startswith("clock.")}
    assert names == {
        "clock.now",
        "clock.world_time",
        "clock.list_alarms",
        "clock.create_alarm",
        "clock.update_alarm",
        "clock.set_alarm_enabled",
        "clock.delete_alarm",
        "clock.start_timer",
        "clock.list_timers",
        "clock.cancel_timer",
    }
    for name in names:
        spec = tools[name].spec
        assert spec.domain == "time" and spec.description and not spec.permissions and not spec.requires_login
        if name in {"clock.now", "clock.world_time", "clock.list_alarms", "clock.list_timers"}:
            want = Effect.READ
        elif name == "clock.delete_alarm":
            want = Effect.SENSITIVE  # deleting is sensitive
        else:
            want = Effect.WRITE
        assert spec.effect is want, name
    assert tools["clock.create_alarm"].spec.parameters["required"] == ["time"]


def test_screen_rows() -> None:
    phone = Phone(SEEDED)
    ok(phone("clock.create_alarm", time="07:30", label="Work", days=["mon", "fri"]))
    ok(phone("clock.list_alarms"))
    device = phone.backend.phone
    assert device.apps["clock"].screen(device.state.meta["view"]) == (
        "Clock",
        ["06:00  mon  on", "07:30  Work  mon,fri  on"],
    )
    ok(phone("clock.start_timer", duration_seconds=3725, label="Roast"))  # 09:00:03
    ok(phone("clock.list_timers"))  # 09:00:04
    assert device.apps["clock"].screen(device.state.meta["view"])[1] == [
        "Roast  1:02:04  running",
        "Eggs  0:00:00  finished",
    ]
    assert phone.backend.screenshot().shape == (640, 360, 3)
