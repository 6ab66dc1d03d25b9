"""The device pool: health checks, quarantine and escalating recovery (unit tests over fake adb
calls and a fake clock), and evaluations over a farm of virtual devices behind the real adb
server while faults are injected (killed, offline, unauthorized, hung, full, failing restores,
back after a blip)."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from phoneenv.farm.pool import (
    RECOVERY_STEPS,
    DeviceKind,
    DevicePool,
    FarmFile,
    HealthPolicy,
    PoolDevice,
    PoolExhausted,
    StepUnavailable,
    check_health,
    guess_kind,
    parse_df,
)
from phoneenv.llm import InfrastructureError

DF_OK = "Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/block/dm-5 5127992 2116044 2995564 42% /data\n"
DF_FULL = "Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/block/dm-5 5127992 5127980 12 100% /data\n"


# -- fakes ----------------------------------------------------------------------------------------


class FakeClock:
    """Monotonic seconds that only ``sleep`` (and ``advance``) move; thread-safe."""

    def __init__(self) -> None:
        self.now = 1000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


@dataclass
class FakeDevice:
    state: str | None = "device"
    responsive: bool = True
    boot: str = "1"
    df: str = DF_OK
    date: float = 1_800_000_000.0
    heals_on: str | None = None  # the recovery step after which the device is healthy again
    fails_action: set[str] = field(default_factory=set)


class FakeOps:
    """DeviceOps over FakeDevices; every call is logged as (clock time, serial, what)."""

    def __init__(self, clock: FakeClock, devices: dict[str, FakeDevice]) -> None:
        self.clock = clock
        self.devices = devices
        self.log: list[tuple[float, str, str]] = []

    def _note(self, serial: str, what: str) -> FakeDevice:
        self.log.append((self.clock(), serial, what))
        return self.devices[serial]

    def actions(self, serial: str) -> list[tuple[float, str]]:
        return [(t, w) for t, s, w in self.log if s == serial and w in RECOVERY_STEPS]

    def state(self, serial: str) -> str | None:
        return self._note(serial, "state").state

    def shell(self, serial: str, command: str, timeout_s: float) -> tuple[str, int]:
        dev = self._note(serial, "shell")
        if not dev.responsive:
            self.clock.advance(timeout_s)
            raise TimeoutError(f"no answer within {timeout_s} s")
        if command.startswith("echo "):
            return command[5:] + "\n", 0
        if command == "getprop sys.boot_completed":
            return dev.boot + "\n", 0
        if command == "df /data":
            return dev.df, 0 if dev.df else 127
        if command == "date +%s":
            return f"{dev.date:.0f}\n", 0
        raise AssertionError(command)

    def _act(self, serial: str, step: str) -> None:
        dev = self._note(serial, step)
        if step in dev.fails_action:
            raise RuntimeError(f"{step} refused")
        if dev.heals_on == step:
            dev.state, dev.responsive, dev.boot, dev.df = "device", True, "1", DF_OK

    def reconnect(self, serial: str, timeout_s: float) -> None:
        self._act(serial, "reconnect")

    def reattach(self, serial: str, timeout_s: float) -> None:
        if not serial.startswith("127.0.0.1:"):
            self._note(serial, "reattach-skipped")
            raise StepUnavailable("not a network serial")
        self._act(serial, "reattach")

    def reboot(self, serial: str, timeout_s: float) -> None:
        self._act(serial, "reboot")

    def run(self, argv, timeout_s: float) -> None:
        self._act(argv[-1], "restart")


POLICY = HealthPolicy(
    shell_deadline_s=2.0,
    min_free_mb=100,
    deadlines={"reconnect": 5.0, "reattach": 10.0, "reboot": 60.0, "restart": 120.0},
    poll_s=1.0,
)


def _pool(devices: dict[str, FakeDevice], policy: HealthPolicy = POLICY, restart: bool = True):
    clock = FakeClock()
    ops = FakeOps(clock, devices)
    pool = DevicePool(
        [PoolDevice(s, guess_kind(s), restart=("restart-worker", s) if restart else None) for s in devices],
        ops=ops,
        policy=policy,
        clock=clock,
        sleep=clock.sleep,
        wall=lambda: 1_800_000_000.0,
    )
    return pool, ops, clock


# -- parsing and the farm file --------------------------------------------------------------------


def test_parse_df_reads_the_available_column_in_mib():
    assert parse_df(DF_OK) == pytest.approx(2995564 / 1024)
    assert parse_df(DF_FULL) == pytest.approx(12 / 1024)
    wrapped = (
        "Filesystem           1K-blocks      Used Available Use% Mounted on\n"
        "/dev/block/bootdevice/by-name/userdata\n"
        "                      52403200  10485760  41917440  20% /data\n"
    )
    assert parse_df(wrapped) == pytest.approx(41917440 / 1024)
    busybox_512 = "Filesystem 512-blocks Used Available Capacity Mounted on\n/dev/sda1 2048 1024 1024 50% /data\n"
    assert parse_df(busybox_512) == pytest.approx(0.5)
    assert parse_df("/system/bin/sh: df: inaccessible or not found\n") is None
    assert parse_df("") is None


def test_guess_kind():
    assert guess_kind("emulator-5554") is DeviceKind.EMULATOR
    assert guess_kind("127.0.0.1:40001") is DeviceKind.VIRTUAL
    assert guess_kind("R58M123ABC") is DeviceKind.PHONE


def test_farm_file_round_trip_keeps_unknown_keys(tmp_path):
    text = {
        "version": 1,
        "adb": {"host": "127.0.0.1", "port": 5038},
        "devices": [
            {"serial": "127.0.0.1:40001", "kind": "virtual", "restart": ["docker", "restart", "w1"], "zone": "a"},
            {"serial": "emulator-5554", "kind": "emulator", "avd": "pixel6-api34", "snapshot": "phoneenv-base"},
            {"serial": "R58M123ABC", "kind": "phone"},
        ],
        "coordinator": {"pid": 1},
    }
    path = tmp_path / "farm.json"
    path.write_text(json.dumps(text))
    farm = FarmFile.load(path)
    assert [d.kind for d in farm.devices] == [DeviceKind.VIRTUAL, DeviceKind.EMULATOR, DeviceKind.PHONE]
    assert farm.devices[0].model_extra == {"zone": "a"}
    farm.dump(tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == text
    pool = DevicePool.from_file(path)
    assert (pool.adb_host, pool.adb_port) == ("127.0.0.1", 5038)
    assert pool.report()["devices"]["emulator-5554"]["kind"] == "emulator"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("{", "not a farm file"),
        ('{"version": 2, "devices": []}', "version"),
        ('{"devices": [{"kind": "virtual"}]}', "devices.0.serial"),
        ('{"devices": [{"serial": "a", "kind": "toaster"}]}', "devices.0.kind"),
        ('{"devices": [{"serial": "a"}, {"serial": "a"}]}', "more than once: a"),
    ],
)
def test_bad_farm_files_are_named(tmp_path, doc, message):
    path = tmp_path / "farm.json"
    path.write_text(doc)
    with pytest.raises(ValueError, match=message):
        FarmFile.load(path)


# -- health checks --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({}, None),
        ({"state": "offline"}, "adb state is offline"),
        ({"state": "unauthorized"}, "adb state is unauthorized"),
        ({"state": None}, "adb state is not listed"),
        ({"responsive": False}, "did not answer within 2 s"),
        ({"boot": "0"}, "not booted"),
        ({"df": DF_FULL}, "storage full: 0 MiB free on /data"),
        ({"date": 1_800_000_000.0 + 3600}, "clock is +3600 s off"),
        ({"df": ""}, None),  # no df on the device: storage unknown, not a failure
    ],
)
def test_health_check_names_the_first_failure(change, reason):
    clock = FakeClock()
    ops = FakeOps(clock, {"s": FakeDevice(**change)})
    policy = HealthPolicy(shell_deadline_s=2.0, min_free_mb=100, clock_tolerance_s=60)
    result = check_health(ops, "s", policy, wall=lambda: 1_800_000_000.0)
    assert result.ok is (reason is None)
    if reason is None:
        assert result.reason is None
    else:
        assert reason in result.reason
    if not change:
        assert result.free_mb == pytest.approx(2995564 / 1024) and result.clock_skew_s == 0


def test_the_clock_check_is_off_without_a_tolerance():
    ops = FakeOps(FakeClock(), {"s": FakeDevice(date=0)})
    assert check_health(ops, "s", HealthPolicy(), wall=lambda: 1_800_000_000.0).ok


# -- leasing, quarantine, escalation --------------------------------------------------------------


def test_leases_go_least_recently_used_first_and_a_device_is_never_lent_twice():
    pool, ops, _ = _pool({"127.0.0.1:1": FakeDevice(), "127.0.0.1:2": FakeDevice()})
    a = pool.lease()
    b = pool.lease()
    assert {a.serial, b.serial} == {"127.0.0.1:1", "127.0.0.1:2"} and a.serial == "127.0.0.1:1"
    with pytest.raises(PoolExhausted, match="no healthy device became free within 0 s"):
        pool.lease(timeout_s=0)
    pool.release(a)
    pool.release(a)  # a second release is ignored
    pool.release(b)
    assert pool.lease().serial == "127.0.0.1:1"  # released first
    report = pool.report()
    assert report["leases"] == 3 and report["checks"] == {"passed": 3, "failed": 0}


def test_a_device_failing_its_check_is_skipped_and_quarantined():
    devices = {"127.0.0.1:1": FakeDevice(state="offline"), "127.0.0.1:2": FakeDevice()}
    pool, ops, _ = _pool(devices, restart=False)
    assert pool.lease().serial == "127.0.0.1:2"
    assert pool.wait_settled(10)
    assert pool.status("127.0.0.1:1") == "retired"
    assert pool.report()["retired"]["127.0.0.1:1"].startswith("adb state is offline")


def test_a_device_released_as_failed_is_healed_by_reconnect():
    serial = "127.0.0.1:1"
    pool, ops, _ = _pool({serial: FakeDevice(heals_on="reconnect")})
    lease = pool.lease()
    ops.devices[serial].state = "offline"
    pool.release(lease, failed="device_error: offline")
    assert pool.wait_settled(10)
    assert pool.status(serial) == "idle"
    assert [w for _, w in ops.actions(serial)] == ["reconnect"]
    report = pool.report()
    assert report["recoveries"]["reconnect"] == {"tried": 1, "healed": 1, "failed": 0, "skipped": 0}
    assert report["retired"] == {}
    assert [e["event"] for e in report["events"]] == ["quarantined", "healed"]


@pytest.mark.parametrize("heals_on", [*RECOVERY_STEPS, None])
def test_recovery_escalates_in_order_each_step_within_its_deadline(heals_on):
    serial = "127.0.0.1:1"
    pool, ops, clock = _pool({serial: FakeDevice(heals_on=heals_on)})
    lease = pool.lease()
    ops.devices[serial].responsive = False  # hangs mid-episode
    t_fail = clock()
    pool.release(lease, failed="device_error: the connection was reset")
    assert pool.wait_settled(10)
    actions = ops.actions(serial)
    stop = RECOVERY_STEPS.index(heals_on) + 1 if heals_on else len(RECOVERY_STEPS)
    restarted = ["reattach"] if stop == len(RECOVERY_STEPS) else []  # a restarted worker is `adb connect`-ed again
    assert [w for _, w in actions] == [*RECOVERY_STEPS[:stop], *restarted]
    actions = actions[:stop]
    # each failed step spends its deadline (checks until then, each timing out after 2 s), no more
    starts = [t for t, _ in actions]
    for (t0, step), t1 in zip(actions, starts[1:], strict=False):
        assert POLICY.deadline(step) <= t1 - t0 <= POLICY.deadline(step) + POLICY.shell_deadline_s + POLICY.poll_s
    assert starts[0] == t_fail
    report = pool.report()
    if heals_on is None:
        assert pool.status(serial) == "retired"
        reason = report["retired"][serial]
        assert "did not answer within 2 s" in reason and "first: device_error: the connection was reset" in reason
        assert all(step in reason for step in RECOVERY_STEPS)
        with pytest.raises(PoolExhausted, match="every device of the pool is retired"):
            pool.lease()
    else:
        assert pool.status(serial) == "idle" and report["recoveries"][heals_on]["healed"] == 1
        assert pool.lease().serial == serial
    assert report["failed_leases"] == 1


def test_steps_that_do_not_apply_are_skipped_and_a_phone_without_restart_is_retired():
    serial = "R58M123ABC"
    pool, ops, _ = _pool({serial: FakeDevice(state="unauthorized")}, restart=False)
    with pytest.raises(PoolExhausted, match="every device of the pool is retired"):
        pool.lease(timeout_s=10_000)  # fake seconds: recovery moves the fake clock
    reason = pool.report()["retired"][serial]
    assert reason.startswith("adb state is unauthorized")
    assert "reattach: skipped (not a network serial)" in reason
    assert "restart: skipped (no restart command" in reason
    assert [w for _, w in ops.actions(serial)] == ["reconnect", "reboot"]


def test_a_refused_connection_is_retried_until_the_step_deadline():
    serial = "127.0.0.1:1"
    pool, ops, clock = _pool({serial: FakeDevice(heals_on="reboot", fails_action={"reconnect"})})
    lease = pool.lease()
    ops.devices[serial].state = "offline"
    pool.release(lease, failed="device_error: offline")
    assert pool.wait_settled(10)
    actions = ops.actions(serial)
    # a refused reconnect is tried again every poll_s until its deadline, then reattach
    reconnects = [t for t, w in actions if w == "reconnect"]
    assert [w for _, w in actions] == ["reconnect"] * len(reconnects) + ["reattach", "reboot"]
    assert len(reconnects) == 6 and reconnects[-1] - reconnects[0] == 5.0
    assert next(t for t, w in actions if w == "reattach") - reconnects[0] == 5.0
    assert pool.status(serial) == "idle"


def test_an_emulator_is_restarted_from_its_snapshot_as_the_last_step(monkeypatch):
    from phoneenv.farm import emulator

    calls = []
    clock = FakeClock()
    ops = FakeOps(clock, {"emulator-5554": FakeDevice()})

    def restart_from_snapshot(target, snapshot=None, **kwargs):
        calls.append((target, snapshot, kwargs))
        ops.devices[target].responsive = True

    monkeypatch.setattr(emulator, "restart_from_snapshot", restart_from_snapshot, raising=False)
    device = PoolDevice("emulator-5554", DeviceKind.EMULATOR, avd="pixel6-api34", snapshot="phoneenv-base")
    pool = DevicePool([device], ops=ops, policy=POLICY, clock=clock, sleep=clock.sleep, adb_port=5039)
    lease = pool.lease()
    ops.devices["emulator-5554"].responsive = False
    pool.release(lease, failed="timeout")
    assert pool.wait_settled(10) and pool.status("emulator-5554") == "idle"
    assert calls == [
        (
            "emulator-5554",
            "phoneenv-base",
            {"avd": "pixel6-api34", "adb_server": ("127.0.0.1", 5039), "boot_timeout": 120.0},
        )
    ]
    assert pool.report()["recoveries"]["restart"]["healed"] == 1


def test_without_quarantine_a_failed_device_is_retired_at_once():
    policy = HealthPolicy(quarantine=False)
    pool, ops, _ = _pool({"127.0.0.1:1": FakeDevice(), "127.0.0.1:2": FakeDevice()}, policy=policy)
    with pool.lease() as lease:
        pass
    with pytest.raises(InfrastructureError), pool.lease() as lease:
        raise InfrastructureError("gone", kind="device")
    assert pool.report()["retired"] == {lease.serial: "InfrastructureError: gone"}
    assert ops.actions(lease.serial) == []


def test_concurrent_leases_never_share_a_device():
    serials = [f"127.0.0.1:{i}" for i in range(1, 5)]
    pool, _, _ = _pool({s: FakeDevice() for s in serials})
    held: set[str] = set()
    clash: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(25):
            lease = pool.lease(timeout_s=30)
            with lock:
                if lease.serial in held:
                    clash.append(lease.serial)
                held.add(lease.serial)
            time.sleep(0.0005)
            with lock:
                held.discard(lease.serial)
            pool.release(lease)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert clash == [] and pool.report()["leases"] == 150


# -- fault injection, traces, play_episode --------------------------------------------------------


def test_faulty_device_refuses_writes_when_full_and_restores_when_told(tmp_path):
    pytest.importorskip("bashlex", reason="the virtual device needs bashlex")
    from phoneenv.farm.faults import FaultyDevice, write_faults
    from phoneenv.farm.virtual import VirtualDevice

    inner = VirtualDevice()
    dev = FaultyDevice(inner)
    assert parse_df(dev.shell("df /data", b"").stdout.decode()) == 4096
    insert = "content insert --uri content://sms --bind address:s:+1 --bind body:s:hi --bind type:i:1 --bind date:l:0"
    dev.inject(full_storage=True)
    assert parse_df(dev.shell("df /data", b"").stdout.decode()) < 1
    res = dev.shell(insert, b"")
    assert res.exit_code == 1 and b"SQLITE_FULL" in res.stderr
    assert dev.shell("settings put global auto_time 0", b"").stderr.endswith(b"No space left on device\n")
    assert inner.phone.state.table("messages.messages") == {}  # nothing written
    assert dev.shell("getprop sys.boot_completed", b"").stdout == b"1\n"  # reads still work
    dev.clear()
    assert dev.shell(insert, b"").exit_code == 0 and len(inner.phone.state.table("messages.messages")) == 1
    dev.inject(fail_restore=True)
    assert b"Input/output error" in dev.shell("tar -xzf /data/local/tmp/a.tgz -C /data/data", b"").stderr
    assert dev.counts["full_storage"] == 3 and dev.counts["fail_restore"] == 1
    # hang: commands block until the fault is cleared, from another thread
    dev.clear()
    dev.inject(hang=True)
    threading.Timer(0.3, lambda: dev.inject(hang=False)).start()
    t0 = time.monotonic()
    assert dev.shell("echo hi", b"").stdout == b"hi\n" and time.monotonic() - t0 >= 0.25
    # the subprocess form: the plan is re-read from its file whenever it changes
    path = tmp_path / "faults.json"
    filed = FaultyDevice(VirtualDevice(), faults_file=path)
    assert filed.shell("getprop sys.boot_completed", b"").stdout == b"1\n"
    write_faults(path, not_booted=True)
    assert filed.shell("getprop sys.boot_completed", b"").stdout == b"\n"
    path.write_text("{not json")  # a broken file keeps the last good plan
    assert filed.plan.not_booted is True
    write_faults(path)
    assert filed.plan.not_booted is False


def test_old_traces_load_with_no_attempts():
    from phoneenv.contract import Trace

    old = {"task_id": "t", "backend": "sandbox", "category": "tool", "domain": "contacts", "goal": "g"}
    assert Trace.model_validate(old).attempts == []


def test_play_episode_writes_nothing_and_returns_the_trace(contacts_task, tmp_path, monkeypatch):
    from agents.reference import ReferenceAgent
    from phoneenv.env import PhonePlanEnv
    from phoneenv.evaluation import play_episode

    monkeypatch.chdir(tmp_path)
    env = PhonePlanEnv(tasks=[contacts_task])
    result, text = play_episode(
        ReferenceAgent(lookup={contacts_task.id: contacts_task}.__getitem__), env, contacts_task, 3
    )
    trace = json.loads(text)
    assert result.success and result.trace_path is None and result.seed == 3
    assert trace["task_id"] == contacts_task.id and trace["verdict"]["success"] and trace["attempts"] == []
    assert list(tmp_path.iterdir()) == []


def test_a_pool_with_no_device_left_stops_the_run_keeping_the_episode(contacts_task, answer_task, tmp_path):
    from phoneenv.evaluation import run_episodes

    pool, _, _ = _pool({"127.0.0.1:1": FakeDevice(state="offline")}, policy=HealthPolicy(quarantine=False))
    seen = []
    with pytest.raises(PoolExhausted, match="every device of the pool is retired"):
        run_episodes(_NeverAgent(), [contacts_task, answer_task], tmp_path, pool=pool, on_episode=seen.append)
    [res] = seen
    assert res.infrastructure_error and res.infrastructure_kind == "pool" and res.attempts == 0
    trace = json.loads(Path(res.trace_path).read_text())
    assert trace["task_id"] == contacts_task.id and trace["attempts"] == [] and trace["verdict"] is None


class _NeverAgent:
    name = "never"

    def reset(self, observation, info) -> None:
        raise AssertionError("no episode should start")

    def act(self, observation, info):
        raise AssertionError("no episode should start")


# -- a farm of virtual devices behind the real adb server -------------------------------------------

pytest.importorskip("adbutils", reason="the farm tests need adbutils (pip install -e '.[device]')")
pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")

# Short, but with room for a loaded CI box (2 cores under `pytest -n auto` beside Docker builds and
# Ray): with a 1.5 s shell deadline and 3 s steps, a healthy device once failed its check there and
# the blip device was retired before it was back.
FAST = HealthPolicy(
    shell_deadline_s=4.0,
    min_free_mb=64,
    deadlines={"reconnect": 8.0, "reattach": 8.0, "reboot": 2.0, "restart": 0.0},
    poll_s=0.2,
)


TEMPLATES = [
    "clock.alarm_off",  # first: its DeskClock data is restored from an app-data snapshot
    "contacts.add_contact",
    "calendar.create_event",
    "clock.set_alarm",
    "contacts.favorite",
    "messages.delete_message",
    "calendar.delete_event",
    "settings.toggle",
    "messages.text_contact",
    "clock.delete_alarm",
    "calendar.move_event",
    "messages.forward",
]


def _tasks(n: int, first: str | None = None):
    """The first task of ``n`` Tool templates the adb backend runs (built from their templates
    alone: the whole suite takes many seconds to build)."""
    from phoneenv.tasks.templates import all_templates

    names = TEMPLATES if first is None else [first, *(t for t in TEMPLATES if t != first)]
    templates = all_templates()
    return [templates[name].tasks()[0] for name in names[:n]]


class _Recording(DevicePool):
    """A pool that remembers the device it lent last (the episode's device, for the fault hooks)."""

    current: str | None = None

    def lease(self, timeout_s: float = 300.0):
        lease = super().lease(timeout_s)
        self.current = lease.serial
        return lease


class _FaultingAgent:
    """The reference agent; on the first episode a device plays, runs that device's fault hook
    just before the first action."""

    name = "reference"

    def __init__(self, pool: _Recording, hooks: dict, tasks: list) -> None:
        from agents.reference import ReferenceAgent

        self.inner = ReferenceAgent(lookup={t.id: t for t in tasks}.__getitem__)
        self.pool = pool
        self.hooks = dict(hooks)
        self.fired: list[str] = []
        self.first = True

    def reset(self, observation, info) -> None:
        self.inner.reset(observation, info)
        self.first = True

    def act(self, observation, info):
        if self.first:
            self.first = False
            hook = self.hooks.pop(self.pool.current, None)
            if hook is not None:
                self.fired.append(self.pool.current)
                hook()
        return self.inner.act(observation, info)


def test_an_eval_retries_a_try_lost_to_its_device_on_another_device(adb_server, tmp_path):
    """Two devices; the first fills up mid-episode: the episode is re-run on the second, its trace
    records both tries, and the full device is retired (no recovery step frees storage)."""
    from phoneenv.evaluation import run_episodes, score
    from phoneenv.farm.adbwire import AdbDeviceServer
    from phoneenv.farm.faults import FaultyDevice
    from phoneenv.farm.virtual import VirtualDevice
    from tests.adb import connect_device

    tasks = _tasks(3, first="contacts.add_contact")
    devs = [FaultyDevice(VirtualDevice()) for _ in range(2)]
    servers = [AdbDeviceServer(d).start() for d in devs]
    serials = [s.serial for s in servers]
    try:
        for serial in serials:
            connect_device(adb_server, serial)
        pool = _Recording([PoolDevice(s, DeviceKind.VIRTUAL) for s in serials], adb_port=adb_server.port, policy=FAST)
        agent = _FaultingAgent(pool, {serials[0]: lambda: devs[0].inject(full_storage=True)}, tasks)
        results = run_episodes(agent, tasks, tmp_path, pool=pool, device_options={"timeout_s": 5})
        assert pool.wait_settled(60)
        report = pool.report()
    finally:
        pool.close()
        for server, serial in zip(servers, serials, strict=True):
            server.stop()
            adb_server.disconnect(serial)
    assert [r.task_id for r in results] == [t.id for t in tasks]
    assert all(r.success and not r.infrastructure_error for r in results), results
    first = results[0]
    assert (first.attempts, first.device) == (2, serials[1]) and first.time_lost_s > 0
    assert [r.attempts for r in results[1:]] == [1, 1]
    trace = json.loads(Path(first.trace_path).read_text())
    lost, kept = trace["attempts"]
    assert lost["device"] == serials[0] and lost["kind"] == "device_error" and lost["steps"]
    assert "SQLiteFullException" in lost["failure"] or "No space left" in lost["failure"]
    assert kept["device"] == serials[1] and kept["failure"] is None and kept["steps"] == []
    assert trace["verdict"]["success"] is True and trace["steps"]
    assert devs[0].counts["full_storage"] >= 1
    assert list(report["retired"]) == [serials[0]]
    assert report["retired"][serials[0]].startswith("storage full")
    board = score("reference", results, farm=report)
    assert board.farm["attempts"] == 4 and board.farm["retries"] == 1
    assert board.farm["retired"] == report["retired"] and board.categories[-1].success == 1.0


def _serve_process(tmp_path, name: str):
    """``phoneenv device serve --port 0 --faults FILE`` in its own process; returns (process,
    serial, fault file). The caller kills it."""
    import os
    import subprocess
    import sys

    from phoneenv.farm.faults import write_faults
    from tests.adb import _dying_with_parent, clean_env

    faults = tmp_path / f"{name}.faults.json"
    write_faults(faults)
    root = str(Path(__file__).resolve().parents[1])
    env = {**clean_env(), "PYTHONPATH": os.pathsep.join([root, clean_env().get("PYTHONPATH", "")]), "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "phoneenv.cli", "device", "serve", "--port", "0", "--faults", str(faults)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        preexec_fn=_dying_with_parent,
    )  # fmt: skip
    return proc, faults


def _serial_of(proc, timeout: float = 60.0) -> str:
    import re

    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"`phoneenv device serve` exited: {''.join(seen)}")
        seen.append(line)
        m = re.search(r"serving .* on (127\.0\.0\.1:\d+)", line)
        if m:
            return m.group(1)
    raise TimeoutError("`phoneenv device serve` printed no serial")


@pytest.mark.slow
def test_an_eval_survives_a_farm_failing_in_every_way(tmp_path):
    """Nine devices; on its first episode each of six fails in its own way (killed, offline,
    unauthorized, hung by SIGSTOP, full storage, a blip it comes back from), and one restores
    its app-data snapshot with a failing tar. Every task is scored exactly once and succeeds, the
    traces record the lost tries, and the report retires exactly the five that cannot heal.

    It runs on an adb server of its own: a CI run once saw the shared one stop answering in the
    middle of this fault storm, which retired every device (as it should) and failed the test;
    its own server's log now says what happened, and it cannot take other tests' devices along."""
    from tests.adb import AdbServer, adb_binary

    if adb_binary() is None:
        pytest.skip("adb is not installed (Debian: apt-get install adb)")
    own = AdbServer(tmp_path / "adb_home").start()
    try:
        _fault_storm(own, tmp_path)
    finally:
        own.stop()


def _skip_if_the_server_died(own) -> None:
    """Skip, with the adb server's exit status and log, when this test's own server exited: the
    pool then retires devices for the server's sake, as it should, and the storm proves nothing."""
    if own.process is not None and own.process.poll() is not None:
        pytest.skip(
            f"the adb server itself exited ({own.process.returncode}) during the fault storm, so the pool "
            f"retired devices for it, as it should; the server's log:\n{own.log_tail()}"
        )


def _fault_storm(own, tmp_path) -> None:
    import signal

    adb_server = own.client  # an adbutils client of this test's own adb server

    from phoneenv.backends.adb import AdbBackend
    from phoneenv.evaluation import run_episodes, score
    from phoneenv.farm.adbwire import AdbDeviceServer
    from phoneenv.farm.faults import FaultyDevice, write_faults
    from phoneenv.farm.virtual import VirtualDevice
    from tests.adb import connect_device

    procs = {name: _serve_process(tmp_path, name) for name in ("killed", "hung", "full")}
    tasks = _tasks(12)
    local = {name: FaultyDevice(VirtualDevice()) for name in ("snap", "offline", "unauthorized", "blip", "ok1", "ok2")}
    servers = {name: AdbDeviceServer(dev).start() for name, dev in local.items()}
    serial = {name: s.serial for name, s in servers.items()}
    for name, (proc, _) in procs.items():
        serial[name] = _serial_of(proc)
    order = ["snap", "killed", "offline", "unauthorized", "hung", "full", "blip", "ok1", "ok2"]
    restarted: list[AdbDeviceServer] = []
    pool = None
    try:
        for name in order:
            connect_device(adb_server, serial[name])
        # the snapshot device holds a saved app-data snapshot of the first task's fixtures
        primer = AdbBackend(serial=serial["snap"], adb_port=adb_server.port, timeout_s=10)
        primer.reset(tasks[0])
        assert primer.last_reset["how"] == "seeded"
        local["snap"].inject(fail_restore=True)

        def unauthorized() -> None:
            port = servers["unauthorized"].port
            servers["unauthorized"].stop()
            restarted.append(AdbDeviceServer(local["unauthorized"], port=port, require_auth=True).start())
            adb_server.connect(serial["unauthorized"], timeout=5)

        def blip() -> None:
            port = servers["blip"].port
            servers["blip"].stop()

            def back() -> None:
                restarted.append(AdbDeviceServer(local["blip"], port=port).start())

            threading.Timer(0.5, back).start()

        hooks = {
            serial["killed"]: lambda: procs["killed"][0].kill(),
            serial["offline"]: servers["offline"].stop,
            serial["unauthorized"]: unauthorized,
            serial["hung"]: lambda: procs["hung"][0].send_signal(signal.SIGSTOP),
            serial["full"]: lambda: write_faults(procs["full"][1], full_storage=True),
            serial["blip"]: blip,
        }
        pool = _Recording(
            [PoolDevice(serial[n], DeviceKind.VIRTUAL) for n in order], adb_port=adb_server.port, policy=FAST
        )
        agent = _FaultingAgent(pool, hooks, tasks)
        out = tmp_path / "traces"
        try:
            results = run_episodes(
                agent, tasks, out, pool=pool, max_attempts=len(order), device_options={"timeout_s": 3}
            )
        except PoolExhausted:
            _skip_if_the_server_died(own)
            raise
        assert pool.wait_settled(120)
        # a server gone mid-storm makes every later step fail with "connection refused", so the
        # retirement reasons below would name the server, not the device: that is no farm bug
        _skip_if_the_server_died(own)
        blip_back = pool.check(serial["blip"])
        report = pool.report()
    finally:
        if pool is not None:
            pool.close()
        for proc, _ in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
            proc.wait(10)
        for s in [*servers.values(), *restarted]:
            s.stop()
        for name in order:
            adb_server.disconnect(serial[name])
    faulted = {serial[n] for n in ("killed", "offline", "unauthorized", "hung", "full", "blip")}
    assert set(agent.fired) == faulted  # every fault fired, on its device's first episode
    # every task scored exactly once, in order, each a success; no episode lost
    assert [r.task_id for r in results] == [t.id for t in tasks]
    assert [(r.success, r.infrastructure_error) for r in results] == [(True, False)] * len(tasks), results
    traces = {t.id: json.loads(Path(r.trace_path).read_text()) for t, r in zip(tasks, results, strict=True)}
    lost = [a for tr in traces.values() for a in tr["attempts"] if a["failure"] is not None]
    assert sorted(a["device"] for a in lost) == sorted(faulted)  # each faulty device lost one try
    assert all(tr["attempts"][-1]["failure"] is None for tr in traces.values())
    assert all(tr["verdict"]["success"] for tr in traces.values())
    assert sum(r.attempts for r in results) == len(tasks) + len(lost)
    assert all(a["kind"] in ("device_error", "timeout") for a in lost), [a["kind"] for a in lost]
    hung = next(a for a in lost if a["device"] == serial["hung"])
    assert hung["kind"] == "timeout"
    # the first task ran on the snapshot device, whose failed restore fell back to seeding
    assert results[0].device == serial["snap"] and results[0].attempts == 1
    assert local["snap"].counts["fail_restore"] >= 1
    # retired: exactly the five that cannot heal, each with its reason; the blip came back
    retired = report["retired"]
    broken = {serial[n] for n in ("killed", "offline", "unauthorized", "hung", "full")}
    named = {v: k for k, v in serial.items()}
    # on a mismatch, say which device was retired (or kept) and why, whole
    assert set(retired) == broken, {named.get(s, s): retired.get(s, "kept") for s in set(retired) ^ broken}
    assert "unauthorized" in retired[serial["unauthorized"]]
    # the reason, on a miss, with the server's log (a CI run once saw it refuse connections here)
    assert retired[serial["full"]].startswith("storage full"), (retired[serial["full"]], own.log_tail())
    assert "did not answer" in retired[serial["hung"]]
    for name in ("killed", "offline"):
        assert re.search(r"offline|not listed|unreachable|disconnected", retired[serial[name]]), retired[serial[name]]
    blipped = report["devices"][serial["blip"]]
    assert blipped["status"] == "idle" and blipped["failures"] == 1 and blip_back.ok, blip_back
    healed = [e["detail"] for e in report["events"] if e["event"] == "healed" and e["serial"] == serial["blip"]]
    assert healed in (["reconnect"], ["reattach"]), report["events"]
    board = score("reference", results, farm=report)
    assert board.farm["retries"] == len(lost) == 6 and board.farm["retired"] == retired
    assert board.farm["time_lost_s"] > 0 and board.categories[-1].success == 1.0


@pytest.mark.slow
def test_phoneenv_eval_on_devices_and_on_a_farm_file(adb_server, tmp_path, monkeypatch):
    """`phoneenv eval --device A --device B` and `--farm FILE`: one device is gone before the run,
    so the pool retires it and every episode runs on the other; the scoreboard's farm block and
    the printed summary name the retired device."""
    from typer.testing import CliRunner

    from phoneenv import cli
    from phoneenv.farm.adbwire import AdbDeviceServer
    from phoneenv.farm.virtual import VirtualDevice
    from tests.adb import connect_device

    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(adb_server.port))
    monkeypatch.delenv("ANDROID_SERIAL", raising=False)
    good, gone = AdbDeviceServer(VirtualDevice()).start(), AdbDeviceServer(VirtualDevice()).start()
    serials = [good.serial, gone.serial]
    tasks = "contacts.add_contact/0,clock.set_alarm/0"
    try:
        for serial in serials:
            connect_device(adb_server, serial)
        gone.stop()
        out = tmp_path / "run"
        res = CliRunner().invoke(
            cli.app,
            ["eval", "--tasks", tasks, "--out", str(out), "--device", serials[1], "--device", serials[0],
             "--max-attempts", "2"],
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        board = json.loads((out / "scoreboard.json").read_text())
        assert board["categories"][-1]["episodes"] == 2 and board["categories"][-1]["success"] == 1.0
        assert board["farm"]["devices"] == {serials[0]: 2}
        # still on its first recovery step (20 s by default) when the run ended: quarantined, not retired
        assert board["farm"]["retired"] == {} and list(board["farm"]["quarantined"]) == [serials[1]]
        assert f"quarantined {serials[1]}" in " ".join(res.output.split())
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        assert [(r["device"], r["attempts"]) for r in rows] == [(serials[0], 1)] * 2
        farm = FarmFile(devices=[{"serial": serials[0], "kind": "virtual"}], adb={"port": adb_server.port})
        farm.dump(tmp_path / "farm.json")
        res = CliRunner().invoke(
            cli.app, ["eval", "--tasks", tasks, "--out", str(tmp_path / "run2"), "--farm", str(tmp_path / "farm.json")]
        )
        assert res.exit_code == 0, res.output
        board = json.loads((tmp_path / "run2" / "scoreboard.json").read_text())
        assert board["farm"]["devices"] == {serials[0]: 2} and board["farm"]["retired"] == {}
        res = CliRunner().invoke(
            cli.app, ["eval", "--out", str(tmp_path / "run3"), "--farm", str(tmp_path / "x.json"), "--device", "a"]
        )
        assert res.exit_code != 0 and "give one" in " ".join(res.output.split())
        # a pool with no usable device is refused before the run starts, naming each device's reason
        res = CliRunner().invoke(
            cli.app, ["eval", "--tasks", tasks, "--out", str(tmp_path / "run4"), "--device", serials[1]]
        )
        said = " ".join(res.output.split())
        assert res.exit_code == 2 and f"no device of the pool is ready: {serials[1]}: adb state is" in said, said
        assert not (tmp_path / "run4").exists()
        # a device adb does not list yet is `adb connect`ed by the pool's first check
        fresh = AdbDeviceServer(VirtualDevice()).start()
        serials.append(fresh.serial)
        run5 = tmp_path / "run5"
        res = CliRunner().invoke(cli.app, ["eval", "--tasks", tasks, "--out", str(run5), "--device", fresh.serial])
        assert res.exit_code == 0, res.output
        assert json.loads((run5 / "scoreboard.json").read_text())["farm"]["devices"] == {fresh.serial: 2}
        fresh.stop()
    finally:
        good.stop()
        for serial in serials:
            adb_server.disconnect(serial)
