"""The ``finish`` provider (phoneenv.harness.providers.finish): it ends the episode at the root
and closes a sub-agent frame elsewhere."""

from __future__ import annotations

import json

from phoneenv.env import PhonePlanEnv
from phoneenv.harness.providers.finish import FINISH_TOOL, MAX_ANSWER_CHARS, Finish


def _act(env, name, **arguments):
    return env.step(json.dumps({"name": name, "arguments": arguments}))


def test_finish_at_the_root_ends_the_episode_with_answer_and_value():
    env = PhonePlanEnv(task="clock.what_time/0")
    env.reset(seed=0)
    obs, _, terminated, truncated, info = _act(env, "finish", answer="It is 9:30.", value="09:30")
    assert terminated and not truncated
    assert json.loads(obs["feedback"])["result"] == {"finished": True}
    assert env.trace.frames[0].answer == "It is 9:30." and env.trace.frames[0].closed_at == 1
    assert info["verdict"]["answer"] == "It is 9:30."


def test_finish_in_a_sub_agent_closes_only_that_frame():
    env = PhonePlanEnv(task="contacts.favorite/0", delegation=True)
    env.reset(seed=0)
    _act(env, "agent.delegate", goal="Find Ana", tools=["contacts"])
    obs, _, terminated, *_ = _act(env, "finish", answer="found", value=3)
    fb = json.loads(obs["feedback"])
    assert not terminated and obs["frame"] == "main"
    assert fb["result"]["answer"] == "found" and fb["result"]["value"] == 3
    assert env.frames.at_root and env.trace.frames[0].closed_at is None


def test_schema_bounds_the_answer():
    assert FINISH_TOOL.spec.name == "finish"
    assert FINISH_TOOL.spec.parameters["properties"]["answer"]["anyOf"][0]["maxLength"] == MAX_ANSWER_CHARS
    assert Finish().offer(None, {}) == {"finish": FINISH_TOOL}  # type: ignore[arg-type]
