"""The messages app's threads, read from the table's line index plus the episode's writes, agree
with a scan of every message by ``same_number`` (the definition), on a padded phone after sends,
forwards and deletes, and across episodes that share the index."""

from __future__ import annotations

import json
import random

from apps.contacts import same_number
from phoneenv.env import PhonePlanEnv
from phoneenv.tasks import get_task
from phoneenv.tasks.world import pad_fixtures

TASK = "messages.text_contact/0"


def _scan(env: PhonePlanEnv, number: str) -> list[str]:
    """The ids of the thread with ``number``, oldest first, by scanning every message."""
    tbl = env.unwrapped.backend.phone.state.tables["messages.messages"]
    recs = [r for r in tbl.values() if same_number(r["number"], number)]
    return [r["id"] for r in sorted(recs, key=lambda r: (r["time"], r["id"]))]


def _call(env: PhonePlanEnv, name: str, **arguments: object) -> dict:
    obs, *_ = env.step(json.dumps({"name": name, "arguments": arguments}))
    return json.loads(obs["feedback"])


def test_threads_from_the_index_match_a_scan_of_every_message() -> None:
    base = get_task(TASK)
    task = base.model_copy(update={"fixtures": pad_fixtures(base.fixtures, {"messages.messages": 400})})
    env = PhonePlanEnv(task=task, memory=False, max_steps=10**6)
    rng = random.Random(7)
    app = None
    for episode in range(3):  # the index is built once, on the fixture's table; episodes share it
        env.reset(seed=episode, options={"task": task})
        app = env.unwrapped.backend.phone.apps["messages"]
        tbl = env.unwrapped.backend.phone.state.tables["messages.messages"]
        numbers = sorted({r["number"] for r in tbl.values()})
        sample = rng.sample(numbers, 12)
        # writes: new threads, replies in old ones (formatted differently), forwards, deletes
        for number in sample[:4]:
            spaced = number[:3] + " " + number[3:]  # another spelling of the same line
            assert _call(env, "messages.send", to=spaced, body=f"hello {episode}")["ok"]
        assert _call(env, "messages.send", to="+44 7700 900123", body="a new line")["ok"]
        ids = sorted(tbl := env.unwrapped.backend.phone.state.tables["messages.messages"])
        for rid in rng.sample(ids, 5):
            assert _call(env, "messages.delete", message_id=rid)["ok"]
        for rid in rng.sample(sorted(env.unwrapped.backend.phone.state.tables["messages.messages"]), 2):
            assert _call(env, "messages.forward", message_id=rid, to=sample[5])["ok"]
        for number in [*sample, "+44 7700 900123", "no digits here", "+49 000"]:
            assert [r["id"] for r in app._thread(number)] == _scan(env, number), number
        # list_threads: one thread per line, newest first, counts as a scan gives them
        listed = _call(env, "messages.list_threads", limit=100)["result"]
        for thread in listed["threads"]:
            assert thread["count"] == len(_scan(env, thread["number"]))
        lines = {r["number"][-9:] for r in env.unwrapped.backend.phone.state.tables["messages.messages"].values()}
        assert listed["total"] == len(lines)
    env.close()
