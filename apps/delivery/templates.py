"""Delivery templates: the signed-out delivery app (sign in from the vault, then order), track an
order and text its arrival, and the user's usual order from memory.

:func:`seed_delivery` fills the app (the restaurants and menus of
:data:`phoneenv.tasks.templates.hybrid.RESTAURANTS`, past orders) from the app's own stream and
signs it out: the password is in the vault under the user's e-mail.
"""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

from apps.clock.templates import one_time, spoken
from apps.messages.templates import similar
from phoneenv.contract import Category, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer_if_said,
    answer_time_if_said,
    behavior,
    call,
    fails,
    finishing,
    first_name,
    passes,
    pick,
    replacing,
    state,
    template,
)
from phoneenv.tasks.templates.hybrid import RESTAURANTS
from phoneenv.tasks.templates.memory import MemoryBook, ago
from phoneenv.tasks.world import World

__all__ = ["DeliveryWorld", "seed_delivery", "sign_in"]

NUMBER_WORDS = {1: "a", 2: "two", 3: "three"}


class DeliveryWorld:
    """The seeded app: ``restaurants`` by name, ``menu`` (restaurant name → dish name → item)."""

    def __init__(self) -> None:
        self.restaurants: dict[str, dict[str, Any]] = {}
        self.menu: dict[str, dict[str, dict[str, Any]]] = {}


def seed_delivery(w: World, signed_in: bool = False) -> DeliveryWorld:
    """Seed the delivery app from stream ``delivery`` and set its account (the user's e-mail,
    signed out unless ``signed_in``; the vault holds its password)."""
    rng = w.stream("delivery")
    dw = DeliveryWorld()
    order = list(range(len(RESTAURANTS)))
    rng.shuffle(order)
    k_item = 0
    for k, i in enumerate(order, 1):
        name, cuisine, dishes = RESTAURANTS[i]
        rec = {
            "id": f"dr_{k}",
            "name": name,
            "cuisine": cuisine,
            "rating": rng.choice([4.1, 4.3, 4.5, 4.6, 4.8]),
            "delivery_fee": w.price(rng.choice([0.0, 1.5, 2.0, 2.5])),
            "min_order": w.price(rng.choice([8.0, 10.0, 12.0])),
            "eta_minutes": rng.choice([25, 30, 35, 40]),
            "currency": w.currency,
            "open_now": True,
        }
        dw.restaurants[name] = rec
        dw.menu[name] = {}
        for dish, desc, price in dishes:
            k_item += 1
            dw.menu[name][dish] = {
                "id": f"mi_{k_item}",
                "restaurant_id": rec["id"],
                "name": dish,
                "description": desc,
                "price": w.price(price),
                "available": True,
            }
    w.table("delivery.restaurants").extend(dw.restaurants.values())
    for dishes in dw.menu.values():
        w.table("delivery.menu").extend(dishes.values())
    w.accounts["delivery"] = {"account": w.user_email, "signed_in": signed_in}
    return dw


def sign_in(w: World) -> ToolCall:
    """The plan step that signs the delivery app in (the vault supplies the password)."""
    return call("system.sign_in", app="delivery", account=w.user_email)


def _line(it: dict[str, Any], qty: int) -> dict[str, Any]:
    return {"item_id": it["id"], "name": it["name"], "qty": qty, "price": it["price"]}


def lower_minimum_order(w: World, dw: DeliveryWorld, rest: str, lines: list[tuple[str, int]]) -> None:
    """Lower the restaurant's minimum order so that ``lines`` reach it."""
    r = dw.restaurants[rest]
    sub = sum(dw.menu[rest][d]["price"] * q for d, q in lines)
    if sub < r["min_order"]:
        r["min_order"] = w.price(5.0) if sub >= w.price(5.0) else 0.0


def ordered(dw: DeliveryWorld, rest: str, lines: list[tuple[str, int]]) -> list[Any]:
    """The one order created at ``rest`` holding exactly ``lines`` (dish, qty), in any order, and
    not cancelled since."""
    items = [_line(dw.menu[rest][d], q) for d, q in lines]
    orders = [list(p) for p in itertools.permutations(items)]
    rid = dw.restaurants[rest]["id"]
    return [state("delivery.orders", "created", restaurant_id=rid, items={"any": orders}, status={"not": "cancelled"})]


@template(
    "delivery.order_dish",
    apps=["delivery", "system"],
    domain=Domain.FOOD,
    difficulty=3,
    capabilities=["login", "lookup", "purchase"],
    count=12,
)
def order_dish(w: World) -> Draft:
    """Template ``delivery.order_dish``: "Order two Pho Bo from Saigon Kitchen on the delivery
    app": the app is signed out, so sign in from the vault, then menu, basket, order."""
    dw = seed_delivery(w)
    rest = w.rng.choice(sorted(dw.restaurants))
    dishes = sorted(dw.menu[rest])
    dish = w.rng.choice(dishes)
    (qty,) = pick(w, [1, 2, 3])
    lines = [(dish, qty)]
    if w.rng.random() < 0.4:
        lines.append((w.rng.choice([d for d in dishes if d != dish]), 1))
    lower_minimum_order(w, dw, rest, lines)
    words = " and ".join(f"{NUMBER_WORDS[q]} {d}" for d, q in lines)
    goal = w.rng.choice(
        [
            f"Order {words} from {rest} on the delivery app.",
            f"Get me {words} delivered from {rest}, use the delivery app.",
        ]
    )
    rid = dw.restaurants[rest]["id"]
    adds = [call("delivery.add_to_basket", item_id=dw.menu[rest][d]["id"], qty=q) for d, q in lines]
    plan = [
        sign_in(w),
        call("delivery.search", query=rest),
        call("delivery.get_menu", restaurant_id=rid),
        *adds,
        call("delivery.place_order"),
        call("finish", answer=f"Ordered {words} from {rest}."),
    ]
    wrong = next(d for d in dishes if d not in {x for x, _ in lines})
    return Draft(
        goal=goal,
        criteria=ordered(dw, rest, lines),
        milestones=[
            behavior("required_call", "system.sign_in", arguments={"app": "delivery"}),
            *ordered(dw, rest, lines)[:1],
        ],
        plan=plan,
        probes=[
            passes(
                "searched by cuisine",
                replacing(plan, 1, call("delivery.search", query=dw.restaurants[rest]["cuisine"])),
            ),
            passes("checked the basket", [*plan[:-2], call("delivery.view_basket"), *plan[-2:]]),
            fails(
                "the wrong dish",
                replacing(plan, 3, call("delivery.add_to_basket", item_id=dw.menu[rest][wrong]["id"], qty=qty)),
            ),
            fails(
                "the wrong quantity",
                replacing(plan, 3, call("delivery.add_to_basket", item_id=dw.menu[rest][dish]["id"], qty=qty % 3 + 1)),
            ),
            fails("never ordered", replacing(plan, -2)),
            fails("ordered twice", [*plan[:-1], *adds, call("delivery.place_order"), plan[-1]]),
            fails(
                "cancelled it afterwards",
                [*plan[:-1], call("delivery.cancel_order", order_id=w.next_id("delivery.orders", "do_")), plan[-1]],
            ),
        ],
    )


def past_order(
    w: World, dw: DeliveryWorld, rest: str, lines: list[tuple[str, int]], status: str, minutes_ago: int
) -> dict[str, Any]:
    r = dw.restaurants[rest]
    items = [_line(dw.menu[rest][d], q) for d, q in lines]
    sub = round(sum(i["price"] * i["qty"] for i in items) + 1e-9, 2)
    placed = w.now - dt.timedelta(minutes=minutes_ago)
    rec = {
        "id": w.next_id("delivery.orders", "do_"),
        "restaurant_id": r["id"],
        "restaurant": rest,
        "items": items,
        "subtotal": sub,
        "delivery_fee": r["delivery_fee"],
        "total": round(sub + r["delivery_fee"] + 1e-9, 2),
        "currency": w.currency,
        "status": status,
        "placed": placed.isoformat(timespec="seconds"),
        "eta": (placed + dt.timedelta(minutes=r["eta_minutes"] + w.rng.choice([0, 5, 10]))).isoformat(
            timespec="minutes"
        ),
    }
    w.table("delivery.orders").append(rec)
    return rec


@template(
    "delivery.track_and_tell",
    apps=["delivery", "system", "contacts", "messages"],
    domain=Domain.FOOD,
    difficulty=3,
    capabilities=["login", "lookup", "send"],
    count=10,
)
def track_and_tell(w: World) -> Draft:
    """Template ``delivery.track_and_tell``: "When will my food get here? Text Ana the time":
    sign in, find the order on its way (an older one was delivered), text its eta."""
    dw = seed_delivery(w)
    old_rest, rest = w.rng.sample(sorted(dw.restaurants), 2)
    past_order(w, dw, old_rest, [(sorted(dw.menu[old_rest])[0], 1)], "delivered", w.rng.randrange(1500, 9000))
    cur = past_order(
        w, dw, rest, [(sorted(dw.menu[rest])[1], 2)], w.rng.choice(["preparing", "on_the_way"]), w.rng.randrange(5, 20)
    )
    c = w.rng.choice(w.contacts)
    first = first_name(c)
    hhmm = cur["eta"][11:]
    goal = w.rng.choice(
        [
            f"When is my delivery from {rest} arriving? Text {first} the time so they can come over for it.",
            f"Check when the food I ordered arrives and let {first} know the time by text.",
        ]
    )
    plan = [
        sign_in(w),
        call("delivery.list_orders"),
        call("delivery.track_order", order_id=cur["id"]),
        call("contacts.search", query=first),
        call("messages.send", to=c["phone"], body=f"The food arrives at {hhmm}."),
        call("finish", answer=f"It arrives at {hhmm}; {first} knows."),
    ]
    h, m = int(hhmm[:2]), int(hhmm[3:])
    wrong = (dt.datetime.fromisoformat(cur["eta"]) + dt.timedelta(minutes=25)).strftime("%H:%M")
    return Draft(
        goal=goal,
        criteria=[
            state(
                "messages.messages",
                "created",
                number={"person": c["id"]},
                direction="out",
                # the one time, not hedged nor denied ("08:53, not 08:28")
                body=one_time(h, m),
            ),
            answer_time_if_said(hhmm),
            # the time comes from the app: its order list (or the order) read while signed in
            behavior("required_call", "delivery.list_orders"),
            behavior("forbidden_call", "delivery.place_order"),
            behavior("forbidden_call", "delivery.cancel_order"),
        ],
        milestones=[behavior("required_call", "delivery.track_order", arguments={"order_id": cur["id"]})],
        plan=plan,
        perturb_exempt=["3.query", "4.body", "5.answer"],
        probes=[
            passes("read the time off the list", replacing(plan, 2)),
            fails(
                "the wrong time",
                replacing(plan, 4, call("messages.send", to=c["phone"], body=f"The food arrives at {wrong}.")),
            ),
            fails(
                "the wrong person",
                replacing(plan, 4, call("messages.send", to=similar(w, c)["phone"], body=plan[4].arguments["body"])),
            ),
            fails(
                "hedged the time",
                replacing(plan, 4, call("messages.send", to=c["phone"], body=f"Around {hhmm} or {wrong}.")),
            ),
            passes(
                "12-hour time",
                replacing(
                    plan, 4, call("messages.send", to=c["phone"], body=f"Food's here at {spoken(hhmm)}, come over")
                ),
            ),
            passes(
                "a time with a dot",
                replacing(
                    plan, 4, call("messages.send", to=c["phone"], body=f"Food arrives at {h}.{m:02d}, come over!")
                ),
            ),
            passes("no time in the answer", finishing(plan, f"Done, {first} knows.")),
            fails("the wrong time in the answer", finishing(plan, f"It arrives at {wrong}; {first} knows.")),
            fails(
                "the right time denied",
                replacing(plan, 4, call("messages.send", to=c["phone"], body=f"Food arrives at {wrong}, not {hhmm}.")),
            ),
            fails(
                "a range",
                replacing(
                    plan, 4, call("messages.send", to=c["phone"], body=f"Food arrives between {hhmm} and {wrong}.")
                ),
            ),
            fails(
                "cancelled it",
                [*plan[:3], call("delivery.cancel_order", order_id=cur["id"]), *plan[3:]]
                if cur["status"] == "placed"
                else replacing(plan, 4),
            ),
        ],
    )


MEMORY = Category.MEMORY


@template(
    "delivery.usual_order",
    apps=["delivery", "system"],
    domain=Domain.FOOD,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "login", "purchase"],
    count=12,
)
def usual_order(w: World) -> Draft:
    """Template ``delivery.usual_order``: "Order my usual from the delivery app": memory says what
    the usual is (an older usual superseded in half the worlds); past orders hold both."""
    dw = seed_delivery(w)
    rest, old_rest = w.rng.sample(sorted(dw.restaurants), 2)
    dish = w.rng.choice(sorted(dw.menu[rest]))
    old_dish = w.rng.choice(sorted(dw.menu[old_rest]))
    qty = w.rng.choice([1, 2])
    lower_minimum_order(w, dw, rest, [(dish, qty)])
    lower_minimum_order(w, dw, old_rest, [(old_dish, 1)])
    past_order(w, dw, old_rest, [(old_dish, 1)], "delivered", w.rng.randrange(3000, 9000))
    book = MemoryBook()
    old = book.add(
        "preference", f"My usual delivery order is {old_dish} from {old_rest}", ago(w, w.rng.randrange(200, 400))
    )
    linked = w.rng.random() < 0.5
    book.add(
        "preference",
        f"My usual delivery order is now {NUMBER_WORDS[qty]} {dish} from {rest}",
        ago(w, w.rng.randrange(5, 60)),
        supersedes=old if linked else None,
    )
    book.distract(w, 3)
    goal = w.rng.choice(
        [
            "Order my usual on the delivery app.",
            "I'm hungry - get me my usual delivery order.",
            "Place my usual food order, please.",
        ]
    )
    rid = dw.restaurants[rest]["id"]
    plan = [
        call("memory.search", query="usual delivery order"),
        sign_in(w),
        call("delivery.search", query=rest),
        call("delivery.get_menu", restaurant_id=rid),
        call("delivery.add_to_basket", item_id=dw.menu[rest][dish]["id"], qty=qty),
        call("delivery.place_order"),
        call("finish", answer=f"Ordered {dish} from {rest}."),
    ]
    old_plan = [
        plan[0],
        sign_in(w),
        call("delivery.search", query=old_rest),
        call("delivery.get_menu", restaurant_id=dw.restaurants[old_rest]["id"]),
        call("delivery.add_to_basket", item_id=dw.menu[old_rest][old_dish]["id"], qty=1),
        call("delivery.place_order"),
        plan[-1],
    ]
    return Draft(
        goal=goal,
        criteria=[
            *ordered(dw, rest, [(dish, qty)]),
            # how many of the dish the answer tells is how many were ordered
            answer_if_said("number", qty, unit="|".join(dish.lower().split())),
        ],
        milestones=[
            behavior(
                "required_call",
                "memory.search",
                id="searched:usual",
                arguments={
                    "query": {"any": [{"icontains": "usual"}, {"icontains": "order"}, {"icontains": "delivery"}]}
                },
            )
        ],
        plan=plan,
        fixtures=w.fixtures(memory=book.fixtures()),
        probes=[
            passes("searched memory for food", replacing(plan, 0, call("memory.search", query="food order"))),
            fails("the old usual", old_plan),
            fails(
                "one too many",
                replacing(plan, 4, call("delivery.add_to_basket", item_id=dw.menu[rest][dish]["id"], qty=qty + 1)),
            ),
            fails("told another quantity", finishing(plan, f"Ordered {qty + 1} {dish} from {rest}.")),
            passes("told the quantity", finishing(plan, f"Ordered {NUMBER_WORDS[qty]} {dish} from {rest}.")),
        ],
    )
