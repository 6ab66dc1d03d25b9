"""Phone: placing and ending calls, the call log, and blocked numbers.

Tables:

- ``phone.calls``: ``{"id": "call_1", "number": "+4915...", "direction": "in" | "out" | "missed",
  "time": "YYYY-MM-DDTHH:MM:SS", "duration_s": int}`` — the call log.
- ``phone.blocked``: ``{"id": "blk_1", "number": "+4915..."}``.
- ``phone.voicemails``: ``{"id": "vm_1", "number": "+4915...", "time": "YYYY-MM-DDTHH:MM:SS",
  "duration_s": int, "transcript": str | None, "read": bool}`` — voicemail with the carrier's
  transcript (None while none was made).
- ``phone.active``: at most one record, ``{"id": "active", "number": str, "call_id": str,
  "started": "YYYY-MM-DDTHH:MM:SS"}`` — the call in progress.

There is no real other party: ``phone.call`` logs an outgoing call with ``duration_s`` 0 and makes
it the active call; ``phone.end_call`` sets its duration to the phone-clock seconds elapsed.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import TypedDict

from apps.contacts import PHONE_PATTERN, normalize_number, numbers_of, same_number
from phoneenv.app import App, Deleted, id_key
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import (
    BOOL,
    INT,
    AndroidDriver,
    CallStateTable,
    Column,
    ProviderTable,
    enum_codec,
    local_time_codec,
)
from phoneenv.tools import ToolError, tool

CALL = "android.permission.CALL_PHONE"
READ_LOG = "android.permission.READ_CALL_LOG"
WRITE_LOG = "android.permission.WRITE_CALL_LOG"

ACTIVE = "active"

Number = Annotated[
    str,
    Field(
        pattern=PHONE_PATTERN,
        description="Phone number, digits with optional leading + (spaces and dashes ignored)",
    ),
]


class CallEntry(TypedDict):
    """A call-log entry; ``contact`` is the name saved for ``number``, if any."""

    id: str
    number: str
    contact: str | None
    direction: Literal["in", "out", "missed"]
    time: str
    duration_s: int


class StoredCall(TypedDict):
    """A call-log entry as stored (``contact`` is looked up when read)."""

    id: str
    number: str
    direction: Literal["in", "out", "missed"]
    time: str
    duration_s: int


class StoredBlock(TypedDict):
    """A blocked number as stored."""

    id: str
    number: str


class StoredActive(TypedDict):
    """The call in progress as stored."""

    id: str
    number: str
    call_id: str
    started: str


class StoredVoicemail(TypedDict):
    """A voicemail as stored."""

    id: str
    number: str
    time: str
    duration_s: int
    transcript: str | None
    read: bool


class VoicemailEntry(TypedDict):
    """A voicemail in a list: who left it, when, how long, whether it was heard, and the
    transcript's first words (``phone.play_voicemail`` gives all of it)."""

    id: str
    number: str
    contact: str | None
    time: str
    duration_s: int
    read: bool
    preview: str | None


class VoicemailList(TypedDict):
    """Voicemails, newest first, and how many matched in all."""

    voicemails: list[VoicemailEntry]
    total: int
    unread: int


class Voicemail(TypedDict):
    """A voicemail played: its full transcript (None when the carrier made none)."""

    id: str
    number: str
    contact: str | None
    time: str
    duration_s: int
    read: bool
    transcript: str | None


class CallLog(TypedDict):
    """Call-log entries, newest first, and how many matched in all."""

    calls: list[CallEntry]
    total: int


class ActiveCall(TypedDict):
    """The call in progress."""

    call_id: str
    number: str
    contact: str | None
    started: str
    elapsed_s: int


class CurrentCall(TypedDict):
    """Whether a call is in progress, and which."""

    active: bool
    call: ActiveCall | None


class BlockedNumber(TypedDict):
    """A blocked number."""

    id: str
    number: str
    contact: str | None


class BlockedList(TypedDict):
    """Blocked numbers."""

    blocked: list[BlockedNumber]
    total: int


class Unblocked(TypedDict):
    """A number that is no longer blocked."""

    unblocked: str


def _newest(rec: dict[str, Any]) -> tuple[str, tuple[str, int]]:
    return rec["time"], id_key(rec["id"])


ANDROID = AndroidDriver(
    tables={
        "calls": ProviderTable(
            table="calls",
            uri="content://call_log/calls",
            fields={
                "number": Column("number"),
                "direction": Column("type", "i", enum_codec("call type", {"in": 1, "out": 2, "missed": 3})),
                "time": Column("date", "l", local_time_codec("seconds")),
                "duration_s": Column("duration", "l", INT, default=0),
            },
            notes="CallLog.Calls: direction → type (INCOMING 1 / OUTGOING 2 / MISSED 3), time → date "
            "(epoch ms), duration_s → duration (seconds).",
        ),
        "blocked": ProviderTable(
            table="blocked",
            uri="content://com.android.blockednumber/blocked",
            fields={"number": Column("original_number")},
            root=True,
            notes="BlockedNumberContract.BlockedNumbers: number → original_number. Only the system, the "
            "default dialer and the default SMS app may use this provider: needs adb root.",
        ),
        "active": CallStateTable(),
        "voicemails": ProviderTable(
            table="voicemails",
            uri="content://com.android.voicemail/voicemail",
            fields={
                "number": Column("number"),
                "time": Column("date", "l", local_time_codec("seconds")),
                "duration_s": Column("duration", "l", INT, default=0),
                "transcript": Column("transcription"),
                "read": Column("is_read", "i", BOOL, default=0),
            },
            derived={"source_package": ("s", lambda rec, ctx: "com.android.phone")},
            root=True,
            notes="VoicemailContract.Voicemails: time → date (epoch ms), duration_s → duration (seconds), "
            "transcript → transcription, read → is_read; source_package names the carrier's voicemail "
            "source. Only the default dialer and a voicemail source may read every row: needs adb root.",
        ),
    },
    tools=(
        "phone.block_number",
        "phone.call_log",
        "phone.delete_call_log_entry",
        "phone.delete_voicemail",
        "phone.list_blocked",
        "phone.list_voicemails",
        "phone.play_voicemail",
        "phone.unblock_number",
    ),
    unavailable={
        "phone.call": "placing a call (ACTION_CALL) makes the dialer write its own call-log row when the call "
        "ends, with the real duration, which cannot equal the sandbox's log entry made at dialing",
        "phone.end_call": "only meaningful after phone.call",
        "phone.call_back_voicemail": "places a call, as phone.call does (see there)",
        "phone.current_call": "a call the driver did not place cannot be described (telephony.registry gives "
        "no call-log id or start time)",
    },
)
"""The dialer on a device: the call log and blocked numbers (``content`` commands)."""


class PhoneApp(App):
    """The dialer."""

    name = "phone"
    title = "Phone"
    domain = Domain.CALLS
    package = "com.google.android.dialer"
    permissions = (CALL, READ_LOG, WRITE_LOG)
    tables: ClassVar[dict[str, str]] = {"calls": "call_", "blocked": "blk_", "active": "active_", "voicemails": "vm_"}
    records: ClassVar[dict[str, Any]] = {
        "calls": StoredCall,
        "blocked": StoredBlock,
        "active": StoredActive,
        "voicemails": StoredVoicemail,
    }
    transient: ClassVar[tuple[str, ...]] = ("active",)
    android = ANDROID

    # -- helpers --------------------------------------------------------------------------------
    def contact_name(self, number: str) -> str | None:
        """The name of the contact whose number is ``number`` (formatting ignored), or None."""
        for rec in self.phone.state.tables.get("contacts.contacts", {}).values():
            if any(same_number(n, number) for n in numbers_of(rec)):
                return rec["name"]
        return None

    def _entry(self, rec: dict[str, Any]) -> CallEntry:
        return {
            "id": rec["id"],
            "number": rec["number"],
            "contact": self.contact_name(rec["number"]),
            "direction": rec["direction"],
            "time": rec["time"],
            "duration_s": int(rec.get("duration_s", 0)),
        }

    def _elapsed(self, active: dict[str, Any]) -> int:
        started = dt.datetime.fromisoformat(active["started"]).replace(tzinfo=self.phone.tz)
        return max(0, int(self.phone.state.meta["now"] - started.timestamp()))

    def _active(self, active: dict[str, Any]) -> ActiveCall:
        return {
            "call_id": active["call_id"],
            "number": active["number"],
            "contact": self.contact_name(active["number"]),
            "started": active["started"],
            "elapsed_s": self._elapsed(active),
        }

    def _blocked(self, number: str) -> dict[str, Any] | None:
        for rec in self.t("blocked").values():
            if same_number(rec["number"], number):
                return rec
        return None

    def row(self, table: str, record: dict[str, Any]) -> str:
        who = self.contact_name(record["number"]) or record["number"]
        if table == "calls":
            mark = {"in": "<-", "out": "->", "missed": "x "}.get(record["direction"], "")
            secs = int(record.get("duration_s", 0))
            return f"{mark} {who}  {record['time'].replace('T', ' ')[:16]}  {secs // 60}:{secs % 60:02d}"
        if table == "active":
            return f"On call with {who} since {record['started'][11:16]}"
        if table == "voicemails":
            dot = "  " if record.get("read") else "* "
            secs = int(record.get("duration_s", 0))
            return f"{dot}{who}  {record['time'].replace('T', ' ')[:16]}  {secs // 60}:{secs % 60:02d}"
        return f"Blocked: {who}"

    # -- tools ----------------------------------------------------------------------------------
    @tool(effect=Effect.SENSITIVE, permissions=(CALL,), writes=("active", "calls"))
    def call(self, number: Number) -> ActiveCall:
        """Place a phone call to a number; it stays in progress until phone.end_call. To call a
        contact by name, look up their number with contacts.search first.

        Args:
            number: The number to call, e.g. "+49 151 2345678".
        """
        return self._place(number)

    def _place(self, number: str) -> ActiveCall:
        active = self.t("active").get(ACTIVE)
        if active is not None:
            who = self.contact_name(active["number"]) or active["number"]
            raise ToolError(
                ErrorKind.CONFLICT,
                f"a call with {who} is already in progress",
                hint="call phone.end_call first",
            )
        blocked = self._blocked(number)
        if blocked is not None:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"{blocked['number']} is blocked",
                hint=f"call phone.unblock_number with number={blocked['number']!r} first, if the user wants that",
            )
        entry = {
            "id": self.new_id("calls"),
            "number": normalize_number(number),
            "direction": "out",
            "time": self.now_str(),
            "duration_s": 0,
        }
        self.put("calls", entry)
        rec = {"id": ACTIVE, "number": entry["number"], "call_id": entry["id"], "started": entry["time"]}
        self.put("active", rec)
        self.show_list("active", [ACTIVE])
        return self._active(rec)

    @tool(effect=Effect.WRITE, writes=("active", "calls"))
    def end_call(self) -> CallEntry:
        """Hang up the call in progress; its call-log entry gets the call's duration."""
        active = self.t("active").get(ACTIVE)
        if active is None:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                "no call is in progress",
                hint="phone.current_call tells whether a call is in progress; phone.call places one",
            )
        elapsed = self._elapsed(active)
        self.remove("active", ACTIVE)
        rec = self.t("calls").get(active["call_id"])
        if rec is None:  # a seeded active call without a log entry
            rec = {
                "id": active["call_id"],
                "number": active["number"],
                "direction": "out",
                "time": active["started"],
                "duration_s": elapsed,
            }
        else:
            rec = self.patch("calls", rec["id"], duration_s=elapsed)
        self.show_list("calls", [rec["id"]])
        return self._entry(rec)

    @tool()
    def current_call(self) -> CurrentCall:
        """Whether a call is in progress, with whom and for how long."""
        active = self.t("active").get(ACTIVE)
        if active is None:
            return {"active": False, "call": None}
        self.show_list("active", [ACTIVE])
        return {"active": True, "call": self._active(active)}

    @tool(permissions=(READ_LOG,))
    def call_log(
        self,
        filter: Literal["all", "missed", "in", "out"] = "all",
        number: Number | None = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
    ) -> CallLog:
        """List calls from the call log, newest first, each with the contact name if the number
        is saved.

        Args:
            filter: "missed" for missed calls, "in" for answered incoming calls, "out" for
                outgoing calls, "all" for every call.
            number: Only calls with this phone number.
            limit: Maximum number of calls returned.
        """
        recs = [
            r
            for r in self.t("calls").values()
            if (filter == "all" or r["direction"] == filter) and (number is None or same_number(r["number"], number))
        ]
        recs.sort(key=_newest, reverse=True)
        page = recs[:limit]
        self.show_list("calls", [r["id"] for r in page])
        return {"calls": [self._entry(r) for r in page], "total": len(recs)}

    @tool(effect=Effect.SENSITIVE, permissions=(WRITE_LOG,), writes=("calls",))
    def delete_call_log_entry(self, call_id: str) -> Deleted:
        """Delete one entry from the call log.

        Args:
            call_id: The entry's id, e.g. "call_3", from phone.call_log.
        """
        self.require("calls", call_id, "call-log entry", "phone.call_log")
        active = self.t("active").get(ACTIVE)
        if active is not None and active["call_id"] == call_id:
            raise ToolError(
                ErrorKind.CONFLICT,
                f"{call_id} is the call in progress",
                hint="call phone.end_call first",
            )
        self.remove("calls", call_id)
        self.show_list("calls", sorted(self.t("calls"), key=id_key))
        return {"deleted": call_id}

    @tool(effect=Effect.WRITE, writes=("blocked",))
    def block_number(self, number: Number) -> BlockedNumber:
        """Block a phone number: calls from it no longer ring and it cannot be called.

        Args:
            number: The number to block.
        """
        dup = self._blocked(number)
        if dup is not None:
            raise ToolError(
                ErrorKind.CONFLICT,
                f"{dup['number']} is already blocked",
                hint="nothing to do; phone.list_blocked lists blocked numbers",
                candidates=[dup["number"]],
            )
        rec = {"id": self.new_id("blocked"), "number": normalize_number(number)}
        self.put("blocked", rec)
        self.show_list("blocked", sorted(self.t("blocked"), key=id_key))
        return {"id": rec["id"], "number": rec["number"], "contact": self.contact_name(rec["number"])}

    @tool(effect=Effect.WRITE, writes=("blocked",))
    def unblock_number(self, number: Number) -> Unblocked:
        """Unblock a blocked phone number.

        Args:
            number: The blocked number.
        """
        rec = self._blocked(number)
        if rec is None:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"{number} is not blocked",
                hint="call phone.list_blocked to see the blocked numbers",
                candidates=[r["number"] for r in sorted(self.t("blocked").values(), key=lambda r: id_key(r["id"]))],
            )
        self.remove("blocked", rec["id"])
        self.show_list("blocked", sorted(self.t("blocked"), key=id_key))
        return {"unblocked": rec["number"]}

    @tool()
    def list_blocked(self) -> BlockedList:
        """List the blocked phone numbers."""
        recs = sorted(self.t("blocked").values(), key=lambda r: id_key(r["id"]))
        self.show_list("blocked", [r["id"] for r in recs])
        blocked: list[BlockedNumber] = [
            {"id": r["id"], "number": r["number"], "contact": self.contact_name(r["number"])} for r in recs
        ]
        return {"blocked": blocked, "total": len(recs)}

    # -- voicemail --------------------------------------------------------------------------------
    def _voicemail(self, rec: dict[str, Any]) -> Voicemail:
        return {
            "id": rec["id"],
            "number": rec["number"],
            "contact": self.contact_name(rec["number"]),
            "time": rec["time"],
            "duration_s": int(rec.get("duration_s", 0)),
            "read": bool(rec.get("read", False)),
            "transcript": rec.get("transcript"),
        }

    @tool()
    def list_voicemails(
        self,
        unread_only: bool = False,
        number: Number | None = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
    ) -> VoicemailList:
        """List voicemails, newest first, with who left them and the transcript's first words.

        Args:
            unread_only: Only voicemails not yet played.
            number: Only voicemails from this phone number.
            limit: Maximum number of voicemails returned.
        """
        recs = [
            r
            for r in self.t("voicemails").values()
            if (not unread_only or not r.get("read")) and (number is None or same_number(r["number"], number))
        ]
        recs.sort(key=_newest, reverse=True)
        page = recs[:limit]
        self.show_list("voicemails", [r["id"] for r in page])
        out: list[VoicemailEntry] = []
        for r in page:
            v = self._voicemail(r)
            text = v.pop("transcript")  # type: ignore[misc]
            words = (text or "").split()
            preview = None if text is None else " ".join(words[:8]) + (" ..." if len(words) > 8 else "")
            out.append({**v, "preview": preview})  # type: ignore[typeddict-item]
        unread = sum(1 for r in self.t("voicemails").values() if not r.get("read"))
        return {"voicemails": out, "total": len(recs), "unread": unread}

    @tool(effect=Effect.WRITE, writes=("voicemails",))
    def play_voicemail(self, voicemail_id: str) -> Voicemail:
        """Play a voicemail: gives its full transcript and marks it as heard.

        Args:
            voicemail_id: The voicemail's id, e.g. "vm_2", from phone.list_voicemails.
        """
        rec = self.require("voicemails", voicemail_id, "voicemail", "phone.list_voicemails")
        if not rec.get("read"):
            rec = self.patch("voicemails", voicemail_id, read=True)
        self.show_detail("voicemails", voicemail_id)
        return self._voicemail(rec)

    @tool(effect=Effect.SENSITIVE, writes=("voicemails",))
    def delete_voicemail(self, voicemail_id: str) -> Deleted:
        """Delete a voicemail.

        Args:
            voicemail_id: The voicemail's id, e.g. "vm_2", from phone.list_voicemails.
        """
        self.require("voicemails", voicemail_id, "voicemail", "phone.list_voicemails")
        self.remove("voicemails", voicemail_id)
        self.show_list("voicemails", sorted(self.t("voicemails"), key=id_key))
        return {"deleted": voicemail_id}

    @tool(effect=Effect.SENSITIVE, permissions=(CALL,), writes=("active", "calls"))
    def call_back_voicemail(self, voicemail_id: str) -> ActiveCall:
        """Call back whoever left a voicemail (the call stays in progress until phone.end_call).

        Args:
            voicemail_id: The voicemail's id, e.g. "vm_2".
        """
        rec = self.require("voicemails", voicemail_id, "voicemail", "phone.list_voicemails")
        return self._place(rec["number"])
