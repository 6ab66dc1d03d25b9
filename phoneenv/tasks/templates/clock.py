"""Clock templates: set, switch off and delete alarms, start timers, tell the time elsewhere."""

from __future__ import annotations

import zoneinfo

from phoneenv.contract import Domain
from phoneenv.tasks.templates import Draft, answer, behavior, call, fails, passes, replacing, state, template
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


def time_pattern(hour: int, minute: int) -> str:
    """A regex that holds when an answer names ``hour:minute`` in 24-hour form (``15:15``,
    ``09:05`` or ``9:05``, not followed by AM/PM) or 12-hour form (``3:15 PM``, ``3:15pm``)."""
    h12 = hour % 12 or 12
    half = "a" if hour < 12 else "p"
    p24 = rf"(?<!\d)0?{hour}:{minute:02d}(?!\d)(?!\s*[ap]\.?m)"
    p12 = rf"(?<!\d)0?{h12}:{minute:02d}\s*{half}\.?m\b"
    return f"{p24}|{p12}"


@template("clock.set_alarm", apps=["clock"], domain=Domain.TIME, capabilities=["create"])
def set_alarm(w: World) -> Draft:
    """Template ``clock.set_alarm``, e.g. task 0: "Set an alarm for 7:35 AM tomorrow labeled \"Catch the train\"."."""
    taken = {a["time"] for a in w.table("clock.alarms")}
    # Morning times: the phone's clock is 08:00-11:45, so a one-off alarm rings tomorrow.
    times = [f"{h:02d}:{m:02d}" for h in (5, 6, 7) for m in range(0, 60, 5)]
    time = w.rng.choice([t for t in times if t not in taken])
    label = w.rng.choice(ALARM_LABELS)
    plan = [call("clock.create_alarm", time=time, label=label), call("finish", answer=f"Alarm set for {time}.")]
    evening = f"{int(time[:2]) + 12}:{time[3:]}"
    other = next(a for a in ("21:00", "22:00", "23:00") if a not in taken)
    return Draft(
        goal=f'Set an alarm for {spoken(time)} tomorrow labeled "{label}".',
        criteria=[state("clock.alarms", "created", time=time, label={"iequals": label}, enabled=True, days={"len": 0})],
        plan=plan,
        perturb_exempt=["1.answer"],
        probes=[
            passes(
                "label in other case", replacing(plan, 0, call("clock.create_alarm", time=time, label=label.upper()))
            ),
            passes("looked up first", [call("clock.list_alarms"), *plan]),
            fails(
                "evening instead of morning", replacing(plan, 0, call("clock.create_alarm", time=evening, label=label))
            ),
            fails("a stray second alarm", [plan[0], call("clock.create_alarm", time=other), plan[-1]]),
            fails(
                "repeats every day",
                replacing(
                    plan,
                    0,
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


@template("clock.start_timer", apps=["clock"], domain=Domain.TIME, capabilities=["create"])
def start_timer(w: World) -> Draft:
    """Template ``clock.start_timer``, e.g. task 0: "Start a 20-minute timer."."""
    minutes = w.rng.choice([3, 5, 8, 10, 12, 15, 20, 25, 40, 45, 90])
    length = f"{'an' if str(minutes).startswith('8') else 'a'} {minutes}-minute"  # "an 8-minute"
    where: dict[str, object] = {"duration_s": minutes * 60, "running": True}
    args: dict[str, object] = {"duration_seconds": minutes * 60}
    goal = f"Start {length} timer."
    if w.rng.random() < 0.5:
        label = w.rng.choice(TIMER_LABELS)
        goal = f'Start {length} timer called "{label}".'
        where["label"] = {"iequals": label}
        args["label"] = label
    return Draft(
        goal=goal,
        criteria=[state("clock.timers", "created", **where)],
        plan=[call("clock.start_timer", **args), call("finish", answer="Timer started.")],
        perturb_exempt=["1.answer"],
    )


@template("clock.alarm_off", apps=["clock"], domain=Domain.TIME, capabilities=["lookup", "update"])
def alarm_off(w: World) -> Draft:
    """Template ``clock.alarm_off``, e.g. task 0: "Switch off my 6:30 AM alarm, but don't delete it."."""
    alarms = w.table("clock.alarms")
    on = [a for a in alarms if a["enabled"]]
    if not on:
        i = w.rng.randrange(len(alarms))
        alarms[i] = {**alarms[i], "enabled": True}
        on = [alarms[i]]
    a = w.rng.choice(on)
    return Draft(
        goal=f"Switch off my {spoken(a['time'])} alarm, but don't delete it.",
        criteria=[state("clock.alarms", "updated", id=a["id"], enabled=False, time=a["time"])],
        milestones=[behavior("required_call", "clock.list_alarms")],
        plan=[
            call("clock.list_alarms"),
            call("clock.set_alarm_enabled", alarm_id=a["id"], enabled=False),
            call("finish", answer=f"The {a['time']} alarm is off."),
        ],
        perturb_exempt=["2.answer"],
    )


@template("clock.what_time", apps=["clock"], domain=Domain.TIME, capabilities=["lookup", "answer"])
def what_time(w: World) -> Draft:
    """Template ``clock.what_time``, e.g. task 0: "What time is it in Sydney right now?"."""
    here = w.now.replace(tzinfo=zoneinfo.ZoneInfo(w.timezone))
    # Only cities whose clock differs from the phone's right now, so the lookup matters.
    cities = sorted(
        c for c, z in CITIES.items() if here.astimezone(zoneinfo.ZoneInfo(z)).utcoffset() != here.utcoffset()
    )
    city = w.rng.choice(cities)
    zone = CITIES[city]
    # The phone clock advances 1 s per call from HH:MM:00, so the minute holds for 59 calls (the
    # task allows 20 steps).
    there = here.astimezone(zoneinfo.ZoneInfo(zone))
    hhmm = there.strftime("%H:%M")
    assert w.now.second == 0 and there.second == 0
    return Draft(
        goal=f"What time is it in {city} right now?",
        criteria=[answer(pattern=time_pattern(there.hour, there.minute)), behavior("read_only")],
        plan=[call("clock.world_time", timezone=zone), call("finish", answer=hhmm)],
    )


@template("clock.delete_alarm", apps=["clock"], domain=Domain.TIME, capabilities=["lookup", "delete"])
def delete_alarm(w: World) -> Draft:
    """Template ``clock.delete_alarm``, e.g. task 0: "Delete my 1:00 PM alarm."."""
    alarms = w.table("clock.alarms")
    i = w.rng.randrange(len(alarms))
    if w.rng.random() < 0.5:
        label = w.rng.choice(ALARM_LABELS)
        alarms[i] = {**alarms[i], "label": label}
        goal = f'Delete my "{label}" alarm.'
    else:
        goal = f"Delete my {spoken(alarms[i]['time'])} alarm."
    a = alarms[i]
    return Draft(
        goal=goal,
        criteria=[state("clock.alarms", "deleted", id=a["id"])],
        milestones=[behavior("required_call", "clock.list_alarms")],
        plan=[
            call("clock.list_alarms"),
            call("clock.delete_alarm", alarm_id=a["id"]),
            call("finish", answer="Deleted."),
        ],
        perturb_exempt=["2.answer"],
    )
