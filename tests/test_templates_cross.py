"""Cross-app and hybrid templates: verdicts a careful person would agree with.

Across the templates: distinct goals, milestones that name the arguments of this task, enough
verdict probes of each kind, and task lengths. Per template: the goal read back against the
fixture records, and the criteria checked on records written by hand (another format of the same
number or time is accepted; the wrong person, a contradicting value, a missing part is not)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest

from phoneenv.contract import BehaviorCriterion, CompositeCriterion, StateCriterion, TaskSpec
from phoneenv.tasks import needed_calls
from phoneenv.tasks.predicates import Context, match
from phoneenv.tasks.templates import all_templates
from phoneenv.tasks.validate import prove
from tests.criteria import goal_criteria

NAMES = sorted(n for n in all_templates() if n.startswith(("cross.", "hybrid.")))
CROSS = [n for n in NAMES if n.startswith("cross.")]


def tasks(name: str) -> list[TaskSpec]:
    t = all_templates()[name]
    return [t.task(k) for k in range(t.count)]


def recs(t: TaskSpec, table: str) -> list[dict[str, Any]]:
    return t.fixtures.records[table]


def by_first(t: TaskSpec, first: str) -> dict[str, Any]:
    (c,) = [c for c in recs(t, "contacts.contacts") if c["name"].split()[0] == first]
    return c


def holds(t: TaskSpec, crit: StateCriterion, record: dict[str, Any]) -> bool:
    ctx = Context(contacts=tuple(recs(t, "contacts.contacts")), now=t.fixtures.clock)
    return match(record, crit.where, ctx)


def leaves(crit: Any) -> list[Any]:
    if isinstance(crit, CompositeCriterion):
        return [x for c in crit.criteria for x in leaves(c)]
    return [crit]


def sms(t: TaskSpec) -> StateCriterion:
    (c,) = [c for c in goal_criteria(t) if isinstance(c, StateCriterion) and c.table == "messages.messages"]
    return c


# -- every template -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_goals_milestones_and_probes(name):
    ts = tasks(name)
    assert len({t.goal for t in ts}) == len(ts)
    for t in ts:
        assert t.goal[0].isupper() and t.goal.rstrip('"')[-1] in ".?", t.goal
        assert not re.search(r"\b(sub-agent|search first|yourself)\b", t.goal, re.I)
        for m in (x for ms in t.milestones for x in leaves(ms)):
            if isinstance(m, BehaviorCriterion) and m.rule == "required_call":
                assert m.arguments, f"{t.id}: milestone {m.id} earns any call of {m.tool}"
        kinds = [p.expect for p in t.probes]
        assert kinds.count("pass") >= 2 and kinds.count("fail") >= 2, t.id


def test_lengths_across_templates():
    n = [needed_calls(t) for name in NAMES for t in tasks(name)]
    assert sum(k <= 1 for k in n) <= 0.05 * len(n)
    assert sum(k >= 3 for k in n) >= 0.65 * len(n)


@pytest.mark.parametrize("name", CROSS)
def test_first_task_proven_with_its_probes(name):
    proof = prove(tasks(name)[0])
    assert proof.ok, proof.problems
    assert proof.probes_as_expected == proof.probes >= 4


# -- per template -----------------------------------------------------------------------------------


def test_late_to_meeting_needs_the_right_lateness():
    for t in tasks("cross.late_to_meeting"):
        late = int(re.search(r"(\d+) minutes late", t.goal).group(1))
        title = re.search(r'"(.+)"', t.goal).group(1)
        (ev,) = [e for e in recs(t, "calendar.events") if e["title"] == title]
        for crit in goal_criteria(t):
            (person,) = [c for c in recs(t, "contacts.contacts") if holds(t, crit, {"number": c["phone"],
                         "direction": "out", "body": f"{late} minutes late"})]  # fmt: skip
            assert person["name"] in ev["attendees"]
            rec = {"number": person["phone"], "direction": "out"}
            assert holds(t, crit, {**rec, "body": f"Sorry, running {late} min late!"})
            assert not holds(t, crit, {**rec, "body": f"Sorry, running {late + 25} min late!"})
            assert not holds(t, crit, {**rec, "body": f"Running {late} or {late + 5} minutes late"})  # a hedge
            assert not holds(t, crit, {**rec, "body": f"See you at {late}"})  # not about being late
        assert len(goal_criteria(t)) == len(ev["attendees"])


def test_note_contact_number_accepts_any_format_of_the_number():
    for t in tasks("cross.note_contact_number"):
        (crit,) = goal_criteria(t)
        m = re.search(r"my (\w+)'s|(\w+)'s", t.goal)
        c = (
            next(c for c in recs(t, "contacts.contacts") if c["relation"] == m.group(1))
            if m.group(1)
            else by_first(t, m.group(2))
        )
        title = re.search(r'"(.+)"', t.goal).group(1)
        digits = re.sub(r"\D", "", c["phone"])
        spaced = f"+{digits[:2]} {digits[2:5]} {digits[5:]}"
        for body in (c["phone"], spaced, f"{c['name']}: {spaced}"):
            assert holds(t, crit, {"title": title.upper(), "body": body}), body
        wrong = c["phone"][:-1] + ("7" if c["phone"][-1] != "7" else "3")
        assert not holds(t, crit, {"title": title, "body": wrong})
        assert not holds(t, crit, {"title": "Other", "body": c["phone"]})


def test_share_note_sms_needs_every_line_to_the_named_person():
    for t in tasks("cross.share_note_sms"):
        first, title = re.search(r'(?:Text|Send) (\w+) (?:what is in )?my "(.+)" note', t.goal).groups()
        c = by_first(t, first)
        (note,) = [n for n in recs(t, "notes.notes") if n["title"] == title]
        lines = note["body"].splitlines()
        crit = sms(t)
        rec = {"number": c["phone"], "direction": "out"}
        assert holds(t, crit, {**rec, "body": " / ".join(reversed(lines)).upper()})
        if len(lines) > 1:
            assert not holds(t, crit, {**rec, "body": lines[0]})
        namesakes = [x for x in recs(t, "contacts.contacts") if x["id"] != c["id"]
                     and x["name"].split()[-1] == c["name"].split()[-1]]  # fmt: skip
        assert namesakes and not holds(t, crit, {**rec, "number": namesakes[0]["phone"], "body": note["body"]})


def test_email_attendees_accepts_one_mail_or_one_each():
    for t in tasks("cross.email_attendees"):
        (crit,) = goal_criteria(t)
        assert isinstance(crit, CompositeCriterion) and crit.kind == "any_of"
        title = re.search(r'"(.+?)"', t.goal).group(1)
        subject = re.search(r'subject "(.+?)"', t.goal).group(1)
        (ev,) = [e for e in recs(t, "calendar.events") if e["title"] == title]
        people = [c for c in recs(t, "contacts.contacts") if c["name"] in ev["attendees"]]
        together, apart = crit.criteria
        body = f"Agenda for {title}: goals, numbers, next steps."
        both = {"folder": "sent", "subject": subject, "to": [p["email"] for p in people], "body": body}
        assert holds(t, together, both)
        assert not holds(t, together, {**both, "body": "Agenda"})  # a short agenda, not a word
        assert not holds(t, together, {**both, "to": both["to"][:1]})
        for p in people:  # one mail each: each part holds for exactly one of them
            assert sum(holds(t, c, {**both, "to": [p["email"]]}) for c in apart.criteria) == 1


def test_alarm_before_first_event_rings_before_the_first_event():
    for t in tasks("cross.alarm_before_first_event"):
        day = (dt.date.fromisoformat(t.fixtures.clock[:10]) + dt.timedelta(days=1)).isoformat()
        first = min((e for e in recs(t, "calendar.events") if e["start"][:10] == day), key=lambda e: e["start"])
        m = re.search(r"(\d+) minutes|(an hour and a half)|(an hour)", t.goal)
        lead = int(m.group(1)) if m.group(1) else 90 if m.group(2) else 60
        ring = (dt.datetime.fromisoformat(first["start"]) - dt.timedelta(minutes=lead)).strftime("%H:%M")
        (crit,) = goal_criteria(t)
        assert holds(t, crit, {"time": ring, "enabled": True, "days": [], "label": None})
        assert not holds(t, crit, {"time": ring, "enabled": True, "days": ["mon"], "label": None})


def test_hybrid_food_text_accepts_the_arrival_time_in_either_clock():
    for t in tasks("hybrid.order_food_text_eta"):
        first = re.search(r"text (\w+)", t.goal).group(1)
        c = by_first(t, first)
        order = next(s.result for s in t.fixtures.simulated if s.tool == "food.place_order")
        eta = dt.datetime.fromisoformat(order["eta"])
        crit = sms(t)
        rec = {"number": c["phone"], "direction": "out"}
        h12 = f"{eta.hour % 12 or 12}:{eta.minute:02d}pm" if eta.hour >= 12 else f"{eta.hour}:{eta.minute:02d} am"
        assert holds(t, crit, {**rec, "body": f"ETA {eta:%H:%M}"}) and holds(t, crit, {**rec, "body": f"at {h12}"})
        later = eta + dt.timedelta(minutes=10)
        assert not holds(t, crit, {**rec, "body": f"ETA {later:%H:%M}"})
        assert not holds(t, crit, {**rec, "body": f"ETA {eta:%H:%M} or {later:%H:%M}"})  # a hedge
