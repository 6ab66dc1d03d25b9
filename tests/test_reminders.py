"""Reminders the agent sets (``memory.remind``) with a time, place or app-event trigger, fired
deterministically by the episode (the clock moves a second per call, ``system.wait`` by minutes,
the location timeline moves the phone), and passed on to the user with ``system.notify``;
reminder rows (``memory.entries``) and notifications (``system.notifications``) are verified
like any other state. Times checked by hand from the 09:00:00 fixture clock."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("rank_bm25")

from phoneenv.contract import Fixtures, LocationChange, StateCriterion, TaskSpec
from phoneenv.env import PhonePlanEnv
from phoneenv.harness.episode_memory import EpisodeMemory
from tests.embedders import CountingEmbedder

CLOCK = "2026-11-29T09:00:00"
DUE = "2026-11-29T09:30:00"
SET = StateCriterion(
    id="set",
    table="memory.entries",
    change="created",
    count=1,
    where={"kind": "intent", "trigger_type": "time", "trigger_value": DUE, "content": {"icontains": "dentist"}},
)
TOLD = StateCriterion(
    id="told",
    table="system.notifications",
    change="present",
    count=1,
    where={"app": "assistant", "text": {"icontains": "dentist"}, "time": {"gte": DUE}},
)


def make(criteria=(SET,), timeline=()) -> PhonePlanEnv:
    t = TaskSpec(
        id="test.remind",
        domain="device",
        goal="Remind me.",
        apps=["phone", "contacts"],
        fixtures=Fixtures(clock=CLOCK, timezone="Europe/Berlin", location_timeline=list(timeline)),
        criteria=list(criteria),
    )
    env = PhonePlanEnv(task=t, memory=EpisodeMemory(embedder=CountingEmbedder()))
    env.reset(seed=0)
    return env


def act(env, name, **arguments):
    obs, _, _, _, info = env.step({"name": name, "arguments": arguments})
    return json.loads(obs["feedback"]), info


def test_a_time_reminder_is_a_verified_row_and_fires_once_when_the_clock_reaches_it():
    env = make()
    fb, _ = act(env, "memory.remind", content="call the dentist", trigger="time", when="2026-11-29T09:30")
    assert fb["ok"], fb
    assert fb["result"] == {
        "id": 1,
        "content": "call the dentist",
        "action": "call the dentist",
        "trigger": {"type": "time", "value": DUE},
        "created": "2026-11-29T09:00:00",  # memory tools do not move the clock
    }
    fb, _ = act(env, "system.wait", minutes=29)  # 09:29:00
    assert "notifications" not in fb
    fb, _ = act(env, "system.wait", minutes=1)  # 09:30:00: due
    (note,) = fb["notifications"]
    assert (note["memory_id"], note["content"], note["time"]) == (1, "call the dentist", DUE)
    fb, _ = act(env, "system.wait", minutes=5)
    assert "notifications" not in fb  # fired once
    _, info = act(env, "finish", answer="Reminder set.")
    assert info["verdict"]["success"], info["verdict"]


def test_passing_the_fired_reminder_on_with_system_notify_is_verified():
    env = make(criteria=(SET, TOLD))
    act(env, "memory.remind", content="call the dentist", trigger="time", when="2026-11-29T09:30")
    fb, _ = act(env, "system.notify", title="Reminder", text="Call the dentist")  # 09:00:01: too early
    assert fb["ok"] and fb["result"]["app"] == "assistant" and fb["result"]["time"] == "2026-11-29T09:00:01"
    _, info = act(env, "finish", answer="done")
    assert not info["verdict"]["success"]  # told before it was due
    env.reset(seed=0)
    act(env, "memory.remind", content="call the dentist", trigger="time", when="2026-11-29T09:30")
    act(env, "system.wait", minutes=30)
    fb, _ = act(env, "system.notify", title="Reminder", text="Call the dentist")
    assert fb["result"]["time"] == "2026-11-29T09:30:01"
    _, info = act(env, "finish", answer="done")
    assert info["verdict"]["success"], info["verdict"]


def test_a_place_reminder_fires_on_arrival_and_an_app_event_one_after_the_event():
    env = make(criteria=(), timeline=[LocationChange(at="2026-11-29T09:20:00", label="gym")])
    act(env, "memory.remind", content="book a sauna slot", trigger="place", when="  Gym ")
    act(env, "memory.remind", content="text Ben the address", trigger="app_event", when="phone.end_call")
    fb, _ = act(env, "system.wait", minutes=19)
    assert "notifications" not in fb
    fb, _ = act(env, "system.wait", minutes=1)
    assert [n["content"] for n in fb["notifications"]] == ["book a sauna slot"]
    fb, _ = act(env, "phone.call", number="+491701234567")
    assert fb["ok"] and "notifications" not in fb
    fb, _ = act(env, "phone.end_call")
    assert [(n["content"], n["trigger"]) for n in fb["notifications"]] == [
        ("text Ben the address", {"type": "app_event", "value": "phone.end_call"})
    ]
    rows = env.unwrapped._memory.table()
    assert [(r["trigger_type"], r["trigger_value"]) for r in rows.values()] == [
        ("place", "Gym"),
        ("app_event", "phone.end_call"),
    ]


@pytest.mark.parametrize(
    ("arguments", "path", "words"),
    [
        ({"content": "x", "trigger": "time", "when": "2026-11-29T08:59"}, "/when", "already passed"),
        ({"content": "x", "trigger": "time", "when": "tomorrow"}, "/when", "not an ISO time"),
        ({"content": "x", "trigger": "app_event", "when": "a message from Anna"}, "/when", "app.event"),
        ({"content": "  ", "trigger": "place", "when": "gym"}, "/content", "blank"),
        ({"content": "x", "trigger": "weather", "when": "rain"}, "/trigger", ""),
    ],
)
def test_bad_reminders_get_a_clear_error_and_save_nothing(arguments, path, words):
    env = make()
    fb, _ = act(env, "memory.remind", **arguments)
    assert fb["ok"] is False and fb["error"] == "invalid_arguments" and fb["path"] == path
    assert words in fb["message"]
    assert env.unwrapped._memory.table() == {}


def test_system_notify_rejects_a_blank_text():
    env = make()
    fb, _ = act(env, "system.notify", title="Reminder", text="   ")
    assert (fb["error"], fb["path"]) == ("invalid_arguments", "/text")
