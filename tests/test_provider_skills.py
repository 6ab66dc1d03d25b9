"""The skills provider (phoneenv.harness.providers.skills): ``skills.read`` and ``info["skills"]``
follow the skills that cover the episode's tools."""

from __future__ import annotations

from types import SimpleNamespace

from phoneenv.env import PhonePlanEnv
from phoneenv.harness.providers.skills import Skills
from phoneenv.harness.skills import READ_TOOL, SkillLibrary, parse_skill

SKILL = """---
name: text-a-contact
description: Send an SMS to someone by name.
tools: [contacts.search, messages.send]
---
1. Call `contacts.search`.
"""
LIB = SkillLibrary([parse_skill(SKILL)])
ENV = SimpleNamespace()


def test_offered_only_when_a_skill_covers_the_tools():
    p = Skills(LIB)
    assert p.offer(ENV, dict.fromkeys(["contacts.search", "messages.send", "finish"])) == {"skills.read": READ_TOOL}
    assert p.info() == {"skills": [{"name": "text-a-contact", "description": "Send an SMS to someone by name."}]}
    fb = p.call(ENV, "skills.read", {"name": "text-a-contact"})
    assert fb.ok and fb.result["body"].startswith("1. Call `contacts.search`.")
    assert p.call(ENV, "skills.read", {"name": "text-a-contakt"}).candidates == ["text-a-contact"]
    assert p.offer(ENV, dict.fromkeys(["clock.now", "finish"])) == {}
    assert p.info() == {"skills": []} and p.scope is None


def test_no_library_offers_nothing_and_lists_no_skill():
    p = Skills(None)
    assert p.offer(ENV, dict.fromkeys(["contacts.search", "messages.send"])) == {} and p.info() == {"skills": []}


def test_in_the_env_info_lists_the_covering_skills():
    env = PhonePlanEnv(task="contacts.favorite/0", skills=LIB)
    _, info = env.reset(seed=0)
    assert [s["name"] for s in info["skills"]] == ["text-a-contact"]
    names = [t["function"]["name"] for t in env.tools]
    assert names[len(env.backend.tools())] == "skills.read"  # the first provider's tool follows the backend's
    _, info = PhonePlanEnv(task="contacts.favorite/0", skills=False).reset(seed=0)
    assert info["skills"] == []
