"""Which of an episode's tools a model is offered: one rule shared by evaluation, SFT and RL.

A model should be judged on the prompt it was trained on. ``phoneenv eval --tools``,
``phoneenv train sft --tools`` and ``phoneenv train rl --tools`` (and :class:`~agents.planner.LLMPlanner`,
:func:`rl.rollout.rollout_members`, :func:`rl.sft.traces_to_examples`) all take the same
*tool filter* and resolve it here, per episode, from the reset ``info``:

* ``"all"`` (or None): every tool the env offers (about 94 specs, 13k tokens for a small model's
  tokenizer: fine for served models, slow for a small local one);
* ``"task"``: the tools of the task's own apps (``info["apps"]``), plus ``user``, ``system``,
  ``finish`` and ``tools`` (``tools.search``, where offered), plus the harness app its category
  needs (``memory`` for Memory tasks, ``skills`` for Skills tasks, ``agent`` for Sub-agent tasks). Every call of every reference plan in the suite
  lies inside this set (``tests/test_toolfilter.py`` checks it);
* a list of app names (``"clock"``) or full tool names (``"settings.set_dnd"``), or the same as
  one comma-separated string: exactly those.

The env still accepts any call: a filter only shapes what the model is shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ALWAYS", "CATEGORY_APPS", "TOOL_FILTER_HELP", "ToolFilter", "allowed_tools", "offered", "parse_tool_filter"]

#: Apps every ``"task"`` filter keeps: asking the user, reading the phone's state, ending the episode,
#: and ``tools.search`` where the env offers it (``tools="search"``: the way to load more tools).
ALWAYS: frozenset[str] = frozenset({"user", "system", "finish", "tools"})
#: The harness app a task category needs beside the task's own apps.
CATEGORY_APPS: Mapping[str, frozenset[str]] = {
    "memory": frozenset({"memory"}),
    "skills": frozenset({"skills"}),
    "subagent": frozenset({"agent"}),
}

ToolFilter = str | Sequence[str] | None
"""``"all"``, ``"task"``, a comma-separated string of apps/tool names, a list of them, or None (all)."""

TOOL_FILTER_HELP = (
    "Tools the model is offered: all (every tool of the episode), task (the task's apps, user, system, "
    "finish and its category's harness app), or a comma-separated list of apps or tool names."
)


def parse_tool_filter(spec: ToolFilter) -> str | tuple[str, ...] | None:
    """Normalise a filter: None for all tools, ``"task"``, or a tuple of app / tool names.

    Raises:
        ValueError: an empty list, an empty name, or a value that is neither a string nor a list of
            strings.
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        text = spec.strip()
        if text.lower() == "all":
            return None
        if text.lower() == "task":
            return "task"
        names = [n.strip() for n in text.split(",")]
    elif isinstance(spec, Sequence) and all(isinstance(n, str) for n in spec):
        names = [n.strip() for n in spec]
    else:
        raise ValueError(f"a tool filter is 'all', 'task' or a list of app/tool names, not {spec!r}")
    if not names or any(not n for n in names):
        raise ValueError(f"a tool filter's names must be non-empty, got {spec!r}")
    return tuple(names)


def allowed_tools(spec: ToolFilter, info: Mapping[str, Any] | None = None) -> frozenset[str] | None:
    """The app and tool names a filter allows in one episode (None: every tool).

    Args:
        spec: the filter (see the module docstring).
        info: the episode's reset ``info`` (``apps`` and ``category`` are read for ``"task"``).

    Raises:
        ValueError: a malformed filter, or ``"task"`` without ``info["apps"]``.
    """
    parsed = parse_tool_filter(spec)
    if parsed is None:
        return None
    if parsed != "task":
        return frozenset(parsed)
    if info is None or "apps" not in info:
        raise ValueError("the 'task' tool filter needs the episode's reset info (its 'apps')")
    return frozenset(info["apps"]) | ALWAYS | CATEGORY_APPS.get(str(info.get("category")), frozenset())


def offered(name: str, allowed: frozenset[str] | None) -> bool:
    """Whether the tool ``name`` (``app.verb`` or ``app__verb``) passes the resolved filter."""
    if allowed is None:
        return True
    dotted = name.replace("__", ".")
    return dotted in allowed or dotted.split(".", 1)[0] in allowed
