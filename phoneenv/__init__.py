"""phoneenv: Gymnasium environments for mobile planner agents that call typed phone tools.

    >>> import gymnasium as gym, phoneenv
    >>> env = gym.make("PhonePlan-v0", tasks="category:tool")

Importing ``phoneenv`` registers ``PhonePlan-v0`` and exposes the contract types, and
:func:`freeze_gc` (call it once after set-up, before a long step loop).
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from phoneenv.contract import (
    AnswerCriterion,
    BehaviorCriterion,
    Category,
    Domain,
    Effect,
    ErrorKind,
    Feedback,
    Fixtures,
    StateCriterion,
    TaskSpec,
    ToolCall,
    ToolSpec,
    Trace,
    Verdict,
)
from phoneenv.sharing import freeze_gc

__version__ = "0.1.0"

if "PhonePlan-v0" not in registry:
    register(
        id="PhonePlan-v0",
        entry_point="phoneenv.env:PhonePlanEnv",
        vector_entry_point="phoneenv.vector:PhonePlanVectorEnv",
    )

__all__ = [
    "AnswerCriterion",
    "BehaviorCriterion",
    "Category",
    "Domain",
    "Effect",
    "ErrorKind",
    "Feedback",
    "Fixtures",
    "StateCriterion",
    "TaskSpec",
    "ToolCall",
    "ToolSpec",
    "Trace",
    "Verdict",
    "freeze_gc",
]
