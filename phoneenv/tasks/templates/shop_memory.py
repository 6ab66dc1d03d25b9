"""Memory templates of the shop, restaurants and delivery apps: the user's sizes, usual restaurant
and party size, diet and preferred pickup time live only in memory, each beside an outdated fact
on the same topic (linked by ``supersedes`` in half the worlds) that must lose to the newer one.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.delivery.templates import ordered, seed_delivery, sign_in
from apps.restaurants.templates import NUMBER_WORDS, day_words, open_at, seed_restaurants
from apps.shop.templates import add_order, in_stock, item, return_plan, returned, seed_shop
from phoneenv.contract import Category, CompositeCriterion, Domain
from phoneenv.tasks.templates import (
    Draft,
    answer,
    answer_if_said,
    answer_time_if_said,
    call,
    fails,
    finishing,
    passes,
    pick,
    replacing,
    state,
    template,
)
from phoneenv.tasks.templates.memory import MemoryBook, ago, memory_searched
from phoneenv.tasks.world import World

MEMORY = Category.MEMORY


def _old_new(w: World, book: MemoryBook, kind: str, old: str, new: str) -> None:
    """An outdated memory and the newer one replacing it (linked in half the worlds)."""
    old_e = book.add(kind, old, ago(w, w.rng.randrange(200, 600)))
    linked = w.rng.random() < 0.5
    book.add(kind, new, ago(w, w.rng.randrange(5, 150)), supersedes=old_e if linked else None)


def _draft(w: World, book: MemoryBook, **kw: Any) -> Draft:
    return Draft(fixtures=w.fixtures(memory=book.fixtures()), **kw)


# -- sizes ----------------------------------------------------------------------------------------

# product -> (what the user calls its size, the word a memory search for it would use)
SIZE_KINDS = {
    "Trail running shoes": ("shoe size", "shoe"),
    "Leather sneakers": ("shoe size", "shoe"),
    "Hiking boots": ("shoe size", "shoe"),
    "Rain jacket": ("clothes size", "clothes"),
    "Merino sweater": ("clothes size", "clothes"),
    "Cotton T-shirt": ("clothes size", "clothes"),
    "Denim jeans": ("jeans size", "jeans"),
}
SIZE_ASKS = [
    "Order the {p} in my size.",
    "Buy me the {p} from the shop, in my size please.",
    "Get the {p} in my size and have it sent home.",
]


@template(
    "memory.shop_my_size",
    apps=["shop"],
    domain=Domain.SHOPPING,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "recency", "purchase"],
    count=12,
)
def shop_my_size(w: World) -> Draft:
    """Template ``memory.shop_my_size``: "Order the hiking boots in my size": the size is only in
    memory, where an older size (the user's size before) was replaced by the current one."""
    sw = seed_shop(w)
    name, ask = pick(w, sorted(SIZE_KINDS), SIZE_ASKS)
    topic, kind = SIZE_KINDS[name]
    p = sw.products[name]
    old, new = w.rng.sample(p["sizes"], 2)
    in_stock(p, old, 2)
    in_stock(p, new, 2)
    book = MemoryBook()
    _old_new(
        w,
        book,
        "fact",
        f"My {topic} is {old}",
        w.rng.choice(
            [f"My {topic} is {new} now", f"Update: my {topic} is {new} these days", f"These days my {topic} is {new}"]
        ),
    )
    book.distract(w, 3)
    plan = [
        call("memory.search", query=topic),
        call("shop.search", query=p["name"]),
        call("shop.add_to_cart", product_id=p["id"], size=new),
        call("shop.checkout"),
        call("finish", answer=f"Ordered the {p['name'].lower()} in size {new}."),
    ]
    made = state(
        "shop.orders",
        "created",
        items={"has": item(p, new), "len": 1},
        address_id=sw.home["id"],
        status={"not": "cancelled"},
    )
    return _draft(
        w,
        book,
        goal=ask.format(p=p["name"].lower()),
        criteria=[made],
        milestones=[memory_searched("size", kind), state("shop.orders", "created", items={"has": item(p, new)})],
        plan=plan,
        probes=[
            passes("asked memory for sizes", replacing(plan, 0, call("memory.search", query="my size"))),
            passes("home address named", replacing(plan, 3, call("shop.checkout", address_id=sw.home["id"]))),
            fails("the old size", replacing(plan, 2, call("shop.add_to_cart", product_id=p["id"], size=old))),
            fails(
                "both sizes to be safe",
                [*plan[:3], call("shop.add_to_cart", product_id=p["id"], size=old), *plan[3:]],
            ),
            fails("left in the cart", replacing(plan, 3)),
        ],
    )


# -- usual restaurant and party size ------------------------------------------------------------------


@template(
    "memory.usual_table",
    apps=["restaurants"],
    domain=Domain.FOOD,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "recency", "book"],
    count=12,
)
def usual_table(w: World) -> Draft:
    """Template ``memory.usual_table``: "Book our usual place for Friday at 19:30, the usual
    number of us": the usual restaurant and the group's size each changed once in memory."""
    places = seed_restaurants(w)
    (phrasing,) = pick(w, [0, 1, 2])
    n_old, n_new = w.rng.sample([2, 3, 4, 5, 6], 2)
    while True:
        new_name, old_name = w.rng.sample(sorted(places), 2)
        new_r, old_r = places[new_name], places[old_name]
        day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 8))
        when = dt.datetime.combine(day, dt.time.fromisoformat(w.rng.choice(["19:00", "19:30", "20:00"])))
        text = when.isoformat(timespec="minutes")
        if all(
            open_at(r, when) and text not in r["full"] and max(n_old, n_new) <= r["max_party"] for r in (new_r, old_r)
        ):
            break
    book = MemoryBook()
    _old_new(
        w,
        book,
        "preference",
        f"Our usual restaurant is {old_name}",
        w.rng.choice([f"Our usual place is {new_name} now", f"We switched our regular restaurant to {new_name}"]),
    )
    _old_new(
        w,
        book,
        "fact",
        f"When we go out for dinner we are {n_old} people",
        w.rng.choice([f"Our dinner group is {n_new} people now", f"We're {n_new} at dinners these days"]),
    )
    book.distract(w, 3)
    hhmm = text[11:]
    goal = [
        f"Book a table at our usual restaurant on {day_words(day)} at {hhmm}, for the usual number of us.",
        f"Reserve our usual place for {day_words(day)}, {hhmm}, for the whole usual group.",
        f"Get us a table at the usual spot at {hhmm} on {day_words(day)} - the usual group size.",
    ][phrasing]
    plan = [
        call("memory.search", query="usual restaurant"),
        call("memory.search", query="dinner group people"),
        call("restaurants.search", query=new_name),
        call("restaurants.availability", restaurant_id=new_r["id"], date=text[:10], party_size=n_new),
        call("restaurants.reserve", restaurant_id=new_r["id"], time=text, party_size=n_new),
        call("finish", answer=f"Booked {new_name} at {hhmm} for {NUMBER_WORDS[n_new]}."),
    ]
    return _draft(
        w,
        book,
        goal=goal,
        criteria=[
            state(
                "restaurants.reservations",
                "created",
                restaurant_id=new_r["id"],
                time=text,
                party_size=n_new,
                status="confirmed",
            ),
            # a party size or time told is the booking's
            answer_if_said("number", n_new, unit="people|persons|guests|of us"),
            answer_if_said("time", hhmm),
        ],
        milestones=[
            memory_searched("usual", "restaurant", "place"),
            state("restaurants.reservations", "created", restaurant_id=new_r["id"], time=text),
        ],
        plan=plan,
        probes=[
            fails("the old party size told", finishing(plan, f"Booked {new_name} at {hhmm} for {n_old} people.")),
            passes("the party size in digits", finishing(plan, f"Booked {new_name} at {hhmm} for {n_new} people.")),
            passes("one memory search", [call("memory.search", query="usual"), *plan[2:]]),
            passes("skipped the availability check", replacing(plan, 3)),
            fails(
                "the old place",
                replacing(plan, 4, call("restaurants.reserve", restaurant_id=old_r["id"], time=text, party_size=n_new)),
            ),
            fails(
                "the old group size",
                replacing(plan, 4, call("restaurants.reserve", restaurant_id=new_r["id"], time=text, party_size=n_old)),
            ),
        ],
    )


# -- diet -------------------------------------------------------------------------------------------

# restaurant -> (the vegetarian dish, the meat dish)
DIET_PAIRS = {"Pizza Roma": ("Margherita", "Diavola"), "Curry House": ("Palak Paneer", "Chicken Tikka Masala")}
DIET_ASKS = [
    "Order me {q} from {r} on the delivery app - the {a} or the {b}, whichever fits my diet.",
    "Get {q} delivered from {r}: {a} or {b}, pick the one that matches how I eat.",
    "I want dinner from {r} on the delivery app, {q}: either {a} or {b}, depending on my diet.",
]


@template(
    "memory.diet_dinner",
    apps=["delivery", "system"],
    domain=Domain.FOOD,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "recency", "login", "purchase"],
    count=12,
)
def diet_dinner(w: World) -> Draft:
    """Template ``memory.diet_dinner``: "Order the Margherita or the Diavola, whichever fits my
    diet": memory says the user went vegetarian, after an older memory of a meat-heavy diet."""
    dw = seed_delivery(w)
    rest, ask, qty = pick(w, sorted(DIET_PAIRS), DIET_ASKS, [1, 2])
    veg, meat = DIET_PAIRS[rest]
    a, b = (veg, meat) if w.rng.random() < 0.5 else (meat, veg)
    r = dw.restaurants[rest]
    r["min_order"] = 0.0
    book = MemoryBook()
    _old_new(
        w,
        book,
        "preference",
        "I'm on a high-protein diet: meat with every dinner",
        w.rng.choice(["I've gone vegetarian - no meat or fish anymore", "Diet: vegetarian since this year, no meat"]),
    )
    book.distract(w, 3)
    veg_id, meat_id = dw.menu[rest][veg]["id"], dw.menu[rest][meat]["id"]
    plan = [
        call("memory.search", query="diet"),
        sign_in(w),
        call("delivery.search", query=rest),
        call("delivery.get_menu", restaurant_id=r["id"]),
        call("delivery.add_to_basket", item_id=veg_id, qty=qty),
        call("delivery.place_order"),
        call("finish", answer=f"Ordered the {veg}: it's vegetarian."),
    ]
    return _draft(
        w,
        book,
        goal=ask.format(q="one" if qty == 1 else "two", r=rest, a=a, b=b),
        criteria=[
            *ordered(dw, rest, [(veg, qty)]),
            # the answer does not tell the meat dish as ordered (naming it as skipped is fine)
            CompositeCriterion(kind="not", id="answer:not_the_meat_dish", criteria=[answer(contains=[meat])]),
        ],
        milestones=[memory_searched("diet", "eat", "vegetarian", "food")],
        plan=plan,
        probes=[
            passes("asked memory what I eat", replacing(plan, 0, call("memory.search", query="what do I eat"))),
            fails("the meat dish", replacing(plan, 4, call("delivery.add_to_basket", item_id=meat_id, qty=qty))),
            fails(
                "both dishes",
                [*plan[:5], call("delivery.add_to_basket", item_id=meat_id, qty=qty), *plan[5:]],
            ),
            fails("never ordered", replacing(plan, 5)),
            fails("told the meat dish as ordered", finishing(plan, f"Ordered the {meat} for you.")),
            fails("told a hedge", finishing(plan, f"Ordered the {veg} or the {meat}, whichever was there.")),
            passes(
                "told the meat dish as skipped",
                finishing(plan, f"I didn't order the {meat} because you've gone vegetarian."),
            ),
            passes("told the swap", finishing(plan, f"Ordered the {veg} instead of the {meat}.")),
        ],
    )


# -- preferred pickup time ------------------------------------------------------------------------------

PICKUP = {
    9: ("mornings", "I'm home every morning until noon - book courier pickups in the morning"),
    13: ("afternoons", "Courier pickups: the afternoon suits me, I work from home after lunch"),
    17: ("evenings", "I'm only home in the evenings now - courier pickups have to be in the evening"),
}
REASON_WORDS = {
    "too small": "it's too small",
    "too big": "it's too big",
    "damaged": "it arrived damaged",
    "wrong item": "they sent the wrong item",
}


@template(
    "memory.return_pickup_time",
    apps=["shop"],
    domain=Domain.SHOPPING,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "recency", "procedure", "schedule"],
    count=12,
)
def return_pickup_time(w: World) -> Draft:
    """Template ``memory.return_pickup_time``: "Return the yoga mat, it arrived damaged, and have it
    picked up tomorrow at my usual time": the pickup time of day is in memory, replacing an
    older one; the return's steps in order."""
    sw = seed_shop(w)
    reason, days = pick(w, sorted(REASON_WORDS), [1, 2, 3])
    old_h, new_h = w.rng.sample(sorted(PICKUP), 2)
    p = sw.products[w.rng.choice(sorted(sw.products))]
    size = w.rng.choice(p["sizes"]) if p["sizes"] else ""
    order = add_order(w, sw, [item(p, size)], "delivered", w.rng.randrange(3, 12))
    book = MemoryBook()
    old_e = book.add("preference", PICKUP[old_h][1], ago(w, w.rng.randrange(200, 600)))
    linked = w.rng.random() < 0.5
    book.add(
        "preference",
        f"Since I changed jobs: {PICKUP[new_h][1][0].lower()}{PICKUP[new_h][1][1:]}",
        ago(w, w.rng.randrange(5, 150)),
        supersedes=old_e if linked else None,
    )
    book.distract(w, 3)
    day = w.now.date() + dt.timedelta(days=days)
    when = "tomorrow" if days == 1 else f"on {day.strftime('%A')}"
    slot = f"{day.isoformat()}T{new_h:02d}:00"
    old_slot = f"{day.isoformat()}T{old_h:02d}:00"
    rid = w.next_id("shop.returns", "r_")
    goal = w.rng.choice(
        [
            f"Return the {p['name'].lower()}, {REASON_WORDS[reason]}. Have it picked up {when} at the time of day that suits me.",
            f"The {p['name'].lower()} goes back - {REASON_WORDS[reason]}. Book the pickup {when}, at my usual pickup time.",
        ]
    )
    plan = [
        call("memory.search", query="courier pickup"),
        call("shop.list_orders", status="delivered"),
        *return_plan(order, p, reason, slot, rid),
        call("finish", answer=f"Return confirmed, pickup {when} at {new_h:02d}:00."),
    ]
    return _draft(
        w,
        book,
        goal=goal,
        # a pickup time the answer gives is the one booked
        criteria=[returned(order, p, reason, slot), answer_time_if_said(f"{new_h:02d}:00")],
        milestones=[
            memory_searched("pickup", "courier", "time"),
            state("shop.returns", "created", order_id=order["id"]),
        ],
        plan=plan,
        probes=[
            passes("asked memory about pickups", replacing(plan, 0, call("memory.search", query="pickup time"))),
            passes("listed every order", replacing(plan, 1, call("shop.list_orders"))),
            fails("the old time of day", replacing(plan, 4, call("shop.choose_pickup", return_id=rid, slot=old_slot))),
            fails("the old time told", finishing(plan, f"Return confirmed, pickup {when} at {old_h:02d}:00.")),
            fails("left unconfirmed", replacing(plan, 5)),
        ],
    )
