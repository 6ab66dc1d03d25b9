"""The help text of :class:`rl.trainers.TrainConfig`'s own fields, in a module that imports nothing.

``TrainConfig`` (a ``trl.GRPOConfig``) puts these strings in its fields' ``metadata["help"]``, so
``python -m rl.trainers --help`` (``transformers.HfArgumentParser``) shows them, and ``phoneenv
train rl`` takes its option help from the same dict without importing TRL (a 6 s import) when the
command line starts. One copy of each string, here.
"""

from __future__ import annotations

__all__ = ["DEFAULT_INVALID_REPLY_PENALTY", "TRAIN_HELP"]

DEFAULT_INVALID_REPLY_PENALTY: float = 0.0
"""ν, the invalid-reply penalty, when nothing says otherwise: the one default of
``rl.trainers.TrainConfig``, ``phoneenv train rl`` and ``benchmarks/care_vs_grpo.py`` (every arm).

0 (off: GRPO, CARE and the ablation as published), because a default must be safe for every
``--algo``: ν > 0 gives an all-failure group a spread of rewards (its episodes' shares of replies
without a call), which vanilla normalisation (GRPO, the penalty ablation) divides by that small
spread and turns into full-size advantages with no success to learn from. Measured on the
benchmark's tiny-model loop with ν = 0.5 in every arm (docs/figures/care.md): GRPO and the
ablation collapsed from 0.36-0.38 to 0.11 and 0.05 training success within 40 steps, while CARE
(which leaves all-failure groups at zero and floors the std) held its success and cut its tokens.
With CARE over long runs ν = 0.5 kept replies without a call at 2-3% instead of 38% (120 steps):
pass ``--invalid-reply-penalty 0.5`` there.
"""

TRAIN_HELP: dict[str, str] = {
    # What to train on
    "model_path": "A checkpoint folder (save_pretrained: model and a tokenizer with a tool-calling chat template).",
    "output_dir": "Where the JSONL metrics (metrics.jsonl), TensorBoard logs and the final model (final/) go.",
    "tasks": "Training tasks: a phoneenv.tasks selector (e.g. split:train, template:contacts.favorite, "
    "category:tool) or task ids; several are joined with commas or given as a list.",
    "seeds": "Env seeds per task; the dataset has one row (one group per visit) per task x seed.",
    "max_tasks": "Keep only the first max_tasks tasks of the selection (quick runs); unset keeps all.",
    "env_kwargs": 'Extra gym.make("PhonePlan-v0", ...) arguments as a JSON object ({"backend": "sandbox"}).',
    "tool_filter": "Tools the model is offered, resolved per episode: all, task (the task's apps, user, system, "
    "finish and its category's harness app; the default), apps (the task's apps, finish and its category's "
    "harness app) or a comma-separated list of apps or tool names.",
    "eval_tasks": "What TRL's eval loop evaluates after training (and every eval_steps with "
    "eval_strategy=steps): train (the training tasks at the training seeds, a fixed set: the learning curve; "
    "the summary's train_eval block) or a selector of held-out tasks (the summary's heldout block). Unset: no "
    "evaluation.",
    "eval_seeds": "Env seeds of the evaluated episodes; unset: the training seeds for eval_tasks=train, else as "
    "many seeds as seeds, all above the largest training seed (disjoint from training).",
    # The algorithm
    "algo": "care: CARE advantages per group (rl.care.group_care); grpo: TRL's group-normalised advantages of "
    "the env's success; penalty: the CARE report's ablation, r = s(1 - mu c) in every group with vanilla "
    "normalisation (rl.care.penalty_rewards, rl.care.grpo_advantages).",
    "care": 'CARE parameters as a JSON object ({"mu": 0.3}); unset: rl.care.CareConfig() defaults.',
    "shape_all_failure": "Give all-failure groups (p = 0) advantages from progress (CareConfig.shape_all_failure) "
    "instead of zeros: a signal when the policy never wins yet.",
    "care_budget_tokens": "Output-token budget of an episode for the efficiency cost; unset: max_turns x "
    "max_new_tokens.",
    "care_budget_calls": "Tool-call budget of an episode for the efficiency cost; unset: max_turns.",
    "care_cost_weight": "Share of the efficiency cost from tokens (the rest from tool calls), in [0, 1].",
    "invalid_reply_penalty": "Subtracted from an episode's reward per unit share of its replies that held no tool "
    "call (invalid_json), before the advantages, in every algorithm; in [0, 1]. 0 (the default): off.",
    "care_controller": "Who retunes the CARE parameters during training: rule (rl.care.RuleController, bounded "
    "steps, every change logged), llm (a bounded LLM controller on an OpenAI-compatible endpoint) or none.",
    "care_controller_every": "Controller cadence in optimiser steps (5 acts twice in a 10-step CPU run).",
    "care_controller_min_groups": "Groups the controller's window must hold before it changes anything.",
    "care_controller_base_url": "OpenAI-compatible base URL of the LLM controller (care_controller=llm).",
    "care_controller_model": "Model name of the LLM controller (care_controller=llm).",
    "care_controller_api_key": "API key of the LLM controller; unset: the PHONEENV_CONTROLLER_API_KEY "
    "environment variable. Never written to any artifact.",
    "competence_sampling": "Draw the next groups preferring tasks whose recent group success is strictly between "
    "0 and 1 (rl.sampler.CompetenceSampler); the others keep a floor weight so they are revisited. With "
    "eval_tasks=train, every evaluation's groups count too, so the first draws already know which tasks are learnable.",
    "competence_window": "Groups per task the competence sampler remembers.",
    "competence_floor": "Weight of a task outside the learnable zone (all recent episodes won or all lost), "
    "relative to 1 for learnable and unseen tasks.",
    # Rollouts
    "num_generations": "G, episodes per group (same task and seed); p resolves in steps of 1/G.",
    "max_turns": "Model replies per episode; then the rollout sends finish.",
    "max_new_tokens": "Tokens per reply.",
    "temperature": "Sampling temperature, also used for the policy's log-probs (the two must agree).",
    "constrained": "Decode each reply under the grammar of one call of an offered tool (xgrammar).",
    "max_string_chars": "Bound on free strings in the call grammar.",
    "env_ray": "Run the rollouts' envs on Ray actors (one per group member; the model stays here): local starts "
    "a Ray, auto or HOST:PORT joins a cluster.",
    # Optimisation and logging (GRPOConfig fields whose defaults differ here)
    "per_device_train_batch_size": "Episodes per device per micro-step; with one process and G = 8 one group.",
    "max_steps": "Optimiser steps.",
    "learning_rate": "Learning rate (1e-6 suits 0.5-8B models; small models take more).",
    "logging_steps": "TRL log cadence in steps (RL steps are slow: every step).",
    "report_to": "TRL/transformers loggers (tensorboard, none, ...).",
    "save_strategy": "Checkpoint strategy during training (no: only the final model, save_final).",
    "gradient_checkpointing": "Trade compute for memory on long episodes.",
    "bf16": "Train in bfloat16; unset: when a CUDA GPU with bf16 is present and use_cpu is off.",
    "max_completion_length": "TRL's generation length; the rollout bounds episodes by max_turns and "
    "max_new_tokens instead. Unset: max_turns x max_new_tokens.",
    "metrics_path": "The JSONL metrics file; unset: <output_dir>/metrics.jsonl.",
    "save_final": "Save the trained model and tokenizer to <output_dir>/final.",
    "sampler": "Draw the prompts with rl.sampler.TaskSampler weights (a JSON object of SamplerConfig fields) "
    "instead of one prompt per task x seed.",
    "num_prompts": "Prompts drawn by the sampler (default: tasks x seeds).",
    "run_store": "A loop directory: every rollout episode (train and eval mode, with its step) is added to its run "
    "store, runs.sqlite (phoneenv.loop.runstore). Unset: none is stored.",
    "harness": "A harness version of the loop directory (v0, v1, ...; phoneenv.loop.harness) the rollouts play "
    "with: its skills in the env, its skills listed and its instructions appended in the system prompt, as "
    "`phoneenv eval --harness` does, so the model trains on the prompt it is evaluated with. Unset: v0.",
    "harness_loop": "The loop directory holding --harness's versions (default: run_store, else $PHONEENV_LOOP_DIR, "
    "else runs/loop).",
}
