"""adb's connection handshake with a device endpoint, in the standard library alone: the worker
image's ``HEALTHCHECK`` runs this file as a script, so that a check costs a Python start and one
round trip (tens of milliseconds) instead of importing phoneenv (seconds on a loaded machine,
where a check that outlives its timeout marks a healthy worker unhealthy).

    python3 -I handshake.py 127.0.0.1:5555 --timeout 4     # exit 0: it answered as a device

The host sends ``CNXN(version, maxdata, "host::\\0")``; a device answers ``CNXN`` with its
``device::key=value;...`` banner, or ``AUTH`` when it wants the host's key (``unauthorized``).
:func:`phoneenv.farm.workers.adb_ping` is this handshake for the library and ``phoneenv device
ping``. Run as a script, nothing here imports phoneenv: keep it that way (tests/test_farm_surfaces.py
checks it); imported from the package, its error joins phoneenv's one root.
"""

from __future__ import annotations

import socket
import struct
import sys
import time

__all__ = ["HandshakeError", "handshake", "main", "recv_exact"]

_HEADER = struct.Struct("<6I")  # command, arg0, arg1, data_length, data_check, magic
A_CNXN = int.from_bytes(b"CNXN", "little")
A_AUTH = int.from_bytes(b"AUTH", "little")
A_VERSION = 0x01000001
MAX_PAYLOAD = 1024 * 1024
HOST_BANNER = b"host::\0"


if __package__:  # imported as phoneenv.farm.handshake: under the one root of phoneenv's errors
    from phoneenv.errors import PhoneEnvError

    _BASES: tuple[type[Exception], ...] = (PhoneEnvError, ValueError)
else:  # run as the health check's script (python3 -I handshake.py): the standard library alone
    _BASES = (ValueError,)


class HandshakeError(*_BASES):  # type: ignore[misc]
    """The endpoint answered, but not as an adb device (another command, a bad header, another
    banner). A :class:`~phoneenv.errors.PhoneEnvError` when imported from phoneenv."""


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes from ``sock``. Raises ``ConnectionResetError`` when it closes first."""
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionResetError("the device endpoint closed the connection during the handshake")
        buf += chunk
    return buf


def handshake(host: str, port: int, timeout_s: float = 5.0) -> tuple[str, str, float]:
    """Send the adb host's ``CNXN`` to ``host:port`` and read the answer, then hang up.

    Returns ``(state, banner, elapsed_s)``: state ``"device"`` with its banner text
    (``device::ro.product.model=...;``), or ``"unauthorized"`` with ``""`` when it asked for
    ``AUTH``. Raises ``OSError`` when nothing listens or the connection breaks, ``TimeoutError``
    when it accepts but does not answer within ``timeout_s`` seconds (a hung device),
    :class:`HandshakeError` when it answers something else.
    """
    t0 = time.monotonic()
    header = _HEADER.pack(A_CNXN, A_VERSION, MAX_PAYLOAD, len(HOST_BANNER), sum(HOST_BANNER), A_CNXN ^ 0xFFFFFFFF)
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.settimeout(max(0.05, timeout_s - (time.monotonic() - t0)))
        sock.sendall(header + HOST_BANNER)
        try:
            command, _arg0, _arg1, length, _check, magic = _HEADER.unpack(recv_exact(sock, _HEADER.size))
            if magic != command ^ 0xFFFFFFFF:
                raise HandshakeError(f"{host}:{port} answered with a bad adb header (magic 0x{magic:08x})")
            if length > MAX_PAYLOAD:
                raise HandshakeError(f"{host}:{port} announced a {length}-byte handshake payload")
            payload = recv_exact(sock, length)
        except TimeoutError:
            raise TimeoutError(
                f"{host}:{port} accepted but did not answer the adb handshake in {timeout_s} s"
            ) from None
    elapsed = time.monotonic() - t0
    if command == A_AUTH:
        return "unauthorized", "", elapsed
    if command != A_CNXN:
        raise HandshakeError(f"{host}:{port} answered the adb handshake with command 0x{command:08x}, not CNXN")
    text = payload.rstrip(b"\0").decode("utf-8", "replace")
    kind = text.partition("::")[0]
    if kind != "device":
        raise HandshakeError(f"{host}:{port} answered with a {kind!r} banner, not a device's")
    return "device", text, elapsed


def main(argv: list[str] | None = None) -> int:
    """``handshake.py HOST:PORT [--timeout S]``: exit 0 when the endpoint answers as a device, 1
    otherwise (one line saying why), 2 for bad arguments."""
    args = list(sys.argv[1:] if argv is None else argv)
    timeout = 5.0
    if "--timeout" in args:
        i = args.index("--timeout")
        try:
            timeout = float(args[i + 1])
        except (IndexError, ValueError):
            print("usage: handshake.py HOST:PORT [--timeout SECONDS]", file=sys.stderr)
            return 2
        del args[i : i + 2]
    host, _, port = args[0].rpartition(":") if len(args) == 1 else ("", "", "")
    if not host or not port.isdigit():
        print("usage: handshake.py HOST:PORT [--timeout SECONDS]", file=sys.stderr)
        return 2
    try:
        state, _banner, elapsed = handshake(host, int(port), timeout)
    except (OSError, HandshakeError) as exc:  # TimeoutError is an OSError
        print(f"no device: {host}:{port}: {exc}", file=sys.stderr)
        return 1
    print(f"{host}:{port}: {state} ({elapsed * 1000:.0f} ms)")
    return 0 if state == "device" else 1


if __name__ == "__main__":
    sys.exit(main())
