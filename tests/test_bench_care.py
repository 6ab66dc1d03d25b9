"""The pieces of ``benchmarks/care_vs_grpo.py`` that need no training: the task split, the curves
and shares read back from a trainer's ``metrics.jsonl``, the standard errors, the paired
differences to GRPO, the plot, the flags, the hardware choice and the dry run."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("care_vs_grpo", ROOT / "benchmarks" / "care_vs_grpo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["care_vs_grpo"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("care_vs_grpo", None)


def test_split_holds_out_the_later_instances_of_each_template(bench) -> None:
    train, held = bench.split_tasks("clock.alarm_off,clock.wake_up", 6)
    # both templates have 8 instances: 0..5 train, 6..7 held out
    assert train == [f"clock.alarm_off/{i}" for i in range(6)] + [f"clock.wake_up/{i}" for i in range(6)]
    assert held == ["clock.alarm_off/6", "clock.alarm_off/7", "clock.wake_up/6", "clock.wake_up/7"]
    with pytest.raises(ValueError, match="held-out"):
        bench.split_tasks("clock.alarm_off", 8)
    # instances beyond the suite train, and every suite instance is held out
    train, held = bench.split_tasks("clock.alarm_off", 0, 3)
    assert train == ["clock.alarm_off/extra-8", "clock.alarm_off/extra-9", "clock.alarm_off/extra-10"]
    assert held == [f"clock.alarm_off/{i}" for i in range(8)]
    with pytest.raises(ValueError, match=r"unknown template 'clock\.no_such_template'; did you mean clock\.\*\?"):
        bench.split_tasks("clock.no_such_template", 2)


def test_only_solvable_instances_beyond_the_suite_are_trained_on(bench, monkeypatch) -> None:
    """An instance beyond the suite whose reference plan fails is skipped for the next one; too
    few solvable ones is an error, not a shorter training set."""
    from phoneenv.tasks import validate

    real = validate.run_plan

    def failing_nine(env, task, plan):
        info, fbs = real(env, task, plan)
        if task.id == "clock.alarm_off/extra-9":
            info = {**info, "verdict": {**info["verdict"], "success": False}}
        return info, fbs

    monkeypatch.setattr(validate, "run_plan", failing_nine)
    train, _ = bench.split_tasks("clock.alarm_off", 0, 3)
    assert train == ["clock.alarm_off/extra-8", "clock.alarm_off/extra-10", "clock.alarm_off/extra-11"]
    monkeypatch.setattr(validate, "run_plan", lambda env, task, plan: ({"verdict": {"success": False}}, []))
    with pytest.raises(ValueError, match=r"only 0 of clock\.alarm_off's 6 instances beyond the suite are solvable"):
        bench.split_tasks("clock.alarm_off", 0, 3)


def _metrics(path: Path) -> Path:
    shares = {"groups/shaping_share": 0.5, "groups/outcome_share": 0.5, "groups/efficiency_share": 0.0}
    records = [
        {"kind": "controller_start", "step": 0},
        {
            "kind": "rollout",
            "mode": "train",
            "step": 0,
            "metrics": {"phone/success": 0.25, "phone/output_tokens": 90.0, "phone/tool_calls": 4.0, **shares,
                        "groups/zero_advantage_share": 1.0, "adv/abs_mean": 0.0, "adv/abs_max": 0.0},
        },
        {"kind": "log", "step": 1, "loss": 0.1},
        {
            "kind": "rollout",
            "mode": "eval",
            "step": 1,
            "metrics": {"phone/success": 1.0, "phone/output_tokens": 1.0, "phone/tool_calls": 1.0},
        },
        {
            "kind": "rollout",
            "mode": "train",
            "step": 1,
            "metrics": {"phone/success": 0.5, "phone/output_tokens": 70.0, "phone/tool_calls": 3.0, **shares,
                        "groups/zero_advantage_share": 0.5, "adv/abs_mean": 0.4, "adv/abs_max": 2.0},
        },
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_curves_read_only_the_training_rollouts(bench, tmp_path) -> None:
    c = bench.curves(_metrics(tmp_path / "metrics.jsonl"))
    assert set(c) == set(bench.CURVE_KEYS)
    assert {k: c[k] for k in ("step", "success", "output_tokens", "tool_calls")} == {
        "step": [0.0, 1.0], "success": [0.25, 0.5], "output_tokens": [90.0, 70.0], "tool_calls": [4.0, 3.0]
    }  # fmt: skip
    assert c["zero_step"] == [1.0, 0.0] and c["zero_advantage_share"] == [1.0, 0.5] and c["adv_abs_max"] == [0.0, 2.0]
    assert c["shaping_share"] == [0.5, 0.5]
    s = bench.step_summary([c, c])
    assert s["steps"] == 4 and s["zero_step_share"] == 0.5 and s["zero_advantage_share"] == 0.75
    assert s["adv_abs_mean"] == pytest.approx(0.2) and s["adv_abs_max"] == 2.0
    assert (s["shaping_share"], s["outcome_share"], s["efficiency_share"]) == (0.5, 0.5, 0.0)
    assert bench.step_summary([]) == {"steps": 0}
    assert bench.mean_curve([c, {**c, "success": [0.75, 1.0]}], "success") == ([0.0, 1.0], [0.5, 0.75])
    assert bench.smooth([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]
    assert bench.smooth([], 3) == []


def test_standard_errors_over_episodes_and_seeds(bench) -> None:
    # one seed: 4 episodes, success 1, 0, 1, 1 → mean 0.75, se = std₁/√4 = 0.5/2 = 0.25
    rows = [[1, 100, 3], [0, 200, 5], [1, 100, 3], [1, 100, 3]]
    e = bench.episode_summary(rows)
    assert e["success"] == 0.75 and e["success_se"] == pytest.approx(0.25) and e["episodes"] == 4
    assert e["output_tokens"] == 125.0 and e["output_tokens_se"] == pytest.approx(25.0)
    assert np.isnan(bench.episode_summary([[1, 1, 1]])["success_se"])
    # three seeds with means 0.75, 0.25, 0.5: mean 0.5, se over seeds = std₁(0.25)/√3
    other = [[0, 50, 1], [0, 50, 1], [1, 50, 1], [0, 50, 1]]
    half = [[1, 80, 2], [0, 80, 2], [1, 80, 2], [0, 80, 2]]
    arm = bench.summarise_arm([rows, other, half])
    assert arm["success"] == pytest.approx(0.5) and arm["success_se"] == pytest.approx(0.25 / np.sqrt(3))
    assert arm["success_per_seed"] == [0.75, 0.25, 0.5] and arm["seeds"] == 3 and arm["episodes"] == 12
    assert arm["success_se_episodes"] == pytest.approx(
        np.std([1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0], ddof=1) / np.sqrt(12)
    )
    # paired by seed against a reference that is 0.25 lower at every seed: +25 points, se 0
    ref = bench.summarise_arm([half, [[0, 50, 1]] * 4, [[1, 80, 2], [0, 80, 2], [0, 80, 2], [0, 80, 2]]])
    d = bench.paired_to_reference(arm, ref)
    assert d["success_diff"] == pytest.approx(25.0) and d["success_diff_se"] == pytest.approx(0.0, abs=1e-9)
    assert d["output_tokens_ratio"] == pytest.approx(arm["output_tokens"] / ref["output_tokens"])
    with pytest.raises(ValueError, match="same seeds"):
        bench.paired_to_reference(arm, bench.summarise_arm([rows]))


def test_ratios_are_to_grpo(bench) -> None:
    rows = {
        "grpo": {"success": 0.50, "output_tokens": 100.0, "tool_calls": 4.0},
        "care": {"success": 0.48, "output_tokens": 70.0, "tool_calls": 3.0},
        "penalty": {"success": 0.30, "output_tokens": 50.0, "tool_calls": 0.0},
    }
    r = bench.ratios(rows)
    assert set(r) == {"care", "penalty"}
    assert r["care"]["success_diff"] == pytest.approx(-2.0)
    assert r["care"]["output_tokens"] == pytest.approx(0.7)
    assert r["care"]["tool_calls"] == pytest.approx(0.75)
    assert r["penalty"]["success_diff"] == pytest.approx(-20.0)
    assert r["penalty"]["tool_calls"] == 0.0
    rows["grpo"]["tool_calls"] = 0.0
    assert bench.ratios(rows)["care"]["tool_calls"] is None


def test_plot_writes_a_png(bench, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    c = bench.curves(_metrics(tmp_path / "metrics.jsonl"))
    path = bench.plot({"grpo": [c, c], "care": [c]}, tmp_path / "plot.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_weights_digest_ignores_the_training_arguments(bench, tmp_path) -> None:
    for name, args in (("a", b"arm a"), ("b", b"arm b")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.safetensors").write_bytes(b"same weights")
        (tmp_path / name / "training_args.bin").write_bytes(args)
    assert bench.weights_digest(tmp_path / "a") == bench.weights_digest(tmp_path / "b")
    (tmp_path / "b" / "model.safetensors").write_bytes(b"other weights")
    assert bench.weights_digest(tmp_path / "a") != bench.weights_digest(tmp_path / "b")


def test_flags_override_the_preset(bench) -> None:
    cfg, out, dry = bench.parse_args(["--quick", "--rl-steps", "7", "--arms", "grpo,care", "--out", "x"])
    assert cfg.rl_steps == 7 and cfg.arms == ("grpo", "care") and out == Path("x") and not dry
    assert cfg.sft_steps == bench.BenchConfig.quick().sft_steps and cfg.rl_seeds == (0, 1, 2)
    full, _, _ = bench.parse_args([])
    assert full == bench.BenchConfig()
    assert full.checked is True and full.device == "auto" and full.bf16 is None and full.vllm is None
    off, _, dry = bench.parse_args(["--no-checked", "--budget-tokens", "150", "--rl-seeds", "3,5", "--dry-run"])
    assert off.checked is False and off.budget_tokens == 150.0 and off.budget_calls == full.budget_calls
    assert off.rl_seeds == (3, 5) and dry
    dev, _, _ = bench.parse_args(["--device", "cpu", "--no-bf16", "--vllm", "--mu", "0.2"])
    assert (dev.device, dev.bf16, dev.vllm, dev.mu) == ("cpu", False, True, 0.2)
    gpu, _, _ = bench.parse_args(["--rl-steps", "2"], preset="gpu")
    assert gpu == replace(bench.BenchConfig.gpu(), rl_steps=2) and gpu.device == "cuda"
    for bad in (
        ["--arms", "care,ppo"],
        ["--arms", ","],
        ["--rl-seeds", "1,1"],
        ["--device", "tpu"],
        ["--rl-steps", "x"],
    ):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)  # known arms; seeds distinct; known devices
    assert bench.parse_args(["--arms", "care"])[0].arms == ("care",)  # a lever's run beside an earlier GRPO


def test_one_invalid_reply_penalty_for_every_arm_and_train_rl(bench, tmp_path) -> None:
    """The benchmark, TrainConfig and `phoneenv train rl` share one default ν, the same in every arm."""
    import inspect

    from phoneenv.cli.train import train_rl_cmd
    from rl.train_help import DEFAULT_INVALID_REPLY_PENALTY

    assert bench.BenchConfig().invalid_reply_penalty == DEFAULT_INVALID_REPLY_PENALTY
    assert inspect.signature(train_rl_cmd).parameters["invalid_reply_penalty"].default == DEFAULT_INVALID_REPLY_PENALTY
    cfg = replace(bench.BenchConfig.quick(), invalid_reply_penalty=0.25)
    p = bench.plan(cfg, tmp_path)
    assert {kw["invalid_reply_penalty"] for kw in p["runs"].values()} == {0.25}


def test_dry_run_plans_every_arm_and_seed_on_the_cpu(bench, tmp_path, capsys) -> None:
    p = bench.main(["--quick", "--dry-run", "--out", str(tmp_path)])
    assert json.loads(capsys.readouterr().out)["hardware"] == {"device": "cpu", "bf16": False, "vllm": False}
    assert sorted(p["runs"]) == sorted(f"seed{s}/{a}" for s in (0, 1, 2) for a in bench.ARMS)
    assert all(kw["use_cpu"] and not kw["bf16"] and not kw["use_vllm"] for kw in p["runs"].values())
    assert p["episodes_per_model"] == {"train": 8 * 1, "heldout": 8 * 1}
    assert not any(tmp_path.iterdir())  # nothing built, nothing trained
    with pytest.raises(ValueError, match="CUDA"):
        bench.hardware(replace(bench.BenchConfig(), device="cuda"))
    with pytest.raises(ValueError, match="bf16"):
        bench.hardware(replace(bench.BenchConfig(), bf16=True))
    with pytest.raises(ValueError, match="GPU"):
        bench.hardware(replace(bench.BenchConfig(), vllm=True))


@pytest.fixture
def fake_cuda(monkeypatch):
    """torch says a bf16-capable CUDA GPU is there (enough to build configs; nothing runs on it)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(torch.cuda, "set_device", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


def test_configs_built_for_cuda(bench, tmp_path, fake_cuda, monkeypatch) -> None:
    """On a GPU (faked: nothing runs) the plan trains on CUDA in bf16, and every arm's TrainConfig
    and SFT's SFTConfig build for it; vLLM's colocate mode is used when vLLM is installed."""
    pytest.importorskip("trl")
    import rl.hardware
    from rl.trainers import TrainConfig

    monkeypatch.setattr(rl.hardware, "vllm_installed", lambda: True)
    cfg, _, _ = bench.parse_args([], preset="gpu")
    p = bench.plan(cfg, tmp_path)
    assert p["hardware"] == {"device": "cuda", "bf16": True, "vllm": True}
    for kw in p["runs"].values():
        tc = TrainConfig(**kw)
        assert not tc.use_cpu and tc.bf16 and tc.use_vllm and tc.vllm_mode == "colocate"
        assert str(tc.device).startswith("cuda")
        assert tc.learning_rate == cfg.rl_lr and tc.invalid_reply_penalty == cfg.invalid_reply_penalty
    sft = bench.sft_run_config(cfg, p["hardware"]).to_sft_config(tmp_path / "sft")
    assert sft.bf16 and not sft.use_cpu and sft.dataloader_pin_memory
    monkeypatch.setattr(rl.hardware, "vllm_installed", lambda: False)
    assert bench.hardware(cfg)["vllm"] is False  # HF generation where vLLM is not installed
    cpu = bench.plan(replace(cfg, device="cpu", bf16=None, vllm=None), tmp_path)
    assert cpu["hardware"] == {"device": "cpu", "bf16": False, "vllm": False}


def test_the_quick_preset_plans_the_chosen_start_and_levers(bench, tmp_path) -> None:
    """--quick: two clock templates, 4 instances trained and 4 held out, the four tools their plans
    call, 600 SFT steps, a start measured on 8 episodes a task at T = 0.8, p_low 0.3 and p_high 0.7 in every arm,
    4 RL steps over 3 seeds within 900 s; the full run keeps its own settings."""
    q = bench.BenchConfig.quick()
    p = bench.plan(q, tmp_path)
    assert p["train_tasks"] == [f"clock.alarm_off/{i}" for i in range(4)] + [
        f"clock.delete_alarm/{i}" for i in range(4)
    ]
    assert p["heldout_tasks"] == [f"clock.alarm_off/{i}" for i in range(4, 8)] + [
        f"clock.delete_alarm/{i}" for i in range(4, 8)
    ]
    assert (q.sft_steps, q.rl_steps, q.rl_seeds, q.temperature, q.start_episodes) == (600, 4, (0, 1, 2), 0.8, 8)
    assert q.time_budget_s == 900.0 and q.deterministic and q.threads == 1
    for kw in p["runs"].values():
        assert kw["tool_filter"] == "clock.list_alarms,clock.set_alarm_enabled,clock.delete_alarm,finish"
        assert kw["care"]["p_low"] == 0.3 and kw["care"]["p_high"] == 0.7 and kw["care_controller"] == "rule"
        assert kw["temperature"] == 0.8 and kw["max_steps"] == 4 and kw["num_generations"] == 8
    from agents.toolfilter import allowed_tools
    from phoneenv.tasks import get_task

    tools = allowed_tools(q.tools)
    for task in p["train_tasks"] + p["heldout_tasks"]:  # every call of every reference plan is offered
        assert {c.name for c in get_task(task).reference_plan} <= tools, task
    full = bench.BenchConfig()
    assert (full.templates, full.tools, full.sft_steps, full.p_low, full.time_budget_s) == (
        bench.TEMPLATES,
        bench.TOOLS,
        900,
        0.25,
        None,
    )


def test_a_time_budget_stops_starting_seeds(bench) -> None:
    assert bench.next_seed_fits(1e9, None, 10.0)  # the first seed always runs
    assert bench.next_seed_fits(1e9, 1e9, None)  # no budget
    assert bench.next_seed_fits(300.0, 200.0, 540.0) and not bench.next_seed_fits(400.0, 200.0, 540.0)
    assert bench.BenchConfig.gpu().time_budget_s == 540.0 and bench.BenchConfig().time_budget_s is None


def _curve(success, tokens, calls=None, **shares):
    n = len(success)
    c = {k: [0.0] * n for k in ("shaping_share", "outcome_share", "efficiency_share", "zero_advantage_share",
                                 "zero_step", "adv_abs_mean", "adv_abs_max")}  # fmt: skip
    c |= {k: list(v) for k, v in shares.items()}
    return c | {"step": [float(i) for i in range(n)], "success": list(success), "output_tokens": list(tokens),
                "tool_calls": list(calls or [3.0] * n)}  # fmt: skip


def test_curve_differences_are_paired_by_seed(bench) -> None:
    grpo = [_curve([0.5, 0.5, 0.75], [100, 100, 100]), _curve([0.25, 0.5, 0.5], [120, 110, 100])]
    same = [_curve([0.5, 0.5, 0.75], [100, 100, 100]), _curve([0.25, 0.5, 0.5], [120, 110, 100])]
    # seed 0 departs at step 1 (tokens 90, then success 1.0), seed 1 at step 2 (tokens 80)
    care = [_curve([0.5, 0.5, 1.0], [100, 90, 100]), _curve([0.25, 0.5, 0.5], [120, 110, 80])]
    d = bench.curve_differences({"grpo": grpo, "same": same, "care": care})
    assert set(d) == {"same", "care"} and bench.curve_differences({"care": care}) == {}
    assert d["same"]["identical_seeds"] == [0, 1] and d["same"]["first_difference"] == [None, None]
    assert d["same"]["steps_differing"] == 0.0 and d["same"]["output_tokens_diff"] == 0.0
    c = d["care"]
    assert (
        c["identical_seeds"] == [] and c["first_difference"] == [1, 2] and c["steps_differing"] == pytest.approx(3 / 6)
    )
    # per seed, the mean over steps of care − grpo: tokens −10/3 and −20/3; success +0.25/3 and 0
    assert c["output_tokens_diff"] == pytest.approx(-5.0)
    assert c["output_tokens_diff_se"] == pytest.approx(np.std([-10 / 3, -20 / 3], ddof=1) / np.sqrt(2))
    assert c["success_diff"] == pytest.approx(0.25 / 6) and c["tool_calls_diff"] == 0.0


def test_per_step_means_over_seeds(bench) -> None:
    a = _curve([0.5, 1.0], [100, 80], shaping_share=[1.0, 0.0], efficiency_share=[0.0, 1.0], zero_step=[1.0, 0.0])
    b = _curve([0.0, 0.5, 0.5], [120, 60, 60], shaping_share=[0.0, 0.0, 0.0], efficiency_share=[0.0, 0.0, 1.0],
               zero_step=[0.0, 0.0, 1.0])  # fmt: skip
    rows = bench.per_step([a, b])
    assert len(rows) == 2  # the steps both seeds reached
    assert rows[0]["success"] == 0.25 and rows[0]["shaping_share"] == 0.5 and rows[0]["zero_step"] == 0.5
    assert rows[1]["output_tokens"] == 70.0 and rows[1]["efficiency_share"] == 0.5 and rows[1]["seeds"] == 2.0
    assert bench.per_step([]) == []


def test_start_figures_predict_the_mode_of_each_task(bench) -> None:
    cfg = replace(bench.BenchConfig(), p_high=0.6, threads=2)
    won, lost = [1.0, 100.0, 3.0], [0.0, 150.0, 5.0]
    per_task = {
        "a/0": [won] * 8,  # p = 1 > 0.6: efficiency
        "a/1": [won] * 5 + [lost] * 3,  # p = 0.625 > 0.6: efficiency (at p_high 0.75 it would be outcome)
        "a/2": [won] * 2 + [lost] * 6,  # p = 0.25 = p_low: outcome
        "a/3": [won] + [lost] * 7,  # p = 0.125 < p_low: shaping
    }
    f = bench.start_figures(per_task, cfg)
    assert f["success"] == pytest.approx(16 / 32) and f["episodes"] == 32 and f["episodes_per_task"] == 8
    assert f["success_se"] == pytest.approx(np.std([1] * 16 + [0] * 16, ddof=1) / np.sqrt(32))
    assert f["task_success"] == {"a/0": 1.0, "a/1": 0.625, "a/2": 0.25, "a/3": 0.125}
    assert f["predicted_mode_shares"] == {"shaping": 0.25, "outcome": 0.25, "efficiency": 0.5}
    assert (f["threads"], f["deterministic"], f["temperature"]) == (2, True, cfg.temperature)
    default = bench.start_figures(per_task, replace(cfg, p_high=0.75))["predicted_mode_shares"]
    assert default == {"shaping": 0.25, "outcome": 0.5, "efficiency": 0.25}


def test_care_levers_reach_every_arm(bench, tmp_path) -> None:
    """p_high and the floor go to every arm's CareConfig (they decide the mode each group is counted
    in), the controller and μ to the arms that use them; the flags parse."""
    cfg, _, _ = bench.parse_args(
        ["--quick", "--p-high", "0.6", "--p-f", "0.1", "--controller", "none", "--mu", "0.4", "--start", "s/model"]
    )
    assert (cfg.p_high, cfg.p_f, cfg.controller, cfg.start) == (0.6, 0.1, "none", "s/model")
    p = bench.plan(cfg, tmp_path)
    for name, kw in p["runs"].items():
        want = {"p_low": 0.3, "p_high": 0.6, "p_f": 0.1} | ({"mu": 0.4} if name.endswith("/penalty") else {})
        assert kw["care"] == want and kw["care_controller"] == "none", name
    with pytest.raises(SystemExit):
        bench.parse_args(["--controller", "pid"])
    assert bench.parse_args(["--time-budget-s", "60"])[0].time_budget_s == 60.0


def test_care_levers_build_train_configs(bench, tmp_path) -> None:
    pytest.importorskip("trl")
    from rl.trainers import TrainConfig

    cfg, _, _ = bench.parse_args(["--quick", "--p-high", "0.6", "--p-f", "0.1"])
    for kw in bench.plan(cfg, tmp_path)["runs"].values():
        care = TrainConfig(**kw).care_config()
        assert (care.p_high, care.p_f) == (0.6, 0.1)


def test_seed_everything_makes_torch_deterministic(bench) -> None:
    torch = pytest.importorskip("torch")
    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled())
    try:
        bench.seed_everything(replace(bench.BenchConfig(), threads=1, seed=7))
        assert torch.get_num_threads() == 1 and torch.are_deterministic_algorithms_enabled()
        first = torch.rand(3)
        bench.seed_everything(replace(bench.BenchConfig(), threads=1, seed=7, deterministic=False))
        assert torch.equal(first, torch.rand(3)) and not torch.are_deterministic_algorithms_enabled()
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])


@pytest.mark.slow
def test_the_sft_start_is_the_same_at_one_and_two_threads(bench, tmp_path) -> None:
    """A few SFT steps and two sampled episodes of the tiny model, seeded and deterministic, at 1 and
    at 2 torch threads: the same weights bit for bit and the same episodes (the benchmark's start,
    in miniature; the full start's figures at both counts are in docs/figures/care.md)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled())
    cfg = replace(
        bench.BenchConfig(), templates="clock.alarm_off", train_instances=1, sft_steps=4, max_turns=3,
        tools="clock.list_alarms,clock.set_alarm_enabled,finish",
    )  # fmt: skip
    train_ids, _ = bench.split_tasks(cfg.templates, cfg.train_instances)
    hw = {"device": "cpu", "bf16": False, "vllm": False}
    got = []
    base = bench.base_model(cfg, tmp_path)  # built once: building it trains a tokenizer (slow)
    try:
        for threads in (1, 2):
            run = replace(cfg, threads=threads)
            bench.seed_everything(run)
            out = tmp_path / f"t{threads}"
            model = bench.sft(run, base, train_ids, out, hw)["model_dir"]
            ev = bench.evaluate(model, train_ids, run, episodes=2)
            got.append((_weights(model), ev["rows"]))
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])
    # the same episodes; the same weights up to the last bits a reduction split over two
    # threads may round differently on some CPUs (bit for bit on the development machine)
    assert got[0][1] == got[1][1]
    one, two = got[0][0], got[1][0]
    assert one.keys() == two.keys()
    worst = max(float((one[k] - two[k]).abs().max()) for k in one)
    assert worst <= 1e-5, worst


def _weights(model_dir) -> dict:
    """A checkpoint folder's tensors by name (its ``*.safetensors`` files)."""
    from safetensors.torch import load_file

    out: dict = {}
    for f in sorted(Path(model_dir).glob("*.safetensors")):
        out.update(load_file(f))
    assert out, f"no weights in {model_dir}"
    return out


def test_the_planner_preset_trains_beyond_the_suite_and_holds_the_suite_out(bench, tmp_path) -> None:
    """--planner: settings.revoke_permission's instances 8..39 (beyond the suite) are trained on,
    the suite's 0..7 held out, with the four tools the plans call; --quick and --planner clash."""
    cfg, _, _ = bench.parse_args(["--planner"])
    assert cfg == bench.BenchConfig.planner()
    p = bench.plan(cfg, tmp_path)
    assert p["train_tasks"] == [f"settings.revoke_permission/extra-{k}" for k in range(8, 40)]
    assert p["heldout_tasks"] == [f"settings.revoke_permission/{k}" for k in range(8)]
    assert p["episodes_per_model"] == {"train": 32 * 4, "heldout": 8 * 4}
    assert sorted(p["runs"]) == sorted(f"seed{s}/{a}" for s in (0, 1, 2) for a in ("grpo", "care"))
    for kw in p["runs"].values():
        assert kw["tool_filter"] == "settings.list_app_permissions,settings.revoke_permission,user.confirm,finish"
        assert kw["tasks"] == p["train_tasks"] and kw["max_steps"] == 8
    with pytest.raises(SystemExit):
        bench.parse_args(["--quick", "--planner"])


def test_instances_beyond_the_suite_are_trained_on_only_when_their_reference_plan_succeeds(bench, monkeypatch):
    """solvable_extras keeps the first n instances past the template's count whose reference plan
    wins, skips one that does not, and says so when too few of the first 2n do."""
    from phoneenv.tasks.templates import all_templates

    name = "settings.revoke_permission"
    count = all_templates()[name].count
    assert bench.solvable_extras(name, 0) == []
    assert bench.solvable_extras(name, 2) == [f"{name}/extra-{count}", f"{name}/extra-{count + 1}"]
    import phoneenv.tasks.validate as validate

    real = validate.run_plan

    def losing_first(env, task, plan):  # the first instance beyond the suite cannot be solved
        out = real(env, task, plan)
        if task.id.endswith(f"/extra-{count}"):
            out[0]["verdict"]["success"] = False
        return out

    monkeypatch.setattr(validate, "run_plan", losing_first)
    assert bench.solvable_extras(name, 2) == [f"{name}/extra-{count + 1}", f"{name}/extra-{count + 2}"]
    monkeypatch.setattr(validate, "run_plan", lambda env, task, plan: ({"verdict": {"success": False}},))
    with pytest.raises(ValueError, match=r"only 0 of .* instances beyond the suite are solvable; 2 asked"):
        bench.solvable_extras(name, 2)
