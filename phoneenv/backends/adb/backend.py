"""The backend facade: :class:`AdbBackend`, a :class:`~phoneenv.backends.base.PhoneBackend`
that runs the sandbox apps' tools on a device (its table reads and writes in
:class:`~phoneenv.backends.adb.tables.TableIO`, its app data and logins in
:class:`~phoneenv.backends.adb.appdata.AppData`), resets it to a task's fixtures and verifies
them, and turns device faults into feedback (the package docstring of
:mod:`phoneenv.backends.adb` says how)."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import io
import json
import logging
import os
import posixpath
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo

import numpy as np

from phoneenv.app import App
from phoneenv.backends.adb.appdata import AppData
from phoneenv.backends.adb.faults import DeviceFault, ReadFault, ResetError
from phoneenv.backends.adb.shell import (
    DeviceShell,
    Reader,
    const_reader,
    gather,
)
from phoneenv.backends.adb.state import DevicePhone, DeviceState
from phoneenv.backends.adb.tables import TableIO, norm_table
from phoneenv.backends.base import PhoneBackend
from phoneenv.contract import Feedback, StateCriterion, TaskSpec
from phoneenv.farm import android as A
from phoneenv.harness import feedback
from phoneenv.phone import app_classes, build_fixture_state
from phoneenv.tools import ToolDef

__all__ = ["CLOCK_TOLERANCE_S", "ENV_TOOLS", "AdbBackend"]

log = logging.getLogger(__name__)
T = TypeVar("T")

ENV_TOOLS = frozenset({"finish", "user.confirm", "skills.read", "agent.delegate"})
"""Tools the env serves itself (not the backend); ``memory.*`` too."""
CLOCK_TOLERANCE_S = 10
"""How far (seconds) the device clock may be from the fixture clock when a reset verifies it: the
clock is set last, and a real device's keeps running while the tables are read back."""


# ---------------------------------------------------------------------------------------------
# The backend
# ---------------------------------------------------------------------------------------------


class AdbBackend(TableIO, AppData, PhoneBackend):
    """The sandbox apps' tools on an Android device or emulator over adb (module docstring).

    Args:
        serial: the device (``emulator-5554``, ``127.0.0.1:5555``, a phone's serial); default
            ``$ANDROID_SERIAL``, else the only device the adb server lists.
        adb_host: the adb server's address (default ``$ANDROID_ADB_SERVER_ADDRESS``, or
            ``$ANDROID_ADB_SERVER_HOST``, or 127.0.0.1).
        adb_port: the adb server's port (default ``$ANDROID_ADB_SERVER_PORT`` or 5037).
        kind: ``"emulator"`` or ``"device"`` (the backend's name in traces).
        timeout_s: seconds one adb round trip may take (longer is a ``timeout`` fault).
        set_device_clock: set the device's clock and timezone to the fixture's at reset (needs
            ``adb root``); False keeps the device's and checks nothing about them (the episode
            clock, which tools use, still starts at the fixture's).
        screen_size: (width, height) in pixels that screenshots are scaled to (the env's
            observation space).
        console: a snapshot console (:mod:`phoneenv.farm.console`) to save and load verified
            fixture states; ``"auto"`` uses ``adb emu`` for ``emulator-N`` serials, None never.
        console_port: the console's TCP port for a direct connection (containers, virtual devices).
        console_token: that console's auth token.
        app_snapshots: save each verified fixture state's private app data (the apps of
            :meth:`private_apps` and signed-in logins) as ``tar -czf`` archives under
            ``snapshot_dir`` on the device, and restore them at later resets (``am force-stop``,
            ``pm clear``, ``tar -xzf``, ``chown -R`` to the app's uid from ``dumpsys package``,
            ``restorecon -R``), then verify as after seeding; a failed restore falls back to
            seeding (logged). Needs root (``adb root``, or ``su -c`` on a rooted phone). Default
            (None): on for ``kind="device"`` without a console (phones), off for emulators and
            wherever console snapshots exist.
        snapshot_dir: the device folder for those archives (``<digest>/<package>.tgz``) and for
            pushed login snapshots (``logins/<package>.tgz``).
        login_snapshots: the host folder of login snapshots (``<package>.tgz`` + ``.json``, made by
            ``phoneenv device capture-login``); default ``$PHONEENV_LOGIN_SNAPSHOTS``.

    Raises (at the first reset, not at construction): :class:`DeviceFault` when no device
    answers; :class:`ResetError` when the device cannot be put in a task's fixture state.
    """

    def __init__(
        self,
        serial: str | None = None,
        *,
        adb_host: str | None = None,
        adb_port: int | None = None,
        kind: Literal["emulator", "device"] = "device",
        timeout_s: float = 30.0,
        set_device_clock: bool = True,
        screen_size: tuple[int, int] = (360, 640),
        console: Any = "auto",
        console_port: int | None = None,
        console_token: str | None = None,
        app_snapshots: bool | None = None,
        snapshot_dir: str = "/data/local/tmp/phoneenv",
        login_snapshots: str | os.PathLike[str] | None = None,
    ) -> None:
        if kind not in ("emulator", "device"):
            raise ValueError(f"kind must be 'emulator' or 'device', not {kind!r}")
        if not snapshot_dir.startswith("/") or any(c in snapshot_dir for c in "\0\n"):
            raise ValueError(f"snapshot_dir must be an absolute device path, not {snapshot_dir!r}")
        self.app_snapshots = app_snapshots
        self.snapshot_dir = posixpath.normpath(snapshot_dir)
        self.login_snapshots = login_snapshots or os.environ.get("PHONEENV_LOGIN_SNAPSHOTS") or None
        self._root: bool | None = None
        self._app_snaps: set[tuple[str, str]] = set()
        self._probed: set[str] = set()
        self._pushed: set[tuple[str, str]] = set()
        self._null_columns: dict[tuple[str, str | None], tuple[str, ...]] = {}
        self.name = kind
        self.serial = serial or os.environ.get("ANDROID_SERIAL") or None
        self.adb_host = (
            adb_host
            or os.environ.get("ANDROID_ADB_SERVER_ADDRESS")
            or os.environ.get("ANDROID_ADB_SERVER_HOST")
            or "127.0.0.1"
        )
        self.adb_port = int(adb_port or os.environ.get("ANDROID_ADB_SERVER_PORT") or 5037)
        self.timeout_s = timeout_s
        self.set_device_clock = set_device_clock
        self.screen_size = screen_size
        self._console_arg = console
        self._console_port = console_port
        self._console_token = console_token
        self._console: Any = None
        self._classes: dict[str, type[App]] = dict(app_classes())
        self._drivers: dict[str, A.AndroidDriver] = {
            name: cls.android for name, cls in self._classes.items() if cls.android is not None
        }
        self._shell: DeviceShell | None = None
        self.state = DeviceState(self)
        self.phone = DevicePhone(self._classes, self.state)
        self.phone.screen_size = screen_size
        self._installed: tuple[str, ...] = tuple(self._drivers)
        self._tools = self._tools_for(self._installed)
        self._front: str | None = None
        self._suspect = False
        self._snapshots_ok: set[str] = set()
        self._fault: str | None = None
        self._last_tables: dict[str, dict[str, dict[str, Any]]] = {}
        self.last_reset: dict[str, Any] = {}
        """How the last reset went: ``task``, ``how`` (``seeded``, ``snapshot`` or ``app_snapshots``),
        ``seconds``."""

    def _tools_for(self, installed: Sequence[str]) -> dict[str, ToolDef]:
        """The tools of the installed apps that their drivers offer on a device, by name."""
        return {
            td.spec.name: td
            for app in sorted(installed)
            if app in self._drivers
            for td in self._classes[app].tool_defs()
            if td.spec.name in self._drivers[app].tools
        }

    def can_run(self, task: TaskSpec) -> bool:
        """Whether ``task`` runs faithfully here: it runs on the sandbox (not an LLM-simulated
        app), has a reference plan whose every tool has a driver, installs every app (the
        device cannot hide one), seeds no read-only table, and its criteria, milestones and
        allowed changes name only mapped tables (and mapped settings keys). See :meth:`why_not`."""
        return self.why_not(task) is None

    def why_not(self, task: TaskSpec) -> str | None:
        """Why ``task`` does not run faithfully here, naming the tool, app, table or settings key
        in the way (``"tool clock.set_timer has no device driver"``); None when it does
        (:meth:`can_run`)."""
        if not ({"sandbox", self.name} & set(task.backends)):
            return f"it runs on {', '.join(task.backends)}, not the sandbox or a device"
        if not task.reference_plan:
            return "no reference plan"
        if task.fixtures.installed_apps is not None:
            hidden = sorted(set(self._drivers) - set(task.fixtures.installed_apps))
            if hidden:
                return f"it leaves out apps a device cannot hide: {', '.join(hidden)}"
        offered = {name for d in self._drivers.values() for name in d.tools}
        for call in task.reference_plan:
            app = call.name.split(".", 1)[0]
            if call.name in ENV_TOOLS or (app == "memory" and app not in self._classes):
                continue
            if call.name not in offered:
                return f"tool {call.name} has no device driver"
        mapped = self.mapped_tables()
        for table, rows in task.fixtures.records.items():
            spec = mapped.get(table)
            if spec is not None and rows and not isinstance(spec.mapping, (A.ProviderTable, A.SettingsTable)):
                return f"it seeds table {table}, which the device can only read"
        selectors: list[Any] = [c for c in (*task.criteria, *task.milestones) if isinstance(c, StateCriterion)]
        selectors += list(task.allowed_changes)
        for sel in selectors:
            spec = mapped.get(sel.table)
            if spec is None:
                return f"table {sel.table} (in its criteria) is not mapped to the device"
            if isinstance(spec.mapping, A.SettingsTable):
                key = sel.where.get("id")
                keys = key.get("in", []) if isinstance(key, dict) else [key]
                missing = [k for k in keys if k not in spec.mapping.keys]
                if key is not None and missing:
                    return f"settings key {missing[0]} (in its criteria) is not mapped to the device"
        return None

    # -- device ----------------------------------------------------------------------------------
    @property
    def shell(self) -> DeviceShell:
        """The device's shell (chosen at first use: ``serial``, or the only device listed)."""
        if self._shell is None:
            serial = self.serial
            if serial is None:
                probe = DeviceShell("?", self.adb_host, self.adb_port, self.timeout_s)
                try:
                    listed = [d.serial for d in probe.client.list() if d.state == "device"]
                except Exception as exc:
                    raise probe._fault(exc) from exc
                if len(listed) != 1:
                    raise DeviceFault(
                        f"pass serial= (or set ANDROID_SERIAL): the adb server on {self.adb_host}:{self.adb_port} "
                        f"lists {len(listed)} devices {listed}"
                    )
                serial = self.serial = listed[0]
            self._shell = DeviceShell(serial, self.adb_host, self.adb_port, self.timeout_s)
        return self._shell

    def _recover(self) -> None:
        if self._suspect:
            self._suspect = False
            self.shell.reconnect()

    # -- lifecycle -------------------------------------------------------------------------------
    def expected_tables(
        self, task: TaskSpec
    ) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, Any], tuple[str, ...]]:
        """The fixture state of ``task`` restricted to the mapped tables (and mapped settings
        keys): (tables, meta, installed apps), built by the sandbox's own
        :func:`~phoneenv.phone.build_fixture_state`."""
        snap, installed = build_fixture_state(task.fixtures, self._classes)
        mapped = self.mapped_tables()
        tables: dict[str, dict[str, dict[str, Any]]] = {}
        for name, spec in mapped.items():
            if spec.app not in installed and not isinstance(spec.mapping, (A.PermissionTable, A.PackageTable)):
                continue
            tbl = snap.tables.get(name, {})
            if isinstance(spec.mapping, A.SettingsTable):
                tbl = {k: v for k, v in tbl.items() if k in spec.mapping.keys}
            if isinstance(spec.mapping, A.CallStateTable):
                tbl = {}
            tables[name] = norm_table(tbl)
        return tables, snap.meta, installed

    def _clock_commands(self, now: float, tz_name: str) -> list[list[str]]:
        """Commands that stop network time and set the timezone (``setprop``) and, last, the clock
        (toybox ``date -u MMDDhhmmYYYY.ss``); both need root."""
        utc = dt.datetime.fromtimestamp(now, dt.timezone.utc)
        return [
            ["settings", "put", "global", "auto_time", "0"],
            ["settings", "put", "global", "auto_time_zone", "0"],
            ["setprop", "persist.sys.timezone", tz_name],
            ["date", "-u", utc.strftime("%m%d%H%M%Y.%S")],
        ]

    def _verify(
        self,
        expected: Mapping[str, Mapping[str, Mapping[str, Any]]],
        now: float,
        tz_name: str,
        check_clock: bool = True,
        *,
        logins: Mapping[str, tuple[str, str | None, bool]] | None = None,
        writes: Sequence[Sequence[str]] = (),
    ) -> list[str]:
        """What differs between the device and ``expected`` (empty when they agree); with
        ``check_clock``, also the device clock (within :data:`CLOCK_TOLERANCE_S` of ``now``, as a
        real device's runs while it is read) and timezone; with ``logins``, also the login
        fixtures (:meth:`_verify_logins`). ``writes`` are applied first, in the round trip of the
        reads when they fit (:meth:`DeviceShell.apply`): a failing write raises
        :class:`DeviceFault`, a failing read :class:`ReadFault`."""
        diffs: list[str] = []
        clock = self.set_device_clock and check_clock
        readers: list[Reader[Any]] = [self._all_reader(), self._logins_reader(logins or {})]
        if clock:
            readers.append(self._sections_reader([["date", "+%s"], ["getprop", "persist.sys.timezone"]]))
        self.state.begin_call()
        try:
            actual, login_diffs, *rest = self._run(gather(readers), writes)
        finally:
            self.state.end_call()
        for name, want in expected.items():
            have = norm_table(actual.get(name, {}))
            for rid in sorted(set(want) | set(have)):
                if want.get(rid) != have.get(rid):
                    diffs.append(f"{name}/{rid}: expected {want.get(rid)!r}, device has {have.get(rid)!r}")
        if clock:
            [secs] = rest
            try:
                device_now = int(secs[0].out.strip())
            except ValueError:
                device_now = None
            if device_now is None or abs(device_now - now) > CLOCK_TOLERANCE_S:
                diffs.append(f"clock: expected {int(now)}, device has {secs[0].out.strip()!r}")
            if secs[1].out.strip() != tz_name:
                diffs.append(f"timezone: expected {tz_name}, device has {secs[1].out.strip()!r}")
        if not diffs:
            self.state.remember(actual)
        return diffs + login_diffs

    def _console_for(self) -> Any:
        if self._console is None and self._console_arg is not None:
            if self._console_arg != "auto":
                self._console = self._console_arg
            else:
                from phoneenv.farm.console import console_for_serial

                serial = self.shell.serial
                if self._console_port is not None or serial.startswith("emulator-"):
                    try:
                        self._console = console_for_serial(
                            serial, console_port=self._console_port, token=self._console_token, timeout=self.timeout_s
                        )
                    except (OSError, ValueError) as exc:  # no adb binary for `adb emu`, a bad token path
                        log.warning("no console for %s (%s): resets will re-seed", serial, exc)
                        self._console_arg = None
        return self._console

    @staticmethod
    def snapshot_name(task: TaskSpec) -> str:
        """The console snapshot a verified fixture state of ``task`` is saved as:
        ``phoneenv-`` and 16 hex digits of SHA-256 over the fixtures (vault left out), so tasks
        with equal fixtures share it."""
        return f"phoneenv-{_fixtures_digest(task)}"

    def reset(self, task: TaskSpec) -> None:
        """Put the device in ``task``'s fixture state and verify it (module docstring).

        Round trips: one for what the reset needs to know (``pm list packages``, and where they
        apply the app data archives' ``stat`` and the packages' uids), then the writes in as many
        as :data:`MAX_SCRIPT_BYTES` allows, the verification's reads riding in the last of them
        (one more when a text column reads ``NULL`` where it did not at the last read), and after
        a first seeding one to save the snapshots.

        Raises :class:`ResetError` naming what differs when the device will not take the
        fixtures (a missing package, a refused permission, a provider it lacks), and
        :class:`DeviceFault` when the device does not answer.
        """
        import time

        t0 = time.perf_counter()
        expected, meta, installed = self.expected_tables(task)
        tz_name = task.fixtures.timezone
        self.phone.tz = ZoneInfo(tz_name)
        self.phone.fixtures = task.fixtures
        self.state.end_call()
        self.state.meta = {"now": meta["now"], "seq": dict(meta["seq"]), "view": None, "foreground": "launcher"}
        if tuple(installed) != self._installed:
            self._installed = tuple(installed)
            self._tools = self._tools_for(installed)
        self._front = None
        self._fault = None
        self._recover()
        missing = [a for a in installed if a in self._drivers]
        logins = self.login_fixtures(task, installed)
        missing += [a for a in logins if a not in missing]
        name = self.snapshot_name(task)
        console = self._console_for()
        private = self.private_apps(installed)
        private_pkgs = [self._classes[a].package for a in private]
        snap_pkgs = sorted({*private_pkgs, *(pkg for pkg, _, on in logins.values() if on)})
        digest = _fixtures_digest(task)
        use_app = self.app_snapshots if self.app_snapshots is not None else self.name == "device" and console is None
        use_app = bool(use_app and snap_pkgs)
        # what the reset needs to know, in one round trip: the packages, whether the app data
        # archives exist (once per digest) and, when they will be restored, the packages' uids
        login_pkgs = sorted(pkg for pkg, _, on in logins.values() if on)
        uid_pkgs = sorted(
            {*login_pkgs, *(snap_pkgs if use_app and self._app_snapshots_known(digest, snap_pkgs) else [])}
        )
        pkgs, ready, uids = self._run(
            gather(
                [
                    self._packages_reader(),
                    self._app_snapshots_reader(digest, snap_pkgs) if use_app else const_reader(False),
                    self._uids_reader(uid_pkgs),
                ]
            )
        )
        absent = [f"{a} ({self._classes[a].package})" for a in missing if self._classes[a].package not in pkgs]
        if absent:
            raise ResetError(f"device {self.shell.serial} lacks the apps the task installs: {', '.join(absent)}")
        how = "seeded"
        clock = self._clock_commands(meta["now"], tz_name) if self.set_device_clock else []
        diffs: list[str] | None = None
        if console is not None and name in self._snapshots_ok:
            try:
                console.snapshot_load(name)
                self._suspect = True
                self._recover()
                diffs = self._verify(expected, meta["now"], tz_name, logins=logins, writes=clock)
                how = "snapshot"
            except Exception as exc:  # a failed load falls back to seeding, verified below
                log.warning("snapshot %s did not load on %s (%s); seeding instead", name, self.shell.serial, exc)
                diffs = None
        if (diffs is None or diffs) and use_app and ready:
            try:
                if not set(snap_pkgs) <= set(uids):
                    uids = {**uids, **self._run(self._uids_reader(snap_pkgs))}
                known = self._checked_uids(snap_pkgs, uids)
                cmds = list(clock[:-1])
                for pkg in snap_pkgs:
                    cmds += self._restore_commands(pkg, self._archive(digest, pkg), known[pkg])
                cmds += [c for a, (pkg, _, on) in logins.items() if not on for c in (["pm", "clear", pkg],)]
                own = {f"{a}.{t}" for a in private for t in self._drivers[a].tables}
                rest = {k: v for k, v in expected.items() if k not in own}
                cmds += self._seed_commands(rest, self.phone.tz) + clock[-1:]
                diffs = self._verify(expected, meta["now"], tz_name, logins=logins, writes=cmds)
                how = "app_snapshots"
                if diffs:
                    log.warning(
                        "the app data snapshots %s of %s did not restore on %s (%s); seeding instead",
                        digest, ", ".join(snap_pkgs), self.shell.serial, "; ".join(diffs[:3]),
                    )  # fmt: skip
            except DeviceFault as exc:
                log.warning(
                    "restoring the app data snapshots %s of %s failed on %s (%s); seeding instead",
                    digest, ", ".join(snap_pkgs), self.shell.serial, exc.detail,
                )  # fmt: skip
                diffs = None
        if diffs is None or diffs:
            how = "seeded"
            try:
                # timezone first, clock last (so verification finds it fresh): see _clock_commands;
                # apps whose own data holds mapped tables are wiped first, logins restored after
                clears = [c for pkg in private_pkgs for c in (["am", "force-stop", pkg], ["pm", "clear", pkg])]
                login = self._login_commands(logins, uids)
                writes = clock[:-1] + clears + login + self._seed_commands(expected, self.phone.tz) + clock[-1:]
                diffs = self._verify(expected, meta["now"], tz_name, logins=logins, writes=writes)
            except ReadFault:
                raise
            except DeviceFault as exc:
                raise ResetError(f"device {self.shell.serial} refused the fixtures of {task.id}: {exc.detail}") from exc
            if diffs:
                raise ResetError(
                    f"device {self.shell.serial} is not in the fixture state of {task.id} after reset "
                    f"({len(diffs)} differences): " + "; ".join(diffs[:5])
                )
            if console is not None:
                try:
                    console.snapshot_save(name)
                    self._snapshots_ok.add(name)
                except Exception as exc:
                    log.warning("could not save snapshot %s on %s: %s", name, self.shell.serial, exc)
            if use_app:
                self._save_app_snapshots(digest, snap_pkgs)
        self.last_reset = {"task": task.id, "how": how, "seconds": time.perf_counter() - t0}

    @contextlib.contextmanager
    def _session(self) -> Iterator[None]:
        """A call's device reads are cached for it alone (:meth:`DeviceState.begin_call`), after
        reconnecting a device that failed before."""
        self.state.begin_call()
        try:
            self._recover()
            yield
        finally:
            self.state.end_call()

    def _ran(self) -> None:
        """Bring the app now in the foreground to the device's front."""
        self._show(self.state.meta.get("foreground"))

    def _failed(self, name: str, exc: Exception) -> Feedback:
        """Device faults are ``device_error`` / ``timeout`` feedback, a value the driver cannot
        read ``device_error`` (both logged as warnings); anything else ``internal_error``."""
        if isinstance(exc, DeviceFault):
            self._suspect = True
            log.warning("%s on %s: %s", name, self.serial, exc.detail)
            return exc.feedback()
        if isinstance(exc, A.MappingError):
            log.warning("%s on %s: %s", name, self.serial, exc)
            app = name.split(".", 1)[0]
            return feedback.device_error(f"the device holds something the {app} driver cannot read: {exc}")
        return super()._failed(name, exc)

    def _show(self, app: str | None) -> None:
        """Bring ``app`` to the front as the sandbox does (its launcher activity), once per change."""
        if app is None or app == self._front or app not in self._classes or self._classes[app].system:
            return
        pkg = self._classes[app].package
        try:
            self.shell.run(
                "am", "start", "-a", "android.intent.action.MAIN", "-c", "android.intent.category.LAUNCHER", pkg
            )
            self._front = app
        except DeviceFault as exc:
            if "failed on" not in exc.detail:
                raise
            log.warning("could not bring %s to the front: %s", pkg, exc.detail)

    def snapshot(self) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, Any]]:
        """The device's mapped tables and the episode meta, as read now."""
        return self.read_all(), json.loads(json.dumps(self.state.meta, default=list))

    def restore(self, snapshot: Any) -> None:
        """Seed the device back to ``snapshot`` and verify it (raises :class:`ResetError`)."""
        tables, meta = snapshot
        expected = {k: norm_table(v) for k, v in tables.items()}
        self.shell.apply(self._seed_commands(expected, self.phone.tz))
        self.state.meta = {**meta, "seq": dict(meta.get("seq", {}))}
        diffs = self._verify(expected, self.state.meta["now"], self.phone.fixtures.timezone, check_clock=False)
        if diffs:
            raise ResetError("restore did not take: " + "; ".join(diffs[:5]))

    def tables(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """The mapped tables read from the device (the verified fixture state right after reset).
        When the device fails, the last state read, and :meth:`infrastructure_fault` says why,
        so the episode's verdict is labelled an infrastructure error."""
        cache = self.state._cache
        if cache and not self.state.in_call and set(cache) >= {n for n in self.state.mapped if self._wanted(n)}:
            self._last_tables = dict(cache)
            return self._last_tables
        try:
            tables = self.read_all()
        except (DeviceFault, A.MappingError) as exc:
            log.error("could not read the tables of %s: %s", self.serial, exc)
            self._suspect = True
            self._fault = f"reading the device's state failed: {exc}"
            return dict(self._last_tables)
        self._last_tables = tables
        return tables

    def infrastructure_fault(self) -> str | None:
        """Why reading the device's state failed this episode (None when it did not)."""
        return self._fault

    def _frame(self) -> np.ndarray:
        """The device screen for a tool that returns it (a failure is the tool's ``device_error``)."""
        from PIL import Image

        self.shell._note([["screencap", "-p"]])
        stdout, stderr, status = self.shell.raw("screencap -p")
        if status != 0 or not stdout.startswith(b"\x89PNG"):
            raise DeviceFault(f"screencap -p failed on {self.shell.serial}: {stderr.decode('utf-8', 'replace')[:200]}")
        image = Image.open(io.BytesIO(stdout)).convert("RGB")
        if image.size != tuple(self.screen_size):
            image = image.resize(self.screen_size)
        return np.asarray(image, dtype=np.uint8)

    def screenshot(self) -> np.ndarray:
        """The device screen (``screencap -p`` decoded with Pillow), ``uint8`` (H, W, 3) scaled to
        ``screen_size``; a black frame when the device fails (logged)."""
        try:
            return self._frame()
        except DeviceFault as exc:
            log.warning("screenshot failed: %s", exc.detail)
            self._suspect = True
            w, h = self.screen_size
            return np.zeros((h, w, 3), dtype=np.uint8)

    def close(self) -> None:
        """Forget the device connection (the device itself is left as it is)."""
        self._shell = None


def _fixtures_digest(task: TaskSpec) -> str:
    data = task.fixtures.model_dump(mode="json", exclude={"vault", "simulated"})
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
