"""Emulator management: AVD specs, port pairs, stale locks, and the launcher driving a stand-in emulator.

The launcher tests run a real process: ``tests/farm_standin_emulator.py`` installed as
``emulator`` first on ``PATH``; it serves the real console protocol on the allocated console port.
The real-emulator test (``-m emulator``) boots an AVD where the Android emulator exists.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from phoneenv.farm.console import ConsoleClient, ConsoleCommandError, SnapshotLoadError
from phoneenv.farm.emulator import (
    ANIMATION_SETTINGS,
    REANNOUNCE_S,
    AvdInUseError,
    AvdSpec,
    AvdSpecError,
    BootTimeoutError,
    EmulatorError,
    EmulatorExitedError,
    EmulatorLauncher,
    EmulatorNotFoundError,
    PortAllocator,
    PortBusyError,
    PortPair,
    PortsExhaustedError,
    SnapshotBootError,
    SnapshotNotFoundError,
    avd_dir,
    avd_home,
    avd_snapshots,
    clone_avd,
    default_images_dir,
    find_emulator,
    load_avd_spec,
    load_avd_specs,
    prepare_fixture,
    resolve_avd_spec,
    restart_from_snapshot,
    sweep_stale_locks,
)
from tests import waiting

REPO = Path(__file__).resolve().parents[1]
STANDIN = Path(__file__).with_name("farm_standin_emulator.py")
BOOT_S = 90
"""Deadline for a stand-in that should boot: under a full parallel run adb took over 30 s to list
one (a deadline, not a timing assertion: a healthy boot returns as soon as adb sees it)."""

# Port regions per test (all above 5585, the last port adb servers scan for emulators, so no adb
# server of a parallel test ever connects to them). Each test owns its region.
SKIP_REGION = (5600, 5604)
EXHAUST_REGION = (5606, 5608)
MULTI_REGION = (5610, 5650)
DEATH_REGION = (5652, 5654)
LAUNCH_REGION = (5656, 5682)


def spec(**overrides) -> AvdSpec:
    fields = dict(
        name="standin_api34",
        api_level=34,
        abi="x86_64",
        tag="google_apis",
        system_image="system-images;android-34;google_apis;x86_64",
        rooted=True,
    )
    fields.update(overrides)
    return AvdSpec(**fields)


def free_pairs(first: int, last: int) -> list[int]:
    """Console ports of ``first..last`` whose pair binds now (checked without the allocator)."""
    free = []
    for console in range(first, last + 1, 2):
        ok = True
        for port in (console, console + 1):
            with socket.socket() as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
        if ok:
            free.append(console)
    return free


# ------------------------------------------------------------------------------------ AVD specs


def test_shipped_avd_definitions_load() -> None:
    specs = load_avd_specs(REPO / "emulator_images")
    assert sorted(specs) == [
        "phoneenv_pixel4_api30_atd",
        "phoneenv_pixel6_api34",
        "phoneenv_pixel6_api34_playstore",
    ]
    main = specs["phoneenv_pixel6_api34"]
    assert (main.api_level, main.abi, main.tag, main.device) == (34, "x86_64", "google_apis", "pixel_6")
    assert main.system_image == "system-images;android-34;google_apis;x86_64"
    assert (main.ram_mib, main.data_partition_mib, main.gpu) == (3072, 6144, "swiftshader_indirect")
    assert main.rooted and main.google_apis and main.supports_login_restore
    store = specs["phoneenv_pixel6_api34_playstore"]
    assert store.google_apis and not store.rooted and not store.supports_login_restore
    atd = specs["phoneenv_pixel4_api30_atd"]
    assert not atd.google_apis and atd.rooted and atd.api_level == 30
    assert default_images_dir() == REPO / "emulator_images"


def test_spec_commands_and_config(tmp_path: Path) -> None:
    main = load_avd_spec(REPO / "emulator_images" / "pixel6-api34.yaml")
    assert main.sdkmanager_command() == [
        "sdkmanager",
        "--install",
        "emulator",
        "platform-tools",
        "system-images;android-34;google_apis;x86_64",
    ]
    assert main.avdmanager_command(path=tmp_path / "x.avd") == [
        "avdmanager",
        "--silent",
        "create",
        "avd",
        "--force",
        "--name",
        "phoneenv_pixel6_api34",
        "--package",
        "system-images;android-34;google_apis;x86_64",
        "--tag",
        "google_apis",
        "--abi",
        "x86_64",
        "--device",
        "pixel_6",
        "--path",
        str(tmp_path / "x.avd"),
    ]
    # config.ini as avdmanager writes it (excerpt): managed keys are replaced in place, others kept.
    ini = tmp_path / "config.ini"
    ini.write_text("AvdId=phoneenv_pixel6_api34\nhw.ramSize=1536\nhw.lcd.density=420\nhw.gpu.enabled=no\n")
    main.apply_config(tmp_path)
    assert ini.read_text().splitlines() == [
        "AvdId=phoneenv_pixel6_api34",
        "hw.ramSize=3072",
        "hw.lcd.density=420",
        "hw.gpu.enabled=yes",
        "disk.dataPartition.size=6144M",
        "hw.gpu.mode=swiftshader_indirect",
        "hw.keyboard=yes",
        "hw.audioInput=no",
        "hw.camera.back=none",
        "hw.camera.front=none",
    ]
    with pytest.raises(AvdSpecError, match="create the AVD first"):
        main.apply_config(tmp_path / "missing")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"system_image": "system-images;android-33;google_apis;x86_64"}, "expected 'system-images;android-34"),
        (
            {"tag": "google_apis_playstore", "system_image": "system-images;android-34;google_apis_playstore;x86_64"},
            "Play Store images refuse adb root",
        ),
        ({"rooted": False}, "contradicts tag 'google_apis'"),
        ({"abi": "mips"}, "abi"),
        ({"api_level": 19}, "api_level"),
        ({"ram_mib": 256}, "ram_mib"),
        ({"name": "bad name!"}, "name"),
        ({"fixture_snapshot": "two words"}, "invalid snapshot name"),
        ({"config": {"hw.ramSize": "4096"}}, "set from the spec's fields"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_invalid_specs_name_the_field(tmp_path: Path, change: dict, message: str) -> None:
    data = json.loads(spec().model_dump_json())
    data.update(change)
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    with pytest.raises(AvdSpecError, match="invalid AVD definition") as err:
        load_avd_spec(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_spec_file_errors(tmp_path: Path) -> None:
    with pytest.raises(AvdSpecError, match="does not exist"):
        load_avd_spec(tmp_path / "none.yaml")
    (tmp_path / "broken.yaml").write_text("name: [unclosed\n")
    with pytest.raises(AvdSpecError, match="cannot read"):
        load_avd_spec(tmp_path / "broken.yaml")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(AvdSpecError, match="must be a YAML mapping"):
        load_avd_spec(tmp_path / "list.yaml")
    dup = tmp_path / "dup"
    dup.mkdir()
    for stem in ("a", "b"):
        (dup / f"{stem}.yaml").write_text(spec().model_dump_json())
    with pytest.raises(AvdSpecError, match="declared twice"):
        load_avd_specs(dup)


def test_avd_home_and_emulator_lookup(tmp_path: Path) -> None:
    assert avd_home({"ANDROID_AVD_HOME": "/a", "ANDROID_USER_HOME": "/u", "HOME": "/h"}) == Path("/a")
    assert avd_home({"ANDROID_USER_HOME": "/u", "HOME": "/h"}) == Path("/u/avd")
    assert avd_home({"ANDROID_SDK_HOME": "/s", "HOME": "/h"}) == Path("/s/.android/avd")
    assert avd_dir("x", {"HOME": "/h"}) == Path("/h/.android/avd/x.avd")

    sdk = tmp_path / "sdk"
    (sdk / "emulator").mkdir(parents=True)
    binary = sdk / "emulator" / "emulator"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    assert find_emulator({"PATH": str(tmp_path / "empty"), "ANDROID_HOME": str(sdk)}) == binary
    with pytest.raises(EmulatorNotFoundError, match="sdkmanager --install emulator"):
        find_emulator({"PATH": str(tmp_path / "empty")})


def test_command_lines_are_exact(tmp_path: Path) -> None:
    launcher = EmulatorLauncher(spec(ram_mib=3072, data_partition_mib=6144), emulator="/sdk/emulator/emulator")
    pair = PortPair(5556, 5557)
    base = [
        "/sdk/emulator/emulator",
        "-avd",
        "standin_api34",
        "-no-window",
        "-no-audio",
        "-no-boot-anim",
        "-gpu",
        "swiftshader_indirect",
        "-ports",
        "5556,5557",
    ]
    sizes = ["-memory", "3072", "-partition-size", "6144"]
    assert launcher.command(pair) == [*base, "-no-snapshot-save", *sizes]
    assert launcher.command(pair, snapshot="fixture") == [*base, "-no-snapshot-save", "-snapshot", "fixture", *sizes]
    assert launcher.command(pair, cold_boot=True, save_on_exit=True) == [*base, "-no-snapshot-load", *sizes]
    assert launcher.command(pair, snapshot="fixture", read_only=True, extra_args=["-verbose"]) == [
        *base,
        "-no-snapshot-save",
        "-snapshot",
        "fixture",
        "-read-only",
        *sizes,
        "-verbose",
    ]
    off = EmulatorLauncher(spec(accel="off", gpu="host"), emulator="emulator")
    assert off.command(pair)[7] == "host"
    assert off.command(pair)[-2:] == ["-accel", "off"]
    with pytest.raises(ValueError, match="exclusive"):
        launcher.command(pair, cold_boot=True, snapshot="fixture")
    with pytest.raises(ValueError, match="invalid snapshot name"):
        launcher.command(pair, snapshot="a;reboot")
    assert pair.serial == "emulator-5556"


# ------------------------------------------------------------------------------------ ports


def test_allocator_validates_its_range(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="even"):
        PortAllocator(tmp_path, first=5555, last=5561)
    with pytest.raises(ValueError, match="5554 <= first <= last <= 5682"):
        PortAllocator(tmp_path, first=5552, last=5560)
    with pytest.raises(ValueError, match="5554 <= first <= last <= 5682"):
        PortAllocator(tmp_path, first=5600, last=5690)
    assert list(PortAllocator(tmp_path, first=5554, last=5560).candidates()) == [5554, 5556, 5558, 5560]


def test_allocator_skips_ports_in_use(tmp_path: Path) -> None:
    first, last = SKIP_REGION
    if free_pairs(first, last) != [first, first + 2, first + 4]:
        pytest.skip(f"ports {first}..{last + 1} are not all free on this machine")
    allocator = PortAllocator(tmp_path, first=first, last=last)
    with socket.socket() as holder:  # something else listens on the adb port of the first pair
        holder.bind(("127.0.0.1", first + 1))
        holder.listen()
        lease = allocator.allocate()
        assert lease.pair == PortPair(first + 2, first + 3)
        second = allocator.allocate()
        assert second.pair == PortPair(first + 4, first + 5)
        with pytest.raises(PortsExhaustedError, match=f"1 in use by other programs \\({first}\\)"):
            allocator.allocate()
    lease.release()
    assert lease.released
    # The holder is gone: the lowest pair is free again, and so is the released one.
    again = allocator.allocate()
    assert again.pair.console == first
    released = allocator.allocate()
    assert released.pair.console == first + 2
    for held in (again, released, second):
        held.release()
    # A lease nobody references is released by garbage collection (it owns the lock descriptor).
    assert allocator.allocate().pair.console == first
    assert allocator.allocate().pair.console == first


def test_allocator_exhaustion_and_release(tmp_path: Path) -> None:
    first, last = EXHAUST_REGION
    if free_pairs(first, last) != [first, last]:
        pytest.skip(f"ports {first}..{last + 1} are not all free on this machine")
    a = PortAllocator(tmp_path, first=first, last=last)
    b = PortAllocator(tmp_path, first=first, last=last)  # a second allocator over the same lock dir
    one = a.allocate()
    two = b.allocate()
    assert {one.pair.console, two.pair.console} == {first, last}
    with pytest.raises(PortsExhaustedError, match=f"no free emulator port pair in {first}..{last + 1}: 2 pair"):
        a.allocate()
    assert (tmp_path / f"{first}.lock").read_text().strip() == str(os.getpid())
    with two:
        pass
    assert b.allocate().pair == two.pair
    one.release()
    one.release()  # idempotent


def _hold_pairs(runtime_dir: str, first: int, last: int, count: int, out, barrier) -> None:
    allocator = PortAllocator(runtime_dir, first=first, last=last)
    leases = [allocator.allocate() for _ in range(count)]
    out.put([lease.pair.console for lease in leases])
    barrier.wait(30)  # hold every lease until all processes have allocated


def test_no_duplicate_pairs_across_processes(tmp_path: Path) -> None:
    first, last = MULTI_REGION
    free = free_pairs(first, last)
    processes, per_process = 4, 4
    if len(free) < processes * per_process:
        pytest.skip(f"fewer than {processes * per_process} free pairs in {first}..{last + 1}")
    ctx = multiprocessing.get_context("fork")  # Linux: fcntl locks are what is under test
    out = ctx.Queue()
    barrier = ctx.Barrier(processes)
    workers = [
        ctx.Process(target=_hold_pairs, args=(str(tmp_path), first, last, per_process, out, barrier))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    got = [out.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(30)
        assert worker.exitcode == 0
    ports = [port for chunk in got for port in chunk]
    assert len(ports) == processes * per_process
    assert len(set(ports)) == len(ports), f"duplicate pairs: {sorted(ports)}"
    assert set(ports) <= set(free)
    # Every holder exited, so the kernel dropped their locks: the lowest free pair is available.
    with PortAllocator(tmp_path, first=first, last=last).allocate() as lease:
        assert lease.pair.console == free[0]


def test_lock_dies_with_its_process(tmp_path: Path) -> None:
    first, last = DEATH_REGION
    if free_pairs(first, last) != [first, last]:
        pytest.skip(f"ports {first}..{last + 1} are not all free on this machine")
    code = (
        "import sys, time; from phoneenv.farm.emulator import PortAllocator;"
        f"lease = PortAllocator({str(tmp_path)!r}, first={first}, last={first}).allocate();"
        "print(lease.pair.console, flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == str(first)
        allocator = PortAllocator(tmp_path, first=first, last=last)
        with allocator.allocate() as lease:
            assert lease.pair.console == last  # the first pair is held by the other process
        holder.send_signal(signal.SIGKILL)  # a crash: no cleanup code runs
        holder.wait(10)
        with allocator.allocate() as lease:
            assert lease.pair.console == first
    finally:
        holder.kill()
        holder.wait(10)


# ------------------------------------------------------------------------------ stale locks


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(10)
    return proc.pid


def test_sweep_stale_locks(tmp_path: Path) -> None:
    avd = tmp_path / "x.avd"
    (avd / "snapshots" / "default_boot").mkdir(parents=True)
    gone = dead_pid()
    assert not psutil.pid_exists(gone)
    stale_file = avd / "hardware-qemu.ini.lock"
    stale_file.write_bytes(f"{gone}\0".encode())
    nested = avd / "snapshots" / "default_boot" / "snapshot.lock"
    nested.write_bytes(f"{gone}\0".encode())
    win_dir = avd / "userdata-qemu.img.lock"  # a Windows-style lock: a directory with a pid file
    win_dir.mkdir()
    (win_dir / "pid").write_text(str(gone))
    live = avd / "multiinstance.lock"
    live.write_bytes(f"{os.getpid()}\0".encode())
    reused = avd / "cache.img.lock"  # our PID, but written before we were born: a reused PID
    reused.write_bytes(f"{os.getpid()}\0".encode())
    old = psutil.Process().create_time() - 3600
    os.utime(reused, (old, old))
    fresh_no_pid = avd / "sdcard.img.lock"
    fresh_no_pid.write_bytes(b"")
    old_no_pid = avd / "encryptionkey.img.lock"
    old_no_pid.write_bytes(b"")
    os.utime(old_no_pid, (time.time() - 120, time.time() - 120))
    unrelated = avd / "config.ini"
    unrelated.write_text("x=1\n")

    removed = sweep_stale_locks(avd)
    assert removed == sorted([stale_file, nested, win_dir, reused, old_no_pid])
    assert live.exists() and fresh_no_pid.exists() and unrelated.exists()
    assert not stale_file.exists() and not win_dir.exists() and not nested.exists()
    assert sweep_stale_locks(avd) == []
    assert sweep_stale_locks(tmp_path / "missing") == []


# ------------------------------------------------------------------------------- launcher


@pytest.fixture(scope="session")
def runtime_dir(tmp_path_factory) -> Path:
    """One ``$PHONEENV_RUNTIME_DIR`` for every launcher test of this run, shared by the xdist workers."""
    root = tmp_path_factory.getbasetemp()
    shared = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "farm-runtime"
    (shared / "emulator-ports").mkdir(parents=True, exist_ok=True)
    return shared


@pytest.fixture
def port_lock_dir(runtime_dir: Path) -> Path:
    return runtime_dir / "emulator-ports"


def make_avd(home: Path, name: str) -> Path:
    """An AVD as avdmanager leaves it: ``<home>/<name>.ini`` pointing at ``<home>/<name>.avd/`` with a config.ini."""
    content = home / f"{name}.avd"
    content.mkdir(parents=True)
    (content / "config.ini").write_text(f"AvdId={name}\navd.ini.displayname={name}\nhw.ramSize=2048\n")
    (home / f"{name}.ini").write_text(
        f"avd.ini.encoding=UTF-8\npath={content}\npath.rel=avd/{name}.avd\ntarget=android-34\n"
    )
    return content


def snapshot_state(avd: Path, name: str) -> dict:
    """The device state the stand-in saved as snapshot ``name`` of the AVD at ``avd``."""
    return json.loads((avd / "snapshots" / name / "snapshot.pb").read_text())


class Rig:
    """A stand-in emulator installed on PATH, an AVD home, a HOME for the token, a state dir."""

    def __init__(self, tmp_path: Path, lock_dir: Path) -> None:
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.emulator = self.bin / "emulator"
        self.emulator.write_text(f"#!{sys.executable}\n" + STANDIN.read_text())
        self.emulator.chmod(0o755)
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.avd_home = tmp_path / "avd"
        self.state = tmp_path / "state"
        self.spec = spec()
        self.avd = make_avd(self.avd_home, self.spec.name)
        self.logs = tmp_path / "logs"
        self.allocator = PortAllocator(lock_dir, first=LAUNCH_REGION[0], last=LAUNCH_REGION[1])

    def launcher(self, mode: str = "normal", adb=None, **env: str) -> EmulatorLauncher:
        """A launcher for the stand-in; ``adb`` is an adbutils client of a real adb server, or None."""
        environ = {k: v for k, v in os.environ.items() if k != "ANDROID_ADB_SERVER_PORT"}
        environ.update(
            PATH=f"{self.bin}{os.pathsep}{environ.get('PATH', '')}",
            HOME=str(self.home),
            ANDROID_AVD_HOME=str(self.avd_home),
            STANDIN_STATE=str(self.state),
            STANDIN_MODE=mode,
            PYTHONPATH=str(REPO),
            **env,
        )
        return EmulatorLauncher(
            self.spec,
            allocator=self.allocator,
            log_dir=self.logs,
            env=environ,
            adb_server=(adb.host, adb.port) if adb is not None else None,
        )

    def log(self) -> str:
        return "".join(path.read_text() for path in sorted(self.logs.iterdir()))


@pytest.fixture
def rig(tmp_path: Path, port_lock_dir: Path) -> Rig:
    return Rig(tmp_path, port_lock_dir)


def serials(adb) -> set[str]:
    return {info.serial for info in adb.list()}


def gone_from_adb(adb, serial: str, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while serial in serials(adb):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_launch_boot_snapshot_reset_and_clean_shutdown(rig: Rig, adb_server) -> None:
    launcher = rig.launcher(adb=adb_server)
    assert launcher.emulator == rig.emulator  # found first on the environment's PATH
    assert launcher.env["ANDROID_ADB_SERVER_PORT"] == str(adb_server.port)
    started = time.monotonic()
    emu = launcher.start(boot_timeout=BOOT_S, poll_interval=0.1)
    boot_s = time.monotonic() - started
    try:
        assert emu.alive()
        assert json.loads((rig.state / "argv.json").read_text()) == emu.command
        assert emu.command == launcher.command(emu.ports)
        assert emu.serial == f"emulator-{emu.ports.console}"
        assert LAUNCH_REGION[0] <= emu.ports.console <= LAUNCH_REGION[1]
        assert os.getpgid(emu.pid) == emu.pid  # its own process group
        # The real adb server lists it under the emulator serial, as a booted device.
        device = adb_server.device(emu.serial)
        assert device.get_state() == "device"
        assert device.getprop("sys.boot_completed") == "1"
        # The emulator wrote the token on first start; the launcher's console used it.
        assert (rig.home / ".emulator_console_auth_token").read_text()
        assert emu.console().authenticated
        assert emu.console().avd_name() == rig.spec.name

        assert emu.disable_animations() == dict.fromkeys(ANIMATION_SETTINGS, "0")
        for key in ANIMATION_SETTINGS:
            assert device.shell(["settings", "get", "global", key]) == "0"

        assert emu.save_snapshot() == ["fixture"]
        assert snapshot_state(rig.avd, "fixture")["settings"]["global"] == dict.fromkeys(ANIMATION_SETTINGS, "0")
        # An episode changes the device; loading the fixture puts it back.
        device.shell(["settings", "put", "global", "window_animation_scale", "1"])
        device.shell(["settings", "put", "global", "wifi_on", "0"])
        emu.load_snapshot()
        assert device.shell(["settings", "get", "global", "window_animation_scale"]) == "0"
        assert device.shell(["settings", "get", "global", "wifi_on"]) == "null"
        with pytest.raises(SnapshotLoadError):
            emu.load_snapshot("never_saved")
        assert (rig.avd / "hardware-qemu.ini.lock").read_bytes() == f"{emu.pid}\0".encode()
    finally:
        how = emu.stop(console_timeout=10)
    assert how == "console"
    assert emu.process.returncode == 0
    assert not (rig.avd / "hardware-qemu.ini.lock").exists()  # it cleaned up after itself
    assert "emulator: exiting cleanly" in emu.log_path.read_text()
    assert emu.stop() == "console"  # idempotent
    assert gone_from_adb(adb_server, emu.serial)
    # Its ports went back to the pool: the same pair is handed out again.
    with rig.allocator.allocate() as lease:
        assert lease.pair == emu.ports
    assert boot_s < 20


def test_hung_boot_times_out_and_kills_the_process(rig: Rig, adb_server) -> None:
    launcher = rig.launcher("hang", adb=adb_server)
    started = time.monotonic()
    # 6 s: ample for the stand-in to open its console on a loaded machine, so the boot wait is what expires.
    with pytest.raises(BootTimeoutError, match=r"did not finish booting \(sys.boot_completed=1\) within 6 s") as err:
        launcher.start(boot_timeout=6, poll_interval=0.1)
    elapsed = time.monotonic() - started
    assert "(last poll: sys.boot_completed='')" in str(err.value)  # adb sees it, unbooted
    assert "console on" in str(err.value)  # the log tail is in the message
    pid = int(next(line.split()[3] for line in rig.log().splitlines() if line.startswith("standin emulator pid")))
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert 6 <= elapsed < 20
    argv = json.loads((rig.state / "argv.json").read_text())
    console = int(argv[argv.index("-ports") + 1].split(",")[0])
    assert gone_from_adb(adb_server, f"emulator-{console}")
    # Stopped and released: its ports are free for the next start.
    with rig.allocator.allocate() as lease:
        assert lease.pair.console == console


def test_device_never_seen_by_adb_reads_as_not_booted(rig: Rig, adb_server) -> None:
    # Not announced: the real adb server answers "device 'emulator-N' not found" on every poll
    # (1.5 s is less than REANNOUNCE_S, so the launcher does not announce it either).
    assert REANNOUNCE_S > 1.5
    launcher = rig.launcher(adb=adb_server, STANDIN_NO_ANNOUNCE="1")
    with launcher.start(wait=False) as emu:
        emu.wait_for_console(timeout=30)
        with pytest.raises(BootTimeoutError, match=r"within 1\.5 s \(last poll: adb: AdbError: .*not found"):
            emu.wait_for_boot(timeout=1.5, poll_interval=0.2)
        assert "emulator: boot completed" in rig.log()  # the guest booted; adb never saw it


def test_launcher_announces_an_emulator_adb_does_not_list(rig: Rig, adb_server) -> None:
    # The emulator's own announcement never reached the server (here: never sent; in a farm: refused
    # while the server still held the transport of the emulator that had the same ports a moment
    # before). The launcher announces it after REANNOUNCE_S, and the boot completes.
    launcher = rig.launcher(adb=adb_server, STANDIN_NO_ANNOUNCE="1")
    started = time.monotonic()
    with launcher.start(boot_timeout=30, poll_interval=0.2) as emu:
        assert time.monotonic() - started >= REANNOUNCE_S
        assert adb_server.device(emu.serial).get_state() == "device"
    assert gone_from_adb(adb_server, emu.serial)


def test_restart_on_the_same_ports_right_after_a_stop(rig: Rig, adb_server) -> None:
    # Right after a stop, the adb server still lists the old serial offline and refuses the next
    # emulator's announcement on the same ports (1 start in 20 failed before the launcher announced
    # again). Five quick restarts on one port pair all boot.
    launcher = rig.launcher(adb=adb_server)
    emu = launcher.start(boot_timeout=BOOT_S, poll_interval=0.1)
    try:
        emu.save_snapshot()  # the fixture each restart loads
        for _ in range(5):
            emu = launcher.restart(emu, boot_timeout=BOOT_S, poll_interval=0.1)
            assert adb_server.device(emu.serial).getprop("sys.boot_completed") == "1"
    finally:
        emu.stop()


def test_emulator_that_exits_during_boot_is_reported(rig: Rig) -> None:
    with pytest.raises(EmulatorExitedError, match=r"exited with code 1 while opening its console") as err:
        rig.launcher("crash").start(boot_timeout=20, poll_interval=0.1)
    assert f"PANIC: Unknown AVD name [{rig.spec.name}]" in str(err.value)


def test_stale_lock_of_a_crashed_run_is_swept_before_start(rig: Rig) -> None:
    (rig.avd / "hardware-qemu.ini.lock").write_bytes(f"{dead_pid()}\0".encode())
    with rig.launcher().start(wait=False) as emu:
        emu.wait_for_console(timeout=20)
        assert emu.alive()
        assert (rig.avd / "hardware-qemu.ini.lock").read_bytes() == f"{emu.pid}\0".encode()
    assert emu.stopped_by == "console"


def test_shutdown_escalates_to_sigterm(rig: Rig) -> None:
    emu = rig.launcher("ignore-kill").start(wait=False)
    emu.wait_for_console(timeout=20)
    how = emu.stop(console_timeout=0.5, term_timeout=10)
    assert how == "sigterm"
    assert "emulator: exiting cleanly" in emu.log_path.read_text()
    assert not (rig.avd / "hardware-qemu.ini.lock").exists()


def test_shutdown_escalates_to_sigkill_and_sweeps_its_locks(rig: Rig) -> None:
    emu = rig.launcher("ignore-term").start(wait=False)
    emu.wait_for_console(timeout=20)
    assert (rig.avd / "hardware-qemu.ini.lock").exists()
    how = emu.stop(console_timeout=0.5, term_timeout=0.5, kill_timeout=5)
    assert how == "sigkill"
    assert emu.process.returncode == -signal.SIGKILL
    assert "exiting cleanly" not in emu.log_path.read_text()
    assert not (rig.avd / "hardware-qemu.ini.lock").exists()  # swept: its owner is dead
    with pytest.raises(ProcessLookupError):
        os.killpg(emu.pgid, 0)  # nothing of its group survives


def test_prepare_fixture_recipe(rig: Rig, adb_server) -> None:
    launcher = rig.launcher(adb=adb_server)
    assert prepare_fixture(launcher, boot_timeout=BOOT_S, poll_interval=0.1) == ["fixture"]
    argv = json.loads((rig.state / "argv.json").read_text())
    assert "-no-snapshot-load" in argv and "-snapshot" not in argv
    saved = snapshot_state(rig.avd, "fixture")
    assert saved["settings"]["global"] == dict.fromkeys(ANIMATION_SETTINGS, "0")
    # Booting later from the fixture passes -snapshot fixture; the console lists it.
    with launcher.start(snapshot="fixture", boot_timeout=BOOT_S, poll_interval=0.1) as emu:
        assert emu.command[emu.command.index("-snapshot") + 1] == "fixture"
        token = rig.home / ".emulator_console_auth_token"
        assert ConsoleClient("127.0.0.1", emu.ports.console, token_path=token).snapshot_list() == ["fixture"]


def test_recipe_dry_run_prints_the_commands() -> None:
    recipe = [sys.executable, str(REPO / "emulator_images" / "recipe.py")]
    spec_file = str(REPO / "emulator_images" / "pixel4-api30-atd.yaml")
    out = subprocess.run([*recipe, "install", spec_file, "--dry-run"], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "sdkmanager --licenses",
        "sdkmanager --install emulator platform-tools 'system-images;android-30;aosp_atd;x86_64'",
    ]
    out = subprocess.run([*recipe, "create", spec_file, "--dry-run"], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[0] == (
        "avdmanager --silent create avd --force --name phoneenv_pixel4_api30_atd "
        "--package 'system-images;android-30;aosp_atd;x86_64' --tag aosp_atd --abi x86_64 --device pixel_4"
    )
    assert "#   hw.ramSize=2048" in out.stdout and "#   disk.dataPartition.size=4096M" in out.stdout
    bad = subprocess.run([*recipe, "create", "missing.yaml"], capture_output=True, text=True)
    assert bad.returncode == 1
    assert bad.stderr.strip() == "error: AVD definition missing.yaml does not exist"


def test_recipe_fixture_on_the_stand_in(rig: Rig, adb_server, runtime_dir: Path, tmp_path: Path) -> None:
    spec_file = tmp_path / "standin.yaml"
    spec_file.write_text(rig.spec.model_dump_json())  # JSON is YAML
    env = rig.launcher().env
    env["PHONEENV_RUNTIME_DIR"] = str(runtime_dir)  # the lock directory the other launcher tests use
    done = waiting.run(
        [
            sys.executable,
            str(REPO / "emulator_images" / "recipe.py"),
            "fixture",
            str(spec_file),
            "--adb-port",
            str(adb_server.port),
            "--first-port",
            str(LAUNCH_REGION[0]),
            "--last-port",
            str(LAUNCH_REGION[1]),
            "--log-dir",
            str(rig.logs),
            "--boot-timeout",
            "30",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "standin_api34: snapshot 'fixture' saved; snapshots: fixture"
    saved = snapshot_state(rig.avd, "fixture")
    assert saved["settings"]["global"] == dict.fromkeys(ANIMATION_SETTINGS, "0")
    assert "emulator: exiting cleanly" in rig.log()


def test_cli_list_and_stop(tmp_path: Path, monkeypatch) -> None:
    import threading

    from typer.testing import CliRunner

    from phoneenv.cli import app
    from phoneenv.farm.console import ConsoleServer, MemorySnapshotHooks

    runner = CliRunner()
    avds = tmp_path / "avd"
    avds.mkdir()
    (avds / "phoneenv_pixel6_api34.ini").write_text("path=/x\n")  # what avdmanager leaves per AVD
    monkeypatch.setenv("ANDROID_AVD_HOME", str(avds))
    result = runner.invoke(app, ["device", "emulator", "list", str(REPO / "emulator_images")])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "phoneenv_pixel4_api30_atd\tsystem-images;android-30;aosp_atd;x86_64\tpixel_4\tnot created",
        "phoneenv_pixel6_api34_playstore\tsystem-images;android-34;google_apis_playstore;x86_64\tpixel_6\tnot created",
        "phoneenv_pixel6_api34\tsystem-images;android-34;google_apis;x86_64\tpixel_6\tcreated",
    ]

    killed = threading.Event()
    token = tmp_path / ".emulator_console_auth_token"
    token.write_text("t0k")
    with ConsoleServer(MemorySnapshotHooks(), token="t0k", on_kill=killed.set) as server:
        args = ["device", "emulator", "stop", "127.0.0.1:5555", "--console-port", str(server.port)]
        result = runner.invoke(app, [*args, "--token-path", str(token)])
        assert result.exit_code == 0, result.output
        assert killed.wait(5)
        token.write_text("wrong")
        result = runner.invoke(app, [*args, "--token-path", str(token)])
        assert result.exit_code == 1
        assert "rejected the token" in result.output
    result = runner.invoke(app, ["device", "emulator", "stop", "R58M123"])
    assert result.exit_code == 1 and "pass --console-port" in result.output


def test_cli_start_runs_until_sigterm(rig: Rig, adb_server, runtime_dir: Path, tmp_path: Path) -> None:
    spec_file = tmp_path / "standin.yaml"
    spec_file.write_text(rig.spec.model_dump_json())
    env = rig.launcher().env
    env["PHONEENV_RUNTIME_DIR"] = str(runtime_dir)
    cli = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from phoneenv.cli import app; app()",
            "device",
            "emulator",
            "start",
            str(spec_file),
            "--adb-port",
            str(adb_server.port),
            "--first-port",
            str(LAUNCH_REGION[0]),
            "--last-port",
            str(LAUNCH_REGION[1]),
            "--boot-timeout",
            "30",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        first = cli.stdout.readline()
        assert first.startswith("booted standin_api34 as emulator-"), first + cli.stdout.read()
        serial = first.split()[3]
        assert adb_server.device(serial).getprop("sys.boot_completed") == "1"
        cli.send_signal(signal.SIGTERM)
        out, _ = cli.communicate(timeout=60)
    finally:
        cli.kill()
    assert cli.returncode == 0, out
    assert out.splitlines()[-1] == f"stopped {serial} (console)"
    assert gone_from_adb(adb_server, serial)


# ------------------------------------------------------------- snapshots, instances, restarts


def put_snapshot(avd: Path, name: str, settings: dict[str, str], booted: bool = True) -> Path:
    """Write snapshot ``name`` as the stand-in saves it: a booted device with these global settings."""
    pb = avd / "snapshots" / name / "snapshot.pb"
    pb.parent.mkdir(parents=True, exist_ok=True)
    props = {"ro.build.version.sdk": "34", "ro.kernel.qemu": "1", "sys.boot_completed": "1" if booted else ""}
    pb.write_text(json.dumps({"props": props, "settings": {"global": settings, "secure": {}, "system": {}}}))
    return pb


def global_setting(adb, serial: str, key: str) -> str:
    return adb.device(serial).shell(["settings", "get", "global", key])


def start_must_fail(launcher: EmulatorLauncher, error: type[BaseException], **options) -> BaseException:
    """``launcher.start(**options)``'s error; an emulator that starts instead is stopped, then the test fails."""
    try:
        emu = launcher.start(**options)
    except error as exc:
        return exc
    emu.stop()
    pytest.fail(f"{launcher.spec.name} started ({emu.serial}) where {error.__name__} was expected")


def test_missing_snapshot_is_refused_before_launch(rig: Rig) -> None:
    put_snapshot(rig.avd, "fixture", {})
    put_snapshot(rig.avd, "default_boot", {})
    (rig.avd / "snapshots" / "half_saved").mkdir()  # a directory without snapshot.pb is no snapshot
    assert avd_snapshots(rig.avd) == ["default_boot", "fixture"]
    launcher = rig.launcher()
    with pytest.raises(SnapshotNotFoundError, match=r"has no snapshot 'fixtrue'.*its snapshots: default_boot, fixture"):
        launcher.start(snapshot="fixtrue", boot_timeout=30)
    with pytest.raises(SnapshotNotFoundError) as err:
        launcher.start(snapshot="half_saved", boot_timeout=30)
    assert (err.value.snapshot, err.value.available) == ("half_saved", ["default_boot", "fixture"])
    assert isinstance(err.value, LookupError) and isinstance(err.value, SnapshotBootError)
    assert not rig.logs.exists() and not rig.state.exists()  # nothing was launched
    with pytest.raises(ValueError, match="exclusive"):
        launcher.start(snapshot="fixture", extra_args=["-no-snapshot-load"])


def test_snapshot_fallback_reported_by_the_emulator_fails_the_start(rig: Rig, adb_server, monkeypatch) -> None:
    # The emulator does not fail on a snapshot it cannot load: it logs "Performing clean boot:
    # <reason>" and cold boots. The start must fail on that report, long before the (slow) boot.
    launcher = rig.launcher(adb=adb_server, STANDIN_BOOT_DELAY="20")
    put_snapshot(rig.avd, "fixture", {"phoneenv_marker": "1"}).write_text("{not json")
    started = time.monotonic()
    err = start_must_fail(launcher, SnapshotBootError, snapshot="fixture", boot_timeout=60, poll_interval=0.1)
    assert re.search(r"did not boot from snapshot 'fixture'.*'Bad snapshot data'", str(err))
    assert not isinstance(err, SnapshotNotFoundError)
    assert (err.reason, err.available) == ("Bad snapshot data", ["fixture"])
    assert time.monotonic() - started < 15  # the boot would take 20 s: detected from the report
    assert "Performing clean boot: Bad snapshot data" in rig.log()
    assert "emulator: exiting cleanly" in rig.log()  # and the emulator was stopped

    # A snapshot the launcher's own check did not see (say, deleted just after it): the report says missing.
    shutil.rmtree(rig.avd / "snapshots" / "fixture")
    monkeypatch.setattr(EmulatorLauncher, "check_snapshot", lambda self, name: None)
    err = start_must_fail(launcher, SnapshotNotFoundError, snapshot="fixture", boot_timeout=60, poll_interval=0.1)
    assert re.search(r"'Missing snapshot files'.*the AVD's snapshots: none", str(err))
    assert err.reason == "Missing snapshot files"


def test_stand_in_honours_snapshot_flags_and_saves_on_exit(rig: Rig, adb_server) -> None:
    launcher = rig.launcher(adb=adb_server)
    put_snapshot(rig.avd, "default_boot", {"phoneenv_marker": "quickboot"})
    put_snapshot(rig.avd, "fixture", {"phoneenv_marker": "fixture"})
    with launcher.start(snapshot="fixture", boot_timeout=BOOT_S, poll_interval=0.1) as emu:
        assert global_setting(adb_server, emu.serial, "phoneenv_marker") == "fixture"
    # -no-snapshot-load wins over the Quick Boot snapshot; saving on exit writes default_boot back.
    with launcher.start(cold_boot=True, save_on_exit=True, boot_timeout=BOOT_S, poll_interval=0.1) as emu:
        assert "-no-snapshot-load" in emu.command and "-no-snapshot-save" not in emu.command
        assert global_setting(adb_server, emu.serial, "phoneenv_marker") == "null"
        adb_server.device(emu.serial).shell(["settings", "put", "global", "phoneenv_marker", "saved_on_exit"])
    assert "Performing cold boot: requested by the user" in emu.log_path.read_text()
    assert snapshot_state(rig.avd, "default_boot")["settings"]["global"] == {"phoneenv_marker": "saved_on_exit"}
    # No -snapshot: Quick Boot's default_boot is loaded.
    with launcher.start(boot_timeout=BOOT_S, poll_interval=0.1) as emu:
        assert global_setting(adb_server, emu.serial, "phoneenv_marker") == "saved_on_exit"
    assert snapshot_state(rig.avd, "fixture")["settings"]["global"] == {"phoneenv_marker": "fixture"}


def test_read_only_instances_share_one_avd(rig: Rig, adb_server) -> None:
    launcher = rig.launcher(adb=adb_server)
    pb = put_snapshot(rig.avd, "fixture", {"phoneenv_marker": "fixture"})
    before = (pb.read_bytes(), pb.stat().st_mtime_ns)
    first = launcher.start(snapshot="fixture", read_only=True, boot_timeout=BOOT_S, poll_interval=0.1)
    try:
        second = launcher.start(snapshot="fixture", read_only=True, boot_timeout=BOOT_S, poll_interval=0.1)
        with second:
            assert "-read-only" in first.command and "-read-only" in second.command
            assert first.ports != second.ports and first.serial != second.serial
            for emu in (first, second):
                assert adb_server.device(emu.serial).getprop("sys.boot_completed") == "1"
                assert global_setting(adb_server, emu.serial, "phoneenv_marker") == "fixture"
            # Each has its own device: a change in one is not seen by the other.
            adb_server.device(first.serial).shell(["settings", "put", "global", "phoneenv_marker", "changed"])
            assert global_setting(adb_server, second.serial, "phoneenv_marker") == "fixture"
            second.load_snapshot("fixture")  # a reset loads from the shared snapshot
            first.load_snapshot("fixture")
            assert global_setting(adb_server, first.serial, "phoneenv_marker") == "fixture"
            with pytest.raises(ConsoleCommandError, match="read-only"):
                first.save_snapshot("fixture")
            assert not (rig.avd / "hardware-qemu.ini.lock").exists()  # read-only instances lock nothing
    finally:
        first.stop()
    assert (pb.read_bytes(), pb.stat().st_mtime_ns) == before  # never written back
    assert avd_snapshots(rig.avd) == ["fixture"]


def test_second_writable_instance_is_refused_and_a_clone_boots(rig: Rig, adb_server) -> None:
    launcher = rig.launcher(adb=adb_server)
    put_snapshot(rig.avd, "fixture", {"phoneenv_marker": "fixture"})
    with launcher.start(snapshot="fixture", boot_timeout=BOOT_S, poll_interval=0.1) as writer:
        with pytest.raises(AvdInUseError, match=r"read_only=True or from a clone") as err:
            launcher.start(snapshot="fixture", boot_timeout=30, poll_interval=0.1)
        assert "Running multiple emulators with the same AVD" in str(err.value)
        assert isinstance(err.value, EmulatorExitedError)
        assert (rig.avd / "hardware-qemu.ini.lock").read_bytes() == f"{writer.pid}\0".encode()  # still the first's

        twin = launcher.clone("standin_twin")
        clone_dir = rig.avd_home / "standin_twin.avd"
        assert twin.spec.name == "standin_twin" and twin.avd_dir == clone_dir
        assert not (clone_dir / "hardware-qemu.ini.lock").exists()  # the running writer's lock is not copied
        assert f"path={clone_dir}" in (rig.avd_home / "standin_twin.ini").read_text().splitlines()
        assert "AvdId=standin_twin" in (clone_dir / "config.ini").read_text().splitlines()
        assert avd_snapshots(clone_dir) == ["fixture"]
        with twin.start(snapshot="fixture", boot_timeout=BOOT_S, poll_interval=0.1) as other:
            assert other.ports != writer.ports
            assert adb_server.device(other.serial).getprop("sys.boot_completed") == "1"
            assert global_setting(adb_server, other.serial, "phoneenv_marker") == "fixture"
            assert other.console().avd_name() == "standin_twin"
            other.save_snapshot("twin_only")
        assert avd_snapshots(clone_dir) == ["fixture", "twin_only"]
        assert avd_snapshots(rig.avd) == ["fixture"]  # the source AVD is untouched


def test_clone_avd_checks_its_arguments(tmp_path: Path) -> None:
    home = tmp_path / "avd"
    env = {"ANDROID_AVD_HOME": str(home)}
    source = make_avd(home, "src")
    put_snapshot(source, "fixture", {})
    (source / "userdata-qemu.img").write_bytes(b"\x00" * 4096)
    (source / "hardware-qemu.ini").write_text(f"disk.dataPartition.path={source}/userdata-qemu.img\n")
    bare = clone_avd("src", "bare", env=env, snapshots=False)
    assert bare == home / "bare.avd" and avd_dir("bare", env) == bare
    assert (bare / "userdata-qemu.img").read_bytes() == b"\x00" * 4096
    assert not (bare / "snapshots").exists() and not (bare / "hardware-qemu.ini").exists()
    assert (bare / "config.ini").read_text().splitlines() == [
        "AvdId=bare",
        "avd.ini.displayname=bare",
        "hw.ramSize=2048",
    ]
    assert (home / "bare.ini").read_text().splitlines() == [
        "avd.ini.encoding=UTF-8",
        f"path={bare}",
        "path.rel=avd/bare.avd",
        "target=android-34",
    ]
    with pytest.raises(EmulatorError, match="already exists"):
        clone_avd("src", "bare", env=env)
    assert avd_snapshots(clone_avd("src", "bare", env=env, overwrite=True)) == ["fixture"]
    with pytest.raises(EmulatorError, match="does not exist"):
        clone_avd("nothing", "x", env=env)
    with pytest.raises(AvdSpecError, match="invalid AVD name"):
        clone_avd("src", "no/slash", env=env)
    with pytest.raises(EmulatorError, match="onto itself"):
        clone_avd("src", "src", env=env)
    assert sorted(p.name for p in home.iterdir()) == ["bare.avd", "bare.ini", "src.avd", "src.ini"]  # no leftovers


def test_resolve_avd_spec_accepts_a_farm_files_avd(tmp_path: Path) -> None:
    images = REPO / "emulator_images"
    assert resolve_avd_spec("pixel6-api34").name == "phoneenv_pixel6_api34"  # the file stem, as in the farm file
    assert resolve_avd_spec("phoneenv_pixel4_api30_atd").api_level == 30  # the AVD name
    assert resolve_avd_spec(images / "pixel6-api34-playstore.yaml").tag == "google_apis_playstore"
    with pytest.raises(AvdSpecError, match=r"no AVD definition 'pixel9'.*phoneenv_pixel6_api34"):
        resolve_avd_spec("pixel9", images)


def test_restart_from_snapshot_keeps_the_serial(rig: Rig, adb_server) -> None:
    launcher = rig.launcher(adb=adb_server)
    put_snapshot(rig.avd, "fixture", {"phoneenv_marker": "fixture"})
    # 90 s: a deadline, not a timing; under a full suite on 2 cores adb took over 30 s to list the
    # restarted stand-in once (its log said "boot completed")
    emu = launcher.start(snapshot="fixture", boot_timeout=90, poll_interval=0.1)
    try:
        adb_server.device(emu.serial).shell(["settings", "put", "global", "phoneenv_marker", "dirty"])
        with pytest.raises(SnapshotNotFoundError, match="has no snapshot 'gone'"):
            launcher.restart(emu, snapshot="gone")
        assert emu.alive() and emu.stopped_by is None  # checked before anything was stopped
        fresh = restart_from_snapshot(emu, "fixture", boot_timeout=90, poll_interval=0.1)
    except BaseException:
        emu.stop()
        raise
    with fresh:
        assert emu.stopped_by == "console" and not emu.alive()
        assert fresh.pid != emu.pid and fresh.alive()
        assert (fresh.serial, fresh.ports) == (emu.serial, emu.ports)
        assert fresh.command[fresh.command.index("-snapshot") + 1] == "fixture"
        assert adb_server.device(fresh.serial).getprop("sys.boot_completed") == "1"
        assert global_setting(adb_server, fresh.serial, "phoneenv_marker") == "fixture"
        with pytest.raises(
            PortBusyError, match=f"{fresh.ports.console},{fresh.ports.adb} is locked by pid {os.getpid()}"
        ):
            rig.allocator.acquire(fresh.ports.console, wait_s=0.2)  # the lease went over to the new run
    with rig.allocator.allocate() as lease:  # released when the new run stopped
        assert lease.pair.console <= fresh.ports.console


def _emulators_on(serial: str) -> list[psutil.Process]:
    console = serial.removeprefix("emulator-")
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        argv = proc.info.get("cmdline") or []
        if "-ports" in argv and argv[argv.index("-ports") + 1].split(",")[0] == console:
            found.append(proc)
    return found


def test_restart_by_serial_of_an_emulator_another_process_started(rig: Rig, adb_server, runtime_dir, tmp_path) -> None:
    # The pool's case: the emulator was started by `phoneenv device emulator start` (which holds
    # the port lock and exits when its emulator dies); the pool knows only the serial and the AVD.
    put_snapshot(rig.avd, "fixture", {"phoneenv_marker": "fixture"})
    spec_file = tmp_path / "standin.yaml"
    spec_file.write_text(rig.spec.model_dump_json())
    env = rig.launcher().env
    env["PHONEENV_RUNTIME_DIR"] = str(runtime_dir)
    args = ["--adb-port", str(adb_server.port), "--first-port", str(LAUNCH_REGION[0]), "--last-port"]
    cli = subprocess.Popen(
        [sys.executable, "-c", "from phoneenv.cli import app; app()", "device", "emulator", "start", str(spec_file),
         "--snapshot", "fixture", "--read-only", *args, str(LAUNCH_REGION[1]), "--boot-timeout", "30"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    fresh, serial = None, "emulator-none"
    try:
        first = cli.stdout.readline()
        assert first.startswith("booted standin_api34 as emulator-"), first + cli.stdout.read()
        serial = first.split()[3]
        old_pid = next(p.pid for p in psutil.Process(cli.pid).children() if "-avd" in p.cmdline())
        adb_server.device(serial).shell(["settings", "put", "global", "phoneenv_marker", "dirty"])
        with pytest.raises(ValueError, match="not an emulator serial"):
            restart_from_snapshot("127.0.0.1:5555", launcher=rig.launcher(adb=adb_server))
        with pytest.raises(ValueError, match="needs the launcher or the AVD"):
            restart_from_snapshot(serial)
        fresh = restart_from_snapshot(
            serial,
            "fixture",
            launcher=rig.launcher(adb=adb_server),
            lock_wait_s=20,
            boot_timeout=BOOT_S,
            poll_interval=0.1,
        )
        assert fresh.serial == serial and fresh.pid != old_pid
        assert not psutil.pid_exists(old_pid) or psutil.Process(old_pid).status() == psutil.STATUS_ZOMBIE
        assert fresh.read_only and "-read-only" in fresh.command  # as the old one ran
        assert global_setting(adb_server, serial, "phoneenv_marker") == "fixture"
        out, _ = cli.communicate(timeout=30)
        assert cli.returncode == 0 and out.splitlines()[-1] == f"stopped {serial} (exited)", out
    finally:
        cli.kill()
        cli.wait(10)
        if fresh is not None:
            fresh.stop()
        for proc in _emulators_on(serial):
            proc.kill()  # an old emulator left running by a failed restart


# ----------------------------------------------------------------------------- real emulator


@pytest.mark.emulator
def test_real_emulator_boot_fixture_and_reset(tmp_path: Path) -> None:
    try:
        emulator = find_emulator()
    except EmulatorNotFoundError as exc:
        pytest.skip(f"no Android emulator on this machine: {exc}")
    path = os.environ.get("PHONEENV_TEST_AVD_SPEC", str(REPO / "emulator_images" / "pixel6-api34.yaml"))
    avd = load_avd_spec(path)
    if not (avd_home() / f"{avd.name}.ini").exists():
        pytest.skip(
            f"AVD {avd.name} does not exist in {avd_home()}; create it with "
            f"`python emulator_images/recipe.py create {path}`"
        )
    adb = shutil.which("adb")
    if adb is None:
        pytest.skip("adb is not installed")
    waiting.run([adb, "start-server"], check=True, capture_output=True, timeout=60)
    launcher = EmulatorLauncher(avd, emulator=emulator, log_dir=tmp_path)
    assert prepare_fixture(launcher, poll_interval=2.0).count(avd.fixture_snapshot) == 1
    with launcher.start(snapshot=avd.fixture_snapshot, poll_interval=2.0) as emu:
        device = emu.device()
        for key in ANIMATION_SETTINGS:
            assert device.shell(["settings", "get", "global", key]).strip() in ("0", "0.0")
        device.shell(["settings", "put", "global", "window_animation_scale", "1"])
        emu.load_snapshot()
        assert device.shell(["settings", "get", "global", "window_animation_scale"]).strip() in ("0", "0.0")
        with pytest.raises(SnapshotLoadError):
            emu.load_snapshot("phoneenv_never_saved")
    assert emu.stopped_by in ("console", "sigterm")
