"""Tasks that run on the ``llmsim`` backend alone (``backends=["llmsim"]``): the simulated apps
(parcels, food, cinema) without any sandbox app, so ``gym.make("PhonePlan-v0", backend="llmsim")``
has tasks to run. The task scripts the simulated world (``Fixtures.simulated``: the results the
app returns for the calls a careful agent makes), and criteria read the answer and the fact ledger
(orders and bookings a write established); the ledger's consistency rules mark a contradicting
world. Milestones name the ids that matter (the parcel's tracking id, the restaurant, the
screening), so calling a simulated app at random earns no progress.

``simulated.food_sign_in`` runs on ``hybrid``: the food app starts signed out (``fixtures.accounts``)
and its account tools answer ``login_required`` until the agent signs in with ``system.sign_in``
(the sandbox's, the password from the vault), the same gate sandbox apps have.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from phoneenv.contract import Domain
from phoneenv.tasks.templates import (
    Draft,
    answer,
    behavior,
    call,
    fails,
    finishing,
    named,
    passes,
    replacing,
    state,
    template,
)
from phoneenv.tasks.templates.hybrid import (
    CARRIERS,
    CINEMAS,
    MOVIES,
    RESTAURANTS,
    SHOPS,
    as_listing,
    day_words,
    iso_stamp,
    parcel_record,
    restaurant_record,
    round_money,
    simulated_call,
    spaced_ids,
    tracked_parcel,
)
from phoneenv.tasks.world import World

LLMSIM = ["llmsim"]
HYBRID = ["hybrid"]
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
    p = parcel_record(w, shop, w.rng.choice(CARRIERS), day)
    q = parcel_record(w, other_shop, w.rng.choice(CARRIERS), other_day)
    hub = w.rng.choice(["Leipzig hub", "Kassel hub", "Hamburg depot", "Cologne hub"])
    tid = p["tracking_id"]
    simulated = [
        simulated_call("parcels.list_parcels", {"parcels": [as_listing(p), as_listing(q)], "total": 2}),
        simulated_call("parcels.track_parcel", tracked_parcel(p, hub), tracking_id=tid),
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
        milestones=[behavior("required_call", "parcels.track_parcel", arguments={"tracking_id": tid})],
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


def _food_world(w: World) -> dict[str, Any]:
    """A restaurant (and another) with a menu, one dish and quantity to order, the order the
    app places for it (total = menu price x quantity + delivery fee) and one with a quantity too
    many; the script answers the search by name or cuisine, the menu and both orders."""
    name, cuisine, menu = RESTAURANTS[w.index % len(RESTAURANTS)]
    other_name, other_cuisine, _ = w.rng.choice([r for r in RESTAURANTS if r[0] != name])
    rid, other_rid = spaced_ids(w, "rst_", 2, 10, 90)
    rest = restaurant_record(w, rid, name, cuisine)
    other = restaurant_record(w, other_rid, other_name, other_cuisine)
    w.table("food.restaurants").extend([rest, other])
    item_ids = spaced_ids(w, "itm_", len(menu), 100, 400)
    k = w.rng.randrange(3)
    dish, _, price = menu[k]
    price = w.price(price)
    qty = w.rng.choice([1, 2, 3])
    placed = w.now + dt.timedelta(minutes=1)
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
        "eta": iso_stamp(placed + dt.timedelta(minutes=rest["eta_minutes"])),
        "last_update": iso_stamp(placed),
    }
    wrong = {**order, "order_id": f"ord_{w.rng.randrange(900, 999)}", "items": [{**order["items"][0], "qty": qty + 1}],
             "subtotal": round_money(price * (qty + 1)), "total": round_money(price * (qty + 1) + rest["delivery_fee"])}  # fmt: skip
    menu_result = {
        "restaurant_id": rid,
        "name": name,
        "currency": w.currency,
        "menu": [
            {"item_id": iid, "name": n, "description": d, "category": "mains", "price": w.price(p), "available": True}
            for iid, (n, d, p) in zip(item_ids, menu, strict=True)
        ],
    }
    found = {"restaurants": [as_listing(rest)], "total": 1}
    items = [{"item_id": item_ids[k], "qty": qty}]
    too_many = [{"item_id": item_ids[k], "qty": qty + 1}]
    simulated = [
        simulated_call("food.search_restaurants", found, query=name),
        simulated_call("food.search_restaurants", found, query=cuisine),
        simulated_call("food.get_menu", menu_result, restaurant_id=rid),
        simulated_call("food.place_order", order, restaurant_id=rid, items=items),
        simulated_call("food.place_order", wrong, restaurant_id=rid, items=too_many),
    ]
    return {"name": name, "cuisine": cuisine, "rid": rid, "dish": dish, "qty": qty, "total": total,
            "items": items, "too_many": too_many, "simulated": simulated}  # fmt: skip


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
    f = _food_world(w)
    name, cuisine, rid, dish, qty, total = f["name"], f["cuisine"], f["rid"], f["dish"], f["qty"], f["total"]
    items, simulated = f["items"], f["simulated"]
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
        backends=LLMSIM,
        probes=[
            passes("found by cuisine", replacing(plan, 0, call("food.search_restaurants", query=cuisine))),
            fails(
                "one too many",
                replacing(plan, 2, call("food.place_order", restaurant_id=rid, items=f["too_many"])),
            ),
            fails("never ordered", [plan[0], plan[1], plan[3]]),
        ],
    )


@template(
    "simulated.food_sign_in",
    apps=["food"],
    domain=Domain.FOOD,
    difficulty=3,
    capabilities=["login", "lookup", "purchase"],
    count=10,
)
def food_sign_in(w: World) -> Draft:
    """Template ``simulated.food_sign_in`` (hybrid): the food app starts signed out, so ordering
    needs ``system.sign_in`` with the user's account (the saved password from the vault) first;
    an order placed while signed out is refused (``login_required``) and leaves no order."""
    f = _food_world(w)
    name, cuisine, rid, dish, qty, total = f["name"], f["cuisine"], f["rid"], f["dish"], f["qty"], f["total"]
    w.accounts["food"] = {"account": w.user_email, "signed_in": False}
    sign_in = call("system.sign_in", app="food", account=w.user_email)
    words = ["", "one", "two", "three"]
    goal = w.rng.choice([f"I'm logged out of the food app. Sign in and order {words[qty]} {dish} from {name}.",
                         f"Order {words[qty]} {dish} from {name}; the food app signed me out, so log in first."])  # fmt: skip
    order = call("food.place_order", restaurant_id=rid, items=f["items"])
    plan = [
        call("food.search_restaurants", query=name),
        call("food.get_menu", restaurant_id=rid),
        sign_in,
        order,
        call("finish", answer=f"Signed in and ordered; the total is {total} {w.currency}."),
    ]
    return Draft(
        goal=goal,
        fixtures=w.fixtures(simulated=f["simulated"]),
        criteria=[state("food.orders", "created", restaurant_id=rid, total=total)],
        milestones=[
            behavior("required_call", "system.sign_in", arguments={"app": "food", "account": w.user_email}),
            state("food.orders", "created", restaurant_id=rid, total=total),
        ],
        plan=plan,
        backends=HYBRID,
        probes=[
            passes("signs in first", [sign_in, *plan[:2], *plan[3:]]),
            passes("refused, signs in, retries", [*plan[:2], order, sign_in, order, plan[4]]),
            passes("found by cuisine", replacing(plan, 0, call("food.search_restaurants", query=cuisine))),
            fails("never signed in", [*plan[:2], order, plan[4]]),
            fails(
                "a guessed password",
                replacing(plan, 2, call("system.sign_in", app="food", account=w.user_email, password="hunter22")),
            ),
            fails("one too many", replacing(plan, 3, call("food.place_order", restaurant_id=rid, items=f["too_many"]))),
        ],
    )


@template(
    "simulated.cinema_booking",
    apps=["cinema"],
    domain=Domain.ENTERTAINMENT,
    difficulty=3,
    capabilities=["lookup", "filter", "purchase"],
    count=10,
)
def cinema_booking(w: World) -> Draft:
    """Template ``simulated.cinema_booking``: "book G5 and G6 for Orbit of Glass on Friday, the
    first screening after 7 pm at Kino Central": the film, its screenings that day (an earlier
    one there, one at another cinema after 7, a late one), and one booking of both seats at the
    right screening (the ledger's booking refers to the showtime it was booked for)."""
    title, genre, runtime, rating, synopsis = MOVIES[w.index % len(MOVIES)]
    cinema, other_cinema = w.rng.sample(CINEMAS, 2)
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 7))
    (mid,) = spaced_ids(w, "mov_", 1, 10, 90)
    movie = {"movie_id": mid, "title": title, "genre": genre, "runtime_min": runtime, "age_rating": rating,
             "language": w.rng.choice(["German", "English (OV)"]), "synopsis": synopsis}  # fmt: skip
    target_t = w.rng.choice(["19:30", "20:00", "20:15", "20:45"])
    rows = [
        (cinema, w.rng.choice(["16:45", "17:30", "18:15"]), "1"),
        (other_cinema, "19:15", str(w.rng.randrange(2, 6))),
        (cinema, target_t, str(w.rng.randrange(2, 8))),
        (cinema, w.rng.choice(["22:30", "22:45", "23:00"]), "1"),
    ]
    sids = spaced_ids(w, "shw_", len(rows), 100, 900)
    price = w.price(w.rng.choice([9.5, 11.0, 12.5, 13.0]))
    date = day.isoformat()
    showtimes = [
        {"showtime_id": sid, "movie_id": mid, "cinema": cin, "hall": f"Saal {hall}", "start": f"{date}T{t}:00",
         "format": "2D", "price_per_seat": price, "currency": w.currency, "seats_available": w.rng.randrange(12, 80)}
        for sid, (cin, t, hall) in zip(sids, rows, strict=True)
    ]  # fmt: skip
    row = w.rng.choice("DEFGH")
    n = w.rng.randrange(4, 12)
    seats = [f"{row}{n}", f"{row}{n + 1}"]
    booking_ids = spaced_ids(w, "bkg_", len(rows), 10, 99)

    def booking(show: dict[str, Any], bid: str) -> dict[str, Any]:
        return {"booking_id": bid, "showtime_id": show["showtime_id"], "movie_id": mid, "movie_title": title,
                "cinema": show["cinema"], "hall": show["hall"], "start": show["start"], "seats": seats,
                "price": round_money(price * 2), "currency": w.currency, "status": "confirmed",
                "booked_at": iso_stamp(w.now + dt.timedelta(minutes=1))}  # fmt: skip

    found = {"movies": [movie], "total": 1}
    simulated = [
        simulated_call("cinema.search_movies", found, query=title),
        simulated_call("cinema.search_movies", found, query=title, date=date),
        simulated_call("cinema.list_showtimes", {"date": date, "showtimes": showtimes}, movie_id=mid, date=date),
        simulated_call(
            "cinema.list_showtimes",
            {"date": date, "showtimes": [s for s in showtimes if s["cinema"] == cinema]},
            movie_id=mid,
            date=date,
            cinema=cinema,
        ),
        *(
            simulated_call("cinema.book_tickets", booking(show, bid), showtime_id=show["showtime_id"], seats=seats)
            for show, bid in zip(showtimes, booking_ids, strict=True)
        ),
    ]
    show = showtimes[2]
    goal = w.rng.choice([
        f"Book seats {seats[0]} and {seats[1]} for {title} on {day_words(day)}: the first screening after 7 pm "
        f"at {cinema}.",
        f"Get me seats {seats[0]} and {seats[1]} for {title} at {cinema} on {day_words(day)}, whichever "
        "screening comes first after 7 pm.",
    ])  # fmt: skip
    plan = [
        call("cinema.search_movies", query=title),
        call("cinema.list_showtimes", movie_id=mid, date=date),
        call("cinema.book_tickets", showtime_id=show["showtime_id"], seats=seats),
        call("finish", answer=f"Booked {seats[0]} and {seats[1]} for {target_t} at {cinema}."),
    ]
    return Draft(
        goal=goal,
        fixtures=w.fixtures(simulated=simulated),
        criteria=[
            named(
                state("cinema.bookings", "created", showtime_id=show["showtime_id"], seats={"has": seats[0], "len": 2}),
                "created:cinema.bookings:seat1",
            ),
            named(
                state("cinema.bookings", "created", showtime_id=show["showtime_id"], seats={"has": seats[1]}),
                "created:cinema.bookings:seat2",
            ),
        ],
        milestones=[
            behavior("required_call", "cinema.list_showtimes", arguments={"movie_id": mid}),
            state("cinema.bookings", "created", showtime_id=show["showtime_id"]),
        ],
        plan=plan,
        backends=LLMSIM,
        probes=[
            passes("searched on the day", replacing(plan, 0, call("cinema.search_movies", query=title, date=date))),
            passes(
                "only that cinema's screenings",
                replacing(plan, 1, call("cinema.list_showtimes", movie_id=mid, date=date, cinema=cinema)),
            ),
            fails(
                f"the 19:15 at {other_cinema}",
                replacing(plan, 2, call("cinema.book_tickets", showtime_id=showtimes[1]["showtime_id"], seats=seats)),
            ),
            fails(
                "the late show",
                replacing(plan, 2, call("cinema.book_tickets", showtime_id=showtimes[3]["showtime_id"], seats=seats)),
            ),
            fails("never booked", [plan[0], plan[1], plan[3]]),
        ],
    )
