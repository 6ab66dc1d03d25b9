"""Delegation as a provider: ``agent.delegate`` opens a sub-agent frame on the env's
:class:`~phoneenv.frames.FrameStack` (see :mod:`phoneenv.frames`)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

from phoneenv.contract import Feedback
from phoneenv.frames import DELEGATE_TOOL
from phoneenv.harness.providers.base import ToolProvider
from phoneenv.tools import ToolDef

if TYPE_CHECKING:
    from phoneenv.env import PhonePlanEnv

__all__ = ["Delegation"]


class Delegation(ToolProvider):
    """Offers ``agent.delegate``.

    Args:
        on: ``True`` in every episode, ``False`` never, None in the episodes of tasks that list
            the ``agent`` app (the Sub-agent category's).
    """

    def __init__(self, on: bool | None = None) -> None:
        self.on = on

    def offer_key(self, env: PhonePlanEnv) -> Hashable:
        return self.on if self.on is not None else "agent" in env.task.apps

    def offer(self, env: PhonePlanEnv, offered: Mapping[str, ToolDef]) -> dict[str, ToolDef]:
        return {DELEGATE_TOOL.spec.name: DELEGATE_TOOL} if self.offer_key(env) else {}

    def call(self, env: PhonePlanEnv, name: str, args: dict[str, Any]) -> Feedback:
        return env.frames.call(args)
