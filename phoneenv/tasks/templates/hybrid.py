"""Hybrid templates: a goal that needs a sandbox app (messages, contacts, calendar, mail, notes)
and an LLM-simulated app (food, parcels, cinema) in one episode (``backends=["hybrid"]``).

The simulated side is scripted (``fixtures.simulated``): the calls a reasonable plan makes
return fixed, schema-valid results derived from the world's seed, so the tasks are proven without
a simulator model (an unscripted simulated call then fails as a ``device_error``); with a
simulator, calls off the script are simulated over the fact ledger. Writes of simulated apps land
in the ledger's tables (``food.orders``, ``parcels.parcels``, ``cinema.bookings``), which the
criteria read next to the sandbox's tables.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from apps.clock.templates import time_pattern
from phoneenv.contract import CompositeCriterion, Domain, SimulatedCall, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer,
    answer_time_if_said,
    behavior,
    call,
    fails,
    finishing,
    first_name,
    named,
    namesake,
    national,
    passes,
    pick,
    replacing,
    state,
    template,
)
from phoneenv.tasks.world import World

HYBRID = ["hybrid"]

RESTAURANTS: list[tuple[str, str, list[tuple[str, str, float]]]] = [
    ("Pizza Roma", "pizza", [
        ("Margherita", "Tomato, mozzarella, basil", 8.5),
        ("Diavola", "Spicy salami, chili", 10.0),
        ("Quattro Formaggi", "Four cheeses", 11.0),
        ("Tiramisu", "Coffee, mascarpone", 5.5),
    ]),
    ("Saigon Kitchen", "vietnamese", [
        ("Pho Bo", "Beef noodle soup", 12.5),
        ("Summer Rolls", "Rice paper, shrimp, herbs", 6.0),
        ("Bun Cha", "Grilled pork, noodles", 11.5),
        ("Iced Coffee", "With condensed milk", 3.5),
    ]),
    ("Sushi Yama", "sushi", [
        ("Salmon Maki", "8 pieces", 7.0),
        ("Dragon Roll", "Eel, avocado, cucumber", 13.5),
        ("Miso Soup", "Tofu, wakame", 3.0),
        ("Chirashi Bowl", "Mixed sashimi on rice", 16.0),
    ]),
    ("Green Bowl", "vegan", [
        ("Buddha Bowl", "Quinoa, hummus, roast veg", 11.0),
        ("Falafel Wrap", "Tahini, pickles", 8.0),
        ("Lentil Soup", "Red lentils, lemon", 6.5),
        ("Carrot Cake", "Vegan frosting", 4.5),
    ]),
    ("Curry House", "indian", [
        ("Chicken Tikka Masala", "With basmati rice", 13.0),
        ("Palak Paneer", "Spinach, cottage cheese", 11.5),
        ("Garlic Naan", "From the tandoor", 3.5),
        ("Mango Lassi", "Yoghurt drink", 4.0),
    ]),
]  # fmt: skip
SHOPS = [
    ("Northwind Books", "northwindbooks.com", "2 paperback books"),
    ("Kitchen Corner", "kitchencorner.com", "cast-iron pan"),
    ("Trailhead Outdoor", "trailhead-outdoor.com", "hiking boots"),
    ("PixelPeak Electronics", "pixelpeak.com", "USB-C monitor"),
    ("Green Thumb Garden", "greenthumb.com", "seed starter kit"),
    ("Loom & Thread", "loomandthread.com", "wool blanket"),
]
CARRIERS = ["DHL", "UPS", "Hermes", "DPD"]
WINDOWS = {"morning": ("08:00", "12:00"), "afternoon": ("12:00", "17:00"), "evening": ("17:00", "21:00")}
MOVIES = [
    ("The Last Lighthouse", "drama", 118, "FSK 12", "A keeper's final winter on a storm-battered island."),
    ("Orbit of Glass", "sci-fi", 134, "FSK 12", "A repair crew finds something alive on a derelict station."),
    ("Paper Tigers", "comedy", 97, "FSK 6", "Three retired origami champions plan one last heist."),
    ("Salt and Silver", "thriller", 112, "FSK 16", "A fishmonger stumbles into a smuggling ring."),
    ("A Quiet Harbour", "romance", 105, "FSK 0", "Two ferry captains keep missing each other."),
    ("Northern Lights Express", "family", 92, "FSK 0", "A night train to the Arctic and a lost reindeer."),
]
CINEMAS = ["Kino Central", "Astor Filmpalast", "Odeon Riverside", "Cinema Paradiso"]
NUMBER_WORDS = {1: "a", 2: "two", 3: "three"}


# -- helpers ------------------------------------------------------------------------------------


def day_words(day: dt.date) -> str:
    """``Saturday 5 December``."""
    return f"{day.strftime('%A')} {day.day} {day.strftime('%B')}"


def iso_stamp(t: dt.datetime) -> str:
    return t.isoformat(timespec="seconds")


def _num(x: float) -> str:
    """An amount as its shortest text, a substring of every usual rendering: 24.0 → "24",
    23.9 → "23.9" (in "23.90"), 23.45 → "23.45"."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def round_money(x: float) -> float:
    return round(x + 1e-9, 2)


def _sms_to(c: dict[str, Any], **body: Any) -> Any:
    """A text sent to contact ``c`` (by identity: any format of the number) whose body meets ``body``."""
    where: dict[str, Any] = {"number": {"person": c["id"]}, "direction": "out"}
    if body:
        where["body"] = body
    return state("messages.messages", "created", **where)


def _window_pattern(start: str, end: str) -> str:
    """A regex for a time window's start ``start`` in a text, 24-hour (``17:00``) or 12-hour
    (``5 pm``), also with one am/pm after the window's end ("between 5 and 9 pm", "5-9pm", "8 to
    12 pm" for 08:00-12:00)."""
    h, m = (int(x) for x in start.split(":"))
    eh, em = (int(x) for x in end.split(":"))
    mm = f"(?::{m:02d})" if m else "(?::00)?"
    emm = f"(?::{em:02d})" if em else "(?::00)?"
    span = (
        rf"(?<![\d:.])0?{h % 12 or 12}{mm}\s*(?:-|–|to|and)\s*0?{eh % 12 or 12}{emm}\s*{'a' if eh < 12 else 'p'}\.?m\b"
    )
    return rf"{time_pattern(h, m)}|{span}"


def _h12(hhmm: str) -> str:
    """``"17:00"`` in 12-hour form: ``"5:00 pm"``."""
    h = int(hhmm[:2])
    return f"{h % 12 or 12}:{hhmm[3:]} {'am' if h < 12 else 'pm'}"


def _amount_pattern(x: float) -> str:
    """A regex for the amount ``x`` in a text: ``12.5``, ``12.50`` or ``12,50``; ``24``, ``24.00``."""
    whole, cents = f"{x:.2f}".split(".")
    if cents == "00":
        return rf"(?<![\d.,]){whole}(?:[.,]00?)?(?![.,]?\d)"
    tail = cents if cents[1] != "0" else f"{cents[0]}0?"
    return rf"(?<![\d.,]){whole}[.,]{tail}(?!\d)"


def _lookup(c: dict[str, Any]) -> Any:
    """Milestone: the contact looked up by a name that finds ``c``."""
    keys = [first_name(c), c["name"].split()[-1]]
    return behavior(
        "required_call",
        "contacts.search",
        id=f"looked up {c['name']}",
        arguments={"query": {"any": [{"icontains": k} for k in keys]}},
    )


def _texting(plan: list[ToolCall], to: str | None = None, body: str | None = None) -> list[ToolCall]:
    """``plan`` with its ``messages.send`` step sent to ``to`` and/or saying ``body``."""
    i = next(k for k, c in enumerate(plan) if c.name == "messages.send")
    args = {**plan[i].arguments, **({"to": to} if to else {}), **({"body": body} if body else {})}
    return replacing(plan, i, call("messages.send", **args))


def spaced_ids(w: World, prefix: str, n: int, lo: int, hi: int) -> list[str]:
    """``n`` distinct, non-consecutive ids ``<prefix><k>`` (so an id moved by one names nothing)."""
    picked: list[int] = []
    while len(picked) < n:
        k = w.rng.randrange(lo, hi)
        if all(abs(k - p) > 1 for p in picked):
            picked.append(k)
    return [f"{prefix}{k}" for k in picked]


def simulated_call(tool: str, result: Any, **arguments: Any) -> SimulatedCall:
    return SimulatedCall(tool=tool, arguments=arguments, result=result)


def restaurant_record(w: World, rid: str, name: str, cuisine: str) -> dict[str, Any]:
    return {
        "id": rid,
        "restaurant_id": rid,
        "name": name,
        "cuisine": cuisine,
        "rating": w.rng.choice([4.2, 4.4, 4.5, 4.6, 4.8]),
        "delivery_fee": w.price(w.rng.choice([0.0, 1.5, 2.0, 2.5])),
        "min_order": w.price(w.rng.choice([10.0, 12.0, 15.0])),
        "eta_minutes": w.rng.choice([25, 30, 35, 40]),
        "open_now": True,
        "currency": w.currency,
    }


def as_listing(rec: dict[str, Any]) -> dict[str, Any]:
    """A seeded record as a search result (the schema's fields only, no ``id``)."""
    return {k: v for k, v in rec.items() if k != "id"}


def _tracking(w: World, carrier: str) -> str:
    if carrier == "DHL":
        return f"JJD00{w.rng.randrange(10**12, 10**13)}"
    if carrier == "UPS":
        return f"1Z{w.rng.choice(['999AA1', '4E6W70', '7X2Y11'])}{w.rng.randrange(10**9, 10**10)}"
    if carrier == "Hermes":
        return f"H10{w.rng.randrange(10**14, 10**15)}"
    return f"0{w.rng.randrange(10**12, 10**13)}D"


def parcel_record(w: World, shop: tuple[str, str, str], carrier: str, delivery: dt.date) -> dict[str, Any]:
    """A parcel record in transit (the tracker's list fields, plus ``id`` for the sandbox)."""
    tid = _tracking(w, carrier)
    return {
        "id": tid,
        "tracking_id": tid,
        "carrier": carrier,
        "sender": shop[0],
        "description": shop[2],
        "status": "in_transit",
        "last_update": w.ts(w.rng.randrange(60, 600)),
        "estimated_delivery": delivery.isoformat(),
    }


def tracked_parcel(p: dict[str, Any], hub: str) -> dict[str, Any]:
    """``parcels.track_parcel``'s result for parcel record ``p``."""
    return {
        **as_listing(p),
        "location": hub,
        "events": [
            {"time": p["last_update"], "location": hub, "description": "Arrived at the sorting centre"},
        ],
    }


# -- templates ----------------------------------------------------------------------------------


@template(
    "hybrid.order_food_text_eta",
    apps=["food", "contacts", "messages"],
    domain=Domain.FOOD,
    difficulty=3,
    capabilities=["lookup", "purchase", "send"],
)
def order_food_text_eta(w: World) -> Draft:
    """Template ``hybrid.order_food_text_eta``, e.g. task 0: "Order a Bun Cha from Saigon Kitchen for delivery home and text Manabu what time it will arrive."."""
    name, cuisine, menu = w.rng.choice(RESTAURANTS)
    other_name, other_cuisine, _ = w.rng.choice([r for r in RESTAURANTS if r[0] != name])
    rid, other_rid = spaced_ids(w, "rst_", 2, 10, 90)
    rest = restaurant_record(w, rid, name, cuisine)
    other = restaurant_record(w, other_rid, other_name, other_cuisine)
    w.table("food.restaurants").extend([rest, other])
    item_ids = spaced_ids(w, "itm_", len(menu), 100, 400)
    k = w.rng.randrange(3)
    dish, _, price = menu[k]
    price = w.price(price)
    qty = w.rng.choice([1, 2])
    c = w.rng.choice(w.contacts)
    decoy = namesake(w, c, email=False)

    placed = w.now + dt.timedelta(minutes=1)
    eta = placed + dt.timedelta(minutes=rest["eta_minutes"] + w.rng.choice([2, 4, 7, 9]))
    subtotal = round_money(price * qty)
    total = round_money(subtotal + rest["delivery_fee"])
    order = {
        "order_id": f"ord_{w.rng.randrange(200, 900)}",
        "restaurant_id": rid,
        "restaurant_name": name,
        "items": [{"item_id": item_ids[k], "name": dish, "qty": qty, "price": price}],
        "subtotal": subtotal,
        "delivery_fee": rest["delivery_fee"],
        "total": total,
        "currency": w.currency,
        "status": "placed",
        "placed_at": iso_stamp(placed),
        "eta": iso_stamp(eta),
        "last_update": iso_stamp(placed),
    }
    menu_result = {
        "restaurant_id": rid,
        "name": name,
        "currency": w.currency,
        "menu": [
            {
                "item_id": iid,
                "name": n,
                "description": d,
                "category": "desserts & drinks" if i == 3 else "mains",
                "price": w.price(p),
                "available": True,
            }
            for i, (iid, (n, d, p)) in enumerate(zip(item_ids, menu, strict=True))
        ],
    }
    found = {"restaurants": [as_listing(rest)], "total": 1}
    items = [{"item_id": item_ids[k], "qty": qty}]
    hhmm = eta.strftime("%H:%M")
    simulated = [
        simulated_call("food.search_restaurants", found, query=name),
        simulated_call("food.search_restaurants", found, query=name.lower()),
        simulated_call("food.search_restaurants", found, query=cuisine),
        simulated_call("food.get_menu", menu_result, restaurant_id=rid),
        simulated_call("food.place_order", order, restaurant_id=rid, items=items),
    ]
    first = first_name(c)
    plan = [
        call("food.search_restaurants", query=name),
        call("food.get_menu", restaurant_id=rid),
        call("food.place_order", restaurant_id=rid, items=items),
        call("contacts.search", query=first),
        call("messages.send", to=c["phone"], body=f"Food from {name} is on its way, it should arrive at {hhmm}."),
        call("finish", answer=f"Ordered; it arrives at {hhmm} and {first} knows."),
    ]
    what = f"{NUMBER_WORDS[qty]} {dish}"
    (phrasing,) = pick(w, [0, 1])
    goal = (
        f"Order {what} from {name} for delivery home and text {first} what time it will arrive."
        if phrasing == 0
        else f"Get me {what} delivered from {name}, and text {first} when it will get here."
    )
    h12 = _h12(hhmm)
    placed_hhmm = placed.strftime("%H:%M")
    return Draft(
        goal=goal,
        criteria=[
            state("food.orders", "created", restaurant_id=rid, total=total),
            # the arrival; the order time may be said beside it
            _sms_to(c, states={"time": {"value": hhmm, "context": [placed_hhmm]}}),
            answer_time_if_said(hhmm),
        ],
        milestones=[
            behavior("required_call", "food.get_menu", arguments={"restaurant_id": rid}),
            state("food.orders", "created", restaurant_id=rid, total=total),
            _lookup(c),
            _sms_to(c),
        ],
        plan=plan,
        fixtures=w.fixtures(simulated=simulated),
        backends=HYBRID,
        probes=[
            passes("the time in 12-hour form", _texting(plan, body=f"Dinner from {name} arrives at {h12}!")),
            passes("found the place by cuisine", replacing(plan, 0, call("food.search_restaurants", query=cuisine))),
            passes("number in national format", _texting(plan, to=national(c["phone"]))),
            fails("the order time instead of the arrival", _texting(plan, body=f"Ordered food at {placed_hhmm}.")),
            passes(
                "the order time beside the arrival",
                _texting(plan, body=f"Food from {name} should arrive at {hhmm} - ordered at {placed_hhmm}."),
            ),
            fails("a hedged arrival", _texting(plan, body=f"Food arrives at {hhmm} or {placed_hhmm}.")),
            fails(f"texted {decoy['name']}", _texting(plan, to=decoy["phone"])),
            fails("the wrong time in the answer", finishing(plan, f"Ordered; it arrives at {placed_hhmm}.")),
            passes("no time in the answer", finishing(plan, f"Ordered, and {first} knows.")),
        ],
    )


@template(
    "hybrid.parcel_window_calendar",
    apps=["mail", "parcels", "calendar"],
    domain=Domain.SHOPPING,
    difficulty=3,
    capabilities=["lookup", "extract", "create"],
)
def parcel_window_calendar(w: World) -> Draft:
    """Template ``hybrid.parcel_window_calendar``, e.g. task 0: "My seed starter kit from Green Thumb Garden has shipped. Find out when it will be delivered and block the delivery window in my calendar, titled \"Parcel delivery\"."."""
    shop = w.rng.choice(SHOPS)
    carrier = w.rng.choice(CARRIERS)
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 4))
    p = parcel_record(w, shop, carrier, day)
    other_shop = w.rng.choice([s for s in SHOPS if s != shop])
    old = parcel_record(w, other_shop, w.rng.choice(CARRIERS), w.now.date() - dt.timedelta(days=3))
    old.update(status="delivered", estimated_delivery=None, last_update=w.ts(60 * 24 * 3 - 45))
    w.table("parcels.parcels").extend([p, old])
    order_no = w.rng.randrange(10000, 99999)
    mail_id = w.next_id("mail.messages", "em_")
    shop_words = "|".join(re.escape(x.lower()) for x in [*shop[0].split(), shop[1], *shop[2].split()] if len(x) > 3)
    w.table("mail.messages").append(
        {
            "id": mail_id,
            "folder": "inbox",
            "from": f"shipping@{shop[1]}",
            "to": (w.user_email,),
            "subject": f"Your {shop[0]} order #{order_no} has shipped",
            "body": f"Thanks for shopping at {shop[0]}! Your {shop[2]} left our warehouse today with {carrier}. "
            f"Tracking number: {p['tracking_id']}.",
            "time": w.ts(w.ago_within(w.rng, 120, 1500)),
            "read": False,
        }
    )
    shipped = w.table("mail.messages")[-1]["time"][:10]
    h = w.rng.randrange(8, 18)
    m = w.rng.choice([0, 30])
    ws = f"{h:02d}:{m:02d}"
    we = f"{h + 2:02d}:{m:02d}"
    options = [
        {"date": (day + dt.timedelta(days=d)).isoformat(), "window_start": a, "window_end": b}
        for d in (1, 2)
        for a, b in (WINDOWS["morning"], WINDOWS["evening"])
    ]
    window = {
        "tracking_id": p["tracking_id"],
        "status": "in_transit",
        "delivery_date": day.isoformat(),
        "window_start": ws,
        "window_end": we,
        "can_reschedule": True,
        "options": options,
    }
    hub = w.rng.choice(["Leipzig hub", "Kassel hub", "Hamburg depot", "Cologne hub"])
    tid = p["tracking_id"]
    simulated = [
        simulated_call("parcels.get_delivery_window", window, tracking_id=tid),
        simulated_call("parcels.track_parcel", tracked_parcel(p, hub), tracking_id=tid),
        simulated_call("parcels.list_parcels", {"parcels": [as_listing(p), as_listing(old)], "total": 2}),
    ]
    start, end = f"{day.isoformat()}T{ws}", f"{day.isoformat()}T{we}"
    title, phrasing = pick(w, ["Parcel delivery", "Be home for the parcel", "Delivery window", "Stay in"], [0, 1])
    goal = (
        f"My {shop[2]} from {shop[0]} has shipped. Find out when it will be delivered and block the "
        f'delivery window in my calendar, titled "{title}".'
        if phrasing == 0
        else f'When is my {shop[0]} parcel coming? Put the delivery window in my calendar as "{title}" so I stay home.'
    )
    plan = [
        call("mail.search", query=shop[0]),
        call("parcels.get_delivery_window", tracking_id=tid),
        call("calendar.create_event", title=title, start=start, end=end),
        call("finish", answer=f"It comes on {day_words(day)} between {ws} and {we}; it is in your calendar."),
    ]
    opt = options[0]
    later = f"{day.isoformat()}T{int(we[:2]) + 1:02d}:{we[3:]}"
    return Draft(
        goal=goal,
        criteria=[
            state("calendar.events", "created", title={"iequals": title}, start=start, end=end),
            # the day it shipped (the mail's) may be said beside the delivery day
            answer(type="date", value=day.isoformat(), context=[shipped]),
        ],
        milestones=[
            CompositeCriterion(
                kind="any_of",
                id="found the shipping mail",
                criteria=[
                    behavior("required_call", "mail.search", arguments={"query": {"regex": shop_words}}),
                    behavior("required_call", "mail.read", arguments={"message_id": mail_id}),
                ],
            ),
            behavior("required_call", "parcels.get_delivery_window", arguments={"tracking_id": tid}),
            state("calendar.events", "created", start=start),
        ],
        plan=plan,
        fixtures=w.fixtures(simulated=simulated),
        perturb_exempt=["3.answer"],
        backends=HYBRID,
        probes=[
            passes("title in other case", replacing(plan, 2, call("calendar.create_event", title=title.upper(), start=start, end=end))),
            passes("the day in other words", finishing(plan, f"{day.strftime('%A')}, {_h12(ws)} to {_h12(we)}. Blocked.")),
            fails("a hedged day", finishing(plan, f"{day_words(day)} or {day_words(day + dt.timedelta(days=1))}.")),
            passes("the shipping day beside", finishing(plan, f"It comes on {day_words(day)} between {ws} and {we} (shipped on {day_words(dt.date.fromisoformat(shipped))}).")),
            fails("only the shipping day", finishing(plan, f"It shipped on {day_words(dt.date.fromisoformat(shipped))}.")),
            passes("tracked the parcel too", [plan[0], call("parcels.track_parcel", tracking_id=tid), *plan[1:]]),
            fails(
                "another offered slot",
                replacing(plan, 2, call("calendar.create_event", title=title, start=f"{opt['date']}T{opt['window_start']}",
                                        end=f"{opt['date']}T{opt['window_end']}")),
            ),
            fails("the window an hour too long", replacing(plan, 2, call("calendar.create_event", title=title, start=start, end=later))),
            fails("a stray second event", [*plan[:3], call("calendar.create_event", title="Parcel", start=start, end=end), plan[-1]]),
        ],
    )  # fmt: skip


@template(
    "hybrid.parcel_reschedule_text",
    apps=["messages", "parcels", "contacts"],
    domain=Domain.SHOPPING,
    difficulty=3,
    capabilities=["lookup", "extract", "update", "send"],
)
def parcel_reschedule_text(w: World) -> Draft:
    """Template ``hybrid.parcel_reschedule_text``, e.g. task 0: "I won't be home when my Loom & Thread parcel comes. Move the delivery to Thursday 12 November in the evening, and text Hideki the new day and time window."."""
    shop = w.rng.choice(SHOPS)
    carrier = w.rng.choice(CARRIERS)
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 3))
    p = parcel_record(w, shop, carrier, day)
    w.table("parcels.parcels").append(p)
    old_ws, old_we = w.rng.choice(list(WINDOWS.values()))
    tid = p["tracking_id"]
    w.table("messages.messages").append(
        {
            "id": w.next_id("messages.messages", "m_"),
            "number": w.phone_number("landline"),
            "direction": "in",
            "body": f"{carrier}: Your parcel {tid} from {shop[0]} will be delivered on {day_words(day)} "
            f"between {old_ws} and {old_we}. Change the day in the Parcel Tracker app.",
            "time": w.ts(w.ago_within(w.rng, 30, 600)),
            "read": False,
        }
    )
    new_day = day + dt.timedelta(days=w.rng.randrange(1, 4))
    window = w.rng.choice([k for k, v in WINDOWS.items() if v != (old_ws, old_we)])
    ws, we = WINDOWS[window]
    c = w.rng.choice(w.contacts)
    decoy = namesake(w, c, email=False)
    changed = {
        "tracking_id": tid,
        "status": "in_transit",
        "delivery_date": new_day.isoformat(),
        "window_start": ws,
        "window_end": we,
        "last_update": iso_stamp(w.now + dt.timedelta(minutes=1)),
    }
    options = [
        {"date": (day + dt.timedelta(days=d)).isoformat(), "window_start": a, "window_end": b}
        for d in range(1, 4)
        for a, b in WINDOWS.values()
    ]
    current = {
        "tracking_id": tid,
        "status": "in_transit",
        "delivery_date": day.isoformat(),
        "window_start": old_ws,
        "window_end": old_we,
        "can_reschedule": True,
        "options": options,
    }
    hub = w.rng.choice(["Leipzig hub", "Kassel hub", "Hamburg depot", "Cologne hub"])
    simulated = [
        simulated_call(
            "parcels.reschedule_delivery", changed, tracking_id=tid, date=new_day.isoformat(), window=window
        ),
        simulated_call("parcels.get_delivery_window", current, tracking_id=tid),
        simulated_call("parcels.track_parcel", tracked_parcel(p, hub), tracking_id=tid),
        simulated_call("parcels.list_parcels", {"parcels": [as_listing(p)], "total": 1}),
    ]
    first = first_name(c)
    (phrasing,) = pick(w, [0, 1])
    goal = (
        f"I won't be home when my {shop[0]} parcel comes. Move the delivery to {day_words(new_day)} in the "
        f"{window}, and text {first} the new day and time window."
        if phrasing == 0
        else f"Please push my {shop[0]} delivery to {day_words(new_day)}, {window} slot, and text {first} "
        "the new day and time."
    )
    weekday = new_day.strftime("%A")
    plan = [
        call("messages.search", query=shop[0]),
        call("parcels.reschedule_delivery", tracking_id=tid, date=new_day.isoformat(), window=window),
        call("contacts.search", query=first),
        call(
            "messages.send",
            to=c["phone"],
            body=f"My {shop[0]} parcel now arrives on {day_words(new_day)} between {ws} and {we}.",
        ),
        call("finish", answer=f"Moved to {day_words(new_day)}, {ws}-{we}, and told {first}."),
    ]
    o_ws, o_we = old_ws, old_we
    return Draft(
        goal=goal,
        criteria=[
            state(
                "parcels.parcels",
                "updated",
                tracking_id=tid,
                delivery_date=new_day.isoformat(),
                window_start=ws,
                window_end=we,
            ),
            _sms_to(c, regex=_window_pattern(ws, we), states={"date": new_day.isoformat()}),
        ],
        milestones=[
            behavior("required_call", "parcels.reschedule_delivery", arguments={"tracking_id": tid}),
            _lookup(c),
            _sms_to(c),
        ],
        plan=plan,
        fixtures=w.fixtures(simulated=simulated),
        backends=HYBRID,
        probes=[
            passes("12-hour times", _texting(plan, body=f"Parcel moved to {weekday}, {_h12(ws)} to {_h12(we)}.")),
            passes(
                "one am/pm for the window",
                _texting(plan, body=f"Parcel moved to {weekday}, between {_h12(ws).split(':')[0]} and {_h12(we).replace(':00', '')}."),
            ),
            passes("checked the current window first", [plan[0], call("parcels.get_delivery_window", tracking_id=tid), *plan[1:]]),
            fails("the old window in the text", _texting(plan, body=f"Parcel comes {day_words(day)}, {o_ws}-{o_we}.")),
            fails(f"texted {decoy['name']}", _texting(plan, to=decoy["phone"])),
        ],
    )  # fmt: skip


def _out_by(hm: str) -> str:
    """The next full hour after ``hm`` ("22:17" → "23:00"): a bound a person would give."""
    return f"{(int(hm[:2]) + 1) % 24:02d}:00"


@template(
    "hybrid.cinema_book_text",
    apps=["cinema", "contacts", "messages"],
    domain=Domain.ENTERTAINMENT,
    difficulty=4,
    capabilities=["lookup", "filter", "purchase", "send"],
)
def cinema_book_text(w: World) -> Draft:
    """Template ``hybrid.cinema_book_text``, e.g. task 0: "Book seats G5 and G6 for Orbit of Glass on Friday 6 November, the first screening after 7 pm at Kino Central, and text Betty the start time and the cinema."."""
    title, genre, runtime, rating, synopsis = w.rng.choice(MOVIES)
    cinema, other_cinema = w.rng.sample(CINEMAS, 2)
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 7))
    mid, other_mid = spaced_ids(w, "mov_", 2, 10, 90)
    movie = {
        "movie_id": mid,
        "title": title,
        "genre": genre,
        "runtime_min": runtime,
        "age_rating": rating,
        "language": w.rng.choice(["German", "English (OV)"]),
        "synopsis": synopsis,
    }
    o_title, o_genre, o_runtime, o_rating, o_synopsis = w.rng.choice([m for m in MOVIES if m[0] != title])
    other_movie = {
        "movie_id": other_mid,
        "title": o_title,
        "genre": o_genre,
        "runtime_min": o_runtime,
        "age_rating": o_rating,
        "language": "German",
        "synopsis": o_synopsis,
    }
    # the target: the first screening after 19:00 at `cinema`; decoys: an earlier one there, a
    # later one there, and one at the other cinema between 19:00 and the target
    target_t = w.rng.choice(["20:00", "20:15", "20:30", "20:45"])
    rows = [
        (cinema, w.rng.choice(["17:00", "17:30", "18:15"]), "1"),
        (other_cinema, "19:15", str(w.rng.randrange(2, 6))),
        (cinema, target_t, str(w.rng.randrange(2, 8))),
        (cinema, w.rng.choice(["22:30", "22:45", "23:00"]), "1"),
    ]
    sids = spaced_ids(w, "shw_", len(rows), 100, 900)
    price = w.price(w.rng.choice([9.5, 11.0, 12.5, 13.0]))
    showtimes = [
        {
            "showtime_id": sid,
            "movie_id": mid,
            "cinema": cin,
            "hall": f"Saal {hall}",
            "start": f"{day.isoformat()}T{t}:00",
            "format": "2D",
            "price_per_seat": price,
            "currency": w.currency,
            "seats_available": w.rng.randrange(12, 80),
        }
        for sid, (cin, t, hall) in zip(sids, rows, strict=True)
    ]
    show = showtimes[2]
    row = w.rng.choice("DEFGH")
    n = w.rng.randrange(4, 12)
    seats = [f"{row}{n}", f"{row}{n + 1}"]
    booking = {
        "booking_id": f"bkg_{w.rng.randrange(10, 99)}",
        "showtime_id": show["showtime_id"],
        "movie_id": mid,
        "movie_title": title,
        "cinema": cinema,
        "hall": show["hall"],
        "start": show["start"],
        "seats": seats,
        "price": round_money(price * 2),
        "currency": w.currency,
        "status": "confirmed",
        "booked_at": iso_stamp(w.now + dt.timedelta(minutes=1)),
    }
    found = {"movies": [movie], "total": 1}
    date = day.isoformat()
    simulated = [
        simulated_call("cinema.search_movies", found, query=title),
        simulated_call("cinema.search_movies", found, query=title.lower()),
        simulated_call("cinema.search_movies", found, query=title, date=date),
        simulated_call("cinema.search_movies", {"movies": [movie, other_movie], "total": 2}, date=date),
        simulated_call("cinema.list_showtimes", {"date": date, "showtimes": showtimes}, movie_id=mid, date=date),
        simulated_call(
            "cinema.list_showtimes",
            {"date": date, "showtimes": [s for s in showtimes if s["cinema"] == cinema]},
            movie_id=mid,
            date=date,
            cinema=cinema,
        ),
        simulated_call("cinema.book_tickets", booking, showtime_id=show["showtime_id"], seats=seats),
    ]
    c = w.rng.choice(w.contacts)
    decoy = namesake(w, c, email=False)
    first = first_name(c)
    (phrasing,) = pick(w, [0, 1])
    goal = (
        f"Book seats {seats[0]} and {seats[1]} for {title} on {day_words(day)}, the first screening after "
        f"7 pm at {cinema}, and text {first} the start time and the cinema."
        if phrasing == 0
        else f"Get us seats {seats[0]} and {seats[1]} for {title} at {cinema} on {day_words(day)}, whichever "
        f"screening comes first after 7 pm, then text {first} where and when it starts."
    )
    decoy_t = showtimes[1]["start"][11:16]
    h12 = _h12(target_t)
    end_t = (dt.datetime.fromisoformat(show["start"]) + dt.timedelta(minutes=runtime)).strftime("%H:%M")
    plan = [
        call("cinema.search_movies", query=title),
        call("cinema.list_showtimes", movie_id=mid, date=date),
        call("cinema.book_tickets", showtime_id=show["showtime_id"], seats=seats),
        call("contacts.search", query=first),
        call(
            "messages.send",
            to=c["phone"],
            body=f"Hi {first}, I got us tickets for {title} on {day.strftime('%A')}: {target_t} at {cinema}, "
            f"seats {seats[0]} and {seats[1]}.",
        ),
        call("finish", answer=f"Booked {target_t} at {cinema} and texted {first}."),
    ]
    return Draft(
        goal=goal,
        criteria=[
            named(
                state("cinema.bookings", "created", showtime_id=show["showtime_id"], seats={"has": seats[0], "len": 2}),
                "created:cinema.bookings:seat1",
            ),
            named(
                state("cinema.bookings", "created", showtime_id=show["showtime_id"], seats={"has": seats[1]}),
                "created:cinema.bookings:seat2",
            ),
            # the start (the end may be said beside it), on the screening's day
            named(
                _sms_to(c, states={"time": {"value": target_t, "context": [end_t]}}, consistent={"date": date}),
                "created:messages.messages:time",
            ),
            named(_sms_to(c, icontains=cinema), "created:messages.messages:cinema"),
        ],
        milestones=[
            behavior("required_call", "cinema.list_showtimes", arguments={"movie_id": mid}),
            state("cinema.bookings", "created", showtime_id=show["showtime_id"]),
            _lookup(c),
            _sms_to(c),
        ],
        plan=plan,
        fixtures=w.fixtures(simulated=simulated),
        backends=HYBRID,
        probes=[
            passes(
                "the time in 12-hour form", _texting(plan, body=f"{title} at {cinema}, starts {h12}. Seats booked!")
            ),
            passes(
                "searched by title and date", replacing(plan, 0, call("cinema.search_movies", query=title, date=date))
            ),
            passes(
                "the end told roughly",
                _texting(plan, body=f"{title} at {cinema}: starts {target_t}, we're out by {_out_by(end_t)}."),
            ),
            fails("the other cinema's earlier time", _texting(plan, body=f"{title}: {decoy_t} at {cinema}.")),
            fails("a hedged start time", _texting(plan, body=f"{title} at {cinema}, {decoy_t} or {target_t}.")),
            fails(f"texted {decoy['name']}", _texting(plan, to=decoy["phone"])),
            fails("the cinema left out", _texting(plan, body=f"Tickets for {title}, {target_t}.")),
            fails(
                "another day",
                _texting(
                    plan,
                    body=f"Got us tickets for {(day + dt.timedelta(days=1)).strftime('%A')}: {target_t} at {cinema}.",
                ),
            ),
            passes(
                "the end time beside", _texting(plan, body=f"Booked! Starts {target_t} at {cinema}, out by {end_t}.")
            ),
        ],
    )


@template(
    "hybrid.cancel_order_note_refund",
    apps=["food", "notes"],
    domain=Domain.FOOD,
    difficulty=3,
    capabilities=["lookup", "filter", "cancel", "update"],
)
def cancel_order_note_refund(w: World) -> Draft:
    """Template ``hybrid.cancel_order_note_refund``, e.g. task 0: "Cancel my Green Bowl order that is still being prepared, add the refund to my \"Expenses\" note, and tell me how much it is."."""
    (name, cuisine, menu), (o_name, o_cuisine, o_menu) = w.rng.sample(RESTAURANTS, 2)
    rid, o_rid = spaced_ids(w, "rst_", 2, 10, 90)
    rest, other = restaurant_record(w, rid, name, cuisine), restaurant_record(w, o_rid, o_name, o_cuisine)
    w.table("food.restaurants").extend([rest, other])
    oids = spaced_ids(w, "ord_", 3, 200, 900)
    ages = [w.rng.randrange(8, 20), 60 * 24 * w.rng.randrange(2, 6) + 30, 60 * 24 * w.rng.randrange(8, 20) + 30]
    specs = [(rest, menu, "preparing"), (rest, menu, "delivered"), (other, o_menu, "delivered")]
    orders = []
    for oid, age, (r, m, status) in zip(oids, ages, specs, strict=True):
        picks = w.rng.sample(range(len(m)), 2)
        items = [
            {
                "item_id": f"itm_{100 + 10 * j + i}",
                "name": m[j][0],
                "qty": w.rng.choice([1, 2]),
                "price": w.price(m[j][2]),
            }
            for i, j in enumerate(picks)
        ]
        subtotal = round_money(sum(it["qty"] * it["price"] for it in items))
        placed = w.now - dt.timedelta(minutes=age)
        open_ = status != "delivered"
        orders.append(
            {
                "id": oid,
                "order_id": oid,
                "restaurant_id": r["restaurant_id"],
                "restaurant_name": r["name"],
                "items": items,
                "subtotal": subtotal,
                "delivery_fee": r["delivery_fee"],
                "total": round_money(subtotal + r["delivery_fee"]),
                "currency": w.currency,
                "status": status,
                "placed_at": iso_stamp(placed),
                "eta": iso_stamp(placed + dt.timedelta(minutes=r["eta_minutes"] + 5)) if open_ else None,
                "last_update": iso_stamp(placed + dt.timedelta(minutes=3 if open_ else r["eta_minutes"])),
            }
        )
    w.table("food.orders").extend(orders)
    target = orders[0]
    refund = target["total"]
    amount = _num(refund)
    money = _amount_pattern(refund)
    note_title, phrasing = pick(w, ["Expenses", "Money", "Budget", "Spending"], [0, 1])
    # a note whose lines share no amount with the refund
    lines = []
    for label in w.rng.sample(["Groceries", "Taxi", "Pharmacy", "Cinema", "Haircut", "Books"], 3):
        while True:
            v = w.amount(w.price(w.rng.randrange(4, 90) + w.rng.choice([0.0, 0.2, 0.5, 0.8])))
            if amount not in v and not re.search(money, v):
                break
        lines.append(f"{label} {v}")
    nid = w.next_id("notes.notes", "n_")
    stamp = w.ts(w.ago_within(w.rng, 600, 5000))
    w.table("notes.notes").append(
        {
            "id": nid,
            "title": note_title,
            "body": "\n".join(lines),
            "pinned": False,
            "created": stamp,
            "updated": stamp,
            "tags": ("money",),
        }
    )
    listed = [{k: o[k] for k in ("order_id", "restaurant_id", "restaurant_name", "total", "currency", "status",
                                 "placed_at")} for o in orders]  # fmt: skip
    cancelled = {
        "order_id": target["order_id"],
        "status": "cancelled",
        "refund": refund,
        "currency": w.currency,
        "last_update": iso_stamp(w.now + dt.timedelta(minutes=1)),
    }
    simulated = [
        simulated_call("food.list_past_orders", {"orders": listed, "total": 3}),
        simulated_call("food.list_past_orders", {"orders": listed[:1], "total": 1}, status="preparing"),
        simulated_call("food.order_status", {**as_listing(target), "courier": None}, order_id=target["order_id"]),
        simulated_call("food.cancel_order", cancelled, order_id=target["order_id"]),
    ]
    goal = (
        f'Cancel my {name} order that is still being prepared, add the refund to my "{note_title}" note, '
        "and tell me how much it is."
        if phrasing == 0
        else f"I don't want the {name} order that's still being made any more. Cancel it, write the "
        f'refund down in my "{note_title}" note and tell me the amount.'
    )
    plan = [
        call("food.list_past_orders"),
        call("food.cancel_order", order_id=target["order_id"]),
        call("notes.search", query=note_title),
        call("notes.append", note_id=nid, text=f"Refund {name} +{amount}"),
        call("finish", answer=f"Cancelled; {w.money(refund)} refunded and noted."),
    ]
    comma = w.amount(refund).replace(".", ",")
    old_total = orders[1]["total"]
    return Draft(
        goal=goal,
        criteria=[
            state("food.orders", "updated", order_id=target["order_id"], status="cancelled"),
            state("notes.notes", "updated", id=nid, body={"regex": money}),
            answer(type="money", value=refund, currency=w.currency),
        ],
        milestones=[
            state("food.orders", "updated", order_id=target["order_id"], status="cancelled"),
            CompositeCriterion(
                kind="any_of",
                id=f"found note {nid}",
                criteria=[
                    behavior("required_call", "notes.search", arguments={"query": {"icontains": note_title}}),
                    behavior("required_call", "notes.get", arguments={"note_id": nid}),
                ],
            ),
        ],
        plan=plan,
        fixtures=w.fixtures(simulated=simulated),
        perturb_exempt=["4.answer"],
        backends=HYBRID,
        probes=[
            passes("the amount with a decimal comma", replacing(plan, 3, call("notes.append", note_id=nid, text=f"{name} refund: {comma} {w.currency}"))),
            passes("listed only orders in preparation", replacing(plan, 0, call("food.list_past_orders", status="preparing"))),
            passes("checked the order first", [plan[0], call("food.order_status", order_id=target["order_id"]), *plan[1:]]),
            fails("the delivered order's total noted", replacing(plan, 3, call("notes.append", note_id=nid, text=f"Refund {name} +{_num(old_total)}"))),
            fails("cancelled but not noted", [*plan[:2], plan[-1]]),
            passes("the amount in words and a typed value", finishing(plan, f"Done, you get {comma} {w.currency_words} back.", value=refund)),
            fails("a hedged amount", finishing(plan, f"About {amount} or {w.money(old_total)}.")),
            fails("the right amount only in passing", finishing(plan, f"Refund {w.money(old_total)} (not counting the {amount} fee).")),
        ],
    )  # fmt: skip
