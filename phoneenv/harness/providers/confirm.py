"""The simulated user's ``user.confirm``, and the confirmation a sensitive call needs when the
task's fixtures say ``confirm_sensitive``: one confirmation admits one sensitive call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from phoneenv.contract import Domain, Feedback, ToolSpec
from phoneenv.harness import feedback
from phoneenv.harness.providers.base import Notes, ToolProvider
from phoneenv.tools import ToolDef, build_tool, tool

if TYPE_CHECKING:
    from phoneenv.env import PhonePlanEnv

__all__ = ["CONFIRM_TOOL", "MAX_QUESTION_CHARS", "Confirm"]

MAX_QUESTION_CHARS = 1_000
"""Longest ``user.confirm`` question and ``user.authenticate`` reason (characters), in their schemas."""


class Confirm(ToolProvider):
    """Offers ``user.confirm`` in every episode; the user answers as the task's fixtures say
    (``user_confirms``). With ``confirm_sensitive``, a sensitive backend call without a
    confirmation since the last sensitive call gets ``confirmation_required``."""

    def __init__(self) -> None:
        self.confirmed = False
        """Whether the user confirmed since the last sensitive call ran."""
        self._user_confirms = True

    @tool()
    def confirm(self, question: Annotated[str, Field(max_length=MAX_QUESTION_CHARS)]) -> dict[str, Any]:
        """Ask the user to confirm an action before doing it (sending, deleting, paying, granting).

        Args:
            question: What you are about to do, in one sentence.
        """
        ok = self._user_confirms
        self.confirmed = ok
        return {"confirmed": ok, "reply": "Yes, go ahead." if ok else "No, don't do that."}

    def offer(self, env: PhonePlanEnv, offered: Mapping[str, ToolDef]) -> dict[str, ToolDef]:
        return {CONFIRM_TOOL.spec.name: CONFIRM_TOOL}

    def reset(self, env: PhonePlanEnv, keep: bool | None) -> Notes | None:
        self.confirmed = False
        self._user_confirms = env.task.fixtures.user_confirms
        return None

    def call(self, env: PhonePlanEnv, name: str, args: dict[str, Any]) -> Feedback:
        return Feedback(ok=True, result=self.confirm(**args))

    def gate(self, env: PhonePlanEnv, spec: ToolSpec) -> Feedback | None:
        if env.task.fixtures.confirm_sensitive and not self.confirmed:
            return feedback.confirmation_required(spec.name)
        return None

    def ran(self, env: PhonePlanEnv, spec: ToolSpec) -> None:
        self.confirmed = False


CONFIRM_TOOL: ToolDef = build_tool("user", Domain.DEVICE, Confirm.confirm)
"""The ``user.confirm`` tool's spec, validator and method."""
