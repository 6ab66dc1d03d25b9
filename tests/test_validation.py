"""Validation batches (phoneenv.validation, `phoneenv validate-devices`) on virtual devices served
over the real adb server: a batch that agrees everywhere, and injected disagreements (a device
that drops a field of the rows written during an episode, one that does so on alternate
episodes, a tool the device has no driver for) caught and classified, checked in the report's
numbers; the pure comparison on hand-built views; the CLI end to end."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from typing import Any

import pytest
from typer.testing import CliRunner

from phoneenv.contract import TaskSpec
from phoneenv.tasks.undone import undone_criterion
from phoneenv.validation import EpisodeView, StepView, classify, compare_episodes, view_of

pytest.importorskip("adbutils", reason="the adb backend needs adbutils (pip install -e '.[device]')")
pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")

from phoneenv.backends.adb import AdbBackend
from phoneenv.env import PhonePlanEnv
from phoneenv.farm.virtual import VirtualDevice
from phoneenv.tasks import load_suite
from phoneenv.validation import validate_devices

CREATE = "calendar.create_event/0"
CREATED = "created:calendar.events"


def batch() -> list[TaskSpec]:
    """The first task of the first ten Tool-category templates the device backend can run, in
    suite order (deterministic; calendar.create_event/0 among them)."""
    backend = AdbBackend(serial="none")
    seen: set[str | None] = set()
    out = []
    for t in load_suite():
        if t.category.value == "tool" and t.template not in seen and backend.can_run(t):
            seen.add(t.template)
            out.append(t)
    return out[:10]


class DroppingDevice(VirtualDevice):
    """A virtual device whose calendar provider drops ``eventLocation`` from the rows inserted
    while :attr:`dropping` is on (the batch turns it on after each reset, see :class:`Episodes`)."""

    def __init__(self, drop: bool = True, alternate: bool = False) -> None:
        super().__init__()
        self.drop = drop
        self.alternate = alternate
        self.dropping = False
        self.episodes = 0

    def _insert(self, route: Any, values: dict[str, Any]) -> int:
        if self.dropping and route.full_table == "calendar.events" and route.child is None:
            values = {k: v for k, v in values.items() if k != "eventLocation"}
        return super()._insert(route, values)


class Episodes(AdbBackend):
    """An AdbBackend that tells its :class:`DroppingDevice` when an episode starts: dropping is
    off while the fixtures are seeded and verified, then on (on every episode, or on the odd
    ones with ``alternate``)."""

    def __init__(self, device: DroppingDevice, **options: Any) -> None:
        super().__init__(**options)
        self.device = device

    def reset(self, task: TaskSpec) -> None:
        self.device.dropping = False
        super().reset(task)
        self.device.episodes += 1
        dev = self.device
        dev.dropping = dev.drop and (not dev.alternate or dev.episodes % 2 == 1)


@contextlib.contextmanager
def devices(adb_server: Any, *handlers: Any):
    """Serve ``handlers`` as virtual devices on the real adb server; yields their serials."""
    from tests.adb import served_device

    with contextlib.ExitStack() as stack:
        serials = [stack.enter_context(served_device(adb_server, h))[0].serial for h in handlers]
        yield serials


def factory(adb_server: Any, by_serial: dict[str, DroppingDevice]):
    def make(serial: str) -> AdbBackend:
        return Episodes(by_serial[serial], serial=serial, adb_port=adb_server.port, kind="device", timeout_s=10)

    return make


def rows_of(report: dict[str, Any], **match: Any) -> list[dict[str, Any]]:
    return [d for d in report["differences"] if all(d[k] == v for k, v in match.items())]


# -- pure comparison -------------------------------------------------------------------------------


def _view(*steps: StepView, success: bool = True, criteria: dict[str, bool] | None = None) -> EpisodeView:
    return EpisodeView(success=success, progress=1.0 if success else 0.0, criteria=criteria or {}, steps=list(steps))


def test_compare_normalises_ids_and_times_and_tells_fields_from_values():
    box = _view(StepView(1, "x.get", True, None, {"id": "#1", "time": "2026-11-29T09:00:01", "n": 1}))
    same = _view(StepView(1, "x.get", True, None, {"id": "#1", "time": "2026-11-29T09:00:40", "n": 1.0}))
    assert compare_episodes(box, same) == []
    late = _view(StepView(1, "x.get", True, None, {"id": "#1", "time": "2026-11-29T09:02:00", "n": 1}))
    (d,) = compare_episodes(box, late)
    assert (d.where, d.hint) == ("step 1 x.get: result/time", "value")
    assert compare_episodes(box, late, time_tolerance_s=120) == []
    lacking = _view(StepView(1, "x.get", True, None, {"id": "#1", "time": "2026-11-29T09:00:01"}))
    (d,) = compare_episodes(box, lacking)
    assert (d.where, d.sandbox, d.device, d.hint) == ("step 1 x.get: result/n", 1, "<missing>", "fields")
    flag = _view(StepView(1, "x.get", True, None, {"id": "#1", "time": "2026-11-29T09:00:01", "n": True}))
    assert [d.hint for d in compare_episodes(box, flag)] == ["value"]  # True is not 1
    gone = _view(StepView(1, "x.get", False, "unknown_tool", None), success=False)
    diffs = compare_episodes(box, gone)
    assert [(d.level, d.where, d.hint) for d in diffs] == [
        ("verdict", "success", "state"),
        ("verdict", "progress", "state"),
        ("step", "step 1 x.get: outcome", "unknown_tool"),
    ]


def test_view_of_renames_ids_in_order_of_appearance():
    from phoneenv.contract import Category, Domain, Feedback, Step, ToolCall, Trace, Verdict

    def trace(a: str, b: str) -> Trace:
        steps = [
            Step(index=1, action=ToolCall(name="x.new", arguments={}), feedback=Feedback(ok=True, result={"id": a}),
                 clock="c", backend="b"),
            Step(index=2, action=ToolCall(name="x.link", arguments={}),
                 feedback=Feedback(ok=True, result={"event_id": b, "contact_ids": [a, b], "name": a}),
                 clock="c", backend="b"),
        ]  # fmt: skip
        verdict = Verdict(success=True, progress=1.0, collateral=[f"x.rows/{b}"])
        return Trace(task_id="t", backend="b", category=Category.TOOL, domain=Domain.CONTACTS, goal="g",
                     steps=steps, verdict=verdict)  # fmt: skip

    one, two = view_of(trace("c_9", "ev_2")), view_of(trace("41", "77"))
    assert one.steps[1].result == {"event_id": "#2", "contact_ids": ["#1", "#2"], "name": "c_9"}
    assert one.collateral == ["x.rows/#2"]
    assert [s.result for s in one.steps[:1]] == [{"id": "#1"}]
    # ids compare by position; the one field that is not an id carries the raw value and differs
    assert [(d.where, d.sandbox, d.device) for d in compare_episodes(one, two)] == [
        ("step 2 x.link: result/name", "c_9", "41")
    ]


def test_classify():
    from phoneenv.validation import Difference

    value = Difference("criterion", "c", True, False, "state")
    assert classify(value, [False, False], on_every_device=False)[0] == "device_state"
    assert classify(value, [False, True], on_every_device=False)[0] == "flaky"
    assert classify(value, [False, True], on_every_device=True)[0] == "flaky"
    assert classify(value, [False, False], on_every_device=True)[0] == "driver_gap"
    field = Difference("step", "s", 1, "<missing>", "fields")
    assert classify(field, ["<missing>"], on_every_device=False)[0] == "driver_gap"
    tool = Difference("step", "s", {}, {}, "unknown_tool")
    assert classify(tool, [{}], on_every_device=False)[0] == "driver_gap"


# -- batches on virtual devices ------------------------------------------------------------------


def test_a_batch_of_ten_tasks_agrees_everywhere(adb_server, tmp_path):
    tasks = batch()
    assert len(tasks) == 10 and CREATE in {t.id for t in tasks}
    with devices(adb_server, VirtualDevice()) as (serial,):
        report = validate_devices(tasks, [serial], tmp_path, adb_port=adb_server.port, timeout_s=10)
    a = report["agreement"]
    plans = [c.name for t in tasks for c in t.reference_plan]
    assert a["episodes"] == {"compared": 10, "agreed": 10, "rate": 1.0}
    assert a["steps"] == {"compared": len(plans), "agreed": len(plans), "rate": 1.0}
    # each task's criteria, the undone guard of a task that changes the phone, and the grounded
    # claims every verdict carries
    carried = sum(len(t.criteria) + 1 + (undone_criterion(t) is not None) for t in tasks)
    assert a["criteria"]["compared"] == carried == a["criteria"]["agreed"]
    assert {k: v["compared"] for k, v in a["by_tool"].items()} == Counter(plans)
    apps = Counter(x for t in tasks for x in t.apps if x not in ("system", "user"))
    assert {k: v["compared"] for k, v in a["by_app"].items()} == apps
    assert a["by_device"] == {serial: {"compared": 10, "agreed": 10, "rate": 1.0}}
    assert report["differences"] == [] and report["classes"] == {"driver_gap": 0, "device_state": 0, "flaky": 0}
    assert json.loads((tmp_path / "report.json").read_text()) == report
    md = (tmp_path / "report.md").read_text()
    assert "| episodes | 100.0% (10/10) |" in md and "None: every compared episode agreed." in md
    trace = json.loads((tmp_path / report["episodes"][0]["traces"]["device"]).read_text())
    assert trace["backend"] == "device" and trace["task_id"] == tasks[0].id


def _create_event_rows(report: dict[str, Any], serial: str) -> dict[str, dict[str, Any]]:
    return {d["where"]: d for d in rows_of(report, task=CREATE, device=serial)}


def test_a_device_dropping_a_field_is_caught_as_its_own_state(adb_server, tmp_path):
    tasks = batch()
    bad, good = DroppingDevice(), DroppingDevice(drop=False)
    with devices(adb_server, bad, good) as serials:
        report = validate_devices(
            tasks, serials, tmp_path, backend_factory=factory(adb_server, dict(zip(serials, (bad, good), strict=True)))
        )
    s_bad, s_good = serials
    a = report["agreement"]
    assert a["episodes"] == {"compared": 20, "agreed": 19, "rate": 0.95}
    assert a["by_device"] == {
        s_bad: {"compared": 10, "agreed": 9, "rate": 0.9},
        s_good: {"compared": 10, "agreed": 10, "rate": 1.0},
    }
    rows = _create_event_rows(report, s_bad)
    assert set(rows) == {"success", "progress", "collateral", CREATED}
    assert (rows[CREATED]["sandbox"], rows[CREATED]["device_value"]) == (True, False)
    assert rows[CREATED]["evidence"] == {
        "sandbox_reason": "",
        "device_reason": "0 matching created record(s), expected exactly 1",
    }
    assert (rows["success"]["sandbox"], rows["success"]["device_value"]) == (True, False)
    # the event without its location meets no criterion, so it is an unasked-for write there
    assert rows["collateral"]["sandbox"] == [] and rows["collateral"]["device_value"][0].startswith("calendar.events/")
    assert {d["class"] for d in rows.values()} == {"device_state"}
    assert all(d["runs"] == [d["device_value"]] * 2 for d in rows.values())  # re-run once, the same
    assert report["classes"] == {"driver_gap": 0, "device_state": 4, "flaky": 0}
    criteria = sum(len(t.criteria) + 1 + (undone_criterion(t) is not None) for t in tasks)  # guard, grounded
    assert a["criteria"] == {
        "compared": 2 * criteria,
        "agreed": 2 * criteria - 1,
        "rate": round(1 - 1 / (2 * criteria), 4),
    }
    assert a["by_app"]["calendar"]["agreed"] == a["by_app"]["calendar"]["compared"] - 1
    assert a["steps"]["agreed"] == a["steps"]["compared"]  # the step results agree; the end state does not
    ep = next(e for e in report["episodes"] if e["task"] == CREATE and e["device"] == s_bad)
    assert set(ep["traces"]) == {"sandbox", "device", "device_run1"}


def test_the_same_difference_on_every_device_is_a_driver_gap(adb_server, tmp_path):
    tasks = [t for t in batch() if t.id in (CREATE, "clock.set_alarm/0")]
    one, two = DroppingDevice(), DroppingDevice()
    with devices(adb_server, one, two) as serials:
        report = validate_devices(
            tasks, serials, tmp_path, reruns=0,
            backend_factory=factory(adb_server, dict(zip(serials, (one, two), strict=True))),
        )  # fmt: skip
    assert report["agreement"]["episodes"] == {"compared": 4, "agreed": 2, "rate": 0.5}
    for serial in serials:
        rows = _create_event_rows(report, serial)
        assert set(rows) == {"success", "progress", "collateral", CREATED}
        assert {d["class"] for d in rows.values()} == {"driver_gap"}
        assert all("every device" in d["why"] and d["runs"] == [d["device_value"]] for d in rows.values())
    assert report["classes"] == {"driver_gap": 8, "device_state": 0, "flaky": 0}


def test_a_device_answering_differently_on_alternate_runs_is_flaky(adb_server, tmp_path):
    tasks = [t for t in batch() if t.id == CREATE]
    dev = DroppingDevice(alternate=True)
    with devices(adb_server, dev) as (serial,):
        report = validate_devices(
            tasks, [serial], tmp_path, reruns=2, backend_factory=factory(adb_server, {serial: dev})
        )
    assert dev.episodes == 3  # the first run differed, so it was played twice more
    rows = _create_event_rows(report, serial)
    assert set(rows) == {"success", "progress", "collateral", CREATED}
    assert {d["class"] for d in rows.values()} == {"flaky"}
    assert rows[CREATED]["runs"] == [False, True, False]  # dropped, kept, dropped
    assert report["classes"] == {"driver_gap": 0, "device_state": 0, "flaky": 4}
    assert report["agreement"]["episodes"] == {"compared": 1, "agreed": 0, "rate": 0.0}
    md = (tmp_path / "report.md").read_text()
    assert f"| flaky | `{CREATE}` | `{serial}` | reference | {CREATED} | true | false |" in md


def test_replayed_traces_with_a_tool_the_device_lacks_are_a_driver_gap(adb_server, tmp_path):
    """An agent's trace (recorded on the sandbox) that reads a setting the device has no driver
    for: the device answers unknown_tool, the sandbox the value."""
    task = next(t for t in batch() if t.id == "clock.what_time/0")
    env = PhonePlanEnv(task=task, backend="sandbox")
    env.reset(seed=0)
    for action in (
        {"name": "settings.get", "arguments": {"key": "wifi"}},
        "not json",
        *[c.model_dump() for c in task.reference_plan],
    ):
        *_, term, _, _ = env.step(action)
        if term:
            break
    run = tmp_path / "run" / "traces"
    run.mkdir(parents=True)
    (run / f"{task.id.replace('/', '_')}.jsonl").write_text(env.trace.model_dump_json() + "\n")
    (run.parent / "results.jsonl").write_text('{"task_id": "x"}\n')  # an eval run's folder, as eval writes it
    (run.parent / "run.json").write_text("{}\n")
    (run / "notes.jsonl").write_text("not a trace\n")
    with devices(adb_server, VirtualDevice()) as (serial,):
        report = validate_devices([task], [serial], tmp_path / "out", adb_port=adb_server.port, traces=tmp_path / "run")
    assert report["tasks"]["traces_skipped"] == ["notes.jsonl: not a trace"]  # the run's traces/, not its results
    sources = {e["source"]: e["agreed"] for e in report["episodes"]}
    assert sources == {"reference": True, "trace:clock.what_time_0.jsonl": False}
    (gap,) = rows_of(report, source="trace:clock.what_time_0.jsonl")
    assert gap["where"] == "step 1 settings.get: outcome" and gap["class"] == "driver_gap"
    assert gap["sandbox"]["ok"] is True and gap["device_value"]["error"] == "unknown_tool"
    a = report["agreement"]
    assert a["by_tool"]["settings.get"] == {"compared": 1, "agreed": 0, "rate": 0.0}
    assert a["by_tool"]["<unparsed>"] == {"compared": 1, "agreed": 1, "rate": 1.0}  # both: invalid_json
    assert a["steps"]["compared"] == 2 + 2 * len(task.reference_plan)


def test_tasks_the_device_cannot_run_are_skipped_with_the_reason(adb_server, tmp_path):
    hybrid = next(t for t in load_suite() if t.id.startswith("hybrid."))
    timer = next(t for t in load_suite() if t.id == "clock.start_timer/0")  # a tool with no driver
    with devices(adb_server, VirtualDevice()) as (serial,):
        report = validate_devices([hybrid, timer], [serial], tmp_path, adb_port=adb_server.port)
    assert list(report["tasks"]["skipped"]) == [hybrid.id, timer.id]
    assert "cannot run it faithfully" in report["tasks"]["skipped"][hybrid.id]
    assert report["tasks"]["skipped"][hybrid.id].endswith("it runs on hybrid, not the sandbox or a device")
    assert report["tasks"]["skipped"][timer.id].endswith(": tool clock.start_timer has no device driver")
    assert report["agreement"]["episodes"] == {"compared": 0, "agreed": 0, "rate": None}
    with pytest.raises(ValueError, match="twice"):
        validate_devices([hybrid], [serial, serial])
    with pytest.raises(ValueError, match="at least one"):
        validate_devices([hybrid], [])


# -- the command line ----------------------------------------------------------------------------


def test_cli_end_to_end(adb_server, tmp_path):
    from phoneenv.cli import app

    tasks = batch()[:3]
    runner = CliRunner()
    with devices(adb_server, VirtualDevice()) as (serial,):
        args = ["validate-devices", "--tasks", ",".join(t.id for t in tasks), "--serial", serial]
        res = runner.invoke(app, [*args, "--adb-port", str(adb_server.port), "--out", str(tmp_path / "ok")])
        assert res.exit_code == 0, res.output
        assert "episodes: 100.0% agree (3/3)" in res.output
        assert "validate-devices" in res.output and "6/6" in res.output  # progress: 3 on the sandbox, 3 on the device
        report = json.loads((tmp_path / "ok" / "report.json").read_text())
        assert report["agreement"]["episodes"]["compared"] == 3 and report["devices"] == [serial]
        # no device answers on that port's neighbour: every reset fails, the report says so, exit 1
        res = runner.invoke(app, [*args, "--adb-port", str(adb_server.port), "--out", str(tmp_path / "bad"),
                                  "--serial", "127.0.0.1:1", "--timeout-s", "3", "--reruns", "0"])  # fmt: skip
        assert res.exit_code == 1, res.output
        bad = json.loads((tmp_path / "bad" / "report.json").read_text())
        assert bad["agreement"]["by_device"]["127.0.0.1:1"]["agreed"] == 0
        assert {d["level"] for d in bad["differences"]} == {"reset"}
        assert bad["agreement"]["by_device"][serial]["rate"] == 1.0
    res = runner.invoke(app, ["validate-devices", "--tasks", "no.such/0", "--serial", "x", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "no.such" in res.output
    res = runner.invoke(app, ["validate-devices", "--tasks", "all", "--serial", "x", "--serial", "x", "--out", "o"])
    assert res.exit_code == 2 and "twice" in res.output
