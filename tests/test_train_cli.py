"""`phoneenv train sft` then `phoneenv train rl` on CPU with the tiny model, as a user runs them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

pytest.importorskip("trl")

from phoneenv.cli import app

pytestmark = pytest.mark.slow


def test_sft_then_rl_from_the_command_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    runner = CliRunner()
    sft = tmp_path / "sft"
    res = runner.invoke(app, ["train", "sft", "--out", str(sft), "--steps", "6", "--tasks", "template:settings.toggle"])
    assert res.exit_code == 0, res.output
    losses = [json.loads(line)["loss"] for line in (sft / "sft_log.jsonl").read_text().splitlines() if '"loss"' in line]
    assert len(losses) == 6 and losses[-1] < losses[0]
    assert (sft / "model" / "config.json").exists()
    rl = tmp_path / "rl"
    args = ["train", "rl", "--algo", "care", "--model", str(sft / "model"), "--out", str(rl), "--steps", "1"]
    res = runner.invoke(
        app, [*args, "--group-size", "2", "--max-turns", "2", "--max-new-tokens", "32", "--tasks", "settings.toggle/0"]
    )
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in (rl / "metrics.jsonl").read_text().splitlines()]
    assert records and (rl / "final" / "config.json").exists()
    res = runner.invoke(app, ["train", "rl", "--algo", "ppo", "--out", str(rl)])
    assert res.exit_code != 0 and "unknown algorithm" in res.output


def test_sft_prompts_offer_the_tools_rl_offers(tmp_path, monkeypatch):
    """`train sft` trains on prompts with exactly the tools `train rl` offers for the same tasks
    (the rollout's own filter decides), not a per-trace subset the RL prompts never show."""
    import rl.sft
    from phoneenv.cli import _task_apps
    from phoneenv.tasks import select
    from rl.rollout import _offered

    seen = {}

    def fake_train_sft(base, traces, out, cfg, tool_specs_or_tools=None):
        seen["tools"] = [t["function"]["name"] for t in tool_specs_or_tools]
        seen["scope"] = cfg.tools_scope
        return {"losses": [], "steps": 0}

    monkeypatch.setattr(rl.sft, "train_sft", fake_train_sft)
    monkeypatch.setattr("phoneenv.cli._base_model", lambda model, out: tmp_path / "base")
    selector = "template:settings.toggle,template:clock.alarm_off"
    res = CliRunner().invoke(app, ["train", "sft", "--out", str(tmp_path / "sft"), "--tasks", selector])
    assert res.exit_code == 0, res.output
    rl_filter = _task_apps(select(selector))
    expected = [t["function"]["name"] for t in rl.sft.episode_tools("sandbox") if _offered(t, rl_filter)]
    assert seen == {"tools": expected, "scope": "all"}
    assert "clock__set_alarm_enabled" in expected and "finish" in expected and "contacts__search" not in expected
