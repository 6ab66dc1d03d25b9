"""rl.sampler: mass split across templates, attribute weights, seeded draws, hand-computed probabilities."""

from __future__ import annotations

import logging
import math

import pytest

from phoneenv.contract import AnswerCriterion, TaskSpec
from rl.sampler import SamplerConfig, TaskSampler


def make(
    tid, template, *, difficulty=1, capabilities=("lookup",), source="template", domain="contacts", category="tool"
):
    return TaskSpec(
        id=tid,
        domain=domain,
        category=category,
        goal="g",
        criteria=[AnswerCriterion(contains=["x"])],
        template=template,
        difficulty=difficulty,
        capabilities=list(capabilities),
        source=source,
    )


def pool(n_a=100, n_b=10, **b_kwargs):
    return [make(f"A/{i}", "A") for i in range(n_a)] + [make(f"B/{i}", "B", **b_kwargs) for i in range(n_b)]


def test_equal_weights_split_mass_across_templates_not_tasks():
    s = TaskSampler(pool())
    p = s.probabilities()
    assert p["A/0"] == pytest.approx(1 / 200) and p["B/0"] == pytest.approx(1 / 20)
    summ = s.summary()
    assert summ["by_group"] == pytest.approx({"A": 0.5, "B": 0.5})
    assert summ["groups"] == 2 and summ["effective_groups"] == pytest.approx(2.0)
    assert sum(p.values()) == pytest.approx(1.0)
    # Without the split, raw counts decide: B would get 10/110.
    flat = TaskSampler(pool(), group_by="task")
    assert flat.summary()["by_group"]["B/0"] == pytest.approx(1 / 110)


def test_difficulty_weight_hand_computed():
    # m_A = 1, m_B = 2 -> P(B) = 2/3; each B task 1/15, each A task 1/300.
    s = TaskSampler(pool(difficulty=3), difficulty={3: 2.0})
    assert s.probability("B/0") == pytest.approx(1 / 15)
    assert s.probability("A/7") == pytest.approx(1 / 300)
    assert s.summary()["by_difficulty"] == pytest.approx({"3": 2 / 3, "1": 1 / 3})


def test_capability_weights_multiply_and_zero_removes():
    # B tasks are tagged lookup+send: factor 1 * 3 = 3 -> P(B) = 3/4.
    s = TaskSampler(pool(capabilities=("lookup", "send")), SamplerConfig(capability={"send": 3.0}))
    assert s.summary()["by_group"]["B"] == pytest.approx(0.75)
    assert s.probability("B/3") == pytest.approx(0.075) and s.probability("A/3") == pytest.approx(0.0025)
    summ = s.summary()
    assert summ["by_capability"]["lookup"] == pytest.approx(1.0)  # every task has it
    assert summ["by_capability"]["send"] == pytest.approx(0.75)
    gone = TaskSampler(pool(capabilities=("lookup", "send")), capability={"send": 0.0})
    assert gone.probability("B/0") == 0.0 and gone.summary()["by_group"]["A"] == pytest.approx(1.0)
    assert all(t.template == "A" for t in gone.sample(200))


def test_within_group_mix_and_other_dimensions():
    # Template C: difficulties 1 and 2 with w_difficulty[2] = 3 -> factors 1, 3, mean 2 -> m_C = 2;
    # template D (source "mined", weight 0.5, domain email weight 2) -> f = 1, m_D = 1; total 3.
    tasks = [
        make("C/0", "C", difficulty=1),
        make("C/1", "C", difficulty=2),
        make("D/0", "D", source="mined", domain="email"),
        make("D/1", "D", source="mined", domain="email"),
    ]
    s = TaskSampler(tasks, difficulty={"2": 3.0}, source={"mined": 0.5}, domain={"email": 2.0})
    p = s.probabilities()
    assert p["C/0"] == pytest.approx(2 / 3 * 1 / 4) and p["C/1"] == pytest.approx(2 / 3 * 3 / 4)
    assert p["D/0"] == pytest.approx(1 / 6) and p["D/1"] == pytest.approx(1 / 6)
    assert s.summary()["by_source"] == pytest.approx({"template": 2 / 3, "mined": 1 / 3})
    # Group weights and category weights.
    g = TaskSampler(tasks, group={"D": 3.0}, category={"memory": 0.0})
    assert g.summary()["by_group"] == pytest.approx({"C": 0.25, "D": 0.75})


def test_templateless_tasks_are_their_own_groups():
    tasks = [make("x", None), make("y", None), *[make(f"A/{i}", "A") for i in range(8)]]
    s = TaskSampler(tasks)
    assert s.probability("x") == pytest.approx(1 / 3) and s.probability("A/0") == pytest.approx(1 / 24)


def test_seeded_draws_are_reproducible_and_match_probabilities():
    a = TaskSampler(pool(), seed=7)
    b = TaskSampler(pool(), SamplerConfig(seed=7))
    da, db = [t.id for t in a.sample(50)], [t.id for t in b.sample(50)]
    assert da == db
    assert [t.id for t in TaskSampler(pool(), seed=8).sample(50)] != da
    a.reseed(7)
    assert [t.id for t in a.sample(50)] == da
    # Empirical frequency of template B over many draws: 0.5 within 4 sigma.
    n = 20_000
    freq = sum(t.template == "B" for t in TaskSampler(pool(), seed=0).sample(n)) / n
    assert abs(freq - 0.5) < 4 * math.sqrt(0.25 / n)
    it = iter(TaskSampler(pool(), seed=3))
    assert [next(it).id for _ in range(5)] == [t.id for t in TaskSampler(pool(), seed=3).sample(5)]


def test_summary_is_logged(caplog):
    with caplog.at_level(logging.INFO, logger="rl.sampler"):
        TaskSampler(pool(), capability={"nosuchcap": 2.0})
    text = caplog.text
    assert "mass by group: A=0.500, B=0.500" in text
    assert "mass by capability: lookup=1.000" in text
    assert "capability weights ['nosuchcap'] match no task" in text


def test_invalid_weights_rejected():
    with pytest.raises(ValueError, match="finite number"):
        SamplerConfig(difficulty={1: -1.0})
    with pytest.raises(ValueError, match="finite number"):
        TaskSampler(pool(), capability={"lookup": float("nan")})
    with pytest.raises(ValueError, match="probability 0"):
        TaskSampler(pool(), capability={"lookup": 0.0})
    with pytest.raises(ValueError, match="group_by"):
        SamplerConfig(group_by="colour")
    with pytest.raises(ValueError, match="empty"):
        TaskSampler([])


def test_suite_pool_by_template():
    s = TaskSampler("all")
    summ = s.summary()
    # Every template gets the same mass, whatever its number of variants (8 or 10 in the suite).
    masses = list(summ["by_group"].values())
    assert max(masses) == pytest.approx(min(masses)) == pytest.approx(1 / summ["groups"])


def test_training_prompts_can_be_drawn_by_the_sampler():
    pytest.importorskip("datasets")
    import json as _json

    from rl.trainers import TrainConfig, build_dataset

    tasks = [f"contacts.favorite/{k}" for k in range(8)] + ["contacts.add_contact/0"]
    plain = build_dataset(TrainConfig(tasks=tasks, seeds=[0, 1]))
    assert len(plain) == 18
    drawn = build_dataset(TrainConfig(tasks=tasks, seeds=[0], sampler={"seed": 3}, num_prompts=400))
    templates = [_json.loads(p)["task"].split("/")[0] for p in drawn["prompt"]]
    # Two templates, equal mass: the one-task template gets about half the draws, not 1/9.
    share = templates.count("contacts.add_contact") / len(templates)
    assert 0.4 < share < 0.6


# ------------------------------------------------------------------------------------------------
# Competence-aware sampling of training groups
# ------------------------------------------------------------------------------------------------


def test_competence_weights_by_hand():
    from rl.sampler import competence_weights

    history = {"a": [0.5], "b": [0.0, 0.0], "c": [1.0, 1.0], "e": [0.0, 1.0], "f": [0.125]}
    w = competence_weights(history, ["a", "b", "c", "d", "e", "f"], floor=0.1)
    # a: 0.5 learnable; b: all lost; c: all won; d: unseen; e: mean 0.5 learnable; f: one win in 8.
    assert w == {"a": 1.0, "b": 0.1, "c": 0.1, "d": 1.0, "e": 1.0, "f": 1.0}
    with pytest.raises(ValueError, match="floor"):
        competence_weights({}, ["a"], floor=0.0)


def test_competence_sampler_keeps_groups_together_and_follows_updates():
    import collections

    from rl.sampler import CompetenceSampler

    rows = [("a", 0), ("b", 0), ("c", 0), ("c", 1)]
    s = CompetenceSampler(rows, mini_repeat_count=3, batch_size=2, repeat_count=2, window=2, floor=0.1, seed=0)
    assert len(s) == 2 * 2 * 3 * 2 == len(list(s))
    drawn = list(s)
    for start in range(0, len(drawn), 6):  # a chunk: 2 distinct rows, each 3 times in a row
        chunk = drawn[start : start + 6]
        assert chunk[0:3] == [chunk[0]] * 3 and chunk[3:6] == [chunk[3]] * 3 and chunk[0] != chunk[3]
    # Nothing seen: every row weighs 1 (task c has two rows, so half the mass).
    assert s.probabilities() == pytest.approx({"a": 0.25, "b": 0.25, "c": 0.5})
    s.update("a", [1, 1, 1])  # all won
    s.update("b", [0, 1, 0])  # learnable
    s.update("c", [0, 0, 0])  # all lost
    assert s.weights() == {"a": 0.1, "b": 1.0, "c": 0.1}
    # Row weights 0.1, 1, 0.1, 0.1 (sum 1.3): P(a) = 0.1/1.3, P(b) = 1/1.3, P(c) = 0.2/1.3.
    assert s.probabilities() == pytest.approx({"a": 0.1 / 1.3, "b": 1 / 1.3, "c": 0.2 / 1.3})
    firsts = collections.Counter()
    for _ in range(400):
        firsts[rows[s._draw()[0]][0]] += 1
    assert firsts["b"] / 400 == pytest.approx(1 / 1.3, abs=0.07)
    s.update("c", [1, 0, 0])  # window 2: c's recent rates (0, 1/3) → mean 1/6, learnable again
    assert s.weights()["c"] == 1.0
    s.update("c", [1, 1, 1])
    s.update("c", [1, 1, 1])  # the window forgets the older groups: all won
    assert s.weights()["c"] == 0.1
    with pytest.raises(ValueError, match="distinct groups"):
        CompetenceSampler(rows, mini_repeat_count=2, batch_size=5)


def test_competence_sampler_is_the_same_on_every_process():
    """Two copies (two ranks) fed the same gathered results draw the same rows."""
    from rl.sampler import CompetenceSampler

    rows = [(f"t{i}", 0) for i in range(6)]
    a, b = (CompetenceSampler(rows, mini_repeat_count=2, batch_size=2, seed=7) for _ in range(2))
    ia, ib = iter(a), iter(b)
    for step in range(3):
        assert [next(ia) for _ in range(4)] == [next(ib) for _ in range(4)]
        for s in (a, b):
            s.update(f"t{step}", [1, 1])
