"""Shop templates: buy a product in a size, fix the cart, cancel an order, return an item.

:func:`seed_shop` fills the shop's tables for a world (catalogue, addresses, past orders) from the
shop's own random stream, in the world's currency; templates add what their goal needs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.messages.templates import similar
from phoneenv.contract import Domain, StateCriterion, ToolCall
from phoneenv.tasks.templates import (
    CANCELLED,
    NOT_CANCELLED,
    Draft,
    answer,
    ask_first,
    behavior,
    call,
    confirm_variant,
    fails,
    finishing,
    first_name,
    passes,
    pick,
    replacing,
    state,
    template,
)
from phoneenv.tasks.world import World

__all__ = ["PRODUCTS", "ShopWorld", "item", "return_plan", "seed_shop"]

SHOE = ["39", "40", "41", "42", "43", "44", "45"]
TOPS = ["XS", "S", "M", "L", "XL"]
JEANS = ["28", "30", "32", "34", "36"]
# (name, brand, category, euro price, sizes)
PRODUCTS: list[tuple[str, str, str, float, list[str]]] = [
    ("Trail running shoes", "Stridex", "shoes", 89.9, SHOE),
    ("Leather sneakers", "Urbano", "shoes", 74.5, SHOE),
    ("Hiking boots", "Northpeak", "shoes", 129.0, SHOE),
    ("Rain jacket", "Northpeak", "jackets", 119.0, TOPS),
    ("Merino sweater", "Woolly", "knitwear", 69.0, TOPS),
    ("Cotton T-shirt", "Basics", "tops", 15.0, TOPS),
    ("Denim jeans", "Bluecut", "trousers", 59.9, JEANS),
    ("Wireless earbuds", "Sonix", "electronics", 49.99, []),
    ("Phone charger", "Voltix", "electronics", 19.99, []),
    ("Cast-iron pan", "Ferro", "kitchen", 39.5, []),
    ("Yoga mat", "Zenflex", "sports", 24.9, []),
    ("Water bottle", "Hydra", "sports", 14.5, []),
    ("Backpack", "Trailhead", "bags", 64.0, []),
    ("Desk lamp", "Lumo", "home", 34.9, []),
]
STREETS = ["Linden Street 12", "Harbour Road 4", "Maple Avenue 27", "Station Square 3", "Park Lane 81", "Mill Street 9"]
OFFICES = ["Riverside Office Park 2", "Market Tower 14", "Innovation Campus 7", "Dock Street 55"]


class ShopWorld:
    """The shop records seeded into a world: ``products`` (by name), ``home`` and ``work``
    addresses, ``orders`` (past orders, newest last)."""

    def __init__(self, products: dict[str, dict[str, Any]], home: dict[str, Any], work: dict[str, Any]) -> None:
        self.products = products
        self.home = home
        self.work = work
        self.orders: list[dict[str, Any]] = []


def seed_shop(w: World) -> ShopWorld:
    """Seed the catalogue (every product of :data:`PRODUCTS`, shuffled ids, a few sizes sold
    out), the home (default) and work addresses, and nothing in the cart, from stream ``shop``."""
    rng = w.stream("shop")
    order = list(range(len(PRODUCTS)))
    rng.shuffle(order)
    products: dict[str, dict[str, Any]] = {}
    for k, i in enumerate(order, 1):
        name, brand, cat, price, sizes = PRODUCTS[i]
        stock = {s: rng.choice([0, 1, 2, 3, 4, 6, 8]) for s in sizes} if sizes else {"": rng.randrange(1, 12)}
        products[name] = {
            "id": f"p_{k}",
            "name": name,
            "brand": brand,
            "category": cat,
            "price": w.price(price),
            "currency": w.currency,
            "sizes": list(sizes),
            "stock": stock,
        }
    w.table("shop.products").extend(sorted(products.values(), key=lambda p: int(p["id"][2:])))
    user = w.user_name
    postcode = f"{rng.randrange(10000, 99999)}"
    home = {
        "id": "ad_1",
        "label": "home",
        "name": user,
        "street": rng.choice(STREETS),
        "city": w.locale.city,
        "postcode": postcode,
        "default": True,
    }
    work = {**home, "id": "ad_2", "label": "work", "street": rng.choice(OFFICES), "default": False}
    w.table("shop.addresses").extend([home, work])
    return ShopWorld(products, home, work)


def in_stock(p: dict[str, Any], size: str, qty: int = 1) -> dict[str, Any]:
    """Make sure ``p`` has ``qty`` of ``size`` in stock (in place, in the world's record)."""
    if p["stock"].get(size, 0) < qty:
        p["stock"][size] = qty + 1
    return p


def item(p: dict[str, Any], size: str = "", qty: int = 1) -> dict[str, Any]:
    """An order item of product ``p``."""
    return {"product_id": p["id"], "name": p["name"], "size": size, "qty": qty, "price": p["price"]}


def add_order(
    w: World, sw: ShopWorld, items: list[dict[str, Any]], status: str, days_ago: int, address: str = "ad_1"
) -> dict[str, Any]:
    """A past order of ``items``, placed ``days_ago`` days ago (delivered two days later when
    its status is ``delivered``)."""
    placed = w.now - dt.timedelta(days=days_ago, hours=w.rng.randrange(1, 9))
    delivered = placed + dt.timedelta(days=2) if status == "delivered" else None
    total = round(sum(i["price"] * i["qty"] for i in items) + 1e-9, 2)
    rec = {
        "id": w.next_id("shop.orders", "o_"),
        "items": items,
        "total": total,
        "currency": w.currency,
        "address_id": address,
        "status": status,
        "placed": placed.isoformat(timespec="seconds"),
        "delivered": delivered.isoformat(timespec="minutes") if delivered else None,
    }
    w.table("shop.orders").append(rec)
    sw.orders.append(rec)
    return rec


def _sized(w: World, p: dict[str, Any]) -> str:
    """A size of ``p`` (\"\" for one size), put in stock."""
    size = w.rng.choice(p["sizes"]) if p["sizes"] else ""
    in_stock(p, size, 2)
    return size


SLOT_WORDS = {9: "morning", 13: "afternoon", 17: "evening"}


def pickup(w: World) -> tuple[str, str]:
    """A pickup slot the shop offers (tomorrow to three days ahead) and how the user says it."""
    days = w.rng.randrange(1, 4)
    hour = w.rng.choice(list(SLOT_WORDS))
    day = w.now.date() + dt.timedelta(days=days)
    when = "tomorrow" if days == 1 else f"on {day.strftime('%A')}"
    return f"{day.isoformat()}T{hour:02d}:00", f"{when} {SLOT_WORDS[hour]}"


def return_plan(order: dict[str, Any], p: dict[str, Any], reason: str, slot: str, rid: str) -> list[ToolCall]:
    """The three steps of a return (with the slot lookup), in order."""
    return [
        call("shop.start_return", order_id=order["id"], product_id=p["id"], reason=reason),
        call("shop.pickup_slots", return_id=rid),
        call("shop.choose_pickup", return_id=rid, slot=slot),
        call("shop.confirm_return", return_id=rid),
    ]


def returned(order: dict[str, Any], p: dict[str, Any], reason: str, slot: str) -> Any:
    """The confirmed return of ``p`` from ``order`` for ``reason``, picked up at ``slot``."""
    return state(
        "shop.returns",
        "created",
        order_id=order["id"],
        product_id=p["id"],
        reason={"iequals": reason},
        slot=slot,
        status="confirmed",
    )


def _with_size(p: dict[str, Any], size: str) -> str:
    return f"the {p['name'].lower()} in size {size}" if size else f"the {p['name'].lower()}"


# -- templates ------------------------------------------------------------------------------------


@template(
    "shop.buy_item",
    apps=["shop"],
    domain=Domain.SHOPPING,
    difficulty=2,
    capabilities=["lookup", "purchase", "confirm"],
    count=12,
)
def buy_item(w: World) -> Draft:
    """Template ``shop.buy_item``: "Order the trail running shoes in size 43 and have them sent
    to my work address": search, pick the size, cart, checkout to the named address."""
    sw = seed_shop(w)
    name = w.rng.choice(sorted(sw.products))
    p = sw.products[name]
    size = _sized(w, p)
    other = next((s for s in p["sizes"] if s != size), None)
    qty, where = pick(w, [1, 2], ["home", "work", None])
    addr = sw.work if where == "work" else sw.home
    confirm_variant(w, 0.4)
    what = f"two of {_with_size(p, size)}" if qty == 2 else _with_size(p, size)
    ship = {"work": " and have it sent to my work address", "home": " and ship it home", None: ""}[where]
    goal = w.rng.choice([f"Order {what} from the shop{ship}.", f"Please buy {what} for me{ship}."])
    plan = [
        call("shop.search", query=name.split()[-1] if len(name.split()) > 1 else name),
        call("shop.get_product", product_id=p["id"]),
        call("shop.add_to_cart", product_id=p["id"], **({"size": size} if size else {}), qty=qty),
    ]
    criteria: list[Any] = [
        state(
            "shop.orders",
            "created",
            items={"has": item(p, size, qty), "len": 1},
            address_id=addr["id"],
            status={"not": "cancelled"},
        )
    ]
    milestones: list[Any] = [state("shop.orders", "created", items={"has": item(p, size, qty)})]
    if w.confirm_sensitive:
        goal += " Check with me before paying."
        ask_first(plan, criteria, "shop.checkout", f"Buy {what} for {p['price'] * qty} {w.currency}?")
    plan += [call("shop.checkout", address_id=addr["id"]), call("finish", answer=f"Ordered {what}.")]
    co = len(plan) - 2
    probes = [
        passes("checked the addresses first", [call("shop.list_addresses"), *plan]),
        fails("no checkout", [*plan[:co], plan[-1]]),
        fails(
            "cancelled it afterwards",
            [
                *plan[:-1],
                *([call("user.confirm", question="Cancel the order I just placed?")] if w.confirm_sensitive else []),
                call("shop.cancel_order", order_id=w.next_id("shop.orders", "o_")),
                plan[-1],
            ],
        ),
        fails(
            "the wrong address",
            replacing(plan, co, call("shop.checkout", address_id=(sw.home if addr is sw.work else sw.work)["id"])),
        ),
        fails(
            "a stray extra product",
            [
                *plan[:co],
                call(
                    "shop.add_to_cart",
                    product_id=sw.products["Water bottle" if name != "Water bottle" else "Yoga mat"]["id"],
                ),
                *plan[co:],
            ],
        ),
    ]
    if qty == 2:
        probes.append(
            fails(
                "only one",
                replacing(plan, 2, call("shop.add_to_cart", product_id=p["id"], **({"size": size} if size else {}))),
            )
        )
    if other is not None:
        in_stock(p, other, 2)
        probes.append(
            fails(
                "the wrong size", replacing(plan, 2, call("shop.add_to_cart", product_id=p["id"], size=other, qty=qty))
            )
        )
    if where is None:
        probes.append(passes("default address named", replacing(plan, co, call("shop.checkout"))))
    if w.confirm_sensitive:
        probes.append(fails("paid without asking", [c for c in plan if c.name != "user.confirm"]))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=milestones,
        plan=plan,
        perturb_exempt=["0.query", f"{len(plan) - 1}.answer"] + ([f"{co - 1}.question"] if w.confirm_sensitive else []),
        probes=probes,
    )


@template(
    "shop.fix_cart",
    apps=["shop"],
    domain=Domain.SHOPPING,
    difficulty=2,
    capabilities=["lookup", "update", "delete"],
    count=10,
)
def fix_cart(w: World) -> Draft:
    """Template ``shop.fix_cart``: three lines in the cart; change one line's quantity and take
    another out."""
    sw = seed_shop(w)
    names = w.rng.sample(sorted(sw.products), 3)
    lines = []
    for k, n in enumerate(names, 1):
        p = sw.products[n]
        size = _sized(w, p)
        in_stock(p, size, 4)
        lines.append(
            {"id": f"ci_{k}", "product_id": p["id"], "name": p["name"], "size": size, "qty": 1, "price": p["price"]}
        )
    w.table("shop.cart").extend(lines)
    change, drop, keep = lines
    qty = w.rng.choice([2, 3])
    words = {2: "two", 3: "three"}[qty]
    goal = w.rng.choice(
        [
            f"In my shopping cart, make it {words} of the {change['name'].lower()} and take the {drop['name'].lower()} out.",
            f"Remove the {drop['name'].lower()} from my cart and change the {change['name'].lower()} to {words}.",
        ]
    )
    plan = [
        call("shop.view_cart"),
        call("shop.update_cart", line_id=change["id"], qty=qty),
        call("shop.remove_from_cart", line_id=drop["id"]),
        call("finish", answer="Done."),
    ]
    return Draft(
        goal=goal,
        criteria=[
            # one line of that product and size at the new quantity: the line changed, or taken
            # out and added again (its old line then deleted, as the same thing)
            state("shop.cart", "present", count=1, product_id=change["product_id"], size=change["size"], qty=qty),
            StateCriterion(
                id="re-added", table="shop.cart", change="deleted", where={"id": change["id"]}, min=0, max=1
            ),
            state("shop.cart", "deleted", id=drop["id"]),
            state("shop.cart", "absent", product_id=drop["product_id"], size=drop["size"]),
            state("shop.cart", "present", id=keep["id"], qty=1),
            behavior("forbidden_call", "shop.checkout"),
        ],
        milestones=[state("shop.cart", "deleted", id=drop["id"])],
        plan=plan,
        probes=[
            passes(
                "quantity 0 instead of remove", replacing(plan, 2, call("shop.update_cart", line_id=drop["id"], qty=0))
            ),
            passes("removed first", [plan[0], plan[2], plan[1], plan[3]]),
            passes(
                "taken out and added again",
                [
                    plan[0],
                    call("shop.remove_from_cart", line_id=change["id"]),
                    call("shop.add_to_cart", product_id=change["product_id"], size=change["size"], qty=qty),
                    *plan[2:],
                ],
            ),
            fails(
                "taken out and added again, one too many",
                [
                    plan[0],
                    call("shop.remove_from_cart", line_id=change["id"]),
                    call("shop.add_to_cart", product_id=change["product_id"], size=change["size"], qty=qty + 1),
                    *plan[2:],
                ],
            ),
            fails("the wrong line removed", replacing(plan, 2, call("shop.remove_from_cart", line_id=keep["id"]))),
            fails(
                "quantity off by one", replacing(plan, 1, call("shop.update_cart", line_id=change["id"], qty=qty + 1))
            ),
            fails("bought it all", [*plan[:3], call("shop.checkout"), plan[3]]),
        ],
    )


@template(
    "shop.cancel_order",
    apps=["shop", "contacts", "messages"],
    domain=Domain.SHOPPING,
    difficulty=2,
    capabilities=["lookup", "cancel", "send"],
    count=10,
)
def cancel_order(w: World) -> Draft:
    """Template ``shop.cancel_order``: two orders, one not yet shipped; cancel the one the user
    names and text a friend that the gift is off."""
    sw = seed_shop(w)
    a, b = (sw.products[n] for n in w.rng.sample(sorted(sw.products), 2))
    target = add_order(w, sw, [item(a, _sized(w, a))], "placed", 0)
    add_order(w, sw, [item(b, _sized(w, b))], "shipped", 1)
    w.table("shop.orders").sort(key=lambda o: o["placed"])
    c = w.rng.choice(w.contacts)
    first = first_name(c)
    goal = w.rng.choice(
        [
            f"Cancel my shop order for the {a['name'].lower()} and let {first} know by text that I cancelled it.",
            f"I don't need the {a['name'].lower()} I ordered anymore: cancel that order, then text {first} that it's cancelled.",
        ]
    )
    plan = [
        call("shop.list_orders"),
        call("shop.cancel_order", order_id=target["id"]),
        call("contacts.search", query=first),
        call("messages.send", to=c["phone"], body=f"I cancelled the {a['name'].lower()} order."),
        call("finish", answer="Cancelled and told them."),
    ]
    others = [p for p in sw.products.values() if p["name"] != a["name"]]
    sms = state(
        "messages.messages",
        "created",
        number={"person": c["id"]},
        direction="out",
        # a done cancellation, not of another item of the shop ("I cancelled the lamp order")
        body={
            "regex": CANCELLED,
            "not": {"any": [{"regex": NOT_CANCELLED}, *({"says": p["name"]} for p in others)]},
        },
    )
    return Draft(
        goal=goal,
        criteria=[state("shop.orders", "updated", id=target["id"], status="cancelled"), sms],
        milestones=[state("shop.orders", "updated", id=target["id"], status="cancelled")],
        plan=plan,
        perturb_exempt=["2.query", "3.body", "4.answer"],
        probes=[
            passes("opened the order first", [plan[0], call("shop.get_order", order_id=target["id"]), *plan[1:]]),
            fails(
                "told the wrong person",
                replacing(plan, 3, call("messages.send", to=similar(w, c)["phone"], body=plan[3].arguments["body"])),
            ),
            fails("not cancelled", replacing(plan, 1)),
            fails(
                "texted without the news", replacing(plan, 3, call("messages.send", to=c["phone"], body="Talk later?"))
            ),
            fails(
                "says it could not be cancelled",
                replacing(
                    plan,
                    3,
                    call("messages.send", to=c["phone"], body=f"I couldn't cancel the {a['name'].lower()} order"),
                ),
            ),
            passes(
                "in other words",
                replacing(
                    plan,
                    3,
                    call("messages.send", to=c["phone"], body=f"The {a['name'].lower()} order is cancelled now."),
                ),
            ),
            *(
                fails(why, replacing(plan, 3, call("messages.send", to=c["phone"], body=text)))
                for why, text in (
                    ("only a plan", f"I'm going to cancel the {a['name'].lower()} order tomorrow."),
                    ("a question", "Should I cancel it?"),
                    ("the wrong item", f"I cancelled the {b['name'].lower()} order."),
                )
            ),
        ],
    )


REASON_WORDS = {
    "too small": ["is too small", "doesn't fit, it's too small"],
    "too big": ["is too big", "is way too big on me"],
    "damaged": ["arrived damaged", "came broken"],
    "wrong item": ["is the wrong item", "isn't what I ordered, wrong item"],
}


@template(
    "shop.return_from_mail",
    apps=["shop", "mail"],
    domain=Domain.SHOPPING,
    difficulty=3,
    capabilities=["lookup", "procedure", "schedule"],
    count=12,
    max_steps=25,
)
def return_from_mail(w: World) -> Draft:
    """Template ``shop.return_from_mail``: the shop's delivery e-mail names the item; the user
    wants it returned with a reason and a pickup slot, steps in order (start, slot, confirm)."""
    sw = seed_shop(w)
    names = w.rng.sample([n for n, p in sw.products.items() if p["sizes"]], 2)
    a, b = (sw.products[n] for n in names)
    sa, sb = _sized(w, a), _sized(w, b)
    order = add_order(w, sw, [item(a, sa), item(b, sb)], "delivered", w.rng.randrange(3, 12))
    old = add_order(w, sw, [item(a, sa)], "delivered", w.rng.randrange(60, 90))
    w.table("shop.orders").sort(key=lambda o: o["placed"])
    mail = {
        "id": w.next_id("mail.messages", "e_"),
        "folder": "inbox",
        "from": "orders@shop.example.com",
        "to": [w.user_email],
        "subject": f"Your order {order['id']} was delivered",
        "body": f"Good news! Order {order['id']} ({a['name']}, {b['name']}) was delivered on {order['delivered'][:10]}.",
        "time": order["delivered"] + ":00",
        "read": False,
    }
    w.table("mail.messages").append(mail)
    reason = w.rng.choice(sorted(REASON_WORDS))
    said = w.rng.choice(REASON_WORDS[reason])
    slot, slot_words = pickup(w)
    goal = w.rng.choice(
        [
            f"The {a['name'].lower()} from the order in the shop's delivery e-mail {said}. Return it and have it picked up {slot_words}.",
            f"Send back the {a['name'].lower()} I just got (see the delivery mail): it {said}. Courier pickup {slot_words}, please.",
        ]
    )
    rid = w.next_id("shop.returns", "r_")
    steps = return_plan(order, a, reason, slot, rid)
    plan = [
        call("mail.search", query="delivered"),
        call("shop.get_order", order_id=order["id"]),
        *steps,
        call("finish", answer="Return booked."),
    ]
    other_slot = f"{slot[:11]}{'13' if slot[11:13] != '13' else '09'}:00"
    return Draft(
        goal=goal,
        criteria=[returned(order, a, reason, slot)],
        milestones=[
            state("shop.returns", "created", order_id=order["id"], product_id=a["id"]),
            returned(order, a, reason, slot),
        ],
        plan=plan,
        probes=[
            passes("listed orders instead of mail", replacing(plan, 0, call("shop.list_orders"))),
            passes(
                "reason in capitals",
                replacing(
                    plan, 2, call("shop.start_return", order_id=order["id"], product_id=a["id"], reason=reason.upper())
                ),
            ),
            fails("confirmed before a slot", [*plan[:3], steps[3], steps[1], steps[2], plan[-1]]),
            fails("never confirmed", replacing(plan, 5)),
            fails("the wrong slot", replacing(plan, 4, call("shop.choose_pickup", return_id=rid, slot=other_slot))),
            fails(
                "the other item",
                replacing(plan, 2, call("shop.start_return", order_id=order["id"], product_id=b["id"], reason=reason)),
            ),
            fails(
                "the old order",
                replacing(plan, 2, call("shop.start_return", order_id=old["id"], product_id=a["id"], reason=reason)),
            ),
        ],
    )


@template(
    "shop.price_check",
    apps=["shop", "contacts", "messages"],
    domain=Domain.SHOPPING,
    difficulty=2,
    capabilities=["lookup", "answer", "send"],
    count=10,
)
def price_check(w: World) -> Draft:
    """Template ``shop.price_check``: "How much is the rain jacket, and is size M in stock? Text
    Ana the price": the price in the world's currency, the stock of one size (sometimes sold out)."""
    sw = seed_shop(w)
    name = w.rng.choice(sorted(n for n, p in sw.products.items() if p["sizes"]))
    p = sw.products[name]
    size = w.rng.choice(p["sizes"])
    sold_out = w.rng.random() < 0.5
    p["stock"][size] = 0 if sold_out else w.rng.randrange(1, 6)
    c = w.rng.choice(w.contacts)
    first = first_name(c)
    goal = w.rng.choice(
        [
            f"How much is the {name.lower()} in the shop app, and do they have size {size}? Text {first} the price too.",
            f"Check the shop: what does the {name.lower()} cost and is size {size} in stock? Send {first} the price.",
        ]
    )
    price = w.money(p["price"])
    yes = "no, size {size} is sold out" if sold_out else "yes, size {size} is in stock"
    plan = [
        call("shop.search", query=name),
        call("shop.get_product", product_id=p["id"]),
        call("contacts.search", query=first),
        call("messages.send", to=c["phone"], body=f"The {name.lower()} costs {price}."),
        call("finish", answer=f"It costs {price}; {yes.format(size=size)}."),
    ]
    wrong = w.money(round(p["price"] + w.price(10), 2))
    other = next(s for s in p["sizes"] if s != size)
    sent = next(k for k, step in enumerate(plan) if step.name == "messages.send")
    return Draft(
        goal=goal,
        criteria=[
            answer(id="price", type="money", value=p["price"], currency=w.currency),
            # the other sizes may be answered beside it ("M is in stock, though L isn't")
            answer(
                id="stock", type="yes_no", value=not sold_out, context=[f"size {s}" for s in p["sizes"] if s != size]
            ),
            state(
                "messages.messages",
                "created",
                number={"person": c["id"]},
                direction="out",
                body={"states": {"money": p["price"]}},  # the price, not hedged, no other amount
            ),
        ],
        milestones=[behavior("required_call", "shop.get_product", arguments={"product_id": p["id"]})],
        plan=plan,
        perturb_exempt=["0.query", "2.query", "3.body", "4.answer"],
        probes=[
            passes("searched by brand", replacing(plan, 0, call("shop.search", query=p["brand"]))),
            fails("the wrong price", finishing(plan, f"It costs {wrong}; {yes.format(size=size)}.")),
            passes(
                "another size beside",
                finishing(
                    plan,
                    f"It costs {price}; {yes.format(size=size)}"
                    + (f", though size {other} isn't." if not sold_out else f", but size {other} is in stock."),
                ),
            ),
            fails(
                "another size's stock only",
                finishing(
                    plan,
                    f"It costs {price}; size {other} is " + ("sold out." if sold_out else "in stock."),
                ),
            ),
            fails(
                "the stock the other way",
                finishing(plan, f"It costs {price}; " + ("yes, in stock." if sold_out else "no, sold out.")),
            ),
            # a set phrase's negation word ("no problem", "don't worry") negates nothing
            (fails if sold_out else passes)(
                "in stock, no problem",
                finishing(plan, f"{price} and they do have size {size} in stock, no problem!"),
            ),
            (fails if sold_out else passes)(
                "available, don't worry", finishing(plan, f"{price}; size {size} is available, don't worry.")
            ),
            (passes if sold_out else fails)(
                "sold out without a no", finishing(plan, f"It's {price}, but size {size} is sold out.")
            ),
            (passes if sold_out else fails)("none left", finishing(plan, f"{price}. Size {size}: 0 left.")),
            *(
                [passes("the few left", finishing(plan, f"{price} - only {p['stock'][size]} left in size {size}."))]
                if not sold_out
                else []
            ),
            fails(
                "a wrong number left", finishing(plan, f"{price} - only {p['stock'][size] + 50} left in size {size}.")
            ),
            fails(
                "another amount texted",
                replacing(
                    plan,
                    sent,
                    call("messages.send", to=c["phone"], body=f"The {name.lower()} costs {price} or {wrong}."),
                ),
            ),
        ],
    )
