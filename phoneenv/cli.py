"""The ``phoneenv`` command line: ``eval`` and ``tasks list|show|validate|stats``.

Agents are imported lazily from the ``agents`` package, so ``phoneenv`` never imports it at
module level.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from phoneenv.contract import TaskSpec
from phoneenv.evaluation import EpisodeResult, Scoreboard, run_episodes, score, write_results

app = typer.Typer(help="Gymnasium environments for mobile planner agents.", no_args_is_help=True, add_completion=False)
tasks_app = typer.Typer(help="List, show and validate the task suite.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
console = Console()


def _select(selector: str) -> list[TaskSpec]:
    from phoneenv.tasks import select

    try:
        tasks = select(selector)
    except (KeyError, ValueError) as exc:
        raise typer.BadParameter(str(exc.args[0] if exc.args else exc), param_hint="--tasks") from None
    if not tasks:
        raise typer.BadParameter(f"no task matches {selector!r}", param_hint="--tasks")
    return tasks


def make_client(base_url: str | None, model: str | None, api_key: str | None = None, option: str = "--model") -> Any:
    """A chat client: OpenAI-compatible at ``base_url``, else a local transformers model at the
    path ``model``. Raises ``typer.BadParameter`` when neither is usable."""
    if not model:
        raise typer.BadParameter("a model name (with --base-url) or a local model folder is needed", param_hint=option)
    if base_url:
        from agents.llm.client import OpenAIChatClient

        return OpenAIChatClient(base_url, model, api_key=api_key)
    if not Path(model).is_dir():
        raise typer.BadParameter(
            f"{model!r} is not a local model folder; pass --base-url for a served model", param_hint=option
        )
    from agents.llm.client import LocalChatClient

    return LocalChatClient(model)


def _make_agent(name: str, seed: int, llm: dict[str, Any] | None = None) -> Any:
    from agents import AGENTS

    if name == "llm":
        from agents.planner import LLMPlanner

        opts = llm or {}
        client = make_client(opts.get("base_url"), opts.get("model"), opts.get("api_key"))
        return LLMPlanner(
            client,
            max_steps=opts.get("max_steps", 30),
            max_tokens=opts.get("max_tokens", 512),
            vision=opts.get("vision", False),
        )
    if name not in AGENTS:
        raise typer.BadParameter(
            f"unknown agent {name!r}; choose from {', '.join([*AGENTS, 'llm'])}", param_hint="--agent"
        )
    cls = AGENTS[name]
    return cls(seed=seed) if name == "random" else cls()


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def print_scoreboard(board: Scoreboard) -> None:
    """Print a scoreboard as rich tables."""
    t = Table(title=f"Scoreboard — agent: {board.agent}", title_justify="left")
    t.add_column("Category")
    t.add_column("Episodes", justify="right")
    t.add_column("Success %", justify="right")
    t.add_column("Progress %", justify="right")
    for row in board.categories:
        style = "bold" if row.label == "Overall" else ("dim" if row.episodes == 0 else None)
        t.add_row(
            row.label,
            str(row.episodes) if row.episodes else "empty",
            _pct(row.success),
            _pct(row.progress),
            style=style,
        )
    console.print(t)
    d = Table(title="By domain", title_justify="left")
    d.add_column("Domain")
    d.add_column("Episodes", justify="right")
    d.add_column("Success %", justify="right")
    d.add_column("Progress %", justify="right")
    for row in board.domains:
        d.add_row(row.label, str(row.episodes), _pct(row.success), _pct(row.progress))
    console.print(d)
    console.print(
        f"mean steps {board.mean_steps:.2f} · error rate {100 * board.error_rate:.1f}% of steps · "
        f"infrastructure errors {board.infrastructure_errors} · mean output tokens/task {board.mean_output_tokens:.0f} · "
        f"wall time {board.wall_s:.2f} s"
    )
    if board.cost_per_1000_tasks is not None:
        console.print(
            f"estimated output cost: ${board.cost_per_1000_tasks:.2f} per 1,000 tasks at ${board.price_per_mtok:g} per million output tokens"
        )


def _run(
    agent_name: str,
    tasks: list[TaskSpec],
    out: Path | None,
    seed: int,
    *,
    llm: dict[str, Any] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    price_per_mtok: float | None = None,
) -> Scoreboard:
    agent = _make_agent(agent_name, seed, llm)
    results: list[EpisodeResult] = []
    t0 = time.perf_counter()
    with _progress() as prog:
        bar = prog.add_task(f"{agent_name}", total=len(tasks), status="success 0.0%")

        def tick(r: EpisodeResult) -> None:
            results.append(r)
            prog.update(bar, advance=1, status=f"success {100 * sum(x.success for x in results) / len(results):.1f}%")

        run_episodes(agent, tasks, out / "traces" if out else None, seed=seed, on_episode=tick, env_kwargs=env_kwargs)
    board = score(agent.name, results, time.perf_counter() - t0, price_per_mtok=price_per_mtok)
    if out is not None:
        write_results(out, results, board)
    return board


@app.command("eval")
def eval_cmd(
    agent: Annotated[str, typer.Option(help="Planner: reference, random or llm.")] = "reference",
    tasks: Annotated[
        str,
        typer.Option(help="Task selector: all, category:tool, domain:time, template:NAME, app:NAME, an id or glob."),
    ] = "all",
    out: Annotated[
        Path, typer.Option(help="Output folder: traces/<task>.jsonl, results.jsonl, scoreboard.json.")
    ] = Path("runs/eval"),
    seed: Annotated[int, typer.Option(help="Episode seed (and the random agent's seed).")] = 0,
    backend: Annotated[
        str, typer.Option(help="World: auto (each task's first declared backend), sandbox, llmsim or hybrid.")
    ] = "auto",
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint of the planner model, e.g. http://127.0.0.1:8000/v1.")
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Planner model: a served model name (with --base-url) or a local folder.")
    ] = None,
    api_key: Annotated[str | None, typer.Option(help="API key (default $OPENAI_API_KEY).")] = None,
    max_tokens: Annotated[int, typer.Option(help="Output tokens per model call.")] = 512,
    max_steps: Annotated[int, typer.Option(help="The planner's step budget.")] = 30,
    vision: Annotated[bool, typer.Option(help="Send screenshots to a vision model.")] = False,
    price_per_mtok: Annotated[
        float | None, typer.Option(help="Price per million output tokens, for the cost per 1,000 tasks.")
    ] = None,
    sim_base_url: Annotated[
        str | None, typer.Option(help="Endpoint of the simulator model (llmsim/hybrid); default: the planner's.")
    ] = None,
    sim_model: Annotated[
        str | None, typer.Option(help="Simulator model (llmsim/hybrid); default: the planner's.")
    ] = None,
) -> None:
    """Run a planner over tasks, write one JSONL trace per episode, and print the scoreboard."""
    llm = {
        "base_url": base_url,
        "model": model,
        "api_key": api_key,
        "max_tokens": max_tokens,
        "max_steps": max_steps,
        "vision": vision,
    }
    env_kwargs: dict[str, Any] = {"backend": backend, "screenshots": vision}
    if backend != "sandbox" and (sim_model or model):  # auto may meet simulated tasks
        env_kwargs["simulator"] = make_client(
            sim_base_url or base_url, sim_model or model, api_key, option="--sim-model"
        )
    board = _run(agent, _select(tasks), out, seed, llm=llm, env_kwargs=env_kwargs, price_per_mtok=price_per_mtok)
    print_scoreboard(board)
    console.print(f"traces in {out / 'traces'}")


@tasks_app.command("list")
def tasks_list(selector: Annotated[str, typer.Argument(help="Task selector.")] = "all") -> None:
    """List tasks: id, category, domain, difficulty, apps and goal."""
    sel = _select(selector)
    t = Table(title=f"{len(sel)} tasks")
    for col in ("id", "category", "domain", "diff", "apps", "goal"):
        t.add_column(col, overflow="fold")
    for task in sel:
        t.add_row(task.id, task.category.value, task.domain.value, str(task.difficulty), ",".join(task.apps), task.goal)
    console.print(t)


@tasks_app.command("show")
def tasks_show(task_id: Annotated[str, typer.Argument(help="The task id.")]) -> None:
    """Show one task as JSON (vault passwords shown as ***)."""
    from phoneenv.tasks import get_task

    try:
        task = get_task(task_id)
    except KeyError as exc:
        raise typer.BadParameter(str(exc.args[0]), param_hint="TASK_ID") from None
    console.print_json(task.model_dump_json())


@tasks_app.command("validate")
def tasks_validate(selector: Annotated[str, typer.Argument(help="Task selector.")] = "all") -> None:
    """Prove tasks by execution: reference plan succeeds, empty and perturbed plans fail."""
    from phoneenv.tasks.validate import TaskProof, prove_suite

    sel = _select(selector)
    bad: list[TaskProof] = []
    n_pert = 0
    with _progress() as prog:
        bar = prog.add_task("validate", total=len(sel), status="")

        def tick(p: TaskProof) -> None:
            nonlocal n_pert
            n_pert += p.perturbations
            if not p.ok:
                bad.append(p)
            prog.update(bar, advance=1, status=f"{len(bad)} broken")

        prove_suite(sel, tick)
    for p in bad:
        console.print(f"[red]BROKEN[/red] {p.task_id}")
        for problem in p.problems:
            console.print(f"    {problem}")
    console.print(f"{len(sel) - len(bad)}/{len(sel)} tasks proven ({n_pert} perturbed plans run)")
    if bad:
        raise typer.Exit(code=1)


@tasks_app.command("stats")
def tasks_stats(selector: Annotated[str, typer.Argument(help="Task selector.")] = "all") -> None:
    """Counts of tasks by category, domain, app and template; share of cross-app tasks."""
    from collections import Counter

    sel = _select(selector)
    stats = {
        "tasks": len(sel),
        "templates": len({t.template for t in sel}),
        "cross_app": sum(t.cross_app for t in sel),
        "by_category": dict(Counter(t.category.value for t in sel)),
        "by_domain": dict(Counter(t.domain.value for t in sel)),
        "by_app": dict(Counter(a for t in sel for a in t.apps)),
    }
    console.print_json(json.dumps(stats))


if __name__ == "__main__":  # pragma: no cover
    app()
