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
        (" Apps", "apps"),
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
    with pytest.raises(ValueError, match="'apps' tool filter needs"):
        allowed_tools("apps", {"category": "tool"})


def test_apps_filter_is_the_task_filter_without_user_system_tools():
    """``apps``: the task's own apps, finish and the category's harness app; nothing else."""
    assert allowed_tools("apps", {"apps": ["clock"], "category": "tool"}) == {"clock", "finish"}
    assert allowed_tools("apps", {"apps": ["notes", "messages"], "category": "memory"}) == {
        "notes",
        "messages",
        "memory",
        "finish",
    }
    env = gym.make("PhonePlan-v0", tasks="template:clock.alarm_off")
    _, info = env.reset(seed=0)
    env.close()
    names = [t["function"]["name"] for t in info["tools"]]
    kept = {n for n in names if offered(n, allowed_tools("apps", info))}
    assert "finish" in kept and "clock.list_alarms" in kept
    assert not any(n.startswith(("user.", "system.", "tools.")) for n in kept)
    task_kept = {n for n in names if offered(n, allowed_tools("task", info))}
    assert kept < task_kept


def test_default_training_plans_fit_the_apps_filter():
    """Every call of the default training tasks' reference plans is offered under ``apps``, so the
    filter ``train sft`` and ``train rl`` default to does not hide a needed tool."""
    from phoneenv.cli.train import DEFAULT_TRAIN_TASKS
    from phoneenv.tasks import select

    tasks = select(DEFAULT_TRAIN_TASKS)
    assert len(tasks) == 24
    for task in tasks:
        allowed = allowed_tools("apps", {"apps": list(task.apps), "category": task.category.value})
        assert [c.name for c in task.reference_plan if not offered(c.name, allowed)] == [], task.id


def test_model_filter_round_trip(tmp_path):
    from agents.toolfilter import MODEL_FILTER_FILE, model_filter, save_model_filter

    assert model_filter(tmp_path) is None and model_filter(None) is None
    save_model_filter(tmp_path, ["clock", " finish"])
    assert model_filter(tmp_path) == "clock,finish"
    save_model_filter(tmp_path, "ALL")
    assert model_filter(tmp_path) == "all"
    save_model_filter(tmp_path, "apps")
    assert model_filter(tmp_path) == "apps"
    (tmp_path / MODEL_FILTER_FILE).write_text('{"tool_filter": ""}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a tool-filter record"):
        model_filter(tmp_path)
    (tmp_path / MODEL_FILTER_FILE).write_text("not json", encoding="utf-8")
    with pytest.raises(ValueError, match=MODEL_FILTER_FILE):
        model_filter(tmp_path)


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
