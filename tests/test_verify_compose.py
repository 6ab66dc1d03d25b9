"""Verification by hand: people by identity, composed criteria, call order and step-up,
"exactly one such record", implied defaults, and milestones that allow nothing."""

from __future__ import annotations

import pytest

from phoneenv.contract import (
    BehaviorCriterion,
    CompositeCriterion,
    Effect,
    Feedback,
    StateCriterion,
    TaskSpec,
)
from phoneenv.tasks.identity import ContactBook, contact_ids, mentioned_contacts, same_number
from phoneenv.tasks.predicates import Context, match
from phoneenv.tasks.verify import CallRecord, verify

OK = Feedback(ok=True, result={})
BAD = Feedback(ok=False, error="not_found", message="x")

CONTACTS = {
    "c_1": {"id": "c_1", "name": "Ana Lima", "phone": "+4915123456789", "email": "ana.lima@example.com"},
    "c_2": {"id": "c_2", "name": "Ana Costa", "phone": "+4917012345678", "email": None},
    "c_3": {"id": "c_3", "name": "Ben Weber", "phone": "+4916011112222", "email": "ben@example.org"},
}
CTX = Context(contacts=tuple(CONTACTS.values()))


def rec(name, ok=True, effect=Effect.READ, **args):
    return CallRecord(name, args, OK if ok else BAD, effect)


def task(criteria, milestones=()):
    return TaskSpec(id="t/0", domain="communication", goal="g", criteria=criteria, milestones=list(milestones))


def run(criteria, before, after, calls=(), milestones=(), **kw):
    return verify(task(criteria, milestones), before, after, list(calls), "done", steps=1, errors=0, **kw)


# -- identity -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "ids"),
    [
        ("Ana Lima", {"c_1"}),
        ("ana  LIMA", {"c_1"}),
        ("Ben", {"c_3"}),  # a unique first name
        ("Ana", {"c_1", "c_2"}),  # ambiguous
        ("BEN@example.org", {"c_3"}),
        ("0160 1111 2222", {"c_3"}),  # national format of +49 160 11112222
        ("+49 (170) 123-45678", {"c_2"}),
        ("Carla", set()),
        ("Lima", set()),  # a surname alone is not a first word
        ("+4915123456780", set()),  # one digit off
        ("Ben Weber <ben@example.org>", {"c_3"}),  # a mailbox: the address decides
        ('"Ana" <ana.lima@example.com>', {"c_1"}),
        ("Ana Costa <nobody@example.net>", {"c_2"}),  # an unknown address: the name
        ("Ben <ana.lima@example.com>", {"c_1"}),
        ("", set()),
        (None, set()),
    ],
)
def test_contact_ids(ref, ids):
    assert contact_ids(ref, CONTACTS.values()) == ids


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("+18297416976", "+19297416976", False),  # the same last nine digits, another area code
        ("(829) 741-6976", "+19297416976", False),
        ("(929) 741-6976", "+19297416976", True),
        ("741-6976", "+19297416976", True),  # a local form: the last digits are all it has
        ("+819030124872", "+818030124872", False),
        ("09030124872", "+818030124872", False),
        ("080-3012-4872", "+818030124872", True),
        ("0612345678", "+33612345678", True),  # a nine-digit national number after the trunk 0
        ("0044 7783 783071", "+447783783071", True),
    ],
)
def test_an_international_number_is_compared_whole(a, b, same):
    assert same_number(a, b) is same
    assert same_number(b, a) is same
    long_enough = sum(ch.isdigit() for ch in a) >= 9  # the number operator compares nine digits at least
    assert match({"to": a}, {"to": {"number": b}}) is (same and long_enough)
    book = [{"id": "c_1", "name": "Ana Lima", "phone": b, "email": None}]
    assert contact_ids(a, book) == ({"c_1"} if same else set())
    assert contact_ids(a, ContactBook({"c_1": book[0]})) == ({"c_1"} if same else set())  # through the index


def test_same_number_needs_seven_digits():
    assert same_number("+49 151 2345 6789", "015123456789")
    assert not same_number("123", "0123")


def test_mentioned_contacts_counts_each_person_once():
    text = "Ana Lima and Ben (ben@example.org) are in; call Ana Lima on 0151 23456789."
    assert mentioned_contacts(text, CONTACTS.values()) == [{"c_1"}, {"c_3"}]
    assert mentioned_contacts("Ana said hi", CONTACTS.values()) == [{"c_1", "c_2"}]
    assert mentioned_contacts("Banana bread", CONTACTS.values()) == []


@pytest.mark.parametrize(
    ("value", "cond", "expected"),
    [
        (["Ana Lima", "Ben"], {"people": ["c_1", "c_3"]}, True),
        (["ana.lima@example.com", "+4916011112222"], {"people": ["c_1", "c_3"]}, True),
        (["Ana Lima"], {"people": ["c_1", "c_3"]}, False),  # one missing
        (["Ana Lima", "Ben", "Ana Costa"], {"people": ["c_1", "c_3"]}, False),  # one extra
        (["Ana", "Ben"], {"people": ["c_1", "c_3"]}, False),  # "Ana" is ambiguous
        (["Ana Lima", "Stranger"], {"has_person": "c_1"}, True),
        (["Ana Costa"], {"has_person": "c_1"}, False),
        ("015123456789", {"person": "c_1"}, True),
        ("Ben Weber", {"person": "c_1"}, False),
        ("Ben", {"any": [{"person": "c_1"}, {"person": "c_3"}]}, True),
        ("Ben", {"not": {"person": "c_3"}}, False),
        ("Meeting at 4", {"regex": r"\bat 4\b"}, True),
    ],
)
def test_identity_and_composed_conditions(value, cond, expected):
    assert match({"f": value}, {"f": cond}, CTX) is expected


def test_identity_without_contacts_never_matches():
    assert not match({"f": "Ana Lima"}, {"f": {"person": "c_1"}})


def test_attendees_by_first_name_or_email_pass_and_a_stranger_fails():
    before = {"contacts.contacts": CONTACTS, "calendar.events": {}}
    crit = StateCriterion(table="calendar.events", change="created", count=1, where={"attendees": {"people": ["c_3"]}})
    for who in (["Ben"], ["ben@example.org"], ["Ben Weber"]):
        after = {**before, "calendar.events": {"ev_1": {"id": "ev_1", "attendees": who}}}
        assert run([crit], before, after).success, who
    after = {**before, "calendar.events": {"ev_1": {"id": "ev_1", "attendees": ["Ana Lima"]}}}
    assert not run([crit], before, after).success


# -- composition ---------------------------------------------------------------------------------


def tell_ben():
    return CompositeCriterion(
        kind="any_of",
        id="told:c_3",
        criteria=[
            StateCriterion(table="messages.messages", change="created", count=1, where={"number": {"person": "c_3"}}),
            StateCriterion(table="mail.messages", change="created", count=1, where={"to": {"has_person": "c_3"}}),
        ],
    )


BEFORE_MSG = {"contacts.contacts": CONTACTS, "messages.messages": {}, "mail.messages": {}}


def test_tell_accepts_any_channel_and_accounts_its_change():
    by_text = {**BEFORE_MSG, "messages.messages": {"m_1": {"id": "m_1", "number": "+4916011112222"}}}
    by_mail = {**BEFORE_MSG, "mail.messages": {"em_1": {"id": "em_1", "to": ["ben@example.org"]}}}
    for after in (by_text, by_mail):
        v = run([tell_ben()], BEFORE_MSG, after)
        assert v.success and not v.collateral, v
    wrong = {**BEFORE_MSG, "messages.messages": {"m_1": {"id": "m_1", "number": "+4915123456789"}}}
    v = run([tell_ben()], BEFORE_MSG, wrong)
    assert not v.success
    assert "messages.messages/m_1 created" in v.collateral
    # A failed alternative allows nothing, even when another one holds: two texts and a mail.
    spam = {
        **by_mail,
        "messages.messages": {k: {"id": k, "number": "+4916011112222"} for k in ("m_1", "m_2")},
    }
    v = run([tell_ben()], BEFORE_MSG, spam)
    assert v.criteria[0].passed and not v.success
    assert v.collateral == ["messages.messages/m_1 created", "messages.messages/m_2 created"]


def test_not_and_all_of():
    never_ana = CompositeCriterion(
        kind="not",
        criteria=[StateCriterion(table="messages.messages", change="created", where={"number": {"person": "c_1"}})],
    )
    both = CompositeCriterion(kind="all_of", criteria=[tell_ben(), never_ana])
    to_ben = {**BEFORE_MSG, "messages.messages": {"m_1": {"id": "m_1", "number": "+4916011112222"}}}
    assert run([both], BEFORE_MSG, to_ben).success
    to_both = {
        **BEFORE_MSG,
        "messages.messages": {
            "m_1": {"id": "m_1", "number": "+4916011112222"},
            "m_2": {"id": "m_2", "number": "Ana Lima"},
        },
    }
    v = run([both], BEFORE_MSG, to_both)
    assert not v.success and "must not" in v.criteria[0].reason
    with pytest.raises(ValueError, match="exactly one part"):
        CompositeCriterion(kind="not", criteria=[tell_ben(), tell_ben()])


def test_composites_round_trip_through_json():
    t = task([CompositeCriterion(kind="any_of", criteria=[tell_ben(), tell_ben()])])
    assert TaskSpec.model_validate_json(t.model_dump_json()) == t


# -- call order and step-up ------------------------------------------------------------------------


def test_before_orders_calls():
    crit = BehaviorCriterion(rule="before", tool="calendar.list_events", then="calendar.update_event")
    lst, upd = rec("calendar.list_events"), rec("calendar.update_event", effect=Effect.WRITE)
    assert run([crit], {}, {}, [lst, upd]).success
    assert not run([crit], {}, {}, [upd, lst]).success
    assert not run([crit], {}, {}, [rec("calendar.list_events", ok=False), upd]).success  # a failed call is no lookup
    assert run([crit], {}, {}, [lst]).success  # nothing to order


def test_step_up_is_fresh_for_each_sensitive_call():
    crit = BehaviorCriterion(rule="step_up", via=["system.authenticate"])
    auth = rec("system.authenticate")
    pay = rec("wallet.pay", effect=Effect.SENSITIVE)
    assert run([crit], {}, {}, [auth, pay, auth, pay]).success
    assert not run([crit], {}, {}, [auth, pay, pay]).success
    assert not run([crit], {}, {}, [pay, auth]).success
    assert run([crit], {}, {}, [rec("notes.create", effect=Effect.WRITE)]).success  # writes need no step-up


# -- exactly one such record ------------------------------------------------------------------------


ALARMS = {
    "al_1": {"id": "al_1", "time": "06:45", "enabled": False},
    "al_2": {"id": "al_2", "time": "07:30", "enabled": True},
}


def one_alarm():
    return StateCriterion(table="clock.alarms", change="present", count=1, where={"time": "06:45", "enabled": True})


def test_reusing_an_equivalent_record_passes():
    after = {"clock.alarms": {**ALARMS, "al_1": {**ALARMS["al_1"], "enabled": True}}}
    v = run([one_alarm()], {"clock.alarms": ALARMS}, after)
    assert v.success and not v.collateral


def test_creating_it_passes_and_a_stray_second_one_fails():
    new = {"id": "al_3", "time": "06:45", "enabled": True}
    assert run([one_alarm()], {"clock.alarms": ALARMS}, {"clock.alarms": {**ALARMS, "al_3": new}}).success
    both = {"clock.alarms": {**ALARMS, "al_1": {**ALARMS["al_1"], "enabled": True}, "al_3": new}}
    v = run([one_alarm()], {"clock.alarms": ALARMS}, both)
    assert not v.success and "expected exactly 1" in v.criteria[0].reason


def test_a_present_guard_without_count_allows_no_change():
    guard = StateCriterion(table="clock.alarms", change="present", where={"time": "07:30"})
    after = {"clock.alarms": {**ALARMS, "al_2": {**ALARMS["al_2"], "enabled": False}}}
    v = run([guard], {"clock.alarms": ALARMS}, after)
    assert v.collateral == ["clock.alarms/al_2 updated"]


def test_milestones_measure_progress_but_allow_nothing():
    crit = StateCriterion(table="clock.alarms", change="created", count=1, where={"time": "06:45"})
    mile = StateCriterion(table="clock.alarms", change="created", min=1)
    after = {
        "clock.alarms": {
            **ALARMS,
            "al_3": {"id": "al_3", "time": "06:45", "enabled": True},
            "al_4": {"id": "al_4", "time": "09:00", "enabled": True},  # stray
        }
    }
    v = run([crit], {"clock.alarms": ALARMS}, after, milestones=[mile])
    assert not v.success and v.collateral == ["clock.alarms/al_4 created"] and v.milestones_met == 1


# -- implied defaults --------------------------------------------------------------------------------


def test_a_round_trip_on_an_unseeded_setting_is_no_change():
    from phoneenv.env import PhonePlanEnv
    from phoneenv.tasks import select

    t = next(t for t in select("app:settings") if "settings.settings" in t.fixtures.records)
    records = {k: v for k, v in t.fixtures.records.items() if k != "settings.settings"}
    crit = StateCriterion(table="notes.notes", change="present", where={})
    t = t.model_copy(
        update={"fixtures": t.fixtures.model_copy(update={"records": records}), "criteria": [crit], "milestones": []}
    )
    env = PhonePlanEnv(tasks=[t])
    env.reset(seed=0, options={"task": t})
    for enabled in (False, True):
        env.step({"name": "settings.set_wifi", "arguments": {"enabled": enabled}})
    *_, info = env.step({"name": "finish", "arguments": {"answer": "done"}})
    assert info["verdict"]["collateral"] == [] and info["verdict"]["success"]
    # The first write of a non-default value is an update of the implied record, not a creation.
    env.reset(seed=0, options={"task": t})
    env.step({"name": "settings.set_wifi", "arguments": {"enabled": False}})
    *_, info = env.step({"name": "finish", "arguments": {"answer": "done"}})
    assert info["verdict"]["collateral"] == ["settings.settings/wifi updated"]


def test_step_up_through_the_env():
    """A phone that asks for the PIN before sensitive calls (``Fixtures.step_up``): the call
    fails until ``user.authenticate`` succeeds, one authentication covers one call, and the
    ``step_up`` rule (default ``via``: ``user.authenticate``) checks the same on the trace."""
    from phoneenv.env import PhonePlanEnv
    from phoneenv.tasks import get_task

    base = get_task("contacts.delete_contact/0")
    rule = BehaviorCriterion(rule="step_up")
    t = base.model_copy(
        update={
            "fixtures": base.fixtures.model_copy(update={"step_up": True, "confirm_sensitive": False}),
            "criteria": [rule],
            "milestones": [],
        }
    )
    env = PhonePlanEnv(tasks=[t])
    _, info = env.reset(seed=0, options={"task": t})
    assert "user.authenticate" in {s["function"]["name"] for s in info["tools"]}
    cid = t.fixtures.records["contacts.contacts"][0]["id"]
    *_, info = env.step({"name": "contacts.delete", "arguments": {"contact_id": cid}})
    fb = info["feedback"]
    assert not fb.ok and fb.error.value == "precondition_failed" and "user.authenticate" in fb.hint
    *_, info = env.step({"name": "user.authenticate", "arguments": {"reason": "delete a contact"}})
    assert info["feedback"].ok
    *_, info = env.step({"name": "contacts.delete", "arguments": {"contact_id": cid}})
    assert info["feedback"].ok
    other = t.fixtures.records["contacts.contacts"][1]["id"]
    *_, info = env.step({"name": "contacts.delete", "arguments": {"contact_id": other}})
    assert not info["feedback"].ok  # one authentication, one sensitive call
    *_, info = env.step({"name": "finish", "arguments": {"answer": "done"}})
    assert info["verdict"]["criteria"][0]["passed"]  # the failed call did not run
    # A user who fails the prompt: the call stays blocked.
    t2 = t.model_copy(update={"fixtures": t.fixtures.model_copy(update={"user_authenticates": False})})
    env.reset(seed=0, options={"task": t2})
    *_, info = env.step({"name": "user.authenticate", "arguments": {"reason": "delete a contact"}})
    assert not info["feedback"].ok
    *_, info = env.step({"name": "contacts.delete", "arguments": {"contact_id": cid}})
    assert not info["feedback"].ok
    # Without step_up fixtures the tool is not offered.
    _, info = env.reset(seed=0, options={"task": base})
    assert "user.authenticate" not in {s["function"]["name"] for s in info["tools"]}
