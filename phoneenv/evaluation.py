"""Run a planner over tasks, write one JSON Lines trace per episode, and score the results.

The evaluator lives apart from the agents: it takes any object with ``name``,
``reset(observation, info)`` and ``act(observation, info) -> (action, tokens)``-like
:class:`AgentLike`, so ``phoneenv`` never imports ``agents``.

Nothing finished is lost: each trace is written whole or not at all (a temporary file renamed
over the target, by the run's one writer thread, :class:`TraceWriter`), and :class:`RunFolder` appends each episode's result to ``results.jsonl`` and
flushes it to disk as the episode ends, so a run that is killed keeps every finished episode and
can be resumed. Infrastructure outages (a device or model server gone for a while) are waited
out with backoff within a budget (:class:`InfraRetry`). ``run_episodes(concurrency=N)`` keeps N
episodes in flight against a served model, on one thread (an event loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import math
import os
import re
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Generator, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import tenacity
from pydantic import TypeAdapter, ValidationError

from phoneenv.contract import Category, TaskSpec
from phoneenv.errors import RunConfigError
from phoneenv.llm import InfrastructureError
from phoneenv.tracefiles import jsonl_lines, read_json_file

log = logging.getLogger(__name__)

__all__ = [
    "AgentLike",
    "DeviceTries",
    "DeviceTry",
    "EpisodeResult",
    "InfraRetry",
    "RunConfigError",
    "RunFolder",
    "RunLedger",
    "Scoreboard",
    "TraceWriter",
    "check_seeds",
    "harness_of",
    "infra_result",
    "model_record",
    "pass_at_k",
    "pass_hat_k",
    "pass_k",
    "play_episode",
    "public_url",
    "read_results",
    "run_episodes",
    "score",
    "seed_folder",
    "try_on_device",
]

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
    """One episode's outcome: task, verdict figures, agent tokens and wall time (seconds).

    ``infrastructure_kind`` says what failed in an infrastructure-error episode: the
    :attr:`~phoneenv.llm.InfrastructureError.kind` the model client or the backend raised
    (``rate_limit``, ``server_error``, ``malformed_response``, ``device``...), or ``world`` when
    a tool's feedback or the backend's state read marked the episode; None otherwise. Only the
    short label is kept: the error's text can quote a server's body and stays in the log.

    With a device pool, ``attempts`` counts the tries (a try lost to its device is re-run from
    reset on another device), ``device`` is the serial of the last one, and ``time_lost_s`` the
    wall seconds of the tries that were lost."""

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
    seed: int | None = None
    infrastructure_kind: str | None = None
    attempts: int = 1
    device: str | None = None
    time_lost_s: float = 0.0


SYNC_INTERVAL_S = 1.0
"""Longest time (seconds) a finished episode of a run waits before it is flushed to the disk
(``fsync``); see :class:`RunFolder`."""


def atomic_write(path: Path, text: str, *, sync: bool = True) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all: a temporary file in the same
    folder, flushed to disk (``fsync``, unless not ``sync``), then renamed over ``path``
    (``os.replace`` is atomic on POSIX and Windows). A failure leaves ``path`` as it was and
    removes the temporary file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


DECODING_KEYS = (
    "temperature", "top_p", "top_k", "min_p", "max_tokens", "seed", "presence_penalty", "frequency_penalty",
    "repetition_penalty", "stop",
)  # fmt: skip
"""Decoding settings :func:`model_record` copies from a client's ``extra_body`` when present."""


def public_url(url: Any) -> str | None:
    """``url`` without what may be secret: credentials (``user:password@``), query and fragment
    (``?api-key=...``), and a trailing ``/``; None for None or an empty string. Other text is returned as it is, with
    the same parts cut when it parses as a URL."""
    if url is None or not str(url):
        return None
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(str(url))
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def model_record(agent: Any) -> dict[str, Any] | None:
    """The model an agent plans with, as recorded in every trace (``Trace.model``), the
    scoreboard and ``run.json``: ``{"name", "endpoint", "decoding"}``, or None for an agent with
    no model (the reference and random agents).

    An agent may say it itself with a ``model_info`` attribute (a dict, or a method returning
    one, with any of those keys; its ``endpoint`` is passed through :func:`public_url`).
    Otherwise an agent with a ``client`` that has a ``model`` (the LLM planner) gives the
    client's ``model`` as the name, its base URL (``base_url``, or the OpenAI SDK client's) through
    :func:`public_url` as the endpoint (None for a local model), and as decoding the client's
    ``temperature``, the agent's ``max_tokens`` and the :data:`DECODING_KEYS` of the client's
    ``extra_body``. The API key is never read.
    """
    info = getattr(agent, "model_info", None)
    if callable(info):
        info = info()
    if isinstance(info, dict):
        name = info.get("name")
        return {
            "name": None if name is None else str(name),
            "endpoint": public_url(info.get("endpoint")),
            "decoding": dict(info.get("decoding") or {}),
        }
    client = getattr(agent, "client", None)
    name = getattr(client, "model", None)
    if client is None or name is None:
        return None
    base = getattr(client, "base_url", None) or getattr(getattr(client, "_client", None), "base_url", None)
    decoding: dict[str, Any] = {}
    if getattr(client, "temperature", None) is not None:
        decoding["temperature"] = client.temperature
    if getattr(agent, "max_tokens", None) is not None:
        decoding["max_tokens"] = agent.max_tokens
    extra = getattr(client, "extra_body", None)
    if isinstance(extra, dict):
        decoding.update({k: extra[k] for k in DECODING_KEYS if k in extra})
    return {"name": str(name), "endpoint": public_url(base), "decoding": decoding}


def harness_of(agent: Any) -> str | None:
    """The name of the harness version an agent plays with (its ``harness`` attribute, set by
    ``phoneenv eval --harness``; see :mod:`phoneenv.loop.harness`), recorded in every trace
    (``Trace.harness``), ``run.json`` and the scoreboard; None when it names none."""
    name = getattr(agent, "harness", None)
    return name if isinstance(name, str) and name else None


_Episode = Generator[tuple[dict[str, Any], dict[str, Any]], Any, tuple[EpisodeResult, Any, bool]]


def _episode(
    agent: AgentLike,
    env: Any,
    task: TaskSpec,
    seed: int,
    *,
    abort_on_device_fault: bool = False,
    between: Callable[[], None] | None = None,
) -> _Episode:
    """One episode as a generator: it resets ``env``, then yields each ``(observation, info)`` the
    agent must act on and takes the agent's decision by ``send`` (or its
    :class:`InfrastructureError` by ``throw``); it returns what :func:`play_trace` returns.
    :func:`play_trace` drives it with ``agent.act``, :func:`_aplay_trace` with ``await
    agent.aact`` (so the env steps stay on the caller's thread either way)."""
    t0 = time.perf_counter()
    obs, info = env.reset(seed=seed, options={"task": task})
    agent.reset(obs, info)
    if between is not None:
        between()
    kind: str | None = None
    abort_kind: str | None = None
    while True:
        try:
            decision = yield obs, info
        except InfrastructureError as exc:
            info = env.abort_infrastructure(f"{exc.kind}: {exc}")
            kind = exc.kind
            break
        action, tokens = (decision.action, decision.tokens) if hasattr(decision, "action") else (decision, None)
        if tokens:
            env.add_agent_tokens(tokens)
        obs, _, terminated, truncated, info = env.step(action)
        if between is not None:
            between()
        fb = info.get("feedback")
        if abort_on_device_fault and getattr(fb, "infrastructure", False) and not (terminated or truncated):
            label = getattr(getattr(fb, "error", None), "value", None) or "device_error"
            info = env.abort_infrastructure(f"{label}: {getattr(fb, 'message', '')}")
            kind = abort_kind = label
            break
        if terminated or truncated:
            break
    wall = time.perf_counter() - t0
    trace = env.trace
    trace.agent = agent.name
    trace.model = model_record(agent)
    trace.harness = harness_of(agent)
    v = info["verdict"]
    result = EpisodeResult(
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
        trace_path=None,
        seed=seed,
        infrastructure_kind=(kind or "world") if v["infrastructure_error"] else None,
    )
    return result, trace, kind is not None and not abort_kind


def play_trace(
    agent: AgentLike,
    env: Any,
    task: TaskSpec,
    seed: int,
    *,
    abort_on_device_fault: bool = False,
    between: Callable[[], None] | None = None,
) -> tuple[EpisodeResult, Any, bool]:
    """One episode of ``agent`` on ``task``: its result (no ``trace_path``), the env's
    :class:`~phoneenv.contract.Trace`, and whether the agent's own infrastructure (its model
    server) failed. An :class:`InfrastructureError` from the agent ends the
    episode as an infrastructure error (``infrastructure_kind`` its kind); one from ``env.reset``
    propagates. With ``abort_on_device_fault``, the first step whose feedback is an
    infrastructure error (the device failed) ends the episode at once, labelled with the
    feedback's error (``device_error``, ``timeout``): a pool re-runs it on another device.
    ``between`` is called after the reset and after every step (the run reports, in between,
    the episodes whose traces the writer has put on disk meanwhile)."""
    episode = _episode(agent, env, task, seed, abort_on_device_fault=abort_on_device_fault, between=between)
    try:
        request = next(episode)
        while True:
            try:
                decision = agent.act(*request)
            except InfrastructureError as exc:
                request = episode.throw(exc)
                continue
            except StopIteration as exc:  # not the episode's end: a bug in the agent, reported as one
                raise RuntimeError(f"{type(agent).__name__}.act raised StopIteration") from exc
            request = episode.send(decision)
    except StopIteration as done:
        return done.value


async def _aplay_trace(agent: AgentLike, env: Any, task: TaskSpec, seed: int) -> tuple[EpisodeResult, Any, bool]:
    """:func:`play_trace` for an event loop: an agent with an ``aact`` coroutine (the
    :class:`~agents.planner.LLMPlanner` over a served model) is awaited, so other episodes step
    while it waits on its model; any other agent's ``act`` runs inline. The env steps run on the
    loop's thread."""
    aact = getattr(agent, "aact", None)
    episode = _episode(agent, env, task, seed)
    try:
        request = next(episode)
        while True:
            try:
                decision = await aact(*request) if aact is not None else agent.act(*request)
            except InfrastructureError as exc:
                request = episode.throw(exc)
                continue
            except StopIteration as exc:  # not the episode's end: a bug in the agent, reported as one
                raise RuntimeError(f"{type(agent).__name__}.act raised StopIteration") from exc
            request = episode.send(decision)
    except StopIteration as done:
        return done.value


def play_episode(agent: AgentLike, env: Any, task: TaskSpec, seed: int) -> tuple[EpisodeResult, str]:
    """Play one episode of ``agent`` on ``task`` in ``env`` (a ``PhonePlanEnv``) with ``seed``;
    return its result (``trace_path`` None) and the trace's JSON text (one line, ending in a newline),
    writing nothing: the caller writes the trace file (atomically) and sets ``trace_path``.

    An :class:`~phoneenv.llm.InfrastructureError` from the agent ends the episode as an
    infrastructure error; one from ``env.reset`` (a device that is gone or refuses the task's
    fixtures) propagates."""
    result, trace, _ = play_trace(agent, env, task, seed)
    return result, trace.model_dump_json() + "\n"


class TraceWriter:
    """The one writer of a run's traces: a single thread that writes each episode's trace to its
    own file, ``<folder>/<task-id>.jsonl`` (atomically, see :func:`atomic_write`; synced to the
    disk with the run's group syncs), in the order they are handed over.

    The episode loop only serialises the trace and hands the text over (:meth:`submit`): creating
    a file cost about half of a reference eval's time on a 2-core machine (an ext4 create and
    rename of a small file took 0.4-2 ms, mostly waiting), and that wait now overlaps the next
    episodes. One file per episode stays the layout, so every reader of traces (``--resume``,
    ``phoneenv validate --traces``, ``rl.sft``) reads them as before.

    :meth:`submit` returns a :class:`~concurrent.futures.Future` done once the file is in place
    (its ``result()`` raises the ``OSError`` of a failed write, and every later write fails
    without writing); callers report an episode only after its future is done, so
    ``results.jsonl`` never names a trace that is not on disk.

    Args:
        folder: where the traces go (created if missing).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="phoneenv-traces")
        self._failed: BaseException | None = None

    def path_for(self, task_id: str) -> Path:
        """Where the trace of ``task_id`` goes."""
        return self.folder / trace_name(task_id)

    def submit(self, task_id: str, text: str) -> Future[Path]:
        """Queue ``text`` (one trace as JSON, ending in a newline) to be written as the trace of
        ``task_id``; the future's result is the file's path."""
        path = self.path_for(task_id)

        def write() -> Path:
            if self._failed is not None:  # the run stops at that failure: write nothing after it
                raise OSError(f"{path.name} not written: an earlier trace failed ({self._failed})")
            try:
                atomic_write(path, text, sync=False)  # to the disk with the run's next group sync
            except BaseException as exc:
                self._failed = exc
                raise
            return path

        return self._pool.submit(write)

    def close(self) -> None:
        """Wait for every queued trace to be written, and stop the thread. Idempotent."""
        self._pool.shutdown(wait=True)


class _Reporter:
    """Reports finished episodes through ``on_episode`` in the order they finished, each only once
    its trace is written (see :class:`TraceWriter`), and keeps the results."""

    def __init__(self, on_episode: Callable[[EpisodeResult], None] | None) -> None:
        self.on_episode = on_episode
        self.results: list[EpisodeResult] = []
        self.broken = False  # on_episode raised: report nothing more
        self._pending: deque[tuple[EpisodeResult, Future[Path] | None]] = deque()

    def add(self, result: EpisodeResult, written: Future[Path] | None) -> None:
        """Queue ``result`` (its trace being written by ``written``, or None when it has none)
        and report every queued result whose trace is on disk."""
        self._pending.append((result, written))
        self.drain(wait=False)

    def drain(self, *, wait: bool) -> None:
        """Report the queued results, in order, whose traces are written; with ``wait`` all of
        them, waiting for their writes. Raises the ``OSError`` of a failed trace write (the
        results after it stay unreported), or what ``on_episode`` raised (then nothing more is
        reported: a Ctrl-C deferred to the end of a report stops the run there)."""
        while self._pending and not self.broken:
            result, written = self._pending[0]
            if written is not None:
                if not wait and not written.done():
                    return
                result.trace_path = str(written.result())
            self._pending.popleft()
            self.results.append(result)
            if self.on_episode is not None:
                try:
                    self.on_episode(result)
                except BaseException:
                    self.broken = True
                    raise


def _play(
    agent: AgentLike, env: Any, task: TaskSpec, seed: int, run: _Run, t0: float
) -> tuple[EpisodeResult, Future[Path] | None]:
    """One episode of ``agent`` on ``task``, its trace handed to ``run``'s writer; returns the
    result and the write's future (None without an output folder). ``t0`` is when the episode's
    wall time starts (``time.perf_counter``)."""
    result, trace, _ = play_trace(agent, env, task, seed, between=run.report_ready)
    result.wall_s = time.perf_counter() - t0
    return result, run.write(task, trace)


def _utc_now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def infra_result(task: TaskSpec, seed: int, kind: str, wall_s: float = 0.0, device: str | None = None) -> EpisodeResult:
    """The result of an episode that played no step: its reset (or every try's) ended in an
    infrastructure error of ``kind``; ``wall_s`` seconds were spent on it."""
    return EpisodeResult(task.id, task.category.value, task.domain.value, False, 0.0, 0, 0, True, 0, wall_s, None,
                         seed, kind, device=device)  # fmt: skip


@dataclass
class DeviceTry:
    """One try of an episode on a leased device (:func:`try_on_device`).

    ``failure`` says why the device lost the try, None when it held up; ``trace`` is None when
    the try never got past reset."""

    result: EpisodeResult
    trace: Any
    failure: str | None


def _device_failure(trace: Any) -> str | None:
    """The first infrastructure feedback of a trace's steps, in words."""
    for step in trace.steps:
        fb = step.feedback
        if getattr(fb, "infrastructure", False):
            err = getattr(getattr(fb, "error", None), "value", None) or "device_error"
            return f"step {step.index}: {err}: {fb.message or ''}".strip()
    return None


def try_on_device(
    agent: AgentLike,
    env_for: Callable[[], Any],
    drop_env: Callable[[], None],
    task: TaskSpec,
    seed: int,
    between: Callable[[], None] | None = None,
) -> DeviceTry:
    """Play one try of ``task`` on a leased device, as every runner does (local pools and Ray
    actors alike): ``env_for()`` gives the device's env; a construction or reset that raises
    :class:`~phoneenv.errors.InfrastructureError` loses the try (no trace), and so does a step
    whose feedback is a device fault, which ends the episode at once (its trace kept). An
    infrastructure error of the agent's own (its model server) is not the device's. ``drop_env``
    is called when the device lost the try (its env is not reused). Other exceptions propagate."""
    t0 = time.perf_counter()
    try:
        env = env_for()
        result, trace, agent_failed = play_trace(agent, env, task, seed, abort_on_device_fault=True, between=between)
    except InfrastructureError as exc:
        drop_env()
        kind = getattr(exc, "kind", None) or "device"
        return DeviceTry(infra_result(task, seed, kind, time.perf_counter() - t0), None, f"{kind}: {exc}")
    result.wall_s = time.perf_counter() - t0
    if result.infrastructure_error and not agent_failed:
        drop_env()
        return DeviceTry(result, trace, _device_failure(trace) or "the device failed during the episode")
    return DeviceTry(result, trace, None)


class DeviceTries:
    """The tries of one episode on leased devices, and the episode they make: the last try played,
    with every try in ``Trace.attempts`` (a lost try keeps the steps it played), ``attempts`` and
    ``time_lost_s`` on the result. Local pools (:class:`Pooled`) and Ray
    (:func:`phoneenv.farm.distributed.run_episodes_ray`) both build their episodes with it."""

    def __init__(self, task: TaskSpec, seed: int, agent_name: str) -> None:
        self.task = task
        self.seed = seed
        self.agent_name = agent_name
        self.attempts: list[Any] = []
        self.lost_s = 0.0
        self.last_kind = "pool"
        self.last_device: str | None = None
        self.played: tuple[EpisodeResult, Any] | None = None  # the last try that got past reset

    def add(self, device: str, started: str, one: DeviceTry) -> None:
        """Record try ``one`` on ``device`` (``started``: ISO 8601 UTC)."""
        from phoneenv.contract import Attempt

        wall = one.result.wall_s
        self.last_device = device
        one.result.device = device
        if one.failure is None:
            self.attempts.append(Attempt(device=device, started=started, wall_s=wall))
            self.played = (one.result, one.trace)
            return
        kind = one.result.infrastructure_kind or "device"
        steps = list(one.trace.steps) if one.trace is not None else []
        self.attempts.append(
            Attempt(device=device, started=started, wall_s=wall, failure=one.failure[:500], kind=kind, steps=steps)
        )
        self.lost_s += wall
        self.last_kind = kind
        if one.trace is not None:
            self.played = (one.result, one.trace.model_copy(deep=True))

    def no_device(self) -> None:
        """The pool had no device for the next try."""
        self.last_kind = "pool"

    def outcome(self) -> tuple[EpisodeResult, Any]:
        """The episode: the try that held up; else the last try played, labelled as lost to the
        infrastructure; else (no try got past reset, or no device at all) a result with no steps
        and a trace of the tries alone."""
        from phoneenv.contract import Trace

        if self.played is not None:
            result, trace = self.played
            if not self.attempts or self.attempts[-1].failure is not None:  # every try lost
                result.infrastructure_error = True
                result.success = False
                result.infrastructure_kind = self.last_kind
        else:
            trace = Trace(
                task_id=self.task.id, seed=self.seed, backend="device", category=self.task.category,
                domain=self.task.domain, goal=self.task.goal, agent=self.agent_name,
            )  # fmt: skip
            result = infra_result(self.task, self.seed, self.last_kind, self.lost_s, self.last_device)
        trace.attempts = self.attempts
        result.attempts = len(self.attempts)
        result.time_lost_s = self.lost_s
        return result, trace


class Pooled:
    """Plays episodes on devices leased from a pool, re-running a try lost to its device from
    reset on another device, up to ``max_attempts`` tries (see :func:`run_episodes`)."""

    def __init__(
        self,
        agent: AgentLike,
        tasks: list[TaskSpec],
        pool: Any,
        max_attempts: int,
        env_kwargs: dict[str, Any],
        device_options: dict[str, Any],
        lease_timeout_s: float,
        seed: int,
        out_dir: Path | None,
    ) -> None:
        self.seed = seed
        self.out_dir = out_dir
        self.agent = agent
        self.tasks = tasks
        self.pool = pool
        self.max_attempts = max_attempts
        self.env_kwargs = env_kwargs
        self.device_options = device_options
        self.lease_timeout_s = lease_timeout_s
        self.envs: dict[str, Any] = {}
        self.exhausted: BaseException | None = None

    def env_for(self, lease: Any) -> Any:
        from phoneenv.backends.adb import AdbBackend
        from phoneenv.env import PhonePlanEnv

        if lease.serial not in self.envs:
            kind = "emulator" if str(lease.kind) == "emulator" else "device"
            backend = AdbBackend(
                serial=lease.serial, adb_host=lease.adb_host, adb_port=lease.adb_port, kind=kind,
                **self.device_options,
            )  # fmt: skip
            self.envs[lease.serial] = PhonePlanEnv(tasks=self.tasks, backend=backend, **self.env_kwargs)
        return self.envs[lease.serial]

    def drop_env(self, serial: str) -> None:
        env = self.envs.pop(serial, None)
        if env is not None:
            with contextlib.suppress(Exception):
                env.close()

    def play(self, task: TaskSpec, seed: int, between: Callable[[], None] | None = None) -> tuple[EpisodeResult, Any]:
        """Play ``task`` until a try is not lost to its device (or the tries run out); returns
        the result (``trace_path`` None) and the trace with every try in ``attempts``
        (:class:`DeviceTries`). When the pool has no device left, :attr:`exhausted` holds why
        and the result is an infrastructure error."""
        from phoneenv.farm.pool import PoolExhausted

        tries = DeviceTries(task, seed, self.agent.name)
        for _ in range(self.max_attempts):
            try:
                lease = self.pool.lease(timeout_s=self.lease_timeout_s)
            except PoolExhausted as exc:
                log.error("no device for %s: %s", task.id, exc)
                self.exhausted = exc
                tries.no_device()
                break
            started = _utc_now()
            try:
                one = try_on_device(
                    self.agent, partial(self.env_for, lease), partial(self.drop_env, lease.serial), task, seed, between
                )
            except BaseException:
                self.pool.release(lease)
                raise
            self.pool.release(lease, failed=one.failure)
            tries.add(lease.serial, started, one)
            if one.failure is None:
                break
            log.warning("try %d of %s on %s lost to the device: %s", len(tries.attempts), task.id, lease.serial,
                        one.failure)  # fmt: skip
        return tries.outcome()

    def close(self) -> None:
        for serial in list(self.envs):
            self.drop_env(serial)


def trace_name(task_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", task_id) + ".jsonl"


@dataclass
class InfraRetry:
    """How :func:`run_episodes` waits out an infrastructure outage (a device or model server gone
    for a while) instead of ending the run at the first blip.

    An outage starts at the first infrastructure failure after a good episode and ends at the
    next episode that is not an infrastructure error. Failures are a ``reset`` (or the env's
    construction) raising :class:`~phoneenv.llm.InfrastructureError`, which is retried on the
    same task, and an episode that ends as an infrastructure error, which is kept and followed
    by a wait before the next task. Waits grow exponentially with jitter (tenacity's
    ``wait_exponential_jitter``: about 1, 2, 4, 8... seconds plus up to ``jitter_s``, at most
    ``max_wait_s``), never past what is left of the budget. When an outage has lasted
    ``budget_s`` seconds (waits and attempts together), the run stops.

    Args:
        budget_s: seconds an outage may last before the run stops (>= 0; 0: stop at the first
            failed reset).
        max_wait_s: longest single wait, seconds.
        jitter_s: up to this many random seconds added to each wait.
        sleep: waits the given seconds (``time.sleep``; tests pass a fake).
        clock: monotonic seconds (``time.monotonic``; tests pass a fake that ``sleep`` advances).
    """

    budget_s: float = 300.0
    max_wait_s: float = 30.0
    jitter_s: float = 1.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    def __post_init__(self) -> None:
        if self.budget_s < 0 or self.max_wait_s < 0 or self.jitter_s < 0:
            raise ValueError(f"InfraRetry takes seconds >= 0, not {self}")


class _Outage:
    """The current run of infrastructure failures: when it started and how many there were."""

    def __init__(self, policy: InfraRetry) -> None:
        self.policy = policy
        self.started: float | None = None
        self.failures = 0
        self._wait = tenacity.wait_exponential_jitter(max=policy.max_wait_s, jitter=policy.jitter_s)

    def fail(self) -> None:
        if self.started is None:
            self.started = self.policy.clock()
        self.failures += 1

    def elapsed(self) -> float:
        return 0.0 if self.started is None else self.policy.clock() - self.started

    def spent(self) -> bool:
        return self.started is not None and self.elapsed() >= self.policy.budget_s

    def next_wait(self) -> float:
        state = tenacity.RetryCallState(None, None, (), {})  # type: ignore[arg-type]
        state.attempt_number = max(self.failures, 1)
        return max(0.0, min(self._wait(state), self.policy.budget_s - self.elapsed()))

    def clear(self) -> None:
        self.started, self.failures = None, 0


def run_episodes(
    agent: AgentLike,
    tasks: Iterable[TaskSpec],
    out_dir: Path | None = None,
    *,
    seed: int = 0,
    on_episode: Callable[[EpisodeResult], None] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    max_consecutive_infra: int | None = None,
    infra_retry: InfraRetry | None = None,
    pool: Any = None,
    max_attempts: int = 3,
    device_options: dict[str, Any] | None = None,
    lease_timeout_s: float = 300.0,
    concurrency: int = 1,
    agent_factory: Callable[[], AgentLike] | None = None,
    seeds: Sequence[int] | None = None,
) -> list[EpisodeResult]:
    """Run ``agent`` once on each task through ``PhonePlan-v0`` (once per task and seed with
    ``seeds``); return the results in order.

    Args:
        agent: the planner.
        tasks: the tasks to run.
        out_dir: where ``<task_id>.jsonl`` traces go (one line: the :class:`Trace`, written
            atomically after the episode by the run's :class:`TraceWriter`); with ``seeds``,
            ``<out_dir>/seed-<s>/<task_id>.jsonl`` (:func:`seed_folder`); None: none.
        seed: the episode seed passed to ``reset`` (ignored with ``seeds``).
        seeds: several episode seeds (distinct, >= 0): every task is played at each, the
            seeds in the order given, all tasks at one seed before the next seed (so a run
            stopped early has whole passes); results in that order. For pass@k and pass^k
            (:func:`pass_k`, in :func:`score`'s scoreboard).
        on_episode: called after each episode, once its trace is on disk (progress bars, the
            ``results.jsonl`` of :class:`RunFolder`), on the calling thread, in task order.
        env_kwargs: keyword arguments for the env (``backend``, ``simulator``, ``screenshots``...);
            ``backend="auto"`` (the default) runs each task on the first backend it declares.
        max_consecutive_infra: stop after this many infrastructure-error episodes in a row (a
            dead model server, a lost device) by raising :class:`~phoneenv.llm.InfrastructureError`;
            the episodes before it are already reported through ``on_episode``.
        infra_retry: how to wait out an outage (:class:`InfraRetry`). None: no waiting, a
            ``reset`` that raises gives an infrastructure-error episode at once and the run goes
            on (counted by ``max_consecutive_infra``).
        pool: a :class:`~phoneenv.farm.pool.DevicePool`: each episode leases a device and runs
            on an :class:`~phoneenv.backends.adb.AdbBackend` for it (``env_kwargs["backend"]`` is
            ignored). A try lost to its device (reset raising an ``InfrastructureError``, or an
            episode ended by a device fault: the first infrastructure feedback ends it) is
            released as failed (the pool quarantines and heals the device) and re-run from reset
            on another device; the trace written is the last try's, with every try in
            ``Trace.attempts``. When the pool has no device left, that episode is an
            infrastructure error and the run stops with :class:`~phoneenv.farm.pool.PoolExhausted`.
        max_attempts: tries per episode with a pool (>= 1).
        device_options: keyword arguments for each ``AdbBackend`` (``timeout_s``, ...).
        lease_timeout_s: seconds to wait for a free healthy device before the pool is exhausted.
        concurrency: episodes in flight at once (>= 1). Above 1 the episodes run on an
            ``asyncio`` event loop on the calling thread, at most ``concurrency`` at a time, each
            with its own env and agent: an agent with an ``aact`` coroutine (the LLM planner
            over a served model, :meth:`~agents.llm.client.OpenAIChatClient.achat`) waits on its
            model while the others step, so N requests are in flight; other agents, and the env
            steps, run inline one at a time. Episodes are reported (``on_episode``) and returned
            in task order, with the same results and traces as ``concurrency=1`` for agents
            whose decisions depend only on the episode (seeded per episode). An episode that
            raises lets the ones in flight finish and be reported before the error propagates.
            Not with ``pool``.
        agent_factory: makes another agent like ``agent`` (called at most ``concurrency - 1``
            times: one agent per episode in flight; required when ``concurrency`` > 1).

    Raises:
        ValueError: ``concurrency`` < 1, ``concurrency`` > 1 without ``agent_factory`` or with a
            ``pool``, ``max_attempts`` < 1, or ``seeds`` empty, negative or repeated.
        InfrastructureError: ``max_consecutive_infra`` infrastructure-error episodes in a row, or
            an outage that outlasted ``infra_retry.budget_s``; every finished episode (and the
            failed reset's infrastructure-error episode) has been reported first.
        Exception: whatever a bug raises inside an episode propagates as is; the episodes
            before it have been reported. The envs are closed in every case.

    A ``reset`` that raises :class:`~phoneenv.llm.InfrastructureError` (a device that is gone or
    refuses the task's fixtures) gives an episode with ``infrastructure_error=True``, no steps and
    no trace: at once without ``infra_retry``, or when the outage has spent its budget with it
    (after which the run stops).
    """
    tasks = list(tasks)
    if seeds is not None:
        seeds = check_seeds(seeds)
        out: list[EpisodeResult] = []
        for s in seeds:
            out += run_episodes(
                agent, tasks, None if out_dir is None else Path(out_dir) / seed_folder(s), seed=s,
                on_episode=on_episode, env_kwargs=env_kwargs, max_consecutive_infra=max_consecutive_infra,
                infra_retry=infra_retry, pool=pool, max_attempts=max_attempts, device_options=device_options,
                lease_timeout_s=lease_timeout_s, concurrency=concurrency, agent_factory=agent_factory,
            )  # fmt: skip
        return out
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, not {max_attempts}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, not {concurrency}")
    if concurrency > 1 and pool is not None:
        raise ValueError("concurrency > 1 is for one process against a served model, not a device pool")
    if concurrency > 1 and agent_factory is None:
        raise ValueError("concurrency > 1 needs agent_factory: one agent per episode in flight")
    if not tasks:
        return []
    run = _Run(agent, tasks, out_dir, seed, on_episode, env_kwargs, max_consecutive_infra, infra_retry)
    pooled = (
        Pooled(agent, tasks, pool, max_attempts, run.env_kwargs, dict(device_options or {}), lease_timeout_s, seed,
                out_dir)
        if pool is not None
        else None
    )  # fmt: skip
    try:
        if concurrency > 1:
            asyncio.run(run.concurrent(concurrency, agent_factory))  # type: ignore[arg-type]
        else:
            run.sequential(pooled)
    except BaseException:
        run.close(pooled, quiet=True)
        raise
    run.close(pooled, quiet=False)
    return run.reporter.results


def seed_folder(seed: int) -> str:
    """The folder of a seed's traces in a run of several seeds: ``seed-<seed>``."""
    return f"seed-{seed}"


def check_seeds(seeds: Iterable[int]) -> list[int]:
    """``seeds`` as a list, checked: not empty, integers >= 0, no repeat.

    Raises:
        ValueError: naming what is wrong.
    """
    out = list(seeds)
    if not out:
        raise ValueError("seeds is empty: give at least one episode seed")
    bad = [s for s in out if isinstance(s, bool) or not isinstance(s, int) or s < 0]
    if bad:
        raise ValueError(f"seeds must be integers >= 0, not {bad[0]!r}")
    repeated = sorted(s for s, n in Counter(out).items() if n > 1)
    if repeated:
        raise ValueError(f"seeds repeat {repeated}: each seed gives the same episode again")
    return out


class RunLedger:
    """What every runner of episodes shares (:func:`run_episodes` here, sequential, concurrent or
    on a device pool, and :func:`phoneenv.farm.distributed.run_episodes_ray`): the trace writer,
    the reporter that hands each finished episode to ``on_episode`` once its trace is on disk, and
    the infrastructure rules (:meth:`judge`: episodes in a row, an outage's budget).

    Args:
        out_dir: where traces go (``<task_id>.jsonl``), None for none.
        seed: the episodes' seed.
        on_episode: called with each finished result, in the order they are reported.
        max_consecutive_infra: infrastructure-error episodes in a row that stop the run (None:
            no limit).
        infra_retry: how an outage is waited out (None: not at all).
    """

    def __init__(
        self,
        out_dir: Path | None,
        seed: int,
        on_episode: Callable[[EpisodeResult], None] | None,
        max_consecutive_infra: int | None,
        infra_retry: InfraRetry | None,
    ) -> None:
        self.seed = seed
        self.max_consecutive_infra = max_consecutive_infra
        self.infra_retry = infra_retry
        self.policy = infra_retry if infra_retry is not None else InfraRetry(budget_s=0.0)
        self.outage = _Outage(self.policy)
        self.writer = TraceWriter(out_dir) if out_dir is not None else None
        self.reporter = _Reporter(on_episode)
        self.streak = 0

    def write(self, task: TaskSpec, trace: Any) -> Future[Path] | None:
        """Hand the trace (a :class:`~phoneenv.contract.Trace`, serialised here before the env
        is reused, or its JSON line) to the writer; None without an output folder."""
        if self.writer is None:
            return None
        return self.writer.submit(task.id, trace if isinstance(trace, str) else trace.model_dump_json() + "\n")

    def report_ready(self) -> None:
        """Report the finished episodes whose traces are on disk by now (called between the steps
        of the next episode, so an episode is reported within a step of its file being written,
        not one whole episode later: a run killed meanwhile keeps it in ``results.jsonl``)."""
        self.reporter.drain(wait=False)

    def retry_kwargs(self) -> dict[str, Any]:
        """tenacity's arguments for retrying a reset that raised an InfrastructureError, within the
        outage budget (the callable retried takes the task first)."""
        policy, outage = self.policy, self.outage

        def before_sleep(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.warning(
                "reset of %s failed (%s); retrying in %.1f s (%.0f of %.0f s of the outage budget left)",
                state.args[0].id, exc, state.upcoming_sleep, policy.budget_s - outage.elapsed(), policy.budget_s,
            )  # fmt: skip

        return {
            "retry": tenacity.retry_if_exception_type(InfrastructureError),
            "after": lambda state: outage.fail(),  # runs first, then wait, then stop
            "stop": lambda state: outage.spent(),
            "wait": lambda state: outage.next_wait(),
            "before_sleep": before_sleep,
            "reraise": True,
        }

    def judge(self, task: TaskSpec, res: EpisodeResult, reason: BaseException | None, last: bool) -> float:
        """Apply the run's infrastructure rules to an episode just reported (in task order):
        raise :class:`InfrastructureError` when the run must stop; return the seconds to wait
        before the next task (an outage being waited out), else 0."""
        policy, outage = self.policy, self.outage
        if self.infra_retry is not None and reason is not None:
            raise InfrastructureError(
                f"the infrastructure failed for {outage.elapsed():.0f} s, past the {policy.budget_s:g} s budget "
                f"({outage.failures} failures); the last: {reason}",
                kind=getattr(reason, "kind", "connection"),
            ) from reason
        if not res.infrastructure_error:
            outage.clear()
            self.streak = 0
            return 0.0
        self.streak += 1
        if self.max_consecutive_infra is not None and self.streak >= self.max_consecutive_infra:
            kind = getattr(reason, "kind", None) or res.infrastructure_kind or "connection"
            detail = f"the last: {reason}" if reason is not None else f"the last: {kind}; is the model server up?"
            raise InfrastructureError(
                f"{self.streak} episodes in a row ended in an infrastructure error; {detail}", kind=kind
            ) from reason
        if self.infra_retry is None:
            return 0.0
        outage.fail()
        if outage.spent():
            raise InfrastructureError(
                f"the infrastructure failed for {outage.elapsed():.0f} s, past the {policy.budget_s:g} s "
                f"budget ({outage.failures} failures); the last episode, of {task.id}, ended in an "
                "infrastructure error",
                kind="connection",
            )
        if last:
            return 0.0
        wait = outage.next_wait()
        log.warning("%s ended in an infrastructure error; waiting %.1f s before the next task", task.id, wait)
        return wait

    def finish_writes(self, *, quiet: bool) -> None:
        """Wait for the traces and report the episodes still waiting for theirs. ``quiet``: an
        error is already propagating, so a failed trace write does not replace it."""
        if self.writer is not None:
            self.writer.close()
        if quiet:
            with contextlib.suppress(OSError):
                self.reporter.drain(wait=True)
        else:
            self.reporter.drain(wait=True)


class _Run(RunLedger):
    """One call of :func:`run_episodes`: a :class:`RunLedger` and the envs it plays on."""

    def __init__(
        self,
        agent: AgentLike,
        tasks: list[TaskSpec],
        out_dir: Path | None,
        seed: int,
        on_episode: Callable[[EpisodeResult], None] | None,
        env_kwargs: dict[str, Any] | None,
        max_consecutive_infra: int | None,
        infra_retry: InfraRetry | None,
    ) -> None:
        super().__init__(out_dir, seed, on_episode, max_consecutive_infra, infra_retry)
        self.agent = agent
        self.tasks = tasks
        self.env_kwargs = dict(env_kwargs or {})
        self.backend = self.env_kwargs.pop("backend", "auto")
        self.envs: list[Any] = []  # every env made, to close
        self.free: dict[str, list[Any]] = defaultdict(list)  # envs not in an episode, by backend

    def backend_of(self, task: TaskSpec) -> str:
        return task.backends[0] if self.backend == "auto" else self.backend

    def take_env(self, name: str) -> Any:
        """A free env of backend ``name`` (made on first need); give it back with :meth:`give_env`."""
        from phoneenv.env import PhonePlanEnv

        if self.free[name]:
            return self.free[name].pop()
        env = PhonePlanEnv(tasks=self.tasks, backend=name, **self.env_kwargs)
        self.envs.append(env)
        return env

    def give_env(self, name: str, env: Any) -> None:
        self.free[name].append(env)

    def reset_failed(self, task: TaskSpec, t0: float, exc: InfrastructureError, name: str) -> EpisodeResult:
        log.warning("reset of %s failed on %s: %s", task.id, name, exc)
        return infra_result(task, self.seed, getattr(exc, "kind", "connection"), time.perf_counter() - t0)

    def sequential(self, pooled: Pooled | None) -> None:
        """Play the tasks one after another (``concurrency=1``)."""

        def attempt(task: TaskSpec, name: str) -> tuple[EpisodeResult, Future[Path] | None]:
            t0 = time.perf_counter()  # the episode's own wall time, without the waits before it
            env = self.take_env(name)
            try:
                return _play(self.agent, env, task, self.seed, self, t0)
            finally:
                self.give_env(name, env)

        retrying = tenacity.Retrying(sleep=self.policy.sleep, **self.retry_kwargs())
        for k, task in enumerate(self.tasks):
            name = self.backend_of(task)
            t0 = time.perf_counter()
            reason: BaseException | None = None
            written: Future[Path] | None = None
            try:
                if pooled is None:
                    res, written = retrying(attempt, task, name)
                else:
                    res, written = _pooled_episode(pooled, task, self)
            except InfrastructureError as exc:  # from reset: a device lost or refusing the fixtures
                reason = exc
                res = self.reset_failed(task, t0, exc, name)
            self.reporter.add(res, written)
            if pooled is not None and pooled.exhausted is not None:
                raise pooled.exhausted
            wait = self.judge(task, res, reason, k + 1 == len(self.tasks))
            if wait:
                self.policy.sleep(wait)

    async def concurrent(self, concurrency: int, agent_factory: Callable[[], AgentLike]) -> None:
        """Play the tasks with up to ``concurrency`` episodes in flight (see :func:`run_episodes`)."""
        agents = [self.agent]
        todo = iter(enumerate(self.tasks))
        finished: dict[int, tuple[EpisodeResult, Future[Path] | None, BaseException | None]] = {}
        next_k = 0
        stop: list[BaseException] = []  # the first reason to stop, then no new episode starts
        gate = asyncio.Lock()  # held while an outage is waited out: no episode starts meanwhile
        in_order = asyncio.Lock()
        sleep = self.policy.sleep

        async def asleep(seconds: float) -> None:
            if sleep is time.sleep:
                await asyncio.sleep(seconds)
            else:  # a test's fake clock
                sleep(seconds)

        retrying = tenacity.AsyncRetrying(sleep=asleep, **self.retry_kwargs())

        async def attempt(task: TaskSpec, name: str, agent: AgentLike) -> tuple[EpisodeResult, Future[Path] | None]:
            t0 = time.perf_counter()
            env = self.take_env(name)
            try:
                result, trace, _ = await _aplay_trace(agent, env, task, self.seed)
                written = self.write(task, trace)
            finally:
                self.give_env(name, env)
            result.wall_s = time.perf_counter() - t0
            return result, written

        async def report() -> None:
            nonlocal next_k
            async with in_order:
                while next_k in finished and not stop:
                    res, written, reason = finished.pop(next_k)
                    self.reporter.add(res, written)
                    task = self.tasks[next_k]
                    next_k += 1
                    try:
                        wait = self.judge(task, res, reason, next_k == len(self.tasks))
                    except InfrastructureError as exc:
                        stop.append(exc)
                        return
                    if wait:
                        async with gate:
                            await asleep(wait)

        async def worker() -> None:
            while not stop:
                async with gate:
                    pass
                try:
                    k, task = next(todo)
                except StopIteration:
                    return
                agent = agents.pop() if agents else agent_factory()
                name = self.backend_of(task)
                t0 = time.perf_counter()
                reason: BaseException | None = None
                written: Future[Path] | None = None
                try:
                    res, written = await retrying(attempt, task, name, agent)
                except InfrastructureError as exc:
                    reason = exc
                    res = self.reset_failed(task, t0, exc, name)
                except Exception as exc:  # a bug: the episodes in flight finish, then it propagates
                    stop.append(exc)
                    return
                finally:
                    agents.append(agent)
                finished[k] = (res, written, reason)
                await report()

        try:
            await asyncio.gather(*(worker() for _ in range(min(concurrency, len(self.tasks)))))
        finally:
            await _aclose_clients([*agents, self.agent])
            for k in sorted(finished):  # finished after a stop, or after an episode that raised
                res, written, _ = finished.pop(k)
                self.reporter.add(res, written)
        if stop:
            raise stop[0]

    def close(self, pooled: Pooled | None, *, quiet: bool) -> None:
        """Close the envs and the pool's, wait for the traces and report the episodes still
        waiting for theirs. ``quiet``: an error is already propagating, so a failed trace write
        does not replace it."""
        try:
            for env in self.envs:
                env.close()
            if pooled is not None:
                pooled.close()
        finally:
            self.finish_writes(quiet=quiet)


async def _aclose_clients(agents: list[Any]) -> None:
    """Close the async HTTP clients the agents' model clients opened on this event loop
    (``aclose()``), so none outlives the loop."""
    seen: set[int] = set()
    for agent in agents:
        client = getattr(agent, "client", None)
        aclose = getattr(client, "aclose", None)
        if aclose is None or id(client) in seen:
            continue
        seen.add(id(client))
        with contextlib.suppress(Exception):
            await aclose()


def _pooled_episode(pooled: Pooled, task: TaskSpec, run: _Run) -> tuple[EpisodeResult, Future[Path] | None]:
    """One episode through the pool, its trace handed to the run's writer."""
    t0 = time.perf_counter()
    res, trace = pooled.play(task, pooled.seed, between=run.report_ready)
    res.wall_s = time.perf_counter() - t0
    return res, run.write(task, trace)


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
    Qwen-Planner-Agent report quotes cost). ``infrastructure_kinds`` counts the
    infrastructure-error episodes by :attr:`EpisodeResult.infrastructure_kind`. ``farm``, for a
    run on a device pool: ``attempts`` (tries in all), ``retries`` (tries re-run on another
    device), ``time_lost_s`` (wall seconds of the lost tries), ``devices`` (episodes per
    device), and from the pool's report ``retired`` ({serial: reason}), ``quarantined`` (devices
    whose recovery had not ended with the run) and ``recoveries``. ``pass_k``: pass@k and
    pass^k per task and overall (see :func:`pass_k`) when some task has more than one scored
    episode (a run of several seeds); None otherwise. ``model``: the planner's model record
    (:func:`model_record`), None for a planner with no model. ``harness``: the harness version's
    name (:func:`harness_of`), None when none was named; ``suite``: the version of the task set
    the episodes ran (:func:`~phoneenv.loop.runstore.suite_version`; None when a task is not in
    the suite any more). With ``model`` and ``harness``, a score is attributable to a
    (model, harness, suite) triple."""

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
    infrastructure_kinds: dict[str, int] = field(default_factory=dict)
    farm: dict[str, Any] | None = None
    pass_k: dict[str, Any] | None = None
    model: dict[str, Any] | None = None
    harness: str | None = None
    suite: str | None = None

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


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator of the Codex paper (arXiv:2107.03374, 2021): the probability
    that at least one of ``k`` episodes drawn without replacement from ``n`` (``c`` of them
    successes) succeeds, ``1 - C(n-c, k) / C(n, k)``.

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    _check_nck(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k as τ²-bench reports it: the probability that all ``k`` episodes drawn without
    replacement from ``n`` (``c`` successes) succeed, ``C(c, k) / C(n, k)`` (a measure of
    consistency: it falls with ``k`` unless the agent always or never succeeds).

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    _check_nck(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_nck(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, not n={n}, c={c}, k={k}")


def pass_k(results: Iterable[EpisodeResult]) -> dict[str, Any] | None:
    """pass@k and pass^k of episode results, per task and overall, for k = 1 .. the most scored
    episodes of any task (infrastructure-error episodes are left out, as in :func:`score`).

    Returns None when no task has two scored episodes, else ``{"k": [1, ..., K], "pass_at_k":
    [...], "pass_hat_k": [...], "tasks_at_k": [...], "per_task": {task_id: {"n", "c",
    "pass_at_k": [...], "pass_hat_k": [...]}}}``: the lists are indexed by ``k - 1``; a task's lists
    stop at its own ``n``; the overall value at ``k`` is the mean over the ``tasks_at_k`` tasks
    with at least ``k`` scored episodes (None when none has).
    """
    counts: dict[str, list[int]] = {}
    for r in results:
        if r.infrastructure_error:
            continue
        nc = counts.setdefault(r.task_id, [0, 0])
        nc[0] += 1
        nc[1] += bool(r.success)
    if not counts or max(n for n, _ in counts.values()) < 2:
        return None
    top = max(n for n, _ in counts.values())
    per_task = {
        tid: {
            "n": n,
            "c": c,
            "pass_at_k": [pass_at_k(n, c, k) for k in range(1, n + 1)],
            "pass_hat_k": [pass_hat_k(n, c, k) for k in range(1, n + 1)],
        }
        for tid, (n, c) in counts.items()
    }
    ks = list(range(1, top + 1))
    overall: dict[str, list[Any]] = {"pass_at_k": [], "pass_hat_k": [], "tasks_at_k": []}
    for k in ks:
        rows = [t for t in per_task.values() if t["n"] >= k]
        overall["tasks_at_k"].append(len(rows))
        for key in ("pass_at_k", "pass_hat_k"):
            overall[key].append(sum(t[key][k - 1] for t in rows) / len(rows) if rows else None)
    return {"k": ks, **overall, "per_task": per_task}


def score(
    agent: str,
    results: list[EpisodeResult],
    wall_s: float | None = None,
    price_per_mtok: float | None = None,
    farm: dict[str, Any] | None = None,
    model: dict[str, Any] | None = None,
    harness: str | None = None,
) -> Scoreboard:
    """Aggregate episode results into a :class:`Scoreboard`.

    Overall is the mean over episodes (not over categories). Infrastructure-error episodes are
    counted apart and left out of the success and progress rates. ``farm``: the device pool's
    :meth:`~phoneenv.farm.pool.DevicePool.report`, whose retired devices and recoveries join the
    scoreboard's farm block (made whenever an episode ran on a pooled device or ``farm`` is given).
    With several episodes per task (seeds), the scoreboard's ``pass_k`` holds pass@k and pass^k
    (:func:`pass_k`); the success rates stay means over episodes. ``model``: the planner's
    model record (:func:`model_record` of the agent), kept in the scoreboard as it is; ``harness``:
    the harness version's name (:func:`harness_of`).
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
        infrastructure_kinds=dict(
            sorted(Counter(r.infrastructure_kind or "unknown" for r in results if r.infrastructure_error).items())
        ),
        farm=_farm_block(results, farm),
        pass_k=pass_k(results),
        model=model,
        harness=harness,
        suite=_suite_version({r.task_id for r in results}),
    )


def _suite_version(task_ids: set[str]) -> str | None:
    from phoneenv.loop.runstore import suite_version
    from phoneenv.tasks import get_task

    try:
        return suite_version(get_task(t) for t in sorted(task_ids))
    except KeyError:  # a task of an older suite, or a generated task no longer loaded
        return None


def _farm_block(results: list[EpisodeResult], farm: dict[str, Any] | None) -> dict[str, Any] | None:
    if farm is None and not any(r.device is not None or r.attempts != 1 for r in results):
        return None
    return {
        "attempts": sum(r.attempts for r in results),
        "retries": sum(max(0, r.attempts - 1) for r in results),
        "time_lost_s": round(sum(r.time_lost_s for r in results), 3),
        "devices": dict(sorted(Counter(r.device for r in results if r.device is not None).items())),
        "retired": dict((farm or {}).get("retired", {})),
        "quarantined": dict((farm or {}).get("quarantined", {})),
        "recoveries": dict((farm or {}).get("recoveries", {})),
    }


def write_results(out_dir: Path, results: list[EpisodeResult], board: Scoreboard) -> None:
    """Write ``results.jsonl`` (one line per episode) and ``scoreboard.json`` into ``out_dir``,
    each whole or not at all (see :class:`RunFolder` for results written as they happen)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(out_dir / RunFolder.RESULTS, "".join(json.dumps(asdict(r)) + "\n" for r in results))
    atomic_write(out_dir / RunFolder.SCOREBOARD, json.dumps(board.to_json(), indent=2) + "\n")


_RESULT = TypeAdapter(EpisodeResult)


def read_results(path: Path) -> list[EpisodeResult]:
    """The episodes of a ``results.jsonl`` file, in order ([] when it does not exist).

    A last line that is not a whole result (a run killed while writing it) is dropped with a
    warning. Raises ``ValueError`` naming the line for any other line that is not an
    :class:`EpisodeResult` as JSON, and naming the file when it cannot be read (a folder).
    """
    if not path.exists():
        return []
    try:
        lines = jsonl_lines(path.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:  # a folder where the file should be, no permission
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    while lines and not lines[-1].strip():
        lines.pop()
    out = []
    for n, line in enumerate(lines, 1):
        try:
            out.append(_RESULT.validate_json(line))
        except ValidationError as exc:
            if n == len(lines):
                log.warning("%s: dropped the last line, not a whole result (a run killed mid-write?)", path)
                break
            problem = exc.errors()[0]
            raise ValueError(f"{path}, line {n}: not an episode result ({problem['msg']})") from None
    return out


class RunFolder:
    """The output folder of an eval run, written as the run goes.

    Layout: ``run.json`` (the run's configuration, written at the start), ``traces/<task-id>.jsonl``
    (one :class:`Trace` per episode, written atomically; ``traces/seed-<s>/<task-id>.jsonl`` in a
    run of several seeds), ``results.jsonl`` (one
    :class:`EpisodeResult` per line, appended as each episode ends, after its trace) and
    ``scoreboard.json`` (rewritten atomically). A killed run thus keeps every finished episode,
    with its trace, and :meth:`resume` continues it. The files reach the disk itself in group
    syncs (``os.sync``, or ``fsync`` of ``results.jsonl`` where there is none) at most
    :data:`SYNC_INTERVAL_S` after an episode ends and when the run closes, so a crash of the
    machine (not of the process) loses at most that last second of episodes; one ``fsync`` per
    episode cost about half of an eval's time on a 2-core machine. A run holds the folder's
    ``.lock`` (``flock``) from :meth:`start` or :meth:`resume` to :meth:`close`, so a second run
    on the same folder is refused instead of writing over the first.

    Args:
        path: the folder (created on :meth:`start`).
    """

    MANIFEST = "run.json"
    RESULTS = "results.jsonl"
    SUPERSEDED = "results.superseded.jsonl"
    """Where :meth:`resume` keeps the lines of the episodes it runs again (infrastructure errors),
    appended, so no recorded line is ever lost."""
    SCOREBOARD = "scoreboard.json"
    TRACES = "traces"
    FORMAT = 1

    LOCK = ".lock"
    RECORDED = frozenset({"model_record"})
    """Keys of ``run.json`` that record the run (the model record, with its endpoint) without
    being part of its configuration: :meth:`resume` does not compare them (a model served at
    another address continues the run)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fh: Any = None
        self._lock_fh: Any = None
        self._synced_at = time.monotonic()
        self.redo: set[tuple[str, int]] = set()
        """After :meth:`resume`: the (task id, seed) of the earlier infrastructure-error episodes,
        to run again (``phoneenv eval`` runs them after the episodes never played)."""

    @property
    def traces(self) -> Path:
        """The traces' folder."""
        return self.path / self.TRACES

    def holds_run(self) -> bool:
        """Whether the folder holds (part of) a run: a ``run.json``, a non-empty ``results.jsonl``
        or a ``scoreboard.json``."""
        results = self.path / self.RESULTS
        return (
            (self.path / self.MANIFEST).exists()
            or (self.path / self.SCOREBOARD).exists()
            or (results.exists() and results.stat().st_size > 0)
        )

    def start(self, config: dict[str, Any], *, overwrite: bool = False) -> None:
        """Begin a new run with ``config`` (JSON data; written to ``run.json``).

        Raises :class:`RunConfigError` when the folder already holds a run, unless ``overwrite``,
        which first removes that run's files (``run.json``, ``results.jsonl``,
        ``scoreboard.json`` and the traces; nothing else in the folder), or when another run
        is using the folder.
        """
        self._lock()
        try:
            self._start(config, overwrite)
        except BaseException:
            self.close()
            raise

    def _start(self, config: dict[str, Any], overwrite: bool) -> None:
        if self.holds_run():
            if not overwrite:
                n = self._lines()
                raise RunConfigError(
                    f"{self.path} already holds a run ({n} episodes in {self.RESULTS}); pass --resume to continue "
                    "it, --overwrite to discard it, or another --out"
                )
            self._clear()
        self.traces.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path / self.MANIFEST, json.dumps({"format": self.FORMAT, **config}, indent=2) + "\n")
        atomic_write(self.path / self.RESULTS, "")
        self._open()

    def resume(self, config: dict[str, Any]) -> list[EpisodeResult]:
        """Continue the run in the folder; return the episodes it keeps, in order.

        The configuration must equal the one in ``run.json`` (else :class:`RunConfigError`
        naming the keys that differ). Infrastructure-error episodes are taken out of the run so
        they run again (their keys in :attr:`redo`, their lines appended to
        :data:`SUPERSEDED`); so is a last line cut short by a kill. ``results.jsonl`` is
        rewritten (atomically) with the kept episodes, and new ones are appended after them.

        Raises:
            RunConfigError: no ``run.json`` here, a different configuration, or another run is
                using the folder.
            ValueError: a ``results.jsonl`` line other than the last is not a result.
        """
        if self.path.is_dir():
            self._lock()
        try:
            return self._resume(config)
        except BaseException:
            self.close()
            raise

    def _resume(self, config: dict[str, Any]) -> list[EpisodeResult]:
        manifest = self.path / self.MANIFEST
        if not manifest.exists():
            if self.holds_run():
                raise RunConfigError(
                    f"{self.path} holds results ({self._lines()} episodes) but no {self.MANIFEST} (written by an older "
                    "phoneenv?), so they cannot be resumed; pass --overwrite to discard them, or another --out"
                )
            raise RunConfigError(f"{self.path} holds no run to resume (no {self.MANIFEST}); drop --resume to start one")
        try:
            saved = read_json_file(manifest)
        except (OSError, ValueError) as exc:
            raise RunConfigError(f"{exc}; cannot resume this run") from None
        if not isinstance(saved, dict):
            raise RunConfigError(
                f"{manifest}: not a run manifest (a JSON {type(saved).__name__}); cannot resume this run"
            )
        want = {"format": self.FORMAT, **config}
        differ = sorted(k for k in saved.keys() | want.keys() if k not in self.RECORDED and saved.get(k) != want.get(k))
        if differ:
            shown = "; ".join(f"{k}: run {_short(saved.get(k))}, now {_short(want.get(k))}" for k in differ)
            raise RunConfigError(f"cannot resume {self.path}: this run was made with another configuration ({shown})")
        results = read_results(self.path / self.RESULTS)
        kept = [r for r in results if not r.infrastructure_error]
        again = [r for r in results if r.infrastructure_error]
        self.redo = {(r.task_id, r.seed) for r in again}
        if again:
            log.warning("resuming %s: %d infrastructure-error episodes run again", self.path, len(again))
            with (self.path / self.SUPERSEDED).open("a", encoding="utf-8") as fh:  # kept, never dropped
                fh.write("".join(json.dumps(asdict(r)) + "\n" for r in again))
                fh.flush()
                os.fsync(fh.fileno())
        self.traces.mkdir(parents=True, exist_ok=True)
        for stale in self.traces.glob(".*.tmp"):  # a trace being written when the run was killed
            stale.unlink()
        atomic_write(self.path / self.RESULTS, "".join(json.dumps(asdict(r)) + "\n" for r in kept))
        self._open()
        return kept

    def append(self, result: EpisodeResult) -> None:
        """Append one episode to ``results.jsonl``, handed to the operating system before
        returning (it survives the process being killed) and synced to the disk within
        :data:`SYNC_INTERVAL_S` (see the class)."""
        if self._fh is None:
            raise RuntimeError("RunFolder.append before start() or resume()")
        self._fh.write(json.dumps(asdict(result)) + "\n")
        self._fh.flush()
        if time.monotonic() - self._synced_at >= SYNC_INTERVAL_S:
            self.sync()

    def sync(self) -> None:
        """Flush the run's files to the disk: every trace written so far and ``results.jsonl``."""
        if hasattr(os, "sync"):
            os.sync()  # the traces and results.jsonl in one call
        elif self._fh is not None:
            os.fsync(self._fh.fileno())
        self._synced_at = time.monotonic()

    def write_scoreboard(self, board: Scoreboard) -> None:
        """Write ``scoreboard.json`` atomically."""
        self.path.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path / self.SCOREBOARD, json.dumps(board.to_json(), indent=2) + "\n")

    def close(self) -> None:
        """Sync and close ``results.jsonl`` and release the folder. Idempotent."""
        if self._fh is not None:
            self._fh.flush()
            self.sync()
            self._fh.close()
            self._fh = None
        if self._lock_fh is not None:
            self._lock_fh.close()  # closing the file releases the flock
            self._lock_fh = None

    def _lock(self) -> None:
        """Hold the folder's ``.lock`` (an exclusive ``flock``, released at :meth:`close` or when
        the process dies). Raises :class:`RunConfigError` when another run holds it."""
        if self._lock_fh is not None:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        fh = (self.path / self.LOCK).open("a")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise RunConfigError(
                f"{self.path} is in use by another run (its {self.LOCK} is held); wait for it to end"
            ) from None
        self._lock_fh = fh

    def _open(self) -> None:
        if self._fh is not None:
            self._fh.close()
        self._fh = (self.path / self.RESULTS).open("a", encoding="utf-8")

    def _lines(self) -> int:
        path = self.path / self.RESULTS
        if not path.exists():
            return 0
        with path.open("rb") as fh:
            return sum(1 for line in fh if line.strip())

    def _clear(self) -> None:
        for name in (self.MANIFEST, self.RESULTS, self.SCOREBOARD):
            with contextlib.suppress(FileNotFoundError):
                (self.path / name).unlink()
        if self.traces.is_dir():
            for trace in self.traces.glob("*.jsonl"):
                trace.unlink()


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(value) if isinstance(value, list) else len(text)})"
