"""Templates for the fields the existing apps gained: event reminders and per-event time zones,
do-not-disturb until a time or on a schedule, voicemail with transcripts, and contacts with
several labelled numbers and e-mail addresses (and fields cleared).

Rows these tasks need beyond the world's (voicemails, schedules, reminders) are seeded here from
the template's own stream (``w.stream("fields")``), consistent with the world's contacts, clock
and time zone.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any
from zoneinfo import ZoneInfo

from apps.calendar.templates import day_words, found, hm, iso, upcoming
from apps.clock.templates import spoken
from phoneenv.contract import CompositeCriterion, Criterion, Domain
from phoneenv.tasks.templates import (
    Draft,
    answer,
    answer_if_said,
    answer_time_if_said,
    ask_first,
    behavior,
    call,
    confirm_variant,
    dictated,
    fails,
    finishing,
    named,
    namesake,
    national,
    passes,
    pick,
    replacing,
    state,
    template,
)
from phoneenv.tasks.world import World

# -- shared helpers ------------------------------------------------------------------------------


def exactly(items: list[Any]) -> dict[str, Any]:
    """A condition that a list field holds exactly ``items`` (distinct values, any order): its
    length and each item (``has``), nested so one condition object carries every item."""
    cond: dict[str, Any] = {"len": len(items)}
    inner = cond
    for item in items:
        nxt: dict[str, Any] = {"has": item}
        inner["any"] = [nxt]
        inner = nxt
    return cond


def minutes_words(m: int) -> str:
    """Minutes before an event as a user says them: 60 → "an hour", 1440 → "a day"."""
    if m == 1440:
        return "a day"
    if m == 2880:
        return "two days"
    if m % 60 == 0:
        return "an hour" if m == 60 else f"{m // 60} hours"
    return f"{m} minutes"


REMINDERS = [5, 10, 15, 30, 60, 120, 1440]

# (zone, how a user names it)
ZONES = [
    ("America/New_York", "New York"),
    ("Europe/London", "London"),
    ("Asia/Tokyo", "Tokyo"),
    ("America/Los_Angeles", "Los Angeles"),
    ("Australia/Sydney", "Sydney"),
    ("Asia/Singapore", "Singapore"),
    ("Europe/Berlin", "Berlin"),
    ("America/Sao_Paulo", "São Paulo"),
]


def other_zone(w: World) -> tuple[str, str]:
    """A zone other than the world's own (whose clock reads differently at the task's dates)."""
    return w.rng.choice([z for z in ZONES if z[0] != w.timezone])


def to_local(w: World, wall: dt.datetime, zone: str) -> dt.datetime:
    """Wall-clock time ``wall`` in ``zone`` as the world's phone-local time."""
    return wall.replace(tzinfo=ZoneInfo(zone)).astimezone(ZoneInfo(w.timezone)).replace(tzinfo=None)


def future_event(w: World) -> dict[str, Any]:
    """An upcoming event named unambiguously by title and day."""
    return w.rng.choice(upcoming(w))


def event_index(w: World, ev: dict[str, Any]) -> int:
    return next(i for i, e in enumerate(w.table("calendar.events")) if e["id"] == ev["id"])


# -- calendar: reminders -------------------------------------------------------------------------


@template(
    "fields.event_reminders",
    apps=["calendar"],
    domain=Domain.SCHEDULING,
    capabilities=["lookup", "update", "time"],
    difficulty=2,
    count=12,
)
def event_reminders(w: World) -> Draft:
    """Template ``fields.event_reminders``: two reminders on an upcoming event."""
    ev = future_event(w)
    a, b = sorted(w.rng.sample(REMINDERS, 2))
    today = w.now.date()
    start = dt.datetime.fromisoformat(ev["start"])
    what = f'"{ev["title"]}" {day_words(start.date(), today)}'
    (phrase,) = pick(
        w,
        [
            f"Remind me about {what} {minutes_words(b)} before and again {minutes_words(a)} before.",
            f"Put two reminders on {what}: one {minutes_words(a)} before it starts and one {minutes_words(b)} before.",
            f"I keep forgetting {what}. Set alerts {minutes_words(b)} and {minutes_words(a)} ahead of it.",
        ],
    )
    word = ev["title"].split()[0]
    plan = [
        call("calendar.search_events", query=word),
        call("calendar.add_reminder", event_id=ev["id"], minutes_before=b),
        call("calendar.add_reminder", event_id=ev["id"], minutes_before=a),
        call("finish", answer=f"Reminders set {minutes_words(b)} before and {minutes_words(a)} before."),
    ]
    others = [e for e in w.table("calendar.events") if e["id"] != ev["id"]]
    wrong = w.rng.choice([m for m in REMINDERS if m not in (a, b)])
    probes = [
        passes("the other order", [plan[0], plan[2], plan[1], plan[3]]),
        passes("found by listing the day", replacing(plan, 0, call("calendar.list_events", date=ev["start"][:10]))),
        fails("only one reminder", replacing(plan, 2)),
        fails("one at the wrong time", replacing(plan, 2, call("calendar.add_reminder", event_id=ev["id"], minutes_before=wrong))),
        fails("a stray third reminder", [*plan[:3], call("calendar.add_reminder", event_id=ev["id"], minutes_before=wrong), plan[3]]),
        fails("told another lead time", finishing(plan, f"Reminders set {minutes_words(b)} before and {minutes_words(wrong)} before.")),
        passes("told in minutes", finishing(plan, f"Done: alerts at {b} min and {a} min before.")),
    ]  # fmt: skip
    if others:
        o = w.rng.choice(others)
        probes.append(
            fails("the second on another event", replacing(plan, 2, call("calendar.add_reminder", event_id=o["id"], minutes_before=a)))
        )  # fmt: skip
    return Draft(
        goal=phrase,
        criteria=[
            state("calendar.events", "updated", id=ev["id"], reminders=exactly([a, b]), start=ev["start"]),
            # a lead time the answer tells is one of the two set
            answer_if_said("duration", b * 60, also=[a * 60]),
        ],
        milestones=[found(ev)],
        plan=plan,
        probes=probes,
    )


@template(
    "fields.reminder_change",
    apps=["calendar"],
    domain=Domain.SCHEDULING,
    capabilities=["lookup", "update", "time"],
    difficulty=2,
    count=12,
)
def reminder_change(w: World) -> Draft:
    """Template ``fields.reminder_change``: replace one of an event's reminders, drop another."""
    ev = future_event(w)
    old_a, old_b = sorted(w.stream("fields").sample(REMINDERS, 2))
    w.table("calendar.events")[event_index(w, ev)] = ev = {**ev, "reminders": (old_a, old_b)}
    new = w.rng.choice([m for m in REMINDERS if m not in (old_a, old_b)])
    today = w.now.date()
    start = dt.datetime.fromisoformat(ev["start"])
    what = f'"{ev["title"]}" {day_words(start.date(), today)}'
    drop_all = w.index % 4 == 3
    if drop_all:
        goal = w.rng.choice(
            [f"Take all the reminders off {what}, I don't need them.",
             f"Please remove every alert from {what}."]
        )  # fmt: skip
        plan = [
            call("calendar.search_events", query=ev["title"].split()[0]),
            call("calendar.remove_reminder", event_id=ev["id"], minutes_before=old_a),
            call("calendar.remove_reminder", event_id=ev["id"], minutes_before=old_b),
            call("finish", answer="Removed both reminders."),
        ]
        crit = state("calendar.events", "updated", id=ev["id"], reminders=None)
        probes = [
            passes("the other order", [plan[0], plan[2], plan[1], plan[3]]),
            fails("one left", replacing(plan, 2)),
            fails("the event deleted", [*replacing(plan, 1, call("calendar.delete_event", event_id=ev["id"]))[:-2], plan[3]]),
        ]  # fmt: skip
    else:
        goal = w.rng.choice(
            [f"On {what}, change the {minutes_words(old_a)} reminder to {minutes_words(new)} before, and drop the {minutes_words(old_b)} one.",
             f"For {what}: I want a reminder {minutes_words(new)} before instead of {minutes_words(old_a)}, and no reminder {minutes_words(old_b)} before.",
             f"Swap the {minutes_words(old_a)} alert on {what} for one {minutes_words(new)} before, and delete the {minutes_words(old_b)} alert."]
        )  # fmt: skip
        plan = [
            call("calendar.search_events", query=ev["title"].split()[0]),
            call("calendar.remove_reminder", event_id=ev["id"], minutes_before=old_a),
            call("calendar.remove_reminder", event_id=ev["id"], minutes_before=old_b),
            call("calendar.add_reminder", event_id=ev["id"], minutes_before=new),
            call("finish", answer=f"Now it reminds you {minutes_words(new)} before."),
        ]
        crit = state("calendar.events", "updated", id=ev["id"], reminders=exactly([new]))
        probes = [
            passes("added first", [plan[0], plan[3], plan[1], plan[2], plan[4]]),
            passes("read the event first", [plan[0], call("calendar.get_event", event_id=ev["id"]), *plan[1:]]),
            fails("the old one kept", replacing(plan, 2)),
            fails("the new one missing", replacing(plan, 3)),
            fails("the wrong new time", replacing(plan, 3, call("calendar.add_reminder", event_id=ev["id"], minutes_before=old_b))),
        ]  # fmt: skip
    return Draft(
        goal=goal,
        criteria=[crit],
        milestones=[found(ev)],
        plan=plan,
        probes=probes,
    )


# -- calendar: per-event time zone -----------------------------------------------------------------

CALL_TITLES = ["Call with the New York office", "Client call", "Interview", "Webinar", "Family video call",
               "Vendor meeting", "Board call", "Podcast recording"]  # fmt: skip


@template(
    "fields.event_in_zone",
    apps=["calendar", "contacts"],
    domain=Domain.SCHEDULING,
    capabilities=["create", "time", "lookup"],
    difficulty=3,
    count=12,
)
def event_in_zone(w: World) -> Draft:
    """Template ``fields.event_in_zone``: an event set in another city's time, kept in that zone."""
    zone, city = other_zone(w)
    (c,) = w.pick("contacts.contacts")
    first = c["name"].split()[0]
    titles = {e["title"] for e in w.table("calendar.events")}
    title = w.rng.choice([t for t in CALL_TITLES if t not in titles])
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 6))
    wall = dt.datetime.combine(day, dt.time(w.rng.choice([8, 9, 10, 14, 15, 16, 17]), w.rng.choice([0, 30])))
    mins = w.rng.choice([30, 45, 60])
    remind = w.rng.choice([None, 10, 15, 30])
    start_l, end_l = to_local(w, wall, zone), to_local(w, wall + dt.timedelta(minutes=mins), zone)
    # the day as a user in that city says it
    when = f"on {wall:%A} {wall.day} {wall:%B} at {hm(wall)} {city} time"
    tail = f" and remind me {minutes_words(remind)} before" if remind else ""
    (goal,) = pick(
        w,
        [
            f'Add "{title}" with {first} to my calendar {when}, for {mins} minutes. Keep the event in {city} time{tail}.',
            f'{first} is in {city}. Schedule "{title}" with them {when} ({mins} minutes), set in {city}\'s time zone{tail}.',
            f'Put "{title}" in my calendar {when}, {mins} minutes, with {first} invited; the event should show {city} time{tail}.',
        ],
    )
    args: dict[str, Any] = {
        "title": title,
        "start": iso(wall),
        "end": iso(wall + dt.timedelta(minutes=mins)),
        "attendees": [c["name"]],
        "timezone": zone,
    }
    if remind:
        args["reminders"] = [remind]
    plan = [
        call("contacts.search", query=first),
        call("calendar.create_event", **args),
        call("finish", answer=f"Added for {hm(start_l)} your time ({hm(wall)} in {city})."),
    ]
    cond: dict[str, Any] = {
        "title": {"iequals": title},
        "start": iso(start_l),
        "end": iso(end_l),
        "timezone": zone,
        "attendees": {"has_person": c["id"]},
        "reminders": exactly([remind]) if remind else None,
    }
    local_args = {**args, "start": iso(start_l), "end": iso(end_l)}
    local_args.pop("timezone")
    fix_after = [
        plan[0],
        call("calendar.create_event", **{**args, "timezone": None} | {"start": iso(start_l), "end": iso(end_l)}),
        call(
            "calendar.update_event",
            event_id=w.next_id("calendar.events", "ev_"),
            start=iso(wall),
            end=iso(wall + dt.timedelta(minutes=mins)),
            timezone=zone,
        ),
        plan[-1],
    ]
    probes = [
        passes("zone set afterwards with its times", fix_after),
        fails("the clock time read as local", replacing(plan, 1, call("calendar.create_event", **{**args, "timezone": None}))),
        fails("the right moment but not kept in that zone", replacing(plan, 1, call("calendar.create_event", **local_args))),
        fails("nobody invited", replacing(plan, 1, call("calendar.create_event", **{**args, "attendees": []}))),
    ]  # fmt: skip
    if remind:
        probes.append(
            fails("no reminder", replacing(plan, 1, call("calendar.create_event", **{**args, "reminders": []})))
        )
    return Draft(
        goal=goal,
        criteria=[state("calendar.events", "created", **cond)],
        milestones=[],
        plan=plan,
        probes=probes,
    )


@template(
    "fields.zone_event_time",
    apps=["calendar"],
    domain=Domain.SCHEDULING,
    capabilities=["lookup", "time", "update"],
    difficulty=2,
    count=12,
)
def zone_event_time(w: World) -> Draft:
    """Template ``fields.zone_event_time``: when is an event kept in another zone for me, and a
    reminder on it."""
    zone, city = other_zone(w)
    titles = {e["title"] for e in w.table("calendar.events")}
    title = w.rng.choice([t for t in CALL_TITLES if t not in titles])
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 6))
    wall = dt.datetime.combine(day, dt.time(w.rng.choice([7, 8, 9, 11, 13, 18, 20]), w.rng.choice([0, 30])))
    start_l = to_local(w, wall, zone)
    end_l = start_l + dt.timedelta(minutes=60)
    ev = {
        "id": w.next_id("calendar.events", "ev_"),
        "title": title,
        "start": iso(start_l),
        "end": iso(end_l),
        "location": None,
        "attendees": (),
        "notes": None,
        "all_day": False,
        "timezone": zone,
    }
    w.table("calendar.events").append(ev)
    remind = w.rng.choice([10, 15, 30, 60])
    (goal,) = pick(
        w,
        [
            f'"{title}" is set in {city} time. What time is it for me here? Also remind me {minutes_words(remind)} before.',
            f'When does "{title}" start on my clock (it was entered in {city} time)? And add a reminder {minutes_words(remind)} ahead.',
            f'Tell me my local start time for "{title}", the {city} one, and set an alert {minutes_words(remind)} before it.',
        ],
    )
    plan = [
        call("calendar.search_events", query=title.split()[0]),
        call("calendar.add_reminder", event_id=ev["id"], minutes_before=remind),
        call("finish", answer=f"It starts at {hm(start_l)} your time ({hm(wall)} in {city}); reminder set."),
    ]
    wrong = hm(wall) if hm(wall) != hm(start_l) else hm(start_l + dt.timedelta(hours=1))
    # The local time in any spelling ("08:00", "8:00 AM", "8 am"), beside the city's own if
    # wanted, but not given as the city's time ("08:00 in London" when London says 07:00).
    told: list[Criterion] = [answer(type="time", value=hm(start_l), context=[hm(wall)])]
    if hm(wall) != hm(start_l):
        told.append(
            CompositeCriterion(
                kind="not",
                id="not_as_the_city_time",
                criteria=[answer(id="city_time", type="time", value=hm(start_l), about=city)],
            )
        )
    return Draft(
        goal=goal,
        criteria=[
            state("calendar.events", "updated", id=ev["id"], reminders=exactly([remind]), timezone=zone),
            *told,
        ],
        milestones=[found(ev)],
        plan=plan,
        perturb_exempt=["2.answer"],
        probes=[
            passes("read the event", [plan[0], call("calendar.get_event", event_id=ev["id"]), *plan[1:]]),
            passes("answered briefly", finishing(plan, f"{hm(start_l)} here.")),
            fails("the other city's time given", finishing(plan, f"It starts at {wrong}.")),
            passes("in 12-hour form", finishing(plan, f"It's at {spoken(hm(start_l))} your time.")),
            passes(
                "the city's time in brackets",
                finishing(plan, f"{spoken(hm(start_l))} here ({city}: {spoken(hm(wall))})."),
            ),
            passes(
                "the city's time first",
                finishing(plan, f"It's at {spoken(hm(wall))} {city} time, which is {spoken(hm(start_l))} for you."),
            ),
            *(
                [fails("the times swapped", finishing(plan, f"{hm(wall)} your time ({hm(start_l)} in {city})."))]
                if hm(wall) != hm(start_l)
                else []
            ),
            fails("no reminder", replacing(plan, 1)),
            fails("a hedge", finishing(plan, f"{hm(start_l)} or {hm(start_l + dt.timedelta(hours=1))} your time.")),
            fails(
                "the right time only denied",
                finishing(plan, f"It's at {hm(start_l + dt.timedelta(hours=1))} your time, not {hm(start_l)}."),
            ),
            passes("o'clock", finishing(plan, f"{start_l.hour % 12 or 12} o'clock your time."))
            if start_l.minute == 0
            else passes("half past", finishing(plan, f"Half past {start_l.hour % 12 or 12} your time.")),
            fails(
                "the zone changed",
                [*plan[:2], call("calendar.update_event", event_id=ev["id"], timezone=w.timezone), plan[2]],
            ),
        ],
    )


# -- settings: do-not-disturb -----------------------------------------------------------------------


@template(
    "fields.dnd_until",
    apps=["settings", "calendar"],
    domain=Domain.DEVICE,
    capabilities=["lookup", "update", "time"],
    difficulty=2,
    count=12,
)
def dnd_until(w: World) -> Draft:
    """Template ``fields.dnd_until``: do-not-disturb until an event ends, or until a time."""
    today = w.now.date()
    if w.index % 3 != 2:
        ev = future_event(w)
        end = dt.datetime.fromisoformat(ev["end"])
        start = dt.datetime.fromisoformat(ev["start"])
        what = f'"{ev["title"]}" {day_words(start.date(), today)}'
        goal = w.rng.choice(
            [f"Silence my phone until {what} is over.",
             f"Turn on do not disturb until {what} ends, then let notifications through again.",
             f"No interruptions please until the end of {what}."]
        )  # fmt: skip
        plan = [
            call("calendar.search_events", query=ev["title"].split()[0]),
            call("settings.set_dnd_until", until=iso(end)),
            call("finish", answer=f"Do not disturb is on until {hm(end)}."),
        ]
        milestones: list[Criterion] = [found(ev)]
        near = [
            fails("until it starts", replacing(plan, 1, call("settings.set_dnd_until", until=iso(start)))),
            passes("found by listing the day", replacing(plan, 0, call("calendar.list_events", date=ev["start"][:10]))),
        ]
    else:
        hour = w.rng.choice([6, 7, 8])
        end = dt.datetime.combine(today + dt.timedelta(days=1), dt.time(hour, w.rng.choice([0, 30])))
        goal = w.rng.choice(
            [f"I'm going to bed. Do not disturb until {hm(end)} tomorrow morning, please.",
             f"Mute everything until tomorrow at {hm(end)}."]
        )  # fmt: skip
        plan = [
            call("settings.dnd_status"),
            call("settings.set_dnd_until", until=iso(end)),
            call("finish", answer=f"Do not disturb until {hm(end)} tomorrow."),
        ]
        milestones = []
        near = [
            fails("today instead of tomorrow", replacing(plan, 1, call("settings.set_dnd_until", until=iso(end - dt.timedelta(days=1))))
                  ) if end - dt.timedelta(days=1) > w.now else fails("an hour late", replacing(plan, 1, call("settings.set_dnd_until", until=iso(end + dt.timedelta(hours=1))))),
            passes("without checking first", plan[1:]),
        ]  # fmt: skip
    return Draft(
        goal=goal,
        criteria=[
            state("settings.settings", "updated", id="dnd", value=True),
            state("settings.dnd_timer", "created", id="until", until=iso(end)),
        ],
        milestones=milestones,
        plan=plan,
        probes=[
            *near,
            fails("on with no end", replacing(plan, 1, call("settings.set_dnd", enabled=True))),
            fails("ringer muted instead", replacing(plan, 1, call("settings.set_volume", stream="ring", level=0))),
        ],
    )


DAY_SETS = [
    (["mon", "tue", "wed", "thu", "fri"], "every weeknight", "Weeknights"),
    (["sat", "sun"], "on weekends", "Weekend"),
    (["mon", "wed"], "on Mondays and Wednesdays", "Class"),
    (["tue", "thu"], "on Tuesdays and Thursdays", "Gym"),
    (["sun", "mon", "tue", "wed", "thu"], "Sunday to Thursday", "School nights"),  # not "nights": spans may be by day
    (["fri"], "on Fridays", "Friday focus"),
]
SPANS = [("22:00", "07:00"), ("22:30", "06:45"), ("23:00", "08:00"), ("13:00", "14:00"), ("09:00", "12:00"),
         ("21:30", "06:30")]  # fmt: skip


def _shift(hm_: str, minutes: int) -> str:
    """``hm_`` ("HH:MM") moved by ``minutes``, round the clock."""
    t = (int(hm_[:2]) * 60 + int(hm_[3:]) + minutes) % 1440
    return f"{t // 60:02d}:{t % 60:02d}"


@template(
    "fields.dnd_schedule",
    apps=["settings"],
    domain=Domain.DEVICE,
    capabilities=["create", "time"],
    difficulty=2,
    count=12,
)
def dnd_schedule(w: World) -> Draft:
    """Template ``fields.dnd_schedule``: a recurring do-not-disturb schedule."""
    days, words, label = DAY_SETS[w.index % len(DAY_SETS)]
    start, end = SPANS[(w.index + w.index // len(DAY_SETS)) % len(SPANS)]  # a new pair for every task
    (goal,) = pick(
        w,
        [
            f"Set do not disturb to come on {words} from {start} to {end}.",
            f"I want my phone quiet {words} between {start} and {end}. Make that a schedule.",
        ],
    )
    plan = [
        call("settings.dnd_status"),
        call("settings.add_dnd_schedule", name=label, days=days, start=start, end=end),
        call("finish", answer=f"Do not disturb will turn on {words} from {start} to {end}."),
    ]
    other_days = [d for d in ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] if d not in days]
    probes = [
        passes("days in another order", replacing(plan, 1, call("settings.add_dnd_schedule", name=label, days=list(reversed(days)), start=start, end=end))),
        passes("another name", replacing(plan, 1, call("settings.add_dnd_schedule", name="Quiet time", days=days, start=start, end=end))),
        fails("start and end swapped", replacing(plan, 1, call("settings.add_dnd_schedule", name=label, days=days, start=end, end=start))),
        fails("switched on now instead", replacing(plan, 1, call("settings.set_dnd", enabled=True))),
        fails("an extra day", replacing(plan, 1, call("settings.add_dnd_schedule", name=label, days=[*days, other_days[0]], start=start, end=end))),
        fails("told another end", finishing(plan, f"Do not disturb will turn on {words} from {start} to {_shift(end, 60)}.")),
        passes("told nothing of the times", finishing(plan, "Done, the schedule is on.")),
    ]  # fmt: skip
    if len(days) > 1:
        probes.append(
            fails("a day missing", replacing(plan, 1, call("settings.add_dnd_schedule", name=label, days=days[1:], start=start, end=end)))
        )  # fmt: skip
    return Draft(
        goal=goal,
        criteria=[
            state("settings.dnd_schedules", "created", days=exactly(days), start=start, end=end, enabled=True),
            answer_if_said("time", start, also=[end]),  # a span told is the one set
        ],
        milestones=[],
        plan=plan,
        probes=probes,
    )


def seed_schedules(w: World) -> list[dict[str, Any]]:
    """Two do-not-disturb schedules in the world (distinct names), from the fields stream."""
    rng = w.stream("fields")
    picked = rng.sample(range(len(DAY_SETS)), 2)
    recs = []
    for k, i in enumerate(picked):
        days, _, label = DAY_SETS[i]
        start, end = SPANS[rng.randrange(len(SPANS))]
        recs.append(
            {"id": f"dnds_{k + 1}", "name": label, "days": tuple(days), "start": start, "end": end, "enabled": True}
        )
    w.table("settings.dnd_schedules").extend(recs)
    return recs


@template(
    "fields.dnd_off",
    apps=["settings"],
    domain=Domain.DEVICE,
    capabilities=["lookup", "update"],
    difficulty=2,
    count=12,
)
def dnd_off(w: World) -> Draft:
    """Template ``fields.dnd_off``: turn do-not-disturb off now and pause one schedule (or delete it)."""
    scheds = seed_schedules(w)
    target, keep = w.rng.sample(scheds, 2)
    until = w.now + dt.timedelta(hours=w.rng.choice([2, 3, 5]))
    w.table("settings.dnd_timer").append({"id": "until", "until": iso(until)})
    recs = w.table("settings.settings")
    i = next(i for i, r in enumerate(recs) if r["id"] == "dnd")
    recs[i] = {"id": "dnd", "value": True}
    delete = w.index % 3 == 2
    confirm = delete and confirm_variant(w, 0.5)
    name = f'"{target["name"]}"'
    if delete:
        goal = w.rng.choice(
            [f"Turn do not disturb off now, and get rid of my {name} quiet schedule for good.",
             f"Switch off do not disturb and delete the {name} schedule."]
        )  # fmt: skip
    else:
        goal = w.rng.choice(
            [f"I'm expecting a call: turn off do not disturb, and pause my {name} schedule for now (don't delete it).",
             f"Do not disturb off please, and switch the {name} schedule off without removing it."]
        )  # fmt: skip
    plan = [call("settings.set_dnd", enabled=False), call("settings.dnd_status")]
    criteria: list[Criterion] = [
        state("settings.settings", "updated", id="dnd", value=False),
        state("settings.dnd_timer", "deleted", id="until"),
    ]
    if delete:
        criteria.append(state("settings.dnd_schedules", "deleted", id=target["id"]))
        if confirm:
            goal += " Check with me before deleting it."
            ask_first(plan, criteria, "settings.delete_dnd_schedule", f"Delete the {target['name']} schedule?")
        plan.append(call("settings.delete_dnd_schedule", schedule_id=target["id"]))
        wrong = call("settings.delete_dnd_schedule", schedule_id=keep["id"])
        alt = call("settings.update_dnd_schedule", schedule_id=target["id"], enabled=False)
    else:
        criteria.append(state("settings.dnd_schedules", "updated", id=target["id"], enabled=False))
        criteria.append(named(state("settings.dnd_schedules", "present", id=target["id"]), "kept"))
        plan.append(call("settings.update_dnd_schedule", schedule_id=target["id"], enabled=False))
        wrong = call("settings.update_dnd_schedule", schedule_id=keep["id"], enabled=False)
        alt = call("settings.delete_dnd_schedule", schedule_id=target["id"])
    plan.append(call("finish", answer="Done: do not disturb is off."))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[
            behavior(
                "required_call",
                "settings.delete_dnd_schedule" if delete else "settings.update_dnd_schedule",
                id="schedule",
                arguments={"schedule_id": target["id"]},
            )
        ],
        plan=plan,
        probes=[
            passes("the schedule first", [*plan[1:-1], plan[0], plan[-1]]),
            fails("do not disturb left on", replacing(plan, 0, call("settings.dnd_status"))),
            fails("the other schedule", replacing(plan, -2, wrong)),
            fails("paused instead of deleted" if delete else "deleted instead of paused", replacing(plan, -2, alt)),
        ],
    )


# -- phone: voicemail -------------------------------------------------------------------------------

TRANSCRIPTS = [
    ("Hi, it's {first}. The plumber can come on {day} at {time}, call me back to confirm.", "{time}"),
    ("Hey, {first} here. I left the keys at the {place}, grab them before {time}.", "{place}"),
    ("Hello, this is {first}. Dinner moved to {day}, same place. Let me know if {time} still works.", "{day}"),
    ("It's {first}. Can you pick up the parcel from the {place}? It closes at {time}.", "{place}"),
    ("Hi, {first} again. The meeting is now in the {place} at {time}, not upstairs.", "{place}"),
]


def relayed(fact: str) -> Criterion:
    """The answer tells a voicemail's ``fact``: a time as a time in any form ("16:00", "4 pm"),
    anything else as its words."""
    if re.fullmatch(r"\d{1,2}:\d{2}", fact):
        return answer(type="time", value=f"{int(fact[:-3]):02d}:{fact[-2:]}")
    return answer(contains=[fact])


VM_PLACES = ["post office", "front desk", "pharmacy", "library", "reception", "bakery"]
SPAM = [
    "Congratulations, you have been selected for a free cruise. Press one to claim.",
    "This is an important message about your car's extended warranty.",
    "Your parcel could not be delivered. Visit our website to reschedule.",
]


def seed_voicemails(w: World, k: int = 3) -> list[dict[str, Any]]:
    """``k`` voicemails from distinct contacts plus one from an unknown number, newest last;
    returns the contacts' voicemails with ``fact`` (what the message says) beside each."""
    rng = w.stream("fields")
    people = rng.sample(w.contacts, k)
    out = []
    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    for i, c in enumerate(people):
        text, key = TRANSCRIPTS[(w.index + i) % len(TRANSCRIPTS)]
        while True:  # each message's fact is its own: no other transcript says it
            slots = {
                "first": c["name"].split()[0],
                "day": rng.choice(days),
                "time": f"{rng.randrange(9, 19)}:{rng.choice(['00', '30'])}",
                "place": rng.choice(VM_PLACES),
            }
            said, fact = text.format(**slots).lower(), key.format(**slots).lower()
            if all(fact not in r["transcript"].lower() and f.lower() not in said for r, _, f in out):
                break
        rec = {
            "id": f"vm_{i + 1}",
            "number": c["phone"],
            "time": w.ts(w.waking_ago(rng, 20, 3000)),
            "duration_s": rng.randrange(8, 90),
            "transcript": text.format(**slots),
            "read": rng.random() < 0.3,
        }
        out.append((rec, c, key.format(**slots)))
    spam = {
        "id": f"vm_{k + 1}",
        "number": w.phone_number("landline"),
        "time": w.ts(w.waking_ago(rng, 20, 3000)),
        "duration_s": rng.randrange(15, 40),
        "transcript": rng.choice(SPAM),
        "read": False,
    }
    w.table("phone.voicemails").extend([r for r, _, _ in out] + [spam])
    return out


@template(
    "fields.voicemail_callback",
    apps=["phone", "contacts"],
    domain=Domain.CALLS,
    capabilities=["lookup", "call"],
    difficulty=2,
    count=12,
)
def voicemail_callback(w: World) -> Draft:
    """Template ``fields.voicemail_callback``: play someone's voicemail and call them back."""
    vms = seed_voicemails(w)
    rec, c, fact = w.rng.choice(vms)
    first = c["name"].split()[0]
    (goal,) = pick(
        w,
        [
            f"Play the voicemail {first} left me and call them back.",
            f"{first} left a voicemail. Listen to it, then ring them back.",
            f"Check what {first}'s voicemail says and return the call.",
        ],
    )
    plan = [
        call("phone.list_voicemails"),
        call("phone.play_voicemail", voicemail_id=rec["id"]),
        call("phone.call_back_voicemail", voicemail_id=rec["id"]),
        call("finish", answer=f"{first} said: {rec['transcript']} I'm calling {first} now."),
    ]
    other_rec, _other_c, _ = next(v for v in vms if v[0]["id"] != rec["id"])
    asks_content = "says" in goal
    said_times = re.findall(r"\b\d{1,2}:\d{2}\b", rec["transcript"])
    return Draft(
        goal=goal,
        criteria=[
            state("phone.voicemails", "updated", id=rec["id"], read=True)
            if not rec["read"]
            else state("phone.voicemails", "present", id=rec["id"]),
            state("phone.calls", "created", number={"number": c["phone"]}, direction="out"),
            behavior("required_call", "phone.play_voicemail", id="played", arguments={"voicemail_id": rec["id"]}),
            # heard first, then the call back: every phrasing puts listening before calling
            behavior("before", "phone.play_voicemail", id="heard_first", then="phone.call*"),
            # asked what it says: the answer tells it; any time relayed is the one said
            *([relayed(fact)] if asks_content else []),
            *(
                [answer_time_if_said(f"{int(said_times[0][:-3]):02d}:{said_times[0][-2:]}")]
                if len(said_times) == 1
                else []
            ),
        ],
        milestones=[
            behavior("required_call", "phone.play_voicemail", id="heard", arguments={"voicemail_id": rec["id"]})
        ],
        plan=plan,
        perturb_exempt=["3.answer"],
        probes=[
            passes("dialled the number", replacing(plan, 2, call("phone.call", number=c["phone"]))),
            passes(
                "only the unheard ones listed", replacing(plan, 0, call("phone.list_voicemails", number=c["phone"]))
            ),
            fails("not played", replacing(plan, 1)),
            fails(
                "someone else called",
                replacing(plan, 2, call("phone.call_back_voicemail", voicemail_id=other_rec["id"])),
            ),
            fails(
                "deleted instead of calling", replacing(plan, 2, call("phone.delete_voicemail", voicemail_id=rec["id"]))
            ),
            fails("called back before listening", [plan[0], plan[2], plan[1], plan[3]]),
            passes("played it twice", [plan[0], plan[1], plan[1], plan[2], plan[3]]),
            *(
                [
                    fails("the message not passed on", finishing(plan, f"Calling {first} back now.")),
                    passes("the gist", finishing(plan, f"{first}'s message is about {fact}. Calling them now.")),
                ]
                if asks_content
                else []
            ),
            *(
                [
                    fails(
                        "relayed another time",
                        finishing(
                            plan, f"{first} said: {rec['transcript'].replace(said_times[0], '23:45')} Calling back."
                        ),
                    )
                ]
                if len(said_times) == 1
                else []
            ),
        ],
    )


@template(
    "fields.voicemail_transcript",
    apps=["phone", "contacts"],
    domain=Domain.CALLS,
    capabilities=["lookup", "delete", "answer"],
    difficulty=2,
    count=12,
)
def voicemail_transcript(w: World) -> Draft:
    """Template ``fields.voicemail_transcript``: what did someone say in a voicemail; then delete it
    (and the spam one)."""
    vms = seed_voicemails(w)
    rec, c, fact = w.rng.choice(vms)
    spam = w.table("phone.voicemails")[-1]
    first = c["name"].split()[0]
    confirm = confirm_variant(w, 0.4)
    also_spam = w.index % 2 == 1
    goal = w.rng.choice(
        [f"What did {first} say in their voicemail? Delete it once you've told me.",
         f"Read me {first}'s voicemail, then delete it."]
    )  # fmt: skip
    if also_spam:
        goal += " The junk voicemail from the unknown number can go too."
    plan = [call("phone.list_voicemails"), call("phone.play_voicemail", voicemail_id=rec["id"])]
    criteria: list[Criterion] = [
        state("phone.voicemails", "deleted", id=rec["id"]),
        # the fact said as it is, not denied in its clause ("dinner is not on Friday"; "no longer
        # upstairs - it's now in the reception" states "reception")
        relayed(fact),
        behavior("required_call", "phone.play_voicemail", id="played", arguments={"voicemail_id": rec["id"]}),
    ]
    said_times = re.findall(r"\b\d{1,2}:\d{2}\b", rec["transcript"])
    if len(said_times) == 1 and said_times[0] != fact:  # a time relayed must be the one said
        criteria.append(answer_time_if_said(f"{int(said_times[0][:-3]):02d}:{said_times[0][-2:]}"))
    if also_spam:
        criteria.append(named(state("phone.voicemails", "deleted", id=spam["id"]), "deleted:spam"))
    if confirm:
        goal += " Ask me before deleting anything."
        ask_first(plan, criteria, "phone.delete_voicemail", f"Delete {first}'s voicemail?")
    plan.append(call("phone.delete_voicemail", voicemail_id=rec["id"]))
    if also_spam:
        if confirm:
            plan.append(call("user.confirm", question="Delete the junk voicemail too?"))
        plan.append(call("phone.delete_voicemail", voicemail_id=spam["id"]))
    plan.append(call("finish", answer=f"{first} said: {rec['transcript']} I deleted it."))
    other = next(v for v in vms if v[0]["id"] != rec["id"])[0]
    stray = [call("user.confirm", question="Delete that one too?")] if confirm else []
    i_del = plan.index(call("phone.delete_voicemail", voicemail_id=rec["id"]))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[
            behavior("required_call", "phone.play_voicemail", id="played", arguments={"voicemail_id": rec["id"]})
        ],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
        probes=[
            passes("the gist", finishing(plan, f"The voicemail mentions {fact}. It's deleted.")),
            fails(
                "the wrong voicemail deleted",
                replacing(plan, i_del, call("phone.delete_voicemail", voicemail_id=other["id"])),
            ),
            fails("not deleted", replacing(plan, i_del)),
            fails(
                "a stray deletion",
                [*plan[:-1], *stray, call("phone.delete_voicemail", voicemail_id=other["id"]), plan[-1]],
            ),
            fails("the message not passed on", finishing(plan, "Deleted it.")),
            fails("told the other voicemail", finishing(plan, f"They said: {other['transcript']} I deleted it.")),
            fails("denied the fact", finishing(plan, f"It's not about {fact} any more. I deleted it.")),
            passes(
                "something else denied, then the fact",
                finishing(plan, f"It's no longer the usual plan - now it's {fact}. I deleted it."),
            ),
        ],
    )


# -- contacts: several numbers and e-mails, clearing a field ----------------------------------------

LABEL_WORDS = {"work": "work", "home": "home", "mobile": "mobile", "other": "other"}


@template(
    "fields.contact_add_number",
    apps=["contacts"],
    domain=Domain.CONTACTS,
    capabilities=["lookup", "update"],
    difficulty=2,
    count=12,
)
def contact_add_number(w: World) -> Draft:
    """Template ``fields.contact_add_number``: a labelled extra number, main or not."""
    (c,) = w.pick("contacts.contacts")
    twin = namesake(w, c)
    first = c["name"].split()[0]
    label = w.rng.choice(["work", "home", "work"])
    number = w.phone_number("landline" if label != "mobile" else "mobile")
    make_main = w.index % 2 == 1
    if make_main:
        goal = w.rng.choice(
            [f"Add {c['name']}'s {label} number {number} and make it the main one; keep the old number too.",
             f"{c['name']} gave me a {label} number, {number}. Save it on their contact as the primary number (don't lose the current one)."]
        )  # fmt: skip
    else:
        goal = w.rng.choice(
            [f"Save {number} as {c['name']}'s {label} number. Their current number stays the main one.",
             f"Add a {label} number to {c['name']}: {number}."]
        )  # fmt: skip
    plan = [
        call("contacts.search", query=first),
        call("contacts.add_number", contact_id=c["id"], number=number, label=label, primary=make_main),
        call("finish", answer="Saved."),
    ]
    if make_main:
        cond = {
            "phone": number,
            "phone_label": label,
            "other_phones": exactly([{"label": "mobile", "number": c["phone"]}]),
        }
        two_step = [plan[0], call("contacts.add_number", contact_id=c["id"], number=number, label=label),
                    call("contacts.set_primary_number", contact_id=c["id"], number=number), plan[-1]]  # fmt: skip
        near = [
            passes("added, then made main", two_step),
            fails("not made main", replacing(plan, 1, call("contacts.add_number", contact_id=c["id"], number=number, label=label))),
            fails("the old number overwritten", replacing(plan, 1, call("contacts.update", contact_id=c["id"], phone=number))),
        ]  # fmt: skip
    else:
        cond = {"phone": c["phone"], "other_phones": exactly([{"label": label, "number": number}])}
        near = [
            fails("made main", replacing(plan, 1, call("contacts.add_number", contact_id=c["id"], number=number, label=label, primary=True))),
            fails("the number replaced", replacing(plan, 1, call("contacts.update", contact_id=c["id"], phone=number))),
        ]  # fmt: skip
    wrong_label = "home" if label == "work" else "work"
    return Draft(
        goal=goal,
        criteria=[state("contacts.contacts", "updated", id=c["id"], **cond)],
        milestones=[],
        plan=plan,
        probes=[
            *near,
            passes("read the contact first", [plan[0], call("contacts.get", contact_id=c["id"]), *plan[1:]]),
            fails(
                "the wrong label",
                replacing(
                    plan,
                    1,
                    call(
                        "contacts.add_number", contact_id=c["id"], number=number, label=wrong_label, primary=make_main
                    ),
                ),
            ),
            fails(
                "their namesake",
                replacing(
                    plan,
                    1,
                    call("contacts.add_number", contact_id=twin["id"], number=number, label=label, primary=make_main),
                ),
            ),
            fails(
                "saved as a new contact",
                replacing(plan, 1, call("contacts.create", name=f"{c['name']} ({label})", phone=number)),
            ),
        ],
    )


@template(
    "fields.contact_clear",
    apps=["contacts"],
    domain=Domain.CONTACTS,
    capabilities=["lookup", "update"],
    difficulty=2,
    count=12,
)
def contact_clear(w: World) -> Draft:
    """Template ``fields.contact_clear``: remove fields (e-mail, birthday, relation) from a contact."""
    pool = [c for c in w.contacts if c.get("email") and c.get("birthday")]
    if not pool:
        c = w.pick("contacts.contacts")[0]
        i = w.contacts.index(c)
        c = w.contacts[i] = {**c, "email": f"{c['name'].split()[0].lower()}@example.org", "birthday": "05-17"}
    else:
        c = w.rng.choice(pool)
    first = c["name"].split()[0]
    fields = [("email", "e-mail address"), ("birthday", "birthday")]
    if c.get("relation"):
        fields.append(("relation", f"'{c['relation']}' label"))
    chosen = w.rng.sample(fields, 2)
    (goal,) = pick(
        w,
        [
            f"Remove the {chosen[0][1]} and the {chosen[1][1]} from {c['name']}'s contact.",
            f"{c['name']}'s contact has an old {chosen[0][1]} and {chosen[1][1]}: clear both, keep the rest.",
            f"Please delete {first}'s {chosen[0][1]} and {chosen[1][1]} from my contacts (not the contact itself).",
        ],
    )
    plan = [
        call("contacts.search", query=c["name"]),
        call("contacts.clear_field", contact_id=c["id"], field=chosen[0][0]),
        call("contacts.clear_field", contact_id=c["id"], field=chosen[1][0]),
        call("finish", answer="Cleared."),
    ]
    cond = {f: None for f, _ in chosen}
    kept = next(f for f in ("email", "birthday", "relation") if f not in cond)
    if c.get(kept) is not None:
        cond[kept] = c[kept]
    probes = [
        passes("the other order", [plan[0], plan[2], plan[1], plan[3]]),
        fails("only one cleared", replacing(plan, 2)),
        fails("the contact deleted", [plan[0], call("contacts.delete", contact_id=c["id"]), plan[3]]),
    ]
    if "email" in [f for f, _ in chosen]:
        j = 1 if chosen[0][0] == "email" else 2
        probes.append(
            passes(
                "the address removed",
                replacing(plan, j, call("contacts.remove_email", contact_id=c["id"], address=c["email"])),
            )
        )
    if kept != "relation" or c.get("relation"):
        probes.append(
            fails(
                "a third field cleared too",
                [*plan[:3], call("contacts.clear_field", contact_id=c["id"], field=kept), plan[3]],
            )
        )
    return Draft(
        goal=goal,
        criteria=[state("contacts.contacts", "updated", id=c["id"], name=c["name"], phone=c["phone"], **cond)],
        milestones=[],
        plan=plan,
        probes=probes,
    )


@template(
    "fields.contact_work_email",
    apps=["contacts"],
    domain=Domain.CONTACTS,
    capabilities=["lookup", "update"],
    difficulty=2,
    count=12,
)
def contact_work_email(w: World) -> Draft:
    """Template ``fields.contact_work_email``: a second (work) address, and which one is main."""
    pool = [c for c in w.contacts if c.get("email")]
    c = w.rng.choice(pool)
    first, last = c["name"].split()[0], c["name"].split()[-1]
    company = w.rng.choice(["acme", "northwind", "globex", "initech", "umbrella", "contoso"])
    address = f"{first[0].lower()}.{last.lower()}@{company}.com"
    main = w.index % 3 == 2
    if main:
        goal = f"{c['name']} now uses {address} at work. Add it to their contact as the main e-mail, keeping the personal one."
        cond = {
            "email": address,
            "email_label": "work",
            "other_emails": exactly([{"label": "home", "address": c["email"]}]),
        }
    else:
        goal = w.rng.choice(
            [f"Add {address} to {c['name']}'s contact as their work e-mail; the current address stays the main one.",
             f"{first}'s work address is {address}. Save it on their contact, labelled work, next to the one I have."]
        )  # fmt: skip
        cond = {"email": c["email"], "other_emails": exactly([{"label": "work", "address": address}])}
    plan = [
        call("contacts.search", query=c["name"]),
        call("contacts.add_email", contact_id=c["id"], address=address, label="work", primary=main),
        call("finish", answer="Added."),
    ]
    probes = [
        passes("read the contact first", [plan[0], call("contacts.get", contact_id=c["id"]), *plan[1:]]),
        fails("the old address replaced", replacing(plan, 1, call("contacts.update", contact_id=c["id"], email=address))),
        fails("labelled home", replacing(plan, 1, call("contacts.add_email", contact_id=c["id"], address=address, label="home", primary=main))),
    ]  # fmt: skip
    if main:
        probes += [
            passes("added, then made main", [plan[0], call("contacts.add_email", contact_id=c["id"], address=address, label="work"),
                                               call("contacts.set_primary_email", contact_id=c["id"], address=address), plan[-1]]),
            fails("not made main", replacing(plan, 1, call("contacts.add_email", contact_id=c["id"], address=address, label="work"))),
        ]  # fmt: skip
    else:
        probes.append(fails("made main", replacing(plan, 1, call("contacts.add_email", contact_id=c["id"], address=address, label="work", primary=True))))  # fmt: skip
    return Draft(
        goal=goal,
        criteria=[state("contacts.contacts", "updated", id=c["id"], **cond)],
        milestones=[],
        plan=plan,
        probes=probes,
    )


WORK_TEXTS = ["I'm running ten minutes late", "The documents are ready for you", "Can we move our call to 4?",
              "I left the report on your desk", "Your parcel is at my place"]  # fmt: skip


@template(
    "fields.reach_work_number",
    apps=["contacts", "phone", "messages"],
    domain=Domain.CALLS,
    capabilities=["lookup", "call", "send"],
    difficulty=2,
    count=12,
)
def reach_work_number(w: World) -> Draft:
    """Template ``fields.reach_work_number``: call or text a contact on their work number, not
    the main one."""
    (c,) = w.pick("contacts.contacts")
    i = w.contacts.index(c)
    work = w.phone_number("landline")
    home = w.phone_number("landline")
    others = [{"label": "work", "number": work}]
    if w.index % 3 == 0:
        others.insert(0, {"label": "home", "number": home})
    c = w.contacts[i] = {**c, "other_phones": tuple(others)}
    first = c["name"].split()[0]
    text = w.index % 2 == 1
    if text:
        body = w.rng.choice(WORK_TEXTS)
        goal = w.rng.choice(
            [f'Text {c["name"]} on their work number: "{body}"',
             f'Send "{body}" to {first}\'s work phone, not the mobile.']
        )  # fmt: skip
        act = call("messages.send", to=work, body=body)
        wrong = call("messages.send", to=c["phone"], body=body)
        crit = state("messages.messages", "created", number={"number": work}, body=dictated(body), direction="out")
    else:
        goal = w.rng.choice(
            [f"Call {c['name']} at work.", f"Ring {first}'s work number for me, not the mobile."]
        )  # fmt: skip
        act = call("phone.call", number=work)
        wrong = call("phone.call", number=c["phone"])
        crit = state("phone.calls", "created", number={"number": work}, direction="out")
    act_key = "to" if text else "number"
    plan = [
        call("contacts.search", query=c["name"]),
        act,
        call("finish", answer="Sent." if text else "Calling now."),
    ]
    probes = [
        passes("read the contact", [plan[0], call("contacts.get", contact_id=c["id"]), *plan[1:]]),
        fails("the main number", replacing(plan, 1, wrong)),
        passes(
            "dialled the national way",
            replacing(plan, 1, act.model_copy(update={"arguments": {**act.arguments, act_key: national(work)}})),
        ),
    ]
    if len(others) > 1:
        home_act = (
            call("messages.send", to=home, body=act.arguments["body"]) if text else call("phone.call", number=home)
        )
        probes.append(fails("the home number", replacing(plan, 1, home_act)))
    return Draft(
        goal=goal,
        criteria=[crit],
        milestones=[],
        plan=plan,
        probes=probes,
    )
