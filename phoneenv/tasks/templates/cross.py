"""Cross-app templates: a goal that needs facts from one app and actions in another."""

from __future__ import annotations

import datetime as dt
from typing import Any

from phoneenv.contract import Domain
from phoneenv.tasks.templates import Draft, behavior, call, state, template
from phoneenv.tasks.world import World

CALL_PHONE = "android.permission.CALL_PHONE"


def _day_words(day: dt.date, today: dt.date) -> str:
    """``tomorrow (Monday 30 November)`` / ``today (...)`` / ``Friday 4 December``."""
    label = f"{day.strftime('%A')} {day.day} {day.strftime('%B')}"
    if day == today:
        return f"today ({label})"
    if day == today + dt.timedelta(days=1):
        return f"tomorrow ({label})"
    return label


def _first(c: dict[str, Any]) -> str:
    return c["name"].split()[0]


def _add_event(
    w: World, day: dt.date, hour: int, title: str, attendees: tuple[str, ...], location: str | None
) -> dict[str, Any]:
    """Add an event on ``day`` at ``hour``:00 that overlaps no other event that day."""
    events = w.table("calendar.events")
    start = dt.datetime.combine(day, dt.time(hour, 0))
    while any(e["start"][:10] == day.isoformat() and abs(int(e["start"][11:13]) - start.hour) < 2 for e in events):
        start += dt.timedelta(hours=1)
    ev = {
        "id": w.next_id("calendar.events", "ev_"),
        "title": title,
        "start": start.isoformat(timespec="minutes"),
        "end": (start + dt.timedelta(hours=1)).isoformat(timespec="minutes"),
        "location": location,
        "attendees": attendees,
        "notes": None,
        "all_day": False,
    }
    events.append(ev)
    return ev


def _add_message(w: World, number: str, body: str, minutes_ago: int, direction: str = "in") -> dict[str, Any]:
    msg = {
        "id": w.next_id("messages.messages", "m_"),
        "number": number,
        "direction": direction,
        "body": body,
        "time": w.ts(minutes_ago),
        "read": direction == "out",
    }
    w.table("messages.messages").append(msg)
    return msg


def _unknown_number(w: World) -> str:
    return w.phone_number("mobile")


def _sms_to(c: dict[str, Any], **body: Any) -> Any:
    return state("messages.messages", "created", number={"number": c["phone"]}, direction="out", body=body)


@template(
    "cross.late_to_meeting",
    apps=["calendar", "contacts", "messages"],
    domain=Domain.COMMUNICATION,
    difficulty=3,
    capabilities=["lookup", "multi-entity", "send"],
    count=10,
)
def late_to_meeting(w: World) -> Draft:
    """Template ``cross.late_to_meeting``, e.g. task 0: "Text everyone in my \"Vendor call\" meeting tomorrow (Tuesday 24 November) at 16:00 that I will be 10 minutes late."."""
    day = w.now.date() + dt.timedelta(days=1)
    people = w.rng.sample(w.contacts, w.rng.choice([2, 3]))
    title = w.rng.choice(["Quarterly planning", "Vendor call", "Hiring sync", "Roadmap review"])
    ev = _add_event(w, day, w.rng.choice([9, 10, 14]), title, tuple(sorted(p["name"] for p in people)), "Room 2.01")
    plan = [call("calendar.list_events", date=day.isoformat())]
    for p in people:
        plan += [
            call("contacts.search", query=p["name"]),
            call("messages.send", to=p["phone"], body=f"Hi {_first(p)}, I'll be 10 minutes late to {title}."),
        ]
    plan.append(call("finish", answer=f"Texted {len(people)} people."))
    exempt = [f"{i}.query" for i, c in enumerate(plan) if c.name == "contacts.search"] + [f"{len(plan) - 1}.answer"]
    return Draft(
        goal=f'Text everyone in my "{title}" meeting {_day_words(day, w.now.date())} at {ev["start"][11:]} that I will be 10 minutes late.',
        criteria=[_sms_to(p, icontains="late") for p in people],
        milestones=[behavior("required_call", "calendar.list_events"), *(_sms_to(p, icontains="late") for p in people)],
        plan=plan,
        perturb_exempt=exempt,
    )


@template(
    "cross.text_missed_caller",
    apps=["phone", "messages"],
    domain=Domain.COMMUNICATION,
    difficulty=2,
    capabilities=["lookup", "send"],
    count=10,
)
def text_missed_caller(w: World) -> Draft:
    """Template ``cross.text_missed_caller``, e.g. task 0: "I just missed a call. Text whoever it was: \"Sorry I missed your call, I will ring you back tonight.\""."""
    (c,) = w.pick("contacts.contacts")
    calls = w.table("phone.calls")
    latest = min(int((w.now - dt.datetime.fromisoformat(x["time"])).total_seconds() // 60) for x in calls)
    calls.append(
        {
            "id": w.next_id("phone.calls", "call_"),
            "number": c["phone"],
            "direction": "missed",
            "time": w.ts(max(1, latest - 5)),
            "duration_s": 0,
        }
    )
    body = "Sorry I missed your call, I will ring you back tonight."
    return Draft(
        goal=f'I just missed a call. Text whoever it was: "{body}"',
        criteria=[_sms_to(c, icontains="missed your call")],
        milestones=[behavior("required_call", "phone.call_log")],
        plan=[
            call("phone.call_log", filter="missed", limit=5),
            call("messages.send", to=c["phone"], body=body),
            call("finish", answer=f"Texted {c['name']}."),
        ],
        perturb_exempt=["2.answer"],
    )


@template(
    "cross.save_unknown_number",
    apps=["messages", "contacts"],
    domain=Domain.CONTACTS,
    difficulty=2,
    capabilities=["lookup", "create"],
    count=10,
)
def save_unknown_number(w: World) -> Draft:
    """Template ``cross.save_unknown_number``, e.g. task 0: "Someone texted me about the bike you are selling. Save their number as a contact named Ana Silva."."""
    number = _unknown_number(w)
    name = w.new_name()
    first = name.split()[0]
    topic = w.rng.choice(["the bike you are selling", "the flat viewing", "the football team", "the choir rehearsal"])
    _add_message(w, number, f"Hi, this is {first}, about {topic} - can we talk?", w.rng.randrange(5, 120))
    keyword = topic.split()[-1]
    return Draft(
        goal=f"Someone texted me about {topic}. Save their number as a contact named {name}.",
        criteria=[state("contacts.contacts", "created", name={"iequals": name}, phone={"number": number})],
        milestones=[behavior("required_call", "messages.search")],
        plan=[
            call("messages.search", query=keyword),
            call("contacts.create", name=name, phone=number),
            call("finish", answer=f"Saved {name}."),
        ],
        perturb_exempt=["0.query", "2.answer"],
    )


@template(
    "cross.event_from_email",
    apps=["mail", "calendar"],
    domain=Domain.SCHEDULING,
    difficulty=3,
    capabilities=["lookup", "extract", "create"],
    count=10,
)
def event_from_email(w: World) -> Draft:
    """Template ``cross.event_from_email``, e.g. task 0: "Paul Ivanova emailed me about dinner. Put it in my calendar, two hours long, with the place as the location."."""
    c = w.rng.choice([x for x in w.contacts if x["email"]])
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(2, 6))
    hour, minute = w.rng.choice([(19, 30), (20, 0), (18, 45)])
    place = w.rng.choice(["Cafe Luna", "Trattoria Roma", "The Green Table"])
    sender = c["email"]
    w.table("mail.messages").append(
        {
            "id": w.next_id("mail.messages", "em_"),
            "folder": "inbox",
            "from": sender,
            "to": (w.user_email,),
            "subject": "Dinner plans",
            "body": f"Dinner at {place} on {day.strftime('%A')} {day.day} {day.strftime('%B')} at {hour:02d}:{minute:02d}?",
            "time": w.ts(30),
            "read": False,
        }
    )
    start = dt.datetime.combine(day, dt.time(hour, minute))
    end = start + dt.timedelta(hours=2)
    s, e = start.isoformat(timespec="minutes"), end.isoformat(timespec="minutes")
    return Draft(
        goal=f"{c['name']} emailed me about dinner. Put it in my calendar, two hours long, with the place as the location.",
        criteria=[
            state(
                "calendar.events", "created", title={"icontains": "dinner"}, start=s, end=e, location={"iequals": place}
            )
        ],
        milestones=[behavior("required_call", "mail.search")],
        plan=[
            call("mail.search", query="dinner"),
            call("calendar.create_event", title=f"Dinner with {_first(c)}", start=s, end=e, location=place),
            call("finish", answer="Added the dinner."),
        ],
        perturb_exempt=["0.query", "2.answer"],
    )


@template(
    "cross.note_contact_number",
    apps=["contacts", "notes"],
    domain=Domain.NOTES,
    capabilities=["lookup", "create"],
    count=10,
)
def note_contact_number(w: World) -> Draft:
    """Template ``cross.note_contact_number``, e.g. task 0: "Make a note titled \"For the babysitter\" with Zoe Haddad's phone number in it."."""
    (c,) = w.pick("contacts.contacts")
    title = w.rng.choice(["Numbers", "Emergency contacts", "For the babysitter"])
    return Draft(
        goal=f'Make a note titled "{title}" with {c["name"]}\'s phone number in it.',
        criteria=[state("notes.notes", "created", title={"iequals": title}, body={"icontains": c["phone"]})],
        milestones=[behavior("required_call", "contacts.search")],
        plan=[
            call("contacts.search", query=c["name"]),
            call("notes.create", title=title, body=f"{c['name']}: {c['phone']}"),
            call("finish", answer="Noted."),
        ],
        perturb_exempt=["0.query", "2.answer"],
    )


@template(
    "cross.sms_event_location",
    apps=["calendar", "contacts", "messages"],
    domain=Domain.COMMUNICATION,
    difficulty=2,
    capabilities=["lookup", "send"],
    count=10,
)
def sms_event_location(w: World) -> Draft:
    """Template ``cross.sms_event_location``, e.g. task 0: "Text Ben Becker the address of my birthday party on Monday 23 November."."""
    c1, c2 = w.rng.sample(w.contacts, 2)
    place = w.rng.choice(["Kastanienallee 12", "Harbour Hall", "Studio 9", "North Park gate"])
    title = w.rng.choice(["Birthday party", "Pottery class", "Climbing session", "Film night"])
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 5))
    _add_event(w, day, 18, title, (c2["name"],), place)
    return Draft(
        goal=f"Text {c1['name']} the address of my {title.lower()} on {_day_words(day, w.now.date())}.",
        criteria=[_sms_to(c1, icontains=place)],
        milestones=[behavior("required_call", "calendar.search_events")],
        plan=[
            call("calendar.search_events", query=title),
            call("contacts.search", query=c1["name"]),
            call("messages.send", to=c1["phone"], body=f"The {title.lower()} on {day.strftime('%A')} is at {place}."),
            call("finish", answer="Sent."),
        ],
        perturb_exempt=["0.query", "1.query", "3.answer"],
    )


@template(
    "cross.alarm_before_first_event",
    apps=["calendar", "clock"],
    domain=Domain.TIME,
    difficulty=2,
    capabilities=["lookup", "arithmetic", "create"],
    count=10,
)
def alarm_before_first_event(w: World) -> Draft:
    """Template ``cross.alarm_before_first_event``, e.g. task 0: "Set an alarm 90 minutes before my first event tomorrow."."""
    day = w.now.date() + dt.timedelta(days=1)
    events = [e for e in w.table("calendar.events") if e["start"][:10] == day.isoformat()]
    if not events:
        events = [_add_event(w, day, 9, "Team standup", (), "Office")]
    first = min(events, key=lambda e: e["start"])
    lead = w.rng.choice([30, 45, 60, 90])
    ring = (dt.datetime.fromisoformat(first["start"]) - dt.timedelta(minutes=lead)).strftime("%H:%M")
    return Draft(
        goal=f"Set an alarm {lead} minutes before my first event tomorrow.",
        criteria=[state("clock.alarms", "created", time=ring, enabled=True)],
        milestones=[behavior("required_call", "calendar.list_events")],
        plan=[
            call("calendar.list_events", date=day.isoformat()),
            call("clock.create_alarm", time=ring, label=first["title"]),
            call("finish", answer=f"Alarm at {ring}."),
        ],
        perturb_exempt=["1.label", "2.answer"],
    )


@template(
    "cross.email_attendees",
    apps=["calendar", "contacts", "mail"],
    domain=Domain.EMAIL,
    difficulty=3,
    capabilities=["lookup", "multi-entity", "send"],
    count=10,
)
def email_attendees(w: World) -> Draft:
    """Template ``cross.email_attendees``, e.g. task 0: "Email everyone invited to the \"Launch retro\" meeting, subject \"Agenda\", with a short agenda."."""
    with_email = [c for c in w.contacts if c["email"]]
    people = w.rng.sample(with_email, 2)
    title = w.rng.choice(["Budget review", "Launch retro", "Partner workshop"])
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 4))
    _add_event(w, day, 11, title, tuple(sorted(p["name"] for p in people)), "Room 1.10")
    plan = [call("calendar.search_events", query=title)]
    plan += [call("contacts.search", query=p["name"]) for p in people]
    plan += [
        call(
            "mail.send",
            to=[p["email"] for p in people],
            subject="Agenda",
            body=f"Agenda for {title}: goals, numbers, next steps.",
        ),
        call("finish", answer="Emailed."),
    ]
    n = len(plan)
    return Draft(
        goal=f'Email everyone invited to the "{title}" meeting, subject "Agenda", with a short agenda.',
        criteria=[
            state(
                "mail.messages", "created", folder="sent", subject={"iequals": "Agenda"}, to={"has": people[0]["email"]}
            ),
            state("mail.messages", "created", folder="sent", to={"has": people[1]["email"], "len": 2}),
        ],
        milestones=[behavior("required_call", "calendar.search_events")],
        plan=plan,
        perturb_exempt=["0.query", "1.query", "2.query", f"{n - 2}.body", f"{n - 1}.answer"],
    )


@template(
    "cross.call_with_permission",
    apps=["contacts", "phone"],
    domain=Domain.CALLS,
    difficulty=2,
    capabilities=["lookup", "permission", "call"],
    count=10,
)
def call_with_permission(w: World) -> Draft:
    """Template ``cross.call_with_permission``, e.g. task 0: "Call my dentist."."""
    c = w.rng.choice([x for x in w.contacts if x["relation"]])
    w.permissions = {"phone": {CALL_PHONE: False}}
    return Draft(
        goal=f"Call my {c['relation']}.",
        criteria=[state("phone.calls", "created", number={"number": c["phone"]}, direction="out")],
        milestones=[behavior("required_call", "system.request_permission", arguments={"permission": CALL_PHONE})],
        plan=[
            call("contacts.search", query=c["relation"]),
            call("system.request_permission", app="phone", permission=CALL_PHONE),
            call("phone.call", number=c["phone"]),
            call("finish", answer=f"Calling {c['name']}."),
        ],
        perturb_exempt=["0.query", "1.app", "1.permission", "3.answer"],
    )


@template(
    "cross.share_note_sms",
    apps=["notes", "contacts", "messages"],
    domain=Domain.COMMUNICATION,
    difficulty=2,
    capabilities=["lookup", "send"],
    count=10,
)
def share_note_sms(w: World) -> Draft:
    """Template ``cross.share_note_sms``, e.g. task 0: "Text Nico Becker what is in my \"Books to read\" note."."""
    (note,) = w.pick("notes.notes")
    (c,) = w.pick("contacts.contacts")
    first_line = note["body"].splitlines()[0]
    return Draft(
        goal=f'Text {c["name"]} what is in my "{note["title"]}" note.',
        criteria=[_sms_to(c, icontains=first_line)],
        milestones=[behavior("required_call", "notes.search")],
        plan=[
            call("notes.search", query=note["title"]),
            call("contacts.search", query=c["name"]),
            call("messages.send", to=c["phone"], body=note["body"].replace("\n", ", ")),
            call("finish", answer="Sent."),
        ],
        perturb_exempt=["0.query", "1.query", "3.answer"],
    )


@template(
    "cross.block_spam_caller",
    apps=["phone", "messages"],
    domain=Domain.CALLS,
    difficulty=3,
    capabilities=["lookup", "block", "delete"],
    count=10,
)
def block_spam_caller(w: World) -> Draft:
    """Template ``cross.block_spam_caller``, e.g. task 0: "An unknown number keeps calling and texting me about a prize. Block it and delete its texts."."""
    number = _unknown_number(w)
    calls = w.table("phone.calls")
    for ago in (15, 40):
        calls.append(
            {
                "id": w.next_id("phone.calls", "call_"),
                "number": number,
                "direction": "missed",
                "time": w.ts(ago),
                "duration_s": 0,
            }
        )
    texts = [
        _add_message(w, number, body, ago)
        for body, ago in (("You won a prize! Reply YES", 20), ("Last chance to claim your prize", 10))
    ]
    return Draft(
        goal="An unknown number keeps calling and texting me about a prize. Block it and delete its texts.",
        criteria=[
            state("phone.blocked", "created", number={"number": number}),
            state("messages.messages", "deleted", count=len(texts), number={"number": number}),
            state("messages.messages", "absent", number={"number": number}),
        ],
        milestones=[behavior("required_call", "phone.block_number")],
        plan=[
            call("phone.call_log", filter="missed", limit=5),
            call("phone.block_number", number=number),
            call("messages.read_thread", number=number),
            *(call("messages.delete", message_id=m["id"]) for m in texts),
            call("finish", answer="Blocked and deleted."),
        ],
        perturb_exempt=[f"{3 + len(texts)}.answer"],
    )


@template(
    "cross.email_note",
    apps=["notes", "contacts", "mail"],
    domain=Domain.EMAIL,
    difficulty=2,
    capabilities=["lookup", "send"],
    count=10,
)
def email_note(w: World) -> Draft:
    """Template ``cross.email_note``, e.g. task 0: "Email my \"Packing list\" note to Caleb Costa, with the note's title as the subject."."""
    (note,) = w.pick("notes.notes")
    c = w.rng.choice([x for x in w.contacts if x["email"]])
    return Draft(
        goal=f'Email my "{note["title"]}" note to {c["name"]}, with the note\'s title as the subject.',
        criteria=[
            state(
                "mail.messages",
                "created",
                folder="sent",
                to={"has": c["email"]},
                subject={"iequals": note["title"]},
                body={"icontains": note["body"].splitlines()[0]},
            )
        ],
        milestones=[behavior("required_call", "notes.search"), behavior("required_call", "contacts.search")],
        plan=[
            call("notes.search", query=note["title"]),
            call("contacts.search", query=c["name"]),
            call("mail.send", to=[c["email"]], subject=note["title"], body=note["body"]),
            call("finish", answer="Sent."),
        ],
        perturb_exempt=["0.query", "1.query", "3.answer"],
    )
