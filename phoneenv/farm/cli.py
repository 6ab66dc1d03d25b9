"""``phoneenv device ...``: serve a virtual Android device over the adb wire protocol.

Mounted by ``phoneenv.cli`` as the ``device`` sub-command. Only typer is imported here; the
transport (``phoneenv.farm.adbwire``) and the device (``phoneenv.farm.virtual``) load when a
command runs.
"""

from __future__ import annotations

import importlib
import signal
import threading
from typing import Annotated, Any

import typer
from rich.console import Console

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
) -> None:
    """Serve the sandbox phone as an adb device until Ctrl-C; then `adb connect` to it."""
    from phoneenv.farm.adbwire import AdbDeviceServer

    try:
        handler = load_virtual_device()
    except LookupError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    try:
        server = AdbDeviceServer(handler, host=host, port=port).start()
    except OSError as exc:
        console.print(f"[red]error:[/red] cannot listen on {host}:{port}: {exc.strerror or exc}")
        raise typer.Exit(1) from None
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
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
        signal.signal(signal.SIGTERM, previous)
        server.stop()
    console.print("stopped", highlight=False)
