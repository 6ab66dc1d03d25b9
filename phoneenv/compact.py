"""The compact rendering of tool specs for a model (the OpenAI ``tools`` format): what a model
needs to choose and call a tool (names, types, enums, ``required``, non-null defaults,
descriptions on one line), without the limits that validation enforces and reports anyway.
Used by :meth:`phoneenv.contract.ToolSpec.to_openai`; :func:`tool_text` is what a chat
template writes for one offered tool (a TypeScript-like declaration). Depends on nothing else of phoneenv."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "LIMIT_KEYWORDS",
    "compact_description",
    "compact_parameters",
    "compact_text",
    "tool_text",
]

INT_MIN = -(2**63)
"""Smallest integer a tool parameter accepts unless it declares its own bound (SQLite's INTEGER)."""
INT_MAX = 2**63 - 1
"""Largest integer a tool parameter accepts unless it declares its own bound (SQLite's INTEGER)."""


# -- compact rendering (the OpenAI ``tools`` format) -------------------------------------------------

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_ONE = ("items", "not", "additionalProperties", "contains", "propertyNames")
_SUBSCHEMA_MAPS = ("properties", "$defs", "patternProperties")

LIMIT_KEYWORDS = frozenset(
    {
        "pattern",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
    }
)
"""Keywords the rendering leaves out: limits on a value of the right type (a string's pattern and
length, an array's length, a number's bounds). The env validates every call against the full
schema and reports a value past one as an ``invalid_arguments`` feedback naming the argument
(``path``) and the limit; the formats a model must write (``YYYY-MM-DD``, ``HH:MM``) are in the
parameters' descriptions."""


def compact_text(text: str) -> str:
    """``text`` with every run of whitespace (docstring line breaks) as one space."""
    return " ".join(text.split())


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema == {"type": "null"}


_JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool}
_ID_EXAMPLE = re.compile(r',? \(?e\.g\. "[a-z]+_\d+"\)?')
_WORDS = re.compile(r"[a-z0-9]+")
_FILLER = frozenset(
    {"the", "a", "an", "s", "of", "its", "this", "new", "id", "name", "one", "only", "to", "or", "and", "by"}
)
_BOILERPLATE = re.compile(r" \(case-insensitive\)|(?<=\()case-insensitive; |,? case-insensitive(?=;)")
"""Phrases that many descriptions repeat and no call depends on: every search and name match of
the apps ignores case."""
_SWITCH = re.compile(r"(?i)(true|false) (?:to|for) [^,;:()]+, (?!\1)(?:true|false) (?:to|for) [^,;:()]+\.?")
"""A boolean's description that only says what each value does (``"True to pin, false to
unpin."``): the parameter's name says it."""
_SAID_BY_NAME = {
    "limit": re.compile(r"(?i)(?:maximum number|at most this many)(?: of [a-z]+)? (?:returned|results)\.?"),
    "offset": re.compile(r"(?i)number of [a-z]+ to skip\.?"),
    "qty": re.compile(r"(?i)how many\.?"),
}
"""Descriptions that a common parameter name says by itself (``limit``: ``"Maximum number of
notes returned."``)."""


def compact_description(text: str) -> str:
    """A description as offered to a model: one line (:func:`compact_text`), without the phrases
    of :data:`_BOILERPLATE` and without the full stop that ends it (the closing quote does)."""
    text = _BOILERPLATE.sub("", compact_text(text))
    return text[:-1] if text.endswith(".") and not text.endswith("..") else text


def _said(text: str, filler: frozenset[str] = frozenset()) -> set[str]:
    """The words of ``text`` (lower case; ``_`` and punctuation split them) but ``filler``, each
    without a plural's ``s``."""
    words = set(_WORDS.findall(text.lower())) - filler
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words}


def _restates(name: str, description: str, context: str = "") -> bool:
    """True when ``description`` says nothing beyond the parameter's name (``"The note's id."``
    for ``note_id``, ``"New title."`` for ``title``, ``"The number to block."`` for ``number`` of
    ``phone.block_number``): every word of it is a word of the name, of ``context`` (the tool's
    name, the values of the parameter's enum) or a filler word."""
    return _said(description, _FILLER) <= _said(f"{name} {context}")


def _alternatives(node: dict[str, Any]) -> list[dict[str, Any]]:
    """``node`` and the schemas of its values: its ``anyOf`` branches, and their ``items``."""
    out = [node, *(b for b in node.get("anyOf") or () if isinstance(b, dict))]
    return out + [n["items"] for n in out if isinstance(n.get("items"), dict)]


def _said_by_name(name: str, description: str, node: dict[str, Any], tool: str) -> bool:
    """True when a property's description adds nothing a model needs to the property's name and
    schema and the tool's name: it restates them (:func:`_restates`; the values of its enum count
    as said), it is a boolean's ``"True to pin, false to unpin."`` (:data:`_SWITCH`), or a
    common name's stock phrase (:data:`_SAID_BY_NAME`)."""
    kinds = _alternatives(node)
    values = " ".join(str(v) for n in kinds for v in n.get("enum") or ())
    if _restates(name, description, f"{tool} {values}"):
        return True
    if any(n.get("type") == "boolean" for n in kinds) and _SWITCH.fullmatch(description):
        return True
    stock = _SAID_BY_NAME.get(name)
    return stock is not None and stock.fullmatch(description) is not None


def _enum_typed(node: dict[str, Any]) -> bool:
    """True when ``node``'s ``type`` adds nothing to its ``enum``: one type, every value of it."""
    kind, values = node.get("type"), node.get("enum")
    if not isinstance(kind, str) or kind not in _JSON_TYPES or not isinstance(values, list) or not values:
        return False
    want = _JSON_TYPES[kind]
    return all(isinstance(v, want) and (kind == "boolean" or not isinstance(v, bool)) for v in values)


def _compact(node: Any, described: bool, optional: bool, name: str | None, tool: str = "") -> Any:
    """One schema node compacted; ``described``: an enclosing schema already describes it;
    ``optional``: it is a property the call may leave out whose default is null; ``name``: the
    property's name when it is one; ``tool``: the tool's name."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" or (key == "default" and value is None) or key in LIMIT_KEYWORDS:
            continue
        if key == "additionalProperties" and value is False:
            continue
        if key == "description" and isinstance(value, str):
            if described:
                continue
            value = compact_description(value)
            if name is not None and name.endswith("_id"):
                value = _ID_EXAMPLE.sub("", value)  # ids come from results, not from examples
            if name is not None and _said_by_name(name, value, node, tool):
                continue
        elif key == "required" and value == []:
            continue
        out[key] = value
    if _enum_typed(out):
        del out["type"]
    has_desc = described or "description" in out
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            req = set(out.get("required", ())) if key == "properties" else set()
            out[key] = {
                prop: _compact(
                    sub,
                    False,
                    key == "properties" and prop not in req and _null_default(sub),
                    prop if key == "properties" else None,
                    tool,
                )
                for prop, sub in out[key].items()
            }
    for key in _SUBSCHEMA_ONE:
        if isinstance(out.get(key), dict):
            out[key] = _compact(out[key], has_desc, False, None)
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_compact(sub, has_desc, False, None) for sub in out[key]]
    branches = out.get("anyOf")
    if optional and isinstance(branches, list) and any(_is_null(b) for b in branches):
        rest = [b for b in branches if not _is_null(b)]
        del out["anyOf"]
        if len(rest) == 1 and isinstance(rest[0], dict) and not set(rest[0]) & set(out):
            out = {**rest[0], **out}
        elif rest:
            out["anyOf"] = rest
    return _ordered(out)


def _ordered(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with ``type`` first and ``description`` last, the other keys in their order: the
    same schema in fewer tokens (``{"type":"string","description":"…"}``)."""
    if "type" not in node and "description" not in node:
        return node
    head = {"type": node["type"]} if "type" in node else {}
    tail = {"description": node["description"]} if "description" in node else {}
    return {**head, **{k: v for k, v in node.items() if k not in ("type", "description")}, **tail}


def _null_default(prop: Any) -> bool:
    return isinstance(prop, dict) and prop.get("default", None) is None


def compact_parameters(schema: dict[str, Any], tool: str = "") -> dict[str, Any]:
    """A tool's ``parameters`` schema as offered to a model: the same parameters, types, enums,
    ``required`` lists and non-null defaults, in fewer tokens.

    Dropped: ``title`` keywords, ``"default": null``, an empty ``required``,
    ``"additionalProperties": false`` (validation refuses an unknown argument by name, with the
    known ones as candidates), the limits in :data:`LIMIT_KEYWORDS` (patterns, lengths, bounds:
    validation enforces and reports them), a ``type`` that an ``enum`` of values of that type
    already says, the ``{"type": "null"}`` branch of an optional parameter whose default is null
    (leaving it out means the same), descriptions nested under an already described schema (the
    ``anyOf`` branch or ``items`` of a described parameter), an ``e.g. "c_3"`` id example in an
    ``…_id`` parameter's description, a parameter's description that only restates its name, its
    enum's values or ``tool`` (the tool's dotted name: ``"The number to block."`` for ``number`` of
    ``phone.block_number``), a boolean's ``"True to pin, false to unpin."`` and the stock phrases of
    ``limit``, ``offset`` and ``qty``, the phrases of :data:`_BOILERPLATE` and a description's
    closing full stop (:func:`compact_description`); whitespace runs in descriptions become one
    space, and each node writes ``type`` first and ``description`` last.

    The result is valid JSON Schema and no narrower than ``schema``: every arguments object the
    full schema accepts, it accepts, but for an explicit null given for an optional parameter
    whose default is null (leaving it out means the same). It may be wider (a date not in ``YYYY-MM-DD``, a string
    past its length); the env validates every call against the full schema, so such a call is an
    ``invalid_arguments`` feedback, as before. ``schema`` is not modified.
    """
    return _compact(schema, False, False, None, tool)


def tool_text(tool: Mapping[str, Any]) -> str:
    """The text a chat template writes for one offered tool: the ``function`` object of an OpenAI
    ``tools`` entry (or ``tool`` itself when it has none) as a TypeScript-like declaration, the
    way OpenAI's harmony response format declares the tools of gpt-oss models::

        // Let time pass (the user goes about their day) when something has to happen first, ...
        type system.wait = (_: {
        // How long to wait
        minutes: integer,
        }) => any;

    Each description is a ``//`` comment above what it describes; a parameter the schema does
    not require is ``name?``; its type is JSON Schema's (``string``, ``integer``, ``number``,
    ``boolean``, ``null``, ``object``; ``T[]`` an array; an ``enum`` its values as JSON (a ``const`` its value), ``|``
    between them, as between the branches of ``anyOf``/``oneOf`` or a list of types; an object
    with ``properties`` its fields in braces), a default ``// default: <JSON>`` after it; a tool
    without parameters is ``() => any``. It says what the compact JSON says (every parameter,
    type, enum, ``required`` flag, default and description) in about a fifth fewer tokens: no
    key names, quotes or braces per parameter. :data:`agents.llm.tiny.CHAT_TEMPLATE` writes
    exactly this (its ``ts_*`` macros), and tool budgets count it."""
    fn = tool.get("function", tool) if isinstance(tool, Mapping) else tool
    head = _comment(fn.get("description"))
    params = fn.get("parameters")
    if isinstance(params, Mapping) and isinstance(params.get("properties"), Mapping) and params["properties"]:
        body = "(_: " + _ts_object(params) + ")"
    else:
        body = "()"
    return f"{head}type {fn.get('name')} = {body} => any;"


def _comment(description: Any) -> str:
    """``description`` as ``//`` comment lines, each ending in a line break ("" for none)."""
    if not description or not isinstance(description, str):
        return ""
    return "".join(f"// {line}\n" for line in description.split("\n"))


def _json(value: Any) -> str:
    """``value`` as a chat template's ``tojson`` writes it (``json.dumps``, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False)


def _ts_union(node: Mapping[str, Any]) -> bool:
    """Whether :func:`_ts_type` writes ``node`` with ``|`` at its top (an array of it needs brackets)."""
    return "enum" in node or "anyOf" in node or "oneOf" in node or isinstance(node.get("type"), list)


def _ts_type(node: Any) -> str:
    """A JSON Schema node as a TypeScript-like type (see :func:`tool_text`); ``any`` for what it
    does not read."""
    if not isinstance(node, Mapping):
        return "any"
    if "enum" in node:
        return " | ".join(_json(v) for v in node["enum"])
    if "const" in node:
        return _json(node["const"])
    for key in ("anyOf", "oneOf"):
        if key in node:
            return " | ".join(_ts_type(branch) for branch in node[key])
    kind = node.get("type")
    if isinstance(kind, list):
        return " | ".join(_ts_type({**node, "type": k}) for k in kind)
    if kind == "array":
        items = node.get("items")
        inner = _ts_type(items)
        return f"({inner})[]" if isinstance(items, Mapping) and _ts_union(items) else f"{inner}[]"
    if kind == "object" and isinstance(node.get("properties"), Mapping) and node["properties"]:
        return _ts_object(node)
    if kind in ("string", "integer", "number", "boolean", "null", "object"):
        return kind
    return "any"


def _ts_object(node: Mapping[str, Any]) -> str:
    """An object schema's fields in braces, one per line, each after its description."""
    required = node.get("required") or ()
    lines = ["{\n"]
    for name, prop in node["properties"].items():
        lines.append(_comment(prop.get("description") if isinstance(prop, Mapping) else None))
        optional = "" if name in required else "?"
        default = f" // default: {_json(prop['default'])}" if isinstance(prop, Mapping) and "default" in prop else ""
        lines.append(f"{name}{optional}: {_ts_type(prop)},{default}\n")
    lines.append("}")
    return "".join(lines)
