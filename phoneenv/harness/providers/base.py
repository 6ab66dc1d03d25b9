"""The base of every tool provider (:class:`ToolProvider`) and the notes a reset may return;
see :mod:`phoneenv.harness.providers` for the providers themselves."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

from phoneenv.contract import Feedback, ToolSpec
from phoneenv.tools import ToolDef

if TYPE_CHECKING:
    from phoneenv.env import PhonePlanEnv

__all__ = ["Notes", "ToolProvider"]

Notes = list[dict[str, Any]]
"""Notifications for the agent (shown in a feedback's ``notifications``)."""


class ToolProvider:
    """One harness feature that offers tools beside the backend's. Every hook has a no-op
    default, so a provider overrides only what it does.

    The env calls, per episode: :meth:`reset` (after the backend's reset), then for each step
    :meth:`call` (a call of one of the provider's tools, arguments already validated),
    :meth:`gate` and :meth:`ran` (around every *sensitive* backend call) and :meth:`observe`
    (after every step); at the end :meth:`tables` joins the verified end state. The tool list
    is rebuilt (:meth:`offer`) when the backend's tools or any provider's :meth:`offer_key`
    change. None of the hooks may raise on an agent's input: errors are feedbacks.
    """

    def offer_key(self, env: PhonePlanEnv) -> Hashable:
        """What :meth:`offer` depends on for ``env.task`` besides the backend's tools (the env
        rebuilds the tool list when it changes)."""
        return None

    def offer(self, env: PhonePlanEnv, offered: Mapping[str, ToolDef]) -> dict[str, ToolDef]:
        """The tools this provider offers in ``env``'s episodes, by canonical name, given the
        tools ``offered`` so far (the backend's and later providers')."""
        return {}

    def reset(self, env: PhonePlanEnv, keep: bool | None) -> Notes | None:
        """Start an episode of ``env.task`` (the backend is already reset); ``keep`` is the
        reset's ``keep_memory`` option. Returns notifications for the start, or None."""
        return None

    def call(self, env: PhonePlanEnv, name: str, args: dict[str, Any]) -> Feedback:
        """Serve a call of one of the offered tools (``name`` canonical, ``args`` validated
        against its schema). Never raises."""
        raise NotImplementedError(f"{type(self).__name__} offers no tool {name!r}")

    def gate(self, env: PhonePlanEnv, spec: ToolSpec) -> Feedback | None:
        """The feedback refusing a sensitive backend call of ``spec`` now, or None to let it run."""
        return None

    def ran(self, env: PhonePlanEnv, spec: ToolSpec) -> None:
        """A sensitive backend call of ``spec`` passed every gate and runs."""

    def observe(self, name: str | None, ok: bool) -> Notes | None:
        """After each step (``name`` the canonical tool, None for an unreadable action; ``ok``
        whether it succeeded): notifications to add to the step's feedback, or None."""
        return None

    def tables(self) -> dict[str, dict[str, Any]]:
        """Tables this provider adds to the verified state (before and end), by name."""
        return {}

    def info(self) -> dict[str, Any]:
        """Entries this provider adds to ``reset``'s ``info``."""
        return {}

    def close(self) -> None:
        """Release what the provider holds (the env's ``close``). Idempotent."""

    def overrides(self, hook: str) -> bool:
        """Whether this provider's class overrides the hook ``hook`` (the env loops only over
        those, to keep a step cheap)."""
        return getattr(type(self), hook) is not getattr(ToolProvider, hook)
