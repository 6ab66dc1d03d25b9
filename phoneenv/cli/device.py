"""``phoneenv device ...``: serve a virtual Android device over the adb wire protocol, capture
logins, run emulators.

Mounted by ``phoneenv.cli`` as the ``device`` sub-command; it stands above both the device farm
(:mod:`phoneenv.farm`) and the backends it drives. Only typer is imported here; the transport
(``phoneenv.farm.adbwire``) and the device (``phoneenv.farm.virtual``) load when a command runs.
"""

from __future__ import annotations

import importlib
import signal
import threading
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

device_app = typer.Typer(
    help="Virtual Android devices that the real adb server can `adb connect` to.",
    no_args_is_help=True,
)
console = Console()

VIRTUAL_MODULE = "phoneenv.farm.virtual"


def load_virtual_device() -> Any:
    """A new ``phoneenv.farm.virtual.VirtualDevice()`` (the sandbox phone as a DeviceHandler).

    Raises ``LookupError`` with the reason when that module is not part of this installation; an
    import error inside the module itself propagates unchanged.
    """
    try:
        module = importlib.import_module(VIRTUAL_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name not in (VIRTUAL_MODULE, "phoneenv.farm"):
            raise
        raise LookupError(
            f"{VIRTUAL_MODULE} is not in this installation, so there is no virtual device to serve yet "
            "(its shell, VirtualDevice, is built separately from the adb transport)"
        ) from None
    factory = getattr(module, "VirtualDevice", None)
    if factory is None:
        raise LookupError(f"{VIRTUAL_MODULE} defines no VirtualDevice")
    return factory()


@device_app.command("serve")
def serve(
    port: Annotated[
        int,
        typer.Option(
            min=0,
            max=65535,
            help="TCP port (0: a free one). Ports 5555-5585 are also found by adb's emulator scan.",
        ),
    ] = 5555,
    host: Annotated[str, typer.Option(help="Address to listen on; keep loopback unless you mean it.")] = "127.0.0.1",
    faults: Annotated[
        Path | None,
        typer.Option(
            help="A JSON fault plan (phoneenv.farm.faults.FaultPlan: full_storage, fail_restore, hang, ...) read "
            "again whenever it changes, so a test can make the running device misbehave."
        ),
    ] = None,
) -> None:
    """Serve the sandbox phone as an adb device until Ctrl-C; then `adb connect` to it."""
    from phoneenv.farm.adbwire import AdbDeviceServer

    try:
        handler = load_virtual_device()
    except LookupError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    if faults is not None:
        from phoneenv.farm.faults import FaultyDevice

        handler = FaultyDevice(handler, faults_file=faults)
    try:
        server = AdbDeviceServer(handler, host=host, port=port).start()
    except OSError as exc:
        console.print(f"[red]error:[/red] cannot listen on {host}:{port}: {exc.strerror or exc}")
        raise typer.Exit(1) from None
    stop = threading.Event()
    # Both signals set the event explicitly: a process started with SIGINT ignored (as some
    # launchers and test runners start children) would otherwise never see Ctrl-C.
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        model = handler.banner().get("ro.product.model", "device")
        console.print(f"serving {model} on {server.serial}", highlight=False)
        console.print(f"connect with: adb connect {server.serial}", highlight=False)
        console.print("Ctrl-C stops it.", highlight=False)
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.stop()
    console.print("stopped", highlight=False)


@device_app.command("ping")
def ping(
    address: Annotated[str, typer.Argument(help="The device's adb endpoint, HOST:PORT (e.g. 127.0.0.1:5555).")],
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds to wait for the answer.")] = 5.0,
) -> None:
    """Do adb's connection handshake (CNXN) with a device endpoint, with no adb server: exit 0 when
    it answers as a device, 1 otherwise (unauthorized, silent, refused). The worker image's
    HEALTHCHECK."""
    from phoneenv.farm.workers import WorkerError, adb_ping

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise typer.BadParameter(f"{address!r} is not HOST:PORT", param_hint="ADDRESS")
    try:
        result = adb_ping(host, int(port), timeout_s=timeout)
    except (OSError, TimeoutError, WorkerError) as exc:
        console.print(f"[red]no device:[/red] {address}: {exc}", highlight=False)
        raise typer.Exit(1) from None
    model = result.banner.get("ro.product.model", "?")
    console.print(f"{address}: {result.state} {model} ({result.elapsed_s * 1000:.0f} ms)", highlight=False)
    if result.state != "device":
        raise typer.Exit(1)


@device_app.command("capture-login")
def capture_login(
    app: Annotated[str, typer.Option(help="The sandbox app signed in on the device, e.g. mail.")],
    account: Annotated[str, typer.Option(help="The account it is signed in as (its files must name it).")],
    out: Annotated[str, typer.Option(help="Host folder for <package>.tgz and <package>.json.")],
    serial: Annotated[
        str | None, typer.Option(help="Device serial (default: $ANDROID_SERIAL or the only one).")
    ] = None,
    adb_port: Annotated[
        int | None, typer.Option(help="adb server port (default $ANDROID_ADB_SERVER_PORT or 5037).")
    ] = None,
) -> None:
    """Save an app you signed in to by hand as a login snapshot (needs root: adb root or su).

    Later resets of tasks whose fixtures say the app is signed in restore it
    (AdbBackend(login_snapshots=OUT) or $PHONEENV_LOGIN_SNAPSHOTS=OUT).
    """
    from phoneenv.backends.adb import AdbBackend, DeviceFault

    backend = AdbBackend(serial=serial, adb_port=adb_port)
    try:
        path = backend.capture_login(app, account, out)
    except (ValueError, DeviceFault) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    console.print(f"saved {path}", highlight=False)


# -- phoneenv device emulator ... (headless Android emulators; phoneenv.farm.emulator) ----------------

emulator_app = typer.Typer(
    help="Headless Android emulators of the AVDs declared in emulator_images/.", no_args_is_help=True
)
device_app.add_typer(emulator_app, name="emulator")


def _emulator_errors() -> tuple[type[BaseException], ...]:
    from phoneenv.farm.console import ConsoleError
    from phoneenv.farm.emulator import EmulatorError

    return (EmulatorError, ConsoleError, ValueError)


def _emulator_fail(exc: BaseException) -> NoReturn:
    """One error line; exit code 2 for an AVD definition or a token file that cannot be read or
    is invalid (a usage problem), 1 for what the emulator or its console did."""
    from phoneenv.farm.console import TokenFileError
    from phoneenv.farm.emulator import AvdSpecError

    console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
    raise typer.Exit(2 if isinstance(exc, (AvdSpecError, TokenFileError)) else 1) from None


@emulator_app.command("list")
def emulator_list(
    directory: Annotated[
        str | None, typer.Argument(help="Folder of AVD definitions (default emulator_images/).")
    ] = None,
) -> None:
    """The AVD definitions, and whether each AVD exists on this machine (tab-separated)."""
    from phoneenv.farm.emulator import avd_home, load_avd_specs

    try:
        specs = load_avd_specs(directory)
    except _emulator_errors() as exc:
        _emulator_fail(exc)
    for name, spec in specs.items():
        created = "created" if (avd_home() / f"{name}.ini").exists() else "not created"
        typer.echo(f"{name}\t{spec.system_image}\t{spec.device}\t{created}")  # tab-separated, for scripts


@emulator_app.command("start")
def emulator_start(
    spec: Annotated[str, typer.Argument(help="AVD definition (YAML), e.g. emulator_images/pixel6-api34.yaml.")],
    snapshot: Annotated[str | None, typer.Option(help="Boot from this snapshot (e.g. fixture).")] = None,
    cold: Annotated[bool, typer.Option("--cold", help="Cold boot: load no snapshot.")] = False,
    read_only: Annotated[
        bool,
        typer.Option(
            "--read-only",
            help="-read-only: several instances share the AVD; nothing is written back to it (no snapshot saves).",
        ),
    ] = False,
    boot_timeout: Annotated[float | None, typer.Option(help="Seconds to wait for boot (default: the spec's).")] = None,
    adb_port: Annotated[
        int | None, typer.Option(help="adb server port (default $ANDROID_ADB_SERVER_PORT or 5037).")
    ] = None,
    first_port: Annotated[int, typer.Option(help="Lowest console port to allocate (even).")] = 5554,
    last_port: Annotated[int, typer.Option(help="Highest console port to allocate (even).")] = 5682,
) -> None:
    """Start the AVD headless, wait for boot, run until Ctrl-C or SIGTERM, then stop it cleanly."""
    from phoneenv.farm.emulator import EmulatorLauncher, PortAllocator, load_avd_spec

    try:
        launcher = EmulatorLauncher(
            load_avd_spec(spec),
            allocator=PortAllocator(first=first_port, last=last_port),
            adb_server=("127.0.0.1", adb_port) if adb_port else None,
        )
        emu = launcher.start(snapshot=snapshot, cold_boot=cold, read_only=read_only, boot_timeout=boot_timeout)
    except _emulator_errors() as exc:
        _emulator_fail(exc)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        console.print(f"booted {emu.spec.name} as {emu.serial} (ports {emu.ports.ports_arg()})", highlight=False)
        console.print(f"log: {emu.log_path}; Ctrl-C stops it", highlight=False)
        while not stop.wait(0.5) and emu.alive():
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        how = emu.stop()
    console.print(f"stopped {emu.serial} ({how})", highlight=False)


@emulator_app.command("stop")
def emulator_stop(
    serial: Annotated[str, typer.Argument(help="emulator-N, or any serial with --console-port.")],
    console_port: Annotated[int | None, typer.Option(help="Talk to this console port directly.")] = None,
    host: Annotated[str, typer.Option(help="Console host, with --console-port.")] = "127.0.0.1",
    token_path: Annotated[str | None, typer.Option(help="Console token file.")] = None,
) -> None:
    """Ask a running emulator to exit through its console: 'kill' ('adb emu kill' for emulator-N)."""
    from phoneenv.farm.console import console_for_serial

    if console_port is None and not serial.startswith("emulator-"):
        console.print(f"[red]error:[/red] {serial} is not an emulator-N serial: pass --console-port", highlight=False)
        raise typer.Exit(1)
    try:
        console_for_serial(serial, host=host, console_port=console_port, token_path=token_path).kill()
    except _emulator_errors() as exc:
        _emulator_fail(exc)
    console.print(f"asked {serial} to exit", highlight=False)
