"""Phone templates: call people, read the call log, block numbers and clean up the log."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from apps.clock.templates import spoken
from apps.messages.templates import looked_up, similar, spaced
from phoneenv.contract import Criterion, Domain
from phoneenv.tasks.templates import (
    Draft,
    answer,
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
from phoneenv.tasks.world import World

CALL_PHONE = "android.permission.CALL_PHONE"
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip


def day_words(day: dt.date, today: dt.date) -> str:
    """``day`` as a user says it, always with the date: "yesterday (Saturday 28 November)"."""
    label = f"{WEEKDAYS[day.weekday()]} {day.day} {MONTHS[day.month - 1]}"
    delta = (day - today).days
    rel = {0: "today", 1: "tomorrow", -1: "yesterday"}.get(delta)
    return f"{rel} ({label})" if rel else f"on {label}"


def who(w: World, c: dict[str, Any]) -> tuple[str, str]:
    """How the user names contact ``c`` (first name, or "my <relation>" half the time when the
    contact has one) and the contacts.search query that finds them."""
    if c.get("relation") and w.rng.random() < 0.5:
        return f"my {c['relation']}", c["relation"]
    first = c["name"].split()[0]
    return first, first


def unknown_number(w: World) -> str:
    """A number that is no contact's and not in the call log (compared on the last 9 digits)."""
    return w.phone_number("landline")


def add_call(w: World, number: str, direction: str, minutes_ago: int) -> dict[str, Any]:
    """Append a call-log entry to the world and return it."""
    rec = {
        "id": w.next_id("phone.calls", "call_"),
        "number": number,
        "direction": direction,
        "time": w.ts(minutes_ago),
        "duration_s": 0 if direction == "missed" else w.rng.randrange(20, 900),
    }
    w.table("phone.calls").append(rec)
    return rec


def digits_pattern(number: str) -> str:
    """A regex for the last nine digits of ``number``, spaces or dashes allowed between them."""
    return r"[\s\-]?".join(re.escape(d) for d in number[-9:])


def other_number_pattern(*numbers: str) -> str:
    """A regex for a phone number (9 or more digits, spaces, dashes, dots or brackets between them)
    that is none of ``numbers`` (compared by their last nine digits): a hedge or a wrong number
    beside the right one ("+447999030281, or possibly +447999030218"). Dates and times are
    shorter."""
    known = "|".join(digits_pattern(n) for n in numbers)
    return (
        rf"(?<![\w+])(?!\+?(?:\d[\s\-().]{{0,2}})*?(?:{known})(?![\s\-().]{{0,2}}\d))"
        rf"\+?\d(?:[\s\-().]{{0,2}}\d){{8,}}"
    )


def person_pattern(full_name: str) -> str:
    """The first name as a whole word; with the surname too when the first name reads the same
    backwards ("Ana"), or a reversed answer would still name them."""
    first = full_name.split()[0]
    words = full_name.split() if first.casefold() == first.casefold()[::-1] else [first]
    return "(?s)" + "".join(rf"(?=.*\b{re.escape(p)}\b)" for p in words)


@template(
    "phone.call_contact",
    apps=["phone", "contacts"],
    domain=Domain.CALLS,
    difficulty=2,
    capabilities=["lookup", "call", "permission"],
)
def call_contact(w: World) -> Draft:
    """Template ``phone.call_contact``, e.g. task 0: "Call my mom."."""
    (c,) = w.pick("contacts.contacts")
    name, query = who(w, c)
    denied = w.rng.random() < 0.6
    plan = [call("contacts.search", query=query)]
    milestones: list[Criterion] = [looked_up(query)]
    if denied:
        w.permissions = {"phone": {CALL_PHONE: False}}
        plan.append(call("system.request_permission", app="phone", permission=CALL_PHONE))
        milestones.append(behavior("required_call", "system.request_permission", arguments={"app": "phone"}))
    i = len(plan)
    plan += [call("phone.call", number=c["phone"]), call("finish", answer=f"Calling {c['name']}.")]
    other = similar(w, c)
    return Draft(
        goal=w.rng.choice([f"Call {name}.", f"Give {name} a call.", f"Phone {name} for me.", f"Can you ring {name}?"]),
        criteria=[state("phone.calls", "created", number={"person": c["id"]}, direction="out")],
        milestones=milestones,
        # The call stays in progress (or is hung up): either is fine.
        plan=plan,
        probes=[
            passes("number written another way", replacing(plan, i, call("phone.call", number=spaced(c["phone"])))),
            passes("hung up afterwards", [*plan[:-1], call("phone.end_call"), plan[-1]]),
            fails("the wrong person", replacing(plan, i, call("phone.call", number=other["phone"]))),
            fails("never called", replacing(plan, i)),
        ],
    )


@template(
    "phone.last_missed_call",
    apps=["phone", "contacts"],
    domain=Domain.CALLS,
    capabilities=["lookup", "answer", "call"],
)
def last_missed_call(w: World) -> Draft:
    """Template ``phone.last_missed_call``, e.g. task 0: "Call back whoever I missed last, and tell me who it was and at what time."."""
    calls = w.table("phone.calls")
    missed = sorted((r for r in calls if r["direction"] == "missed"), key=lambda r: r["time"], reverse=True)
    stranger = w.rng.random() < 0.25
    if stranger or not missed or (len(missed) > 1 and missed[0]["time"] == missed[1]["time"]):
        # Seeded calls are at least 30 minutes old: this one is the newest missed call.
        number = unknown_number(w) if stranger else w.rng.choice(w.contacts)["phone"]
        last = add_call(w, number, "missed", w.rng.randrange(3, 30))
    else:
        last = missed[0]
    c = w.contact_by_number(last["number"])
    when = last["time"][11:16]
    # Some tasks ask when it was too: a typed time beside the caller.
    ask_when = w.rng.random() < 0.4
    crits: list[Criterion] = []
    if c is None:
        # A stranger's number is free text: its digits.
        crits.append(answer(pattern=digits_pattern(last["number"])))
        reply = f"An unknown number, {last['number']}, at {when}."
    else:
        crits.append(answer(type="contact", value=c["id"]))
        reply = f"{c['name']} ({last['number']}) at {when}."
    # The call back happens now (the clock moves a second a call): a reply may say so beside the
    # missed call's time.
    now = w.now.strftime("%H:%M")
    if ask_when:
        crits.append(answer(id="when", type="time", value=when, context=[now]))
    typed = c is not None and not ask_when and w.rng.random() < 0.5
    plan = [
        call("phone.call_log", filter="missed"),
        call("phone.call", number=last["number"]),
        call("finish", answer=reply, value=c["id"]) if typed and c else call("finish", answer=reply),
    ]
    other = next(x for x in w.contacts if x["phone"][-9:] != last["number"][-9:])
    if ask_when:
        goal = w.rng.choice(
            [
                "Who was my last missed call from, and when did they call? Call them back.",
                "When did I miss my last call, and from whom? Ring them back.",
                "Call back whoever I missed last, and tell me who it was and at what time.",
            ]
        )
    else:
        goal = w.rng.choice(
            [
                "Who was my last missed call from? Call them back.",
                "I missed a call just now - who was it? Ring them back.",
                "Call back whoever I missed last, and tell me who it was.",
                "Find out who I missed a call from most recently and call them back; tell me who it was.",
                "Whose call did I miss last? Return it.",
            ]
        )
    probes = [
        passes("the whole log read", replacing(plan, 0, call("phone.call_log"))),
        passes("hung up afterwards", [*plan[:-1], call("phone.end_call"), plan[-1]]),
        fails("called someone else", replacing(plan, 1, call("phone.call", number=other["phone"]))),
        fails("named someone else", finishing(plan, f"{other['name']} ({other['phone']}) at {when}.")),
    ]
    said = reply.removesuffix(f" at {when}.")
    if c is not None:
        first = c["name"].split()[0]
        probes += [
            passes("by first name", finishing(plan, f"It was {first}, at {spoken(when)}; calling back.")),
            fails("a hedge", finishing(plan, f"{c['name']} or {other['name']}, at {when}.")),
            fails(
                "the right one only in passing",
                finishing(plan, f"Not {c['name']} - it was {other['name']}, at {when}."),
            ),
        ]
        if not ask_when:
            probes += [
                passes("typed person", finishing(plan, "Calling them back.", value=c["id"])),
                fails("typed value contradicts the text", finishing(plan, f"{c['name']} called.", value=other["id"])),
            ]
    if ask_when:
        h, m = int(when[:2]), int(when[3:])
        wrong = f"{(h + 1) % 24:02d}:{m:02d}"
        probes += [
            passes("12-hour time", finishing(plan, f"{said}, at {spoken(when)}.")),
            fails("the wrong time", finishing(plan, f"{said}, at {wrong}.")),
            fails("a hedge on the time", finishing(plan, f"{said}, at {when} or {wrong}.")),
            passes("the call-back time beside", finishing(plan, f"{said}, at {when}; I called back at {now}.")),
            fails("only the call-back time", finishing(plan, f"{said}; I called back at {now}.")),
        ]
    return Draft(
        goal=goal,
        criteria=[*crits, state("phone.calls", "created", number={"number": last["number"]}, direction="out")],
        milestones=[
            behavior("required_call", "phone.call", id="called_back", arguments={"number": {"number": last["number"]}})
        ],
        plan=plan,
        perturb_exempt=["2.answer"],
        probes=probes,
    )


@template(
    "phone.block_caller",
    apps=["phone"],
    domain=Domain.CALLS,
    difficulty=2,
    capabilities=["lookup", "update", "delete"],
)
def block_caller(w: World) -> Draft:
    """Template ``phone.block_caller``, e.g. task 0: "Get rid of the unknown caller: block the number and delete every call from it in my history."."""
    number = unknown_number(w)
    entries = [
        add_call(w, number, w.rng.choice(["missed", "missed", "in"]), w.rng.randrange(30, 6000))
        for _ in range(w.rng.randrange(1, 4))
    ]
    ids = [e["id"] for e in entries]
    n = len(entries)
    plan = [
        call("phone.call_log"),
        call("phone.block_number", number=number),
        *(call("phone.delete_call_log_entry", call_id=x) for x in ids),
        call("finish", answer=f"Blocked {number} and removed {n} call(s)."),
    ]
    keep = next(r for r in w.table("phone.calls") if r["id"] not in ids)
    return Draft(
        goal=w.rng.choice(
            [
                "A number that isn't saved in my contacts keeps calling me. Block it and clear its calls from my log.",
                "Block the unknown number in my call log - it's not one of my contacts - and delete its calls.",
                "Some stranger keeps ringing me. Block that number and remove it from my call history.",
                "There's a caller in my log who isn't in my contacts: block them and wipe their calls from the log.",
                "Get rid of the unknown caller: block the number and delete every call from it in my history.",
                "Someone I don't have saved keeps calling. Block the number, then remove those calls from the list.",
            ]
        ),
        criteria=[
            state("phone.blocked", "created", number={"number": number}),
            state("phone.calls", "deleted", count=n, number={"number": number}),
            state("phone.calls", "absent", number={"number": number}),
        ],
        milestones=[
            behavior("required_call", "phone.block_number", id="blocked", arguments={"number": {"number": number}})
        ],
        plan=plan,
        probes=[
            passes("number written another way", replacing(plan, 1, call("phone.block_number", number=spaced(number)))),
            passes("looked it up by number", [*plan[:1], call("phone.call_log", number=number), *plan[1:]]),
            fails("calls left in the log", [*plan[:2], plan[-1]]),
            fails(
                "a contact's call deleted too",
                [*plan[:-1], call("phone.delete_call_log_entry", call_id=keep["id"]), plan[-1]],
            ),
        ],
    )


@template(
    "phone.delete_call_entry",
    apps=["phone"],
    domain=Domain.CALLS,
    difficulty=2,
    capabilities=["lookup", "delete", "confirm"],
)
def delete_call_entry(w: World) -> Draft:
    """Template ``phone.delete_call_entry``, e.g. task 0: "Delete my call to Bastian yesterday (Tuesday 3 November) at 08:49 from my call log."."""
    calls = w.table("phone.calls")
    # The goal names a call by person, day and minute: keep the calls no other call shares those with.
    seen: dict[tuple[str, str], int] = {}
    for r in calls:
        seen[r["number"], r["time"][:16]] = seen.get((r["number"], r["time"][:16]), 0) + 1
    entry = w.rng.choice([r for r in calls if seen[r["number"], r["time"][:16]] == 1])
    c = w.contact_by_number(entry["number"])
    assert c is not None
    first = c["name"].split()[0]
    what = {"missed": f"the missed call from {first}", "in": f"the call from {first}", "out": f"my call to {first}"}
    when = dt.datetime.fromisoformat(entry["time"])
    confirm = confirm_variant(w, 0.5)
    goal = f"Delete {what[entry['direction']]} {day_words(when.date(), w.now.date())} at {when:%H:%M} from my call log."
    plan = [call("phone.call_log", number=c["phone"])]
    criteria: list[Criterion] = [state("phone.calls", "deleted", id=entry["id"])]
    milestones: list[Criterion] = [
        behavior("required_call", "phone.call_log", id="log", arguments={"number": {"person": c["id"]}})
    ]
    if confirm:
        goal += " Confirm with me first."
        ask_first(
            plan,
            criteria,
            "phone.delete_call_log_entry",
            f"Delete the {when:%H:%M} call with {c['name']} from the log?",
        )
    plan += [call("phone.delete_call_log_entry", call_id=entry["id"]), call("finish", answer="Deleted it.")]
    same_person = [r for r in calls if r["number"] == entry["number"] and r["id"] != entry["id"]]
    probes = [
        passes("the whole log read", replacing(plan, 0, call("phone.call_log"))),
        passes("answered in other words", finishing(plan, "That call is gone from the log.")),
        fails("nothing deleted", replacing(plan, -2)),
    ]
    if same_person:
        probes.append(
            fails(
                "another call with them",
                replacing(plan, -2, call("phone.delete_call_log_entry", call_id=same_person[0]["id"])),
            )
        )
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=milestones,
        plan=plan,
        probes=probes,
    )
