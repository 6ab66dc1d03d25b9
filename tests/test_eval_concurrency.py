"""`phoneenv eval --concurrency N`: N episodes in flight against a served model, the same results
and traces as one at a time, in task order; the async client's retries; the trace writer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import phoneenv.evaluation as evaluation
from agents.llm.client import OpenAIChatClient
from agents.planner import LLMPlanner
from agents.reference import ReferenceAgent
from phoneenv import cli
from phoneenv.evaluation import read_results, run_episodes
from phoneenv.llm import InfrastructureError
from phoneenv.tasks import get_task
from tests.fake_openai import FakeOpenAI, status, tool_call
from tests.latency_openai import LatencyOpenAI

# Tool and sub-agent tasks on the sandbox, goals distinct (the server finds the plan by goal).
IDS = [
    "contacts.favorite/0",
    "contacts.favorite/1",
    "subagent.birthday_note/0",
    "contacts.favorite/2",
    "subagent.birthday_note/1",
    "contacts.favorite/3",
]
TASKS = [get_task(t) for t in IDS]
runner = CliRunner()


def _planner(client: OpenAIChatClient) -> LLMPlanner:
    return LLMPlanner(client, tool_filter="task")


def _row(r: evaluation.EpisodeResult) -> tuple:
    return (r.task_id, r.success, r.progress, r.steps, r.errors, r.infrastructure_error, r.output_tokens, r.seed)


def test_concurrent_episodes_give_the_sequential_results_and_traces_in_task_order(tmp_path):
    with LatencyOpenAI(TASKS, latency_s=0.0) as server:
        client = OpenAIChatClient(server.base_url, "m", max_attempts=1)
        one = run_episodes(_planner(client), TASKS, tmp_path / "one", concurrency=1)
        assert server.in_flight_max == 1
        server.latency_s = 0.3  # long enough that every episode in flight waits on the server together
        seen: list[str] = []
        many = run_episodes(
            _planner(client), TASKS, tmp_path / "many", concurrency=4,
            agent_factory=lambda: _planner(client), on_episode=lambda r: seen.append(r.task_id),
        )  # fmt: skip
        assert server.in_flight_max == 4  # four requests waited on the server at once
    assert seen == IDS and [r.task_id for r in many] == IDS  # reported and returned in task order
    assert [_row(r) for r in many] == [_row(r) for r in one]
    reference = run_episodes(ReferenceAgent(), TASKS, None)
    assert [_row(r)[:6] for r in one] == [_row(r)[:6] for r in reference]  # the server played the plans
    assert all(r.success for r in one)
    for r in many:
        name = Path(r.trace_path).name
        assert Path(r.trace_path).read_bytes() == (tmp_path / "one" / name).read_bytes()


def test_an_episode_that_raises_lets_the_ones_in_flight_finish_and_be_reported(tmp_path):
    started: list[str] = []

    class Buggy(LLMPlanner):
        def reset(self, observation, info):
            started.append(info["task_id"])
            self._task = info["task_id"]
            super().reset(observation, info)

        async def aact(self, observation, info):
            if self._task == "subagent.birthday_note/0" and self._steps >= 1:
                raise TypeError("a bug in the second step")
            return await super().aact(observation, info)

    reported: list[str] = []
    with LatencyOpenAI(TASKS, latency_s=0.2) as server:
        client = OpenAIChatClient(server.base_url, "m", max_attempts=1)
        with pytest.raises(TypeError, match="a bug in the second step"):
            run_episodes(
                Buggy(client), TASKS, tmp_path, concurrency=3, agent_factory=lambda: Buggy(client),
                on_episode=lambda r: reported.append(r.task_id),
            )  # fmt: skip
    assert "subagent.birthday_note/0" in started and len(started) >= 3
    # every other episode that started finished and was reported, in task order, with its trace
    assert reported == [t for t in IDS if t in started and t != "subagent.birthday_note/0"]
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == sorted(evaluation.trace_name(t) for t in reported)


def test_concurrency_needs_an_agent_factory_and_no_pool():
    with pytest.raises(ValueError, match="agent_factory"):
        run_episodes(ReferenceAgent(), TASKS, None, concurrency=2)
    with pytest.raises(ValueError, match="device pool"):
        run_episodes(ReferenceAgent(), TASKS, None, concurrency=2, agent_factory=ReferenceAgent, pool=object())
    with pytest.raises(ValueError, match="concurrency must be >= 1"):
        run_episodes(ReferenceAgent(), TASKS, None, concurrency=0)


def test_a_sync_agent_runs_concurrently_too_with_the_same_results():
    one = run_episodes(ReferenceAgent(), TASKS, None)
    many = run_episodes(ReferenceAgent(), TASKS, None, concurrency=3, agent_factory=ReferenceAgent)
    assert [_row(r) for r in many] == [_row(r) for r in one]


def _cli_eval(server: LatencyOpenAI, out: Path, *extra: str) -> object:
    args = ["eval", "--agent", "llm", "--base-url", server.base_url, "--model", "m", "--api-key", "sk-e15-secret"]
    args += ["--tasks", ",".join(IDS), "--out", str(out), "--max-consecutive-infra", "2", *extra]
    return runner.invoke(cli.app, args, env={"PHONEENV_LLM_MAX_ATTEMPTS": "1"})


def test_eval_concurrency_on_the_cli_resumes_and_keeps_secrets_out(tmp_path):
    with LatencyOpenAI(TASKS, latency_s=0.05) as server:
        res = _cli_eval(server, tmp_path / "one")
        assert res.exit_code == 0, res.output
        res = _cli_eval(server, tmp_path / "many", "--concurrency", "4")
        assert res.exit_code == 0, res.output
        assert server.in_flight_max > 1
        rows = (tmp_path / "many" / "results.jsonl").read_text().splitlines()
        assert [json.loads(r)["task_id"] for r in rows] == IDS
        # a run killed after three episodes: --resume, with another concurrency, finishes it
        (tmp_path / "many" / "results.jsonl").write_text("".join(r + "\n" for r in rows[:3]))
        res = _cli_eval(server, tmp_path / "many", "--resume", "--concurrency", "2")
        assert res.exit_code == 0, res.output
        assert "3 episodes done, 3 to run" in " ".join(res.output.split())
    one = read_results(tmp_path / "one" / "results.jsonl")
    many = read_results(tmp_path / "many" / "results.jsonl")
    assert [_row(r) for r in many] == [_row(r) for r in one]
    for r in one:
        name = Path(r.trace_path).name
        assert (tmp_path / "many" / "traces" / name).read_bytes() == Path(r.trace_path).read_bytes()
    for path in (tmp_path / "many").rglob("*"):
        if path.is_file():
            assert b"sk-e15-secret" not in path.read_bytes(), path


def test_eval_concurrency_is_refused_with_ray_or_a_pool(tmp_path):
    base = ["eval", "--agent", "reference", "--tasks", IDS[0], "--out", str(tmp_path), "--concurrency", "2"]
    for extra in (["--ray", "local"], ["--device", "emulator-5554"]):
        res = runner.invoke(cli.app, [*base, *extra])
        assert res.exit_code == 2 and "--concurrency" in res.output and "--workers" in " ".join(res.output.split())
    assert not (tmp_path / "run.json").exists()


# -- the async client keeps the sync client's retries and errors ---------------------------------


def test_achat_retries_what_chat_retries_and_raises_the_same_errors():
    msgs = [{"role": "user", "content": "hi"}]
    with FakeOpenAI([status(500), status(429), tool_call("finish", {"answer": "hi"})]) as srv:
        client = OpenAIChatClient(srv.base_url, "m", max_attempts=3, backoff_max=0.0)

        async def one() -> object:
            try:
                return await client.achat(msgs)
            finally:
                await client.aclose()

        result = asyncio.run(one())
        assert result.tool_calls[0]["name"] == "finish" and result.usage.output == 7
        assert len(srv.requests) == 3
        srv.add([status(503)] * 3)
        with pytest.raises(InfrastructureError) as err:
            asyncio.run(one())
        assert err.value.kind == "server_error" and "3 tries" in str(err.value)
        assert len(srv.requests) == 6
        srv.add([status(400, "This model's maximum context length is 8 tokens")])
        with pytest.raises(InfrastructureError) as err:
            asyncio.run(one())
        assert err.value.kind == "context_overflow"
        assert len(srv.requests) == 7  # a refusal is not retried


# -- the trace writer ----------------------------------------------------------------------------


def test_a_trace_write_that_fails_stops_the_run_with_the_episodes_before_it_reported(tmp_path, monkeypatch):
    real = evaluation.atomic_write
    written: list[str] = []

    def second_fails(path, text, **kwargs):
        written.append(path.name)
        if len(written) == 2:
            raise OSError(28, "No space left on device")
        return real(path, text, **kwargs)

    monkeypatch.setattr(evaluation, "atomic_write", second_fails)
    reported: list[str] = []
    with pytest.raises(OSError, match="No space left"):
        run_episodes(ReferenceAgent(), TASKS, tmp_path, on_episode=lambda r: reported.append(r.task_id))
    assert reported == IDS[:1]
    assert [p.name for p in tmp_path.glob("*.jsonl")] == [evaluation.trace_name(IDS[0])]


def test_the_request_json_is_what_the_sdk_would_send_for_the_typed_arguments():
    # messages and tools travel in extra_body (skipping the SDK's slow transform): same JSON
    from openai._utils._transform import maybe_transform
    from openai.types.chat import completion_create_params as params

    from phoneenv.env import PhonePlanEnv

    env = PhonePlanEnv(tasks=TASKS[2:3])
    _, info = env.reset(seed=0, options={"task": TASKS[2]})
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    with FakeOpenAI([tool_call("finish", {"answer": "a"})] * 2) as srv:
        client = OpenAIChatClient(srv.base_url, "m", max_attempts=1, extra_body={"top_k": 5})
        client.chat(msgs, tools=info["tools"], max_tokens=9)
        asyncio.run(client.achat(msgs, tools=info["tools"], max_tokens=9))
    typed = {"model": "m", "messages": msgs, "tools": info["tools"], "max_tokens": 9, "temperature": 0.0}
    expected = {**maybe_transform(typed, params.CompletionCreateParamsNonStreaming), "top_k": 5}
    assert len(info["tools"]) > 50
    assert [r["body"] for r in srv.requests] == [expected, expected]
