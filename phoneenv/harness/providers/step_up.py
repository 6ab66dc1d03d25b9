"""The step-up: ``user.authenticate`` (the user's PIN or fingerprint), offered in the episodes of
tasks whose fixtures say ``step_up``, where a sensitive call without one gets
``authentication_required``; one authentication admits one sensitive call."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from phoneenv.contract import Domain, Feedback, ToolSpec
from phoneenv.harness import feedback
from phoneenv.harness.providers.base import Notes, ToolProvider
from phoneenv.harness.providers.confirm import MAX_QUESTION_CHARS
from phoneenv.tools import ToolDef, build_tool, tool

if TYPE_CHECKING:
    from phoneenv.env import PhonePlanEnv

__all__ = ["AUTHENTICATE_TOOL", "StepUp"]


class StepUp(ToolProvider):
    """Offers ``user.authenticate`` when the task's fixtures say ``step_up``; the user unlocks
    as the fixtures say (``user_authenticates``, else ``precondition_failed``)."""

    def __init__(self) -> None:
        self.authenticated = False
        """Whether the user authenticated since the last sensitive call ran."""

    @tool()
    def authenticate(self, reason: Annotated[str, Field(max_length=MAX_QUESTION_CHARS)]) -> dict[str, Any]:
        """Ask the user to unlock a sensitive action with their PIN or fingerprint (a step-up).

        Args:
            reason: What the authentication is for, in one sentence.
        """
        return {"authenticated": True}

    def offer_key(self, env: PhonePlanEnv) -> Hashable:
        return env.task.fixtures.step_up

    def offer(self, env: PhonePlanEnv, offered: Mapping[str, ToolDef]) -> dict[str, ToolDef]:
        return {AUTHENTICATE_TOOL.spec.name: AUTHENTICATE_TOOL} if env.task.fixtures.step_up else {}

    def reset(self, env: PhonePlanEnv, keep: bool | None) -> Notes | None:
        self.authenticated = False
        return None

    def call(self, env: PhonePlanEnv, name: str, args: dict[str, Any]) -> Feedback:
        self.authenticated = env.task.fixtures.user_authenticates
        if not self.authenticated:
            return feedback.precondition_failed(
                "the user did not authenticate", "ask the user what to do instead, or finish without the action"
            )
        return Feedback(ok=True, result=self.authenticate(**args))

    def gate(self, env: PhonePlanEnv, spec: ToolSpec) -> Feedback | None:
        if env.task.fixtures.step_up and not self.authenticated:
            return feedback.authentication_required(spec.name)
        return None

    def ran(self, env: PhonePlanEnv, spec: ToolSpec) -> None:
        self.authenticated = False


AUTHENTICATE_TOOL: ToolDef = build_tool("user", Domain.DEVICE, StepUp.authenticate)
"""The ``user.authenticate`` tool's spec, validator and method."""
