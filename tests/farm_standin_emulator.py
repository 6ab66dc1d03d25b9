"""A stand-in for the Android ``emulator`` executable, for the launcher tests.

The tests copy this file into a temporary directory as ``emulator`` (with this interpreter in the
shebang) and put that directory first on ``PATH``. It behaves like the emulator wherever the
launcher can observe it, without an Android image:

* parses ``-avd NAME`` and ``-ports C,A``; records its argv in ``$STANDIN_STATE/argv.json``
  (the latest start) and ``$STANDIN_STATE/argv-<pid>.json`` (each start);
* finds the AVD as the emulator does, through ``$ANDROID_AVD_HOME/NAME.ini`` (``path=``), and
  panics with the emulator's unknown-AVD message when there is none;
* a writable instance refuses to start while ``<avd dir>/hardware-qemu.ini.lock`` exists, with
  the emulator's multi-instance message (as the emulator refuses a locked AVD), then takes that
  lock: a file holding its PID and a NUL, like the emulator's hard link. ``-read-only``
  instances take no lock, so any number share the AVD; they never write into it (console
  ``avd snapshot save|delete`` answers ``KO``, nothing is saved on exit);
* snapshots live where the emulator keeps them, ``<avd dir>/snapshots/<name>/snapshot.pb``
  (here the device state, properties and settings, as JSON). At start it loads
  ``-snapshot NAME`` (``default_boot`` without it) unless ``-no-snapshot-load`` is given; a
  missing one prints the emulator's ``Performing clean boot: Missing snapshot files`` (an
  unreadable one ``... Bad snapshot data``) and cold boots, as the emulator does. Unless
  ``-no-snapshot-save`` or ``-read-only``, it saves that snapshot again on a clean exit;
* creates ``$HOME/.emulator_console_auth_token`` if missing and serves the real console protocol
  on ``C`` (:class:`phoneenv.farm.console.ConsoleServer`), with ``avd snapshot
  save|load|list|delete`` on those snapshot files;
* serves the adb wire protocol on ``A`` (:class:`phoneenv.farm.adbwire.AdbDeviceServer`) and,
  when ``$ANDROID_ADB_SERVER_PORT`` is set, announces itself to that adb server with
  ``host:emulator:A`` as the emulator does, so ``adb devices`` lists ``emulator-C``. Its shell
  answers ``getprop`` (``sys.boot_completed`` turns ``1`` after ``$STANDIN_BOOT_DELAY`` seconds,
  at once when the loaded snapshot was saved booted) and ``settings get|put <namespace> <key>
  [value]``; anything else exits 127;
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
import shutil
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


DEFAULT_BOOT = "default_boot"
"""The Quick Boot snapshot the emulator loads (and saves on exit) when no ``-snapshot`` is given."""
MULTI_INSTANCE_REFUSED = (
    "Running multiple emulators with the same AVD is an experimental feature. "
    "Please use -read-only flag to enable this feature."
)
READ_ONLY_REFUSED = "snapshots cannot be saved or deleted: the emulator runs with -read-only"


class AvdSnapshots:
    """Snapshots where the emulator keeps them, ``<avd dir>/snapshots/<name>/snapshot.pb``.

    The stand-in's ``snapshot.pb`` holds the device state (properties, settings) as JSON instead
    of the emulator's protobuf; a snapshot exists exactly when that file does, as for the emulator.
    A ``-read-only`` instance loads them but never writes or deletes one.
    """

    def __init__(self, root: Path, device: StandinDevice, *, read_only: bool) -> None:
        self.root = root
        self.device = device
        self.read_only = read_only

    def _pb(self, name: str) -> Path:
        return self.root / name / "snapshot.pb"

    def boot_load(self, name: str) -> str | None:
        """Load ``name``; ``None`` on success, else the emulator's reason (``Missing snapshot files``)."""
        pb = self._pb(name)
        if not pb.is_file():
            return "Missing snapshot files"
        try:
            self.device.restore(json.loads(pb.read_text()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return "Bad snapshot data"
        return None

    def save(self, name: str) -> None:
        if self.read_only:
            raise RuntimeError(READ_ONLY_REFUSED)
        pb = self._pb(name)
        pb.parent.mkdir(parents=True, exist_ok=True)
        tmp = pb.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.device.state()))
        tmp.replace(pb)

    def load(self, name: str) -> bool:
        return self.boot_load(name) is None

    def list(self) -> list[SnapshotInfo]:
        found = [d for d in self.root.iterdir() if (d / "snapshot.pb").is_file()] if self.root.is_dir() else []
        found.sort(key=lambda d: (d / "snapshot.pb").stat().st_mtime_ns)
        return [SnapshotInfo(name=d.name, vm_size_bytes=(d / "snapshot.pb").stat().st_size) for d in found]

    def delete(self, name: str) -> None:
        if self.read_only:
            raise RuntimeError(READ_ONLY_REFUSED)
        if not self._pb(name).is_file():
            raise KeyError(f"snapshot '{name}' doesn't exist")
        shutil.rmtree(self.root / name)


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


def resolve_avd(avd: str) -> Path | None:
    """The AVD's content directory from ``<avd home>/<avd>.ini`` (``path=``), as the emulator finds it."""
    ini = Path(os.environ["ANDROID_AVD_HOME"]) / f"{avd}.ini"
    if not ini.is_file():
        return None
    for line in ini.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "path" and value.strip():
            return Path(value.strip())
    return ini.with_suffix(".avd")


def main() -> int:
    args = sys.argv[1:]
    state = Path(os.environ["STANDIN_STATE"])
    state.mkdir(parents=True, exist_ok=True)
    (state / "argv.json").write_text(json.dumps(sys.argv))
    (state / f"argv-{os.getpid()}.json").write_text(json.dumps(sys.argv))
    mode = os.environ.get("STANDIN_MODE", "normal")
    print(f"standin emulator pid {os.getpid()} mode {mode}", flush=True)
    avd = args[args.index("-avd") + 1]
    avd_dir = resolve_avd(avd)
    if mode == "crash" or avd_dir is None or not avd_dir.is_dir():
        print(f"PANIC: Unknown AVD name [{avd}], use -list-avds to see valid list.", flush=True)
        return 1
    console_port, adb_port = (int(p) for p in args[args.index("-ports") + 1].split(","))
    read_only = "-read-only" in args
    save_on_exit = "-no-snapshot-save" not in args and not read_only
    boot_snapshot = args[args.index("-snapshot") + 1] if "-snapshot" in args else DEFAULT_BOOT
    lock = avd_dir / "hardware-qemu.ini.lock"
    if not read_only:
        if lock.exists():
            print(f"ERROR   | {MULTI_INSTANCE_REFUSED}", flush=True)
            return 1
        lock.write_bytes(f"{os.getpid()}\0".encode())

    token_file = Path(os.environ["HOME"]) / ".emulator_console_auth_token"
    token = read_token(token_file)
    if token is None:
        token = secrets.token_urlsafe(12)
        token_file.write_text(token)

    device = StandinDevice()
    snapshots = AvdSnapshots(avd_dir / "snapshots", device, read_only=read_only)
    if "-no-snapshot-load" in args:
        print("INFO    | Performing cold boot: requested by the user", flush=True)
    else:
        failure = snapshots.boot_load(boot_snapshot)
        if failure:
            print(f"INFO    | Performing clean boot: {failure}", flush=True)
        else:
            print(f"INFO    | Loaded snapshot '{boot_snapshot}'", flush=True)

    stop = threading.Event()

    def on_kill() -> None:
        if mode not in ("ignore-kill", "ignore-term"):
            stop.set()

    console = ConsoleServer(snapshots, port=console_port, token=token, avd_name=avd, on_kill=on_kill)
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
    if save_on_exit:
        snapshots.save(boot_snapshot)
        print(f"INFO    | Saved snapshot '{boot_snapshot}' on exit", flush=True)
    if not read_only:
        lock.unlink(missing_ok=True)
    print("emulator: exiting cleanly", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
