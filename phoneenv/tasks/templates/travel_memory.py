"""Memory templates for travel, maps and weather: what only the user's memory says decides the
seat, the train, the hotel or the place (a newer memory beats an outdated one).

| template | what memory says | how the task is verified |
|---|---|---|
| ``travel_memory.seat_preference`` | window or aisle (an older, opposite preference too) | the check-in seat's letter |
| ``travel_memory.parents_train`` | which city the parents (sister, best friend) live in | the train booked goes there |
| ``travel_memory.hotel_budget`` | the nightly budget, changed once | the best-rated hotel within the new budget |
| ``travel_memory.time_to_place`` | where the dentist, climbing gym, book club ... are | the travel time answered |
"""

from __future__ import annotations

import math
from typing import Any

from apps.maps.templates import MODE_WORDS, trip_minutes
from apps.travel.templates import SEATS, booked, day_words, mailed, trip_day, upcoming_flight
from phoneenv.contract import Category, CompositeCriterion, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer,
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
from phoneenv.tasks.templates.travel_seed import destinations, home, seed_hotels, seed_maps, seed_route
from phoneenv.tasks.world import World

MEMORY = Category.MEMORY
TRAVEL = Domain.TRAVEL
COUNT = 12


def _draft(w: World, book: MemoryBook, **kw: Any) -> Draft:
    return Draft(fixtures=w.fixtures(memory=book.fixtures()), **kw)


@template(
    "travel_memory.seat_preference",
    apps=["travel", "mail"],
    domain=TRAVEL,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "recency", "update"],
    count=COUNT,
)
def seat_preference(w: World) -> Draft:
    """Template ``travel_memory.seat_preference``: "Check me in for my flight to Lisbon, row 14":
    memory says window or aisle (newest wins over an older opposite one)."""
    flight, bk = upcoming_flight(w, w.rng.randrange(5, 26))
    (side,) = pick(w, ["aisle", "window"])
    old_side = "window" if side == "aisle" else "aisle"
    book = MemoryBook()
    old = book.add("preference", f"I like {old_side} seats when I fly", ago(w, w.rng.randrange(300, 700)))
    book.add(
        "preference",
        w.rng.choice([f"I now always pick an {side} seat on flights" if side == "aisle" else
                      f"These days I want a {side} seat on planes", f"Seat on planes: {side}, please"]),
        ago(w, w.rng.randrange(10, 200)),
        supersedes=old if w.rng.random() < 0.5 else None,
    )  # fmt: skip
    book.distract(w, 3, skip=("seat",))
    row = w.rng.randrange(3, 30)
    seat = f"{row}{SEATS[side][0]}"
    plan = [
        call("memory.search", query="seat preference on flights"),
        call("travel.list_bookings", kind="flight"),
        call("travel.check_in", booking_id=bk["id"], seat=seat),
        call("finish", answer=f"Checked in: seat {seat}."),
    ]
    goal = w.rng.choice(
        [f"Check me in for my flight to {flight['destination']}, somewhere in row {row}. You know where I like to sit.",
         f"Do my online check-in for the {flight['destination']} flight - row {row}, my usual kind of seat."]
    )  # fmt: skip
    return _draft(
        w,
        book,
        goal=goal,
        criteria=[
            state("travel.bookings", "updated", id=bk["id"], checked_in=True, seat={"regex": f"^{row}[{SEATS[side]}]$"}),
            mailed("Boarding pass"),
            # a seat the answer names is on the wanted side ("seat 14A" when 14C was taken fails)
            CompositeCriterion(kind="not", id="no_other_side_seat", criteria=[
                answer(id="other_side_seat", pattern=rf"\b{row}\s?[{''.join(x for x in 'ABCDEF' if x not in SEATS[side])}]\b")]),
        ],
        milestones=[memory_searched("seat", side, "fly", "plane")],
        plan=plan,
        probes=[
            # the other seat on the wanted side, told as the seat it is
            passes("the other seat on that side", finishing(
                replacing(plan, 2, call("travel.check_in", booking_id=bk["id"], seat=f"{row}{SEATS[side][1]}")),
                f"Checked in: seat {row}{SEATS[side][1]}.")),
            fails("the outdated preference", replacing(plan, 2, call("travel.check_in", booking_id=bk["id"],
                                                                     seat=f"{row}{SEATS[old_side][0]}"))),
            fails("a middle seat", replacing(plan, 2, call("travel.check_in", booking_id=bk["id"], seat=f"{row}B"))),
            fails("another seat told", finishing(plan, f"Checked in: seat {row}{SEATS[old_side][0]}.")),
        ],
    )  # fmt: skip


PEOPLE = [("my parents", "My parents live in {city}", "parents"), ("my sister", "My sister lives in {city}", "sister"),
          ("my best friend", "My best friend Robin lives in {city}", "best friend"),
          ("grandma", "Grandma lives in {city} now", "grandma")]  # fmt: skip


@template(
    "travel_memory.parents_train",
    apps=["travel", "mail"],
    domain=TRAVEL,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "search", "book"],
    count=COUNT,
)
def parents_train(w: World) -> Draft:
    """Template ``travel_memory.parents_train``: "Book the first train to my parents' on Friday
    morning": memory says which city, memories of other people name other train cities."""
    cities = w.rng.sample(destinations(w, train=True), 2)
    k = w.index % len(PEOPLE)
    who, fact, word = PEOPLE[k]
    _, other_fact, _ = PEOPLE[(k + 1) % len(PEOPLE)]
    day = trip_day(w)
    trains = seed_route(w, cities[0], day, "trains", 3)
    decoys = seed_route(w, cities[1], day, "trains", 2, extra_days=False)
    book = MemoryBook()
    book.add("fact", fact.format(city=cities[0]), ago(w, w.rng.randrange(30, 900)))
    book.add("fact", other_fact.format(city=cities[1]), ago(w, w.rng.randrange(30, 900)))
    book.distract(w, 3)
    target = trains[0]
    plan: list[ToolCall] = [
        call("memory.search", query=f"where does {who} live"),
        call("travel.search_trains", origin=home(w).name, destination=cities[0], date=day.isoformat()),
        call("travel.book_train", train_id=target["id"]),
        call("finish", answer=f"Booked {target['number']} to {cities[0]}, leaving {target['departs'][11:16]}."),
    ]
    place = "my parents'" if who == "my parents" else f"{who}'s" if who != "grandma" else "grandma's"
    goal = w.rng.choice(
        [f"Book me the earliest train to {place} on {day_words(day)}.",
         f"I'm visiting {who} on {day_words(day)}. Get me on the first train there."]
    )  # fmt: skip
    return _draft(
        w,
        book,
        goal=goal,
        criteria=[booked(target, "train"), mailed("confirmed")],
        milestones=[memory_searched(word, "live")],
        plan=plan,
        probes=[
            fails("the other person's city", replacing(plan, 2, call("travel.book_train", train_id=decoys[0]["id"]))),
            fails("a later train", replacing(plan, 2, call("travel.book_train", train_id=trains[1]["id"]))),
            passes("searched by station", replacing(plan, 1, call("travel.search_trains", origin=home(w).station,
                                                                  destination=cities[0], date=day.isoformat()))),
        ],
    )  # fmt: skip


@template(
    "travel_memory.hotel_budget",
    apps=["travel", "mail"],
    domain=TRAVEL,
    category=MEMORY,
    difficulty=4,
    capabilities=["recall", "recency", "filter", "book"],
    count=COUNT,
)
def hotel_budget(w: World) -> Draft:
    """Template ``travel_memory.hotel_budget``: "Book the best-rated hotel in Paris I can afford
    for two nights": memory holds the nightly budget, lowered once (the old one would afford a
    better hotel)."""
    dest = w.rng.choice(destinations(w))
    day = trip_day(w)
    hotels = sorted(seed_hotels(w, dest, 6), key=lambda h: -h["rating"])
    target = None
    for i, h in enumerate(hotels[1:], 1):
        if min(x["price_per_night"] for x in hotels[:i]) > h["price_per_night"]:
            target = h
            break
    if target is None:  # make the second-best hotel the cheaper one
        target = hotels[1]
        target["price_per_night"] = round(min(x["price_per_night"] for x in hotels[:1]) * 0.7, 2)
    higher = [x for x in hotels if x["rating"] > target["rating"]]
    cap = min(x["price_per_night"] for x in higher)
    new_budget = next((b for b in range(math.ceil(target["price_per_night"]), math.ceil(cap)) if b % 5 == 0),
                      math.ceil(target["price_per_night"]))  # fmt: skip
    if new_budget >= cap:
        new_budget = target["price_per_night"]
    old_budget = math.ceil(max(x["price_per_night"] for x in hotels) / 10) * 10
    top = hotels[0]
    book = MemoryBook()
    old = book.add("preference", f"My hotel budget is {w.money(old_budget)} a night", ago(w, w.rng.randrange(300, 700)))
    book.add(
        "preference",
        f"New rule: hotels at most {w.money(new_budget)} per night",
        ago(w, w.rng.randrange(10, 200)),
        supersedes=old if w.rng.random() < 0.5 else None,
    )
    book.distract(w, 3)
    nights = w.rng.choice([2, 3])
    plan = [
        call("memory.search", query="hotel budget per night"),
        call("travel.search_hotels", city=dest, check_in=day.isoformat(), nights=nights,
             max_price_per_night=float(new_budget), sort="rating"),
        call("travel.book_hotel", hotel_id=target["id"], check_in=day.isoformat(), nights=nights),
        call("finish", answer=f"Booked {target['name']}."),
    ]  # fmt: skip
    goal = w.rng.choice(
        [f"Book the best-rated hotel in {dest} that fits my budget, {nights} nights from {day_words(day)}.",
         f"I need a hotel in {dest} from {day_words(day)} for {nights} nights: the highest rated one within my "
         f"usual nightly budget."]
    )  # fmt: skip
    return _draft(
        w,
        book,
        goal=goal,
        criteria=[booked(target, "hotel", nights=nights, start={"startswith": day.isoformat()}), mailed("confirmed")],
        milestones=[memory_searched("budget", "hotel")],
        plan=plan,
        probes=[
            fails("the outdated budget", replacing(plan, 2, call("travel.book_hotel", hotel_id=top["id"],
                                                                 check_in=day.isoformat(), nights=nights))),
            passes("searched all and filtered", replacing(plan, 1, call("travel.search_hotels", city=dest,
                                                                        check_in=day.isoformat(), nights=nights))),
        ],
    )  # fmt: skip


SPOTS = [("my dentist", "My dentist is at City Hospital", "City Hospital", "dentist"),
         ("my climbing gym", "I climb at Iron Gym", "Iron Gym", "climb"),
         ("book club", "Book club meets at City Library", "City Library", "book club"),
         ("the kids' school", "The kids go to Oak Hill School", "Oak Hill School", "school"),
         ("my running spot", "I go running at Lakeside Park", "Lakeside Park", "running")]  # fmt: skip


@template(
    "travel_memory.time_to_place",
    apps=["maps"],
    domain=TRAVEL,
    category=MEMORY,
    difficulty=2,
    capabilities=["recall", "search", "route", "answer"],
    count=COUNT,
)
def time_to_place(w: World) -> Draft:
    """Template ``travel_memory.time_to_place``: "How long does it take me to cycle to my
    dentist?": memory says where that is; the map gives the minutes."""
    places = seed_maps(w)
    k = w.index % len(SPOTS)
    said, fact, place, word = SPOTS[k]
    other = SPOTS[(k + 2) % len(SPOTS)]
    mode = ["drive", "bike", "transit"][w.index // len(SPOTS) % 3]
    book = MemoryBook()
    book.add("fact", fact, ago(w, w.rng.randrange(30, 900)))
    book.add("fact", other[1], ago(w, w.rng.randrange(30, 900)))
    book.distract(w, 3)
    poi = places[place]
    minutes = trip_minutes(places["Home"], poi, mode)
    wrong = trip_minutes(places["Home"], places[other[2]], mode)
    plan = [
        call("memory.search", query=said.removeprefix("my ").removeprefix("the ")),
        call("maps.search", query=place),
        call("maps.travel_time", origin="pl_1", destination=poi["id"]),
        call("finish", answer=f"About {minutes} minutes."),
    ]
    goal = w.rng.choice(
        [f"How long does it take me to {MODE_WORDS[mode]} from home to {said}?",
         f"If I {MODE_WORDS[mode]} from home, how many minutes to {said}?"]
    )  # fmt: skip
    probes = [passes("in words", finishing(plan, f"It takes {minutes} min."))]
    if wrong != minutes:
        # told exactly: "about 15 minutes" for a 14-minute ride is a fair rounding, not the other place
        probes.append(fails("the other place", finishing(plan, f"It takes {wrong} minutes.")))
    return _draft(
        w,
        book,
        goal=goal,
        criteria=[answer(type="duration", value=minutes * 60)],
        milestones=[memory_searched(word, said.split()[-1])],
        plan=plan,
        probes=probes,
    )
