"""PhonePlan-v0 through the Gymnasium API: contract, robustness, determinism, vector envs."""

from __future__ import annotations

import functools
import json
import random

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import phoneenv  # noqa: F401  (registers PhonePlan-v0)
from phoneenv.contract import ErrorKind, Fixtures, TaskSpec
from phoneenv.env import MAX_ACTION_CHARS, PhonePlanEnv


def step_json(env, tool, /, **arguments):
    return env.step(json.dumps({"name": tool, "arguments": arguments}))


def fb(obs):
    return json.loads(obs["feedback"])


def test_reference_plan_succeeds_and_reward_is_outcome(contacts_task):
    env = gym.make("PhonePlan-v0", task=contacts_task)
    obs, info = env.reset(seed=1)
    assert obs["goal"] == contacts_task.goal
    assert info["task_id"] == "test.add_carla"
    assert any(t["function"]["name"] == "contacts.create" for t in info["tools"])
    obs, r, term, trunc, info = step_json(env, "contacts.create", name="Carla Novak", phone="+4917033333333")
    assert fb(obs)["ok"] and fb(obs)["result"]["id"] == "c_3"
    assert (r, term, trunc) == (0.0, False, False)
    obs, r, term, trunc, info = step_json(env, "finish", answer="Saved.")
    assert (r, term, trunc) == (1.0, True, False)
    assert info["success"] is True and info["progress"] == 1.0
    assert info["verdict"]["tool_calls"] == 1 and info["verdict"]["steps"] == 2


def test_wrong_number_fails_and_collateral_is_caught(contacts_task):
    env = PhonePlanEnv(task=contacts_task)
    env.reset(seed=0)
    step_json(env, "contacts.create", name="Carla Novak", phone="+4917033333334")
    *_, info = step_json(env, "finish")
    assert info["success"] is False
    assert info["verdict"]["criteria"][0]["reason"] == "0 matching created record(s), expected exactly 1"
    # Right record, plus an unrequested write: collateral damage.
    env.reset(seed=0)
    step_json(env, "contacts.create", name="Carla Novak", phone="+4917033333333")
    step_json(env, "contacts.set_favorite", contact_id="c_1", favorite=True)
    *_, info = step_json(env, "finish")
    assert info["success"] is False
    assert info["verdict"]["collateral"] == ["contacts.contacts/c_1 updated"]


def test_truncation_at_max_steps(contacts_task):
    env = PhonePlanEnv(task=contacts_task, max_steps=3)
    env.reset(seed=0)
    for i in range(3):
        _, r, term, trunc, info = step_json(env, "contacts.list")
    assert (term, trunc, r) == (False, True, 0.0)
    assert info["verdict"]["truncated"] is True
    # Stepping past the end is an error feedback, not an exception.
    obs, r, term, trunc, info = step_json(env, "contacts.list")
    assert fb(obs)["error"] == "precondition_failed" and term


@pytest.mark.parametrize(
    ("action", "kind"),
    [
        ("not json", "invalid_json"),
        ("[1, 2]", "invalid_json"),
        ('{"arguments": {}}', "invalid_json"),
        ('{"name": "contacts.search", "arguments": "{bad"}', "invalid_json"),
        (b"\xff\xfe\x00", "invalid_json"),
        (12345, "invalid_json"),
        (None, "invalid_json"),
        ("[" * 100_000 + "]" * 100_000, "invalid_json"),
        ("x" * (MAX_ACTION_CHARS + 1), "invalid_json"),
        ('{"name": "contacts.serch", "arguments": {"query": "a"}}', "unknown_tool"),
        ('{"name": "contacts.search", "arguments": {"query": 5}}', "invalid_arguments"),
        ('{"name": "contacts.search", "arguments": {}}', "invalid_arguments"),
        ('{"name": "contacts.search", "arguments": {"query": "a", "bogus": 1}}', "invalid_arguments"),
        ('{"name": "contacts.get", "arguments": {"contact_id": "c_99"}}', "not_found"),
    ],
)
def test_bad_actions_become_feedback(contacts_task, action, kind):
    env = PhonePlanEnv(task=contacts_task)
    env.reset(seed=0)
    obs, r, term, trunc, info = env.step(action)
    assert fb(obs)["ok"] is False and fb(obs)["error"] == kind
    assert fb(obs)["hint"]
    assert env.observation_space.contains(obs)


def test_feedback_details(contacts_task):
    env = PhonePlanEnv(task=contacts_task)
    env.reset(seed=0)
    obs, *_ = step_json(env, "contacts.serch", query="a")
    assert fb(obs)["candidates"][0] == "contacts.search"
    obs, *_ = step_json(env, "contacts.search", query=5)
    assert fb(obs)["path"] == "/query" and fb(obs)["expected"] == "string"
    obs, *_ = step_json(env, "contacts.create", name="X", phone="+4915111111111")
    assert fb(obs)["error"] == "conflict" and fb(obs)["candidates"] == ["c_1"]
    # OpenAI-style wrapper and underscore names are accepted.
    obs, *_ = env.step({"type": "function", "function": {"name": "contacts__search", "arguments": '{"query": "ana"}'}})
    assert fb(obs)["ok"] and fb(obs)["result"]["total"] == 1


def test_hostile_python_objects_are_invalid_json_not_exceptions(contacts_task):
    """Objects that fail while being read (``__str__``/``__repr__``/``.get`` raising, nesting past
    the recursion limit) come back as ``invalid_json`` that says what is wrong; the episode goes on."""

    class BadText:
        def __str__(self):
            raise RuntimeError("no str")

        def __repr__(self):
            raise RuntimeError("no repr")

    class BadDict(dict):
        def get(self, *args):
            raise RuntimeError("no get")

    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    env = PhonePlanEnv(task=contacts_task)
    env.reset(seed=0)
    for action, error in [
        (BadText(), "must be a JSON object, not BadText"),
        (BadDict(name="contacts.search"), "RuntimeError"),
        ({"name": BadText(), "arguments": {}}, "needs a string 'name'"),
        ({"name": "contacts.search", "arguments": deep}, "nested deeper than 32 levels"),
    ]:
        obs, reward, terminated, truncated, info = env.step(action)
        got = fb(obs)
        assert got["error"] == "invalid_json" and error in got["message"]
        assert not terminated and not truncated
    assert [s.raw for s in env.trace.steps] == ["<unreadable BadText>", "<unreadable BadDict>", "<unreadable dict>",
                                                "<unreadable dict>"]  # fmt: skip
    obs, *_ = step_json(env, "contacts.search", query="ana")
    assert fb(obs)["ok"]


def _hostile_action(rng: random.Random, names: list[str], secret: str) -> object:
    """One action of the hostile kinds: surrogates, deep nesting, non-finite numbers, duplicate
    keys, huge integers and strings, ambiguous wrappers, and the fixture secret in every place."""
    name = rng.choice(names)
    kind = rng.randrange(12)
    if kind == 0:
        return (
            json.dumps({"name": name, "arguments": {"query": "a"}})[:-3]
            + rng.choice(["\ud800", "\udfff", "\udc00\ud800"])
            + '"}}'
        )
    if kind == 1:
        return {"name": name + rng.choice(["\ud800", ""]), "arguments": {rng.choice(["query", "\udc80"]): "\ud83d"}}
    if kind == 2:
        d = rng.choice([30, 31, 32, 255, 256, 300, 5000])
        return {"name": name, "arguments": {"query": functools.reduce(lambda x, _: [x], range(d), 1)}}
    if kind == 3:
        constant = rng.choice(["NaN", "Infinity", "-Infinity", "1e999"])
        return json.dumps({"name": name, "arguments": {"limit": "@"}}).replace('"@"', constant)
    if kind == 4:
        return {
            "name": name,
            "arguments": {"value": rng.choice([float("nan"), float("inf"), 2**63, -(2**70), 10**5000])},
        }
    if kind == 5:
        return json.dumps({"name": name, "arguments": {"query": "a"}})[:-2] + ', "query": "b"}}'
    if kind == 6:
        return {"name": name, "function": {"name": rng.choice(names), "arguments": {}}}
    if kind == 7:
        return {"name": "finish", "arguments": {"answer": "x" * rng.choice([8001, 40_000, 10**6])}}
    if kind == 8:
        return {"name": name, "arguments": {"k" * rng.choice([129, 60_000, 10**6]): 1}}
    if kind == 9:
        return rng.choice(
            [
                {
                    "name": "system.sign_in",
                    "arguments": {"app": "mail", "account": "sam@example.com", "password": secret, "x": 1},
                },
                {"name": "system.sign_inn", "arguments": {"pass": secret}},
                '{"name": "system.sign_in", "arguments": {"password": "' + secret + '"',
                {"name": "system.sign_in", "arguments": '{"password": "' + secret + '"'},
                {"name": secret, "arguments": {secret: secret}},
                {"name": "user.confirm", "arguments": {"question": f"use {secret}?"}},
            ]
        )
    if kind == 10:
        return json.dumps({"name": name, "arguments": {"query": secret}}).encode() + rng.choice([b"", b"\xff"])
    return "x" * rng.randrange(150, 250) + secret + "}"


def test_fuzz_ten_thousand_random_actions(contacts_task, caplog):
    """10,000 random and hostile actions over many episodes: no exception escapes ``step``,
    every observation is in the space, every trace serialises and round-trips, and the fixture
    secret is in none of them."""
    import logging

    from phoneenv.contract import Trace

    caplog.set_level(logging.DEBUG)
    secret = "fuzz-s3cret-77"
    # Copied without validation: the vault holds a plain str where SecretStr is declared.
    task = contacts_task.model_copy(
        update={
            "fixtures": contacts_task.fixtures.model_copy(
                update={
                    "vault": {"sam@example.com": secret},
                    "accounts": {"mail": {"account": "sam@example.com", "signed_in": False}},
                }
            )
        }
    )
    rng = random.Random(7)
    env = PhonePlanEnv(task=task, max_steps=10**6)
    env.reset(seed=0)
    names = [t["function"]["name"] for t in env.tools if t["function"]["name"] != "finish"]
    junk_values = [None, True, -1, 2**70, 1.5e308, "", "x" * 5000, "\u202e\U0001f600", [], {}, [[[]]], {"a": {"b": 1}}]
    kinds: set = set()
    actions = exceptions = unwritable = traces = escaped = 0

    def write_trace() -> None:
        nonlocal unwritable, traces, escaped
        traces += 1
        try:
            dumped = env.trace.model_dump_json()
            assert Trace.model_validate_json(dumped).model_dump_json() == dumped
        except Exception:
            unwritable += 1
            return
        assert secret not in dumped
        escaped += sum(s.escaped for s in env.trace.steps)

    steps, end_at = 0, rng.randrange(20, 80)
    for i in range(10_000):
        choice = rng.randrange(8)
        if choice == 0:
            action = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        elif choice == 1:
            action = "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(0, 60)))
        elif choice == 2:
            action = json.dumps(rng.choice(junk_values))
        elif choice == 3:
            action = {
                "name": rng.choice(names),
                "arguments": {
                    k: rng.choice(junk_values)
                    for k in rng.sample(
                        ["query", "contact_id", "name", "phone", "app", "limit", "offset"], rng.randrange(0, 4)
                    )
                },
            }
        elif choice == 4:
            action = json.dumps({"name": rng.choice(names) + rng.choice(["", "x", ".", "__"]), "arguments": {}})
        elif choice == 5:
            action = rng.choice([0, 3.2, object(), ["a"], ("t",), {"name": 5}])
        else:
            action = _hostile_action(rng, names, secret)
        actions += 1
        try:
            obs, r, term, trunc, info = env.step(action)
        except Exception:
            exceptions += 1
            continue
        kinds.add(fb(obs).get("error"))
        if choice >= 6 or i % 50 == 0:
            assert env.observation_space.contains(obs)
        assert secret not in obs["feedback"]
        steps += 1
        if term or trunc or steps >= end_at:
            assert secret not in json.dumps({k: v for k, v in info.items() if k != "tools"}, default=repr)
            write_trace()
            env.reset(seed=i)
            steps, end_at = 0, rng.randrange(20, 80)
    write_trace()
    print(
        f"fuzz: {actions} actions, {traces} traces, {exceptions} escaped exceptions, {unwritable} unwritable, {escaped} escaped step records"
    )
    assert (actions, exceptions, unwritable) == (10_000, 0, 0)
    assert traces > 100 and escaped > 0
    assert secret not in caplog.text
    assert {"invalid_json", "unknown_tool", "invalid_arguments"} <= kinds


def test_check_env_passes(contacts_task, answer_task):
    check_env(PhonePlanEnv(tasks=[contacts_task, answer_task]), skip_render_check=True)
    check_env(PhonePlanEnv(tasks=[contacts_task], render_mode="rgb_array", screenshots=True))


def _play(env, actions, seed):
    env.reset(seed=seed)
    for a in actions:
        env.step(a)
    return env.trace.model_dump_json()


def test_same_seed_same_actions_byte_identical_trace(contacts_task, answer_task):
    actions = [
        '{"name": "contacts.search", "arguments": {"query": "a"}}',
        "garbage",
        '{"name": "contacts.create", "arguments": {"name": "Carla Novak", "phone": "+4917033333333"}}',
        '{"name": "finish", "arguments": {"answer": "ok"}}',
    ]
    a = _play(PhonePlanEnv(tasks=[contacts_task, answer_task]), actions, seed=3)
    b = _play(PhonePlanEnv(tasks=[contacts_task, answer_task]), actions, seed=3)
    assert a == b
    trace = json.loads(a)
    # Both tasks start at 09:00:00; a call that reaches the phone moves its clock one second, and
    # an action that does not parse ("garbage") or finish does not.
    assert [s["clock"][-8:] for s in trace["steps"]] == ["09:00:01", "09:00:01", "09:00:02", "09:00:02"]
    assert trace["verdict"] is not None


def test_seeded_task_draw_is_deterministic():
    a = PhonePlanEnv(tasks="all")
    b = PhonePlanEnv(tasks="all")
    assert all("sandbox" in t.backends for t in a.pool)
    ids_a = [a.reset(seed=s)[1]["task_id"] for s in range(20)]
    ids_b = [b.reset(seed=s)[1]["task_id"] for s in range(20)]
    assert ids_a == ids_b and len(set(ids_a)) > 5


def test_thousand_resets_leak_no_state(contacts_task):
    env = PhonePlanEnv(task=contacts_task, max_steps=10**6)
    env.reset(seed=0)
    fresh = {k: dict(v) for k, v in env.backend.tables().items()}
    rng = random.Random(1)
    for i in range(1000):
        env.reset(seed=i)
        assert env.backend.tables() == fresh
        assert env.backend.clock() == "2026-11-29T09:00:00"
        n = rng.randrange(1, 4)
        for j in range(n):
            step_json(env, "contacts.create", name=f"P{i}-{j}", phone=f"+49170{i:04d}{j:03d}")
        step_json(env, "contacts.set_favorite", contact_id="c_1", favorite=bool(i % 2))
        step_json(env, "contacts.delete", contact_id="c_2")
        assert len(env.backend.tables()["contacts.contacts"]) == 1 + n
    env.reset(seed=0)
    assert env.backend.tables() == fresh


def test_vector_envs(contacts_task, answer_task):
    def make():
        return gym.make("PhonePlan-v0", tasks=[contacts_task, answer_task])

    # Text observations cannot go through AsyncVectorEnv's shared memory (gymnasium reads them
    # back as padding), so the async env copies them: shared_memory=False.
    for vec_cls in (gym.vector.SyncVectorEnv, functools.partial(gym.vector.AsyncVectorEnv, shared_memory=False)):
        venv = vec_cls([make, make])
        obs, info = venv.reset(seed=[0, 1], options={"task": "test.ben_number"})
        assert list(obs["goal"]) == ["What is Ben's number?"] * 2, vec_cls
        actions = (
            '{"name": "contacts.search", "arguments": {"query": "Ben"}}',
            '{"name": "finish", "arguments": {"answer": "no idea"}}',
        )
        obs, rew, term, trunc, info = venv.step(actions)
        assert json.loads(obs["feedback"][0])["result"]["total"] == 1
        assert list(term) == [False, True] and list(rew) == [0.0, 0.0]
        obs, rew, term, trunc, info = venv.step(('{"name": "finish", "arguments": {"answer": "+4916022222222"}}', "{}"))
        assert term[0] and rew[0] == 1.0
        venv.close()


def test_screenshots_and_render(contacts_task):
    env = gym.make("PhonePlan-v0", task=contacts_task, screenshots=True, render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    home = obs["screenshot"]
    assert home.shape == (640, 360, 3) and home.dtype == np.uint8
    obs, *_ = step_json(env, "contacts.search", query="a")
    frame = env.render()
    assert frame.shape == (640, 360, 3) and frame.dtype == np.uint8
    assert np.array_equal(frame, obs["screenshot"])
    assert not np.array_equal(frame, home)
    obs, *_ = step_json(env, "screen.capture")
    assert fb(obs)["result"]["foreground"] == "contacts"
    assert np.array_equal(obs["screenshot"], frame)


def test_permission_fixture_denied_then_requested():
    from tests.conftest import ANA

    def task(grant: bool) -> TaskSpec:
        return TaskSpec(
            id=f"perm-{grant}",
            domain="contacts",
            goal="Find Ana.",
            fixtures=Fixtures(
                records={"contacts.contacts": [ANA]},
                permissions={"contacts": {"android.permission.READ_CONTACTS": False}},
                permission_responses={"contacts/android.permission.READ_CONTACTS": grant},
            ),
            criteria=[{"kind": "answer", "contains": ["+4915111111111"]}],
        )

    for grant in (True, False):
        env = PhonePlanEnv(task=task(grant))
        env.reset(seed=0)
        obs, *_ = step_json(env, "contacts.search", query="Ana")
        assert fb(obs)["error"] == ErrorKind.PERMISSION_DENIED.value
        assert "system.request_permission" in fb(obs)["hint"]
        obs, *_ = step_json(
            env, "system.request_permission", app="contacts", permission="android.permission.READ_CONTACTS"
        )
        assert fb(obs)["ok"] is grant
        obs, *_ = step_json(env, "contacts.search", query="Ana")
        assert fb(obs)["ok"] is grant
        *_, info = step_json(env, "finish", answer="+4915111111111" if grant else "cannot")
        assert info["success"] is grant
        assert info["verdict"]["collateral"] == []


def test_confirmation_policy(contacts_task):
    from tests.conftest import ANA

    task = TaskSpec(
        id="confirm",
        domain="contacts",
        goal="Delete Ana.",
        fixtures=Fixtures(records={"contacts.contacts": [ANA]}, confirm_sensitive=True),
        criteria=[
            {"kind": "state", "table": "contacts.contacts", "change": "deleted", "where": {"id": "c_1"}, "count": 1}
        ],
    )
    env = PhonePlanEnv(task=task)
    env.reset(seed=0)
    obs, *_ = step_json(env, "contacts.delete", contact_id="c_1")
    assert fb(obs)["error"] == "confirmation_required"
    obs, *_ = step_json(env, "user.confirm", question="Delete Ana Lima?")
    assert fb(obs)["result"]["confirmed"] is True
    obs, *_ = step_json(env, "contacts.delete", contact_id="c_1")
    assert fb(obs)["ok"]
    *_, info = step_json(env, "finish")
    assert info["success"]


def test_login_fixture_and_secrets_stay_out_of_everything(caplog):
    import logging

    secret = "correct-horse-battery"
    task = TaskSpec(
        id="login",
        domain="email",
        goal="How many emails are in my inbox?",
        fixtures=Fixtures(
            accounts={"mail": {"account": "sam@example.com", "signed_in": False}},
            vault={"sam@example.com": secret},
            records={
                "mail.messages": [
                    {
                        "id": "em_1",
                        "folder": "inbox",
                        "from": "a@x.org",
                        "to": ("sam@example.com",),
                        "subject": "Hi",
                        "body": "b",
                        "time": "2026-11-29T08:00:00",
                        "read": False,
                    }
                ]
            },
        ),
        criteria=[{"kind": "answer", "number": 1}],
    )
    caplog.set_level(logging.DEBUG)
    env = PhonePlanEnv(task=task, screenshots=True)
    seen = [json.dumps(env.reset(seed=0)[0]["goal"])]
    obs, *_ = step_json(env, "mail.list_inbox")
    assert fb(obs)["error"] == "login_required" and "sam@example.com" in fb(obs)["hint"]
    seen.append(obs["feedback"])
    obs, *_ = step_json(env, "system.sign_in", app="mail", account="sam@example.com", password="wr0ng-guess")
    assert fb(obs)["error"] == "permission_denied"
    seen.append(obs["feedback"])
    obs, *_ = step_json(env, "system.sign_in", app="mail", account="sam@example.com", password=secret)
    assert fb(obs)["ok"]
    seen.append(obs["feedback"])
    obs, *_ = step_json(env, "mail.list_inbox")
    assert fb(obs)["ok"]
    *_, info = step_json(env, "finish", answer="1")
    assert info["success"]
    trace = env.trace.model_dump_json()
    assert secret not in trace and "wr0ng-guess" not in trace
    assert [s.action.arguments.get("password") for s in env.trace.steps if s.action.name == "system.sign_in"] == [
        "***",
        "***",
    ]
    assert all(secret not in text for text in seen)
    assert secret not in caplog.text and secret not in task.model_dump_json()


def test_async_vector_env_with_shared_memory_is_refused_clearly(contacts_task):
    with pytest.raises(TypeError, match="shared_memory=False"):
        gym.vector.AsyncVectorEnv([lambda: gym.make("PhonePlan-v0", task=contacts_task)] * 2)


def test_step_before_reset_and_bad_options_are_clear(contacts_task):
    env = PhonePlanEnv(task=contacts_task)
    obs, r, term, trunc, info = env.step('{"name": "contacts.list"}')
    assert fb(obs)["error"] == "precondition_failed" and term
    assert env.trace.steps == []
    with pytest.raises(TypeError, match="task id or a TaskSpec"):
        env.reset(seed=0, options={"task": 123})
    with pytest.raises(ValueError, match="max_steps"):
        PhonePlanEnv(task=contacts_task, max_steps=0)


def test_skills_are_listed_and_read_on_demand():
    env = gym.make("PhonePlan-v0", task="mail.latest_unread/0")
    _, info = env.reset(seed=0)
    names = [s["name"] for s in info["skills"]]
    assert "sign-in-to-mail" in names and all("body" not in s for s in info["skills"])
    assert any(t["function"]["name"] == "skills.read" for t in info["tools"])
    obs, *_ = env.step({"name": "skills.read", "arguments": {"name": "sign-in-to-mail"}})
    assert "system.sign_in" in fb(obs)["result"]["body"]
    obs, *_ = env.step({"name": "skills.read", "arguments": {"name": "sign-in-to-mial"}})
    assert fb(obs)["error"] == "not_found" and fb(obs)["candidates"][0] == "sign-in-to-mail"
    bare = PhonePlanEnv(task="mail.latest_unread/0", skills=False)
    assert bare.reset(seed=0)[1]["skills"] == [] and "skills.read" not in {t["function"]["name"] for t in bare.tools}
