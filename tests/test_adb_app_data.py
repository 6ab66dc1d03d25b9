"""App data on the device backends, through the real adb server to a virtual device: ``pm clear``,
per-app data snapshots (save, restore, verification, fallback to seeding) and logins restored
from a login snapshot.
"""

from __future__ import annotations

import io
import json
import logging
import tarfile
import time

import pytest

from phoneenv.contract import Fixtures, StateCriterion, TaskSpec, ToolCall

pytest.importorskip("adbutils", reason="the adb backend needs adbutils (pip install -e '.[device]')")
pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")

from phoneenv.backends.adb import AdbBackend, ResetError, check_package
from phoneenv.backends.sandbox import app_classes
from phoneenv.farm.virtual import APP_DATA_LABEL, DATA_DIR, VirtualDevice
from tests import waiting
from tests.test_adb_backend import _ran, compare, runnable

CLOCK = "com.google.android.deskclock"
CONTACTS = "com.android.contacts"
MAIL = "com.google.android.gm"
ACCOUNT = "ana@example.com"


def _sh(dev: VirtualDevice, line: str) -> tuple[str, str, int]:
    r = dev.shell(line, b"")
    return r.stdout.decode(), r.stderr.decode(), r.exit_code


def _clock_task() -> TaskSpec:
    return next(t for t in runnable() if t.template == "clock.alarm_off")


NO_ROOT_APPS = [a for a in app_classes() if a not in ("clock", "phone")]
"""The apps whose providers a phone without ``adb root`` can seed (DeskClock's alarms and blocked
numbers are not exported)."""


def _login_task(signed_in: bool, account: str = ACCOUNT, installed: list[str] | None = NO_ROOT_APPS) -> TaskSpec:
    return TaskSpec(
        id=f"test.login.{signed_in}",
        domain="contacts",
        goal="-",
        apps=["contacts", "mail"],
        fixtures=Fixtures(
            clock="2026-11-29T09:00:00",
            timezone="Europe/Berlin",
            installed_apps=installed,
            accounts={"mail": {"account": account, "signed_in": signed_in}},
        ),
        criteria=[StateCriterion(table="contacts.contacts", change="present", min=0)],
        reference_plan=[ToolCall(name="contacts.search", arguments={"query": "a"})],
    )


@pytest.fixture
def device(adb_server):
    """A virtual device with ``adb root`` (an emulator or userdebug image; DeskClock's provider is
    not exported, so its alarms need root anyway), adb-connected; yields (server, device,
    adbutils device)."""
    from tests.adb import served_device

    dev = VirtualDevice()
    with served_device(adb_server, dev) as (server, adb_dev):
        yield server, dev, adb_dev


@pytest.fixture
def phone(adb_server):
    """A virtual phone without ``adb root`` but with ``su`` (a rooted phone: Magisk's ``su -c``)."""
    from tests.adb import served_device

    dev = VirtualDevice(root=False, su=True)
    with served_device(adb_server, dev) as (server, adb_dev):
        yield server, dev, adb_dev


@pytest.fixture
def login_phone(adb_server):
    """A rooted phone (``su``, no ``adb root``) without DeskClock and the dialer, whose alarms and
    blocked-numbers providers need ``adb root``: the login tasks install every other app."""
    from tests.adb import served_device

    dev = VirtualDevice(root=False, su=True, missing_packages=[CLOCK, "com.google.android.dialer"])
    with served_device(adb_server, dev) as (server, adb_dev):
        yield server, dev, adb_dev


def _backend(adb_server, server, **kw) -> AdbBackend:
    kw.setdefault("set_device_clock", False)  # a phone without adb root keeps its own clock
    return AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=waiting.scaled(10), **kw)


# -- pm clear ----------------------------------------------------------------------------------------


def test_pm_clear_wipes_the_app_data_and_resets_runtime_permissions(adb_server, phone):
    server, dev, adb_dev = phone
    alarm = "content insert --uri content://com.google.android.deskclock/alarms --bind hour:i:7 --bind minutes:i:5"
    assert adb_dev.shell2(f"su -c '{alarm}'").returncode == 0  # DeskClock's provider is not exported
    dev.phone.state.insert("clock.timers", {"id": "tm_1", "label": "tea", "seconds": 180, "ends": None})
    assert adb_dev.shell2(f"pm grant {CONTACTS} android.permission.READ_CONTACTS").returncode == 0
    listing = adb_dev.shell2(f"su -c 'tar -czf /data/local/tmp/before.tgz -C {DATA_DIR} {CLOCK}'")
    assert listing.returncode == 0
    with tarfile.open(fileobj=io.BytesIO(dev.files.read("/data/local/tmp/before.tgz"))) as tar:
        names = tar.getnames()
    assert f"{CLOCK}/databases/alarms.json" in names and f"{CLOCK}/databases/timers.json" in names

    for pkg in (CLOCK, CONTACTS):
        res = adb_dev.shell2(f"pm clear {pkg}")
        assert (res.returncode, res.output) == (0, "Success\n")
    assert (
        "No result found."
        in adb_dev.shell2("su -c 'content query --uri content://com.google.android.deskclock/alarms'").output
    )
    assert dev.phone.state.table("clock.alarms") == {} and dev.phone.state.table("clock.timers") == {}
    # the data directory stays, empty and owned by the app
    stat = adb_dev.shell2(f"su -c 'stat -c \"%u %C\" {DATA_DIR}/{CLOCK}'").output
    assert stat == f"{dev.uids[CLOCK]} {APP_DATA_LABEL}\n"
    assert dev.files.listdir(f"{DATA_DIR}/{CLOCK}") == []
    dump = adb_dev.shell2(f"dumpsys package {CONTACTS}").output
    assert "android.permission.READ_CONTACTS: granted=false" in dump
    assert "granted=true" not in dump.split("runtime permissions:")[1]
    # the shell user cannot read app data; unknown packages fail as pm does
    assert "Permission denied" in adb_dev.shell2(f"cat {DATA_DIR}/{CLOCK}/databases/alarms.json").output
    assert adb_dev.shell2("pm clear com.example.absent").returncode == 1


def test_reset_clears_app_private_state_no_mapping_reads(adb_server, device):
    """A reset wipes an app whose own data holds mapped tables (DeskClock) before seeding, so
    state no driver can read (a running timer) does not leak into the next episode."""
    server, dev, _ = device
    task = _clock_task()
    backend = _backend(adb_server, server, app_snapshots=False)
    dev.phone.state.insert("clock.timers", {"id": "tm_9", "label": "stale", "seconds": 60, "ends": None})
    backend.shell.record = True
    backend.reset(task)
    assert ["pm", "clear", CLOCK] in backend.shell.sent
    assert dev.phone.state.table("clock.timers") == {}
    assert backend.last_reset["how"] == "seeded"
    expected, _, _ = backend.expected_tables(task)
    assert backend.read_all()["clock.alarms"] == expected["clock.alarms"]


# -- per-app data snapshots ----------------------------------------------------------------------------


def test_app_snapshot_round_trip_restores_a_corrupted_app(adb_server, device, tmp_path):
    server, dev, adb_dev = device
    task = _clock_task()
    backend = _backend(adb_server, server)  # kind="device", no console: app snapshots on
    expected, _, _ = backend.expected_tables(task)
    t0 = time.perf_counter()
    backend.reset(task)
    seeded_s = time.perf_counter() - t0
    assert backend.last_reset["how"] == "seeded"
    archive = f"/data/local/tmp/phoneenv/{backend.snapshot_name(task).removeprefix('phoneenv-')}/{CLOCK}.tgz"
    local = tmp_path / "clock.tgz"
    adb_dev.sync.pull(archive, local)  # a real gzip tar, as `adb pull` fetches it
    with tarfile.open(local, "r:gz") as tar:
        info = tar.getmember(f"{CLOCK}/databases/alarms.json")
        saved = json.loads(tar.extractfile(info).read())
    assert (info.uid, info.gid, info.uname) == (dev.uids[CLOCK], dev.uids[CLOCK], f"u0_a{dev.uids[CLOCK] - 10000}")
    assert {r["id"]: {**r, "days": tuple(r["days"])} for r in saved} == expected["clock.alarms"]

    # corrupt the app: an alarm deleted, one changed, a stray timer, a garbage file of its own
    _sh(dev, "su -c 'content delete --uri content://com.google.android.deskclock/alarms --where _id=1'")
    _sh(
        dev, "su -c 'content update --uri content://com.google.android.deskclock/alarms --bind label:s:x --where _id=2'"
    )
    dev.phone.state.insert("clock.timers", {"id": "tm_1", "label": "stray", "seconds": 5, "ends": None})
    _sh(dev, f"su -c 'echo junk > {DATA_DIR}/{CLOCK}/databases/junk.db'")
    assert backend.read_all()["clock.alarms"] != expected["clock.alarms"]

    backend.shell.record = True
    t0 = time.perf_counter()
    backend.reset(task)
    restored_s = time.perf_counter() - t0
    assert backend.last_reset["how"] == "app_snapshots"
    sent = backend.shell.sent
    uid = dev.uids[CLOCK]
    for cmd in (
        ["am", "force-stop", CLOCK],
        ["pm", "clear", CLOCK],
        ["tar", "-xzf", archive, "-C", "/data/data"],  # adb root: no su needed
        ["chown", "-R", f"{uid}:{uid}", f"/data/data/{CLOCK}"],
        ["restorecon", "-R", f"/data/data/{CLOCK}"],
    ):
        assert cmd in sent
    # the alarms came back from the archive, not from content inserts
    assert not any(
        c[:4] == ["content", "insert", "--uri", "content://com.google.android.deskclock/alarms"] for c in sent
    )
    assert dev.phone.state.table("clock.alarms") == {k: v for k, v in expected["clock.alarms"].items()}
    assert dev.phone.state.table("clock.timers") == {}
    assert not dev.files.exists(f"{DATA_DIR}/{CLOCK}/databases/junk.db")
    assert _sh(dev, f"su -c 'stat -c %u:%g:%C {DATA_DIR}/{CLOCK}/databases/alarms.json'")[0] == (
        f"{uid}:{uid}:{APP_DATA_LABEL}\n"
    )
    logging.getLogger(__name__).info(
        "reset seeded %.1f ms, from app snapshots %.1f ms", seeded_s * 1e3, restored_s * 1e3
    )


def test_a_restore_that_fails_falls_back_to_seeding(adb_server, device, caplog):
    server, dev, _ = device
    task = _clock_task()
    backend = _backend(adb_server, server)
    expected, _, _ = backend.expected_tables(task)
    backend.reset(task)
    digest = backend.snapshot_name(task).removeprefix("phoneenv-")
    archive = f"/data/local/tmp/phoneenv/{digest}/{CLOCK}.tgz"
    good = dev.files.read(archive)

    # a bad archive: tar -xzf fails on the device, the reset seeds and says why
    dev.files.write(archive, b"not a gzip archive", 0o600, 0)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="phoneenv.backends.adb"):
        backend.reset(task)
    assert backend.last_reset["how"] == "seeded"
    assert any(
        "seeding instead" in r.getMessage() and "not a gzip tar archive" in r.getMessage() for r in caplog.records
    )
    assert backend.read_all()["clock.alarms"] == expected["clock.alarms"]

    # a stale uid (dumpsys names another uid than the app runs as): chown gives the files to the
    # wrong user, the app cannot open its database, verification fails, the reset seeds
    dev.files.write(archive, good, 0o600, 0)
    real = dev._package_dump
    dev._package_dump = lambda app: real(app).replace(f"userId={dev.uids[CLOCK]}", "userId=10999")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="phoneenv.backends.adb"):
        backend.reset(task)
    assert backend.last_reset["how"] == "seeded"
    assert any("seeding instead" in r.getMessage() and "SQLITE_CANTOPEN" in r.getMessage() for r in caplog.records)
    assert backend.read_all()["clock.alarms"] == expected["clock.alarms"]
    assert _sh(dev, f"su -c 'stat -c %u {DATA_DIR}/{CLOCK}'")[0] == f"{dev.uids[CLOCK]}\n"


# -- logins ------------------------------------------------------------------------------------------


def _sign_in_by_hand(dev: VirtualDevice, account: str = ACCOUNT) -> None:
    """What a person signing in through the app's UI leaves: the app's session in its data."""
    dev.phone.state.update("system.accounts", "mail", account=account, signed_in=True)


def test_login_snapshots_sign_in_and_out(adb_server, login_phone, tmp_path):
    server, dev, _ = login_phone
    logins = tmp_path / "logins"
    backend = _backend(adb_server, server, login_snapshots=logins)
    _sign_in_by_hand(dev)
    backend.capture_login("mail", ACCOUNT, logins)
    meta = json.loads((logins / f"{MAIL}.json").read_text())
    assert meta == {"app": "mail", "package": MAIL, "account": ACCOUNT, "markers": ["shared_prefs/account.xml"]}
    with tarfile.open(logins / f"{MAIL}.tgz", "r:gz") as tar:
        prefs = tar.extractfile(f"{MAIL}/shared_prefs/account.xml").read().decode()
    assert f'<string name="account">{ACCOUNT}</string>' in prefs and 'value="true"' in prefs

    _sh(dev, f"pm clear {MAIL}")  # signed out again
    assert dev.phone.state.get("system.accounts", "mail")["signed_in"] is False
    backend.shell.record = True
    backend.reset(_login_task(signed_in=True))
    uid = dev.uids[MAIL]
    remote = f"/data/local/tmp/phoneenv/logins/{MAIL}.tgz"
    for cmd in (
        ["pm", "clear", MAIL],
        ["su", "-c", f"tar -xzf {remote} -C /data/data"],  # no adb root: through su
        ["su", "-c", f"chown -R {uid}:{uid} /data/data/{MAIL}"],
        ["su", "-c", f"restorecon -R /data/data/{MAIL}"],
    ):
        assert cmd in backend.shell.sent
    acc = dev.phone.state.get("system.accounts", "mail")
    assert (acc["account"], acc["signed_in"]) == (ACCOUNT, True)
    assert _sh(dev, f"su -c 'stat -c %u {DATA_DIR}/{MAIL}/shared_prefs/account.xml'")[0] == f"{dev.uids[MAIL]}\n"

    backend.reset(_login_task(signed_in=False))
    assert dev.phone.state.get("system.accounts", "mail")["signed_in"] is False
    assert not dev.files.exists(f"{DATA_DIR}/{MAIL}/shared_prefs/account.xml")
    assert backend._verify_logins(backend.login_fixtures(_login_task(signed_in=False), ["contacts", "mail"])) == []
    # verification reads the session back: a device that stays signed in fails the reset
    dev._pm_real = dev._pm

    def keeps_session(inv):
        return 0 if inv.argv[1:] == ["clear", MAIL] else dev._pm_real(inv)

    _sign_in_by_hand(dev)
    dev._sh.commands["pm"] = keeps_session
    with pytest.raises(ResetError, match=r"login mail: expected signed out"):
        backend.reset(_login_task(signed_in=False))


def test_a_missing_or_foreign_login_snapshot_fails_loudly(adb_server, login_phone, tmp_path):
    server, dev, _ = login_phone
    backend = _backend(adb_server, server, login_snapshots=tmp_path / "none")
    with pytest.raises(ResetError, match=r"no login snapshot for mail signed in as ana@example.com: .*"
                       r"phoneenv device capture-login --app mail --account ana@example.com --serial "):  # fmt: skip
        backend.reset(_login_task(signed_in=True))
    _sign_in_by_hand(dev, "bob@example.com")
    backend.capture_login("mail", "bob@example.com", tmp_path / "none")
    with pytest.raises(ResetError, match=r"signed in as 'bob@example.com', not 'ana@example.com'"):
        backend.reset(_login_task(signed_in=True))
    _sh(dev, f"pm clear {MAIL}")
    with pytest.raises(ValueError, match=r"no file in com\.google\.android\.gm's data names"):
        backend.capture_login("mail", ACCOUNT, tmp_path / "x")


# -- hostile names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["com.x;reboot", "com.x $(reboot)", "../../system", "com.x\nreboot", "com", "1com.x", "com.x`id`", ""]
)
def test_hostile_package_names_are_refused(name):
    with pytest.raises(ValueError, match="not an Android package name"):
        check_package(name)


def test_hostile_paths_and_accounts_run_no_extra_command(adb_server, device, tmp_path, monkeypatch):
    server, dev, _ = device
    hostile = "/data/local/tmp/a b;reboot $(reboot) `reboot` 'q\"|reboot"
    account = "x'; reboot; echo '$(reboot)"
    backend = _backend(adb_server, server, snapshot_dir=hostile, login_snapshots=tmp_path)
    since = len(dev.command_log)
    task = _clock_task()
    backend.reset(task)
    backend.reset(task)
    assert backend.last_reset["how"] == "app_snapshots"
    _sign_in_by_hand(dev, account)
    backend.capture_login("mail", account, tmp_path)
    backend.reset(_login_task(signed_in=True, account=account, installed=None))
    assert dev.phone.state.get("system.accounts", "mail")["account"] == account
    ran = _ran(dev, since)
    assert not any(c[0] == "reboot" or (c[:1] == ["id"] and len(c) == 1) for c in ran)
    assert dev.reboots == []
    assert dev.files.exists(f"{hostile}/logins/{MAIL}.tgz")
    with pytest.raises(ValueError, match=r"must be an absolute device path"):
        _backend(adb_server, server, snapshot_dir="relative/dir")
    from apps.clock import Clock

    monkeypatch.setattr(Clock, "package", "com.x;reboot")
    with pytest.raises(ValueError, match="not an Android package name"):
        backend.private_apps(["clock"])


# -- the verdicts with app snapshots on ----------------------------------------------------------------


def test_reference_verdicts_match_the_sandbox_with_app_snapshots(adb_server, tmp_path):
    """Clock tasks (the app whose own data holds mapped tables) twice: seeded, then restored from
    the app data snapshots; the verdicts and feedback equal the sandbox's both times."""
    from tests.adb import served_device

    tasks = [t for t in runnable() if "clock" in t.apps][:12:4]
    with served_device(adb_server, VirtualDevice()) as (server, _):
        backend = AdbBackend(
            serial=server.serial, adb_port=adb_server.port, timeout_s=waiting.scaled(10), app_snapshots=True
        )
        assert compare(tasks, backend, tmp_path / "first") == []
        assert compare(tasks, backend, tmp_path / "second") == []
        assert backend.last_reset["how"] == "app_snapshots"


def test_capture_login_command(adb_server, login_phone, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from phoneenv.cli.device import device_app

    server, dev, _ = login_phone
    args = ["capture-login", "--app", "mail", "--account", ACCOUNT, "--out", str(tmp_path)]
    args += ["--serial", server.serial, "--adb-port", str(adb_server.port)]
    res = CliRunner().invoke(device_app, args)
    assert res.exit_code == 1 and "no file in com.google.android.gm's data names" in res.output
    _sign_in_by_hand(dev)
    res = CliRunner().invoke(device_app, args)
    assert res.exit_code == 0, res.output
    assert "saved" in res.output and (tmp_path / f"{MAIL}.tgz").is_file()
    assert json.loads((tmp_path / f"{MAIL}.json").read_text())["account"] == ACCOUNT
    res = CliRunner().invoke(device_app, [*args[:2], "nosuchapp", *args[3:]])
    assert res.exit_code == 1 and "unknown app 'nosuchapp'" in res.output
