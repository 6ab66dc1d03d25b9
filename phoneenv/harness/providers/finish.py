"""The ``finish`` tool: closes the active sub-agent frame, or at the root ends the episode with
the agent's answer (and its typed ``value``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from phoneenv.contract import Domain, Feedback
from phoneenv.harness.providers.base import ToolProvider
from phoneenv.tools import ToolDef, build_tool, tool

if TYPE_CHECKING:
    from phoneenv.env import PhonePlanEnv

__all__ = ["FINISH_TOOL", "MAX_ANSWER_CHARS", "AnswerValue", "Finish"]

MAX_ANSWER_CHARS = 8_000
"""Longest ``finish`` answer (characters), in the tool's schema: longer is ``invalid_arguments``."""

AnswerValue = str | int | float | bool | list[str | int | float | bool] | None
"""The JSON types ``finish``'s typed ``value`` accepts (a number, a string such as ``"16:00"``,
a bool, or a list of names or items); anything else is an ``invalid_arguments`` feedback."""


class Finish(ToolProvider):
    """Offers ``finish`` in every episode. In a sub-agent frame it closes the frame (its feedback
    is the parent's ``agent.delegate`` result); at the root it ends the episode through
    :meth:`~phoneenv.env.PhonePlanEnv.end_episode`."""

    @tool()
    def finish(
        self, answer: Annotated[str, Field(max_length=MAX_ANSWER_CHARS)] | None = None, value: AnswerValue = None
    ) -> dict[str, Any]:
        """End the episode. Give the answer to the user's question, or a one-line summary of what was done.

        Args:
            answer: The final answer or summary for the user.
            value: The answer's value when the question asks for one: a number, a time HH:MM, a date YYYY-MM-DD, a yes/no as true/false, a list of names or items.
        """
        return {"finished": True}

    def offer(self, env: PhonePlanEnv, offered: Mapping[str, ToolDef]) -> dict[str, ToolDef]:
        return {FINISH_TOOL.spec.name: FINISH_TOOL}

    def call(self, env: PhonePlanEnv, name: str, args: dict[str, Any]) -> Feedback:
        frames = env.frames
        if not frames.at_root:
            return frames.finish(args["answer"], args.get("value"))
        env.end_episode(args["answer"], args.get("value"))
        return Feedback(ok=True, result=self.finish(**args))


FINISH_TOOL: ToolDef = build_tool("", Domain.DEVICE, Finish.finish)
"""The ``finish`` tool's spec, validator and method."""
