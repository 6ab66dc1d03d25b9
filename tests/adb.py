"""Test helpers for the adb wire protocol: a private real adb server, device connection helpers,
a tiny echo device, and a raw-socket adb host for protocol-level checks.

    with AdbServer(home_dir) as server:                   # `adb nodaemon server` on a free port
        with served_device(server.client, EchoHandler()) as (device_server, device):
            device.shell("echo hi")                       # adbutils.AdbDevice, through the real adb

The adb server runs with ``HOME`` pointing at ``home_dir`` (its key pair and state stay there),
``ADB_EMU=0`` (no scanning of the emulator ports 5555-5585) and ``ADB_MDNS=0``; it is started in the
foreground (``nodaemon``) so that the fixture owns its process and can always stop it.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phoneenv.farm.adbwire import AdbDeviceServer, ShellResult, VirtualFiles
from tests import waiting

__all__ = [
    "AdbServer",
    "DeviceTracker",
    "EchoHandler",
    "RawAdbHost",
    "adb_binary",
    "adb_cli",
    "clean_env",
    "connect_device",
    "free_port",
    "served_device",
    "server_version",
    "state_of",
    "wait_for_state",
]

ECHO_MODEL = "Echo_Phone"


def adb_binary() -> str | None:
    """The ``adb`` executable: ``$PHONEENV_ADB`` when set, else ``adb`` on PATH (Debian's package
    installs /usr/bin/adb), else ``None``."""
    return os.environ.get("PHONEENV_ADB") or shutil.which("adb")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dying_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Child setup: its own process group; on Linux SIGTERM when the parent dies (no orphan adb)."""
    os.setsid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class AdbServer:
    """A real adb server (``adb -P PORT nodaemon server``) of our own on 127.0.0.1.

    ``home`` holds its ``.android`` folder and ``adb.log``; ``port`` is chosen free at
    :meth:`start` unless given. :attr:`client` is an ``adbutils.AdbClient`` on it.
    """

    home: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def log_path(self) -> Path:
        return self.home / "adb.log"

    @property
    def client(self) -> Any:
        import adbutils

        return adbutils.AdbClient(host="127.0.0.1", port=self.port, socket_timeout=10)

    def start(self, timeout: float = 20.0) -> AdbServer:
        """Start the server and wait until it answers ``host:version``; ``RuntimeError`` with its
        log tail when it exits or stays silent past ``timeout`` seconds."""
        binary = adb_binary()
        if binary is None:
            raise RuntimeError("adb is not installed")
        self.home.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        self.env = {
            **clean_env(),
            "HOME": str(self.home),
            "ADB_EMU": "0",
            "ADB_MDNS": "0",
        }
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [binary, "-P", str(self.port), "nodaemon", "server"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            preexec_fn=_dying_with_parent,
        )
        log.close()
        deadline = time.monotonic() + waiting.scaled(timeout)
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"adb server exited with {self.process.returncode}:\n{self.log_tail()}")
            if server_version(self.port) is not None:
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"adb server silent after {timeout} s:\n{self.log_tail()}")

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def cli(self, *args: str, timeout: float = 30.0, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run the ``adb`` command-line client against this server (see :func:`adb_cli`)."""
        return adb_cli(self.port, *args, timeout=timeout, input=input)

    def stop(self) -> None:
        """``adb kill-server``, then SIGTERM/SIGKILL if the process lingers."""
        if self.process is None:
            return
        if self.process.poll() is None:
            with contextlib.suppress(Exception):
                self.cli("kill-server", timeout=10)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                try:
                    self.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        self.process = None

    def __enter__(self) -> AdbServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def clean_env() -> dict[str, str]:
    """This process's environment without ``ADB_*``/``ANDROID_*`` variables (``ANDROID_SERIAL``,
    ``ADB_SERVER_SOCKET``, ... would redirect the adb client)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("ADB_", "ANDROID_"))}


def adb_cli(
    port: int, *args: str, timeout: float = 30.0, input: bytes | None = None, stdin: Any = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``adb -P port ARGS`` (the command-line client) and capture its output. Its stdin is
    ``input``, or the file ``stdin``, or /dev/null: never the test runner's own stdin, which the
    client would otherwise read and forward to ``adb shell``."""
    binary = adb_binary()
    assert binary is not None, "adb is not installed"
    return waiting.run(
        [binary, "-P", str(port), *args],
        input=input,
        stdin=stdin if stdin is not None else (None if input is not None else subprocess.DEVNULL),
        capture_output=True,
        env=clean_env(),
        timeout=timeout,
    )


def server_version(port: int, timeout: float = 1.0) -> int | None:
    """The version an adb server on 127.0.0.1:``port`` answers to ``host:version``, or ``None`` when
    nothing answers. A raw socket on purpose: adbutils, finding no server, runs ``adb start-server``
    on the default port 5037, which a test must never do."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"000chost:version")
            reply = s.recv(12)
    except OSError:
        return None
    if len(reply) < 12 or not reply.startswith(b"OKAY"):
        return None
    return int(reply[8:12], 16)


class DeviceTracker:
    """Records every device-list change the adb server pushes on ``host:track-devices`` (a raw
    socket, so that the test can stop it): :attr:`states` is the list of ``(serial, state)`` seen,
    in order, with ``None`` for a serial that left the list.

        with DeviceTracker(port) as tracker:
            ...
        assert ("127.0.0.1:1234", "offline") in tracker.states
    """

    def __init__(self, port: int) -> None:
        self.states: list[tuple[str, str | None]] = []
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self._sock.sendall(b"%04xhost:track-devices" % len("host:track-devices"))
        if self._exact(4) != b"OKAY":
            raise RuntimeError("the adb server refused host:track-devices")
        self._sock.settimeout(None)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("track-devices closed")
            buf += chunk
        return buf

    def _run(self) -> None:
        current: dict[str, str] = {}
        with contextlib.suppress(OSError, ConnectionError, ValueError):
            while True:
                text = self._exact(int(self._exact(4), 16)).decode()
                seen = dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)
                for serial in current.keys() - seen.keys():
                    self.states.append((serial, None))
                for serial, state in seen.items():
                    if current.get(serial) != state:
                        self.states.append((serial, state))
                current = seen

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._thread.join(timeout=5)

    def __enter__(self) -> DeviceTracker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def state_of(client: Any, serial: str) -> str | None:
    """The adb server's state for ``serial`` (``device``, ``offline``, ``unauthorized``, ...), or
    ``None`` when it is not listed."""
    for info in client.list():
        if info.serial == serial:
            return info.state
    return None


def wait_for_state(client: Any, serial: str, states: set[str | None], timeout: float = 15.0) -> str | None:
    """Poll the device list until ``serial``'s state is one of ``states`` (``None``: not listed);
    returns it, or raises ``TimeoutError`` naming the last state seen."""
    deadline = time.monotonic() + waiting.scaled(timeout)
    state = state_of(client, serial)
    while state not in states:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{serial} stayed {state!r}, expected one of {states} within {timeout} s")
        time.sleep(0.02)
        state = state_of(client, serial)
    return state


def connect_device(client: Any, serial: str, timeout: float = 15.0, state: str = "device") -> Any:
    """``adb connect serial`` through adbutils, then wait until it is listed as ``state``; returns
    the ``adbutils.AdbDevice``. Raises ``RuntimeError`` when adb cannot connect, ``TimeoutError``."""
    answer = client.connect(serial, timeout=timeout)
    if "connected to" not in answer:
        raise RuntimeError(f"adb connect {serial}: {answer}")
    wait_for_state(client, serial, {state}, timeout)
    return client.device(serial)


@contextlib.contextmanager
def served_device(client: Any, handler: Any, **server_options: Any) -> Iterator[tuple[AdbDeviceServer, Any]]:
    """Serve ``handler`` on a free port, ``adb connect`` it, yield ``(server, adbutils device)``;
    disconnect and stop afterwards."""
    with AdbDeviceServer(handler, **server_options) as server:
        try:
            device = connect_device(client, server.serial)
            yield server, device
        finally:
            with contextlib.suppress(Exception):
                client.disconnect(server.serial)


def _png(width: int = 72, height: int = 128) -> bytes:
    from PIL import Image

    image = Image.new("RGB", (width, height), (0, 0, 0))
    for y in range(height):
        for x in range(width):
            image.putpixel((x, y), (x * 255 // width, y * 255 // height, 128))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


class EchoHandler:
    """A tiny :class:`phoneenv.farm.adbwire.DeviceHandler` for transport tests.

    Commands (``;``-separated, ``$?`` is the previous exit code, as adbutils' v1 ``shell2`` needs):
    ``echo WORDS`` (stdout), ``err WORDS`` (stderr), ``exit N``, ``cat`` (stdin to stdout),
    ``bytes N SEED`` (N pseudo-random bytes, see :func:`pattern`), ``getprop ro.product.model``,
    ``screencap -p`` (``png``, default a fixed 72x128 gradient), ``both`` (``out`` on stdout, ``err`` on stderr, exit 7), ``crash``
    (raises), ``badresult`` (returns a str, not a ShellResult); anything else answers
    ``sh: NAME: not found`` and exit 127. Every call is recorded in :attr:`calls`.
    """

    def __init__(self, model: str = ECHO_MODEL, png: bytes | None = None) -> None:
        self.model = model
        self.files = VirtualFiles()
        self.calls: list[tuple[str, bytes]] = []
        self.reboots: list[str] = []
        self.png = _png() if png is None else png

    def banner(self) -> dict[str, str]:
        return {"ro.product.name": "echo_phone", "ro.product.model": self.model, "ro.product.device": "echo"}

    def on_reboot(self, target: str) -> None:
        self.reboots.append(target)

    def shell(self, command: str, stdin: bytes) -> ShellResult:
        self.calls.append((command, stdin))
        if command == "badresult":
            return "not a ShellResult"  # type: ignore[return-value]
        out, err, code = b"", b"", 0
        for part in command.split(";"):
            words = shlex.split(part.replace("$?", str(code)))
            if not words:
                continue
            o, e, code = self._one(words, stdin)
            out, err = out + o, err + e
        return ShellResult(out, err, code)

    def _one(self, words: list[str], stdin: bytes) -> tuple[bytes, bytes, int]:
        name, args = words[0], words[1:]
        if name == "echo":
            return (" ".join(args) + "\n").encode(), b"", 0
        if name == "err":
            return b"", (" ".join(args) + "\n").encode(), 0
        if name == "exit":
            return b"", b"", int(args[0]) if args else 0
        if name == "cat":
            return stdin, b"", 0
        if name == "bytes":
            return pattern(int(args[0]), int(args[1]) if len(args) > 1 else 0), b"", 0
        if name == "getprop" and args == ["ro.product.model"]:
            return (self.model + "\n").encode(), b"", 0
        if name == "screencap" and args == ["-p"]:
            return self.png, b"", 0
        if name == "both":
            return b"out\n", b"err\n", 7
        if name == "crash":
            raise RuntimeError("boom")
        return b"", f"sh: {name}: not found\n".encode(), 127


def pattern(n: int, seed: int = 0) -> bytes:
    """``n`` reproducible pseudo-random bytes (numpy's PCG64 seeded with ``seed``)."""
    import numpy as np

    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


# -- a raw adb host for protocol-level tests (its own packing, independent of phoneenv) ------------


def _id(name: bytes) -> int:
    return int.from_bytes(name, "little")


class RawAdbHost:
    """A bare adb host on a TCP socket: sends and reads adb messages with ``struct`` directly.

    ``send(b"OPEN", 1, 0, b"shell:echo hi\\0")``; ``recv()`` returns ``(name, arg0, arg1, payload)``
    or raises ``TimeoutError`` / ``ConnectionError`` (peer closed).
    """

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, name: bytes, arg0: int, arg1: int, payload: bytes = b"", check: int | None = None) -> None:
        command = _id(name)
        data_check = sum(payload) & 0xFFFFFFFF if check is None else check
        header = struct.pack("<6I", command, arg0, arg1, len(payload), data_check, command ^ 0xFFFFFFFF)
        self.sock.sendall(header + payload)

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the device closed the connection")
            buf += chunk
        return buf

    def recv(self, timeout: float | None = None) -> tuple[str, int, int, bytes]:
        if timeout is not None:
            self.sock.settimeout(timeout)
        try:
            command, arg0, arg1, length, data_check, magic = struct.unpack("<6I", self._exact(24))
        except TimeoutError as exc:
            raise TimeoutError("no message") from exc
        assert magic == command ^ 0xFFFFFFFF, "the device sent a bad magic"
        payload = self._exact(length) if length else b""
        assert data_check in (0, sum(payload) & 0xFFFFFFFF), "the device sent a wrong data_check"
        self.last_check = data_check
        return command.to_bytes(4, "little").decode("latin-1"), arg0, arg1, payload

    def handshake(self, version: int = 0x01000001, maxdata: int = 1024 * 1024) -> tuple[str, int, int, bytes]:
        self.send(b"CNXN", version, maxdata, b"host::features=shell_v2\0")
        return self.recv()

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """Whether the device closes the connection within ``timeout`` (reads and drops data)."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
        except TimeoutError:
            return False
        except OSError:
            return True
        return True

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawAdbHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
