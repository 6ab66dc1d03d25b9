"""Messages, phone and calendar templates: each task's goal and criteria checked against values
derived by hand from its fixture records, and a plausible wrong plan that must fail, for the
right reason, through the env."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import pytest

from phoneenv.contract import AnswerCriterion, StateCriterion, TaskSpec
from phoneenv.env import PhonePlanEnv
from phoneenv.tasks.templates import all_templates

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip
DAY = re.compile(r"(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday) (\d{1,2}) (" + "|".join(MONTHS) + ")")


# -- helpers ------------------------------------------------------------------------------------


def task(name: str, k: int) -> TaskSpec:
    return all_templates()[name].task(k)


def tasks(name: str) -> list[TaskSpec]:
    return [task(name, k) for k in range(all_templates()[name].count)]


def recs(t: TaskSpec, table: str) -> list[dict[str, Any]]:
    return t.fixtures.records[table]


def contact(t: TaskSpec, **where: Any) -> dict[str, Any]:
    (c,) = [c for c in recs(t, "contacts.contacts") if all(c.get(k) == v for k, v in where.items())]
    return c


def by_first(t: TaskSpec, first: str) -> dict[str, Any]:
    (c,) = [c for c in recs(t, "contacts.contacts") if c["name"].split()[0] == first]
    return c


def named(t: TaskSpec, phrase: str) -> dict[str, Any]:
    """The contact a goal means by "my <relation>", a first name, or a full name."""
    if phrase.startswith("my "):
        return contact(t, relation=phrase[3:])
    if " " in phrase:
        return contact(t, name=phrase)
    return by_first(t, phrase)


def same(a: str, b: str) -> bool:
    return re.sub(r"\D", "", a)[-9:] == re.sub(r"\D", "", b)[-9:]


def goal_date(t: TaskSpec, text: str | None = None) -> dt.date:
    """The first "<Weekday> <day> <Month>" in the goal (or ``text``), in the fixture clock's year."""
    m = DAY.search(text or t.goal)
    assert m, t.goal
    day = dt.date(int(t.fixtures.clock[:4]), MONTHS.index(m.group(3)) + 1, int(m.group(2)))
    assert MONTHS[day.month - 1] == m.group(3) and day.strftime("%A") == m.group(1), "weekday matches the date"
    return day


def crit(t: TaskSpec, kind: type, i: int = 0) -> Any:
    return [c for c in t.criteria if isinstance(c, kind)][i]


def play(t: TaskSpec, *steps: tuple[str, dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Play ``steps`` (ending with finish) in a fresh env; returns the verdict and each feedback."""
    env = PhonePlanEnv(task=t)
    env.reset(seed=0)
    fbs = []
    info: dict[str, Any] = {}
    for name, args in steps:
        obs, _, term, _, info = env.step(json.dumps({"name": name, "arguments": args}))
        fbs.append(json.loads(obs["feedback"]))
        if term:
            break
    assert "verdict" in info, "the plan must end with finish"
    return info["verdict"], fbs


def failed(verdict: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["reason"] for c in verdict["criteria"] if not c["passed"]}


def confirm(t: TaskSpec) -> list[tuple[str, dict[str, Any]]]:
    return [("user.confirm", {"question": "OK?"})] if t.fixtures.confirm_sensitive else []


def finish(answer: str = "Done.") -> tuple[str, dict[str, Any]]:
    return ("finish", {"answer": answer})


# -- every template: registered, 8 tasks, ASCII goals --------------------------------------------

NAMES = {
    "messages": ["text_contact", "unread_count", "last_texter", "mark_thread_read", "delete_message", "forward"],
    "phone": ["call_contact", "last_missed_call", "block_caller", "delete_call_entry"],
    "calendar": ["create_event", "move_event", "delete_event", "add_attendee", "next_event"],
}
ALL = [f"{area}.{n}" for area, names in NAMES.items() for n in names]


@pytest.mark.parametrize("name", ALL)
def test_template_metadata(name):
    tpl = all_templates()[name]
    assert tpl.count == 8 and 1 <= tpl.difficulty <= 3 and tpl.capabilities
    assert tpl.apps[0] == name.split(".")[0]
    for t in tpl.tasks():
        assert t.goal.isascii() and t.reference_plan[-1].name == "finish"
        used = {c.name.split(".")[0] for c in t.reference_plan if "." in c.name} - {"system", "user"}
        assert used <= set(t.apps)


# -- messages -------------------------------------------------------------------------------------


def test_text_contact_goal_and_wrong_recipient():
    for t in tasks("messages.text_contact"):
        m = re.fullmatch(r'Text (my \w+|\w+) and (my \w+|\w+): "(.+?)"\.?( Check with me before sending\.)?', t.goal)
        assert m, t.goal
        a, b = named(t, m.group(1)), named(t, m.group(2))
        sent = [c for c in t.criteria if isinstance(c, StateCriterion)]
        assert [c.where["number"] for c in sent] == [{"person": a["id"]}, {"person": b["id"]}]
        for c in sent:
            assert c.change == "created" and c.where["body"] == {"dictates": m.group(3)}  # the dictated text, whole
        assert t.fixtures.confirm_sensitive == bool(m.group(4))
    t = next(t for t in tasks("messages.text_contact") if not t.fixtures.confirm_sensitive)
    m = re.match(r'Text (my \w+|\w+) and (my \w+|\w+): "(.+?)"', t.goal)
    emil, quinn = named(t, m.group(1)), named(t, m.group(2))
    other = next(c for c in recs(t, "contacts.contacts") if c["id"] not in (emil["id"], quinn["id"]))
    body = m.group(3)
    verdict, fbs = play(
        t,
        ("messages.send", {"to": emil["phone"], "body": body}),
        ("messages.send", {"to": other["phone"], "body": body}),
        finish(),
    )
    assert fbs[1]["ok"] and not verdict["success"]
    assert failed(verdict) == {f"texted:{quinn['id']}": "0 matching created record(s), expected exactly 1"}
    assert verdict["collateral"] == [f"messages.messages/{fbs[1]['result']['id']} created"]
    # The right numbers in another format and the text reworded but keeping its point: success.
    spaced = emil["phone"][:3] + " " + emil["phone"][3:6] + " " + emil["phone"][6:]
    verdict, _ = play(
        t,
        ("messages.send", {"to": spaced, "body": f"Hi! {body}"}),
        ("messages.send", {"to": quinn["phone"], "body": body.upper()}),
        finish(),
    )
    assert verdict["success"]


def test_unread_count_answer_and_miscount():
    for t in tasks("messages.unread_count"):
        unread = [m for m in recs(t, "messages.messages") if m["direction"] == "in" and not m["read"]]
        senders = {
            next(c["name"] for c in recs(t, "contacts.contacts") if same(c["phone"], m["number"])) for m in unread
        }
        ans = crit(t, AnswerCriterion)
        assert ans.type == "number" and ans.value == len(unread) > 0
        marked = crit(t, StateCriterion)
        assert marked.where == {"direction": "in", "read": True} and marked.count == len(unread)
        right = f"{len(unread)} unread texts, from " + " and ".join(sorted(senders))
        # The answer alone: the texts are still unread.
        verdict, _ = play(t, ("messages.list_unread", {}), finish(right))
        assert set(failed(verdict)) == {"updated:messages.messages"}, right
        numbers = {m["number"] for m in unread}
        verdict, _ = play(t, *[("messages.mark_read", {"number": n}) for n in numbers], finish(right))
        assert verdict["success"], right
    t = task("messages.unread_count", 7)
    inbound = [m for m in recs(t, "messages.messages") if m["direction"] == "in"]
    assert len(inbound) != crit(t, AnswerCriterion).value
    # Counting every incoming text, read or not.
    names = " ".join(c["name"] for c in recs(t, "contacts.contacts"))
    verdict, _ = play(t, ("messages.list_threads", {}), finish(f"{len(inbound)} unread texts: {names}"))
    assert not verdict["success"]
    n = crit(t, AnswerCriterion).value
    assert failed(verdict)["answer"] == f"answer states number {len(inbound)}, expected only {n:g}"


def test_last_texter_answer_and_outgoing_confusion():
    checked = 0
    for t in tasks("messages.last_texter"):
        msgs = recs(t, "messages.messages")
        last_in = max((m for m in msgs if m["direction"] == "in"), key=lambda m: m["time"])
        sender = next(c for c in recs(t, "contacts.contacts") if same(c["phone"], last_in["number"]))
        who = crit(t, AnswerCriterion)
        assert who.type == "contact" and who.value == sender["id"]
        reply = re.search(r'Text them back: "(.+)"\.$', t.goal).group(1)
        sent = crit(t, StateCriterion)
        assert sent.where["number"] == {"person": sender["id"]}
        assert sent.where["body"] == {"dictates": reply}
        newest = max(msgs, key=lambda m: m["time"])
        if newest["direction"] == "out" and not same(newest["number"], sender["phone"]):
            # The newest thread is one where the user wrote last: that person is the wrong one.
            other = next(c for c in recs(t, "contacts.contacts") if same(c["phone"], newest["number"]))
            verdict, _ = play(
                t,
                ("messages.send", {"to": other["phone"], "body": reply}),
                finish(f"{other['name']} texted last."),
            )
            assert set(failed(verdict)) == {"answer", "created:messages.messages"}
            checked += 1
    assert checked, "some world has the user's own text as the newest message"


def test_mark_thread_read_criteria_and_marking_everything():
    for t in tasks("messages.mark_thread_read"):
        m = re.fullmatch(
            r"Mark (?:my conversation with )?(my \w+|\w+?)(?:'s texts)? as read\."
            r"|I've seen (my \w+|\w+)'s messages already, mark them read\.",
            t.goal,
        )
        assert m, t.goal
        c = named(t, m.group(1) or m.group(2))
        unread = [x for x in recs(t, "messages.messages") if same(x["number"], c["phone"]) and x["direction"] == "in"]
        updated = crit(t, StateCriterion)
        assert updated.where == {"number": {"person": c["id"]}, "read": True}
        assert updated.count == sum(not x["read"] for x in unread) > 0

    def unread_numbers(t: TaskSpec) -> list[str]:
        return sorted({x["number"] for x in recs(t, "messages.messages") if x["direction"] == "in" and not x["read"]})

    t = next(t for t in tasks("messages.mark_thread_read") if len(unread_numbers(t)) > 1)
    numbers = unread_numbers(t)
    sister = next(
        c for c in recs(t, "contacts.contacts") if crit(t, StateCriterion).where["number"] == {"person": c["id"]}
    )
    # Marking every conversation read: the right one is done, but the others are collateral damage.
    verdict, _ = play(t, *[("messages.mark_read", {"number": n}) for n in numbers], finish())
    assert not failed(verdict) and not verdict["success"]
    others = [x["id"] for x in recs(t, "messages.messages") if not x["read"] and not same(x["number"], sister["phone"])]
    assert sorted(verdict["collateral"]) == sorted(f"messages.messages/{i} updated" for i in others)


def test_delete_message_target_and_confirmation():
    for t in tasks("messages.delete_message"):
        m = re.match(
            r"(?:Delete the last text (my \w+|\w+) sent me|Get rid of the most recent message from (my \w+|\w+))\.",
            t.goal,
        )
        assert m, t.goal
        c = named(t, m.group(1) or m.group(2))
        inbound = [x for x in recs(t, "messages.messages") if same(x["number"], c["phone"]) and x["direction"] == "in"]
        target = max(inbound, key=lambda x: x["time"])
        assert crit(t, StateCriterion).where == {"id": target["id"]}
        assert t.fixtures.confirm_sensitive == t.goal.endswith("Ask me before you delete it.")
    t = task("messages.delete_message", 3)  # confirm variant
    assert t.fixtures.confirm_sensitive and "Ask me before" in t.goal
    target = crit(t, StateCriterion).where["id"]
    verdict, fbs = play(t, ("messages.delete", {"message_id": target}), finish())
    assert fbs[0]["error"] == "confirmation_required"
    assert failed(verdict) == {"deleted:messages.messages": "0 matching deleted record(s), expected exactly 1"}
    # Confirmed, but an older message of the same conversation.
    msgs = recs(t, "messages.messages")
    number = next(x["number"] for x in msgs if x["id"] == target)
    wrong = next(x["id"] for x in msgs if x["number"] == number and x["id"] != target)
    verdict, _ = play(t, *confirm(t), ("messages.delete", {"message_id": wrong}), finish())
    assert "deleted:messages.messages" in failed(verdict)
    assert verdict["collateral"] == [f"messages.messages/{wrong} deleted"]


def test_forward_body_recipient_and_wrong_recipient():
    for t in tasks("messages.forward"):
        m = re.fullmatch(r'Forward the text (\w+) sent me \("(.+)"\) to (my \w+|\w+)\.', t.goal)
        if m:
            first, body, to = m.groups()
        else:
            m = re.fullmatch(r'Send (my \w+|\w+) the message "(.+)" that I got from (\w+)\.', t.goal)
            assert m, t.goal
            to, body, first = m.groups()
        sender, to = by_first(t, first), named(t, to)
        assert [x["body"] for x in recs(t, "messages.messages")].count(body) == 1
        where = crit(t, StateCriterion).where
        assert where["number"] == {"person": to["id"]}
        # the text itself, alone or after a forwarding prefix, with quotes or not
        for ok_body in (body, f'Fwd: "{body}"', f"From {first}: {body}", body.lower().rstrip("?!.")):
            assert re.search(where["body"]["regex"], ok_body, re.I), ok_body
        for bad in (body.split()[0], f"{body} Ignore this.", f"Not {body}"):
            assert not re.search(where["body"]["regex"], bad, re.I), bad
        assert any(
            x["body"] == body and same(x["number"], sender["phone"]) and x["direction"] == "in"
            for x in recs(t, "messages.messages")
        )
    t = task("messages.forward", 1)
    body = re.search(r'"(.+?)"', t.goal).group(1)
    src = next(x for x in recs(t, "messages.messages") if x["body"] == body)
    to = crit(t, StateCriterion).where["number"]["person"]
    wrong = next(c for c in recs(t, "contacts.contacts") if c["id"] != to and not same(c["phone"], src["number"]))
    verdict, _ = play(t, ("messages.forward", {"message_id": src["id"], "to": wrong["phone"]}), finish())
    assert "created:messages.messages" in failed(verdict) and len(verdict["collateral"]) == 1


# -- phone ----------------------------------------------------------------------------------------


def test_call_contact_permission_and_unrequested_call():
    seen_denied = False
    for t in tasks("phone.call_contact"):
        m = re.fullmatch(r"(?:Call|Give|Phone|Can you ring) (my \w+|\w+)(?: a call| for me)?[.?]", t.goal)
        assert m, t.goal
        c = named(t, m.group(1))
        assert crit(t, StateCriterion).where == {"number": {"person": c["id"]}, "direction": "out"}
        denied = t.fixtures.permissions.get("phone", {}).get("android.permission.CALL_PHONE") is False
        assert denied == any(s.name == "system.request_permission" for s in t.reference_plan)
        seen_denied |= denied
    assert seen_denied
    t = next(t for t in tasks("phone.call_contact") if t.fixtures.permissions.get("phone"))  # CALL_PHONE denied
    samir = named(t, re.fullmatch(r"(?:Call|Give|Phone|Can you ring) (my \w+|\w+)\b.*", t.goal).group(1))
    verdict, fbs = play(t, ("phone.call", {"number": samir["phone"]}), finish("Calling."))
    assert fbs[0]["error"] == "permission_denied"
    assert failed(verdict) == {"created:phone.calls": "0 matching created record(s), expected exactly 1"}
    # Asking for the permission first, then calling, hanging up after: success.
    verdict, _ = play(
        t,
        ("system.request_permission", {"app": "phone", "permission": "android.permission.CALL_PHONE"}),
        ("phone.call", {"number": samir["phone"]}),
        ("phone.end_call", {}),
        finish(),
    )
    assert verdict["success"]


def test_last_missed_call_answer_and_last_call_confusion():
    checked = 0
    for t in tasks("phone.last_missed_call"):
        calls = recs(t, "phone.calls")
        missed = max((r for r in calls if r["direction"] == "missed"), key=lambda r: r["time"])
        who = next((c for c in recs(t, "contacts.contacts") if same(c["phone"], missed["number"])), None)
        said = crit(t, AnswerCriterion)
        if who:
            assert said.type == "contact" and said.value == who["id"], t.id
        else:
            assert re.search(said.pattern, f"Unknown: {missed['number']}", re.I), t.id
        back = crit(t, StateCriterion)
        assert back.where == {"number": {"number": missed["number"]}, "direction": "out"}
        newest = max(calls, key=lambda r: r["time"])
        if newest["direction"] != "missed" and who and not same(newest["number"], who["phone"]):
            other = next(c for c in recs(t, "contacts.contacts") if same(c["phone"], newest["number"]))
            if other["name"].split()[0] in who["name"]:
                continue
            verdict, _ = play(
                t,
                ("phone.call", {"number": newest["number"]}),
                finish(f"{other['name']} ({newest['number']})"),
            )
            # Tasks that ask when it was also miss the time.
            assert set(failed(verdict)) - {"when"} == {"answer", "created:phone.calls"}
            checked += 1
    assert checked


def test_block_caller_number_and_blocking_a_contact():
    for t in tasks("phone.block_caller"):
        strangers = {
            r["number"]
            for r in recs(t, "phone.calls")
            if not any(same(c["phone"], r["number"]) for c in recs(t, "contacts.contacts"))
        }
        (number,) = strangers
        blocked, deleted = (c for c in t.criteria if isinstance(c, StateCriterion) and c.change != "absent")
        assert blocked.where == {"number": {"number": number}}
        n = sum(1 for r in recs(t, "phone.calls") if r["number"] == number)
        assert deleted.where == {"number": {"number": number}} and deleted.count == n
        assert recs(t, "phone.blocked") == []
    t = task("phone.block_caller", 0)
    stranger = crit(t, StateCriterion).where["number"]["number"]
    # Blocking the newest caller, who is a saved contact.
    newest = max((r for r in recs(t, "phone.calls") if r["number"] != stranger), key=lambda r: r["time"])
    verdict, fbs = play(t, ("phone.block_number", {"number": newest["number"]}), finish())
    assert "created:phone.blocked" in failed(verdict)
    assert verdict["collateral"] == [f"phone.blocked/{fbs[0]['result']['id']} created"]


def test_delete_call_entry_target_and_wrong_day():
    for t in tasks("phone.delete_call_entry"):
        m = re.match(r"Delete (the missed call from|the call from|my call to) (\w+) .*? at (\d\d:\d\d) from", t.goal)
        assert m, t.goal
        c = by_first(t, m.group(2))
        when = f"{goal_date(t).isoformat()}T{m.group(3)}"
        (entry,) = [r for r in recs(t, "phone.calls") if same(r["number"], c["phone"]) and r["time"][:16] == when]
        assert (
            entry["direction"]
            == {"the missed call from": "missed", "the call from": "in", "my call to": "out"}[m.group(1)]
        )
        assert crit(t, StateCriterion).where == {"id": entry["id"]}
        assert t.fixtures.confirm_sensitive == ("Confirm with me first." in t.goal)
    t = task("phone.delete_call_entry", 7)  # "the call from Olivia on Tuesday 24 November at 12:59"
    target = crit(t, StateCriterion).where["id"]
    wrong = next(r["id"] for r in recs(t, "phone.calls") if r["id"] != target)
    verdict, _ = play(t, ("phone.delete_call_log_entry", {"call_id": wrong}), finish())
    assert failed(verdict) == {"deleted:phone.calls": "0 matching deleted record(s), expected exactly 1"}
    assert verdict["collateral"] == [f"phone.calls/{wrong} deleted"]


# -- calendar -------------------------------------------------------------------------------------


def test_create_event_times_and_wrong_day():
    for t in tasks("calendar.create_event"):
        m = re.match(
            r'(?:Add|Put) "(.+)" (?:to|in) my calendar (.+?) from (\d\d:\d\d) to (\d\d:\d\d) with (my \w+|\w+)'
            r"(?:, location: (.+))?, and let them know\.$",
            t.goal,
        )
        assert m, t.goal
        day = goal_date(t)
        today = dt.date.fromisoformat(t.fixtures.clock[:10])
        if m.group(2).startswith("tomorrow"):
            assert day == today + dt.timedelta(days=1)
        c = named(t, m.group(5))
        where = crit(t, StateCriterion).where
        assert where["title"] == {"iequals": m.group(1)}
        assert (where["start"], where["end"]) == (f"{day}T{m.group(3)}", f"{day}T{m.group(4)}")
        assert where["attendees"] == {"people": [c["id"]]}
        assert where.get("location") == ({"iequals": m.group(6)} if m.group(6) else None)
    t = tasks("calendar.create_event")[0]
    m = re.match(
        r'(?:Add|Put) "(.+)" (?:to|in) my calendar .+? from (\d\d:\d\d) to (\d\d:\d\d) with (my \w+|\w+)', t.goal
    )
    title, start, end = m.group(1, 2, 3)
    day = goal_date(t)
    vera = named(t, m.group(4))
    tell = ("messages.send", {"to": vera["phone"], "body": f"{title} at {start}"})
    # The right times on the day before.
    today = day - dt.timedelta(days=1)
    args = {"title": title, "start": f"{today}T{start}", "end": f"{today}T{end}", "attendees": [vera["name"]]}
    verdict, fbs = play(t, ("calendar.create_event", args), tell, finish())
    assert failed(verdict) == {"created:calendar.events": "0 matching created record(s), expected exactly 1"}
    assert verdict["collateral"] == [f"calendar.events/{fbs[0]['result']['id']} created"]
    # The right day, the person by first name or e-mail, and a text that says the time in 12-hour form: success.
    h, mm = (int(x) for x in start.split(":"))
    said = f"{h % 12 or 12}:{mm:02d} {'am' if h < 12 else 'pm'}"
    loc = re.search(r", location: (.+), and let", t.goal)
    args = {
        "title": title.lower(),
        "start": f"{day}T{start}",
        "end": f"{day}T{end}",
        "attendees": [vera["email"] or vera["name"]],
        **({"location": loc.group(1)} if loc else {}),
    }
    verdict, _ = play(
        t,
        ("calendar.create_event", args),
        ("messages.send", {"to": vera["phone"], "body": f"See you at {said}"}),
        finish(),
    )
    assert verdict["success"]


def _event_in_goal(t: TaskSpec) -> dict[str, Any]:
    m = re.search(r'"(.+?)" (?:today|tomorrow|on) .*? at (\d\d:\d\d)', t.goal)
    assert m, t.goal
    start = f"{goal_date(t, t.goal[m.start() :])}T{m.group(2)}"
    (e,) = [e for e in recs(t, "calendar.events") if e["title"] == m.group(1) and e["start"] == start]
    assert e["start"] > t.fixtures.clock[:16], "the event is still to come"
    return e


def test_move_event_times_and_moving_the_wrong_one():
    for t in tasks("calendar.move_event"):
        e = _event_in_goal(t)
        start, end = (dt.datetime.fromisoformat(e[k]) for k in ("start", "end"))
        m = re.search(
            r"to (\d\d:\d\d) the same day|to ((?:today|tomorrow) \(\w+ \d+ \w+\)|\w+ \d+ \w+), same time", t.goal
        )
        assert m, t.goal
        if m.group(1):
            new = dt.datetime.combine(start.date(), dt.time.fromisoformat(m.group(1)))
            news = f"It's now at {new:%H:%M}."
        else:
            new = dt.datetime.combine(goal_date(t, m.group(2)), start.time())
            news = f"It moves to {new:%A}."
        where = crit(t, StateCriterion).where
        assert where == {
            "id": e["id"],
            "title": e["title"],
            "start": new.isoformat(timespec="minutes"),
            "end": (new + (end - start)).isoformat(timespec="minutes"),
        }
        c = named(t, re.search(r"let (my \w+|\w+) know\.$", t.goal).group(1))
        # Giving only the new start keeps the length, as the goal asks; then the person told.
        verdict, _ = play(
            t,
            ("calendar.update_event", {"event_id": e["id"], "start": where["start"]}),
            ("messages.send", {"to": c["phone"], "body": news}),
            finish(),
        )
        assert verdict["success"], t.id
        # Moved, but nobody told.
        verdict, _ = play(t, ("calendar.update_event", {"event_id": e["id"], "start": where["start"]}), finish())
        assert set(failed(verdict)) == {"told"}, t.id
    t = tasks("calendar.move_event")[0]
    target = _event_in_goal(t)
    wrong = next(e for e in recs(t, "calendar.events") if e["id"] != target["id"])
    new_start = crit(t, StateCriterion).where["start"]
    verdict, _ = play(t, ("calendar.update_event", {"event_id": wrong["id"], "start": new_start}), finish())
    assert failed(verdict)["updated:calendar.events"] == "0 matching updated record(s), expected exactly 1"
    assert verdict["collateral"] == [f"calendar.events/{wrong['id']} updated"]


def test_delete_event_target_and_unconfirmed_delete():
    for t in tasks("calendar.delete_event"):
        e = _event_in_goal(t)
        assert crit(t, StateCriterion).where == {"id": e["id"]}
        assert t.fixtures.confirm_sensitive == ("Ask me before deleting it or sending anything." in t.goal)
    t = next(t for t in tasks("calendar.delete_event") if not t.fixtures.confirm_sensitive)
    e = _event_in_goal(t)
    iris = named(t, re.search(r"and tell (my \w+|\w+) it's off", t.goal).group(1))
    told = ("messages.send", {"to": iris["phone"], "body": f"{e['title']} is cancelled"})
    verdict, _ = play(t, ("calendar.delete_event", {"event_id": e["id"]}), told, finish())
    assert verdict["success"]
    verdict, _ = play(t, ("calendar.delete_event", {"event_id": e["id"]}), finish())
    assert set(failed(verdict)) == {"told"}
    t = next(t for t in tasks("calendar.delete_event") if t.fixtures.confirm_sensitive)
    e = _event_in_goal(t)
    verdict, fbs = play(t, ("calendar.delete_event", {"event_id": e["id"]}), finish())
    assert fbs[0]["error"] == "confirmation_required"
    assert "deleted:calendar.events" in failed(verdict)
    # Confirmed, but another event deleted.
    other = next(x for x in recs(t, "calendar.events") if x["id"] != e["id"])
    verdict, _ = play(t, *confirm(t), ("calendar.delete_event", {"event_id": other["id"]}), finish())
    assert verdict["collateral"] == [f"calendar.events/{other['id']} deleted"]


def test_add_attendee_full_name_and_relation_word():
    seen_relation = False
    for t in tasks("calendar.add_attendee"):
        e = _event_in_goal(t)
        m = re.match(r"(?:Add|Invite|Put) (my \w+|\w+)(?: to | on the guest list)", t.goal)
        assert m, t.goal
        c = named(t, m.group(1))
        seen_relation |= m.group(1).startswith("my ")
        assert c["name"] not in e["attendees"]
        where = crit(t, StateCriterion).where
        assert where["id"] == e["id"] and where["attendees"] == {"has_person": c["id"], "len": len(e["attendees"]) + 1}
    assert seen_relation
    t = task("calendar.add_attendee", 0)  # 'Invite my boss to "Call with Denis" ...'
    e = _event_in_goal(t)
    rel = re.search(r"\bmy (\w+)", t.goal).group(1)
    them = contact(t, relation=rel)
    # Writing the relation instead of the person's name.
    verdict, _ = play(t, ("calendar.add_attendee", {"event_id": e["id"], "attendee": f"my {rel}"}), finish())
    assert set(failed(verdict)) == {"updated:calendar.events"}
    assert verdict["collateral"] == [f"calendar.events/{e['id']} updated"]
    # The person's name, in any case: success.
    verdict, _ = play(
        t,
        ("contacts.search", {"query": rel}),
        ("calendar.add_attendee", {"event_id": e["id"], "attendee": them["name"].lower()}),
        finish(),
    )
    assert verdict["success"]


def test_next_event_answer_and_skipped_event():
    checked = 0
    for t in tasks("calendar.next_event"):
        clock = t.fixtures.clock[:16]
        tomorrow = "tomorrow" in t.goal
        day = goal_date(t) if tomorrow else dt.date.fromisoformat(clock[:10])
        after = f"{day}T00:00" if tomorrow else clock
        events = sorted(
            (e for e in recs(t, "calendar.events") if e["start"][:10] == day.isoformat() and e["start"] > after),
            key=lambda e: e["start"],
        )
        nxt = events[0]
        assert crit(t, AnswerCriterion).contains == [nxt["title"], nxt["location"]]
        later = sorted((e for e in recs(t, "calendar.events") if e["start"] > nxt["start"]), key=lambda e: e["start"])
        other = next((e for e in later if e["title"] != nxt["title"]), None)
        if other is not None:
            # Skipping the next event: naming the one after it.
            verdict, _ = play(t, ("calendar.list_events", {}), finish(f"{other['title']}, at {other['location']}"))
            assert "answer" in failed(verdict)
            checked += 1
    assert checked
    t = tasks("calendar.next_event")[0]
    title, place = crit(t, AnswerCriterion).contains
    emil = named(t, re.search(r"(?:Text|Tell|Let) (my \w+|\w+) (?:where|too|know)", t.goal).group(1))
    told = ("messages.send", {"to": emil["phone"], "body": f"I'll be at {place}"})
    verdict, _ = play(t, ("calendar.list_events", {}), told, finish(f"{title} at 10:00."))
    # the place left out, and a time the event does not have told (it is the grounded claims' to catch)
    assert failed(verdict).keys() == {"answer", "grounded"} and failed(verdict)["answer"] == f"answer lacks {place!r}"
    assert "'10:00'" in failed(verdict)["grounded"]
    verdict, _ = play(t, ("calendar.list_events", {}), told, finish(f"Next up: {title.lower()}, in {place}."))
    assert verdict["success"]
