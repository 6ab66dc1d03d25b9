"""``phoneenv review``: list, show, approve, reject and edit the items of the loop's review queue.

The queue is ``<loop>/review.sqlite`` (see :mod:`phoneenv.loop.review`); every decision is
recorded with the reviewer (``--reviewer``, default ``$PHONEENV_REVIEWER`` or the login name)
and the time.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax
from rich.table import Table

from phoneenv.loop import REVIEW_DB, loop_dir, reviewer_name
from phoneenv.loop.review import KINDS, STATUSES, ReviewItem, ReviewQueue, check_payload
from phoneenv.tracefiles import read_json_file, read_traces

review_app = typer.Typer(help="The loop's review queue: what needs a person's decision.", no_args_is_help=True)
console = Console()

LoopOpt = Annotated[
    Path | None, typer.Option("--loop", help="The loop directory (default $PHONEENV_LOOP_DIR, else runs/loop).")
]
ReviewerOpt = Annotated[
    str | None, typer.Option("--reviewer", help="Who decides (default $PHONEENV_REVIEWER, else the login name).")
]
IdArg = Annotated[int, typer.Argument(help="The item's id (see `phoneenv review list`).")]


def _queue(loop: Path | None) -> ReviewQueue:
    return ReviewQueue(loop_dir(loop) / REVIEW_DB)


def _readable(command: Callable[..., None]) -> Callable[..., None]:
    """A review command whose queue file is corrupt or foreign (not SQLite, another schema, a row
    whose JSON does not parse) ends in one line naming the file and what to do, not a traceback."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except (sqlite3.Error, ValueError, KeyError, TypeError) as exc:  # typer's Exit and usage errors pass
            path = loop_dir(kwargs.get("loop")) / REVIEW_DB
            _fail(
                f"{path} cannot be read as a review queue ({type(exc).__name__}: {exc}); move it aside "
                "(a new queue is made on the next submit) or pass --loop to use another"
            )

    return run


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code=code)


def _get(queue: ReviewQueue, item_id: int) -> ReviewItem:
    try:
        return queue.get(item_id)
    except KeyError as exc:
        _fail(str(exc.args[0]))
        raise  # unreachable: _fail raises


@review_app.command("list")
@_readable
def list_cmd(
    status: Annotated[str | None, typer.Option(help=f"Only items of this status ({', '.join(STATUSES)}).")] = None,
    kind: Annotated[str | None, typer.Option(help=f"Only items of this kind ({', '.join(KINDS)}).")] = None,
    loop: LoopOpt = None,
) -> None:
    """List the queue's items, oldest first."""
    try:
        items = _queue(loop).items(status=status, kind=kind)
    except json.JSONDecodeError:
        raise  # a damaged row: _readable says which file
    except ValueError as exc:
        _fail(str(exc))
    if not items:
        which = ", ".join(f"{k} {v}" for k, v in (("status", status), ("kind", kind)) if v)
        console.print("no review item" + (f" ({which})" if which else ""))
        return
    table = Table(show_lines=False)
    for col in ("id", "kind", "status", "title", "source", "reason", "created", "decided by"):
        table.add_column(col, overflow="fold")
    for it in items:
        last = it.decided
        table.add_row(
            str(it.id),
            it.kind,
            it.status,
            escape(it.title),
            escape(it.source),
            escape(it.reason),
            it.created_at[:19].replace("T", " "),
            escape(last.reviewer) if last else "",
        )
    console.print(table)


def _trace_summary(ref: Any) -> list[str]:
    """Lines summing up a trace given as a path to a trace file or as inline JSON."""
    from phoneenv.contract import Trace

    try:
        if isinstance(ref, str) and ref.lstrip().startswith("{"):
            trace = Trace.model_validate_json(ref)
        elif isinstance(ref, dict):
            trace = Trace.model_validate(ref)
        else:
            trace = next(read_traces([Path(str(ref))]), None)
            if trace is None:
                return [f"(trace not readable: {ref} holds no trace)"]
    except (OSError, ValueError) as exc:
        return [f"(trace not readable: {exc})"]
    v = trace.verdict
    lines = [
        f"{trace.task_id} seed {trace.seed} on {trace.backend}, agent {trace.agent}: "
        + (f"success={v.success} progress={v.progress:.2f} steps={v.steps} errors={v.errors}" if v else "no verdict")
    ]
    for s in trace.steps:
        call = (
            f"{s.action.name}({json.dumps(s.action.arguments, ensure_ascii=False)[:120]})"
            if s.action
            else f"unparsed: {s.raw!r}"
        )
        fb = (
            "ok"
            if s.feedback.ok
            else f"{s.feedback.error.value if s.feedback.error else 'error'}: {s.feedback.message}"
        )
        lines.append(f"  {s.index:>2}. {call} -> {fb[:160]}")
    if v is not None:
        lines += [f"  criterion {c.id}: {'pass' if c.passed else 'FAIL ' + c.reason}" for c in v.criteria]
        if v.answer:
            lines.append(f"  answer: {v.answer[:300]}")
    return lines


def _show_task(task_json: dict[str, Any], esc: Callable[[str], str] = escape) -> None:
    from phoneenv.contract import TaskSpec

    task = TaskSpec.model_validate(task_json)
    console.print(
        f"[bold]task[/bold] {esc(task.id)} ({task.category.value}, {task.domain.value}, source {task.source})"
    )
    console.print(f"[bold]goal[/bold]: {esc(task.goal)}")
    fx = task.fixtures
    console.print(f"[bold]fixtures[/bold]: clock {fx.clock} {fx.timezone}, location {fx.location.get('label')}")
    for table, records in fx.records.items():
        console.print(f"  {esc(table)}: {len(records)} records")
        for r in records[:5]:
            console.print(f"    {esc(json.dumps(r, ensure_ascii=False)[:160])}", highlight=False)
    for what, crits in (("criteria", task.criteria), ("milestones", task.milestones)):
        if crits:
            console.print(f"[bold]{what}[/bold]:")
            for c in crits:
                console.print(
                    f"  {esc(json.dumps(c.model_dump(mode='json', exclude_defaults=True), ensure_ascii=False))}",
                    highlight=False,
                )


@review_app.command("show")
@_readable
def show_cmd(item_id: IdArg, loop: LoopOpt = None) -> None:
    """Show an item: for a task its goal, fixtures and criteria; for a verdict the episode's trace;
    for an edit its diff; then the evidence and every decision taken."""
    it = _get(_queue(loop), item_id)
    masker = _masker_of(it)

    def esc(text: str) -> str:  # the item's task's secrets masked, then rich markup escaped
        return escape(masker.text(text))

    console.print(f"[bold]#{it.id}[/bold] {it.kind} [{it.status}] {esc(it.title)}")
    console.print(f"queued by {esc(it.source or '?')} at {it.created_at}: {esc(it.reason)}")
    p = it.payload
    if it.kind == "task":
        _show_task(p["task"], esc)
        console.print(
            f"[bold]provenance[/bold]: {esc(json.dumps(p.get('provenance'), ensure_ascii=False))}", highlight=False
        )
    elif it.kind in ("skill_edit", "instruction_edit"):
        if it.kind == "skill_edit":
            console.print(f"skill {esc(str(p['skill']))} at {esc(str(p['path']))}")
        console.print(Syntax(p.get("diff") or "", "diff", word_wrap=True))
    elif it.kind == "mix_weight":
        console.print(f"weight of {esc(str(p['group']))}: {p['before']} -> {p['after']}")
    else:
        console.print(f"{esc(str(p['task_id']))} seed {p['seed']} in run {esc(str(p['run']))}: {esc(str(p['why']))}")
        try:
            from phoneenv.tasks import get_task

            console.print(f"[bold]goal[/bold]: {esc(get_task(str(p['task_id'])).goal)}")
        except KeyError:
            pass
    for k, ev in enumerate(it.evidence, 1):
        ref = ev.get("trace")
        head = {key: val for key, val in ev.items() if key != "trace"}
        console.print(f"[bold]evidence {k}[/bold]: {esc(json.dumps(head, ensure_ascii=False))}", highlight=False)
        if ref is not None:
            for line in _trace_summary(ref):
                console.print(esc(line), highlight=False)
    for d in it.decisions:
        console.print(f"{d.at} {d.action} by {esc(d.reviewer)}" + (f": {esc(d.note)}" if d.note else ""))


def _masker_of(item: ReviewItem) -> Any:
    """A masker of the secrets in the fixtures of the item's task (the payload's task, else the
    suite's task of its id): a goal, fixture or trace line shown holds none of them."""
    from phoneenv.contract import TaskSpec
    from phoneenv.intake import Masker, masker_for

    p = item.payload
    try:
        if item.kind == "task":
            task = TaskSpec.model_validate(p["task"])
        else:
            from phoneenv.tasks import get_task

            task = get_task(str(p["task_id"]))
    except (KeyError, TypeError, ValueError):
        return Masker()
    return masker_for(task.fixtures, frozenset())


def _decide(loop: Path | None, item_id: int, act: Callable[[ReviewQueue], ReviewItem]) -> None:
    """Take a decision on a pending item (``act`` on the queue) and say it; a decision the queue
    refuses (the item is not pending, a payload that does not fit) is one error line."""
    queue = _queue(loop)
    _get(queue, item_id)
    try:
        item = act(queue)
    except json.JSONDecodeError:
        raise  # a damaged row: _readable says which file
    except ValueError as exc:
        _fail(str(exc))
    _decided(item)


def _decided(item: ReviewItem) -> None:
    d = item.decisions[-1]
    console.print(f"#{item.id} {d.action} by {escape(d.reviewer)} at {d.at}; status {item.status}")


@review_app.command("approve")
@_readable
def approve_cmd(
    item_id: IdArg,
    note: Annotated[str, typer.Option(help="Why, or what to keep in mind.")] = "",
    reviewer: ReviewerOpt = None,
    loop: LoopOpt = None,
) -> None:
    """Approve a pending item (as last edited): the loop may act on it."""
    _decide(loop, item_id, lambda q: q.approve(item_id, reviewer or reviewer_name(), note))


@review_app.command("reject")
@_readable
def reject_cmd(
    item_id: IdArg,
    reason: Annotated[str, typer.Option(help="Why the item is rejected (required).")],
    reviewer: ReviewerOpt = None,
    loop: LoopOpt = None,
) -> None:
    """Reject a pending item, saying why."""
    _decide(loop, item_id, lambda q: q.reject(item_id, reviewer or reviewer_name(), reason))


@review_app.command("edit")
@_readable
def edit_cmd(
    item_id: IdArg,
    file: Annotated[Path, typer.Option("--file", help="A JSON file with the item's new payload (whole).")],
    note: Annotated[str, typer.Option(help="What was changed.")] = "",
    reviewer: ReviewerOpt = None,
    loop: LoopOpt = None,
) -> None:
    """Replace a pending item's payload with the JSON object of --file (the old one is kept in the
    decision); the item stays pending until approved."""
    item = _get(_queue(loop), item_id)
    fix = f"; fix --file (`phoneenv review show {item_id}` shows the payload now) and run again"
    try:
        payload = read_json_file(file)
        check_payload(item.kind, payload)
    except FileNotFoundError:
        _fail(f"there is no payload file {file}")
    except ValueError as exc:  # damaged, not JSON, or a payload that does not fit the item's kind
        message = str(exc)
        _fail((message if str(file) in message else f"{file}: {message}") + fix)
    _decide(loop, item_id, lambda q: q.edit(item_id, reviewer or reviewer_name(), payload, note))
