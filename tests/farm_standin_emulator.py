"""A stand-in for the Android ``emulator`` executable, for the launcher tests.

The tests copy this file into a temporary directory as ``emulator`` (with this interpreter in the
shebang) and put that directory first on ``PATH``. It behaves like the emulator where the
launcher can observe it, without an Android image:

* parses ``-avd NAME`` and ``-ports C,A``; records its argv in ``$STANDIN_STATE/argv.json``;
* refuses to start while ``<avd dir>/hardware-qemu.ini.lock`` exists (as the emulator does),
  then takes that lock, a hard-link-style file holding its PID and a NUL;
* creates ``$HOME/.emulator_console_auth_token`` if missing and serves the real console protocol
  on ``C`` (:class:`phoneenv.farm.console.ConsoleServer`); snapshots are files under
  ``<avd dir>/snapshots/<name>`` holding the device properties at save time;
* listens on the adb port ``A`` (no adb protocol: the device side is read from
  ``$STANDIN_STATE/props.json``, which it writes with ``sys.boot_completed=1`` after
  ``$STANDIN_BOOT_DELAY`` seconds);
* on console ``kill`` or SIGTERM it removes its lock and exits 0.

``$STANDIN_MODE`` selects a fault: ``hang`` (never boots), ``crash`` (prints the emulator's
unknown-AVD panic and exits 1), ``ignore-kill`` (acknowledges console ``kill`` but keeps
running), ``ignore-term`` (also ignores SIGTERM, so only SIGKILL stops it, leaving its lock).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from phoneenv.farm.console import ConsoleServer, SnapshotInfo, read_token


def main() -> int:
    args = sys.argv[1:]
    state = Path(os.environ["STANDIN_STATE"])
    state.mkdir(parents=True, exist_ok=True)
    (state / "argv.json").write_text(json.dumps(sys.argv))
    mode = os.environ.get("STANDIN_MODE", "normal")
    print(f"standin emulator pid {os.getpid()} mode {mode}", flush=True)
    avd = args[args.index("-avd") + 1]
    if mode == "crash":
        print(f"PANIC: Unknown AVD name [{avd}], use -list-avds to see valid list.", flush=True)
        return 1
    console_port, adb_port = (int(p) for p in args[args.index("-ports") + 1].split(","))
    avd_dir = Path(os.environ["ANDROID_AVD_HOME"]) / f"{avd}.avd"
    lock = avd_dir / "hardware-qemu.ini.lock"
    if lock.exists():
        print("ERROR: Running multiple emulators with the same AVD is an experimental feature.", flush=True)
        return 1
    lock.write_bytes(f"{os.getpid()}\0".encode())

    token_file = Path(os.environ["HOME"]) / ".emulator_console_auth_token"
    token = read_token(token_file)
    if token is None:
        token = secrets.token_urlsafe(12)
        token_file.write_text(token)

    adb_sock = socket.socket()
    adb_sock.bind(("127.0.0.1", adb_port))
    adb_sock.listen(1)

    props_file = state / "props.json"
    snapshots = avd_dir / "snapshots"
    snapshots.mkdir(exist_ok=True)

    class FileSnapshots:
        def save(self, name: str) -> None:
            props = props_file.read_text() if props_file.exists() else "{}"
            (snapshots / name).write_text(props)

        def load(self, name: str) -> bool:
            saved = snapshots / name
            if not saved.is_file():
                return False
            props_file.write_text(saved.read_text())
            return True

        def list(self) -> list[SnapshotInfo]:
            files = sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime_ns)
            return [SnapshotInfo(name=p.name, vm_size_bytes=p.stat().st_size) for p in files]

        def delete(self, name: str) -> None:
            try:
                (snapshots / name).unlink()
            except FileNotFoundError:
                raise KeyError(f"snapshot '{name}' doesn't exist") from None

    stop = threading.Event()

    def on_kill() -> None:
        if mode != "ignore-kill" and mode != "ignore-term":
            stop.set()

    server = ConsoleServer(FileSnapshots(), port=console_port, token=token, avd_name=avd, on_kill=on_kill)
    print(f"emulator: console on {console_port}, adb on {adb_port}", flush=True)

    if mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: stop.set())

    if mode != "hang":
        delay = float(os.environ.get("STANDIN_BOOT_DELAY", "0.3"))

        def boot() -> None:
            time.sleep(delay)
            if not stop.is_set():
                props_file.write_text(json.dumps({"sys.boot_completed": "1"}))
                print("emulator: boot completed", flush=True)

        threading.Thread(target=boot, daemon=True).start()

    stop.wait()
    server.close()
    adb_sock.close()
    lock.unlink(missing_ok=True)
    print("emulator: exiting cleanly", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
