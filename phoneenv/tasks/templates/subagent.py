"""Sub-agent templates: work that splits naturally into parts a sub-agent can do.

Each task offers ``agent.delegate`` (its ``apps`` list ``agent``; see :mod:`phoneenv.frames`).
Goals say what the user wants, never how to work; the criteria check the end state *and* the
split of the work: ``delegated`` criteria require
finished sub-agent frames that used the delegated tools, and ``forbidden_call`` criteria scoped
to a frame depth forbid the delegating frame from doing that work itself. ``phoneenv tasks
validate`` proves each task (reference plan succeeds, empty plan fails, every perturbed plan
fails, and every plan with one delegation inlined into its parent fails).
"""

from __future__ import annotations

import calendar as _cal
import datetime as dt
import re
from typing import Any

from apps.clock.templates import spoken
from phoneenv.contract import CompositeCriterion, Domain, ToolCall
from phoneenv.frames import delegate_steps
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
    first_name,
    passes,
    replacing,
    state,
    template,
)
from phoneenv.tasks.world import World

AGENT_APP = "agent"
"""The pseudo-app that offers ``agent.delegate`` in a task's episodes."""


# -- shared helpers ---------------------------------------------------------------------------------


def _date_words(day: dt.date) -> str:
    """``Thursday 3 December``."""
    return f"{day.strftime('%A')} {day.day} {day.strftime('%B')}"


def _hhmm(hour: int, minute: int = 0) -> str:
    return f"{hour:02d}:{minute:02d}"


def _add_sms(w: World, number: str, body: str, minutes_ago: int) -> dict[str, Any]:
    """An incoming, unread text from ``number``."""
    msg = {
        "id": w.next_id("messages.messages", "m_"),
        "number": number,
        "direction": "in",
        "body": body,
        "time": w.ts(minutes_ago),
        "read": False,
    }
    w.table("messages.messages").append(msg)
    return msg


def _add_note(w: World, title: str, body: str, minutes_ago: int) -> dict[str, Any]:
    stamp = w.ts(minutes_ago)
    note = {
        "id": w.next_id("notes.notes", "n_"),
        "title": title,
        "body": body,
        "pinned": False,
        "created": stamp,
        "updated": stamp,
        "tags": (),
    }
    w.table("notes.notes").append(note)
    return note


def _busy(w: World, day: dt.date, start: str, end: str) -> bool:
    """Whether a timed event of the user's calendar overlaps [start, end) on ``day`` (HH:MM)."""
    lo, hi = f"{day.isoformat()}T{start}", f"{day.isoformat()}T{end}"
    return any(not e.get("all_day") and e["start"] < hi and lo < e["end"] for e in w.table("calendar.events"))


def _sms_to(c: dict[str, Any], **body: Any) -> Any:
    """A text to contact ``c`` (by identity: any format of their number) whose body matches."""
    return state("messages.messages", "created", number={"person": c["id"]}, direction="out", body=body)


def _spaced(phone: str) -> str:
    """``+4917012345678`` written as a person might type it: ``0049 170 1234 5678``."""
    digits = phone.lstrip("+")
    return "00" + " ".join(digits[i : i + 4] for i in range(0, len(digits), 4))


def _delegated(tool: str, **kw: Any) -> Any:
    return behavior("delegated", tool, id=f"delegated:{tool}" + (f"@{kw['depth']}" if "depth" in kw else ""), **kw)


def _not_itself(tool: str, depth: int = 0) -> Any:
    return behavior("forbidden_call", tool, depth=depth, id=f"forbidden@{depth}:{tool}")


def _walk(w: World, period: int, options: list[Any]) -> Any:
    """The option of this task: seeds are ``crc32(name) * 1000 + k``, so tasks that share
    ``k % period`` take different options while there are enough."""
    return options[(w.seed // period) % len(options)]


def _finish_exempt(plan: list[ToolCall]) -> list[str]:
    return [f"{len(plan) - 1}.answer"]


# -- templates ------------------------------------------------------------------------------------

MEETING_TITLES = ["Project kickoff", "Budget review", "Offsite planning", "Hiring debrief", "Design critique"]
AVAILABILITY_LINES = [
    "Hi! On {date} I'm free at {times}.",
    "For {date}: {times} works for me.",
    "{date} - I could do {times}.",
    "About {date}: I'm available at {times}, nothing else that day.",
]


def _times_words(hours: list[int]) -> str:
    parts = [_hhmm(h) for h in sorted(hours)]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


ACCEPTED = {
    "regex": r"\baccept|\b(?:we|i)(?:'ll| will|'d like to| would like to| want to| are happy to| am happy to)\s+"
    r"(?:take|go with|go ahead)\b|\blet's go ahead\b|\bgo ahead with\b|\byou(?:'ve| have)? got the job\b"
    r"|\bhappy to (?:take|go with)\b|\bplease (?:go ahead|proceed)\b|\bdeal\b",
    # a negation before the acceptance in its sentence ("we cannot accept", "isn't accepted"); one
    # elsewhere ("no rush if it's not fixed yet") is no refusal; nor is an acceptance of something
    # else ("we've accepted another offer", "a cheaper quote elsewhere")
    "not": {
        "regex": r"(?:\b(?:not|cannot|unable to|no longer)|n't)\b[^.!?]*\b(?:accept|take|go with|go ahead)"
        r"|\baccepted\s+(?:an?\s+)?(?:other|another|different|cheaper|better|lower)\b|\belsewhere\b"
        r"|\bdecline|\breject|\bturn(?:ed|ing)? (?:it |you )?down\b|\bno deal\b"
        # a question is no acceptance: "Should I accept your quote?"
        r"|\b(?:should|shall|can|could|may|do|would)\s+(?:i|we)\s+[^.!?]*\b(?:accept|take|go with|go ahead)\b[^.!?]*\?"
    },
}
"""A reply body that accepts an offer."""


@template(
    "subagent.meeting_from_availability",
    apps=["contacts", "messages", "calendar", AGENT_APP],
    domain=Domain.SCHEDULING,
    category="subagent",
    difficulty=4,
    capabilities=["delegate", "lookup", "multi-entity", "reasoning", "create"],
    count=18,
    max_steps=40,
)
def meeting_from_availability(w: World) -> Draft:
    """Template ``subagent.meeting_from_availability``, e.g. "Ana, Ben and Yara each texted me when
    they are free on Thursday 3 December. Put a one-hour \"Budget review\" in my calendar when
    all three of them and I are free, and invite them.": sub-agents read their messages, the
    planner books the hour all three and the user have free (in half the worlds a second common
    hour is taken in the user's calendar)."""
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(2, 6))
    people = w.rng.sample(w.contacts, 3)
    hours = list(range(9, 17))
    free = [h for h in hours if not _busy(w, day, _hhmm(h), _hhmm(h + 1))]
    common = w.rng.choice(free)
    commons = [common]
    blocked: int | None = None
    if w.rng.random() < 0.5:
        blocked = w.rng.choice([h for h in hours if h != common])
        commons.append(blocked)
        if not _busy(w, day, _hhmm(blocked), _hhmm(blocked + 1)):
            events = w.table("calendar.events")
            start = dt.datetime.combine(day, dt.time(blocked, 0))
            events.append(
                {
                    "id": w.next_id("calendar.events", "ev_"),
                    "title": w.rng.choice(["Physio appointment", "Car service", "School open day"]),
                    "start": start.isoformat(timespec="minutes"),
                    "end": (start + dt.timedelta(hours=1)).isoformat(timespec="minutes"),
                    "location": None,
                    "attendees": (),
                    "notes": None,
                    "all_day": False,
                }
            )
    rest = [h for h in hours if h not in commons]
    w.rng.shuffle(rest)
    title = w.rng.choice(MEETING_TITLES)
    plan: list[ToolCall] = []
    for i, p in enumerate(people):
        own = sorted([*commons, *rest[2 * i : 2 * i + w.rng.choice([1, 2])]])
        if w.rng.random() < 0.5:  # an older message about another day
            other = day + dt.timedelta(days=w.rng.choice([-1, 1, 2]))
            _add_sms(
                w,
                p["phone"],
                f"For {_date_words(other)} I could only do {_hhmm(common)}.",
                w.ago_within(w.rng, 700, 2000),
            )
        line = w.rng.choice(AVAILABILITY_LINES).format(date=_date_words(day), times=_times_words(own))
        _add_sms(w, p["phone"], line, w.ago_within(w.rng, 20, 600))
        plan += delegate_steps(
            f"Read {p['name']}'s text messages and tell me at which times they said they are free on {_date_words(day)}.",
            ["contacts.search", "messages.read_thread"],
            [call("contacts.search", query=p["name"]), call("messages.read_thread", number=p["phone"])],
            f"{first_name(p)} is free at {_times_words(own)} on {_date_words(day)}.",
        )
    start = f"{day.isoformat()}T{_hhmm(common)}"
    end = f"{day.isoformat()}T{_hhmm(common + 1)}"
    names = [p["name"] for p in people]
    plan += [
        call("calendar.free_slots", date=day.isoformat(), duration_minutes=60),
        call("calendar.create_event", title=title, start=start, end=end, attendees=names),
        call("finish", answer=f"Booked {title} at {_hhmm(common)} with {', '.join(names)}."),
    ]
    made = {"title": {"iequals": title}, "start": start, "end": end}
    firsts = [first_name(p) for p in people]
    ask = w.rng.choice(
        [
            f'Put a one-hour "{title}" in my calendar when all three of them and I are free, and invite them.',
            f'Find the hour when all three of them and I are free and book a one-hour "{title}" then, with them invited.',
            f'Schedule "{title}" for an hour when the three of them and I are all free, and invite them.',
        ]
    )
    wrong = blocked if blocked is not None else next(h for h in rest if h != common)
    book = len(plan) - 2
    made_args = {"title": title, "start": start, "end": end}
    emails = [p["email"] or p["phone"] for p in people]
    return Draft(
        goal=f"{firsts[0]}, {firsts[1]} and {firsts[2]} each texted me when they are free on {_date_words(day)}. {ask}",
        criteria=[
            state("calendar.events", "created", **made, attendees={"people": [p["id"] for p in people]}),
            _delegated("messages.*"),
            _not_itself("messages.*"),
            answer_if_said("time", _hhmm(common), also=[_hhmm(common + 1)]),  # the end may be said
        ],
        milestones=[
            _delegated("messages.*"),
            state("calendar.events", "created", title={"iequals": title}, start=start),
        ],
        plan=plan,
        perturb_exempt=_finish_exempt(plan),
        probes=[
            fails(
                "another time told",
                finishing(
                    plan,
                    f"Booked {title} at {_hhmm(next(h for h in (wrong, *rest) if h not in (common, common + 1)))}.",
                ),
            ),
            passes("start and end told", finishing(plan, f"Booked {title}, {_hhmm(common)} to {_hhmm(common + 1)}.")),
            passes(
                "attendees by e-mail or number",
                replacing(plan, book, call("calendar.create_event", **made_args, attendees=emails)),
            ),
            passes(
                "attendees by first name",
                replacing(plan, book, call("calendar.create_event", **made_args, attendees=firsts)),
            ),
            fails(
                "an hour one of them cannot do",
                replacing(
                    plan,
                    book,
                    call(
                        "calendar.create_event",
                        title=title,
                        start=f"{day.isoformat()}T{_hhmm(wrong)}",
                        end=f"{day.isoformat()}T{_hhmm(wrong + 1)}",
                        attendees=names,
                    ),
                ),
            ),
            fails(
                "one of them not invited",
                replacing(plan, book, call("calendar.create_event", **made_args, attendees=names[:2])),
            ),
        ],
    )


SERVICES = ["plumber", "electrician", "painter", "window cleaner", "gardener", "roofer"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


@template(
    "subagent.cheapest_quote",
    apps=["notes", "contacts", "messages", AGENT_APP],
    domain=Domain.COMMUNICATION,
    category="subagent",
    difficulty=3,
    capabilities=["delegate", "compare", "arithmetic", "send"],
    count=18,
    max_steps=30,
)
def cheapest_quote(w: World) -> Draft:
    """Template ``subagent.cheapest_quote``, e.g. "I've got three quotes for the plumber job in my
    notes. Text whoever is cheapest with VAT included: \"Your quote is accepted - please go
    ahead.\"": three quotes saved as notes (some without VAT); a sub-agent compares them, the
    planner texts the cheapest provider."""
    service = _walk(w, 1, SERVICES)
    people = w.rng.sample(w.contacts, 3)
    cheapest = w.rng.randrange(18, 60) * 10
    trap = w.rng.random() < 0.6  # a smaller number before VAT that is dearer after it
    lines = []
    for i in range(len(people)):  # amounts drawn at euro size, written in the world's money
        day = w.rng.choice(WEEKDAYS)
        if i == 0:
            lines.append(f"Price: {w.money(w.price(cheapest))} including VAT\nCan start: {day}")
        elif i == 1 and trap:
            lines.append(f"Price: {w.money(w.price(cheapest - 10))} plus 19% VAT\nCan start: {day}")
        else:
            dearer = w.price(cheapest + w.rng.randrange(2, 20) * 10)
            lines.append(f"Price: {w.money(dearer)} including VAT\nCan start: {day}")
    order = list(range(3))
    w.rng.shuffle(order)
    for k in order:
        _add_note(w, f"{service.capitalize()} quote - {people[k]['name']}", lines[k], w.ago_within(w.rng, 100, 5000))
    winner = people[0]
    body = _walk(
        w,
        len(SERVICES),
        [
            "Your quote is accepted - please go ahead.",
            "We accept your quote. When can you start?",
            "Good news: your quote is accepted.",
        ],
    )
    goal = w.rng.choice(
        [
            f"I have three quotes for the {service} job in my notes. Text the one with the lowest total price, "
            f'VAT included: "{body}"',
            f'I\'ve got three {service} quotes in my notes. Text whoever is cheapest once VAT is added: "{body}"',
        ]
    )
    plan = delegate_steps(
        f"Compare the three {service} quotes in my notes and tell me whose total price, VAT included, is lowest, and how much it is.",
        ["notes.search", "notes.get"],
        [call("notes.search", query=f"{service} quote")],
        f"{winner['name']}: {w.money(w.price(cheapest))} in total.",
    )
    plan.append(call("contacts.search", query=winner["name"]))
    accepted = ACCEPTED
    criteria = [_sms_to(winner, **accepted), _delegated("notes.*"), _not_itself("notes.*")]
    if confirm_variant(w, 0.3):
        goal += " Ask me before sending."
        ask_first(plan, criteria, "messages.send", f"Text {winner['name']} that the quote is accepted?")
    plan += [
        call("messages.send", to=winner["phone"], body=body),
        call("finish", answer=f"Accepted {winner['name']}'s quote."),
    ]
    loser = people[1]
    send = len(plan) - 2
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[_delegated("notes.*"), _sms_to(winner)],
        plan=plan,
        perturb_exempt=_finish_exempt(plan),
        probes=[
            passes(
                "number typed with spaces",
                replacing(plan, send, call("messages.send", to=_spaced(winner["phone"]), body=body)),
            ),
            passes(
                "in other words",
                replacing(
                    plan,
                    send,
                    call("messages.send", to=winner["phone"], body="Hi, I accept your quote, go ahead please."),
                ),
            ),
            fails(
                "the quote that only looks cheaper",
                replacing(plan, send, call("messages.send", to=loser["phone"], body=body)),
            ),
            fails(
                "a refusal that says accept",
                replacing(
                    plan, send, call("messages.send", to=winner["phone"], body="Sorry, I can't accept your quote.")
                ),
            ),
            *(
                fails(f"a refusal: {text}", replacing(plan, send, call("messages.send", to=winner["phone"], body=text)))
                for text in (
                    "Your quote isn't accepted.",
                    "Thanks, but we have accepted another offer.",
                    "Should I accept your quote?",
                )
            ),
            *(
                passes(
                    f"an acceptance without the word: {text}",
                    replacing(plan, send, call("messages.send", to=winner["phone"], body=text)),
                )
                for text in ("Yes, we'll take it. Please go ahead.", "We'd like to go ahead with your quote.")
            ),
            fails(
                "texts a second provider too",
                replacing(
                    plan,
                    send,
                    plan[send],
                    call("user.confirm", question=f"Text {loser['name']} too?"),
                    call("messages.send", to=loser["phone"], body=body),
                ),
            ),
        ],
    )


LIST_TITLES = ["Groceries", "Hardware store", "Pharmacy run", "Market on Saturday"]
LIST_ITEMS = [
    "oat milk", "coffee beans", "batteries", "light bulbs", "tomatoes", "basmati rice", "dish soap",
    "olive oil", "apples", "duct tape", "sunscreen", "plasters",
]  # fmt: skip


@template(
    "subagent.daily_brief",
    apps=["calendar", "notes", "contacts", "messages", AGENT_APP],
    domain=Domain.COMMUNICATION,
    category="subagent",
    difficulty=3,
    capabilities=["delegate", "lookup", "summarise", "send"],
    count=18,
    max_steps=30,
)
def daily_brief(w: World) -> Draft:
    """Template ``subagent.daily_brief``, e.g. "Text Ana what time my first event tomorrow starts
    and what's on my \"Groceries\" list.": one sub-agent reads tomorrow's calendar, another a
    list note; the planner texts a summary with both facts."""
    tomorrow = w.now.date() + dt.timedelta(days=1)
    events = [e for e in w.table("calendar.events") if e["start"][:10] == tomorrow.isoformat()]
    if not events:
        start = dt.datetime.combine(tomorrow, dt.time(w.rng.choice([8, 9, 10]), 30))
        ev = {
            "id": w.next_id("calendar.events", "ev_"),
            "title": w.rng.choice(["Team standup", "Physio", "School run"]),
            "start": start.isoformat(timespec="minutes"),
            "end": (start + dt.timedelta(minutes=30)).isoformat(timespec="minutes"),
            "location": None,
            "attendees": (),
            "notes": None,
            "all_day": False,
        }
        w.table("calendar.events").append(ev)
        events = [ev]
    first = min(events, key=lambda e: e["start"])
    at = first["start"][11:16]
    title = w.rng.choice(LIST_TITLES)
    items = w.rng.sample(LIST_ITEMS, 3)
    _add_note(w, title, "\n".join(items), w.ago_within(w.rng, 60, 3000))
    (partner,) = w.pick("contacts.contacts")
    body = f"Tomorrow my first event, {first['title']}, starts at {at}. On the {title} list: {', '.join(items)}."
    goal = w.rng.choice(
        [
            f'Text {first_name(partner)} what time my first event tomorrow starts and what is on my "{title}" list.',
            f'Let {first_name(partner)} know by text when my first thing tomorrow starts, and what\'s on my "{title}" list.',
        ]
    )
    plan = [
        *delegate_steps(
            f"What is my first event tomorrow ({_date_words(tomorrow)}), and at what time does it start?",
            ["calendar"],
            [call("calendar.list_events", date=tomorrow.isoformat())],
            f"{first['title']} at {at}.",
        ),
        *delegate_steps(
            f'What is on my "{title}" note? List every item.',
            ["notes"],
            [call("notes.search", query=title)],
            ", ".join(items),
        ),
        call("contacts.search", query=partner["name"]),
    ]
    criteria = [
        # the start; its end may be said beside it
        _sms_to(partner, states={"time": {"value": at, "context": [first["end"][11:16]]}}),
        *(_sms_to(partner, icontains=item) for item in items),
        _delegated("calendar.*"),
        _delegated("notes.*"),
        _not_itself("calendar.*"),
        _not_itself("notes.*"),
    ]
    if confirm_variant(w, 0.3):
        goal += " Check with me before you send it."
        ask_first(plan, criteria, "messages.send", f"Send the summary to {partner['name']}?")
    plan += [call("messages.send", to=partner["phone"], body=body), call("finish", answer="Sent the summary.")]
    send = len(plan) - 2
    (stranger,) = w.rng.sample([c for c in w.contacts if c is not partner], 1)
    other = f"{first['title']} starts at {at}. On the list: {'; '.join(reversed(items))}."
    later = (dt.datetime.fromisoformat(first["start"]) + dt.timedelta(hours=1)).strftime("%H:%M")
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[_delegated("calendar.*"), _delegated("notes.*"), _sms_to(partner)],
        plan=plan,
        perturb_exempt=_finish_exempt(plan),
        probes=[
            passes("in other words", replacing(plan, send, call("messages.send", to=partner["phone"], body=other))),
            passes(
                "the end time too",
                replacing(
                    plan,
                    send,
                    call(
                        "messages.send",
                        to=partner["phone"],
                        body=body.replace(f"starts at {at}", f"starts at {at} and ends at {first['end'][11:16]}"),
                    ),
                ),
            ),
            fails(
                "only the end time",
                replacing(
                    plan,
                    send,
                    call(
                        "messages.send",
                        to=partner["phone"],
                        body=body.replace(f"starts at {at}", f"ends at {first['end'][11:16]}"),
                    ),
                ),
            ),
            passes(
                "the time on the 12-hour clock",
                replacing(
                    plan,
                    send,
                    call("messages.send", to=partner["phone"], body=body.replace(f"at {at}", f"at {spoken(at)}")),
                ),
            ),
            fails(
                "another time beside the right one",
                replacing(
                    plan,
                    send,
                    call("messages.send", to=partner["phone"], body=body.replace(f"at {at}", f"at {at} (or {later})")),
                ),
            ),
            passes(
                "number typed with spaces",
                replacing(plan, send, call("messages.send", to=_spaced(partner["phone"]), body=body)),
            ),
            fails(
                "an item left out",
                replacing(plan, send, call("messages.send", to=partner["phone"], body=body.replace(items[-1], "..."))),
            ),
            fails(
                "sent to someone else", replacing(plan, send, call("messages.send", to=stranger["phone"], body=body))
            ),
        ],
    )


OFFER_ITEMS = ["office chairs", "printer paper", "team T-shirts", "conference catering", "standing desks"]


@template(
    "subagent.best_offer_reply",
    apps=["mail", AGENT_APP],
    domain=Domain.EMAIL,
    category="subagent",
    difficulty=3,
    capabilities=["delegate", "compare", "reply"],
    count=18,
    max_steps=25,
)
def best_offer_reply(w: World) -> Draft:
    """Template ``subagent.best_offer_reply``, e.g. "Three suppliers emailed me offers for the
    office chairs. Reply to the cheapest one that delivers within 7 days and accept it.": a
    sub-agent finds the cheapest offer that delivers within a week (a cheaper one takes longer),
    the planner replies accepting it."""
    item = _walk(w, 1, OFFER_ITEMS)
    people = w.rng.sample([c for c in w.contacts if c["email"]], 3)
    senders = [p["email"] for p in people]
    best = w.rng.randrange(30, 90) * 10
    slow = w.rng.random() < 0.6  # a cheaper offer that delivers too late
    offers = [(best, w.rng.randrange(2, 7))]
    offers.append((best - w.rng.randrange(2, 8) * 10, w.rng.randrange(10, 21)) if slow else (best + 70, 3))
    offers.append((best + w.rng.randrange(1, 12) * 10, w.rng.randrange(2, 8)))
    order = list(range(3))
    w.rng.shuffle(order)
    ids: dict[int, str] = {}
    for k in order:
        price, days = offers[k]
        mid = w.next_id("mail.messages", "em_")
        ids[k] = mid
        w.table("mail.messages").append(
            {
                "id": mid,
                "folder": "inbox",
                "from": senders[k],
                "to": (w.user_email,),
                "subject": f"Offer: {item}",
                "body": f"Hello, we can supply the {item} for {w.money(w.price(price))} in total, delivered "
                f"within {days} days.",
                "time": w.ts(w.ago_within(w.rng, 60, 3000)),
                "read": False,
            }
        )
    text = "Thank you - we accept your offer. Please go ahead."
    # The best offer delivers within 6 days; a cheaper slow one takes 10 days or more.
    within = 7 if slow else w.rng.choice([7, 10])
    goal = _walk(
        w,
        len(OFFER_ITEMS),
        [
            f"Which of the {item} offers in my mail is cheapest and delivered within {within} days? Reply to it "
            "accepting the offer.",
            f"Three suppliers emailed me offers for the {item}. Reply to the cheapest one that delivers within "
            f"{within} days and accept it.",
            f"I got three offers for the {item} by email. Accept the cheapest one that can deliver within "
            f"{within} days - reply to it.",
            f"Accept the cheapest offer for the {item} in my mail that delivers within {within} days, by replying to it.",
        ],
    )
    plan = delegate_steps(
        f"Find the offers for the {item} in my mail. Which is the cheapest that delivers within 7 days? "
        "Tell me the sender, the price and the message id.",
        ["mail.search", "mail.read"],
        [call("mail.search", query=item)],
        f"{senders[0]}, {w.money(w.price(best))}, message {ids[0]}.",
    )
    # an acceptance naming no other offer's price; an answer naming no other sender or price
    accepted = {**ACCEPTED, "consistent": {"money": w.price(best)}}
    others = "|".join(re.escape(x) for x in senders[1:])
    criteria = [
        state("mail.messages", "created", folder="sent", to={"has": senders[0]}, body=accepted),
        CompositeCriterion(kind="not", id="no_other_sender", criteria=[answer(id="other_sender", pattern=others)]),
        answer_if_said("money", w.price(best), currency=w.currency),
        _delegated("mail.*"),
        _not_itself("mail.search"),
        _not_itself("mail.read"),
        _not_itself("mail.list_*"),
    ]
    if confirm_variant(w, 0.3):
        goal += " Ask me before replying."
        ask_first(plan, criteria, "mail.reply", f"Accept the offer from {senders[0]}?")
    plan += [call("mail.reply", message_id=ids[0], body=text), call("finish", answer=f"Accepted {senders[0]}'s offer.")]
    send = len(plan) - 2
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[_delegated("mail.*"), behavior("required_call", "mail.reply", arguments={"message_id": ids[0]})],
        plan=plan,
        perturb_exempt=_finish_exempt(plan),
        probes=[
            passes(
                "a new mail instead of a reply",
                replacing(plan, send, call("mail.send", to=[senders[0]], subject=f"Re: Offer: {item}", body=text)),
            ),
            passes(
                "in other words",
                replacing(plan, send, call("mail.reply", message_id=ids[0], body="Great, we accept. Please deliver.")),
            ),
            fails(
                "accepts the dearer or slower one",
                replacing(plan, send, call("mail.reply", message_id=ids[1], body=text)),
            ),
            fails(
                "accepted at another offer's price",
                replacing(
                    plan,
                    send,
                    call(
                        "mail.reply",
                        message_id=ids[0],
                        body=f"We accept your offer of {w.money(w.price(offers[2][0]))}.",
                    ),
                ),
            ),
            fails("the wrong sender told", finishing(plan, f"Accepted {senders[1]}'s offer.")),
            fails(
                "a refusal that says accept",
                replacing(
                    plan, send, call("mail.reply", message_id=ids[0], body="Sorry, we cannot accept this offer.")
                ),
            ),
            passes(
                "accepted, with a question after",
                replacing(
                    plan,
                    send,
                    call(
                        "mail.reply",
                        message_id=ids[0],
                        body="Thank you - we accept your offer. When will it arrive? No rush if it's not fixed yet.",
                    ),
                ),
            ),
            fails(
                "will not be accepting",
                replacing(
                    plan, send, call("mail.reply", message_id=ids[0], body="We will not be accepting it, sorry.")
                ),
            ),
        ],
    )


@template(
    "subagent.birthday_note",
    apps=["contacts", "notes", AGENT_APP],
    domain=Domain.NOTES,
    category="subagent",
    difficulty=2,
    capabilities=["delegate", "filter", "create"],
    count=18,
    max_steps=20,
)
def birthday_note(w: World) -> Draft:
    """Template ``subagent.birthday_note``, e.g. "Make a note titled \"March birthdays\" listing
    which of my contacts have their birthday in March.": a sub-agent finds the contacts born in
    that month, the planner writes them into a note; nobody else may be listed."""
    month = _walk(w, 1, list(range(1, 13)))
    name = _cal.month_name[month]
    chosen = w.rng.sample(w.contacts, w.rng.choice([2, 3]))
    for c in w.contacts:
        if c in chosen:
            c["birthday"] = f"{month:02d}-{w.rng.randrange(1, 29):02d}"
        elif c["birthday"] is not None and int(c["birthday"][:2]) == month:
            c["birthday"] = f"{month % 12 + 1:02d}{c['birthday'][2:]}"
    chosen.sort(key=lambda c: c["birthday"])
    title = f"{name} birthdays"
    lines = [f"{c['name']} - {int(c['birthday'][3:])} {name}" for c in chosen]
    plan = [
        *delegate_steps(
            f"Which of my contacts have their birthday in {name}? Give their names and dates.",
            ["contacts.list", "contacts.get"],
            [call("contacts.list", limit=50)],
            "; ".join(lines),
        ),
        call("notes.create", title=title, body="\n".join(lines)),
        call("finish", answer=f"Noted {len(chosen)} birthdays."),
    ]
    goal = _walk(
        w,
        12,
        [
            f'Make a note titled "{title}" listing which of my contacts have their birthday in {name}.',
            f'Whose birthdays among my contacts fall in {name}? Put them in a note called "{title}".',
            f'Write down in a new note, "{title}", everyone in my contacts with a birthday in {name}.',
        ],
    )
    others = [c["name"] for c in w.contacts if c not in chosen]
    # nobody else, and no date of another month ("12 October" in a September note)
    other_months = [_cal.month_name[m] for m in range(1, 13) if m != month]
    wrong = "|".join([*(re.escape(n) for n in others), *(rf"\b{m}\b" for m in other_months)])
    nobody_else = {"not": {"regex": wrong}}
    extra = next(c for c in w.contacts if c not in chosen)
    note = len(plan) - 2
    return Draft(
        goal=goal,
        criteria=[
            *(state("notes.notes", "created", title={"iequals": title}, body={"icontains": c["name"]}) for c in chosen),
            state("notes.notes", "present", title={"iequals": title}, body=nobody_else),
            _delegated("contacts.*"),
            _not_itself("contacts.*"),
        ],
        milestones=[
            _delegated("contacts.*"),
            state("notes.notes", "created", title={"iequals": title}, body={"icontains": chosen[0]["name"]}),
        ],
        plan=plan,
        perturb_exempt=_finish_exempt(plan),
        probes=[
            passes(
                "names only, other order",
                replacing(
                    plan, note, call("notes.create", title=title, body=", ".join(c["name"] for c in reversed(chosen)))
                ),
            ),
            passes(
                "title in other case",
                replacing(plan, note, call("notes.create", title=title.upper(), body="\n".join(lines))),
            ),
            fails(
                "someone left out",
                replacing(plan, note, call("notes.create", title=title, body="\n".join(lines[:-1]))),
            ),
            fails(
                "dates of another month",
                replacing(
                    plan,
                    note,
                    call(
                        "notes.create",
                        title=title,
                        body="\n".join(line.replace(name, _cal.month_name[month % 12 + 1]) for line in lines),
                    ),
                ),
            ),
            fails(
                "someone born in another month listed too",
                replacing(plan, note, call("notes.create", title=title, body="\n".join([*lines, extra["name"]]))),
            ),
        ],
    )


PLACES = ["Trattoria Roma", "Cafe Luna", "The Green Table", "Sushi Bar Kai", "Bistro Nord"]
DINNER_LINES = [
    "Dinner sounds great! I could do {a} or {b} evening.",
    "Yes to dinner! Evenings that work for me: {a} or {b}.",
    "I'm in. {a} or {b} in the evening?",
]


@template(
    "subagent.dinner_nested",
    apps=["contacts", "messages", "calendar", AGENT_APP],
    domain=Domain.SCHEDULING,
    category="subagent",
    difficulty=5,
    capabilities=["delegate", "nested-delegation", "lookup", "reasoning", "create"],
    count=18,
    max_steps=40,
)
def dinner_nested(w: World) -> Draft:
    """Template ``subagent.dinner_nested`` (two levels), e.g. "Organise a dinner with Ana and Ben:
    find the evening they can both do from their texts and put \"Dinner with Ana and Ben\" in my
    calendar that evening from 19:30 to 21:30 at Cafe Luna, with both of them invited.": one
    sub-agent organises it, with a helper of its own per person to read their messages."""
    a, b = w.rng.sample(w.contacts, 2)
    days = [w.now.date() + dt.timedelta(days=k) for k in range(1, 8)]
    common, only_a, only_b = w.rng.sample(days, 3)
    place = w.rng.choice(PLACES)
    for p, other in ((a, only_a), (b, only_b)):
        pair = sorted([common, other])
        line = w.rng.choice(DINNER_LINES).format(a=_date_words(pair[0]), b=_date_words(pair[1]))
        _add_sms(w, p["phone"], line, w.ago_within(w.rng, 30, 900))
    title = f"Dinner with {first_name(a)} and {first_name(b)}"
    start = f"{common.isoformat()}T19:30"
    end = f"{common.isoformat()}T21:30"

    def reader(p: dict[str, Any], other: dt.date) -> list[ToolCall]:
        pair = sorted([common, other])
        return delegate_steps(
            f"Read {p['name']}'s text messages and tell me which evenings they can do dinner.",
            ["contacts.search", "messages.read_thread"],
            [call("contacts.search", query=p["name"]), call("messages.read_thread", number=p["phone"])],
            f"{first_name(p)} can do {_date_words(pair[0])} or {_date_words(pair[1])}.",
        )

    plan = [
        *delegate_steps(
            f"Organise a dinner with {a['name']} and {b['name']}: have a separate helper read each one's text "
            f'messages to find the evening both can do, then create the calendar event "{title}" that evening '
            f"from 19:30 to 21:30 at {place}, with both invited.",
            ["agent.delegate", "contacts.search", "messages.read_thread", "calendar.create_event"],
            [
                *reader(a, only_a),
                *reader(b, only_b),
                call(
                    "calendar.create_event",
                    title=title,
                    start=start,
                    end=end,
                    location=place,
                    attendees=[a["name"], b["name"]],
                ),
            ],
            f"Booked {title} on {_date_words(common)} at 19:30.",
        ),
        call("finish", answer=f"Dinner is on {_date_words(common)} at 19:30 at {place}."),
    ]
    made = {"title": {"icontains": "dinner"}, "start": start, "end": end, "location": {"iequals": place}}
    book = next(i for i, c in enumerate(plan) if c.name == "calendar.create_event")
    book_args = {"title": title, "start": start, "end": end, "location": place}
    return Draft(
        goal=f"Organise a dinner with {first_name(a)} and {first_name(b)}: find the evening they can both do from their "
        f'texts and put "{title}" in my calendar that evening from 19:30 to 21:30 at {place}, with both of them invited.',
        criteria=[
            state("calendar.events", "created", **made, attendees={"people": [a["id"], b["id"]]}),
            _delegated("messages.*", depth=2, min_frames=2),
            _delegated("calendar.create_event", depth=1),
            _not_itself("messages.*", 0),
            _not_itself("messages.*", 1),
            _not_itself("calendar.*", 0),
        ],
        milestones=[
            _delegated("messages.*", depth=2),
            _delegated("calendar.create_event", depth=1),
            state("calendar.events", "created", title={"icontains": "dinner"}, start=start),
        ],
        plan=plan,
        perturb_exempt=_finish_exempt(plan),
        probes=[
            passes(
                "attendees by first name",
                replacing(
                    plan, book, call("calendar.create_event", **book_args, attendees=[first_name(a), first_name(b)])
                ),
            ),
            passes(
                "attendees by e-mail or number",
                replacing(
                    plan,
                    book,
                    call(
                        "calendar.create_event",
                        **book_args,
                        attendees=[a["email"] or a["phone"], b["email"] or b["phone"]],
                    ),
                ),
            ),
            fails(
                "an evening only one of them can do",
                replacing(
                    plan,
                    book,
                    call(
                        "calendar.create_event",
                        **{**book_args, "start": f"{only_a.isoformat()}T19:30", "end": f"{only_a.isoformat()}T21:30"},
                        attendees=[a["name"], b["name"]],
                    ),
                ),
            ),
            fails(
                "only one of them invited",
                replacing(plan, book, call("calendar.create_event", **book_args, attendees=[a["name"]])),
            ),
        ],
    )
