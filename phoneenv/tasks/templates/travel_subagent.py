"""Sub-agent templates for travel, maps and weather: searches and look-ups that split into parts a
sub-agent can do, while the planner decides and acts.

Criteria check the end state and the split: ``delegated`` criteria need finished sub-agent
frames that used the searching tools, ``forbidden_call`` at depth 0 stops the planner from doing
that work itself (so a plan with a delegation inlined fails).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from apps.messages.templates import similar
from apps.travel.templates import booked, day_words, hm, trip_day
from apps.weather.templates import degrees, forecast_day
from phoneenv.contract import Category, CompositeCriterion, Domain, ToolCall
from phoneenv.frames import delegate_steps
from phoneenv.tasks.templates import (
    Draft,
    answer,
    behavior,
    call,
    fails,
    finishing,
    first_name,
    passes,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.templates.subagent import AGENT_APP
from phoneenv.tasks.templates.travel_seed import (
    add_booking,
    arrival_at_home,
    aware_minutes,
    destinations,
    home,
    seed_hotels,
    seed_route,
    seed_weather,
)
from phoneenv.tasks.world import World

SUBAGENT = Category.SUBAGENT
TRAVEL = Domain.TRAVEL
COUNT = 12


def delegated(tool: str) -> Any:
    """A finished sub-agent frame used ``tool`` (a name or ``app.*``)."""
    return behavior("delegated", tool, id=f"delegated:{tool}")


def not_itself(tool: str) -> Any:
    """The planner (depth 0) never calls ``tool`` itself."""
    return behavior("forbidden_call", tool, depth=0, id=f"forbidden@0:{tool}")


@template(
    "travel_subagent.train_or_flight",
    apps=["travel", "mail", AGENT_APP],
    domain=TRAVEL,
    category=SUBAGENT,
    difficulty=4,
    capabilities=["delegate", "compare", "book"],
    count=COUNT,
    max_steps=30,
)
def train_or_flight(w: World) -> Draft:
    """Template ``travel_subagent.train_or_flight``: "Get me to Munich on Friday, leaving after
    noon, arriving as early as possible - train or plane": one sub-agent searches trains, one
    flights; the planner books whichever arrives first."""
    here = home(w)
    dest = w.rng.choice(destinations(w, flight=True, train=True))
    day = trip_day(w)
    trains = seed_route(w, dest, day, "trains", 4)
    flights = seed_route(w, dest, day, "flights", 4)
    after = w.rng.choice(["07:00", "09:00", "12:00"])
    cands = [("train", t) for t in trains if hm(t["departs"]) >= after] + [
        ("flight", f) for f in flights if hm(f["departs"]) >= after
    ]
    if not cands:
        after = "06:00"
        cands = [("train", t) for t in trains] + [("flight", f) for f in flights]
    kind, target = min(cands, key=lambda kc: (aware_minutes(kc[1]["arrives"], kc[1]["destination_tz"]), kc[1]["id"]))
    runner = min(
        (kc for kc in cands if kc[1] is not target),
        key=lambda kc: aware_minutes(kc[1]["arrives"], kc[1]["destination_tz"]),
    )
    tool = f"travel.book_{kind}"
    arg = f"{kind}_id"
    best_train = min((t for k, t in cands if k == "train"), key=lambda t: t["arrives"], default=None)
    best_flight = min((f for k, f in cands if k == "flight"), key=lambda f: f["arrives"], default=None)
    plan: list[ToolCall] = [
        *delegate_steps(
            f"Find the train from {here.name} to {dest} on {day.isoformat()} leaving at {after} or later that arrives "
            "first. Tell me its id, departure and arrival.",
            ["travel.search_trains"],
            [call("travel.search_trains", origin=here.name, destination=dest, date=day.isoformat())],
            f"{best_train['id']}: {hm(best_train['departs'])} to {hm(best_train['arrives'])}" if best_train else "None.",
        ),
        *delegate_steps(
            f"Find the flight from {here.name} to {dest} on {day.isoformat()} leaving at {after} or later that arrives "
            "first. Tell me its id, departure and arrival (local times).",
            ["travel.search_flights"],
            [call("travel.search_flights", origin=here.name, destination=dest, date=day.isoformat())],
            f"{best_flight['id']}: {hm(best_flight['departs'])} to {hm(best_flight['arrives'])}" if best_flight else "None.",
        ),
        call(tool, **{arg: target["id"]}),
        call("finish", answer=f"Booked the {kind} {target['number']}, arriving {hm(target['arrives'])}."),
    ]  # fmt: skip
    goal = w.rng.choice(
        [f"I need to be in {dest} as early as possible on {day_words(day)}, leaving home at {after} or later. Train "
         "or plane, whichever gets me there first - book it.",
         f"Compare trains and flights to {dest} on {day_words(day)} (not before {after}) and book whichever "
         "arrives earliest."]
    )  # fmt: skip
    rk, rt = runner
    return Draft(
        goal=goal,
        criteria=[
            booked(target, kind),
            state("mail.messages", "created", folder="inbox", subject={"icontains": "confirmed"}),
            delegated("travel.search_trains"),
            delegated("travel.search_flights"),
            not_itself("travel.search_*"),
        ],
        milestones=[delegated("travel.search_trains"), delegated("travel.search_flights")],
        plan=plan,
        probes=[
            passes("flights searched first", [*plan[3:6], *plan[0:3], *plan[6:]]),
            fails("the runner-up", replacing(plan, -2, call(f"travel.book_{rk}", **{f"{rk}_id": rt["id"]}))),
            fails("booked both", [*plan[:-1], call(f"travel.book_{rk}", **{f"{rk}_id": rt["id"]}), plan[-1]]),
        ],
    )


@template(
    "travel_subagent.warmest_city",
    apps=["weather", AGENT_APP],
    domain=TRAVEL,
    category=SUBAGENT,
    difficulty=3,
    capabilities=["delegate", "compare", "answer"],
    count=COUNT,
)
def warmest_city(w: World) -> Draft:
    """Template ``travel_subagent.warmest_city``: "Which of my saved weather cities is warmest on
    Saturday?": a sub-agent per city reads that day's high; the planner answers."""
    cities = [w.locale.city, *w.rng.sample(destinations(w), 2)]
    seed_weather(w, cities)
    w.table("weather.locations").extend({"id": f"wl_{i}", "city": c} for i, c in enumerate(cities[1:], 2))
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 5))
    highs = {c: forecast_day(w, c, day)["high_c"] for c in cities}
    # distinct highs, at least 1 °C apart
    order = sorted(cities, key=lambda c: -highs[c])
    for i in range(1, len(order)):
        rec = forecast_day(w, order[i], day)
        rec["high_c"] = min(rec["high_c"], round(highs[order[i - 1]] - 1.5, 1))
        rec["low_c"] = min(rec["low_c"], round(rec["high_c"] - 2, 1))
        highs[order[i]] = rec["high_c"]
    best = order[0]
    plan: list[ToolCall] = [call("weather.list_locations")]
    for c in cities:
        plan += delegate_steps(
            f"What is the forecast high in {c} on {day.isoformat()}?",
            ["weather.forecast"],
            [call("weather.forecast", city=c, days=1, start_date=day.isoformat())],
            f"{c}: high {degrees(w, highs[c]):g}.",
        )
    plan.append(call("finish", answer=f"{best} will be warmest."))
    goal = w.rng.choice(
        [f"Of my saved weather cities, which will be warmest on {day_words(day)}?",
         f"Check my weather cities: where is it going to be warmest on {day_words(day)}?"]
    )  # fmt: skip
    others = [c for c in cities if c != best]
    any_city = "|".join(re.escape(c) for c in cities)
    other_city = "|".join(re.escape(c) for c in others)
    return Draft(
        goal=goal,
        criteria=[
            answer(contains=[best]),
            # the others may be named in comparison ("ahead of Kyoto (18)"), not as the answer
            # ("the warmest is Kyoto", "that's Kyoto") or beside it in a hedge ("Sydney or
            # Tokyo"); the best is not called cooler
            CompositeCriterion(
                kind="not",
                id="no_other_city",
                criteria=[
                    answer(
                        id="other",
                        pattern=rf"\b(?:{other_city})\b[^.;,]*\b(?:is|will be|'ll be)\b[^.;,]*\bwarm"
                        rf"|\b(?:{any_city})\s*(?:or|/)\s*(?:{any_city})\b|^\W*(?:{other_city})\b"
                        rf"|\bwarmest\b[^.;,]*?(?:\bis|\bwill be|'s|:|\s-|–|\bthat's)\s+(?:in\s+)?(?:{other_city})\b"
                        rf"|\b(?:{re.escape(best)})\b[^.;,]*\b(?:cooler|colder|chillier)\b",
                    )
                ],
            ),
            delegated("weather.forecast"),
            not_itself("weather.forecast"),
            # every city's forecast read (by a sub-agent): one alone is a guess
            *(
                behavior("required_call", "weather.forecast", id=f"read:{c}", arguments={"city": {"iequals": c}})
                for c in cities
            ),
        ],
        milestones=[delegated("weather.forecast")],
        plan=plan,
        probes=[
            passes("with the temperature", finishing(plan, f"{best}, with a high of {degrees(w, highs[best]):g}.")),
            fails("the coldest", finishing(plan, f"{order[-1]} will be warmest.")),
            fails("a hedge", finishing(plan, f"{best} or {others[0]}.")),
            fails("another named the warmest", finishing(plan, f"The warmest is {others[0]}. {best} is cooler.")),
            fails("the best denied", finishing(plan, f"{best} isn't the warmest - that's {others[0]}.")),
            passes(
                "compared with the others",
                finishing(
                    plan,
                    f"{best} will be warmest at {degrees(w, highs[best]):g}, ahead of {others[0]} "
                    f"({degrees(w, highs[others[0]]):g}) and {others[1]} ({degrees(w, highs[others[1]]):g}).",
                ),
            ),
            fails("only the last city read", [plan[0], *plan[-4:]]),
        ],
    )


@template(
    "travel_subagent.two_city_hotels",
    apps=["travel", "mail", AGENT_APP],
    domain=TRAVEL,
    category=SUBAGENT,
    difficulty=4,
    capabilities=["delegate", "search", "book", "multi-entity"],
    count=COUNT,
    max_steps=30,
)
def two_city_hotels(w: World) -> Draft:
    """Template ``travel_subagent.two_city_hotels``: "I'm in Paris Monday and Tuesday night, then
    Amsterdam Wednesday and Thursday night: book the cheapest hotel rated 4 or more in each": a
    sub-agent finds each city's hotel, the planner books both."""
    a, b = w.rng.sample(destinations(w), 2)
    start = trip_day(w, 3, 15)
    na, nb = w.rng.choice([1, 2, 3]), w.rng.choice([1, 2, 3])
    second = start + dt.timedelta(days=na)
    picks = []
    for city in (a, b):
        hotels = seed_hotels(w, city, 5)
        good = [h for h in hotels if h["rating"] >= 4.0] or [hotels[0]]
        good[0]["rating"] = max(good[0]["rating"], 4.1)
        picks.append((min(good, key=lambda h: h["price_per_night"]), hotels))
    (ha, _all_a), (hb, all_b) = picks
    plan: list[ToolCall] = []
    for city, day, n, h in ((a, start, na, ha), (b, second, nb, hb)):
        plan += delegate_steps(
            f"Find the cheapest hotel in {city} rated 4.0 or more for {n} nights from {day.isoformat()}. Tell me its id, "
            "name and total price.",
            ["travel.search_hotels"],
            [call("travel.search_hotels", city=city, check_in=day.isoformat(), nights=n, min_rating=4.0)],
            f"{h['id']} {h['name']}: {w.money(round(h['price_per_night'] * n, 2))}",
        )
    plan += [
        call("travel.book_hotel", hotel_id=ha["id"], check_in=start.isoformat(), nights=na),
        call("travel.book_hotel", hotel_id=hb["id"], check_in=second.isoformat(), nights=nb),
        call("finish", answer=f"Booked {ha['name']} in {a} and {hb['name']} in {b}."),
    ]
    night = lambda n: "one night" if n == 1 else f"{n} nights"  # noqa: E731
    goal = w.rng.choice(
        [f"I'm in {a} for {night(na)} from {day_words(start)}, then {b} for {night(nb)}. Book the cheapest hotel "
         "rated 4 or better in each city.",
         f"Hotels please: {a} from {day_words(start)} ({night(na)}), then straight on to {b} ({night(nb)}). In both, "
         "the cheapest one with a rating of at least 4."]
    )  # fmt: skip
    dear = max((h for h in all_b if h["id"] != hb["id"]), key=lambda h: h["price_per_night"])
    return Draft(
        goal=goal,
        criteria=[
            suffixed(booked(ha, "hotel", nights=na, start={"startswith": start.isoformat()}), a),
            suffixed(booked(hb, "hotel", nights=nb, start={"startswith": second.isoformat()}), b),
            state("mail.messages", "created", folder="inbox", subject={"icontains": "confirmed"}, count=2),
            delegated("travel.search_hotels"),
            not_itself("travel.search_hotels"),
        ],
        milestones=[delegated("travel.search_hotels")],
        plan=plan,
        probes=[
            fails("second stay from the first day", replacing(plan, -2, call("travel.book_hotel", hotel_id=hb["id"],
                                                                             check_in=start.isoformat(), nights=nb))),
            fails("a dearer hotel", replacing(plan, -2, call("travel.book_hotel", hotel_id=dear["id"],
                                                             check_in=second.isoformat(), nights=nb))),
            passes("booked in the other order", [*plan[:-3], plan[-2], plan[-3], plan[-1]]),
        ],
    )  # fmt: skip


@template(
    "travel_subagent.landing_brief",
    apps=["travel", "weather", "contacts", "messages", AGENT_APP],
    domain=TRAVEL,
    category=SUBAGENT,
    difficulty=4,
    capabilities=["delegate", "lookup", "send"],
    count=COUNT,
    max_steps=30,
)
def landing_brief(w: World) -> Draft:
    """Template ``travel_subagent.landing_brief``: "Text Ana when my flight to Lisbon lands and
    what the weather will be there": one sub-agent reads the booking, another the forecast; the
    planner texts the local landing time and the condition."""
    dest = w.rng.choice(destinations(w, flight=True))
    day = trip_day(w, 1, 5)
    flights = seed_route(w, dest, day, "flights", 3)
    flight = w.rng.choice(flights)
    bk = add_booking(w, flight, "flight")
    seed_weather(w, [dest])
    land_day = dt.date.fromisoformat(flight["arrives"][:10])
    fc = forecast_day(w, dest, land_day)
    c = w.rng.choice(w.contacts)
    first = first_name(c)
    lands = hm(flight["arrives"])
    body = f"I land in {dest} at {lands} local time. Weather there: {fc['condition']}."
    plan: list[ToolCall] = [
        *delegate_steps(
            f"When does my booked flight to {dest} land (local time there), and on which date?",
            ["travel.list_bookings", "travel.get_booking"],
            [call("travel.list_bookings", kind="flight", status="confirmed")],
            f"{bk['title']} lands {flight['arrives'][:10]} at {lands} ({flight['destination_tz']}).",
        ),
        *delegate_steps(
            f"What is the forecast condition in {dest} on {land_day.isoformat()}?",
            ["weather.forecast"],
            [call("weather.forecast", city=dest, days=1, start_date=land_day.isoformat())],
            f"{fc['condition']}",
        ),
        call("contacts.search", query=first),
        call("messages.send", to=c["phone"], body=body),
        call("finish", answer=f"Told {first}: {body}"),
    ]
    goal = w.rng.choice(
        [f"Text {first} what time my flight to {dest} lands and what the weather will be like there.",
         f"Let {first} know by text when I land in {dest} (their time) and the forecast for that day."]
    )  # fmt: skip
    home_time = hm(arrival_at_home(w, flight["arrives"], flight["destination_tz"]))
    h, m = (int(x) for x in lands.split(":"))
    twelve = f"{h % 12 or 12}:{m:02d} {'am' if h < 12 else 'pm'}"
    probes = [
        passes("12-hour time", replacing(plan, -2, call("messages.send", to=c["phone"],
               body=f"Landing {twelve}, and it'll be {fc['condition']} there."))),
        fails("someone else", replacing(plan, -2, call("messages.send", to=similar(w, c)["phone"], body=body))),
        fails("departure time", replacing(plan, -2, call("messages.send", to=c["phone"],
              body=f"I leave at {hm(flight['departs'])}. Weather there: {fc['condition']}."))),
        fails("the weather denied", replacing(plan, -2, call("messages.send", to=c["phone"],
              body=f"I land in {dest} at {lands} local time. No {fc['condition']} expected."))),
    ]  # fmt: skip
    if home_time != lands:
        probes.append(
            fails("landing in the phone's time", replacing(plan, -2, call("messages.send", to=c["phone"],
                  body=f"I land at {home_time}. Weather: {fc['condition']}.")))
        )  # fmt: skip
    return Draft(
        goal=goal,
        criteria=[
            state(
                "messages.messages",
                "created",
                number={"person": c["id"]},
                direction="out",
                body={"states": {"time": lands}, "says": fc["condition"]},
            ),
            delegated("travel.list_bookings"),
            delegated("weather.forecast"),
            not_itself("weather.forecast"),
            not_itself("travel.list_bookings"),
        ],
        milestones=[delegated("travel.list_bookings"), delegated("weather.forecast")],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 2}.body", f"{len(plan) - 1}.answer", f"{len(plan) - 3}.query"],
        probes=probes,
    )
