"""Maps templates: when to leave for a meeting, saving and replacing places, sharing the phone's
location (behind the location permission), and the nearest place of a kind."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from apps.messages.templates import looked_up, similar
from phoneenv.contract import CompositeCriterion, Domain, ToolCall
from phoneenv.tasks.templates import (
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
from phoneenv.tasks.templates.travel_seed import LOCATION, seed_maps, street_minutes
from phoneenv.tasks.world import World

TRAVEL = Domain.TRAVEL
MODE_WORDS = {"drive": "drive", "transit": "take public transport", "walk": "walk", "bike": "cycle"}
MEETINGS = [("Trattoria Roma", "Lunch with {p}"), ("Cafe Luna", "Coffee with {p}"), ("City Library", "Study group"),
            ("Northwind Office", "Client meeting"), ("City Hospital", "Check-up"), ("Lakeside Park", "Run with {p}"),
            ("Oak Hill School", "Parent evening"), ("Bella Pizza", "Dinner with {p}")]  # fmt: skip


def trip_minutes(a: dict[str, Any], b: dict[str, Any], mode: str) -> int:
    """Minutes from place ``a`` to place ``b`` by ``mode`` (as the maps app computes them)."""
    return street_minutes(a, b, mode)


def searched(query: str) -> Any:
    """Milestone: a map search for ``query`` (case-insensitive part of the query)."""
    return behavior(
        "required_call", "maps.search", id=f"searched:{query}", arguments={"query": {"icontains": query.split()[0]}}
    )


def add_event(w: World, title: str, start: dt.datetime, minutes: int, location: str | None) -> dict[str, Any]:
    """Add a timed calendar event to the world; returns it."""
    ev = {
        "id": w.next_id("calendar.events", "ev_"),
        "title": title,
        "start": start.isoformat(timespec="minutes"),
        "end": (start + dt.timedelta(minutes=minutes)).isoformat(timespec="minutes"),
        "location": location,
        "attendees": (),
        "notes": None,
        "all_day": False,
    }
    w.table("calendar.events").append(ev)
    return ev


@template(
    "maps.leave_for_meeting",
    apps=["maps", "calendar", "clock"],
    domain=TRAVEL,
    difficulty=3,
    capabilities=["lookup", "route", "create", "answer"],
    count=12,
    max_steps=24,
)
def leave_for_meeting(w: World) -> Draft:
    """Template ``maps.leave_for_meeting``: "When do I have to leave home to drive to my lunch
    with Ana tomorrow? Set an alarm for then.": the meeting's place from the calendar, the trip
    from the map, the alarm at the start minus the travel time."""
    places = seed_maps(w)
    place, title = w.rng.choice(MEETINGS)
    (mode,) = pick(w, ["drive", "transit", "bike", "walk"])
    p = w.rng.choice([c for c in w.contacts if c["relation"] not in ("dentist", "landlord")])
    title = title.format(p=first_name(p))
    day = w.now.date() + dt.timedelta(days=1)
    start = dt.datetime.combine(day, dt.time(w.rng.randrange(10, 19), w.rng.choice([0, 15, 30, 45])))
    if title.startswith("Lunch"):  # lunch is at lunchtime, coffee not in the evening
        start = start.replace(hour=12)
    elif title.startswith("Coffee"):
        start = start.replace(hour=min(start.hour, 16))
    ev = add_event(w, title, start, 60, place)
    if first_name(p) in title:  # "Lunch with Ana": Ana is invited
        ev["attendees"] = (p["name"],)
    poi = places[place]
    minutes = trip_minutes(places["Home"], poi, mode)
    leave = (start - dt.timedelta(minutes=minutes)).strftime("%H:%M")
    plan = [
        call("calendar.search_events", query=title.split()[0]),
        call("maps.search", query=place),
        call("maps.route", origin="pl_1", destination=poi["id"], mode=mode, arrive_by=ev["start"]),
        call("clock.create_alarm", time=leave, label=title),
        call("finish", answer=f"Leave at {leave}; the alarm is set."),
    ]
    other = "walk" if mode != "walk" else "drive"
    wrong = (start - dt.timedelta(minutes=trip_minutes(places["Home"], poi, other))).strftime("%H:%M")
    goal = w.rng.choice(
        [
            f'When do I have to leave home to {MODE_WORDS[mode]} to "{title}" tomorrow and be there on time? '
            "Set an alarm for that time.",
            f'I want to {MODE_WORDS[mode]} from home to my "{title}" tomorrow. Work out when I need to leave, tell '
            "me, and put an alarm on for it.",
        ]
    )
    probes = [
        passes("travel times instead of a route", replacing(plan, 2, call("maps.travel_time", origin="pl_1",
                                                                          destination=poi["id"]))),
        passes("no label", replacing(plan, 3, call("clock.create_alarm", time=leave))),
        fails("alarm at the meeting time", [*plan[:3], call("clock.create_alarm", time=ev["start"][11:16]),
                                            finishing(plan, f"Leave at {ev['start'][11:16]}.")[-1]]),
        fails("a second alarm", [*plan[:4], call("clock.create_alarm", time=ev["start"][11:16]), plan[-1]]),
        passes("with the arrival time", finishing(plan, f"Leave at {leave} to arrive by {ev['start'][11:16]}; alarm set.")),
    ]  # fmt: skip
    if wrong != leave:
        probes.append(
            fails(f"timed for {other}", [*plan[:3], call("clock.create_alarm", time=wrong),
                                         finishing(plan, f"Leave at {wrong}.")[-1]])
        )  # fmt: skip
    return Draft(
        goal=goal,
        # the meeting's own time may be said beside it: "leave at 12:59 to be there by 13:30"
        criteria=[
            state("clock.alarms", "created", time=leave, enabled=True),
            answer(type="time", value=leave, context=[ev["start"][11:16]]),
        ],
        milestones=[searched(place), state("clock.alarms", "created", time=leave)],
        plan=plan,
        perturb_exempt=["3.label"],
        probes=probes,
    )


LABELS = [("Gym", "Iron Gym", "gym"), ("Pharmacy", "Riverside Pharmacy", "pharmacy"),
          ("Bakery", "Sunrise Bakery", "bakery"), ("Library", "City Library", "library"),
          ("Kids' school", "Oak Hill School", "school"), ("Market", "Green Market", "market")]  # fmt: skip


@template(
    "maps.save_place",
    apps=["maps"],
    domain=TRAVEL,
    difficulty=2,
    capabilities=["search", "create", "delete"],
    count=12,
)
def save_place(w: World) -> Draft:
    """Template ``maps.save_place``: "Save Iron Gym as my Gym place", and in odd tasks a stale
    "Gym" already points elsewhere: the user says it moved, so the old one goes (labels are
    unique)."""
    places = seed_maps(w)
    label, name, query = LABELS[w.index % len(LABELS)]
    poi = places[name]
    replace = w.index % 2 == 1
    plan: list[ToolCall] = [call("maps.list_places"), call("maps.search", query=query)]
    criteria: list[Any] = [state("maps.places", "created", label={"iequals": label}, address=poi["address"])]
    if replace:
        old_poi = next(p for n, p in places.items() if n not in (name, "Home", "Work") and p["id"].startswith("poi_")
                       and n != "Main Street 5")  # fmt: skip
        old = {
            "id": "pl_3",
            "label": label,
            "address": old_poi["address"],
            "lat": old_poi["lat"],
            "lon": old_poi["lon"],
        }
        w.table("maps.places").append(old)
        criteria.append(state("maps.places", "deleted", id=old["id"]))
        goal = w.rng.choice(
            [f'My "{label}" place on the map is out of date: it\'s {name} now. Fix my saved places.',
             f'I switched to {name}. Make that my saved "{label}" place instead of the old one.']
        )  # fmt: skip
        if confirm_variant(w, 0.5):
            ask_first(plan, criteria, "maps.delete_place", f'Delete the old "{label}" place?')
            goal += " Ask before deleting anything."
        plan.append(call("maps.delete_place", place_id=old["id"]))
    else:
        goal = w.rng.choice(
            [f'Save {name} in my places as "{label}".', f'Add {name} to my saved places, labelled "{label}".']
        )
    plan += [call("maps.save_place", label=label, place_id=poi["id"]), call("finish", answer="Saved.")]
    other = next(p for n, p in places.items() if p["id"].startswith("poi_") and n != name)
    save = len(plan) - 2
    probes = [
        passes("label in lower case", replacing(plan, save, call("maps.save_place", label=label.lower(),
                                                                 place_id=poi["id"]))),
        fails("another place saved", replacing(plan, save, call("maps.save_place", label=label, place_id=other["id"]))),
        fails("saved twice", [*plan[:-1], call("maps.save_place", label=f"{label} 2", place_id=poi["id"]), plan[-1]]),
    ]  # fmt: skip
    if replace:
        probes.append(
            passes("renamed the old one and deleted it later",
                   [*plan[:-3], call("maps.rename_place", place_id="pl_3", label="old"), *plan[-3:]])
        )  # fmt: skip
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[searched(query)],
        plan=plan,
        probes=probes,
    )


@template(
    "maps.share_location",
    apps=["maps", "contacts", "system"],
    domain=TRAVEL,
    difficulty=3,
    capabilities=["lookup", "permission", "send"],
    count=12,
)
def share_location(w: World) -> Draft:
    """Template ``maps.share_location``: "Share my location with Ana for the next two hours";
    in half the worlds maps lacks the location permission and must ask for it first."""
    seed_maps(w)
    c = w.rng.choice(w.contacts)
    first = first_name(c)
    hours, words = w.rng.choice([(1, "an hour"), (2, "two hours"), (3, "three hours"), (0.5, "half an hour")])
    minutes = int(hours * 60)
    until = (w.now + dt.timedelta(minutes=minutes)).isoformat(timespec="minutes")
    denied = w.index % 2 == 1
    if denied:
        w.permissions = {"maps": {LOCATION: False}}
    plan: list[ToolCall] = [call("contacts.search", query=first)]
    criteria: list[Any] = [state("maps.shares", "created", to={"person": c["id"]}, until=until)]
    if denied:
        plan.append(call("system.request_permission", app="maps", permission=LOCATION))
    goal = w.rng.choice(
        [
            f"Share my location with {first} for {words}.",
            f"Let {first} follow where I am for the next {words.removeprefix('an ')}.",
        ]
    )
    if confirm_variant(w, 0.4):
        ask_first(plan, criteria, "maps.share_location", f"Share your location with {c['name']} for {words}?")
        goal += " Confirm with me first."
    plan += [call("maps.share_location", to=c["phone"], minutes=minutes), call("finish", answer="Sharing.")]
    share = len(plan) - 2
    probes = [
        passes("looked up by full name", replacing(plan, 0, call("contacts.search", query=c["name"]))),
        fails("for too long", replacing(plan, share, call("maps.share_location", to=c["phone"], minutes=minutes + 60))),
        fails("with someone else", replacing(plan, share, call("maps.share_location", to=similar(w, c)["phone"],
                                                               minutes=minutes))),
    ]  # fmt: skip
    if c.get("email"):
        probes.append(
            passes("by e-mail address", replacing(plan, share, call("maps.share_location", to=c["email"],
                                                                    minutes=minutes)))
        )  # fmt: skip
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[looked_up(first)],
        plan=plan,
        fixtures=w.fixtures(),
        probes=probes,
    )


KINDS = [("pharmacy", "pharmacy", "Riverside Pharmacy", "Westside Pharmacy"),
         ("restaurant", "restaurant", "Trattoria Roma", "Bella Pizza")]  # fmt: skip


@template(
    "maps.nearest_text",
    apps=["maps", "contacts", "messages"],
    domain=TRAVEL,
    difficulty=2,
    capabilities=["search", "lookup", "send"],
    count=12,
)
def nearest_text(w: World) -> Draft:
    """Template ``maps.nearest_text``: "Which pharmacy is closest to me? Text Ana its address.":
    the nearer of two (map search sorts by distance from home)."""
    places = seed_maps(w)
    word, category, near, far = KINDS[w.index % len(KINDS)]
    poi, other = places[near], places[far]
    c = w.rng.choice(w.contacts)
    first = first_name(c)
    plan: list[ToolCall] = [
        call("maps.search", query=word, category=category),
        call("contacts.search", query=first),
    ]
    if w.rng.random() < 0.3:
        w.confirm_sensitive = True
        plan.append(call("user.confirm", question=f"Text {first} the address?"))
    body = f"{poi['name']}, {poi['address']}"
    plan += [call("messages.send", to=c["phone"], body=body), call("finish", answer=f"{poi['name']}; sent to {first}.")]
    send = len(plan) - 2
    street = poi["address"].split(",")[0]
    other_street = other["address"].split(",")[0]
    them = rf"(?:{re.escape(other['name'])}|{re.escape(other_street)})"
    farther = (
        rf"{them}[^.;]*?\b(?:is|'s|are)\s+(?:the\s+)?(?:closest|nearest)\b"
        rf"|\b(?:closest|nearest)\b[^.;]*?(?:\bis|:)\s+(?:the\s+)?{them}"
        rf"|\b(?:or|maybe|perhaps|possibly)\s+(?:the\s+(?:one\s+(?:on|at)\s+)?)?{them}"
    )
    goal = w.rng.choice(
        [f"Which {word} is closest to me? Text {first} its address.",
         f"Find the nearest {word} and send {first} the address by text."]
    )  # fmt: skip
    return Draft(
        goal=goal,
        criteria=[
            state(
                "messages.messages",
                "created",
                number={"person": c["id"]},
                direction="out",
                # its street (a whole address: not "128 Harbour Road"), and nothing of the farther one
                body={
                    "says": street,
                    "not": {"any": [{"icontains": other_street}, {"icontains": other["name"]}]},
                },
            ),
            # the place named by its name or its street; the farther one may be named as farther
            # ("Westside Pharmacy is farther away"), not as the closest nor as an alternative
            answer(pattern=rf"{re.escape(poi['name'])}|{re.escape(street)}"),
            CompositeCriterion(
                kind="not",
                id="not_the_farther_one",
                criteria=[answer(id="farther", pattern=farther)],
            ),
        ],
        milestones=[searched(word), looked_up(first)],
        plan=plan,
        perturb_exempt=[f"{send}.body", "0.category"],
        probes=[
            passes("address only", replacing(plan, send, call("messages.send", to=c["phone"], body=street))),
            fails(
                "the farther one",
                replacing(
                    plan, send, call("messages.send", to=c["phone"], body=f"{other['name']}, {other['address']}")
                ),
            ),
            fails(
                "sent to someone else",
                replacing(plan, send, call("messages.send", to=similar(w, c)["phone"], body=body)),
            ),
            fails(
                "both addresses sent",
                replacing(
                    plan,
                    send,
                    call("messages.send", to=c["phone"], body=f"{body} or {other['name']}, {other['address']}"),
                ),
            ),
            passes("told by its street", finishing(plan, f"Sent {first} the address: {street}.")),
            fails("told the farther one", finishing(plan, f"{other['name']}; sent to {first}.")),
            fails(
                "a hedge between the two",
                finishing(plan, f"Either {poi['name']} or the one on {other['address'].split(',')[0]}; sent."),
            ),
            passes(
                "the farther one named as farther",
                finishing(plan, f"The closest is {poi['name']} ({street}); {other['name']} is farther away."),
            ),
            fails(
                "the farther one called the closest", finishing(plan, f"{other['name']} is the closest; sent {street}.")
            ),
            fails(
                "a hedge in the text",
                replacing(
                    plan,
                    send,
                    call("messages.send", to=c["phone"], body=f"{body} - or maybe {other['name']}, not sure"),
                ),
            ),
        ],
    )
