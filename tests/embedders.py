"""A test embedder shared by the memory tests: deterministic, no model, records what it encodes."""

from __future__ import annotations

import numpy as np

from phoneenv.harness.memory import tokenize


class CountingEmbedder:
    """A bag of words (one dimension per BM25 term), L2-normalised; records what it encodes."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.vocab: dict[str, int] = {}

    def __call__(self, texts):
        self.texts.extend(texts)
        out = np.zeros((len(texts), 512), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in tokenize(text):
                out[i, self.vocab.setdefault(word, len(self.vocab))] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)
