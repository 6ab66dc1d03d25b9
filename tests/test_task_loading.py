"""One task without the whole suite: a template task's id, a ``template:`` or an ``app:``
selector builds only what it names, and gives the very tasks the full suite holds."""

from __future__ import annotations

import json
import re
import sys

import pytest

from phoneenv.tasks import load_suite, select
from tests import waiting

IDS = ["clock.set_alarm/0", "wallet.pay_bill/3", "memory.recall_answer/5", "cross.sms_event_location/8"]

FRESH = """
import json, sys
from phoneenv import tasks
from phoneenv.tasks import get_task, select
out = {i: get_task(i).model_dump_json() for i in sys.argv[1:]}
out["template"] = [t.id for t in select("template:clock.set_alarm")]
out["app"] = [t.id for t in select("app:weather")]
out["built"] = tasks._templates.cache_info().currsize
print(json.dumps(out))
"""


def test_a_task_built_alone_is_the_suites_task_and_builds_nothing_else():
    proc = waiting.run([sys.executable, "-c", FRESH, *IDS], capture_output=True, text=True, timeout=300, check=True)
    fresh = json.loads(proc.stdout)
    suite = {t.id: t for t in load_suite(generated=False)}
    for i in IDS:
        assert fresh[i] == suite[i].model_dump_json(), i
    assert fresh["template"] == [t.id for t in suite.values() if t.template == "clock.set_alarm"]
    assert fresh["app"] == [t.id for t in suite.values() if "weather" in t.apps]
    assert fresh["built"] == 0  # the whole suite was never built


def test_selectors_agree_once_the_suite_is_built():
    load_suite()
    assert [t.id for t in select("template:clock.set_alarm")][:2] == ["clock.set_alarm/0", "clock.set_alarm/1"]
    assert select("clock.set_alarm/0")[0] is select("clock.set_alarm/0")[0]
    with pytest.raises(KeyError, match=re.escape("no task 'clock.set_alarm/99'")):
        select("clock.set_alarm/99")


def test_an_instance_beyond_the_suite_is_built_on_demand_and_is_in_no_suite() -> None:
    """``template/extra-k`` (k ≥ the template's count) is the template's instance k, built by
    the template with its own seed; suite selectors never list it, and a suite index is refused."""
    import gymnasium as gym

    from phoneenv.tasks import extra_task_id, get_task
    from phoneenv.tasks.templates import all_templates

    tpl = all_templates()["notes.delete_note"]
    assert tpl.count == 8
    task_id = extra_task_id("notes.delete_note", 12)
    assert task_id == "notes.delete_note/extra-12"
    task = get_task(task_id)
    built = tpl.task(12)
    assert task.id == task_id and task.seed == built.seed == tpl.seed(12)
    assert task.model_dump(exclude={"id"}) == built.model_dump(exclude={"id"})
    # its own world: a seed no suite instance of the template has
    assert task.seed not in {t.seed for t in select("template:notes.delete_note")}
    assert task_id not in {t.id for t in select("template:notes.delete_note")}
    assert task_id not in {t.id for t in load_suite()}
    assert select(task_id)[0].id == task_id  # an exact id selects it, as get_task does
    env = gym.make("PhonePlan-v0", task=task_id)
    env.reset(seed=0)
    for call in task.reference_plan:
        *_, info = env.step({"name": call.name, "arguments": call.arguments})
    assert info["verdict"]["success"] is True
    with pytest.raises(ValueError, match=re.escape("notes.delete_note/3 is in the suite (instances 0..7)")):
        extra_task_id("notes.delete_note", 3)
    with pytest.raises(KeyError, match=re.escape("unknown template 'notes.no_such'")):
        extra_task_id("notes.no_such", 12)
    with pytest.raises(KeyError, match=re.escape("no task 'notes.delete_note/extra-3'")):
        get_task("notes.delete_note/extra-3")
