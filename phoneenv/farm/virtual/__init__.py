"""A virtual Android phone: the sandbox phone behind an Android-like shell, served over adb.

    >>> from phoneenv.farm.virtual import VirtualDevice
    >>> dev = VirtualDevice()
    >>> dev.shell("getprop ro.build.version.sdk", b"").stdout
    b'34\\n'
    >>> dev.shell("content insert --uri content://sms --bind address:s:+4915111111111 "
    ...           "--bind body:s:'hi there' --bind type:i:1 --bind date:l:0", b"").exit_code
    0
    >>> print(dev.shell("content query --uri content://sms --projection _id:address:body", b"").stdout.decode())
    Row: 0 _id=1, address=+4915111111111, body=hi there
    <BLANKLINE>
    >>> dev.phone.state.get("messages.messages", "m_1")["body"]
    'hi there'

:class:`VirtualDevice` implements the transport's ``DeviceHandler`` (``banner()``,
``shell(command, stdin)``, ``files``, ``on_reboot(target)``), so
``phoneenv.farm.adbwire.AdbDeviceServer(VirtualDevice())`` is a phone the real ``adb`` server
connects to. Its state is a sandbox :class:`~phoneenv.phone.Phone`; its content
providers, settings and permissions present that phone's tables through the apps' Android
mappings (:mod:`phoneenv.farm.android`), so what a host writes with ``content insert`` is what the
sandbox apps would see, and the screen (``screencap``) is the sandbox's rendering.

Command lines run through :class:`~phoneenv.farm.shell.Shell` (a real shell grammar, so a host
quoting bug runs an extra command, logged in :attr:`VirtualDevice.command_log`). Commands, with
the output format of Android 14's own tools:

- ``getprop [KEY]``, ``setprop KEY VALUE`` (``persist.sys.timezone`` sets the timezone; root);
- ``date [-u] [+FORMAT]``, ``date [-u] MMDDhhmm[[CC]YY][.ss]`` (toybox's set form; root); the clock
  stands still unless set;
- ``content query|insert|update|delete --uri URI [--user N] [--bind COL:TYPE:VALUE]...
  [--where W] [--projection A:B] [--sort S]``: ``--where``, ``--projection`` and ``--sort`` run
  in SQLite over the provider's rows, as Android's providers do;
- ``settings get|put|delete|list NAMESPACE [KEY [VALUE]]``;
- ``pm grant|revoke PKG PERM``, ``pm clear PKG``, ``pm list packages [FILTER]``, ``pm path PKG``,
  ``pm uninstall PKG``;
- ``am start [-W] [-a A] [-d D] [-c C] [-n PKG/CLS] [PKG]``, ``am broadcast -a A [--es K V]...``
  (``ADB_INPUT_B64``/``ADB_INPUT_TEXT`` type into the focused field through ADBKeyBoard),
  ``am force-stop PKG``;
- ``input text TEXT`` (Android's rules: ``%s`` is a space, one argument, printable ASCII only, a
  newline presses Enter), ``input keyevent KEY...``, ``input tap X Y``, ``input swipe ...``;
- ``svc wifi|bluetooth enable|disable``; ``cmd notification set_dnd|post``, ``cmd connectivity
  airplane-mode``, ``cmd uimode night``;
- ``screencap [-p] [FILE]``; ``dumpsys package PKG``, ``dumpsys activity [activities|top]``,
  ``dumpsys telephony.registry``; ``echo``, ``true``, ``false``, ``exit``;
- app data (:ref:`below <app-data>`): ``su -c CMDLINE`` / ``su 0|root CMD...`` (with ``su=True``),
  ``id [-u]``, ``tar -c|-x [-z] -f ARCHIVE [-C DIR] [MEMBER...]``, ``stat -c FORMAT PATH...``
  (``%u %g %U %G %a %s %n %C``), ``chown [-R] UID[:GID] PATH...``, ``restorecon [-R] [-F] PATH...``,
  ``rm [-r] [-f] PATH...``, ``mkdir [-p] PATH...``, ``cat PATH...``.

.. _app-data:

App data: every installed app has a private data directory ``/data/data/<package>`` owned by
its uid (``userId=`` in ``dumpsys package``, from 10100 up) with the SELinux label
``u:object_r:app_data_file:s0``. It holds the app's tables whose Android home is the app itself,
one JSON file each (``databases/<table>.json``, a list of records): tables with no Android
mapping (timers, notes, mail) and provider tables whose authority is the app's own package
(DeskClock's alarms); and its sign-in session, ``shared_prefs/account.xml`` (an Android
``SharedPreferences`` XML map with ``account`` and ``signed_in``). Reading those files (``cat``,
``tar -c``, ``stat``, a ``<`` redirection) shows the tables as they are now; writing them (``tar
-x``, ``rm``, ``>``) changes the tables: a missing or unparsable file is an empty table (an app
finding a corrupt database starts afresh) or a signed-out app. Files the app's uid does not own
(``chown`` not done after a root ``tar -x``) cannot be opened by the app: its own provider answers
``SQLiteCantOpenDatabaseException`` until ownership is fixed. ``/data/data`` is reachable as root
only (``root=True``, or through ``su``); the shell user gets ``Permission denied``.
``pm clear PKG`` empties the data directory (the directory stays, owned by the app), wipes those
tables, signs the app out and resets its runtime permissions (AOSP ``clearApplicationUserData`` →
``PermissionManager.resetRuntimePermissions``: user grants revoked; this sandbox has no
system-fixed or default grants to keep).

Anything else answers like Android's mksh: status 127 and ``/system/bin/sh: NAME: inaccessible or
not found``. The UI model: a foreground package, and the focused text field of a compose screen
opened by an app's :class:`~phoneenv.farm.android.TypedInsert` intent (Messages' ``SENDTO
smsto:``); Enter sends it, and the app writes the row itself.
"""

from __future__ import annotations

import base64
import io
import re
import sqlite3
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from phoneenv.app import App
from phoneenv.contract import Fixtures
from phoneenv.farm import android as A
from phoneenv.farm.shell import Invocation, Shell, ShellResult
from phoneenv.farm.virtual.appdata import AppDataCommands, _DataFiles
from phoneenv.farm.virtual.constants import (
    _SETTINGS_DEFAULTS,
    _SYSTEM_PACKAGES,
    ACCOUNT_FILE,
    ADB_KEYBOARD,
    APP_DATA_LABEL,
    DATA_DIR,
    FIRST_APP_UID,
    KEYCODES,
    LAUNCHER,
    SHELL_UID,
)
from phoneenv.farm.virtual.packages import PackageCommands
from phoneenv.farm.virtual.props import PropsCommands
from phoneenv.farm.virtual.provider import ProviderCommands
from phoneenv.farm.virtual.settings import SettingsCommands
from phoneenv.phone import Phone, app_classes, build_fixture_state

__all__ = [
    "ACCOUNT_FILE",
    "APP_DATA_LABEL",
    "DATA_DIR",
    "FIRST_APP_UID",
    "KEYCODES",
    "LAUNCHER",
    "SHELL_UID",
    "VirtualDevice",
    "input_text_decode",
]


@dataclass
class _Compose:
    """A compose screen with its focused text field."""

    app: str
    table: str
    typed: A.TypedInsert
    fields: dict[str, str]
    text: str = ""


def input_text_decode(arg: str) -> str:
    """What ``input text ARG`` types: Android's ``Input.sendText`` turns ``%s`` into a space
    (a ``%`` followed by ``s``, the ``%`` dropped); every other character is typed as is.
    Source: AOSP ``frameworks/base/cmds/input/src/com/android/commands/input/Input.java``."""
    buff = list(arg)
    escape = False
    i = 0
    while i < len(buff):
        if escape:
            escape = False
            if buff[i] == "s":
                buff[i] = " "
                del buff[i - 1]
                i -= 1
        if buff[i] == "%":
            escape = True
        i += 1
    return "".join(buff)


class VirtualDevice(PropsCommands, ProviderCommands, SettingsCommands, PackageCommands, AppDataCommands):
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
        self.settings: dict[str, dict[str, str]] = {ns: dict(v) for ns, v in _SETTINGS_DEFAULTS.items()}
        self.foreground = LAUNCHER
        self.compose: _Compose | None = None
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
        self._sh = Shell(self._commands(), files=_DataFiles(self), clock=lambda: self.phone.state.meta["now"])
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
        return sorted(set(pkgs) | set(_SYSTEM_PACKAGES))

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

    # -- UI: activities, typing, keys, screen ----------------------------------------------------
    def _am(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        verb = args[0] if args else ""
        if verb == "force-stop" and len(args) == 2:
            if self.foreground == args[1]:
                self.foreground, self.compose = LAUNCHER, None
                self._sync_meta()
            return 0
        if verb not in ("start", "broadcast"):
            inv.error(f"am: unsupported: {' '.join(args)}")
            return 1
        intent = _parse_intent(args[1:])
        if intent is None:
            inv.error("Error: bad intent arguments")
            return 1
        if verb == "broadcast":
            return self._broadcast(inv, intent)
        return self._start(inv, intent)

    def _start(self, inv: Invocation, intent: dict[str, Any]) -> int:
        shown = _describe_intent(intent)
        inv.write(f"Starting: Intent {{ {shown} }}\n")
        pkg = intent.get("package") or (intent.get("component") or "").split("/")[0] or None
        action, data = intent.get("action"), intent.get("data")
        target = None
        if action == "android.intent.action.MAIN" or intent.get("component"):
            if pkg is not None and self._app_of_package(pkg) is not None:
                target = pkg
                self.compose = None
        else:
            for app, cls in self._classes.items():
                driver = cls.android
                if driver is None or self.phone.state.get("system.apps", app) is None:
                    continue
                for table, typed in driver.typed.items():
                    fields = _match_compose(typed.compose, action, data, pkg)
                    if fields is not None:
                        target = cls.package
                        self.compose = _Compose(app, table, typed, fields)
        if target is None:
            inv.error(f"Error: Activity not started, unable to resolve Intent {{ {shown} }}")
            return 1
        self.foreground = target
        self._sync_meta()
        if intent.get("wait"):
            inv.write(
                f"Status: ok\nLaunchState: COLD\nActivity: {self._activity()}\nTotalTime: 0\nWaitTime: 0\nComplete\n"
            )
        return 0

    def _broadcast(self, inv: Invocation, intent: dict[str, Any]) -> int:
        inv.write(f"Broadcasting: Intent {{ {_describe_intent(intent)} flg=0x400000 }}\n")
        action = intent.get("action")
        extras = intent.get("extras", {})
        if self.adb_keyboard and action in ("ADB_INPUT_B64", "ADB_INPUT_TEXT") and "msg" in extras:
            text = extras["msg"]
            if action == "ADB_INPUT_B64":
                try:
                    text = base64.b64decode(text, validate=True).decode("utf-8")
                except (ValueError, UnicodeDecodeError):
                    text = ""
            self._type(text)
        inv.write("Broadcast completed: result=0\n")
        return 0

    def _type(self, text: str) -> None:
        if self.compose is not None:
            self.compose.text += text

    def _input(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        if args and args[0] in ("keyboard", "touchscreen", "dpad", "touchpad"):
            args = args[1:]
        verb = args[0] if args else ""
        if verb == "text":
            if len(args) < 2:
                inv.error('Error: Argument expected after "text"')
                return 1
            text = input_text_decode(args[1])
            bad = [ch for ch in text if not (" " <= ch <= "~" or ch in "\n\t")]
            if bad:
                inv.error(
                    "Exception occurred while executing 'text':\njava.lang.NullPointerException: "
                    "Attempt to get length of null array"
                )
                return 255
            for ch in text:
                if ch == "\n":
                    self._key(KEYCODES["KEYCODE_ENTER"])
                elif ch != "\t":
                    self._type(ch)
            return 0
        if verb == "keyevent":
            keys = [a for a in args[1:] if a not in ("--longpress", "--doubletap")]
            if not keys:
                inv.error('Error: Argument expected after "keyevent"')
                return 1
            for key in keys:
                code = (
                    int(key) if key.isdigit() else KEYCODES.get(key if key.startswith("KEYCODE_") else f"KEYCODE_{key}")
                )
                if code is None:
                    inv.error(f"Error: Unknown keycode: {key}")
                    return 1
                self._key(code)
            return 0
        if verb in ("tap", "swipe", "draganddrop", "roll", "press", "motionevent"):
            nums = args[1:]
            if verb == "tap" and (len(nums) != 2 or not all(_is_number(n) for n in nums)):
                inv.error("Error: tap needs X Y")
                return 1
            if verb == "swipe" and (len(nums) not in (4, 5) or not all(_is_number(n) for n in nums)):
                inv.error("Error: swipe needs X1 Y1 X2 Y2 [DURATION(ms)]")
                return 1
            return 0
        inv.error(f"Error: Unknown command: {verb}")
        return 1

    def _key(self, code: int) -> None:
        if code in (KEYCODES["KEYCODE_HOME"], KEYCODES["KEYCODE_BACK"]):
            self.compose = None
            self.foreground = LAUNCHER
            self._sync_meta()
        elif code == KEYCODES["KEYCODE_DEL"]:
            if self.compose is not None:
                self.compose.text = self.compose.text[:-1]
        elif code == KEYCODES["KEYCODE_ENTER"] and self.compose is not None and self.compose.text:
            self._submit(self.compose)
            self.compose.text = ""

    def _submit(self, compose: _Compose) -> None:
        """The app writes what was typed as a new row (Messages: a sent SMS, read, dated now)."""
        if (compose.app, compose.table) == ("messages", "messages"):
            route = self._routes[self._classes["messages"].android.tables["messages"].uri]  # type: ignore[union-attr]
            self._insert(
                route,
                {
                    "address": compose.fields.get("number", ""),
                    "body": compose.text,
                    "type": 2,
                    "date": round(self.now * 1000),
                    "read": 1,
                },
            )

    def _screencap(self, inv: Invocation) -> int:
        args = inv.argv[1:]
        png = "-p" in args
        path = next((a for a in args if not a.startswith("-")), None)
        image = self.screen()
        if png or (path is not None and path.endswith(".png")):
            buf = io.BytesIO()
            from PIL import Image

            Image.fromarray(image).save(buf, format="PNG")
            data = buf.getvalue()
        else:
            h, w, _ = image.shape
            rgba = np.concatenate([image, np.full((h, w, 1), 255, dtype=np.uint8)], axis=2)
            data = np.array([w, h, 1], dtype="<u4").tobytes() + rgba.tobytes()
        if path is not None:
            try:
                self.files.write(path, data, 0o660, int(self.now))
            except (OSError, ValueError) as exc:
                inv.error(f"Error opening file: {path} ({exc})")
                return 1
            return 0
        inv.write(data)
        return 0

    def screen(self) -> np.ndarray:
        """The screen now, ``uint8`` (H, W, 3): the sandbox's rendering of the foreground app, or
        the compose screen with the text being typed."""
        from phoneenv.screen import render_phone, render_screen

        size = self.phone.screen_size
        if self.compose is not None:
            cls = self._classes[self.compose.app]
            status = self.phone.local_now().strftime("%a %d %b %H:%M")
            to = " ".join(self.compose.fields.values())
            return render_screen(status, f"{cls.title}: {to}", [f"> {self.compose.text}_"], size)
        return render_phone(self.phone, size)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _parse_intent(args: list[str]) -> dict[str, Any] | None:
    """``am`` intent arguments: ``-a -d -c -n -t -f -p``, ``--es/--ez/--ei/--el/-e KEY VALUE``,
    ``-W``, and a trailing package, component or data URI; None when malformed."""
    out: dict[str, Any] = {"extras": {}}
    names = {
        "-a": "action",
        "-d": "data",
        "-c": "category",
        "-n": "component",
        "-t": "type",
        "-f": "flags",
        "-p": "package",
    }
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-W", "-S", "--wait"):
            out["wait"] = True
            i += 1
        elif a in names or a in ("--user", "--receiver-permission"):
            if i + 1 >= len(args):
                return None
            if a in names:
                out[names[a]] = args[i + 1]
            i += 2
        elif a in ("--es", "--ez", "--ei", "--el", "-e"):
            if i + 2 >= len(args):
                return None
            out["extras"][args[i + 1]] = args[i + 2]
            i += 3
        elif a.startswith("-"):
            return None
        else:
            if "/" in a and "://" not in a:
                out["component"] = a
            elif ":" in a:
                out["data"] = a
            else:
                out["package"] = a
            i += 1
    return out


def _describe_intent(intent: Mapping[str, Any]) -> str:
    parts = []
    if intent.get("action"):
        parts.append(f"act={intent['action']}")
    if intent.get("category"):
        parts.append(f"cat=[{intent['category']}]")
    if intent.get("data"):
        parts.append(f"dat={intent['data']}")
    if intent.get("package"):
        parts.append(f"pkg={intent['package']}")
    if intent.get("component"):
        parts.append(f"cmp={intent['component']}")
    if intent.get("extras"):
        parts.append("(has extras)")
    return " ".join(parts)


def _match_compose(compose: A.Intent, action: str | None, data: str | None, pkg: str | None) -> dict[str, str] | None:
    """The record fields named in ``compose.data`` (``smsto:{number}``) when an ``am start``
    matches the compose intent, else None."""
    if action != compose.action or data is None or compose.data is None:
        return None
    if pkg is not None and compose.package is not None and pkg != compose.package:
        return None
    pattern = ""
    names = []
    for literal, name, _, _ in _formatter.parse(compose.data):
        pattern += re.escape(literal)
        if name:
            names.append(name)
            pattern += f"(?P<{name}>.+)"
    m = re.fullmatch(pattern, data)
    return None if m is None else {n: m.group(n) for n in names}


_formatter = string.Formatter()


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
