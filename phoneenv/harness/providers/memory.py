"""The user's memory as a provider: a thin adapter over
:class:`~phoneenv.harness.episode_memory.EpisodeMemory`, which serves the tools, keeps the
verified table ``memory.entries`` and fires intents as notifications."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from phoneenv.contract import Feedback
from phoneenv.harness.episode_memory import MEMORY_TABLE, EpisodeMemory
from phoneenv.harness.providers.base import Notes, ToolProvider
from phoneenv.tools import ToolDef

if TYPE_CHECKING:
    from phoneenv.env import PhonePlanEnv

__all__ = ["Memory"]


class Memory(ToolProvider):
    """Offers ``memory``'s tools (those the backend does not serve itself), restores the task's
    fixture memory on reset (unless kept), adds ``memory.entries`` to the verified state and
    fires due intents after each step."""

    def __init__(self, memory: EpisodeMemory) -> None:
        self.memory = memory

    def offer(self, env: PhonePlanEnv, offered: Mapping[str, ToolDef]) -> dict[str, ToolDef]:
        return {n: d for n, d in self.memory.tool_defs(env.backend).items() if n not in offered}

    def reset(self, env: PhonePlanEnv, keep: bool | None) -> Notes | None:
        return self.memory.reset(env.task, env.backend, keep) or None

    def call(self, env: PhonePlanEnv, name: str, args: dict[str, Any]) -> Feedback:
        return self.memory.call(name, args)

    def observe(self, name: str | None, ok: bool) -> Notes | None:
        return self.memory.observe(name, ok) if self.memory.pending else None

    def tables(self) -> dict[str, dict[str, Any]]:
        return {MEMORY_TABLE: self.memory.table()}

    def close(self) -> None:
        self.memory.close()
