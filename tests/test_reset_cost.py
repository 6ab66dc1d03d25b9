"""What a reset to another task reuses: the skills scoped to an offered tool set, and the secrets
and masker of a task's fixtures. Each reuse must give what building afresh gives."""

from __future__ import annotations

import json

from pydantic import SecretStr

from phoneenv.contract import Fixtures
from phoneenv.env import PhonePlanEnv
from phoneenv.harness.skills import SkillLibrary, skills_for
from phoneenv.intake import MASK, fixture_secrets, masker_for
from tests.test_hostile import secret_task


def test_fixture_secrets_at_any_depth_and_only_there():
    """Secrets in the vault, nested in records (dict, list, tuple) and nowhere else; longest first."""
    f = Fixtures(
        vault={"sam@example.com": SecretStr("pw-vault-0001")},
        records={
            "notes.notes": [
                {"id": "n1", "body": "pw-not-a-secret", "n": 3, "x": 1.5, "ok": True, "none": None},
                {
                    "id": "n2",
                    "meta": {"deep": [SecretStr("pw-in-a-list-002"), ("pw-plain-in-tuple", SecretStr("pw-t"))]},
                },
            ]
        },
    )
    assert fixture_secrets(f) == ("pw-in-a-list-002", "pw-vault-0001", "pw-t")
    assert fixture_secrets(Fixtures()) == ()


def test_masker_is_built_once_per_fixtures_and_keys():
    a, b = secret_task("pw-aaaa1111").fixtures, secret_task("pw-bbbb2222").fixtures
    keys = frozenset({"password"})
    m = masker_for(a, keys)
    assert masker_for(a, keys) is m
    assert m.secrets == ("pw-aaaa1111",) and m.keys == keys
    assert masker_for(a, frozenset()) is not m and masker_for(a, frozenset()).keys == frozenset()
    assert masker_for(b, keys).secrets == ("pw-bbbb2222",)


def test_each_task_masks_its_own_secret_after_switching_tasks():
    """Resets alternate between two tasks with different vault passwords: each episode's trace
    masks that task's password, and only it (the other task's is ordinary text there)."""
    a, b = secret_task("pw-aaaa1111"), secret_task("pw-bbbb2222")
    env = PhonePlanEnv(tasks=[a, b])
    for task, other in ((a, b), (b, a), (a, b), (b, a)):
        mine = task.fixtures.vault["sam@example.com"].get_secret_value()
        theirs = other.fixtures.vault["sam@example.com"].get_secret_value()
        env.reset(seed=0, options={"task": task})
        env.step({"name": "finish", "arguments": {"answer": f"{mine} and {theirs}"}})
        text = json.dumps(env.trace.model_dump(mode="json"))
        assert mine not in text and f"{MASK} and {theirs}" in text, task.fixtures.vault
    env.close()


def test_scoped_skills_are_kept_per_tool_set_and_match_a_fresh_scope():
    lib = SkillLibrary.load()
    env = PhonePlanEnv()
    names = [s.name for s in env.tool_specs]
    env.close()
    sets = [names, names[:40], [n.replace(".", "__") for n in names[:40]], ["clock.now"], []]
    for tool_set in sets:
        dotted = {n.replace("__", ".") for n in tool_set}
        apps = {n.split(".")[0] for n in dotted}
        want = sorted(s.name for s in lib if dotted & set(s.tools) or apps & set(s.apps))
        assert [s.name for s in skills_for(tool_set, lib.skills)] == want
        scope = lib.scoped(tool_set)
        assert [s.name for s in scope] == want
        assert lib.scoped(list(reversed(tool_set))) is scope  # the same set, kept
    assert lib.scoped(sets[1]) is lib.scoped(sets[2])  # dotted and underscored names: one set
    assert len(lib.scoped(names)) > len(lib.scoped(["clock.now"])) > 0 == len(lib.scoped([]))
