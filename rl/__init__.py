"""Reinforcement learning for planners trained through the ``PhonePlan-v0`` env API.

This package will hold CARE (competence-aware reward and advantage engineering), multi-turn
rollouts, TRL trainers and the SFT cold start. It talks to the environment only through the
Gymnasium API; today it exports nothing.
"""

__all__: list[str] = []
