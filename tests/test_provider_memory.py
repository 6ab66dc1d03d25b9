"""The memory provider (phoneenv.harness.providers.memory): a thin adapter over EpisodeMemory."""

from __future__ import annotations

import json
from types import SimpleNamespace

from phoneenv.env import PhonePlanEnv
from phoneenv.harness.episode_memory import MEMORY_TABLE, EpisodeMemory
from phoneenv.harness.providers.memory import Memory
from phoneenv.tasks import get_task

TASK = "memory.call_past_provider/0"


def test_offers_what_the_backend_does_not_serve():
    p = Memory(EpisodeMemory())
    backend = SimpleNamespace(set_clock=lambda *_: None)
    env = SimpleNamespace(backend=backend)
    names = set(p.offer(env, {}))
    assert {"memory.search", "memory.save", "memory.forget", "memory.remind", "system.location", "system.wait"} == names
    assert "system.location" not in p.offer(env, {"system.location": None})
    assert "system.wait" not in p.offer(SimpleNamespace(backend=object()), {})  # no clock to advance


def test_reset_tables_and_observe():
    mem = EpisodeMemory()
    p = Memory(mem)
    env = PhonePlanEnv(task=TASK, memory=mem)
    env.reset(seed=0)
    task = get_task(TASK)
    table = p.tables()[MEMORY_TABLE]
    assert len(table) == len(task.fixtures.memory) > 0
    assert p.observe("contacts.get", True) is None  # no intent waits in this task
    p.close()
    assert mem._store is None


def test_in_the_env_saves_are_verified_state_and_memory_false_leaves_it_out():
    env = PhonePlanEnv(task=TASK)
    env.reset(seed=0)
    before = len(env._end_tables()[MEMORY_TABLE])
    obs, *_ = env.step(
        json.dumps({"name": "memory.save", "arguments": {"kind": "fact", "content": "the boat is blue"}})
    )
    assert json.loads(obs["feedback"])["ok"] is True
    assert len(env._end_tables()[MEMORY_TABLE]) == before + 1
    off = PhonePlanEnv(task=TASK, memory=False)
    off.reset(seed=0)
    assert MEMORY_TABLE not in off._end_tables()
    assert not any(t["function"]["name"].startswith("memory.") for t in off.tools)
