"""Adding an app is one module: an app kept in a folder of its own (``tests/plugin_app``, copied
to a temporary folder) joins the sandbox through ``PHONEENV_APPS_PATH``, with nothing in
``phoneenv/`` or ``apps/`` touched: its tool is offered, runs, bounds its arguments, renders, and a task
over its table is verified like any other."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = Path(__file__).with_name("plugin_app") / "parking.py"

PLAY = r"""
import json
from phoneenv.contract import StateCriterion, TaskSpec
from phoneenv.env import PhonePlanEnv

task = TaskSpec(
    id="parking.pay/0", domain="device", goal="Pay for an hour of parking in zone A.", apps=["parking"],
    criteria=[StateCriterion(table="parking.tickets", where={"zone": "A", "minutes": 60}, change="created", count=1)],
)
env = PhonePlanEnv(task=task, screenshots=True)
out = {}
for name, minutes in (("right", 60), ("wrong", 30)):
    obs, info = env.reset(seed=0)
    out["offered"] = "parking.pay" in [t["function"]["name"] for t in info["tools"]]
    obs, *_ = env.step({"name": "parking.pay", "arguments": {"zone": "A", "minutes": minutes}})
    out[name + "_feedback"] = json.loads(obs["feedback"])
    out["screenshot"] = list(obs["screenshot"].shape)
    *_, info = env.step({"name": "finish", "arguments": {"answer": "paid"}})
    out[name] = info["success"]
env.reset(seed=0)
obs, *_ = env.step({"name": "parking.pay", "arguments": {"zone": "A", "minutes": 5}})
out["bounded"] = json.loads(obs["feedback"]).get("error")
print(json.dumps(out))
"""


def _run(folder: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PHONEENV_APPS_PATH": str(folder), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", PLAY], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_an_app_from_its_own_folder_joins_the_sandbox(tmp_path):
    shutil.copy(APP, tmp_path / "parking.py")
    res = _run(tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["offered"] is True
    assert out["right_feedback"] == {"ok": True, "result": {"id": "t_1", "zone": "A", "minutes": 60}}
    assert (out["right"], out["wrong"]) == (True, False)
    assert out["screenshot"] == [640, 360, 3]
    assert out["bounded"] == "invalid_arguments"  # 5 minutes is under the schema's 15


def test_the_app_is_not_there_without_its_folder():
    from apps import APP_CLASSES

    assert "parking" not in APP_CLASSES and not (ROOT / "apps" / "parking.py").exists()


def test_an_app_named_like_a_shipped_one_is_refused(tmp_path):
    (tmp_path / "notes2.py").write_text(APP.read_text().replace('name = "parking"', 'name = "notes"'))
    res = _run(tmp_path)
    assert res.returncode != 0 and "two apps named 'notes'" in res.stderr
