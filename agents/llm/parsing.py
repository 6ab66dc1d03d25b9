"""Parsing model replies into thinking, visible text and tool calls.

Two sources of tool calls are understood:

* text in the **Hermes function-calling format**, which Qwen2.5 and Qwen3 chat templates use (Qwen's
  ``<tool_call>`` convention): each call is one JSON object between ``<tool_call>`` and
  ``</tool_call>`` tags, e.g. ``<tool_call>\\n{"name": "messages.send", "arguments": {...}}\\n</tool_call>``;
* the ``tool_calls`` field of an OpenAI chat completion message (``[{"id", "type": "function",
  "function": {"name", "arguments": "<JSON string>"}}]``).

Thinking is text inside ``<think>…</think>`` (Qwen3, DeepSeek-R1 and other reasoning models).

Every parsed call has the shape ``{"id": str, "name": str, "arguments": dict}``; segments that look
like calls but do not parse become human-readable error strings instead of being dropped silently.
Names are returned as the model wrote them; :func:`call_names_from_api` maps OpenAI-safe names
(``messages__send``) back to the dotted form.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from phoneenv.llm import ChatResult

__all__ = ["call_names_from_api", "parse_api_tool_calls", "parse_reply", "parse_tool_calls", "split_thinking"]

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"

_SNIPPET = 200
# A whole reply wrapped in one Markdown code fence: ```json ... ``` or ``` ... ```.
_FENCE = re.compile(r"\A```[A-Za-z0-9_+-]*[ \t]*\n?(.*?)\n?[ \t]*```\Z", re.DOTALL)
# Keys a bare (untagged) JSON object may have and still be read as a tool call.
_BARE_CALL_KEYS = frozenset({"name", "arguments", "parameters", "id", "type", "function"})


def split_thinking(text: str) -> tuple[str, str]:
    """Split a reply into ``(thinking, visible)``.

    Formats accepted:

    * any number of ``<think>…</think>`` segments anywhere in the text;
    * a reply that starts inside thinking and only closes it (``…</think>answer``), as Qwen3 chat
      templates put the opening ``<think>`` in the prompt: everything before the first
      ``</think>`` is thinking;
    * an unclosed ``<think>`` (the model ran out of tokens while thinking): everything after it is
      thinking.

    Thinking segments are stripped, empty ones dropped, and the rest joined with ``"\\n"``. Visible
    text is the text outside thinking, concatenated and stripped; stray ``</think>`` tags in it
    are removed.

    >>> split_thinking("<think>Ana is the sister.</think>\\nSending now.")
    ('Ana is the sister.', 'Sending now.')
    >>> split_thinking("Need the list first.\\n</think>\\n\\nOK")
    ('Need the list first.', 'OK')
    >>> split_thinking("<think>Let me count: one, two")
    ('Let me count: one, two', '')
    """
    text = text or ""
    thinking: list[str] = []
    visible: list[str] = []
    pos = 0
    first_close = text.find(THINK_CLOSE)
    first_open = text.find(THINK_OPEN)
    if first_close != -1 and (first_open == -1 or first_close < first_open):
        thinking.append(text[:first_close])
        pos = first_close + len(THINK_CLOSE)
    while True:
        start = text.find(THINK_OPEN, pos)
        if start == -1:
            visible.append(text[pos:])
            break
        visible.append(text[pos:start])
        end = text.find(THINK_CLOSE, start + len(THINK_OPEN))
        if end == -1:
            thinking.append(text[start + len(THINK_OPEN) :])
            break
        thinking.append(text[start + len(THINK_OPEN) : end])
        pos = end + len(THINK_CLOSE)
    joined_thinking = "\n".join(part.strip() for part in thinking if part.strip())
    joined_visible = "".join(visible).replace(THINK_CLOSE, "").strip()
    return joined_thinking.strip(), joined_visible


def parse_tool_calls(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Parse Hermes-format tool calls (Qwen's ``<tool_call>`` convention) out of visible text.

    Returns ``(calls, errors)``: calls as ``{"id": "call_<n>", "name": str, "arguments": dict}``
    in the order written (``n`` counts parsed calls from 0), and one human-readable error per
    ``<tool_call>`` block that did not parse.

    Each ``<tool_call>…</tool_call>`` block must hold one JSON object (whitespace and newlines
    around it and a Markdown code fence inside are fine) of one of the shapes:

    * ``{"name": "messages.send", "arguments": {...}}`` (Hermes / Qwen);
    * ``{"name": ..., "parameters": {...}}`` (Llama-3 style);
    * ``{"name": ..., "arguments": "<JSON object as a string>"}`` (decoded);
    * ``{"function": {"name": ..., "arguments": {...} or "<JSON string>"}}`` (OpenAI-like).

    Missing, ``null`` or empty-string arguments mean ``{}``; other keys are ignored. Errors: JSON
    that does not decode (e.g. truncated), a value that is not an object (e.g. an array), a
    missing or non-string name, arguments that are not an object. A final ``<tool_call>`` with
    no ``</tool_call>`` is reported as truncated and never executed, even when its JSON happens
    to be complete (so a server must not use ``</tool_call>`` as a stop sequence that it strips).

    Without any ``<tool_call>`` tag, the whole text (stripped, and unwrapped from one
    ```` ``` ```` or ```` ```json ```` fence) is read as one call when it is exactly one JSON object
    that has a ``"name"`` (or a ``"function"`` object) and no keys beyond ``name``,
    ``arguments``, ``parameters``, ``id``, ``type`` and ``function`` (so that an answer such as
    ``{"name": "Ana", "phone": ...}`` is not taken for a call). Anything else is plain text: no
    calls, no errors.

    >>> parse_tool_calls('<tool_call>\\n{"name": "contacts.search", "arguments": {"query": "Ana"}}\\n</tool_call>')
    ([{'id': 'call_0', 'name': 'contacts.search', 'arguments': {'query': 'Ana'}}], [])
    >>> parse_tool_calls('<tool_call>\\n{"name": "contacts.search", "argu')
    ([], ['tool call block 1 is truncated (no closing </tool_call>): {"name": "contacts.search", "argu'])
    >>> parse_tool_calls('Sure, happy to help!')
    ([], [])
    """
    text = text or ""
    calls: list[dict[str, Any]] = []
    errors: list[str] = []
    if CALL_OPEN not in text:
        obj = _bare_json_object(text)
        if obj is not None and _looks_like_bare_call(obj):
            call, error = _normalize_call(obj, f"call_{len(calls)}")
            if call is not None:
                calls.append(call)
            else:
                errors.append(f"tool call (bare JSON) {error}")
        return calls, errors

    for index, (body, closed) in enumerate(_call_blocks(text), start=1):
        if not closed:
            errors.append(f"tool call block {index} is truncated (no closing {CALL_CLOSE}): {_snippet(body)}")
            continue
        try:
            obj = json.loads(_unfence(body.strip()))
        except json.JSONDecodeError as exc:
            errors.append(f"tool call block {index} is not valid JSON ({exc}): {_snippet(body)}")
            continue
        call, error = _normalize_call(obj, f"call_{len(calls)}")
        if call is None:
            errors.append(f"tool call block {index} {error}: {_snippet(body)}")
        else:
            calls.append(call)
    return calls, errors


def parse_api_tool_calls(tool_calls: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Parse the ``tool_calls`` field of an OpenAI chat completion message.

    Accepts a list (or ``None``) of ``openai`` SDK objects or plain dicts of the shape
    ``{"id": "call_abc", "type": "function", "function": {"name": "messages__send",
    "arguments": "{\\"to\\": \\"Ana\\"}"}}``. ``arguments`` is a JSON string encoding an object
    (an already-decoded dict, ``null`` or ``""`` — meaning ``{}`` — are accepted too).

    Returns ``(calls, errors)`` like :func:`parse_tool_calls`: ``{"id", "name", "arguments"}``
    with the API's id (``call_<n>`` when it has none), and one error per entry whose function or
    name is missing or whose arguments are not a JSON object. Names are kept as sent (see
    :func:`call_names_from_api`).

    >>> from types import SimpleNamespace as NS
    >>> parse_api_tool_calls([NS(id="call_9", function=NS(name="clock__now", arguments="{}"))])
    ([{'id': 'call_9', 'name': 'clock__now', 'arguments': {}}], [])
    >>> parse_api_tool_calls([{"id": "c1", "function": {"name": "x", "arguments": "{bad"}}])[1]
    ["API tool call 1 (id c1, x): arguments are not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)): '{bad'"]
    """
    calls: list[dict[str, Any]] = []
    errors: list[str] = []
    for index, entry in enumerate(tool_calls or [], start=1):
        call_id = _field(entry, "id")
        function = _field(entry, "function")
        name = _field(function, "name") if function is not None else None
        label = f"API tool call {index} (id {call_id}, {name})"
        if function is None:
            errors.append(f"API tool call {index} (id {call_id}) has no function")
            continue
        if not isinstance(name, str) or not name:
            errors.append(f"{label}: missing function name")
            continue
        raw_args = _field(function, "arguments")
        if isinstance(raw_args, str):
            if not raw_args.strip():
                arguments: Any = {}
            else:
                try:
                    arguments = json.loads(raw_args)
                except json.JSONDecodeError as exc:
                    errors.append(f"{label}: arguments are not valid JSON ({exc}): {_snippet(raw_args)!r}")
                    continue
        else:
            arguments = {} if raw_args is None else raw_args
        if not isinstance(arguments, Mapping):
            errors.append(f"{label}: arguments are a JSON {_json_type(arguments)}, not an object")
            continue
        ident = call_id if isinstance(call_id, str) and call_id else f"call_{len(calls)}"
        calls.append({"id": ident, "name": name, "arguments": dict(arguments)})
    return calls, errors


def parse_reply(text: str, api_tool_calls: Any = None) -> ChatResult:
    """Turn one model reply into a :class:`~phoneenv.llm.ChatResult` (``usage`` left at zero).

    ``text`` is the reply's text (``None`` counts as ``""``), in which thinking is split off
    with :func:`split_thinking`. Tool calls come from ``api_tool_calls`` (the OpenAI message's
    ``tool_calls``, via :func:`parse_api_tool_calls`) when that is a non-empty list; otherwise
    from the visible text in the Hermes / Qwen ``<tool_call>`` format via
    :func:`parse_tool_calls`. ``content`` is the visible text with every ``<tool_call>`` block
    (and a final unclosed one) removed, stripped; when the whole visible text was one bare JSON
    call, ``content`` is ``""``. ``raw`` is ``text`` unchanged.

    >>> r = parse_reply('<think>Find Ana.</think>\\n<tool_call>\\n{"name": "contacts.search", '
    ...                 '"arguments": {"query": "Ana"}}\\n</tool_call>')
    >>> (r.thinking, r.content, r.tool_calls, r.parse_errors)
    ('Find Ana.', '', [{'id': 'call_0', 'name': 'contacts.search', 'arguments': {'query': 'Ana'}}], [])
    """
    raw = text or ""
    thinking, visible = split_thinking(raw)
    content = _strip_call_blocks(visible)
    if api_tool_calls:
        calls, errors = parse_api_tool_calls(api_tool_calls)
    else:
        calls, errors = parse_tool_calls(visible)
        if calls and CALL_OPEN not in visible:
            content = ""
    return ChatResult(content=content, thinking=thinking, tool_calls=calls, parse_errors=errors, raw=raw)


def call_names_from_api(name: str) -> str:
    """Map an OpenAI-safe tool name back to the dotted name: ``__`` becomes ``.``.

    OpenAI's API allows only ``[a-zA-Z0-9_-]`` in function names, so planners render
    ``messages.send`` as ``messages__send`` (``ToolSpec.to_openai(name_style="underscore")``).
    The env accepts both; traces should show the dotted one. Dotted names pass through.

    >>> call_names_from_api("messages__send")
    'messages.send'
    >>> call_names_from_api("messages.send")
    'messages.send'
    """
    return name.replace("__", ".")


# --------------------------------------------------------------------------------------- helpers


def _call_blocks(text: str) -> list[tuple[str, bool]]:
    """``(body, closed)`` for each ``<tool_call>`` block, in order.

    A block runs to the next ``</tool_call>``. When its body does not decode and holds another
    ``<tool_call>``, the part before that is an unclosed block and scanning resumes there (a
    ``<tool_call>`` inside a JSON string value is left alone when the body decodes).
    """
    blocks: list[tuple[str, bool]] = []
    pos = text.find(CALL_OPEN)
    while pos != -1:
        start = pos + len(CALL_OPEN)
        end = text.find(CALL_CLOSE, start)
        if end == -1:
            body = text[start:]
            inner = body.find(CALL_OPEN)
            if inner == -1:
                blocks.append((body, False))
                break
            blocks.append((body[:inner], False))
            pos = start + inner
            continue
        body = text[start:end]
        inner = body.find(CALL_OPEN)
        if inner != -1 and not _decodes(body):
            blocks.append((body[:inner], False))
            pos = start + inner
            continue
        blocks.append((body, True))
        pos = text.find(CALL_OPEN, end + len(CALL_CLOSE))
    return blocks


def _strip_call_blocks(text: str) -> str:
    """``text`` without its ``<tool_call>`` blocks (an unclosed one runs to the end) and stray
    ``</tool_call>`` tags, stripped."""
    out: list[str] = []
    pos = 0
    while True:
        start = text.find(CALL_OPEN, pos)
        if start == -1:
            out.append(text[pos:])
            break
        out.append(text[pos:start])
        end = text.find(CALL_CLOSE, start + len(CALL_OPEN))
        if end == -1:
            break
        pos = end + len(CALL_CLOSE)
    return "".join(out).replace(CALL_CLOSE, "").strip()


def _normalize_call(obj: Any, default_id: str) -> tuple[dict[str, Any] | None, str]:
    """``(call, "")`` for an accepted call object, else ``(None, reason)``."""
    if not isinstance(obj, dict):
        return None, f"is a JSON {_json_type(obj)}, not an object"
    if "name" not in obj and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return None, 'has no "name" string'
    arguments = obj["arguments"] if "arguments" in obj else obj.get("parameters")
    if isinstance(arguments, str):
        if not arguments.strip():
            arguments = {}
        else:
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                return None, f"({name}) has arguments as a string that is not valid JSON ({exc})"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return None, f"({name}) has arguments that are a JSON {_json_type(arguments)}, not an object"
    return {"id": default_id, "name": name.strip(), "arguments": arguments}, ""


def _bare_json_object(text: str) -> Any:
    """The JSON value that ``text`` (stripped, unfenced) is exactly, or None."""
    body = _unfence(text.strip())
    if not body.startswith("{"):
        return None
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        return None


def _looks_like_bare_call(obj: Any) -> bool:
    if not isinstance(obj, dict) or not set(obj) <= _BARE_CALL_KEYS:
        return False
    return "name" in obj or isinstance(obj.get("function"), dict)


def _unfence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1).strip() if match else text


def _decodes(body: str) -> bool:
    try:
        json.loads(_unfence(body.strip()))
    except json.JSONDecodeError:
        return False
    return True


def _field(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return type(value).__name__


def _snippet(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "…"
