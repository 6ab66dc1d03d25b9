"""Verification by hand: predicates, each criterion kind, the collateral rule, progress."""

from __future__ import annotations

import pytest

from phoneenv.contract import (
    AnswerCriterion,
    BehaviorCriterion,
    ChangeSelector,
    Effect,
    Feedback,
    StateCriterion,
    TaskSpec,
)
from phoneenv.tasks.predicates import match
from phoneenv.tasks.verify import CallRecord, context_of, verify

OK = Feedback(ok=True, result={})
BAD = Feedback(ok=False, error="not_found", message="x")


def rec(name, ok=True, effect=Effect.READ, confirmed=False, **args):
    return CallRecord(name, args, OK if ok else BAD, effect, confirmed)


BEFORE = {
    "notes.notes": {
        "n_1": {"id": "n_1", "title": "Shopping", "body": "milk"},
        "n_2": {"id": "n_2", "title": "Books", "body": "Dune"},
    },
    "settings.settings": {"dnd": {"id": "dnd", "value": False}},
}


def after(**tables):
    out = {k: dict(v) for k, v in BEFORE.items()}
    out.update(tables)
    return out


@pytest.mark.parametrize(
    ("record", "where", "expected"),
    [
        ({"body": "Running LATE  today"}, {"body": {"icontains": "late today"}}, True),
        ({"body": "on time"}, {"body": {"icontains": "late"}}, False),
        # read as words: accents, hyphens and dashes aside, still a substring ("cancel" in "Cancelled")
        ({"body": "Meet at São Paulo"}, {"body": {"icontains": "sao paulo"}}, True),
        ({"body": "Steak medium-rare"}, {"body": {"icontains": "medium rare"}}, True),
        ({"body": "Order Cancelled"}, {"body": {"icontains": "cancel"}}, True),
        ({"body": "medium well"}, {"body": {"icontains": "medium rare"}}, False),
        ({"phone": "+49 151 1234-5678"}, {"phone": {"number": "015112345678"}}, True),
        ({"phone": "+4915112345679"}, {"phone": {"number": "+4915112345678"}}, False),
        ({"to": ("a@x.org", "B@y.org")}, {"to": {"has": "b@Y.org", "len": 2}}, True),
        ({"start": "2026-11-30T09:00"}, {"start": {"gte": "2026-11-30T08:00", "lte": "2026-11-30T10:00"}}, True),
        ({"n": 5}, {"n": {"gte": "5"}}, False),
        ({"x": None}, {"missing": None}, True),
        ({"level": 3}, {"level": {"in": [1, 2]}}, False),
        ({"song_ids": ("s_3", "s_1", "s_4")}, {"song_ids": {"seq": ["s_3", "s_1", "s_4"]}}, True),
        ({"song_ids": ("s_1", "s_3", "s_4")}, {"song_ids": {"seq": ["s_3", "s_1", "s_4"]}}, False),
        ({"song_ids": ("s_3", "s_1")}, {"song_ids": {"seq": ["s_3", "s_1", "s_4"]}}, False),
        # a pattern, with or without accents on either side, case aside; not another letter
        ({"body": "Call São Paulo at 6"}, {"body": {"regex": r"sao paulo\b"}}, True),
        ({"body": "Call Sao Paulo at 6"}, {"body": {"regex": r"São Paulo\b"}}, True),
        ({"body": "Zoë's party"}, {"body": {"regex": r"\bzoe's\b"}}, True),
        ({"body": "Call Sao Paulo at 6"}, {"body": {"regex": r"[àá]\b"}}, False),
        ({"body": "Zoa's party"}, {"body": {"regex": r"\bZoë's\b"}}, False),
        ({"body": "Call São Paulo"}, {"body": {"not": {"regex": r"sao paulo"}}}, False),
        # phone numbers written in a text: these and no other, any format
        ({"body": "Ana: +1 (929) 741-6976"}, {"body": {"phones": ["+19297416976"]}}, True),
        ({"body": "Ana: 929-741-6976 (since 2026-11-05)"}, {"body": {"phones": ["+19297416976"]}}, True),
        ({"body": "Ana: +18297416976"}, {"body": {"phones": ["+19297416976"]}}, False),
        ({"body": "+19297416976, or +19297416000"}, {"body": {"phones": ["+19297416976"]}}, False),
        ({"body": "Ana Lima"}, {"body": {"phones": ["+19297416976"]}}, False),
    ],
)
def test_predicates(record, where, expected):
    assert match(record, where) is expected


def test_unknown_operator_is_an_error():
    with pytest.raises(ValueError, match="unknown operator"):
        match({"a": 1}, {"a": {"approx": 1}})


def task(**kw):
    return TaskSpec(id="t", domain="notes", goal="g", **kw)


def test_state_created_updated_deleted_and_collateral():
    t = task(
        criteria=[
            StateCriterion(
                id="new", table="notes.notes", change="created", where={"title": {"iequals": "todo"}}, count=1
            ),
            StateCriterion(
                id="upd",
                table="notes.notes",
                change="updated",
                where={"id": "n_1", "body": {"icontains": "eggs"}},
                count=1,
            ),
        ],
        milestones=[
            StateCriterion(
                id="new", table="notes.notes", change="created", where={"title": {"iequals": "todo"}}, count=1
            )
        ],
    )
    end = after(
        **{
            "notes.notes": {
                **BEFORE["notes.notes"],
                "n_1": {"id": "n_1", "title": "Shopping", "body": "milk\neggs"},
                "n_3": {"id": "n_3", "title": "TODO", "body": ""},
            }
        }
    )
    v = verify(t, BEFORE, end, [], "done", steps=3, errors=0)
    assert v.success and v.progress == 1.0 and v.collateral == []
    # The same plus deleting n_2: collateral damage, success lost, milestones still met; progress
    # counts success as the last milestone, so it is 1/2, never 1.0 on a failure.
    end2 = {**end, "notes.notes": {k: v for k, v in end["notes.notes"].items() if k != "n_2"}}
    v = verify(t, BEFORE, end2, [], "done", steps=4, errors=0)
    assert not v.success and v.collateral == ["notes.notes/n_2 deleted"] and v.progress == 0.5
    # Allowed changes are not collateral.
    t2 = t.model_copy(update={"allowed_changes": [ChangeSelector(table="notes.notes", where={"title": "Books"})]})
    assert verify(t2, BEFORE, end2, [], "done", steps=4, errors=0).success
    # Nothing done: both criteria fail with reasons, progress 0/1.
    v = verify(t, BEFORE, BEFORE, [], None, steps=1, errors=0)
    assert [c.reason for c in v.criteria] == [
        "0 matching created record(s), expected exactly 1",
        "0 matching updated record(s), expected exactly 1",
        "",  # nothing told, nothing ungrounded
    ]
    assert (v.progress, v.milestones_met, v.milestones_total) == (0.0, 0, 1)


def test_an_expected_update_changes_only_what_was_asked():
    """An update the task asks for is collateral in the fields the agent set without being asked
    (named by its calls' arguments, outside every matching criterion's ``where``); fields the
    app changes by itself (named by no call) are not."""
    t = task(
        criteria=[
            StateCriterion(table="notes.notes", change="updated", where={"id": "n_1", "body": {"icontains": "eggs"}})
        ]
    )
    asked = {"id": "n_1", "title": "Shopping", "body": "milk\neggs", "updated": "2026-11-30T09:00"}
    calls = [rec("notes.update", note_id="n_1", body="milk\neggs")]
    # the body asked for, and a timestamp the app bumps itself: success
    v = verify(
        t, BEFORE, after(**{"notes.notes": {**BEFORE["notes.notes"], "n_1": asked}}), calls, "ok", steps=2, errors=0
    )
    assert v.success and v.collateral == []
    # the agent renamed the note too: collateral, named with the field
    renamed = {**asked, "title": "Groceries"}
    calls2 = [rec("notes.update", note_id="n_1", body="milk\neggs", title="Groceries")]
    end = after(**{"notes.notes": {**BEFORE["notes.notes"], "n_1": renamed}})
    v = verify(t, BEFORE, end, calls2, "ok", steps=2, errors=0)
    assert not v.success and v.collateral == ["notes.notes/n_1 updated title (not asked for)"]
    # a failed call sets nothing
    v = verify(t, BEFORE, end, [*calls, rec("notes.update", ok=False, title="Groceries")], "ok", steps=3, errors=1)
    assert v.success
    # a criterion naming the title too asks for it; one naming only the id asks for any change
    for where in ({"id": "n_1", "title": "Groceries"}, {"id": "n_1"}):
        t2 = task(criteria=[*t.criteria, StateCriterion(table="notes.notes", change="updated", where=where)])
        assert verify(t2, BEFORE, end, calls2, "ok", steps=2, errors=0).success, where
    # allowed changes stay allowed
    t3 = t.model_copy(update={"allowed_changes": [ChangeSelector(table="notes.notes", where={"id": "n_1"})]})
    assert verify(t3, BEFORE, end, calls2, "ok", steps=2, errors=0).success


def test_present_absent_and_bounds():
    t = task(criteria=[StateCriterion(table="notes.notes", change="absent", where={"title": "Books"})])
    assert not verify(t, BEFORE, BEFORE, [], None, steps=0, errors=0).criteria[0].passed
    t = task(criteria=[StateCriterion(table="notes.notes", change="present", where={}, min=2, max=2)])
    assert verify(t, BEFORE, BEFORE, [], None, steps=0, errors=0).success


def test_answer_criteria():
    def ok(answer, **kw):
        return verify(task(criteria=[AnswerCriterion(**kw)]), BEFORE, BEFORE, [], answer, steps=1, errors=0).success

    assert ok("  Dune. ", equals="dune")
    assert not ok("Dune Messiah", equals="dune")
    assert ok("It is at 16:30 in Room 4", contains=["16:30", "room 4"])
    assert not ok("It is at 16:30", contains=["16:30", "room 4"])
    # contains= takes whole words, punctuation and case aside
    assert ok("The parent teacher meeting – Room 4", contains=["Parent-Teacher Meeting", "room 4"])
    assert not ok("Team lunch in Room 4", contains=["Tea", "room 4"])
    assert not ok("Room 40", contains=["room 4"])
    assert ok("You have 3 unread", number=3)
    assert not ok("You have 4 unread", number=3)
    assert ok("about 2,5 km", number=2.4, tolerance=0.2)
    assert ok("+4915111111111", pattern=r"\+4915111111111")
    assert ok("It's 6 am in São Paulo", pattern=r"6 am in Sao Paulo")
    assert not ok("It's 6 am in Santos", pattern=r"6 am in Sao Paulo")
    assert not ok(None, contains=["x"])


def test_behavior_rules():
    def check(crit, calls):
        return verify(task(criteria=[crit]), BEFORE, BEFORE, calls, "x", steps=len(calls), errors=0).criteria[0]

    send = BehaviorCriterion(rule="confirm_before", tool="messages.send")
    assert check(
        send,
        [rec("user.confirm", confirmed=True, question="Send the text?"), rec("messages.send", effect=Effect.SENSITIVE)],
    ).passed
    assert not check(send, [rec("messages.send", effect=Effect.SENSITIVE)]).passed
    # One confirmation covers one sensitive call.
    two = [rec("user.confirm", confirmed=True, question="Send the text?"), rec("messages.send"), rec("messages.send")]
    assert not check(send, two).passed
    # A refused confirmation does not count.
    assert not check(
        send, [rec("user.confirm", confirmed=False, question="Send the text?"), rec("messages.send")]
    ).passed
    req = BehaviorCriterion(rule="required_call", tool="contacts.search", arguments={"query": {"icontains": "ana"}})
    assert check(req, [rec("contacts.search", query="Ana Lima")]).passed
    assert not check(req, [rec("contacts.search", ok=False, query="Ana")]).passed
    assert not check(
        BehaviorCriterion(rule="forbidden_call", tool="contacts.delete"), [rec("contacts.delete", ok=False)]
    ).passed
    assert check(BehaviorCriterion(rule="max_calls", limit=2), [rec("a"), rec("b"), rec("finish")]).passed
    assert not check(BehaviorCriterion(rule="max_calls", limit=1), [rec("a"), rec("b")]).passed
    ro = BehaviorCriterion(rule="read_only")
    assert check(ro, [rec("notes.search"), rec("notes.create", ok=False, effect=Effect.WRITE)]).passed
    assert check(ro, [rec("notes.create", effect=Effect.WRITE)]).reason == "writes in a read-only task: notes.create"
    assert not check(BehaviorCriterion(rule="delegated"), [rec("notes.search")]).passed


def test_truncated_episode_never_succeeds():
    t = task(criteria=[AnswerCriterion(contains=["x"])])
    assert not verify(t, BEFORE, BEFORE, [], "x", steps=30, errors=0, truncated=True).success


def test_repeated_criterion_ids_are_numbered():
    t = task(
        criteria=[
            AnswerCriterion(id="a", contains=["x"]),
            AnswerCriterion(id="a", contains=["y"]),
            AnswerCriterion(id="a", contains=["z"]),
        ]
    )
    v = verify(t, BEFORE, BEFORE, [], "x z", steps=1, errors=0)
    assert [(c.id, c.passed) for c in v.criteria] == [("a", True), ("a#2", False), ("a#3", True), ("grounded", True)]


def test_a_confirmation_must_be_about_the_action_it_confirms():
    from phoneenv.tasks.verify import asks_about

    assert asks_about("Buy the rain jacket in size S for 74.50 EUR?", "shop.checkout", {})
    assert asks_about("Shall I purchase it?", "shop.checkout", {})
    assert asks_about("OK to text Ana that I'm late?", "messages.send", {"to": "+4917", "body": "Late"})
    assert asks_about("Pay 115.33 USD?", "wallet.pay_bill", {"bill_id": "b_1"})
    assert asks_about("Deleting Bekir's voicemail, fine?", "phone.delete_voicemail", {"voicemail_id": "vm_2"})
    assert asks_about("Accept the offer from kyle@x.org?", "mail.reply", {"message_id": "m_1", "body": "I accept"})
    assert not asks_about("Shall I keep the screen brightness as it is?", "shop.checkout", {})
    assert not asks_about("Is it OK if I check the weather?", "mail.reply", {"message_id": "m_1", "body": "Yes"})
    assert not asks_about("", "messages.send", {"to": "+4917", "body": "Hi"})


def test_a_confirmation_names_the_person_and_the_amount_the_call_carries():
    from phoneenv.tasks.verify import asks_about

    tables = {
        "contacts.contacts": {
            "c_1": {"id": "c_1", "name": "Kati Warmer", "phone": "+4915111111111", "email": None},
            "c_2": {"id": "c_2", "name": "Ortwin Roskoth", "phone": "+4915122222222", "email": None},
        }
    }
    send = {"to": "+4915111111111", "body": "Please send me 35.36 EUR for the boat."}
    assert asks_about("Ask Kati Warmer to pay 35.36 EUR?", "messages.send", send, tables)
    assert asks_about("Text Kati her share?", "messages.send", send, tables)
    assert not asks_about("Ask Ortwin Roskoth to pay 35.36 EUR?", "messages.send", send, tables)  # another person
    assert not asks_about("Ask Kati Warmer to pay 70.72 EUR?", "messages.send", send, tables)  # another amount


def test_a_confirmation_addresses_the_recipient_not_the_person_it_is_about():
    from phoneenv.tasks.verify import asks_about

    tables = {
        "contacts.contacts": {
            "c_1": {"id": "c_1", "name": "Kati Warmer", "phone": "+4915111111111", "email": "kati@x.org"},
            "c_2": {"id": "c_2", "name": "Ortwin Roskoth", "phone": "+4915122222222", "email": "ortwin@x.org"},
            "c_3": {"id": "c_3", "name": "Lene Brandt", "phone": "+4915133333333", "email": None},
        }
    }
    card = {"to": "+4915111111111", "body": "BEGIN:VCARD\nFN:Ortwin Roskoth\nTEL:+4915122222222\nEND:VCARD"}
    for q in (
        "Send Ortwin Roskoth's contact card to Kati Warmer?",
        "Share Ortwin's contact with Kati?",
        "Text Kati: 'Here is the card for Ortwin'?",
        "Text Kati that I'm going to Ortwin's party?",
    ):
        assert asks_about(q, "messages.send", card, tables), q
    for q in ("Send Kati Warmer's contact card to Ortwin Roskoth?", "Share Kati's contact with Ortwin?"):
        assert not asks_about(q, "messages.send", card, tables), q  # the roles swapped
    both = {"to": ["kati@x.org", "ortwin@x.org"], "subject": "Agenda", "body": "See you at 10"}
    assert asks_about("Email the agenda to Kati and Ortwin?", "mail.send", both, tables)
    assert not asks_about("Email the agenda to Kati and Lene?", "mail.send", both, tables)


def test_every_confirmed_task_fails_with_a_confirmation_about_something_else():
    """Across the suite: each reference plan whose task needs a confirmation first still passes,
    and fails once every question it asks is replaced by one about another matter."""
    from phoneenv.env import PhonePlanEnv
    from phoneenv.tasks import load_suite
    from phoneenv.tasks.validate import run_plan

    tasks = [
        t
        for t in load_suite()
        if "sandbox" in t.backends
        and any(getattr(c, "rule", None) == "confirm_before" for c in t.criteria)
        and any(s.name == "user.confirm" for s in t.reference_plan)
    ]
    assert len(tasks) >= 100
    env = PhonePlanEnv(tasks=tasks)
    for t in tasks:
        off = [
            s.model_copy(update={"arguments": {"question": "Shall I keep the screen brightness as it is?"}})
            if s.name == "user.confirm"
            else s
            for s in t.reference_plan
        ]
        assert run_plan(env, t, t.reference_plan)[0]["verdict"]["success"], t.id
        assert not run_plan(env, t, off)[0]["verdict"]["success"], t.id


def test_a_confirmation_about_another_record_does_not_count():
    """With the records at hand, a question naming a sibling record (its title, amount, id or
    the person it refers to) confirms nothing about the record the call acts on."""
    from phoneenv.tasks.verify import asks_about

    tables = {
        "wallet.bills": {
            "b_4": {"id": "b_4", "payee_id": "py_7", "title": "Electricity November", "amount_due": 134.35},
            "b_6": {"id": "b_6", "payee_id": "py_9", "title": "Phone November", "amount_due": 28.72},
        },
        "wallet.payees": {"py_7": {"id": "py_7", "name": "Brightpower"}, "py_9": {"id": "py_9", "name": "Cloudnest"}},
        "travel.flights": {"fl_1": {"id": "fl_1", "code": "BW 191", "price": 212.85}},
    }
    pay = ("wallet.pay_bill", {"bill_id": "b_4"})
    assert asks_about("Pay Electricity November: 134.35?", *pay, tables)
    assert asks_about("Pay Brightpower 134.35 for Electricity November on 2026-11-14?", *pay, tables)
    assert asks_about("Shall I pay it?", *pay, tables)
    assert not asks_about("Pay Phone November: 28.72?", *pay, tables)  # the sibling's title and amount
    assert not asks_about("Pay Cloudnest?", *pay, tables)  # the sibling's payee, one hop away
    assert not asks_about("Pay b_6 now?", *pay, tables)  # the sibling's id
    book = ("travel.book_flight", {"flight_id": "fl_1"})
    assert asks_about("Book BW 191 for 212.85?", *book, tables)
    assert not asks_about("Book flight LH 100 for 99.00?", *book, tables)  # an amount the flight lacks


def test_a_criterion_names_a_record_the_episode_created_by_what_it_holds():
    """``ref``: an item must belong to the note created during the episode with that title,
    whatever id the phone gave it; the old note with the same title does not count, nor another
    new note."""
    old = {**BEFORE["notes.notes"], "n_5": {"id": "n_5", "title": "Packing", "body": ""}}
    before = {**BEFORE, "notes.notes": old, "notes.items": {}}
    made = {"ref": {"table": "notes.notes", "change": "created", "where": {"title": {"iequals": "packing"}}}}
    t = task(criteria=[StateCriterion(table="notes.items", change="created", where={"note_id": made, "text": "tent"})])

    def end(note_id, title="Packing"):
        notes = {**old, "n_9": {"id": "n_9", "title": title, "body": ""}}
        items = {"ci_1": {"id": "ci_1", "note_id": note_id, "text": "tent", "done": False}}
        return {**before, "notes.notes": notes, "notes.items": items}

    assert verify(t, before, end("n_9"), [], "Done.", steps=2, errors=0).criteria[0].passed
    assert not verify(t, before, end("n_5"), [], "Done.", steps=2, errors=0).criteria[0].passed  # the old note
    assert not verify(t, before, end("n_9", "Groceries"), [], "Done.", steps=2, errors=0).criteria[0].passed
    assert match({"ids": ["x", "n_9"]}, {"ids": made}, context_of(end("n_9"), before))  # a list holding it
    with pytest.raises(ValueError, match="ref needs"):
        match({"id": "n_9"}, {"id": {"ref": "notes.notes"}})
