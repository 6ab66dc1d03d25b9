"""`phoneenv train sft` then `phoneenv train rl` on CPU with the tiny model, as a user runs them."""

from __future__ import annotations

import importlib.util
import json

import pytest
from typer.testing import CliRunner

pytest.importorskip("trl")

from phoneenv.cli import app
from rl.train_help import DEFAULT_INVALID_REPLY_PENALTY

pytestmark = pytest.mark.slow


def test_sft_then_rl_from_the_command_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    runner = CliRunner()
    sft = tmp_path / "sft"
    args = ["train", "sft", "--model", "tiny", "--out", str(sft), "--steps", "6", "--tasks", "template:settings.toggle"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "tokens of erroneous replies masked" in res.output and any((sft / "detours").rglob("*.jsonl"))
    assert "train sft" in res.output and "6/6" in res.output  # the progress bar, fed by the real trainer
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
    # the filter SFT trained with (the default, apps) is recorded, used by RL, and recorded again
    assert json.loads((sft / "model" / "phoneenv_tools.json").read_text()) == {"tool_filter": "apps"}
    assert json.loads((rl / "final" / "phoneenv_tools.json").read_text()) == {"tool_filter": "apps"}
    # the training tasks are evaluated at the start and after the last step: the curve
    evals = [r for r in records if r["kind"] == "rollout" and r["mode"] == "eval"]
    assert sorted({r["step"] for r in evals}) == [0, 1]
    from rl.trainers import episode_prompt

    assert {g["episode"] for r in evals for g in r["groups"]} == {episode_prompt("settings.toggle/0", 0)}
    assert "success on the training tasks" in res.output
    # per step: the share of groups per CARE mode and with zero advantages, in the log and printed
    train = [r for r in records if r["kind"] == "rollout" and r["mode"] == "train"]
    shares = [r["metrics"][f"groups/{m}_share"] for r in train for m in ("shaping", "outcome", "efficiency")]
    assert len(shares) == 3 and sum(shares) == pytest.approx(1.0)
    assert "CARE mode shares" in res.output and "zero-advantage groups" in res.output
    res = runner.invoke(app, ["train", "rl", "--algo", "ppo", "--out", str(rl)])
    assert res.exit_code != 0 and "unknown algorithm" in res.output


def test_train_rl_options_map_onto_train_config(tmp_path, monkeypatch):
    """`train rl` builds the TrainConfig its flags say (GPU not forced off, G = 8, the task tool
    filter, the controller and held-out tasks), and its option help is the config's field help."""
    import rl.trainers
    from rl.train_help import TRAIN_HELP

    seen = {}
    monkeypatch.setattr(rl.trainers, "train_rl", lambda cfg: seen.setdefault("cfg", cfg) and {"steps": 0})
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    for name in ("model.safetensors", "tokenizer.json"):  # a checkpoint by its files' names
        (model / name).write_bytes(b"")
    runner = CliRunner()
    args = ["train", "rl", "--model", str(model), "--out", str(tmp_path / "rl"), "--tasks", "template:settings.toggle"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    cfg = seen.pop("cfg")
    assert cfg.model_path == str(model) and not cfg.use_cpu and cfg.num_generations == 8
    assert cfg.tool_filter == "apps" and cfg.care_controller == "rule" and cfg.competence_sampling
    assert cfg.algo == "care" and cfg.eval_tasks == "train" and not cfg.shape_all_failure
    assert cfg.invalid_reply_penalty == DEFAULT_INVALID_REPLY_PENALTY == 0.0  # the benchmark's default too
    assert not cfg.bf16 and not cfg.use_vllm  # a CPU: no bf16, transformers generation
    assert (cfg.eval_strategy, cfg.eval_steps, cfg.eval_on_start, cfg.num_generations_eval) == ("steps", 10, True, 4)
    assert cfg.per_device_eval_batch_size % cfg.num_generations_eval == 0
    assert (cfg.max_steps, cfg.learning_rate, cfg.temperature) == (40, 1e-3, 0.5)
    (model / "phoneenv_tools.json").write_text('{"tool_filter": "settings,finish,user"}')
    res = runner.invoke(app, [*args, "--eval-every", "0"])
    assert res.exit_code == 0, res.output
    cfg = seen.pop("cfg")
    assert cfg.tool_filter == "settings,finish,user" and cfg.eval_strategy == "no" and cfg.eval_tasks == "train"
    (model / "phoneenv_tools.json").unlink()
    more = ["--algo", "penalty", "--shape-all-failure", "--no-competence-sampling", "--tools", "settings,finish",
            "--eval-tasks", "template:clock.alarm_off", "--group-size", "4", "--invalid-reply-penalty", "0.3"]  # fmt: skip
    res = runner.invoke(app, [*args, *more])
    assert res.exit_code == 0, res.output
    cfg = seen.pop("cfg")
    assert (cfg.algo, cfg.shape_all_failure, cfg.competence_sampling, cfg.tool_filter) == (
        "penalty", True, False, "settings,finish"
    )  # fmt: skip
    assert cfg.eval_tasks.startswith("clock.alarm_off/") and cfg.num_generations == cfg.per_device_train_batch_size == 4
    assert cfg.invalid_reply_penalty == 0.3
    res = runner.invoke(app, [*args, "--invalid-reply-penalty", "2"])
    assert res.exit_code != 0 and "invalid-reply-penalty" in res.output
    llm = ["--care-controller", "llm", "--controller-base-url", "http://127.0.0.1:9/v1", "--controller-model", "m"]
    res = runner.invoke(app, [*args, *llm])
    assert res.exit_code == 0, res.output
    cfg = seen.pop("cfg")
    assert (cfg.care_controller, cfg.care_controller_base_url, cfg.care_controller_model) == (
        "llm", "http://127.0.0.1:9/v1", "m"
    )  # fmt: skip
    res = runner.invoke(app, [*args, "--care-controller", "llm"])
    assert res.exit_code != 0 and "controller-base-url" in res.output
    assert cfg.sampler is None
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"capability": {"update": 2.5}, "source": {"generated": 3.0}}))
    res = runner.invoke(app, [*args, "--sampler", str(weights)])
    assert res.exit_code == 0, res.output
    cfg = seen.pop("cfg")
    assert cfg.sampler["capability"] == {"update": 2.5} and cfg.sampler["source"] == {"generated": 3.0}
    from rl.trainers import build_dataset

    assert len(build_dataset(cfg)) == len(cfg.tasks) * len(cfg.seeds)  # drawn by the weights, as many as before
    weights.write_text(json.dumps({"capability": {"update": -1}}))
    res = runner.invoke(app, [*args, "--sampler", str(weights)])
    assert res.exit_code == 2 and "not a sampler weights file" in " ".join(res.output.split())
    import typer

    command = typer.main.get_command(app).commands["train"].commands["rl"]
    helps = {p.name: p.help for p in command.params}
    for option, field in [("competence_sampling", "competence_sampling"), ("group_size", "num_generations"),
                          ("eval_tasks", "eval_tasks"), ("algo", "algo")]:  # fmt: skip
        assert helps[option] == TRAIN_HELP[field]
    assert helps["tools"].startswith(TRAIN_HELP["tool_filter"]) and helps["temperature"].startswith(
        TRAIN_HELP["temperature"]
    )


def _fake_model(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    for name in ("model.safetensors", "tokenizer.json"):  # a checkpoint by its files' names
        (model / name).write_bytes(b"")
    return ["train", "rl", "--model", str(model), "--out", str(tmp_path / "rl"), "--tasks", "template:settings.toggle"]


def test_train_rl_bf16_and_vllm_flags_check_the_hardware(tmp_path, monkeypatch):
    """On this CPU: --bf16 is refused (torch says no bf16 GPU), --vllm without the vllm package
    names its extra, --vllm with vLLM but no GPU is refused; nothing is trained."""
    import torch

    import phoneenv.cli.train
    import rl.trainers
    from phoneenv.extras import MissingExtra

    assert not torch.cuda.is_available()
    seen = {}
    monkeypatch.setattr(rl.trainers, "train_rl", lambda cfg: seen.setdefault("cfg", cfg) and {"steps": 0})
    args = _fake_model(tmp_path)
    runner = CliRunner()
    res = runner.invoke(app, [*args, "--bf16"])
    assert res.exit_code == 2 and "bf16 needs a CUDA GPU" in " ".join(res.output.split()), res.output
    res = runner.invoke(app, [*args, "--vllm"])
    if importlib.util.find_spec("vllm") is None:  # the CLI prints it as one line (test_extras)
        assert isinstance(res.exception, MissingExtra) and res.exception.extra == "vllm"
    monkeypatch.setattr(phoneenv.cli.train, "require", lambda *a, **k: None)  # as if vllm were installed
    res = runner.invoke(app, [*args, "--vllm"])
    assert res.exit_code == 2 and "needs a CUDA GPU" in " ".join(res.output.split()), res.output
    assert "cfg" not in seen
    res = runner.invoke(app, [*args, "--no-bf16"])
    assert res.exit_code == 0 and seen.pop("cfg").bf16 is False, res.output


def test_train_rl_on_a_gpu_builds_a_cuda_config_with_vllm_and_bf16(tmp_path, monkeypatch):
    """With torch faking a bf16-capable GPU (nothing runs on it) and vLLM present, the flags map onto
    TRL's fields: use_vllm, vllm_mode="colocate", vllm_gpu_memory_utilization, bf16 (on by default)."""
    import torch

    import phoneenv.cli.train
    import rl.trainers

    for name, value in (("is_available", lambda: True), ("is_bf16_supported", lambda *a, **k: True),
                        ("set_device", lambda *a, **k: None), ("device_count", lambda: 1)):  # fmt: skip
        monkeypatch.setattr(torch.cuda, name, value)
    monkeypatch.setattr(phoneenv.cli.train, "require", lambda *a, **k: None)
    seen = {}
    monkeypatch.setattr(rl.trainers, "train_rl", lambda cfg: seen.setdefault("cfg", cfg) and {"steps": 0})
    args = _fake_model(tmp_path)
    res = CliRunner().invoke(app, [*args, "--vllm", "--vllm-memory", "0.5"])
    assert res.exit_code == 0, res.output
    cfg = seen.pop("cfg")
    assert (cfg.use_vllm, cfg.vllm_mode, cfg.vllm_gpu_memory_utilization) == (True, "colocate", 0.5)
    assert cfg.bf16 and not cfg.use_cpu and str(cfg.device).startswith("cuda")
    res = CliRunner().invoke(app, [*args, "--no-bf16", "--use-cpu"])
    assert res.exit_code == 0, res.output
    cfg = seen.pop("cfg")
    assert not cfg.bf16 and cfg.use_cpu and not cfg.use_vllm
    res = CliRunner().invoke(app, [*args, "--vllm", "--use-cpu"])
    assert res.exit_code == 2 and "--use-cpu" in res.output


def test_train_rl_without_a_model_asks_for_sft_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no runs/sft/model here
    res = CliRunner().invoke(app, ["train", "rl", "--tasks", "template:settings.toggle"])
    assert res.exit_code != 0 and "phoneenv train sft" in " ".join(res.output.replace("│", " ").split())


def test_sft_prompts_offer_the_tools_rl_offers(tmp_path, monkeypatch):
    """`train sft --tools apps` (the default) trains each trace on exactly the tools the planner
    offers in that task's episode under the same filter (as `eval --tools apps` and the RL rollout
    resolve it per episode), a sub-agent task's agent.delegate included."""
    import rl.sft
    from agents.planner import LLMPlanner
    from phoneenv.evaluation import run_episodes
    from phoneenv.llm import ChatResult
    from phoneenv.tasks import get_task

    seen = {}

    def fake_train_sft(base, traces, out, cfg, tool_specs_or_tools=None, harness=None, on_step=None):
        seen.update(traces=traces, cfg=cfg, given=tool_specs_or_tools, harness=harness)
        return {"losses": [], "steps": 0, "examples": 0, "trained_tokens": 0, "masked_tokens": 0}

    class Offered:
        model = "scripted"

        def __init__(self):
            self.tools = []

        def chat(self, messages, *, tools=None, json_schema=None, max_tokens=512):
            self.tools.append([t["function"]["name"] for t in tools])
            return ChatResult(tool_calls=[{"id": "c", "name": "finish", "arguments": {"answer": "x"}}])

    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text('{"max_position_embeddings": 8192}')
    for name in ("model.safetensors", "tokenizer.json"):  # a checkpoint by its files' names
        (base / name).write_bytes(b"")
    monkeypatch.setattr(rl.sft, "train_sft", fake_train_sft)
    monkeypatch.setattr("phoneenv.cli.train.base_model", lambda *a: base)
    ids = ["settings.toggle/0", "clock.alarm_off/0", "subagent.album_of_person/0"]
    res = CliRunner().invoke(app, ["train", "sft", "--out", str(tmp_path / "sft"), "--tasks", ",".join(ids)])
    assert res.exit_code == 0, res.output
    assert seen["cfg"].tool_filter == "apps" and seen["given"] is None and seen["harness"] is None
    bad = CliRunner().invoke(app, ["train", "sft", "--out", str(tmp_path / "x"), "--harness", "v9"])
    assert bad.exit_code == 2 and "no harness version 'v9'" in " ".join(bad.output.split())
    examples = rl.sft.traces_to_examples(seen["traces"], tool_filter=seen["cfg"].tool_filter)
    assert len(examples) == 2 * len(ids)  # a reference and a detour episode per task
    client = Offered()
    run_episodes(LLMPlanner(client, tool_filter="apps"), [get_task(i) for i in ids])
    planner = dict(zip(ids, client.tools, strict=True))
    for ex in examples:
        assert [t["function"]["name"] for t in rl.sft.example_tools(ex)] == planner[ex["task_id"]]
    assert "agent__delegate" in planner["subagent.album_of_person/0"]
    assert not any(n.startswith(("user__", "system__")) for names in planner.values() for n in names)
    assert (
        "clock__set_alarm_enabled" in planner["clock.alarm_off/0"]
        and "contacts__search" not in planner["clock.alarm_off/0"]
    )
    res = CliRunner().invoke(app, ["train", "sft", "--out", str(tmp_path / "a"), "--tasks", ids[0], "--tools", "all"])
    assert res.exit_code == 0 and seen["cfg"].tool_filter == "all", res.output
    (ex, _) = rl.sft.traces_to_examples(seen["traces"], tool_filter="all")
    assert len(rl.sft.example_tools(ex)) > 200


def test_sft_default_base_is_smollm2_on_a_gpu_and_tiny_on_a_cpu(monkeypatch):
    import torch

    from phoneenv.cli.train import _default_sft_model

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert _default_sft_model() == "smollm2"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _default_sft_model() == "tiny"


@pytest.mark.parametrize("steps", [4])
def test_train_sft_shows_its_step_count_and_eta(tmp_path, monkeypatch, steps):
    """`train sft` draws eval's progress bar (steps done of all, elapsed, remaining) from the
    trainer's steps (rl.sft.train_sft's on_step), with the trainer's own tqdm bar off."""
    import rl.sft

    seen = {}

    def fake_train(base, traces, out, cfg, harness=None, on_step=None):
        seen["cfg"] = cfg
        for step in range(steps + 1):
            on_step(step, steps)
        return {"losses": [1.0, 0.5], "steps": steps, "examples": 1, "trained_tokens": 1, "masked_tokens": 0}

    monkeypatch.setattr(rl.sft, "train_sft", fake_train)
    monkeypatch.setattr(rl.sft, "reference_traces", lambda ids, out, seed=0: [])
    monkeypatch.setattr(rl.sft, "detour_traces", lambda ids, out, per_task=0, seed=0: [])
    res = CliRunner().invoke(
        app,
        ["train", "sft", "--model", "tiny", "--out", str(tmp_path), "--steps", str(steps), "--detours", "0",
         "--tasks", "template:settings.toggle"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "train sft" in res.output and f"{steps}/{steps}" in res.output and "0:00:00" in res.output
    assert seen["cfg"].extra["disable_tqdm"] is True
