"""Sampling one reply of a planner under training: the seeded sampler the rollout drives
(:class:`Sampler`, Transformers ``generate`` with optional grammar-constrained decoding), the
per-turn seed (:func:`sampling_seed`), and what a sample returns (:class:`Sample`). The vLLM
sampler (:mod:`rl.vllm_engine`) subclasses it; :mod:`rl.rollout` uses both."""

from __future__ import annotations

import json
import weakref
import zlib
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Sample", "Sampler", "sampling_seed"]


def sampling_seed(sample_seed: int, task_id: str, seed: int, member: int, turn: int) -> int:
    """The torch seed of member ``member``'s turn ``turn`` (a 63-bit int, deterministic)."""
    words = [
        int(sample_seed) & 0xFFFFFFFF,
        (int(sample_seed) >> 32) & 0xFFFFFFFF,
        zlib.crc32(task_id.encode("utf-8")),
        int(seed) & 0xFFFFFFFF,
        int(member),
        int(turn),
    ]
    return int(np.random.SeedSequence(words).generate_state(1, np.uint64)[0] >> np.uint64(1))


class _Grammars:
    """xgrammar compilers per tokenizer (weakly keyed) and compiled call grammars per tool list."""

    def __init__(self) -> None:
        self._by_tokenizer: weakref.WeakKeyDictionary[Any, tuple[Any, dict[str, Any]]] = weakref.WeakKeyDictionary()

    def get(self, tokenizer: Any, vocab_size: int, tools: list[dict[str, Any]], max_string_chars: int) -> Any:
        import xgrammar as xgr

        from agents.llm.client import LocalChatClient, compile_grammar

        entry = self._by_tokenizer.get(tokenizer)
        if entry is None or entry[0][0] != vocab_size:
            info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
            entry = ((vocab_size, xgr.GrammarCompiler(info)), {})
            self._by_tokenizer[tokenizer] = entry
        (_, compiler), cache = entry
        schema = LocalChatClient.call_schema(tools)
        key = json.dumps([max_string_chars, schema], sort_keys=True)
        if key not in cache:
            cache[key] = compile_grammar(compiler, schema, max_string_chars, tool_call=True)
        return cache[key]


_GRAMMARS = _Grammars()


def _model_device(model: Any) -> Any:
    import torch

    try:
        return next(model.parameters()).device
    except StopIteration:  # pragma: no cover - a model without parameters
        return torch.device("cpu")


def _stop_ids(model: Any, tokenizer: Any) -> list[int]:
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    ids = list(eos) if isinstance(eos, (list, tuple)) else [eos]
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.insert(0, tokenizer.eos_token_id)
    return [int(i) for i in ids if i is not None]


class Sample(NamedTuple):
    """One sampled reply: ``ids`` (new token ids), ``ended`` (it ends with a stop token) and
    ``logprobs`` (the sampling engine's log-prob of each id, or None when the engine reports none
    and the trainer's model scores the episode afterwards)."""

    ids: list[int]
    ended: bool
    logprobs: list[float] | None = None


class Sampler:
    """One reply for a token context with ``model.generate`` (pure temperature sampling)."""

    reports_logprobs = False
    """Whether :meth:`generate_many` returns the engine's log-probs (then the episode is not re-scored)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_new_tokens: int,
        temperature: float,
        constrained: bool,
        max_string_chars: int,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = float(temperature)
        self.constrained = constrained
        self.max_string_chars = max_string_chars
        self.device = _model_device(model)
        self.stop_ids = _stop_ids(model, tokenizer)
        self.eos_id = int(tokenizer.eos_token_id) if tokenizer.eos_token_id is not None else self.stop_ids[0]
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad) if pad is not None else self.eos_id
        self.context_limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        self.vocab_size = int(model.config.vocab_size)

    def room(self, context_len: int) -> int:
        """How many tokens may still be generated after ``context_len`` (``max_new_tokens`` at most)."""
        if self.context_limit is None:
            return self.max_new_tokens
        return max(0, min(self.max_new_tokens, int(self.context_limit) - context_len))

    def generate(self, context: list[int], tools: list[dict[str, Any]], seed: int) -> tuple[list[int], bool]:
        """Sample one reply; returns ``(new token ids, ended with a stop token)``."""
        import torch

        processors = []
        if self.constrained and tools:
            import xgrammar as xgr

            grammar = _GRAMMARS.get(self.tokenizer, self.vocab_size, tools, self.max_string_chars)
            processors.append(xgr.contrib.hf.LogitsProcessor(grammar))
        input_ids = torch.tensor([context], dtype=torch.long, device=self.device)
        sample = self.temperature > 0
        kwargs: dict[str, Any] = {"do_sample": sample}
        if sample:
            kwargs.update(temperature=self.temperature, top_k=0, top_p=1.0)
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices), torch.no_grad():
            torch.manual_seed(seed)
            out = self.model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=self.room(len(context)),
                logits_processor=processors or None,
                eos_token_id=self.stop_ids,
                pad_token_id=self.pad_id,
                use_cache=True,  # trainers turn the config's cache off for gradient checkpointing
                # transformers turns synced_gpus on under ZeRO-3 (an all_reduce per new token); the
                # rollout runs with gathered weights and ranks make different numbers of calls, so
                # syncing would hang the first rank that finishes its episodes.
                synced_gpus=False,
                **kwargs,
            )
        new = out[0, input_ids.shape[1] :].tolist()
        for i, tok in enumerate(new):  # cut after the first stop token (nothing follows it for batch 1)
            if tok in self.stop_ids:
                return new[: i + 1], True
        return new, False

    def generate_many(self, requests: Sequence[tuple[list[int], list[dict[str, Any]], int]]) -> list[Sample]:
        """One reply per ``(context ids, offered tools, seed)`` request, in order (here one
        ``model.generate`` call each; engines that batch override this)."""
        return [Sample(*self.generate(context, tools, seed)) for context, tools, seed in requests]

    def logprobs(self, ids: Sequence[int], mask: Sequence[int]) -> Any:
        """``(L,)`` float32: ``log_softmax(logits / T)`` at tokens where ``mask`` is 1, 0.0 elsewhere."""
        import torch

        out = torch.zeros(len(ids), dtype=torch.float32)
        positions = [i for i, m in enumerate(mask) if m]
        if not positions:
            return out
        if positions[0] == 0:
            raise ValueError("the first token of an episode cannot be a sampled token")
        temp = self.temperature if self.temperature > 0 else 1.0
        input_ids = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
        keep = torch.tensor([p - 1 for p in positions], dtype=torch.long, device=self.device)
        with torch.no_grad():
            logits = self.model(input_ids=input_ids, logits_to_keep=keep).logits[0].float()
        logps = torch.log_softmax(logits / temp, dim=-1)
        targets = torch.tensor([ids[p] for p in positions], dtype=torch.long, device=self.device)
        values = logps.gather(1, targets[:, None])[:, 0].cpu()
        out[torch.tensor(positions)] = values
        return out
