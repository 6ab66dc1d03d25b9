"""The compact rendering of tool specs for a model (the OpenAI ``tools`` format): descriptions
on one line, default bounds and redundant nulls left out. Used by
:meth:`phoneenv.contract.ToolSpec.to_openai`; depends on nothing else of phoneenv."""

from __future__ import annotations

from typing import Any

__all__ = ["INT_MAX", "INT_MIN", "compact_parameters", "compact_text"]

INT_MIN = -(2**63)
"""Smallest integer a tool parameter accepts unless it declares its own bound (SQLite's INTEGER)."""
INT_MAX = 2**63 - 1
"""Largest integer a tool parameter accepts unless it declares its own bound (SQLite's INTEGER)."""


# -- compact rendering (the OpenAI ``tools`` format) -------------------------------------------------

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_ONE = ("items", "not", "additionalProperties", "contains", "propertyNames")
_SUBSCHEMA_MAPS = ("properties", "$defs", "patternProperties")


def compact_text(text: str) -> str:
    """``text`` with every run of whitespace (docstring line breaks) as one space."""
    return " ".join(text.split())


_DEFAULT_INT_BOUNDS = {"minimum": INT_MIN, "maximum": INT_MAX}
"""The integer bounds :func:`bounded` adds to a parameter that declares none: enforced by
validation, left out of the offered rendering (about 25 tokens each)."""


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema == {"type": "null"}


def _compact(node: Any, described: bool, optional: bool) -> Any:
    """One schema node compacted; ``described``: an enclosing schema already describes it;
    ``optional``: it is a property the call may leave out whose default is null."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" or (key == "default" and value is None):
            continue
        if key in _DEFAULT_INT_BOUNDS and value == _DEFAULT_INT_BOUNDS[key] and node.get("type") == "integer":
            continue
        if key == "description" and isinstance(value, str):
            if described:
                continue
            value = compact_text(value)
        elif key == "required" and value == []:
            continue
        out[key] = value
    has_desc = described or "description" in out
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            req = set(out.get("required", ())) if key == "properties" else set()
            out[key] = {
                name: _compact(sub, False, key == "properties" and name not in req and _null_default(sub))
                for name, sub in out[key].items()
            }
    for key in _SUBSCHEMA_ONE:
        if isinstance(out.get(key), dict):
            out[key] = _compact(out[key], has_desc, False)
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_compact(sub, has_desc, False) for sub in out[key]]
    branches = out.get("anyOf")
    if optional and isinstance(branches, list) and any(_is_null(b) for b in branches):
        rest = [b for b in branches if not _is_null(b)]
        del out["anyOf"]
        if len(rest) == 1 and isinstance(rest[0], dict) and not set(rest[0]) & set(out):
            out = {**rest[0], **out}
        elif rest:
            out["anyOf"] = rest
    return out


def _null_default(prop: Any) -> bool:
    return isinstance(prop, dict) and prop.get("default", None) is None


def compact_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's ``parameters`` schema as offered to a model: the same calls, fewer tokens.

    Dropped: ``title`` keywords, ``"default": null``, an empty ``required``, the
    ``{"type": "null"}`` branch of an optional parameter whose default is null (leaving it out
    means the same), descriptions nested under an already described schema (the ``anyOf``
    branch or ``items`` of a described parameter), and an integer's ``minimum`` of
    :data:`INT_MIN` or ``maximum`` of :data:`INT_MAX` (the default bounds :func:`bounded` adds,
    19 digits each); whitespace runs in descriptions become one space. Kept: types, enums,
    patterns, declared bounds, ``additionalProperties``, the parameters' descriptions and
    non-null defaults.

    The result is valid JSON Schema. Every arguments object it accepts the full schema accepts
    too, with one exception, the same one the full schema makes for :data:`MAX_STRING`: an
    integer beyond SQLite's 64-bit range, which validation refuses as ``invalid_arguments``
    (a grammar built from the result can emit it; no request of the suite needs one).
    ``schema`` is not modified.
    """
    return _compact(schema, False, False)
