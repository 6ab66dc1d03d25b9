"""Multi-turn rollouts of a local Hugging Face chat model through ``PhonePlan-v0``, for token-level RL.

    >>> cfg = RolloutConfig(max_turns=6, max_new_tokens=128, temperature=1.0, tool_filter="task")
    >>> group = rollout_group(model, tokenizer, "contacts.lookup_number/0", 0, 4, cfg)  # doctest: +SKIP
    >>> [t.success for t in group.trajectories], group.trajectories[0].episode_mask.sum()  # doctest: +SKIP

An episode is the :class:`~agents.planner.LLMPlanner` conversation, driven token by token: the
system prompt (:data:`agents.planner.SYSTEM_PROMPT` with the goal) and the user's goal, the env's
tools in OpenAI format with ``app__verb`` names, then turns of *reply → env step(s) → feedback*.
Each reply is parsed with :func:`agents.llm.parsing.parse_reply`; its tool calls are sent to the
env one per ``step`` (as the planner does), each feedback comes back as a ``tool`` message (a reply
without a call is sent as it is and its ``invalid_json`` feedback comes back as a ``user`` message).
With ``constrained=True`` replies are decoded under an xgrammar grammar of one call of any offered
tool (:meth:`agents.llm.client.LocalChatClient.call_schema` over
:func:`~agents.llm.client.bounded_schema`, the same grammar as :class:`LocalChatClient`), so even a
tiny random model emits schema-valid calls. The env is reached only through the Gymnasium API
(``gym.make("PhonePlan-v0")``, ``reset``, ``step``, and ``add_agent_tokens`` so that the verdict
counts the model's tokens); the verdict comes from the final ``info``.

**Token sequences.** The episode is one token sequence built by concatenation, never by
re-rendering the chat: the first prompt is ``apply_chat_template(messages, tools=...,
add_generation_prompt=True)``; each reply appends exactly the tokens the model sampled (its
closing end-of-turn token included); each batch of feedback appends the chat template's own
rendering of those messages up to the next generation prompt (computed, as TRL's multi-turn tool
loop does, from a minimal dummy conversation trimmed at the end-of-turn token). So the model
always conditions on its own tokens (a constrained reply ``{"name": ...}`` is not re-rendered as
``<tool_call>…``), and for every turn ``t``::

    episode_ids[: turns[t].start]                         == turns[t].prompt_ids
    episode_ids[turns[t].start : turns[t].start + C_t]    == turns[t].completion_ids
    episode_mask[i] == 1  ⇔  token i was sampled by the model

A reply cut at ``max_new_tokens`` gets the end-of-turn token appended with mask 0 before the
feedback (it was not sampled). Shapes and dtypes (``L`` episode length, ``P`` length of the first
prompt, ``P_t``/``C_t`` prompt and completion lengths of turn ``t``):

* ``Turn.prompt_ids``: ``(P_t,)`` int64, everything the model saw before the reply;
* ``Turn.completion_ids``: ``(C_t,)`` int64, the sampled reply tokens (all mask 1);
* ``Turn.logprobs``: ``(C_t,)`` float32, their log-probs (finite, ≤ 0);
* ``Trajectory.episode_ids``: ``(L,)`` int64, the whole episode;
* ``Trajectory.episode_mask``: ``(L,)`` int64, 1 on sampled tokens, 0 on prompt and feedback;
* ``Trajectory.episode_logprobs``: ``(L,)`` float32, log-probs where the mask is 1, exactly 0.0
  elsewhere;
* ``Trajectory.prompt_ids`` / ``completion_ids`` / ``env_mask`` / ``completion_logprobs``:
  ``(P,)`` / ``(L − P,)`` views of the above, TRL's ``rollout_func`` view (:func:`to_trl`);
* ``Group.success`` / ``progress`` / ``output_tokens`` / ``tool_calls``: ``(G,)`` float64, in
  member order.

Tensors live on the CPU. **Log-probs** are ``log_softmax(logits / T)`` of the model's *raw*
logits at the sampled tokens (``T`` the sampling temperature, 1 when greedy), computed by one
forward pass over the finished episode (causal attention makes that equal to the per-turn values):
the quantity TRL's ``GRPOTrainer`` computes for the same policy. The grammar mask is part of the
sampler, not of the policy, so a token forced by the grammar can have a log-prob well below 0.
(Generation scores are not used: xgrammar masks the logits in place, so ``output_logits`` would
return masked values on CPU.)

**Groups and reproducibility.** A :class:`Group` is ``G`` episodes of the same task and env seed.
Members differ only by sampling: member ``k``'s turn ``t`` is sampled under
``torch.manual_seed(sampling_seed(sample_seed, task_id, seed, k, t))`` inside
``torch.random.fork_rng`` (the caller's RNG state is untouched), so a member's episode does not
depend on ``G``, on the other members or on the env driver. With ``G > 1`` the members run over
one :class:`gymnasium.vector.SyncVectorEnv` (one sub-env per member, stepped in lockstep; members
whose episode is over get an empty action that the default next-step autoreset turns into a
reset, and their outputs are ignored); ``vector=False`` steps one ``gym.make`` env per member
instead. Both drivers give identical trajectories.

An episode ends when the env terminates (``finish``) or truncates (the task's ``max_steps``). If
``max_turns`` model replies have been spent first, or the context is full, the rollout itself
sends ``finish`` (``"I ran out of steps."``, no tokens, as :class:`LLMPlanner` does), so every
trajectory carries the env's verdict; the feedback to the last reply, which the model never
conditioned on, is then left out, so every episode sequence ends on the model's last reply
(with its end-of-turn token unless that reply was cut at ``max_new_tokens``).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rl.sampling import Sample, Sampler, sampling_seed

__all__ = [
    "FORCED_FINISH",
    "Group",
    "RolloutConfig",
    "Trajectory",
    "Turn",
    "rollout_group",
    "rollout_members",
    "sampling_seed",
    "to_trl",
]

FORCED_FINISH = json.dumps({"name": "finish", "arguments": {"answer": "I ran out of steps."}})
"""The action the rollout sends itself when ``max_turns`` replies are spent or the context is full."""

_IDLE_ACTION = ""
"""Action for a finished member of a vector env: it is ignored (the sub-env autoresets on it) or,
later, answered with ``invalid_json``; the outputs are discarded either way."""


# ------------------------------------------------------------------------------------------------
# Configuration
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RolloutConfig:
    """How the episodes of a group are rolled out (one object instead of keyword lists).

    Attributes:
        max_turns: model replies per episode at most (≥ 0); then the rollout sends ``finish``.
        max_new_tokens: tokens per reply at most (≥ 1).
        temperature: sampling temperature (0: greedy, then all members are identical).
        constrained: decode each reply under the grammar of one call of an offered tool.
        max_string_chars: bound the grammar puts on free strings (as :class:`LocalChatClient`).
        tool_filter: the tools the model is offered, resolved per episode from its reset ``info``
            by :func:`agents.toolfilter.allowed_tools`: ``"task"`` (the task's apps, ``user``,
            ``system``, ``finish`` and its category's harness app; the default), ``"all"``/None
            (every tool in ``info["tools"]``, as :class:`LLMPlanner` does by default), or app /
            full tool names (a list or a comma-separated string). The env still accepts any call;
            a filter shortens prompts (all sandbox tools are ~11.7k tokens with the tiny tokenizer).
        env_kwargs: extra ``gym.make("PhonePlan-v0", ...)`` arguments (``backend``, ``max_steps``, ...).
        vector: run the members over one ``SyncVectorEnv`` (None: when there is more than one
            member) or over one env each (False).
        system_prompt: a template with ``{goal}`` (None: :data:`agents.planner.SYSTEM_PROMPT`).
        instructions: a harness version's instructions, appended to the system message.
        list_skills: the skills the system message lists (a harness version's own skills, by
            name; ``skills.read`` is offered then), as :class:`agents.planner.LLMPlanner` does.

    Raises:
        ValueError: (at construction) ``max_turns < 0``, ``max_new_tokens < 1``, a negative
        temperature, ``max_string_chars < 1`` or a malformed ``tool_filter``.
    """

    max_turns: int = 8
    max_new_tokens: int = 256
    temperature: float = 1.0
    constrained: bool = True
    max_string_chars: int = 120
    tool_filter: Any = "task"
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    vector: bool | None = None
    system_prompt: str | None = None
    instructions: str = ""
    list_skills: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from agents.toolfilter import parse_tool_filter

        if self.max_turns < 0 or self.max_new_tokens < 1:
            raise ValueError("max_turns must be ≥ 0 and max_new_tokens ≥ 1")
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be ≥ 0, got {self.temperature!r}")
        if self.max_string_chars < 1:
            raise ValueError(f"max_string_chars must be ≥ 1, got {self.max_string_chars!r}")
        parse_tool_filter(self.tool_filter)  # raises on a malformed filter, before any env starts
        if isinstance(self.tool_filter, list):  # keep the frozen config hashable
            object.__setattr__(self, "tool_filter", tuple(self.tool_filter))
        object.__setattr__(self, "env_kwargs", dict(self.env_kwargs or {}))
        object.__setattr__(self, "list_skills", tuple(self.list_skills))


# ------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------


@dataclass
class Turn:
    """One model reply and what the env made of it.

    Attributes:
        index: the turn's number in its episode, from 0.
        start: offset of the reply in :attr:`Trajectory.episode_ids`.
        prompt_ids: ``(P_t,)`` int64, the context the reply was sampled from (the first prompt,
            earlier replies and feedback); a view of the episode's ids.
        completion_ids: ``(C_t,)`` int64, the sampled tokens (end-of-turn token included when
            sampled).
        logprobs: ``(C_t,)`` float32, log-probs of ``completion_ids`` under the policy at
            temperature ``T`` (see the module docstring).
        text: ``completion_ids`` decoded with special tokens kept.
        calls: the parsed tool calls (``{"id", "name", "arguments"}``, names as written).
        parse_errors: parse errors of the reply.
        actions: the actions sent to the env for this reply, in order (JSON text, or the raw reply).
        feedback: the env's feedback JSON for each action sent.
        truncated: the reply hit ``max_new_tokens`` without an end-of-turn token.
        seed: the torch seed the reply was sampled under.
    """

    index: int
    start: int
    prompt_ids: Any
    completion_ids: Any
    logprobs: Any
    text: str
    calls: list[dict[str, Any]]
    parse_errors: list[str]
    actions: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)
    truncated: bool = False
    seed: int = 0


@dataclass
class Trajectory:
    """One episode of a group member.

    Attributes:
        task_id: the task.
        seed: the env seed of ``reset`` (shared by the group).
        group_index: this member's position in its group, ``0 ≤ group_index < G``.
        turns: the model's replies, in order.
        verdict: the env's final ``info["verdict"]`` (a :class:`~phoneenv.contract.Verdict` as a dict).
        success: ``verdict["success"]``.
        progress: ``verdict["progress"]`` in [0, 1].
        output_tokens: tokens the model sampled in the episode (``episode_mask.sum()``; also what
            the verdict's ``output_tokens`` counts, via ``add_agent_tokens``).
        tool_calls: ``verdict["tool_calls"]``.
        episode_ids: ``(L,)`` int64, the whole episode.
        episode_mask: ``(L,)`` int64, 1 exactly on sampled tokens.
        episode_logprobs: ``(L,)`` float32, log-probs on sampled tokens, 0.0 elsewhere.
        prompt_length: ``P``, length of the first prompt (``episode_mask[:P]`` is all 0).
        messages: the chat as the planner would keep it (system, user, assistant, tool, ...).
        env_reward: the env's reward (1.0 on success, else 0.0).
        terminated: the episode ended with ``finish``; ``truncated``: at the env's ``max_steps``.
        forced_finish: the rollout sent ``finish`` itself (``max_turns`` spent or context full).
        sample_seed: the base seed member seeds were derived from.
        trace: the env's :class:`~phoneenv.contract.Trace` of the episode, read when it ended
            (None when the envs run on a Ray pool, whose actors keep their traces).
    """

    task_id: str
    seed: int
    group_index: int
    turns: list[Turn]
    verdict: dict[str, Any]
    success: bool
    progress: float
    output_tokens: int
    tool_calls: int
    episode_ids: Any
    episode_mask: Any
    episode_logprobs: Any
    prompt_length: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    env_reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    forced_finish: bool = False
    sample_seed: int = 0
    trace: Any = None

    @property
    def invalid_replies(self) -> int:
        """Replies that held no tool call (sent as they were; the env answers ``invalid_json``)."""
        return sum(1 for turn in self.turns if not turn.calls)

    @property
    def prompt_ids(self) -> Any:
        """``(P,)`` int64: the first prompt (TRL's ``prompt_ids``)."""
        return self.episode_ids[: self.prompt_length]

    @property
    def completion_ids(self) -> Any:
        """``(L − P,)`` int64: everything after the first prompt (TRL's ``completion_ids``)."""
        return self.episode_ids[self.prompt_length :]

    @property
    def env_mask(self) -> Any:
        """``(L − P,)`` int64: :attr:`episode_mask` over :attr:`completion_ids` (TRL's ``env_mask``)."""
        return self.episode_mask[self.prompt_length :]

    @property
    def completion_logprobs(self) -> Any:
        """``(L − P,)`` float32: :attr:`episode_logprobs` over :attr:`completion_ids`."""
        return self.episode_logprobs[self.prompt_length :]


@dataclass
class Group:
    """``G`` trajectories of the same task and env seed, in member order (``group_index`` 0..G−1).

    Raises:
        ValueError: (at construction) an empty group, or members of another task or seed, or
        member indices that are not ``0..G−1`` in order.
    """

    task_id: str
    seed: int
    trajectories: list[Trajectory]

    def __post_init__(self) -> None:
        if not self.trajectories:
            raise ValueError("a group needs at least one trajectory")
        for k, t in enumerate(self.trajectories):
            if (t.task_id, t.seed) != (self.task_id, self.seed):
                raise ValueError(
                    f"member {k} ran {t.task_id!r} seed {t.seed}, not the group's {self.task_id!r} seed {self.seed}"
                )
            if t.group_index != k:
                raise ValueError(f"member {k} has group_index {t.group_index}")

    @property
    def G(self) -> int:
        """The group size."""
        return len(self.trajectories)

    @property
    def success(self) -> np.ndarray:
        """``(G,)`` float64, 0/1."""
        return np.array([float(t.success) for t in self.trajectories], dtype=np.float64)

    @property
    def progress(self) -> np.ndarray:
        """``(G,)`` float64 in [0, 1]."""
        return np.array([float(t.progress) for t in self.trajectories], dtype=np.float64)

    @property
    def output_tokens(self) -> np.ndarray:
        """``(G,)`` float64, sampled tokens per episode."""
        return np.array([float(t.output_tokens) for t in self.trajectories], dtype=np.float64)

    @property
    def tool_calls(self) -> np.ndarray:
        """``(G,)`` float64, tool calls per episode (the verdict's count)."""
        return np.array([float(t.tool_calls) for t in self.trajectories], dtype=np.float64)


def to_trl(trajectories: Sequence[Trajectory]) -> dict[str, list[Any]]:
    """The whole-episode view of ``trajectories`` as the dict a TRL ``rollout_func`` returns.

    Keys: ``prompt_ids``, ``completion_ids`` (``list[list[int]]``), ``logprobs``
    (``list[list[float]]``, 0.0 on feedback tokens), ``env_mask`` (``list[list[int]]``, TRL's
    multi-turn mask: 1 on sampled tokens), and per-episode extras forwarded to reward functions:
    ``task_id`` (str), ``env_seed`` (int), ``group_index`` (int), ``success``, ``progress``,
    ``output_tokens``, ``tool_calls`` (float), ``turns``, ``invalid_replies`` (int: replies that
    held no tool call).

    Raises:
        ValueError: a trajectory without any token after its first prompt (``max_turns=0``):
        TRL needs a non-empty completion.
    """
    out: dict[str, list[Any]] = {
        k: []
        for k in (
            "prompt_ids",
            "completion_ids",
            "logprobs",
            "env_mask",
            "task_id",
            "env_seed",
            "group_index",
            "success",
            "progress",
            "output_tokens",
            "tool_calls",
            "turns",
            "invalid_replies",
        )
    }
    for t in trajectories:
        if t.completion_ids.numel() == 0:
            raise ValueError(f"trajectory of {t.task_id} (member {t.group_index}) has no completion tokens")
        out["prompt_ids"].append(t.prompt_ids.tolist())
        out["completion_ids"].append(t.completion_ids.tolist())
        out["logprobs"].append(t.completion_logprobs.tolist())
        out["env_mask"].append(t.env_mask.tolist())
        out["task_id"].append(t.task_id)
        out["env_seed"].append(int(t.seed))
        out["group_index"].append(int(t.group_index))
        out["success"].append(float(t.success))
        out["progress"].append(float(t.progress))
        out["output_tokens"].append(float(t.output_tokens))
        out["tool_calls"].append(float(t.tool_calls))
        out["turns"].append(len(t.turns))
        out["invalid_replies"].append(t.invalid_replies)
    return out


# ------------------------------------------------------------------------------------------------
# Sampling
# ------------------------------------------------------------------------------------------------


def _suffix_ids(tokenizer: Any, messages: list[dict[str, Any]], eos_id: int) -> list[int]:
    """The template's tokens for feedback ``messages`` that follow an assistant turn, from just
    after its end-of-turn token to the next generation prompt (TRL's dummy-conversation method)."""
    if messages[0]["role"] == "tool":
        name = messages[0].get("name") or "tool"
        assistant = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": name, "arguments": {}}}],
        }
    else:
        assistant = {"role": "assistant", "content": "x"}
    dummy = [{"role": "user", "content": "x"}, assistant]
    prefix = list(tokenizer.apply_chat_template(dummy, tokenize=True, add_generation_prompt=False, return_dict=False))
    full = list(
        tokenizer.apply_chat_template(dummy + messages, tokenize=True, add_generation_prompt=True, return_dict=False)
    )
    ends = [i for i, t in enumerate(prefix) if t == eos_id]
    if ends:
        prefix = prefix[: ends[-1] + 1]
    if full[: len(prefix)] != prefix:
        raise ValueError("the chat template is not prefix-preserving for feedback messages")
    return full[len(prefix) :]


# ------------------------------------------------------------------------------------------------
# Env drivers (Gymnasium API only)
# ------------------------------------------------------------------------------------------------


class _InfoBox:
    """One sub-env's whole ``info`` dict as a single opaque value.

    Gymnasium's vector envs merge the sub-envs' infos key by key into arrays typed after the
    first sub-env's value (``VectorEnv._add_info``). A PhonePlan info echoes what the model sent
    (tool arguments in the verdict's evidence, feedback results), so the same key can hold an
    ``int`` in one member and a string or None in another, and the merge raises (``int()`` of
    ``'level {'``). Boxed, every info becomes one object-array entry and comes back unchanged.
    """

    __slots__ = ("info",)

    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info


def _boxed_env(task_id: str, env_kwargs: dict[str, Any]) -> Any:
    """A ``PhonePlan-v0`` env whose reset/step ``info`` is ``{"phone": _InfoBox(info)}``."""
    import gymnasium as gym

    import phoneenv  # noqa: F401 - registers PhonePlan-v0

    class BoxedInfo(gym.Wrapper):
        def reset(self, **kwargs: Any) -> Any:
            obs, info = self.env.reset(**kwargs)
            return obs, {"phone": _InfoBox(info)}

        def step(self, action: Any) -> Any:
            obs, reward, term, trunc, info = self.env.step(action)
            return obs, reward, term, trunc, {"phone": _InfoBox(info)}

    return BoxedInfo(gym.make("PhonePlan-v0", task=task_id, **env_kwargs))


def _unbatch_info(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Sub-env ``i``'s info out of a vector env's batched info (boxed by :func:`_boxed_env`)."""
    box = infos["phone"][i]
    return box.info if isinstance(box, _InfoBox) else {}


class _SerialEnvs:
    """One ``gym.make`` env per member, each stepped on its own."""

    def __init__(self, n: int, task_id: str, env_kwargs: dict[str, Any]) -> None:
        import gymnasium as gym

        import phoneenv  # noqa: F401 - registers PhonePlan-v0

        self.envs = [gym.make("PhonePlan-v0", task=task_id, **env_kwargs) for _ in range(n)]

    def reset(self, seed: int, task_id: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return [env.reset(seed=seed, options={"task": task_id}) for env in self.envs]

    def add_tokens(self, k: int, tokens: dict[str, int]) -> None:
        self.envs[k].get_wrapper_attr("add_agent_tokens")(tokens)

    def step(self, actions: dict[int, str]) -> dict[int, tuple[Any, ...]]:
        return {k: self.envs[k].step(a) for k, a in actions.items()}

    def trace(self, k: int) -> Any:
        return self.envs[k].get_wrapper_attr("trace")

    def close(self) -> None:
        for env in self.envs:
            env.close()


class _VectorEnvs:
    """A :class:`gymnasium.vector.SyncVectorEnv` with one sub-env per member, stepped in lockstep."""

    def __init__(self, n: int, task_id: str, env_kwargs: dict[str, Any]) -> None:
        from gymnasium.vector import SyncVectorEnv

        def make() -> Any:
            return _boxed_env(task_id, env_kwargs)

        self.n = n
        self.vec = SyncVectorEnv([make for _ in range(n)])

    def reset(self, seed: int, task_id: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        obs, infos = self.vec.reset(seed=[seed] * self.n, options={"task": task_id})
        return [({k: v[i] for k, v in obs.items()}, _unbatch_info(infos, i)) for i in range(self.n)]

    def add_tokens(self, k: int, tokens: dict[str, int]) -> None:
        self.vec.envs[k].get_wrapper_attr("add_agent_tokens")(tokens)

    def step(self, actions: dict[int, str]) -> dict[int, tuple[Any, ...]]:
        batch = tuple(actions.get(k, _IDLE_ACTION) for k in range(self.n))
        obs, rewards, terms, truncs, infos = self.vec.step(batch)
        return {
            k: (
                {key: v[k] for key, v in obs.items()},
                float(rewards[k]),
                bool(terms[k]),
                bool(truncs[k]),
                _unbatch_info(infos, k),
            )
            for k in actions
        }

    def trace(self, k: int) -> Any:
        return self.vec.envs[k].get_wrapper_attr("trace")

    def close(self) -> None:
        self.vec.close()


# ------------------------------------------------------------------------------------------------
# Episodes
# ------------------------------------------------------------------------------------------------


def _offered_tools(tools: Sequence[dict[str, Any]], allowed: frozenset[str] | None) -> list[dict[str, Any]]:
    """The env's tool specs that pass the episode's resolved filter, renamed ``app__verb``."""
    from agents.toolfilter import offered

    return [_rename(t) for t in tools if offered(t["function"]["name"], allowed)]


def _rename(tool: dict[str, Any]) -> dict[str, Any]:
    fn = dict(tool["function"])
    fn["name"] = fn["name"].replace(".", "__")
    return {"type": "function", "function": fn}


@dataclass
class _Slot:
    member: int
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    ids: list[int]
    mask: list[int]
    prompt_length: int
    turns: list[Turn] = field(default_factory=list)
    queue: deque[tuple[str, dict[str, Any] | None]] = field(default_factory=deque)
    pending: list[dict[str, Any]] = field(default_factory=list)
    last_truncated: bool = False
    done: bool = False
    final: tuple[float, bool, bool, dict[str, Any]] | None = None
    trace: Any = None
    forced: bool = False
    frame: str = "main"
    depth: int = 0
    frame_note: str | None = None
    allowed: frozenset[str] | None = None


def _follow_frame(slot: _Slot, obs: dict[str, Any], info: dict[str, Any]) -> None:
    """After a step: when the step's info carries ``tools`` (only when the offered tools changed:
    ``agent.delegate`` opened a frame, a ``finish`` closed one, or more tools were loaded), offer
    them to the sampler's grammar; when the active sub-agent frame changed, queue
    :func:`agents.planner.frame_note` for the model, as :class:`LLMPlanner` does."""
    from agents.planner import frame_note

    if info.get("tools") is not None:
        tools = _offered_tools(info["tools"], slot.allowed)
        if tools:
            slot.tools = tools
    frame = str(obs.get("frame", "main"))
    if frame == slot.frame:
        return
    slot.frame = frame
    depth = int(obs.get("frame_depth", 0))
    goal = str(obs.get("frame_goal", obs.get("goal", "")))
    slot.frame_note = frame_note(frame, depth, slot.depth, goal, [t["function"]["name"] for t in slot.tools])
    slot.depth = depth


def rollout_members(
    model: Any,
    tokenizer: Any,
    task_id: str,
    seed: int,
    members: Sequence[int],
    config: RolloutConfig,
    *,
    sample_seed: int = 0,
    llm: Any = None,
    env_pool: Any = None,
) -> list[Trajectory]:
    """Run the episodes of the given group ``members`` (indices into a group of the same task and
    seed) side by side; see :func:`rollout_group` for the arguments. Used directly when a group is
    split over processes: each process runs its members, with the seeds they would get in one call.
    With ``llm`` (a ``vllm.LLM``), replies are sampled by vLLM (:class:`rl.vllm_engine.VLLMSampler`:
    all pending replies of the members in one call, vLLM's log-probs kept) and ``model`` only
    gives the config. With ``env_pool`` (a :class:`phoneenv.farm.distributed.RayEnvPool`), the
    members' envs run on its Ray actors (member ``k`` on actor ``k``) and the model stays here.
    Returns the trajectories in the order of ``members``.

    Raises:
        ValueError: members that are not distinct non-negative indices, a ``config`` that is not a
        :class:`RolloutConfig`, or a tool filter that leaves an episode no tool.
    """
    from agents.llm.parsing import parse_reply
    from agents.planner import SYSTEM_PROMPT, listed_skills, system_message
    from agents.toolfilter import allowed_tools

    if not isinstance(config, RolloutConfig):
        raise ValueError(f"config must be a RolloutConfig, not {type(config).__name__}")
    members = [int(m) for m in members]
    if not members:
        return []
    if len(set(members)) != len(members) or min(members) < 0:
        raise ValueError(f"members must be distinct non-negative indices, got {members}")
    max_turns = config.max_turns
    env_kwargs = dict(config.env_kwargs)
    env_kwargs.pop("task", None)
    use_vector = len(members) > 1 if config.vector is None else config.vector
    sampler_kwargs: dict[str, Any] = {
        "max_new_tokens": config.max_new_tokens,
        "temperature": config.temperature,
        "constrained": config.constrained,
        "max_string_chars": config.max_string_chars,
    }
    if llm is not None:
        from rl.vllm_engine import VLLMSampler

        sampler: Sampler = VLLMSampler(llm, model, tokenizer, **sampler_kwargs)
    else:
        sampler = Sampler(model, tokenizer, **sampler_kwargs)
    template = config.system_prompt or SYSTEM_PROMPT
    if env_pool is not None:
        envs: Any = env_pool.drive(len(members), task_id, env_kwargs)
    else:
        envs = (_VectorEnvs if use_vector else _SerialEnvs)(len(members), task_id, env_kwargs)
    was_training = bool(getattr(model, "training", False))
    model.eval()
    try:
        slots: list[_Slot] = []
        for k, (obs, info) in enumerate(envs.reset(seed, task_id)):
            allowed = allowed_tools(config.tool_filter, info)  # per episode: "task" reads info["apps"]
            skills = listed_skills(info, config.list_skills)
            if skills and allowed is not None:
                allowed = allowed | {"skills.read"}
            tools = _offered_tools(info["tools"], allowed)
            if not tools:
                raise ValueError(f"tool_filter {config.tool_filter!r} leaves no tool of {task_id}")
            system = system_message(obs["goal"], template=template, skills=skills, instructions=config.instructions)
            messages = [
                {"role": "system", "content": system},
                {"role": "user", "content": obs["goal"]},
            ]
            ids = list(
                tokenizer.apply_chat_template(
                    messages, tools=tools, tokenize=True, add_generation_prompt=True, return_dict=False
                )
            )
            slot = _Slot(members[k], tools, messages, ids, [0] * len(ids), len(ids))
            slot.allowed = allowed
            slots.append(slot)

        while not all(s.done for s in slots):
            # Every live member without queued actions needs a reply: sample them in one batch.
            wanting = []
            for k, slot in enumerate(slots):
                if not slot.done and not slot.queue:
                    request = _reply_request(slot, k, envs, sampler, task_id, seed, sample_seed, max_turns)
                    if request is not None:
                        wanting.append((k, request))
            samples = sampler.generate_many(
                [(list(slots[k].ids), slots[k].tools, turn_seed) for k, turn_seed in wanting]
            )
            for (k, turn_seed), sample in zip(wanting, samples, strict=True):
                _apply_reply(slots[k], k, envs, sampler, tokenizer, turn_seed, sample, parse_reply)
            actions: dict[int, str] = {}
            for k, slot in enumerate(slots):
                if slot.done:
                    continue
                action, _ = slot.queue[0]
                actions[k] = action
            results = envs.step(actions)
            for k, (obs, reward, terminated, truncated, info) in results.items():
                slot = slots[k]
                _, call = slot.queue.popleft()
                feedback = obs["feedback"]
                if slot.turns and not slot.forced:
                    slot.turns[-1].feedback.append(feedback)
                if call is not None:
                    msg = {"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": feedback}
                else:
                    msg = {"role": "user", "content": f"Your reply had no tool call I could run. Feedback: {feedback}"}
                if not slot.forced:
                    slot.messages.append(msg)
                    slot.pending.append(msg)
                    _follow_frame(slot, obs, info)
                if terminated or truncated:
                    slot.done = True
                    slot.queue.clear()
                    slot.final = (float(reward), bool(terminated), bool(truncated), info)
                    if hasattr(envs, "trace"):  # now: a vector env resets a finished sub-env on its next step
                        slot.trace = envs.trace(k)
                elif not slot.queue:
                    if slot.frame_note is not None:  # as LLMPlanner: the frame change, before the next reply
                        note = {"role": "user", "content": slot.frame_note}
                        slot.messages.append(note)
                        slot.pending.append(note)
                        slot.frame_note = None
                    if slot.last_truncated:  # close the cut reply with an end-of-turn token it did not sample
                        slot.ids.append(sampler.eos_id)
                        slot.mask.append(0)
                    suffix = _suffix_ids(tokenizer, slot.pending, sampler.eos_id)
                    slot.ids.extend(suffix)
                    slot.mask.extend([0] * len(suffix))
                    slot.pending = []

        return [_finish_slot(slot, sampler, task_id, seed, sample_seed) for slot in slots]
    finally:
        envs.close()
        if was_training:
            model.train()


def _reply_request(
    slot: _Slot,
    k: int,
    envs: Any,
    sampler: Sampler,
    task_id: str,
    seed: int,
    sample_seed: int,
    max_turns: int,
) -> int | None:
    """The seed of the slot's next reply, or None after queueing the forced ``finish`` (turn
    budget spent or context full)."""
    if len(slot.turns) >= max_turns or sampler.room(len(slot.ids)) < 1:
        # The model never sees what follows its last reply: drop the feedback appended after it,
        # so the episode ends on the model's own last token.
        end = slot.turns[-1].start + len(slot.turns[-1].completion_ids) if slot.turns else slot.prompt_length
        del slot.ids[end:], slot.mask[end:]
        envs.add_tokens(k, {"prompt": 0, "output": 0})
        slot.forced = True
        slot.queue.append((FORCED_FINISH, None))
        return None
    return sampling_seed(sample_seed, task_id, seed, slot.member, len(slot.turns))


def _apply_reply(
    slot: _Slot,
    k: int,
    envs: Any,
    sampler: Sampler,
    tokenizer: Any,
    turn_seed: int,
    sample: Sample,
    parse_reply: Any,
) -> None:
    """Append the sampled reply to the slot's episode and queue its actions."""
    import torch

    from agents.llm.parsing import call_names_from_api

    context = list(slot.ids)
    new, ended = list(sample.ids), bool(sample.ended)
    start = len(slot.ids)
    slot.ids.extend(new)
    slot.mask.extend([1] * len(new))
    slot.last_truncated = not ended
    text = tokenizer.decode(new, skip_special_tokens=False)
    reply = text
    for tok in {tokenizer.eos_token, tokenizer.pad_token, *(tokenizer.convert_ids_to_tokens(sampler.stop_ids))}:
        if tok and tok in reply:
            reply = reply.split(tok)[0]
    result = parse_reply(reply)
    thinking = len(tokenizer(result.thinking, add_special_tokens=False)["input_ids"]) if result.thinking else 0
    envs.add_tokens(k, {"prompt": len(context), "output": len(new), "thinking": thinking})
    assistant: dict[str, Any] = {"role": "assistant", "content": result.content or ""}
    if result.tool_calls:
        assistant["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in result.tool_calls
        ]
    slot.messages.append(assistant)
    turn = Turn(
        index=len(slot.turns),
        start=start,
        prompt_ids=torch.tensor(context, dtype=torch.long),
        completion_ids=torch.tensor(new, dtype=torch.long),
        logprobs=(
            torch.zeros(len(new), dtype=torch.float32)
            if sample.logprobs is None
            else torch.tensor(sample.logprobs, dtype=torch.float32)
        ),
        text=text,
        calls=list(result.tool_calls),
        parse_errors=list(result.parse_errors),
        truncated=not ended,
        seed=turn_seed,
    )
    slot.turns.append(turn)
    if result.tool_calls:
        for c in result.tool_calls:
            action = json.dumps({"name": call_names_from_api(c["name"]), "arguments": c["arguments"]})
            turn.actions.append(action)
            slot.queue.append((action, c))
    else:
        action = result.content or result.raw or "; ".join(result.parse_errors)
        turn.actions.append(action)
        slot.queue.append((action, None))


def _finish_slot(slot: _Slot, sampler: Sampler, task_id: str, seed: int, sample_seed: int) -> Trajectory:
    import torch

    assert slot.final is not None
    reward, terminated, truncated, info = slot.final
    verdict = dict(info.get("verdict") or {})
    episode_ids = torch.tensor(slot.ids, dtype=torch.long)
    episode_mask = torch.tensor(slot.mask, dtype=torch.long)
    if sampler.reports_logprobs:  # the engine's own log-probs of what it sampled, 0.0 elsewhere
        episode_logprobs = torch.zeros(len(slot.ids), dtype=torch.float32)
        for turn in slot.turns:
            episode_logprobs[turn.start : turn.start + turn.completion_ids.numel()] = turn.logprobs
    else:
        episode_logprobs = sampler.logprobs(slot.ids, slot.mask)
    for turn in slot.turns:
        end = turn.start + turn.completion_ids.numel()
        turn.prompt_ids = episode_ids[: turn.start]
        turn.completion_ids = episode_ids[turn.start : end]
        turn.logprobs = episode_logprobs[turn.start : end]
    return Trajectory(
        task_id=task_id,
        seed=int(seed),
        group_index=slot.member,
        turns=slot.turns,
        verdict=verdict,
        success=bool(verdict.get("success", False)),
        progress=float(verdict.get("progress", 0.0)),
        output_tokens=int(episode_mask.sum()),
        tool_calls=int(verdict.get("tool_calls", 0)),
        episode_ids=episode_ids,
        episode_mask=episode_mask,
        episode_logprobs=episode_logprobs,
        prompt_length=slot.prompt_length,
        messages=slot.messages,
        env_reward=reward,
        terminated=terminated,
        truncated=truncated,
        forced_finish=slot.forced,
        sample_seed=int(sample_seed),
        trace=slot.trace,
    )


def rollout_group(
    model: Any,
    tokenizer: Any,
    task_id: str,
    seed: int,
    G: int,
    config: RolloutConfig,
    *,
    sample_seed: int = 0,
    llm: Any = None,
    env_pool: Any = None,
) -> Group:
    """Run ``G`` episodes of ``task_id`` from env seed ``seed`` with ``model`` as the planner.

    Args:
        model: a Hugging Face causal LM (any device; put in eval mode during the rollout and
            restored after).
        tokenizer: its tokenizer, with a chat template that renders ``tools`` and ``tool`` messages.
        task_id: the task (``reset(options={"task": task_id})``).
        seed: the env seed, shared by the group.
        G: group size (≥ 1).
        config: turns, tokens, temperature, grammar, tool filter and env arguments
            (:class:`RolloutConfig`).
        sample_seed: base seed of the members' sampling seeds (see :func:`sampling_seed`).
        llm: a ``vllm.LLM`` to sample with instead of ``model.generate`` (see :func:`rollout_members`).
        env_pool: a :class:`phoneenv.farm.distributed.RayEnvPool` of at least ``G`` actors: the
            members' envs run there (one per actor), the model here; ``config.vector`` is then ignored.

    Returns:
        A :class:`Group` of ``G`` trajectories (member ``k`` at index ``k``).

    Raises:
        ValueError: ``G < 1``, a filter leaving no tool; KeyError: unknown task.
    """
    if G < 1:
        raise ValueError(f"G must be ≥ 1, got {G}")
    trajectories = rollout_members(
        model, tokenizer, task_id, seed, range(G), config, sample_seed=sample_seed, llm=llm, env_pool=env_pool
    )
    return Group(task_id=task_id, seed=int(seed), trajectories=trajectories)
