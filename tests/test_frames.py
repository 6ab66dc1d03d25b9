"""Sub-agent frames (phoneenv.frames) through the env: nesting, tool restriction, answers returning
to the parent, the depth limit, finish and truncation with frames open, traces, criteria."""

from __future__ import annotations

import functools
import json
import random

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from phoneenv.contract import (
    BehaviorCriterion,
    Feedback,
    Frame,
    Step,
    ToolCall,
    Trace,
)
from phoneenv.env import PhonePlanEnv
from phoneenv.frames import MAX_DEPTH, delegate_steps, plan_depths, plan_frames
from phoneenv.tasks import get_task
from phoneenv.tasks.verify import check_trace

SUBAGENT_TASK = "subagent.birthday_note/0"


def fb(obs) -> dict:
    return json.loads(obs["feedback"])


def delegate(env, goal, tools):
    return env.step({"name": "agent.delegate", "arguments": {"goal": goal, "tools": tools}})


def finish(env, answer):
    return env.step({"name": "finish", "arguments": {"answer": answer}})


def names(tools) -> list[str]:
    return [t["function"]["name"] for t in tools]


@pytest.fixture
def env(contacts_task):
    e = PhonePlanEnv(task=contacts_task, delegation=True)
    e.reset(seed=0)
    return e


# -- offering the tool ------------------------------------------------------------------------------


def test_delegate_is_offered_where_the_task_or_the_env_asks(contacts_task):
    assert "agent.delegate" not in names(PhonePlanEnv(task=contacts_task).reset(seed=0)[1]["tools"])
    assert "agent.delegate" in names(PhonePlanEnv(task=contacts_task, delegation=True).reset(seed=0)[1]["tools"])
    sub = PhonePlanEnv(task=SUBAGENT_TASK)
    assert "agent.delegate" in names(sub.reset(seed=0)[1]["tools"])
    assert "agent.delegate" not in names(PhonePlanEnv(task=SUBAGENT_TASK, delegation=False).reset(seed=0)[1]["tools"])
    # Without the tool, a delegation is an unknown tool, not a frame.
    plain = PhonePlanEnv(task=contacts_task)
    plain.reset(seed=0)
    obs, *_ = delegate(plain, "x", ["contacts"])
    assert fb(obs)["error"] == "unknown_tool" and obs["frame"] == "main"


# -- nesting, answers, depth --------------------------------------------------------------------------


def test_nesting_to_depth_three_and_answers_flow_back(env):
    obs, _, term, trunc, info = delegate(env, "Find Ana and report her number", ["agent.delegate", "contacts"])
    res = fb(obs)["result"]
    assert (obs["frame"], int(obs["frame_depth"]), obs["frame_goal"]) == ("main.1", 1, "Find Ana and report her number")
    assert res["frame"] == "main.1" and res["depth"] == 1 and res["parent"] == "main" and res["status"] == "opened"
    assert info["frame"] == "main.1" and not term and not trunc
    # The app name expands to every contacts tool the parent has; finish is always there.
    assert names(info["tools"]) == names(env.tools) == res["tools"] and res["tools"][-1] == "finish"
    contacts = sorted(n for n in names(PhonePlanEnv(task=env.task).tools) if n.startswith("contacts."))
    assert sorted(res["tools"]) == sorted([*contacts, "agent.delegate", "finish"]) and len(contacts) == 15

    obs, *_ = delegate(env, "Search for Ana", ["agent__delegate", "contacts__search"])  # underscore names
    assert (obs["frame"], int(obs["frame_depth"])) == ("main.1.1", 2)
    assert fb(obs)["result"]["tools"] == ["contacts.search", "agent.delegate", "finish"]
    obs, _, _, _, info = delegate(env, "Really search for Ana", ["contacts.search"])
    assert (obs["frame"], int(obs["frame_depth"])) == ("main.1.1.1", MAX_DEPTH)
    assert names(info["tools"]) == ["contacts.search", "finish"]

    obs, *_ = env.step({"name": "contacts.search", "arguments": {"query": "Ana"}})
    assert fb(obs)["result"]["contacts"][0]["phone"] == "+4915111111111"
    obs, _, term, _, info = finish(env, "+4915111111111")
    res = fb(obs)["result"]
    assert res == {
        "frame": "main.1.1.1",
        "goal": "Really search for Ana",
        "answer": "+4915111111111",
        "status": "finished",
        "active_frame": "main.1.1",
        "note": res["note"],
    }
    assert "agent.delegate" in res["note"] and not term
    assert (obs["frame"], int(obs["frame_depth"]), obs["frame_goal"]) == ("main.1.1", 2, "Search for Ana")
    assert names(info["tools"]) == ["contacts.search", "agent.delegate", "finish"]
    # Siblings open one after another: the second child of main.1.1 is main.1.1.2.
    obs, *_ = delegate(env, "Again", ["contacts.search"])
    assert obs["frame"] == "main.1.1.2"
    finish(env, "same")
    obs, *_ = finish(env, "Ana: +4915111111111")
    assert obs["frame"] == "main.1" and fb(obs)["result"]["answer"] == "Ana: +4915111111111"
    obs, _, term, _, info = finish(env, "her number is +4915111111111")
    assert obs["frame"] == "main" and int(obs["frame_depth"]) == 0 and obs["frame_goal"] == obs["goal"] and not term
    assert "messages.send" in names(info["tools"])  # the root has every tool again
    _, _, term, _, info = finish(env, "done")
    assert term and info["verdict"]["answer"] == "done"  # the root's answer, not a sub-agent's


def test_maximum_depth_is_enforced_both_ways(env):
    delegate(env, "a", ["agent.delegate", "contacts"])
    delegate(env, "b", ["agent.delegate", "contacts"])
    # A frame at the maximum depth may not hold agent.delegate ...
    obs, *_ = delegate(env, "c", ["contacts.search", "agent.delegate"])
    err = fb(obs)
    assert err["error"] == "invalid_arguments" and err["path"] == "/tools/1" and "maximum depth 3" in err["message"]
    assert obs["frame"] == "main.1.1"  # refused: nothing opened
    obs, *_ = delegate(env, "c", ["agent"])  # ... nor through its app name
    assert fb(obs)["path"] == "/tools/0" and obs["frame"] == "main.1.1"
    obs, *_ = delegate(env, "c", ["contacts.search"])
    assert int(obs["frame_depth"]) == 3
    # ... so delegating from there is a call outside the frame, said as the depth limit.
    obs, *_ = delegate(env, "d", ["contacts.search"])
    err = fb(obs)
    assert err["error"] == "precondition_failed" and "maximum delegation depth (3)" in err["message"]
    assert obs["frame"] == "main.1.1.1"


def test_a_smaller_max_depth_refuses_at_the_parent():
    from phoneenv.contract import ToolSpec
    from phoneenv.frames import DELEGATE_TOOL, FrameStack

    finish_spec = ToolSpec(name="finish", description="end", parameters={"type": "object"}, app="", domain="device")
    stack = FrameStack("goal", [DELEGATE_TOOL.spec, finish_spec], max_depth=1)
    stack.begin_step()
    assert stack.call({"goal": "g", "tools": ["finish"]}).ok and stack.active.depth == 1
    stack.begin_step()
    refused = stack.call({"goal": "g", "tools": ["finish"]})
    assert refused.error == "precondition_failed" and "maximum delegation depth (1)" in refused.message
    with pytest.raises(ValueError, match="max_depth"):
        FrameStack("goal", [], max_depth=-1)


# -- tool restriction and bad delegations ----------------------------------------------------------------


def test_tools_outside_the_frame_are_refused_with_the_frame_tools_named(env):
    delegate(env, "look up Ana", ["contacts.search"])
    obs, *_ = env.step({"name": "contacts.create", "arguments": {"name": "X", "phone": "+4917000000000"}})
    err = fb(obs)
    assert err["error"] == "precondition_failed" and "main.1" in err["message"]
    assert "contacts.search" in err["hint"] and "finish" in err["hint"] and err["recoverable"] is True
    assert err["candidates"][0] == "contacts.search"
    obs, *_ = env.step({"name": "contacts.serch", "arguments": {"query": "a"}})
    assert fb(obs)["error"] == "unknown_tool" and fb(obs)["candidates"] == ["contacts.search"]
    assert obs["frame"] == "main.1"  # errors do not change the frame
    # The refused create never ran.
    finish(env, "nothing")
    _, _, _, _, info = finish(env, "done")
    assert info["verdict"]["criteria"][0]["passed"] is False
    assert [s.frame for s in env.trace.steps] == ["main", "main.1", "main.1", "main.1", "main"]


@pytest.mark.parametrize(
    ("arguments", "path", "candidate"),
    [
        ({"goal": "x", "tools": ["contacts.search", "contacts.serch"]}, "/tools/1", "contacts.search"),
        ({"goal": "x", "tools": ["mesages.send"]}, "/tools/0", "messages.send"),
        ({"goal": "x", "tools": ["contact"]}, "/tools/0", None),
        ({"goal": "x", "tools": []}, "/tools", None),
        ({"goal": "x", "tools": "contacts"}, "/tools", None),
        ({"goal": "", "tools": ["contacts"]}, "/goal", None),
        ({"goal": "   ", "tools": ["contacts"]}, "/goal", None),
        ({"tools": ["contacts"]}, "/goal", None),
        ({"goal": "x", "tools": ["contacts"], "extra": 1}, "/extra", None),
    ],
)
def test_bad_delegations_are_invalid_arguments_with_path_and_nearest_names(env, arguments, path, candidate):
    obs, *_ = env.step({"name": "agent.delegate", "arguments": arguments})
    err = fb(obs)
    assert err["error"] == "invalid_arguments" and err["path"] == path, err
    if candidate is not None:
        assert err["candidates"][0] == candidate and candidate in err["hint"]
    assert obs["frame"] == "main" and env.trace.frames[1:] == []


def test_a_sub_agent_can_hand_on_only_tools_it_has(env):
    delegate(env, "contacts work", ["agent.delegate", "contacts.search"])
    obs, *_ = delegate(env, "texting", ["messages.send"])  # a tool of the episode, not of main.1
    err = fb(obs)
    assert err["error"] == "invalid_arguments" and "this frame's" in err["message"] and obs["frame"] == "main.1"
    assert err["candidates"] and set(err["candidates"]) <= {"agent.delegate", "contacts.search", "finish"}


def test_malformed_actions_inside_frames_never_raise(env):
    rng = random.Random(3)
    junk = [None, True, -1, "", "x" * 3000, [], {}, ["contacts"], ["contacts.search", 5], "\u202e\U0001f600"]
    depth_seen = set()
    for _ in range(600):
        r = rng.random()
        if r < 0.35:
            args = {k: rng.choice(junk) for k in rng.sample(["goal", "tools", "x"], rng.randrange(0, 3))}
            if rng.random() < 0.5:
                args = {
                    "goal": rng.choice(["a", "é\u0000b", "look"]),
                    "tools": rng.choice([["contacts"], ["agent", "contacts"]]),
                }
            action = {"name": "agent.delegate", "arguments": args}
        elif r < 0.55:
            action = {"name": "finish", "arguments": {"answer": rng.choice(["x", None])}}
        elif r < 0.75:
            action = {"name": "contacts.search", "arguments": {"query": rng.choice(["a", 5])}}
        else:
            action = rng.choice(["{", b"\xff", 7, '{"name": "messages.send", "arguments": {}}'])
        obs, _, term, trunc, _ = env.step(action)
        assert env.observation_space.contains(obs)
        depth_seen.add(int(obs["frame_depth"]))
        if term or trunc:
            env.reset(seed=0)
    assert depth_seen >= {0, 1, 2}


# -- finish and truncation with frames open ----------------------------------------------------------------


def test_finish_closes_only_the_innermost_frame(env):
    delegate(env, "one", ["agent.delegate", "contacts"])
    delegate(env, "two", ["contacts"])
    terms = [finish(env, a)[2] for a in ("two done", "one done", "all done")]
    assert terms == [False, False, True]
    frames = {f.id: f for f in env.trace.frames}
    assert (frames["main.1.1"].closed_at, frames["main.1"].closed_at, frames["main"].closed_at) == (3, 4, 5)
    assert (frames["main.1.1"].answer, frames["main.1"].answer, frames["main"].answer) == (
        "two done",
        "one done",
        "all done",
    )


def test_a_sub_agents_typed_value_reaches_its_parent(env):
    delegate(env, "count the contacts", ["contacts"])
    obs, *_ = env.step({"name": "finish", "arguments": {"answer": "three", "value": 3}})
    result = json.loads(obs["feedback"])["result"]
    assert (result["answer"], result["value"], result["active_frame"]) == ("three", 3, "main")
    delegate(env, "say hi", ["contacts"])
    obs, *_ = env.step({"name": "finish", "arguments": {"answer": "hi"}})
    assert "value" not in json.loads(obs["feedback"])["result"]  # no value given, none passed up


def test_truncation_with_frames_open_keeps_them_open_in_the_trace(contacts_task):
    env = PhonePlanEnv(task=contacts_task, delegation=True, max_steps=4)
    env.reset(seed=0)
    delegate(env, "one", ["agent.delegate", "contacts"])
    delegate(env, "two", ["contacts"])
    env.step({"name": "contacts.create", "arguments": {"name": "Carla Novak", "phone": "+4917033333333"}})
    obs, reward, term, trunc, info = env.step({"name": "contacts.search", "arguments": {"query": "Carla"}})
    assert trunc and not term and reward == 0.0 and info["verdict"]["truncated"]
    assert info["verdict"]["criteria"][0]["passed"]  # the state was reached, but truncation never succeeds
    assert not info["verdict"]["success"]
    frames = env.trace.frames
    assert [(f.id, f.depth, f.closed_at, f.steps) for f in frames] == [
        ("main", 0, None, [1]),
        ("main.1", 1, None, [2]),
        ("main.1.1", 2, None, [3, 4]),
    ]
    crit = BehaviorCriterion(rule="delegated", tool="contacts.create")
    assert not check_trace(env.trace, [crit])[0].passed  # unfinished frames do not count
    obs, *_ = env.step({"name": "finish", "arguments": {}})
    assert fb(obs)["error"] == "precondition_failed"  # the episode is over


def test_max_steps_counts_the_steps_of_every_frame(contacts_task):
    env = PhonePlanEnv(task=contacts_task, delegation=True, max_steps=3)
    env.reset(seed=0)
    delegate(env, "one", ["contacts"])
    env.step({"name": "contacts.search", "arguments": {"query": "Ana"}})
    *_, trunc, info = finish(env, "ok")
    assert trunc and info["step"] == 3


# -- traces ----------------------------------------------------------------------------------------------


def test_trace_nests_frames_and_round_trips_through_json(env):
    delegate(env, "Save Carla", ["contacts.create"])
    env.step({"name": "contacts.create", "arguments": {"name": "Carla Novak", "phone": "+4917033333333"}})
    finish(env, "saved")
    _, reward, term, _, info = finish(env, "Saved Carla.")
    assert term and reward == 1.0
    trace = env.trace
    assert [s.frame for s in trace.steps] == ["main", "main.1", "main.1", "main"]
    assert [f.model_dump() for f in trace.frames] == [
        {
            "id": "main",
            "parent": None,
            "depth": 0,
            "goal": "Save Carla Novak, +4917033333333.",
            "tools": None,
            "answer": "Saved Carla.",
            "opened_at": 0,
            "closed_at": 4,
            "steps": [1, 4],
        },
        {
            "id": "main.1",
            "parent": "main",
            "depth": 1,
            "goal": "Save Carla",
            "tools": ["contacts.create", "finish"],
            "answer": "saved",
            "opened_at": 1,
            "closed_at": 3,
            "steps": [2, 3],
        },
    ]
    text = trace.model_dump_json()
    assert Trace.model_validate_json(text) == trace
    assert Trace.model_validate_json(text).model_dump_json() == text


def test_traces_written_before_frames_still_load(contacts_task):
    env = PhonePlanEnv(task=contacts_task)
    env.reset(seed=0)
    env.step({"name": "finish", "arguments": {"answer": "x"}})
    old = json.loads(env.trace.model_dump_json())
    del old["frames"]
    for s in old["steps"]:
        del s["frame"]
    loaded = Trace.model_validate(old)
    assert loaded.frames == [] and [s.frame for s in loaded.steps] == ["main"]


def test_same_actions_give_byte_identical_traces_with_frames(contacts_task):
    def run() -> str:
        e = PhonePlanEnv(task=contacts_task, delegation=True)
        e.reset(seed=5)
        delegate(e, "Save Carla", ["contacts"])
        e.step({"name": "contacts.create", "arguments": {"name": "Carla Novak", "phone": "+4917033333333"}})
        finish(e, "saved")
        finish(e, "done")
        return e.trace.model_dump_json()

    assert run() == run()


# -- criteria on hand-built traces --------------------------------------------------------------------------

OK = Feedback(ok=True, result={})
BAD = Feedback(ok=False, error="not_found", message="x")


def step(i, name, frame="main", ok=True, **args) -> Step:
    return Step(
        index=i,
        action=ToolCall(name=name, arguments=args),
        feedback=OK if ok else BAD,
        clock="2026-11-29T09:00:00",
        backend="sandbox",
        frame=frame,
    )


def hand_trace() -> Trace:
    """main delegates to main.1 (reads Ana's thread, then delegates a search to main.1.1) and to
    main.2 (never finished); main itself sends a text."""
    steps = [
        step(1, "agent.delegate", goal="Read Ana's messages", tools=["messages", "agent.delegate", "contacts"]),
        step(2, "messages.read_thread", "main.1", number="+4915111111111"),
        step(3, "agent.delegate", "main.1", goal="Find Ben", tools=["contacts.search"]),
        step(4, "contacts.search", "main.1.1", query="Ben"),
        step(5, "finish", "main.1.1", answer="+4916022222222"),
        step(6, "finish", "main.1", answer="Ana is free at 10"),
        step(7, "messages.send", to="+4916022222222", body="hi"),
        step(8, "agent.delegate", goal="Read Ben's messages", tools=["messages"]),
        step(9, "messages.read_thread", "main.2", number="+4916022222222"),
    ]
    frames = [
        Frame(id="main", goal="Plan it", steps=[1, 7, 8]),
        Frame(
            id="main.1", parent="main", depth=1, goal="Read Ana's messages", opened_at=1, closed_at=6, steps=[2, 3, 6]
        ),
        Frame(id="main.1.1", parent="main.1", depth=2, goal="Find Ben", opened_at=3, closed_at=5, steps=[4, 5]),
        Frame(id="main.2", parent="main", depth=1, goal="Read Ben's messages", opened_at=8, steps=[9]),
    ]
    return Trace(
        task_id="t",
        backend="sandbox",
        category="subagent",
        domain="scheduling",
        goal="Plan it",
        steps=steps,
        frames=frames,
    )


@pytest.mark.parametrize(
    ("criterion", "passed"),
    [
        (dict(rule="delegated"), True),
        (dict(rule="delegated", min_frames=2), True),  # main.1 and main.1.1
        (dict(rule="delegated", min_frames=3), False),  # main.2 never finished
        (dict(rule="delegated", tool="messages.*"), True),
        (
            dict(rule="delegated", tool="messages.read_thread", arguments={"number": {"number": "+4916022222222"}}),
            False,
        ),
        (dict(rule="delegated", tool="messages.read_thread", arguments={"number": {"number": "+4915111111111"}}), True),
        (dict(rule="delegated", tool="contacts.search", depth=1), True),  # through main.1.1, its sub-agent
        (dict(rule="delegated", tool="contacts.search", depth=2), True),
        (dict(rule="delegated", tool="messages.*", depth=2), False),
        (dict(rule="delegated", goal={"icontains": "ana"}), True),
        (dict(rule="delegated", goal={"icontains": "ben's"}), False),  # the frame with that goal is unfinished
        (dict(rule="delegated", tool="calendar.*"), False),
        (dict(rule="forbidden_call", tool="messages.read_thread", depth=0), True),
        (dict(rule="forbidden_call", tool="messages.send", depth=0), False),
        (dict(rule="forbidden_call", tool="messages.*", depth=1), False),
        (dict(rule="forbidden_call", tool="messages.*", depth=2), True),
        (dict(rule="forbidden_call", tool="messages.*"), False),
        (dict(rule="max_calls", limit=3, depth=0), True),  # delegate, send, delegate
        (dict(rule="max_calls", limit=2, depth=0), False),
        (dict(rule="max_calls", limit=7), True),  # 9 steps, 3 of them finish: 6 calls
        (dict(rule="max_calls", limit=5), False),
        (dict(rule="required_call", tool="contacts.search", depth=2), True),
        (dict(rule="required_call", tool="contacts.search", depth=0), False),
    ],
)
def test_behavior_criteria_on_a_hand_built_trace(criterion, passed):
    res = check_trace(hand_trace(), [BehaviorCriterion(**criterion)])[0]
    assert res.passed is passed, res.reason


def test_delegated_reasons_and_legacy_calls_without_a_frame_tree():
    from phoneenv.tasks.verify import CallRecord, evaluate

    res = check_trace(hand_trace(), [BehaviorCriterion(rule="delegated", tool="calendar.*", id="d")])[0]
    assert res.reason == "0 finished sub-agent frame(s) that called calendar.*, expected at least 1"
    calls = [CallRecord("agent.delegate", {}, OK, None)]
    assert evaluate(BehaviorCriterion(rule="delegated"), (), {}, calls, None)[0].passed
    no_tree = evaluate(BehaviorCriterion(rule="delegated", tool="x.y"), (), {}, calls, None)[0]
    assert not no_tree.passed and "no frame tree" in no_tree.reason
    with pytest.raises(ValueError, match="state criterion"):
        from phoneenv.contract import StateCriterion

        check_trace(hand_trace(), [StateCriterion(table="notes.notes")])


def test_criteria_survive_the_json_round_trip_of_the_trace():
    trace = Trace.model_validate_json(hand_trace().model_dump_json())
    crits = [
        BehaviorCriterion(rule="delegated", tool="contacts.search", depth=1),
        BehaviorCriterion(rule="forbidden_call", tool="messages.send", depth=0),
    ]
    assert [r.passed for r in check_trace(trace, crits)] == [True, False]


# -- plan structure helpers -------------------------------------------------------------------------


def test_plan_depths_and_frames_read_a_nested_plan():
    plan = [
        *delegate_steps("outer", ["agent"], [*delegate_steps("inner", ["x"], [ToolCall(name="x.y")], "i")], "o"),
        ToolCall(name="finish", arguments={"answer": "done"}),
    ]
    assert [c.name for c in plan] == ["agent.delegate", "agent.delegate", "x.y", "finish", "finish", "finish"]
    assert plan_depths(plan) == [0, 1, 2, 2, 1, 0]
    assert plan_frames(plan) == [(0, 4), (1, 3)]
    with pytest.raises(ValueError, match="follows the root"):
        plan_depths([ToolCall(name="finish"), ToolCall(name="x.y")])


# -- gymnasium compatibility ------------------------------------------------------------------------------


def test_check_env_passes_with_delegation(contacts_task):
    check_env(PhonePlanEnv(task=contacts_task, delegation=True), skip_render_check=True)
    check_env(PhonePlanEnv(task=SUBAGENT_TASK), skip_render_check=True)


def test_vector_envs_run_delegation():
    task = get_task(SUBAGENT_TASK)
    plan = [c.model_dump_json(exclude_none=True) for c in task.reference_plan]
    depths = plan_depths(task.reference_plan)
    for vec_cls in (gym.vector.SyncVectorEnv, functools.partial(gym.vector.AsyncVectorEnv, shared_memory=False)):
        vec = vec_cls([lambda: gym.make("PhonePlan-v0", task=SUBAGENT_TASK)] * 2)
        try:
            obs, _ = vec.reset(seed=0)
            for k, action in enumerate(plan):
                obs, rewards, term, trunc, _ = vec.step([action, action])
                want = depths[k + 1] if k + 1 < len(depths) else 0
                if k + 1 < len(plan):
                    assert list(obs["frame_depth"]) == [want, want]
            assert term.all() and np.array_equal(rewards, [1.0, 1.0])
        finally:
            vec.close()


# -- the LLM planner renders the active frame ----------------------------------------------------------------


class Scripted:
    """A ChatClient that replies from a list and records each request."""

    model = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []

    def chat(self, messages, *, tools=None, json_schema=None, max_tokens=512):
        self.requests.append({"messages": json.loads(json.dumps(messages)), "tools": tools})
        return self.replies.pop(0)


def test_llm_planner_tells_the_model_which_frame_is_active():
    from agents.planner import LLMPlanner
    from phoneenv.evaluation import run_episodes
    from phoneenv.llm import ChatResult, TokenUsage

    task = get_task(SUBAGENT_TASK)
    replies = [
        ChatResult(
            tool_calls=[{"id": f"c{i}", "name": c.name.replace(".", "__"), "arguments": c.arguments}],
            usage=TokenUsage(10, 2, 0),
        )
        for i, c in enumerate(task.reference_plan)
    ]
    client = Scripted(replies)
    res = run_episodes(LLMPlanner(client), [task])
    assert res[0].success
    first, in_child, child_finish, back = client.requests[:4]
    assert "agent__delegate" in names(first["tools"])
    note = in_child["messages"][-1]
    assert note["role"] == "user" and note["content"].startswith("[frame main.1, depth 1]")
    assert task.reference_plan[0].arguments["goal"] in note["content"]
    assert names(in_child["tools"]) == ["contacts__get", "contacts__list", "finish"]
    assert child_finish["messages"][-1]["role"] == "tool"  # no second note inside the same frame
    note = back["messages"][-1]
    assert note["content"].startswith("[frame main, depth 0] The sub-agent finished")
    assert (
        back["messages"][-2]["role"] == "tool"
        and json.loads(back["messages"][-2]["content"])["result"]["status"] == "finished"
    )
    assert "notes__create" in names(back["tools"])


def test_frame_goals_outside_printable_ascii_are_escaped_in_the_observation(env):
    obs, *_ = delegate(env, "Café\u0000 run", ["contacts"])
    assert obs["frame_goal"] == "Caf\\u00e9\\u0000 run" and env.observation_space.contains(obs)
    assert env.trace.frames[1].goal == "Café\u0000 run"  # the trace keeps the goal as given
