"""The finance and home templates of phoneenv/tasks/templates/finance_*.py: the outcome each task
expects, worked out here from its goal and fixture records alone (not by the template's code),
and that each is proven and beyond a random agent."""

from __future__ import annotations

import datetime as dt
import re
from decimal import ROUND_HALF_UP, Decimal

import pytest

from phoneenv.tasks import select
from phoneenv.tasks.validate import prove_suite
from phoneenv.tasks.world import CURRENCIES
from tests.criteria import goal_criteria

TEMPLATES = [
    "home.make_scene",
    "budget.set_and_check",
    "budget.fix_expense",
    "wallet.cancel_request",
    "skills.pay_bill_safely",
    "skills.log_expense",
    "skills.evening_scene",
    "skills.leave_home",
    "subagent.pay_chosen_bill",
    "subagent.collect_debts",
    "subagent.lights_off",
    "memory.split_usual",
    "memory.budget_preference",
]


def recs(t, table):
    return t.fixtures.records.get(table, [])


def today(t) -> dt.date:
    return dt.date.fromisoformat(t.fixtures.clock[:10])


def where(t, crit_id):
    (c,) = [c for c in goal_criteria(t) if c.id == crit_id]
    return c.where


def cents(x: float, cur: str) -> int:
    """An amount in minor units, rounded half up as a person would."""
    unit = Decimal(10) ** CURRENCIES[cur].decimals
    return int((Decimal(str(x)) * unit).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def test_counts_and_distinct_goals():
    for name in TEMPLATES:
        tasks = select(f"template:{name}")
        assert len(tasks) >= 12, name
        assert len({(t.goal, t.fixtures.model_dump_json()) for t in tasks}) == len(tasks), name
        if not name.startswith("memory."):  # a memory goal stays vague on purpose: the memories differ
            assert len({t.goal for t in tasks}) * 4 >= len(tasks) * 3, name
        if name.startswith("skills."):
            assert all(t.goal.isascii() for t in tasks), name


def test_every_task_is_proven():
    tasks = [t for name in TEMPLATES if not name.startswith("memory.") for t in select(f"template:{name}")]
    proofs = prove_suite(tasks)
    assert {p.task_id: p.problems for p in proofs if not p.ok} == {}


def test_what_is_left_of_the_budget_is_the_limit_less_the_period_spending():
    for t in select("template:budget.set_and_check"):
        period = "week" if "a week" in t.goal else "month"
        cat = next(c for c in ("dining", "groceries", "transport", "entertainment", "health") if c in t.goal)
        cur = recs(t, "budget.settings")[0]["value"]
        limit = Decimal(re.search(r"\d+(?:\.\d\d)?", t.goal).group(0))  # the first amount named
        day = today(t)
        start = day - dt.timedelta(days=day.weekday()) if period == "week" else day.replace(day=1)
        end = (
            start + dt.timedelta(days=6)
            if period == "week"
            else (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
        )
        spent = sum(
            Decimal(str(e["amount"]))
            for e in recs(t, "budget.entries")
            if e["category"] == cat and e["currency"] == cur and start.isoformat() <= e["date"] <= end.isoformat()
        )
        (ans,) = [c for c in goal_criteria(t) if c.kind == "answer"]
        assert spent > 0, t.id
        assert Decimal(str(ans.value)) == limit - spent, t.id


def test_the_chosen_bill_is_the_one_the_goal_describes():
    for t in select("template:subagent.pay_chosen_bill"):
        unpaid = [b for b in recs(t, "wallet.bills") if b["status"] == "unpaid"]
        if re.search(r"\bdue (first|soonest|next|date)\b|comes due", t.goal):
            want = min(unpaid, key=lambda b: b["due"])
        elif re.search(r"biggest|largest|most|highest", t.goal):
            want = max(unpaid, key=lambda b: b["amount_due"])
        else:
            assert re.search(r"smallest|cheapest|least|lowest", t.goal), t.goal
            want = min(unpaid, key=lambda b: b["amount_due"])
        assert where(t, "updated:wallet.bills")["id"] == want["id"], t.id


def test_debt_requests_go_to_who_says_they_owe_and_for_their_amount():
    owe_me = re.compile(r"I (?:still )?owe you|I haven't paid you back")
    for t in select("template:subagent.collect_debts"):
        payees = {p["handle"]: p for p in recs(t, "wallet.payees")}
        expected = {}
        for m in recs(t, "messages.messages"):
            if m["direction"] == "in" and not m["read"] and owe_me.search(m["body"]):
                amount = re.search(r"(\d+(?:\.\d\d)?) [A-Z]{3}", m["body"]).group(1)
                expected[payees[m["number"]]["id"]] = float(amount)
        got = {
            c.where["payee_id"]: c.where["amount"]
            for c in goal_criteria(t)
            if c.id.startswith("created:wallet.requests")
        }
        assert got == expected and len(got) >= 2, t.id


def test_the_lights_to_switch_off_are_the_ones_on_outside_the_users_room():
    for t in select("template:subagent.lights_off"):
        rooms = {r["id"]: r["name"].lower() for r in recs(t, "home.rooms")}
        (here,) = [rid for rid, name in rooms.items() if f"the {name}" in t.goal]
        on = {d["id"] for d in recs(t, "home.devices") if d["kind"] == "light" and d["on"] and d["room_id"] != here}
        off = {c.where["id"] for c in goal_criteria(t) if c.id.startswith("updated:home.devices")}
        (count,) = [c for c in goal_criteria(t) if c.kind == "answer"]
        assert off == on and count.value == len(on) >= 2, t.id


def test_a_cancelled_request_is_the_pending_one_to_that_person_for_that_thing():
    for t in select("template:wallet.cancel_request"):
        payees = {p["id"]: p for p in recs(t, "wallet.payees")}
        hits = [
            r
            for r in recs(t, "wallet.requests")
            if r["direction"] == "out"
            and r["status"] == "pending"
            and payees[r["payee_id"]]["name"].split()[0] in t.goal
            and r["note"].lower() in t.goal.lower()
        ]
        assert len(hits) == 1, t.id
        assert where(t, "updated:wallet.requests") == {"id": hits[0]["id"], "status": "cancelled"}, t.id


def test_a_bill_due_within_a_week_is_paid_now_and_a_later_one_scheduled():
    kinds = {"paid": 0, "scheduled": 0}
    for t in select("template:skills.pay_bill_safely"):
        w = where(t, "updated:wallet.bills")
        bill = next(b for b in recs(t, "wallet.bills") if b["id"] == w["id"])
        days = (dt.date.fromisoformat(bill["due"]) - today(t)).days
        assert w["status"] == ("paid" if days <= 7 else "scheduled"), t.id
        kinds[w["status"]] += 1
        logged = where(t, "created:budget.entries")
        assert logged["date"] == (today(t).isoformat() if days <= 7 else bill["due"]), t.id
        assert logged["note"] == {"iequals": f"Bill: {bill['title']}"} and logged["category"] == "utilities"
    assert min(kinds.values()) >= 3, kinds


def test_a_shared_expense_logs_the_users_share_with_the_leftover_cents():
    shared = 0
    for t in select("template:skills.log_expense"):
        m = re.search(r"(\d+(?:\.\d\d)?) ([A-Z]{3})", t.goal)
        cur = m.group(2)
        total = cents(float(m.group(1)), cur)
        who = re.search(r"for ([A-Z][\w' -]*?) and me", t.goal)
        n = 1 + (len(who.group(1).split(" and ")) if who else 0)
        mine = total - (total // n) * (n - 1)
        logged = where(t, "created:budget.entries")
        assert cents(logged["amount"], cur) == mine, t.id
        shared += n > 1
    assert shared >= 4


def test_the_evening_scene_covers_the_whole_home_but_no_plug():
    for t in select("template:skills.evening_scene"):
        devices = recs(t, "home.devices")
        scene = [c for c in goal_criteria(t) if c.id.startswith("scene:")]
        named = {c.where["name"]["iequals"] for c in goal_criteria(t) if c.table == "home.scenes"}
        (room,) = [r["name"] for r in recs(t, "home.rooms") if f"the {r['name'].lower()}" in t.goal]
        assert named == {f"Evening - {room}"}, t.id
        assert len(scene) == sum(d["kind"] != "plug" for d in devices), t.id
        made = where(t, "created:home.scenes")
        assert made["actions"] == {"len": len(scene)}


def test_leaving_turns_the_heating_down_by_the_length_of_the_trip():
    for t in select("template:skills.leave_home"):
        (th,) = [d for d in recs(t, "home.devices") if d["kind"] == "thermostat"]
        overnight = re.search(r"weekend|tomorrow|days|overnight", t.goal) is not None
        celsius = 16 if overnight else 18
        want = celsius if th["unit"] == "C" else round(celsius * 9 / 5 + 32)
        heat = [c for c in goal_criteria(t) if c.id.endswith(":heat")]
        assert [c.where["target"] for c in heat] == [want], t.id
        on = {d["id"] for d in recs(t, "home.devices") if d["kind"] in ("light", "plug") and d["on"]}
        assert {c.where["id"] for c in goal_criteria(t) if c.where.get("on") is False} == on, t.id


def test_the_remembered_crowd_and_limit_are_the_newest():
    for t in select("template:memory.split_usual"):
        newest = max((m for m in t.fixtures.memory if "split dinners" in m.content), key=lambda m: m.created)
        names = re.search(r"split dinners with (.+)$", newest.content).group(1).split(" and ")
        payees = {p["id"]: p["name"] for p in recs(t, "wallet.payees")}
        asked = {payees[c.where["payee_id"]] for c in goal_criteria(t)}
        assert asked == set(names), t.id
    for t in select("template:memory.budget_preference"):
        newest = max((m for m in t.fixtures.memory if "eating out" in m.content), key=lambda m: m.created)
        amount, period = re.search(r"(\d+) [A-Z]{3} a (week|month)", newest.content).groups()
        crit = where(t, "created:budget.budgets")
        assert (crit["limit"], crit["period"], crit["category"]) == (float(amount), period, "dining"), t.id


@pytest.mark.parametrize("prefix", ["home.", "budget.", "wallet.", "skills.", "subagent.", "memory."])
def test_a_random_agent_succeeds_at_none(prefix):
    import statistics

    from agents.random_agent import RandomAgent
    from phoneenv.evaluation import run_episodes

    tasks = [t for name in TEMPLATES if name.startswith(prefix) for t in select(f"template:{name}")]
    results = run_episodes(RandomAgent(seed=0), tasks, env_kwargs={"memory": False})
    assert sum(r.success for r in results) == 0
    assert statistics.mean(r.progress for r in results) <= 0.05
