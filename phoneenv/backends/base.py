"""The ``Backend`` interface every world implements: sandbox, LLM-simulated, emulator, device.

The env owns parsing, argument validation, confirmation policy, traces and verification; a
backend owns the world: which tools exist, executing a validated call, snapshots, the state that
verification reads, and screenshots. :class:`PhoneBackend` is the one call pipeline of the worlds
that run the sandbox apps' own methods on a :class:`~phoneenv.phone.Phone` (sandbox, emulator,
device).
"""

from __future__ import annotations

import abc
import contextlib
import datetime as dt
import logging
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from phoneenv.app import App
from phoneenv.contract import Feedback, TaskSpec, ToolSpec
from phoneenv.harness import feedback
from phoneenv.harness.feedback import from_tool_error
from phoneenv.phone import SECONDS_PER_CALL, Phone
from phoneenv.tools import ToolDef, ToolError

__all__ = ["Backend", "PhoneBackend", "ToolEntry"]

log = logging.getLogger(__name__)
_NOTHING = contextlib.nullcontext()


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

    def frozen_tables(self) -> dict[str, Mapping[str, Mapping[str, Any]]]:
        """The tables as they are now, in a new dict, never changed by later calls: what an
        episode's verification diffs its end state against. By default a copy of each table
        (O(records)); a backend whose tables are copy-on-write shares them instead."""
        return {k: dict(v) for k, v in self.tables().items()}

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

    def screen_text(self) -> str | None:
        """The current screen as text (``render_mode="ansi"``), or None when this backend
        cannot read its screen as text (a device's pixels)."""
        return None

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

    def account(self, app: str) -> Mapping[str, Any] | None:
        """``app``'s account now (``account``, ``signed_in``), or None when the world knows none
        (none by default)."""
        return None

    def login_gate(self, spec: ToolSpec) -> Feedback | None:
        """The one sign-in check of every world: ``login_required`` when ``spec`` requires login
        and :meth:`account` of its app is not signed in (naming the account when the world knows
        it, so the hint is the exact ``system.sign_in`` call), else None."""
        if not spec.requires_login:
            return None
        acc = self.account(spec.app)
        if acc and acc.get("signed_in"):
            return None
        return feedback.login_required(spec.app, acc.get("account") if acc else None)

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release what the backend holds (devices, servers). Idempotent."""


class PhoneBackend(Backend):
    """A world that runs the sandbox apps' own tool methods on a :class:`~phoneenv.phone.Phone`.

    :meth:`call` is the pipeline every such world shares; a subclass sets ``phone``, the app
    classes (``_classes``), the installed apps (``_installed``) and the tools offered (``_tools``,
    by name), and overrides only the hooks where it differs:
    :meth:`_session` around each call after the clock moved (a device opens a read cache and
    reconnects there), :meth:`_ran` after the app's method, :meth:`_frame` for a tool that
    returns the screen, and :meth:`_failed` for an exception the app's method did not mean.
    """

    phone: Phone
    _classes: Mapping[str, type[App]]
    _installed: tuple[str, ...]
    _tools: dict[str, ToolDef]

    def tools(self) -> Mapping[str, ToolDef]:
        """The tools offered now, by name."""
        return self._tools

    def call(self, name: str, arguments: dict[str, Any]) -> Feedback:
        """Run tool ``name``: an unknown name is ``unknown_tool`` (with the nearest names);
        otherwise the phone clock advances :data:`~phoneenv.phone.SECONDS_PER_CALL`, a revoked
        runtime permission is ``permission_denied``, a signed-out account ``login_required``
        (naming the account when the phone knows it), a non-system app comes to the foreground,
        and the app's method runs. Never raises: a :class:`~phoneenv.tools.ToolError` becomes its
        feedback, anything else :meth:`_failed`'s."""
        entry = self._tools.get(name)
        if entry is None:
            return feedback.unknown_tool(name, [e.spec for e in self._tools.values()])
        phone = self.phone
        meta = phone.state.meta
        meta["now"] += SECONDS_PER_CALL
        spec = entry.spec
        app = spec.app
        try:
            with self._session():
                for perm in spec.permissions:
                    if not phone.permission_granted(app, perm):
                        return feedback.permission_denied(app, perm)
                denied = self.login_gate(spec)
                if denied is not None:
                    return denied
                if not phone.apps[app].system:
                    meta["foreground"] = app
                result = entry.method(phone.apps[app], **arguments)
                self._ran()
                return Feedback.success(result, self._frame() if spec.returns_image else None)
        except ToolError as exc:
            return from_tool_error(exc, spec.parameters)
        except Exception as exc:
            return self._failed(name, exc)

    def account(self, app: str) -> Mapping[str, Any] | None:
        """``app``'s account on the phone (``system.accounts``), or None."""
        return self.phone.account(app)

    def _session(self) -> contextlib.AbstractContextManager[None]:
        """Around one call's checks and method (nothing by default)."""
        return _NOTHING

    def _ran(self) -> None:
        """After the app's method returned (nothing by default)."""

    def _frame(self) -> np.ndarray:
        """The screen a ``returns_image`` tool returns (by default :meth:`screenshot`)."""
        return self.screenshot()

    def _failed(self, name: str, exc: Exception) -> Feedback:
        """The feedback of an unexpected exception in tool ``name``: logged, ``internal_error``."""
        log.error("tool %s raised on the %s backend", name, self.name, exc_info=exc)
        return feedback.internal_error(name)

    def transient_tables(self) -> tuple[str, ...]:
        """``<app>.<table>`` for every installed app's ``transient`` tables."""
        return tuple(f"{name}.{t}" for name in self._installed for t in self._classes[name].transient)

    def clock_seconds(self) -> float:
        """The episode clock: the fixture clock plus one second per tool call (epoch seconds)."""
        return float(self.phone.state.meta["now"])

    def format_clock(self, seconds: float) -> str:
        """``seconds`` as the phone's local time, ``YYYY-MM-DDTHH:MM:SS``."""
        return dt.datetime.fromtimestamp(seconds, self.phone.tz).replace(tzinfo=None).isoformat(timespec="seconds")
