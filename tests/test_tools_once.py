"""Tools travel once per reset (or when the offered set changes), and what every env of a process
shares (tool lists, the spaces' tables) is shared and cannot be changed under another env."""

from __future__ import annotations

import copy
import json
import pickle

import gymnasium as gym
import numpy as np
import pytest

from phoneenv.env import PhonePlanEnv
from phoneenv.sharing import ReadOnlyDict, ReadOnlyList, freeze_gc, openai_tools

READ = '{"name": "contacts.get", "arguments": {"contact_id": "c_1"}}'


def names(tools) -> list[str]:
    return [t["function"]["name"] for t in tools]


def delegate(env, goal, tools):
    return env.step({"name": "agent.delegate", "arguments": {"goal": goal, "tools": tools}})


def test_steps_announce_tools_only_when_the_offered_list_changes(contacts_task):
    env = PhonePlanEnv(task=contacts_task, delegation=True)
    _, info = env.reset(seed=0)
    root = info["tools"]
    assert root is env.tools and "contacts.get" in names(root) and "agent.delegate" in names(root)
    for action in (READ, '{"name": "contacts.gte", "arguments": {}}', "not json"):
        info = env.step(action)[4]
        assert "tools" not in info and env.tools is root  # nothing changed: nothing travels
    info = delegate(env, "Find Ana", ["contacts.search"])[4]
    child = info["tools"]
    assert names(child) == ["contacts.search", "finish"] and env.tools is child
    assert "tools" not in env.step({"name": "contacts.search", "arguments": {"query": "Ana"}})[4]
    info = env.step({"name": "finish", "arguments": {"answer": "found"}})[4]
    assert info["tools"] is root and env.tools is root  # back at the root: its list again
    assert "tools" not in env.step(READ)[4]
    _, info = env.reset(seed=1)
    assert info["tools"] is root  # every reset announces them


def test_a_step_pickles_a_small_fraction_of_the_tools(contacts_task):
    env = gym.make("PhonePlan-v0", task=contacts_task)
    _, info = env.reset(seed=0)
    step = env.step(READ)
    sent = len(pickle.dumps((step, True)))  # what AsyncVectorEnv's worker sends per step
    tools = len(pickle.dumps(info["tools"]))
    assert tools > 20_000 and sent < 2_000, (sent, tools)


def test_vector_envs_deliver_tools_at_reset_and_frames(contacts_task):
    vec = gym.vector.SyncVectorEnv([lambda: gym.make("PhonePlan-v0", task=contacts_task, delegation=True)] * 2)
    try:
        _, infos = vec.reset(seed=0)
        assert infos["_tools"].all() and "contacts.get" in names(infos["tools"][0])
        _, _, _, _, infos = vec.step([READ, READ])
        assert "tools" not in infos
        call = json.dumps({"name": "agent.delegate", "arguments": {"goal": "g", "tools": ["contacts.search"]}})
        _, _, _, _, infos = vec.step([READ, call])
        assert list(infos["_tools"]) == [False, True] and names(infos["tools"][1]) == ["contacts.search", "finish"]
    finally:
        vec.close()


def test_envs_share_one_read_only_tool_list(contacts_task):
    a, b = PhonePlanEnv(task=contacts_task), PhonePlanEnv(task=contacts_task)
    ta, tb = a.reset(seed=0)[1]["tools"], b.reset(seed=0)[1]["tools"]
    assert ta is tb and isinstance(ta, ReadOnlyList) and isinstance(ta[0], ReadOnlyDict)
    assert ta == [s.to_openai() for s in a.tool_specs]  # same content as rendering each spec
    before = json.dumps(ta)
    for change in (
        lambda: ta.append({}),
        lambda: ta.__setitem__(0, {}),
        lambda: ta.sort(key=str),
        lambda: ta.pop(),
        lambda: ta[0].update(type="x"),
        lambda: ta[0]["function"].__setitem__("name", "x"),
        lambda: ta[0]["function"].pop("name"),
    ):
        with pytest.raises(TypeError, match="shared"):
            change()
    assert json.dumps(tb) == before
    # Copies and pickles are plain, mutable and equal.
    for copied in (list(ta), copy.copy(ta), copy.deepcopy(ta), pickle.loads(pickle.dumps(ta))):
        assert type(copied) is list and copied == ta
    deep = copy.deepcopy(ta)
    deep[0]["function"]["name"] = "changed"
    assert type(deep[0]) is dict and ta[0]["function"]["name"] != "changed"
    spec = a.tool_specs[0]
    assert openai_tools([spec]) is openai_tools([spec]) and openai_tools([spec])[0] is ta[0]


def test_envs_share_space_tables_but_not_random_generators(contacts_task):
    a, b = PhonePlanEnv(task=contacts_task), PhonePlanEnv(task=contacts_task)
    assert a.observation_space == b.observation_space and a.action_space == b.action_space
    assert a.observation_space is not b.observation_space and a.action_space is not b.action_space
    ga, gb = a.observation_space["goal"], b.observation_space["goal"]
    assert ga._char_index is gb._char_index and a.action_space._char_set is b.action_space._char_set
    a.action_space.seed(1)
    b.action_space.seed(1)
    first = a.action_space.sample()
    b.action_space.seed(2)  # seeding b leaves a's stream alone
    a.action_space.seed(1)
    assert a.action_space.sample() == first
    obs, _ = a.reset(seed=0)
    assert a.observation_space.contains(obs)
    shots = PhonePlanEnv(task=contacts_task, screenshots=True, screen_size=(32, 48))
    assert shots.observation_space["screenshot"].shape == (48, 32, 3) and "screenshot" not in a.observation_space


def test_planner_follows_tools_announced_without_a_frame_change():
    from agents.planner import LLMPlanner
    from phoneenv.llm import ChatResult, TokenUsage

    class Scripted:
        model = "scripted"

        def __init__(self):
            self.tools = []

        def chat(self, messages, *, tools=None, json_schema=None, max_tokens=512):
            self.tools.append([t["function"]["name"] for t in tools])
            call = {"id": "c", "name": "clock__now", "arguments": {}}
            return ChatResult(tool_calls=[call], usage=TokenUsage(1, 1, 0))

    first = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("clock.now", "finish")]
    more = [*first, {"type": "function", "function": {"name": "alarm.set", "parameters": {}}}]
    client = Scripted()
    planner = LLMPlanner(client, tool_filter="all")
    obs = {"goal": "g", "feedback": "{}", "frame": "main", "frame_depth": np.int64(0)}
    planner.reset(obs, {"tools": first, "task_id": "t", "apps": ["clock"]})
    planner.act(obs, {"feedback": None})
    planner.act(obs, {"feedback": None, "tools": more})  # same frame, more tools
    planner.act(obs, {"feedback": None})  # absent: keep the last ones
    grown = ["clock__now", "finish", "alarm__set"]
    assert client.tools == [["clock__now", "finish"], grown, grown]


def test_rollout_slots_follow_tools_announced_without_a_frame_change():
    from rl.rollout import _follow_frame, _Slot

    tool = {"type": "function", "function": {"name": "clock.now", "parameters": {}}}
    slot = _Slot(0, [], [], [], [], 0)
    obs = {"goal": "g", "frame": "main", "frame_depth": 0}
    _follow_frame(slot, obs, {"tools": [tool]})
    assert names(slot.tools) == ["clock__now"] and slot.frame_note is None
    _follow_frame(slot, obs, {})
    assert names(slot.tools) == ["clock__now"]


def test_freeze_gc_freezes_what_lives_now():
    import gc

    def tracked(obj) -> bool:  # in a generation the collector scans (frozen objects are not)
        return any(o is obj for o in gc.get_objects())

    before = [object()]
    assert tracked(before)
    try:
        frozen = freeze_gc()
        # the count at the freeze (other threads of the worker may free a frozen object since)
        assert frozen > 1_000 and 0 < gc.get_freeze_count() <= frozen
        after = [object()]
        assert not tracked(before) and tracked(after)  # set-up frozen, later objects collected
    finally:
        gc.unfreeze()
    assert tracked(before)


def test_underscore_names_reach_backend_and_provider_tools(contacts_task):
    env = PhonePlanEnv(task=contacts_task, delegation=True)
    env.reset(seed=0)
    dotted = json.loads(env.step(READ)[0]["feedback"])
    under = json.loads(env.step(READ.replace("contacts.get", "contacts__get"))[0]["feedback"])
    assert dotted["ok"] and under == dotted
    obs, *_ = env.step({"name": "agent__delegate", "arguments": {"goal": "g", "tools": ["contacts.search"]}})
    assert obs["frame"] == "main.1"
    fb = json.loads(env.step('{"name": "contacts__nope", "arguments": {}}')[0]["feedback"])
    assert fb["error"] == "unknown_tool"
