"""Travel templates: book flights, trains and hotels, check in, cancel, and carry the times into
the calendar and messages in the right time zone.

Departure times are local at the origin and arrival times local at the destination; the
calendar runs on the phone's zone, so an event for a flight ends at the arrival converted to the
phone's time (:func:`~phoneenv.tasks.templates.travel_seed.arrival_at_home`).
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import Any

from apps.clock.templates import time_alone
from apps.messages.templates import looked_up, similar
from phoneenv.contract import CompositeCriterion, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer,
    answer_if_said,
    answer_time_if_said,
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
    suffixed,
    template,
)
from phoneenv.tasks.templates.travel_seed import (
    CITIES,
    add_booking,
    arrival_at_home,
    destinations,
    home,
    seed_flight,
    seed_hotels,
    seed_route,
)
from phoneenv.tasks.world import World

TRAVEL = Domain.TRAVEL


def day_words(day: dt.date) -> str:
    """``Thursday 3 December``."""
    return f"{day.strftime('%A')} {day.day} {day.strftime('%B')}"


def trip_day(w: World, lo: int = 3, hi: int = 20) -> dt.date:
    """A day ``lo`` to ``hi - 1`` days after the world's today (seeded from ``rng``)."""
    return w.now.date() + dt.timedelta(days=w.rng.randrange(lo, hi))


def other_seat_than(seat: str) -> str:
    """A regex for a seat ("15C") other than ``seat`` in a text; a terminal or gate ("Terminal
    4B") is no seat."""
    return rf"(?i)(?<!terminal )(?<!gate )\b(?!{seat}\b)\d{{1,2}}[A-K]\b"


def hm(local: str) -> str:
    """``HH:MM`` of a local ``YYYY-MM-DDTHH:MM``."""
    return local[11:16]


def mailed(subject: str, id: str = "mailed") -> Any:
    """The mail the travel app puts into the inbox (subject containing ``subject``)."""
    return suffixed(state("mail.messages", "created", folder="inbox", subject={"icontains": subject}), id)


def booked(item: dict[str, Any], kind: str, **where: Any) -> Any:
    """A confirmed booking of ``item`` created; a flight or a train for one passenger unless
    ``where`` says otherwise (every task books for the user: paying for more seats is wrong)."""
    if kind in ("flight", "train"):
        where.setdefault("passengers", 1)
    return state("travel.bookings", "created", item=item["id"], kind=kind, status="confirmed", **where)


def searched_for(tool: str, arg: str, value: str) -> Any:
    """Milestone: ``tool`` called with ``arg`` naming ``value`` (a city or its code)."""
    from phoneenv.tasks.templates.travel_seed import CITIES

    city = CITIES.get(value)
    names = [value] + ([city.airport, city.station] if city else [])
    return behavior(
        "required_call", tool, id=f"searched:{value}", arguments={arg: {"any": [{"iequals": n} for n in names]}}
    )


def confirm_step(w: World, plan: list[ToolCall], criteria: list[Any], tool: str, question: str, p: float = 0.5) -> str:
    """Half the worlds (``p``) want bookings confirmed: add the question and return the goal's
    extra sentence ("" otherwise)."""
    if confirm_variant(w, p):
        ask_first(plan, criteria, tool, question)
        return " Check with me before you pay."
    return ""


# -- flights into the calendar ---------------------------------------------------------------


@template(
    "travel.flight_to_calendar",
    apps=["travel", "calendar", "mail"],
    domain=TRAVEL,
    difficulty=3,
    capabilities=["search", "book", "create", "timezone"],
    count=12,
    max_steps=24,
)
def flight_to_calendar(w: World) -> Draft:
    """Template ``travel.flight_to_calendar``: "Book the cheapest flight from Berlin to Lisbon on
    Thursday 3 December and put it in my calendar": the event runs from the departure to the
    arrival, both in the phone's time (Lisbon's arrival is an hour later in Berlin)."""
    here = home(w)
    dest = w.rng.choice(destinations(w, flight=True))
    day = trip_day(w)
    flights = seed_route(w, dest, day, "flights", 4)
    (how,) = pick(w, ["cheapest", "earliest"])
    if how == "cheapest":
        target = min(flights, key=lambda f: f["price"])
        other = next(f for f in flights if f is not target)
    else:
        target = flights[0]
        other = min((f for f in flights if f is not target), key=lambda f: f["price"])
    end = arrival_at_home(w, target["arrives"], target["destination_tz"])
    title = f"Flight {target['number']} to {dest}"
    plan: list[ToolCall] = [
        call("travel.search_flights", origin=here.name, destination=dest, date=day.isoformat(), sort="price")
    ]
    criteria: list[Any] = []
    extra = confirm_step(w, plan, criteria, "travel.book_flight", f"Book {target['number']} for {target['price']}?")
    plan += [
        call("travel.book_flight", flight_id=target["id"]),
        call("calendar.create_event", title=title, start=target["departs"], end=end, location=here.airport),
        call("finish", answer=f"Booked {target['number']}, departing {hm(target['departs'])}; it's in your calendar."),
    ]
    event = {
        "start": target["departs"],
        "end": end,
        "title": {"any": [{"icontains": dest}, {"icontains": target["number"]}]},
    }
    criteria += [
        booked(target, "flight"),
        mailed("confirmed"),
        state("calendar.events", "created", **event),
        answer_time_if_said(hm(target["departs"]), also=sorted({hm(target["arrives"]), hm(end)})),
    ]
    goal = w.rng.choice(
        [
            f"Book the {how} flight from {here.name} to {dest} on {day_words(day)} and put it in my calendar.",
            f"I need to fly to {dest} on {day_words(day)}. Get me the {how} flight and add it to my calendar.",
        ]
    )
    book = len(plan) - 3
    ev = len(plan) - 2
    probes = [
        passes("searched by departure", replacing(plan, 0, call("travel.search_flights", origin=here.airport,
                                                               destination=CITIES[dest].airport, date=day.isoformat()))),
        passes("another title", replacing(plan, ev, call("calendar.create_event", title=f"Fly to {dest}",
                                                         start=target["departs"], end=end))),
        fails("the other flight", replacing(plan, book, call("travel.book_flight", flight_id=other["id"]))),
        fails("booked for two", replacing(plan, book, call("travel.book_flight", flight_id=target["id"], passengers=2))),
        fails("no calendar event", replacing(plan, ev)),
        fails("another departure told", finishing(plan, f"Booked {target['number']}, departing {hm(other['departs'])}.")),
    ]  # fmt: skip
    if end != target["arrives"]:
        probes.append(
            fails(
                "arrival left in the destination's time",
                replacing(plan, ev, call("calendar.create_event", title=title, start=target["departs"],
                                         end=target["arrives"])),
            )
        )  # fmt: skip
    return Draft(
        goal=goal + extra,
        criteria=criteria,
        milestones=[searched_for("travel.search_flights", "destination", dest), booked(target, "flight")],
        plan=plan,
        perturb_exempt=[f"{ev}.title", f"{ev}.location", f"{len(plan) - 1}.answer"],
        probes=probes,
    )


# -- trains: book and tell someone when you arrive ---------------------------------------------


@template(
    "travel.train_tell_arrival",
    apps=["travel", "contacts", "messages", "mail"],
    domain=TRAVEL,
    difficulty=3,
    capabilities=["search", "book", "lookup", "send"],
    count=12,
    max_steps=24,
)
def train_tell_arrival(w: World) -> Draft:
    """Template ``travel.train_tell_arrival``: "Book the first train to Hamburg after 14:00 on
    Friday and text Ana when I get in": the text states the arrival time (local there)."""
    here = home(w)
    dest = w.rng.choice(destinations(w, train=True))
    day = trip_day(w)
    trains = seed_route(w, dest, day, "trains", 4)
    cut = trains[1]["departs"][11:13]
    after = f"{int(cut):02d}:00"
    target = next(t for t in trains if hm(t["departs"]) >= after)
    wrong = next(t for t in trains if t is not target)
    (c,) = w.pick("contacts.contacts")
    first = first_name(c)
    plan: list[ToolCall] = [
        call("travel.search_trains", origin=here.name, destination=dest, date=day.isoformat()),
    ]
    criteria: list[Any] = []
    extra = confirm_step(w, plan, criteria, "travel.book_train", f"Book {target['number']} at {hm(target['departs'])}?")
    arrives = hm(target["arrives"])
    plan += [
        call("travel.book_train", train_id=target["id"]),
        call("contacts.search", query=first),
        *([call("user.confirm", question=f"Text {first} the arrival time?")] if w.confirm_sensitive else []),
        call("messages.send", to=c["phone"], body=f"My train gets into {dest} at {arrives}."),
        call(
            "finish", answer=f"Booked {target['number']} at {hm(target['departs'])}, arriving {arrives}; told {first}."
        ),
    ]
    criteria += [
        booked(target, "train"),
        mailed("confirmed"),
        # the arrival time, the departure time at most beside it (not as the arrival), no other day
        state("messages.messages", "created", number={"person": c["id"]}, direction="out",
              body={"states": {"time": {"value": arrives, "context": [hm(target["departs"])]}},
                    "consistent": {"date": day.isoformat()},
                    "not": {"regex": arriving_at(hm(target["departs"]))}}),
        answer_time_if_said(arrives, also=[hm(target["departs"])]),
    ]  # fmt: skip
    goal = w.rng.choice(
        [
            f"Book me the first train to {dest} leaving after {after} on {day_words(day)}, and text {first} when I arrive.",
            f"Get me on the earliest train from {here.name} to {dest} after {after} on {day_words(day)}, then let "
            f"{first} know by text what time I get in.",
        ]
    )
    send = len(plan) - 2
    book = send - 2 - int(w.confirm_sensitive)
    return Draft(
        goal=goal + extra,
        criteria=criteria,
        milestones=[booked(target, "train"), looked_up(first)],
        plan=plan,
        perturb_exempt=["0.origin", f"{send}.body", f"{len(plan) - 1}.answer", f"{book + 1}.query"],
        probes=[
            passes("12-hour time", replacing(plan, send, call("messages.send", to=c["phone"],
                                                              body=f"Arriving {dest} {_twelve(arrives)}"))),
            fails("another train", replacing(plan, book, call("travel.book_train", train_id=wrong["id"]))),
            fails("departure time sent", replacing(plan, send, call("messages.send", to=c["phone"],
                                                                    body=f"My train leaves at {hm(target['departs'])}."))),
            fails("texted someone else", replacing(plan, send, call("messages.send", to=similar(w, c)["phone"],
                                                                    body=f"Arriving at {arrives}."))),
            passes("both times, labelled", replacing(plan, send, call("messages.send", to=c["phone"],
                   body=f"Leaving at {hm(target['departs'])}, arriving in {dest} at {arrives}."))),
            fails("the times swapped", replacing(plan, send, call("messages.send", to=c["phone"],
                  body=f"Leaving at {arrives}, arriving at {hm(target['departs'])}."))),
            fails("hedged the arrival", replacing(plan, send, call("messages.send", to=c["phone"],
                  body=f"Arriving at {arrives} or {hm(wrong['arrives'])}."))),
            fails("corrected to another time", replacing(plan, send, call("messages.send", to=c["phone"],
                  body=f"Arriving at {arrives}. Correction: arriving at {hm(wrong['arrives'])}."))),
            passes("reaching, then leaving", replacing(plan, send, call("messages.send", to=c["phone"],
                   body=f"Reaching {dest} at {_twelve(arrives)}, leaving {here.name} at {hm(target['departs'])}."))),
            fails("the arrival denied", replacing(plan, send, call("messages.send", to=c["phone"],
                  body=f"My train won't get in at {arrives}."))),
            passes("not in until", replacing(plan, send, call("messages.send", to=c["phone"],
                   body=f"I won't be in {dest} until {arrives}."))),
            fails("another day", replacing(plan, send, call("messages.send", to=c["phone"],
                  body=f"Arriving at {arrives} on {(day + dt.timedelta(days=1)).strftime('%A')}."))),
            fails("the wrong arrival told to the user", finishing(plan, f"Booked; arriving {hm(wrong['arrives'])}.")),
            fails("booked for two", replacing(plan, book, call("travel.book_train", train_id=target["id"], passengers=2))),
        ],
    )  # fmt: skip


def arriving_at(hhmm: str) -> str:
    """A regex: the text gives ``hhmm`` as the arrival ("arriving 16:05", "gets in at 4:05 pm",
    "arrives in Canberra at 16:05"), alone (not "16:05 or 16:35"); other times may stand beside it."""
    h, m = (int(x) for x in hhmm.split(":"))
    return rf"(?:\barriv\w*|\bgets?\s+in\w*|\bland\w*)\W+(?:\w+\W+){{0,3}}?(?:{time_alone(h, m)})"


def _twelve(hhmm: str) -> str:
    h, m = (int(x) for x in hhmm.split(":"))
    return f"{h % 12 or 12}:{m:02d} {'am' if h < 12 else 'pm'}"


# -- hotels -------------------------------------------------------------------------------------


@template(
    "travel.book_hotel",
    apps=["travel", "mail"],
    domain=TRAVEL,
    difficulty=2,
    capabilities=["search", "filter", "book"],
    count=12,
)
def book_hotel(w: World) -> Draft:
    """Template ``travel.book_hotel``: "Book the cheapest hotel in Lisbon rated 4 or better for 3
    nights from Friday": the cheapest among those rated high enough (a cheaper one rates lower)."""
    dest = w.rng.choice(destinations(w))
    day = trip_day(w)
    hotels = seed_hotels(w, dest, 6)
    ratings = sorted({h["rating"] for h in hotels})
    floor = ratings[len(ratings) // 2]
    ok = [h for h in hotels if h["rating"] >= floor]
    target = min(ok, key=lambda h: h["price_per_night"])
    cheaper = [h for h in hotels if h["price_per_night"] < target["price_per_night"]]
    if not cheaper:  # a cheaper hotel rated too low, so ignoring the rating books the wrong one
        low = min((h for h in hotels if h["rating"] < floor), key=lambda h: h["price_per_night"])
        low["price_per_night"] = float(round(target["price_per_night"] * 0.8))
        cheaper = [low]
    nights = w.rng.choice([2, 3, 4, 5])
    plan: list[ToolCall] = [
        call("travel.search_hotels", city=dest, check_in=day.isoformat(), nights=nights, min_rating=floor)
    ]
    criteria: list[Any] = []
    extra = confirm_step(w, plan, criteria, "travel.book_hotel", f"Book {target['name']}?")
    plan += [
        call("travel.book_hotel", hotel_id=target["id"], check_in=day.isoformat(), nights=nights),
        call("finish", answer=f"Booked {target['name']} for {nights} nights."),
    ]
    criteria += [booked(target, "hotel", nights=nights, start={"startswith": day.isoformat()}), mailed("confirmed")]
    goal = w.rng.choice(
        [
            f"Book the cheapest hotel in {dest} rated {floor} or better, {nights} nights from {day_words(day)}.",
            f"Find me a hotel in {dest} for {nights} nights starting {day_words(day)}: at least {floor} stars in "
            f"reviews, as cheap as possible, and book it.",
        ]
    )
    book = len(plan) - 2
    probes = [
        passes("filtered by hand", replacing(plan, 0, call("travel.search_hotels", city=dest,
                                                           check_in=day.isoformat(), nights=nights))),
        fails("one night short", replacing(plan, book, call("travel.book_hotel", hotel_id=target["id"],
                                                            check_in=day.isoformat(), nights=nights - 1))),
        fails("the day after", replacing(plan, book, call("travel.book_hotel", hotel_id=target["id"],
                                                          check_in=(day + dt.timedelta(days=1)).isoformat(),
                                                          nights=nights))),
    ]  # fmt: skip
    if cheaper:  # always, see above
        probes.append(
            fails("cheaper but rated too low", replacing(plan, book, call("travel.book_hotel", hotel_id=cheaper[0]["id"],
                                                                          check_in=day.isoformat(), nights=nights)))
        )  # fmt: skip
    return Draft(
        goal=goal + extra,
        criteria=criteria,
        milestones=[searched_for("travel.search_hotels", "city", dest)],
        plan=plan,
        probes=probes,
    )


# -- check in and forward the boarding pass ----------------------------------------------------

SEATS = {"window": "AF", "aisle": "CD"}


def upcoming_flight(w: World, hours: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A booked flight from home departing ``hours`` hours from now (check-in is open), beside
    two other flights the same day; returns (flight, booking)."""
    dest = w.rng.choice(destinations(w, flight=True))
    departs = w.now + dt.timedelta(hours=hours)
    departs = departs.replace(minute=departs.minute - departs.minute % 5)
    seed_route(w, dest, departs.date(), "flights", 2, extra_days=False)
    flight = seed_flight(w, dest, departs)
    return flight, add_booking(w, flight, "flight")


@template(
    "travel.check_in_forward",
    apps=["travel", "mail", "contacts"],
    domain=TRAVEL,
    difficulty=3,
    capabilities=["lookup", "update", "send"],
    count=12,
    max_steps=24,
)
def check_in_forward(w: World) -> Draft:
    """Template ``travel.check_in_forward``: "Check me in for tomorrow's flight, a window seat in
    row 14, and mail the boarding pass to Ana": the seat is a window one in that row, the boarding
    pass mail forwarded to the contact's address."""
    flight, bk = upcoming_flight(w, w.rng.randrange(5, 26))
    side = w.rng.choice(sorted(SEATS))
    row = w.rng.randrange(3, 30)
    seat = f"{row}{SEATS[side][0]}"
    c = w.rng.choice([p for p in w.contacts if p["email"]])
    first = first_name(c)
    pass_subject = f"Boarding pass: {bk['title']}, seat {seat}"
    plan = [
        call("travel.list_bookings", status="confirmed", kind="flight"),
        call("travel.check_in", booking_id=bk["id"], seat=seat),
        call("mail.search", query="Boarding pass"),
        call("contacts.search", query=first),
        call("mail.send", to=[c["email"]], subject=f"Fwd: {pass_subject}", body=f"My boarding pass: {bk['title']}, seat {seat}, departs {hm(flight['departs'])}."),
        call("finish", answer=f"Checked in, seat {seat}; boarding pass sent to {first}."),
    ]  # fmt: skip
    where = f"to {flight['destination']}"
    goal = w.rng.choice(
        [
            f"Check me in for my flight {where}, {side} seat in row {row}, and e-mail the boarding pass to {first}.",
            f"Do the online check-in for my flight {where} - I want {'an' if side == 'aisle' else 'a'} {side} seat, row {row} - then send {first} "
            f"the boarding pass by mail.",
        ]
    )
    other_seat = f"{row}{SEATS['aisle' if side == 'window' else 'window'][0]}"
    departs = dt.datetime.fromisoformat(flight["departs"])
    times = [f"{t:%H:%M}" for t in (departs, departs - dt.timedelta(minutes=40))] + [
        bk["end"][11:16]
    ]  # boarding 40 min before
    twin = f"{row}{SEATS[side][1]}"  # the other seat on the asked side
    late = f"{departs + dt.timedelta(hours=2):%H:%M}"  # a departure two hours off

    def checked_in(s: str) -> list[ToolCall]:
        return replacing(plan, 1, call("travel.check_in", booking_id=bk["id"], seat=s))

    def mailing(body: str, base: list[ToolCall] = plan, subject: str = seat) -> list[ToolCall]:
        """``base`` with the pass mailed to the contact as ``body`` (subject naming seat ``subject``)."""
        sent = call(
            "mail.send", to=[c["email"]], subject=f"Fwd: Boarding pass: {bk['title']}, seat {subject}", body=body
        )
        return replacing(base, 4, sent)

    return Draft(
        goal=goal,
        criteria=[
            state(
                "travel.bookings", "updated", id=bk["id"], checked_in=True, seat={"regex": f"^{row}[{SEATS[side]}]$"}
            ),
            mailed("Boarding pass"),
            # the pass mailed: it names the seat checked in (or the flight) and no other seat, and
            # any time it gives is the departure, boarding or arrival
            CompositeCriterion(
                kind="any_of",
                id="created:mail.messages",
                criteria=[
                    CompositeCriterion(
                        kind="all_of",
                        id=f"pass:{s}",
                        criteria=[
                            state("travel.bookings", "updated", id=bk["id"], seat=s),
                            state(
                                "mail.messages",
                                "created",
                                folder="sent",
                                to={"has_person": c["id"]},
                                body={
                                    "any": [{"icontains": s}, {"icontains": bk["title"].split(" → ")[0]}],
                                    "not": {"regex": other_seat_than(s)},
                                    "consistent": {"time": times},
                                },
                            ),
                            # nor does the answer tell another seat
                            CompositeCriterion(
                                kind="not",
                                id=f"answer:not_another_seat:{s}",
                                criteria=[answer(pattern=other_seat_than(s))],
                            ),
                        ],
                    )
                    for s in (f"{row}{letter}" for letter in SEATS[side])
                ],
            ),
            answer_if_said("time", times[0], also=times[1:]),  # a time told is the flight's
        ],
        milestones=[
            behavior("required_call", "travel.check_in", arguments={"booking_id": bk["id"]}),
            looked_up(first),
        ],
        plan=plan,
        perturb_exempt=["4.subject", "4.body", "5.answer"],
        probes=[
            passes(
                "the other seat on that side, mailed",
                finishing(
                    mailing(f"My boarding pass: {bk['title']}, seat {twin}.", checked_in(twin), subject=twin),
                    f"Checked in, seat {twin}; boarding pass sent to {first}.",
                ),
            ),
            fails("the other seat on that side, the first one mailed", checked_in(twin)),
            fails(
                "told another seat", finishing(plan, f"Checked in, seat {other_seat}; boarding pass sent to {first}.")
            ),
            fails(
                "told another departure", finishing(plan, f"Checked in, seat {seat}, departs {late}; sent to {first}.")
            ),
            fails("the wrong side", checked_in(other_seat)),
            fails("another row", checked_in(f"{row + 1}{SEATS[side][0]}")),
            fails("boarding pass not sent", replacing(plan, 4)),
            fails("mailed another seat", mailing(f"My boarding pass: {bk['title']}, seat {other_seat}.")),
            fails(
                "mailed another departure time",
                mailing(f"My boarding pass: {bk['title']}, seat {seat}, departs {late}."),
            ),
            passes(
                "forwarded the pass as it came",
                mailing(f"Boarding pass for {bk['title']}\nBoarding from {times[1]}\nSeat {seat}\nTerminal 4B"),
            ),
        ],
    )


# -- cancel and say what comes back ------------------------------------------------------------


@template(
    "travel.cancel_refund",
    apps=["travel", "mail"],
    domain=TRAVEL,
    difficulty=3,
    capabilities=["lookup", "delete", "answer", "confirm"],
    count=12,
)
def cancel_refund(w: World) -> Draft:
    """Template ``travel.cancel_refund``: "Cancel my hotel in Paris. How much do I get back?":
    a refund in full more than 24 hours ahead, nothing later (half the tasks each)."""
    dest = w.rng.choice(destinations(w))
    hotels = seed_hotels(w, dest, 3)
    h = hotels[0]
    nights = w.rng.choice([2, 3, 4])
    day = trip_day(w, 3, 15)
    if w.index % 2 == 1:  # odd tasks: check-in within the next 24 hours, too late for a refund
        now = w.now.replace(tzinfo=zoneinfo.ZoneInfo(w.timezone))
        for ahead in range(-1, 3):
            day = (now.astimezone(zoneinfo.ZoneInfo(h["timezone"])) + dt.timedelta(days=ahead)).date()
            start = dt.datetime.fromisoformat(f"{day.isoformat()}T{h['check_in_time']}")
            gap = start.replace(tzinfo=zoneinfo.ZoneInfo(h["timezone"])) - now
            if dt.timedelta(hours=1) < gap <= dt.timedelta(hours=24):
                break
        else:  # the check-in hour falls within the next hour: it is still a late cancellation
            day = (now.astimezone(zoneinfo.ZoneInfo(h["timezone"])) + dt.timedelta(days=1)).date()
    bk = add_booking(w, h, "hotel", nights=nights, check_in=day.isoformat())
    late = dt.datetime.fromisoformat(bk["start"]).replace(tzinfo=zoneinfo.ZoneInfo(h["timezone"])) - w.now.replace(
        tzinfo=zoneinfo.ZoneInfo(w.timezone)
    ) <= dt.timedelta(hours=24)
    other_dest = w.rng.choice([d for d in destinations(w) if d != dest])
    other = add_booking(
        w, seed_hotels(w, other_dest, 1)[0], "hotel", nights=2, check_in=trip_day(w, 20, 30).isoformat()
    )
    refund = 0.0 if late else bk["total"]
    plan = [call("travel.list_bookings", kind="hotel", status="confirmed")]
    criteria: list[Any] = [
        state("travel.bookings", "updated", id=bk["id"], status="cancelled"),
        mailed("Cancelled"),
        # the booking's total and nightly price may be said beside the refund as context
        answer(type="money", value=refund, currency=w.currency, context=[h["price_per_night"], bk["total"]]),
    ]
    extra = ""
    if confirm_variant(w, 0.5):
        ask_first(plan, criteria, "travel.cancel_booking", f"Cancel {bk['title']}?")
        extra = " Ask me before cancelling."
    plan += [
        call("travel.cancel_booking", booking_id=bk["id"]),
        call("finish", answer=f"Cancelled. Refund: {w.money(refund)}."),
    ]
    goal = w.rng.choice(
        [f"Cancel my hotel in {dest}. How much do I get back?", f"I'm not going to {dest} any more: cancel the hotel "
         f"there and tell me what the refund is."]
    )  # fmt: skip
    wrong = bk["total"] if late else 0.0
    return Draft(
        goal=goal + extra,
        criteria=criteria,
        milestones=[behavior("required_call", "travel.cancel_booking", arguments={"booking_id": bk["id"]})],
        plan=plan,
        probes=[
            passes("opened it first", [plan[0], call("travel.get_booking", booking_id=bk["id"]), *plan[1:]]),
            fails("the other hotel", replacing(plan, -2, call("travel.cancel_booking", booking_id=other["id"]))),
            fails("wrong refund", finishing(plan, f"Cancelled; you get {w.money(wrong)} back.")),
            passes(
                "with the nightly price",
                finishing(
                    plan, f"Cancelled the stay ({w.money(h['price_per_night'])} a night). Refund: {w.money(refund)}."
                ),
            ),
            fails("not cancelled", [plan[0], plan[-1]]),
            (
                passes(
                    "the total lost, nothing refunded",
                    finishing(plan, f"Cancelled. You lose the whole {w.money(bk['total'])} - nothing is refunded."),
                )
                if late
                else fails(
                    "paid the total, nothing back",
                    finishing(plan, f"Cancelled. You paid {w.money(bk['total'])} but get nothing back."),
                )
            ),
        ],
    )
