"""Episodes on Ray actors, on one machine or many: the driver hands out tasks (and device leases),
the actors play them, the driver writes every trace and result.

    >>> from phoneenv.farm.distributed import AgentSpec, run_episodes_ray
    >>> run = run_episodes_ray(AgentSpec("reference"), tasks, Path("runs/x/traces"), workers=4)  # doctest: +SKIP
    >>> run.results[0].success, run.reruns  # doctest: +SKIP

Each :class:`EpisodeWorker` actor builds its own agent from a picklable :class:`AgentSpec` (name,
seed, LLM settings, as ``phoneenv eval`` takes them) and its own envs: one per backend name
(sandbox, llmsim, hybrid), or one per device serial when the driver leases devices. An actor plays
one episode at a time with :func:`phoneenv.evaluation.play_episode` and sends back the result and
the trace's JSON text; the driver writes the trace atomically and then reports the result through
``on_episode`` (``RunFolder.append`` in ``phoneenv eval``), in the order episodes finish. So a run
that stops, for whatever reason, keeps every finished episode.

The driver shares its rules with :func:`phoneenv.evaluation.run_episodes` rather than restating
them: one :class:`~phoneenv.evaluation.RunLedger` writes the traces, reports each episode once its
trace is on disk and stops the run after ``max_consecutive_infra`` infrastructure errors in a row;
an actor plays a try on a leased device with :func:`~phoneenv.evaluation.try_on_device` and the
driver builds the episode from its tries with :class:`~phoneenv.evaluation.DeviceTries`, the same
calls a device pool makes in one process.

Reproducibility: an episode depends only on the task, the env seed and the agent's seed (the
random agent reseeds from the seed and the task id at each reset), so the same seeds give the same
scores and byte-identical traces as :func:`phoneenv.evaluation.run_episodes` in one process.

Devices: with ``devices=[serials]`` (or ``pool=``, any object with ``lease(timeout_s)`` and
``release(lease, *, failed=None)`` as :class:`phoneenv.farm.pool.DevicePool` has), the driver
leases a device for each episode before sending it to an actor, which plays it on
``AdbBackend(serial=..., adb_host=..., adb_port=...)``; the lease is released when the episode is
back (``failed=`` the reason when the device lost the try: its reset raised an infrastructure
error, or a step's feedback was a device fault, which ends the episode at once, as
:func:`phoneenv.evaluation.run_episodes` does on a pool). A lost try is re-run on another lease up
to ``max_attempts``; the result names its ``device``, counts its ``attempts`` and the
``time_lost_s``, and the trace lists every try in ``attempts`` (as on a pool in one process; a
trace equals the single-process one's but for those tries' devices and times).

Lost workers: an actor that dies (its process killed, its node lost) loses its episode, which is
re-run on another actor; a replacement actor is started when the cluster has room for it within
``replace_timeout_s``. Every re-run is recorded in :attr:`RayRun.reruns` (and logged). Ray's own
task retries are off (``max_task_retries=0``) so that no episode is re-run unseen.

Workers import ``phoneenv`` from where the driver does: when the driver runs from a source
checkout, its root goes on the workers' ``PYTHONPATH`` (``runtime_env``), so a local cluster runs
the same code; machines of a real cluster need phoneenv installed (the farm's Docker image).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phoneenv.contract import TaskSpec
from phoneenv.errors import PhoneEnvError
from phoneenv.evaluation import (
    DeviceTries,
    DeviceTry,
    EpisodeResult,
    RunLedger,
    infra_result,
    play_episode,
)
from phoneenv.extras import require
from phoneenv.llm import InfrastructureError

log = logging.getLogger(__name__)

__all__ = [
    "AgentSpec",
    "ClientSpec",
    "DeviceLease",
    "EpisodeWorker",
    "RayRun",
    "RaySetupError",
    "Rerun",
    "SerialPool",
    "init_ray",
    "run_episodes_ray",
]

# ------------------------------------------------------------------------------------------------
# Picklable specs: what an actor builds its agent and clients from
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientSpec:
    """A chat client to build where it is used (a served model at ``base_url``, or a local model
    folder ``model``), as ``phoneenv eval --sim-base-url/--sim-model`` take it."""

    base_url: str | None
    model: str | None
    api_key: str | None = None

    def build(self) -> Any:
        """The client (:func:`agents.factory.make_client`); raises
        :class:`~agents.factory.AgentSpecError` when neither a served model nor a local folder is
        usable."""
        from agents.factory import make_client

        return make_client(self.base_url, self.model, self.api_key)


@dataclass(frozen=True)
class AgentSpec:
    """How to build a planner in another process: ``name`` (``reference``, ``random`` or
    ``llm``), its ``seed``, and for ``llm`` the settings ``phoneenv eval`` passes (``base_url``,
    ``model``, ``api_key``, ``max_tokens``, ``max_steps``, ``vision``). Any other planner:
    ``factory="package.module:callable"``, called with ``**options`` in the actor (it must be
    importable there)."""

    name: str
    seed: int = 0
    llm: dict[str, Any] | None = None
    factory: str | None = None
    options: dict[str, Any] | None = None

    def build(self) -> Any:
        """A fresh agent (:func:`agents.factory.make_agent`, or the ``factory``); raises
        :class:`~agents.factory.AgentSpecError` for an unknown name or an unusable model, ``ImportError`` /
        ``AttributeError`` for a factory that is not there."""
        if self.factory is not None:
            import importlib

            module, _, attr = self.factory.partition(":")
            return getattr(importlib.import_module(module), attr)(**(self.options or {}))
        from agents.factory import make_agent

        return make_agent(self.name, self.seed, self.llm)


# ------------------------------------------------------------------------------------------------
# Device leases without the pool
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceLease:
    """A device an episode may use: ``serial`` on the adb server ``adb_host:adb_port``."""

    serial: str
    adb_host: str = "127.0.0.1"
    adb_port: int = 5037


class SerialPool:
    """The smallest lease/release pool over fixed serials (no health checks, no recovery): a
    device is free or leased; a released device goes back to the end of the queue, a ``failed``
    one is retired. Same calls as :class:`phoneenv.farm.pool.DevicePool`, which replaces it where
    health checks and recovery are wanted.

    Args:
        serials: the devices (``127.0.0.1:40001``, ``emulator-5554``, ...); not empty.
        adb_host, adb_port: their adb server.
    """

    def __init__(self, serials: Sequence[str], *, adb_host: str = "127.0.0.1", adb_port: int = 5037) -> None:
        if not serials:
            raise ValueError("SerialPool needs at least one serial")
        if len(set(serials)) != len(serials):
            raise ValueError(f"SerialPool got a serial twice: {list(serials)}")
        self._free = deque(DeviceLease(s, adb_host, adb_port) for s in serials)
        self.retired: dict[str, str] = {}

    def lease(self, timeout_s: float = 300.0) -> DeviceLease:
        """A free device. The driver leases only when it has one to give (at most one episode per
        device at a time), so there is no waiting; raises :class:`InfrastructureError` (kind
        ``device``) when every device is leased or retired."""
        if not self._free:
            raise InfrastructureError(
                f"no device left to lease ({len(self.retired)} retired: {self.retired})", kind="device"
            )
        return self._free.popleft()

    def release(self, lease: DeviceLease, *, failed: str | None = None) -> None:
        """Give ``lease`` back; ``failed`` (a reason) retires the device instead."""
        if failed is not None:
            self.retired[lease.serial] = failed
            log.warning("device %s retired: %s", lease.serial, failed)
        else:
            self._free.append(lease)

    @property
    def free(self) -> int:
        """Devices free to lease now."""
        return len(self._free)


# ------------------------------------------------------------------------------------------------
# The actor
# ------------------------------------------------------------------------------------------------


class EpisodeWorker:
    """Plays episodes in its own process (a Ray actor; usable as a plain object too).

    Args:
        agent: how to build the planner (built once, reset at each episode).
        tasks: the run's tasks (the envs' task pool, as :func:`run_episodes` gives it).
        env_kwargs: picklable ``PhonePlanEnv`` arguments (``screenshots``, ``max_steps``,
            ``memory``...); a ``simulator`` given as a :class:`ClientSpec` is built here, and the
            string ``"planner"`` stands for the planner's own client.
        device_options: extra ``AdbBackend`` arguments for leased devices (``timeout_s``...).
    """

    def __init__(
        self,
        agent: AgentSpec,
        tasks: Sequence[TaskSpec],
        env_kwargs: dict[str, Any] | None = None,
        device_options: dict[str, Any] | None = None,
    ) -> None:
        self.agent = agent.build()
        self.tasks = list(tasks)
        kwargs = dict(env_kwargs or {})
        sim = kwargs.get("simulator")
        if isinstance(sim, ClientSpec):
            kwargs["simulator"] = sim.build()
        elif sim == "planner":
            kwargs["simulator"] = self.agent.client
        self.env_kwargs = kwargs
        self.device_options = dict(device_options or {})
        self.envs: dict[Any, Any] = {}

    def pid(self) -> int:
        """This worker's process id (tests kill it to lose a worker)."""
        return os.getpid()

    def ready(self) -> bool:
        """True once the actor is built (the driver waits on it for replacements)."""
        return True

    def _env(self, backend: str, device: DeviceLease | None) -> Any:
        from phoneenv.env import PhonePlanEnv

        key: Any = (device.serial, device.adb_host, device.adb_port) if device is not None else backend
        if key not in self.envs:
            if device is not None:
                from phoneenv.backends.adb import AdbBackend

                target: Any = AdbBackend(
                    serial=device.serial, adb_host=device.adb_host, adb_port=device.adb_port, **self.device_options
                )
            else:
                target = backend
            self.envs[key] = PhonePlanEnv(tasks=self.tasks, backend=target, **self.env_kwargs)
        return self.envs[key]

    def play(
        self, task: TaskSpec, seed: int, backend: str = "sandbox", device: DeviceLease | None = None
    ) -> tuple[EpisodeResult, str | None]:
        """One episode: ``(result, trace JSON)``. A reset (or the env's construction) that raises
        :class:`InfrastructureError` gives an infrastructure-error result with no trace, as
        :func:`run_episodes` does without ``infra_retry``; an env that failed so is dropped and
        built again for the next episode. Other exceptions propagate (a bug)."""
        t0 = time.perf_counter()
        try:
            env = self._env(backend, device)
            return play_episode(self.agent, env, task, seed)
        except InfrastructureError as exc:
            log.warning("reset of %s failed on %s: %s", task.id, device.serial if device else backend, exc)
            self._drop((device.serial, device.adb_host, device.adb_port) if device is not None else backend)
            return infra_result(task, seed, getattr(exc, "kind", "connection"), time.perf_counter() - t0), None

    def play_on_device(
        self, task: TaskSpec, seed: int, device: DeviceLease
    ) -> tuple[EpisodeResult, str | None, str | None]:
        """One episode on a leased device, played as :func:`phoneenv.evaluation.run_episodes`
        plays it on a pool: ``(result, trace JSON or None, failure)``. ``failure`` says why the
        device lost this try (None when it held up): a construction or reset that raised an
        :class:`InfrastructureError` (no trace), or a step whose feedback is a device fault,
        which ends the episode at once (its trace kept). An infrastructure error of the agent's
        own (its model server) is not the device's. Other exceptions propagate (a bug)."""
        from phoneenv.evaluation import try_on_device

        key = (device.serial, device.adb_host, device.adb_port)
        one = try_on_device(self.agent, lambda: self._env("device", device), lambda: self._drop(key), task, seed)
        if one.failure is not None:
            log.warning("%s lost on %s: %s", task.id, device.serial, one.failure)
        text = one.trace.model_dump_json() + "\n" if one.trace is not None else None
        return one.result, text, one.failure

    def _drop(self, key: Any) -> None:
        stale = self.envs.pop(key, None)
        if stale is not None:
            try:
                stale.close()
            except Exception:  # closing a broken env must not hide why it broke
                log.debug("closing the env of %s failed", key, exc_info=True)

    def close(self) -> None:
        """Close every env."""
        for env in self.envs.values():
            env.close()
        self.envs.clear()


# ------------------------------------------------------------------------------------------------
# The driver
# ------------------------------------------------------------------------------------------------


@dataclass
class Rerun:
    """An episode played again: ``reason`` is ``worker_lost`` (its actor died; ``error`` says how)
    or ``device`` (its device failed; the lease was released as failed)."""

    task_id: str
    reason: str
    error: str
    device: str | None = None


@dataclass
class RayRun:
    """What :func:`run_episodes_ray` did: ``results`` in the order episodes finished, every
    re-run, the workers lost and how many actors played."""

    results: list[EpisodeResult] = field(default_factory=list)
    reruns: list[Rerun] = field(default_factory=list)
    workers_lost: int = 0
    workers: int = 0


def _source_root() -> str | None:
    """The folder holding the ``phoneenv`` package when it is a source checkout (not installed
    into site-packages), else None."""
    import phoneenv

    root = Path(phoneenv.__file__).resolve().parents[1]
    return None if root.name in ("site-packages", "dist-packages") else str(root)


class RaySetupError(PhoneEnvError, ConnectionError):
    """Ray could not be started here, or the cluster named could not be joined: a driver setup
    error, raised before any episode runs (no episode is to blame, and there is nothing to resume).
    The message is one line saying what was tried and what Ray answered."""


def init_ray(address: str | None = None, *, num_cpus: int | None = None, **kwargs: Any) -> bool:
    """Connect this process to Ray unless it already is: ``address`` None or ``"local"`` starts
    a Ray of this process's own (``num_cpus`` CPUs, no dashboard), even where a cluster already
    runs on the machine (``ray start --head``, or ``RAY_ADDRESS``: ``"auto"`` joins that one);
    ``"auto"`` or ``HOST:PORT`` joins that cluster (its CPUs are the cluster's: ``num_cpus`` is
    not used). The workers get the driver's source checkout on ``PYTHONPATH`` (see the module).
    Returns True when this call started the connection (the caller shuts it down).

    Raises:
        phoneenv.extras.MissingExtra: ray is not installed (``phoneenv[ray]``).
        RaySetupError: Ray could not be started, or no cluster answers at ``address`` (a
            ``ConnectionError``).
    """
    require("ray", "ray", feature="--ray (episodes on Ray actors)")
    import ray

    if ray.is_initialized():
        return False
    root = _source_root()
    runtime_env = dict(kwargs.pop("runtime_env", None) or {})
    if root is not None:
        env_vars = dict(runtime_env.get("env_vars") or {})
        paths = [root, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]]
        env_vars.setdefault("PYTHONPATH", os.pathsep.join(paths))
        runtime_env["env_vars"] = env_vars
    options: dict[str, Any] = {"runtime_env": runtime_env or None, "configure_logging": False, **kwargs}
    local = address in (None, "local")
    try:
        if local:
            # address="local", not None: Ray takes None as "join the cluster this machine runs, if
            # any" (RAY_ADDRESS, /tmp/ray/ray_current_cluster), where num_cpus is refused.
            options.setdefault("include_dashboard", False)
            ray.init(address="local", num_cpus=num_cpus, **options)
        else:
            ray.init(address=address, **options)
    except Exception as exc:  # Ray raises ValueError, ConnectionError, RuntimeError, TimeoutError...
        with contextlib.suppress(Exception):
            ray.shutdown()
        what = "start a local Ray" if local else f"join the Ray cluster at {address}"
        hint = "" if local else " (is it up? `ray status --address ADDRESS`; `ray start --head` starts one)"
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise RaySetupError(f"cannot {what}: {reason}{hint}") from exc
    return True


def run_episodes_ray(
    agent: AgentSpec,
    tasks: Iterable[TaskSpec],
    out_dir: Path | None = None,
    *,
    seed: int = 0,
    workers: int = 2,
    address: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    on_episode: Callable[[EpisodeResult], None] | None = None,
    devices: Sequence[str] | None = None,
    adb_host: str = "127.0.0.1",
    adb_port: int = 5037,
    pool: Any = None,
    device_options: dict[str, Any] | None = None,
    max_attempts: int = 3,
    max_consecutive_infra: int | None = None,
    num_cpus_per_worker: float = 1.0,
    replace_timeout_s: float = 60.0,
    lease_timeout_s: float = 300.0,
) -> RayRun:
    """Run ``agent`` once on each task on ``workers`` Ray actors; the driver (this process)
    writes each trace to ``out_dir`` and calls ``on_episode`` as each episode comes back.

    Args:
        agent: the planner's spec (built in every actor).
        tasks: the tasks.
        out_dir: where ``<task_id>.jsonl`` traces go (written atomically by the driver); None: none.
        seed: the env seed of every episode.
        workers: actors (≥ 1); with devices, at most one episode per leased device at a time.
        address: None or ``"local"``: a local Ray (started here when this process has none);
            ``"auto"`` or ``HOST:PORT``: that cluster. Ignored when Ray is already initialised.
        env_kwargs: ``PhonePlanEnv`` arguments, picklable (see :class:`EpisodeWorker`);
            ``backend="auto"`` (the default) plays each task on the first backend it declares.
        on_episode: called with each result once its trace is written, in finishing order.
        devices: device serials to lease per episode (a :class:`SerialPool` on ``adb_host``:``adb_port``).
        pool: a device pool instead (``lease(timeout_s)``, ``release(lease, *, failed=None)``, a
            lease with ``serial``, ``adb_host``, ``adb_port``), e.g. ``phoneenv.farm.pool.DevicePool``.
        device_options: extra ``AdbBackend`` arguments.
        max_attempts: plays of one task at most when its worker dies or its device fails; the last
            one's result is kept.
        max_consecutive_infra: stop after this many infrastructure-error episodes in a row.
        num_cpus_per_worker: each actor's CPU reservation.
        replace_timeout_s: how long a replacement for a dead actor may take to start before the
            run goes on without it.
        lease_timeout_s: passed to ``pool.lease``.

    Returns:
        A :class:`RayRun` (results in finishing order).

    Raises:
        InfrastructureError: every worker was lost, the pool has no device left, or
            ``max_consecutive_infra`` in a row; every finished episode was reported first.
        Exception: a bug inside an episode is raised as its own type once the episodes still
            running have come back and been reported. The actors are killed in every case.
        phoneenv.extras.MissingExtra: ray is not installed.
    """
    if workers < 1:
        raise ValueError(f"workers must be ≥ 1, got {workers}")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be ≥ 1, got {max_attempts}")
    if devices is not None and pool is not None:
        raise ValueError("pass devices= or pool=, not both")
    tasks = list(tasks)
    run = RayRun()
    if not tasks:
        return run
    owns_ray = init_ray(address, num_cpus=None if address not in (None, "local") else max(workers, 1))
    import ray
    from ray.exceptions import RayActorError, RayTaskError

    kwargs = dict(env_kwargs or {})
    backend = kwargs.pop("backend", "auto")
    if devices is not None:
        pool = SerialPool(devices, adb_host=adb_host, adb_port=adb_port)
        workers = min(workers, len(devices))
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    remote_cls = ray.remote(EpisodeWorker).options(num_cpus=num_cpus_per_worker, max_restarts=0, max_task_retries=0)
    tasks_ref = ray.put(tasks)

    actors: list[Any] = []  # every actor started, replacements too

    def spawn() -> Any:
        actors.append(remote_cls.remote(agent, tasks_ref, kwargs, device_options))
        return actors[-1]

    for _ in range(workers):
        spawn()
    run.workers = len(actors)
    idle: deque[Any] = deque(actors)
    queue: deque[tuple[TaskSpec, int]] = deque((t, 1) for t in tasks)  # (task, attempt)
    running: dict[Any, tuple[Any, TaskSpec, int, Any, str]] = {}  # ref -> (actor, task, attempt, lease, start)
    tries: dict[str, DeviceTries] = {}  # task id -> its tries on leased devices
    ledger = RunLedger(out_dir, seed, on_episode, max_consecutive_infra, None)
    failure: BaseException | None = None

    def finish(res: EpisodeResult, text: str | None, task: TaskSpec) -> None:
        """Write and report an episode and apply the run's infrastructure rules to it, as
        :func:`~phoneenv.evaluation.run_episodes` does (one :class:`RunLedger`)."""
        nonlocal failure
        if task.id in tries:  # played on leased devices: every try goes into the trace
            res, trace = tries.pop(task.id).outcome()
            text = trace.model_dump_json() + "\n"
        ledger.reporter.add(res, ledger.write(task, text) if text is not None else None)
        if failure is None:
            try:
                ledger.judge(task, res, None, last=False)
            except InfrastructureError as exc:  # the episodes still running finish first
                failure = exc

    try:
        while queue or running:
            while queue and idle and failure is None:
                task, attempt = queue.popleft()
                lease = pool.lease(lease_timeout_s) if pool is not None else None
                actor = idle.popleft()
                if lease is None:
                    name = task.backends[0] if backend == "auto" else backend
                    ref = actor.play.remote(task, seed, name, None)
                else:
                    ref = actor.play_on_device.remote(task, seed, _plain(lease))
                running[ref] = (actor, task, attempt, lease, _utc_now())
            if not running:
                break
            [ref], _ = ray.wait(list(running), num_returns=1)
            actor, task, attempt, lease, started = running.pop(ref)
            try:
                res, text, *lost = ray.get(ref)
            except RayActorError as exc:  # the worker process or its node is gone
                run.workers_lost += 1
                if lease is not None:
                    pool.release(lease)  # the device is not to blame
                log.warning("a Ray worker died playing %s (attempt %d): %s", task.id, attempt, _first_line(exc))
                if failure is None:
                    if attempt < max_attempts:
                        run.reruns.append(Rerun(task.id, "worker_lost", _first_line(exc)))
                        queue.appendleft((task, attempt + 1))
                    else:
                        res = EpisodeResult(task.id, task.category.value, task.domain.value, False, 0.0, 0, 0, True,
                                            0, 0.0, None, seed, "worker_lost")  # fmt: skip
                        finish(res, None, task)
                    replacement = _replace(spawn, replace_timeout_s)
                    if replacement is not None:
                        idle.append(replacement)
                    elif not idle and not running:
                        raise InfrastructureError(
                            f"every Ray worker was lost ({run.workers_lost}); {len(queue)} episodes not played",
                            kind="worker_lost",
                        ) from exc
                continue
            except RayTaskError as exc:  # a bug in the episode: finish what runs, then raise it
                if lease is not None:
                    pool.release(lease)
                idle.append(actor)
                if failure is None:
                    failure = exc.as_instanceof_cause() if hasattr(exc, "as_instanceof_cause") else exc
                continue
            idle.append(actor)
            if lease is not None:
                from phoneenv.contract import Trace

                why: str | None = lost[0] if lost else None
                pool.release(lease, failed=why)
                trace = Trace.model_validate_json(text) if text is not None else None
                tries.setdefault(task.id, DeviceTries(task, seed, agent.name)).add(
                    lease.serial, started, DeviceTry(res, trace, why)
                )
                if why is not None and attempt < max_attempts and failure is None:
                    run.reruns.append(Rerun(task.id, "device", why, lease.serial))
                    log.warning("%s lost on device %s (%s); playing it again on another", task.id, lease.serial, why)
                    queue.appendleft((task, attempt + 1))
                    continue
            finish(res, text, task)
        if failure is not None:
            raise failure
    except BaseException:
        ledger.finish_writes(quiet=True)  # the error that stops the run is the one raised
        raise
    else:
        ledger.finish_writes(quiet=False)
    finally:
        run.results = ledger.reporter.results
        try:  # close the envs (device connections) of the actors that are free
            ray.get([a.close.remote() for a in idle], timeout=10)
        except Exception:
            log.debug("closing the workers' envs failed", exc_info=True)
        for actor in actors:
            try:
                ray.kill(actor)
            except Exception:  # already dead
                log.debug("killing an actor failed", exc_info=True)
        if owns_ray:
            ray.shutdown()
    return run


def _utc_now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def _plain(lease: Any) -> DeviceLease | None:
    """A pool's lease as a picklable :class:`DeviceLease` (a pool's own lease may hold a lock)."""
    if lease is None:
        return None
    return DeviceLease(lease.serial, lease.adb_host, lease.adb_port)


def _replace(spawn: Callable[[], Any], timeout_s: float) -> Any:
    """A new actor once it is up, or None when the cluster has no room for it within ``timeout_s``."""
    import ray

    actor = spawn()
    ready, _ = ray.wait([actor.ready.remote()], timeout=timeout_s)
    if ready:
        try:
            ray.get(ready[0])
            return actor
        except Exception as exc:
            log.warning("a replacement Ray worker failed to start: %s", _first_line(exc))
    else:
        log.warning("no room for a replacement Ray worker within %.0f s; going on without it", timeout_s)
    ray.kill(actor)
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


# ------------------------------------------------------------------------------------------------
# The command line: `phoneenv eval --ray [ADDRESS] --workers N`
# ------------------------------------------------------------------------------------------------

RAY_LOCAL = "local"
"""The ``--ray`` value that starts a local Ray (what ``--ray`` alone means)."""


def ray_flag_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with a bare ``--ray`` (last, or followed by another option) given the value
    :data:`RAY_LOCAL`, so that ``--ray`` alone starts a local Ray while ``--ray ADDRESS`` joins a
    cluster (typer options cannot take an optional value)."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--":
            break
        if arg == "--ray" and (i + 1 == len(out) or out[i + 1].startswith("-")):
            out.insert(i + 1, RAY_LOCAL)
            break
    return out


def eval_runner(
    agent: AgentSpec, address: str, workers: int, *, simulator: ClientSpec | str | None = None
) -> Callable[..., list[EpisodeResult]]:
    """A function with :func:`phoneenv.evaluation.run_episodes`' call shape that plays the
    episodes on Ray (for ``phoneenv eval --ray``): the ``agent`` object it is called with is not
    used (each actor builds its own from ``agent``), ``simulator`` replaces the env's simulator
    client (a :class:`ClientSpec`, or ``"planner"``), and ``infra_retry`` is not supported on Ray
    (an infrastructure-error episode is kept as it is; with devices it is re-run on another).
    Ray is started or joined here (:func:`init_ray`), so that a setup error comes before any
    episode and is not taken for one.

    Raises:
        phoneenv.extras.MissingExtra: ray is not installed (before any episode runs).
        RaySetupError: Ray could not be started, or the cluster at ``address`` joined.
    """
    local = address == RAY_LOCAL
    init_ray(None if local else address, num_cpus=max(workers, 1) if local else None)

    def run(
        _agent: Any,
        tasks: Iterable[TaskSpec],
        out_dir: Path | None = None,
        *,
        seed: int = 0,
        on_episode: Callable[[EpisodeResult], None] | None = None,
        env_kwargs: dict[str, Any] | None = None,
        max_consecutive_infra: int | None = None,
        infra_retry: Any = None,
        pool: Any = None,
        max_attempts: int = 3,
    ) -> list[EpisodeResult]:
        kwargs = dict(env_kwargs or {})
        if simulator is not None:
            kwargs["simulator"] = simulator
        else:
            kwargs.pop("simulator", None)
        done = run_episodes_ray(
            agent,
            tasks,
            out_dir,
            seed=seed,
            workers=workers,
            address=None if address == RAY_LOCAL else address,
            env_kwargs=kwargs,
            on_episode=on_episode,
            max_consecutive_infra=max_consecutive_infra,
            pool=pool,
            max_attempts=max_attempts,
        )
        if done.reruns or done.workers_lost:
            log.warning(
                "Ray: %d workers lost, %d episodes re-run (%s)",
                done.workers_lost,
                len(done.reruns),
                ", ".join(f"{r.task_id}: {r.reason}" for r in done.reruns),
            )
        return done.results

    return run


# ------------------------------------------------------------------------------------------------
# RL rollouts: the envs on actors, the model in the driver
# ------------------------------------------------------------------------------------------------


class EnvActor:
    """One ``gym.make("PhonePlan-v0")`` env in its own process (a Ray actor of
    :class:`RayEnvPool`), driven step by step from the rollout's process."""

    def __init__(self) -> None:
        self.env: Any = None

    def open(self, task_id: str, env_kwargs: dict[str, Any]) -> None:
        """Replace the env with a new one for ``task_id`` (as ``rl.rollout`` makes one per group)."""
        import gymnasium as gym

        import phoneenv  # noqa: F401 - registers PhonePlan-v0

        self.close()
        self.env = gym.make("PhonePlan-v0", task=task_id, **env_kwargs)

    def reset(self, seed: int, task_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """``env.reset(seed=seed, options={"task": task_id})``."""
        return self.env.reset(seed=seed, options={"task": task_id})

    def add_tokens(self, tokens: dict[str, int]) -> None:
        """The model's token counts for the next step's verdict (``add_agent_tokens``)."""
        self.env.get_wrapper_attr("add_agent_tokens")(tokens)

    def step(self, action: str) -> tuple[Any, ...]:
        """``env.step(action)``: ``(obs, reward, terminated, truncated, info)``."""
        return self.env.step(action)

    def close(self) -> None:
        """Close the env (if any)."""
        if self.env is not None:
            self.env.close()
            self.env = None


class RayEnvPool:
    """``size`` :class:`EnvActor` actors that RL rollouts step instead of local envs
    (``rl.rollout.rollout_group(..., env_pool=pool)``): member ``k`` of a group plays on actor
    ``k``, all members' steps of a turn go out together and are awaited together, and the model
    stays in the calling process. Trajectories equal those of the local drivers (the env is the
    same, only where it runs changes).

    Args:
        size: actors (the largest group it can drive).
        address: as :func:`init_ray` (None: a local Ray, unless this process is connected).
        num_cpus_per_env: each actor's CPU reservation.

    Raises:
        ValueError: ``size < 1``; phoneenv.extras.MissingExtra: ray is not installed.
    """

    def __init__(self, size: int, *, address: str | None = None, num_cpus_per_env: float = 1.0) -> None:
        if size < 1:
            raise ValueError(f"size must be ≥ 1, got {size}")
        self._started = init_ray(address, num_cpus=size if address in (None, "local") else None)
        import ray

        remote = ray.remote(EnvActor).options(num_cpus=num_cpus_per_env, max_restarts=0, max_task_retries=0)
        self.actors = [remote.remote() for _ in range(size)]

    def drive(self, n: int, task_id: str, env_kwargs: dict[str, Any]) -> _RayEnvs:
        """A driver for ``n`` members of ``task_id`` (the interface of ``rl.rollout``'s local
        drivers: ``reset``, ``add_tokens``, ``step``, ``close``); ``ValueError`` when ``n`` is
        more than the pool's size."""
        if n > len(self.actors):
            raise ValueError(f"a group of {n} members needs {n} env actors; the pool has {len(self.actors)}")
        return _RayEnvs(self.actors[:n], task_id, env_kwargs)

    def close(self) -> None:
        """Kill the actors (and shut Ray down when this pool started it)."""
        import ray

        for actor in self.actors:
            try:
                ray.kill(actor)
            except Exception:
                log.debug("killing an env actor failed", exc_info=True)
        self.actors = []
        if self._started:
            ray.shutdown()

    def __enter__(self) -> RayEnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _RayEnvs:
    """``rl.rollout``'s env-driver interface over env actors, one member per actor."""

    def __init__(self, actors: list[Any], task_id: str, env_kwargs: dict[str, Any]) -> None:
        import ray

        self.actors = actors
        ray.get([a.open.remote(task_id, env_kwargs) for a in actors])

    def reset(self, seed: int, task_id: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        import ray

        return ray.get([a.reset.remote(seed, task_id) for a in self.actors])

    def add_tokens(self, k: int, tokens: dict[str, int]) -> None:
        self.actors[k].add_tokens.remote(tokens)  # ordered before member k's next step (same caller)

    def step(self, actions: dict[int, str]) -> dict[int, tuple[Any, ...]]:
        import ray

        keys = list(actions)
        outs = ray.get([self.actors[k].step.remote(actions[k]) for k in keys])
        return dict(zip(keys, outs, strict=True))

    def close(self) -> None:
        import ray

        ray.get([a.close.remote() for a in self.actors])
