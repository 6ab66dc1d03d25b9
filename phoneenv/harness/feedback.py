"""Structured error feedback: one builder per :class:`~phoneenv.contract.ErrorKind`.

Every error feedback carries the closed error kind, a ``message`` (what happened, in the words
the agent acts on) and a ``hint`` (how to recover: the tool to call, with its exact arguments when
they are known). On top of that, each kind fills the fields that make it actionable:

========================= =====================================================================
kind                      structured fields
========================= =====================================================================
``invalid_json``          the parse problem in ``message``
``unknown_tool``          ``candidates``: the nearest tool names
``invalid_arguments``     ``path`` (JSON Pointer into the arguments), ``expected`` (the schema
                          type there), the schema's description and constraints in ``hint``;
                          ``candidates`` for an unexpected argument (the allowed names)
``permission_denied``     the missing permission, and the ``system.request_permission`` call
``login_required``        the app and account, and the ``system.sign_in`` call
``confirmation_required`` the ``user.confirm`` call to make first
``not_found``             ``candidates`` and/or the tool that finds the right id
``conflict``              ``candidates``: the records it conflicts with
``precondition_failed``   the condition that must hold and how to satisfy it
``device_error``,         infrastructure errors: the world failed, not the agent; never
``timeout``,              recoverable by acting differently
``internal_error``
========================= =====================================================================

``recoverable`` always comes from :data:`RECOVERABLE`. Backends and apps report only the fact
(``raise to_tool_error(not_found("contact", cid, "contacts.search"))`` or a plain
:class:`~phoneenv.tools.ToolError`); :func:`from_tool_error` turns the latter into a feedback with
the same table and a default hint. :data:`BUILDERS` maps every kind to its builder.

Suggested calls are written as the tool name followed by its arguments as JSON, the way the agent
sends them: ``system.sign_in {"app": "mail", "account": "ana@example.com"}``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from phoneenv.contract import ErrorKind, Feedback, ToolSpec
from phoneenv.tools import ArgumentError, ToolError, nearest_tools
from phoneenv.tools import recoverable as _tool_recoverable

__all__ = [
    "BUILDERS",
    "DEFAULT_HINTS",
    "RECOVERABLE",
    "confirmation_required",
    "conflict",
    "describe_type",
    "device_error",
    "from_tool_error",
    "internal_error",
    "invalid_arguments",
    "invalid_json",
    "login_required",
    "not_found",
    "permission_denied",
    "precondition_failed",
    "recoverable",
    "schema_at",
    "suggest_call",
    "timeout",
    "to_tool_error",
    "unknown_tool",
]

RECOVERABLE: Mapping[ErrorKind, bool] = MappingProxyType({kind: _tool_recoverable(kind) for kind in ErrorKind})
"""Whether the agent can fix an error of each kind by acting differently. Infrastructure kinds
(:data:`~phoneenv.contract.INFRASTRUCTURE_ERRORS`) never are: the world failed, not the agent."""

DEFAULT_HINTS: Mapping[ErrorKind, str] = MappingProxyType(
    {
        ErrorKind.INVALID_JSON: 'send one JSON object: {"name": "app.verb", "arguments": {...}}',
        ErrorKind.UNKNOWN_TOOL: "call only tools from the tool list",
        ErrorKind.INVALID_ARGUMENTS: "check the arguments against the tool's parameters schema",
        ErrorKind.PERMISSION_DENIED: "request the missing permission with system.request_permission, then retry",
        ErrorKind.LOGIN_REQUIRED: "sign the app in with system.sign_in, then retry",
        ErrorKind.NOT_FOUND: "look the item up with a search or list tool and use an id it returns",
        ErrorKind.CONFLICT: "read the current state; change the existing item instead of repeating the write",
        ErrorKind.PRECONDITION_FAILED: "make the precondition hold first, then retry",
        ErrorKind.CONFIRMATION_REQUIRED: 'call user.confirm {"question": "<what you are about to do>"}, then retry',
        ErrorKind.DEVICE_ERROR: "the device failed, not your call; retry once, and if it fails again finish and tell the user",
        ErrorKind.TIMEOUT: "the world did not answer in time, not your fault; retry once, and if it fails again finish and tell the user",
        ErrorKind.INTERNAL_ERROR: "a tool failed inside, not your call; do not repeat it: try another way or finish and tell the user",
    }
)
"""The hint an error gets when its reporter gave none (used by :func:`from_tool_error`)."""


_MAX_COMPARED = 128
"""Longest name compared for suggestions (difflib is quadratic in the names' lengths)."""


def recoverable(kind: ErrorKind | str) -> bool:
    """Whether an agent can recover from ``kind`` by acting differently (from :data:`RECOVERABLE`).

    Raises ``ValueError`` for a string that is not an :class:`ErrorKind` value.
    """
    return RECOVERABLE[ErrorKind(kind)]


def suggest_call(tool: str, **arguments: Any) -> str:
    """A tool call as the agent would send it, for hints: ``tool {"arg": value, ...}``.

    Arguments whose value is None are left out; values are JSON (ASCII-safe is not forced).
    """
    args = {k: v for k, v in arguments.items() if v is not None}
    return f"{tool} {json.dumps(args, ensure_ascii=False)}"


def _error(
    kind: ErrorKind,
    message: str,
    hint: str | None = None,
    *,
    path: str | None = None,
    expected: str | None = None,
    candidates: list[str] | None = None,
) -> Feedback:
    data = {"ok": False, "error": kind, "message": message, "hint": hint or DEFAULT_HINTS[kind]}
    if path is not None:
        data["path"] = path
    if expected is not None:
        data["expected"] = expected
    if candidates:
        data["candidates"] = list(candidates)
    data["recoverable"] = RECOVERABLE[kind]
    return _VALIDATE(data)  # Feedback(**data), validated alike, without __init__'s Python wrapper


_VALIDATE = Feedback.__pydantic_validator__.validate_python


# ---------------------------------------------------------------------------------------------
# JSON Schema helpers
# ---------------------------------------------------------------------------------------------


def _unescape(segment: str) -> str:
    return segment.replace("~1", "/").replace("~0", "~")


def _deref(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/") and depth < 32:
        node: Any = root
        for seg in ref[2:].split("/"):
            if not isinstance(node, Mapping) or _unescape(seg) not in node:
                return schema
            node = node[_unescape(seg)]
        if isinstance(node, Mapping):
            return _deref(node, root, depth + 1)
    return schema


def _branches(schema: Mapping[str, Any], root: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The non-null alternatives of an ``anyOf``/``oneOf`` (or the schema itself), dereferenced."""
    schema = _deref(schema, root)
    alts = schema.get("anyOf") or schema.get("oneOf")
    if not isinstance(alts, list):
        return [schema]
    out = []
    for alt in alts:
        if isinstance(alt, Mapping):
            alt = _deref(alt, root)
            if alt.get("type") != "null":
                out.extend(_branches(alt, root))
    return out


def _child(schema: Mapping[str, Any], segment: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for branch in _branches(schema, root):
        props = branch.get("properties")
        if isinstance(props, Mapping) and segment in props:
            return props[segment]
        if segment.isdigit():
            prefix = branch.get("prefixItems")
            if isinstance(prefix, list) and int(segment) < len(prefix):
                return prefix[int(segment)]
            if isinstance(branch.get("items"), Mapping):
                return branch["items"]
        extra = branch.get("additionalProperties")
        if isinstance(extra, Mapping) and not segment.isdigit():
            return extra
    return None


def schema_at(schema: Mapping[str, Any] | None, pointer: str) -> Mapping[str, Any] | None:
    """The JSON Schema fragment that governs the instance location ``pointer``.

    ``pointer`` is a JSON Pointer into the *arguments* (``/attendees/0``), not into the schema;
    ``""`` is the whole arguments object. ``$ref`` into ``$defs``, ``anyOf``/``oneOf`` (null
    branches skipped), ``properties``, ``items``, ``prefixItems`` and ``additionalProperties`` are
    followed. Returns None when the schema does not describe that location (an unexpected key).
    """
    if not schema:
        return None
    root = schema
    node: Mapping[str, Any] | None = schema
    if pointer in ("", "/"):
        return schema
    for raw in pointer.lstrip("/").split("/"):
        if node is None:
            return None
        node = _child(node, _unescape(raw), root)
    return node


def describe_type(fragment: Mapping[str, Any] | None, root: Mapping[str, Any] | None = None) -> str | None:
    """The type a schema fragment accepts, in a few words: ``string``, ``integer or null``,
    ``array of string``, ``one of "mon", "tue"``. None when the fragment says nothing about type.

    ``root`` resolves ``$ref`` (default: the fragment itself).
    """
    if not fragment:
        return None
    root = root if root is not None else fragment
    fragment = _deref(fragment, root)
    if "enum" in fragment:
        return "one of " + ", ".join(json.dumps(v) for v in fragment["enum"])
    if "const" in fragment:
        return json.dumps(fragment["const"])
    alts = fragment.get("anyOf") or fragment.get("oneOf")
    if isinstance(alts, list):
        parts = [describe_type(a, root) for a in alts if isinstance(a, Mapping)]
        parts = [p for p in parts if p]
        return " or ".join(dict.fromkeys(parts)) or None
    kind = fragment.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array" and isinstance(fragment.get("items"), Mapping):
        inner = describe_type(fragment["items"], root)
        return f"array of {inner}" if inner else "array"
    return str(kind) if kind else None


def _constraints(fragment: Mapping[str, Any]) -> list[str]:
    out = []
    if "pattern" in fragment:
        out.append(f"matching {fragment['pattern']}")
    if "format" in fragment:
        out.append(f"in {fragment['format']} format")
    for lo, hi, unit in (
        ("minLength", "maxLength", " characters"),
        ("minimum", "maximum", ""),
        ("minItems", "maxItems", " items"),
    ):
        a, b = fragment.get(lo), fragment.get(hi)
        if a is not None and b is not None:
            out.append(f"{a} to {b}{unit}")
        elif a is not None:
            out.append(f"at least {a}{unit}")
        elif b is not None:
            out.append(f"at most {b}{unit}")
    return out


def _description(fragment: Mapping[str, Any], root: Mapping[str, Any]) -> str | None:
    if isinstance(fragment.get("description"), str):
        return " ".join(fragment["description"].split())
    for branch in _branches(fragment, root):
        if isinstance(branch.get("description"), str):
            return " ".join(branch["description"].split())
    return None


# ---------------------------------------------------------------------------------------------
# Builders, one per error kind
# ---------------------------------------------------------------------------------------------


def invalid_json(detail: str) -> Feedback:
    """The action could not be parsed as a tool call (``invalid_json``).

    Args:
        detail: what is wrong, e.g. ``"the action is not valid JSON: Expecting value"``; becomes
            the message unchanged.
    """
    return _error(ErrorKind.INVALID_JSON, detail)


def unknown_tool(name: str, specs: Iterable[ToolSpec]) -> Feedback:
    """No tool is called ``name`` (``unknown_tool``); ``candidates`` are the nearest tool names
    among ``specs`` (:func:`phoneenv.tools.nearest_tools`: close spellings, else the tools of the
    app the prefix names).

    Args:
        name: the name the agent called (truncated to 80 characters in the message).
        specs: the tools offered in this episode.
    """
    near = nearest_tools(name, specs if isinstance(specs, (list, tuple)) else list(specs))
    hint = f"did you mean {near[0]}? Call only tools from the tool list" if near else None
    return _error(ErrorKind.UNKNOWN_TOOL, f"there is no tool {name[:80]!r}", hint, candidates=near)


def invalid_arguments(tool: str, error: ArgumentError, schema: Mapping[str, Any] | None = None) -> Feedback:
    """The arguments of ``tool`` failed its schema (``invalid_arguments``).

    ``path`` is the JSON Pointer of the bad argument (``/attendees/1``); ``expected`` the type the
    schema wants there (the validator's word, else the schema's); the hint adds the schema's
    constraints and description at that path. An argument the schema does not have gets the
    allowed argument names as ``candidates``, the closest first.

    Args:
        tool: the tool's name.
        error: the :class:`~phoneenv.tools.ArgumentError` from the tool's validator.
        schema: the tool's ``parameters`` JSON Schema (:attr:`ToolSpec.parameters`), if known.
    """
    path = error.path or ""
    fragment = schema_at(schema, path) if schema else None
    described = describe_type(fragment, schema) if fragment is not None else None
    expected = error.expected or described
    if expected == "number" and described and described.startswith("integer"):
        expected = "integer"  # range errors say "number"; the schema knows it is an integer
    candidates: list[str] | None = None
    arg = path[1:] if path else ""
    if schema and fragment is None and arg and "/" not in arg:
        allowed = list((schema.get("properties") or {}).keys())
        arg = arg[:_MAX_COMPARED]  # a huge key must not cost difflib seconds
        close = difflib.get_close_matches(arg, allowed, n=len(allowed), cutoff=0.0) if allowed else []
        candidates = close or None
        hint = f"{arg[:80]!r} is not a parameter of {tool}; " + (
            f"use one of: {', '.join(close)}" if close else "it takes no arguments"
        )
    elif fragment is not None and path:
        want = ", ".join([expected or "a valid value", *_constraints(fragment)])
        desc = _description(fragment, schema or fragment)
        hint = f"{path} must be {want}" + (f": {desc}" if desc else "")
    else:
        hint = None
    return _error(
        ErrorKind.INVALID_ARGUMENTS,
        f"{tool}: {error.message}",
        hint,
        path=path,
        expected=expected,
        candidates=candidates,
    )


def permission_denied(app: str, permission: str, *, denied_by_user: bool = False) -> Feedback:
    """``app`` lacks the runtime ``permission`` (``permission_denied``); the hint is the exact
    ``system.request_permission`` call. With ``denied_by_user`` the user already refused the
    request: the hint says to stop asking and tell the user.

    Args:
        app: the app's name (``"messages"``).
        permission: the Android permission (``"android.permission.SEND_SMS"``).
        denied_by_user: the user answered no to a permission request.
    """
    if denied_by_user:
        return _error(
            ErrorKind.PERMISSION_DENIED,
            f"the user denied {permission} to {app}",
            "do not ask again; tell the user the task cannot be done without it, or find another way",
        )
    return _error(
        ErrorKind.PERMISSION_DENIED,
        f"{app} does not hold {permission}",
        f"call {suggest_call('system.request_permission', app=app, permission=permission)}, then retry",
    )


def login_required(app: str, account: str | None) -> Feedback:
    """``app`` needs its account signed in (``login_required``); the hint is the exact
    ``system.sign_in`` call (the saved password is used when none is given).

    Args:
        app: the app's name (``"mail"``).
        account: the app's account (``"ana@example.com"``), or None when the phone does not know
            it: the hint then says to find it with ``system.list_accounts``.
    """
    if account:
        hint = f"call {suggest_call('system.sign_in', app=app, account=account)}, then retry"
    else:
        hint = (
            "call system.list_accounts to find the user's account, then "
            f"{suggest_call('system.sign_in', app=app, account='<account>')}, then retry"
        )
    who = f" ({account})" if account else ""
    return _error(ErrorKind.LOGIN_REQUIRED, f"{app} needs a signed-in account{who}", hint)


def confirmation_required(tool: str) -> Feedback:
    """``tool`` is sensitive and the user wants to confirm it first (``confirmation_required``).

    Args:
        tool: the sensitive tool's name.
    """
    return _error(
        ErrorKind.CONFIRMATION_REQUIRED,
        f"{tool} is sensitive; the user wants to confirm it first",
        f'call user.confirm {{"question": "<what you are about to do, in one sentence>"}}, then retry {tool}; '
        "one confirmation covers one sensitive call",
    )


def authentication_required(tool: str) -> Feedback:
    """``tool`` is sensitive and the phone asks for the user's PIN or fingerprint first
    (``precondition_failed``): the task's fixtures set ``step_up``.

    Args:
        tool: the sensitive tool's name.
    """
    return _error(
        ErrorKind.PRECONDITION_FAILED,
        f"{tool} is sensitive; the phone asks the user to authenticate (PIN or fingerprint) first",
        f'call user.authenticate {{"reason": "<what you are about to do>"}}, then retry {tool}; '
        "one authentication covers one sensitive call",
    )


def not_found(what: str, id: str, finder_tool: str | None = None, candidates: list[str] | None = None) -> Feedback:
    """No ``what`` called or numbered ``id`` exists (``not_found``).

    Args:
        what: the kind of thing, in words (``"contact"``, ``"skill"``).
        id: the id or name that missed.
        finder_tool: the tool that finds the right id (``"contacts.search"``), if any.
        candidates: the nearest valid ids or names, best first, if known.
    """
    parts = []
    if candidates:
        parts.append(f"did you mean {candidates[0]!r}?")
    if finder_tool:
        parts.append(f"call {finder_tool} to find the right {what}")
    hint = " ".join(parts) or f"check the {what}: use one that a search or list returned"
    return _error(ErrorKind.NOT_FOUND, f"no {what} {str(id)[:100]!r}", hint, candidates=candidates)


def conflict(detail: str, how_to_resolve: str | None = None, *, candidates: list[str] | None = None) -> Feedback:
    """The write clashes with the current state (``conflict``): a duplicate, a call already in
    progress, an attendee already invited.

    Args:
        detail: what clashes, e.g. ``"Ana Lima (c_1) already has number +4915111111111"``.
        how_to_resolve: what to do instead (``"update c_1 with contacts.update"``); a generic
            hint when None.
        candidates: ids or names of the existing items it clashes with.
    """
    return _error(ErrorKind.CONFLICT, detail, how_to_resolve, candidates=candidates)


def precondition_failed(condition: str, how_to_satisfy: str) -> Feedback:
    """The call needs ``condition`` to hold first (``precondition_failed``).

    Args:
        condition: what must hold, e.g. ``"a call must be in progress"``.
        how_to_satisfy: how to make it hold, e.g. ``"call phone.call first"``.
    """
    return _error(ErrorKind.PRECONDITION_FAILED, f"precondition not met: {condition}", how_to_satisfy)


def device_error(detail: str) -> Feedback:
    """The device failed (``device_error``, infrastructure: never recoverable by the agent).

    Args:
        detail: what failed, e.g. ``"adb lost the device"``.
    """
    return _error(ErrorKind.DEVICE_ERROR, f"device error: {detail}")


def timeout(detail: str) -> Feedback:
    """The world did not answer in time (``timeout``, infrastructure: never recoverable by the
    agent's acting differently; a retry of the same call may still succeed).

    Args:
        detail: what timed out, e.g. ``"messages.send after 30 s"``.
    """
    return _error(ErrorKind.TIMEOUT, f"timed out: {detail}")


def internal_error(tool: str, where: str = "the backend") -> Feedback:
    """A tool raised something unexpected (``internal_error``, infrastructure: a bug, not the
    agent's doing; the backend should log the exception).

    Args:
        tool: the tool that failed.
        where: what ran it, e.g. ``"the sandbox"``.
    """
    return _error(ErrorKind.INTERNAL_ERROR, f"{tool} failed inside {where}")


BUILDERS: Mapping[ErrorKind, Callable[..., Feedback]] = MappingProxyType(
    {
        ErrorKind.INVALID_JSON: invalid_json,
        ErrorKind.UNKNOWN_TOOL: unknown_tool,
        ErrorKind.INVALID_ARGUMENTS: invalid_arguments,
        ErrorKind.PERMISSION_DENIED: permission_denied,
        ErrorKind.LOGIN_REQUIRED: login_required,
        ErrorKind.NOT_FOUND: not_found,
        ErrorKind.CONFLICT: conflict,
        ErrorKind.PRECONDITION_FAILED: precondition_failed,
        ErrorKind.CONFIRMATION_REQUIRED: confirmation_required,
        ErrorKind.DEVICE_ERROR: device_error,
        ErrorKind.TIMEOUT: timeout,
        ErrorKind.INTERNAL_ERROR: internal_error,
    }
)
"""The builder of every error kind."""


# ---------------------------------------------------------------------------------------------
# ToolError bridge
# ---------------------------------------------------------------------------------------------


def from_tool_error(error: ToolError, schema: Mapping[str, Any] | None = None) -> Feedback:
    """A :class:`~phoneenv.tools.ToolError` raised inside a tool as a :class:`Feedback`.

    Message, hint, candidates and path are kept; a missing hint becomes the kind's
    :data:`DEFAULT_HINTS` entry; ``recoverable`` comes from :data:`RECOVERABLE`. With the tool's
    ``parameters`` ``schema``, an error at ``path`` also gets ``expected`` from it.
    """
    expected = None
    if error.path is not None and schema:
        fragment = schema_at(schema, error.path)
        expected = describe_type(fragment, schema) if fragment is not None else None
    return _error(
        error.kind,
        error.message,
        error.hint,
        path=error.path,
        expected=expected,
        candidates=error.candidates,
    )


def to_tool_error(feedback: Feedback) -> ToolError:
    """The :class:`~phoneenv.tools.ToolError` that reports ``feedback`` from inside a tool
    (``raise to_tool_error(not_found(...))``). Raises ``ValueError`` for an ``ok`` feedback."""
    if feedback.ok or feedback.error is None:
        raise ValueError("only an error feedback can become a ToolError")
    return ToolError(
        feedback.error,
        feedback.message or feedback.error.value,
        hint=feedback.hint,
        candidates=feedback.candidates,
        path=feedback.path,
    )
