"""Run a real Appium server with the official fake driver on loopback for tests.

    with serve_appium(log_dir) as server:          # Appium 2 from tests/appium/node_modules
        session = AppiumSession.fake(server.url, str(NOTES_APP))
        ...
        server.kill()                               # abrupt death, as mid-episode

Appium and ``@appium/fake-driver`` are pinned in ``tests/appium/package.json`` (lock file beside
it) and installed with ``npm ci --ignore-scripts --prefix tests/appium`` (``make test`` does it
when ``npm`` exists). That folder is also the server's ``APPIUM_HOME``: Appium 2 finds drivers
that are npm dependencies of the project it is installed in, so no ``appium driver install`` (and
no network) is needed once ``npm ci`` has run. :func:`appium_command` raises
:class:`AppiumUnavailable`, whose message is the reason to skip, when Node or the install is
missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.llm_server import _free_port, _new_session_dying_with_parent

__all__ = ["APPIUM_HOME", "NOTES_APP", "AppiumServer", "AppiumUnavailable", "appium_command", "serve_appium"]

APPIUM_HOME = Path(__file__).resolve().parent / "appium"
"""``APPIUM_HOME`` of the test server: the npm project holding Appium and the fake driver."""

NOTES_APP = APPIUM_HOME / "apps" / "notes.xml"
"""Our app for the fake driver: a login screen and a notes list with a compose field."""

_MAIN = APPIUM_HOME / "node_modules" / "appium" / "build" / "lib" / "main.js"
_INSTALL = "npm ci --ignore-scripts --prefix tests/appium"


class AppiumUnavailable(RuntimeError):
    """Appium cannot run here; the message says why and how to fix it (tests skip with it)."""


class AppiumStartError(RuntimeError):
    """The server exited or did not answer ``/status`` in time; the message ends with its log tail."""


def appium_command() -> list[str]:
    """``[node, .../appium/build/lib/main.js]``. Raises :class:`AppiumUnavailable` when Node.js or
    the npm install under ``tests/appium`` is missing."""
    node = shutil.which("node")
    if node is None:
        raise AppiumUnavailable("node is not installed: install Node.js >= 18 and npm, then run `make test`")
    if not (_MAIN.exists() and (APPIUM_HOME / "node_modules" / "@appium" / "fake-driver").exists()):
        raise AppiumUnavailable(f"Appium is not installed under tests/appium: run `{_INSTALL}` (make test does it)")
    return [node, str(_MAIN)]


@dataclass
class AppiumServer:
    """A running Appium server: ``url`` (``http://127.0.0.1:PORT``), its process (leading its own
    process group), the log file, and ``startup_s`` (seconds from spawn to a ready ``/status``)."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    startup_s: float = 0.0

    @property
    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the server log."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (Appium shuts down its sessions), SIGKILL after ``timeout`` seconds. Idempotent."""
        if self.alive:
            self._signal(signal.SIGCONT)  # a paused server cannot handle SIGTERM
            self._signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.process.wait(5)
        self._signal(signal.SIGKILL)

    def kill(self) -> None:
        """Die abruptly (SIGKILL to the process group), as a crashed server would."""
        self._signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections open, no answers, as a hung host."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Undo :meth:`pause` (SIGCONT)."""
        self._signal(signal.SIGCONT)


def start_appium(log_dir: Path, *, port: int | None = None, startup_timeout: float = 60.0) -> AppiumServer:
    """Start ``appium --address 127.0.0.1 --port PORT --base-path /`` with ``APPIUM_HOME`` =
    ``tests/appium`` and wait (appium-python-client's ``is_service_listening``) until ``/status``
    answers. Raises :class:`AppiumUnavailable` (see :func:`appium_command`) or
    :class:`AppiumStartError`; the process is stopped on failure."""
    from appium.webdriver.appium_service import AppiumStartupError, is_service_listening

    cmd = appium_command()
    port = port or _free_port()
    log_path = Path(log_dir) / f"appium_{port}.log"
    cmd += ["--address", "127.0.0.1", "--port", str(port), "--base-path", "/", "--log-no-colors"]
    env = {**os.environ, "APPIUM_HOME": str(APPIUM_HOME)}
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            preexec_fn=_new_session_dying_with_parent,
        )  # fmt: skip
    server = AppiumServer(f"http://127.0.0.1:{port}", process, log_path)

    def exited() -> None:
        if process.poll() is not None:
            raise AppiumStartupError()

    try:
        try:
            ready = is_service_listening(f"{server.url}/status", timeout=startup_timeout, custom_validator=exited)
        except AppiumStartupError:
            raise AppiumStartError(
                f"appium exited with code {process.returncode} before it was ready; log tail:\n{server.log_tail()}"
            ) from None
        if not ready:
            raise AppiumStartError(f"appium not ready after {startup_timeout:.0f} s; log tail:\n{server.log_tail()}")
    except BaseException:
        server.stop()
        raise
    server.startup_s = time.monotonic() - t0
    return server


def _port_taken(exc: BaseException) -> bool:
    return isinstance(exc, AppiumStartError) and "EADDRINUSE" in str(exc)


@contextlib.contextmanager
def serve_appium(log_dir: Path, **kwargs: object) -> Iterator[AppiumServer]:
    """Serve Appium for the ``with`` block (see :func:`start_appium`); always stops it on exit.
    Without an explicit ``port``, a port taken between picking and binding (parallel workers) is
    retried on another free port, three attempts in all."""
    from tenacity import Retrying, retry_if_exception, stop_after_attempt

    attempts = 1 if kwargs.get("port") else 3
    for attempt in Retrying(stop=stop_after_attempt(attempts), retry=retry_if_exception(_port_taken), reraise=True):
        with attempt:
            server = start_appium(log_dir, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()
