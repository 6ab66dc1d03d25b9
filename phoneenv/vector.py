"""A vector env for PhonePlan-v0 that costs little per env-step: ``PhonePlanVectorEnv``.

    >>> import gymnasium as gym, phoneenv
    >>> envs = gym.make_vec("PhonePlan-v0", num_envs=64, vectorization_mode="vector_entry_point",
    ...                     workers=2, tasks="category:tool")

Gymnasium's ``SyncVectorEnv`` and ``AsyncVectorEnv`` pay per env-step for their generality (a
pipe round trip per env and step, a deep copy of the observations, info batching in the parent),
which is more than a sandbox step costs. This env runs its ``num_envs`` envs in ``workers``
processes (``0``: in this process), sends each worker its slice of the actions in ONE message per
step and gets the slice's results back in one message, already batched by the worker.

Semantics are Gymnasium's defaults, so results equal ``SyncVectorEnv``'s for the same seeds and
actions: autoreset ``NEXT_STEP`` (the step after an episode ends resets that env: reward 0, not
terminated, the reset's info), infos batched with ``_key`` masks (:meth:`VectorEnv._add_info`),
``reset(seed=int)`` seeds env ``i`` with ``seed + i``, ``options={"reset_mask": ...}``.
Observations are fresh objects every call (no copy needed, nothing reused). ``info["tools"]``
travels once per reset or when an env's offered tools change (interface 1); between processes a
tool list is sent once per worker and then named by reference, and the parent hands out one
list object per distinct list.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import pickle
import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from phoneenv.env import PhonePlanEnv, env_spaces
from phoneenv.errors import PhoneEnvError
from phoneenv.sharing import ReadOnlyDict, ReadOnlyList

__all__ = ["PhonePlanVectorEnv", "WorkerError", "batch_infos"]

_PROTOCOL = pickle.HIGHEST_PROTOCOL


class WorkerError(PhoneEnvError, RuntimeError):
    """A worker process of :class:`PhonePlanVectorEnv` died or could not be reached; the vector
    env is closed (make a new one)."""


class _Unsendable:
    """Stands in for an action that cannot be pickled to a worker process; the env reads it as
    it reads any other non-JSON object (an ``invalid_json`` feedback naming this type)."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"<unsendable {self.kind}>"


class _Infos:
    """Gymnasium's own info batching (:meth:`VectorEnv._add_info`) over ``num_envs`` envs."""

    _add_info = VectorEnv._add_info

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


def batch_infos(infos: Sequence[dict[str, Any] | None], num_envs: int) -> dict[str, Any]:
    """The batched infos that folding :meth:`VectorEnv._add_info` over ``infos[i]`` (env ``i``;
    None: no info) builds, built a key at a time: each key's array (typed by the first env that
    has it: ``int``/``float``/``bool``/NumPy scalars as that dtype, arrays stacked, anything else
    an object array; ``final_obs`` always objects; dicts batched recursively) and its ``_key``
    mask, in the order keys first appear. Gymnasium's fold allocates a mask per env and key; this
    allocates one per key. A key whose values mix dicts and non-dicts is folded by
    ``_add_info`` itself, so the result is the same in every case (``tests/test_vector.py``)."""
    columns: dict[str, list[tuple[int, Any]]] = {}
    for i, info in enumerate(infos):
        if info:
            for key, value in info.items():
                col = columns.get(key)
                if col is None:
                    columns[key] = col = []
                col.append((i, value))
    out: dict[str, Any] = {}
    for key, col in columns.items():
        first = col[0][1]
        nested = [isinstance(v, dict) for _, v in col] if key != "final_obs" else [False]
        if any(nested) and not all(nested):
            folder = _Infos(num_envs)
            sub: dict[str, Any] = {}
            for i, value in col:
                sub = folder._add_info(sub, {key: value}, i)
            out.update(sub)
            continue
        if key == "final_obs":
            array: Any = np.full(num_envs, fill_value=None, dtype=object)
        elif nested[0]:
            parts: list[dict[str, Any] | None] = [None] * num_envs
            for i, value in col:
                parts[i] = value
            array = batch_infos(parts, num_envs)
        elif type(first) in (int, float, bool) or issubclass(type(first), np.number):
            array = np.zeros(num_envs, dtype=type(first))
        elif isinstance(first, np.ndarray):
            array = np.zeros((num_envs, *first.shape), dtype=first.dtype)
        else:
            array = np.full(num_envs, fill_value=None, dtype=object)
        if not nested[0]:
            for i, value in col:
                array[i] = value
        if len(col) == num_envs:
            mask = np.ones(num_envs, dtype=np.bool_)
        else:
            mask = np.zeros(num_envs, dtype=np.bool_)
            mask[[i for i, _ in col]] = True
        out[key] = array
        out[f"_{key}"] = mask
    return out


class _Slice:
    """The envs one process runs, stepped and reset as ``SyncVectorEnv`` does (autoreset
    ``NEXT_STEP``); results come out batched over the slice."""

    def __init__(self, n: int, env_kwargs: dict[str, Any], max_episode_steps: int | None) -> None:
        self.envs: list[Any] = []
        for _ in range(n):
            env: Any = PhonePlanEnv(**env_kwargs)
            if max_episode_steps is not None:
                env = gym.wrappers.TimeLimit(env, max_episode_steps)
            self.envs.append(env)
        self.space = self.envs[0].observation_space
        self.infos = _Infos(n)
        self.obs: list[Any] = [None] * n
        self.autoreset = [False] * n
        self.sent_tools: dict[int, tuple[int, Any]] = {}  # id(list) -> (token, list kept alive)
        self.by_ref = False

    def _batch_obs(self) -> Any:
        """What Gymnasium's ``concatenate`` makes of the slice's observations: a ``Text`` key as
        a tuple of the strings (built here directly), any other key by ``concatenate`` into a
        new array. Raises nothing for observations of the space."""
        obs, n = self.obs, len(self.envs)
        if not isinstance(self.space, gym.spaces.Dict):
            return concatenate(self.space, obs, create_empty_array(self.space, n=n, fn=np.zeros))
        out: dict[str, Any] = {}
        for key, sub in self.space.spaces.items():
            if isinstance(sub, gym.spaces.Text):
                out[key] = tuple(o[key] for o in obs)
            elif isinstance(sub, gym.spaces.Discrete):
                out[key] = np.fromiter((o[key] for o in obs), dtype=sub.dtype, count=n)
            else:
                out[key] = concatenate(sub, [o[key] for o in obs], create_empty_array(sub, n=n, fn=np.zeros))
        return out

    def _tools(self, info: dict[str, Any]) -> dict[str, Any]:
        """Across a pipe, a tool list already sent travels as its token (the parent keeps it)."""
        tools = info.get("tools")
        if tools is None or not self.by_ref:
            return info
        hit = self.sent_tools.get(id(tools))
        if hit is not None and hit[1] is tools:
            return {**info, "tools": _ToolsRef(hit[0])}
        token = len(self.sent_tools)
        self.sent_tools[id(tools)] = (token, tools)
        return {**info, "tools": _ToolsRef(token, tools)}

    def reset(self, seeds: Sequence[int | None], options: dict[str, Any] | None, mask: Any) -> tuple[Any, ...]:
        infos: list[dict[str, Any] | None] = [None] * len(self.envs)
        for i, env in enumerate(self.envs):
            if mask is not None and not mask[i]:
                continue
            self.obs[i], info = env.reset(seed=seeds[i], options=options)
            self.autoreset[i] = False
            infos[i] = self._tools(info)
        return self._batch_obs(), batch_infos(infos, len(self.envs))

    def step(self, actions: Sequence[Any]) -> tuple[Any, ...]:
        n = len(self.envs)
        rewards: list[float] = [0.0] * n
        terms: list[bool] = [False] * n
        truncs: list[bool] = [False] * n
        infos: list[dict[str, Any] | None] = [None] * n
        obs, autoreset = self.obs, self.autoreset
        for i, env in enumerate(self.envs):
            if autoreset[i]:
                obs[i], info = env.reset()
                autoreset[i] = False
            else:
                obs[i], rewards[i], terms[i], truncs[i], info = env.step(actions[i])
                autoreset[i] = bool(terms[i] or truncs[i])
            infos[i] = self._tools(info)
        return (
            self._batch_obs(),
            np.array(rewards, dtype=np.float64),
            np.array(terms, dtype=np.bool_),
            np.array(truncs, dtype=np.bool_),
            batch_infos(infos, n),
        )

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        out = []
        for env in self.envs:
            attr = env.get_wrapper_attr(name)
            out.append(attr(*args, **kwargs) if callable(attr) else attr)
        return out

    def close(self) -> None:
        for env in self.envs:
            env.close()


class _ToolsRef:
    """A tool list sent across a pipe: its token, and the list the first time."""

    __slots__ = ("token", "tools")

    def __init__(self, token: int, tools: Any = None) -> None:
        self.token = token
        self.tools = tools

    def __reduce__(self) -> tuple[Any, ...]:
        return (_ToolsRef, (self.token, None if self.tools is None else list(self.tools)))


def _worker(conn: Connection, n: int, env_kwargs: dict[str, Any], max_episode_steps: int | None) -> None:
    """A worker process: builds its slice, then answers one message per command."""
    try:
        part = _Slice(n, env_kwargs, max_episode_steps)
        part.by_ref = True
        conn.send_bytes(pickle.dumps(("ok", None), _PROTOCOL))
    except BaseException as exc:  # reported to the parent, which raises it
        conn.send_bytes(_error(exc))
        conn.close()
        return
    try:
        while True:
            cmd, *args = pickle.loads(conn.recv_bytes())
            if cmd == "close":
                part.close()
                conn.send_bytes(pickle.dumps(("ok", None), _PROTOCOL))
                return
            try:
                result = getattr(part, cmd)(*args)
                reply = pickle.dumps(("ok", result), _PROTOCOL)
            except Exception as exc:  # an env's error (a bad reset option): the parent raises it
                reply = _error(exc)
            conn.send_bytes(reply)
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    finally:
        conn.close()


def _error(exc: BaseException) -> bytes:
    text = "".join(traceback.format_exception(exc))
    try:
        return pickle.dumps(("error", exc, text), _PROTOCOL)
    except Exception:  # an exception that does not pickle travels as its text
        return pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}"), text), _PROTOCOL)


def _merge_obs(parts: list[Any]) -> Any:
    """Worker slices' batched observations joined in env order (dicts by key, text tuples by
    concatenation, arrays along the first axis)."""
    first = parts[0]
    if isinstance(first, dict):
        return {k: _merge_obs([p[k] for p in parts]) for k in first}
    if isinstance(first, tuple):
        return tuple(x for p in parts for x in p)
    return np.concatenate(parts)


def _merge_infos(parts: list[dict[str, Any]], sizes: list[int], n: int) -> dict[str, Any]:
    """Worker slices' batched infos joined into what :meth:`VectorEnv._add_info` builds over all
    ``n`` envs: each key's array typed by the first env that has it, zeros (``None`` for objects)
    and a False mask for the envs without it."""
    out: dict[str, Any] = {}
    keys: dict[str, None] = {}
    for p in parts:
        keys.update(dict.fromkeys(p))
    starts = np.cumsum([0, *sizes])
    for key in keys:
        present = [(i, p[key]) for i, p in enumerate(parts) if key in p]
        first = present[0][1]
        if isinstance(first, dict):
            sub = [p.get(key, {}) for p in parts]
            out[key] = _merge_infos(sub, sizes, n)
            continue
        if first.dtype == object:
            merged = np.full((n, *first.shape[1:]), None, dtype=object)
        else:
            merged = np.zeros((n, *first.shape[1:]), dtype=first.dtype)
        for i, value in present:
            merged[starts[i] : starts[i + 1]] = value
        out[key] = merged
    return out


class PhonePlanVectorEnv(VectorEnv):
    """``num_envs`` PhonePlan-v0 envs run in ``workers`` processes with one message per worker
    and step (see the module docstring). Made by ``gym.make_vec("PhonePlan-v0", num_envs=N,
    vectorization_mode="vector_entry_point", workers=W, **env_kwargs)``.

    Args:
        num_envs: envs (>= 1).
        workers: worker processes (>= 0; ``0`` runs every env in this process; more workers
            than envs is the same as one per env). Envs are split into contiguous slices.
        max_episode_steps: wrap each env in ``gymnasium.wrappers.TimeLimit`` (as ``gym.make``).
        context: a :mod:`multiprocessing` start method (``"fork"``, ``"forkserver"``,
            ``"spawn"``); default: the platform's. Except with ``fork``, ``env_kwargs`` must
            pickle.
        **env_kwargs: :class:`~phoneenv.env.PhonePlanEnv`'s arguments, the same for every env.

    Observation and action spaces are ``SyncVectorEnv``'s (``batch_space`` of one env's):
    observations are a dict of tuples of text (and arrays for ``frame_depth`` and
    ``screenshot``); actions are a sequence of ``num_envs`` actions, each anything one env
    accepts. An action that cannot be pickled to a worker reaches its env as an unreadable
    object (an ``invalid_json`` feedback); no action makes ``step`` raise.

    Raises:
        ValueError: bad ``num_envs``/``workers``, ``len(actions) != num_envs``, a seed list of
            the wrong length, a malformed ``reset_mask``.
        WorkerError: a worker process died (the message names it and its exit code); the env
            is closed afterwards.
        Exception: whatever an env raises at construction or reset (an unknown task id,
            ``KeyError``), as that env raised it, after every worker has answered.
    """

    metadata: ClassVar[dict[str, Any]] = {**PhonePlanEnv.metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        workers: int = 0,
        max_episode_steps: int | None = None,
        context: str | None = None,
        disable_env_checker: bool | None = None,
        **env_kwargs: Any,
    ) -> None:
        super().__init__()
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, not {num_envs!r}")
        if not isinstance(workers, int) or workers < 0:
            raise ValueError(f"workers must be an int >= 0, not {workers!r}")
        self.num_envs = num_envs
        self.workers = min(workers, num_envs)
        self.render_mode = env_kwargs.get("render_mode")
        obs_space, act_space = env_spaces(
            bool(env_kwargs.get("screenshots", False)), tuple(env_kwargs.get("screen_size", (360, 640)))
        )
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.observation_space = batch_space(obs_space, num_envs)
        self.action_space = batch_space(act_space, num_envs)
        self.metadata = dict(type(self).metadata)
        self._local: _Slice | None = None
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        self._tools: list[dict[int, Any]] = []  # per worker: token -> the tool list
        self._lists: dict[str, ReadOnlyList] = {}  # every worker's lists, by content
        if self.workers == 0:
            self._local = _Slice(num_envs, env_kwargs, max_episode_steps)
            self._sizes = [num_envs]
            return
        base, extra = divmod(num_envs, self.workers)
        self._sizes = [base + (1 if w < extra else 0) for w in range(self.workers)]
        ctx = mp.get_context(context)
        try:
            for w, size in enumerate(self._sizes):
                parent, child = ctx.Pipe()
                proc = ctx.Process(
                    target=_worker,
                    args=(child, size, env_kwargs, max_episode_steps),
                    name=f"PhonePlanVectorEnv-worker-{w}",
                    daemon=True,
                )
                proc.start()
                child.close()
                self._conns.append(parent)
                self._procs.append(proc)
                self._tools.append({})
            self._gather()
        except BaseException:
            self._stop(kill=True)
            raise

    # -- transport ------------------------------------------------------------------------------
    def _send(self, w: int, msg: tuple[Any, ...]) -> None:
        try:
            self._conns[w].send_bytes(pickle.dumps(msg, _PROTOCOL))
        except (BrokenPipeError, ConnectionError, EOFError, OSError) as exc:
            raise self._dead(w) from exc

    def _dead(self, w: int) -> WorkerError:
        proc = self._procs[w]
        proc.join(timeout=1.0)
        start = sum(self._sizes[:w])
        err = WorkerError(
            f"PhonePlanVectorEnv worker {w} (envs {start}..{start + self._sizes[w] - 1}, pid {proc.pid}) "
            f"died (exit code {proc.exitcode}); the vector env is closed, make a new one"
        )
        self._stop(kill=True)
        self.closed = True
        return err

    def _gather(self) -> list[Any]:
        """Every worker's reply, in worker order; re-raises the first error after all answered,
        raises :class:`WorkerError` (without waiting for the rest) when a worker dies."""
        replies: list[Any] = [None] * len(self._conns)
        waiting = {c: w for w, c in enumerate(self._conns)}
        sentinels = {p.sentinel: w for w, p in enumerate(self._procs)}
        while waiting:
            for ready in wait([*waiting, *sentinels]):
                if ready in waiting:
                    w = waiting[ready]
                    try:
                        replies[w] = pickle.loads(ready.recv_bytes())  # type: ignore[union-attr]
                    except (EOFError, ConnectionError, OSError) as exc:
                        raise self._dead(w) from exc
                    del waiting[ready]
                else:
                    w = sentinels.pop(ready)  # type: ignore[arg-type]
                    if self._conns[w] in waiting and not self._conns[w].poll():
                        raise self._dead(w)
        for reply in replies:
            if reply[0] == "error":
                exc = reply[1]
                exc.add_note(f"in a PhonePlanVectorEnv worker:\n{reply[2]}")
                raise exc
        return [r[1] for r in replies]

    def _untoken(self, w: int, infos: dict[str, Any]) -> dict[str, Any]:
        tools = infos.get("tools")
        if tools is None:
            return infos
        cache = self._tools[w]
        for i, ref in enumerate(tools):
            if ref is not None:
                if ref.tools is not None:  # the same list from another worker: the same object
                    key = json.dumps(ref.tools, sort_keys=True, default=repr)
                    if key not in self._lists:
                        self._lists[key] = ReadOnlyList(_read_only(t) for t in ref.tools)
                    cache[ref.token] = self._lists[key]
                tools[i] = cache[ref.token]
        return infos

    def _slices(self, values: Sequence[Any]) -> list[Sequence[Any]]:
        out, start = [], 0
        for size in self._sizes:
            out.append(values[start : start + size])
            start += size
        return out

    # -- gym API --------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every env (or those in ``options["reset_mask"]``); returns the batched
        observations and infos. Seeds as ``SyncVectorEnv``: None, an int (env ``i`` gets
        ``seed + i``) or one per env."""
        self._check_open()
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int):
            seeds = [seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(
                f"If seeds are passed as a list the length must match num_envs={self.num_envs} but got length={len(seeds)}."
            )
        mask = None
        if options is not None and "reset_mask" in options:
            options = dict(options)
            mask = options.pop("reset_mask")
            if not isinstance(mask, np.ndarray) or mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(f"options['reset_mask'] must be a bool numpy array of shape ({self.num_envs},)")
            if not mask.any():
                raise ValueError("options['reset_mask'] must contain at least one True value")
        if self._local is not None:
            return self._local.reset(seeds, options, mask)
        masks = self._slices(mask) if mask is not None else [None] * self.workers
        for w, (s, m) in enumerate(zip(self._slices(seeds), masks, strict=True)):
            self._send(w, ("reset", list(s), options, m))
        parts = self._gather()
        obs = _merge_obs([p[0] for p in parts])
        infos = _merge_infos([self._untoken(w, p[1]) for w, p in enumerate(parts)], self._sizes, self.num_envs)
        return obs, infos

    def step(self, actions: Sequence[Any]) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env with its action (autoreset ``NEXT_STEP``); returns (observations,
        rewards ``float64`` (N,), terminations ``bool`` (N,), truncations ``bool`` (N,), infos).
        Never raises on what an action holds; ``ValueError`` if there are not ``num_envs``."""
        self._check_open()
        if isinstance(actions, (str, bytes, dict)):
            raise ValueError(f"actions must be a sequence of {self.num_envs} actions, not one {type(actions).__name__}")
        acts = list(iterate(self.action_space, actions)) if not isinstance(actions, (list, tuple)) else actions
        if len(acts) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got {len(acts)}")
        if self._local is not None:
            return self._local.step(acts)
        for w, part in enumerate(self._slices(acts)):
            msg = ("step", part)
            try:
                data = pickle.dumps(msg, _PROTOCOL)
            except Exception:  # an action that does not pickle (a lambda, a deep nest)
                data = pickle.dumps(("step", [_sendable(a) for a in part]), _PROTOCOL)
            try:
                self._conns[w].send_bytes(data)
            except (BrokenPipeError, ConnectionError, EOFError, OSError) as exc:
                raise self._dead(w) from exc
        parts = self._gather()
        obs = _merge_obs([p[0] for p in parts])
        infos = _merge_infos([self._untoken(w, p[4]) for w, p in enumerate(parts)], self._sizes, self.num_envs)
        return (
            obs,
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
            np.concatenate([p[3] for p in parts]),
            infos,
        )

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every env (or read the attribute); one result per env, in
        env order (results must pickle when workers > 0)."""
        self._check_open()
        if self._local is not None:
            return tuple(self._local.call(name, args, kwargs))
        for w in range(self.workers):
            self._send(w, ("call", name, args, kwargs))
        return tuple(x for part in self._gather() for x in part)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of every env (as :meth:`call` for a non-callable)."""
        return self.call(name)

    def render(self) -> tuple[Any, ...]:
        """Every env's :meth:`~phoneenv.env.PhonePlanEnv.render`."""
        return self.call("render")

    def _check_open(self) -> None:
        if self.closed:
            raise gym.error.ClosedEnvironmentError("the vector env is closed; make a new one")

    def close_extras(self, **kwargs: Any) -> None:
        """Close every env and stop the workers (a worker that does not stop within 5 s is
        terminated)."""
        if self._local is not None:
            self._local.close()
            return
        for conn in self._conns:
            try:
                conn.send_bytes(pickle.dumps(("close",), _PROTOCOL))
            except (BrokenPipeError, ConnectionError, EOFError, OSError):
                continue
        for conn in self._conns:
            try:
                if conn.poll(5.0):
                    conn.recv_bytes()
            except (EOFError, ConnectionError, OSError):
                pass
        self._stop(kill=False)

    def _stop(self, kill: bool) -> None:
        for proc in self._procs:
            if kill and proc.is_alive():
                proc.terminate()
            proc.join(timeout=5.0)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=1.0)
        for conn in self._conns:
            conn.close()
        self._procs, self._conns = [], []

    def __del__(self) -> None:
        try:
            if not self.closed:
                self.close()
        except Exception:
            pass


def _read_only(entry: dict[str, Any]) -> ReadOnlyDict:
    """An OpenAI tool entry as :func:`phoneenv.sharing.openai_tools` shapes it (read-only entry
    and ``function``)."""
    fn = entry.get("function")
    return ReadOnlyDict(entry, function=ReadOnlyDict(fn)) if isinstance(fn, dict) else ReadOnlyDict(entry)


def _sendable(action: Any) -> Any:
    try:
        pickle.dumps(action, _PROTOCOL)
        return action
    except Exception:
        return _Unsendable(type(action).__name__)
