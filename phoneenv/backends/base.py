"""The ``Backend`` interface every world implements: sandbox, LLM-simulated, emulator, device.

The env owns parsing, argument validation, confirmation policy, traces and verification; a
backend owns the world: which tools exist, executing a validated call, snapshots, the state that
verification reads, and screenshots.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from phoneenv.contract import Feedback, TaskSpec, ToolSpec

__all__ = ["Backend", "ToolEntry"]


class ToolEntry(Protocol):
    """What a backend offers per tool: its spec and a validator with ``validate(args) -> dict``."""

    spec: ToolSpec
    validator: Any


class Backend(abc.ABC):
    """One world behind the action–feedback–verification contract.

    Lifecycle: ``reset(task)`` → many ``call(name, arguments)`` → ``tables()`` for verification
    → ``close()``. ``call`` receives arguments already validated against the tool's schema and
    returns a :class:`Feedback`; it must not raise for anything the world does (a lost device is a
    ``device_error`` feedback).
    """

    name: str = "backend"

    @abc.abstractmethod
    def reset(self, task: TaskSpec) -> None:
        """Put the world in ``task``'s fixture state (by restoring a snapshot where possible)."""

    @abc.abstractmethod
    def tools(self) -> Mapping[str, ToolEntry]:
        """The tools offered now, by name (changes with the installed apps of the task)."""

    @abc.abstractmethod
    def call(self, name: str, arguments: dict[str, Any]) -> Feedback:
        """Execute tool ``name`` with validated ``arguments``; return its feedback."""

    @abc.abstractmethod
    def snapshot(self) -> Any:
        """An opaque snapshot of the whole world."""

    @abc.abstractmethod
    def restore(self, snapshot: Any) -> None:
        """Return the world to ``snapshot``."""

    @abc.abstractmethod
    def tables(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """The state verification reads: ``{"app.table": {id: record}}``."""

    @abc.abstractmethod
    def clock_seconds(self) -> float:
        """The world's clock, seconds since the Unix epoch (cheap: read on every step)."""

    @abc.abstractmethod
    def format_clock(self, seconds: float) -> str:
        """``seconds`` (epoch) as the world's local ISO 8601 time, ``YYYY-MM-DDTHH:MM:SS``."""

    def clock(self) -> str:
        """The world's clock as local ISO 8601 text (``YYYY-MM-DDTHH:MM:SS``)."""
        return self.format_clock(self.clock_seconds())

    @abc.abstractmethod
    def screenshot(self) -> np.ndarray:
        """The current screen, ``uint8`` array of shape (H, W, 3)."""

    def consistency_issues(self) -> list[str]:
        """Contradictions the world noticed in itself this episode (a simulated order with two
        prices); none for worlds that cannot contradict themselves."""
        return []

    def infrastructure_fault(self) -> str | None:
        """A failure of the world this episode that no tool feedback reported (a device lost
        while verification read its state), or None; the env then marks the verdict an
        infrastructure error. None by default."""
        return None

    def can_run(self, task: TaskSpec) -> bool:
        """Whether this backend runs ``task`` faithfully (by default: it names this backend)."""
        return self.name in task.backends

    def served_by(self, name: str) -> str:
        """Which backend serves tool ``name`` (a router names the inner backend)."""
        return self.name

    def transient_tables(self) -> tuple[str, ...]:
        """Tables of session state (an ongoing call, notifications) that the collateral-damage
        rule ignores; none by default."""
        return ()

    def implied_records(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """Records that exist by default while none is stored (``{"app.table": {id: record}}``):
        a setting at its default value. Verification counts them in both states; none by default."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release what the backend holds (devices, servers). Idempotent."""
