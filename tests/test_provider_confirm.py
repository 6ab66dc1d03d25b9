"""The ``user.confirm`` provider (phoneenv.harness.providers.confirm): the user's answer, and the
confirmation one sensitive call needs under ``confirm_sensitive``."""

from __future__ import annotations

import json
from types import SimpleNamespace

from phoneenv.contract import Effect
from phoneenv.env import PhonePlanEnv
from phoneenv.harness.providers.confirm import CONFIRM_TOOL, Confirm
from phoneenv.tasks import get_task
from phoneenv.tasks.verify import confirmed_by

TASK = "calendar.delete_event/2"  # confirm_sensitive, no step-up


def _fake_env(**fixtures):
    task = get_task(TASK)
    return SimpleNamespace(task=task.model_copy(update={"fixtures": task.fixtures.model_copy(update=fixtures)}))


def test_gate_needs_one_confirmation_per_sensitive_call():
    env, p = _fake_env(), Confirm()
    p.reset(env, None)
    spec = SimpleNamespace(name="calendar.delete_event", effect=Effect.SENSITIVE)
    refused = p.gate(env, spec)
    assert refused is not None and refused.error.value == "confirmation_required"
    fb = p.call(env, "user.confirm", {"question": "Delete it?"})
    assert fb.ok and fb.result == {"confirmed": True, "reply": "Yes, go ahead."}
    assert confirmed_by("user.confirm", fb)
    assert p.gate(env, spec) is None
    p.ran(env, spec)  # the confirmation is spent on the call that ran
    assert p.gate(env, spec) is not None
    p.call(env, "user.confirm", {"question": "Delete it?"})
    p.reset(env, None)  # a new episode starts unconfirmed
    assert p.gate(env, spec) is not None


def test_user_who_declines_and_fixtures_without_confirmation():
    env, p = _fake_env(user_confirms=False), Confirm()
    p.reset(env, None)
    fb = p.call(env, "user.confirm", {"question": "Pay?"})
    assert fb.result["confirmed"] is False and not confirmed_by("user.confirm", fb)
    assert p.gate(env, SimpleNamespace(name="x.pay", effect=Effect.SENSITIVE)) is not None
    lax = _fake_env(confirm_sensitive=False)
    p.reset(lax, None)
    assert p.gate(lax, SimpleNamespace(name="x.pay", effect=Effect.SENSITIVE)) is None
    assert p.offer(lax, {}) == {"user.confirm": CONFIRM_TOOL}


def test_in_the_env_a_sensitive_call_waits_for_the_user():
    env = PhonePlanEnv(task=TASK)
    env.reset(seed=0)

    def step(name, **arguments):
        obs, *_ = env.step(json.dumps({"name": name, "arguments": arguments}))
        return json.loads(obs["feedback"])

    assert step("calendar.delete_event", event_id="ev_1")["error"] == "confirmation_required"
    assert step("user.confirm", question="Delete the meeting?")["result"]["confirmed"] is True
    assert step("calendar.delete_event", event_id="ev_1")["ok"] is True
    assert step("messages.send", to="+4917681651160", body="cancelled")["error"] == "confirmation_required"
