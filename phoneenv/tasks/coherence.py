"""Does a task's world hold together? Rules over a task's fixtures, and their measure over a suite.

Each rule takes a task's :class:`~phoneenv.contract.Fixtures` and returns a verdict per record
it judges, ``(label, held)``; records it has nothing to say about (an event whose title is of
no kind it knows, a text from a number no contact has) are not judged. :func:`measure` sums
the verdicts over many fixtures; ``phoneenv tasks stats`` reports it under ``"world"``.

The rules read the world's own tables (:data:`~phoneenv.tasks.world.EVENT_KINDS`,
:data:`~phoneenv.tasks.world.MESSAGE_LINES`, :data:`~phoneenv.tasks.world.PERSONAL_MAIL`,
:data:`~phoneenv.tasks.world.WAKING`), so they judge what a template adds by the same measure
as what the world seeds.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Callable, Iterable
from typing import Any

from phoneenv.contract import Fixtures
from phoneenv.tasks.world import (
    EVENT_KINDS,
    MESSAGE_LINES,
    PERSONAL_MAIL,
    WAKING,
    EventKind,
    MessageLine,
    circle,
    line_fits_time,
)

__all__ = [
    "PAST_FIELDS",
    "RULES",
    "WAKING_FIELDS",
    "broken",
    "event_attendees",
    "event_hours",
    "event_length",
    "event_place",
    "mail_sender",
    "measure",
    "message_hours",
    "message_sender",
    "past",
    "threads",
    "waking",
]

Verdicts = list[tuple[str, bool]]
"""A rule's verdicts: ``(record label, held)`` per judged record."""

PAST_FIELDS: dict[str, tuple[str, ...]] = {
    "messages.messages": ("time",),
    "phone.calls": ("time",),
    "phone.voicemails": ("time",),
    "mail.messages": ("time",),
    "notes.notes": ("created", "updated"),
    "gallery.photos": ("taken",),
    "gallery.albums": ("created",),
    "music.playlists": ("created",),
    "todo.lists": ("created",),
    "todo.items": ("created",),
    "wallet.requests": ("created",),
    "shop.orders": ("placed",),
    "delivery.orders": ("placed",),
    "food.orders": ("placed_at",),
    "travel.bookings": ("booked",),
    "weather.current": ("observed",),
}
"""The fields that record something that happened: each must be at or before the phone's clock."""

WAKING_FIELDS: dict[str, tuple[str, ...]] = {
    "messages.messages": ("time",),
    "phone.calls": ("time",),
    "phone.voicemails": ("time",),
    "notes.notes": ("created",),
    "gallery.photos": ("taken",),
}
"""The fields that record something a person did (a text, a call, a note, a photo): each should
fall in :data:`~phoneenv.tasks.world.WAKING` hours. Mail counts too when a contact wrote it."""

_REPLY_PREFIX = re.compile(r"^\s*(re|aw|sv)(\[\d+\])?\s*:\s*", re.I)


def _kind(title: str) -> EventKind | None:
    return next((k for k in EVENT_KINDS if k.matches(title)), None)


def _events(fx: Fixtures) -> Iterable[tuple[dict[str, Any], EventKind]]:
    for e in fx.records.get("calendar.events", []):
        kind = _kind(str(e.get("title") or ""))
        if kind is not None and not e.get("all_day"):
            yield e, kind


def _contacts(fx: Fixtures) -> list[dict[str, Any]]:
    return fx.records.get("contacts.contacts", [])


def _relations_known(fx: Fixtures) -> bool:
    """Whether the address book says who people are: some contact has a relation. (The memory
    templates drop every relation, leaving it to the user's memories; there the rules that
    judge by relation have nothing to go on.)"""
    return any(c.get("relation") for c in _contacts(fx))


def _by_number(fx: Fixtures) -> dict[str, dict[str, Any]]:
    return {re.sub(r"\D", "", c["phone"])[-9:]: c for c in _contacts(fx) if c.get("phone")}


def _contact_of(number: str, by_number: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    return by_number.get(re.sub(r"\D", "", number or "")[-9:])


def _local(fx: Fixtures, value: Any) -> dt.datetime | None:
    """A record's timestamp as the phone's local naive time (a date is its midnight); None when
    ``value`` is no timestamp."""
    if not isinstance(value, str) or len(value) < 10:
        return None
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is not None:
        when = when.astimezone(zoneinfo.ZoneInfo(fx.timezone)).replace(tzinfo=None)
    return when


def event_place(fx: Fixtures) -> Verdicts:
    """An event of a known kind is somewhere that fits it: a dentist appointment at the dental
    practice, a yoga class at the studio, a "Call with X" on the phone or online (or nowhere),
    a meeting in a room or the office, a lunch at a restaurant (``EventKind.places``)."""
    return [(e["id"], e.get("location") in kind.places) for e, kind in _events(fx)]


def event_attendees(fx: Fixtures) -> Verdicts:
    """An event's attendees fit its kind: no family at a work meeting, nobody but the dentist
    at a dentist appointment, no colleague at a lunch named for someone else; at most
    ``EventKind.most`` people; a "Lunch/Call/Coffee with X" has X among them. Attendees who are
    no contact (an e-mail address), and relations in an address book that names none (see
    :func:`message_sender`), are not judged."""
    out: Verdicts = []
    contacts = _contacts(fx) if _relations_known(fx) else []
    by_name = {c["name"]: c for c in contacts}
    by_email = {c["email"]: c for c in contacts if c.get("email")}
    for e, kind in _events(fx):
        people = [by_name.get(a) or by_email.get(a) for a in e.get("attendees") or ()]
        known = [p for p in people if p is not None]
        held = len(people) <= kind.most and all(circle(p.get("relation")) in kind.circles for p in known)
        if "{p}" in kind.title:
            head = kind.title.split("{p}")[0]
            first = e["title"][len(head) :].split()[0] if e["title"].startswith(head) else ""
            held = held and any(str(a).split()[0] == first for a in e.get("attendees") or ())
        out.append((e["id"], held))
    return out


def event_length(fx: Fixtures) -> Verdicts:
    """An event lasts as long as its kind does: a stand-up 15-30 minutes, a book club 90-120, a
    dentist appointment 30-60 (between the shortest and longest of ``EventKind.minutes``)."""
    out: Verdicts = []
    for e, kind in _events(fx):
        start, end = _local(fx, e.get("start")), _local(fx, e.get("end"))
        if start is None or end is None:
            continue
        minutes = (end - start).total_seconds() / 60
        out.append((e["id"], min(kind.minutes) <= minutes <= max(kind.minutes)))
    return out


def event_hours(fx: Fixtures) -> Verdicts:
    """An event starts at an hour its kind fits (``EventKind.starts``): lunch between 11:30 and
    13:30, a stand-up in the morning, a book club in the evening; a work event on a weekday."""
    out: Verdicts = []
    for e, kind in _events(fx):
        start = _local(fx, e.get("start"))
        if start is None:
            continue
        first, last = (dt.time.fromisoformat(h) for h in kind.starts)
        held = first <= start.time() <= last and not (kind.work and start.weekday() >= 5)
        out.append((e["id"], held))
    return out


_OPENERS = {line.text: line for line in MESSAGE_LINES}
_REPLIES = {line.reply: line for line in MESSAGE_LINES if line.reply}


def message_sender(fx: Fixtures) -> Verdicts:
    """A text of the world's pool fits who it is with: the landlord writes about rent and
    repairs, the coach about practice, the boss about work, only family asks to pick up milk
    (``MessageLine.circles``), and it goes the way it can (a landlord's rent reminder is never
    sent by the user; a reply goes back the other way). Texts with numbers no contact has, texts
    not in the pool, and worlds whose address book names no relation at all (the memory
    templates drop them: who someone is comes from the user's memories) are not judged."""
    out: Verdicts = []
    if not _relations_known(fx):
        return out
    by_number = _by_number(fx)
    for m in fx.records.get("messages.messages", []):
        body, inbound = m.get("body"), m.get("direction") == "in"
        line, reply = _OPENERS.get(body), False
        if line is None:
            line, reply = _REPLIES.get(body), True
        contact = _contact_of(m.get("number", ""), by_number)
        if line is None or contact is None:
            continue
        sent_by_them = inbound != reply  # a reply is sent by the other side of the opener
        way = line.way in ("both", "in" if sent_by_them else "out")
        out.append((m["id"], way and circle(contact.get("relation")) in line.circles))
    return out


def message_hours(fx: Fixtures) -> Verdicts:
    """A text of the world's pool is sent at a time its words fit (``MessageLine.hours``):
    "See you at 7" before 18:30, "Are we still on for tonight?" by 18:00, "Meeting moved to 3"
    on a weekday before 14:30."""
    out: Verdicts = []
    for m in fx.records.get("messages.messages", []):
        line: MessageLine | None = _OPENERS.get(m.get("body"))
        when = _local(fx, m.get("time"))
        if line is not None and when is not None:
            out.append((m["id"], line_fits_time(line, when)))
    return out


def threads(fx: Fixtures) -> Verdicts:
    """A reply answers what it replies to: a text that is a pool reply ("Sure, 12:30?") comes
    right after its opener ("Lunch tomorrow?") in the thread with the same number, from the
    other side; a mail whose subject is "Re: S" follows a mail with subject S between the same
    two addresses."""
    out: Verdicts = []
    msgs = sorted(
        (m for m in fx.records.get("messages.messages", []) if m.get("time")),
        key=lambda m: (str(m["time"]), str(m["id"])),
    )
    last: dict[str, dict[str, Any]] = {}
    for m in msgs:
        key = re.sub(r"\D", "", m.get("number") or "")[-9:]
        line = _REPLIES.get(m.get("body"))
        if line is not None:
            before = last.get(key)
            held = before is not None and before.get("body") == line.text
            out.append((m["id"], held and before is not None and before.get("direction") != m.get("direction")))
        last[key] = m
    mails = fx.records.get("mail.messages", [])
    for mail in mails:
        subject = str(mail.get("subject") or "")
        if not _REPLY_PREFIX.match(subject):
            continue
        base = _REPLY_PREFIX.sub("", subject).casefold()
        parties = {str(mail.get("from")), *map(str, mail.get("to") or ())}
        held = any(
            _REPLY_PREFIX.sub("", str(o.get("subject") or "")).casefold() == base
            and str(o.get("time")) < str(mail.get("time"))
            and str(o.get("from")) in parties
            and o is not mail
            for o in mails
        )
        out.append((mail["id"], held))
    return out


_MAIL = {m.subject: m for m in PERSONAL_MAIL}


def mail_sender(fx: Fixtures) -> Verdicts:
    """Mail of the world's personal pool comes from a contact whose relation it fits: the team
    offsite from a colleague, the rent reminder from the landlord (``MailLine.circles``). Other
    mail, and worlds whose address book names no relation (see :func:`message_sender`), are not
    judged."""
    out: Verdicts = []
    if not _relations_known(fx):
        return out
    by_email = {c["email"]: c for c in _contacts(fx) if c.get("email")}
    for mail in fx.records.get("mail.messages", []):
        line = _MAIL.get(mail.get("subject"))
        if line is None or mail.get("folder") != "inbox":
            continue
        contact = by_email.get(mail.get("from"))
        out.append((mail["id"], contact is not None and circle(contact.get("relation")) in line.circles))
    return out


def past(fx: Fixtures) -> Verdicts:
    """What happened happened before now: every timestamp of :data:`PAST_FIELDS` (texts, calls,
    mail, notes, photos, orders, ...) is at or before the phone's clock, and a note was not
    updated before it was created."""
    out: Verdicts = []
    clock = _local(fx, fx.clock)
    assert clock is not None
    for table, fields in PAST_FIELDS.items():
        for r in fx.records.get(table, []):
            for f in fields:
                when = _local(fx, r.get(f))
                if when is not None:
                    out.append((f"{r.get('id')}.{f}", when <= clock))
    for note in fx.records.get("notes.notes", []):
        created, updated = _local(fx, note.get("created")), _local(fx, note.get("updated"))
        if created is not None and updated is not None:
            out.append((f"{note.get('id')}.updated", created <= updated))
    return out


def waking(fx: Fixtures) -> Verdicts:
    """People act in waking hours: every timestamp of :data:`WAKING_FIELDS` (a text, a call, a
    voicemail, a note, a photo) and every mail from a contact's address falls between 07:00 and
    22:30 local time (:data:`~phoneenv.tasks.world.WAKING`)."""
    out: Verdicts = []

    def check(label: str, value: Any) -> None:
        when = _local(fx, value)
        if when is not None and len(str(value)) > 10:
            out.append((label, WAKING[0] <= when.time() <= WAKING[1]))

    for table, fields in WAKING_FIELDS.items():
        for r in fx.records.get(table, []):
            for f in fields:
                check(f"{r.get('id')}.{f}", r.get(f))
    emails = {c["email"] for c in _contacts(fx) if c.get("email")}
    for mail in fx.records.get("mail.messages", []):
        if mail.get("from") in emails:
            check(f"{mail.get('id')}.time", mail.get("time"))
    return out


RULES: dict[str, Callable[[Fixtures], Verdicts]] = {
    "event_place": event_place,
    "event_attendees": event_attendees,
    "event_length": event_length,
    "event_hours": event_hours,
    "message_sender": message_sender,
    "message_hours": message_hours,
    "threads": threads,
    "mail_sender": mail_sender,
    "past": past,
    "waking": waking,
}
"""Every rule, by the name ``phoneenv tasks stats`` reports it under."""


def broken(fx: Fixtures) -> dict[str, list[str]]:
    """The labels of the records each rule finds broken in ``fx`` (rules with none left out)."""
    out = {name: [label for label, held in rule(fx) if not held] for name, rule in RULES.items()}
    return {name: labels for name, labels in out.items() if labels}


def measure(fixtures: Iterable[Fixtures]) -> dict[str, dict[str, Any]]:
    """Each rule over all ``fixtures``: ``{"held": n, "total": n, "share": held/total}`` (share
    1.0 when the rule judged nothing), by rule name."""
    sums = {name: [0, 0] for name in RULES}
    for fx in fixtures:
        for name, rule in RULES.items():
            verdicts = rule(fx)
            sums[name][0] += sum(held for _, held in verdicts)
            sums[name][1] += len(verdicts)
    return {
        name: {"held": held, "total": total, "share": round(held / total, 4) if total else 1.0}
        for name, (held, total) in sums.items()
    }
