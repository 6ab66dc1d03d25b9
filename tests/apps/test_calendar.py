"""The calendar app driven through the sandbox backend: listing, overlaps, attendees, free slots."""

from __future__ import annotations

from typing import Any

import pytest

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, ErrorKind, Fixtures, TaskSpec
from phoneenv.state import diff_tables
from phoneenv.tools import ArgumentError
from tests.apps.helpers import call, ok

EVENTS = [
    {
        "id": "ev_1",
        "title": "Standup",
        "start": "2026-11-30T09:00",
        "end": "2026-11-30T09:30",
        "location": "Office",
        "attendees": ("Ben Ott",),
        "notes": None,
        "all_day": False,
    },
    {
        "id": "ev_2",
        "title": "Dentist",
        "start": "2026-11-30T14:00",
        "end": "2026-11-30T15:00",
        "location": "Dr. Weber, Main St",
        "attendees": (),
        "notes": "bring insurance card",
        "all_day": False,
    },
    {
        "id": "ev_3",
        "title": "Team offsite",
        "start": "2026-11-30T00:00",
        "end": "2026-12-01T00:00",
        "location": None,
        "attendees": (),
        "notes": None,
        "all_day": True,
    },
    {
        # attendees as a list, the way JSON fixtures carry them
        "id": "ev_4",
        "title": "Brunch",
        "start": "2026-11-29T11:00",
        "end": "2026-11-29T12:30",
        "location": "Café Blau",
        "attendees": ["Ana Lima"],
        "notes": None,
        "all_day": False,
    },
    {
        "id": "ev_5",
        "title": "Late movie",
        "start": "2026-11-29T23:00",
        "end": "2026-11-30T01:00",
        "location": None,
        "attendees": (),
        "notes": None,
        "all_day": False,
    },
]


def make_task(**fixtures: Any) -> TaskSpec:
    return TaskSpec(
        id="calendar-test",
        domain="scheduling",
        goal="test",
        criteria=[AnswerCriterion(equals="x")],
        fixtures=Fixtures(
            records={"calendar.events": EVENTS},
            clock="2026-11-29T09:00:00",
            timezone="Europe/Berlin",
            **fixtures,
        ),
    )


TASK = make_task()
READ_ONLY = make_task(permissions={"calendar": {"android.permission.WRITE_CALENDAR": False}})


@pytest.fixture
def b() -> SandboxBackend:
    backend = SandboxBackend()
    backend.reset(TASK)
    return backend


def events(b: SandboxBackend) -> dict[str, dict[str, Any]]:
    return dict(b.tables()["calendar.events"])


def ids(res: dict[str, Any]) -> list[str]:
    return [e["id"] for e in res["events"]]


def test_tools_are_described() -> None:
    tools = SandboxBackend().tools()
    names = {n for n in tools if n.startswith("calendar.")}
    assert names == {
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
    }
    for name in names:
        spec = tools[name].spec
        assert spec.description != name
        for prop, schema in spec.parameters["properties"].items():
            assert schema.get("description"), (name, prop)
    assert tools["calendar.delete_event"].spec.effect.value == "sensitive"
    assert tools["calendar.create_event"].spec.effect.value == "write"
    assert tools["calendar.free_slots"].spec.effect.value == "read"
    assert tools["calendar.create_event"].spec.parameters["required"] == ["title", "start", "end"]


def test_list_events_defaults_to_today(b: SandboxBackend) -> None:
    res = ok(b, "calendar.list_events")
    assert (res["date"], res["last_date"], ids(res), res["total"]) == ("2026-11-29", "2026-11-29", ["ev_4", "ev_5"], 2)
    assert res["events"][0] == {
        "id": "ev_4",
        "title": "Brunch",
        "start": "2026-11-29T11:00",
        "end": "2026-11-29T12:30",
        "location": "Café Blau",
        "attendees": ["Ana Lima"],
        "notes": None,
        "all_day": False,
        "reminders": [],
        "timezone": "Europe/Berlin",
        "zone_start": "2026-11-29T11:00",
        "zone_end": "2026-11-29T12:30",
    }
    assert b.phone.state.meta["view"] == ("calendar", "list", "events", ("ev_4", "ev_5"))
    title, lines = b.phone.apps["calendar"].screen(b.phone.state.meta["view"])
    assert (title, lines) == ("Calendar", ["2026-11-29 11:00  Brunch @ Café Blau", "2026-11-29 23:00  Late movie"])


def test_list_events_includes_events_running_into_the_day(b: SandboxBackend) -> None:
    assert ids(ok(b, "calendar.list_events", date="2026-11-30")) == ["ev_5", "ev_3", "ev_1", "ev_2"]
    res = ok(b, "calendar.list_events", date="2026-11-29", days=2)
    assert (ids(res), res["last_date"]) == (["ev_4", "ev_5", "ev_3", "ev_1", "ev_2"], "2026-11-30")
    assert ok(b, "calendar.list_events", date="2026-12-01")["events"] == []
    assert ids(ok(b, "calendar.list_events", date="2026-11-28", days=3)) == ["ev_4", "ev_5", "ev_3", "ev_1", "ev_2"]


def test_list_events_rejects_bad_dates(b: SandboxBackend) -> None:
    fb = call(b, "calendar.list_events", date="2026-02-30")
    assert (fb.ok, fb.error, fb.path) == (False, ErrorKind.INVALID_ARGUMENTS, "/date")
    validate = b.tools()["calendar.list_events"].validator.validate
    with pytest.raises(ArgumentError) as exc:
        validate({"date": "30.11.2026"})
    assert exc.value.path == "/date"
    with pytest.raises(ArgumentError) as exc:
        validate({"days": 32})
    assert exc.value.path == "/days"


def test_get_and_search(b: SandboxBackend) -> None:
    assert ok(b, "calendar.get_event", event_id="ev_2")["notes"] == "bring insurance card"
    assert b.phone.state.meta["view"] == ("calendar", "detail", "events", "ev_2")
    fb = call(b, "calendar.get_event", event_id="ev_9")
    assert fb.error is ErrorKind.NOT_FOUND and "calendar.search_events" in fb.hint
    assert ids(ok(b, "calendar.search_events", query="ana")) == ["ev_4"]
    assert ids(ok(b, "calendar.search_events", query="main  st")) == ["ev_2"]
    assert ids(ok(b, "calendar.search_events", query="OFFICE")) == ["ev_1"]
    res = ok(b, "calendar.search_events", query="t", limit=2)
    assert (ids(res), res["total"]) == (["ev_5", "ev_3"], 4)
    assert ok(b, "calendar.search_events", query="insurance") == {"events": [], "total": 0}  # notes not searched


def test_create_event_reports_overlaps(b: SandboxBackend) -> None:
    res = ok(
        b,
        "calendar.create_event",
        title="Lunch with Ana",
        start="2026-11-30T14:30",
        end="2026-11-30T15:30:59",
        attendees=["Ana Lima"],
    )
    assert res == {
        "id": "ev_6",
        "title": "Lunch with Ana",
        "start": "2026-11-30T14:30",
        "end": "2026-11-30T15:30",
        "location": None,
        "attendees": ["Ana Lima"],
        "notes": None,
        "all_day": False,
        "reminders": [],
        "timezone": "Europe/Berlin",
        "zone_start": "2026-11-30T14:30",
        "zone_end": "2026-11-30T15:30",
        "conflicts": ["ev_2"],  # not the all-day offsite
    }
    shown_only = ("conflicts", "reminders", "timezone", "zone_start", "zone_end")  # none stored for this event
    assert events(b)["ev_6"] == {
        k: (tuple(v) if k == "attendees" else v) for k, v in res.items() if k not in shown_only
    }
    # touching an event's end is not an overlap; overlapping two reports both, by start
    assert (
        ok(b, "calendar.create_event", title="Call", start="2026-11-30T15:30", end="2026-11-30T16:00")["conflicts"]
        == []
    )
    res = ok(b, "calendar.create_event", title="Review", start="2026-11-30T08:00", end="2026-11-30T14:45")
    assert (res["id"], res["conflicts"]) == ("ev_8", ["ev_1", "ev_2", "ev_6"])
    res = ok(b, "calendar.create_event", title="Night", start="2026-11-30T00:30", end="2026-11-30T02:00")
    assert res["conflicts"] == ["ev_5"]


def test_create_event_validation(b: SandboxBackend) -> None:
    fb = call(b, "calendar.create_event", title="Oops", start="2026-11-30T10:00", end="2026-11-30T09:00")
    assert (fb.ok, fb.error, fb.path) == (False, ErrorKind.INVALID_ARGUMENTS, "/end")
    fb = call(b, "calendar.create_event", title="Zero", start="2026-11-30T10:00", end="2026-11-30T10:00")
    assert fb.path == "/end"
    fb = call(b, "calendar.create_event", title="Bad", start="2026-11-31T10:00", end="2026-12-01T10:00")
    assert (fb.error, fb.path) == (ErrorKind.INVALID_ARGUMENTS, "/start")
    fb = call(
        b,
        "calendar.create_event",
        title="Dup",
        start="2026-12-02T10:00",
        end="2026-12-02T11:00",
        attendees=["Ana", "ana"],
    )
    assert (fb.error, fb.path) == (ErrorKind.INVALID_ARGUMENTS, "/attendees/1")
    fb = call(b, "calendar.create_event", title="  ", start="2026-12-02T10:00", end="2026-12-02T11:00")
    assert (fb.error, fb.path) == (ErrorKind.INVALID_ARGUMENTS, "/title")
    validate = b.tools()["calendar.create_event"].validator.validate
    with pytest.raises(ArgumentError) as exc:
        validate({"title": "x", "start": "tomorrow 10am", "end": "2026-12-02T11:00"})
    assert exc.value.path == "/start"
    assert len(events(b)) == 5


def test_create_all_day_event(b: SandboxBackend) -> None:
    res = ok(
        b, "calendar.create_event", title="Holiday", start="2026-11-30T10:00", end="2026-11-30T12:00", all_day=True
    )
    assert (res["start"], res["end"], res["all_day"], res["conflicts"]) == (
        "2026-11-30T00:00",
        "2026-12-01T00:00",
        True,
        [],
    )
    res = ok(b, "calendar.create_event", title="Trip", start="2026-12-03T00:00", end="2026-12-05T00:00", all_day=True)
    assert (res["start"], res["end"]) == ("2026-12-03T00:00", "2026-12-05T00:00")
    # all-day events never show up as conflicts of timed events
    res = ok(b, "calendar.create_event", title="Packing", start="2026-12-03T18:00", end="2026-12-03T19:00")
    assert res["conflicts"] == []


def test_update_event(b: SandboxBackend) -> None:
    # moving the start keeps the length
    res = ok(b, "calendar.update_event", event_id="ev_1", start="2026-11-30T14:15")
    assert (res["start"], res["end"], res["conflicts"]) == ("2026-11-30T14:15", "2026-11-30T14:45", ["ev_2"])
    res = ok(
        b, "calendar.update_event", event_id="ev_1", end="2026-11-30T16:00", title="Long standup", location="Room 2"
    )
    assert (res["title"], res["start"], res["end"], res["location"]) == (
        "Long standup",
        "2026-11-30T14:15",
        "2026-11-30T16:00",
        "Room 2",
    )
    assert res["attendees"] == ["Ben Ott"] and res["conflicts"] == ["ev_2"]
    # an event never conflicts with itself
    assert ok(b, "calendar.update_event", event_id="ev_2", notes="")["conflicts"] == ["ev_1"]
    assert events(b)["ev_2"]["notes"] == ""
    fb = call(b, "calendar.update_event", event_id="ev_1", end="2026-11-30T14:00")
    assert (fb.error, fb.path) == (ErrorKind.INVALID_ARGUMENTS, "/end")
    fb = call(b, "calendar.update_event", event_id="ev_1")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.message == "nothing to update"
    fb = call(b, "calendar.update_event", event_id="ev_42", title="x")
    assert fb.error is ErrorKind.NOT_FOUND
    assert events(b)["ev_1"]["end"] == "2026-11-30T16:00"


def test_update_all_day_event_stays_whole_days(b: SandboxBackend) -> None:
    res = ok(b, "calendar.update_event", event_id="ev_3", start="2026-12-02T09:00")
    assert (res["start"], res["end"], res["conflicts"]) == ("2026-12-02T00:00", "2026-12-03T00:00", [])


def test_attendees(b: SandboxBackend) -> None:
    res = ok(b, "calendar.add_attendee", event_id="ev_1", attendee="Ana  Lima")
    assert res["attendees"] == ["Ben Ott", "Ana Lima"]
    assert events(b)["ev_1"]["attendees"] == ("Ben Ott", "Ana Lima")
    fb = call(b, "calendar.add_attendee", event_id="ev_1", attendee="ben ott")
    assert (fb.ok, fb.error, fb.candidates) == (False, ErrorKind.CONFLICT, ["Ben Ott", "Ana Lima"])
    res = ok(b, "calendar.remove_attendee", event_id="ev_1", attendee="BEN OTT")
    assert res["attendees"] == ["Ana Lima"]
    fb = call(b, "calendar.remove_attendee", event_id="ev_1", attendee="Carl")
    assert (fb.error, fb.candidates) == (ErrorKind.NOT_FOUND, ["Ana Lima"])
    # a fixture list of attendees works too
    assert ok(b, "calendar.add_attendee", event_id="ev_4", attendee="ben@example.com")["attendees"] == [
        "Ana Lima",
        "ben@example.com",
    ]
    assert events(b)["ev_4"]["attendees"] == ("Ana Lima", "ben@example.com")
    assert call(b, "calendar.add_attendee", event_id="ev_9", attendee="x").error is ErrorKind.NOT_FOUND


def test_delete_event(b: SandboxBackend) -> None:
    snap = b.snapshot()
    assert ok(b, "calendar.delete_event", event_id="ev_2") == {"deleted": "ev_2"}
    assert b.phone.state.meta["view"] == ("calendar", "list", "events", ("ev_3", "ev_1"))
    assert call(b, "calendar.get_event", event_id="ev_2").error is ErrorKind.NOT_FOUND
    assert call(b, "calendar.delete_event", event_id="ev_2").error is ErrorKind.NOT_FOUND
    ok(b, "calendar.delete_event", event_id="ev_5")
    new = ok(b, "calendar.create_event", title="New", start="2026-12-01T10:00", end="2026-12-01T11:00")
    assert new["id"] == "ev_6"
    changes = [(c.id, c.kind) for c in diff_tables(snap.tables, b.tables()) if c.table == "calendar.events"]
    assert changes == [("ev_2", "deleted"), ("ev_5", "deleted"), ("ev_6", "created")]


def test_free_slots(b: SandboxBackend) -> None:
    res = ok(b, "calendar.free_slots", date="2026-11-30", duration_minutes=30)
    assert res == {
        "date": "2026-11-30",
        "duration_minutes": 30,
        "slots": [
            {"start": "2026-11-30T09:30", "end": "2026-11-30T14:00", "minutes": 270},
            {"start": "2026-11-30T15:00", "end": "2026-11-30T18:00", "minutes": 180},
        ],
    }
    res = ok(b, "calendar.free_slots", date="2026-11-30", duration_minutes=200)
    assert [s["minutes"] for s in res["slots"]] == [270]
    res = ok(b, "calendar.free_slots", date="2026-11-30", duration_minutes=30, from_time="13:00", to_time="14:30")
    assert res["slots"] == [{"start": "2026-11-30T13:00", "end": "2026-11-30T14:00", "minutes": 60}]
    # an event running past midnight blocks the early morning
    res = ok(b, "calendar.free_slots", date="2026-11-30", duration_minutes=60, from_time="00:00", to_time="03:00")
    assert res["slots"] == [{"start": "2026-11-30T01:00", "end": "2026-11-30T03:00", "minutes": 120}]
    # overlapping busy events merge
    ok(b, "calendar.create_event", title="A", start="2026-12-01T10:00", end="2026-12-01T12:00")
    ok(b, "calendar.create_event", title="B", start="2026-12-01T11:00", end="2026-12-01T11:30")
    res = ok(b, "calendar.free_slots", date="2026-12-01", duration_minutes=60)
    assert [(s["start"][11:], s["end"][11:]) for s in res["slots"]] == [("09:00", "10:00"), ("12:00", "18:00")]
    assert ok(b, "calendar.free_slots", date="2026-12-01", duration_minutes=400)["slots"] == []


def test_free_slots_validation(b: SandboxBackend) -> None:
    fb = call(b, "calendar.free_slots", date="2026-11-30", duration_minutes=30, from_time="18:00", to_time="09:00")
    assert (fb.error, fb.path) == (ErrorKind.INVALID_ARGUMENTS, "/to_time")
    fb = call(b, "calendar.free_slots", date="2026-13-01", duration_minutes=30)
    assert (fb.error, fb.path) == (ErrorKind.INVALID_ARGUMENTS, "/date")
    validate = b.tools()["calendar.free_slots"].validator.validate
    with pytest.raises(ArgumentError) as exc:
        validate({"date": "2026-11-30", "duration_minutes": 30, "from_time": "9:00"})
    assert exc.value.path == "/from_time"
    with pytest.raises(ArgumentError) as exc:
        validate({"date": "2026-11-30", "duration_minutes": "30"})
    assert exc.value.path == "/duration_minutes"


def test_write_permission_denied() -> None:
    b = SandboxBackend()
    b.reset(READ_ONLY)
    fb = call(b, "calendar.create_event", title="x", start="2026-12-01T10:00", end="2026-12-01T11:00")
    assert (fb.ok, fb.error) == (False, ErrorKind.PERMISSION_DENIED)
    assert "android.permission.WRITE_CALENDAR" in fb.message
    assert call(b, "calendar.delete_event", event_id="ev_1").error is ErrorKind.PERMISSION_DENIED
    assert events(b) == {e["id"]: e for e in EVENTS}
    assert ok(b, "calendar.list_events")["total"] == 2


def test_snapshot_restore_undoes_writes(b: SandboxBackend) -> None:
    snap = b.snapshot()
    before = events(b)
    ok(b, "calendar.create_event", title="x", start="2026-12-01T10:00", end="2026-12-01T11:00")
    ok(b, "calendar.update_event", event_id="ev_1", title="changed")
    ok(b, "calendar.add_attendee", event_id="ev_2", attendee="Ana Lima")
    ok(b, "calendar.delete_event", event_id="ev_4")
    b.restore(snap)
    assert events(b) == before
    assert ok(b, "calendar.create_event", title="y", start="2026-12-01T10:00", end="2026-12-01T11:00")["id"] == "ev_6"
    b.reset(TASK)
    assert events(b) == {e["id"]: e for e in EVENTS}


def test_results_do_not_alias_state(b: SandboxBackend) -> None:
    res = ok(b, "calendar.get_event", event_id="ev_4")
    res["attendees"].append("Mallory")
    res["title"] = "changed"
    listed = ok(b, "calendar.list_events", date="2026-11-30")
    listed["events"][0]["title"] = "changed"
    created = ok(b, "calendar.create_event", title="New", start="2026-12-01T10:00", end="2026-12-01T11:00")
    created["conflicts"].append("ev_1")
    created["attendees"].append("Mallory")
    state = events(b)
    assert state["ev_4"] == EVENTS[3]
    assert EVENTS[3]["attendees"] == ["Ana Lima"]
    assert state["ev_5"]["title"] == "Late movie"
    assert state["ev_6"]["attendees"] == ()
    assert ok(b, "calendar.get_event", event_id="ev_4")["attendees"] == ["Ana Lima"]
