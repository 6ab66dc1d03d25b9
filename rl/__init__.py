"""Reinforcement learning for planners trained through the ``PhonePlan-v0`` env API.

- :mod:`rl.care`: CARE (competence-aware reward and advantage engineering): group rewards by
  competence, success-variance-floored advantages, bounded controllers.
- :mod:`rl.rollout`: multi-turn rollouts with token ids, log-probs and model/env token masks.
- :mod:`rl.sft`: the planning cold start on verified traces, erroneous turns masked.
- :mod:`rl.trainers`: GRPO and CARE on TRL's ``GRPOTrainer`` (``rollout_func``).
- :mod:`rl.sampler`: task sampling weighted by capability, difficulty and source.

Modules import their heavy dependencies (torch, transformers, TRL) lazily; ``import rl`` is cheap.
"""

__all__: list[str] = []
