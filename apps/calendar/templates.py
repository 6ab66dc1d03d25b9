"""Calendar templates: create, move, delete and share events, and say what is next."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from typing import Any

from apps.clock.templates import spoken
from apps.messages.templates import looked_up, similar, tell, tell_probes, telling, who
from phoneenv.contract import CompositeCriterion, Criterion, Domain
from phoneenv.tasks.templates import (
    Draft,
    answer,
    answer_if_said,
    ask_first,
    behavior,
    call,
    confirm_variant,
    fails,
    finishing,
    passes,
    replacing,
    state,
    template,
)
from phoneenv.tasks.world import EVENT_KINDS, World, circle

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


def found(e: dict[str, Any]) -> Criterion:
    """Milestone: the event was looked up (by a search on its title, or by listing its day)."""
    word = e["title"].split()[0]
    return CompositeCriterion(
        kind="any_of",
        id=f"found:{e['id']}",
        criteria=[
            behavior("required_call", "calendar.search_events", arguments={"query": {"icontains": word}}),
            behavior("required_call", "calendar.list_events", arguments={"date": e["start"][:10]}),
            behavior("required_call", "calendar.get_event", arguments={"event_id": e["id"]}),
        ],
    )


@template(
    "calendar.create_event",
    apps=["calendar", "contacts", "messages"],
    domain=Domain.SCHEDULING,
    capabilities=["create", "time", "lookup", "send"],
)
def create_event(w: World) -> Draft:
    """Template ``calendar.create_event``, e.g. task 0: "Put \"Tax advisor\" in my calendar on Sunday 8 November from 08:30 to 09:30 with Emily, location: Cafe Luna, and let them know."."""
    title = w.rng.choice(NEW_TITLES)
    offset = w.rng.choice([1, 1, 2, 3, 4, 5, 6])
    day = w.now.date() + dt.timedelta(days=offset)
    start = dt.datetime.combine(day, dt.time(w.rng.randrange(8, 20), w.rng.choice([0, 30])))
    end = start + dt.timedelta(minutes=w.rng.choice([30, 45, 60, 90]))
    where = w.rng.choice([None, None, *PLACES])
    (c,) = w.pick("contacts.contacts")
    name, query = who(w, c)
    verb = w.rng.choice(["Add", "Put"])
    goal = f'{verb} "{title}" {"to" if verb == "Add" else "in"} my calendar {day_words(day, w.now.date())} from {hm(start)} to {hm(end)} with {name}'
    cond: dict[str, Any] = {
        "title": {"iequals": title},
        "start": iso(start),
        "end": iso(end),
        "attendees": {"people": [c["id"]]},
    }
    args: dict[str, Any] = {"title": title, "start": iso(start), "end": iso(end), "attendees": [c["name"]]}
    if where:
        goal += f", location: {where}"
        cond["location"] = {"iequals": where}
        args["location"] = where
    goal += ", and let them know."
    text = f"I put {title} in the calendar for {WEEKDAYS[day.weekday()]} at {hm(start)}."
    wrong = f"I put {title} in the calendar for {WEEKDAYS[day.weekday()]} at {hm(start + dt.timedelta(hours=2))}."
    plan = [
        call("contacts.search", query=query),
        call("calendar.create_event", **args),
        telling(c, text),
        call("finish", answer=f"Added {title} and told {c['name']}."),
    ]
    other = similar(w, c)
    wrong_day = WEEKDAYS[(day.weekday() + 1) % 7]
    probes = [
        *tell_probes(w, plan, 2, c, text, wrong),
        fails(
            "told the right time on the wrong day",
            replacing(plan, 2, telling(c, f"I put {title} in the calendar for {wrong_day} at {hm(start)}.")),
        ),
        passes("told in 12-hour form", replacing(plan, 2, telling(c, f"{title}, {spoken(hm(start))}, see you there"))),
        passes("told as a range", replacing(plan, 2, telling(c, f"{title} from {hm(start)} to {hm(end)}, see you"))),
        fails(
            "a range an hour late",
            replacing(
                plan,
                2,
                telling(c, f"{title}: {hm(start + dt.timedelta(hours=1))}-{hm(end + dt.timedelta(hours=1))}"),
            ),
        ),
        fails(
            "a hedge on the time",
            replacing(plan, 2, telling(c, f"{title} at {hm(start)} or {hm(start + dt.timedelta(hours=1))}")),
        ),
        fails(
            "invited the wrong person",
            replacing(plan, 1, call("calendar.create_event", **{**args, "attendees": [other["name"]]})),
        ),
        fails(
            "a stray second event",
            [
                *plan[:2],
                call(
                    "calendar.create_event",
                    **{**args, "start": iso(start + dt.timedelta(days=7)), "end": iso(end + dt.timedelta(days=7))},
                ),
                *plan[2:],
            ],
        ),
    ]
    if c.get("email"):
        probes.append(
            passes(
                "invited by e-mail address",
                replacing(plan, 1, call("calendar.create_event", **{**args, "attendees": [c["email"]]})),
            )
        )
    return Draft(
        goal=goal,
        criteria=[
            state("calendar.events", "created", **cond),
            tell(c, {"states": {"time": hm(start)}, "consistent": {"date": day.isoformat()}}),
        ],
        milestones=[looked_up(query)],
        plan=plan,
        perturb_exempt=["0.query", "2.body", "3.answer"],
        probes=probes,
    )


@template(
    "calendar.move_event",
    apps=["calendar", "contacts", "messages"],
    domain=Domain.SCHEDULING,
    difficulty=2,
    capabilities=["lookup", "update", "time", "send"],
)
def move_event(w: World) -> Draft:
    """Template ``calendar.move_event``, e.g. task 0: "Move \"Yoga class\" on Friday 6 November at 16:00 to Monday 9 November, same time, and let Stanley know."."""
    e = w.rng.choice(upcoming(w))
    start = dt.datetime.fromisoformat(e["start"])
    length = dt.datetime.fromisoformat(e["end"]) - start
    today = w.now.date()
    if w.rng.random() < 0.5:  # a later time the same day
        new_start = dt.datetime.combine(
            start.date(), dt.time(w.rng.choice([h for h in range(8, 20) if h != start.hour]))
        )
        how = f"to {hm(new_start)} the same day, keeping its length"
        # the new start (its end may be said beside it), on its day
        said = {
            "states": {"time": {"value": hm(new_start), "context": [hm(new_start + length)]}},
            "consistent": {"date": new_start.date().isoformat()},
        }
        text, wrong_text = f"{e['title']} is now at {hm(new_start)}.", f"{e['title']} is now at {hm(start)}."
        other_form = f"{e['title']} moved to {spoken(hm(new_start))}."
        hedge = f"{e['title']} is now at {hm(new_start)} or {hm(start)}, not sure."
        wrong_day = day_words(start.date() + dt.timedelta(days=1), today)
        contradiction = f"{e['title']} is now at {hm(new_start)} {wrong_day}."
    else:  # another day, same time
        new_start = start + dt.timedelta(days=w.rng.choice([1, 2, 3]))
        how = f"to {day_words(new_start.date(), today).removeprefix('on ')}, same time"
        label = day_words(new_start.date(), today).removeprefix("on ")
        said = {
            "states": {"date": new_start.date().isoformat()},
            "consistent": {"time": {"value": hm(new_start), "context": [hm(new_start + length)]}},
        }
        text, wrong_text = f"{e['title']} moves to {label}.", f"{e['title']} stays on {day_words(start.date(), today)}."
        other_form = f"{e['title']} is now on {new_start.date().isoformat()}, same time."
        later = day_words(new_start.date() + dt.timedelta(days=1), today).removeprefix("on ")
        hedge = f"{e['title']} moves to {label}, or maybe {later}."
        shifted = hm(new_start + dt.timedelta(hours=1))
        contradiction = f"{e['title']} moves to {label} at {shifted}."
    new_end = new_start + length
    (c,) = w.pick("contacts.contacts")
    name, query = who(w, c)
    plan = [
        call("calendar.search_events", query=e["title"]),
        call("calendar.update_event", event_id=e["id"], start=iso(new_start), end=iso(new_end)),
        call("contacts.search", query=query),
        telling(c, text),
        call("finish", answer=f"Moved {e['title']} to {iso(new_start)} and told {c['name']}."),
    ]
    return Draft(
        goal=f"Move {event_phrase(e, today)} {how}, and let {name} know.",
        criteria=[
            state("calendar.events", "updated", id=e["id"], title=e["title"], start=iso(new_start), end=iso(new_end)),
            tell(c, said),
            # a day or time told to the user is the new one (the end may be said beside the start)
            answer_if_said("date", new_start.date().isoformat()),
            answer_if_said("time", hm(new_start), also=[hm(new_end)]),
        ],
        milestones=[found(e), looked_up(query)],
        plan=plan,
        perturb_exempt=["0.query", "2.query", "3.body", "4.answer"],
        probes=[
            *tell_probes(w, plan, 3, c, text, wrong_text),
            passes("told in another format", replacing(plan, 3, telling(c, other_form))),
            passes(
                "start and end told",
                replacing(
                    plan,
                    3,
                    telling(c, f"{e['title']}: {day_words(new_start.date(), today)}, {hm(new_start)}-{hm(new_end)}."),
                ),
            ),
            fails(
                "another day told to the user",
                finishing(plan, f"Moved {e['title']} to {(new_start + dt.timedelta(days=1)).date().isoformat()}."),
            ),
            fails("told a contradicting detail", replacing(plan, 3, telling(c, contradiction))),
            fails("a hedge", replacing(plan, 3, telling(c, hedge))),
            fails(
                "told a wrong end",
                replacing(
                    plan,
                    3,
                    telling(
                        c,
                        f"{e['title']}: {day_words(new_start.date(), today)}, "
                        f"{hm(new_start)}-{hm(new_end + dt.timedelta(hours=1))}.",
                    ),
                ),
            ),
            passes("listed the day instead", replacing(plan, 0, call("calendar.list_events", date=e["start"][:10]))),
            fails(
                "an hour off",
                replacing(
                    plan,
                    1,
                    call(
                        "calendar.update_event",
                        event_id=e["id"],
                        start=iso(new_start + dt.timedelta(hours=1)),
                        end=iso(new_end + dt.timedelta(hours=1)),
                    ),
                ),
            ),
        ],
    )


@template(
    "calendar.delete_event",
    apps=["calendar", "contacts", "messages"],
    domain=Domain.SCHEDULING,
    difficulty=2,
    capabilities=["lookup", "delete", "confirm", "send"],
)
def delete_event(w: World) -> Draft:
    """Template ``calendar.delete_event``, e.g. task 0: "Call off \"Parent-teacher meeting\" on Monday 23 November at 11:00 and tell Maritta it's off."."""
    e = w.rng.choice(upcoming(w))
    confirm_variant(w, 0.5)
    # The person the event is with, when its title names one ("Coffee with Jonas").
    guest = [x for x in w.contacts if e["title"].endswith(f"with {x['name'].split()[0]}")]
    (c,) = guest[:1] or w.pick("contacts.contacts")
    name, query = who(w, c)
    goal = f"{w.rng.choice(['Cancel', 'Delete', 'Call off'])} {event_phrase(e, w.now.date())} and tell {name} it's off."
    plan = [call("calendar.search_events", query=e["title"])]
    criteria: list[Criterion] = [
        state("calendar.events", "deleted", id=e["id"]),
        tell(c, {"regex": r"cancel|\boff\b|not happening|won't happen|can't make|called off"}),
    ]
    milestones: list[Criterion] = [found(e), looked_up(query)]
    if w.confirm_sensitive:
        goal += " Ask me before deleting it or sending anything."
        ask_first(plan, criteria, "calendar.delete_event", f"Delete {e['title']} on {e['start'][:10]}?")
    text = f"{e['title']} is cancelled, sorry."
    plan += [call("calendar.delete_event", event_id=e["id"]), call("contacts.search", query=query)]
    if w.confirm_sensitive:
        ask_first(plan, criteria, "messages.send", f'Text {c["name"]} "{text}"?')
    plan += [telling(c, text), call("finish", answer=f"Deleted {e['title']} and told {c['name']}.")]
    n = len(plan)
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=milestones,
        plan=plan,
        perturb_exempt=[
            f"{n - 1}.answer",
            f"{n - 2}.body",
            *(f"{k}.{a}" for k in range(n) for a in ("query", "question") if a in plan[k].arguments),
        ],
        probes=[
            *tell_probes(w, plan, n - 2, c, "Heads up: it's called off.", f"See you at {e['title']}!"),
            fails("kept the event", [x for x in plan if x.name != "calendar.delete_event"]),
        ],
    )


@template(
    "calendar.add_attendee",
    apps=["calendar", "contacts"],
    domain=Domain.SCHEDULING,
    difficulty=2,
    capabilities=["lookup", "update"],
)
def add_attendee(w: World) -> Draft:
    """Template ``calendar.add_attendee``, e.g. task 0: "Invite my dad to \"Parent-teacher meeting\" tomorrow (Thursday 26 November) at 12:00."."""
    firsts = [c["name"].split()[0] for c in w.contacts]

    def guests(e: dict[str, Any]) -> list[dict[str, Any]]:
        """Contacts not yet invited whom the event's kind fits (no family at a work meeting)."""
        kind = next((k for k in EVENT_KINDS if k.matches(e["title"])), None)
        fits = [c for c in w.contacts if c["name"] not in e["attendees"] and firsts.count(c["name"].split()[0]) == 1]
        return [c for c in fits if kind is None or circle(c["relation"]) in kind.circles]

    pool = upcoming(w)
    e = w.rng.choice([x for x in pool if guests(x)] or pool)
    attendees = tuple(e["attendees"])
    free = [c for c in w.contacts if c["name"] not in attendees]
    fitting = guests(e) or [x for x in free if firsts.count(x["name"].split()[0]) == 1]
    related = [c for c in fitting if c["relation"]]
    if related and w.rng.random() < 0.6:  # "my sister": the agent has to look the name up
        c = w.rng.choice(related)
        name, query = f"my {c['relation']}", c["relation"]
        goal = w.rng.choice([f"Add {name} to {event_phrase(e, w.now.date())} as an attendee.",
                             f"Invite {name} to {event_phrase(e, w.now.date())}."])  # fmt: skip
    else:  # a first name: the calendar needs the full name or address
        c = w.rng.choice(fitting)
        name = query = c["name"].split()[0]
        goal = f"Put {name} on the guest list of {event_phrase(e, w.now.date())}."
    plan = [
        call("contacts.search", query=query),
        call("calendar.search_events", query=e["title"]),
        call("calendar.add_attendee", event_id=e["id"], attendee=c["name"]),
        call("finish", answer=f"Added {c['name']} to {e['title']}."),
    ]
    other = next(x for x in free if x["id"] != c["id"])
    probes = [
        passes("listed the day instead", replacing(plan, 1, call("calendar.list_events", date=e["start"][:10]))),
        fails(
            "the wrong person",
            replacing(plan, 2, call("calendar.add_attendee", event_id=e["id"], attendee=other["name"])),
        ),
        fails(
            "added twice over",
            [*plan[:3], call("calendar.add_attendee", event_id=e["id"], attendee=other["name"]), plan[-1]],
        ),
        fails(
            "moved the event too (not asked)",
            [*plan[:3], call("calendar.update_event", event_id=e["id"], location="Somewhere else"), plan[-1]],
        ),
    ]
    if c.get("email"):
        probes.append(
            passes(
                "by e-mail address",
                replacing(plan, 2, call("calendar.add_attendee", event_id=e["id"], attendee=c["email"])),
            )
        )
    return Draft(
        goal=goal,
        criteria=[
            state(
                "calendar.events",
                "updated",
                id=e["id"],
                attendees={"has_person": c["id"], "len": len(attendees) + 1},
                start=e["start"],
            )
        ],
        milestones=[looked_up(query), found(e)],
        plan=plan,
        probes=probes,
    )


@template(
    "calendar.next_event",
    apps=["calendar", "contacts", "messages"],
    domain=Domain.SCHEDULING,
    capabilities=["lookup", "answer", "time", "send"],
)
def next_event(w: World) -> Draft:
    """Template ``calendar.next_event``, e.g. task 0: "What's my first event tomorrow (Tuesday 17 November), and where is it? Let Leslie know where I'll be."."""
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
    if e["location"] is None:  # somewhere the event's kind fits ("Call with X": on the phone)
        kind = next((k for k in EVENT_KINDS if k.matches(e["title"])), None)
        e["location"] = w.rng.choice([p for p in kind.places if p] if kind else PLACES)
    others = [x["location"] for x in events if x["location"] and x["location"] != e["location"]]
    wrong_place = others[0] if others else next(p for p in PLACES if p != e["location"])
    elsewhere = sorted({x["location"] for x in events if x["location"]} | set(PLACES))
    elsewhere = [p for p in elsewhere if p.casefold() not in f"{e['location']} {e['title']}".casefold()]
    (c,) = w.pick("contacts.contacts")
    name, query = who(w, c)
    if tomorrow:
        goal = f"What's my first event {day_words(day, today)}, and where is it? Let {name} know where I'll be."
    else:
        goal = w.rng.choice(
            [f"What's my next event today, and where is it? Text {name} where I'll be.",
             f"Where do I have to be next today, and for what? Tell {name} too."]
        )  # fmt: skip
    text = f"I'll be at {e['location']} for {e['title']}."
    reply = f"{e['title']} at {e['start'][11:]}, at {e['location']}."
    plan = [
        call("calendar.list_events", date=day.isoformat()),
        call("contacts.search", query=query),
        telling(c, text),
        call("finish", answer=reply),
    ]
    return Draft(
        goal=goal,
        criteria=[
            # Title and place are free text: both named, and no other place of the calendar.
            answer(contains=[e["title"], e["location"]]),
            CompositeCriterion(
                kind="not",
                id="no_other_place",
                criteria=[answer(id="other_place", pattern="(?i)" + "|".join(re.escape(p) for p in elsewhere))],
            ),
            tell(c, {"icontains": e["location"]}),
        ],
        milestones=[
            behavior("required_call", "calendar.list_events", id="listed", arguments={"date": day.isoformat()}),
            looked_up(query),
        ],
        plan=plan,
        perturb_exempt=["1.query", "2.body"],
        probes=[
            *tell_probes(w, plan, 2, c, text, f"I'll be at {wrong_place}."),
            passes("in other words", finishing(plan, f"Next up is {e['title']} ({e['location']}).")),
            passes(
                "the title in other case and punctuation",
                finishing(plan, f"{e['title'].lower().replace('-', ' ')} – {e['location'].upper()}."),
            ),
            fails("the title cut short", finishing(plan, f"{e['title'][:-1]}, at {e['location']}.")),
            fails("the wrong place", finishing(plan, f"{e['title']}, at {wrong_place}.")),
            fails("a hedge", finishing(plan, f"{e['title']}, at {e['location']} or {wrong_place}.")),
            fails(
                "the right place only in passing",
                finishing(plan, f"{e['title']}: not at {e['location']} this time but at {wrong_place}."),
            ),
        ],
    )
