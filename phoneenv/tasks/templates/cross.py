"""Cross-app templates: a goal that needs facts from one app and actions in another."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from phoneenv.contract import BehaviorCriterion, CompositeCriterion, Domain, StateCriterion, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer_if_said,
    behavior,
    call,
    dictated,
    fails,
    finishing,
    first_name,
    named,
    namesake,
    national,
    passes,
    pick,
    replacing,
    said_probes,
    state,
    template,
)
from phoneenv.tasks.world import World

CALL_PHONE = "android.permission.CALL_PHONE"
RSVP_YES = (
    r"\bsee you\b|\b(?:i'll|i will|i'm going to)\s+(?:be there|come|make it|join)\b|\bcount me in\b|\bi'?m in\b"
    r"|\bi'?m coming\b|\bi am coming\b|\bsounds? (?:great|good|lovely|perfect|fun)\b|\blooking forward\b|\byes\b"
    r"|\bcan'?t wait\b|\bi'?d love to\b|\bi would love to\b|\bwill be there\b|\bi'?ll join\b"
)
"""A reply to an invitation that accepts ("Sounds great, see you there!", "Count me in", "I'll be
there")."""
RSVP_NO = (
    r"\b(?:can'?t|cannot|won'?t|will not|unable to|not able to)\s+(?:\w+\s+)?(?:make it|come|join|be there|attend)\b"
    r"|\b(?:have|need) to pass\b|\bi'?ll pass\b|\bbusy\b|\bnot coming\b|\banother time\b|\brain check\b"
    r"|\bdecline\b|\bsorry,? no\b|\bcan'?t do\b|\bnot (?:this|that) time\b"
)
"""A reply that declines ("I can't make it", "I'll have to pass", "I'm busy that evening")."""
MINUTE_WORDS = {
    5: "five",
    10: "ten",
    15: "fifteen",
    20: "twenty",
    30: "thirty",
    45: "forty-five",
    60: "sixty",
    90: "ninety",
}


def _day_words(day: dt.date, today: dt.date) -> str:
    """``tomorrow (Monday 30 November)`` / ``today (...)`` / ``Friday 4 December``."""
    label = f"{day.strftime('%A')} {day.day} {day.strftime('%B')}"
    if day == today:
        return f"today ({label})"
    if day == today + dt.timedelta(days=1):
        return f"tomorrow ({label})"
    return label


def _all_in(parts: list[str]) -> dict[str, str]:
    """A ``regex`` condition holding when a text contains every one of ``parts`` (any order)."""
    return {"regex": "(?s)^" + "".join(f"(?=.*{re.escape(p)})" for p in parts)}


def _lookup(c: dict[str, Any], *also: str) -> BehaviorCriterion:
    """Milestone: the contact looked up by a name or relation that finds ``c``."""
    keys = [first_name(c), c["name"].split()[-1], *(a for a in also if a)]
    return behavior(
        "required_call",
        "contacts.search",
        id=f"looked up {c['name']}",
        arguments={"query": {"any": [{"icontains": k} for k in keys]}},
    )


def _any(id: str, *criteria: Any) -> CompositeCriterion:
    """A milestone met by any one of ``criteria`` (the same progress made several ways)."""
    return CompositeCriterion(kind="any_of", id=id, criteria=list(criteria))


def _found_event(ev: dict[str, Any]) -> CompositeCriterion:
    """Milestone: the event found by its day, a word of its title, or its id."""
    words = "|".join(re.escape(x.lower()) for x in ev["title"].split() if len(x) > 2)
    return CompositeCriterion(
        kind="any_of",
        id=f"found event {ev['id']}",
        criteria=[
            behavior("required_call", "calendar.list_events", arguments={"date": ev["start"][:10]}),
            behavior("required_call", "calendar.search_events", arguments={"query": {"regex": words}}),
            behavior("required_call", "calendar.get_event", arguments={"event_id": ev["id"]}),
        ],
    )


def _found_note(note: dict[str, Any]) -> CompositeCriterion:
    """Milestone: the note found by a word of its title, or read by its id."""
    words = "|".join(re.escape(x.lower().strip(":")) for x in note["title"].split() if len(x) > 2)
    return CompositeCriterion(
        kind="any_of",
        id=f"found note {note['id']}",
        criteria=[
            behavior("required_call", "notes.search", arguments={"query": {"regex": words}}),
            behavior("required_call", "notes.get", arguments={"note_id": note["id"]}),
        ],
    )


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


def _add_call(w: World, number: str, minutes_ago: int, direction: str = "missed") -> dict[str, Any]:
    rec = {
        "id": w.next_id("phone.calls", "call_"),
        "number": number,
        "direction": direction,
        "time": w.ts(minutes_ago),
        "duration_s": 0,
    }
    w.table("phone.calls").append(rec)
    return rec


def _unknown_number(w: World) -> str:
    return w.phone_number("mobile")


def _sms_to(c: dict[str, Any], **body: Any) -> StateCriterion:
    """A text sent to contact ``c`` (by identity: any format of the number) whose body meets ``body``."""
    where: dict[str, Any] = {"number": {"person": c["id"]}, "direction": "out"}
    if body:
        where["body"] = body
    return state("messages.messages", "created", **where)


def _mail_to(c: dict[str, Any], **where: Any) -> StateCriterion:
    """An e-mail sent to contact ``c`` alone (by identity: any of their addresses; no other
    recipient, who would read what was meant for ``c``)."""
    return state("mail.messages", "created", folder="sent", to={"people": [c["id"]]}, **where)


def _tell(c: dict[str, Any], id: str, **body: Any) -> CompositeCriterion:
    """``c`` told something by text or by e-mail (the goal names no channel)."""
    return CompositeCriterion(
        kind="any_of", id=id, criteria=[_sms_to(c, **body), _mail_to(c, **({"body": body} if body else {}))]
    )


def _send(c: dict[str, Any], body: str, to: str | None = None) -> list[ToolCall]:
    """Look ``c`` up and text them ``body``."""
    return [call("contacts.search", query=first_name(c)), call("messages.send", to=to or c["phone"], body=body)]


@template(
    "cross.late_to_meeting",
    apps=["calendar", "contacts", "messages"],
    domain=Domain.COMMUNICATION,
    difficulty=3,
    capabilities=["lookup", "multi-entity", "send"],
    count=10,
)
def late_to_meeting(w: World) -> Draft:
    """Template ``cross.late_to_meeting``, e.g. task 0: "Text everyone in my \"Quarterly planning\" meeting tomorrow (Wednesday 18 November) at 10:00 that I will be 5 minutes late."."""
    day = w.now.date() + dt.timedelta(days=1)
    people = w.rng.sample(w.contacts, w.rng.choice([2, 3]))
    title = w.rng.choice(["Quarterly planning", "Vendor call", "Hiring sync", "Roadmap review", "Budget check-in"])
    ev = _add_event(w, day, w.rng.choice([9, 10, 14]), title, tuple(sorted(p["name"] for p in people)), "Room 2.01")
    decoy = namesake(w, people[0])
    (late, phrasing) = pick(w, [5, 10, 15, 20], [0, 1])
    other = next(m for m in (20, 30, 45) if m != late)
    when = f"{_day_words(day, w.now.date())} at {ev['start'][11:]}"
    goal = (
        f'Text everyone in my "{title}" meeting {when} that I will be {late} minutes late.'
        if phrasing == 0
        else f'I\'m going to be {late} minutes late to the "{title}" meeting {when}. Let everyone in it know by text.'
    )
    # The lateness as a duration ("10 minutes late", "running ten minutes behind"), never denied
    # ("I won't be late after all"), and no other time than the meeting's own or the arrival
    # ("see you at 10:05").
    start = dt.datetime.fromisoformat(ev["start"][:16])
    arrival = (start + dt.timedelta(minutes=late)).strftime("%H:%M")
    minutes = {
        # or the arrival time, the meeting's start at most beside it ("at 11:10 instead of 11:00")
        "any": [
            {"states": {"duration": late * 60}},
            {"states": {"time": {"value": arrival, "context": [ev["start"][11:16]]}}},
        ],
        "not": {"regex": r"\b(?:won'?t|will not|not going to|no longer)\b[^.!?]*\b(?:late|behind)\b|\bon time\b"},
        "consistent": {"time": [ev["start"][11:16], arrival], "date": day.isoformat()},
    }

    def plan_with(body: str, list_call: ToolCall | None = None) -> list[ToolCall]:
        out = [list_call or call("calendar.list_events", date=day.isoformat())]
        for p in people:
            out += _send(p, body.format(first=first_name(p)))
        return [*out, call("finish", answer=f"Texted {len(people)} people.")]

    plan = plan_with(f"Hi {{first}}, I'll be {late} minutes late to {title}.")
    exempt = [f"{i}.query" for i, c in enumerate(plan) if c.name == "contacts.search"] + [f"{len(plan) - 1}.answer"]
    wrong_person = list(plan)
    wrong_person[2] = call("messages.send", to=decoy["phone"], body=plan[2].arguments["body"])
    return Draft(
        goal=goal,
        criteria=[_sms_to(p, **minutes) for p in people],
        milestones=[_found_event(ev), *(_sms_to(p, **minutes) for p in people)],
        plan=plan,
        perturb_exempt=exempt,
        probes=[
            passes("minutes in words", plan_with(f"Running {MINUTE_WORDS[late]} minutes late, sorry {{first}}!")),
            passes(
                "numbers in national format",
                [
                    c
                    if c.name != "messages.send"
                    else call("messages.send", to=national(c.arguments["to"]), body=c.arguments["body"])
                    for c in plan
                ],
            ),
            passes("opened the event too", [plan[0], call("calendar.get_event", event_id=ev["id"]), *plan[1:]]),
            fails("another lateness", plan_with(f"Hi {{first}}, I'll be {other} minutes late to {title}.")),
            passes("behind, not late", plan_with(f"Hi {{first}}, running {late} minutes behind for {title}.")),
            passes(
                "the arrival instead of the minutes",
                plan_with(f"Running late - I'll be there at {arrival} instead of {ev['start'][11:16]}."),
            ),
            passes(
                "the arrival time too", plan_with(f"Hi {{first}}, running {late} minutes late, see you at {arrival}.")
            ),
            fails(
                "a wrong arrival time",
                plan_with(f"Hi {{first}}, {late} minutes late, see you at {(start + dt.timedelta(hours=1)):%H:%M}."),
            ),
            fails(
                "lateness denied",
                plan_with(f"Hi {{first}}, I won't be {late} minutes late after all, I'll be on time."),
            ),
            fails(
                "another meeting time", plan_with(f"Hi {{first}}, I'll be {late} minutes late to the 11:30 {title}.")
            ),
            fails("a hedged lateness", plan_with(f"Hi {{first}}, I'll be {late} or {other} minutes late to {title}.")),
            fails("one attendee left out", [*plan[:-3], plan[-1]]),
            fails(f"texted {decoy['name']} instead of {people[0]['name']}", wrong_person),
        ],
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
    c, earlier = w.rng.sample(w.contacts, 2)
    calls = w.table("phone.calls")
    latest = min(int((w.now - dt.datetime.fromisoformat(x["time"])).total_seconds() // 60) for x in calls)
    _add_call(w, earlier["phone"], max(3, latest - 2) + 90)
    _add_call(w, c["phone"], max(1, latest - 5))
    # (the dictated text, the same in other words, a near miss)
    (body, same, contra), opener, verb = pick(
        w,
        [
            ("Sorry I missed your call, I will ring you back tonight.", "Hi! Sorry I missed your call - I'll ring you back tonight",
             "Sorry I missed your call, I will ring you back tomorrow."),
            ("Sorry, I was in a meeting. I'll call you back in an hour.", "Sorry, I was in a meeting. I will call you back in an hour!",
             "Sorry, I was in a meeting. I'll call you back in two hours."),
            ("Can't talk right now, I'm driving. I'll call you back after 6.", "Can't talk right now, I'm driving. I'll call you back after six.",
             "Can't talk right now, I'm driving. I'll call you back after 6:30."),
            ("Sorry I couldn't pick up! What was it about?", "Hi, sorry I could not pick up! What was it about?",
             "What was it about?"),
            ("I'm at the doctor's, I'll call you back at lunchtime.", "I am at the doctor's, I'll call you back at lunchtime.",
             "I'm at the doctor's, I'll call you back at lunchtime tomorrow."),
        ],
        ["I just missed a call.", "My phone rang a minute ago and I couldn't pick up."],
        ["Text whoever it was", "Send whoever called a text saying"],
    )  # fmt: skip
    plan = [
        call("phone.call_log", filter="missed", limit=5),
        call("messages.send", to=c["phone"], body=body),
        call("finish", answer=f"Texted {c['name']}."),
    ]
    # said whole, the agent's words around it allowed, and about today (no "tomorrow" added)
    crit = _sms_to(c, **dictated(body, w.now.date()))
    return Draft(
        goal=f'{opener} {verb}: "{body}"',
        criteria=[crit],
        milestones=[
            _any(
                "looked at the missed calls",
                behavior("required_call", "phone.call_log", arguments={"filter": "missed"}),
                behavior("required_call", "phone.call_log", arguments={"number": {"number": c["phone"]}}),
            ),
            _sms_to(c),
        ],
        plan=plan,
        probes=[
            passes("number in national format", replacing(plan, 1, call("messages.send", to=national(c["phone"]), body=body))),
            passes("read the thread first", [plan[0], call("messages.read_thread", number=c["phone"]), *plan[1:]]),
            *said_probes(plan, 1, c["phone"], same, contra),
            fails("texted the earlier missed caller", replacing(plan, 1, call("messages.send", to=earlier["phone"], body=body))),
        ],
    )  # fmt: skip


@template(
    "cross.save_unknown_number",
    apps=["messages", "contacts"],
    domain=Domain.CONTACTS,
    difficulty=2,
    capabilities=["lookup", "create", "send"],
    count=10,
)
def save_unknown_number(w: World) -> Draft:
    """Template ``cross.save_unknown_number``, e.g. task 0: "Someone texted me about the flat viewing. Save their number as a contact named Joe Davis and text them: \"The viewing is on Thursday at 6.\""."""
    topics = [
        ("the bike I'm selling", "the bike you're selling", "bike", "You can see the bike on Saturday morning."),
        ("the flat viewing", "the flat viewing", "viewing", "The viewing is on Thursday at 6."),
        ("the football team", "joining your football team", "football", "Training is every Tuesday at 7."),
        ("the choir rehearsal", "the choir rehearsal", "choir", "Rehearsal starts at 7:30 in the church hall."),
        ("the sofa I listed online", "the sofa you listed online", "sofa", "Yes, it's still available."),
        ("my lost cat poster", "your lost cat poster", "cat", "Thank you! Where did you see her?"),
    ]  # fmt: skip
    number = _unknown_number(w)
    name = w.new_name()
    first = name.split()[0]
    (topic, said, keyword, reply), (_, o_said, *_) = w.rng.sample(topics, 2)
    _add_message(w, number, f"Hi, this is {first}, about {said} - can we talk?", w.rng.randrange(5, 120))
    other_number = _unknown_number(w)
    _add_message(w, other_number, f"Hello! Message about {o_said}, please call back.", w.rng.randrange(5, 120))
    plan = [
        call("messages.search", query=keyword),
        call("contacts.create", name=name, phone=number),
        call("messages.send", to=number, body=reply),
        call("finish", answer=f"Saved {name} and replied."),
    ]
    saved = state("contacts.contacts", "created", name={"iequals": name}, phone={"number": number})
    texted = state("messages.messages", "created", number={"number": number}, direction="out", body=dictated(reply))
    return Draft(
        goal=f'Someone texted me about {topic}. Save their number as a contact named {name} and text them: "{reply}"',
        criteria=[saved, texted],
        milestones=[
            _any(
                "found the texter",
                behavior("required_call", "messages.search", arguments={"query": {"regex": f"{keyword}|{first.lower()}"}}),
                behavior("required_call", "messages.read_thread", arguments={"number": {"number": number}}),
            ),
            state("contacts.contacts", "created", phone={"number": number}),
            state("messages.messages", "created", number={"number": number}, direction="out"),
        ],
        plan=plan,
        probes=[
            passes("number in national format", replacing(plan, 1, call("contacts.create", name=name.lower(), phone=national(number)))),
            passes("read the thread first", [call("messages.read_thread", number=number), *plan[1:]]),
            fails("first name only", replacing(plan, 1, call("contacts.create", name=first, phone=number))),
            fails("saved the other unknown number", replacing(plan, 1, call("contacts.create", name=name, phone=other_number))),
            fails(
                "also saved the other unknown number",
                [*plan[:2], call("contacts.create", name="Unknown texter", phone=other_number), *plan[2:]],
            ),
        ],
    )  # fmt: skip


@template(
    "cross.event_from_email",
    apps=["mail", "calendar", "contacts", "messages"],
    domain=Domain.SCHEDULING,
    difficulty=3,
    capabilities=["lookup", "extract", "create", "send"],
    count=10,
)
def event_from_email(w: World) -> Draft:
    """Template ``cross.event_from_email``, e.g. task 0: "Alf emailed me about dinner. Put it in my calendar for two hours, with the place as the location, and let Alf know I'm coming."."""
    c = w.rng.choice([x for x in w.contacts if x["email"]])
    first = first_name(c)
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(2, 6))
    hour, minute = w.rng.choice([(19, 30), (20, 0), (18, 45)])
    place = w.rng.choice(["Cafe Luna", "Trattoria Roma", "The Green Table", "Bistro Nord"])
    (minutes, length), phrasing = pick(
        w, [(120, "for two hours"), (90, "for an hour and a half"), (150, "for two and a half hours"),
            (180, "for three hours"), (60, "for an hour")], [0, 1]
    )  # fmt: skip
    mail_id = w.next_id("mail.messages", "em_")
    w.table("mail.messages").append(
        {
            "id": mail_id,
            "folder": "inbox",
            "from": c["email"],
            "to": (w.user_email,),
            "subject": "Dinner plans",
            "body": f"Dinner at {place} on {day.strftime('%A')} {day.day} {day.strftime('%B')} at {hour:02d}:{minute:02d}?",
            "time": w.ts(30),
            "read": False,
        }
    )
    start = dt.datetime.combine(day, dt.time(hour, minute))
    end = start + dt.timedelta(minutes=minutes)
    s, e = start.isoformat(timespec="minutes"), end.isoformat(timespec="minutes")
    goal = (
        f"{first} emailed me about dinner. Put it in my calendar {length}, with the place as the location, "
        f"and let {first} know I'm coming."
        if phrasing == 0
        else f"I got an email from {first} inviting me to dinner. Tell {first} I'll be there and add it to my "
        f"calendar {length}, with the restaurant as the location."
    )
    # a title that says what it is: the dinner, the place or the host
    title = {"any": [{"icontains": "dinner"}, {"icontains": "supper"}, {"icontains": place}, {"icontains": first}]}
    event = state("calendar.events", "created", title=title, start=s, end=e, location={"iequals": place})
    # a yes, no refusal, and no other day or time
    told = _tell(
        c,
        "told the host",
        regex=RSVP_YES,
        **{"not": {"regex": RSVP_NO}},
        consistent={"date": day.isoformat(), "time": f"{hour:02d}:{minute:02d}"},
    )
    yes = "Sounds great, see you there!"
    plan = [
        call("mail.search", query="dinner"),
        call("calendar.create_event", title=f"Dinner with {first}", start=s, end=e, location=place),
        call("mail.reply", message_id=mail_id, body=yes),
        call("finish", answer="Added the dinner and replied."),
    ]
    one_hour = (start + dt.timedelta(minutes=60 if minutes != 60 else 120)).isoformat(timespec="minutes")
    morning = start.replace(hour=hour - 12).isoformat(timespec="minutes")
    return Draft(
        goal=goal,
        criteria=[event, told],
        milestones=[
            _any(
                f"found mail {mail_id}",
                behavior("required_call", "mail.search", arguments={"query": {"regex": f"dinner|{first.lower()}|{re.escape(c['email'])}"}}),
                behavior("required_call", "mail.read", arguments={"message_id": mail_id}),
            ),
            state("calendar.events", "created", start=s),
            _tell(c, "replied to the host"),
        ],
        plan=plan,
        perturb_exempt=["0.query", "1.title", "2.body", "3.answer"],
        probes=[
            passes("can't wait", replacing(plan, 2, call("mail.reply", message_id=mail_id, body="Sounds great, can't wait!"))),
            passes("not a problem", replacing(plan, 2, call("mail.reply", message_id=mail_id, body="Count me in - not a problem at all, see you then!"))),
            fails("declined", replacing(plan, 2, call("mail.reply", message_id=mail_id, body="Sorry, I'll have to pass this time."))),
            fails("busy", replacing(plan, 2, call("mail.reply", message_id=mail_id, body="Thanks for the invite, but I'm busy that evening."))),
            fails("another day", replacing(plan, 2, call("mail.reply", message_id=mail_id, body=f"Great, see you on {(day + dt.timedelta(days=1)).strftime('%A')}!"))),
            passes("titled by the place", replacing(plan, 1, call("calendar.create_event", title=f"Supper at {place}", start=s, end=e, location=place))),
            passes("told by text", [*plan[:2], *_send(c, f"Hi {first}, I'm in for dinner!"), plan[-1]]),
            passes(
                "a new e-mail instead of a reply",
                replacing(plan, 2, call("mail.send", to=[c["email"]], subject="Re: Dinner plans", body=yes)),
            ),
            passes(
                "another title",
                replacing(plan, 1, call("calendar.create_event", title=f"Dinner at {place}", start=s, end=e, location=place)),
            ),
            fails(
                "the wrong length",
                replacing(plan, 1, call("calendar.create_event", title="Dinner", start=s, end=one_hour, location=place)),
            ),
            fails(
                "the morning instead of the evening",
                replacing(plan, 1, call("calendar.create_event", title="Dinner", start=morning,
                                        end=(dt.datetime.fromisoformat(morning) + (end - start)).isoformat(timespec="minutes"),
                                        location=place)),
            ),
            fails("a reply that declines", replacing(plan, 2, call("mail.reply", message_id=mail_id, body="Sorry, I can't make it."))),
            fails("a stray second event", [*plan[:2], plan[1], *plan[2:]]),
        ],
    )  # fmt: skip


@template(
    "cross.note_contact_number",
    apps=["contacts", "notes"],
    domain=Domain.NOTES,
    capabilities=["lookup", "create"],
    count=10,
)
def note_contact_number(w: World) -> Draft:
    """Template ``cross.note_contact_number``, e.g. task 0: "Make a note titled \"Numbers\" with Eric's phone number in it."."""
    (c,) = w.pick("contacts.contacts")
    decoy = namesake(w, c)
    title, phrasing = pick(
        w, ["Numbers", "Emergency contacts", "For the babysitter", "Trip contacts", "Important numbers"], [0, 1]
    )
    by_relation = bool(c["relation"]) and w.rng.random() < 0.5
    whose = f"my {c['relation']}'s" if by_relation else f"{first_name(c)}'s"
    goal = (
        f'Make a note titled "{title}" with {whose} phone number in it.'
        if phrasing == 0
        else f'Put {whose} number in a new note called "{title}".'
    )
    query = c["relation"] if by_relation else first_name(c)
    plan = [
        call("contacts.search", query=query),
        call("notes.create", title=title, body=f"{c['name']}: {c['phone']}"),
        call("finish", answer="Noted."),
    ]
    return Draft(
        goal=goal,
        # the number in any format, and no other (not the namesake's beside it)
        criteria=[state("notes.notes", "created", title={"iequals": title}, body={"phones": [c["phone"]]})],
        milestones=[_lookup(c, c["relation"] or ""), state("notes.notes", "created", title={"iequals": title})],
        plan=plan,
        probes=[
            passes("number in national format", replacing(plan, 1, call("notes.create", title=title, body=national(c["phone"])))),
            passes("opened the contact too", [plan[0], call("contacts.get", contact_id=c["id"]), *plan[1:]]),
            fails(f"{decoy['name']}'s number", replacing(plan, 1, call("notes.create", title=title, body=f"{decoy['name']}: {decoy['phone']}"))),
            fails("a digit wrong", replacing(plan, 1, call("notes.create", title=title, body=c["phone"][:-1] + ("1" if c["phone"][-1] != "1" else "2")))),
            fails("a stray second note", [*plan[:2], call("notes.create", title="Numbers 2", body=c["phone"]), plan[-1]]),
            fails("the namesake's number beside", replacing(plan, 1, call("notes.create", title=title,
                  body=f"{c['name']}: {c['phone']}, or {decoy['phone']}"))),
            fails("another area", replacing(plan, 1, call("notes.create", title=title, body=_other_area(c["phone"])))),
            passes("spaced out with a label", replacing(plan, 1, call("notes.create", title=title,
                   body="mobile: " + " ".join(re.findall(r"\+?\d{1,3}", c["phone"]))))),
        ],
    )  # fmt: skip


def _other_area(phone: str) -> str:
    """``phone`` (international form) with its national number's first digit changed: the same
    last nine digits where the national number is longer (a US area code, a Japanese 080/090)."""
    i = len(phone) - 10 if len(phone) - 10 >= 3 else len(phone) - 9
    return phone[:i] + ("9" if phone[i] != "9" else "8") + phone[i + 1 :]


@template(
    "cross.sms_event_location",
    apps=["calendar", "contacts", "messages"],
    domain=Domain.COMMUNICATION,
    difficulty=2,
    capabilities=["lookup", "send"],
    count=10,
)
def sms_event_location(w: World) -> Draft:
    """Template ``cross.sms_event_location``, e.g. task 0: "Text Gotthold the address of my pottery class on Wednesday 11 November."."""
    c1, c2 = w.rng.sample(w.contacts, 2)
    place = w.rng.choice(["Kastanienallee 12", "Harbour Hall", "Studio 9", "North Park gate"])
    other_place = w.rng.choice(["Lindenstrasse 3", "Old Mill", "Pier 7"])
    title = w.rng.choice(["Birthday party", "Pottery class", "Climbing session", "Film night", "Quiz night"])
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 5))
    ev = _add_event(w, day, 18, title, (c2["name"],), place)
    _add_event(w, day + dt.timedelta(days=7), 18, title, (), other_place)
    phrasing = pick(w, [0, 1])[0]
    when = _day_words(day, w.now.date())
    when = when if when.startswith(("today", "tomorrow")) else f"on {when}"
    goal = (
        f"Text {first_name(c1)} the address of my {title.lower()} {when}."
        if phrasing == 0
        else f"Where is my {title.lower()} {when}? Send {first_name(c1)} the address by text."
    )
    body = f"The {title.lower()} on {day.strftime('%A')} is at {place}."
    plan = [
        call("calendar.search_events", query=title),
        *_send(c1, body),
        call("finish", answer="Sent."),
    ]
    return Draft(
        goal=goal,
        criteria=[_sms_to(c1, says=place)],
        milestones=[_found_event(ev), _lookup(c1), _sms_to(c1)],
        plan=plan,
        probes=[
            passes("number in national format", replacing(plan, 2, call("messages.send", to=national(c1["phone"]), body=body))),
            passes("opened the event too", [plan[0], call("calendar.get_event", event_id=ev["id"]), *plan[1:]]),
            fails(f"texted the attendee {c2['name']}", replacing(plan, 2, call("messages.send", to=c2["phone"], body=body))),
            fails("the next week's address", replacing(plan, 2, call("messages.send", to=c1["phone"], body=f"It is at {other_place}."))),
        ],
    )  # fmt: skip


@template(
    "cross.alarm_before_first_event",
    apps=["calendar", "clock"],
    domain=Domain.TIME,
    difficulty=2,
    capabilities=["lookup", "arithmetic", "create"],
    count=10,
)
def alarm_before_first_event(w: World) -> Draft:
    """Template ``cross.alarm_before_first_event``, e.g. task 0: "Set an alarm 30 minutes before my first event tomorrow."."""
    day = w.now.date() + dt.timedelta(days=1)
    events = [e for e in w.table("calendar.events") if e["start"][:10] == day.isoformat() and not e["all_day"]]
    if not events:
        events = [_add_event(w, day, 9, "Swimming lesson", (), "City pool")]
    if len(events) < 2:
        events.append(_add_event(w, day, 15, "Haircut", (), "Main Street 5"))
    first, second = sorted(events, key=lambda e: e["start"])[:2]
    (lead, words), phrasing = pick(
        w, [(30, "30 minutes"), (45, "45 minutes"), (60, "an hour"), (90, "an hour and a half"), (20, "20 minutes")], [0, 1]
    )  # fmt: skip
    start = dt.datetime.fromisoformat(first["start"])
    ring = (start - dt.timedelta(minutes=lead)).strftime("%H:%M")
    late = (start + dt.timedelta(minutes=lead)).strftime("%H:%M")
    ring2 = (dt.datetime.fromisoformat(second["start"]) - dt.timedelta(minutes=lead)).strftime("%H:%M")
    goal = (
        f"Set an alarm {words} before my first event tomorrow."
        if phrasing == 0
        else f"Wake me up {words} before whatever is first in my calendar tomorrow."
    )
    plan = [
        call("calendar.list_events", date=day.isoformat()),
        call("clock.create_alarm", time=ring, label=first["title"]),
        call("finish", answer=f"Alarm at {ring}."),
    ]
    return Draft(
        goal=goal,
        criteria=[
            state("clock.alarms", "created", time=ring, enabled=True, days={"len": 0}),
            answer_if_said("time", ring, also=[start.strftime("%H:%M")]),  # the event's start beside it
        ],
        milestones=[_found_event(first), state("clock.alarms", "created", time=ring)],
        plan=plan,
        perturb_exempt=["1.label", "2.answer"],
        probes=[
            passes("no label", replacing(plan, 1, call("clock.create_alarm", time=ring))),
            fails("another time told", finishing(plan, f"Alarm at {(start - dt.timedelta(minutes=lead + 60)):%H:%M}.")),
            passes("the event's time beside", finishing(plan, f"Alarm set for {ring}, before {first['title']} at {start:%H:%M}.")),
            passes("listed two days", replacing(plan, 0, call("calendar.list_events", date=day.isoformat(), days=2))),
            fails("before the second event", replacing(plan, 1, call("clock.create_alarm", time=ring2))),
            fails("after the event instead of before", replacing(plan, 1, call("clock.create_alarm", time=late))),
            fails("repeats every day", replacing(plan, 1, call("clock.create_alarm", time=ring, days=["mon", "tue", "wed", "thu", "fri", "sat", "sun"]))),
            fails("a stray second alarm", [*plan[:2], call("clock.create_alarm", time="23:00"), plan[-1]]),
        ],
    )  # fmt: skip


MEETINGS = ["Budget review", "Launch retro", "Partner workshop", "Q3 planning", "Design critique"]


@template(
    "cross.email_attendees",
    apps=["calendar", "contacts", "mail"],
    domain=Domain.EMAIL,
    difficulty=3,
    capabilities=["lookup", "multi-entity", "send"],
    count=10,
)
def email_attendees(w: World) -> Draft:
    """Template ``cross.email_attendees``, e.g. task 0: "Email everyone invited to the \"Budget review\" meeting, subject \"Agenda\", with a short agenda."."""
    with_email = [c for c in w.contacts if c["email"]]
    people = w.rng.sample(with_email, 2)
    decoy = namesake(w, people[1])
    title, subject, phrasing = pick(
        w,
        MEETINGS,
        ["Agenda", "Plan for the meeting"],
        [0, 1],
    )
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 4))
    ev = _add_event(w, day, 11, title, tuple(sorted(p["name"] for p in people)), "Room 1.10")
    goal = (
        f'Email everyone invited to the "{title}" meeting, subject "{subject}", with a short agenda.'
        if phrasing == 0
        else f'Send the people coming to "{title}" a short agenda by email, with the subject "{subject}".'
    )
    body = f"Agenda for {title}: goals, numbers, next steps."
    plan = [call("calendar.search_events", query=title)]
    plan += [call("contacts.search", query=first_name(p)) for p in people]
    plan += [
        call("mail.send", to=[p["email"] for p in people], subject=subject, body=body),
        call("finish", answer="Emailed."),
    ]
    n = len(plan)
    ids = [p["id"] for p in people]
    # an agenda: a few words at least, and not about another meeting
    agenda = {"regex": r"(?s)(?:\b\w+\b\W*){4,}", "not": {"any": [{"says": t} for t in MEETINGS if t != title]}}
    together = state(
        "mail.messages", "created", folder="sent", subject={"iequals": subject}, to={"people": ids}, body=agenda
    )
    apart = CompositeCriterion(
        kind="all_of",
        criteria=[
            named(state("mail.messages", "created", folder="sent", subject={"iequals": subject}, to={"people": [i]}, body=agenda), f"to {i}")
            for i in ids
        ],
    )  # fmt: skip
    return Draft(
        goal=goal,
        criteria=[CompositeCriterion(kind="any_of", id="emailed the attendees", criteria=[together, apart])],
        milestones=[_found_event(ev), *(_lookup(p) for p in people), *(_mail_to(p) for p in people)],
        plan=plan,
        perturb_exempt=["0.query", "1.query", "2.query", f"{n - 2}.body", f"{n - 1}.answer"],
        probes=[
            passes("one email each", [*plan[:-2], *(call("mail.send", to=[p["email"]], subject=subject, body=body) for p in people), plan[-1]]),
            passes("opened the event too", [plan[0], call("calendar.get_event", event_id=ev["id"]), *plan[1:]]),
            fails("one attendee left out", replacing(plan, -2, call("mail.send", to=[people[0]["email"]], subject=subject, body=body))),
            fails(f"{decoy['name']} instead of {people[1]['name']}", replacing(plan, -2, call("mail.send", to=[people[0]["email"], decoy["email"]], subject=subject, body=body))),
            fails("another subject", replacing(plan, -2, call("mail.send", to=[p["email"] for p in people], subject="Hello", body=body))),
            fails("no agenda", replacing(plan, -2, call("mail.send", to=[p["email"] for p in people], subject=subject, body="Hi"))),
            fails("another meeting's agenda", replacing(plan, -2, call("mail.send", to=[p["email"] for p in people], subject=subject,
                  body=f"Agenda for {next(t for t in MEETINGS if t != title)}: goals, numbers, next steps."))),
        ],
    )  # fmt: skip


@template(
    "cross.call_with_permission",
    apps=["contacts", "phone"],
    domain=Domain.CALLS,
    difficulty=2,
    capabilities=["lookup", "permission", "call"],
    count=10,
)
def call_with_permission(w: World) -> Draft:
    """Template ``cross.call_with_permission``, e.g. task 0: "Call my landlord."."""
    c, other = w.rng.sample([x for x in w.contacts if x["relation"]], 2)
    decoy = namesake(w, c)
    w.permissions = {"phone": {CALL_PHONE: False}}
    (phrase,) = pick(w, ["Call my {r}.", "Please ring my {r}.", "Get my {r} on the phone.", "Can you phone my {r}?", "I need to talk to my {r}, call them please."])  # fmt: skip
    plan = [
        call("contacts.search", query=c["relation"]),
        call("system.request_permission", app="phone", permission=CALL_PHONE),
        call("phone.call", number=c["phone"]),
        call("finish", answer=f"Calling {c['name']}."),
    ]
    return Draft(
        goal=phrase.format(r=c["relation"]),
        criteria=[state("phone.calls", "created", number={"person": c["id"]}, direction="out")],
        milestones=[
            _lookup(c, c["relation"]),
            behavior("required_call", "system.request_permission", arguments={"permission": CALL_PHONE}),
        ],
        plan=plan,
        perturb_exempt=["0.query", "1.app", "1.permission", "3.answer"],
        probes=[
            passes("number in national format", replacing(plan, 2, call("phone.call", number=national(c["phone"])))),
            passes("checked the permission first", [plan[0], call("system.check_permission", app="phone", permission=CALL_PHONE), *plan[1:]]),
            fails(f"called my {other['relation']}", replacing(plan, 2, call("phone.call", number=other["phone"]))),
            fails(f"called {decoy['name']}", replacing(plan, 2, call("phone.call", number=decoy["phone"]))),
        ],
    )  # fmt: skip


@template(
    "cross.share_note_sms",
    apps=["notes", "contacts", "messages"],
    domain=Domain.COMMUNICATION,
    difficulty=2,
    capabilities=["lookup", "send"],
    count=10,
)
def share_note_sms(w: World) -> Draft:
    """Template ``cross.share_note_sms``, e.g. task 0: "Text Jason what is in my \"Meeting notes\" note."."""
    note, other_note = w.rng.sample(w.table("notes.notes"), 2)
    (c,) = w.pick("contacts.contacts")
    decoy = namesake(w, c)
    lines = note["body"].splitlines()
    phrasing = pick(w, [0, 1])[0]
    goal = (
        f'Text {first_name(c)} what is in my "{note["title"]}" note.'
        if phrasing == 0
        else f'Send {first_name(c)} my "{note["title"]}" note as a text message.'
    )
    body = note["body"].replace("\n", ", ")
    # the other notes stay private: none of their items (lines or comma-separated entries of four
    # characters or more, not in this note: "passport" from the packing list)
    mine = f"{note['title']}\n{note['body']}".lower()
    private = sorted(
        {x.strip() for n in w.table("notes.notes") if n is not note for x in re.split(r"[\n,]", str(n["body"] or ""))
         if len(x.strip()) >= 4 and x.strip().lower() not in mine}
    )  # fmt: skip
    plan = [call("notes.search", query=note["title"]), *_send(c, body), call("finish", answer="Sent.")]
    probes = [
        passes("one line each", replacing(plan, 2, call("messages.send", to=c["phone"], body=f"{note['title']}:\n{note['body']}"))),
        passes("number in national format", replacing(plan, 2, call("messages.send", to=national(c["phone"]), body=body))),
        fails("another note", replacing(plan, 2, call("messages.send", to=c["phone"], body=other_note["body"].replace("\n", ", ")))),
        fails(f"texted {decoy['name']}", replacing(plan, 2, call("messages.send", to=decoy["phone"], body=body))),
    ]  # fmt: skip
    if private:
        probes.append(
            fails(
                "another note's line too",
                replacing(plan, 2, call("messages.send", to=c["phone"], body=f"{body} | also: {private[0]}")),
            )
        )
    if len(lines) > 1:
        probes.append(
            fails("only the first line", replacing(plan, 2, call("messages.send", to=c["phone"], body=lines[0])))
        )
    return Draft(
        goal=goal,
        criteria=[
            _sms_to(c, **_all_in(lines), **({"not": {"any": [{"says": x} for x in private]}} if private else {}))
        ],
        milestones=[_found_note(note), _lookup(c), _sms_to(c)],
        plan=plan,
        probes=probes,
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
    friend = w.rng.choice(w.contacts)
    _add_call(w, friend["phone"], 25)
    for ago in (15, 40):
        _add_call(w, number, ago)
    (topic, texts_about), phrasing = pick(
        w,
        [
            ("a prize", ("You won a prize! Reply YES", "Last chance to claim your prize")),
            ("a parcel fee", ("Your parcel is on hold, pay the 1.99 fee here", "Final notice: parcel fee unpaid")),
            ("a loan", ("Pre-approved loan waiting for you!", "Your loan offer expires today")),
            ("my car warranty", ("Your car warranty is about to expire", "Last call to renew your car warranty")),
            ("a crypto deal", ("Double your crypto in 24h", "Crypto deal closing tonight")),
        ],
        [0, 1],
    )
    texts = [_add_message(w, number, body, ago) for body, ago in zip(texts_about, (20, 10), strict=True)]
    goal = (
        f"An unknown number keeps calling and texting me about {topic}. Block it and delete its texts."
        if phrasing == 0
        else f"I keep getting calls and texts about {topic} from a number I don't know. Block that number and get rid of its messages."
    )  # fmt: skip
    # a word both texts share: one search finds the number and the texts' ids
    keyword = {"a prize": "prize", "a parcel fee": "parcel", "a loan": "loan", "my car warranty": "warranty"}.get(
        topic, "crypto"
    )
    plan = [
        call("messages.search", query=keyword),
        call("phone.block_number", number=number),
        *(call("messages.delete", message_id=m["id"]) for m in texts),
        call("finish", answer="Blocked and deleted."),
    ]
    return Draft(
        goal=goal,
        criteria=[
            state("phone.blocked", "created", number={"number": number}),
            state("messages.messages", "deleted", count=len(texts), number={"number": number}),
            state("messages.messages", "absent", number={"number": number}),
        ],
        milestones=[
            behavior("required_call", "phone.block_number", arguments={"number": {"number": number}}),
            state("messages.messages", "absent", number={"number": number}),
        ],
        plan=plan,
        probes=[
            passes("blocked in national format", replacing(plan, 1, call("phone.block_number", number=national(number)))),
            passes("went through the call log and the thread", [call("phone.call_log", filter="missed", limit=5), plan[1], call("messages.read_thread", number=number), *plan[2:]]),
            fails("blocked but kept the texts", [*plan[:2], plan[-1]]),
            fails("deleted only one text", [*plan[:-2], plan[-1]]),
            fails(f"blocked {friend['name']} who also called", replacing(plan, 1, call("phone.block_number", number=friend["phone"]))),
        ],
    )  # fmt: skip


@template(
    "cross.email_note",
    apps=["notes", "contacts", "mail"],
    domain=Domain.EMAIL,
    difficulty=2,
    capabilities=["lookup", "send"],
    count=10,
)
def email_note(w: World) -> Draft:
    """Template ``cross.email_note``, e.g. task 0: "Email my \"Wifi at the cabin\" note to Yosuke, with the note's title as the subject."."""
    note, other_note = w.rng.sample(w.table("notes.notes"), 2)
    c = w.rng.choice([x for x in w.contacts if x["email"]])
    decoy = namesake(w, c)
    phrasing = pick(w, [0, 1])[0]
    goal = (
        f'Email my "{note["title"]}" note to {first_name(c)}, with the note\'s title as the subject.'
        if phrasing == 0
        else f'Send {first_name(c)} an email with my "{note["title"]}" note in it; use the note\'s title as the subject.'
    )
    lines = note["body"].splitlines()
    plan = [
        call("notes.search", query=note["title"]),
        call("contacts.search", query=first_name(c)),
        call("mail.send", to=[c["email"]], subject=note["title"], body=note["body"]),
        call("finish", answer="Sent."),
    ]
    sent = _mail_to(c, subject={"iequals": note["title"]}, body=_all_in(lines))
    return Draft(
        goal=goal,
        criteria=[sent],
        milestones=[_found_note(note), _lookup(c), _mail_to(c)],
        plan=plan,
        probes=[
            passes("subject in other case, lines joined", replacing(plan, 2, call("mail.send", to=[c["email"]], subject=note["title"].upper(), body=", ".join(lines)))),
            passes("opened the note too", [plan[0], call("notes.get", note_id=note["id"]), *plan[1:]]),
            fails(f"sent to {decoy['name']}", replacing(plan, 2, call("mail.send", to=[decoy["email"]], subject=note["title"], body=note["body"]))),
            fails("another note", replacing(plan, 2, call("mail.send", to=[c["email"]], subject=note["title"], body=other_note["body"]))),
            fails("another subject", replacing(plan, 2, call("mail.send", to=[c["email"]], subject="Hi", body=note["body"]))),
            fails(f"{decoy['name']} copied in", replacing(plan, 2, call("mail.send", to=[c["email"], decoy["email"]], subject=note["title"], body=note["body"]))),
        ],
    )  # fmt: skip
