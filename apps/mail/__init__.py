"""Mail: an email client that works only while its account is signed in.

Table ``mail.messages``: ``{"id": "em_1", "folder": "inbox" | "sent" | "archive" | "trash",
"from": "ana@example.com", "to": ("sam@example.com",), "subject": str, "body": str,
"time": "YYYY-MM-DDTHH:MM:SS", "read": bool}``.

Every tool needs the app's account signed in (``system.sign_in``); the account, from
``system.accounts``, is the sender of mail sent from here. Reading a message does not mark it read:
``mail.mark_read`` does. Deleting moves a message to the trash.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.tools import ToolError, tool

Folder = Literal["inbox", "sent", "archive", "trash"]
Email = Annotated[
    str,
    Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$", max_length=254, description="Email address, e.g. ana@example.com"),
]
Subject = Annotated[str, Field(min_length=1, max_length=200)]
Body = Annotated[str, Field(min_length=1, max_length=20000)]
Limit = Annotated[int, Field(ge=1, le=50)]

Message = TypedDict(
    "Message",
    {
        "id": str,
        "folder": Folder,
        "from": str,
        "to": list[str],
        "subject": str,
        "body": str,
        "time": str,
        "read": bool,
    },
)
Message.__doc__ = "An email message."


class DeletedMany(TypedDict):
    """The ids a batch deletion moved to the trash, in the order given, and how many."""

    deleted: list[str]
    total: int


class MessageList(TypedDict):
    """Messages, newest first; "total" counts all that matched, "unread" the unread among them."""

    messages: list[Message]
    total: int
    unread: int


def _message(rec: dict[str, Any]) -> Message:
    return {**rec, "to": list(rec["to"])}  # type: ignore[typeddict-item]


def _unique(addresses: list[str]) -> tuple[str, ...]:
    """``addresses`` without repeats (compared case-insensitively), first spelling kept."""
    first: dict[str, str] = {}
    for address in addresses:
        first.setdefault(address.casefold(), address)
    return tuple(first.values())


def _newest_first(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(recs, key=lambda r: (r["time"], len(r["id"]), r["id"]), reverse=True)


class Mail(App):
    """Gmail."""

    name = "mail"
    title = "Gmail"
    domain = Domain.EMAIL
    package = "com.google.android.gm"
    requires_account = True
    tables: ClassVar[dict[str, str]] = {"messages": "em_"}
    records: ClassVar[dict[str, Any]] = {"messages": Message}

    def row(self, table: str, record: dict[str, Any]) -> str:
        dot = "  " if record.get("read") else "* "
        who = record["from"] if record.get("folder") != "sent" else "to " + ", ".join(record["to"])
        return f"{dot}{who}  {record['subject']}"

    # -- helpers --------------------------------------------------------------------------------
    def _account(self) -> str:
        rec = self.phone.state.get("system.accounts", self.name)
        if rec is None or not rec["account"]:  # cannot happen once signed in; kept for safety
            raise ToolError(ErrorKind.LOGIN_REQUIRED, "mail has no account", hint="call system.sign_in with app='mail'")
        return str(rec["account"])

    def _get(self, message_id: str) -> dict[str, Any]:
        return self.require("messages", message_id, "message", "mail.list_inbox or mail.search")

    def _page(self, recs: list[dict[str, Any]], limit: int) -> MessageList:
        recs = _newest_first(recs)
        page = recs[:limit]
        self.show_list("messages", [r["id"] for r in page])
        return {"messages": [_message(r) for r in page], "total": len(recs), "unread": sum(not r["read"] for r in recs)}

    def _store(self, to: list[str], subject: str, body: str) -> Message:
        rec = {
            "id": self.new_id("messages"),
            "folder": "sent",
            "from": self._account(),
            "to": _unique(to),
            "subject": subject,
            "body": body,
            "time": self.now_str(),
            "read": True,
        }
        self.put("messages", rec)
        self.show_detail("messages", rec["id"])
        return _message(rec)

    # -- reading --------------------------------------------------------------------------------
    @tool(requires_login=True)
    def list_inbox(self, unread_only: bool = False, limit: Limit = 20) -> MessageList:
        """List messages in the inbox, newest first.

        Args:
            unread_only: Only messages not yet marked read.
            limit: Maximum number of messages returned.
        """
        recs = [r for r in self.t("messages").values() if r["folder"] == "inbox" and not (unread_only and r["read"])]
        return self._page(recs, limit)

    @tool(requires_login=True)
    def list_folder(self, folder: Folder, limit: Limit = 20) -> MessageList:
        """List the messages in one folder, newest first.

        Args:
            folder: "inbox", "sent", "archive" or "trash".
            limit: Maximum number of messages returned.
        """
        return self._page([r for r in self.t("messages").values() if r["folder"] == folder], limit)

    @tool(requires_login=True)
    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=100)],
        folder: Folder | None = None,
        limit: Limit = 20,
    ) -> MessageList:
        """Find messages whose sender, recipients, subject or text contain the query
        (case-insensitive), newest first.

        Args:
            query: Text to look for, e.g. "invoice" or "ana@example.com".
            folder: Only this folder; by default every folder except the trash.
            limit: Maximum number of messages returned.
        """
        q = query.strip().casefold()
        if not q:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the query is blank", hint="search for a word", path="/query")
        recs = [
            r
            for r in self.t("messages").values()
            if (r["folder"] == folder if folder is not None else r["folder"] != "trash")
            and q in f"{r['from']}\n{' '.join(r['to'])}\n{r['subject']}\n{r['body']}".casefold()
        ]
        return self._page(recs, limit)

    @tool(requires_login=True)
    def read(self, message_id: str) -> Message:
        """Open one message with its full text. This does not mark it read (use mail.mark_read).

        Args:
            message_id: The message's id, e.g. "em_4".
        """
        rec = self._get(message_id)
        self.show_detail("messages", message_id)
        return _message(rec)

    # -- writing --------------------------------------------------------------------------------
    @tool(effect=Effect.WRITE, requires_login=True, writes=("messages",))
    def mark_read(self, message_id: str, read: bool = True) -> Message:
        """Mark a message read, or unread again.

        Args:
            message_id: The message's id.
            read: True to mark read, false to mark unread.
        """
        rec = self._get(message_id)
        if rec["read"] != read:
            rec = self.patch("messages", message_id, read=read)
        self.show_detail("messages", message_id)
        return _message(rec)

    @tool(effect=Effect.SENSITIVE, requires_login=True, writes=("messages",))
    def send(
        self,
        to: Annotated[list[Email], Field(min_length=1, max_length=20)],
        subject: Subject,
        body: Body,
    ) -> Message:
        """Send a new email from the user's account; it is kept in the "sent" folder.

        Args:
            to: Recipients' email addresses (1 to 20), e.g. ["ana@example.com"].
            subject: The subject line.
            body: The text of the email.
        """
        return self._store(to, subject, body)

    @tool(effect=Effect.SENSITIVE, requires_login=True, writes=("messages",))
    def reply(self, message_id: str, body: Body) -> Message:
        """Reply to a message's sender (to its recipients, when replying to the user's own sent
        mail). The subject becomes "Re: <original subject>".

        Args:
            message_id: The id of the message to reply to.
            body: The text of the reply.
        """
        rec = self._get(message_id)
        to = list(rec["to"]) if rec["folder"] == "sent" else [rec["from"]]
        subject = rec["subject"]
        if not subject.casefold().startswith("re:"):
            subject = f"Re: {subject}"
        return self._store(to, subject[:200], body)

    @tool(effect=Effect.WRITE, requires_login=True, writes=("messages",))
    def archive(self, message_id: str) -> Message:
        """Move an inbox message to the archive (out of the inbox, still searchable).

        Args:
            message_id: The message's id.
        """
        rec = self._get(message_id)
        if rec["folder"] != "inbox":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"message {message_id} is in {rec['folder']}, not the inbox; only inbox messages can be archived",
                hint="nothing to do" if rec["folder"] == "archive" else "archive messages from the inbox",
            )
        rec = self.patch("messages", message_id, folder="archive")
        self.show_detail("messages", message_id)
        return _message(rec)

    @tool(effect=Effect.SENSITIVE, requires_login=True, writes=("messages",))
    def delete(self, message_id: str) -> Message:
        """Delete a message: it moves to the trash.

        Args:
            message_id: The message's id.
        """
        rec = self._get(message_id)
        if rec["folder"] == "trash":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"message {message_id} is already in the trash",
                hint="nothing to do; messages in the trash cannot be deleted from here",
            )
        rec = self.patch("messages", message_id, folder="trash")
        self.show_list(
            "messages", [r["id"] for r in _newest_first(list(self.t("messages").values())) if r["folder"] == "inbox"]
        )
        return _message(rec)

    @tool(effect=Effect.SENSITIVE, requires_login=True, writes=("messages",))
    def delete_many(self, message_ids: Annotated[list[str], Field(min_length=1, max_length=200)]) -> DeletedMany:
        """Delete several messages in one action (one confirmation covers the batch): they move to
        the trash. Nothing moves if any id is unknown or already in the trash.

        Args:
            message_ids: The messages' ids (repeats count once).
        """
        ids: list[str] = []
        for i, mid in enumerate(message_ids):
            if mid not in self.t("messages"):
                raise ToolError(
                    ErrorKind.NOT_FOUND,
                    f"no message with id {mid!r}",
                    hint="call mail.search or mail.list_inbox to find the right ids",
                    path=f"/message_ids/{i}",
                )
            if self.t("messages")[mid]["folder"] == "trash":
                raise ToolError(
                    ErrorKind.PRECONDITION_FAILED,
                    f"message {mid} is already in the trash",
                    hint="leave it out; messages in the trash cannot be deleted from here",
                    path=f"/message_ids/{i}",
                )
            if mid not in ids:
                ids.append(mid)
        for mid in ids:
            self.patch("messages", mid, folder="trash")
        self.show_list(
            "messages", [r["id"] for r in _newest_first(list(self.t("messages").values())) if r["folder"] == "inbox"]
        )
        return {"deleted": ids, "total": len(ids)}
