"""One device's shell over an adb server, and the batching of commands into few round trips.

Shell commands are built from argument lists, each argument ``shlex.quote``-d; several commands
go in one ``adb shell`` round trip, each followed by ``echo <nonce>:<i>:$?`` so that every
command's output and exit status can be told apart (the nonce is 64 random bits per round trip).
:meth:`DeviceShell.apply` chains writes with ``&&`` and can carry reads after them in the same
round trip. Reads are written as :data:`Reader` generators, which :func:`gather` runs together so
that many tables' reads share one round trip.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shlex
import socket
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from phoneenv.backends.adb.faults import DeviceFault, ReadFault
from phoneenv.contract import ErrorKind
from phoneenv.extras import require

__all__ = ["MAX_SCRIPT_BYTES", "DeviceShell", "Reader", "Unchecked", "gather"]

T = TypeVar("T")


MAX_SCRIPT_BYTES = 16_000
"""Longest command line sent in one ``adb shell`` (several commands are split across round trips;
adb devices accept at least 4 KiB, modern ones 1 MiB)."""


def _client_class() -> Any:
    """An ``adbutils.AdbClient`` that never starts an adb server by itself (adbutils runs
    ``adb start-server`` on the default port when a connection is refused, which would hide a
    killed server and start one nobody owns)."""
    require("device", "adbutils", feature="The adb backend")
    import adbutils
    from adbutils._adb import AdbConnection

    class _Connection(AdbConnection):
        def _safe_connect(self) -> Any:
            return self._create_socket()

        def close(self) -> None:  # adbutils sleeps 10 ms here after shutdown; not needed
            sock = getattr(self, "_AdbConnection__conn", None)
            if sock is None:
                return
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)
            sock.close()
            self._AdbConnection__conn = None

    class _Client(adbutils.AdbClient):
        def __init__(self, host: str, port: int, socket_timeout: float) -> None:
            super().__init__(host=host, port=port, socket_timeout=socket_timeout)
            self._where = (host, port)
            self._timeout = socket_timeout

        def make_connection(self, timeout: float | None = None) -> Any:
            conn = _Connection(*self._where)
            conn.conn.settimeout(timeout or self._timeout)
            return conn

    return _Client


class Unchecked(list[str]):
    """A command (argument list) whose failure is an answer, not a fault: :meth:`DeviceShell.batch`
    returns its exit status instead of raising (a ``stat`` of a file that may not exist)."""


@dataclass(frozen=True)
class Section:
    out: str
    status: int


class DeviceShell:
    """One device's shell through an adb server (adbutils), every failure a :class:`DeviceFault`.

    Args:
        serial: the device's serial (``emulator-5554``, ``127.0.0.1:5555``, a USB serial).
        host: the adb server's address.
        port: the adb server's port (adb's default 5037).
        timeout_s: seconds one round trip may take before it is a ``timeout`` fault.
    """

    def __init__(self, serial: str, host: str = "127.0.0.1", port: int = 5037, timeout_s: float = 30.0) -> None:
        self.serial = serial
        self.host = host
        self.port = port
        self.timeout_s = timeout_s
        self.client = _client_class()(host, port, timeout_s)
        self._device: Any = None
        self.round_trips = 0
        self.record = False
        """Keep every command sent in :attr:`sent` (off by default: an evaluation sends millions)."""
        self.sent: list[list[str]] = []
        """With :attr:`record`, every command sent as its argument list, in order (the ``echo``
        markers left out)."""

    def _fault(self, exc: BaseException) -> DeviceFault:
        import adbutils

        text = str(exc).strip() or type(exc).__name__
        if isinstance(exc, (adbutils.AdbTimeout, TimeoutError, socket.timeout)):
            return DeviceFault(f"{self.serial} did not answer within {self.timeout_s:g} s ({text})", ErrorKind.TIMEOUT)
        low = text.lower()
        if "unauthorized" in low:
            why = "unauthorized (the phone's 'Allow USB debugging?' prompt was not accepted)"
        elif "offline" in low:
            why = "offline"
        elif "not found" in low:
            why = "not connected to the adb server"
        elif isinstance(exc, ConnectionRefusedError) or "connect to adb server" in low or "refused" in low:
            why = f"unreachable: no adb server answers on {self.host}:{self.port}"
        elif isinstance(exc, (ConnectionError, BrokenPipeError, EOFError)) or "closed" in low or "reset" in low:
            why = "disconnected"
        else:
            why = "failing"
        return DeviceFault(f"device {self.serial} is {why}: {text[:300]}")

    def device(self) -> Any:
        """The ``adbutils.AdbDevice`` (created once)."""
        if self._device is None:
            self._device = self.client.device(self.serial)
        return self._device

    def state(self) -> str | None:
        """The adb server's state for this serial (``device``, ``offline``, ``unauthorized``...),
        None when it is not listed. Raises :class:`DeviceFault` when no adb server answers."""
        try:
            return next((d.state for d in self.client.list() if d.serial == self.serial), None)
        except Exception as exc:
            raise self._fault(exc) from exc

    def reconnect(self, wait_s: float = 15.0) -> None:
        """Make the adb server talk to the device again after a fault: for a ``host:port`` serial
        (which the adb server forgets when it restarts, and keeps ``offline`` after a dropped
        connection) ``adb disconnect`` + ``adb connect``; then wait up to ``wait_s`` seconds for
        the state ``device`` (15 s: a busy host lists a reconnected device late, and the wait
        ends as soon as it is back). Raises :class:`DeviceFault` saying the state it saw (``unauthorized``,
        ``offline``, not listed) or why ``adb connect`` failed."""
        import tenacity

        self._device = None
        if re.fullmatch(r"\[?[\w.:-]+\]?:\d+", self.serial) and not self.serial.startswith("emulator-"):
            try:
                with contextlib.suppress(Exception):
                    self.client.disconnect(self.serial)
                answer = self.client.connect(self.serial, timeout=min(self.timeout_s, 10.0))
            except Exception as exc:
                raise self._fault(exc) from exc
            if "authenticate" in answer:  # adb 29: "failed to authenticate to HOST:PORT"
                raise DeviceFault(
                    f"device {self.serial} is unauthorized (the phone's 'Allow USB debugging?' prompt was not "
                    f"accepted): adb connect said {answer.strip()!r}"
                )
            if "connected to" not in answer:
                raise DeviceFault(f"adb connect {self.serial}: {answer.strip()}")
        try:
            for attempt in tenacity.Retrying(
                stop=tenacity.stop_after_delay(wait_s),
                wait=tenacity.wait_fixed(0.05),
                retry=tenacity.retry_if_result(lambda state: state != "device"),
            ):
                with attempt:
                    state = self.state()
                if not attempt.retry_state.outcome.failed:  # type: ignore[union-attr]
                    attempt.retry_state.set_result(state)
        except tenacity.RetryError as exc:
            seen = exc.last_attempt.result()
            shown = "not listed" if seen is None else seen
            why = " (the phone's 'Allow USB debugging?' prompt was not accepted)" if seen == "unauthorized" else ""
            raise DeviceFault(f"device {self.serial} is {shown}{why} after reconnecting") from None

    def raw(self, script: str, timeout: float | None = None) -> tuple[bytes, bytes, int]:
        """Run one command line; returns (stdout, stderr, exit status). Uses ``shell,v2`` when the
        device offers it (separate stderr and a real exit status)."""
        self.round_trips += 1
        try:
            res = self.device().shell2(script, timeout=timeout or self.timeout_s, encoding=None, v2=True)
        except Exception as exc:
            self._device = None
            raise self._fault(exc) from exc
        return bytes(res.stdout or res.output), bytes(res.stderr), int(res.returncode)

    def batch(self, commands: Sequence[Sequence[str]], *, check: bool = True) -> list[Section]:
        """Run ``commands`` (argument lists) in as few round trips as fit :data:`MAX_SCRIPT_BYTES`;
        returns each command's stdout and exit status. With ``check``, a non-zero status (of a
        command that is not :class:`Unchecked`) or a provider error on stderr raises
        :class:`DeviceFault` naming the command."""
        out: list[Section] = []
        start = 0
        while start < len(commands):
            nonce = secrets.token_hex(8)
            parts: list[str] = []
            size = 0
            end = start
            while end < len(commands):
                part = f"{shlex.join(commands[end])}; echo {nonce}:{end - start}:$?"
                if parts and size + len(part) + 2 > MAX_SCRIPT_BYTES:
                    break
                parts.append(part)
                size += len(part) + 2
                end += 1
            self._note(commands[start:end])
            stdout, stderr, _ = self.raw("; ".join(parts))
            text = _utf8(stdout, self.serial)
            err = _utf8(stderr, self.serial)
            out.extend(self._sections(commands[start:end], text, err, nonce, check, DeviceFault))
            start = end
        return out

    def _sections(
        self,
        commands: Sequence[Sequence[str]],
        text: str,
        err: str,
        nonce: str,
        check: bool,
        fault: type[DeviceFault],
        first: int = 0,
    ) -> list[Section]:
        """``commands``' sections of ``text`` (each followed by ``echo <nonce>:<i>:$?``, ``i``
        counted from ``first``), checked as :meth:`batch` says; failures raise ``fault``."""
        sections = _split_sections(text, nonce, len(commands), first)
        if len(sections) < len(commands):
            raise fault(
                f"the shell of {self.serial} stopped before `{shlex.join(commands[len(sections)])}` finished"
                + (f": {err.strip()[:300]}" if err.strip() else "")
            )
        if check:
            for cmd, sec in zip(commands, sections, strict=True):
                if sec.status != 0 and not isinstance(cmd, Unchecked):
                    raise fault(
                        f"`{_short(cmd)}` failed on {self.serial} (exit {sec.status}): "
                        f"{(err.strip() or sec.out.strip())[:400]}"
                    )
            provider_error = "Error while accessing provider" in err or "Exception occurred" in err
            if provider_error and not all(isinstance(c, Unchecked) for c in commands):
                raise fault(f"a command failed on {self.serial}: {err.strip()[:400]}")
        return sections

    def apply(self, commands: Sequence[Sequence[str]], *, then: Sequence[Sequence[str]] = ()) -> list[Section]:
        """Run write commands (argument lists) chained with ``&&``, in as few round trips as fit
        :data:`MAX_SCRIPT_BYTES`; the first failure stops the chain and raises
        :class:`DeviceFault` with the device's stderr, as does a provider error on stderr (some
        Android versions' ``content`` exits 0 after printing one).

        ``then``: read commands run once every write succeeded, in the last write's round trip
        when they fit (else in :meth:`batch`'s); returns their sections, checked as :meth:`batch`
        checks them but failing with :class:`ReadFault` (the writes were applied). The script is
        ``w1 && .. && wn; echo N:0:$?; echo N >&2; r1; echo N:1:$?; ..``: the writes' status and
        stderr are told from the reads' by the nonce ``N`` (64 random bits), and the reads run
        whatever the writes did (their output is then dropped)."""
        start = 0
        reads: list[Section] | None = None if then else []
        while start < len(commands):
            nonce = secrets.token_hex(8)
            parts: list[str] = []
            size = 0
            end = start
            while end < len(commands):
                part = shlex.join(commands[end])
                if parts and size + len(part) + 4 > MAX_SCRIPT_BYTES:
                    break
                parts.append(part)
                size += len(part) + 4
                end += 1
            tail = [f"{shlex.join(c)}; echo {nonce}:{i + 1}:$?" for i, c in enumerate(then)]
            joined = end == len(commands) and bool(then)
            joined = joined and size + sum(len(p) + 2 for p in tail) + 2 * len(nonce) + 32 <= MAX_SCRIPT_BYTES
            self._note(commands[start:end])
            if joined:
                self._note(then)
                script = "; ".join([" && ".join(parts), f"echo {nonce}:0:$?", f"echo {nonce} >&2", *tail])
            else:
                script = " && ".join([*parts, f"echo {nonce}"])
            stdout, stderr, status = self.raw(script)
            err = _utf8(stderr, self.serial)
            if joined:
                text = _utf8(stdout, self.serial)
                m = re.search(re.escape(f"{nonce}:0:") + r"(\d+)\n", text)
                status = int(m.group(1)) if m else status or 1
                done = m is not None
                err, _, read_err = err.partition(f"{nonce}\n")
            else:
                done = stdout.rstrip(b"\n").endswith(nonce.encode())
            err = err.strip()
            if status != 0 or not done:
                what = f"`{_short(commands[start])}`" + (
                    f" .. `{_short(commands[end - 1])}`" if end - start > 1 else ""
                )
                raise DeviceFault(
                    f"{what} failed on {self.serial} (exit {status}): {err[:400] or 'the shell stopped early'}"
                )
            if "Error while accessing provider" in err or "Exception occurred" in err:
                raise DeviceFault(f"a command failed on {self.serial}: {err[:400]}")
            if joined:
                assert m is not None
                reads = self._sections(then, text[m.end() :], read_err, nonce, True, ReadFault, first=1)
            start = end
        if reads is None:
            try:
                reads = self.batch(then)
            except ReadFault:
                raise
            except DeviceFault as exc:
                raise ReadFault(exc.detail, exc.kind) from exc
        return reads

    def _note(self, commands: Sequence[Sequence[str]]) -> None:
        if self.record:
            self.sent.extend(list(c) for c in commands)

    def run(self, *args: str, check: bool = True) -> str:
        """Run one command (an argument list); its stdout."""
        return self.batch([list(args)], check=check)[0].out


def _short(cmd: Sequence[str], limit: int = 160) -> str:
    text = shlex.join(cmd)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _utf8(data: bytes, serial: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DeviceFault(f"{serial} printed bytes that are not UTF-8") from None


def _split_sections(text: str, nonce: str, count: int, first: int = 0) -> list[Section]:
    sections = []
    pos = 0
    for i in range(first, first + count):
        m = re.compile(re.escape(f"{nonce}:{i}:") + r"(\d+)\n").search(text, pos)
        if m is None:
            break
        sections.append(Section(text[pos : m.start()], int(m.group(1))))
        pos = m.end()
    return sections


Reader = Generator[list[list[str]], list[Section], T]
"""Device reads as a generator: it yields the commands (argument lists) it needs next, is sent
their sections (stdout and status, in order) and returns what it read. Readers run together with
:func:`gather` share round trips: a whole verification is one or two."""


def gather(readers: Sequence[Reader[Any]]) -> Reader[list[Any]]:
    """Run ``readers`` in lockstep: every step sends the commands all of them still need at once
    (a command several of them send runs once); returns their results in order."""
    results: list[Any] = [None] * len(readers)
    pending: dict[int, list[list[str]]] = {}
    for i, reader in enumerate(readers):
        try:
            pending[i] = next(reader)
        except StopIteration as stop:
            results[i] = stop.value
    while pending:
        unique = {_key(c): c for cmds in pending.values() for c in cmds}
        secs = yield list(unique.values())
        answer = dict(zip(unique, secs, strict=True))
        step, pending = pending, {}
        for i, cmds in step.items():
            try:
                pending[i] = readers[i].send([answer[_key(c)] for c in cmds])
            except StopIteration as stop:
                results[i] = stop.value
    return results


def const_reader(value: T) -> Reader[T]:
    """A reader that reads nothing and returns ``value``."""
    return value
    yield []  # unreachable: makes this a generator


def _key(command: list[str]) -> tuple[bool, tuple[str, ...]]:
    return isinstance(command, Unchecked), tuple(command)
