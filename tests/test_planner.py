"""LLMPlanner through the env with a scripted chat client: the conversation it builds, several
calls per reply, replies without a call, the step budget, infrastructure aborts, token counts."""

from __future__ import annotations

import json

from agents.planner import LLMPlanner
from phoneenv.evaluation import run_episodes, score
from phoneenv.llm import ChatResult, InfrastructureError, TokenUsage
from phoneenv.tasks import get_task


class Scripted:
    """A ChatClient that replies from a list; records every request's messages and tools."""

    model = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []

    def chat(self, messages, *, tools=None, json_schema=None, max_tokens=512):
        self.requests.append({"messages": json.loads(json.dumps(messages)), "tools": tools})
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def calls(*pairs, usage=(100, 20, 5)):
    return ChatResult(
        tool_calls=[{"id": f"call_{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(pairs)],
        usage=TokenUsage(*usage),
    )


def test_planner_solves_a_task_and_builds_the_conversation(tmp_path):
    task = get_task("messages.mark_thread_read/0")  # contacts.search, messages.mark_read, finish
    plan = task.reference_plan
    client = Scripted(
        [
            calls((plan[0].name.replace(".", "__"), plan[0].arguments)),
            # two calls in one reply: both run before the model is asked again
            calls((plan[1].name.replace(".", "__"), plan[1].arguments), ("finish", {"answer": "Done."})),
        ]
    )
    res = run_episodes(LLMPlanner(client), [task], tmp_path)
    assert res[0].success and len(client.requests) == 2
    first, second = client.requests
    assert first["messages"][0]["role"] == "system" and task.goal in first["messages"][0]["content"]
    assert all("." not in t["function"]["name"] for t in first["tools"])
    assert any(t["function"]["name"] == "messages__mark_read" for t in first["tools"])
    assistant, tool_msg = second["messages"][2], second["messages"][3]
    assert assistant["tool_calls"][0]["function"]["name"] == "contacts__search"
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_0" and json.loads(tool_msg["content"])["ok"]
    # Output tokens counted once per model call; thinking is part of output, not added to it.
    assert res[0].output_tokens == 2 * 20
    trace = json.loads((tmp_path / "messages.mark_thread_read-0.jsonl").read_text())
    assert [s["action"]["name"] for s in trace["steps"]] == ["contacts.search", "messages.mark_read", "finish"]
    assert trace["steps"][0]["tokens"] == {"prompt": 100, "output": 20, "thinking": 5}
    assert trace["steps"][1]["tokens"] == {"prompt": 100, "output": 20, "thinking": 5}
    assert trace["steps"][2]["tokens"] is None  # the second call of that reply cost nothing more
    v = trace["verdict"]
    assert (v["prompt_tokens"], v["output_tokens"], v["thinking_tokens"]) == (200, 40, 10)


def test_reply_without_a_call_is_fed_back():
    task = get_task("contacts.lookup_number/0")
    client = Scripted(
        [
            ChatResult(content="Let me think about that.", raw="Let me think about that."),
            calls(("finish", {"answer": "no"})),
        ]
    )
    res = run_episodes(LLMPlanner(client), [task])
    assert not res[0].success and res[0].errors == 1
    fed = client.requests[1]["messages"][-1]
    assert fed["role"] == "user" and "invalid_json" in fed["content"]


def test_step_budget_finishes_without_asking_the_model():
    task = get_task("contacts.lookup_number/0")
    client = Scripted([calls(("contacts__list", {}))] * 3)
    res = run_episodes(LLMPlanner(client, max_steps=2), [task])
    assert len(client.requests) == 2 and res[0].steps == 3 and not res[0].success


def test_infrastructure_error_is_labelled_not_blamed():
    task = get_task("contacts.lookup_number/0")
    client = Scripted([calls(("contacts__list", {})), InfrastructureError("connection refused", kind="connection")])
    res = run_episodes(LLMPlanner(client), [task])
    assert res[0].infrastructure_error and not res[0].success
    board = score("llm", res, price_per_mtok=2.0)
    assert board.infrastructure_errors == 1 and board.categories[-1].episodes == 0
    assert board.cost_per_1000_tasks == 20 * 1000 * 2.0 / 1e6


def test_a_dead_model_server_stops_the_run():
    import pytest

    tasks = [get_task(f"contacts.lookup_number/{k}") for k in range(4)]
    client = Scripted([InfrastructureError("connection refused", kind="connection")] * 4)
    seen = []
    with pytest.raises(InfrastructureError, match="2 episodes in a row"):
        run_episodes(LLMPlanner(client), tasks, on_episode=seen.append, max_consecutive_infra=2)
    assert [r.infrastructure_error for r in seen] == [True, True]


def test_tool_filter_limits_the_offered_tools():
    task = get_task("contacts.lookup_number/0")
    client = Scripted([calls(("finish", {"answer": "x"}))])
    run_episodes(LLMPlanner(client, tool_filter=["contacts", "finish"]), [task])
    names = {t["function"]["name"] for t in client.requests[0]["tools"]}
    assert "finish" in names and all(n == "finish" or n.startswith("contacts__") for n in names)


def test_task_filter_is_resolved_per_episode():
    """``tool_filter="task"``: each episode offers the tools of its own task's apps plus user, system
    and finish (and the category's harness app), however many episodes the planner played before."""
    import pytest

    from phoneenv.env import PhonePlanEnv

    tasks = [get_task("contacts.lookup_number/0"), get_task("settings.toggle/0")]
    client = Scripted([calls(("finish", {"answer": "x"})) for _ in tasks])
    run_episodes(LLMPlanner(client, tool_filter="task"), tasks)
    for task, request in zip(tasks, client.requests, strict=True):
        env = PhonePlanEnv(task=task)
        _, info = env.reset(seed=0)
        env.close()
        keep = set(task.apps) | {"user", "system", "finish"}
        expected = {t["function"]["name"].replace(".", "__") for t in info["tools"]
                    if t["function"]["name"].split(".")[0] in keep}  # fmt: skip
        got = {t["function"]["name"] for t in request["tools"]}
        assert got == expected and "finish" in got and len(got) < len(info["tools"])
    assert {n.split("__")[0] for n in got} >= {"settings"} and not any(n.startswith("contacts__") for n in got)
    with pytest.raises(ValueError, match="non-empty"):
        LLMPlanner(client, tool_filter=["contacts", ""])
