"""``phoneenv mcp ...``: serve a live episode to any MCP client (:mod:`phoneenv.mcp_server`).

Mounted by ``phoneenv.cli`` as the ``mcp`` sub-command. Only typer is imported here; the MCP SDK
(the ``mcp`` extra) loads when a command runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

mcp_app = typer.Typer(help="Serve phoneenv episodes over the Model Context Protocol.", no_args_is_help=True)


def _fail(message: str, code: int = 1) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@mcp_app.command("serve")
def serve(
    task: Annotated[str, typer.Option(help="The task id to serve (see `phoneenv tasks list`).")],
    backend: Annotated[str, typer.Option(help="sandbox, llmsim or hybrid.")] = "sandbox",
    transport: Annotated[str, typer.Option(help="stdio (the client starts this command) or http.")] = "stdio",
    host: Annotated[str, typer.Option(help="Address for --transport http; keep loopback unless you mean it.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port for --transport http (0: a free one).")] = 8765,
    names: Annotated[
        str, typer.Option(help="Tool names: underscore (clock__set_alarm, what model APIs accept) or dotted.")
    ] = "underscore",
    seed: Annotated[int, typer.Option(min=0, help="Seed of the first episode.")] = 0,
    max_steps: Annotated[int | None, typer.Option(min=1, help="Truncate after this many calls.")] = None,
    trace: Annotated[
        Path | None, typer.Option(help="Write the episode's trace (JSON) here whenever an episode ends.")
    ] = None,
    tools: Annotated[
        str,
        typer.Option(
            help="Tools offered: task (the task's apps and the phone's own, plus the harness tools; at most 73 "
            "tools in the suite), retrieve (the 20 most relevant), search (the same plus tools__search) or all "
            "(every tool: more than OpenAI's API accepts)."
        ),
    ] = "task",
    screenshots: Annotated[
        bool, typer.Option("--screenshots", help="Return the screen after every call as an image block.")
    ] = False,
) -> None:
    """Serve one live episode of TASK: its tools as MCP tools, the screen and the verdict as
    resources; `finish` ends the episode and returns the verdict, `episode__reset` starts over.

    With --transport http the URL is printed on stderr once the server listens.
    """
    if transport not in ("stdio", "http"):
        _fail(f"--transport must be stdio or http, not {transport!r}")
    if names not in ("underscore", "dotted"):
        _fail(f"--names must be underscore or dotted, not {names!r}")
    from phoneenv.harness.toolselect import MODES

    if tools not in MODES:
        _fail(f"--tools must be one of {', '.join(MODES)}, not {tools!r}")
    from phoneenv.mcp_server import EpisodeServer, require_mcp, serve_http, serve_stdio

    try:
        require_mcp("phoneenv mcp serve")
    except ImportError as exc:  # one line naming the install command
        _fail(str(exc))
    style: Literal["underscore", "dotted"] = "dotted" if names == "dotted" else "underscore"
    try:
        server = EpisodeServer.for_task(
            task,
            backend=backend,
            max_steps=max_steps,
            tools=tools,
            screenshots=screenshots,
            names=style,
            seed=seed,
            trace_path=trace,
        )
    except (KeyError, ValueError) as exc:
        _fail(str(exc.args[0]) if exc.args else str(exc))
    if transport == "stdio":
        serve_stdio(server)
        return

    def ready(url: str) -> None:
        print(f"phoneenv mcp: serving {task} at {url}", file=sys.stderr, flush=True)

    try:
        serve_http(server, host, port, ready=ready)
    except OSError as exc:
        _fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


@mcp_app.command("tools")
def tools(
    app: Annotated[str, typer.Option(help="The app name the server's tools are offered under (e.g. checklist).")],
    command: Annotated[
        str | None, typer.Option(help='A stdio server\'s command line, e.g. "python checklist_server.py".')
    ] = None,
    url: Annotated[
        str | None, typer.Option(help="A streamable-HTTP server's URL, e.g. http://127.0.0.1:8000/mcp.")
    ] = None,
    domain: Annotated[str, typer.Option(help="The domain of its tools.")] = "device",
    record: Annotated[
        Path | None, typer.Option(help="Record the tool list into this replay cache (JSON), for mode='replay'.")
    ] = None,
) -> None:
    """List an MCP server's tools as an episode offers them (name, effect, arguments); with
    --record, write the list into a replay cache."""
    import shlex

    from rich.console import Console
    from rich.table import Table

    from phoneenv.mcp_server import require_mcp

    try:
        require_mcp("phoneenv mcp tools")
    except ImportError as exc:
        _fail(str(exc))
    from pydantic import ValidationError

    from phoneenv.backends.mcp_client import McpClientBackend, McpServer

    try:
        server = McpServer(app=app, command=shlex.split(command) if command else None, url=url, domain=domain)  # type: ignore[arg-type]
    except ValidationError as exc:
        _fail("; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors()))
    from phoneenv.backends.mcp_client import ReplayCacheError

    try:
        backend = McpClientBackend([server], cache=record, mode="record" if record else "live")
    except ReplayCacheError as exc:  # --record names a file that is no replay cache: a usage problem
        _fail(str(exc), code=2)
    except (ConnectionError, ValueError) as exc:
        _fail(str(exc))
    try:
        table = Table("tool", "MCP name", "effect", "arguments (* required)")
        for entry in backend.entries.values():
            params = entry.spec.parameters
            required = set(params.get("required") or [])
            args = ", ".join(f"{k}{'*' if k in required else ''}" for k in params.get("properties") or {})
            table.add_row(entry.spec.name, entry.mcp_name, entry.spec.effect.value, args)
        Console().print(table)
        if record is not None:
            typer.echo(f"recorded the tool list of {app!r} in {record}", err=True)
    finally:
        backend.close()
