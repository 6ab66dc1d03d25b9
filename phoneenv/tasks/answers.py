"""Typed answers: read the values a free-text answer asserts, and check them against a task.

An answer such as "You have three unread messages; Ana (+49 151 2345 6789) wrote at 14:05" asserts
one count (3), one person (Ana) and one time (14:05); the phone number is neither a count nor a
time. :func:`extract_claims` finds the *claims* of one type in a text, :func:`check_answer`
decides an :class:`~phoneenv.contract.AnswerCriterion`, and :func:`states_facts` serves the
``{"states": {...}}`` predicate operator (message bodies that must state a fact)::

    >>> from phoneenv.tasks.predicates import Context
    >>> ctx = Context(now="2026-11-29T09:00:00")
    >>> extract_claims("You have three unread messages", "number", ctx)
    [3.0]
    >>> extract_claims("Call +49 151 2345 6789 about the 2 tickets", "number", ctx)
    [2.0]
    >>> extract_claims("It moved to 4 pm, not 14:00", "time", ctx)
    ['16:00']
    >>> extract_claims("See you tomorrow", "date", ctx)
    ['2026-11-30']
    >>> extract_claims("an hour and a half", "duration", ctx)
    [5400]

Types and the normalised value of a claim:

=============  ===============================================================================
``number``     float (``"3,5"`` and ``"3.5"`` → 3.5; ``"1,250"`` and ``"1.250,00"`` → 1250.0;
               number words → digits); money amounts count, numbers inside dates, times,
               durations ("2 hours ago"), phone numbers, ids (``#4821``, ``AB123``,
               ``invoice 4821``) and ordinals (``3rd``) do not, except that a text with no
               other number is read by its ``#663``/``no. 663``
``money``      float amount (the currency, ISO code, is compared when the criterion names one:
               ``€``/``EUR``/``euros``, ``$``/``USD``/``dollars``, ``£``/``GBP``/``pounds``,
               ``¥``/``JPY``/``yen``, ``A$``/``AU$``/``AUD``; a bare ``$`` or "dollars" is AUD
               when the contacts' numbers are Australian, else USD); a text with no amount
               and currency is read by its bare numbers ("16,066 left"; those written with cents
               when some are: "3 payments, 36.32 so far")
``time``       ``"HH:MM"`` 24 h (``"3:15 PM"``, ``"15:15"``, ``"noon"``, ``"quarter past 3"``,
               an ISO datetime's time part)
``date``       ``"YYYY-MM-DD"`` (ISO, month names, ``D.M.YYYY``; ``today``, ``tomorrow``,
               weekdays, ``in 3 days``, ``on the 3rd`` resolved against ``Context.now``)
``duration``   int seconds (``"1 h 30 min"``, ``"90 minutes"``, ``"an hour and a half"``)
``contact``    frozenset of the contact ids one mention may denote (several: ambiguous)
``contacts``   same as ``contact``; the criterion compares the set of people named
``items``      str: the normalised list elements of the sentences that hold an expected item
``yes_no``     bool, clause by clause (a clause led by yes/no; else negation or "sold out" → False, "you do"... → True)
``text``       the normalised text (required phrases are searched in it)
=============  ===============================================================================

Semantics of a check. A value the text explicitly negates is not a claim: "not 14:00",
"isn't 3", "instead of 14:00", "rather than Ben", "no longer at 9:00", and for times and dates
the old value of a change ("moved from 14:00 to 16:00"). A range of times or dates ("08:30-09:30",
"from 08:30 to 09:30", "Monday to Wednesday") is one claim that either end satisfies. A
single-valued type passes only when the remaining claims,
deduplicated, are exactly the expected value: a hedge ("3 or 4", "14:00 or 16:00") fails, and so
does a contradicting claim beside the right one ("Not 3 — you have 5" fails for 3 and passes for
5). A value in a part of the text of its own (a sentence, a part after a semicolon, a bracket)
that holds no claim of the expected value, while another part does, and that opens with a
subject of its own rather than a pronoun for the answer's, a hedge or a correction, is another
fact, left to the grounded check ("Three new errands. Errands now has 4 open items." passes for
3; "Three new errands. Or maybe 4." and "... Actually 4." fail). The same value written twice ("at 16:00 (4 PM)") is one claim. ``contacts`` and ``items`` use
set semantics: the same set, order free; a missing, extra or ambiguous member fails. Numbers and
money compare within the criterion's ``tolerance``. With ``unit`` set on a number criterion
(``unit="message"``, or alternatives ``"message|text"``), only numbers followed within three
words by that word (singular or plural) count, with the numbers hedged with them ("3 or 4 messages"): "3 unread messages, 2 from
Ana and 1 from Ben" then claims 3; when no number carries the unit, every number counts.

When ``finish`` carries a typed ``value`` it is read by the same rules (``"4 PM"`` for a time,
``3`` for a number, ``["Ana", "Ben"]`` for contacts) and must be the expected value; the free text
must then not contradict it: when the text has claims of that type, they must be the expected
value too.

Libraries, chosen for being maintained, offline and small:

- ``text2num`` (``text_to_num.alpha2digit``): English number words to digits ("twenty-one" →
  21, "three point five" → 3.5); a compiled Rust core, no data files. "One" used as a
  pronoun ("no one", "the first one", "one of them") is kept as a word.
- ``phonenumbers`` (Google's libphonenumber port): ``PhoneNumberMatcher`` finds phone numbers in
  any national or international format, so their digits are never read as a count or a time.
- ``price-parser`` (Zyte): reads amounts with either decimal convention and thousands
  separators; used for money and for every number (three digits after a lone separator are
  thousands: "1.250" is 1250).
- ``dateparser``: values of month-name date phrases in their many spellings ("Monday, December
  7", "Dec. 7th", "7 of December 2026") with ``RELATIVE_BASE`` at the phone's clock. Its
  ``search_dates`` is not used to *find* dates (it reads stray numbers and words such as "may"
  as dates); spans are found by the patterns here and only their value is asked of dateparser.
  The closed set of relative phrases ("tomorrow", "next Friday", "in 3 days") is resolved here
  with the same results as dateparser's PREFER_DATES_FROM="future" at a hundredth of the cost
  (dateparser takes ~20 ms a phrase), and "on the 3rd" too (dateparser reads it as March). Month-name dates without a year take the clock's year;
  weekdays and "the Nth" take the next such day (today counts for "the Nth", not for weekdays).

Each time span with no am/pm and an hour of 1–12 written as "quarter past 3", "3 o'clock" or
"at 3" (an hour alone after "at", "by"...) may denote the morning or the afternoon: it matches
either. Numeric dates ``D.M.YYYY`` and ``D/M/YYYY`` are read
day-first unless the first part is above 12 only in the second position (``11/30/2026`` is
month-first).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from phoneenv.tasks.identity import ContactBook, contact_ids, mentioned_contacts
from phoneenv.tasks.predicates import Context, norm, register_operator, says, searches, worded_numbers

if TYPE_CHECKING:
    from phoneenv.contract import AnswerCriterion

__all__ = [
    "ANSWER_TYPES",
    "Claim",
    "call_judge",
    "check_answer",
    "claims",
    "currencies_named",
    "extract_claims",
    "read_value",
    "states_facts",
]

ANSWER_TYPES = ("number", "money", "time", "date", "duration", "contact", "contacts", "items", "yes_no", "text")
"""The answer types :func:`extract_claims` reads."""

Judge = Callable[[str, str | None, Any], tuple[bool, str] | bool]
"""An LLM judge: ``judge(rubric, answer_text, answer_value)`` returns passed, or (passed, reason)."""


@dataclass(frozen=True)
class Claim:
    """One value a text asserts: ``type``, normalised ``value``, its span ``start``–``end`` in
    the (number-word converted) text, ``negated`` when the text denies it ("not 14:00"),
    ``unit`` (numbers: the words after it; money: the ISO currency) and ``alts`` (other
    values an ambiguous span may denote, e.g. 15:15 for "quarter past 3"). A range ("16:00-17:00")
    is one claim matching either end: ``alts`` holds the start's other readings and then the
    far end's, ``range_end`` the far end's readings alone (empty for a single value)."""

    type: str
    value: Any
    start: int = 0
    end: int = 0
    negated: bool = False
    unit: str = ""
    alts: tuple[Any, ...] = ()
    range_end: tuple[Any, ...] = ()

    def ends(self) -> tuple[Claim, Claim] | None:
        """A range's two ends as single claims (start, far end); ``None`` for a single value."""
        if not self.range_end:
            return None
        first = Claim(
            self.type, self.value, self.start, self.end, self.negated, self.unit, self.alts[: -len(self.range_end)]
        )
        last = Claim(self.type, self.range_end[0], self.start, self.end, self.negated, self.unit, self.range_end[1:])
        return first, last


# --------------------------------------------------------------------------- text preparation

_KEEP_ONE = re.compile(
    r"\bthe\s+only\s+one\b|\b(?:no|some|any|every|the|this|that|which|each|first|last|next|other|another|latest|newest|oldest"
    r"|new|old|right|wrong|same|little|big)\s+one\b|\bone\s+(?:of|another)\b|\b(?:someone|anyone|everyone|ones"
    r"|one's|oneself)\b",
    re.I,
)
"""Where "one" is a pronoun ("the first one", "one of them", "the only one"), not a count: kept
as a word ("only one message" is a count)."""
_A_SINGLE = re.compile(r"\ba single\b", re.I)
_NUMBER_WORD = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen"
    r"|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred"
)
_RE_NUMBER_ADJ = re.compile(
    rf"\b((?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)-)?(?:{_NUMBER_WORD}))-(?=(?:second|minute|min|hour"
    r"|hr|day|night|week|month|year|person|people|seat|ticket|room|bedroom|course|piece|pack|item|dollar|euro|pound"
    r"|star|page|track|episode|stop|mile|kilometre|kilometer|km|degree)s?\b)",
    re.I,
)
"""A number word joined to its noun as an adjective ("a three-hour drive", "a twenty-five-minute
walk", "a two-night stay"): read as the number and the noun, as "3 hour" is."""


def _words_to_digits(text: str) -> str:
    from text_to_num import alpha2digit

    text = worded_numbers(_A_SINGLE.sub("1", text))  # "a single unread text"; "six-twenty in the evening"
    text = _RE_NUMBER_ADJ.sub(r"\1 ", text)  # "a three-hour drive": "a three hour drive"
    out, last = [], 0
    for m in _KEEP_ONE.finditer(text):
        out.append(alpha2digit(text[last : m.start()], "en", threshold=0) if m.start() > last else "")
        out.append(m.group())
        last = m.end()
    out.append(alpha2digit(text[last:], "en", threshold=0) if last < len(text) else "")
    text = _RE_AND_A_HALF.sub(r"\1 \3s and a \2", "".join(out))  # "2 and a half hours": "2 hours and a half"
    return _RE_SPOKEN_PRICE.sub(r"\1.\2 \3", text)  # "forty-nine ninety-nine euros": "49.99 euros"


_RE_SPOKEN_PRICE = re.compile(r"(?<![\d.,:])\b(\d{1,4}) ([1-9]\d) ((?:euro|dollar|pound|franc|buck|quid)s?)\b", re.I)
"""A price spoken as two numbers and its currency ("forty-nine ninety-nine euros", read "49 99
euros"): the units and the cents."""
_RE_AND_A_HALF = re.compile(r"\b(\d+)\s+and\s+a\s+(half|quarter)\s+(second|minute|hour|day|week|month|year)s?\b", re.I)


_NUM = r"\d{1,3}(?:[,.\u00a0\u202f]\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?"
_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
MONTH_NAMES = tuple(k for k in _MONTHS if len(k) > 3 or k == "may")
"""The months' names that read as a month alone (in full, and "june", "july", "sept"; not "jan",
"mar", "dec", which are also names and words)."""
_RE_MONTH_NAME = re.compile(r"\b(" + "|".join(sorted(MONTH_NAMES, key=len, reverse=True)) + r")\b(?!\s*\d)", re.I)
"""A month named in full without a day after it ("September birthdays"): what a bare "on the
12th" later in the sentence is of."""
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEEKDAY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|rsday|urday|sday)?"
_ORD = r"(?:st|nd|rd|th)"

_RE_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://\S+")
_RE_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{1,2}):(\d{2})(?::\d{2}(?:\.\d+)?)?)?\b")
_RE_MONTH_DATE = re.compile(
    rf"\b(?:{WEEKDAY},?\s+)?(?:(?:the\s+)?\d{{1,2}}{_ORD}?\s+(?:of\s+)?{_MONTH}|{_MONTH}\s+\d{{1,2}}{_ORD}?(?!\d|:))"
    rf"(?:,?\s+\d{{4}})?\b",
    re.I,
)
_COUNTED_MONTH = re.compile(rf"\d{{1,2}}\s+{_MONTH}", re.I)
_PLURAL_NEXT = re.compile(r"\s+([a-z]{3,}s)\b")
_NOT_PLURAL = frozenset(
    ["was", "is", "has", "this", "as", "plus", "always", "perhaps", "unless", "its", "thus", "his", "hers", "yes"]
)
"""A bare "<number> <Month>" followed by a plural noun counts things of that month (checked as a
count), not a date; a word in -s that is no plural noun ("3 November was", "as", "this") or a
word that leads a date before it ("on 2 September leaves") keeps it a date."""
_RE_NUM_DATE = re.compile(r"\b(\d{1,2})([./])(\d{1,2})\2(\d{4})\b")
_RE_SHORT_DATE = re.compile(r"(?<![\d/.,])(\d{1,2})/(\d{1,2})(?![\d/])")
"""A numeric date without a year ("9/11"): month first in a US world, day first elsewhere; read
only after a word that introduces a date ("on 9/11", "moved to 9/11", "Monday 9/11"), so "3/4
of them" stays a fraction."""
_DATE_LEAD = re.compile(rf"(?:\b(?:on|to|for|until|till|by|from|before|after)|{WEEKDAY}),?\s*\(?$", re.I)
_DAY_ABBR = r"(?<![\w'’])(?-i:Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)\b\.?"
_DAY_LEAD = "|".join(rf"(?<=\b{w}\s)" for w in ("on", "to", "by", "until", "till", "from", "before", "after"))
_RE_REL_DATE = re.compile(
    rf"\b(?:the day after tomorrow|the day before yesterday|today|tonight|last night|tomorrow|yesterday"
    rf"|in \d+ (?:days?|weeks?)|(?:next|this|last|coming)\s+week|(?:(?:next|this|last|coming)\s+)?(?:{'|'.join(WEEKDAYS)}))\b"
    rf"|\b(?:next|this|last|coming)\s+{_DAY_ABBR}|(?:{_DAY_LEAD}){_DAY_ABBR}|(?<!\bthe\s)(?<![\w'’]){_DAY_ABBR}"
    r"(?=\s*(?:[,;)!?\d\u2013-]|$|(?<=\.)\s|(?:at|am|pm|a\.m|p\.m|morning|afternoon|evening|night|noon|midday|to"
    r"|through|thru|till|until)\b))",
    re.I,
)
"""A day told relative to the clock: "tomorrow", "in 3 days", "next week", "this Friday", and a
weekday's abbreviation where it reads as a day ("on Tue.", "Thurs at 5", "Sat, 12:00"; not "sat
down" or "the Sun")."""


def _full_weekday(phrase: str) -> str:
    """``phrase`` (lower case) with a weekday's abbreviation written out: "next thurs." -> "next thursday"."""
    words = phrase.rstrip(".").split()
    day = next((w for w in WEEKDAYS if words and w.startswith(words[-1][:3])), None) if words else None
    return " ".join([*words[:-1], day]) if day and len(words[-1]) < len(day) else phrase


_RE_NTH = re.compile(rf"\bon the (\d{{1,2}}){_ORD}\b", re.I)
_RE_AMPM = re.compile(r"\b(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?\s?m\b\.?", re.I)  # "4 pm", "12.16pm"
_RE_DOT_CLOCK = re.compile(
    r"(?:(\b(?:at|by|around|about|from|until|till|before|after)\s+)(?=\d{1,2}\.\d{2}(?!\d|[.,]\d)(?!\s*(?:[€$£¥]|(?:eur|usd|gbp|aud|jpy|chf|cad|yen|euros?|dollars?|pounds?)\b)))|(?=\d{1,2}\.\d{2}\s*[ap]\.?\s?m\b))"
    r"(?<![\d.,])(\d{1,2})\.(\d{2})(?!\d|[.,]\d)(?:\s*([ap])\.?\s?m\b\.?)?",
    re.I,
)
"""A time written with a dot, where it reads as one: after "at", "by", "around"... ("arrives at
8.28", not followed by a currency) or before am/pm ("8.28 pm")."""

_DAY_PART = r"in the (?:morning|afternoon|evening)|at night"
"""A part of the day after a time ("6 in the morning", "4:15 in the afternoon", "11 at night")."""
_RE_CLOCK = re.compile(
    rf"(?<![\d:.,])(\d{{1,2}})[:h](\d{{2}})(?::\d{{2}})?(?!\d|:\d)(?:\s*([ap])\.?\s?m\b\.?|\s+({_DAY_PART})\b)?", re.I
)
_RE_HOUR_PART = re.compile(rf"(?<![\d:.,])\b(\d{{1,2}})(?:\s+o'?clock)?\s+({_DAY_PART})\b", re.I)
"""An hour alone with its part of the day ("6 in the morning", "11 at night")."""
_RE_WORD_TIME = re.compile(
    r"\b(?:(?:a\s+)?(quarter|half|(?:30|[12]?\d)(?=\s+(?:minutes?\s+)?(?:past|to)\s+(?:\d|midnight|noon|midday)))\s+(?:minutes?\s+)?(past|to)\s+"
    r"(1[0-2]|0?[1-9]|midnight|noon|midday)(?!\d|[.,]\d|\s*(?:°|degrees?\b|%|[-–]\s*\d))"
    r"|(\d{1,2})\s+o'?clock|(noon|midday|midnight))\b"
    r"(?:\s*(?:in the\s+)?(morning|afternoon|evening|at night|[ap]\.?\s?m\b\.?))?",
    re.I,
)
_RE_HALF_HOUR = re.compile(
    rf"\bhalf\s+(1[0-2]|[1-9])(?![\d:.,]|\s*(?:°|degrees?\b|%|[-–]\s*\d|past\b|to\b|of\b|an?\b))"
    rf"(?:\s*({_DAY_PART}|tonight|this (?:morning|afternoon|evening)|[ap]\.?\s?m\b\.?))?",
    re.I,
)
"""A half hour as British English says it: "half seven" is 7:30 ("half past seven"), in the
morning or the evening unless a part of the day or am/pm says which."""
_RE_AT_HOUR = re.compile(
    r"\b(?:at|by|around|about|until|till|before|after)\s+(\d{1,2})(?![.,]\d)"
    r"(?!\s+and\s+a\s+half\s+(?:°|degrees?|percent|%|km|kilomet|miles?|kg|kilos?|litres?|liters?)\b)"
    r"(?:\s+(tonight|this (?:morning|afternoon|evening)|in the (?:morning|afternoon|evening)|at night))?"
    r"(?=\s*(?:$|[.,;:!?)\-–—])|\s+(?:today|tomorrow|on|and|sharp|then|with|for|please|so|but|if|as|or)\b)",
    re.I,
)
"""An hour alone after "at", "by"... ("gym at seven", "at 7 tonight", "back by 5."), where the
phrase ends there or a word that cannot be a unit follows ("at 7 people", "at twenty-one and a
half degrees" is no time). Without a
part of the day, an hour of 1-12 matches either half of the day, as "7 o'clock" does. Only time
criteria read it: the digits stay a number too ("Sydney is at 24, warmer")."""
_WARMTH_BEFORE = re.compile(
    r"\b(?:heating|heater|thermostat|temperature|radiator|air\s*con|AC|oven|fridge|freezer)\b"
    r"(?:['\u2019]s|\s+(?:is|was|set|now|still|back|down|up|turned|raised|lowered|stays?)){0,3}\s*(?:\w+\s+)?$",
    re.I,
)
"""What sets a temperature before "at <number>" in its clause ("the heating's at 18", "thermostat
now at 20"): the number is no hour."""
_DUR_UNITS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "wk": 604800,
    "week": 604800,
    "weeks": 604800,
}
_DUR_WORD = r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|wk)"
_DUR_UNIT = r"(?:seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|wk)"
_DUR_PART = rf"(?:(?:(?:{_NUM})(?:\s*|-)|\ban?\s+){_DUR_WORD}|(?<![\w.,])\d+(?:[smhd]|\s+[hs]))\b(?:\s+and\s+a\s+(?:half|quarter))?"
"""One part of a duration: a number and a unit ("20 minutes", "2hrs", "a day", "4 h"); a one-letter
unit other than "h" and "s" only glued to its digits ("15m": "800 m" is a distance; "42 s" is
seconds)."""
_FIXED_DURATION = r"half an? hour|(?:a|one|three|3)[\s-]quarters? of an hour|half a (?:minute|day)"
"""Durations said as a fraction of a unit ("half an hour", "three quarters of an hour")."""
_RE_DURATION = re.compile(
    rf"(?:\b(?:{_FIXED_DURATION})\b|(?<![\w.,]){_DUR_PART}(?:,?\s*(?:and\s+)?{_DUR_PART})*)"
    r"(?:\s+(ago|earlier|later|from now))?",
    re.I,
)
_CURRENCY = {
    "€": "EUR",
    "eur": "EUR",
    "euro": "EUR",
    "euros": "EUR",
    "$": "USD",
    "usd": "USD",
    "dollar": "USD",
    "dollars": "USD",
    "£": "GBP",
    "gbp": "GBP",
    "pound": "GBP",
    "pounds": "GBP",
    "chf": "CHF",
    "francs": "CHF",
    "¥": "JPY",
    "jpy": "JPY",
    "yen": "JPY",
    "a$": "AUD",
    "au$": "AUD",
    "aud": "AUD",
    "australian dollar": "AUD",
    "australian dollars": "AUD",
    "us dollar": "USD",
    "us dollars": "USD",
    "american dollars": "USD",
    "swiss francs": "CHF",
    "japanese yen": "JPY",
    "british pounds": "GBP",
}
_NAMED = r"(?:australian\s+|us\s+|american\s+)?dollars?|(?:british\s+)?pounds?|(?:swiss\s+)?francs|(?:japanese\s+)?yen"
"""Currencies in words, with the country that tells which dollar ("42 Australian dollars")."""


def _iso_codes() -> str:
    from price_parser._currencies import CURRENCY_CODES

    words = {"ALL", "TOP", "CUP", "MOP", "PEN", "SOS", "BOB", "BAM", "TRY", "MAD", "GEL", "AFL", "FOK", "RON"}
    return "|".join(sorted({c for c in CURRENCY_CODES if re.fullmatch(r"[A-Z]{3}", c)} - words))


_ISO = rf"(?-i:{_iso_codes()})"
"""Any other ISO 4217 code, in capitals only ("4298 CNY", "CAD 12"; price-parser's list, less the
codes that are English words: "ALL", "TOP")."""
_CUR = rf"(?:€|\b(?:AU?)?\$|\$|£|¥|\b(?:EUR|USD|GBP|CHF|JPY|AUD)\b|\b{_ISO}\b)"
_CUR_AFTER = rf"(?:€|\$|£|¥|(?:EUR|USD|GBP|CHF|JPY|AUD|euros?|{_NAMED})\b|{_ISO}\b)"
_RE_CUR_TOKEN = re.compile(rf"\bAU?\$|€|\$|£|¥|\b(?:EUR|USD|GBP|CHF|JPY|AUD|euros?|{_NAMED})\b|\b{_ISO}\b", re.I)


def currencies_named(text: str) -> set[str]:
    """The ISO 4217 codes of the currencies ``text`` names, by code, sign or word ("in euros",
    "$", "AUD"): a dollar sign is USD and AUD, since only the world's region tells which."""
    out: set[str] = set()
    for m in _RE_CUR_TOKEN.finditer(text or ""):
        tok = " ".join(m.group().lower().split())
        out.update(("USD", "AUD") if tok == "$" else (_CURRENCY.get(tok, tok.upper()),))
    return out


_MINOR = (
    r"(?:\s*,?\s+(?:and\s+)?(?P<minor>\d{1,2})(?:\s*(?:cents?|pence|p)\b|(?!\w|[.,]\d|\s*(?:[\d%$€£¥]|(?:people|persons"
    r"|guests|items?|ways?|of|x|times|nights?|days?|hours?|minutes?|mins?|percent|each|per|apiece"
    r"|(?!this\b|thus\b|plus\b|less\b)[a-z]{3,}s)\b)))"
    r"|(?:\s+and)?\s+(?P<cents>\d{1,2})\s*(?:cents?|pence|p)\b)"
)
"""The cents after whole units in words ("16 dollars 50", "36 dollars and 32 cents", "$5 and 20
cents", "48 Australian dollars 57 in all"): 1-2 digits, then "cents"/"pence" or anything but a
count's noun or another number ("5 dollars 3 people" keeps 3 a number)."""
_RE_MONEY = re.compile(
    rf"{_CUR}\s?-?(?P<whole>\d+)(?![\d.,]\d)(?:(?:\s+and)?\s+(?P<cents_after_sign>\d{{1,2}})\s*(?:cents?|pence|p)\b)"
    rf"|(?<![\w.,])(?P<whole_words>\d+)(?![\d.,]\d)\s?(?:euros?|(?:australian\s+|us\s+|american\s+)?dollars?"
    rf"|(?:british\s+)?pounds?|(?:swiss\s+)?francs)\b{_MINOR}"
    rf"|{_CUR}\s?-?(?:{_NUM})|(?<![\w.,])(?:{_NUM})\s?{_CUR_AFTER}"
    r"|(?<![\w.,])(?P<only_cents>\d{1,2})\s?(?:cents?|pence)\b",
    re.I,
)
_RE_ID = re.compile(
    r"#\s?\d+|\b(?:no\.|nr\.?|id|invoice|order|ref(?:erence)?|code|pin|room|flight|ticket|booking|account)"
    r"(?:\s+(?:no\.|number|nr\.?))?\s*[#:]?\s*[A-Z]*\d[\w-]*"
    r"|\b[A-Za-z]+\d[\w-]*|\b\d+[A-Za-z]+\d[\w-]*",
    re.I,
)
_RE_ORDINAL = re.compile(rf"\b\d+{_ORD}\b", re.I)
_RE_NUMBER = re.compile(rf"(?<![\w.,]){'-?'}(?:{_NUM})(?![\w]|[.,]\d)")
_RE_ZERO = re.compile(r"\b(?:none|zero|nothing|no(?!\s+(?:one|longer|more|,|\.))(?=\s+[a-z]))\b", re.I)
_NEG_BEFORE = re.compile(
    r"(?:\bnot|n't|\binstead of|\brather than|\bno longer|\bnot at|\bnot on)\s+(?:(?:at|on|from|the|a|an|with|to|by|in|about|around)\s+)?$",
    re.I,
)
_NEG_VERB_BEFORE = re.compile(
    r"(?:\bnot|n't|n’t|\bnever)\s+(?!(?:forget|worry|miss|hesitate|wait|mind|need|be\s+late)\b)"
    r"(?:(?!(?:anything|any|much|plans|else)\b)[\w'’]+\s+){1,2}(?:at|on|by)\s+$",
    re.I,
)
"""Before a time or date: a negated verb in its clause, one or two words back ("won't get in at
21:55", "isn't arriving on Friday"), not an imperative that keeps the time ("Don't forget dinner
at 8", "don't miss the 8:15"), nor a negated quantity ("You don't have anything on Friday");
"not ... until 21:55" affirms it and is not matched."""
_FROM_TO_BEFORE = re.compile(r"\bfrom\s+(?:(?:at|on|the)\s+)?$", re.I)
_FROM_TO_AFTER = re.compile(r"^\s*(?:to|until|till|→|->)\s", re.I)
_HEDGE_LINK = re.compile(
    r"^\s*[,(]?\s*(?:or|maybe|perhaps|possibly|to|-|–|/)\s*(?:maybe\s+|perhaps\s+|possibly\s+)?$", re.I
)


def _number_value(s: str) -> float | None:
    from price_parser import Price

    s = s.replace("\u00a0", ",").replace("\u202f", ",")
    neg = s.lstrip().startswith("-")
    amount = Price.fromstring(s.lstrip("-")).amount_float
    if amount is None:
        return None
    return -amount if neg else amount


# --------------------------------------------------------------------------- span scanning


@dataclass
class _Scan:
    text: str
    spans: list[tuple[int, int, str]]
    claims: list[Claim]

    def free(self, a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e, _ in self.spans)

    def take(self, a: int, b: int, kind: str) -> bool:
        if not self.free(a, b):
            return False
        self.spans.append((a, b, kind))
        return True

    def claim(self, type: str, value: Any, a: int, b: int, unit: str = "", alts: tuple[Any, ...] = ()) -> None:
        self.claims.append(Claim(type, value, a, b, _negated(self.text, a, b, type), unit, alts))


# A value in another role than the answer's, said beside it as context whatever the question:
# "$36.32 out of a $200 budget", "warmer than Tokyo (16)", "a limit of 30".
_CONTEXT_BEFORE = re.compile(
    r"(?:\bout of|\bbudget(?:ed)?|\blimit|\bthan|\bcompared (?:to|with))\s+"
    r"(?:(?:at|by|around|about|of|is|a|an|the|your|my|on)\s+)*$"
    r"|(?:\bthan|\bcompared (?:to|with))\s+(?:(?:at|by|around|about|of|is|a|an|the|your|my|on)\s+)*[\w'’-]+\s*\(\s*$",
    re.I,
)
"""Before a value: context in another role ("out of a $200 budget", "a limit of 50", "cheaper
than Phone (£38.61)"), not a claim of its own; a name with such a word in it ("Budget review
(14:00)") is no such context."""


def _negated(text: str, a: int, b: int, type: str) -> bool:
    """Whether the value at ``a``-``b`` is not claimed: denied ("not 14:00"; a time or date also
    after a negated verb, "won't get in at 21:55"), the old value of a change ("moved from 14:00
    to 16:00"), or context in another role ("out of a $200 budget", "more than 5")."""
    before = text[max(0, a - 40) : a]
    if _NEG_BEFORE.search(before) or _CONTEXT_BEFORE.search(before):
        return True
    if type not in ("time", "date"):
        return False
    return bool(_NEG_VERB_BEFORE.search(before)) or bool(
        _FROM_TO_BEFORE.search(before) and _FROM_TO_AFTER.match(text[b : b + 8])
    )


def _now(ctx: Context) -> dt.datetime | None:
    if not ctx.now:
        return None
    try:
        return dt.datetime.fromisoformat(str(ctx.now)[:19])
    except ValueError:
        return None


def _part_hm(h: int, m: int, part: str) -> str | None:
    """``h:m`` read with a part of the day (``"morning"``, ``"in the afternoon"``, ``"at night"``,
    ``"this evening"``, ``"tonight"``): a 12-hour clock in that half of the day ("2 at night" is
    02:00, "11 at night" 23:00); an hour past 12 stays as written ("19:30 in the evening")."""
    part = part.lower()
    if h > 12:
        return _hm(h, m, None)
    if "morning" in part:
        return _hm(h or 12, m, "a")
    if "night" in part and (h < 4 or h == 12):
        return _hm(h or 12, m, "a")
    return _hm(h or 12, m, "p")


def _hm(h: int, m: int, ap: str | None) -> str | None:
    if ap:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if ap.lower().startswith("p") else 0)
    if not (0 <= h < 24 and 0 <= m < 60):
        return None
    return f"{h:02d}:{m:02d}"


_REL_DAYS = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1, "the day after tomorrow": 2}
_REL_DAYS["the day before yesterday"] = -2
_REL_DAYS["last night"] = -1


def _nth_of_month(today: dt.date, months: int, day: int) -> dt.date | None:
    """Day ``day`` of the month ``months`` after ``today``'s (None where that month has no such day)."""
    y, mo = divmod(today.year * 12 + today.month - 1 + months, 12)
    try:
        return dt.date(y, mo + 1, day)
    except ValueError:
        return None


def _relative_date(phrase: str, today: dt.date) -> str | None:
    """``today``/``tomorrow``/..., ``in N days|weeks``, ``[next|this|coming|last] <weekday>``
    (the next such day after today; ``last``: the one before), ``next|this|last week`` (today ± 7
    days, this week: today). Same results as dateparser with PREFER_DATES_FROM="future", without
    its cost (~20 ms a phrase)."""
    phrase = " ".join(phrase.split())
    if phrase in _REL_DAYS:
        return (today + dt.timedelta(days=_REL_DAYS[phrase])).isoformat()
    if m := re.fullmatch(r"in (\d+) (day|week)s?", phrase):
        n = int(m[1]) * (7 if m[2] == "week" else 1)
        return (today + dt.timedelta(days=n)).isoformat() if n < 100000 else None
    if m := re.fullmatch(r"(next|this|last|coming) week", phrase):
        return (today + dt.timedelta(days={"next": 7, "coming": 7, "this": 0, "last": -7}[m[1]])).isoformat()
    words = phrase.split()
    day = next((i for i, w in enumerate(WEEKDAYS) if w.startswith(words[-1][:3])), None)
    if day is None:
        return None
    if words[0] == "last":
        back = (today.weekday() - day) % 7 or 7
        return (today - dt.timedelta(days=back)).isoformat()
    ahead = (day - today.weekday()) % 7 or 7
    return (today + dt.timedelta(days=ahead)).isoformat()


@functools.lru_cache(maxsize=1024)
def _dateparse(phrase: str, now: dt.datetime | None, prefer: str) -> str | None:
    import dateparser

    settings: dict[str, Any] = {"PREFER_DATES_FROM": prefer, "RETURN_AS_TIMEZONE_AWARE": False}
    if now is not None:
        settings["RELATIVE_BASE"] = now
    try:
        got = dateparser.parse(phrase, languages=["en"], settings=settings)
    except (ValueError, OverflowError, TypeError):
        return None
    return got.date().isoformat() if got is not None else None


def _scan_dates_times(sc: _Scan, now: dt.datetime | None, region: str = "") -> None:
    t = sc.text
    for m in _RE_ISO.finditer(t):
        if not sc.take(m.start(), m.end(), "date"):
            continue
        try:
            d = dt.date(int(m[1]), int(m[2]), int(m[3])).isoformat()
        except ValueError:
            continue
        sc.claim("date", d, m.start(), m.end())
        if m[4] is not None and (hm := _hm(int(m[4]), int(m[5]), None)):
            sc.claim("time", hm, m.start(), m.end())
    for m in _RE_MONTH_DATE.finditer(t):
        if (
            _COUNTED_MONTH.fullmatch(m.group())
            and (nxt := _PLURAL_NEXT.match(t, m.end()))
            and nxt[1].lower() not in _NOT_PLURAL
            and not _DATE_LEAD.search(t[max(0, m.start() - 12) : m.start()])
        ):
            continue  # "2 September birthdays", "3 November bills": a count of things of a month
        if not sc.take(m.start(), m.end(), "date"):
            continue
        phrase = re.sub(rf"\b(\d{{1,2}}){_ORD}\b", r"\1", m.group(), flags=re.I)
        phrase = re.sub(r"^the\s+|\s+of\s+", " ", phrase, flags=re.I).strip()
        has_year = re.search(r"\d{4}", phrase) is not None
        if not has_year and now is None:
            continue
        base = now.replace(month=1, day=1) if (now is not None and not has_year) else now
        d = _dateparse(phrase, base, "future" if not has_year else "current_period")
        if d is not None:
            sc.claim("date", d, m.start(), m.end())
    for m in _RE_NUM_DATE.finditer(t):
        if not sc.take(m.start(), m.end(), "date"):
            continue
        a, b, y = int(m[1]), int(m[3]), int(m[4])
        day, month = (b, a) if (b > 12 and a <= 12 and m[2] == "/") else (a, b)
        try:
            sc.claim("date", dt.date(y, month, day).isoformat(), m.start(), m.end())
        except ValueError:
            continue
    for m in _RE_SHORT_DATE.finditer(t):
        head = max(0, m.start() - 12)
        lead = _DATE_LEAD.search(t[head : m.start()])
        if now is None or lead is None or not sc.free(m.start(), m.end()):
            continue
        # "Monday 30/11" is one date: the weekday is part of the span, not a date of its own.
        start = head + lead.start() if re.match(WEEKDAY, lead.group(), re.I) else m.start()
        a, b = int(m[1]), int(m[2])
        orders = [(b, a), (a, b)] if region == "US" else [(a, b), (b, a)]  # (day, month)
        day_month = next(((d, mo) for d, mo in orders if 1 <= mo <= 12 and 1 <= d <= 31), None)
        if day_month is None:
            continue
        found = []
        for y in (now.year - 1, now.year, now.year + 1):  # the occurrence nearest the clock
            with contextlib.suppress(ValueError):
                found.append(dt.date(y, day_month[1], day_month[0]))
        if found and sc.take(start, m.end(), "date"):
            best = min(found, key=lambda d: abs((d - now.date()).days))
            sc.claim("date", best.isoformat(), start, m.end())
    for m in _RE_NTH.finditer(t):
        if not sc.take(m.start(), m.end(), "date") or now is None:
            continue
        day = int(m[1])
        # "September birthdays: dad on the 12th": the month named before in the sentence
        named = [x for x in _RE_MONTH_NAME.finditer(t, max(0, m.start() - 100), m.start())]
        if named and not re.search(r"[.!?\n]", t[named[-1].end() : m.start()]):
            month = _MONTHS[named[-1][0].lower()]
            found = []
            for y in (now.year - 1, now.year, now.year + 1):
                with contextlib.suppress(ValueError):
                    found.append(dt.date(y, month, day))
            if found:
                found.sort(key=lambda d: abs((d - now.date()).days))
                sc.claim("date", found[0].isoformat(), m.start(), m.end(), alts=tuple(d.isoformat() for d in found[1:]))
            continue
        # "on the 7th": the next such day, or the last one gone ("the expense on the 7th")
        days = [d for k in range(-2, 3) if (d := _nth_of_month(now.date(), k, day)) is not None]
        ahead = [d for d in days if d >= now.date()]
        past = [d for d in days if d < now.date()]
        if ahead:
            sc.claim("date", ahead[0].isoformat(), m.start(), m.end(), alts=tuple(d.isoformat() for d in past[-1:]))
    for m in _RE_REL_DATE.finditer(t):
        if not sc.take(m.start(), m.end(), "date") or now is None:
            continue
        phrase = _full_weekday(m.group().lower())
        d = _relative_date(phrase, now.date())
        if d is not None and phrase in WEEKDAYS:
            # a bare weekday tells the day of the week: the coming one, or the same day a week or
            # two on ("on Thursday" for Thursday week is no false day; "next Thursday" is one day)
            later = tuple((dt.date.fromisoformat(d) + dt.timedelta(days=k)).isoformat() for k in (7, 14))
            sc.claim("date", d, m.start(), m.end(), alts=later)
        elif d is not None:
            sc.claim("date", d, m.start(), m.end())
    for m in _RE_HALF_HOUR.finditer(t):  # "half seven": 7:30, as British English says it
        if not sc.take(m.start(), m.end(), "time"):
            continue
        h, day = int(m[1]), (m[2] or "").lower()
        if day and not re.match(r"[ap]", day):
            if (hm := _part_hm(h, 30, day)) is not None:
                sc.claim("time", hm, m.start(), m.end())
        elif day:
            if (hm := _hm(h, 30, day[0])) is not None:
                sc.claim("time", hm, m.start(), m.end())
        elif (first := _hm(h % 12, 30, None)) and (other := _hm(h % 12 + 12, 30, None)):
            sc.claim("time", first, m.start(), m.end(), alts=(other,))
    for m in _RE_CLOCK.finditer(t):
        hm = _part_hm(int(m[1]), int(m[2]), m[4]) if m[4] else _hm(int(m[1]), int(m[2]), m[3])
        if sc.take(m.start(), m.end(), "time") and hm:
            h = int(m[1])
            if not (m[3] or m[4]) and 0 < h < 12 and not m[1].startswith("0"):
                # "by 1:15" is 01:15 or 13:15, as "at seven" is: a 12-hour time without its half
                # of the day ("07:00", zero-padded, is the 24-hour clock's)
                sc.claim("time", hm, m.start(), m.end(), alts=(_hm(h + 12, int(m[2]), None),))
            else:
                sc.claim("time", hm, m.start(), m.end())
    for m in _RE_DOT_CLOCK.finditer(t):
        if sc.take(m.start(2), m.end(), "time") and (hm := _hm(int(m[2]), int(m[3]), m[4])):
            sc.claim("time", hm, m.start(2), m.end())
    for m in _RE_WORD_TIME.finditer(t):
        if not sc.take(m.start(), m.end(), "time"):
            continue
        part, where, hour, oclock, named, day = m.groups()
        day = (day or "").lower()
        if named:
            hm = "00:00" if named.lower() == "midnight" else "12:00"
            sc.claim("time", hm, m.start(), m.end())
            continue
        if hour is not None:
            h = {"midnight": 0, "noon": 12, "midday": 12}.get(hour.lower(), 0) if not hour.isdigit() else int(hour)
            mins = {"quarter": 15, "half": 30}.get(part.lower()) or int(part)
            if where.lower() == "to":
                h, mins = (h - 1) % 24, 60 - mins
            if not hour.isdigit():  # "half past midnight" is 00:30, "quarter to noon" 11:45: no other half
                sc.claim("time", f"{h:02d}:{mins:02d}", m.start(), m.end())
                continue
        else:
            h, mins = int(oclock), 0
        if day in ("morning", "afternoon", "evening", "at night"):
            if (hm := _part_hm(h, mins, day)) is not None:
                sc.claim("time", hm, m.start(), m.end())
            continue
        ap = "p" if day.startswith("p") else "a" if re.match(r"a\.?\s?m", day) else None
        if ap is None and 0 <= h <= 12:  # 0: "five to one" is 00:55 or 12:55
            first, other = _hm(h % 12, mins, None), _hm(h % 12 + 12, mins, None)
            if first and other:
                sc.claim("time", first, m.start(), m.end(), alts=(other,))
            continue
        if (hm := _hm(h if ap is None else (h or 12), mins, ap)) is not None:
            sc.claim("time", hm, m.start(), m.end())
    for m in _RE_AMPM.finditer(t):
        if sc.take(m.start(), m.end(), "time") and (hm := _hm(int(m[1]), int(m[2] or 0), m[3])):
            sc.claim("time", hm, m.start(), m.end())
    for m in _RE_AT_HOUR.finditer(t):
        # claimed, not taken: the same digits stay a number for a number criterion ("at 24,
        # warmer"), unless a part of the day makes them a time ("at 7 in the morning")
        if not (sc.take(m.start(1), m.end(1), "time") if m[2] else sc.free(m.start(1), m.end(1))):
            continue
        if not m[2] and _WARMTH_BEFORE.search(t[max(0, m.start() - 40) : m.start()]):
            continue  # "the heating's at 18", "thermostat at 20": a temperature, not a time
        h, day = int(m[1]), (m[2] or "").lower()
        if day:
            if (hm := _part_hm(h, 0, day)) is not None:
                sc.claim("time", hm, m.start(1), m.end(1))
        elif 0 < h <= 12:
            first, other = _hm(h % 12, 0, None), _hm(h % 12 + 12, 0, None)
            if first and other:
                sc.claim("time", first, m.start(1), m.end(1), alts=(other,))
        elif (hm := _hm(h, 0, None)) is not None:
            sc.claim("time", hm, m.start(1), m.end(1))
    for m in _RE_HOUR_PART.finditer(t):
        if sc.take(m.start(), m.end(), "time") and (hm := _part_hm(int(m[1]), 0, m[2])) is not None:
            sc.claim("time", hm, m.start(), m.end())


_RE_DUR_PART = re.compile(rf"(?:({_NUM})(?:\s*|-)|\b(an?)\s+)({_DUR_UNIT})\b(\s+and\s+a\s+(half|quarter))?", re.I)


def _duration_spans(body: str) -> list[tuple[int, int, int]]:
    """The durations in a run of duration parts, as ``(start, end, seconds)`` in ``body``: parts
    in falling units make one ("1 hour and 30 minutes"), a unit that does not fall starts another
    ("30 minutes and 10 minutes" are two)."""
    if re.fullmatch(_FIXED_DURATION, body.strip(), re.I):
        secs = _duration_seconds(body.strip())
        return [] if secs is None else [(0, len(body), secs)]
    groups: list[list[re.Match[str]]] = []
    for m in _RE_DUR_PART.finditer(body):
        unit = _DUR_UNITS.get(m[3].lower(), 0)
        if groups and unit < _DUR_UNITS.get(groups[-1][-1][3].lower(), 0):
            groups[-1].append(m)
        else:
            groups.append([m])
    out = []
    for g in groups:
        a, b = g[0].start(), g[-1].end()
        if (secs := _duration_seconds(body[a:b])) is not None:
            out.append((a, b, secs))
    return out


def _duration_seconds(span: str) -> int | None:
    s = span.lower()
    fixed = {
        "half an hour": 1800,
        "half a hour": 1800,
        "a quarter of an hour": 900,
        "one quarter of an hour": 900,
        "three quarters of an hour": 2700,
        "3 quarters of an hour": 2700,
        "half a minute": 30,
        "half a day": 43200,
    }
    if (hit := fixed.get(re.sub(r"[\s-]+", " ", s))) is not None:
        return hit
    total = 0.0
    found = False
    for m in re.finditer(rf"(?:({_NUM})(?:\s*|-)|\b(an?)\s+)({_DUR_UNIT})\b(\s+and\s+a\s+(half|quarter))?", s):
        qty = 1.0 if m[2] else _number_value(m[1])
        if qty is None:
            return None
        unit = _DUR_UNITS[m[3]]
        frac = 0.5 if m[5] == "half" else 0.25 if m[5] == "quarter" else 0.0
        total += (qty + frac) * unit
        found = True
    return round(total) if found else None


_RE_SERVICE_NO = re.compile(r"\b([A-Z][A-Z0-9]|ICE|TGV|AVE|RJX|EST)\s?\d{1,4}\b(?![.,:]\d)")
"""An airline's two-character code or a train product with a service number ("SK 486", "U2 123",
"ICE 578"): an id, not an amount or a count. Case matters: "at 8" or "ok 5" are not codes."""


def scan(text: str, ctx: Context) -> _Scan:
    region = phone_region(tuple(str(c.get("phone") or "") for c in itertools.islice(ctx.contacts, 20)))
    return scan_cached(text, ctx.now, region)


_RE_EMPHASIS = re.compile(r"\*\*|__|`|(?<![\w*])\*(?=[^\s*])|(?<=[^\s*])\*(?![\w*])")


def unmarked(text: str) -> str:
    """``text`` without Markdown emphasis (``**bold**``, ``__bold__``, ``*italic*``, ``code``), as a
    chat client shows it: "between **3:30 p.m.** and 5:30 p.m." reads as a range. Bullets ("* ",
    "- ") and every other character stay."""
    return _RE_EMPHASIS.sub("", text) if ("*" in text or "_" in text or "`" in text) else text


@functools.lru_cache(maxsize=512)
def scan_cached(text: str, now_text: str | None, region: str) -> _Scan:
    """All spans and claims of ``text`` (read-only once built: cached per text, clock, region)."""
    t = _words_to_digits(unmarked(text))
    sc = _Scan(t, [], [])
    for m in _RE_EMAIL.finditer(t):
        sc.take(m.start(), m.end(), "other")
    for m in _RE_SERVICE_NO.finditer(t):  # "SK 486", "ICE 578": a flight or train, not an amount
        sc.take(m.start(), m.end(), "other")
    now = _now(Context(now=now_text))
    _scan_dates_times(sc, now, region)
    for m in _RE_DURATION.finditer(t):
        if not sc.free(m.start(), m.end()):
            continue
        body = t[m.start() : m.start(1)] if m[1] else m.group()
        spans = _duration_spans(body.rstrip().rstrip(","))
        if not spans:
            continue
        sc.take(m.start(), m.end(), "duration")
        if not m[1]:  # "2 hours ago" refers to a moment, not a span of time
            for a, b, secs in spans:
                sc.claim("duration", secs, m.start() + a, m.start() + b)
    _scan_phones(sc, region)
    for m in _RE_MONEY.finditer(t):
        if not sc.take(m.start(), m.end(), "money"):
            continue
        from price_parser import Price

        span = m.group().replace("\u00a0", ",").replace("\u202f", ",")
        tok = _RE_CUR_TOKEN.search(span)
        sign = " ".join(tok.group().lower().split()) if tok else ""
        if m["only_cents"]:
            amount: float | None = int(m["only_cents"]) / 100
        elif m["whole"] or m["whole_words"]:
            whole = int(m["whole"] or m["whole_words"])
            amount = whole + int(m["cents_after_sign"] or m["minor"] or m["cents"]) / 100
        else:
            price = Price.fromstring(span)
            amount = price.amount_float
            if amount is None:
                continue
            sign = sign or (price.currency or "").lower().strip()
        cur = _CURRENCY.get(sign, sign.upper())
        if sign in ("$", "dollar", "dollars") and region == "AU":  # an Australian world's dollars
            cur = "AUD"
        sc.claim("money", amount, m.start(), m.end(), unit=cur)
    for rx in (_RE_ORDINAL, _RE_ID):
        for m in rx.finditer(t):
            sc.take(m.start(), m.end(), "other")
    for m in _RE_NUMBER.finditer(t):
        if not sc.take(m.start(), m.end(), "number"):
            continue
        v = _number_value(m.group())
        if v is not None:
            unit = " ".join(re.findall(r"[^\W\d_]+|%", t[m.end() : m.end() + 40])[:3]).lower()
            sc.claim("number", v, m.start(), m.end(), unit=unit)
    _join_ranges(sc)
    return sc


_RANGE_LINK = re.compile(r"^\s*(?:-|–|—|to|until|till|through|and)\s*$", re.I)
_CHANGE_FROM = re.compile(
    r"\b(?:mov|chang|shift|reschedul|push|postpon|brought|bring|delay|switch|updat|bump|pull|went|go(?:es)?\b)\w*"
    r"[^.!?;]*\bfrom\s+(?:(?:at|on|the)\s+)?$",
    re.I,
)


def _join_ranges(sc: _Scan) -> None:
    """A time or date range ("08:30–09:30", "from 08:30 to 09:30", "between 8 and 9", "Monday
    to Wednesday") is one claim of either end (the start's value, the end's in ``alts``), not
    two contradicting ones. "From X to Y" after a verb of change ("moved from 14:00 to 16:00")
    stays a change: X the old value (negated), Y the new."""
    out: list[Claim] = []
    claims = sorted(sc.claims, key=lambda c: c.start)
    i = 0
    while i < len(claims):
        c = claims[i]
        nxt = claims[i + 1] if i + 1 < len(claims) else None
        if (
            nxt is not None
            and c.type in ("time", "date")
            and nxt.type == c.type
            and _RANGE_LINK.match(sc.text[c.end : nxt.start])
            and (sc.text[c.end : nxt.start].strip().lower() != "and" or re.search(r"\bbetween\s+$", sc.text[: c.start]))
            and not _CHANGE_FROM.search(sc.text[max(0, c.start - 80) : c.start])
        ):
            far = (nxt.value, *nxt.alts)
            denied = bool(_NEG_BEFORE.search(sc.text[max(0, c.start - 40) : c.start]))  # "not 14:00-15:00"
            out.append(Claim(c.type, c.value, c.start, nxt.end, denied, c.unit, (*c.alts, *far), far))
            i += 2
            continue
        out.append(c)
        i += 1
    sc.claims[:] = out


@functools.lru_cache(maxsize=64)
def phone_region(phones: tuple[str, ...]) -> str:
    import phonenumbers

    for p in phones:
        if p.startswith("+"):
            try:
                region = phonenumbers.region_code_for_number(phonenumbers.parse(p, None))
            except phonenumbers.NumberParseException:
                continue
            if region and region != "ZZ":
                return region
    return "US"


def _scan_phones(sc: _Scan, region: str) -> None:
    import phonenumbers

    masked = list(sc.text)
    for a, b, _ in sc.spans:
        masked[a:b] = " " * (b - a)
    text = "".join(masked)
    try:
        found = list(phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.POSSIBLE))
    except Exception:
        found = []
    for m in found:
        if sum(ch.isdigit() for ch in m.raw_string) >= 7:
            sc.take(m.start, m.end, "phone")
    for m in re.finditer(r"\+?\d[\d ()\-./]{5,}\d", text):
        digits = sum(ch.isdigit() for ch in m.group())
        if (digits >= 9 and " " in m.group().strip()) or m.group().startswith("+"):
            sc.take(m.start(), m.end(), "phone")


# --------------------------------------------------------------------------- claims per type


def _linked_units(cl: list[Claim], text: str, unit: str) -> list[Claim]:
    """Numbers carrying ``unit`` (within their next three words), plus those hedged with them."""

    want = {u.strip().lower() for u in unit.split("|") if u.strip()}
    forms = want | {u + "s" for u in want} | {u + "es" for u in want}
    tagged = [any(w in forms for w in c.unit.split()) for c in cl]
    if not any(tagged):
        return cl
    for _ in range(2):
        for i in range(len(cl) - 1):
            if _HEDGE_LINK.match(text[cl[i].end : cl[i + 1].start]) and (tagged[i] or tagged[i + 1]):
                tagged[i] = tagged[i + 1] = True
    return [c for c, keep in zip(cl, tagged, strict=True) if keep]


_YES = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|correct|right(?!\s+(?:now|away|here|there))|sure|indeed|affirmative)\b", re.I
)
_NO = re.compile(r"^\W*(?:no|nope|nah|negative|incorrect)\b", re.I)
_NEGATION = re.compile(r"\b(?:not|no|none|never|nothing|nobody|neither|nor)\b|n't\b", re.I)
# Predicates that deny without a negation word ("size M is sold out").
_DENIES = re.compile(
    r"\b(?:sold out|out of stock|out of (?:size|that size|your size)\b|unavailable|(?:has|have|had) run out|ran out"
    r"|all clear|(?:0|zero) left)\b",
    re.I,
)
_AFFIRM = re.compile(
    r"\b(?:(?:you|they|we|i) (?:do|did|have|has|can)|(?:they|we|you)'ve got|there (?:is|are)|there's|you are|you're|"
    r"in stock|available|yes|(?:only )?[1-9]\d* left)\b|^\W*(?:it is|it's|they are|they're)\W*$",
    re.I,
)
_UNSURE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|not sure|unsure|can't tell|cannot tell|don't know|unclear|"
    r"no way to (?:check|tell|know|see)|(?:can't|cannot|could not|couldn't|unable to|not able to) "
    r"(?:check|see|tell|access|find out|look)|(?:don't|do not) have access)\b",
    re.I,
)
# Set phrases whose negation word negates nothing ("no problem, they have it").
_IDIOM = re.compile(
    r"\b(?:no problem|no worries|not a problem|no need to worry|(?:don't|do not) worry|not to worry|never mind|"
    r"no doubt|no rush|no hurry)\b",
    re.I,
)
_CLAUSE = re.compile(r"[;,.!?:()\n\u2013\u2014]+|\s-\s|\b(?:and|but|though|although|however)\b", re.I)
_ABOUT_PART = re.compile(r"[;,!?\n]+|\.(?!\d|[mM]\b)|\s[-\u2013\u2014]\s|\b(?:and|but|while|whereas)\b", re.I)
"""Where a part of an answer about one thing ends (``AnswerCriterion.about``): a sentence end,
comma, semicolon, spaced dash, "and", "but", "while" (not a colon: "Dubai: 13:00"; not the
dots of "p.m.")."""


def _clause_polarity(clause: str) -> tuple[bool, bool | None]:
    """``(led, answer)`` of one clause: led by yes/no (that answer); else a negation or a denying
    predicate → False (both: a double negative, "not sold out" → True); else an affirming phrase
    → True; else None."""
    if _YES.search(clause):
        return True, True
    if _NO.search(clause):
        return True, False
    neg, denies = bool(_NEGATION.search(clause)), bool(_DENIES.search(clause))
    if neg or denies:
        return False, neg and denies
    return False, (True if _AFFIRM.search(clause) else None)


def _yes_no(text: str) -> list[bool]:
    """The yes/no answers ``text`` gives: ``[True]``, ``[False]``, ``[True, False]`` (a hedge or
    both ways) or ``[]`` (none). Read clause by clause (split at punctuation and at "and",
    "but"...), after dropping set phrases whose negation negates nothing ("no problem", "don't
    worry"): a clause led by yes/no decides; without one, each clause's negations, denying
    predicates ("sold out") and affirming phrases ("they do have", "in stock") do. Uncertainty
    ("maybe", "not sure") anywhere is a hedge."""
    text = _IDIOM.sub(" ", text)
    if _UNSURE.search(text):
        return [True, False]
    marked = [(bool(_ACK.fullmatch(c)), _clause_polarity(c)) for c in _CLAUSE.split(text) if c.strip()]
    # "Sure! It's sold out": an acknowledgement before an answer acknowledges the request
    answered = any(v is not None for ack, (_, v) in marked if not ack)
    read = [pol for ack, pol in marked if not (ack and answered)]
    found = {v for led, v in read if led} or {v for _, v in read if v is not None}
    return sorted(found, reverse=True)


_ACK = re.compile(
    r"\W*(?:sure(?:\s+thing)?|of\s+course|certainly|ok(?:ay)?|alright|all\s+right|happy\s+to\s+help)\W*", re.I
)
"""A clause that only acknowledges the request ("Sure!", "Of course."): no answer when another
clause gives one."""


def _split_items(text: str) -> list[str]:
    parts = re.split(r"\s*(?:[,;\n•·]|\band\b|\bplus\b|(?<=\w)\.\s)\s*|^\s*[-*]\s+", text, flags=re.I | re.M)
    out = []
    for p in parts:
        p = norm(re.sub(r"^\s*(?:[-*]|\d+[.)])\s+", "", p or "")).strip(" .!:")
        if p:
            out.append(p)
    return out


def claims(text: str | None, type: str, ctx: Context | None = None, *, unit: str | None = None) -> list[Claim]:
    """Every :class:`Claim` of ``type`` in ``text``, negated ones included (see the module
    docstring for the types). ``unit`` narrows number claims to those carrying that word.

    Raises ``ValueError`` for an unknown type."""
    if type not in ANSWER_TYPES:
        raise ValueError(f"unknown answer type {type!r}; known: {list(ANSWER_TYPES)}")
    ctx = ctx or Context()
    text = str(text or "")
    if not text.strip():
        return []
    if type in ("contact", "contacts"):
        out = []
        for ids in mentioned_contacts(text, ctx.contacts):
            first = _first_mention(text, ids, ctx.contacts)
            neg = first is not None and _negated(text, first[0], first[1], type)
            out.append(Claim(type, frozenset(ids), *(first or (0, 0)), negated=neg))
        return out
    if type == "yes_no":
        return [Claim(type, v) for v in _yes_no(text)]
    if type == "items":
        return [Claim(type, p) for p in _split_items(text)]
    if type == "text":
        return [Claim(type, norm(text))]
    sc = scan(text, ctx)
    if type == "number":
        found = [c for c in sc.claims if c.type in ("number", "money")]
        if unit:  # a count of things: an amount with its currency is none ("2 Salmon Maki, 2400 JPY")
            found = _linked_units([c for c in found if c.type != "money" or not c.unit], sc.text, unit)
        if not found:  # "locker #663", "no. 663": a number written as an id
            found = [
                Claim("number", float(m[1]), m.start(1), m.end(1), _negated(sc.text, m.start(), m.end(), "number"))
                for m in _RE_HASH_NUMBER.finditer(sc.text)
            ]
        if not found:
            found = [Claim("number", 0.0, m.start(), m.end()) for m in _RE_ZERO.finditer(sc.text)][:1]
        return [Claim("number", c.value, c.start, c.end, c.negated, c.unit, c.alts) for c in found]
    if type == "money":
        # "no refund", "nothing back": an amount of zero, whatever other amounts stand beside it
        zeros = [Claim("money", 0.0, m.start(), m.end()) for m in _RE_NOTHING_BACK.finditer(sc.text)]
        found = sorted([*(c for c in sc.claims if c.type == "money"), *zeros], key=lambda c: c.start)
        bare = [c for c in sc.claims if c.type == "number"]
        if not found and not bare:  # "nothing", "you haven't spent anything": no money at all
            return [Claim("money", 0.0, m.start(), m.end()) for m in _RE_NO_MONEY.finditer(sc.text)][:1]
        bare = [c for c in bare if not _COUNTED.match(sc.text, c.end)]  # "four nights": a count, no amount
        if not found:  # no amount with a currency: bare numbers are amounts in the expected one ("16,066 left")
            # but where some have cents, those are the amounts: "3 payments, 36.32 so far"
            cents = [c for c in bare if _RE_CENTS.search(sc.text[c.start : c.end])]
            if not cents:
                return [Claim("money", c.value, c.start, c.end, c.negated, "", c.alts) for c in bare]
            found = [Claim("money", c.value, c.start, c.end, c.negated, "", c.alts) for c in cents]
            bare = [c for c in bare if c not in cents]
        # a bare number hedged with an amount is an amount too: "700 or 720 AUD", "700-720 AUD"
        linked = [
            Claim("money", n.value, n.start, n.end, n.negated, m.unit, n.alts)
            for n in bare
            if (m := _hedge_partner(sc.text, n, found, between=True))
        ]
        return sorted([*found, *linked], key=lambda c: c.start)
    if type == "duration":
        found = [c for c in sc.claims if c.type == "duration"]
        return sorted([*found, *_hedged_durations(sc, found)], key=lambda c: c.start)
    return [c for c in sc.claims if c.type == type]


_COUNTED = re.compile(
    r"\s*(?:nights?|people|persons?|guests?|adults?|children|kids|tickets?|seats?|rooms?|items?|photos?|videos?"
    r"|messages?|texts?|e-?mails?|payments?|entries|entry|times|stars?|songs?|tracks?|episodes?|stops?|floors?"
    r"|pieces?|bags?|boxes?|bottles?|cups?|slices?|portions?|plates?|dishes?|orders?|requests?|bills?)\b",
    re.I,
)
"""Words that count things after a number ("four nights", "2 tickets"): the number is a count,
not an amount in the expected currency."""


def _hedge_partner(text: str, n: Claim, found: Sequence[Claim], *, between: bool = False) -> Claim | None:
    """The claim of ``found`` that the bare number ``n`` is offered beside as an alternative
    ("700 or 720 AUD", "14 or 20 minutes"; with ``between``, "between 700 and 720 AUD"), if any."""
    for m in found:
        gap = text[n.end : m.start] if n.end <= m.start else text[m.end : n.start]
        if _HEDGE_LINK.match(gap) or (
            between and re.fullmatch(r"\s*and\s*", gap) and re.search(r"\bbetween\s+$", text[: n.start])
        ):
            return m
    return None


def _hedged_durations(sc: _Scan, found: list[Claim]) -> list[Claim]:
    """Bare numbers hedged with a duration, as durations in its unit: "14 minutes, or 20 in
    traffic" and "14 or 20 minutes" claim 20 and 14 minutes too."""
    linked = []
    for n in (c for c in sc.claims if c.type == "number"):
        d = _hedge_partner(sc.text, n, found)
        units = re.findall(rf"(?<![^\W\d_]){_DUR_UNIT}\b", sc.text[d.start : d.end], re.I) if d else []
        if units:
            scale = _DUR_UNITS[units[-1].lower()]
            linked.append(Claim("duration", round(n.value * scale), n.start, n.end, n.negated))
    return linked


_RE_NO_MONEY = re.compile(
    r"\b(?:nothing(?!\s+else)|zero|not\s+a\s+(?:cent|penny|thing)|none)\b|(?:\bnot|n't|n’t)\s+(?:\w+\s+){0,2}?anything\b",
    re.I,
)
"""Words that state an amount of zero ("nothing", "you haven't spent anything")."""

_RE_NOTHING_BACK = re.compile(
    r"\bno\s+refund\b|\bnothing\s+(?:back|(?:is\s+|will\s+be\s+)?refunded)\b"
    r"|(?:\bnot|n't)\s+(?:be\s+)?refunded\b|(?:\bnot|n't)\s+get\s+anything\s+back\b",
    re.I,
)
"""Phrases that state a refund of zero ("no refund", "you get nothing back", "it won't be refunded")."""

_RE_CENTS = re.compile(r"\d[.,]\d{2}$")
"""A number written with cents ("36.32", "36,32")."""

_RE_HASH_NUMBER = re.compile(r"(?:#|\bno\.|\bnr\.?|\bnumber)\s*(\d+)\b", re.I)


def _first_mention(text: str, ids: set[str], contacts: Sequence[Mapping[str, Any]]) -> tuple[int, int] | None:
    low = text.casefold()
    best: tuple[int, int] | None = None
    for c in contacts.having_ids(ids) if isinstance(contacts, ContactBook) else contacts:
        if c.get("id") not in ids:
            continue
        for ref in (c.get("name"), (c.get("name") or "").split(" ")[0], c.get("email")):
            m = re.search(rf"(?<!\w){re.escape(str(ref).casefold())}(?!\w)", low) if ref else None
            if m is not None and (best is None or m.start() < best[0]):
                best = m.span()
    return best


def extract_claims(text: str, type: str, ctx: Context) -> list[Any]:
    """The values of ``type`` that ``text`` asserts, normalised, in order, deduplicated,
    without the ones it negates ("not 14:00").

    Args:
        text: free text (an answer, a message body).
        type: one of :data:`ANSWER_TYPES`.
        ctx: the contacts (for ``contact``/``contacts``) and the phone's clock (relative dates).

    Returns:
        float for number and money (the amount), ``"HH:MM"`` for time, ``"YYYY-MM-DD"`` for date,
        int seconds for duration, frozenset of contact ids per mention for contact(s), str for
        items and text, bool for yes_no.

    Raises:
        ValueError: unknown type.
    """
    out: list[Any] = []
    for c in claims(text, type, ctx):
        if not c.negated and c.value not in out:
            out.append(c.value)
    return out


# --------------------------------------------------------------------------- typed values


def read_value(value: Any, type: str, ctx: Context) -> list[Claim] | None:
    """Read a typed value (``finish``'s ``value`` or a criterion's expected ``value``) as claims
    of ``type``: ``3`` or ``"three"`` for a number, ``"4 PM"`` for a time, ``["c_1", "Ben"]`` for
    contacts (ids or names), ``true`` for yes/no. Returns None when the value cannot denote that
    type (a dict, a bool for a number, a list for a time)."""
    if value is None or isinstance(value, Mapping):
        return None
    if type in ("number", "money", "duration"):
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            if not math.isfinite(value):
                return None
            return [Claim(type, round(value) if type == "duration" else float(value))]
    if type == "yes_no":
        if isinstance(value, bool):
            return [Claim(type, value)]
        return [Claim(type, v) for v in _yes_no(value)] if isinstance(value, str) else None
    if type in ("contact", "contacts"):
        refs = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else None
        if refs is None or not all(isinstance(r, str) for r in refs):
            return None
        out = []
        for r in refs:
            ids = contact_ids(r, ctx.contacts)
            out.extend([Claim(type, frozenset(ids))] if ids else claims(r, type, ctx))
        return out
    if type == "items":
        if isinstance(value, str):
            return claims(value, type, ctx)
        if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
            return [Claim(type, norm(v)) for v in value]
        return None
    if type == "text":
        return [Claim(type, norm(value))] if isinstance(value, (str, int, float)) else None
    if isinstance(value, str):
        if type == "date" and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
            return claims(value, type, ctx)
        return [c for c in claims(value, type, ctx) if not c.negated]
    return None


def _matches(type: str, claim: Claim, want: Any, tol: float, currency: str | None) -> bool:
    values = (claim.value, *claim.alts)
    if type in ("number", "money", "duration"):
        if type == "money" and currency and claim.unit and claim.unit != currency.upper():
            return False
        return any(isinstance(v, (int, float)) and abs(float(v) - float(want)) <= tol + 1e-9 for v in values)
    return want in values


def _expected(crit: AnswerCriterion, ctx: Context) -> tuple[str, Any] | None:
    if crit.type is None:
        return ("number", float(crit.number)) if crit.number is not None else None
    t = crit.type
    v = crit.value
    if t in ("contact", "contacts"):
        refs = [v] if isinstance(v, str) else list(v or [])
        ids: set[str] = set()
        for r in refs:
            got = contact_ids(r, ctx.contacts) or ({r} if isinstance(r, str) else set())
            ids |= got if len(got) == 1 else {r}
        return t, frozenset(ids)
    if t == "items":
        return t, frozenset(norm(x) for x in ([v] if isinstance(v, str) else v or []))
    if t == "text":
        return t, [norm(x) for x in ([v] if isinstance(v, str) else v or [])]
    if t in ("number", "money", "duration") and isinstance(v, (int, float)) and not isinstance(v, bool):
        return t, round(v) if t == "duration" else float(v)
    if t == "yes_no" and isinstance(v, bool):
        return t, v
    got = read_value(v, t, ctx)
    if not got:
        raise ValueError(f"expected value {v!r} cannot be read as a {t}")
    return t, got[0].value


def _judge_single(
    type: str, found: list[Claim], want: Any, tol: float, currency: str | None, what: str
) -> tuple[bool, str]:
    live = [c for c in found if not c.negated]
    if not live:
        return False, f"{what} states no {type}" + (" (only negated ones)" if found else "")
    bad = [c for c in live if not _matches(type, c, want, tol, currency)]
    if bad:
        shown = sorted({_show(c.value) for c in live})
        return False, f"{what} states {type} {', '.join(shown)}, expected only {_show(want)}"
    return True, ""


def _show(v: Any) -> str:
    if isinstance(v, frozenset):
        return "{" + ", ".join(sorted(map(str, v))) + "}"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _judge_people(type: str, found: list[Claim], want: frozenset[str], what: str) -> tuple[bool, str]:
    live = [c for c in found if not c.negated]
    if not live:
        return False, f"{what} names nobody"
    amb = [c for c in live if len(c.value) != 1]
    if amb:
        return False, f"{what} names someone ambiguously: one of {_show(amb[0].value)}"
    named = frozenset().union(*(c.value for c in live))
    if type == "contact" and len(named) != 1:
        return False, f"{what} names {len(named)} people {_show(named)}, expected only {_show(want)}"
    if named != want:
        missing, extra = want - named, named - want
        parts = ([f"misses {_show(missing)}"] if missing else []) + ([f"also names {_show(extra)}"] if extra else [])
        return False, f"{what} " + " and ".join(parts)
    return True, ""


def _judge_items(text_items: list[str], want: frozenset[str], what: str, exact: bool) -> tuple[bool, str]:
    def has(seg: str, item: str) -> bool:
        return re.search(rf"(?<!\w){re.escape(item)}(?!\w)", seg) is not None

    missing = [w for w in want if not any(has(s, w) for s in text_items)]
    if missing:
        return False, f"{what} lacks {', '.join(sorted(missing))}"
    if exact:
        extra = [s for s in text_items if s not in want]
    else:  # free text: extra elements only in the sentences that list the items
        extra = [s for s in text_items if not any(has(s, w) for w in want)]
    if extra:
        return False, f"{what} also lists {', '.join(extra)}"
    return True, ""


def _list_segments(text: str, want: frozenset[str]) -> list[str]:
    def names_one(s: str) -> bool:
        return any(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", norm(s)) for w in want)

    def unlabelled(s: str) -> str:
        head, colon, tail = s.partition(":")  # "Movies to watch: Arrival, Heat": a label, not an item
        return tail if colon and not names_one(head) else s.replace(":", ",")

    sentences = re.split(r"(?<=[.!?])\s+|\n+", text)
    keep = [unlabelled(s) for s in sentences if names_one(s)]
    return _split_items(" ".join(keep)) if keep else []


def _hedged(text: str, claim: Claim, others: Sequence[Claim]) -> bool:
    """Whether ``claim`` is offered as an alternative to one of ``others`` ("12:28 or 11:53",
    "700-720"); a spaced dash before words is punctuation, not a range ("765 GBP - nothing is
    refunded")."""
    for o in others:
        first, second = (claim, o) if claim.end <= o.start else (o, claim)
        gap = text[first.end : second.start]
        if not _HEDGE_LINK.match(gap):
            continue
        if gap.strip() in ("-", "–") and gap != gap.strip() and not re.match(r"[\d€$£¥]", text[second.start :]):
            continue
        return True
    return False


def _check_typed(
    type: str,
    want: Any,
    text: str | None,
    value: Any,
    ctx: Context,
    *,
    tol: float = 0.0,
    currency: str | None = None,
    unit: str | None = None,
    context: Sequence[Any] = (),
) -> tuple[bool, str]:
    sources: list[tuple[str, list[Claim] | None, bool]] = []
    if value is not None:
        sources.append(("value", read_value(value, type, ctx), True))
    if text is not None:
        if type == "items":
            segs = _list_segments(text, want)
            sources.append(("answer", [Claim("items", s) for s in segs], value is None))
        elif type == "text":
            sources.append(("answer", [Claim("text", norm(text))], True))
        else:
            sources.append(("answer", claims(text, type, ctx, unit=unit), value is None))
    if not sources:
        return False, "no answer given"
    for what, found, required in sources:
        if found is None:
            return False, f"value {value!r} is not a {type}"
        if not required and not [c for c in found if not c.negated]:
            continue  # the text says nothing of this type: it does not contradict the value
        if what == "answer" and type in _SINGLE_TYPES and len(found) > 1:
            t = scan(text or "", ctx).text  # "the first train leaving after 6pm ...": the bound is no answer
            found = [c for c in found if not _restated_bound(t, c)] or found
        if what == "answer" and type in (*_SINGLE_TYPES, "contact", "contacts") and len(found) > 1:
            # another fact told as context ("due 27 November; last scanned on 24 November",
            # "Iris Lang, and next is Lea Braun"): judged by the grounded check, not as the
            # answer (a criterion naming its context values judges those itself)
            t = text if type in ("contact", "contacts") else scan(text or "", ctx).text
            primary = [c for c in found if not _secondary(t or "", c, bool(context))]
            found = primary or found
            if type in _SINGLE_TYPES:
                # a part of the text of its own subject that tells no answer ("Errands now has 4
                # open items." after "three new errands"): another fact, for the grounded check
                hits = [c for c in found if _matches(type, c, want, tol, currency)]
                found = [c for c in found if c in hits or not _another_part(t or "", c, hits)]
        if type in ("contact", "contacts"):
            ok, why = _judge_people(type, found, want, what)
        elif type == "items":
            ok, why = _judge_items([c.value for c in found], want, what, exact=what == "value")
        elif type == "text":
            body = found[0].value if found else ""
            miss = [p for p in want if p not in body]
            ok, why = not miss, f"{what} lacks {', '.join(map(repr, miss))}"
        else:
            if context and what == "answer":  # context values said beside the answer are no claims
                t = scan(text or "", ctx).text
                # a range's ends are each the answer or a context value ("16:00-18:00" tells a
                # wrong end when 17:00 is the one that may be said beside 16:00)
                found = [e for c in found for e in _told_ends(type, c, [want, *context], tol, currency)]
                hits = [c for c in found if _matches(type, c, want, tol, currency)]
                found = [
                    c
                    for c in found
                    if c in hits
                    or not any(_matches(type, c, x, tol, currency) or _rounds(type, c, x, t) for x in context)
                    or _hedged(t, c, hits)
                    or _CORRECTION_BEFORE.search(t[max(0, c.start - 40) : c.start])
                ]
            if type == "duration" and what == "answer":  # "roughly a quarter of an hour" for 14 minutes
                t = scan(text or "", ctx).text
                rough = [c for c in found if not c.negated and _rough_of(t, c, want)]
                found = [c for c in found if c not in rough] or [Claim(type, want)] * bool(rough)
            ok, why = _judge_single(type, found, want, tol, currency, what)
        if not ok:
            return ok, why
    return True, ""


def rounds_to(said: float, want: float) -> bool:
    """Whether ``said`` seconds is ``want`` seconds rounded as people round a duration: to the
    largest of 60, 30, 15 or 5 minutes that divides ``said`` (within half that unit), and never
    by more than a quarter of ``want`` (at least 2.5 minutes): 15 for 14 minutes, "an hour" for
    55; not 10 for 14 (5 minutes' rounding), not 14 for 9 (no rounding), not an hour for 31."""
    minutes, exact = said / 60, want / 60
    unit = next((u for u in (60, 30, 15, 5) if minutes >= u and abs(minutes / u - round(minutes / u)) < 1e-9), 0)
    return abs(minutes - exact) <= min(unit / 2, max(2.5, exact / 4)) if unit else abs(minutes - exact) < 1e-9


def _rough_of(text: str, c: Claim, want: float) -> bool:
    """Whether duration claim ``c`` of ``text`` is told as a rounding ("about", "roughly"...
    before it) of ``want`` seconds (:func:`rounds_to`)."""
    rough = ABOUT_BEFORE.search(text[max(0, c.start - 20) : c.start]) or re.search(
        r"\b(?:about|around|roughly|approx(?:imately)?|circa)\s+(?:a|an)\s+$",
        text[max(0, c.start - 24) : c.start],
        re.I,
    )
    values = [v for v in (c.value, *c.alts) if isinstance(v, (int, float))]
    return bool(rough) and any(rounds_to(float(v), float(want)) for v in values)


_SECONDARY_LEAD = re.compile(
    r"\b(?:next|then|followed\s+by|after\s+(?:that|him|her|them|it)|last\s+(?:\w+ed\b|seen|sent|paid)|previous(?:ly)?"
    r"|earlier|before\s+that|ordered|shipped|scanned|runner[\s-]up|second|third|later|until|till|ends?(?:\s+at)?"
    r"|ending|balance|remaining|than|instead\s+of|replac\w*|compared|versus|vs|minimum|maximum|e\.g|for\s+example"
    r"|other|another|too|(?:account|wallet|card)\b[^.;!?]{0,20}\b(?:has|holds|is\s+at))\b",
    re.I,
)
_REPORTED = re.compile(
    r"\b(?:(?i:he|she|they)|(?!I\b)[A-Z][a-z]+)(?:\s+(?i:also|just))?\s+(?i:says?|said|writes?|wrote|asks?|asked|mentions?"
    r"|mentioned|offered|suggested|proposed|preferred)\b"
)
"""Words that report what someone else said: a value after them is their words ("he says he'll see
you at 7"), not the answer."""
_OTHER_THING_LEAD = re.compile(
    r"\b(?:than|instead\s+of|replac\w*|compared|versus|vs|minimum|maximum|e\.g|for\s+example|other|another)\b",
    re.I,
)
_BOUND_LEAD = re.compile(
    r"\b(?:first|1st|earliest|last|latest|next)\b[^.;!?]*\b(?:after|before|from|no\s+(?:earlier|later)\s+than)\s+$",
    re.I,
)
"""A bound of the request told before a value ("the first train leaving after 18:00", "the last
bus before 23:00"): a condition restated, not the answer."""


def _lead(text: str, c: Claim) -> str:
    """The part of claim ``c``'s clause in ``text`` before it (from the last :data:`_LEAD_START`)."""
    starts = [m.end() for m in _LEAD_START.finditer(text, 0, c.start)]
    return text[starts[-1] if starts else 0 : c.start]


def _restated_bound(text: str, c: Claim) -> bool:
    """Whether claim ``c`` of ``text`` is the request's bound told again (:data:`_BOUND_LEAD`)."""
    return bool(_BOUND_LEAD.search(_lead(text, c)))


_FULL_STOP = r"(?<!\bvs)(?<!\be\.g)(?<!\bi\.e)(?<!\bincl)(?<!\bapprox)(?<!\bcf)\.(?!\d)"
"""A full stop that ends a sentence: not the one of "vs.", "e.g.", "incl.", "approx.", nor a decimal point."""
_LEAD_START = re.compile(rf"[;!?\n(]|{_FULL_STOP}|,\s*(?:and|but)\b|\s[-\u2013\u2014]\s")
"""Where the words that lead a value start: a sentence's or a bracket's start, ", and", a dash
(not the full stop of "vs.", "e.g.", "incl.", "approx.": the words before it still lead)."""


_PART = re.compile(rf"[;!?\n()]|{_FULL_STOP}")
"""Where a part of a text starts or ends: a sentence's end, a semicolon, a bracket."""
_PART_OPENS_BACK = re.compile(
    r"[\s\W]*(?:(?:and|but|so|or)\s+)?(?:it|its|it'?s|that|that'?s|this|they|they'?re|which|or|maybe|perhaps|possibly"
    r"|probably|actually|sorry|correction|rather|make\s+that|i\s+mean|i\s+meant|no|not|either)\b",
    re.I,
)
"""A part that opens by pointing back to what came before ("It leaves at 8:45", "Or 4"), with a
hedge, or with a correction: about the answer's own subject, not another fact."""


def _another_part(text: str, c: Claim, hits: Sequence[Claim]) -> bool:
    """Whether claim ``c`` is in a part of ``text`` (:data:`_PART`: a sentence, a part after a
    semicolon, a bracket) that holds none of ``hits`` (the claims that tell the answer), while
    another part does, and that opens with a subject of its own: no pronoun for the answer's
    subject, hedge or correction (:data:`_PART_OPENS_BACK`): "Booked for Wednesday the 18th.
    Saturday 14 at 18:30 suited both too, but that slot was taken." tells Saturday as another
    fact; "It leaves at 8:45." and "Or maybe 4." do not."""
    if not hits:
        return False
    bounds = [0, *(m.end() for m in _PART.finditer(text)), len(text) + 1]
    part = next(((a, b) for a, b in itertools.pairwise(bounds) if a <= c.start < b), None)
    if part is None or any(part[0] <= h.start < part[1] for h in hits):
        return False
    return _PART_OPENS_BACK.match(text, part[0]) is None


def _secondary(text: str, c: Claim, context: bool = False) -> bool:
    """Whether claim ``c`` of ``text`` is told as another fact beside the answer: the part of
    its clause before it (from a sentence end, semicolon, bracket, ", and", ", but" or dash) has
    a marker of another fact ("next", "then", "last scanned", "previously", "earlier",
    "ordered", "runner-up", "your balance is") and no hedge."""
    lead = _lead(text, c)
    if not lead.strip() and text[: c.start].rstrip().endswith("("):  # "Electricity (£62.46)": the words before it
        starts = [m.end() for m in re.finditer(r"[;!?\n]|\.(?!\d)|\s[-\u2013\u2014]\s", text[: c.start])]
        lead = text[starts[-1] if starts else 0 : c.start]
    if _BOUND_LEAD.search(lead) or _REPORTED.search(lead):
        return True
    # where the criterion names context values, only another thing's value is set aside here:
    # "ends at 22:15" for a film ending 22:17 is judged against the context
    marker = _OTHER_THING_LEAD if context else _SECONDARY_LEAD
    return bool(marker.search(lead)) and not re.search(r"\b(?:or|maybe|perhaps|possibly|probably)\b", lead, re.I)


ABOUT_BEFORE = re.compile(r"\b(?:about|around|roughly|approx(?:imately|\.)?|circa|ca\.)\s+(?:at\s+)?$|~\s*$", re.I)
BY_BEFORE = re.compile(r"\b(?:by|before|no\s+later\s+than)\s+(?:about\s+|around\s+)?$", re.I)


def _rounds(type: str, c: Claim, x: Any, text: str) -> bool:
    """Whether time claim ``c`` is context value ``x`` told roughly: "around 22:15" within 15
    minutes of it, or a bound that holds, "out by 23:00" up to an hour after it (a film ending
    at 22:17)."""
    if type != "time" or not isinstance(x, str) or not isinstance(c.value, str):
        return False
    before = text[max(0, c.start - 30) : c.start]
    diff = (_minutes(c.value) - _minutes(x) + 720) % 1440 - 720  # across midnight: 00:00 is 43 min after 23:17
    if ABOUT_BEFORE.search(before):
        return abs(diff) <= 15
    return bool(BY_BEFORE.search(before)) and 0 <= diff <= 60


def _minutes(hm: str) -> int:
    h, m = hm.split(":")
    return int(h) * 60 + int(m)


def _told_ends(type: str, c: Claim, allowed: Sequence[Any], tol: float, currency: str | None) -> list[Claim]:
    """``c`` itself, or for a range with an end that is none of ``allowed``, its two ends as
    separate claims (so the wrong end is judged as a value told)."""
    ends = c.ends()
    if ends is None or all(any(_matches(type, e, a, tol, currency) for a in allowed) for e in ends):
        return [c]
    return list(ends)


_CORRECTION_BEFORE = re.compile(
    r"\b(?:correction|i\s+meant?)\b[^.;!?\n]*$"
    r"|\b(?:actually|sorry|rather|make\s+that)[,:]?\s+(?:it'?s\s+|it\s+is\s+|that'?s\s+|that\s+is\s+)?$",
    re.I,
)
"""Before a value: a correction ("Correction: it's 3", "sorry, I meant 3", "actually 3"). A
context value said after one is the answer corrected, not context."""


def check_answer(crit: AnswerCriterion, text: str | None, value: Any, ctx: Context) -> tuple[bool, str]:
    """Whether an answer (``finish``'s free ``text`` and typed ``value``) meets ``crit``.

    The text-only checks (``equals``, ``contains``, ``pattern``) read ``text`` (else the value
    written as text). The typed check reads ``crit.type``/``crit.value`` (or ``crit.number``,
    read as a number): the value when given, else the text's claims, must be exactly the
    expected value; a text beside a value must not contradict it. See the module docstring.

    Returns ``(passed, reason)``; the reason says in words why it failed ("" when it passed).
    Never raises for any answer or value; raises ``ValueError`` only for a criterion whose
    expected value cannot be read (a task bug).
    """
    if text is None and value is None:
        return False, "no answer given"
    if text is not None and not isinstance(text, str):
        text = str(text)
    words = text if text is not None else (value if isinstance(value, str) else _json_text(value))
    body = norm(words)
    if crit.equals is not None and body.strip(" .!") != norm(crit.equals).strip(" .!"):
        return False, f"answer {words!r} is not {crit.equals!r}"
    for part in crit.contains:
        if not says(words, part):
            return False, f"answer lacks {part!r}"
    if crit.pattern is not None and not searches(crit.pattern, words):
        return False, f"answer does not match /{crit.pattern}/"
    exp = _expected(crit, ctx)
    if exp is None:
        return True, ""
    type, want = exp
    if crit.about is not None:
        parts = _about_parts(text or "", crit.about, type, ctx)
        if not parts:
            return False, f"answer does not name {crit.about!r}"
        text = ". ".join(parts)
    if type == "yes_no" and crit.context:
        # other subjects of the question ("size 40" beside the size asked about): their clauses
        # answer another question
        if text is not None:
            text = ". ".join(c for c in _CLAUSE.split(text) if not any(says(c, str(o)) for o in crit.context))
        return _check_typed(type, want, text, value, ctx)
    beside = [e[1] for v in crit.context if (e := _expected(crit.model_copy(update={"value": v, "context": []}), ctx))]
    if crit.optional and value is None:
        # nothing of the type said, or only context values: the answer tells no wrong value
        said = [c for c in claims(text or "", type, ctx, unit=crit.unit) if not c.negated]
        if all(any(_matches(type, c, x, crit.tolerance, crit.currency) for x in beside) for c in said):
            return True, ""
    return _check_typed(
        type, want, text, value, ctx, tol=crit.tolerance, currency=crit.currency, unit=crit.unit, context=beside
    )


def _about_parts(text: str, about: str, type: str, ctx: Context) -> list[str]:
    """The parts of ``text`` (split by :data:`_ABOUT_PART`) that name ``about``; within one,
    a bracket naming ``about`` and telling a value of ``type`` alone ("8 am here (Dubai: 1 pm)")."""
    out = []
    for part in _ABOUT_PART.split(text):
        if not says(part, about):
            continue
        inner = [b for b in re.split(r"[()\[\]]", part) if says(b, about) and claims(b, type, ctx)]
        out.append(inner[0] if len(inner) == 1 and inner[0].strip() != part.strip() else part)
    return out


def _json_text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        return ", ".join(_json_text(x) for x in v)
    return str(v)


_SINGLE_TYPES = ("number", "money", "time", "date", "duration")


def _facts_hold(op: str, text: str, facts: Mapping[str, Any], ctx: Context, *, stated: bool) -> bool:
    from phoneenv.contract import AnswerCriterion

    if not isinstance(facts, Mapping):
        raise ValueError(f"{op!r} takes an object of type → value, got {facts!r}")
    for type, want in facts.items():
        if type not in ANSWER_TYPES:
            raise ValueError(f"unknown answer type {type!r} in {op!r}; known: {list(ANSWER_TYPES)}")
        if op == "consistent" and isinstance(want, list) and type in _SINGLE_TYPES:
            # several values are each consistent ("the 10:00 meeting" or "see you at 10:05")
            wants = [_expected(AnswerCriterion(type=type, value=v), ctx) for v in want]
            for c in claims(text, type, ctx):
                if not c.negated and not any(w and _matches(type, c, w[1], 0.0, None) for w in wants):
                    return False
            continue
        # {"value": v, "context": [...]}: values the text may state beside v (as
        # AnswerCriterion.context: "arrives at 12:28 - ordered at 11:53")
        context: list[Any] = []
        if isinstance(want, Mapping) and "value" in want:
            want, context = want["value"], list(want.get("context") or [])
        # Given as the typed value, the expected value is there already: only the text can
        # contradict it; without it, the text must state it.
        crit = AnswerCriterion(type=type, value=want, context=context)
        ok, _ = check_answer(crit, text, None if stated else want, ctx)
        if not ok:
            return False
    return True


def states_facts(text: str, facts: Mapping[str, Any], ctx: Context) -> bool:
    """Whether ``text`` states every fact of ``facts`` (type → expected value, as in an
    :class:`~phoneenv.contract.AnswerCriterion` with that ``type`` and ``value``) and nothing
    that contradicts it: ``{"time": "16:00"}`` holds for "moved to 4 pm" and "moved to 16:00,
    not 14:00", not for "moved to 14:00" nor "14:00 or 16:00". ``number`` facts compare exactly.
    A fact given as ``{"value": v, "context": [...]}`` lets the text state the context values
    beside ``v`` (``{"time": {"value": "12:28", "context": ["11:53"]}}`` holds for "arrives at
    12:28, ordered at 11:53", not for "ordered at 11:53").

    Raises ``ValueError`` for an unknown type or an unreadable expected value (task bugs)."""
    return _facts_hold("states", text, facts, ctx, stated=True)


def consistent_facts(text: str, facts: Mapping[str, Any], ctx: Context) -> bool:
    """Whether ``text`` contradicts no fact of ``facts``: every value of that type it states
    (negated ones aside) is the expected one (or one of them, given a list:
    ``{"time": ["10:00", "10:05"]}``), and stating none is fine. ``{"date":
    "2026-11-09"}`` holds for "moved to 4 pm" and "Monday 9 November at 4 pm", not for "moved to
    Tuesday at 4 pm".

    Raises ``ValueError`` for an unknown type or an unreadable expected value (task bugs)."""
    return _facts_hold("consistent", text, facts, ctx, stated=False)


def call_judge(judge: Judge, rubric: str, text: str | None, value: Any) -> tuple[bool, str]:
    """Ask an LLM ``judge`` (``judge(rubric, text, value) -> bool | (bool, reason)``) whether an
    answer meets ``rubric``; an exception or a malformed reply fails with the reason."""
    try:
        got = judge(rubric, text, value)
    except Exception as exc:
        return False, f"judge failed: {type(exc).__name__}: {exc}"
    if isinstance(got, bool):
        return got, "judge: " + ("meets" if got else "does not meet") + " the rubric"
    if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], bool):
        return got[0], f"judge: {got[1]}"
    return False, f"judge gave an unreadable reply {got!r}"


def _states_op(value: Any, facts: Any, ctx: Context) -> bool:
    """The ``states`` condition: a text states every fact of ``facts`` (:func:`states_facts`)."""
    return isinstance(value, str) and states_facts(value, facts, ctx)


def _consistent_op(value: Any, facts: Any, ctx: Context) -> bool:
    """The ``consistent`` condition: a text contradicts none of ``facts`` (:func:`consistent_facts`)."""
    return isinstance(value, str) and consistent_facts(value, facts, ctx)


register_operator("states", _states_op)
register_operator("consistent", _consistent_op)
