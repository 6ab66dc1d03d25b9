"""Skills templates of the shop, restaurants and delivery apps: a return done the way skill
``return-an-item`` says (the default reason and the earliest pickup slot when the user names
neither, the steps in order, confirmed), a table booked for an occasion
(``book-a-table-for-an-event``), dinner ordered safely (``order-dinner-safely``: the vault, the
minimum order, a confirmation) and the usual reordered (``reorder-the-usual``)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from apps.delivery.templates import lower_minimum_order, ordered, past_order, seed_delivery, sign_in
from apps.restaurants import confirmation_code
from apps.restaurants.templates import day_words, seed_restaurants, table_time
from apps.shop.templates import add_order, item, return_plan, returned, seed_shop
from phoneenv.contract import Category, CompositeCriterion, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer,
    behavior,
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


# -- book a table for an event ----------------------------------------------------------------------

OCCASIONS = [
    ("birthday", "Birthday dinner", "{g}'s birthday"),
    ("farewell", "Farewell dinner", "{g}'s farewell"),
    ("anniversary", "Anniversary dinner", "our anniversary"),
    ("promotion", "Promotion dinner", "{g}'s promotion"),
]
EVENT_ASKS = [
    "Book {r} for {occ} on {day} at {hhmm} - it's {who}.",
    "Set up dinner at {r} for {occ}: {day}, {hhmm}, with {names} and me.",
    "We're celebrating {occ} at {r} on {day} at {hhmm}. Book it for me, {names}.",
]


@template(
    "skills.event_table",
    apps=["restaurants", "calendar", "contacts", "messages"],
    domain=Domain.FOOD,
    category=Category.SKILLS,
    difficulty=4,
    capabilities=["skill", "procedure", "book", "create", "send"],
    count=14,
    max_steps=30,
)
def event_table(w: World) -> Draft:
    """Template ``skills.event_table``: "Book Trattoria Sole for Ben's birthday on Friday at 19:30 -
    me, Ben and Cleo": skill ``book-a-table-for-an-event`` says what the user leaves out (count
    the user in, the occasion as the reservation's note, a two-hour calendar event at the
    restaurant's address, a text with the booking code to every guest)."""
    places = seed_restaurants(w)
    (key, title_word, occ_words), ask = pick(w, OCCASIONS, EVENT_ASKS)
    n_guests = w.rng.choice([1, 2])
    guests = w.rng.sample(w.contacts, n_guests)
    party = n_guests + 1
    r = places[w.rng.choice(sorted(places))]
    when = table_time(w, r, party)
    text = when.isoformat(timespec="minutes")
    end = (when + dt.timedelta(hours=2)).isoformat(timespec="minutes")
    code = confirmation_code(r["id"], text)
    hhmm = text[11:]
    firsts = [first_name(g) for g in guests]
    occ = occ_words.format(g=firsts[0])
    who = f"me and {firsts[0]}" if n_guests == 1 else f"me, {firsts[0]} and {firsts[1]}"
    goal = ask.format(r=r["name"], occ=occ, day=day_words(when.date()), hhmm=hhmm, names=" and ".join(firsts), who=who)
    title = f"{title_word} at {r['name']}"
    read, read_ms = read_skill("book-a-table-for-an-event")
    body = f"{day_words(when.date())} {hhmm} at {r['name']} for {occ}, booking code {code}."
    texts = [
        s
        for g in guests
        for s in (call("contacts.search", query=first_name(g)), call("messages.send", to=g["phone"], body=body))
    ]
    event = call("calendar.create_event", title=title, start=text, end=end, location=r["address"])
    plan = [
        read,
        call("restaurants.search", query=r["name"]),
        call("restaurants.availability", restaurant_id=r["id"], date=text[:10], party_size=party),
        call("restaurants.reserve", restaurant_id=r["id"], time=text, party_size=party, note=key),
        event,
        *texts,
        call("finish", answer=f"Booked {r['name']} at {hhmm}, code {code}; it's in your calendar and everyone knows."),
    ]
    reserve = 3
    criteria: list[Any] = [
        state(
            "restaurants.reservations",
            "created",
            restaurant_id=r["id"],
            time=text,
            party_size=party,
            status="confirmed",
            note={"icontains": key},
        ),
        state(
            "calendar.events",
            "created",
            title={"regex": rf"(?i)^(?=.*{re.escape(r['name'])})(?=.*{key})"},
            start=text,
            end=end,
            location={"icontains": r["address"].split(",")[0]},
        ),
    ]
    criteria += [
        suffixed(
            state(
                "messages.messages",
                "created",
                number={"person": g["id"]},
                direction="out",
                # the code; a day or time said must be the booking's
                body={"icontains": code, "consistent": {"time": hhmm, "date": text[:10]}},
            ),
            g["id"],
        )
        for g in guests
    ]
    send_at = [i for i, c in enumerate(plan) if c.name == "messages.send"]
    probes = [
        passes(
            "the title in other words",
            replacing(
                plan, 4, call("calendar.create_event", **{**event.arguments, "title": f"{r['name']}: {key} dinner"})
            ),
        ),
        passes("skipped the availability check", replacing(plan, 2)),
        fails(
            "the user not counted",
            replacing(
                plan,
                reserve,
                call("restaurants.reserve", restaurant_id=r["id"], time=text, party_size=n_guests, note=key),
            ),
        ),
        fails(
            "no occasion noted",
            replacing(plan, reserve, call("restaurants.reserve", restaurant_id=r["id"], time=text, party_size=party)),
        ),
        fails(
            "a one-hour event",
            replacing(
                plan,
                4,
                call(
                    "calendar.create_event",
                    **{**event.arguments, "end": (when + dt.timedelta(hours=1)).isoformat(timespec="minutes")},
                ),
            ),
        ),
        fails(
            "no place in the event", replacing(plan, 4, call("calendar.create_event", title=title, start=text, end=end))
        ),
        fails(
            "no code in the text",
            replacing(plan, send_at[-1], call("messages.send", to=guests[-1]["phone"], body=f"Dinner at {hhmm}!")),
        ),
        fails(
            "the wrong day and time in the text",
            replacing(
                plan,
                send_at[-1],
                call(
                    "messages.send",
                    to=guests[-1]["phone"],
                    body=f"{day_words(when.date() + dt.timedelta(days=1))} {(when + dt.timedelta(hours=1)):%H:%M} at "
                    f"{r['name']}, booking code {code}.",
                ),
            ),
        ),
        passes(
            "only the code",
            replacing(plan, send_at[-1], call("messages.send", to=guests[-1]["phone"], body=f"Booked! Code {code}.")),
        ),
    ]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[
            read_ms,
            state("restaurants.reservations", "created", restaurant_id=r["id"], time=text),
            state("calendar.events", "created", start=text),
        ],
        plan=plan,
        perturb_exempt=[
            "1.query",
            *(f"{i - 1}.query" for i in send_at),
            *(f"{i}.body" for i in send_at),
            f"{len(plan) - 1}.answer",
        ],
        probes=probes,
    )


# -- order dinner safely ------------------------------------------------------------------------------

SAFE_ASKS = [
    "Order {what} from {r} for dinner on the delivery app.",
    "Get me {what} delivered from {r} tonight.",
    "Dinner: {what} from {r}, please order it on the delivery app.",
]


@template(
    "skills.safe_dinner",
    apps=["delivery", "system"],
    domain=Domain.FOOD,
    category=Category.SKILLS,
    difficulty=3,
    capabilities=["skill", "login", "purchase", "confirm"],
    count=14,
    max_steps=25,
)
def safe_dinner(w: World) -> Draft:
    """Template ``skills.safe_dinner``: "Order a Margherita from Pizza Roma": skill
    ``order-dinner-safely`` says to sign in from the vault, check the minimum order (below it:
    order nothing, say how much is missing) and confirm the total with the user before paying."""
    dw = seed_delivery(w)
    ask, below = pick(w, SAFE_ASKS, [True, False])
    rest = w.rng.choice(sorted(dw.restaurants))
    r = dw.restaurants[rest]
    dish = w.rng.choice(sorted(dw.menu[rest]))
    it = dw.menu[rest][dish]
    qty = w.rng.choice([1, 2])
    sub = round(it["price"] * qty + 1e-9, 2)
    if below:
        gap = w.price(w.rng.choice([1.5, 2.5, 3.0, 4.0]))
        r["min_order"] = round(sub + gap + 1e-9, 2)
    else:
        r["min_order"] = w.price(5.0) if sub >= w.price(5.0) else 0.0
    total = round(sub + r["delivery_fee"] + 1e-9, 2)
    what = f"{'a' if qty == 1 else 'two'} {dish}"
    read, read_ms = read_skill("order-dinner-safely")
    head = [
        read,
        sign_in(w),
        call("delivery.search", query=rest),
        call("delivery.get_menu", restaurant_id=r["id"]),
        call("delivery.add_to_basket", item_id=it["id"], qty=qty),
        call("delivery.view_basket"),
    ]
    other = next(d for d in sorted(dw.menu[rest]) if d != dish)
    if below:
        gap = round(r["min_order"] - sub + 1e-9, 2)
        plan = [
            *head,
            call("finish", answer=f"{rest} has a minimum order: {gap} {w.currency} is missing. What should I add?"),
        ]
        criteria: list[Any] = [
            state("delivery.orders", "absent"),
            state("delivery.basket", "present", count=1, item_id=it["id"], qty=qty),
            # the minimum and the basket's subtotal may be said beside the shortfall
            answer(type="money", value=gap, currency=w.currency, context=[r["min_order"], sub]),
            # and no claim that the order went out
            CompositeCriterion(
                kind="not",
                id="no order claimed",
                criteria=[
                    answer(
                        id="claimed",
                        pattern=r"(?i)^\W*ordered\b|\b(?:i|i've|i have|we've)\s+(?:placed|ordered|sent)\b"
                        r"|\border\s+(?:is\s+|has\s+been\s+)?(?:placed|on its way)\b",
                    )
                ],
            ),
        ]
        probes = [
            passes(
                "the shortfall in other words",
                finishing(plan, f"Not ordered yet - the basket is {gap} {w.currency} below {rest}'s minimum."),
            ),
            passes(
                "the minimum and the subtotal beside",
                finishing(
                    plan,
                    f"{rest}'s minimum order is {r['min_order']:g} {w.currency} and your basket comes to {sub:g} "
                    f"{w.currency}, so {gap:g} {w.currency} is missing. What should I add?",
                ),
            ),
            fails(
                "an order claimed", finishing(plan, f"Ordered {what} ({gap} {w.currency} missing from the minimum).")
            ),
            fails(
                "padded the basket",
                [
                    *head,
                    call("delivery.add_to_basket", item_id=dw.menu[rest][other]["id"], qty=2),
                    call("user.confirm", question="Order?"),
                    call("delivery.place_order"),
                    plan[-1],
                ],
            ),
            fails("no amount given", finishing(plan, "The basket is below the minimum order.")),
        ]
        exempt = ["2.query"]
    else:
        plan = [
            *head,
            call("user.confirm", question=f"Order {what} from {rest} for {total} {w.currency}?"),
            call("delivery.place_order"),
            call("finish", answer=f"Ordered {what} from {rest} for {total} {w.currency}."),
        ]
        criteria = [*ordered(dw, rest, [(dish, qty)]), behavior("confirm_before", "delivery.place_order")]
        probes = [
            passes("skipped the basket check", replacing(plan, 5)),
            fails("paid without asking", replacing(plan, 6)),
            fails(
                "the wrong dish",
                replacing(plan, 4, call("delivery.add_to_basket", item_id=dw.menu[rest][other]["id"], qty=qty)),
            ),
        ]
        exempt = ["2.query", "6.question", f"{len(plan) - 1}.answer"]
    return Draft(
        goal=ask.format(what=what, r=rest),
        criteria=criteria,
        milestones=[read_ms, behavior("required_call", "system.sign_in", arguments={"app": "delivery"})],
        plan=plan,
        perturb_exempt=exempt,
        probes=probes,
    )


# -- reorder the usual ---------------------------------------------------------------------------------

USUAL_INTROS = ["", "Long day. ", "I'm starving. ", "No cooking tonight: "]
USUAL_ASKS = [
    "Reorder my usual from the delivery app.",
    "Get me the usual on the delivery app.",
    "Order the usual for me, please.",
]


@template(
    "skills.reorder_usual",
    apps=["delivery", "system"],
    domain=Domain.FOOD,
    category=Category.SKILLS,
    difficulty=3,
    capabilities=["skill", "login", "history", "purchase"],
    count=14,
    max_steps=25,
)
def reorder_usual(w: World) -> Draft:
    """Template ``skills.reorder_usual``: "Reorder my usual": skill ``reorder-the-usual`` says the
    usual is the dish most often delivered (not the latest order, not cancelled ones), with the
    quantity of its latest delivered order."""
    dw = seed_delivery(w)
    intro, ask = pick(w, USUAL_INTROS, USUAL_ASKS)
    ru, rl, rc = w.rng.sample(sorted(dw.restaurants), 3)
    u = w.rng.choice(sorted(dw.menu[ru]))
    latest = w.rng.choice(sorted(dw.menu[rl]))
    cancelled = w.rng.choice(sorted(dw.menu[rc]))
    n_u = w.rng.choice([2, 3])
    q_old = w.rng.choice([1, 2])
    q_last = 3 - q_old
    minutes = sorted(w.rng.sample(range(2000, 40000), n_u + n_u + 2), reverse=True)
    events: list[tuple[str, str, int, str]] = [(ru, u, q_old, "delivered") for _ in range(n_u - 1)]
    events += [(rc, cancelled, 1, "cancelled") for _ in range(n_u)]
    w.rng.shuffle(events)
    events += [(ru, u, q_last, "delivered"), (rl, latest, 1, "delivered")]
    for (rest, dish, q, status), m in zip(events, minutes[: len(events)], strict=True):
        lower_minimum_order(w, dw, rest, [(dish, q)])
        past_order(w, dw, rest, [(dish, q)], status, m)
    lower_minimum_order(w, dw, ru, [(u, q_last)])
    read, read_ms = read_skill("reorder-the-usual")
    rid = dw.restaurants[ru]["id"]
    plan = [
        read,
        sign_in(w),
        call("delivery.list_orders"),
        call("delivery.get_menu", restaurant_id=rid),
        call("delivery.add_to_basket", item_id=dw.menu[ru][u]["id"], qty=q_last),
        call("delivery.place_order"),
        call("finish", answer=f"Ordered your usual: {q_last} x {u} from {ru}."),
    ]

    def instead(rest: str, dish: str, q: int) -> list[ToolCall]:
        return [
            *plan[:3],
            call("delivery.get_menu", restaurant_id=dw.restaurants[rest]["id"]),
            call("delivery.add_to_basket", item_id=dw.menu[rest][dish]["id"], qty=q),
            *plan[5:],
        ]

    return Draft(
        goal=intro + ask,
        criteria=ordered(dw, ru, [(u, q_last)]),
        milestones=[read_ms, behavior("required_call", "system.sign_in", arguments={"app": "delivery"})],
        plan=plan,
        probes=[
            passes("searched the restaurant first", [*plan[:3], call("delivery.search", query=ru), *plan[3:]]),
            fails("the latest order", instead(rl, latest, 1)),
            fails("the cancelled favourite", instead(rc, cancelled, 1)),
            fails("the older quantity", instead(ru, u, q_old)),
        ],
    )
