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


@pytest.mark.parametrize("mode", ["vector_entry_point", "sync", "async"])
def test_make_vec_time_limit_keeps_verdict(contacts_task, mode):
    vec = gym.make_vec(
        "PhonePlan-v0",
        num_envs=2,
        vectorization_mode=mode,
        vector_kwargs={"shared_memory": False} if mode == "async" else None,
        max_episode_steps=1,
        task=contacts_task,
        memory=False,
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


def test_ansi_render_of_simulated_apps():
    env = gym.make("PhonePlan-v0", task="simulated.cinema_booking/0", backend="llmsim", render_mode="ansi")
    env.reset(seed=0)
    clock = env.unwrapped.backend.clock()  # the task's fixture clock
    rows = env.render().split("\n")
    assert rows[1].startswith(f"| {clock[11:16]}  Simulated apps ") and rows[2].startswith("| Simulated apps ")
    assert rows[4:-1] == [f"| {'Cinema Tickets':<42} |"]  # the one simulated app of the task


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
    ({"tools": 5}, TypeError, "tools must be 'all', 'task', 'retrieve', 'search' or a ToolSelector, not int 5"),
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


# -- TRL environment_factory ------------------------------------------------------------------------
def trl_tools(instance):
    """The tools TRL's GRPOTrainer takes from an environment (trl 1.16, grpo_trainer.py): the
    public functions of its class but ``reset`` and ``get_reward``, bound to the instance."""
    import inspect

    return {
        name: getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


@pytest.fixture(scope="module")
def clock_tools():
    from phoneenv.trl_env import environment_factory

    return environment_factory(tasks="app:clock", apps=["clock"], memory=False, skills=False)


def test_trl_tools_are_the_apps_and_harness_tools_with_their_schemas(clock_tools):
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    from phoneenv.trl_env import method_name

    env = PhonePlanEnv(task="clock.what_time/0", memory=False, skills=False)
    env.reset(seed=0)
    specs = [s for s in env.tool_specs if s.app == "clock" or s.name in ("finish", "user.confirm")]
    assert len(specs) > 5 and {s.name for s in specs} == set(clock_tools.tool_names)
    tools = trl_tools(clock_tools())
    assert set(tools) == {method_name(s.name) for s in specs} and "clock__create_alarm" in tools
    checked_enums = 0
    for spec in specs:
        fn = get_json_schema(tools[method_name(spec.name)])["function"]
        want = spec.parameters
        assert fn["name"] == method_name(spec.name) and fn["description"]
        assert sorted(fn["parameters"].get("required", [])) == sorted(want.get("required", []))
        assert set(fn["parameters"]["properties"]) == set(want.get("properties", {}))
        for name, prop in want.get("properties", {}).items():
            got = fn["parameters"]["properties"][name]
            if "enum" in prop:
                assert got["enum"] == prop["enum"]
                checked_enums += 1
            elif prop.get("type") in ("string", "integer", "number", "boolean", "array", "object"):
                assert got["type"] == prop["type"]
            if prop.get("type") == "array" and "enum" in prop.get("items", {}):
                assert got["items"]["enum"] == prop["items"]["enum"]
                checked_enums += 1
    assert checked_enums > 0


def test_trl_episode_reset_tools_reward(clock_tools):
    from phoneenv.trl_env import method_name

    env = clock_tools()
    task = PhonePlanEnv(task="clock.what_time/0").task
    row = {"prompt": [{"role": "user", "content": "Carry out the request."}], "task_id": task.id}
    assert env.reset(**row) == "\n\n" + task.goal
    for call in task.reference_plan:
        feedback = json.loads(trl_tools(env)[method_name(call.name)](**call.arguments))
        assert feedback["ok"], feedback
    assert env.get_reward() == 1.0 and env.final_info["verdict"]["success"] is True
    # a row without text in the prompt gets the bare goal; a model that stops without finish is
    # judged as truncated: reward 0, never a success
    assert env.reset(prompt=[{"role": "user", "content": ""}], task_id=task.id) == task.goal
    first = task.reference_plan[0]
    trl_tools(env)[method_name(first.name)](**first.arguments)
    assert env.final_info == {}
    assert env.get_reward() == 0.0 and env.final_info["verdict"]["truncated"] is True
    # a bad argument is the env's feedback, not an exception in TRL's loop
    env.reset(task_id=task.id)
    bad = json.loads(trl_tools(env)["clock__world_time"](timezone=7))
    assert bad["ok"] is False and bad["error"] == "invalid_arguments"


def test_trl_progress_reward_and_factory_errors():
    from phoneenv.trl_env import environment_factory

    # clock.what_time/0's milestones: world_time asked for Sao Paulo, and for Dubai. With one met
    # and a wrong answer, progress is met / (milestones + 1) = 1/3.
    env = environment_factory(tasks="app:clock", apps=["clock"], reward="progress", memory=False)()
    env.reset(task_id="clock.what_time/0")
    trl_tools(env)["clock__world_time"](timezone="America/Sao_Paulo")
    trl_tools(env)["finish"](answer="I do not know.")
    assert env.final_info["success"] is False
    assert env.get_reward() == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match=r"apps \['nope'\] name no app with tools; the apps are .*clock"):
        environment_factory(tasks="app:clock", apps=["nope"])
    with pytest.raises(ValueError, match="reward must be 'success' or 'progress'"):
        environment_factory(tasks="app:clock", reward="steps")
    with pytest.raises(ValueError, match="text only"):
        environment_factory(tasks="app:clock", screenshots=True)
    with pytest.raises(TypeError, match="max_steps must be an int"):
        environment_factory(tasks="app:clock", max_steps="5")


@pytest.mark.slow
def test_trl_grpo_step_through_trls_own_tool_loop(tmp_path, tiny_model_dir, monkeypatch):
    """One GRPOTrainer step with environment_factory=the adapter: TRL probes the class, renders
    its tools into the prompt, resets an instance per rollout with the row, runs the tool calls
    it parses through the adapter's methods, and scores each rollout with get_reward. Only the
    tiny model's generation is scripted (its outputs are noise): two rollouts ask Sao Paulo's
    time, then one answers right and one wrong."""
    pytest.importorskip("trl")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen3_template

    from phoneenv.trl_env import environment_factory

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.response_template = qwen3_template  # the tiny model's template is Qwen2.5's format
    tools = environment_factory(tasks="app:clock", apps=["clock"], memory=False, skills=False)
    task = PhonePlanEnv(task="clock.what_time/0").task
    rows = [{"prompt": [{"role": "user", "content": "Carry out the request."}], "task_id": task.id}]
    cfg = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=400,
        max_steps=1,
        max_tool_calling_iterations=3,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
    )
    trainer = GRPOTrainer(
        model=model,
        args=cfg,
        train_dataset=Dataset.from_list(rows * 2),
        processing_class=tokenizer,
        environment_factory=tools,
    )
    assert trainer.reward_func_names == ["PhonePlanTools"]  # get_reward became the reward
    call = '<tool_call>\n{{"name": "{}", "arguments": {}}}\n</tool_call><|im_end|>'
    turns = [
        [call.format("clock__world_time", json.dumps({"timezone": "America/Sao_Paulo"}))] * 2,
        [
            call.format("finish", json.dumps({"answer": "Sao Paulo: 06:00, Dubai: 13:00"})),
            call.format("finish", json.dumps({"answer": "no idea"})),
        ],
    ]
    prompts = []

    def generate(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        prompts.append([tokenizer.decode(p) for p in prompt_ids])
        texts = turns[len(prompts) - 1] if len(prompts) <= len(turns) else ["Done.<|im_end|>"] * len(prompt_ids)
        ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
        return ids, [[0.0] * len(i) for i in ids]

    trainer._generate_single_turn = generate
    trainer.train()

    first = prompts[0][0]
    assert "clock__world_time" in first and "finish" in first  # the tools' schemas are in the prompt
    assert "Carry out the request.\n\n" + task.goal in first  # reset's goal joined the user message
    assert '"local_time"' in prompts[1][0]  # the tool's feedback went back to the model
    envs = trainer._environment_pool[None]
    outcomes = sorted((e.final_info["success"], e.final_info["progress"]) for e in envs)
    assert outcomes == [(False, pytest.approx(1 / 3)), (True, 1.0)]
    for e in envs:
        assert [s.action.name for s in e.env.unwrapped.trace.steps] == ["clock.world_time", "finish"]
    logged = trainer.state.log_history[0]
    assert logged["rewards/PhonePlanTools/mean"] == 0.5 and logged["tools/call_frequency"] == 2.0
