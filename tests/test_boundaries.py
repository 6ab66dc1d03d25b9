"""Numbers and texts from outside are checked where they come in (issue 34, "model output"): a
reply nested deeper than Python's stack is no draft (``tasks propose`` ended in a RecursionError
traceback), a server's negative token count is unknown (it reached verdicts and scoreboards),
an agent's is refused by the env, and ``episode__reset`` keeps to its schema's seed bound."""

from __future__ import annotations

import numpy as np
import pytest

from phoneenv.env import PhonePlanEnv
from phoneenv.tasks import get_task


def test_a_reply_nested_past_the_stack_is_no_draft():
    from phoneenv.loop.propose import parse_drafts

    deep = "[" * 200_000 + "]" * 200_000
    assert parse_drafts(f'{deep} then {{"goal": "ok"}}') == [{"goal": "ok"}]
    assert parse_drafts("{" * 50_000) == []


def test_a_servers_negative_or_odd_token_count_is_unknown():
    pytest.importorskip("openai")
    from agents.llm.client import _Completion, _result

    reply = {"choices": [{"message": {"content": "hi"}}]}
    bad = {"prompt_tokens": -5, "completion_tokens": "7", "completion_tokens_details": {"reasoning_tokens": -1}}
    usage = _result(_Completion.model_validate({**reply, "usage": bad})).usage
    assert (usage.prompt, usage.output) == (0, 0) and usage.thinking >= 0
    good = {"prompt_tokens": 12, "completion_tokens": 3}
    usage = _result(_Completion.model_validate({**reply, "usage": good})).usage
    assert (usage.prompt, usage.output) == (12, 3)


def test_the_env_refuses_an_agents_negative_token_count():
    env = PhonePlanEnv(tasks=[get_task("clock.alarm_off/0")])
    env.reset(seed=0)
    for bad in ({"output": -1}, {"prompt": 2.5}, {"thinking": True}, {"output": "3"}):
        with pytest.raises(ValueError, match="a token count is a whole number >= 0"):
            env.add_agent_tokens(bad)
    env.add_agent_tokens({"prompt": np.int64(40), "output": 5, "thinking": None})
    *_, info = env.step({"name": "finish", "arguments": {"answer": "done"}})
    assert (info["verdict"]["prompt_tokens"], info["verdict"]["output_tokens"]) == (40, 5)


def test_episode_reset_keeps_to_its_seed_bound():
    from phoneenv.mcp_server import MAX_SEED, EpisodeServer

    server = EpisodeServer.for_task("clock.alarm_off/0")
    for seed in (MAX_SEED + 1, -1, 1.5, True):
        out, _ = server._reset_call({"seed": seed})
        assert out["ok"] is False and out["error"] == "invalid_arguments" and out["path"] == "/seed", out
    assert server._reset_call({"seed": MAX_SEED})[0]["ok"] is True
