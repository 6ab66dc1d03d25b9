"""The emulator console: ConsoleClient against ConsoleServer over real loopback TCP, and real `adb emu`."""

from __future__ import annotations

import shutil
import socket
import struct
import threading
import time

import pytest

from phoneenv.farm.console import (
    AdbEmuConsole,
    ConsoleAuthError,
    ConsoleClient,
    ConsoleCommandError,
    ConsoleConnectionError,
    ConsoleServer,
    ConsoleTimeoutError,
    MemorySnapshotHooks,
    SnapshotLoadError,
    console_for_serial,
    parse_snapshot_list,
    read_token,
    validate_snapshot_name,
)
from tests import waiting

TOKEN = "Zq8pL2mN4vX7cR1t"

# `adb emu avd snapshot list` captured from a real emulator (quoted in public test code), with the
# emulator's own default_boot snapshot and one saved through the console.
REAL_LIST_OUTPUT = (
    "List of snapshots present on all disks:\n"
    "ID        TAG                 VM SIZE                DATE       VM CLOCK\n"
    "--        default_boot            75M 2026-09-09 11:41:45   00:10:07.753\n"
    "--        fixture_test            75M 2026-09-09 16:55:38   00:10:45.114\n"
    "OK\n"
)


class Phone:
    """A tiny world whose state the snapshot hooks capture and restore."""

    def __init__(self) -> None:
        self.state = {"wifi": True, "contacts": ["Ana"]}

    def hooks(self) -> MemorySnapshotHooks:
        return MemorySnapshotHooks(
            capture=lambda: {"wifi": self.state["wifi"], "contacts": list(self.state["contacts"])},
            restore=lambda saved: self.state.update(
                {"wifi": saved["wifi"], "contacts": list(saved["contacts"])}  # type: ignore[index]
            ),
        )


@pytest.fixture
def phone() -> Phone:
    return Phone()


@pytest.fixture
def server(phone: Phone):
    with ConsoleServer(phone.hooks(), token=TOKEN, avd_name="Pixel_6_API_34") as srv:
        yield srv


def raw_session(port: int) -> tuple[socket.socket, bytes]:
    """Connect with a plain socket and read the whole greeting (up to its OK line)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    return sock, read_until(sock, b"OK\r\n")


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def read_to_eof(sock: socket.socket) -> bytes:
    data = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return data
        data += chunk


# ------------------------------------------------------------------------------------ protocol


def test_greeting_and_auth_follow_the_emulator_text(server: ConsoleServer) -> None:
    sock, greeting = raw_session(server.port)
    with sock:
        assert greeting == (
            b"Android Console: Authentication required\r\n"
            b"Android Console: type 'auth <auth_token>' to authenticate\r\n"
            b"Android Console: you can find your <auth_token> in \r\n"
            b"'~/.emulator_console_auth_token'\r\n"
            b"OK\r\n"
        )
        # Before auth only the pre-auth commands exist; "avd name" is one of them.
        sock.sendall(b"avd snapshot list\r\n")
        assert read_until(sock, b"\r\n") == b"KO: unknown command, try 'help'\r\n"
        sock.sendall(b"avd name\n")
        assert read_until(sock, b"OK\r\n") == b"Pixel_6_API_34\r\nOK\r\n"
        sock.sendall(b"auth wrong\n")
        assert read_until(sock, b"\r\n") == (
            b"KO: authentication token does not match ~/.emulator_console_auth_token\r\n"
        )
        sock.sendall(b"auth\n")
        assert read_until(sock, b"\r\n") == b"KO: missing authentication token\r\n"
        sock.sendall(f"auth {TOKEN}\n".encode())
        assert read_until(sock, b"OK\r\n") == b"Android Console: type 'help' for a list of commands\r\nOK\r\n"
        sock.sendall(b"avd snapshot list\n")
        assert read_until(sock, b"OK\r\n") == b"There is no snapshot available.\r\nOK\r\n"
        sock.sendall(b"quit\n")
        assert read_to_eof(sock) == b""


def test_server_without_token_skips_authentication(phone: Phone) -> None:
    with ConsoleServer(phone.hooks(), token=None) as srv:
        sock, greeting = raw_session(srv.port)
        with sock:
            assert greeting == b"Android Console: type 'help' for a list of commands\r\nOK\r\n"
        with ConsoleClient("127.0.0.1", srv.port, token_path="/nonexistent/token") as client:
            assert client.snapshot_list() == []


def test_client_auth_required_missing_and_wrong_token(server: ConsoleServer, tmp_path) -> None:
    missing = tmp_path / "no-such-token"
    with pytest.raises(ConsoleAuthError, match="missing or empty"):
        ConsoleClient("127.0.0.1", server.port, token_path=missing).connect()
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-token\n")
    with pytest.raises(ConsoleAuthError, match="does not match"):
        ConsoleClient("127.0.0.1", server.port, token_path=wrong).connect()
    with pytest.raises(ConsoleAuthError, match="does not match"):
        ConsoleClient("127.0.0.1", server.port, token="nope").connect()
    good = tmp_path / ".emulator_console_auth_token"
    good.write_text(TOKEN + "\n")  # a trailing newline is ignored, as the emulator does
    assert read_token(good) == TOKEN
    with ConsoleClient("127.0.0.1", server.port, token_path=good) as client:
        assert client.authenticated
        assert client.avd_name() == "Pixel_6_API_34"
        assert client.ping()


def test_snapshot_round_trip_restores_state(server: ConsoleServer, phone: Phone) -> None:
    with ConsoleClient("127.0.0.1", server.port, token=TOKEN) as client:
        assert client.snapshot_list() == []
        client.snapshot_save("fixture")
        phone.state["wifi"] = False
        phone.state["contacts"].append("Bruno")
        client.snapshot_save("after_edit")
        assert client.snapshot_list() == ["fixture", "after_edit"]
        phone.state["contacts"].append("Carla")

        client.snapshot_load("fixture")
        assert phone.state == {"wifi": True, "contacts": ["Ana"]}
        client.snapshot_load("after_edit")
        assert phone.state == {"wifi": False, "contacts": ["Ana", "Bruno"]}

        client.snapshot_delete("after_edit")
        assert client.snapshot_list() == ["fixture"]
        with pytest.raises(SnapshotLoadError) as err:
            client.snapshot_load("after_edit")
        assert err.value.message == "Snapshot load failure: snapshot doesn't exist"
        with pytest.raises(ConsoleCommandError, match="doesn't exist"):
            client.snapshot_delete("after_edit")
        # Re-saving a name replaces it and moves it to the end, like a new save.
        client.snapshot_save("after_edit")
        client.snapshot_save("fixture")
        assert client.snapshot_list() == ["after_edit", "fixture"]


def test_missing_snapshot_load_is_a_clear_exception(server: ConsoleServer) -> None:
    with ConsoleClient("127.0.0.1", server.port, token=TOKEN) as client:
        with pytest.raises(SnapshotLoadError) as err:
            client.snapshot_load("never_saved")
        text = str(err.value)
        assert "avd snapshot load never_saved" in text
        assert f"127.0.0.1:{server.port}" in text
        assert "snapshot doesn't exist" in text
        # The connection is still usable after a KO.
        assert client.avd_name() == "Pixel_6_API_34"


def test_protocol_errors_match_the_emulator(server: ConsoleServer) -> None:
    sock, _ = raw_session(server.port)
    with sock:
        sock.sendall(f"auth {TOKEN}\n".encode())
        read_until(sock, b"OK\r\n")
        sock.sendall(b"avd snapshot load\n")
        assert read_until(sock, b"\r\n") == b"KO: Argument missing, try 'avd snapshot load <name>'\r\n"
        sock.sendall(b"avd snapshot del\n")
        assert read_until(sock, b"\r\n") == b"KO: Argument missing, try 'avd snapshot list <name>'\r\n"
        sock.sendall(b"avd snapshot frobnicate x\n")
        assert read_until(sock, b"KO:  bad sub-command\r\n").endswith(b"KO:  bad sub-command\r\n")
        sock.sendall(b"avd\n")
        assert read_until(sock, b"KO: missing sub-command\r\n").endswith(b"KO: missing sub-command\r\n")
        sock.sendall(b"geo fix 1 2\n")
        assert read_until(sock, b"\r\n") == b"KO: unknown command, try 'help'\r\n"
        sock.sendall(b"ping\n")
        assert read_until(sock, b"OK\r\n") == b"I am alive!\r\nOK\r\n"


def test_hook_failure_is_a_ko_not_a_dead_server(phone: Phone) -> None:
    class Broken(MemorySnapshotHooks):
        def save(self, name: str) -> None:
            raise OSError("disk full")

    with (
        ConsoleServer(Broken(), token=TOKEN) as srv,
        ConsoleClient("127.0.0.1", srv.port, token=TOKEN) as client,
    ):
        with pytest.raises(ConsoleCommandError) as err:
            client.snapshot_save("fixture")
        assert err.value.message == "disk full"
        assert client.snapshot_list() == []


# ------------------------------------------------------------------------- garbage and drops


def test_server_survives_garbage_and_abrupt_disconnects(server: ConsoleServer) -> None:
    # Invalid UTF-8: the emulator answers and hangs up.
    sock, _ = raw_session(server.port)
    with sock:
        sock.sendall(b"\xff\xfe\xfd garbage\n")
        assert read_to_eof(sock) == b"KO: Forbidden binary request. Aborting\r\n"
    # An HTTP request line: same.
    sock, _ = raw_session(server.port)
    with sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_to_eof(sock) == b"KO: Forbidden HTTP request. Aborting\r\n"
    # An over-long line is dropped (the emulator's 4 KiB buffer wraps), the session goes on.
    sock, _ = raw_session(server.port)
    with sock:
        sock.sendall(b"x" * 10_000 + b"\n" + b"ping\n")
        reply = read_until(sock, b"I am alive!\r\nOK\r\n")
        assert reply == b"KO: unknown command, try 'help'\r\nI am alive!\r\nOK\r\n"
    # Half a command, then a close; and a reset (RST) in the middle of a session.
    for _ in range(5):
        sock, _ = raw_session(server.port)
        sock.sendall(b"avd snap")
        sock.close()
        sock, _ = raw_session(server.port)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.sendall(f"auth {TOKEN}\navd snapshot list\n".encode())
        sock.close()
    # Empty lines and random printable noise between real commands.
    with ConsoleClient("127.0.0.1", server.port, token=TOKEN) as client:
        with pytest.raises(ConsoleCommandError, match="unknown command"):
            client.command("%$#@! ~~ ;; rm -rf /")
        client.snapshot_save("still_alive")
        assert client.snapshot_list() == ["still_alive"]
    deadline = time.monotonic() + waiting.scaled(5)
    while server._clients and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server._clients == set()  # every dropped session was cleaned up


def test_many_clients_at_once(server: ConsoleServer) -> None:
    names = [f"snap_{i}" for i in range(12)]
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        try:
            with ConsoleClient("127.0.0.1", server.port, token=TOKEN) as client:
                client.snapshot_save(name)
                assert name in client.snapshot_list()
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not errors
    with ConsoleClient("127.0.0.1", server.port, token=TOKEN) as client:
        assert sorted(client.snapshot_list()) == sorted(names)


# ------------------------------------------------------------------------------ client errors


def test_client_refused_and_timeout() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    with pytest.raises(ConsoleConnectionError, match=f"127.0.0.1:{free_port}"):
        ConsoleClient("127.0.0.1", free_port, token=TOKEN, timeout=1).connect()

    # A peer that accepts but never speaks: the greeting read times out.
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        started = time.monotonic()
        with pytest.raises(ConsoleTimeoutError, match=r"within 0\.3 s"):
            ConsoleClient("127.0.0.1", mute.getsockname()[1], token=TOKEN, timeout=0.3).connect()
        # The client's default is 10 s: the bound tells 0.3 s from that, with room for a loaded CI box
        # (a run under `pytest -n auto` with training tests beside it took 5.4 s here).
        assert time.monotonic() - started < 9


def test_client_rejects_injection_and_bad_names(server: ConsoleServer) -> None:
    with ConsoleClient("127.0.0.1", server.port, token=TOKEN) as client:
        for bad in ("x\nkill", "two words", "", "../etc", "a" * 129, "-leading-dash"):
            with pytest.raises(ValueError, match="invalid snapshot name"):
                client.snapshot_save(bad)
        with pytest.raises(ValueError, match="control characters"):
            client.command("ping\nkill")
        assert client.snapshot_list() == []
        assert server.killed.is_set() is False
    assert validate_snapshot_name("fixture-2.v1_a") == "fixture-2.v1_a"


def test_kill_calls_the_hook_and_default_kill_stops_listening(phone: Phone) -> None:
    killed = threading.Event()
    with ConsoleServer(phone.hooks(), token=TOKEN, on_kill=killed.set) as srv:
        sock, _ = raw_session(srv.port)
        with sock:
            sock.sendall(f"auth {TOKEN}\nkill\n".encode())
            assert read_to_eof(sock).endswith(b"OK: killing emulator, bye bye\r\n")
        assert killed.wait(5)

    srv = ConsoleServer(phone.hooks(), token=TOKEN)
    try:
        ConsoleClient("127.0.0.1", srv.port, token=TOKEN).kill()
        assert srv.killed.wait(5)
        deadline = time.monotonic() + waiting.scaled(5)
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", srv.port), timeout=0.5).close()
            except OSError:
                break
            time.sleep(0.05)
        with pytest.raises(ConsoleConnectionError):
            ConsoleClient("127.0.0.1", srv.port, token=TOKEN, timeout=1).connect()
    finally:
        srv.close()


def test_parse_real_snapshot_list_output() -> None:
    assert parse_snapshot_list(REAL_LIST_OUTPUT) == ["default_boot", "fixture_test"]
    assert parse_snapshot_list("There is no snapshot available.\nOK\n") == []
    # Plain QEMU numbers its rows.
    assert parse_snapshot_list(["1         clean      1.1G 2026-09-30 11:00:00   00:02:00.000"]) == ["clean"]


def test_console_for_serial_picks_the_path(tmp_path) -> None:
    assert isinstance(console_for_serial("emulator-5554"), AdbEmuConsole)
    via_adb = console_for_serial("emulator-5556", token_path=tmp_path / ".emulator_console_auth_token")
    assert isinstance(via_adb, AdbEmuConsole) and via_adb.home == tmp_path and via_adb.port == 5556
    for direct in (
        console_for_serial("emulator-5554", token="t"),
        console_for_serial("emulator-5554", token_path=tmp_path / "token.txt"),
        console_for_serial("127.0.0.1:5555", console_port=5554, token="t"),
    ):
        assert isinstance(direct, ConsoleClient) and direct.port == 5554
    with pytest.raises(ValueError, match="console_port="):
        console_for_serial("127.0.0.1:5555")
    with pytest.raises(ValueError, match="emulator-N"):
        AdbEmuConsole("R58M123ABC")


# ------------------------------------------------------------------------------------ adb emu

needs_adb = pytest.mark.skipif(shutil.which("adb") is None, reason="adb is not installed (apt-get install adb)")


@needs_adb
def test_adb_emu_against_the_console_server(server: ConsoleServer, phone: Phone, tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # A trailing newline in the token file makes adb send an extra empty line; the helper copes.
    (home / ".emulator_console_auth_token").write_text(TOKEN + "\n")
    emu = AdbEmuConsole(f"emulator-{server.port}", home=home, timeout=20)
    assert emu.avd_name() == "Pixel_6_API_34"
    emu.snapshot_save("fixture")
    phone.state["wifi"] = False
    assert emu.snapshot_list() == ["fixture"]
    emu.snapshot_load("fixture")
    assert phone.state["wifi"] is True
    with pytest.raises(SnapshotLoadError, match="snapshot doesn't exist"):
        emu.snapshot_load("missing")
    emu.snapshot_delete("fixture")
    assert emu.snapshot_list() == []

    (home / ".emulator_console_auth_token").write_text(TOKEN)  # no newline: no spurious line
    assert emu.avd_name() == "Pixel_6_API_34"
    (home / ".emulator_console_auth_token").write_text("wrong")
    with pytest.raises(ConsoleAuthError, match="rejected adb's token"):
        emu.snapshot_list()
    (home / ".emulator_console_auth_token").unlink()
    with pytest.raises(ConsoleAuthError, match="no auth token"):
        emu.snapshot_list()


@needs_adb
def test_adb_emu_connection_refused(tmp_path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    with pytest.raises(ConsoleConnectionError, match="adb emu"):
        AdbEmuConsole(f"emulator-{free_port}", home=tmp_path, timeout=20).snapshot_list()
