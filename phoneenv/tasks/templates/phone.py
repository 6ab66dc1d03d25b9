"""Phone templates: call people, read the call log, block numbers and clean up the log."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from phoneenv.contract import Domain
from phoneenv.tasks.templates import Draft, answer, ask_first, behavior, call, confirm_variant, state, template
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
    """Template ``phone.call_contact``, e.g. task 0: "Phone Maya for me."."""
    (c,) = w.pick("contacts.contacts")
    name, query = who(w, c)
    denied = w.rng.random() < 0.5
    plan = [call("contacts.search", query=query)]
    milestones = [behavior("required_call", "contacts.search")]
    if denied:
        w.permissions = {"phone": {CALL_PHONE: False}}
        plan.append(call("system.request_permission", app="phone", permission=CALL_PHONE))
        milestones.append(behavior("required_call", "system.request_permission", arguments={"app": "phone"}))
    plan += [call("phone.call", number=c["phone"]), call("finish", answer=f"Calling {c['name']}.")]
    return Draft(
        goal=w.rng.choice([f"Call {name}.", f"Give {name} a call.", f"Phone {name} for me."]),
        criteria=[state("phone.calls", "created", number={"number": c["phone"]}, direction="out")],
        milestones=milestones,
        # The call stays in progress (or is hung up): either is fine.
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
    )


@template(
    "phone.last_missed_call",
    apps=["phone"],
    domain=Domain.CALLS,
    capabilities=["lookup", "answer"],
)
def last_missed_call(w: World) -> Draft:
    """Template ``phone.last_missed_call``, e.g. task 0: "Who was my last missed call from?"."""
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
    if c is None:
        crit = answer(pattern=digits_pattern(last["number"]))
        reply = f"An unknown number, {last['number']}, at {last['time'][11:16]}."
    else:
        crit = answer(pattern=person_pattern(c["name"]))
        reply = f"{c['name']} ({last['number']}) at {last['time'][11:16]}."
    return Draft(
        goal=w.rng.choice(["Who was my last missed call from?", "Who called me last that I missed?"]),
        criteria=[crit, behavior("read_only")],
        plan=[call("phone.call_log", filter="missed"), call("finish", answer=reply)],
    )


@template(
    "phone.block_caller",
    apps=["phone"],
    domain=Domain.CALLS,
    difficulty=2,
    capabilities=["lookup", "update"],
)
def block_caller(w: World) -> Draft:
    """Template ``phone.block_caller``, e.g. task 0: "A number that isn't saved in my contacts keeps calling me. Block it."."""
    number = unknown_number(w)
    for _ in range(w.rng.randrange(1, 4)):
        add_call(w, number, w.rng.choice(["missed", "missed", "in"]), w.rng.randrange(30, 6000))
    return Draft(
        goal=w.rng.choice(
            [
                "A number that isn't saved in my contacts keeps calling me. Block it.",
                "Block the unknown number in my call log - it's not one of my contacts.",
            ]
        ),
        criteria=[state("phone.blocked", "created", number={"number": number})],
        milestones=[behavior("required_call", "phone.call_log")],
        plan=[
            call("phone.call_log"),
            call("phone.block_number", number=number),
            call("finish", answer=f"Blocked {number}."),
        ],
        perturb_exempt=["2.answer"],
    )


@template(
    "phone.delete_call_entry",
    apps=["phone"],
    domain=Domain.CALLS,
    difficulty=2,
    capabilities=["lookup", "delete", "confirm"],
)
def delete_call_entry(w: World) -> Draft:
    """Template ``phone.delete_call_entry``, e.g. task 0: "Delete my call to Jonas yesterday (Sunday 15 November) at 07:03 from my call log."."""
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
    criteria = [state("phone.calls", "deleted", id=entry["id"])]
    milestones = [behavior("required_call", "phone.call_log")]
    if confirm:
        goal += " Confirm with me first."
        ask_first(
            plan,
            criteria,
            "phone.delete_call_log_entry",
            f"Delete the {when:%H:%M} call with {c['name']} from the log?",
            milestones,
        )
    plan += [call("phone.delete_call_log_entry", call_id=entry["id"]), call("finish", answer="Deleted it.")]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=milestones,
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
    )
