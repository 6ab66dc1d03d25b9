"""End to end against real components: `transformers serve` on loopback with a tiny model built
here, the OpenAI client, the planner, the simulator; and the local transformers path.

The model is random, so these tests assert the contract (valid calls or clean feedback, ledger
merged, contradictions flagged, infrastructure errors labelled), not the quality of its plans.
Replies are scripted through the server's generation config where a test needs a given reply."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai")
pytest.importorskip("transformers")

from agents.llm.client import OpenAIChatClient
from agents.planner import LLMPlanner
from phoneenv.contract import Fixtures, TaskSpec
from phoneenv.env import PhonePlanEnv
from phoneenv.evaluation import run_episodes
from phoneenv.tasks import get_task
from tests import waiting

pytestmark = pytest.mark.slow


class ScriptedClient(OpenAIChatClient):
    """The real HTTP client, with the server told what to say for each next request."""

    def __init__(self, server, replies, **kw):
        super().__init__(
            server.base_url, server.model, timeout=waiting.scaled(30), max_attempts=2, backoff_max=0.2, **kw
        )
        self.server = server
        self.replies = list(replies)

    def chat(self, messages, **kw):
        self.extra_body = self.server.scripted(self.replies.pop(0)) if self.replies else None
        return super().chat(messages, **kw)


def tool_call(name, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def test_planner_solves_a_task_through_the_server(llm_server, tmp_path):
    task = get_task("contacts.lookup_number/0")
    plan = task.reference_plan  # contacts.search twice, messages.send, finish
    client = ScriptedClient(llm_server, [tool_call(c.name.replace(".", "__"), **c.arguments) for c in plan])
    res = run_episodes(LLMPlanner(client), [task], tmp_path)
    assert res[0].success and not res[0].infrastructure_error
    trace = json.loads((tmp_path / "contacts.lookup_number-0.jsonl").read_text())
    assert [s["action"]["name"] for s in trace["steps"]] == [c.name for c in plan]
    tokens = trace["steps"][0]["tokens"]
    assert tokens["prompt"] > 100 and tokens["output"] > 5


def test_a_tool_call_the_server_cannot_parse_is_the_agents_invalid_reply(llm_server, tmp_path):
    """The model's first reply is a `<tool_call>` that is not JSON: the server refuses it (HTTP 400);
    the episode goes on with that reply as an invalid action the env answers with feedback, the
    planner recovers, and the verdict is the agent's (a success here), not an infrastructure error."""
    task = get_task("contacts.lookup_number/0")
    plan = task.reference_plan
    broken = '<tool_call>{"name": "contacts__search", "arguments": {"query": </tool_call>'
    client = ScriptedClient(llm_server, [broken, *(tool_call(c.name.replace(".", "__"), **c.arguments) for c in plan)])
    res = run_episodes(LLMPlanner(client), [task], tmp_path)
    assert not res[0].infrastructure_error and res[0].success
    trace = json.loads((tmp_path / "contacts.lookup_number-0.jsonl").read_text())
    first = trace["steps"][0]
    assert not first["feedback"]["ok"] and first["feedback"]["error"] == "invalid_json"
    assert [s["action"]["name"] for s in trace["steps"][1:]] == [c.name for c in plan]


def test_random_model_replies_become_feedback_or_labelled_errors(llm_server, tmp_path):
    from phoneenv.contract import ErrorKind

    task = get_task("contacts.lookup_number/1")
    client = OpenAIChatClient(
        llm_server.base_url, llm_server.model, timeout=waiting.scaled(30), max_attempts=2, backoff_max=0.2
    )
    res = run_episodes(LLMPlanner(client, max_tokens=24), [task], tmp_path, env_kwargs={"max_steps": 3})
    trace = json.loads((tmp_path / "contacts.lookup_number-1.jsonl").read_text())
    assert trace["verdict"] is not None and res[0].steps == len(trace["steps"]) <= 3
    kinds = {k.value for k in ErrorKind}
    for step in trace["steps"]:
        # Every reply became either a call the env ran or a clean, typed error.
        assert step["feedback"]["ok"] or step["feedback"]["error"] in kinds
    if res[0].infrastructure_error:
        assert trace["verdict"]["infrastructure_error"]
    else:
        assert trace["steps"] and res[0].output_tokens > 0


def test_simulator_merges_results_and_flags_a_planted_contradiction(llm_server):
    from phoneenv.backends.llmsim import LLMSimBackend

    order = {
        "order_id": "ord_7",
        "restaurant_id": "rst_1",
        "restaurant_name": "Pizza Roma",
        "items": [{"item_id": "it_1", "name": "Margherita", "qty": 1, "price": 9.5}],
        "subtotal": 9.5,
        "delivery_fee": 2.0,
        "total": 11.5,
        "currency": "EUR",
        "status": "out_for_delivery",
        "placed_at": "2026-11-29T18:50:00",
        "eta": "2026-11-29T19:30:00",
        "last_update": "2026-11-29T19:05:00",
        "courier": "Mo",
    }
    task = TaskSpec(
        id="sim.contradiction",
        domain="food",
        goal="Where is my pizza?",
        apps=["food"],
        backends=["llmsim"],
        fixtures=Fixtures(clock="2026-11-29T19:00:00", records={"food.orders": [{"id": "ord_7", **order}]}),
        criteria=[{"kind": "answer", "contains": ["19:30"]}],
    )
    backend = LLMSimBackend(client=None)
    backend.reset(task)
    returns = backend.tools()["food.order_status"].spec.returns
    planted = {**order, "total": 21.5}  # the same order with another price
    from jsonschema import Draft202012Validator

    errors = list(Draft202012Validator(returns).iter_errors(planted))
    assert not errors, [e.message for e in errors]
    client = ScriptedClient(llm_server, [json.dumps(planted)])
    env = PhonePlanEnv(task=task, backend=LLMSimBackend(client=client))
    env.reset(seed=0)
    obs, *_ = env.step({"name": "food.order_status", "arguments": {"order_id": "ord_7"}})
    assert json.loads(obs["feedback"])["ok"]
    *_, info = env.step({"name": "finish", "arguments": {"answer": "It arrives at 19:30."}})
    verdict = info["verdict"]
    assert verdict["inconsistent"] and any("total" in issue for issue in verdict["inconsistencies"])
    assert env.trace.steps[0].backend == "llmsim"


def test_simulator_garbage_is_a_labelled_infrastructure_error(llm_server):
    from phoneenv.backends.llmsim import LLMSimBackend

    task = TaskSpec(
        id="sim.garbage",
        domain="food",
        goal="Find pizza.",
        apps=["food"],
        backends=["llmsim"],
        criteria=[{"kind": "answer", "contains": ["x"]}],
    )
    client = ScriptedClient(llm_server, ["not json at all", "still not json", "nope"])
    env = PhonePlanEnv(task=task, backend=LLMSimBackend(client=client, max_retries=2))
    env.reset(seed=0)
    obs, *_ = env.step({"name": "food.search_restaurants", "arguments": {"query": "pizza"}})
    fb = json.loads(obs["feedback"])
    assert fb["error"] == "device_error" and fb["recoverable"] is False
    *_, info = env.step({"name": "finish", "arguments": {"answer": "x"}})
    assert info["infrastructure_error"] is True


def test_server_killed_mid_episode_is_an_infrastructure_error(tiny_model_dir):
    from tests.llm_server import serve_tiny_model

    task = get_task("contacts.lookup_number/2")
    with serve_tiny_model(tiny_model_dir) as server:
        client = ScriptedClient(server, [tool_call("contacts__list")])
        planner = LLMPlanner(client)

        class KillAfterFirst(LLMPlanner):
            def act(self, observation, info):
                if planner._steps == 1:
                    server.kill()
                return planner.act(observation, info)

            def reset(self, observation, info):
                planner.reset(observation, info)

        res = run_episodes(KillAfterFirst(client), [task])
    assert res[0].infrastructure_error and not res[0].success and res[0].steps == 1


def test_local_model_emits_schema_valid_calls(tiny_model_dir, tmp_path):
    from typer.testing import CliRunner

    from phoneenv.cli import app

    out = tmp_path / "local"
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "--agent",
            "llm",
            "--model",
            str(tiny_model_dir),
            "--tasks",
            "contacts.lookup_number/3",
            "--max-steps",
            "4",
            # Room for a random model's long strings (about 370 tokens a reply here): a reply cut at
            # the token limit is no call, whatever the grammar.
            "--max-tokens",
            "1024",
            "--out",
            str(out),
            "--price-per-mtok",
            "0.5",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "per 1,000 tasks" in res.output
    trace = json.loads(next((out / "traces").glob("*.jsonl")).read_text())
    assert trace["steps"], trace
    whole = [s for s in trace["steps"] if s["tokens"] is None or s["tokens"]["output"] < 1024]
    assert whole, "every reply was cut at the token limit: nothing left to check"
    for step in whole:
        # Constrained decoding: every reply that ended is a call the env can parse and validate.
        assert step["feedback"].get("error") not in ("invalid_json", "unknown_tool", "invalid_arguments"), step
        assert step["tokens"] is None or step["tokens"]["output"] > 0
