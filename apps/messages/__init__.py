"""Messages: SMS conversations with phone numbers, grouped into one thread per number.

Table ``messages.messages``: ``{"id": "m_1", "number": "+4915...", "direction": "in" | "out",
"body": str, "time": "YYYY-MM-DDTHH:MM:SS", "read": bool}``. ``number`` is the other party's
normalized number (:func:`apps.contacts.normalize_number`); two numbers are the same thread when
:func:`apps.contacts.same_number` says so. Contact names come from ``contacts.contacts``.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence, Set
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import Field
from typing_extensions import NotRequired, TypedDict

from apps.contacts import PHONE_PATTERN, normalize_number, same_number
from phoneenv.app import App, Deleted, id_key
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import (
    BOOL,
    AndroidDriver,
    Column,
    Intent,
    ProviderTable,
    TypedInsert,
    Wire,
    enum_codec,
    local_time_codec,
)
from phoneenv.state import table_index
from phoneenv.tools import ToolError, tool

READ = "android.permission.READ_SMS"
SEND = "android.permission.SEND_SMS"

Number = Annotated[
    str,
    Field(
        pattern=PHONE_PATTERN,
        description="Phone number, digits with optional leading + (spaces and dashes ignored)",
    ),
]
Body = Annotated[str, Field(min_length=1, max_length=1000)]
Limit = Annotated[int, Field(ge=1, le=100)]


class Message(TypedDict):
    """An SMS message; ``contact`` is the name saved for ``number``, if any."""

    id: str
    number: str
    contact: str | None
    direction: Literal["in", "out"]
    body: str
    time: str
    read: bool


class StoredMessage(TypedDict):
    """An SMS message as stored (``contact`` is looked up when read); ``attachments`` (gallery
    photo ids) only on a message sent with photos."""

    id: str
    number: str
    direction: Literal["in", "out"]
    body: str
    time: str
    read: bool
    attachments: NotRequired[list[str]]


class PhotoMessage(Message):
    """A message sent with photos: the gallery ids it carries."""

    attachments: list[str]


class MessageList(TypedDict):
    """Messages and how many matched in all."""

    messages: list[Message]
    total: int


class Thread(TypedDict):
    """A conversation with one number: its newest message and how many are unread."""

    number: str
    contact: str | None
    last_message: Message
    unread: int
    count: int


class ThreadList(TypedDict):
    """Conversations, newest first."""

    threads: list[Thread]
    total: int


class Conversation(TypedDict):
    """The messages exchanged with one number, oldest first."""

    number: str
    contact: str | None
    messages: list[Message]
    unread: int
    total: int


class MarkedRead(TypedDict):
    """How many incoming messages of a thread were marked read."""

    number: str
    marked: int


def _chrono(rec: dict[str, Any]) -> tuple[str, tuple[str, int]]:
    """Chronological sort key: time, then id."""
    return rec["time"], id_key(rec["id"])


_NOT_DIGITS = str.maketrans("", "", "".join(c for c in map(chr, range(128)) if not c.isdigit()))


def _line(number: Any) -> str:
    """The key two numbers share when :func:`apps.contacts.same_number` says they are the same
    line: their last 9 digits ("" for a number without digits, which is no one's)."""
    text = str(number or "")
    if text.isascii():  # the common case, in C
        return text.translate(_NOT_DIGITS)[-9:]
    return "".join(ch for ch in text if ch.isdigit())[-9:]


class _Newest(NamedTuple):
    """A messages table newest first (as :meth:`Messages.search` lists it), column by column."""

    keys: list[tuple[str, tuple[str, int]]]
    ids: list[str]
    bodies: list[str]  # casefolded
    lines: list[str]
    distinct: frozenset[str]  # the lines


def _newest(tbl: Mapping[str, Mapping[str, Any]]) -> _Newest:
    recs = sorted(tbl.values(), key=_chrono, reverse=True)  # type: ignore[arg-type]
    lines = [_line(r["number"]) for r in recs]
    return _Newest(
        [_chrono(r) for r in recs],  # type: ignore[arg-type]
        [r["id"] for r in recs],
        [r["body"].casefold() for r in recs],
        lines,
        frozenset(lines),
    )


def _messages_by_line(tbl: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """A messages table's ids by line (:func:`_line` of the number; none for a number without
    digits, which is no one's line), in table order."""
    out: dict[str, list[str]] = {}
    for rid, rec in tbl.items():
        key = _line(rec["number"])
        if key:
            out.setdefault(key, []).append(rid)
    return out


class _Lines(NamedTuple):
    """A contacts table by line (:func:`_line` of the primary number): the ids with each line in
    table order, the casefolded name of the first of them, and each id's line."""

    ids: dict[str, list[str]]
    first: dict[str, str]
    line_of: dict[str, str]


def _contact_lines(tbl: Mapping[str, Mapping[str, Any]]) -> _Lines:
    out = _Lines({}, {}, {})
    for rid, rec in tbl.items():
        key = _line(rec.get("phone", ""))
        if key:
            out.ids.setdefault(key, []).append(rid)
            out.first.setdefault(key, rec["name"].casefold())
            out.line_of[rid] = key
    return out


class _Names:
    """Contact names by number for one call, as :meth:`Messages.contact_name` finds them: from
    the contacts table's line index, looking at the contacts written this episode themselves."""

    def __init__(self, tables: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
        tbl = self.tbl = tables.get("contacts.contacts", {})
        self.index, self.touched = table_index(tbl, "contacts.lines", _contact_lines)
        # lines a contact written this episode has now, and those whose index entry it was in
        self.touched_lines = {_line(tbl[r].get("phone", "")) for r in self.touched if r in tbl}
        self.dirty = self.touched_lines.union(self.index.line_of[r] for r in self.touched if r in self.index.line_of)
        self.by_line: dict[str, str | None] = {}

    def name(self, key: str) -> str | None:
        """The name of the first contact (in table order) whose primary number has line ``key``."""
        if not key:
            return None
        if key in self.by_line:
            return self.by_line[key]
        found = None
        if key in self.touched_lines:  # a contact written this episode has it: look at them all
            found = next((r["name"] for r in self.tbl.values() if _line(r.get("phone", "")) == key), None)
        else:  # the first indexed one not written this episode (one written has another line now)
            touched = self.touched
            rid = next((r for r in self.index.ids.get(key, ()) if r not in touched), None)
            found = None if rid is None else self.tbl[rid]["name"]
        self.by_line[key] = found
        return found

    def matching(self, q: str, lines: Set[str]) -> set[str]:
        """The lines among ``lines`` whose contact's name contains ``q`` (casefolded)."""
        dirty = self.dirty
        out = {k for k, n in self.index.first.items() if q in n and k in lines and k not in dirty}
        out.update(k for k in dirty & lines if (n := self.name(k)) is not None and q in n.casefold())
        return out


PACKAGE = "com.google.android.apps.messaging"


def _thread_id(row: Mapping[str, Wire], rows: Sequence[Mapping[str, Wire]]) -> Wire:
    """Telephony's ``thread_id``: one conversation per address (numbers compared with
    :func:`apps.contacts.same_number`), numbered 1, 2, ... by first appearance in ``_id`` order."""
    seen: list[str] = []
    for other in sorted(rows, key=lambda r: int(r["_id"] or 0)):
        address = str(other.get("address") or "")
        if not any(same_number(a, address) for a in seen):
            seen.append(address)
    mine = str(row.get("address") or "")
    return next((i for i, a in enumerate(seen, 1) if same_number(a, mine)), None)


ANDROID = AndroidDriver(
    tables={
        "messages": ProviderTable(
            table="messages",
            uri="content://sms",
            fields={
                "number": Column("address"),
                "direction": Column("type", "i", enum_codec("sms type", {"in": 1, "out": 2})),
                "body": Column("body"),
                "time": Column("date", "l", local_time_codec("seconds")),
                "read": Column("read", "i", BOOL, default=0),
            },
            computed={"thread_id": _thread_id},
            notes="Telephony.Sms: number → address, direction → type (MESSAGE_TYPE_INBOX 1 / SENT 2), "
            "time → date (epoch ms), read → read; thread_id is the provider's own.",
        )
    },
    typed={
        "messages": TypedInsert(
            when={"direction": "out"},
            compose=Intent("android.intent.action.SENDTO", data="smsto:{number}", package=PACKAGE),
            text_field="body",
            submit=("KEYCODE_ENTER",),
        )
    },
    unavailable={
        "messages.send_photos": "photos go out as an MMS, which the compose screen builds from a picked "
        "attachment; content://sms holds no attachments and writing content://mms parts by hand would "
        "fake the sending",
    },
    tools=(
        "messages.delete",
        "messages.forward",
        "messages.get",
        "messages.list_threads",
        "messages.list_unread",
        "messages.mark_read",
        "messages.read_thread",
        "messages.search",
        "messages.send",
    ),
    notes="Sending types the text into the Messages compose screen (SENDTO smsto:NUMBER, then input "
    "text, then Enter) and the app writes the sent row, so Messages must be the default SMS app with "
    "'Press Enter to send' on; text that is not printable ASCII is typed through ADBKeyBoard "
    "(com.android.adbkeyboard, set as the input method). Seeding and other writes go through "
    "content://sms, which needs the shell allowed to write SMS (adb root, or "
    "`appops set com.android.shell WRITE_SMS allow`).",
)
"""Messages on a device: ``content://sms`` and the compose screen."""


class Messages(App):
    """SMS messaging."""

    name = "messages"
    title = "Messages"
    domain = Domain.COMMUNICATION
    package = PACKAGE
    permissions = (READ, SEND)
    tables: ClassVar[dict[str, str]] = {"messages": "m_"}
    records: ClassVar[dict[str, Any]] = {"messages": StoredMessage}
    android = ANDROID

    # -- helpers --------------------------------------------------------------------------------
    def contact_name(self, number: str) -> str | None:
        """The name of the contact whose number is ``number`` (formatting ignored), or None."""
        return _Names(self.phone.state.tables).name(_line(number))

    def _out(self, rec: dict[str, Any], names: dict[str, str | None] | None = None) -> Message:
        if names is None:
            contact = self.contact_name(rec["number"])
        else:
            if rec["number"] not in names:
                names[rec["number"]] = self.contact_name(rec["number"])
            contact = names[rec["number"]]
        return {
            "id": rec["id"],
            "number": rec["number"],
            "contact": contact,
            "direction": rec["direction"],
            "body": rec["body"],
            "time": rec["time"],
            "read": bool(rec.get("read", False)),
        }

    def _thread(self, number: str) -> list[dict[str, Any]]:
        """Messages exchanged with ``number`` (:func:`apps.contacts.same_number`), oldest first:
        the untouched ones from the table's line index, the ones written this episode one by
        one, so a send on a phone of 100,000 messages costs the thread, not the table."""
        key = _line(number)
        if not key:
            return []
        tbl = self.t("messages")
        by_line, touched = table_index(tbl, "messages.by_line", _messages_by_line)
        recs = [tbl[rid] for rid in by_line.get(key, ()) if rid not in touched]
        recs += [r for rid in touched if (r := tbl.get(rid)) is not None and _line(r["number"]) == key]
        recs.sort(key=_chrono)
        return recs

    def _require_thread(self, number: str) -> list[dict[str, Any]]:
        recs = self._thread(number)
        if not recs:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no messages with {number}",
                hint="call messages.list_threads or messages.search to find the conversation; "
                "messages.send starts a new one",
            )
        return recs

    def _store(self, number: str, body: str) -> dict[str, Any]:
        rec = {
            "id": self.new_id("messages"),
            "number": normalize_number(number),
            "direction": "out",
            "body": body,
            "time": self.now_str(),
            "read": True,
        }
        self.put("messages", rec)
        return rec

    def row(self, table: str, record: dict[str, Any]) -> str:
        who = self.contact_name(record["number"]) or record["number"]
        arrow = "->" if record["direction"] == "out" else "<-"
        dot = "" if record.get("read", True) else "* "
        return f"{dot}{arrow} {who}: {record['body']}"

    # -- tools ----------------------------------------------------------------------------------
    @tool(permissions=(READ,))
    def list_threads(self, limit: Limit = 20) -> ThreadList:
        """List conversations, one per phone number, the most recently active first. Each has the
        contact name (if the number is saved), the newest message and the number of unread
        incoming messages.

        Args:
            limit: Maximum number of conversations returned.
        """
        by_line: dict[Any, list[dict[str, Any]]] = {}  # one thread per line, newest first
        for rec in sorted(self.t("messages").values(), key=_chrono, reverse=True):
            key = _line(rec["number"]) or ("", rec["id"])  # no digits: no one's line, a thread alone
            by_line.setdefault(key, []).append(rec)
        groups = list(by_line.values())
        names: dict[str, str | None] = {}
        threads: list[Thread] = []
        for grp in groups[:limit]:
            last = self._out(grp[0], names)
            threads.append(
                {
                    "number": last["number"],
                    "contact": last["contact"],
                    "last_message": last,
                    "unread": sum(1 for r in grp if r["direction"] == "in" and not r.get("read", False)),
                    "count": len(grp),
                }
            )
        self.show_list("messages", [t["last_message"]["id"] for t in threads])
        return {"threads": threads, "total": len(groups)}

    @tool(permissions=(READ,))
    def read_thread(self, number: Number, limit: Limit = 50) -> Conversation:
        """Show the conversation with a phone number, oldest message first (the newest `limit`
        messages). Reading does not mark messages read; call messages.mark_read for that.

        Args:
            number: The other party's phone number, e.g. "+49 151 2345678".
            limit: Maximum number of messages returned (the most recent ones).
        """
        recs = self._require_thread(number)
        names: dict[str, str | None] = {}
        page = [self._out(r, names) for r in recs[-limit:]]
        self.show_list("messages", [m["id"] for m in page])
        return {
            "number": recs[-1]["number"],
            "contact": page[-1]["contact"],
            "messages": page,
            "unread": sum(1 for r in recs if r["direction"] == "in" and not r.get("read", False)),
            "total": len(recs),
        }

    @tool(permissions=(READ,))
    def get(self, message_id: str) -> Message:
        """Get one message by id.

        Args:
            message_id: The message's id, e.g. "m_3".
        """
        rec = self.require("messages", message_id, "message", "messages.search")
        self.show_detail("messages", message_id)
        return self._out(rec)

    @tool(permissions=(READ,))
    def search(self, query: Annotated[str, Field(min_length=1, max_length=100)], limit: Limit = 20) -> MessageList:
        """Find messages whose text or sender/recipient contact name contains the query
        (case-insensitive), newest first.

        Args:
            query: Words to look for, e.g. "dinner" or a contact's name "ana".
            limit: Maximum number of messages returned.
        """
        q = query.casefold().strip()
        tbl = self.t("messages")
        newest, touched = table_index(tbl, "messages.newest", _newest)
        names = _Names(self.phone.state.tables)
        lines = newest.distinct.union(_line(tbl[r]["number"]) for r in touched if r in tbl)
        by_name = names.matching(q, lines)
        # the untouched messages, from the index; the ones written this episode, one by one
        old = [
            i
            for i, (body, line) in enumerate(zip(newest.bodies, newest.lines, strict=True))
            if (q in body or line in by_name) and newest.ids[i] not in touched
        ]
        new = sorted(
            (
                r
                for rid in touched
                if (r := tbl.get(rid)) is not None and (q in r["body"].casefold() or _line(r["number"]) in by_name)
            ),
            key=_chrono,
            reverse=True,
        )
        merged = heapq.merge(
            ((newest.keys[i], tbl[newest.ids[i]]) for i in old),
            ((_chrono(r), r) for r in new),
            key=lambda kr: kr[0],
            reverse=True,
        )
        cache: dict[str, str | None] = {}
        page = [self._out(r, cache) for _, r in (next(merged) for _ in range(min(limit, len(old) + len(new))))]
        self.show_list("messages", [m["id"] for m in page])
        return {"messages": page, "total": len(old) + len(new)}

    @tool(permissions=(READ,))
    def list_unread(self, limit: Limit = 50) -> MessageList:
        """List unread incoming messages from all conversations, newest first.

        Args:
            limit: Maximum number of messages returned.
        """
        recs = [r for r in self.t("messages").values() if r["direction"] == "in" and not r.get("read", False)]
        recs.sort(key=_chrono, reverse=True)
        names: dict[str, str | None] = {}
        page = [self._out(r, names) for r in recs[:limit]]
        self.show_list("messages", [m["id"] for m in page])
        return {"messages": page, "total": len(recs)}

    @tool(effect=Effect.WRITE, permissions=(READ,), writes=("messages",))
    def mark_read(self, number: Number) -> MarkedRead:
        """Mark every incoming message of the conversation with a number as read.

        Args:
            number: The other party's phone number.
        """
        recs = self._require_thread(number)
        marked = 0
        for rec in recs:
            if rec["direction"] == "in" and not rec.get("read", False):
                self.patch("messages", rec["id"], read=True)
                marked += 1
        self.show_list("messages", [r["id"] for r in recs])
        return {"number": recs[-1]["number"], "marked": marked}

    @tool(effect=Effect.SENSITIVE, permissions=(SEND,), writes=("messages",))
    def send(self, to: Number, body: Body) -> Message:
        """Send an SMS to a phone number (saved as a contact or not). To text a contact by name,
        look up their number with contacts.search first.

        Args:
            to: The recipient's phone number, e.g. "+49 151 2345678".
            body: The text of the message (1 to 1000 characters).
        """
        if not body.strip():
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "argument 'body': the message is blank",
                hint="write the text to send",
                path="/body",
            )
        rec = self._store(to, body)
        self.show_list("messages", [r["id"] for r in self._thread(rec["number"])])
        return self._out(rec)

    @tool(effect=Effect.SENSITIVE, permissions=(SEND,), writes=("messages",))
    def send_photos(
        self,
        to: Number,
        photo_ids: Annotated[list[str], Field(min_length=1, max_length=20)],
        body: Annotated[str, Field(max_length=1000)] = "",
    ) -> PhotoMessage:
        """Send photos or videos from the gallery to a phone number, with an optional text.

        Args:
            to: The recipient's phone number, e.g. "+49 151 2345678".
            photo_ids: Gallery ids of the photos to attach, e.g. ["ph_3", "ph_4"] (see
                gallery.list_photos); sent in this order.
            body: A text to go with them; may be empty.
        """
        photos = self.phone.state.table("gallery.photos")
        ids: list[str] = []
        for i, pid in enumerate(photo_ids):
            if pid not in photos:
                raise ToolError(
                    ErrorKind.NOT_FOUND,
                    f"no photo with id {pid!r} in the gallery",
                    hint="call gallery.list_photos to find the right ids",
                    path=f"/photo_ids/{i}",
                )
            if pid not in ids:
                ids.append(pid)
        rec = self._store(to, body.strip())
        rec = self.patch("messages", rec["id"], attachments=tuple(ids))
        self.show_list("messages", [r["id"] for r in self._thread(rec["number"])])
        return {**self._out(rec), "attachments": list(ids)}

    @tool(effect=Effect.SENSITIVE, permissions=(READ, SEND), writes=("messages",))
    def forward(self, message_id: str, to: Number) -> Message:
        """Forward a message's text unchanged to another phone number as a new SMS.

        Args:
            message_id: The id of the message to forward, e.g. "m_3".
            to: The recipient's phone number.
        """
        src = self.require("messages", message_id, "message", "messages.search")
        rec = self._store(to, src["body"])
        self.show_list("messages", [r["id"] for r in self._thread(rec["number"])])
        return self._out(rec)

    @tool(effect=Effect.SENSITIVE, permissions=(READ,), writes=("messages",))
    def delete(self, message_id: str) -> Deleted:
        """Delete one message.

        Args:
            message_id: The message's id, e.g. "m_3".
        """
        rec = self.require("messages", message_id, "message", "messages.search")
        self.remove("messages", message_id)
        self.show_list("messages", [r["id"] for r in self._thread(rec["number"])])
        return {"deleted": message_id}
