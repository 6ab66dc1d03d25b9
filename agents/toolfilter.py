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
* ``"apps"``: the smallest prompt: the tools of the task's own apps plus ``finish`` and its
  category's harness app, without ``user``, ``system`` and ``tools``. It is what ``train sft`` and
  ``train rl`` offer by default: on the default clock tasks it offers 11 tool specs (5,283
  characters of JSON) where ``"task"`` offers 24 (10,355) and ``"all"`` 256 (122,546), so a small
  model reads half the prompt and picks among fewer names. Tasks whose plan asks the user or
  reads ``system`` need ``"task"``;
* a list of app names (``"clock"``) or full tool names (``"settings.set_dnd"``), or the same as
  one comma-separated string: exactly those.

The env still accepts any call: a filter only shapes what the model is shown.

A trained model folder records the filter it was trained with (:func:`save_model_filter`, a
``phoneenv_tools.json`` beside ``config.json``); ``train rl`` and ``eval --agent llm`` use the
recorded filter when ``--tools`` is not given (:func:`model_filter`), so the prompt a model is
improved and judged on is the one it learnt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "ALWAYS",
    "CATEGORY_APPS",
    "MODEL_FILTER_FILE",
    "PER_TASK",
    "TOOL_FILTER_HELP",
    "ToolFilter",
    "allowed_tools",
    "model_filter",
    "offered",
    "parse_tool_filter",
    "save_model_filter",
]

#: Apps every ``"task"`` filter keeps: asking the user, reading the phone's state, ending the episode,
#: and ``tools.search`` where the env offers it (``tools="search"``: the way to load more tools).
ALWAYS: frozenset[str] = frozenset({"user", "system", "finish", "tools"})
#: The harness app a task category needs beside the task's own apps.
CATEGORY_APPS: Mapping[str, frozenset[str]] = {
    "memory": frozenset({"memory"}),
    "skills": frozenset({"skills"}),
    "subagent": frozenset({"agent"}),
}

#: The filters resolved per episode from its reset ``info``: ``"task"`` and ``"apps"``.
PER_TASK: tuple[str, ...] = ("task", "apps")

ToolFilter = str | Sequence[str] | None
"""``"all"``, ``"task"``, ``"apps"``, a comma-separated string of apps/tool names, a list of them, or None (all)."""

TOOL_FILTER_HELP = (
    "Tools the model is offered: all (every tool of the episode), task (the task's apps, user, system, "
    "finish and its category's harness app), apps (the task's apps, finish and its category's harness app "
    "only), or a comma-separated list of apps or tool names."
)


def parse_tool_filter(spec: ToolFilter) -> str | tuple[str, ...] | None:
    """Normalise a filter: None for all tools, ``"task"``, ``"apps"``, or a tuple of app / tool names.

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
        if text.lower() in PER_TASK:
            return text.lower()
        names = [n.strip() for n in text.split(",")]
    elif isinstance(spec, Sequence) and all(isinstance(n, str) for n in spec):
        names = [n.strip() for n in spec]
    else:
        raise ValueError(f"a tool filter is 'all', 'task', 'apps' or a list of app/tool names, not {spec!r}")
    if not names or any(not n for n in names):
        raise ValueError(f"a tool filter's names must be non-empty, got {spec!r}")
    return tuple(names)


def allowed_tools(spec: ToolFilter, info: Mapping[str, Any] | None = None) -> frozenset[str] | None:
    """The app and tool names a filter allows in one episode (None: every tool).

    Args:
        spec: the filter (see the module docstring).
        info: the episode's reset ``info`` (``apps`` and ``category`` are read for ``"task"`` and
            ``"apps"``).

    Raises:
        ValueError: a malformed filter, or ``"task"``/``"apps"`` without ``info["apps"]``.
    """
    parsed = parse_tool_filter(spec)
    if parsed is None:
        return None
    if parsed not in PER_TASK:
        return frozenset(parsed)
    if info is None or "apps" not in info:
        raise ValueError(f"the {parsed!r} tool filter needs the episode's reset info (its 'apps')")
    own = frozenset(info["apps"]) | CATEGORY_APPS.get(str(info.get("category")), frozenset())
    return own | (ALWAYS if parsed == "task" else frozenset({"finish"}))


def offered(name: str, allowed: frozenset[str] | None) -> bool:
    """Whether the tool ``name`` (``app.verb`` or ``app__verb``) passes the resolved filter."""
    if allowed is None:
        return True
    dotted = name.replace("__", ".")
    return dotted in allowed or dotted.split(".", 1)[0] in allowed


#: The file in a model folder that records the tool filter the model was trained with.
MODEL_FILTER_FILE = "phoneenv_tools.json"


def save_model_filter(model_dir: str | os.PathLike[str], spec: ToolFilter) -> Path:
    """Record in ``model_dir`` the filter a model was trained with (``{"tool_filter": spec}``).

    ``spec`` is stored normalised: ``"all"``, ``"task"``, ``"apps"`` or a comma-separated list.

    Raises:
        ValueError: a malformed filter.
    """
    parsed = parse_tool_filter(spec)
    text = "all" if parsed is None else parsed if isinstance(parsed, str) else ",".join(parsed)
    path = Path(model_dir) / MODEL_FILTER_FILE
    path.write_text(json.dumps({"tool_filter": text}) + "\n", encoding="utf-8")
    return path


def model_filter(model_dir: str | os.PathLike[str] | None) -> str | None:
    """The filter recorded in a model folder by :func:`save_model_filter`, or None when the
    folder records none (a base model, a served model's name, a folder trained before filters
    were recorded).

    Raises:
        ValueError: a record that cannot be read (a folder, not UTF-8), is not JSON or holds a
            malformed filter (naming the file).
    """
    if model_dir is None:
        return None
    from phoneenv.tracefiles import read_json_file

    path = Path(model_dir) / MODEL_FILTER_FILE
    if not path.exists():
        return None
    try:
        data = read_json_file(path)  # a damaged file (not UTF-8, not JSON, nested too deeply): ValueError
        if not isinstance(data, dict) or not isinstance(data.get("tool_filter"), str):
            raise ValueError("an object with a 'tool_filter' string expected")
        text = data["tool_filter"]
        parse_tool_filter(text)
    except (OSError, ValueError) as exc:
        message = str(exc).removeprefix(f"{path}: ")
        raise ValueError(
            f"{path}: not a tool-filter record ({message}); fix it, or delete it and pass --tools"
        ) from None
    return str(text)
