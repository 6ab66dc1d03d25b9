"""phoneenv's errors: one root, :class:`PhoneEnvError`, and the errors several modules share.

Catch ``PhoneEnvError`` to catch anything phoneenv raises on purpose; each class also derives
from the built-in exception a caller would expect (``ValueError`` for bad input,
``RuntimeError`` for a failure of the world), so code that catches those keeps working.

Defined here (used across the package):

- :class:`InfrastructureError`: the world failed, not the agent (model server, device, pool);
  evaluation scores such an episode as an infrastructure error, never as an agent failure;
- :class:`ToolError` and :class:`ArgumentError`: what a tool and argument validation raise inside
  a step (the env turns them into structured feedback; ``env.step`` never raises them);
- :class:`RunConfigError`: an eval output folder that cannot take the run.

Families defined beside the code that raises them, all under the same root (listed so that one
page names every error; ``tests/test_errors.py`` checks that every public exception class of
phoneenv, agents, apps and rl derives from :class:`PhoneEnvError`):

- :class:`phoneenv.extras.MissingExtra` (``ImportError``): an optional feature without its extra;
- :class:`phoneenv.harness.skills.SkillError`, :class:`phoneenv.loop.harness.HarnessError`
  (``ValueError``): a malformed skill or harness version;
- :class:`phoneenv.backends.adb.faults.DeviceFault` and its kin (``InfrastructureError``), and
  :class:`phoneenv.farm.pool.PoolExhausted`: devices lost, unreadable or exhausted;
- :class:`phoneenv.farm.emulator.EmulatorError` and :class:`phoneenv.farm.console.ConsoleError`
  families: emulator processes and their consoles;
- :class:`phoneenv.backends.appium.AppiumSessionError`, :class:`phoneenv.farm.adbwire.ProtocolError`,
  :class:`phoneenv.farm.workers.WorkerError`, :class:`phoneenv.vector.WorkerError`,
  :class:`agents.factory.AgentSpecError`, :class:`agents.llm.client.MalformedResponse`, and the rest
  that ``tests/test_errors.py`` lists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from phoneenv.contract import ErrorKind

__all__ = ["ArgumentError", "InfrastructureError", "PhoneEnvError", "RunConfigError", "ToolError"]


class PhoneEnvError(Exception):
    """The root of every exception phoneenv, its agents, apps and RL package raise on purpose."""


class InfrastructureError(PhoneEnvError, RuntimeError):
    """The world failed, not the agent: a model server refused, timed out, returned 5xx,
    rate-limited or answered with something that is not a completion past the retry budget, the
    context overflowed, or a device was lost.

    Evaluation labels an episode that hits one as an infrastructure error (never an agent
    failure) and goes on with the next episode. ``kind`` is a short label: ``connection``
    (refused, reset, a body cut off), ``timeout``, ``rate_limit`` (429), ``server_error`` (5xx),
    ``malformed_response`` (a 2xx whose body is not a chat completion: not JSON, HTML, no
    ``choices``, no message), ``server_refused`` (another 4xx), ``context_overflow``,
    ``invalid_output``, ``device``.
    """

    def __init__(self, message: str, kind: str = "connection") -> None:
        super().__init__(message)
        self.kind = kind


class ToolError(PhoneEnvError):
    """Raised inside a tool to report a structured failure; the env turns it into a Feedback.

    Args:
        kind: the :class:`~phoneenv.contract.ErrorKind`.
        message: what went wrong, in words the agent can act on.
        hint: what to do instead (a tool to call, a value to use).
        candidates: nearest valid names, when a lookup missed.
        path: a JSON Pointer into the arguments at fault, when one is.
    """

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        hint: str | None = None,
        candidates: list[str] | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.hint = hint
        self.candidates = candidates
        self.path = path


class ArgumentError(PhoneEnvError):
    """Arguments failed validation: ``path`` is a JSON Pointer into them, ``expected`` the type."""

    def __init__(self, message: str, path: str, expected: str | None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.expected = expected


class RunConfigError(PhoneEnvError, ValueError):
    """An eval output folder that cannot take this run: it holds another run (without resume),
    none to resume, or a run made with another configuration (the message names the keys)."""
