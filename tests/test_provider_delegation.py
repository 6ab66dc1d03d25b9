"""The delegation provider (phoneenv.harness.providers.delegation): when ``agent.delegate`` is
offered, and that its call opens a frame on the env's stack."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from phoneenv.env import PhonePlanEnv
from phoneenv.frames import DELEGATE_TOOL
from phoneenv.harness.providers.delegation import Delegation
from phoneenv.tasks import get_task

SUB = "subagent.best_offer_reply/0"  # lists the agent app
PLAIN = "contacts.favorite/0"


@pytest.mark.parametrize(
    ("on", "task", "offered"),
    [(None, SUB, True), (None, PLAIN, False), (True, PLAIN, True), (False, SUB, False)],
)
def test_offered_as_the_setting_and_the_task_say(on, task, offered):
    env = SimpleNamespace(task=get_task(task))
    p = Delegation(on)
    assert p.offer_key(env) is offered
    assert p.offer(env, {}) == ({"agent.delegate": DELEGATE_TOOL} if offered else {})
    names = [t["function"]["name"] for t in PhonePlanEnv(task=task, delegation=on).tools]
    assert ("agent.delegate" in names) is offered


def test_the_call_opens_a_frame_and_bad_names_are_arguments_errors():
    env = PhonePlanEnv(task=PLAIN, delegation=True)
    env.reset(seed=0)
    p = next(p for p in env.providers if isinstance(p, Delegation))
    bad = p.call(env, "agent.delegate", {"goal": "x", "tools": ["nosuchapp"]})
    assert bad.error.value == "invalid_arguments" and bad.path == "/tools/0"
    fb = p.call(env, "agent.delegate", {"goal": "Find Ana", "tools": ["contacts"]})
    assert fb.ok and fb.result["frame"] == "main.1" and env.frames.active.id == "main.1"
    obs, *_ = env.step(json.dumps({"name": "messages.send", "arguments": {"to": "+1", "body": "hi"}}))
    assert json.loads(obs["feedback"])["error"] == "precondition_failed"  # outside the child's tools
