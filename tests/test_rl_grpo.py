"""GRPO and CARE through TRL's GRPOTrainer with multi-turn env rollouts (rl/trainers.py), on CPU.

The end-to-end tests train the tiny random model for two optimiser steps on one easy task with
G = 2. A random policy never succeeds, so to get a learning signal the rollout is wrapped to
*hand-make* each group's outcome (the tokens, masks and log-probs stay the model's own); the
advantages that reach TRL's loss are then checked against ``rl.care`` (CARE) or the GRPO formula.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rl.trainers import TrainConfig, build_dataset, episode_prompt, parse_episode_prompt, success_reward

TASK = "contacts.lookup_number/0"
TOOLS = ["contacts", "user", "finish"]


def test_train_config_validates() -> None:
    with pytest.raises(ValueError, match="algo"):
        TrainConfig(algo="ppo")
    with pytest.raises(ValueError, match="num_generations"):
        TrainConfig(num_generations=1)
    with pytest.raises(ValueError, match="care_controller"):
        TrainConfig(care_controller="llm")
    cfg = TrainConfig(max_turns=4, max_new_tokens=100)
    assert cfg.budget_tokens == 400.0 and cfg.budget_calls == 4.0
    assert cfg.care_config().p_f == 0.25
    assert TrainConfig(care={"mu": 0.2}).care_config().mu == 0.2
    json.dumps(TrainConfig(care={"mu": 0.2}).to_dict())


def test_episode_prompts_and_dataset() -> None:
    key = episode_prompt(TASK, 3)
    assert parse_episode_prompt(key) == (TASK, 3)
    with pytest.raises(ValueError):
        parse_episode_prompt("What is Ben's number?")
    ds = build_dataset(TrainConfig(tasks=[TASK, "clock.what_time/0"], seeds=[0, 1]))
    assert ds.column_names == ["prompt"]
    assert [parse_episode_prompt(p) for p in ds["prompt"]] == [
        (TASK, 0),
        (TASK, 1),
        ("clock.what_time/0", 0),
        ("clock.what_time/0", 1),
    ]
    assert build_dataset(TrainConfig(tasks="contacts.lookup_number/*", max_tasks=2)).num_rows == 2
    assert success_reward(["a", "b"], success=[1.0, 0.0]) == [1.0, 0.0]


# ------------------------------------------------------------------------------------------------
# End to end on CPU
# ------------------------------------------------------------------------------------------------


def _config(tmp_path, algo: str, **kwargs) -> TrainConfig:
    args = {
        "model_path": None,
        "output_dir": str(tmp_path / "run"),
        "tasks": [TASK],
        "tool_filter": TOOLS,
        "algo": algo,
        "num_generations": 2,
        "per_device_train_batch_size": 2,
        "max_steps": 2,
        "max_turns": 2,
        "max_new_tokens": 32,
        "learning_rate": 1e-2,
        "use_cpu": True,
        "report_to": "none",
        "save_final": False,
        "seed": 0,
    }
    args.update(kwargs)
    return TrainConfig(**args)


def _load(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)


def _changed(model, before) -> float:
    return sum(float((before[k] - v).abs().sum()) for k, v in model.state_dict().items())


@pytest.fixture
def spies(monkeypatch):
    """Records the advantages each loss call receives and lets a test rewrite episode outcomes."""
    import rl.trainers as trainers
    from rl.trainers import _trainer_class

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    state = {"losses": [], "groups": [], "outcome": None}
    cls = _trainer_class()
    real_loss = cls._compute_loss

    def compute_loss(self, model, inputs):
        state["losses"].append(inputs["advantages"].detach().double().cpu().numpy().copy())
        return real_loss(self, model, inputs)

    monkeypatch.setattr(cls, "_compute_loss", compute_loss)
    real_rollout = trainers.rollout_members

    def rollout_members(*args, **kwargs):
        trajs = real_rollout(*args, **kwargs)
        if state["outcome"] is not None:
            for t in trajs:
                for name, values in state["outcome"].items():
                    setattr(t, name, values[t.group_index])
        state["groups"].append(trajs)
        return trajs

    monkeypatch.setattr(trainers, "rollout_members", rollout_members)
    return state


@pytest.mark.slow
def test_care_end_to_end_and_its_advantages_reach_the_loss(tmp_path, tiny_model_dir, spies) -> None:
    from rl.care import efficiency_cost, group_care
    from rl.trainers import train_rl

    model, tokenizer = _load(tiny_model_dir)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    # A hand-made all-success group (efficiency mode): members differ by 0 vs 2 tool calls. With
    # budgets 2 calls / 64 tokens and weight 0.5 the call part differs by 0.5 and the token part by
    # less, so the costs always differ.
    spies["outcome"] = {"success": [True, True], "progress": [1.0, 1.0], "tool_calls": [0, 2]}
    cfg = _config(tmp_path, "care", report_to="tensorboard")
    summary = train_rl(cfg, model, tokenizer)

    assert summary["algo"] == "care" and summary["steps"] == 2 and summary["episodes"] == 4
    assert summary["success"] == 1.0 and summary["seconds_per_step"] > 0
    assert len(spies["losses"]) == 2 and len(spies["groups"]) == 2
    for got, trajs in zip(spies["losses"], spies["groups"], strict=True):
        success = [float(t.success) for t in trajs]
        cost = efficiency_cost(
            [t.output_tokens for t in trajs], [t.tool_calls for t in trajs], cfg.budget_tokens, cfg.budget_calls, 0.5
        )
        expected = group_care(success, [t.progress for t in trajs], cost, cfg.care_config())
        assert expected.mode.value == "efficiency"
        # TRL shuffles the rows before the loss: compare as multisets.
        np.testing.assert_allclose(np.sort(got), np.sort(expected.advantages), rtol=1e-6, atol=1e-7)
        # Non-zero, and CARE-sized: TRL's GRPO would give ±0.707 to any two unequal rewards.
        assert 0 < np.abs(got).max() < 0.2
    assert _changed(model, before) > 0

    lines = Path(summary["metrics_path"]).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    rollouts = [r for r in records if r["kind"] == "rollout"]
    logs = [r for r in records if r["kind"] == "log" and "loss" in r]
    assert len(rollouts) == 2 and len(logs) == 2
    assert rollouts[0]["mode_counts"] == {"shaping": 0, "outcome": 0, "efficiency": 1}
    assert rollouts[0]["groups"][0]["episode"] == episode_prompt(TASK, 0)
    metrics = rollouts[0]["metrics"]
    assert metrics["phone/success"] == 1.0 and metrics["adv/abs_max"] > 0
    assert math.isclose(metrics["adv/mean"], 0.0, abs_tol=1e-12)
    assert {"care/mode_efficiency", "adv/std", "phone/output_tokens", "phone/tool_calls"} <= set(logs[0])
    assert list((tmp_path / "run").rglob("events.out.tfevents*"))  # TensorBoard


@pytest.mark.slow
def test_grpo_end_to_end_uses_trl_advantages(tmp_path, tiny_model_dir, spies) -> None:
    from rl.trainers import train_rl

    model, tokenizer = _load(tiny_model_dir)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    spies["outcome"] = {"success": [True, False], "progress": [1.0, 0.0]}
    summary = train_rl(_config(tmp_path, "grpo"), model, tokenizer)
    assert summary["algo"] == "grpo" and summary["steps"] == 2 and summary["success"] == 0.5
    # TRL: rewards (1, 0), mean 0.5, unbiased std sqrt(0.5) → ±0.5 / (0.70711 + 1e-4).
    expected = 0.5 / (math.sqrt(0.5) + 1e-4)
    for got in spies["losses"]:
        np.testing.assert_allclose(np.sort(got), [-expected, expected], rtol=1e-5)
    assert _changed(model, before) > 0


@pytest.mark.slow
def test_care_all_failure_group_has_zero_advantages_and_leaves_the_policy(tmp_path, tiny_model_dir, spies) -> None:
    from rl.trainers import train_rl

    model, tokenizer = _load(tiny_model_dir)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    spies["outcome"] = {"success": [False, False], "progress": [0.0, 1.0]}  # p = 0: no shaping by default
    cfg = _config(tmp_path, "care", care_controller="rule", care_controller_every=1, care_controller_min_groups=1)
    summary = train_rl(cfg, model, tokenizer)
    assert summary["steps"] == 2 and len(spies["losses"]) == 2
    assert all((got == 0).all() for got in spies["losses"])
    # Zero advantages, beta = 0, no weight decay: the policy-gradient loss and its gradient are 0.
    assert _changed(model, before) == 0
    # The rule controller saw two all-failure groups at step 1: more shaping, less efficiency pressure.
    lines = Path(summary["metrics_path"]).read_text(encoding="utf-8").splitlines()
    (ctl,) = [r for r in map(json.loads, lines) if r["kind"] == "controller"]
    moved = {c["name"]: c["new"] - c["old"] for c in ctl["changes"]}
    assert moved["lam"] > 0 and moved["mu"] < 0 and moved["p_f"] < 0  # rare wins keep their advantage
    assert summary["care"]["lam"] > cfg.care_config().lam


_TWO_RANKS = r"""
import json, os, sys
sys.path.insert(0, {repo!r})
import rl.trainers as T
from rl.trainers import TrainConfig, train_rl

real = T.rollout_members

def rollout_members(*args, **kwargs):
    trajs = real(*args, **kwargs)
    for t in trajs:  # hand-made all-success groups whose members differ by 0 vs 2 tool calls
        t.success, t.progress, t.tool_calls = True, 1.0, 2 * t.group_index
    with open(os.path.join({out!r}, "rank%s.jsonl" % os.environ["RANK"]), "a") as fh:
        fh.write(json.dumps({{"task": args[2], "members": [t.group_index for t in trajs]}}) + "\n")
    return trajs

T.rollout_members = rollout_members
cfg = TrainConfig(**json.loads({cfg!r}))
train_rl(cfg)
"""


@pytest.mark.slow
def test_groups_split_over_two_processes_are_gathered_whole(tmp_path, tiny_model_dir) -> None:
    """torchrun with 2 CPU processes (gloo), per-device batch 1, G = 2: every group has one member
    on each rank; CARE must see both members (and the JSONL shows whole groups)."""
    import os
    import socket
    import subprocess
    import sys

    from rl.care import efficiency_cost, group_care

    cfg = _config(tmp_path, "care", model_path=str(tiny_model_dir), per_device_train_batch_size=1)
    cfg.tasks = [TASK, "contacts.lookup_number/1"]
    script = tmp_path / "two_ranks.py"
    repo = str(Path(__file__).resolve().parents[1])
    script.write_text(_TWO_RANKS.format(repo=repo, out=str(tmp_path), cfg=json.dumps(cfg.to_dict())))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRL_EXPERIMENTAL_SILENCE="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={port}", str(script)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]

    for rank in (0, 1):  # each rank ran exactly its own member of each group
        runs = [json.loads(line) for line in (tmp_path / f"rank{rank}.jsonl").read_text().splitlines()]
        assert [r["members"] for r in runs] == [[rank], [rank]]
    lines = (tmp_path / "run" / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    rollouts = [r for r in map(json.loads, lines) if r["kind"] == "rollout"]
    assert len(rollouts) == 2 and {r["groups"][0]["episode"] for r in rollouts} == {
        episode_prompt(TASK, 0),
        episode_prompt("contacts.lookup_number/1", 0),
    }
    for r in rollouts:
        (g,) = r["groups"]
        assert r["episodes"] == 2 and g["tool_calls"] == [0.0, 2.0]
        cost = efficiency_cost(g["output_tokens"], g["tool_calls"], cfg.budget_tokens, cfg.budget_calls, 0.5)
        expected = group_care([1.0, 1.0], [1.0, 1.0], cost, cfg.care_config()).advantages
        np.testing.assert_allclose(g["advantages"], expected, rtol=1e-12)
        assert g["mode"] == "efficiency" and abs(g["advantages"][0]) > 0
