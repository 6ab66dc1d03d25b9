"""adb round trips through the real adb server to a virtual device, against baselines measured in
the same run.

Run: ``.venv/bin/python benchmarks/bench_adb.py [--quick]`` (needs ``adb`` on PATH or
``$PHONEENV_ADB``, and adbutils: ``pip install -e '.[device]'``).

A private adb server (``adb -P <free port> nodaemon server``) is started, a device is served with
``phoneenv.farm.adbwire.AdbDeviceServer`` on loopback and ``adb connect``-ed. Requests go through
the adb server as any adb client sends them (the smart-socket protocol of adb's OVERVIEW.TXT and
SERVICES.TXT: ``host:transport:<serial>`` then the service, each as 4 hex digits of length and the
text, answered ``OKAY``), over a fresh TCP connection per request:

- getprop: ``shell:getprop ro.product.model`` read to the end (v1), and ``shell,v2:`` with its
  shell-protocol packets parsed to the exit code; median and p95 over many calls. Also through
  adbutils' ``AdbDevice.shell``, which adds its own cost: each call first asks ``host:version`` on
  a separate connection and sleeps 10 ms when closing each of the two (adbutils 2.12).
- screencap: ``exec:screencap -p`` read to the end (the PNG pull), then the same plus decoding the
  PNG to ``uint8`` H×W×3 with Pillow, as a screenshot observation needs.
- baselines: ``host:version`` (the adb server alone, same client code) and a TCP echo round trip
  on loopback (the floor of any socket round trip here).
- episode reset on the device: ``env.reset`` through ``phoneenv.backends.adb.AdbBackend`` on the
  first suite task it can run (fixtures applied over adb and verified by reading them back); see
  :func:`episode_reset_figure`.

The device is ``phoneenv.farm.virtual.VirtualDevice`` when that module exists (its screencap
renders the sandbox phone), else the test suite's echo device answering ``screencap -p`` with a
fixed 360×640 PNG of a sandbox screen rendered once with Pillow; the output says which.

Target (issue #5): getprop round trip ≤ 2 ms median.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the adb server and echo-device helpers live in tests/adb.py
    sys.path.insert(0, str(ROOT))


def timings_ms(fn: Callable[[], object], n: int, warmup: int = 20) -> list[float]:
    """Wall times of ``n`` calls of ``fn`` in milliseconds, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def median_p95(samples: list[float]) -> tuple[float, float]:
    """Median and 95th percentile (nearest rank) of ``samples``."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]


class EchoServer:
    """A loopback TCP echo server on a thread: the baseline round trip."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            conn, _ = self.sock.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while data := conn.recv(4096):
                conn.sendall(data)


def adb_request(port: int, service: str, serial: str | None = None) -> bytes:
    """One request to the adb server on 127.0.0.1:``port`` over a fresh connection, as any adb
    client sends it: ``host:transport:<serial>`` first when ``serial`` is given, then ``service``;
    returns everything after the ``OKAY`` up to the server's close. ``RuntimeError`` on ``FAIL``."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for request in ([f"host:transport:{serial}"] if serial else []) + [service]:
            data = request.encode()
            s.sendall(b"%04x" % len(data) + data)
            status = s.recv(4, socket.MSG_WAITALL)
            if status != b"OKAY":
                raise RuntimeError(f"{request}: {status!r} {s.recv(4096)!r}")
        chunks = []
        while chunk := s.recv(1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)


def shell_v2_exit(stream: bytes) -> tuple[bytes, int]:
    """stdout and exit code from a ``shell,v2:`` byte stream (shell_protocol.h packets)."""
    stdout, code, i = b"", -1, 0
    while i + 5 <= len(stream):
        kind, length = stream[i], int.from_bytes(stream[i + 1 : i + 5], "little")
        data = stream[i + 5 : i + 5 + length]
        i += 5 + length
        if kind == 1:
            stdout += data
        elif kind == 3:
            code = data[0]
    return stdout, code


def sandbox_png() -> bytes:
    """A fixed PNG of a sandbox screen (phoneenv.screen.render_screen, 360×640)."""
    from PIL import Image

    from phoneenv.screen import render_screen

    frame = render_screen("09:41", "Contacts", [f"Contact {i}  +49 151 0000 00{i:02d}" for i in range(12)])
    out = io.BytesIO()
    Image.fromarray(frame).save(out, format="PNG")
    return out.getvalue()


def make_device() -> tuple[Any, str]:
    """The device to serve and a line saying which it is."""
    if importlib.util.find_spec("phoneenv.farm.virtual") is not None:
        from phoneenv.farm.virtual import VirtualDevice

        return VirtualDevice(), "phoneenv.farm.virtual.VirtualDevice (screencap renders the sandbox phone)"
    from tests.adb import EchoHandler

    return EchoHandler(png=sandbox_png()), "tests.adb.EchoHandler (phoneenv.farm.virtual absent): a fixed 360×640 PNG"


def episode_reset_figure(serial: str, adb_port: int, n: int, stats: Any = None) -> tuple[float, float, str] | str:
    """Median and p95 ``env.reset`` in ms on the served device through
    ``phoneenv.backends.adb.AdbBackend`` (fixtures applied over adb and read back), with the task
    used and, given the device server's ``stats``, the round trips (streams opened) per reset; or
    a line saying why it was not measured (no such backend, no task it can run, or an error,
    reported rather than hidden)."""
    if importlib.util.find_spec("phoneenv.backends.adb") is None:
        return "not measured: phoneenv.backends.adb does not exist yet"
    import gymnasium as gym

    import phoneenv  # noqa: F401  (registers PhonePlan-v0)
    from phoneenv.backends.adb import AdbBackend
    from phoneenv.tasks import load_suite

    try:
        backend = AdbBackend(serial=serial, adb_port=adb_port)
        task = next((t for t in load_suite() if backend.can_run(t)), None)
        if task is None:
            return "not measured: AdbBackend can run no task of the suite"
        env = gym.make("PhonePlan-v0", task=task, backend=backend)
        env.reset(seed=0)  # the first reset also saves the snapshots
        streams = stats.streams if stats is not None else 0
        samples = timings_ms(lambda: env.reset(seed=0), n, warmup=2)
        env.close()
    except Exception as exc:
        return f"not measured: {type(exc).__name__}: {exc}"
    per_reset = f", {(stats.streams - streams) / (n + 2):.1f} round trips each" if stats is not None else ""
    return (*median_p95(samples), task.id + per_reset)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    args = ap.parse_args()
    n = 200 if args.quick else 1_000
    n_png = 50 if args.quick else 300

    from PIL import Image

    from phoneenv.farm.adbwire import AdbDeviceServer
    from tests.adb import AdbServer, adb_binary, connect_device

    if adb_binary() is None:
        sys.exit("adb is not installed (Debian: apt-get install adb), or set PHONEENV_ADB")
    handler, which = make_device()
    with tempfile.TemporaryDirectory() as home, AdbServer(Path(home)) as adb, AdbDeviceServer(handler) as server:
        client = adb.client
        device = connect_device(client, server.serial)
        version = adb.cli("version").stdout.decode().splitlines()[1]

        echo = EchoServer()
        with socket.create_connection(("127.0.0.1", echo.port)) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def ping() -> None:
                s.sendall(b"x" * 32)
                got = 0
                while got < 32:
                    got += len(s.recv(64))

            tcp = median_p95(timings_ms(ping, n))
        port, serial = adb.port, server.serial
        host_version = median_p95(timings_ms(lambda: adb_request(port, "host:version"), n))
        model = adb_request(port, "shell:getprop ro.product.model", serial).decode().strip()
        assert shell_v2_exit(adb_request(port, "shell,v2:getprop ro.product.model", serial)) == (
            f"{model}\n".encode(),
            0,
        )
        getprop_v1 = median_p95(timings_ms(lambda: adb_request(port, "shell:getprop ro.product.model", serial), n))
        getprop_v2 = median_p95(
            timings_ms(lambda: shell_v2_exit(adb_request(port, "shell,v2:getprop ro.product.model", serial)), n)
        )
        getprop_adbutils = median_p95(timings_ms(lambda: device.shell("getprop ro.product.model"), n // 5, warmup=5))
        png = adb_request(port, "exec:screencap -p", serial)
        shape = Image.open(io.BytesIO(png)).size
        screencap = median_p95(timings_ms(lambda: adb_request(port, "exec:screencap -p", serial), n_png, warmup=5))

        def pull_and_decode() -> None:
            import numpy as np

            np.asarray(Image.open(io.BytesIO(adb_request(port, "exec:screencap -p", serial))).convert("RGB"))

        screencap_decoded = median_p95(timings_ms(pull_and_decode, n_png, warmup=5))
        reset = episode_reset_figure(server.serial, adb.port, 20 if args.quick else 100, server.stats)
        client.disconnect(server.serial)

    print(f"adb server: {version}; device: {which}; model {model!r}")
    print(
        f"screencap PNG: {len(png):,} bytes, {shape[0]}×{shape[1]}; {n} round trips per row "
        f"({n // 5} through adbutils, {n_png} for screencap)"
    )
    print()
    rows = [
        ("TCP echo on loopback (baseline)", tcp, None),
        ("host:version, adb server alone (baseline)", host_version, None),
        ("getprop, shell: v1 (target ≤ 2 ms median)", getprop_v1, 2.0),
        ("getprop, shell,v2: with exit code", getprop_v2, None),
        ("getprop via adbutils AdbDevice.shell", getprop_adbutils, None),
        ("screencap -p pull (exec:)", screencap, None),
        ("screencap -p pull + PNG decode", screencap_decoded, None),
    ]
    print(f"{'':44} {'median ms':>10} {'p95 ms':>8}  {'× host:version':>14} {'× TCP echo':>10}")
    for label, (med, p95), target in rows:
        flag = "" if target is None else ("  meets the target" if med <= target else "  MISSES the target")
        print(f"{label:44} {med:10.3f} {p95:8.3f}  {med / host_version[0]:14.2f} {med / tcp[0]:10.1f}{flag}")
    if isinstance(reset, str):
        print(f"{'episode reset on the device (AdbBackend)':44} {reset}")
    else:
        print(f"{'episode reset on the device (AdbBackend)':44} {reset[0]:10.3f} {reset[1]:8.3f}  task {reset[2]}")


if __name__ == "__main__":
    main()
