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
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]{exc}[/red]", markup=True, highlight=False)
        raise typer.Exit(2) from None
    console.print(f"report: {path}")
    if serve:
        _serve(path.resolve(), port)
