"""Seeded worlds hold together: locale, names, events, hours, mail, streams; fixtures checked."""

from __future__ import annotations

import datetime as dt
import re

import phonenumbers
import pytest

from phoneenv.tasks import get_task, load_suite
from phoneenv.tasks.schemas import check_fixtures
from phoneenv.tasks.world import (
    CURRENCIES,
    FAMILY_RELATIONS,
    FEMALE_RELATIONS,
    LOCALES,
    MALE_RELATIONS,
    WORK_EVENTS,
    World,
    first_names,
)

BY_ZONE = {loc.timezone: loc for loc in LOCALES.values()}


@pytest.fixture(scope="module")
def suite():
    return load_suite()


def _numbers(records):
    yield from (c["phone"] for c in records.get("contacts.contacts", []))
    yield from (m["number"] for m in records.get("messages.messages", []))
    yield from (c["number"] for c in records.get("phone.calls", []))


def test_numbers_valid_and_of_the_worlds_country(suite):
    total = 0
    for t in suite:
        loc = BY_ZONE[t.fixtures.timezone]
        assert (t.fixtures.location["lat"], t.fixtures.location["lon"]) == (loc.lat, loc.lon), t.id
        for num in _numbers(t.fixtures.records):
            parsed = phonenumbers.parse(num)
            assert phonenumbers.is_valid_number(parsed), (t.id, num)
            assert phonenumbers.region_code_for_number(parsed) == loc.country, (t.id, num)
            assert phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164) == num
            total += 1
        phones = [c["phone"][-9:] for c in t.fixtures.records["contacts.contacts"]]
        assert len(set(phones)) == len(phones), t.id
    assert total > 20000
    assert {t.fixtures.timezone for t in suite} == set(BY_ZONE)


def test_names_follow_relations_and_family(suite):
    gendered = family = 0
    for t in suite:
        loc = BY_ZONE[t.fixtures.timezone]
        female, male = first_names(loc.faker)
        user = t.fixtures.accounts["mail"]["account"]
        surname = user.split("@")[0].split(".")[-1]
        contacts = t.fixtures.records["contacts.contacts"]
        firsts = [c["name"].split()[0] for c in contacts]
        assert len(set(firsts)) == len(firsts), t.id
        for c in contacts:
            assert re.fullmatch(r"[A-Za-z .'&-]+", c["name"]), (t.id, c["name"])
            first, rel = c["name"].split()[0], c["relation"]
            if rel in FEMALE_RELATIONS | MALE_RELATIONS:
                gendered += 1
                want, other = (female, male) if rel in FEMALE_RELATIONS else (male, female)
                assert first in want and first not in other, (t.id, c["name"], rel)
            if rel in FAMILY_RELATIONS:
                family += 1
                assert c["name"].split()[-1].casefold() == surname, (t.id, c["name"], user)
    assert gendered > 1000 and family > 1000


def test_events_name_attendees_and_work_on_weekdays(suite):
    named = work = 0
    for t in suite:
        for e in t.fixtures.records.get("calendar.events", []):
            m = re.fullmatch(r"(?:Lunch|Call|Coffee) with (\w+)", e["title"])
            if m and e["id"].startswith("ev_") and int(e["id"][3:]) <= 9:
                named += 1
                assert any(a.split()[0] == m.group(1) for a in e["attendees"]), (t.id, e)
            if e["title"] in WORK_EVENTS:
                work += 1
                start, end = dt.datetime.fromisoformat(e["start"]), dt.datetime.fromisoformat(e["end"])
                assert start.weekday() < 5 and start.hour >= 9 and end.time() <= dt.time(17, 30), (t.id, e)
    assert named > 1000 and work > 1000


def test_calls_and_messages_in_waking_hours(suite):
    times = [
        dt.datetime.fromisoformat(r["time"]).time()
        for t in suite
        for table in ("messages.messages", "phone.calls")
        for r in t.fixtures.records.get(table, [])
    ]
    awake = sum(dt.time(7) <= x <= dt.time(22, 30) for x in times)
    assert awake >= 0.95 * len(times), f"{awake} of {len(times)} in waking hours"


def test_mail_from_contacts_uses_their_address(suite):
    for t in suite:
        contacts = t.fixtures.records["contacts.contacts"]
        emails = {c["email"] for c in contacts if c["email"]}
        for m in t.fixtures.records.get("mail.messages", []):
            if m["folder"] != "inbox":
                continue
            assert "@" in m["from"] and "example.org" not in m["from"], (t.id, m["from"])
            local = m["from"].split("@")[0]
            person = next((c for c in contacts if local.startswith(c["name"].split()[0].casefold() + ".")), None)
            if person is not None and m["from"] not in emails:
                pytest.fail(f"{t.id}: mail from {m['from']} but {person['name']} has {person['email']}")


def test_same_seed_same_world_and_template_stream_apart():
    a, b = World(7), World(7)
    assert a.records == b.records and a.user_email == b.user_email
    b.rng.random()  # a template's draw
    b.new_name()
    b.phone_number()
    assert World(7).records == a.records


@pytest.mark.parametrize("app", ["messages", "phone", "calendar", "clock", "notes", "mail"])
def test_one_more_draw_in_one_app_leaves_the_others(monkeypatch, app):
    """An extra draw at the start of one app's stream changes only that app's tables. (The
    address book is the base the others refer to: a new number there follows into them.)"""
    before = {seed: World(seed).records for seed in range(20)}
    real = World.stream

    def stream(self, name):
        fresh = name not in self.streams
        rng = real(self, name)
        if fresh and name == app:
            rng.random()
        return rng

    monkeypatch.setattr(World, "stream", stream)
    changed = set()
    for seed, old in before.items():
        new = World(seed).records
        changed |= {table for table in old if old[table] != new[table]}
    assert changed and {table.split(".")[0] for table in changed} == {app}


def test_locale_numbers_for_each_country():
    for code in LOCALES:
        w = World(3, country=code)
        for kind in ("mobile", "landline"):
            num = w.phone_number(kind)
            parsed = phonenumbers.parse(num)
            assert phonenumbers.is_valid_number(parsed) and phonenumbers.region_code_for_number(parsed) == code


_CODES = re.compile(r"\b(" + "|".join(CURRENCIES) + r")\b")


def _money_criteria(crits):
    for c in crits:
        if getattr(c, "type", None) == "money":
            yield c
        yield from _money_criteria(getattr(c, "criteria", None) or [])


def test_money_is_in_the_worlds_currency(suite):
    """A task speaks only of its world's currency: no other ISO code (and no "€" outside the
    euro), typed money answers ask for it, and a task that names any currency names its own."""
    money_tasks = {}
    for t in suite:
        cur = BY_ZONE[t.fixtures.timezone].currency
        text = t.model_dump_json()
        named = set(_CODES.findall(text))
        assert named <= {cur}, (t.id, cur, named)
        if cur != "EUR":
            assert "€" not in text and not re.search(r"\beuros?\b", text, re.I), t.id
        for crit in _money_criteria([*t.criteria, *t.milestones]):
            assert crit.currency == cur, (t.id, crit.id, crit.currency)
            named.add("criterion")
        if named:
            assert cur in text, (t.id, cur)
            money_tasks.setdefault(cur, []).append(t.id)
    assert set(money_tasks) == set(CURRENCIES), money_tasks  # every currency is exercised


@pytest.mark.parametrize("code", sorted(LOCALES))
def test_world_money_format(code):
    w = World(5, country=code)
    cur = CURRENCIES[w.currency]
    assert w.currency == LOCALES[code].currency
    amount = w.price(12.5)
    assert amount == round(12.5 * cur.factor, cur.decimals)
    if cur.decimals == 0:
        assert amount == int(amount) and w.amount(amount) == str(int(amount))
    assert w.money(amount).endswith(f" {w.currency}") and w.money(amount, symbol=True).startswith(cur.symbol)
    assert w.amount(w.price(120)) == f"{120 * cur.factor:g}".removesuffix(".0") or cur.factor != int(cur.factor)


def test_every_suite_task_passes_the_fixture_check(suite):
    for t in suite:
        check_fixtures(t)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.update(phone=None), "field 'phone'"),
        (lambda c: c.pop("name"), "field 'name'"),  # a flag or a None may be left out, a name not
        (lambda c: c.update(favorite=[1]), "field 'favorite'"),
        (lambda c: c.update(phon="+4915111111111"), "field 'phon'"),
    ],
)
def test_broken_fixture_is_named(change, message):
    task = get_task("contacts.favorite/0").model_copy(deep=True)
    contact = task.fixtures.records["contacts.contacts"][2]
    change(contact)
    with pytest.raises(ValueError, match=rf"task contacts\.favorite/0: contacts\.contacts record c_3: {message}"):
        check_fixtures(task)


def test_template_with_broken_record_fails_to_build():
    import dataclasses

    from phoneenv.tasks.templates import all_templates

    tpl = all_templates()["contacts.favorite"]

    def build(w):
        w.contacts[0]["phone"] = None
        return tpl.build(w)

    broken = dataclasses.replace(tpl, build=build)
    with pytest.raises(ValueError, match=r"contacts\.favorite/1: contacts\.contacts record c_1: field 'phone'"):
        broken.task(1)


def test_a_hand_written_task_with_a_broken_record_fails_at_reset_not_mid_episode():
    from phoneenv.env import PhonePlanEnv

    task = get_task("contacts.favorite/0").model_copy(deep=True)
    task.fixtures.records["contacts.contacts"][0]["phone"] = None
    env = PhonePlanEnv(tasks=[task])
    with pytest.raises(ValueError, match=r"contacts\.contacts record c_1: field 'phone'"):
        env.reset(seed=0, options={"task": task})


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "c_9", "name": 7}, r"contacts\.contacts record c_9: field 'name': Input should be a valid string"),
        (
            {"id": "c_9", "nmae": "Ana"},
            r"contacts\.contacts record c_9: field 'nmae': not a field of contacts\.contacts",
        ),
        ("Ana", r"contacts\.contacts record #0: a record must be an object, not str"),
    ],
)
def test_build_fixture_state_refuses_a_row_that_breaks_the_layout(row, message):
    from phoneenv.phone import app_classes, build_fixture_state

    good = get_task("contacts.favorite/0").fixtures
    build_fixture_state(good, app_classes())
    with pytest.raises(ValueError, match=message):
        build_fixture_state(good.model_copy(update={"records": {"contacts.contacts": [row]}}), app_classes())
    with pytest.raises(ValueError, match=r"no sandbox table 'contacts\.people'"):
        build_fixture_state(good.model_copy(update={"records": {"contacts.people": []}}), app_classes())
