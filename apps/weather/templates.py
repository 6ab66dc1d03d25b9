"""Weather templates: an earlier alarm when rain is forecast, tomorrow's weather texted in the
phone's units, and a trip city saved with its alerts."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any, get_args

from apps.messages.templates import looked_up, similar
from apps.weather import Condition
from phoneenv.contract import CompositeCriterion, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer,
    behavior,
    call,
    fails,
    finishing,
    first_name,
    passes,
    replacing,
    state,
    template,
)
from phoneenv.tasks.templates.travel_seed import destinations, seed_weather
from phoneenv.tasks.world import World

TRAVEL = Domain.TRAVEL
WET = ("rain", "showers")
DRY = ("sunny", "partly cloudy", "cloudy", "windy", "fog")


def forecast_day(w: World, city: str, day: dt.date) -> dict[str, Any]:
    """The seeded forecast record of ``city`` on ``day``."""
    return next(r for r in w.table("weather.forecast") if r["city"] == city and r["date"] == day.isoformat())


def forecast_for(city: str) -> Any:
    """Milestone: the forecast of ``city`` read."""
    return behavior("required_call", "weather.forecast", id=f"forecast:{city}", arguments={"city": {"iequals": city}})


def set_wet(rec: dict[str, Any], wet: bool, w: World) -> None:
    """Make a forecast record rainy (chance 60-95 %) or dry (0-25 %)."""
    if wet:
        rec.update(condition=w.rng.choice(WET), precip_chance=w.rng.randrange(60, 95), precip_mm=3.5)
    else:
        rec.update(condition=w.rng.choice(DRY), precip_chance=w.rng.randrange(0, 25), precip_mm=0.0)


def imperial(w: World) -> bool:
    """Whether the phone shows °F and mph (a US world)."""
    return w.locale.country == "US"


def degrees(w: World, celsius: float) -> float:
    """A temperature as the weather app shows it in this world."""
    return float(round(celsius * 9 / 5 + 32)) if imperial(w) else celsius


HEDGE = r"(?!\s*(?:or|/|-|–|to)\s*-?\d)"
"""After a number: not followed by an alternative ("8 or 15", "8-9", "8 to 9")."""


def number_in_text(value: float) -> str:
    """A regex for ``value`` written in a text: as given, or rounded either way to a whole number;
    the sign must agree (``-3`` is not ``3``) and no alternative may follow (``8 or 15``)."""
    options = {f"{value:g}", str(math.floor(value)), str(math.ceil(value))}
    alts = "|".join(re.escape(o) for o in sorted(options))
    return rf"(?<![\d.\-−])({alts})(?![\d])(?!\.\d){HEDGE}"


def word_in_text(word: str) -> str:
    """A regex for ``word`` named as the one outcome: not offered beside an alternative
    ("fog or sun", "sun/fog", "either fog ...")."""
    w = re.escape(word)
    return rf"(?<!\bor )(?<!/)(?<!\beither )\b{w}(?!\s*(?:or\b|/))"


@template(
    "weather.rain_alarm",
    apps=["weather", "clock"],
    domain=TRAVEL,
    difficulty=3,
    capabilities=["lookup", "condition", "update"],
    count=12,
)
def rain_alarm(w: World) -> Draft:
    """Template ``weather.rain_alarm``: "If it's going to rain tomorrow, move my 07:00 alarm half an
    hour earlier; otherwise leave it and tell me tomorrow's weather": rain in half the tasks."""
    city = w.locale.city
    seed_weather(w, [city])
    tomorrow = w.now.date() + dt.timedelta(days=1)
    wet = w.index % 2 == 0
    fc = forecast_day(w, city, tomorrow)
    set_wet(fc, wet, w)
    alarms = w.table("clock.alarms")
    morning = [a for a in alarms if "06:00" <= a["time"] <= "09:00"]
    if not morning:
        morning = [
            {"id": w.next_id("clock.alarms", "al_"), "time": "07:00", "label": None, "enabled": True, "days": ()}
        ]
        alarms.append(morning[0])
    alarm = w.rng.choice(morning)
    alarm["enabled"] = True
    early = [15, 20, 30][(w.index // 2) % 3]
    hh, mm = (int(x) for x in alarm["time"].split(":"))
    new_time = (dt.datetime(2000, 1, 1, hh, mm) - dt.timedelta(minutes=early)).strftime("%H:%M")
    plan: list[ToolCall] = [
        call("weather.forecast", city=city, days=1, start_date=tomorrow.isoformat()),
        call("clock.list_alarms"),
    ]
    goal = (
        [
            f"If it's going to rain tomorrow, move my {alarm['time']} alarm {early} minutes earlier so I can take "
            "the bus. If not, leave it and just tell me what the weather will be.",
            f"Check tomorrow's forecast here. Rain? Then set my {alarm['time']} alarm {early} minutes earlier. "
            "Otherwise don't touch it and tell me the forecast.",
        ]
    )[(w.index // 6) % 2]
    if wet:
        plan += [
            call("clock.update_alarm", alarm_id=alarm["id"], time=new_time),
            call("finish", answer=f"Rain is forecast ({fc['precip_chance']}%): alarm moved to {new_time}."),
        ]
        criteria: list[Any] = [state("clock.alarms", "updated", id=alarm["id"], time=new_time, enabled=True)]
        probes = [
            fails("moved later", replacing(plan, 2, call("clock.update_alarm", alarm_id=alarm["id"],
                                                         time=(dt.datetime(2000, 1, 1, hh, mm) + dt.timedelta(
                                                             minutes=early)).strftime("%H:%M")))),
            fails("a new alarm instead", replacing(plan, 2, call("clock.create_alarm", time=new_time))),
            passes("alarms listed before the forecast", [plan[1], plan[0], *plan[2:]]),
            fails("relabelled too (not asked)", replacing(plan, 2, call("clock.update_alarm", alarm_id=alarm["id"],
                                                                    time=new_time, label="Rain"))),
        ]  # fmt: skip
    else:
        plan += [call("finish", answer=f"No rain tomorrow: {fc['condition']}. I left the alarm at {alarm['time']}.")]
        criteria = [
            state("clock.alarms", "present", id=alarm["id"], time=alarm["time"], enabled=True),
            # the condition stated (not denied, no guess), and no wet weather ("No rain" denies it;
            # "only a 10% chance of rain" does not state it)
            answer(contains=[fc["condition"]]),
            *(
                CompositeCriterion(
                    kind="not",
                    id=f"no_{x}",
                    criteria=[answer(id=f"says_{x}", contains=[x])],
                )
                for x in (*WET, "thunderstorms", "snow", "drizzle")
            ),
        ]
        probes = [
            fails(
                "rain said too", finishing(plan, f"{fc['condition'].capitalize()} with heavy rain in the afternoon.")
            ),
            fails("a guess", finishing(plan, f"{fc['condition'].capitalize()} or maybe sunny, not sure.")),
            fails(
                "moved anyway", [*plan[:2], call("clock.update_alarm", alarm_id=alarm["id"], time=new_time), plan[-1]]
            ),
            passes("said it stays dry", finishing(plan, f"It'll be {fc['condition']} and dry; alarm unchanged.")),
            passes(
                "the true chance of rain told",
                finishing(
                    plan, f"No rain: {fc['condition']}, only a {fc['precip_chance']}% chance of rain. Alarm unchanged."
                ),
            ),
            fails(
                "a higher chance of rain told",
                finishing(plan, f"{fc['condition'].capitalize()}, but a {fc['precip_chance'] + 50}% chance of rain."),
            ),
        ]
    # Either way the decision rests on the forecast: without reading it, it is a coin toss.
    criteria.append(forecast_for(city))
    probes.append(fails("never read the forecast", plan[1:]))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[forecast_for(city)],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"] if wet else [],
        probes=probes,
    )


@template(
    "weather.text_forecast",
    apps=["weather", "contacts", "messages"],
    domain=TRAVEL,
    difficulty=2,
    capabilities=["lookup", "send", "units"],
    count=12,
)
def text_forecast(w: World) -> Draft:
    """Template ``weather.text_forecast``: "Ana is visiting Lisbon tomorrow: text her the forecast
    there (the condition and the high)": the high in the phone's units (°F in a US world)."""
    city = w.rng.choice([w.locale.city, *destinations(w)])
    seed_weather(w, [city])
    tomorrow = w.now.date() + dt.timedelta(days=1)
    fc = forecast_day(w, city, tomorrow)
    other_day = forecast_day(w, city, w.now.date())
    c = w.rng.choice(w.contacts)
    first = first_name(c)
    high = degrees(w, fc["high_c"])
    unit = "°F" if imperial(w) else "°C"
    body = f"Tomorrow in {city}: {fc['condition']}, high {high:g}{unit}."
    plan = [
        call("weather.forecast", city=city, days=1, start_date=tomorrow.isoformat()),
        call("contacts.search", query=first),
        call("messages.send", to=c["phone"], body=body),
        call("finish", answer=body),
    ]
    goal = w.rng.choice(
        [
            f"{first} is in {city} tomorrow. Text them the forecast there: what it'll be like and the high.",
            f"Send {first} a text with tomorrow's weather in {city} - conditions and top temperature.",
        ]
    )
    # the condition stated (not denied, no guess) and no other one; the high, not hedged
    others = [o for o in get_args(Condition) if o != fc["condition"] and o not in fc["condition"]]
    text = {
        "regex": rf"(?s)(?=.*{word_in_text(fc['condition'])})(?=.*{number_in_text(high)})",
        "says": fc["condition"],
        "not": {"any": [{"says": o} for o in others]},
    }
    probes = [
        passes(
            "shorter", replacing(plan, 2, call("messages.send", to=c["phone"], body=f"{fc['condition']}, {high:g}"))
        ),
        fails("someone else", replacing(plan, 2, call("messages.send", to=similar(w, c)["phone"], body=body))),
        passes(
            "in a sentence, capitalised",
            replacing(
                plan,
                2,
                call(
                    "messages.send",
                    to=c["phone"],
                    body=f"{fc['condition'].capitalize()} in {city} tomorrow, top of {round(high)}{unit}",
                ),
            ),
        ),
        *(
            fails(why, replacing(plan, 2, call("messages.send", to=c["phone"], body=msg)))
            for why, msg in (
                ("the condition denied", f"No {fc['condition']} tomorrow, high {high:g}{unit}."),
                ("a guess", f"Maybe {fc['condition']}, high {high:g}{unit}, not sure."),
                ("another condition too", f"{fc['condition']} in the morning, then {others[0]}; high {high:g}{unit}."),
            )
        ),
        fails(
            "hedged the high",
            replacing(
                plan,
                2,
                call("messages.send", to=c["phone"], body=f"{fc['condition']}, high {high:g} or {round(high) + 6}"),
            ),
        ),
        fails(
            "hedged the condition",
            replacing(
                plan,
                2,
                call(
                    "messages.send",
                    to=c["phone"],
                    body=f"{fc['condition']} or {'sunny' if fc['condition'] != 'sunny' else 'rain'}, high {high:g}",
                ),
            ),
        ),
    ]
    if high > 0:
        probes.append(
            fails(
                "below zero",
                replacing(plan, 2, call("messages.send", to=c["phone"], body=f"{fc['condition']}, high -{high:g}")),
            )
        )
    today_high = degrees(w, other_day["high_c"])
    if other_day["condition"] != fc["condition"] and round(today_high) != round(high):
        probes.append(
            fails("today's weather", replacing(plan, 2, call("messages.send", to=c["phone"],
                  body=f"{other_day['condition']}, high {today_high:g}")))
        )  # fmt: skip
    return Draft(
        goal=goal,
        criteria=[state("messages.messages", "created", number={"person": c["id"]}, direction="out", body=text)],
        milestones=[forecast_for(city), looked_up(first)],
        plan=plan,
        perturb_exempt=["2.body", "3.answer"],
        probes=probes,
    )


ALERTS = [("Storm warning", "severe", "Gusts up to 100 km/h expected."),
          ("Heavy rain", "moderate", "Up to 40 mm of rain in 12 hours."),
          ("Fog advisory", "minor", "Visibility below 200 m in the morning."),
          ("Frost warning", "moderate", "Temperatures down to -6 °C overnight.")]  # fmt: skip


@template(
    "weather.save_trip_city",
    apps=["weather", "travel"],
    domain=TRAVEL,
    difficulty=2,
    capabilities=["lookup", "create", "answer"],
    count=12,
)
def save_trip_city(w: World) -> Draft:
    """Template ``weather.save_trip_city``: "Add Lisbon to my weather cities and tell me whether
    there are any warnings there": a warning in half the tasks, one for another city always."""
    dests = destinations(w)
    city, elsewhere = w.rng.sample(dests, 2)
    seed_weather(w, [city, elsewhere])
    alerted = w.index % 2 == 0
    event, severity, text = w.rng.choice(ALERTS)
    start = w.now + dt.timedelta(hours=w.rng.randrange(6, 48))
    other_event = next(a for a in ALERTS if a[0] != event)

    def alert(place: str, ev: tuple[str, str, str]) -> None:
        w.table("weather.alerts").append(
            {"id": w.next_id("weather.alerts", "wa_"), "city": place, "event": ev[0], "severity": ev[1],
             "starts": start.isoformat(timespec="minutes"),
             "ends": (start + dt.timedelta(hours=12)).isoformat(timespec="minutes"), "description": ev[2]}
        )  # fmt: skip

    alert(elsewhere, other_event)
    if alerted:
        alert(city, (event, severity, text))
    plan = [
        call("weather.add_location", city=city),
        call("weather.alerts", city=city),
        call("finish", answer=f"Added {city}. " + (f"There is a {event.lower()}." if alerted else "No warnings.")),
    ]
    goal = w.rng.choice(
        [f"Add {city} to my weather cities and tell me if there are any weather warnings there.",
         f"I'm going to {city} soon: save it in the weather app and check for warnings."]
    )  # fmt: skip
    # The answer counts only when the alerts were read (this city's, or every city's): a guess is
    # right half the time.
    read = CompositeCriterion(
        kind="any_of",
        id="alerts_read",
        criteria=[
            behavior("required_call", "weather.alerts", id="alerts_read:city", arguments={"city": {"iequals": city}}),
            behavior("required_call", "weather.alerts", id="alerts_read:all", arguments={"city": None}),
        ],
    )
    criteria: list[Any] = [state("weather.locations", "created", city=city), read]
    unread = [plan[0], plan[-1]]
    if alerted:
        criteria.append(answer(pattern=re.escape(event.split()[0])))
        # naming the warning is not enough: "No storm warnings there" names it too
        criteria.append(
            CompositeCriterion(kind="not", id="not_denied", criteria=[answer(id="denied", type="yes_no", value=False)])
        )
        probes = [
            fails("says no warnings", finishing(plan, f"Added {city}. No warnings.")),
            fails(
                "denies the warning it names", finishing(plan, f"Added {city}. No {event.lower()}s there right now.")
            ),
            fails("never read the alerts", finishing(unread, plan[-1].arguments["answer"])),
            passes(
                "the warning in other words",
                finishing(plan, f"Saved {city}. Heads up: {event.lower()} from {start:%A %H:%M}."),
            ),
        ]
    else:
        criteria.append(answer(type="yes_no", value=False))
        criteria.append(
            CompositeCriterion(
                kind="not",
                id="no_other_alert",
                criteria=[answer(id="other", pattern=re.escape(other_event[0].split()[0]))],
            )
        )
        probes = [
            fails("the other city's warning", finishing(plan, f"Added. There is a {other_event[0].lower()}.")),
            fails("could not check", finishing(plan, f"Added {city}. I have no way to check warnings from here.")),
            fails("never read the alerts", finishing(unread, plan[-1].arguments["answer"])),
            passes("none in effect", finishing(plan, f"Saved {city}; there are none in effect there, all clear.")),
        ]
    probes += [
        fails("saved the other city", replacing(plan, 0, call("weather.add_location", city=elsewhere))),
        passes("all alerts listed", replacing(plan, 1, call("weather.alerts"))),
    ]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[state("weather.locations", "created", city=city)],
        plan=plan,
        probes=probes,
    )
