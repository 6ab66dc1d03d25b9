"""Sub-agent templates of the shop, restaurants and delivery apps: work that splits into parts a
sub-agent can do (see :mod:`phoneenv.tasks.templates.subagent` for how the split is verified).

- ``subagent.group_table``: sub-agents read what each friend texted about the evenings they can
  do; the planner books the table at the time all of them can make and the restaurant has free.
- ``subagent.returns_check``: a sub-agent finds which of the items the user wants to send back
  can still be returned; the planner returns those (steps in order, confirmed).
- ``subagent.cheaper_app``: sub-agents look up the same dish on the ``delivery`` app (sandbox,
  signed in from the vault) and on the simulated ``food`` app; the planner orders it on the
  cheaper one, delivery fee included (``backends=["hybrid"]``).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from apps.delivery.templates import ordered, seed_delivery, sign_in
from apps.restaurants.templates import DINNER, day_words, open_at, seed_restaurants
from apps.shop.templates import add_order, item, return_plan, returned, seed_shop
from phoneenv.contract import Category, CompositeCriterion, Domain, SimulatedCall, ToolCall
from phoneenv.frames import delegate_steps
from phoneenv.tasks.templates import (
    Draft,
    answer,
    answer_if_said,
    behavior,
    call,
    fails,
    finishing,
    first_name,
    named,
    passes,
    pick,
    replacing,
    state,
    template,
)
from phoneenv.tasks.templates.hybrid import RESTAURANTS
from phoneenv.tasks.world import World

AGENT_APP = "agent"
SUBAGENT = Category.SUBAGENT


def _delegated(tool: str) -> Any:
    return behavior("delegated", tool, id=f"delegated:{tool}")


def _not_itself(tool: str) -> Any:
    return behavior("forbidden_call", tool, depth=0, id=f"forbidden@0:{tool}")


def _add_sms(w: World, number: str, body: str, minutes_ago: int) -> None:
    w.table("messages.messages").append(
        {
            "id": w.next_id("messages.messages", "m_"),
            "number": number,
            "direction": "in",
            "body": body,
            "time": w.ts(minutes_ago),
            "read": False,
        }
    )


def _slot_words(t: dt.datetime) -> str:
    return f"{day_words(t.date())} at {t.strftime('%H:%M')}"


# -- a table when the whole group can make it ---------------------------------------------------------

CAN_LINES = [
    "Dinner sounds great! I could do {slots}.",
    "Hey, for dinner this week: {slots} work for me.",
    "I'm in. Possible for me: {slots}.",
]
TABLE_ASKS = [
    "{names} texted me which evenings they can do dinner. Book a table for all of us at {r} at a time everyone can make.",
    "Find a time that works for {names} - they each texted me when they can - and reserve {r} for the group then.",
    "Get a table at {r} for me, {names}, at one of the times all of them said they can do (see their texts).",
]


@template(
    "subagent.group_table",
    apps=["contacts", "messages", "restaurants", AGENT_APP],
    domain=Domain.FOOD,
    category=SUBAGENT,
    difficulty=4,
    capabilities=["delegate", "lookup", "multi-entity", "reasoning", "book"],
    count=16,
    max_steps=40,
)
def group_table(w: World) -> Draft:
    """Template ``subagent.group_table``: "Ana and Ben texted me which evenings they can do dinner.
    Book a table for all of us at Trattoria Sole at a time everyone can make.": sub-agents read
    each friend's texts; the planner checks the restaurant and books the one common time it has
    free (in half the worlds a second common time is fully booked there)."""
    places = seed_restaurants(w)
    (ask,) = pick(w, TABLE_ASKS)
    n = w.rng.choice([2, 3])
    friends = w.rng.sample(w.contacts, n)
    party = n + 1
    names = sorted(places)
    while True:
        r = places[w.rng.choice(names)]
        if party > r["max_party"]:
            continue
        slots = [
            dt.datetime.combine(w.now.date() + dt.timedelta(days=d), dt.time.fromisoformat(t))
            for d in range(1, 8)
            for t in DINNER
        ]
        slots = [s for s in slots if open_at(r, s)]
        if len(slots) >= 2 + 2 * n:
            break
    picked = w.rng.sample(slots, 2 + 2 * n)
    common, blocked, extras = picked[0], picked[1], picked[2:]
    full = set(r["full"])
    full.discard(common.isoformat(timespec="minutes"))
    for e in extras:
        full.discard(e.isoformat(timespec="minutes"))
    both_common = w.rng.random() < 0.5
    if both_common:
        full.add(blocked.isoformat(timespec="minutes"))
    r["full"] = sorted(full)
    plan: list[ToolCall] = []
    for i, f in enumerate(friends):
        own = [common, extras[2 * i]] + ([blocked] if both_common else [])
        own.sort()
        line = w.rng.choice(CAN_LINES).format(slots=" or ".join(_slot_words(t) for t in own))
        _add_sms(w, f["phone"], line, w.ago_within(w.rng, 30, 900))
        plan += delegate_steps(
            f"Read {f['name']}'s text messages and tell me which evenings they said they can do dinner.",
            ["contacts.search", "messages.read_thread"],
            [call("contacts.search", query=f["name"]), call("messages.read_thread", number=f["phone"])],
            f"{first_name(f)} can do {' or '.join(_slot_words(t) for t in own)}.",
        )
    text = common.isoformat(timespec="minutes")
    if both_common:
        plan.append(
            call("restaurants.availability", restaurant_id=r["id"], date=blocked.date().isoformat(), party_size=party)
        )
    plan += [
        call("restaurants.availability", restaurant_id=r["id"], date=text[:10], party_size=party),
        call("restaurants.reserve", restaurant_id=r["id"], time=text, party_size=party),
        call("finish", answer=f"Booked {r['name']} for {party} on {_slot_words(common)}."),
    ]
    firsts = [first_name(f) for f in friends]
    names_words = firsts[0] if n == 1 else ", ".join(firsts[:-1]) + " and " + firsts[-1]
    book = len(plan) - 2
    wrong = extras[0].isoformat(timespec="minutes")
    return Draft(
        goal=ask.format(names=names_words, r=r["name"]),
        criteria=[
            state(
                "restaurants.reservations",
                "created",
                restaurant_id=r["id"],
                time=text,
                party_size=party,
                status="confirmed",
            ),
            _delegated("messages.*"),
            _not_itself("messages.*"),
            # a day or time told is the booking's
            answer_if_said("date", common.date().isoformat()),
            answer_if_said("time", common.strftime("%H:%M")),
        ],
        milestones=[
            _delegated("messages.*"),
            state("restaurants.reservations", "created", restaurant_id=r["id"], time=text),
        ],
        plan=plan,
        probes=[
            passes("booked without checking", replacing(plan, book - 1)),
            fails(
                "another day told",
                finishing(plan, f"Booked {r['name']} for {party} on {_slot_words(common + dt.timedelta(days=1))}."),
            ),
            fails(
                "a time only one of them can do",
                replacing(plan, book, call("restaurants.reserve", restaurant_id=r["id"], time=wrong, party_size=party)),
            ),
            fails(
                "the user not counted",
                replacing(plan, book, call("restaurants.reserve", restaurant_id=r["id"], time=text, party_size=n)),
            ),
            fails(
                "read the texts itself",
                [
                    *(s for f in friends for s in (call("messages.read_thread", number=f["phone"]),)),
                    *plan[-3 if not both_common else -4 :],
                ],
            ),
        ],
    )


# -- which items can still go back --------------------------------------------------------------------

RETURN_REASONS = [
    ("changed my mind", "I changed my mind about them"),
    ("not as described", "none of them is what the listing described"),
    ("damaged", "they all arrived damaged"),
]
RETURN_ASKS = [
    "I want to send back the {items} - {why}. Return whichever of them can still go back, pickup {when}, "
    "and tell me which can't.",
    "Please return the {items} ({why}) if the shop still takes them back; have them picked up {when}. "
    "Let me know which one is too late.",
]


@template(
    "subagent.returns_check",
    apps=["shop", AGENT_APP],
    domain=Domain.SHOPPING,
    category=SUBAGENT,
    difficulty=4,
    capabilities=["delegate", "lookup", "filter", "procedure", "schedule"],
    count=16,
    max_steps=40,
)
def returns_check(w: World) -> Draft:
    """Template ``subagent.returns_check``: "Send back the rain jacket, the yoga mat and the desk
    lamp - return whichever can still go back, pickup tomorrow morning, and tell me which can't":
    a sub-agent reads the orders (the jacket also sits in an older order past the 30-day window;
    the lamp was delivered too long ago; the mat was delivered recently in half the worlds, else
    it has not arrived yet); the planner runs each possible return's steps in order."""
    sw = seed_shop(w)
    (reason, why), ask = pick(w, RETURN_REASONS, RETURN_ASKS)
    a, b, c = (sw.products[x] for x in w.rng.sample(sorted(sw.products), 3))
    size = {p["id"]: (w.rng.choice(p["sizes"]) if p["sizes"] else "") for p in (a, b, c)}
    b_ok = w.rng.random() < 0.5
    orders = [
        ([item(a, size[a["id"]])], "delivered", w.rng.randrange(45, 70)),
        ([item(c, size[c["id"]])], "delivered", w.rng.randrange(34, 44)),
        ([item(a, size[a["id"]])], "delivered", w.rng.randrange(3, 20)),
        ([item(b, size[b["id"]])], "delivered" if b_ok else "shipped", w.rng.randrange(3, 20) if b_ok else 1),
    ]
    orders.sort(key=lambda o: -o[2])
    made = {}
    for items, status, days in orders:
        rec = add_order(w, sw, items, status, days)
        made.setdefault(items[0]["product_id"], []).append(rec)
    old_a, new_a = made[a["id"]]
    ob = made[b["id"]][0]
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 4))
    hour, part = w.rng.choice([(9, "morning"), (13, "afternoon"), (17, "evening")])
    when = f"{'tomorrow' if day == w.now.date() + dt.timedelta(days=1) else 'on ' + day.strftime('%A')} {part}"
    slot = f"{day.isoformat()}T{hour:02d}:00"
    names = [p["name"].lower() for p in (a, b, c)]
    shown = w.rng.sample(names, 3)
    goal = ask.format(items=f"{shown[0]}, the {shown[1]} and the {shown[2]}", why=why, when=when)
    late = [c] if b_ok else [b, c]
    plan = delegate_steps(
        f"Look through my shop orders and tell me, for the {names[0]}, the {names[1]} and the {names[2]}, "
        "whether each can still be returned (delivered within the last 30 days) and from which order.",
        ["shop.list_orders", "shop.get_order"],
        [call("shop.list_orders")],
        f"The {names[0]} from {new_a['id']}"
        + (f" and the {names[1]} from {ob['id']}" if b_ok else "")
        + f" can go back; {' and '.join('the ' + p['name'].lower() for p in late)} cannot.",
    )
    rid_a = w.next_id("shop.returns", "r_")
    rid_b = f"r_{int(rid_a[2:]) + 1}"
    plan += return_plan(new_a, a, reason, slot, rid_a)
    if b_ok:
        plan += return_plan(ob, b, reason, slot, rid_b)
    late_words = " and ".join(p["name"].lower() for p in late)
    plan.append(call("finish", answer=f"Returns booked. Too late for the {late_words}."))
    criteria: list[Any] = [
        returned(new_a, a, reason, slot),
        _delegated("shop.list_orders"),
        _not_itself("shop.list_orders"),
        _not_itself("shop.get_order"),
    ]
    if b_ok:
        criteria.append(named(returned(ob, b, reason, slot), "created:shop.returns:second"))
    else:
        criteria.append(state("shop.returns", "absent", product_id=b["id"]))
    criteria.append(answer(type="text", value=[p["name"].lower() for p in late]))
    # ...and no clause says a late one can go back, or a returned one cannot
    going = [a, b] if b_ok else [a]
    criteria.append(
        CompositeCriterion(
            kind="not",
            id="no item misjudged",
            criteria=[answer(id="misjudged", pattern=misjudged([p["name"] for p in late], [p["name"] for p in going]))],
        )
    )
    first_b = 7
    probes = [
        passes(
            "the late one in other words",
            finishing(plan, f"The {late_words.title()}: too late to return; the rest is on its way back."),
        ),
        fails("the late one not named", finishing(plan, "Returns booked.")),
        fails("left unconfirmed", replacing(plan, 6)),
        fails(
            "another slot",
            replacing(
                plan,
                5,
                call(
                    "shop.choose_pickup",
                    return_id=rid_a,
                    slot=f"{day.isoformat()}T{(hour + 4) % 24 if hour < 17 else 9:02d}:00",
                ),
            ),
        ),
        fails(
            "the order past the window",
            replacing(plan, 3, call("shop.start_return", order_id=old_a["id"], product_id=a["id"], reason=reason)),
        ),
        fails("read the orders itself", [call("shop.list_orders"), *plan[3:]]),
    ]
    if b_ok:
        probes.append(fails("only the first returned", [*plan[:first_b], plan[-1]]))
    a_name, c_name = a["name"].lower(), c["name"].lower()
    probes += [
        fails(
            "a returned one called late",
            finishing(plan, f"Returns booked. Too late for the {late_words} and the {a_name}."),
        ),
        fails(
            "a late one called returnable", finishing(plan, f"Returns booked. The {c_name} can still be returned too.")
        ),
        passes("in contrast", finishing(plan, f"The {a_name} goes back, but the {late_words} can't.")),
    ]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[_delegated("shop.list_orders"), state("shop.returns", "created", order_id=new_a["id"])],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
        probes=probes,
    )


_CLAUSE = r"(?:^|[.;!?]\s*|\b(?:but|while|whereas)\b)"
_SPAN = r"(?:(?!\b(?:but|while|whereas)\b)[^.;!?])*?"  # within one clause
_NO = r"(?:n't|\bnot\b|\bcannot\b|\btoo late\b|\bno longer\b|\bpast\b|\bnone\b)"
_CAN_GO = (
    r"\b(?:can|could|will|is|are|may)\s+(?:still\s+|also\s+|all\s+)?(?:be\s+)?"
    r"(?:return|go(?:ing)?\s+back|sen[dt]\s+back|picked\s+up)"
)


def _name(name: str) -> str:
    return r"\b" + r"\W+".join(re.escape(x) for x in name.lower().split()) + r"\b"


def misjudged(late: list[str], going: list[str]) -> str:
    """A regex over a returns answer: a clause (a sentence, or a half of one split at "but",
    "while", "whereas") that names a ``late`` item and says it can go back without a negation, or
    names a ``going`` item beside a negation or "too late" ("Too late for the charger and the
    jacket" when the jacket went back; "All three can be returned")."""
    late_alt = "|".join(_name(x) for x in late)
    going_alt = "|".join(_name(x) for x in going)
    all_three = r"\ball\s+(?:three|of them)\b"
    said_ok = rf"{_CLAUSE}(?={_SPAN}(?:{late_alt}|{all_three}))(?={_SPAN}{_CAN_GO})(?!{_SPAN}{_NO})"
    said_late = rf"{_CLAUSE}(?={_SPAN}(?:{going_alt}))(?={_SPAN}{_NO})"
    return rf"(?i){said_ok}|{said_late}"


# -- the same dish on two delivery apps ------------------------------------------------------------------

HYBRID = ["hybrid"]
CHEAPER_ASKS = [
    "Is {what} from {r} cheaper on the delivery app or on the food app, delivery fee included? "
    "Order it on whichever is cheaper.",
    "Order {what} from {r} on whichever app costs less in total - the delivery app or the food app "
    "(count the delivery fee).",
]


def simulated_call(tool: str, result: Any, **arguments: Any) -> SimulatedCall:
    return SimulatedCall(tool=tool, arguments=arguments, result=result)


@template(
    "subagent.cheaper_app",
    apps=["delivery", "system", "food", AGENT_APP],
    domain=Domain.FOOD,
    category=SUBAGENT,
    difficulty=4,
    capabilities=["delegate", "login", "compare", "arithmetic", "purchase"],
    count=16,
    max_steps=40,
)
def cheaper_app(w: World) -> Draft:
    """Template ``subagent.cheaper_app``: "Is two Pho Bo from Saigon Kitchen cheaper on the
    delivery app or on the food app, delivery fee included? Order it on whichever is cheaper.":
    one sub-agent signs in to the delivery app (sandbox) and reads the price and fee, another
    reads them on the simulated food app; the planner orders on the cheaper one. In half the
    worlds the dish itself is dearer on the cheaper app, whose fee makes up for it."""
    dw = seed_delivery(w)
    ask, cheap, trap = pick(w, CHEAPER_ASKS, ["delivery", "food"], [False, True])
    rest = w.rng.choice(sorted(dw.restaurants))
    r = dw.restaurants[rest]
    dish = w.rng.choice(sorted(dw.menu[rest]))
    qty = w.rng.choice([1, 2])
    euro = next(p for n, _, p in next(m for m in RESTAURANTS if m[0] == rest)[2] if n == dish)
    # (dish price, fee) in euros on the cheaper and the dearer app
    cheap_terms, dear_terms = ((euro + 0.5, 0.0), (euro, 2.5)) if trap else ((euro - 1.0, 2.0), (euro, 2.0))
    d_terms, f_terms = (cheap_terms, dear_terms) if cheap == "delivery" else (dear_terms, cheap_terms)
    it = dw.menu[rest][dish]
    it["price"], r["delivery_fee"], r["min_order"] = w.price(d_terms[0]), w.price(d_terms[1]), 0.0
    f_price, f_fee = w.price(f_terms[0]), w.price(f_terms[1])
    # the food app's side, scripted
    frid = f"rst_{w.rng.randrange(10, 90)}"
    cuisine = r["cuisine"]
    frest = {
        "restaurant_id": frid,
        "name": rest,
        "cuisine": cuisine,
        "rating": r["rating"],
        "delivery_fee": f_fee,
        "min_order": 0.0,
        "eta_minutes": r["eta_minutes"],
        "open_now": True,
        "currency": w.currency,
    }
    w.table("food.restaurants").append({"id": frid, **frest})
    menu = next(m for m in RESTAURANTS if m[0] == rest)[2]
    item_ids = [f"itm_{100 + 7 * k + w.rng.randrange(7)}" for k in range(len(menu))]
    f_item = item_ids[[n for n, _, _ in menu].index(dish)]
    menu_result = {
        "restaurant_id": frid,
        "name": rest,
        "currency": w.currency,
        "menu": [
            {
                "item_id": iid,
                "name": n,
                "description": d,
                "category": "mains",
                "price": f_price if n == dish else w.price(p),
                "available": True,
            }
            for iid, (n, d, p) in zip(item_ids, menu, strict=True)
        ],
    }
    sub = round(f_price * qty + 1e-9, 2)
    placed = w.now + dt.timedelta(minutes=2)
    f_order = {
        "order_id": f"ord_{w.rng.randrange(200, 900)}",
        "restaurant_id": frid,
        "restaurant_name": rest,
        "items": [{"item_id": f_item, "name": dish, "qty": qty, "price": f_price}],
        "subtotal": sub,
        "delivery_fee": f_fee,
        "total": round(sub + f_fee + 1e-9, 2),
        "currency": w.currency,
        "status": "placed",
        "placed_at": placed.isoformat(timespec="seconds"),
        "eta": (placed + dt.timedelta(minutes=r["eta_minutes"])).isoformat(timespec="seconds"),
        "last_update": placed.isoformat(timespec="seconds"),
    }
    found = {"restaurants": [frest], "total": 1}
    f_items = [{"item_id": f_item, "qty": qty}]
    simulated = [
        simulated_call("food.search_restaurants", found, query=rest),
        simulated_call("food.search_restaurants", found, query=rest.lower()),
        simulated_call("food.search_restaurants", found, query=cuisine),
        simulated_call("food.get_menu", menu_result, restaurant_id=frid),
        simulated_call("food.place_order", f_order, restaurant_id=frid, items=f_items),
    ]
    d_total = round(it["price"] * qty + r["delivery_fee"] + 1e-9, 2)
    f_total = f_order["total"]
    plan = delegate_steps(
        f"Sign in to the delivery app and tell me what {dish} from {rest} costs there and the delivery fee.",
        ["system.sign_in", "delivery.search", "delivery.get_menu"],
        [sign_in(w), call("delivery.search", query=rest), call("delivery.get_menu", restaurant_id=r["id"])],
        f"{dish}: {it['price']} {w.currency}, delivery fee {r['delivery_fee']} {w.currency}.",
    )
    plan += delegate_steps(
        f"On the food app, find {rest} and tell me what {dish} costs there and the delivery fee.",
        ["food.search_restaurants", "food.get_menu"],
        [call("food.search_restaurants", query=rest), call("food.get_menu", restaurant_id=frid)],
        f"{dish}: {f_price} {w.currency}, delivery fee {f_fee} {w.currency}.",
    )
    on_delivery = [
        call("delivery.add_to_basket", item_id=it["id"], qty=qty),
        call("delivery.place_order"),
    ]
    on_food = [call("food.place_order", restaurant_id=frid, items=f_items)]
    mine, other = (on_delivery, on_food) if cheap == "delivery" else (on_food, on_delivery)
    total = d_total if cheap == "delivery" else f_total
    plan += [*mine, call("finish", answer=f"Ordered on the {cheap} app: {total} {w.currency} in total.")]
    made = (
        ordered(dw, rest, [(dish, qty)])[0]
        if cheap == "delivery"
        else state("food.orders", "created", restaurant_id=frid, total=f_total)
    )
    criteria = [
        made,
        behavior("forbidden_call", "food.place_order" if cheap == "delivery" else "delivery.place_order"),
        _delegated("delivery.get_menu"),
        _delegated("food.get_menu"),
        _not_itself("delivery.get_menu"),
        _not_itself("food.get_menu"),
    ]
    # the answer must not call the dearer app the cheaper one; asked which is cheaper, it names it
    dear = "food" if cheap == "delivery" else "delivery"
    wrong_app = (
        rf"\bcheaper (?:on|with|in|via|through) the {dear}\b|\b{dear} app (?:is|was|comes out) (?:the )?cheaper\b"
    )
    criteria.append(
        CompositeCriterion(kind="not", id="no_wrong_app", criteria=[answer(id="wrong_app", pattern=wrong_app)])
    )
    if ask == CHEAPER_ASKS[0]:
        criteria.append(answer(id="cheaper_app", contains=[f"{cheap} app"]))
    head = plan[: -len(mine) - 1]
    what = f"{'a' if qty == 1 else 'two'} {dish}"
    return Draft(
        goal=ask.format(what=what, r=rest),
        criteria=criteria,
        milestones=[_delegated("food.get_menu"), made],
        plan=plan,
        fixtures=w.fixtures(simulated=simulated),
        perturb_exempt=[f"{len(plan) - 1}.answer"],
        backends=HYBRID,
        probes=[
            passes(
                "found it by cuisine on the food app",
                replacing(plan, 6, call("food.search_restaurants", query=cuisine)),
            ),
            fails("the dearer app", [*head, *other, plan[-1]]),
            fails("ordered on both", [*head, *mine, *other, plan[-1]]),
            fails("read the menus itself", [sign_in(w), plan[3], plan[7], *mine, plan[-1]]),
            fails(
                "the dearer app called the cheaper one",
                finishing(plan, f"It's cheaper on the {dear} app, but I ordered on the {cheap} app."),
            ),
            passes(
                "the cheaper app named", finishing(plan, f"The {cheap} app is cheaper in total, so I ordered there.")
            ),
        ],
    )
