"""Skills templates: requests whose app-specific procedure lives only in a skill's body.

Each goal names a procedure ("split the bill", "archive my note", "set up my wake-up routine")
without saying how this phone does it; the rule - a note and message format, a required
confirmation, a pair of alarms, a forward layout, a contact card, an invite form, an
out-of-office text - is written in one shipped skill (``apps/*/skills/<name>/SKILL.md``) that
the agent reads with ``skills.read``. The criteria check that the rule was followed (exact formats
as state criteria, confirmations as ``confirm_before``); a milestone records reading the skill.
A plan that does what the goal says, competently but without the skill, fails every task.

| template | skill | the rule the goal does not state |
|---|---|---|
| ``skills.split_bill`` | ``split-a-bill`` | shares rounded down, the user takes the leftover cents; a note ``Split: <what>`` with fixed lines and tag ``split``; a ``[Split]`` text per person, each confirmed first |
| ``skills.archive_note`` | ``archive-a-note`` | archiving = title prefix ``[Archived] ``, tag ``archived``, unpinned; never delete |
| ``skills.wake_routine`` | ``wake-up-routine`` | two alarms, ``Wake up`` and ``Wake up (backup)`` 10 minutes later, same days; an alarm already at a time is reused |
| ``skills.forward_email`` | ``forward-an-email`` | ``mail.send`` with ``Fwd: `` subject and the forwarded-message block (From, Date ``YYYY-MM-DD HH:MM``, Subject) |
| ``skills.share_contact`` | ``share-a-contact`` | a vCard 3.0 text (RFC 2426), confirmed with the user first |
| ``skills.meeting_invite`` | ``send-a-meeting-invite`` | attendees as ``Full Name <email>``; invitees without email get an ``Invitation:`` text |
| ``skills.out_of_office`` | ``out-of-office`` | reply to unread mail only, skip no-reply senders, fixed ``[Out of office]`` text, then mark read |
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.clock.templates import spoken
from apps.messages.templates import who
from phoneenv.contract import BehaviorCriterion, Category, Criterion, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer_if_said,
    behavior,
    call,
    fails,
    finishing,
    passes,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.world import CURRENCIES, World

__all__ = [
    "ARCHIVE_PREFIX",
    "BACKUP_LABEL",
    "COUNT",
    "FORWARD_SEPARATOR",
    "WAKE_LABEL",
    "cents",
    "day_words",
    "forward_body",
    "invite_text",
    "minor",
    "out_of_office_text",
    "read_skill",
    "split_note",
    "split_request",
    "vcard",
]

COUNT = 16
"""Tasks per skills template (7 templates: 112 tasks)."""

ARCHIVE_PREFIX = "[Archived] "
"""Title prefix of an archived note (skill ``archive-a-note``)."""
WAKE_LABEL = "Wake up"
"""Label of the main alarm of a wake-up routine (skill ``wake-up-routine``)."""
BACKUP_LABEL = "Wake up (backup)"
"""Label of the backup alarm, 10 minutes after the main one (skill ``wake-up-routine``)."""
BACKUP_AFTER = dt.timedelta(minutes=10)
FORWARD_SEPARATOR = "---------- Forwarded message ----------"
"""The line that opens a forwarded message (skill ``forward-an-email``)."""

SKILLS = Category.SKILLS


# -- the formats the skills define ---------------------------------------------------------------


def cents(amount: int) -> str:
    """An amount in cents as the skills write money: ``8750`` -> ``"87.50"`` (two decimals, a dot).

    Raises ``ValueError`` for a negative amount."""
    if amount < 0:
        raise ValueError(f"amount must not be negative, got {amount}")
    return f"{amount // 100}.{amount % 100:02d}"


def minor(amount: int, currency: str = "EUR") -> str:
    """An amount in ``currency``'s smallest unit as the skills write money: cents with two
    decimals and a dot (``8750`` -> ``"87.50"``), whole units for a currency without cents
    (``8750`` JPY -> ``"8750"``). Raises ``ValueError`` for a negative amount."""
    if CURRENCIES[currency].decimals == 0:
        if amount < 0:
            raise ValueError(f"amount must not be negative, got {amount}")
        return str(amount)
    return cents(amount)


def split_note(what: str, total: int, shares: dict[str, int], mine: int, currency: str = "EUR") -> tuple[str, str]:
    """(title, body) of the note skill ``split-a-bill`` defines. ``total``, ``shares`` (full name
    -> share) and ``mine`` are in the smallest unit of ``currency`` (cents, or yen); people are
    listed by full name A-Z, ``Me`` last."""
    lines = [f"Total: {minor(total, currency)} {currency}"]
    lines += [f"{name}: {minor(shares[name], currency)} {currency}" for name in sorted(shares, key=str.casefold)]
    lines.append(f"Me: {minor(mine, currency)} {currency}")
    return f"Split: {what}", "\n".join(lines)


def split_request(what: str, share: int, currency: str = "EUR") -> str:
    """The payment-request text of skill ``split-a-bill`` (``share`` in ``currency``'s smallest unit)."""
    return f"[Split] {what}: your share is {minor(share, currency)} {currency}"


def vcard(contact: dict[str, Any]) -> str:
    """A contact as the vCard 3.0 text (RFC 2426) skill ``share-a-contact`` sends: ``FN``,
    ``TEL;TYPE=CELL``, and ``EMAIL`` only when the contact has one."""
    lines = ["BEGIN:VCARD", "VERSION:3.0", f"FN:{contact['name']}", f"TEL;TYPE=CELL:{contact['phone']}"]
    if contact.get("email"):
        lines.append(f"EMAIL:{contact['email']}")
    lines.append("END:VCARD")
    return "\n".join(lines)


def forward_body(original: dict[str, Any], note: str | None = None) -> str:
    """The body of a forward of mail record ``original`` (skill ``forward-an-email``): the
    user's ``note`` and an empty line when given, the separator, ``From``/``Date``/``Subject``
    lines (the date as ``YYYY-MM-DD HH:MM``), an empty line, the original body."""
    when = original["time"][:16].replace("T", " ")
    block = (
        f"{FORWARD_SEPARATOR}\nFrom: {original['from']}\nDate: {when}\n"
        f"Subject: {original['subject']}\n\n{original['body']}"
    )
    return f"{note}\n\n{block}" if note else block


def invite_text(title: str, start: str, end: str) -> str:
    """The invitation text for an invitee without email (skill ``send-a-meeting-invite``);
    ``start``/``end`` are ``YYYY-MM-DDTHH:MM``."""
    return f"Invitation: {title}, {start[:10]} {start[11:16]}-{end[11:16]}"


def out_of_office_text(back: dt.date, cover: dict[str, Any]) -> str:
    """The out-of-office reply of skill ``out-of-office``: the day the user is back and the
    covering contact's full name and email."""
    return (
        f"[Out of office] I am away and back on {back.isoformat()}. "
        f"For anything urgent, contact {cover['name']} ({cover['email']})."
    )


def day_words(day: dt.date) -> str:
    """``Thursday 3 December``: how goals name a day."""
    return f"{day.strftime('%A')} {day.day} {day.strftime('%B')}"


def read_skill(name: str) -> tuple[ToolCall, BehaviorCriterion]:
    """The reference-plan step that reads skill ``name`` and the milestone that records it."""
    return call("skills.read", name=name), behavior(
        "required_call", "skills.read", id=f"read:{name}", arguments={"name": name}
    )


def _possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def _spaced(phone: str) -> str:
    """``+4917012345678`` written as a person might type it: ``0049 170 1234 5678``."""
    digits = phone.lstrip("+")
    return "00" + " ".join(digits[i : i + 4] for i in range(0, len(digits), 4))


def _at(plan: list[ToolCall], tool: str, k: int = 0) -> int:
    """The index of the ``k``-th call of ``tool`` in ``plan``."""
    return [i for i, c in enumerate(plan) if c.name == tool][k]


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


# -- split a bill --------------------------------------------------------------------------------

BILLS = [
    "Dinner at Cafe Luna", "Pizza night", "Taxi to the airport", "Groceries for the cabin", "Concert tickets",
    "Birthday cake", "Boat rental", "Escape room", "Brunch at The Green Table", "Karaoke night",
]  # fmt: skip


@template(
    "skills.split_bill",
    apps=["notes", "messages", "contacts"],
    domain=Domain.FINANCE,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "format", "arithmetic", "send", "confirm"],
    count=COUNT,
    max_steps=30,
)
def split_bill(w: World) -> Draft:
    """Template ``skills.split_bill``, e.g. task 0: "Split the bill for \"Taxi to the airport\" (70.72 USD) evenly between me and my landlord, and ask them to pay their share."."""
    others = w.rng.sample(w.contacts, w.rng.choice([1, 2, 2, 3]))
    what = w.rng.choice(BILLS)
    n = len(others) + 1
    cur = w.currency
    unit = 10 ** CURRENCIES[cur].decimals  # smallest units in one
    total = round(w.price(w.rng.randrange(1500, 24000) / 100) * unit)
    share = total // n
    mine = total - share * (n - 1)
    named = [who(w, c) for c in others]
    title, body = split_note(what, total, {c["name"]: share for c in others}, mine, cur)
    request = split_request(what, share, cur)
    read, read_ms = read_skill("split-a-bill")
    note_crit = state("notes.notes", "created", title={"iequals": title}, body={"iequals": body}, tags={"has": "split"})
    sms = [
        suffixed(
            state(
                "messages.messages",
                "created",
                number={"person": c["id"]},
                direction="out",
                body={"iequals": request},
            ),
            c["id"],
        )
        for c in others
    ]
    plan = [
        read,
        *(call("contacts.search", query=q) for _, q in named),
        call("notes.create", title=title, body=body, tags=["split"]),
    ]
    for c in others:
        plan += [
            call("user.confirm", question=f"Ask {c['name']} to pay {minor(share, cur)} {cur} for {what}?"),
            call("messages.send", to=c["phone"], body=request),
        ]
    plan.append(
        call("finish", answer=f"Split {minor(total, cur)} {cur} {n} ways; asked for {minor(share, cur)} {cur} each.")
    )
    return Draft(
        goal=(
            f'Split the bill for "{what}" ({minor(total, cur)} {cur}) evenly between '
            f"{_join(['me', *(name for name, _ in named)])}, and ask them to pay their share."
        ),
        criteria=[
            note_crit,
            *sms,
            behavior("confirm_before", "messages.send"),
            # an amount told is the share (the total may be said beside it)
            answer_if_said("money", float(minor(share, cur)), also=[float(minor(total, cur))], currency=cur),
        ],
        milestones=[read_ms, note_crit, *sms],
        plan=plan,
        probes=[
            fails("another amount told", finishing(plan, f"Asked them for {minor(share + 5, cur)} {cur} each.")),
            passes(
                "number typed with spaces",
                replacing(
                    plan,
                    _at(plan, "messages.send"),
                    call("messages.send", to=_spaced(others[0]["phone"]), body=request),
                ),
            ),
            passes("looked at the notes first", [call("notes.list"), *plan]),
            fails(
                "shares rounded up",
                replacing(
                    plan,
                    _at(plan, "messages.send"),
                    call("messages.send", to=others[0]["phone"], body=split_request(what, share + 1, cur)),
                ),
            ),
            fails("sent without asking", [c for c in plan if c.name != "user.confirm"]),
        ],
    )


# -- archive a note ------------------------------------------------------------------------------


# Notes a user files away once done: (title, body, tags); no title is a seeded one.
OLD_NOTES = [
    ("Flat viewings", "Mon 18:00 Linden St 4\nWed 17:30 Harbour Rd 12", ("home",)),
    ("Summer trip ideas", "Lisbon\nPorto\nMadeira", ("travel",)),
    ("Conference notes", "keynote: edge AI\ntalk: offline maps", ("work",)),
    ("Car insurance quotes", "Allsafe 412/yr\nRoadwise 389/yr", ()),
    ("Wedding playlist", "first dance: At Last\nSeptember", ("family",)),
    ("Old wifi codes", "HomeNet: sunflower77", ()),
    ("Garage sale", "bike 40\nlamp 10\nbooks 1 each", ("home",)),
    ("Thesis outline", "1 intro\n2 method\n3 results", ("study",)),
    ("Christmas cards 2025", "Ana - sent\nBen - sent\nGrandma - sent", ("family",)),
    ("Marathon training", "week 1: 3x5 km\nweek 2: 3x6 km", ("sport",)),
    ("Kitchen renovation", "tiles ordered\nsink fitted", ("home",)),
    ("Job applications", "Acme - interview\nGlobex - rejected", ("work",)),
    ("Baby names", "Mila\nJonah\nIda", ()),
    ("Bike repair", "new chain\nbrake pads", ()),
]


@template(
    "skills.archive_note",
    apps=["notes"],
    domain=Domain.NOTES,
    category=SKILLS,
    difficulty=2,
    capabilities=["skill", "lookup", "update", "format"],
    count=COUNT,
    max_steps=25,
)
def archive_note(w: World) -> Draft:
    """Template ``skills.archive_note``, e.g. task 0: "Archive my \"Wedding playlist\" and \"Wifi at the cabin\" notes."."""
    notes = w.table("notes.notes")
    added = []
    # Finished notes worth archiving; the first is the one asked about, a different one for
    # each task while there are enough (seeds are crc32(name) * 1000 + k).
    lead = OLD_NOTES[w.seed % len(OLD_NOTES)]
    for title, body, tags in [lead, w.rng.choice([n for n in OLD_NOTES if n is not lead])]:
        stamp = w.ts(w.ago_within(w.rng, 20000, 90000))
        notes.append(
            {
                "id": w.next_id("notes.notes", "n_"),
                "title": title,
                "body": body,
                "pinned": False,
                "created": stamp,
                "updated": stamp,
                "tags": tags,
            }
        )
        added.append(notes[-1])
    picked = [added[0]]
    if w.rng.random() < 0.4:
        picked.append(w.rng.choice([n for n in notes if n is not picked[0]]))
    if not any(n["pinned"] for n in picked) and w.rng.random() < 0.5:  # a pinned note must be unpinned
        i = notes.index(picked[0])
        notes[i] = picked[0] = {**picked[0], "pinned": True}
    read, read_ms = read_skill("archive-a-note")
    plan = [read]
    criteria: list[Criterion] = []
    for note in picked:
        plan += [
            call("notes.search", query=note["title"]),
            call("notes.update", note_id=note["id"], title=ARCHIVE_PREFIX + note["title"]),
            call("notes.add_tag", note_id=note["id"], tag="archived"),
        ]
        if note["pinned"]:
            plan.append(call("notes.pin", note_id=note["id"], pinned=False))
        criteria.append(
            state(
                "notes.notes",
                "updated",
                id=note["id"],
                title={"iequals": ARCHIVE_PREFIX + note["title"]},
                body=note["body"],
                tags={"has": "archived", "len": len(note["tags"]) + 1},
                pinned=False,
            )
        )
    plan.append(call("finish", answer="Archived."))
    quoted = [f'"{n["title"]}"' for n in picked]
    first = picked[0]
    other = next(n for n in notes if n not in picked)
    upd = _at(plan, "notes.update")
    return Draft(
        goal=[
            f"Archive my {_join(quoted)} note{'s' if len(picked) > 1 else ''}.",
            f"Please archive the {_join(quoted)} note{'s' if len(picked) > 1 else ''}.",
        ][(w.seed // len(OLD_NOTES)) % 2],
        criteria=[*criteria, behavior("forbidden_call", "notes.delete")],
        milestones=[read_ms, *criteria],
        plan=plan,
        probes=[
            passes("tag before title", [*plan[:upd], plan[upd + 1], plan[upd], *plan[upd + 2 :]]),
            passes("listed the notes first", [call("notes.list"), *plan]),
            fails(
                "deleted instead",
                [read, *(call("notes.delete", note_id=n["id"]) for n in picked), plan[-1]],
            ),
            fails(
                "another note archived too",
                [
                    *plan[:-1],
                    call("notes.update", note_id=other["id"], title=ARCHIVE_PREFIX + other["title"]),
                    call("notes.add_tag", note_id=other["id"], tag="archived"),
                    plan[-1],
                ],
            ),
            fails(
                "title prefix left out",
                replacing(plan, upd, call("notes.update", note_id=first["id"], title=f"{first['title']} (archived)")),
            ),
        ],
    )


# -- wake-up routine -----------------------------------------------------------------------------

WEEK = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DAYSETS = [
    ("on weekdays", WEEK[:5]),
    ("on weekends", WEEK[5:]),
    ("every day", WEEK),
    ("on Mondays, Wednesdays and Fridays", ("mon", "wed", "fri")),
    ("on Tuesdays and Thursdays", ("tue", "thu")),
]


def _alarm_criteria(change: str, time: str, label: str, days: tuple[str, ...], **key: Any) -> list[Criterion]:
    """An alarm at ``time`` labelled ``label``, on, repeating on exactly ``days``: one criterion
    with the count of days, one per day it must hold (a set of n days holding each named day)."""
    where = {"time": time, "label": {"iequals": label}, "enabled": True}
    out: list[Criterion] = [suffixed(state("clock.alarms", change, **key, **where, days={"len": len(days)}), time)]
    if len(days) < len(WEEK):
        out += [suffixed(state("clock.alarms", "present", **where, days={"has": d}), f"{time}:{d}") for d in days]
    return out


@template(
    "skills.wake_routine",
    apps=["clock"],
    domain=Domain.TIME,
    category=SKILLS,
    difficulty=2,
    capabilities=["skill", "create", "update", "format"],
    count=COUNT,
)
def wake_routine(w: World) -> Draft:
    """Template ``skills.wake_routine``, e.g. task 0: "Set up my wake-up routine for 7:55 AM every day."."""
    alarms = w.table("clock.alarms")
    phrase, days = w.rng.choice(DAYSETS)
    reuse = w.rng.random() < 0.5
    old = w.rng.choice(alarms) if reuse else None
    taken = {a["time"] for a in alarms if a is not old}

    def backup_of(hhmm: str) -> str:
        return (dt.datetime.strptime(hhmm, "%H:%M") + BACKUP_AFTER).strftime("%H:%M")

    times = [f"{h:02d}:{m:02d}" for h in (5, 6, 7, 8) for m in range(0, 60, 5)]
    main = w.rng.choice([t for t in times if t not in taken and backup_of(t) not in taken])
    backup = backup_of(main)
    read, read_ms = read_skill("wake-up-routine")
    plan = [read, call("clock.list_alarms")]
    if old is not None:  # an alarm already at the main time, switched off: reuse it
        i = alarms.index(old)
        alarms[i] = old = {**old, "time": main, "enabled": False, "label": w.rng.choice([None, "Alarm"])}
        plan += [
            call("clock.update_alarm", alarm_id=old["id"], label=WAKE_LABEL, days=list(days)),
            call("clock.set_alarm_enabled", alarm_id=old["id"], enabled=True),
        ]
        main_crit = _alarm_criteria("updated", main, WAKE_LABEL, days, id=old["id"])
    else:
        plan.append(call("clock.create_alarm", time=main, label=WAKE_LABEL, days=list(days)))
        main_crit = _alarm_criteria("created", main, WAKE_LABEL, days)
    plan += [
        call("clock.create_alarm", time=backup, label=BACKUP_LABEL, days=list(days)),
        call("finish", answer=f"Wake-up routine set: {main} with a backup at {backup}, {phrase}."),
    ]
    backup_crit = _alarm_criteria("created", backup, BACKUP_LABEL, days)
    bk = len(plan) - 2
    late = (dt.datetime.strptime(main, "%H:%M") + dt.timedelta(minutes=5)).strftime("%H:%M")
    spare = next(t for t in times if t not in taken and t not in (main, backup))
    return Draft(
        goal=f"Set up my wake-up routine for {spoken(main)} {phrase}.",
        criteria=[*main_crit, *backup_crit],
        milestones=[read_ms, main_crit[0], backup_crit[0]],
        plan=plan,
        probes=[
            passes(
                "labels in other case",
                replacing(
                    plan, bk, call("clock.create_alarm", time=backup, label=BACKUP_LABEL.lower(), days=list(days))
                ),
            ),
            passes("listed the timers too", [call("clock.list_timers"), *plan]),
            fails(
                "backup five minutes later",
                replacing(plan, bk, call("clock.create_alarm", time=late, label=BACKUP_LABEL, days=list(days))),
            ),
            fails(
                "a stray third alarm",
                replacing(
                    plan, bk, plan[bk], call("clock.create_alarm", time=spare, label=WAKE_LABEL, days=list(days))
                ),
            ),
        ],
    )


# -- forward an email ----------------------------------------------------------------------------

FORWARD_NOTES = ["Can you take care of this?", "FYI, see below.", "What do you think?", "Please handle this one."]


@template(
    "skills.forward_email",
    apps=["mail", "contacts"],
    domain=Domain.EMAIL,
    category=SKILLS,
    difficulty=2,
    capabilities=["skill", "lookup", "send", "format"],
    count=COUNT,
)
def forward_email(w: World) -> Draft:
    """Template ``skills.forward_email``, e.g. task 0: "Forward the \"Invoice #3266\" email to Thorsten."."""
    (original,) = w.pick("mail.messages", folder="inbox")
    to = w.rng.choice([c for c in w.contacts if c["email"] and c["email"] != original["from"]])
    name, query = who(w, to)
    note = w.rng.choice([None, None, *FORWARD_NOTES])
    subject = f"Fwd: {original['subject']}"
    body = forward_body(original, note)
    goal = f'Forward the "{original["subject"]}" email to {name}'
    goal += f' with the note "{note}".' if note else "."
    read, read_ms = read_skill("forward-an-email")
    sent = state(
        "mail.messages",
        "created",
        folder="sent",
        to={"has": to["email"], "len": 1},
        subject={"iequals": subject},
        body={"iequals": body},
    )
    plan = [
        read,
        call("mail.search", query=original["subject"]),
        call("contacts.search", query=query),
        call("mail.send", to=[to["email"]], subject=subject, body=body),
        call("finish", answer=f"Forwarded it to {to['name']}."),
    ]
    wrong = next(c for c in w.contacts if c["email"] and c is not to and c["email"] != original["from"])
    return Draft(
        goal=goal,
        # the skill's rules: a new e-mail, not a reply; the original neither marked nor moved
        criteria=[
            sent,
            behavior("forbidden_call", "mail.reply"),
            behavior("forbidden_call", "mail.mark_read", id="original_not_marked"),
            behavior("forbidden_call", "mail.archive", id="original_not_moved"),
        ],
        milestones=[read_ms, sent],
        plan=plan,
        probes=[
            fails(
                "marked the original read", [*plan[:-1], call("mail.mark_read", message_id=original["id"]), plan[-1]]
            ),
            passes(
                "address in other case",
                replacing(plan, 3, call("mail.send", to=[to["email"].upper()], subject=subject, body=body)),
            ),
            passes("looked at the inbox first", [call("mail.list_inbox"), *plan]),
            fails(
                "sent to someone else",
                replacing(plan, 3, call("mail.send", to=[wrong["email"]], subject=subject, body=body)),
            ),
            fails(
                "forwarded without the header block",
                replacing(plan, 3, call("mail.send", to=[to["email"]], subject=subject, body=note or original["body"])),
            ),
        ],
    )


# -- share a contact -----------------------------------------------------------------------------


@template(
    "skills.share_contact",
    apps=["contacts", "messages"],
    domain=Domain.CONTACTS,
    category=SKILLS,
    difficulty=2,
    capabilities=["skill", "lookup", "send", "format", "confirm"],
    count=COUNT,
)
def share_contact(w: World) -> Draft:
    """Template ``skills.share_contact``, e.g. task 0: "Send my dentist Kevin's contact details."."""
    person, to = w.rng.sample(w.contacts, 2)
    pname, pquery = who(w, person)
    tname, tquery = who(w, to)
    card = vcard(person)
    goal = w.rng.choice(
        [f"Send {tname} {_possessive(pname)} contact details.", f"Share {_possessive(pname)} contact with {tname}."]
    )
    read, read_ms = read_skill("share-a-contact")
    sent = state("messages.messages", "created", number={"person": to["id"]}, direction="out", body={"iequals": card})
    plan = [
        read,
        call("contacts.search", query=pquery),
        call("contacts.search", query=tquery),
        call("user.confirm", question=f"Send {_possessive(person['name'])} contact card to {to['name']}?"),
        call("messages.send", to=to["phone"], body=card),
        call("finish", answer=f"Sent {_possessive(person['name'])} contact card to {to['name']}."),
    ]
    return Draft(
        goal=goal,
        criteria=[sent, behavior("confirm_before", "messages.send")],
        milestones=[read_ms, sent],
        plan=plan,
        probes=[
            passes(
                "number typed with spaces",
                replacing(plan, 4, call("messages.send", to=_spaced(to["phone"]), body=card)),
            ),
            passes(
                "opened the contact too", replacing(plan, 1, plan[1], call("contacts.get", contact_id=person["id"]))
            ),
            fails(
                "the recipient's own card", replacing(plan, 4, call("messages.send", to=to["phone"], body=vcard(to)))
            ),
            fails("sent without asking", [c for c in plan if c.name != "user.confirm"]),
            fails(
                "asked with the roles swapped",
                replacing(
                    plan,
                    3,
                    call("user.confirm", question=f"Send {_possessive(to['name'])} contact card to {person['name']}?"),
                ),
            ),
        ],
    )


# -- meeting invite ------------------------------------------------------------------------------

MEETINGS = ["Budget review", "Project kickoff", "Design critique", "Quarterly planning", "Book club", "Hiring debrief",
            "Launch retro", "Volunteer briefing"]  # fmt: skip
ROOMS = ["Room 4.12", "Cafe Luna", "City Library", "Room 2.01"]


@template(
    "skills.meeting_invite",
    apps=["calendar", "contacts", "messages"],
    domain=Domain.SCHEDULING,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "lookup", "create", "multi-entity", "format"],
    count=COUNT,
    max_steps=25,
)
def meeting_invite(w: World) -> Draft:
    """Template ``skills.meeting_invite``, e.g. task 0: "Invite my mom, my neighbor and Justin to \"Design critique\" on Monday 23 November from 15:30 to 16:00 in City Library."."""
    people = w.rng.sample(w.contacts, w.rng.choice([1, 2, 2, 3]))
    named = [who(w, c) for c in people]
    title = w.rng.choice(MEETINGS)
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 7))
    begin = dt.datetime.combine(day, dt.time(w.rng.randrange(9, 17), w.rng.choice([0, 30])))
    start = begin.isoformat(timespec="minutes")
    end = (begin + dt.timedelta(minutes=w.rng.choice([30, 60, 90]))).isoformat(timespec="minutes")
    room = w.rng.choice([None, *ROOMS])
    attendees = [f"{c['name']} <{c['email']}>" if c["email"] else c["name"] for c in people]
    goal = f'Invite {_join([n for n, _ in named])} to "{title}" on {day_words(day)} from {start[11:]} to {end[11:]}' + (
        f" in {room}." if room else "."
    )
    where: dict[str, Any] = {"title": {"iequals": title}, "start": start, "end": end}
    if room:
        where["location"] = {"iequals": room}
    event = state("calendar.events", "created", **where, attendees={"len": len(people)})
    criteria: list[Criterion] = [event]
    criteria += [
        suffixed(state("calendar.events", "present", **where, attendees={"has": a}), c["id"])
        for a, c in zip(attendees, people, strict=True)
    ]
    text = invite_text(title, start, end)
    texted = [
        suffixed(
            state(
                "messages.messages", "created", number={"number": c["phone"]}, direction="out", body={"iequals": text}
            ),
            c["id"],
        )
        for c in people
        if not c["email"]
    ]
    read, read_ms = read_skill("send-a-meeting-invite")
    args: dict[str, Any] = {"title": title, "start": start, "end": end, "attendees": attendees}
    if room:
        args["location"] = room
    plan = [read, *(call("contacts.search", query=q) for _, q in named), call("calendar.create_event", **args)]
    plan += [call("messages.send", to=c["phone"], body=text) for c in people if not c["email"]]
    plan.append(call("finish", answer=f'Booked "{title}" and invited {len(people)}.'))
    ev = _at(plan, "calendar.create_event")
    later = (begin + dt.timedelta(hours=1)).isoformat(timespec="minutes")
    return Draft(
        goal=goal,
        criteria=[*criteria, *texted],
        milestones=[read_ms, event, *texted],
        plan=plan,
        probes=[
            passes(
                "title in other case",
                replacing(plan, ev, call("calendar.create_event", **{**args, "title": title.upper()})),
            ),
            passes("checked the day first", [call("calendar.list_events", date=day.isoformat()), *plan]),
            fails(
                "attendees by name only",
                replacing(
                    plan, ev, call("calendar.create_event", **{**args, "attendees": [c["name"] for c in people]})
                ),
            )
            if any(c["email"] for c in people)
            else fails("nobody texted", [c for c in plan if c.name != "messages.send"]),
            fails(
                "an hour late",
                replacing(plan, ev, call("calendar.create_event", **{**args, "start": later, "end": max(end, later)})),
            ),
        ],
    )


# -- out of office -------------------------------------------------------------------------------

AUTOMATED = [
    ("no-reply@cityline-rail.example.com", "Your e-ticket", "Your ticket for the 08:12 train is attached."),
    ("noreply@bank.example.com", "Your monthly statement", "Your statement for November is ready."),
    ("no-reply@shop.example.com", "Order confirmation", "Thanks for your order; we will email you when it ships."),
    ("noreply@calendar-tools.example.com", "Weekly agenda", "You have 6 events next week."),
]


@template(
    "skills.out_of_office",
    apps=["mail", "contacts"],
    domain=Domain.EMAIL,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "lookup", "send", "update", "format"],
    count=COUNT,
    max_steps=25,
)
def out_of_office(w: World) -> Draft:
    """Template ``skills.out_of_office``, e.g. task 0: "I'm on holiday and back on Wednesday 9 December. Send the out-of-office reply to my mail; my coach covers for me while I'm away."."""
    mail = w.table("mail.messages")
    automatic = ("no-reply@", "noreply@")
    if all(m["read"] or m["from"].startswith(automatic) for m in mail):  # at least one message to answer
        i = w.rng.choice([i for i, m in enumerate(mail) if not m["from"].startswith(automatic)])
        mail[i] = {**mail[i], "read": False}
    if w.rng.random() < 0.5:  # an unread automatic message that must not be answered
        sender, subject, body = w.rng.choice(AUTOMATED)
        mail.append(
            {
                "id": w.next_id("mail.messages", "em_"),
                "folder": "inbox",
                "from": sender,
                "to": (w.user_email,),
                "subject": subject,
                "body": body,
                "time": w.ts(w.rng.randrange(20, 3000)),
                "read": False,
            }
        )
    targets = [m for m in mail if m["folder"] == "inbox" and not m["read"] and not m["from"].startswith(automatic)]
    cover = w.rng.choice([c for c in w.contacts if c["email"]])
    name, query = who(w, cover)
    back = w.now.date() + dt.timedelta(days=w.rng.randrange(5, 20))
    text = out_of_office_text(back, cover)
    read, read_ms = read_skill("out-of-office")
    replies = [
        suffixed(
            state(
                "mail.messages",
                "created",
                folder="sent",
                to={"has": m["from"], "len": 1},
                subject={"subject": f"Re: {m['subject']}"},
                body={"iequals": text},
            ),
            m["id"],
        )
        for m in targets
    ]
    marked = [
        suffixed(state("mail.messages", "updated", id=m["id"], read=True, folder="inbox"), m["id"]) for m in targets
    ]
    plan = [read, call("mail.list_inbox", unread_only=True), call("contacts.search", query=query)]
    for m in targets:
        plan += [
            call("mail.reply", message_id=m["id"], body=text),
            call("mail.mark_read", message_id=m["id"], read=True),
        ]
    plan.append(call("finish", answer=f"Sent {len(targets)} out-of-office replies."))
    skipped = [
        m for m in mail if m["folder"] == "inbox" and (m["read"] or m["from"].startswith(("no-reply@", "noreply@")))
    ]
    first = targets[0]
    rep0 = _at(plan, "mail.reply")
    probes = [
        passes("marked read before replying", [*plan[:rep0], plan[rep0 + 1], plan[rep0], *plan[rep0 + 2 :]]),
        passes("listed the whole inbox first", [call("mail.list_inbox"), *plan]),
        fails("left unread", [c for c in plan if c.name != "mail.mark_read"]),
        fails(
            "says the wrong day",
            replacing(
                plan,
                rep0,
                call(
                    "mail.reply",
                    message_id=first["id"],
                    body=text.replace(back.isoformat(), (back + dt.timedelta(days=1)).isoformat()),
                ),
            ),
        ),
    ]
    probes += [
        fails("told another count", finishing(plan, f"Sent {len(targets) + len(skipped) + 2} out-of-office replies.")),
        passes(
            "told the skipped ones too",
            finishing(plan, f"Sent {len(targets)} out-of-office replies; skipped {len(skipped) + 1} others."),
        ),
        passes(
            "told the count in words",
            finishing(
                plan,
                f"Done - {('one', 'two', 'three', 'four', 'five', 'six')[len(targets) - 1]} out-of-office replies sent.",
            ),
        ),
    ]
    if skipped:
        probes.append(
            fails(
                "answered a message it should skip",
                [*plan[:-1], call("mail.reply", message_id=skipped[0]["id"], body=text), plan[-1]],
            )
        )
    return Draft(
        probes=probes,
        goal=(
            f"I'm on holiday and back on {day_words(back)}. Send the out-of-office reply to my mail; "
            f"{name} covers for me while I'm away."
        ),
        criteria=[
            *replies,
            *marked,
            # a count of replies the answer tells is the replies sent ("skipped 2" is another count)
            answer_if_said("number", len(targets), unit="reply|replies|mail|email|message|answer|office"),
        ],
        milestones=[read_ms, *replies],
        plan=plan,
    )
