"""GRPO and CARE training of phone planners with TRL's ``GRPOTrainer`` over multi-turn env rollouts.

    >>> summary = train_rl(TrainConfig(model_path="runs/sft/model", tasks="split:train",
    ...                                eval_tasks="split:test", algo="care", max_steps=100))  # doctest: +SKIP

Command line: ``python -m rl.trainers --model_path runs/sft/model --tasks split:train --algo care``
(every :class:`TrainConfig` field is a flag, ``--help`` lists them with their help), or
``python -m rl.trainers config.json`` / ``config.yaml``; ``phoneenv train rl`` is the short form.

**Recipe: train on a split, evaluate held out.** ``tasks="split:train"`` (any selector) trains;
``eval_tasks="split:test"`` builds TRL's ``eval_dataset`` of held-out task × seed keys, with
``eval_seeds`` defaulting to seeds above every training seed; TRL's own eval loop runs our
``rollout_func`` (``mode="eval"``, ``num_generations_eval`` episodes per key) after training (and
every ``eval_steps`` with ``eval_strategy="steps"``), and the summary's ``heldout`` block holds the
held-out success, tokens and calls (also a ``kind: "heldout"`` record).

**Which TRL hook, and why: ``rollout_func``.** TRL 1.16 offers two ways to run multi-turn
episodes inside ``GRPOTrainer``:

* ``environment_factory`` turns the *public methods of an environment object* into tools: TRL
  renders them from Python signatures and docstrings, parses tool calls with the tokenizer's
  response template (Qwen/Hermes and a few others), calls the method, and stops the episode when
  a reply has no tool call; the reward is one scalar from ``get_reward``. Our tools are typed JSON
  Schemas named ``app.verb`` (not Python identifiers) served by ``PhonePlanEnv.step``; using the
  factory would mean generating Python shims per tool and calling the sandbox behind the
  Gymnasium API, it cannot constrain decoding to the call grammar, it ends an episode on a reply
  without a call (our env answers that with ``invalid_json`` and lets the model recover), and it
  gives no success/progress/cost triple per episode for CARE.
* ``rollout_func(prompts, trainer) -> {"prompt_ids", "completion_ids", "logprobs", ...}`` hands
  generation over entirely; extra keys reach the reward functions, and an ``env_mask`` key is
  used as TRL's multi-turn ``tool_mask`` (1 on model tokens, 0 on tool-result tokens), which
  multiplies the loss mask in ``_compute_loss``. That is exactly the whole-episode view of
  :mod:`rl.rollout`: ``prompt_ids`` = the first prompt, ``completion_ids`` = every later token
  (replies and feedback), ``env_mask`` = 1 on sampled tokens. So this module uses
  ``rollout_func``, with episodes run only through ``gym.make("PhonePlan-v0")`` / ``reset`` /
  ``step`` (:func:`rl.rollout.rollout_members`).

``rollout_func`` receives only the prompts, so each dataset row's ``prompt`` is an *episode
key*, the JSON text ``{"task": id, "seed": s}`` (:func:`episode_prompt`). TRL's
``RepeatSampler`` repeats each row ``num_generations`` times consecutively across the global
generation batch, so global position ``n`` is member ``n % G`` of group ``n // G``; the
rollout runs its process's members of each group with :func:`rl.rollout.rollout_members`, seeded
by ``(TrainConfig.seed, global step, group index)``, so members of a group split across processes
still get distinct, reproducible sampling seeds.

**Advantages.** TRL has no hook between rewards and advantages: both are computed inline in
``GRPOTrainer._generate_and_score_completions``. :class:`PhoneGRPOTrainer` therefore overrides

* ``_calculate_rewards``: after TRL's own (which gathers the rewards of all processes), it
  gathers every episode's :class:`EpisodeStats` (task, env seed, member index, success, progress,
  output tokens, tool calls, turns: named fields, sent as small dicts with
  ``accelerate.utils.gather_object``, :func:`gather_episode_stats`);
* ``_generate_and_score_completions``: after TRL's, with ``algo="care"`` it replaces
  ``output["advantages"]`` (this process's slice) by :func:`rl.care.group_care` computed per group
  over the *gathered* batch — so a group is never split when its advantages are computed. It
  asserts that every block of ``G`` consecutive gathered episodes has one episode key and member
  indices ``0..G−1``. The cost is :func:`rl.care.efficiency_cost` of output tokens and tool calls
  against absolute budgets. With ``algo="penalty"`` (the CARE report's ablation) every group's
  reward is :func:`rl.care.penalty_rewards` ``s(1 − μc)`` and its advantages are TRL's
  normalisation of it (sample std + 1e-4). With ``algo="grpo"`` TRL's advantages stay (group
  mean/std of the env reward ``success``, ``scale_rewards="group"``); all share everything else.
  Every algorithm's groups go through :func:`batch_advantages`, i.e. :func:`rl.care.group_advantages`,
  the function the bandit (:mod:`rl.bandit`) uses too, and each step logs the share of its groups
  per CARE mode and with all-zero advantages (:func:`group_shares`).

A step whose advantages are *all* zero (every group all-won or all-lost, CARE without
``shape_all_failure``) cannot change the policy: it is logged loudly (``logging.warning``, a
``kind: "warning"`` record, ``zero_advantage_steps`` in the summary).

**Which groups: competence-aware sampling.** TRL draws the prompts through ``RepeatSampler``
(``_get_train_sampler``); with ``competence_sampling=True`` :class:`PhoneGRPOTrainer` returns a
:class:`rl.sampler.CompetenceSampler` of the same shape instead (each row ``G`` times in a row,
chunks repeated for ``num_iterations × steps_per_generation``), whose rows are drawn with weight 1
for tasks whose recent group success is strictly between 0 and 1 (or unseen) and
``competence_floor`` for the others; every gathered batch updates it (identically on every
process) and its weights are logged (``kind: "sampler"``).

**The controller.** ``care_controller="rule"`` (default) or ``"llm"`` builds
:func:`rl.care.make_controller`; its settings and bounds are logged once (``kind:
"controller_start"``) and every change (``kind: "controller"``).

The replaced advantages then flow unchanged through TRL's buffering/shuffling into
``_compute_loss`` (``inputs["advantages"]``); the reward column TRL logs stays the env's
success.

**Metrics.** Per generation batch: success, progress, output tokens, tool calls, turns, advantage
mean/std/abs-max, CARE reward-mode counts (shaping/outcome/efficiency) and floored groups. They go
to TRL's metric store (so to TensorBoard with ``report_to="tensorboard"``) and, with the per-group
detail, to a JSONL file (``kind: "rollout"`` records); every TRL log line (loss, grad norm, ...)
is appended too (``kind: "log"``).

**Scaling out (configuration only).** DeepSpeed ZeRO: launch with
``accelerate launch --config_file rl/configs/accelerate_deepspeed_zero2.yaml -m rl.trainers cfg.json``
(or ``..._zero3.yaml``). Generation runs inside TRL's ``unwrap_model_for_generation``; with ZeRO-3
keep ``ds3_gather_for_generation=True`` (the default): episodes have different numbers of turns
on different ranks, and without gathered weights every forward pass would be a collective that
the ranks make a different number of times (a hang), so the rollout refuses that combination;
for the same reason it passes ``synced_gpus=False`` to ``generate`` (transformers turns it on
under ZeRO-3). Both configs are launched for real on two CPU ranks in the tests
(``tests/test_rl_deepspeed.py``: ``use_cpu``, no bf16, DeepSpeed over gloo).
vLLM: TRL's flag is ``TrainConfig(use_vllm=True, vllm_mode="colocate",
vllm_gpu_memory_utilization=0.3)`` (every ``GRPOConfig`` field is a ``TrainConfig`` field); with a ``rollout_func`` TRL then
only builds ``trainer.vllm_generation`` and pushes the current weights into it before each call.
Sampling must go through that engine instead of ``model.generate``: in colocate mode each rank owns
a ``vllm.LLM`` (``trainer.vllm_generation.llm``), so ranks may run different numbers of turns; a
turn is ``llm.generate([{"prompt_token_ids": ids}], SamplingParams(temperature=T,
max_tokens=max_new_tokens, seed=turn_seed, structured_outputs=StructuredOutputsParams(grammar=call_grammar_ebnf)))``
(vLLM's structured outputs use xgrammar too); :class:`rl.vllm_engine.VLLMSampler` does this,
batching the pending replies of a group's members into one call and returning vLLM's sampled
log-probs for TRL's importance-sampling correction. Server mode (``trl vllm-serve``) gathers
prompts from all ranks per call and would need the same number of calls on every rank, which
variable episodes do not give: the rollout refuses it (and colocate tensor parallelism > 1) with
a ``ValueError``. On CPU, and on one GPU without vLLM, plain ``transformers`` generation is used.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from agents.toolfilter import save_model_filter
from phoneenv.extras import needs, require
from rl.care import DEFAULT_COST_WEIGHT, CareConfig, GroupAdvantages
from rl.rollout import RolloutConfig, Trajectory, rollout_members, to_trl
from rl.train_help import DEFAULT_INVALID_REPLY_PENALTY, TRAIN_HELP

with needs("rl", feature="RL training (rl.trainers, phoneenv train rl)"):
    from trl import GRPOConfig, GRPOTrainer

__all__ = [
    "ALGOS",
    "CONTROLLERS",
    "CONTROLLER_API_KEY_ENV",
    "MODES",
    "TRAIN_EVAL",
    "EpisodeStats",
    "PhoneGRPOTrainer",
    "TrainConfig",
    "batch_advantages",
    "build_dataset",
    "build_eval_dataset",
    "episode_prompt",
    "eval_curve",
    "gather_episode_stats",
    "group_shares",
    "make_rollout_func",
    "make_trainer",
    "parse_episode_prompt",
    "step_shares",
    "success_reward",
    "train_rl",
]

logger = logging.getLogger(__name__)

ALGOS = ("care", "grpo", "penalty")
"""``TrainConfig.algo`` values."""
CONTROLLERS = ("rule", "none", "llm")
"""``TrainConfig.care_controller`` values."""
CONTROLLER_API_KEY_ENV = "PHONEENV_CONTROLLER_API_KEY"
"""Environment variable the LLM controller's API key is read from when the config has none."""
TRAIN_EVAL = "train"
"""``TrainConfig.eval_tasks`` value that evaluates on the training tasks (the learning curve)."""


def _help(name: str, **extra: Any) -> dict[str, Any]:
    return {"help": TRAIN_HELP[name], **extra}


# ------------------------------------------------------------------------------------------------
# Configuration
# ------------------------------------------------------------------------------------------------


@dataclass
class TrainConfig(GRPOConfig):
    r"""Configuration of :func:`train_rl`: TRL's ``GRPOConfig`` plus the PhonePlan fields.

    Every ``GRPOConfig`` field is a field here (``use_vllm``, ``num_iterations``, ``eval_steps``,
    ...); the fields below are ours (their help is :data:`rl.train_help.TRAIN_HELP`, shown by
    ``python -m rl.trainers --help`` and ``phoneenv train rl --help``), and a few ``GRPOConfig``
    defaults are changed: ``output_dir="runs/rl"``, ``logging_steps=1``, ``report_to="tensorboard"``,
    ``save_strategy="no"``, ``activation_checkpointing=False`` (transformers' new name of
    ``gradient_checkpointing``, which still works), ``bf16`` only on a CUDA GPU with bf16,
    ``per_device_train_batch_size = per_device_eval_batch_size = 8`` (one group of G = 8 per step),
    ``max_steps=200`` and ``max_completion_length = max_turns × max_new_tokens``.

    Choices and why:

    * ``algo`` ``"care"`` (default), ``"grpo"`` or ``"penalty"`` (the ablation: an
      efficiency-penalised reward with vanilla normalisation, :func:`rl.care.penalty_rewards`).
    * ``num_generations`` G = 8: p resolves in steps of 1/8, so CARE's shaping (p < p_low) and
      efficiency (p > p_high) modes both occur on a model that wins sometimes (G = 4 gave only
      p ∈ {0, .25, .5, .75, 1}).
    * ``care_controller="rule"``: the bounded rule controller, every ``care_controller_every = 5``
      optimiser steps once ``care_controller_min_groups = 4`` groups are in its window: with one
      group per step it acts at steps 5 and 10 of a 10-step CPU run, 6 times in 30 steps. Its
      settings and bounds are logged once (``kind: "controller_start"``) and every change
      (``kind: "controller"``).
    * ``competence_sampling=True``: groups come from tasks in the learnable zone (see
      :class:`rl.sampler.CompetenceSampler`), since all-won and all-lost groups carry no advantage.
    * ``invalid_reply_penalty`` = :data:`rl.train_help.DEFAULT_INVALID_REPLY_PENALTY` (0: the
      algorithms as published), the one default of ``TrainConfig``, ``phoneenv train rl`` and
      ``benchmarks/care_vs_grpo.py`` (why 0: see that constant).
    * ``tool_filter="task"``: the task's apps' tools, as ``phoneenv eval --tools task`` and
      ``phoneenv train sft --tools task`` offer them.
    * ``care_controller_api_key`` is read from ``$PHONEENV_CONTROLLER_API_KEY`` when unset and is
      never written: :meth:`to_dict` (TensorBoard's config dump), pickling (``training_args.bin``)
      and the JSONL records all leave it out.

    ``dict`` fields (``env_kwargs``, ``care``, ``sampler``) also take a JSON object as text (the
    command line); ``tasks`` and ``tool_filter`` take lists or comma-separated text.

    Raises:
        ValueError: (at construction) an unknown ``algo`` or ``care_controller``, G < 2,
            ``max_turns`` or ``max_new_tokens`` < 1, ``care_cost_weight`` outside [0, 1], a malformed
            tool filter, or ``care_controller="llm"`` without a base URL and model.
    """

    _VALID_DICT_FIELDS: ClassVar[list[str]] = [*GRPOConfig._VALID_DICT_FIELDS, "env_kwargs", "care", "sampler"]

    # -- GRPOConfig fields whose defaults differ here ---------------------------------------------
    output_dir: str | None = field(default="runs/rl", metadata=_help("output_dir"))
    learning_rate: float = field(default=1e-6, metadata=_help("learning_rate"))
    logging_steps: float = field(default=1, metadata=_help("logging_steps"))
    report_to: None | str | list[str] = field(default="tensorboard", metadata=_help("report_to"))  # noqa: RUF036 - HfArgumentParser reads the 2nd arg
    save_strategy: str = field(default="no", metadata=_help("save_strategy"))
    gradient_checkpointing: bool | None = field(default=None, metadata=_help("gradient_checkpointing"))
    activation_checkpointing: bool | None = field(default=False, metadata=_help("gradient_checkpointing"))
    bf16: bool | None = field(default=None, metadata=_help("bf16"))
    per_device_train_batch_size: int = field(default=8, metadata=_help("per_device_train_batch_size"))
    per_device_eval_batch_size: int = field(default=8, metadata={"help": "Episodes per device per eval batch."})
    max_steps: int = field(default=200, metadata=_help("max_steps"))
    num_generations: int | None = field(default=8, metadata=_help("num_generations"))
    temperature: float = field(default=1.0, metadata=_help("temperature"))
    max_completion_length: int | None = field(default=None, metadata=_help("max_completion_length"))

    # -- What to train on ------------------------------------------------------------------------
    model_path: str | None = field(default=None, metadata=_help("model_path"))
    tasks: list[str] | str = field(default="category:tool", metadata=_help("tasks"))
    seeds: list[int] = field(default_factory=lambda: [0], metadata=_help("seeds"))
    max_tasks: int | None = field(default=None, metadata=_help("max_tasks"))
    env_kwargs: dict | str | None = field(default_factory=dict, metadata=_help("env_kwargs"))
    tool_filter: str | None = field(default="task", metadata=_help("tool_filter"))
    eval_tasks: str | None = field(default=None, metadata=_help("eval_tasks"))
    eval_seeds: list[int] | None = field(default=None, metadata=_help("eval_seeds"))

    # -- The algorithm ---------------------------------------------------------------------------
    algo: str = field(default="care", metadata=_help("algo", choices=list(ALGOS)))
    care: dict | str | None = field(default=None, metadata=_help("care"))
    shape_all_failure: bool = field(default=False, metadata=_help("shape_all_failure"))
    care_budget_tokens: float | None = field(default=None, metadata=_help("care_budget_tokens"))
    care_budget_calls: float | None = field(default=None, metadata=_help("care_budget_calls"))
    care_cost_weight: float = field(default=DEFAULT_COST_WEIGHT, metadata=_help("care_cost_weight"))
    invalid_reply_penalty: float = field(default=DEFAULT_INVALID_REPLY_PENALTY, metadata=_help("invalid_reply_penalty"))
    care_controller: str = field(default="rule", metadata=_help("care_controller", choices=list(CONTROLLERS)))
    care_controller_every: int = field(default=5, metadata=_help("care_controller_every"))
    care_controller_min_groups: int = field(default=4, metadata=_help("care_controller_min_groups"))
    care_controller_base_url: str | None = field(default=None, metadata=_help("care_controller_base_url"))
    care_controller_model: str | None = field(default=None, metadata=_help("care_controller_model"))
    care_controller_api_key: str | None = field(default=None, repr=False, metadata=_help("care_controller_api_key"))
    competence_sampling: bool = field(default=True, metadata=_help("competence_sampling"))
    competence_window: int = field(default=4, metadata=_help("competence_window"))
    competence_floor: float = field(default=0.1, metadata=_help("competence_floor"))

    # -- Rollouts --------------------------------------------------------------------------------
    max_turns: int = field(default=8, metadata=_help("max_turns"))
    max_new_tokens: int = field(default=256, metadata=_help("max_new_tokens"))
    constrained: bool = field(default=True, metadata=_help("constrained"))
    max_string_chars: int = field(default=120, metadata=_help("max_string_chars"))
    env_ray: str | None = field(default=None, metadata=_help("env_ray"))

    # -- Logging ---------------------------------------------------------------------------------
    metrics_path: str | None = field(default=None, metadata=_help("metrics_path"))
    save_final: bool = field(default=True, metadata=_help("save_final"))
    sampler: dict | str | None = field(default=None, metadata=_help("sampler"))
    num_prompts: int | None = field(default=None, metadata=_help("num_prompts"))
    run_store: str | None = field(default=None, metadata=_help("run_store"))
    harness: str | None = field(default=None, metadata=_help("harness"))
    harness_loop: str | None = field(default=None, metadata=_help("harness_loop"))

    def __post_init__(self) -> None:
        from agents.toolfilter import parse_tool_filter

        if self.algo not in ALGOS:
            raise ValueError(f"algo must be one of {', '.join(ALGOS)}, not {self.algo!r}")
        if self.care_controller not in CONTROLLERS:
            raise ValueError(f"care_controller must be one of {', '.join(CONTROLLERS)}, not {self.care_controller!r}")
        if self.num_generations is None or self.num_generations < 2:
            raise ValueError("num_generations must be ≥ 2 (a group of one has no advantage)")
        if self.max_turns < 1 or self.max_new_tokens < 1:
            raise ValueError("max_turns and max_new_tokens must be ≥ 1")
        if not 0.0 <= self.care_cost_weight <= 1.0:
            raise ValueError("care_cost_weight must lie in [0, 1]")
        if not 0.0 <= self.invalid_reply_penalty <= 1.0:
            raise ValueError("invalid_reply_penalty must lie in [0, 1]")
        if self.care_controller == "llm" and not (self.care_controller_base_url and self.care_controller_model):
            raise ValueError("care_controller='llm' needs care_controller_base_url and care_controller_model")
        if isinstance(self.tasks, list) and len(self.tasks) == 1 and "," in self.tasks[0]:
            self.tasks = self.tasks[0]  # one comma-separated selector from the command line
        parse_tool_filter(self.tool_filter)
        if self.env_kwargs is None:
            self.env_kwargs = {}
        if self.max_completion_length is None:
            self.max_completion_length = self.max_turns * self.max_new_tokens
        if self.bf16 is None:
            self.bf16 = not self.use_cpu and _bf16_available()
        super().__post_init__()
        for name in ("env_kwargs", "care", "sampler"):  # JSON text that did not start with "{"
            value = getattr(self, name)
            if isinstance(value, str):
                setattr(self, name, json.loads(value))
        self.care_config()  # a bad CARE parameter fails here, not at the first step

    def care_config(self) -> Any:
        """The :class:`rl.care.CareConfig` to start from (``care`` with ``shape_all_failure`` set
        when this config asks for it)."""
        from rl.care import CareConfig

        if self.care is None:
            cfg = CareConfig()
        elif isinstance(self.care, dict):
            cfg = CareConfig(**self.care)
        else:
            cfg = self.care
        if self.shape_all_failure and not cfg.shape_all_failure:
            cfg = dataclasses.replace(cfg, shape_all_failure=True)
        return cfg

    def rollout_config(self) -> RolloutConfig:
        """The :class:`rl.rollout.RolloutConfig` of this run's episodes."""
        env_kwargs = dict(self.env_kwargs or {})
        prompt: dict[str, Any] = {}
        if self.harness:
            version = self.harness_version()
            env_kwargs.update(version.env_kwargs())
            planner = version.planner_kwargs()
            prompt = {"instructions": planner.get("instructions", ""), "list_skills": planner.get("list_skills", ())}
        return RolloutConfig(
            max_turns=self.max_turns,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            constrained=self.constrained,
            max_string_chars=self.max_string_chars,
            tool_filter=self.tool_filter,
            env_kwargs=env_kwargs,
            **prompt,
        )

    def harness_version(self) -> Any:
        """The :class:`phoneenv.loop.harness.Harness` of ``harness`` (v0 when unset), from
        ``harness_loop``, else ``run_store``, else the default loop directory.

        Raises:
            phoneenv.loop.harness.HarnessError: no such version.
        """
        from phoneenv.loop.harness import BASE_VERSION, load_harness

        return load_harness(self.harness or BASE_VERSION, self.harness_loop or self.run_store)

    @property
    def budget_tokens(self) -> float:
        """The token budget of the efficiency cost (see ``care_budget_tokens``)."""
        return float(self.care_budget_tokens or self.max_turns * self.max_new_tokens)

    @property
    def budget_calls(self) -> float:
        """The tool-call budget of the efficiency cost (see ``care_budget_calls``)."""
        return float(self.care_budget_calls or self.max_turns)

    def controller_api_key(self) -> str | None:
        """The LLM controller's API key: the field, else ``$PHONEENV_CONTROLLER_API_KEY``."""
        return self.care_controller_api_key or os.environ.get(CONTROLLER_API_KEY_ENV)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able fields (TRL's, with a CareConfig as a dict), the controller's API key left out."""
        out = super().to_dict()
        if is_dataclass(self.care):
            out["care"] = asdict(self.care)
        if out.get("care_controller_api_key") is not None:
            out["care_controller_api_key"] = "<redacted>"
        return out

    def __getstate__(self) -> dict[str, Any]:  # training_args.bin is a pickle of the config
        state = dict(self.__dict__)
        state["care_controller_api_key"] = None
        return state


def _bf16_available() -> bool:
    from rl.hardware import bf16_supported

    return bf16_supported("auto")


# ------------------------------------------------------------------------------------------------
# Data: one row per task × seed, the prompt being the episode key
# ------------------------------------------------------------------------------------------------


def episode_prompt(task_id: str, seed: int) -> str:
    """The dataset ``prompt`` of an episode: ``{"task": task_id, "seed": seed}`` as JSON text."""
    return json.dumps({"task": task_id, "seed": int(seed)}, sort_keys=True)


def parse_episode_prompt(prompt: Any) -> tuple[str, int]:
    """``(task_id, seed)`` of an :func:`episode_prompt`; ValueError for anything else."""
    try:
        obj = json.loads(prompt)
        return str(obj["task"]), int(obj["seed"])
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(
            f"a PhonePlan GRPO prompt must be an episode key {{'task': id, 'seed': s}}, got {prompt!r}"
        ) from exc


def _task_ids(tasks: str | Sequence[str], max_tasks: int | None) -> list[str]:
    """Task ids of a selector, or of a list whose items are task ids or selectors (in order)."""
    from phoneenv.tasks import select

    if isinstance(tasks, str):
        ids = [t.id for t in select(tasks)]
    else:
        from phoneenv.tasks import get_task

        ids = []
        for item in tasks:
            try:
                ids.append(get_task(item).id)
            except KeyError:
                ids.extend(t.id for t in select(item) if t.id not in ids)
    if max_tasks is not None:
        ids = ids[:max_tasks]
    if not ids:
        raise ValueError(f"no task selected by {tasks!r}")
    return ids


def build_dataset(cfg: TrainConfig) -> Any:
    """A ``datasets.Dataset`` of ``prompt`` keys (:func:`episode_prompt`): one per task × seed, or
    ``cfg.num_prompts`` drawn by :class:`rl.sampler.TaskSampler` when ``cfg.sampler`` is set
    (seeds taken round-robin from ``cfg.seeds``)."""
    from datasets import Dataset

    ids = _task_ids(cfg.tasks, cfg.max_tasks)
    if cfg.sampler is None:
        rows = [episode_prompt(t, s) for t in ids for s in cfg.seeds]
    else:
        from phoneenv.tasks import get_task
        from rl.sampler import SamplerConfig, TaskSampler

        sc = cfg.sampler if isinstance(cfg.sampler, SamplerConfig) else SamplerConfig(**cfg.sampler)
        sampler = TaskSampler([get_task(t) for t in ids], sc)
        n = cfg.num_prompts or len(ids) * len(cfg.seeds)
        rows = [episode_prompt(t.id, cfg.seeds[i % len(cfg.seeds)]) for i, t in enumerate(sampler.sample(n))]
    return Dataset.from_dict({"prompt": rows})


def build_eval_dataset(cfg: TrainConfig) -> Any:
    """TRL's ``eval_dataset`` of :func:`episode_prompt` keys; None without ``eval_tasks``.

    * ``eval_tasks="train"``: the training tasks at ``cfg.eval_seeds`` (default: the training
      seeds), so each evaluation measures training success on a fixed set of episodes, with no
      sampler in the way: the learning curve of the task set the model is trained on.
    * any other selector: held-out evaluation, those tasks × ``cfg.eval_seeds`` (default:
      ``len(cfg.seeds)`` seeds above the largest training seed).

    Raises:
        ValueError: held-out eval seeds that are also training seeds while the eval tasks overlap
        the training tasks (that would not be held out), or no task selected.
    """
    if not cfg.eval_tasks:
        return None
    from datasets import Dataset

    if cfg.eval_tasks == TRAIN_EVAL:
        ids = _task_ids(cfg.tasks, cfg.max_tasks)
        seeds = list(cfg.eval_seeds) if cfg.eval_seeds else list(cfg.seeds)
        return Dataset.from_dict({"prompt": [episode_prompt(t, s) for t in ids for s in seeds]})
    ids = _task_ids(cfg.eval_tasks, None)
    seeds = list(cfg.eval_seeds) if cfg.eval_seeds else [max(cfg.seeds) + 1 + i for i in range(len(cfg.seeds))]
    shared = set(ids) & set(_task_ids(cfg.tasks, cfg.max_tasks))
    if shared and set(seeds) & set(cfg.seeds):
        raise ValueError(
            f"held-out episodes must differ from training ones: {len(shared)} tasks and seeds "
            f"{sorted(set(seeds) & set(cfg.seeds))} are in both"
        )
    return Dataset.from_dict({"prompt": [episode_prompt(t, s) for t in ids for s in seeds]})


def eval_curve(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The evaluations of a run, one point per optimiser step at which TRL evaluated.

    Args:
        history: rollout records (``PhoneGRPOTrainer.phone_history`` or the ``kind: "rollout"``
            lines of ``metrics.jsonl``); only ``mode == "eval"`` records are read.

    Returns:
        ``[{"step", "episodes", "success", "progress", "output_tokens", "tool_calls"}, ...]`` in
        step order; each mean is weighted by the episodes of the eval batches at that step.
    """
    by_step: dict[int, list[dict[str, Any]]] = {}
    for r in history:
        if r.get("mode") == "eval":
            by_step.setdefault(int(r["step"]), []).append(r)
    points = []
    for step, recs in sorted(by_step.items()):
        n = sum(int(r["episodes"]) for r in recs)

        def mean(name: str, recs: list[dict[str, Any]] = recs, n: int = n) -> float:
            return float(sum(r["metrics"][name] * r["episodes"] for r in recs) / max(n, 1))

        points.append(
            {
                "step": step,
                "episodes": n,
                "success": mean("phone/success"),
                "progress": mean("phone/progress"),
                "output_tokens": mean("phone/output_tokens"),
                "tool_calls": mean("phone/tool_calls"),
            }
        )
    return points


def success_reward(completions: list[Any], success: list[float], **kwargs: Any) -> list[float]:
    """TRL reward function: the env's reward (1.0 when the verdict succeeds, else 0.0), forwarded
    from the rollout's ``success`` field. It is the reward of ``algo="grpo"`` and what TRL logs
    as ``reward`` under both algorithms."""
    return [float(s) for s in success]


# ------------------------------------------------------------------------------------------------
# The rollout function
# ------------------------------------------------------------------------------------------------


def _group_sample_seed(base: int, step: int, group: int) -> int:
    words = [int(base) & 0xFFFFFFFF, int(step) & 0xFFFFFFFF, int(group) & 0xFFFFFFFF, 0x5EED]
    return int(np.random.SeedSequence(words).generate_state(1, np.uint64)[0] >> np.uint64(1))


def _env_pool(cfg: TrainConfig, trainer: Any) -> Any:
    """The :class:`phoneenv.farm.distributed.RayEnvPool` the rollouts step (``cfg.env_ray``),
    started at the first rollout and kept on ``trainer._phone_env_pool`` until :func:`train_rl`
    closes it; None without ``env_ray``."""
    if cfg.env_ray is None:
        return None
    pool = getattr(trainer, "_phone_env_pool", None)
    if pool is None:
        from phoneenv.farm.distributed import RayEnvPool

        address = None if cfg.env_ray == "local" else cfg.env_ray
        pool = RayEnvPool(max(cfg.num_generations, getattr(trainer, "num_generations_eval", 0) or 0), address=address)
        trainer._phone_env_pool = pool
    return pool


def make_rollout_func(cfg: TrainConfig) -> Callable[[list[Any], Any], dict[str, list[Any]]]:
    """TRL's ``rollout_func(prompts, trainer)``: run this process's episodes of the batch.

    ``prompts`` is the process's slice of the generation batch (each episode key repeated for
    its members). Returns :func:`rl.rollout.to_trl` of the trajectories in prompt order; the
    trajectories are also kept on ``trainer._phone_trajectories``.
    """

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        import torch
        from trl.models import unwrap_model_for_generation

        llm = None
        generation = None
        if getattr(trainer, "use_vllm", False):
            from rl.vllm_engine import check_vllm_generation

            generation = trainer.vllm_generation
            llm = check_vllm_generation(generation)
            if getattr(generation, "enable_sleep_mode", False):  # TRL's own generate wakes it the same way
                llm.wake_up(tags=["kv_cache"])
        args = trainer.args
        ds = getattr(trainer.accelerator.state, "deepspeed_plugin", None)
        if ds is not None and getattr(ds, "zero_stage", None) == 3 and not args.ds3_gather_for_generation:
            raise ValueError(
                "ZeRO-3 with ds3_gather_for_generation=False would make every forward pass a collective, "
                "and ranks run different numbers of turns: keep ds3_gather_for_generation=True"
            )
        G = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        offset = trainer.accelerator.process_index * len(prompts)
        # group index -> (episode key, [(local position, member)])
        groups: dict[int, tuple[str, list[tuple[int, int]]]] = {}
        for i, prompt in enumerate(prompts):
            n = offset + i
            key = prompt if isinstance(prompt, str) else json.dumps(prompt)
            entry = groups.setdefault(n // G, (key, []))
            if entry[0] != key:
                raise AssertionError(f"group {n // G} mixes episode keys {entry[0]!r} and {key!r}")
            entry[1].append((i, n % G))
        step = int(trainer.state.global_step)
        # TRL's log-probs use the trainer's temperature: sample with the same one.
        rollout_cfg = dataclasses.replace(cfg.rollout_config(), temperature=trainer.temperature)
        started = time.perf_counter()
        trajectories: list[Trajectory | None] = [None] * len(prompts)
        with (
            unwrap_model_for_generation(
                trainer.model_wrapped,
                trainer.accelerator,
                gather_deepspeed3_params=args.ds3_gather_for_generation,
            ) as model,
            torch.no_grad(),
        ):
            for group, (key, places) in sorted(groups.items()):
                task_id, seed = parse_episode_prompt(key)
                trajs = rollout_members(
                    model,
                    trainer.processing_class,
                    task_id,
                    seed,
                    [m for _, m in places],
                    rollout_cfg,
                    sample_seed=_group_sample_seed(cfg.seed, step, group),
                    llm=llm,
                    env_pool=_env_pool(cfg, trainer),
                )
                for (i, _), traj in zip(places, trajs, strict=True):
                    trajectories[i] = traj
        if generation is not None and getattr(generation, "enable_sleep_mode", False):
            llm.sleep(level=2)
            generation._llm_weights_sleeping = True  # TRL re-pushes the weights before the next rollout
        done = [t for t in trajectories if t is not None]
        assert len(done) == len(prompts)
        trainer._phone_trajectories = done
        if cfg.run_store:
            _store_rollouts(cfg, done, step=step, mode="train" if trainer.model.training else "eval")
        trainer._phone_rollout_seconds = time.perf_counter() - started
        return to_trl(done)

    return rollout_func


def _store_rollouts(cfg: TrainConfig, trajectories: Sequence[Trajectory], *, step: int, mode: str) -> None:
    """Add the trajectories' traces to the run store of the loop directory ``cfg.run_store``
    (origin ``rl``, the run named by ``output_dir``, with the optimiser step and the mode); each
    trace names the model (``cfg.model_path`` at ``step``, its temperature) and the harness
    (``cfg.harness``, v0 when unset).
    Training goes on whatever the store does: a failure is logged, the episodes are skipped."""
    from phoneenv.loop import RUNS_DB
    from phoneenv.loop.harness import BASE_VERSION
    from phoneenv.loop.runstore import RunStore

    # the policy being trained, at this step, with the harness the rollouts play with
    model = {"name": str(cfg.model_path), "step": step, "decoding": {"temperature": cfg.temperature}}
    harness = cfg.harness or BASE_VERSION
    episodes = [
        (t.trace.model_copy(update={"model": t.trace.model or model, "harness": t.trace.harness or harness}),
         None, None)
        for t in trajectories
        if t.trace is not None
    ]  # fmt: skip
    if not episodes:
        return
    try:
        RunStore(Path(str(cfg.run_store)) / RUNS_DB).add_many(
            episodes, run=str(cfg.output_dir), origin="rl", step=step, mode=mode
        )
    except (OSError, ValueError, sqlite3.Error) as exc:
        logger.warning("step %d: %d rollout episodes not stored in %s: %s", step, len(episodes), cfg.run_store, exc)


# ------------------------------------------------------------------------------------------------
# Per-episode statistics, gathered by name
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EpisodeStats:
    """What the trainer needs of one episode, by name (gathered across processes as a dict).

    Attributes:
        task_id, env_seed: the episode key; ``group_index``: the member index in its group.
        success: 0/1; ``progress`` in [0, 1]; ``output_tokens``, ``tool_calls``: counts; ``turns``:
        the model's replies; ``invalid_replies``: those of them that held no tool call.
    """

    task_id: str
    env_seed: int
    group_index: int
    success: float
    progress: float
    output_tokens: float
    tool_calls: float
    turns: int
    invalid_replies: int

    @property
    def invalid_share(self) -> float:
        """``invalid_replies / turns`` in [0, 1] (0.0 for an episode without replies)."""
        return self.invalid_replies / self.turns if self.turns else 0.0

    @property
    def key(self) -> str:
        """The episode key (:func:`episode_prompt`)."""
        return episode_prompt(self.task_id, self.env_seed)

    @classmethod
    def from_input(cls, x: dict[str, Any]) -> EpisodeStats:
        """From one TRL input row (the rollout's per-episode extras, :func:`rl.rollout.to_trl`)."""
        return cls(
            task_id=str(x["task_id"]),
            env_seed=int(x["env_seed"]),
            group_index=int(x["group_index"]),
            success=float(x["success"]),
            progress=float(x["progress"]),
            output_tokens=float(x["output_tokens"]),
            tool_calls=float(x["tool_calls"]),
            turns=int(x["turns"]),
            invalid_replies=int(x["invalid_replies"]),
        )


def gather_episode_stats(
    inputs: Sequence[dict[str, Any]], gather: Callable[[list[Any]], list[Any]] | None = None
) -> list[EpisodeStats]:
    """Every process's episodes, in global order: this process's rows as small dicts, gathered
    with ``gather`` (default ``accelerate.utils.gather_object``: a list from each process,
    concatenated in process order), then rebuilt as :class:`EpisodeStats`.

    Raises:
        KeyError: a row without one of the rollout's per-episode fields.
    """
    if gather is None:
        from accelerate.utils import gather_object as gather
    local = [asdict(EpisodeStats.from_input(x)) for x in inputs]
    return [EpisodeStats(**d) for d in gather(local)]


def _column(stats: Sequence[EpisodeStats], name: str) -> np.ndarray:
    return np.array([float(getattr(s, name)) for s in stats], dtype=np.float64)


MODES: tuple[str, ...] = ("shaping", "outcome", "efficiency")
"""CARE's reward modes (:class:`rl.care.RewardMode` values), in the order they are reported."""


def batch_advantages(
    stats: Sequence[EpisodeStats], groups: Sequence[slice], cfg: TrainConfig, care_config: CareConfig
) -> list[GroupAdvantages]:
    """Every group's rewards and advantages under ``cfg.algo``: :func:`rl.care.group_advantages`
    (the function :mod:`rl.bandit` calls too) per block of the gathered batch, with the episodes'
    success, progress, output tokens and tool calls, the cost's budgets and weight of ``cfg``, and
    ``ν × invalid share`` as the penalty when ``cfg.invalid_reply_penalty = ν > 0``.

    Args:
        stats: the gathered episodes (:func:`gather_episode_stats`), ``N = len(groups) × G``.
        groups: one slice of ``stats`` per group (:func:`_check_groups`).
        cfg: the run's :class:`TrainConfig`.
        care_config: the current :class:`rl.care.CareConfig` (the controller may have moved it).

    Returns:
        One :class:`rl.care.GroupAdvantages` per group, in group order (advantages float64, shape ``(G,)``).
    """
    from rl.care import group_advantages

    success, progress = _column(stats, "success"), _column(stats, "progress")
    tokens, calls = _column(stats, "output_tokens"), _column(stats, "tool_calls")
    nu = cfg.invalid_reply_penalty
    invalid = np.array([s.invalid_share for s in stats], dtype=np.float64)
    return [
        group_advantages(
            cfg.algo,
            success[block],
            progress[block],
            tokens[block],
            calls[block],
            care_config,
            budget_tokens=cfg.budget_tokens,
            budget_calls=cfg.budget_calls,
            cost_weight=cfg.care_cost_weight,
            penalty=nu * invalid[block] if nu > 0 else None,
        )
        for block in groups
    ]


def group_shares(
    results: Sequence[GroupAdvantages], advantages: Sequence[np.ndarray] | None = None
) -> dict[str, float]:
    """Per step, the shares of its groups: ``groups/{shaping,outcome,efficiency}_share`` (CARE's
    mode of each group's success rate, for every algorithm: the mode CARE used or would have used)
    and ``groups/zero_advantage_share`` (groups whose advantages are all exactly 0: they cannot
    move the policy). Shares are in [0, 1]; the three mode shares sum to 1.

    Args:
        results: :class:`rl.care.GroupAdvantages` of the step's groups (at least one).
        advantages: the advantages the step actually used per group (TRL's for GRPO without a
            penalty); default each result's own.
    """
    n = len(results)
    if n == 0:
        raise ValueError("group_shares needs at least one group")
    advs = [r.advantages for r in results] if advantages is None else list(advantages)
    out = {f"groups/{m}_share": sum(r.mode.value == m for r in results) / n for m in MODES}
    out["groups/zero_advantage_share"] = sum(not np.any(a) for a in advs) / n
    return out


# ------------------------------------------------------------------------------------------------
# The trainer
# ------------------------------------------------------------------------------------------------


class PhoneGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose advantages are CARE's (``algo="care"``), the penalised-reward
    ablation's (``"penalty"``) or TRL's (``"grpo"``), computed over whole gathered groups, with
    competence-aware group sampling, a CARE controller and PhonePlan metrics (module docstring).

    Args:
        phone_cfg: the :class:`TrainConfig` (also passed as ``args``).
        metrics_path: the JSONL file (None: no file).
        controller_client: a chat client for ``care_controller="llm"`` (tests); None builds one
            from the config's base URL and model.
    """

    def __init__(
        self,
        *args: Any,
        phone_cfg: TrainConfig,
        metrics_path: str | None = None,
        controller_client: Any = None,
        **kwargs: Any,
    ) -> None:
        self.phone_cfg = phone_cfg
        self.competence_sampler: Any = None
        super().__init__(*args, **kwargs)
        self.algo = phone_cfg.algo
        self.care_config = phone_cfg.care_config()
        self.metrics_path = Path(metrics_path) if metrics_path else None
        self.controller = _make_controller(phone_cfg, self.care_config, controller_client)
        self._controller_window: list[np.ndarray] = []
        self._controller_tokens: list[float] = []
        self._prev_window_tokens: float | None = None
        self._phone_stats: list[EpisodeStats] | None = None
        self._phone_trajectories: list[Trajectory] = []
        self._phone_rollout_seconds = 0.0
        self.phone_history: list[dict[str, Any]] = []
        self.zero_advantage_steps = 0
        if self.controller is not None:
            self._write({"kind": "controller_start", "step": 0, **self.controller.describe()})

    # -- competence-aware sampling of the next groups ---------------------------------------------
    def _get_train_sampler(self, dataset: Any = None) -> Any:  # type: ignore[override]
        if not self.phone_cfg.competence_sampling:
            return super()._get_train_sampler(dataset)
        from rl.sampler import CompetenceSampler

        dataset = self.train_dataset if dataset is None else dataset
        rows = [parse_episode_prompt(p) for p in dataset["prompt"]]
        self.competence_sampler = CompetenceSampler(
            rows,
            mini_repeat_count=self.num_generations,
            batch_size=self.args.generation_batch_size // self.num_generations,
            repeat_count=self.num_iterations * self.args.steps_per_generation,
            window=self.phone_cfg.competence_window,
            floor=self.phone_cfg.competence_floor,
            seed=self.args.seed,
        )
        return self.competence_sampler

    # -- gather the per-episode statistics of the whole batch -----------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._phone_stats = gather_episode_stats(inputs)
        self._phone_n_local = len(inputs)
        return rewards

    # -- replace the advantages, per whole group -------------------------------------------------
    def _generate_and_score_completions(self, inputs):  # type: ignore[override]
        import torch
        from accelerate.utils import gather

        out = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        G = self.num_generations if mode == "train" else self.num_generations_eval
        stats = self._phone_stats
        assert stats is not None, "_calculate_rewards did not run"
        groups = _check_groups(stats, G)
        step = int(self.state.global_step)
        record: dict[str, Any] = {
            "kind": "rollout",
            "step": step,
            "mode": mode,
            "algo": self.algo,
            "time": time.time(),
            "rollout_seconds": float(self._phone_rollout_seconds),
            "groups": [],
        }
        n = len(stats)
        success, progress = _column(stats, "success"), _column(stats, "progress")
        tokens, calls = _column(stats, "output_tokens"), _column(stats, "tool_calls")
        invalid = np.array([s.invalid_share for s in stats], dtype=np.float64)
        nu = self.phone_cfg.invalid_reply_penalty
        results = batch_advantages(stats, groups, self.phone_cfg, self.care_config)
        advantages = np.zeros(n, dtype=np.float64)
        for block, res in zip(groups, results, strict=True):
            advantages[block] = res.advantages
        if self.algo in ("care", "penalty") or nu > 0:
            start = self.accelerator.process_index * self._phone_n_local
            local = advantages[start : start + self._phone_n_local]
            out["advantages"] = torch.tensor(local, dtype=out["advantages"].dtype, device=out["advantages"].device)
            all_adv = advantages
        else:  # grpo without a penalty: TRL's own advantages stay (batch_advantages gives the same, in float64)
            all_adv = gather(out["advantages"].detach().double()).cpu().numpy()
        for block, res in zip(groups, results, strict=True):
            detail: dict[str, Any] = {"mode": res.mode.value, "rewards": res.rewards.tolist()}
            if self.algo != "grpo":
                detail["cost"] = res.cost.tolist()
            if self.algo == "care":
                detail["floored"] = res.floored
            if nu > 0:
                detail["invalid_share"] = invalid[block].tolist()
            record["groups"].append(
                _group_record(stats, block, tokens, calls, success, progress, all_adv[block], **detail)
            )
        shares = group_shares(results, [all_adv[b] for b in groups])
        mode_counts = {m: sum(r.mode.value == m for r in results) for m in MODES}
        record["mode_counts"] = mode_counts
        record["zero_advantage_groups"] = sum(not np.any(all_adv[b]) for b in groups)
        if self.algo != "grpo":
            record["care"] = asdict(self.care_config)
        if self.algo == "care":
            floored = sum(int(r.floored) for r in results)
            for name, count in mode_counts.items():
                self._metrics[mode][f"care/mode_{name}"].append(float(count))
            self._metrics[mode]["care/floored_groups"].append(float(floored))
            record["floored_groups"] = floored
        summary = {
            "phone/success": float(success.mean()),
            "phone/progress": float(progress.mean()),
            "phone/output_tokens": float(tokens.mean()),
            "phone/tool_calls": float(calls.mean()),
            "phone/turns": float(_column(stats, "turns").mean()),
            "phone/invalid_share": float(invalid.mean()),
            "phone/rollout_seconds": float(self._phone_rollout_seconds),
            "adv/mean": float(all_adv.mean()),
            "adv/std": float(all_adv.std()),
            "adv/abs_mean": float(np.abs(all_adv).mean()),
            "adv/abs_max": float(np.abs(all_adv).max()),
            **shares,
        }
        for name, value in summary.items():
            self._metrics[mode][name].append(value)
        record["metrics"] = summary
        record["episodes"] = n
        self.phone_history.append(record)
        self._write(record)
        if mode == "train":
            if not np.any(all_adv):
                self._warn_zero_advantages(step, success, groups)
            if self.algo == "care":
                self._step_controller(success, tokens, groups)
            self._update_sampler(stats, groups, step)
        elif self.phone_cfg.eval_tasks == TRAIN_EVAL:
            # the training episodes themselves: their outcomes say which tasks are learnable now
            self._update_sampler(stats, groups, step)
        return out

    def _warn_zero_advantages(self, step: int, success: np.ndarray, groups: list[slice]) -> None:
        self.zero_advantage_steps += 1
        rates = [float(success[b].mean()) for b in groups]
        message = (
            f"step {step}: every advantage of the batch is 0 (group success rates {rates}): this step leaves the "
            "policy unchanged. All groups were all-won or all-lost; try shape_all_failure, competence_sampling, a "
            "larger num_generations, easier tasks or an SFT start that wins sometimes."
        )
        logger.warning(message)
        self._write({"kind": "warning", "step": step, "reason": "zero_advantages", "message": message})

    def _update_sampler(self, stats: list[EpisodeStats], groups: list[slice], step: int) -> None:
        if self.competence_sampler is None:
            return
        success = _column(stats, "success")
        for block in groups:
            self.competence_sampler.update(stats[block.start].task_id, success[block])
        self._write(
            {
                "kind": "sampler",
                "step": step,
                "weights": self.competence_sampler.weights(),
                "probabilities": self.competence_sampler.probabilities(),
            }
        )

    def _step_controller(self, success: np.ndarray, tokens: np.ndarray, groups: list[slice]) -> None:
        if self.controller is None:
            return
        from rl.care import TrainingStats

        self._controller_window.extend(success[block] for block in groups)
        self._controller_tokens.append(float(tokens.mean()))
        step = int(self.state.global_step)
        if not self.controller.due(step):
            return
        now = float(np.mean(self._controller_tokens))
        window = TrainingStats.from_groups(self._controller_window, now, self._prev_window_tokens)
        changes = self.controller.update(step, window)
        self._prev_window_tokens = now
        self._controller_window, self._controller_tokens = [], []
        self.care_config = self.controller.config
        if changes:
            self._write({"kind": "controller", "step": step, "changes": [asdict(c) for c in changes]})

    def _write(self, record: dict[str, Any]) -> None:
        if self.metrics_path is None or not self.accelerator.is_main_process:
            return
        self.metrics_path.parent.mkdir(parents=True, exist_ok=True)
        with self.metrics_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, default=_json_default) + "\n")

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:  # type: ignore[override]
        super().log(logs, start_time)
        self._write({"kind": "log", "step": int(self.state.global_step), **logs})


def _check_groups(stats: Sequence[EpisodeStats], G: int) -> list[slice]:
    """The gathered batch's groups as slices: every block of ``G`` consecutive episodes must have
    one episode key and member indices ``0..G−1`` (AssertionError otherwise)."""
    n = len(stats)
    if n % G != 0:
        raise AssertionError(f"the gathered batch of {n} episodes does not hold whole groups of {G}")
    groups = []
    for g in range(n // G):
        block = slice(g * G, (g + 1) * G)
        keys = {s.key for s in stats[block]}
        if len(keys) != 1:
            raise AssertionError(f"group {g} mixes episodes {sorted(keys)}")
        members = [s.group_index for s in stats[block]]
        if members != list(range(G)):
            raise AssertionError(f"group {g} has member indices {members}, expected 0..{G - 1}")
        groups.append(block)
    return groups


def _group_record(stats, block, tokens, calls, success, progress, adv, **extra: Any) -> dict[str, Any]:
    return {
        "episode": stats[block.start].key,
        "success": success[block].tolist(),
        "progress": progress[block].tolist(),
        "output_tokens": tokens[block].tolist(),
        "tool_calls": calls[block].tolist(),
        "advantages": np.asarray(adv).tolist(),
        **extra,
    }


def _make_controller(cfg: TrainConfig, care: Any, client: Any = None) -> Any:
    """The CARE controller of ``cfg`` (None for ``care_controller="none"`` or another algo)."""
    if cfg.algo != "care" or cfg.care_controller == "none":
        return None
    from rl import care as care_mod

    kwargs = {"every": cfg.care_controller_every, "min_groups": cfg.care_controller_min_groups}
    if cfg.care_controller == "llm":
        kwargs.update(
            client=client,
            base_url=cfg.care_controller_base_url,
            model=cfg.care_controller_model,
            api_key=cfg.controller_api_key(),
        )
    return care_mod.make_controller(cfg.care_controller, care, **kwargs)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if hasattr(obj, "value"):
        return obj.value
    return str(obj)


def make_trainer(
    cfg: TrainConfig, model: Any = None, tokenizer: Any = None, *, controller_client: Any = None
) -> PhoneGRPOTrainer:
    """A ready :class:`PhoneGRPOTrainer` for ``cfg`` (model and tokenizer loaded from
    ``cfg.model_path`` unless given; ``eval_dataset`` built from ``cfg.eval_tasks``).

    Raises:
        ValueError: no model given and no ``model_path``; no task selected.
        phoneenv.extras.MissingExtra: ``cfg.use_vllm`` without vLLM (the ``vllm`` extra).
    """
    if getattr(cfg, "use_vllm", False):
        require("vllm", "vllm", feature="vLLM rollouts (use_vllm, TRL's colocate mode)")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if model is None or tokenizer is None:
        if not cfg.model_path:
            raise ValueError("TrainConfig.model_path is required")
        tokenizer = tokenizer or AutoTokenizer.from_pretrained(cfg.model_path)
        dtype = torch.bfloat16 if cfg.bf16 else torch.float32
        model = model or AutoModelForCausalLM.from_pretrained(cfg.model_path, dtype=dtype)
    tokenizer.padding_side = "left"
    metrics_path = cfg.metrics_path or str(Path(cfg.output_dir) / "metrics.jsonl")
    return PhoneGRPOTrainer(
        model=model,
        reward_funcs=[success_reward],
        args=cfg,
        train_dataset=build_dataset(cfg),
        eval_dataset=build_eval_dataset(cfg),
        processing_class=tokenizer,
        rollout_func=make_rollout_func(cfg),
        phone_cfg=cfg,
        metrics_path=metrics_path,
        controller_client=controller_client,
    )


def step_shares(history: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means over training steps of the per-step group shares (:func:`group_shares`).

    Args:
        history: ``kind: "rollout"`` records (``PhoneGRPOTrainer.phone_history`` or
            ``metrics.jsonl`` lines); only ``mode == "train"`` ones are read.

    Returns:
        ``mode_shares`` (``{"shaping", "outcome", "efficiency"}``: mean share of groups per CARE
        mode), ``zero_advantage_group_share`` (mean share of groups with all-zero advantages),
        ``advantage_abs_mean`` (mean over steps of the mean ``|A|``); NaN where no step logged them.
    """
    train = [r["metrics"] for r in history if r.get("mode") == "train"]

    def mean(name: str) -> float:
        vals = [m[name] for m in train if name in m]
        return float(np.mean(vals)) if vals else math.nan

    return {
        "mode_shares": {m: mean(f"groups/{m}_share") for m in MODES},
        "zero_advantage_group_share": mean("groups/zero_advantage_share"),
        "advantage_abs_mean": mean("adv/abs_mean"),
    }


def _means(history: list[dict[str, Any]]) -> dict[str, float]:
    def mean(name: str) -> float:
        vals = [r["metrics"][name] for r in history]
        return float(np.mean(vals)) if vals else math.nan

    return {
        "success": mean("phone/success"),
        "progress": mean("phone/progress"),
        "output_tokens": mean("phone/output_tokens"),
        "tool_calls": mean("phone/tool_calls"),
    }


def train_rl(
    cfg: TrainConfig, model: Any = None, tokenizer: Any = None, *, controller_client: Any = None
) -> dict[str, Any]:
    """Train with CARE, GRPO or the penalised ablation (``cfg.algo``) and return a summary.

    Returns:
        ``algo``, ``steps`` (optimiser steps done), ``episodes`` (rollouts run), ``wall_seconds``,
        ``seconds_per_step``, ``rollout_seconds_per_step``, ``train_loss``, the means over all
        training rollouts of ``success``, ``progress``, ``output_tokens``, ``tool_calls``,
        ``zero_advantage_steps`` (steps whose advantages were all 0: no learning signal),
        ``mode_shares``, ``zero_advantage_group_share`` and ``advantage_abs_mean`` (means over the
        training steps, :func:`step_shares`),
        ``heldout`` (with held-out ``eval_tasks``: ``success``, ``progress``, ``output_tokens``,
        ``tool_calls`` means and ``episodes`` of the evaluation at the last step; else None),
        ``train_eval`` (the same block with ``eval_tasks="train"``: training success measured on
        the fixed training episodes; else None), ``eval_curve`` (:func:`eval_curve`: every
        evaluation of the run, e.g. at ``eval_on_start`` and every ``eval_steps``),
        ``metrics_path``, ``output_dir``, ``final_model`` (a folder, or None), ``care`` (the CARE
        parameters at the end, as retuned by the controller; None unless ``algo="care"``) and
        ``distributed`` (``type``: accelerate's distributed type such as ``"DEEPSPEED"`` or
        ``"NO"``, ``num_processes``, ``process_index``, ``zero_stage``: the ZeRO stage or None).
    """
    trainer = make_trainer(cfg, model, tokenizer, controller_client=controller_client)
    started = time.perf_counter()
    final_eval = None
    try:
        result = trainer.train()
        wall = time.perf_counter() - started
        if trainer.eval_dataset is not None:
            step = int(trainer.state.global_step)
            seen = len(trainer.phone_history)
            evals = [r for r in trainer.phone_history if r["mode"] == "eval" and r["step"] == step]
            if not evals:  # TRL's eval_steps schedule did not end on the last step
                trainer.evaluate()
                evals = [r for r in trainer.phone_history[seen:] if r["mode"] == "eval"]
            final_eval = {**_means(evals), "episodes": int(sum(r["episodes"] for r in evals))}
            kind = "train_eval" if cfg.eval_tasks == TRAIN_EVAL else "heldout"
            trainer._write({"kind": kind, "step": step, **final_eval})
    finally:
        pool = getattr(trainer, "_phone_env_pool", None)
        if pool is not None:
            pool.close()
    history = [r for r in trainer.phone_history if r["mode"] == "train"]
    steps = int(trainer.state.global_step)
    final = None
    if cfg.save_final:
        final = str(Path(cfg.output_dir) / "final")
        trainer.save_model(final)
        trainer.processing_class.save_pretrained(final)
        save_model_filter(final, cfg.tool_filter)
    if trainer.zero_advantage_steps:
        logger.warning(
            "%d of %d steps had all-zero advantages (no learning signal)", trainer.zero_advantage_steps, steps
        )
    return {
        "algo": cfg.algo,
        "steps": steps,
        "episodes": int(sum(r["episodes"] for r in history)),
        "wall_seconds": wall,
        "seconds_per_step": wall / max(steps, 1),
        "rollout_seconds_per_step": float(np.sum([r["rollout_seconds"] for r in history])) / max(steps, 1),
        "train_loss": float(result.training_loss),
        **_means(history),
        "zero_advantage_steps": int(trainer.zero_advantage_steps),
        **step_shares(history),
        "heldout": final_eval if cfg.eval_tasks != TRAIN_EVAL else None,
        "train_eval": final_eval if cfg.eval_tasks == TRAIN_EVAL else None,
        "eval_curve": eval_curve(trainer.phone_history),
        "metrics_path": str(trainer.metrics_path) if trainer.metrics_path else None,
        "output_dir": cfg.output_dir,
        "final_model": final,
        "care": asdict(trainer.care_config) if cfg.algo == "care" else None,
        "distributed": _distributed_summary(trainer.accelerator),
    }


def _distributed_summary(accelerator: Any) -> dict[str, Any]:
    plugin = getattr(accelerator.state, "deepspeed_plugin", None)
    kind = accelerator.distributed_type
    return {
        "type": str(getattr(kind, "value", kind)),
        "num_processes": int(accelerator.num_processes),
        "process_index": int(accelerator.process_index),
        "zero_stage": int(plugin.zero_stage) if plugin is not None else None,
    }


def parse_config(argv: Sequence[str]) -> TrainConfig:
    """A :class:`TrainConfig` from command-line flags (``--tasks split:train --algo grpo ...``,
    every field a flag, ``--help`` lists them) or from one ``.json`` / ``.yaml`` file, with
    ``transformers.HfArgumentParser``.

    Raises:
        SystemExit: unknown flags or bad values (argparse's message).
    """
    from transformers import HfArgumentParser

    parser = HfArgumentParser(TrainConfig)
    args = list(argv)
    if len(args) == 1 and args[0].endswith(".json"):
        (cfg,) = parser.parse_json_file(args[0])
    elif len(args) == 1 and args[0].endswith((".yaml", ".yml")):
        (cfg,) = parser.parse_yaml_file(args[0])
    else:
        (cfg,) = parser.parse_args_into_dataclasses(args)
    return cfg


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rl.trainers [--flag value ...| CONFIG.json | CONFIG.yaml]``: train and print the
    summary as JSON, once, from the main process (``accelerate launch ... -m rl.trainers CONFIG.json``)."""
    import sys

    cfg = parse_config(sys.argv[1:] if argv is None else argv)
    summary = train_rl(cfg)
    if summary["distributed"]["process_index"] == 0:  # one summary per launch, not one per rank
        print(json.dumps(summary, indent=2), flush=True)
    # A launched rank tears its process group down before the interpreter does: left to exit,
    # Gloo's worker threads can abort it ("terminate called without an active exception", exit
    # -6) after training finished (PyTorch's distributed docs, "Shutdown"). Only after success: a
    # rank that failed must not wait on the others in a collective teardown.
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
