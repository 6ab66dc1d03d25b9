"""Multi-turn rollouts through PhonePlan-v0 (rl/rollout.py) with the tiny random chat model."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from phoneenv.tasks import get_task
from rl.rollout import FORCED_FINISH, Group, Trajectory, _unbatch_info, sampling_seed, to_trl

TASK = "contacts.lookup_number/0"
TOOLS = ["contacts", "user", "finish"]  # keeps prompts ~1.7k tokens instead of ~11.7k with all tools


# ------------------------------------------------------------------------------------------------
# Pure helpers (no model)
# ------------------------------------------------------------------------------------------------


def test_sampling_seeds_are_deterministic_and_distinct() -> None:
    a = sampling_seed(7, TASK, 0, 0, 0)
    assert a == sampling_seed(7, TASK, 0, 0, 0)
    others = {
        sampling_seed(7, TASK, 0, 1, 0),  # another member
        sampling_seed(7, TASK, 0, 0, 1),  # another turn
        sampling_seed(8, TASK, 0, 0, 0),  # another base seed
        sampling_seed(7, TASK, 1, 0, 0),  # another env seed
        sampling_seed(7, "contacts.lookup_number/1", 0, 0, 0),
    }
    assert a not in others and len(others) == 5
    assert 0 <= a < 2**63


def test_unbatch_info_unboxes_each_sub_env() -> None:
    from rl.rollout import _InfoBox

    first = {"step": 3, "verdict": {"success": True, "answer": "x"}}
    infos = {"phone": np.array([_InfoBox(first), None], dtype=object), "_phone": np.array([True, False])}
    assert _unbatch_info(infos, 0) is first
    assert _unbatch_info(infos, 1) == {}


def _fake_traj(task: str, seed: int, k: int, ids: list[int], mask: list[int], prompt: int) -> Trajectory:
    import torch

    return Trajectory(
        task_id=task,
        seed=seed,
        group_index=k,
        turns=[],
        verdict={"success": False},
        success=False,
        progress=0.5,
        output_tokens=sum(mask),
        tool_calls=1,
        episode_ids=torch.tensor(ids),
        episode_mask=torch.tensor(mask),
        episode_logprobs=torch.tensor([-0.5 if m else 0.0 for m in mask], dtype=torch.float32),
        prompt_length=prompt,
    )


def test_group_validates_members_and_to_trl_shapes() -> None:
    a = _fake_traj(TASK, 0, 0, [1, 2, 3, 4, 5], [0, 0, 1, 0, 1], 2)
    b = _fake_traj(TASK, 0, 1, [1, 2, 9], [0, 0, 1], 2)
    group = Group(TASK, 0, [a, b])
    assert group.G == 2 and group.success.tolist() == [0.0, 0.0] and group.progress.dtype == np.float64
    out = to_trl(group.trajectories)
    assert out["prompt_ids"] == [[1, 2], [1, 2]]
    assert out["completion_ids"] == [[3, 4, 5], [9]]
    assert out["env_mask"] == [[1, 0, 1], [1]]
    assert out["logprobs"] == [[-0.5, 0.0, -0.5], [-0.5]]
    assert out["task_id"] == [TASK, TASK] and out["group_index"] == [0, 1] and out["output_tokens"] == [2.0, 1.0]
    with pytest.raises(ValueError, match="seed"):
        Group(TASK, 0, [a, _fake_traj(TASK, 1, 1, [1, 2, 9], [0, 0, 1], 2)])
    with pytest.raises(ValueError, match="group_index"):
        Group(TASK, 0, [b, a])
    with pytest.raises(ValueError, match="no completion"):
        to_trl([_fake_traj(TASK, 0, 0, [1, 2], [0, 0], 2)])


# ------------------------------------------------------------------------------------------------
# Real rollouts with the tiny model
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    return model, tokenizer


def _group(tiny, **kwargs) -> Group:
    from rl.rollout import RolloutConfig, rollout_group

    model, tokenizer = tiny
    args = {"max_turns": 3, "max_new_tokens": 40, "temperature": 1.0, "tool_filter": TOOLS}
    args.update(kwargs)
    G, sample_seed = args.pop("G", 2), args.pop("sample_seed", 2)
    return rollout_group(model, tokenizer, TASK, 0, G, RolloutConfig(**args), sample_seed=sample_seed)


@pytest.fixture(scope="module")
def group(tiny) -> Group:
    return _group(tiny)  # G = 2 over a SyncVectorEnv


def _check_trajectory(traj: Trajectory, tokenizer, model, temperature: float = 1.0) -> None:
    import torch

    ids, mask, lps = traj.episode_ids, traj.episode_mask, traj.episode_logprobs
    L = ids.shape[0]
    assert ids.dtype == torch.int64 and mask.dtype == torch.int64 and lps.dtype == torch.float32
    assert ids.shape == mask.shape == lps.shape == (L,)
    assert set(mask.tolist()) <= {0, 1}
    assert mask[: traj.prompt_length].sum() == 0
    # The mask is 1 exactly on the sampled tokens: decoding them gives the replies, in order.
    assert tokenizer.decode(ids[mask.bool()]) == "".join(t.text for t in traj.turns)
    assert int(mask.sum()) == sum(t.completion_ids.numel() for t in traj.turns) == traj.output_tokens
    assert traj.verdict["output_tokens"] == traj.output_tokens  # counted by the env via add_agent_tokens
    # Log-probs: finite, ≤ 0 on sampled tokens, exactly 0 elsewhere.
    on = lps[mask.bool()]
    assert torch.isfinite(on).all() and (on <= 0).all() and (on < 0).any()
    assert (lps[~mask.bool()] == 0).all()
    # Each turn is a slice of the episode; its prompt is everything before it.
    for t, turn in enumerate(traj.turns):
        c = turn.completion_ids.numel()
        assert turn.index == t and c > 0
        assert torch.equal(turn.prompt_ids, ids[: turn.start])
        assert torch.equal(turn.completion_ids, ids[turn.start : turn.start + c])
        assert mask[turn.start : turn.start + c].all()
        assert torch.equal(turn.logprobs, lps[turn.start : turn.start + c])
        assert turn.prompt_ids.dtype == torch.int64 and turn.logprobs.dtype == torch.float32
        assert len(turn.feedback) <= len(turn.actions)
        # Per-turn log-probs equal a fresh forward pass over the turn's own prompt + reply.
        with torch.no_grad():
            logits = model(torch.cat([turn.prompt_ids, turn.completion_ids])[None]).logits[0].float()
        ref = torch.log_softmax(logits[turn.start - 1 : -1] / temperature, -1)
        ref = ref.gather(1, turn.completion_ids[:, None])[:, 0]
        assert torch.allclose(turn.logprobs, ref, atol=1e-4)
        # Between two replies lies the template's rendering of the env's feedback, not sampled.
        if t + 1 < len(traj.turns):
            gap = tokenizer.decode(ids[turn.start + c : traj.turns[t + 1].start])
            assert "<|im_start|>user" in gap and gap.endswith("<|im_start|>assistant\n")
            for fb in turn.feedback:
                assert fb in gap
    # The episode ends on the model's last reply (the feedback to it is never seen).
    last = traj.turns[-1]
    assert last.start + last.completion_ids.numel() == L


@pytest.mark.slow
def test_group_members_share_task_and_seed_and_carry_verdicts(group: Group) -> None:
    assert group.G == 2 and group.task_id == TASK and group.seed == 0
    for k, traj in enumerate(group.trajectories):
        assert (traj.task_id, traj.seed, traj.group_index) == (TASK, 0, k)
        assert traj.verdict and {"success", "progress", "tool_calls", "output_tokens"} <= set(traj.verdict)
        assert traj.success == traj.verdict["success"] and traj.progress == traj.verdict["progress"]
        assert traj.tool_calls == traj.verdict["tool_calls"]
        assert traj.terminated or traj.truncated
        assert 1 <= len(traj.turns) <= 3
        assert traj.messages[0]["role"] == "system" and get_task(TASK).goal in traj.messages[0]["content"]
    # Members sample under different seeds; the same member/turn seeds are reproducible.
    seeds = [[t.seed for t in traj.turns] for traj in group.trajectories]
    assert seeds[0][0] != seeds[1][0]
    assert seeds[0][0] == sampling_seed(2, TASK, 0, 0, 0)


@pytest.mark.slow
def test_masks_logprobs_and_shapes(group: Group, tiny) -> None:
    model, tokenizer = tiny
    for traj in group.trajectories:
        _check_trajectory(traj, tokenizer, model)
        # Constrained decoding: every reply is one schema-valid call of an offered tool.
        for turn in traj.turns:
            if not turn.truncated:
                assert len(turn.calls) == 1 and not turn.parse_errors
                assert turn.calls[0]["name"].split("__")[0] in TOOLS
        if traj.forced_finish:
            assert len(traj.turns) == 3
    out = to_trl(group.trajectories)
    for k, traj in enumerate(group.trajectories):
        P = traj.prompt_length
        assert out["prompt_ids"][k] == traj.episode_ids[:P].tolist()
        assert len(out["completion_ids"][k]) == len(out["env_mask"][k]) == len(out["logprobs"][k])
        assert sum(out["env_mask"][k]) == traj.output_tokens


@pytest.mark.slow
def test_vector_and_serial_drivers_agree_and_members_are_independent(group: Group, tiny) -> None:
    import torch

    from rl.rollout import RolloutConfig, rollout_members

    model, tokenizer = tiny
    serial = _group(tiny, vector=False)
    for a, b in zip(group.trajectories, serial.trajectories, strict=True):
        assert torch.equal(a.episode_ids, b.episode_ids) and torch.equal(a.episode_mask, b.episode_mask)
        assert torch.allclose(a.episode_logprobs, b.episode_logprobs)
        assert a.verdict == b.verdict
    # A member's episode depends on neither G nor the other members (groups split over processes).
    (only_1,) = rollout_members(
        model,
        tokenizer,
        TASK,
        0,
        [1],
        RolloutConfig(max_turns=3, max_new_tokens=40, temperature=1.0, tool_filter=TOOLS),
        sample_seed=2,
    )
    assert only_1.group_index == 1
    assert torch.equal(only_1.episode_ids, group.trajectories[1].episode_ids)


@pytest.mark.slow
def test_unconstrained_replies_without_calls_and_cut_replies(tiny) -> None:
    model, tokenizer = tiny
    group = _group(tiny, G=1, constrained=False, max_new_tokens=6, max_turns=2)
    (traj,) = group.trajectories
    _check_trajectory(traj, tokenizer, model)
    first = traj.turns[0]
    assert first.truncated and not first.calls  # 6 random tokens: cut, no call
    end = first.start + first.completion_ids.numel()
    # The cut reply is closed with an end-of-turn token the model did not sample (mask 0) ...
    assert traj.episode_ids[end].item() == tokenizer.eos_token_id and traj.episode_mask[end].item() == 0
    # ... and its text went to the env, whose invalid_json feedback came back as a user message.
    assert json.loads(first.feedback[0])["error"] == "invalid_json"
    assert traj.messages[3]["role"] == "user" and "no tool call" in traj.messages[3]["content"]
    assert traj.forced_finish and traj.verdict["steps"] == 3  # two replies, then the rollout's finish
    assert json.loads(FORCED_FINISH)["name"] == "finish"
    assert math.isclose(traj.progress, traj.verdict["progress"])


def test_rollout_config_validates_and_is_hashable() -> None:
    from rl.rollout import RolloutConfig

    cfg = RolloutConfig(tool_filter=["contacts", "finish"], env_kwargs={"backend": "sandbox"})
    assert cfg.tool_filter == ("contacts", "finish") and hash(cfg.tool_filter)
    assert RolloutConfig().tool_filter == "task"
    for bad in ({"max_turns": -1}, {"max_new_tokens": 0}, {"temperature": -0.5}, {"tool_filter": ["", "x"]}):
        with pytest.raises(ValueError):
            RolloutConfig(**bad)
    with pytest.raises(ValueError, match="RolloutConfig"):
        from rl.rollout import rollout_members

        rollout_members(None, None, TASK, 0, [0], {"max_turns": 2})


@pytest.mark.slow
def test_task_filter_is_resolved_per_episode_from_reset_info(tiny) -> None:
    """``tool_filter="task"`` offers the task's own apps (from the reset ``info["apps"]``) plus
    user/system/finish: two tasks of different apps get different prompts."""
    model, tokenizer = tiny
    from rl.rollout import RolloutConfig, rollout_group

    cfg = RolloutConfig(max_turns=1, max_new_tokens=8, tool_filter="task")
    prompts = {}
    for task in (TASK, "clock.what_time/0"):
        (traj,) = rollout_group(model, tokenizer, task, 0, 1, cfg).trajectories
        prompts[task] = tokenizer.decode(traj.prompt_ids)
    assert get_task(TASK).apps == ["contacts", "messages"]
    assert "contacts__search" in prompts[TASK] and "messages__" in prompts[TASK] and "clock__" not in prompts[TASK]
    assert "clock__" in prompts["clock.what_time/0"] and "contacts__search" not in prompts["clock.what_time/0"]
    for p in prompts.values():
        assert "type finish = " in p and "user__confirm" in p and "system__wait" in p and "mail__" not in p


def test_a_harness_prompt_reaches_the_rollout(tiny, tmp_path) -> None:
    """RolloutConfig.instructions and list_skills (a harness version's, see TrainConfig.harness)
    are in the prompt the policy samples from, and skills.read is offered with the listed skills."""
    model, tokenizer = tiny
    from phoneenv.harness.skills import SkillLibrary, load_skills
    from rl.rollout import RolloutConfig, rollout_group

    skills = SkillLibrary(load_skills())
    name = next(s.name for s in load_skills().values() if "clock.set_alarm_enabled" in s.tools)
    cfg = RolloutConfig(max_turns=1, max_new_tokens=8, tool_filter="apps", instructions="- Read the alarm first.",
                        list_skills=(name,), env_kwargs={"skills": skills})  # fmt: skip
    (traj,) = rollout_group(model, tokenizer, "clock.alarm_off/0", 0, 1, cfg).trajectories
    prompt = tokenizer.decode(traj.prompt_ids)
    assert "- Read the alarm first." in prompt and f"- {name}: " in prompt and "skills__read" in prompt
    (plain,) = rollout_group(model, tokenizer, "clock.alarm_off/0", 0, 1, RolloutConfig(
        max_turns=1, max_new_tokens=8, tool_filter="apps")).trajectories  # fmt: skip
    plain_prompt = tokenizer.decode(plain.prompt_ids)
    assert "Read the alarm first" not in plain_prompt and "skills__read" not in plain_prompt


def test_vector_driver_survives_members_whose_infos_differ_in_type(monkeypatch):
    """Gymnasium merges sub-env infos key by key into arrays typed after the first member; a
    PhonePlan info echoes the model's arguments, so one member's int meets another's string
    ('level {') and the merge raised. The vector driver boxes each info and matches the serial one."""
    from phoneenv.env import PhonePlanEnv
    from rl.rollout import _SerialEnvs, _VectorEnvs

    real_step = PhonePlanEnv.step

    def step(self, action):  # a nested info value that is an int in one member and None in the other
        obs, reward, term, trunc, info = real_step(self, action)
        info["probe"] = {"value": 7 if "80" in str(action) else None}
        return obs, reward, term, trunc, info

    monkeypatch.setattr(PhonePlanEnv, "step", step)
    task = "settings.toggle/0"
    finish = json.dumps({"name": "finish", "arguments": {"answer": "ok"}})
    steps = [
        {
            0: json.dumps({"name": "settings.set_brightness", "arguments": {"level": 80}}),
            1: json.dumps({"name": "settings.set_brightness", "arguments": {"level": "level {"}}),
        },
        {0: finish, 1: finish},
    ]
    seen = []
    for driver in (_VectorEnvs, _SerialEnvs):
        envs = driver(2, task, {})
        try:
            first = [info for _, info in envs.reset(0, task)]
            results = [envs.step(actions) for actions in steps]
        finally:
            envs.close()
        seen.append((first, [{k: (r[1], r[2], r[3], r[4]) for k, r in res.items()} for res in results]))
    assert seen[0][0][0]["task_id"] == task and seen[0][1][-1][0][1] is True  # member 0 terminated
    assert seen[0][1][0][0][3]["probe"] == {"value": 7} and seen[0][1][0][1][3]["probe"] == {"value": None}
    assert json.dumps(seen[0], sort_keys=True, default=str) == json.dumps(seen[1], sort_keys=True, default=str)
