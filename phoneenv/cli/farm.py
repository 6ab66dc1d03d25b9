"""``phoneenv farm up|down|status|restart``: a farm of virtual-device workers on one machine.

    phoneenv farm up --workers 4 --out farm.json        # Docker containers (--local: processes)
    phoneenv eval --farm farm.json ...                   # episodes lease the farm's devices
    phoneenv farm down farm.json

Mounted by ``phoneenv.cli`` as the ``farm`` sub-command. Only typer is imported here; the
workers (:mod:`phoneenv.farm.workers`) load when a command runs.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

farm_app = typer.Typer(
    help="Stand up, inspect and stop a farm of virtual-device workers (Docker containers or local processes).",
    no_args_is_help=True,
)
console = Console()


def _errors() -> tuple[type[BaseException], ...]:
    from pydantic import ValidationError

    from phoneenv.farm.workers import WorkerError

    return (WorkerError, OSError, ValueError, KeyError, ValidationError)


def _fail(exc: BaseException | str) -> None:
    """One error line; exit code 2 for a farm file that is missing or is no farm file (a usage
    problem: the file names what to fix), 1 for what the workers or devices did."""
    from phoneenv.farm.pool import FarmFileError

    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    console.print(f"[red]error:[/red] {escape(str(message))}", highlight=False)
    raise typer.Exit(2 if isinstance(exc, FarmFileError) else 1)


@farm_app.command("up")
def up(
    out: Annotated[Path, typer.Option(help="The farm file to write (JSON; read by eval --farm and the pool).")],
    workers: Annotated[int, typer.Option(min=1, help="Number of virtual-device workers.")] = 2,
    docker: Annotated[
        bool,
        typer.Option(
            "--docker/--local",
            help="Workers as Docker containers of --image (default), or as local `phoneenv device serve` processes.",
        ),
    ] = True,
    image: Annotated[
        str, typer.Option(help="Worker image (build it from docker/virtual-device.Dockerfile).")
    ] = "phoneenv-virtual-device",
    adb_host: Annotated[str, typer.Option(help="The adb server the devices are connected to.")] = "127.0.0.1",
    adb_port: Annotated[
        int, typer.Option(min=1, max=65535, help="Its port (a server is started on loopback when none answers).")
    ] = 5037,
    bind: Annotated[str, typer.Option(help="Address the workers' adb endpoints listen on.")] = "127.0.0.1",
    name_prefix: Annotated[
        str, typer.Option(help="Containers are named PREFIX-1 ... PREFIX-N (--docker).")
    ] = "phoneenv-worker",
    timeout: Annotated[float, typer.Option(min=1.0, help="Seconds to wait for each worker to become healthy.")] = 120.0,
) -> None:
    """Start N workers, wait until each is healthy, `adb connect` each, and write the farm file."""
    from phoneenv.extras import require

    require("farm", "adbutils", "psutil", feature="phoneenv farm up")  # before any worker starts
    from phoneenv.farm.workers import farm_up

    try:
        farm = farm_up(
            workers,
            out,
            runtime="docker" if docker else "local",
            image=image,
            adb_host=adb_host,
            adb_port=adb_port,
            bind_host=bind,
            name_prefix=name_prefix,
            timeout_s=timeout,
            log=lambda msg: console.print(msg, highlight=False),
        )
    except (*_errors(), FileExistsError) as exc:
        _fail(exc)
    console.print(f"{len(farm.devices)} devices ready; farm file {out}", highlight=False)


def _existing(farm: Path) -> None:
    """Exit with code 2 and a clear message when the farm file is missing."""
    from phoneenv.farm.pool import FarmFileError

    if not farm.exists():
        _fail(
            FarmFileError(
                f"there is no farm file {farm} (already `phoneenv farm down`? `phoneenv farm up --out {farm}` "
                "writes one)"
            )
        )


@farm_app.command("down")
def down(
    farm: Annotated[Path, typer.Argument(help="The farm file written by `farm up`.")],
    keep_file: Annotated[bool, typer.Option(help="Keep the farm file.")] = False,
    keep_adb_server: Annotated[
        bool, typer.Option(help="Leave running the adb server that `farm up` started (other tools may share it).")
    ] = False,
) -> None:
    """Disconnect and stop every worker of the farm (containers removed, processes ended), and the
    adb server when `farm up` started it."""
    from phoneenv.farm.workers import farm_down

    _existing(farm)
    try:
        stopped = farm_down(
            farm,
            remove_file=not keep_file,
            keep_adb_server=keep_adb_server,
            log=lambda msg: console.print(msg, highlight=False),
        )
    except _errors() as exc:
        _fail(exc)
    console.print(f"stopped {len(stopped)} workers: {', '.join(stopped) or '-'}", highlight=False)


@farm_app.command("status")
def status(
    farm: Annotated[Path, typer.Argument(help="The farm file written by `farm up`.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON list on stdout instead of a table.")] = False,
) -> None:
    """Each device's adb state, its worker's state and its answer to the adb handshake.
    Exit code 1 when some device is not in the adb state `device`."""
    from phoneenv.farm.workers import farm_status

    _existing(farm)
    try:
        devices = farm_status(farm)
    except _errors() as exc:
        _fail(exc)
    if as_json:
        typer.echo(json.dumps([{**asdict(d), "ready": d.ready} for d in devices]))
    else:
        table = Table("serial", "kind", "adb", "worker", "handshake")
        for d in devices:
            colour = "green" if d.ready else "red"
            table.add_row(d.serial, d.kind, f"[{colour}]{d.adb or 'not listed'}[/{colour}]", d.worker, d.ping)
        console.print(table)
    if not all(d.ready for d in devices):
        raise typer.Exit(1)


@farm_app.command("restart")
def restart(
    farm: Annotated[Path, typer.Argument(help="The farm file written by `farm up`.")],
    serial: Annotated[str, typer.Argument(help="The device whose worker to restart.")],
    timeout: Annotated[float, typer.Option(min=1.0, help="Seconds to wait for it to answer again.")] = 120.0,
) -> None:
    """Restart one worker on its port, wait until it answers and reconnect it (the pool's last
    recovery step; the farm file's `restart` argv)."""
    from phoneenv.farm.workers import restart_worker

    _existing(farm)
    try:
        restart_worker(farm, serial, timeout_s=timeout)
    except _errors() as exc:
        _fail(exc)
    console.print(f"restarted {serial}", highlight=False)
