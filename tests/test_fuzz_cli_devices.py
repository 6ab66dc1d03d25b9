"""The file inputs of the device commands fuzzed with damaged files (issue 34, tests/fuzzfiles.py):
the farm file (``eval --farm``, ``farm status|down|restart``), an eval run's traces replayed by
``validate-devices --traces`` (whole files and single damaged trace lines and actions), AVD
definitions (``device emulator list|start``), the console token file (``device emulator stop
--token-path``), an MCP replay cache (``mcp tools --record``) and a virtual device's fault plan
(``device serve --faults``, read by :class:`~phoneenv.farm.faults.FaultyDevice`).

No device, emulator or Docker is needed: each file is read (or refused) before device work, and
the work that follows fails on its own (an adb server port nobody listens on, no emulator on
PATH, an MCP server command that does not exist). A damaged file gives one error naming it with
exit code 2, or is read around; never a traceback, never a hang."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from phoneenv.cli import app
from tests.fuzzfiles import KINDS, check, damage, fuzz_file, mistyped

REPO = Path(__file__).resolve().parents[1]
NO_PID = 2**31 - 1
"""A pid no process has (Linux pids stay below 2**22): a farm file's local worker that is gone."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the farm file ---------------------------------------------------------------------------------


@pytest.fixture
def farm(tmp_path: Path) -> tuple[Path, dict]:
    """A farm file of one local worker that is gone (its pid is no process's), reached through an
    adb server port nobody listens on."""
    device_port = _free_port()
    doc = {
        "version": 1,
        "adb": {"host": "127.0.0.1", "port": _free_port()},
        "devices": [
            {
                "serial": f"127.0.0.1:{device_port}",
                "kind": "virtual",
                "restart": ["true"],
                "worker": {"runtime": "local", "pid": NO_PID, "port": device_port, "log": str(tmp_path / "w.log")},
            }
        ],
    }
    return tmp_path / "farm.json", doc


@pytest.mark.parametrize("command", ["eval", "status", "down", "restart"])
def test_the_farm_file_damaged_is_one_line_before_any_device_work(command: str, farm, tmp_path: Path) -> None:
    """Each command reads the farm file before it leases, signals or restarts anything: damage is
    one line naming the file (exit 2); a file still of the schema goes on to the devices, which
    nobody serves. Wrong types in a worker record (the pid ``farm down`` signals) are refused."""
    path, doc = farm
    argv = (
        {
            "eval": ["eval", "--tasks", "clock.alarm_off/0", "--out", str(tmp_path / "run"), "--overwrite", "--farm"],
            "status": ["farm", "status"],
            "down": ["farm", "down", "--keep-file"],
            "restart": ["farm", "restart", "--timeout", "1"],
        }[command]
        + [str(path)]
        + (["127.0.0.1:9"] if command == "restart" else [])
    )
    went_on = {  # the file was read: the devices answered (nobody does), or the serial is no worker's
        "eval": ("no device of the pool is ready",),
        "status": ("handshake",),
        "down": (),
        "restart": ("has no worker serving",),
    }[command]
    good = json.dumps(doc, indent=2).encode()
    path.write_bytes(good)
    res = check(argv, path, "good", went_on=went_on)
    if command == "eval":  # what to run next names this farm file
        assert f"phoneenvfarmstatus{path}" in "".join(res.output.split()), res.output
    fuzz_file(path, doc, argv, went_on=went_on, limit=None, dump=lambda d: json.dumps(d, indent=2))


@pytest.mark.parametrize("pid", [-1, 0, "1", 10**30])
def test_a_worker_pid_that_is_no_one_process_is_refused(pid: object, farm) -> None:
    """A local worker's pid is what ``farm down`` signals: -1 would signal every process of the
    user, 0 the process group. Such a farm file is refused with the file named (exit 2) by
    ``status`` and ``down`` before anything is signalled."""
    path, doc = farm
    doc["devices"][0]["worker"].update(pid=pid, port=None)  # no port: the pid alone says which process
    path.write_text(json.dumps(doc), encoding="utf-8")
    commands = [["farm", "status", str(path)]]
    if pid != -1:  # never `farm down` with -1: were the check undone, it would signal every process
        commands.append(["farm", "down", str(path)])
    for argv in commands:
        res = check(argv, path, f"{argv[1]} pid {pid!r}")
        assert res.exit_code == 2 and "devices.0.worker" in "".join(res.output.split()), res.output
    assert path.exists()  # not removed: nothing was stopped


# -- validate-devices --traces ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("good") / "run"
    res = CliRunner().invoke(app, ["eval", "--tasks", "clock.alarm_off/0,settings.toggle/0", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_validate_devices_reads_around_damaged_traces_and_says_which(good_run: Path, tmp_path: Path) -> None:
    """A damaged trace file of --traces (whole, or its trace line with a wrong type: an action's
    name a number, its arguments a string, steps not a list) is left out with a warning naming it,
    and the batch goes on to the device (here an adb port nobody serves: every reset fails). A
    trace whose actions are odd but of the schema (an unknown tool, arguments of the wrong types,
    a 3 MB argument, raw text) is replayed as it is, on both sides."""
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    trace = run / "traces" / "clock.alarm_off-0.jsonl"
    good = trace.read_bytes()
    argv = ["validate-devices", "--tasks", "clock.alarm_off/0", "--serial", f"127.0.0.1:{_free_port()}"]
    argv += ["--adb-port", str(_free_port()), "--timeout-s", "2", "--reruns", "0"]
    argv += ["--traces", str(run), "--out", str(tmp_path / "out")]
    res = check(argv, trace, "good", went_on=("differences:",))
    assert res.exit_code == 1 and "episodes: 0.0% agree (0/2)" in res.output  # reference + the trace

    def played(label: str, left_out: bool) -> None:
        res = check(argv, trace, label, went_on=("differences:",))
        said = "".join(res.output.split())
        assert res.exit_code == 1, (label, res.output)
        assert ("clock.alarm_off-0.jsonl:notatrace" in said) == left_out, (label, res.output)
        assert ("(0/1)" if left_out else "(0/2)") in said, (label, res.output)  # the reference alone, or both

    for kind in KINDS:
        damage(trace, kind, good)
        played(kind, left_out=True)
    doc = json.loads(good.decode().split("\n")[0])
    step = ["steps", 0, "action"]
    for label, line, left_out in [
        ("action name a number", _set(doc, [*step, "name"], 7), True),
        ("arguments a string", _set(doc, [*step, "arguments"], "fuzz"), True),
        ("steps not a list", _set(doc, ["steps"], "fuzz"), True),
        ("no task id", {k: v for k, v in doc.items() if k != "task_id"}, True),
        ("an unknown tool", _set(doc, [*step, "name"], "no.such_tool"), False),
        ("arguments of wrong types", _set(doc, [*step, "arguments"], {"alarm_id": 7, "enabled": "yes"}), False),
        ("a 3 MB argument", _set(doc, [*step, "arguments"], {"alarm_id": "a" * 3_000_000}), False),
        ("raw text", _set(_set(doc, [*step], None), ["steps", 0, "raw"], '{"name": [[[['), False),
    ]:
        damage(trace, "empty", good)
        trace.write_text(json.dumps(line) + "\n" + good.decode(), encoding="utf-8")  # the first line is the trace
        played(label, left_out)


def _set(doc: dict, path: list, value: object) -> dict:
    """A copy of ``doc`` with the value at ``path`` replaced."""
    new = json.loads(json.dumps(doc))
    node = new
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return new


# -- AVD definitions, the console token, the MCP replay cache --------------------------------------


@pytest.mark.parametrize("command", ["list", "start"])
def test_avd_definitions_damaged_are_one_line(command: str, tmp_path: Path, monkeypatch) -> None:
    """``device emulator list DIR`` and ``start SPEC`` on a damaged AVD definition: one line naming
    it (exit 2); a definition still of the schema goes on to look for the emulator (none here)."""
    for name in ("PATH", "ANDROID_HOME", "ANDROID_SDK_ROOT"):
        monkeypatch.setenv(name, str(tmp_path / "nothing"))  # never an emulator of this machine
    monkeypatch.setenv("ANDROID_AVD_HOME", str(tmp_path / "avd"))
    good = (REPO / "emulator_images" / "pixel6-api34.yaml").read_bytes()
    spec = tmp_path / "images" / "pixel6.yaml"
    spec.parent.mkdir()
    spec.write_bytes(good)
    argv = ["device", "emulator", "list", str(spec.parent)] if command == "list" else None
    argv = argv or ["device", "emulator", "start", str(spec), "--boot-timeout", "1"]
    check(argv, spec, "good", went_on=("no Android emulator found",))
    fuzz_file(spec, yaml.safe_load(good), argv, went_on=("no Android emulator found",), limit=30, dump=yaml.safe_dump)


def test_the_console_token_file_damaged_is_one_line_and_never_sent(tmp_path: Path) -> None:
    """``device emulator stop --token-path``: a token file that cannot be read or holds no token
    (several lines, spaces, 3 MB) is one line naming it (exit 2), and nothing of it reaches the
    console (the token is sent as the line ``auth TOKEN``); a wrong token is the console's to
    reject (exit 1, the file named)."""
    from phoneenv.farm.console import ConsoleServer, MemorySnapshotHooks

    token = tmp_path / "token"
    with ConsoleServer(MemorySnapshotHooks(), token="abcdEFGH12345678") as server:
        argv = ["device", "emulator", "stop", "emulator-5554", "--console-port", str(server.port)]
        argv += ["--token-path", str(token)]
        went_on = ("rejected the token", "is missing or empty")
        for kind in KINDS:
            damage(token, kind, b"wrongtoken\n")
            check(argv, token, kind, went_on=went_on)
        damage(token, "empty", b"")
        token.write_text("abcdEFGH12345678\nkill\n", encoding="utf-8")  # the right token, then a command
        res = check(argv, token, "two lines")
        assert res.exit_code == 2 and "holdsnotoken" in "".join(res.output.split())
        assert not server.killed.is_set()
        token.write_text("abcdEFGH12345678\n", encoding="utf-8")
        assert check(argv, token, "right").exit_code == 0 and server.killed.wait(5)


def test_the_mcp_replay_cache_damaged_is_one_line(tmp_path: Path) -> None:
    """``mcp tools --record CACHE``: a cache that cannot be read, is not a replay cache, or whose
    recorded tools are not usable (a tool without a name, a schema that is not one) is one line
    naming it (exit 2), before any server is started; one still of the schema without the app's
    tools goes on to the server (whose command does not exist)."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    cache = tmp_path / "rec.json"
    doc = {
        "format": 1,
        "tools": {
            "checklist": [
                {
                    "name": "add_item",
                    "description": "Add an item.",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                }
            ]
        },
        "calls": {
            "k1": {"app": "checklist", "tool": "add_item", "arguments": {"text": "x"}, "writes": "", "result": {}}
        },
    }
    good = json.dumps(doc).encode()
    argv = ["mcp", "tools", "--app", "checklist", "--command", str(tmp_path / "no-server"), "--record", str(cache)]
    cache.write_bytes(good)
    assert check(argv, cache, "good").exit_code == 0
    fuzz_file(cache, doc, argv, went_on=("could not list its tools",), limit=None)


# -- device serve --faults -------------------------------------------------------------------------


def test_a_damaged_fault_plan_is_logged_once_and_the_last_good_plan_stays(tmp_path: Path, caplog) -> None:
    """The fault file of ``device serve --faults`` is read before each command: damaged (or a
    ``fail_commands`` pattern that is no regular expression) it is one warning naming it, and the
    device keeps the last good plan and answers; never an exception inside a command."""
    pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")
    from phoneenv.farm.faults import FaultyDevice
    from phoneenv.farm.virtual import VirtualDevice

    plan = tmp_path / "faults.json"
    doc = {"full_storage": True, "fail_commands": ["^rm "], "free_mb": 1.0, "total_mb": 2.0}
    good = json.dumps(doc).encode()
    inner = VirtualDevice()
    cases = [(kind, None) for kind in KINDS] + mistyped(doc) + [("bad pattern", {"fail_commands": ["("]})]
    for label, bad in cases:
        damage(plan, "empty", good)  # whatever the last case left there (a folder) goes
        plan.write_bytes(good)
        dev = FaultyDevice(inner, faults_file=plan)
        assert dev.shell("df /data").exit_code == 0 and dev.plan.full_storage, label
        if bad is None:
            damage(plan, label, good)
        else:
            plan.write_text(json.dumps(bad), encoding="utf-8")
        os.utime(plan, ns=(1, 1))  # a change the reader sees even within the clock's resolution
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="phoneenv.farm.faults"):
            dev.shell("getprop sys.boot_completed")
            res = dev.shell("rm /sdcard/x")
        accepted = not caplog.records
        if not accepted:
            (record,) = caplog.records
            assert str(plan) in record.getMessage() and "\n" not in record.getMessage(), label
            assert dev.plan.full_storage and dev.plan.fail_commands == ["^rm "], label  # the last good plan
        assert res.exit_code in (0, 1), label
