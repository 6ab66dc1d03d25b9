"""Sub-agent category tasks (phoneenv/tasks/templates/subagent.py): counts, the answer each task
expects recomputed from its fixtures, proofs by execution, and that the work must be delegated."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter

import pytest

from phoneenv.contract import ToolCall
from phoneenv.env import PhonePlanEnv
from phoneenv.frames import plan_frames
from phoneenv.tasks import select
from phoneenv.tasks.validate import inlined_plans, prove_suite, run_plan

TEMPLATES = {
    "subagent.meeting_from_availability",
    "subagent.cheapest_quote",
    "subagent.daily_brief",
    "subagent.best_offer_reply",
    "subagent.birthday_note",
    "subagent.dinner_nested",
    "subagent.pay_chosen_bill",
    "subagent.collect_debts",
    "subagent.lights_off",
    "subagent.group_table",
    "subagent.returns_check",
    "subagent.cheaper_app",
    "subagent.todo_from_texts",
    "subagent.album_of_person",
    "subagent.newest_unplayed",
    "subagent.photos_to_tagged",
}
DATE_WORDS = re.compile(r"(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday) (\d{1,2}) ([A-Z][a-z]+)")


@pytest.fixture(scope="module")
def tasks():
    # The subagent.* templates; other apps' sub-agent templates (travel_subagent.*, ...) are tested beside them.
    return [t for t in select("category:subagent") if t.template.startswith("subagent.")]


def by_template(tasks, name):
    return [t for t in tasks if t.template == name]


def records(task, table):
    return task.fixtures.records.get(table, [])


def created_where(task, table):
    return [c.where for c in task.criteria if c.kind == "state" and c.table == table and c.change == "created"]


def date_words(day: dt.date) -> str:
    return f"{day.strftime('%A')} {day.day} {day.strftime('%B')}"


def test_counts_and_metadata(tasks):
    assert len(tasks) >= 100
    per = Counter(t.template for t in tasks)
    assert set(per) == TEMPLATES and all(n >= 15 for n in per.values()), per
    for t in tasks:
        assert t.category.value == "subagent" and "agent" in t.apps
        assert len(t.reference_plan) <= t.max_steps
        assert plan_frames(t.reference_plan), t.id  # every task delegates in its reference plan
        kinds = {c.rule for c in t.criteria if c.kind == "behavior"}
        assert {"delegated", "forbidden_call"} <= kinds, t.id
        assert any(c.kind == "state" for c in t.criteria), t.id
    assert any(max(d for d in _depths(t)) == 2 for t in tasks)  # nested delegation exists


def _depths(task):
    from phoneenv.frames import plan_depths

    return plan_depths(task.reference_plan)


def test_delegate_is_offered_only_to_these_tasks_by_default(tasks):
    env = PhonePlanEnv(tasks=tasks[:2] + select("contacts.favorite/0"))
    _, info = env.reset(seed=0, options={"task": tasks[0].id})
    assert "agent.delegate" in [t["function"]["name"] for t in info["tools"]]
    _, info = env.reset(seed=0, options={"task": "contacts.favorite/0"})
    assert "agent.delegate" not in [t["function"]["name"] for t in info["tools"]]


# -- the expected outcome, recomputed from each task's fixtures ----------------------------------------


def test_meeting_is_at_the_one_hour_all_three_and_the_user_have_free(tasks):
    blocked = 0
    for t in by_template(tasks, "subagent.meeting_from_availability"):
        day = dt.date.fromisoformat(t.reference_plan[-3].arguments["date"])
        words = date_words(day)
        (where,) = created_where(t, "calendar.events")
        people = where["attendees"]["people"]
        assert len(people) == 3 and words in t.goal
        phones = {c["id"]: c["phone"] for c in records(t, "contacts.contacts")}
        sets = []
        for name in people:
            lines = [
                m["body"] for m in records(t, "messages.messages") if m["number"] == phones[name] and words in m["body"]
            ]
            assert len(lines) == 1, (t.id, name, lines)
            sets.append({int(h) for h in re.findall(r"\b(\d{2}):00\b", lines[0])})
        common = set.intersection(*sets)
        free = set()
        for h in common:
            lo, hi = f"{day.isoformat()}T{h:02d}:00", f"{day.isoformat()}T{h + 1:02d}:00"
            if not any(e["start"] < hi and lo < e["end"] for e in records(t, "calendar.events")):
                free.add(h)
        blocked += len(common) > len(free)
        assert len(free) == 1, (t.id, common, free)
        (hour,) = free
        for where in created_where(t, "calendar.events"):
            assert (
                where["start"] == f"{day.isoformat()}T{hour:02d}:00"
                and where["end"] == f"{day.isoformat()}T{hour + 1:02d}:00"
            )
    assert blocked >= 3  # worlds where a common hour is taken in the user's calendar


def test_cheapest_quote_counts_vat(tasks):
    traps = 0
    for t in by_template(tasks, "subagent.cheapest_quote"):
        quotes = {}
        naive = {}
        for n in records(t, "notes.notes"):
            if " quote - " not in n["title"]:
                continue
            price = float(re.search(r"Price: (\d+(?:\.\d\d)?) [A-Z]{3}", n["body"]).group(1))
            naive[n["title"].split(" - ")[1]] = price
            quotes[n["title"].split(" - ")[1]] = price * 1.19 if "plus 19% VAT" in n["body"] else price
        assert len(quotes) == 3
        best = min(quotes, key=quotes.get)
        traps += min(naive, key=naive.get) != best
        cid = next(c["id"] for c in records(t, "contacts.contacts") if c["name"] == best)
        (where,) = created_where(t, "messages.messages")
        assert where["number"] == {"person": cid}, t.id
    assert traps >= 3  # a smaller number before VAT is the dearer quote


def test_daily_brief_names_tomorrows_first_event_and_the_list(tasks):
    for t in by_template(tasks, "subagent.daily_brief"):
        now = dt.datetime.fromisoformat(t.fixtures.clock)
        tomorrow = (now.date() + dt.timedelta(days=1)).isoformat()
        first = min(e["start"] for e in records(t, "calendar.events") if e["start"][:10] == tomorrow)
        title = re.search(r'on my "([^"]+)" list', t.goal).group(1)
        (note,) = [n for n in records(t, "notes.notes") if n["title"] == title]
        wanted = {first[11:16], *note["body"].split("\n")}
        got = {
            w["body"].get("icontains") or w["body"]["states"]["time"]["value"]
            for w in created_where(t, "messages.messages")
        }
        assert got == wanted, t.id
        # the event's end may be said beside its start
        (fact,) = [w["body"]["states"]["time"] for w in created_where(t, "messages.messages") if "states" in w["body"]]
        (end,) = [e["end"][11:16] for e in records(t, "calendar.events") if e["start"] == first]
        assert fact["context"] == [end], t.id


def test_best_offer_is_the_cheapest_that_delivers_within_a_week(tasks):
    slow_cheaper = 0
    for t in by_template(tasks, "subagent.best_offer_reply"):
        offers = []
        for m in records(t, "mail.messages"):
            if m["subject"].startswith("Offer: "):
                found = re.search(r"for (\d+(?:\.\d\d)?) [A-Z]{3} in total, delivered within (\d+) days", m["body"])
                price, days = float(found[1]), int(found[2])
                offers.append((price, days, m["from"]))
        assert len(offers) == 3
        best = min(o for o in offers if o[1] <= 7)
        slow_cheaper += min(offers) != best
        (where,) = created_where(t, "mail.messages")
        assert where["to"] == {"has": best[2]}, t.id
        days = int(re.search(r"within (\d+) days", t.goal).group(1))
        assert min(o for o in offers if o[1] <= days) == best, t.id
    assert slow_cheaper >= 3


def test_birthday_note_lists_exactly_the_contacts_born_that_month(tasks):
    for t in by_template(tasks, "subagent.birthday_note"):
        month = re.search(
            r"\b(January|February|March|April|May|June|July|August|September|October|November|"
            r"December)\b",
            t.goal,
        ).group(1)
        number = dt.datetime.strptime(month, "%B").month
        born = {
            c["name"] for c in records(t, "contacts.contacts") if c["birthday"] and int(c["birthday"][:2]) == number
        }
        assert 2 <= len(born) <= 3
        assert {w["body"]["icontains"] for w in created_where(t, "notes.notes")} == born, t.id


def test_dinner_is_on_the_one_evening_both_can_do(tasks):
    for t in by_template(tasks, "subagent.dinner_nested"):
        wheres = created_where(t, "calendar.events")
        (where,) = wheres
        names = where["attendees"]["people"]
        phones = {c["id"]: c["phone"] for c in records(t, "contacts.contacts")}
        year = t.fixtures.clock[:4]
        sets = []
        for name in names:
            (msg,) = [
                m
                for m in records(t, "messages.messages")
                if m["number"] == phones[name] and "evening" in m["body"].lower()
            ]
            sets.append(
                {
                    dt.datetime.strptime(f"{d} {mo} {year}", "%d %B %Y").date()
                    for _, d, mo in DATE_WORDS.findall(msg["body"])
                }
            )
        (day,) = set.intersection(*sets)
        assert all(w["start"] == f"{day.isoformat()}T19:30" for w in wheres), t.id


# -- proofs and agents ----------------------------------------------------------------------------------


def test_every_subagent_task_is_proven(tasks):
    proofs = prove_suite(tasks)
    assert {p.task_id: p.problems for p in proofs if not p.ok} == {}
    for t, p in zip(tasks, proofs, strict=True):
        inlined = len(list(inlined_plans(t)))
        assert inlined == len(plan_frames(t.reference_plan)) and p.perturbations > inlined


def test_reference_agent_solves_them_and_the_random_agent_does_not(tasks):
    from agents.random_agent import RandomAgent
    from agents.reference import ReferenceAgent
    from phoneenv.evaluation import run_episodes

    ref = run_episodes(ReferenceAgent(), tasks)
    assert all(r.success for r in ref)
    # memory=False: the random agent's memory.search calls would only spend time on embeddings.
    rnd = run_episodes(RandomAgent(seed=0), tasks, env_kwargs={"memory": False})
    assert sum(r.success for r in rnd) == 0


def test_random_delegations_almost_never_open_a_frame(tasks):
    from agents.random_agent import RandomAgent

    agent = RandomAgent(seed=1, finish_p=0.02)
    tasks = [t for t in tasks if "sandbox" in t.backends]  # the hybrid ones need a simulated app
    env = PhonePlanEnv(tasks=tasks, memory=False)
    calls = opened = 0
    for t in tasks:
        obs, info = env.reset(seed=0, options={"task": t})
        agent.reset(obs, info)
        done = False
        while not done:
            action = agent.act(obs, info).action
            obs, _, term, trunc, info = env.step(action)
            done = term or trunc
            if '"agent.delegate"' in action:
                calls += 1
                opened += info["feedback"].ok
    assert calls >= 10 and opened == 0, (calls, opened)


# -- the delegation is what the criteria require ------------------------------------------------------------


def _flat(plan):
    """The plan with every delegation removed: the root does all the work itself."""
    drop = {i for pair in plan_frames(plan) for i in pair}
    return [c for k, c in enumerate(plan) if k not in drop]


@pytest.mark.parametrize(
    ("template", "failing"),
    [
        ("subagent.meeting_from_availability", {"forbidden@0:messages.*", "delegated:messages.*"}),
        ("subagent.cheapest_quote", {"forbidden@0:notes.*", "delegated:notes.*"}),
        (
            "subagent.daily_brief",
            {"forbidden@0:calendar.*", "forbidden@0:notes.*", "delegated:calendar.*", "delegated:notes.*"},
        ),
        ("subagent.best_offer_reply", {"forbidden@0:mail.search", "delegated:mail.*"}),
        ("subagent.birthday_note", {"forbidden@0:contacts.*", "delegated:contacts.*"}),
        (
            "subagent.dinner_nested",
            {
                "forbidden@0:messages.*",
                "forbidden@0:calendar.*",
                "delegated:messages.*@2",
                "delegated:calendar.create_event@1",
            },
        ),
        ("subagent.pay_chosen_bill", {"forbidden@0:wallet.bills", "delegated:wallet.bills"}),
        ("subagent.collect_debts", {"forbidden@0:messages.*", "delegated:messages.*"}),
        ("subagent.lights_off", {"forbidden@0:home.list_*", "delegated:home.list_*"}),
    ],
)
def test_doing_the_delegated_work_yourself_fails(tasks, template, failing):
    t = by_template(tasks, template)[0]
    env = PhonePlanEnv(tasks=[t])
    info, fbs = run_plan(env, t, _flat(t.reference_plan))
    assert all(f.ok for f in fbs)  # every call worked: only who made it is wrong
    v = info["verdict"]
    assert not v["success"] and not v["collateral"]
    assert {c["id"] for c in v["criteria"] if not c["passed"]} == failing
    assert all(c["passed"] for c in v["criteria"] if c["kind"] == "state")


def test_one_reading_sub_agent_is_as_good_as_one_per_person(tasks):
    """The meeting goal allows one sub-agent for all the reading, not only one per person."""
    t = by_template(tasks, "subagent.meeting_from_availability")[0]
    plan = t.reference_plan
    reads = [c for c in plan if c.name in ("contacts.search", "messages.read_thread")]
    one = [
        ToolCall(
            name="agent.delegate", arguments={"goal": "Read the three threads", "tools": ["contacts", "messages"]}
        ),
        *reads,
        ToolCall(name="finish", arguments={"answer": "their times"}),
        *plan[-3:],
    ]
    info, fbs = run_plan(PhonePlanEnv(tasks=[t]), t, one)
    assert all(f.ok for f in fbs) and info["verdict"]["success"]


def test_dinner_needs_a_separate_helper_per_person(tasks):
    t = by_template(tasks, "subagent.dinner_nested")[0]
    plan = t.reference_plan
    # The coordinator's two helpers merged into one: drop the first helper's finish and the
    # second helper's delegate.
    (outer, _), (first, first_end), (second, _) = plan_frames(plan)
    merged = [c for k, c in enumerate(plan) if k not in (first_end, second)]
    info, fbs = run_plan(PhonePlanEnv(tasks=[t]), t, merged)
    assert all(f.ok for f in fbs)
    failed = {c["id"] for c in info["verdict"]["criteria"] if not c["passed"]}
    assert failed == {"delegated:messages.*@2"}
