"""``phoneenv evolve``: co-evolution rounds of the closed loop (see :mod:`phoneenv.loop.evolve`).

phoneenv evolve round --run runs/r0 [--model M --base-url URL]   # failures -> review items
phoneenv evolve apply                                            # approved edits -> a harness version
phoneenv evolve report --before runs/r0 --after runs/r1          # the round report
phoneenv evolve weights --run runs/r1                            # sampler weights from the results
phoneenv evolve versions                                         # the harness versions
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["evolve_app"]

evolve_app = typer.Typer(
    help="Co-evolution rounds: cluster a run's failures, propose skill, instruction and data-mix edits "
    "for review, apply the approved ones as a new harness version, and report before/after.",
    no_args_is_help=True,
)
console = Console()

LoopOption = Annotated[
    Path | None,
    typer.Option("--loop", help="The loop directory (default $PHONEENV_LOOP_DIR, else runs/loop)."),
]


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(code=2)


@evolve_app.command("round")
def round_cmd(
    run: Annotated[Path, typer.Option(help="An eval run folder (its traces/ and run.json).")],
    model: Annotated[
        str | None, typer.Option(help="A model that drafts the skills and instructions (default: rule-based drafts).")
    ] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint of --model.")] = None,
    api_key: Annotated[str | None, typer.Option(help="API key (default $OPENAI_API_KEY).")] = None,
    min_size: Annotated[int, typer.Option(min=1, help="Smallest cluster that gets edits proposed.")] = 2,
    max_clusters: Annotated[int, typer.Option(min=1, help="Propose edits for the largest N clusters.")] = 10,
    loop: LoopOption = None,
) -> None:
    """Cluster the run's failures and submit, per cluster, a skill edit, an instruction edit and a
    data-mix weight to the review queue, with the traces as evidence; writes
    <loop>/rounds/<n>/clusters.json (each cluster's gap for `phoneenv tasks propose --gap`)."""
    from phoneenv.loop import evolve
    from phoneenv.loop.harness import HarnessError

    client = None
    if model is not None:
        from agents.factory import make_client
        from phoneenv.cli.errors import usage_errors

        with usage_errors():
            client = make_client(base_url, model, api_key)
    try:
        result = evolve.run_round(run, loop=loop, client=client, min_size=min_size, max_clusters=max_clusters)
    except (OSError, HarnessError, ValueError) as exc:
        _fail(str(exc))
    table = Table(title=f"Round {result.round}: {sum(c.size for c in result.clusters)} failures in clusters")
    for col in ("cluster", "signature", "failures", "capabilities", "review items"):
        table.add_column(col)
    for c in result.clusters:
        caps = ", ".join(list(c.capabilities)[:3])
        ids = ", ".join(f"#{i}" for i in result.items[c.id].values())
        table.add_row(c.id, f"{c.error_kind} on {c.focus}", str(c.size), caps, ids)
    console.print(table)
    console.print(f"clusters in {result.folder / evolve.CLUSTERS_FILE}; review with `phoneenv review list`")


@evolve_app.command("apply")
def apply_cmd(loop: LoopOption = None) -> None:
    """Make a new harness version (parent: the latest) from the approved edits not yet applied."""
    from phoneenv.harness.skills import SkillError
    from phoneenv.loop.evolve import apply_approved
    from phoneenv.loop.harness import HarnessError

    try:
        version = apply_approved(loop)
    except (HarnessError, SkillError) as exc:
        _fail(str(exc))
    if version is None:
        console.print("no approved edit is waiting: nothing to apply")
        return
    edits = ", ".join(f"#{i}" for i in version.manifest.edits)
    console.print(f"harness {version.name} (parent {version.manifest.parent}) in {version.path}: edits {edits}")
    console.print(f"evaluate with `phoneenv eval --harness {version.name} ...`")


@evolve_app.command("report")
def report_cmd(
    before: Annotated[Path, typer.Option(help="The run the round's clusters came from.")],
    after: Annotated[Path, typer.Option(help="The run with the new harness version.")],
    round_no: Annotated[
        int | None, typer.Option("--round", help="The round (default: the latest made from --before).")
    ] = None,
    loop: LoopOption = None,
) -> None:
    """Write the round report (<loop>/rounds/<n>/report.md and .json): the scoreboard per category
    before and after, the edits applied, and per cluster how many failing pairs now succeed."""
    from phoneenv.loop.evolve import REPORT_FILE, round_dir, round_report

    try:
        report = round_report(before, after, loop=loop, round_no=round_no)
    except (OSError, ValueError, KeyError) as exc:
        _fail(str(exc))
    folder = round_dir(loop, report["round"])
    console.print((folder / f"{REPORT_FILE}.md").read_text(encoding="utf-8"), markup=False, highlight=False)
    console.print(f"report in {folder / REPORT_FILE}.md and .json")


@evolve_app.command("weights")
def weights_cmd(
    run: Annotated[Path, typer.Option(help="An eval run folder whose results set the weights.")],
    rule: Annotated[
        str, typer.Option(help="failure (more of what fails) or learnable (more of what half succeeds).")
    ] = "failure",
    floor: Annotated[float, typer.Option(min=0.0, max=1.0, help="Smallest weight a measured group gets.")] = 0.1,
    min_episodes: Annotated[int, typer.Option(min=1, help="Episodes a group needs to be re-weighted.")] = 2,
    loop: LoopOption = None,
) -> None:
    """Update the sampler weights (<loop>/weights.json, for `python -m rl.trainers --sampler "$(cat ...)"`) from
    the run's measured success per capability, source and template, then lay the latest harness
    version's approved mix weights over them; every change is appended to <loop>/weights.jsonl."""
    from phoneenv.loop import loop_dir
    from phoneenv.loop.harness import latest_version
    from rl.sampler import apply_mix, config_to_json, result_rows, weights_from_results

    folder = loop_dir(loop)
    current = folder / "weights.json"
    log_path = folder / "weights.jsonl"
    try:
        base = _current_weights(current)
        config, changes = weights_from_results(
            result_rows(run), base, rule=rule, floor=floor, min_episodes=min_episodes, round_name=str(run),
            log_path=log_path,
        )  # fmt: skip
        version = latest_version(loop)
        config, more = apply_mix(config, version.manifest.mix, why=f"harness {version.name}", log_path=log_path)
    except (OSError, ValueError) as exc:
        _fail(str(exc))
    folder.mkdir(parents=True, exist_ok=True)
    current.write_text(json.dumps(config_to_json(config), indent=2) + "\n", encoding="utf-8")
    for c in [*changes, *more]:
        console.print(f"{c.group}: {c.before:g} -> {c.after:g} ({c.why})", highlight=False)
    console.print(f"{len(changes) + len(more)} weight changes logged in {log_path}; weights in {current}")


def _current_weights(current: Path) -> Any:
    """The sampler weights in ``current`` (``<loop>/weights.json``), None when there is no such
    file. Raises ``ValueError`` naming the file when it is damaged or holds no weights."""
    from phoneenv.tracefiles import read_json_file
    from rl.sampler import config_from_json

    if not current.exists():
        return None
    try:
        return config_from_json(read_json_file(current))
    except ValueError as exc:
        message = str(exc) if str(current) in str(exc) else f"{current}: {exc}"
        raise ValueError(f"{message}; not sampler weights (move it aside to start from even weights)") from None


@evolve_app.command("versions")
def versions_cmd(loop: LoopOption = None) -> None:
    """List the harness versions: name, parent, edits, skills of their own, mix."""
    from phoneenv.harness.skills import SkillError
    from phoneenv.loop.harness import HarnessError, versions

    try:
        found = versions(loop)
        skills = {h.name: h.own_skills() for h in found}  # a malformed SKILL.md: one line naming it
    except (HarnessError, SkillError) as exc:
        _fail(str(exc))
    table = Table(title="Harness versions")
    for col in ("name", "parent", "created", "edits", "skills", "instructions", "mix"):
        table.add_column(col)
    for h in found:
        table.add_row(
            h.name,
            h.manifest.parent or "—",
            h.manifest.created_at,
            ", ".join(f"#{i}" for i in h.manifest.edits) or "—",
            ", ".join(skills[h.name]) or "—",
            f"{len(h.instructions.splitlines())} lines" if h.instructions else "—",
            ", ".join(f"{k}={v:g}" for k, v in h.manifest.mix.items()) or "—",
        )
    console.print(table)
