"""Restaurants templates: book a table and tell the party, move a booking (and its calendar
event), cancel one.

:func:`seed_restaurants` fills the guide (every restaurant of :data:`PLACES`, hours, a few
fully booked times) from the app's own stream; templates add the user's reservations.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.clock.templates import one_time, spoken
from apps.messages.templates import similar
from apps.restaurants import confirmation_code
from phoneenv.contract import Domain
from phoneenv.tasks.templates import (
    NOT_CANCELLED,
    Draft,
    answer_if_said,
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
from phoneenv.tasks.world import World

__all__ = ["PLACES", "add_reservation", "day_words", "open_at", "seed_restaurants", "table_time"]

# (name, cuisine, area, rating, price level, max party)
PLACES: list[tuple[str, str, str, float, int, int]] = [
    ("Trattoria Sole", "italian", "Old Town", 4.6, 2, 8),
    ("Osteria Verde", "italian", "Riverside", 4.3, 3, 6),
    ("Sakura Table", "japanese", "Old Town", 4.7, 3, 6),
    ("Ramen Kaze", "japanese", "University Quarter", 4.4, 1, 4),
    ("Le Petit Zinc", "french", "Riverside", 4.5, 4, 6),
    ("Bistro Marais", "french", "Market District", 4.2, 2, 10),
    ("Taj Garden", "indian", "Market District", 4.5, 2, 12),
    ("Spice Route", "indian", "Harbour", 4.1, 1, 8),
    ("El Patio", "spanish", "Harbour", 4.4, 2, 10),
    ("Green Leaf Kitchen", "vegetarian", "University Quarter", 4.6, 2, 8),
    ("Harbour Grill", "seafood", "Harbour", 4.3, 3, 8),
    ("Golden Dragon", "chinese", "Old Town", 4.2, 1, 12),
]
HOURS = [
    {"mon": "closed", "tue": "17:00-23:00", "wed": "17:00-23:00", "thu": "17:00-23:00", "fri": "12:00-23:30",
     "sat": "12:00-23:30", "sun": "12:00-22:00"},
    {"mon": "12:00-22:00", "tue": "12:00-22:00", "wed": "12:00-22:00", "thu": "12:00-22:00", "fri": "12:00-23:00",
     "sat": "12:00-23:00", "sun": "closed"},
    {d: "11:30-22:30" for d in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")},
]  # fmt: skip
DINNER = ["18:30", "19:00", "19:30", "20:00", "20:30"]
NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def seed_restaurants(w: World) -> dict[str, dict[str, Any]]:
    """Seed every restaurant of :data:`PLACES` (shuffled ids ``rs_1``..., hours, phone, a few
    full dinner times in the coming week) from stream ``restaurants``; returns them by name."""
    rng = w.stream("restaurants")
    order = list(range(len(PLACES)))
    rng.shuffle(order)
    out: dict[str, dict[str, Any]] = {}
    for k, i in enumerate(order, 1):
        name, cuisine, area, rating, level, party = PLACES[i]
        full = []
        for d in range(1, 8):
            day = w.now.date() + dt.timedelta(days=d)
            for t in rng.sample(DINNER, rng.choice([0, 1, 2])):
                full.append(f"{day.isoformat()}T{t}")
        out[name] = {
            "id": f"rs_{k}",
            "name": name,
            "cuisine": cuisine,
            "area": area,
            "rating": rating,
            "price_level": level,
            "address": f"{area} {rng.randrange(1, 90)}, {w.locale.city}",
            "phone": w.phone_number("landline", rng),
            "hours": dict(rng.choice(HOURS)),
            "max_party": party,
            "full": sorted(full),
        }
    w.table("restaurants.restaurants").extend(sorted(out.values(), key=lambda r: int(r["id"][3:])))
    return out


def open_at(r: dict[str, Any], when: dt.datetime) -> bool:
    """Whether ``r`` takes a table at ``when`` (open, 90 minutes before closing at the latest)."""
    hours = r["hours"][("mon", "tue", "wed", "thu", "fri", "sat", "sun")[when.weekday()]]
    if hours == "closed":
        return False
    a, b = hours.split("-")
    last = dt.datetime.combine(when.date(), dt.time.fromisoformat(b)) - dt.timedelta(minutes=90)
    return dt.datetime.combine(when.date(), dt.time.fromisoformat(a)) <= when <= last


def table_time(w: World, r: dict[str, Any], party: int, avoid: tuple[str, ...] = ()) -> dt.datetime:
    """A dinner time in the next week at which ``r`` is open, not full and not in ``avoid``."""
    while True:
        day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 8))
        when = dt.datetime.combine(day, dt.time.fromisoformat(w.rng.choice(DINNER)))
        text = when.isoformat(timespec="minutes")
        if open_at(r, when) and text not in r["full"] and text not in avoid and party <= r["max_party"]:
            return when


def add_reservation(w: World, r: dict[str, Any], when: dt.datetime, party: int) -> dict[str, Any]:
    """A confirmed reservation of the user's at ``r``."""
    text = when.isoformat(timespec="minutes")
    rec = {
        "id": w.next_id("restaurants.reservations", "res_"),
        "restaurant_id": r["id"],
        "restaurant": r["name"],
        "time": text,
        "party_size": party,
        "status": "confirmed",
        "code": confirmation_code(r["id"], text),
        "note": "",
    }
    w.table("restaurants.reservations").append(rec)
    return rec


def day_words(day: dt.date) -> str:
    """``Thursday 3 December``."""
    return f"{day.strftime('%A')} {day.day} {day.strftime('%B')}"


def _sms(c: dict[str, Any], **body: Any) -> Any:
    return state("messages.messages", "created", number={"person": c["id"]}, direction="out", body=body)


@template(
    "restaurants.book_table",
    apps=["restaurants", "contacts", "messages"],
    domain=Domain.FOOD,
    difficulty=3,
    capabilities=["search", "lookup", "book", "send"],
    count=12,
)
def book_table(w: World) -> Draft:
    """Template ``restaurants.book_table``: "Book a table for four at the Japanese place in the
    Old Town on Friday 6 November at 19:30 and text Ana the booking": the only restaurant of that
    cuisine in that area, a free time, then the text with the time and the booking code."""
    places = seed_restaurants(w)
    pairs: dict[tuple[str, str], list[str]] = {}
    for n, r in places.items():
        pairs.setdefault((r["cuisine"], r["area"]), []).append(n)
    cuisine, area = w.rng.choice(sorted(k for k, v in pairs.items() if len(v) == 1))
    r = places[pairs[(cuisine, area)][0]]
    (party,) = pick(w, [2, 3, 4])
    party = min(party, r["max_party"])
    when = table_time(w, r, party)
    text = when.isoformat(timespec="minutes")
    c = w.rng.choice(w.contacts)
    first = first_name(c)
    hhmm = text[11:]
    code = confirmation_code(r["id"], text)
    goal = w.rng.choice(
        [
            f"Book a table for {NUMBER_WORDS[party]} at the {cuisine.capitalize()} restaurant in {area} on "
            f"{day_words(when.date())} at {hhmm}, then text {first} the time and the booking code.",
            f"Get us a table for {NUMBER_WORDS[party]} at {hhmm} on {day_words(when.date())}, at the "
            f"{cuisine} place in {area}. Send {first} the time and the confirmation code afterwards.",
        ]
    )
    plan = [
        call("restaurants.search", cuisine=cuisine, area=area),
        call("restaurants.availability", restaurant_id=r["id"], date=text[:10], party_size=party),
        call("restaurants.reserve", restaurant_id=r["id"], time=text, party_size=party),
        call("contacts.search", query=first),
        call("messages.send", to=c["phone"], body=f"Table at {r['name']} on {text[:10]} at {hhmm}, code {code}."),
        call("finish", answer=f"Booked {r['name']} at {hhmm}, code {code}."),
    ]
    other = (
        when + dt.timedelta(minutes=30)
        if open_at(r, when + dt.timedelta(minutes=30))
        else when - dt.timedelta(minutes=30)
    )
    if other.isoformat(timespec="minutes") in r["full"]:
        r["full"].remove(other.isoformat(timespec="minutes"))
    h, m = int(hhmm[:2]), int(hhmm[3:])
    other_hhmm = other.isoformat(timespec="minutes")[11:]
    return Draft(
        goal=goal,
        criteria=[
            state(
                "restaurants.reservations",
                "created",
                restaurant_id=r["id"],
                time=text,
                party_size=party,
                status="confirmed",
            ),
            # The day need not be said, but a day said must be the booking's.
            _sms(c, icontains=code, consistent={"date": text[:10]}, **one_time(h, m)),
        ],
        milestones=[state("restaurants.reservations", "created", restaurant_id=r["id"], time=text), _sms(c)],
        plan=plan,
        perturb_exempt=["0.cuisine", "3.query", "4.body", "5.answer"],
        probes=[
            passes("searched by words", replacing(plan, 0, call("restaurants.search", query=f"{cuisine} {area}"))),
            passes("skipped the availability check", replacing(plan, 1)),
            fails(
                "the wrong time",
                replacing(
                    plan,
                    2,
                    call(
                        "restaurants.reserve",
                        restaurant_id=r["id"],
                        time=other.isoformat(timespec="minutes"),
                        party_size=party,
                    ),
                ),
            ),
            fails(
                "one seat short",
                replacing(plan, 2, call("restaurants.reserve", restaurant_id=r["id"], time=text, party_size=party - 1)),
            ),
            fails(
                "texted the wrong person",
                replacing(plan, 4, call("messages.send", to=similar(w, c)["phone"], body=plan[4].arguments["body"])),
            ),
            fails(
                "no code in the text",
                replacing(plan, 4, call("messages.send", to=c["phone"], body=f"Dinner at {hhmm}!")),
            ),
            fails(
                "hedged the time",
                replacing(plan, 4, call("messages.send", to=c["phone"], body=f"{hhmm} or {other_hhmm}, code {code}")),
            ),
            fails(
                "offered another time first",
                replacing(plan, 4, call("messages.send", to=c["phone"], body=f"{other_hhmm} or {hhmm}, code {code}")),
            ),
            passes(
                "12-hour time",
                replacing(
                    plan, 4, call("messages.send", to=c["phone"], body=f"See you at {spoken(hhmm)}! Code: {code}")
                ),
            ),
            passes(
                "the day in words",
                replacing(
                    plan,
                    4,
                    call("messages.send", to=c["phone"], body=f"{day_words(when.date())}, {hhmm} - code {code}"),
                ),
            ),
            fails(
                "the wrong day",
                replacing(
                    plan,
                    4,
                    call(
                        "messages.send",
                        to=c["phone"],
                        body=f"{day_words(when.date() + dt.timedelta(days=1))}, {hhmm} - code {code}",
                    ),
                ),
            ),
        ],
    )


@template(
    "restaurants.move_booking",
    apps=["restaurants", "calendar"],
    domain=Domain.FOOD,
    difficulty=3,
    capabilities=["lookup", "update", "reschedule"],
    count=12,
)
def move_booking(w: World) -> Draft:
    """Template ``restaurants.move_booking``: "Push my dinner at Trattoria Sole back to 20:30 and
    move it in my calendar too": the reservation changed, its calendar event moved by as much."""
    places = seed_restaurants(w)
    r = places[w.rng.choice(sorted(places))]
    party = min(w.rng.choice([2, 3, 4]), r["max_party"])
    when = table_time(w, r, party)
    res = add_reservation(w, r, when, party)
    later = [
        t
        for t in (when + dt.timedelta(minutes=k) for k in (30, 60, 90, -30, -60))
        if open_at(r, t) and t.isoformat(timespec="minutes") not in r["full"]
    ]
    new = later[w.index % len(later)]
    new_text = new.isoformat(timespec="minutes")
    ev = {
        "id": w.next_id("calendar.events", "ev_"),
        "title": f"Dinner at {r['name']}",
        "start": res["time"],
        "end": (when + dt.timedelta(hours=2)).isoformat(timespec="minutes"),
        "location": r["address"],
        "attendees": (),
        "notes": None,
        "all_day": False,
    }
    w.table("calendar.events").append(ev)
    new_end = (new + dt.timedelta(hours=2)).isoformat(timespec="minutes")
    goal = w.rng.choice(
        [
            f"Move my reservation at {r['name']} on {day_words(when.date())} to {new_text[11:]} and update the calendar entry to match.",
            f"Can you change the {r['name']} booking to {new_text[11:]} the same day? Fix my calendar too.",
        ]
    )
    plan = [
        call("restaurants.list_reservations"),
        call("restaurants.change_reservation", reservation_id=res["id"], time=new_text),
        call("calendar.search_events", query=r["name"]),
        call("calendar.update_event", event_id=ev["id"], start=new_text, end=new_end),
        call("finish", answer=f"Moved to {new_text[11:]}."),
    ]
    wrong = next(t for t in later if t != new).isoformat(timespec="minutes") if len(later) > 1 else None
    probes = [
        passes("calendar first", [plan[2], plan[3], plan[0], plan[1], plan[4]]),
        fails("the old time told", finishing(plan, f"Moved; see you at {when:%H:%M}.")),
        passes("from the old time to the new", finishing(plan, f"Moved from {when:%H:%M} to {new_text[11:]}.")),
        fails("calendar left as it was", replacing(plan, 3)),
        fails(
            "cancelled and rebooked elsewhere",
            replacing(plan, 1, call("restaurants.cancel_reservation", reservation_id=res["id"])),
        ),
        passes(
            "moved the start only (the event keeps its length)",
            replacing(plan, 3, call("calendar.update_event", event_id=ev["id"], start=new_text)),
        ),
    ]
    if wrong:
        probes.append(
            fails(
                "the wrong time",
                replacing(plan, 1, call("restaurants.change_reservation", reservation_id=res["id"], time=wrong)),
            )
        )
    return Draft(
        goal=goal,
        criteria=[
            state(
                "restaurants.reservations", "updated", id=res["id"], time=new_text, party_size=party, status="confirmed"
            ),
            state("calendar.events", "updated", id=ev["id"], start=new_text, end=new_end),
            # a time told is the new one ("moved from 19:00 to 20:00" names the old one as such)
            answer_if_said("time", new_text[11:]),
        ],
        milestones=[state("restaurants.reservations", "updated", id=res["id"], time=new_text)],
        plan=plan,
        probes=probes,
    )


@template(
    "restaurants.cancel_booking",
    apps=["restaurants", "contacts", "messages"],
    domain=Domain.FOOD,
    difficulty=2,
    capabilities=["lookup", "cancel", "send"],
    count=10,
)
def cancel_booking(w: World) -> Draft:
    """Template ``restaurants.cancel_booking``: two reservations; cancel the one at the named
    restaurant and text the friend it was with."""
    places = seed_restaurants(w)
    a, b = (places[n] for n in w.rng.sample(sorted(places), 2))
    ra = add_reservation(w, a, table_time(w, a, 2), 2)
    rb = add_reservation(w, b, table_time(w, b, 2, (ra["time"],)), 2)
    c = w.rng.choice(w.contacts)
    first = first_name(c)
    goal = w.rng.choice(
        [
            f"Cancel my table at {a['name']} and tell {first} by text that dinner is off.",
            f"Dinner at {a['name']} isn't happening: cancel the reservation and text {first} that it's cancelled.",
        ]
    )
    plan = [
        call("restaurants.list_reservations"),
        call("restaurants.cancel_reservation", reservation_id=ra["id"]),
        call("contacts.search", query=first),
        call("messages.send", to=c["phone"], body=f"I cancelled our table at {a['name']}, dinner is off."),
        call("finish", answer="Cancelled."),
    ]
    return Draft(
        goal=goal,
        criteria=[
            state("restaurants.reservations", "updated", id=ra["id"], status="cancelled"),
            # not a plan or a failure, and not about the other booking's restaurant
            _sms(
                c,
                regex=r"cancel|\boff\b|not happening",
                **{"not": {"any": [{"regex": NOT_CANCELLED}, {"says": b["name"]}]}},
            ),
        ],
        milestones=[state("restaurants.reservations", "updated", id=ra["id"], status="cancelled")],
        plan=plan,
        perturb_exempt=["2.query", "3.body", "4.answer"],
        probes=[
            passes(
                "read the booking first",
                [plan[0], call("restaurants.get_reservation", reservation_id=ra["id"]), *plan[1:]],
            ),
            fails(
                "the other booking cancelled",
                replacing(plan, 1, call("restaurants.cancel_reservation", reservation_id=rb["id"])),
            ),
            fails(
                "both cancelled",
                [*plan[:2], call("restaurants.cancel_reservation", reservation_id=rb["id"]), *plan[2:]],
            ),
            fails("nobody told", replacing(plan, 3)),
            behavior_probe(plan, c),
            fails(
                "says it could not be cancelled",
                replacing(
                    plan,
                    3,
                    call("messages.send", to=c["phone"], body=f"Couldn't cancel {a['name']}, dinner is still on"),
                ),
            ),
            fails(
                "the other restaurant named",
                replacing(
                    plan,
                    3,
                    call("messages.send", to=c["phone"], body=f"I cancelled our table at {b['name']}, dinner is off."),
                ),
            ),
            fails(
                "still to be cancelled",
                replacing(
                    plan,
                    3,
                    call(
                        "messages.send", to=c["phone"], body="Dinner's off - I still need to cancel the table though."
                    ),
                ),
            ),
            passes(
                "a question after",
                replacing(
                    plan,
                    3,
                    call(
                        "messages.send",
                        to=c["phone"],
                        body=f"Hi! I cancelled our table at {a['name']}, want to pick another night?",
                    ),
                ),
            ),
            passes(
                "not happening, cancelled",
                replacing(
                    plan, 3, call("messages.send", to=c["phone"], body="Dinner's not happening, I cancelled the table")
                ),
            ),
            passes(
                "called off",
                replacing(
                    plan,
                    3,
                    call(
                        "messages.send",
                        to=c["phone"],
                        body=f"{dt.datetime.fromisoformat(ra['time']):%A}'s dinner is called off, sorry!",
                    ),
                ),
            ),
        ],
    )


def behavior_probe(plan: list[Any], c: dict[str, Any]) -> Any:
    """A probe texting ``c`` something unrelated instead of the news."""
    return fails(
        "texted small talk", replacing(plan, 3, call("messages.send", to=c["phone"], body="How was your week?"))
    )
