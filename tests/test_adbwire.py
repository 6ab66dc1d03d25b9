"""The adb wire-protocol device endpoint (phoneenv.farm.adbwire), through the real adb server.

Three layers: pure functions (header packing, checksum, service names, VirtualFiles) checked
against values worked out by hand; the endpoint driven by a bare socket (tests.adb.RawAdbHost)
to pin down flow control and fault handling; and the endpoint as the real adb server and its
clients (adbutils, the `adb` command line) see it.
"""

from __future__ import annotations

import contextlib
import io
import os
import pty
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from phoneenv.farm.adbwire import (
    A_CNXN,
    A_OPEN,
    A_VERSION_MIN,
    AdbDeviceServer,
    FileStat,
    ProtocolError,
    Service,
    VirtualFiles,
    checksum,
    pack_message,
    parse_service,
    shell_packet,
    unpack_header,
)
from tests import waiting
from tests.adb import (
    ECHO_MODEL,
    AdbServer,
    DeviceTracker,
    EchoHandler,
    RawAdbHost,
    adb_binary,
    adb_cli,
    clean_env,
    connect_device,
    pattern,
    served_device,
    state_of,
    wait_for_state,
)

MTIME = 1_700_000_000

# -- pure functions -------------------------------------------------------------------------------


def test_cnxn_message_packs_to_the_bytes_worked_out_by_hand() -> None:
    # "host::\0" sums to 104+111+115+116+58+58+0 = 562 = 0x232; magic = 0x4e584e43 ^ 0xffffffff.
    expected = (
        bytes.fromhex(
            "434e584e"  # CNXN
            "01000001"  # version 0x01000001, little endian
            "00100000"  # maxdata 4096
            "07000000"  # 7 payload bytes
            "32020000"  # data_check 0x232
            "bcb1a7b1"  # magic 0xb1a7b1bc
        )
        + b"host::\0"
    )
    assert pack_message(A_CNXN, 0x01000001, 4096, b"host::\0") == expected
    assert pack_message(A_CNXN, 0x01000001, 4096, b"host::\0", with_checksum=False) == (
        expected[:16] + b"\0\0\0\0" + expected[20:]
    )
    assert unpack_header(expected[:24]) == (A_CNXN, 0x01000001, 4096, 7, 0x232)


def test_checksum_is_a_byte_sum_modulo_2_to_the_32() -> None:
    assert checksum(b"") == 0
    assert checksum(b"\xff\xff\xff") == 765
    assert checksum(bytes(range(256)) * 4096) == 4096 * (255 * 256 // 2)  # 1 MiB: 133,693,440
    # 255 * 16,843,010 = 4,294,967,550 = 2**32 + 254
    assert checksum(b"\xff" * 16_843_010) == 254


def test_header_errors_and_argument_ranges() -> None:
    good = pack_message(A_OPEN, 1, 0, b"shell:\0")[:24]
    with pytest.raises(ProtocolError, match="magic"):
        unpack_header(good[:20] + b"\0\0\0\0")
    with pytest.raises(ProtocolError, match="24 bytes"):
        unpack_header(good[:23])
    with pytest.raises(ValueError, match="arg0"):
        pack_message(A_OPEN, -1, 0)
    with pytest.raises(ValueError, match="arg1"):
        pack_message(A_OPEN, 1, 2**32)
    assert shell_packet(3, b"\x07") == b"\x03\x01\x00\x00\x00\x07"
    with pytest.raises(ValueError):
        shell_packet(256)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("shell:ls -l", Service("shell", "ls -l", ())),
        (
            "shell,v2,TERM=xterm-256color,raw:echo a:b",
            Service("shell", "echo a:b", ("v2", "TERM=xterm-256color", "raw")),
        ),
        ("shell,v2:", Service("shell", "", ("v2",))),
        ("exec:screencap -p", Service("exec", "screencap -p")),
        ("sync:", Service("sync")),
        ("reboot:", Service("reboot", "")),
        ("reboot:bootloader", Service("reboot", "bootloader")),
        ("shellx:ls", None),
        ("shell", None),
        ("root:", None),
        ("tcpip:5555", None),
        ("", None),
    ],
)
def test_service_names(name: str, expected: Service | None) -> None:
    assert parse_service(name) == expected


def test_virtual_files_semantics() -> None:
    files = VirtualFiles(dirs=("/sdcard",), mtime=MTIME)
    files.write("/sdcard//Download/../Download/a.bin", b"\x00\x01", mode=0o600, mtime=MTIME + 5)
    assert files.stat("/sdcard/Download/a.bin") == FileStat(stat.S_IFREG | 0o600, 2, MTIME + 5)
    assert files.stat("/sdcard/Download") == FileStat(stat.S_IFDIR | 0o775, 4096, MTIME + 5)  # created by the write
    assert files.read("/sdcard/Download/a.bin") == b"\x00\x01"
    assert [name for name, _ in files.listdir("/")] == ["sdcard"]
    assert files.listdir("/sdcard/Download") == [("a.bin", FileStat(stat.S_IFREG | 0o600, 2, MTIME + 5))]
    with pytest.raises(FileNotFoundError):
        files.stat("/sdcard/missing")
    with pytest.raises(NotADirectoryError):
        files.stat("/sdcard/Download/a.bin/x")
    with pytest.raises(NotADirectoryError):
        files.write("/sdcard/Download/a.bin/x", b"")
    with pytest.raises(IsADirectoryError):
        files.read("/sdcard")
    with pytest.raises(IsADirectoryError):
        files.write("/sdcard", b"")
    with pytest.raises(NotADirectoryError):
        files.listdir("/sdcard/Download/a.bin")
    with pytest.raises(ValueError, match="absolute"):
        files.read("sdcard/a")
    with pytest.raises(TypeError):
        files.write("/sdcard/x", "text")  # type: ignore[arg-type]
    with pytest.raises(OSError, match="not empty"):
        files.remove("/sdcard/Download")
    files.remove("/sdcard", recursive=True)
    assert not files.exists("/sdcard/Download/a.bin") and files.listdir("/") == []


def test_server_rejects_a_handler_or_banner_it_cannot_serve() -> None:
    with pytest.raises(TypeError, match="not a DeviceHandler"):
        AdbDeviceServer(object())  # type: ignore[arg-type]
    handler = EchoHandler(model="Bad;Model")
    with pytest.raises(ValueError, match="separator"):
        AdbDeviceServer(handler).start()
    with pytest.raises(ValueError, match="maxdata"):
        AdbDeviceServer(EchoHandler(), maxdata=100)


def test_worker_pool_reuses_idle_threads_and_never_queues_behind_a_blocked_job() -> None:
    from phoneenv.farm.adbwire import _WorkerPool

    pool = _WorkerPool("test-pool")
    release = threading.Event()
    names: list[str] = []
    pool.submit(release.wait)  # blocks a worker
    ran = threading.Event()
    pool.submit(lambda: (names.append(threading.current_thread().name), ran.set()))
    assert ran.wait(5), "a job waited behind a blocked one"
    time.sleep(0.05)  # the second worker is idle again
    ran.clear()
    pool.submit(lambda: (names.append(threading.current_thread().name), ran.set()))
    assert ran.wait(5) and names[0] == names[1]  # the idle worker took it: no new thread
    release.set()
    pool.close()


# -- the endpoint through a bare socket ----------------------------------------------------------


@pytest.fixture
def device() -> AdbDeviceServer:
    with AdbDeviceServer(EchoHandler()) as server:
        yield server


def test_handshake_answers_with_banner_version_and_maxdata(device: AdbDeviceServer) -> None:
    with RawAdbHost(device.port) as host:
        name, version, maxdata, banner = host.handshake(version=0x01000001, maxdata=8192)
    assert (name, version, maxdata) == ("CNXN", 0x01000001, 1024 * 1024)
    assert banner == (
        b"device::ro.product.name=echo_phone;ro.product.model=Echo_Phone;ro.product.device=echo;"
        b"features=shell_v2,stat_v2,ls_v2"
    )


def test_one_write_in_flight_chunked_to_the_negotiated_maxdata(device: AdbDeviceServer) -> None:
    with RawAdbHost(device.port) as host:
        host.handshake(maxdata=1000)
        host.send(b"OPEN", 7, 0, b"exec:bytes 4500 3\0")
        name, local_id, remote_id, _ = host.recv()
        assert (name, remote_id) == ("OKAY", 7) and local_id != 0
        received = b""
        for expected_size in (1000, 1000, 1000, 1000):
            name, arg0, arg1, payload = host.recv()
            assert (name, arg0, arg1, len(payload)) == ("WRTE", local_id, 7, expected_size)
            received += payload
            with pytest.raises(TimeoutError):  # nothing more until this write is acknowledged
                host.recv(timeout=0.2)
            host.send(b"OKAY", 7, local_id)
        name, _, _, payload = host.recv()
        assert (name, len(payload)) == ("WRTE", 500)
        # the last write is followed by CLSE at once, as adbd closes at end of file
        assert host.recv(timeout=5) == ("CLSE", local_id, 7, b"")
    assert received + payload == pattern(4500, 3)


def test_streams_interleave_on_one_connection(device: AdbDeviceServer) -> None:
    with RawAdbHost(device.port) as host:
        host.handshake(maxdata=4096)
        host.send(b"OPEN", 1, 0, b"exec:bytes 10000 1\0")
        host.send(b"OPEN", 2, 0, b"exec:bytes 10000 2\0")
        ids: dict[int, int] = {}
        data = {1: b"", 2: b""}
        closed: set[int] = set()
        while len(closed) < 2:
            name, arg0, arg1, payload = host.recv(timeout=5)
            if name == "OKAY":
                ids[arg1] = arg0
            elif name == "WRTE":
                data[arg1] += payload
                host.send(b"OKAY", arg1, arg0)
            elif name == "CLSE":
                closed.add(arg1)
        assert data == {1: pattern(10000, 1), 2: pattern(10000, 2)} and len(set(ids.values())) == 2
    assert device.stats.max_open_streams >= 2


def test_unknown_service_is_refused_and_opens_before_the_handshake_are_ignored(device: AdbDeviceServer) -> None:
    with RawAdbHost(device.port) as host:
        host.send(b"OPEN", 5, 0, b"shell:echo early\0")
        with pytest.raises(TimeoutError):
            host.recv(timeout=0.3)
        host.handshake()
        host.send(b"OPEN", 6, 0, b"jdwp:1234\0")
        assert host.recv(timeout=5) == ("CLSE", 0, 6, b"")
    assert device.stats.refused_services == 1 and device.handler.calls == []


def test_legacy_version_checksums_every_message() -> None:
    with AdbDeviceServer(EchoHandler(), version=A_VERSION_MIN) as server, RawAdbHost(server.port) as host:
        host.handshake(version=A_VERSION_MIN, maxdata=4096)
        host.send(b"OPEN", 3, 0, b"exec:bytes 3000 9\0")
        _, local_id, _, _ = host.recv()
        name, _, _, payload = host.recv()
        assert name == "WRTE" and payload == pattern(3000, 9)
        assert host.last_check == sum(payload) % 2**32 != 0  # RawAdbHost also checked it matches
        host.send(b"OKAY", 3, local_id, check=12345)  # a wrong checksum at the old version drops us
        assert host.closed_by_peer()
        assert server.stats.protocol_errors == 1


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(os.urandom(64), id="random-bytes"),
        pytest.param(pack_message(A_CNXN, 0x01000001, 4096, b"host::\0")[:13], id="truncated-header"),
        pytest.param(pack_message(A_CNXN, 0x01000001, 4096)[:20] + b"\x00\x00\x00\x00", id="bad-magic"),
        pytest.param(pack_message(A_CNXN, 0x01000001, 4096, b"x" * 64)[:30], id="truncated-payload"),
        pytest.param(bytes.fromhex("434e584e01000001001000000000200000000000bcb1a7b1"), id="2-MiB-payload"),
    ],
)
def test_malformed_input_drops_that_connection_and_the_server_keeps_serving(
    device: AdbDeviceServer, garbage: bytes
) -> None:
    with RawAdbHost(device.port) as bystander, RawAdbHost(device.port) as attacker:
        bystander.handshake()
        attacker.sock.sendall(garbage)
        with contextlib.suppress(OSError):  # the device may have hung up already
            attacker.sock.shutdown(socket.SHUT_WR)  # and nothing more: truncated messages end here
        assert attacker.closed_by_peer()
        bystander.send(b"OPEN", 1, 0, b"exec:echo still here\0")
        _, local_id, _, _ = bystander.recv(timeout=5)
        assert bystander.recv(timeout=5)[3] == b"still here\n"
        deadline = time.monotonic() + waiting.scaled(5)
        while device.connection_count > 1:  # the attacker's connection is forgotten right after its EOF
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert device.stats.protocol_errors == 1


def test_a_host_that_stops_reading_cannot_hang_stop() -> None:
    server = AdbDeviceServer(EchoHandler()).start()
    host = RawAdbHost(server.port)
    try:
        host.handshake()
        for stream in range(1, 17):  # 16 MiB in flight at once: far more than the socket buffers hold
            host.send(b"OPEN", stream, 0, b"exec:bytes 1048576 0\0")
        deadline = time.monotonic() + waiting.scaled(10)
        while server.stats.streams < 2:  # the device blocks too (its OKAYs find no room) before 16
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.5)  # let the writers fill the socket buffers and block in sendall
        stopper = threading.Thread(target=server.stop, daemon=True)
        stopper.start()
        stopper.join(timeout=5)
        assert not stopper.is_alive(), "stop() hung on a writer blocked in sendall"
        assert server.connection_count == 0
    finally:
        host.close()


def test_a_banner_gone_bad_loses_that_handshake_not_the_server() -> None:
    handler = EchoHandler()
    with AdbDeviceServer(handler) as server:
        handler.model = "now;broken"
        with RawAdbHost(server.port) as host:
            host.send(b"CNXN", 0x01000001, 4096, b"host::\0")
            assert host.closed_by_peer()
        handler.model = "Fixed"
        with RawAdbHost(server.port) as host:
            assert b"ro.product.model=Fixed;" in host.handshake()[3]


def test_handler_features_join_the_transport_features() -> None:
    handler = EchoHandler()
    handler.banner = lambda: {"ro.product.model": "M", "features": "cmd,shell_v2"}  # type: ignore[method-assign]
    with AdbDeviceServer(handler) as server, RawAdbHost(server.port) as host:
        assert host.handshake()[3] == b"device::ro.product.model=M;features=shell_v2,stat_v2,ls_v2,cmd"


def test_require_auth_asks_again_for_every_signature_and_never_accepts() -> None:
    with AdbDeviceServer(EchoHandler(), require_auth=True) as server, RawAdbHost(server.port) as host:
        name, kind, _, token = host.handshake()
        assert (name, kind, len(token)) == ("AUTH", 1, 20)
        host.send(b"AUTH", 2, 0, b"s" * 256)  # a signature: refused, a new token comes
        name, kind, _, token2 = host.recv(timeout=5)
        assert (name, kind, len(token2)) == ("AUTH", 1, 20) and token2 != token
        host.send(b"AUTH", 3, 0, b"QAAAA... user@host\0")  # a public key: the dialog is never confirmed
        with pytest.raises(TimeoutError):
            host.recv(timeout=0.3)
        host.send(b"OPEN", 1, 0, b"shell:echo hi\0")
        with pytest.raises(TimeoutError):
            host.recv(timeout=0.3)
    assert server.stats.handshakes == 0 and server.handler.calls == []


# -- through the real adb server -----------------------------------------------------------------


@pytest.fixture
def echo(adb_server):
    handler = EchoHandler()
    with served_device(adb_server, handler, stdin_timeout_s=30.0) as (server, dev):
        yield handler, server, dev


def test_adb_connect_lists_the_device_with_its_banner(adb_server, echo) -> None:
    _, server, dev = echo
    info = {i.serial: i for i in adb_server.list(extended=True)}[server.serial]
    assert info.state == "device"
    assert (info.tags["product"], info.tags["model"], info.tags["device"]) == ("echo_phone", ECHO_MODEL, "echo")
    assert set(dev.get_features().split(",")) == {"shell_v2", "stat_v2", "ls_v2"}
    listing = adb_cli(adb_server.port, "devices", "-l").stdout.decode()
    assert f"{server.serial}" in listing and f"model:{ECHO_MODEL}" in listing
    assert dev.prop.model == ECHO_MODEL


def test_shell_v1_and_v2_stdout_stderr_and_exit_codes(adb_server, echo) -> None:
    handler, server, dev = echo
    assert dev.shell("echo hello  world") == "hello world"
    v2 = dev.shell2("both", v2=True)
    assert (v2.stdout, v2.stderr, v2.returncode) == ("out\n", "err\n", 7)
    v1 = dev.shell2("both")  # v1: "both; echo X4EXIT:$?", stderr merged ahead of stdout
    assert (v1.output, v1.returncode) == ("err\nout\n", 7)
    missing = dev.shell2("frob --now", v2=True)
    assert (missing.stderr, missing.returncode) == ("sh: frob: not found\n", 127)
    cli = adb_cli(adb_server.port, "-s", server.serial, "shell", "exit 3")
    assert (cli.returncode, cli.stdout, cli.stderr) == (3, b"", b"")
    cli = adb_cli(adb_server.port, "-s", server.serial, "shell", "both")
    assert (cli.returncode, cli.stdout, cli.stderr) == (7, b"out\n", b"err\n")
    assert ("exit 3", b"") in handler.calls


def test_stdin_reaches_the_command_only_from_clients_that_send_it(adb_server, echo) -> None:
    handler, server, dev = echo
    data = pattern(200_000, 4)  # several shell packets
    cli = adb_cli(adb_server.port, "-s", server.serial, "shell", "cat", input=data)
    assert (cli.returncode, cli.stdout) == (0, data)
    t0 = time.monotonic()
    quick = dev.shell2("cat", v2=True)  # adbutils writes no stdin: the command runs at once
    # stdin_timeout_s is 30: a read that waited for stdin would take that long; the bound leaves room for a loaded CI box.
    assert quick.stdout == "" and time.monotonic() - t0 < 15
    controller, terminal = pty.openpty()  # an interactive terminal: a window-size packet comes first
    try:
        t0 = time.monotonic()
        cli = adb_cli(adb_server.port, "-s", server.serial, "shell", "echo from a tty", stdin=terminal)
        assert (cli.returncode, cli.stdout, time.monotonic() - t0 < 15) == (0, b"from a tty\n", True)
    finally:
        os.close(controller)
        os.close(terminal)


def test_stdin_that_never_closes_runs_after_the_timeout(adb_server) -> None:
    handler = EchoHandler()
    with served_device(adb_server, handler, stdin_timeout_s=0.5) as (server, _):
        read_end, write_end = os.pipe()  # held open and silent
        try:
            cli = adb_cli(adb_server.port, "-s", server.serial, "shell", "echo waited", stdin=read_end, timeout=20)
        finally:
            os.close(read_end)
            os.close(write_end)
    assert (cli.returncode, cli.stdout) == (0, b"waited\n")


def test_handler_errors_reach_the_stream_not_the_server(adb_server, echo) -> None:
    _, server, dev = echo
    crashed = dev.shell2("crash", v2=True)
    assert crashed.returncode == 255 and crashed.stderr == "virtual device error: RuntimeError: boom\n"
    bad = dev.shell2("badresult", v2=True)
    assert bad.returncode == 255 and "must return a ShellResult" in bad.stderr
    assert dev.shell("echo fine") == "fine" and server.stats.handler_errors == 2


def test_megabytes_of_output_over_v1_v2_and_exec(adb_server, echo) -> None:
    _, server, dev = echo
    assert dev.shell2("bytes 5000000 11", v2=True, encoding=None).stdout == pattern(5_000_000, 11)
    assert dev.shell("bytes 3000000 12", encoding=None) == pattern(3_000_000, 12)
    cli = adb_cli(adb_server.port, "-s", server.serial, "exec-out", "bytes 4000000 13")
    assert (cli.returncode, cli.stdout == pattern(4_000_000, 13)) == (0, True)


def test_small_maxdata_and_legacy_checksums_through_adb(adb_server, tmp_path: Path) -> None:
    handler = EchoHandler()
    with served_device(adb_server, handler, version=A_VERSION_MIN, maxdata=4096) as (server, dev):
        (conn,) = server._connections
        assert (conn.version, conn.maxdata) == (A_VERSION_MIN, 4096)  # adb now checks our checksums
        assert dev.shell2("bytes 300000 21", v2=True, encoding=None).stdout == pattern(300_000, 21)
        source = tmp_path / "blob.bin"
        source.write_bytes(pattern(150_000, 22))
        assert adb_cli(adb_server.port, "-s", server.serial, "push", str(source), "/sdcard/blob.bin").returncode == 0
        assert handler.files.read("/sdcard/blob.bin") == pattern(150_000, 22)


def test_concurrent_streams_while_one_waits(adb_server) -> None:
    with served_device(adb_server, EchoHandler(), stdin_timeout_s=60) as (server, dev):
        _concurrent_streams_while_one_waits(adb_server, server, dev)


def _concurrent_streams_while_one_waits(adb_server, server: AdbDeviceServer, dev) -> None:
    waiting = subprocess.Popen(
        [adb_binary(), "-P", str(adb_server.port), "-s", server.serial, "shell", "cat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=clean_env(),
    )
    try:
        waiting.stdin.write(b"first half, ")
        waiting.stdin.flush()
        results: dict[int, bytes] = {}

        def run(i: int) -> None:
            results[i] = dev.shell2(f"bytes 300000 {i}", v2=True, encoding=None).stdout

        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert results == {i: pattern(300_000, i) for i in range(4)}
        assert waiting.poll() is None  # the cat stream stayed open through all of that
        out, _ = waiting.communicate(b"second half", timeout=20)
        assert (waiting.returncode, out) == (0, b"first half, second half")
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()
    assert server.stats.max_open_streams >= 2


def test_push_pull_stat_list_through_sync(adb_server, echo, tmp_path: Path) -> None:
    handler, server, dev = echo
    blob = pattern(1_234_567, 31)  # more than one 64 KiB DATA chunk, and not a multiple of it
    source = tmp_path / "blob.bin"
    source.write_bytes(blob)
    source.chmod(0o640)
    os.utime(source, (MTIME, MTIME))
    cli = adb_cli(adb_server.port, "-s", server.serial, "push", str(source), "/sdcard/Pictures/blob.bin")
    assert cli.returncode == 0, cli.stderr
    # adbd copies the user bits to group and other: 0o640 -> 0o660 -> 0o666
    assert handler.files.stat("/sdcard/Pictures/blob.bin") == FileStat(stat.S_IFREG | 0o666, len(blob), MTIME)
    assert handler.files.read("/sdcard/Pictures/blob.bin") == blob
    pulled = tmp_path / "pulled.bin"
    cli = adb_cli(adb_server.port, "-s", server.serial, "pull", "/sdcard/Pictures/blob.bin", str(pulled))
    assert cli.returncode == 0 and pulled.read_bytes() == blob

    sync = dev.sync
    sync.push(b"tiny", "/sdcard/tiny.txt", mode=0o600)
    info = sync.stat("/sdcard/tiny.txt")
    assert (info.mode, info.size) == (stat.S_IFREG | 0o666, 4)
    assert sync.read_bytes("/sdcard/Pictures/blob.bin") == blob
    assert sync.stat("/sdcard/nothing").mode == 0  # STAT of a missing path answers zeros
    names = {entry.path: entry for entry in sync.list("/sdcard")}
    assert set(names) == {".", "..", "Pictures", "tiny.txt"}
    assert stat.S_ISDIR(names["Pictures"].mode) and names["tiny.txt"].size == 4

    ls = adb_cli(adb_server.port, "-s", server.serial, "ls", "/sdcard/Pictures")  # LIS2 (ls_v2)
    lines = ls.stdout.decode().splitlines()
    assert f"{stat.S_IFREG | 0o666:08x} {len(blob):08x} {MTIME:08x} blob.bin" in lines

    missing = adb_cli(adb_server.port, "-s", server.serial, "pull", "/sdcard/missing", str(tmp_path / "m"))
    assert missing.returncode == 1 and b"No such file or directory" in missing.stdout + missing.stderr
    blocked = adb_cli(adb_server.port, "-s", server.serial, "push", str(source), "/sdcard/tiny.txt/x")
    assert blocked.returncode == 1 and b"Not a directory" in blocked.stdout + blocked.stderr


def test_exec_out_screencap_is_a_png(adb_server, echo) -> None:
    from PIL import Image

    handler, server, _ = echo
    cli = adb_cli(adb_server.port, "-s", server.serial, "exec-out", "screencap -p")
    assert cli.returncode == 0 and cli.stdout == handler.png
    image = Image.open(io.BytesIO(cli.stdout))
    assert (image.format, image.size, image.getpixel((71, 127))) == ("PNG", (72, 128), (251, 253, 128))


def test_unknown_services_and_reboot(adb_server, echo) -> None:
    import adbutils

    handler, server, dev = echo
    with dev.open_transport() as conn:
        conn.send_command("frobnicate:now")
        with pytest.raises(adbutils.AdbError, match="closed"):
            conn.check_okay()
    root = adb_cli(adb_server.port, "-s", server.serial, "root")
    assert root.returncode == 1 and b"closed" in root.stderr
    assert adb_cli(adb_server.port, "-s", server.serial, "reboot", "bootloader").returncode == 0
    assert handler.reboots == ["bootloader"]
    assert server.stats.refused_services == 2


def test_require_auth_shows_unauthorized(adb_server) -> None:
    with AdbDeviceServer(EchoHandler(), require_auth=True) as server:
        try:
            adb_server.connect(server.serial, timeout=10)
            assert wait_for_state(adb_server, server.serial, {"unauthorized"}) == "unauthorized"
            cli = adb_cli(adb_server.port, "-s", server.serial, "shell", "echo hi")
            assert cli.returncode == 1 and b"unauthorized" in cli.stderr
            assert server.stats.auth_requests >= 2 and server.stats.handshakes == 0
        finally:
            adb_server.disconnect(server.serial)


def test_cable_pull_goes_offline_and_the_host_reconnects(adb_server, echo) -> None:
    _, server, dev = echo
    offline = (server.serial, "offline")

    def offline_then_device(states: list) -> bool:
        return offline in states and (server.serial, "device") in states[states.index(offline) :]

    with DeviceTracker(adb_server.port) as tracker:
        assert server.close_all_connections() == 1
        deadline = time.monotonic() + waiting.scaled(15)
        while not offline_then_device(list(tracker.states)):
            assert time.monotonic() < deadline, tracker.states
            time.sleep(0.02)
    assert server.stats.connections == 2 and server.stats.handshakes == 2
    assert dev.shell("echo back") == "back"


def test_adb_server_restart_then_reconnect(tmp_path: Path) -> None:
    pytest.importorskip("adbutils", reason="the adb tests need adbutils (pip install -e '.[device]')")
    if adb_binary() is None:
        pytest.skip("adb is not installed")
    with AdbServer(tmp_path / "home") as adb, AdbDeviceServer(EchoHandler()) as server:
        connect_device(adb.client, server.serial)
        assert server.connection_count == 1
        assert adb.cli("kill-server").returncode == 0
        adb.process.wait(10)
        deadline = time.monotonic() + waiting.scaled(10)
        while server.connection_count:  # the host's end closed; the device notices
            assert time.monotonic() < deadline
            time.sleep(0.02)
        adb.process = None
        adb.start()  # same port, same HOME
        assert state_of(adb.client, server.serial) is None  # a new server knows no TCP devices
        dev = connect_device(adb.client, server.serial)
        assert dev.shell("echo reconnected") == "reconnected"
        assert server.stats.connections == 2


# -- the command line -----------------------------------------------------------------------------


def test_cli_serve_without_a_virtual_device_says_why(monkeypatch) -> None:
    from typer.testing import CliRunner

    from phoneenv.cli import app

    monkeypatch.setitem(sys.modules, "phoneenv.farm.virtual", None)
    result = CliRunner().invoke(app, ["device", "serve", "--port", "0"])
    assert result.exit_code == 1
    assert "phoneenv.farm.virtual is not in this installation" in " ".join(result.output.split())


def test_cli_serve_runs_until_interrupted(adb_server, tmp_path: Path) -> None:
    # A stand-in phoneenv.farm.virtual whose VirtualDevice is the echo device.
    script = tmp_path / "serve.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, types
            from tests.adb import EchoHandler
            module = types.ModuleType("phoneenv.farm.virtual")
            module.VirtualDevice = EchoHandler
            sys.modules["phoneenv.farm.virtual"] = module
            from phoneenv.cli import app
            app(["device", "serve", "--port", "0"])
            """
        )
    )
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root), "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
        text=True,
    )
    try:
        first = proc.stdout.readline()
        assert first.startswith(f"serving {ECHO_MODEL} on 127.0.0.1:"), first
        serial = first.split()[-1]
        assert proc.stdout.readline().strip() == f"connect with: adb connect {serial}"
        dev = connect_device(adb_server, serial)
        assert dev.shell("getprop ro.product.model") == ECHO_MODEL
        adb_server.disconnect(serial)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and out.strip().endswith("stopped")
