"""``phoneenv view RUN_DIR`` (a static HTML report of a run) and ``phoneenv compare RUN_A RUN_B``.

Both read what ``phoneenv eval`` wrote (see :mod:`phoneenv.view`); the report needs the ``view``
extra (matplotlib) for its plots.
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

console = Console()


def _serve(path: Path, port: int) -> None:
    """Serve ``path``'s folder on 127.0.0.1:``port`` (0: a free port) until Ctrl-C."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(path.parent))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/{path.name}"
        console.print(f"serving {url} (Ctrl-C to stop)")
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            thread.join()
        except KeyboardInterrupt:
            pass
        finally:
            server.shutdown()


def view_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `phoneenv eval` (or a trainer's output).")],
    out: Annotated[Path | None, typer.Option(help="Where the HTML goes; default RUN_DIR/report.html.")] = None,
    screens: Annotated[
        str,
        typer.Option(
            help="Screens of replayed sandbox episodes: captures (each screen.capture and the end screen), "
            "all (after every step) or none."
        ),
    ] = "captures",
    serve: Annotated[bool, typer.Option(help="Serve the report on 127.0.0.1 after writing it.")] = False,
    port: Annotated[int, typer.Option(help="Port for --serve (0: a free one).", min=0, max=65535)] = 0,
) -> None:
    """Write a static, self-contained HTML report of a run: scoreboard, plots, and every episode's
    steps, screens, verdict and state diff, with filters. Needs no server to open."""
    from phoneenv.view import write_report

    if screens not in ("captures", "all", "none"):
        raise typer.BadParameter(f"{screens!r}: use captures, all or none", param_hint="--screens")
    try:
        path = write_report(run_dir, out, screens=screens)  # type: ignore[arg-type]
    except (OSError, ValueError) as exc:  # a missing, unreadable or damaged run file: one line
        console.print(f"[red]{escape(str(exc))}[/red]", markup=True, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    console.print(f"report: {path}")
    if serve:
        _serve(path.resolve(), port)


def _fmt_delta(x: float | int | None, pct: bool = False) -> str:
    if x is None:
        return "—"
    if pct:
        return f"{100 * x:+.1f}"
    return f"{x:+d}" if isinstance(x, int) else f"{x:+.3g}"


def compare_cmd(
    run_a: Annotated[Path, typer.Argument(help="The first run folder (A).")],
    run_b: Annotated[Path, typer.Argument(help="The second run folder (B).")],
    html: Annotated[Path | None, typer.Option(help="Also write the comparison as an HTML page here.")] = None,
    all_tasks: Annotated[bool, typer.Option("--all", help="List every task, not only those that differ.")] = False,
) -> None:
    """Compare two runs task by task: success flips (fixed, broken), and the change of progress,
    output tokens and tool calls, paired by (task, seed)."""
    from rich.table import Table
    from rich.text import Text

    from phoneenv.view import compare_runs, render_compare_html

    try:
        cmp = compare_runs(run_a, run_b)
    except (OSError, ValueError) as exc:  # a missing, unreadable or damaged run file: one line
        console.print(Text(str(exc), style="red"), soft_wrap=True)
        raise typer.Exit(2) from None
    summ = cmp.summary()
    head = Table(title="Means over the paired episodes (infrastructure errors left out)")
    head.add_column("Run")
    for col in ("Agent", "Episodes", "Success %", "Progress %", "Out tokens", "Tool calls"):
        head.add_column(col, justify="left" if col == "Agent" else "right")
    for side, run in (("A", cmp.a), ("B", cmp.b)):
        s = summ[side]

        def fmt(v: float | int | None, scale: float = 1.0) -> str:
            return "—" if v is None else f"{scale * v:.1f}"

        head.add_row(
            side,
            Text(run.agent),
            str(s["episodes"]),
            fmt(s["success"], 100),
            fmt(s["progress"], 100),
            fmt(s["output_tokens"]),
            fmt(s["tool_calls"]),
        )
    console.print(Text(f"A: {cmp.a.path}\nB: {cmp.b.path}"))
    console.print(head)
    console.print(Text(" · ".join(f"{k} {v}" for k, v in cmp.counts().items())))
    order = {"broken": 0, "fixed": 1, "infrastructure": 2, "only in A": 3, "only in B": 4, "same": 5}
    shown = sorted((p for p in cmp.pairs if all_tasks or p.differs), key=lambda p: order[p.change])
    if shown:
        table = Table(title="Per task" if all_tasks else "Tasks that differ")
        table.add_column("Task", overflow="fold", min_width=12)
        for col in ("Seed", "Change", "Progress % A→B", "Δ progress", "Δ out tokens", "Δ calls"):
            table.add_column(col, justify="left" if col == "Change" else "right")
        styles = {"fixed": "green", "broken": "red"}
        for p in shown:
            table.add_row(
                Text(p.task_id),
                str(p.seed),
                Text(p.change, style=styles.get(p.change, "")),
                f"{_fmt_delta(None) if p.a is None else f'{100 * p.a.progress:.1f}'} → "
                f"{_fmt_delta(None) if p.b is None else f'{100 * p.b.progress:.1f}'}",
                _fmt_delta(p.progress_delta, pct=True),
                _fmt_delta(p.tokens_delta),
                _fmt_delta(p.calls_delta),
            )
        console.print(table)
    else:
        console.print("no task differs")
    if html is not None:
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(render_compare_html(cmp), encoding="utf-8")
        console.print(f"comparison: {html}")
