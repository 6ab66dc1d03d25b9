"""Run a planner over tasks, write one JSON Lines trace per episode, and score the results.

The evaluator lives apart from the agents: it takes any object with ``name``,
``reset(observation, info)`` and ``act(observation, info) -> (action, tokens)``-like
:class:`AgentLike`, so ``phoneenv`` never imports ``agents``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from phoneenv.contract import Category, TaskSpec
from phoneenv.llm import InfrastructureError

log = logging.getLogger(__name__)

__all__ = ["AgentLike", "EpisodeResult", "Scoreboard", "run_episodes", "score"]

CATEGORY_LABELS = {
    Category.TOOL: "Tool",
    Category.MEMORY: "Memory",
    Category.SKILLS: "Skills",
    Category.SUBAGENT: "Sub-agent",
}


class AgentLike(Protocol):
    """What the evaluator needs of a planner (see ``agents.base.Agent``)."""

    name: str

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start an episode from the first observation and info (``info["tools"]``)."""

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """The next action: an object with ``action`` (JSON text) and ``tokens``, or the text.
        May raise :class:`~phoneenv.llm.InfrastructureError`."""


@dataclass
class EpisodeResult:
    """One episode's outcome: task, verdict figures, agent tokens and wall time (seconds)."""

    task_id: str
    category: str
    domain: str
    success: bool
    progress: float
    steps: int
    errors: int
    infrastructure_error: bool
    output_tokens: int
    wall_s: float
    trace_path: str | None


def _play(agent: AgentLike, env: Any, task: TaskSpec, seed: int, out_dir: Path | None, t0: float) -> EpisodeResult:
    """One episode of ``agent`` on ``task``; its trace is written to ``out_dir``. An
    :class:`InfrastructureError` from the agent ends the episode as an infrastructure error; one
    from ``env.reset`` propagates."""
    obs, info = env.reset(seed=seed, options={"task": task})
    agent.reset(obs, info)
    while True:
        try:
            decision = agent.act(obs, info)
        except InfrastructureError as exc:
            info = env.abort_infrastructure(f"{exc.kind}: {exc}")
            break
        action, tokens = (decision.action, decision.tokens) if hasattr(decision, "action") else (decision, None)
        if tokens:
            env.add_agent_tokens(tokens)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    wall = time.perf_counter() - t0
    trace = env.trace
    trace.agent = agent.name
    path = None
    if out_dir is not None:
        path = out_dir / _trace_name(task.id)
        path.write_text(trace.model_dump_json() + "\n", encoding="utf-8")
    v = info["verdict"]
    return EpisodeResult(
        task_id=task.id,
        category=task.category.value,
        domain=task.domain.value,
        success=v["success"],
        progress=v["progress"],
        steps=v["steps"],
        errors=v["errors"],
        infrastructure_error=v["infrastructure_error"],
        output_tokens=v["output_tokens"] or 0,
        wall_s=wall,
        trace_path=str(path) if path else None,
    )


def _trace_name(task_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", task_id) + ".jsonl"


def run_episodes(
    agent: AgentLike,
    tasks: Iterable[TaskSpec],
    out_dir: Path | None = None,
    *,
    seed: int = 0,
    on_episode: Callable[[EpisodeResult], None] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    max_consecutive_infra: int | None = None,
) -> list[EpisodeResult]:
    """Run ``agent`` once on each task through ``PhonePlan-v0``; return the results in order.

    Args:
        agent: the planner.
        tasks: the tasks to run.
        out_dir: where ``<task_id>.jsonl`` traces go (one line: the :class:`Trace`); None: none.
        seed: the episode seed passed to ``reset``.
        on_episode: called after each episode (progress bars).
        env_kwargs: keyword arguments for the env (``backend``, ``simulator``, ``screenshots``...);
            ``backend="auto"`` (the default) runs each task on the first backend it declares.
        max_consecutive_infra: stop after this many infrastructure-error episodes in a row (a
            dead model server, a lost device) by raising :class:`~phoneenv.llm.InfrastructureError`;
            the episodes before it are already reported through ``on_episode``.

    A ``reset`` that raises :class:`~phoneenv.llm.InfrastructureError` (a device that is gone or
    refuses the task's fixtures) gives an episode with ``infrastructure_error=True``, no steps and
    no trace; the run goes on with the next task.
    """
    from phoneenv.env import PhonePlanEnv

    tasks = list(tasks)
    if not tasks:
        return []
    kwargs = dict(env_kwargs or {})
    backend = kwargs.pop("backend", "auto")
    envs: dict[str, PhonePlanEnv] = {}
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    streak = 0
    for task in tasks:
        name = task.backends[0] if backend == "auto" else backend
        if name not in envs:
            envs[name] = PhonePlanEnv(tasks=tasks, backend=name, **kwargs)
        env = envs[name]
        t0 = time.perf_counter()
        reason: BaseException | None = None
        try:
            res = _play(agent, env, task, seed, out_dir, t0)
        except InfrastructureError as exc:  # from reset: a device lost or refusing the fixtures
            log.warning("reset of %s failed on %s: %s", task.id, name, exc)
            reason = exc
            res = EpisodeResult(task.id, task.category.value, task.domain.value, False, 0.0, 0, 0, True, 0,
                                time.perf_counter() - t0, None)  # fmt: skip
        results.append(res)
        if on_episode is not None:
            on_episode(res)
        streak = streak + 1 if res.infrastructure_error else 0
        if max_consecutive_infra is not None and streak >= max_consecutive_infra:
            for e in envs.values():
                e.close()
            detail = f"the last: {reason}" if reason is not None else "is the model server up?"
            raise InfrastructureError(
                f"{streak} episodes in a row ended in an infrastructure error; {detail}",
                kind=getattr(reason, "kind", "connection"),
            ) from reason
    for env in envs.values():
        env.close()
    return results


@dataclass
class Row:
    """One scoreboard row: episodes, distinct tasks, success rate and mean progress (both in
    [0, 1], None when empty)."""

    label: str
    episodes: int
    success: float | None
    progress: float | None
    tasks: int = 0


@dataclass
class Scoreboard:
    """Scores by category (Tool, Memory, Skills, Sub-agent, Overall; empty ones kept) and by
    domain, plus mean steps per episode, error rate (errored steps / steps), infrastructure
    errors, mean output tokens per task (thinking included), total wall time in seconds, and,
    given a price per million output tokens, the estimated output cost per 1,000 tasks
    (``mean_output_tokens × 1000 × price / 10⁶``; input tokens excluded, as the
    Qwen-Planner-Agent report quotes cost)."""

    agent: str
    categories: list[Row]
    domains: list[Row]
    mean_steps: float
    error_rate: float
    infrastructure_errors: int
    mean_output_tokens: float
    wall_s: float
    price_per_mtok: float | None = None
    cost_per_1000_tasks: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The scoreboard as plain JSON data."""
        return asdict(self)


def _row(label: str, rs: list[EpisodeResult]) -> Row:
    if not rs:
        return Row(label, 0, None, None)
    return Row(
        label,
        len(rs),
        sum(r.success for r in rs) / len(rs),
        sum(r.progress for r in rs) / len(rs),
        tasks=len({r.task_id for r in rs}),
    )


def score(
    agent: str, results: list[EpisodeResult], wall_s: float | None = None, price_per_mtok: float | None = None
) -> Scoreboard:
    """Aggregate episode results into a :class:`Scoreboard`.

    Overall is the mean over episodes (not over categories). Infrastructure-error episodes are
    counted apart and left out of the success and progress rates.
    """
    scored = [r for r in results if not r.infrastructure_error]
    by_cat: dict[str, list[EpisodeResult]] = defaultdict(list)
    by_dom: dict[str, list[EpisodeResult]] = defaultdict(list)
    for r in scored:
        by_cat[r.category].append(r)
        by_dom[r.domain].append(r)
    cats = [_row(label, by_cat.get(cat.value, [])) for cat, label in CATEGORY_LABELS.items()]
    cats.append(_row("Overall", scored))
    doms = [_row(d, by_dom[d]) for d in sorted(by_dom)]
    steps = sum(r.steps for r in results)
    mean_out = sum(r.output_tokens for r in results) / len(results) if results else 0.0
    return Scoreboard(
        agent=agent,
        categories=cats,
        domains=doms,
        mean_steps=steps / len(results) if results else 0.0,
        error_rate=sum(r.errors for r in results) / steps if steps else 0.0,
        infrastructure_errors=sum(r.infrastructure_error for r in results),
        mean_output_tokens=mean_out,
        wall_s=wall_s if wall_s is not None else sum(r.wall_s for r in results),
        price_per_mtok=price_per_mtok,
        cost_per_1000_tasks=None if price_per_mtok is None else mean_out * 1000 * price_per_mtok / 1e6,
    )


def write_results(out_dir: Path, results: list[EpisodeResult], board: Scoreboard) -> None:
    """Write ``results.jsonl`` (one line per episode) and ``scoreboard.json`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "results.jsonl").open("w", encoding="utf-8") as fh:
        for r in results:
            fh.write(json.dumps(asdict(r)) + "\n")
    (out_dir / "scoreboard.json").write_text(json.dumps(board.to_json(), indent=2) + "\n", encoding="utf-8")
