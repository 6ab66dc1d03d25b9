"""The mail app through the sandbox backend: login gate, folders, sending, and secrets.

The fixture clock is 2026-11-29 09:00:00 (Europe/Berlin); every call advances it by one second
(calls refused for login included), so the n-th call of a test runs at 09:00:0n.
"""

from __future__ import annotations

from typing import Any

import pytest

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Effect, ErrorKind, Feedback, Fixtures, TaskSpec
from phoneenv.tools import ArgumentError

SAM = "sam@example.com"
PASSWORD = "hunter2-secret"


def msg(rid: str, folder: str, sender: str, to: tuple[str, ...], subject: str, body: str, time: str, read: bool):
    return {
        "id": rid,
        "folder": folder,
        "from": sender,
        "to": to,
        "subject": subject,
        "body": body,
        "time": time,
        "read": read,
    }


EM1 = msg("em_1", "inbox", "ana@example.com", (SAM,), "Dinner Friday?", "Free at 7?", "2026-11-28T19:30:00", False)
EM2 = msg(
    "em_2", "inbox", "billing@power.example", (SAM,), "Your invoice", "Due: 42.10 EUR", "2026-11-27T08:00:00", True
)
EM3 = msg("em_3", "archive", "bob@example.com", (SAM,), "Old thread", "see attached", "2026-10-01T10:00:00", True)
EM4 = msg(
    "em_4", "sent", SAM, ("ana@example.com", "bob@example.com"), "Trip photos", "Here", "2026-11-20T12:00:00", True
)
EM5 = msg("em_5", "trash", "spam@junk.example", (SAM,), "WIN", "click here", "2026-11-26T03:00:00", False)
SEED = {"em_1": EM1, "em_2": EM2, "em_3": EM3, "em_4": EM4, "em_5": EM5}


def make_task(signed_in: bool) -> TaskSpec:
    return TaskSpec(
        id="mail-test",
        domain="email",
        goal="test",
        criteria=[AnswerCriterion(equals="ok")],
        fixtures=Fixtures(
            records={"mail.messages": list(SEED.values())},
            clock="2026-11-29T09:00:00",
            timezone="Europe/Berlin",
            accounts={"mail": {"account": SAM, "signed_in": signed_in}},
            vault={SAM: PASSWORD},
        ),
    )


SIGNED_OUT = make_task(False)
SIGNED_IN = make_task(True)


class Phone:
    """A sandbox backend reset to a task, called the way the env calls it; keeps every feedback."""

    def __init__(self, task: TaskSpec) -> None:
        self.backend = SandboxBackend()
        self.backend.reset(task)
        self.log: list[Feedback] = []

    def __call__(self, name: str, **args: Any) -> Feedback:
        entry = self.backend.tools()[name]
        fb = self.backend.call(name, entry.validator.validate(args))
        self.log.append(fb)
        return fb

    @property
    def messages(self) -> dict[str, dict[str, Any]]:
        return dict(self.backend.tables()["mail.messages"])


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def ids(result: dict[str, Any]) -> list[str]:
    return [m["id"] for m in result["messages"]]


def as_result(rec: dict[str, Any]) -> dict[str, Any]:
    return {**rec, "to": list(rec["to"])}


ONE_CALL_EACH = {
    "mail.list_inbox": {},
    "mail.list_folder": {"folder": "sent"},
    "mail.search": {"query": "ana"},
    "mail.read": {"message_id": "em_1"},
    "mail.mark_read": {"message_id": "em_1"},
    "mail.send": {"to": ["ana@example.com"], "subject": "Hi", "body": "Hello"},
    "mail.reply": {"message_id": "em_1", "body": "Yes"},
    "mail.archive": {"message_id": "em_2"},
    "mail.delete": {"message_id": "em_2"},
    "mail.delete_many": {"message_ids": ["em_1"]},
}


def test_every_tool_needs_sign_in_and_no_secret_leaks() -> None:
    phone = Phone(SIGNED_OUT)
    before = phone.backend.snapshot()
    assert set(ONE_CALL_EACH) == {n for n in phone.backend.tools() if n.startswith("mail.")}
    for name, args in ONE_CALL_EACH.items():
        fb = phone(name, **args)
        assert fb.error is ErrorKind.LOGIN_REQUIRED and fb.recoverable, name
        assert fb.hint == 'call system.sign_in {"app": "mail", "account": "sam@example.com"}, then retry'
    assert phone.backend.tables() == before.tables
    assert phone.backend.clock() == "2026-11-29T09:00:10"  # a second a call

    wrong = phone("system.sign_in", app="mail", account=SAM, password="wrong-password")
    assert wrong.error is ErrorKind.PERMISSION_DENIED
    assert ok(phone("system.sign_in", app="mail", account=SAM)) == {"app": "mail", "account": SAM, "signed_in": True}
    for name, args in ONE_CALL_EACH.items():
        assert phone(name, **args).ok, name
    ok(phone("system.sign_out", app="mail"))
    assert phone("mail.list_inbox").error is ErrorKind.LOGIN_REQUIRED
    ok(phone("system.sign_in", app="mail", account=SAM, password=PASSWORD))
    ok(phone("mail.list_inbox"))
    ok(phone("system.list_accounts"))
    for fb in phone.log:
        assert PASSWORD not in fb.model_dump_json()
        assert PASSWORD not in repr(fb.result)


def test_list_inbox_newest_first() -> None:
    phone = Phone(SIGNED_IN)
    assert ok(phone("mail.list_inbox")) == {"messages": [as_result(EM1), as_result(EM2)], "total": 2, "unread": 1}
    assert ok(phone("mail.list_inbox", unread_only=True)) == {"messages": [as_result(EM1)], "total": 1, "unread": 1}
    limited = ok(phone("mail.list_inbox", limit=1))
    assert ids(limited) == ["em_1"] and limited["total"] == 2
    assert ids(ok(phone("mail.list_folder", folder="trash"))) == ["em_5"]
    assert ids(ok(phone("mail.list_folder", folder="sent"))) == ["em_4"]
    with pytest.raises(ArgumentError):
        phone("mail.list_folder", folder="spam")
    with pytest.raises(ArgumentError):
        phone("mail.list_inbox", limit=0)


def test_read_does_not_change_state_and_mark_read_does() -> None:
    phone = Phone(SIGNED_IN)
    before = phone.backend.snapshot()
    assert ok(phone("mail.read", message_id="em_1")) == as_result(EM1)
    assert phone.backend.tables() == before.tables
    assert ok(phone("mail.mark_read", message_id="em_1"))["read"] is True
    assert phone.messages["em_1"] == {**EM1, "read": True}
    assert ok(phone("mail.mark_read", message_id="em_1", read=False))["read"] is False
    fb = phone("mail.read", message_id="em_99")
    assert fb.error is ErrorKind.NOT_FOUND and "mail.search" in (fb.hint or "")


def test_search() -> None:
    phone = Phone(SIGNED_IN)
    assert ids(ok(phone("mail.search", query="INVOICE"))) == ["em_2"]
    assert phone("mail.search", query=" ").error is ErrorKind.INVALID_ARGUMENTS
    assert ids(ok(phone("mail.search", query="ana@"))) == ["em_1", "em_4"]  # sender and recipient
    assert ids(ok(phone("mail.search", query="click"))) == []  # the trash is left out by default
    assert ids(ok(phone("mail.search", query="click", folder="trash"))) == ["em_5"]
    assert ids(ok(phone("mail.search", query="example", folder="archive"))) == ["em_3"]
    res = ok(phone("mail.search", query="example", limit=2))
    assert ids(res) == ["em_1", "em_2"] and res["total"] == 4 and res["unread"] == 1  # em_5 is in the trash


def test_send_from_the_signed_in_account() -> None:
    phone = Phone(SIGNED_OUT)
    ok(phone("system.sign_in", app="mail", account=SAM))  # 09:00:01
    sent = ok(
        phone(
            "mail.send",
            to=["Ana@example.com", "ana@example.com", "bob@example.com"],
            subject="Lunch",
            body="Tomorrow at 12?",
        )
    )  # 09:00:02
    assert sent == {
        "id": "em_6",
        "folder": "sent",
        "from": SAM,
        "to": ["Ana@example.com", "bob@example.com"],
        "subject": "Lunch",
        "body": "Tomorrow at 12?",
        "time": "2026-11-29T09:00:02",
        "read": True,
    }
    assert phone.messages["em_6"]["to"] == ("Ana@example.com", "bob@example.com")
    assert ids(ok(phone("mail.list_folder", folder="sent"))) == ["em_6", "em_4"]
    assert ids(ok(phone("mail.list_inbox"))) == ["em_1", "em_2"]


@pytest.mark.parametrize(
    ("args", "path"),
    [
        ({"to": [], "subject": "s", "body": "b"}, "/to"),
        ({"to": ["not-an-email"], "subject": "s", "body": "b"}, "/to/0"),
        ({"to": "ana@example.com", "subject": "s", "body": "b"}, "/to"),
        ({"to": ["ana@example.com"], "subject": "", "body": "b"}, "/subject"),
        ({"to": ["ana@example.com"] * 21, "subject": "s", "body": "b"}, "/to"),
        ({"to": ["ana@example.com"], "subject": "s"}, "/body"),
    ],
)
def test_send_rejects_bad_arguments(args: dict[str, Any], path: str) -> None:
    with pytest.raises(ArgumentError) as err:
        Phone(SIGNED_IN)("mail.send", **args)
    assert err.value.path == path


def test_reply() -> None:
    phone = Phone(SIGNED_IN)
    res = ok(phone("mail.reply", message_id="em_1", body="Yes, see you!"))  # 09:00:01
    assert res == {
        "id": "em_6",
        "folder": "sent",
        "from": SAM,
        "to": ["ana@example.com"],
        "subject": "Re: Dinner Friday?",
        "body": "Yes, see you!",
        "time": "2026-11-29T09:00:01",
        "read": True,
    }
    again = ok(phone("mail.reply", message_id="em_6", body="P.S. I'll bring wine"))
    assert again["subject"] == "Re: Dinner Friday?"  # no "Re: Re:"
    assert again["to"] == ["ana@example.com"]  # replying to own mail goes to its recipients
    own = ok(phone("mail.reply", message_id="em_4", body="More photos"))
    assert own["to"] == ["ana@example.com", "bob@example.com"]
    assert phone.messages["em_1"] == EM1  # the original is untouched
    assert phone("mail.reply", message_id="em_42", body="x").error is ErrorKind.NOT_FOUND


def test_archive_and_delete() -> None:
    phone = Phone(SIGNED_IN)
    assert ok(phone("mail.archive", message_id="em_2"))["folder"] == "archive"
    assert phone.messages["em_2"] == {**EM2, "folder": "archive"}
    fb = phone("mail.archive", message_id="em_2")
    assert fb.error is ErrorKind.PRECONDITION_FAILED and fb.recoverable
    assert phone("mail.archive", message_id="em_4").error is ErrorKind.PRECONDITION_FAILED  # sent
    assert ids(ok(phone("mail.list_inbox"))) == ["em_1"]

    deleted = ok(phone("mail.delete", message_id="em_1"))
    assert deleted == {**as_result(EM1), "folder": "trash"}
    assert phone.messages["em_1"]["folder"] == "trash"
    fb = phone("mail.delete", message_id="em_1")
    assert fb.error is ErrorKind.PRECONDITION_FAILED and "trash" in (fb.message or "")
    assert phone("mail.delete", message_id="em_5").error is ErrorKind.PRECONDITION_FAILED
    assert ok(phone("mail.list_inbox")) == {"messages": [], "total": 0, "unread": 0}
    assert ok(phone("mail.delete", message_id="em_3"))["folder"] == "trash"  # from the archive
    assert set(phone.messages) == set(SEED)  # deleting never drops a record


def test_restore_undoes_writes_and_results_do_not_alias_state() -> None:
    phone = Phone(SIGNED_OUT)
    before = phone.backend.snapshot()
    ok(phone("system.sign_in", app="mail", account=SAM))
    listed = ok(phone("mail.list_inbox"))
    listed["messages"][0]["to"].append("mallory@example.com")
    listed["messages"][0]["read"] = True
    got = ok(phone("mail.read", message_id="em_4"))
    got["to"].clear()
    assert phone.messages == SEED
    ok(phone("mail.send", to=["x@example.com"], subject="s", body="b"))
    ok(phone("mail.delete", message_id="em_1"))
    ok(phone("mail.archive", message_id="em_2"))
    phone.backend.restore(before)
    assert phone.backend.tables() == before.tables
    assert phone("mail.list_inbox").error is ErrorKind.LOGIN_REQUIRED  # the sign-in is undone too


def test_tool_specs() -> None:
    tools = SandboxBackend().tools()
    effects = {n: e.spec.effect for n, e in tools.items() if n.startswith("mail.")}
    assert effects == {
        "mail.list_inbox": Effect.READ,
        "mail.list_folder": Effect.READ,
        "mail.search": Effect.READ,
        "mail.read": Effect.READ,
        "mail.mark_read": Effect.WRITE,
        "mail.send": Effect.SENSITIVE,
        "mail.reply": Effect.SENSITIVE,
        "mail.archive": Effect.WRITE,
        "mail.delete": Effect.SENSITIVE,
        "mail.delete_many": Effect.SENSITIVE,
    }
    for name in effects:
        spec = tools[name].spec
        assert spec.requires_login and spec.domain == "email" and spec.description and not spec.permissions
    assert set(tools["mail.read"].spec.returns["properties"]) == {
        "id",
        "folder",
        "from",
        "to",
        "subject",
        "body",
        "time",
        "read",
    }


def test_screen_rows() -> None:
    phone = Phone(SIGNED_IN)
    ok(phone("mail.search", query="example", limit=3))
    app = phone.backend.phone.apps["mail"]
    assert app.screen(phone.backend.phone.state.meta["view"]) == (
        "Gmail",
        [
            "* ana@example.com  Dinner Friday?",
            "  billing@power.example  Your invoice",
            "  to ana@example.com, bob@example.com  Trip photos",
        ],
    )
    assert phone.backend.screenshot().shape == (640, 360, 3)
