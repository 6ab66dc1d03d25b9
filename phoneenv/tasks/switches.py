"""Switch claims: a setting or an alarm told on or off must be what the phone holds at the end.

A planner that turns do-not-disturb on and tells "Do not disturb is off", or deletes the 6:30
alarm and tells "turned off the 6:30 alarm", has told the user something false about their
phone. :func:`switch_claims` reads such claims; :func:`check_switches` holds each to the
episode's end state (``Context.tables``).

What a switch is:

- a setting of ``settings.settings`` whose value is a boolean, named the way people say it
  (:data:`SETTING_NAMES`: "do not disturb"/"DND", "Wi-Fi", "Bluetooth", "airplane"/"flight
  mode", "location"/"GPS", "dark mode"/"dark theme"; "light mode"/"light theme" is dark mode
  told the other way round);
- an alarm of ``clock.alarms``, named by its time ("the 7:15 alarm", "the 6:30 one", "alarm
  at 5:00") and told by its ``enabled`` field;
- any other named record with a boolean ``on`` or ``enabled`` field (a smart-home device: "the
  TV", "Ceiling light"; a do-not-disturb schedule: "Weekend"), named by its ``name`` or
  ``label``.

How a claim is told (in one part of a sentence: a clause, or what a comma or "and" ends):

- the name, then a state with only linking words between: "DND is now on", "Wi-Fi off",
  "the 7:15 alarm is back on", "dark mode stays enabled";
- a verb, the state, then the name: "turned on DND", "switched off Bluetooth";
- "enabled Wi-Fi", "disabled location";
- a theme told as current: "back to the light theme", "switched to dark mode", "light theme
  is back".

States: on, enabled, active, activated, connected; off, disabled, inactive, deactivated,
disconnected. A claim about
what will happen ("will switch off at 11:00", "turns off at 11:00", "goes off at 7"), a
negated, conditional or questioned one, is not told. An alarm told off that no longer exists
was deleted, not turned off (unless its part says so: "turned off and deleted"); one told on
or off at a time no alarm ever had is about no alarm of the phone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phoneenv.tasks.answers import claims, scan
from phoneenv.tasks.predicates import Context

__all__ = ["SETTING_NAMES", "SwitchClaim", "check_switches", "switch_claims"]

SETTING_NAMES: tuple[tuple[str, str, bool], ...] = (
    (r"do[\s-]+not[\s-]+disturb|\bdnd\b", "dnd", True),
    (r"wi-?fi(?!\s+network)|\bwlan\b", "wifi", True),
    (r"bluetooth", "bluetooth", True),
    (r"(?:airplane|aeroplane|flight)[\s-]+mode", "airplane_mode", True),
    (r"location(?:\s+services|\s+access|\s+sharing)?|\bgps\b", "location", True),
    (r"dark\s+(?:mode|theme)|night\s+mode", "dark_mode", True),
    (r"light\s+(?:mode|theme)", "dark_mode", False),
)
"""How a boolean setting is said: ``(pattern, setting id, sense)``; ``sense`` False: the
words name the setting's off state ("light theme" is dark mode off)."""

_SETTING_PATTERNS = tuple((re.compile(p, re.I), key, sense) for p, key, sense in SETTING_NAMES)
_SPOKEN = {"dnd": "do not disturb", "wifi": "Wi-Fi", "airplane_mode": "airplane mode", "dark_mode": "dark mode"}
SETTINGS_TABLE = "settings.settings"
ALARMS_TABLE = "clock.alarms"

_ON = r"on|enabled|active|activated|running|connected|reconnected"
_OFF = r"off|disabled|inactive|deactivated|disconnected"
_ON_WORDS = frozenset(_ON.split("|"))
_STATE = rf"(?P<state>{_ON}|{_OFF})"
_LINK = r"(?:\s+(?:is|are|was|were|has|have|been|stays|stayed|remains|remained|went|now|still|back|already|currently|all|also|switched|turned|set|left|kept|to|got|fully))*"
_STATE_AFTER = re.compile(_LINK + r"\s+" + _STATE + r"\b", re.I)
"""A state after a switch's name, linking words between: "DND is now on", "the 7:15 alarm back on"."""
_STATE_BEFORE = re.compile(
    rf"\b(?:(?:turned|switched|toggled|flipped|set)\s+{_STATE}|(?P<verb>enabled|disabled|activated|deactivated))"
    r"\s+(?:the\s+|your\s+|my\s+)?$",
    re.I,
)
"""A verb and a state before a switch's name: "turned on DND", "enabled Wi-Fi"."""
_AFTER_STATE = re.compile(
    r"\s+(?:at|from|after|by|automatically|in\s+\d|when|once|until\s+you|the|your|a|an|every|weekdays|weekends"
    r"|today|tomorrow|tonight|\d|mon|tue|wed|thu|fri|sat|sun)",
    re.I,
)
"""Words after a state that make it a time or a future ("off at 11:00", "on Tuesday", "on the
12th"), not a switch's state now."""
_DENIED = re.compile(
    r"\b(?:not|never|no|if|whether|should|could|would|will|shall|going\s+to|can|cannot|want|unless|before|once"
    r"|when|wanted|asked\s+(?:me\s+)?to)\b|n't|'ll",
    re.I,
)
_PART = re.compile(r"[.;!?\n]+(?:\s|$)|\n|[,()]|\s[-\u2013\u2014]\s|\b(?:and|but|while|whereas)\b", re.I)
_JOINED = re.compile(r"\s*\b(?:and|but)\b\s*", re.I)
"""What joins two parts of one sentence that tell of one switch: "is set but switched off"."""
_THEME_NOW = re.compile(
    r"\b(?:back\s+to|switched\s+(?:back\s+)?to|changed\s+(?:back\s+)?to|set\s+to|now\s+(?:in|on|using)|using|went\s+back\s+to)"
    r"\s+(?:the\s+|a\s+)?(?P<name>(?:light|dark)\s+(?:mode|theme))\b"
    r"|\b(?P<name2>(?:light|dark)\s+(?:mode|theme))\s+(?:is\s+)?(?:back|restored)\b",
    re.I,
)
_ALARM_AFTER = re.compile(r"\s*(?:a\.?m\.?|p\.?m\.?)?\s*(?:alarms?|ones?|1(?!\d))\b", re.I)
"""What names an alarm after its time: "the 7:15 alarm", "the 6:30 one" (read as "6:30 1")."""
_LISTED_WITH = re.compile(r"\s*(?:a\.?m\.?|p\.?m\.?)?\s*(?:,\s*(?:and\s+|&\s+)?|and\s+|&\s+)$", re.I)
"""What lies between times listed together before what names them: "the 07:45 and 13:00
alarms", "the 6:30, 7:00 and 7:30 alarms"."""
_ALARM_BEFORE = re.compile(r"\balarm\s+(?:at|for|set\s+for)\s+$", re.I)
_ACT_BEFORE = re.compile(r"\b(?:turned|switched|toggled|flipped|put|set)\s+(?:it\s+|the\s+|your\s+|my\s+)?$", re.I)
"""A verb of the planner's act before a switch's name: "turned the 7:15 alarm on"."""
_DELETED_WORDS = re.compile(r"\b(?:delet|remov|eras|clear)", re.I)
_GROUP = re.compile(
    r"\b(?:all|both|every\s+one\s+of)\s+(?:the\s+|your\s+|my\s+)?(?P<kind>lights|lamps|plugs|devices)\b", re.I
)
"""Switches told together: "all the lights", "both lamps", "all your devices"."""


@dataclass(frozen=True)
class SwitchClaim:
    """One switch told on or off: ``kind`` ``"setting"`` (``key`` a setting id), ``"alarm"``
    (``key`` an ``HH:MM`` time, ``alts`` the other readings of it: 6:30 may be 18:30),
    ``"record"`` (``key`` ``table|field|name``) or ``"group"`` (``key`` a kind of device told
    together: "light" for "all the lights"), the
    ``state`` told (True: on), the span ``start:end`` of the text it was read from, and
    whether it is told as the planner's ``act`` ("turned on DND", "switched the 7:15 alarm on")
    rather than as a state ("DND is on")."""

    kind: str
    key: str
    state: bool
    start: int
    end: int
    alts: tuple[str, ...] = ()
    act: bool = False


def _parts(text: str) -> Iterable[tuple[int, int]]:
    start = 0
    for m in _PART.finditer(text):
        yield start, m.start()
        start = m.end()
    yield start, len(text)


def _mentions(
    said: str, text: str, ctx: Context
) -> tuple[list[tuple[int, int, str, str, bool, tuple[str, ...]]], dict[int, int]]:
    """``(start, end, kind, key, sense, alts)`` of every switch named in ``text`` (``said`` as
    :func:`~phoneenv.tasks.answers.scan` reads it: the spans of its claims), and for each alarm
    time listed before the one that names them ("the 07:45 and 13:00 alarms"), the start of
    that one: they share what is told of it."""
    out = []
    links: dict[int, int] = {}
    for pattern, key, sense in _SETTING_PATTERNS:
        for m in pattern.finditer(text):
            out.append((m.start(), m.end(), "setting", key, sense, ()))
    if re.search(r"\balarm", text, re.I):  # alarms by their time
        listed: list[tuple[int, int, str, str, bool, tuple[str, ...]]] = []  # times before the one named
        for c in claims(said, "time", ctx):
            vals = tuple(v for v in (c.value, *c.alts) if isinstance(v, str))
            if not vals or c.ends() is not None:
                continue
            after = _ALARM_AFTER.match(text, c.end)
            if after is not None:
                if listed and _LISTED_WITH.fullmatch(text, listed[-1][1], c.start):
                    out.extend(listed)
                    links.update((m[0], c.start) for m in listed)
                out.append((c.start, after.end(), "alarm", vals[0], True, vals[1:]))
                listed = []
            elif _ALARM_BEFORE.search(text[max(0, c.start - 20) : c.start]):
                out.append((c.start, c.end, "alarm", vals[0], True, vals[1:]))
            else:
                if listed and not _LISTED_WITH.fullmatch(text, listed[-1][1], c.start):
                    listed = []
                listed.append((c.start, c.end, "alarm", vals[0], True, vals[1:]))
    for m in _GROUP.finditer(text):  # "all the lights", "both lamps": every such device
        out.append((m.start(), m.end(), "group", m["kind"].lower().rstrip("s"), True, ()))
    low = text.lower()
    for table, field, name in _named_switches(ctx):
        for m in re.finditer(r"(?<![\w])" + re.escape(name) + r"(?![\w])", low):
            out.append((m.start(), m.end(), "record", f"{table}|{field}|{name}", True, ()))
    if "alarm" in low:  # an alarm by its label, told as one: "the Take medicine alarm"
        labels = {
            _folded(r)
            for tables in (ctx.tables, ctx.before)
            for r in _records_of(tables.get(ALARMS_TABLE))
            if len(_folded(r)) >= 3
        }
        for name in labels:
            for m in re.finditer(r"(?<![\w])" + re.escape(name) + r"\s+alarm\b", low):
                out.append((m.start(), m.end(), "record", f"{ALARMS_TABLE}|enabled|{name}", True, ()))
    out.sort(key=lambda m: (m[0], -m[1]))
    return [m for i, m in enumerate(out) if not any(o[0] <= m[0] < o[1] for o in out[:i])], links  # longest first


def switch_claims(said: str, ctx: Context) -> tuple[str, list[SwitchClaim]]:
    """The switches ``said`` tells on or off (see the module docstring), in order.

    Args:
        said: an answer or a text the planner wrote.
        ctx: the episode's context (its clock reads the times of alarms).

    Returns:
        the text as read (number words as digits: :func:`~phoneenv.tasks.answers.scan`) and one
        :class:`SwitchClaim` per switch told, with its span in that text.
    """
    out: list[SwitchClaim] = []
    if not said or not said.strip():
        return said, out
    text = scan(said, ctx).text
    mentions, links = _mentions(said, text, ctx)
    if not mentions:
        return text, out
    blank = list(text)  # the names aside: "do not disturb" denies nothing
    for start, end, *_ in mentions:
        blank[start:end] = " " * (end - start)
    bare = "".join(blank)
    told: dict[int, SwitchClaim] = {}  # by the start of the mention it was read from
    last: tuple[int, int, str, str, bool, tuple[str, ...]] | None = None  # the last switch named
    prev_end = 0
    for a, b in _parts(text):
        joined, prev_end = _JOINED.fullmatch(text, prev_end, a) is not None, b
        if _DENIED.search(bare[a:b]) or "?" in text[b : b + 1]:
            last = None
            continue
        here = [m for m in mentions if a <= m[0] < b]
        # "the 06:35 alarm is set but switched off": a state with no name of its own, joined to
        # the part that named the switch
        if not here and last is not None and joined and (m := _STATE_AFTER.match(text, a)) and m.end() <= b:
            start, end, kind, key, sense, alts = last
            on = m["state"].lower() in _ON_WORDS
            out.append(SwitchClaim(kind, key, on == sense, start, m.end(), alts))
            continue
        last = here[-1] if here else None
        for start, end, kind, key, sense, alts in mentions:
            mention = start
            if not a <= start < b:
                continue
            state: bool | None = None
            m = _STATE_AFTER.match(text, end)
            act = False
            if m is not None and m.end() <= b and not _AFTER_STATE.match(text, m.end()):
                state, span_end = m["state"].lower() in _ON_WORDS, m.end()
                act = bool(_ACT_BEFORE.search(text[a:start]))
            else:
                v = _STATE_BEFORE.search(text[a:start])
                if v is not None:
                    word = (v["state"] or v["verb"]).lower()
                    state, span_end, act = word in _ON_WORDS, end, True
                    start = a + v.start()
            if state is None:
                continue
            out.append(SwitchClaim(kind, key, state == sense, start, span_end, alts, act))
            told[mention] = out[-1]
    for start, end, kind, key, _, alts in mentions:  # "the 07:45 and 13:00 alarms are on": both
        if start in links and (lead := told.get(links[start])) is not None:
            out.append(SwitchClaim(kind, key, lead.state, start, end, alts, lead.act))
    for m in _THEME_NOW.finditer(text):
        if any(c.kind == "setting" and c.key == "dark_mode" and c.start <= m.start() < c.end for c in out):
            continue
        a = max((p for p, _ in _parts(text) if p <= m.start()), default=0)
        if _DENIED.search(bare[a : m.start()]):
            continue
        name = (m["name"] or m["name2"]).lower()
        out.append(SwitchClaim("setting", "dark_mode", name.startswith("dark"), m.start(), m.end()))
    out.sort(key=lambda c: c.start)
    return text, out


def _records_of(table: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The records of a table of a state (none when it is missing or not a table)."""
    return [r for r in (table or {}).values() if isinstance(r, Mapping)] if isinstance(table, Mapping) else []


_SWITCH_FIELDS = ("on", "enabled")
"""The boolean fields that make a named record a switch (a device's ``on``, a schedule's
``enabled``)."""


def _folded(rec: Mapping[str, Any]) -> str:
    name = rec.get("name") or rec.get("label")
    return " ".join(name.lower().split()) if isinstance(name, str) else ""


def _named_switches(ctx: Context, limit: int = 500) -> list[tuple[str, str, str]]:
    """``(table, field, name)`` of each named record with a switch field in the end state or
    the fixtures (tables of at most ``limit`` records; alarms are named by their time)."""
    out: set[tuple[str, str, str]] = set()
    for tables in (ctx.tables, ctx.before):
        for table, recs in tables.items():
            if table == ALARMS_TABLE or not isinstance(recs, Mapping) or not 0 < len(recs) <= limit:
                continue
            first = next(iter(recs.values()))
            if not isinstance(first, Mapping):
                continue
            field = next((f for f in _SWITCH_FIELDS if f in first), None)
            if field is None:
                continue
            for r in recs.values():
                if isinstance(r, Mapping) and isinstance(r.get(field), bool) and len(name := _folded(r)) >= 2:
                    out.add((table, field, name))
    return sorted(out)


def _record_claim(
    c: SwitchClaim,
    said: str,
    text: str,
    what: str,
    field: str,
    now: list[Mapping[str, Any]],
    was: list[Mapping[str, Any]],
) -> tuple[str, tuple[str, ...], str] | None:
    """The problem with switch claim ``c`` about the records ``now`` (end state) and ``was``
    (fixtures) that its words name (``what``: "the 07:15 alarm"), told by their ``field``."""
    told = "on" if c.state else "off"
    if now:
        if not any(bool(r.get(field)) == c.state for r in now):
            return (
                said,
                tuple(f"{what} {'on' if r.get(field) else 'off'}" for r in now),
                f"{what} is {'on' if not c.state else 'off'}",
            )
        if c.act and was and all(bool(r.get(field)) == c.state for r in was):
            return said, (f"{what} {told}",), f"{what} was {told} already: nothing turned it {told}"
        if _ALREADY.search(said) and was and not any(bool(r.get(field)) == c.state for r in was):
            return said, (f"{what} {'off' if c.state else 'on'}",), f"{what} was not {told} before the episode"
        return None
    if was:
        part = next(text[a:b] for a, b in _parts(text) if a <= c.start < b or b == len(text))
        if not _DELETED_WORDS.search(part):
            return said, ("deleted",), f"{what} was deleted, not turned {told}"
    return None


_ALREADY = re.compile(r"\balready\b", re.I)
"""A switch told in a state it was in before the episode ("was already on")."""


def check_switches(text: str, ctx: Context) -> list[tuple[str, tuple[str, ...], str]]:
    """``(said, held, why)`` of each switch ``text`` tells in a state the end state
    (``ctx.tables``) does not hold; claims about a switch the phone does not have (no such
    setting in the state; a table the episode's phone lacks) are left to other checks.

    Raises:
        nothing: a record of an unexpected shape is skipped.
    """
    out: list[tuple[str, tuple[str, ...], str]] = []
    settings = ctx.tables.get(SETTINGS_TABLE) or {}
    text, found = switch_claims(text, ctx)
    for c in found:
        said = text[c.start : c.end]
        told = "on" if c.state else "off"
        if c.kind == "setting":
            rec = settings.get(c.key)
            value = rec.get("value") if isinstance(rec, Mapping) else None
            name = _SPOKEN.get(c.key, c.key)
            if isinstance(value, bool) and value != c.state:
                held = "on" if value else "off"
                out.append((said, (f"{c.key} {held}",), f"the phone has {name} {held}"))
            else:
                rec = (ctx.before.get(SETTINGS_TABLE) or {}).get(c.key)
                before = rec.get("value") if isinstance(rec, Mapping) else None
                if c.act and before is c.state:
                    out.append((said, (f"{c.key} {told}",), f"{name} was {told} already: nothing turned it {told}"))
                elif _ALREADY.search(said) and isinstance(before, bool) and before != c.state:
                    # "Do Not Disturb was already on" where the episode turned it on
                    out.append((said, (f"{c.key} {'on' if before else 'off'}",), f"{name} was not {told} before"))
            continue
        if c.kind == "group":  # "all the lights are off": every such device of the end state
            for _, field, recs in _group(c.key, ctx):
                wrong = [r for r in recs if bool(r.get(field)) != c.state]
                if wrong:
                    held = tuple(f"{_folded(r)} {'on' if r.get(field) else 'off'}" for r in wrong[:3])
                    out.append((said, held, f"not every {c.key} is {told}: {', '.join(held)}"))
            continue
        if c.kind == "record":  # a device, a schedule: by name
            table, field, name = c.key.split("|", 2)
            now = [r for r in _records_of(ctx.tables.get(table)) if _folded(r) == name]
            was = [r for r in _records_of(ctx.before.get(table)) if _folded(r) == name]
            what = f"the {name} alarm" if table == ALARMS_TABLE else f"the {name}"
            if (bad := _record_claim(c, said, text, what, field, now, was)) is not None:
                out.append(bad)
            continue
        if ALARMS_TABLE not in ctx.tables:
            continue
        times = {c.key, *c.alts}
        now = [r for r in _records_of(ctx.tables.get(ALARMS_TABLE)) if r.get("time") in times]
        was = [r for r in _records_of(ctx.before.get(ALARMS_TABLE)) if r.get("time") in times]
        if now or was:
            if (bad := _record_claim(c, said, text, f"the {c.key} alarm", "enabled", now, was)) is not None:
                out.append(bad)
            continue
        held_times = sorted({str(r.get("time")) for r in _records_of(ctx.tables.get(ALARMS_TABLE))})[:4]
        out.append((said, tuple(held_times), f"the phone has no alarm at {c.key}"))
    return out


def _group(kind: str, ctx: Context) -> list[tuple[str, str, list[Mapping[str, Any]]]]:
    """``(table, field, records)`` of the end state's switches of ``kind`` ("light", "lamp",
    "plug"; "device": every one of a table whose records have a ``kind`` or ``type``): a record
    whose ``kind``/``type`` or name says that kind."""
    out = []
    for table, recs in ctx.tables.items():
        rows = _records_of(recs) if table != ALARMS_TABLE else []
        field = next((f for f in _SWITCH_FIELDS if rows and f in rows[0]), None)
        sort = next((k for k in ("kind", "type") if rows and k in rows[0]), None)
        if field is None or sort is None:
            continue
        mine = [
            r for r in rows if kind == "device" or kind in str(r.get(sort, "")).lower() or kind in _folded(r).split()
        ]
        if mine:
            out.append((table, field, mine))
    return out


def changed_switches(ctx: Context) -> Sequence[tuple[str, bool]]:
    """``(how a person names it, on)`` of each switch the episode changed, as the end state
    (``ctx.tables``) holds it against the fixtures (``ctx.before``): settings ("do not
    disturb"), alarms ("the 07:15 alarm") and named records with an ``on``/``enabled`` field
    ("the Ceiling light"). For generated probes: telling the state passes, the other fails."""
    out: list[tuple[str, bool]] = []
    after, before = ctx.tables.get(SETTINGS_TABLE) or {}, ctx.before.get(SETTINGS_TABLE) or {}
    for key, rec in after.items():
        old = before.get(key)
        value = rec.get("value") if isinstance(rec, Mapping) else None
        if isinstance(value, bool) and isinstance(old, Mapping) and value is not old.get("value"):
            out.append((_SPOKEN.get(key, key.replace("_", " ")), value))
    for table, field in [(ALARMS_TABLE, "enabled"), *((t, f) for t, f, _ in _named_switches(ctx))]:
        now, was = ctx.tables.get(table), ctx.before.get(table)
        if not isinstance(now, Mapping) or not isinstance(was, Mapping):
            continue
        for rid, rec in now.items():
            old = was.get(rid)
            if not isinstance(rec, Mapping) or not isinstance(old, Mapping) or not isinstance(rec.get(field), bool):
                continue
            if rec[field] is not old.get(field):
                name = (
                    f"the {rec.get('time')} alarm"
                    if table == ALARMS_TABLE
                    else f"the {rec.get('name') or rec.get('label')}"
                )
                same = [
                    r for r in now.values() if isinstance(r, Mapping) and _named_as(r, table) == _named_as(rec, table)
                ]
                if len(same) == 1:  # a name two records share tells of neither
                    out.append((name, rec[field]))
    return list(dict.fromkeys(out))


def _named_as(rec: Mapping[str, Any], table: str) -> str:
    return str(rec.get("time")) if table == ALARMS_TABLE else _folded(rec)
