"""The ``hybrid`` router: sandbox apps from the sandbox, every other tool from ``llmsim``, in one
episode, one clock and one trace.

    >>> from phoneenv.backends import make_backend
    >>> router = make_backend("hybrid")  # doctest: +SKIP

Each step's backend is recorded in the trace (``Step.backend`` is ``sandbox`` or ``llmsim``).
Verification reads both worlds at once: the sandbox's tables and the simulation's fact ledger
(the ledger wins for tables both hold). A task runs here when it declares ``hybrid`` — or
``sandbox``, whose tasks the router serves unchanged. Accounts are the sandbox's
(``system.accounts``): a simulated tool that requires login reads them, so ``system.sign_in``
unlocks a simulated app as it does a sandbox one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from phoneenv.backends.base import Backend
from phoneenv.contract import Feedback, TaskSpec

__all__ = ["HybridBackend"]


class HybridBackend(Backend):
    """Routes each tool call to the backend that owns the tool.

    Args:
        sandbox: the in-process phone (owner of every sandbox app's tools).
        simulated: the LLM-simulated backend (owner of the rest).

    Raises:
        ValueError: at construction, when both backends offer a tool of the same name.
    """

    name = "hybrid"

    def __init__(self, sandbox: Backend, simulated: Backend) -> None:
        self.sandbox = sandbox
        self.simulated = simulated
        self._key: tuple[Any, Any] | None = None
        self._tools: dict[str, Any] = {}
        self._sim_names: frozenset[str] = frozenset()
        link = getattr(simulated, "use_accounts_of", None)
        if link is not None:
            link(sandbox)  # one account table: the sandbox's system.sign_in unlocks simulated apps
        self._refresh()

    def _refresh(self) -> None:
        a, b = self.sandbox.tools(), self.simulated.tools()
        if self._key is not None and self._key[0] is a and self._key[1] is b:
            return
        clash = set(a) & set(b)
        if clash:
            raise ValueError(f"tools offered by both backends: {sorted(clash)}")
        self._tools = {**a, **b}
        self._sim_names = frozenset(b)
        self._key = (a, b)

    def can_run(self, task: TaskSpec) -> bool:
        """Tasks that declare ``hybrid`` or ``sandbox``."""
        return "hybrid" in task.backends or "sandbox" in task.backends

    def reset(self, task: TaskSpec) -> None:
        """Reset both worlds to the task's fixtures."""
        self.sandbox.reset(task)
        self.simulated.reset(task)
        self._refresh()

    def tools(self) -> Mapping[str, Any]:
        """Both backends' tools."""
        self._refresh()
        return self._tools

    def served_by(self, name: str) -> str:
        """``llmsim`` for simulated tools, else ``sandbox``."""
        return self.simulated.name if name in self._sim_names else self.sandbox.name

    def call(self, name: str, arguments: dict[str, Any]) -> Feedback:
        """Serve the call from its owner, then move the other world's clock to match."""
        owner, other = (self.simulated, self.sandbox) if name in self._sim_names else (self.sandbox, self.simulated)
        fb = owner.call(name, arguments)
        set_clock = getattr(other, "set_clock", None)
        if set_clock is not None:
            set_clock(owner.clock_seconds())
        return fb

    def snapshot(self) -> tuple[Any, Any]:
        """Both worlds' snapshots."""
        return (self.sandbox.snapshot(), self.simulated.snapshot())

    def restore(self, snapshot: tuple[Any, Any]) -> None:
        """Restore both worlds."""
        self.sandbox.restore(snapshot[0])
        self.simulated.restore(snapshot[1])

    def tables(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """Sandbox tables and the simulation's ledger tables in one mapping."""
        return {**self.sandbox.tables(), **self.simulated.tables()}

    def clock_seconds(self) -> float:
        """The shared clock (epoch seconds): the later of the two worlds'."""
        return max(self.sandbox.clock_seconds(), self.simulated.clock_seconds())

    def format_clock(self, seconds: float) -> str:
        """Local time in the sandbox's timezone."""
        return self.sandbox.format_clock(seconds)

    def screenshot(self) -> np.ndarray:
        """The sandbox phone's screen."""
        return self.sandbox.screenshot()

    def consistency_issues(self) -> list[str]:
        """Contradictions in the simulated world."""
        return self.simulated.consistency_issues()

    def implied_records(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """The sandbox's implied records (simulated apps have none)."""
        return self.sandbox.implied_records()

    def transient_tables(self) -> tuple[str, ...]:
        """Session-state tables of both worlds."""
        return (*self.sandbox.transient_tables(), *self.simulated.transient_tables())

    def close(self) -> None:
        """Close both backends."""
        self.sandbox.close()
        self.simulated.close()
