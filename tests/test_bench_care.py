"""The pieces of ``benchmarks/care_vs_grpo.py`` that need no training: the task split, the curves
read back from a trainer's ``metrics.jsonl``, the ratios to GRPO, the plot and the flags."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

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
    with pytest.raises(ValueError, match=r"unknown template 'clock\.no_such_template'; did you mean clock\.\*\?"):
        bench.split_tasks("clock.no_such_template", 2)


def _metrics(path: Path) -> Path:
    records = [
        {"kind": "controller_start", "step": 0},
        {
            "kind": "rollout",
            "mode": "train",
            "step": 0,
            "metrics": {"phone/success": 0.25, "phone/output_tokens": 90.0, "phone/tool_calls": 4.0},
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
            "metrics": {"phone/success": 0.5, "phone/output_tokens": 70.0, "phone/tool_calls": 3.0},
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_curves_read_only_the_training_rollouts(bench, tmp_path) -> None:
    c = bench.curves(_metrics(tmp_path / "metrics.jsonl"))
    assert c == {"step": [0.0, 1.0], "success": [0.25, 0.5], "output_tokens": [90.0, 70.0], "tool_calls": [4.0, 3.0]}
    assert bench.smooth([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]
    assert bench.smooth([], 3) == []


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
    path = bench.plot({"grpo": c, "care": c}, tmp_path / "plot.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_flags_override_the_preset(bench) -> None:
    cfg, out = bench.parse_args(["--quick", "--rl-steps", "7", "--arms", "grpo,care", "--out", "x"])
    assert cfg.rl_steps == 7 and cfg.arms == ("grpo", "care") and out == Path("x")
    assert cfg.sft_steps == bench.BenchConfig.quick().sft_steps
    full, _ = bench.parse_args([])
    assert full == bench.BenchConfig()
    assert full.checked is True
    off, _ = bench.parse_args(["--no-checked", "--budget-tokens", "150"])
    assert off.checked is False and off.budget_tokens == 150.0 and off.budget_calls == full.budget_calls
    with pytest.raises(SystemExit):
        bench.parse_args(["--arms", "care"])  # GRPO is the reference of every ratio
