"""The agent interface: from an observation and the tool specs, the next tool call and its cost."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any

__all__ = ["Agent", "AgentAction"]


@dataclass(frozen=True)
class AgentAction:
    """One decision: ``action`` is the tool call as JSON text (``{"name": ..., "arguments": ...}``);
    ``tokens`` the model's counts for it (``prompt``, ``output``, ``thinking``; None for agents
    that use no model)."""

    action: str
    tokens: dict[str, int] | None = None


class Agent(abc.ABC):
    """A planner. ``reset`` sees the first observation and info (``info["tools"]`` is the tool
    list in OpenAI format, ``info["task_id"]`` the task); ``act`` returns the next
    :class:`AgentAction` given the latest observation and the step's info (``info["feedback"]``;
    ``info["tools"]`` only when the offered tools changed: keep the last tools seen).
    """

    name: str = "agent"

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:  # noqa: B027 - optional
        """Start an episode (stateless agents need nothing)."""

    @abc.abstractmethod
    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> AgentAction:
        """The next action."""
