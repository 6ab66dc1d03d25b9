"""Multi-turn rollouts sampled by a colocated vLLM engine (``GRPOConfig(use_vllm=True, vllm_mode="colocate")``).

TRL builds the engine (``trainer.vllm_generation.llm``, a ``vllm.LLM``) and pushes the current
weights into it before it calls the ``rollout_func``; :class:`VLLMSampler` then samples every turn
of every episode through it instead of ``model.generate``:

* all replies the rollout needs at one moment (one per live episode of the group) go to vLLM in
  one ``LLM.generate`` call, one ``SamplingParams`` per request, so vLLM batches them;
* each request carries the turn's own seed (:func:`rl.rollout.sampling_seed`), so a member's
  episode does not depend on the other members, as with ``transformers`` sampling;
* with ``constrained=True`` each reply is decoded under the EBNF text of the same xgrammar
  grammar :class:`~agents.llm.client.LocalChatClient` uses
  (:func:`agents.llm.client.call_grammar`), given to vLLM as ``StructuredOutputsParams(grammar=...)``
  (vLLM ≥ 0.10; older releases take ``GuidedDecodingParams(grammar=...)`` as ``guided_decoding``);
* ``SamplingParams(logprobs=0)`` returns the log-prob of each sampled token; TRL builds the engine
  with ``logprobs_mode="processed_logprobs"``, so these are the log-probs after temperature, the
  quantity its importance-sampling correction (``vllm_importance_sampling_correction``) compares
  with the training model's. The rollout returns them as the trajectory's ``logprobs`` and skips
  the re-scoring forward pass.

Server mode (``trl vllm-serve``) is refused: its client gathers the prompts of all ranks in each
call, which needs every rank to make the same number of calls, and episodes of different lengths
make different numbers of turns. Tensor parallelism inside colocate mode (``vllm_tensor_parallel_size
> 1``) gathers prompts across the TP group per call for the same reason and is refused too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from phoneenv.extras import require
from rl.sampling import Sample, Sampler

__all__ = ["VLLMSampler", "check_vllm_generation", "sampling_params_kwargs"]


def check_vllm_generation(generation: Any) -> Any:
    """The ``vllm.LLM`` of TRL's ``trainer.vllm_generation`` if multi-turn rollouts can use it.

    Raises:
        ValueError: server mode, or colocate mode with tensor parallelism > 1 (both make a
            collective per generate call, which episodes with different numbers of turns would hang).
    """
    mode = getattr(generation, "mode", None)
    if mode != "colocate":
        raise ValueError(
            f"multi-turn rollouts need vllm_mode='colocate' (got {mode!r}): server mode gathers every "
            "rank's prompts per call, and ranks run different numbers of turns"
        )
    tp = int(getattr(generation, "tensor_parallel_size", 1) or 1)
    if tp > 1:
        raise ValueError(
            f"multi-turn rollouts need vllm_tensor_parallel_size=1 (got {tp}): tensor parallelism gathers "
            "prompts across the group per call, and ranks run different numbers of turns"
        )
    return generation.llm


def sampling_params_kwargs(
    *,
    temperature: float,
    max_tokens: int,
    seed: int,
    stop_token_ids: Sequence[int],
    grammar: str | None,
) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for one turn (without the grammar object).

    ``temperature`` 0 is greedy; otherwise pure temperature sampling (``top_k=-1``/``top_p=1``,
    as the ``transformers`` sampler). ``max_tokens`` ≥ 1; ``stop_token_ids`` end the reply (kept
    in the output ids); ``logprobs=0`` asks for the sampled token's log-prob only. ``grammar`` is
    returned under the key ``"grammar"`` for :meth:`VLLMSampler._params` to wrap.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be ≥ 1, got {max_tokens}")
    kwargs: dict[str, Any] = {
        "n": 1,
        "temperature": float(temperature),
        "top_p": 1.0,
        "top_k": -1,
        "max_tokens": int(max_tokens),
        "seed": int(seed),
        "stop_token_ids": [int(t) for t in stop_token_ids],
        "logprobs": 0,
        "skip_special_tokens": False,
    }
    if grammar is not None:
        kwargs["grammar"] = grammar
    return kwargs


class VLLMSampler(Sampler):
    """A :class:`rl.sampling.Sampler` whose replies come from a ``vllm.LLM``.

    Args:
        llm: the engine (``trainer.vllm_generation.llm``); anything with vLLM's
            ``generate(prompts, sampling_params=..., use_tqdm=False)`` returning ``RequestOutput``s.
        model: the training model (its config gives the vocabulary size, context limit and stop
            tokens; it is not run).
        tokenizer, max_new_tokens, temperature, constrained, max_string_chars: as the base class.
        params_factory: builds one ``SamplingParams`` from :func:`sampling_params_kwargs`'s dict
            (default: vLLM's own classes, imported on first use).
    """

    reports_logprobs = True

    def __init__(self, llm: Any, model: Any, tokenizer: Any, *, params_factory: Any = None, **kwargs: Any) -> None:
        super().__init__(model, tokenizer, **kwargs)
        self.llm = llm
        self._params_factory = params_factory
        self._grammar_text: dict[str, str] = {}

    def grammar_text(self, tools: list[dict[str, Any]]) -> str:
        """The EBNF text of the one-call grammar over ``tools`` (cached per tool list)."""
        from agents.llm.client import LocalChatClient, call_grammar

        schema = LocalChatClient.call_schema(tools)
        key = json.dumps([self.max_string_chars, schema], sort_keys=True)
        text = self._grammar_text.get(key)
        if text is None:
            text = str(call_grammar(schema, self.max_string_chars, tool_call=True))
            self._grammar_text[key] = text
        return text

    def _params(self, kwargs: dict[str, Any]) -> Any:
        if self._params_factory is not None:
            return self._params_factory(kwargs)
        require("gpu", "vllm", feature="vLLM generation")
        from vllm import SamplingParams

        grammar = kwargs.pop("grammar", None)
        if grammar is not None:
            try:
                from vllm.sampling_params import StructuredOutputsParams

                kwargs["structured_outputs"] = StructuredOutputsParams(grammar=grammar)
            except ImportError:  # vLLM < 0.10
                from vllm.sampling_params import GuidedDecodingParams

                kwargs["guided_decoding"] = GuidedDecodingParams(grammar=grammar)
        return SamplingParams(**kwargs)

    def generate(self, context: list[int], tools: list[dict[str, Any]], seed: int) -> tuple[list[int], bool]:
        """One reply (see :meth:`generate_many`)."""
        sample = self.generate_many([(context, tools, seed)])[0]
        return sample.ids, sample.ended

    def generate_many(self, requests: Sequence[tuple[list[int], list[dict[str, Any]], int]]) -> list[Sample]:
        """All ``(context, tools, seed)`` requests in one ``LLM.generate`` call; replies in order.

        A reply that stopped on a stop token ends with it (vLLM keeps stop token ids in
        ``token_ids``; if a release drops it, the token named by ``stop_reason``, or EOS, is put
        back with log-prob 0.0 so the sequence stays a well-formed chat turn).
        """
        if not requests:
            return []
        prompts = []
        params = []
        for context, tools, seed in requests:
            grammar = self.grammar_text(tools) if (self.constrained and tools) else None
            kwargs = sampling_params_kwargs(
                temperature=self.temperature,
                max_tokens=max(1, self.room(len(context))),
                seed=seed,
                stop_token_ids=self.stop_ids,
                grammar=grammar,
            )
            prompts.append({"prompt_token_ids": list(context)})
            params.append(self._params(kwargs))
        outputs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)
        if len(outputs) != len(requests):
            raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(requests)} prompts")
        samples = []
        for out in outputs:
            comp = out.outputs[0]
            ids = [int(t) for t in comp.token_ids]
            logprobs = _sampled_logprobs(comp, ids)
            ended = comp.finish_reason == "stop"
            if ended and (not ids or ids[-1] not in self.stop_ids):
                stop = comp.stop_reason if isinstance(comp.stop_reason, int) else self.eos_id
                ids.append(int(stop))
                logprobs.append(0.0)
            for i, tok in enumerate(ids):  # nothing the model emits after a stop token counts
                if tok in self.stop_ids:
                    ids, logprobs, ended = ids[: i + 1], logprobs[: i + 1], True
                    break
            samples.append(Sample(ids, ended, logprobs))
        return samples


def _sampled_logprobs(completion: Any, ids: list[int]) -> list[float]:
    """The log-prob vLLM reports for each sampled id (``completion.logprobs`` is one dict per
    position, token id → ``Logprob``); NaN where vLLM gave none (TRL treats NaN as "no correction")."""
    per_position = getattr(completion, "logprobs", None) or []
    out = []
    for i, tok in enumerate(ids):
        entry = per_position[i].get(tok) if i < len(per_position) and per_position[i] is not None else None
        value = getattr(entry, "logprob", entry)
        out.append(float(value) if value is not None else float("nan"))
    return out
