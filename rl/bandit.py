"""A synthetic bandit that shows what CARE's advantages do to a policy, with :mod:`rl.care` itself.

Each arm is a way to do a task: it succeeds with probability ``success_rate`` and costs ``tokens``
output tokens and ``calls`` tool calls. The policy is a softmax over one logit per arm. Every optimiser step draws
``groups_per_step`` groups of ``G`` arms (one group = G rollouts of the same prompt, as in GRPO),
computes one advantage per draw with the chosen algorithm (:func:`rl.care.group_advantages`, the
function the trainer calls on each gathered group), and takes the policy-gradient step::

    θ ← θ + lr · mean_i A_i · ∇_θ log π(a_i),       ∇_θ log π(a) = onehot(a) − π

(the mean runs over all ``groups_per_step·G`` draws, as TRL averages its loss over completions).
Three algorithms, all through :func:`rl.care.group_advantages`, with the trainer's cost and
normalisation:

* ``"grpo"``     outcome reward ``r = s``, TRL's normalisation ``(r − mean)/(std₁ + 1e-4)`` (sample
  std, ddof = 1, as ``trl.trainer.utils.nanstd``);
* ``"care"``     :func:`rl.care.group_care` with the trainer's cost
  ``c = w·min(tokens/budget_tokens, 1) + (1 − w)·min(calls/budget_calls, 1)``
  (:func:`rl.care.efficiency_cost`, ``w = cost_weight``, default
  :data:`rl.care.DEFAULT_COST_WEIGHT` = 0.5 as ``TrainConfig.care_cost_weight``): efficiency
  penalty only in groups with ``p > p_high``, population std floored at ``sqrt(p_f(1 − p_f))``;
* ``"penalty"``  the CARE report's ablation: :func:`rl.care.penalty_rewards` ``r = s(1 − μc)`` in
  every group, TRL's normalisation (no calibration).

The default arms (:data:`DEFAULT_ARMS`, (success rate, tokens, calls)) are (0.95, 800, 8),
(0.95, 250, 3), (0.75, 60, 1), (0, 20, 1): two equally reliable ways to succeed, one three to four
times cheaper in tokens and calls; a terse way that fails a quarter of the time; and a way to fail
fast. GRPO has no reason to prefer 250 over 800 tokens; CARE should pick
the cheap reliable arm without giving up success; the ablation, whose all-success groups turn
cost differences into advantages as large as winning versus losing, drifts toward the terse arm.

Everything is deterministic under ``seed`` (one :class:`numpy.random.Generator`). The curves are
the policy's *expected* success ``Σ π_a p_a`` and output tokens ``Σ π_a t_a`` after each step, so
they carry no sampling noise of their own (only the policy's); ``calls`` likewise.

Run ``python -m rl.bandit`` for the table over seeds (the figures quoted in :class:`rl.care.CareConfig`).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rl.care import (
    DEFAULT_COST_WEIGHT,
    CareConfig,
    ControllerChange,
    GroupAdvantages,
    RuleController,
    TrainingStats,
    group_advantages,
)

__all__ = ["ALGOS", "DEFAULT_ARMS", "Arm", "BanditResult", "bandit_advantages", "run_bandit", "summarise"]

#: The algorithms :func:`run_bandit` knows.
ALGOS: tuple[str, ...] = ("grpo", "care", "penalty")


@dataclass(frozen=True)
class Arm:
    """One way to do the task.

    Attributes:
        success_rate: probability of success, in [0, 1].
        tokens: output tokens it costs, ≥ 0.
        calls: tool calls it makes, ≥ 0 (default 1).

    Raises:
        ValueError: a value out of range or not finite.
    """

    success_rate: float
    tokens: float
    calls: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.success_rate) and 0.0 <= self.success_rate <= 1.0):
            raise ValueError(f"Arm.success_rate must lie in [0, 1], got {self.success_rate!r}")
        if not (math.isfinite(self.tokens) and self.tokens >= 0.0):
            raise ValueError(f"Arm.tokens must be a finite number ≥ 0, got {self.tokens!r}")
        if not (math.isfinite(self.calls) and self.calls >= 0.0):
            raise ValueError(f"Arm.calls must be a finite number ≥ 0, got {self.calls!r}")


#: (success rate, output tokens, tool calls) of the issue's example.
DEFAULT_ARMS: tuple[Arm, ...] = (Arm(0.95, 800, 8), Arm(0.95, 250, 3), Arm(0.75, 60, 1), Arm(0.0, 20, 1))


@dataclass(frozen=True)
class BanditResult:
    """The run of one algorithm on one seed.

    Attributes:
        algo: ``"grpo"``, ``"care"`` or ``"penalty"``.
        seed: the generator's seed.
        probs: shape ``(steps + 1, K)``, the policy before the first step and after each step.
        success: shape ``(steps + 1,)``, expected success ``probs @ success_rates``.
        tokens: shape ``(steps + 1,)``, expected output tokens ``probs @ tokens``.
        calls: shape ``(steps + 1,)``, expected tool calls ``probs @ calls``.
        zero_advantage_steps: steps whose advantages were all zero (no update).
        changes: the controller's changes (empty without a controller).
        config: the CARE config at the end (the controller may have moved it).
    """

    algo: str
    seed: int
    probs: np.ndarray
    success: np.ndarray
    tokens: np.ndarray
    calls: np.ndarray
    zero_advantage_steps: int
    changes: list[ControllerChange] = field(default_factory=list)
    config: CareConfig | None = None

    @property
    def final_success(self) -> float:
        """Expected success of the final policy."""
        return float(self.success[-1])

    @property
    def final_tokens(self) -> float:
        """Expected output tokens of the final policy."""
        return float(self.tokens[-1])


def _arms(arms: Sequence[Arm | tuple[float, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if len(arms) < 2:
        raise ValueError(f"a bandit needs at least 2 arms, got {len(arms)}")
    parsed = [a if isinstance(a, Arm) else Arm(*map(float, a)) for a in arms]
    return (
        np.array([a.success_rate for a in parsed], dtype=np.float64),
        np.array([a.tokens for a in parsed], dtype=np.float64),
        np.array([a.calls for a in parsed], dtype=np.float64),
    )


def bandit_advantages(
    algo: str,
    success: np.ndarray,
    tokens: np.ndarray,
    calls: np.ndarray,
    cfg: CareConfig,
    *,
    budget_tokens: float,
    budget_calls: float,
    cost_weight: float = DEFAULT_COST_WEIGHT,
) -> GroupAdvantages:
    """One group's advantages as the bandit computes them: :func:`rl.care.group_advantages` with
    no progress (shaping adds ``λ·0``) and no penalty, the trainer's cost (tokens and calls) and
    normalisation. Arrays have shape ``(G,)``: success 0/1, tokens and calls ≥ 0 (float64)."""
    return group_advantages(
        algo, success, None, tokens, calls, cfg,
        budget_tokens=budget_tokens, budget_calls=budget_calls, cost_weight=cost_weight,
    )  # fmt: skip


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max())
    return z / z.sum()


def _policy_gradient(pi: np.ndarray, arms: np.ndarray, adv: np.ndarray) -> np.ndarray:
    """``Σ_i A_i ∇_θ log π(a_i) = Σ_i A_i (onehot(a_i) − π)`` for a softmax policy; shape ``(K,)``."""
    return np.bincount(arms, weights=adv, minlength=pi.size) - adv.sum() * pi


def run_bandit(
    arms: Sequence[Arm | tuple[float, ...]] = DEFAULT_ARMS,
    algo: str = "care",
    *,
    G: int = 8,
    steps: int = 300,
    lr: float = 0.1,
    seed: int = 0,
    care: CareConfig | None = None,
    budget_tokens: float = 1000.0,
    budget_calls: float = 10.0,
    cost_weight: float = DEFAULT_COST_WEIGHT,
    groups_per_step: int = 1,
    controller: RuleController | None = None,
    init_logits: Sequence[float] | None = None,
) -> BanditResult:
    """Train a softmax policy over ``arms`` with group advantages from :mod:`rl.care`.

    Args:
        arms: ``K ≥ 2`` arms, :class:`Arm` or ``(success_rate, tokens[, calls])`` tuples.
        algo: ``"grpo"``, ``"care"`` or ``"penalty"`` (see the module docstring).
        G: draws per group, ≥ 1.
        steps: optimiser steps, ≥ 0.
        lr: step size of the policy gradient, > 0.
        seed: seed of the :class:`numpy.random.Generator` (draws and outcomes).
        care: CARE hyper-parameters (``"care"``; ``"penalty"`` uses its ``mu``); default
            :class:`~rl.care.CareConfig`.
        budget_tokens, budget_calls: budgets of the efficiency cost (:func:`rl.care.efficiency_cost`,
            the trainer's ``care_budget_tokens`` and ``care_budget_calls``), > 0.
        cost_weight: the cost's share from tokens (the trainer's ``care_cost_weight``), in [0, 1].
        groups_per_step: groups per optimiser step, ≥ 1.
        controller: a controller (``"care"`` only) updated after every step with the groups since
            its last update (:meth:`rl.care.TrainingStats.from_groups`, token trend from the
            sampled tokens); its config replaces ``care`` as it changes.
        init_logits: starting logits, shape ``(K,)`` (default zeros: uniform policy).

    Returns:
        A :class:`BanditResult`.

    Raises:
        ValueError: an unknown ``algo``, a controller with another algo, or an argument out of
        range.
    """
    if algo not in ALGOS:
        raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
    if controller is not None and algo != "care":
        raise ValueError("a controller only retunes CARE: use algo='care'")
    if not isinstance(G, int) or G < 1:
        raise ValueError(f"G must be an int ≥ 1, got {G!r}")
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be an int ≥ 0, got {steps!r}")
    if not isinstance(groups_per_step, int) or groups_per_step < 1:
        raise ValueError(f"groups_per_step must be an int ≥ 1, got {groups_per_step!r}")
    if not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive number, got {lr!r}")
    rates, tokens, calls = _arms(arms)
    k = rates.size
    cfg = controller.config if controller is not None else (care if care is not None else CareConfig())
    logits = np.zeros(k) if init_logits is None else np.asarray(init_logits, dtype=np.float64).copy()
    if logits.shape != (k,) or not np.all(np.isfinite(logits)):
        raise ValueError(f"init_logits must be {k} finite numbers, got {init_logits!r}")
    rng = np.random.default_rng(seed)
    probs = np.empty((steps + 1, k))
    probs[0] = _softmax(logits)
    zero_steps = 0
    window: list[np.ndarray] = []
    window_tokens: list[float] = []
    prev_tokens: float | None = None
    for step in range(1, steps + 1):
        pi = probs[step - 1]
        grad = np.zeros(k)
        for _ in range(groups_per_step):
            a = rng.choice(k, size=G, p=pi)
            s = (rng.random(G) < rates[a]).astype(np.float64)
            adv = bandit_advantages(
                algo, s, tokens[a], calls[a], cfg, budget_tokens=budget_tokens, budget_calls=budget_calls,
                cost_weight=cost_weight,
            ).advantages  # fmt: skip
            grad += _policy_gradient(pi, a, adv)
            window.append(s)
            window_tokens.append(float(tokens[a].mean()))
        if not np.any(grad):
            zero_steps += 1
        logits += lr * grad / (groups_per_step * G)
        probs[step] = _softmax(logits)
        if controller is not None and controller.due(step):
            now = float(np.mean(window_tokens))
            controller.update(step, TrainingStats.from_groups(window, now, prev_tokens))
            cfg = controller.config
            prev_tokens, window, window_tokens = now, [], []
    return BanditResult(
        algo=algo,
        seed=seed,
        probs=probs,
        success=probs @ rates,
        tokens=probs @ tokens,
        calls=probs @ calls,
        zero_advantage_steps=zero_steps,
        changes=list(controller.history) if controller is not None else [],
        config=cfg,
    )


def summarise(results: Sequence[BanditResult]) -> dict[str, float]:
    """Mean and spread over seeds of the final policies of one algorithm.

    Returns:
        ``{"success", "success_std", "success_min", "tokens", "tokens_std", "tokens_max", "n"}``
        (success in [0, 1], tokens in output tokens; std with ddof = 0).

    Raises:
        ValueError: ``results`` is empty.
    """
    if not results:
        raise ValueError("summarise needs at least one result")
    s = np.array([r.final_success for r in results])
    t = np.array([r.final_tokens for r in results])
    return {
        "success": float(s.mean()),
        "success_std": float(s.std()),
        "success_min": float(s.min()),
        "tokens": float(t.mean()),
        "tokens_std": float(t.std()),
        "tokens_max": float(t.max()),
        "n": float(len(results)),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """``python -m rl.bandit``: print final success and tokens per algorithm over seeds."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--groups-per-step", type=int, default=1)
    parser.add_argument("--mu", type=float, default=None, help="μ (default: CareConfig's)")
    parser.add_argument("--p-f", type=float, default=None, help="p_f (default: CareConfig's)")
    parser.add_argument("--controller", action="store_true", help="CARE with the RuleController (every 10 steps)")
    args = parser.parse_args(argv)
    overrides = {k: v for k, v in (("mu", args.mu), ("p_f", args.p_f)) if v is not None}
    care = CareConfig(**overrides)
    table: dict[str, Any] = {}
    for algo in ALGOS:
        runs = []
        for seed in range(args.seeds):
            ctl = RuleController(care, every=10, min_groups=8) if args.controller and algo == "care" else None
            runs.append(
                run_bandit(
                    algo=algo,
                    steps=args.steps,
                    lr=args.lr,
                    seed=seed,
                    care=care,
                    groups_per_step=args.groups_per_step,
                    controller=ctl,
                )
            )
        table[algo] = summarise(runs)
        row = table[algo]
        print(
            f"{algo:8s} success {row['success']:.4f} ± {row['success_std']:.4f} (min {row['success_min']:.4f})"
            f"  tokens {row['tokens']:6.1f} ± {row['tokens_std']:5.1f}"
        )
    return table


if __name__ == "__main__":
    main()
