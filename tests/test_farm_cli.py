"""`phoneenv farm up|down|status|restart --local` and `phoneenv device ping` (phoneenv.farm.workers):
local virtual-device workers, the real adb server, reference-plan episodes through AdbBackend.

The Docker form of the same commands is tested in tests/test_docker.py (behind the docker marker).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("adbutils", reason="the farm needs adbutils (pip install -e '.[device]')")
pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")

from agents.reference import ReferenceAgent
from phoneenv.backends.adb import AdbBackend
from phoneenv.cli import app
from phoneenv.evaluation import run_episodes
from phoneenv.farm.adbwire import AdbDeviceServer
from phoneenv.farm.virtual import VirtualDevice
from phoneenv.farm.workers import FarmFile, WorkerError, adb_ping, farm_up
from phoneenv.tasks import select
from tests import waiting
from tests.adb import state_of, wait_for_state

runner = CliRunner()
MODEL = VirtualDevice().banner()["ro.product.model"]


def device_tasks(n: int = 2) -> list:
    """The first ``n`` contacts tasks the adb drivers can run (suite order, deterministic)."""
    probe = AdbBackend(serial="none")
    return [t for t in select("app:contacts") if probe.can_run(t)][:n]


def play_reference(serial: str, adb_port: int, tasks: list, out: Path, adb_host: str = "127.0.0.1") -> list:
    """The reference planner's results on ``tasks`` on the device ``serial`` (through the adb
    server at ``adb_host:adb_port``), one per task."""
    backend = AdbBackend(serial=serial, adb_host=adb_host, adb_port=adb_port, timeout_s=10)
    return run_episodes(ReferenceAgent(), tasks, out, env_kwargs={"backend": backend})


def sandbox_reference(tasks: list, out: Path) -> list:
    """The reference planner's results on ``tasks`` on the sandbox."""
    return run_episodes(ReferenceAgent(), tasks, out, env_kwargs={"backend": "sandbox"})


def assert_episodes_match_the_sandbox(device: list, sandbox: list) -> None:
    """Each device episode scored as the sandbox's, with no infrastructure error, and solved."""
    assert [d.task_id for d in device] == [s.task_id for s in sandbox]
    for d, s in zip(device, sandbox, strict=True):
        assert not d.infrastructure_error, d
        assert (d.success, d.progress, d.steps) == (s.success, s.progress, s.steps), (d, s)
        assert d.success, d  # the reference plan solves every task


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _refused(serial: str) -> bool:
    host, _, port = serial.rpartition(":")
    try:
        adb_ping(host, int(port), timeout_s=2)
    except (OSError, TimeoutError):
        return True
    return False


@contextlib.contextmanager
def farm_up_local(adb_server, path: Path, workers: int = 2):
    """`phoneenv farm up --local --workers N` on the adb server ``adb_server``; yields (farm file
    path, its JSON as written). Brought down afterwards even when the test failed, and every
    worker it ever listed (restarted ones too) is gone."""
    result = runner.invoke(
        app,
        ["farm", "up", "--local", "--workers", str(workers), "--adb-port", str(adb_server.port), "--out", str(path)],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(path.read_text())
    pids = {d["worker"]["pid"] for d in data["devices"]}
    try:
        yield path, data
    finally:
        if path.exists():
            pids |= {d["worker"]["pid"] for d in json.loads(path.read_text())["devices"]}
            runner.invoke(app, ["farm", "down", str(path)])
        for pid in pids:  # never leave a worker behind
            with contextlib.suppress(OSError):
                if _pid_running(pid) and "serve" in Path(f"/proc/{pid}/cmdline").read_text():
                    os.kill(pid, signal.SIGKILL)


@pytest.fixture
def local_farm(adb_server, tmp_path):
    """Two local workers from `phoneenv farm up --local`; yields (farm file path, its JSON)."""
    with farm_up_local(adb_server, tmp_path / "farm.json", 2) as farm:
        yield farm


@pytest.mark.slow
def test_farm_up_local_writes_a_farm_file_of_connected_devices_that_play_episodes(local_farm, adb_server, tmp_path):
    path, data = local_farm
    farm = FarmFile.load(path)  # the interface's model reads it
    assert len(farm.devices) == 2 and data["adb"] == {"host": "127.0.0.1", "port": adb_server.port}
    # A worker is its process: the pool skips `adb reboot` and restarts it after 20 s of reconnecting.
    assert farm.health.deadlines == {"reconnect": 10, "reattach": 10, "reboot": 0, "restart": 120}
    serials = [d["serial"] for d in data["devices"]]
    assert len(set(serials)) == 2
    for d in data["devices"]:
        assert d["kind"] == "virtual"
        assert d["restart"][-3:] == ["restart", str(path), d["serial"]]
        # the adb server itself lists it as a device, and a shell command reaches it
        assert state_of(adb_server, d["serial"]) == "device"
        assert adb_server.device(d["serial"]).shell("getprop ro.product.model").strip() == MODEL
    tasks = device_tasks(2)
    assert len(tasks) == 2
    box = sandbox_reference(tasks, tmp_path / "sandbox")
    for i, serial in enumerate(serials):
        assert_episodes_match_the_sandbox(play_reference(serial, adb_server.port, tasks, tmp_path / f"d{i}"), box)

    status = runner.invoke(app, ["farm", "status", str(path), "--json"])
    assert status.exit_code == 0, status.output
    rows = json.loads(status.output)
    assert [(r["serial"], r["adb"], r["worker"], r["ping"], r["ready"]) for r in rows] == [
        (s, "device", "running", "device", True) for s in serials
    ]

    down = runner.invoke(app, ["farm", "down", str(path)])
    assert down.exit_code == 0, down.output
    assert not path.exists()
    for d in data["devices"]:
        assert not _pid_running(d["worker"]["pid"]) or not Path(f"/proc/{d['worker']['pid']}").exists()
        assert _refused(d["serial"])
        assert state_of(adb_server, d["serial"]) is None


def test_the_restart_argv_brings_a_killed_worker_back_on_its_serial(local_farm, adb_server, tmp_path):
    path, data = local_farm
    victim, other = data["devices"]
    os.kill(victim["worker"]["pid"], signal.SIGKILL)
    wait_for_state(adb_server, victim["serial"], {"offline", None}, timeout=20)
    status = runner.invoke(app, ["farm", "status", str(path), "--json"])
    assert status.exit_code == 1  # not every device is ready
    rows = {r["serial"]: r for r in json.loads(status.output)}
    assert rows[victim["serial"]]["worker"] == "gone" and not rows[victim["serial"]]["ready"]
    assert rows[victim["serial"]]["ping"].startswith("ConnectionRefusedError")
    assert rows[other["serial"]]["ready"]

    # what the pool runs as its last recovery step
    proc = waiting.run(victim["restart"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = json.loads(path.read_text())
    new_pid = after["devices"][0]["worker"]["pid"]
    assert after["devices"][0]["serial"] == victim["serial"] and new_pid != victim["worker"]["pid"]
    assert _pid_running(new_pid)
    assert state_of(adb_server, victim["serial"]) == "device"
    tasks = device_tasks(1)
    assert_episodes_match_the_sandbox(
        play_reference(victim["serial"], adb_server.port, tasks, tmp_path / "device"),
        sandbox_reference(tasks, tmp_path / "sandbox"),
    )


def test_farm_up_refuses_an_existing_farm_file_and_cleans_up_a_worker_that_cannot_start(adb_server, tmp_path):
    existing = tmp_path / "farm.json"
    existing.write_text("{}")
    result = runner.invoke(app, ["farm", "up", "--local", "--adb-port", str(adb_server.port), "--out", str(existing)])
    assert result.exit_code == 1 and "farm down" in result.output
    assert existing.read_text() == "{}"  # untouched

    # 192.0.2.1 (TEST-NET-1) is no address of this machine: the worker cannot listen and exits.
    out = tmp_path / "bad.json"
    with pytest.raises(WorkerError, match=r"exited with 1[\s\S]*cannot listen on 192\.0\.2\.1"):
        farm_up(2, out, runtime="local", adb_port=adb_server.port, bind_host="192.0.2.1", timeout_s=60)
    assert not out.exists()
    assert not [d for d in adb_server.list() if d.serial.startswith("192.0.2.1")]


def test_farm_up_docker_without_an_engine_says_so_and_points_at_local(adb_server, tmp_path):
    with pytest.raises(WorkerError, match=r"not installed; use --local"):
        farm_up(1, tmp_path / "f.json", runtime="docker", docker="no-such-docker", adb_port=adb_server.port)
    assert not (tmp_path / "f.json").exists()
    with pytest.raises(ValueError, match="at least 1"):
        farm_up(0, tmp_path / "f.json", runtime="local", adb_port=adb_server.port)


def test_farm_commands_on_a_missing_farm_file_say_so(tmp_path):
    gone = tmp_path / "farm.json"
    for args in (["down", str(gone)], ["status", str(gone)], ["restart", str(gone), "127.0.0.1:5555"]):
        result = runner.invoke(app, ["farm", *args])
        said = "".join(result.output.split())  # rich wraps a long path anywhere
        assert result.exit_code == 2 and f"thereisnofarmfile{gone}(already`phoneenvfarmdown`?" in said, said


# -- phoneenv device ping ------------------------------------------------------------------------


def test_ping_answers_device_unauthorized_refused_and_silent():
    with AdbDeviceServer(VirtualDevice()) as server:
        result = adb_ping("127.0.0.1", server.port)
        assert result.state == "device" and result.banner["ro.product.model"] == MODEL
        cli = runner.invoke(app, ["device", "ping", server.serial])
        assert cli.exit_code == 0 and "device" in cli.output and MODEL in cli.output
        assert server.stats.handshakes >= 2  # it really spoke to this endpoint
    with AdbDeviceServer(VirtualDevice(), require_auth=True) as server:
        assert adb_ping("127.0.0.1", server.port).state == "unauthorized"
        assert runner.invoke(app, ["device", "ping", server.serial]).exit_code == 1
        port = server.port
    # stopped now: nothing listens
    with pytest.raises(ConnectionRefusedError):
        adb_ping("127.0.0.1", port, timeout_s=2)
    assert runner.invoke(app, ["device", "ping", f"127.0.0.1:{port}"]).exit_code == 1

    # a hung device: the kernel accepts the connection, nobody answers
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        accepted: list[socket.socket] = []
        t = threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True)
        t.start()
        with pytest.raises(TimeoutError, match="did not answer"):
            adb_ping("127.0.0.1", listener.getsockname()[1], timeout_s=0.5)
        t.join(5)
        for s in accepted:
            s.close()
    assert runner.invoke(app, ["device", "ping", "no-port"]).exit_code == 2


def test_no_adb_on_path_is_said_by_name(monkeypatch):
    """A farm that cannot start an adb server because there is no adb says so, not only that no
    server answers."""
    import socket

    import pytest

    from phoneenv.farm.workers import WorkerError, ensure_adb_server

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("PHONEENV_ADB", raising=False)
    with pytest.raises(WorkerError, match=r"adb is not on PATH.*apt-get install adb"):
        ensure_adb_server("127.0.0.1", port)


def test_farm_down_stops_the_adb_server_farm_up_started_and_only_that_one(adb_server, tmp_path):
    """Every command that starts a process stops it: `farm up` on a port where no adb server
    runs starts one (Debian's adb), and `farm down` stops it; a server that ran before is left."""
    import shutil

    from phoneenv.farm.workers import _adb_server_version

    if shutil.which("adb") is None:
        pytest.skip("needs Debian's adb on PATH (apt-get install adb)")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "own.json"
    up = runner.invoke(app, ["farm", "up", "--local", "--workers", "1", "--adb-port", str(port), "--out", str(path)])
    try:
        assert up.exit_code == 0, up.output
        assert f"started an adb server on 127.0.0.1:{port}" in up.output
        assert json.loads(path.read_text())["adb"]["started_by_farm"] is True
        assert _adb_server_version("127.0.0.1", port) is not None
        down = runner.invoke(app, ["farm", "down", str(path)])
        assert down.exit_code == 0, down.output
        assert f"stopped the adb server on 127.0.0.1:{port}" in down.output
        assert _adb_server_version("127.0.0.1", port) is None
    finally:
        if path.exists():
            runner.invoke(app, ["farm", "down", str(path)])
        waiting.run(["adb", "-P", str(port), "kill-server"], capture_output=True, timeout=30, check=False)
    shared = tmp_path / "shared.json"
    with farm_up_local(adb_server, shared, 1) as (_, data):
        assert "started_by_farm" not in data["adb"]
    assert _adb_server_version("127.0.0.1", adb_server.port) is not None  # not ours: still up
