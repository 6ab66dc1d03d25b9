"""Skills as a provider: ``skills.read`` is offered when some skill of the library covers the
episode's tools, and ``info["skills"]`` lists those skills (name and description), so the agent
reads a body only when it needs one (see :mod:`phoneenv.harness.skills`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from phoneenv.contract import Feedback
from phoneenv.harness.providers.base import ToolProvider
from phoneenv.harness.skills import READ_TOOL, SkillLibrary
from phoneenv.tools import ToolDef

if TYPE_CHECKING:
    from phoneenv.env import PhonePlanEnv

__all__ = ["Skills"]


class Skills(ToolProvider):
    """Offers ``skills.read`` over the skills of ``library`` that cover the episode's tools.

    Args:
        library: the skills, or None for none (``info["skills"]`` is then ``[]``).
    """

    def __init__(self, library: SkillLibrary | None) -> None:
        self.library = library
        self.scope: SkillLibrary | None = None
        """The skills shown in the current episode (None when none applies)."""
        self._info: list[dict[str, str]] = []

    def offer(self, env: PhonePlanEnv, offered: Mapping[str, ToolDef]) -> dict[str, ToolDef]:
        self.scope, self._info = None, []
        if self.library is None:
            return {}
        scope = self.library.scoped(list(offered))
        if not len(scope):
            return {}
        self.scope, self._info = scope, scope.descriptions()
        return {READ_TOOL.spec.name: READ_TOOL}

    def call(self, env: PhonePlanEnv, name: str, args: dict[str, Any]) -> Feedback:
        return self.scope.call(args)  # type: ignore[union-attr]  # offered only with a scope

    def info(self) -> dict[str, Any]:
        return {"skills": self._info}
