"""The messages app driven through the sandbox backend: threads, unread state, sending, errors."""

from __future__ import annotations

from typing import Any

import pytest

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, ErrorKind, Fixtures, TaskSpec
from phoneenv.state import diff_tables
from phoneenv.tools import ArgumentError
from tests.apps.helpers import call, ok

ANA = "+491511111111"
BEN = "+491522222222"
SHOP = "+491633333333"

CONTACTS = [
    {
        "id": "c_1",
        "name": "Ana Lima",
        "phone": ANA,
        "email": None,
        "relation": "sister",
        "favorite": True,
        "birthday": None,
    },
    {
        "id": "c_2",
        "name": "Ben Ott",
        "phone": "+49 152 2222222",
        "email": None,
        "relation": None,
        "favorite": False,
        "birthday": None,
    },
]
MESSAGES = [
    {
        "id": "m_1",
        "number": ANA,
        "direction": "in",
        "body": "Dinner at 8?",
        "time": "2026-11-28T18:00:00",
        "read": True,
    },
    {"id": "m_2", "number": ANA, "direction": "out", "body": "Sure!", "time": "2026-11-28T18:05:00", "read": True},
    {
        "id": "m_3",
        "number": ANA,
        "direction": "in",
        "body": "Bring the wine",
        "time": "2026-11-29T08:30:00",
        "read": False,
    },
    {
        "id": "m_4",
        "number": SHOP,
        "direction": "in",
        "body": "Your PARCEL is ready",
        "time": "2026-11-29T07:00:00",
        "read": False,
    },
    {"id": "m_5", "number": BEN, "direction": "in", "body": "Call me", "time": "2026-11-27T10:00:00", "read": False},
]


def make_task(**fixtures: Any) -> TaskSpec:
    return TaskSpec(
        id="messages-test",
        domain="communication",
        goal="test",
        criteria=[AnswerCriterion(equals="x")],
        fixtures=Fixtures(
            records={"messages.messages": MESSAGES, "contacts.contacts": CONTACTS},
            clock="2026-11-29T09:00:00",
            timezone="Europe/Berlin",
            **fixtures,
        ),
    )


TASK = make_task()
NO_SEND = make_task(permissions={"messages": {"android.permission.SEND_SMS": False}})


@pytest.fixture
def b() -> SandboxBackend:
    backend = SandboxBackend()
    backend.reset(TASK)
    return backend


def msgs(b: SandboxBackend) -> dict[str, dict[str, Any]]:
    return dict(b.tables()["messages.messages"])


def test_tools_are_described() -> None:
    names = {n for n in SandboxBackend().tools() if n.startswith("messages.")}
    assert names == {
        "messages.delete",
        "messages.forward",
        "messages.get",
        "messages.list_threads",
        "messages.list_unread",
        "messages.mark_read",
        "messages.read_thread",
        "messages.search",
        "messages.send",
        "messages.send_photos",
    }
    tools = SandboxBackend().tools()
    for name in names:
        spec = tools[name].spec
        assert spec.description != name
        for prop, schema in spec.parameters["properties"].items():
            assert schema.get("description"), (name, prop)
    effects = {n: tools[n].spec.effect.value for n in names}
    assert effects["messages.send"] == effects["messages.forward"] == effects["messages.delete"] == "sensitive"
    assert effects["messages.mark_read"] == "write"
    assert effects["messages.read_thread"] == "read"
    assert tools["messages.send"].spec.permissions == ("android.permission.SEND_SMS",)


def test_list_threads_newest_first_with_contacts_and_unread(b: SandboxBackend) -> None:
    res = ok(b, "messages.list_threads")
    assert res["total"] == 3
    assert [(t["number"], t["contact"], t["unread"], t["count"]) for t in res["threads"]] == [
        (ANA, "Ana Lima", 1, 3),
        (SHOP, None, 1, 1),
        (BEN, "Ben Ott", 1, 1),
    ]
    assert res["threads"][0]["last_message"] == {
        "id": "m_3",
        "number": ANA,
        "contact": "Ana Lima",
        "direction": "in",
        "body": "Bring the wine",
        "time": "2026-11-29T08:30:00",
        "read": False,
    }
    assert b.phone.state.meta["view"] == ("messages", "list", "messages", ("m_3", "m_4", "m_5"))
    assert ok(b, "messages.list_threads", limit=1)["threads"][0]["number"] == ANA


def test_read_thread_oldest_first_and_does_not_mark_read(b: SandboxBackend) -> None:
    before = msgs(b)
    res = ok(b, "messages.read_thread", number="0151 1111111")  # same line, other formatting
    assert [m["id"] for m in res["messages"]] == ["m_1", "m_2", "m_3"]
    assert (res["number"], res["contact"], res["unread"], res["total"]) == (ANA, "Ana Lima", 1, 3)
    assert msgs(b) == before
    assert [m["id"] for m in ok(b, "messages.read_thread", number=ANA, limit=2)["messages"]] == ["m_2", "m_3"]
    title, lines = b.phone.apps["messages"].screen(b.phone.state.meta["view"])
    assert title == "Messages"
    assert lines == ["-> Ana Lima: Sure!", "* <- Ana Lima: Bring the wine"]


def test_read_thread_unknown_number_is_not_found(b: SandboxBackend) -> None:
    fb = call(b, "messages.read_thread", number="+4917099999")
    assert not fb.ok and fb.error is ErrorKind.NOT_FOUND
    assert "messages.send" in fb.hint


def test_mark_read_and_list_unread(b: SandboxBackend) -> None:
    res = ok(b, "messages.list_unread")
    assert [m["id"] for m in res["messages"]] == ["m_3", "m_4", "m_5"]
    assert ok(b, "messages.mark_read", number=ANA) == {"number": ANA, "marked": 1}
    assert msgs(b)["m_3"]["read"] is True
    assert msgs(b)["m_1"] == MESSAGES[0]
    assert ok(b, "messages.mark_read", number=ANA) == {"number": ANA, "marked": 0}
    res = ok(b, "messages.list_unread")
    assert ([m["id"] for m in res["messages"]], res["total"]) == (["m_4", "m_5"], 2)
    fb = call(b, "messages.mark_read", number="+4917099999")
    assert fb.error is ErrorKind.NOT_FOUND


def test_search_body_and_contact_name_case_insensitive(b: SandboxBackend) -> None:
    assert [m["id"] for m in ok(b, "messages.search", query="ANA")["messages"]] == ["m_3", "m_2", "m_1"]
    res = ok(b, "messages.search", query="parcel")
    assert [(m["id"], m["contact"]) for m in res["messages"]] == [("m_4", None)]
    res = ok(b, "messages.search", query="e", limit=2)
    assert ([m["id"] for m in res["messages"]], res["total"]) == (["m_3", "m_4"], 5)
    assert ok(b, "messages.search", query="nothing like this") == {"messages": [], "total": 0}


def test_send_stores_outgoing_read_message_with_clock_time(b: SandboxBackend) -> None:
    ok(b, "messages.list_threads")  # 09:00:01
    res = ok(b, "messages.send", to="+49 163 3333333", body="Thanks, on my way")  # 09:00:02
    assert res == {
        "id": "m_6",
        "number": SHOP,
        "contact": None,
        "direction": "out",
        "body": "Thanks, on my way",
        "time": "2026-11-29T09:00:02",
        "read": True,
    }
    stored = msgs(b)["m_6"]
    assert stored == {k: v for k, v in res.items() if k != "contact"}
    threads = ok(b, "messages.list_threads")["threads"]
    first = threads[0]
    assert (first["number"], first["count"], first["last_message"]["id"]) == (SHOP, 2, "m_6")
    # a number nobody has messaged before starts a new thread
    res = ok(b, "messages.send", to="+44 20 7946 0000", body="Hello")
    assert (res["id"], res["number"], res["time"]) == ("m_7", "+442079460000", "2026-11-29T09:00:04")
    assert ok(b, "messages.list_threads")["total"] == 4


def test_send_argument_validation(b: SandboxBackend) -> None:
    validate = b.tools()["messages.send"].validator.validate
    with pytest.raises(ArgumentError) as exc:
        validate({"to": ANA, "body": ""})
    assert exc.value.path == "/body"
    with pytest.raises(ArgumentError) as exc:
        validate({"to": ANA, "body": "x" * 1001})
    assert exc.value.path == "/body"
    with pytest.raises(ArgumentError) as exc:
        validate({"to": "Ana", "body": "hi"})
    assert exc.value.path == "/to"
    fb = call(b, "messages.send", to=ANA, body="   ")
    assert (fb.error, fb.path) == (ErrorKind.INVALID_ARGUMENTS, "/body")
    assert len(msgs(b)) == 5


def test_send_without_permission_is_denied_and_changes_nothing() -> None:
    b = SandboxBackend()
    b.reset(NO_SEND)
    fb = call(b, "messages.send", to=ANA, body="hi")
    assert not fb.ok and fb.error is ErrorKind.PERMISSION_DENIED
    assert "android.permission.SEND_SMS" in fb.hint
    assert call(b, "messages.forward", message_id="m_1", to=BEN).error is ErrorKind.PERMISSION_DENIED
    assert len(msgs(b)) == 5
    assert ok(b, "messages.list_unread")["total"] == 3  # reading still works
    ok(b, "system.request_permission", app="messages", permission="android.permission.SEND_SMS")
    assert ok(b, "messages.send", to=ANA, body="hi")["id"] == "m_6"


def test_forward_copies_body_to_new_number(b: SandboxBackend) -> None:
    res = ok(b, "messages.forward", message_id="m_4", to=BEN)
    assert res == {
        "id": "m_6",
        "number": BEN,
        "contact": "Ben Ott",
        "direction": "out",
        "body": "Your PARCEL is ready",
        "time": "2026-11-29T09:00:01",
        "read": True,
    }
    assert msgs(b)["m_4"] == MESSAGES[3]
    fb = call(b, "messages.forward", message_id="m_99", to=BEN)
    assert fb.error is ErrorKind.NOT_FOUND and "messages.search" in fb.hint


def test_get_and_delete(b: SandboxBackend) -> None:
    assert ok(b, "messages.get", message_id="m_5")["contact"] == "Ben Ott"
    assert b.phone.state.meta["view"] == ("messages", "detail", "messages", "m_5")
    assert ok(b, "messages.delete", message_id="m_2") == {"deleted": "m_2"}
    assert "m_2" not in msgs(b)
    assert [m["id"] for m in ok(b, "messages.read_thread", number=ANA)["messages"]] == ["m_1", "m_3"]
    fb = call(b, "messages.delete", message_id="m_2")
    assert not fb.ok and fb.error is ErrorKind.NOT_FOUND and fb.recoverable
    # deleting the only message of a thread removes the thread
    ok(b, "messages.delete", message_id="m_5")
    assert [t["number"] for t in ok(b, "messages.list_threads")["threads"]] == [ANA, SHOP]


def test_snapshot_restore_undoes_writes(b: SandboxBackend) -> None:
    snap = b.snapshot()
    before = msgs(b)
    ok(b, "messages.send", to=ANA, body="one")
    ok(b, "messages.mark_read", number=ANA)
    ok(b, "messages.delete", message_id="m_1")
    assert msgs(b) != before
    b.restore(snap)
    assert msgs(b) == before
    assert b.clock() == "2026-11-29T09:00:00"
    assert ok(b, "messages.send", to=ANA, body="again")["id"] == "m_6"
    b.reset(TASK)
    assert msgs(b) == {m["id"]: m for m in MESSAGES}


def test_results_do_not_alias_state(b: SandboxBackend) -> None:
    res = ok(b, "messages.get", message_id="m_3")
    res["body"] = "changed"
    res["read"] = True
    threads = ok(b, "messages.list_threads")
    threads["threads"][0]["last_message"]["body"] = "changed"
    thread = ok(b, "messages.read_thread", number=ANA)
    thread["messages"].clear()
    sent = ok(b, "messages.send", to=BEN, body="hello")
    sent["body"] = "changed"
    state = msgs(b)
    assert state["m_3"] == MESSAGES[2]
    assert state["m_6"]["body"] == "hello"
    assert ok(b, "messages.read_thread", number=ANA)["total"] == 3
    assert MESSAGES[2]["body"] == "Bring the wine"  # the fixture itself is untouched


def test_screenshot_renders(b: SandboxBackend) -> None:
    ok(b, "messages.list_threads")
    img = b.screenshot()
    assert img.shape == (640, 360, 3)
    assert b.phone.state.meta["foreground"] == "messages"


def test_deleted_ids_are_never_reused(b: SandboxBackend) -> None:
    snap = b.snapshot()
    ok(b, "messages.delete", message_id="m_5")
    assert ok(b, "messages.send", to=BEN, body="new")["id"] == "m_6"
    changes = [(c.id, c.kind) for c in diff_tables(snap.tables, b.tables()) if c.table == "messages.messages"]
    assert changes == [("m_5", "deleted"), ("m_6", "created")]
