"""``phoneenv tasks list|show|validate|stats`` (``propose``: :mod:`phoneenv.cli.propose`)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from phoneenv.cli.common import console, progress, select_tasks
from phoneenv.contract import TaskSpec

tasks_app = typer.Typer(
    help="List, show and validate the task suite; propose new tasks for a gap.", no_args_is_help=True
)

_TASKS_TABLE_MIN_WIDTH = 140  # narrower terminals get _task_lines (the table's goal column would be a sliver)


def _task_lines(tasks: list[TaskSpec], width: int) -> list[str]:
    """``tasks list`` for a terminal ``width`` columns wide: a count, a header, then per task one
    line with the id (whole), category, domain, difficulty, backends and apps, and the goal
    wrapped below it, indented. Apps that do not fit the line go on indented lines of their own;
    when even the columns do not fit, every field after the id does. No line is longer than
    ``width`` (unless an id alone is)."""
    import functools
    import textwrap
    from collections.abc import Sequence

    heads = ("id", "category", "domain", "diff", "backends")
    rows = [
        (t.id, t.category.value, t.domain.value, str(t.difficulty), ",".join(t.backends), ",".join(t.apps), t.goal)
        for t in tasks
    ]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(heads)]

    def cells(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True))

    wrap = functools.partial(textwrap.wrap, width=width, break_on_hyphens=False, break_long_words=False)
    if len(cells(heads).rstrip()) > width:  # too narrow for columns: the fields after the id, wrapped
        out = [f"{len(tasks)} tasks", "id", "  category · domain · difficulty · backends · apps", "  goal"]
        for task_id, category, domain, diff, backends, apps, goal in rows:
            out.append(task_id)
            fields = f"{category} · {domain} · difficulty {diff} · {backends} · apps: {apps.replace(',', ', ')}"
            out += wrap(fields, initial_indent="  ", subsequent_indent="    ")
            out += wrap(goal, initial_indent="  ", subsequent_indent="  ")
        return out
    header = cells(heads) + "  apps"
    out = [f"{len(tasks)} tasks", header if len(header) <= width else cells(heads).rstrip(), "  goal"]
    for *head, apps, goal in rows:
        line = cells(tuple(head))
        if len(line) + 2 + len(apps) <= width:
            out.append(f"{line}  {apps}".rstrip())
        else:
            out.append(line.rstrip())
            out += wrap("apps: " + apps.replace(",", ", "), initial_indent="  ", subsequent_indent="    ")
        out += wrap(goal, initial_indent="  ", subsequent_indent="  ")
    return out


@tasks_app.command("list")
def tasks_list(
    selector: Annotated[str, typer.Argument(help="Task selector.")] = "all",
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line, for scripts.")] = False,
) -> None:
    """List tasks: id, category, domain, difficulty, apps, backends and goal."""
    sel = select_tasks(selector, "SELECTOR")
    if as_json:
        for task in sel:
            row = {
                "id": task.id,
                "category": task.category.value,
                "domain": task.domain.value,
                "difficulty": task.difficulty,
            }
            row.update(apps=task.apps, backends=task.backends, goal=task.goal)
            typer.echo(json.dumps(row))
        return
    if console.width < _TASKS_TABLE_MIN_WIDTH:
        for line in _task_lines(sel, console.width):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        return
    t = Table(title=f"{len(sel)} tasks")
    t.add_column("id", no_wrap=True)  # ids are copied from here: never fold them
    for col in ("category", "domain", "diff", "apps", "backends", "goal"):
        t.add_column(col, overflow="fold")
    for task in sel:
        t.add_row(
            task.id,
            task.category.value,
            task.domain.value,
            str(task.difficulty),
            ",".join(task.apps),
            ",".join(task.backends),
            task.goal,
        )
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
    """Prove tasks by execution: reference plan succeeds, empty and perturbed plans fail, and
    every verdict probe gets the verdict it declares (a table of probes per template)."""
    from rich.table import Table

    from phoneenv.tasks.validate import TaskProof, prove_suite

    sel = select_tasks(selector, "SELECTOR")
    by_id = {t.id: t for t in sel}
    bad: list[TaskProof] = []
    n_pert = 0
    # template -> [tasks, must-pass probes, accepted, must-fail probes, rejected]
    rows: dict[str, list[int]] = {}
    claims: dict[str, dict[str, int]] = {}  # generated claim probes per type
    with progress() as prog:
        bar = prog.add_task("validate", total=len(sel), status="")

        def tick(p: TaskProof) -> None:
            nonlocal n_pert
            n_pert += p.perturbations
            if not p.ok:
                bad.append(p)
            task = by_id[p.task_id]
            row = rows.setdefault(task.template or task.source, [0, 0, 0, 0, 0])
            row[0] += 1
            for kind, counts in p.claims.items():
                mine = claims.setdefault(kind, {})
                for k, v in counts.items():
                    mine[k] = mine.get(k, 0) + v
            failed = " ".join(p.problems)
            for probe in task.probes:
                ok = f"probe {probe.name!r}" not in failed
                k = 1 if probe.expect == "pass" else 3
                row[k] += 1
                row[k + 1] += ok
            prog.update(bar, advance=1, status=f"{len(bad)} broken")

        prove_suite(sel, tick)
    table = Table(title="Verdict probes by template")
    table.add_column("template", no_wrap=True)
    for col in ("tasks", "per task", "must pass", "passed", "must fail", "failed"):
        table.add_column(col, justify="right")
    totals = [0, 0, 0, 0, 0]
    for name, row in sorted(rows.items()):
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        table.add_row(name, str(row[0]), f"{(row[1] + row[3]) / row[0]:.1f}", *(str(x) for x in row[1:]))
    table.add_row("all", str(totals[0]), f"{(totals[1] + totals[3]) / max(totals[0], 1):.1f}", *map(str, totals[1:]))
    console.print(table)
    console.print(_claim_table(claims))
    for p in bad:
        console.print(f"[red]BROKEN[/red] {p.task_id}")
        for problem in p.problems:
            console.print(f"    {problem}")
    console.print(
        f"{len(sel) - len(bad)}/{len(sel)} tasks proven ({n_pert} perturbed plans run; "
        f"{totals[2]}/{totals[1]} must-pass probes accepted, {totals[4]}/{totals[3]} must-fail probes rejected)"
    )
    if bad:
        raise typer.Exit(code=1)


def _claim_table(claims: dict[str, dict[str, int]]) -> Any:
    """The table of generated claim probes per type (:mod:`phoneenv.tasks.claim_probes`)."""
    from rich.table import Table

    from phoneenv.tasks.claim_probes import CLAIM_PROBE_TYPES

    table = Table(title="Generated claim probes by type (told values changed: must fail; said another way: must pass)")
    table.add_column("claim type", no_wrap=True)
    for col in ("expect", "generated", "held by the world", "played", "as expected", "unexpected"):
        table.add_column(col, justify="right")
    for kind in CLAIM_PROBE_TYPES:
        c = claims.get(kind)
        if not c:
            continue
        played = c["generated"] - c["held"]
        expect = "pass" if kind == "paraphrase" else "fail"
        table.add_row(
            kind, expect, str(c["generated"]), str(c["held"]), str(played), str(c["as_expected"]), str(c["unexpected"])
        )
    return table


@tasks_app.command("stats")
def tasks_stats(selector: Annotated[str, typer.Argument(help="Task selector.")] = "all") -> None:
    """Counts of tasks by category, domain, app and template; share of cross-app tasks; tasks
    by the number of tool calls their reference plan needs; distinct goals; and under
    ``world``, how well the tasks' worlds hold together: per rule of
    :mod:`phoneenv.tasks.coherence`, the records that hold it, those judged, and the share."""
    from collections import Counter

    from phoneenv.tasks import needed_calls
    from phoneenv.tasks.coherence import measure

    sel = select_tasks(selector, "SELECTOR")
    calls = Counter(min(needed_calls(t), 3) for t in sel)
    n = max(len(sel), 1)
    stats = {
        "tasks": len(sel),
        "distinct_goals": len({t.goal for t in sel}),
        "by_needed_calls": {"1": calls[1], "2": calls[2], "3+": calls[3], "0": calls[0]},
        "share_by_needed_calls": {
            "1": round(calls[1] / n, 4),
            "2": round(calls[2] / n, 4),
            "3+": round(calls[3] / n, 4),
        },
        "templates": len({t.template for t in sel}),
        "cross_app": sum(t.cross_app for t in sel),
        "by_category": dict(Counter(t.category.value for t in sel)),
        "by_domain": dict(Counter(t.domain.value for t in sel)),
        "by_app": dict(Counter(a for t in sel for a in t.apps)),
        "by_backend": dict(Counter(t.backends[0] for t in sel)),
        "by_template": dict(Counter(t.template for t in sel)),
        "tools": _tool_stats(sel),
        "world": measure(t.fixtures for t in sel),
    }
    console.print_json(json.dumps(stats))


def _tool_stats(sel: list[Any]) -> dict[str, Any]:
    """The tools behind the tasks ``sel``: how many each backend serves (the sandbox's verified
    from state; the simulated apps'; the harness's, offered by the env beside them), by
    domain, and how many of them the reference plans of ``sel`` call."""
    from collections import Counter

    from phoneenv.backends.llmsim import LLMSimBackend
    from phoneenv.backends.sandbox import SandboxBackend
    from phoneenv.env import PhonePlanEnv

    sandbox = {n: e.spec for n, e in SandboxBackend().tools().items()}
    simulated = {n: e.spec for n, e in LLMSimBackend().tools().items() if n not in sandbox}
    harness: set[str] = set()
    for task in {t.template: t for t in sel if "sandbox" in t.backends}.values():
        env = PhonePlanEnv(task=task, delegation=True)
        env.reset()
        harness |= {s.name for s in env.tool_specs} - sandbox.keys()
        env.close()
    named = {*sandbox, *simulated, *harness}
    return {
        "sandbox": len(sandbox),
        "simulated": len(simulated),
        "harness": len(harness),
        "total": len(named),
        "by_domain": dict(sorted(Counter(s.domain.value for s in [*sandbox.values(), *simulated.values()]).items())),
        "called_by_reference_plans": len({c.name for t in sel for c in t.reference_plan} & named),
    }
