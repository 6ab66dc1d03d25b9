"""Chat clients: an OpenAI-compatible HTTP client and a local ``transformers`` model.

Both implement :class:`phoneenv.llm.ChatClient`: ``chat(messages, tools=..., json_schema=...)``
returns a :class:`~phoneenv.llm.ChatResult` with tool calls (from the API's ``tool_calls`` field
or parsed from Hermes/Qwen ``<tool_call>`` text), thinking kept apart, and token counts.

    >>> client = OpenAIChatClient(base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen3-8B")  # doctest: +SKIP
    >>> client.chat([{"role": "user", "content": "hi"}]).content  # doctest: +SKIP

Infrastructure failures of a served model are retried with exponential backoff and jitter
(``tenacity``), on the statuses the ``openai`` SDK itself retries: connection errors (refused,
reset, a body cut off), timeouts, 408, 409, rate limits (429) and server errors (5xx); and
responses that are not a chat completion: a 200 whose body is not JSON (an HTML error page, a
stream sent to a plain request, a truncated body), JSON without ``choices``, a choice without a
``message``, content or tool calls of the wrong type. Once the attempts are spent, or at once for
a context overflow or another refusal by the server (4xx), they raise
:class:`~phoneenv.llm.InfrastructureError` with a ``kind`` (see :data:`RETRYABLE_KINDS`), which
evaluation labels as an infrastructure error of that episode, never as an agent failure.

The client does not stream: a server that answers with ``text/event-stream`` (whole or cut off)
sends a body that is not a completion, which counts as ``malformed_response``.
"""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import math
import os
import re
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator
from tenacity import AsyncRetrying, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from agents.llm.parsing import parse_reply
from phoneenv.errors import PhoneEnvError
from phoneenv.extras import needs, require
from phoneenv.llm import ChatResult, InfrastructureError, TokenUsage

with needs("llm", feature="An LLM planner or simulator (agents.llm.client)"):
    import openai

__all__ = [
    "RETRYABLE_KINDS",
    "LocalChatClient",
    "MalformedResponse",
    "OpenAIChatClient",
    "bounded_schema",
    "thinking_tokens",
    "unparsed_tool_call",
]

log = logging.getLogger(__name__)

RETRYABLE_KINDS = ("connection", "timeout", "rate_limit", "server_error", "malformed_response")
"""Kinds of :class:`~phoneenv.llm.InfrastructureError` that :class:`OpenAIChatClient` retries
before raising; ``context_overflow`` and ``server_refused`` are raised at the first try."""

_RETRY_STATUSES = (408, 409, 429)  # and every status >= 500: the openai SDK's own retry policy
_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "max_model_len",
    "prompt is too long",
)
# A server that parses tool calls itself refuses a reply whose call it cannot parse: `transformers
# serve` 5.25 answers HTTP 400 {"detail": "json parser could not parse region as JSON.\nContent:
# <repr of the region>\nError: <why>"}. The model wrote that reply, so it is the planner's bad output.
_UNPARSED_CALL = re.compile(r"could not parse\b.*?\bjson\b", re.IGNORECASE | re.DOTALL)
_UNPARSED_REGION = re.compile(r"Content: (?P<region>'.*'|\".*\")\nError:", re.DOTALL)
_ENV_TIMEOUT = "PHONEENV_LLM_TIMEOUT"
_ENV_MAX_ATTEMPTS = "PHONEENV_LLM_MAX_ATTEMPTS"
_ENV_BACKOFF_MAX = "PHONEENV_LLM_BACKOFF_MAX"


class MalformedResponse(openai.OpenAIError, PhoneEnvError):
    """A model server answered 2xx with a body that is not a chat completion. ``status`` and
    ``content_type`` are the response's; the message names what is wrong without quoting the
    body past a short start."""

    def __init__(self, message: str, status: int, content_type: str) -> None:
        super().__init__(message)
        self.status = status
        self.content_type = content_type


class _Message(BaseModel):
    """The fields of a chat completion message the client reads (others are ignored)."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    reasoning_content: Any = None
    reasoning: Any = None


class _Choice(BaseModel):
    message: _Message


def _count(value: Any) -> int | None:
    """A token count a server reported: a whole number >= 0, else unknown (None, logged): a
    negative or non-numeric count must not reach verdicts and scoreboards."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        log.warning("the server reported a token count of %r; counted as unknown", value)
        return None
    return value


class _TokenDetails(BaseModel):
    reasoning_tokens: int | None = None

    _check = field_validator("reasoning_tokens", mode="before")(lambda v: _count(v))


class _Usage(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    completion_tokens_details: _TokenDetails | None = None

    _check = field_validator("prompt_tokens", "completion_tokens", mode="before")(lambda v: _count(v))


class _Completion(BaseModel):
    """A chat completion as far as the client relies on it: at least one choice with a message."""

    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage | None = None


def _parse_completion(raw: Any) -> _Completion:
    """Validate the body of ``raw`` (the SDK's raw response) as a chat completion; raise
    :class:`MalformedResponse` when it is not one (not JSON, no choices, wrong types)."""
    body: bytes = raw.content
    content_type = raw.headers.get("content-type", "")
    try:
        return _Completion.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        start = body[:60].decode("utf-8", "replace")
        raise MalformedResponse(
            f"model server answered {raw.status_code} with a body that is not a chat completion "
            f"({content_type or 'no content type'}, {len(body)} bytes; {where}: {first['msg']}); "
            f"it starts {start!r}",
            raw.status_code,
            content_type,
        ) from None


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, (openai.APIConnectionError, MalformedResponse, openai.APIResponseValidationError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRY_STATUSES or exc.status_code >= 500
    return False


def _kind(exc: BaseException) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    if isinstance(exc, (MalformedResponse, openai.APIResponseValidationError)):
        return "malformed_response"
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429:
            return "rate_limit"
        if exc.status_code == 408:
            return "timeout"
        if exc.status_code >= 500 or exc.status_code == 409:
            return "server_error"
    return "server_refused"


def unparsed_tool_call(exc: openai.APIStatusError, offered_tools: bool) -> ChatResult | None:
    """The model's reply as a :class:`~phoneenv.llm.ChatResult` when ``exc`` is a server refusing
    to return a tool call it could not parse (``offered_tools``: the request offered tools), else
    None. The result has no tool calls, ``parse_errors`` = [the server's message], ``raw`` = the
    unparsed region the server quotes (or the message) and zero token counts (the refusal carries
    no usage). The planner then sends that text as its action and the episode scores it as the
    agent's invalid reply, as for a model served in process, instead of an infrastructure error."""
    if not offered_tools:
        return None
    body = exc.body  # the SDK's parse of the error body: its "error" object, else the whole JSON
    message = str((body.get("detail") or body.get("message") or body) if isinstance(body, dict) else body)
    if not _UNPARSED_CALL.search(message):
        return None
    region = _UNPARSED_REGION.search(message)
    raw = message
    if region:
        try:  # the server quotes the region as Python's repr of a str
            raw = str(ast.literal_eval(region.group("region")))
        except (ValueError, SyntaxError):
            raw = region.group("region")
    return ChatResult(parse_errors=[f"the server could not parse the tool call: {message}"], raw=raw)


def _describe(exc: BaseException) -> str:
    """The SDK's message, plus the transport's reason for connection errors (which the SDK's
    message, ``Connection error.``, leaves out)."""
    cause = exc.__cause__
    if isinstance(exc, openai.APIConnectionError) and cause is not None and str(cause):
        return f"{exc} ({type(cause).__name__}: {cause})"
    return str(exc)


def _setting(value: float | None, env: str, default: float, least: float, *, integer: bool = False) -> float:
    """``value``, else the environment variable ``env``, else ``default``; must be finite and
    ≥ ``least`` (and a whole number with ``integer``). Raises ValueError (naming ``env``) for
    an unreadable, infinite, fractional or too small value."""
    if value is None:
        text = os.environ.get(env, "").strip()
        if not text:
            return default
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{env}={text!r} is not a number") from None
        if not math.isfinite(value) or not value >= least:
            raise ValueError(f"{env}={text!r} must be a finite number of at least {least:g}")
        if integer and not value.is_integer():
            raise ValueError(f"{env}={text!r} must be a whole number")
    return value


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
    require("llm", "xgrammar", feature="Constrained decoding")
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
        timeout: seconds per request (default ``$PHONEENV_LLM_TIMEOUT``, else 60).
        max_attempts: tries per request for retryable failures, ≥ 1 (default
            ``$PHONEENV_LLM_MAX_ATTEMPTS``, else 4).
        backoff_max: longest wait between tries, seconds: exponential from 0.5 s plus up to
            0.5 s of jitter, capped at this (default ``$PHONEENV_LLM_BACKOFF_MAX``, else 8).
        temperature: sampling temperature (0: greedy).
        structured_output: send ``response_format={"type": "json_schema", ...}`` when a
            ``json_schema`` is asked for; turned off for the client's life if the server refuses it.
        extra_body: extra JSON fields for every request (server-specific options such as vLLM's
            ``chat_template_kwargs``).

    The environment variables let ``phoneenv eval --agent llm`` (which builds this client) run
    with another retry policy, e.g. short waits in tests.

    Raises:
        ValueError: a setting taken from the environment is not a number or is too small.
        From :meth:`chat`: :class:`~phoneenv.llm.InfrastructureError` with ``kind`` one of
        :data:`RETRYABLE_KINDS` once ``max_attempts`` tries failed, or ``context_overflow`` /
        ``server_refused`` at once; the server was asked exactly ``max_attempts`` times for a
        retryable failure (twice that when a refused ``response_format`` is dropped and retried).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float | None = None,
        max_attempts: int | None = None,
        backoff_max: float | None = None,
        temperature: float = 0.0,
        structured_output: bool = True,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.extra_body = extra_body
        self.temperature = temperature
        self.structured_output = structured_output
        self.timeout = _setting(timeout, _ENV_TIMEOUT, 60.0, 0.001)
        self.max_attempts = max(1, int(_setting(max_attempts, _ENV_MAX_ATTEMPTS, 4, 1, integer=True)))
        self.backoff_max = _setting(backoff_max, _ENV_BACKOFF_MAX, 8.0, 0.0)
        connection = {
            "base_url": base_url,
            "api_key": api_key or os.environ.get("OPENAI_API_KEY") or "none",
            "timeout": self.timeout,
            "max_retries": 0,
        }
        self._client = openai.OpenAI(**connection)
        self._new_async_client = lambda: openai.AsyncOpenAI(**connection)
        self._async: tuple[asyncio.AbstractEventLoop, openai.AsyncOpenAI] | None = None
        policy: dict[str, Any] = {
            "retry": retry_if_exception(_retryable),
            "wait": wait_exponential_jitter(multiplier=0.5, max=self.backoff_max, jitter=0.5),
            "stop": stop_after_attempt(self.max_attempts),
            "before_sleep": self._log_retry,
            "reraise": True,
        }
        self._retrying = Retrying(**policy)
        self._aretrying = AsyncRetrying(**policy)

    @staticmethod
    def _log_retry(state: Any) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        log.warning("model server try %d failed (%s), retrying: %s", state.attempt_number, _kind(exc), exc)

    def _request(self, **kwargs: Any) -> _Completion:
        raw = self._client.chat.completions.with_raw_response.create(**kwargs)
        return _parse_completion(raw)

    async def _arequest(self, **kwargs: Any) -> _Completion:
        raw = await self._async_client().chat.completions.with_raw_response.create(**kwargs)
        return _parse_completion(raw)

    def _async_client(self) -> openai.AsyncOpenAI:
        """The async SDK client of the running event loop (a new one for each loop: an HTTP
        connection pool belongs to the loop that opened it)."""
        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            self._async = (loop, self._new_async_client())
        return self._async[1]

    async def aclose(self) -> None:
        """Close the async HTTP client of the running event loop, if :meth:`achat` opened one."""
        current, self._async = self._async, None
        if current is not None and current[0] is asyncio.get_running_loop():
            await current[1].close()

    def _failure(self, exc: openai.OpenAIError) -> Exception | None:
        """The :class:`~phoneenv.llm.InfrastructureError` a failed request (retries spent) raises,
        or None for a ``BadRequestError`` that is not a context overflow (the caller decides)
        and for SDK errors that are not the server's."""
        if isinstance(exc, openai.BadRequestError):
            text = str(exc).lower()
            if any(w in text for w in _CONTEXT_WORDS):
                return InfrastructureError(f"context overflow: {exc}", kind="context_overflow")
            return None
        if isinstance(exc, (openai.APIConnectionError, openai.APIStatusError, MalformedResponse)):
            kind = _kind(exc)
            if kind == "server_refused":
                status = getattr(exc, "status_code", "?")
                return InfrastructureError(f"model server refused the request ({status}): {exc}", kind=kind)
            return InfrastructureError(f"model server failed {self._tries()} ({kind}): {_describe(exc)}", kind=kind)
        if isinstance(exc, openai.APIResponseValidationError):
            return InfrastructureError(
                f"model server failed {self._tries()} (malformed_response): {exc}", kind="malformed_response"
            )
        return None

    def _create(self, **kwargs: Any) -> _Completion:
        try:
            return self._retrying(self._request, **kwargs)
        except openai.OpenAIError as exc:
            failure = self._failure(exc)
            if failure is None:
                raise
            raise failure from exc

    async def _acreate(self, **kwargs: Any) -> _Completion:
        try:
            return await self._aretrying(self._arequest, **kwargs)
        except openai.OpenAIError as exc:
            failure = self._failure(exc)
            if failure is None:
                raise
            raise failure from exc

    def _tries(self) -> str:
        return "1 try" if self.max_attempts == 1 else f"{self.max_attempts} tries"

    def _kwargs(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        json_schema: dict[str, Any] | None,
        max_tokens: int,
    ) -> dict[str, Any]:
        """The request's arguments for the SDK's ``chat.completions.create``.

        The messages and tools travel in ``extra_body``, which the SDK sends as they are and lets
        take precedence over the typed arguments (``messages=[]`` only satisfies the signature):
        the SDK's transform of typed arguments walks every message and every tool's JSON Schema
        on each request (42 ms for the 257 tools of a sub-agent task here, half of a concurrent
        eval's CPU) and returns plain JSON unchanged, so the request's JSON is the same."""
        body: dict[str, Any] = {"messages": messages}
        if tools:
            body["tools"] = tools
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [],
            "max_tokens": max_tokens,
            "temperature": self.temperature,
            "extra_body": {**(self.extra_body or {}), **body},
        }
        if json_schema is not None and self.structured_output:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "result", "schema": json_schema},
            }
        return kwargs

    def _refused(self, exc: openai.BadRequestError, kwargs: dict[str, Any]) -> None:
        """A 400 to ``kwargs``: raise it as ``server_refused``, unless it carried
        ``response_format``, which is then dropped for the client's life (the caller asks again)."""
        if "response_format" not in kwargs:
            raise InfrastructureError(f"model server rejected the request: {exc}", kind="server_refused") from exc
        log.warning("server refused response_format; validating JSON replies without it: %s", exc)
        self.structured_output = False
        kwargs.pop("response_format")

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatResult:
        """One chat completion. See the class docstring for the errors raised."""
        kwargs = self._kwargs(messages, tools, json_schema, max_tokens)
        try:
            resp = self._create(**kwargs)
        except openai.BadRequestError as exc:
            unparsed = unparsed_tool_call(exc, bool(tools))
            if unparsed is not None:
                return unparsed
            self._refused(exc, kwargs)
            try:
                resp = self._create(**kwargs)
            except openai.BadRequestError as exc2:
                raise InfrastructureError(f"model server rejected the request: {exc2}", kind="server_refused") from exc2
        return _result(resp)

    async def achat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatResult:
        """:meth:`chat` as a coroutine, over the SDK's ``AsyncOpenAI`` (one per event loop; close
        it with :meth:`aclose`): the same request, retries (tenacity's ``AsyncRetrying``, same
        policy), timeouts, errors and result, so many calls can wait on the server at once."""
        kwargs = self._kwargs(messages, tools, json_schema, max_tokens)
        try:
            resp = await self._acreate(**kwargs)
        except openai.BadRequestError as exc:
            unparsed = unparsed_tool_call(exc, bool(tools))
            if unparsed is not None:
                return unparsed
            self._refused(exc, kwargs)
            try:
                resp = await self._acreate(**kwargs)
            except openai.BadRequestError as exc2:
                raise InfrastructureError(f"model server rejected the request: {exc2}", kind="server_refused") from exc2
        return _result(resp)


def _result(resp: _Completion) -> ChatResult:
    """A validated completion as a :class:`~phoneenv.llm.ChatResult`: the reply parsed (tool
    calls, thinking kept apart), the server's reasoning field joined to the thinking, and token
    counts (thinking estimated from text length when the server reports only a total)."""
    msg = resp.choices[0].message
    reasoning = next((r for r in (msg.reasoning_content, msg.reasoning) if isinstance(r, str) and r), None)
    result = parse_reply(msg.content or "", msg.tool_calls or None)
    if reasoning:
        result.thinking = (reasoning + ("\n" + result.thinking if result.thinking else "")).strip()
    usage = resp.usage or _Usage()
    prompt = usage.prompt_tokens or 0
    output = usage.completion_tokens or 0
    details = usage.completion_tokens_details
    reported = details.reasoning_tokens if details is not None else None
    result.usage = TokenUsage(prompt, output, reported if reported else thinking_tokens(result, output))
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
        modules = ("torch", "transformers", "xgrammar") if constrained else ("torch", "transformers")
        require("llm", *modules, feature="A local model (LocalChatClient)")
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
        """The JSON Schema of one call of any of ``tools`` (OpenAI format). A tool the env
        offered brings its full parameters schema (:func:`phoneenv.sharing.full_parameters`:
        the patterns and bounds the compact rendering leaves out of the prompt), so a grammar
        built from it emits no call that validation refuses; other tools their ``parameters``."""
        from phoneenv.sharing import full_parameters

        options = []
        for t in tools:
            fn = t["function"]
            params = fn.get("parameters", {"type": "object"})
            full = full_parameters(params)
            options.append(
                {
                    "type": "object",
                    "properties": {
                        "name": {"const": fn["name"]},
                        "arguments": full if full is not None else params,
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
