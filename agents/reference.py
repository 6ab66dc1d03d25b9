"""The reference agent: plays a task's reference plan, step by step (for validation and demos).

A plan expresses delegation with plain tool calls (:func:`phoneenv.frames.delegate_steps`): an
``agent.delegate`` step opens a sub-agent frame, the steps after it act in that frame, and a
``finish`` closes it (its answer returns to the parent); the last ``finish`` ends the episode.
The agent plays them in order, as the single policy that acts in whichever frame is active.

Tool selection (``tools="search"``, :mod:`phoneenv.harness.toolselect`): when the reset's
``info["tools"]`` lacks tools the plan needs and offers ``tools.search``, the agent first calls
``tools.search`` naming them (at the root, before any delegation, so sub-agent frames can be
handed them), then plays the plan.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from agents.base import Agent, AgentAction
from phoneenv.contract import TaskSpec
from phoneenv.harness.toolselect import SEARCH, plan_tools
from phoneenv.tasks import get_task

__all__ = ["ReferenceAgent"]


class ReferenceAgent(Agent):
    """Replays ``TaskSpec.reference_plan`` for the task named in ``info["task_id"]``.

    Args:
        lookup: task id → :class:`TaskSpec` (default: the built-in suite's ``get_task``); for
            tasks of your own, :meth:`for_tasks`.

    Raises:
        ValueError: at ``reset``, when the task has no reference plan.
    """

    name = "reference"

    def __init__(self, lookup: Callable[[str], TaskSpec] = get_task) -> None:
        self.lookup = lookup
        self._plan: list[str] = []
        self._i = 0

    @classmethod
    def for_tasks(cls, tasks: Iterable[TaskSpec]) -> ReferenceAgent:
        """A reference agent for ``tasks`` (hand-written ones, say), the suite's for other ids."""
        own = {t.id: t for t in tasks}
        return cls(lambda task_id: own[task_id] if task_id in own else get_task(task_id))

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Load the plan of ``info["task_id"]``; with ``tools.search`` offered, prefixed by one
        search that loads the plan's tools the env does not offer yet.

        Raises:
            KeyError: the lookup has no such task (the message says how to pass your own).
        """
        try:
            task = self.lookup(info["task_id"])
        except KeyError as exc:
            raise KeyError(
                f"{exc.args[0] if exc.args else info['task_id']}; a task of your own needs "
                "ReferenceAgent.for_tasks([task, ...])"
            ) from None
        if not task.reference_plan:
            raise ValueError(f"task {task.id} has no reference plan")
        self._plan = [c.model_dump_json(exclude_none=True) for c in task.reference_plan]
        self._i = 0
        offered = {t["function"]["name"].replace("__", ".") for t in info.get("tools") or ()}
        if SEARCH in offered:
            missing = [n for n in plan_tools(task) if n not in offered]
            chunks = [missing[i : i + 20] for i in range(0, len(missing), 20)]  # tools.search's k is at most 20
            searches = [json.dumps({"name": SEARCH, "arguments": {"query": " ".join(c), "k": len(c)}}) for c in chunks]
            self._plan[:0] = searches

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> AgentAction:
        """The plan's next step; ``finish`` once the plan is used up."""
        if self._i < len(self._plan):
            self._i += 1
            return AgentAction(self._plan[self._i - 1])
        return AgentAction(json.dumps({"name": "finish", "arguments": {}}))
