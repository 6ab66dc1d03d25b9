"""Fault injection for virtual devices: a :class:`~phoneenv.farm.adbwire.DeviceHandler` wrapper
that a test (or an operator) tells at run time to misbehave.

    from phoneenv.farm.faults import FaultyDevice
    from phoneenv.farm.virtual import VirtualDevice

    dev = FaultyDevice(VirtualDevice())
    with AdbDeviceServer(dev) as server:
        ...
        dev.inject(full_storage=True)        # df shows ~0 free; writes fail "No space left on device"
        dev.inject(fail_restore=True)        # snapshot/archive restores (tar -x) fail
        dev.inject(hang=True)                # every command blocks until dev.inject(hang=False)
        dev.clear()                          # back to normal

The faults (:class:`FaultPlan`) live on the wrapper, so the wrapped device stays as it is. For a
device served in its own process (``phoneenv device serve --faults FILE``), the plan is a JSON
file the wrapper reads again whenever it changes (checked before every command), so a test can
change a running device's faults by rewriting the file (:func:`write_faults`, atomic), and stop
(SIGSTOP) or kill the process itself for a real hang or crash.

What each fault does on the adb wire:

- ``full_storage``: ``df`` reports ~0 bytes available on every mount; a command line that writes
  (``content insert|update``, ``settings put``, ``tar``, ``mkdir``, ``input``, ``am broadcast``,
  ``pm grant|revoke``, ``setprop``, ``date`` setting the clock) fails as a full Android does:
  ``content`` with the provider's ``SQLiteFullException``, the others with ``No space left on
  device``, exit status 1, having changed nothing.
- ``fail_restore``: a command line that extracts an archive (``tar -x``: app-data snapshot
  restores) fails with ``Input/output error``, exit status 1, changing nothing.
- ``hang``: every command blocks (the device stops answering) until the fault is cleared.
- ``not_booted``: ``getprop sys.boot_completed`` prints nothing, as during a boot.
- ``fail_commands``: regular expressions; a command line matching one fails with ``Input/output
  error`` (exit 1), changing nothing.

The wrapper also answers ``df [PATH...]`` (toybox's format, ``free_mb`` available on ``/data``)
whatever the wrapped device does. :attr:`FaultyDevice.counts` counts the faults served.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from phoneenv.farm.adbwire import ShellResult, VirtualFiles

__all__ = ["FaultPlan", "FaultyDevice", "write_faults"]

_WRITES = re.compile(
    r"(?:^|[;&|(\s'\"])(?:content\s+(?:insert|update)|settings\s+put|tar\s|mkdir\s|input\s|am\s+broadcast|"
    r"pm\s+(?:grant|revoke)|setprop\s|date\s+(?:-u\s+)?\d)"
)
_CONTENT_WRITE = re.compile(r"(?:^|[;&|(\s'\"])content\s+(?:insert|update)")
_EXTRACT = re.compile(r"(?:^|[;&|(\s'\"])tar\s+(?:-[a-zA-Z]*x|x)")
_DF = re.compile(r"\s*df(?:\s+(?P<args>[^;&|<>`$]*))?\s*")


class FaultPlan(BaseModel):
    """The faults a :class:`FaultyDevice` shows now (module docstring). Unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")

    full_storage: bool = False
    fail_restore: bool = False
    hang: bool = False
    not_booted: bool = False
    fail_commands: list[str] = Field(default_factory=list)
    free_mb: float = Field(4096.0, ge=0)
    total_mb: float = Field(8192.0, gt=0)

    @field_validator("fail_commands")
    @classmethod
    def _patterns(cls, patterns: list[str]) -> list[str]:
        """Each pattern compiles (a plan with a broken one is refused whole, not at a command)."""
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
        return patterns


def write_faults(path: str | os.PathLike[str], plan: FaultPlan | None = None, **faults: Any) -> FaultPlan:
    """Write a fault plan (``plan``, or one built from ``faults``) to ``path`` as JSON, whole or
    not at all (a temporary file renamed over it); returns the plan written."""
    plan = plan if plan is not None else FaultPlan(**faults)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(plan.model_dump_json(), encoding="utf-8")
    os.replace(tmp, path)
    return plan


class FaultyDevice:
    """A :class:`~phoneenv.farm.adbwire.DeviceHandler` that serves ``inner`` (any handler, a
    :class:`~phoneenv.farm.virtual.VirtualDevice`) with the faults of its plan (module docstring).

    Args:
        inner: the device served.
        plan: the faults at the start (default none).
        faults_file: a JSON :class:`FaultPlan` file read again whenever its modification time or
            size changes (before each command); while it is missing or invalid the last good plan
            stays (an invalid one is logged once). Given both, the file wins once it exists.

    Thread-safe: :meth:`inject` and :meth:`clear` may be called while the server runs commands.
    """

    def __init__(
        self, inner: Any, plan: FaultPlan | None = None, *, faults_file: str | os.PathLike[str] | None = None
    ) -> None:
        self.inner = inner
        self._plan = plan or FaultPlan()
        self._file = Path(faults_file) if faults_file is not None else None
        self._file_seen: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.counts: Counter[str] = Counter()
        """Faults served: ``full_storage``, ``fail_restore``, ``hang``, ``not_booted``, ``fail_commands``."""

    # -- the plan ---------------------------------------------------------------------------------
    @property
    def plan(self) -> FaultPlan:
        """The faults in force now (re-read from ``faults_file`` when it changed)."""
        self._reload()
        with self._lock:
            return self._plan

    def inject(self, **faults: Any) -> FaultPlan:
        """Change some faults (``full_storage=True``, ``hang=False``...); returns the new plan.
        Raises ``pydantic.ValidationError`` for an unknown fault or a bad value."""
        with self._changed:
            self._plan = FaultPlan(**{**self._plan.model_dump(), **faults})
            self._changed.notify_all()
            return self._plan

    def clear(self) -> None:
        """No faults any more (a hung device answers again)."""
        with self._changed:
            self._plan = FaultPlan()
            self._changed.notify_all()

    def _reload(self) -> None:
        if self._file is None:
            return
        try:
            st = self._file.stat()
        except OSError:
            return
        seen = (st.st_mtime_ns, st.st_size)
        if seen == self._file_seen:
            return
        try:
            plan = FaultPlan.model_validate_json(self._file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            if self._file_seen != seen:
                import logging

                reason = " ".join(str(exc).split())  # one log line, not pydantic's block
                logging.getLogger(__name__).warning(
                    "fault file %s is not a fault plan (the last good plan stays): %s", self._file, reason
                )
            self._file_seen = seen
            return
        with self._changed:
            self._file_seen = seen
            self._plan = plan
            self._changed.notify_all()

    # -- DeviceHandler ----------------------------------------------------------------------------
    @property
    def files(self) -> VirtualFiles:
        """The wrapped device's files (``adb push``/``pull``)."""
        return self.inner.files

    def banner(self) -> dict[str, str]:
        """The wrapped device's banner."""
        return self.inner.banner()

    def on_reboot(self, target: str) -> None:
        """``adb reboot``: passed on to the wrapped device."""
        self.inner.on_reboot(target)

    def shell(self, command: str, stdin: bytes = b"") -> ShellResult:
        """Run ``command`` on the wrapped device, unless a fault answers it (module docstring)."""
        plan = self._wait_while_hung()
        df = _DF.fullmatch(command)
        if df is not None:
            return self._df(plan, df.group("args") or "")
        if plan.not_booted and command.strip() == "getprop sys.boot_completed":
            self._count("not_booted")
            return ShellResult(b"\n", b"", 0)
        for pattern in plan.fail_commands:
            if re.search(pattern, command):
                self._count("fail_commands")
                return ShellResult(b"", b"/system/bin/sh: Input/output error\n", 1)
        if plan.fail_restore and _EXTRACT.search(command):
            self._count("fail_restore")
            return ShellResult(b"", b"tar: read error: Input/output error\n", 1)
        if plan.full_storage and _WRITES.search(command):
            self._count("full_storage")
            if _CONTENT_WRITE.search(command):
                return ShellResult(
                    b"",
                    b"Error while accessing provider:android.database.sqlite.SQLiteFullException: database or disk "
                    b"is full (code 13 SQLITE_FULL)\n",
                    1,
                )
            return ShellResult(b"", b"/system/bin/sh: write error: No space left on device\n", 1)
        return self.inner.shell(command, stdin)

    def _count(self, name: str) -> None:
        with self._lock:
            self.counts[name] += 1

    def _wait_while_hung(self) -> FaultPlan:
        counted = False
        while True:
            self._reload()
            with self._changed:
                if not self._plan.hang:
                    return self._plan
                if not counted:
                    self.counts["hang"] += 1
                    counted = True
                self._changed.wait(0.1)

    def _df(self, plan: FaultPlan, args: str) -> ShellResult:
        with contextlib.suppress(ValueError):
            paths = [a for a in shlex.split(args) if not a.startswith("-")] or ["/data"]
            total = int(plan.total_mb * 1024)
            free = 12 if plan.full_storage else int(min(plan.free_mb, plan.total_mb) * 1024)
            if plan.full_storage:
                self._count("full_storage")
            lines = ["Filesystem      1K-blocks    Used Available Use% Mounted on"]
            for path in paths:
                used = total - free
                lines.append(f"/dev/block/dm-5 {total:>9} {used:>7} {free:>9} {100 * used // total:>3}% {path}")
            return ShellResult(("\n".join(lines) + "\n").encode(), b"", 0)
        return ShellResult(b"", b"df: bad arguments\n", 1)
