"""The screen follows every write: with screenshots on, no step of any template's reference plan
(and none of the list/detail views a write leaves on screen) ends in an internal error, and
``render()`` draws a frame after each. A screen that looks a record up in the wrong table used to
raise ``KeyError`` inside ``env.step`` (settings.add_dnd_schedule)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from phoneenv.env import PhonePlanEnv
from phoneenv.tasks import get_task
from phoneenv.tasks.templates import all_templates


def _feedback(obs):
    fb = obs["feedback"]
    return json.loads(fb) if isinstance(fb, str) else fb


def test_a_dnd_schedule_on_screen_renders():
    env = PhonePlanEnv(tasks=[get_task("settings.toggle/0")], screenshots=True, render_mode="rgb_array")
    env.reset(seed=0)
    add = {"name": "settings.add_dnd_schedule",
           "arguments": {"name": "Night", "days": ["mon"], "start": "22:00", "end": "07:00"}}  # fmt: skip
    obs, *_ = env.step(add)
    assert _feedback(obs)["ok"], _feedback(obs)
    obs, *_ = env.step({"name": "screen.capture", "arguments": {}})
    assert _feedback(obs)["ok"], _feedback(obs)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.ndim == 3
    title, lines = env.backend.phone.apps["settings"].screen(env.backend.phone.state.meta["view"])
    assert lines[:2] == ["name: Night", "days: mon"]  # the schedule just made, in detail


@pytest.mark.parametrize("name", sorted(n for n in all_templates() if "sandbox" in get_task(f"{n}/0").backends))
def test_every_reference_step_renders(name):
    task = get_task(f"{name}/0")  # built once, at collection (get_task keeps it)
    env = PhonePlanEnv(tasks=[task], screenshots=True, render_mode="rgb_array")
    env.reset(seed=0)
    for call in task.reference_plan or []:
        obs, _, terminated, truncated, _ = env.step(call.model_dump(exclude_none=True))
        fb = _feedback(obs)
        assert fb.get("error") != "internal_error", (name, call.name, fb)
        assert env.render().ndim == 3
        if terminated or truncated:
            break
    env.close()
