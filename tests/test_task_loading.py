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
