"""Apps kept outside the package join it through ``PHONEENV_APPS_PATH`` (``tests/plugin_app``,
copied to a temporary folder), with nothing in ``phoneenv/`` or ``apps/`` touched.

A plain module is an app (``parking.py``): its tool is offered, runs, bounds its arguments,
renders, and a task over its table is verified like any other. An app folder (``plants/``)
ships tasks and skills too: its ``templates.py`` joins the suite, its tasks are proved and played
to success by the reference agent, and its ``skills/`` join the shipped skills.
``apps.add_path`` does at run time what the variable does at import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import waiting

ROOT = Path(__file__).resolve().parents[1]
APP = Path(__file__).with_name("plugin_app") / "parking.py"
FOLDER = Path(__file__).with_name("plugin_app") / "plants"

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


SHIP = r"""
import json
from agents.reference import ReferenceAgent
from apps import app_folders, template_modules
from phoneenv.evaluation import run_episodes
from phoneenv.harness.skills import load_skills
from phoneenv.tasks import get_task, load_suite, select
from phoneenv.tasks.validate import prove

tasks = select("template:plants.water")
out = {
    "folder": "plants" in app_folders(),
    "module": "apps.plants.templates" in template_modules(),
    "ids": [t.id for t in tasks],
    "in_suite": sum(t.template == "plants.water" for t in load_suite(generated=False)),
    "fast": get_task("plants.water/1").goal,
    "proved": [prove(t).ok for t in tasks],
    "played": [r.success for r in run_episodes(ReferenceAgent(), tasks)],
    "skill": load_skills()["water-a-plant"].tools,
}
print(json.dumps(out))
"""


def _run(folder: Path, code: str = PLAY, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PHONEENV_APPS_PATH": str(folder), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, *(args or ("-c", code))]
    return waiting.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)


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
    assert "plants" not in APP_CLASSES and not (ROOT / "apps" / "plants").exists()


def test_an_app_named_like_a_shipped_one_is_refused(tmp_path):
    (tmp_path / "notes2.py").write_text(APP.read_text().replace('name = "parking"', 'name = "notes"'))
    res = _run(tmp_path)
    assert res.returncode != 0 and "two apps named 'notes'" in res.stderr


def test_an_app_folder_outside_the_package_ships_its_tasks_and_skills(tmp_path):
    shutil.copytree(FOLDER, tmp_path / "plants", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(APP, tmp_path / "parking.py")  # a module beside a folder: both are apps
    res = _run(tmp_path, SHIP)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["folder"] and out["module"]
    assert out["ids"] == [f"plants.water/{k}" for k in range(4)] and out["in_suite"] == 4
    assert out["fast"] == "Water the basil in the kitchen."
    assert out["proved"] == [True] * 4 and out["played"] == [True] * 4
    assert out["skill"] == ["plants.water"]
    listed = _run(tmp_path, "", "-m", "phoneenv", "tasks", "list", "template:plants.water")
    assert listed.returncode == 0 and "plants.water/3" in listed.stdout, listed.stderr[-2000:]
    proved = _run(tmp_path, "", "-m", "phoneenv", "tasks", "validate", "plants.water/0")
    assert proved.returncode == 0 and "1/1 tasks proven" in proved.stdout, proved.stdout[-2000:]


ADD = r"""
import json, sys
import apps
from phoneenv.tasks import select

before = "plants" in apps.APP_CLASSES
try:
    select("template:plants.water")
    missing = False
except ValueError:
    missing = True
apps.add_path(sys.argv[1])
again = apps.add_path(sys.argv[1])  # twice: nothing more
print(json.dumps({"before": before, "missing": missing, "after": "plants" in apps.APP_CLASSES,
                  "same": again is apps.APP_CLASSES, "tasks": len(select("template:plants.water"))}))
"""


def test_add_path_adds_an_app_folder_at_run_time(tmp_path):
    shutil.copytree(FOLDER, tmp_path / "plants", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PHONEENV_APPS_PATH"} | {"PYTHONPATH": str(ROOT)}
    res = waiting.run([sys.executable, "-c", ADD, str(tmp_path)], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out == {"before": False, "missing": True, "after": True, "same": True, "tasks": 4}


def test_add_path_refuses_a_missing_folder_and_a_second_app_of_a_name(tmp_path):
    import apps

    with pytest.raises(NotADirectoryError):
        apps.add_path(tmp_path / "nowhere")
    (tmp_path / "notes2.py").write_text(APP.read_text().replace('name = "parking"', 'name = "notes"'))
    paths = list(apps.__path__)
    with pytest.raises(TypeError, match="two apps named 'notes'"):
        apps.add_path(tmp_path)
    assert list(apps.__path__) == paths and "parking" not in apps.APP_CLASSES


def test_an_apps_path_entry_that_is_no_folder_is_said_not_skipped_silently(tmp_path):
    import os
    import sys

    env = {**os.environ, "PHONEENV_APPS_PATH": str(tmp_path / "typo")}
    res = waiting.run([sys.executable, "-c", "import apps; print(len(apps.APP_CLASSES))"], env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "PHONEENV_APPS_PATH names" in res.stderr and "typo" in res.stderr and "not a folder" in res.stderr
    assert int(res.stdout) >= 22
