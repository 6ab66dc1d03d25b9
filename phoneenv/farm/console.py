"""The Android emulator console: a client, a server that speaks the same protocol, and ``adb emu``.

Every running emulator serves a *console* on its console port (the even port ``N`` of the pair
``N, N+1``; the serial ``emulator-N`` names it). Snapshots are saved and loaded there, which is how
an episode resets an emulator in a second instead of a reboot.

Protocol
    Source: the emulator's console (``android/console.cpp`` and ``android/console_auth.cpp`` in
    AOSP ``external/qemu``) and adb's client (``client/console.cpp`` in AOSP
    ``packages/modules/adb``); the user-facing description is
    https://developer.android.com/studio/run/emulator-console.

    * Text lines over TCP, loopback only. The emulator drops ``\\r``, runs a command at ``\\n``,
      and ends every line it writes with ``\\r\\n``. A line longer than 4,095 bytes is discarded.
    * On connect it greets with, when ``~/.emulator_console_auth_token`` holds a token::

          Android Console: Authentication required
          Android Console: type 'auth <auth_token>' to authenticate
          Android Console: you can find your <auth_token> in
          '/home/user/.emulator_console_auth_token'
          OK

      or, when that file is empty (authentication disabled)::

          Android Console: type 'help' for a list of commands
          OK

    * ``auth <token>`` answers ``Android Console: type 'help' for a list of commands`` and ``OK``,
      or ``KO: authentication token does not match ~/.emulator_console_auth_token``. Before it,
      only ``help``, ``help-verbose``, ``ping``, ``avd name``, ``auth`` and ``quit``/``exit`` exist.
    * A command writes its output lines, then ``OK`` on success or ``KO: <message>`` on failure.
      Unknown commands get ``KO: unknown command, try 'help'``.
    * ``avd snapshot save|load|list|del|delete <name>``; ``list`` prints QEMU's table
      (``List of snapshots present on all disks:``, a header, one ``--  <tag>  ...`` row per
      snapshot). A failed load reads ``KO: Snapshot load failure: snapshot doesn't exist``.
    * ``kill`` answers ``OK: killing emulator, bye bye`` and the emulator exits.
    * A line that is not UTF-8 gets ``KO: Forbidden binary request. Aborting`` and the connection
      is closed; an HTTP request line gets ``KO: Forbidden HTTP request. Aborting``.

``adb -s emulator-N emu <command>`` (:class:`AdbEmuConsole`) connects to loopback port ``N``
itself (no adb server involved), sends ``auth <token>`` read from ``$HOME/.emulator_console_auth_token``,
the command and ``quit``, skips the output up to the second ``OK`` and prints the rest; it exits 0
even on ``KO``, so :class:`AdbEmuConsole` reads the text to find errors.

:class:`ConsoleClient` talks to any console directly (an emulator on this host, or one inside a
container reached by ``adb connect`` whose console port is published), with the token.
:class:`ConsoleServer` serves the protocol over real TCP with snapshot hooks, so a virtual device
can offer the same reset path as an emulator.

Example::

    >>> hooks = MemorySnapshotHooks()
    >>> with ConsoleServer(hooks, token="s3cret", avd_name="Pixel_6_API_34") as server:
    ...     with ConsoleClient("127.0.0.1", server.port, token="s3cret") as console:
    ...         console.snapshot_save("fixture")
    ...         console.snapshot_list()
    ['fixture']
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import socket
import socketserver
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol, runtime_checkable

from phoneenv.errors import PhoneEnvError

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_TOKEN_PATH",
    "MAX_TOKEN_CHARS",
    "AdbEmuConsole",
    "ConsoleAuthError",
    "ConsoleClient",
    "ConsoleCommandError",
    "ConsoleConnectionError",
    "ConsoleError",
    "ConsoleServer",
    "ConsoleTimeoutError",
    "MemorySnapshotHooks",
    "SnapshotConsole",
    "SnapshotHooks",
    "SnapshotInfo",
    "SnapshotLoadError",
    "TokenFileError",
    "console_for_serial",
    "format_snapshot_table",
    "parse_snapshot_list",
    "read_token",
    "validate_snapshot_name",
]

MAX_TOKEN_CHARS = 256
"""The longest console auth token :func:`read_token` takes (the emulator writes 16 characters)."""
DEFAULT_TOKEN_PATH = Path("~/.emulator_console_auth_token")
"""Where the emulator and adb read the console auth token (``$HOME`` expanded at use)."""

GREETING_AUTH_REQUIRED = "Android Console: Authentication required"
HELP_PROMPT = "Android Console: type 'help' for a list of commands"
KILL_REPLY = "OK: killing emulator, bye bye"
NO_SNAPSHOTS = "There is no snapshot available."
SNAPSHOT_TABLE_TITLE = "List of snapshots present on all disks:"
SNAPSHOT_TABLE_HEADER = "ID        TAG                 VM SIZE                DATE       VM CLOCK"
LOAD_FAILURE = "Snapshot load failure: snapshot doesn't exist"
MAX_LINE = 4095  # the emulator's per-client buffer is 4,096 bytes including the NUL

_SNAPSHOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_HTTP_REQUEST_LINE = re.compile(r"^[A-Z]+ \S+ HTTP/\d(\.\d)?$")
_EMULATOR_SERIAL = re.compile(r"^emulator-(\d+)$")


# --------------------------------------------------------------------------------------- errors


class ConsoleError(PhoneEnvError, RuntimeError):
    """Base class of every emulator-console failure."""


class ConsoleConnectionError(ConsoleError, ConnectionError):
    """The console port refused the connection, or closed it mid-reply."""


class ConsoleTimeoutError(ConsoleError, TimeoutError):
    """No complete reply within the client's ``timeout`` (seconds)."""


class ConsoleAuthError(ConsoleError):
    """The console wants a token and none was found, or it rejected the one sent."""


class TokenFileError(ConsoleAuthError):
    """The console auth token file cannot be read or holds no token (not one word of printable
    characters); the message names the file."""


class ConsoleCommandError(ConsoleError):
    """The console answered ``KO: <message>``.

    Attributes:
        command: the command line sent (``"avd snapshot load fixture"``).
        message: the text after ``KO: ``.
        output: lines the console wrote before the ``KO`` line (help text, for instance).
    """

    def __init__(self, command: str, message: str, output: Sequence[str] = (), where: str = "") -> None:
        self.command = command
        self.message = message
        self.output = list(output)
        place = f" at {where}" if where else ""
        super().__init__(f"emulator console{place} rejected {command!r}: KO: {message}")


class SnapshotLoadError(ConsoleCommandError):
    """``avd snapshot load <name>`` failed (the snapshot does not exist, or could not be loaded)."""


# ------------------------------------------------------------------------------------- helpers


def validate_snapshot_name(name: str) -> str:
    """Return ``name`` if it is a safe snapshot name, else raise :class:`ValueError`.

    The console takes the rest of the line as the name, so a name must be one token: 1–128
    characters from ``[A-Za-z0-9._-]``, starting with a letter or digit. This also keeps a name
    from smuggling a second command (``"x\\nkill"``) into the console.
    """
    if not isinstance(name, str) or not _SNAPSHOT_NAME.match(name):
        raise ValueError(
            f"invalid snapshot name {name!r}: use 1-128 characters from [A-Za-z0-9._-], starting with a letter or digit"
        )
    return name


def read_token(path: str | os.PathLike[str] | None = None) -> str | None:
    """The console auth token from ``path`` (default ``~/.emulator_console_auth_token``).

    Returns the file's content stripped of whitespace; ``None`` when the file does not exist.
    An empty file returns ``""`` (the emulator then disables authentication). Raises
    :class:`TokenFileError` (a :class:`ConsoleAuthError`) when the file exists but cannot be read
    (a folder, not UTF-8), or holds no token: the token is sent as the console line ``auth
    TOKEN``, so it must be one word of at most :data:`MAX_TOKEN_CHARS` printable characters.
    """
    target = Path(path if path is not None else DEFAULT_TOKEN_PATH).expanduser()
    try:
        token = target.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise TokenFileError(f"cannot read the console auth token file {target}: {reason}") from None
    if len(token) > MAX_TOKEN_CHARS or not all(ch.isprintable() and not ch.isspace() for ch in token):
        raise TokenFileError(
            f"the console auth token file {target} holds no token (one word of at most {MAX_TOKEN_CHARS} "
            "printable characters expected); write the emulator's token there, or pass another --token-path"
        )
    return token


def parse_snapshot_list(lines: Sequence[str] | str) -> list[str]:
    """Snapshot names (tags) from the output of ``avd snapshot list``, in listed order.

    Accepts the lines before the final ``OK`` (or the whole text). Rows are QEMU's
    ``info snapshots`` table: ``ID TAG VM-SIZE DATE VM-CLOCK``, where the Android emulator prints
    ``--`` as the ID; numeric IDs (plain QEMU) are accepted too. ``There is no snapshot
    available.`` gives ``[]``.

    Example::

        >>> parse_snapshot_list([SNAPSHOT_TABLE_TITLE, SNAPSHOT_TABLE_HEADER,
        ...     "--        default_boot            75M 2026-09-09 11:41:45   00:10:07.753"])
        ['default_boot']
    """
    if isinstance(lines, str):
        lines = lines.splitlines()
    names: list[str] = []
    for raw in lines:
        parts = raw.strip().split()
        if len(parts) >= 2 and (parts[0] == "--" or parts[0].isdigit()):
            names.append(parts[1])
    return names


@dataclass(frozen=True)
class SnapshotInfo:
    """One row of ``avd snapshot list``.

    Attributes:
        name: the snapshot tag.
        vm_size_bytes: size of the saved VM state, bytes.
        saved_at: when it was saved (timezone-aware or naive local time).
        vm_clock_s: guest run time at save, seconds.
    """

    name: str
    vm_size_bytes: int = 0
    saved_at: datetime | None = None
    vm_clock_s: float = 0.0


def _human_size(size: int) -> str:
    # QEMU's size_to_str-style short form used by the emulator's table ("75M", "1.2G").
    value = float(size)
    for unit in ("", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            return f"{value:.0f}{unit}" if value >= 10 or unit == "" else f"{value:.1f}{unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_snapshot_table(snapshots: Sequence[str | SnapshotInfo]) -> list[str]:
    """Lines of ``avd snapshot list`` output for ``snapshots``, in the emulator's layout.

    A bare name prints with size ``0``, date ``1970-01-01 00:00:00`` and clock ``00:00:00.000``.
    An empty sequence prints ``There is no snapshot available.``.
    """
    if not snapshots:
        return [NO_SNAPSHOTS]
    lines = [SNAPSHOT_TABLE_TITLE, SNAPSHOT_TABLE_HEADER]
    for item in snapshots:
        info = item if isinstance(item, SnapshotInfo) else SnapshotInfo(name=str(item))
        saved = info.saved_at or datetime(1970, 1, 1, tzinfo=timezone.utc)
        clock = max(0.0, info.vm_clock_s)
        hours, rem = divmod(clock, 3600)
        minutes, seconds = divmod(rem, 60)
        lines.append(
            f"--        {info.name:<19} {_human_size(info.vm_size_bytes):>6} "
            f"{saved:%Y-%m-%d %H:%M:%S}   {int(hours):02d}:{int(minutes):02d}:{seconds:06.3f}"
        )
    return lines


# ------------------------------------------------------------------------------- snapshot API


@runtime_checkable
class SnapshotConsole(Protocol):
    """What resets use, whichever way the console is reached (direct TCP or ``adb emu``)."""

    def snapshot_save(self, name: str) -> None:
        """Save the running state as snapshot ``name``."""

    def snapshot_load(self, name: str) -> None:
        """Load snapshot ``name``; raise :class:`SnapshotLoadError` when it cannot be loaded."""

    def snapshot_list(self) -> list[str]:
        """The snapshot names."""

    def snapshot_delete(self, name: str) -> None:
        """Delete snapshot ``name``."""

    def avd_name(self) -> str:
        """The AVD's name."""

    def kill(self) -> None:
        """Ask the emulator to exit."""


class _SnapshotCommands:
    """The snapshot, name and kill commands, written once over ``command(line) -> lines``."""

    def command(self, line: str) -> list[str]:  # pragma: no cover - implemented by subclasses
        raise NotImplementedError

    def snapshot_save(self, name: str) -> None:
        """Save the running state as snapshot ``name`` (``avd snapshot save <name>``).

        Raises :class:`ValueError` for an unsafe name, :class:`ConsoleCommandError` on ``KO``
        (for instance an emulator started with ``-read-only``).
        """
        self.command(f"avd snapshot save {validate_snapshot_name(name)}")

    def snapshot_load(self, name: str) -> None:
        """Load snapshot ``name`` (``avd snapshot load <name>``).

        Raises :class:`SnapshotLoadError` (a :class:`ConsoleCommandError`) on ``KO``: the snapshot
        does not exist, is incompatible, or the emulator runs ``-read-only``.
        """
        line = f"avd snapshot load {validate_snapshot_name(name)}"
        try:
            self.command(line)
        except SnapshotLoadError:
            raise
        except ConsoleCommandError as exc:
            raise SnapshotLoadError(exc.command, exc.message, exc.output, self._where()) from exc

    def snapshot_list(self) -> list[str]:
        """Snapshot names from ``avd snapshot list``."""
        return parse_snapshot_list(self.command("avd snapshot list"))

    def snapshot_delete(self, name: str) -> None:
        """Delete snapshot ``name`` (``avd snapshot delete <name>``); ``KO`` raises."""
        self.command(f"avd snapshot delete {validate_snapshot_name(name)}")

    def avd_name(self) -> str:
        """The AVD's name (``avd name``)."""
        lines = [line for line in self.command("avd name") if line]
        if not lines:
            raise ConsoleError(f"emulator console at {self._where()} gave no AVD name")
        return lines[-1]

    def _where(self) -> str:
        return ""


# ------------------------------------------------------------------------------------ client


class ConsoleClient(_SnapshotCommands):
    """A direct TCP connection to an emulator console, authenticated with the token.

    Args:
        host: console host; the emulator listens on loopback only, so a remote console needs a
            tunnel or a published container port.
        port: the console port (``N`` of ``emulator-N``).
        token_path: file holding the auth token (default ``~/.emulator_console_auth_token``).
        token: the token itself; overrides ``token_path``.
        timeout: seconds allowed for connecting and for each reply line.

    The connection opens on first use (or :meth:`connect`) and is reused; commands are
    serialised by a lock, so one client may be shared between threads. Use it as a context
    manager or call :meth:`close` (which sends ``quit``).

    Raises :class:`ConsoleConnectionError` when the port refuses or drops the connection,
    :class:`ConsoleTimeoutError` when a reply does not complete in ``timeout`` seconds,
    :class:`ConsoleAuthError` when authentication is required but no token is found or the
    token is rejected, and :class:`ConsoleCommandError` on ``KO`` replies.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 5554,
        *,
        token_path: str | os.PathLike[str] | None = None,
        token: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        if not 0 < int(port) < 65536:
            raise ValueError(f"console port must be in 1..65535, got {port}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive seconds, got {timeout}")
        self.host = host
        self.port = int(port)
        self.token_path = Path(token_path if token_path is not None else DEFAULT_TOKEN_PATH).expanduser()
        self._token = token
        self.timeout = float(timeout)
        self._sock: socket.socket | None = None
        self._buffer = b""
        self._lock = threading.RLock()
        self.greeting: list[str] = []
        self.authenticated = False

    def __repr__(self) -> str:
        return f"ConsoleClient({self.host!r}, {self.port})"

    def _where(self) -> str:
        return f"{self.host}:{self.port}"

    # -- connection -------------------------------------------------------------------------

    def connect(self) -> ConsoleClient:
        """Open the connection, read the greeting and authenticate when asked to. Idempotent."""
        with self._lock:
            if self._sock is not None:
                return self
            try:
                sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            except TimeoutError as exc:
                raise ConsoleTimeoutError(f"connecting to the emulator console at {self._where()} timed out") from exc
            except OSError as exc:
                raise ConsoleConnectionError(
                    f"cannot connect to the emulator console at {self._where()}: {exc}"
                ) from exc
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(self.timeout)
            self._sock = sock
            self._buffer = b""
            try:
                self.greeting = self._read_reply("<greeting>")
                if any(line.startswith(GREETING_AUTH_REQUIRED) for line in self.greeting):
                    self._authenticate()
                self.authenticated = True
            except BaseException:
                self._drop()
                raise
            return self

    def _authenticate(self) -> None:
        token = self._token if self._token is not None else read_token(self.token_path)
        if not token:
            raise ConsoleAuthError(
                f"the emulator console at {self._where()} requires authentication, but the token "
                f"file {self.token_path} is missing or empty; pass token= or token_path="
            )
        try:
            self._send_and_read(f"auth {token}", shown="auth <token>")
        except ConsoleCommandError as exc:
            raise ConsoleAuthError(
                f"the emulator console at {self._where()} rejected the token from "
                f"{'the token argument' if self._token is not None else self.token_path}: {exc.message}"
            ) from exc

    def close(self) -> None:
        """Send ``quit`` (best effort) and close the connection. Safe to call twice."""
        with self._lock:
            if self._sock is None:
                return
            with contextlib.suppress(OSError):
                self._sock.sendall(b"quit\n")
            self._drop()

    def _drop(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._sock = None
        self._buffer = b""
        self.authenticated = False

    def __enter__(self) -> ConsoleClient:
        return self.connect()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- wire -------------------------------------------------------------------------------

    def _read_line(self, command: str) -> str:
        assert self._sock is not None
        while b"\n" not in self._buffer:
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError as exc:
                raise ConsoleTimeoutError(
                    f"emulator console at {self._where()} did not finish replying to {command!r} "
                    f"within {self.timeout:g} s"
                ) from exc
            except OSError as exc:
                raise ConsoleConnectionError(
                    f"emulator console at {self._where()} failed while replying to {command!r}: {exc}"
                ) from exc
            if not chunk:
                raise ConsoleConnectionError(
                    f"emulator console at {self._where()} closed the connection while replying to {command!r}"
                )
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\n")
        return raw.decode("utf-8", errors="replace").rstrip("\r")

    def _read_reply(self, command: str) -> list[str]:
        """Lines up to the terminating ``OK``; raise :class:`ConsoleCommandError` on ``KO:``."""
        output: list[str] = []
        while True:
            line = self._read_line(command)
            if line == "OK" or line.startswith("OK:"):
                if line != "OK":
                    output.append(line)
                return output
            if line.startswith("KO:"):
                raise ConsoleCommandError(command, line[3:].strip(), output, self._where())
            output.append(line)

    def _send_and_read(self, line: str, shown: str | None = None) -> list[str]:
        assert self._sock is not None
        try:
            self._sock.sendall(line.encode("utf-8") + b"\n")
        except OSError as exc:
            raise ConsoleConnectionError(f"cannot send to the emulator console at {self._where()}: {exc}") from exc
        return self._read_reply(shown or line)

    def command(self, line: str) -> list[str]:
        """Send one command line; return the lines written before ``OK``.

        Raises :class:`ValueError` if ``line`` holds a newline or other control character (it
        would run as a second command), :class:`ConsoleCommandError` on ``KO``.
        """
        if not line or any(ord(ch) < 32 or ord(ch) == 127 for ch in line):
            raise ValueError(f"a console command is one non-empty line without control characters, got {line!r}")
        with self._lock:
            self.connect()
            try:
                return self._send_and_read(line)
            except (ConsoleConnectionError, ConsoleTimeoutError):
                self._drop()  # the stream is out of step; the next command reconnects
                raise

    def ping(self) -> bool:
        """``True`` if the console answers ``ping`` (``I am alive!``), ``False`` if unreachable."""
        try:
            return any("alive" in line for line in self.command("ping"))
        except ConsoleError:
            return False

    def kill(self) -> None:
        """Ask the emulator to exit (``kill``). The connection is closed afterwards.

        The emulator may exit before its reply arrives; a connection closed right after ``kill``
        counts as success.
        """
        with self._lock:
            self.connect()
            try:
                self._send_and_read("kill")
            except ConsoleConnectionError:
                pass
            finally:
                self._drop()


# --------------------------------------------------------------------------------- adb emu


class AdbEmuConsole(_SnapshotCommands):
    """The console of a local emulator through ``adb -s emulator-N emu <command>``.

    Args:
        serial: ``emulator-N``; ``N`` is the console port on loopback.
        adb_path: the adb executable (default: ``adb`` on ``PATH``, else the one adbutils finds).
        home: directory whose ``.emulator_console_auth_token`` adb should read (it reads
            ``$HOME``'s); ``None`` keeps the current ``HOME``.
        timeout: seconds allowed for one ``adb emu`` run.

    adb prints whatever followed the second ``OK`` and exits 0 even on ``KO``, so errors are
    found in the text: a ``KO:`` line raises :class:`ConsoleCommandError` (and
    :class:`ConsoleAuthError` when the token was rejected or missing); an adb failure to connect
    raises :class:`ConsoleConnectionError`; a run longer than ``timeout`` raises
    :class:`ConsoleTimeoutError`.
    """

    def __init__(
        self,
        serial: str,
        *,
        adb_path: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        match = _EMULATOR_SERIAL.match(serial)
        if not match:
            raise ValueError(f"adb emu needs an emulator-N serial, got {serial!r}")
        self.serial = serial
        self.port = int(match.group(1))
        self.adb_path = str(adb_path) if adb_path is not None else _default_adb_path()
        self.home = Path(home) if home is not None else None
        self.timeout = float(timeout)

    def __repr__(self) -> str:
        return f"AdbEmuConsole({self.serial!r})"

    def _where(self) -> str:
        return f"{self.serial} (adb emu)"

    def command(self, line: str) -> list[str]:
        """Run ``adb -s <serial> emu <line>``; return the output lines before ``OK``."""
        if not line or any(ord(ch) < 32 or ord(ch) == 127 for ch in line):
            raise ValueError(f"a console command is one non-empty line without control characters, got {line!r}")
        env = dict(os.environ)
        if self.home is not None:
            env["HOME"] = str(self.home)
        argv = [self.adb_path, "-s", self.serial, "emu", *line.split()]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout, env=env, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ConsoleTimeoutError(f"{' '.join(argv)} did not finish within {self.timeout:g} s") from exc
        except OSError as exc:
            raise ConsoleConnectionError(f"cannot run {self.adb_path}: {exc}") from exc
        if done.returncode != 0:
            raise ConsoleConnectionError(
                f"adb emu for {self.serial} failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()}"
            )
        # adb sends "auth " + the token file's raw content + "\n": each newline inside the file
        # becomes an empty command line, which the console answers with one "unknown command" KO
        # ahead of the real reply. Those replies are adb's artefact, not this command's.
        spurious = self._token_newlines()
        output: list[str] = []
        for raw in done.stdout.splitlines():
            text = raw.rstrip("\r")
            if spurious and not output and text.startswith("KO: unknown command"):
                spurious -= 1
                continue
            if text.startswith("KO:"):
                message = text[3:].strip()
                if "authentication token" in message:
                    raise ConsoleAuthError(
                        f"the emulator console of {self.serial} rejected adb's token ({self._token_file()}): {message}"
                    )
                if message.startswith("unknown command") and self._token_missing():
                    raise ConsoleAuthError(
                        f"adb sent no auth token to {self.serial} ({self._token_file()} is missing or "
                        f"empty), so the console refused {line!r}: {message}"
                    )
                raise ConsoleCommandError(line, message, output, self._where())
            if text == "OK":
                continue
            output.append(text)
        while output and not output[-1]:
            output.pop()
        return output

    def _token_file(self) -> Path:
        home = self.home if self.home is not None else Path(os.environ.get("HOME", "~")).expanduser()
        return home / ".emulator_console_auth_token"

    def _token_missing(self) -> bool:
        return not read_token(self._token_file())

    def _token_newlines(self) -> int:
        try:
            raw = self._token_file().read_bytes()
        except OSError:
            return 0
        return raw.count(b"\n") if raw.strip() else 0

    def kill(self) -> None:
        """``adb emu kill``: ask the emulator to exit."""
        self.command("kill")


def _default_adb_path() -> str:
    found = shutil.which("adb")
    if found:
        return found
    try:
        import adbutils

        return str(adbutils.adb_path())
    except Exception as exc:  # adbutils missing, or it has no binary for this platform
        raise FileNotFoundError(
            "no adb executable: install Debian's adb (apt-get install adb) or Android platform-tools, or pass adb_path="
        ) from exc


def console_for_serial(
    serial: str,
    *,
    host: str = "127.0.0.1",
    console_port: int | None = None,
    token_path: str | os.PathLike[str] | None = None,
    token: str | None = None,
    adb_path: str | os.PathLike[str] | None = None,
    timeout: float = 10.0,
) -> SnapshotConsole:
    """The console of the device ``serial``, reached the way that serial allows.

    * ``emulator-N`` with no ``token``/``console_port`` and the standard token file name:
      :class:`AdbEmuConsole` (``adb -s emulator-N emu ...``; ``token_path``'s folder becomes adb's
      ``HOME``).
    * ``emulator-N`` with a ``token``, a ``console_port`` or a token file of another name: a
      direct :class:`ConsoleClient` on ``host:console_port`` (default port ``N``).
    * anything else (``host:port`` from ``adb connect``, a container): a direct
      :class:`ConsoleClient` on ``host:console_port`` with the token; ``console_port`` is
      required, since adb does not know it. Raises :class:`ValueError` without it.
    """
    match = _EMULATOR_SERIAL.match(serial)
    standard_file = token_path is None or Path(token_path).name == DEFAULT_TOKEN_PATH.name
    if match and console_port is None and token is None and standard_file:
        home = Path(token_path).expanduser().parent if token_path is not None else None
        return AdbEmuConsole(serial, adb_path=adb_path, home=home, timeout=max(timeout, 1.0))
    if console_port is None and match:
        console_port = int(match.group(1))
    if console_port is None:
        raise ValueError(
            f"serial {serial!r} is not an emulator-N serial, so adb cannot reach its console; "
            "pass console_port= (and host=, token=) for a direct console connection"
        )
    return ConsoleClient(host, console_port, token_path=token_path, token=token, timeout=timeout)


# ------------------------------------------------------------------------------------ server


@runtime_checkable
class SnapshotHooks(Protocol):
    """What :class:`ConsoleServer` calls for ``avd snapshot ...`` commands.

    Any exception a hook raises becomes ``KO: <message>`` for that command; the server stays up.
    """

    def save(self, name: str) -> None:
        """Save the current state as ``name`` (replacing a snapshot of that name)."""

    def load(self, name: str) -> bool:
        """Restore ``name``; ``False`` when no such snapshot exists."""

    def list(self) -> Sequence[str | SnapshotInfo]:
        """The snapshots, oldest first."""

    def delete(self, name: str) -> None:
        """Delete ``name``; raise :class:`KeyError` when it does not exist."""


class MemorySnapshotHooks:
    """Snapshot hooks over in-process state: ``capture() -> object`` and ``restore(object)``.

    Snapshots are kept in a dict by name, in save order. With no callables it records names only
    (a console whose snapshots carry no state, e.g. to exercise the protocol).

    Args:
        capture: returns the state to keep (called on save; should return a copy).
        restore: puts a kept state back (called on load).
    """

    def __init__(
        self,
        capture: Callable[[], object] | None = None,
        restore: Callable[[object], None] | None = None,
    ) -> None:
        self._capture = capture
        self._restore = restore
        self._snapshots: dict[str, SnapshotInfo] = {}
        self._states: dict[str, object] = {}
        self._lock = threading.Lock()

    def save(self, name: str) -> None:
        """Keep ``capture()`` under ``name``."""
        state = self._capture() if self._capture else None
        with self._lock:
            self._snapshots.pop(name, None)
            self._snapshots[name] = SnapshotInfo(name=name, saved_at=datetime.now())
            self._states[name] = state

    def load(self, name: str) -> bool:
        """``restore()`` the state kept under ``name``; ``False`` if there is none."""
        with self._lock:
            if name not in self._snapshots:
                return False
            state = self._states[name]
        if self._restore:
            self._restore(state)
        return True

    def list(self) -> list[SnapshotInfo]:
        """The kept snapshots, in save order."""
        with self._lock:
            return list(self._snapshots.values())

    def delete(self, name: str) -> None:
        """Forget ``name``; :class:`KeyError` if unknown."""
        with self._lock:
            if name not in self._snapshots:
                raise KeyError(f"snapshot '{name}' doesn't exist")
            del self._snapshots[name]
            del self._states[name]


class _Session(socketserver.BaseRequestHandler):
    """One console client: greeting, line assembly, dispatch."""

    server: _TCPServer

    def handle(self) -> None:
        console = self.server.console
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        console._register(sock)
        self.authed = not console.token
        try:
            if self.authed:
                self._write(HELP_PROMPT, "OK")
            else:
                self._write(
                    GREETING_AUTH_REQUIRED,
                    "Android Console: type 'auth <auth_token>' to authenticate",
                    "Android Console: you can find your <auth_token> in ",
                    f"'{console.token_path_shown}'",
                    "OK",
                )
            buffer = bytearray()
            while True:
                try:
                    chunk = sock.recv(4096)
                except OSError:
                    return
                if not chunk:
                    return
                for byte in chunk:
                    if byte == 13:  # '\r' is filtered out
                        continue
                    if byte != 10:
                        if len(buffer) >= MAX_LINE:
                            buffer.clear()  # the emulator discards an over-long line
                        buffer.append(byte)
                        continue
                    line = bytes(buffer)
                    buffer.clear()
                    if not self._run(line):
                        return
        except OSError:
            return  # the client went away mid-write
        finally:
            console._unregister(sock)

    def _write(self, *lines: str) -> None:
        self.request.sendall("".join(f"{line}\r\n" for line in lines).encode("utf-8"))

    def _run(self, raw: bytes) -> bool:
        """Run one line; ``False`` ends the session."""
        console = self.server.console
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            line = None
        if line is None or "\x00" in line:
            self._write("KO: Forbidden binary request. Aborting")
            return False
        if _HTTP_REQUEST_LINE.match(line.strip()):
            self._write("KO: Forbidden HTTP request. Aborting")
            return False
        words = line.split()
        if not words:
            self._write("KO: unknown command, try 'help'")
            return True
        head, args = words[0], words[1:]
        rest = line.strip()[len(head) :].strip()
        if head in ("quit", "exit"):
            return False
        if head in ("help", "h", "?", "help-verbose"):
            self._write(*console._help(self.authed), "OK")
            return True
        if head == "ping":
            self._write("I am alive!", "OK")
            return True
        if head == "auth":
            if not rest:
                self._write("KO: missing authentication token")
            elif console.check_token(rest):
                self.authed = True
                self._write(HELP_PROMPT, "OK")
            else:
                self._write("KO: authentication token does not match ~/.emulator_console_auth_token")
            return True
        if head == "avd" and args[:1] == ["name"]:
            self._write(console.avd_name, "OK")
            return True
        if not self.authed:
            self._write("KO: unknown command, try 'help'")
            return True
        if head == "kill":
            self._write(KILL_REPLY)
            console._killed()
            return False
        if head == "avd":
            self._avd(args, rest)
            return True
        self._write("KO: unknown command, try 'help'")
        return True

    def _avd(self, args: list[str], rest: str) -> None:
        console = self.server.console
        if not args:
            self._write(*console._avd_help(), "KO: missing sub-command")
            return
        if args[0] == "status":
            self._write("virtual device is running", "OK")
            return
        if args[0] != "snapshot":
            self._write(*console._avd_help(), "KO:  bad sub-command")
            return
        if len(args) < 2:
            self._write(*console._snapshot_help(), "KO: missing sub-command")
            return
        verb = args[1]
        name = rest.split(None, 2)[2].strip() if len(args) > 2 else ""
        if verb == "list":
            self._write(*console._call("list", None), "OK")
            return
        if verb not in ("save", "load", "del", "delete"):
            self._write(*console._snapshot_help(), "KO:  bad sub-command")
            return
        if not name:
            shown = "list" if verb in ("del", "delete") else verb  # the emulator's own wording
            self._write(f"KO: Argument missing, try 'avd snapshot {shown} <name>'")
            return
        self._write(*console._call("delete" if verb == "del" else verb, name))


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    console: ConsoleServer


class ConsoleServer:
    """A real TCP server speaking the emulator console protocol, with snapshot hooks.

    It lets a virtual device offer the same reset path as an emulator: ``ConsoleClient``,
    ``adb -s emulator-N emu`` and ``telnet`` all talk to it.

    Args:
        hooks: called for ``avd snapshot save|load|list|delete`` (see :class:`SnapshotHooks`).
        host: address to listen on (loopback by default, as the emulator does).
        port: TCP port; ``0`` picks a free one (read :attr:`port` after construction).
        token: the auth token; ``None`` or ``""`` disables authentication, as an empty token
            file does for the emulator.
        avd_name: what ``avd name`` answers.
        on_kill: called (from a server thread) after ``kill`` has been acknowledged; by default
            the server stops listening, as the emulator exits.
        token_path_shown: the path printed in the greeting.

    Commands served: ``help``/``h``/``?``, ``help-verbose``, ``ping``, ``auth``, ``avd name``,
    ``avd status``, ``avd snapshot list|save|load|del|delete``, ``kill``, ``quit``/``exit``;
    everything else is ``KO: unknown command, try 'help'``. Hook calls are serialised (the
    emulator's console is single-threaded). The server starts listening in the constructor and
    serves from a daemon thread; :meth:`close` (or leaving the ``with`` block) stops it and drops
    every client.
    """

    def __init__(
        self,
        hooks: SnapshotHooks,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        token: str | None = None,
        avd_name: str = "phoneenv_virtual",
        on_kill: Callable[[], None] | None = None,
        token_path_shown: str = "~/.emulator_console_auth_token",
    ) -> None:
        for method in ("save", "load", "list", "delete"):
            if not callable(getattr(hooks, method, None)):
                raise TypeError(f"hooks must have a callable {method}(); got {type(hooks).__name__}")
        if any(ch.isspace() for ch in (token or "")):
            raise ValueError("a console token cannot contain whitespace")
        self.hooks = hooks
        self.token = token or ""
        self.avd_name = avd_name
        self.on_kill = on_kill
        self.token_path_shown = token_path_shown
        self._hook_lock = threading.Lock()
        self._clients: set[socket.socket] = set()
        self._clients_lock = threading.Lock()
        self._server = _TCPServer((host, port), _Session, bind_and_activate=True)
        self._server.console = self
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"console-{self.port}", daemon=True
        )
        self._closed = False
        self.killed = threading.Event()
        self._thread.start()

    def __repr__(self) -> str:
        return f"ConsoleServer({self.host!r}, {self.port})"

    def __enter__(self) -> ConsoleServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def check_token(self, offered: str) -> bool:
        """Whether ``offered`` equals the token (constant-time comparison)."""
        import hmac

        return hmac.compare_digest(offered.strip().encode(), self.token.encode())

    def close(self) -> None:
        """Stop listening, close every client connection and join the server thread."""
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        with self._clients_lock:
            clients = list(self._clients)
        for sock in clients:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)

    # -- session support --------------------------------------------------------------------

    def _register(self, sock: socket.socket) -> None:
        with self._clients_lock:
            self._clients.add(sock)

    def _unregister(self, sock: socket.socket) -> None:
        with self._clients_lock:
            self._clients.discard(sock)

    def _killed(self) -> None:
        self.killed.set()
        if self.on_kill is not None:
            self.on_kill()
        else:
            threading.Thread(target=self.close, name=f"console-{self.port}-kill", daemon=True).start()

    def _call(self, verb: str, name: str | None) -> list[str]:
        """Run one hook; the reply lines (ending with ``OK`` or a ``KO:`` line)."""
        try:
            with self._hook_lock:
                if verb == "list":
                    return format_snapshot_table(list(self.hooks.list()))
                assert name is not None
                if verb == "save":
                    self.hooks.save(name)
                elif verb == "load":
                    if not self.hooks.load(name):
                        return [f"KO: {LOAD_FAILURE}"]
                else:
                    self.hooks.delete(name)
        except Exception as exc:  # any hook failure is a KO for this command, never a dead server
            log.warning("console %s: snapshot %s %r failed: %s", self.port, verb, name, exc)
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            return [f"KO: {message or type(exc).__name__}".replace("\n", " ")]
        return ["OK"]

    @staticmethod
    def _help(authed: bool) -> list[str]:
        names = ["help|h|?", "help-verbose", "ping", "avd", "auth", "quit|exit"]
        if authed:
            names = ["help|h|?", "help-verbose", "ping", "kill", "quit|exit", "avd"]
        return [
            "Android console commands:",
            "",
            *(f"    {name}" for name in names),
            "",
            "Try 'help-verbose' for more description",
            "Try 'help <command>' for command-specific help",
        ]

    @staticmethod
    def _avd_help() -> list[str]:
        return [
            "allows you to control (e.g. start/stop) the execution of the virtual device",
            "",
            "available sub-commands:",
            "    avd status           query virtual device status",
            "    avd name             query virtual device name",
            "    avd snapshot         state snapshot commands",
            "",
        ]

    @staticmethod
    def _snapshot_help() -> list[str]:
        return [
            "allows you to save and restore the virtual device state in snapshots",
            "",
            "available sub-commands:",
            "    avd snapshot list             list available state snapshots",
            "    avd snapshot save             save state snapshot",
            "    avd snapshot load             load state snapshot",
            "    avd snapshot del              delete state snapshot",
            "    avd snapshot delete           delete state snapshot",
            "",
        ]
