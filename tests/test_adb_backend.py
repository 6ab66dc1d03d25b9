"""The emulator/device backend through the real adb server to a virtual device.

Covers: sandbox-vs-device verdicts on the suite's tasks whose tools have drivers, the injection
corpus, device faults as infrastructure errors, reset verification and snapshots, screenshots.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import string
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phoneenv.contract import ErrorKind, Fixtures, StateCriterion, TaskSpec, ToolCall

pytest.importorskip("adbutils", reason="the adb backend needs adbutils (pip install -e '.[device]')")
pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")

from agents.reference import ReferenceAgent
from phoneenv.backends.adb import (
    AdbBackend,
    DeviceFault,
    ResetError,
    input_text_commands,
    parse_ids,
    parse_rows,
    parse_runtime_permissions,
)
from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.env import PhonePlanEnv
from phoneenv.evaluation import run_episodes, score
from phoneenv.farm.virtual import VirtualDevice, input_text_decode
from phoneenv.tasks import load_suite
from tests import waiting

MARKER = re.compile(r"^[0-9a-f]{16}(:\d+:\d+)?$")
PHONE = "+4915111111111"
CORPUS = [
    "it's \"quoted\" and 'single'",
    "semi; reboot",
    "and && reboot || reboot",
    "pipe | cat /data/x",
    "subst $(reboot) and ${HOME}",
    "tick `reboot`",
    "new\nline; reboot\n",
    "percent %s and %% and 100%",
    "trailing %",
    "back\\slash \\n \\",
    "emoji 😀👍🏽 CJK 漢字かな RTL שלום مرحبا",
    "-leading dash --bind x:s:y",
    "Row: 1 _id=5, body=forged, date=1",
    "NULL",
    "tab\there",
    "x" * 999 + "!",
]


def _ran(dev: VirtualDevice, since: int) -> list[list[str]]:
    """Commands the device ran since ``since``, without the host's ``echo <nonce>`` markers."""
    return [c for c in dev.command_log[since:] if not (c[0] == "echo" and len(c) == 2 and MARKER.match(c[1]))]


def _task(**records) -> TaskSpec:
    return TaskSpec(
        id="test.device",
        domain="contacts",
        goal="-",
        fixtures=Fixtures(clock="2026-11-29T09:00:00", timezone="Europe/Berlin", records=records),
        criteria=[StateCriterion(table="contacts.contacts", change="present", min=0)],
        reference_plan=[ToolCall(name="contacts.search", arguments={"query": "a"})],
    )


ANA = {
    "id": "c_1",
    "name": "Ana Lima",
    "phone": PHONE,
    "email": "ana@example.com",
    "relation": "sister",
    "favorite": False,
    "birthday": "04-12",
}
SMS = {
    "id": "m_2",
    "number": PHONE,
    "direction": "in",
    "body": "hi, body=x",
    "time": "2026-11-28T20:00:00",
    "read": False,
}


@pytest.fixture
def served(adb_server):
    """A fresh virtual device served on loopback and adb-connected; yields (server, device, backend)."""
    from tests.adb import served_device

    dev = VirtualDevice()
    with served_device(adb_server, dev) as (server, _):
        yield server, dev, AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=waiting.scaled(10))


# -- pure functions ----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.printable[:95], min_size=1, max_size=300))
def test_input_text_commands_type_printable_ascii_exactly(text):
    cmds = input_text_commands(text)
    assert all(c[:2] == ["input", "text"] and len(c) == 3 for c in cmds)
    assert "".join(input_text_decode(c[2]) for c in cmds) == text
    assert all(" " not in c[2] for c in cmds)


def test_input_text_commands_route_other_text_through_adb_keyboard():
    [cmd] = input_text_commands("a\nb 😀")
    assert cmd[:6] == ["am", "broadcast", "-a", "ADB_INPUT_B64", "--es", "msg"]
    import base64

    assert base64.b64decode(cmd[6]).decode() == "a\nb 😀"
    assert input_text_commands("%s") == [["input", "text", "%"], ["input", "text", "s"]]


def test_parse_rows_accepts_only_unambiguous_listings():
    cols = ["_id", "address", "body"]
    text = "Row: 0 _id=1, address=+1, body=a, b\nRow: 1 _id=2, address=+2, body=c\n"
    assert parse_rows(text, cols, [1, 2]) == [
        {"_id": "1", "address": "+1", "body": "a, b"},
        {"_id": "2", "address": "+2", "body": "c"},
    ]
    forged = (
        "Row: 0 _id=1, address=+1, body=x\nRow: 1 _id=2, address=+2, body=y\n"  # one row whose body forges a second
    )
    assert parse_rows(forged, cols, [1]) is None
    assert parse_rows("Row: 0 _id=1, address=+1, body=x, body=y\n", cols, [1]) is None
    assert parse_rows("No result found.\n", cols, []) == []
    assert parse_ids("Row: 0 _id=4\nRow: 1 _id=9\n") == [4, 9]
    with pytest.raises(DeviceFault):
        parse_ids("Row: 0 _id=4, x=1\n")


def test_parse_runtime_permissions():
    text = (
        "    User 0: installed=true\n      runtime permissions:\n"
        "        android.permission.READ_SMS: granted=true, flags=[ USER_SET ]\n"
        "        android.permission.SEND_SMS: granted=false, flags=[ ]\n"
        "    User 10: installed=false\n      runtime permissions:\n"
        "        android.permission.READ_SMS: granted=false\n"
    )
    assert parse_runtime_permissions(text) == {
        "android.permission.READ_SMS": True,
        "android.permission.SEND_SMS": False,
    }


def test_tools_offered_are_exactly_the_drivers():
    backend = AdbBackend(serial="none")
    names = set(backend.tools())
    assert {
        "contacts.search",
        "messages.send",
        "calendar.create_event",
        "clock.create_alarm",
        "settings.set_wifi",
    } <= names
    assert {"phone.call", "settings.get", "clock.start_timer", "system.sign_in"}.isdisjoint(names)
    assert not any(n.startswith(("notes.", "mail.")) for n in names)
    fb = backend.call("notes.create", {"title": "x"})
    assert fb.error is ErrorKind.UNKNOWN_TOOL


# -- the comparison ------------------------------------------------------------------------------


def runnable() -> list[TaskSpec]:
    backend = AdbBackend(serial="none")
    return [t for t in load_suite() if backend.can_run(t)]


def sample(tasks: list[TaskSpec]) -> list[TaskSpec]:
    """The first task of every other Tool-category template, in suite order (deterministic;
    the Memory, Skills and Sub-agent tasks, which load the harness's models, run under slow)."""
    seen: list[str | None] = []
    out = []
    for t in tasks:
        if t.category.value == "tool" and t.template not in seen:
            seen.append(t.template)
            if len(seen) % 2 == 1:
                out.append(t)
    return out


def _summary(trace_path: str) -> tuple:
    trace = json.loads(Path(trace_path).read_text())
    v = trace["verdict"]
    failed = sorted((c["id"], c["reason"]) for c in v["criteria"] if not c["passed"])
    steps = [json.dumps(s["feedback"], sort_keys=True) for s in trace["steps"]]
    return v["success"], v["progress"], failed, v["collateral"], v["errors"], v["infrastructure_error"], steps


class _Warnings(logging.Handler):
    """The warnings phoneenv.evaluation logs while it is attached (why a reset failed)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def compare(tasks: list[TaskSpec], backend: AdbBackend, tmp_path: Path) -> list[str]:
    """Run the reference agent on ``tasks`` on both backends; the tasks whose verdict (success,
    progress, failed criteria with reasons, collateral, errors) or any step's feedback differ.
    A device episode that left no trace (its reset failed: a read timeout, a device gone) fails
    the comparison with the reason the eval logged, not later on the missing trace."""
    warnings = _Warnings()
    evaluation_log = logging.getLogger("phoneenv.evaluation")
    evaluation_log.addHandler(warnings)
    try:
        dev = run_episodes(ReferenceAgent(), tasks, tmp_path / "device", env_kwargs={"backend": backend})
    finally:
        evaluation_log.removeHandler(warnings)
    for d in dev:
        if d.trace_path is None:
            why = next((m for m in warnings.messages if d.task_id in m), "no warning was logged")
            raise AssertionError(
                f"{d.task_id}: the device episode left no trace ({d.infrastructure_kind} infrastructure error): {why}"
            )
    box = run_episodes(ReferenceAgent(), tasks, tmp_path / "sandbox", env_kwargs={"backend": "sandbox"})
    bad = []
    for d, s in zip(dev, box, strict=True):
        if _summary(d.trace_path) != _summary(s.trace_path):
            bad.append(d.task_id)
    return bad


def test_compare_names_why_a_device_episode_left_no_trace(tmp_path):
    """The helper above on a device that cannot be reached (as after a read timeout, the episode's
    reset fails and no trace is written): an AssertionError naming the task and the cause, not a
    TypeError from reading a trace at ``None``."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # no adb server here
    backend = AdbBackend(serial="127.0.0.1:5555", adb_port=port, timeout_s=1)
    task = runnable()[0]
    with pytest.raises(
        AssertionError, match=rf"{task.id}: the device episode left no trace .*reset of .* failed .*unreachable"
    ):
        compare([task], backend, tmp_path)


def test_why_not_names_what_is_in_the_way_and_agrees_with_can_run():
    backend = AdbBackend(serial="none")
    suite = {t.id: t for t in load_suite()}
    assert backend.why_not(suite["clock.start_timer/0"]) == "tool clock.start_timer has no device driver"
    assert "memory.entries" in backend.why_not(suite["memory.forget_outdated/0"])
    assert all((backend.why_not(t) is None) == backend.can_run(t) for t in suite.values())


def test_coverage_of_the_suite():
    tasks = runnable()
    apps = Counter(a for t in tasks for a in t.apps)
    assert len(tasks) >= 270, len(tasks)
    for app in ("contacts", "messages", "phone", "calendar", "settings", "clock"):
        assert apps[app] >= 8, (app, apps[app])
    assert not any(t.id.startswith(("hybrid.", "mail.", "notes.")) for t in tasks)


def test_reference_verdicts_match_the_sandbox_on_a_sample(served, tmp_path):
    server, dev, backend = served
    tasks = sample(runnable())
    assert len(tasks) >= 10 and len({a for t in tasks for a in t.apps} - {"system", "user"}) >= 5
    assert compare(tasks, backend, tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("part", range(4))
def test_reference_verdicts_match_the_sandbox_on_every_runnable_task(served, tmp_path, part):
    """Every task the drivers can run, in four interleaved parts (so xdist spreads them)."""
    server, dev, backend = served
    tasks = runnable()[part::4]
    t0 = time.perf_counter()
    bad = compare(tasks, backend, tmp_path)
    print(f"\n{len(tasks)} tasks compared in {time.perf_counter() - t0:.0f} s")
    assert bad == []


def _every_tool_script(task: TaskSpec) -> list[tuple[str, dict]]:
    """One or more calls of every tool the drivers offer (errors included), from ``task``'s fixtures."""
    rec = task.fixtures.records
    c, m, ev = rec["contacts.contacts"][0], rec["messages.messages"][0], rec["calendar.events"][0]
    call, al, day = rec["phone.calls"][0], rec["clock.alarms"][0], rec["calendar.events"][0]["start"][:10]
    new = "+4917000000001"
    return [
        ("contacts.search", {"query": c["name"][:3]}),
        ("contacts.get", {"contact_id": c["id"]}),
        ("contacts.list", {"offset": 2, "limit": 5}),
        ("contacts.favorites", {}),
        (
            "contacts.create",
            {"name": "Zed Tester", "phone": new, "email": "z@example.com", "relation": "coach", "birthday": "02-29"},
        ),
        ("contacts.create", {"name": "Dup", "phone": new}),  # conflict
        (
            "contacts.update",
            {"contact_id": c["id"], "email": "new@example.com", "relation": "friend", "birthday": "12-31"},
        ),
        ("contacts.set_favorite", {"contact_id": c["id"]}),
        ("contacts.add_number", {"contact_id": c["id"], "number": "+4930123456", "label": "work"}),
        ("contacts.add_number", {"contact_id": c["id"], "number": "+4930654321", "label": "home", "primary": True}),
        ("contacts.add_number", {"contact_id": c["id"], "number": new}),  # conflict: Zed's
        ("contacts.set_primary_number", {"contact_id": c["id"], "number": "+49 30 123456"}),
        ("contacts.remove_number", {"contact_id": c["id"], "number": "+4930123456"}),  # the main one: promotes
        ("contacts.add_email", {"contact_id": c["id"], "address": "w@example.org", "label": "work"}),
        ("contacts.set_primary_email", {"contact_id": c["id"], "address": "w@example.org"}),
        ("contacts.remove_email", {"contact_id": c["id"], "address": "nobody@example.org"}),  # not_found
        ("contacts.get", {"contact_id": c["id"]}),
        ("contacts.clear_field", {"contact_id": c["id"], "field": "birthday"}),
        ("contacts.clear_field", {"contact_id": c["id"], "field": "email"}),
        ("contacts.get", {"contact_id": "c_999"}),  # not_found
        ("contacts.delete", {"contact_id": rec["contacts.contacts"][1]["id"]}),
        ("messages.list_threads", {"limit": 5}),
        ("messages.read_thread", {"number": m["number"]}),
        ("messages.get", {"message_id": m["id"]}),
        ("messages.search", {"query": m["body"][:5]}),
        ("messages.list_unread", {}),
        ("messages.mark_read", {"number": m["number"]}),
        ("messages.send", {"to": c["phone"], "body": "See you at 5, 100% sure"}),
        ("messages.forward", {"message_id": m["id"], "to": new}),
        ("messages.delete", {"message_id": m["id"]}),
        ("phone.call_log", {"filter": "missed"}),
        ("phone.call_log", {"number": call["number"], "limit": 3}),
        ("phone.block_number", {"number": "+4917000000002"}),
        ("phone.block_number", {"number": "+49 170 000 00002"}),  # conflict
        ("phone.list_blocked", {}),
        ("phone.unblock_number", {"number": "+4917000000002"}),
        ("phone.delete_call_log_entry", {"call_id": call["id"]}),
        ("calendar.list_events", {"date": day, "days": 3}),
        ("calendar.get_event", {"event_id": ev["id"]}),
        ("calendar.search_events", {"query": ev["title"][:4]}),
        ("calendar.free_slots", {"date": day, "duration_minutes": 30}),
        (
            "calendar.create_event",
            {
                "title": "Offsite",
                "start": f"{day}T07:00",
                "end": f"{day}T08:30",
                "location": "HQ",
                "attendees": ["Ana", "z@example.com"],
                "notes": "bring laptop",
            },
        ),
        (
            "calendar.create_event",
            {"title": "Holiday", "start": f"{day}T00:00", "end": f"{day}T00:00", "all_day": True},
        ),
        ("calendar.update_event", {"event_id": ev["id"], "start": f"{day}T18:00", "notes": "moved"}),
        ("calendar.add_attendee", {"event_id": ev["id"], "attendee": "Zed Tester"}),
        ("calendar.remove_attendee", {"event_id": ev["id"], "attendee": "Zed Tester"}),
        ("calendar.add_reminder", {"event_id": ev["id"], "minutes_before": 30}),
        ("calendar.add_reminder", {"event_id": ev["id"], "minutes_before": 10}),
        ("calendar.add_reminder", {"event_id": ev["id"], "minutes_before": 10}),  # conflict
        ("calendar.remove_reminder", {"event_id": ev["id"], "minutes_before": 30}),
        ("calendar.remove_reminder", {"event_id": ev["id"], "minutes_before": 99}),  # not_found
        (
            "calendar.create_event",
            {
                "title": "NY call",
                "start": f"{day}T09:00",
                "end": f"{day}T09:30",
                "timezone": "America/New_York",
                "reminders": [15, 60],
            },
        ),
        ("calendar.update_event", {"event_id": ev["id"], "timezone": "Asia/Tokyo"}),
        ("phone.list_voicemails", {}),
        ("phone.play_voicemail", {"voicemail_id": "vm_1"}),  # not_found
        ("phone.delete_voicemail", {"voicemail_id": "vm_1"}),  # not_found
        ("calendar.delete_event", {"event_id": ev["id"]}),
        ("clock.now", {}),
        ("clock.world_time", {"timezone": "Asia/Tokyo"}),
        ("clock.create_alarm", {"time": "06:45", "label": "Gym", "days": ["fri", "mon", "fri"]}),
        ("clock.list_alarms", {}),
        ("clock.update_alarm", {"alarm_id": al["id"], "time": "07:15", "days": ["sat", "sun"]}),
        ("clock.set_alarm_enabled", {"alarm_id": al["id"], "enabled": False}),
        ("clock.delete_alarm", {"alarm_id": al["id"]}),
        ("settings.set_wifi", {"enabled": False}),
        ("settings.set_bluetooth", {"enabled": True}),
        ("settings.set_dnd", {"enabled": True}),
        ("settings.set_airplane_mode", {"enabled": True}),
        ("settings.set_airplane_mode", {"enabled": False}),
        ("settings.set_location", {"enabled": False}),
        ("settings.set_brightness", {"level": 35}),
        ("settings.set_dark_mode", {"enabled": True}),
        ("settings.list_app_permissions", {"app": "messages"}),
        ("settings.revoke_permission", {"app": "messages", "permission": "android.permission.SEND_SMS"}),
        ("messages.send", {"to": new, "body": "denied"}),  # permission_denied
        ("system.check_permission", {"app": "messages", "permission": "android.permission.SEND_SMS"}),
        ("system.request_permission", {"app": "messages", "permission": "android.permission.SEND_SMS"}),
        ("settings.revoke_permission", {"app": "calendar", "permission": "android.permission.WRITE_CALENDAR"}),
        ("settings.grant_permission", {"app": "calendar", "permission": "android.permission.WRITE_CALENDAR"}),
        ("system.list_apps", {}),
        ("system.open_app", {"app": "clock"}),
        ("screen.capture", {}),
    ]


def test_every_offered_tool_answers_as_in_the_sandbox(served):
    server, dev, backend = served
    task = next(t for t in runnable() if t.template == "cross.late_to_meeting")
    script = _every_tool_script(task)
    assert {name for name, _ in script} == set(backend.tools())
    box = SandboxBackend()
    box.reset(task)
    backend.reset(task)
    for name, args in script:
        want, got = box.call(name, dict(args)), backend.call(name, dict(args))
        assert got.model_dump_json() == want.model_dump_json(), name
    assert {k: v for k, v in backend.tables().items() if k != "phone.active"} == _sandbox_tables_of(box, backend)


# -- injection -----------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["messages.send", "contacts.create", "calendar.create_event", "clock.create_alarm"])
def test_hostile_text_arrives_intact_and_runs_nothing(served, field):
    server, dev, backend = served
    backend.reset(_task(**{"contacts.contacts": [ANA], "messages.messages": [SMS]}))
    backend.shell.record = True
    sent, ran = len(backend.shell.sent), len(dev.command_log)
    typed: set[str] = set()
    written: list[tuple[str, str]] = []
    for i, text in enumerate(CORPUS):
        if field == "messages.send":
            args, table, key = {"to": PHONE, "body": text}, "messages.messages", "body"
        elif field == "contacts.create":
            args, table, key = {"name": text[:80], "phone": f"+49170{i:07d}"}, "contacts.contacts", "name"
        elif field == "calendar.create_event":
            args = {
                "title": text[:200],
                "start": "2026-11-30T10:00",
                "end": "2026-11-30T11:00",
                "location": text[:200],
                "notes": text,
            }
            table, key = "calendar.events", "title"
        else:
            args, table, key = {"time": "07:30", "label": text[:60]}, "clock.alarms", "label"
        k = len(backend.shell.sent)
        fb = backend.call(field, args)
        typed |= {c[0] + " " + c[1] for c in backend.shell.sent[k:] if c[0] in ("input", "am")}
        assert fb.ok, (text, fb)
        rid = fb.result["id"]
        want = args[key].strip() if field in ("contacts.create", "calendar.create_event") else args[key]
        assert dev.phone.state.get(table, rid)[key] == want, text
        written.append((rid, want))
        if field == "calendar.create_event":
            assert dev.phone.state.get(table, rid)["notes"] == text
            assert dev.phone.state.get(table, rid)["location"] == text[:200].strip()
    read_back = backend.tables()[table]  # through `content query` and its parsing
    assert [read_back[rid][key] for rid, _ in written] == [want for _, want in written]
    # The device ran exactly the argument lists the host built: nothing more, nothing split.
    assert _ran(dev, ran) == backend.shell.sent[sent:]
    assert all(
        c[0] in {"content", "settings", "pm", "am", "input", "dumpsys", "date", "getprop", "setprop", "svc", "cmd"}
        for c in _ran(dev, ran)
    )
    if field == "messages.send":
        assert {"input text", "am broadcast", "am start"} <= typed  # both typing paths were used


# -- faults --------------------------------------------------------------------------------------


def _contacts_task() -> TaskSpec:
    return next(t for t in runnable() if t.template == "contacts.add_contact")


class _Scripted:
    """Plays ``plan``; runs ``hook`` just before action number ``at`` (0-based)."""

    name = "scripted"

    def __init__(self, plan: list[ToolCall], at: int, hook) -> None:
        self.plan, self.at, self.hook, self.i = plan, at, hook, 0

    def reset(self, observation, info) -> None:
        self.i = 0

    def act(self, observation, info) -> str:
        if self.i == self.at:
            self.hook()
        call = self.plan[min(self.i, len(self.plan) - 1)]
        self.i += 1
        return call.model_dump_json()


def test_connections_dropped_mid_call_are_device_errors_and_the_env_keeps_going(served):
    server, dev, backend = served
    task = _contacts_task()
    env = PhonePlanEnv(task=task, backend=backend)
    env.reset(seed=0)
    real_shell = dev.shell

    def dropping(command: str, stdin: bytes = b""):
        if "content query" in command:
            dev.shell = real_shell  # once
            server.close_all_connections()
        return real_shell(command, stdin)

    dev.shell = dropping
    obs, *_ = env.step({"name": "contacts.search", "arguments": {"query": "a"}})
    fb = json.loads(obs["feedback"])
    assert fb["ok"] is False and fb["error"] in ("device_error", "timeout"), fb
    assert fb["recoverable"] is False
    obs, *_ = env.step({"name": "contacts.search", "arguments": {"query": "a"}})  # reconnected
    assert json.loads(obs["feedback"])["ok"] is True
    *_, info = env.step({"name": "finish", "arguments": {"answer": "x"}})
    assert info["infrastructure_error"] is True and info["success"] is False


def test_a_device_gone_mid_episode_is_an_infrastructure_failure_in_the_evaluation(adb_server):
    from tests.adb import served_device

    dev = VirtualDevice()
    task = _contacts_task()
    with served_device(adb_server, dev) as (server, _):
        backend = AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=waiting.scaled(5))
        agent = _Scripted(list(task.reference_plan), at=1, hook=server.stop)
        [res] = run_episodes(agent, [task], env_kwargs={"backend": backend})
    assert res.infrastructure_error is True and res.success is False
    board = score("scripted", [res])
    assert board.infrastructure_errors == 1 and board.categories[-1].episodes == 0


def test_a_device_lost_between_episodes_fails_those_resets_as_infrastructure(adb_server):
    """A reset that cannot reach the device is an infrastructure episode (no steps, no trace); the
    run goes on, and stops with an InfrastructureError after max_consecutive_infra of them."""
    from phoneenv.llm import InfrastructureError
    from tests.adb import served_device

    dev = VirtualDevice()
    task = _contacts_task()
    done = []
    with served_device(adb_server, dev) as (server, _):
        backend = AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=waiting.scaled(5))
        agent = _Scripted(list(task.reference_plan), at=-1, hook=None)

        def after(result) -> None:
            done.append(result)
            if len(done) == 1:  # the device goes away after the first episode
                server.stop()

        with pytest.raises(InfrastructureError, match="2 episodes in a row") as caught:
            run_episodes(
                agent, [task, task, task, task], env_kwargs={"backend": backend}, on_episode=after,
                max_consecutive_infra=2,
            )  # fmt: skip
    assert isinstance(caught.value.__cause__, DeviceFault)
    first, *lost = done
    assert first.success is True and first.infrastructure_error is False
    assert len(lost) == 2 and all(r.infrastructure_error and r.steps == 0 and r.trace_path is None for r in lost)
    board = score("scripted", done)
    assert board.infrastructure_errors == 2 and board.categories[-1].episodes == 1


def test_unauthorized_device(adb_server):
    from phoneenv.farm.adbwire import AdbDeviceServer
    from tests.adb import connect_device, served_device

    dev = VirtualDevice()
    task = _contacts_task()
    with served_device(adb_server, dev) as (server, _):
        port = server.port
        backend = AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=waiting.scaled(5))
        backend.reset(task)
        server.stop()
        with AdbDeviceServer(dev, port=port, require_auth=True) as locked:
            with contextlib.suppress(Exception):
                connect_device(adb_server, locked.serial, timeout=5, state="unauthorized")
            kinds, messages = [], []
            for _ in range(2):
                fb = backend.call("contacts.search", {"query": "a"})
                kinds.append(fb.error)
                messages.append(fb.message or "")
            with pytest.raises(DeviceFault, match="unauthorized"):
                backend.reset(task)
    assert set(kinds) == {ErrorKind.DEVICE_ERROR}
    assert all("unauthorized" in m for m in messages[1:]), messages


def test_adb_server_killed_then_restarted(tmp_path):
    from tests.adb import AdbServer, adb_binary, served_device, server_version

    if adb_binary() is None:
        pytest.skip("adb is not installed")
    dev = VirtualDevice()
    task = _contacts_task()
    adb = AdbServer(tmp_path / "adb").start()
    try:
        port = adb.port
        with served_device(adb.client, dev) as (server, _):
            backend = AdbBackend(serial=server.serial, adb_port=port, timeout_s=waiting.scaled(5))
            backend.reset(task)
            adb.process.kill()
            adb.process.wait()
            fb = backend.call("contacts.search", {"query": "a"})
            assert fb.error is ErrorKind.DEVICE_ERROR and "no adb server answers" in fb.message
            assert server_version(port) is None  # the backend did not start a server itself
            adb.process = None
            adb = AdbServer(tmp_path / "adb2", port=port).start()  # restarted: it forgot the device
            fb = backend.call("contacts.search", {"query": "a"})
            assert fb.ok, fb  # the backend ran `adb connect` again
    finally:
        adb.stop()


def test_a_device_that_does_not_answer_in_time_is_a_timeout(adb_server):
    from tests.adb import served_device

    dev = VirtualDevice()
    real = dev.shell
    slow = {"on": False}

    def stalling(command: str, stdin: bytes = b""):
        if slow["on"] and "dumpsys" in command:
            slow["on"] = False
            time.sleep(2.0)
        return real(command, stdin)

    dev.shell = stalling
    with served_device(adb_server, dev) as (server, _):
        # the reset and the last call run under a generous timeout (a busy host may take more than
        # 0.5 s for any round trip); only the stalled call is held to 0.5 s
        backend = AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=30.0)
        backend.reset(_task(**{"contacts.contacts": [ANA]}))
        backend.shell.timeout_s = 0.5
        slow["on"] = True
        fb = backend.call("contacts.search", {"query": "ana"})  # its permission check runs dumpsys
        assert fb.error is ErrorKind.TIMEOUT and fb.infrastructure and fb.recoverable is False
        assert "did not answer within 0.5 s" in fb.message
        time.sleep(2.0)  # the device finishes the stalled command
        backend.shell.timeout_s = 30.0
        assert backend.call("contacts.search", {"query": "ana"}).ok


def test_snapshot_and_restore_round_trip(served):
    server, dev, backend = served
    backend.reset(_task(**{"contacts.contacts": [ANA], "messages.messages": [SMS]}))
    assert backend.call("contacts.set_favorite", {"contact_id": "c_1"}).ok
    snap = backend.snapshot()
    assert snap[0]["contacts.contacts"]["c_1"]["favorite"] is True
    assert backend.call("messages.delete", {"message_id": "m_2"}).ok
    assert backend.call("contacts.delete", {"contact_id": "c_1"}).ok
    backend.restore(snap)
    assert dev.phone.state.get("messages.messages", "m_2") == SMS
    assert dev.phone.state.get("contacts.contacts", "c_1") == {**ANA, "favorite": True}
    assert backend.clock_seconds() == snap[1]["now"]


# -- reset ---------------------------------------------------------------------------------------


def _device_tables(dev: VirtualDevice, backend: AdbBackend, box_names: frozenset[str] = frozenset()) -> dict:
    mapped = backend.mapped_tables()
    out = {}
    for name, tbl in dev.phone.state.tables.items():
        if name in mapped and name != "phone.active":
            spec = mapped[name]
            rows = {k: {f: tuple(v) if isinstance(v, list) else v for f, v in r.items()} for k, r in tbl.items()}
            if spec.mapping.__class__.__name__ == "SettingsTable":
                rows = {k: v for k, v in rows.items() if k in spec.mapping.keys}
            if rows or name in box_names:
                out[name] = rows  # an empty table a provider serves that the fixtures never named
    return out


def _sandbox_tables_of(box: SandboxBackend, backend: AdbBackend) -> dict:
    """``box``'s tables restricted to what ``backend`` maps (settings: mapped keys), lists as tuples."""
    mapped = backend.mapped_tables()
    out = {}
    for name, tbl in box.tables().items():
        if name in mapped and name != "phone.active":
            rows = {k: {f: tuple(v) if isinstance(v, list) else v for f, v in r.items()} for k, r in tbl.items()}
            if name == "settings.settings":
                rows = {k: v for k, v in rows.items() if k in mapped[name].mapping.keys}
            out[name] = rows
    return out


def _sandbox_tables(task: TaskSpec, backend: AdbBackend) -> dict:
    """The same tables from the sandbox's own reset (an independent path to the fixture state)."""
    box = SandboxBackend()
    box.reset(task)
    mapped = backend.mapped_tables()
    out = {}
    for name, tbl in box.tables().items():
        if name in mapped and name != "phone.active":
            rows = {k: {f: tuple(v) if isinstance(v, list) else v for f, v in r.items()} for k, r in tbl.items()}
            if name == "settings.settings":
                rows = {k: v for k, v in rows.items() if k in mapped[name].mapping.keys}
            out[name] = rows
    return out


def test_reset_restores_a_corrupted_device(served):
    server, dev, backend = served
    task = next(t for t in runnable() if t.template == "cross.late_to_meeting")
    backend.reset(task)
    assert _device_tables(dev, backend, frozenset(_sandbox_tables(task, backend))) == _sandbox_tables(task, backend)
    sh = dev.shell
    sh("content delete --uri content://com.android.contacts/raw_contacts --where _id=1", b"")
    sh(
        "svc wifi disable; svc bluetooth enable; pm revoke com.google.android.apps.messaging android.permission.SEND_SMS",
        b"",
    )
    sh(
        "content insert --uri content://sms --bind address:s:+1 --bind body:s:stray --bind type:i:1 --bind date:l:0",
        b"",
    )
    ev = next(iter(dev.phone.state.table("calendar.events")))
    dev.phone.state.update("calendar.events", ev, attendees=("Someone Else",), title="renamed")
    dev.shell("setprop persist.sys.timezone Pacific/Fiji; date -u 010100002030", b"")
    assert _device_tables(dev, backend) != _sandbox_tables(task, backend)
    backend.reset(task)
    assert _device_tables(dev, backend, frozenset(_sandbox_tables(task, backend))) == _sandbox_tables(task, backend)
    assert dev.props["persist.sys.timezone"] == task.fixtures.timezone
    env = PhonePlanEnv(task=task, backend=backend)
    env.reset(seed=0)
    for call in task.reference_plan:
        *_, info = env.step(call.model_dump())
    assert info["success"] is True


def test_a_device_that_refuses_a_fixture_fails_reset_loudly(adb_server):
    from tests.adb import served_device

    task = next(t for t in runnable() if t.template == "clock.alarm_off")
    with served_device(adb_server, VirtualDevice(root=False)) as (server, _):
        backend = AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=waiting.scaled(10))
        with pytest.raises(ResetError, match="refused the fixtures"):
            backend.reset(task)
        backend.set_device_clock = False  # the clock aside, DeskClock's provider needs root
        with pytest.raises(ResetError, match="Permission Denial"):
            backend.reset(task)
    with served_device(adb_server, VirtualDevice(missing_packages=["com.google.android.apps.messaging"])) as (
        server,
        _,
    ):
        backend = AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=waiting.scaled(10))
        with pytest.raises(ResetError, match=r"lacks the apps the task installs: messages"):
            backend.reset(task)


def test_a_device_that_silently_drops_rows_fails_verification(adb_server):
    from tests.adb import served_device

    dev = VirtualDevice()
    real = dev._insert

    def dropping(route, values):
        if values.get("mimetype") == "vnd.android.cursor.item/email_v2":
            return 0  # the provider "accepts" the row and keeps nothing
        return real(route, values)

    dev._insert = dropping
    with served_device(adb_server, dev) as (server, _):
        backend = AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=waiting.scaled(10))
        with pytest.raises(
            ResetError, match=r"not in the fixture state.*contacts\.contacts/c_1.*'email': 'ana@example.com'"
        ):
            backend.reset(_task(**{"contacts.contacts": [ANA]}))


def test_snapshots_through_the_console(adb_server):
    from phoneenv.farm.console import ConsoleServer, MemorySnapshotHooks
    from tests.adb import served_device

    dev = VirtualDevice()
    hooks = MemorySnapshotHooks(capture=dev.phone.state.snapshot, restore=dev.phone.state.restore)
    task = _task(**{"contacts.contacts": [ANA], "messages.messages": [SMS]})
    with ConsoleServer(hooks, token="tok") as console, served_device(adb_server, dev) as (server, _):
        backend = AdbBackend(
            serial=server.serial, adb_port=adb_server.port, console_port=console.port, console_token="tok"
        )
        backend.reset(task)
        assert backend.last_reset["how"] == "seeded"
        assert [s.name for s in hooks.list()] == [backend.snapshot_name(task)]
        backend.call("messages.delete", {"message_id": "m_2"})
        backend.reset(task)
        assert backend.last_reset["how"] == "snapshot"
        assert dev.phone.state.get("messages.messages", "m_2") == SMS
        # a snapshot that restores the wrong state is caught by verification and re-seeded
        hooks._states[hooks.list()[0].name].tables["contacts.contacts"].clear()
        backend.reset(task)
        assert backend.last_reset["how"] == "seeded"
        assert dev.phone.state.get("contacts.contacts", "c_1") == ANA


# -- screen and construction -----------------------------------------------------------------------


def test_screenshots_are_the_device_screen(served):
    server, dev, backend = served
    backend.reset(_task(**{"contacts.contacts": [ANA]}))
    fb = backend.call("contacts.search", {"query": "ana"})
    assert fb.ok
    image = backend.screenshot()
    assert image.shape == (640, 360, 3) and image.dtype.name == "uint8"
    assert (image == dev.screen()).all()
    assert dev.foreground == "com.android.contacts"
    shot = backend.call("screen.capture", {})
    assert shot.ok and shot.result["foreground"] == "contacts" and (shot.image == image).all()


def test_make_backend_and_env_defaults_from_adb_environment(served, monkeypatch):
    import gymnasium as gym

    import phoneenv  # noqa: F401
    from phoneenv.backends import make_backend

    server, dev, backend = served
    monkeypatch.setenv("ANDROID_SERIAL", server.serial)
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(backend.adb_port))
    b = make_backend("emulator")
    assert (b.name, b.serial, b.adb_port) == ("emulator", server.serial, backend.adb_port)
    env = gym.make("PhonePlan-v0", tasks="contacts.add_contact/*", backend="device")
    obs, info = env.reset(seed=0)
    assert "contacts.create" in {t["function"]["name"] for t in info["tools"]}
    assert "notes.create" not in {t["function"]["name"] for t in info["tools"]}
    env.close()
