"""Hybrid routing to a device: a task's ``device:<app>`` / ``device:<app>.<verb>`` backends send
just those tools to a virtual Android device served over the real adb server, while the rest of
the episode stays in the sandbox and the LLM simulation; routes checked at load and at reset."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from phoneenv.contract import TaskSpec
from phoneenv.tasks import get_task

pytest.importorskip("adbutils", reason="the adb backend needs adbutils (pip install -e '.[device]')")
pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")

from phoneenv.backends import make_backend
from phoneenv.backends.adb import AdbBackend
from phoneenv.backends.hybrid import HybridBackend
from phoneenv.backends.llmsim import LLMSimBackend
from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.env import PhonePlanEnv
from phoneenv.farm.virtual import VirtualDevice

FOOD = "hybrid.order_food_text_eta/0"  # food (simulated), contacts.search, messages.send


def routed(task_id: str, *routes: str) -> TaskSpec:
    task = get_task(task_id)
    return task.model_copy(update={"backends": ["hybrid", *(f"device:{r}" for r in routes)]})


def router(device: AdbBackend | None) -> HybridBackend:
    return HybridBackend(SandboxBackend(), LLMSimBackend(), device)


@pytest.fixture
def served(adb_server):
    """A virtual device adb-connected; yields (handler, AdbBackend on it)."""
    from tests.adb import served_device

    dev = VirtualDevice()
    with served_device(adb_server, dev) as (server, _):
        yield dev, AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=10)


def play(task: TaskSpec, backend: Any) -> tuple[dict[str, Any], Any]:
    env = PhonePlanEnv(task=task, backend=backend)
    env.reset(seed=0)
    info: dict[str, Any] = {}
    for call in task.reference_plan:
        *_, term, _, info = env.step(call.model_dump())
        assert info["feedback"].ok, (call.name, info["feedback"])
        if term:
            break
    return info["verdict"], env


# -- at load ---------------------------------------------------------------------------------------


def test_routes_are_checked_when_the_task_loads():
    task = get_task(FOOD)
    data = json.loads(task.model_dump_json())
    ok = TaskSpec.model_validate({**data, "backends": ["hybrid", "device:messages", "device:contacts.search"]})
    assert ok.routes == ["messages", "contacts.search"]
    assert task.routes == []
    for backends, why in [
        (["hybrid", "device:notes"], "'notes' is not among the task's apps"),
        (["hybrid", "phone:messages"], "routes are 'device:<app>'"),
        (["hybrid", "device:Messages"], "routes are 'device:<app>'"),
        (["hybrid", "device:messages."], "routes are 'device:<app>'"),
        (["sandbox", "device:messages"], "need the 'hybrid' backend"),
        (["device:messages", "hybrid"], "need the 'hybrid' backend listed before them"),
    ]:
        with pytest.raises(ValidationError, match=why.replace("(", r"\(").replace(")", r"\)")):
            TaskSpec.model_validate({**data, "backends": backends})


# -- at reset --------------------------------------------------------------------------------------


def test_routes_that_do_not_fit_the_device_fail_at_reset_before_the_device_is_touched():
    device = AdbBackend(serial="127.0.0.1:1", timeout_s=2)  # nothing there: a reset would fail as a fault
    hy = router(device)
    cases = [
        ("food", "'food' is a simulated app"),
        ("messages.send_photos", "has no driver for it"),
        ("contacts.search", r"'contacts' is routed to a device.*'contacts.create'.*route device:contacts"),
    ]
    for route, why in cases:
        with pytest.raises(ValueError, match=why):
            hy.reset(routed(FOOD, route))
    with pytest.raises(ValueError, match="has none"):
        router(None).reset(routed(FOOD, "messages"))
    assert not router(None).can_run(routed(FOOD, "messages")) and router(None).can_run(get_task(FOOD))
    env = PhonePlanEnv(task=routed(FOOD, "messages"), backend="hybrid")
    with pytest.raises(ValueError, match="cannot run it faithfully"):
        env.reset(seed=0)
    # the sandbox and the device backends refuse a routed task on their own
    assert not SandboxBackend().can_run(routed(FOOD, "messages"))
    assert not device.can_run(routed(FOOD, "messages"))


def test_a_routed_app_sends_its_tools_to_the_device(served):
    dev, device = served
    task = routed(FOOD, "messages")
    before = {r["id"] for r in task.fixtures.records["messages.messages"]}
    verdict, env = play(task, router(device))
    assert verdict["success"], verdict
    by_tool = {s.action.name: s.backend for s in env.trace.steps if s.action.name != "finish"}
    assert by_tool == {
        "food.search_restaurants": "llmsim",
        "food.get_menu": "llmsim",
        "food.place_order": "llmsim",
        "contacts.search": "sandbox",
        "messages.send": "device",
    }
    # the text is on the device itself (its own provider state), and mirrored into the sandbox
    sent = task.reference_plan[4].arguments
    rows = [r for r in dev.phone.state.tables["messages.messages"].values() if r["id"] not in before]
    assert [(r["body"], r["direction"]) for r in rows] == [(sent["body"], "out")]
    mirrored = env.backend.sandbox.tables()["messages.messages"]
    assert rows[0]["id"] in mirrored and mirrored[rows[0]["id"]]["body"] == sent["body"]
    # tools the device has no driver for are not offered (a write) in a routed app
    assert "messages.send_photos" not in env.backend.tools()
    assert "messages.search" in env.backend.tools()
    # unrouted, the same task sends nothing to the device
    n = len(dev.phone.state.tables["messages.messages"])
    verdict, env = play(get_task(FOOD), router(device))
    assert verdict["success"] and "device" not in {s.backend for s in env.trace.steps}
    assert len(dev.phone.state.tables["messages.messages"]) == n


def test_verification_reads_a_routed_app_from_the_device(adb_server):
    """A device whose messages provider loses the body of every row written in the episode: the
    router's verdict fails on the text, because the device is where the routed app lives."""
    from tests.adb import served_device

    class Lossy(VirtualDevice):
        losing = False

        def _insert(self, route: Any, values: dict[str, Any]) -> int:
            if self.losing and route.full_table == "messages.messages" and route.child is None:
                values = {**values, "body": "?"}
            return super()._insert(route, values)

    dev = Lossy()
    with served_device(adb_server, dev) as (server, _):
        device = AdbBackend(serial=server.serial, adb_port=adb_server.port, timeout_s=10)
        task = routed(FOOD, "messages")
        env = PhonePlanEnv(task=task, backend=router(device))
        env.reset(seed=0)
        dev.losing = True
        fbs = []
        for call in task.reference_plan:
            *_, term, _, info = env.step(call.model_dump())
            fbs.append(info["feedback"])
            if term:
                break
    failed = {c["id"] for c in info["verdict"]["criteria"] if not c["passed"]}
    # messages.send types the text and reads the row back: the device's loss is a device_error
    assert fbs[4].error is not None and fbs[4].error.value == "device_error"
    assert failed == {"created:messages.messages"}


def test_make_backend_builds_a_routing_hybrid(served):
    dev, device = served
    hy = make_backend("hybrid", serial=device.serial, adb_port=device.adb_port, timeout_s=10)
    assert isinstance(hy, HybridBackend) and isinstance(hy.device, AdbBackend)
    assert hy.device.serial == device.serial and hy.device.name == "device"
    verdict, env = play(routed(FOOD, "messages", "contacts"), hy)
    assert verdict["success"]
    assert {s.action.name: s.backend for s in env.trace.steps}["contacts.search"] == "device"
    with pytest.raises(ValueError, match="apply only"):
        make_backend("sandbox", serial="x")
