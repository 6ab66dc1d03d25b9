"""Contacts: people with phone numbers, emails, a relation label and a favourite flag.

Table ``contacts.contacts``: ``{"id": "c_1", "name": str, "phone": "+4915...", "email": str | None,
"relation": str | None, "favorite": bool, "birthday": "MM-DD" | None}``.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, Deleted, listing
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import BIRTHDAY, BOOL, AndroidDriver, Column, DataKind, DataRows, ProviderTable
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

READ = "android.permission.READ_CONTACTS"
WRITE = "android.permission.WRITE_CONTACTS"


class Contact(TypedDict):
    """A contact record."""

    id: str
    name: str
    phone: str
    email: str | None
    relation: str | None
    favorite: bool
    birthday: str | None


class ContactList(TypedDict):
    """A page of contacts."""

    contacts: list[Contact]
    total: int


def normalize_number(number: str) -> str:
    """Digits of a phone number with a leading ``+`` kept (spaces and dashes dropped)."""
    plus = number.strip().startswith("+")
    digits = "".join(ch for ch in number if ch.isdigit())
    return ("+" if plus else "") + digits


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
                        "phone": DataKind("vnd.android.cursor.item/phone_v2", Column("data1"), {"data2": ("i", 2)}),
                        "email": DataKind("vnd.android.cursor.item/email_v2", Column("data1"), {"data2": ("i", 1)}),
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
                ),
            ),
            order=("name", "phone", "email", "relation", "favorite", "birthday"),
            notes="A contact is a local raw contact (no account) whose fields are ContactsContract.Data rows: "
            "name → StructuredName DISPLAY_NAME (data1); phone → Phone NUMBER (data1, TYPE_MOBILE); email → "
            "Email ADDRESS (data1, TYPE_HOME); birthday → Event START_DATE --MM-DD (TYPE_BIRTHDAY); favorite → "
            "RawContacts STARRED. Android has no field for how the user knows someone, so relation is a Relation "
            "row of custom TYPE (0) whose LABEL (data3) is the word ('sister') and whose NAME (data1) is 'me'. "
            "Writes use the sync-adapter URI so a delete removes the row instead of flagging it deleted; a "
            "contact with several rows of one kind shows its last.",
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
        """The contact whose number is ``number`` (formatting ignored), or None."""
        for rec in self.t("contacts").values():
            if same_number(rec["phone"], number):
                return rec
        return None

    @tool(permissions=(READ,))
    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=100)],
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> ContactList:
        """Find contacts whose name, number, email or relation contains the query (case-insensitive).

        Args:
            query: Part of a name ("ana"), a number, an email or a relation ("sister").
            limit: Maximum number of contacts returned.
        """
        q = query.casefold().strip()
        qd = "".join(ch for ch in q if ch.isdigit())
        hits = []
        for rec in self.t("contacts").values():
            hay = f"{rec['name']} {rec.get('email') or ''} {rec.get('relation') or ''}".casefold()
            if q in hay or (len(qd) >= 3 and qd in "".join(ch for ch in rec["phone"] if ch.isdigit())):
                hits.append(rec)
        hits.sort(key=lambda r: r["name"])
        self.show_list("contacts", [r["id"] for r in hits[:limit]])
        return {"contacts": listing(hits[:limit]), "total": len(hits)}

    @tool(permissions=(READ,))
    def get(self, contact_id: str) -> Contact:
        """Get one contact by id.

        Args:
            contact_id: The contact's id, e.g. "c_3".
        """
        rec = self.require("contacts", contact_id, "contact", "contacts.search")
        self.show_detail("contacts", contact_id)
        return dict(rec)  # type: ignore[return-value]

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
        return {"contacts": listing(page), "total": len(recs)}

    @tool(permissions=(READ,))
    def favorites(self) -> ContactList:
        """List the favourite contacts."""
        recs = sorted(
            (r for r in self.t("contacts").values() if r["favorite"]),
            key=lambda r: r["name"],
        )
        self.show_list("contacts", [r["id"] for r in recs])
        return {"contacts": listing(recs), "total": len(recs)}

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE))
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
        return dict(rec)  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE))
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
        return dict(rec)  # type: ignore[return-value]

    @tool(effect=Effect.SENSITIVE, permissions=(READ, WRITE))
    def delete(self, contact_id: str) -> Deleted:
        """Delete a contact.

        Args:
            contact_id: The contact's id.
        """
        self.require("contacts", contact_id, "contact", "contacts.search")
        self.remove("contacts", contact_id)
        self.show_list("contacts", [])
        return {"deleted": contact_id}

    @tool(effect=Effect.WRITE, permissions=(READ, WRITE))
    def set_favorite(self, contact_id: str, favorite: bool = True) -> Contact:
        """Mark or unmark a contact as favourite.

        Args:
            contact_id: The contact's id.
            favorite: True to mark, false to unmark.
        """
        self.require("contacts", contact_id, "contact", "contacts.search")
        rec = self.patch("contacts", contact_id, favorite=favorite)
        self.show_detail("contacts", contact_id)
        return dict(rec)  # type: ignore[return-value]
