"""Tool templates for the wallet, budget and home tools the other templates leave untested:
scenes (create, run), budgets (set, check), correcting and deleting expenses, cancelling a request.

| template | what the user asks | verified by |
|---|---|---|
| ``home.make_scene`` | save a scene for a room (lights, a plug, maybe the heating) and start it | the scene's actions, each device after the run |
| ``budget.set_and_check`` | set a category's budget and say how much of it is left | the budget (created or changed), the typed money answer |
| ``budget.fix_expense`` | correct a logged amount or category, or remove a double entry | the entry updated (or one copy deleted), nothing else |
| ``wallet.cancel_request`` | cancel a pending request someone settled in cash, maybe tell them | the request cancelled, the other ones untouched, the text |
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.home.templates import ROOMS, fahrenheit, seed_home, temperature
from phoneenv.contract import Criterion, Domain, ToolCall
from phoneenv.tasks.templates import (
    CANCELLED,
    NOT_CANCELLED,
    Draft,
    answer,
    behavior,
    call,
    confirm_variant,
    fails,
    finishing,
    first_name,
    named,
    passes,
    pick,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.templates.wallet import (
    CATEGORY_SEEDS,
    MERCHANTS,
    OWED,
    from_minor,
    period_bounds,
    seed_budget,
    seed_wallet,
    to_minor,
)
from phoneenv.tasks.world import World

__all__ = ["scene_action", "spent_in"]

SCENE_NAMES = ["Movie night", "Reading", "Dinner time", "Relax", "Cosy evening", "Focus"]
DAY_NAMES = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def scene_action(device: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A ``where`` condition that ``home.scenes``' ``actions`` hold the action on ``device``
    with ``fields`` (the others None). A light given a brightness matches with ``on`` True or
    left out (running the scene switches it on either way)."""
    base = {"device_id": device["id"], "on": None, "brightness": None, "target": None, "locked": None}
    want = {**base, **fields}
    if fields.get("brightness") is not None and fields.get("on") is None:
        return {"any": [{"has": want}, {"has": {**want, "on": True}}]}
    return {"has": want}


def spent_in(entries: list[dict[str, Any]], category: str | None, start: dt.date, end: dt.date, cur: str) -> float:
    """What ``entries`` in ``cur`` spent in ``category`` (None: all) from ``start`` to ``end``."""
    lo, hi = start.isoformat(), end.isoformat()
    minor = sum(
        to_minor(e["amount"], cur)
        for e in entries
        if e["currency"] == cur and lo <= e["date"] <= hi and category in (None, e["category"])
    )
    return from_minor(minor, cur)


def _day_words(day: dt.date) -> str:
    return f"{DAY_NAMES[day.weekday()]} {day.day} {day.strftime('%B')}"


# -- home: scenes -------------------------------------------------------------------------------


@template(
    "home.make_scene",
    apps=["home"],
    domain=Domain.DEVICE,
    difficulty=3,
    capabilities=["lookup", "create", "multi-entity"],
    count=12,
    max_steps=20,
)
def make_scene(w: World) -> Draft:
    """Template ``home.make_scene``: "Make a \"Movie night\" scene - the living room lights at
    20% and the TV on - and start it now": one action per device of the room, run at once."""
    home = seed_home(w)
    name, room, level = pick(w, SCENE_NAMES, ["Living room", "Bedroom"], [10, 20, 30])
    lights = home["lights"][room]
    heat = w.rng.random() < 0.5
    celsius = w.rng.choice([22, 23])
    target = temperature(w, celsius)
    unit = "°F" if fahrenheit(w) else "°C"
    tv, coffee = home["plugs"][1], home["plugs"][0]
    plug, plug_on = (tv, True) if room == "Living room" else (coffee, False)
    wants = [f"the {room.lower()} lights at {level}%", f"the {plug['name'].lower()} {'on' if plug_on else 'off'}"]
    if heat:
        wants.append(f"the heating at {target:g}{unit}")
    said = ", ".join(wants[:-1]) + " and " + wants[-1]
    goal = w.rng.choice(
        [
            f'Make a "{name}" scene with {said}, and start it now.',
            f'Create a scene called "{name}": {said}. Then run it.',
            f'Save {said} as my "{name}" scene and turn it on.',
        ]
    )
    actions: list[dict[str, Any]] = [{"device_id": d["id"], "brightness": level} for d in lights]
    actions.append({"device_id": plug["id"], "on": plug_on})
    th = home["thermostat"]
    if heat:
        actions.append({"device_id": th["id"], "target": target})
    plan = [
        call("home.list_devices", room_id=home["rooms"][room]["id"]),
        call("home.list_devices", kind="plug"),
        call("home.create_scene", name=name, actions=actions),
        call("home.run_scene", scene_id="sc_1"),
        call("finish", answer=f'"{name}" is saved and running.'),
    ]
    criteria: list[Criterion] = [
        state("home.scenes", "created", name={"iequals": name}, actions={"len": len(actions)}),
        *(
            named(
                state("home.scenes", "present", name={"iequals": name}, actions=scene_action(d, brightness=level)),
                f"scene:{d['id']}",
            )
            for d in lights
        ),
        named(
            state("home.scenes", "present", name={"iequals": name}, actions=scene_action(plug, on=plug_on)),
            f"scene:{plug['id']}",
        ),
        *(suffixed(state("home.devices", "updated", id=d["id"], on=True, brightness=level), d["id"]) for d in lights),
    ]
    if plug["on"] != plug_on:
        criteria.append(suffixed(state("home.devices", "updated", id=plug["id"], on=plug_on), plug["id"]))
    if heat:
        criteria.append(
            named(
                state("home.scenes", "present", name={"iequals": name}, actions=scene_action(th, target=target)),
                f"scene:{th['id']}",
            )
        )
        criteria.append(suffixed(state("home.devices", "updated", id=th["id"], target=target), th["id"]))
    other = home["lights"][next(r for r in ROOMS if r != room)][0]
    create = 2
    direct = [call("home.set_brightness", device_id=d["id"], level=level) for d in lights]
    direct.append(call("home.switch", device_id=plug["id"], on=plug_on))
    probes = [
        passes(
            "actions in another order, lights switched on explicitly",
            replacing(
                plan,
                create,
                call(
                    "home.create_scene",
                    name=name.upper(),
                    actions=[{**a, "on": True} if "brightness" in a else a for a in reversed(actions)],
                ),
            ),
        ),
        passes("listed the rooms first", [call("home.list_rooms"), *plan]),
        fails("saved but never run", replacing(plan, create + 1)),
        fails(
            "another brightness",
            replacing(
                plan,
                create,
                call(
                    "home.create_scene",
                    name=name,
                    actions=[{**a, "brightness": level + 10} if "brightness" in a else a for a in actions],
                ),
            ),
        ),
        fails(
            "a light of another room in the scene",
            replacing(
                plan,
                create,
                call(
                    "home.create_scene", name=name, actions=[*actions, {"device_id": other["id"], "brightness": level}]
                ),
            ),
        ),
        fails("devices set by hand, no scene", [*plan[:create], *direct, plan[-1]]),
    ]
    if fahrenheit(w) and heat:
        probes.append(
            fails(
                "Celsius on a Fahrenheit thermostat",
                replacing(
                    plan,
                    create,
                    call(
                        "home.create_scene",
                        name=name,
                        actions=[{**a, "target": float(celsius)} if "target" in a else a for a in actions],
                    ),
                ),
            )
        )
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[criteria[0], criteria[len(lights) + 2]],
        plan=plan,
        probes=probes,
    )


# -- budget: budgets and corrections ------------------------------------------------------------

LIMITS = {"month": [150, 200, 250, 300, 400], "week": [40, 50, 60, 80, 100]}
"""Euro-sized budget limits a user names, per period."""


@template(
    "budget.set_and_check",
    apps=["budget"],
    domain=Domain.FINANCE,
    difficulty=3,
    capabilities=["create", "update", "arithmetic", "answer"],
    count=12,
)
def set_and_check(w: World) -> Draft:
    """Template ``budget.set_and_check``: "Set my dining budget to 200 a month and tell me how
    much of it I have left": a budget created (or the seeded one changed), the remaining money
    of the current period answered."""
    entries = seed_budget(w, n=16)
    category, period = pick(
        w, ["dining", "groceries", "transport", "entertainment", "health", "dining"], ["month", "week"]
    )
    cur = w.currency
    start, end = period_bounds(w.now.date(), period)
    spent = spent_in(entries, category, start, end, cur)
    if spent == 0:  # something spent this period, so the limit and what is left differ
        notes, lo, hi = CATEGORY_SEEDS[category]
        entries.append(
            {
                "id": f"e_{len(entries) + 1}",
                "amount": w.price(w.rng.randrange(lo, hi) + w.rng.randrange(100) / 100),
                "currency": cur,
                "category": category,
                "date": w.now.date().isoformat(),
                "note": w.rng.choice(notes),
            }
        )
        spent = spent_in(entries, category, start, end, cur)
    old = next((b for b in w.table("budget.budgets") if b["category"] == category), None)
    limit = w.price(w.rng.choice(LIMITS[period]))
    if old is not None and (old["limit"], old["period"]) == (limit, period):  # a change, not the same budget
        limit = w.price(limit / _factor(w) + 50)
    while to_minor(limit, cur) <= to_minor(spent, cur):
        limit = w.price(limit / _factor(w) + (100 if period == "month" else 25))
    left = from_minor(to_minor(limit, cur) - to_minor(spent, cur), cur)
    per = "a month" if period == "month" else "a week"
    goal = w.rng.choice(
        [
            f"Set my {category} budget to {w.money(limit)} {per} and tell me how much of it I have left this {period}.",
            f"I want to spend at most {w.money(limit, symbol=True)} {per} on {category}. Set that up - how much is left "
            f"for this {period}?",
            f"Budget {w.money(limit)} {per} for {category}, then tell me what remains of it this {period}.",
        ]
    )
    where = {"category": category, "limit": limit, "period": period, "currency": cur}
    made = (
        state("budget.budgets", "updated", id=old["id"], **where)
        if old is not None
        else state("budget.budgets", "created", **where)
    )
    plan = [
        call("budget.set_budget", category=category, limit=limit, period=period),
        call("budget.check_budgets"),
        call("finish", answer=f"{w.money(left)} left this {period}."),
    ]
    other_period = "week" if period == "month" else "month"
    other_cat = next(c for c in ("transport", "health", "entertainment") if c != category)
    return Draft(
        goal=goal,
        # the new limit and what was spent may be said beside what is left
        criteria=[made, answer(type="money", value=left, currency=cur, context=[limit, spent])],
        milestones=[made],
        plan=plan,
        perturb_exempt=["2.answer"],
        probes=[
            passes("listed the budgets first", [call("budget.list_budgets"), *plan]),
            passes(
                "the limit and the spending beside",
                finishing(
                    plan,
                    f"Set: {w.money(limit)} {per} for {category}. You've spent {w.money(spent)} so far, so "
                    f"{w.money(left)} is left.",
                ),
            ),
            fails("only the limit", finishing(plan, f"Your {category} budget is now {w.money(limit)} {per}.")),
            passes("the answer with the symbol", finishing(plan, f"You have {w.money(left, symbol=True)} left.")),
            passes("the amount without a currency", finishing(plan, f"You have {left:,.2f} left this {period}.")),
            passes(
                "the total read from the period's totals",
                replacing(plan, 1, call("budget.totals", period=period)),
            ),
            fails("the limit as the answer", finishing(plan, f"{w.money(limit)}.")),
            fails("what was spent as the answer", finishing(plan, f"{w.money(spent)} spent, so far.")),
            fails(
                f"per {other_period}",
                replacing(plan, 0, call("budget.set_budget", category=category, limit=limit, period=other_period)),
            ),
            fails(
                "another category",
                replacing(plan, 0, call("budget.set_budget", category=other_cat, limit=limit, period=period)),
            ),
        ],
    )


def _factor(w: World) -> float:
    """How many units of the world's currency a euro-sized amount becomes (1 for EUR)."""
    return w.price(100) / 100


@template(
    "budget.fix_expense",
    apps=["budget"],
    domain=Domain.FINANCE,
    difficulty=2,
    capabilities=["lookup", "update", "delete"],
    count=12,
)
def fix_expense(w: World) -> Draft:
    """Template ``budget.fix_expense``: "I logged FreshMart on Tuesday as 54.20 but it was
    45.20 - fix it", or the category, or "I logged the CityCab ride twice - remove one"."""
    entries = seed_budget(w, n=10)
    merchant, category, _, lo, hi = MERCHANTS[w.index % len(MERCHANTS)]
    (fix,) = pick(w, ["amount", "category", "double"])
    cur = w.currency
    right = w.price(w.rng.randrange(lo, hi) + w.rng.randrange(1, 100) / 100)
    day = (w.now - dt.timedelta(days=w.rng.randrange(1, 6))).date()
    wrong_amount = w.price(right / _factor(w) + w.rng.choice([9, 10, 20]))
    wrong_cat = "shopping" if category != "shopping" else "other"
    rec = {
        "id": f"e_{len(entries) + 1}",
        "amount": wrong_amount if fix == "amount" else right,
        "currency": cur,
        "category": wrong_cat if fix == "category" else category,
        "date": day.isoformat(),
        "note": merchant,
    }
    entries.append(rec)
    twin = None
    if fix == "double":
        # logged again the next day by mistake
        twin = {**rec, "id": f"e_{len(entries) + 1}", "date": (day + dt.timedelta(days=1)).isoformat()}
        entries.append(twin)
    when = _day_words(day)
    plan: list[ToolCall] = [call("budget.list_expenses", query=merchant)]
    criteria: list[Criterion]
    if fix == "amount":
        goal = w.rng.choice(
            [
                f"I logged {merchant} on {when} as {w.money(wrong_amount)}, but it was {w.money(right)}. Fix it.",
                f"The {merchant} expense from {when} should be {w.money(right, symbol=True)}, not "
                f"{w.money(wrong_amount, symbol=True)} - please correct it.",
            ]
        )
        plan.append(call("budget.update_expense", entry_id=rec["id"], amount=right))
        criteria = [state("budget.entries", "updated", id=rec["id"], amount=right, category=category, note=merchant)]
        wrong = call(
            "budget.update_expense",
            entry_id=rec["id"],
            amount=from_minor(to_minor(right, cur) + to_minor(w.price(1), cur), cur),
        )
    elif fix == "category":
        goal = w.rng.choice(
            [
                f"The {merchant} expense on {when} is filed under {wrong_cat}; it belongs in {category}.",
                f"Move my {merchant} expense from {when} to the {category} category.",
            ]
        )
        plan.append(call("budget.update_expense", entry_id=rec["id"], category=category))
        criteria = [state("budget.entries", "updated", id=rec["id"], category=category, amount=right)]
        wrong = call("budget.update_expense", entry_id=rec["id"], category="other")
    else:
        goal = w.rng.choice(
            [
                f"I logged {merchant} twice: it was on {when}, not the day after. Remove the extra entry.",
                f"There's a duplicate {merchant} expense the day after {when} in my budget - delete it, the "
                f"{when} one is right.",
            ]
        )
        assert twin is not None
        plan.append(call("budget.delete_expense", entry_id=twin["id"]))
        criteria = [
            state("budget.entries", "deleted", id=twin["id"]),
            suffixed(state("budget.entries", "present", id=rec["id"], date=day.isoformat(), amount=right), "kept"),
        ]
        if confirm_variant(w, 0.4):
            goal += " Check with me before deleting."
            plan.insert(1, call("user.confirm", question=f"Delete the {merchant} entry of {twin['date']}?"))
            criteria.append(behavior("confirm_before", "budget.delete_expense"))
        wrong = call("budget.delete_expense", entry_id=rec["id"])
    plan.append(call("finish", answer="Fixed."))
    act = len(plan) - 2
    other = entries[0]
    probes = [
        passes("listed the days since first", [call("budget.list_expenses", start=day.isoformat()), *plan]),
        fails("changed the wrong thing", replacing(plan, act, wrong)),
        fails(
            "a new entry instead of a fix",
            replacing(plan, act, call("budget.add_expense", amount=right, category=category, date=day.isoformat())),
        ),
    ]
    if fix == "double":
        assert twin is not None
        probes += [
            passes("listed every expense", [call("budget.list_expenses"), *plan]),
            fails(
                "deleted both",
                replacing(
                    plan,
                    act,
                    plan[act],
                    *[p for p in plan if p.name == "user.confirm"],
                    call("budget.delete_expense", entry_id=rec["id"]),
                ),
            ),
        ]
        if "user.confirm" in [p.name for p in plan]:
            probes.append(fails("never asked", [p for p in plan if p.name != "user.confirm"]))
    else:
        probes += [
            passes(
                "every field restated",
                replacing(
                    plan,
                    act,
                    call(
                        "budget.update_expense",
                        entry_id=rec["id"],
                        amount=right,
                        category=category,
                        date=day.isoformat(),
                        note=merchant,
                    ),
                ),
            ),
            fails(
                "fixed another entry",
                replacing(
                    plan,
                    act,
                    plan[act].model_copy(update={"arguments": {**plan[act].arguments, "entry_id": other["id"]}}),
                ),
            ),
        ]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[criteria[0]],
        plan=plan,
        perturb_exempt=[
            f"{len(plan) - 1}.answer",
            *(f"{i}.question" for i, p in enumerate(plan) if p.name == "user.confirm"),
        ],
        probes=probes,
    )


# -- wallet: cancel a request --------------------------------------------------------------------


@template(
    "wallet.cancel_request",
    apps=["wallet", "contacts", "messages"],
    domain=Domain.FINANCE,
    difficulty=3,
    capabilities=["lookup", "update", "send"],
    count=12,
)
def cancel_request(w: World) -> Draft:
    """Template ``wallet.cancel_request``: "Ben paid me back in cash for the pizza - cancel my
    request to him (and text him thanks)": of several pending requests, the one to that person
    for that thing is cancelled; another to the same person stays."""
    seeded = seed_wallet(w)
    a, b = w.rng.sample(list(seeded["people"].values()), 2)
    what, also, other_what = w.rng.sample(OWED, 3)
    reqs = w.table("wallet.requests")
    for payee, thing, ago in [(a, what, 3000), (b, other_what, 2000), (a, also, 900)]:
        reqs.append(
            {
                "id": f"rq_{len(reqs) + 1}",
                "direction": "out",
                "payee_id": payee["id"],
                "amount": w.price(w.rng.choice([12, 18.5, 24, 31.2, 45])),
                "currency": w.currency,
                "note": thing.removeprefix("the ").capitalize(),
                "status": "pending",
                "created": w.ts(ago + w.rng.randrange(0, 500)),
            }
        )
    target, sibling, others = reqs[0], reqs[2], reqs[1]
    c = w.contact_by_number(a["handle"])
    assert c is not None
    first = first_name(c)
    (goal, tell) = pick(
        w,
        [
            f"{first} paid me back in cash for {what}. Cancel my wallet request to them for it.",
            f"Withdraw the money request I sent {first} for {what} - it's settled.",
            f"Cancel my pending request to {first} for {what}; they already paid.",
        ],
        [False, True],
    )
    if tell:
        goal += " And text them that I cancelled it."
    plan = [
        call("wallet.requests", direction="out", status="pending"),
        call("wallet.cancel_request", request_id=target["id"]),
    ]
    criteria: list[Criterion] = [state("wallet.requests", "updated", id=target["id"], status="cancelled")]
    body = f"I've cancelled my request for {what} - thanks for paying me back!"
    if tell:
        plan += [call("contacts.search", query=first), call("messages.send", to=c["phone"], body=body)]
        criteria.append(
            state(
                "messages.messages",
                "created",
                number={"person": c["id"]},
                direction="out",
                body={"regex": CANCELLED, "not": {"regex": NOT_CANCELLED}},
            )
        )
    plan.append(call("finish", answer=f"Cancelled the request to {c['name']}."))
    probes = [
        passes("listed every request first", replacing(plan, 0, call("wallet.requests"))),
        fails("their other request", replacing(plan, 1, call("wallet.cancel_request", request_id=sibling["id"]))),
        fails("someone else's request", replacing(plan, 1, call("wallet.cancel_request", request_id=others["id"]))),
        fails(
            "both of theirs",
            replacing(plan, 1, plan[1], call("wallet.cancel_request", request_id=sibling["id"])),
        ),
    ]
    if tell:
        stranger = next(x for x in w.contacts if x["id"] != c["id"])
        probes += [
            passes(
                "other words",
                replacing(plan, 3, call("messages.send", to=c["phone"], body="Cancelled the request, cheers!")),
            ),
            passes(
                "a negation elsewhere",
                replacing(
                    plan,
                    3,
                    call("messages.send", to=c["phone"], body="Cancelled the request - you don't owe me anything now!"),
                ),
            ),
            fails(
                "says it could not be cancelled",
                replacing(plan, 3, call("messages.send", to=c["phone"], body="I couldn't cancel the request, sorry")),
            ),
            fails("texted someone else", replacing(plan, 3, call("messages.send", to=stranger["phone"], body=body))),
            fails("never texted", replacing(plan, 3)),
        ]
    else:
        probes.append(
            fails("texted although not asked", [*plan[:-1], call("messages.send", to=c["phone"], body=body), plan[-1]])
        )
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[criteria[0]],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer", *([f"{3}.body", "2.query"] if tell else [])],
        probes=probes,
    )
