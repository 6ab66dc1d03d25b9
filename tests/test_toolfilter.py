"""The shared tool filter (agents.toolfilter): parsing, per-episode resolution, suite coverage."""

from __future__ import annotations

import gymnasium as gym
import pytest

import phoneenv  # noqa: F401  (registers PhonePlan-v0)
from agents.toolfilter import allowed_tools, offered, parse_tool_filter


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        (None, None),
        ("all", None),
        (" ALL ", None),
        ("task", "task"),
        ("clock, settings.set_dnd", ("clock", "settings.set_dnd")),
        (["clock", "finish"], ("clock", "finish")),
    ],
)
def test_parse(spec, want):
    assert parse_tool_filter(spec) == want


@pytest.mark.parametrize("bad", ["", "clock,,finish", [], [3], 7, ["clock", ""]])
def test_parse_rejects(bad):
    with pytest.raises(ValueError):
        parse_tool_filter(bad)


def test_task_filter_needs_info():
    with pytest.raises(ValueError, match="reset info"):
        allowed_tools("task")


def test_task_filter_from_reset_info():
    env = gym.make("PhonePlan-v0", tasks="template:contacts.favorite")
    _, info = env.reset(seed=0)
    env.close()
    assert info["apps"] == ["contacts"]
    allowed = allowed_tools("task", info)
    assert allowed == {"contacts", "user", "system", "finish", "tools"}
    names = [t["function"]["name"] for t in info["tools"]]
    kept = sorted(n for n in names if offered(n, allowed))
    assert "contacts.search" in kept and "finish" in kept and "user.confirm" in kept
    assert not any(n.startswith(("clock.", "memory.", "skills.", "messages.")) for n in kept)
    # the underscore form the planner shows is accepted too
    assert offered("contacts__search", allowed) and not offered("clock__start_timer", allowed)


def test_category_harness_apps():
    assert allowed_tools("task", {"apps": ["notes"], "category": "memory"}) >= {"memory", "notes"}
    assert "skills" in allowed_tools("task", {"apps": ["notes"], "category": "skills"})
    assert "agent" in allowed_tools("task", {"apps": ["notes"], "category": "subagent"})
    assert "memory" not in allowed_tools("task", {"apps": ["notes"], "category": "tool"})


@pytest.mark.slow
def test_every_reference_call_is_offered_by_the_task_filter():
    from phoneenv.tasks import select

    missing = []
    for task in select("all"):
        allowed = allowed_tools("task", {"apps": list(task.apps), "category": task.category.value})
        missing += [(task.id, c.name) for c in task.reference_plan if not offered(c.name, allowed)]
    assert missing == []
