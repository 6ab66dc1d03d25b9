"""``phoneenv traces export RUN_DIR --to DIR``: an eval run's traces as a Hugging Face dataset folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

traces_app = typer.Typer(help="Work with the traces of eval runs.", no_args_is_help=True)
console = Console()


@traces_app.command("export")
def export_cmd(
    run_dir: Annotated[Path, typer.Argument(help="An eval output folder (its traces/), a folder of traces or a file.")],
    to: Annotated[Path, typer.Option("--to", help="The dataset folder to write (empty or new).")],
    sft: Annotated[bool, typer.Option(help="Also write the sft config (chat examples of the episodes).")] = True,
    include_failed: Annotated[
        bool, typer.Option(help="Keep failed episodes in the sft config (their error turns have weight 0).")
    ] = False,
    overwrite: Annotated[bool, typer.Option(help="Replace an export already in --to.")] = False,
) -> None:
    """Write RUN_DIR's traces as a dataset folder that `datasets.load_dataset(DIR)` loads.

    Configs: episodes (the default; one row per episode), steps (one row per step) and sft (chat
    examples). Values whose shape varies (arguments, feedback, verdict, the whole trace) are JSON
    strings. Needs the 'data' extra."""
    from phoneenv.export import export_run
    from phoneenv.extras import MissingExtra

    try:
        report = export_run(run_dir, to, sft=sft, include_failed=include_failed, overwrite=overwrite)
    except MissingExtra as exc:
        console.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(code=1) from None
    except (OSError, ValueError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)  # paths stay whole
        raise typer.Exit(code=2) from None
    sft_text = f", {report.sft} SFT examples" if report.sft is not None else ", no SFT example (no successful episode)"
    console.print(
        f"wrote {report.episodes} episodes ({report.steps} steps{sft_text}) from {report.files} trace files to "
        f"{report.out}; load with datasets.load_dataset({str(report.out)!r})",
        highlight=False,
    )
