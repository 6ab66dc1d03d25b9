"""The hybrid backend's reset and verification cost what the episode touched, as the sandbox's
do: its frozen tables share the sandbox's copy-on-write tables (no copy of every record), and a
reset that changes nothing keeps its tool map, so the env's tool and secret caches hold."""

from __future__ import annotations

import json

from phoneenv import intake
from phoneenv.backends import make_backend
from phoneenv.env import PhonePlanEnv
from phoneenv.tasks import get_task

TASK = "messages.last_texter/0"


def test_frozen_tables_share_the_sandbox_tables_and_stay_frozen():
    b = make_backend("hybrid")
    b.reset(get_task(TASK))
    frozen = b.frozen_tables()
    live = b.sandbox.phone.state.tables
    assert frozen["contacts.contacts"] is live["contacts.contacts"]  # shared, not copied
    before = {rid: dict(rec) for rid, rec in frozen["contacts.contacts"].items()}
    fb = b.call(
        "contacts.create", b.tools()["contacts.create"].validator.validate({"name": "Zoe Q", "phone": "+4930111"})
    )
    assert fb.ok, fb
    assert b.tables()["contacts.contacts"] is not frozen["contacts.contacts"]  # the write copied it
    assert frozen["contacts.contacts"] == before  # and the frozen view did not move
    assert len(b.tables()["contacts.contacts"]) == len(before) + 1


def test_a_reset_that_changes_nothing_keeps_the_tool_map_and_the_secret_scan(monkeypatch):
    calls = []
    real = intake.fixture_secrets
    monkeypatch.setattr(intake, "fixture_secrets", lambda fx: calls.append(fx) or real(fx))
    monkeypatch.setattr(intake, "_secrets_of", {})  # nothing kept from other tests
    monkeypatch.setattr(intake, "_maskers", {})
    env = PhonePlanEnv(task=TASK, backend="hybrid")
    env.reset()
    tools = env.backend.tools()
    for _ in range(3):
        env.reset()
        assert env.backend.tools() is tools
    assert len(calls) == 1  # the fixtures' secrets are scanned once, not at every reset


def test_a_hybrid_episode_is_still_judged_on_what_changed():
    """The reference plan succeeds and finishing at once fails, through the shared tables."""
    env = PhonePlanEnv(task=TASK, backend="hybrid")
    for play_plan, want in ((True, 1.0), (False, 0.0)):
        env.reset()
        reward, done = 0.0, False
        for c in env.task.reference_plan if play_plan else ():
            _, reward, done, _, _ = env.step(json.dumps({"name": c.name, "arguments": c.arguments}))
        if not done:
            _, reward, done, _, _ = env.step(json.dumps({"name": "finish", "arguments": {"answer": ""}}))
        assert done and reward == want, play_plan
