"""Name claims: what the planner tells it did must name the records it did it to.

"Cancelled your Golden Dragon table" when the episode cancelled the Harbour Grill booking,
"Added to Groceries" when the item went on the "Family shop" list, 'Deleted "Shopping list"'
when the note deleted was "Packing list": the act is right, the name is false. A typed value
(a time, an amount) is checked by :mod:`phoneenv.tasks.grounding`; this module checks the
*names* an act is told of.

A **name** is either

- a name the world holds: the name fields (:data:`~phoneenv.tasks.grounding._NAME_KEYS`:
  title, name, restaurant, subject, item...) of the records the planner read, changed or could
  have read (the fixtures of the apps it used), written in the text with its capital letter or
  a digit ("Golden Dragon", "Invoice #4151"); people are left to the person claims; or
- a quoted phrase ("Shopping list", 'Road trip').

A name is **told of an act** when it follows, in its clause, a verb of an act (cancelled,
booked, added, deleted, ticked, paid, archived...: :data:`ACT_VERBS`), and no word of context
stands between them ("after", "before", "than", "instead of", "not", "because": the
Budget meeting in "moved it to after the Budget meeting" is context, not the thing moved).

Such a name must be one of the episode's **subject names**: the user's words (the goal and the
task's expected answers), the string values of the records the episode changed (as they are
now and as they were), of its successful write calls' arguments and results, and of the records
those name by id (the list an item was added to; the restaurant of a booking). A world name
passes when a subject name holds it (word for word); a quoted phrase when a subject name holds
it, or three quarters of its content words. A text the planner wrote is no evidence for itself
(an event titled "Dinner at Bella Pizza" does not ground its own "Bella Pizza").

Questions and negated clauses are not told. Only the final answer is read here: a text to a
person may name records the episode never changed ("see you at Cafe Luna").
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from phoneenv.harness.memory import STOPWORDS
from phoneenv.state import table_index
from phoneenv.tasks.predicates import words

__all__ = [
    "ACT_VERBS",
    "NAME_FIELDS",
    "SubjectNames",
    "acted_on",
    "held_by",
    "name_claims",
    "record_names",
    "subject_strings",
    "told_names",
]

NAME_FIELDS = frozenset(
    {"title", "name", "event", "city", "restaurant", "carrier", "label", "category", "merchant", "payee", "item",
     "product", "dish", "hotel", "station", "place", "venue", "film", "movie", "show", "subject", "cinema",
     "theatre", "theater", "shop", "store", "airline", "destination", "origin", "address", "location", "room",
     "list", "playlist", "album", "artist", "podcast", "episode", "size", "mode", "device", "scene", "provider"}
)  # fmt: skip
"""The fields whose values name a record or a thing a planner may tell it acted on."""


def record_names(values: Iterable[Any], limit: int = 5000) -> list[str]:
    """The strings under :data:`NAME_FIELDS` keys anywhere in ``values`` (JSON), and short
    ``text`` values (a checklist's "oat milk"), at most ``limit``."""
    out: list[str] = []
    stack = list(values)
    while stack and len(out) < limit:
        v = stack.pop()
        if isinstance(v, Mapping):
            for k, x in v.items():
                if isinstance(x, str):
                    if (k in NAME_FIELDS or (k == "text" and len(x) <= 60)) and x.strip():
                        out.append(x)
                elif isinstance(x, (Mapping, list, tuple)):
                    stack.append(x)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return out


ACT_VERBS = (
    r"cancell?ed|booked|reserved|ordered|bought|purchased|paid|settled|deleted|removed|erased|archived|added|created"
    r"|made|saved|ticked|checked\s+off|crossed\s+off|marked|moved|rescheduled|updated|changed|renamed|sent|texted"
    r"|e-?mailed|forwarded|replied|invited|blocked|unblocked|returned|subscribed|unsubscribed|downloaded|played"
    r"|started|stopped|logged|recorded|forgot|cleared|joined|accepted|declined|shared|put|pinned|unpinned"
    r"|favou?rited|tagged|untagged|transferred|requested|split|scheduled|set|turned|switched|dimmed|opened|closed"
    r"|locked|unlocked|ran|activated|checked\s+in\s+(?:to|at)?|called|rang|phoned|noted|wrote|filed|copied"
    r"|revoked|granted|tidied|enabled|disabled|muted|unmuted|restored|snoozed|dismissed|renewed|extended"
    r"|(?:now\s+)?playing|streaming|calling|dialling|dialing|ringing"
)
"""Verbs of the planner's own act, as told in an answer (past tense; "playing" and "now playing"
for what the phone plays, "calling" for the call it places)."""
_ACT = re.compile(
    rf"(?:^|(?<=[\s,;:(\"'“]))(?:i\s+(?:have\s+|had\s+)?|we\s+(?:have\s+)?)?(?:just\s+|also\s+|now\s+)?(?:{ACT_VERBS})\b",
    re.I,
)
_CONTEXT = re.compile(
    r"\b(?:after|before|than|instead\s+of|rather\s+than|unlike|except|apart\s+from|other\s+than|not|because|since"
    r"|while|whereas|but|although|though|like|near|next\s+to|beside|behind|opposite|versus|vs\.?|or|either|neither"
    r"|nor|compared|cheaper|dearer|instead|if|unless|until|then|so|which|who|that|where|when)\b|n't|[?\[]|\((?!s\))",
    re.I,
)
"""Words after which a name is context, not what the act was done to (a bracket too, but not
a plural's "(s)": "Marked 1 message(s) from Karen")."""
_CLAUSE = re.compile(r"[.;!?\n]+(?:\s|$)|\n|\s[-\u2013\u2014]\s|:\s")
_QUOTE = re.compile(r"\"([^\"]{2,80})\"|“([^”]{2,80})”|(?<![\w])'([^']{3,80})'(?!\w)")
_NOT_SUBJECT = r"(?!(?:I|Then|And|So|Also|Just|Finally|First|Next|Now|Today|Yesterday|Done|Okay|Ok|Sure|Yes)\b)"
_OTHERS = re.compile(
    rf"(?:\b(?:he|she|they|who|which)|(?<=\w\s){_NOT_SUBJECT}\b[A-Z][a-z]+|^\s*{_NOT_SUBJECT}[A-Z][a-z]+)\s+$"
)
"""A subject right before a verb that is not the planner: a pronoun or a name ("Nicole wrote")."""
_DENIED = re.compile(r"\b(?:not|never|no|cannot|failed|unable)\b|n't\b", re.I)
_NOW_STATE = re.compile(
    r"^\s*(?P<subject>\S.{0,80}?)\s+(?:is|are)\s+(?:now\s+(?:an?\s+|one\s+of\s+(?:your|my)\s+)?"
    r"(?:favou?rites?|blocked|unblocked|muted|unmuted|pinned|starred|archived|in\s+(?:your|my)\s+favou?rites)"
    r"|(?:now\s+|all\s+)?(?:saved|set\s+up|created|booked|reserved|cancell?ed|deleted|scheduled|running|live)"
    r"(?:\s+and\s+(?:running|live|on|active))?(?=\s*(?:[.,;!]|$|and\b|for\b|-)))\b",
    re.I,
)
"""A clause that tells the state the planner's act left a thing in: "Stephen Harris and Julie
Allen are now favorites", "the thread is now archived", '"Movie night" is saved and running',
"Your table at Harbour Grill is booked for Sunday": its subject is what the act was done to."""
_CONTENT = re.compile(r"[^\W_]{2,}")
_WORD = re.compile(r"\w+")


class SubjectNames:
    """The subject names of an episode (see the module docstring), as :func:`words` strings,
    with the records the subject names by id looked up on first need.

    Args:
        strings: the subject's strings (:func:`subject_strings`).
        ids: the ids they hold that may name records (values of ``*_id`` fields and the like).
        tables: the states to look ids up in (end state first, then the fixtures).
    """

    def __init__(
        self, strings: Iterable[str], ids: Iterable[str], tables: Sequence[Mapping[str, Mapping[str, Any]]]
    ) -> None:
        self._plain = [s for s in dict.fromkeys(strings) if s]
        self._ids = frozenset(ids)
        self._tables = tables
        self._words: list[str] | None = None

    def texts(self, skip: str = "") -> list[str]:
        """The subject strings as :func:`words` strings (`` a b c ``), the records named by id
        included; ``skip``: a text whose own words are no evidence (the one being checked)."""
        if self._words is None:
            extra: list[str] = []
            if self._ids:
                for tables in self._tables:
                    for tab in tables.values():
                        for rid in self._ids & tab.keys() if isinstance(tab, Mapping) else ():
                            rec = tab[rid]
                            if isinstance(rec, Mapping):
                                extra.extend(str(v) for v in rec.values() if isinstance(v, str))
            self._words = [words(s) for s in dict.fromkeys([*self._plain, *extra])]
        if not skip:
            return self._words
        own = words(skip)
        return [w for w in self._words if w != own]


_ID_LIKE = re.compile(r"[a-z]{1,6}_\d+|[a-z]+")


def subject_strings(values: Iterable[Any]) -> tuple[list[str], set[str]]:
    """The string leaves of ``values`` (records, call arguments and results, the goal) and the
    ids among them (``"tl_5"``, ``"dr_2"``: short lower-case words with a serial, or whole
    values of a key ending ``id``)."""
    out: list[str] = []
    ids: set[str] = set()
    stack: list[tuple[Any, str]] = [(v, "") for v in values]
    while stack:
        v, key = stack.pop()
        if isinstance(v, Mapping):
            stack.extend((x, str(k)) for k, x in v.items())
        elif isinstance(v, (list, tuple, set, frozenset)):
            stack.extend((x, key) for x in v)
        elif isinstance(v, str) and v.strip() and len(v) <= 2000:
            out.append(v)
            if len(v) <= 40 and (key == "id" or key.endswith("_id") or key.endswith("_ids") or _ID_LIKE.fullmatch(v)):
                ids.add(v)
    return out, ids


def _lower_ok(name: str) -> bool:
    """Whether a name written in lower case is still a name, not a common word: two words or
    more ("oat milk", "cast-iron pan"), or one of six letters or more ("butter")."""
    content = [x for x in _CONTENT.findall(words(name)) if x not in STOPWORDS]
    return len(content) >= 2 or (len(content) == 1 and len(content[0]) >= 6)


def held_by(name: str, texts: Sequence[str], quoted: bool = False) -> bool:
    """Whether one of ``texts`` (:func:`words` strings) holds ``name`` word for word; a
    ``quoted`` phrase also when one holds three quarters of its words and every number (not
    one that starts "Fwd:": a forwarded mail's subject is held word for word or not at all)."""
    w = words(name)
    if w.strip() == "":
        return True
    if any(w in t for t in texts):
        return True
    if not quoted or re.match(r" (?:fwd|fw) ", w):
        return False  # "Fwd: ..." says a forwarded mail: only one so called holds it
    every = w.split()
    numbers = [x for x in every if any(ch.isdigit() for ch in x)]
    need = max(1, -(-3 * len(every) // 4))  # three quarters of its words, rounded up, every number
    return any(all(f" {x} " in t for x in numbers) and sum(f" {x} " in t for x in every) >= need for t in texts)


def _act_tails(text: str) -> list[tuple[str, int, int, list[re.Match[str]]]]:
    """Each clause of ``text`` that tells the planner's own act, not denied and not a question,
    as ``(clause, start, end, quotes)``: ``clause[start:end]`` is what follows the act's verb up
    to the first word of context (:data:`_CONTEXT`, quoted phrases skipped), ``quotes`` the quoted
    phrases after the verb."""
    bounds = [0]
    quoted = [(q.start(), q.end()) for q in _QUOTE.finditer(text)]
    for m in _CLAUSE.finditer(text):
        if any(a < m.start() < b for a, b in quoted):
            continue  # '"Evening - Kitchen"': a dash inside a quoted name ends no clause
        part = text[bounds[-1] : m.start()]
        act = _ACT.search(part) if m.group().startswith(":") else None
        if act is not None and len(part[act.end() :].split()) <= 3:
            continue  # "Ordered your usual: 2 x Palak Paneer": what follows the colon is what was done
        bounds.append(m.end())
    bounds.append(len(text))
    out = []
    for a, b in itertools.pairwise(bounds):
        clause = text[a:b]
        if _DENIED.search(clause) or clause.rstrip().endswith("?"):
            continue
        act = _ACT.search(clause)
        now = _NOW_STATE.match(clause)
        if now is not None and (act is None or act.start() >= now.end("subject")):
            quotes = list(_QUOTE.finditer(clause, now.start("subject"), now.end("subject")))
            out.append((clause, now.start("subject"), now.end("subject"), quotes))
            continue
        if act is None or _OTHERS.search(clause[: act.start()]):
            continue  # no act, or someone else's ("Nicole wrote "...""; "she sent")
        quotes = list(_QUOTE.finditer(clause, act.end()))
        blank = list(clause)
        for m in quotes:
            blank[m.start() : m.end()] = "_" * (m.end() - m.start())
        stop = _CONTEXT.search("".join(blank), act.end())
        out.append((clause, act.end(), stop.start() if stop else len(clause), quotes))
    return out


def acted_on(text: str) -> list[str]:
    """What each clause of ``text`` (a final answer) tells the planner did something to: the
    words after the act's verb up to the first word of context ("Calling Bryan Parry" → "Bryan
    Parry"; "Booked it after the Budget meeting" → "it"), quoted phrases kept; denied clauses
    and questions left out."""
    return [clause[a:b] for clause, a, b, _ in _act_tails(text)]


def _folk_words(name: str) -> tuple[str, str | None]:
    """A person's name as :func:`~phoneenv.tasks.predicates.words`, and its first word in the
    same form (None for a name without words)."""
    w = words(name)
    return w, (f" {w.split()[0]} " if w.strip() else None)


def _name_of(person: Any) -> str:
    """A person's name: a contact record's ``name``, or the string itself."""
    return str(person.get("name") or "") if isinstance(person, Mapping) else str(person)


def _folk_index(table: Mapping[str, Mapping[str, Any]]) -> dict[str, set[str]]:
    """The words of every contact's name, and of its first word, each with the keys of the
    records that say them (see :class:`_Folk`)."""
    out: dict[str, set[str]] = {}
    for key, c in table.items():
        for w in _folk_words(_name_of(c)):
            if w is not None:
                out.setdefault(w, set()).add(key)
    return out


class _Folk:
    """Whether words (:func:`~phoneenv.tasks.predicates.words`) are a contact's name or first
    name (``w in folk``). From a :class:`~phoneenv.tasks.identity.ContactBook` (anything with
    a contacts ``table``) through an index of the table's origin built once per fixture table
    (:func:`phoneenv.state.table_index`) plus the records written since, so a test costs the
    episode's writes, not the address book's size; from names or contact records, their set,
    built on first use."""

    def __init__(self, people: Iterable[str] | Iterable[Mapping[str, Any]]) -> None:
        self._people = people
        self._set: set[str] | None = None

    def __contains__(self, w: str) -> bool:
        table = getattr(self._people, "table", None)
        if isinstance(table, Mapping):
            index, touched = table_index(table, "names.folk", _folk_index)
            if any(k not in touched for k in index.get(w, ())):
                return True
            return any((c := table.get(k)) is not None and w in _folk_words(_name_of(c)) for k in touched)
        if self._set is None:
            self._set = {x for p in self._people for x in _folk_words(_name_of(p)) if x is not None}
        return w in self._set


def told_names(
    text: str,
    world_names: Iterable[str],
    subject: SubjectNames,
    people: Iterable[str] | Iterable[Mapping[str, Any]] = (),
) -> list[tuple[str, bool, bool]]:
    """``(name, quoted, held)`` of each name ``text`` (a final answer) tells of an act, in order
    (see the module docstring); ``held``: a subject name holds it.

    Args:
        text: the answer.
        world_names: the names the world holds (records read, changed or in the fixtures).
        subject: the episode's :class:`SubjectNames`.
        people: contacts' names or records (left to the person claims); a
            :class:`~phoneenv.tasks.identity.ContactBook` is tested through its table's index.
    """
    out: list[tuple[str, bool, bool]] = []
    if not text or not text.strip():
        return out
    tails = _act_tails(text)
    if not tails:
        return out
    folk = _Folk(people)
    by_first: dict[str, list[str]] = {}  # the names by their first word, longest first: one look-up a word
    for n in {n.strip() for n in world_names}:
        if 4 <= len(n) <= 60 and (first := _WORD.match(n.lower())) is not None:
            by_first.setdefault(first.group(), []).append(n)
    for v in by_first.values():
        v.sort(key=len, reverse=True)
    texts: list[str] | None = None
    for clause, tail_start, tail_end, quotes in tails:
        tail = clause[tail_start:tail_end]
        said: list[tuple[int, str, bool]] = []
        taken: list[tuple[int, int]] = []
        for m in quotes:
            if m.end() <= tail_end:
                said.append((m.start(), next(g for g in m.groups() if g), True))
                taken.append((m.start() - tail_start, m.end() - tail_start))
        low = tail.lower()
        for w in _WORD.finditer(low):
            at = w.start()
            if any(s <= at < e for s, e in taken):
                continue
            for n in by_first.get(w.group(), ()):
                end = at + len(n)
                if not low.startswith(n.lower(), at) or (end < len(low) and (low[end].isalnum() or low[end] == "_")):
                    continue
                if not (tail[at].isupper() or any(ch.isdigit() for ch in n) or _lower_ok(n)):
                    continue
                said.append((at + tail_start, tail[at:end], False))
                taken.append((at, end))
                break
        for _, name, quoted in sorted(said):
            if words(name) in folk:
                continue
            if texts is None:
                texts = subject.texts(skip=text)
            out.append((name, quoted, held_by(name, texts, quoted)))
    return out


def name_claims(
    text: str,
    world_names: Iterable[str],
    subject: SubjectNames,
    people: Iterable[str] | Iterable[Mapping[str, Any]] = (),
) -> list[tuple[str, str]]:
    """``(said, why)`` of each name ``text`` (a final answer) tells of an act that no subject
    name holds (see the module docstring; arguments as :func:`told_names`)."""
    return [
        (name, "nothing the episode acted on is so called or says so")
        for name, _, held in told_names(text, world_names, subject, people)
        if not held
    ]
