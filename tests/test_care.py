"""CARE rewards, advantages and controllers (rl/care.py).

Expected numbers are worked out by hand in the comments; the code under test is never used to
produce them. √3/4 = sqrt(0.25·0.75) = 0.4330127… is the default floor (p_f = 0.25).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rl.care import (
    DEFAULT_BOUNDS,
    LAMBDA_MAX,
    MU_MAX,
    PARAMS,
    Bound,
    CareConfig,
    LLMController,
    RewardMode,
    RuleController,
    TrainingStats,
    care_advantages,
    care_rewards,
    efficiency_cost,
    group_care,
    grpo_advantages,
    reward_mode,
    success_floor,
)

FLOOR = math.sqrt(3) / 4  # sqrt(0.25 * 0.75) = sqrt(3/16)
TOL = 1e-9


# --------------------------------------------------------------------------------------------
# Floor, modes, cost
# --------------------------------------------------------------------------------------------


def test_success_floor_values() -> None:
    assert success_floor(0.25) == pytest.approx(0.4330127018922193, abs=1e-15)  # sqrt(0.1875)
    assert success_floor(0.5) == 0.5  # sqrt(0.25)
    assert success_floor(0.0) == 0.0
    assert success_floor(0.75) == pytest.approx(FLOOR)  # symmetric
    for bad in (-0.1, 1.1, float("nan")):
        with pytest.raises(ValueError):
            success_floor(bad)


def test_reward_mode_boundaries_belong_to_outcome() -> None:
    cfg = CareConfig()  # p_low 0.25, p_high 0.75
    assert reward_mode(0.0, cfg) is RewardMode.SHAPING
    assert reward_mode(1 / 8, cfg) is RewardMode.SHAPING
    assert reward_mode(2 / 8, cfg) is RewardMode.OUTCOME  # p == p_low
    assert reward_mode(4 / 8, cfg) is RewardMode.OUTCOME
    assert reward_mode(6 / 8, cfg) is RewardMode.OUTCOME  # p == p_high
    assert reward_mode(7 / 8, cfg) is RewardMode.EFFICIENCY
    assert reward_mode(1.0, cfg) is RewardMode.EFFICIENCY
    with pytest.raises(ValueError, match="p must lie in"):
        reward_mode(1.5, cfg)


def test_efficiency_cost_maps_counts_to_unit_interval() -> None:
    # tokens only: 100..800 / 1000 = 0.1..0.8
    c = efficiency_cost([100, 200, 300, 400, 500, 600, 700, 800], None, 1000, 10, weight=1.0)
    np.testing.assert_allclose(c, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], atol=1e-15)
    assert c.dtype == np.float64
    # mixed, w = 0.5: 0.5*min(t/1000, 1) + 0.5*min(k/4, 1)
    #   t=500,k=2 → 0.25+0.25 = 0.5 ; t=2000,k=8 → 0.5+0.5 = 1.0 (both saturate) ; t=0,k=1 → 0.125
    c = efficiency_cost([500, 2000, 0], [2, 8, 1], 1000, 4, weight=0.5)
    np.testing.assert_allclose(c, [0.5, 1.0, 0.125], atol=1e-15)
    # calls only
    np.testing.assert_allclose(efficiency_cost(None, [0, 3, 6], 1000, 6, weight=0.0), [0.0, 0.5, 1.0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"output_tokens": [1, -1], "tool_calls": None}, "≥ 0"),
        ({"output_tokens": [1, float("nan")], "tool_calls": None}, "NaN"),
        ({"output_tokens": [1, 2], "tool_calls": [1]}, "length 1, expected 2"),
        ({"output_tokens": [1, 2], "tool_calls": None, "budget_tokens": 0}, "budget_tokens"),
        ({"output_tokens": [1, 2], "tool_calls": None, "weight": 1.5}, "weight"),
        ({"output_tokens": None, "tool_calls": [1, 2], "weight": 0.5}, "output_tokens is None"),
        ({"output_tokens": [], "tool_calls": None}, "G ≥ 1"),
    ],
)
def test_efficiency_cost_validation(kwargs: dict[str, Any], match: str) -> None:
    args = {"budget_tokens": 1000, "budget_calls": 10, "weight": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        efficiency_cost(**args)


# --------------------------------------------------------------------------------------------
# The worked examples
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mu, rewards, dev, std, std1, van, trl",
    [
        # μ = 0.1 (the former default): r = 1 − 0.1·c = 0.99 … 0.92, mean 0.955, dev ±0.035 … ±0.005
        # Σdev² = 2·(0.035² + 0.025² + 0.015² + 0.005²) = 0.0042 ; std = sqrt(0.0042/8) = 0.0229128785
        # ddof 1 (TRL): sqrt(0.0042/7) = 0.0244948974 ; vanilla dev/(std + 1e-4), TRL dev/(std1 + 1e-4)
        (
            0.1,
            [0.99, 0.98, 0.97, 0.96, 0.95, 0.94, 0.93, 0.92],
            [0.035, 0.025, 0.015, 0.005],
            0.0229128784747792,
            0.0244948974278318,
            [1.5208875, 1.0863482, 0.6518089, 0.2172696],
            [1.4230594, 1.0164710, 0.6098826, 0.2032942],
        ),
        # μ = 0.3 (the default): r = 1 − 0.3·c = 0.97 … 0.76, mean 0.865, dev ±0.105 … ±0.015
        # Σdev² = 2·(0.105² + 0.075² + 0.045² + 0.015²) = 0.0378 ; std = sqrt(0.004725) = 0.0687386354
        # ddof 1: sqrt(0.0378/7) = sqrt(0.0054) = 0.0734846923 ; 0.105/0.0688386354 = 1.5253062, …
        (
            0.3,
            [0.97, 0.94, 0.91, 0.88, 0.85, 0.82, 0.79, 0.76],
            [0.105, 0.075, 0.045, 0.015],
            0.0687386354243376,
            0.0734846922834953,
            [1.5253062, 1.0895045, 0.6537027, 0.2179009],
            [1.4269272, 1.0192337, 0.6115402, 0.2038467],
        ),
    ],
)
def test_all_success_group_of_8_vanilla_vs_care(
    mu: float,
    rewards: list[float],
    dev: list[float],
    std: float,
    std1: float,
    van: list[float],
    trl: list[float],
) -> None:
    # tokens 100..800, budget 1000 → c = 0.1..0.8; 8/8 > p_high → efficiency
    cost = efficiency_cost([100, 200, 300, 400, 500, 600, 700, 800], None, 1000, 1, weight=1.0)
    res = group_care(np.ones(8), None, cost, CareConfig(mu=mu))
    assert res.mode is RewardMode.EFFICIENCY
    assert res.p == 1.0
    np.testing.assert_allclose(res.rewards, rewards, atol=1e-12)
    assert res.std == pytest.approx(std, abs=1e-12)
    assert np.std(res.rewards, ddof=1) == pytest.approx(std1, abs=1e-12)
    assert res.floor == pytest.approx(FLOOR) and res.floored
    # CARE: dev / (√3/4) = 4·dev/√3: μ = 0.1 → 0.14/√3 = 0.0808290, … ; μ = 0.3 → 0.42/√3 = 0.2424871, …
    full = np.array(dev + [-x for x in reversed(dev)])
    np.testing.assert_allclose(res.advantages, full * 4 / math.sqrt(3), atol=1e-12)
    assert np.max(np.abs(res.advantages)) == pytest.approx(dev[0] * 4 / math.sqrt(3))
    assert np.max(np.abs(res.advantages)) <= mu / FLOOR  # the bound of the module docstring
    # vanilla and TRL: the same ±1.5 whatever μ (normalisation cancels it)
    np.testing.assert_allclose(grpo_advantages(res.rewards), van + [-x for x in reversed(van)], atol=1e-6)
    np.testing.assert_allclose(grpo_advantages(res.rewards, ddof=1), trl + [-x for x in reversed(trl)], atol=1e-6)


def test_default_mu_is_the_measured_one() -> None:
    # CareConfig's docstring quotes bandit figures for μ = 0.3 (tests/test_care_bandit.py checks them)
    assert CareConfig().mu == 0.3 and CareConfig().p_f == 0.25
    assert CareConfig().mu / FLOOR < 1.0  # an efficiency advantage stays below a balanced win/loss


def test_one_of_eight_group_gets_progress_shaping() -> None:
    # p = 1/8 < 0.25 → shaping, λ = 0.3: r = s + 0.3·q
    success = [1, 0, 0, 0, 0, 0, 0, 0]
    progress = [1.0, 0.5, 0.5, 0.25, 0.25, 0.0, 0.0, 0.0]
    # r = 1.3, 0.15, 0.15, 0.075, 0.075, 0, 0, 0 ; Σ = 1.75 ; mean = 0.21875
    # r − mean = 1.08125, −0.06875 ×2, −0.14375 ×2, −0.21875 ×3
    # Σ(r − mean)² = 1.1691015625 + 2·0.0047265625 + 2·0.0206640625 + 3·0.0478515625 = 1.3634375
    # std = sqrt(1.3634375/8) = sqrt(0.1704296875) = 0.41283131 < 0.43301270 → floored
    res = group_care(success, progress, [0.9] * 8, CareConfig())  # cost is ignored in shaping mode
    assert res.mode is RewardMode.SHAPING
    assert res.p == 0.125
    np.testing.assert_allclose(res.rewards, [1.3, 0.15, 0.15, 0.075, 0.075, 0.0, 0.0, 0.0], atol=1e-15)
    assert res.std == pytest.approx(math.sqrt(0.1704296875), abs=1e-12)
    assert res.floored
    # A = dev·4/√3 : 1.08125·4/√3 = 4.325/√3 = 2.4970399 ; −0.275/√3 = −0.1587713 ;
    #   −0.575/√3 = −0.3319764 ; −0.875/√3 = −0.5051815
    expected = [2.4970399, -0.1587713, -0.1587713, -0.3319764, -0.3319764, -0.5051815, -0.5051815, -0.5051815]
    np.testing.assert_allclose(res.advantages, expected, atol=1e-6)
    # ordering: the success first, then failures by progress
    assert res.advantages[0] > res.advantages[1] > res.advantages[3] > res.advantages[5]


def test_mixed_four_of_eight_group_is_outcome_only() -> None:
    # p = 0.5 → outcome: r = s ; mean 0.5 ; std 0.5 ≥ floor → A = ±0.5/0.5 = ±1 exactly
    success = [1, 0, 1, 0, 1, 0, 1, 0]
    res = group_care(
        success, [1.0, 0.9, 1.0, 0.1, 1.0, 0.5, 1.0, 0.0], [0.1, 0.2, 0.9, 0.3, 1.0, 0.0, 0.5, 0.5], CareConfig()
    )
    assert res.mode is RewardMode.OUTCOME
    np.testing.assert_array_equal(res.rewards, [1, 0, 1, 0, 1, 0, 1, 0])
    assert res.std == 0.5 and not res.floored
    np.testing.assert_array_equal(res.advantages, [1, -1, 1, -1, 1, -1, 1, -1])
    # vanilla ddof 0: ±0.5/0.5001 = ±0.99980004
    np.testing.assert_allclose(grpo_advantages(res.rewards), [0.99980004, -0.99980004] * 4, atol=1e-8)


def test_penalty_is_subtracted_before_the_advantages() -> None:
    # p = 0.5 → outcome r = s; penalty (0.5, 0, 0, 0): r = (0.5, 0, 1, 0), mean 0.375,
    # population std sqrt((0.015625 + 0.140625 + 0.390625 + 0.140625) / 4) = sqrt(0.171875) ≈ 0.41458,
    # under the floor sqrt(0.1875) ≈ 0.43301 → A = (r − 0.375) / 0.43301
    res = group_care([1, 0, 1, 0], None, None, CareConfig(), penalty=[0.5, 0, 0, 0])
    assert res.mode is RewardMode.OUTCOME and res.floored
    np.testing.assert_array_equal(res.rewards, [0.5, 0, 1, 0])
    np.testing.assert_allclose(res.advantages, [0.28868, -0.86603, 1.44338, -0.86603], atol=1e-5)
    # An all-failure group stays at zero (no shaping by default), penalty or not.
    np.testing.assert_array_equal(group_care([0, 0], None, None, CareConfig(), penalty=[0.5, 0]).advantages, [0, 0])
    for bad, match in (([0.5], "length"), ([-0.1, 0], "≥ 0"), ([math.nan, 0], "NaN")):
        with pytest.raises(ValueError, match=match):
            group_care([1, 0], None, None, CareConfig(), penalty=bad)


def test_all_failure_group_without_progress_is_zero() -> None:
    res = group_care(np.zeros(8), None, None, CareConfig())
    assert res.mode is RewardMode.SHAPING
    np.testing.assert_array_equal(res.rewards, np.zeros(8))
    np.testing.assert_array_equal(res.advantages, np.zeros(8))
    assert not np.any(np.isnan(res.advantages)) and not res.floored
    np.testing.assert_array_equal(grpo_advantages(np.zeros(8)), np.zeros(8))  # 0/(0+ε)


def test_all_failure_group_with_progress_is_zero_by_default() -> None:
    progress = [0.0, 0.25, 0.5, 1.0]
    res = group_care([0, 0, 0, 0], progress, None, CareConfig())
    np.testing.assert_allclose(res.rewards, [0.0, 0.075, 0.15, 0.3], atol=1e-15)  # 0.3·q, kept for logging
    np.testing.assert_array_equal(res.advantages, np.zeros(4))
    assert not np.any(np.isnan(res.advantages))


def test_all_failure_group_with_progress_when_shaping_enabled() -> None:
    # r = 0, 0.075, 0.15, 0.3 ; mean = 0.525/4 = 0.13125 ; dev = −0.13125, −0.05625, 0.01875, 0.16875
    # Σdev² = 0.0172265625 + 0.0031640625 + 0.0003515625 + 0.0284765625 = 0.04921875 ; std = sqrt(0.0123046875) = 0.1109
    # floored: A = dev·4/√3 = −0.5250/√3, −0.2250/√3, 0.0750/√3, 0.6750/√3 = −0.3031089, −0.1299038, 0.0433013, 0.3897114
    res = group_care([0, 0, 0, 0], [0.0, 0.25, 0.5, 1.0], None, CareConfig(shape_all_failure=True))
    np.testing.assert_allclose(res.advantages, [-0.3031089, -0.1299038, 0.0433013, 0.3897114], atol=1e-6)
    assert res.floored


def test_single_rollout_and_constant_groups_give_zeros() -> None:
    np.testing.assert_array_equal(group_care([1], None, [0.7], CareConfig()).advantages, [0.0])
    np.testing.assert_array_equal(grpo_advantages([0.3], ddof=1), [0.0])  # no NaN from ddof 1 at G = 1
    np.testing.assert_array_equal(group_care([1, 1, 1], None, [0.2] * 3, CareConfig()).advantages, [0, 0, 0])


# --------------------------------------------------------------------------------------------
# Ordering guarantee
# --------------------------------------------------------------------------------------------


def test_failure_never_outscores_success_at_max_mu_and_max_cost_gap() -> None:
    # 7/8 → efficiency, μ = 0.5 (cap): successes cost 1 → r = 1 − 0.5 = 0.5 ; the failure costs 0 → r = 0
    cfg = CareConfig(mu=MU_MAX)
    res = group_care([1, 1, 1, 1, 1, 1, 1, 0], None, [1, 1, 1, 1, 1, 1, 1, 0], cfg)
    assert res.mode is RewardMode.EFFICIENCY
    np.testing.assert_allclose(res.rewards, [0.5] * 7 + [0.0])
    # mean = 3.5/8 = 0.4375 ; dev = 0.0625 ×7, −0.4375 ; std = sqrt((7·0.00390625 + 0.19140625)/8) = sqrt(0.02734375) = 0.16536
    # floored: A = 0.0625·4/√3 = 0.1443376, −0.4375·4/√3 = −1.0103630
    np.testing.assert_allclose(res.advantages, [0.1443376] * 7 + [-1.0103630], atol=1e-6)
    with pytest.raises(ValueError, match="mu"):
        CareConfig(mu=0.51)
    with pytest.raises(ValueError, match="lam"):
        CareConfig(lam=LAMBDA_MAX + 0.01)


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    g=st.integers(2, 16),
    lam=st.floats(0, LAMBDA_MAX),
    mu=st.floats(0, MU_MAX),
    p_f=st.floats(0.01, 0.5),
)
def test_failure_never_outscores_success_in_any_mode(data: Any, g: int, lam: float, mu: float, p_f: float) -> None:
    success = data.draw(st.lists(st.sampled_from([0, 1]), min_size=g, max_size=g))
    unit = st.floats(0, 1)
    progress = data.draw(st.lists(unit, min_size=g, max_size=g))
    cost = data.draw(st.lists(unit, min_size=g, max_size=g))
    res = group_care(success, progress, cost, CareConfig(lam=lam, mu=mu, p_f=p_f))
    s = np.array(success, dtype=bool)
    assert np.all(np.isfinite(res.advantages))
    if s.any() and (~s).any():
        assert res.rewards[s].min() >= res.rewards[~s].max() + 0.5 - 1e-12
        assert res.advantages[s].min() > res.advantages[~s].max()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e100, 1e100), min_size=1, max_size=16), st.data())
def test_advantages_never_nan(rewards: list[float], data: Any) -> None:
    success = data.draw(st.lists(st.sampled_from([0, 1]), min_size=len(rewards), max_size=len(rewards)))
    for cfg in (CareConfig(), CareConfig(shape_all_failure=True, p_f=0.01)):
        assert np.all(np.isfinite(care_advantages(rewards, success, cfg)))
    for ddof in (0, 1):
        assert np.all(np.isfinite(grpo_advantages(rewards, ddof=ddof)))


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "success, progress, cost, match",
    [
        ([1, 0, 1], [0.1, 0.2], None, "progress has length 2, expected 3"),
        ([1, 0], None, [0.1, 0.2, 0.3], "cost has length 3, expected 2"),
        ([], None, None, "G ≥ 1"),
        ([[1, 0]], None, None, "1-D"),
        ([1, float("nan")], None, None, "NaN"),
        ([1, 0.5], None, None, "only 0 and 1"),
        ([1, 0], [0.1, 1.2], None, r"progress must lie in \[0, 1\]"),
        ([1, 0], None, [-0.1, 0.5], r"cost must lie in \[0, 1\]"),
        ([1, 0], [0.1, float("nan")], None, "NaN"),
        (["a", 0], None, None, "numbers"),
    ],
)
def test_input_validation(success: Any, progress: Any, cost: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        group_care(success, progress, cost, CareConfig())


def test_advantage_and_config_validation() -> None:
    with pytest.raises(ValueError, match="success has length 2, expected 3"):
        care_advantages([0.1, 0.2, 0.3], [1, 0], CareConfig())
    with pytest.raises(ValueError, match="NaN"):
        care_advantages([0.1, float("inf")], [1, 0], CareConfig())
    with pytest.raises(ValueError, match="eps"):
        grpo_advantages([0.1, 0.2], eps=0.0)
    with pytest.raises(ValueError, match="ddof"):
        grpo_advantages([0.1, 0.2], ddof=2)
    with pytest.raises(ValueError, match="p_low ≤ p_high"):
        CareConfig(p_low=0.8, p_high=0.7)
    with pytest.raises(ValueError, match="p_f"):
        CareConfig(p_f=0.0)
    with pytest.raises(ValueError, match="p_f"):
        CareConfig(p_f=0.6)
    with pytest.raises(ValueError, match="finite"):
        CareConfig(lam=float("nan"))
    with pytest.raises(ValueError, match="magnitude"):
        grpo_advantages([1e300, -1e300])
    rewards, mode = care_rewards([True, False], None, None, CareConfig())  # booleans accepted
    assert mode is RewardMode.OUTCOME and rewards.dtype == np.float64


# --------------------------------------------------------------------------------------------
# Rule controller
# --------------------------------------------------------------------------------------------


def _stats(s: float, a1: float = 0.0, a0: float = 0.0, t: float = 0.0, n: int = 32) -> TrainingStats:
    return TrainingStats(success_rate=s, all_success_share=a1, all_failure_share=a0, token_trend=t, n_groups=n)


def test_bound_clamp() -> None:
    b = Bound(0.0, 0.5, 0.05)
    assert b.clamp(0.3, 0.9) == pytest.approx(0.35)  # step limit
    assert b.clamp(0.48, 0.9) == 0.5  # range
    assert b.clamp(0.3, -5) == pytest.approx(0.25)
    assert b.clamp(0.3, 0.32) == 0.32
    with pytest.raises(ValueError):
        Bound(1.0, 0.0, 0.1)
    with pytest.raises(ValueError):
        Bound(0.0, 1.0, 0.0)


def test_rule_controller_struggling_run(caplog: pytest.LogCaptureFixture) -> None:
    ctl = RuleController(every=10)
    assert ctl.update(5, _stats(0.1, a0=0.6)) == []  # not due (5 < 10)
    with caplog.at_level(logging.INFO, logger="rl.care"):
        changes = ctl.update(10, _stats(0.1, a0=0.6))
    got = {c.name: (c.old, c.new) for c in changes}
    # S = 0.1 < 0.2: λ 0.3→0.35, p_low 0.25→0.30 ; S < 0.4: μ 0.3→0.25, p_high 0.75→0.80, p_f 0.25→0.20
    assert got["lam"] == pytest.approx((0.3, 0.35))
    assert got["p_low"] == pytest.approx((0.25, 0.30))
    assert got["mu"] == pytest.approx((0.3, 0.25))
    assert got["p_high"] == pytest.approx((0.75, 0.80))
    assert got["p_f"] == pytest.approx((0.25, 0.20))
    assert all(c.step == 10 and c.source == "rule" and c.reason for c in changes)
    assert ctl.config.lam == pytest.approx(0.35) and ctl.history == changes
    assert sum("lam 0.3 -> 0.35" in r.getMessage() for r in caplog.records) == 1
    assert ctl.update(15, _stats(0.1, a0=0.6)) == []  # 5 steps since the last update


def test_rule_controller_saturated_run_tightens_efficiency() -> None:
    ctl = RuleController(every=1)
    changes = ctl.update(1, _stats(0.95, a1=0.8, t=0.1))
    got = {c.name: (c.old, c.new) for c in changes}
    # competent: λ, p_low down ; A1 ≥ 0.3: μ up, p_high down ; p_f holds (at its start, tokens not collapsing):
    # lowering it too would amplify efficiency differences toward vanilla normalisation
    expected = {"lam": (0.3, 0.25), "p_low": (0.25, 0.2), "mu": (0.3, 0.35), "p_high": (0.75, 0.7)}
    assert set(got) == set(expected)
    for name, pair in expected.items():
        assert got[name] == pytest.approx(pair)


def test_rule_controller_keeps_the_rare_win_signal_when_struggling() -> None:
    # A lone win in a 1-of-8 group: rewards 1,0,…,0 ; mean 0.125 ; std sqrt(0.125·0.875) = sqrt(7/64) = 0.3307189
    # its advantage 0.875/max(0.3307189, σ_floor): p_f 0.25 → 0.875/0.4330127 = 2.0207259 (floor binds)
    one_of_eight = [1, 0, 0, 0, 0, 0, 0, 0]
    ctl = RuleController(every=1)
    assert group_care(one_of_eight, None, None, ctl.config).advantages[0] == pytest.approx(2.0207259, abs=1e-6)
    struggling = _stats(0.1, a0=0.6)  # S = 0.1 < guard 0.4
    ctl.update(1, struggling)  # p_f 0.25 → 0.20: floor sqrt(0.16) = 0.4 → 0.875/0.4 = 2.1875
    assert ctl.config.p_f == pytest.approx(0.20)
    assert group_care(one_of_eight, None, None, ctl.config).advantages[0] == pytest.approx(2.1875, abs=1e-9)
    ctl.update(2, struggling)  # 0.15: floor sqrt(0.1275) = 0.3570714 → 2.4504900
    ctl.update(3, struggling)  # 0.10: floor sqrt(0.09) = 0.3 < 0.3307189 → GRPO's full 0.875/0.3307189 = 2.6457513
    assert ctl.config.p_f == pytest.approx(0.10)
    res = group_care(one_of_eight, None, None, ctl.config)
    assert res.advantages[0] == pytest.approx(2.6457513, abs=1e-6) and not res.floored
    # the old rule (p_f up while struggling) would have left 0.875/sqrt(0.4·0.6) = 0.875/0.4898979 = 1.7860884
    for step in range(4, 12):
        ctl.update(step, struggling)
    assert ctl.config.p_f == pytest.approx(DEFAULT_BOUNDS["p_f"].min)  # 0.05, the bound


def test_rule_controller_restores_the_floor_and_raises_it_on_collapse() -> None:
    ctl = RuleController(every=1)
    ctl.update(1, _stats(0.1, a0=0.6))
    ctl.update(2, _stats(0.1, a0=0.6))  # p_f 0.25 → 0.20 → 0.15
    assert ctl.config.p_f == pytest.approx(0.15)
    recovered = _stats(0.5)  # S = 0.5 ≥ guard 0.4, tokens flat: restore toward the start (0.25), not past it
    got = [c.new for step in (3, 4, 5, 6) for c in ctl.update(step, recovered) if c.name == "p_f"]
    assert got == pytest.approx([0.20, 0.25])  # then it holds at 0.25
    assert "restore" in ctl.history[-1].reason
    # outputs falling fast (trend −0.3 < −0.25) at S ≥ guard: raise the floor, relax μ
    changes = {c.name: (c.old, c.new) for c in ctl.update(7, _stats(0.9, a1=0.6, t=-0.3))}
    assert changes["p_f"] == pytest.approx((0.25, 0.30))
    assert changes["mu"] == pytest.approx((0.2, 0.15))  # relaxed twice while struggling
    # once the collapse stops, a floor above its start is left where it is (no restore downwards)
    assert "p_f" not in {c.name for c in ctl.update(8, _stats(0.5))}


def test_rule_controller_describe_is_json() -> None:
    ctl = RuleController(CareConfig(mu=0.2), every=7, min_groups=3)
    d = json.loads(json.dumps(ctl.describe()))
    assert d["source"] == "rule" and d["every"] == 7 and d["min_groups"] == 3
    assert d["bounds"]["mu"] == {"min": 0.0, "max": 0.5, "max_step": 0.05}
    assert set(d["bounds"]) == set(PARAMS)
    assert d["config"]["mu"] == 0.2 and d["config"]["shape_all_failure"] is False
    assert d["rules"]["guard_rate"] == 0.4


def test_make_controller_kinds() -> None:
    from rl.care import make_controller

    cfg = CareConfig(lam=0.2)
    assert make_controller("none", cfg) is None
    rule = make_controller("rule", cfg, every=3, min_groups=2)
    assert isinstance(rule, RuleController) and rule.every == 3 and rule.min_groups == 2 and rule.config == cfg
    llm = make_controller("llm", cfg, every=4, client=FakeClient([]))
    assert isinstance(llm, LLMController) and llm.every == 4 and llm.config == cfg
    assert llm.describe()["model"] == "fake" and llm.describe()["source"] == "llm"
    with pytest.raises(ValueError, match="base_url and model"):
        make_controller("llm", cfg)
    with pytest.raises(ValueError, match="base_url and model"):
        make_controller("llm", cfg, base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="one of"):
        make_controller("bandit", cfg)


def test_llm_controller_redacts_the_api_key(caplog: pytest.LogCaptureFixture) -> None:
    from rl.care import make_controller

    key = "sk-test-0123456789"
    ctl = make_controller(
        "llm", CareConfig(), every=1, client=FakeClient([RuntimeError(f"401 bad key {key}")]), api_key=key
    )
    assert key not in json.dumps(ctl.describe())
    with caplog.at_level(logging.INFO, logger="rl.care"):
        assert ctl.update(1, _stats(0.5)) == []
    assert ctl.last_error and key not in ctl.last_error and "***" in ctl.last_error
    assert caplog.records and not any(key in r.getMessage() for r in caplog.records)


def test_rule_controller_needs_evidence_and_rejects_bad_config() -> None:
    ctl = RuleController(every=1, min_groups=8)
    assert ctl.update(1, _stats(0.0, a0=1.0, n=3)) == []
    with pytest.raises(ValueError, match="outside its bound"):
        RuleController(CareConfig(p_low=0.01))
    with pytest.raises(ValueError, match="p_low ≤ p_high"):
        RuleController(bounds={**DEFAULT_BOUNDS, "p_low": Bound(0.05, 0.7, 0.05)})
    with pytest.raises(ValueError, match="lam and mu"):
        RuleController(bounds={**DEFAULT_BOUNDS, "mu": Bound(0.0, 0.9, 0.05)})
    with pytest.raises(ValueError, match="TrainingStats"):
        ctl.update(2, {"success_rate": 0.5})  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        TrainingStats(success_rate=float("nan"), all_success_share=0.0, all_failure_share=0.0)


def _check_invariants(ctl: Any, changes: list[Any], before: CareConfig) -> None:
    for c in changes:
        b = ctl.bounds[c.name]
        assert abs(c.new - c.old) <= b.max_step + 1e-12
        assert c.old == getattr(before, c.name)
    for name in PARAMS:
        b, v = ctl.bounds[name], getattr(ctl.config, name)
        assert b.min <= v <= b.max
        assert abs(v - getattr(before, name)) <= b.max_step + 1e-12
    assert ctl.config.p_low <= ctl.config.p_high


def test_rule_controller_1000_random_updates_stay_bounded() -> None:
    rng = np.random.default_rng(0)
    ctl = RuleController(every=1)
    n_changes = 0
    for step in range(1, 1001):
        a1 = float(rng.uniform(0, 1))
        stats = _stats(float(rng.uniform(0, 1)), a1, float(rng.uniform(0, 1 - a1)), float(rng.uniform(-1, 1)))
        before = ctl.config
        changes = ctl.update(step, stats)
        n_changes += len(changes)
        _check_invariants(ctl, changes, before)
    assert n_changes > 100  # the rules did fire


stats_st = st.builds(
    lambda s, a1, frac, t, n: TrainingStats(s, a1, (1 - a1) * frac, t, n),
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(-1, 5),
    st.integers(0, 64),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(stats_st, min_size=1, max_size=40), st.integers(1, 3))
def test_rule_controller_random_sequences_stay_bounded(seq: list[TrainingStats], every: int) -> None:
    ctl = RuleController(every=every)
    for i, stats in enumerate(seq, start=1):
        before = ctl.config
        _check_invariants(ctl, ctl.update(i, stats), before)


def test_training_stats_from_groups() -> None:
    # 3 groups: 4/4, 0/4, 2/4 → 6/12 = 0.5 ; all-success 1/3 ; all-failure 1/3 ; tokens 110 vs 100 → +0.1
    st_ = TrainingStats.from_groups([[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 1, 0]], 110.0, 100.0)
    assert st_.success_rate == 0.5 and st_.n_groups == 3
    assert st_.all_success_share == pytest.approx(1 / 3) and st_.all_failure_share == pytest.approx(1 / 3)
    assert st_.token_trend == pytest.approx(0.1)


# --------------------------------------------------------------------------------------------
# LLM controller
# --------------------------------------------------------------------------------------------


@dataclass
class _Result:
    content: Any


@dataclass
class FakeClient:
    """Returns canned replies and records what it was asked."""

    replies: list[Any]
    model: str = "fake"
    calls: list[dict[str, Any]] = field(default_factory=list)

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: Any = None,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> _Result:
        self.calls.append({"messages": messages, "json_schema": json_schema, "max_tokens": max_tokens})
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return _Result(reply)


def test_llm_controller_good_proposal_is_applied() -> None:
    reply = json.dumps({"mu": {"value": 0.34, "reason": "tokens growing"}, "p_high": {"value": 0.72, "reason": "x"}})
    client = FakeClient([reply])
    ctl = LLMController(client, every=10)
    assert ctl.update(3, _stats(0.9, a1=0.6)) == []  # not due: no call
    assert client.calls == []
    changes = ctl.update(10, _stats(0.9, a1=0.6))
    assert {c.name: (c.old, c.new, c.clamped) for c in changes} == {
        "p_high": (0.75, 0.72, False),
        "mu": (0.3, 0.34, False),
    }
    assert ctl.config.mu == 0.34 and ctl.config.p_high == 0.72 and ctl.last_error is None
    assert all(c.source == "llm" and c.reason.startswith("llm: ") for c in changes)
    call = client.calls[0]
    assert set(call["json_schema"]["properties"]) == set(PARAMS)
    state = json.loads(call["messages"][-1]["content"])
    assert state["params"]["mu"] == {**state["params"]["mu"], "value": 0.3, "max": 0.5, "max_step": 0.05}


def test_llm_controller_out_of_range_is_clamped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    # μ 0.3 → proposed 5.0: step limit 0.05 → 0.35 ; p_f 0.25 → proposed −1: 0.20 ; fenced JSON accepted
    reply = '```json\n{"mu": {"value": 5.0, "reason": "go big"}, "p_f": {"value": -1, "reason": "no floor"}}\n```'
    ctl = LLMController(FakeClient([reply]), every=1)
    with caplog.at_level(logging.INFO, logger="rl.care"):
        changes = ctl.update(1, _stats(0.9, a1=0.6))
    got = {c.name: c for c in changes}
    assert got["mu"].new == pytest.approx(0.35) and got["mu"].proposed == 5.0 and got["mu"].clamped
    assert got["p_f"].new == pytest.approx(0.20) and got["p_f"].proposed == -1.0 and got["p_f"].clamped
    assert "clamped from 5 to 0.35" in got["mu"].reason
    assert any("mu 0.3 -> 0.35" in r.getMessage() and "clamped" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "reply",
    [
        "I think mu should go up a bit.",
        "",
        "[0.1, 0.2]",
        '{"mu": ',
        None,
        RuntimeError("server down"),
    ],
)
def test_llm_controller_garbage_keeps_old_values(reply: Any, caplog: pytest.LogCaptureFixture) -> None:
    ctl = LLMController(FakeClient([reply]), every=1)
    before = ctl.config
    with caplog.at_level(logging.WARNING, logger="rl.care"):
        assert ctl.update(1, _stats(0.5)) == []
    assert ctl.config == before and ctl.history == []
    assert ctl.last_error
    assert any("keeping old values" in r.getMessage() for r in caplog.records)


def test_llm_controller_bad_entries_are_skipped() -> None:
    reply = json.dumps(
        {
            "mu": {"value": "high", "reason": "?"},
            "temperature": {"value": 0.7, "reason": "?"},
            "lam": {"value": True, "reason": "?"},
            "p_low": 0.27,  # bare number accepted, no reason
        }
    )
    ctl = LLMController(FakeClient([reply]), every=1)
    changes = ctl.update(1, _stats(0.5))
    assert [(c.name, c.new) for c in changes] == [("p_low", 0.27)]
    assert changes[0].reason == "llm: no reason given"
    assert ctl.config.mu == 0.3 and ctl.config.lam == 0.3 and ctl.last_error


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(PARAMS),
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**6), 10**6), st.text(max_size=3)),
        max_size=5,
    )
)
def test_llm_controller_random_proposals_stay_bounded(proposal: dict[str, Any]) -> None:
    reply = json.dumps({k: {"value": v, "reason": "r"} for k, v in proposal.items()})
    ctl = LLMController(FakeClient([reply]), every=1)
    before = ctl.config
    _check_invariants(ctl, ctl.update(1, _stats(0.5)), before)


def test_penalty_rewards_hand_checked():
    from rl.care import penalty_rewards

    # r = s·(1 − μ·c): 1·(1 − 0.5·0.2) = 0.9, 1·(1 − 0.5·1) = 0.5, a failure stays 0
    np.testing.assert_allclose(penalty_rewards([1, 1, 0], [0.2, 1.0, 0.5], 0.5), [0.9, 0.5, 0.0])
    with pytest.raises(ValueError):
        penalty_rewards([1, 0], [0.2, 1.5], 0.1)
    with pytest.raises(ValueError):
        penalty_rewards([1, 0], [0.2, 0.5], 0.6)
