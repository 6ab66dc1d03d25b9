"""A stand-in for the Android ``emulator`` executable, for the launcher tests.

The tests copy this file into a temporary directory as ``emulator`` (with this interpreter in the
shebang) and put that directory first on ``PATH``. It behaves like the emulator wherever the
launcher can observe it, without an Android image:

* parses ``-avd NAME`` and ``-ports C,A``; records its argv in ``$STANDIN_STATE/argv.json``;
* refuses to start while ``<avd dir>/hardware-qemu.ini.lock`` exists (as the emulator does),
  then takes that lock: a file holding its PID and a NUL, like the emulator's hard link;
* creates ``$HOME/.emulator_console_auth_token`` if missing and serves the real console protocol
  on ``C`` (:class:`phoneenv.farm.console.ConsoleServer`);
* serves the adb wire protocol on ``A`` (:class:`phoneenv.farm.adbwire.AdbDeviceServer`) and,
  when ``$ANDROID_ADB_SERVER_PORT`` is set, announces itself to that adb server with
  ``host:emulator:A`` as the emulator does, so ``adb devices`` lists ``emulator-C``. Its shell
  answers ``getprop`` (``sys.boot_completed`` turns ``1`` after ``$STANDIN_BOOT_DELAY`` seconds)
  and ``settings get|put <namespace> <key> [value]``; anything else exits 127;
* console snapshots save and restore that device state (properties and settings) as JSON files
  under ``<avd dir>/snapshots/<name>``;
* on console ``kill`` or SIGTERM it removes its lock and exits 0.

``$STANDIN_NO_ANNOUNCE`` keeps it from announcing itself (the adb server never lists it).

``$STANDIN_MODE`` selects a fault: ``hang`` (never finishes booting), ``crash`` (prints the
emulator's unknown-AVD panic and exits 1), ``ignore-kill`` (acknowledges console ``kill`` but keeps
running), ``ignore-term`` (also ignores SIGTERM, so only SIGKILL stops it, leaving its lock).
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from phoneenv.farm.adbwire import AdbDeviceServer, ShellResult, VirtualFiles
from phoneenv.farm.console import ConsoleServer, SnapshotInfo, read_token


class StandinDevice:
    """The guest: system properties and the settings provider, behind an adb shell."""

    def __init__(self) -> None:
        self.files = VirtualFiles()
        self.lock = threading.Lock()
        self.props = {"ro.build.version.sdk": "34", "ro.kernel.qemu": "1", "sys.boot_completed": ""}
        self.settings: dict[str, dict[str, str]] = {"global": {}, "secure": {}, "system": {}}

    def banner(self) -> dict[str, str]:
        return {"ro.product.name": "sdk_gphone64_x86_64", "ro.product.model": "standin", "ro.product.device": "emu64xa"}

    def shell(self, command: str, stdin: bytes) -> ShellResult:
        argv = shlex.split(command)
        with self.lock:
            match argv:
                case ["getprop", name]:
                    return ShellResult(f"{self.props.get(name, '')}\n".encode(), b"", 0)
                case ["settings", "get", namespace, key] if namespace in self.settings:
                    return ShellResult(f"{self.settings[namespace].get(key, 'null')}\n".encode(), b"", 0)
                case ["settings", "put", namespace, key, value] if namespace in self.settings:
                    self.settings[namespace][key] = value
                    return ShellResult(b"", b"", 0)
        name = argv[0] if argv else ""
        return ShellResult(b"", f"/system/bin/sh: {name}: inaccessible or not found\n".encode(), 127)

    def on_reboot(self, target: str) -> None:
        pass

    def state(self) -> dict:
        with self.lock:
            return {"props": dict(self.props), "settings": {k: dict(v) for k, v in self.settings.items()}}

    def restore(self, state: dict) -> None:
        with self.lock:
            self.props = dict(state["props"])
            self.settings = {k: dict(v) for k, v in state["settings"].items()}


def announce(adb_port: int) -> None:
    """``host:emulator:<adb port>`` to the adb server, as the emulator does at start-up."""
    server_port = os.environ.get("ANDROID_ADB_SERVER_PORT")
    if not server_port or os.environ.get("STANDIN_NO_ANNOUNCE"):
        return
    request = f"host:emulator:{adb_port}".encode()
    try:
        with socket.create_connection(("127.0.0.1", int(server_port)), timeout=5) as sock:
            sock.sendall(b"%04x" % len(request) + request)
    except OSError as exc:
        print(f"emulator: cannot reach the adb server on {server_port}: {exc}", flush=True)


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

    device = StandinDevice()
    snapshots = avd_dir / "snapshots"
    snapshots.mkdir(exist_ok=True)

    class FileSnapshots:
        def save(self, name: str) -> None:
            (snapshots / name).write_text(json.dumps(device.state()))

        def load(self, name: str) -> bool:
            saved = snapshots / name
            if not saved.is_file():
                return False
            device.restore(json.loads(saved.read_text()))
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
        if mode not in ("ignore-kill", "ignore-term"):
            stop.set()

    console = ConsoleServer(FileSnapshots(), port=console_port, token=token, avd_name=avd, on_kill=on_kill)
    adbd = AdbDeviceServer(device, port=adb_port).start()
    print(f"emulator: console on {console_port}, adb on {adb_port}", flush=True)
    announce(adb_port)

    if mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: stop.set())

    if mode != "hang":
        delay = float(os.environ.get("STANDIN_BOOT_DELAY", "0.3"))

        def boot() -> None:
            time.sleep(delay)
            if not stop.is_set():
                with device.lock:
                    device.props["sys.boot_completed"] = "1"
                print("emulator: boot completed", flush=True)

        threading.Thread(target=boot, daemon=True).start()

    stop.wait()
    console.close()
    adbd.stop()
    lock.unlink(missing_ok=True)
    print("emulator: exiting cleanly", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
