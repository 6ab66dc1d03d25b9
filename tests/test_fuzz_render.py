"""The screen renders after every step of the fuzz corpus (issue 34): random valid calls of every
tool (writes that create, change and delete records, so list and detail views of fresh records
reach the screen), hostile argument values and malformed actions, over several sandbox worlds and
the hybrid backend. After each step ``render()`` in both modes and the MCP server's
:func:`~phoneenv.mcp_server.screen_text` return a frame of the right shape and never raise; with
``screenshots=True`` no step answers ``internal_error`` (a renderer that raised inside
``env.step`` once did, after ``settings.add_dnd_schedule``). ``tests/test_screens.py`` does the
same for every reference plan."""

from __future__ import annotations

import random
import unicodedata
from typing import Any

import numpy as np
import pytest

from phoneenv.env import PhonePlanEnv
from phoneenv.mcp_server import screen_text
from phoneenv.screen import _row_chars
from phoneenv.tasks import get_task
from tests.test_env import _hostile_action
from tests.test_tool_bounds import calls_for, world_task

# Sandbox worlds that hold records in most apps between them (wallet, budget, travel, weather,
# gallery, delivery, home, maps, music, shop): list and detail views of each reach the screen.
TASKS = [
    "skills.pay_bill_safely/5",
    "travel_subagent.landing_brief/3",
    "gallery.share_with_tagged/3",
    "skills.reorder_usual/10",
    "subagent.lights_off/4",
    "maps.save_place/5",
    "music.podcast_catch_up/10",
    "skills.return_item/6",
]
STEPS = 200  # per world: 1,600 sandbox steps


def _random_ids(arguments: dict[str, Any], env: PhonePlanEnv, app: str, rng: random.Random) -> dict[str, Any]:
    """``arguments`` with each ``*_id`` that names one of ``app``'s records swapped for a random
    record of that table (not always the first, so detail views of many records are drawn)."""
    tables = env.backend.tables()
    out = dict(arguments)
    for key, value in arguments.items():
        if not key.endswith("_id"):
            continue
        table = tables.get(f"{app}.{key[:-3]}s")
        if table:
            out[key] = rng.choice(list(table))
    return out


def _action(env: PhonePlanEnv, tools: list[dict[str, Any]], names: list[str], rng: random.Random) -> Any:
    """One action of the corpus: 45% a valid call of a random tool (real ids), 25% one of its
    hostile-argument calls, 30% a malformed or hostile action (tests/test_env.py's)."""
    r = rng.random()
    if r >= 0.7:
        return _hostile_action(rng, names, "not-a-secret")
    tool = rng.choice(tools)
    cases = list(calls_for(tool, env, rng))
    if r < 0.45:
        return {"name": tool["name"], "arguments": _random_ids(cases[1][1], env, tool["name"].split(".")[0], rng)}
    return {"name": tool["name"], "arguments": rng.choice(cases)[1]}


def _controls(text: str) -> set[str]:
    """The line breaks and control characters in ``text``."""
    return {ch for ch in text if unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp")}


def _check_frames(env: PhonePlanEnv, size: tuple[int, int]) -> str:
    """Render the screen every way; assert each frame's shape. The foreground app's name."""
    w, h = size
    env.render_mode = "rgb_array"
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.shape == (h, w, 3) and frame.dtype == np.uint8
    env.render_mode = "ansi"
    text = env.render()
    assert isinstance(text, str)
    lines = text.split("\n")
    # a closed frame, each row one line, no control character (a terminal's escape) in it
    assert len(lines) >= 5 and {len(line) for line in lines} == {_row_chars(w) + 4}, text
    assert not _controls(text.replace("\n", "")), text
    shown = screen_text(env)
    assert not _controls(shown.replace("\n", "")), shown
    if getattr(env.backend, "phone", None) is None:  # no phone of its own: the backend's text
        assert shown == text
    else:
        rows = shown.split("\n")
        assert len(rows) >= 2 and rows[1].startswith("== ") and rows[1].endswith(" =="), shown
    phone = getattr(env.backend, "phone", None) or env.backend.sandbox.phone  # hybrid: its sandbox's
    return str(phone.state.meta.get("foreground", "launcher"))


def _fuzz(env: PhonePlanEnv, steps: int, seed: int, size: tuple[int, int]) -> tuple[int, set[str], set[str]]:
    """``steps`` corpus actions on ``env``, every screen checked after each; (successful calls,
    foreground apps seen, view kinds seen)."""
    rng = random.Random(seed)
    _, info = env.reset(seed=seed)
    ok, apps, views = 0, set(), set()
    for i in range(steps):
        tools = [t["function"] for t in info["tools"] if t["function"]["name"] != "finish"]
        names = [t["name"] for t in tools]
        obs, _, terminated, truncated, step_info = env.step(_action(env, tools, names, rng))
        fb = step_info["feedback"]
        assert fb.error is None or fb.error.value != "internal_error", (fb.message, env.trace.steps[-1].action)
        assert obs["screenshot"].shape == (size[1], size[0], 3)
        ok += fb.ok
        apps.add(_check_frames(env, size))
        phone = getattr(env.backend, "phone", None) or env.backend.sandbox.phone
        view = phone.state.meta.get("view")
        if view is not None:
            views.add(f"{view[0]}:{view[1]}")
        if terminated or truncated:
            _, info = env.reset(seed=seed + i)
        elif "tools" in step_info:
            info = step_info
    return ok, apps, views


def test_every_fuzz_step_renders_in_sandbox_worlds() -> None:
    """1,600 corpus steps over eight sandbox worlds (every tool offered): every screen draws."""
    ok, apps, views = 0, set(), set()
    for i, task_id in enumerate(TASKS):
        env = PhonePlanEnv(task=get_task(task_id), tools="all", screenshots=True, max_steps=10**6)
        n, a, v = _fuzz(env, STEPS, seed=i, size=(360, 640))
        env.close()
        ok, apps, views = ok + n, apps | a, views | v
    # the corpus reaches what a renderer can trip on: many apps in front, their list and detail
    # views, hundreds of successful calls (writes among them)
    assert ok >= 300, ok
    assert len(apps) >= 15, sorted(apps)
    assert sum(v.endswith(":detail") for v in views) >= 8 and sum(v.endswith(":list") for v in views) >= 8, views


@pytest.mark.parametrize(
    ("backend", "size"), [("hybrid", (360, 640)), ("sandbox", (97, 151))], ids=["hybrid", "small-screen"]
)
def test_every_fuzz_step_renders_hybrid_and_small(backend: str, size: tuple[int, int]) -> None:
    """The hybrid backend's world (simulated apps beside sandbox ones), and a sandbox world on a
    screen smaller than any row: every screen draws, cut to fit."""
    task = world_task(backend) if backend == "hybrid" else get_task(TASKS[0])
    env = PhonePlanEnv(
        task=task, backend=backend, tools="all", screenshots=True, screen_size=size, max_steps=10**6, delegation=True
    )
    ok, apps, _ = _fuzz(env, 400, seed=11, size=size)
    env.close()
    assert ok >= 50 and len(apps) >= 5, (ok, apps)


def test_a_value_with_line_breaks_and_escapes_stays_on_its_row() -> None:
    """A note body a call wrote with newlines, U+2028, a tab, a terminal escape, a lone surrogate
    and a bidi override: one row in the text frame, no control character printed, the image drawn."""
    from phoneenv.screen import render_screen, render_screen_text

    value = "body: a\nb\u2028c\td\x1b[2Je\ud800f\u202eg"
    text = render_screen_text("09:00\n", "Notes\r", ["first", value, "last"])
    lines = text.split("\n")
    assert lines[5] == f"| {'body: a b c d [2Je' + chr(0xFFFD) + 'fg':<42} |"
    assert lines[4].startswith("| first") and lines[6].startswith("| last") and len(lines) == 8
    assert not _controls(text.replace("\n", ""))
    assert render_screen("09:00\n", "Notes\r", [value]).shape == (640, 360, 3)
