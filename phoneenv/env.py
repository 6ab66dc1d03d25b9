"""``PhonePlan-v0``: a Gymnasium env where each action is one typed tool call on a phone.

    >>> import gymnasium as gym, phoneenv, json
    >>> env = gym.make("PhonePlan-v0", task="clock.what_time/0")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step('{"name": "clock.now", "arguments": {}}')
    >>> json.loads(obs["feedback"])["ok"]
    True

Observation (a ``Dict`` space): ``goal`` (the user's words), ``feedback`` (the last
:class:`~phoneenv.contract.Feedback` as ASCII JSON), ``frame`` (the active frame's id: ``"main"``,
or a sub-agent's such as ``"main.1"``), ``frame_goal`` (its goal), ``frame_depth`` (its depth,
0 at the root; see :mod:`phoneenv.frames`), and ``screenshot`` (``uint8`` (H, W, 3)) when made
with ``screenshots=True``. Action: a JSON string (or a
dict) ``{"name": "app.verb", "arguments": {...}}``; OpenAI's ``{"function": {...}}`` wrapper and
``arguments`` given as a JSON string are accepted. Anything else becomes an ``invalid_json``
feedback; the env never raises on an action.

Every action passes one intake (:mod:`phoneenv.intake`) before anything runs or is recorded, so
every trace the env records serialises (``env.trace.model_dump_json()``) and round-trips:

- Rejected as ``invalid_json``: text that is not one JSON object with a string ``name``;
  ``NaN``/``Infinity``; duplicate keys; lone UTF-16 surrogates; nesting deeper than
  :data:`~phoneenv.intake.MAX_NESTING`; an action longer than :data:`MAX_ACTION_CHARS`
  (text, or a dict's size as JSON); both ``name`` and ``function`` (ambiguous); a tool name
  longer than :data:`~phoneenv.intake.MAX_NAME_CHARS`.
- Rejected as ``invalid_arguments`` of the tool: a string longer than
  :data:`~phoneenv.intake.MAX_STRING_CHARS`, a key longer than
  :data:`~phoneenv.intake.MAX_KEY_CHARS`, an integer outside 64 bits; and each tool's schema
  (``finish``'s answer at most :data:`MAX_ANSWER_CHARS`, ``user.confirm``'s question and
  ``user.authenticate``'s reason at most :data:`MAX_QUESTION_CHARS`).
- Stored escaped and marked (:attr:`Step.escaped <phoneenv.contract.Step.escaped>`): the raw
  text of a rejected action with lone surrogates, and a feedback from the world that JSON
  cannot carry as it is.
- Secrets: every fixture secret (the vault's passwords), wherever it appears in the action (raw
  text, name, keys, values), and every value under a secret parameter's name (``password``)
  is masked as ``***`` at the intake: the masked call is what runs and what is recorded, and
  only a parameter its tool declares secret receives the real value. Feedbacks and the verdict
  pass the same mask, so no secret reaches the trace, the observation, ``info`` or the logs.

``close()`` is final and idempotent: afterwards ``reset`` and ``step`` always raise
:class:`gymnasium.error.ClosedEnvironmentError` (``trace`` and ``verdict`` stay readable).

With ``memory=True`` (the default) the user's memory rides along: the tools ``memory.search``,
``memory.save`` and ``memory.forget`` (plus ``system.wait`` and ``system.location``), the task's
fixture memory restored on each reset (kept with ``options={"keep_memory": True}`` or a
persistent ``memory_path``), the store verified as the table ``memory.entries``, and intents
that fire arriving as ``notifications`` inside the step's feedback
(see :mod:`phoneenv.harness.episode_memory`).

Tools travel once: ``reset``'s info carries ``tools`` (the offered tools, OpenAI format), and a
step's info carries ``tools`` only when the offered list changed since the last observation
announced it (a sub-agent frame opened or closed, or more tools were loaded); otherwise the key
is absent, and :attr:`PhonePlanEnv.tools` is the list last announced. Keep the last tools seen.
The tool lists and the spaces' tables are built once per process and shared by its envs
(read-only: :mod:`phoneenv.sharing`), so a live env costs little memory and a vectorised step
moves little data.

Vectorised: ``gym.vector.AsyncVectorEnv(fns, shared_memory=False)`` (text cannot live in
shared memory); a step sends under 1 KB between processes. ``gym.vector.SyncVectorEnv(fns,
copy=False)`` skips Gymnasium's deep copy of the batched observations every step (benchmarks/
bench_vector.py prints both): safe when each batch is read before the next step, since the text
fields are new tuples of immutable strings every step but ``frame_depth`` is an array Gymnasium
refills in place. Call :func:`phoneenv.freeze_gc` once after set-up before long step loops.

The episode terminates when the agent calls ``finish`` (with its ``answer``) and is truncated at
``max_steps``, or at a ``gymnasium.wrappers.TimeLimit``'s ``max_episode_steps``
(``gym.make("PhonePlan-v0", max_episode_steps=n)``) when that comes first. The reward is 1.0 when
the verdict succeeds, else 0.0, given at the end; ``info`` then carries ``verdict`` (a dict of
:class:`~phoneenv.contract.Verdict`), ``progress``, ``success``, and the efficiency figures, so RL
code shapes its own reward without re-running; a truncated episode carries them too.
"""

from __future__ import annotations

import copy
import functools
import logging
import numbers
import os
import string
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ClosedEnvironmentError
from gymnasium.vector.utils.shared_memory import create_shared_memory

from phoneenv.backends.base import Backend
from phoneenv.contract import (
    ROOT_FRAME,
    Effect,
    ErrorKind,
    Feedback,
    Step,
    TaskSpec,
    ToolCall,
    ToolSpec,
    Trace,
)
from phoneenv.frames import MAX_DEPTH, FrameStack
from phoneenv.harness import feedback
from phoneenv.harness.episode_memory import EpisodeMemory
from phoneenv.harness.providers import ToolProvider, default_providers
from phoneenv.harness.providers.confirm import MAX_QUESTION_CHARS
from phoneenv.harness.providers.finish import MAX_ANSWER_CHARS
from phoneenv.harness.toolselect import DEFAULT_K, ToolSearch, ToolSelector, selector_for, task_tools
from phoneenv.intake import MASK, MAX_ACTION_CHARS, Intake, Masker, feedback_json, masker_for, read_action, seal
from phoneenv.sharing import ReadOnlyList, openai_tools, shared_specs
from phoneenv.tasks.verify import CallRecord, confirmed_by, context_of, episode_changes, episode_grounds, verify
from phoneenv.tools import ArgumentError, ToolDef

if TYPE_CHECKING:
    from typing_extensions import Never

__all__ = ["MAX_ACTION_CHARS", "MAX_ANSWER_CHARS", "MAX_QUESTION_CHARS", "JudgeOnTruncation", "PhonePlanEnv"]

log = logging.getLogger(__name__)

CHARSET = string.printable
"""Characters of the Text spaces: printable ASCII. Feedback JSON is ASCII-escaped to fit."""
MAX_TEXT = 1 << 18
_DEPTHS = tuple(np.int64(d) for d in range(MAX_DEPTH + 1))


class _StepRecord(NamedTuple):
    """One step as the env keeps it until the trace is built: the call as run (None when the
    action was not a readable call), the raw action text kept for an unreadable one (masked,
    bounded), the feedback shown, the phone clock after it (epoch seconds), the wall-clock
    latency in seconds (with ``record_wall_time``), the agent's tokens for it, and whether
    anything was stored escaped."""

    call: CallRecord | None
    raw: str | None
    feedback: Feedback
    clock: float
    latency: float | None
    tokens: dict[str, int] | None
    escaped: bool


class TextSpace(spaces.Text):
    """``gymnasium.spaces.Text`` for PhonePlan-v0's observations and actions.

    Identical to ``Text`` except that ``AsyncVectorEnv``'s shared memory refuses it with a clear
    error: Gymnasium's shared-memory codec cannot carry text (it reads strings back as padding),
    so vectorised envs must copy observations (``shared_memory=False``).
    """


@create_shared_memory.register(TextSpace)
def _refuse_shared_memory(space: TextSpace, n: int = 1, ctx: Any = None) -> Any:
    raise TypeError(
        "PhonePlan-v0 observations are text, which AsyncVectorEnv cannot keep in shared memory; "
        "use gym.vector.AsyncVectorEnv(env_fns, shared_memory=False)"
    )


@functools.lru_cache(maxsize=8)
def _shared_spaces(screenshots: bool, screen_size: tuple[int, int]) -> tuple[dict[str, spaces.Space[Any]], TextSpace]:
    """The observation subspaces and the action space, built once per process and never handed
    out themselves (see :func:`env_spaces`)."""
    text = TextSpace(max_length=MAX_TEXT, charset=CHARSET)
    obs: dict[str, spaces.Space[Any]] = {
        "goal": text,
        "feedback": text,
        "frame": TextSpace(max_length=64, charset=CHARSET),
        "frame_goal": text,
        "frame_depth": spaces.Discrete(MAX_DEPTH + 1),
    }
    if screenshots:
        w, h = screen_size
        obs["screenshot"] = spaces.Box(0, 255, shape=(h, w, 3), dtype=np.uint8)
    return obs, TextSpace(max_length=MAX_ACTION_CHARS, charset=CHARSET)


_pools: dict[tuple[int, ...], tuple[tuple[TaskSpec, ...], ReadOnlyList, dict[str, TaskSpec]]] = {}


def _shared_pool(pool: Sequence[TaskSpec]) -> tuple[ReadOnlyList, dict[str, TaskSpec]]:
    """``pool`` as a read-only list and its index by id, shared by every env of the process made
    with the same task objects (a suite-wide pool's index costs ~100 KiB: once, not per env)."""
    held = tuple(pool)
    key = tuple(map(id, held))
    hit = _pools.get(key)  # a hit holds the objects with these ids, so they are these tasks
    if hit is None:
        if len(_pools) >= 64:
            _pools.clear()
        hit = _pools[key] = (held, ReadOnlyList(held), {t.id: t for t in held})
    return hit[1], hit[2]


def env_spaces(screenshots: bool, screen_size: tuple[int, int]) -> tuple[spaces.Dict, TextSpace]:
    """An env's (observation, action) spaces: shallow copies of the process's shared ones, so
    the character tables and bounds (what costs memory, and what nothing changes) are shared
    while each env keeps its own random generator (``env.action_space.seed(...)`` seeds only
    that env's)."""
    obs, action = _shared_spaces(bool(screenshots), tuple(screen_size))  # type: ignore[arg-type]
    return spaces.Dict({k: copy.copy(v) for k, v in obs.items()}), copy.copy(action)


def ascii_text(text: str) -> str:
    return text if text.isascii() else text.encode("ascii", "backslashreplace").decode("ascii")


class PhonePlanEnv(gym.Env[dict[str, Any], str]):
    """Carry out a phone user's request by calling typed tools; verified from the end state.

    Args:
        task: a task id or :class:`TaskSpec` to run every episode.
        tasks: a selector over the suite (``"all"``, ``"category:tool"``, ``"domain:time"``,
            ``"template:NAME"``, ``"app:NAME"``, an id glob such as ``"clock.*"``) or a list of
            :class:`TaskSpec`; ``reset`` draws one with the env's seeded RNG. Default: the suite.
            A selector keeps only the tasks the backend can run faithfully (``hybrid`` tasks
            need ``backend="hybrid"``).
        backend: ``"sandbox"``, ``"llmsim"``, ``"hybrid"`` or a
            :class:`~phoneenv.backends.base.Backend` instance.
        screenshots: add ``screenshot`` (``uint8`` (H, W, 3)) to observations.
        max_steps: truncate after this many actions (default: the task's ``max_steps``). A
            ``TimeLimit`` around the env with a smaller ``max_episode_steps`` lowers it for the
            episodes it resets (reset's ``info["max_steps"]`` is the limit in force).
        render_mode: ``"rgb_array"`` (the screen as pixels), ``"ansi"`` (as text) or None.
        record_wall_time: add wall-clock step latency to trace steps (breaks byte-identical traces).
        screen_size: (width, height) of screenshots in pixels.
        simulator: the :class:`~phoneenv.llm.ChatClient` that simulates tools for ``llmsim`` and
            ``hybrid`` (without one, only scripted results are served).
        skills: the harness's skills: ``True`` for the shipped ones (``apps/<app>/skills``), a
            :class:`~phoneenv.harness.skills.SkillLibrary`, or ``False`` for none. Skills that
            cover the episode's tools are listed in ``info["skills"]`` (name and description);
            their bodies are read with the ``skills.read`` tool.
        memory: the user's memory (:mod:`phoneenv.harness.episode_memory`): ``True`` (default)
            for a private in-memory store, an :class:`~phoneenv.harness.episode_memory.EpisodeMemory`,
            or ``False`` to leave the memory tools out (no ``memory.entries`` table, no intents).
            Each reset restores the task's fixture memory unless ``options={"keep_memory": True}``.
        user: whose memory it is, with ``memory_path``.
        memory_path: a SQLite file that keeps ``user``'s memory across env instances and
            processes (episodes keep it by default; the task's fixture memory is seeded only
            into a user without rows).
        delegation: offer ``agent.delegate`` (sub-agent frames, :mod:`phoneenv.frames`):
            ``True`` in every episode, ``False`` never, None (default) in the episodes of tasks
            that list the ``agent`` app (the Sub-agent category's). ``info["tools"]`` and
            :attr:`tools` list the active frame's tools.
        tools: which tools are offered (:mod:`phoneenv.harness.toolselect`): ``"all"``
            (default), ``"task"`` (the backend tools of the task's apps and of the phone's own,
            :data:`~phoneenv.harness.toolselect.DEVICE_APPS`, plus every harness tool),
            ``"retrieve"`` (at reset, the ``tools_k`` backend tools most relevant to the goal,
            plus every harness tool), ``"search"`` (the same plus ``tools.search``,
            which loads more tools into the episode), or a
            :class:`~phoneenv.harness.toolselect.ToolSelector`. A call of a tool that exists
            but is not offered is a ``precondition_failed`` feedback.
        tools_k: the backend tools offered at reset with ``"retrieve"``/``"search"`` (>= 0).
        tools_budget: tokens the tools offered at reset may take in all, harness tools included
            (``"retrieve"``/``"search"``; None, the default: no budget): the ``tools_k`` best
            that fit, the best one always (:meth:`~phoneenv.harness.toolselect.ToolSelector.offer`),
            counted by :func:`~phoneenv.harness.toolselect.estimate_tokens` (a
            :class:`~phoneenv.harness.toolselect.ToolSelector` takes the model's own tokenizer).

    Raises:
        TypeError: an argument of the wrong type (``max_steps="5"``) or an unknown argument
            (the message names it, close matches and the accepted arguments); raised before
            anything is built, as is a ``ValueError`` for a bad value or for ``task`` and
            ``tasks`` given together. Through ``gym.make`` a ``TypeError`` comes back with
            Gymnasium's note of the arguments appended.
        ValueError / KeyError: an unknown backend, selector or task id (at construction).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array", "ansi"], "render_fps": 4}

    def __init__(
        self,
        task: str | TaskSpec | None = None,
        tasks: str | Sequence[TaskSpec] | None = None,
        backend: str | Backend = "sandbox",
        screenshots: bool = False,
        max_steps: int | None = None,
        render_mode: str | None = None,
        record_wall_time: bool = False,
        screen_size: tuple[int, int] = (360, 640),
        simulator: Any = None,
        skills: Any = True,
        memory: bool | EpisodeMemory = True,
        user: str | None = None,
        memory_path: str | Path | None = None,
        delegation: bool | None = None,
        tools: str | ToolSelector = "all",
        tools_k: int = DEFAULT_K,
        tools_budget: int | None = None,
        **unknown: Never,
    ) -> None:
        from phoneenv.tasks import select

        if unknown:
            raise _unknown_arguments(unknown)
        max_steps, screen_size, tools_k, tools_budget = _check_arguments(
            task=task,
            tasks=tasks,
            backend=backend,
            screenshots=screenshots,
            max_steps=max_steps,
            render_mode=render_mode,
            record_wall_time=record_wall_time,
            screen_size=screen_size,
            skills=skills,
            memory=memory,
            user=user,
            memory_path=memory_path,
            delegation=delegation,
            tools=tools,
            tools_k=tools_k,
            tools_budget=tools_budget,
        )
        if isinstance(backend, str):
            from phoneenv.backends import make_backend

            backend = make_backend(backend, simulator=simulator, screen_size=screen_size)
        self.backend: Backend = backend
        if task is not None:
            self._pool: list[TaskSpec] = select(task) if isinstance(task, str) else [task]
            if isinstance(task, str) and len(self._pool) != 1:
                raise KeyError(f"task {task!r} names {len(self._pool)} tasks; use tasks= for a selector")
        elif tasks is None or isinstance(tasks, str):
            self._pool = [t for t in select(tasks or "all") if backend.can_run(t)]
        else:
            self._pool = list(tasks)
        if not self._pool:
            raise ValueError(f"no task matches {tasks!r} on the {backend.name!r} backend")
        self._pool, self._by_id = _shared_pool(self._pool)
        self.screenshots = screenshots
        self.render_mode = render_mode
        self.record_wall_time = record_wall_time
        self._max_steps_override = max_steps
        if skills is True:
            skills = _shipped_skills()
        self._memory = _make_memory(memory, user, memory_path)
        self.providers: list[ToolProvider] = default_providers(skills or None, self._memory, delegation)
        """The harness features that offer tools beside the backend's
        (:mod:`phoneenv.harness.providers`), in the order their tools are listed."""
        # -- tool selection (phoneenv.harness.toolselect) --
        self._selector = tools if isinstance(tools, ToolSelector) else selector_for(tools, tools_k, tools_budget)
        self._task_apps_only = tools == "task"
        self._offered_names: frozenset[str] | None = None
        """Backend tools offered this episode (None: all); harness tools are always offered."""
        self._harness_names: frozenset[str] = frozenset()
        self._selectable: list[ToolSpec] = ReadOnlyList()  # the backend tools, offered or not
        self._harness_specs: list[ToolSpec] = ReadOnlyList()  # the providers' tools
        if self._selector is not None and self._selector.mode == "search":
            self.providers.insert(len(self.providers) - 1, ToolSearch(self._selector))
        # -- end of tool selection --
        self._gates = [p for p in self.providers if p.overrides("gate")]
        self._observers = [p for p in self.providers if p.overrides("observe")]
        self._frames: FrameStack | None = None
        self._closed = False
        self._secret_keys: frozenset[str] = frozenset()
        self._masker = Masker()
        self.observation_space, self.action_space = env_spaces(screenshots, screen_size)
        self.task: TaskSpec = self._pool[0]
        self._tool_map: dict[str, tuple[ToolDef, ToolProvider | None]] = {}
        self._backend_tools: Any = {}
        self._tools_key: Any = None
        self._openai: list[dict[str, Any]] = []
        self._announced: list[dict[str, Any]] | None = None
        self._done = True
        self._goal = ""
        self._seed: int | None = None
        self._verdict: Any = None
        self._episode: tuple[Any, ...] | None = None
        self._steps: list[_StepRecord] = []

    # -- tools ----------------------------------------------------------------------------------
    def _refresh_tools(self) -> None:
        """Build the episode's tools: the backend's, then each provider's (offered last to
        first, so each sees the tools of those after it); cached while nothing they depend on
        changes."""
        btools = self.backend.tools()
        key = (btools, *[p.offer_key(self) for p in self.providers])
        old = self._tools_key
        if old is not None and key[0] is old[0] and key[1:] == old[1:]:
            return
        # The providers' tools by name (they take precedence); the backend's are looked up in its
        # own mapping, shared by every env of the process (see _find_tool).
        tmap: dict[str, tuple[ToolDef, ToolProvider | None]] = {}
        offered: dict[str, ToolDef] = dict(btools)
        extra: list[ToolSpec] = []
        for p in reversed(self.providers):
            tools = p.offer(self, offered)
            offered.update(tools)
            tmap.update((n, (d, p)) for n, d in tools.items())
            extra[:0] = [d.spec for d in tools.values()]
        self._tool_map = tmap
        self._backend_tools = btools
        self._tools_key = key
        specs = shared_specs([*(e.spec for e in btools.values()), *extra])  # one list per process
        self._all_specs: list[ToolSpec] = specs
        self._secret_keys = frozenset(p for d in offered.values() for p in d.spec.secret_parameters)
        self._all_openai = openai_tools(specs)
        self._harness_names = frozenset(tmap)  # the providers' tools: always offered
        self._selectable = shared_specs(s for s in specs if s.name not in self._harness_names)
        self._harness_specs = shared_specs(s for s in specs if s.name in self._harness_names)
        self._offer()

    # -- tool selection (phoneenv.harness.toolselect) ----------------------------------------------
    def _offer(self) -> None:
        """Set the offered tools (``_specs``, ``_openai``, the root frame's) from the episode's
        tools and ``_offered_names``, always as NEW list objects (step info announces a change by
        identity)."""
        if self._offered_names is None:
            self._specs, self._openai = self._all_specs, self._all_openai
        else:
            keep = [
                i
                for i, s in enumerate(self._all_specs)
                if s.name in self._offered_names or s.name in self._harness_names
            ]
            self._specs = ReadOnlyList(self._all_specs[i] for i in keep)
            self._openai = openai_tools(self._specs)
        if self._frames is not None:
            root = self._frames.frames[0]
            root.specs, root.openai = self._specs, self._openai

    def selectable_specs(self) -> list[ToolSpec]:
        """Every backend tool of the episode, offered or not (what ``tools.search`` searches);
        read-only (a list shared until the episode's tools change)."""
        self._refresh_tools()
        return self._selectable

    def load_tools(self, names: Sequence[str]) -> list[str]:
        """Add the tools ``names`` (canonical) to the episode's offered set (``tools.search``);
        returns those newly offered, in order. The next step's ``info["tools"]`` announces them.
        A no-op (``[]``) when every tool is offered already.

        Raises:
            KeyError: a name that is not a tool of the episode.
        """
        if self._offered_names is None:
            return []
        new = [n for n in dict.fromkeys(names) if n not in self._offered_names and n not in self._harness_names]
        for n in new:
            if self._find_tool(n) is None:
                raise KeyError(f"{n!r} is not a tool of this episode")
        if new:
            self._offered_names = self._offered_names | frozenset(new)
            self._offer()
        return new

    def _not_offered(self, name: str) -> Feedback:
        if self._selector is not None and self._selector.mode == "search":
            how = f'call tools.search with its name (e.g. {{"query": "{name}"}}) to load it, then call it'
        else:
            how = "call only tools from your tool list"
        return feedback.precondition_failed(f"{name} is not among the tools offered in this episode", how)

    # -- end of tool selection ---------------------------------------------------------------------

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools offered now in OpenAI ``tools`` format (``finish`` included); inside a
        sub-agent frame, that frame's tools. During an episode, the same object the last
        ``info["tools"]`` announced. Read-only and shared by every env of the process that
        offers the same tools (:func:`phoneenv.sharing.openai_tools`): copy it to change it."""
        self._refresh_tools()
        return self._offered()

    def _offered(self) -> list[dict[str, Any]]:
        """The offered tool list object: the active frame's. Whoever changes the offered set
        makes a new list object (never mutates one), so identity tells a change."""
        frames = self._frames
        return self._openai if frames is None or frames.at_root else frames.openai()

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """The :class:`ToolSpec` of every tool offered in this episode (inside a sub-agent
        frame, of that frame's tools); read-only (copy it to change it)."""
        self._refresh_tools()
        if self._frames is not None and not self._frames.at_root:
            return self._frames.specs()
        return self._specs

    @property
    def pool(self) -> list[TaskSpec]:
        """The tasks ``reset`` draws from (read-only: shared by the envs of the process that draw
        from the same tasks)."""
        return self._pool

    # -- gym API --------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode: pick the task (``options={"task": id or TaskSpec}``, else drawn from
        the pool with the seeded RNG), restore its fixture snapshot, return (observation, info);
        ``info["tools"]`` lists the offered tools (OpenAI format, read-only, shared).
        ``options["task"]`` may name any task of the suite, not only the pool's.

        Raises ``KeyError`` for an unknown task id, ``TypeError`` for another kind of value,
        ``ValueError`` for a task this backend cannot run faithfully, and
        :class:`gymnasium.error.ClosedEnvironmentError` after :meth:`close`.
        """
        if self._closed:
            raise ClosedEnvironmentError("the env is closed; make a new one to reset")
        super().reset(seed=seed)
        want = (options or {}).get("task")
        if want is not None and not isinstance(want, (str, TaskSpec)):
            raise TypeError(f"options['task'] must be a task id or a TaskSpec, not {type(want).__name__}")
        keep = (options or {}).get("keep_memory")
        if keep is not None and not isinstance(keep, bool):
            raise TypeError(f"options['keep_memory'] must be a bool, not {type(keep).__name__}")
        if keep and self._memory is None:
            raise ValueError("options['keep_memory'] needs an env made with memory=True")
        if isinstance(want, TaskSpec):
            task = want
        elif isinstance(want, str):
            task = self._by_id.get(want) or _lookup(want)
        elif len(self._pool) == 1:
            task = self._pool[0]
        else:
            task = self._pool[int(self.np_random.integers(len(self._pool)))]
        if not self.backend.can_run(task):
            raise ValueError(
                f"task {task.id} declares backends {task.backends}; the {self.backend.name!r} backend cannot run it faithfully"
            )
        self.task = task
        self._seed = seed
        self.backend.reset(task)
        self._refresh_tools()
        if self._selector is not None:  # tool selection: the task's k tools, within the budget
            self._offered_names = frozenset(
                self._selector.offer(task.goal, self._selectable, self._harness_specs, task_id=task.id)
            )
            self._offer()
        elif self._task_apps_only:  # tools="task": the task's apps and the phone's own
            self._offered_names = frozenset(task_tools(task, self._selectable))
            self._offer()
        self._masker = masker_for(task.fixtures, self._secret_keys)
        self._before = self.backend.frozen_tables()
        notes = None
        for p in self.providers:
            more = p.reset(self, keep)
            if more:
                notes = [*(notes or ()), *more]
        for p in self.providers:
            self._before.update(p.tables())
        self._max_steps = self._max_steps_override or task.max_steps
        outer = _time_limit_above(self)
        if outer is not None and outer < self._max_steps:
            self._max_steps = outer  # judged at the step where TimeLimit truncates, not lost
        self._steps = []
        self._pending_tokens: dict[str, int] | None = None
        self._token_totals: dict[str, int] = {}
        self._errors = 0
        self._ended = False
        self._answer: str | None = None
        self._answer_value: Any = None
        self._done = False
        self._verdict: Any = None
        self._episode = None
        self._goal = ascii_text(self._masker.value(task.goal))
        self._frames = FrameStack(self._masker.value(task.goal), self._specs, self._openai)
        self._infra = False
        started = Feedback(ok=True, result={"episode": "started", "clock": self.backend.clock()}, notifications=notes)
        started, text, _ = seal(started, self._masker)
        self._announced = self._offered()
        info = {
            "task_id": task.id,
            "category": task.category.value,
            "domain": task.domain.value,
            "apps": list(task.apps),
            "tools": self._announced,
        }
        for p in self.providers:
            info.update(p.info())
        info["max_steps"] = self._max_steps
        return self._obs(started, text), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Apply one action (a tool call as JSON text or dict); never raises on a bad action.

        ``info`` has ``feedback``, ``step`` and ``frame``, and ``tools`` only when the offered
        tools changed since the last observation (a new list object; see :attr:`tools`).

        Raises :class:`gymnasium.error.ClosedEnvironmentError` after :meth:`close` (whatever the
        action).
        """
        if self._closed:
            raise ClosedEnvironmentError("the env is closed; make a new one to step")
        if self._done:
            fb = Feedback(
                ok=False,
                error=ErrorKind.PRECONDITION_FAILED,
                message="the episode is over",
                hint="call reset() to start a new episode",
                recoverable=False,
            )
            return self._obs(fb), 0.0, True, False, {"feedback": fb}
        t0 = time.perf_counter() if self.record_wall_time else 0.0
        intake = self._parse(action)
        self._frames.begin_step()  # type: ignore[union-attr]
        rec = None
        fb = intake.error
        if fb is None:
            rec = self._execute(intake)
            if rec.feedback.redacted:
                rec = self._redact(rec)
            fb = rec.feedback
        for p in self._observers:
            notes = p.observe(None if rec is None else rec.name, fb.ok)
            if notes:
                fb = fb.model_copy(update={"notifications": [*(fb.notifications or ()), *notes]})
        fb, text, escaped = seal(fb, self._masker)
        if rec is not None and rec.feedback is not fb:  # sealed or noted: the record keeps what was shown
            rec = rec._replace(feedback=fb)
        n = len(self._steps) + 1
        if not fb.ok:
            self._errors += 1
            if fb.infrastructure:
                self._infra = True
        latency = time.perf_counter() - t0 if self.record_wall_time else None
        escaped = escaped or intake.escaped
        self._steps.append(
            _StepRecord(rec, intake.raw, fb, self.backend.clock_seconds(), latency, self._pending_tokens, escaped)
        )
        self._pending_tokens = None
        terminated = self._ended
        truncated = not terminated and n >= self._max_steps
        info: dict[str, Any] = {"feedback": fb, "step": n, "frame": self._frames.active.id}  # type: ignore[union-attr]
        tools = self._offered()
        if tools is not self._announced:  # a frame opened or closed, or more tools were loaded
            info["tools"] = self._announced = tools
        reward = 0.0
        if terminated or truncated:
            self._done = True
            verdict = self._finish_episode(truncated)
            reward = 1.0 if verdict.success else 0.0
            info.update(_final_info(verdict))
        return self._obs(fb, text), reward, terminated, truncated, info

    def truncate(self) -> dict[str, Any]:
        """End the running episode as truncated, because a limit outside the env ran out (a
        ``TimeLimit`` wrapper's ``max_episode_steps``, a user's budget), and judge it now.

        Returns the keys a final step's ``info`` carries: ``verdict`` (dict), ``success``
        (always False: a truncated episode does not succeed), ``progress``, ``steps``,
        ``tool_calls``, ``errors`` and ``infrastructure_error``. Returns ``{}`` when no episode
        runs (before the first reset, or once the episode is over). :class:`JudgeOnTruncation`
        calls it for a wrapper that truncates the episode from outside.
        """
        if self._done or self._closed:
            return {}
        self._done = True
        return _final_info(self._finish_episode(truncated=True))

    def abort_infrastructure(self, reason: str) -> dict[str, Any]:
        """End the episode because the world failed outside the env (the planner's model server
        died past its retries); returns the final info, whose verdict has
        ``infrastructure_error=True`` and ``success=False``. No-op info when already over."""
        if self._done:
            return {"verdict": None if self._verdict is None else self._verdict.model_dump(mode="json")}
        log.warning("episode of %s aborted as an infrastructure error: %s", self.task.id, reason)
        self._done = True
        self._infra = True
        verdict = self._finish_episode(truncated=True)
        return {
            "verdict": verdict.model_dump(mode="json"),
            "success": False,
            "progress": verdict.progress,
            "infrastructure_error": True,
            "reason": reason,
        }

    def render(self) -> np.ndarray | str | None:  # type: ignore[override]
        """The phone screen: ``uint8`` (H, W, 3) with ``render_mode="rgb_array"``; text with
        ``render_mode="ansi"`` (the status bar, the app's title and the rows the screenshot
        shows, in an ASCII frame; a backend that cannot read its screen as text, a device's,
        says so in one line); None without a render mode."""
        if self.render_mode == "rgb_array":
            return self.backend.screenshot()
        if self.render_mode == "ansi":
            text = self.backend.screen_text()
            if text is None:
                return f"[the {self.backend.name} backend has no text screen; use render_mode='rgb_array']"
            return text
        return None

    def close(self) -> None:
        """Close the backend and the memory store. Idempotent and final: afterwards ``reset``
        and ``step`` raise :class:`gymnasium.error.ClosedEnvironmentError`; ``trace``,
        ``verdict`` and ``tools`` stay readable."""
        if self._closed:
            return
        self._closed = True
        self._done = True
        try:
            self.backend.close()
        finally:
            for p in self.providers:
                p.close()

    # -- internals ------------------------------------------------------------------------------
    def _obs(self, fb: Feedback, text: str | None = None) -> dict[str, Any]:
        if text is None:
            text = feedback_json(fb)
        if len(text) > MAX_TEXT:
            text = feedback_json(
                Feedback(ok=fb.ok, error=fb.error, message="result too long to show; narrow the query")
            )
        if self._frames is None or self._frames.at_root:
            obs = {
                "goal": self._goal,
                "feedback": text,
                "frame": ROOT_FRAME,
                "frame_goal": self._goal,
                "frame_depth": _DEPTHS[0],
            }
        else:
            fr = self._frames.active
            obs = {
                "goal": self._goal,
                "feedback": text,
                "frame": fr.id,
                "frame_goal": fr.goal_text,
                "frame_depth": _DEPTHS[fr.depth],
            }
        if self.screenshots:
            obs["screenshot"] = fb.image if fb.image is not None else self.backend.screenshot()
        return obs

    def _parse(self, action: Any) -> Intake:
        """The action through the intake (:func:`phoneenv.intake.read_action`) with this
        episode's secrets masked.

        Never raises: a Python object that fails while being read (a ``__str__`` or ``.items``
        that raises) is an ``invalid_json`` error.
        """
        try:
            return read_action(action, self._masker)
        except Exception as exc:  # RecursionError included: anything a hostile object can raise
            return Intake(
                raw=f"<unreadable {type(action).__name__}>",
                error=feedback.invalid_json(f"the action could not be read ({type(exc).__name__}); send JSON text"),
            )

    def _execute(self, intake: Intake) -> CallRecord:
        """Run one parsed call. ``intake.arguments`` (secrets masked) is what runs and what is
        recorded; only the parameters the tool declares secret get their real value."""
        name: str = intake.name  # type: ignore[assignment]
        arguments: dict[str, Any] = intake.arguments  # type: ignore[assignment]
        found = self._find_tool(name)
        frames: FrameStack = self._frames  # type: ignore[assignment]
        if found is None:
            fb = feedback.unknown_tool(name, self._specs) if frames.at_root else frames.unknown(name)
            return CallRecord(name, arguments, fb, None)
        entry, provider = found
        spec = entry.spec
        if (
            self._offered_names is not None
            and spec.name not in self._offered_names
            and spec.name not in self._harness_names
        ):
            return CallRecord(spec.name, arguments, self._not_offered(spec.name), spec.effect)
        if not frames.allows(spec.name):
            return CallRecord(spec.name, arguments, frames.outside(spec.name), spec.effect)
        if intake.argument_error is not None:
            fb = feedback.invalid_arguments(spec.name, intake.argument_error, spec.parameters)
            return CallRecord(spec.name, arguments, fb, spec.effect)
        run = arguments
        if spec.secret_parameters and intake.real:
            run = {k: intake.real[k] if k in spec.secret_parameters and k in intake.real else v for k, v in run.items()}
        try:
            args = entry.validator.validate(run)
        except ArgumentError as exc:
            fb = feedback.invalid_arguments(spec.name, exc, spec.parameters)
            return CallRecord(spec.name, arguments, fb, spec.effect)
        if provider is not None:
            fb = provider.call(self, spec.name, args)
            return CallRecord(spec.name, arguments, fb, spec.effect, confirmed_by(spec.name, fb))
        if spec.effect is Effect.SENSITIVE:
            for p in self._gates:
                refused = p.gate(self, spec)
                if refused is not None:
                    return CallRecord(spec.name, arguments, refused, spec.effect)
            for p in self._gates:
                p.ran(self, spec)
        return CallRecord(spec.name, arguments, self.backend.call(spec.name, args), spec.effect)

    def _find_tool(self, name: str) -> tuple[ToolDef, ToolProvider | None] | None:
        """The offered tool called ``name`` (dotted, or ``app__verb``) and its provider (None for
        the backend's), or None."""
        found = self._tool_map.get(name)
        if found is None:
            entry = self._backend_tools.get(name)
            if entry is not None:
                return entry, None
            if "__" in name:
                dotted = name.replace("__", ".")
                found = self._tool_map.get(dotted)
                if found is None:
                    entry = self._backend_tools.get(dotted)
                    return None if entry is None else (entry, None)
        return found

    def _redact(self, rec: CallRecord) -> CallRecord:
        """``rec`` with the arguments its feedback names ``redacted`` (text typed into a password
        field) recorded as ``***``; their values join the episode's secrets, so they are masked
        wherever they show up later (a screen read back, a message, the verdict)."""
        names = rec.feedback.redacted or []
        typed = [v for k, v in rec.arguments.items() if k in names and isinstance(v, str) and v and v != MASK]
        if typed:
            self._masker = Masker((*self._masker.secrets, *typed), self._masker.keys)
        arguments = {k: (MASK if k in names and v is not None else v) for k, v in rec.arguments.items()}
        return rec._replace(arguments=arguments)

    def _finish_episode(self, truncated: bool) -> Any:
        frames = self._frames.step_frames if self._frames is not None else []
        calls = [
            s.call if f == ROOT_FRAME else s.call._replace(frame=f)
            for s, f in zip(self._steps, frames, strict=True)
            if s.call is not None
        ]
        end = self._end_tables()
        self._episode = (self._before, end, calls, self._clock_or_none())
        self._verdict = verify(
            self.task,
            self._before,
            end,
            calls,
            self._answer,
            steps=len(self._steps),
            errors=self._errors,
            truncated=truncated,
            infrastructure_error=self._infra or self.backend.infrastructure_fault() is not None,
            tokens=self._token_totals or None,
            transient=self.backend.transient_tables(),
            implied=self.backend.implied_records(),
            inconsistencies=self.backend.consistency_issues(),
            frames=self._frames.records() if self._frames is not None else (),
            answer_value=self._answer_value,
            now=self._clock_or_none(),
        )
        if self._masker and self._masker.json_text_hits(self._verdict.model_dump_json()):
            self._verdict = self._masker.model(self._verdict)
        return self._verdict

    def _clock_or_none(self) -> str | None:
        try:
            return self.backend.clock()
        except Exception:
            log.warning("backend clock unavailable for verification", exc_info=True)
            return None

    def _end_tables(self) -> Any:
        tables = self.backend.tables()
        for p in self.providers:
            extra = p.tables()
            if extra:
                tables = {**tables, **extra}
        return tables

    def episode_grounds(self) -> Any:
        """The :class:`~phoneenv.tasks.grounding.Grounds` the last finished episode's told
        claims were held to (the goal, what it changed and read, the fixtures, the clock), with
        :meth:`~phoneenv.tasks.grounding.Grounds.holds` to ask whether a value is one of them.
        Raises ``RuntimeError`` before an episode has finished."""
        if self._episode is None:
            raise RuntimeError("no finished episode yet: play one to its finish first")
        before, end, calls, _ = self._episode
        changes, before, end = episode_changes(
            before, end, transient=self.backend.transient_tables(), implied=self.backend.implied_records()
        )
        return episode_grounds(self.task, before, changes, calls, self.episode_context())[0]

    def episode_context(self) -> Any:
        """The :class:`~phoneenv.tasks.predicates.Context` (contacts, clock at the finish) the
        last finished episode was verified in. Raises ``RuntimeError`` before one has finished."""
        if self._episode is None:
            raise RuntimeError("no finished episode yet: play one to its finish first")
        before, end, _, now = self._episode
        return context_of(end, before, now)

    @property
    def frames(self) -> FrameStack | None:
        """The episode's sub-agent frames (None before the first reset)."""
        return self._frames

    def end_episode(self, answer: str | None, value: Any = None) -> None:
        """End the episode with the agent's ``answer`` (and typed ``value``): the root frame
        closes and the current step terminates. Called by the ``finish`` provider
        (:mod:`phoneenv.harness.providers.finish`) at the root frame."""
        self._answer, self._answer_value, self._ended = answer, value, True
        self._frames.end(answer)  # type: ignore[union-attr]

    @property
    def verdict(self) -> Any:
        """The last episode's :class:`~phoneenv.contract.Verdict`, or None while it runs."""
        return self._verdict

    @property
    def trace(self) -> Trace:
        """The current episode as a :class:`Trace` (secrets shown as ``***``)."""
        steps = []
        fmt = self.backend.format_clock
        step_frames = self._frames.step_frames if self._frames is not None else []
        for n, (rec, raw, fb, clock, latency, tokens, escaped) in enumerate(self._steps, 1):
            call = None if rec is None else ToolCall(name=rec.name, arguments=dict(rec.arguments))
            steps.append(
                Step(
                    index=n,
                    action=call,
                    raw=raw,
                    feedback=fb,
                    clock=fmt(clock),
                    backend=self.backend.name if rec is None else self.backend.served_by(rec.name),
                    tokens=tokens,
                    latency_s=latency,
                    frame=step_frames[n - 1] if n <= len(step_frames) else ROOT_FRAME,
                    escaped=escaped,
                )
            )
        return Trace(
            task_id=self.task.id,
            seed=self._seed,
            backend=self.backend.name,
            category=self.task.category,
            domain=self.task.domain,
            goal=self._masker.value(self.task.goal),
            steps=steps,
            frames=self._frames.records() if self._frames is not None else [],
            verdict=self._verdict,
        )

    def add_agent_tokens(self, tokens: dict[str, int]) -> None:
        """Record what the agent's model spent to produce the next action (``prompt``,
        ``output`` — thinking included — and ``thinking`` tokens): attached to the next step and
        summed into the verdict's ``prompt_tokens``/``output_tokens``/``thinking_tokens``. Call
        before :meth:`step`.

        Raises:
            ValueError: a count that is not a whole number >= 0 (a missing or None one is 0);
                nothing is recorded then.
        """
        counts = {}
        for key in ("prompt", "output", "thinking"):
            raw = tokens.get(key, 0)
            value = 0 if raw is None else raw
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"tokens[{key!r}] is {raw!r}: a token count is a whole number >= 0")
            counts[key] = int(value)
        pending = self._pending_tokens or {}
        for key, value in counts.items():
            pending[key] = pending.get(key, 0) + value
            self._token_totals[key] = self._token_totals.get(key, 0) + value
        self._pending_tokens = pending


_TIME_LIMIT_RESET = gym.wrappers.TimeLimit.reset.__code__


def _time_limit_above(env: PhonePlanEnv) -> int | None:
    """The smallest ``max_episode_steps`` of the ``gymnasium.wrappers.TimeLimit`` wrappers
    resetting ``env`` now (found on the call stack of this reset), or None.

    ``TimeLimit`` truncates after the env's step returned, so the env would never judge that
    step: knowing the limit, the env truncates itself at the same step, with its verdict in
    ``info``. This is how ``gym.make(..., max_episode_steps=n)`` and vector envs built from it
    keep ``verdict``, ``success`` and ``progress``. Gymnasium passes nothing down to the env,
    and ``gym.make`` offers no hook outside its ``TimeLimit`` that leaves ``make_vec``'s vector
    entry point usable, hence the look at the callers' frames (only ``TimeLimit.reset``'s).
    """
    found: int | None = None
    frame = sys._getframe(1).f_back  # the caller of PhonePlanEnv.reset (None when called from C)
    for _ in range(64):  # wrappers between gym.make's TimeLimit and the env: a handful
        if frame is None:
            break
        if frame.f_code is _TIME_LIMIT_RESET:
            wrapper = frame.f_locals.get("self")
            limit = getattr(wrapper, "_max_episode_steps", None)
            if (
                isinstance(wrapper, gym.wrappers.TimeLimit)
                and wrapper.unwrapped is env
                and isinstance(limit, int)
                and limit > 0
            ):
                found = limit if found is None else min(found, limit)
        frame = frame.f_back
    return found


_MAKE_ARGUMENTS = ("max_episode_steps", "disable_env_checker")
"""``gym.make``'s own arguments (taken by ``gym.make``, never passed to the env)."""


def _unknown_arguments(unknown: dict[str, Any]) -> TypeError:
    """The error for keyword arguments ``PhonePlanEnv`` does not take: each with its close
    matches, then every accepted argument."""
    import difflib
    import inspect

    accepted = [n for n in inspect.signature(PhonePlanEnv.__init__).parameters if n not in ("self", "unknown")]
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, [*accepted, *_MAKE_ARGUMENTS], n=2, cutoff=0.6)
        parts.append(f"{name!r}" + (f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""))
    many = "s" if len(parts) > 1 else ""
    return TypeError(
        f"PhonePlan-v0 got unknown argument{many} {', '.join(parts)}; it accepts {', '.join(accepted)}"
        f" (and gym.make takes {', '.join(_MAKE_ARGUMENTS)})"
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r}" if isinstance(value, (str, int, float)) else type(value).__name__


def _check_arguments(
    *,
    task: Any,
    tasks: Any,
    backend: Any,
    screenshots: Any,
    max_steps: Any,
    render_mode: Any,
    record_wall_time: Any,
    screen_size: Any,
    skills: Any,
    memory: Any,
    user: Any,
    memory_path: Any,
    delegation: Any,
    tools: Any,
    tools_k: Any,
    tools_budget: Any,
) -> tuple[int | None, tuple[int, int], int, int | None]:
    """Check :class:`PhonePlanEnv`'s arguments before anything is built; returns ``max_steps``,
    ``screen_size``, ``tools_k`` and ``tools_budget`` normalised (plain ``int``, a tuple of them).

    Raises:
        TypeError: an argument of the wrong type, naming it and what it accepts.
        ValueError: a value out of range, or ``task`` and ``tasks`` together.
    """
    if task is not None and tasks is not None:
        raise ValueError(
            "pass task= (one task: an id or a TaskSpec) or tasks= (a selector or a list of TaskSpec), not both"
        )
    if task is not None and not isinstance(task, (str, TaskSpec)):
        raise TypeError(f"task must be a task id (str) or a TaskSpec, not {_kind(task)}")
    if tasks is not None and not isinstance(tasks, str):
        if not isinstance(tasks, Sequence) or isinstance(tasks, bytes):
            raise TypeError(f"tasks must be a selector (str) or a list of TaskSpec, not {_kind(tasks)}")
        wrong = next((t for t in tasks if not isinstance(t, TaskSpec)), None)
        if wrong is not None:
            raise TypeError(
                f"tasks must be a selector (str) or a list of TaskSpec, not a list holding a {type(wrong).__name__}"
                + (
                    " (put ids in a selector such as 'clock.*', or pass one id as task=)"
                    if isinstance(wrong, str)
                    else ""
                )
            )
    if not isinstance(backend, (str, Backend)):
        raise TypeError(f"backend must be a backend name (str) or a Backend, not {_kind(backend)}")
    for name, value in (("screenshots", screenshots), ("record_wall_time", record_wall_time)):
        if not _is_bool(value):
            raise TypeError(f"{name} must be True or False, not {_kind(value)}")
    if max_steps is not None:
        if not _is_int(max_steps):
            raise TypeError(f"max_steps must be an int >= 1 or None, not {_kind(max_steps)}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be an int >= 1 or None, not {max_steps}")
        max_steps = int(max_steps)
    if render_mode not in (None, "rgb_array", "ansi"):
        raise ValueError(f"render_mode must be None, 'rgb_array' or 'ansi', not {render_mode!r}")
    if not isinstance(screen_size, (tuple, list)) or len(screen_size) != 2 or not all(_is_int(v) for v in screen_size):
        raise TypeError(f"screen_size must be (width, height) in pixels, two ints, not {screen_size!r}")
    if min(screen_size) < 1:
        raise ValueError(f"screen_size must be (width, height) in pixels, both >= 1, not {tuple(screen_size)!r}")
    if not _is_bool(skills):
        from phoneenv.harness.skills import SkillLibrary

        if not isinstance(skills, SkillLibrary):
            raise TypeError(f"skills must be True, False or a SkillLibrary, not {_kind(skills)}")
    if not _is_bool(memory) and not isinstance(memory, EpisodeMemory):
        raise TypeError(f"memory must be True, False or an EpisodeMemory, not {_kind(memory)}")
    if user is not None and not isinstance(user, str):
        raise TypeError(f"user must be a str or None, not {_kind(user)}")
    if memory_path is not None and not isinstance(memory_path, (str, os.PathLike)):
        raise TypeError(f"memory_path must be a path (str or Path) or None, not {_kind(memory_path)}")
    if delegation is not None and not _is_bool(delegation):
        raise TypeError(f"delegation must be True, False or None, not {_kind(delegation)}")
    if not isinstance(tools, (str, ToolSelector)):
        raise TypeError(f"tools must be 'all', 'task', 'retrieve', 'search' or a ToolSelector, not {_kind(tools)}")
    if not _is_int(tools_k):
        raise TypeError(f"tools_k must be an int >= 0, not {_kind(tools_k)}")
    if tools_k < 0:
        raise ValueError(f"tools_k must be an int >= 0, not {tools_k}")
    if tools_budget is not None:
        if not _is_int(tools_budget):
            raise TypeError(f"tools_budget must be an int >= 1 (tokens) or None, not {_kind(tools_budget)}")
        if tools_budget < 1:
            raise ValueError(f"tools_budget must be an int >= 1 (tokens) or None, not {tools_budget}")
        if isinstance(tools, ToolSelector) or tools in ("all", "task"):
            raise ValueError(
                "tools_budget goes with tools='retrieve' or 'search' (a ToolSelector carries its own budget)"
            )
        tools_budget = int(tools_budget)
    return max_steps, (int(screen_size[0]), int(screen_size[1])), int(tools_k), tools_budget


def _final_info(verdict: Any) -> dict[str, Any]:
    """The ``info`` keys of an episode's last step, from its verdict."""
    return {
        "verdict": verdict.model_dump(mode="json"),
        "success": verdict.success,
        "progress": verdict.progress,
        "steps": verdict.steps,
        "tool_calls": verdict.tool_calls,
        "errors": verdict.errors,
        "infrastructure_error": verdict.infrastructure_error,
    }


class JudgeOnTruncation(gym.Wrapper[dict[str, Any], str, dict[str, Any], str], gym.utils.RecordConstructorArgs):
    """Judge a PhonePlan-v0 episode that a wrapper inside this one truncates.

    ``gymnasium.wrappers.TimeLimit`` sets ``truncated=True`` after the env's step returned, so
    the env itself never learns that its episode ended and its ``info`` would lack the verdict.
    Placed outside the limit, this wrapper sees the truncation, ends the episode with
    :meth:`PhonePlanEnv.truncate` and adds ``verdict``, ``success``, ``progress``, ``steps``,
    ``tool_calls``, ``errors`` and ``infrastructure_error`` to that step's ``info`` (the
    reward stays 0.0: a truncated episode does not succeed). Steps the env ended itself pass
    unchanged.

    Gymnasium's own ``TimeLimit`` needs no such wrapper (the env reads its limit at reset and
    judges that step itself); wrap a limit of your own that truncates from outside::

        env = JudgeOnTruncation(MyBudget(PhonePlanEnv(...)))
    """

    def __init__(self, env: gym.Env[dict[str, Any], str]) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)

    def step(self, action: str) -> tuple[dict[str, Any], Any, bool, bool, dict[str, Any]]:
        """Step the wrapped env; on an outside truncation, judge the episode into ``info``."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if truncated and not terminated and "verdict" not in info:
            base = self.env.unwrapped
            final = base.truncate() if isinstance(base, PhonePlanEnv) else {}
            if final:
                info = {**info, **final}
        return obs, reward, terminated, truncated, info


@functools.lru_cache(maxsize=1)
def _shipped_skills() -> Any:
    from phoneenv.harness.skills import SkillLibrary

    return SkillLibrary.load()


def _forget_apps() -> None:
    """Forget the shipped skills loaded so far (called by :func:`apps.add_path`)."""
    _shipped_skills.cache_clear()


def _make_memory(memory: Any, user: str | None, memory_path: str | Path | None) -> EpisodeMemory | None:
    if isinstance(memory, EpisodeMemory):
        if user is not None or memory_path is not None:
            raise ValueError("pass user= and memory_path= to EpisodeMemory, not beside it")
        return memory
    if not isinstance(memory, bool):
        raise TypeError(f"memory must be a bool or an EpisodeMemory, not {type(memory).__name__}")
    if not memory:
        if user is not None or memory_path is not None:
            raise ValueError("user= and memory_path= need memory=True")
        return None
    if user is not None and memory_path is None:
        raise ValueError("user= needs memory_path= (the SQLite file that keeps the user's memory)")
    return EpisodeMemory(memory_path, user)


def _lookup(task_id: str) -> TaskSpec:
    from phoneenv.tasks import get_task

    return get_task(task_id)
