"""Contacts: people with phone numbers, emails, a relation label and a favourite flag.

Table ``contacts.contacts``: ``{"id": "c_1", "name": str, "phone": "+4915...", "email": str | None,
"relation": str | None, "favorite": bool, "birthday": "MM-DD" | None}``.

A contact may have several labelled numbers and e-mail addresses. ``phone`` and ``email`` stay
the primary ones (what every other app reads: messages and calls go to ``phone``), so existing
records keep their meaning; the others are optional fields, absent at their empty value:
``phone_label`` (the primary number's label, ``"mobile"`` when absent), ``other_phones``
(``[{"label": "work", "number": "+49..."}]``), ``email_label`` (``"home"`` when absent) and
``other_emails`` (``[{"label": "work", "address": "..."}]``). Making another number primary swaps
it with the primary one; removing the primary number promotes the first other one.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable, Iterator, Mapping, Set
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import Field
from typing_extensions import NotRequired, TypedDict

from phoneenv.app import App, Deleted
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import (
    BIRTHDAY,
    BOOL,
    AndroidDriver,
    Column,
    DataKind,
    DataRows,
    LabelledKind,
    ProviderTable,
)
from phoneenv.state import table_index
from phoneenv.tools import ToolError, tool

PHONE_PATTERN = r"^\+?[0-9][0-9 \-]{2,19}$"
Phone = Annotated[
    str,
    Field(
        pattern=PHONE_PATTERN,
        description="Phone number, digits with optional leading +",
    ),
]
Name = Annotated[str, Field(min_length=1, max_length=80)]
EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
Email = Annotated[str, Field(pattern=EMAIL_PATTERN, max_length=254, description="An e-mail address")]
Label = Literal["mobile", "home", "work", "other"]
PHONE_DEFAULT_LABEL = "mobile"
EMAIL_DEFAULT_LABEL = "home"
MAX_OTHER = 8
"""Other numbers (and other addresses) one contact may have."""

READ = "android.permission.READ_CONTACTS"
WRITE = "android.permission.WRITE_CONTACTS"


class LabelledNumber(TypedDict):
    """A contact's other phone number and its label."""

    label: Label
    number: str


class LabelledEmail(TypedDict):
    """A contact's other e-mail address and its label."""

    label: Label
    address: str


class Contact(TypedDict):
    """A contact record: ``phone``/``email`` are the primary number and address; the optional
    fields are absent at their empty value (labels at their defaults, mobile and home)."""

    id: str
    name: str
    phone: str
    email: str | None
    relation: str | None
    favorite: bool
    birthday: str | None
    phone_label: NotRequired[Label]
    other_phones: NotRequired[list[LabelledNumber]]
    email_label: NotRequired[Label]
    other_emails: NotRequired[list[LabelledEmail]]


class ContactList(TypedDict):
    """A page of contacts."""

    contacts: list[Contact]
    total: int


def normalize_number(number: str) -> str:
    """Digits of a phone number with a leading ``+`` kept (spaces and dashes dropped)."""
    plus = number.strip().startswith("+")
    digits = "".join(ch for ch in number if ch.isdigit())
    return ("+" if plus else "") + digits


FIELD_ORDER = ("id", "name", "phone", "email", "relation", "favorite", "birthday", "phone_label", "other_phones",
               "email_label", "other_emails")  # fmt: skip
"""The order of a contact's fields in what tools return (as a device reads them back)."""


def view(rec: Mapping[str, Any]) -> Contact:
    """A copy of contact record ``rec`` as tools return it (lists of fresh dicts, so a result never
    aliases the phone's state)."""
    out = {k: rec[k] for k in FIELD_ORDER if k in rec}
    if len(out) != len(rec):  # fields outside FIELD_ORDER follow, in the record's order
        out.update((k, v) for k, v in rec.items() if k not in out)
    for key in ("other_phones", "other_emails"):
        if key in out:
            out[key] = [dict(x) for x in out[key]]
    return out  # type: ignore[return-value]


def numbers_of(rec: Mapping[str, Any]) -> list[str]:
    """Every number of contact record ``rec``: the primary one first, then the others."""
    return [rec["phone"], *(p["number"] for p in rec.get("other_phones") or ())]


def emails_of(rec: Mapping[str, Any]) -> list[str]:
    """Every e-mail address of contact record ``rec``: the primary one first (if any)."""
    first = [rec["email"]] if rec.get("email") else []
    return [*first, *(e["address"] for e in rec.get("other_emails") or ())]


def _digits(text: str) -> str:
    """The digits of ``text``, in order."""
    return "".join(ch for ch in text if ch.isdigit())


def _haystack(rec: Mapping[str, Any]) -> tuple[str, str]:
    """What ``contacts.search`` matches a query against: the casefolded name, e-mails and
    relation, and each number's digits (space-separated)."""
    hay = f"{rec['name']} {' '.join(emails_of(rec))} {rec.get('relation') or ''}".casefold()
    return hay, " ".join(_digits(n) for n in numbers_of(rec))


def _matches(rec: Mapping[str, Any], q: str, qd: str) -> bool:
    """Whether ``contacts.search`` finds ``rec`` for the casefolded query ``q`` (``qd``: its
    digits when there are at least three, else empty)."""
    hay, digits = _haystack(rec)
    return q in hay or (bool(qd) and qd in digits)


def _occurrences(text: str, starts: list[int], q: str) -> Iterator[int]:
    """The positions ``k`` of the records containing ``q`` in ``text``, the records joined by
    ``"\\0"`` with record ``k`` starting at ``starts[k]``; each record once, in order."""
    i = text.find(q) if starts else -1
    while i != -1:
        k = bisect.bisect_right(starts, i) - 1
        yield k
        i = text.find(q, starts[k + 1]) if k + 1 < len(starts) else -1


class _SearchIndex(NamedTuple):
    """A contacts table as ``contacts.search`` reads it, built once per shared table.

    ``ids`` in the search's order (by name; table order among equal names) with ``keys`` the
    matching sort keys ``(name, (0, table position))``; ``hay`` and ``digits`` the records'
    :func:`_haystack` parts joined by ``"\\0"`` in that order, record ``k`` starting at
    ``hay_starts[k]`` and ``digit_starts[k]``; ``pos`` each id's table position.
    """

    ids: list[str]
    keys: list[tuple[str, tuple[int, int]]]
    hay: str
    hay_starts: list[int]
    digits: str
    digit_starts: list[int]
    pos: dict[str, int]

    def matching(self, q: str, qd: str) -> set[int]:
        """The positions of the records :func:`_matches` accepts for ``q`` and ``qd``."""
        if "\0" in q:  # a query with the separator in it can only be matched record by record
            return {k for k in range(len(self.ids)) if q in self.hay[self.hay_starts[k] : self._end(k)]}
        found = set(_occurrences(self.hay, self.hay_starts, q))
        if qd:
            found.update(_occurrences(self.digits, self.digit_starts, qd))
        return found

    def _end(self, k: int) -> int:
        return self.hay_starts[k + 1] - 1 if k + 1 < len(self.hay_starts) else len(self.hay)

    def order(self, tbl: Mapping[str, Any], touched: Set[str]) -> Callable[[str], tuple[int, int]]:
        """A table-position key for the ids of ``tbl`` (a copy-on-write descendant of the indexed
        table), comparable with the indexed ones: ``(0, indexed position)``, or ``(1, n)`` for
        the ids added (or added back) since, which a table keeps after the others in the order
        added. Those are all touched, so the keys from the end of the table up to the first
        untouched one are the only ones that may stand elsewhere than their indexed place."""
        late: dict[str, int] = {}
        if touched:
            for i, k in enumerate(reversed(tbl.keys())):
                if k not in touched:
                    break
                late[k] = -i
        pos = self.pos
        return lambda k: (1, late[k]) if k in late else (0, pos[k])


def _search_index(tbl: Mapping[str, Mapping[str, Any]]) -> _SearchIndex:
    pos = {rid: i for i, rid in enumerate(tbl)}
    order = sorted(tbl, key=lambda rid: (tbl[rid]["name"], pos[rid]))
    parts = [_haystack(tbl[rid]) for rid in order]
    hay_starts, digit_starts = [], []
    at = dt = 0
    for hay, digits in parts:
        hay_starts.append(at)
        digit_starts.append(dt)
        at += len(hay) + 1
        dt += len(digits) + 1
    return _SearchIndex(
        ids=order,
        keys=[(tbl[rid]["name"], (0, pos[rid])) for rid in order],
        hay="\0".join(h for h, _ in parts),
        hay_starts=hay_starts,
        digits="\0".join(d for _, d in parts),
        digit_starts=digit_starts,
        pos=pos,
    )


def same_number(a: str, b: str) -> bool:
    """Whether two phone numbers are the same line (compared on their last 9 digits)."""
    da = "".join(ch for ch in a if ch.isdigit())
    db = "".join(ch for ch in b if ch.isdigit())
    return bool(da) and da[-9:] == db[-9:]


ANDROID = AndroidDriver(
    tables={
        "contacts": ProviderTable(
            table="contacts",
            uri="content://com.android.contacts/raw_contacts",
            write_uri="content://com.android.contacts/raw_contacts?caller_is_syncadapter=true",
            read_where="deleted=0",
            computed={"deleted": lambda row, rows: 0},
            fields={"favorite": Column("starred", "i", BOOL, default=0)},
            children=(
                DataRows(
                    uri="content://com.android.contacts/data",
                    parent_column="raw_contact_id",
                    kinds={
                        "name": DataKind("vnd.android.cursor.item/name", Column("data1")),
                        "relation": DataKind(
                            "vnd.android.cursor.item/relation",
                            Column("data3"),
                            {"data1": ("s", "me"), "data2": ("i", 0)},
                        ),
                        "birthday": DataKind(
                            "vnd.android.cursor.item/contact_event",
                            Column("data1", codec=BIRTHDAY),
                            {"data2": ("i", 3)},
                        ),
                    },
                    labelled=(
                        LabelledKind(
                            "vnd.android.cursor.item/phone_v2",
                            primary="phone",
                            label="phone_label",
                            others="other_phones",
                            item_key="number",
                            labels={"home": 1, "mobile": 2, "work": 3, "other": 7},
                            default_label=PHONE_DEFAULT_LABEL,
                        ),
                        LabelledKind(
                            "vnd.android.cursor.item/email_v2",
                            primary="email",
                            label="email_label",
                            others="other_emails",
                            item_key="address",
                            labels={"home": 1, "work": 2, "other": 3, "mobile": 4},
                            default_label=EMAIL_DEFAULT_LABEL,
                        ),
                    ),
                ),
            ),
            optional=("phone_label", "other_phones", "email_label", "other_emails"),
            order=(
                "name",
                "phone",
                "email",
                "relation",
                "favorite",
                "birthday",
                "phone_label",
                "other_phones",
                "email_label",
                "other_emails",
            ),
            notes="A contact is a local raw contact (no account) whose fields are ContactsContract.Data rows: "
            "name → StructuredName DISPLAY_NAME (data1); every number is a Phone row (NUMBER data1, TYPE data2: "
            "HOME 1, MOBILE 2, WORK 3, OTHER 7), the main one with IS_PRIMARY 1 and the others after it in order; "
            "every address likewise an Email row (TYPE HOME 1, WORK 2, OTHER 3, MOBILE 4); birthday → Event START_DATE --MM-DD (TYPE_BIRTHDAY); favorite → "
            "RawContacts STARRED. Android has no field for how the user knows someone, so relation is a Relation "
            "row of custom TYPE (0) whose LABEL (data3) is the word ('sister') and whose NAME (data1) is 'me'. "
            "Writes use the sync-adapter URI so a delete removes the row instead of flagging it deleted; a "
            "contact with several rows of a single-valued kind shows its last.",
        )
    },
    tools=(
        "contacts.create",
        "contacts.delete",
        "contacts.favorites",
        "contacts.get",
        "contacts.list",
        "contacts.search",
        "contacts.set_favorite",
        "contacts.update",
        "contacts.add_number",
        "contacts.remove_number",
        "contacts.set_primary_number",
        "contacts.add_email",
        "contacts.remove_email",
        "contacts.set_primary_email",
        "contacts.clear_field",
    ),
)
"""Contacts on a device: ContactsContract raw contacts and data rows (``content`` commands)."""


class Contacts(App):
    """The address book."""

    name = "contacts"
    title = "Contacts"
    domain = Domain.CONTACTS
    package = "com.android.contacts"
    permissions = (READ, WRITE)
    tables: ClassVar[dict[str, str]] = {"contacts": "c_"}
    records: ClassVar[dict[str, Any]] = {"contacts": Contact}
    android = ANDROID

    def row(self, table: str, record: dict[str, Any]) -> str:
        star = "* " if record.get("favorite") else ""
        return f"{star}{record['name']}  {record['phone']}"

    def find_by_number(self, number: str) -> dict[str, Any] | None:
        """The contact with number ``number`` (primary or other; formatting ignored), or None."""
        for rec in self.t("contacts").values():
            if any(same_number(n, number) for n in numbers_of(rec)):
                return rec
        return None

    def _dup_number(self, number: str, skip: str | None = None) -> None:
        dup = self.find_by_number(number)
        if dup is not None and dup["id"] != skip:
            raise ToolError(
                ErrorKind.CONFLICT,
                f"{dup['name']} ({dup['id']}) already has number {number}",
                hint="a number belongs to one contact; update that contact instead",
                candidates=[dup["id"]],
            )

    def _store(self, contact_id: str, rec: dict[str, Any]) -> Contact:
        """Write ``rec`` (optional fields at their empty value dropped) and show it."""
        new = dict(rec)
        for key, empty in (
            ("phone_label", PHONE_DEFAULT_LABEL),
            ("email_label", EMAIL_DEFAULT_LABEL),
            ("other_phones", ()),
            ("other_emails", ()),
        ):
            if key in new and (new[key] == empty or (isinstance(empty, tuple) and not new[key])):
                del new[key]
        if new.get("email") is None:
            new.pop("email_label", None)
        stored = self.rewrite("contacts", contact_id, new)
        self.show_detail("contacts", contact_id)
        return view(stored)

    @tool(permissions=(READ,))
    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=100)],
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> ContactList:
        """Find contacts whose name, a number, an email or the relation contains the query
        (case-insensitive).

        Args:
            query: Part of a name ("ana"), a number, an email or a relation ("sister").
            limit: Maximum number of contacts returned.
        """
        q = query.casefold().strip()
        qd = _digits(q)
        qd = qd if len(qd) >= 3 else ""
        tbl = self.t("contacts")
        index, touched = table_index(tbl, "contacts.search", _search_index)
        # the untouched contacts, from the index; the ones written this episode, one by one
        old = sorted(k for k in index.matching(q, qd) if index.ids[k] not in touched)
        new = {rid: r for rid in touched if (r := tbl.get(rid)) is not None and _matches(r, q, qd)}
        order = index.order(tbl, touched)
        merged = heapq.merge(
            ((index.keys[k], tbl[index.ids[k]]) for k in old),
            sorted((((r["name"], order(rid)), r) for rid, r in new.items()), key=lambda kr: kr[0]),
            key=lambda kr: kr[0],
        )
        hits = [r for _, r in itertools.islice(merged, limit)]
        self.show_list("contacts", [r["id"] for r in hits])
        return {"contacts": [view(r) for r in hits], "total": len(old) + len(new)}

    @tool(permissions=(READ,))
    def get(self, contact_id: str) -> Contact:
        """Get one contact by id.

        Args:
            contact_id: The contact's id, e.g. "c_3".
        """
        rec = self.require("contacts", contact_id, "contact", "contacts.search")
        self.show_detail("contacts", contact_id)
        return view(rec)

    @tool(name="list", permissions=(READ,))
    def list_(
        self,
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
    ) -> ContactList:
        """List contacts alphabetically.

        Args:
            offset: Number of contacts to skip.
            limit: Maximum number of contacts returned.
        """
        recs = sorted(self.t("contacts").values(), key=lambda r: r["name"])
        page = recs[offset : offset + limit]
        self.show_list("contacts", [r["id"] for r in page])
        return {"contacts": [view(r) for r in page], "total": len(recs)}

    @tool(permissions=(READ,))
    def favorites(self) -> ContactList:
        """List the favourite contacts."""
        recs = sorted(
            (r for r in self.t("contacts").values() if r["favorite"]),
            key=lambda r: r["name"],
        )
        self.show_list("contacts", [r["id"] for r in recs])
        return {"contacts": [view(r) for r in recs], "total": len(recs)}

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("contacts",))
    def create(
        self,
        name: Name,
        phone: Phone,
        email: Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")] | None = None,
        relation: Annotated[str, Field(max_length=40)] | None = None,
        birthday: Annotated[str, Field(pattern=r"^\d{2}-\d{2}$")] | None = None,
    ) -> Contact:
        """Create a contact. A contact with the same number already present is a conflict.

        Args:
            name: Full name.
            phone: Phone number.
            email: Email address.
            relation: How the user knows them ("sister", "dentist").
            birthday: Birthday as MM-DD.
        """
        dup = self.find_by_number(phone)
        if dup is not None:
            raise ToolError(
                ErrorKind.CONFLICT,
                f"{dup['name']} ({dup['id']}) already has number {dup['phone']}",
                hint="update that contact with contacts.update instead",
                candidates=[dup["id"]],
            )
        rec = {
            "id": self.new_id("contacts"),
            "name": name.strip(),
            "phone": normalize_number(phone),
            "email": email,
            "relation": relation,
            "favorite": False,
            "birthday": birthday,
        }
        self.put("contacts", rec)
        self.show_detail("contacts", rec["id"])
        return view(rec)

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("contacts",))
    def update(
        self,
        contact_id: str,
        name: Name | None = None,
        phone: Phone | None = None,
        email: Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")] | None = None,
        relation: Annotated[str, Field(max_length=40)] | None = None,
        birthday: Annotated[str, Field(pattern=r"^\d{2}-\d{2}$")] | None = None,
    ) -> Contact:
        """Change fields of a contact; fields left out stay as they are.

        Args:
            contact_id: The contact's id.
            name: New full name.
            phone: New phone number.
            email: New email address.
            relation: New relation label.
            birthday: New birthday as MM-DD.
        """
        self.require("contacts", contact_id, "contact", "contacts.search")
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name.strip()
        if phone is not None:
            dup = self.find_by_number(phone)
            if dup is not None and dup["id"] != contact_id:
                raise ToolError(
                    ErrorKind.CONFLICT,
                    f"{dup['name']} ({dup['id']}) already has number {dup['phone']}",
                )
            changes["phone"] = normalize_number(phone)
        for key, val in (
            ("email", email),
            ("relation", relation),
            ("birthday", birthday),
        ):
            if val is not None:
                changes[key] = val
        if not changes:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "nothing to update",
                hint="pass at least one field to change",
            )
        rec = self.patch("contacts", contact_id, **changes)
        self.show_detail("contacts", contact_id)
        return view(rec)

    @tool(effect=Effect.SENSITIVE, permissions=(READ, WRITE), writes=("contacts",))
    def delete(self, contact_id: str) -> Deleted:
        """Delete a contact.

        Args:
            contact_id: The contact's id.
        """
        self.require("contacts", contact_id, "contact", "contacts.search")
        self.remove("contacts", contact_id)
        self.show_list("contacts", [])
        return {"deleted": contact_id}

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("contacts",))
    def set_favorite(self, contact_id: str, favorite: bool = True) -> Contact:
        """Mark or unmark a contact as favourite.

        Args:
            contact_id: The contact's id.
            favorite: True to mark, false to unmark.
        """
        self.require("contacts", contact_id, "contact", "contacts.search")
        rec = self.patch("contacts", contact_id, favorite=favorite)
        self.show_detail("contacts", contact_id)
        return view(rec)

    # -- several numbers and addresses ------------------------------------------------------------
    def _find_number(self, rec: Mapping[str, Any], number: str) -> int:
        """-1 for the primary number, else the index in ``other_phones``; not_found otherwise."""
        if same_number(rec["phone"], number):
            return -1
        for i, p in enumerate(rec.get("other_phones") or ()):
            if same_number(p["number"], number):
                return i
        raise ToolError(
            ErrorKind.NOT_FOUND,
            f"{rec['name']} has no number {number}",
            hint=f"call contacts.get with contact_id={rec['id']!r} to see their numbers",
            candidates=numbers_of(rec),
        )

    def _find_email(self, rec: Mapping[str, Any], address: str) -> int:
        """-1 for the primary address, else the index in ``other_emails``; not_found otherwise."""
        key = address.strip().casefold()
        if (rec.get("email") or "").casefold() == key:
            return -1
        for i, e in enumerate(rec.get("other_emails") or ()):
            if e["address"].casefold() == key:
                return i
        raise ToolError(
            ErrorKind.NOT_FOUND,
            f"{rec['name']} has no e-mail address {address}",
            hint=f"call contacts.get with contact_id={rec['id']!r} to see their addresses",
            candidates=emails_of(rec),
        )

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("contacts",))
    def add_number(self, contact_id: str, number: Phone, label: Label = "mobile", primary: bool = False) -> Contact:
        """Add another phone number to a contact, with a label.

        Args:
            contact_id: The contact's id, e.g. "c_3".
            number: The number to add.
            label: What kind of number it is: mobile, home, work or other.
            primary: Make it the contact's main number (calls and texts go to it); the old main
                number is kept as another number.
        """
        rec = self.require("contacts", contact_id, "contact", "contacts.search")
        self._dup_number(number)
        others = list(rec.get("other_phones") or ())
        if len(others) >= MAX_OTHER:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"{rec['name']} already has {MAX_OTHER} other numbers",
                hint="remove one with contacts.remove_number first",
            )
        entry = {"label": label, "number": normalize_number(number)}
        if primary:
            old = {"label": rec.get("phone_label", PHONE_DEFAULT_LABEL), "number": rec["phone"]}
            new = {**rec, "phone": entry["number"], "phone_label": label, "other_phones": (old, *others)}
        else:
            new = {**rec, "other_phones": (*others, entry)}
        return self._store(contact_id, new)

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("contacts",))
    def remove_number(self, contact_id: str, number: Phone) -> Contact:
        """Remove one of a contact's phone numbers. Removing the main number makes the first
        other number the main one; a contact's only number cannot be removed.

        Args:
            contact_id: The contact's id, e.g. "c_3".
            number: The number to remove, as the contact lists it (formatting ignored).
        """
        rec = self.require("contacts", contact_id, "contact", "contacts.search")
        i = self._find_number(rec, number)
        others = list(rec.get("other_phones") or ())
        if i >= 0:
            del others[i]
            return self._store(contact_id, {**rec, "other_phones": tuple(others)})
        if not others:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"{rec['phone']} is {rec['name']}'s only number",
                hint="a contact needs a number: change it with contacts.update, or delete the contact",
            )
        first = others.pop(0)
        new = {**rec, "phone": first["number"], "phone_label": first["label"], "other_phones": tuple(others)}
        return self._store(contact_id, new)

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("contacts",))
    def set_primary_number(self, contact_id: str, number: Phone) -> Contact:
        """Make one of a contact's other numbers the main one (calls and texts go to it); the
        old main number stays as another number.

        Args:
            contact_id: The contact's id, e.g. "c_3".
            number: One of the contact's numbers.
        """
        rec = self.require("contacts", contact_id, "contact", "contacts.search")
        i = self._find_number(rec, number)
        if i < 0:
            raise ToolError(
                ErrorKind.CONFLICT,
                f"{rec['phone']} already is {rec['name']}'s main number",
                hint="nothing to do",
            )
        others = list(rec.get("other_phones") or ())
        chosen = others[i]
        others[i] = {"label": rec.get("phone_label", PHONE_DEFAULT_LABEL), "number": rec["phone"]}
        new = {**rec, "phone": chosen["number"], "phone_label": chosen["label"], "other_phones": tuple(others)}
        return self._store(contact_id, new)

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("contacts",))
    def add_email(self, contact_id: str, address: Email, label: Label = "home", primary: bool = False) -> Contact:
        """Add an e-mail address to a contact, with a label. A contact without an address gets
        it as the main one.

        Args:
            contact_id: The contact's id, e.g. "c_3".
            address: The address to add.
            label: What kind of address it is: home, work, mobile or other.
            primary: Make it the main address (mail goes to it); the old main address is kept.
        """
        rec = self.require("contacts", contact_id, "contact", "contacts.search")
        address = address.strip()
        if any(a.casefold() == address.casefold() for a in emails_of(rec)):
            raise ToolError(
                ErrorKind.CONFLICT,
                f"{rec['name']} already has {address}",
                hint="nothing to do; contacts.get shows the addresses",
                candidates=emails_of(rec),
            )
        others = list(rec.get("other_emails") or ())
        if len(others) >= MAX_OTHER:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"{rec['name']} already has {MAX_OTHER} other addresses",
                hint="remove one with contacts.remove_email first",
            )
        entry = {"label": label, "address": address}
        if rec.get("email") is None:
            new = {**rec, "email": address, "email_label": label}
        elif primary:
            old = {"label": rec.get("email_label", EMAIL_DEFAULT_LABEL), "address": rec["email"]}
            new = {**rec, "email": address, "email_label": label, "other_emails": (old, *others)}
        else:
            new = {**rec, "other_emails": (*others, entry)}
        return self._store(contact_id, new)

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("contacts",))
    def remove_email(self, contact_id: str, address: Email) -> Contact:
        """Remove one of a contact's e-mail addresses. Removing the main address makes the first
        other address the main one.

        Args:
            contact_id: The contact's id, e.g. "c_3".
            address: The address to remove.
        """
        rec = self.require("contacts", contact_id, "contact", "contacts.search")
        i = self._find_email(rec, address)
        others = list(rec.get("other_emails") or ())
        if i >= 0:
            del others[i]
            return self._store(contact_id, {**rec, "other_emails": tuple(others)})
        if not others:
            new = {**rec, "email": None}
            new.pop("email_label", None)
            return self._store(contact_id, new)
        first = others.pop(0)
        new = {**rec, "email": first["address"], "email_label": first["label"], "other_emails": tuple(others)}
        return self._store(contact_id, new)

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("contacts",))
    def set_primary_email(self, contact_id: str, address: Email) -> Contact:
        """Make one of a contact's other e-mail addresses the main one.

        Args:
            contact_id: The contact's id, e.g. "c_3".
            address: One of the contact's addresses.
        """
        rec = self.require("contacts", contact_id, "contact", "contacts.search")
        i = self._find_email(rec, address)
        if i < 0:
            raise ToolError(
                ErrorKind.CONFLICT, f"{rec['email']} already is {rec['name']}'s main address", hint="nothing to do"
            )
        others = list(rec.get("other_emails") or ())
        chosen = others[i]
        others[i] = {"label": rec.get("email_label", EMAIL_DEFAULT_LABEL), "address": rec["email"]}
        new = {**rec, "email": chosen["address"], "email_label": chosen["label"], "other_emails": tuple(others)}
        return self._store(contact_id, new)

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE), writes=("contacts",))
    def clear_field(self, contact_id: str, field: Literal["email", "birthday", "relation"]) -> Contact:
        """Remove a field from a contact: "email" removes every e-mail address, "birthday" the
        birthday, "relation" how the user knows them. (contacts.update can only set values.)

        Args:
            contact_id: The contact's id, e.g. "c_3".
            field: The field to clear: email, birthday or relation.
        """
        rec = self.require("contacts", contact_id, "contact", "contacts.search")
        empty = not emails_of(rec) if field == "email" else rec.get(field) is None
        if empty:
            raise ToolError(
                ErrorKind.CONFLICT,
                f"{rec['name']} has no {field}",
                hint="nothing to clear",
                path="/field",
            )
        new = {**rec, field: None}
        if field == "email":
            new.pop("email_label", None)
            new.pop("other_emails", None)
        return self._store(contact_id, new)
