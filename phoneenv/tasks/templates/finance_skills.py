"""Skills templates over the wallet, budget and home apps: the procedure lives only in a shipped
skill (``apps/<app>/skills/<name>/SKILL.md``), the goal only names the request.

| template | skill | the rule the goal does not state |
|---|---|---|
| ``skills.pay_bill_safely`` | ``pay-a-bill-safely`` | due within 7 days: pay now, else schedule for the due date; confirm first; log it as ``utilities`` with the note ``Bill: <title>`` |
| ``skills.log_expense`` | ``log-an-expense`` | the note ``<Shop> - <what>``; paid for others too: only the user's share (rounded down for the others, the user keeps the leftover cents) |
| ``skills.leave_home`` | ``leave-the-house`` | lights and plugs off, the door locked, the heating down to 18 °C (64 °F) for a short trip and 16 °C (61 °F) overnight or longer |
| ``skills.evening_scene`` | ``set-up-an-evening-scene`` | the scene ``Evening - <Room>``: that room's lights at the level, every other light off, the door locked, the heating at 20 °C (68 °F), no plugs; run at once |
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.home.templates import ROOMS, seed_home, temperature
from phoneenv.contract import Category, Criterion, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    behavior,
    call,
    fails,
    first_name,
    named,
    passes,
    pick,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.templates.finance_tools import scene_action
from phoneenv.tasks.templates.skills import read_skill
from phoneenv.tasks.templates.wallet import (
    BILL_KINDS,
    MERCHANTS,
    from_minor,
    paid,
    seed_budget,
    seed_wallet,
    to_minor,
)
from phoneenv.tasks.world import World

__all__ = ["COUNT", "PAY_NOW_DAYS", "bill_note", "evening_name", "expense_note", "my_share"]

SKILLS = Category.SKILLS
COUNT = 16
"""Tasks per template here (4 templates: 64 tasks)."""
PAY_NOW_DAYS = 7
"""Skill ``pay-a-bill-safely``: a bill due within this many days is paid now, a later one scheduled."""
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def bill_note(bill: dict[str, Any]) -> str:
    """The budget note of a paid bill (skill ``pay-a-bill-safely``): ``Bill: Electricity November``."""
    return f"Bill: {bill['title']}"


def expense_note(shop: str, what: str) -> str:
    """The note of an expense (skill ``log-an-expense``): ``FreshMart - weekly shop``."""
    return f"{shop} - {what.lower()}"


def my_share(total: float, people: int, currency: str) -> float:
    """The user's share of ``total`` among ``people`` (the user included): the others' shares
    are rounded down to the currency's minor unit, the user keeps the leftover (skills
    ``log-an-expense`` and ``split-a-bill``). Raises ``ValueError`` for fewer than one person."""
    if people < 1:
        raise ValueError(f"people must be at least 1, got {people}")
    minor = to_minor(total, currency)
    return from_minor(minor - (minor // people) * (people - 1), currency)


def evening_name(room: str) -> str:
    """The name of a room's evening scene (skill ``set-up-an-evening-scene``)."""
    return f"Evening - {room}"


def _at(plan: list[ToolCall], tool: str) -> int:
    return next(i for i, c in enumerate(plan) if c.name == tool)


def _exempt(plan: list[ToolCall]) -> list[str]:
    return [f"{len(plan) - 1}.answer", *(f"{i}.question" for i, c in enumerate(plan) if c.name == "user.confirm")]


# -- pay a bill safely ---------------------------------------------------------------------------

BILL_ASKS = [
    "Pay my {kind} bill.",
    "Take care of the {kind} bill for me.",
    "Can you pay the {kind} bill?",
    "Settle my {kind} bill from the wallet.",
    "The {kind} bill needs paying - handle it.",
    "Sort out this month's {kind} bill.",
]


@template(
    "skills.pay_bill_safely",
    apps=["wallet", "budget"],
    domain=Domain.FINANCE,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "pay", "schedule", "confirm", "create", "time"],
    count=COUNT,
    max_steps=20,
)
def pay_bill_safely(w: World) -> Draft:
    """Template ``skills.pay_bill_safely``, e.g. "Pay my internet bill.": paid now when due within
    7 days, else scheduled for its due date; confirmed first; logged in the budget app."""
    seeded = seed_wallet(w)
    seed_budget(w, n=6)
    main = seeded["main"]
    kind, ask = pick(w, [k for k, *_ in BILL_KINDS], BILL_ASKS)
    bill = seeded["bills"][kind]
    today = w.now.date()
    now = w.rng.random() < 0.5
    due = today + dt.timedelta(days=w.rng.randrange(1, PAY_NOW_DAYS + 1) if now else w.rng.randrange(9, 22))
    bill["due"] = due.isoformat()
    payee = next(p for p in seeded["companies"].values() if p["id"] == bill["payee_id"])
    amount, cur = bill["amount_due"], w.currency
    when = today if now else due
    read, read_ms = read_skill("pay-a-bill-safely")
    plan = [
        read,
        call("wallet.bills", status="unpaid"),
        call("user.confirm", question=f"Pay {payee['name']} {w.money(amount)} for {bill['title']} on {when}?"),
    ]
    if now:
        act = call("wallet.pay_bill", bill_id=bill["id"])
        wrong = call("wallet.schedule_bill", bill_id=bill["id"], date=bill["due"])
        criteria: list[Criterion] = [
            state("wallet.bills", "updated", id=bill["id"], status="paid", paid_on=today.isoformat()),
            *paid(w, payee, amount, main, "bill"),
            behavior("confirm_before", "wallet.pay_bill"),
        ]
    else:
        act = call("wallet.schedule_bill", bill_id=bill["id"], date=bill["due"])
        wrong = call("wallet.pay_bill", bill_id=bill["id"])
        criteria = [
            state("wallet.bills", "updated", id=bill["id"], status="scheduled", scheduled_for=bill["due"]),
            behavior("confirm_before", "wallet.schedule_bill"),
        ]
    logged = state(
        "budget.entries",
        "created",
        amount=amount,
        currency=cur,
        category="utilities",
        date=when.isoformat(),
        note={"iequals": bill_note(bill)},
    )
    criteria.append(logged)
    log = call("budget.add_expense", amount=amount, category="utilities", date=when.isoformat(), note=bill_note(bill))
    plan += [act, log, call("finish", answer=f"{bill['title']}: {'paid' if now else 'scheduled'} for {when}.")]
    k, lg = _at(plan, act.name), _at(plan, "budget.add_expense")
    return Draft(
        goal=ask.format(kind=kind),
        criteria=criteria,
        milestones=[read_ms, criteria[0], logged],
        plan=plan,
        perturb_exempt=_exempt(plan),
        probes=[
            passes("listed every bill", replacing(plan, 1, call("wallet.bills"))),
            passes(
                "note in capitals, currency named",
                replacing(
                    plan,
                    lg,
                    call(
                        "budget.add_expense",
                        amount=amount,
                        category="utilities",
                        date=when.isoformat(),
                        note=bill_note(bill).upper(),
                        currency=cur,
                    ),
                ),
            ),
            fails("scheduled one due soon" if now else "paid one due later now", replacing(plan, k, wrong)),
            fails("not logged in the budget", replacing(plan, lg)),
            fails(
                "logged under another category",
                replacing(
                    plan,
                    lg,
                    call(
                        "budget.add_expense",
                        amount=amount,
                        category="other",
                        date=when.isoformat(),
                        note=bill_note(bill),
                    ),
                ),
            ),
            fails("never asked", [c for c in plan if c.name != "user.confirm"]),
        ],
    )


# -- log an expense ------------------------------------------------------------------------------

ITEMS = {
    "dining": ["dinner", "lunch", "coffee and cake"],
    "groceries": ["weekly shop", "party snacks"],
    "transport": ["ride to the airport", "ride home"],
    "entertainment": ["movie tickets", "popcorn and tickets"],
    "health": ["cold medicine", "vitamins"],
}


@template(
    "skills.log_expense",
    apps=["budget"],
    domain=Domain.FINANCE,
    category=SKILLS,
    difficulty=2,
    capabilities=["skill", "create", "arithmetic", "format", "time"],
    count=COUNT,
)
def log_expense(w: World) -> Draft:
    """Template ``skills.log_expense``, e.g. "Log the 84.20 EUR I paid at Trattoria Sole yesterday
    for dinner for Ana and me - they'll pay me back.": the user's share, the skill's note."""
    seed_budget(w, n=8)
    (shop, category, _, lo, hi), ago = pick(w, MERCHANTS, [1, 0, 3])
    shared = w.rng.random() < 0.5
    what = w.rng.choice(ITEMS[category])
    cur = w.currency
    total = w.price(w.rng.randrange(lo, hi) * (2 if shared else 1) + w.rng.randrange(1, 100) / 100)
    others = w.rng.sample(w.contacts, w.rng.choice([1, 2])) if shared else []
    day = w.now.date() - dt.timedelta(days=ago)
    when = {0: "today", 1: "yesterday"}.get(ago, f"on {WEEKDAYS[day.weekday()]}")
    amount = my_share(total, len(others) + 1, cur)
    names = " and ".join(first_name(c) for c in others)
    if shared:
        goal = w.rng.choice(
            [
                f"Log the {w.money(total)} I paid at {shop} {when} for {what} for {names} and me - they'll pay me back.",
                f"I paid {w.money(total)} at {shop} {when} for {what} for {names} and me; they'll pay me back. "
                "Put it in my budget.",
            ]
        )
    else:
        goal = w.rng.choice(
            [
                f"Log the {w.money(total)} I paid at {shop} {when} for {what}.",
                f"I paid {w.money(total)} at {shop} {when} for {what}. Put it in my budget.",
            ]
        )
    note = expense_note(shop, what)
    read, read_ms = read_skill("log-an-expense")
    entry = state(
        "budget.entries",
        "created",
        amount=amount,
        currency=cur,
        category=category,
        date=day.isoformat(),
        note={"iequals": note},
    )
    args = {"amount": amount, "category": category, "date": day.isoformat(), "note": note}
    plan = [read, call("budget.add_expense", **args), call("finish", answer=f"Logged {w.money(amount)}.")]
    probes = [
        passes(
            "currency named, note in capitals",
            replacing(plan, 1, call("budget.add_expense", **{**args, "note": note.upper(), "currency": cur})),
        ),
        passes(
            "looked at the week's expenses first",
            [plan[0], call("budget.list_expenses", start=day.isoformat()), *plan[1:]],
        ),
        fails("only the shop as the note", replacing(plan, 1, call("budget.add_expense", **{**args, "note": shop}))),
        fails("logged twice", replacing(plan, 1, plan[1], plan[1])),
    ]
    if shared:
        probes.append(
            fails("the whole bill", replacing(plan, 1, call("budget.add_expense", **{**args, "amount": total})))
        )
        equal = from_minor(to_minor(total, cur) // (len(others) + 1), cur)
        if equal != amount:
            probes.append(
                fails(
                    "the rounded-down share",
                    replacing(plan, 1, call("budget.add_expense", **{**args, "amount": equal})),
                )
            )
    if ago:
        probes.append(
            fails(
                "logged for today",
                replacing(plan, 1, call("budget.add_expense", **{k: v for k, v in args.items() if k != "date"})),
            )
        )
    return Draft(
        goal=goal,
        criteria=[entry],
        milestones=[read_ms, entry],
        plan=plan,
        probes=probes,
    )


# -- set up an evening scene ---------------------------------------------------------------------

SCENE_ASKS = [
    "Set up an evening scene for the {room} at {level}% and start it.",
    "I'm spending the evening in the {room} - set up the evening scene with the lights at {level}% and run it.",
    "Evening scene for the {room}, lights at {level} percent, please - and turn it on.",
    "Get the evening scene going for the {room}, {level}% light.",
]


@template(
    "skills.evening_scene",
    apps=["home"],
    domain=Domain.DEVICE,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "create", "multi-entity", "format"],
    count=COUNT,
    max_steps=20,
)
def evening_scene(w: World) -> Draft:
    """Template ``skills.evening_scene``, e.g. "Set up an evening scene for the kitchen at 40% and
    start it.": the scene ``Evening - Kitchen`` with the whole home in it, run at once."""
    home = seed_home(w)
    room, level = pick(w, ROOMS, [20, 30, 40, 50])
    ask = SCENE_ASKS[(w.index // 4 + w.index) % len(SCENE_ASKS)]
    th, lock = home["thermostat"], home["lock"]
    target = temperature(w, 20)
    mine = home["lights"][room]
    rest = [d for r in ROOMS if r != room for d in home["lights"][r]]
    actions: list[dict[str, Any]] = [{"device_id": d["id"], "brightness": level} for d in mine]
    actions += [{"device_id": d["id"], "on": False} for d in rest]
    actions += [{"device_id": lock["id"], "locked": True}, {"device_id": th["id"], "target": target}]
    name = evening_name(room)
    read, read_ms = read_skill("set-up-an-evening-scene")
    plan = [
        read,
        call("home.list_devices"),
        call("home.list_rooms"),
        call("home.create_scene", name=name, actions=actions),
        call("home.run_scene", scene_id="sc_1"),
        call("finish", answer=f'"{name}" is set up and running.'),
    ]
    made = state("home.scenes", "created", name={"iequals": name}, actions={"len": len(actions)})
    criteria: list[Criterion] = [made]
    for d in mine:
        criteria.append(
            named(
                state("home.scenes", "present", name={"iequals": name}, actions=scene_action(d, brightness=level)),
                f"scene:{d['id']}",
            )
        )
        if not (d["on"] and d["brightness"] == level):
            criteria.append(suffixed(state("home.devices", "updated", id=d["id"], on=True, brightness=level), d["id"]))
    for d in rest:
        criteria.append(
            named(
                state("home.scenes", "present", name={"iequals": name}, actions=scene_action(d, on=False)),
                f"scene:{d['id']}",
            )
        )
        if d["on"]:
            criteria.append(suffixed(state("home.devices", "updated", id=d["id"], on=False), d["id"]))
    criteria.append(
        named(
            state("home.scenes", "present", name={"iequals": name}, actions=scene_action(lock, locked=True)),
            "scene:lock",
        )
    )
    criteria.append(
        named(
            state("home.scenes", "present", name={"iequals": name}, actions=scene_action(th, target=target)),
            "scene:heat",
        )
    )
    if th["target"] != target:
        criteria.append(suffixed(state("home.devices", "updated", id=th["id"], target=target), th["id"]))
    create = 3
    tv = home["plugs"][1]
    return Draft(
        goal=ask.format(room=room.lower(), level=level),
        criteria=criteria,
        milestones=[read_ms, made],
        plan=plan,
        probes=[
            passes(
                "actions in another order, name in capitals",
                replacing(plan, create, call("home.create_scene", name=name.upper(), actions=list(reversed(actions)))),
            ),
            passes("listed the scenes first", [plan[0], call("home.list_scenes"), *plan[1:]]),
            fails(
                "only the room's lights",
                replacing(plan, create, call("home.create_scene", name=name, actions=actions[: len(mine)])),
            ),
            fails(
                "named just Evening",
                replacing(plan, create, call("home.create_scene", name="Evening", actions=actions)),
            ),
            fails(
                "the TV switched off too",
                replacing(
                    plan,
                    create,
                    call("home.create_scene", name=name, actions=[*actions, {"device_id": tv["id"], "on": False}]),
                ),
            ),
            fails("saved but never run", replacing(plan, create + 1)),
        ],
    )


# -- leave the house -----------------------------------------------------------------------------

SHORT = ["to the shops for an hour", "out for a couple of hours", "to the gym", "out for the afternoon"]
LONG = ["away for the weekend", "out until tomorrow", "on a trip for a few days", "away overnight"]
LEAVE_ASKS = ["I'm going {trip} - get the house ready.", "Heading {trip}. Sort out the house for me."]


@template(
    "skills.leave_home",
    apps=["home"],
    domain=Domain.DEVICE,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "lookup", "update", "multi-entity"],
    count=COUNT,
    max_steps=25,
)
def leave_home(w: World) -> Draft:
    """Template ``skills.leave_home``, e.g. "I'm going away for the weekend - get the house
    ready.": lights and plugs off, the door locked, the heating down by the trip's length."""
    home = seed_home(w)
    trip, ask = pick(w, [*SHORT, *LONG], LEAVE_ASKS)
    away = trip in LONG
    th, lock = home["thermostat"], home["lock"]
    lock["locked"] = w.rng.random() < 0.5
    lights = [d for ds in home["lights"].values() for d in ds]
    if not any(d["on"] for d in lights):
        w.rng.choice(lights)["on"] = True
    target = temperature(w, 16 if away else 18)
    devices = [*lights, *home["plugs"]]
    on = [d for d in devices if d["on"]]
    read, read_ms = read_skill("leave-the-house")
    plan = [read, call("home.list_devices")]
    plan += [call("home.switch", device_id=d["id"], on=False) for d in on]
    criteria: list[Criterion] = [suffixed(state("home.devices", "updated", id=d["id"], on=False), d["id"]) for d in on]
    if not lock["locked"]:
        plan.append(call("home.lock", device_id=lock["id"]))
        criteria.append(suffixed(state("home.devices", "updated", id=lock["id"], locked=True), "lock"))
    heat = len(plan)
    if th["target"] != target:
        plan.append(call("home.set_temperature", device_id=th["id"], target=target))
        criteria.append(suffixed(state("home.devices", "updated", id=th["id"], target=target), "heat"))
    else:
        criteria.append(suffixed(state("home.devices", "present", id=th["id"], target=target), "heat"))
    plan.append(call("finish", answer="The house is ready."))
    other = temperature(w, 18 if away else 16)
    plugs_on = [d for d in home["plugs"] if d["on"]]
    probes = [
        passes("listed the rooms too", [plan[0], call("home.list_rooms"), *plan[1:]]),
        passes(
            "switched off in another order", [plan[0], plan[1], *reversed(plan[2 : 2 + len(on)]), *plan[2 + len(on) :]]
        ),
        fails(
            "the heating for the other kind of trip",
            [*plan[:heat], call("home.set_temperature", device_id=th["id"], target=other), plan[-1]],
        ),
        fails("the door left unlocked" if not lock["locked"] else "one device left on", replacing(plan, heat - 1)),
    ]
    if plugs_on:
        probes.append(
            fails("plugs left on", [c for c in plan if c.arguments.get("device_id") not in {d["id"] for d in plugs_on}])
        )
    return Draft(
        goal=ask.format(trip=trip),
        criteria=criteria,
        milestones=[read_ms, criteria[0]],
        plan=plan,
        probes=probes,
    )
