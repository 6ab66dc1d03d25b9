"""Clock templates: set, switch off and delete alarms, start timers, tell the time elsewhere."""

from __future__ import annotations

import zoneinfo

from apps.messages.templates import looked_up, tell, tell_probes, telling, who
from phoneenv.contract import CompositeCriterion, Domain
from phoneenv.tasks.templates import Draft, answer, behavior, call, fails, finishing, passes, replacing, state, template
from phoneenv.tasks.world import World

ALARM_LABELS = ["Gym", "Take medicine", "Catch the train", "Walk the dog", "Flight check-in", "Yoga", "Call mom"]
TIMER_LABELS = ["Pasta", "Laundry", "Tea", "Oven", "Parking meter", "Pizza"]
# City as the user says it -> IANA zone.
CITIES = {
    "Tokyo": "Asia/Tokyo",
    "New York": "America/New_York",
    "London": "Europe/London",
    "Sydney": "Australia/Sydney",
    "Los Angeles": "America/Los_Angeles",
    "Dubai": "Asia/Dubai",
    "Mumbai": "Asia/Kolkata",
    "Sao Paulo": "America/Sao_Paulo",
    "Singapore": "Asia/Singapore",
    "Berlin": "Europe/Berlin",
}


def spoken(hhmm: str) -> str:
    """``"06:30"`` as a person says it: ``"6:30 AM"`` (``"21:30"`` -> ``"9:30 PM"``)."""
    h, m = (int(x) for x in hhmm.split(":"))
    return f"{h % 12 or 12}:{m:02d} {'AM' if h < 12 else 'PM'}"


def day_part(hour: int, minute: int) -> str:
    """``hour:minute`` said with its part of the day: ``"6 in the morning"``, ``"3:15 in the
    afternoon"``, ``"7:30 in the evening"``, ``"2 at night"`` (what :func:`time_pattern` reads)."""
    clock = f"{hour % 12 or 12}" + (f":{minute:02d}" if minute else "")
    part = "in the morning" if 4 <= hour < 12 else "in the afternoon" if 12 <= hour < 17 else "in the evening"
    return f"{clock} {'at night' if hour < 4 else part}"


def time_pattern(hour: int, minute: int) -> str:
    """A regex that holds when an answer names ``hour:minute`` in 24-hour form (``15:15``,
    ``09:05`` or ``9:05``, not followed by AM/PM; ``9.05`` after "at" or "by") or 12-hour form
    (``3:15 PM``, ``3.15pm``; on the hour also ``3 PM``, ``3pm``, ``3 p.m.``), or with the part of
    the day that holds it (``6 in the morning``, ``3:15 in the afternoon``, ``9 o'clock at night``;
    ``noon``, ``midnight``)."""
    h12 = hour % 12 or 12
    half = "a" if hour < 12 else "p"
    parts = [p for p, (a, b) in (("morning", (0, 12)), ("afternoon", (12, 18)), ("evening", (17, 24))) if a <= hour < b]
    said = [f"in the {p}" for p in parts] + (["at night"] if hour >= 20 or hour < 4 else [])
    # the answer reader's halves (answers._part_hm): "morning" before noon, "at night" before 4 or
    # from 20, "afternoon"/"evening" from noon
    day = ""
    if said:
        day = (
            rf"|(?<![\d.:])(?:0?{h12}|{hour})(?::{minute:02d})" + ("?" if minute == 0 else "")
            + rf"(?:\s+o'?clock)?\s+(?:{'|'.join(said)})\b"
        )  # fmt: skip
    if minute == 0 and hour in (0, 12):
        day += r"|\bmidnight\b" if hour == 0 else r"|\bnoon\b|\bmidday\b"
    # a part of the day after a 24-hour form is read by the part-of-day form below
    p24 = rf"(?<!\d)0?{hour}:{minute:02d}(?!\d)(?!\s*[ap]\.?m)(?!\s+(?:in the (?:morning|afternoon|evening)|at night))"
    # with a dot where it reads as a time: after "at" or "by" ("arrives at 8.28"), not a price (not
    # before a capital three-letter code such as a currency's)
    dot = rf"(?<=\b(?:at|by) )0?{hour}\.{minute:02d}(?!\d|[.,]\d)(?!\s*[ap]\.?m)(?!\s*(?-i:[A-Z]{{3}})\b)"
    p12 = rf"(?<![\d.])0?{h12}(?:[:.]{minute:02d})" + ("?" if minute == 0 else "") + rf"\s*{half}\.?m\b"
    return f"{p24}|{dot}|{p12}{day}"


HEDGE = r"(?!\s*(?:or|/|-|–|to)\s*\d)"
"""After a time in a pattern: not followed by an alternative ("16:00 or 17:00", "16:00-17:00")."""


def as_range_end(hour: int, minute: int) -> str:
    """A regex: the text gives ``hour:minute`` (24- or 12-hour form) as the end of a range or
    after "between" ("20:00-20:30", "between 20:30 and 21:00"): a hedge for a point in time such
    as an arrival or a booking. Beside ``{"states": {"time": ...}}`` (which reads every spelling
    of the time, spoken ones too, and refuses an alternative beside it) as ``{"not": ...}``."""
    return rf"(?:\d\s*(?:-|–|to)\s*|\bbetween\s+)(?:{time_pattern(hour, minute)})"


def one_time(hour: int, minute: int) -> dict[str, object]:
    """A body condition: the text states ``hour:minute`` as the one time (any spelling the
    typed reader reads: "20:30", "8:30 pm", "half past eight tonight"), not beside an
    alternative ("20:30 or 21:00") nor as a range's end (:func:`as_range_end`)."""
    return {"states": {"time": f"{hour:02d}:{minute:02d}"}, "not": {"regex": as_range_end(hour, minute)}}


def time_alone(hour: int, minute: int) -> str:
    """A regex to embed in another: ``hour:minute`` (24- or 12-hour form) not beside an
    alternative ("20:30 or 21:00", "20:00/20:30")."""
    return rf"(?<!\bor )(?<!/)(?:{time_pattern(hour, minute)}){HEDGE}"


def enabled_alarm(w: World, exclude: tuple[str, ...] = ()) -> dict[str, object]:
    """An alarm of the world that is on (one is switched on when none is), not in ``exclude``."""
    alarms = w.table("clock.alarms")
    on = [a for a in alarms if a["enabled"] and a["id"] not in exclude]
    if not on:
        i = w.rng.choice([i for i, a in enumerate(alarms) if a["id"] not in exclude])
        alarms[i] = {**alarms[i], "enabled": True}
        on = [alarms[i]]
    return w.rng.choice(on)


WORDS = {3: "three", 5: "five", 8: "eight", 10: "ten", 12: "twelve", 15: "fifteen", 20: "twenty",
         25: "twenty-five", 40: "forty", 45: "forty-five", 90: "ninety"}  # fmt: skip


@template("clock.set_alarm", apps=["clock"], domain=Domain.TIME, capabilities=["create", "lookup", "update"])
def set_alarm(w: World) -> Draft:
    """Template ``clock.set_alarm``, e.g. task 0: "Set an alarm for 5:00 AM tomorrow labeled \"Walk the dog\", and switch off my 7:15 AM one."."""
    old = enabled_alarm(w)
    taken = {a["time"] for a in w.table("clock.alarms")}
    # Morning times: the phone's clock is 08:00-11:45, so a one-off alarm rings tomorrow.
    times = [f"{h:02d}:{m:02d}" for h in (5, 6, 7) for m in range(0, 60, 5)]
    time = w.rng.choice([t for t in times if t not in taken])
    label = w.rng.choice(ALARM_LABELS)
    plan = [
        call("clock.list_alarms"),
        call("clock.create_alarm", time=time, label=label),
        call("clock.set_alarm_enabled", alarm_id=old["id"], enabled=False),
        call("finish", answer=f"Alarm set for {time}; the {old['time']} one is off."),
    ]
    evening = f"{int(time[:2]) + 12}:{time[3:]}"
    other = next(a for a in ("21:00", "22:00", "23:00") if a not in taken)
    tail = w.rng.choice(
        [f"and switch off my {spoken(str(old['time']))} one", f"and turn my {spoken(str(old['time']))} alarm off"]
    )
    return Draft(
        goal=f'Set an alarm for {spoken(time)} tomorrow labeled "{label}", {tail}.',
        criteria=[
            state("clock.alarms", "created", time=time, label={"iequals": label}, enabled=True, days={"len": 0}),
            state("clock.alarms", "updated", id=old["id"], enabled=False, time=old["time"]),
        ],
        milestones=[
            behavior("required_call", "clock.create_alarm", id="created", arguments={"time": time}),
            behavior(
                "required_call",
                "clock.set_alarm_enabled",
                id="off",
                arguments={"alarm_id": old["id"], "enabled": False},
            ),
        ],
        plan=plan,
        probes=[
            passes(
                "label in other case", replacing(plan, 1, call("clock.create_alarm", time=time, label=label.upper()))
            ),
            passes("looked up again", [*plan[:-1], call("clock.list_alarms"), plan[-1]]),
            fails(
                "evening instead of morning", replacing(plan, 1, call("clock.create_alarm", time=evening, label=label))
            ),
            fails("a stray second alarm", [*plan[:2], call("clock.create_alarm", time=other), *plan[2:]]),
            fails("old alarm deleted instead", replacing(plan, 2, call("clock.delete_alarm", alarm_id=old["id"]))),
            fails(
                "repeats every day",
                replacing(
                    plan,
                    1,
                    call(
                        "clock.create_alarm",
                        time=time,
                        label=label,
                        days=["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
                    ),
                ),
            ),
        ],
    )


@template(
    "clock.start_timer", apps=["clock", "contacts", "messages"], domain=Domain.TIME, capabilities=["create", "send"]
)
def start_timer(w: World) -> Draft:
    """Template ``clock.start_timer``, e.g. task 0: "Start a 45-minute timer called \"Tea\" and let my dad know dinner is ready in 45 minutes."."""
    minutes = w.rng.choice(sorted(WORDS))
    length = f"{'an' if str(minutes).startswith('8') else 'a'} {minutes}-minute"  # "an 8-minute"
    where: dict[str, object] = {"duration_s": minutes * 60, "running": True}
    args: dict[str, object] = {"duration_seconds": minutes * 60}
    what = w.rng.choice(["dinner is ready", "I'll be out", "the pizza is done", "I'm free"])
    (c,) = w.pick("contacts.contacts")
    name, query = who(w, c)
    goal = f"Start {length} timer and tell {name} that {what} in {minutes} minutes."
    if w.rng.random() < 0.5:
        label = w.rng.choice(TIMER_LABELS)
        goal = f'Start {length} timer called "{label}" and let {name} know {what} in {minutes} minutes.'
        where["label"] = {"iequals": label}
        args["label"] = label
    text = f"{what[0].upper()}{what[1:]} in {minutes} minutes."
    plan = [
        call("clock.start_timer", **args),
        call("contacts.search", query=query),
        telling(c, text),
        call("finish", answer="Timer started and message sent."),
    ]
    wrong = minutes + 10
    return Draft(
        goal=goal,
        criteria=[
            state("clock.timers", "created", **where),
            tell(c, {"states": {"duration": minutes * 60}}),
        ],
        milestones=[looked_up(query)],
        plan=plan,
        perturb_exempt=["1.query", "2.body", "3.answer"],
        probes=[
            *tell_probes(
                w,
                plan,
                2,
                c,
                f"{what[0].upper()}{what[1:]} in {WORDS[minutes]} minutes!",
                f"{what} in {wrong} minutes.",
            ),
            passes("in short", replacing(plan, 2, telling(c, f"{what[0].upper()}{what[1:]}, {minutes} min"))),
            fails(
                "a hedge", replacing(plan, 2, telling(c, f"{what[0].upper()}{what[1:]} in {minutes}-{wrong} minutes"))
            ),
            fails(
                "minutes taken as seconds",
                replacing(plan, 0, call("clock.start_timer", **{**args, "duration_seconds": minutes})),
            ),
        ],
    )


@template("clock.alarm_off", apps=["clock"], domain=Domain.TIME, capabilities=["lookup", "update"])
def alarm_off(w: World) -> Draft:
    """Template ``clock.alarm_off``, e.g. task 0: "Switch off my 7:45 AM and 1:00 PM alarms, but don't delete them."."""
    a = enabled_alarm(w)
    b = enabled_alarm(w, exclude=(str(a["id"]),))
    a, b = sorted((a, b), key=lambda x: str(x["time"]))
    goal = w.rng.choice(
        [f"Switch off my {spoken(str(a['time']))} and {spoken(str(b['time']))} alarms, but don't delete them.",
         f"I'm on holiday: turn off the {spoken(str(a['time']))} and {spoken(str(b['time']))} alarms (keep them for later)."]
    )  # fmt: skip
    plan = [
        call("clock.list_alarms"),
        call("clock.set_alarm_enabled", alarm_id=a["id"], enabled=False),
        call("clock.set_alarm_enabled", alarm_id=b["id"], enabled=False),
        call("finish", answer=f"The {a['time']} and {b['time']} alarms are off."),
    ]
    return Draft(
        goal=goal,
        criteria=[state("clock.alarms", "updated", id=x["id"], enabled=False, time=x["time"]) for x in (a, b)],
        milestones=[
            behavior(
                "required_call",
                "clock.set_alarm_enabled",
                id=f"off:{x['id']}",
                arguments={"alarm_id": x["id"], "enabled": False},
            )
            for x in (a, b)
        ],
        plan=plan,
        probes=[
            passes("switched off in the other order", [plan[0], plan[2], plan[1], plan[3]]),
            passes("checked the list again", [*plan[:-1], call("clock.list_alarms"), plan[-1]]),
            fails("one left on", replacing(plan, 2)),
            fails("deleted instead", replacing(plan, 1, call("clock.delete_alarm", alarm_id=a["id"]))),
        ],
    )


@template("clock.what_time", apps=["clock"], domain=Domain.TIME, capabilities=["lookup", "answer"])
def what_time(w: World) -> Draft:
    """Template ``clock.what_time``, e.g. task 0: "I have calls with Sao Paulo and Dubai - what's the time there now?"."""
    here = w.now.replace(tzinfo=zoneinfo.ZoneInfo(w.timezone))
    # Only cities whose clock differs from the phone's and from each other right now, so each
    # lookup matters.
    cities = sorted(
        c for c, z in CITIES.items() if here.astimezone(zoneinfo.ZoneInfo(z)).utcoffset() != here.utcoffset()
    )
    one = w.rng.choice(cities)
    off = here.astimezone(zoneinfo.ZoneInfo(CITIES[one])).utcoffset()
    two = w.rng.choice([c for c in cities if here.astimezone(zoneinfo.ZoneInfo(CITIES[c])).utcoffset() != off])
    # The phone clock advances 1 s per call from HH:MM:00, so the minute holds for 59 calls (the
    # task allows 20 steps).
    there = [here.astimezone(zoneinfo.ZoneInfo(CITIES[c])) for c in (one, two)]
    assert w.now.second == 0
    hhmm = [t.strftime("%H:%M") for t in there]
    goal = w.rng.choice([f"What time is it in {one} and in {two} right now?",
                         f"I have calls with {one} and {two} - what's the time there now?"])  # fmt: skip
    plan = [
        call("clock.world_time", timezone=CITIES[one]),
        call("clock.world_time", timezone=CITIES[two]),
        call("finish", answer=f"{one}: {hhmm[0]}, {two}: {hhmm[1]}"),
    ]
    t12 = [spoken(h) for h in hhmm]
    later = f"{(there[0].hour + 1) % 24:02d}:{there[0].minute:02d}"
    return Draft(
        goal=goal,
        criteria=[
            # Two cities, two times: each city's time is the one time told in the part of the
            # answer that names the city ("Dubai: 13:00, ..."; "... and in Dubai it's 1 pm"), not
            # beside an alternative ("16:00 or 17:00")
            answer(id="first", type="time", value=hhmm[0], about=one),
            answer(id="second", type="time", value=hhmm[1], about=two),
            # and no third time anywhere (a hedge further on, a correction)
            answer(id="no_other_time", type="time", value=hhmm[0], context=[hhmm[1]]),
            behavior("read_only"),
        ],
        milestones=[
            behavior("required_call", "clock.world_time", id=f"asked:{c}", arguments={"timezone": CITIES[c]})
            for c in (one, two)
        ],
        plan=plan,
        probes=[
            passes("12-hour clock", finishing(plan, f"In {one} it's {t12[0]} and in {two} it's {t12[1]}.")),
            passes("asked the phone's time too", [call("clock.now"), *plan]),
            fails("the times swapped", finishing(plan, f"{one}: {hhmm[1]}, {two}: {hhmm[0]}")),
            passes("times before the cities", finishing(plan, f"It's {hhmm[0]} in {one} and {hhmm[1]} in {two}.")),
            passes(
                "parts of the day",
                finishing(
                    plan,
                    f"It's {day_part(there[0].hour, there[0].minute)} in {one} and "
                    f"{day_part(there[1].hour, there[1].minute)} in {two}.",
                ),
            ),
            fails(
                "the wrong part of the day",
                finishing(
                    plan, f"It's {day_part((there[0].hour + 12) % 24, there[0].minute)} in {one}, {hhmm[1]} in {two}."
                ),
            ),
            fails("swapped, times first", finishing(plan, f"It's {hhmm[1]} in {one} and {hhmm[0]} in {two}.")),
            fails("only one city", finishing(plan, f"{one}: {hhmm[0]}")),
            fails("a hedge", finishing(plan, f"{one}: {hhmm[0]} or {later}, {two}: {hhmm[1]}")),
            fails("a hedge in brackets", finishing(plan, f"{one}: {hhmm[0]} (or maybe {later}), {two}: {hhmm[1]}")),
            fails(
                "a correction", finishing(plan, f"{one}: {hhmm[0]}, {two}: {hhmm[1]}. Correction: {one} is {later}.")
            ),
        ],
    )


@template("clock.delete_alarm", apps=["clock"], domain=Domain.TIME, capabilities=["lookup", "delete", "update"])
def delete_alarm(w: World) -> Draft:
    """Template ``clock.delete_alarm``, e.g. task 0: "I don't need my 6:30 AM alarm anymore, delete it. And switch the 7:15 AM alarm on again."."""
    alarms = w.table("clock.alarms")
    i = w.rng.randrange(len(alarms))
    if w.rng.random() < 0.5:
        label = w.rng.choice(ALARM_LABELS)
        alarms[i] = {**alarms[i], "label": label}
        what = f'my "{label}" alarm'
    else:
        what = f"my {spoken(alarms[i]['time'])} alarm"
    a = alarms[i]
    j = w.rng.choice([k for k in range(len(alarms)) if k != i])
    alarms[j] = {**alarms[j], "enabled": False}
    b = alarms[j]
    goal = w.rng.choice([f"Delete {what} and turn my {spoken(b['time'])} one back on.",
                         f"I don't need {what} anymore, delete it. And switch the {spoken(b['time'])} alarm on again."])  # fmt: skip
    plan = [
        call("clock.list_alarms"),
        call("clock.delete_alarm", alarm_id=a["id"]),
        call("clock.set_alarm_enabled", alarm_id=b["id"], enabled=True),
        call("finish", answer="Done."),
    ]
    return Draft(
        goal=goal,
        criteria=[
            state("clock.alarms", "deleted", id=a["id"]),
            state("clock.alarms", "updated", id=b["id"], enabled=True, time=b["time"]),
        ],
        milestones=[
            behavior("required_call", "clock.delete_alarm", id="deleted", arguments={"alarm_id": a["id"]}),
            behavior(
                "required_call", "clock.set_alarm_enabled", id="on", arguments={"alarm_id": b["id"], "enabled": True}
            ),
        ],
        plan=plan,
        probes=[
            passes("in the other order", [plan[0], plan[2], plan[1], plan[3]]),
            passes("checked the list again", [*plan[:-1], call("clock.list_alarms"), plan[-1]]),
            fails(
                "switched off instead of deleted",
                replacing(plan, 1, call("clock.set_alarm_enabled", alarm_id=a["id"], enabled=False)),
            ),
            fails("the other alarm deleted", replacing(plan, 1, call("clock.delete_alarm", alarm_id=b["id"]))),
        ],
    )


WEEKDAYS_ONLY = ("mon", "tue", "wed", "thu", "fri")


@template("clock.wake_up", apps=["clock"], domain=Domain.TIME, capabilities=["lookup", "create", "update"])
def wake_up(w: World) -> Draft:
    """Template ``clock.wake_up``, e.g. task 0: "I need to be up at 5:15 AM tomorrow morning; set an
    alarm."; the phone may already hold a switched-off alarm at that time.

    "Exactly one such alarm, created or reused": a switched-off one-off alarm at the time (a
    third of the tasks) may be switched back on or a new one created; a switched-off alarm that
    repeats on weekdays (another third) is not the same thing, so a new one-off alarm is needed;
    otherwise there is nothing to reuse."""
    taken = {a["time"] for a in w.table("clock.alarms")}
    time = w.rng.choice(
        [f"{h:02d}:{m:02d}" for h in (5, 6, 7) for m in range(5, 60, 10) if f"{h:02d}:{m:02d}" not in taken]
    )
    variant = w.index % 3
    existing = None
    if variant < 2:
        existing = {
            "id": w.next_id("clock.alarms", "al_"),
            "time": time,
            "label": None,
            "enabled": False,
            "days": () if variant == 0 else WEEKDAYS_ONLY,
        }
        w.table("clock.alarms").append(existing)
    goal = w.rng.choice(
        [
            f"Wake me up at {spoken(time)} tomorrow.",
            f"I need to be up at {spoken(time)} tomorrow morning; set an alarm.",
            f"Make sure an alarm goes off at {spoken(time)} tomorrow.",
        ]
    )
    create = call("clock.create_alarm", time=time)
    act = call("clock.set_alarm_enabled", alarm_id=existing["id"], enabled=True) if variant == 0 else create
    plan = [call("clock.list_alarms"), act, call("finish", answer=f"You'll be woken at {time} tomorrow.")]
    ways = [behavior("required_call", "clock.create_alarm", id="created", arguments={"time": time})]
    if existing is not None:
        ways.append(
            behavior(
                "required_call",
                "clock.set_alarm_enabled",
                id="switched on",
                arguments={"alarm_id": existing["id"], "enabled": True},
            )
        )
    other = next(a for a in w.table("clock.alarms") if a["time"] != time)
    evening = f"{int(time[:2]) + 12}:{time[3:]}"
    probes = [
        fails("evening instead of morning", replacing(plan, 1, call("clock.create_alarm", time=evening))),
        fails(
            "another alarm switched on",
            replacing(plan, 1, call("clock.set_alarm_enabled", alarm_id=other["id"], enabled=not other["enabled"])),
        ),
        fails(
            "repeats on weekdays", replacing(plan, 1, call("clock.create_alarm", time=time, days=list(WEEKDAYS_ONLY)))
        ),
    ]
    if variant == 0:
        probes += [
            passes("a new alarm instead of the old one", replacing(plan, 1, create)),
            fails("the old one back on and a new one too", [*plan[:2], create, plan[-1]]),
        ]
    elif variant == 1:
        on_again = call("clock.set_alarm_enabled", alarm_id=existing["id"], enabled=True)
        probes += [
            passes("labelled", replacing(plan, 1, call("clock.create_alarm", time=time, label="Wake up"))),
            fails("the weekday alarm switched back on", replacing(plan, 1, on_again)),
        ]
    else:
        probes += [
            passes("labelled", replacing(plan, 1, call("clock.create_alarm", time=time, label="Wake up"))),
            fails("two alarms at that time", [*plan[:2], create, plan[-1]]),
        ]
    # Another of the user's alarms turned into this one is not "an alarm set": that alarm is gone.
    others = [a["id"] for a in w.table("clock.alarms") if existing is None or a["id"] != existing["id"]]
    probes.append(
        fails(
            "another alarm moved to the time",
            [
                plan[0],
                call("clock.update_alarm", alarm_id=other["id"], time=time, days=[]),
                call("clock.set_alarm_enabled", alarm_id=other["id"], enabled=True),
                plan[-1],
            ],
        )
    )
    return Draft(
        goal=goal,
        criteria=[
            state("clock.alarms", "present", count=1, time=time, enabled=True, days={"len": 0}),
            CompositeCriterion(
                kind="not",
                id="no alarm repurposed",
                criteria=[state("clock.alarms", "updated", id={"in": others}, time=time)],
            ),
        ],
        milestones=[CompositeCriterion(kind="any_of", id="alarm set", criteria=ways)],
        plan=plan,
        probes=probes,
    )
