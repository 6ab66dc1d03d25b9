"""Verdict probes generated for every task from what its reference plan tells, both ways.

From the reference plan's final answer and the texts it writes (message bodies, notes, event
titles: :data:`~phoneenv.tasks.grounding.AUTHORED_KEYS`), :func:`claim_probes` makes, per claim
type, plans that must **fail** (one told value changed to one the world does not hold) and plans
that must **pass** (the same answer said another way)::

    must fail                                      must pass
    time      an hour later                        answer in 12-hour form ("4:30 pm")
    date      a day later (weekday kept right)     answer's times spoken ("half past four in
    weekday   the weekday beside a date swapped      the afternoon", "quarter to nine", "noon")
    money     the amount 10% + 1 up; the currency    answer wrapped in pleasantries
              swapped                              answer plus a true fact ("It's <today>.")
    temperature  the unit swapped (°C ↔ °F)        answer's sentences in reverse order
    count     a count one more ("3 people")
    percent   a percentage 7 points up ("87%")
    distance  a distance doubled and one more ("2.6 km" for 0.8)
    duration  minutes doubled and ten more ("50 minutes" for 20)
    person    a contact's surname changed ("Stanley Potter")
    email     the address's domain changed         a dictated text greeted, thanked, signed,
    phone     the number's last digit changed        abbreviated ("Hi! ... 15 mins ... thx x")
    switch    a setting, alarm or device told on       a switch the episode changed told in
              told off (and back); one the episode   its end state ("... The Ceiling light
              changed told in the other state        is off now.")
    name      a name told of an act swapped for
              another name of the world
    code      a booking code told with one         the code told in lower case
              character changed
    period    how often told the other way round
              ("every day" for "just once")
    commitment  a text to a person with a promise  a text to a person with a promise
              the user never gave added ("I'll       made of no new content ("I'll let
              bring the umbrellas too.")             you know when I'm there.")
    dictation a dictated text with a commitment
              added ("Unfortunately I can't make
              it though.")
    status    a status told as another ("I have
              scheduled the bill" for "paid",
              "cancelled" for "booked", "delivered"
              for "on its way")
    undone    the answer reports the task's first
              action failed ("Sorry, I couldn't
              send it."): the undone guard

A must-fail value is generated only when the episode's grounds hold it nowhere
(:meth:`~phoneenv.tasks.grounding.Grounds.holds`): a value the world holds somewhere (another
alarm at that hour) is wrong only by aboutness, which support alone cannot tell; such cases are
counted as ``held`` and not played. Must-pass paraphrases of the answer are generated only where
the task's own answer criteria read the answer loosely (no ``equals``, and for the true extra
fact, no date criterion). :func:`~phoneenv.tasks.validate.prove` plays them all and
``phoneenv tasks validate`` reports, per claim type, how many were generated, held and rejected
or accepted.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from phoneenv.contract import AnswerCriterion, CompositeCriterion, Criterion, TaskSpec, ToolCall
from phoneenv.tasks.answers import claims, scan
from phoneenv.tasks.grounding import (
    AUTHORED_KEYS,
    NO_TOOL,
    RE_CODE_TOLD,
    RE_DISTANCE,
    RE_FULL_NAME,
    RE_SIZE,
    STATUS_FAMILIES,
    Grounds,
    code_key,
    count_claims,
    distance_claims,
    distance_number,
    normal_phone,
    percent_claims,
    period_claims,
    phone_region,
    size_key,
    status_claims,
    temperature_claims,
)
from phoneenv.tasks.identity import contact_ids
from phoneenv.tasks.names import held_by, told_names
from phoneenv.tasks.predicates import Context, plain, says, words
from phoneenv.tasks.switches import changed_switches, switch_claims
from phoneenv.tasks.undone import undone_answer
from phoneenv.tasks.world import given_names

__all__ = ["CLAIM_PROBE_TYPES", "ClaimProbe", "claim_probes"]

CLAIM_PROBE_TYPES = (
    "time", "date", "weekday", "money", "currency", "temperature", "count", "percent", "distance", "duration", "person",
    "email", "phone",
    "status", "switch", "name", "code", "commitment", "period", "size", "place", "dictation", "undone", "paraphrase",
)  # fmt: skip
"""The kinds of generated probe, in report order (``paraphrase``: the must-pass ones)."""

_RE_EMAIL = re.compile(r"[\w.+-]+@([\w-]+(?:\.[\w-]+)+)")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_OTHER_SURNAMES = ("Potter", "Fischer", "Walsh")
"""Surnames for a person told wrongly (surnames of the world: see :func:`world.surnames`)."""
_SWAP_CURRENCY = {"USD": "EUR", "EUR": "USD", "GBP": "USD", "AUD": "GBP", "JPY": "USD", "CHF": "EUR"}


_SIZES = ("XXS", "XS", "S", "M", "L", "XL", "XXL")


def _other_size(size: str, listed: Iterable[str]) -> str:
    """A size other than ``size``: one the shop lists, else the next letter or number size."""
    for other in sorted(listed):
        if other != size:
            return other
    if size in _SIZES:
        i = _SIZES.index(size)
        return _SIZES[i + 1] if i + 1 < len(_SIZES) else _SIZES[i - 1]
    try:
        return f"{float(size) + 1:g}"
    except ValueError:
        return "M" if size != "M" else "L"


_FLIP = {
    "on": "off", "off": "on", "enabled": "disabled", "disabled": "enabled", "active": "inactive", "inactive": "active",
    "activated": "deactivated", "deactivated": "activated", "running": "off", "light": "dark", "dark": "light",
}  # fmt: skip
_LAST_STATE = re.compile(
    r"\b(?:on|off|enabled|disabled|active|inactive|activated|deactivated|running)\b(?!.*\b(?:on|off|enabled|disabled)\b)"
    r"|\b(?:light|dark)(?=\s+(?:mode|theme))",
    re.I,
)
"""The state word of a switch claim's span (its last one; a theme's "light"/"dark")."""


@dataclass(frozen=True)
class ClaimProbe:
    """A generated probe: its claim ``type`` (:data:`CLAIM_PROBE_TYPES`), the verdict it must
    get (``expect``: ``"pass"`` or ``"fail"``), a ``name`` saying what changed, and the whole
    ``plan``; ``held`` marks a must-fail candidate whose new value the grounds hold (not played)."""

    type: str
    expect: str
    name: str
    plan: list[ToolCall]
    held: bool = False


def _texts(plan: Sequence[ToolCall]) -> list[tuple[int, str, str]]:
    """(step, argument, text) of the root answer and each authored text of ``plan``."""
    out = []
    for i, c in enumerate(plan):
        for k, v in c.arguments.items():
            if isinstance(v, str) and v.strip() and (k in AUTHORED_KEYS or (k == "answer" and i == len(plan) - 1)):
                out.append((i, k, v))
    return out


def _with(plan: Sequence[ToolCall], step: int, key: str, text: str) -> list[ToolCall]:
    out = list(plan)
    out[step] = ToolCall(name=plan[step].name, arguments={**plan[step].arguments, key: text})
    return out


def _answer_criteria(criteria: Sequence[Criterion]) -> list[AnswerCriterion]:
    out: list[AnswerCriterion] = []
    for c in criteria:
        if isinstance(c, CompositeCriterion):
            out.extend(_answer_criteria(c.criteria))
        elif isinstance(c, AnswerCriterion):
            out.append(c)
    return out


def _put(original: str, text: str, a: int, b: int, new: str) -> str:
    """``original`` with the span ``text[a:b]`` (``text``: ``original`` with number words as
    digits, which claim offsets index) replaced by ``new``; in ``text`` when ``original`` does not
    hold the span as written."""
    at = original.find(text[a:b])
    return original[:at] + new + original[at + b - a :] if at >= 0 else text[:a] + new + text[b:]


def _hm(minutes: int) -> str:
    return f"{minutes // 60 % 24:02d}:{minutes % 60:02d}"


_NUMBER = ("twelve", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_MINUTES = {5: "five", 10: "ten", 15: "quarter", 20: "twenty", 25: "twenty-five", 30: "half"}


def _part_of_day(h: int) -> str:
    """The part of the day hour ``h`` is said in (as the answer reader reads it back)."""
    if h < 4 or h >= 22:
        return "at night"
    return "in the morning" if h < 12 else "in the afternoon" if h < 17 else "in the evening"


def _spoken(hm: str) -> str | None:
    """``hm`` (``HH:MM``) as said aloud, with the part of the day: "half past four in the
    afternoon", "quarter to nine in the evening", "noon"; None for a minute not a multiple of five
    or a "to" form whose next hour falls in another part of the day."""
    h, m = int(hm[:2]), int(hm[3:])
    if m % 5:
        return None
    if m == 0:
        return {0: "midnight", 12: "noon"}.get(h, f"{_NUMBER[h % 12]} o'clock {_part_of_day(h)}")
    if m <= 30:
        return f"{_MINUTES[m]} past {_NUMBER[h % 12]} {_part_of_day(h)}"
    if (h + 1) % 24 in (0, 12) or _part_of_day(h) != _part_of_day((h + 1) % 24):
        return None
    return f"{_MINUTES[60 - m]} to {_NUMBER[(h + 1) % 12]} {_part_of_day(h)}"


def _spoken_times(original: str, ctx: Context) -> str:
    """``original`` with each ``HH:MM`` time it tells (not negated, not a range) spoken
    (:func:`_spoken`); unchanged where none can be."""
    text = scan(original, ctx).text
    out, cursor = original, 0
    for c in claims(original, "time", ctx):
        span = text[c.start : c.end]
        at = out.find(span, cursor)
        said = _spoken(span) if re.fullmatch(r"\d{2}:\d{2}", span) else None
        if not c.negated and c.ends() is None and said and at >= 0:
            out = out[:at] + said + out[at + len(span) :]
            cursor = at + len(said)
    return out


def _conditions(criteria: Sequence[Criterion]) -> list[tuple[str, object]]:
    """Every ``(key, value)`` pair anywhere in ``criteria`` (their JSON form)."""
    out: list[tuple[str, object]] = []
    stack: list[tuple[str, object]] = [("", [c.model_dump() for c in criteria])]
    while stack:
        key, x = stack.pop()
        out.append((key, x))
        if isinstance(x, dict):
            stack.extend(x.items())
        elif isinstance(x, (list, tuple)):
            stack.extend((key, v) for v in x)
    return out


def _literals(criteria: Sequence[Criterion]) -> set[str]:
    """Every string ``criteria`` hold (the texts some criterion compares as they are)."""
    return {v for _, v in _conditions(criteria) if isinstance(v, str)}


def _dictations(criteria: Sequence[Criterion]) -> list[str]:
    """The texts ``criteria`` require dictated (``{"dictates": text}`` anywhere in them)."""
    return [v for k, v in _conditions(criteria) if k == "dictates" and isinstance(v, str)]


_MESSAGE_KEYS = ("body", "text", "message", "content")
"""The arguments that hold a text to a person (a message's or mail's body)."""
_RECIPIENT_KEYS = ("to", "message_id")
"""Arguments that make a call's text one to a person (a recipient, the mail replied to); a
note's body or a reminder's content is the user's own."""
_PROMISE = "I'll bring the umbrellas for everyone too."
"""A promise no task's user gives (a task whose user or records speak of umbrellas does not
play it: counted as held)."""
_LIGHT_PROMISE = "I'll let you know when I'm there."
"""A promise of no new content: free speech in a text to a person."""


_OTHER_PERIOD = {
    "daily": ("once", "just once"), "once": ("daily", "every day"), "weekdays": ("daily", "every day"),
    "week": ("month", "every month"), "month": ("week", "every week"), "year": ("month", "every month"),
}  # fmt: skip
"""A period told another way round: the period and the words a must-fail ``period`` probe
tells instead."""


def _other_code(code: str, held: frozenset[str]) -> str:
    """``code`` with its last digit changed (to the first digit that makes a code ``held`` does
    not hold, as :func:`~phoneenv.tasks.grounding.code_key`)."""
    at = max(i for i, ch in enumerate(code) if ch.isdigit())
    for d in range(1, 10):
        new = code[:at] + str((int(code[at]) + d) % 10) + code[at + 1 :]
        if code_key(new) not in held:
            return new
    return code[:at] + "X" + code[at + 1 :]


_OTHER_STATUS = {
    "paid": "scheduled", "scheduled": "paid", "booked": "cancelled", "cancelled": "booked", "ordered": "cancelled",
    "moved": "cancelled", "sent": "drafted", "drafted": "sent", "texted": "e-mailed", "emailed": "texted",
    "called": "texted", "requested": "paid", "declined": "paid", "pending": "paid", "deleted": "archived",
    "archived": "deleted", "renamed": "deleted", "locked": "unlocked", "unlocked": "locked", "pinned": "unpinned",
    "unpinned": "pinned", "subscribed": "unsubscribed", "unsubscribed": "subscribed", "blocked": "unblocked",
    "unblocked": "blocked", "favorite": "unfavourited", "unfavorite": "favourited", "waitlisted": "booked",
    "delivered": "cancelled", "shipped": "delivered", "on_the_way": "delivered", "out_for_delivery": "delivered",
}  # fmt: skip
"""A status told another way: the family a planner tells and the word a must-fail ``status`` probe
tells in its place ("I have paid the bill" → "I have scheduled the bill"); families with no
counterpart a sentence keeps its grammar with ("marked it as read", "played") make no probe."""


_STATUS_PHRASES = frozenset({"on_the_way", "out_for_delivery", "waitlisted"})
"""Families told by a phrase that a probe swaps whole ("is on its way" → "is delivered")."""


def _other_status(word: str) -> str | None:
    """The family of ``word`` (a status word :func:`status_claims` reads) told another way, or None."""
    found = status_claims(f"I have {word.lower()}.")
    return found[0][0] if found else None


def _twelve(hm: str) -> str:
    h, m = int(hm[:2]), hm[3:]
    return f"{h % 12 or 12}:{m} {'am' if h < 12 else 'pm'}"


def claim_probes(task: TaskSpec, g: Grounds, ctx: Context) -> list[ClaimProbe]:
    """The generated probes of ``task`` (see the module docstring), from its reference plan and
    the grounds ``g`` of that plan's episode (``env.episode_grounds()``); ``ctx``: its contacts
    and clock. At most one must-fail probe per claim type and text."""
    plan = list(task.reference_plan or [])
    if not plan or plan[-1].name != "finish":
        return []
    region = phone_region(tuple(str(c.get("phone") or "") for c in itertools.islice(ctx.contacts, 20)))
    out: list[ClaimProbe] = []
    if undone := undone_answer(task):
        out.append(ClaimProbe("undone", "fail", f"answer: {undone!r}", _with(plan, len(plan) - 1, "answer", undone)))
    exempt = set(task.grounding_exempt)

    def where(step: int, key: str) -> str:
        return "answer" if key == "answer" else f"{plan[step].name} {key}"

    def fail(type: str, step: int, key: str, text: str, new: str, held: bool) -> None:
        out.append(ClaimProbe(type, "fail", f"{where(step, key)}: {new!r}", _with(plan, step, key, text), held))

    for step, key, original in _texts(plan):
        text = scan(original, ctx).text  # number words as digits: the spans below index it
        if "time" not in exempt:
            for c in claims(original, "time", ctx):
                if c.negated or c.ends() is not None or not re.fullmatch(r"\d{1,2}:\d{2}", text[c.start : c.end]):
                    continue
                new = _hm(int(c.value[:2]) * 60 + int(c.value[3:]) + 60)
                fail("time", step, key, _put(original, text, c.start, c.end, new), new, g.holds("time", new))
                break
        if "date" not in exempt:
            for c in claims(original, "date", ctx):
                span = text[c.start : c.end]
                if c.negated or c.ends() is not None or not re.search(r"\d", span):
                    continue
                day = dt.date.fromisoformat(c.value)
                if re.match(r"[A-Za-z]{3}", span):  # the weekday beside the date swapped: always false
                    wrong = WEEKDAYS[(day.weekday() + 1) % 7]
                    swapped = re.sub(r"^[A-Za-z]+", wrong, span)
                    fail("weekday", step, key, _put(original, text, c.start, c.end, swapped), swapped, False)
                later = day + dt.timedelta(days=1)
                new = later.isoformat() if re.search(r"\d{4}-\d{2}", span) else f"{later:%A} {later.day} {later:%B}"
                fail(
                    "date",
                    step,
                    key,
                    _put(original, text, c.start, c.end, new),
                    new,
                    g.holds("date", later.isoformat()),
                )
                break
        if "money" not in exempt:
            for c in claims(original, "money", ctx):
                if c.negated or not c.unit or not isinstance(c.value, float):
                    continue
                cents = bool(re.search(r"\d[.,]\d{2}\b", text[c.start : c.end]))
                amount = round(c.value * 1.1 + 1, 2) if cents else float(round(c.value * 1.1 + 1))
                new = f"{amount:.2f} {c.unit}" if cents else f"{amount:.0f} {c.unit}"
                fail(
                    "money", step, key, _put(original, text, c.start, c.end, new), new, g.holds("money", amount, c.unit)
                )
                other = _SWAP_CURRENCY.get(c.unit)
                if other is not None:
                    num = re.search(r"\d[\d.,\u00a0\u202f]*\d|\d", text[c.start : c.end])
                    new = f"{num.group() if num else c.value} {other}"  # the amount as written, another currency
                    held = g.holds("money", c.value, other)
                    fail("currency", step, key, _put(original, text, c.start, c.end, new), new, held)
                break
        if "temperature" not in exempt:
            for span, v, unit, neg in temperature_claims(text):
                if neg or not unit or "°" not in span:
                    continue
                other = "F" if unit == "C" else "C"
                new = re.sub(r"°\s*[CF]", f"°{other}", span)
                at = text.find(span)
                fail(
                    "temperature",
                    step,
                    key,
                    _put(original, text, at, at + len(span), new),
                    new,
                    g.holds("temperature", v, other),
                )
                break
        if "count" not in exempt and plain(original) == original:  # counts as digits: spans index it as written
            for n, a, b, _ in count_claims(original):
                new = str(n + 1) + original[a:b][len(str(n)) :]
                fail("count", step, key, original[:a] + new + original[b:], new, g.holds("count", n + 1))
                break
        if "percent" not in exempt and plain(original) == original:
            for n, a, b in percent_claims(original):
                m = n + 7 if n < 93 else n - 7
                new = str(m) + original[a:b][len(str(n)) :]
                fail("percent", step, key, original[:a] + new + original[b:], new, g.holds("percent", m))
                break
        if "distance" not in exempt:
            for m in RE_DISTANCE.finditer(original):
                n = distance_number(m["n"])
                new_n = f"{float(n) * 2 + 1:.{len(n.partition('.')[2])}f}"
                new = original[m.start() : m.start("n")] + new_n + original[m.end("n") : m.end()]
                held = g.holds("distance", distance_claims(new)[0][1:])
                fail("distance", step, key, original[: m.start()] + new + original[m.end() :], new.strip(), held)
                break
        if "duration" not in exempt:
            for c in claims(original, "duration", ctx):
                span = text[c.start : c.end]
                m = re.fullmatch(r"(\d{1,3})(\s*-?\s*(?:min|mins|minutes?|minute))", span)
                if c.negated or m is None or original.find(span) < 0:
                    continue
                n = int(m[1]) * 2 + 10
                new = f"{n}{m[2]}"
                held = any(abs(n - x) <= 1 for x in g.durations())
                fail("duration", step, key, _put(original, text, c.start, c.end, new), new, held)
                break
        if "person" not in exempt and ctx.contacts:
            for m in RE_FULL_NAME.finditer(original):
                if len(contact_ids(m[0], ctx.contacts)) != 1 or m[1].casefold() not in given_names():
                    continue
                other = next(
                    (x for x in _OTHER_SURNAMES if not contact_ids(f"{m[1]} {x}", ctx.contacts)), _OTHER_SURNAMES[0]
                )
                new = f"{m[1]} {other}"
                fail("person", step, key, original[: m.start()] + new + original[m.end() :], new, False)
                break
        if "email" not in exempt:
            for m in _RE_EMAIL.finditer(text):
                new = m.group().replace(m[1], "mail-" + m[1])
                at = m.start()
                fail("email", step, key, _put(original, text, at, m.end(), new), new, g.holds("email", new))
                break
        if "phone" not in exempt and sum(ch.isdigit() for ch in text) >= 7:
            sc = scan(original, ctx)
            for a, b, kind in sc.spans:
                if kind != "phone" or normal_phone(text[a:b], region, valid=True) is None:
                    continue
                span = text[a:b]
                last = max(i for i, ch in enumerate(span) if ch.isdigit())
                new = span[:last] + str((int(span[last]) + 1) % 10) + span[last + 1 :]
                p = normal_phone(new, region)
                fail("phone", step, key, _put(original, text, a, b, new), new, p is None or g.holds("phone", p))
                break
        if "switch" not in exempt:
            read, found = switch_claims(original, ctx)
            for c in found:
                span = read[c.start : c.end]
                m = _LAST_STATE.search(span)
                if m is None:
                    continue
                new = _FLIP[m.group().lower()]  # only the state word: the rest stays as written ("the 7:15 one")
                at = c.start + m.start()
                fail("switch", step, key, _put(original, read, at, at + len(m.group()), new), new, False)
                break
        if "name" not in exempt and key == "answer" and g.subject_names is not None:
            people = [str(c.get("name") or "") for c in ctx.contacts]
            told = [n for n, quoted, held in told_names(original, g.world_names, g.subject_names, people) if held]
            if told and (at := original.find(told[0])) >= 0:
                texts = g.subject_names.texts()
                other = next(
                    (
                        w
                        for w in sorted(set(g.world_names))
                        if re.fullmatch(r"[A-Z][\w '&-]*\w", w)
                        and 4 <= len(w) <= 40
                        and w not in people
                        and not held_by(w, texts)
                    ),
                    None,
                )
                if other is not None:
                    new = original[:at] + other + original[at + len(told[0]) :]
                    fail("name", step, key, new, other, False)
        if "code" not in exempt and g.code_sources is not None:
            for m in RE_CODE_TOLD.finditer(original):
                code = m[1]
                if code_key(code) not in g.codes[0]:
                    continue
                new = _other_code(code, g.codes[0])
                at = m.start(1)
                fail("code", step, key, original[:at] + new + original[m.end(1) :], new, False)
                if key != "answer" or not any(c.equals is not None for c in _answer_criteria(task.criteria)):
                    lower = original[:at] + code.lower() + original[m.end(1) :]
                    out.append(ClaimProbe("paraphrase", "pass", f"{where(step, key)}: the code in lower case",
                                          _with(plan, step, key, lower)))  # fmt: skip
                break
        if "size" not in exempt and g.sizes_set:
            for m in RE_SIZE.finditer(original):
                if size_key(m[1]) not in g.sizes_set:
                    continue
                new = _other_size(size_key(m[1]), g.sizes_seen - g.sizes_set)
                fail("size", step, key, original[: m.start(1)] + new + original[m.end(1) :], f"size {new}", False)
                break
        if "place" not in exempt:
            places = sorted({p for n in g.named for p in n.places}, key=lambda p: (-len(p), p))
            low = original.lower()
            for p in places:
                if (m := re.search(rf"(?<![\w-]){re.escape(p.lower())}(?![\w-])", low)) is None:
                    continue
                own = {q for n in g.named if p in n.places for q in n.places}  # the record's other fields
                other = next(
                    (q for q in places if q not in own and q.lower() not in low and p.lower() not in q.lower()), None
                )
                if other is not None:
                    fail("place", step, key, original[: m.start()] + other + original[m.end() :], other, False)
                break
        if "period" not in exempt and g.periods:
            for period, a, b in period_claims(original):
                other, new = _OTHER_PERIOD[period]
                held = other in {p for p, _ in g.periods}  # another changed record repeats so
                fail("period", step, key, original[:a] + new + original[b:], new, held)
                break
        if "status" not in exempt:
            pt = plain(original)  # contractions expanded: the spans index it
            for family, a, b, _ in status_claims(pt):
                if (word := _OTHER_STATUS.get(family)) is None:
                    continue
                verb = re.match(r"[\w-]+", pt[a:b])[0]
                if family not in _STATUS_PHRASES and verb != pt[a:b].strip() and verb.lower() != "sent":
                    continue  # "placed your order", "marked it as read": no one word to swap
                if family not in _STATUS_PHRASES:
                    b = a + len(verb)  # "Sent 18 GBP to Clive": the verb alone
                other = _other_status(word)
                if other is None or (STATUS_FAMILIES[other][1] is NO_TOOL and key != "answer"):
                    continue
                _, does, holds = STATUS_FAMILIES[other]
                # the other status is held where the episode did that too, or (a state no act makes) a record says so
                held = any(does(n) for n in g.acts) or (does is NO_TOOL and bool(holds & (g.focus | g.did.statuses)))
                new = word.capitalize() if pt[a:b][:1].isupper() else word
                fail("status", step, key, _put(original, pt, a, b, new), new, held)
                break
    # a text to a person: a promise the user never gave fails, one of no new content passes
    if "commitment" not in exempt and g.subject_names is not None:
        dictated, exact = _dictations(task.criteria), _literals(task.criteria)
        # the promise's thing is one the user or the episode already speaks of: not played
        said = any(" umbrella" in words(t) for t in [*g.user_texts, *g.subject_names.texts()])
        for step, key, original in _texts(plan):
            to_person = any(k in plan[step].arguments for k in _RECIPIENT_KEYS)
            if key not in _MESSAGE_KEYS or not to_person or original in exact:
                continue
            if any(says(original, d) for d in dictated):
                continue
            body = original.strip()
            stop = "" if body[-1:] in ".!?" else "."
            for promise, expect in ((_PROMISE, "fail"), (_LIGHT_PROMISE, "pass")):
                told = f"{body}{stop} {promise}"
                held = expect == "fail" and said
                out.append(ClaimProbe("commitment" if expect == "fail" else "paraphrase", expect,
                                      f"{where(step, key)}: {promise!r} added", _with(plan, step, key, told), held))  # fmt: skip
            break
    # a switch the episode changed, told after the answer: its state passes, the other fails
    if "switch" not in exempt:
        for name, on in changed_switches(ctx)[:1]:
            answer = str(plan[-1].arguments.get("answer") or "").rstrip()
            sep = " " if answer.endswith((".", "!")) else ". " if answer else ""
            for state, expect in ((on, "pass"), (not on, "fail")):
                told = f"{answer}{sep}{name[:1].upper()}{name[1:]} is {'on' if state else 'off'} now."
                out.append(
                    ClaimProbe("switch", expect, f"answer: {told!r}", _with(plan, len(plan) - 1, "answer", told))
                )
    # a dictated text: greeted and abbreviated must pass; a commitment added must fail
    for dictated in _dictations(task.criteria):
        for step, key, original in _texts(plan):
            if key not in ("body", "text", "message", "content", "reply") or not says(original, dictated):
                continue
            body = original.strip()
            added = f"{body}{'' if body[-1:] in '.!?' else '.'} Unfortunately I can't make it though."
            out.append(
                ClaimProbe(
                    "dictation", "fail", f"{plan[step].name} {key}: a commitment added", _with(plan, step, key, added)
                )
            )
            short = re.sub(r"\bminutes\b", "mins", re.sub(r"\band\b", "&", body))
            framed = f"Hi! {short} Thx, see you soon x"
            out.append(
                ClaimProbe(
                    "paraphrase",
                    "pass",
                    f"{plan[step].name} {key}: greeted and abbreviated",
                    _with(plan, step, key, framed),
                )
            )
            break
    # a text's times spoken (not a dictated text's, whose words are the user's): must pass
    dictated_texts = _dictations(task.criteria)
    exact = _literals(task.criteria)  # a text a criterion compares as it is (a skill's format)
    for step, key, original in _texts(plan):
        if key not in ("body", "text", "message", "content") or original in exact:
            continue
        if any(says(original, d) for d in dictated_texts):
            continue
        said = _spoken_times(original, ctx)
        if said != original:
            out.append(
                ClaimProbe("paraphrase", "pass", f"{plan[step].name} {key}: times spoken", _with(plan, step, key, said))
            )
    # the answer said another way: must pass
    answer = plan[-1].arguments.get("answer")
    crits = _answer_criteria(task.criteria)
    if isinstance(answer, str) and answer.strip() and not any(c.equals is not None for c in crits):
        text = scan(answer, ctx).text
        twelve, cursor = answer, 0
        for c in claims(answer, "time", ctx):
            span = text[c.start : c.end]
            at = twelve.find(span, cursor)
            if not c.negated and re.fullmatch(r"\d{2}:\d{2}", span) and at >= 0:
                twelve = twelve[:at] + _twelve(span) + twelve[at + len(span) :]
                cursor = at + len(_twelve(span))
        step = len(plan) - 1
        if twelve != answer:
            out.append(
                ClaimProbe("paraphrase", "pass", "answer: times in 12-hour form", _with(plan, step, "answer", twelve))
            )
        spoken = _spoken_times(answer, ctx)
        if spoken != answer:
            out.append(ClaimProbe("paraphrase", "pass", "answer: times spoken", _with(plan, step, "answer", spoken)))
        sentences = [x for x in re.split(r"(?<=[.!?])\s+(?=[A-Z])", answer.strip()) if x]
        if len(sentences) > 1:
            reordered = " ".join(reversed(sentences))
            out.append(
                ClaimProbe("paraphrase", "pass", "answer: sentences reordered", _with(plan, step, "answer", reordered))
            )
        wrapped = f"Sure! {answer.strip()} Let me know if you need anything else."
        out.append(
            ClaimProbe("paraphrase", "pass", "answer: wrapped in pleasantries", _with(plan, step, "answer", wrapped))
        )
        if ctx.now and not any(c.type == "date" or (c.pattern and re.search(r"\d", c.pattern)) for c in crits):
            today = dt.date.fromisoformat(ctx.now[:10])
            fact = f"{answer.strip().rstrip('.')}. By the way, today is {today:%A}, {today.day} {today:%B}."
            out.append(
                ClaimProbe(
                    "paraphrase", "pass", "answer: plus a true fact (today's date)", _with(plan, step, "answer", fact)
                )
            )
    return out
