"""PhonePlan-v0 as Gymnasium users meet it: truncation by ``TimeLimit`` keeps the verdict,
``render_mode="ansi"``, and ``gym.make`` arguments checked before any work."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import phoneenv  # noqa: F401  (registers PhonePlan-v0)
from phoneenv.env import JudgeOnTruncation, PhonePlanEnv
from phoneenv.vector import PhonePlanVectorEnv

CREATE = json.dumps({"name": "contacts.create", "arguments": {"name": "Carla Novak", "phone": "+4917033333333"}})
LIST = json.dumps({"name": "contacts.list", "arguments": {}})
FINAL_KEYS = {"verdict", "success", "progress", "steps", "tool_calls", "errors", "infrastructure_error"}


@pytest.fixture
def contacts_task(contacts_task):
    """conftest's task (save Carla) with one milestone, Carla created: progress is met / (1 + 1),
    so 0.5 once Carla exists and 0.0 before (1.0 only on success)."""
    return contacts_task.model_copy(update={"milestones": [contacts_task.criteria[0]]})


def own_limit_info(task, actions):
    """The last info of an episode truncated by the env's own ``max_steps`` (the reference)."""
    env = PhonePlanEnv(task=task, max_steps=len(actions))
    env.reset(seed=0)
    for a in actions:
        _, _, _, trunc, info = env.step(a)
    assert trunc
    return info


# -- truncation by TimeLimit --------------------------------------------------------------------
def test_time_limit_truncation_keeps_verdict_success_progress(contacts_task):
    env = gym.make("PhonePlan-v0", task=contacts_task, max_episode_steps=2)
    env.reset(seed=0)
    _, r, term, trunc, info = env.step(CREATE)
    assert (r, term, trunc) == (0.0, False, False) and "verdict" not in info
    # the env's own limit is the task's 30 steps: only the TimeLimit ends this episode
    _, r, term, trunc, info = env.step(LIST)
    assert (r, term, trunc) == (0.0, False, True)
    assert set(info) >= FINAL_KEYS
    # Carla was created (criterion and milestone pass) but the episode was cut: no success
    assert info["progress"] == 0.5 and info["success"] is False
    assert info["verdict"]["truncated"] is True and info["verdict"]["criteria"][0]["passed"] is True
    assert (info["steps"], info["tool_calls"], info["errors"]) == (2, 2, 0)
    # the same verdict as the env's own max_steps gives for the same actions
    assert info["verdict"] == own_limit_info(contacts_task, [CREATE, LIST])["verdict"]
    # the episode is over for the env too: its verdict and trace keep the result
    assert env.unwrapped.verdict.progress == 0.5
    assert env.unwrapped.trace.verdict.truncated is True
    _, _, term, _, info = env.step(LIST)
    assert term and info["feedback"].error == "precondition_failed"


def test_time_limit_judges_each_episode_after_reset(contacts_task):
    env = gym.make("PhonePlan-v0", task=contacts_task, max_episode_steps=1)
    env.reset(seed=0)
    _, _, _, trunc, info = env.step(LIST)
    assert trunc and info["progress"] == 0.0 and info["verdict"]["criteria"][0]["passed"] is False
    env.reset(seed=1)
    _, _, _, trunc, info = env.step(CREATE)
    assert trunc and info["progress"] == 0.5 and info["steps"] == 1


def test_own_max_steps_and_finish_pass_unchanged(contacts_task):
    """The wrapper does not judge twice: an episode the env ended carries the env's own info."""
    env = gym.make("PhonePlan-v0", task=contacts_task, max_steps=1, max_episode_steps=5)
    env.reset(seed=0)
    _, _, _, trunc, info = env.step(CREATE)
    assert trunc and info["verdict"] == own_limit_info(contacts_task, [CREATE])["verdict"]
    env = gym.make("PhonePlan-v0", task=contacts_task, max_episode_steps=2)
    env.reset(seed=0)
    env.step(CREATE)
    _, r, term, trunc, info = env.step(json.dumps({"name": "finish", "arguments": {"answer": "Saved."}}))
    assert (r, term, trunc) == (1.0, True, True) and info["success"] is True


def test_hand_made_time_limit_keeps_verdict(contacts_task):
    env = gym.wrappers.TimeLimit(PhonePlanEnv(task=contacts_task), max_episode_steps=1)
    env.reset(seed=0)
    _, _, _, trunc, info = env.step(CREATE)
    assert trunc and info["progress"] == 0.5 and info["success"] is False


class StopAfterCreate(gym.Wrapper):
    """A user's own limit: truncates once a contact was created (outside the env)."""

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        return obs, r, term, trunc or "contacts.create" in action, info


def test_judge_wrapper_around_a_user_limit(contacts_task):
    plain = StopAfterCreate(PhonePlanEnv(task=contacts_task))
    plain.reset(seed=0)
    assert "verdict" not in plain.step(CREATE)[4]  # what the judge is for
    env = JudgeOnTruncation(StopAfterCreate(PhonePlanEnv(task=contacts_task)))
    env.reset(seed=0)
    _, r, _, trunc, info = env.step(CREATE)
    assert trunc and r == 0.0 and info["progress"] == 0.5 and info["success"] is False
    assert info["verdict"] == own_limit_info(contacts_task, [CREATE])["verdict"]


def test_truncate_is_a_no_op_outside_an_episode(contacts_task):
    env = PhonePlanEnv(task=contacts_task)
    assert env.truncate() == {}
    env.reset(seed=0)
    env.step(CREATE)
    final = env.truncate()
    assert set(final) == FINAL_KEYS and final["progress"] == 0.5
    assert env.truncate() == {}


def test_vector_env_time_limit_keeps_verdict(contacts_task):
    vec = PhonePlanVectorEnv(num_envs=2, workers=0, max_episode_steps=1, task=contacts_task)
    try:
        vec.reset(seed=0)
        _, _, term, trunc, infos = vec.step([CREATE, LIST])
        assert not term.any() and trunc.all()
        assert list(infos["progress"]) == [0.5, 0.0]
        assert list(infos["success"]) == [False, False]
    finally:
        vec.close()


@pytest.mark.parametrize("mode", ["vector_entry_point", "sync"])
def test_make_vec_time_limit_keeps_verdict(contacts_task, mode):
    vec = gym.make_vec(
        "PhonePlan-v0", num_envs=2, vectorization_mode=mode, max_episode_steps=1, task=contacts_task, memory=False
    )
    try:
        vec.reset(seed=0)
        _, _, term, trunc, infos = vec.step([CREATE, LIST])
        assert not term.any() and trunc.all()
        assert list(infos["progress"]) == [0.5, 0.0]
    finally:
        vec.close()


def test_reset_info_reports_the_limit_in_force(contacts_task):
    assert gym.make("PhonePlan-v0", task=contacts_task, max_episode_steps=3).reset(seed=0)[1]["max_steps"] == 3
    assert gym.make("PhonePlan-v0", task=contacts_task, max_episode_steps=99).reset(seed=0)[1]["max_steps"] == 30
    # the wrapper's limit applies to the episodes it resets, not to the env on its own
    env = gym.make("PhonePlan-v0", task=contacts_task, max_episode_steps=3)
    assert env.unwrapped.reset(seed=0)[1]["max_steps"] == 30


# -- render_mode="ansi" -------------------------------------------------------------------------
def test_ansi_render_is_the_screen_as_text(contacts_task):
    env = gym.make("PhonePlan-v0", task=contacts_task, render_mode="ansi", screen_size=(136, 200))
    assert "ansi" in env.metadata["render_modes"]
    env.reset(seed=0)
    env.step(json.dumps({"name": "contacts.list", "arguments": {}}))
    # 136 px wide: (136 - 24) // 8 = 14 characters a row; 200 px high: (200 - 70) // 30 = 4 rows.
    # The fixture's clock is Sunday 29 Nov 2026, 09:00 in Berlin; contacts.list opens the list
    # (Ben, a favourite, starred).
    assert env.render() == "\n".join(
        [
            "+----------------+",
            "| Sun 29 Nov ... |",
            "| Contacts       |",
            "+----------------+",
            "| Ana Lima  +... |",
            "| * Ben Okafo... |",
            "+----------------+",
        ]
    )


def test_ansi_text_shows_the_rows_the_screenshot_draws():
    from phoneenv.screen import _RULE, render_screen, render_screen_text

    lines = [f"row {i}-" + "x" * i for i in range(40)]
    for size in [(360, 640), (200, 160), (100, 99)]:
        text = render_screen_text("09:00", "Title", lines, size).split("\n")
        shown = [row[2:-2].rstrip() for row in text[4:-1]]
        # the image: each row drawn ends with a rule line 26 px below its top (rows from y = 72)
        img = render_screen("09:00", "Title", lines, size)
        drawn = sum(1 for y in range(98, size[1], 30) if (img[y, 12:-12] == _RULE).all())
        assert len(shown) == drawn
        width = (size[0] - 24) // 8
        assert all(len(r) == width + 4 for r in text)
        for row, line in zip(shown, lines, strict=False):
            assert row == line or (row.endswith("...") and line.startswith(row[:-3]) and len(row) == width)


def test_ansi_render_on_a_backend_without_a_text_screen(contacts_task):
    env = PhonePlanEnv(task=contacts_task, render_mode="ansi")
    env.reset(seed=0)
    env.backend.screen_text = lambda: None  # a device backend: pixels only
    assert env.render() == "[the sandbox backend has no text screen; use render_mode='rgb_array']"
    assert PhonePlanEnv(task=contacts_task).render() is None


def test_ansi_render_through_the_env_checker(contacts_task):
    from gymnasium.utils.env_checker import check_env

    env = gym.make("PhonePlan-v0", tasks=[contacts_task], render_mode="ansi").unwrapped
    check_env(env, skip_render_check=False)  # renders in each mode of render_modes, ansi included


# -- gym.make arguments --------------------------------------------------------------------------
BAD_ARGUMENTS = [
    ({"task": "clock.what_time/0", "tasks": "all"}, ValueError, "task= (one task: an id or a TaskSpec) or tasks="),
    ({"max_steps": "5"}, TypeError, "max_steps must be an int >= 1 or None, not str '5'"),
    ({"max_steps": 2.5}, TypeError, "max_steps must be an int >= 1 or None, not float 2.5"),
    ({"max_steps": True}, TypeError, "max_steps must be an int >= 1 or None, not bool True"),
    ({"max_steps": 0}, ValueError, "max_steps must be an int >= 1 or None, not 0"),
    ({"task": 7}, TypeError, "task must be a task id (str) or a TaskSpec, not int 7"),
    ({"tasks": ["clock.what_time/0"]}, TypeError, "not a list holding a str (put ids in a selector"),
    ({"tasks": 3}, TypeError, "tasks must be a selector (str) or a list of TaskSpec, not int 3"),
    ({"backend": None}, TypeError, "backend must be a backend name (str) or a Backend, not NoneType"),
    ({"screenshots": "yes"}, TypeError, "screenshots must be True or False, not str 'yes'"),
    ({"record_wall_time": 1}, TypeError, "record_wall_time must be True or False, not int 1"),
    ({"render_mode": "rgb"}, ValueError, "render_mode must be None, 'rgb_array' or 'ansi', not 'rgb'"),
    ({"screen_size": (360,)}, TypeError, "screen_size must be (width, height) in pixels, two ints, not (360,)"),
    ({"screen_size": (360, 0)}, ValueError, "both >= 1, not (360, 0)"),
    ({"skills": "yes"}, TypeError, "skills must be True, False or a SkillLibrary, not str 'yes'"),
    ({"memory": "yes"}, TypeError, "memory must be True, False or an EpisodeMemory, not str 'yes'"),
    ({"user": 5}, TypeError, "user must be a str or None, not int 5"),
    ({"memory_path": 5}, TypeError, "memory_path must be a path (str or Path) or None, not int 5"),
    ({"delegation": "auto"}, TypeError, "delegation must be True, False or None, not str 'auto'"),
    ({"tools": 5}, TypeError, "tools must be 'all', 'retrieve', 'search' or a ToolSelector, not int 5"),
    ({"tools_k": "3"}, TypeError, "tools_k must be an int >= 0, not str '3'"),
    ({"tools_k": -1}, ValueError, "tools_k must be an int >= 0, not -1"),
    ({"taks": "clock.what_time/0"}, TypeError, "unknown argument 'taks' (did you mean 'tasks' or 'task'?)"),
    ({"max_episode_step": 3}, TypeError, "'max_episode_step' (did you mean 'max_episode_steps' or 'max_steps'?)"),
    ({"foo": 1, "bar": 2}, TypeError, "unknown arguments 'foo', 'bar'; it accepts task, tasks, backend,"),
]


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if the env starts building anything (a backend, a task selection)."""
    import phoneenv.backends
    import phoneenv.tasks

    def work(*args, **kwargs):
        raise AssertionError("the env started work before checking its arguments")

    monkeypatch.setattr(phoneenv.backends, "make_backend", work)
    monkeypatch.setattr(phoneenv.tasks, "select", work)


@pytest.mark.parametrize(("kwargs", "error", "message"), BAD_ARGUMENTS)
def test_make_checks_arguments_before_any_work(no_work, kwargs, error, message):
    with pytest.raises(error) as caught:
        gym.make("PhonePlan-v0", **kwargs)
    assert message in str(caught.value)
    with pytest.raises(error) as direct:
        PhonePlanEnv(**kwargs)
    assert message in str(direct.value)


def test_unknown_argument_lists_what_is_accepted(no_work):
    import inspect

    with pytest.raises(TypeError) as caught:
        PhonePlanEnv(qqq=True)
    text = str(caught.value)
    accepted = [n for n in inspect.signature(PhonePlanEnv).parameters if n != "unknown"]
    assert len(accepted) > 10 and all(n in text for n in accepted)
    assert "did you mean" not in text  # nothing close to 'qqq'


def test_good_arguments_of_other_types_are_accepted(contacts_task):
    env = PhonePlanEnv(
        tasks=(contacts_task,),
        max_steps=np.int64(2),
        screen_size=[136, 200],
        screenshots=np.bool_(True),
        tools_k=np.int32(3),
    )
    _, info = env.reset(seed=0)
    assert info["max_steps"] == 2 and type(info["max_steps"]) is int
    assert env.observation_space["screenshot"].shape == (200, 136, 3)
