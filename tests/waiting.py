"""How the tests wait on real processes: by readiness and progress, not by wall-clock guesses.

A test that starts a server, a CLI run or a cluster gives each wait a *budget*, the seconds the
wait takes on an idle 2-core machine with room to spare. Two things stretch it, so that a run
on a busy laptop or a shared CI runner fails only on a real defect:

- **The time factor.** ``PHONEENV_TEST_TIME_FACTOR`` (a float, default 1) multiplies every
  budget, and so does the machine's load: the 1-minute load average per core when above 1
  (load 12 on 2 cores: ×6). :func:`time_factor` is their product, read at each wait.
- **Progress.** When a scaled budget runs out while the processes under test are still working
  (the CPU time of this test process's descendants, servers and CLI runs alike, grew in the
  last :data:`PROGRESS_WINDOW_S` seconds), the wait goes on, up to :data:`MAX_STRETCH` times
  the scaled budget. A process that is stuck (no CPU gained: a deadlock, a read that never
  returns) fails at the scaled budget.

:func:`run` is ``subprocess.run`` under these rules; :func:`wait_for` polls a readiness check;
:func:`scaled` stretches a budget handed to a library (a client's request timeout).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import psutil

__all__ = ["FACTOR_ENV", "MAX_STRETCH", "PROGRESS_WINDOW_S", "run", "scaled", "time_factor", "wait_for"]

FACTOR_ENV = "PHONEENV_TEST_TIME_FACTOR"
"""The environment variable that multiplies every test deadline (a float > 0; default 1)."""
PROGRESS_WINDOW_S = 10.0
"""A wait past its scaled budget goes on while descendants gained CPU time within this window."""
MAX_STRETCH = 4.0
"""However much progress, a wait ends at this many times its scaled budget."""

_T = TypeVar("_T")


def time_factor() -> float:
    """``PHONEENV_TEST_TIME_FACTOR`` (default 1) × ``max(1, load average / cores)``.

    Raises:
        ValueError: the variable is not a number > 0.
    """
    raw = os.environ.get(FACTOR_ENV, "").strip()
    try:
        factor = float(raw) if raw else 1.0
    except ValueError:
        raise ValueError(f"{FACTOR_ENV}={raw!r} is not a number") from None
    if not factor > 0:
        raise ValueError(f"{FACTOR_ENV}={raw!r} must be > 0")
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:  # no load average on this platform
        load = 1.0
    return factor * max(1.0, load)


def scaled(seconds: float) -> float:
    """``seconds`` × :func:`time_factor` (for a timeout handed to a library under test)."""
    return seconds * time_factor()


def _descendants_cpu(root: psutil.Process) -> float:
    """CPU seconds (user + system) of ``root``'s living descendants."""
    total = 0.0
    try:
        children = root.children(recursive=True)
    except psutil.Error:
        return total
    for child in children:
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


class _Progress:
    """Whether this process's descendants gained CPU within the last :data:`PROGRESS_WINDOW_S`."""

    def __init__(self) -> None:
        self._me = psutil.Process()
        self._cpu = _descendants_cpu(self._me)
        self._last_gain = time.monotonic()

    def recent(self) -> bool:
        cpu = _descendants_cpu(self._me)
        now = time.monotonic()
        if cpu > self._cpu + 0.05:  # the sum falls when a child exits: only a rise counts
            self._last_gain = now
        self._cpu = cpu
        return now - self._last_gain <= PROGRESS_WINDOW_S


def wait_for(ready: Callable[[], _T | None], budget: float, what: str, *, poll: float = 0.2) -> _T:
    """Poll ``ready()`` until it returns something truthy, and return that.

    The wait ends after ``scaled(budget)`` seconds, stretched while the processes under test
    progress (see the module docstring).

    Raises:
        TimeoutError: not ready in time, naming ``what``, the budget and the factor.
    """
    start = time.monotonic()
    limit = scaled(budget)
    progress = _Progress()
    while True:
        value = ready()
        if value:
            return value
        spent = time.monotonic() - start
        if spent > limit and (spent > limit * MAX_STRETCH or not progress.recent()):
            raise TimeoutError(
                f"{what}: not ready after {spent:.0f} s (budget {budget:.0f} s × factor {limit / budget:.1f}; "
                f"set {FACTOR_ENV} to allow more)"
            )
        time.sleep(poll)


def run(cmd: Sequence[str] | str, *, timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(cmd, **kwargs)`` whose ``timeout`` is a budget (see the module
    docstring): the process is killed only when the scaled budget has passed and it (with its
    own children) gained no CPU time in the last :data:`PROGRESS_WINDOW_S` seconds, or at
    :data:`MAX_STRETCH` times the scaled budget.

    Raises:
        subprocess.TimeoutExpired: killed as above (its output so far attached).
        subprocess.CalledProcessError: ``check=True`` and a non-zero exit.
    """
    check = kwargs.pop("check", False)
    stdin_text = kwargs.pop("input", None)
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if stdin_text is not None:
        kwargs["stdin"] = subprocess.PIPE
    limit = scaled(timeout)
    start = time.monotonic()
    with subprocess.Popen(cmd, **kwargs) as proc:
        progress = _Progress()
        pending = stdin_text
        while True:
            step = max(1.0, min(PROGRESS_WINDOW_S / 2, limit))
            try:
                out, err = proc.communicate(pending, timeout=step)
                break
            except subprocess.TimeoutExpired:
                pending = None  # communicate keeps what it wrote and read so far
                spent = time.monotonic() - start
                if spent > limit and (spent > limit * MAX_STRETCH or not progress.recent()):
                    proc.kill()
                    out, err = proc.communicate()
                    raise subprocess.TimeoutExpired(cmd, spent, output=out, stderr=err) from None
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done
