"""CARE: Competence-Aware Reward-and-Advantage Engineering for group-based RL (GRPO-style).

Source: the Qwen-Planner-Agent report (CARE); vanilla group normalisation is GRPO (Shao et al.
2024, "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language Models").

A *group* is G rollouts of the same task (same task id and seed). Per rollout ``i``:

* ``s_i ∈ {0, 1}``  success (the verifier's verdict),
* ``q_i ∈ [0, 1]``  milestone progress,
* ``c_i ∈ [0, 1]``  efficiency cost (normalised output tokens and/or tool calls, see
  :func:`efficiency_cost`).

The group success rate is ``p = mean(s)``.

Reward (by competence, :func:`reward_mode`, :func:`care_rewards`)::

    p <  p_low            shaping     r_i = s_i + λ·q_i
    p_low ≤ p ≤ p_high    outcome     r_i = s_i
    p >  p_high           efficiency  r_i = s_i·(1 − μ·c_i)      (penalty on successes only)

Ordering guarantee (a failure never outscores a success, in every mode): ``λ`` and ``μ`` are
hard-capped at :data:`LAMBDA_MAX` = :data:`MU_MAX` = 0.5 (checked by :class:`CareConfig`, and the
controllers' bounds must lie inside the caps) and ``q, c ∈ [0, 1]`` are checked. Then

* shaping:    best failure ``λ·q ≤ 0.5`` < ``1 ≤ 1 + λ·q`` worst success;
* outcome:    failure 0 < success 1;
* efficiency: failure 0 (no penalty, no progress) < ``0.5 ≤ 1 − μ·c`` worst success.

So the success/failure gap (≥ 0.5) is never smaller than the spread that shaping or the penalty
can create inside either class (≤ 0.5).

Advantage (:func:`care_advantages`)::

    A_i = (r_i − mean(r)) / max(std(r), σ_floor),     σ_floor = sqrt(p_f·(1 − p_f))

versus vanilla GRPO (:func:`grpo_advantages`)::

    A_i = (r_i − mean(r)) / (std(r) + ε),             ε = 1e-4 (TRL's value)

The floor we choose: ``p_f = 0.25``, ``σ_floor = sqrt(0.1875) = √3/4 ≈ 0.4330``. Why:

* ``sqrt(p(1−p))`` is exactly the std of a 0/1 group with success rate ``p``. With 0/1 rewards the
  floor therefore binds exactly when ``p < 0.25`` or ``p > 0.75`` — the groups that the default
  thresholds ``p_low = 0.25``, ``p_high = 0.75`` send to shaping or efficiency mode. Every
  outcome-mode group (``0.25 ≤ p ≤ 0.75``) has ``std ≥ 0.433`` and is normalised exactly as in
  GRPO (without ε): CARE only departs from GRPO in the groups whose reward it changed.
* It caps the amplification ``1/σ`` at ``1/0.433 ≈ 2.31`` (vanilla: up to ``1/ε = 10⁴`` for a
  near-constant group). In an all-success group ``|r_i − mean(r)| ≤ μ·(max c − min c) ≤ μ``, so
  every efficiency advantage obeys ``|A_i| ≤ μ/0.433`` (0.69 at the default ``μ = 0.3``), below
  the ±1 advantages of a balanced win/loss group and the ±2.02 of a lone win or loss in 8.
* It tempers the over-weighting of near-saturated groups by std normalisation (the "question
  difficulty bias" of dividing by a small group std, Liu et al. 2025, "Understanding R1-Zero-Like
  Training"): the lone success in a 1-of-8 0/1 group gets ``0.875/0.433 = 2.02`` instead of
  ``0.875/0.331 = 2.65``, still the largest advantage any group gives.
* 2-of-8 (``p = 0.25``) sits exactly on the floor, so a single extra success still moves the
  group into full GRPO scaling; ``p_f`` is retuned by the controller inside ``[0.05, 0.5]``
  (floor 0.218 … 0.5). The rule controller *lowers* it while wins are rare (below
  ``p_f = 1/8`` a lone win in 8 gets GRPO's full ``0.875/0.331 = 2.65``): damping the rare win is
  the opposite of what a struggling run needs.

Std convention: **population std (ddof = 0)**, ``std = sqrt(mean((r − mean(r))²))``. Reasons: the
floor is the Bernoulli (ddof = 0) std, so ``p_f`` keeps its literal meaning for every G; it is
defined for G = 1 (std 0, advantage 0). TRL's ``GRPOTrainer`` computes the group std with
``torch.std``, whose default is the *unbiased* estimator (ddof = 1), and divides by
``std + 1e-4``; for G = 8 its std is ``sqrt(8/7) ≈ 1.069×`` ours, so its advantages are ``0.935×``
ours. :func:`grpo_advantages` takes ``ddof`` (0 by default; 1 reproduces TRL). The GRPO paper
does not state which std it uses.

Worked example (all-success group of 8, output tokens 100, 200, …, 800, token budget 1000,
``weight = 1`` → ``c = 0.1, …, 0.8``; efficiency mode, the default ``μ = 0.3``)::

    r        = 1 − 0.3·c = 0.97, 0.94, …, 0.76          mean(r) = 0.865
    r − mean = ±0.105, ±0.075, ±0.045, ±0.015
    std(r)   = sqrt(2·(0.105² + 0.075² + 0.045² + 0.015²)/8) = sqrt(0.004725) = 0.068739
    vanilla  A = (r − mean)/(0.068739 + 1e-4)  = ±1.525, ±1.090, ±0.654, ±0.218
    TRL      A = (r − mean)/(0.073485 + 1e-4)  = ±1.427, ±1.019, ±0.612, ±0.204   (ddof = 1)
    CARE     A = (r − mean)/0.43301            = ±0.2425, ±0.1732, ±0.1039, ±0.0346

Vanilla GRPO turns a 100-token difference between two successes into a ±1.5 advantage (whatever
μ is: normalisation cancels it), as large as winning versus losing; CARE keeps it below 0.25, in
proportion to μ.

What this does to a policy is measured on a synthetic bandit in :mod:`rl.bandit` (see
:class:`CareConfig` for the figures).

No function here ever returns NaN: inputs are validated (NaN, range, shape) and the denominator
is at least ``σ_floor > 0``. An all-failure group gets zero advantages (there is nothing to
prefer) unless :attr:`CareConfig.shape_all_failure` is set.

Controllers (:class:`RuleController` default, :class:`LLMController` optional) retune ``p_low``,
``p_high``, ``lam``, ``mu`` and ``p_f`` every ``every`` optimiser steps from
:class:`TrainingStats`. Every parameter has a :class:`Bound` (``min``, ``max``, ``max_step``);
every change is returned as a :class:`ControllerChange` (old, new, reason, step) and logged via
:mod:`logging` (logger ``rl.care``). :func:`make_controller` builds one by name (``"none"``,
``"rule"``, ``"llm"`` through any OpenAI-compatible endpoint); ``describe()`` gives its settings as a
JSON-able dict for a run's log.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from numbers import Real
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "CONTROLLER_KINDS",
    "DEFAULT_BOUNDS",
    "DEFAULT_COST_WEIGHT",
    "GROUP_ALGOS",
    "LAMBDA_MAX",
    "MU_MAX",
    "PARAMS",
    "TRL_EPS",
    "Bound",
    "CareConfig",
    "ControllerChange",
    "GroupAdvantages",
    "GroupResult",
    "LLMController",
    "RewardMode",
    "RuleController",
    "TrainingStats",
    "care_advantages",
    "care_rewards",
    "efficiency_cost",
    "group_advantages",
    "group_care",
    "grpo_advantages",
    "make_controller",
    "penalty_rewards",
    "reward_mode",
    "success_floor",
]

logger = logging.getLogger(__name__)

#: Hard cap on the progress weight λ: the best failure (λ·1 ≤ 0.5) stays ≥ 0.5 below the worst success (1).
LAMBDA_MAX = 0.5
#: Hard cap on the efficiency weight μ: the worst success (1 − μ·1 ≥ 0.5) stays ≥ 0.5 above any failure (0).
MU_MAX = 0.5
#: The parameters the controllers retune (names of :class:`CareConfig` fields).
PARAMS: tuple[str, ...] = ("p_low", "p_high", "lam", "mu", "p_f")


class RewardMode(str, Enum):
    """Which reward a group gets, by its success rate ``p`` (see :func:`reward_mode`)."""

    SHAPING = "shaping"
    OUTCOME = "outcome"
    EFFICIENCY = "efficiency"


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CareConfig:
    r"""CARE hyper-parameters (the controllers replace them with :func:`dataclasses.replace`).

    Parameters:
        p_low (`float`, defaults to `0.25`):
            Groups with success rate ``p < p_low`` get progress shaping ``r = s + λ·q``. 0.25 puts
            1-of-8 and 1-of-5 groups in shaping, 2-of-8 and 1-of-4 (on the boundary) in outcome
            mode, and equals the default floor ``p_f`` so that, for 0/1 rewards, the floor binds exactly on
            the groups CARE re-rewards.
        p_high (`float`, defaults to `0.75`):
            Groups with ``p > p_high`` get the efficiency penalty ``r = s·(1 − μ·c)``. 0.75 is the
            mirror of ``p_low``: 7-of-8 and 8-of-8 groups are "solved", 6-of-8 still learns the
            outcome. Must satisfy ``p_low ≤ p_high``.
        lam (`float`, defaults to `0.3`):
            λ, weight of milestone progress in shaping mode; ``0 ≤ λ ≤ LAMBDA_MAX = 0.5``. 0.3 lets
            progress rank failures (a failure at full progress gets 0.3) while keeping the win
            (≥ 1) more than 3× the best failure; the cap keeps the success/failure gap ≥ 0.5.
        mu (`float`, defaults to `0.3`):
            μ, weight of the efficiency cost on successes in efficiency mode; ``0 ≤ μ ≤ MU_MAX =
            0.5``. The cap keeps the worst success (≥ 0.5) above any failure (0). Because the
            floor divides efficiency differences by ``σ_floor ≈ 0.433`` instead of their own tiny
            std, μ sets their weight directly (``|A| ≤ μ/0.433``). The former default 0.1
            (``|A| ≤ 0.23``) barely moved a policy: on the :mod:`rl.bandit` bandit (arms
            (success, tokens, calls) = (0.95, 800, 8), (0.95, 250, 3), (0.75, 60, 1), (0, 20, 1),
            the trainer's cost with budgets 1000 tokens and 10 calls, G = 8, lr 0.1, 1 group per
            step, 20 seeds, ``python -m rl.bandit``) GRPO ends at 93.11% success and 488 expected
            tokens after 300 steps (461 at step 150); CARE with μ = 0.1 at 93.00% / 347 tokens
            (396 at step 150, only −14%); with μ = 0.3 at 93.21% / 275 tokens (318 at step 150,
            −31%); with μ = 0.5 at 93.13% / 259. So 0.3 gets most of the effect, in half the
            steps, at no cost in success, while keeping ``|A| ≤ 0.69`` below a balanced win/loss
            (±1) and room below the cap for the controller to tighten. The same μ in the
            uncalibrated ablation (:func:`penalty_rewards` + TRL's normalisation) ends at
            87.65% success / 200 tokens: the floor, not μ, is what protects success.
        p_f (`float`, defaults to `0.25`):
            Declared success rate of the std floor ``σ_floor = sqrt(p_f·(1 − p_f))``;
            ``0 < p_f ≤ 0.5`` (the function is symmetric, 0.5 is its maximum 0.5). 0.25 gives
            ``σ_floor = √3/4 ≈ 0.433``; see the module docstring for why. On the bandit above,
            CARE without the floor (``p_f → 0``, μ = 0.3) ends at 88.2% success: the floor is what
            keeps efficiency from costing success.
        shape_all_failure (`bool`, defaults to `False`):
            Whether an all-failure group (``p = 0``) gets non-zero advantages from progress
            shaping. Off by default: with no success in the group there is no evidence of what
            finishing looks like, and ranking failures by milestones alone invites milestone
            farming; the group then contributes nothing, as in GRPO. The rewards are still
            ``λ·q`` (for logging).
    """

    p_low: float = field(default=0.25, metadata={"help": "p < p_low → progress shaping r = s + λ·q."})
    p_high: float = field(default=0.75, metadata={"help": "p > p_high → efficiency r = s·(1 − μ·c)."})
    lam: float = field(default=0.3, metadata={"help": "λ, progress weight in shaping mode, ≤ 0.5."})
    mu: float = field(default=0.3, metadata={"help": "μ, efficiency weight on successes, ≤ 0.5."})
    p_f: float = field(default=0.25, metadata={"help": "std floor sqrt(p_f(1 − p_f)), 0 < p_f ≤ 0.5."})
    shape_all_failure: bool = field(default=False, metadata={"help": "Advantages from progress when p = 0."})

    def __post_init__(self) -> None:
        for name in PARAMS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
                raise ValueError(f"CareConfig.{name} must be a finite number, got {value!r}")
        if not 0.0 <= self.p_low <= self.p_high <= 1.0:
            raise ValueError(f"CareConfig needs 0 ≤ p_low ≤ p_high ≤ 1, got p_low={self.p_low}, p_high={self.p_high}")
        if not 0.0 <= self.lam <= LAMBDA_MAX:
            raise ValueError(f"CareConfig.lam must lie in [0, {LAMBDA_MAX}], got {self.lam}")
        if not 0.0 <= self.mu <= MU_MAX:
            raise ValueError(f"CareConfig.mu must lie in [0, {MU_MAX}], got {self.mu}")
        if not 0.0 < self.p_f <= 0.5:
            raise ValueError(f"CareConfig.p_f must lie in (0, 0.5], got {self.p_f}")


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------


def _vector(name: str, values: ArrayLike, n: int | None = None) -> np.ndarray:
    """``values`` as a finite 1-D float64 array (of length ``n`` when given), else ValueError."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 1-D array of numbers: {exc}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size < 1:
        raise ValueError(f"{name} is empty: a group needs G ≥ 1 rollouts")
    if n is not None and arr.size != n:
        raise ValueError(f"{name} has length {arr.size}, expected {n} (one value per rollout of the group)")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _unit_vector(name: str, values: ArrayLike, n: int | None = None) -> np.ndarray:
    arr = _vector(name, values, n)
    if np.any(arr < 0.0) or np.any(arr > 1.0):
        raise ValueError(f"{name} must lie in [0, 1], got min {arr.min()}, max {arr.max()}")
    return arr


def _success_vector(values: ArrayLike, n: int | None = None) -> np.ndarray:
    arr = _vector("success", values, n)
    if not np.all((arr == 0.0) | (arr == 1.0)):
        raise ValueError("success must contain only 0 and 1 (or booleans)")
    return arr


def _check_rate(name: str, p: float) -> float:
    if isinstance(p, bool) or not isinstance(p, Real):
        raise ValueError(f"{name} must be a number, got {p!r}")
    p = float(p)
    if not math.isfinite(p) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {p}")
    return p


#: Largest reward magnitude the advantage functions accept (keeps std and mean finite).
_REWARD_ABS_MAX = 1e100


def _rewards_vector(values: ArrayLike, n: int | None = None) -> np.ndarray:
    arr = _vector("rewards", values, n)
    if np.any(np.abs(arr) > _REWARD_ABS_MAX):
        raise ValueError(f"rewards must have magnitude ≤ {_REWARD_ABS_MAX:g}")
    return arr


def _pop_std(x: np.ndarray) -> float:
    """Population std (ddof = 0); exactly 0 for a constant vector (no rounding residue)."""
    if np.all(x == x[0]):
        return 0.0
    return float(np.std(x, ddof=0))


# --------------------------------------------------------------------------------------------
# Rewards and advantages
# --------------------------------------------------------------------------------------------


def reward_mode(p: float, cfg: CareConfig) -> RewardMode:
    """The reward mode of a group with success rate ``p``.

    ``p < cfg.p_low`` → :attr:`RewardMode.SHAPING`; ``cfg.p_low ≤ p ≤ cfg.p_high`` →
    :attr:`RewardMode.OUTCOME`; ``p > cfg.p_high`` → :attr:`RewardMode.EFFICIENCY` (the boundaries
    belong to outcome mode).

    Args:
        p: group success rate, a float in [0, 1].
        cfg: the thresholds.

    Raises:
        ValueError: ``p`` is not a finite number in [0, 1].

    Source: the Qwen-Planner-Agent report (CARE, reward by competence).
    """
    p = _check_rate("p", p)
    if p < cfg.p_low:
        return RewardMode.SHAPING
    if p > cfg.p_high:
        return RewardMode.EFFICIENCY
    return RewardMode.OUTCOME


def care_rewards(
    success: ArrayLike,
    progress: ArrayLike | None,
    cost: ArrayLike | None,
    cfg: CareConfig,
) -> tuple[np.ndarray, RewardMode]:
    """CARE rewards of one group and the mode used.

    With ``p = mean(s)`` and ``mode = reward_mode(p, cfg)``::

        shaping     r_i = s_i + λ·q_i
        outcome     r_i = s_i
        efficiency  r_i = s_i·(1 − μ·c_i)

    Because ``λ, μ ≤ 0.5`` and ``q, c ∈ [0, 1]``, every success's reward exceeds every failure's
    by at least 0.5 in every mode.

    Args:
        success: shape ``(G,)``, values 0/1 (bools accepted), converted to float64.
        progress: shape ``(G,)``, float64 in [0, 1], or None (all zeros).
        cost: shape ``(G,)``, float64 in [0, 1] (see :func:`efficiency_cost`), or None (all zeros).
        cfg: the hyper-parameters.

    Returns:
        ``(rewards, mode)``: rewards of shape ``(G,)``, float64; the :class:`RewardMode`.

    Raises:
        ValueError: G < 1, not 1-D, mismatched lengths, NaN/inf, success not 0/1, progress or cost
            outside [0, 1].

    Source: the Qwen-Planner-Agent report (CARE).
    """
    s = _success_vector(success)
    g = s.size
    q = np.zeros(g) if progress is None else _unit_vector("progress", progress, g)
    c = np.zeros(g) if cost is None else _unit_vector("cost", cost, g)
    mode = reward_mode(float(s.mean()), cfg)
    if mode is RewardMode.SHAPING:
        rewards = s + cfg.lam * q
    elif mode is RewardMode.EFFICIENCY:
        rewards = s * (1.0 - cfg.mu * c)
    else:
        rewards = s.copy()
    return rewards, mode


def success_floor(p_f: float) -> float:
    """The success-variance std floor ``σ_floor = sqrt(p_f·(1 − p_f))``.

    It is the population std of a 0/1 group whose success rate is ``p_f`` (e.g. ``p_f = 0.25`` →
    ``sqrt(0.1875) = √3/4 ≈ 0.4330``; ``p_f = 0.5`` → 0.5, the maximum).

    Args:
        p_f: a float in [0, 1].

    Returns:
        A float in [0, 0.5].

    Raises:
        ValueError: ``p_f`` is not a finite number in [0, 1].

    Source: the Qwen-Planner-Agent report (CARE, success-variance floor).
    """
    p_f = _check_rate("p_f", p_f)
    return math.sqrt(p_f * (1.0 - p_f))


def care_advantages(rewards: ArrayLike, success: ArrayLike, cfg: CareConfig) -> np.ndarray:
    """CARE advantages of one group: group normalisation with a success-variance std floor.

    ::

        A_i = (r_i − mean(r)) / max(std(r), σ_floor),   σ_floor = sqrt(p_f·(1 − p_f))

    ``std`` is the population std (ddof = 0). A group whose rewards are all equal gets exact
    zeros; an all-failure group gets zeros unless ``cfg.shape_all_failure``. The denominator is
    at least ``σ_floor > 0``, so the result is never NaN. See the module docstring for the worked
    example (all-success group of 8: vanilla ±1.52, CARE ±0.081).

    Args:
        rewards: shape ``(G,)``, finite float64 (typically from :func:`care_rewards`).
        success: shape ``(G,)``, values 0/1.
        cfg: uses ``p_f`` and ``shape_all_failure``.

    Returns:
        Advantages, shape ``(G,)``, float64.

    Raises:
        ValueError: G < 1, not 1-D, mismatched lengths, NaN/inf or ``|r| > 1e100``, success not
            0/1.

    Source: the Qwen-Planner-Agent report (CARE); GRPO (DeepSeekMath, arXiv:2402.03300) for the normalisation.
    """
    r = _rewards_vector(rewards)
    s = _success_vector(success, r.size)
    if not cfg.shape_all_failure and not np.any(s):
        return np.zeros_like(r)
    std = _pop_std(r)
    if std == 0.0:
        return np.zeros_like(r)
    return (r - r.mean()) / max(std, success_floor(cfg.p_f))


def grpo_advantages(rewards: ArrayLike, eps: float = 1e-4, ddof: int = 0) -> np.ndarray:
    """Vanilla GRPO group-normalised advantages, for comparison.

    ::

        A_i = (r_i − mean(r)) / (std(r) + eps)

    ``ddof = 0`` (default) is the population std used by CARE; ``ddof = 1`` (with ``eps = 1e-4``)
    reproduces TRL's ``GRPOTrainer`` (``torch.std`` is unbiased by default). A constant group (or
    G = 1) gets zeros, never NaN.

    Args:
        rewards: shape ``(G,)``, finite float64.
        eps: positive float added to the std.
        ddof: 0 or 1.

    Returns:
        Advantages, shape ``(G,)``, float64.

    Raises:
        ValueError: G < 1, not 1-D, NaN/inf or ``|r| > 1e100``, ``eps ≤ 0``, ``ddof`` not 0 or 1.

    Source: Shao et al. 2024, "DeepSeekMath" (GRPO, outcome supervision: ``Â = (r − mean)/std``).
    """
    r = _rewards_vector(rewards)
    if isinstance(eps, bool) or not isinstance(eps, Real) or not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof!r}")
    if np.all(r == r[0]):
        return np.zeros_like(r)
    return (r - r.mean()) / (float(np.std(r, ddof=ddof)) + eps)


def penalty_rewards(success: ArrayLike, cost: ArrayLike, mu: float) -> np.ndarray:
    """The efficiency-penalised outcome reward of *every* group, whatever its success rate.

    ::

        r_i = s_i · (1 − μ·c_i)

    This is the reward of the CARE report's ablation ("without advantage calibration"): the
    efficiency penalty is applied everywhere and the advantages are then vanilla group-normalised
    (:func:`grpo_advantages`), so an all-success group turns small cost differences into
    advantages as large as winning versus losing. CARE instead penalises only groups with
    ``p > p_high`` and floors their std (:func:`group_care`).

    Args:
        success: shape ``(G,)``, 0/1.
        cost: shape ``(G,)`` in [0, 1] (:func:`efficiency_cost`).
        mu: μ in ``[0, MU_MAX]``.

    Returns:
        Rewards, shape ``(G,)``, float64.

    Raises:
        ValueError: malformed vectors, mismatched lengths, μ outside ``[0, MU_MAX]``.

    Source: the Qwen-Planner-Agent report (CARE ablation).
    """
    s = _success_vector(success)
    c = _unit_vector("cost", cost, s.size)
    if isinstance(mu, bool) or not isinstance(mu, Real) or not 0.0 <= mu <= MU_MAX:
        raise ValueError(f"mu must lie in [0, {MU_MAX}], got {mu!r}")
    return s * (1.0 - float(mu) * c)


@dataclass(frozen=True)
class GroupResult:
    """CARE outcome for one group.

    Attributes:
        rewards: shape ``(G,)`` float64, from :func:`care_rewards`.
        advantages: shape ``(G,)`` float64, from :func:`care_advantages`.
        mode: the :class:`RewardMode` used.
        p: group success rate ``mean(s)``.
        std: population std of the rewards.
        floor: ``σ_floor = sqrt(p_f(1 − p_f))`` of the config used.
        floored: whether the floor was the denominator (``std < floor``, non-zero advantages).
    """

    rewards: np.ndarray
    advantages: np.ndarray
    mode: RewardMode
    p: float
    std: float
    floor: float
    floored: bool


def group_care(
    success: ArrayLike,
    progress: ArrayLike | None,
    cost: ArrayLike | None,
    cfg: CareConfig,
    penalty: ArrayLike | None = None,
) -> GroupResult:
    """Rewards and advantages of one group (:func:`care_rewards` then :func:`care_advantages`).

    Args:
        success: shape ``(G,)``, 0/1.
        progress: shape ``(G,)`` in [0, 1], or None.
        cost: shape ``(G,)`` in [0, 1], or None.
        cfg: the hyper-parameters.
        penalty: shape ``(G,)``, finite, ≥ 0, subtracted from each reward before the advantages
            (in every mode: e.g. ``ν × share of invalid replies``), or None. An all-failure group
            still gets zero advantages unless ``cfg.shape_all_failure``.

    Returns:
        A :class:`GroupResult` (its ``rewards`` with the penalty subtracted).

    Raises:
        ValueError: as :func:`care_rewards`; a penalty of another length, negative or not finite.

    Source: the Qwen-Planner-Agent report (CARE); the penalty is phoneenv's.
    """
    s = _success_vector(success)
    rewards, mode = care_rewards(s, progress, cost, cfg)
    if penalty is not None:
        pen = _vector("penalty", penalty, s.size)
        if np.any(pen < 0):
            raise ValueError("penalty must be ≥ 0")
        rewards = rewards - pen
    advantages = care_advantages(rewards, s, cfg)
    std = _pop_std(rewards)
    floor = success_floor(cfg.p_f)
    floored = bool(np.any(advantages != 0.0)) and std < floor
    return GroupResult(rewards, advantages, mode, float(s.mean()), std, floor, floored)


def efficiency_cost(
    output_tokens: ArrayLike | None,
    tool_calls: ArrayLike | None,
    budget_tokens: float,
    budget_calls: float,
    weight: float = 1.0,
) -> np.ndarray:
    """Map raw per-rollout counts to an efficiency cost in [0, 1].

    ::

        c_i = w·min(tokens_i / budget_tokens, 1) + (1 − w)·min(calls_i / budget_calls, 1)

    ``w = weight`` is the share of the cost given to output tokens (1: tokens only, 0: tool calls
    only). Budgets are absolute (per task family), not relative to the group, so the cost of a
    rollout does not depend on its siblings and saturates at 1 beyond the budget.

    Args:
        output_tokens: shape ``(G,)``, counts ≥ 0 (float64 accepted); may be None when ``w = 0``.
        tool_calls: shape ``(G,)``, counts ≥ 0; may be None when ``w = 1``.
        budget_tokens: positive float.
        budget_calls: positive float.
        weight: float in [0, 1].

    Returns:
        Costs, shape ``(G,)``, float64 in [0, 1].

    Raises:
        ValueError: negative or NaN counts, mismatched lengths, G < 1, a needed array is None,
            budgets ≤ 0, weight outside [0, 1].

    Source: the Qwen-Planner-Agent report (CARE efficiency cost).
    """
    w = _check_rate("weight", weight)
    for name, budget in (("budget_tokens", budget_tokens), ("budget_calls", budget_calls)):
        if isinstance(budget, bool) or not isinstance(budget, Real) or not math.isfinite(budget) or budget <= 0:
            raise ValueError(f"{name} must be a positive finite number, got {budget!r}")
    if output_tokens is None and tool_calls is None:
        raise ValueError("efficiency_cost needs output_tokens or tool_calls")
    parts: list[np.ndarray] = []
    n: int | None = None
    for name, counts, budget, share in (
        ("output_tokens", output_tokens, budget_tokens, w),
        ("tool_calls", tool_calls, budget_calls, 1.0 - w),
    ):
        if counts is None:
            if share > 0.0:
                raise ValueError(f"{name} is None but its weight is {share}")
            continue
        arr = _vector(name, counts, n)
        n = arr.size
        if np.any(arr < 0):
            raise ValueError(f"{name} must be ≥ 0")
        parts.append(share * np.minimum(arr / float(budget), 1.0))
    cost = parts[0] if len(parts) == 1 else parts[0] + parts[1]
    return np.clip(cost, 0.0, 1.0)


#: Share of the efficiency cost given to output tokens (the rest to tool calls) when nothing says
#: otherwise: ``TrainConfig.care_cost_weight``'s default and :func:`rl.bandit.run_bandit`'s.
DEFAULT_COST_WEIGHT = 0.5

#: TRL's ε in ``A = (r − mean)/(std + ε)`` (``GRPOTrainer._generate_and_score_completions``).
TRL_EPS = 1e-4

#: The algorithms :func:`group_advantages` knows (``TrainConfig.algo``, :func:`rl.bandit.run_bandit`).
GROUP_ALGOS: tuple[str, ...] = ("care", "grpo", "penalty")


@dataclass(frozen=True)
class GroupAdvantages:
    """One group's rewards and advantages under one algorithm (:func:`group_advantages`).

    Attributes:
        algo: ``"care"``, ``"grpo"`` or ``"penalty"``.
        rewards: shape ``(G,)`` float64, the rewards the advantages were computed from (after
            any penalty).
        advantages: shape ``(G,)`` float64.
        cost: shape ``(G,)`` float64 in [0, 1], :func:`efficiency_cost` of the group.
        mode: CARE's :class:`RewardMode` of the group's success rate under the config: the mode
            CARE used (``"care"``) or would have used (the others: logged so that every arm
            reports its share of groups per mode).
        p: group success rate ``mean(s)``.
        floored: CARE's std floor was the denominator (always False for the others).
    """

    algo: str
    rewards: np.ndarray
    advantages: np.ndarray
    cost: np.ndarray
    mode: RewardMode
    p: float
    floored: bool

    @property
    def zero(self) -> bool:
        """Whether every advantage is exactly 0 (the group cannot move the policy)."""
        return not bool(np.any(self.advantages))


def group_advantages(
    algo: str,
    success: ArrayLike,
    progress: ArrayLike | None,
    output_tokens: ArrayLike,
    tool_calls: ArrayLike,
    cfg: CareConfig,
    *,
    budget_tokens: float,
    budget_calls: float,
    cost_weight: float = DEFAULT_COST_WEIGHT,
    penalty: ArrayLike | None = None,
) -> GroupAdvantages:
    """Rewards and advantages of one group under ``algo``: the one function the trainer
    (:class:`rl.trainers.PhoneGRPOTrainer`, per gathered group) and the bandit
    (:func:`rl.bandit.run_bandit`) both call, so the two cannot drift apart.

    With ``c = efficiency_cost(output_tokens, tool_calls, budget_tokens, budget_calls, cost_weight)``
    and ``ν_i = penalty_i`` (0 when None)::

        grpo      r = s − ν                    A = (r − mean r)/(std₁(r) + 1e-4)
        penalty   r = s·(1 − μ·c) − ν          A = (r − mean r)/(std₁(r) + 1e-4)
        care      group_care(s, q, c, cfg, penalty=ν)  (population std, floored: see care_advantages)

    ``std₁`` is the sample std (ddof = 1, Bessel's correction) and 1e-4 is :data:`TRL_EPS`: TRL
    1.16's ``GRPOTrainer._generate_and_score_completions`` with ``scale_rewards="group"`` divides
    by ``nanstd(rewards.view(-1, G), dim=1) + 1e-4`` where ``trl.trainer.utils.nanstd`` applies
    ``count/(count − 1)`` to the variance. So ``"grpo"`` reproduces TRL's own advantages and
    ``"penalty"`` is the CARE report's ablation under TRL's vanilla normalisation.

    Args:
        algo: one of :data:`GROUP_ALGOS`.
        success: shape ``(G,)``, 0/1.
        progress: shape ``(G,)`` in [0, 1], or None (zeros; used by CARE's shaping mode only).
        output_tokens: shape ``(G,)``, counts ≥ 0.
        tool_calls: shape ``(G,)``, counts ≥ 0.
        cfg: CARE's parameters (``"penalty"`` uses ``mu``; every algo uses the thresholds to
            report the group's mode).
        budget_tokens: positive output-token budget of :func:`efficiency_cost`.
        budget_calls: positive tool-call budget of :func:`efficiency_cost`.
        cost_weight: the cost's share from tokens, in [0, 1].
        penalty: shape ``(G,)``, ≥ 0, subtracted from the rewards in every algo, or None.

    Returns:
        A :class:`GroupAdvantages`.

    Raises:
        ValueError: an unknown ``algo`` or any malformed vector (as the functions above).

    Source: GRPO (Shao et al. 2024, DeepSeekMath) as implemented by TRL 1.16 for ``"grpo"``;
    the Qwen-Planner-Agent report (CARE and its ablation) for ``"care"`` and ``"penalty"``.
    """
    if algo not in GROUP_ALGOS:
        raise ValueError(f"algo must be one of {GROUP_ALGOS}, got {algo!r}")
    s = _success_vector(success)
    cost = efficiency_cost(output_tokens, tool_calls, budget_tokens, budget_calls, cost_weight)
    if cost.size != s.size:
        raise ValueError(f"cost has length {cost.size}, expected {s.size}")
    pen = None
    if penalty is not None:
        pen = _vector("penalty", penalty, s.size)
        if np.any(pen < 0):
            raise ValueError("penalty must be ≥ 0")
    mode = reward_mode(float(s.mean()), cfg)
    if algo == "care":
        res = group_care(s, progress, cost, cfg, penalty=pen)
        return GroupAdvantages(algo, res.rewards, res.advantages, cost, res.mode, res.p, res.floored)
    rewards = s.copy() if algo == "grpo" else penalty_rewards(s, cost, cfg.mu)
    if pen is not None:
        rewards = rewards - pen
    advantages = grpo_advantages(rewards, eps=TRL_EPS, ddof=1) if s.size > 1 else np.zeros_like(rewards)
    return GroupAdvantages(algo, rewards, advantages, cost, mode, float(s.mean()), False)


# --------------------------------------------------------------------------------------------
# Controllers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """Allowed range ``[min, max]`` of a parameter and the largest change ``max_step`` per update.

    Raises:
        ValueError: non-finite values, ``min > max`` or ``max_step ≤ 0``.
    """

    min: float
    max: float
    max_step: float

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) for v in (self.min, self.max, self.max_step)):
            raise ValueError(f"Bound values must be finite, got {self}")
        if self.min > self.max:
            raise ValueError(f"Bound needs min ≤ max, got {self}")
        if self.max_step <= 0:
            raise ValueError(f"Bound.max_step must be positive, got {self.max_step}")

    def clamp(self, old: float, proposed: float) -> float:
        """``proposed`` limited to ``old ± max_step`` and then to ``[min, max]``.

        With ``old`` inside the range (the controllers check this) the result satisfies both
        (``|new − old| ≤ max_step`` up to one float rounding).
        """
        step = min(max(proposed - old, -self.max_step), self.max_step)
        return min(max(old + step, self.min), self.max)


#: Default bounds. Ranges keep the ordering guarantee (λ, μ ≤ 0.5), keep ``p_low < p_high``
#: (0.4 < 0.6) and ``p_f`` in the useful half (floor 0.218 … 0.5); steps are small so that a run
#: of updates drifts rather than jumps (≥ 4 updates to cross any range).
DEFAULT_BOUNDS: Mapping[str, Bound] = {
    "p_low": Bound(0.05, 0.4, 0.05),
    "p_high": Bound(0.6, 0.95, 0.05),
    "lam": Bound(0.0, 0.5, 0.05),
    "mu": Bound(0.0, 0.5, 0.05),
    "p_f": Bound(0.05, 0.5, 0.05),
}


@dataclass(frozen=True)
class TrainingStats:
    """Training statistics over the controller's window (typically the last ``every`` steps).

    Attributes:
        success_rate: mean success over all rollouts in the window, [0, 1].
        all_success_share: share of groups with ``p = 1``, [0, 1].
        all_failure_share: share of groups with ``p = 0``, [0, 1].
        token_trend: relative change of mean output tokens per rollout against the previous
            window, ``(now − before)/before`` (e.g. +0.1: 10% longer); 0 when unknown.
        n_groups: number of groups in the window (≥ 0).

    Raises:
        ValueError: a value is NaN or out of range.
    """

    success_rate: float
    all_success_share: float
    all_failure_share: float
    token_trend: float = 0.0
    n_groups: int = 0

    def __post_init__(self) -> None:
        for name in ("success_rate", "all_success_share", "all_failure_share"):
            _check_rate(name, getattr(self, name))
        if (
            isinstance(self.token_trend, bool)
            or not isinstance(self.token_trend, Real)
            or not math.isfinite(self.token_trend)
        ):
            raise ValueError(f"token_trend must be a finite number, got {self.token_trend!r}")
        if self.token_trend < -1.0:
            raise ValueError(f"token_trend is a relative change and cannot be below -1, got {self.token_trend}")
        if not isinstance(self.n_groups, int) or self.n_groups < 0:
            raise ValueError(f"n_groups must be a non-negative int, got {self.n_groups!r}")
        if self.all_success_share + self.all_failure_share > 1.0 + 1e-9:
            raise ValueError("all_success_share + all_failure_share cannot exceed 1")

    @classmethod
    def from_groups(
        cls,
        successes: Sequence[ArrayLike],
        mean_output_tokens: float | None = None,
        prev_mean_output_tokens: float | None = None,
    ) -> TrainingStats:
        """Statistics from the success vectors of the window's groups (each shape ``(G_k,)``, 0/1)
        and the mean output tokens per rollout now and in the previous window (for the trend)."""
        if len(successes) == 0:
            raise ValueError("from_groups needs at least one group")
        groups = [_success_vector(s) for s in successes]
        allv = np.concatenate(groups)
        trend = 0.0
        if mean_output_tokens is not None and prev_mean_output_tokens:
            trend = (float(mean_output_tokens) - float(prev_mean_output_tokens)) / float(prev_mean_output_tokens)
        return cls(
            success_rate=float(allv.mean()),
            all_success_share=float(np.mean([bool(np.all(g == 1.0)) for g in groups])),
            all_failure_share=float(np.mean([bool(np.all(g == 0.0)) for g in groups])),
            token_trend=trend,
            n_groups=len(groups),
        )


@dataclass(frozen=True)
class ControllerChange:
    """One parameter change made by a controller.

    Attributes:
        step: the optimiser step of the update.
        name: the :class:`CareConfig` field.
        old: value before.
        new: value after (inside its :class:`Bound`, within ``max_step`` of ``old``).
        reason: why (the rule that fired, or the LLM's reason plus any clamping).
        source: ``"rule"`` or ``"llm"``.
        proposed: the raw proposed value (differs from ``new`` when clamped).
        clamped: whether the bound or the step limit changed the proposal.
    """

    step: int
    name: str
    old: float
    new: float
    reason: str
    source: str
    proposed: float
    clamped: bool


class _ControllerBase:
    """Shared state: config, bounds, cadence, history and the clamped apply."""

    source = "base"

    def __init__(
        self,
        config: CareConfig | None = None,
        bounds: Mapping[str, Bound] | None = None,
        every: int = 50,
        min_groups: int = 8,
    ) -> None:
        self.config = config if config is not None else CareConfig()
        self.bounds: dict[str, Bound] = dict(DEFAULT_BOUNDS if bounds is None else bounds)
        missing = set(PARAMS) - set(self.bounds)
        if missing:
            raise ValueError(f"bounds missing for {sorted(missing)}")
        for name in PARAMS:
            b, v = self.bounds[name], getattr(self.config, name)
            if not b.min <= v <= b.max:
                raise ValueError(f"config.{name} = {v} lies outside its bound [{b.min}, {b.max}]")
        if self.bounds["lam"].max > LAMBDA_MAX or self.bounds["mu"].max > MU_MAX:
            raise ValueError(f"bounds for lam and mu must stay ≤ {LAMBDA_MAX} and ≤ {MU_MAX}")
        if self.bounds["lam"].min < 0 or self.bounds["mu"].min < 0:
            raise ValueError("bounds for lam and mu must be ≥ 0")
        if self.bounds["p_low"].min < 0 or self.bounds["p_high"].max > 1:
            raise ValueError("bounds for p_low and p_high must lie in [0, 1]")
        if self.bounds["p_f"].min <= 0 or self.bounds["p_f"].max > 0.5:
            raise ValueError("bounds for p_f must lie in (0, 0.5]")
        if self.bounds["p_low"].max > self.bounds["p_high"].min:
            raise ValueError("bounds must keep p_low ≤ p_high: p_low.max > p_high.min")
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive int, got {every!r}")
        self.every = every
        self.min_groups = min_groups
        self.history: list[ControllerChange] = []
        self._last_step: int | None = None

    def _describe(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "every": self.every,
            "min_groups": self.min_groups,
            "bounds": {name: dataclasses.asdict(self.bounds[name]) for name in PARAMS},
            "config": dataclasses.asdict(self.config),
        }

    def due(self, step: int) -> bool:
        """Whether ``step`` is an update step: at least ``every`` steps since the last update (or
        since step 0 before the first)."""
        last = 0 if self._last_step is None else self._last_step
        return step - last >= self.every

    def _apply(self, step: int, proposals: Mapping[str, tuple[float, str]]) -> list[ControllerChange]:
        changes: list[ControllerChange] = []
        values = {name: getattr(self.config, name) for name in PARAMS}
        for name in PARAMS:
            if name not in proposals:
                continue
            proposed, reason = proposals[name]
            old = values[name]
            new = self.bounds[name].clamp(old, proposed)
            clamped = new != proposed
            if new == old:
                if clamped:
                    logger.info(
                        "CARE %s step %d: %s stays %.4g (proposed %.4g is outside the bound)",
                        self.source,
                        step,
                        name,
                        old,
                        proposed,
                    )
                continue
            if clamped:
                reason = f"{reason} (clamped from {proposed:.4g} to {new:.4g})"
            values[name] = new
            changes.append(ControllerChange(step, name, old, new, reason, self.source, float(proposed), clamped))
        if changes:
            self.config = dataclasses.replace(self.config, **{c.name: c.new for c in changes})
            for c in changes:
                logger.info("CARE %s step %d: %s %.4g -> %.4g (%s)", c.source, c.step, c.name, c.old, c.new, c.reason)
            self.history.extend(changes)
        return changes

    def _start(self, step: int, stats: TrainingStats) -> bool:
        if not isinstance(stats, TrainingStats):
            raise ValueError(f"stats must be a TrainingStats, got {type(stats).__name__}")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step must be a non-negative int, got {step!r}")
        if not self.due(step):
            return False
        self._last_step = step
        if stats.n_groups < self.min_groups:
            logger.info(
                "CARE %s step %d: no change, %d groups < min_groups %d",
                self.source,
                step,
                stats.n_groups,
                self.min_groups,
            )
            return False
        return True


class RuleController(_ControllerBase):
    """Bounded rule-based controller (the default).

    Every ``every`` optimiser steps (and only with at least ``min_groups`` groups of evidence),
    each parameter moves by at most one ``max_step`` of its :class:`Bound` in the direction of the
    first rule that fires, and stays inside ``[min, max]``. With ``S`` = success rate, ``A1`` =
    all-success share, ``A0`` = all-failure share, ``T`` = token trend (thresholds are the
    constructor arguments, defaults in brackets):

    * ``lam``, ``p_low`` (shaping): **up** when ``S < struggle_rate`` [0.2] or
      ``A0 ≥ failure_share`` [0.5] (the policy rarely wins: lean on progress, shape more groups);
      **down** when ``S > competent_rate`` [0.6] and ``A0 < 0.1`` (it wins: fade the proxy).
    * ``mu`` (efficiency weight) and ``p_high`` (opposite direction): first **relax**
      (μ down, p_high up) when ``S < guard_rate`` [0.4] (efficiency must not cost success) or
      ``T < −collapse_trend`` [0.25] (outputs shrinking fast: guard against length collapse);
      else **tighten** (μ up, p_high down) when ``A1 ≥ saturated_share`` [0.3] (many solved
      groups with nothing but efficiency left to learn) or ``S > competent_rate`` and
      ``T > growth_trend`` [0.05] (outputs growing while the policy wins).
    * ``p_f`` (floor): **down** when ``S < guard_rate``: wins are rare, and the floor damps
      exactly them (a lone win in 8 has std 0.331, so it gets ``0.875/max(0.331, σ_floor)``:
      2.02 at ``p_f = 0.25``, 2.19 at 0.2, GRPO's full 2.65 once ``p_f ≤ 1/8``). Otherwise
      **up** when ``T < −collapse_trend`` (outputs shrinking fast: damp the efficiency
      differences among successes, ``|A| ≤ μ/σ_floor``), or when ``p_f`` is below its starting
      value (wins are no longer rare: restore the floor, never past the start).

    Earlier versions raised ``p_f`` when success was low (damping the rare wins CARE means to keep)
    and lowered it when most groups were solved (amplifying efficiency differences up to
    ``μ/0.218``, toward the vanilla normalisation whose ablation loses success); both are gone.

    ``update(step, stats)`` returns the changes made (empty when not due, short of evidence or
    nothing fired) and logs each one; :meth:`describe` gives the settings as a JSON-able dict.
    """

    source = "rule"

    def __init__(
        self,
        config: CareConfig | None = None,
        bounds: Mapping[str, Bound] | None = None,
        every: int = 50,
        min_groups: int = 8,
        *,
        struggle_rate: float = 0.2,
        failure_share: float = 0.5,
        competent_rate: float = 0.6,
        guard_rate: float = 0.4,
        saturated_share: float = 0.3,
        growth_trend: float = 0.05,
        collapse_trend: float = 0.25,
    ) -> None:
        super().__init__(config, bounds, every, min_groups)
        self.start = self.config
        self.struggle_rate = struggle_rate
        self.failure_share = failure_share
        self.competent_rate = competent_rate
        self.guard_rate = guard_rate
        self.saturated_share = saturated_share
        self.growth_trend = growth_trend
        self.collapse_trend = collapse_trend

    def directions(self, stats: TrainingStats) -> dict[str, tuple[int, str]]:
        """Direction (−1, +1) and reason per parameter that a rule moves (the rest hold)."""
        s, a1, a0, t = stats.success_rate, stats.all_success_share, stats.all_failure_share, stats.token_trend
        out: dict[str, tuple[int, str]] = {}
        if s < self.struggle_rate or a0 >= self.failure_share:
            why = f"low competence (success {s:.3g}, all-failure share {a0:.3g}): more progress shaping"
            out["lam"] = out["p_low"] = (+1, why)
        elif s > self.competent_rate and a0 < 0.1:
            why = f"competent (success {s:.3g} > {self.competent_rate}): fade progress shaping"
            out["lam"] = out["p_low"] = (-1, why)
        if s < self.guard_rate or t < -self.collapse_trend:
            why = (
                f"success {s:.3g} < {self.guard_rate}: relax efficiency pressure"
                if s < self.guard_rate
                else f"output tokens falling fast (trend {t:+.3g}): relax efficiency pressure"
            )
            out["mu"], out["p_high"] = (-1, why), (+1, why)
        elif a1 >= self.saturated_share or (s > self.competent_rate and t > self.growth_trend):
            why = (
                f"all-success share {a1:.3g} ≥ {self.saturated_share}: more efficiency pressure"
                if a1 >= self.saturated_share
                else f"output tokens growing (trend {t:+.3g}) at success {s:.3g}: more efficiency pressure"
            )
            out["mu"], out["p_high"] = (+1, why), (-1, why)
        if s < self.guard_rate:
            out["p_f"] = (
                -1,
                f"success {s:.3g} < {self.guard_rate}: lower the std floor, rare wins keep their advantage",
            )
        elif t < -self.collapse_trend:
            out["p_f"] = (+1, f"output tokens falling fast (trend {t:+.3g}): raise the std floor, damp efficiency")
        elif self.config.p_f < self.start.p_f:
            out["p_f"] = (+1, f"success {s:.3g} ≥ {self.guard_rate}: restore the std floor toward {self.start.p_f:g}")
        return out

    def update(self, step: int, stats: TrainingStats) -> list[ControllerChange]:
        """Apply the rules at ``step`` if due; returns the changes (see the class docstring).

        Raises:
            ValueError: ``step`` negative or not an int, ``stats`` not a :class:`TrainingStats`.
        """
        if not self._start(step, stats):
            return []
        proposals = {
            name: (getattr(self.config, name) + d * self.bounds[name].max_step, reason)
            for name, (d, reason) in self.directions(stats).items()
        }
        if "p_f" in proposals and stats.token_trend >= -self.collapse_trend:
            value, reason = proposals["p_f"]  # a restore (or a lowering): never up past the start
            proposals["p_f"] = (min(value, max(self.start.p_f, self.config.p_f)), reason)
        return self._apply(step, proposals)

    def describe(self) -> dict[str, Any]:
        """The controller's settings, JSON-able: ``source``, ``every``, ``min_groups``, ``bounds``
        (``{name: {min, max, max_step}}``), ``config`` (the current :class:`CareConfig` as a dict)
        and ``rules`` (the thresholds of the class docstring)."""
        return {
            **self._describe(),
            "rules": {
                "struggle_rate": self.struggle_rate,
                "failure_share": self.failure_share,
                "competent_rate": self.competent_rate,
                "guard_rate": self.guard_rate,
                "saturated_share": self.saturated_share,
                "growth_trend": self.growth_trend,
                "collapse_trend": self.collapse_trend,
            },
        }


class _ChatLike(Protocol):
    def chat(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any: ...


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)

_DESCRIPTIONS = {
    "p_low": "groups with success rate p < p_low get progress shaping r = s + lam*q",
    "p_high": "groups with p > p_high get the efficiency penalty r = s*(1 - mu*c)",
    "lam": "weight of milestone progress q in shaping mode",
    "mu": "weight of the efficiency cost c (tokens/tool calls) on successes",
    "p_f": "advantage std floor sqrt(p_f*(1-p_f)); higher damps low-variance (e.g. all-success) groups",
}


class LLMController(_ControllerBase):
    """Optional controller that asks a chat model for new values, then clamps and logs them.

    ``client`` is any object with ``chat(messages, json_schema=..., max_tokens=...)`` returning
    a result with ``.content`` (the :class:`phoneenv.llm.ChatClient` protocol). Every ``every``
    steps it sends the current values, bounds, max steps and :class:`TrainingStats`, asking for
    one JSON object ``{"<param>": {"value": number, "reason": string}, ...}`` (only the params
    to change). Each proposed value is clamped by its :class:`Bound` (range and ``max_step``);
    clamping is noted in the reason and the record (``clamped``, ``proposed``). A call that
    raises, a reply that is not a JSON object, and individual entries that are unknown or not
    finite numbers are logged (warning) and ignored: the old values stay, ``update`` never raises
    for the model's sake. ``last_error`` keeps the last such problem (None after a clean reply).

    ``redact``: strings (an API key) replaced by ``***`` in everything the controller logs or keeps
    (errors, reasons); :func:`make_controller` passes the key it was given.
    """

    source = "llm"

    def __init__(
        self,
        client: _ChatLike,
        config: CareConfig | None = None,
        bounds: Mapping[str, Bound] | None = None,
        every: int = 50,
        min_groups: int = 8,
        max_tokens: int = 512,
        *,
        redact: Sequence[str] = (),
    ) -> None:
        super().__init__(config, bounds, every, min_groups)
        self.client = client
        self.max_tokens = max_tokens
        self.last_error: str | None = None
        self._redact = tuple(s for s in redact if s)

    def _clean(self, text: str) -> str:
        for secret in self._redact:
            text = text.replace(secret, "***")
        return text

    def describe(self) -> dict[str, Any]:
        """The controller's settings, JSON-able: ``source``, ``every``, ``min_groups``, ``bounds``
        (``{name: {min, max, max_step}}``), ``config`` (the current :class:`CareConfig` as a dict),
        ``model`` (the client's model name, when it has one) and ``max_tokens``. Never the API key."""
        model = getattr(self.client, "model", None)
        return {
            **self._describe(),
            "model": self._clean(model) if isinstance(model, str) else None,
            "max_tokens": self.max_tokens,
        }

    def json_schema(self) -> dict[str, Any]:
        """The reply schema: an object of optional ``{value, reason}`` entries, one per param."""
        entry = {
            "type": "object",
            "properties": {"value": {"type": "number"}, "reason": {"type": "string"}},
            "required": ["value", "reason"],
            "additionalProperties": False,
        }
        return {"type": "object", "properties": dict.fromkeys(PARAMS, entry), "additionalProperties": False}

    def messages(self, step: int, stats: TrainingStats) -> list[dict[str, Any]]:
        """The chat messages of one consultation."""
        state = {
            "step": step,
            "stats": dataclasses.asdict(stats),
            "params": {
                name: {
                    "value": getattr(self.config, name),
                    "min": self.bounds[name].min,
                    "max": self.bounds[name].max,
                    "max_step": self.bounds[name].max_step,
                    "meaning": _DESCRIPTIONS[name],
                }
                for name in PARAMS
            },
        }
        system = (
            "You tune CARE, the reward and advantage scheme of a GRPO-style RL run for a planner agent. "
            "Groups of rollouts per task are rewarded by the group's success rate p. Propose new values "
            "only for parameters that should change, each within [min, max] and at most max_step from its "
            "current value, with a short reason. Reply with one JSON object "
            '{"<param>": {"value": <number>, "reason": "<why>"}}; {} keeps everything.'
        )
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": json.dumps(state, indent=1)},
        ]

    def _fail(self, step: int, why: str) -> list[ControllerChange]:
        why = self._clean(why)
        self.last_error = why
        logger.warning("CARE llm step %d: keeping old values: %s", step, why)
        return []

    def update(self, step: int, stats: TrainingStats) -> list[ControllerChange]:
        """Consult the model at ``step`` if due; returns the (clamped) changes.

        Raises:
            ValueError: ``step`` negative or not an int, ``stats`` not a :class:`TrainingStats`
                (caller errors; nothing the model says raises).
        """
        if not self._start(step, stats):
            return []
        try:
            result = self.client.chat(
                self.messages(step, stats), json_schema=self.json_schema(), max_tokens=self.max_tokens
            )
            content = result.content
        except Exception as exc:  # the model may fail in any way; the run must not
            return self._fail(step, f"chat failed: {type(exc).__name__}: {exc}")
        if not isinstance(content, str):
            return self._fail(step, f"reply content is {type(content).__name__}, not text")
        text = content.strip()
        fenced = _FENCE.match(text)
        if fenced:
            text = fenced.group(1)
        try:
            reply = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            return self._fail(step, f"reply is not JSON ({exc}): {content[:200]!r}")
        if not isinstance(reply, dict):
            return self._fail(step, f"reply is {type(reply).__name__}, not a JSON object")
        self.last_error = None
        proposals: dict[str, tuple[float, str]] = {}
        for name, entry in reply.items():
            if name not in PARAMS:
                self.last_error = f"unknown parameter {name!r}"
                logger.warning("CARE llm step %d: ignoring unknown parameter %r", step, name)
                continue
            value, reason = (entry.get("value"), entry.get("reason")) if isinstance(entry, dict) else (entry, None)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                self.last_error = f"{name}: value {value!r} is not a finite number"
                logger.warning("CARE llm step %d: ignoring %s: value %r is not a finite number", step, name, value)
                continue
            reason = reason.strip() if isinstance(reason, str) and reason.strip() else "no reason given"
            proposals[name] = (float(value), self._clean(f"llm: {reason[:300]}"))
        return self._apply(step, proposals)


#: The controller kinds :func:`make_controller` builds.
CONTROLLER_KINDS: tuple[str, ...] = ("none", "rule", "llm")


def make_controller(
    kind: str,
    config: CareConfig,
    *,
    every: int = 50,
    min_groups: int = 8,
    client: _ChatLike | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
) -> RuleController | LLMController | None:
    """The controller a run asks for, by name (what ``TrainConfig.care_controller`` holds).

    Args:
        kind: ``"none"`` (no controller: the config stays fixed), ``"rule"``
            (:class:`RuleController`) or ``"llm"`` (:class:`LLMController`).
        config: the starting :class:`CareConfig`.
        every: optimiser steps between updates, ≥ 1.
        min_groups: least number of groups in a window for an update.
        client: for ``"llm"``: any chat client (``chat(messages, json_schema=..., max_tokens=...)``).
        base_url: for ``"llm"`` without ``client``: an OpenAI-compatible endpoint, e.g.
            ``http://127.0.0.1:8000/v1``; an ``agents.llm.client.OpenAIChatClient`` is built.
        model: the model name that endpoint expects.
        api_key: its bearer token (default ``$OPENAI_API_KEY`` or none); it is redacted from every
            log line and never appears in :meth:`LLMController.describe`.

    Returns:
        ``None`` for ``"none"``, else the controller.

    Raises:
        ValueError: an unknown ``kind``; ``"llm"`` with neither ``client`` nor both ``base_url`` and
        ``model``; a config outside the default bounds; ``every`` not a positive int.
    """
    if kind not in CONTROLLER_KINDS:
        raise ValueError(f"care controller must be one of {CONTROLLER_KINDS}, got {kind!r}")
    if kind == "none":
        return None
    if kind == "rule":
        return RuleController(config, every=every, min_groups=min_groups)
    if client is None:
        if not base_url or not model:
            raise ValueError(
                "the llm care controller needs a chat client, or an OpenAI-compatible base_url and model "
                "(care_controller_base_url, care_controller_model)"
            )
        from agents.llm.client import OpenAIChatClient

        client = OpenAIChatClient(base_url, model, api_key=api_key)
    return LLMController(client, config, every=every, min_groups=min_groups, redact=(api_key,) if api_key else ())
