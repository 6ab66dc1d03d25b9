"""The planning cold start: supervised fine-tuning on verified traces, with erroneous turns masked.

Pipeline::

    traces (phoneenv Trace objects or JSONL files, e.g. from reference_traces)
      → traces_to_examples   chat examples in the LLMPlanner's format, per-turn loss weights
      → tokenize_example     input_ids + per-token assistant_masks (prefix rendering)
      → build_sft_dataset    a pre-tokenised datasets.Dataset
      → train_sft            TRL SFTTrainer on it (CPU is fine for the tiny model)

**Conversation format.** Exactly what :class:`agents.planner.LLMPlanner` (``name_style="underscore"``)
sends to its model: a system message ``SYSTEM_PROMPT.format(goal=...)``, the goal as the user
message, then per trace step one assistant message with one ``tool_calls`` entry (tool names
``app__verb``, ``arguments`` a JSON string as ``json.dumps`` writes it, ids ``call_<step>``) and
one ``tool`` message whose content is the feedback JSON the env put in the observation. A step
whose action did not parse becomes an assistant message with the raw text (the trace keeps its
first 200 characters) and a ``user`` message "Your reply had no tool call I could run. Feedback:
...", as the planner writes it. The feedback of the last step (the ``finish`` result) is left out:
the planner never sees it. ``tools`` are the
env's tools in OpenAI format, renamed ``app__verb`` (the planner's ``info["tools"]``): with a
``tool_filter`` (:mod:`agents.toolfilter`), exactly those the planner and the RL rollout offer in
that trace's episode under the same filter (:func:`trace_tools`). An example stores them as one
JSON string (read them back with :func:`example_tools`): the tools' JSON Schemas differ in shape
from tool to tool, which Arrow cannot type as one column, and TRL's SFTTrainer decodes a string
``tools`` column itself; so ``datasets.Dataset.from_list(examples)`` works.

**Errors to mask.** Reference traces have no erroneous turn. :func:`detour_traces` plays each
task's reference plan with random detours (a wrong tool, a broken argument, a harmless read) that
the plan's next call recovers from; only the plan's calls are trained, the detours and their
error feedback stay in the context with weight 0. :func:`train_sft` reports ``trained_tokens``
and ``masked_tokens`` (the tokens of the weight-0 replies).

**Loss weights.** Every assistant message carries ``"weight"`` (the per-message weight of
OpenAI's chat fine-tuning format): 1 when its call drew an ``ok`` feedback, 0 when it drew an error
(``invalid_arguments``, ``unknown_tool``, ``confirmation_required``, an unparseable reply, an
infrastructure error...) or when an argument was redacted (``"***"``, a secret the trace does not
keep, so the call cannot be learnt as written). Weight-0 turns stay in the context — the model
learns to recover from the error feedback that follows — but add no loss.

**Masking.** :func:`tokenize_example` renders the whole conversation with the tokenizer's chat
template, then, for each trained assistant message ``i``, renders the prefix ``messages[:i]`` with
the generation prompt and the prefix ``messages[:i+1]``; the characters between the two lengths are
the assistant's reply (up to and including the end-of-turn token, the newline after it excluded),
checked to be a prefix of the full rendering. Tokens whose character offset starts inside such a
span get mask 1, all others (system, user, tool results, the ``<|im_start|>assistant\\n`` header,
weight-0 replies) 0. No ``{% generation %}`` markers are needed, so any template that renders
prefixes consistently works (the check raises otherwise).

**TRL.** SFTTrainer (TRL 1.16) accepts pre-tokenised datasets (an ``input_ids`` column) and, during
dataset preparation, folds an ``assistant_masks`` column into ``labels`` (-100 where the mask is 0)
whatever ``assistant_only_loss`` says; ``completion_mask`` would only be honoured with
``completion_only_loss=True``. So the dataset carries ``input_ids`` + ``assistant_masks`` and the
trainer is used unmodified (its default collator pads the labels with -100). ``assistant_only_loss``
must stay off: it needs a conversational (untokenised) dataset and ``{% generation %}`` markers in
the template (TRL swaps in a training template of its own when they are missing) and raises on a
tokenised dataset. TRL truncation (``max_length``) is disabled: cutting a planning conversation
from either end drops either the trained turns or the goal and tools, so over-long examples are
dropped instead (:attr:`SFTRunConfig.max_length`).
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agents.planner import SYSTEM_PROMPT, system_message
from agents.toolfilter import ToolFilter, allowed_tools, offered, save_model_filter
from phoneenv.contract import Feedback, TaskSpec, ToolCall, ToolSpec, Trace
from phoneenv.extras import require

__all__ = [
    "DETOUR_AGENT",
    "NO_CALL_PREFIX",
    "REDACTED",
    "SFTRunConfig",
    "build_sft_dataset",
    "checked_plan",
    "checked_traces",
    "detour_traces",
    "episode_tools",
    "example_tools",
    "feedback_text",
    "load_traces",
    "planner_tools",
    "reference_traces",
    "tokenize_example",
    "trace_info",
    "trace_to_example",
    "trace_tools",
    "traces_to_examples",
    "train_sft",
]

log = logging.getLogger(__name__)

REDACTED = "***"
"""How a trace shows a secret argument; a call carrying it is kept in context but not trained."""

NO_CALL_PREFIX = "Your reply had no tool call I could run. Feedback: "
"""The user message :class:`~agents.planner.LLMPlanner` sends after a reply with no tool call."""

TraceSource = Trace | str | Path

DETOUR_AGENT = "detour"
"""The ``agent`` name of :func:`detour_traces` episodes (their traces' ``agent`` field)."""


# ---------------------------------------------------------------------------------------------
# Traces
# ---------------------------------------------------------------------------------------------


def load_traces(sources: TraceSource | Iterable[TraceSource]) -> list[Trace]:
    """Traces from :class:`Trace` objects, JSONL files (one trace a line) or folders of them.

    A folder contributes its trace files in path order, found as
    :func:`phoneenv.tracefiles.find_trace_files` finds them (``traces/**/*.jsonl``, so a multi-seed
    run's ``traces/seed-<s>/`` folders too); a run's other JSON Lines files (``results.jsonl``,
    ``metrics.jsonl``...) are skipped.
    """
    from phoneenv.tracefiles import find_trace_files

    if isinstance(sources, (Trace, str, Path)):
        sources = [sources]
    out: list[Trace] = []
    for src in sources:
        if isinstance(src, Trace):
            out.append(src)
            continue
        path = Path(src)
        files = find_trace_files(path) if path.is_dir() else [path]
        for f in files:
            with f.open(encoding="utf-8") as fh:
                out.extend(Trace.model_validate_json(line) for line in fh if line.strip())
    return out


def reference_traces(
    selector: str | Sequence[TaskSpec],
    out_dir: Path | str,
    *,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
) -> list[Trace]:
    """Run :class:`~agents.reference.ReferenceAgent` on the selected tasks that have a reference
    plan, through :func:`phoneenv.evaluation.run_episodes` (one JSONL trace per episode in
    ``out_dir``), and load the traces back, in task order.

    Args:
        selector: a suite selector (``"contacts.*"``, ``"template:mail.reply"``...) or TaskSpecs
            (tasks outside the suite are looked up among themselves first).
        out_dir: where the traces go.
        seed: the episode seed.
        env_kwargs: passed to the env (``backend="auto"`` by default: each task's first backend).
    """
    from agents.reference import ReferenceAgent
    from phoneenv.evaluation import run_episodes
    from phoneenv.tasks import get_task, select

    tasks = select(selector) if isinstance(selector, str) else list(selector)
    tasks = [t for t in tasks if t.reference_plan]
    if not tasks:
        raise ValueError(f"no task with a reference plan matches {selector!r}")
    by_id = {t.id: t for t in tasks}
    agent = ReferenceAgent(lookup=lambda task_id: by_id.get(task_id) or get_task(task_id))
    results = run_episodes(agent, tasks, Path(out_dir), seed=seed, env_kwargs=env_kwargs)
    return load_traces([r.trace_path for r in results if r.trace_path])


class _DetourAgent:
    """Plays a task's reference plan, but before each plan step, with probability ``rate`` (never
    twice in a row), first makes one wrong call: a random schema-valid call of a read-only tool
    among the ``"task"`` filter's tools (the random agent's generator: a harmless read, or an error
    such as ``not_found``), the plan's next tool with a broken argument (``invalid_arguments``), or
    a tool that does not exist (``unknown_tool``). The wrong calls change nothing in the world, so
    the plan still reaches the goal (unless a step budget runs out); the recovery is the plan's
    next call."""

    name = DETOUR_AGENT

    def __init__(self, lookup: Any, seed: int, rate: float, reads: frozenset[str]) -> None:
        from agents.random_agent import RandomAgent
        from agents.reference import ReferenceAgent

        self.reference = ReferenceAgent(lookup=lookup)
        self.random = RandomAgent(seed=seed, finish_p=0.0)
        self.seed, self.rate, self.reads = seed, rate, reads
        self._plan: list[ToolCall] = []
        self._tools: list[dict[str, Any]] = []

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        import random

        from agents.random_agent import episode_seed

        self.reference.reset(observation, info)
        self._plan = list(self.reference.lookup(info["task_id"]).reference_plan)
        allowed = allowed_tools("task", info)
        self._tools = [
            t for t in info["tools"] if offered(t["function"]["name"], allowed) and t["function"]["name"] in self.reads
        ]
        self.random.reset(observation, {**info, "tools": self._tools})
        self.rng = random.Random(episode_seed(self.seed, "detour:" + str(info["task_id"])))
        self._detoured = False

    def _broken(self, call: ToolCall) -> dict[str, Any]:
        if call.arguments:
            key = self.rng.choice(sorted(call.arguments))
            return {"name": call.name, "arguments": {**call.arguments, key: {"wrong": [1, 2]}}}
        return {"name": call.name + "_all", "arguments": {}}  # no argument to break: a tool that does not exist

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        from agents.base import AgentAction

        nxt = self.reference._i
        if nxt < len(self._plan) and not self._detoured and self.rng.random() < self.rate:
            self._detoured = True
            kind = self.rng.choice(["read", "arguments", "tool"])
            if kind == "read" and self._tools:
                return self.random.act(observation, {**info, "tools": self._tools})
            call = self._plan[nxt]
            if kind == "tool":
                return AgentAction(json.dumps({"name": call.name + "_all", "arguments": call.arguments}))
            return AgentAction(json.dumps(self._broken(call)))
        self._detoured = False
        return self.reference.act(observation, info)


def detour_traces(
    selector: str | Sequence[TaskSpec],
    out_dir: Path | str,
    *,
    per_task: int = 1,
    seed: int = 0,
    detour_rate: float = 0.3,
    env_kwargs: dict[str, Any] | None = None,
) -> list[Trace]:
    """Episodes with erroneous turns to mask: the reference plan with random detours.

    Before each step of a task's reference plan, with probability ``detour_rate`` the agent
    first makes one wrong call (see :class:`_DetourAgent`: a random read of the task's apps, the
    next tool with a broken argument, or a tool that does not exist), reads the feedback, and
    recovers with the plan's call. The traces (``agent == "detour"``) go to ``out_dir/r<k>/``
    and are returned in run then task order; :func:`traces_to_examples` keeps them whether they
    succeeded or not and trains only their plan calls: the errors and their feedback stay in the
    context, masked (weight 0).

    Args:
        selector: a suite selector or TaskSpecs (those with a reference plan are played).
        out_dir: where the traces go.
        per_task: episodes per task; run ``k`` uses the episode seed and the agent seed ``seed + k``.
        seed: the first seed.
        detour_rate: probability of a detour before each plan step, in [0, 1].
        env_kwargs: passed to the env (``backend="auto"``: each task's first backend).

    Raises:
        ValueError: no selected task has a reference plan, ``per_task`` < 1 or ``detour_rate``
            outside [0, 1].
    """
    from phoneenv.evaluation import run_episodes
    from phoneenv.tasks import get_task, select

    if per_task < 1:
        raise ValueError(f"per_task must be at least 1, not {per_task}")
    if not 0.0 <= detour_rate <= 1.0:
        raise ValueError(f"detour_rate must lie in [0, 1], not {detour_rate}")
    tasks = select(selector) if isinstance(selector, str) else list(selector)
    tasks = [t for t in tasks if t.reference_plan]
    if not tasks:
        raise ValueError(f"no task with a reference plan matches {selector!r}")
    by_id = {t.id: t for t in tasks}
    reads = _read_tools()
    out: list[Trace] = []
    for k in range(per_task):
        agent = _DetourAgent(lambda task_id: by_id.get(task_id) or get_task(task_id), seed + k, detour_rate, reads)
        results = run_episodes(agent, tasks, Path(out_dir) / f"r{k}", seed=seed + k, env_kwargs=env_kwargs)
        out.extend(load_traces([r.trace_path for r in results if r.trace_path]))
    return out


def _read_tools() -> frozenset[str]:
    """The names of the sandbox's read-only tools (``Effect.READ``), delegation tools included."""
    from phoneenv.contract import Effect
    from phoneenv.env import PhonePlanEnv

    env = PhonePlanEnv(backend="sandbox", delegation=True)
    try:
        return frozenset(spec.name for spec in env.tool_specs if spec.effect == Effect.READ)
    finally:
        env.close()


def checked_plan(plan: Sequence[ToolCall], reads: Iterable[str]) -> list[ToolCall]:
    """A plan that checks its work: after every call that is not a read (``reads``, tool names)
    and not ``finish``, the plan's last read before it is made again.

    The calls added change nothing, so the plan still reaches the same end state; they only cost
    turns and output tokens. A plan with no read before its writes is returned unchanged.

    Args:
        plan: a reference plan.
        reads: names of the read-only tools.

    Returns:
        A new list of calls, ``len(plan)`` plus one per write that follows a read.
    """
    reads = frozenset(reads)
    out: list[ToolCall] = []
    last_read: ToolCall | None = None
    for call in plan:
        out.append(call)
        if call.name in reads:
            last_read = call
        elif call.name != "finish" and last_read is not None:
            out.append(last_read.model_copy(deep=True))
    return out


def checked_traces(
    selector: str | Sequence[TaskSpec],
    out_dir: Path | str,
    *,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
) -> list[Trace]:
    """Successful but redundant episodes: each task's reference plan as :func:`checked_plan`
    makes it (a re-read after every change), played by the reference agent.

    Every call succeeds and the task is solved, so :func:`traces_to_examples` trains every turn:
    a model fine-tuned on these beside :func:`reference_traces` learns two correct styles, one
    with redundant reads. That gives efficiency rewards (:mod:`rl.care`) something to cut; it is
    how ``benchmarks/care_vs_grpo.py`` builds its SFT start.

    Args:
        selector: a suite selector or TaskSpecs (those with a reference plan are played).
        out_dir: where the traces go.
        seed: the episode seed.
        env_kwargs: passed to the env.

    Raises:
        ValueError: no selected task has a reference plan.
    """
    from phoneenv.tasks import select

    tasks = select(selector) if isinstance(selector, str) else list(selector)
    reads = _read_tools()
    checked = [t.model_copy(update={"reference_plan": checked_plan(t.reference_plan, reads)}) for t in tasks]
    # reference_traces keeps the tasks with a plan and raises when none has one
    return reference_traces(checked, out_dir, seed=seed, env_kwargs=env_kwargs)


# ---------------------------------------------------------------------------------------------
# Traces → chat examples
# ---------------------------------------------------------------------------------------------


def _api_name(name: str) -> str:
    return name.replace(".", "__")


def planner_tools(tool_specs_or_tools: Iterable[ToolSpec | dict[str, Any]]) -> list[dict[str, Any]]:
    """Tools as the LLMPlanner offers them: OpenAI ``tools`` entries named ``app__verb``.

    Accepts :class:`ToolSpec`\\ s or OpenAI entries (``env.tools``/``info["tools"]``), dotted or not.
    """
    out = []
    for tool in tool_specs_or_tools:
        if isinstance(tool, ToolSpec):
            out.append(tool.to_openai(name_style="underscore"))
        else:
            fn = dict(tool["function"])
            fn["name"] = _api_name(fn["name"])
            out.append({"type": "function", "function": fn})
    return out


_ENV_TOOLS: dict[str, list[dict[str, Any]]] = {}
_TASK_TOOLS: dict[tuple[str, str], list[dict[str, Any]]] = {}


def episode_tools(
    backend: str = "sandbox", tool_filter: ToolFilter = None, info: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The tools a ``PhonePlan-v0`` episode on ``backend`` offers (finish and user.confirm
    included), renamed ``app__verb``: what the planner passes as ``tools``. Cached per backend.
    With ``tool_filter`` (see :mod:`agents.toolfilter`; ``"task"`` needs the episode's ``info``
    with its ``apps``), only the tools that filter keeps, in the same order.

    Raises:
        ValueError: a malformed filter, or ``"task"`` without ``info["apps"]``.
    """
    allowed = allowed_tools(tool_filter, info)
    if backend not in _ENV_TOOLS:
        from phoneenv.env import PhonePlanEnv

        env = PhonePlanEnv(backend=backend)
        try:
            _ENV_TOOLS[backend] = planner_tools(env.tools)
        finally:
            env.close()
    return [copy.deepcopy(t) for t in _ENV_TOOLS[backend] if offered(t["function"]["name"], allowed)]


def trace_info(trace: Trace) -> dict[str, Any]:
    """The part of a trace's reset ``info`` a tool filter reads: ``apps`` (the suite task's apps;
    for a task outside the suite, the apps the trace called) and ``category``."""
    from phoneenv.tasks import get_task

    try:
        apps = list(get_task(trace.task_id).apps)
    except KeyError:
        called = {s.action.name.split(".")[0] for s in trace.steps if s.action is not None and "." in s.action.name}
        apps = sorted(called - {"user", "system", "finish"})
    return {"apps": apps, "category": trace.category.value}


def _reset_tools(task_id: str, backend: str) -> list[dict[str, Any]]:
    """The planner-format tools of a reset of the suite task ``task_id`` on the sandbox (its
    ``info["tools"]``: ``agent.delegate`` where the task delegates, in the env's order); for other
    backends or a task outside the suite, the backend's tools (:func:`episode_tools`)."""
    from phoneenv.tasks import get_task

    key = (task_id, backend)
    if key not in _TASK_TOOLS:
        try:
            task = get_task(task_id)
        except KeyError:
            task = None
        if backend != "sandbox" or task is None:
            return episode_tools(backend)
        from phoneenv.env import PhonePlanEnv

        env = PhonePlanEnv(task=task, backend="sandbox")
        try:
            _, info = env.reset(seed=0)
            _TASK_TOOLS[key] = planner_tools(info["tools"])
        finally:
            env.close()
    return copy.deepcopy(_TASK_TOOLS[key])


def _reset_skills(trace: Trace, harness: Any) -> list[dict[str, str]]:
    """``info["skills"]`` of a sandbox reset of the trace's suite task with ``harness``'s skills
    (cached per task and version); ``[]`` for a task outside the suite or another backend."""
    from phoneenv.tasks import get_task

    key = (trace.task_id, harness.name, str(harness.path))
    if key not in _TASK_SKILLS:
        try:
            task = get_task(trace.task_id)
        except KeyError:
            return []
        if trace.backend != "sandbox":
            return []
        from phoneenv.env import PhonePlanEnv

        env = PhonePlanEnv(task=task, backend="sandbox", **harness.env_kwargs())
        try:
            _, info = env.reset(seed=0)
            _TASK_SKILLS[key] = list(info.get("skills") or [])
        finally:
            env.close()
    return copy.deepcopy(_TASK_SKILLS[key])


_TASK_SKILLS: dict[tuple[str, str, str], list[dict[str, str]]] = {}


def trace_tools(
    trace: Trace,
    tool_filter: ToolFilter = None,
    tool_specs_or_tools: Iterable[ToolSpec | dict[str, Any]] | None = None,
    extra: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Exactly the tools the planner or the RL rollout offers in ``trace``'s episode under
    ``tool_filter`` (:mod:`agents.toolfilter`, resolved with :func:`trace_info`), named
    ``app__verb``: the reset's tools of the trace's task (sandbox; the backend's tools otherwise),
    or ``tool_specs_or_tools`` when given, filtered. ``extra``: tool names offered whatever the
    filter says (``skills.read`` when a harness lists skills).

    Raises:
        ValueError: a malformed filter.
    """
    tools = planner_tools(tool_specs_or_tools) if tool_specs_or_tools is not None else None
    if tools is None:
        tools = _reset_tools(trace.task_id, trace.backend)
    allowed = allowed_tools(tool_filter, trace_info(trace))
    if allowed is not None and extra:
        allowed = allowed | frozenset(extra)
    return [t for t in tools if offered(t["function"]["name"], allowed)]


def feedback_text(feedback: Feedback) -> str:
    """The observation's ``feedback`` string for a step's :class:`Feedback` (as
    ``PhonePlanEnv._obs`` writes it: compact JSON, ASCII, ``None`` fields left out, replaced by a
    short error when longer than the observation allows)."""
    from phoneenv.env import MAX_TEXT

    text = feedback.model_dump_json(exclude_none=True, ensure_ascii=True)
    if len(text) > MAX_TEXT:
        text = Feedback(
            ok=feedback.ok, error=feedback.error, message="result too long to show; narrow the query"
        ).model_dump_json(exclude_none=True)
    return text


def _goal_text(goal: str) -> str:
    from phoneenv.env import ascii_text  # the env's goal observation is ASCII with backslash escapes

    return ascii_text(goal)


def _redacted(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_redacted(v) for v in value.values())
    if isinstance(value, list):
        return any(_redacted(v) for v in value)
    return value == REDACTED


def _on_plan(trace: Trace, plan: Sequence[ToolCall]) -> set[int]:
    """Indices of the steps of ``trace`` that play ``plan``'s calls in order (same tool, same
    arguments; a redacted argument matches any value); every other step is a detour."""
    hits: set[int] = set()
    j = 0
    for step in trace.steps:
        if j >= len(plan) or step.action is None:
            continue
        want = plan[j]
        args, expected = step.action.arguments, want.arguments
        same = args == expected or (_redacted(args) and set(args) == set(expected))
        if step.action.name == want.name and same:
            hits.add(step.index)
            j += 1
    return hits


def trace_to_example(
    trace: Trace,
    tools: list[dict[str, Any]],
    *,
    system_prompt: str = SYSTEM_PROMPT,
    plan: Sequence[ToolCall] | None = None,
    skills: Sequence[dict[str, str]] = (),
    instructions: str = "",
) -> dict[str, Any]:
    """One trace as a chat example ``{"task_id", "success", "messages", "tools"}`` (see the
    module docstring for the format and the ``weight`` of each assistant message; ``tools`` is
    the JSON text of ``tools``, see :func:`example_tools`). ``skills`` and ``instructions``: what
    a harness version adds to the system message (:func:`agents.planner.system_message`).

    With ``plan`` (the reference plan of a :func:`detour_traces` episode), only the steps that
    play the plan's calls in order can be trained; the detours stay in context with weight 0, a
    harmless read that succeeded included."""
    trainable = _on_plan(trace, plan) if plan is not None else None
    goal = _goal_text(trace.goal)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_message(goal, template=system_prompt, skills=skills,
                                                     instructions=instructions)},
        {"role": "user", "content": goal},
    ]  # fmt: skip
    last = len(trace.steps) - 1
    for n, step in enumerate(trace.steps):
        fb = feedback_text(step.feedback)
        if step.action is None:
            messages.append({"role": "assistant", "content": step.raw or "", "weight": 0})
            if n < last:
                messages.append({"role": "user", "content": NO_CALL_PREFIX + fb})
            continue
        call_id = f"call_{step.index}"
        ok = step.feedback.ok and not _redacted(step.action.arguments)
        if trainable is not None:
            ok = ok and step.index in trainable
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": _api_name(step.action.name),
                            "arguments": json.dumps(step.action.arguments),
                        },
                    }
                ],
                "weight": 1 if ok else 0,
            }
        )
        if n < last:
            messages.append({"role": "tool", "tool_call_id": call_id, "content": fb})
    success = bool(trace.verdict and trace.verdict.success)
    return {"task_id": trace.task_id, "success": success, "messages": messages, "tools": json.dumps(tools)}


def example_tools(example: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools of a chat example (OpenAI entries), from its ``tools`` JSON string (or list, as
    examples made before tools were stored as JSON hold them); [] when it has none."""
    tools = example.get("tools")
    if isinstance(tools, str):
        tools = json.loads(tools)
    return list(tools or [])


def traces_to_examples(
    traces: TraceSource | Iterable[TraceSource],
    tool_specs_or_tools: Iterable[ToolSpec | dict[str, Any]] | None = None,
    *,
    include_failed: bool = False,
    include_inconsistent: bool = False,
    system_prompt: str = SYSTEM_PROMPT,
    tool_filter: ToolFilter = None,
    harness: Any = None,
) -> list[dict[str, Any]]:
    """Verified traces → chat examples in the LLMPlanner's format (see the module docstring).

    Args:
        traces: :class:`Trace` objects, JSONL files or folders of them.
        tool_specs_or_tools: the tools offered (ToolSpecs or OpenAI entries); None: the env's own
            for each trace's episode (:func:`trace_tools`).
        include_failed: keep traces whose verdict did not succeed (or that have none); their
            ``ok`` turns are trained too, so use with care. Default: successful traces only.
            Episodes of :func:`detour_traces` (``trace.agent == "detour"``) are kept when they
            failed too: only their reference-plan calls are trained (:func:`trace_to_example`'s
            ``plan``), so their detours and recoveries add context, never loss.
        include_inconsistent: keep traces whose simulated world contradicted itself
            (``verdict.inconsistent``); dropped by default.
        system_prompt: the planner's system prompt template (``{goal}``).
        tool_filter: the tool filter of :mod:`agents.toolfilter` (``"all"``/None, ``"task"``, or
            names), resolved per trace as the planner and the RL rollout resolve it per episode
            (:func:`trace_tools`): train with the filter you evaluate and train RL with.
        harness: a :class:`phoneenv.loop.harness.Harness` whose prompt the examples carry: its
            own skills listed (those a reset of each trace's task with the version's skills
            lists; ``skills.read`` offered then) and its instructions, as ``eval --harness`` and
            ``train rl --harness`` prompt; None: the base prompt (v0).
    """
    from agents.planner import listed_skills
    from phoneenv.tasks import get_task

    planner = harness.planner_kwargs() if harness is not None else {}
    instructions = planner.get("instructions", "")

    given = planner_tools(tool_specs_or_tools) if tool_specs_or_tools is not None else None
    out = []
    dropped = 0
    for trace in load_traces(traces):
        v = trace.verdict
        plan = None
        if trace.agent == DETOUR_AGENT:
            with contextlib.suppress(KeyError):
                plan = get_task(trace.task_id).reference_plan
            if plan is None:
                log.warning("no reference plan for the detour trace of %s: its ok turns are trained", trace.task_id)
        if not include_failed and plan is None and not (v is not None and v.success):
            dropped += 1
            continue
        if not include_inconsistent and v is not None and v.inconsistent:
            dropped += 1
            continue
        skills = listed_skills({"skills": _reset_skills(trace, harness)}, planner["list_skills"]) if (
            planner.get("list_skills")
        ) else []  # fmt: skip
        tools = trace_tools(trace, tool_filter, given, extra=("skills.read",) if skills else ())
        out.append(
            trace_to_example(
                trace, tools, system_prompt=system_prompt, plan=plan, skills=skills, instructions=instructions
            )
        )
    if dropped:
        log.info("traces_to_examples: kept %d traces, dropped %d (failed or inconsistent)", len(out), dropped)
    return out


# ---------------------------------------------------------------------------------------------
# Tokenisation with a per-token loss mask
# ---------------------------------------------------------------------------------------------


def _render(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, gen: bool) -> str:
    return tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=gen)


def tokenize_example(example: dict[str, Any], tokenizer: Any) -> dict[str, Any]:
    """``{"input_ids", "assistant_masks", "masked_tokens"}`` for a chat example: mask 1 exactly on
    the tokens of assistant messages whose ``weight`` is non-zero (default 1), end-of-turn token
    included; ``masked_tokens`` counts the tokens of the weight-0 assistant messages (erroneous
    turns, detours, redacted calls: in the context, out of the loss), measured the same way.

    Raises ``ValueError`` when the chat template does not render the conversation's prefixes as
    prefixes of the whole (the mask would be wrong).
    """
    messages = example["messages"]
    tools = example_tools(example) or None
    full = _render(tokenizer, messages, tools, False)
    eos = tokenizer.eos_token
    spans: list[tuple[int, int]] = []
    masked_spans: list[tuple[int, int]] = []
    for i, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        before = _render(tokenizer, messages[:i], tools, True)
        through = _render(tokenizer, messages[: i + 1], tools, False)
        if not (full.startswith(before) and full.startswith(through) and len(before) <= len(through)):
            raise ValueError(
                f"the chat template does not render message {i} of {example.get('task_id', '?')} prefix-consistently"
            )
        start, end = len(before), len(through)
        if eos:
            k = full.rfind(eos, start, end)
            if k >= 0:
                end = k + len(eos)
        (spans if msg.get("weight", 1) else masked_spans).append((start, end))
    enc = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    mask = [0] * len(ids)
    masked = 0
    for j, (s, e) in enumerate(enc["offset_mapping"]):
        if any(a <= s < b for a, b in masked_spans):
            masked += 1
            continue
        for a, b in spans:
            if a <= s < b:
                mask[j] = 1
                if e > b:
                    log.warning("token %d of %s straddles the end of a trained span", j, example.get("task_id"))
                break
            if s < a < e:
                log.warning("token %d of %s straddles the start of a trained span", j, example.get("task_id"))
    return {"input_ids": ids, "assistant_masks": mask, "masked_tokens": masked}


def build_sft_dataset(
    traces: TraceSource | Iterable[TraceSource] | list[dict[str, Any]],
    tokenizer: Any,
    tool_specs_or_tools: Iterable[ToolSpec | dict[str, Any]] | None = None,
    *,
    include_failed: bool = False,
    include_inconsistent: bool = False,
    max_length: int | None = None,
    tool_filter: ToolFilter = None,
    harness: Any = None,
) -> Any:
    """A pre-tokenised :class:`datasets.Dataset` for SFTTrainer: columns ``input_ids``,
    ``assistant_masks`` (see :func:`tokenize_example`), ``task_id`` and ``masked_tokens`` (the
    example's weight-0 assistant tokens; TRL ignores the last two).

    ``traces`` may also be examples from :func:`traces_to_examples` (which takes the other
    arguments, ``tool_filter`` included). ``tokenizer`` is a tokenizer or a checkpoint path.
    Examples longer than ``max_length`` tokens and examples with no trained token are dropped
    (logged), never truncated.
    """
    from datasets import Dataset

    if isinstance(tokenizer, (str, Path)):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(tokenizer)
    if isinstance(traces, list) and traces and isinstance(traces[0], dict):
        examples = traces
    else:
        examples = traces_to_examples(
            traces,  # type: ignore[arg-type]
            tool_specs_or_tools,
            include_failed=include_failed,
            include_inconsistent=include_inconsistent,
            tool_filter=tool_filter,
            harness=harness,
        )
    rows: dict[str, list[Any]] = {"input_ids": [], "assistant_masks": [], "task_id": [], "masked_tokens": []}
    too_long = untrained = 0
    for ex in examples:
        tok = tokenize_example(ex, tokenizer)
        if max_length is not None and len(tok["input_ids"]) > max_length:
            too_long += 1
            continue
        if not any(tok["assistant_masks"]):
            untrained += 1
            continue
        rows["input_ids"].append(tok["input_ids"])
        rows["assistant_masks"].append(tok["assistant_masks"])
        rows["task_id"].append(ex.get("task_id", ""))
        rows["masked_tokens"].append(tok["masked_tokens"])
    if too_long or untrained:
        log.warning(
            "build_sft_dataset: dropped %d examples over max_length=%s and %d with no trained token",
            too_long,
            max_length,
            untrained,
        )
    if not rows["input_ids"]:
        raise ValueError("no SFT example left (all traces failed, too long, or without a trained turn)")
    return Dataset.from_dict(rows)


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


@dataclass
class SFTRunConfig:
    """Settings of :func:`train_sft` (mapped onto TRL's ``SFTConfig``; the rest of it keeps TRL's defaults).

    Parameters:
        learning_rate (`float`, defaults to `1e-4`):
            AdamW peak learning rate. Higher than TRL's 2e-5 because the cold start runs few steps
            on few traces; lower it for large models (1e-5 to 2e-5 is typical for full fine-tuning).
        num_train_epochs (`float`, defaults to `3.0`):
            Passes over the dataset when `max_steps` is -1. Three epochs is the usual SFT setting
            for a small, high-quality set.
        max_steps (`int`, defaults to `-1`):
            Optimizer steps; overrides `num_train_epochs` when positive (tests use it to fix cost).
        per_device_train_batch_size (`int`, defaults to `1`):
            Conversations per micro-batch. Planning conversations are long (every tool in the
            prompt is ~11.8k tokens with the tiny model's tokenizer), so one at a time keeps memory
            flat and needs no padding; raise
            `gradient_accumulation_steps` for a larger effective batch.
        gradient_accumulation_steps (`int`, defaults to `1`):
            Micro-batches per optimizer step.
        lr_scheduler_type (`str`, defaults to `"constant_with_warmup"`):
            A constant rate after warmup: short runs should not spend half their steps decaying.
        warmup_steps (`int`, defaults to `0`):
            Linear warmup steps (0: none; with 2-3 steps for a real model's first updates).
        weight_decay (`float`, defaults to `0.0`):
            AdamW weight decay; none, as in TRL's default.
        max_grad_norm (`float`, defaults to `1.0`):
            Gradient clipping norm (Trainer's default).
        seed (`int`, defaults to `0`):
            Seed for weight init of new heads, data order and dropout.
        logging_steps (`int`, defaults to `1`):
            Log every optimizer step so the returned loss curve has one point per step (cheap).
        max_length (`int` or `None`, defaults to `None`):
            Drop examples longer than this many tokens (never truncate, see the module docstring).
            None keeps all; set it to the model's context length.
        include_failed (`bool`, defaults to `False`):
            Also train on traces whose verdict failed (their `ok` turns). Off: cold-start data
            should be verified successes.
        include_inconsistent (`bool`, defaults to `False`):
            Keep traces whose simulated world contradicted itself.
        tool_filter (`str`, `list[str]` or `None`, defaults to `None`):
            The tools each example offers, resolved per trace by `agents.toolfilter` as the
            planner and the RL rollout resolve it per episode: `"all"`/None, `"task"` (the task's
            apps, user, system, finish, the category's harness app: ~1.5k prompt tokens instead
            of ~13k), or app/tool names. Train with the filter you evaluate with.
        activation_checkpointing (`bool`, defaults to `False`):
            Recompute activations in the backward pass (transformers 5's name for gradient
            checkpointing; TRL turns it on by default). Off: it slows small models down; turn it
            on for long sequences on large models.
        dtype (`str`, defaults to `"float32"`):
            The dtype the weights are loaded in (a `torch` dtype name). fp32 weights are the safe
            default (TRL's too); `"bfloat16"` halves the memory of large models.
        bf16 (`bool`, defaults to `False`):
            bf16 mixed precision (TRL's default is on); off because CPU runs and fp32 tiny models
            gain nothing from it. Turn it on for GPU training of real models.
        tensorboard (`bool`, defaults to `True`):
            Also write TensorBoard event files to `out_dir/tensorboard` when `tensorboard` is
            installed (cheap: one event file, written on each log).
        save_model (`bool`, defaults to `True`):
            Save the fine-tuned model and tokenizer to `out_dir/model`.
        extra (`dict`, defaults to `{}`):
            Any other `SFTConfig` field, passed through as is; it overrides the fields set here
            (e.g. `{"dataloader_pin_memory": True}` on GPU, `{"report_to": "wandb"}`).
    """

    learning_rate: float = 1e-4
    num_train_epochs: float = 3.0
    max_steps: int = -1
    per_device_train_batch_size: int = 1
    gradient_accumulation_steps: int = 1
    lr_scheduler_type: str = "constant_with_warmup"
    warmup_steps: int = 0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    seed: int = 0
    logging_steps: int = 1
    max_length: int | None = None
    include_failed: bool = False
    include_inconsistent: bool = False
    tool_filter: str | list[str] | None = None
    activation_checkpointing: bool = False
    dtype: str = "float32"
    bf16: bool = False
    tensorboard: bool = True
    save_model: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def to_sft_config(self, out_dir: Path | str) -> Any:
        """The TRL ``SFTConfig`` for a run writing into ``out_dir``."""
        from trl import SFTConfig

        kwargs: dict[str, Any] = dict(
            output_dir=str(out_dir),
            learning_rate=self.learning_rate,
            num_train_epochs=self.num_train_epochs,
            max_steps=self.max_steps,
            per_device_train_batch_size=self.per_device_train_batch_size,
            gradient_accumulation_steps=self.gradient_accumulation_steps,
            lr_scheduler_type=self.lr_scheduler_type,
            warmup_steps=self.warmup_steps,
            weight_decay=self.weight_decay,
            max_grad_norm=self.max_grad_norm,
            seed=self.seed,
            data_seed=self.seed,
            logging_steps=self.logging_steps,
            # the new name: setting TRL's `gradient_checkpointing` default raises a FutureWarning in transformers 5
            activation_checkpointing=self.activation_checkpointing,
            bf16=self.bf16,
            max_length=None,  # over-long examples are dropped in build_sft_dataset, never truncated
            assistant_only_loss=False,  # the mask comes from our assistant_masks column
            completion_only_loss=False,
            packing=False,
            report_to="none",  # TensorBoard is added as a callback writing to a known folder
            save_strategy="no",
            dataloader_num_workers=0,
            dataloader_pin_memory=False,  # nothing to pin on CPU; extra={'dataloader_pin_memory': True} on GPU
        )
        kwargs.update(self.extra)  # extra wins
        return SFTConfig(**kwargs)


def _jsonl_callback(path: Path) -> Any:
    from transformers import TrainerCallback

    class JsonlLogger(TrainerCallback):
        """Appends every Trainer log record (with step and epoch) to a JSON Lines file."""

        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and logs:
                rec = {"step": state.global_step, "epoch": state.epoch, "time": time.time(), **logs}
                with path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rec, default=float) + "\n")

    return JsonlLogger()


def _step_callback(on_step: Callable[[int, int], None]) -> Any:
    from transformers import TrainerCallback

    class StepReporter(TrainerCallback):
        """Calls ``on_step(step, max_steps)`` when training begins (step 0) and after each step."""

        def on_train_begin(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                on_step(state.global_step, state.max_steps)

        def on_step_end(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                on_step(state.global_step, state.max_steps)

    return StepReporter()


def train_sft(
    model_dir: Path | str,
    traces: TraceSource | Iterable[TraceSource] | list[dict[str, Any]],
    out_dir: Path | str,
    cfg: SFTRunConfig | None = None,
    *,
    tool_specs_or_tools: Iterable[ToolSpec | dict[str, Any]] | None = None,
    harness: Any = None,
    on_step: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Fine-tune the checkpoint in ``model_dir`` on ``traces`` with TRL's SFTTrainer; with
    ``harness`` (a :class:`phoneenv.loop.harness.Harness`), on the prompt that version gives
    (see :func:`traces_to_examples`), so the model is trained for the harness it is evaluated with.
    ``on_step(step, max_steps)`` is called when training begins and after each optimiser step
    (``phoneenv train sft`` draws its progress bar with it).

    Writes ``out_dir/sft_log.jsonl`` (one Trainer log record a line), ``out_dir/tensorboard``
    (when enabled) and ``out_dir/model`` (when ``save_model``). Returns ``{"losses"`` (training loss
    per logging step), ``"steps"``, ``"examples"``, ``"trained_tokens"`` (mask-1 tokens in the
    dataset), ``"tokens"`` (all tokens), ``"train_runtime"`` (s), ``"log_path"``, ``"model_dir"``
    (or None), ``"config"}``, and ``"masked_tokens"``: the tokens of assistant replies kept in
    the context but out of the loss (erroneous turns, detours; see :func:`tokenize_example`).
    """
    require("rl", "torch", "transformers", "trl", "datasets", feature="SFT training (rl.sft.train_sft)")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTTrainer

    cfg = cfg or SFTRunConfig()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    dataset = build_sft_dataset(
        traces,
        tokenizer,
        tool_specs_or_tools,
        include_failed=cfg.include_failed,
        include_inconsistent=cfg.include_inconsistent,
        max_length=cfg.max_length,
        tool_filter=cfg.tool_filter,
        harness=harness,
    )
    trained = sum(sum(m) for m in dataset["assistant_masks"])
    masked = sum(dataset["masked_tokens"])
    total = sum(len(x) for x in dataset["input_ids"])
    log.info(
        "SFT on %d examples: %d tokens, %d trained (%.1f%%), %d in masked (erroneous) replies",
        len(dataset),
        total,
        trained,
        100 * trained / total,
        masked,
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, cfg.dtype))
    log_path = out_dir / "sft_log.jsonl"
    log_path.unlink(missing_ok=True)
    callbacks = [_jsonl_callback(log_path)]
    if on_step is not None:
        callbacks.append(_step_callback(on_step))
    if cfg.tensorboard:
        try:
            from torch.utils.tensorboard import SummaryWriter
            from transformers.integrations import TensorBoardCallback

            callbacks.append(TensorBoardCallback(SummaryWriter(log_dir=str(out_dir / "tensorboard"))))
        except (ImportError, RuntimeError):  # RuntimeError: the callback finds no tensorboard
            log.info("tensorboard is not installed; logging to %s only", log_path)
    trainer = SFTTrainer(
        model=model,
        args=cfg.to_sft_config(out_dir),
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=callbacks,
    )
    result = trainer.train()
    losses = [float(r["loss"]) for r in trainer.state.log_history if "loss" in r and math.isfinite(r["loss"])]
    saved = None
    if cfg.save_model:
        saved = out_dir / "model"
        trainer.save_model(str(saved))
        tokenizer.save_pretrained(saved)
        save_model_filter(saved, cfg.tool_filter)  # train rl and eval offer what it learnt
    for cb in callbacks[1:]:
        if getattr(cb, "tb_writer", None) is not None:  # the callback closes it on train end
            cb.tb_writer.close()
    return {
        "losses": losses,
        "steps": trainer.state.global_step,
        "examples": len(dataset),
        "trained_tokens": trained,
        "masked_tokens": masked,
        "tokens": total,
        "train_runtime": result.metrics.get("train_runtime"),
        "log_path": str(log_path),
        "model_dir": str(saved) if saved else None,
        "config": asdict(cfg),
    }
