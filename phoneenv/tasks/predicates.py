"""Field conditions over records, declared as data (no lambdas in tasks).

A ``where`` clause maps field names to conditions; a record matches when every condition holds::

    >>> match({"body": "Running 10 min late", "to": "+4915"}, {"body": {"icontains": "late"}, "to": "+4915"})
    True

Operators: a literal means equality (``True`` does not equal ``1``); ``{"eq": v}``, ``{"ne": v}``, ``{"in": [..]}``,
``{"iequals": s}`` (case- and space-insensitive, a closing full stop, "!" or "?" aside: a title typed as a sentence), ``{"subject": s}`` (a mail subject, its
reply or forward prefix in any client's form and its punctuation aside: :func:`same_subject`), ``{"icontains": s}`` (a substring of the text
read as words: case, accents, hyphens and punctuation aside; "cancel" is in "Cancelled"), ``{"says": s}`` (the
text states the phrase as whole words, not denied: :func:`says`), ``{"startswith": s}``,
``{"gte": x}``, ``{"lte": x}`` (numbers or ISO strings), ``{"has": v}`` (a list/tuple field holds
``v``, case-insensitive for strings), ``{"len": n}``, ``{"seq": [..]}`` (a list/tuple field
holds exactly these items in this order), ``{"number": s}`` (same phone line: last
nine digits equal, and the whole national number where one is written internationally:
:func:`phoneenv.tasks.identity.same_number`), ``{"phones": [n, ...]}`` (a text writes exactly these phone numbers, any
format), ``{"regex": p}`` (a string field matches the pattern, case-insensitive, and with or without accents:
the pattern and the text are also compared with their accents dropped, so "Sao Paulo" finds "São
Paulo" and "Zoë" finds "Zoe").

Composition: ``{"any": [c1, c2, ...]}`` holds when one alternative holds, ``{"not": c}`` when
``c`` does not. Several operators in one object must all hold.

People by identity (:mod:`phoneenv.tasks.identity`), against the contacts of a
:class:`Context`: ``{"person": "c_3"}`` (the field names contact ``c_3`` and nobody else: full
name, unique first name, e-mail or number), ``{"has_person": "c_3"}`` (a list field holds a
reference to ``c_3``), ``{"people": ["c_3", "c_5"]}`` (a list field names exactly these people,
each item one of them). Facts in text (:mod:`phoneenv.tasks.answers`): ``{"states": {"time":
"16:00"}}`` (the text claims that value of that type and no other), ``{"consistent": {"date":
"2026-11-09"}}`` (any value of that type the text states is that one; stating none is fine). An unknown operator raises
``ValueError`` (a task bug, caught by ``phoneenv tasks validate``).
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phoneenv.tasks.identity import contact_ids, same_number

__all__ = [
    "CONTEXT_OPERATORS", "OPERATORS", "Context", "check", "match", "norm", "plain", "register_operator", "says", "words",
]  # fmt: skip


@dataclass(frozen=True)
class Context:
    """What context-dependent operators see: the user's contacts (records with ``id``,
    ``name``, ``phone``, ``email``), the phone's local clock (``YYYY-MM-DDTHH:MM:SS``), and the
    episode's end state and fixture state (``{"app.table": {id: record}}``, for ``ref``)."""

    contacts: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    now: str | None = None
    tables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    before: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def norm(text: Any) -> str:
    """Case-folded text with runs of whitespace collapsed (None → "")."""
    return " ".join(str(text if text is not None else "").casefold().split())


_NON_WORD = re.compile(r"[\W_]+")


def words(text: Any) -> str:
    """``text`` as its words: accents dropped (NFKD), case-folded, and every run of characters
    that are neither letters nor digits (spaces, hyphens, dashes, quotes, punctuation) made one
    space, with a space at each end (None → " ").

    >>> words("Parent–Teacher  Meeting!")
    ' parent teacher meeting '
    """
    return " " + " ".join(_NON_WORD.sub(" ", _bare(str(text if text is not None else "")).casefold()).split()) + " "


def _bare(text: str) -> str:
    """``text`` with its accents dropped (NFKD, combining marks removed)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


_DENIED_BEFORE = re.compile(
    r"(?:(?:\b(?:not|cannot|never|no\s+longer|instead\s+of|rather\s+than|in\s+place\s+of|skipp(?:ed|ing)|avoid(?:ed|ing)?)"
    r"|n't|n’t)\W+(?:[^\W_]+\W+){0,2}|\bno\s+)$",
    re.I,
)
_HEDGED = re.compile(r"\b(?:not sure|unsure|maybe|perhaps|possibly|probably|might be|or so)\b", re.I)
"""Words that make a sentence a guess: a phrase said in it is not stated ("It's at Harbour Hall or
Pier 7, not sure which"; "maybe Harbour Hall")."""
_CLAUSE_END = re.compile(r"[.;!?\n]\s|[;!?\n]")
_LOW_CHANCE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:%|per\s?cent)\s+(?:chance|probability|risk)\s+(?:of\s+)?$", re.I)
"""A chance told before a phrase ("a 16% chance of rain"): under 50 % it does not state the
phrase."""
_CHANCE_OF = re.compile(r"\b(?:chance|probability|risk)\s+of\s+$", re.I)
_LOW_CHANCE_AFTER = re.compile(
    r"\s+(?:is|was|will\s+be|stands\s+at|at)\s+(?:only\s+|just\s+|about\s+|around\s+)?(\d+(?:\.\d+)?)\s*(?:%|per\s?cent)",
    re.I,
)
"""A chance told after its phrase ("the chance of rain is only 15%"): under 50 % it does not
state the phrase either."""
_PART_END = re.compile(r"[,:\u2013\u2014]|\s-\s")
"""Where a part of a sentence ends for a denial: a comma, colon or dash ("Don't worry, got your
message" denies nothing of "got your message"; "Not a problem - see you at 8" states "see you at
8")."""


_NOUN_IS = re.compile(
    r"\b([A-Za-z]+)'s\s+(?=(at|on|in|by|from|now|still|not|a|an|the|ready|over|off|late|early|here|there"
    r"|done|booked|cancell?ed|moved|due|open|closed|been|going|running|arriving|leaving)\b)",
    re.I,
)
"""A noun's "'s" that reads "is" or "has" (before a place, time, state or participle: "Dinner's at
eight", "the meeting's been moved"), not a possessive ("Ana's party"); the ``contractions`` package
leaves these as written."""


_AN_UNIT = re.compile(r"\ban?\s+(second|minute|hour|day|week|month|year)\b", re.I)
""""an hour", "a week": one unit ("in an hour" says "in 1 hour")."""
_GLUED_HALF = re.compile(r"(?<=\d)([ap])(\.?m\b\.?)", re.I)
"""A half of the day glued to its hour ("6pm" says "6 pm")."""


_UNIT_SHORT = re.compile(r"(?<=\d)\s*(mins?|hrs?|secs?)\b\.?", re.I)
"""A unit abbreviated after a number ("10 min", "2hrs")."""
_UNIT_LONG = {"min": "minutes", "mins": "minutes", "hr": "hours", "hrs": "hours", "sec": "seconds", "secs": "seconds"}
_SHORT = re.compile(
    r"(?<![^\W_])(?:pls|plz|thx|thnx|tmrw|tmw|tmr|tonite|appt|mtg|approx\.?)(?![^\W_])|&|\bw/(?=\s)", re.I
)
"""Abbreviations a text message uses for a word ("thx", "tmrw", "&", "w/")."""
_SHORT_LONG = {"pls": "please", "plz": "please", "thx": "thanks", "thnx": "thanks", "tmrw": "tomorrow", "tmw": "tomorrow",
               "tmr": "tomorrow", "tonite": "tonight", "appt": "appointment", "mtg": "meeting", "approx": "approximately",
               "approx.": "approximately", "&": "and", "w/": "with"}  # fmt: skip


def _unit_long(m: re.Match[str]) -> str:
    return " " + _UNIT_LONG[m[1].lower()]


def _short_long(m: re.Match[str]) -> str:
    return _SHORT_LONG[m[0].lower()]


def _glued(m: re.Match[str]) -> str:
    return f" {m[1]}{m[2]}"


def _noun_is(m: re.Match[str]) -> str:
    return f"{m[1]} {'has' if m[2].lower() == 'been' else 'is'} "


PLAIN_MAX_CHARS = 10_000
"""The longest text :func:`plain` rewrites (characters)."""


_DIGIT_WORDS = {
    **{
        w: str(i)
        for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"))
    },
    "oh": "0",
}
_SPELLED = re.compile(
    rf"\b(?i:{'|'.join(_DIGIT_WORDS)})(?:-(?i:{'|'.join(_DIGIT_WORDS)})){{2,}}\b"
    r"(?!\s+(?:in\s+the|at\s+night|tonight|this|[ap]\.?\s?m\b))"
)
"""A number spelled digit by digit ("six-six-three", "four-oh-two"): its digits ("663"); not a
time so spelled ("four-oh-nine in the afternoon")."""


@functools.lru_cache(maxsize=8192)
def plain(text: str) -> str:
    """``text`` with its contractions expanded and its number words as digits, so that two ways
    of writing the same words compare equal: "I'm fifteen minutes late" → "I am 15 minutes late";
    also "an hour" → "1 hour", "6pm" → "6 pm", a unit abbreviated after a number as its word
    ("10 min" → "10 minutes", "2hrs" → "2 hours") and a texting abbreviation as its word ("thx",
    "pls", "tmrw", "tonite", "appt", "mtg", "approx.", "&", "w/").

    Contractions by the ``contractions`` package (``fix``, standard forms only: "don't", "I'm";
    not the slang forms "dont", "im", which are also English words such as "shell"); number words
    by ``text2num``'s ``alpha2digit`` (English, every number: "one" → "1"). Typographic
    apostrophes count as apostrophes. Texts longer than :data:`PLAIN_MAX_CHARS` come back
    unchanged (no message or answer is that long; a fuzzed 1 MB body would take seconds). Pure;
    cached.
    """
    if len(text) > PLAIN_MAX_CHARS:
        return text
    import contractions
    from text_to_num import alpha2digit

    expanded = _NOUN_IS.sub(_noun_is, contractions.fix(text.replace("\u2019", "'"), slang=False))
    expanded = worded_numbers(expanded)
    expanded = _AN_UNIT.sub(r"1 \1", _GLUED_HALF.sub(_glued, expanded))
    return _SHORT.sub(_short_long, _UNIT_SHORT.sub(_unit_long, alpha2digit(expanded, "en", threshold=0)))


def says(text: Any, phrase: Any) -> bool:
    """Whether ``text`` states ``phrase``: the phrase's words in order, whole (case, accents,
    hyphens and punctuation between them aside, see :func:`words`; contractions and number words
    as :func:`plain` writes them: "do not forget" states "Don't forget", "fifteen" states "15"), at
    least once not denied in its clause, that is without "not", "cannot", "never", "no longer",
    "n't", "instead of", "rather than", "skipped" or "avoided" up to two words before it, nor
    after a chance under 50 % ("only a 16% chance of rain" does not state "rain"), nor "no" right before it ("It's not Team offsite", "I'm not at Central
    Station", "no showers" do not state the phrase; "not the window but the aisle" states
    "aisle"), nor in a sentence that makes it a guess ("maybe", "perhaps", "not sure"...: "It's
    at Harbour Hall or Pier 7, not sure which"). A phrase with no letter or digit is in every text."""
    phrase, text = str(phrase if phrase is not None else ""), str(text if text is not None else "")
    return _said(text, phrase) or _said(plain(text), plain(phrase))


_UNITS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
_TEENS = {"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
          "seventeen": 17, "eighteen": 18, "nineteen": 19}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50}
_HOUR_WORD = "|".join([*_UNITS, "ten", "eleven", "twelve"])
_MINUTE_WORD = (
    rf"oh[\s-]+(?:{'|'.join(_UNITS)})|{'|'.join(_TEENS)}|(?:{'|'.join(_TENS)})(?:[\s-]+(?:{'|'.join(_UNITS)}))?"
)
_WORD_TIME = re.compile(
    rf"\b(?P<h>{_HOUR_WORD})[\s-]+(?P<m>{_MINUTE_WORD})\b"
    r"(?=\s+(?:in\s+the\s+(?:morning|afternoon|evening)|at\s+night|tonight|[ap]\.?\s?m\b))"
    rf"|(?:(?<=\bat\s)|(?<=\bby\s)|(?<=\bfor\s)|(?<=\bfrom\s)|(?<=\buntil\s)|(?<=\btill\s))(?P<h2>{_HOUR_WORD})[\s-]+(?P<m2>{_MINUTE_WORD})\b(?![\s-]+(?:minutes?|hours?|euros?|dollars?|pounds?|people|items?)\b)",
    re.I,
)
"""A time in words: an hour word and minutes in words, before a part of the day ("six-twenty in
the evening", "four oh nine in the afternoon", "eleven-thirty-six at night") or after "at",
"by", "for"... ("at six-twenty")."""


def _word_number(said: str) -> int:
    """A number said in words ("thirty-six", "oh nine"), by ``text2num``; a leading "oh" is 0."""
    from text_to_num import text2num

    return int(text2num(" ".join(w for w in re.split(r"[\s-]+", said.lower()) if w != "oh"), "en"))


def _word_time(m: re.Match[str]) -> str:
    hour, minute = (m["h"], m["m"]) if m["h"] else (m["h2"], m["m2"])
    return f"{_word_number(hour)}:{_word_number(minute):02d}"


_COUNT_WORDS = {"a couple of": "2", "a dozen": "12", "half a dozen": "6", "a pair of": "2"}
_WORD_COUNT = re.compile(
    r"\b(?:half\s+a\s+dozen|a\s+couple\s+of|a\s+dozen|a\s+pair\s+of)\b(?=\s+(?:(?P<det>them|those|these|the|your|my|our|us)\b|\w))",
    re.I,
)
"""Counts said in words ("a couple of requests", "a dozen photos", "half a dozen"): as digits."""


def worded_numbers(text: str) -> str:
    """``text`` with the times and counts said in words that number words alone do not give as
    digits: "six-twenty in the evening" → "6:20 in the evening", "four oh nine in the
    afternoon" → "4:09 in the afternoon", "a couple of requests" → "2 requests", "half a dozen"
    → "6", "a dozen" → "12", a number spelled digit by digit → its digits ("six-six-three" →
    "663")."""
    text = _SPELLED.sub(lambda m: "".join(_DIGIT_WORDS[w.lower()] for w in m[0].split("-")), text)
    text = _WORD_TIME.sub(_word_time, text)
    return _WORD_COUNT.sub(
        lambda m: (
            _COUNT_WORDS[" ".join(m[0].lower().split())] + (" of" if m[0].lower().endswith(" of") and m["det"] else "")
        ),
        text,
    )


_NUMBER_TEXT = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
    " seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand"
)
_NUMBER_WORDS = frozenset(_NUMBER_TEXT.split())
"""Words that keep their form in a phrase: "eight" is not "eighty"."""


@functools.lru_cache(maxsize=4096)
def _phrase_pattern(parts: tuple[str, ...]) -> str:
    """The regex of a phrase's words in order: separated by non-word characters, and a compound
    written open or closed alike ("lunch time" ~ "lunchtime", "check-in" ~ "checkin"): two
    words of letters may join, and a word of eight letters or more may split where three or
    more letters stand on each side. Numbers stay apart ("10 15" is not "1015"). A word of
    three letters or more stands for its word forms: singular or plural ("minutes" ~ "minute",
    "ticket" ~ "tickets") and the adjective in -y ("fog" ~ "foggy", "wind" ~ "windy", "ice" ~
    "icy"); number words stay as written ("eight" is not "eighty")."""

    def split(p: str) -> str:
        if len(p) < 8:
            return re.escape(p)
        return p[:3] + "".join(f"[\\s-]?{ch}" for ch in p[3:-3]) + "[\\s-]?" + p[-3:]

    def part(p: str) -> str:
        if not p.isalpha():
            return re.escape(p)
        if len(p) < 3 or p in _NUMBER_WORDS:
            return split(p)
        base = p[:-1] if len(p) >= 5 and p.endswith("s") and not p.endswith("ss") else p
        if base.endswith(("y", "s")):
            return split(base) + "(?:s|es)?"
        forms = split(base) + f"(?:s|es|y|{base[-1]}y)?"
        return f"(?:{forms}|{re.escape(base[:-1])}y)" if base.endswith("e") else forms

    out = part(parts[0])
    for a, b in itertools.pairwise(parts):
        out += (r"[\W_]*" if a[-1].isalpha() and b[0].isalpha() else r"[\W_]+") + part(b)
    return out


def _said(text: str, phrase: str) -> bool:
    return _said_at(text, phrase) is not None


def _said_at(text: str, phrase: str) -> tuple[int, int] | None:
    """Where ``phrase`` is first stated in ``_bare(text)`` (see :func:`says`): its span, or None
    (a phrase with no word: the empty span at 0)."""
    parts = words(phrase).split()
    if not parts:
        return (0, 0)
    body = _bare(text)
    # whole words, and a number whole too: "at 8" is not in "at 8:30" nor "4" in "4.5"
    pattern = r"(?<![^\W_])(?<!\d[:.,])" + _phrase_pattern(tuple(parts)) + r"(?![^\W_])(?![:.,]\d)"
    for m in re.finditer(pattern, body, re.I):
        ends = [e.end() for e in _CLAUSE_END.finditer(body, 0, m.start())]
        start = ends[-1] if ends else 0
        parts_end = [e.end() for e in _PART_END.finditer(body, start, m.start())]
        after = _CLAUSE_END.search(body, m.end())
        rest = body[m.end() : after.start() if after else len(body)]
        low = _LOW_CHANCE.search(body, max(0, m.start() - 40), m.start())
        if low is not None and float(low[1]) < 50:
            continue
        low = (
            _LOW_CHANCE_AFTER.match(body, m.end())
            if _CHANCE_OF.search(body, max(0, m.start() - 30), m.start())
            else None
        )
        if low is not None and float(low[1]) < 50:
            continue  # "the chance of rain is only 15%"
        if not _DENIED_BEFORE.search(body[parts_end[-1] if parts_end else start : m.start()]) and not _HEDGED.search(
            body[start : m.start()] + " " + rest
        ):
            return m.span()
    return None


_FRAMING_TEXT = """hi hey hello hiya heya yo dear morning good afternoon evening night thanks thank you ty cheers love lots
    xx xo xoxo x bye see soon later talk speak take care best regards kind warm wishes just quick note reminder
    fyi ps ok okay sure please message from here this is it so oh and a the have great nice lovely day one
    weekend all hope well i am are fine mom mum dad sis bro grandma grandpa babe honey dear sweetie sorry
    apologies"""
FRAMING = frozenset(_FRAMING_TEXT.split())
"""The words a text may wrap a dictated message in (greetings, thanks, sign-offs, "see you",
"take care", a pet name): :func:`dictates` allows these and the names of the user's contacts
around the dictated words, and nothing else."""


_SIGNED = re.compile(
    r"(?<=[\W_])(?:best|cheers|thanks|thank you|regards|kind regards|best wishes|love|warmly|take care|talk soon"
    r"|see you)[\s,.!]*\n?\s*[A-Z][\w'-]*[\s.!]*$",
    re.I,
)
"""A sign-off and the writer's name at the end of a text ("Best,\nOskar", "Thanks! Ana")."""


_SIGNED_NAME = re.compile(r"\n\s*(?P<name>[A-Z][a-z'-]+)[\s.!]*$")
"""A first name alone on the last line of a text: how a mail is signed ("...\n\nTeresa")."""


def _given_name(word: str) -> bool:
    """Whether ``word`` is a given name of the world's name lists (:func:`~phoneenv.tasks.world.given_names`)."""
    from phoneenv.tasks.world import given_names  # Faker's lists: loaded on first use

    return word.casefold() in given_names()


_SUBJECT_START = re.compile(r"\s*(?:I\s+am|I\s+will|we\s+are|we\s+will|it\s+is)\s+(?=\w)", re.I)
"""The subject and auxiliary a text may leave out before the dictated words, as texts do
("Running late" for "I am running late", "Be there at 8" for "I will be there at 8")."""
_POLITE = ((re.compile(r"\bcould\s+you\b", re.I), "can you"), (re.compile(r"\bwould\s+you\b", re.I), "will you"))
_ON_THE_HOUR = re.compile(r"\b(\d{1,2}):00\b")


def _spoken(text: str) -> str:
    """``text`` with a request's politeness and a whole hour's minutes in one form: "could you" →
    "can you", "would you" → "will you", "6:00" → "6" (a dictated "at 6" is "at 6:00")."""
    for rx, to in _POLITE:
        text = rx.sub(to, text)
    return _ON_THE_HOUR.sub(r"\1", text)


def _unended(text: str) -> str:
    """``text`` without the full stops, "!", "?" and ellipses that end it."""
    return text.rstrip(" .!?\u2026")


def dictates(text: Any, phrase: Any, names: Callable[[str], bool] = lambda w: False) -> bool:
    """Whether ``text`` is the dictated ``phrase``, trivially re-worded, with no fact or
    commitment added: it :func:`says` the phrase (word forms, abbreviations, number words,
    contractions, punctuation and letter case aside), and every other word of the text is a
    :data:`FRAMING` word or a name (``names(word)``, the word case-folded: the contacts' names);
    a sign-off may end it with the writer's name ("Best,\nOskar").
    "Hi Sam! Running 15 mins late, see you soon x" dictates "Running 15 minutes late"; so do
    "Sorry, running 15 min late" (the subject "I am" left out), "Could you call me?" for "Can you
    call me?" and "at 6:00" for "at 6"; "Running 15
    minutes late. Unfortunately I can't make Saturday though" (an added refusal) and "Running 15
    minutes late, there by 9" (an added time) do not."""
    if not isinstance(text, str):
        return False
    phrase = str(phrase if phrase is not None else "")
    if (m := _SIGNED.search(text)) and words(m.group()).split()[-1] not in FRAMING:
        text = text[: m.start()]  # a sign-off with a name, not two sign-offs ("talk soon. Cheers!")
    elif (m := _SIGNED_NAME.search(text)) and _given_name(m["name"]):
        text = text[: m.start()]  # a mail signed with the writer's first name alone on its last line
    body_p, said_p = _spoken(plain(text)), _spoken(plain(phrase))
    tries = [(text, phrase), (body_p, said_p)]
    if m := _SUBJECT_START.match(said_p):  # "Running 15 min late" for "I'm running 15 minutes late"
        tries.append((body_p, said_p[m.end() :]))
    for body, said in tries:
        span = _said_at(body, said)
        if span is not None:
            bare = _bare(body)
            rest = words(plain(bare[: span[0]] + " " + bare[span[1] :])).split()
            return all(w in FRAMING or names(w) for w in rest)
    return False


def _dictates(value: Any, phrase: Any, ctx: Context) -> bool:
    def named(word: str) -> bool:
        return any(f" {word} " in words(c.get("name")) for c in ctx.contacts)

    return dictates(value, phrase, named)


def _digits(x: Any) -> str:
    return "".join(ch for ch in str(x) if ch.isdigit())


def _has(value: Any, item: Any) -> bool:
    if not isinstance(value, (list, tuple)):
        return False
    if isinstance(item, str):
        return any(isinstance(v, str) and norm(v) == norm(item) for v in value)
    return item in value


_RE_PHONE_RUN = re.compile(r"(?<![\w+])\+?\d(?:[\s\-().]{0,2}\d){8,}")
"""A phone number written in a text: nine digits or more, spaces, dashes, dots or brackets
between them (dates and times are shorter; a comma ends it)."""


def _phones(value: Any, numbers: Any) -> bool:
    """``{"phones": [n, ...]}``: the text writes each of these phone numbers and no other (each
    run of nine digits or more is one of them by :func:`~phoneenv.tasks.identity.same_number`:
    "+1 929 741 6976" is not "+1 829 741 6976", and a second number beside it fails)."""
    if not isinstance(value, str):
        return False
    wanted = [numbers] if isinstance(numbers, str) else list(numbers)
    found = [m.group() for m in _RE_PHONE_RUN.finditer(value)]
    return all(any(same_number(f, n) for n in wanted) for f in found) and all(
        any(same_number(f, n) for f in found) for n in wanted
    )


_REPLY = re.compile(r"^\s*(?:re|aw|sv|antw|odp|r)\s*(?:\[\d+\])?\s*:\s*", re.I)
_FORWARD = re.compile(r"^\s*(?:fwd?|wg|tr|rv|vs|doorst)\s*(?:\[\d+\])?\s*:\s*", re.I)


def _subject_parts(text: str) -> tuple[str, str]:
    """A mail subject as (kind, topic): kind ``"re"`` for a reply prefix (Re:, RE:, AW:, Sv:...,
    repeated or numbered: "Re[2]:"), ``"fwd"`` for a forward (Fwd:, FW:, WG:...), ``""`` for
    none; topic as words (case, punctuation and a trailing "?" or "!" aside)."""
    kind = ""
    while True:
        if m := _REPLY.match(text):
            kind, text = kind or "re", text[m.end() :]
        elif m := _FORWARD.match(text):
            kind, text = kind or "fwd", text[m.end() :]
        else:
            return kind, words(text).strip()


def same_subject(value: Any, expected: str) -> bool:
    """Whether mail subject ``value`` is ``expected`` as a mail client writes it: the same kind
    of prefix (a reply's "Re:" may be "RE:", "AW:", "Re[2]:"; a forward's "Fwd:" "FW:" or
    "WG:"), the same topic in words (case, spaces and punctuation aside: "Re: Dinner on
    Saturday" for "Re: Dinner on Saturday?")."""
    return isinstance(value, str) and _subject_parts(value) == _subject_parts(expected)


OPERATORS = {
    "eq": lambda v, a: v == a,
    "subject": same_subject,
    "ne": lambda v, a: v != a,
    "in": lambda v, a: v in a,
    "iequals": lambda v, a: v is not None and _unended(norm(v)) == _unended(norm(a)),
    "icontains": lambda v, a: v is not None and words(a).strip() in words(v),
    "says": lambda v, a: isinstance(v, str) and says(v, a),
    "startswith": lambda v, a: isinstance(v, str) and v.startswith(a),
    "gte": lambda v, a: v is not None and type(v) is type(a) and v >= a,
    "lte": lambda v, a: v is not None and type(v) is type(a) and v <= a,
    "has": _has,
    "len": lambda v, a: isinstance(v, (list, tuple, str)) and len(v) == a,
    "seq": lambda v, a: isinstance(v, (list, tuple)) and list(v) == list(a),
    "number": lambda v, a: (
        v is not None
        and len(_digits(a)) >= 3
        and _digits(v)[-9:] == _digits(a)[-9:]
        and (len(_digits(a)) < 7 or same_number(v, a))
    ),
    "regex": lambda v, a: isinstance(v, str) and searches(a, v),
    "phones": _phones,
}


@functools.lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def searches(pattern: str, text: str) -> bool:
    """Whether the regular expression ``pattern`` is found in ``text``, case-insensitive, as
    written or with the accents of both dropped (:func:`_bare`: combining marks only, so the
    pattern's syntax is untouched): ``searches("Sao Paulo", "São Paulo")`` and ``searches("Zoë",
    "Zoe")`` hold. The ``regex`` operator and an answer's ``pattern`` match this way. Compiled
    patterns are cached; raises ``re.error`` for a pattern that does not compile."""
    if _regex(pattern).search(text):
        return True
    if text.isascii() and pattern.isascii():
        return False
    return _regex(_bare(pattern)).search(_bare(text)) is not None


def _items(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [] if value is None else [value]


def _person(value: Any, cid: Any, ctx: Context) -> bool:
    return contact_ids(value, ctx.contacts) == {cid}


def _has_person(value: Any, cid: Any, ctx: Context) -> bool:
    return any(contact_ids(v, ctx.contacts) == {cid} for v in _items(value))


def _people(value: Any, cids: Any, ctx: Context) -> bool:
    found: set[str] = set()
    for v in _items(value):
        ids = contact_ids(v, ctx.contacts)
        if len(ids) != 1:
            return False
        found |= ids
    return found == set(cids)


def _ref(value: Any, sel: Any, ctx: Context) -> bool:
    """``{"ref": {"table": "notes.notes", "where": {...}, "change": "created"}}``: the value is
    the id of a record of ``table`` in the end state that matches ``where`` (one created during
    the episode, with ``"change": "created"``); a list value passes when it holds such an id.
    A criterion names a record the episode creates by what it holds, not by a guessed id.

    Raises ``ValueError`` for a selector without a ``table`` or with another ``change``."""
    if not isinstance(sel, Mapping) or not isinstance(sel.get("table"), str):
        raise ValueError(f"ref needs {{'table': 'app.table', 'where': {{...}}}}, not {sel!r}")
    change = sel.get("change", "present")
    if change not in ("present", "created"):
        raise ValueError(f"ref change must be 'present' or 'created', not {change!r}")
    old = ctx.before.get(sel["table"], {}) if change == "created" else {}
    where = sel.get("where", {})
    ids = {rid for rid, rec in ctx.tables.get(sel["table"], {}).items() if rid not in old and match(rec, where, ctx)}
    return any(isinstance(v, str) and v in ids for v in (value if isinstance(value, (list, tuple)) else [value]))


CONTEXT_OPERATORS: dict[str, Callable[[Any, Any, Context], bool]] = {
    "person": _person,
    "has_person": _has_person,
    "people": _people,
    "dictates": _dictates,
    "ref": _ref,
}
"""Operators that need a :class:`Context` (contacts, clock) besides the value and argument."""


def register_operator(name: str, fn: Callable[[Any, Any, Context], bool]) -> None:
    """Add a context operator ``name`` (``fn(value, argument, ctx) -> bool``) to
    :data:`CONTEXT_OPERATORS`. The typed fact operators ``states`` and ``consistent`` are
    registered by :mod:`phoneenv.tasks.answers`, which reads the facts (the package
    :mod:`phoneenv.tasks` imports it, so they are there whenever this module is).

    Raises ``ValueError`` for a name already taken by another operator."""
    if name in OPERATORS or CONTEXT_OPERATORS.get(name, fn) is not fn:
        raise ValueError(f"operator {name!r} is taken")
    CONTEXT_OPERATORS[name] = fn


_EMPTY = Context()


def check(value: Any, cond: Any, ctx: Context | None = None) -> bool:
    """Whether ``value`` satisfies one condition (literal or operator object); ``ctx`` serves
    the identity and fact operators (no contacts without it, so ``person`` never holds).

    Raises ``ValueError`` for an unknown operator."""
    if isinstance(cond, dict):
        for op, arg in cond.items():
            if op == "any":
                ok = any(check(value, alt, ctx) for alt in arg)
            elif op == "not":
                ok = not check(value, arg, ctx)
            elif op in CONTEXT_OPERATORS:
                ok = CONTEXT_OPERATORS[op](value, arg, ctx or _EMPTY)
            elif op in OPERATORS:
                ok = OPERATORS[op](value, arg)
            else:
                known = sorted({*OPERATORS, *CONTEXT_OPERATORS, "any", "not"})
                raise ValueError(f"unknown operator {op!r}; known: {known}")
            if not ok:
                return False
        return True
    if isinstance(cond, bool) or isinstance(value, bool):
        return type(value) is type(cond) and value == cond
    return value == cond


def match(record: Mapping[str, Any], where: Mapping[str, Any], ctx: Context | None = None) -> bool:
    """Whether ``record`` satisfies every condition of ``where`` (missing fields are None)."""
    return all(check(record.get(name), cond, ctx) for name, cond in where.items())
