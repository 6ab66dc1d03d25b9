"""Reinforcement learning for planners trained through the ``PhonePlan-v0`` env API.

- :mod:`rl.care`: CARE (competence-aware reward and advantage engineering): group rewards by
  competence, success-variance-floored advantages, bounded controllers.

Modules import their heavy dependencies (torch, transformers, TRL) lazily; ``import rl`` is cheap.
"""

__all__: list[str] = []
