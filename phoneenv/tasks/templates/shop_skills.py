"""Shop skills templates: a return done the way skill ``return-an-item`` says (the default
reason and the earliest pickup slot when the user names neither, the steps in order, confirmed)."""

from __future__ import annotations

import datetime as dt

from phoneenv.contract import Category, Domain
from phoneenv.tasks.templates import Draft, call, fails, passes, replacing, state, template
from phoneenv.tasks.templates.shop import add_order, item, return_plan, returned, seed_shop
from phoneenv.tasks.templates.skills import read_skill
from phoneenv.tasks.world import World

ASKS = [
    "Send back the {p}, I don't like it after all.",
    "I want to return the {p} I bought. Sort it out, please.",
    "Return my {p} to the shop.",
    "Please get the {p} returned - I won't keep it.",
]


@template(
    "skills.return_item",
    apps=["shop"],
    domain=Domain.SHOPPING,
    category=Category.SKILLS,
    difficulty=3,
    capabilities=["skill", "procedure", "schedule"],
    count=14,
    max_steps=25,
)
def return_item(w: World) -> Draft:
    """Template ``skills.return_item``: "Send back the rain jacket": the skill's default reason
    (``changed my mind``) and earliest slot (tomorrow 09:00), the steps in order, confirmed."""
    sw = seed_shop(w)
    a, b = (sw.products[n] for n in w.rng.sample(sorted(sw.products), 2))
    older = add_order(w, sw, [item(a)], "delivered", w.rng.randrange(14, 25))
    order = add_order(w, sw, [item(a), item(b)], "delivered", w.rng.randrange(2, 8))
    reason = "changed my mind"
    earliest = f"{(w.now.date() + dt.timedelta(days=1)).isoformat()}T09:00"
    later = f"{(w.now.date() + dt.timedelta(days=2)).isoformat()}T13:00"
    rid = w.next_id("shop.returns", "r_")
    read, read_ms = read_skill("return-an-item")
    steps = return_plan(order, a, reason, earliest, rid)
    plan = [read, call("shop.list_orders", status="delivered"), *steps, call("finish", answer="Return booked.")]
    goal = ASKS[w.index % len(ASKS)].format(p=a["name"].lower())
    return Draft(
        goal=goal,
        criteria=[returned(order, a, reason, earliest)],
        milestones=[read_ms, state("shop.returns", "created", order_id=order["id"], product_id=a["id"])],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
        probes=[
            passes("listed all orders", replacing(plan, 1, call("shop.list_orders"))),
            fails("a later slot", replacing(plan, 4, call("shop.choose_pickup", return_id=rid, slot=later))),
            fails(
                "another reason",
                replacing(
                    plan, 2, call("shop.start_return", order_id=order["id"], product_id=a["id"], reason="damaged")
                ),
            ),
            fails("left unconfirmed", replacing(plan, 5)),
            fails(
                "the older order",
                replacing(plan, 2, call("shop.start_return", order_id=older["id"], product_id=a["id"], reason=reason)),
            ),
        ],
    )
