"""Memory templates over the wallet and home apps: what only the user's memories say.

| template | what memory says | verified by |
|---|---|---|
| ``memory.pay_rent`` | who the landlord is and the rent (an older, lower rent beside it) | the transfer: that payee, the current rent |
| ``memory.heating_preference`` | the temperature the user likes (maybe replacing an older one) | the thermostat's target, in its unit |
| ``memory.split_usual`` | who the user usually splits dinners with (the crowd may have changed) | one request per person of the current crowd, the share |
| ``memory.budget_preference`` | the limit and period the user wants for eating out (maybe revised) | the dining budget: limit and period |
"""

from __future__ import annotations

from typing import Any

from apps.home.templates import fahrenheit, seed_home, temperature
from phoneenv.contract import Category, CompositeCriterion, Criterion, Domain
from phoneenv.tasks.templates import (
    Draft,
    answer,
    answer_if_said,
    call,
    fails,
    finishing,
    first_name,
    passes,
    pick,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.templates.memory import MemoryBook, ago, memory_searched
from phoneenv.tasks.templates.wallet import exempt, from_minor, paid, secure, seed_budget, seed_wallet, to_minor
from phoneenv.tasks.world import World

MEMORY = Category.MEMORY


@template(
    "memory.pay_rent",
    apps=["wallet"],
    domain=Domain.FINANCE,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "recency", "pay"],
    count=12,
)
def pay_rent(w: World) -> Draft:
    """Template ``memory.pay_rent``: "Pay this month's rent": the landlord (a payee among the
    user's people) and the rent come from memory; an older memory gives last year's rent."""
    seeded = seed_wallet(w)
    main = seeded["main"]
    landlord = w.rng.choice(list(seeded["people"].values()))
    euros = w.rng.randrange(60, 140) * 10
    rent, old_rent = w.price(euros), w.price(euros - w.rng.choice([20, 30, 50]))
    book = MemoryBook()
    old = book.add("fact", f"My rent is {w.money(old_rent)} a month, paid to {landlord['name']}", ago(w, 400))
    book.add(
        "fact",
        f"The rent went up: from this year I pay {landlord['name']} {w.money(rent)} a month",
        ago(w, w.rng.randrange(20, 200)),
        supersedes=old if w.rng.random() < 0.5 else None,
    )
    book.distract(w, 3, skip=("home",))
    (goal,) = pick(
        w, ["Pay this month's rent.", "Send my landlord the rent for this month.", "Time to pay the rent - do it."]
    )
    plan = [
        call("memory.search", query="rent landlord"),
        call("wallet.search_payees", query=landlord["name"].split()[0]),
        call("wallet.send_money", payee_id=landlord["id"], amount=rent, note="Rent"),
    ]
    criteria: list[Criterion] = paid(w, landlord, rent, main, "transfer")
    _, step_up = secure(w, plan, criteria, "wallet.send_money", f"Pay {w.money(rent)} rent to {landlord['name']}")
    plan.append(call("finish", answer=f"Paid {w.money(rent)} to {landlord['name']}."))
    send = len(plan) - 2
    other = next(p for p in seeded["people"].values() if p is not landlord)
    probes = [
        passes("no note", replacing(plan, send, call("wallet.send_money", payee_id=landlord["id"], amount=rent))),
        fails(
            "last year's rent",
            replacing(plan, send, call("wallet.send_money", payee_id=landlord["id"], amount=old_rent)),
        ),
        fails("someone else", replacing(plan, send, call("wallet.send_money", payee_id=other["id"], amount=rent))),
    ]
    fixtures: dict[str, Any] = {"memory": book.fixtures()}
    if step_up:
        fixtures["step_up"] = True
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[memory_searched("rent", "landlord"), criteria[0]],
        plan=plan,
        perturb_exempt=exempt(plan),
        probes=probes,
        fixtures=w.fixtures(**fixtures),
    )


@template(
    "memory.heating_preference",
    apps=["home"],
    domain=Domain.DEVICE,
    category=MEMORY,
    difficulty=2,
    capabilities=["recall", "preference", "update"],
    count=12,
)
def heating_preference(w: World) -> Draft:
    """Template ``memory.heating_preference``: "Set the heating the way I like it": the
    temperature comes from a preference (in the thermostat's unit), which may replace an older one."""
    home = seed_home(w)
    goals = [
        "Set the heating the way I like it.",
        "Put the thermostat on my usual temperature.",
        "It's cold - set the thermostat to what I normally have.",
    ]
    goal, new_c = pick(w, goals, [20.5, 21, 21.5, 22, 23])  # a shared goal, another temperature
    old_c = w.rng.choice([c for c in [20.5, 21, 21.5, 22, 23] if c != new_c])
    new, old = temperature(w, new_c), temperature(w, old_c)
    unit = "degrees Fahrenheit" if fahrenheit(w) else "degrees"
    book = MemoryBook()
    if w.rng.random() < 0.6:
        first = book.add("preference", f"I like the thermostat at {old:g} {unit}", ago(w, w.rng.randrange(200, 600)))
        book.add(
            "preference",
            f"Changed my mind: {new:g} {unit} is my ideal room temperature now",
            ago(w, w.rng.randrange(5, 150)),
            supersedes=first if w.rng.random() < 0.5 else None,
        )
    else:
        book.add("preference", f"I like the thermostat at {new:g} {unit}", ago(w, w.rng.randrange(20, 400)))
    book.distract(w, 5 - len(book.entries), skip=("home",))
    th = home["thermostat"]
    plan = [
        call("memory.search", query="thermostat temperature"),
        call("home.list_devices", kind="thermostat"),
        call("home.set_temperature", device_id=th["id"], target=new),
        call("finish", answer=f"Set to {new:g}."),
    ]
    crit = state("home.devices", "updated", id=th["id"], target=new)
    return Draft(
        goal=goal,
        criteria=[crit],
        milestones=[memory_searched("thermostat", "temperature", "heat"), crit],
        plan=plan,
        probes=[
            passes("searched with other words", replacing(plan, 0, call("memory.search", query="heating preference"))),
            fails(
                "the old preference", replacing(plan, 2, call("home.set_temperature", device_id=th["id"], target=old))
            ),
            fails("also dimmed a light", [*plan[:3], call("home.set_brightness", device_id="d_1", level=10), plan[3]]),
        ],
        fixtures=w.fixtures(memory=book.fixtures()),
    )


PLACES = ["Luigi's", "Sakura Garden", "The Golden Fork", "Casa Verde", "Blue Lantern", "Bistro Margot"]
NUMBERED = ("calls", "home", "clothes", "passport")
"""Distractor topics whose memories hold numbers (kept out where a number is the secret)."""


@template(
    "memory.split_usual",
    apps=["wallet"],
    domain=Domain.FINANCE,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "recency", "multi-entity", "request"],
    count=12,
    max_steps=20,
)
def split_usual(w: World) -> Draft:
    """Template ``memory.split_usual``: "Split tonight's 96 EUR dinner with the usual crowd":
    who the crowd is comes from memory; an older memory names a crowd with someone who has
    since moved away."""
    seeded = seed_wallet(w)
    people = list(seeded["people"].values())
    crowd = w.rng.sample(people, w.rng.choice([2, 3]))
    gone = w.rng.choice([p for p in people if p not in crowd])
    names = [p["name"] for p in crowd]
    book = MemoryBook()
    old_crowd = [*names[:-1], gone["name"]]
    old = book.add(
        "fact",
        f"I usually split dinners with {' and '.join(old_crowd)}",
        ago(w, w.rng.randrange(300, 500)),
    )
    book.add(
        "fact",
        f"{first_name(gone)} moved away; these days I split dinners with {' and '.join(names)}",
        ago(w, w.rng.randrange(10, 200)),
        supersedes=old if w.rng.random() < 0.5 else None,
    )
    book.distract(w, 3)
    n = len(crowd) + 1
    total = w.price(w.rng.randrange(25, 45) * n + w.rng.choice([0, 0.5, 0.8]))
    cur = w.currency
    share = from_minor(to_minor(total, cur) // n, cur)
    place, phrase = pick(
        w,
        PLACES,
        [
            "Split tonight's {m} dinner at {place} with the usual crowd.",
            "Dinner at {place} came to {m} - split it with the people I always eat out with.",
        ],
    )
    goal = phrase.format(m=w.money(total), place=place)
    ids = [p["id"] for p in crowd]
    plan = [
        call("memory.search", query="split dinners with"),
        *(call("wallet.search_payees", query=first_name(p)) for p in crowd),
        call("wallet.split_bill", total=total, payee_ids=ids, note=f"Dinner at {place}"),
        call("finish", answer=f"Asked {len(crowd)} people for {w.money(share)} each."),
    ]
    criteria = [
        suffixed(state("wallet.requests", "created", payee_id=p["id"], amount=share, direction="out"), p["id"])
        for p in crowd
    ]
    criteria.append(answer_if_said("money", share, also=[total], currency=w.currency))
    split = len(plan) - 2
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[memory_searched("split", "dinner"), criteria[0]],
        plan=plan,
        perturb_exempt=exempt(plan),
        probes=[
            fails(
                "another amount told", finishing(plan, f"Asked {len(crowd)} people for {w.money(share * 1.5)} each.")
            ),
            passes(
                "requested one by one",
                replacing(plan, split, *(call("wallet.request_money", payee_id=i, amount=share) for i in ids)),
            ),
            fails(
                "the old crowd",
                replacing(plan, split, call("wallet.split_bill", total=total, payee_ids=[*ids[:-1], gone["id"]])),
            ),
            fails(
                "everyone from both memories",
                replacing(plan, split, call("wallet.split_bill", total=total, payee_ids=[*ids, gone["id"]])),
            ),
            fails(
                "the user's share left out",
                replacing(plan, split, call("wallet.split_bill", total=total, payee_ids=ids, include_me=False)),
            ),
        ],
        fixtures=w.fixtures(memory=book.fixtures()),
    )


@template(
    "memory.budget_preference",
    apps=["budget"],
    domain=Domain.FINANCE,
    category=MEMORY,
    difficulty=2,
    capabilities=["recall", "preference", "recency", "create"],
    count=12,
)
def budget_preference(w: World) -> Draft:
    """Template ``memory.budget_preference``: "Set up my eating-out budget the way I said": the
    limit and the period (week or month) come from a preference, maybe revising an older one."""
    seed_budget(w, n=8)
    w.table("budget.budgets")[:] = [b for b in w.table("budget.budgets") if b["category"] != "dining"]
    period, old_period = pick(w, ["week", "month"], ["week", "month", "month"])
    euros = {"week": [40, 50, 60, 70, 80], "month": [180, 200, 250, 300]}
    new_euros = w.rng.choice(euros[period])
    old_euros = w.rng.choice([e for e in euros[old_period] if e != new_euros])
    limit, old_limit = float(round(w.price(new_euros))), float(round(w.price(old_euros)))  # whole units
    book = MemoryBook()
    revised = w.rng.random() < 0.7
    if revised:
        first = book.add(
            "preference",
            f"I want to spend at most {w.money(old_limit)} a {old_period} on eating out",
            ago(w, w.rng.randrange(250, 500)),
        )
        book.add(
            "preference",
            f"New rule for eating out: no more than {w.money(limit)} a {period}",
            ago(w, w.rng.randrange(5, 200)),
            supersedes=first if w.rng.random() < 0.5 else None,
        )
    else:
        book.add(
            "preference",
            f"I want to spend at most {w.money(limit)} a {period} on eating out",
            ago(w, w.rng.randrange(20, 400)),
        )
    book.distract(w, 5 - len(book.entries), skip=NUMBERED)
    (goal,) = pick(
        w,
        [
            "Set up my eating-out budget the way I told you.",
            "Put my usual limit for restaurants and takeaways into the budget app.",
            "Create the dining budget I wanted.",
        ],
    )
    plan = [
        call("memory.search", query="eating out budget"),
        call("budget.set_budget", category="dining", limit=limit, period=period),
        call("finish", answer=f"Dining budget: {w.money(limit)} a {period}."),
    ]
    crit = state("budget.budgets", "created", category="dining", limit=limit, period=period)
    probes = [
        passes("listed the budgets first", [plan[0], call("budget.list_budgets"), *plan[1:]]),
        fails(
            "another category",
            replacing(plan, 1, call("budget.set_budget", category="shopping", limit=limit, period=period)),
        ),
        fails(
            "the other period",
            replacing(
                plan,
                1,
                call(
                    "budget.set_budget", category="dining", limit=limit, period="month" if period == "week" else "week"
                ),
            ),
        ),
    ]
    if revised:
        probes.append(
            fails(
                "the old limit",
                replacing(plan, 1, call("budget.set_budget", category="dining", limit=old_limit, period=old_period)),
            )
        )
    probes.append(fails("another limit told", finishing(plan, f"Dining budget: {w.money(limit * 2)} a {period}.")))
    # a limit told is the one set, and a period told is its period
    wrong_period = "month" if period == "week" else "week"
    told = [
        answer_if_said("money", limit, currency=w.currency),
        CompositeCriterion(
            kind="not",
            id="answer_period",
            criteria=[
                answer(
                    id="other_period", pattern=rf"\b(?:a|per|each|every|this|/)\s*{wrong_period}\b|\b{wrong_period}ly\b"
                )
            ],
        ),
    ]
    probes.append(fails("another period told", finishing(plan, f"Dining budget: {w.money(limit)} a {wrong_period}.")))
    return Draft(
        goal=goal,
        criteria=[crit, *told],
        milestones=[memory_searched("eating out", "budget", "dining", "restaurant"), crit],
        plan=plan,
        probes=probes,
        fixtures=w.fixtures(memory=book.fixtures()),
    )
