"""The virtual device's facade: :class:`VirtualDevice`, the transport's ``DeviceHandler`` (``banner``,
``shell``, ``files``, ``on_reboot``) over a sandbox phone, its state, and the table of shell commands
that its command families (props, provider, settings, packages, appdata, ui) implement. The package
docstring of :mod:`phoneenv.farm.virtual` describes the device."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any
from zoneinfo import ZoneInfo

from phoneenv.app import App
from phoneenv.contract import Fixtures
from phoneenv.farm.shell import Shell, ShellResult
from phoneenv.farm.virtual.appdata import AppDataCommands, DataFiles
from phoneenv.farm.virtual.constants import (
    ADB_KEYBOARD,
    DATA_DIR,
    FIRST_APP_UID,
    LAUNCHER,
    SETTINGS_DEFAULTS,
    SYSTEM_PACKAGES,
)
from phoneenv.farm.virtual.packages import PackageCommands
from phoneenv.farm.virtual.props import PropsCommands
from phoneenv.farm.virtual.provider import ProviderCommands
from phoneenv.farm.virtual.settings import SettingsCommands
from phoneenv.farm.virtual.ui import Compose, UiCommands
from phoneenv.phone import Phone, app_classes, build_fixture_state

__all__ = ["VirtualDevice"]


class VirtualDevice(PropsCommands, ProviderCommands, SettingsCommands, PackageCommands, AppDataCommands, UiCommands):
    """A virtual Android phone over a sandbox phone, with a device shell (see the module docstring).

    Args:
        model: ``ro.product.model`` (shown by ``adb devices -l``).
        screen_size: (width, height) of ``screencap`` in pixels.
        root: whether the shell runs as root (``adb root`` on an emulator): needed to set the
            clock and timezone and to reach non-exported providers (DeskClock's alarms, blocked
            numbers). False answers those with Android's permission errors.
        adb_keyboard: whether ADBKeyBoard is installed and the input method, so that
            ``am broadcast -a ADB_INPUT_B64`` types text (False: the broadcast reaches no one).
        sdk: ``ro.build.version.sdk``.
        timezone: the initial ``persist.sys.timezone`` (IANA name).
        clock: the initial clock, ISO local time in ``timezone``.
        missing_packages: sandbox app packages to leave uninstalled (a device lacking an app).
        su: whether ``su`` exists (a rooted phone: Magisk's ``su -c``), so a non-root shell can
            reach app data and root-only commands through it.

    Attributes:
        phone: the sandbox phone holding the device's state (its tables are the providers' rows).
        files: the file system ``sync:`` serves (``VirtualFiles``).
        command_log: the argv of every simple command run, in order.
        uids: package → app uid (``dumpsys package``'s ``userId=``).
        owners: path → (uid, gid) of the files under ``/data`` that root does not own.
        labels: path → SELinux label of the files under app data directories.
    """

    def __init__(
        self,
        *,
        model: str = "phoneenv Virtual Phone",
        screen_size: tuple[int, int] = (360, 640),
        root: bool = True,
        adb_keyboard: bool = True,
        sdk: int = 34,
        timezone: str = "UTC",
        clock: str = "2026-11-29T09:00:00",
        missing_packages: Sequence[str] = (),
        su: bool = False,
    ) -> None:
        from phoneenv.farm.adbwire import VirtualFiles

        self._classes: dict[str, type[App]] = dict(app_classes())
        installed = [n for n, c in self._classes.items() if c.package not in set(missing_packages)]
        self.phone = Phone(self._classes)
        self.phone.screen_size = screen_size
        self.root = root
        self.adb_keyboard = adb_keyboard
        self.reboots: list[str] = []
        self.props: dict[str, str] = {
            "ro.product.model": model,
            "ro.product.name": "phoneenv_virtual",
            "ro.product.device": "virtual",
            "ro.product.manufacturer": "phoneenv",
            "ro.product.brand": "phoneenv",
            "ro.build.version.sdk": str(sdk),
            "ro.build.version.release": "14",
            "ro.build.type": "userdebug",
            "ro.debuggable": "1",
            "ro.secure": "0" if root else "1",
            "ro.serialno": "PHONEENV0001",
            "sys.boot_completed": "1",
            "init.svc.bootanim": "stopped",
            "persist.sys.timezone": timezone,
        }
        self.settings: dict[str, dict[str, str]] = {ns: dict(v) for ns, v in SETTINGS_DEFAULTS.items()}
        self.foreground = LAUNCHER
        self.compose: Compose | None = None
        self.files = VirtualFiles(mtime=0)
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._routes = self._build_routes()
        self._setting_map = self._build_setting_map()
        self.su = su
        self._as_root = False
        self.uids: dict[str, int] = {
            cls.package: FIRST_APP_UID + i
            for i, cls in enumerate(c for _, c in sorted(self._classes.items()) if not c.system)
        }
        self.owners: dict[str, tuple[int, int]] = {}
        self.labels: dict[str, str] = {}
        self._private = self._build_private()
        self._unreadable: set[str] = set()
        self._sh = Shell(self._commands(), files=DataFiles(self), clock=lambda: self.phone.state.meta["now"])
        self.load(Fixtures(clock=clock, timezone=timezone, installed_apps=installed, accounts={}))

    # -- DeviceHandler ---------------------------------------------------------------------------
    def banner(self) -> dict[str, str]:
        """``ro.product.name``/``model``/``device`` for the adb ``CNXN`` banner."""
        return {k: self.props[k] for k in ("ro.product.name", "ro.product.model", "ro.product.device")}

    def shell(self, command: str, stdin: bytes = b"") -> ShellResult:
        """Run one command line as ``/system/bin/sh -c command``; never raises for its content."""
        return self._sh.run(command, stdin)

    def on_reboot(self, target: str) -> None:
        """``adb reboot [target]``: recorded in :attr:`reboots`; the UI returns to the launcher."""
        self.reboots.append(target)
        self.foreground, self.compose = LAUNCHER, None
        self._sync_meta()

    @property
    def command_log(self) -> list[list[str]]:
        """The argv of every simple command the shell ran, in order."""
        return self._sh.log

    # -- state -----------------------------------------------------------------------------------
    def load(self, fixtures: Fixtures) -> None:
        """Replace the whole device state with a task's fixture state (what a verified reset
        produces), for tests and demos; clock and timezone included."""
        snap, _ = build_fixture_state(fixtures, self._classes)
        self.phone.state.restore(snap)
        self.phone.tz = ZoneInfo(fixtures.timezone)
        self.phone.fixtures = fixtures
        self.props["persist.sys.timezone"] = fixtures.timezone
        self.foreground, self.compose = LAUNCHER, None
        self._sync_meta()
        self._unreadable.clear()
        for pkg in self._private:
            if self._app_of_package(pkg) is not None:
                self.files.mkdir(f"{DATA_DIR}/{pkg}", 0o700, mtime=int(self.now))
                self._own(f"{DATA_DIR}/{pkg}", pkg)
                self.export_data(pkg)

    @property
    def now(self) -> float:
        """The device clock, seconds since the epoch."""
        return float(self.phone.state.meta["now"])

    def _sync_meta(self) -> None:
        meta = self.phone.state.meta
        app = self._app_of_package(self.foreground)
        meta["foreground"] = app if app is not None else "launcher"
        meta["view"] = None

    def _app_of_package(self, package: str) -> str | None:
        for name, cls in self._classes.items():
            if cls.package == package and self.phone.state.get("system.apps", name) is not None:
                return name
        return None

    def _installed_packages(self) -> list[str]:
        pkgs = [rec["package"] for rec in self.phone.state.table("system.apps").values()]
        if self.adb_keyboard:
            pkgs.append(ADB_KEYBOARD)
        return sorted(set(pkgs) | set(SYSTEM_PACKAGES))

    # -- commands --------------------------------------------------------------------------------
    def _commands(self) -> dict[str, Any]:
        return {
            "getprop": self._getprop,
            "setprop": self._setprop,
            "date": self._date,
            "content": self._content,
            "settings": self._settings,
            "pm": self._pm,
            "am": self._am,
            "input": self._input,
            "svc": self._svc,
            "cmd": self._cmd,
            "screencap": self._screencap,
            "dumpsys": self._dumpsys,
            "su": self._su,
            "id": self._id,
            "tar": self._tar,
            "stat": self._stat,
            "chown": self._chown,
            "restorecon": self._restorecon,
            "rm": self._rm,
            "mkdir": self._mkdir,
            "cat": self._cat,
        }


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
