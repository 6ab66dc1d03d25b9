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
from tests import waiting

TASK = "contacts.lookup_number/0"
TOOLS = ["contacts", "user", "finish"]


def test_train_config_validates() -> None:
    from trl import GRPOConfig

    from rl.care import CareConfig

    with pytest.raises(ValueError, match="algo"):
        TrainConfig(algo="ppo")
    with pytest.raises(ValueError, match="num_generations"):
        TrainConfig(num_generations=1)
    with pytest.raises(ValueError, match="care_controller"):
        TrainConfig(care_controller="bandit")
    with pytest.raises(ValueError, match="base_url"):
        TrainConfig(care_controller="llm")
    with pytest.raises(ValueError, match="tool filter"):
        TrainConfig(tool_filter=["contacts", ""])
    with pytest.raises(ValueError, match="invalid_reply_penalty"):
        TrainConfig(invalid_reply_penalty=1.5)
    cfg = TrainConfig(max_turns=4, max_new_tokens=100)
    assert isinstance(cfg, GRPOConfig) and cfg.num_generations == 8 and cfg.tool_filter == "task"
    assert cfg.care_controller == "rule" and cfg.competence_sampling and cfg.algo == "care"
    assert cfg.budget_tokens == 400.0 and cfg.budget_calls == 4.0 and cfg.max_completion_length == 400
    assert cfg.save_strategy == "no" and cfg.logging_steps == 1 and cfg.learning_rate == 1e-6
    assert cfg.care_config() == CareConfig()
    assert TrainConfig(care={"mu": 0.2}).care_config().mu == 0.2
    assert TrainConfig(shape_all_failure=True).care_config().shape_all_failure
    assert TrainConfig(care='{"mu": 0.2}').care_config().mu == 0.2  # JSON text, as from the command line
    json.dumps(TrainConfig(care={"mu": 0.2}).to_dict())
    rc = TrainConfig(max_turns=3, max_new_tokens=40, temperature=0.7, tool_filter="contacts,finish").rollout_config()
    assert (rc.max_turns, rc.max_new_tokens, rc.temperature, rc.tool_filter) == (3, 40, 0.7, "contacts,finish")


def test_controller_api_key_never_reaches_an_artifact(monkeypatch) -> None:
    import pickle

    cfg = TrainConfig(care_controller="llm", care_controller_base_url="http://127.0.0.1:1/v1",
                      care_controller_model="m", care_controller_api_key="sk-secret-123")  # fmt: skip
    assert cfg.controller_api_key() == "sk-secret-123"
    assert "sk-secret-123" not in json.dumps(cfg.to_dict()) and "sk-secret-123" not in cfg.to_json_string()
    assert b"sk-secret-123" not in pickle.dumps(cfg) and "sk-secret-123" not in repr(cfg)
    monkeypatch.setenv("PHONEENV_CONTROLLER_API_KEY", "sk-from-env")
    assert TrainConfig().controller_api_key() == "sk-from-env"


def test_hf_argument_parser_round_trip(tmp_path) -> None:
    """Every field is a flag (with our help text), and flags, JSON and YAML give the same config."""
    import yaml
    from transformers import HfArgumentParser

    from rl.train_help import TRAIN_HELP
    from rl.trainers import parse_config

    argv = ["--tasks", "split:train", "--algo", "penalty", "--care", '{"mu": 0.3}', "--seeds", "0", "1",
            "--env_kwargs", '{"backend": "sandbox"}', "--shape-all-failure", "--no-competence-sampling",
            "--care_controller", "none", "--num_generations", "4", "--per_device_train_batch_size", "4",
            "--eval_tasks", "split:test", "--tool_filter", "contacts,finish", "--use_cpu", "--report_to", "none"]  # fmt: skip
    cfg = parse_config(argv)
    want = {
        "tasks": ["split:train"], "algo": "penalty", "care": {"mu": 0.3}, "seeds": [0, 1],
        "env_kwargs": {"backend": "sandbox"}, "shape_all_failure": True, "competence_sampling": False,
        "care_controller": "none", "num_generations": 4, "eval_tasks": "split:test", "tool_filter": "contacts,finish",
    }  # fmt: skip
    assert {k: getattr(cfg, k) for k in want} == want
    assert cfg.care_config().mu == 0.3 and cfg.care_config().shape_all_failure
    plain = {k: v for k, v in want.items()} | {"use_cpu": True, "report_to": "none", "per_device_train_batch_size": 4}
    (tmp_path / "c.json").write_text(json.dumps(plain))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(plain))
    for path in ("c.json", "c.yaml"):
        other = parse_config([str(tmp_path / path)])
        assert {k: getattr(other, k) for k in want} == want
    help_text = HfArgumentParser(TrainConfig).format_help()
    for name in ("algo", "shape_all_failure", "competence_sampling", "eval_tasks", "care_controller_base_url"):
        assert f"--{name}" in help_text
    assert " ".join(TRAIN_HELP["competence_floor"].split()[:6]) in " ".join(help_text.split())


def test_episode_stats_are_gathered_by_name() -> None:
    """Each process sends its rows as dicts; the gathered list keeps every field by name, in
    process order, whatever the key order of the inputs."""
    from rl.trainers import EpisodeStats, _check_groups, gather_episode_stats

    def row(k, success, tokens, **extra):
        return {"turns": 2, "invalid_replies": k, "tool_calls": 1.0 + k, "output_tokens": tokens,
                "progress": 0.5, "success": success, "group_index": k, "env_seed": 3, "task_id": TASK,
                "prompt": "ignored", **extra}  # fmt: skip

    def named(rows):
        return [{f: r[f] for f in EpisodeStats.__dataclass_fields__} for r in rows]

    mine, theirs = [row(0, 1.0, 10.0)], [row(1, 0.0, 30.0)]
    sent = []

    def fake_gather(local):  # all processes' lists, concatenated in process order
        sent.append(local)
        return local + named(theirs)

    stats = gather_episode_stats(mine, gather=fake_gather)
    assert sent == [named(mine)]  # what this process sends: the named fields only
    assert [s.success for s in stats] == [1.0, 0.0] and [s.output_tokens for s in stats] == [10.0, 30.0]
    assert [s.group_index for s in stats] == [0, 1] and stats[0].key == episode_prompt(TASK, 3)
    assert [s.invalid_replies for s in stats] == [0, 1] and [s.invalid_share for s in stats] == [0.0, 0.5]
    assert _check_groups(stats, 2) == [slice(0, 2)]
    with pytest.raises(AssertionError, match="member indices"):
        _check_groups(stats[::-1], 2)
    with pytest.raises(KeyError):
        gather_episode_stats([{"success": 1.0}], gather=lambda x: x)


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


def _records(summary) -> list[dict]:
    return [json.loads(line) for line in Path(summary["metrics_path"]).read_text(encoding="utf-8").splitlines()]


def _load(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)


def _changed(model, before) -> float:
    return sum(float((before[k] - v).abs().sum()) for k, v in model.state_dict().items())


@pytest.fixture
def spies(monkeypatch):
    """Records the advantages each loss call receives and lets a test rewrite episode outcomes."""
    import rl.trainers as trainers
    from rl.trainers import PhoneGRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    state = {"losses": [], "groups": [], "outcome": None, "invalid": None}
    cls = PhoneGRPOTrainer
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
        if state["invalid"] is not None:  # member i's replies: all without a call, or all with one
            for t in trajs:
                for turn in t.turns:
                    turn.calls = (
                        [] if state["invalid"][t.group_index] else [{"id": "c", "name": "finish", "arguments": {}}]
                    )
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
        assert 0 < np.abs(got).max() < 0.5
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
@pytest.mark.parametrize("algo", ["grpo", "care"])
def test_invalid_reply_penalty_ranks_a_win_with_invalid_replies_below_a_clean_one(
    tmp_path, tiny_model_dir, spies, algo
) -> None:
    """invalid_reply_penalty ν: the reward drops by ν × the share of replies without a tool call."""
    from rl.trainers import train_rl

    model, tokenizer = _load(tiny_model_dir)
    spies["invalid"] = [False, True]
    if algo == "grpo":
        # Both win; member 1's replies hold no call: rewards (1, 0.5), TRL's unbiased std sqrt(0.125).
        spies["outcome"] = {"success": [True, True], "progress": [1.0, 1.0]}
        expected = 0.25 / (math.sqrt(0.125) + 1e-4)
    else:
        # One win (p = 0.5, CARE's outcome mode: reward = success), the winner's replies hold no
        # call: rewards (0.5, 0), population std 0.25 under the floor sqrt(0.25 · 0.75).
        spies["outcome"] = {"success": [False, True], "progress": [0.0, 1.0]}
        expected = 0.25 / math.sqrt(0.1875)
    summary = train_rl(_config(tmp_path, algo, max_steps=1, invalid_reply_penalty=0.5), model, tokenizer)
    (got,) = spies["losses"]
    np.testing.assert_allclose(np.sort(got), [-expected, expected], rtol=1e-5)
    (rollout,) = [r for r in _records(summary) if r["kind"] == "rollout"]
    assert rollout["groups"][0]["invalid_share"] == [0.0, 1.0]
    assert rollout["metrics"]["phone/invalid_share"] == 0.5


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
    # Loud: a warning record per step with all-zero advantages, and the count in the summary.
    records = _records(summary)
    warnings = [r for r in records if r["kind"] == "warning"]
    assert [w["step"] for w in warnings] == [0, 1] and all(w["reason"] == "zero_advantages" for w in warnings)
    assert summary["zero_advantage_steps"] == 2
    (start,) = [r for r in records if r["kind"] == "controller_start"]
    assert start["source"] == "rule" and start["every"] == 1 and set(start["bounds"]) >= {"lam", "mu", "p_f"}


@pytest.mark.slow
def test_care_step_on_mixed_success_changes_the_weights(tmp_path, tiny_model_dir, spies) -> None:
    """Defaults of the loop (rule controller, competence sampler) on a batch where one member wins:
    the weights move, no zero-advantage warning, the sampler logs the task as learnable."""
    from rl.trainers import train_rl

    model, tokenizer = _load(tiny_model_dir)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    spies["outcome"] = {"success": [True, False], "progress": [1.0, 0.5]}
    summary = train_rl(_config(tmp_path, "care", max_steps=1), model, tokenizer)
    assert summary["steps"] == 1 and summary["zero_advantage_steps"] == 0
    (got,) = spies["losses"]
    assert np.abs(got).min() > 0
    assert _changed(model, before) > 0
    records = _records(summary)
    assert not [r for r in records if r["kind"] == "warning"]
    (sampler,) = [r for r in records if r["kind"] == "sampler"]
    assert sampler["weights"] == {TASK: 1.0} and sampler["probabilities"] == {TASK: 1.0}


@pytest.mark.slow
def test_penalty_ablation_uses_penalised_rewards_and_vanilla_normalisation(tmp_path, tiny_model_dir, spies) -> None:
    from rl.care import CareConfig, efficiency_cost, grpo_advantages, penalty_rewards
    from rl.trainers import train_rl

    model, tokenizer = _load(tiny_model_dir)
    spies["outcome"] = {"success": [True, True], "progress": [1.0, 1.0], "tool_calls": [0, 2]}
    cfg = _config(tmp_path, "penalty", max_steps=1)
    summary = train_rl(cfg, model, tokenizer)
    assert summary["algo"] == "penalty" and summary["care"] is None
    (trajs,) = spies["groups"]
    cost = efficiency_cost(
        [t.output_tokens for t in trajs], [t.tool_calls for t in trajs], cfg.budget_tokens, cfg.budget_calls, 0.5
    )
    expected = grpo_advantages(penalty_rewards([1.0, 1.0], cost, CareConfig().mu), ddof=1)  # TRL's normalisation
    np.testing.assert_allclose(np.sort(spies["losses"][0]), np.sort(expected), rtol=1e-6)
    # TRL's normalisation blows a small cost gap up to ±0.707, as any two unequal rewards (CARE's
    # floor keeps it small).
    assert np.abs(expected).min() > 0.7
    (rollout,) = [r for r in _records(summary) if r["kind"] == "rollout"]
    assert rollout["groups"][0]["rewards"] == pytest.approx(penalty_rewards([1, 1], cost, CareConfig().mu).tolist())


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
    import sys

    from rl.care import CareConfig, efficiency_cost, group_care

    # Plain fields, not a TrainConfig: its GRPOConfig checks the batch against this process's world
    # size (1 here, where a per-device batch of 1 cannot hold a group of 2).
    plain = {"model_path": str(tiny_model_dir), "per_device_train_batch_size": 1, "competence_sampling": False,
             "tasks": [TASK, "contacts.lookup_number/1"], "output_dir": str(tmp_path / "run"), "tool_filter": TOOLS,
             "algo": "care", "num_generations": 2, "max_steps": 2, "max_turns": 2, "max_new_tokens": 32,
             "learning_rate": 1e-2, "use_cpu": True, "report_to": "none", "save_final": False, "seed": 0}  # fmt: skip
    budget_tokens, budget_calls = 2 * 32, 2  # max_turns × max_new_tokens, max_turns
    script = tmp_path / "two_ranks.py"
    repo = str(Path(__file__).resolve().parents[1])
    script.write_text(_TWO_RANKS.format(repo=repo, out=str(tmp_path), cfg=json.dumps(plain)))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRL_EXPERIMENTAL_SILENCE="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={port}", str(script)]
    proc = waiting.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
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
        cost = efficiency_cost(g["output_tokens"], g["tool_calls"], budget_tokens, budget_calls, 0.5)
        expected = group_care([1.0, 1.0], [1.0, 1.0], cost, CareConfig()).advantages
        np.testing.assert_allclose(g["advantages"], expected, rtol=1e-12)
        assert g["mode"] == "efficiency" and abs(g["advantages"][0]) > 0


@pytest.mark.slow
def test_llm_controller_through_transformers_serve_and_held_out_eval(
    tmp_path, tiny_model_dir, spies, llm_server, monkeypatch
) -> None:
    """``care_controller="llm"`` reaches a real OpenAI-compatible endpoint (`transformers serve`
    over the tiny model) at its cadence, its API key (from the env var) is written nowhere, and
    ``eval_tasks`` runs TRL's eval loop on held-out seeds after training (the ``heldout`` block)."""
    from agents.llm.client import OpenAIChatClient
    from rl.trainers import train_rl

    calls = []
    real_chat = OpenAIChatClient.chat

    def chat(self, messages, **kwargs):
        calls.append((self.base_url if hasattr(self, "base_url") else None, messages))
        return real_chat(self, messages, **kwargs)

    monkeypatch.setattr(OpenAIChatClient, "chat", chat)
    monkeypatch.setenv("PHONEENV_CONTROLLER_API_KEY", "sk-never-written-42")
    model, tokenizer = _load(tiny_model_dir)
    spies["outcome"] = {"success": [True, False], "progress": [1.0, 0.0]}
    cfg = _config(
        tmp_path, "care", care_controller="llm", care_controller_base_url=llm_server.base_url,
        care_controller_model=llm_server.model, care_controller_every=1, care_controller_min_groups=1,
        eval_tasks="contacts.lookup_number/1", save_final=True, report_to="tensorboard",
    )  # fmt: skip
    summary = train_rl(cfg, model, tokenizer)
    assert summary["steps"] == 2
    assert len(calls) == 1  # rollouts at global steps 0 and 1; every = 1: due at step 1
    assert "success_rate" in json.dumps(calls[0][1])  # the window's statistics went to the model
    records = _records(summary)
    (start,) = [r for r in records if r["kind"] == "controller_start"]
    assert start["source"] == "llm"
    # Held out: one key (task /1, seed 1: above the training seed 0), G episodes, after training.
    rollouts = [r for r in records if r["kind"] == "rollout"]
    evals = [r for r in rollouts if r["mode"] == "eval"]
    assert [g["episode"] for r in evals for g in r["groups"]] == [episode_prompt("contacts.lookup_number/1", 1)]
    held = summary["heldout"]
    assert held["episodes"] == 2 and held["success"] == 0.5  # the spy's outcome, also on eval episodes
    (rec,) = [r for r in records if r["kind"] == "heldout"]
    assert rec["episodes"] == 2
    for path in Path(cfg.output_dir).rglob("*"):
        if path.is_file():
            assert b"sk-never-written-42" not in path.read_bytes(), path


def test_train_eval_curve_on_the_training_episodes(tmp_path, tiny_model_dir, spies) -> None:
    """``eval_tasks="train"`` evaluates the training tasks at the training seeds at the start and
    every ``eval_steps``: one curve point per evaluation, no extra evaluation after a last step
    that was already evaluated, and the final point as the summary's ``train_eval`` block."""
    from rl.trainers import train_rl

    model, tokenizer = _load(tiny_model_dir)
    spies["outcome"] = {"success": [True, False], "progress": [1.0, 0.0]}
    cfg = _config(
        tmp_path, "grpo", eval_tasks="train", eval_strategy="steps", eval_steps=1, eval_on_start=True,
        num_generations_eval=2, per_device_eval_batch_size=2,
    )  # fmt: skip
    summary = train_rl(cfg, model, tokenizer)
    records = _records(summary)
    evals = [r for r in records if r["kind"] == "rollout" and r["mode"] == "eval"]
    # steps 0 (eval_on_start), 1 and 2: the training key itself, G_eval = 2 episodes each
    assert [r["step"] for r in evals] == [0, 1, 2]
    assert {g["episode"] for r in evals for g in r["groups"]} == {episode_prompt(TASK, 0)}
    curve = summary["eval_curve"]
    assert [(p["step"], p["episodes"], p["success"]) for p in curve] == [(0, 2, 0.5), (1, 2, 0.5), (2, 2, 0.5)]
    assert summary["heldout"] is None
    assert summary["train_eval"]["episodes"] == 2 and summary["train_eval"]["success"] == 0.5
    (rec,) = [r for r in records if r["kind"] == "train_eval"]
    assert rec["step"] == 2
    # the competence sampler learns from the 3 evaluations of the training episodes and the 2 steps
    assert len([r for r in records if r["kind"] == "sampler"]) == 5


def test_eval_curve_weights_batches_by_episodes() -> None:
    """Two eval batches at one step average by their episodes, not by batch; train records and
    other kinds are ignored; points come in step order."""
    from rl.trainers import eval_curve

    def rec(step, mode, n, success, tokens=10.0):
        m = {
            "phone/success": success,
            "phone/progress": success,
            "phone/output_tokens": tokens,
            "phone/tool_calls": 1.0,
        }
        return {"kind": "rollout", "step": step, "mode": mode, "episodes": n, "metrics": m}

    history = [
        rec(10, "eval", 6, 0.5, 20.0),
        rec(10, "eval", 2, 1.0, 40.0),
        rec(0, "eval", 8, 0.25),
        rec(5, "train", 8, 1.0),
    ]
    curve = eval_curve(history)
    assert [p["step"] for p in curve] == [0, 10]
    assert curve[1]["episodes"] == 8
    assert curve[1]["success"] == pytest.approx((6 * 0.5 + 2 * 1.0) / 8)  # 0.625, not the batch mean 0.75
    assert curve[1]["output_tokens"] == pytest.approx((6 * 20 + 2 * 40) / 8)
