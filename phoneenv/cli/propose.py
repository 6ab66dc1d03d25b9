"""``phoneenv tasks propose``: a model drafts tasks for a capability gap; each is checked by
execution and filed (see :mod:`phoneenv.loop.propose`).

phoneenv tasks propose --gap capability:time --n 4 --model M --base-url URL
phoneenv tasks propose --gap cluster:runs/loop/rounds/1/cluster-c1.json --model M --base-url URL \\
    --solver-model BIG --solver-base-url URL2 --attempts 5
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["propose_cmd"]

console = Console()


def propose_cmd(
    gap: Annotated[
        str,
        typer.Option(
            help="What the tasks are for: capability:TAG, domain:NAME, or cluster:FILE (a cluster-<id>.json "
            "of `phoneenv evolve round`); a bare tag or domain works too."
        ),
    ],
    model: Annotated[
        str, typer.Option(help="The model that drafts the tasks: a name served at --base-url, or a local folder.")
    ],
    n: Annotated[int, typer.Option("--n", min=1, max=50, help="How many drafts to ask for.")] = 4,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint of --model.")] = None,
    api_key: Annotated[str | None, typer.Option(help="API key (default $OPENAI_API_KEY).")] = None,
    solver_model: Annotated[
        str | None,
        typer.Option(help="The planner's model that must solve each draft (default --model; 'none': nobody tries)."),
    ] = None,
    solver_base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint of --solver-model (default --base-url).")
    ] = None,
    tools: Annotated[
        str, typer.Option(help="The solver's tool filter: apps (the task's apps), task, all, or a list.")
    ] = "apps",
    attempts: Annotated[int, typer.Option(min=1, help="Episodes the solver gets per draft (K).")] = 3,
    random_plans: Annotated[int, typer.Option(min=0, help="Random plans that must all fail per draft.")] = 5,
    review_all: Annotated[
        bool, typer.Option("--review-all", help="Queue every checked task for review, proven ones too.")
    ] = False,
    threshold: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Cosine similarity (MiniLM) from which a goal is a duplicate.")
    ] = 0.92,
    max_tokens: Annotated[int, typer.Option(min=64, help="Output tokens for the drafting reply.")] = 4096,
    loop: Annotated[
        Path | None, typer.Option("--loop", help="The loop directory (default $PHONEENV_LOOP_DIR, else runs/loop).")
    ] = None,
) -> None:
    """Draft tasks for a gap and check each by execution: valid against the contract and the
    apps' schemas, not a near-duplicate, criteria false at the start and after random plans, and
    solved by a planner in one of K attempts. Solved tasks go into <loop>/tasks.jsonl (and the
    suite: `--tasks source:generated`); unsolved ones wait for review (`phoneenv review list`)."""
    from agents.factory import make_client
    from agents.planner import LLMPlanner
    from agents.toolfilter import parse_tool_filter
    from phoneenv.cli.errors import usage_errors
    from phoneenv.llm import InfrastructureError
    from phoneenv.loop import loop_dir
    from phoneenv.loop.propose import Outcome, parse_gap, propose

    try:
        parsed = parse_gap(gap)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--gap") from None
    try:
        parse_tool_filter(tools)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tools") from None
    try:
        with usage_errors():
            client = make_client(base_url, model, api_key)
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(f"cannot load the model: {exc}", param_hint="--model") from None
    solver: Any = None
    solver_name = None
    if (solver_model or "").lower() != "none":
        if solver_model is None or (solver_model == model and (solver_base_url or base_url) == base_url):
            solver_client, solver_name = client, model
        else:
            solver_name = solver_model
            try:
                with usage_errors():
                    solver_client = make_client(solver_base_url or base_url, solver_model, api_key, "--solver-model")
            except (OSError, ValueError) as exc:
                raise typer.BadParameter(f"cannot load the model: {exc}", param_hint="--solver-model") from None

        def solver() -> Any:
            return LLMPlanner(solver_client, tool_filter=tools)

    table = Table(title=f"Drafts for {escape(parsed.spec)} by {escape(model)}")
    for col in ("#", "status", "task", "goal", "why"):
        table.add_column(col, overflow="fold")
    colour = {"accepted": "green", "unproven": "yellow", "rejected": "red"}

    def show(o: Outcome) -> None:
        why = "; ".join(o.problems) or "solved, tight criteria"
        if o.review_id is not None:
            why += f" (review item #{o.review_id})"
        goal = o.task.goal if o.task else str((o.draft or {}).get("goal", "") if isinstance(o.draft, dict) else "")
        table.add_row(
            str(o.index),
            f"[{colour[o.status]}]{o.status}[/]",
            escape(o.task.id if o.task else "-"),
            escape(goal[:120]),
            escape(why),
        )

    try:
        with console.status("drafting and checking tasks"):
            outcomes = propose(
                parsed, client, n=n, loop=loop, solver=solver, solver_name=solver_name, attempts=attempts,
                random_plans=random_plans, review_all=review_all, threshold=threshold, max_tokens=max_tokens,
                on_outcome=show,
            )  # fmt: skip
    except InfrastructureError as exc:
        console.print(f"[red]error:[/red] the model server failed ({exc.kind}): {escape(str(exc))}; nothing was filed")
        raise typer.Exit(code=2) from None
    folder = loop_dir(loop)
    if not outcomes:
        console.print(
            f"[red]error:[/red] the model's reply held no JSON task (twice); it is logged in {folder / 'proposals.jsonl'}"
        )
        raise typer.Exit(code=1)
    console.print(table)
    counts = {s: sum(o.status == s for o in outcomes) for s in colour}
    console.print(
        f"{counts['accepted']} accepted into {folder / 'tasks.jsonl'}, {counts['unproven']} waiting for review, "
        f"{counts['rejected']} rejected (every draft is logged in {folder / 'proposals.jsonl'})",
        highlight=False,
    )
