"""Memory templates over the wallet and home apps: what only the user's memories say.

| template | what memory says | verified by |
|---|---|---|
| ``memory.pay_rent`` | who the landlord is and the rent (an older, lower rent beside it) | the transfer: that payee, the current rent |
| ``memory.heating_preference`` | the temperature the user likes (maybe replacing an older one) | the thermostat's target, in its unit |
"""

from __future__ import annotations

from typing import Any

from phoneenv.contract import Category, Criterion, Domain
from phoneenv.tasks.templates import Draft, behavior, call, fails, passes, pick, replacing, state, template
from phoneenv.tasks.templates.home import fahrenheit, seed_home, temperature
from phoneenv.tasks.templates.memory import MemoryBook, ago
from phoneenv.tasks.templates.wallet import exempt, paid, secure, seed_wallet
from phoneenv.tasks.world import World

MEMORY = Category.MEMORY


def _searched(*words: str) -> Any:
    """Milestone: a ``memory.search`` whose query names one of ``words``."""
    return behavior(
        "required_call",
        "memory.search",
        id=f"searched:{words[0]}",
        arguments={"query": {"any": [{"icontains": w} for w in words]}},
    )


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
        milestones=[_searched("rent", "landlord"), criteria[0]],
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
    new_c, old_c = w.rng.sample([20.5, 21, 21.5, 22, 23], 2)
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
    (goal,) = pick(
        w,
        [
            "Set the heating the way I like it.",
            "Put the thermostat on my usual temperature.",
            "It's cold - set the thermostat to what I normally have.",
        ],
    )
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
        milestones=[_searched("thermostat", "temperature", "heat"), crit],
        plan=plan,
        perturb_exempt=["3.answer"],
        probes=[
            passes("searched with other words", replacing(plan, 0, call("memory.search", query="heating preference"))),
            fails(
                "the old preference", replacing(plan, 2, call("home.set_temperature", device_id=th["id"], target=old))
            ),
            fails("also dimmed a light", [*plan[:3], call("home.set_brightness", device_id="d_1", level=10), plan[3]]),
        ],
        fixtures=w.fixtures(memory=book.fixtures()),
    )
