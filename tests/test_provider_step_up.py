"""The step-up provider (phoneenv.harness.providers.step_up): ``user.authenticate`` offered only
under ``step_up``, and one authentication per sensitive call."""

from __future__ import annotations

import json
from types import SimpleNamespace

from phoneenv.contract import Effect
from phoneenv.env import PhonePlanEnv
from phoneenv.harness.providers.step_up import AUTHENTICATE_TOOL, StepUp
from phoneenv.tasks import get_task

TASK = "contacts.delete_contact/1"  # confirm_sensitive and step_up
SPEC = SimpleNamespace(name="contacts.delete", effect=Effect.SENSITIVE)


def _fake_env(**fixtures):
    task = get_task(TASK)
    return SimpleNamespace(task=task.model_copy(update={"fixtures": task.fixtures.model_copy(update=fixtures)}))


def test_offered_and_gating_only_under_step_up():
    p = StepUp()
    on, off = _fake_env(), _fake_env(step_up=False)
    assert p.offer(on, {}) == {"user.authenticate": AUTHENTICATE_TOOL} and p.offer(off, {}) == {}
    assert p.offer_key(on) != p.offer_key(off)  # the env rebuilds its tool list between them
    p.reset(off, None)
    assert p.gate(off, SPEC) is None
    p.reset(on, None)
    refused = p.gate(on, SPEC)
    assert refused is not None and refused.error.value == "precondition_failed" and "contacts.delete" in refused.message
    assert p.call(on, "user.authenticate", {"reason": "delete"}).result == {"authenticated": True}
    assert p.gate(on, SPEC) is None
    p.ran(on, SPEC)
    assert p.gate(on, SPEC) is not None


def test_user_who_does_not_authenticate():
    env, p = _fake_env(user_authenticates=False), StepUp()
    p.reset(env, None)
    fb = p.call(env, "user.authenticate", {"reason": "delete"})
    assert not fb.ok and fb.error.value == "precondition_failed" and "did not authenticate" in fb.message
    assert p.gate(env, SPEC) is not None


def test_a_refused_step_up_keeps_the_confirmation():
    env = PhonePlanEnv(task=TASK)
    env.reset(seed=0)
    assert "user.authenticate" in [t["function"]["name"] for t in env.tools]

    def step(name, **arguments):
        obs, *_ = env.step(json.dumps({"name": name, "arguments": arguments}))
        return json.loads(obs["feedback"])

    step("user.confirm", question="Delete Zoe?")
    assert "authenticate" in step("contacts.delete", contact_id="c_14")["hint"]
    step("user.authenticate", reason="Delete Zoe")
    assert step("contacts.delete", contact_id="c_14")["ok"] is True  # the confirmation was not spent
    assert step("contacts.delete", contact_id="c_13")["error"] == "confirmation_required"
    assert "user.authenticate" not in [
        t["function"]["name"] for t in PhonePlanEnv(task="calendar.delete_event/2").tools
    ]
