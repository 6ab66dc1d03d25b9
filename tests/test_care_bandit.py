"""CARE's mechanism on a synthetic bandit (rl/bandit.py), through rl.care itself.

Arms (success rate, output tokens, tool calls): (0.95, 800, 8), (0.95, 250, 3), (0.75, 60, 1),
(0, 20, 1); the trainer's cost (tokens and calls, weight 0.5, budgets 1000 tokens and 10 calls) and
TRL's normalisation (sample std) for GRPO and the ablation; G = 8, lr 0.1, one group per step, 300
steps, seeds 0–19 (the defaults of ``run_bandit``). Measured with the default CareConfig (μ = 0.3,
p_f = 0.25), means over the 20 seeds (``python -m rl.bandit``):

    algo      success (final)   tokens (final)   tokens at step 150   π(250-token arm)   π(60-token arm)
    grpo      0.9311            488              461                  0.491              0.046
    care      0.9321            275              318                  0.878              0.049
    penalty   0.8765            200              231                  0.646              0.321
    care, no floor (p_f = 1e-9)   0.8815 success, 204 tokens
    care, μ = 0.1 (old default)   0.9300 success, 347 tokens (396 at step 150: 0.86× GRPO's)

The thresholds below leave margins of several seed-standard-deviations around those figures.
"""

from __future__ import annotations

import numpy as np
import pytest

from rl.bandit import DEFAULT_ARMS, Arm, _policy_gradient, run_bandit, summarise
from rl.care import CareConfig, RuleController

SEEDS = range(20)
CHEAP, TERSE = 1, 2  # indices of (0.95, 250) and (0.75, 60)


def _runs(algo: str, care: CareConfig | None = None, **kw):
    return [run_bandit(DEFAULT_ARMS, algo, seed=s, care=care, **kw) for s in SEEDS]


@pytest.fixture(scope="module")
def runs():
    return {algo: _runs(algo) for algo in ("grpo", "care", "penalty")}


def _mid(results, what: str) -> float:
    return float(np.mean([getattr(r, what)[len(r.success) // 2] for r in results]))


def _prob(results, arm: int) -> float:
    return float(np.mean([r.probs[-1, arm] for r in results]))


def test_care_keeps_grpo_success_and_picks_the_cheap_successful_arm(runs) -> None:
    grpo, care = summarise(runs["grpo"]), summarise(runs["care"])
    assert grpo["success"] > 0.92  # both learn: start (uniform) is (0.95+0.95+0.75+0)/4 = 0.6625
    assert abs(care["success"] - grpo["success"]) <= 0.01  # within 1 point (measured 0.0010)
    # GRPO has no reason to prefer 250 over 800 tokens: it ends between them, near their mean 525
    assert grpo["tokens"] > 400  # measured 488
    assert care["tokens"] < 0.7 * grpo["tokens"]  # measured 275 = 0.56×
    assert _prob(runs["care"], CHEAP) > 0.8  # measured 0.878 (GRPO: 0.491)
    # the default μ acts within half the run, not only at its end (μ = 0.1 gave 0.86× here)
    assert _mid(runs["care"], "tokens") < 0.75 * _mid(runs["grpo"], "tokens")  # measured 318/461 = 0.69×


def test_penalty_ablation_trades_success_for_brevity(runs) -> None:
    grpo, care, pen = (summarise(runs[a]) for a in ("grpo", "care", "penalty"))
    assert pen["success"] < grpo["success"] - 0.03  # measured −0.055
    assert pen["tokens"] < care["tokens"]  # shorter still: measured 200 vs 275
    # it drifts toward the terse arm that fails a quarter of the time
    assert _prob(runs["penalty"], TERSE) > 0.15 > 3 * _prob(runs["care"], TERSE)  # measured 0.321 vs 0.049


def test_the_std_floor_is_what_protects_success(runs) -> None:
    # CARE with the floor removed normalises its efficiency groups like vanilla GRPO: success drops
    no_floor = summarise(_runs("care", CareConfig(p_f=1e-9)))
    assert no_floor["success"] < summarise(runs["grpo"])["success"] - 0.02  # measured 0.8815 vs 0.9311


def test_care_with_the_rule_controller_keeps_the_effect(runs) -> None:
    results = [
        run_bandit(DEFAULT_ARMS, "care", seed=s, controller=RuleController(CareConfig(), every=10, min_groups=8))
        for s in SEEDS
    ]
    got, grpo = summarise(results), summarise(runs["grpo"])
    assert abs(got["success"] - grpo["success"]) <= 0.01
    assert got["tokens"] < 0.7 * grpo["tokens"]
    assert all(r.changes for r in results)
    assert all(c.new <= 0.5 for r in results for c in r.changes if c.name == "mu")


def test_deterministic_under_a_seed() -> None:
    a, b = run_bandit(seed=3, steps=40), run_bandit(seed=3, steps=40)
    np.testing.assert_array_equal(a.probs, b.probs)
    assert not np.array_equal(a.probs, run_bandit(seed=4, steps=40).probs)
    assert a.probs.shape == (41, 4) and a.success.shape == a.tokens.shape == (41,)
    # before any step the policy is uniform: success (0.95+0.95+0.75+0)/4, tokens (800+250+60+20)/4
    assert a.success[0] == pytest.approx(0.6625) and a.tokens[0] == pytest.approx(282.5)
    np.testing.assert_allclose(a.probs.sum(axis=1), 1.0)


def test_policy_gradient_by_hand() -> None:
    # π = (0.5, 0.5); draws a = (0, 1) with A = (1, −1):
    # 1·((1, 0) − π) + (−1)·((0, 1) − π) = (0.5, −0.5) + (0.5, −0.5) = (1, −1)
    np.testing.assert_allclose(_policy_gradient(np.array([0.5, 0.5]), np.array([0, 1]), np.array([1.0, -1.0])), [1, -1])
    # π = (0.2, 0.3, 0.5); draws (2, 2, 0), A = (0.5, 0.5, −1): Σ A = 0, so only the one-hots count:
    # arm 0: −1 ; arm 2: 0.5 + 0.5 = 1
    got = _policy_gradient(np.array([0.2, 0.3, 0.5]), np.array([2, 2, 0]), np.array([0.5, 0.5, -1.0]))
    np.testing.assert_allclose(got, [-1.0, 0.0, 1.0], atol=1e-15)


def test_all_failure_arms_never_move_grpo() -> None:
    # every draw fails: every group's advantages are zero, the policy stays uniform
    res = run_bandit([(0.0, 10), (0.0, 500)], "grpo", steps=20)
    assert res.zero_advantage_steps == 20
    np.testing.assert_allclose(res.probs[-1], [0.5, 0.5])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"algo": "ppo"}, "algo"),
        ({"algo": "grpo", "controller": RuleController()}, "controller"),
        ({"G": 0}, "G"),
        ({"steps": -1}, "steps"),
        ({"lr": 0.0}, "lr"),
        ({"arms": [(0.5, 10)]}, "at least 2"),
        ({"arms": [(1.5, 10), (0.5, 10)]}, "success_rate"),
        ({"arms": [(0.5, -1), (0.5, 10)]}, "tokens"),
        ({"arms": [(0.5, 10, -1), (0.5, 10)]}, "calls"),
        ({"init_logits": [0.0]}, "init_logits"),
    ],
)
def test_bad_arguments(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        run_bandit(**kwargs)
    with pytest.raises(ValueError):
        summarise([])
    assert Arm(0.5, 10).tokens == 10


def test_the_cost_counts_tool_calls_as_the_trainer_does() -> None:
    # two equally reliable arms of the same length, one with 8 calls and one with 1: only the calls
    # half of the trainer's cost (weight 0.5) separates them, so CARE learns the one-call arm
    arms = [(0.95, 200, 8), (0.95, 200, 1)]
    care = [run_bandit(arms, "care", seed=s) for s in range(5)]
    assert np.mean([r.probs[-1, 1] for r in care]) > 0.7
    assert np.mean([r.calls[-1] for r in care]) < 3.0
    tokens_only = [run_bandit(arms, "care", seed=s, cost_weight=1.0) for s in range(5)]
    assert abs(np.mean([r.probs[-1, 1] for r in tokens_only]) - 0.5) < 0.15
