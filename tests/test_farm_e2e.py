"""The farm end to end, the parts together: `phoneenv farm up --local` workers behind the real adb
server, `phoneenv eval --farm` in its own process while a worker is SIGKILLed (healed by the
pool's real restart step, the farm file's `phoneenv farm restart` argv), the same farm under
`eval --ray`, and `phoneenv validate-devices` on two of its workers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("adbutils", reason="the farm needs adbutils (pip install -e '.[device]')")
pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")

from phoneenv.farm.pool import FarmFile, HealthPolicy
from tests import waiting
from tests.adb import clean_env
from tests.test_farm_cli import _pid_running, farm_up_local
from tests.test_farm_pool import TEMPLATES

ROOT = Path(__file__).resolve().parents[1]

# Local workers come back in seconds: the connection steps get a few seconds each (a killed
# worker refuses every connection), and the restart step (the farm file's `phoneenv farm restart`
# argv: a new Python process that starts a new worker) its default time.
# On a loaded machine a healthy worker answers its shell later and a restarted one (a new Python
# process) comes up later: those two scale. The connection steps do not: they retry until their
# deadline against a killed worker, so a longer one only delays the restart that heals it.
_F = waiting.time_factor()
LOCAL_HEALTH = HealthPolicy(
    shell_deadline_s=3.0 * _F,
    min_free_mb=64,
    deadlines={"reconnect": 2.0, "reattach": 2.0, "reboot": 2.0, "restart": 120.0 * _F},
    poll_s=0.2,
)


def task_ids(per_template: int) -> list[str]:
    """The first ``per_template`` tasks of each of twelve adb-runnable Tool templates, in
    rounds (``a/0, b/0, ..., a/1, b/1, ...``)."""
    return [f"{name}/{i}" for i in range(per_template) for name in TEMPLATES]


def phoneenv_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "phoneenv", *args]


def subprocess_env() -> dict[str, str]:
    """This checkout first on PYTHONPATH; no ADB_*/ANDROID_* variables (the farm file names its
    adb server)."""
    env = clean_env()
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["COLUMNS"] = "200"
    return env


def with_health(path: Path, policy: HealthPolicy) -> None:
    """Give the farm file ``path`` a ``health`` policy (read by the pool of `eval --farm`)."""
    farm = FarmFile.load(path)
    farm.health = policy
    farm.dump(path)


def results_of(run: Path) -> list[dict]:
    path = run / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for_results(run: Path, n: int, proc: subprocess.Popen, timeout: float = 120.0) -> list[dict]:
    """Wait until the run in ``run`` has at least ``n`` results (polled every 10 ms)."""
    deadline = time.monotonic() + waiting.scaled(timeout)
    while time.monotonic() < deadline:
        rows = results_of(run)
        if len(rows) >= n:
            return rows
        if proc.poll() is not None:
            raise AssertionError(f"eval exited with {proc.returncode} after {len(rows)} results")
        time.sleep(0.01)
    raise AssertionError(f"eval wrote no {n} results in {timeout} s")


@pytest.mark.slow
def test_eval_on_a_farm_heals_a_killed_worker_with_its_restart_argv(adb_server, tmp_path):
    """Three `farm up --local` workers; `phoneenv eval --farm` (its own process) over 36 tasks;
    the worker of the second episode is SIGKILLed during it. The lost try is re-run on another
    device, the pool heals the worker with the farm file's restart argv (`phoneenv farm
    restart`), and the restarted worker plays episodes (checked in a second eval on the same
    farm: in the first, under load, the heal can end after its last episode). Every task is
    scored exactly once.
    (The kill is timed 50 ms after the first result; where load delays episode 2's health check past
    it, the check finds the dead worker first and no try is lost: the heal is checked either way, the
    re-run on a quiet machine, and in-process by tests/test_farm_pool.py.)"""
    ids = task_ids(3)
    with farm_up_local(adb_server, tmp_path / "farm.json", 3) as (path, data):
        with_health(path, LOCAL_HEALTH)
        devices = [d["serial"] for d in data["devices"]]
        victim = data["devices"][1]  # the pool lends its devices in farm order first: episode 2's
        run = tmp_path / "run"
        proc = subprocess.Popen(
            phoneenv_cmd("eval", "--agent", "reference", "--farm", str(path), "--tasks", ",".join(ids), "--out",
                         str(run)),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=subprocess_env(),
        )  # fmt: skip
        try:
            first = wait_for_results(run, 1, proc)
            assert first[0]["device"] == devices[0]
            time.sleep(0.05)  # past episode 2's health check (a few ms), inside its reset and steps
            os.kill(victim["worker"]["pid"], signal.SIGKILL)
            killed_at = len(results_of(run))
            output, _ = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 0, output
        after = json.loads(path.read_text())
        new_pid = after["devices"][1]["worker"]["pid"]
        # the restarted worker plays episodes: in this run when the heal ended before its last
        # episode (under load a restart can take longer than the 35 episodes left), and in a
        # second eval on the same farm, whose pool lends the least recently used device first
        again = tmp_path / "again"
        eval_on_farm(path, again, ids[:3])
        worker_log = Path(victim["worker"]["log"]).read_text()

    # every task scored exactly once, each a success
    rows = results_of(run)
    assert killed_at == 1, "the worker was killed after episode 2 had ended"
    assert sorted(r["task_id"] for r in rows) == sorted(ids) and len(rows) == len(ids)
    assert all(r["success"] and not r["infrastructure_error"] for r in rows), rows
    # the second episode lost its first try to the killed worker and was played again elsewhere;
    # on a loaded machine the kill can land before episode 2's health check has passed, and then the
    # check finds the dead worker, the pool heals it, and no try is lost: the same heal, no re-run.
    lost = [r for r in rows if r["attempts"] > 1]
    rerun = bool(lost)
    if rerun:
        assert [r["task_id"] for r in lost] == [ids[1]] and lost[0]["attempts"] == 2
        trace = json.loads(Path(lost[0]["trace_path"]).read_text())
        gone, kept = trace["attempts"]
        assert (
            gone["device"] == victim["serial"]
            and gone["failure"]
            # "world": the worker died during the last step's verification, so the episode ended
            # (terminated) with an infrastructure verdict rather than a step's device fault
            and gone["kind"] in ("reset", "device", "device_error", "connection", "timeout", "world")
        )
        assert kept["device"] != victim["serial"] and kept["failure"] is None
        assert trace["verdict"]["success"]
    # healed by the real restart step: a new worker process on the same serial, which the farm
    # file records, and which played episodes after the kill
    assert new_pid != victim["worker"]["pid"] and _pid_running(new_pid) is False  # farm down stopped it
    assert worker_log.count("serving ") == 2
    served_again = [r for r in results_of(again) if r["device"] == victim["serial"]]
    assert served_again and all(r["success"] for r in served_again), [r["device"] for r in results_of(again)]
    board = json.loads((run / "scoreboard.json").read_text())
    farm = board["farm"]
    assert farm["attempts"] == len(ids) + rerun and farm["retries"] == rerun
    assert farm["time_lost_s"] > 0 or not rerun
    assert farm["retired"] == {} and farm["quarantined"] == {}
    assert farm["recoveries"]["restart"] == {"tried": 1, "healed": 1, "failed": 0, "skipped": 0}
    for step in ("reconnect", "reattach", "reboot"):
        assert farm["recoveries"][step]["healed"] == 0, farm["recoveries"]
    assert sum(farm["devices"].values()) == len(ids) and set(devices) - set(farm["devices"]) <= {victim["serial"]}
    text = " ".join(output.split())
    if rerun:
        assert f"farm: {len(ids) + 1} tries, 1 re-run on another device" in text
    assert "recovery steps (healed/tried): reconnect 0/1, reattach 0/1, reboot 0/1, restart 1/1" in text


def eval_on_farm(path: Path, out: Path, ids: list[str], *extra: str, timeout: float = 300.0) -> str:
    """`phoneenv eval --agent reference --farm FILE --tasks IDS --out OUT [extra]` in its own
    process; its output (asserting exit code 0)."""
    done = waiting.run(
        phoneenv_cmd("eval", "--agent", "reference", "--farm", str(path), "--tasks", ",".join(ids), "--out", str(out),
                     *extra),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=subprocess_env(), timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_eval_on_ray_over_a_farm_equals_the_single_process_run(adb_server, tmp_path):
    """`phoneenv eval --ray --workers 2 --farm FILE` (a local Ray started by the command) on two
    `farm up --local` workers: the same success per task as `eval --farm` in one process, every
    trace written by the driver into the run folder, the farm block present with the episodes
    per device."""
    pytest.importorskip("ray", reason="eval --ray needs ray (pip install -e '.[ray]')")
    ids = task_ids(1)
    with farm_up_local(adb_server, tmp_path / "farm.json", 2) as (path, data):
        devices = sorted(d["serial"] for d in data["devices"])
        eval_on_farm(path, tmp_path / "one", ids)
        output = eval_on_farm(path, tmp_path / "ray", ids, "--ray", "--workers", "2")
    one, ray = results_of(tmp_path / "one"), results_of(tmp_path / "ray")
    assert sorted(r["task_id"] for r in ray) == sorted(ids)
    assert {r["task_id"]: r["success"] for r in ray} == {r["task_id"]: r["success"] for r in one}
    assert all(r["success"] for r in one)
    for r in ray:
        trace = Path(r["trace_path"])
        assert trace.parent == tmp_path / "ray" / "traces" and json.loads(trace.read_text())["task_id"] == r["task_id"]
        assert r["device"] in devices and r["attempts"] == 1
    board = json.loads((tmp_path / "ray" / "scoreboard.json").read_text())
    assert board["farm"] is not None and board["farm"]["attempts"] == len(ids) and board["farm"]["retries"] == 0
    assert sorted(board["farm"]["devices"]) == devices and sum(board["farm"]["devices"].values()) == len(ids)
    assert board["farm"]["retired"] == {}
    assert f"farm: {len(ids)} tries, 0 re-run" in " ".join(output.split())


@pytest.mark.slow
def test_validate_devices_on_two_farm_workers_agrees_everywhere(adb_server, tmp_path):
    """`phoneenv validate-devices --serial A --serial B` (its own process) on two `farm up --local`
    workers: every episode, criterion and step of both devices agrees with the sandbox."""
    ids = task_ids(1)[:6]
    out = tmp_path / "validate"
    with farm_up_local(adb_server, tmp_path / "farm.json", 2) as (_, data):
        serials = [d["serial"] for d in data["devices"]]
        done = waiting.run(
            phoneenv_cmd("validate-devices", "--tasks", ",".join(ids), "--serial", serials[0], "--serial", serials[1],
                         "--adb-port", str(adb_server.port), "--timeout-s", "10", "--out", str(out)),
            stdin=subprocess.DEVNULL, capture_output=True, text=True, env=subprocess_env(), timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text())
    a = report["agreement"]
    assert report["devices"] == serials and report["differences"] == []
    assert a["episodes"] == {"compared": 2 * len(ids), "agreed": 2 * len(ids), "rate": 1.0}
    assert a["by_device"] == {s: {"compared": len(ids), "agreed": len(ids), "rate": 1.0} for s in serials}
    assert a["steps"]["rate"] == 1.0 and a["steps"]["compared"] >= 2 * 2 * len(ids)
    assert a["criteria"]["rate"] == 1.0 and a["criteria"]["compared"] >= 2 * len(ids)
    played = {(e["task"], e["device"]) for e in report["episodes"]}
    assert played == {(t, s) for t in ids for s in serials}
    for e in report["episodes"]:
        trace = json.loads((out / e["traces"]["device"]).read_text())
        assert trace["backend"] == "device" and trace["verdict"]["success"], e
    assert f"episodes: 100.0% agree ({2 * len(ids)}/{2 * len(ids)})" in done.stdout


def test_farm_summary_names_the_recovery_steps_tried():
    from phoneenv.farm.pool import farm_summary

    farm = {
        "attempts": 5, "retries": 1, "time_lost_s": 0.25, "devices": {"a:1": 3, "a:2": 2},
        "retired": {"a:3": "adb state is offline"}, "quarantined": {},
        "recoveries": {"reconnect": {"tried": 2, "healed": 1}, "reattach": {"tried": 0, "healed": 0},
                       "reboot": {"tried": 1, "healed": 0}, "restart": {"tried": 1, "healed": 1}},
    }  # fmt: skip
    assert farm_summary(farm).splitlines() == [
        "farm: 5 tries, 1 re-run on another device, 0.2 s lost to failed devices",
        "episodes per device: a:1 (3), a:2 (2)",
        "recovery steps (healed/tried): reconnect 1/2, reboot 0/1, restart 1/1",
        "retired a:3: adb state is offline",
    ]
    assert farm_summary(None) is None
