"""What every runner of episodes shares (:mod:`phoneenv.evaluation`): a try on a leased device
(:func:`try_on_device`), the episode its tries make (:class:`DeviceTries`) and the ledger that
writes, reports and judges (:class:`RunLedger`). Local pools and Ray both use these; the farm
tests (``test_farm_pool.py``, ``test_farm_ray.py``) play them end to end."""

from __future__ import annotations

import pytest

from agents.reference import ReferenceAgent
from phoneenv.contract import Trace
from phoneenv.errors import InfrastructureError
from phoneenv.evaluation import DeviceTries, DeviceTry, EpisodeResult, RunLedger, infra_result, try_on_device
from phoneenv.tasks import get_task

TASK = get_task("clock.alarm_off/0")


def _played(success: bool, wall: float, infra: str | None = None) -> tuple[EpisodeResult, Trace]:
    res = EpisodeResult(TASK.id, TASK.category.value, TASK.domain.value, success, 1.0 if success else 0.0, 2, 0,
                        infra is not None, 0, wall, None, 0, infra)  # fmt: skip
    trace = Trace(task_id=TASK.id, seed=0, backend="device", category=TASK.category, domain=TASK.domain,
                  goal=TASK.goal, agent="reference")  # fmt: skip
    return res, trace


def test_tries_make_one_episode_with_every_try_in_its_trace():
    tries = DeviceTries(TASK, 0, "reference")
    tries.add("emulator-5554", "t1", DeviceTry(infra_result(TASK, 0, "device", 1.5), None, "device: gone"))
    lost, lost_trace = _played(False, 2.0, "device")
    tries.add("emulator-5556", "t2", DeviceTry(lost, lost_trace, "step 1: device_error: adb closed"))
    ok, ok_trace = _played(True, 3.0)
    tries.add("emulator-5558", "t3", DeviceTry(ok, ok_trace, None))
    res, trace = tries.outcome()
    assert res is ok and res.success and res.device == "emulator-5558"
    assert (res.attempts, res.time_lost_s) == (3, 3.5)
    assert [(a.device, a.failure, a.kind) for a in trace.attempts] == [
        ("emulator-5554", "device: gone", "device"),
        ("emulator-5556", "step 1: device_error: adb closed", "device"),
        ("emulator-5558", None, None),
    ]


def test_every_try_lost_is_an_infrastructure_error_and_no_try_is_a_trace_of_tries():
    tries = DeviceTries(TASK, 0, "reference")
    played, trace = _played(True, 2.0)  # it ran, then the device failed under it
    tries.add("s1", "t1", DeviceTry(played, trace, "step 3: device_error: gone"))
    res, _ = tries.outcome()
    assert res.infrastructure_error and not res.success and res.infrastructure_kind == "device"
    nothing = DeviceTries(TASK, 7, "reference")
    nothing.add("s2", "t1", DeviceTry(infra_result(TASK, 7, "timeout", 4.0), None, "timeout: no answer"))
    nothing.no_device()
    res, trace = nothing.outcome()
    assert (res.infrastructure_kind, res.wall_s, res.device, res.steps, res.seed) == ("pool", 4.0, "s2", 0, 7)
    assert trace.steps == [] and [a.device for a in trace.attempts] == ["s2"]


def test_a_try_lost_at_reset_drops_its_env_and_a_good_one_keeps_it():
    from phoneenv.env import PhonePlanEnv

    dropped: list[str] = []

    def refuse():
        raise InfrastructureError("adb: device offline", kind="device")

    one = try_on_device(ReferenceAgent(), refuse, lambda: dropped.append("x"), TASK, 0)
    assert one.trace is None and one.failure == "device: adb: device offline" and dropped == ["x"]
    assert one.result.infrastructure_error and one.result.infrastructure_kind == "device"
    env = PhonePlanEnv(tasks=[TASK], backend="sandbox")
    good = try_on_device(ReferenceAgent(), lambda: env, lambda: dropped.append("y"), TASK, 0)
    assert good.failure is None and good.result.success and good.trace is not None and dropped == ["x"]


def test_the_ledger_stops_after_n_infrastructure_errors_in_a_row(tmp_path):
    reported: list[str] = []
    ledger = RunLedger(tmp_path, 0, lambda r: reported.append(r.task_id), max_consecutive_infra=2, infra_retry=None)
    ok, trace = _played(True, 1.0)
    ledger.reporter.add(ok, ledger.write(TASK, trace))
    assert ledger.judge(TASK, ok, None, last=False) == 0.0
    bad = infra_result(TASK, 0, "server_error")
    ledger.judge(TASK, bad, None, last=False)
    with pytest.raises(InfrastructureError, match=r"2 episodes in a row.*server_error") as info:
        ledger.judge(TASK, bad, None, last=False)
    assert info.value.kind == "server_error"
    ledger.finish_writes(quiet=False)
    assert reported == [TASK.id] and (tmp_path / "clock.alarm_off-0.jsonl").is_file()
