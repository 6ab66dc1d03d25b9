"""One advantage function for the trainer and the bandit (rl.care.group_advantages), equal to TRL's
own normalisation for GRPO, and the per-step group shares (CARE modes, zero-advantage groups)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("trl")

import torch
from trl.trainer.utils import nanstd

from rl.bandit import bandit_advantages
from rl.care import CareConfig, group_advantages
from rl.trainers import EpisodeStats, TrainConfig, batch_advantages, group_shares, step_shares

G = 4
# a scripted gathered batch of four groups of G: success, output tokens, tool calls per episode
SUCCESS = [[0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]]
TOKENS = [[40, 90, 60, 120], [80, 200, 150, 60], [100, 140, 30, 300], [90, 180, 120, 260]]
CALLS = [[1, 3, 2, 4], [2, 6, 5, 1], [2, 4, 1, 8], [2, 5, 3, 6]]


def _trl_advantages(rewards: list[list[float]]) -> np.ndarray:
    """TRL 1.16's GRPO advantages (GRPOTrainer._generate_and_score_completions,
    multi_objective_aggregation="sum_then_normalize", scale_rewards="group"), written out with its
    own nanstd: (r - group mean) / (nanstd(group) + 1e-4)."""
    r = torch.tensor(rewards, dtype=torch.float32).view(-1)
    mean = torch.nanmean(r.view(-1, G), dim=1).repeat_interleave(G, dim=0)
    std = nanstd(r.view(-1, G), dim=1).repeat_interleave(G, dim=0)
    return ((r - mean) / (std + 1e-4)).view(-1, G).double().numpy()


def test_grpo_and_the_ablation_normalise_as_trl_does() -> None:
    cfg = CareConfig()
    kw = {"budget_tokens": 200.0, "budget_calls": 6.0}
    trl_grpo = _trl_advantages([[float(x) for x in s] for s in SUCCESS])
    for k, (s, t, c) in enumerate(zip(SUCCESS, TOKENS, CALLS, strict=True)):
        ours = group_advantages("grpo", s, None, t, c, cfg, **kw)
        np.testing.assert_allclose(ours.advantages, trl_grpo[k], atol=1e-5)
    # the ablation: TRL's normalisation of r = s(1 - mu c)
    rewards = [group_advantages("penalty", s, None, t, c, cfg, **kw).rewards.tolist() for s, t, c in
               zip(SUCCESS, TOKENS, CALLS, strict=True)]  # fmt: skip
    trl_pen = _trl_advantages(rewards)
    for k, (s, t, c) in enumerate(zip(SUCCESS, TOKENS, CALLS, strict=True)):
        ours = group_advantages("penalty", s, None, t, c, cfg, **kw)
        np.testing.assert_allclose(ours.advantages, trl_pen[k], atol=1e-5)
    # the all-success group: the ablation gives it full-size advantages (TRL's std of a tiny spread)
    assert np.abs(trl_pen[3]).max() > 1.0


def _batch() -> list[EpisodeStats]:
    return [
        EpisodeStats(
            f"clock.alarm_off/{g}", 0, k, float(SUCCESS[g][k]), 0.0, float(TOKENS[g][k]), float(CALLS[g][k]), 3, 0
        )
        for g in range(len(SUCCESS))
        for k in range(G)
    ]


@pytest.mark.parametrize("algo", ["care", "grpo", "penalty"])
def test_the_trainer_computes_the_bandits_advantages(algo: str, tmp_path) -> None:
    """The trainer's advantages on a scripted gathered batch equal the bandit's function on the
    same numbers: same cost (tokens and calls, same weight and budgets), same normalisation."""
    cfg = TrainConfig(
        output_dir=str(tmp_path), algo=algo, num_generations=G, per_device_train_batch_size=G, use_cpu=True,
        report_to="none", care_budget_tokens=200.0, care_budget_calls=6.0,
    )  # fmt: skip
    care = cfg.care_config()
    stats = _batch()
    groups = [slice(g * G, (g + 1) * G) for g in range(len(SUCCESS))]
    got = batch_advantages(stats, groups, cfg, care)
    for k, res in enumerate(got):
        want = bandit_advantages(
            algo, np.array(SUCCESS[k], float), np.array(TOKENS[k], float), np.array(CALLS[k], float), care,
            budget_tokens=200.0, budget_calls=6.0,
        )  # fmt: skip
        np.testing.assert_array_equal(res.advantages, want.advantages)
        np.testing.assert_array_equal(res.cost, want.cost)
        assert res.mode == want.mode
    # the cost counts tool calls: 0.5·min(t/200, 1) + 0.5·min(c/6, 1)
    assert got[0].cost[3] == pytest.approx(0.5 * 120 / 200 + 0.5 * 4 / 6)


def test_group_shares_count_modes_and_zero_advantage_groups() -> None:
    cfg = CareConfig()
    kw = {"budget_tokens": 200.0, "budget_calls": 6.0}
    care = [group_advantages("care", s, None, t, c, cfg, **kw) for s, t, c in zip(SUCCESS, TOKENS, CALLS, strict=True)]
    shares = group_shares(care)
    # p = 0, 0.25, 0.5, 1: p < p_low = 0.25 is shaping (one group); 0.25 and 0.5 outcome; 1 efficiency
    assert shares == {
        "groups/shaping_share": 0.25,
        "groups/outcome_share": 0.5,
        "groups/efficiency_share": 0.25,
        "groups/zero_advantage_share": 0.25,  # only the all-failure group: CARE prices the all-success one
    }
    grpo = [group_advantages("grpo", s, None, t, c, cfg, **kw) for s, t, c in zip(SUCCESS, TOKENS, CALLS, strict=True)]
    assert group_shares(grpo)["groups/zero_advantage_share"] == 0.5  # all-failure and all-success
    assert group_shares(grpo)["groups/efficiency_share"] == 0.25  # the mode CARE would have used
    with pytest.raises(ValueError):
        group_shares([])
    history = [
        {"mode": "train", "metrics": {**shares, "adv/abs_mean": 0.5}},
        {"mode": "eval", "metrics": {**group_shares(grpo), "adv/abs_mean": 9.0}},
        {"mode": "train", "metrics": {**group_shares(grpo), "adv/abs_mean": 0.3}},
    ]
    got = step_shares(history)
    assert got["zero_advantage_group_share"] == pytest.approx(0.375)
    assert got["advantage_abs_mean"] == pytest.approx(0.4)
    assert got["mode_shares"] == {"shaping": 0.25, "outcome": 0.5, "efficiency": 0.25}
