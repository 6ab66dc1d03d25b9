"""People by identity, not by the string used to name them.

A user's contact can be named many ways in a tool call or an answer: the full name ("Ana Lima"),
the first name when no other contact shares it ("Ana"), an e-mail address of the contact, or any
spelling of the contact's phone number ("+49 151 2345 6789", "015123456789"). Verification
resolves each reference to the set of contact ids it may denote, so a recipient or attendee given
in any of these forms matches, and a reference to someone else never does.

    >>> book = [{"id": "c_1", "name": "Ana Lima", "phone": "+4915123456789", "email": "ana@x.org"},
    ...         {"id": "c_2", "name": "Ana Costa", "phone": "+4917012345678", "email": None},
    ...         {"id": "c_3", "name": "Ben Weber", "phone": "+4916011112222", "email": None}]
    >>> sorted(contact_ids("ana lima", book)), sorted(contact_ids("Ben", book))
    (['c_1'], ['c_3'])
    >>> sorted(contact_ids("Ana", book))  # ambiguous: either Ana
    ['c_1', 'c_2']
    >>> sorted(contact_ids("0170 1234 5678", book)), sorted(contact_ids("ANA@x.org", book))
    (['c_2'], ['c_1'])

Phone numbers are compared on their last nine digits (the subscriber number and the end of the
area or mobile prefix), which ignores the country code and a national trunk ``0``, as
``{"number": ...}`` in :mod:`phoneenv.tasks.predicates` does.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from typing import Any, NamedTuple, overload

from phoneenv.state import table_index

__all__ = ["CONTACTS_TABLE", "ContactBook", "contact_ids", "mentioned_contacts", "same_number"]

CONTACTS_TABLE = "contacts.contacts"
"""The table whose records are the user's contacts (``id``, ``name``, ``phone``, ``email``)."""

_DIGITS = re.compile(r"\d")
_PHONE_IN_TEXT = re.compile(r"\+?\d[\d ()\-./]{5,}\d")
_EMAIL_IN_TEXT = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_NAME_ADDR = re.compile(r"(.*?)\s*<([^<>@\s]+@[^<>@\s]+)>")
_WORD_START = re.compile(r"(?<!\w)")  # where a name may begin, as mentioned_contacts' pattern has it
_WORD_END = re.compile(r"(?!\w)")  # where a name may end


_TITLE = r"(?:mr|mrs|ms|miss|mx|dr|prof|herr|frau)\.?"
_TITLED = re.compile(_TITLE + r"\s+([^\W\d_][\w'-]*)", re.I)
"""A person named by title and surname ("Mr Baxter", "Dr. Lang"), folded."""
_TITLED_IN_TEXT = re.compile(r"(?<!\w)" + _TITLE + r"\s+[^\W\d_][\w'-]*(?!\w)", re.I)


def _surname(name: Any) -> str:
    folded = _fold(name)
    return folded.rsplit(" ", 1)[1] if " " in folded else ""


def _fold(text: Any) -> str:
    return " ".join(str(text or "").casefold().split())


def _digits(text: Any) -> str:
    return "".join(_DIGITS.findall(str(text or "")))


def same_number(a: Any, b: Any) -> bool:
    """Whether two phone numbers denote the same line: at least 7 digits each, and equal last
    nine digits (or all digits, when either has fewer than nine); and where a number is written
    in international form (``+`` or ``00``, read by ``phonenumbers``), its whole national number
    too: two international numbers must be the same (``+1 929…`` is not ``+1 829…``, though
    their last nine digits agree), and a national one must end in the other's national number
    when it is at least as long ("(929) 741-6976" is ``+1 929 741 6976``; "741-6976" may be)."""
    da, db = _digits(a), _digits(b)
    if len(da) < 7 or len(db) < 7:
        return False
    n = min(9, len(da), len(db))
    if da[-n:] != db[-n:]:
        return False
    pa, pb = _international(str(a)), _international(str(b))
    if pa is not None and pb is not None:
        return pa == pb
    if pa is None and pb is None:
        return True
    national, other = (pa or pb)[1], (db if pa is not None else da)  # type: ignore[index]
    return len(other) < len(national) or other.endswith(national)


@functools.lru_cache(maxsize=4096)
def _international(raw: str) -> tuple[int, str] | None:
    """``(country code, national number)`` of a number written with ``+`` or ``00``, else None."""
    text = raw.strip()
    if not (text.startswith("+") or text.startswith("00")):
        return None
    import phonenumbers

    try:
        num = phonenumbers.parse("+" + text.lstrip("+")[2:] if text.startswith("00") else text, None)
    except phonenumbers.NumberParseException:
        return None
    return num.country_code, str(num.national_number)


def numbers_of(contact: Mapping[str, Any]) -> list[str]:
    """A contact's phone numbers: its ``phone`` and each ``other_phones`` entry's ``number`` (a
    work or home line: ``{"label": "work", "number": "+44..."}``)."""
    out = [str(contact.get("phone"))] if contact.get("phone") else []
    for p in contact.get("other_phones") or ():
        if isinstance(p, Mapping) and p.get("number"):
            out.append(str(p["number"]))
    return out


class _Index(NamedTuple):
    """Where :func:`contact_ids` and :func:`mentioned_contacts` look, for one contacts table:
    table keys by id, e-mail, phone digits (``suffix[k]``: last k digits of numbers with at
    least k; ``exact[k]``: numbers of exactly k digits), full name and first name (all folded,
    each list in table order); ``pos`` each key's place in the table."""

    ids: dict[str, list[str]]
    email: dict[str, list[str]]
    suffix: dict[int, dict[str, list[str]]]
    exact: dict[int, dict[str, list[str]]]
    full: dict[str, list[str]]
    first: dict[str, list[str]]
    pos: dict[str, int]
    lens: dict[str, set[int]]  # "full", "first": the lengths of the (non-empty) names
    last: dict[str, list[str]]  # surname (the name's last word) → keys


def _build(table: Mapping[str, Mapping[str, Any]]) -> _Index:
    idx = _Index({}, {}, {7: {}, 8: {}, 9: {}}, {7: {}, 8: {}}, {}, {}, {}, {}, {})
    for key, c in table.items():
        idx.pos[key] = len(idx.pos)
        idx.ids.setdefault(str(c.get("id")), []).append(key)
        if c.get("email"):
            idx.email.setdefault(_fold(c["email"]), []).append(key)
        for d in {_digits(n) for n in numbers_of(c)}:
            for k in (7, 8, 9):
                if len(d) >= k:
                    idx.suffix[k].setdefault(d[-k:], []).append(key)
            if len(d) in idx.exact:
                idx.exact[len(d)].setdefault(d, []).append(key)
        name = _fold(c.get("name"))
        idx.full.setdefault(name, []).append(key)
        idx.first.setdefault(name.split(" ")[0], []).append(key)
        if " " in name:
            idx.last.setdefault(name.rsplit(" ", 1)[1], []).append(key)
    idx.lens["full"] = {len(n) for n in idx.full if n}
    idx.lens["first"] = {len(n) for n in idx.first if n}
    return idx


def _number_keys(idx: _Index, text: str) -> list[str]:
    db = _digits(text)
    if len(db) < 7:
        return []
    m = min(9, len(db))  # same_number: the last min(9, both lengths) digits
    out = list(idx.suffix[m].get(db[-m:], ()))
    for k in range(7, m):
        out += idx.exact[k].get(db[-k:], ())
    return out


_LOOKUP: dict[str, tuple[Callable[[_Index, str], Iterable[str]], Callable[[Mapping[str, Any], str], bool]]] = {
    "id": (lambda i, a: i.ids.get(a, ()), lambda c, a: str(c.get("id")) == a),
    "email": (lambda i, a: i.email.get(a, ()), lambda c, a: bool(c.get("email")) and _fold(c["email"]) == a),
    "number": (_number_keys, lambda c, a: any(same_number(n, a) for n in numbers_of(c))),
    "full": (lambda i, a: i.full.get(a, ()), lambda c, a: _fold(c.get("name")) == a),
    "first": (lambda i, a: i.first.get(a, ()), lambda c, a: _fold(c.get("name")).split(" ")[0] == a),
    "last": (lambda i, a: i.last.get(a, ()), lambda c, a: _surname(c.get("name")) == a),
}


class ContactBook(Sequence[Mapping[str, Any]]):
    """The records of a contacts table (id → record) as a sequence, answering
    :func:`contact_ids` from indexes built once per shared table
    (:func:`phoneenv.state.table_index`) plus the records written since: a lookup costs the
    episode's writes, not the size of the address book. Same answers as a scan. ``extra``
    records (the contacts an episode deleted) come after the table's and are looked at one by
    one."""

    def __init__(self, table: Mapping[str, Mapping[str, Any]], extra: Sequence[Mapping[str, Any]] = ()) -> None:
        self.table = table
        self.extra = tuple(extra)  # records after the table's, looked at one by one (the deleted ones)
        self._list: list[Mapping[str, Any]] | None = None

    def __len__(self) -> int:
        return len(self.table) + len(self.extra)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        yield from self.table.values()
        yield from self.extra

    @overload
    def __getitem__(self, i: int) -> Mapping[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Mapping[str, Any]]: ...
    def __getitem__(self, i: int | slice) -> Mapping[str, Any] | Sequence[Mapping[str, Any]]:
        if self._list is None:
            self._list = [*self.table.values(), *self.extra]
        return self._list[i]

    def _lookup(self) -> tuple[_Index, Set[str]]:
        return table_index(self.table, "identity.contacts", _build)

    def _order(self, idx: _Index, touched: Set[str]) -> Callable[[str], tuple[int, int]]:
        """A sort key putting the table's keys in the table's order, from the episode's writes.

        A table keeps the order of its origin for the keys never removed since, and puts the keys
        added (or added back) after them, in the order added: those last keys are all touched,
        so the keys from the end up to the first untouched one are the only ones that may
        stand elsewhere than their origin's place."""
        late: dict[str, int] = {}
        if touched:
            for i, k in enumerate(reversed(self.table)):
                if k not in touched:
                    break
                late[k] = -i
        pos = idx.pos
        return lambda k: (1, late[k]) if k in late else (0, pos[k])

    def having_ids(self, ids: Set[Any]) -> list[Mapping[str, Any]]:
        """The contacts whose ``id`` is in ``ids``, in table order (what a scan keeping those
        gives), at the cost of the matches and the episode's writes."""
        tbl = self.table
        if not all(isinstance(i, str) for i in ids):
            return [c for c in self if c.get("id") in ids]
        idx, touched = self._lookup()
        keys = {k for i in ids for k in idx.ids.get(i, ()) if k not in touched}
        keys.update(k for k in touched if k in tbl)
        order = self._order(idx, touched)
        found = [tbl[k] for k in sorted((k for k in keys if tbl[k].get("id") in ids), key=order)]
        return found + [c for c in self.extra if c.get("id") in ids]

    def find(self, kind: str, arg: str) -> set[str]:
        """The ids of the contacts that match ``arg`` as ``kind`` (id, email, number, full,
        first: the tests :func:`contact_ids` makes, in its words)."""
        lookup, test = _LOOKUP[kind]
        tbl = self.table
        idx, touched = self._lookup()
        out = {tbl[k]["id"] for k in lookup(idx, arg) if k not in touched and test(tbl[k], arg)}
        for k in touched:
            c = tbl.get(k)
            if c is not None and test(c, arg):
                out.add(c["id"])
        out.update(c["id"] for c in self.extra if test(c, arg))
        return out


def _indexed_ids(ref: str, book: ContactBook) -> set[str]:
    """:func:`contact_ids` through ``book``'s indexes (the same steps, the same answers)."""
    if m := _NAME_ADDR.fullmatch(ref.strip()):
        by_mail = contact_ids(m.group(2), book)
        return by_mail if by_mail or not m.group(1).strip() else contact_ids(m.group(1).strip(' "'), book)
    text = _fold(ref)
    if book.find("id", ref.strip()):
        return {ref.strip()}
    if "@" in text:
        return book.find("email", text)
    if _digits(text) and not any(ch.isalpha() for ch in text):
        return book.find("number", text)
    if m := _TITLED.fullmatch(text):
        return book.find("last", m[1])
    return book.find("full", text) or book.find("first", text)


def contact_ids(ref: Any, contacts: Iterable[Mapping[str, Any]]) -> set[str]:
    """The ids of the contacts that ``ref`` may denote.

    Args:
        ref: a name, first name, title and surname ("Mr Baxter": every contact of that
            surname), e-mail address or phone number (any formatting), or a
            mailbox ``"Name <address>"`` (the address decides; the name when the address is no
            contact's); a contact id (``"c_3"``) denotes that contact. Non-strings denote nobody.
        contacts: contact records with ``id``, ``name``, ``phone`` and ``email``.

    Returns:
        The matching ids: one for an exact reference, several for an ambiguous first name, none
        for a stranger. A first name matches only when it is a whole first word of a name.
    """
    if not isinstance(ref, str) or not ref.strip():
        return set()
    if isinstance(contacts, ContactBook):
        return _indexed_ids(ref, contacts)
    people = list(contacts)
    if m := _NAME_ADDR.fullmatch(ref.strip()):  # "Ana Lima <ana@x.org>": the address decides
        by_mail = contact_ids(m.group(2), people)
        return by_mail if by_mail or not m.group(1).strip() else contact_ids(m.group(1).strip(' "'), people)
    text = _fold(ref)
    by_id = {str(c.get("id")) for c in people if str(c.get("id")) == ref.strip()}
    if by_id:
        return by_id
    if "@" in text:
        return {c["id"] for c in people if c.get("email") and _fold(c["email"]) == text}
    if _digits(text) and not any(ch.isalpha() for ch in text):
        return {c["id"] for c in people if any(same_number(n, text) for n in numbers_of(c))}
    if m := _TITLED.fullmatch(text):
        return {c["id"] for c in people if _surname(c.get("name")) == m[1]}
    full = {c["id"] for c in people if _fold(c.get("name")) == text}
    if full:
        return full
    return {c["id"] for c in people if _fold(c.get("name")).split(" ")[0] == text}


def mentioned_contacts(text: Any, contacts: Iterable[Mapping[str, Any]]) -> list[set[str]]:
    """Each person named in free ``text``, as the set of contact ids that mention may denote.

    A full name counts once (its first name is not counted again); a first name alone counts
    when it stands as a whole word; e-mail addresses and phone numbers of contacts count too.
    Mentions of the same contact are merged. Returns a list of id sets, in order of first
    mention; an ambiguous first name gives a set of several ids. A :class:`ContactBook` is
    searched through its indexes (cost: the text and the episode's writes; same answers).
    """
    if isinstance(contacts, ContactBook):
        return _indexed_mentions(str(text or ""), contacts)
    people = list(contacts)
    src = str(text or "")
    low = src.casefold()
    spans: list[tuple[int, int, set[str]]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e, _ in spans)

    for c in sorted(people, key=lambda c: -len(str(c.get("name") or ""))):
        name = _fold(c.get("name"))
        if not name:
            continue
        for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", low):
            if free(*m.span()):
                spans.append((m.start(), m.end(), {c["id"]}))
    firsts: dict[str, set[str]] = {}
    for c in people:
        first = _fold(c.get("name")).split(" ")[0]
        if first:
            firsts.setdefault(first, set()).add(c["id"])
    for first, ids in firsts.items():
        for m in re.finditer(rf"(?<!\w){re.escape(first)}(?!\w)", low):
            if free(*m.span()):
                spans.append((m.start(), m.end(), set(ids)))
    return _with_addresses(src, spans, free, people)


def _with_addresses(
    src: str,
    spans: list[tuple[int, int, set[str]]],
    free: Callable[[int, int], bool],
    contacts: Any,
) -> list[set[str]]:
    """The end of :func:`mentioned_contacts` (both paths): add the people named by title and
    surname ("Mr Baxter", "Dr. Lang"), e-mail addresses and phone numbers of ``contacts`` found
    in ``src`` where no name matched (``free``), then merge the mentions into id sets in order
    of first mention."""
    for pattern in (_TITLED_IN_TEXT, _EMAIL_IN_TEXT, _PHONE_IN_TEXT):
        for m in pattern.finditer(src):
            ids = contact_ids(m.group(), contacts)
            if ids and free(*m.span()):
                spans.append((m.start(), m.end(), ids))
    out: list[set[str]] = []
    for _, _, ids in sorted(spans, key=lambda s: s[0]):
        if ids not in out:
            out.append(ids)
    return out


def _occurrences(low: str, starts: list[int], ends: list[int], lens: Set[int]) -> dict[str, list[tuple[int, int]]]:
    """Each substring of ``low`` whose length is in ``lens`` that begins at one of ``starts``
    and ends at one of ``ends`` (both sorted), with its spans in order."""
    out: dict[str, list[tuple[int, int]]] = {}
    if not lens:
        return out
    top = max(lens)
    for s in starts:
        for e in ends[bisect_right(ends, s) : bisect_right(ends, s + top)]:
            if e - s in lens:
                out.setdefault(low[s:e], []).append((s, e))
    return out


def _leftmost(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans ``re.finditer`` reports among equally long candidate ``spans`` (sorted):
    leftmost first, each next one starting at or after the end of the last."""
    out: list[tuple[int, int]] = []
    end = 0
    for s, e in spans:
        if s >= end:
            out.append((s, e))
            end = e
    return out


def _indexed_mentions(src: str, book: ContactBook) -> list[set[str]]:
    """:func:`mentioned_contacts` through ``book``'s indexes: the names are looked up among
    the text's word-bounded substrings instead of searched one by one in the text; the contacts
    found are then taken in the scan's order (longest name first, then table order; first names
    in order of first appearance), so the same spans win."""
    low = src.casefold()
    tbl = book.table
    idx, touched = book._lookup()
    order = book._order(idx, touched)
    live = {k: _fold(tbl[k].get("name")) for k in touched if k in tbl}
    starts = [m.start() for m in _WORD_START.finditer(low)]
    ends = [m.start() for m in _WORD_END.finditer(low)]
    spans: list[tuple[int, int, set[str]]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e, _ in spans)

    def current(bucket: dict[str, list[str]], name: str, names: Mapping[str, str]) -> list[str]:
        return [k for k in bucket.get(name, ()) if k not in touched] + [k for k, n in names.items() if n == name]

    lens = idx.lens["full"] | {len(n) for n in live.values() if n}
    people: list[tuple[tuple[int, tuple[int, int]], str, list[tuple[int, int]]]] = []
    for name, found in _occurrences(low, starts, ends, lens).items():
        hits = _leftmost(found)
        for k in current(idx.full, name, live):
            c = tbl[k]
            people.append(((-len(str(c.get("name") or "")), order(k)), c["id"], hits))
    for _, cid, hits in sorted(people, key=lambda p: p[0]):
        for a, b in hits:
            if free(a, b):
                spans.append((a, b, {cid}))
    live_first = {k: n.split(" ")[0] for k, n in live.items()}
    lens = idx.lens["first"] | {len(n) for n in live_first.values() if n}
    groups: list[tuple[tuple[int, int], set[str], list[tuple[int, int]]]] = []
    for first, found in _occurrences(low, starts, ends, lens).items():
        keys = current(idx.first, first, live_first)
        if keys:
            groups.append((min(map(order, keys)), {tbl[k]["id"] for k in keys}, _leftmost(found)))
    for _, ids, hits in sorted(groups, key=lambda g: g[0]):
        for a, b in hits:
            if free(a, b):
                spans.append((a, b, set(ids)))
    return _with_addresses(src, spans, free, book)
