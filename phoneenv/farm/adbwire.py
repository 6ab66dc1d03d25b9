"""The device side of the adb wire protocol over TCP: what ``adbd`` does on a phone, serving a
:class:`DeviceHandler` (a virtual device's shell and file system) to the real adb server.

Example (``handler`` is any :class:`DeviceHandler`, for instance
``phoneenv.farm.virtual.VirtualDevice()``)::

    from phoneenv.farm.adbwire import AdbDeviceServer

    with AdbDeviceServer(handler) as server:          # 127.0.0.1, a free port
        print(server.serial)                          # "127.0.0.1:40123"
        # $ adb connect 127.0.0.1:40123 && adb -s 127.0.0.1:40123 shell getprop ro.product.model

Sources: AOSP ``packages/modules/adb`` (formerly ``system/core/adb``): ``protocol.txt`` (messages and
streams), ``SERVICES.TXT`` (service names), ``SYNC.TXT`` and ``file_sync_protocol.h`` (``sync:``),
``shell_protocol.h`` (``shell,v2:``); where the text files are silent, ``adbd``'s own behaviour in
``adb.cpp`` (``handle_packet``, ``calculate_apacket_checksum``, ``parse_banner``),
``daemon/shell_service.cpp`` and ``daemon/file_sync_service.cpp``.

What is implemented, on the wire:

- **Messages**: a 24-byte little-endian header ``command, arg0, arg1, data_length, data_check,
  magic`` (``magic == command ^ 0xffffffff``) and ``data_length`` payload bytes. ``data_check`` is
  the byte sum of the payload modulo 2**32 (:func:`checksum`; protocol.txt calls it crc32, adb has
  always summed bytes). Hosts at version ``0x01000001`` or later send 0 and never check it; this
  device checks a non-zero value only while the negotiated version is older, and fills it in on
  what it sends only then (and always on ``CNXN``/``AUTH``, which precede negotiation).
- **Handshake**: the host's ``CNXN(version, maxdata, "host::...")`` is answered with
  ``CNXN(our version, our maxdata, "device::ro.product.name=..;ro.product.model=..;
  ro.product.device=..;features=shell_v2,stat_v2,ls_v2[,handler features]")``. Both sides then use
  the smaller version and maxdata. With ``require_auth=True`` the device answers with
  ``AUTH(TOKEN)`` instead and never accepts a signature or a public key, which the adb server
  shows as ``unauthorized`` (a phone whose "Allow USB debugging?" dialog was never confirmed).
- **Streams**: ``OPEN(host id, 0, "service\\0")`` is answered ``OKAY(our id, host id)`` or, for an
  unknown service, ``CLSE(0, host id)``. Each stream keeps one ``WRTE`` in flight: the next is sent
  only after the host's ``OKAY``; payloads are cut to the negotiated maxdata. Host writes are
  acknowledged with ``OKAY`` once consumed (back-pressure), or at once when the service reads no
  input. A stream the device ends gets ``CLSE`` right after its last ``WRTE``, as ``adbd`` closes
  at end of file. Many streams per connection, many connections per server, each stream served
  on its own thread (reused from a pool that grows when all are busy); the handler's methods are
  called one at a time.
- **Services**:

  - ``shell:<cmd>``: raw (v1): stderr and stdout merged on one stream, no exit code; host input
    ignored. A :class:`ShellResult` does not say how the two interleaved, so stderr goes first:
    the end of stdout stays the end of the stream, which the common ``cmd; echo $?`` idiom for
    exit codes over v1 (adbutils' ``shell2``) relies on.
  - ``shell,v2[,TERM=..][,raw|pty]:<cmd>``: shell protocol packets (1-byte id, uint32 LE length,
    data): stdout (1), stderr (2), then exit (3, one byte). Input packets: stdin (0),
    close-stdin (4), window-size (5). *Stdin policy* (the handler takes stdin as one ``bytes``, so
    the command can only run once stdin is known): when the service names a terminal type
    (``raw``/``pty``, which the ``adb`` command-line client always does; its stdin thread sends a
    window-size packet first when stdin is a terminal, else the stdin data and then close-stdin),
    the device waits for the first input packet. Close-stdin or window-size (an interactive
    terminal; keystrokes are not forwarded) runs the command with empty stdin; stdin data is
    collected until close-stdin. Each wait for a packet is bounded by ``stdin_timeout_s``, after
    which the command runs with what arrived. A service naming no terminal type (adbutils'
    ``shell,v2:``, which never writes stdin) runs at once with empty stdin. Input arriving after the
    command started is acknowledged and dropped.
  - ``exec:<cmd>``: raw output, no exit code (``adb exec-out``, screencap pulls). As in ``adbd``,
    which points a raw subprocess's stderr at the same socket (``shell_service.cpp``), stderr is
    merged too (first, as for ``shell:``); a handler keeps binary output clean by writing nothing
    to stderr.
  - ``sync:``: ``STAT``/``LIST``/``SEND``/``RECV``/``QUIT`` and, as advertised by ``stat_v2`` and
    ``ls_v2``, ``STA2``/``LST2``/``LIS2``; data in ``DATA`` chunks of at most 64 KiB, ``DONE``
    carrying the mtime of a push, ``OKAY``/``FAIL`` replies; over :class:`VirtualFiles`.
  - ``reboot:<target>``: calls :meth:`DeviceHandler.on_reboot` and closes the stream.
  - anything else: ``CLSE(0, host id)`` (the client sees ``closed``).

- **Faults**: a connection sending garbage, a bad magic, an oversized or truncated message, or a
  wrong checksum while checksums are in force, is dropped; the server keeps serving the others.
  A handler that raises is reported on the stream (v2: stderr and exit code 255), never to the
  server.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import itertools
import logging
import os
import posixpath
import queue
import secrets
import socket
import socketserver
import stat
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from phoneenv.errors import PhoneEnvError

__all__ = [
    "AUTH_RSAPUBLICKEY",
    "AUTH_SIGNATURE",
    "AUTH_TOKEN",
    "A_AUTH",
    "A_CLSE",
    "A_CNXN",
    "A_OKAY",
    "A_OPEN",
    "A_SYNC",
    "A_VERSION",
    "A_VERSION_MIN",
    "A_VERSION_SKIP_CHECKSUM",
    "A_WRTE",
    "MAX_PAYLOAD",
    "MAX_PAYLOAD_V1",
    "SYNC_DATA_MAX",
    "TRANSPORT_FEATURES",
    "AdbDeviceServer",
    "DeviceHandler",
    "FileStat",
    "Message",
    "ProtocolError",
    "ServerStats",
    "Service",
    "ShellResult",
    "VirtualFiles",
    "checksum",
    "pack_message",
    "parse_service",
    "shell_packet",
    "unpack_header",
]

log = logging.getLogger(__name__)


def _command(name: bytes) -> int:
    """The little-endian uint32 of a 4-letter command name, as adb's ``MKID``."""
    return struct.unpack("<I", name)[0]


A_SYNC = _command(b"SYNC")
A_CNXN = _command(b"CNXN")
A_OPEN = _command(b"OPEN")
A_OKAY = _command(b"OKAY")
A_CLSE = _command(b"CLSE")
A_WRTE = _command(b"WRTE")
A_AUTH = _command(b"AUTH")
_COMMAND_NAMES = {A_SYNC: "SYNC", A_CNXN: "CNXN", A_OPEN: "OPEN", A_OKAY: "OKAY", A_CLSE: "CLSE", A_WRTE: "WRTE"}
_COMMAND_NAMES[A_AUTH] = "AUTH"

A_VERSION_MIN = 0x01000000
"""The original protocol version: checksums are sent and checked."""
A_VERSION_SKIP_CHECKSUM = 0x01000001
"""From this version on (Android 9), ``data_check`` is 0 on the wire and never checked."""
A_VERSION = 0x01000001
"""The version this device announces by default (adb 29 hosts announce the same)."""
MAX_PAYLOAD_V1 = 4 * 1024
"""The payload limit of version 0x01000000 and of the handshake messages."""
MAX_PAYLOAD = 1024 * 1024
"""The largest payload this device accepts and announces by default (adbd's ``MAX_PAYLOAD``)."""

AUTH_TOKEN = 1
AUTH_SIGNATURE = 2
AUTH_RSAPUBLICKEY = 3

TRANSPORT_FEATURES: tuple[str, ...] = ("shell_v2", "stat_v2", "ls_v2")
"""The adb features this transport implements; a handler may add shell-level ones (``cmd``)."""

_HEADER = struct.Struct("<6I")
HEADER_SIZE = _HEADER.size
_UINT32_MAX = 0xFFFFFFFF

# shell_protocol.h
SHELL_STDIN = 0
SHELL_STDOUT = 1
SHELL_STDERR = 2
SHELL_EXIT = 3
SHELL_CLOSE_STDIN = 4
SHELL_WINDOW_SIZE = 5
_SHELL_HEADER = struct.Struct("<BI")

# file_sync_protocol.h
SYNC_DATA_MAX = 64 * 1024
"""The largest ``DATA`` chunk in ``sync:`` (``SYNC_DATA_MAX``)."""
_SYNC_PATH_MAX = 1024
_ID_LSTAT_V1 = b"STAT"
_ID_STAT_V2 = b"STA2"
_ID_LSTAT_V2 = b"LST2"
_ID_LIST_V1 = b"LIST"
_ID_LIST_V2 = b"LIS2"
_ID_DENT_V1 = b"DENT"
_ID_DENT_V2 = b"DNT2"
_ID_SEND = b"SEND"
_ID_RECV = b"RECV"
_ID_DONE = b"DONE"
_ID_DATA = b"DATA"
_ID_OKAY = b"OKAY"
_ID_FAIL = b"FAIL"
_ID_QUIT = b"QUIT"
_SYNC_REQUEST = struct.Struct("<4sI")
_STAT_V1 = struct.Struct("<4sIII")  # id, mode, size, mtime
_STAT_V2 = struct.Struct("<4sIQQIIIIQqqq")  # id, error, dev, ino, mode, nlink, uid, gid, size, atime, mtime, ctime
_DENT_V1 = struct.Struct("<4sIIII")  # id, mode, size, mtime, namelen
_DENT_V2 = struct.Struct("<4sIQQIIIIQqqqI")  # stat_v2 fields, namelen

_MAX_STDIN = 64 * 1024 * 1024


class ProtocolError(PhoneEnvError):
    """The peer broke the adb protocol (bad magic, oversized or truncated message, bad checksum)."""


class _StreamClosed(Exception):
    """The stream (or its whole connection) was closed while a service still used it."""


class Message(NamedTuple):
    """One adb message: ``command`` (e.g. :data:`A_OPEN`), ``arg0``/``arg1`` (uint32) and ``payload``."""

    command: int
    arg0: int
    arg1: int
    payload: bytes = b""

    @property
    def name(self) -> str:
        """The command's 4-letter name (``"OPEN"``), or its hex value when unknown."""
        return _COMMAND_NAMES.get(self.command, f"0x{self.command:08x}")


def checksum(payload: bytes) -> int:
    """adb's ``data_check`` of a payload: the sum of its bytes modulo 2**32.

    protocol.txt names the field ``data_crc32``, but adb computes a plain byte sum
    (``calculate_apacket_checksum`` in ``adb.cpp``). Returns a uint32; 0 for an empty payload.
    """
    if not payload:
        return 0
    return int(np.frombuffer(payload, dtype=np.uint8).sum(dtype=np.uint64)) & _UINT32_MAX


def pack_message(command: int, arg0: int, arg1: int, payload: bytes = b"", *, with_checksum: bool = True) -> bytes:
    """The wire bytes of one message: the 24-byte header followed by ``payload``.

    ``with_checksum=False`` writes 0 in ``data_check``, as peers at version
    :data:`A_VERSION_SKIP_CHECKSUM` or later do. Raises ``ValueError`` when an argument is not a
    uint32 or the payload is longer than 2**32 - 1 bytes.
    """
    for label, value in (("command", command), ("arg0", arg0), ("arg1", arg1), ("data_length", len(payload))):
        if not 0 <= value <= _UINT32_MAX:
            raise ValueError(f"{label} must be a uint32, got {value}")
    check = checksum(payload) if with_checksum else 0
    return _HEADER.pack(command, arg0, arg1, len(payload), check, command ^ _UINT32_MAX) + payload


def unpack_header(header: bytes) -> tuple[int, int, int, int, int]:
    """Parse a 24-byte header into ``(command, arg0, arg1, data_length, data_check)``.

    Raises :class:`ProtocolError` when the header is not 24 bytes or its magic is not
    ``command ^ 0xffffffff``.
    """
    if len(header) != HEADER_SIZE:
        raise ProtocolError(f"an adb header is {HEADER_SIZE} bytes, got {len(header)}")
    command, arg0, arg1, length, check, magic = _HEADER.unpack(header)
    if magic != command ^ _UINT32_MAX:
        raise ProtocolError(f"bad magic 0x{magic:08x} for command 0x{command:08x}")
    return command, arg0, arg1, length, check


def shell_packet(kind: int, data: bytes = b"") -> bytes:
    """One shell-protocol packet (``shell_protocol.h``): the id byte, the uint32 LE length, the data.

    ``kind`` is 0 stdin, 1 stdout, 2 stderr, 3 exit, 4 close-stdin, 5 window-size; raises
    ``ValueError`` outside 0..255.
    """
    if not 0 <= kind <= 255:
        raise ValueError(f"a shell packet id is one byte, got {kind}")
    return _SHELL_HEADER.pack(kind, len(data)) + data


class Service(NamedTuple):
    """A parsed service name: ``kind`` (``shell``, ``exec``, ``sync`` or ``reboot``), ``command``
    (the shell command line or the reboot target) and ``args`` (the shell's comma-separated
    arguments, e.g. ``("v2", "TERM=xterm", "raw")``)."""

    kind: str
    command: str = ""
    args: tuple[str, ...] = ()

    @property
    def shell_v2(self) -> bool:
        """Whether a ``shell`` service speaks the shell protocol (``v2`` among its arguments)."""
        return "v2" in self.args


def parse_service(name: str) -> Service | None:
    """Parse a service name as sent in ``OPEN`` (without its trailing NUL); ``None`` when unknown.

    ``shell[,arg...]:cmd`` (split at the first ``:`` like ``adbd``), ``exec:cmd``, ``sync:``,
    ``reboot:[target]``. See SERVICES.TXT.
    """
    if name.startswith("shell"):
        head, sep, command = name.partition(":")
        if not sep or (head != "shell" and not head.startswith("shell,")):
            return None
        args = tuple(a for a in head.split(",")[1:] if a)
        return Service("shell", command, args)
    if name.startswith("exec:"):
        return Service("exec", name[len("exec:") :])
    if name == "sync:":
        return Service("sync")
    if name == "reboot" or name.startswith("reboot:"):
        return Service("reboot", name.partition(":")[2])
    return None


# -- the boundary with the device shell -------------------------------------------------------------


class ShellResult(NamedTuple):
    """What one shell command line produced: ``stdout`` and ``stderr`` bytes and its ``exit_code``
    (0..255 on the wire; other values are reduced modulo 256, as a process's status is)."""

    stdout: bytes
    stderr: bytes
    exit_code: int


class FileStat(NamedTuple):
    """A file's metadata: ``mode`` (``st_mode``: type bits ``S_IFREG``/``S_IFDIR`` plus permission
    bits), ``size`` in bytes (4096 for a directory) and ``mtime`` in whole seconds since the epoch."""

    mode: int
    size: int
    mtime: int

    @property
    def is_dir(self) -> bool:
        """Whether this is a directory."""
        return stat.S_ISDIR(self.mode)


class _Node:
    __slots__ = ("children", "data", "mode", "mtime")

    def __init__(self, mode: int, mtime: int, data: bytes | None) -> None:
        self.mode = mode
        self.mtime = mtime
        self.data = data  # None for a directory
        self.children: set[str] | None = set() if data is None else None


class VirtualFiles:
    """An in-memory file tree (absolute POSIX paths), the file system ``sync:`` serves.

    Every path maps to a regular file (mode, mtime in seconds, bytes) or a directory; ``/`` always
    exists and writing a file creates its missing parent directories (mode 0o775), as ``adbd``'s
    push does. Paths are normalised (``/sdcard//a/../b`` is ``/sdcard/b``); a relative path or one
    holding a NUL raises ``ValueError``. Errors are the built-in ``OSError`` subclasses with their
    ``errno`` set (``FileNotFoundError``, ``NotADirectoryError``, ``IsADirectoryError``,
    ``FileExistsError``, ``OSError(ENOTEMPTY)``). Thread-safe.

    >>> files = VirtualFiles()
    >>> files.write("/sdcard/a.txt", b"hi", mode=0o644, mtime=1_700_000_000)
    >>> files.stat("/sdcard/a.txt")
    FileStat(mode=33188, size=2, mtime=1700000000)
    >>> [name for name, _ in files.listdir("/sdcard")]
    ['a.txt']

    ``dirs``: directories to create up front (default: Android's writable ``/sdcard`` and
    ``/data/local/tmp``); ``mtime``: their mtime (default: now).
    """

    DIR_SIZE = 4096

    def __init__(self, dirs: Iterable[str] = ("/sdcard", "/data/local/tmp"), *, mtime: int | None = None) -> None:
        self._lock = threading.RLock()
        now = int(time.time()) if mtime is None else int(mtime)
        self._nodes: dict[str, _Node] = {"/": _Node(stat.S_IFDIR | 0o755, now, None)}
        for path in dirs:
            self.mkdir(path, mtime=now)

    @staticmethod
    def normpath(path: str) -> str:
        """The normal form of an absolute path; ``ValueError`` for a relative path or a NUL."""
        if not isinstance(path, str):
            raise TypeError(f"a path is a str, got {type(path).__name__}")
        if not path.startswith("/"):
            raise ValueError(f"not an absolute path: {path!r}")
        if "\0" in path:
            raise ValueError(f"a path cannot hold a NUL byte: {path!r}")
        norm = posixpath.normpath(path)
        return "/" + norm.lstrip("/")

    def _error(self, exc_type: type[OSError], code: int, path: str) -> OSError:
        return exc_type(code, os.strerror(code), path)

    def _lookup(self, path: str) -> _Node:
        node = self._nodes.get(path)
        if node is not None:
            return node
        parent = posixpath.dirname(path)
        while parent != "/" and parent not in self._nodes:
            parent = posixpath.dirname(parent)
        if self._nodes[parent].data is not None:
            raise self._error(NotADirectoryError, errno.ENOTDIR, path)
        raise self._error(FileNotFoundError, errno.ENOENT, path)

    def _stat(self, node: _Node) -> FileStat:
        size = self.DIR_SIZE if node.data is None else len(node.data)
        return FileStat(node.mode, size, node.mtime)

    def stat(self, path: str) -> FileStat:
        """The :class:`FileStat` of ``path``; raises ``FileNotFoundError`` or ``NotADirectoryError``
        (a parent is a file)."""
        with self._lock:
            return self._stat(self._lookup(self.normpath(path)))

    def exists(self, path: str) -> bool:
        """Whether ``path`` names a file or a directory."""
        try:
            self.stat(path)
        except OSError:
            return False
        return True

    def listdir(self, path: str) -> list[tuple[str, FileStat]]:
        """The entries of a directory as ``(name, FileStat)`` pairs sorted by name, without ``.``
        and ``..``; raises ``FileNotFoundError`` or ``NotADirectoryError``."""
        with self._lock:
            norm = self.normpath(path)
            node = self._lookup(norm)
            if node.children is None:
                raise self._error(NotADirectoryError, errno.ENOTDIR, norm)
            return [(name, self._stat(self._nodes[posixpath.join(norm, name)])) for name in sorted(node.children)]

    def read(self, path: str) -> bytes:
        """A file's bytes; raises ``FileNotFoundError``, ``NotADirectoryError`` or ``IsADirectoryError``."""
        with self._lock:
            norm = self.normpath(path)
            node = self._lookup(norm)
            if node.data is None:
                raise self._error(IsADirectoryError, errno.EISDIR, norm)
            return node.data

    def _add(self, path: str, node: _Node) -> None:
        parent = self._nodes[posixpath.dirname(path)]
        assert parent.children is not None
        parent.children.add(posixpath.basename(path))
        parent.mtime = node.mtime
        self._nodes[path] = node

    def mkdir(self, path: str, mode: int = 0o775, *, mtime: int | None = None) -> None:
        """Create a directory and its missing parents (mode: permission bits); an existing directory
        is left as it is. Raises ``FileExistsError`` when a file is in the way."""
        with self._lock:
            norm = self.normpath(path)
            when = int(time.time()) if mtime is None else int(mtime)
            current = "/"
            for part in norm.strip("/").split("/") if norm != "/" else []:
                current = posixpath.join(current, part)
                node = self._nodes.get(current)
                if node is None:
                    self._add(current, _Node(stat.S_IFDIR | (mode & 0o7777), when, None))
                elif node.data is not None:
                    raise self._error(FileExistsError, errno.EEXIST, current)

    def write(self, path: str, data: bytes, mode: int = 0o644, mtime: int | None = None) -> None:
        """Create or replace a regular file (mode: permission bits; mtime: seconds, default now),
        creating missing parent directories. Raises ``IsADirectoryError`` (``path`` is a directory),
        ``NotADirectoryError`` (a parent is a file), ``TypeError`` (``data`` not bytes-like)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"file data is bytes, got {type(data).__name__}")
        with self._lock:
            norm = self.normpath(path)
            if norm == "/":
                raise self._error(IsADirectoryError, errno.EISDIR, norm)
            when = int(time.time()) if mtime is None else int(mtime)
            existing = self._nodes.get(norm)
            if existing is not None and existing.data is None:
                raise self._error(IsADirectoryError, errno.EISDIR, norm)
            parent = posixpath.dirname(norm)
            try:
                self.mkdir(parent, mtime=when)
            except FileExistsError:
                raise self._error(NotADirectoryError, errno.ENOTDIR, norm) from None
            self._add(norm, _Node(stat.S_IFREG | (mode & 0o7777), when, bytes(data)))

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Delete a file, an empty directory, or with ``recursive=True`` a whole subtree. Raises
        ``FileNotFoundError``, ``NotADirectoryError``, ``OSError(ENOTEMPTY)``, ``PermissionError``
        for ``/``."""
        with self._lock:
            norm = self.normpath(path)
            if norm == "/":
                raise self._error(PermissionError, errno.EPERM, norm)
            node = self._lookup(norm)
            if node.children:
                if not recursive:
                    raise self._error(OSError, errno.ENOTEMPTY, norm)
                for name in list(node.children):
                    self.remove(posixpath.join(norm, name), recursive=True)
            del self._nodes[norm]
            parent = self._nodes[posixpath.dirname(norm)]
            assert parent.children is not None
            parent.children.discard(posixpath.basename(norm))


@runtime_checkable
class DeviceHandler(Protocol):
    """What a device serves: its identity, its shell and its files. The server calls these methods
    one at a time (it holds a lock around them), so an implementation need not be thread-safe;
    only the transfer of their results runs concurrently.
    """

    files: VirtualFiles
    """The file system that ``sync:`` (``adb push``/``pull``/``ls``) serves."""

    def banner(self) -> dict[str, str]:
        """The ``ro.product.name``, ``ro.product.model`` and ``ro.product.device`` properties sent
        in ``CNXN`` (``adb devices -l`` shows them as product/model/device); an optional
        ``features`` key adds comma-separated shell-level features (e.g. ``cmd``) to the transport's.
        Values cannot hold ``;``, ``:``, ``=`` or NUL (the banner's separators)."""
        ...

    def shell(self, command: str, stdin: bytes) -> ShellResult:
        """Run one shell command line as ``/system/bin/sh -c command`` would, with ``stdin`` as
        its whole standard input; an unknown command answers exit 127 like a device shell."""
        ...

    def on_reboot(self, target: str) -> None:
        """``adb reboot [target]`` was asked (``""``, ``bootloader``, ``recovery``, ...)."""
        ...


# -- the transport ------------------------------------------------------------------------------------


@dataclass
class ServerStats:
    """Counters of one :class:`AdbDeviceServer` since it started (read them, do not write them).

    ``connections``: TCP connections accepted; ``handshakes``: ``CNXN`` answered with ``CNXN``;
    ``auth_requests``: ``AUTH(TOKEN)`` sent; ``streams``: streams opened; ``max_open_streams``: the
    most streams open at once over all connections; ``refused_services``: ``OPEN`` answered with
    ``CLSE``; ``protocol_errors``: connections dropped for breaking the protocol; ``handler_errors``:
    handler calls that raised or returned something other than a :class:`ShellResult`.
    """

    connections: int = 0
    handshakes: int = 0
    auth_requests: int = 0
    streams: int = 0
    max_open_streams: int = 0
    refused_services: int = 0
    protocol_errors: int = 0
    handler_errors: int = 0


class _Stream:
    """One open stream: our id, the host's id, one write in flight, an inbox for host writes."""

    def __init__(self, conn: _Connection, local_id: int, remote_id: int, consume_input: bool) -> None:
        self.conn = conn
        self.local_id = local_id
        self.remote_id = remote_id
        self._cv = threading.Condition()
        self._can_write = True
        self._closed = False
        self._consume_input = consume_input
        self._inbox: collections.deque[bytes] = collections.deque()

    # host -> device
    def on_okay(self) -> None:
        with self._cv:
            self._can_write = True
            self._cv.notify_all()

    def on_data(self, payload: bytes) -> None:
        with self._cv:
            if self._consume_input and not self._closed:
                self._inbox.append(payload)
                self._cv.notify_all()
                return
        self.conn.try_send(A_OKAY, self.local_id, self.remote_id)

    def on_remote_close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    # device side (the service's thread)
    def read(self, timeout: float | None = None) -> bytes | None:
        """The next host write, acknowledged now; ``None`` once the stream is closed; raises
        ``TimeoutError`` after ``timeout`` seconds without data."""
        with self._cv:
            if not self._cv.wait_for(lambda: self._inbox or self._closed, timeout):
                raise TimeoutError("no data from the host")
            if not self._inbox:
                return None
            data = self._inbox.popleft()
        self.conn.try_send(A_OKAY, self.local_id, self.remote_id)
        return data

    def stop_input(self) -> None:
        """From now on acknowledge and drop host writes (the service reads no more input)."""
        with self._cv:
            self._consume_input = False
            pending = len(self._inbox)
            self._inbox.clear()
        for _ in range(pending):
            self.conn.try_send(A_OKAY, self.local_id, self.remote_id)

    def write(self, data: bytes) -> None:
        """Send ``data`` as ``WRTE`` messages of at most the negotiated maxdata, each after the
        host's ``OKAY`` for the previous one. Raises ``_StreamClosed``."""
        view = memoryview(data)
        step = self.conn.maxdata
        for offset in range(0, len(view), step):
            with self._cv:
                self._cv.wait_for(lambda: self._can_write or self._closed)
                if self._closed:
                    raise _StreamClosed
                self._can_write = False
            self.conn.send(A_WRTE, self.local_id, self.remote_id, bytes(view[offset : offset + step]))

    def close(self) -> None:
        """Close from the device side: send ``CLSE`` right after the last ``WRTE``, without waiting
        for its ``OKAY``, as adbd's local socket does at end of file; the host delivers the data it
        holds before closing its end."""
        with self._cv:
            was_closed = self._closed
            self._closed = True
            self._cv.notify_all()
        self.conn.forget(self)
        if not was_closed:
            self.conn.try_send(A_CLSE, self.local_id, self.remote_id)


class _StreamReader:
    """Exact-length reads over a stream's host writes (for the shell and sync protocols)."""

    def __init__(self, stream: _Stream) -> None:
        self._stream = stream
        self._buffer = bytearray()

    def read_exact(self, n: int, timeout: float | None = None) -> bytes | None:
        """``n`` bytes, or ``None`` when the stream closes first; ``TimeoutError`` after ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(self._buffer) < n:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            chunk = self._stream.read(remaining)
            if chunk is None:
                return None
            self._buffer += chunk
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        return out


class _WorkerPool:
    """The threads that run stream services. A job goes to an idle worker, or to a new one when
    none is idle, so a stream never queues behind another that blocks (on the host's ``OKAY``, on
    stdin); reusing threads saves their start-up on every short command. A worker idle for
    ``idle_s`` seconds exits; after :meth:`close`, workers exit once their job ends."""

    def __init__(self, name: str, idle_s: float = 30.0) -> None:
        self._name = name
        self._idle_s = idle_s
        self._jobs: queue.SimpleQueue[tuple[Callable[..., object], tuple] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting for a job and not yet claimed by a submit()
        self._closed = False
        self._ids = itertools.count(1)

    def submit(self, fn: Callable[..., object], *args: object) -> None:
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1
        self._jobs.put((fn, args))
        if spawn:
            threading.Thread(target=self._work, name=f"{self._name}-{next(self._ids)}", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self._idle_s)
            except queue.Empty:
                with self._lock:
                    if self._idle == 0:  # a submit() claimed this worker just now: take its job
                        continue
                    self._idle -= 1
                return
            if job is None:
                return
            fn, args = job
            try:
                fn(*args)
            except Exception:  # the services catch their own errors; this keeps the worker alive
                log.exception("a stream service failed")
            with self._lock:
                if self._closed:
                    return
                self._idle += 1

    def close(self) -> None:
        """Let idle workers exit now and busy ones when their job ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, 0
        for _ in range(idle):
            self._jobs.put(None)


class _Connection:
    """One TCP connection from an adb host: handshake, message dispatch, streams."""

    def __init__(self, server: AdbDeviceServer, sock: socket.socket, peer: str) -> None:
        self.server = server
        self._ids = itertools.count(1)
        self.sock = sock
        self.peer = peer
        self.version = A_VERSION_MIN
        self.maxdata = MAX_PAYLOAD_V1
        self.online = False
        self.host_banner = b""
        self._send_lock = threading.Lock()
        self._close_lock = threading.Lock()
        self._lock = threading.Lock()
        self._streams: dict[int, _Stream] = {}
        self._closed = False
        self._awaiting_auth = False

    # sending
    def send(self, command: int, arg0: int, arg1: int, payload: bytes = b"") -> None:
        """Send one message; raises ``_StreamClosed`` when the connection is gone."""
        checked = command in (A_CNXN, A_AUTH) or self.version < A_VERSION_SKIP_CHECKSUM
        data = pack_message(command, arg0, arg1, payload, with_checksum=checked)
        with self._send_lock:
            if self._closed:
                raise _StreamClosed
            try:
                self.sock.sendall(data)
            except OSError as exc:
                raise _StreamClosed from exc

    def try_send(self, command: int, arg0: int, arg1: int, payload: bytes = b"") -> None:
        """Send one message; a connection already gone is not an error here."""
        with contextlib.suppress(_StreamClosed):
            self.send(command, arg0, arg1, payload)

    # receiving
    def _recv_exact(self, n: int) -> bytes | None:
        buffer = bytearray(n)
        view = memoryview(buffer)
        got = 0
        while got < n:
            count = self.sock.recv_into(view[got:])
            if count == 0:
                if got == 0:
                    return None
                raise ProtocolError(f"connection closed inside a message ({got} of {n} bytes)")
            got += count
        return bytes(buffer)

    def _read_message(self) -> Message | None:
        header = self._recv_exact(HEADER_SIZE)
        if header is None:
            return None
        command, arg0, arg1, length, check = unpack_header(header)
        limit = max(self.server.maxdata, MAX_PAYLOAD_V1)
        if length > limit:
            raise ProtocolError(f"{length}-byte payload exceeds the {limit}-byte maximum")
        payload = b""
        if length:
            payload = self._recv_exact(length)
            if payload is None:
                raise ProtocolError("connection closed before the payload")
        if self.version < A_VERSION_SKIP_CHECKSUM and check != 0 and check != checksum(payload):
            raise ProtocolError(f"bad data_check 0x{check:08x} (payload sums to 0x{checksum(payload):08x})")
        return Message(command, arg0, arg1, payload)

    def serve(self) -> None:
        """Read and dispatch messages until the peer leaves or breaks the protocol."""
        try:
            while True:
                message = self._read_message()
                if message is None:
                    break
                self._dispatch(message)
        except ProtocolError as exc:
            self.server._count("protocol_errors")
            log.warning("adb connection from %s dropped: %s", self.peer, exc)
        except (OSError, _StreamClosed) as exc:
            log.debug("adb connection from %s ended: %s", self.peer, exc)
        except Exception:  # e.g. the handler's banner became invalid: lose this connection, not the server
            log.exception("adb connection from %s failed", self.peer)
        finally:
            self.close()

    def _dispatch(self, m: Message) -> None:
        if m.command == A_CNXN:
            self._on_connect(m)
        elif m.command == A_AUTH:
            self._on_auth(m)
        elif not self.online:
            log.debug("ignoring %s before the handshake from %s", m.name, self.peer)
        elif m.command == A_OPEN:
            if m.arg0 != 0 and m.arg1 == 0:
                self._on_open(m)
        elif m.command in (A_OKAY, A_WRTE, A_CLSE):
            self._on_stream_message(m)
        else:  # A_SYNC is obsolete; adbd ignores unknown commands too
            log.debug("ignoring %s from %s", m.name, self.peer)

    def _on_connect(self, m: Message) -> None:
        self._close_streams()
        self.online = False
        self.version = min(m.arg0, self.server.version)
        self.maxdata = max(1, min(m.arg1, self.server.maxdata))
        self.host_banner = m.payload
        if self.server.require_auth:
            self._awaiting_auth = True
            self._send_token()
            return
        banner = self.server._banner_bytes()
        self.online = True
        self.server._count("handshakes")
        self.send(A_CNXN, self.server.version, self.server.maxdata, banner)

    def _send_token(self) -> None:
        self.server._count("auth_requests")
        self.send(A_AUTH, AUTH_TOKEN, 0, secrets.token_bytes(20))

    def _on_auth(self, m: Message) -> None:
        if not self._awaiting_auth:
            return
        if m.arg0 == AUTH_SIGNATURE:
            self._send_token()  # no key is ever trusted: ask again, as adbd does after a bad signature
        elif m.arg0 == AUTH_RSAPUBLICKEY:
            log.info("adb host %s offered its public key; the device never accepts it", self.peer)

    def _on_open(self, m: Message) -> None:
        raw = m.payload[:-1] if m.payload.endswith(b"\0") else m.payload
        name = raw.decode("utf-8", errors="replace")
        service = parse_service(name)
        if service is None:
            self.server._count("refused_services")
            log.info("refused unknown service %r from %s", name, self.peer)
            self.send(A_CLSE, 0, m.arg0)
            return
        consume = service.kind == "sync" or (service.kind == "shell" and self.server._waits_for_stdin(service))
        local_id = next(self._ids)
        stream = _Stream(self, local_id, m.arg0, consume_input=consume)
        with self._lock:
            self._streams[local_id] = stream
            open_now = self.server._open_streams(+1)
        self.server._count("streams")
        self.server._note_open_streams(open_now)
        self.send(A_OKAY, local_id, m.arg0)
        self.server._workers.submit(self.server._run_service, stream, service)

    def _on_stream_message(self, m: Message) -> None:
        if m.arg0 == 0 and m.command != A_CLSE:
            return
        with self._lock:
            stream = self._streams.get(m.arg1)
        if stream is None or (m.arg0 != 0 and m.arg0 != stream.remote_id):
            return
        if m.command == A_OKAY:
            stream.on_okay()
        elif m.command == A_WRTE:
            stream.on_data(m.payload)
        else:
            stream.on_remote_close()
            self.forget(stream)

    def forget(self, stream: _Stream) -> None:
        with self._lock:
            if self._streams.pop(stream.local_id, None) is not None:
                self.server._open_streams(-1)

    def _close_streams(self) -> None:
        with self._lock:
            streams = list(self._streams.values())
            self._streams.clear()
            if streams:
                self.server._open_streams(-len(streams))
        for stream in streams:
            stream.on_remote_close()

    def close(self) -> None:
        """Drop the connection (idempotent): shut the socket (which also fails a ``sendall`` blocked
        on a host that stopped reading), wake every stream, close the socket."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self._close_streams()
        with self._send_lock:
            self.sock.close()
        self.server._forget_connection(self)


class AdbDeviceServer:
    """A device-side adb endpoint on TCP serving ``handler`` (see the module docstring for the
    protocol); ``adb connect <serial>`` attaches the real adb server to it.

    >>> with AdbDeviceServer(handler) as server:  # doctest: +SKIP
    ...     client.connect(server.serial)          # adbutils.AdbClient against the adb server

    Parameters: ``host``/``port``: where to listen (``port=0``: a free port, read :attr:`port`
    after :meth:`start`); ``require_auth``: answer ``CNXN`` with ``AUTH`` and never accept, so the
    host shows ``unauthorized``; ``version``: the protocol version announced (default
    :data:`A_VERSION`; :data:`A_VERSION_MIN` makes both sides checksum every message);
    ``maxdata``: the largest payload announced and accepted, 256..1 MiB (default :data:`MAX_PAYLOAD`);
    ``stdin_timeout_s``: seconds a ``shell,v2,raw:`` stream waits for each stdin packet (see the
    module docstring). Raises ``TypeError`` when ``handler`` is not a :class:`DeviceHandler` and
    ``ValueError`` for out-of-range parameters. Runs on threads: one accepting, one per connection,
    one per open stream (reused). :attr:`stats` counts what happened.
    """

    def __init__(
        self,
        handler: DeviceHandler,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        require_auth: bool = False,
        version: int = A_VERSION,
        maxdata: int = MAX_PAYLOAD,
        stdin_timeout_s: float = 1.0,
    ) -> None:
        if not isinstance(handler, DeviceHandler):
            raise TypeError(
                f"{type(handler).__name__} is not a DeviceHandler: it needs banner(), shell(command, stdin), "
                "on_reboot(target) and a `files` VirtualFiles"
            )
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0..65535, got {port}")
        if not A_VERSION_MIN <= version <= A_VERSION:
            raise ValueError(f"version must be 0x{A_VERSION_MIN:08x}..0x{A_VERSION:08x}, got 0x{version:08x}")
        if not 256 <= maxdata <= MAX_PAYLOAD:
            raise ValueError(f"maxdata must be 256..{MAX_PAYLOAD} bytes, got {maxdata}")
        if stdin_timeout_s <= 0:
            raise ValueError(f"stdin_timeout_s must be positive, got {stdin_timeout_s}")
        self.handler = handler
        self.host = host
        self.require_auth = require_auth
        self.version = version
        self.maxdata = maxdata
        self.stdin_timeout_s = stdin_timeout_s
        self.stats = ServerStats()
        self._requested_port = port
        self._server: socketserver.ThreadingTCPServer | None = None
        self._thread: threading.Thread | None = None
        self._workers = _WorkerPool("adb-stream")
        self._handler_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._connections: set[_Connection] = set()
        self._open = 0

    # lifecycle
    def start(self) -> AdbDeviceServer:
        """Listen and serve on a background thread; returns ``self``. Raises ``RuntimeError`` if
        already started, ``ValueError`` for an invalid handler banner, ``OSError`` when the address
        is taken."""
        if self._server is not None:
            raise RuntimeError("the server is already started")
        self._banner_bytes()  # fail now, not at the first handshake
        owner = self
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET

        class _RequestHandler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                owner._serve_connection(self.request, self.client_address)

        class _Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True
            address_family = family

        self._server = _Server((self.host, self._requested_port), _RequestHandler)
        self._workers = _WorkerPool("adb-stream")
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="adb-device-accept", daemon=True
        )
        self._thread.start()
        log.info("adb device endpoint listening on %s", self.serial)
        return self

    def stop(self) -> None:
        """Stop accepting, drop every connection and wait for the accepting thread (idempotent)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        self.close_all_connections()
        self._workers.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._thread = None

    def __enter__(self) -> AdbDeviceServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The TCP port listened on; raises ``RuntimeError`` before :meth:`start`."""
        if self._server is None:
            raise RuntimeError("the server is not started")
        return self._server.server_address[1]

    @property
    def serial(self) -> str:
        """The serial the adb server lists this device under: ``"127.0.0.1:<port>"`` (``[::1]:<port>``
        for IPv6; a wildcard host gives the loopback address)."""
        host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    @property
    def connection_count(self) -> int:
        """How many host connections are open now."""
        with self._state_lock:
            return len(self._connections)

    def close_all_connections(self) -> int:
        """Drop every open connection, as pulling the cable would; the server keeps listening, so
        the host can reconnect. Returns how many were dropped."""
        with self._state_lock:
            connections = list(self._connections)
        for conn in connections:
            conn.close()
        return len(connections)

    # internals shared with the connections
    def _serve_connection(self, sock: socket.socket, address: tuple) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Connection(self, sock, f"{address[0]}:{address[1]}")
        with self._state_lock:
            if self._server is None:
                sock.close()
                return
            self._connections.add(conn)
            self.stats.connections += 1
        conn.serve()

    def _forget_connection(self, conn: _Connection) -> None:
        with self._state_lock:
            self._connections.discard(conn)

    def _count(self, name: str, amount: int = 1) -> None:
        with self._state_lock:
            setattr(self.stats, name, getattr(self.stats, name) + amount)

    def _open_streams(self, delta: int) -> int:
        with self._state_lock:
            self._open += delta
            return self._open

    def _note_open_streams(self, open_now: int) -> None:
        with self._state_lock:
            self.stats.max_open_streams = max(self.stats.max_open_streams, open_now)

    def _banner_bytes(self) -> bytes:
        props = self._call(self.handler.banner)
        if not isinstance(props, dict):
            raise ValueError(f"banner() must return a dict of str, got {type(props).__name__}")
        features = list(TRANSPORT_FEATURES)
        parts = []
        for key, value in props.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ValueError(f"banner entries must be str: {key!r}={value!r}")
            bad = set(";:=\0") & set(key + value)
            if bad or not key:
                raise ValueError(f"banner entry {key!r}={value!r} holds a separator {sorted(bad)}")
            if key == "features":
                features += [f for f in value.split(",") if f and f not in features]
            else:
                parts.append(f"{key}={value}")
        parts.append("features=" + ",".join(features))
        banner = ("device::" + ";".join(parts)).encode()
        if len(banner) > MAX_PAYLOAD_V1:
            raise ValueError(f"the banner is {len(banner)} bytes; adb allows {MAX_PAYLOAD_V1}")
        return banner

    def _waits_for_stdin(self, service: Service) -> bool:
        return service.shell_v2 and bool(service.command) and bool({"raw", "pty"} & set(service.args))

    def _call(self, fn: Callable[[], object]) -> object:
        with self._handler_lock:
            return fn()

    def _shell(self, command: str, stdin: bytes) -> ShellResult:
        try:
            result = self._call(lambda: self.handler.shell(command, stdin))
            if not (
                isinstance(result, tuple)
                and len(result) == 3
                and isinstance(result[0], (bytes, bytearray))
                and isinstance(result[1], (bytes, bytearray))
                and isinstance(result[2], int)
            ):
                raise TypeError(f"shell() must return a ShellResult, got {result!r:.200}")
            return ShellResult(bytes(result[0]), bytes(result[1]), result[2])
        except Exception as exc:
            self._count("handler_errors")
            log.exception("the device handler failed on %r", command)
            return ShellResult(b"", f"virtual device error: {type(exc).__name__}: {exc}\n".encode(), 255)

    def _run_service(self, stream: _Stream, service: Service) -> None:
        try:
            if service.kind == "shell":
                if service.shell_v2:
                    self._serve_shell_v2(stream, service)
                else:
                    self._serve_raw(stream, service.command, interactive_message=True)
            elif service.kind == "exec":
                self._serve_raw(stream, service.command, interactive_message=False)
            elif service.kind == "sync":
                _SyncSession(self.handler.files, stream).run()
            elif service.kind == "reboot":
                try:
                    self._call(lambda: self.handler.on_reboot(service.command))
                except Exception:
                    self._count("handler_errors")
                    log.exception("the device handler failed on reboot %r", service.command)
        except _StreamClosed:
            log.debug("stream %d closed while serving %s", stream.local_id, service.kind)
        except Exception:  # a bug here must cost one stream, never the server
            log.exception("serving %r failed", service)
        finally:
            stream.close()

    def _serve_raw(self, stream: _Stream, command: str, *, interactive_message: bool) -> None:
        if not command.strip() and interactive_message:
            stream.write(b"interactive shells are not supported by this virtual device; pass a command\n")
            return
        result = self._shell(command, b"")
        stream.write(result.stderr + result.stdout)

    def _serve_shell_v2(self, stream: _Stream, service: Service) -> None:
        if not service.command.strip():
            message = b"interactive shells are not supported by this virtual device; pass a command\n"
            stream.write(shell_packet(SHELL_STDERR, message) + shell_packet(SHELL_EXIT, b"\x01"))
            return
        stdin = b""
        if self._waits_for_stdin(service):
            collected = self._collect_stdin(stream)
            if collected is None:  # the host left before stdin was closed: nothing to answer
                return
            stdin = collected
        stream.stop_input()
        result = self._shell(service.command, stdin)
        size = max(1, self.maxdata - _SHELL_HEADER.size)
        out = []
        for kind, data in ((SHELL_STDOUT, result.stdout), (SHELL_STDERR, result.stderr)):
            out += [shell_packet(kind, data[i : i + size]) for i in range(0, len(data), size)]
        out.append(shell_packet(SHELL_EXIT, bytes([result.exit_code & 0xFF])))
        stream.write(b"".join(out))

    def _collect_stdin(self, stream: _Stream) -> bytes | None:
        reader = _StreamReader(stream)
        stdin = bytearray()
        first = True
        while True:
            try:
                header = reader.read_exact(_SHELL_HEADER.size, timeout=self.stdin_timeout_s)
            except TimeoutError:
                return bytes(stdin)
            if header is None:
                return None
            kind, length = _SHELL_HEADER.unpack(header)
            if length > _MAX_STDIN - len(stdin):
                raise _StreamClosed(f"stdin beyond {_MAX_STDIN} bytes")
            data = reader.read_exact(length)
            if data is None:
                return None
            if kind == SHELL_STDIN:
                stdin += data
            elif kind == SHELL_CLOSE_STDIN or (kind == SHELL_WINDOW_SIZE and first):
                return bytes(stdin)
            first = False


class _SyncSession:
    """The ``sync:`` service over :class:`VirtualFiles` (SYNC.TXT, ``file_sync_service.cpp``)."""

    def __init__(self, files: VirtualFiles, stream: _Stream) -> None:
        self.files = files
        self.stream = stream
        self.reader = _StreamReader(stream)

    def fail(self, message: str) -> None:
        data = message.encode()
        self.stream.write(_SYNC_REQUEST.pack(_ID_FAIL, len(data)) + data)

    def run(self) -> None:
        while True:
            request = self.reader.read_exact(_SYNC_REQUEST.size)
            if request is None:
                return
            ident, length = _SYNC_REQUEST.unpack(request)
            if ident == _ID_QUIT:
                return
            if ident not in (_ID_LSTAT_V1, _ID_STAT_V2, _ID_LSTAT_V2, _ID_LIST_V1, _ID_LIST_V2, _ID_SEND, _ID_RECV):
                self.fail(f"unknown command {ident!r}")
                return
            if length > _SYNC_PATH_MAX:
                self.fail("path too long")
                return
            raw = self.reader.read_exact(length)
            if raw is None:
                return
            path = raw.decode("utf-8", errors="replace")
            if ident == _ID_LSTAT_V1:
                self.stream.write(self.stat_v1(path))
            elif ident in (_ID_STAT_V2, _ID_LSTAT_V2):
                self.stream.write(self.stat_v2(ident, path))
            elif ident in (_ID_LIST_V1, _ID_LIST_V2):
                self.stream.write(self.listing(path, v2=ident == _ID_LIST_V2))
            elif ident == _ID_SEND:
                if not self.send(path):
                    return
            elif not self.recv(path):
                return

    def _stat(self, path: str) -> FileStat:
        try:
            return self.files.stat(path)
        except ValueError:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path) from None

    def stat_v1(self, path: str) -> bytes:
        try:
            st = self._stat(path)
        except OSError:
            return _STAT_V1.pack(_ID_LSTAT_V1, 0, 0, 0)  # adbd answers all zeros for a missing path
        return _STAT_V1.pack(_ID_LSTAT_V1, st.mode, min(st.size, _UINT32_MAX), st.mtime & _UINT32_MAX)

    @staticmethod
    def _v2_fields(st: FileStat) -> tuple[int, ...]:
        nlink = 2 if st.is_dir else 1
        # dev, ino, mode, nlink, uid, gid, size, atime, mtime, ctime
        return (0, 0, st.mode, nlink, 0, 0, st.size, st.mtime, st.mtime, st.mtime)

    def stat_v2(self, ident: bytes, path: str) -> bytes:
        try:
            st = self._stat(path)
        except OSError as exc:
            return _STAT_V2.pack(ident, exc.errno or errno.EIO, *([0] * 10))
        return _STAT_V2.pack(ident, 0, *self._v2_fields(st))

    def listing(self, path: str, *, v2: bool) -> bytes:
        try:
            entries = [(".", self._stat(path)), ("..", self._stat(posixpath.dirname(path.rstrip("/")) or "/"))]
            entries += self.files.listdir(path)
        except (OSError, ValueError):
            entries = []  # adbd lists nothing for a path it cannot open
        out = []
        for name, st in entries:
            encoded = name.encode()
            if v2:
                out.append(_DENT_V2.pack(_ID_DENT_V2, 0, *self._v2_fields(st), len(encoded)) + encoded)
            else:
                size = min(st.size, _UINT32_MAX)
                out.append(_DENT_V1.pack(_ID_DENT_V1, st.mode, size, st.mtime & _UINT32_MAX, len(encoded)) + encoded)
        done = _DENT_V2.pack(_ID_DONE, *([0] * 12)) if v2 else _DENT_V1.pack(_ID_DONE, 0, 0, 0, 0)
        return b"".join(out) + done

    def send(self, spec: str) -> bool:
        path, comma, mode_text = spec.rpartition(",")
        data = bytearray()
        error = None
        mode = 0
        if not comma:
            error = "missing , in ID_SEND"
        else:
            try:
                mode = int(mode_text, 0) if mode_text.strip() else 0
            except ValueError:
                error = f"bad mode in ID_SEND: {mode_text!r}"
        while True:
            header = self.reader.read_exact(_SYNC_REQUEST.size)
            if header is None:
                return False
            ident, size = _SYNC_REQUEST.unpack(header)
            if ident == _ID_DONE:
                mtime = size
                break
            if ident != _ID_DATA:
                self.fail("invalid data message")
                return False
            if size > SYNC_DATA_MAX:
                self.fail("oversize data message")
                return False
            chunk = self.reader.read_exact(size)
            if chunk is None:
                return False
            if error is None:
                data += chunk
        if error is None and stat.S_ISLNK(mode):
            error = "symlinks are not supported by this virtual device"
        if error is None:
            perms = mode & 0o777
            perms |= (perms >> 3) & 0o070  # adbd copies the user bits to group and other
            perms |= (perms >> 3) & 0o007
            try:
                self.files.write(path, bytes(data), mode=perms, mtime=mtime)
            except (OSError, ValueError) as exc:
                reason = os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno else str(exc)
                error = f"couldn't create file: {reason}"
        if error is not None:
            self.fail(error)
            return False
        self.stream.write(_SYNC_REQUEST.pack(_ID_OKAY, 0))
        return True

    def recv(self, path: str) -> bool:
        try:
            data = self.files.read(path)
        except IsADirectoryError as exc:
            self.fail(f"read failed: {os.strerror(exc.errno or errno.EISDIR)}")
            return False
        except (OSError, ValueError) as exc:
            code = exc.errno if isinstance(exc, OSError) and exc.errno else errno.ENOENT
            self.fail(f"open failed: {os.strerror(code)}")
            return False
        out = [
            _SYNC_REQUEST.pack(_ID_DATA, len(data[i : i + SYNC_DATA_MAX])) + data[i : i + SYNC_DATA_MAX]
            for i in range(0, len(data), SYNC_DATA_MAX)
        ]
        out.append(_SYNC_REQUEST.pack(_ID_DONE, 0))
        self.stream.write(b"".join(out))
        return True
