"""Chat clients: an OpenAI-compatible HTTP client and a local ``transformers`` model.

Both implement :class:`phoneenv.llm.ChatClient`: ``chat(messages, tools=..., json_schema=...)``
returns a :class:`~phoneenv.llm.ChatResult` with tool calls (from the API's ``tool_calls`` field
or parsed from Hermes/Qwen ``<tool_call>`` text), thinking kept apart, and token counts.

    >>> client = OpenAIChatClient(base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen3-8B")  # doctest: +SKIP
    >>> client.chat([{"role": "user", "content": "hi"}]).content  # doctest: +SKIP

Infrastructure failures of a served model — connection refused, timeouts, rate limits (429) and
server errors (5xx) — are retried with exponential backoff and jitter (``tenacity``); once the
attempts are spent, or at once for a context overflow or another refusal by the server, they
raise :class:`~phoneenv.llm.InfrastructureError`, which evaluation labels as an infrastructure
error, never as an agent failure.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import openai
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from agents.llm.parsing import parse_reply
from phoneenv.llm import ChatResult, InfrastructureError, TokenUsage

__all__ = ["LocalChatClient", "OpenAIChatClient", "bounded_schema", "thinking_tokens"]

log = logging.getLogger(__name__)

_RETRYABLE = (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError, openai.InternalServerError)
_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "max_model_len",
    "prompt is too long",
)


def _kind(exc: BaseException) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    if isinstance(exc, openai.RateLimitError):
        return "rate_limit"
    if isinstance(exc, openai.InternalServerError):
        return "server_error"
    return "server_refused"


def thinking_tokens(result: ChatResult, output_tokens: int) -> int:
    """Estimate the thinking tokens of a reply whose server reports only a total: the share of
    ``output_tokens`` proportional to the thinking text's length in characters."""
    total = len(result.thinking) + len(result.raw.replace(result.thinking, "", 1)) if result.thinking else 0
    if not result.thinking or total == 0:
        return 0
    return round(output_tokens * len(result.thinking) / total)


def bounded_schema(schema: Any, max_chars: int, max_items: int = 8) -> Any:
    """A copy of ``schema`` whose free strings get ``maxLength=max_chars``, unbounded numbers the
    range ±10⁹ and unbounded arrays ``maxItems=max_items`` (for constrained decoding only;
    validation uses the original schema)."""
    if isinstance(schema, list):
        return [bounded_schema(s, max_chars, max_items) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: bounded_schema(v, max_chars, max_items) for k, v in schema.items()}
    kinds = out.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "string" in kinds and not {"maxLength", "pattern", "enum", "const", "format"} & set(out):
        out["maxLength"] = max_chars
    if ("number" in kinds or "integer" in kinds) and not {"maximum", "exclusiveMaximum", "enum", "const"} & set(out):
        out["maximum"] = 10**9
    if ("number" in kinds or "integer" in kinds) and not {"minimum", "exclusiveMinimum", "enum", "const"} & set(out):
        out["minimum"] = -(10**9)
    if "array" in kinds and "maxItems" not in out:
        out["maxItems"] = max(max_items, out.get("minItems", 0))
    return out


JSON_SEPARATORS = (", ", ": ")
"""Separators of constrained JSON: those of ``json.dumps`` and of chat templates' ``tojson``, so
constrained output looks like the tool calls a model was trained on."""


def call_grammar(schema: dict[str, Any], max_string_chars: int, *, tool_call: bool) -> Any:
    """The uncompiled ``xgrammar.Grammar`` of ``schema`` (bounded with :func:`bounded_schema`):
    JSON with :data:`JSON_SEPARATORS` and no free whitespace, in the schema's property order; with
    ``tool_call``, wrapped in Hermes/Qwen ``<tool_call>…</tool_call>`` tags (a newline allowed
    inside each tag), the format chat templates render tool calls in. ``str()`` of it is the
    grammar's EBNF text, which is what vLLM's ``StructuredOutputsParams(grammar=...)`` takes."""
    import xgrammar as xgr

    text = json.dumps(bounded_schema(schema, max_string_chars))
    body = xgr.Grammar.from_json_schema(text, any_whitespace=False, separators=JSON_SEPARATORS)
    if tool_call:
        body = xgr.Grammar.concat(
            xgr.Grammar.from_ebnf('root ::= "<tool_call>" "\\n"?'),
            body,
            xgr.Grammar.from_ebnf('root ::= "\\n"? "</tool_call>"'),
        )
    return body


def compile_grammar(compiler: Any, schema: dict[str, Any], max_string_chars: int, *, tool_call: bool) -> Any:
    """:func:`call_grammar` compiled by ``compiler`` (an ``xgrammar.GrammarCompiler``)."""
    return compiler.compile_grammar(call_grammar(schema, max_string_chars, tool_call=tool_call))


class OpenAIChatClient:
    """A model served behind an OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM's
    ``vllm serve``, ``transformers serve``, OpenAI).

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        model: the model name the server expects.
        api_key: bearer token (default ``$OPENAI_API_KEY`` or ``"none"`` for local servers).
        timeout: seconds per request.
        max_attempts: tries per request for retryable failures (≥ 1).
        backoff_max: longest wait between tries, seconds (exponential with jitter from 0.5 s).
        temperature: sampling temperature (0: greedy).
        structured_output: send ``response_format={"type": "json_schema", ...}`` when a
            ``json_schema`` is asked for; turned off for the client's life if the server refuses it.
        extra_body: extra JSON fields for every request (server-specific options such as vLLM's
            ``chat_template_kwargs``).

    Raises (from :meth:`chat`): :class:`~phoneenv.llm.InfrastructureError`.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_attempts: int = 4,
        backoff_max: float = 8.0,
        temperature: float = 0.0,
        structured_output: bool = True,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.extra_body = extra_body
        self.temperature = temperature
        self.structured_output = structured_output
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "none",
            timeout=timeout,
            max_retries=0,
        )
        self._retrying = Retrying(
            retry=retry_if_exception_type(_RETRYABLE),
            wait=wait_exponential_jitter(multiplier=0.5, max=backoff_max, jitter=0.5),
            stop=stop_after_attempt(max(1, max_attempts)),
            reraise=True,
        )

    def _create(self, **kwargs: Any) -> Any:
        try:
            return self._retrying(self._client.chat.completions.create, **kwargs)
        except _RETRYABLE as exc:
            raise InfrastructureError(f"model server failed after retries: {exc}", kind=_kind(exc)) from exc
        except openai.BadRequestError as exc:
            text = str(exc).lower()
            if any(w in text for w in _CONTEXT_WORDS):
                raise InfrastructureError(f"context overflow: {exc}", kind="context_overflow") from exc
            raise
        except openai.APIStatusError as exc:
            raise InfrastructureError(
                f"model server refused the request ({exc.status_code}): {exc}", kind="server_refused"
            ) from exc

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatResult:
        """One chat completion. See the class docstring for the errors raised."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": self.temperature,
        }
        if tools:
            kwargs["tools"] = tools
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        if json_schema is not None and self.structured_output:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "result", "schema": json_schema},
            }
        try:
            resp = self._create(**kwargs)
        except openai.BadRequestError as exc:
            if "response_format" not in kwargs:
                raise InfrastructureError(f"model server rejected the request: {exc}", kind="server_refused") from exc
            log.warning("server refused response_format; validating JSON replies without it: %s", exc)
            self.structured_output = False
            kwargs.pop("response_format")
            try:
                resp = self._create(**kwargs)
            except openai.BadRequestError as exc2:
                raise InfrastructureError(f"model server rejected the request: {exc2}", kind="server_refused") from exc2
        if not resp.choices:
            raise InfrastructureError("model server returned no choices", kind="server_error")
        msg = resp.choices[0].message
        text = msg.content or ""
        reasoning = getattr(msg, "reasoning_content", None) or getattr(msg, "reasoning", None)
        result = parse_reply(text, msg.tool_calls or None)
        if reasoning:
            result.thinking = (reasoning + ("\n" + result.thinking if result.thinking else "")).strip()
        usage = getattr(resp, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        output = int(getattr(usage, "completion_tokens", 0) or 0)
        details = getattr(usage, "completion_tokens_details", None)
        reported = getattr(details, "reasoning_tokens", None) if details is not None else None
        result.usage = TokenUsage(prompt, output, int(reported) if reported else thinking_tokens(result, output))
        return result


class LocalChatClient:
    """A local ``transformers`` causal LM with JSON-Schema-constrained decoding.

    Tool calls: when ``tools`` are given and ``constrained`` is on, generation is constrained
    (xgrammar) to one JSON object ``{"name": <tool>, "arguments": <that tool's parameters>}``, so
    even a tiny random model emits schema-valid calls; the reply is then parsed like any other.
    Simulated results: ``json_schema`` constrains generation to that schema. xgrammar is chosen
    because vLLM and SGLang use it for structured output, so the same grammars run on the GPU
    serving path; it compiles JSON Schema to token masks once and applies them on CPU or GPU.

    Args:
        model_path: a folder saved with ``save_pretrained`` (model, tokenizer, chat template).
        device: torch device string.
        constrained: constrain tool calls and JSON replies with xgrammar.
        temperature: 0 for greedy decoding.
        seed: torch seed for sampling.
        max_string_chars: bound the grammar puts on free strings (no length, pattern or enum in
            the schema), so a weak model cannot loop inside a string until the token budget ends;
            JSON whitespace is not free either (compact JSON only).

    Raises:
        OSError: the folder holds no model. From :meth:`chat`: InfrastructureError when the
        prompt is longer than the model's context (``context_overflow``).
    """

    def __init__(
        self,
        model_path: str,
        *,
        device: str = "cpu",
        constrained: bool = True,
        temperature: float = 0.0,
        seed: int = 0,
        max_string_chars: int = 120,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = str(model_path)
        self.device = device
        self.constrained = constrained
        self.temperature = temperature
        self.seed = seed
        self.max_string_chars = max_string_chars
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.lm = AutoModelForCausalLM.from_pretrained(model_path).to(device).eval()
        self._torch = torch
        self._compiler: Any = None
        self._grammars: dict[str, Any] = {}

    def _grammar(self, schema: dict[str, Any], tool_call: bool) -> Any:
        import xgrammar as xgr

        key = json.dumps([tool_call, schema], sort_keys=True)
        if key not in self._grammars:
            if self._compiler is None:
                info = xgr.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=self.lm.config.vocab_size)
                self._compiler = xgr.GrammarCompiler(info)
            self._grammars[key] = compile_grammar(self._compiler, schema, self.max_string_chars, tool_call=tool_call)
        return self._grammars[key]

    @staticmethod
    def call_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The JSON Schema of one call of any of ``tools`` (OpenAI format)."""
        options = []
        for t in tools:
            fn = t["function"]
            options.append(
                {
                    "type": "object",
                    "properties": {
                        "name": {"const": fn["name"]},
                        "arguments": fn.get("parameters", {"type": "object"}),
                    },
                    "required": ["name", "arguments"],
                    "additionalProperties": False,
                }
            )
        return {"anyOf": options}

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatResult:
        """Generate one reply (greedy unless ``temperature`` > 0)."""
        torch = self._torch
        enc = self.tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        input_ids = enc["input_ids"].to(self.device)
        limit = getattr(self.lm.config, "max_position_embeddings", None)
        if limit is not None and input_ids.shape[1] + 1 > limit:
            raise InfrastructureError(
                f"prompt of {input_ids.shape[1]} tokens exceeds the context of {limit}", kind="context_overflow"
            )
        if limit is not None:
            max_tokens = min(max_tokens, limit - input_ids.shape[1])
        processors = []
        schema = json_schema if json_schema is not None else (self.call_schema(tools) if tools else None)
        if self.constrained and schema is not None:
            import xgrammar as xgr

            processors.append(xgr.contrib.hf.LogitsProcessor(self._grammar(schema, tool_call=json_schema is None)))
        torch.manual_seed(self.seed)
        with torch.no_grad():
            out = self.lm.generate(
                input_ids=input_ids,
                attention_mask=enc.get("attention_mask", torch.ones_like(input_ids)).to(self.device),
                max_new_tokens=max_tokens,
                do_sample=self.temperature > 0,
                temperature=self.temperature if self.temperature > 0 else None,
                logits_processor=processors or None,
                pad_token_id=self.tokenizer.pad_token_id
                if self.tokenizer.pad_token_id is not None
                else self.tokenizer.eos_token_id,
            )
        new = out[0, input_ids.shape[1] :]
        text = self.tokenizer.decode(new, skip_special_tokens=False)
        for tok in (self.tokenizer.eos_token, self.tokenizer.pad_token):
            if tok:
                text = text.split(tok)[0] if tok in text else text
        result = parse_reply(text)
        think = len(self.tokenizer(result.thinking, add_special_tokens=False)["input_ids"]) if result.thinking else 0
        result.usage = TokenUsage(int(input_ids.shape[1]), int(new.shape[0]), think)
        return result
