"""Reminder templates: the user asks the assistant to remind them at a time, before an event, on
arriving somewhere or after a call, to pass a reminder on when it comes due, or to cancel one.

The agent sets reminders with ``memory.remind`` (an intent in the user's memory, verified as a
row of ``memory.entries``: ``kind`` intent, ``trigger_type``, ``trigger_value``, ``content``);
a reminder fires once, when the episode's clock, location timeline or app events make its
trigger true, and reaches the user through ``system.notify`` (a row of ``system.notifications``
from the app ``assistant``, whose ``time`` shows it came after the trigger).

| template | request | verified by |
|---|---|---|
| ``reminders.at_time`` | "remind me at 17:30 / in 40 minutes to ..." | the intent's time trigger and content |
| ``reminders.before_event`` | "remind me 30 minutes before my dentist appointment to ..." | the time is the event's start minus the lead |
| ``reminders.on_arrival`` | "when I get to the gym, remind me to ..." (heading there) | the place trigger, and the notification at or after the arrival |
| ``reminders.after_call`` | "call Ben, and when we hang up remind me to ..." | the call, the ``phone.end_call`` trigger, the notification after hanging up |
| ``reminders.cancel`` | "cancel my reminder about the plants" | that intent invalid, the others untouched |
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from phoneenv.contract import Category, Domain
from phoneenv.tasks.templates import (
    Draft,
    answer_if_said,
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
from phoneenv.tasks.templates.memory import MemoryBook, ago, forget_relations
from phoneenv.tasks.world import World

MEMORY = Category.MEMORY
COUNT = 12

# (what the user asks to be reminded of, a word the reminder must name)
ERRANDS = [
    ("take the laundry out of the machine", "laundry"),
    ("call the dentist", "dentist"),
    ("water the plants", "plants"),
    ("move the car before the street cleaning", "car"),
    ("take my medication", "medication"),
    ("pick up the kids from football", "football"),
    ("pay the electricity bill", "electricity"),
    ("defrost the chicken for dinner", "chicken"),
    ("charge the camera batteries", "camera"),
    ("book the table for Friday", "table"),
    ("send the invoice to the accountant", "invoice"),
    ("check the oven", "oven"),
    ("put the bins out", "bins"),
    ("order printer ink", "printer ink"),
]
PLACES = ["gym", "office", "supermarket", "train station", "pharmacy", "post office", "library", "garden centre"]
ERRANDS_AT = {
    "gym": [("book a sauna slot", "sauna"), ("renew my membership card", "membership")],
    "office": [("print the boarding pass", "boarding pass"), ("bring back the stapler", "stapler")],
    "supermarket": [("buy oat milk", "oat milk"), ("get birthday candles", "candles")],
    "train station": [("top up my travel card", "travel card"), ("ask about the bike storage", "bike")],
    "pharmacy": [("pick up the prescription", "prescription"), ("buy sunscreen", "sunscreen")],
    "post office": [("send the parcel to Grandma", "parcel"), ("buy stamps", "stamps")],
    "library": [("return the overdue books", "overdue"), ("reserve the new Murakami", "Murakami")],
    "garden centre": [("buy tomato seedlings", "tomato"), ("ask about the lemon tree", "lemon")],
}


def _t(moment: dt.datetime) -> str:
    """A trigger time as memory.remind stores it (``YYYY-MM-DDTHH:MM:SS``)."""
    return moment.isoformat(timespec="seconds")


def _arg(moment: dt.datetime) -> str:
    """A time as the agent passes it (``YYYY-MM-DDTHH:MM``)."""
    return moment.isoformat(timespec="minutes")


def _spoken(moment: dt.datetime) -> str:
    h = moment.hour % 12 or 12
    return f"{h}:{moment.minute:02d} {'am' if moment.hour < 12 else 'pm'}"


def _intent(kind: str, value: str, word: str, *, id: str = "set") -> Any:
    """The reminder row the task expects: a new intent with this trigger that names ``word``."""
    return suffixed(
        state("memory.entries", "created", kind="intent", trigger_type=kind, trigger_value=value,
              content={"icontains": word}),
        id,
    )  # fmt: skip


def _told(word: str, after: str, before: str | None = None) -> Any:
    """The notification the user gets: from the assistant, naming ``word``, at or after ``after``
    (and before ``before``, when the user has left the place by then)."""
    time: dict[str, str] = {"gte": after} | ({"lte": before} if before else {})
    return state("system.notifications", "present", count=1, app="assistant", text={"icontains": word}, time=time)


@template(
    "reminders.at_time",
    apps=["clock"],
    domain=Domain.TIME,
    category=MEMORY,
    difficulty=2,
    capabilities=["remind", "time"],
    count=COUNT,
)
def at_time(w: World) -> Draft:
    """Template ``reminders.at_time``: "remind me at 5:30 pm to call the dentist" or "in 40
    minutes": one time reminder whose trigger is that local time (relative times from the clock)."""
    what, word = ERRANDS[w.index % len(ERRANDS)]
    relative = w.index % 2 == 1
    if relative:
        minutes = w.rng.choice([15, 20, 25, 40, 45, 50, 90])
        due = w.now + dt.timedelta(minutes=minutes)
        goal = w.rng.choice(
            [f"Remind me in {minutes} minutes to {what}.", f"In {minutes} minutes, remind me to {what}."]
        )
    else:
        due = dt.datetime.combine(w.now.date(), dt.time(w.rng.randrange(13, 22), w.rng.choice([0, 15, 30, 45])))
        goal = w.rng.choice(
            [f"Remind me at {_spoken(due)} today to {what}.", f"Set a reminder for {due:%H:%M} to {what}."]
        )
    plan = [
        call("memory.remind", content=what, trigger="time", when=_arg(due)),
        call("finish", answer=f"I'll remind you at {due:%H:%M} to {what}."),
    ]
    return Draft(
        goal=goal,
        criteria=[_intent("time", _t(due), word), answer_if_said("time", f"{due:%H:%M}")],
        plan=plan,
        probes=[
            fails(
                "another time told",
                finishing(plan, f"I'll remind you at {due + dt.timedelta(hours=1):%H:%M} to {what}."),
            ),
            passes(
                "time with seconds",
                replacing(plan, 0, call("memory.remind", content=f"Reminder: {what}", trigger="time", when=_t(due))),
            ),
            fails(
                "an hour early",
                replacing(
                    plan, 0, call("memory.remind", content=what, trigger="time", when=_arg(due - dt.timedelta(hours=1)))
                ),
            ),
            fails(
                "a plain memory, no reminder",
                replacing(plan, 0, call("memory.save", kind="fact", content=f"{_arg(due)}: {what}")),
            ),
            fails(
                "a stray second reminder",
                [
                    plan[0],
                    call("memory.remind", content=what, trigger="time", when=_arg(due + dt.timedelta(hours=1))),
                    plan[1],
                ],
            ),
            passes(
                "set an hour late, forgotten, set again",
                [
                    call("memory.remind", content=what, trigger="time", when=_arg(due + dt.timedelta(hours=1))),
                    call("memory.forget", id=1),  # no memory seeded: the first entry is 1
                    *plan,
                ],
            ),
        ],
    )


@template(
    "reminders.before_event",
    apps=["calendar"],
    domain=Domain.SCHEDULING,
    category=MEMORY,
    difficulty=3,
    capabilities=["lookup", "remind", "time"],
    count=COUNT,
)
def before_event(w: World) -> Draft:
    """Template ``reminders.before_event``: "remind me half an hour before my dentist appointment
    to bring the insurance card": the event's start (from the calendar) minus the lead."""
    events = w.table("calendar.events")
    titles = [e["title"] for e in events]
    pool = [e for e in events if titles.count(e["title"]) == 1 and dt.datetime.fromisoformat(e["start"]) > w.now
            + dt.timedelta(hours=2)]  # fmt: skip
    ev = pool[w.index % len(pool)] if pool else events[0]
    if not pool:  # every event is soon or shares its title: move this one to tomorrow afternoon
        start = dt.datetime.combine(w.now.date() + dt.timedelta(days=1), dt.time(15, 0))
        ev.update(start=_arg(start), end=_arg(start + dt.timedelta(hours=1)), title=f"{ev['title']} (moved)")
    start = dt.datetime.fromisoformat(ev["start"])
    lead, spoken = w.rng.choice([(15, "15 minutes"), (30, "half an hour"), (60, "an hour"), (45, "45 minutes"),
                                  (120, "two hours")])  # fmt: skip
    what, word = w.rng.choice(ERRANDS)
    due = start - dt.timedelta(minutes=lead)
    goal = w.rng.choice([f'Remind me {spoken} before "{ev["title"]}" to {what}.',
                         f'{spoken.capitalize()} before my "{ev["title"]}" event, remind me to {what}.'])  # fmt: skip
    plan = [
        call("calendar.search_events", query=ev["title"]),
        call("memory.remind", content=what, trigger="time", when=_arg(due)),
        call("finish", answer=f"I'll remind you at {due:%H:%M} on {due:%d %b}."),
    ]
    return Draft(
        goal=goal,
        criteria=[
            _intent("time", _t(due), word),
            # a time told must be the reminder's (the event's start may be said beside it)
            answer_if_said("time", f"{due:%H:%M}", also=[f"{start:%H:%M}"]),
            answer_if_said("date", due.date().isoformat(), also=[start.date().isoformat()]),
        ],
        milestones=[
            behavior("required_call", "memory.remind", arguments={"trigger": "time", "content": {"icontains": word}})
        ],
        plan=plan,
        probes=[
            fails("another time told", finishing(plan, f"I'll remind you at {due - dt.timedelta(hours=1):%H:%M}.")),
            passes(
                "the event's time beside",
                finishing(plan, f"Reminder set for {due:%H:%M}, before the {start:%H:%M} start."),
            ),
            passes(
                "found by listing the day",
                replacing(plan, 0, call("calendar.list_events", date=start.date().isoformat())),
            ),
            fails(
                "at the event's start",
                replacing(plan, 1, call("memory.remind", content=what, trigger="time", when=_arg(start))),
            ),
            fails(
                "the lead after the start",
                replacing(
                    plan,
                    1,
                    call("memory.remind", content=what, trigger="time", when=_arg(start + dt.timedelta(minutes=lead))),
                ),
            ),
        ],
    )


@template(
    "reminders.on_arrival",
    apps=["clock"],
    domain=Domain.DEVICE,
    category=MEMORY,
    difficulty=4,
    capabilities=["remind", "place", "wait", "notify"],
    count=COUNT,
)
def on_arrival(w: World) -> Draft:
    """Template ``reminders.on_arrival``: "I'm heading to the gym: when I get there, remind me to
    book a sauna slot": a place reminder, the wait until the location timeline brings the phone
    there, and the fired reminder passed on with ``system.notify`` (not before arriving)."""
    place = PLACES[w.index % len(PLACES)]
    what, word = ERRANDS_AT[place][(w.index // len(PLACES)) % 2]
    minutes = w.rng.choice([10, 15, 20, 25, 30, 35])
    arrive = w.now + dt.timedelta(minutes=minutes)
    home = arrive + dt.timedelta(hours=w.rng.randrange(2, 5))
    timeline = [{"at": _t(arrive), "label": place}, {"at": _t(home), "label": "home"}]
    goal = w.rng.choice(
        [f"I'm on my way to the {place} (about {minutes} minutes). When I get there, remind me to {what}.",
         f"Heading to the {place} now, I'll be there in roughly {minutes} minutes. Remind me to {what} once I arrive."]
    )  # fmt: skip
    plan = [
        call("memory.remind", content=what, trigger="place", when=place),
        call("system.wait", minutes=minutes),
        call("system.notify", title="Reminder", text=what[0].upper() + what[1:]),
        call("finish", answer=f"You're at the {place}: I reminded you to {what}."),
    ]
    return Draft(
        goal=goal,
        fixtures=w.fixtures(location_timeline=timeline),
        criteria=[_intent("place", {"iequals": place}, word), _told(word, _t(arrive), _t(home))],  # type: ignore[arg-type]
        milestones=[
            behavior("required_call", "memory.remind", arguments={"trigger": "place", "when": {"iequals": place}})
        ],
        plan=plan,
        max_steps=20,
        probes=[
            fails(
                "told after leaving",
                [
                    *plan[:-2],
                    *[call("system.wait", minutes=60)] * (int((home - arrive).total_seconds() // 3600) + 1),
                    *plan[-2:],
                ],
            ),
            passes(
                "waited in two steps",
                replacing(
                    plan,
                    1,
                    call("system.wait", minutes=minutes // 2),
                    call("system.wait", minutes=minutes - minutes // 2),
                ),
            ),
            fails("told before arriving", [plan[0], plan[2], plan[1], plan[3]]),
            fails(
                "a time reminder instead",
                replacing(plan, 0, call("memory.remind", content=what, trigger="time", when=_arg(arrive))),
            ),
            fails("never told", [plan[0], plan[1], plan[3]]),
        ],
    )


@template(
    "reminders.after_call",
    apps=["contacts", "phone"],
    domain=Domain.CALLS,
    category=MEMORY,
    difficulty=4,
    capabilities=["remind", "app_event", "call", "notify"],
    count=COUNT,
)
def after_call(w: World) -> Draft:
    """Template ``reminders.after_call``: "call Ben, and when we hang up remind me to send him
    the address": an app-event reminder on ``phone.end_call``, set before the call, that fires
    when the call ends and is passed on with ``system.notify`` after hanging up."""
    forget_relations(w)
    person = w.contacts[w.index % len(w.contacts)]
    first = first_name(person)
    what, word = w.rng.choice(
        [(f"send {first} the address", "address"), (f"book a table for me and {first}", "table"),
         (f"add {first}'s birthday to my calendar", "birthday"), (f"forward {first} the tickets", "tickets"),
         (f"pay {first} back for lunch", "lunch")]
    )  # fmt: skip
    goal = w.rng.choice([f"Call {first}, and when we hang up, remind me to {what}.",
                         f"Ring {first} for me. Once the call is over, remind me to {what}."])  # fmt: skip
    plan = [
        call("contacts.search", query=first),
        call("memory.remind", content=what, trigger="app_event", when="phone.end_call"),
        call("phone.call", number=person["phone"]),
        call("phone.end_call"),
        call("system.notify", title="Reminder", text=what[0].upper() + what[1:]),
        call("finish", answer=f"Called {first}; I reminded you to {what}."),
    ]
    return Draft(
        goal=goal,
        criteria=[
            state("phone.calls", "created", number={"person": person["id"]}, direction="out"),
            _intent("app_event", "phone.end_call", word),
            _told(word, w.now.isoformat(timespec="seconds")),
            behavior("required_call", "system.notify", arguments={"text": {"icontains": word}}),
            behavior("before", "phone.end_call", then="system.notify"),
        ],
        milestones=[
            behavior("required_call", "contacts.search", arguments={"query": {"icontains": first}}),
            behavior("required_call", "memory.remind", arguments={"trigger": "app_event", "when": "phone.end_call"}),
        ],
        plan=plan,
        max_steps=20,
        probes=[
            passes("reminder set after dialling", [plan[0], plan[2], plan[1], plan[3], plan[4], plan[5]]),
            fails("told before hanging up", [plan[0], plan[1], plan[2], plan[4], plan[3], plan[5]]),
            fails(
                "a reminder on the call starting",
                replacing(plan, 1, call("memory.remind", content=what, trigger="app_event", when="phone.call")),
            ),
        ],
    )


@template(
    "reminders.cancel",
    apps=["clock"],
    domain=Domain.TIME,
    category=MEMORY,
    difficulty=2,
    capabilities=["recall", "remind", "forget"],
    count=10,
)
def cancel(w: World) -> Draft:
    """Template ``reminders.cancel``: "cancel my reminder about the plants": among several
    reminders and memories, that intent is forgotten (``valid`` false) and nothing else."""
    picks = w.rng.sample(ERRANDS, 3)
    book = MemoryBook()
    entries = []
    for what, _ in picks:
        due = w.now + dt.timedelta(hours=w.rng.randrange(2, 30))
        entries.append(book.add("intent", f"Remind me to {what}", ago(w, w.rng.randrange(1, 5)),
                                trigger={"type": "time", "value": _t(due)}, action=what.capitalize()))  # fmt: skip
    book.distract(w, 3)
    fixtures = w.fixtures(memory=book.fixtures())
    target, other = entries[w.index % 3], entries[(w.index + 1) % 3]
    what, word = picks[w.index % 3]
    goal = w.rng.choice(
        [f"Cancel my reminder to {what}.", f"I don't need the reminder about {word} any more, delete it."]
    )
    plan = [
        call("memory.search", query=word, kind="intent"),
        call("memory.forget", id=target["id"]),
        call("finish", answer=f"Cancelled the reminder to {what}."),
    ]
    return Draft(
        goal=goal,
        fixtures=fixtures,
        criteria=[state("memory.entries", "updated", id=target["id"], valid=False)],
        plan=plan,
        probes=[
            passes(
                "looked up without the kind", replacing(plan, 0, call("memory.search", query=f"remind me to {word}"))
            ),
            fails("cancelled another reminder too", [*plan[:2], call("memory.forget", id=other["id"]), plan[2]]),
            fails("cancelled the wrong one", replacing(plan, 1, call("memory.forget", id=other["id"]))),
        ],
    )
