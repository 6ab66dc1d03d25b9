"""The phone app driven through the sandbox backend: calls, durations, call log, blocking."""

from __future__ import annotations

from typing import Any

import pytest

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, ErrorKind, Fixtures, TaskSpec
from tests.apps.helpers import call, ok

ANA = "+491511111111"
SHOP = "+491633333333"
SPAM = "+491700000000"

CONTACTS = [
    {
        "id": "c_1",
        "name": "Ana Lima",
        "phone": "+49 151 1111111",
        "email": None,
        "relation": None,
        "favorite": False,
        "birthday": None,
    },
]
CALLS = [
    {"id": "call_1", "number": ANA, "direction": "in", "time": "2026-11-28T10:00:00", "duration_s": 120},
    {"id": "call_2", "number": SHOP, "direction": "missed", "time": "2026-11-28T12:00:00", "duration_s": 0},
    {"id": "call_3", "number": ANA, "direction": "out", "time": "2026-11-29T08:00:00", "duration_s": 60},
]
BLOCKED = [{"id": "blk_1", "number": SPAM}]


def make_task(**fixtures: Any) -> TaskSpec:
    return TaskSpec(
        id="phone-test",
        domain="calls",
        goal="test",
        criteria=[AnswerCriterion(equals="x")],
        fixtures=Fixtures(
            records={"phone.calls": CALLS, "phone.blocked": BLOCKED, "contacts.contacts": CONTACTS},
            clock="2026-11-29T09:00:00",
            timezone="Europe/Berlin",
            **fixtures,
        ),
    )


TASK = make_task()
NO_CALL = make_task(permissions={"phone": {"android.permission.CALL_PHONE": False}})
NO_LOG = make_task(
    permissions={"phone": {"android.permission.READ_CALL_LOG": False, "android.permission.WRITE_CALL_LOG": False}}
)


@pytest.fixture
def b() -> SandboxBackend:
    backend = SandboxBackend()
    backend.reset(TASK)
    return backend


def table(b: SandboxBackend, name: str) -> dict[str, dict[str, Any]]:
    return dict(b.tables().get(f"phone.{name}", {}))


def test_tools_are_described() -> None:
    tools = SandboxBackend().tools()
    names = {n for n in tools if n.startswith("phone.")}
    assert names == {
        "phone.block_number",
        "phone.call",
        "phone.call_back_voicemail",
        "phone.call_log",
        "phone.current_call",
        "phone.delete_call_log_entry",
        "phone.delete_voicemail",
        "phone.end_call",
        "phone.list_blocked",
        "phone.list_voicemails",
        "phone.play_voicemail",
        "phone.unblock_number",
    }
    for name in names:
        spec = tools[name].spec
        assert spec.description != name
        for prop, schema in spec.parameters["properties"].items():
            assert schema.get("description"), (name, prop)
    assert tools["phone.call"].spec.effect.value == "sensitive"
    assert tools["phone.call"].spec.permissions == ("android.permission.CALL_PHONE",)
    assert tools["phone.delete_call_log_entry"].spec.permissions == ("android.permission.WRITE_CALL_LOG",)
    assert tools["phone.call_log"].spec.permissions == ("android.permission.READ_CALL_LOG",)
    assert tools["phone.call_log"].spec.parameters["properties"]["filter"]["enum"] == ["all", "missed", "in", "out"]


def test_call_log_newest_first_with_filters(b: SandboxBackend) -> None:
    res = ok(b, "phone.call_log")
    assert res["total"] == 3
    assert res["calls"] == [
        {
            "id": "call_3",
            "number": ANA,
            "contact": "Ana Lima",
            "direction": "out",
            "time": "2026-11-29T08:00:00",
            "duration_s": 60,
        },
        {
            "id": "call_2",
            "number": SHOP,
            "contact": None,
            "direction": "missed",
            "time": "2026-11-28T12:00:00",
            "duration_s": 0,
        },
        {
            "id": "call_1",
            "number": ANA,
            "contact": "Ana Lima",
            "direction": "in",
            "time": "2026-11-28T10:00:00",
            "duration_s": 120,
        },
    ]
    assert b.phone.state.meta["view"] == ("phone", "list", "calls", ("call_3", "call_2", "call_1"))
    assert [c["id"] for c in ok(b, "phone.call_log", filter="missed")["calls"]] == ["call_2"]
    assert [c["id"] for c in ok(b, "phone.call_log", filter="in")["calls"]] == ["call_1"]
    assert [c["id"] for c in ok(b, "phone.call_log", number="0151-1111111")["calls"]] == ["call_3", "call_1"]
    assert ok(b, "phone.call_log", filter="out", number=SHOP) == {"calls": [], "total": 0}
    res = ok(b, "phone.call_log", limit=1)
    assert ([c["id"] for c in res["calls"]], res["total"]) == (["call_3"], 3)


def test_call_then_end_call_records_duration(b: SandboxBackend) -> None:
    res = ok(b, "phone.call", number="+49 151 1111111")  # 09:00:01
    assert res == {
        "call_id": "call_4",
        "number": ANA,
        "contact": "Ana Lima",
        "started": "2026-11-29T09:00:01",
        "elapsed_s": 0,
    }
    assert table(b, "calls")["call_4"] == {
        "id": "call_4",
        "number": ANA,
        "direction": "out",
        "time": "2026-11-29T09:00:01",
        "duration_s": 0,
    }
    assert table(b, "active") == {
        "active": {"id": "active", "number": ANA, "call_id": "call_4", "started": "2026-11-29T09:00:01"}
    }
    cur = ok(b, "phone.current_call")  # 09:00:02
    assert cur["active"] is True and cur["call"]["elapsed_s"] == 1
    fb = call(b, "phone.call", number=SHOP)  # 09:00:03
    assert not fb.ok and fb.error is ErrorKind.CONFLICT and "phone.end_call" in fb.hint
    assert len(table(b, "calls")) == 4
    ended = ok(b, "phone.end_call")  # 09:00:04
    assert ended == {
        "id": "call_4",
        "number": ANA,
        "contact": "Ana Lima",
        "direction": "out",
        "time": "2026-11-29T09:00:01",
        "duration_s": 3,
    }
    assert table(b, "calls")["call_4"]["duration_s"] == 3
    assert table(b, "active") == {}
    assert ok(b, "phone.current_call") == {"active": False, "call": None}
    fb = call(b, "phone.end_call")
    assert fb.error is ErrorKind.PRECONDITION_FAILED
    assert ok(b, "phone.call_log", limit=1)["calls"][0]["id"] == "call_4"
    # a new call is possible once the first has ended
    assert ok(b, "phone.call", number="112")["call_id"] == "call_5"


def test_call_unknown_number_has_no_contact(b: SandboxBackend) -> None:
    res = ok(b, "phone.call", number="+44 20 7946 0000")
    assert (res["number"], res["contact"]) == ("+442079460000", None)
    title, lines = b.phone.apps["phone"].screen(b.phone.state.meta["view"])
    assert (title, lines) == ("Phone", ["On call with +442079460000 since 09:00"])


def test_calling_blocked_number_fails(b: SandboxBackend) -> None:
    fb = call(b, "phone.call", number="+49 170 0000000")
    assert not fb.ok and fb.error is ErrorKind.PRECONDITION_FAILED
    assert "phone.unblock_number" in fb.hint
    assert len(table(b, "calls")) == 3 and table(b, "active") == {}
    assert ok(b, "phone.unblock_number", number="0170 0000000") == {"unblocked": SPAM}
    assert ok(b, "phone.call", number=SPAM)["call_id"] == "call_4"


def test_block_and_unblock(b: SandboxBackend) -> None:
    assert ok(b, "phone.list_blocked") == {"blocked": [{"id": "blk_1", "number": SPAM, "contact": None}], "total": 1}
    fb = call(b, "phone.block_number", number="+49-170-0000000")
    assert not fb.ok and fb.error is ErrorKind.CONFLICT and fb.candidates == [SPAM]
    assert ok(b, "phone.block_number", number="+49 151 1111111") == {
        "id": "blk_2",
        "number": ANA,
        "contact": "Ana Lima",
    }
    assert [r["number"] for r in ok(b, "phone.list_blocked")["blocked"]] == [SPAM, ANA]
    assert call(b, "phone.call", number=ANA).error is ErrorKind.PRECONDITION_FAILED
    assert ok(b, "phone.unblock_number", number=SPAM) == {"unblocked": SPAM}
    fb = call(b, "phone.unblock_number", number=SPAM)
    assert not fb.ok and fb.error is ErrorKind.NOT_FOUND
    assert fb.candidates == [ANA] and "phone.list_blocked" in fb.hint
    assert table(b, "blocked") == {"blk_2": {"id": "blk_2", "number": ANA}}


def test_delete_call_log_entry(b: SandboxBackend) -> None:
    assert ok(b, "phone.delete_call_log_entry", call_id="call_2") == {"deleted": "call_2"}
    assert sorted(table(b, "calls")) == ["call_1", "call_3"]
    fb = call(b, "phone.delete_call_log_entry", call_id="call_2")
    assert not fb.ok and fb.error is ErrorKind.NOT_FOUND and "phone.call_log" in fb.hint
    ok(b, "phone.call", number=ANA)
    fb = call(b, "phone.delete_call_log_entry", call_id="call_4")
    assert fb.error is ErrorKind.CONFLICT
    ok(b, "phone.end_call")
    assert ok(b, "phone.delete_call_log_entry", call_id="call_4") == {"deleted": "call_4"}


def test_call_without_permission_is_denied_until_granted() -> None:
    b = SandboxBackend()
    b.reset(NO_CALL)
    fb = call(b, "phone.call", number=ANA)
    assert not fb.ok and fb.error is ErrorKind.PERMISSION_DENIED
    assert "system.request_permission" in fb.hint and "android.permission.CALL_PHONE" in fb.hint
    assert len(table(b, "calls")) == 3 and table(b, "active") == {}
    assert ok(b, "phone.call_log")["total"] == 3  # the log needs another permission
    ok(b, "system.request_permission", app="phone", permission="android.permission.CALL_PHONE")
    assert ok(b, "phone.call", number=ANA)["started"] == "2026-11-29T09:00:04"


def test_call_log_permissions() -> None:
    b = SandboxBackend()
    b.reset(NO_LOG)
    assert call(b, "phone.call_log").error is ErrorKind.PERMISSION_DENIED
    assert call(b, "phone.delete_call_log_entry", call_id="call_1").error is ErrorKind.PERMISSION_DENIED
    assert len(table(b, "calls")) == 3
    assert ok(b, "phone.call", number=ANA)["call_id"] == "call_4"  # calling itself is allowed


def test_snapshot_restore_undoes_writes(b: SandboxBackend) -> None:
    snap = b.snapshot()
    before = {n: table(b, n) for n in ("calls", "blocked", "active")}
    ok(b, "phone.call", number=ANA)
    ok(b, "phone.block_number", number=SHOP)
    ok(b, "phone.delete_call_log_entry", call_id="call_1")
    b.restore(snap)
    assert {n: table(b, n) for n in ("calls", "blocked", "active")} == before
    assert ok(b, "phone.current_call") == {"active": False, "call": None}
    assert ok(b, "phone.call", number=ANA)["call_id"] == "call_4"
    b.reset(TASK)
    assert table(b, "calls") == {c["id"]: c for c in CALLS}
    assert table(b, "active") == {}


def test_results_do_not_alias_state(b: SandboxBackend) -> None:
    log = ok(b, "phone.call_log")
    log["calls"][0]["duration_s"] = 999
    log["calls"].clear()
    blocked = ok(b, "phone.list_blocked")
    blocked["blocked"][0]["number"] = "0"
    ended_call = ok(b, "phone.call", number=ANA)
    ended_call["call_id"] = "call_1"
    ended = ok(b, "phone.end_call")
    ended["duration_s"] = 0
    assert table(b, "calls")["call_3"] == CALLS[2]
    assert table(b, "calls")["call_4"]["duration_s"] == 1
    assert table(b, "blocked") == {"blk_1": {"id": "blk_1", "number": SPAM}}
    assert CALLS[2]["duration_s"] == 60
