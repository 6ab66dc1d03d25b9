"""Grounded claims: what the planner *tells* must agree with the world it could see.

A verdict judges what the planner did (state and behaviour criteria) and what it told: the
final answer and every text it wrote to a person or a record during the episode (a message
body, a mail's subject and body, a note, an event's title and notes, a request's note, a
confirmation question: :data:`AUTHORED_KEYS`). :func:`ungrounded` reads the typed claims of
those texts with the readers the answer criteria use (:mod:`phoneenv.tasks.answers`) and holds
each to the **grounds** of the episode (:func:`grounds`), in three parts:

- *subject*: the user's words (the goal, each quoted part alone, memory entries, the task's
  expected answer values), what the episode did (the records it changed as they are now, the
  results of its write calls) and the phone's clock;
- *read*: the results of the calls it made (a record's ``currency`` and a weather result's
  ``temperature_unit`` travel with the numbers beside and below them), and the amounts of the
  fixture tables of the apps it used (a budget it could have opened);
- *named* records: every record read, changed or in those fixtures that has a name a clause
  can say ("Lunch with Osamu", "Grand Plaza", "MD 571", "Osaka": :data:`_NAME_KEYS`).

A claim, read in its sentence, is grounded when:

1. it states what the episode did ("moved it **to** Tuesday", "booked **for** 19:30", "paid
   **for**..."; a verb of change before it, :data:`_ACTION_BEFORE`) and the episode changed
   records of its type: then it must be a value the user gave or the episode set;
2. else it is a subject value;
3. else, when its sentence names records holding values of its type, it is one of theirs
   (the dentist appointment's time, not the yoga class's; named only by words most records
   share, the ones so named: the showtimes "at Kino Central", not the one elsewhere; of
   several, those at the place the clause says; a clause that opens with "it" is about the
   records of the clause before: :meth:`Grounds.anchors`);
4. else it is a read value (a date: only when the episode set no date).

Texts the planner wrote are never evidence for one another (its own message read back is no
source; a false time typed into an event and repeated in the answer is still false), and an
update's old version is no subject ("moved to 19:00" for a booking moved *from* 19:00). Values
the planner can work out count as held: a time moved by a duration the user or a record gives
("5 minutes late", a film's runtime, the travel time from now), an amount's sum or difference
with another of its currency, its split into 2-12 shares, the total of a list. Per type:

=============  ===============================================================================
time           ``HH:MM`` equal to a held time; told roughly ("around 22:15", "by 23:00") up to
               15 or 60 minutes off; a time that ends something (a field ``end``,
               ``arrives``, ``until``) only where the text says so ("until 17:00", "arrives
               11:10", the far end of "16:00-17:00")
date           ``YYYY-MM-DD`` equal to a held date (relative days resolved against the clock;
               a date without a year against any year: birthdays); a weekday said alone is
               the next such day, the last one or today; a weekday written beside a date
               ("Thursday, 27 November") must be that date's weekday, whatever else holds
money          the amount (±0.01) in the same currency when both name one ("$74.50" for a
               price in GBP is ungrounded)
temperature    the value in its unit within 0.5°, or converted within 1° (8.6 °C told as
               47 °F passes; "8.6°F" fails)
email          the address (case aside) is one the grounds hold
phone          the number (as libphonenumber reads it, any format; valid numbers only) is one
               the grounds hold
status         a thing told as done: paid, scheduled, cancelled, booked/reserved, delivered,
               texted, e-mailed, sent, deleted/removed (:data:`STATUS_FAMILIES`). Told as
               the planner's own act ("I've paid it", "Cancelled your 15:00", "Booked for two"): a call of that kind
               succeeded in the episode ("paid" for a bill only scheduled fails). Told as a
               record's state ("the bill is paid", "it has been cancelled"): such a call, or a
               ``status`` the record holds (the named record's, else those of the records
               the episode changed or read last). Questions
               and negated claims are not told
count          "table for four", "2 guests": a party size the episode set (a field
               ``party_size``, ``guests``...); told after a verb of an act ("Texted 4 people",
               "Booked 4 nights", "from each of 3"): a count of what the episode did (calls of a
               tool, people or records addressed, records changed alike (one table, one kind of
               change, the same fields: 2 lights dimmed beside 1 thermostat set), list lengths and
               quantity fields of its writes and changed records (``qty``, ``nights``...), a
               stay's nights, the goal's numbers; not a brightness or a position); else a count
               any part of the grounds holds (a list's
               length, a whole-number field, a number in a text)
percent        "80%", "65 percent": a whole number the grounds hold (a brightness, a volume, a
               chance of rain)
duration       a stated duration (minutes; a ``*_s`` field in seconds), the span between two
               times of one record, or between two subject times; "in 25 minutes": from the
               clock to a held time. Exact to the minute when told in minutes; whole or half
               hours within 15 minutes; "about"/"around" within 10% (5 minutes at least)
person         a full name whose first name is a contact's (and a given name of the world) and
               whose surname is a surname of the world must be a contact's full name; a contact
               told as texted, told, asked, invited, "sent to" must be one the episode's writes
               addressed (by number, address, name or id, or through a record they name by id),
               and so must a contact told by relation ("texted your dad": :data:`RELATION_WORDS`)
switch         a setting or an alarm told on or off ("DND is off", "turned the 7:15 alarm back
               on", "back to the light theme"): the state the phone holds at the end
               (:mod:`phoneenv.tasks.switches`); an alarm told off that was deleted fails
=============  ===============================================================================

A negated claim ("not 14:00", "instead of Tuesday") is not told. Free speech stays free: words
that carry no typed value (a pleasantry, an opinion) are not claims here. Names told of an act
are checked by :mod:`phoneenv.tasks.names` (type ``name``); distances are not checked.

Grounding is support, with sentence-level aboutness: a planner that reads ten alarms and tells,
in a sentence that names none of them, the time of the wrong one passes this check (the task's
own answer criteria catch that); one that tells a time no record, result or word of the user
holds, or a value of another record than the one its sentence names or its action set, fails
it. The reason names the claim, the text it came from and what the grounds hold instead.

A task opts a claim type out with ``TaskSpec.grounding_exempt`` (``{"time": "why"}``).
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import phonenumbers

from phoneenv.contract import GROUNDED_TYPES
from phoneenv.harness.memory import STOPWORDS
from phoneenv.state import diff_tables
from phoneenv.tasks.answers import (
    ABOUT_BEFORE,
    BY_BEFORE,
    MONTH_NAMES,
    WEEKDAY,
    WEEKDAYS,
    Claim,
    claims,
    currencies_named,
    phone_region,
    scan,
    scan_cached,
    unmarked,
)
from phoneenv.tasks.identity import CONTACTS_TABLE, ContactBook, contact_ids, mentioned_contacts, numbers_of
from phoneenv.tasks.names import SubjectNames, acted_on, held_by, name_claims, record_names, subject_strings
from phoneenv.tasks.predicates import FRAMING, Context, plain, words
from phoneenv.tasks.switches import check_switches

__all__ = [
    "AUTHORED_KEYS",
    "GROUNDED_TYPES",
    "NO_TOOL",
    "RE_CODE_TOLD",
    "RE_DISTANCE",
    "RE_SIZE",
    "STATUS_FAMILIES",
    "Evidence",
    "Grounds",
    "Named",
    "Ungrounded",
    "WorldGrounds",
    "act_name",
    "authored_texts",
    "check_text",
    "check_told",
    "code_key",
    "count_kind",
    "distance_claims",
    "distance_number",
    "evidence_of",
    "grounds",
    "period_claims",
    "size_key",
    "span_claims",
    "status_claims",
    "temperature_claims",
    "ungrounded",
    "world_grounds",
]


AUTHORED_KEYS = frozenset(
    {"body", "text", "message", "subject", "note", "notes", "description", "content", "question", "reply", "title"}
)
"""Arguments whose value is text the planner wrote to a person or a record."""

_ROUGH_MIN = 15
_BOUND_MIN = 60
_AFTER = re.compile(r"\b(?:after|from|no\s+earlier\s+than)\s+(?:about\s+|around\s+)?$", re.I)
_RE_TEMP = re.compile(
    r"(?<![\w.,])(?:(-?\d+(?:[.,]\d+)?)\s*(?:°\s*[CF]?\s*)?(?:to|-|–|and)\s*)?(-?\d+(?:[.,]\d+)?)\s*"
    r"(?:°\s*([CF])\b|°|(?P<half>and\s+a\s+half\s+)?degrees?(?:\s+(celsius|fahrenheit|c|f)\b)?)",
    re.I,
)
_RE_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_RE_WEEKDAY_NEAR_DATE = re.compile(rf"\b({WEEKDAY})\b,?\s+(?:the\s+)?$", re.I)
_END_KEYS = re.compile(r"(?:^|_)(?:end|ends|until|arrives?|arrival|finish|finishes|close|closes)(?:$|_)", re.I)
_END_CUE = re.compile(
    r"(?:\b(?:until|till|to|through|ends?|ending|ended|finish\w*|over|arriv\w*|lands?|landing|gets?\s+in|back"
    r"|(?:turns?|turning|switch\w*|goes|going|comes?|coming)\s+(?:itself\s+)?off"
    r"|by|out|closes?|done)\b|[-–—]|\bbetween\b[^.;]{1,24}\band\b)\W*(?:[\w/]+\W+){0,3}$",
    re.I,
)
_ACTION_BEFORE = re.compile(
    r"\b(?:mov|reschedul|chang|shift|push|postpon|set|book|reserv|schedul|add|creat|updat|put|block|plac|order"
    r"|paid|pay|transferr|sent|send|request|remind)\w*\b(?:(?:\s+[^\s.;,!?]+){0,4}?\s+(?:to|for|at|on)\s+(?:the\s+)?"
    r"|\s+(?:you\s+|them\s+|him\s+|her\s+)?)$",
    re.I,
)
_SPAN_ACT = re.compile(
    r"\b(?:put|added|created|booked|scheduled|blocked|reserved|made)\b(?:\s+\w+){0,3}\s+an?\s+$", re.I
)
"""An act that made a record, told with the record's length as an adjective: "put a three-hour
brunch in your calendar", "booked a 90-minute slot"."""
_CALL_DIRECTIONS = {"outgoing": "out", "outbound": "out", "incoming": "in", "inbound": "in", "missed": "missed"}
_RE_CALL_KIND = re.compile(r"\b(outgoing|outbound|incoming|inbound|missed)\s+(?:phone\s+)?call\b", re.I)
"""A call told by its direction ("your outgoing call to Donald"): the ``direction`` of the call the
episode acted on."""
_MONEY_BEFORE = re.compile(r"(?:pounds?|dollars?|euros?|yen|francs?|[€$£¥]\s*\d+)\s*(?:and\s+)?$", re.I)
_OTHER_AMOUNT = re.compile(
    r"[€$£¥]\s?\d|\d\s?(?:[A-Z]{3}|euros?|dollars?|pounds?|yen)\b|\b(?:than|compared|versus|vs)\b"
)
_AS_IT_WAS = re.compile(
    r"\b(?:cancell?|delet|remov|eras|disabl|enabl|(?:turn|switch)\w*\s+(?:off|on))\w*\s+(?:your\s+|my\s+|the\s+|that\s+"
    r"|this\s+)?(?:(?:(?!(?:and|then|but|while|so|told|texted|sent|moved|booked)\b)[^\s.;,!?]+\s+){1,5}?"
    r"(?:at|on|for|from)\s+(?:(?!(?:and|then)\b)[^\s.;,!?]+\s+(?:at\s+)?)?)?$",
    re.I,
)
"""What was cancelled, deleted or switched is told as it was, a value of the record acted on
("Cancelled your 20:00 table", "Turned off your 7:45 alarm", "Cancelled your Taj Garden dinner
on Monday at 20:30"), whether or not the act changed it."""
_OTHERS_ACT = re.compile(r"(?:\b(?:he|she|they|who|which)|(?<!^)(?<![.!?]\s)\b(?!I\b)[A-Z][a-z]+)\s+$")
"""Who did the act a verb tells, when it is not the planner: a pronoun or a name right before
it ("Marlene sent", "she moved")."""
_LISTED = re.compile(r"\s*(?:,|&|\band\b|,\s*and\b)\s*(?:at\s+|on\s+)?", re.I)
_GAP_AFTER = re.compile(r"\s+(?:before|after|earlier|later|ahead\s+of|sooner)\b", re.I)
_RE_CODE_TOKEN = re.compile(r"(?<![\w-])(?=[A-Z0-9-]*\d)(?=[A-Z0-9-]*[A-Z])[A-Z0-9][A-Z0-9-]{4,}[A-Z0-9](?![\w-])")
"""A code as records hold it: six characters or more of capitals, digits and hyphens, with a
digit and a capital ("5AGLN4", "RS9-11281930", "TK2JZD")."""
RE_CODE_TOLD = re.compile(
    r"\b(?:code|confirmation(?:\s+(?:code|number))?|reference|ref\.?|PNR|booking\s+(?:number|ref))"
    r"(?:\s+(?:is|was))?\s*[:#]?\s*((?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9][A-Za-z0-9-]{4,}[A-Za-z0-9])\b",
    re.I,
)
"""A code told as one ("code 5AGL4N", "booking ref: TK2JDZ", "confirmation number RS9-1128")."""
RE_DIGIT_CODE_TOLD = re.compile(
    r"\b(?:code|pin|passcode|passkey|combination)\b[^.;!?\n\d]{0,40}?(?<![\w.,:/#$\u20ac\u00a3\u00a5-])(\d{3,8})(?![\w\u00b0%]|[.,:/-]\d)",
    re.I,
)
"""A code of digits told after its name ("the gate code of our building is 4716", "PIN: 0451",
"the new gate code, 4617"): the digits, three to eight."""
_DIGIT_RUN = re.compile(r"(?<!\d)\d{3,8}(?!\d)")


RE_SERVICE_NUMBER = re.compile(r"(?<![\w-])([A-Z]{2})\s?(\d{2,4})(?![\w-])")
"""A flight or train number: a carrier's two capitals and two to four digits ("AR 747", "ICE578"
is not: three letters)."""


def _service_numbers(values: Any, skip: frozenset[str] = frozenset()) -> set[str]:
    """The flight and train numbers (:data:`RE_SERVICE_NUMBER`, spaces left out: "AR747") in the
    strings of ``values`` (JSON), those in ``skip`` (stripped: the planner's own words) aside."""
    return {
        m[1] + m[2]
        for x, _, _, _ in _walk(values)
        if isinstance(x, str) and len(x) <= 4000 and x.strip() not in skip
        for m in RE_SERVICE_NUMBER.finditer(x)
    }


_BOOKED_LEAD = re.compile(
    r"\b(?:booked|reserved|bought|got\s+you\s+(?:on|a\s+seat\s+on)|checked\s+(?:you\s+|them\s+)?in)\b(?P<rest>.*)$",
    re.I,
)
"""A clause up to a flight or train number that tells it as the one booked ("Booked the flight
SK 431", "checked you in for ER 222")."""
_NOT_THIS_ONE = re.compile(r"\b(?:instead|rather|than|not|over|cheaper|earlier|later|faster|unlike|vs)\b", re.I)
"""Words that make the number after a booking another one ("booked SK 431 rather than SK 319")."""


def _shape(code: str) -> str:
    """A code's shape: its letters as ``A``, its digits as ``9`` ("SP325" → "AA999")."""
    return re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", code))


def code_key(code: str) -> str:
    """``code`` as codes are compared: upper case, hyphens left out ("rs9-1128" → "RS91128")."""
    return code.upper().replace("-", "")


def _codes_in(values: Sequence[Any]) -> set[str]:
    """The codes (:data:`_RE_CODE_TOKEN`, as :func:`code_key`) in the strings of ``values``."""
    return {
        code_key(m.group())
        for x, _, _, _ in _walk(values)
        if isinstance(x, str) and len(x) <= 4000
        for m in _RE_CODE_TOKEN.finditer(x)
    }


_FROM_BEFORE = re.compile(r"\bfrom\s+(?:about\s+|around\s+)?$", re.I)
# words that tell a value as it was before ("you had 292131 before", "up from 100"): where an
# amount only the changed records' old versions hold may be told
_PAST_CUE = re.compile(
    r"\b(?:was|were|had|from(?=\s+(?:about\s+|around\s+)?[\d$€£¥])|(?:up|down)\s+from|before|previous(?:ly)?"
    r"|(?:chang|mov|switch|updat|rais|lower|reduc|increas|edit|fix)\w*\b[^.;!?]{0,60}?\bfrom"
    r"|used\s+to|old|earlier|formerly)\b",
    re.I,
)
_FIELD_WORDS = r"due|remind\w*|arriv\w*|eta|deliver\w*|until|till|ends?|ending"
_FIELD_CUE = re.compile(
    rf"\b({_FIELD_WORDS})\b(?:(?!\b(?:{_FIELD_WORDS}|and|but|then|while|ordered|placed|booked|sent|left|started)\b"
    r"|\s[-\u2013\u2014]\s)[^.;!?()])*$",
    re.I,
)
"""A word before a time that names the field it is of: "due at 13:00", "I'll remind you at 12:00",
"with a reminder on Thursday at 11:00", "it arrives around 09:10" (no other such word or "and"
between)."""
_HHMM = re.compile(r"(?:^|T)(\d{2}:\d{2})(?::\d{2})?$")
"""The time of day a time or stamp field ends with: "05:30", "2026-11-26T12:00"."""
_FIELD_KEYS = {
    "due": ("due", "due_at", "deadline"),
    "reminder": ("reminder", "remind_at", "reminder_at"),
    "arrival": ("eta", "arrival", "arrives", "arrival_time", "arrive_at", "delivery_eta"),
    "end": ("until", "end", "ends", "end_time", "ends_at"),
}


_DATE_CUE_WORDS = r"due|paid|pay|payment|scheduled|lands|landing|arrives|arriving|arrival|gets\s+in(?:to)?"
_DATE_CUE = re.compile(
    rf"\b({_DATE_CUE_WORDS})\b(?:(?!\b(?:{_DATE_CUE_WORDS}|and|but|then|while|leaves|leaving|departs|departing)\b)"
    r"[^.;!?()])*$",
    re.I,
)
"""A word before a date that names the field it is of: "due on 2 December", "will be paid on
Tuesday", "scheduled for the 1st", "lands in Tokyo Friday" (no other such word or "and"
between)."""
_DATE_KEYS = {
    "due": ("due", "due_at", "due_date", "deadline"),
    "paid": ("scheduled_for", "paid_on", "pay_on", "payment_date", "scheduled"),
    "arrival": ("arrives", "arrival", "arrives_at", "arrival_time", "eta", "end"),
}


def _field_dates(values: Sequence[Any]) -> dict[str, frozenset[str]]:
    """The dates (``YYYY-MM-DD``) the records and arguments in ``values`` hold in a due or
    payment field (:data:`_DATE_KEYS`), by field: what "due on" and "paid on" must tell."""
    out: dict[str, set[str]] = {}
    for v in values:
        if isinstance(v, Mapping):
            for name, keys in _DATE_KEYS.items():
                for k in keys:
                    if isinstance(x := v.get(k), str) and re.match(r"\d{4}-\d{2}-\d{2}", x.strip()):
                        out.setdefault(name, set()).add(x.strip()[:10])
    return {k: frozenset(x) for k, x in out.items()}


_TEMP_KEYS = re.compile(r"high|low|max|min|temp|temperature|feels_like|(?:high|low|max|min|temp)_[cf]", re.I)


def _mappings(values: Any, limit: int = 400) -> Iterable[Mapping[str, Any]]:
    """Every mapping in ``values`` (a JSON value: call results, records), nested ones too, at
    most ``limit`` of them."""
    stack = [values]
    seen = 0
    while stack and seen < limit:
        v = stack.pop()
        if isinstance(v, Mapping):
            seen += 1
            yield v
            stack.extend(x for x in v.values() if isinstance(x, (Mapping, list, tuple)))
        elif isinstance(v, (list, tuple)):
            stack.extend(v)


def _dated_temperatures(values: Sequence[Any]) -> list[tuple[str, frozenset[float]]]:
    """``(day, temperatures)`` of each record in ``values`` (call results) with a ``date`` and
    temperature fields (a forecast's day: its high and low)."""
    out = []
    for v in _mappings(values):
        day = v.get("date")
        temps = frozenset(
            round(float(x), 1)
            for k, x in v.items()
            if _TEMP_KEYS.fullmatch(str(k)) and isinstance(x, (int, float)) and not isinstance(x, bool)
        )
        if isinstance(day, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) and temps:
            out.append((day, temps))
    return out


def _place_claims(text: str, g: Grounds) -> list[tuple[str, tuple[str, ...], str]]:
    """``(said, held, why)`` of each place ``text`` tells that is where a record read is (its
    :data:`_PLACE_KEYS` field), in a sentence about other records that are elsewhere: the
    records the other words of its part name (:meth:`Grounds.anchors`; a part ends at a comma,
    a bracket, "and"), or where they name none, its sentence's, or where that names none, the
    records the episode changed, or where it changed none with a place, those the user's request
    names. "It's at Bright Smile Dental" answering "where is my film night?"
    is about the film night at North Park gate: the dental practice is another event's place."""
    where, told = g.places
    if not where and not g.changed_places:
        return []
    goal = g.user_texts[0] if g.user_texts else ""

    def about(start: int, end: int) -> tuple[tuple[str, ...], str] | None:
        """The places of what the text at ``start:end`` is about, and what that is."""
        if apposition := re.match(r"\s*\([^()]*\)", text[end:]):
            end += apposition.end()  # "Trattoria Roma (70 Park Avenue)": the bracket tells of the place itself
        for bound in (_PART, _CLAUSE):  # its part ("Team standup at 10:30, at Room 4.12"), then its sentence
            a = max((e.end() for e in bound.finditer(text, 0, start)), default=0)
            z = bound.search(text, end)
            if named := g.anchors(text[a:start] + " " + text[end : z.start() if z else len(text)], "place"):
                if bound is _PART:
                    in_part.add(start)
                return tuple(x for n in named for x in n.places), ", ".join(dict.fromkeys(n.label for n in named))
        if g.changed_places:  # what the episode changed ("Dinner is at ..." for the event it made)
            return tuple(x for ps in g.changed_places for x in ps), "what the episode changed"
        if goal and (named := g.anchors(goal, "place")):  # what the user asked of
            return tuple(x for n in named for x in n.places), ", ".join(dict.fromkeys(n.label for n in named))
        return None

    out: list[tuple[str, tuple[str, ...], str]] = []
    in_part: set[int] = set()  # the places whose own part names what they are about
    low = text.lower()
    seen: list[tuple[int, int]] = []
    for m in told.finditer(low) if told is not None else ():
        p, owners = m[0], where[m[0]]
        seen.append(m.span())
        if " " not in p and text[m.start() : m.end()].islower():
            continue  # "your phone will stay quiet": a common word, not the place called "Phone"
        if (found := about(m.start(), m.end())) is None or any(x.lower() == p for x in found[0]):
            continue
        held = tuple(dict.fromkeys(found[0]))[:3]
        why = f"{found[1]} is at {', '.join(held)}; {p} is where {owners[0].label} is"
        out.append((text[m.start() : m.end()], held, why))
    # a place no record holds, told as where something is ("It's at Harbour Hall", ", at 117 Harbour Road")
    texts: list[str] | None = None
    for m in itertools.chain(_RE_AT_PLACE.finditer(text), _RE_ROOM.finditer(text)):
        a, z = m.span("place")
        if any(s <= a < e for s, e in seen) or (found := about(a, z)) is None or not found[0]:
            continue
        if texts is None:
            texts = [words(x) for x in (*g.world_names, *g.user_texts, *found[0], *where)]
            held_words = [words(x) for x in (*g.user_texts, *found[0], *where)]
        # "your yoga at City Gym", its part naming the yoga class at Lotus Yoga Studio: another place of
        # the world is no excuse; told in a part that names nothing, any place the world holds may be meant
        if any(words(m["place"]) in t for t in (held_words if a in in_part else texts)):
            continue
        held = tuple(dict.fromkeys(found[0]))[:3]
        out.append((m["place"], held, f"{found[1]} is at {', '.join(held)}; no record holds {m['place']}"))
    return out


_STREET_WORDS = {
    "street": "street", "st": "street", "road": "road", "rd": "road", "avenue": "avenue", "ave": "avenue",
    "lane": "lane", "ln": "lane", "way": "way", "drive": "drive", "dr": "drive", "boulevard": "boulevard",
    "blvd": "boulevard", "place": "place", "pl": "place", "square": "square", "sq": "square", "court": "court",
    "ct": "court", "terrace": "terrace", "row": "row", "parade": "parade", "quay": "quay", "crescent": "crescent",
    "close": "close",
}  # fmt: skip
_RE_STREET = re.compile(
    r"(?<![\w.,-])(?P<num>\d{1,4}[A-Za-z]?)\s+(?P<street>(?:[A-Z][\w'\u2019-]*\s+){1,3}(?i:"
    + "|".join(_STREET_WORDS)
    + r"))\b\.?"
    r"|(?P<street2>[A-Z][\w\u00df-]*(?i:stra(?:ss|\u00df)e|str\.|weg|platz|allee|gasse|damm|ring|ufer))\s+(?P<num2>\d{1,4}[A-Za-z]?)\b"
    r"|(?<![\w.,-])(?P<street3>[A-Z][\w'\u2019-]*(?:\s+[A-Z][\w'\u2019-]*){0,2})\s+(?P<num3>\d{1,4}[A-Za-z]?)(?=,\s*[A-Z][a-z])"
)
"""A street address told: a house number and a street ("57 Park Avenue", "12 Harbour Rd"), or a
street and its number ("Kantstra\u00dfe 12"; "Harbour 48, Tokyo" and "Main Street 5, Leeds",
with the town after them)."""


def _street_of(m: re.Match[str]) -> tuple[str, str]:
    """``(street, number)`` of a :data:`_RE_STREET` match, the street in lower case with its kind
    written out ("harbour road" for "Harbour Rd")."""
    if m["street2"]:
        return m["street2"].lower().replace("str.", "strasse").replace("\u00df", "ss"), m["num2"].lower()
    *name, kind = (m["street"] or m["street3"]).lower().split()
    return " ".join([*name, _STREET_WORDS.get(kind.rstrip("."), kind)]), (m["num"] or m["num3"]).lower()


def _address_slips(text: str, g: Grounds) -> list[tuple[str, tuple[str, ...], str]]:
    """``(said, held, why)`` of each street address ``text`` tells whose street the world holds
    only at other house numbers ("75 Park Avenue" where the gym the episode saved is at 57 Park
    Avenue): the numbers of the street in the records the calls returned, the changed records,
    the goal and memory."""
    told = list(_RE_STREET.finditer(text))
    if not told or g.episode is None:
        return []
    held: dict[str, set[str]] = {}
    sources = [*g.user_texts, *g.world_names]
    values = [c.feedback.result for c in g.episode.calls if c.ok and c.feedback.result is not None]
    sources += [x for x, _, _, _ in _walk([*values, *g.episode.now]) if isinstance(x, str) and len(x) <= 200]
    for s in sources:
        for m in _RE_STREET.finditer(s):
            street, num = _street_of(m)
            held.setdefault(street, set()).add(num)
    out: list[tuple[str, tuple[str, ...], str]] = []
    for m in told:
        street, num = _street_of(m)
        if street in held and num not in held[street]:
            nums = tuple(sorted(held[street]))[:3]
            out.append((m[0].strip(), nums, f"the world holds {street} at number {', '.join(nums)} only"))
    return out


_RE_AT_PLACE = re.compile(
    r"(?:\b(?:is|are|was|were|be)\s+|['\u2019]s\s+|,\s*|\b(?i:with)\s+[A-Z][a-z]+\s+|\b(?i:your|my)\s+[a-z][\w-]*\s+"
    rf"|\b(?i:{WEEKDAY}|today|tomorrow|tonight|\d{{1,2}}(?::\d{{2}})?(?:\s*[ap]\.?m\.?)?)\s+)(?:now\s+|still\s+)?at\s+(?:the\s+)?"
    r"(?!\d{1,2}(?:[:.]\d{2})?\s*[AaPp]\.?[Mm]\b)"  # "is now at 7 PM": a time
    r"(?P<place>(?:\d{1,4}[A-Za-z]?\s+)?[A-Z][\w'&-]*(?:\.[\w'&-]+)*"
    r"(?:\s+(?:[A-Z][\w'&-]*(?:\.[\w'&-]+)*|\d{1,4}(?:[.,]\d+)?[A-Za-z]?\b|of|de|la|am|on))*)"
)
"""A place told as where something is: "It's at Harbour Hall", "..., at 117 Harbour Road", "on
Thursday at Cafe Luna", "coffee with Linda at Cafe Luna", "your yoga at Lotus Yoga Studio"; not a
time ("is now at 7 PM")."""
_RE_ROOM = re.compile(r"(?<![\w.])(?P<place>(?:Room|Rm\.?|Hall|Gate|Platform)\s+\d[\w.]*\w)", re.I)
"""A numbered room, hall, gate or platform told anywhere ("(Thursday, 14:00, Room 1.01)")."""


_TEMP_LABEL = re.compile(
    r"\b(highs?|top|max|maximum|lows?|min|minimum)\b(?:\s+(?:of|at|is|was|will\s+be))?\s*:?\s*(?:around\s+|about\s+)?$",
    re.I,
)
"""A word that tells which of a day's temperatures a value is: "high 13°C", "a low of 2"."""


def _temperature_labels(values: Sequence[Any]) -> dict[str, frozenset[float]]:
    """``{"high": ..., "low": ...}``: the values of the fields ``high``/``max``/``temp_max`` and
    ``low``/``min``/``temp_min`` of ``values`` (call results), to one decimal."""
    out: dict[str, set[float]] = {}
    for x, key, _, _ in _walk(values):
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            k = key.lower()
            which = (
                "high"
                if k in ("high", "max", "temp_max", "high_c", "high_f")
                else "low"
                if k in ("low", "min", "temp_min", "low_c", "low_f")
                else None
            )
            if which:
                out.setdefault(which, set()).add(round(float(x), 1))
    return {k: frozenset(v) for k, v in out.items()}


_PART_OF_TODAY = re.compile(r"\b(?:this\s+(?:morning|afternoon|evening)|tonight|earlier\s+today)\b", re.I)


_OTHERS_DID = re.compile(
    r"(?:\b(?i:he|she|they|who)|(?<![\w'])(?!(?:I|Then|And|So|Also|Just|Done|You|We)\b)[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)"
    r"(?:\s+\([^)]*\))?\s+(?:also\s+|last\s+|just\s+)?(?:called|rang|phoned|texted|messaged|e-?mailed|wrote|sent|replied|left|tried\s+to\s+call)\b"
    r"[^.;!?]*$"
)
"""Someone else's act told before a day ("They called this morning", "Yui Okada (+81...) called at
16:39 today"): the day of a record the planner read."""
_MODES = {
    "bicycle": "bike",
    "cycling": "bike",
    "walking": "walk",
    "driving": "drive",
    "car": "drive",
    "public": "transit",
}
_RE_MODE = re.compile(
    r"\b(?:by\s+)?(bike|bicycle|cycl\w*|walk\w*|on\s+foot|driv\w*|by\s+car|car|transit|bus|train|public\s+transport|subway|metro|tram)\b",
    re.I,
)


def _mode_near(text: str, start: int, end: int) -> str | None:
    """The way of travel told beside a duration at ``start:end`` of ``text`` (the nearest in its
    clause, within 25 characters): "15 minutes by bike" → "bike", "a 20-minute walk" → "walk"."""
    a = max((e.end() for e in _CLAUSE.finditer(text, 0, start)), default=0)
    z = _CLAUSE.search(text, end)
    near = list(_RE_MODE.finditer(text, max(a, start - 25), min(z.start() if z else len(text), end + 25)))
    if not near:
        return None
    closest = min(near, key=lambda m: (m.start() - end) if m.start() >= end else (start - m.end()) + 0.5)
    w = closest[1].lower()
    if w.startswith(("bike", "bicycle", "cycl")):
        return "bike"
    if w.startswith("walk") or w.startswith("on"):
        return "walk"
    if w.startswith(("driv", "by car", "car")):
        return "drive"
    return "transit"


_LASTS = re.compile(
    r"\b(?:runs?|running|lasts?|lasting|goes\s+on|takes?)\s+(?:for\s+)?(?:about\s+|around\s+|roughly\s+|just\s+)?$",
    re.I,
)
"""A word before a duration that tells how long a record runs ("It runs for an hour", "lasts 30 min")."""
_ENUM_KEYS = ("category", "label", "severity", "priority")
_ENUM_KNOWN = {"label": frozenset({"home", "work", "mobile", "cell", "office"})}
"""Fields whose few values an answer names ("under health", "as a home number"), and values a
field may hold beside those the world shows."""


def _enum_values(
    changed: Sequence[Any], ctx: Context, limit: int = 2000
) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Field → (the values the changed records hold in it now, every value the fixtures and
    :data:`_ENUM_KNOWN` give it), lower case, for the :data:`_ENUM_KEYS` the changed records
    hold (nested ones too: a contact's ``other_phones[].label``)."""
    mine: dict[str, set[str]] = {}
    for x, key, _, _ in _walk(list(changed[:200])):
        key = "label" if key.endswith("_label") else key  # a contact's "phone_label"
        if key in _ENUM_KEYS and isinstance(x, str) and 3 <= len(x) <= 30:
            mine.setdefault(key, set()).add(x.strip().lower())
    if not mine:
        return {}
    known: dict[str, set[str]] = {k: set(_ENUM_KNOWN.get(k, ())) for k in mine}
    recs = itertools.islice((r for tab in ctx.before.values() if isinstance(tab, Mapping) for r in tab.values()), limit)
    for x, key, _, _ in _walk(list(recs)):
        key = "label" if key.endswith("_label") else key
        if key in known and isinstance(x, str) and 3 <= len(x) <= 30:
            known[key].add(x.strip().lower())
    return {k: (frozenset(v), frozenset(known[k] | v)) for k, v in mine.items()}


_ENUM_CUE = re.compile(
    r"\b(?i:under|in|as|to|into|now)\s+(?:(?i:the|a|an|your|their|his|her)\s+|[A-Z]\w+['\u2019]s\s+)?$"
)
_ENUM_ACT = re.compile(
    r"\b(?:now|saved|added|filed|moved|set|changed|updated|fixed|put|labell?ed|categori[sz]ed|recategori[sz]ed|marked|stored)\b",
    re.I,
)


def _enum_claims(text: str, g: Grounds) -> list[tuple[str, tuple[str, ...], str]]:
    """``(said, held, why)`` of each value of an :data:`_ENUM_KEYS` field told of the planner's
    change ("Fixed: the expense is now under shopping", "Saved it as a work number") that the
    changed records do not hold in that field: the value right after "under", "as a", "to",
    "now"... in a clause that tells the act or "now", not as it was ("from shopping")."""
    out = []
    low = text.lower()
    for key, (mine, known) in g.enums.items():
        for v in known - mine:
            for m in re.finditer(rf"(?<![\w-]){re.escape(v)}(?![\w-])", low):
                a = max((e.end() for e in _CLAUSE.finditer(text, 0, m.start())), default=0)
                lead = text[a : m.start()]
                if not _ENUM_CUE.search(lead) or not _ENUM_ACT.search(lead) or _PAST_CUE.search(lead):
                    continue
                if re.search(r"\b(?:not|never|instead\s+of|rather\s+than)\b|n't", lead, re.I):
                    continue
                held = tuple(sorted(mine))
                out.append((text[m.start() : m.end()], held, f"the episode's change holds {key} {', '.join(held)}"))
    # a severity told of what was read ("It's an extreme warning" for a moderate one)
    read = g.read_severities if _RE_SEVERITY.search(low) else frozenset()
    for v in _SEVERITIES - read if read else ():
        for m in re.finditer(rf"(?<![\w-]){v}(?![\w-])(?=\s+(?:\w+\s+)?(?:warning|alert|advisory|watch)s?\b)", low):
            held = tuple(sorted(read))
            out.append((text[m.start() : m.end()], held, f"the warnings read are {', '.join(held)}"))
    return out


_RE_PURPOSE = re.compile(
    r"\b(?i:that|it|this|which)\s+(?i:was)\s+for\s+(?i:the\s+|your\s+|their\s+)?(?P<what>[A-Za-z][\w' -]{2,40}?)\s*(?:[.;!,]|$)"
)
"""What a payment or request is told to be for: "That was for the concert tickets"."""
_RE_PAID_FOR = re.compile(
    r"(?:[\u00a3$\u20ac\u00a5]\s?\d[\d.,]*|\d[\d.,]*\s?(?i:gbp|eur|usd|aud|jpy|chf|cad|pounds?|euros?|dollars?|yen))"
    r"(?:\s+(?i:back|each|apiece))?\s+(?i:for)\s+(?i:the\s+|your\s+|their\s+|his\s+|her\s+)?"
    r"(?P<what>[A-Za-z][\w' -]{2,40}?)\s*(?:[.;!,)]|\s[-\u2013\u2014]\s|$)"
)
"""What a payment or request is told to be for, after its amount: "Paid Clive back \u00a318 for the
groceries"."""
_NOT_A_THING = re.compile(
    rf"\b(?:{WEEKDAY}|today|tonight|tomorrow|yesterday|morning|evening|afternoon|week|month|year|you|me|him|her|them|us"
    r"|people|persons|guests|two|three|four|five|six|a|an|one|both|all|real|sure|free|nothing)\b",
    re.I,
)
"""Words that make "it was for ..." no thing a payment was for ("it was for tomorrow", "for two")."""
_RE_NO_CLASH = re.compile(
    r"\bno\s+(?:clash(?:es)?|conflicts?|overlaps?)\b|\b(?:does\s+not|doesn't|won't|will\s+not)\s+(?:clash|conflict|overlap)\b"
    r"|\bnothing\s+(?:clashes|conflicts|overlaps)\b",
    re.I,
)
"""A conflict denied: "No clashes with anything else", "it doesn't clash with anything"."""
_RE_VOICEMAIL = re.compile(
    r"(?:\b(?P<who>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)|\b(?i:they|he|she))\s+(?:also\s+)?left\s+(?:you\s+)?(?:a\s+)?"
    r"(?i:voice\s?-?mail|voice\s+message)"
)
"""A voicemail told as left: "Maureen left you a voicemail too", "they left a voice message"."""


def _no_voicemail(m: re.Match[str], ctx: Context) -> str:
    """Why the voicemail ``m`` tells of is none the phone holds ("" where it holds one): no
    voicemail at all, or none from the contact named."""
    vms = [
        r
        for tables in (ctx.tables, ctx.before)
        for r in (tables.get("phone.voicemails") or {}).values()
        if isinstance(r, Mapping)
    ]
    if not vms:
        return "the phone holds no voicemail"
    who = m["who"]
    if who and (ids := contact_ids(who, ctx.contacts)):
        numbers = {
            normal_phone(str(c.get(k)))
            for c in ctx.contacts
            if str(c.get("id")) in ids
            for k in ("phone", "mobile", "work_phone")
            if c.get(k)
        }
        if not any(normal_phone(str(r.get("number") or "")) in numbers for r in vms):
            return f"the phone holds no voicemail from {who}"
    return ""


_RE_SAID = re.compile(
    r"\b(?P<who>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)(?:['\u2019]s\s+(?:voicemail|message|text|e-?mail|note)\s+(?:says|said|reads)"
    r"|\s+(?:said|says|wrote|writes|texted|asked|e-?mailed|messaged))\s*[:,]?\s*[\"\u201c'\u2018]?(?P<quote>[^\"\u201d\u2019\n]{12,})"
)
"""A message told with its sender: "Maaya said: Hey, I left the keys...", "Ana wrote 'See you at 6'"."""
_BOOL_STATUS = {
    "locked": ("locked", "unlocked"),
    "paid": ("paid", "unpaid"),
    "archived": ("archived", "unarchived"),
    "pinned": ("pinned", "unpinned"),
    "subscribed": ("subscribed", "unsubscribed"),
    "liked": ("liked", "unliked"),
    "downloaded": ("downloaded", "undownloaded"),
    "enabled": ("enabled", "disabled"),
    "on": ("on", "off"),
}
"""A record's yes/no field that is a status word: its value as the status it says (a door's
``"locked": true`` is "locked", ``false`` "unlocked")."""
_FLAG_WORDS = frozenset(
    w for key in ("pinned", "subscribed", "liked", "downloaded", "enabled", "on") for w in _BOOL_STATUS[key]
)
"""The states of a record's switches (a note pinned, a lamp on): beside a state of another kind
("locked", "paid"), a record holding only these tells nothing of it."""
_SUBCLAUSE = re.compile(r"[,;:]\s+(?:(?:and|but|while|so)\s+)?|\s[-\u2013\u2014]\s+")
"""Where a part of a sentence with its own subject starts: "..., and the 7:15 alarm is off"."""
_AUX_ONLY = re.compile(
    r"[\s\W]*(?:(?:is|are|was|were|has|have|had|been|now|just|already|also|all|both|still)\b[\s\W]*)*"
)
"""A part of a sentence with no subject of its own ("is now"): its subject came before."""
_PRONOUN_LEAD = re.compile(r"\s*(?:it|its|it['\u2019]s|they|they['\u2019]re|this|that one)\b", re.I)
"""A clause that opens with a pronoun for a thing: it is about what the clause before it names."""
_PERSON_KEYS = ("contact", "from", "sender", "from_name", "author", "name", "number", "from_number")


def _misquoted(text: str, g: Grounds, ctx: Context) -> list[tuple[str, str]]:
    """``(said, why)`` of each message ``text`` tells with a sender ("Kana said: Hey, Maaya
    here...") where a record the episode read holds those words (the first six) and is from
    someone else, by its ``contact``/``from``/``sender``/``number`` field."""
    if g.episode is None:
        return []
    out = []
    for m in _RE_SAID.finditer(text):
        head = " ".join(words(m["quote"]).split()[:6])
        ids = contact_ids(m["who"], ctx.contacts)
        if len(head.split()) < 4 or not ids:
            continue
        senders = [  # per record read that holds the words: the contacts it is from
            {p for k in _PERSON_KEYS if isinstance(p := rec.get(k), str) and p and contact_ids(p, ctx.contacts)}
            for c in g.episode.calls
            for rec in _mappings(getattr(c.feedback, "result", None))
            if any(isinstance(v, str) and len(v) > 11 and head in words(v) for v in rec.values())
        ]
        senders = [x for x in senders if x]
        if senders and not any(contact_ids(p, ctx.contacts) & ids for x in senders for p in x):
            sender = min(senders[0], key=lambda p: (p[:1] in "+0123456789", p))  # a name before a number
            out.append((m["who"], f"those words are from {sender}'s message"))
    return out


_SEVERITIES = frozenset({"minor", "moderate", "severe", "extreme", "mild", "major", "critical"})
"""Words for how bad a warning is: one told must be a severity of the warnings read."""
_RE_SEVERITY = re.compile(r"\b(?:" + "|".join(sorted(_SEVERITIES)) + r")\b")


_LINE_QTY_KEYS = ("qty", "quantity", "count")
_LINE_NAME_KEYS = ("name", "item", "product", "dish", "title")


def _line_counts(values: Sequence[Any]) -> dict[str, frozenset[int]]:
    """An item's name (lower case) → the quantities of the lines that hold it, in ``values``
    (the changed records and the writes' arguments and results): an order's ``{"name": "Salmon
    Maki", "qty": 2}``. What "Ordered three Salmon Maki" must agree with."""
    out: dict[str, set[int]] = {}
    for v in _mappings(values):
        qty = next((v[k] for k in _LINE_QTY_KEYS if isinstance(v.get(k), int) and not isinstance(v.get(k), bool)), None)
        name = next((v[k] for k in _LINE_NAME_KEYS if isinstance(v.get(k), str)), None)
        if qty is not None and name and 3 <= len(name.strip()) <= 60 and 0 < qty < 1000:
            out.setdefault(" ".join(name.lower().split()), set()).add(qty)
    return {k: frozenset(x) for k, x in out.items()}


def _dated_by_temperature(t: str, c: Any, g: Grounds) -> tuple[tuple[str, ...], str] | None:
    """``(held, why)`` where date claim ``c`` in ``t`` is told in a sentence with a temperature
    that only days other than it hold (the days read, :attr:`Grounds.dated`): "Today in Seoul:
    cloudy, high 13°C" for tomorrow's forecast. None where no day read holds the temperatures."""
    a = max((m.end() for m in re.finditer(r"[.;!?\n]+(?:\s|$)", t[: c.start])), default=0)
    z = re.compile(r"[.;!?\n]+(?:\s|$)").search(t, c.end)
    told = [v for _, v, _, neg in temperature_claims(t[a : z.start() if z else len(t)]) if not neg]
    if not told or not isinstance(c.value, str):
        return None
    days = sorted({d for d, temps in g.dated if any(round(v, 1) in temps for v in told)})
    if (
        not days
        or c.value in days
        or not all(v in {x for d, temps in g.dated if d in days for x in temps} for v in told)
    ):
        return None
    return tuple(days[:3]), f"the day read with {', '.join(f'{v:g}' for v in told)}° is {', '.join(days[:3])}"


def _cue_field(word: str) -> str:
    """The field (:data:`_FIELD_KEYS`) a cue word names: "due", "reminder", "arrival" or "end"."""
    w = word.lower()
    if w in ("until", "till") or w.startswith("end"):
        return "end"
    return "due" if w == "due" else "reminder" if w.startswith("remind") else "arrival"


def _time_spans(records: Iterable[Mapping[str, Any]]) -> frozenset[tuple[str, str]]:
    """``(start, end)`` times (``HH:MM``) of each record with a pair of :data:`_DAY_PAIRS` fields or
    a delivery window (``window_start``/``window_end``) that both end in a time of day."""
    return frozenset(
        (a[1], b[1])
        for r in records
        for ks, ke in (*_DAY_PAIRS, ("window_start", "window_end"))
        if isinstance(r.get(ks), str)
        and isinstance(r.get(ke), str)
        and (a := _HHMM.search(r[ks]))
        and (b := _HHMM.search(r[ke]))
    )


def _field_times(values: Sequence[Any]) -> dict[str, frozenset[str]]:
    """The times (``HH:MM``) the records and arguments in ``values`` hold in a due, reminder or
    arrival field (:data:`_FIELD_KEYS`), by field: what "due at", "remind you at" and "arrives
    at" must tell."""
    out: dict[str, set[str]] = {}
    for v in values:
        if not isinstance(v, Mapping):
            continue
        for name, keys in _FIELD_KEYS.items():
            for k in keys:
                if isinstance(x := v.get(k), str) and (m := _HHMM.search(x.strip())):
                    out.setdefault(name, set()).add(m[1])
    return {k: frozenset(x) for k, x in out.items()}


def _labelled_times(records: Sequence[Any]) -> list[tuple[frozenset[str], frozenset[str]]]:
    """``(label words, times)`` of each changed record with a label and a time (an alarm "Wake
    up (backup)" at 05:30), its words lower case, its times ``HH:MM``."""
    out = []
    for r in records[:200]:
        if not isinstance(r, Mapping) or not isinstance(r.get("label"), str):
            continue
        times = {m[1] for k in _START_KEYS if isinstance(x := r.get(k), str) and (m := _HHMM.search(x))}
        if times:
            out.append((frozenset(_TOKEN.findall(r["label"].lower())), frozenset(times)))
    return out


def _labelled_time(g: Grounds, lead: str) -> frozenset[str] | None:
    """The times of the one changed record a word of whose label, and of no other's, ``lead``
    (the words before a time) says: "with a backup at 06:30" is the "Wake up (backup)" alarm's
    time. None where no such word is said."""
    ends = [
        m.end() for m in _PART.finditer(lead)
    ]  # in the time's own part: not "'Walk the dog' is set, and the 7:15 one"
    said = set(_TOKEN.findall(lead[ends[-1] if ends else 0 :].lower()))
    hits = []
    for label, times in g.labelled:
        own = label - set().union(*(w for w, _ in g.labelled if w is not label))
        if own & said:
            hits.append(times)
    return hits[0] if len(hits) == 1 else None


_RELATIVE_DAY = re.compile(r"\s*(?:today|yesterday|tomorrow|tonight|last\s+night)\b", re.I)
_IN_DAYS = re.compile(r"\s*in\s+(\d+)\s+(day|week)s?\s*$", re.I)
_REMINDER_KEYS = re.compile(r"remind|minutes_before|lead", re.I)
_START_KEYS = ("start", "time", "at", "when", "due")
_WEEKDAY_RANGE = re.compile(
    rf"^\s*(?:to|-|\u2013|through|thru|till|until)\s*(?:{WEEKDAY})\b|\b(?:{WEEKDAY})\s*(?:to|-|\u2013|through|thru|till|until)\s*$",
    re.I,
)
"""A weekday that ends a range of days ("Monday to Friday"): days of a schedule, not a date."""
_RE_MONTH_DAY = re.compile(r"-{0,2}(\d{2})-(\d{2})")
_TEMP_KEYS = re.compile(r"temp|high|low|feels", re.I)


@dataclass
class Evidence:
    """The typed values of the world the planner could see (see the module docstring).

    ``times``: ``"HH:MM"``; ``dates``: ``"YYYY-MM-DD"``; ``money``: (amount, ISO currency or
    ``""`` when none is known); ``temps``: (value, ``"C"`` | ``"F"``); ``emails``: lower case;
    ``phones``: E.164 strings; ``end_times``: times that end something (a field ``end``,
    ``arrives``, ``until``...), which ground a time only where the text says it ends
    something ("until 17:00", "arrives 11:10", "16:00-17:00"); ``list_lengths``: the total
    minutes of each list of records with a length field (a playlist's songs), told as a length
    but never moving a time; ``today``: the clock's date (None without a clock)."""

    times: set[str] = field(default_factory=set)
    end_times: set[str] = field(default_factory=set)
    dates: set[str] = field(default_factory=set)
    money: set[tuple[float, str]] = field(default_factory=set)
    world_money: set[tuple[float, str]] = field(default_factory=set)
    temps: set[tuple[float, str]] = field(default_factory=set)
    emails: set[str] = field(default_factory=set)
    phones: set[str] = field(default_factory=set)
    durations: set[int] = field(default_factory=set)
    seconds: set[int] = field(default_factory=set)
    """Durations stated in seconds (a ``*_s`` field), to the second: ``durations`` rounds them to minutes."""
    month_days: set[str] = field(default_factory=set)
    statuses: set[str] = field(default_factory=set)
    counts: set[int] = field(default_factory=set)
    parties: set[int] = field(default_factory=set)
    spans: set[int] = field(default_factory=set)
    list_lengths: set[int] = field(default_factory=set)
    today: dt.date | None = None

    def merge(self, other: Evidence) -> None:
        """Add ``other``'s values to this evidence (its ``today`` kept when set)."""
        for name in (
            "times",
            "end_times",
            "dates",
            "money",
            "world_money",
            "temps",
            "emails",
            "phones",
            "durations",
            "seconds",
            "month_days",
            "statuses",
            "counts",
            "parties",
            "spans",
            "list_lengths",
        ):
            getattr(self, name).update(getattr(other, name))
        self.today = self.today or other.today

    def derived_times(self, later: Iterable[int] = ()) -> set[str]:
        """The evidence times, each moved by an evidence duration either way (an arrival "5
        minutes late" for a 10:00 meeting is 10:05; a reminder "15 minutes before"), and each
        moved forward by one of ``later`` (minutes: a film of 134 minutes from 20:15 ends at
        22:29; an arrival is the clock plus the travel time)."""
        out = set(self.times)
        ahead = set(later) - self.durations
        for t in self.times:
            base = _minutes(t)
            moved = [base + d for d in self.durations] + [base - d for d in self.durations] + [base + d for d in ahead]
            out.update(f"{m // 60 % 24:02d}:{m % 60:02d}" for m in moved)
        return out

    def derived_money(self, partners: Iterable[tuple[float, str]] = (), shares: bool = True) -> set[tuple[float, str]]:
        """The evidence amounts and those the planner could work out from them: zero; the sum
        and difference of two amounts of one currency, where at least one is salient (read,
        written or said by the user: what is left of a budget the phone holds, a shortfall)
        and the other is salient too or one of ``partners``, never an amount of the fixtures the
        planner did not read (``world_money``: it could not have worked with those);
        each salient amount split in 2 to 12 equal shares (to the cent, or to the unit rounded
        down or up); ``money`` also holds the totals of each list read or changed. ``partners``:
        other amounts to combine with these (what was read, beside what was done). ``shares``:
        False leaves the shares out (an amount told with no word of a share: "your £12 request"
        for a request of £24 is no half of it)."""
        out = {*self.money, *self.world_money, (0.0, "")}
        salient = sorted(x for x in self.money if x[0] > 0 and x[1] != BARE)[:150]
        # not with the fixtures' amounts the planner never read: it could not have worked those out
        world = sorted({x for x in partners if x[0] > 0 and x[1] != BARE} - set(salient))[:400]
        for i, (a, ca) in enumerate(salient):
            for n in range(2, 13) if shares else ():
                out.update({(round(a / n, 2), ca), (float(int(a / n)), ca), (float(-int(-a // n)), ca)})
            for n in range(2, 13) if shares else ():  # the share of whoever pays the rest: 20366 = 6788 + 6788 + 6790
                for share in (round(a / n, 2) // 0.01 * 0.01, float(int(a / n))):
                    out.add((round(a - (n - 1) * share, 2), ca))
            for b, cb in (*salient[i + 1 :], *world):
                if b == a:  # one amount, with and without its currency: not two to add
                    continue
                if ca == cb or not ca or not cb:
                    cur = ca if ca == cb else ""  # with an amount of unknown currency: unknown
                    out.add((round(a + b, 2), cur))
                    out.add((round(abs(a - b), 2), cur))
        return out


_SHARE_CUE = re.compile(
    r"\b(?:each|apiece|per\s+(?:person|head|guest|diner|month|week|night|day)|a\s+(?:head|person|month|week|night)"
    r"|shares?|split|splitting|divided|ways|between|half|halves|thirds?|quarters?|owes?|owed|instal+ments?|payments?)\b",
    re.I,
)
"""Words of a share: where an amount may be a part of one held ("43 USD each", "your share is
57.33", "split three ways")."""


@dataclass(frozen=True)
class Ungrounded:
    """One claim the evidence does not hold: its ``type``, the ``said`` span, the ``source``
    text it came from (``"answer"``, ``"messages.send body"``...), and ``nearest``, the closest
    evidence values of that type (at most three; empty when the world holds none)."""

    type: str
    said: str
    source: str
    nearest: tuple[str, ...] = ()
    why: str = ""

    def reason(self) -> str:
        """One line for a verdict: ``answer says '6:00' (time); the world holds 05:00, 07:30``."""
        held = f"the world holds {', '.join(self.nearest)}" if self.nearest else "the world holds no such value"
        return f"{self.source} says {self.said!r} ({self.type}); {self.why or held}"


def normal_phone(raw: str, region: str, *, valid: bool = False) -> str | None:
    """``raw`` as an E.164 number, or None when it is not a possible one (``valid``: not a
    valid one: an assigned range of its country, as libphonenumber's metadata holds)."""
    try:
        num = phonenumbers.parse(raw, region)
    except phonenumbers.NumberParseException:
        return None
    if not (phonenumbers.is_valid_number(num) if valid else phonenumbers.is_possible_number(num)):
        return None
    return phonenumbers.format_number(num, phonenumbers.PhoneNumberFormat.E164)


def _phones_in(text: str, region: str) -> list[tuple[str, str]]:
    """(span, E.164) of every phone number in ``text``."""
    out = []
    try:
        found = list(phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.POSSIBLE))
    except Exception:
        return out
    for m in found:
        if sum(ch.isdigit() for ch in m.raw_string) >= 7:
            out.append((m.raw_string, phonenumbers.format_number(m.number, phonenumbers.PhoneNumberFormat.E164)))
    return out


def temperature_claims(text: str) -> list[tuple[str, float, str, bool]]:
    """(span, value, unit, negated) of each temperature in ``text``: ``"8.6 °C"``, ``"47°F"``,
    ``"12 degrees Celsius"``; unit ``"C"``, ``"F"`` or ``""`` when the text names none."""
    out = []
    for m in _RE_TEMP.finditer(text):
        unit = (m[3] or m[5] or "").upper()[:1]
        before = text[max(0, m.start() - 30) : m.start()]
        neg = bool(re.search(r"\b(?:not|n't|instead of|rather than)\s+(?:\w+\s+)?$", before, re.I))
        for g in (1, 2):  # "46 to 58 °F": both ends carry the unit
            if m[g] is not None:
                value = float(m[g].replace(",", ".")) + (
                    0.5 if g == 2 and m["half"] else 0.0
                )  # "21 and a half degrees"
                out.append((text[m.start(g) : m.end()] if g == 2 else m[g], value, unit, neg))
    return out


def _walk(value: Any, currency: str = "", tunit: str = "", key: str = "") -> Iterable[tuple[Any, str, str, str]]:
    """(leaf, key, currency, temperature unit) of each leaf of a JSON value; a mapping's
    ``currency`` and ``temperature_unit`` (or a ``unit`` "C" or "F") apply to everything below it; a key ending ``_c``
    or ``_f`` gives its number's unit."""
    stack = [(value, currency, tunit, key)]
    while stack:
        v, cur, tu, k = stack.pop()
        if isinstance(v, Mapping):
            c = v.get("currency")
            cur = c if isinstance(c, str) and len(c) == 3 else cur
            u = v.get("temperature_unit")
            tu = u.replace("°", "").strip()[:1].upper() if isinstance(u, str) and u else tu
            if isinstance(u := v.get("unit"), str) and u.replace("°", "").strip().upper() in ("C", "F"):
                tu = u.replace("°", "").strip().upper()  # a thermostat's {"target": 20.5, "unit": "C"}
            # a list result's {"bookings": [...], "total": 1}: the number of results, no amount
            counted = isinstance(v.get("total"), int) and any(isinstance(x, list) for x in v.values())
            stack.extend((x, cur, tu, "count" if counted and kk == "total" else str(kk)) for kk, x in v.items())
        elif isinstance(v, (list, tuple)):
            stack.extend((x, cur, tu, k) for x in v)
        else:
            yield v, k, cur, tu


_SEAT = r"(?:\d{1,2}\s?[A-K]|[A-Z]\s?\d{1,2})"
_RE_SEAT_CODE = re.compile(_SEAT, re.I)
RE_SEAT = re.compile(rf"\bseats?\s*(?:no\.?\s*|number\s*)?({_SEAT}(?:(?:\s*,\s*|\s+and\s+|\s*&\s*){_SEAT})*)\b")
"""Seats told: "seat 19C", "seat no. 4 A", "seats F5 and F6" (a row letter in capitals)."""
BARE = "?"
"""The currency of a bare number read in a record's text ("83 Market Street"): it grounds an
amount told in any currency as it stands, and is never summed or split into another."""
_MONEY_KEYS = re.compile(
    r"amount|price|total|balance|limit|spent|left|remaining|cost|fee|fare|subtotal|minimum|due|share|refund|tip"
    r"|value|paid|owed|budget|deposit|charge",
    re.I,
)
_COUNT_KEYS = re.compile(
    r"^(?:qty|quantity|count|rating|stars|guests|seats|party(?:_size)?|nights|people|passengers|travell?ers|adults"
    r"|children|bags|rooms|size|capacity|floor|row|year"
    r"|page|position|index|rank|reviews?)$|minutes|_s$|_id$|percent|_pct$|distance|_km$|_m$",
    re.I,
)
"""Keys of a record with a ``currency`` whose numbers are no amounts (an order line's ``qty``, a
restaurant's ``rating``, ``eta_minutes``)."""
_MINUTE_KEYS = re.compile(r"minutes|_min$|duration|runtime|length|eta|late|delay|lead|before|offset", re.I)
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|'([^']{3,})'(?!\w)")


def evidence_of(
    values: Iterable[Any],
    ctx: Context,
    *,
    skip: frozenset[str] = frozenset(),
    goal: str = "",
    ev: Evidence | None = None,
    world: bool = False,
    clock: bool = True,
    said: bool = False,
) -> Evidence:
    """The :class:`Evidence` in ``values`` (JSON values: call results, records, memory entries)
    and the ``goal`` text (and each quoted part of it alone: the words the user dictated), read
    against the clock and contacts of ``ctx``, added to ``ev`` when given; strings in ``skip``
    (texts the planner wrote, stripped) are not read. ``world``: the values are records the
    planner did not read (the fixtures), whose amounts join ``world_money`` (not summed).
    ``said``: the values are the user's words (memory entries). A bare number in a string of a
    record ("83 Market Street", "Nights: 2") is an amount of currency :data:`BARE` (matched as
    any currency, never summed); in the goal or the user's words, of unknown currency ``""``."""
    ev = ev if ev is not None else Evidence()
    now = _clock(ctx)
    if now is not None and clock and ev.today is None:
        ev.today = now.date()
        ev.dates.add(now.date().isoformat())
        ev.times.add(now.strftime("%H:%M"))
    region = phone_region(tuple(str(c.get("phone") or "") for c in itertools.islice(ctx.contacts, 20)))
    amounts = ev.world_money if world else ev.money

    day = str(ctx.now)[:10] if ctx.now else None

    def text(s: str, cur: str, tu: str, key: str = "", bare: str = "" if said else BARE) -> None:
        s = s.strip()
        if not s or s in skip or len(s) > 20000:
            return
        f = _string_facts(s, day, region)
        (ev.end_times if _END_KEYS.search(key) else ev.times).update(f.times)
        ev.dates.update(f.dates)
        ev.durations.update(f.durations)
        amounts.update((a, u if u is not None else bare) for a, u in f.amounts)
        ev.temps.update((v, u or tu) for v, u in f.temps)
        ev.emails.update(f.emails)
        ev.month_days.update(f.month_days)
        ev.phones.update(f.phones)
        ev.counts.update(f.counts)

    if goal:
        text(goal, "", "", bare="")
        for m in _QUOTED.finditer(goal):
            text(next(g for g in m.groups() if g), "", "", bare="")
    for value in values:
        if not world:
            _list_totals(value, amounts)
            _list_minutes(value, ev.list_lengths)
            _counts(value, ev.counts, ev.parties)
            _spans(value, ev.spans)
        for leaf, key, cur, tu in _walk(value):
            if isinstance(leaf, str):
                if key in ("status", "state") and len(leaf) <= 20:
                    ev.statuses.add(leaf.strip().lower())
                text(leaf, cur, tu, key)
            elif isinstance(leaf, bool) and key in _BOOL_STATUS:  # a door's "locked": true is "locked"
                ev.statuses.add(_BOOL_STATUS[key][not leaf])
            elif isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
                if _MONEY_KEYS.search(key) or (cur and not _COUNT_KEYS.search(key)):
                    amounts.add((round(float(leaf), 2), cur))
                if _TEMP_KEYS.search(key) or (tu and key in ("target", "setpoint", "current")):
                    unit = "C" if key.endswith("_c") else "F" if key.endswith("_f") else tu
                    ev.temps.add((float(leaf), unit))
                if _MINUTE_KEYS.search(key):
                    in_seconds = re.search(r"(?:_s|_sec|seconds)$", key)
                    minutes = leaf / 60 if in_seconds else leaf
                    if 0 < minutes < 24 * 60:
                        ev.durations.add(round(minutes))
                        if in_seconds:
                            ev.seconds.add(round(leaf))
    return ev


class _Facts(NamedTuple):
    times: frozenset[str]
    dates: frozenset[str]
    durations: frozenset[int]
    amounts: frozenset[tuple[float, str | None]]  # currency None: the record's, if any
    temps: frozenset[tuple[float, str]]
    emails: frozenset[str]
    month_days: frozenset[str]
    phones: frozenset[str]
    counts: frozenset[int]


_RE_OFFSET = re.compile(r"[+\-\u2212]\d{1,2}:\d{2}")
_ISO_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:\d{2})?")


_NOT_AN_AMOUNT_BEFORE = re.compile(
    r"\b(?:rated|rating|row|seat|gate|platform|room|floor|level|no\.?|number|#)\s*$", re.I
)
"""A number told with its noun ("2 nights", "rated 4"): a count or a measure, not an amount."""


@functools.lru_cache(maxsize=65536)
def _string_facts(s: str, day: str | None, region: str) -> _Facts:
    """The typed values one string of the world holds (read once per string, clock day and
    phone region: the same records come back in every episode of a task)."""
    if _RE_OFFSET.fullmatch(s):  # "+01:00": a UTC offset, not a time of day
        return _Facts(*(frozenset() for _ in range(9)))
    sc = scan_cached(s, day, region)
    times: set[str] = set()
    dates: set[str] = set()
    durations: set[int] = set()
    amounts: set[tuple[float, str | None]] = set()
    counts: set[int] = set()
    for c in sc.claims:
        if c.type == "time":
            times.update(v for v in (c.value, *c.alts) if isinstance(v, str))
        elif c.type == "date":
            dates.update(v for v in (c.value, *c.alts) if isinstance(v, str))
        elif c.type == "duration" and isinstance(c.value, int):
            durations.add(c.value // 60)
        elif c.type in ("money", "number") and isinstance(c.value, float):
            if c.type == "money" or (
                not _NOT_AN_AMOUNT.match(sc.text, c.end)
                and not _NOT_AN_AMOUNT_BEFORE.search(sc.text[max(0, c.start - 12) : c.start])
            ):
                amounts.add((round(c.value, 2), c.unit if c.type == "money" else None))
            if c.type == "number" and c.value.is_integer() and 0 <= c.value <= 1000:
                counts.add(int(c.value))
            if c.type == "number" and re.match(r"\s*(?:min|minutes?)\b", sc.text[c.end : c.end + 9]):
                durations.add(int(c.value))
    temps = {(v, u) for _span, v, u, _ in temperature_claims(s)}
    emails = {e.lower() for e in _RE_EMAIL.findall(s)}
    month_days = {f"{m[1]}-{m[2]}"} if (m := _RE_MONTH_DAY.fullmatch(s)) else set()
    phones: set[str] = set()
    if sum(ch.isdigit() for ch in s) >= 7 and not _ISO_ONLY.fullmatch(s):
        phones.update(p for _, p in _phones_in(s, region))
        if (p := normal_phone(s, region)) is not None:
            phones.add(p)
    facts = (times, dates, durations, amounts, temps, emails, month_days, phones, counts)
    return _Facts(*(frozenset(x) for x in facts))


_DAY_PAIRS = (
    ("check_in", "check_out"),
    ("start", "end"),
    ("start_date", "end_date"),
    ("from", "to"),
    ("depart", "return"),
)


_PARTY_KEYS = re.compile(r"party|guests|people|persons|diners|covers|travell?ers|passengers", re.I)


def _nights(rec: Mapping[str, Any]) -> set[int]:
    """The nights (1-366) between each pair of a record's dates (``check_in``/``check_out``,
    ``start``/``end``...: :data:`_DAY_PAIRS`)."""
    out: set[int] = set()
    for a, b in _DAY_PAIRS:
        x, y = rec.get(a), rec.get(b)
        if isinstance(x, str) and isinstance(y, str):
            try:
                nights = (dt.date.fromisoformat(y[:10]) - dt.date.fromisoformat(x[:10])).days
            except ValueError:
                continue
            if 0 < nights <= 366:
                out.add(nights)
    return out


_QTY_KEYS = re.compile(
    r"party|guests|people|persons|diners|covers|travell?ers|passengers|qty|quantity|count|nights|tickets|seats|rooms"
    r"|items|number_of|adults|children",
    re.I,
)


def _quantities(values: Iterable[Any], lines: bool = False) -> set[int]:
    """The counts an act's records and arguments hold as counts: list lengths, the items of a
    text written as a list (a line an item, or short items between commas and "and"), quantity fields (``qty``, ``party_size``, ``nights``...:
    :data:`_QTY_KEYS`) and the nights between a record's two dates; not every whole number (a
    brightness, a position, a year). ``lines``: count the lines of texts (the planner's own
    arguments; an app's confirmation mail is no list)."""
    out: set[int] = set()
    stack = list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            for k, x in v.items():
                if isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 1000 and _QTY_KEYS.search(str(k)):
                    out.add(x)
                elif isinstance(x, (Mapping, list, tuple, str)):
                    stack.append(x)
            out.update(_nights(v))
        elif isinstance(v, (list, tuple)):
            if v:
                out.add(len(v))
            stack.extend(x for x in v if isinstance(x, (Mapping, list, tuple, str)))
        elif lines and isinstance(v, str) and "\n" in v.strip():  # a list written a line an item ("Dune\nMiddlemarch")
            out.add(len([x for x in v.splitlines() if x.strip()]))
        elif lines and isinstance(v, str) and len(v) <= 400:  # or in one line ("Dune, Middlemarch and Emma")
            parts = _LIST_SEP.split(v.strip().rstrip("."))
            if len(parts) >= 2 and all(1 <= len(p.split()) <= 5 for p in parts):
                out.add(len(parts))
    return out


_LIST_SEP = re.compile(r"\s*(?:[,;]\s*(?:and\s+)?|\s\band\s+)")


def _counts(value: Any, out: set[int], parties: set[int] | None = None) -> None:
    """The counts ``value`` holds: whole-number fields (0-1000), list lengths, and the nights
    between a record's two dates (``check_in``/``check_out``, ``start``/``end``...); a party's
    size (a field ``party_size``, ``guests``...) also into ``parties``."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            for k, x in v.items():
                money = _MONEY_KEYS.search(str(k)) and (k != "value" or "currency" in v)  # a setting's value counts
                if isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 1000 and not money:
                    out.add(x)
                    if parties is not None and _PARTY_KEYS.search(str(k)):
                        parties.add(x)
                elif isinstance(x, (Mapping, list, tuple)):
                    stack.append(x)
            out.update(_nights(v))
        elif isinstance(v, (list, tuple)):
            out.add(len(v))
            stack.extend(x for x in v if isinstance(x, (Mapping, list, tuple)))


_RE_STAMP = re.compile(r"(?:(\d{4}-\d{2}-\d{2})[T ])?(\d{2}):(\d{2})(?::\d{2})?(?![\d.])")


def _spans(value: Any, out: set[int]) -> None:
    """The minutes between every two times of one record in ``value`` (its own string fields:
    ``"2026-11-24T11:30"`` and ``"2026-11-24T16:05"`` give 275), into ``out``."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            stamps = []
            for x in v.values():
                if isinstance(x, str) and len(x) <= 25 and (m := _RE_STAMP.fullmatch(x.strip())):
                    day = dt.date.fromisoformat(m[1]).toordinal() if m[1] else 0
                    stamps.append(day * 1440 + int(m[2]) * 60 + int(m[3]))
                elif isinstance(x, (Mapping, list, tuple)):
                    stack.append(x)
            for a, b in itertools.combinations(stamps[:8], 2):
                if 0 < abs(b - a) < 1440 * 7:
                    out.add(abs(b - a))
        elif isinstance(v, (list, tuple)):
            stack.extend(x for x in v if isinstance(x, (Mapping, list, tuple)))


def _record_lists(value: Any) -> Iterator[list[Mapping[str, Any]]]:
    """Each list of two records or more anywhere in ``value`` (JSON), as its records."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
            recs = [r for r in v if isinstance(r, Mapping)]
            if len(recs) >= 2:
                yield recs


def _list_totals(value: Any, out: set[tuple[float, str]]) -> None:
    """Add to ``out`` the total of each amount field over each list of records in ``value``
    (three bookings of 64.80, 120.00 and 64.80 GBP: 249.60 GBP), per currency."""
    for recs in _record_lists(value):
        sums: dict[tuple[str, str], float] = {}
        for r in recs:
            cur = r.get("currency") if isinstance(r.get("currency"), str) else ""
            for k, x in r.items():
                if isinstance(x, (int, float)) and not isinstance(x, bool) and _MONEY_KEYS.search(str(k)):
                    sums[(str(k), cur)] = sums.get((str(k), cur), 0.0) + float(x)
        out.update((round(total, 2), cur) for (_, cur), total in sums.items())


def _list_minutes(value: Any, out: set[int]) -> None:
    """Add to ``out`` the total (whole minutes) of each length field over each list of records in
    ``value``: a playlist's five songs of 3-5 minutes are "a bit over 19 minutes"."""
    for recs in _record_lists(value):
        sums: dict[str, float] = {}
        for r in recs:
            for k, x in r.items():
                if isinstance(x, (int, float)) and not isinstance(x, bool) and _MINUTE_KEYS.search(str(k)):
                    seconds = re.search(r"(?:_s|_sec|seconds)$", str(k))
                    sums[str(k)] = sums.get(str(k), 0.0) + (x / 60 if seconds else x)
        out.update(round(total) for total in sums.values() if 0 < total < 7 * 24 * 60)


def _clock(ctx: Context) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(ctx.now)[:19]) if ctx.now else None
    except ValueError:
        return None


def _minutes(hm: str) -> int:
    h, m = hm.split(":")
    return int(h) * 60 + int(m)


def _time_ok(value: str, text: str, start: int, pool: set[str], rough: int = _ROUGH_MIN) -> bool:
    """Whether time ``value`` told at ``start`` of ``text`` is one of ``pool`` (``HH:MM``): as
    it is, or told roughly ("around", "about": within ``rough`` minutes), as a bound that holds
    ("by 23:00" for 22:17, within an hour) or a start after ("after 19:00")."""
    if value in pool:
        return True
    before = text[max(0, start - 30) : start]
    mins = _minutes(value)
    if ABOUT_BEFORE.search(before):
        return any(abs(_minutes(p) - mins) <= rough for p in pool)
    if BY_BEFORE.search(before):  # "out by 23:00" for 22:17: a bound that holds
        return any(0 <= mins - _minutes(p) <= _BOUND_MIN for p in pool)
    if _AFTER.search(before):
        return any(0 <= _minutes(p) - mins <= _BOUND_MIN for p in pool)
    return False


def _weekday_of(word: str) -> int | None:
    w = word.lower()[:3]
    return next((i for i, name in enumerate(WEEKDAYS) if name.startswith(w)), None)


_NOW_CUE = re.compile(
    r"\b(?:(?:just|right)\s+now\s*,?\s*(?:at\s+)?|(?:it(?:\s+is|['\u2019]s)\s+now|the\s+time\s+is(?:\s+now)?"
    r"|(?:the\s+)?current\s+time\s+is|(?:the\s+)?time\s+now\s+is|as\s+of\s+now)\s*[,:]?\s*)(?:about\s+|around\s+)?$",
    re.I,
)
"""Words before a time that make it the clock's: "just now, at 10:45", "it's now 09:40", "the time is"
(not "it's now at 15:00": a record's new time)."""
_RE_SHIFT = re.compile(
    r"\b((?<!of\s)(?<!half\s)(?:\d+|an?)\s*(?:minutes?|mins?|hours?|hrs?)(?:\s+and\s+a\s+half)?|half\s+an?\s+hour"
    r"|a\s+quarter\s+of\s+an\s+hour)\s+(?:earlier|later|sooner|forward|back)\b",
    re.I,
)
"""A move told by how far: "20 minutes earlier", "an hour later"."""
_TODAY_IS = re.compile(
    r"(?:\btoday(?:['’]s\s+date)?(?:\s+is|['’]s|,|\s*\()|\b(?:the\s+)?rest\s+of\s+(?:your|the|this)|\bhappy)\s*$", re.I
)
"""The words before a date that make it the clock's: "today is", "today's date is", "today,",
"today (Wed)", "enjoy the rest of your Sunday", "happy Friday"."""


def _date_check(c: Any, text: str, ev: Evidence, today: dt.date | None = None) -> tuple[bool, str]:
    """Whether the date claim ``c`` of ``text`` is grounded, and why not."""
    span = text[c.start : c.end]
    # a weekday written with the date must be its weekday ("Thursday, 27 November" for a Friday)
    named = re.match(rf"\s*({WEEKDAY})\b", span, re.I)
    lead = _RE_WEEKDAY_NEAR_DATE.search(text[max(0, c.start - 14) : c.start])
    word = named[1] if named and re.search(r"\d", span) else (lead[1] if lead else None)
    if word is not None and isinstance(c.value, str) and not c.range_end:
        day = _weekday_of(word)
        d = dt.date.fromisoformat(c.value)
        if day is not None and d.weekday() != day:
            return False, f"{d.isoformat()} is a {d.strftime('%A')}"
    values = [v for v in (c.value, *c.alts) if isinstance(v, str)]
    if any(v in ev.dates for v in values):
        return True, ""
    if not re.search(r"\d{4}", span):  # "12 September": a birthday, an anniversary: any year
        days = {v[5:] for v in ev.dates} | ev.month_days
        if any(v[5:] in days for v in values):
            return True, ""
    # a weekday said alone names the next such day (the reader's value), the last one ("I paid
    # on Tuesday") or today; said alone (not "this"/"last"), also such a day of the next three
    # weeks the evidence holds ("the train on Tuesday" for a booking two weeks ahead), or after
    # "from", of the last three ("the video from Tuesday" for one taken twelve days ago)
    bare = re.fullmatch(
        rf"(?:(this|last)\s+)?({WEEKDAY})(?:\s+(?:morning|afternoon|evening|night))?", span.strip(), re.I
    )
    today = today or ev.today
    if bare and today is not None:
        day = _weekday_of(bare[2])
        if day is not None:
            last = today - dt.timedelta(days=(today.weekday() - day) % 7 or 7)
            if last.isoformat() in ev.dates or (day == today.weekday() and today.isoformat() in ev.dates):
                return True, ""
            if bare[1] is None:
                back = re.search(r"\bfrom\s+$", text[max(0, c.start - 8) : c.start], re.I)  # "the video from Tuesday"
                near = (today + dt.timedelta(days=k) for k in (*range(1, 22), *(range(-21, 0) if back else ())))
                return any(d.weekday() == day and d.isoformat() in ev.dates for d in near), ""
            return False, ""
    return False, ""


_STALE_WHY = "the records the episode changed held that before it changed them, and hold it no more"


def _stale(g: Grounds, type: str, value: Any, cur: str = "") -> bool:
    """Whether ``value`` of ``type`` (``"money"``, in ``cur`` or unknown; ``"email"``, lower
    case; ``"phone"``, E.164) is one only the old versions of the records the episode changed
    hold: a balance before the payment, a contact's address before it was replaced. Not where
    the records as they are now or the user's words hold it (the fixtures and what the planner
    read before its change hold the world as it was)."""
    if type == "money":
        if not _money_ok(round(value, 2), cur, set(g.was.money)):
            return False
        return not any(abs(a - value) <= 0.011 for a, _ in (*g.subject.money, *g.did.money))
    was, now = {
        "email": (g.was.emails, g.subject.emails | g.did.emails),
        "phone": (g.was.phones, g.subject.phones | g.did.phones),
    }[type]
    return value in was and value not in now


def _money_ok(amount: float, cur: str, pool: set[tuple[float, str]]) -> bool:
    """Whether ``pool`` holds ``amount`` (±0.01) in currency ``cur``: where the pool knows
    the currency of that amount, it must be ``cur``; an amount of unknown currency (a bare
    number the user said) grounds any, unless the same amount is known in another."""
    near = [c for a, c in pool if abs(a - amount) <= 0.011]
    if not near:
        return False
    known = {c for c in near if c and c != BARE}
    return not cur or not known or cur in known


def _temp_ok(v: float, unit: str, pool: set[tuple[float, str]]) -> bool:
    """Whether ``pool`` holds the temperature ``v`` in ``unit`` (``"C"``, ``"F"``, ``""`` unknown):
    the same value in that unit (±0.5 told whole, a rounding: "6°C" for 6.2; ±0.05 told with a
    decimal: "21.5" is not 22), or converted (±1.0); a value of unknown unit ("21.5 degrees"
    the user said) grounds any unit, unless the same value is known in another unit (a
    thermostat's 21.5 °C told as "21.5°F")."""
    bare = False
    tol = 0.5 if v == round(v) else 0.05
    for p, pu in pool:
        if (not unit or unit == pu) and abs(p - v) <= tol:
            return True
        if not pu and abs(p - v) <= tol:
            bare = True
        if unit and pu and unit != pu:
            conv = p * 9 / 5 + 32 if pu == "C" else (p - 32) * 5 / 9
            if abs(conv - v) <= 1.0:
                return True
    return bare and not any(pu and pu != unit and abs(p - v) <= tol for p, pu in pool)


_NAME_KEYS = frozenset(
    {"title", "name", "event", "city", "restaurant", "carrier", "number", "label", "category", "merchant", "payee",
     "item", "product", "dish", "hotel", "station", "place", "venue", "film", "movie", "show", "subject",
     "cinema", "theatre", "theater", "shop", "store", "airline"}
)  # fmt: skip
"""Fields that name a record in words a planner repeats ("Lunch with Osamu", "Grand Plaza",
"MD 571", "Berlin"): a clause that says one of them is about that record."""
_TOKEN = re.compile(r"[^\W\d_]{4,}")
_WORDY_ID = re.compile(r"[a-z]{4,}(?:_[a-z]+)*")
"""A record id that is words, not a serial ("brightness", "ring_volume"): the record's name."""
_TOKEN_ANY = re.compile(r"[^\W\d_]+")
_CLAUSE = re.compile(r"[.;!?\n]+[\"'\u201d\u2019\u00bb)]*(?:\s|$)|\n")
_PART = re.compile(r"[.;!?\n]+(?:\s|$)|\n|[,()]|\s[-\u2013\u2014]\s|\band\b", re.I)
"""Where a part of a sentence about one thing ends: a clause end, a comma, a bracket, a spaced
dash, "and" ("Brightness 65%, ring volume 30%")."""
_TYPED = ("time", "date", "money", "temperature")


@dataclass
class Named:
    """A record the planner read or changed, as a clause can name it: its distinctive name
    ``tokens`` (lower-case words of its :data:`_NAME_KEYS` fields), its ``codes`` (a whole
    short name with a digit, "MD 571"), and the :class:`Evidence` of its own values."""

    tokens: frozenset[str]
    codes: tuple[str, ...]
    ev: Evidence
    label: str
    amounts: tuple[tuple[str, float, str], ...] = ()
    names: tuple[str, ...] = ()
    rid: str = ""  # the record's id, where it has one: one record read in several results is one
    refs: frozenset[str] = frozenset()  # the ids it holds of other records (a cart line's product)
    places: tuple[str, ...] = ()  # where it is: its location, place, venue or address fields
    now: bool = False  # a changed record as the episode left it (other versions of it are as they were)
    content: tuple[Any, ...] = ()  # its :data:`_CONTENT_KEYS` values: a note's body, a list's items

    @functools.cached_property
    def text(self) -> str:
        """Its contents as :func:`words` (empty where it holds none): what a list told of it must
        be in; worked out on first need, since few texts tell a list."""
        if not self.content:
            return ""
        return words(" ".join(x for x, _, _, _ in _walk(list(self.content)) if isinstance(x, str))[:4000])


class Episode(NamedTuple):
    """What the lazy parts of :class:`Grounds` are read from: the episode's ``calls``, its
    successful ``writes``, the changed records as the episode left them (``now``) and as they
    were before an update (``was``), and ``record``, an id's record (a result's or a fixture's)."""

    calls: Sequence[Any]
    writes: Sequence[Any]
    now: list[Any]
    was: list[Any]
    record: Callable[[str], Mapping[str, Any] | None]


class Grounds:
    """The evidence of one episode, in three parts (see the module docstring): ``subject`` (the
    goal, the records the episode changed, memory, the clock), ``read`` (call results; world
    amounts), and the ``named`` records a clause can be about."""

    def __init__(
        self,
        subject: Evidence,
        read: Evidence,
        named: Sequence[Named],
        done: frozenset[str],
        did: Evidence,
        acts: frozenset[str] = frozenset(),
        addressed: frozenset[str] = frozenset(),
    ) -> None:
        self.subject, self.read, self.named, self.done, self.did = subject, read, list(named), done, did
        self.acts = acts  # the tools whose calls changed the world and succeeded
        self.addressed = addressed  # the contacts (ids) those calls named, in their arguments or results
        self.now: int | None = None  # the clock's time of day in minutes, when known
        self.clock_times: frozenset[str] = frozenset()  # the clock's times, "HH:MM" (_clock_values)
        self.zone_times: frozenset[str] = frozenset()  # the clock's time in each city the goal names
        self.subject_names: SubjectNames | None = None  # what the episode's acts were done to
        self.world_names: list[str] = []  # the names of the records read, changed or in the fixtures
        self.user_texts: list[str] = []  # the user's words: the goal and memory entries, as text
        self.changed_words: frozenset[str] = frozenset()  # short strings of the changed records, lower case
        self.act_counts: frozenset[int] | None = None  # what an act verb may count (see grounds())
        self.kind_counts: dict[str, frozenset[int]] = {}  # what it may count of a kind of thing (_kind_counts)
        self.periods: list[tuple[str, frozenset[str]]] = []  # the changed records' periods (_periods)
        self.spans: frozenset[tuple[str, int]] = frozenset()  # the weeks, months, years asked of (_asked_spans)
        self.totals: set[tuple[float, str]] = set()  # the totals of what the episode did (_totals)
        self.field_times: dict[str, frozenset[str]] = {}  # the due and reminder times it set (_field_times)
        self.set_spans: frozenset[tuple[str, str]] = frozenset()  # (start, end) of what it set, HH:MM
        self.shifts: frozenset[int] = frozenset()  # minutes each changed time moved by
        self.field_dates: dict[str, frozenset[str]] = {}  # the due and payment days of changed records (_field_dates)
        self.enums: dict[str, tuple[frozenset[str], frozenset[str]]] = {}  # field → (changed, known) (_enum_values)
        self.line_counts: dict[str, frozenset[int]] = {}  # an item's name (lower case) → its quantities (_line_counts)
        self.changed_places: list[tuple[str, ...]] = []  # the places of the records the episode changed
        self.zoned: list[tuple[str, frozenset[str], frozenset[str]]] = []  # (city, its times, yours) (_zoned_times)
        self.read_field_dates: dict[str, frozenset[str]] = {}  # those of every record the calls returned too
        self.labelled: list[tuple[frozenset[str], frozenset[str]]] = []  # changed records' labels and times
        self.focus: frozenset[str] = frozenset()  # the statuses of the last read that returned any
        self.was = Evidence()  # the changed records' values before the episode changed them
        self.acted = Evidence()  # what the writes returned and changed (did, less the user's words)
        self.sizes_set: frozenset[str] = frozenset()  # the sizes the episode set (_sizes); those seen: sizes_seen
        self.main_amounts: list[tuple[str, float | None]] = []  # each write's tool and amount (_main_amount)
        # what the lazy properties below are read from: (the calls, the writes, the changed records
        # now and before, an id's record)
        self.written: frozenset[str] = frozenset()  # the texts the planner wrote (stripped)
        self.episode: Episode | None = None
        # what the codes are read from, on first need: (goal, memory and results; changed records
        # now; as they were)
        self.code_sources: tuple[list[Any], list[Any], list[Any]] | None = None
        # derived values, worked out on first use (most episodes tell no amount)
        self._times: dict[int, set[str]] = {}
        self._durations: set[int] | None = None
        self._siblings: list[Any] | None = None  # _sibling_groups
        self._money: dict[tuple[int, bool], set[tuple[float, str]]] = {}
        df: dict[str, int] = {}
        for n in self.named:
            for t in n.tokens:
                df[t] = df.get(t, 0) + 1
        # a word most read records share ("meeting", "flight") names none of them
        limit = max(2, len(self.named) // 3)
        self._common = frozenset(t for t, k in df.items() if k > limit)

    @functools.cached_property
    def read_strings(self) -> list[str]:
        """The strings the episode's successful calls returned (:func:`subject_strings`), worked
        out on first need: what a text may pass on or quote of what the planner read."""
        if self.episode is None:
            return []
        return subject_strings([c.feedback.result for c in self.episode.calls if c.ok])[0]

    @functools.cached_property
    def touched(self) -> list[tuple[str, tuple[str, ...], frozenset[float]]]:
        """What each write was about (:func:`_touched`), worked out on first need."""
        return [_touched(c, self.episode.record) for c in self.episode.writes] if self.episode else []

    @functools.cached_property
    def distances(self) -> frozenset[float]:
        """Every distance the grounds hold, in km (:func:`_distances`): the calls' results, the
        changed records and the user's words, worked out on first need."""
        values: list[Any] = list(self.user_texts)
        if self.episode:
            values += [c.feedback.result for c in self.episode.calls if c.ok] + [self.episode.now]
        return _distances(values)

    @functools.cached_property
    def sizes_seen(self) -> frozenset[str]:
        """Every size the changed records and the calls' results hold (:func:`_sizes`)."""
        if not self.episode:
            return self.sizes_set
        calls, now, was = self.episode.calls, self.episode.now, self.episode.was
        return _sizes([now, was, [c.feedback.result for c in calls if c.ok]]) | self.sizes_set

    @functools.cached_property
    def temp_labels(self) -> dict[str, frozenset[float]]:
        """ "high"/"low" → the temperatures the calls read as such (:func:`_temperature_labels`)."""
        results = [c.feedback.result for c in self.episode.calls if c.ok and c.name != "finish"] if self.episode else []
        return _temperature_labels(results)

    @functools.cached_property
    def dated(self) -> list[tuple[str, frozenset[float]]]:
        """The days the calls read and their temperatures (:func:`_dated_temperatures`)."""
        results = [c.feedback.result for c in self.episode.calls if c.ok and c.name != "finish"] if self.episode else []
        return _dated_temperatures(results)

    @functools.cached_property
    def places(self) -> tuple[dict[str, list[Named]], re.Pattern[str] | None]:
        """The places of the named records (lower case) → the records there, and one pattern
        that finds any of them in a lower-case text (longest first), or None where none."""
        where: dict[str, list[Named]] = {}
        for n in self.named:
            for p in n.places:
                where.setdefault(p.lower(), []).append(n)
        if not where:
            return where, None
        alts = "|".join(re.escape(p) for p in sorted(where, key=len, reverse=True))
        return where, re.compile(rf"(?<![\w-])(?:{alts})(?![\w-])")

    @functools.cached_property
    def mode_minutes(self) -> dict[str, frozenset[int]]:
        """A way of travel ("bike", "walk", "drive", "transit") → the minutes the calls read for
        it (a route's ``{"mode": "bike", "minutes": 20}``)."""
        out: dict[str, set[int]] = {}
        for v in _mappings([c.feedback.result for c in self.episode.calls if c.ok] if self.episode else []):
            mode, mins = v.get("mode"), v.get("minutes", v.get("duration_min"))
            if isinstance(mode, str) and isinstance(mins, (int, float)) and not isinstance(mins, bool):
                out.setdefault(_MODES.get(mode.lower(), mode.lower()), set()).add(round(mins))
        return {k: frozenset(x) for k, x in out.items()}

    @functools.cached_property
    def read_severities(self) -> frozenset[str]:
        """The ``severity`` values (lower case) of the records the calls returned."""
        results = [c.feedback.result for c in self.episode.calls if c.ok] if self.episode else []
        return frozenset(
            x.strip().lower() for x, key, _, _ in _walk(results) if key == "severity" and isinstance(x, str)
        )

    @functools.cached_property
    def every(self) -> Evidence:
        """All the grounds in one :class:`Evidence`: every part and every named record (what a
        sentence naming several records may combine; the addresses and numbers the world holds)."""
        out = Evidence()
        for ev in (self.subject, self.read, self.did, *(n.ev for n in self.named)):
            out.merge(ev)
        return out

    def _derived_times(self, pool: Evidence) -> set[str]:
        if id(pool) not in self._times:
            out = pool.derived_times()
            if pool is not self.read:
                # what the episode did and the clock move by what was read, too (a film booked for
                # 20:15 ends 134 minutes later; an arrival is now plus the ride), not what the user
                # said alone ("leaving at 07:00" is no arrival at 07:00 plus a train's 220 minutes)
                base = {_minutes(x) for x in self.acted.times} | ({self.now} if self.now is not None else set())
                out.update(_hm_of((b + d) % 1440) for b in base for d in self.read.durations)
            self._times[id(pool)] = out
        return self._times[id(pool)]

    def _derived_money(self, pool: Evidence, shares: bool = True) -> set[tuple[float, str]]:
        if (id(pool), shares) not in self._money:
            # what the episode did is told as it did it, or worked out from its own amounts (a
            # total paid, a share): not with any amount it read ("sent 19.75" for 18.75 + 1.00)
            partners = () if pool is self.read or pool is self.did else self.read.money
            self._money[(id(pool), shares)] = pool.derived_money(partners, shares)
        return self._money[(id(pool), shares)]

    def durations(self, from_now: bool = False) -> set[int]:
        """Every duration the grounds hold or give, in minutes: the stated ones (a field
        ``duration``, ``minutes``, ``duration_s``...; "45 min" in a text), the time between two
        times of one record (a ride's departure and arrival), between two subject times other than
        the clock (what the user said and what the episode set: "15 minutes before the 09:00
        meeting"), and between the clock and a city's clock, cached. The phone's clock is no
        end of a duration otherwise: "the 90-minute meeting" is not the time from its end to now.
        ``from_now``: for a duration told from now ("arrives in 25 minutes"): the stated ones
        and the time from the clock to each held time instead."""
        stated = self.subject.durations | self.did.durations | self.read.durations
        # a list's total length ("five songs, a bit over 19 minutes") is told, never a move of a time
        stated = stated | self.subject.list_lengths | self.did.list_lengths | self.read.list_lengths
        if from_now:
            if self.now is None:
                return set(stated)
            held = {_minutes(x) for ev in (self.subject, self.did, self.read) for x in ev.times | ev.end_times}
            return stated | {(x - self.now) % 1440 for x in held}
        if self._durations is None:
            out = set(stated | self.subject.spans | self.did.spans | self.read.spans)
            held = {x for ev in (self.subject, self.did) for x in ev.times | ev.end_times}
            # not the clock's time, unless the episode set that time itself
            times = sorted({_minutes(x) for x in (held - self.clock_times) | self.did.times | self.did.end_times})
            for a, b in itertools.combinations(times[:100], 2):
                out.update((b - a, 1440 - (b - a)))
            for a, b in itertools.product(self.clock_times, self.zone_times):
                out.update(((_minutes(b) - _minutes(a)) % 1440, (_minutes(a) - _minutes(b)) % 1440))
            self._durations = out
        return self._durations

    @functools.cached_property
    def gaps(self) -> set[int]:
        """The minutes between a time done or said and a time read (a flight landing ten minutes
        before a train the planner read of): what a duration told as "before"/"after" another
        moment may be."""
        times = sorted({_minutes(x) for ev in (self.subject, self.did) for x in ev.times | ev.end_times})[:50]
        read = sorted({_minutes(x) for x in self.read.times | self.read.end_times} - set(times))[:200]
        return {abs(a - b) for a in times for b in read}

    @functools.cached_property
    def currencies(self) -> frozenset[str]:
        """The currencies the episode's world holds amounts in (read, changed, in the fixtures,
        as they were) and those the user's words name ("how much is that in dollars?")."""
        pools = (self.subject, self.read, self.did, self.was)
        out = {c for ev in pools for _, c in (*ev.money, *ev.world_money) if c and c != BARE}
        for text in self.user_texts:
            out |= currencies_named(text)
        return frozenset(out)

    @functools.cached_property
    def codes(self) -> tuple[frozenset[str], frozenset[str]]:
        """The codes the world holds (:data:`_RE_CODE_TOKEN`, as :func:`code_key`) and those of
        them the episode's changes replaced (a booking moved gets a new code); read on first
        need, since few texts tell a code."""
        said, now, was = self.code_sources or ([], [], [])
        held_now = _codes_in(now)
        return frozenset(_codes_in(said) | held_now | _codes_in(was)), frozenset(_codes_in(was) - held_now)

    @functools.cached_property
    def splits(self) -> bool:
        """Whether the user asked for, or the episode did, a split: where any amount told may be a
        share ("Split the bill three ways"; a split call; a request to several people)."""
        goal = self.user_texts[0] if self.user_texts else ""
        writes = self.episode.writes if self.episode else []
        return bool(_SHARE_CUE.search(goal)) or any("split" in c.name for c in writes)

    @functools.cached_property
    def digit_codes(self) -> tuple[frozenset[str], frozenset[str]]:
        """The runs of three to eight digits in the world's strings (the goal, memory, results
        and the changed records, the planner's own words aside) and those of them told there as a
        code (:data:`RE_DIGIT_CODE_TOLD`: "The gate code of our building is 4716"), read on
        first need."""
        said, now, was = self.code_sources or ([], [], [])
        runs: set[str] = set()
        cued: set[str] = set()
        for x, _, _, _ in _walk([said, now, was]):
            if isinstance(x, str) and len(x) <= 4000 and x.strip() not in self.written:
                runs.update(_DIGIT_RUN.findall(x))
                cued.update(m[1] for m in RE_DIGIT_CODE_TOLD.finditer(x))
        return frozenset(runs), frozenset(cued)

    @functools.cached_property
    def read_spans(self) -> frozenset[tuple[str, str]]:
        """The (start, end) times (``HH:MM``) of the records the calls returned: an event's, a
        delivery window's (``window_start``/``window_end``), read on first need."""
        calls = self.episode.calls if self.episode else []
        return _time_spans(_mappings([c.feedback.result for c in calls if c.ok]))

    @functools.cached_property
    def seats(self) -> tuple[frozenset[str], frozenset[str]]:
        """The seats (``"19C"``) the world holds (a ``seat`` field or a seat told in the user's
        words and the results) and those the changed records hold now, read on first need."""
        said, now, was = self.code_sources or ([], [], [])

        def seats(values: Any, text: bool) -> set[str]:
            out = set()
            for x, key, _, _ in _walk(values):
                if isinstance(x, str) and key in ("seat", "seats") and _RE_SEAT_CODE.fullmatch(x.strip()):
                    out.add(x.strip().upper().replace(" ", ""))
                elif isinstance(x, str) and key in ("seat", "seats"):  # "F5, F6"
                    out.update(y.upper().replace(" ", "") for y in _RE_SEAT_CODE.findall(x))
                elif text and isinstance(x, str) and len(x) <= 4000:
                    out.update(
                        y.upper().replace(" ", "") for m in RE_SEAT.finditer(x) for y in _RE_SEAT_CODE.findall(m[1])
                    )
            return out

        now_seats = seats(now, False)
        return frozenset(seats(said, True) | now_seats | seats(was, False)), frozenset(now_seats)

    @functools.cached_property
    def numbers(self) -> frozenset[str]:
        """The flight and train numbers the world holds (:data:`RE_SERVICE_NUMBER`, spaces left
        out: "AR747"), read on first need; the texts the planner wrote hold none."""
        said, now, was = self.code_sources or ([], [], [])
        return frozenset(_service_numbers([said, now, was], skip=self.written))

    def clashes(self, type: str, value: Any, unit: str) -> bool:
        """Whether an amount ``value`` told in currency ``unit`` is one the world knows only in
        other currencies (a price listed without its currency, which the shop's other records
        give as EUR, told in USD); False for other types and amounts the world never states."""
        if type != "money" or not unit:
            return False
        pool = self.every.money | self.every.world_money
        known = {c for a, c in pool if c and c != BARE and abs(a - round(value, 2)) <= 0.011}
        return bool(known) and unit not in known

    def holds(self, type: str, value: Any, unit: str = "") -> bool:
        """Whether the grounds hold ``value`` of ``type`` anywhere: in any part or named
        record, derived values included (a time ``"HH:MM"``, a date ``"YYYY-MM-DD"``, an
        amount with its ``unit`` currency, a temperature with ``"C"``/``"F"``, an address, an
        E.164 number, a distance as ``(km, exact, rough)`` of :func:`distance_claims`: within
        its rounding or, told "about", its share of a distance held). A value held nowhere contradicts the world whatever sentence tells it;
        one held somewhere may still be told of the wrong record (see :func:`check_text`)."""
        if type == "money" and any(
            _money_ok(round(value, 2), unit, self._derived_money(p)) for p in (self.subject, self.read, self.did)
        ):
            return True
        if type == "distance":  # (km, the rounding its digits allow, the share "about" allows): distance_claims
            km, exact, rough = value
            return any(abs(km - w) <= max(exact, rough * w) for w in self.distances)
        later = self.read.durations
        pools = (self.subject, self.read, self.did, self.every)
        return any(_held_in(ev, type, value, unit, later) for ev in pools)

    def anchors(self, clause: str, type: str) -> list[Named]:
        """The named records ``clause`` is about that hold values of ``type``: of those it names
        by a word (not one most records share) or a code, the ones it names in full (every name
        word, or a code) and the ones it names best (most words): "Paid Phone November" is about
        the Phone November bill, not the Internet November one beside it."""
        low = clause.lower()
        words = set(_TOKEN.findall(low))
        scored: list[tuple[int, bool, Named]] = []
        holding = [n for n in self.named if (n.places if type == "place" else _holds(n.ev, type))]
        for n in holding:
            hits = sum(t in words and t not in self._common for t in n.tokens)
            coded = any(c in low for c in n.codes)
            if hits or coded:
                whole = coded or all(t in words or t in self._common for t in n.tokens)
                scored.append((hits + 2 * coded, whole, n))
        if not scored:
            # named only by words most records share: the records it names by any of them, when
            # that leaves others out ("at Kino Central" among showtimes at Kino Central and one
            # at Astor Filmpalast; "in Edinburgh": the weather there and the flight to it)
            some = [n for n in holding if n.tokens & words]
            return some if len(some) < len(holding) else []
        best = max((k for k, _, _ in scored), default=0)
        out = [n for k, whole, n in scored if whole or k == best]
        if type != "place" and len(out) > 1:
            # where the clause also says where: the ones there ("the pottery class at Harbour
            # Hall" of two pottery classes, the other at Pier 7)
            there = [n for n in out if any(len(p) > 3 and p.lower() in low for p in n.places)]
            if there and len(there) < len(out):
                return there
        return out

    def ok(
        self, type: str, value: Any, pool: Evidence, text: str, start: int, unit: str = "", ending: bool = False
    ) -> bool:
        """Whether ``value`` (a claim of ``type`` at ``start`` of ``text``) is in ``pool``;
        ``ending``: the claim is the far end of a range (an end time grounds it)."""
        kept = pool is self.subject or pool is self.read or pool is self.did
        if type == "time":
            # what the episode set is told as set ("reminder at 16:00"), not moved by a duration
            times = pool.times if pool is self.did else self._derived_times(pool) if kept else pool.derived_times()
            if _time_ok(value, text, start, times):
                return True
            cued = ending or bool(_END_CUE.search(text[max(0, start - 40) : start]))
            return cued and _time_ok(value, text, start, pool.end_times)
        if type == "money":
            # a share only where the text tells one ("£21.50 each", "your share"), in its clause
            a, z = _clause_span(text, start)
            shares = bool(_SHARE_CUE.search(text[a:z])) or self.splits
            money = self._derived_money(pool, shares) if kept else pool.derived_money(shares=shares)
            return _money_ok(round(value, 2), unit, money)
        if type == "temperature":
            return _temp_ok(value, unit, pool.temps)
        return False


def _held_in(ev: Evidence, type: str, value: Any, unit: str, later: Iterable[int]) -> bool:
    if type == "time":
        return value in ev.derived_times(later) or value in ev.end_times
    if type == "date":
        return value in ev.dates or value[5:] in ev.month_days or value[5:] in {d[5:] for d in ev.dates}
    if type == "money":
        return _money_ok(round(value, 2), unit, ev.derived_money())
    if type == "temperature":
        return _temp_ok(value, unit, ev.temps)
    if type == "email":
        return str(value).lower() in ev.emails
    if type == "phone":
        return value in ev.phones
    if type in ("count", "percent"):
        return value in ev.counts
    return False


def _holds(ev: Evidence, type: str) -> bool:
    if type == "status":
        return bool(ev.statuses)
    if type == "percent":
        return bool(ev.counts)
    if type == "duration":
        return bool(ev.spans or ev.durations)
    return bool({"time": ev.times | ev.end_times, "date": ev.dates, "money": ev.money, "temperature": ev.temps}[type])


def _named(rec: Mapping[str, Any], ctx: Context) -> Named | None:
    names = [str(v) for k, v in rec.items() if k in _NAME_KEYS and isinstance(v, str) and v.strip()]
    rid = rec.get("id")
    if not names and isinstance(rid, str) and _WORDY_ID.fullmatch(rid):  # a setting: "ring_volume"
        names = [rid.replace("_", " ")]
    if not names:
        return None
    tokens = frozenset(t for n in names for t in _TOKEN.findall(n.lower()) if t not in STOPWORDS)
    codes = tuple(
        n.lower() for n in names if any(ch.isdigit() for ch in n) and len(n) <= 12 and re.search(r"[a-z]", n, re.I)
    )
    if not tokens and not codes:
        return None
    ev = evidence_of([rec], ctx, clock=False)
    _add_reminders(ev, [rec])  # "24 hours before (Friday 27 Nov at 1 PM)"
    cur = rec.get("currency") if isinstance(rec.get("currency"), str) else ""
    amounts = tuple(
        (str(k), float(v), cur)
        for k, v in rec.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and _MONEY_KEYS.search(str(k))
    )
    refs = frozenset(v for k, v in rec.items() if str(k).endswith("_id") and isinstance(v, str))
    places = tuple(
        v.strip() for k, v in rec.items() if k in _PLACE_KEYS and isinstance(v, str) and 4 <= len(v.strip()) <= 80
    )
    rid = rid if isinstance(rid, str) else ""
    content = tuple(rec[k] for k in _CONTENT_KEYS if rec.get(k))  # a note's body, a list's items, a playlist's tracks
    return Named(tokens, codes, ev, names[0], amounts, tuple(names), rid, refs, places, content=content)


_CONTENT_KEYS = ("body", "content", "items", "tracks", "songs", "lines", "entries", "checklist")
"""Fields that hold what a record contains (a note's body, a list's items, a playlist's tracks):
a list told of the record must be in them."""
_PLACE_KEYS = frozenset({"location", "place", "venue", "address", "where", "meeting_point"})
"""Fields that say where a record is: a place told in a text is one of these of a record read."""


def _id_records(value: Any) -> Iterable[Mapping[str, Any]]:
    """The records in ``value`` that have an ``id``."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            if isinstance(v.get("id"), (str, int)):
                yield v
            stack.extend(x for x in v.values() if isinstance(x, (Mapping, list, tuple)))
        elif isinstance(v, (list, tuple)):
            stack.extend(v)


_TOTAL_KEYS = re.compile(r"(?:grand_)?total(?:_amount|_price|_cost|_paid)?|amount_total", re.I)
_TOTAL_CUE = re.compile(
    r"\b(?:(?:in\s+)?total|totall?ing|in\s+all|altogether|all\s+told|all\s+in|combined|overall"
    r"|for\s+(?:the\s+)?(?:whole|entire)\s+(?:trip|stay|order|thing|lot)|for\s+(?:both|all\s+(?:of\s+them|three|four))"
    r"|(?:with|including|incl\.?)\s+(?:the\s+)?"
    r"(?:delivery|shipping|fees?))\b",
    re.I,
)
"""Words that tell an amount as a total: "59.25 AUD in total", "a total of", "altogether"."""
_TOTAL_ACT = re.compile(
    r"(?:^|[^\w\s]\s*|\b(?:i|we|i\s+have|we\s+have|just|also|and|then)\s+)"
    r"(?:order|bought|buy|paid|pay|book|reserv|checked\s+out|purchas|placed|sent|transferr)\w*\b",
    re.I,
)
"""The planner's own act of buying or paying, at the start of a clause ("Ordered ...", "I paid"),
whose total an amount told as a total is ("Ordered ...: 59.25 AUD in total")."""
_THATS = re.compile(
    r"^\s*(?:that(?:'s|\s+is|\s+was|\s+comes\s+to|\s+came\s+to|\s+makes)|which\s+(?:is|comes\s+to|makes))\s*"
    r"(?:just\s+|only\s+|a\s+total\s+of\s+)?$",
    re.I,
)
"""An amount told as what the act before it came to, in a sentence of its own: "That's 24.00 GBP"."""
_TOTAL_SAID = re.compile(
    r"(?:^|[.;!?]\s+|,\s+|[-\u2013\u2014]\s+)(?:the\s+|your\s+|order\s+)?(?:new\s+|grand\s+|order\s+|cart\s+|basket\s+)*total"
    r"(?:\s+(?:is|was|came\s+to|comes\s+to|will\s+be|of))?(?:\s+now)?\s*:?\s*(?:just\s+|only\s+)?$"
    r"|\b(?:order|bought|buy|paid|pay|purchas|placed)\w*\b[^.;!?]*\sfor\s+$",
    re.I,
)
"""An amount told as the total of what was bought, in a sentence of its own ("... The total is
21.25 AUD") or after "for" in a clause of buying ("Ordered two Bun Cha ... for 24.0 GBP")."""


def _totals(records: Sequence[Any], results: Sequence[Any]) -> set[tuple[float, str]]:
    """The totals of what the episode did, with their currency (``""`` unknown): the fields
    ``total``, ``grand_total``, ``total_amount``... of the changed ``records`` as they are now,
    and their sum per currency (two orders placed); where none holds one, those of the last
    write's result that holds any (a cart's total is its last, not each one on the way)."""
    found = [_held_totals(r) for r in records[:200]]
    out = {x for f in found for x in f}
    if not out:  # the last write's, where it tells one (an earlier one's is stale: a line removed since)
        return _held_totals(results[-1]) if results else set()
    sums: dict[str, float] = {}
    for a, c in (x for f in found for x in f):
        sums[c] = sums.get(c, 0.0) + a
    return out | {(round(a, 2), c) for c, a in sums.items()}


def _line_sums(changed: Sequence[Any], ctx: Context) -> set[tuple[float, str]]:
    """The sum of ``qty`` x ``price`` over the rows of each table the episode changed whose rows
    have both, as the end state holds them (a cart after a line was removed: no call returned
    that total, but the planner can work it out); currency ``""`` unknown."""
    out = set()
    for table in {ch.table for ch in changed if not isinstance(ch, Mapping)}:
        total: float = 0
        rows = 0
        for r in (ctx.tables.get(table) or {}).values():  # stops at the first row without both
            if not isinstance(r, Mapping):
                continue
            qty, price = r.get("qty"), r.get("price")
            if not (isinstance(qty, (int, float)) and isinstance(price, (int, float))):
                break
            total += qty * price
            rows += 1
        else:
            if rows:
                out.add((round(total, 2), ""))
    return out


def _held_totals(value: Any) -> set[tuple[float, str]]:
    """The totals (:data:`_TOTAL_KEYS`) anywhere in ``value``, with their currency (:func:`_walk`)."""
    return {
        (round(float(leaf), 2), cur)
        for leaf, key, cur, _ in _walk(value)
        if _TOTAL_KEYS.fullmatch(key) and isinstance(leaf, (int, float)) and not isinstance(leaf, bool)
    }


def _records(value: Any) -> Iterable[Mapping[str, Any]]:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            if any(k in _NAME_KEYS for k in v):
                yield v
            stack.extend(x for x in v.values() if isinstance(x, (Mapping, list, tuple)))
        elif isinstance(v, (list, tuple)):
            stack.extend(v)


@dataclass
class WorldGrounds:
    """What the fixtures add to an episode's grounds (see :func:`world_grounds`): their amounts
    (``ev.world_money``), the records a clause can name, and their ``names``
    (:func:`~phoneenv.tasks.names.record_names`)."""

    ev: Evidence
    named: list[Named]
    names: list[str] = field(default_factory=list)


def world_grounds(records: Iterable[Mapping[str, Any]], ctx: Context, *, limit: int = 2000) -> WorldGrounds:
    """The :class:`WorldGrounds` of fixture ``records`` (the tables of the apps an episode
    used), read once per task; at most ``limit`` records are read (a table of 100,000 rows
    costs no more than one of 2,000)."""
    recs = list(itertools.islice(records, limit))
    ev = evidence_of(recs, ctx, world=True, clock=False)
    named = [n for r in recs if (n := _named(r, ctx))]
    return WorldGrounds(ev, named, record_names(recs))


_SIZE_WORDS = {"extra small": "XS", "small": "S", "medium": "M", "large": "L", "extra large": "XL"}
RE_SIZE = re.compile(
    r"\bsize\s+(?:(?:UK|EU|US|EUR)\s+)?(\d{1,2}(?:[.,]5)?|X{0,3}[SL]|M|XXL|XXXL|extra[\s-]small|small|medium"
    r"|extra[\s-]large|large)\b(?![.,]\d)",
    re.I,
)
"""A clothing or shoe size told: "in size 43", "size M", "size UK 9.5", "size medium"."""


def size_key(size: str) -> str:
    """A size as sizes are compared: "medium" → "M", "9,5" → "9.5", "xl" → "XL"."""
    s = " ".join(size.lower().replace("-", " ").split())
    return _SIZE_WORDS.get(s, s.upper().replace(",", "."))


def _sizes(values: Any) -> frozenset[str]:
    """The sizes (:func:`size_key`) that fields ``size`` and ``sizes`` of ``values`` hold."""
    return frozenset(
        size_key(str(x))
        for x, key, _, _ in _walk(values)
        if key in ("size", "sizes") and isinstance(x, (str, int, float)) and not isinstance(x, bool) and str(x).strip()
    )


_SWITCH_KEYS = frozenset(
    {"enabled", "favorite", "pinned", "subscribed", "liked", "downloaded", "played", "done", "read", "on"}
)
"""The yes/no arguments that switch a tool's act on or off (``notes.pin(pinned=False)`` unpins)."""


def act_name(call: Any) -> str:
    """The act one write ``call`` did, named as a tool: its own name, or where it switched a
    thing off (a :data:`_SWITCH_KEYS` argument false) the name with "un" before its action:
    ``notes.pin(pinned=False)`` is ``notes.unpin``, ``settings.set_dnd(enabled=False)`` is
    ``settings.unset_dnd``, so an act told ("pinned", "muted") needs a call that did it, not
    one that undid it."""
    args = call.arguments if isinstance(call.arguments, Mapping) else {}
    if any(args.get(k) is False for k in _SWITCH_KEYS):
        app, _, action = call.name.rpartition(".")
        return f"{app}.un{action}"
    return call.name


def _touched(
    call: Any, record: Callable[[str], Mapping[str, Any] | None]
) -> tuple[str, tuple[str, ...], frozenset[float]]:
    """What one write ``call`` was about: ``(tool, strings, amounts)``, the :func:`words` of the
    short strings and the numbers of its arguments and result and of the records they name by id,
    two links deep (``{"request_id": "rq_3"}`` is about the request rq_3, and through its
    ``payee_id`` about the payee: their names, the amount). ``record``: an id's record, or None.
    The planner's own texts are left out."""
    strings: list[str] = []
    amounts: set[float] = set()
    seen: set[str] = set()

    def take(value: Any, depth: int) -> None:
        for leaf, key, _, _ in _walk(value):
            if isinstance(leaf, bool) or key in AUTHORED_KEYS:
                continue
            if isinstance(leaf, (int, float)):
                amounts.add(round(float(leaf), 2))
            elif isinstance(leaf, str) and 2 <= len(leaf) <= 80:
                strings.append(words(leaf))
                if depth and key != "id" and leaf not in seen and (rec := record(leaf)) is not None:
                    seen.add(leaf)
                    take(rec, depth - 1)

    take([call.arguments, call.feedback.result], 2)
    return act_name(call), tuple(dict.fromkeys(strings)), frozenset(amounts)


def _main_amount(call: Any) -> float | None:
    """The amount one write moved: its argument or result ``amount`` (or ``total``), or that of
    a record its result holds (a payment's ``transaction``), or None; None for a write that
    moves no money (a declined request)."""
    if not any(STATUS_FAMILIES[f][1](act_name(call)) for f in ("paid", "requested", "ordered", "sent", "scheduled")):
        return None
    result = call.feedback.result
    nested = [v for v in result.values() if isinstance(v, Mapping)] if isinstance(result, Mapping) else []
    for value in (call.arguments, result, *nested):
        if isinstance(value, Mapping):
            for key in ("amount", "total", "amount_due"):
                x = value.get(key)
                if isinstance(x, (int, float)) and not isinstance(x, bool):
                    return float(x)
    return None


def _named_before(lead: str) -> bool:
    """Whether ``lead`` ends with a person's given name (the subject of the verb after it):
    "Mary sent it", at the start of a sentence too."""
    from phoneenv.tasks.world import given_names

    m = re.search(r"\b([A-Z][a-z]+)\s+$", lead)
    return m is not None and m[1] not in ("I", "Then", "Also", "Just", "So", "And") and m[1].casefold() in given_names()


_RECORD_ID = re.compile(r"[a-z]{1,8}_\w{1,30}")
"""A value that may be a record's id ("rq_3", "py_5", "acct_1")."""
_OBJECT_STOP = re.compile(
    r"\s(?:and(?=\s+(?:(?:also|then|just|now)\s+)?(?:i|we|\w+ed|put|set|sent|made|took|gave|left|kept|told|paid"
    r"|got|rang|let|found|brought|bought|began|ran|did|is|are|was|were|has|have|will|it|they|she|he)\b)"
    r"|but|then|while|whereas|after|before|instead|because|since|than|except|apart)\b|[,;:](?!\d)|[()]",
    re.I,
)
"""Where the object of an act told ends: "Paid Lee Metcalfe and declined ...", "Paid Ann, ...";
an "and" before no verb joins a second object ("Removed Rusty Gate and Night Swim")."""


def _other_act(
    text: str, start: int, does: Callable[[str], bool], g: Grounds, ctx: Context, money: bool = False
) -> tuple[str, str] | None:
    """``(said, why)`` where the object of an act told at ``start`` in ``text`` (a person's name
    or an amount, up to the next clause or act: "Paid Lee Metcalfe and declined Aaron Thomas's
    request") is what only the episode's writes of another kind were about (:func:`_touched`):
    the planner declined Lee's request and paid Aaron's. A person or amount no write was about is
    left to the other checks; one a write of the told kind was about is right. ``money``: the
    act moves money (paid, sent, requested): an amount told of it must be one its writes were
    about, or their amounts' sum ("Paid 1230 EUR" for a payment of 1260 fails); so must one told
    "each" ("Requested 66.40 EUR from each" for requests of 44.26)."""
    if not g.touched:
        return None
    from phoneenv.tasks.world import given_names, surnames  # Faker's name lists: loaded on first use

    end = _CLAUSE.search(text, start)
    tail = text[start : end.start() if end else len(text)]
    if (stop := _OBJECT_STOP.search(tail)) is not None:
        tail = tail[: stop.start()]
    said: list[tuple[str, Callable[[tuple[str, ...], frozenset[float]], bool]]] = []
    for m in full_names(tail):
        if m[1].casefold() in given_names() or m[2].casefold() in surnames():
            w = words(m[0])
            said.append((m[0], lambda strs, _, w=w: any(w in s for s in strs)))
    if not said:
        for m in re.finditer(r"\b[A-Z][a-z]{2,}\b", tail):
            if m[0].casefold() in given_names():
                w = words(m[0])
                said.append((m[0], lambda strs, _, w=w: any(w in s for s in strs)))
    sc = scan(tail, ctx)  # the amounts told with a currency ("¥4,518", "11.00 GBP")
    amounts = [(sc.text[c.start : c.end], round(float(c.value), 2)) for c in sc.claims if c.type == "money" and c.unit]
    for said_amount, v in amounts:
        said.append((said_amount, lambda _, amts, v=v: v in amts))
    for what, about in said:
        hit = sorted({tool for tool, strs, amts in g.touched if about(strs, amts)})
        if hit and not any(does(tool) for tool in hit):
            return what, f"{what} is what the episode's {', '.join(hit[:3])} call was about"
    if money or _EACH.search(tail):  # "Paid 1230 EUR" for 1260; "Requested 66.40 EUR from each" for 44.26
        own = {a for tool, _, amts in g.touched if does(tool) for a in amts}
        if not own or _TOTAL_CUE.search(tail):
            return None  # a total is checked as one (see check_text)
        mains = [main for tool, main in g.main_amounts if does(tool) and main is not None]
        for said_amount, v in amounts:
            close = [*own, sum(mains)] if len(mains) > 1 and not _EACH.search(tail) else own
            if not any(abs(v - a) <= max(0.011, a / 2000) for a in close):  # a share rounded (4518 for 4519 JPY)
                tools = ", ".join(sorted({t for t, _, _ in g.touched if does(t)})[:3])
                return said_amount, f"the episode's {tools} set no such amount"
    return None


def _addressed(call: Any) -> set[str]:
    """The record ids a write ``call`` addressed: the id-like strings of its arguments (``id``,
    ``…_id``, ``…_ids`` fields) and the ``id`` or ``deleted`` its result names."""
    out = {
        leaf
        for leaf, key, _, _ in _walk(call.arguments)
        if isinstance(leaf, str) and re.fullmatch(r"(?:\w+_)?ids?", str(key))
    }
    res = call.feedback.result if call.ok else None
    if isinstance(res, Mapping):
        out.update(v for k in ("id", "deleted") if isinstance(v := res.get(k), str))
    return out


def _other_record(text: str, start: int, does: Callable[[str], bool], g: Grounds) -> tuple[str, str] | None:
    """``(said, why)`` where the object of an act told at ``start`` in ``text`` names, in full, a
    record the episode read that no write of that act addressed, while those writes addressed
    other records of its kind (ids of one prefix: "ci_3" beside "ci_2"): "I took the cast-iron
    pan out" where the charger's line was removed and the pan's kept; of objects joined by "and"
    each ("Removed Rusty Gate and Night Swim" where only Rusty Gate went). None otherwise, or
    where the object names one of the addressed records too."""
    if g.episode is None:
        return None
    mine = set().union(*(_addressed(c) for c in g.episode.writes if does(act_name(c))))
    kinds = {i.partition("_")[0] for i in mine if "_" in i}
    if not kinds:
        return None
    end = _CLAUSE.search(text, start)
    tail = text[start : end.start() if end else len(text)]
    if (stop := _OBJECT_STOP.search(tail)) is not None:
        tail = tail[: stop.start()]
    for part in re.split(r"\s+and\s+", tail):  # each object: "Removed Rusty Gate and Night Swim"
        said = set(_TOKEN.findall(part.lower()))
        hits = [
            n
            for n in g.named
            if n.rid
            and n.rid.partition("_")[0] in kinds
            and n.tokens
            and n.tokens <= said
            and len(n.tokens) + len(n.codes) >= 2  # two name words: one ("Phone") is too easily said of another thing
        ]
        if not hits or any(n.rid in mine for n in hits):
            continue  # names no record, or one the act addressed
        other = sorted({n.label for n in g.named if n.rid in mine})
        why = f"the episode's act was about {', '.join(other[:3]) or 'another record'}, not {hits[0].label}"
        return hits[0].label, why
    return None


_RE_LISTED = re.compile(
    r"(?P<head>[^.;:!?()\n]{3,80}?)\s*"
    r"(?:\((?:it\s+(?:had|has|said|says|read|reads)\s*:\s*)?|:\s*"
    r"|\s+(?:is\s+now|now\s+(?:has|holds|reads)|has|holds|contains|reads)\s*:?\s+)"
    r"(?P<items>[^()\n.;:!?]{3,240}?)\s*(?:\)|[.;!?\n]|$)"
)
"""A record's name and a list told of it: "the Packing list note (passport, charger, socks)", "On
the Hardware store list: sunscreen, plasters", "Morning run is now: Last Tram, Sunday Swell"."""
_ITEM_SPLIT = re.compile(r"\s*(?:,|\band\b|\bthen\b|&|\+|\u2192|->)\s*", re.I)


def _listed_claims(text: str, g: Grounds) -> list[tuple[str, tuple[str, ...], str]]:
    """``(said, held, why)`` for each item of a list told as a named record's contents (two
    items or more, words only: no number, time or amount) that the record does not hold: none of
    its words (three letters or more, a plural "s" aside) is in any version of the record ("On
    the Hardware store list: sunscreen, plasters, basmati rice and batteries" where the list
    holds no batteries). Records are named in full by their name words (:attr:`Named.tokens`)."""
    out: list[tuple[str, tuple[str, ...], str]] = []
    for m in _RE_LISTED.finditer(text):
        items = [x.strip(" '\"\u2018\u2019\u201c\u201d*") for x in _ITEM_SPLIT.split(m["items"])]
        items = [x for x in items if x]
        if len(items) < 2 or any(re.search(r"\d", x) or len(x.split()) > 5 for x in items):
            continue
        named = _best_named(m["head"], g, lambda n: bool(n.content))
        if not named:  # "(it had: ...)", "list: ...": the one record that holds most of the items told
            ends = [e.end() for e in _CLAUSE.finditer(text, 0, m.start())]
            named = _best_named(text[ends[-1] if ends else 0 : m.start("items")], g, lambda n: bool(n.content))
        if not named:
            holders = {
                n.rid: n
                for n in g.named
                if n.content and sum(f" {words(x).strip()} " in n.text for x in items if words(x).strip()) >= 2
            }
            named = list(holders.values()) if len(holders) == 1 else []
        if not named:
            continue
        held = " ".join(n.text for n in named)
        lines = [
            words(line).split()
            for n in named
            for x, _, _, _ in _walk(list(n.content))
            if isinstance(x, str)
            for line in re.split(r"\n|,\s*|;\s*", x)
        ]
        for item in items:
            ws = [w for w in _TOKEN_ANY.findall(words(item)) if len(w) >= 3 and w not in STOPWORDS]
            if not ws:
                continue
            label = named[0].label
            if not any(f" {w} " in held or f" {w.removesuffix('s')} " in held or f" {w}s " in held for w in ws):
                out.append((item, (label,), f"{label} holds no {item!r}"))
            elif (line := _one_word_off(words(item).split(), lines)) is not None:
                out.append((item, (line,), f"{label} holds {line!r}, not {item!r}"))
    return out


def _one_word_off(item: list[str], lines: list[list[str]]) -> str | None:
    """The line of ``lines`` (each as :func:`words`) that ``item`` (the same) tells with one word
    swapped ("coffee filters" for "coffee beans", "scarf for dad" for "scarf for mom"), where no
    line is ``item`` itself; None where none is (a plural "s" is no swap)."""

    def same(a: str, b: str) -> bool:
        return a.removesuffix("s") == b.removesuffix("s")

    if any(len(x) == len(item) and all(same(a, b) for a, b in zip(x, item, strict=True)) for x in lines):
        return None
    for x in lines:
        if len(x) == len(item) >= 2 and sum(not same(a, b) for a, b in zip(x, item, strict=True)) == 1:
            return " ".join(x)
    return None


_RE_ECHO_WORD = re.compile(r"[\w'$\u00a3\u20ac\u00a5.+-]+")
_PERSON_FLIP = {
    "my": "your", "me": "you", "i": "you", "mine": "yours", "i'm": "you're", "myself": "yourself", "our": "your",
    "us": "you", "we": "you",
}  # fmt: skip
"""The user's words as the planner tells them back: "my blood type" is "your blood type"."""


_DATE_WORDS = frozenset((*WEEKDAYS, *(d[:3] for d in WEEKDAYS), "tues", "thurs", *MONTH_NAMES))
"""Weekdays (and their short forms) and months: a capital that is no name."""


def _value_like(words: Sequence[str], i: int) -> bool:
    """Whether ``words[i]`` (as written) is a name rather than a common word: a capital letter
    past its first ("AB", "iPhone"), or a capital first letter where no sentence starts ("Martin",
    "A" in "is A negative"; not "I"). Numbers, times, codes, weekdays and months are left to
    their typed readers."""
    w = words[i].strip(".,;:!?'\u2019\"")
    if not w or w == "I" or any(ch.isdigit() for ch in w) or w.lower() in _DATE_WORDS:
        return False  # "from Friday 30 October": a date's words, read as a date
    starts = i == 0 or words[i - 1].endswith((".", ":", "!", "?"))
    return any(ch.isupper() for ch in w[1:]) or (w[0].isupper() and not starts)


def _echo_slips(text: str, g: Grounds) -> list[tuple[str, tuple[str, ...], str]]:
    """``(said, held, why)`` where a sentence of ``text`` tells back a text the episode wrote
    (a memory saved, a reminder, a note: three words or more, most of them told in order, the
    user's "my" as "your") with one name swapped for another: a word or two that
    :func:`_value_like` reads as a name on both sides ("your blood type is AB negative" where the
    episode saved "My blood type is A negative"; "book a table for you and Mark" for "... me and
    Martin"). A reworded common word ("reserve" for "book") is free speech; so is a number, and
    words told elsewhere in the sentence ("Riverside Market photos from Friday 30 October" for
    "Photos from Riverside Market, 30 October")."""
    import difflib

    if g.episode is None:
        return []

    def toks(s: str) -> tuple[list[str], list[str]]:
        """The words of ``s`` as written, and as compared (lower case, the user's "my" as "your")."""
        raw = [w for w in _RE_ECHO_WORD.findall(s.replace("\u2019", "'")) if w.strip(".")]
        return raw, [_PERSON_FLIP.get(k := w.strip(".").lower(), k) for w in raw]

    written = {
        x.strip(): toks(x)
        for c in g.episode.writes
        for x, _, _, _ in _walk(c.arguments)
        if isinstance(x, str) and 3 <= len(x.split()) <= 40
    }
    if not written:
        return []

    out: list[tuple[str, tuple[str, ...], str]] = []
    for sentence in re.split(r"(?<=[.!?;])\s+|\n+", text):
        t_raw, t_low = toks(sentence)
        if len(t_low) < 3:
            continue
        for w, (w_raw, w_low) in written.items():
            sm = difflib.SequenceMatcher(None, w_low, t_low, autojunk=False)
            same = sum(b.size for b in sm.get_matching_blocks())
            if same < max(3, 0.6 * len(w_low)):
                continue
            for op, i1, i2, j1, j2 in sm.get_opcodes():
                if op != "replace" or not (1 <= i2 - i1 <= 2 and 1 <= j2 - j1 <= 2):
                    continue
                if not (
                    any(_value_like(w_raw, i) for i in range(i1, i2))
                    and any(_value_like(t_raw, j) for j in range(j1, j2))
                ):
                    continue
                if set(w_low[i1:i2]) <= set(t_low[:j1] + t_low[j2:]):
                    continue  # told elsewhere in the sentence: words moved, not swapped
                was, told = (" ".join(x).strip(".,;:!?") for x in (w_raw[i1:i2], t_raw[j1:j2]))
                if not any(said == told and held == (was,) for said, held, _ in out):
                    out.append((told, (was,), f"the episode wrote {w!r}: {was!r}, not {told!r}"))
                break
    return out


_RE_FIELD_TOLD = re.compile(
    r"\b(?P<field>reason|note|memo|label|category|subject)\b(?:\s+(?:as|was|is|of))?\s*[:=]?\s*"
    r"(?:[\"'\u201c\u2018](?P<quoted>[^\"'\u201d\u2019\n]{2,60})[\"'\u201d\u2019]|(?<=:)\s*(?P<bare>[^()\n.;,]{2,60}?)\s*(?=[).;,\n]|$))",
    re.I,
)
"""A field of what the episode wrote told with its value: "I gave the reason as 'damaged'",
"(reason: changed my mind)", "label 'Gym'"."""


def _field_claims(text: str, g: Grounds) -> list[tuple[str, tuple[str, ...], str]]:
    """``(said, held, why)`` for each field value told (:data:`_RE_FIELD_TOLD`) where the
    episode's writes set that field (in their arguments or the records they changed) and none
    of the values set is the one told, as words either way ("the reason as 'damaged'" for a
    return whose reason is "changed my mind")."""
    if g.episode is None or not g.episode.writes:
        return []
    out: list[tuple[str, tuple[str, ...], str]] = []
    for m in _RE_FIELD_TOLD.finditer(text):
        field = m["field"].lower()
        said = (m["quoted"] or m["bare"] or "").strip()
        if not said:
            continue
        held = {
            str(x)
            for x, key, _, _ in _walk([[c.arguments for c in g.episode.writes], g.episode.now])
            if isinstance(x, str) and str(key).lower() == field and x.strip()
        }
        if not held:
            continue
        w = words(said)
        if any(w in words(h) or words(h) in w for h in held):
            continue
        shown = tuple(sorted(held)[:3])
        out.append((said, shown, f"the {field} the episode set is {', '.join(repr(h) for h in shown)}"))
    return out


_SWAP_SKIP_KEYS = re.compile(
    r"(?:^|_)(?:id|ids|status|kind|type|currency|unit|time|date|start|end|created|updated"
    r"|taken|published|last_update|estimated_delivery|tz|timezone|url|link|number|phone|email)$",
    re.I,
)
"""Fields whose values are no thing's own name or feature: ids, states, units, times, addresses of reach."""
_SWAP_NEAR = 5
"""Words at most between a value of one record and a value of its sibling for them to be told together."""


def _sibling_groups(g: Grounds) -> list[tuple[list[Mapping[str, Any]], list[dict[str, str]], dict[str, int]]]:
    """The list results of the episode's calls whose records share three keys or more (2 to 50
    records), each with its records' short string values by field (as :func:`words`, no ids,
    states, times or reach) and, per field, how many distinct values it has; read once per
    episode (cached on ``g``)."""
    if g._siblings is not None:
        return g._siblings
    groups: list[tuple[list[Mapping[str, Any]], list[dict[str, str]], dict[str, int]]] = []
    for c in g.episode.calls if g.episode is not None else ():
        if not c.ok or c.feedback.result is None or c.name == "finish":
            continue
        stack = [c.feedback.result]
        while stack:
            v = stack.pop()
            if isinstance(v, Mapping):
                stack.extend(x for x in v.values() if isinstance(x, (Mapping, list)))
            elif isinstance(v, list):
                recs = [x for x in v if isinstance(x, Mapping)]
                stack.extend(x for x in v if isinstance(x, (Mapping, list)))
                if not 2 <= len(recs) <= 50:
                    continue
                keys = set.intersection(*(set(r) for r in recs))
                fields = sorted(k for k in keys if not _SWAP_SKIP_KEYS.search(str(k)))
                if len(keys) < 3 or not fields:
                    continue
                values = [
                    {
                        f: words(r[f]).strip()
                        for f in fields
                        if isinstance(r[f], str) and 2 <= len(r[f].strip()) <= 40 and not re.search(r"\d{3}", r[f])
                    }
                    for r in recs
                ]
                distinct = {f: len({v[f] for v in values if f in v}) for f in fields}
                groups.append((recs, values, distinct))
    g._siblings = groups
    return groups


def _sibling_swaps(text: str, g: Grounds) -> list[tuple[str, tuple[str, ...], str]]:
    """``(said, held, why)`` for each value of one record told right beside a value of its
    sibling, as that sibling's: two records of one list result (records with the same keys)
    whose field ``F`` differ, a value of record B's ``F`` told within a few words of what names
    record A only, where A's own ``F`` is not told in that sentence part and nothing else of B
    is ("your DHL parcel with the hiking boots" where the boots come with UPS and the pan with
    DHL; "Paper Moon by Juniper Road" where Juniper Road sang another song of the list). A
    record the episode never read in a list (one result of its own) has no sibling here."""
    groups = _sibling_groups(g)
    if not groups:
        return []
    out: list[tuple[str, tuple[str, ...], str]] = []
    for part in re.split(r"[.;!?\n]+", text):
        if not part.strip():
            continue
        w = words(part)
        toks = w.split()
        for recs, values, distinct in groups:
            told = [{f: x for f, x in v.items() if f" {x} " in w} for v in values]
            found = False
            for b, tb in enumerate(told):
                if found:
                    break  # one swap a part: two records named by one thing each is one slip, told once
                if len(tb) != 1:
                    continue  # B is named by nothing, or by more than one of its own things: it is B
                ((f, x),) = tb.items()
                if distinct[f] < 2 or sum(1 for v in values if v.get(f) == x) != 1:
                    continue
                for a, ta in enumerate(told):
                    if a == b or not ta or f in ta or f not in values[a]:
                        continue
                    if min(_word_gap(toks, x.split(), y.split()) for y in ta.values()) <= _SWAP_NEAR:
                        said = next(
                            (m[0] for m in re.finditer(re.escape(str(recs[b][f])), part, re.I)), str(recs[b][f])
                        )
                        why = f"{f} {recs[b][f]!r} is another record's; this one's is {recs[a][f]!r}"
                        out.append((said, (values[a][f],), why))
                        found = True
                        break
    return out


def _word_gap(toks: list[str], x: list[str], y: list[str]) -> int:
    """The fewest words between an occurrence of words ``x`` and one of ``y`` in ``toks``."""

    def at(seq: list[str]) -> list[int]:
        n = len(seq)
        return [i for i in range(len(toks) - n + 1) if toks[i : i + n] == seq]

    best = 10**6
    for i in at(x):
        for j in at(y):
            gap = j - (i + len(x)) if j >= i else i - (j + len(y))
            best = min(best, max(gap, 0))
    return best


_RE_HAS_COUNT = re.compile(
    r"(?P<head>[^.;:!?()\n,]{3,60}?)\s+(?:now\s+|still\s+|only\s+)*(?:has|holds|contains|with|is\s+(?:now\s+)?(?:down|up)\s+to)"
    r"\s+(?:just\s+|only\s+)?(?P<n>\d{1,3})\s+(?:(?P<open>open|unchecked|remaining|pending)\s+)?"
    r"(?P<noun>songs|tracks|items|entries|tasks|photos|pictures|people|attendees|guests|stops|lines)\b",
    re.I,
)
"""A count told of a named record's contents: "Morning run still has 4 songs", "Errands now has
4 open items", "turned Groceries into a checklist with 4 items"."""
_RE_EMPTY = re.compile(
    r"(?P<head>[^.;:!?()\n,]{3,60}?)\s+(?:is|are)\s+(?:now\s+|all\s+)*(?:empty|cleared\s+out)\b(?!\s+of\b)", re.I
)
"""A named record's contents told as none left: "your Groceries list is now empty" (no open items)."""
_BACK_REFERENCE = re.compile(
    r"\s*(?:and\s+|so\s+)?(?:it|(?:that|this|the)(?:\s+(?:list|playlist|note|checklist|album|one))?)\s*", re.I
)
"""A count's subject that names the record told of before it: "it", "that list", "the playlist"."""
_CONTENT_LISTS = ("songs", "tracks", "items", "entries", "tasks", "photos", "attendees", "guests", "stops", "lines")


def _content_counts(text: str, g: Grounds) -> list[tuple[str, tuple[str, ...], str]]:
    """``(said, held, why)`` for each count told of a named record's contents
    (:data:`_RE_HAS_COUNT`) that the record's last version the episode saw does not hold: the
    length of its list of things (songs, items, photos..., or ids of them: ``song_ids``; "open"
    items: those not done), else the number of records that name it by id (a checklist's items
    kept as records of their own), never a count field, which may be of before the items changed. The
    last version: the record as the episode left it, else as the last call returned it
    ("Morning run still has 4 songs" after one of its 4 songs was removed fails). A list told
    "empty" (:data:`_RE_EMPTY`) holds no open item."""
    if g.episode is None:
        return []
    out: list[tuple[str, tuple[str, ...], str]] = []
    told = [(m, int(m["n"]), bool(m["open"]), m["noun"]) for m in _RE_HAS_COUNT.finditer(text)]
    told += [(m, 0, True, "open items") for m in _RE_EMPTY.finditer(text)]
    for m, n, open_, noun in told:
        named = _best_named(m["head"], g, lambda n: bool(n.rid))
        if not named and _BACK_REFERENCE.fullmatch(m["head"]):  # "Added to Market run; it now has 3 open items"
            named = _best_named(text[max(0, m.start() - 120) : m.start()], g, lambda n: bool(n.rid))
        last: dict[str, Mapping[str, Any]] = {}  # of each record named (a note and the checklist made of it)
        rids = {n.rid for n in named}
        for c in g.episode.calls:
            if c.ok and c.feedback.result is not None:
                last.update((r["id"], r) for r in _id_records(c.feedback.result) if r.get("id") in rids)
        last.update((r["id"], r) for r in g.episode.now if isinstance(r, Mapping) and r.get("id") in rids)
        held: set[int] = set()  # only lists the record holds: a count field may be of before the items changed
        for rec in last.values():
            for k, v in rec.items():
                if (k in _CONTENT_LISTS or str(k).endswith("_ids")) and isinstance(v, (list, tuple)):
                    done = sum(1 for x in v if isinstance(x, Mapping) and x.get("done"))
                    held.add(len(v) - done if open_ else len(v))
        if not held and last:  # its contents as records of their own that name it by id (a checklist's items)
            kids: dict[str, Mapping[str, Any]] = {}
            for value in (*(c.feedback.result for c in g.episode.calls if c.ok), g.episode.now):
                for r in _id_records(value):
                    if any(str(k).endswith("_id") and isinstance(v, str) and v in last for k, v in r.items()):
                        kids[r["id"]] = r
            if kids:
                held.add(sum(1 for r in kids.values() if not (open_ and r.get("done"))))
        if held and n not in held:
            shown = tuple(str(x) for x in sorted(held))
            label = " / ".join(dict.fromkeys(x.label for x in named if x.rid in last))
            out.append((m[0].strip(), shown, f"{label} holds {', '.join(shown)} {noun.lower()}"))
    return out


_WEATHER_FAMILIES: dict[str, frozenset[str]] = {
    "sunny": frozenset({"sun"}),
    "clear": frozenset({"sun"}),
    "partly cloudy": frozenset({"sun", "cloud"}),
    "cloudy": frozenset({"cloud"}),
    "overcast": frozenset({"cloud"}),
    "rain": frozenset({"rain"}),
    "showers": frozenset({"rain"}),
    "drizzle": frozenset({"rain"}),
    "thunderstorms": frozenset({"storm", "rain"}),
    "snow": frozenset({"snow"}),
    "sleet": frozenset({"snow", "rain"}),
    "fog": frozenset({"fog"}),
    "mist": frozenset({"fog"}),
    "windy": frozenset({"wind"}),
}
"""A weather condition a record holds → the kinds of weather it is."""
_RE_WEATHER_TOLD = re.compile(
    r"\b(?P<rain>rain(?:y|ing|s)?|showers?|showery|drizzl\w*|downpours?)\b|\b(?P<sun>sunny|sunshine|clear\s+skies)\b"
    r"|\b(?P<cloud>cloudy|overcast)\b|\b(?P<fog>fog(?:gy)?|misty?|hazy?)\b|\b(?P<snow>snow(?:y|ing)?|sleet)\b"
    r"|\b(?P<storm>storms?|stormy|thunder\w*)\b",
    re.I,
)
"""Weather told: "it'll be rainy", "sunny", "fog", "thunderstorms"."""
_WEATHER_HEDGE = re.compile(
    r"\b(?:no|not|without|dry|chance|risk|possib\w*|might|may|could|likely|unlikely|probability|in\s+case)\b|n't|%",
    re.I,
)


def _weather_claims(text: str, g: Grounds, ctx: Context) -> list[tuple[str, tuple[str, ...], str]]:
    """``(said, held, why)`` for each kind of weather told (:data:`_RE_WEATHER_TOLD`: rain, sun,
    cloud, fog, snow, storm) that no forecast the episode read holds for the day its clause
    names, or, where the clause names no day, for any day read ("tomorrow will be rainy" for a
    day of fog). Hedged or denied weather ("only a 16% chance of rain", "no rain") is no claim."""
    if g.episode is None:
        return []
    read: list[tuple[str, str]] = []  # (date or "", condition)
    for c in g.episode.calls:
        if c.ok and isinstance(c.feedback.result, (Mapping, list)):
            for r in itertools.islice(_mappings([c.feedback.result]), 200):
                cond = r.get("condition")
                if isinstance(cond, str) and cond.strip().lower() in _WEATHER_FAMILIES:
                    read.append((str(r.get("date") or "")[:10], cond.strip().lower()))
    if not read:
        return []
    out: list[tuple[str, tuple[str, ...], str]] = []
    dates = [c for c in claims(text, "date", ctx) if not c.negated and isinstance(c.value, str)]
    for m in _RE_WEATHER_TOLD.finditer(text):
        kind = next(k for k, v in m.groupdict().items() if v)
        a, z = _clause_span(text, m.start())
        after = re.match(r"[^.;!?\n]{0,12}", text[m.end() :])[0]  # "rain 65%", "rain chance 20%"
        hedged = _WEATHER_HEDGE.search(text[a : m.end()]) or re.search(r"%|chance|likely|possible", after)
        if hedged or (m[0][0].isupper() and text[a : m.start()].strip(" -*:")):
            continue  # hedged, or a name ("Rain Check Cafe", "Jon Snow")
        days = {c.value[:10] for c in dates if a <= c.start < z}
        pool = [cond for d, cond in read if not days or d in days] or [cond for _, cond in read]
        if not any(kind in _WEATHER_FAMILIES[cond] for cond in pool):
            held = tuple(sorted(set(pool)))[:3]
            out.append((m[0], held, f"the forecast read says {', '.join(held)}"))
    return out


def _clause_span(text: str, start: int) -> tuple[int, int]:
    """``(a, z)``: the bounds of the clause (:data:`_CLAUSE`) of ``text`` that holds ``start``."""
    a = max((e.end() for e in _CLAUSE.finditer(text, 0, start)), default=0)
    z = _CLAUSE.search(text, start)
    return a, z.start() if z else len(text)


def _best_named(head: str, g: Grounds, keep: Callable[[Named], bool] = lambda n: True) -> list[Named]:
    """The records of ``g.named`` (those ``keep`` accepts) that ``head`` names in full (every name
    word in it), of those the ones with the most name words ("Hardware store list" names the
    Hardware store list, not a record called "Store")."""
    said = set(_TOKEN.findall(head.lower()))
    named = [n for n in g.named if n.tokens and n.tokens <= said and keep(n)]
    best = max((len(n.tokens) for n in named), default=0)
    return [n for n in named if len(n.tokens) == best]


def _one_of_many(does: Callable[[str], bool], g: Grounds) -> bool:
    """Whether the episode's writes did the act ``does`` tells to one thing only (one call, no
    list of several in its arguments) while other writes did something else, or that one call
    named one record by id: "Paid both" where it paid one request and declined the other."""
    writes = g.episode.writes if g.episode else []
    mine = [c for c in writes if does(act_name(c))]
    if len(mine) != 1 or any(isinstance(v, (list, tuple)) and len(v) > 1 for v in mine[0].arguments.values()):
        return False
    # the others got a call of another kind, or the one call named one record by id ("Deleted both
    # of your calls with Bastian" where one log entry went)
    named = {str(v) for k, v in mine[0].arguments.items() if str(k).endswith("_id") and isinstance(v, str)}
    return len(writes) >= 2 or len(named) == 1


_DAY_KEYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


_RE_EVERY_DAYS = re.compile(
    r"\b(?:every\s+(?:single\s+)?(?P<all>day|night|evening|morning)(?:\s+of\s+the\s+week)?|(?P<all2>daily|nightly|7\s+days\s+a\s+week)"
    r"|(?P<wd>(?:every|on)\s+week(?:day|night)s?|weekdays|weeknights)|(?P<we>(?:every|on)\s+weekends?|weekends))\b",
    re.I,
)
"""Days of the week told as a set, not a range: "every night of the week", "daily", "weeknights",
"on weekends"."""


def _schedule_days(span: str, g: Grounds) -> tuple[tuple[str, ...], str] | None:
    """``(held, why)`` where a weekday range told ("Monday to Thursday") or a set of days
    (:data:`_RE_EVERY_DAYS`: "every night of the week") is no ``days`` list a changed record holds
    (a schedule set for Sunday to Thursday); None where it is one, or no changed record holds
    days, or the span is one weekday."""
    if not g.episode:
        return None
    if (every := _RE_EVERY_DAYS.fullmatch(span.strip())) is not None:
        told = set(_DAY_KEYS[:5]) if every["wd"] else set(_DAY_KEYS[5:]) if every["we"] else set(_DAY_KEYS)
    else:
        ends = [_weekday_of(w) for w in re.findall(WEEKDAY, span, re.I)]
        if len(ends) != 2 or None in ends:
            return None
        a, z = ends
        told = {_DAY_KEYS[(a + k) % 7] for k in range((z - a) % 7 + 1)}
    held = [
        frozenset(str(d).lower()[:3] for d in days)
        for r in g.episode.now[:200]
        if isinstance(r, Mapping) and isinstance(days := r.get("days"), (list, tuple)) and days
    ]
    if not held or any(told == h for h in held):
        return None
    shown = tuple(",".join(d for d in _DAY_KEYS if d in h) for h in held[:3])
    return shown, f"the schedule the episode set runs on {'; '.join(shown)}"


_BOTH = re.compile(r"\s+(?:both|all\s+(?:of\s+)?(?:the|your|them|those|these)\b|each\s+of\s+(?:the|your|them))", re.I)
"""An act told of every one of several things: "Paid both requests", "cancelled all of them"."""
_EACH = re.compile(r"\b(?:each|apiece|per\s+(?:person|head)|a\s+head|a\s+piece)\b", re.I)


def grounds(
    *,
    goal: str,
    calls: Sequence[Any],
    changed: Sequence[Any],
    memory: Iterable[Any] = (),
    world: WorldGrounds | None = None,
    ctx: Context,
    zone: str | None = None,
    expected: Sequence[Any] = (),
) -> tuple[Grounds, list[tuple[str, str]]]:
    """The :class:`Grounds` of an episode and the texts the planner wrote (``(source, text)``).
    ``expected``: the task's expected answer values (evidence like ``memory``, and subject names:
    :mod:`phoneenv.tasks.names`). ``zone``: the phone's IANA time zone; with it, the clock's time in each city the goal names
    (a zone's city: "Dubai" for ``Asia/Dubai``) is a subject time too ("what's the time in
    Dubai?" is answered from the phone's own clock).

    A call's result is evidence, except the texts the planner had written before it (its own
    message read back is no source); the changed records are evidence except the texts it
    wrote; a sub-agent's answer to its parent is never evidence."""
    children = frozenset(
        str(c.arguments.get("answer")).strip()
        for c in calls
        if c.name == "finish" and c.frame != "main" and c.arguments.get("answer")
    )
    memory = [*memory, *expected]
    subject = evidence_of(memory, ctx, goal=goal, said=True)
    zone_times = _zone_times(goal, ctx, zone)
    subject.times.update(zone_times)
    did = evidence_of(memory, ctx, goal=goal, clock=False, said=True)  # what the user asked and the episode did
    read = Evidence(today=subject.today)
    acted = Evidence()  # what the episode's writes returned and changed: what it did, without the user's words
    written: set[str] = set()
    texts: list[tuple[str, str]] = []
    named: list[Named] = []
    focus: set[str] = set()  # the statuses of the last read that returned any: what the planner looked at last
    for c in calls:
        own = authored_texts([c])
        if c.ok and c.feedback.result is not None and c.name != "finish":
            skip = frozenset(written) | children | {t.strip() for _, t in own}
            wrote = getattr(c.effect, "value", c.effect) in ("write", "sensitive")
            evidence_of([c.feedback.result], ctx, skip=skip, ev=subject if wrote else read)
            if wrote:
                evidence_of([_unstamped(c.feedback.result, ctx.now or "")], ctx, skip=skip, ev=acted, clock=False)
                # what the call was told to do, where its result does not echo it ("until" of a
                # do-not-disturb set until a time, whose result is the switch)
                evidence_of([c.arguments], ctx, skip=skip, ev=subject)
                evidence_of([c.arguments], ctx, skip=skip, ev=acted, clock=False)
            else:
                leaves = _walk(c.feedback.result)
                last = {x.strip().lower() for x, k, _, _ in leaves if k in ("status", "state") and isinstance(x, str)}
                focus = last or focus
            recs = itertools.islice(_records(c.feedback.result), 200)
            named.extend(n for r in recs if (n := _named(_without(r, skip), ctx)))
        texts.extend(own)
        written.update(t.strip() for _, t in own)
    skip = frozenset(written) | children
    now_recs, was_recs = _versions(changed)
    evidence_of([now_recs], ctx, skip=skip, ev=subject)
    bare = evidence_of([_unstamped(now_recs, ctx.now or "")], ctx, skip=skip, clock=False)
    _add_reminders(bare, now_recs)
    acted.merge(bare)
    did.merge(acted)
    was = evidence_of([_unstamped(was_recs, ctx.now or "")], ctx, skip=skip, clock=False)  # "raised it from 19 to 20.5"
    for r in now_recs[:400]:  # the changed records as the episode left them: what "now" tells of
        if n := _named(_without(r, skip), ctx):
            n.now = True
            named.append(n)
    named.extend(n for r in was_recs[: max(0, 400 - len(now_recs))] if (n := _named(_without(r, skip), ctx)))
    if world is not None:
        read.world_money.update(world.ev.world_money)
        named.extend(world.named)
    # the types of what the episode did (a sent message's timestamp is none)
    clock = Evidence(times=_clock_values(ctx, "time"), dates=_clock_values(ctx, "date"))
    done = frozenset(
        t for t in _TYPED if set(_values(bare, t)) - set(_values(clock, t)) or (t == "time" and bare.end_times)
    )
    writes = [c for c in calls if c.ok and getattr(c.effect, "value", c.effect) in ("write", "sensitive")]
    acts = frozenset(act_name(c) for c in writes)
    # what the episode did, counted: calls of each tool, the people and records they addressed
    per_tool: dict[str, int] = {}
    for c in writes:
        per_tool[c.name] = per_tool.get(c.name, 0) + 1
    did.counts.update(per_tool.values())
    for key in ("to", "number", "contact_id", "recipients", "attendees", "people", "message_id", "event_id"):
        targets = {json.dumps(c.arguments.get(key), sort_keys=True) for c in writes if c.arguments.get(key)}
        if targets:
            did.counts.add(len(targets))
            per_tool[f"{key}:targets"] = len(targets)
    # what an act verb may count ("Texted 4 people", "cleared 3 items"): calls, people, records
    # changed per table, list lengths and quantity fields of the writes, nights, the user's numbers
    act_counts = set(per_tool.values()) | _quantities([c.arguments for c in writes], lines=True) | _quantities(now_recs)
    per_kind: dict[tuple[str, str, frozenset[str]], int] = {}  # records changed alike: same table, kind, fields
    per_sort: dict[tuple[str, str, frozenset[str], str], int] = {}  # and of one kind (a light, a lock)
    for ch in changed:
        table, kind = getattr(ch, "table", None), getattr(ch, "kind", None)
        if isinstance(table, str) and isinstance(kind, str):
            old, new = getattr(ch, "old", None) or {}, getattr(ch, "new", None) or {}
            fields = frozenset(k for k in new if old.get(k) != new.get(k)) if kind == "updated" else frozenset()
            per_kind[(table, kind, fields)] = per_kind.get((table, kind, fields), 0) + 1
            sort = next((v for k in ("kind", "type", "category") if isinstance(v := new.get(k), str)), None)
            if sort is not None:  # "switched off 4 lights" of 6 devices switched off: those of one kind
                sub = (table, kind, fields, sort)
                per_sort[sub] = per_sort.get(sub, 0) + 1
    act_counts.update(per_kind.values())
    act_counts.update(per_sort.values())
    kind_counts = _kind_counts(writes, per_kind)
    said = [x for x, _, _, _ in _walk(memory) if isinstance(x, str)]  # the user's numbers: words, not record ids
    act_counts.update(evidence_of([*said, *expected], ctx, goal=goal, clock=False).counts)
    for c in writes:
        _counts(c.arguments, did.counts, did.parties)
        for leaf, key, _, _ in _walk(c.arguments):  # a duration the episode set ("minutes_before": 15)
            number = isinstance(leaf, (int, float)) and not isinstance(leaf, bool)
            if number and _MINUTE_KEYS.search(key) and 0 < leaf < 24 * 60:
                did.durations.add(int(leaf))

    # the people the writes addressed: by number, address, name or contact id, or through a
    # record of another app the write names by id (a payee "py_3" whose record holds a contact)
    @functools.cache
    def by_id() -> dict[str, Mapping[str, Any]]:  # built only when a write names a record by id
        out: dict[str, Mapping[str, Any]] = {}
        for c in calls:
            if c.ok and c.feedback.result is not None:
                for r in itertools.islice(_id_records(c.feedback.result), 2000):
                    out.setdefault(str(r["id"]), r)
        return out

    def record(rid: str) -> Mapping[str, Any] | None:  # a record a call returned, or a fixture's
        if len(rid) > 40 or not _RECORD_ID.fullmatch(rid):
            return None
        if (rec := by_id().get(rid)) is not None:
            return rec
        return next((tab[rid] for tab in ctx.before.values() if isinstance(tab, Mapping) and rid in tab), None)

    addressed: set[str] = set()

    def address(rec: Mapping[str, Any], depth: int) -> None:  # a request's payee, through its id
        for sub, k2, _, _ in _walk(rec):
            if not isinstance(sub, str) or k2 == "id" or not 2 <= len(sub) <= 80:
                continue
            if len(ids := contact_ids(sub, ctx.contacts)) == 1:
                addressed.update(ids)
            elif depth and not ids and (linked := record(sub)) is not None:
                address(linked, depth - 1)

    for c in writes:
        for leaf, key, _, _ in _walk([c.arguments, c.feedback.result]):
            if not isinstance(leaf, str) or not 2 <= len(leaf) <= 80 or key in AUTHORED_KEYS:
                continue
            ids = contact_ids(leaf, ctx.contacts)
            if len(ids) == 1:
                addressed.update(ids)
            elif not ids and (linked := record(leaf)) is not None:
                address(linked, 1)
    g = Grounds(subject, read, named, done, did, acts, frozenset(addressed))

    g.episode = Episode(calls, writes, now_recs, was_recs, record)
    g.main_amounts = [(act_name(c), _main_amount(c)) for c in writes]
    g.was = was
    g.acted = acted
    g.act_counts = frozenset(act_counts | did.parties)
    if addressed:
        kind_counts.setdefault("person", set()).add(len(addressed))
    g.kind_counts = {k: frozenset(v) for k, v in kind_counts.items()}
    g.focus = frozenset(focus)
    g.periods = _periods(now_recs)
    g.totals = _totals(now_recs, [c.feedback.result for c in writes]) or _line_sums(changed, ctx)
    g.sizes_set = _sizes([now_recs, [c.arguments for c in writes]])
    g.field_times = _field_times([*now_recs, *(c.arguments for c in writes)])
    g.shifts = frozenset(  # how far the episode moved each time it changed, in minutes
        abs(_minutes(b[1]) - _minutes(a[1])) % 1440
        for ch in changed
        if not isinstance(ch, Mapping) and ch.kind == "updated" and isinstance(ch.old, Mapping)
        for k, v in ch.old.items()
        if isinstance(v, str)
        and isinstance(w := ch.new.get(k), str)
        and (a := _HHMM.search(v))
        and (b := _HHMM.search(w))
        and a[1] != b[1]
    )
    g.set_spans = _time_spans(r for r in (*now_recs, *(c.arguments for c in writes)) if isinstance(r, Mapping))
    g.field_dates = _field_dates(now_recs)
    g.enums = _enum_values(now_recs, ctx)
    reads = [c.feedback.result for c in calls if c.ok and c.feedback.result is not None and c.name != "finish"]
    # the lines of what the episode changed, else of what it read ("Your order (3 Dragon Rolls)" for one read)
    g.line_counts = _line_counts([*now_recs, *(c.feedback.result for c in writes), *(c.arguments for c in writes)])
    for name, qtys in _line_counts(reads).items():
        g.line_counts.setdefault(name, qtys)
    g.changed_places = [
        places
        for r in now_recs[:200]
        if isinstance(r, Mapping)
        and (places := tuple(v.strip() for k, v in r.items() if k in _PLACE_KEYS and isinstance(v, str) and v.strip()))
    ]
    g.zoned = _zoned_times(
        [*now_recs, *(r for c in writes for r in itertools.islice(_id_records(c.feedback.result), 50))]
    )
    if g.field_dates:  # and those of the records the calls returned: another bill's due day
        listed = _field_dates([r for c in calls if c.ok for r in itertools.islice(_id_records(c.feedback.result), 500)])
        g.read_field_dates = {k: listed.get(k, frozenset()) | v for k, v in g.field_dates.items()}
    g.labelled = _labelled_times(now_recs)
    strings, ids = subject_strings(
        [goal, *expected, *now_recs, *was_recs, *(c.arguments for c in writes), *(c.feedback.result for c in writes)]
    )
    g.subject_names = SubjectNames(strings, ids, (ctx.tables, ctx.before))
    g.user_texts = [goal, *(json.dumps(m, default=str) for m in memory)]
    g.spans = _asked_spans(g.user_texts, [c for c in calls if c.ok], ctx)
    g.changed_words = frozenset(
        x.strip().lower() for x, _, _, _ in _walk(now_recs) if isinstance(x, str) and len(x) <= 30
    )
    results = [c.feedback.result for c in calls if c.ok and c.feedback.result is not None and c.name != "finish"]
    g.code_sources = ([goal, *memory, *results], now_recs, was_recs)
    g.written = skip
    g.world_names = [*record_names([*results, *now_recs, *was_recs]), *(world.names if world is not None else ())]
    if (now := _clock(ctx)) is not None:
        g.now = now.hour * 60 + now.minute
    g.clock_times, g.zone_times = frozenset(_clock_values(ctx, "time")), frozenset(zone_times)
    return g, texts


_KINDS = {
    "person": "people persons person friends friend recipients recipient attendees attendee payees payee",
    "photo": "photos photo pictures picture pics pic images image",
    "song": "songs song tracks track",
    "message": "messages message texts text sms",
    "email": "emails email e-mails e-mail mails",
    "device": "devices device",
    "alarm": "alarms alarm",
    "reminder": "reminders reminder",
    "event": "events event meetings meeting",
    "note": "notes note",
    "contact": "contacts contact",
    "request": "requests request",
    "item": "items item",
}
_KIND_OF = {w: kind for kind, said in _KINDS.items() for w in said.split()}
"""The kinds of thing a count may be told of, by the words that tell them ("4 people", "2 photos")."""
_KEY_KINDS = {
    "to": "person", "recipients": "person", "attendees": "person", "attendee": "person", "people": "person",
    "contact_id": "person", "contact_ids": "person", "payee_id": "person", "payee_ids": "person", "number": "person",
    "photo_id": "photo", "photo_ids": "photo", "track_id": "song", "track_ids": "song", "song_id": "song",
    "song_ids": "song", "message_id": "message", "message_ids": "message", "alarm_id": "alarm", "alarm_ids": "alarm",
    "event_id": "event", "event_ids": "event", "note_id": "note", "note_ids": "note", "item_id": "item",
    "item_ids": "item", "items": "item", "device_id": "device", "device_ids": "device", "request_id": "request",
    "request_ids": "request", "reminder_id": "reminder",
}  # fmt: skip
"""The kind of thing each argument names (one per value, or a list of them)."""

_PERIOD_WORDS = (
    ("daily", r"daily|every\s+(?:single\s+)?day|each\s+day|7\s+days\s+a\s+week"),
    ("weekdays", r"(?:on\s+|every\s+)?weekdays|every\s+weekday|monday\s+to\s+friday|mon(?:day)?\s*-\s*fri(?:day)?"),
    ("week", r"weekly|(?:per|every|each)\s+week|(?<!\bin\s)(?<!\bfor\s)(?<!\bwithin\s)(?<!\bthan\s)\ba\s+week"),
    ("month", r"monthly|(?:per|every|each)\s+month|(?<!\bin\s)(?<!\bfor\s)(?<!\bwithin\s)(?<!\bthan\s)\ba\s+month"),
    ("year", r"yearly|annually|(?:per|every|each)\s+year"),
    (
        "once",
        r"one-?off|one-?time|just\s+once|only\s+once|(?<!at\s)\bonce(?!\s+(?:you|it|they|i|we|the|a|an)\b)"
        r"|(?:just|only)\s+(?:for\s+)?tomorrow(?:\s+morning)?",
    ),
)
_RE_PERIOD = re.compile("|".join(rf"(?P<{k}>\b(?:{v})\b)" for k, v in _PERIOD_WORDS), re.I)
"""How often a thing repeats, told: "every day", "weekdays", "110 EUR a week", "monthly", "a
one-off"; not "in a week", "for a month" (a span) or "once you are home" (a condition)."""
_PERIOD_KEYS = ("period", "frequency", "repeat", "recurrence", "interval", "cadence")
_PERIOD_OF = {
    "day": "daily", "daily": "daily", "week": "week", "weekly": "week", "month": "month", "monthly": "month",
    "year": "year", "yearly": "year", "annual": "year", "annually": "year", "once": "once", "none": "once",
    "weekdays": "weekdays",
}  # fmt: skip
_WEEKDAYS5 = frozenset({"mon", "tue", "wed", "thu", "fri"})


def period_claims(text: str) -> list[tuple[str, int, int]]:
    """``(period, start, end)`` of each repetition ``text`` tells (:data:`_RE_PERIOD`): one of
    daily, weekdays, week, month, year, once."""
    return [(next(k for k, v in m.groupdict().items() if v), m.start(), m.end()) for m in _RE_PERIOD.finditer(text)]


def _periods(records: Sequence[Any]) -> list[tuple[str, frozenset[str]]]:
    """How often each record the episode changed repeats, with the short strings that name it
    (its time, label, category): a field ``period``, ``frequency``, ``repeat``... ("week",
    "monthly"), or an alarm's ``days`` (none: once; all seven: daily; Monday to Friday:
    weekdays)."""
    out: list[tuple[str, frozenset[str]]] = []
    for rec in records[:200]:
        if not isinstance(rec, Mapping):
            continue
        found: set[str] = set()
        for k in _PERIOD_KEYS:
            v = rec.get(k)
            if isinstance(v, str) and (p := _PERIOD_OF.get(v.strip().lower())):
                found.add(p)
        days = rec.get("days")
        if isinstance(days, (list, tuple)) and "time" in rec:
            short = {str(d).lower()[:3] for d in days}
            found.add(
                "once" if not short else "daily" if len(short) == 7 else "weekdays" if short == _WEEKDAYS5 else "week"
            )
        if found:
            names = frozenset(
                str(v).lower()[-5:] if k == "time" else str(v).lower()
                for k, v in rec.items()
                if k in ("time", "label", "name", "category", "title") and isinstance(v, str) and v.strip()
            )
            out.extend((p, names) for p in found)
    return out


_RE_SPAN = re.compile(r"\b(this|last|next|previous|coming|current)\s+(week|month|year)\b", re.I)
"""A week, month or year told relative to the phone's clock: "this week", "last month"."""
_RE_SPAN_OWN = re.compile(r"\b(?<!last\s)(?<!next\s)(week|month|year)'s\b|\bso\s+far\b", re.I)
_SPAN_OFFSET = {"this": 0, "current": 0, "last": -1, "previous": -1, "next": 1, "coming": 1}
_SPAN_KEYS = ("period", "range", "span", "window", "month", "week", "year")


def span_claims(text: str) -> list[tuple[tuple[str, int], int, int]]:
    """``((unit, offset), start, end)`` of each week, month or year ``text`` tells relative to
    now (:data:`_RE_SPAN`): "last month" is ``("month", -1)``, "this week" ``("week", 0)``."""
    return [((m[2].lower(), _SPAN_OFFSET[m[1].lower()]), m.start(), m.end()) for m in _RE_SPAN.finditer(text)]


def _asked_spans(user_texts: Sequence[str], calls: Sequence[Any], ctx: Context) -> frozenset[tuple[str, int]]:
    """The weeks, months and years an episode concerns, as ``(unit, offset)`` from the clock's:
    those the user's words name ("this week", "my week's spending": the current one) and those
    its calls asked for (an argument ``period="month"``, ``month="2026-10"``). Empty when none is
    named: then no span told is checked."""
    out: set[tuple[str, int]] = set()
    for text in user_texts:
        out.update(span for span, _, _ in span_claims(text))
        for m in _RE_SPAN_OWN.finditer(text):
            if m[1]:
                out.add((m[1].lower(), 0))
    now = _clock(ctx)
    for c in calls:
        args = c.arguments if isinstance(c.arguments, Mapping) else {}
        for k in _SPAN_KEYS:
            v = args.get(k)
            if not isinstance(v, str):
                continue
            v = v.strip().lower().replace("_", " ")
            if v in ("week", "month", "year"):
                out.add((v, 0))
            elif m := _RE_SPAN.fullmatch(v):
                out.add((m[2], _SPAN_OFFSET[m[1]]))
            elif now is not None and (m := re.fullmatch(r"(\d{4})-(\d{2})", v)):
                out.add(("month", int(m[1]) * 12 + int(m[2]) - now.year * 12 - now.month))
    return frozenset(out)


def count_kind(noun: str) -> str | None:
    """The kind of thing ``noun`` (the word a count is told of: "people", "Photos") counts, one
    of :data:`_KINDS`; None for a word of no known kind ("birthdays", "of them")."""
    return _KIND_OF.get(noun.lower())


def _kind_counts(writes: Sequence[Any], per_kind: Mapping[tuple[str, str, frozenset[str]], int]) -> dict[str, set[int]]:
    """What the episode's writes count of each kind of thing (:func:`count_kind`): per tool and
    argument naming things of a kind (:data:`_KEY_KINDS`), the distinct values named over all its
    calls and each list's length; per table whose name says a kind ("gallery.photos"), the records changed alike
    (created, deleted, or updated in the same fields: "switched off 6 devices" is not five
    switched off and one thermostat set)."""
    named: dict[tuple[str, str], set[str]] = {}
    out: dict[str, set[int]] = {}
    for c in writes:
        for key, value in c.arguments.items():
            kind = _KEY_KINDS.get(key)
            if kind is None:
                continue
            values = value if isinstance(value, list) else [value]
            if isinstance(value, list):
                out.setdefault(kind, set()).add(len(value))
            named.setdefault((c.name, key), set()).update(json.dumps(v, sort_keys=True) for v in values)
    for (_, key), values in named.items():
        out.setdefault(_KEY_KINDS[key], set()).add(len(values))
    for (table, _, _), n in per_kind.items():
        kind = _KIND_OF.get(table.rsplit(".", 1)[-1])  # "gallery.photos": photos
        if kind is not None:
            out.setdefault(kind, set()).add(n)
    return out


_STAMP_KEYS = frozenset(
    {"time", "created", "updated", "booked", "sent", "received", "modified", "timestamp", "observed"}
)
"""Fields the app stamps with the clock when it writes (a message's ``time``): not what the
planner did, only when."""


def _unstamped(value: Any, now: str = "") -> Any:
    """``value`` (JSON) without the :data:`_STAMP_KEYS` fields of its records, save those later
    than ``now`` (the clock, ``YYYY-MM-DDTHH:MM:SS``; a stamp is never in the future, so a
    reservation's ``time`` of next Thursday is what was booked, not when)."""
    if isinstance(value, Mapping):
        return {
            k: _unstamped(v, now)
            for k, v in value.items()
            if k not in _STAMP_KEYS or (now and isinstance(v, str) and _RE_ISO_STAMP.match(v) and v[:19] > now[:19])
        }
    if isinstance(value, (list, tuple)):
        return [_unstamped(v, now) for v in value]
    return value


_RE_ISO_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


@functools.lru_cache(maxsize=1)
def _zone_cities() -> dict[str, str]:
    """City (lower case, spaces for underscores) → IANA zone, from the system's zone names."""
    import zoneinfo

    out: dict[str, str] = {}
    for name in zoneinfo.available_timezones():
        if "/" in name and not name.startswith(("Etc/", "SystemV/", "US/")):
            out.setdefault(name.rsplit("/", 1)[1].replace("_", " ").lower(), name)
    return out


def _zoned_times(records: Sequence[Any]) -> list[tuple[str, frozenset[str], frozenset[str]]]:
    """``(city, zone times, phone times)`` of each changed record set in another time zone (an
    event with ``timezone`` "America/Sao_Paulo", ``zone_start`` 14:00 and ``start`` 04:00): the
    city as people say it (lower case, accents dropped), its times ``HH:MM`` there and on the phone."""
    out = []
    for r in records[:200]:
        if not isinstance(r, Mapping) or not isinstance(zone := r.get("timezone"), str) or "/" not in zone:
            continue
        there = {m[1] for k in ("zone_start", "zone_end") if isinstance(x := r.get(k), str) and (m := _HHMM.search(x))}
        here = {m[1] for k in ("start", "end") if isinstance(x := r.get(k), str) and (m := _HHMM.search(x))}
        if there and here and there != here:
            out.append((words(zone.rsplit("/", 1)[1].replace("_", " ")).strip(), frozenset(there), frozenset(here)))
    return out


_YOUR_TIME = re.compile(
    r"\s*\(?\s*(?:your\s+(?:local\s+)?time|local\s+time|for\s+you|here|at\s+home|your\s+end)\b", re.I
)
"""Words right after a time that tell it on the phone's clock: "04:00 your time", "04:00 local time"."""


def _zone_swap(t: str, start: int, end: int, vals: Sequence[str], g: Grounds) -> tuple[tuple[str, ...], str] | None:
    """``(held, why)`` where a time at ``start:end`` of ``t`` is told on the phone's clock ("04:00
    your time") or in a city's ("14:00 in São Paulo", "São Paulo time") that a record the episode
    set in that city's zone holds on the other clock: the two told the wrong way round."""
    after = words(t[end : end + 30])
    for city, there, here in g.zoned:
        if _YOUR_TIME.match(t, end):
            want, other, which = here, there, "your time"
        elif after.startswith((f" in {city} ", f" {city} ")):
            want, other, which = there, here, f"{city.title()} time"
        else:
            continue
        if not set(vals) & want and set(vals) & other:
            return tuple(sorted(want)), f"in {which} it is {', '.join(sorted(want))}; {vals[0]} is the other clock's"
    return None


def _zone_times(goal: str, ctx: Context, zone: str | None) -> set[str]:
    """The clock's time (``HH:MM``) in each city of a time zone that ``goal`` names."""
    now = _clock(ctx)
    if now is None or not zone:
        return set()
    import zoneinfo

    try:
        here = now.replace(tzinfo=zoneinfo.ZoneInfo(zone))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return set()
    low = f" {' '.join(_TOKEN_ANY.findall(goal.lower()))} "
    return {
        here.astimezone(zoneinfo.ZoneInfo(name)).strftime("%H:%M")
        for city, name in _zone_cities().items()
        if f" {city} " in low
    }


def _without(rec: Mapping[str, Any], skip: frozenset[str]) -> dict[str, Any]:
    """``rec`` without the fields that hold a text the planner wrote (its own words name
    nothing and ground nothing)."""
    return {k: v for k, v in rec.items() if not (isinstance(v, str) and v.strip() in skip)}


def _versions(changed: Sequence[Any]) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """The records of ``changed`` as the episode left them (new versions, and deleted records
    as they were) and as they were before an update. ``changed``: :class:`~phoneenv.state.Change`
    objects, or plain records (all taken as they are now)."""
    now: list[Mapping[str, Any]] = []
    was: list[Mapping[str, Any]] = []
    for ch in changed:
        if isinstance(ch, Mapping):
            now.append(ch)
        elif ch.kind == "updated":
            now.append(ch.new)
            was.append(ch.old)
        else:
            now.append(ch.new if ch.new is not None else ch.old)
    return now, was


def _reminder_moments(rec: Mapping[str, Any]) -> set[tuple[str | None, str]]:
    """The moments a record's reminders go off, as (``"YYYY-MM-DD"`` or None, ``"HH:MM"``): its
    start less each of its reminders' minutes, up to a week (``{"start": "2026-11-19T12:30",
    "reminders": [30, 1440]}`` → 12:00 on the 19th, 12:30 on the 18th)."""
    start = next((rec[k] for k in _START_KEYS if isinstance(rec.get(k), str)), None)
    m = _RE_STAMP.search(start) if start else None
    if m is None:
        return set()
    minutes: list[int] = []
    for k, v in rec.items():
        if isinstance(k, str) and _REMINDER_KEYS.search(k):
            for x in v if isinstance(v, (list, tuple)) else [v]:
                if isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 7 * 1440:
                    minutes.append(x)
    out: set[tuple[str | None, str]] = set()
    for x in minutes:
        if m[1]:
            at = dt.datetime.fromisoformat(f"{m[1]}T{m[2]}:{m[3]}") - dt.timedelta(minutes=x)
            out.add((at.date().isoformat(), at.strftime("%H:%M")))
        else:
            base = int(m[2]) * 60 + int(m[3]) - x
            out.add((None, f"{base // 60 % 24:02d}:{base % 60:02d}"))
    return out


def _add_reminders(ev: Evidence, recs: Iterable[Mapping[str, Any]]) -> None:
    """Add the reminder moments of ``recs`` (:func:`_reminder_moments`) to ``ev``."""
    for r in recs:
        for day, hm in _reminder_moments(r):
            ev.times.add(hm)
            if day is not None:
                ev.dates.add(day)


def _clock_values(ctx: Context, type: str) -> set[str]:
    """The clock's own value of ``type`` (``"time"``: ``HH:MM``; ``"date"``), as a set."""
    now = _clock(ctx)
    if now is None:
        return set()
    return {now.strftime("%H:%M")} if type == "time" else {now.date().isoformat()}


def _verb(*prefixes: str) -> Callable[[str], bool]:
    """A test of a tool name: its action (after the app's dot) starts with one of ``prefixes``
    ("cinema.book_tickets" books, "memory.forget" deletes)."""
    return lambda name: name.rpartition(".")[2].startswith(prefixes)


def NO_TOOL(name: str) -> bool:
    """No tool does it: a state only a record holds ("delivered", "shipped", "pending")."""
    return False


STATUS_FAMILIES: dict[str, tuple[str, Callable[[str], bool], frozenset[str]]] = {
    "paid": (
        r"paid|settled|marked\s+(?:\S+\s+){0,5}?as\s+paid"
        # "sent Bert and Dino 44.26 EUR each": money sent is money paid (a request is no payment)
        r"|sent\s+(?:(?!(?:requests?|for|a|an|invoices?|bills?|reminders?|links?|notes?)\b)[A-Za-z']+,?\s+){0,5}?"
        r"(?=[€$£¥]\s*\d|\d+(?:[.,]\d+)?\s*(?:eur|usd|gbp|aud|jpy|chf|cad|nzd"
        r"|euros?|dollars?|pounds?|yen|francs?)\b)",
        _verb("pay", "checkout", "purchase", "buy", "place_order", "send_money", "mark_paid"),
        frozenset({"paid"}),
    ),
    "ordered": (
        r"ordered|placed\s+(?:the\s+|your\s+|an\s+|a\s+|this\s+)?order",
        _verb("place_order", "checkout", "order", "buy", "purchase", "reorder", "book", "request_ride"),
        frozenset({"placed", "ordered"}),
    ),
    "archived": (r"archived", _verb("archive"), frozenset({"archived", "archive"})),
    "played": (r"played|playing|started\s+playing", _verb("play", "mark_played", "resume"), frozenset()),
    "ran": (r"ran", _verb("run", "activate", "apply", "trigger", "start", "play"), frozenset()),
    "moved": (
        r"moved|rescheduled|postponed|pushed\s+back|brought\s+forward",
        _verb("move", "reschedule", "postpone", "change", "update", "edit", "set_due", "snooze"),
        frozenset(),
    ),
    "read": (
        r"marked\s+(?:it\s+|them\s+|\S+\s+){0,3}?(?:as\s+)?read\b",
        _verb("mark_read", "mark_as_read", "read", "open", "mark"),
        frozenset(),
    ),
    "scheduled": (r"scheduled", _verb("schedule", "create_event", "add_event"), frozenset({"scheduled"})),
    "cancelled": (
        r"cancell?ed|called\s+off",
        _verb("cancel", "decline", "delete", "remove", "forget", "clear"),
        frozenset({"cancelled", "canceled", "declined"}),
    ),
    "booked": (
        r"booked|reserved",
        _verb("book", "reserve", "change_reservation", "create_event", "choose_pickup"),
        frozenset({"booked", "reserved", "confirmed"}),
    ),
    "declined": (
        r"declined|rejected|turned\s+(?:it\s+|them\s+)?down",
        _verb("decline", "reject"),
        frozenset({"declined", "rejected"}),
    ),
    "revoked": (r"revoked", _verb("revoke"), frozenset()),
    "unlocked": (r"unlocked", _verb("unlock"), frozenset({"unlocked"})),
    "locked": (r"locked", _verb("lock"), frozenset({"locked"})),
    "delivered": (r"delivered", lambda name: False, frozenset({"delivered"})),
    "favorite": (r"favou?rited|starred", _verb("set_favorite", "favorite", "star"), frozenset()),
    "unfavorite": (
        r"unfavou?rited|unstarred|took\s+(?:\S+\s+){0,3}?(?:off|out\s+of)\s+(?:your\s+|the\s+)?favou?rites",
        _verb("unset_favorite", "unfavorite", "unstar"),
        frozenset(),
    ),
    "downloaded": (r"downloaded", _verb("download"), frozenset({"downloaded"})),
    "pinned": (r"pinned", _verb("pin"), frozenset({"pinned"})),
    "unpinned": (r"unpinned", _verb("unpin"), frozenset({"unpinned"})),
    "subscribed": (r"subscribed|followed(?!\s+by)", _verb("subscribe"), frozenset({"subscribed"})),
    "unsubscribed": (r"unsubscribed|unfollowed", _verb("unsubscribe"), frozenset({"unsubscribed"})),
    "liked": (r"liked", _verb("like"), frozenset({"liked"})),
    "renamed": (r"renamed", _verb("rename", "update"), frozenset()),
    "paused": (
        r"paused|disabled|switched\s+(?:\S+\s+){0,3}?off|turned\s+(?:\S+\s+){0,3}?off",
        _verb("pause", "unset", "unupdate", "unswitch"),
        frozenset({"paused", "disabled", "off"}),
    ),
    "blocked": (
        # a number or person blocked, not a window of time in a calendar ("blocked that window", "Blocked.")
        r"blocked(?=\s+(?:(?:the|that|this|their|his|her|your)\s+)?(?:number|caller|contact|sender|them|him|her"
        r"|\+?\d|(?-i:[A-Z])))",
        _verb("block"),
        frozenset({"blocked"}),
    ),
    "unblocked": (r"unblocked", _verb("unblock"), frozenset({"unblocked"})),
    # a permission's state is no record's status here: only "I granted" is checked
    "granted": (r"granted", _verb("grant", "request_permission"), frozenset()),
    "checked_in": (r"checked\s+(?:you\s+|them\s+|him\s+|her\s+)?in\b", _verb("check_in"), frozenset({"checked_in"})),
    "tagged": (r"tagged", _verb("tag", "add_tag"), frozenset()),
    "dismissed": (r"dismissed", _verb("dismiss"), frozenset({"dismissed"})),
    "texted": (
        r"texted|sms(?:-?ed)?|sent\s+(?:(?:[\w'-]+\s+){0,3}?)(?:text(?:\s+message)?|sms)\b(?!\s+(?:app|thread))",
        lambda name: name.startswith("messages.") and _verb("send", "forward")(name),
        frozenset(),
    ),
    "emailed": (
        r"e-?mailed",
        lambda name: name.startswith("mail.") and _verb("send", "reply", "forward")(name),
        frozenset(),
    ),
    "sent": (
        r"sent|messaged|replied|forwarded",
        _verb("send", "reply", "forward", "share", "notify", "request_money", "split", "text", "email", "message"),
        frozenset(),
    ),
    "deleted": (
        r"deleted|removed|erased|took\s+(?:(?:the|your|that|this|its|an?)\s+)?(?:[\w-]+\s+){1,3}?out\b",
        _verb("delete", "remove", "clear", "forget", "cancel", "untag", "unblock"),
        frozenset({"deleted", "removed"}),
    ),
    "requested": (
        r"requested",
        lambda name: _verb("request_money", "split")(name) or name in ("messages.send", "mail.send"),
        frozenset(),
    ),
    "drafted": (
        r"drafted|saved\s+(?:it\s+|\S+\s+){0,4}?as\s+an?\s+draft|(?:left|saved)\s+(?:it\s+)?in\s+(?:your\s+)?drafts"
        r"|saved\s+(?:a|the|your|an)\s+(?:\S+\s+){0,2}?draft"
        r"|(?:put|saved|left)\s+(?:\S+\s+){0,6}?(?:in|into)\s+an?\s+draft",
        _verb("draft", "save_draft"),
        frozenset({"draft", "drafts"}),
    ),
    "called": (
        r"called(?!\s+off)|rang|phoned",
        lambda name: name.rpartition(".")[2] in ("call", "call_back_voicemail", "dial"),
        frozenset(),
    ),
    "ticked": (
        r"ticked|checked\s+off|crossed\s+off|marked\s+(?:it\s+|them\s+|\S+\s+)?(?:as\s+)?(?:done|complete[d]?)",
        _verb("check_item", "complete", "mark_done", "toggle_item"),
        frozenset(),
    ),
    "pending": (
        r"pending|outstanding|unpaid|awaiting\s+payment",
        lambda name: False,
        frozenset({"pending", "requested", "unpaid", "due", "open"}),
    ),
    "muted": (r"muted|silenced", _verb("mute", "silence", "set_dnd"), frozenset({"muted", "silenced"})),
    "reported": (
        r"reported\s+(?:\S+\s+){0,4}?as\s+(?:spam|junk|abuse|fraud)|(?:flagged|marked)\s+(?:\S+\s+){0,4}?as\s+(?:spam|junk)",
        _verb("report", "mark_spam", "flag", "move"),
        frozenset({"spam", "junk", "reported"}),
    ),
    "waitlisted": (
        r"wait-?listed|(?:put\s+(?:you\s+|it\s+)?)?on\s+(?:the\s+|a\s+)?wait(?:ing)?\s*list",
        NO_TOOL,
        frozenset({"waitlisted", "waitlist", "waiting_list"}),
    ),
    "shipped": (
        r"shipped|dispatched",
        NO_TOOL,
        frozenset({"shipped", "dispatched", "in_transit", "out_for_delivery", "on_the_way", "delivered"}),
    ),
    # "on its way" is anything past the sender (not an order still "placed" or "preparing");
    # "out for delivery" is the last leg only (an order "on_the_way", not a parcel at a hub)
    "on_the_way": (
        r"on\s+(?:its|their)\s+way(?!\s+(?:back|home|out))|en\s+route|in\s+transit",
        _verb("place_order", "order", "reorder", "checkout", "buy", "purchase", "send", "forward", "share"),
        frozenset({"shipped", "dispatched", "in_transit", "out_for_delivery", "on_the_way"}),
    ),
    "out_for_delivery": (
        r"out\s+for\s+delivery",
        NO_TOOL,
        frozenset({"out_for_delivery", "on_the_way"}),
    ),
}
"""The things a planner tells as done, checked as ``status`` claims: family → (the words that
tell it, which tools do it (by name), the record ``status`` values that hold it). A family
with no status values ("scheduled", "sent": an event is "scheduled" and a read mail "was sent"
without the planner doing either) is checked only where told as the planner's own act."""

_MADE_BY_ACT = frozenset({"on_the_way"})
"""Families whose state the episode's own act of that kind brings about, whatever the record says
yet: an order placed, a card sent "is on its way" while its record still says ``placed``."""

_STATUS_WORDS = "|".join(f"(?P<{k}>{v[0]})" for k, v in STATUS_FAMILIES.items())
_RE_STATUS_ACT = re.compile(
    r"(?:\b(?:i|we)(?:\s+have|\s+had)?\s+|(?:^|[.!;\n]\s*|\s[-\u2013\u2014]\s+|,?\s+and\s+)"
    r"(?:(?:done|ok|okay|sure|all\s+set|all\s+done|great(?:\s+news)?|good\s+news|got\s+it|no\s+problem|update"
    r"|(?:a\s+)?(?:quick\s+)?summary|here\s+is\s+(?:what\s+(?:i|we)\s+did|a\s+(?:quick\s+)?summary))[,:!.]?\s+)?)"
    r"(?:(?:also|just|now|already|successfully|then|gone\s+ahead\s+and)\s+)*"
    rf"(?:{_STATUS_WORDS})\b",
    re.I,
)
"""A thing told as the planner's own act: "I have paid", "we just booked", "Cancelled ...", "Done:
sent ...", "... and e-mailed Stanley" (the words after contractions are expanded: "I've" → "I
have")."""
_RE_STATUS_STATE = re.compile(
    r"\b(?:is|are|was|were|has|have|had|got)\s+(?:(?:now|just|already|successfully|also|all|both|each|been|still)\s+)*"
    rf"(?:{_STATUS_WORDS})\b",
    re.I,
)
"""A thing told as a record's state: "the bill is paid", "it has been cancelled"."""
_RE_STATUS_LABEL = re.compile(
    r"(?:^|[.!;\n]\s*|\s[-\u2013\u2014]\s+)(?:[-*\u2022]\s*)?"
    r"(?:(?!(?:i|we|you|they|he|she|it|someone|who|which|that|this|there|here)\b)[A-Za-z][\w'\u2019-]*\s+){1,4}?"
    rf"(?:{_STATUS_WORDS})\b(?=\s*(?:[.,;!(\n]|$|and\b|to\s+(?-i:[A-Z])|[-\u2013\u2014]))",
    re.I,
)
_RE_STATUS_COLON = re.compile(rf"(?:^|[.!;:\n]\s*)(?:[-*\u2022]\s*)?[^.!;:\n]{{1,40}}:\s*(?:{_STATUS_WORDS})\b", re.I)
"""A thing told as a record's state by its name and a participle, no verb ("Return waitlisted.",
"Door locked and Ana told", "Phone November: paid for the 21st", "boarding pass e-mailed to
Shirley")."""
_RE_STATUS_DENIED = re.compile(
    r"\b(?:not(?<!\bdo\snot)|never|no|nothing|none|neither|nor|cannot|unable|failed|without|if|whether|once|when"
    r"|before|until|should|could|would)\b|n't",
    re.I,
)
"""Words that deny or make conditional a status in their clause ("Do not disturb" is a name)."""


_UNDONE_FORMS: dict[str, str] = {
    "paid": r"paid|pay|unpaid",
    "booked": r"booked|book|reserved|reserve",
    "cancelled": r"cancell?ed|cancel",
    "sent": r"sent|send|unsent",
    "texted": r"texted|text",
    "emailed": r"e-?mailed|e-?mail",
    "deleted": r"deleted|delete|removed|remove",
    "ordered": r"ordered|order|placed|place",
    "played": r"played|playing|play|unplayed",
    "ran": r"run|running|ran|started|start|activated|activate",
    "archived": r"archived|archive",
    "scheduled": r"scheduled|schedule",
    "called": r"called|call",
    "read": r"read|unread",
    "favorite": r"(?:a\s+|one\s+of\s+(?:your\s+|my\s+)?)favou?rites?|favou?rited|starred"
    r"|in\s+(?:your\s+|my\s+)?favou?rites",
}
"""How a thing is told as *not* done ("I have not run it yet", "the pickup is not booked yet",
"it is still unplayed"): the family's words, base forms and un- forms."""
_RE_UNDONE = re.compile(
    r"\b(?:(?:i|we)\s+(?:have|had|did)\s+not\s+(?:yet\s+|actually\s+)?"
    r"|(?:is|are|was|were|has|have)\s+not\s+(?:been\s+)?(?:yet\s+)?"
    r"|(?:not|never)\s+(?:yet\s+)?|still\s+)"
    r"(?:" + "|".join(f"(?P<{k}>{v})" for k, v in _UNDONE_FORMS.items()) + r")\b(?P<rest>[^.;!?\n]*)",
    re.I,
)


_RE_LEFT_UNDONE = re.compile(
    r"\b(?:left|kept)\s+(?:it|them|that|this|him|her|(?:the|your|his|her|their)\s+\w+(?:\s+\w+)?)"
    r"\s+un(?P<family>read|played|paid|sent|blocked|locked|pinned)\b",
    re.I,
)
"""A thing told as left not done: "I left it unread", "kept the message unread", "left his number
unblocked"."""


def _undone_claims(t: str) -> list[tuple[str, int, int]]:
    """``(family, start, end)`` of each thing ``t`` (already :func:`plain`) tells the planner
    has not done yet: told by the planner of no named thing ("I have not paid it", "I did not
    cancel anything") or with "yet"/"still" ("is not booked yet", "still unplayed"); questions
    and conditions aside ("I did not order the Chicken Tikka" may be about another dish than the
    one ordered: not read)."""
    out = []
    for m in _RE_UNDONE.finditer(t):
        family = next(k for k in _UNDONE_FORMS if m.group(k))
        head = m.group(0)[: m.start("rest") - m.start()].lower()
        if head.startswith("still") and not re.search(r"\bun\w+$", head):
            continue  # "still running" is a state, not a thing left undone
        rest = m["rest"].lower()
        marked = "yet" in head or "yet" in rest or head.startswith("still")
        own_bare = re.match(r"(?:i|we)\s", head) and re.match(r"\s*(?:(?:it|them|that|this|anything)\b|[,;:]|$)", rest)
        if not (marked or own_bare):
            continue  # "I did not order the Chicken Tikka" may be about another thing than the one ordered
        ends = [e.end() for e in _CLAUSE.finditer(t, 0, m.start())]
        lead = t[ends[-1] if ends else 0 : m.start()]
        if re.search(r"\b(?:if|whether|unless|once|when|should|could|would)\b", lead, re.I) or "?" in m["rest"]:
            continue
        out.append((family, m.start(), m.start("rest")))
    for m in _RE_LEFT_UNDONE.finditer(t):
        ends = [e.end() for e in _CLAUSE.finditer(t, 0, m.start())]
        if not re.search(r"\b(?:if|whether|unless|should|could|would)\b", t[ends[-1] if ends else 0 : m.start()], re.I):
            out.append((m["family"].lower(), m.start(), m.end()))
    for m in _RE_OFFER.finditer(t):  # "say the word and I will start it": not done yet
        out.append((_OFFER_VERBS[m["verb"].lower()], m.start(), m.end()))
    for family, rx in _UNDONE_STATES:  # "It's sitting in your basket until you confirm", "is still unticked"
        for m in rx.finditer(t):
            ends = [e.end() for e in _CLAUSE.finditer(t, 0, m.start())]
            if not re.search(r"\b(?:if|whether|unless|should|could|would)\b|\?", t[ends[-1] if ends else 0 : m.end()]):
                out.append((family, m.start(), m.end()))
    return out


_ASKING = ("user.confirm", "user.authenticate", "user.ask")
"""The calls that put a question to the user (a confirmation, an authentication, a question)."""
_RE_UNASKED = re.compile(
    r"\b(?:without\s+(?:asking(?:\s+you)?|checking\s+with\s+you|confirming(?:\s+with\s+you)?|bothering\s+you"
    r"|(?:waiting\s+for|needing)\s+(?:your|a)\s+(?:go-?ahead|ok(?:ay)?|confirmation|approval|answer|say-?so)"
    r"|your\s+(?:go-?ahead|ok(?:ay)?|confirmation|approval|say-?so))"
    r"|(?:no|did\s+not\s+need\s+(?:a|any|your))\s+confirmation\s+(?:was\s+)?(?:needed|required)?)\b",
    re.I,
)
"""A thing told as done without asking the user ("Deleted it without asking", "without waiting for
your go-ahead"): false where the episode asked (:data:`_ASKING`)."""
_OFFER_VERBS = {
    "start": "ran", "run": "ran", "activate": "ran", "send": "sent", "book": "booked", "order": "ordered",
    "pay": "paid", "play": "played", "delete": "deleted", "cancel": "cancelled", "call": "called", "text": "texted",
    "email": "emailed", "e-mail": "emailed", "archive": "archived",
}  # fmt: skip
_RE_OFFER = re.compile(
    r"\b(?:say\s+the\s+word|just\s+say\s+(?:so|go|yes)|let\s+me\s+know|tell\s+me|give\s+me\s+the\s+(?:go-?ahead|nod))"
    r"\s*,?\s+and\s+(?:i\s+will|i\s+can)\s+(?P<verb>" + "|".join(_OFFER_VERBS) + r")\b",
    re.I,
)
"""An offer to do a thing later ("say the word and I will start it"): tells it not done yet."""

_UNDONE_STATES = (
    (
        "ordered",
        re.compile(
            r"\b(?:sitting|still|left|waiting|is|are)\s+(?:now\s+)?in\s+(?:your\s+|the\s+)?(?:basket|cart)\b", re.I
        ),
    ),
    ("ordered", re.compile(r"\b(?:on\s+hold|waiting)\s+until\s+you\s+confirm", re.I)),
    ("ticked", re.compile(r"\bstill\s+unticked\b|\b(?:is|are)\s+not\s+(?:yet\s+)?ticked(?:\s+off)?\b", re.I)),
    (
        "favorite",
        re.compile(r"\b(?:is|are)\s+not\s+(?:a\s+)?favou?rites?\s+now\b|\bno\s+longer\s+(?:a\s+)?favou?rite", re.I),
    ),
    ("paid", re.compile(r"\b(?:still\s+)?shows?\s+as\s+unpaid\b|\bis\s+still\s+unpaid\b", re.I)),
)
"""States that tell a thing as not done ("It's sitting in your basket until you confirm" after
the order was placed; "'rice' is still unticked"; "is not a favourite now"), by status family."""


def _told_state(t: str, a: int, b: int, family: str, g: Grounds) -> tuple[bool, str] | None:
    """Whether the state ``t[a:b]`` (of ``family``, told of a record, not as the planner's act)
    holds: ``(held, named)``; ``named`` (the records' names, or "") when the clause names records
    that hold a status (the changed ones as the episode left them, unless the clause says
    "was"), ``held`` when one of them does (each of them, told of "both", "all" or with "are"),
    or, where none is named, when what the episode did or the goal does; None for an event
    "scheduled" with no record named (only a record with a status says otherwise). "Your School
    nights schedule is paused" where the episode paused Weeknights: School nights is named and
    enabled, so the state fails though the episode did pause something."""
    holds = STATUS_FAMILIES[family][2]
    ends = [e.end() for e in _CLAUSE.finditer(t, 0, a)]
    cuts = [m.end() for m in _SUBCLAUSE.finditer(t, ends[-1] if ends else 0, a)]
    lead = t[cuts[-1] if cuts else ends[-1] if ends else 0 : a]
    anchors = g.anchors(lead + t[a:b], "status")
    if not anchors and _AUX_ONLY.fullmatch(lead):  # "The latest episode, “Lost cinemas”, is downloaded"
        lead = t[ends[-1] if ends else 0 : a]
        anchors = g.anchors(lead + t[a:b], "status")
    if not anchors and _PRONOUN_LEAD.match(lead):
        anchors = g.anchors(t[max(0, a - 120) : b], "status")  # "it has been deleted": what came before
    # a record's yes/no fields of another kind tell nothing of this state (a lamp "on" is not "locked")
    kin = holds | {w for pair in _BOOL_STATUS.values() if set(pair) & holds for w in pair}
    anchors = [n for n in anchors if n.ev.statuses - _FLAG_WORDS or n.ev.statuses & kin]
    if family == "scheduled" and not anchors:
        return None
    changed = {x.rid for x in anchors if x.now and x.rid}
    if changed and not _PAST_CUE.search(t[max(0, a - 40) : a]):
        # "Derek's request is still pending" for the one it declined: as it is now
        anchors = [x for x in anchors if x.now or x.rid not in changed]
    anchors = [n for n in anchors if n.ev.statuses]
    if anchors:
        every = re.search(r"\b(?:both|all|each|are|were)\b", lead, re.I)
        held = (all if every else any)(n.ev.statuses & holds for n in anchors)
        named = [n.label for n in anchors if held or not n.ev.statuses & holds]
        return held, ", ".join(dict.fromkeys(named))
    if re.search(r"\balready\b", lead, re.I) and g.was.statuses:
        return bool(g.was.statuses & holds), ""  # "it had already shipped": what was changed, as it was
    return bool((g.focus | g.did.statuses) & holds), ""


def status_claims(t: str) -> list[tuple[str, int, int, bool]]:
    """``(family, start, end, own_act)`` of each status told in ``t`` (family: a key of
    :data:`STATUS_FAMILIES`; ``t[start:end]`` its words; ``own_act``: told as the planner's own act,
    "I have paid", not as a record's state, "the bill is paid") (``t``: a text already
    :func:`~phoneenv.tasks.predicates.plain`: contractions expanded), negated, conditional and
    questioned ones aside."""
    out: list[tuple[str, int, int, bool]] = []
    for own, pattern in (
        (True, _RE_STATUS_ACT),
        (False, _RE_STATUS_STATE),
        (False, _RE_STATUS_LABEL),
        (False, _RE_STATUS_COLON),
    ):
        for m in pattern.finditer(t):
            family = next(k for k, v in m.groupdict().items() if v)
            a, b = m.span(family)
            ends = [e.end() for e in _CLAUSE.finditer(t, 0, a)]
            lead = t[ends[-1] if ends else 0 : a]
            after = _CLAUSE.search(t, b)
            if _RE_STATUS_DENIED.search(lead) or (after is not None and "?" in t[b : after.end()]):
                continue
            if not any(s <= a < e for _, s, e, _ in out):
                # "boarding pass e-mailed to Shirley": a thing sent to someone is the planner's own act
                to_someone = (
                    pattern is _RE_STATUS_LABEL
                    and family in ("texted", "emailed", "sent")
                    and re.match(r"\s*to\s+[A-Z]", t[b:])
                )
                out.append((family, a, b, own or bool(to_someone)))
    return out


_COUNT_NOUNS = (
    r"people|persons|guests|adults|children|kids|diners|travell?ers|passengers|seats|tickets|nights|pairs|items"
    r"|units|pieces|entries|transactions|expenses|messages|texts|e-?mails|events|meetings|alarms|reminders|notes"
    r"|photos|pictures|songs|tracks|episodes|contacts|orders|bills|requests|ways|shares|rooms|bags|bottles"
    r"|movies|films|books|tasks|things|dishes|lines|stops|places|tabs"
    r"|person|guest|adult|child|diner|seat|ticket|night|pair|item|unit|piece|entry|transaction|expense|message"
    r"|text|e-?mail|event|meeting|alarm|reminder|note|photo|picture|song|track|episode|contact|order|bill|request"
    r"|room|bag|bottle"
)
_NOT_AN_AMOUNT = re.compile(
    rf"(?:\s+|-)(?:{_COUNT_NOUNS}|kids|stars?|hours?|minutes?|mins?|days?|weeks?|months?|years?|km|miles?|percent"
    r"|times|floors?)\b|\s*%",
    re.I,
)
"""A number told with its noun ("2 nights", "4 stars", "20 minutes"): no amount (read by
:func:`_string_facts`, with :data:`_NOT_AN_AMOUNT_BEFORE`)."""
_RE_COUNT = re.compile(
    r"(?<![\d.,:/#£$€¥-])(?<!\bpast\s)(?<!\bto\s)(?<!\bat\s)(\d{1,3})(?!\s+(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b)"
    r"(?:\s+|-)(?:more\s+|other\s+|new\s+|unread\s+|missed\s+|open\s+)?"
    rf"(?-i:(?:[A-Z][a-z][\w'\u2019&-]*\s+){{0,3}})(?:{_COUNT_NOUNS})\b"
    r"(?!\s*(?:[:.]\d|%))"
    r"|\b(?:(?:table|booking|reservation|party|room)\s+(?:for|of)\s+(\d{1,3})\b(?!\s*(?:[:.]\d|%|am\b|pm\b|o'?clock))"
    r"|(?:booked|reserved)\s+(?:(?!for\b)[^\s.;,!?]+\s+){1,4}for\s+(\d{1,2})\b"
    r"(?!\s*(?:[:.]\d|%|am\b|pm\b|o'?clock))(?=\s+(?:on|at|this|next|tomorrow|tonight|people|guests|diners)\b|\s*[,(]))"
    r"|\beach\s+of\s+(?:the\s+|those\s+)?(\d{1,3})\b(?![:.]\d)"
    r"|(?<![\d.,:/#-])(?<!pounds\s)(?<!pound\s)(?<!dollars\s)(?<!dollar\s)(?<!euros\s)(?<!euro\s)(?<!francs\s)"
    r"(\d{1,3})\s+(?:left|remaining|in\s+stock)\b",  # not the pence of "42 pounds 58 left"
    re.I,
)
"""A count told: "2 people", "3 City Zoo photos" (a name between), "a 3-night stay", "table for four", "booked El Patio for six at
19:30" (number words read as digits), "each of 3", "1 left"; not a time, a price, a date or a
percentage ("4:30", "2.50", "£38 request", "16 November order", "20%"; "booked it for 7." may be
a time and is not read)."""
_COUNT_ACT = re.compile(
    r"\b(?:book|reserv|order|bought|buy|text|messag|e-?mail|sent|send|invit|told|tell|notif|split|request|ask|add|creat|made|make|wrote|writ|start|switch|turn"
    r"|set|schedul|mov|chang|updat|delet|remov|cancel|paid|pay|download|mark|tag|sav|shar|forward|repl)\w*\b"
    r"|\b(?:noted|jotted|logged|listed|recorded|put)\b",
    re.I,
)
"""A verb of an act before a count in its clause: the count is of what the episode did ("Texted
4 people", "Booked a table for four")."""
_RE_ACT_COUNT = re.compile(
    r"(?<![\d.,:/#$€£-])(?<!past\s)(?<!to\s)(?<!at\s)(?<!half\s)(?<!quarter\s)(\d{1,3})(?!\s*(?:[ap]\.?m\b|o'?clock))\s+(?:[a-z][a-z-]*\s+){0,2}?"
    r"(?!(?:hours|minutes|mins|seconds|secs|days|weeks|months|years|times|km|kms|miles|metres|meters|euros|dollars"
    r"|pounds|cents|pence|yen|francs|percent|degrees|stars|points|ways|this|is|was|has|does|its|his|us|as|plus|less"
    r"|across|always|perhaps|thus|yes|o'clock)\b)([a-z][a-z-]{2,}s)\b"
    r"|(?<![\d.,:/#$€£-])(\d{1,3})\s+of\s+(?:them|those|these)\b(?!\s+(?:in|at|on|is|are|was|were)\b)",
)
"""A count of things after a verb of an act, whatever the things ("cleared 3 completed items",
"switched off 2 lamps"); units of time, money and measure are no things."""
_COUNT_NOUN = re.compile(r"\s*([A-Za-z-]+)")
"""The word after a count told without its noun in the span ("each of 3 people")."""
_LAST_WORD = re.compile(r"([A-Za-z-]+)\W*$")
"""The last word of a count's span: the thing counted ("3 completed items")."""
_RE_COUNT_DENIED = re.compile(r"\b(?:not|never|no|if|whether|should|could|would|up\s+to|max(?:imum)?)\b|n't", re.I)


_PARTY_WORDS = re.compile(r"\s+(?:people|persons|guests|adults|diners|person|guest|adult|diner)\b", re.I)


def count_claims(text: str) -> list[tuple[int, int, int, bool]]:
    """``(count, start, end, party)`` of each count told in ``text`` (already :func:`plain`);
    ``party``: the count is a party's size ("table for 4", "2 guests")."""
    out = []
    for m in _RE_COUNT.finditer(text):
        g = next(i for i in range(1, 6) if m.group(i))
        party = g in (2, 3) or (g == 1 and bool(_PARTY_WORDS.match(text, m.end(1))))
        out.append((int(m.group(g)), m.start(g), m.end(g) if g != 1 else m.end(), party))
    return out


_RE_PERCENT = re.compile(r"(?<![\d.,:/#-])(\d{1,3})\s*(?:%|percent\b|per\s+cent\b)", re.I)
"""A whole percentage told: "80%", "65 percent" (a level, a chance, a share)."""


RE_DISTANCE = re.compile(
    r"(?<![\w.,:/#-])(?P<about>(?:about|around|roughly|approximately|approx\.?|nearly|almost|just\s+(?:over|under)"
    r"|under|over|~)\s*)?(?P<n>\d{1,5}(?:[.,]\d{1,3})?)\s*-?\s*"
    r"(?P<unit>km|kilomet(?:er|re)s?|mi|miles?|m|met(?:er|re)s?)\b(?![.,]?\d)",
    re.I,
)
"""A distance told: "0.8 km", "about 3 miles", "a 4.5-km drive", "800 m"."""
_DISTANCE_KEY = re.compile(r"(?:^|_)(?:distance|km|miles?|mi|meters|metres|m)$|^distance", re.I)


def distance_number(raw: str) -> str:
    """The number of a distance told (:data:`RE_DISTANCE`'s ``n``) with a decimal point: a comma
    is a thousands separator before three digits ("1,200 m"), else a decimal comma ("0,8 km")."""
    return raw.replace(",", "" if re.fullmatch(r"\d{1,2},\d{3}", raw) else ".")


def _km(value: float, unit: str) -> float:
    """``value`` in ``unit`` (km, kilometres, m, metres, mi, miles) as km (a mile: 1.609344 km)."""
    u = unit.lower()
    return value * (1.0 if u.startswith("k") else 1.609344 if u.startswith("mi") else 0.001)


def distance_claims(text: str) -> list[tuple[str, float, float, float]]:
    """``(said, km, exact, rough)`` of each distance told in ``text``: its value in km, the
    rounding its digits allow in km (half its last digit's place: "0.8 km" is 0.75-0.85, "800 m"
    0.75-0.85 km, "5 miles" 4.5-5.5 miles) and, told "about", "nearly", "under" or "over", a share
    of the value it may be off (10%)."""
    out = []
    for m in RE_DISTANCE.finditer(text):
        n = distance_number(m["n"])
        v = float(n)
        places = len(n.partition(".")[2])
        half = 0.5 * 10**-places
        unit = m["unit"]
        if unit.lower().startswith("m") and not unit.lower().startswith("mi") and not places:
            half = 0.5 * 10 ** (len(n) - len(n.rstrip("0")))  # "800 m": to the 100 m, "450 m": to 10 m
        out.append((m[0].strip(), _km(v, unit), _km(half, unit) + 1e-9, 0.1 if m["about"] else 0.0))
    return out


def _distances(values: Sequence[Any]) -> frozenset[float]:
    """The distances ``values`` hold, in km: numbers under a distance key (``distance_km``,
    ``distance``; ``*_m`` in metres, ``*_mi`` or ``miles`` in miles) and distances told in their
    strings ("3.3 km walk")."""
    out: set[float] = set()
    for leaf, key, _, _ in _walk(list(values)):
        if isinstance(leaf, bool):
            continue
        if isinstance(leaf, (int, float)) and _DISTANCE_KEY.search(str(key)):
            k = str(key).lower()
            unit = (
                "mi"
                if k.endswith(("_mi", "miles", "mile"))
                else "m"
                if k.endswith(("_m", "meters", "metres"))
                else "km"
            )
            out.add(round(_km(float(leaf), unit), 4))
        elif isinstance(leaf, str) and len(leaf) <= 2000:
            out.update(round(km, 4) for _, km, _, _ in distance_claims(leaf))
    return frozenset(out)


def percent_claims(text: str) -> list[tuple[int, int, int]]:
    """``(percent, start, end)`` of each whole percentage told in ``text`` (already :func:`plain`)."""
    return [(int(m[1]), m.start(), m.end()) for m in _RE_PERCENT.finditer(text)]


RE_FULL_NAME = re.compile(r"\b([A-Z][a-z]+(?:-[A-Z][a-z]+)?)\s+([A-Z][a-z]+(?:-[A-Z][a-z]+)?)\b")
_RE_TOLD_TO = re.compile(
    r"\b(?:texted|messaged|e-?mailed|told|informed|notified|invited|called|let|asked|requested(?:\s+[^.;!?]*?)?\s+from"
    r"|sent(?:\s+[^.;!?]*?)?\s+to|forwarded(?:\s+[^.;!?]*?)?\s+to|shared(?:\s+[^.;!?]*?)?\s+with"
    r"|(?:text|message|sms|e-?mail|mail|reply|request|invite|invitation|it|photos?|note|link)s?\s+"
    r"(?:went|goes|has\s+gone|have\s+gone|was\s+sent|were\s+sent|got\s+sent|is\s+going|are\s+going)\s+to"
    r"|recipients?\s*:)",
    re.I,
)
_TOLD_TO_STOP = re.compile(
    r"\s[-\u2013\u2014]\s|\b(?:now\s+that|because|since|although|though|whereas|but|as\s+(?:he|she|they)|who|which)\b",
    re.I,
)
"""Where the people an act was told to end: a spaced dash or a clause of its own ("Sent requests to
Naoto and Shota - your usual crowd now that Hanako has moved away")."""
_RE_WHOSE_DETAILS = re.compile(
    r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?['\u2019]s\s+(?:(?:phone|mobile|work|home|new|e-?mail)\s+)?"
    r"(?:number|address|e-?mail|contact(?:\s+card)?|details|card)\b"
    r"|(?::|\bnumber(?:\s+is)?,?)\s*\+?\d[\d\s().-]{6,}\d"
)
"""Whose details a text carried ("Irene's number", ": +44 7999 030281"): what was sent, not to whom."""
_RE_HAS_IT = re.compile(
    r"(?P<who>\b(?i:your|ur)\s+\w+|\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\s+(?:now\s+)?(?:has|have|got)\s+(?:the|your|my)\s+"
    r"(?:message|text|e-?mail|note|photos?|invite|request|link)\b",
)
"""Someone told as having what the planner sent: "Your landlord has the message now"."""
"""A verb of telling someone, whose object is the people the episode addressed ("texted Ana",
"sent the photos to Ben", "requested 43 USD from each of Ana, Ben and Cy", "the text went to Ana")."""


RELATION_WORDS: dict[str, str] = {
    "mom": r"mom|mum|mother|mommy|mummy|ma",
    "dad": r"dad|father|daddy|papa|pa",
    "sister": r"sister|sis",
    "brother": r"brother|bro",
    "boss": r"boss|manager",
    "coworker": r"co-?worker|colleague",
    "neighbor": r"neighbou?r",
    "landlord": r"landlord|landlady",
    "dentist": r"dentist",
    "coach": r"coach|trainer",
    "aunt": r"aunt|auntie",
    "uncle": r"uncle",
    "son": r"son",
    "daughter": r"daughter",
    "grandma": r"grandma|grandmother|granny|nan",
    "grandpa": r"grandpa|grandfather|grandad",
    "cousin": r"cousin",
    "niece": r"niece",
    "nephew": r"nephew",
    "partner": r"partner|wife|husband|spouse|girlfriend|boyfriend",
    "physio": r"physio|physiotherapist",
    "doctor": r"doctor|GP|physician",
    "babysitter": r"babysitter|nanny|sitter",
    "tutor": r"tutor|teacher",
    "therapist": r"therapist",
    "roommate": r"roommate|flatmate|housemate",
    "plumber": r"plumber",
    "vet": r"vet",
}
"""How people say a contact's ``relation``: "texted your dad" is about the contact whose
relation is ``dad``. A role no contact holds ("your physio") is one only where the user's words
say it ("Irene is my physio")."""
_RE_RELATION = re.compile(
    r"\b(?:your|ur)\s+(?:" + "|".join(f"(?P<{k}>{v})" for k, v in RELATION_WORDS.items()) + r")\b(?!['’]s)", re.I
)


def _person_claims(text: str, g: Grounds, ctx: Context) -> list[tuple[str, str]]:
    """``(said, why)`` of each person ``text`` tells wrongly: a full name whose first name is a
    contact's (and a given name of the world: "Curry House" is a restaurant) and whose surname is
    a surname of the world, but no contact is so called ("Stanley Potter" for Stanley Brookes); a
    contact named as told, texted or asked ("texted Sandra", "sent it to Ben") whom no call of
    the episode addressed; a relation told of someone ("texted your brother", "your boss, Denis
    Naylor") who is not that relation by the contact book or, where it says none, by the user's
    words ("Doreen is my sister")."""
    import difflib

    from phoneenv.tasks.world import given_names, surnames  # Faker's name lists: loaded on first use

    out: list[tuple[str, str]] = []
    for m in full_names(text):
        if contact_ids(m[0], ctx.contacts):
            continue
        if not (firsts := contact_ids(m[1], ctx.contacts)):
            # "Billy Ayers" for the contact Bobby Ayers: a given name with a contact's surname, no one the
            # episode read of (a person a message or record names is no contact but may be told)
            kin = [str(c.get("name")) for c in ctx.contacts if str(c.get("name") or "").split()[-1:] == [m[2]]]
            if (
                kin
                and m[1].casefold() in given_names()
                and not any(m[0].casefold() in x.casefold() for x in g.read_strings)
            ):
                out.append((m[0], f"no contact is called {m[0]} ({', '.join(kin[:2])} is)"))
            continue
        # a surname one slip off the contact's ("Susan Sharon" for Susan Shannon)
        near = [
            str(c.get("name"))
            for c in ctx.contacts
            if str(c.get("id")) in firsts
            and len(parts := str(c.get("name") or "").split()) > 1
            and difflib.SequenceMatcher(None, parts[-1].casefold(), m[2].casefold()).ratio() >= 0.75
        ]
        if near or (m[1].casefold() in given_names() and m[2].casefold() in surnames()):
            out.append((m[0], f"no contact is called {m[0]}" + (f" ({near[0]} is)" if near else "")))
    # a relation told beside a name ("your boss, Denis Naylor"; "Doreen, your mother"; "Irene (your physio)"): that
    # contact's relation, where the contact book or the user's words say one
    for r in _RE_RELATION.finditer(text):
        relation = next(k for k, v in r.groupdict().items() if v)
        after = re.match(r",?\s+((?:[A-Z][\w'-]+\s?){1,3})", text[r.end() : r.end() + 40])
        before = re.search(r"((?:[A-Z][\w'-]+\s?){1,3})(?:,\s+|\s*\(\s*)$", text[max(0, r.start() - 40) : r.start()])
        for said in (after[1] if after else "", before[1] if before else ""):
            said = re.sub(r"['\u2019]s$", "", said.strip())  # "your sister Sabrina's number": Sabrina
            ids = contact_ids(said, ctx.contacts) if said else set()
            if len(ids) != 1:
                continue
            (cid,) = ids
            rec = next((c for c in ctx.contacts if c.get("id") == cid), {})
            known = rec.get("relation")
            kin = {str(c.get("id")) for c in ctx.contacts if c.get("relation") == relation}
            if (known and known != relation) or (not known and (kin or not _user_says(g, relation, said))):
                out.append((f"{r[0]} {said.strip()}", f"{said.strip()} is not your {relation}"))
    if not g.acts:
        return out
    for m in _RE_HAS_IT.finditer(text):  # "Your landlord has the message now": the one addressed
        who = m["who"]
        if (r := _RE_RELATION.match(who)) is not None:
            relation = next(k for k, v in r.groupdict().items() if v)
            kin = {str(c.get("id")) for c in ctx.contacts if c.get("relation") == relation}
            if not kin & g.addressed and (kin or not _user_says(g, relation)):
                whom = "the episode addressed no message or request to" if kin else "no contact is"
                out.append((who, f"{whom} your {relation}"))
        elif len(ids := contact_ids(who, ctx.contacts)) == 1 and not ids & g.addressed:
            out.append((who, f"the episode addressed no message or request to {who}"))
    for m in _RE_TOLD_TO.finditer(text):
        end = _CLAUSE.search(text, m.end())
        # "texted Irene's number to Rebecca": whose number was sent is what was sent, not to whom
        rest = _RE_WHOSE_DETAILS.sub(" ", text[m.end() : end.start() if end else len(text)])
        if (stop := _TOLD_TO_STOP.search(rest)) is not None:  # "... - your usual crowd now that Hanako moved"
            rest = rest[: stop.start()]
        for ids in mentioned_contacts(rest, ctx.contacts):
            if len(ids) == 1 and not ids & g.addressed:
                (cid,) = ids
                name = next((str(c.get("name")) for c in ctx.contacts if c.get("id") == cid), cid)
                out.append((name, f"the episode addressed no message or request to {name}"))
        for r in _RE_RELATION.finditer(rest):  # "texted your brother": a contact of that relation
            relation = next(k for k, v in r.groupdict().items() if v)
            kin = {str(c.get("id")) for c in ctx.contacts if c.get("relation") == relation}
            if kin & g.addressed or (not kin and _user_says(g, relation)):
                continue  # the user's words may say who it is ("Doreen is my sister")
            who = "no contact is" if not kin else "the episode addressed no message or request to"
            out.append((r[0], f"{who} your {relation}"))
    return out


def full_names(text: str) -> list[re.Match[str]]:
    """Every pair of capitalised words in ``text`` that may be a first name and a surname
    (:data:`RE_FULL_NAME`), overlapping ones included: "Calling Bryan James" gives "Calling
    Bryan" and "Bryan James"."""
    out = []
    pos = 0
    while (m := RE_FULL_NAME.search(text, pos)) is not None:
        out.append(m)
        pos = m.start(2)
    return out


_TITLE = re.compile(r"Mr|Mrs|Ms|Miss|Mx|Dr|Prof")
_RE_FIRST_NAME = re.compile(
    r"(?<![\w'\u2019-])([A-Z][a-z]+(?:-[A-Z][a-z]+)?)\b(?!\s+[A-Z][a-z])"
    r"(?!['\u2019]s\b(?!\s+(?:\w+\s+)?(?:request|bill|order|booking|message|text|e-?mail|call|invite|invitation|number|card)))"
)
"""A capitalised word standing alone (no capitalised word after it; a possessive only of a record:
"Emma's request"): a first name told of an act ("Tagged Taro", "added Asuka and your boss",
"paid Emma's money request")."""


def _with_deleted(ctx: Context) -> Sequence[Mapping[str, Any]]:
    """The episode's contacts (``ctx.contacts``, the end state's) and after them those it deleted.
    From a :class:`~phoneenv.tasks.identity.ContactBook`, another one, whose deleted records are
    found by :func:`~phoneenv.state.diff_tables` (at the cost of the records the episode
    touched); else a list (a scan of both tables)."""
    book = ctx.contacts
    before = ctx.before.get(CONTACTS_TABLE) or {}
    if not isinstance(book, ContactBook):
        now = {str(c.get("id")) for c in book}
        return [*book, *(c for c in before.values() if isinstance(c, Mapping) and str(c.get("id")) not in now)]
    gone = [
        ch.old
        for ch in diff_tables({CONTACTS_TABLE: before}, {CONTACTS_TABLE: book.table})
        if ch.kind == "deleted" and isinstance(ch.old, Mapping)
    ]
    return ContactBook(book.table, gone)


def _names_with(people: Sequence[Mapping[str, Any]], ids: set[str]) -> list[str]:
    """The names of the contacts among ``people`` whose id is in ``ids``, in their order."""
    found = people.having_ids(ids) if isinstance(people, ContactBook) else [c for c in people if c.get("id") in ids]
    return [str(c.get("name") or "") for c in found]


def _acted_people(text: str, g: Grounds, ctx: Context) -> list[tuple[str, str]]:
    """``(said, why)`` of each contact ``text`` (a final answer) tells the planner acted on or
    with ("Calling Gillian James", "Paid 1290 USD to Billy Webster", "Accepted Barbara Campbell's
    quote": a full name after an act's verb, :func:`~phoneenv.tasks.names.acted_on`) whom the
    episode neither addressed (:attr:`Grounds.addressed`) nor read of the records it acted on or
    wrote (the subject names: a shared contact card's name, a quote's provider); or a contact's
    first name with a surname no contact has ("Blocked Zoe Stevenson" for Zoe Holmes)."""
    out: list[tuple[str, str]] = []
    if g.subject_names is None:
        return out
    texts: list[str] | None = None
    people: Sequence[Mapping[str, Any]] | None = None
    for tail in acted_on(text):
        if people is None:  # the contacts the episode deleted too ("Deleted Zoe Holmes")
            people = _with_deleted(ctx)
        fulls = full_names(tail)
        for m in _RE_FIRST_NAME.finditer(tail):  # "Tagged Taro", "Sent Wendy your ETA": a first name alone
            if any(f.start() <= m.start() < f.end() and contact_ids(f[0], people) for f in fulls):
                continue  # part of a contact's full name: read below
            ids = contact_ids(m[1], people)
            if not ids or ids & g.addressed:
                continue
            if texts is None:
                texts = g.subject_names.texts(skip=text)
            full = _names_with(people, ids)
            if not held_by(m[1], texts) and not any(held_by(f, texts) for f in full if f):
                out.append((m[1], f"the episode did nothing to or with {' or '.join(full) or m[1]}"))
        for m in fulls:
            name = f"{m[1]} {m[2]}"
            ids = contact_ids(name, people)
            titled = _TITLE.fullmatch(m[1]) is not None  # "Mr Cox": a contact by title and surname
            if len(ids) > 1 or ids & g.addressed or (not ids and not titled and not contact_ids(m[1], people)):
                continue  # several so called, one the episode addressed, or no contact's first name
            if texts is None:
                texts = g.subject_names.texts(skip=text)
            # "Mr Cox" for the one contact so called: held as the contact's own name
            full = _names_with(people, ids)
            if not held_by(name, texts) and not any(held_by(f, texts) for f in full if f):
                why = f"the episode did nothing to or with {name}" if ids else f"no contact is called {name}"
                out.append((name, why))
    return out


def _hm_of(minutes: int | None) -> str:
    return "?" if minutes is None else f"{minutes // 60:02d}:{minutes % 60:02d}"


_NOW_ACT = re.compile(
    r"^\s*(?:(?:done|ok|okay|sure|all\s+set|great)\s*[,:!.\u2013\u2014-]?\s+)?(?:(?:i|we)\s+)?"
    r"(?:(?:have|had|also|just|already|then|successfully)\s+)*"
    r"(?:sent|paid|texted|sms(?:-?ed)?|e-?mailed|messaged|called|rang|phoned|replied|forwarded|transferred"
    r"|requested|shared)\b(?P<mid>(?:[^,;:]|(?<=\d),(?=\d))*?)\s(?:on\s+)?$",
    re.I,
)
"""A clause that tells, up to a date, an act a call does at once as the planner's own ("Sent
2,700 yen to Chiyo on Sunday", "I texted Ana yesterday"): its day is the clock's."""
_OF_ANOTHER_THING = re.compile(
    r"\b(?:about|for|that|re|regarding|saying|asking|from|of|due|before|after|until|by|since|with|when|what|which"
    r"|invite|invitation|event|meeting|appointment|booking|reservation|party|dinner|lunch|plan|plans)\b",
    re.I,
)
"""Words between such an act and a date that make the date another thing's ("texted Bob about
dinner on Sunday", "sent the invite for Friday")."""


def _acts_day(t: str, c: Claim, g: Grounds) -> str | None:
    """The date claim ``c`` of ``t`` judged as the day of the planner's own act told right before
    it (:data:`_NOW_ACT`): a message sent, money paid, a call made happen when the call is made,
    so "Sent 2,700 yen to Chiyo on Sunday" on a Monday fails. Returns why it is false, "" where
    it is the clock's day, and None where the clause tells no such act, the date is another
    thing's (:data:`_OF_ANOTHER_THING`), the episode changed nothing or the clock is unknown."""
    ends = [e.end() for e in _CLAUSE.finditer(t, 0, c.start)]
    start = ends[-1] if ends else 0
    cuts = [m.end() for m in _SUBCLAUSE.finditer(t, start, c.start)]
    m = _NOW_ACT.search(t[cuts[-1] if cuts else start : c.start])
    if m is None or _OF_ANOTHER_THING.search(m["mid"]) or not g.acts or g.subject.today is None:
        return None
    if re.match(r"\s*(?:this|last|next|every)\b", t[c.start : c.end], re.I) or re.match(r"['\u2019]s\b", t[c.end :]):
        return None  # "this Sunday", "tomorrow's forecast": a day spoken of, not the day of the act
    if not (m.group().rstrip().lower().endswith(" on") or _RELATIVE_DAY.match(t[c.start : c.end])):
        return None  # "sent Ryohei the forecast Sunday": only "on <day>" or "today"/"yesterday" tells the act's day
    today = g.subject.today
    said = {v for v in (c.value, *c.alts) if isinstance(v, str)}
    weekday = (
        _weekday_of(t[c.start : c.end].strip()) if re.fullmatch(WEEKDAY, t[c.start : c.end].strip(), re.I) else None
    )
    if today.isoformat() in {d[:10] for d in said} or weekday == today.weekday():
        return ""
    return f"the episode did it when its call was made: today, {today:%A} {today.isoformat()} by the phone's clock"


def _not_today(at: int, text: str, g: Grounds, ctx: Context, bounds: Sequence[int]) -> str | None:
    """Why "today" at ``at`` in ``text`` is false of a time told beside it (in its clause, by the
    clause ``bounds``) that the episode set: the episode set that time for another day ("pickup
    today at 09:00" for tomorrow's), or set it without a date (an alarm, a do-not-disturb end)
    at a time the clock has passed, so that it rings or ends tomorrow ("You'll be woken at 06:25
    today" at 11:15). None where no time the episode set is told beside it, or it set one today."""
    if g.now is None or not g.did.times or g.subject.today is None:
        return None
    k = next(k for k in range(1, len(bounds)) if at < bounds[k])
    lo, hi = bounds[k - 1], bounds[k]
    today = g.subject.today.isoformat()
    for c in claims(text, "time", ctx):
        if c.negated or not lo <= c.start < hi:
            continue
        said = [v for v in (c.value, *c.alts) if isinstance(v, str) and v in g.did.times]
        if not said or today in g.did.dates:
            continue
        if g.did.dates:
            return f"the episode set {said[0]} for {', '.join(sorted(g.did.dates)[:2])}, not today"
        if all(_minutes(v) < g.now for v in said):
            return f"the episode set {said[0]}, which the clock ({_hm_of(g.now)}) has passed today: it is tomorrow's"
    return None


def _user_says(g: Grounds, relation: str, name: str = "") -> bool:
    """Whether the user's words (the goal, memory) name ``relation`` (beside ``name``'s first
    name, when given: "Doreen is my sister")."""
    pattern = re.compile(rf"\b(?:{RELATION_WORDS.get(relation, relation)})\b", re.I)
    first = name.split()[0].lower() if name.strip() else ""
    return any(pattern.search(t) and (not first or first in t.lower()) for t in g.user_texts)


_ROUGH_LEAD = re.compile(
    r"(?:about|around|roughly|approx(?:imately|\.)?|almost|nearly|just\s+(?:under|over)|over|under|~)\s*$", re.I
)
"""A word that makes the number after it rough ("(about 45 min)"), at the end of a text."""
_BRACKET_HEAD = re.compile(r"((?:[^\s(),;]+\s+){1,5})\(\s*$")
"""The words right before an open bracket at the end of a text: what a value in brackets tells
of ("the earliest train (10:40)")."""


def check_text(
    text: str, source: str, g: Grounds, ctx: Context, types: Sequence[str] = GROUNDED_TYPES
) -> list[Ungrounded]:
    """The claims of ``text`` (told by the planner; ``source`` names where) that the grounds
    ``g`` do not hold, of the claim ``types`` asked for.

    A claim is grounded when it is in ``g.subject`` (what the user said, what the episode did,
    the clock); else, when its clause names read records holding values of its type, when it is
    one of theirs; else, when the episode did nothing of its type, when it is in ``g.read``."""
    out: list[Ungrounded] = []
    if not text or not text.strip():
        return out
    text = unmarked(text)  # "the total is **16.0 EUR**": read as shown
    sc = scan(text, ctx)
    t = sc.text
    bounds = [0, *(m.end() for m in _CLAUSE.finditer(t)), len(t) + 1]

    def clause(pos: int) -> str:
        i = next(k for k in range(1, len(bounds)) if pos < bounds[k])
        return t[bounds[i - 1] : bounds[i]]

    listed: dict[str, tuple[int, bool]] = {}  # per type, the last claim judged: its end and whether acted

    def acted(start: int, type: str) -> bool:
        """Whether the claim at ``start`` is the value of what the episode did ("moved it to
        Tuesday", "booked for 19:30", "paid 45 EUR"), or listed right after one ("reminders at
        12:00 and 12:25")."""
        if (prev := listed.get(type)) and prev[1] and _LISTED.fullmatch(t[prev[0] : start]):
            return True
        here = clause(start)
        lead = t[max(bounds[0], start - len(here) - 1, start - 60) : start]
        m = (_ACTION_BEFORE.search(lead) if type in g.done else None) or _AS_IT_WAS.search(lead)
        if m is None and type == "money" and "money" in g.done and re.search(r"\(\s*$", lead):
            # "Ordered a Lentil Soup from Green Bowl (9.50 EUR)": the bracket tells the act's amount,
            # where no other amount or comparison stands between ("cheaper than Phone (£38.61)")
            act = _TOTAL_ACT.search(part := t[max(b for b in bounds if b <= start) : start])
            if act and not _OTHER_AMOUNT.search(part, act.end()):
                m = act
        # "the text Marlene sent yesterday": someone else's act, not the episode's
        return m is not None and not _OTHERS_ACT.search(lead[: m.start()]) and not _named_before(lead[: m.start()])

    def own_total(start: int, end: int) -> bool:
        """Whether the amount at ``start:end`` is told as the total of the planner's own act
        ("Ordered ...: 59.25 AUD in total", "a total of 59.25"), in its clause, or as a total
        of its own ("The total is 21.25 AUD"; "Ordered ... for 24.0 GBP")."""
        a = max(b for b in bounds if b <= start)
        z = min(b for b in bounds if b >= end)
        if re.match(r"\s*(?:minimum|min\b|maximum|max\b|limit|budget|fee|deposit|discount|tip|balance)", t[end:]):
            return False  # "well over the ¥750 minimum": another amount, named after it
        # the cue right before ("a total of", "in total:") or right after it ("59.25 AUD in total")
        before = re.search(
            rf"(?:{_TOTAL_CUE.pattern})(?:\s+of)?\s*[:=]?\s*(?:just\s+|only\s+)?$", t[max(a, start - 30) : start], re.I
        )
        after = re.match(rf"\s*,?\s*(?:{_TOTAL_CUE.pattern})", t[end : min(z, end + 20)], re.I)
        if (before or after) and _TOTAL_ACT.search(t[a:start]):
            return True
        return bool(_TOTAL_SAID.search(t[a:start])) and not re.match(
            r"\s*(?:each|apiece|per\b|a\s+(?:head|piece))", t[end:]
        )

    def bracket_named(start: int, type: str, lead_words: int = 0) -> list[Named]:
        """The records named in the clause before a bracket that the value at ``start`` opens,
        after at most ``lead_words`` words inside it ("“Market days” from City Stories (about
        67 min)", "'Trail food' (out 9 November)"); none where it opens none, or (a date) the
        bracket follows a day ("tomorrow (Saturday 21 November)": the day told again)."""
        a = max(b for b in bounds if b <= start)
        lead = _ROUGH_LEAD.sub("", t[a:start])
        m = re.search(r"\(\s*(?:[A-Za-z]+\s+){0,%d}$" % lead_words, lead)  # noqa: UP031
        if m is None or m.start() < 3:
            return []
        if type == "date" and re.search(
            rf"(?:today|tonight|tomorrow|yesterday|{WEEKDAY}|\d)\W*$", lead[: m.start()], re.I
        ):
            return []
        return g.anchors(lead[: m.start()], type)

    def bracket_lengths(start: int) -> set[int]:
        """The lengths (minutes) of the records a bracket the duration at ``start`` opens follows
        (:func:`bracket_named`); empty where there are none or they hold none."""
        return set().union(*(n.ev.spans | n.ev.durations for n in bracket_named(start, "duration")))

    def bracket_dates(start: int) -> set[str]:
        """The days of the records a bracket the date at ``start`` opens follows, a word or two
        in (:func:`bracket_named`); empty where there are none or they hold no day."""
        return set().union(*(n.ev.dates for n in bracket_named(start, "date", 2)))

    def past(start: int) -> bool:
        """Whether the clause tells the value at ``start`` as it was ("you had", "up from")."""
        return bool(_PAST_CUE.search(t[max(b for b in bounds if b <= start) : start]))

    def judge(type: str, values: Sequence[Any], start: int, end: int, unit: str = "", ending: bool = False) -> None:
        if _FROM_BEFORE.search(t[max(0, start - 20) : start]) and any(
            g.ok(type, v, g.was, t, start, unit) for v in values
        ):
            return  # where a change started ("raised the thermostat from 19 to 20.5")
        if type == "money" and unit and g.currencies and unit not in g.currencies:
            held = ", ".join(sorted(g.currencies))
            why = f"the episode's world holds amounts in {held} only, and the user named no other currency"
            out.append(Ungrounded(type, t[start:end], source, (), why))
            return
        if type == "money" and values and _THATS.search(t[max(b for b in bounds if b <= start) : start]):
            mains = [a for _, a in g.main_amounts if a is not None]  # "Sent 2 requests. That's 24.00 GBP."
            pool = (
                set(g.totals) | {(round(a, 2), "") for a in mains} | ({(round(sum(mains), 2), "")} if mains else set())
            )
            if pool and not _money_ok(round(values[0], 2), unit, pool):
                near = tuple(_nearest(type, values[0], pool))
                why = f"what the episode did moved {', '.join(near)}"
                out.append(Ungrounded(type, t[start:end], source, near, why))
                return
        if type == "money" and values and g.totals and own_total(start, end):
            if not _money_ok(round(values[0], 2), unit, g.totals):  # "59.25 AUD in total" for 56.25
                near = tuple(_nearest(type, values[0], g.totals))
                why = f"the total of what the episode did is {', '.join(near)}"
                out.append(Ungrounded(type, t[start:end], source, near, why))
            return
        if type == "money" and values and _stale(g, type, values[0], unit) and not past(start):
            near = tuple(_nearest(type, values[0], _values(g.did, type)))  # "your balance is now 292131"
            out.append(Ungrounded(type, t[start:end], source, near, _STALE_WHY))
            return
        own = acted(start, type)
        listed[type] = (end, own)
        if own:
            # a temperature the episode set is told as set, not as the user once wanted it ("set to
            # 21.5°C, your usual" where it set 22 after the user changed their mind)
            pool = g.acted if type == "temperature" and g.acted.temps else g.did
            if any(g.ok(type, v, pool, t, start, unit, ending) for v in values):
                return
            near = tuple(_nearest(type, values[0], _values(pool, type))) if values else ()
            why = "it is what the episode did, whose records hold " + (", ".join(near) or "none")
            out.append(Ungrounded(type, t[start:end], source, near, why))
            return
        if any(g.ok(type, v, g.subject, t, start, unit, ending) for v in values):
            return
        lead = t[max(b for b in bounds if b <= start) : start]
        # a value in brackets is about the words it follows ("10 minutes before the earliest train
        # (10:40)"), not the clause's other records (the flight booked)
        head = _BRACKET_HEAD.search(lead)
        here = clause(start)
        anchors = g.anchors(head[1] if head else here, type)
        if not anchors and head is None and _PRONOUN_LEAD.match(here):
            opens = max(b for b in bounds if b <= start)  # "...pottery class is at Harbour Hall; it starts at 6 pm"
            anchors = g.anchors(clause(opens - 1), type) if opens > 0 else []
        if anchors:
            about = Evidence()
            totals: dict[tuple[str, str], float] = {}
            ids = {a.rid for a in anchors if a.rid}
            seen: set[str] = set()
            for a in anchors:
                about.merge(a.ev)
                # the total of the records named ("386.98 in all"): each record once, read in
                # however many results, and not its copies (a cart line or an order line of it)
                if a.rid in seen or (a.refs & ids) - {a.rid}:
                    continue
                seen.add(a.rid)
                for k, x, cur in a.amounts:
                    totals[(k, cur)] = totals.get((k, cur), 0.0) + x
            about.money.update((round(x, 2), cur) for (_, cur), x in totals.items())
            if any(g.ok(type, v, about, t, start, unit, ending) and not g.clashes(type, v, unit) for v in values):
                return
            ends = [x for a in anchors for x in a.ev.end_times] if type == "time" else []
            held = sorted({_show(type, x) for a in anchors for x in [*_values(a.ev, type), *ends]})[:4]
            why = f"it is about {', '.join(dict.fromkeys(a.label for a in anchors))}, which holds {', '.join(held)}"
            out.append(Ungrounded(type, t[start:end], source, tuple(held), why))
            return
        if any(g.ok(type, v, g.read, t, start, unit, ending) for v in values):
            return
        pool = [*_values(g.subject, type), *_values(g.read, type)]
        near = tuple(_nearest(type, values[0], pool)) if values else ()
        why = ""
        out.append(Ungrounded(type, t[start:end], source, near, why))

    if "time" in types:
        for c in claims(text, "time", ctx):
            if not c.negated and (ends := c.ends()) is not None and g.set_spans:
                told = [{v for v in (e.value, *e.alts) if isinstance(v, str)} for e in ends]
                half = [p for p in g.set_spans if p[0] in told[0] or p[1] in told[1]]
                read = any(p[0] in told[0] and p[1] in told[1] for p in g.read_spans)  # a window the calls returned
                if half and not read and not any(p[0] in told[0] and p[1] in told[1] for p in half):
                    # "from 21:00 to 21:30" for an event set 20:00-21:30: one end right, the other not
                    held = tuple(f"{a}-{b}" for a, b in sorted(half)[:3])
                    why = f"the episode set {', '.join(held)}"
                    out.append(Ungrounded("time", t[c.start : c.end], source, held, why))
                    continue
            if not c.negated:
                for k, part in enumerate([c] if c.ends() is None else list(c.ends())):
                    vals = [v for v in (part.value, *part.alts) if isinstance(v, str)]
                    if g.zoned and vals and (swap := _zone_swap(t, part.start, part.end, vals, g)) is not None:
                        out.append(Ungrounded("time", t[part.start : part.end], source, *swap))
                        continue
                    if (
                        _NOW_CUE.search(t[max(0, part.start - 30) : part.start])
                        or (
                            re.match(r"\s*now\b(?!\s+(?:on|in|at|for|until|set))", t[part.end : part.end + 12])
                            and re.search(
                                r"\bit(?:\s+is|['\u2019]s)\s*$", t[max(0, part.start - 12) : part.start], re.I
                            )
                        )
                    ) and (
                        clock := _clock_values(ctx, "time")
                    ):  # "(Finished just now, at 10:45.)", "it's now 09:40": the phone's clock
                        near = {_minutes(x) for x in clock}  # the clock moves as the episode runs: ±10 min
                        if not any(abs(_minutes(v) - m) <= 10 for v in vals for m in near):
                            why = f"the phone's clock says {', '.join(sorted(clock))}"
                            out.append(Ungrounded("time", t[part.start : part.end], source, tuple(sorted(clock)), why))
                        continue
                    cue = _FIELD_CUE.search(t[max(0, part.start - 45) : part.start])
                    what = _cue_field(cue[1]) if cue else "labelled"
                    field_times = g.field_times.get(what) if cue else None
                    if (
                        field_times
                        and (named := g.anchors(clause(part.start), "time"))
                        and not any(a.now for a in named)
                        and any(v in a.ev.times | a.ev.end_times for a in named for v in vals)
                    ):
                        field_times = None  # "your other meeting ends at 12:00": another record's, read as any time
                    if not field_times and not past(part.start):  # "a backup at 06:30": the backup's
                        field_times, what = _labelled_time(g, t[max(0, part.start - 30) : part.start]), "labelled"
                    if field_times and not past(part.start):  # "due at 13:00": the due time it set
                        # told roughly, a set time is still that time to the nearest five minutes
                        if not any(_time_ok(v, t, part.start, set(field_times), rough=5) for v in vals):
                            held = tuple(sorted(field_times)[:3])
                            whose = f"the {what} time" if what != "labelled" else "the time of the record so labelled"
                            why = f"{whose} the episode set is {', '.join(held)}"
                            out.append(Ungrounded("time", t[part.start : part.end], source, held, why))
                        continue
                    judge("time", vals, part.start, part.end, ending=k == 1)
    if "date" in types:
        found = claims(text, "date", ctx)
        for i, c in enumerate(found):
            if c.negated:
                continue
            nxt = found[i + 1] if i + 1 < len(found) else None
            if (
                nxt is not None
                and _RELATIVE_DAY.fullmatch(t[c.start : c.end].strip())
                and re.fullmatch(r"\s*[(,]\s*", t[c.end : nxt.start])
                and isinstance(c.value, str)
                and isinstance(nxt.value, str)
                and c.value[:10] not in {v[:10] for v in (nxt.value, *nxt.alts) if isinstance(v, str)}
                and not (  # "today (Saturday)" on a Saturday: a bare weekday names the day of the week only
                    re.fullmatch(rf"{WEEKDAY}", t[nxt.start : nxt.end].strip(), re.I)
                    and _weekday_of(t[nxt.start : nxt.end].strip()) == dt.date.fromisoformat(c.value[:10]).weekday()
                )
            ):  # "tomorrow (Tuesday 24 November)" on the 24th: the two days told disagree
                why = f"by the phone's clock, {t[c.start : c.end].strip()} is {c.value[:10]}"
                out.append(Ungrounded("date", t[c.start : nxt.end], source, (c.value[:10],), why))
                continue
            if (
                nxt is not None
                and re.fullmatch(rf"{WEEKDAY}", t[c.start : c.end].strip(), re.I)
                and re.fullmatch(r"[\s,]*", t[c.end : nxt.start])
            ):  # "Wednesday 2026-11-11": the weekday labels the date beside it (checked with it)
                continue
            span = t[c.start : c.end].strip().rstrip(".,;")
            if (day := _acts_day(t, c, g)) is not None:  # "Sent 2,700 yen to Chiyo on Sunday": the clock's day
                if day:
                    today = g.subject.today
                    out.append(Ungrounded("date", span, source, (f"{today:%A} {today.isoformat()}",), day))
                continue
            if re.fullmatch(rf"{WEEKDAY}(?:\s*(?:to|-|\u2013|through|thru|till|until)\s*{WEEKDAY})?", span, re.I) and (
                re.search(r"\s|-|\u2013", span)
                or _WEEKDAY_RANGE.search(t[c.end : c.end + 16])
                or _WEEKDAY_RANGE.search(t[max(0, c.start - 16) : c.start])
            ):
                if (bad := _schedule_days(span, g)) is not None:  # "Monday to Thursday" for Sunday to Thursday
                    out.append(Ungrounded("date", span, source, *bad))
                continue  # "Monday to Friday": the days of a schedule, not dates
            if re.fullmatch(WEEKDAY, span, re.I) and re.search(r"\bthat\s+$", t[max(0, c.start - 6) : c.start], re.I):
                # "that Monday": a day told before or known to the user (the goal's Monday 26
                # October), not the coming or the last one: any such day the grounds hold
                wd = _weekday_of(span)
                pool = (
                    g.subject.dates | g.read.dates | {d for a in g.anchors(clause(c.start), "date") for d in a.ev.dates}
                )
                if any(dt.date.fromisoformat(d[:10]).weekday() == wd for d in pool):
                    continue
            # a weekday's agreement with its date first, whatever the evidence
            _, why = _date_check(c, t, Evidence(), g.subject.today)
            if why:
                out.append(Ungrounded("date", t[c.start : c.end], source, (), why))
                continue
            if (
                g.subject.today is not None
                and isinstance(c.value, str)
                and _TODAY_IS.search(t[max(0, c.start - 24) : c.start])
            ):  # "today is Tuesday", "enjoy the rest of your Sunday": the clock's day, and no other
                today = g.subject.today
                day = _weekday_of(span) if re.fullmatch(WEEKDAY + r"\.?", span, re.I) else None
                if (today.weekday() if day is not None else today.isoformat()) != (
                    day if day is not None else c.value[:10]
                ):
                    held = f"{WEEKDAYS[today.weekday()].title()} {today.isoformat()}"
                    why = f"the phone's clock says today is {held}"
                    out.append(Ungrounded("date", t[c.start : c.end], source, (held,), why))
                continue
            cue = _DATE_CUE.search(t[max(0, c.start - 45) : c.start]) if g.field_dates else None
            word = cue[1].lower() if cue else ""
            what = "due" if word == "due" else "paid" if word.startswith(("pa", "sch")) else "arrival"
            days = g.field_dates.get(what, frozenset()) if cue and not past(c.start) else frozenset()
            said = {v[:10] for v in (c.value, *c.alts) if isinstance(v, str)}
            if re.fullmatch(WEEKDAY, span, re.I):  # "lands in Tokyo Saturday": the one of those days that is one
                said = {c.value[:10]} | {d for d in days if dt.date.fromisoformat(d).weekday() == _weekday_of(span)}
            if days and isinstance(c.value, str) and (said & days or not said & g.read_field_dates[what]):
                if not said & days:  # "will be paid on Wednesday 2 December" for a payment set for the 1st
                    which = {"due": "due", "paid": "payment"}.get(what, what)
                    why = f"the {which} day of what the episode changed is {', '.join(sorted(days)[:3])}"
                    out.append(Ungrounded("date", t[c.start : c.end], source, tuple(sorted(days)[:3]), why))
                continue  # another record's due day ("the electricity bill is due on the 10th") is read below
            lead = t[max((e.end() for e in _CLAUSE.finditer(t, 0, c.start)), default=0) : c.start]
            told = {v for v in (c.value, *c.alts) if isinstance(v, str)}
            if re.fullmatch(WEEKDAY, t[c.start : c.end].strip(), re.I) and g.subject.today is not None:
                told = {(g.subject.today - dt.timedelta(days=k)).isoformat() for k in range(8)} & {
                    d
                    for d in g.read.dates
                    if d[:10] in told
                    or dt.date.fromisoformat(d[:10]).weekday() == _weekday_of(t[c.start : c.end].strip())
                }  # a lone weekday of a past act: that day of the last week
            if g.read.dates and _OTHERS_DID.search(lead):  # someone else's act: a day of the records read
                said = t[c.start : c.end].strip().lower()
                if re.fullmatch(WEEKDAY, said, re.I) and any(
                    re.search(rf"\b{re.escape(said)}\b", x, re.I) for x in g.read_strings
                ):
                    continue  # "dinner's been moved to Friday", as the voicemail read says it
                if not told & g.read.dates:
                    held = tuple(sorted(g.read.dates)[-3:])  # "They called this morning" for a call of the 30th
                    why = f"someone else's act, which the records read date {', '.join(held)}"
                    out.append(Ungrounded("date", t[c.start : c.end], source, held, why))
                continue  # "Mary sent it on Sunday" for a text of last Sunday
            if g.dated and (bad := _dated_by_temperature(t, c, g)) is not None:
                out.append(Ungrounded("date", t[c.start : c.end], source, *bad))
                continue
            own = Evidence(dates=set(g.did.dates), month_days=g.did.month_days)
            today = (
                re.match(r"\s*(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", t[c.start : c.end], re.I)
                and not (  # "today's FreshMart expense": the day of the record it names, if it has one
                    not re.match(r"\s*today\s+is\b", t[c.start :], re.I)
                    and any(
                        today_d not in a.ev.dates
                        for a in g.anchors(clause(c.start), "date")
                        if (today_d := g.subject.today and g.subject.today.isoformat())
                    )
                )
            )
            held = g.did.dates | g.was.dates
            if (
                _RELATIVE_DAY.match(t, c.start)
                and (_FROM_BEFORE.search(t[max(0, c.start - 20) : c.start]) or re.match(r"['\u2019]s\b", t[c.end :]))
                and held
                and c.value not in held
            ):  # "the GreenCross expense from today", "today's GreenCross expense" for one of the 13th
                why = f"what the episode changed is of {', '.join(sorted(held)[:3])}"
                out.append(Ungrounded("date", t[c.start : c.end], source, tuple(sorted(held)[:3]), why))
                continue
            if today and (why := _not_today(c.start, t, g, ctx, bounds)):
                out.append(Ungrounded("date", t[c.start : c.end], source, (), why))
                continue
            if today and not (g.did.dates and acted(c.start, "date")):
                # the clock grounds "today" ("today is Tuesday, 10 November" is judged above); what
                # the episode set for a day is told as that day ("due today" for tomorrow's fails)
                own.dates |= _clock_values(ctx, "date")
                if _date_check(c, t, own, g.subject.today)[0]:
                    continue
            if acted(c.start, "date"):
                if _date_check(c, t, own, g.subject.today)[0]:
                    continue
                near = tuple(_nearest("date", c.value, list(g.subject.dates)))
                why = "it is what the episode did, whose records hold " + (", ".join(near) or "none")
                out.append(Ungrounded("date", t[c.start : c.end], source, near, why))
                continue
            held = bracket_dates(c.start)
            if held:  # "'Trail food' (out 9 November)": the day of the record the bracket follows
                if not _date_check(c, t, Evidence(dates=held), g.subject.today)[0]:
                    near = tuple(_nearest("date", c.value, list(held)))
                    out.append(
                        Ungrounded(
                            "date", t[c.start : c.end], source, near, "the bracket follows a record of those days"
                        )
                    )
                continue
            anchors = g.anchors(clause(c.start), "date")
            if anchors:  # about named records: theirs, or a day the episode set (not the clock's)
                if any(_date_check(c, t, e, g.subject.today)[0] for e in (own, *(a.ev for a in anchors))):
                    continue
            elif _date_check(c, t, g.subject, g.subject.today)[0] or (
                "date" not in g.done and _date_check(c, t, g.read, g.subject.today)[0]
            ):
                continue
            if (m := _IN_DAYS.fullmatch(t[c.start : c.end])) and int(m[1]) * (
                7 if m[2].lower() == "week" else 1
            ) * 1440 in (set().union(*(a.ev.durations for a in anchors)) if anchors else g.every.durations):
                continue  # "delivery in 4 days" for an offer "delivered within 4 days": a span, not a day
            pool = [*g.subject.dates, *(a for n in anchors for a in n.ev.dates)]
            if not anchors and "date" not in g.done:
                pool += list(g.read.dates)
            near = tuple(_nearest("date", c.value, pool))
            why = f"it is about {', '.join(dict.fromkeys(a.label for a in anchors))}" if anchors else ""
            out.append(Ungrounded("date", t[c.start : c.end], source, near, why))
    if "date" in types and g.read.dates and g.subject.today is not None:  # "They called this morning"
        today = g.subject.today.isoformat()
        for m in _PART_OF_TODAY.finditer(t):
            lead = t[max((e.end() for e in _CLAUSE.finditer(t, 0, m.start())), default=0) : m.start()]
            if today not in g.read.dates and _OTHERS_DID.search(lead):
                held = tuple(sorted(g.read.dates)[-3:])
                why = f"someone else's act, which the records read date {', '.join(held)}"
                out.append(Ungrounded("date", m[0], source, held, why))
    if "money" in types:
        for c in sc.claims:
            if c.type == "money" and not c.negated and isinstance(c.value, float):
                judge("money", [c.value], c.start, c.end, c.unit)
    if "temperature" in types:
        for span, v, unit, neg in temperature_claims(t):
            if not neg:
                start = t.find(span)
                label = _TEMP_LABEL.search(t[max(0, start - 20) : start]) if g.temp_labels else None
                if label is not None:  # "high 2.1°C" for the low: the value of that label
                    which = "high" if label[1].lower() in ("high", "highs", "top", "max", "maximum") else "low"
                    mine, other = (
                        g.temp_labels.get(which, frozenset()),
                        g.temp_labels.get("low" if which == "high" else "high", frozenset()),
                    )
                    if round(v, 1) in other and round(v, 1) not in mine:
                        why = f"{v:g} is a {'low' if which == 'high' else 'high'} the episode read, not a {which}"
                        out.append(
                            Ungrounded("temperature", span, source, tuple(f"{x:g}" for x in sorted(mine)[:3]), why)
                        )
                        continue
                judge("temperature", [v], start, start + len(span), unit)
    pt = plain(text) if {"status", "count", "percent"} & set(types) else ""  # contractions, number words
    if "status" in types:
        for family, a, b, own in status_claims(pt):
            _, does, holds = STATUS_FAMILIES[family]
            money = family in ("paid", "sent", "requested")
            if own and any(does(n) for n in g.acts) and (other := _other_act(pt, b, does, g, ctx, money)) is not None:
                out.append(Ungrounded("status", f"{pt[a:b]} {other[0]}", source, (), other[1]))
                continue  # the act was done, to another person or amount ("Paid Lee" for Lee's declined request)
            if own and any(does(n) for n in g.acts) and (other := _other_record(pt, a, does, g)) is not None:
                said = pt[a:b] if other[0].lower() in pt[a:b].lower() else f"{pt[a:b]} {other[0]}"
                out.append(Ungrounded("status", said, source, (), other[1]))
                continue  # the act was done, to another record ("took the pan out" when the charger went)
            if own and _BOTH.match(pt, b) and _one_of_many(does, g):
                why = "the episode did that to one thing only (one call, one record)"
                out.append(Ungrounded("status", pt[a : _BOTH.match(pt, b).end()], source, (), why))
                continue  # "Paid both requests" where it paid one and declined the other
            if does is NO_TOOL and source != "answer":  # a text passing on what a mail or text said
                continue
            if family in _MADE_BY_ACT and any(does(n) for n in g.acts):
                continue  # "Your usual is on its way" right after the order was placed
            told = _told_state(pt, a, b, family, g) if not own and holds else None
            if told is not None and told[0]:
                continue  # the record the clause names (or, none named, the goal or what was done) holds it
            if told is None or not told[1]:  # no record named that holds a state of this kind
                if any(does(n) for n in g.acts) or holds & g.changed_words:
                    continue  # a call of that kind, or a record it changed now says so (a note tagged "archive")
                if not own and told is None:
                    continue  # a state no record's status tells
            else:
                why = f"{told[1]} is not {pt[a:b]}: the state its record holds says otherwise"
                out.append(Ungrounded("status", pt[a:b], source, (), why))
                continue
            did = sorted(g.acts) or ["nothing that changed the phone"]
            why = f"the episode did no such thing (it called {', '.join(did[:4])})"
            out.append(Ungrounded("status", pt[a:b], source, (), why))
        if g.episode is not None and (m := _RE_UNASKED.search(pt)):  # "Deleted it without asking" after a confirm
            asked = [c.name for c in g.episode.calls if c.name in _ASKING and getattr(c, "ok", False)]
            if asked:
                why = f"the episode asked the user first (it called {', '.join(dict.fromkeys(asked))})"
                out.append(Ungrounded("status", m[0], source, (), why))
        for family, a, b in _undone_claims(pt):  # told as not done, but done
            _, does, _ = STATUS_FAMILIES[family]
            done = sorted(n for n in g.acts if does(n))
            if done:
                why = f"the episode did it (it called {', '.join(done[:4])})"
                out.append(Ungrounded("status", pt[a:b], source, (), why))
    if "count" in types and g.line_counts:  # "Ordered three Lentil Soup", "2 x Iced Coffee": that line's quantity
        low = pt.lower()
        for name, qtys in g.line_counts.items():
            pattern = rf"(?<![\w.,:/$€£¥-])(\d{{1,3}})\s*(?:x\s*|×\s*)?(?:of\s+(?:the\s+|your\s+|those\s+)?)?{re.escape(name)}(?:e?s)?\b"
            for m in re.finditer(pattern, low):
                ends = [e.end() for e in _CLAUSE.finditer(pt, 0, m.start())]
                if int(m[1]) in qtys or _RE_COUNT_DENIED.search(pt[ends[-1] if ends else 0 : m.start()]):
                    continue
                held = tuple(str(q) for q in sorted(qtys))
                why = f"the episode's {name} line holds {', '.join(held)}"
                out.append(Ungrounded("count", pt[m.start() : m.end()], source, held, why))
    if "count" in types:
        pt = re.sub(r"\(s\)", "s ", pt)  # "removed 2 call(s)": a plural; same length, so spans still fit
        found = count_claims(pt)
        for m in _RE_ACT_COUNT.finditer(pt):  # "cleared 3 completed items", "ordered 2 cotton t-shirts", "4 of them"
            if _MONEY_BEFORE.search(pt, 0, m.start()):
                continue  # "paid twenty-two pounds fifty for the groceries": the cents of an amount
            ends = [e.end() for e in _CLAUSE.finditer(pt, 0, m.start())]
            verb = _COUNT_ACT.search(lead := pt[ends[-1] if ends else 0 : m.start()])
            k = 1 if m[1] else 3
            if (
                verb
                and not _OTHERS_ACT.search(lead[: verb.start()])
                and not any(a <= m.start(k) < b for _, a, b, _ in found)
            ):
                found.append((int(m[k]), m.start(k), m.end(), False))
        for n, a, b, party in found:
            ends = [e.end() for e in _CLAUSE.finditer(pt, 0, a)]
            lead = pt[ends[-1] if ends else 0 : a]
            if _RE_COUNT_DENIED.search(lead):
                continue
            verb = _COUNT_ACT.search(lead)
            own = verb is not None and not _OTHERS_ACT.search(lead[: verb.start()])  # not "Maureen sent 1 text"
            acts = g.act_counts if g.act_counts is not None else g.did.counts
            pool = set(acts) if own else g.subject.counts | g.read.counts | g.did.counts
            noun = _COUNT_NOUN.match(pt, b) if b <= a + 4 else _LAST_WORD.search(pt, a, b)
            kind = count_kind(noun[1]) if noun else None
            if own and kind in g.kind_counts:  # "shared 2 photos": the photos the episode shared
                pool = set(g.kind_counts[kind])
            if own and re.search(r"\b(?:ways|shares)\b", pt[a:b], re.I):  # a split counts the user too
                people = g.kind_counts.get("person")
                pool = {x + 1 for x in people} if people else pool | {x + 1 for x in acts}
            if party and (g.did.parties or g.subject.parties):  # a party's size: the booking's
                pool = g.did.parties | g.subject.parties
            if n in pool:
                continue
            held = sorted(pool, key=lambda x: (abs(x - n), x))[:3]
            why = "it is what the episode did, which counts " + (", ".join(map(str, held)) or "nothing") if own else ""
            out.append(Ungrounded("count", pt[a:b], source, tuple(map(str, held)), why))
    if "period" in types and g.periods:
        for period, a, b in period_claims(t):
            part = clause(a).lower()
            named = [p for p, names in g.periods if any(n in part for n in names)]
            held = named or [p for p, _ in g.periods]
            if period not in held:
                why = f"the episode's change repeats {' / '.join(sorted(set(held)))}"
                out.append(Ungrounded("period", t[a:b], source, tuple(sorted(set(held))), why))
    if "period" in types and g.spans:
        for span, a, b in span_claims(t):
            if span not in g.spans:
                held = sorted(f"{('last', 'this', 'next')[o + 1] if -1 <= o <= 1 else o} {u}" for u, o in g.spans)
                why = f"the user and the episode's calls speak of {', '.join(held)}"
                out.append(Ungrounded("period", t[a:b], source, tuple(held), why))
    if "distance" in types and (held_km := g.distances):
        for said, km, exact_km, rough in distance_claims(t):
            if not g.holds("distance", (km, exact_km, rough)):
                near = tuple(f"{w:g} km" for w in sorted(held_km, key=lambda w: abs(w - km))[:3])
                out.append(Ungrounded("distance", said, source, near, "no record the episode saw is that far"))
    if "percent" in types:
        for n, a, b in percent_claims(pt):
            ends = [e.end() for e in _PART.finditer(pt, 0, a)]
            lead = pt[ends[-1] if ends else 0 : a]
            if _RE_COUNT_DENIED.search(lead):
                continue
            if _FROM_BEFORE.search(lead) and n in g.was.counts:
                continue  # where a change started ("brightness went from 60% up to 80%")
            # about the records its part names ("brightness 70%"), else anything the grounds hold
            anchors = g.anchors(lead, "percent")
            said = set(_TOKEN.findall(lead.lower()))
            best = max((len(x.tokens & said) for x in anchors), default=0)
            anchors = [x for x in anchors if len(x.tokens & said) == best]  # "ring volume": not media's
            changed = {x.rid for x in anchors if x.now and x.rid}
            if changed and not _PAST_CUE.search(lead):  # "brightness is now 30%": the changed record as it is
                anchors = [x for x in anchors if x.now or x.rid not in changed]
            pool = set().union(*(x.ev.counts for x in anchors)) if anchors else set()
            pool = pool or (g.subject.counts | g.read.counts | g.did.counts)
            if (
                not anchors
                and n in g.was.counts
                and n not in g.subject.counts | g.did.counts
                and not _PAST_CUE.search(lead)
            ):
                why = "only what the episode changed held it, before the change"  # "the lights are at 60%" after 45
                out.append(Ungrounded("percent", pt[a:b], source, (), why))
                continue
            if n not in pool:
                held = sorted(pool, key=lambda x: (abs(x - n), x))[:3]
                why = f"it is about {', '.join(dict.fromkeys(x.label for x in anchors))}" if anchors else ""
                out.append(Ungrounded("percent", pt[a:b], source, tuple(f"{x}%" for x in held), why))
    if "duration" in types and g.shifts:
        for m in _RE_SHIFT.finditer(t):  # "set your 07:15 alarm 20 minutes earlier" for a move of 15
            secs = next((c.value for c in claims(m[1], "duration", ctx) if isinstance(c.value, int)), None)
            if secs is not None and secs // 60 not in g.shifts:
                held = tuple(f"{x} min" for x in sorted(g.shifts)[:3])
                why = f"the episode moved it by {', '.join(held)}"
                out.append(Ungrounded("duration", m[0], source, held, why))
    if "duration" in types:
        for c in claims(text, "duration", ctx):
            if c.negated or not isinstance(c.value, (int, float)) or not 0 < c.value < 86400:
                continue
            span = t[c.start : c.end]
            minutes = c.value / 60
            rough = bool(ABOUT_BEFORE.search(t[max(0, c.start - 20) : c.start])) or bool(
                re.search(
                    r"\b(?:almost|nearly|just\s+(?:under|over)|over|under|less\s+than|more\s+than)\s+$",
                    t[max(0, c.start - 20) : c.start],
                    re.I,
                )
            )
            tol = max(5.0, 0.1 * minutes) if rough else 15.0 if not re.search(r"\bmin|\bm\b|:\d", span, re.I) else 1.0
            held_s = g.subject.seconds | g.did.seconds | g.read.seconds
            if held_s and minutes < 10 and re.search(r"\d\s*-?\s*(?:sec(?:ond)?s?|s)\b", span, re.I):
                tol_s = max(5.0, 0.1 * c.value) if rough else 1.0  # "a 41-second video": to the second
                if not any(abs(c.value - x) <= tol_s for x in held_s):
                    near_s = sorted(held_s, key=lambda x: abs(x - c.value))[:3]
                    out.append(Ungrounded("duration", span, source, tuple(f"{x} s" for x in near_s)))
                continue
            from_now = bool(
                re.search(
                    r"\bin\s+(?:about\s+|around\s+|roughly\s+|just\s+)?$", t[max(0, c.start - 20) : c.start], re.I
                )
                or re.match(r"\s+(?:from\s+now|away)\b", t[c.end :], re.I)  # "about 32 minutes from now"
            )
            pool = g.durations(from_now)
            lead = t[max(0, c.start - 60) : c.start].lower()  # "Yoga class: two hours", "'Gym' lasts an hour"
            named = [
                a
                for a in g.named
                if (a.ev.spans or a.ev.durations)
                and len(a.label) >= 3
                and a.label.lower() in lead
                and re.search(
                    rf"{re.escape(a.label.lower())}['\"\u2019\u201d]?\s*(?::|is|lasts|runs|takes)\s*(?:for\s+|about\s+)?$",
                    lead,
                )
            ]
            if (mode := _mode_near(t, c.start, c.end)) and (by_mode := g.mode_minutes.get(mode)):
                pool = set(by_mode)  # "15 minutes by bike": the bike's time, not the car's
                tol = min(tol, max(2.0, 0.1 * minutes))
            elif g.did.spans and _LASTS.search(t[max(0, c.start - 25) : c.start]) and not past(c.start):
                pool = set(g.did.spans)  # "It runs for an hour": what the episode set runs from start to end
            elif (
                g.did.spans
                and re.match(r"[\s-]*[\"'\u201c\u2018]?[A-Za-z]", t[c.end : c.end + 4])
                and not _GAP_AFTER.match(t, c.end)
                and _SPAN_ACT.search(t[max(b for b in bounds if b <= c.start) : c.start])
            ):  # "put a three-hour brunch in your calendar": the length of what it set
                pool = set(g.did.spans)
            elif _GAP_AFTER.match(t, c.end):  # "ten minutes before the earliest train"
                pool = pool | g.gaps
            elif named and not from_now and not rough:  # "(Yoga class: two hours)": that record's length
                pool = set().union(*(a.ev.spans | a.ev.durations for a in named))
            elif not from_now and (lengths := bracket_lengths(c.start)):  # "Market days (about 67 min)"
                pool = lengths
            if any(abs(minutes - x) <= tol for x in pool):
                continue
            near = sorted(pool, key=lambda x: abs(x - minutes))[:3]
            out.append(Ungrounded("duration", span, source, tuple(f"{x} min" for x in near)))
    if "name" in types and source == "answer" and g.subject_names is not None:
        for said, why in name_claims(text, g.world_names, g.subject_names, ctx.contacts):
            out.append(Ungrounded("name", said, source, (), why))
    if "commitment" in types and source != "answer" and g.subject_names is not None:
        for said in _commitments(text, g):
            why = "the user gave no such word and the episode did nothing of it"
            out.append(Ungrounded("commitment", said, source, (), why))
    if "place" in types:
        out.extend(Ungrounded("place", said, source, held, why) for said, held, why in _place_claims(text, g))
        out.extend(Ungrounded("place", said, source, held, why) for said, held, why in _address_slips(text, g))
    if "name" in types and g.subject_names is not None:
        purposes = [*_RE_PURPOSE.finditer(text)]
        if g.episode is not None and any("note" in c.arguments for c in g.episode.writes):
            purposes += _RE_PAID_FOR.finditer(text)  # "Paid Clive back \u00a318 for the pizza": the note set
        for purpose in purposes:
            what = purpose["what"].strip()  # "That was for the concert tickets": what the records acted on say
            if not _NOT_A_THING.search(what) and not held_by(what, g.subject_names.texts(skip=text), quoted=True):
                why = "nothing the episode acted on says so"
                out.append(Ungrounded("name", what, source, (), why))
    if "status" in types and (no := _RE_NO_CLASH.search(text)) is not None and g.episode:
        clashes = [
            x
            for c in g.episode.writes
            if isinstance(c.feedback.result, Mapping)
            for x in c.feedback.result.get("conflicts") or ()
        ]
        if clashes:  # "No clashes with anything else" where the create call reported one
            out.append(
                Ungrounded(
                    "status", no[0], source, tuple(map(str, clashes[:3])), "the episode's call reported a conflict"
                )
            )
    if "name" in types:  # "I gave the reason as 'damaged'" for "changed my mind"
        out.extend(Ungrounded("name", said, source, held, why) for said, held, why in _field_claims(text, g))
    if "status" in types:  # "tomorrow will be rainy" for a day of fog
        out.extend(Ungrounded("status", said, source, held, why) for said, held, why in _weather_claims(text, g, ctx))
    if "count" in types and g.named:  # "Morning run still has 4 songs" after one of 4 was removed
        out.extend(Ungrounded("count", said, source, held, why) for said, held, why in _content_counts(text, g))
    if "name" in types:  # "your DHL parcel with the hiking boots" for the UPS one
        out.extend(Ungrounded("name", said, source, held, why) for said, held, why in _sibling_swaps(text, g))
    if "name" in types and g.named:  # "On the Hardware store list: sunscreen, batteries"
        out.extend(Ungrounded("name", said, source, held, why) for said, held, why in _listed_claims(text, g))
    if "name" in types and source == "answer":  # "your blood type is AB negative" for the A negative saved
        out.extend(Ungrounded("name", said, source, held, why) for said, held, why in _echo_slips(text, g))
    if "person" in types:  # "Kana said: Hey, Maaya here ..." for Maaya's voicemail
        out.extend(Ungrounded("person", said, source, (), why) for said, why in _misquoted(text, g, ctx))
    if "status" in types and (vm := _RE_VOICEMAIL.search(text)) is not None and (why := _no_voicemail(vm, ctx)):
        out.append(Ungrounded("status", vm[0], source, (), why))
    if "status" in types:
        out.extend(Ungrounded("status", said, source, held, why) for said, held, why in _enum_claims(text, g))
    if "status" in types and g.episode is not None and (kinds := list(_RE_CALL_KIND.finditer(text))):
        held = _call_directions(r for r in g.episode.now if isinstance(r, Mapping))
        # the calls the episode read: one told in a clause of no act may be any of them
        seen = _call_directions(
            r for c in g.episode.calls if c.ok for r in itertools.islice(_id_records(c.feedback.result), 500)
        )
        for m in kinds:  # "Deleted your outgoing call" for an incoming one
            told = _CALL_DIRECTIONS[m[1].lower()]
            part = text[max((e.end() for e in _CLAUSE.finditer(text, 0, m.start())), default=0) : m.end()]
            if told in seen and not _COUNT_ACT.search(part):
                continue  # "Your last missed call was from Jamie", "his missed call is still there"
            if held and told not in held and not _PAST_CUE.search(text[max(0, m.start() - 20) : m.start()]):
                why = f"the call the episode acted on is {', '.join(sorted(held))}"
                out.append(Ungrounded("status", m[0], source, tuple(sorted(held)), why))
    if "size" in types and (found := list(RE_SIZE.finditer(text))):
        # where the episode set a size: the size it set; else a size the shop lists or the user said
        done, seen = g.sizes_set, g.sizes_seen
        said = {size_key(m[1]) for u in g.user_texts for m in RE_SIZE.finditer(u)}
        for m in found:
            key = size_key(m[1])
            if key in done or (not done and (key in said or not seen)):
                continue
            part = text[max((e.end() for e in _CLAUSE.finditer(text, 0, m.start())), default=0) : m.start()]
            if key in seen and not (done and _COUNT_ACT.search(part)):
                continue  # a size the shop lists, told as such ("size 44 is sold out")
            held = tuple(sorted(done or seen))
            why = f"the episode set size {', '.join(held)}" if done else f"the shop lists sizes {', '.join(held)}"
            out.append(Ungrounded("size", m[0], source, held, why))
    if "code" in types and g.code_sources is not None:
        cued = list(RE_CODE_TOLD.finditer(text))
        for m in cued:
            key = code_key(m[1])
            held, replaced = g.codes
            if key not in held:
                out.append(Ungrounded("code", m[1], source, (), "no booking, order or record holds that code"))
            elif key in replaced and not re.search(r"\b(?:old|previous|was|former)\b", text[: m.start()], re.I):
                out.append(Ungrounded("code", m[1], source, (), "the episode's change replaced that code"))
        for m in RE_DIGIT_CODE_TOLD.finditer(text):  # "the gate code, 4617" where memory says 4716
            runs, codes = g.digit_codes
            if codes and m[1] not in runs:
                held = tuple(sorted(codes)[:3])
                out.append(Ungrounded("code", m[0], source, held, f"the world holds the code {', '.join(held)}"))
        mine = _service_numbers(g.code_sources[1]) if RE_SERVICE_NUMBER.search(text) else set()
        for m in RE_SERVICE_NUMBER.finditer(text):  # "Booked AR 510" where the world has AR 509
            told = m[1] + m[2]
            if told in g.numbers:
                ends = [e.end() for e in _CLAUSE.finditer(text, 0, m.start())]
                cuts = [e.end() for e in _SUBCLAUSE.finditer(text, ends[-1] if ends else 0, m.start())]
                act = _BOOKED_LEAD.search(text[cuts[-1] if cuts else ends[-1] if ends else 0 : m.start()])
                if mine and told not in mine and act and not _NOT_THIS_ONE.search(act["rest"]):
                    held = tuple(f"{n[:2]} {n[2:]}" for n in sorted(mine)[:3])
                    why = f"what the episode booked is {', '.join(held)}; {m[0]} is another"
                    out.append(Ungrounded("code", m[0], source, held, why))
                continue
            near = sorted(n for n in g.numbers if n[:2] == m[1] and len(n) == len(told))
            if near:
                held = tuple(f"{n[:2]} {n[2:]}" for n in near[:3])
                out.append(Ungrounded("code", m[0], source, held, f"the world holds {', '.join(held)}, not {m[0]}"))
        changed = _codes_in(g.code_sources[1]) if source == "answer" and _RE_CODE_TOKEN.search(text) else set()
        for m in _RE_CODE_TOKEN.finditer(text):  # a code told bare ("(SP3-26)"): wrong where one held is a slip away
            key = code_key(m[0])
            lead = text[max(0, m.start() - 60) : m.start()]
            if changed and key not in changed and not _PAST_CUE.search(lead):
                same = sorted(h for h in changed if _shape(h) == _shape(key))
                if same:  # "Sent Yoko the gate code (CR6-12)" for the SP3-25 the message holds
                    why = f"what the episode wrote holds {same[0]}, not {m[0]}"
                    out.append(Ungrounded("code", m[0], source, tuple(same[:3]), why))
                    continue
            if any(c.start(1) <= m.start() < c.end(1) for c in cued) or key in g.codes[0]:
                continue
            near = sorted(
                h for h in g.codes[0] if len(h) == len(key) and sum(a != b for a, b in zip(h, key, strict=True)) <= 2
            )
            if near:
                out.append(Ungrounded("code", m[0], source, tuple(near[:3]), f"the world holds {near[0]}, not {m[0]}"))
    if "code" in types and g.code_sources is not None and (told_seats := list(RE_SEAT.finditer(text))):
        held, set_now = g.seats
        for m, seat in ((x, y.upper().replace(" ", "")) for x in told_seats for y in _RE_SEAT_CODE.findall(x[1])):
            # "Checked in: seat 19D" for the 19C it chose; "seats F5 and F7" for F5 and F6
            pool = set_now if set_now and not _PAST_CUE.search(text[max(0, m.start() - 40) : m.start()]) else held
            if pool and seat not in pool:
                why = (
                    f"{'the episode set' if pool is set_now else 'the world holds'} seats {', '.join(sorted(pool)[:3])}"
                )
                out.append(Ungrounded("code", m[0], source, tuple(sorted(pool)[:3]), why))
    if "date" in types and g.episode is not None:  # "every night of the week" for a Mon-Fri schedule
        for m in _RE_EVERY_DAYS.finditer(text):
            if not _RE_STATUS_DENIED.search(text[max(0, m.start() - 12) : m.start()]) and (
                bad := _schedule_days(m[0], g)
            ):
                out.append(Ungrounded("date", m[0], source, *bad))
    if "switch" in types:
        for said, held, why in check_switches(text, ctx):
            out.append(Ungrounded("switch", said, source, held, why))
    if "person" in types and ctx.contacts:
        wrong = _person_claims(text, g, ctx)
        if source == "answer":
            told = {said for said, _ in wrong}
            wrong += [(said, why) for said, why in _acted_people(text, g, ctx) if said not in told]
        out += [Ungrounded("person", said, source, (), why) for said, why in wrong]
    if "email" in types:
        for m in _RE_EMAIL.finditer(t):
            e = m.group()
            if e.lower().rstrip(".") not in g.every.emails:
                out.append(Ungrounded("email", e, source, tuple(sorted(g.every.emails))[:3]))
            elif _stale(g, "email", e.lower().rstrip(".")) and not past(m.start()):  # the old address as the new
                out.append(Ungrounded("email", e, source, tuple(sorted(g.did.emails))[:3], _STALE_WHY))
    if "phone" in types and sum(ch.isdigit() for ch in text) >= 7:
        region = phone_region(tuple(str(c.get("phone") or "") for c in itertools.islice(ctx.contacts, 20)))
        for a, b, kind in sc.spans:
            if kind != "phone":
                continue
            p = normal_phone(t[a:b], region, valid=True)
            if p is not None and p not in g.every.phones:
                out.append(Ungrounded("phone", t[a:b], source, tuple(sorted(g.every.phones))[:3]))
            elif p is not None and _stale(g, "phone", p) and not past(a):
                out.append(Ungrounded("phone", t[a:b], source, tuple(sorted(g.did.phones))[:3], _STALE_WHY))
            elif p is not None and (whose := _number_of_other(t, a, p, region, ctx)) is not None:
                out.append(Ungrounded("person", whose[0], source, (whose[1],), f"{t[a:b]} is {whose[1]}'s number"))
            elif (
                p is not None
                and source == "answer"
                and g.episode is not None
                and _DIALLED.search(t[max(b for b in bounds if b <= a) : a])
                and (used := _numbers_used(g.episode.writes, region))
                and p not in used
                and contact_ids(p, ctx.contacts) & g.addressed
            ):  # "texted Diana on her mobile (+44 7464...)" where the text went to her work line
                why = f"the episode's calls went to {', '.join(sorted(used)[:3])}"
                out.append(Ungrounded("phone", t[a:b], source, tuple(sorted(used)[:3]), why))
    return out


_DIALLED = re.compile(r"\b(?:texted|messaged|called|rang|phoned|sent|sms\w*|dialled|dialed)\b[^.;!?]*$", re.I)
"""A number told in a clause of texting or calling someone: the number the act used."""


def _numbers_used(writes: Sequence[Any], region: str) -> frozenset[str]:
    """The E.164 numbers the episode's successful writes sent to or called (``to``, ``number``,
    ``phone``, ``recipients`` arguments)."""
    out = set()
    for c in writes:
        for k in ("to", "number", "phone", "recipients"):
            for v in c.arguments.get(k) if isinstance(c.arguments.get(k), list) else [c.arguments.get(k)]:
                if isinstance(v, str) and (n := normal_phone(v, region)) is not None:
                    out.add(n)
    return frozenset(out)


_RE_NUMBER_OF = re.compile(
    r"((?:[A-Z][\w'\u2019-]+\s+){0,2}[A-Z][\w-]+)(?:['\u2019]s?\s+(?:(?:mobile|cell|phone|home|work|new)\s+)*number"
    r"(?:\s+(?:is|was|:))?|\s*(?::|\(|[-\u2013\u2014]|,|\s+(?:is\s+)?(?:on|at)))\s*$"
)
"""A contact named right before a number as its owner: "Christine's number is", "Laura Roman:",
"Ben (", "reach Ana on"."""


def _number_of_other(t: str, at: int, phone: str, region: str, ctx: Context) -> tuple[str, str] | None:
    """``(said, owner)`` where the number at ``at`` is one contact's and the text names another
    contact right before it as its owner ("Christine's number is +61 478..." for Benjamin's);
    None where it names none, names the owner, or the number is no single contact's."""
    owners = [c for c in ctx.contacts if any(normal_phone(n, region) == phone for n in numbers_of(c))]
    lead = t[max(0, at - 60) : at]
    m = _RE_NUMBER_OF.search(lead)
    if len(owners) != 1 or m is None or re.search(r"\b(?:to|for|with|from)\s+$", lead[: m.start(1)]):
        return None  # "texted it to Rebecca: +44...": the one it went to, not the number's owner
    from phoneenv.tasks.world import given_names

    said = m[1].split()
    owner = owners[0]
    for k in range(len(said)):  # "Put Edward": the longest tail that is a contact's name
        ids = contact_ids(" ".join(said[k:]), ctx.contacts)
        if ids:
            return None if str(owner.get("id")) in ids else (" ".join(said[k:]), str(owner.get("name")))
    # no contact so called: wrong where it is a person's name ("Laura Roman:" for Edward Roman's)
    names = [w for w in said if w.casefold() in given_names()]
    first = str(owner.get("name") or "").split()[:1]
    if not names or (first and len(names[0]) >= 3 and first[0].casefold().startswith(names[0].casefold())):
        return None  # no name, or the owner's by a short form ("Ben" for Benjamin)
    return " ".join(said[said.index(names[0]) :]), str(owner.get("name"))


_RE_COMMIT = re.compile(
    r"\b(?:I|we)(?:\s*['\u2019]ll|\s+will|\s+shall|\s+won['\u2019]t|\s+can['\u2019]t|\s+cannot|\s+can\s+not"
    r"|\s*['\u2019]m\s+going\s+to|\s+am\s+going\s+to|\s+are\s+going\s+to)\s+([^.!?;\n]+)",
    re.I,
)
_RE_PROPOSE = re.compile(r"\blet(?:['\u2019]s|\s+us)\s+([^.!?;\n]+)", re.I)
"""A proposal made in the user's name: "Let's go again next weekend"."""
_RE_ON_ME = re.compile(r"(?:^|(?<=[.!?;,\n]))\s*([^.!?;,\n]{1,40}?)\s+(?:is|are)\s+on\s+me\b|\bmy\s+treat\b", re.I)
"""An offer to pay in the user's name: "Dinner's on me afterwards", "Next pizza is on me", "my treat"."""
_OFFERED = re.compile(r"\bon\s+me\b|\btreat\b|\bpay\s+for\b|\bshout\b", re.I)
"""Words of a user who offered to pay (then an offer told is theirs)."""
_COMMIT_WORD = re.compile(r"[^\W\d_]{3,}")
_LIGHT_WORDS = frozenset(
    [
        "there",
        "here",
        "soon",
        "later",
        "back",
        "just",
        "also",
        "still",
        "make",
        "sure",
        "know",
        "let",
        "keep",
        "touch",
        "call",
        "text",
        "message",
        "get",
        "see",
        "then",
        "instead",
        "rather",
        "right",
        "away",
        "now",
        "today",
        "tonight",
        "tomorrow",
        "around",
        "about",
        "roughly",
        "approximately",
    ]
)


def _commitments(text: str, g: Grounds) -> list[str]:
    """The commitments and refusals ``text`` (a text the planner wrote to a person) makes in the
    user's name that neither the user's words nor the episode hold: a clause "I'll ...", "we
    will ...", "I can't ...", "I'm going to ..." with a content word (three letters or more, no
    stop word, no greeting) that no user text (goal, memory) and no subject string (what the
    episode read of the records it acted on, its writes) holds, this text aside. "I'll bring
    towels for both of us" added to a text about a swim fails; "I'll be 15 minutes late" for a
    user who said so passes. A proposal ("Let's ...") is read the same way, and an offer to pay
    ("Dinner's on me", "my treat") holds only where the user offered it."""
    out: list[str] = []
    if g.subject_names is None:
        return out
    held: str | None = None
    pt = plain(text)  # "twelve" is the user's "12", "thx" their "thanks"; "Dinner's" is "Dinner is"
    if not any(_OFFERED.search(u) for u in g.user_texts):
        out.extend(m.group().strip(" ,") for m in _RE_ON_ME.finditer(pt))  # an offer to pay nobody made
    for m in [*_RE_COMMIT.finditer(pt), *_RE_PROPOSE.finditer(pt)]:
        content = [
            w.lower()
            for w in _COMMIT_WORD.findall(m[1])
            if w.lower() not in STOPWORDS and w.lower() not in FRAMING and w.lower() not in _LIGHT_WORDS
        ]
        if not content:
            continue
        if held is None:
            # the user's words, what the episode acted on, and what it read (the attendees of the
            # event it passes on: "I'll be in Design sync (Hollie and Terry too)" tells, not promises)
            held = " ".join(
                [
                    *(words(u) for u in g.user_texts),
                    *g.subject_names.texts(skip=text),
                    *(words(x) for x in g.read_strings if x != text),
                ]
            )
        if any(not _word_held(w, held) for w in content):
            out.append(m.group().strip())
    return out


def _call_directions(records: Iterable[Mapping[str, Any]]) -> set[str]:
    """The directions ("in", "out", "missed") of the call log entries among ``records``."""
    return {
        str(r.get("direction")).lower()
        for r in records
        if r.get("direction") and ("duration_s" in r or str(r.get("id")).startswith("call"))
    }


def _word_held(word: str, held: str) -> bool:
    """Whether ``held`` (:func:`words` text) has ``word`` or a form of it (a plural, a verb in
    -s, -ed, -ing: its first letters but the last two or three)."""
    if f" {word} " in held:
        return True
    stem = word[: max(4, len(word) - 3)] if len(word) > 5 else word
    return re.search(rf" {re.escape(stem)}\w{{0,4}} ", held) is not None


def _values(ev: Evidence, type: str) -> list[Any]:
    return list({"time": ev.times, "date": ev.dates, "money": ev.money, "temperature": ev.temps}[type])


def _show(type: str, x: Any) -> str:
    if type == "money":
        return f"{x[0]:.2f} {x[1] if x[1] != BARE else ''}".strip()
    if type == "temperature":
        return f"{x[0]:g} °{x[1]}".rstrip(" °")
    return str(x)


def _nearest(type: str, value: Any, pool: Sequence[Any]) -> list[str]:
    def dist(x: Any) -> tuple[float, str]:
        return (_dist(x), str(x))  # ties broken by value: the same reason on every run

    def _dist(x: Any) -> float:
        if type == "time":
            return abs(_minutes(x) - _minutes(value))
        if type == "date":
            return abs((dt.date.fromisoformat(x) - dt.date.fromisoformat(value)).days)
        return abs(x[0] - value)

    return [_show(type, x) for x in sorted(set(pool), key=dist)[:3]]


def authored_texts(calls: Sequence[Any]) -> list[tuple[str, str]]:
    """(source, text) of every text the planner wrote in a successful call: the values of the
    :data:`AUTHORED_KEYS` arguments (``"messages.send body"``). ``finish`` answers are left to
    the caller (the root's is the answer; a sub-agent's goes to its parent, not to a person). A
    forwarded or quoted mail inside a text (:data:`_RE_FORWARDED`, "> " lines) is left out."""
    out = []
    for c in calls:
        if not c.ok or c.name in ("finish", "agent.delegate"):
            continue
        for k, v in c.arguments.items():
            if k in AUTHORED_KEYS and isinstance(v, str) and v.strip() and v != "***":
                own = _RE_QUOTED_LINE.sub("", _RE_FORWARDED.split(v, maxsplit=1)[0])
                if own.strip():
                    out.append((f"{c.name} {k}", own))
    return out


_RE_FORWARDED = re.compile(r"-{3,}\s*(?:Forwarded message|Original Message)\s*-{3,}", re.I)
_RE_QUOTED_LINE = re.compile(r"^>.*$", re.M)
"""A forwarded or quoted mail inside a text ("---------- Forwarded message ----------", "> ..."):
the other sender's words, carried, not told by the planner."""


def ungrounded(
    *,
    goal: str,
    answer: str | None,
    calls: Sequence[Any],
    changed: Sequence[Any],
    memory: Iterable[Any] = (),
    world: WorldGrounds | None = None,
    ctx: Context,
    exempt: Mapping[str, str] | None = None,
) -> list[Ungrounded]:
    """Every claim of the final ``answer`` and of the texts the planner wrote (see
    :func:`authored_texts`) that the evidence does not ground (see :func:`check_text`).

    Args:
        goal: the user's words.
        answer: the root ``finish`` answer (None: nothing told).
        calls: the episode's :class:`~phoneenv.tasks.verify.CallRecord` s, in order.
        changed: the episode's :class:`~phoneenv.state.Change` s (an update's old version is
            no subject: "moved to 19:00" for a booking moved from 19:00 is not grounded by it).
        memory: the fixtures' memory entries (any JSON).
        world: what the fixture records the planner could have read add (the tables of the
            apps it used), read once per task with :func:`world_grounds`.
        ctx: contacts (phone region) and the phone's clock.
        exempt: claim types not checked for this task, with the reason (``{"time": "..."}``).

    Returns:
        one :class:`Ungrounded` per claim, answer first, then the texts in call order.
    """
    types = tuple(t for t in GROUNDED_TYPES if t not in (exempt or {}))
    if not types:
        return []
    g, texts = grounds(goal=goal, calls=calls, changed=changed, memory=memory, world=world, ctx=ctx)
    return check_told(g, answer, texts, ctx, types)


def check_told(
    g: Grounds, answer: str | None, texts: Sequence[tuple[str, str]], ctx: Context, types: Sequence[str]
) -> list[Ungrounded]:
    """:func:`check_text` over the final ``answer`` (source ``"answer"``) and each of the
    ``texts`` the planner wrote (``(source, text)``), in that order."""
    told = [("answer", answer)] if answer else []
    return [u for source, text in (*told, *texts) for u in check_text(text, source, g, ctx, types)]
