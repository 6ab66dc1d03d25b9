"""The world's coherence rules: each one catches a fixture that breaks it, seeded worlds hold
them, and every rule holds for at least 99% of what it judges over the whole suite."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from phoneenv.contract import Fixtures
from phoneenv.tasks import load_suite
from phoneenv.tasks.coherence import RULES, broken, measure
from phoneenv.tasks.world import World

RELATIONS = {"c_1": "sister", "c_2": "boss", "c_3": "landlord", "c_4": "coworker", "c_5": "dentist", "c_6": None}


@pytest.fixture(scope="module")
def base() -> Fixtures:
    """A seeded world's fixtures with known relations on the first six contacts."""
    fx = World(11).fixtures().model_copy(deep=True)
    for c in fx.records["contacts.contacts"]:
        if c["id"] in RELATIONS:
            c["relation"] = RELATIONS[c["id"]]
        elif c["relation"] is not None:
            c["relation"] = "neighbor"
    return fx


def _contact(fx: Fixtures, cid: str) -> dict[str, Any]:
    return next(c for c in fx.records["contacts.contacts"] if c["id"] == cid)


def _with(base: Fixtures, table: str, *records: dict[str, Any]) -> Fixtures:
    """``base``'s address book and ``records`` in ``table``, nothing else (so a rule judges just them)."""
    contacts = copy.deepcopy(base.records["contacts.contacts"])
    return base.model_copy(update={"records": {"contacts.contacts": contacts, table: copy.deepcopy(list(records))}})


def _event(title: str, start: str, end: str, location: str | None, *attendees: str) -> dict[str, Any]:
    return {"id": "ev_x", "title": title, "start": start, "end": end, "location": location,
            "attendees": attendees, "notes": None, "all_day": False}  # fmt: skip


def _text(number: str, direction: str, body: str, time: str, id: str = "m_x") -> dict[str, Any]:
    return {"id": id, "number": number, "direction": direction, "body": body, "time": time, "read": True}


def _verdict(rule: str, fx: Fixtures) -> list[bool]:
    return [held for _, held in RULES[rule](fx)]


MONDAY = "2026-11-16"


def test_seeded_worlds_hold_every_rule_but_a_few_night_calls():
    bad: dict[str, int] = {}
    for seed in range(60):
        for rule, labels in broken(World(seed).fixtures()).items():
            bad[rule] = bad.get(rule, 0) + len(labels)
    assert set(bad) <= {"waking"}, bad
    assert all(
        label.startswith("call_") for seed in range(60) for label in broken(World(seed).fixtures()).get("waking", [])
    )


def test_event_place(base):
    good = _event("Dentist appointment", f"{MONDAY}T10:00", f"{MONDAY}T10:30", "Bright Smile Dental")
    assert _verdict("event_place", _with(base, "calendar.events", good)) == [True]
    for title, place in [
        ("Dentist appointment", "Room 4.12"),
        ("Yoga class", "Room 4.12"),
        ("Call with Ana", "Office"),
    ]:
        bad = {**good, "title": title, "location": place}
        assert _verdict("event_place", _with(base, "calendar.events", bad)) == [False], title
    call = {**good, "title": "Call with Ana", "location": None}
    assert _verdict("event_place", _with(base, "calendar.events", call)) == [True]


def test_event_attendees(base):
    sister, boss, coworker, dentist = (_contact(base, c)["name"] for c in ("c_1", "c_2", "c_4", "c_5"))
    standup = _event("Team standup", f"{MONDAY}T09:00", f"{MONDAY}T09:15", "Online", boss, coworker)
    assert _verdict("event_attendees", _with(base, "calendar.events", standup)) == [True]
    family = {**standup, "attendees": (boss, sister)}
    assert _verdict("event_attendees", _with(base, "calendar.events", family)) == [False]
    teeth = _event("Dentist appointment", f"{MONDAY}T10:00", f"{MONDAY}T10:30", "Bright Smile Dental", dentist)
    assert _verdict("event_attendees", _with(base, "calendar.events", teeth)) == [True]
    colleague = {**teeth, "attendees": (coworker,)}
    assert _verdict("event_attendees", _with(base, "calendar.events", colleague)) == [False]
    first = sister.split()[0]
    lunch = _event(f"Lunch with {first}", f"{MONDAY}T12:00", f"{MONDAY}T13:00", "Cafe Luna", sister)
    assert _verdict("event_attendees", _with(base, "calendar.events", lunch)) == [True]
    nobody = {**lunch, "attendees": ()}
    assert _verdict("event_attendees", _with(base, "calendar.events", nobody)) == [False]


def test_event_length(base):
    standup = _event("Team standup", f"{MONDAY}T09:00", f"{MONDAY}T09:30", "Online")
    assert _verdict("event_length", _with(base, "calendar.events", standup)) == [True]
    long = {**standup, "end": f"{MONDAY}T11:00"}
    assert _verdict("event_length", _with(base, "calendar.events", long)) == [False]


def test_event_hours(base):
    lunch = _event("Lunch with Ana", f"{MONDAY}T12:00", f"{MONDAY}T13:00", "Cafe Luna")
    assert _verdict("event_hours", _with(base, "calendar.events", lunch)) == [True]
    late = {**lunch, "start": f"{MONDAY}T16:00", "end": f"{MONDAY}T17:00"}
    assert _verdict("event_hours", _with(base, "calendar.events", late)) == [False]
    saturday = _event("Budget meeting", "2026-11-14T10:00", "2026-11-14T11:00", "Office")
    assert _verdict("event_hours", _with(base, "calendar.events", saturday)) == [False]


def test_message_sender(base):
    boss, landlord, sister = (_contact(base, c)["phone"] for c in ("c_2", "c_3", "c_1"))
    rent = _text(landlord, "in", "Rent for next month is due on the 1st", f"{MONDAY}T10:00")
    assert _verdict("message_sender", _with(base, "messages.messages", rent)) == [True]
    from_boss = {**rent, "number": boss}
    assert _verdict("message_sender", _with(base, "messages.messages", from_boss)) == [False]
    by_user = {**rent, "direction": "out"}  # the user doesn't remind the landlord of rent
    assert _verdict("message_sender", _with(base, "messages.messages", by_user)) == [False]
    milk = _text(sister, "in", "Can you pick up milk?", f"{MONDAY}T10:00")
    assert _verdict("message_sender", _with(base, "messages.messages", milk)) == [True]
    assert _verdict("message_sender", _with(base, "messages.messages", {**milk, "number": boss})) == [False]


def test_message_hours(base):
    sister = _contact(base, "c_1")["phone"]
    early = _text(sister, "in", "See you at 7", f"{MONDAY}T15:00")
    assert _verdict("message_hours", _with(base, "messages.messages", early)) == [True]
    late = {**early, "time": f"{MONDAY}T21:00:00"}
    assert _verdict("message_hours", _with(base, "messages.messages", late)) == [False]
    weekend = _text(sister, "in", "Meeting moved to 3", "2026-11-14T10:00:00")
    assert _verdict("message_hours", _with(base, "messages.messages", weekend)) == [False]


def test_threads(base):
    sister = _contact(base, "c_1")["phone"]
    ask = _text(sister, "in", "Lunch tomorrow?", f"{MONDAY}T10:00:00", "m_a")
    answer = _text(sister, "out", "Sure, 12:30?", f"{MONDAY}T10:05:00", "m_b")
    assert _verdict("threads", _with(base, "messages.messages", ask, answer)) == [True]
    other = {**ask, "body": "Can you call me back?"}
    assert _verdict("threads", _with(base, "messages.messages", other, answer)) == [False]
    before = {**answer, "time": f"{MONDAY}T09:00:00"}  # the answer came first
    assert _verdict("threads", _with(base, "messages.messages", ask, before)) == [False]
    user = base.accounts["mail"]["account"]
    mail = {"id": "em_a", "folder": "inbox", "from": "ana@example.org", "to": (user,), "subject": "Plans",
            "body": "?", "time": f"{MONDAY}T09:00:00", "read": True}  # fmt: skip
    reply = {**mail, "id": "em_b", "subject": "Re: Plans", "time": f"{MONDAY}T10:00:00"}
    assert _verdict("threads", _with(base, "mail.messages", mail, reply)) == [True]
    assert _verdict("threads", _with(base, "mail.messages", reply)) == [False]


def test_mail_sender(base):
    base = base.model_copy(deep=True)
    user = base.accounts["mail"]["account"]
    boss, sister = _contact(base, "c_2"), _contact(base, "c_1")
    boss["email"] = boss["email"] or "boss@example.org"
    sister["email"] = sister["email"] or "sister@example.org"
    offsite = {"id": "em_x", "folder": "inbox", "from": boss["email"], "to": (user,), "subject": "Team offsite",
               "body": "...", "time": f"{MONDAY}T10:00:00", "read": True}  # fmt: skip
    assert _verdict("mail_sender", _with(base, "mail.messages", offsite)) == [True]
    assert _verdict("mail_sender", _with(base, "mail.messages", {**offsite, "from": sister["email"]})) == [False]


def test_past(base):
    sister = _contact(base, "c_1")["phone"]
    now = base.clock
    then = _text(sister, "in", "Running a bit late", now)
    assert _verdict("past", _with(base, "messages.messages", then)) == [True]
    later = {**then, "time": now[:10] + "T23:59:00"}
    assert now[11:] < "23:59" and _verdict("past", _with(base, "messages.messages", later)) == [False]


def test_waking(base):
    sister = _contact(base, "c_1")["phone"]
    call = {"id": "call_x", "number": sister, "direction": "in", "time": "2026-11-01T12:00:00", "duration_s": 60}
    assert _verdict("waking", _with(base, "phone.calls", call)) == [True]
    assert _verdict("waking", _with(base, "phone.calls", {**call, "time": "2026-11-01T03:00:00"})) == [False]


def test_relation_rules_skip_an_address_book_without_relations(base):
    fx = base.model_copy(deep=True)
    for c in fx.records["contacts.contacts"]:
        c["relation"] = None
    assert RULES["message_sender"](fx) == [] and RULES["mail_sender"](fx) == []


def test_every_rule_holds_over_the_whole_suite():
    figures = measure(t.fixtures for t in load_suite(generated=False))
    assert set(figures) == set(RULES)
    for rule, f in figures.items():
        assert f["total"] > 1000 and f["share"] >= 0.99, (rule, f)
