"""Calendar templates: create, move, delete and share events, and say what is next."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

from phoneenv.contract import Domain
from phoneenv.tasks.templates import Draft, answer, ask_first, behavior, call, confirm_variant, state, template
from phoneenv.tasks.world import World

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip
NEW_TITLES = ["Piano lesson", "Haircut", "Car service", "Call with the bank", "Vet appointment", "Tax advisor",
              "Swimming", "Team lunch", "Flat viewing", "Doctor's appointment"]  # fmt: skip
PLACES = ["Cafe Luna", "Room 4.12", "City Library", "Main Street 5", "Office"]


def day_words(day: dt.date, today: dt.date) -> str:
    """``day`` as a user says it, always with the date: "tomorrow (Monday 30 November)"."""
    label = f"{WEEKDAYS[day.weekday()]} {day.day} {MONTHS[day.month - 1]}"
    delta = (day - today).days
    rel = {0: "today", 1: "tomorrow", -1: "yesterday"}.get(delta)
    return f"{rel} ({label})" if rel else f"on {label}"


def hm(t: dt.datetime) -> str:
    """A time of day as HH:MM (24-hour)."""
    return f"{t:%H:%M}"


def iso(t: dt.datetime) -> str:
    """A local time as the calendar stores it: YYYY-MM-DDTHH:MM."""
    return t.isoformat(timespec="minutes")


def upcoming(w: World) -> list[dict[str, Any]]:
    """Events that start after the world's clock and are the only one with their title that day,
    so "<title> <day>" names exactly one event. Adds one tomorrow when there is none."""
    events = w.table("calendar.events")
    count = Counter((e["title"], e["start"][:10]) for e in events)
    now = iso(w.now)
    pool = [e for e in events if e["start"] > now and count[e["title"], e["start"][:10]] == 1]
    if not pool:
        titles = {e["title"] for e in events}
        start = dt.datetime.combine(w.now.date() + dt.timedelta(days=1), dt.time(w.rng.randrange(8, 19)))
        rec = {
            "id": w.next_id("calendar.events", "ev_"),
            "title": w.rng.choice([t for t in NEW_TITLES if t not in titles]),
            "start": iso(start),
            "end": iso(start + dt.timedelta(minutes=60)),
            "location": w.rng.choice(PLACES),
            "attendees": (),
            "notes": None,
            "all_day": False,
        }
        events.append(rec)
        pool = [rec]
    return pool


def event_phrase(e: dict[str, Any], today: dt.date) -> str:
    """'"Yoga class" tomorrow (Tuesday 1 December) at 10:00'."""
    start = dt.datetime.fromisoformat(e["start"])
    return f'"{e["title"]}" {day_words(start.date(), today)} at {hm(start)}'


@template(
    "calendar.create_event",
    apps=["calendar"],
    domain=Domain.SCHEDULING,
    capabilities=["create", "time"],
)
def create_event(w: World) -> Draft:
    """Template ``calendar.create_event``, e.g. task 0: "Add \"Car service\" to my calendar tomorrow (Friday 13 November) from 17:00 to 18:30, location: City Library."."""
    title = w.rng.choice(NEW_TITLES)
    offset = w.rng.choice([1, 1, 2, 3, 4, 5, 6])
    day = w.now.date() + dt.timedelta(days=offset)
    start = dt.datetime.combine(day, dt.time(w.rng.randrange(8, 20), w.rng.choice([0, 30])))
    end = start + dt.timedelta(minutes=w.rng.choice([30, 45, 60, 90]))
    where = w.rng.choice([None, None, *PLACES])
    goal = f'Add "{title}" to my calendar {day_words(day, w.now.date())} from {hm(start)} to {hm(end)}'
    cond: dict[str, Any] = {"title": {"iequals": title}, "start": iso(start), "end": iso(end)}
    args: dict[str, Any] = {"title": title, "start": iso(start), "end": iso(end)}
    if where:
        goal += f", location: {where}"
        cond["location"] = {"iequals": where}
        args["location"] = where
    return Draft(
        goal=goal + ".",
        criteria=[state("calendar.events", "created", **cond)],
        plan=[call("calendar.create_event", **args), call("finish", answer=f"Added {title}.")],
        perturb_exempt=["1.answer"],
    )


@template(
    "calendar.move_event",
    apps=["calendar"],
    domain=Domain.SCHEDULING,
    difficulty=2,
    capabilities=["lookup", "update", "time"],
)
def move_event(w: World) -> Draft:
    """Template ``calendar.move_event``, e.g. task 0: "Move \"Book club\" on Monday 9 November at 16:00 to 15:00 the same day, keeping its length."."""
    e = w.rng.choice(upcoming(w))
    start = dt.datetime.fromisoformat(e["start"])
    length = dt.datetime.fromisoformat(e["end"]) - start
    today = w.now.date()
    if w.rng.random() < 0.5:  # a later time the same day
        new_start = dt.datetime.combine(
            start.date(), dt.time(w.rng.choice([h for h in range(8, 20) if h != start.hour]))
        )
        how = f"to {hm(new_start)} the same day, keeping its length"
    else:  # another day, same time
        new_start = start + dt.timedelta(days=w.rng.choice([1, 2, 3]))
        how = f"to {day_words(new_start.date(), today).removeprefix('on ')}, same time"
    new_end = new_start + length
    return Draft(
        goal=f"Move {event_phrase(e, today)} {how}.",
        criteria=[
            state("calendar.events", "updated", id=e["id"], title=e["title"], start=iso(new_start), end=iso(new_end))
        ],
        milestones=[behavior("required_call", "calendar.update_event", arguments={"event_id": e["id"]})],
        plan=[
            call("calendar.search_events", query=e["title"]),
            call("calendar.update_event", event_id=e["id"], start=iso(new_start), end=iso(new_end)),
            call("finish", answer=f"Moved {e['title']} to {iso(new_start)}."),
        ],
        perturb_exempt=["2.answer"],
    )


@template(
    "calendar.delete_event",
    apps=["calendar"],
    domain=Domain.SCHEDULING,
    difficulty=2,
    capabilities=["lookup", "delete", "confirm"],
)
def delete_event(w: World) -> Draft:
    """Template ``calendar.delete_event``, e.g. task 0: "Delete \"Coffee with Jonas\" on Saturday 21 November at 11:30 - take it off my calendar. Ask me before deleting it."."""
    e = w.rng.choice(upcoming(w))
    confirm_variant(w, 0.5)
    goal = f"{w.rng.choice(['Cancel', 'Delete'])} {event_phrase(e, w.now.date())} - take it off my calendar."
    plan = [call("calendar.search_events", query=e["title"])]
    criteria = [state("calendar.events", "deleted", id=e["id"])]
    milestones = [behavior("required_call", "calendar.search_events")]
    if w.confirm_sensitive:
        goal += " Ask me before deleting it."
        ask_first(plan, criteria, "calendar.delete_event", f"Delete {e['title']} on {e['start'][:10]}?", milestones)
    plan += [call("calendar.delete_event", event_id=e["id"]), call("finish", answer=f"Deleted {e['title']}.")]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=milestones,
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
    )


@template(
    "calendar.add_attendee",
    apps=["calendar", "contacts"],
    domain=Domain.SCHEDULING,
    difficulty=2,
    capabilities=["lookup", "update"],
)
def add_attendee(w: World) -> Draft:
    """Template ``calendar.add_attendee``, e.g. task 0: "Add my dad to \"Budget meeting\" on Wednesday 18 November at 13:30 as an attendee."."""
    e = w.rng.choice(upcoming(w))
    attendees = tuple(e["attendees"])
    free = [c for c in w.contacts if c["name"] not in attendees]
    related = [c for c in free if c["relation"]]
    by_relation = bool(related) and w.rng.random() < 0.5
    if by_relation:  # "my sister": the agent has to look the name up
        c = w.rng.choice(related)
        name = f"my {c['relation']}"
    else:
        c = w.rng.choice(free)
        name = c["name"]
    plan = [call("contacts.search", query=c["relation"])] if by_relation else []
    plan += [
        call("calendar.search_events", query=e["title"]),
        call("calendar.add_attendee", event_id=e["id"], attendee=c["name"]),
        call("finish", answer=f"Added {c['name']} to {e['title']}."),
    ]
    return Draft(
        goal=f"Add {name} to {event_phrase(e, w.now.date())} as an attendee.",
        criteria=[
            state(
                "calendar.events",
                "updated",
                id=e["id"],
                attendees={"has": c["name"], "len": len(attendees) + 1},
                start=e["start"],
            )
        ],
        milestones=[behavior("required_call", "contacts.search")] if by_relation else [],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
    )


@template(
    "calendar.next_event",
    apps=["calendar"],
    domain=Domain.SCHEDULING,
    capabilities=["lookup", "answer", "time"],
)
def next_event(w: World) -> Draft:
    """Template ``calendar.next_event``, e.g. task 0: "What's my next event today, and where is it?"."""
    today = w.now.date()
    tomorrow = w.rng.random() < 0.4
    day = today + dt.timedelta(days=1) if tomorrow else today
    events = w.table("calendar.events")
    after = w.now if not tomorrow else dt.datetime.combine(day, dt.time())
    pool = sorted((e for e in events if e["start"][:10] == day.isoformat() and e["start"] > iso(after)),
                  key=lambda e: e["start"])  # fmt: skip
    if pool:
        e = pool[0]
    else:  # nothing left that day: add an event after the clock
        hour = w.rng.randrange(max(after.hour + 1, 9), 20)
        start = dt.datetime.combine(day, dt.time(hour, w.rng.choice([0, 30])))
        e = {
            "id": w.next_id("calendar.events", "ev_"),
            "title": w.rng.choice(NEW_TITLES),
            "start": iso(start),
            "end": iso(start + dt.timedelta(minutes=60)),
            "location": None,
            "attendees": (),
            "notes": None,
            "all_day": False,
        }
        events.append(e)
    if e["location"] is None:
        e["location"] = w.rng.choice(PLACES)
    if tomorrow:
        goal = f"What's my first event {day_words(day, today)}, and where is it?"
    else:
        goal = "What's my next event today, and where is it?"
    return Draft(
        goal=goal,
        criteria=[answer(contains=[e["title"], e["location"]]), behavior("read_only")],
        plan=[
            call("calendar.list_events", date=day.isoformat()),
            call("finish", answer=f"{e['title']} at {e['start'][11:]}, at {e['location']}."),
        ],
    )
