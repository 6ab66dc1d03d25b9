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
    container_note,
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
from phoneenv.runconfig import EVAL_HELP, EvalConfig, EvalConfigError


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
    unwritten = False
    try:
        folder.write_scoreboard(board)
    except OSError as exc:  # the run's own output, not an episode: one line, the episodes are kept
        console.print(f"[red]cannot write the scoreboard:[/red] {exc.strerror or exc}: {exc.filename or ''}")
        unwritten = True
    if stopped is None and not unwritten:
        return board
    if isinstance(stopped, MissingExtra):  # one line naming the install command (_App); episodes so far are kept
        raise stopped
    print_scoreboard(board)
    kept = f"{len(results)} episodes are in {folder.path / RunFolder.RESULTS}; rerun with --resume to continue"
    if stopped is None:
        console.print(f"{kept} once the scoreboard's path is writable")
        raise typer.Exit(code=2)
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


_D = EvalConfig()


def eval_cmd(
    agent: Annotated[str, typer.Option(help=EVAL_HELP["agent"])] = _D.agent,
    tasks: Annotated[str, typer.Option(help=EVAL_HELP["tasks"])] = _D.tasks,
    out: Annotated[Path, typer.Option(help=EVAL_HELP["out"])] = _D.out,
    seed: Annotated[int, typer.Option(min=0, help=EVAL_HELP["seed"])] = _D.seed,
    seeds: Annotated[int, typer.Option(min=1, help=EVAL_HELP["seeds"])] = _D.seeds,
    backend: Annotated[str, typer.Option(help=EVAL_HELP["backend"])] = _D.backend,
    base_url: Annotated[str | None, typer.Option(help=EVAL_HELP["base_url"])] = _D.base_url,
    model: Annotated[str | None, typer.Option(help=EVAL_HELP["model"])] = _D.model,
    api_key: Annotated[str | None, typer.Option(help=EVAL_HELP["api_key"])] = _D.api_key,
    tools: Annotated[str | None, typer.Option(help=TOOL_FILTER_HELP + " " + EVAL_HELP["tools"])] = _D.tools,
    tool_selection: Annotated[str, typer.Option(help=EVAL_HELP["tool_selection"])] = _D.tool_selection,
    tool_k: Annotated[int, typer.Option(min=0, help=EVAL_HELP["tool_k"])] = _D.tool_k,
    tool_budget: Annotated[int | None, typer.Option(min=1, help=EVAL_HELP["tool_budget"])] = _D.tool_budget,
    max_tokens: Annotated[int, typer.Option(min=1, help=EVAL_HELP["max_tokens"])] = _D.max_tokens,
    max_steps: Annotated[int | None, typer.Option(min=1, help=EVAL_HELP["max_steps"])] = _D.max_steps,
    vision: Annotated[bool, typer.Option(help=EVAL_HELP["vision"])] = _D.vision,
    price_per_mtok: Annotated[
        float | None, typer.Option(min=0.0, help=EVAL_HELP["price_per_mtok"])
    ] = _D.price_per_mtok,
    sim_base_url: Annotated[str | None, typer.Option(help=EVAL_HELP["sim_base_url"])] = _D.sim_base_url,
    sim_model: Annotated[str | None, typer.Option(help=EVAL_HELP["sim_model"])] = _D.sim_model,
    max_consecutive_infra: Annotated[
        int, typer.Option(min=1, help=EVAL_HELP["max_consecutive_infra"])
    ] = _D.max_consecutive_infra,
    infra_budget_s: Annotated[float, typer.Option(min=0.0, help=EVAL_HELP["infra_budget_s"])] = _D.infra_budget_s,
    resume: Annotated[bool, typer.Option(help=EVAL_HELP["resume"])] = _D.resume,
    overwrite: Annotated[bool, typer.Option(help=EVAL_HELP["overwrite"])] = _D.overwrite,
    split: Annotated[str | None, typer.Option(help=EVAL_HELP["split"])] = _D.split,
    ray: Annotated[str | None, typer.Option(metavar="[ADDRESS]", help=EVAL_HELP["ray"])] = _D.ray,
    workers: Annotated[int, typer.Option(min=1, help=EVAL_HELP["workers"])] = _D.workers,
    device: Annotated[list[str] | None, typer.Option("--device", help=EVAL_HELP["device"])] = _D.device,
    farm: Annotated[Path | None, typer.Option(help=EVAL_HELP["farm"])] = _D.farm,
    max_attempts: Annotated[int, typer.Option(min=1, help=EVAL_HELP["max_attempts"])] = _D.max_attempts,
    concurrency: Annotated[int, typer.Option(min=1, help=EVAL_HELP["concurrency"])] = _D.concurrency,
    store: Annotated[bool, typer.Option(help=EVAL_HELP["store"])] = _D.store,
    loop: Annotated[Path | None, typer.Option("--loop", help=EVAL_HELP["loop"])] = _D.loop,
    harness: Annotated[str | None, typer.Option(help=EVAL_HELP["harness"])] = _D.harness,
) -> None:
    """Run a planner over tasks, write one JSONL trace per episode, and print the scoreboard.

    Results are written as each episode ends, so a killed run keeps its finished episodes and
    --resume continues it. Without --resume, an --out that already holds a run is refused (never
    mixed, never silently deleted); --overwrite discards it."""
    cfg = EvalConfig(**{k: v for k, v in locals().items() if k in EVAL_HELP})
    try:
        cfg.check()
    except EvalConfigError as exc:
        raise typer.BadParameter(exc.message, param_hint=exc.flag) from None
    from phoneenv.backends import make_backend
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
                + " (is it running and `adb connect`ed? "
                + (f"`phoneenv farm status {farm}` shows the farm's workers)" if farm else "`adb devices` lists them)")
            )
        for serial, reason in failed.items():
            console.print(f"[yellow]{serial} is not ready ({reason}); the pool heals it or retires it[/yellow]")
    if pool is not None and cfg.backend == "auto":
        cfg.backend = "device"  # the tasks a device runs faithfully
    selected = select_tasks(tasks)
    if split is not None:
        from phoneenv.tasks import split_of

        selected = [t for t in selected if split_of(t.id) == split]
        if not selected:
            raise typer.BadParameter(f"no selected task is in the {split} split", param_hint="--split")
    if cfg.backend != "auto":
        probe = make_backend(cfg.backend)
        runnable = [t for t in selected if probe.can_run(t)]
        if not runnable:
            raise typer.BadParameter(
                f"none of the {len(selected)} selected tasks runs on the {cfg.backend!r} backend",
                param_hint="--backend",
            )
        if len(runnable) < len(selected):
            console.print(
                f"skipping {len(selected) - len(runnable)} tasks the {cfg.backend!r} backend cannot run faithfully"
            )
        selected = runnable
    if agent == "llm":
        if not base_url:
            if model is None:
                console.print("no --model: the planner is SmolLM2-135M-Instruct (--model smollm2)")
            cfg.model = str(base_model(model, eval_models_folder(), "smollm2"))
        if tools is None:
            cfg.tools = recorded_filter(None if base_url else cfg.model) or "task"
        try:
            parse_tool_filter(cfg.tools)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--tools") from None
    else:
        cfg.tools = tools or "task"
    version = load_harness(harness, ray, loop)
    config = cfg.run_record([t.id for t in selected], harness=version.name if version is not None else None)
    folder = RunFolder(out)
    previous: list[EpisodeResult] = []
    try:
        if resume:
            previous = folder.resume(config)
        elif folder.holds_run() and not overwrite:
            folder.start(config)  # raises, naming the run already there
    except ValueError as exc:  # RunConfigError, or a results.jsonl line that is not a result
        fail(str(exc))
    llm = cfg.llm_spec()
    planner = _with_harness(make_agent(agent, seed, llm), version)
    env_kwargs = cfg.env_kwargs(version.env_kwargs() if version is not None else None)
    needs_sim = cfg.backend in ("llmsim", "hybrid") or (
        cfg.backend == "auto" and any(t.backends[0] != "sandbox" for t in selected)
    )
    if needs_sim and (sim_model or (agent == "llm" and cfg.model)):
        if sim_model is None and sim_base_url is None and agent == "llm":
            env_kwargs["simulator"] = planner.client  # one model plays planner and simulator
        else:
            env_kwargs["simulator"] = make_client(
                sim_base_url or base_url, sim_model or cfg.model, api_key, option="--sim-model"
            )
    # Ray is started or joined before the run folder is: a Ray that cannot be is no episode's fault
    runner = _ray_runner(ray, workers, agent, seed, llm, env_kwargs, sim_base_url, sim_model, api_key)
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
    redo = folder.redo  # earlier infrastructure errors: after the never-played tasks, so a still
    plan = [  # failing endpoint cannot spend the outage budget before any new task runs
        (s, sorted((t for t in selected if (t.id, s) not in done), key=lambda t, s=s: (t.id, s) in redo))
        for s in range(seed, seed + seeds)
    ]
    if resume:
        left = sum(len(ts) for _, ts in plan)
        again = f" ({len(redo)} earlier infrastructure errors run again, after the others)" if redo else ""
        console.print(f"resuming {out}: {len(previous)} episodes done, {left} to run{again}")
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
        runner=runner,
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
    if (note := container_note(folder.path)) is not None:  # the root Docker image: where the host finds them
        console.print(note, highlight=False, markup=False)
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
    """``--ray``: the Ray runner (phoneenv.farm.distributed), the simulator passed as a spec; Ray
    started or joined. One line and exit code 2 when Ray cannot be started or the cluster joined."""
    if address is None:
        return None
    from phoneenv.farm.distributed import AgentSpec, ClientSpec, RaySetupError, eval_runner

    sim: Any = None
    if "simulator" in env_kwargs:
        same = sim_model is None and sim_base_url is None and agent == "llm"
        sim = "planner" if same else ClientSpec(sim_base_url or llm["base_url"], sim_model or llm["model"], api_key)
    try:
        return eval_runner(
            AgentSpec(agent, seed, llm if agent == "llm" or ":" in agent else None), address, workers, simulator=sim
        )
    except RaySetupError as exc:
        fail(f"{exc} (no episode was played)")
