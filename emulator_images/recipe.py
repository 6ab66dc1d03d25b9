"""The boot recipe for the AVDs declared here: install the SDK packages, create the AVD, save its fixture.

Run from the repository root (see README.md in this folder)::

    python emulator_images/recipe.py install emulator_images/pixel6-api34.yaml
    python emulator_images/recipe.py create  emulator_images/pixel6-api34.yaml
    python emulator_images/recipe.py fixture emulator_images/pixel6-api34.yaml
    python emulator_images/recipe.py all     emulator_images/pixel6-api34.yaml   # the three in turn

``install`` runs ``sdkmanager --install emulator platform-tools <system image>`` (accepting the
licenses first); ``create`` runs ``avdmanager create avd --force ...`` and writes the spec's RAM,
data-partition and GPU settings into the AVD's ``config.ini``; ``fixture`` cold-boots the AVD
headless, waits for ``sys.boot_completed``, turns animations off, saves the ``fixture`` snapshot
through the console, checks it is listed and shuts the emulator down. ``--dry-run`` prints the
``install``/``create`` commands instead of running them.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from phoneenv.farm.console import ConsoleError
from phoneenv.farm.emulator import (
    AvdSpec,
    EmulatorError,
    EmulatorLauncher,
    PortAllocator,
    avd_dir,
    load_avd_spec,
    load_avd_specs,
    prepare_fixture,
)

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__.split("\n\n")[0])

SpecPath = Annotated[Path, typer.Argument(help="AVD definition (YAML), e.g. emulator_images/pixel6-api34.yaml")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Print the commands instead of running them.")]


@contextlib.contextmanager
def reported() -> Iterator[None]:
    """Turn a library error (bad spec, boot timeout, console KO) into a one-line message and exit 1."""
    try:
        yield
    except (EmulatorError, ConsoleError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def sdk_tool(name: str) -> str:
    """``name`` (sdkmanager, avdmanager) on PATH, else under ``$ANDROID_HOME/cmdline-tools/latest/bin``."""
    found = shutil.which(name)
    if found:
        return found
    for var in ("ANDROID_HOME", "ANDROID_SDK_ROOT"):
        if os.environ.get(var):
            candidate = Path(os.environ[var]) / "cmdline-tools" / "latest" / "bin" / name
            if os.access(candidate, os.X_OK):
                return str(candidate)
    raise typer.BadParameter(
        f"{name} not found on PATH or in $ANDROID_HOME/cmdline-tools/latest/bin; install the Android command-line tools"
    )


def run(cmd: list[str], *, stdin: str | None = None, dry_run: bool) -> None:
    typer.echo(("$ " if not dry_run else "") + shlex.join(cmd))
    if dry_run:
        return
    done = subprocess.run(cmd, input=stdin, text=True, check=False)
    if done.returncode != 0:
        typer.echo(f"{cmd[0]} failed with exit code {done.returncode}", err=True)
        raise typer.Exit(done.returncode)


def do_install(spec: AvdSpec, dry_run: bool) -> None:
    sdkmanager = "sdkmanager" if dry_run else sdk_tool("sdkmanager")
    run([sdkmanager, "--licenses"], stdin="y\n" * 20, dry_run=dry_run)
    run(spec.sdkmanager_command(sdkmanager), dry_run=dry_run)


def do_create(spec: AvdSpec, dry_run: bool) -> None:
    avdmanager = "avdmanager" if dry_run else sdk_tool("avdmanager")
    # avdmanager asks "Do you wish to create a custom hardware profile? [no]".
    run(spec.avdmanager_command(avdmanager), stdin="no\n", dry_run=dry_run)
    if dry_run:
        typer.echo(f"# then set in {avd_dir(spec.name) / 'config.ini'}:")
        for key, value in spec.config_ini().items():
            typer.echo(f"#   {key}={value}")
        return
    path = spec.apply_config()
    typer.echo(f"wrote {', '.join(spec.config_ini())} to {path}")


@app.command("list")
def list_specs(directory: Annotated[Path, typer.Argument()] = Path(__file__).parent) -> None:
    """List the AVD definitions in DIRECTORY (default: this folder)."""
    with reported():
        specs = load_avd_specs(directory)
    for name, spec in specs.items():
        root = "rooted" if spec.rooted else "not rooted"
        typer.echo(f"{name}\t{spec.system_image}\t{spec.device}\t{spec.ram_mib} MiB\t{root}")


@app.command()
def install(spec_path: SpecPath, dry_run: DryRun = False) -> None:
    """Install the emulator, platform-tools and the spec's system image with sdkmanager."""
    with reported():
        do_install(load_avd_spec(spec_path), dry_run)


@app.command()
def create(spec_path: SpecPath, dry_run: DryRun = False) -> None:
    """Create (or replace) the AVD with avdmanager and apply the spec's config.ini settings."""
    with reported():
        do_create(load_avd_spec(spec_path), dry_run)


@app.command()
def fixture(
    spec_path: SpecPath,
    boot_timeout: Annotated[float | None, typer.Option(help="Seconds to wait for boot (default: the spec's).")] = None,
    adb_port: Annotated[
        int | None, typer.Option(help="adb server port (default $ANDROID_ADB_SERVER_PORT or 5037).")
    ] = None,
    first_port: Annotated[int, typer.Option(help="Lowest console port to allocate (even).")] = 5554,
    last_port: Annotated[int, typer.Option(help="Highest console port to allocate (even).")] = 5682,
    log_dir: Annotated[Path | None, typer.Option(help="Where the emulator log goes.")] = None,
) -> None:
    """Cold-boot the AVD, turn animations off, save its fixture snapshot, shut it down."""
    with reported():
        spec = load_avd_spec(spec_path)
        launcher = EmulatorLauncher(
            spec,
            allocator=PortAllocator(first=first_port, last=last_port),
            log_dir=log_dir,
            adb_server=("127.0.0.1", adb_port) if adb_port else None,
        )
        snapshots = prepare_fixture(launcher, boot_timeout=boot_timeout)
    typer.echo(f"{spec.name}: snapshot {spec.fixture_snapshot!r} saved; snapshots: {', '.join(snapshots)}")


@app.command("all")
def all_steps(spec_path: SpecPath, boot_timeout: float | None = None) -> None:
    """install, create and fixture in turn."""
    with reported():
        spec = load_avd_spec(spec_path)
        do_install(spec, dry_run=False)
        do_create(spec, dry_run=False)
        snapshots = prepare_fixture(EmulatorLauncher(spec), boot_timeout=boot_timeout)
    typer.echo(f"{spec.name}: snapshot {spec.fixture_snapshot!r} saved; snapshots: {', '.join(snapshots)}")


if __name__ == "__main__":
    sys.exit(app())
