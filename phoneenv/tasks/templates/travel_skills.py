"""Skills templates for travel, maps and weather: the procedure lives only in a shipped skill.

| template | skill | the rule the goal does not state |
|---|---|---|
| ``travel_skills.trip_in_calendar`` | ``trip-in-calendar`` | ``Trip: `` title, times in the phone's zone, origin code, notes with code and local arrival |
| ``travel_skills.plan_a_trip`` | ``plan-a-trip`` | cheapest flights, cheapest hotel rated 4.0+, booked out, hotel, back |
| ``travel_skills.share_my_eta`` | ``share-my-eta`` | transit from here, ``[ETA]`` text, sharing rounded up to 15 minutes |
| ``travel_skills.weather_briefing`` | ``weather-briefing`` | a three-day note with fixed title and line format, in the phone's units |
"""

from __future__ import annotations

import datetime as dt
import math
import re

from apps.maps.templates import MEETINGS
from apps.messages.templates import similar
from apps.travel.templates import booked, day_words, hm, trip_day
from apps.weather.templates import degrees, imperial
from phoneenv.contract import Category, CompositeCriterion, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer,
    answer_if_said,
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
from phoneenv.tasks.templates.skills import read_skill
from phoneenv.tasks.templates.travel_seed import (
    LOCATION,
    add_booking,
    arrival_at_home,
    destinations,
    home,
    seed_hotels,
    seed_maps,
    seed_route,
    seed_weather,
    street_minutes,
)
from phoneenv.tasks.world import World

SKILLS = Category.SKILLS
TRAVEL = Domain.TRAVEL
COUNT = 12


@template(
    "travel_skills.trip_in_calendar",
    apps=["travel", "calendar"],
    domain=TRAVEL,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "format", "timezone", "create"],
    count=COUNT,
)
def trip_in_calendar(w: World) -> Draft:
    """Template ``travel_skills.trip_in_calendar``: "Add my flight to London to the calendar the
    usual way": skill ``trip-in-calendar`` fixes title, zone conversion, location and notes."""
    kind = "flights" if w.index % 3 else "trains"
    dest = w.rng.choice(destinations(w, flight=kind == "flights", train=kind == "trains"))
    day = trip_day(w)
    conns = seed_route(w, dest, day, kind, 3)
    conn = w.rng.choice(conns)
    bk = add_booking(w, conn, kind[:-1])
    start = conn["departs"]
    end = arrival_at_home(w, conn["arrives"], conn["destination_tz"])
    title = f"Trip: {bk['title']}"
    notes = f"Booking {bk['code']}. Arrives {hm(conn['arrives'])} local time ({conn['destination_tz']})"
    read, milestone = read_skill("trip-in-calendar")
    plan = [
        read,
        call("travel.list_bookings", status="confirmed"),
        call("calendar.create_event", title=title, start=start, end=end, location=conn["origin_code"], notes=notes),
        call("finish", answer=f"Added {title}."),
    ]
    what = "flight" if kind == "flights" else "train"
    goal = w.rng.choice(
        [f"Put my {what} to {dest} on {day_words(day)} in my calendar, the way I always do trips.",
         f"Add my {dest} {what} to the calendar in my usual trip format."]
    )  # fmt: skip
    probes = [
        passes("opened the booking too", [*plan[:2], call("travel.get_booking", booking_id=bk["id"]), *plan[2:]]),
        fails("plain title", replacing(plan, 2, call("calendar.create_event", title=f"Flight to {dest}", start=start,
                                                     end=end, location=conn["origin_code"], notes=notes))),
        fails("no booking code", replacing(plan, 2, call("calendar.create_event", title=title, start=start, end=end,
                                                         location=conn["origin_code"]))),
        fails("told another departure", finishing(plan, f"Added {title}, departing {(int(hm(start)[:2]) + 1) % 24:02d}{hm(start)[2:]}.")),
        passes("told the departure", finishing(plan, f"Added {title}, departing {hm(start)}, arriving {hm(conn['arrives'])} local time.")),
        passes("notes on two lines", replacing(plan, 2, call("calendar.create_event", title=title, start=start, end=end,
                                                             location=conn["origin_code"], notes=notes.replace(". ", ".\n")))),
    ]  # fmt: skip
    if end != conn["arrives"]:
        probes.append(
            fails("ticket's arrival time as the end", replacing(plan, 2, call("calendar.create_event", title=title,
                  start=start, end=conn["arrives"], location=conn["origin_code"], notes=notes)))
        )  # fmt: skip
    return Draft(
        goal=goal,
        criteria=[
            state(
                "calendar.events",
                "created",
                title=title,
                start=start,
                end=end,
                location=conn["origin_code"],
                # the code, the arrival and its zone, on one line or several
                notes={
                    "regex": "(?s)"
                    + "".join(
                        f"(?=.*{re.escape(x)})" for x in (bk["code"], hm(conn["arrives"]), conn["destination_tz"])
                    )
                },
            ),
            # a time told is the departure (the end at home or the local arrival may be said beside it)
            answer_if_said("time", hm(start), also=[hm(end), hm(conn["arrives"])]),
        ],
        milestones=[milestone],
        plan=plan,
        probes=probes,
    )


@template(
    "travel_skills.plan_a_trip",
    apps=["travel", "mail"],
    domain=TRAVEL,
    category=SKILLS,
    difficulty=4,
    capabilities=["skill", "search", "book", "multi-entity"],
    count=COUNT,
    max_steps=30,
)
def plan_a_trip(w: World) -> Draft:
    """Template ``travel_skills.plan_a_trip``: "Plan my trip to Lisbon from Friday to Monday":
    skill ``plan-a-trip`` says cheapest flights both ways and the cheapest hotel rated 4.0+."""
    here = home(w)
    dest = w.rng.choice(destinations(w, flight=True))
    out_day = trip_day(w, 3, 15)
    nights = w.rng.choice([2, 3, 4])
    back_day = out_day + dt.timedelta(days=nights)
    out = seed_route(w, dest, out_day, "flights", 4)
    back = seed_route(w, dest, back_day, "flights", 4, back=True)
    hotels = seed_hotels(w, dest, 6)
    good = [h for h in hotels if h["rating"] >= 4.0]
    if not good:
        hotels[0]["rating"] = 4.4
        good = [hotels[0]]
    hotel = min(good, key=lambda h: h["price_per_night"])
    f_out = min(out, key=lambda f: f["price"])
    f_back = min(back, key=lambda f: f["price"])
    read, milestone = read_skill("plan-a-trip")
    plan: list[ToolCall] = [
        read,
        call("travel.search_flights", origin=here.name, destination=dest, date=out_day.isoformat(), sort="price"),
        call("travel.book_flight", flight_id=f_out["id"]),
        call("travel.search_hotels", city=dest, check_in=out_day.isoformat(), nights=nights, min_rating=4.0,
             sort="price"),
        call("travel.book_hotel", hotel_id=hotel["id"], check_in=out_day.isoformat(), nights=nights),
        call("travel.search_flights", origin=dest, destination=here.name, date=back_day.isoformat(), sort="price"),
        call("travel.book_flight", flight_id=f_back["id"]),
        call("finish", answer=f"Booked {f_out['number']}, {hotel['name']} and {f_back['number']}."),
    ]  # fmt: skip
    goal = w.rng.choice(
        [f"Plan my trip to {dest}: out on {day_words(out_day)}, back on {day_words(back_day)}. Book everything.",
         f"I'm going to {dest} from {day_words(out_day)} to {day_words(back_day)}. Sort out the trip for me."]
    )  # fmt: skip
    earliest = min(out, key=lambda f: f["departs"])
    best = max(hotels, key=lambda h: h["rating"])
    probes = [
        passes("hotel first", [plan[0], *plan[3:5], *plan[1:3], *plan[5:]]),
    ]
    if earliest["id"] != f_out["id"]:
        probes.append(
            fails("earliest flight out", replacing(plan, 2, call("travel.book_flight", flight_id=earliest["id"])))
        )
    if best["id"] != hotel["id"]:
        probes.append(fails("best-rated hotel", replacing(plan, 4, call("travel.book_hotel", hotel_id=best["id"],
                                                                        check_in=out_day.isoformat(), nights=nights))))  # fmt: skip
    probes.append(fails("no return flight", replacing(plan, 6)))
    stay = round(hotel["price_per_night"] * nights, 2)
    parts = [f_out["price"], hotel["price_per_night"], stay, f_back["price"]]
    total = round(f_out["price"] + stay + f_back["price"], 2)
    cur = f_out["currency"]
    booked_numbers = {f_out["number"], f_back["number"]}
    other_flights = sorted({f["number"] for f in [*out, *back]} - booked_numbers)
    probes += [
        fails("named another flight", finishing(plan, f"Booked {f_out['number']}, {hotel['name']} and {other_flights[0]}.")),
        passes("told the total", finishing(plan, f"Booked {f_out['number']}, {hotel['name']} and {f_back['number']}: {total:.2f} {cur} in all.")),
        fails("told another total", finishing(plan, f"Booked {f_out['number']}, {hotel['name']} and {f_back['number']}: {total + 100:.2f} {cur} in all.")),
    ]  # fmt: skip
    return Draft(
        goal=goal,
        criteria=[
            suffixed(booked(f_out, "flight"), "out"),
            suffixed(booked(hotel, "hotel", nights=nights, start={"startswith": out_day.isoformat()}), "hotel"),
            suffixed(booked(f_back, "flight"), "back"),
            suffixed(
                state("mail.messages", "created", folder="inbox", subject={"icontains": "confirmed"}, count=3), "mailed"
            ),
            # an amount the answer tells is the trip's total or one of its prices
            answer_if_said("money", total, also=parts, currency=cur, tolerance=0.01),
            # and a flight it names is one booked
            CompositeCriterion(
                kind="not",
                id="answer:no_other_flight",
                criteria=[
                    CompositeCriterion(
                        kind="any_of", id="answer:names", criteria=[answer(contains=[n]) for n in other_flights]
                    )
                ],
            ),
        ],
        milestones=[milestone, booked(f_out, "flight")],
        plan=plan,
        probes=probes,
    )


@template(
    "travel_skills.share_my_eta",
    apps=["maps", "contacts", "messages"],
    domain=TRAVEL,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "route", "format", "send"],
    count=COUNT,
    max_steps=24,
)
def share_my_eta(w: World) -> Draft:
    """Template ``travel_skills.share_my_eta``: "Share my ETA to Cafe Luna with Ana": skill
    ``share-my-eta`` says transit from here, an ``[ETA]`` text and sharing rounded up to 15 min."""
    places = seed_maps(w)
    place = MEETINGS[w.index % len(MEETINGS)][0]
    poi = places[place]
    c = w.rng.choice(w.contacts)
    first = first_name(c)
    minutes = street_minutes(places["Home"], poi, "transit")
    arrive = (w.now + dt.timedelta(minutes=minutes)).strftime("%H:%M")
    share = max(15, math.ceil(minutes / 15) * 15)
    text = f"[ETA] Arriving at {place} at {arrive}"
    read, milestone = read_skill("share-my-eta")
    plan = [
        read,
        call("maps.search", query=place),
        call("maps.route", origin="here", destination=poi["id"], mode="transit"),
        call("contacts.search", query=first),
        call("messages.send", to=c["phone"], body=text),
        call("maps.share_location", to=c["phone"], minutes=share),
        call("finish", answer=f"Sent {first} your ETA ({arrive}) and shared your location for {share} minutes."),
    ]
    goal = w.rng.choice(
        [f"I'm heading to {place} now. Share my ETA with {first}.", f"Share my ETA to {place} with {first}, please."]
    )
    until = (w.now + dt.timedelta(minutes=share)).isoformat(timespec="minutes")
    drive = street_minutes(places["Home"], poi, "drive")
    probes = [
        passes("looked the person up first", [plan[0], plan[3], *plan[1:3], *plan[4:]]),
        fails("shared for the exact minutes", replacing(plan, 5, call("maps.share_location", to=c["phone"],
                                                                      minutes=max(15, minutes + 1)))),
        fails("someone else", replacing(plan, 4, call("messages.send", to=similar(w, c)["phone"], body=text))),
        fails("no location shared", replacing(plan, 5)),
    ]  # fmt: skip
    if drive != minutes:
        t = (w.now + dt.timedelta(minutes=drive)).strftime("%H:%M")
        probes.append(
            fails("by car", replacing(plan, 4, call("messages.send", to=c["phone"], body=f"[ETA] Arriving at {place} at {t}")))
        )  # fmt: skip
    if share == minutes + 1 or max(15, minutes + 1) == share:
        probes = [p for p in probes if p.name != "shared for the exact minutes"]
    return Draft(
        goal=goal,
        criteria=[
            state("messages.messages", "created", number={"person": c["id"]}, direction="out", body=text),
            state("maps.shares", "created", to={"person": c["id"]}, until=until),
        ],
        milestones=[milestone],
        plan=plan,
        fixtures=w.fixtures(permissions={"maps": {LOCATION: True}}),
        probes=probes,
    )


@template(
    "travel_skills.weather_briefing",
    apps=["weather", "notes"],
    domain=TRAVEL,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "format", "units", "create"],
    count=COUNT,
)
def weather_briefing(w: World) -> Draft:
    """Template ``travel_skills.weather_briefing``: "Make me a weather briefing for Paris from
    Thursday": skill ``weather-briefing`` fixes the note's title and line format (°F in the US)."""
    city = w.rng.choice([w.locale.city, *destinations(w)])
    seed_weather(w, [city])
    first = w.now.date() + dt.timedelta(days=w.rng.randrange(0, 4))
    unit = "°F" if imperial(w) else "°C"
    lines = []
    for i in range(3):
        day = first + dt.timedelta(days=i)
        r = next(x for x in w.table("weather.forecast") if x["city"] == city and x["date"] == day.isoformat())
        lines.append(
            f"{day.strftime('%A')} {day.isoformat()}: {r['condition']}, {degrees(w, r['low_c']):g} to "
            f"{degrees(w, r['high_c']):g} {unit}, rain {r['precip_chance']}%"
        )
    title = f"Weather: {city} {first.isoformat()}"
    body = "\n".join(lines)
    read, milestone = read_skill("weather-briefing")
    plan = [
        read,
        call("weather.forecast", city=city, days=3, start_date=first.isoformat()),
        call("notes.create", title=title, body=body),
        call("finish", answer=f"Saved {title}."),
    ]
    when = "today" if first == w.now.date() else day_words(first)
    goal = w.rng.choice(
        [
            f"Make me a weather briefing for {city} starting {when}.",
            f"Write up my weather briefing: {city}, from {when}.",
        ]
    )
    return Draft(
        goal=goal,
        criteria=[
            state(
                "notes.notes",
                "created",
                title=title,
                # the skill's lines exactly: each day once, in date order, no other line
                body={"regex": r"\A\s*" + r"[ \t]*\r?\n[ \t]*".join(re.escape(line) for line in lines) + r"\s*\Z"},
            ),
        ],
        milestones=[milestone],
        plan=plan,
        probes=[
            passes("a trailing newline", replacing(plan, 2, call("notes.create", title=title, body=body + "\n"))),
            fails("two days only", replacing(plan, 2, call("notes.create", title=title, body="\n".join(lines[:2])))),
            fails(
                "days out of order", replacing(plan, 2, call("notes.create", title=title, body="\n".join(lines[::-1])))
            ),
            fails(
                "another line", replacing(plan, 2, call("notes.create", title=title, body=body + "\nPack an umbrella!"))
            ),
            fails("another title", replacing(plan, 2, call("notes.create", title=f"{city} weather", body=body))),
        ],
    )
