"""GRPO and CARE training of phone planners with TRL's ``GRPOTrainer`` over multi-turn env rollouts.

    >>> summary = train_rl(TrainConfig(model_path="ckpt/", tasks=["contacts.lookup_number/0"],
    ...                                algo="care", num_generations=8, max_steps=100))  # doctest: +SKIP

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
  gathers every episode's ``success``, ``progress``, ``output_tokens``, ``tool_calls``, member index
  and episode key from all processes (``accelerate.utils.gather`` / ``gather_object``);
* ``_generate_and_score_completions``: after TRL's, with ``algo="care"`` it replaces
  ``output["advantages"]`` (this process's slice) by :func:`rl.care.group_care` computed per group
  over the *gathered* batch — so a group is never split when its advantages are computed. It
  asserts that every block of ``G`` consecutive gathered episodes has one episode key and member
  indices ``0..G−1``. The cost is :func:`rl.care.efficiency_cost` of output tokens and tool calls
  against absolute budgets. With ``algo="grpo"`` TRL's advantages stay (group mean/std of the env
  reward ``success``, ``scale_rewards="group"``); both algorithms share everything else.

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
vLLM: TRL's flag is ``GRPOConfig(use_vllm=True, vllm_mode="colocate",
vllm_gpu_memory_utilization=0.3)`` (``TrainConfig.grpo_kwargs``); with a ``rollout_func`` TRL then
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

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rl.rollout import Trajectory, rollout_members, to_trl

__all__ = [
    "TrainConfig",
    "build_dataset",
    "episode_prompt",
    "make_rollout_func",
    "make_trainer",
    "parse_episode_prompt",
    "success_reward",
    "train_rl",
]


# ------------------------------------------------------------------------------------------------
# Configuration
# ------------------------------------------------------------------------------------------------


@dataclass
class TrainConfig:
    r"""Configuration of :func:`train_rl` (TRL style: every field, its default and why).

    Parameters:
        > What to train on

        model_path (`str`, *required*):
            A checkpoint folder (``save_pretrained``: model, tokenizer with a tool-calling chat
            template). Loaded in float32 unless ``bf16``.
        output_dir (`str`, defaults to `"runs/rl"`):
            Where TRL writes checkpoints and TensorBoard logs, the JSONL metrics and the final model.
        tasks (`str` or `list[str]`, defaults to `"category:tool"`):
            A ``phoneenv.tasks.select`` selector or a list of task ids. Tool-use tasks are the
            first curriculum stage: single-app, short, with verifiable answers.
        seeds (`list[int]`, defaults to `[0]`):
            Env seeds per task; the dataset has one row (one group per visit) per task × seed.
            Sandbox tasks are deterministic given their fixtures, so one seed is enough there.
        max_tasks (`int` or `None`, defaults to `None`):
            Keep only the first ``max_tasks`` tasks of the selection (quick runs); None keeps all.
        env_kwargs (`dict`, defaults to `{}`):
            Extra ``gym.make("PhonePlan-v0", ...)`` arguments (``backend``, ``max_steps``, ...).
        tool_filter (`list[str]` or `None`, defaults to `None`):
            Offer the model only these apps' tools (or these full tool names), e.g.
            ``["contacts", "user", "finish"]``; None offers all the env's tools, as the planner
            does at evaluation. Shorter prompts train much faster (88 tools ≈ 11.7k tokens).

        > The algorithm

        algo (`str`, defaults to `"care"`):
            ``"care"``: advantages from :func:`rl.care.group_care` per group (competence-aware
            reward, success-variance std floor). ``"grpo"``: TRL's own group-normalised
            advantages of the env reward (success). Everything else is shared.
        care (`rl.care.CareConfig`, `dict` or `None`, defaults to `None`):
            CARE hyper-parameters; None means ``CareConfig()`` (its defaults are documented there:
            ``p_low=0.25``, ``p_high=0.75``, ``lam=0.3``, ``mu=0.1``, ``p_f=0.25``); a dict is
            passed to ``CareConfig(**dict)``.
        care_budget_tokens (`float` or `None`, defaults to `None`):
            Output-token budget of an episode for the efficiency cost; None means
            ``max_turns * max_new_tokens``, the most an episode can spend, so cost 1 is "used
            every token allowed".
        care_budget_calls (`float` or `None`, defaults to `None`):
            Tool-call budget; None means ``max_turns`` (one call per reply under constrained
            decoding).
        care_cost_weight (`float`, defaults to `0.5`):
            Share of the cost from tokens (the rest from tool calls): both matter on a phone
            (latency and money per token, side effects and latency per call).
        care_controller (`str`, defaults to `"none"`):
            ``"rule"`` retunes the CARE parameters with :class:`rl.care.RuleController` every
            ``care_controller_every`` optimiser steps; ``"none"`` keeps them fixed (the default,
            so runs are comparable).
        care_controller_every (`int`, defaults to `50`):
            Controller cadence in optimiser steps (the controller's own default).
        care_controller_min_groups (`int`, defaults to `8`):
            Groups the controller's window must hold before it changes anything (its default):
            fewer give too noisy a success rate.

        > Rollouts

        num_generations (`int`, defaults to `8`):
            G, episodes per group; 8 is the CARE worked example's group and a common GRPO choice
            (p resolves in steps of 1/8). Must divide the generation batch; TRL needs ≥ 2.
        max_turns (`int`, defaults to `8`):
            Model replies per episode; then the rollout sends ``finish``. Tool-use tasks take
            2–4 calls; 8 leaves room to recover from errors.
        max_new_tokens (`int`, defaults to `256`):
            Tokens per reply. A constrained call is 20–100 tokens; 256 leaves room for thinking.
        temperature (`float`, defaults to `1.0`):
            Sampling temperature, also used by TRL to compute the policy's log-probs (the two must
            agree). 1.0 samples the policy itself.
        constrained (`bool`, defaults to `True`):
            Decode replies under the grammar of one call of an offered tool (xgrammar), so every
            reply is a valid call and learning is about *which* call.
        max_string_chars (`int`, defaults to `120`):
            Bound on free strings in the call grammar (as ``LocalChatClient``).
        env_ray (`str` or `None`, defaults to `None`):
            Where the rollouts' envs run. None: in this process. ``"local"``: on the actors of a
            :class:`phoneenv.farm.distributed.RayEnvPool` of ``num_generations`` actors in a Ray
            started here; ``"auto"`` or ``"HOST:PORT"``: on that Ray cluster's actors. The model
            stays in this process either way, and trajectories are the same (only where each
            member's env steps changes); worth it when env steps are slow (devices, simulators).

        > Optimisation (passed to ``GRPOConfig``)

        per_device_train_batch_size (`int`, defaults to `8`):
            Episodes per device per optimiser micro-step; with one process and the default
            ``num_generations`` that is one group per step.
        gradient_accumulation_steps (`int`, defaults to `1`):
            Micro-steps per optimiser step (TRL generates once per optimiser step by default).
        max_steps (`int`, defaults to `200`):
            Optimiser steps.
        learning_rate (`float`, defaults to `1e-6`):
            The usual GRPO learning rate for 0.5–8B models; raise it for tiny test models.
        beta (`float`, defaults to `0.0`):
            KL coefficient to a reference model. TRL's default 0 (no reference model to keep in
            memory); the PPO clip bounds each update.
        epsilon (`float`, defaults to `0.2`):
            PPO clip range (TRL's default).
        loss_type (`str`, defaults to `"dapo"`):
            TRL's default token-level normalisation; long and short episodes weigh per token.
        bf16 (`bool`, defaults to `False`):
            Train in bfloat16 (GPU); float32 on CPU.
        gradient_checkpointing (`bool`, defaults to `False`):
            Trade compute for memory on long episodes (prompts of ~12k tokens with all tools).
        use_cpu (`bool`, defaults to `False`):
            Force the CPU even when a GPU is visible (tests).
        seed (`int`, defaults to `0`):
            Seed of TRL (data order, init) and the base of the rollout sampling seeds.
        grpo_kwargs (`dict`, defaults to `{}`):
            Any other ``GRPOConfig`` field (``use_vllm``, ``save_steps``, ``num_iterations``,
            ...); it overrides the fields above.

        > Logging

        logging_steps (`int`, defaults to `1`):
            TRL log cadence (RL steps are slow; log each).
        report_to (`str`, defaults to `"tensorboard"`):
            TRL/transformers loggers; ``"none"`` turns TensorBoard off.
        metrics_path (`str` or `None`, defaults to `None`):
            The JSONL file; None means ``<output_dir>/metrics.jsonl``.
        save_final (`bool`, defaults to `True`):
            Save the trained model and tokenizer to ``<output_dir>/final``.
        sampler (`rl.sampler.SamplerConfig`, `dict` or `None`, defaults to `None`):
            Draw the training prompts with :class:`rl.sampler.TaskSampler` (weights by capability,
            difficulty, source...; its distribution is logged) instead of one prompt per task ×
            seed. `None` keeps every task once per seed: the right default for small task sets.
        num_prompts (`int` or `None`, defaults to `None`):
            Prompts drawn by the sampler (default: tasks × seeds).
    """

    model_path: str | None = None
    output_dir: str = "runs/rl"
    tasks: str | list[str] = "category:tool"
    seeds: list[int] = field(default_factory=lambda: [0])
    max_tasks: int | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    tool_filter: list[str] | None = None
    algo: str = "care"
    care: Any = None
    care_budget_tokens: float | None = None
    care_budget_calls: float | None = None
    care_cost_weight: float = 0.5
    care_controller: str = "none"
    care_controller_every: int = 50
    care_controller_min_groups: int = 8
    num_generations: int = 8
    max_turns: int = 8
    max_new_tokens: int = 256
    temperature: float = 1.0
    constrained: bool = True
    max_string_chars: int = 120
    env_ray: str | None = None
    per_device_train_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    max_steps: int = 200
    learning_rate: float = 1e-6
    beta: float = 0.0
    epsilon: float = 0.2
    loss_type: str = "dapo"
    bf16: bool = False
    gradient_checkpointing: bool = False
    use_cpu: bool = False
    seed: int = 0
    grpo_kwargs: dict[str, Any] = field(default_factory=dict)
    logging_steps: int = 1
    report_to: str = "tensorboard"
    metrics_path: str | None = None
    save_final: bool = True
    sampler: Any = None
    num_prompts: int | None = None

    def __post_init__(self) -> None:
        if self.algo not in ("care", "grpo"):
            raise ValueError(f"algo must be 'care' or 'grpo', not {self.algo!r}")
        if self.care_controller not in ("none", "rule"):
            raise ValueError(f"care_controller must be 'none' or 'rule', not {self.care_controller!r}")
        if self.num_generations < 2:
            raise ValueError("num_generations must be ≥ 2 (a group of one has no advantage)")
        if self.max_turns < 1 or self.max_new_tokens < 1:
            raise ValueError("max_turns and max_new_tokens must be ≥ 1")
        if not 0.0 <= self.care_cost_weight <= 1.0:
            raise ValueError("care_cost_weight must lie in [0, 1]")

    def care_config(self) -> Any:
        """The :class:`rl.care.CareConfig` to start from."""
        from rl.care import CareConfig

        if self.care is None:
            return CareConfig()
        if isinstance(self.care, dict):
            return CareConfig(**self.care)
        return self.care

    @property
    def budget_tokens(self) -> float:
        """The token budget of the efficiency cost (see ``care_budget_tokens``)."""
        return float(self.care_budget_tokens or self.max_turns * self.max_new_tokens)

    @property
    def budget_calls(self) -> float:
        """The tool-call budget of the efficiency cost (see ``care_budget_calls``)."""
        return float(self.care_budget_calls or self.max_turns)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able fields (a CareConfig becomes a dict)."""
        out = asdict(self)
        if is_dataclass(self.care):
            out["care"] = asdict(self.care)
        return out


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
    from phoneenv.tasks import select

    ids = [t.id for t in select(tasks)] if isinstance(tasks, str) else list(tasks)
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
                    max_turns=cfg.max_turns,
                    max_new_tokens=cfg.max_new_tokens,
                    temperature=trainer.temperature,  # TRL's log-probs use the same temperature
                    constrained=cfg.constrained,
                    env_kwargs=cfg.env_kwargs,
                    sample_seed=_group_sample_seed(cfg.seed, step, group),
                    max_string_chars=cfg.max_string_chars,
                    tool_filter=cfg.tool_filter,
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
        trainer._phone_rollout_seconds = time.perf_counter() - started
        return to_trl(done)

    return rollout_func


# ------------------------------------------------------------------------------------------------
# The trainer
# ------------------------------------------------------------------------------------------------


def _trainer_class() -> type:
    """``PhoneGRPOTrainer``, built lazily so that importing this module does not import TRL."""
    global _PHONE_TRAINER
    if _PHONE_TRAINER is not None:
        return _PHONE_TRAINER
    import torch
    from accelerate.utils import gather, gather_object
    from trl import GRPOTrainer

    class PhoneGRPOTrainer(GRPOTrainer):
        """``GRPOTrainer`` whose advantages are CARE's (``algo="care"``) or TRL's (``"grpo"``),
        computed over whole gathered groups, with PhonePlan metrics (see the module docstring)."""

        def __init__(self, *args: Any, phone_cfg: TrainConfig, metrics_path: str | None = None, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.phone_cfg = phone_cfg
            self.algo = phone_cfg.algo
            self.care_config = phone_cfg.care_config()
            self.metrics_path = Path(metrics_path) if metrics_path else None
            self.controller = None
            if phone_cfg.care_controller == "rule":
                from rl.care import RuleController

                self.controller = RuleController(
                    config=self.care_config,
                    every=phone_cfg.care_controller_every,
                    min_groups=phone_cfg.care_controller_min_groups,
                )
            self._controller_window: list[np.ndarray] = []
            self._controller_tokens: list[float] = []
            self._prev_window_tokens: float | None = None
            self._phone_batch: dict[str, Any] | None = None
            self._phone_trajectories: list[Trajectory] = []
            self._phone_rollout_seconds = 0.0
            self.phone_history: list[dict[str, Any]] = []

        # -- gather the per-episode statistics of the whole batch -----------------------------
        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            device = self.accelerator.device
            local = torch.tensor(
                [
                    [
                        float(x["success"]),
                        float(x["progress"]),
                        float(x["output_tokens"]),
                        float(x["tool_calls"]),
                        float(x["group_index"]),
                        float(x["turns"]),
                    ]
                    for x in inputs
                ],
                dtype=torch.float64,
                device=device,
            )
            keys = [episode_prompt(x["task_id"], x["env_seed"]) for x in inputs]
            stats = gather(local).cpu().numpy()
            self._phone_batch = {"stats": stats, "keys": list(gather_object(keys)), "n_local": len(inputs)}
            return rewards

        # -- replace the advantages by CARE's, per whole group --------------------------------
        def _generate_and_score_completions(self, inputs):  # type: ignore[override]
            from rl.care import efficiency_cost, group_care

            out = super()._generate_and_score_completions(inputs)
            mode = "train" if self.model.training else "eval"
            G = self.num_generations if mode == "train" else self.num_generations_eval
            batch = self._phone_batch
            assert batch is not None, "_calculate_rewards did not run"
            stats, keys, n_local = batch["stats"], batch["keys"], batch["n_local"]
            n = len(keys)
            if n % G != 0:
                raise AssertionError(f"the gathered batch of {n} episodes does not hold whole groups of {G}")
            groups = []
            for g in range(n // G):
                block = slice(g * G, (g + 1) * G)
                if len(set(keys[block])) != 1:
                    raise AssertionError(f"group {g} mixes episodes {sorted(set(keys[block]))}")
                members = stats[block, 4].astype(int).tolist()
                if members != list(range(G)):
                    raise AssertionError(f"group {g} has member indices {members}, expected 0..{G - 1}")
                groups.append(block)
            record: dict[str, Any] = {
                "kind": "rollout",
                "step": int(self.state.global_step),
                "mode": mode,
                "algo": self.algo,
                "time": time.time(),
                "rollout_seconds": float(self._phone_rollout_seconds),
                "groups": [],
            }
            if self.algo == "care":
                advantages = np.zeros(n, dtype=np.float64)
                mode_counts = {"shaping": 0, "outcome": 0, "efficiency": 0}
                floored = 0
                for block in groups:
                    cost = efficiency_cost(
                        stats[block, 2],
                        stats[block, 3],
                        self.phone_cfg.budget_tokens,
                        self.phone_cfg.budget_calls,
                        self.phone_cfg.care_cost_weight,
                    )
                    res = group_care(stats[block, 0], stats[block, 1], cost, self.care_config)
                    advantages[block] = res.advantages
                    mode_counts[res.mode.value] += 1
                    floored += int(res.floored)
                    record["groups"].append(
                        {
                            "episode": keys[block.start],
                            "success": stats[block, 0].tolist(),
                            "progress": stats[block, 1].tolist(),
                            "output_tokens": stats[block, 2].tolist(),
                            "tool_calls": stats[block, 3].tolist(),
                            "cost": cost.tolist(),
                            "rewards": res.rewards.tolist(),
                            "advantages": res.advantages.tolist(),
                            "mode": res.mode.value,
                            "floored": res.floored,
                        }
                    )
                rank = self.accelerator.process_index
                local = advantages[rank * n_local : (rank + 1) * n_local]
                out["advantages"] = torch.tensor(local, dtype=out["advantages"].dtype, device=out["advantages"].device)
                all_adv = advantages
                for name, count in mode_counts.items():
                    self._metrics[mode][f"care/mode_{name}"].append(float(count))
                self._metrics[mode]["care/floored_groups"].append(float(floored))
                record["mode_counts"] = mode_counts
                record["floored_groups"] = floored
                record["care"] = asdict(self.care_config)
                self._step_controller(stats, groups)
            else:
                all_adv = gather(out["advantages"].detach().double()).cpu().numpy()
                for block in groups:
                    record["groups"].append(
                        {
                            "episode": keys[block.start],
                            "success": stats[block, 0].tolist(),
                            "progress": stats[block, 1].tolist(),
                            "output_tokens": stats[block, 2].tolist(),
                            "tool_calls": stats[block, 3].tolist(),
                            "advantages": all_adv[block].tolist(),
                        }
                    )
            summary = {
                "phone/success": float(stats[:, 0].mean()),
                "phone/progress": float(stats[:, 1].mean()),
                "phone/output_tokens": float(stats[:, 2].mean()),
                "phone/tool_calls": float(stats[:, 3].mean()),
                "phone/turns": float(stats[:, 5].mean()),
                "phone/rollout_seconds": float(self._phone_rollout_seconds),
                "adv/mean": float(all_adv.mean()),
                "adv/std": float(all_adv.std()),
                "adv/abs_max": float(np.abs(all_adv).max()),
            }
            for name, value in summary.items():
                self._metrics[mode][name].append(value)
            record["metrics"] = summary
            record["episodes"] = n
            self.phone_history.append(record)
            self._write(record)
            return out

        def _step_controller(self, stats: np.ndarray, groups: list[slice]) -> None:
            if self.controller is None:
                return
            from rl.care import TrainingStats

            self._controller_window.extend(stats[block, 0] for block in groups)
            self._controller_tokens.append(float(stats[:, 2].mean()))
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

    _PHONE_TRAINER = PhoneGRPOTrainer
    return PhoneGRPOTrainer


_PHONE_TRAINER: type | None = None


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if hasattr(obj, "value"):
        return obj.value
    return str(obj)


def _grpo_config(cfg: TrainConfig) -> Any:
    from trl import GRPOConfig

    kwargs: dict[str, Any] = {
        "output_dir": cfg.output_dir,
        "num_generations": cfg.num_generations,
        "per_device_train_batch_size": cfg.per_device_train_batch_size,
        "gradient_accumulation_steps": cfg.gradient_accumulation_steps,
        "max_steps": cfg.max_steps,
        "learning_rate": cfg.learning_rate,
        "beta": cfg.beta,
        "epsilon": cfg.epsilon,
        "loss_type": cfg.loss_type,
        "temperature": cfg.temperature,
        "bf16": cfg.bf16,
        "gradient_checkpointing": cfg.gradient_checkpointing,
        "use_cpu": cfg.use_cpu,
        "seed": cfg.seed,
        "logging_steps": cfg.logging_steps,
        "report_to": cfg.report_to,
        "save_strategy": "no",
        "max_completion_length": cfg.max_turns * cfg.max_new_tokens,
    }
    kwargs.update(cfg.grpo_kwargs)
    return GRPOConfig(**kwargs)


def make_trainer(cfg: TrainConfig, model: Any = None, tokenizer: Any = None) -> Any:
    """A ready ``PhoneGRPOTrainer`` for ``cfg`` (model and tokenizer loaded from ``cfg.model_path``
    unless given)."""
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
    cls = _trainer_class()
    return cls(
        model=model,
        reward_funcs=[success_reward],
        args=_grpo_config(cfg),
        train_dataset=build_dataset(cfg),
        processing_class=tokenizer,
        rollout_func=make_rollout_func(cfg),
        phone_cfg=cfg,
        metrics_path=metrics_path,
    )


def train_rl(cfg: TrainConfig, model: Any = None, tokenizer: Any = None) -> dict[str, Any]:
    """Train with GRPO or CARE (``cfg.algo``) and return a summary.

    Returns:
        ``algo``, ``steps`` (optimiser steps done), ``episodes`` (rollouts run), ``wall_seconds``,
        ``seconds_per_step``, ``rollout_seconds_per_step``, ``train_loss``, the means over all
        rollouts of ``success``, ``progress``, ``output_tokens``, ``tool_calls``, ``metrics_path``,
        ``output_dir``, ``final_model`` (a folder, or None), ``care`` (the CARE parameters
        at the end, as retuned by the controller if any; None for GRPO) and ``distributed``
        (``type``: accelerate's distributed type such as ``"DEEPSPEED"`` or ``"NO"``,
        ``num_processes``, ``process_index``, ``zero_stage``: the DeepSpeed ZeRO stage or None).
    """
    trainer = make_trainer(cfg, model, tokenizer)
    started = time.perf_counter()
    try:
        result = trainer.train()
    finally:
        pool = getattr(trainer, "_phone_env_pool", None)
        if pool is not None:
            pool.close()
    wall = time.perf_counter() - started
    history = [r for r in trainer.phone_history if r["mode"] == "train"]
    steps = int(trainer.state.global_step)
    final = None
    if cfg.save_final:
        final = str(Path(cfg.output_dir) / "final")
        trainer.save_model(final)
        trainer.processing_class.save_pretrained(final)

    def mean(name: str) -> float:
        vals = [r["metrics"][name] for r in history]
        return float(np.mean(vals)) if vals else math.nan

    return {
        "algo": cfg.algo,
        "steps": steps,
        "episodes": int(sum(r["episodes"] for r in history)),
        "wall_seconds": wall,
        "seconds_per_step": wall / max(steps, 1),
        "rollout_seconds_per_step": float(np.sum([r["rollout_seconds"] for r in history])) / max(steps, 1),
        "train_loss": float(result.training_loss),
        "success": mean("phone/success"),
        "progress": mean("phone/progress"),
        "output_tokens": mean("phone/output_tokens"),
        "tool_calls": mean("phone/tool_calls"),
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


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rl.trainers CONFIG.json``: train from a JSON object of :class:`TrainConfig`
    fields and print the summary as JSON, once, from the main process (``accelerate launch ... -m
    rl.trainers CONFIG.json``)."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        raise SystemExit("usage: python -m rl.trainers CONFIG.json")
    cfg = TrainConfig(**json.loads(Path(args[0]).read_text(encoding="utf-8")))
    summary = train_rl(cfg)
    if summary["distributed"]["process_index"] == 0:  # one summary per launch, not one per rank
        print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
