"""The fields the existing apps gained: event reminders and time zones, do-not-disturb until a time
and on a schedule, voicemail, contacts with several labelled numbers and e-mails, clearing a field.

Values are worked out by hand (time-zone offsets, the order of ids, which schedule covers a
moment); the last tests play the new templates' reference plans on the sandbox and on the adb
backend against the virtual device and compare verdicts, every step's feedback and the state.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, ErrorKind, Feedback, Fixtures, TaskSpec
from phoneenv.farm import android as A
from phoneenv.phone import app_classes
from phoneenv.tasks import load_suite
from phoneenv.tasks.templates import all_templates

ANA = {"id": "c_1", "name": "Ana Lima", "phone": "+4915112345678", "email": "ana@x.com", "relation": "sister",
       "favorite": False, "birthday": "03-04"}  # fmt: skip
BEN = {"id": "c_2", "name": "Ben Ott", "phone": "+4917011112222", "email": None, "relation": None,
       "favorite": False, "birthday": None}  # fmt: skip
EVENT = {"id": "ev_1", "title": "Dentist", "start": "2026-11-30T14:00", "end": "2026-11-30T15:00",
         "location": None, "attendees": (), "notes": None, "all_day": False}  # fmt: skip
VOICEMAILS = [
    {"id": "vm_1", "number": "+4915112345678", "time": "2026-11-28T18:00:00", "duration_s": 31,
     "transcript": "Hi it's Ana, the plumber comes on Tuesday at ten, call me back please", "read": False},
    {"id": "vm_2", "number": "+4930999888", "time": "2026-11-29T08:30:00", "duration_s": 12,
     "transcript": "Your parcel could not be delivered", "read": True},
]  # fmt: skip


def make_task(**records: Any) -> TaskSpec:
    """A task on a Berlin phone at Sunday 2026-11-29 09:00 holding ``records``."""
    return TaskSpec(
        id="fields-test",
        domain="contacts",
        goal="test",
        criteria=[AnswerCriterion(equals="x")],
        fixtures=Fixtures(records=records, clock="2026-11-29T09:00:00", timezone="Europe/Berlin"),
    )


@pytest.fixture
def b() -> SandboxBackend:
    box = SandboxBackend()
    box.reset(
        make_task(
            **{
                "contacts.contacts": [ANA, BEN],
                "calendar.events": [EVENT],
                "phone.voicemails": VOICEMAILS,
            }
        )
    )
    return box


def run(b: SandboxBackend, tool: str, args: dict[str, Any]) -> Feedback:
    """Validate ``args`` as the env does and call ``tool``."""
    return b.call(tool, b.tools()[tool].validator.validate(args))


def ok(b: SandboxBackend, tool: str, **args: Any) -> Any:
    fb = run(b, tool, args)
    assert fb.ok, fb
    return fb.result


def err(b: SandboxBackend, tool: str, **args: Any) -> Feedback:
    fb = run(b, tool, args)
    assert not fb.ok, fb
    return fb


def row(b: SandboxBackend, table: str, rid: str) -> dict[str, Any]:
    return dict(b.tables()[table][rid])


# -- calendar ------------------------------------------------------------------------------------


def test_an_event_set_in_new_york_time_is_stored_in_phone_time_and_shown_in_its_zone(b):
    # 2026-12-01 is winter: New York is UTC-5, Berlin UTC+1, so 09:00 there is 15:00 here.
    res = ok(b, "calendar.create_event", title="NY call", start="2026-12-01T09:00", end="2026-12-01T09:30",
             timezone="America/New_York", reminders=[60, 10])  # fmt: skip
    assert (res["start"], res["end"]) == ("2026-12-01T15:00", "2026-12-01T15:30")
    assert (res["zone_start"], res["zone_end"], res["timezone"]) == (
        "2026-12-01T09:00",
        "2026-12-01T09:30",
        "America/New_York",
    )
    assert res["reminders"] == [10, 60]
    stored = row(b, "calendar.events", "ev_2")
    assert stored["timezone"] == "America/New_York" and stored["reminders"] == (10, 60)
    # changing only the zone keeps the clock times: 09:00 London (UTC+0) is 10:00 in Berlin
    res = ok(b, "calendar.update_event", event_id="ev_2", timezone="Europe/London")
    assert (res["start"], res["zone_start"]) == ("2026-12-01T10:00", "2026-12-01T09:00")
    # moving it is read in the event's zone: 11:00 London is 12:00 here, length kept
    res = ok(b, "calendar.update_event", event_id="ev_2", start="2026-12-01T11:00")
    assert (res["start"], res["end"], res["zone_end"]) == ("2026-12-01T12:00", "2026-12-01T12:30", "2026-12-01T11:30")
    # the phone's own zone is no zone of the event's own: the field goes
    ok(b, "calendar.update_event", event_id="ev_2", timezone="Europe/Berlin")
    assert "timezone" not in row(b, "calendar.events", "ev_2")


def test_an_event_without_a_zone_answers_with_the_phones(b):
    res = ok(b, "calendar.get_event", event_id="ev_1")
    assert (res["timezone"], res["zone_start"], res["reminders"]) == ("Europe/Berlin", "2026-11-30T14:00", [])
    assert row(b, "calendar.events", "ev_1") == EVENT  # reading adds nothing


def test_time_zone_errors(b):
    fb = err(
        b, "calendar.create_event", title="x", start="2026-12-01T09:00", end="2026-12-01T10:00", timezone="Mars/Olympus"
    )
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/timezone"
    fb = err(b, "calendar.create_event", title="x", start="2026-12-01T00:00", end="2026-12-02T00:00", all_day=True,
             timezone="Asia/Tokyo")  # fmt: skip
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/timezone"
    fb = err(b, "calendar.create_event", title="x", start="2026-12-01T09:00", end="2026-12-01T10:00", reminders=[5, 5])
    assert fb.path == "/reminders/1"
    assert len(b.tables()["calendar.events"]) == 1


def test_reminders_are_added_and_removed_one_by_one(b):
    assert ok(b, "calendar.add_reminder", event_id="ev_1", minutes_before=1440)["reminders"] == [1440]
    assert ok(b, "calendar.add_reminder", event_id="ev_1", minutes_before=15)["reminders"] == [15, 1440]
    assert err(b, "calendar.add_reminder", event_id="ev_1", minutes_before=15).error is ErrorKind.CONFLICT
    fb = err(b, "calendar.remove_reminder", event_id="ev_1", minutes_before=30)
    assert fb.error is ErrorKind.NOT_FOUND and fb.candidates == ["15", "1440"]
    for m in (0, 5, 60):
        ok(b, "calendar.add_reminder", event_id="ev_1", minutes_before=m)
    fb = err(b, "calendar.add_reminder", event_id="ev_1", minutes_before=120)
    assert fb.error is ErrorKind.PRECONDITION_FAILED  # five is the most
    for m in (0, 5, 15, 60, 1440):
        ok(b, "calendar.remove_reminder", event_id="ev_1", minutes_before=m)
    assert row(b, "calendar.events", "ev_1") == EVENT  # no empty list left behind
    assert err(b, "calendar.add_reminder", event_id="ev_9", minutes_before=5).error is ErrorKind.NOT_FOUND


def test_calendar_mapping_carries_zone_and_reminders_losslessly():
    events = app_classes()["calendar"].android.tables["events"]
    tz = ZoneInfo("Europe/Berlin")
    rec = {**EVENT, "id": "ev_7", "reminders": (10, 60), "timezone": "America/New_York"}
    main = A.encode_row(events, rec, tz)
    assert main["eventTimezone"] == "America/New_York" and main["hasAlarm"] == 1
    assert main["dtstart"] == int(dt.datetime(2026, 11, 30, 13, 0, tzinfo=dt.timezone.utc).timestamp() * 1000)
    kids = dict((c.uri, rows) for c, rows in A.encode_children(events, rec, tz))
    assert kids["content://com.android.calendar/reminders"] == [
        {"minutes": 10, "method": 1},
        {"minutes": 60, "method": 1},
    ]
    back = A.decode_record(events, "ev_", {**main, "_id": 7}, kids, tz)
    assert back == {**rec, "attendees": ()}
    plain = A.encode_row(events, EVENT, tz)
    assert plain["eventTimezone"] == "Europe/Berlin" and plain["hasAlarm"] == 0
    assert A.decode_record(events, "ev_", {**plain, "_id": 1}, {}, tz) == EVENT  # no zone, no reminders


# -- contacts ------------------------------------------------------------------------------------


def test_several_labelled_numbers_and_the_primary_one(b):
    res = ok(b, "contacts.add_number", contact_id="c_1", number="+49 30 1234567", label="work")
    assert res["phone"] == ANA["phone"] and res["other_phones"] == [{"label": "work", "number": "+49301234567"}]
    assert ok(b, "contacts.search", query="301234")["contacts"][0]["id"] == "c_1"  # found by the other number
    fb = err(b, "contacts.add_number", contact_id="c_2", number="+49301234567")
    assert fb.error is ErrorKind.CONFLICT and fb.candidates == ["c_1"]  # a number is one contact's
    res = ok(b, "contacts.set_primary_number", contact_id="c_1", number="+49 30 123 4567")
    assert (res["phone"], res["phone_label"]) == ("+49301234567", "work")
    assert res["other_phones"] == [{"label": "mobile", "number": ANA["phone"]}]
    # removing the main number promotes the first other one, labels and all
    res = ok(b, "contacts.remove_number", contact_id="c_1", number="+49301234567")
    assert row(b, "contacts.contacts", "c_1") == ANA  # back to the seeded record, no empty fields
    fb = err(b, "contacts.remove_number", contact_id="c_1", number=ANA["phone"])
    assert fb.error is ErrorKind.PRECONDITION_FAILED
    assert err(b, "contacts.set_primary_number", contact_id="c_1", number=ANA["phone"]).error is ErrorKind.CONFLICT
    assert err(b, "contacts.remove_number", contact_id="c_1", number="+4917000000000").error is ErrorKind.NOT_FOUND


def test_a_call_from_another_number_shows_the_contact(b):
    ok(b, "contacts.add_number", contact_id="c_2", number="+4930999888", label="home")
    vms = ok(b, "phone.list_voicemails")["voicemails"]
    assert [v["contact"] for v in vms] == ["Ben Ott", "Ana Lima"]


def test_emails_labelled_primary_and_cleared(b):
    res = ok(b, "contacts.add_email", contact_id="c_2", address="ben@work.de", label="work")
    assert (res["email"], res["email_label"]) == ("ben@work.de", "work")  # the first is the main one
    assert "other_emails" not in res
    res = ok(b, "contacts.add_email", contact_id="c_1", address="ana@work.de", label="work", primary=True)
    assert res["email"] == "ana@work.de" and res["other_emails"] == [{"label": "home", "address": "ana@x.com"}]
    assert err(b, "contacts.add_email", contact_id="c_1", address="ANA@x.com").error is ErrorKind.CONFLICT
    res = ok(b, "contacts.remove_email", contact_id="c_1", address="ana@work.de")
    assert (res["email"], res.get("email_label"), res.get("other_emails")) == ("ana@x.com", None, None)
    ok(b, "contacts.add_email", contact_id="c_1", address="ana@club.org", label="other")
    res = ok(b, "contacts.clear_field", contact_id="c_1", field="email")  # every address goes
    assert res["email"] is None and "other_emails" not in res
    ok(b, "contacts.clear_field", contact_id="c_1", field="birthday")
    assert row(b, "contacts.contacts", "c_1") == {**ANA, "email": None, "birthday": None}
    fb = err(b, "contacts.clear_field", contact_id="c_1", field="birthday")
    assert fb.error is ErrorKind.CONFLICT and fb.path == "/field"


# -- voicemail -----------------------------------------------------------------------------------


def test_voicemails_list_play_delete_and_call_back(b):
    res = ok(b, "phone.list_voicemails")
    assert [v["id"] for v in res["voicemails"]] == ["vm_2", "vm_1"] and (res["total"], res["unread"]) == (2, 1)
    # the first eight words, then an ellipsis
    assert res["voicemails"][1]["preview"] == "Hi it's Ana, the plumber comes on Tuesday ..."
    assert ok(b, "phone.list_voicemails", unread_only=True)["total"] == 1
    played = ok(b, "phone.play_voicemail", voicemail_id="vm_1")
    assert played["transcript"] == VOICEMAILS[0]["transcript"] and played["read"] is True
    assert row(b, "phone.voicemails", "vm_1")["read"] is True
    active = ok(b, "phone.call_back_voicemail", voicemail_id="vm_1")
    assert active["number"] == ANA["phone"] and active["contact"] == "Ana Lima"
    log = b.tables()["phone.calls"]
    assert [(r["number"], r["direction"]) for r in log.values()] == [(ANA["phone"], "out")]
    assert ok(b, "phone.delete_voicemail", voicemail_id="vm_2") == {"deleted": "vm_2"}
    assert err(b, "phone.play_voicemail", voicemail_id="vm_2").error is ErrorKind.NOT_FOUND
    assert b.tools()["phone.delete_voicemail"].spec.effect.value == "sensitive"


# -- do not disturb ------------------------------------------------------------------------------


def test_dnd_until_a_time_and_turning_it_off(b):
    assert err(b, "settings.set_dnd_until", until="2026-11-29T08:00").path == "/until"  # the past
    assert err(b, "settings.set_dnd_until", until="2026-12-07T09:00").path == "/until"  # eight days
    ok(b, "settings.set_dnd_until", until="2026-11-29T12:30")
    assert row(b, "settings.settings", "dnd")["value"] is True
    assert row(b, "settings.dnd_timer", "until") == {"id": "until", "until": "2026-11-29T12:30"}
    status = ok(b, "settings.dnd_status")
    assert (status["on"], status["until"], status["because"]) == (True, "2026-11-29T12:30", "manual")
    ok(b, "settings.set_dnd", enabled=False)
    assert b.tables().get("settings.dnd_timer", {}) == {}
    assert ok(b, "settings.dnd_status")["on"] is False


@pytest.mark.parametrize(
    ("clock", "active"),
    [
        ("2026-11-27T23:00:00", "dnds_1"),  # Friday night
        ("2026-11-28T06:59:00", "dnds_1"),  # Saturday morning, the night began on Friday
        ("2026-11-28T07:00:00", None),  # it ends at seven
        ("2026-11-29T06:00:00", None),  # Sunday morning: Saturday night is not a school night
        ("2026-11-29T13:30:00", "dnds_2"),  # Sunday lunch
    ],
)
def test_which_schedule_covers_a_moment(clock, active):
    box = SandboxBackend()
    box.reset(TaskSpec(id="t", domain="device", goal="g", criteria=[AnswerCriterion(equals="x")],
                       fixtures=Fixtures(clock=clock, timezone="Europe/Berlin")))  # fmt: skip
    ok(box, "settings.add_dnd_schedule", **{"name": "Nights", "days": ["fri", "mon"], "start": "22:00", "end": "07:00"})
    ok(box, "settings.add_dnd_schedule", **{"name": "Lunch", "days": ["sun"], "start": "13:00", "end": "14:00"})
    status = ok(box, "settings.dnd_status")
    assert status["because"] == active and status["on"] is (active is not None)
    assert [s["overnight"] for s in status["schedules"]] == [True, False]


def test_schedule_errors_and_changes(b):
    fb = run(b, "settings.add_dnd_schedule", {"name": "x", "days": ["mon", "mon"], "start": "22:00", "end": "07:00"})
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/days/1"
    fb = run(b, "settings.add_dnd_schedule", {"name": "x", "days": ["mon"], "start": "22:00", "end": "22:00"})
    assert fb.path == "/end"
    s = ok(b, "settings.add_dnd_schedule", **{"name": "Gym", "days": ["thu", "tue"], "start": "18:00", "end": "19:30"})
    assert s["days"] == ["tue", "thu"] and s["overnight"] is False
    dup = run(b, "settings.add_dnd_schedule", {"name": "gym", "days": ["mon"], "start": "18:00", "end": "19:00"})
    assert dup.error is ErrorKind.CONFLICT
    assert ok(b, "settings.update_dnd_schedule", schedule_id=s["id"], enabled=False)["enabled"] is False
    assert (
        err(b, "settings.update_dnd_schedule", schedule_id=s["id"], enabled=False).error is ErrorKind.INVALID_ARGUMENTS
    )
    ok(b, "settings.delete_dnd_schedule", schedule_id=s["id"])
    assert b.tables()["settings.dnd_schedules"] == {}


# -- templates -----------------------------------------------------------------------------------


def test_the_field_templates_are_enough_and_distinct():
    names = [n for n in all_templates() if n.startswith("fields.")]
    tasks = [t for t in load_suite() if t.template in names]
    assert len(names) >= 8 and len(tasks) >= 90
    assert len({t.goal for t in tasks}) >= 0.9 * len(tasks)
    assert all(len(t.probes) >= 3 for t in tasks)


# -- the device: same verdicts, same state -------------------------------------------------------

try:  # the device half needs the [device] extra (adbutils, bashlex)
    from phoneenv.backends.adb import AdbBackend
    from tests.test_adb_backend import _sandbox_tables_of, compare, served  # noqa: F401 - a fixture
except (ImportError, pytest.skip.Exception):  # test_adb_backend skips itself without them
    AdbBackend = None  # type: ignore[assignment,misc]
device = pytest.mark.skipif(AdbBackend is None, reason="the adb backend needs pip install -e '.[device]'")


def _on_device() -> list[TaskSpec]:
    backend = AdbBackend(serial="none")
    return [t for t in load_suite() if (t.template or "").startswith("fields.") and backend.can_run(t)]


@device
def test_the_field_tools_with_an_android_path_are_offered_on_a_device():
    offered = set(AdbBackend(serial="none").tools())
    assert {"calendar.add_reminder", "calendar.remove_reminder", "phone.list_voicemails", "phone.play_voicemail",
            "phone.delete_voicemail", "contacts.add_number", "contacts.set_primary_number", "contacts.remove_email",
            "contacts.clear_field"} <= offered  # fmt: skip
    assert {"settings.set_dnd_until", "settings.add_dnd_schedule", "phone.call_back_voicemail"}.isdisjoint(offered)
    templates = {t.template for t in _on_device()}
    assert {"fields.event_reminders", "fields.reminder_change", "fields.event_in_zone", "fields.zone_event_time",
            "fields.voicemail_transcript", "fields.contact_add_number", "fields.contact_clear",
            "fields.contact_work_email"} <= templates  # fmt: skip


@device
def test_field_templates_get_the_sandbox_verdicts_on_the_virtual_device(served, tmp_path):
    server, dev, backend = served
    by_template: dict[str, list[TaskSpec]] = {}
    for t in _on_device():
        by_template.setdefault(t.template, []).append(t)
    tasks = [t for ts in by_template.values() for t in ts[:3]]
    assert compare(tasks, backend, tmp_path) == []
    for task in tasks:  # and the state after each reference plan, record by record
        box = SandboxBackend()
        box.reset(task)
        backend.reset(task)
        for step in task.reference_plan[:-1]:
            if step.name not in box.tools():  # user.confirm and the like: the env's, not a backend's
                continue
            want, got = box.call(step.name, dict(step.arguments)), backend.call(step.name, dict(step.arguments))
            assert got.model_dump_json() == want.model_dump_json(), (task.id, step.name)
        have = {k: v for k, v in backend.tables().items() if k != "phone.active" and (v or k in box.tables())}
        assert have == _sandbox_tables_of(box, backend), task.id
