"""The tests' waiting rules (tests/waiting.py): budgets scale with PHONEENV_TEST_TIME_FACTOR and
the load, a slow process that progresses is waited for, a stuck one is not."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests import waiting


def test_the_factor_multiplies_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waiting.os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    monkeypatch.delenv(waiting.FACTOR_ENV, raising=False)
    assert waiting.time_factor() == 1.0 and waiting.scaled(30) == 30.0
    monkeypatch.setenv(waiting.FACTOR_ENV, "2.5")
    assert waiting.scaled(30) == 75.0
    for bad in ("fast", "0", "-1"):
        monkeypatch.setenv(waiting.FACTOR_ENV, bad)
        with pytest.raises(ValueError, match=waiting.FACTOR_ENV):
            waiting.time_factor()


def test_the_load_stretches_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Load 12 on 2 cores: ×6; below one process per core: ×1."""
    monkeypatch.delenv(waiting.FACTOR_ENV, raising=False)
    monkeypatch.setattr(waiting.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(waiting.os, "getloadavg", lambda: (12.0, 8.0, 4.0))
    assert waiting.time_factor() == 6.0
    monkeypatch.setenv(waiting.FACTOR_ENV, "2")
    assert waiting.scaled(10) == 120.0
    monkeypatch.setattr(waiting.os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    assert waiting.scaled(10) == 20.0


@pytest.fixture
def idle_factor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Budgets as on an idle machine, whatever the load while the suite runs."""
    monkeypatch.delenv(waiting.FACTOR_ENV, raising=False)
    monkeypatch.setattr(waiting, "time_factor", lambda: 1.0)


BURN = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\nprint('done')"


def test_a_slow_process_that_progresses_is_waited_for(idle_factor: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Budget 0.5 s, a process working 1.5 s of CPU: it finishes (its CPU time grows)."""
    monkeypatch.setattr(waiting, "MAX_STRETCH", 60.0)  # the load decides how long 1.5 CPU-seconds take
    done = waiting.run([sys.executable, "-c", BURN.format(s=1.5)], timeout=0.5, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "done"


def test_a_stuck_process_fails_at_its_budget(idle_factor: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Budget 1 s, a process asleep for 60 s: killed after about the budget plus the progress
    window, with what it printed so far attached."""
    monkeypatch.setattr(waiting, "PROGRESS_WINDOW_S", 1.0)
    code = "import sys, time\nprint('started', flush=True)\ntime.sleep(60)"
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as err:
        waiting.run([sys.executable, "-c", code], timeout=1.0, capture_output=True, text=True)
    assert time.monotonic() - t0 < 30
    assert "started" in (err.value.output or "")


def test_a_spinning_process_ends_at_the_stretch_limit(idle_factor: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that burns CPU forever progresses forever: it ends at MAX_STRETCH × the budget."""
    monkeypatch.setattr(waiting, "MAX_STRETCH", 3.0)
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        waiting.run([sys.executable, "-c", BURN.format(s=600)], timeout=1.0, capture_output=True)
    assert 3.0 <= time.monotonic() - t0 < 20


def test_check_and_input_behave_as_subprocess_run(idle_factor: None) -> None:
    code = "import sys\ndata = sys.stdin.read()\nprint(data.upper())\nsys.exit(3)"
    done = waiting.run([sys.executable, "-c", code], input="abc", capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (3, "ABC")
    with pytest.raises(subprocess.CalledProcessError):
        waiting.run([sys.executable, "-c", code], input="x", capture_output=True, text=True, timeout=60, check=True)


def test_wait_for_returns_the_value_or_names_what_it_waited_for(idle_factor: None) -> None:
    calls = iter([None, 0, "ready"])
    assert waiting.wait_for(lambda: next(calls), 5, "the server", poll=0.01) == "ready"
    with pytest.raises(TimeoutError, match=f"the server: not ready after .*{waiting.FACTOR_ENV}"):
        waiting.wait_for(lambda: None, 0.2, "the server", poll=0.05)
