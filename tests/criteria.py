"""Test helper: a task's own criteria, apart from the guards the template machinery adds."""

from __future__ import annotations

from phoneenv.contract import TaskSpec


def goal_criteria(t: TaskSpec) -> list:
    """``t``'s criteria that judge its goal: without the guard every changing task carries (its
    answer must not report the change undone, :mod:`phoneenv.tasks.undone`) and without optional
    answer checks (a value the answer tells must be right, ``templates.answer_if_said``)."""
    return [c for c in t.criteria if c.id != "not_reported_undone" and not getattr(c, "optional", False)]
