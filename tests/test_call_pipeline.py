"""One call pipeline: the sandbox and the adb backend (on the virtual device) answer alike.

Both backends run a tool through :meth:`phoneenv.backends.base.PhoneBackend.call`, so a tool
name that does not exist, a revoked permission, a signed-out account, a tool's own error and a
bug in a tool give the same feedback, byte for byte, on both. A throwaway app (``locker``,
with an Android driver and no tables) is added to the apps for the test, so that each situation
has a tool offered on a device (no tool of the suite's apps that a device offers needs a login).
"""

from __future__ import annotations

import pytest
from typing_extensions import TypedDict

from phoneenv.app import App
from phoneenv.contract import Domain, ErrorKind, Fixtures, StateCriterion, TaskSpec
from phoneenv.farm.android import AndroidDriver
from phoneenv.tools import ToolError, tool

pytest.importorskip("adbutils", reason="the adb backend needs adbutils (pip install -e '.[device]')")
pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")

CAMERA = "android.permission.CAMERA"
ACCOUNT = "ana@example.com"


class Opened(TypedDict):
    """The locker's state after opening it."""

    open: bool


class Locker(App):
    """A throwaway app with one tool per situation the pipeline decides."""

    name = "locker"
    title = "Locker"
    domain = Domain.DEVICE
    package = "org.phoneenv.locker"
    permissions = (CAMERA,)
    requires_account = True
    android = AndroidDriver(tables={}, tools=("locker.open", "locker.scan", "locker.find", "locker.crash"))

    @tool(requires_login=True)
    def open(self) -> Opened:
        """Open the locker (needs the user's account signed in)."""
        return {"open": True}

    @tool(permissions=(CAMERA,))
    def scan(self) -> Opened:
        """Scan the locker's code with the camera."""
        return {"open": True}

    @tool()
    def find(self, item: str) -> Opened:
        """Find an item in the locker.

        Args:
            item: the item's name.
        """
        raise ToolError(ErrorKind.NOT_FOUND, f"no item {item!r} in the locker", hint="call locker.open first")

    @tool()
    def crash(self) -> Opened:
        """A tool with a bug."""
        raise RuntimeError("a bug in the locker")


TASK = TaskSpec(
    id="test.pipeline",
    domain="device",
    goal="-",
    apps=["locker"],
    fixtures=Fixtures(
        clock="2026-11-29T09:00:00",
        timezone="Europe/Berlin",
        accounts={"locker": {"account": ACCOUNT, "signed_in": False}},
        permissions={"locker": {CAMERA: False}},
    ),
    criteria=[StateCriterion(table="system.permissions", change="present", min=0)],
)

SITUATIONS = [
    ("locker.opne", {}, ErrorKind.UNKNOWN_TOOL),
    ("locker.scan", {}, ErrorKind.PERMISSION_DENIED),
    ("locker.open", {}, ErrorKind.LOGIN_REQUIRED),
    ("locker.find", {"item": "keys"}, ErrorKind.NOT_FOUND),
    ("locker.crash", {}, ErrorKind.INTERNAL_ERROR),
]


@pytest.fixture
def backends(adb_server, monkeypatch):
    """(sandbox, adb backend on a virtual device), both with the locker installed and reset to TASK."""
    from apps import APP_CLASSES
    from phoneenv.backends.adb import AdbBackend
    from phoneenv.backends.sandbox import SandboxBackend
    from phoneenv.farm.virtual import VirtualDevice
    from tests.adb import served_device

    monkeypatch.setitem(APP_CLASSES, "locker", Locker)
    with served_device(adb_server, VirtualDevice()) as (server, _):
        device = AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=10)
        box = SandboxBackend()
        box.reset(TASK)
        device.reset(TASK)
        yield box, device


def test_both_backends_give_the_same_feedback_in_every_situation(backends):
    box, device = backends
    assert {"locker.open", "locker.scan", "locker.find", "locker.crash"} <= set(device.tools())
    for name, args, kind in SITUATIONS:
        want, got = box.call(name, dict(args)), device.call(name, dict(args))
        assert want.error == kind, (name, want)
        assert got.model_dump_json() == want.model_dump_json(), name
        assert device.clock_seconds() == box.clock_seconds(), name
    assert box.call("locker.opne", {}).candidates[0] == "locker.open"


def test_login_required_names_the_fixture_account_on_both(backends):
    for backend in backends:
        fb = backend.call("locker.open", {})
        assert fb.error == ErrorKind.LOGIN_REQUIRED
        assert ACCOUNT in (fb.hint or ""), (backend.name, fb.hint)
        assert "system.list_accounts" not in (fb.hint or "")
