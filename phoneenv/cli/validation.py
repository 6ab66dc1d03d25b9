"""``phoneenv validate-devices``: the validation batch of :mod:`phoneenv.validation` from the
command line (mounted by ``phoneenv.cli``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

__all__ = ["validate_devices_cmd"]

console = Console()


def validate_devices_cmd(
    serial: Annotated[
        list[str],
        typer.Option("--serial", metavar="SERIAL", help="A device's adb serial (repeat for several devices)."),
    ],
    out: Annotated[Path, typer.Option(help="Output folder: report.json, report.md, traces/.")],
    tasks: Annotated[
        str, typer.Option(help="Task selector (as for eval); tasks the devices cannot run are skipped.")
    ] = "all",
    traces: Annotated[
        Path | None, typer.Option(help="An eval run's folder: its traces' actions are replayed on both sides too.")
    ] = None,
    reruns: Annotated[int, typer.Option(min=0, help="Re-runs of an episode that differs (flakiness check).")] = 1,
    adb_host: Annotated[str, typer.Option(help="The adb server's address.")] = "127.0.0.1",
    adb_port: Annotated[int, typer.Option(min=1, max=65535, help="The adb server's port.")] = 5037,
    timeout_s: Annotated[float, typer.Option(min=0.1, help="Seconds one adb round trip may take.")] = 30.0,
    time_tolerance_s: Annotated[
        float, typer.Option(min=0.0, help="Seconds two date-times may differ and still agree.")
    ] = 60.0,
    set_clock: Annotated[
        bool, typer.Option(help="Set each device's clock and timezone to the fixture's (needs adb root).")
    ] = True,
    seed: Annotated[int, typer.Option(min=0, help="Episode seed on both sides.")] = 0,
) -> None:
    """Run each task's reference plan (and --traces replayed) on the devices and on the sandbox, and
    report where they differ. Exit status: 0 when every episode agreed, 1 when any differed."""
    from phoneenv.tasks import select
    from phoneenv.validation import validate_devices

    try:
        selected = select(tasks)
    except (KeyError, ValueError) as exc:
        raise typer.BadParameter(str(exc.args[0] if exc.args else exc), param_hint="--tasks") from None
    if not selected:
        raise typer.BadParameter(f"no task matches {tasks!r}", param_hint="--tasks")
    if len(set(serial)) != len(serial):
        raise typer.BadParameter(f"a serial is given twice: {serial}", param_hint="--serial")
    if traces is not None and not traces.is_dir():
        raise typer.BadParameter(f"{traces} is not a folder", param_hint="--traces")

    from phoneenv.cli.common import progress

    with progress() as prog:
        bar = prog.add_task("validate-devices", total=None, status="")
        started = 0

        def total(n: int) -> None:
            prog.update(bar, total=n)

        def tick(side: str, task_id: str, source: str, run: int) -> None:
            nonlocal started
            if run:  # a re-run of a differing episode: one more than planned
                prog.update(bar, total=(prog.tasks[0].total or 0) + 1)
            if started:
                prog.advance(bar)  # the episode before this one is done
            started += 1
            again = f" (re-run {run})" if run else ""
            prog.update(bar, status=f"{side} {task_id} {source}{again}")

        report = validate_devices(
            selected,
            serial,
            out,
            adb_host=adb_host,
            adb_port=adb_port,
            traces=traces,
            reruns=reruns,
            seed=seed,
            time_tolerance_s=time_tolerance_s,
            timeout_s=timeout_s,
            set_device_clock=set_clock,
            on_episode=tick,
            on_total=total,
        )
        if started:
            prog.advance(bar)
        prog.update(bar, status="done")
    left_out = report["tasks"].get("traces_skipped") or []
    if left_out:  # damaged or foreign trace files are read around, and said
        shown = "; ".join(left_out[:3]) + ("; ..." if len(left_out) > 3 else "")
        console.print(
            f"[yellow]warning:[/yellow] {len(left_out)} trace files of {escape(str(traces))} left out: "
            f"{escape(shown)} (all in {escape(str(out / 'report.md'))})",
            soft_wrap=True,
        )
    a = report["agreement"]
    for level in ("episodes", "criteria", "steps"):
        r = a[level]
        rate = "-" if r["rate"] is None else f"{100 * r['rate']:.1f}%"
        console.print(f"{level}: {rate} agree ({r['agreed']}/{r['compared']})")
    classes = ", ".join(f"{k} {v}" for k, v in report["classes"].items())
    console.print(f"differences: {len(report['differences'])} ({classes}); report: {out / 'report.md'}")
    if report["differences"]:
        raise typer.Exit(1)
