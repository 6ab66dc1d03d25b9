"""Tasks that run on the ``llmsim`` backend alone (``backends=["llmsim"]``): the simulated apps
(parcels, food) without any sandbox app, so ``gym.make("PhonePlan-v0", backend="llmsim")`` has
tasks to run. The task scripts the simulated world (``Fixtures.simulated``: the results the app
returns for the calls a careful agent makes), and criteria read the answer and the fact ledger
(orders a write established); the ledger's consistency rules mark a contradicting world.
"""

from __future__ import annotations

import datetime as dt

from phoneenv.contract import Domain
from phoneenv.tasks.templates import Draft, answer, behavior, call, fails, finishing, passes, replacing, state, template
from phoneenv.tasks.templates.hybrid import (
    CARRIERS,
    RESTAURANTS,
    SHOPS,
    _ids,
    _listing,
    _money,
    _parcel,
    _restaurant,
    _sim,
    _stamp,
    _tracked,
)
from phoneenv.tasks.world import World

LLMSIM = ["llmsim"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


@template(
    "simulated.parcel_eta",
    apps=["parcels"],
    domain=Domain.SHOPPING,
    difficulty=2,
    capabilities=["lookup", "answer"],
    count=10,
)
def parcel_eta(w: World) -> Draft:
    """Template ``simulated.parcel_eta``: "when is my hiking boots parcel from Trailhead coming?":
    the parcel list, its tracking, and the delivery date as a typed answer (read only)."""
    shop, other_shop = w.rng.sample(SHOPS, 2)
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 6))
    other_day = day + dt.timedelta(days=w.rng.choice([2, 3, 4]))
    p = _parcel(w, shop, w.rng.choice(CARRIERS), day)
    q = _parcel(w, other_shop, w.rng.choice(CARRIERS), other_day)
    hub = w.rng.choice(["Leipzig hub", "Kassel hub", "Hamburg depot", "Cologne hub"])
    tid = p["tracking_id"]
    simulated = [
        _sim("parcels.list_parcels", {"parcels": [_listing(p), _listing(q)], "total": 2}),
        _sim("parcels.track_parcel", _tracked(p, hub), tracking_id=tid),
    ]
    goal = w.rng.choice([f"When is my {shop[2]} from {shop[0]} going to arrive?",
                         f"Which day will the {shop[0]} parcel with the {shop[2]} be delivered?"])  # fmt: skip
    said = f"{WEEKDAYS[day.weekday()]}, {day.isoformat()}"
    plan = [
        call("parcels.list_parcels"),
        call("parcels.track_parcel", tracking_id=tid),
        call("finish", answer=f"It should arrive on {said}."),
    ]
    return Draft(
        goal=goal,
        fixtures=w.fixtures(simulated=simulated),
        criteria=[answer(type="date", value=day.isoformat()), behavior("read_only")],
        milestones=[behavior("required_call", "parcels.*")],
        plan=plan,
        backends=LLMSIM,
        probes=[
            passes("straight from the list", [plan[0], plan[2]]),
            passes("the date in words", finishing(plan, f"On {WEEKDAYS[day.weekday()]} {day.day} {day:%B}.")),
            fails(
                "the other parcel's day", finishing(plan, f"On {other_day.isoformat()}.", value=other_day.isoformat())
            ),
            fails("both days, hedged", finishing(plan, f"Either {day.isoformat()} or {other_day.isoformat()}.")),
        ],
    )


@template(
    "simulated.food_order",
    apps=["food"],
    domain=Domain.FOOD,
    difficulty=3,
    capabilities=["lookup", "purchase"],
    count=10,
)
def food_order(w: World) -> Draft:
    """Template ``simulated.food_order``: "order two Margheritas from Da Luigi": search, menu, one
    order at that restaurant whose total is the menu price times the quantity plus the fee (the
    ledger's sum rules hold), and nothing ordered elsewhere."""
    name, cuisine, menu = RESTAURANTS[w.index % len(RESTAURANTS)]
    other_name, other_cuisine, _ = w.rng.choice([r for r in RESTAURANTS if r[0] != name])
    rid, other_rid = _ids(w, "rst_", 2, 10, 90)
    rest = _restaurant(w, rid, name, cuisine)
    other = _restaurant(w, other_rid, other_name, other_cuisine)
    w.table("food.restaurants").extend([rest, other])
    item_ids = _ids(w, "itm_", len(menu), 100, 400)
    k = w.rng.randrange(3)
    dish, _, price = menu[k]
    price = w.price(price)
    qty = w.rng.choice([1, 2, 3])
    placed = w.now + dt.timedelta(minutes=1)
    subtotal = _money(price * qty)
    total = _money(subtotal + rest["delivery_fee"])
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
        "placed_at": _stamp(placed),
        "eta": _stamp(placed + dt.timedelta(minutes=rest["eta_minutes"])),
        "last_update": _stamp(placed),
    }
    wrong = {**order, "order_id": f"ord_{w.rng.randrange(900, 999)}", "items": [{**order["items"][0], "qty": qty + 1}],
             "subtotal": _money(price * (qty + 1)), "total": _money(price * (qty + 1) + rest["delivery_fee"])}  # fmt: skip
    menu_result = {
        "restaurant_id": rid,
        "name": name,
        "currency": w.currency,
        "menu": [
            {"item_id": iid, "name": n, "description": d, "category": "mains", "price": w.price(p), "available": True}
            for iid, (n, d, p) in zip(item_ids, menu, strict=True)
        ],
    }
    found = {"restaurants": [_listing(rest)], "total": 1}
    items = [{"item_id": item_ids[k], "qty": qty}]
    simulated = [
        _sim("food.search_restaurants", found, query=name),
        _sim("food.search_restaurants", found, query=cuisine),
        _sim("food.get_menu", menu_result, restaurant_id=rid),
        _sim("food.place_order", order, restaurant_id=rid, items=items),
        _sim("food.place_order", wrong, restaurant_id=rid, items=[{"item_id": item_ids[k], "qty": qty + 1}]),
    ]
    words = ["", "one", "two", "three"]
    goal = w.rng.choice([f"Order {words[qty]} {dish} from {name} for delivery.",
                         f"Get {words[qty]} {dish} delivered from {name}, please."])  # fmt: skip
    plan = [
        call("food.search_restaurants", query=name),
        call("food.get_menu", restaurant_id=rid),
        call("food.place_order", restaurant_id=rid, items=items),
        call("finish", answer=f"Ordered; the total is {total} {w.currency}."),
    ]
    return Draft(
        goal=goal,
        fixtures=w.fixtures(simulated=simulated),
        criteria=[state("food.orders", "created", restaurant_id=rid, total=total)],
        milestones=[behavior("required_call", "food.get_menu", arguments={"restaurant_id": rid})],
        plan=plan,
        perturb_exempt=["3.answer"],
        backends=LLMSIM,
        probes=[
            passes("found by cuisine", replacing(plan, 0, call("food.search_restaurants", query=cuisine))),
            fails(
                "one too many",
                replacing(
                    plan,
                    2,
                    call("food.place_order", restaurant_id=rid, items=[{"item_id": item_ids[k], "qty": qty + 1}]),
                ),
            ),
            fails("never ordered", [plan[0], plan[1], plan[3]]),
        ],
    )
