"""What goes wrong on a device, as exceptions: :class:`DeviceFault` (the device or adb failed:
``device_error``/``timeout`` feedback, an infrastructure error), :class:`ReadFault` (a read after
applied writes failed), :class:`ResetError` (the device will not take a task's fixtures),
:class:`UnmappedTable`; and :func:`check_package`, the guard on every package name that reaches a
shell command or a path."""

from __future__ import annotations

import re

from phoneenv.contract import ErrorKind, Feedback
from phoneenv.errors import PhoneEnvError
from phoneenv.harness import feedback
from phoneenv.llm import InfrastructureError

__all__ = ["DeviceFault", "ReadFault", "ResetError", "UnmappedTable", "check_package"]


_PACKAGE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+")


def check_package(package: str) -> str:
    """``package`` when it is a valid Android package name (dot-separated segments of letters,
    digits and ``_``, each starting with a letter: ``PackageParser.validateName``); raises
    ``ValueError`` otherwise, so that no path or command is ever built from anything else."""
    if not isinstance(package, str) or not _PACKAGE.fullmatch(package):
        raise ValueError(f"not an Android package name: {package!r}")
    return package


class DeviceFault(InfrastructureError):
    """The device or adb failed, not the agent: becomes ``device_error`` (or ``timeout``) feedback
    during a step; raised from ``reset`` or construction, evaluation counts the episode as an
    infrastructure error (an :class:`~phoneenv.llm.InfrastructureError`).

    Args:
        detail: what failed, in words.
        kind: :attr:`ErrorKind.DEVICE_ERROR` or :attr:`ErrorKind.TIMEOUT` (also the error's label).
    """

    def __init__(self, detail: str, kind: ErrorKind = ErrorKind.DEVICE_ERROR) -> None:
        super().__init__(detail, kind=kind.value)
        self.detail = detail
        self.kind = kind

    def feedback(self) -> Feedback:
        """This fault as infrastructure feedback (built by :mod:`phoneenv.harness.feedback`)."""
        if self.kind is ErrorKind.TIMEOUT:
            return feedback.timeout(self.detail)
        return feedback.device_error(self.detail)


class ReadFault(DeviceFault):
    """A read that :meth:`DeviceShell.apply` ran after its writes failed: the writes were applied
    (a plain :class:`DeviceFault` from ``apply`` may mean they were not)."""


class ResetError(InfrastructureError):
    """``reset`` could not put the device in the task's fixture state; the message says what
    differs. An infrastructure error (label ``reset``): evaluation counts the episode apart."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="reset")


class UnmappedTable(PhoneEnvError, KeyError):
    """A tool touched a table that has no Android mapping (a driver lists a tool it should not)."""
