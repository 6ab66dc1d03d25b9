"""The ``llmsim`` backend: long-tail apps no sandbox models, simulated by a language model over a
fact ledger that keeps the simulated world consistent and verifiable.

An app is data, not code: a JSON file in ``apps/simulated/`` (:class:`SimApp`) declares its tools
(typed parameters and return schemas) and its *entities* (:class:`EntitySpec`: an order keyed by
``order_id`` whose ``total`` may never change and whose ``cancelled`` status is final). A call is
served, in this order, by

1. the task's script (``task.fixtures.simulated``: exact tool name and arguments → result),
2. the :class:`SimulationCache` (same model, tool, arguments and world state → same result),
3. the simulator model (a :class:`~phoneenv.llm.ChatClient`), prompted with the app, the tool,
   the task's records of the app, every fact established so far and the phone's clock, and asked
   for one JSON value valid for the tool's return schema (validated; retried with the error).

Every successful result is merged into the :class:`FactLedger`: each JSON object in it that holds
an entity's key is a set of facts about that entity. A fact that contradicts an established one (a
second total or currency for the same order, a cancelled order later delivered, a scan time moving
backwards, a restaurant's cuisine changing) or breaks a rule the app declares between facts (a
total that is not subtotal plus fees, a charged price that is not the menu's, an update before the
creation) is kept out of the ledger and reported by :meth:`LLMSimBackend.consistency_issues`, which
marks the episode's verdict ``inconsistent``. The rules are data in the app's file
(:class:`EntitySpec`); the checks are generic.

    >>> from phoneenv.backends.llmsim import LLMSimBackend
    >>> sorted(LLMSimBackend().apps)
    ['cinema', 'food', 'parcels']

Verification reads :attr:`FactLedger.tables`: the task's records plus the facts that *writes*
(``write``/``sensitive`` tools) established. Facts a read revealed are the world showing what
already was, not a change the agent made, so they stay out of the verification view (else every
lookup would count as collateral damage); they still bind the simulation.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import hashlib
import json
import logging
import math
import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import jsonschema
import numpy as np
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaValidationError
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ConfigDict, Field, model_validator

from phoneenv.backends.base import Backend
from phoneenv.contract import Domain, Effect, ErrorKind, Feedback, TaskSpec, ToolSpec
from phoneenv.llm import ChatClient, InfrastructureError, TokenUsage
from phoneenv.tools import INT_MAX, INT_MIN, MAX_STRING, ArgumentError

__all__ = [
    "CACHE_VERSION",
    "ERROR_SCHEMA",
    "SECONDS_PER_CALL",
    "CatalogRule",
    "EntitySpec",
    "FactLedger",
    "LLMSimBackend",
    "LedgerSnapshot",
    "LineSumRule",
    "RefRule",
    "SchemaValidator",
    "SimApp",
    "SimEntry",
    "SimTool",
    "SimulationCache",
    "SumRule",
    "canonical_json",
    "load_sim_apps",
]

log = logging.getLogger(__name__)

SECONDS_PER_CALL = 1.0
"""Simulated seconds the phone clock advances per tool call (as in the sandbox)."""

CACHE_VERSION = 1
"""Part of every cache key; bump it when the prompt format changes so old entries stop matching."""

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_ERROR_KINDS = ("not_found", "conflict", "precondition_failed")
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "error": {"type": "string", "minLength": 1, "description": "Why the call fails, in one sentence."},
        "kind": {"type": "string", "enum": list(_ERROR_KINDS), "default": "not_found"},
    },
    "required": ["error"],
    "additionalProperties": False,
}
"""The reply a simulated tool gives when the call cannot succeed in the simulated world."""


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, no spaces, ASCII. Equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _compact(value: Any) -> str:
    """Compact JSON keeping key order and non-ASCII text (for prompts and cache values)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


# ---------------------------------------------------------------------------------------------
# Apps as data
# ---------------------------------------------------------------------------------------------


class SimTool(BaseModel):
    """One tool of a simulated app.

    ``parameters`` is a JSON Schema object in the OpenAI function-calling form
    (``{"type": "object", "properties": ..., "required": [...]}``); ``returns`` the JSON Schema of
    a successful result; ``effect`` ``read``, ``write`` or ``sensitive`` (payment and the like);
    ``requires_login``: the tool acts on the user's account in the app (ordering, bookings), so
    it answers ``login_required`` while the app is signed out (see :meth:`LLMSimBackend.account`).
    """

    model_config = ConfigDict(extra="forbid")

    verb: str
    description: str
    parameters: dict[str, Any]
    returns: dict[str, Any]
    effect: Effect = Effect.READ
    requires_login: bool = False


class SumRule(BaseModel):
    """An amount that is the sum of others: ``total`` equals the sum of ``parts`` within
    ``tolerance`` (absolute, in the amounts' own units: 0.01 lets amounts in major units be
    rounded to the cent; amounts in minor units, whole numbers, then have to add up exactly).
    Checked once the entity's facts hold the total and every part."""

    model_config = ConfigDict(extra="forbid")

    total: str
    parts: list[str] = Field(min_length=1)
    tolerance: float = Field(0.01, ge=0)


class LineSumRule(BaseModel):
    """An amount that is the sum of a list's lines: ``total`` equals the sum over the objects in
    the list field ``lines`` of ``price`` (times ``qty``, when given) within ``tolerance`` (as
    in :class:`SumRule`). Checked once every line holds a number there."""

    model_config = ConfigDict(extra="forbid")

    total: str
    lines: str
    price: str
    qty: str | None = None
    tolerance: float = Field(0.01, ge=0)


class CatalogRule(BaseModel):
    """Lines that restate entries of the referenced entity's catalogue (an order's items and the
    restaurant's menu): each object in this entity's list ``lines`` whose ``key`` matches an
    entry of the referenced entity's list ``catalog`` agrees with it on ``same`` (this line's
    field → the entry's field; a charged ``price`` and the menu ``price``)."""

    model_config = ConfigDict(extra="forbid")

    lines: str
    catalog: str
    key: str
    same: dict[str, str] = Field(min_length=1)


class RefRule(BaseModel):
    """Facts an entity shares with the entity it references: the field ``via`` holds the key of
    an ``entity`` (a name in :attr:`SimApp.entities`) whose record, once known, agrees on
    ``same`` (this entity's field → the referenced one's: an order's ``currency`` and its
    restaurant's) and, with ``lines``, on the catalogue entries its lines restate."""

    model_config = ConfigDict(extra="forbid")

    via: str
    entity: str
    same: dict[str, str] = Field(default_factory=dict)
    lines: CatalogRule | None = None


class EntitySpec(BaseModel):
    """A kind of thing the simulated world keeps facts about, and the rules those facts obey.

    - ``table``: ledger table name inside the app (stored as ``"<app>.<table>"``).
    - ``key``: the id field (``"order_id"``); any JSON object in a result holding it describes
      one entity (when it holds several entities' keys, the entity declared *last* in
      :attr:`SimApp.entities` wins: declare referenced entities first, restaurant before order).
    - ``immutable``: fields whose value may never change once asserted (price, item list,
      currency, a venue's category).
    - ``status``: the status field, if any; ``terminal``: statuses an entity never leaves.
    - ``times``: timestamp fields (ISO 8601) that must never move backwards.
    - ``order``: statuses in lifecycle order; a status may not move back to an earlier one
      (statuses not listed are unconstrained).
    - ``created``: the creation time field (immutable); no ``times`` field may lie before it
      (an update before the order was placed).
    - ``sums`` (:class:`SumRule`), ``line_sums`` (:class:`LineSumRule`): amounts that add up
      (subtotal plus fees is the total; the lines make the subtotal).
    - ``refs`` (:class:`RefRule`): facts shared with a referenced entity (currency, name,
      catalogue prices).

    The first five are checked field by field as facts arrive; ``created``, ``sums``,
    ``line_sums`` and ``refs`` relate several fields and are checked on the entity's merged
    record (see :meth:`FactLedger.merge`).
    """

    model_config = ConfigDict(extra="forbid")

    table: str
    key: str
    immutable: list[str] = Field(default_factory=list)
    status: str | None = None
    terminal: list[str] = Field(default_factory=list)
    times: list[str] = Field(default_factory=list)
    order: list[str] | None = None
    created: str | None = None
    sums: list[SumRule] = Field(default_factory=list)
    line_sums: list[LineSumRule] = Field(default_factory=list)
    refs: list[RefRule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> EntitySpec:
        if not _NAME.match(self.table):
            raise ValueError(f"entity table {self.table!r} must match {_NAME.pattern}")
        if (self.terminal or self.order) and self.status is None:
            raise ValueError(f"entity table {self.table!r} declares terminal/order statuses but no status field")
        return self


class SimApp(BaseModel):
    """A simulated app: ``name`` (tool prefix, file stem), ``title`` (shown to the user and the
    simulator), ``description`` (what the app does, for the simulator), ``domain``, ``tools`` and
    ``entities`` (by entity name).

    Every parameter is bounded, as the ``@tool`` builder bounds a sandbox tool's (see
    :mod:`phoneenv.tools`): an integer or number declares ``minimum`` and ``maximum`` (integers
    within SQLite's 64-bit range), a string that is not an ``enum`` a ``maxLength`` of at most
    :data:`~phoneenv.tools.MAX_STRING`, an array a ``maxItems``, so an agent's out-of-range value
    is ``invalid_arguments`` before it reaches a script, a cache key or the simulator's prompt.

    Raises ``pydantic.ValidationError`` (a ``ValueError``) for bad names, duplicate verbs, keys or
    tables, unbounded parameters, or schemas that are not valid JSON Schema draft 2020-12.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    title: str
    description: str
    domain: Domain
    tools: list[SimTool]
    entities: dict[str, EntitySpec] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> SimApp:
        if not _NAME.match(self.name):
            raise ValueError(f"app name {self.name!r} must match {_NAME.pattern}")
        verbs = [t.verb for t in self.tools]
        for verb in verbs:
            if not _NAME.match(verb):
                raise ValueError(f"{self.name}: verb {verb!r} must match {_NAME.pattern}")
        for field_name, values in (
            ("verb", verbs),
            ("entity key", [e.key for e in self.entities.values()]),
            ("entity table", [e.table for e in self.entities.values()]),
        ):
            dup = sorted({v for v in values if values.count(v) > 1})
            if dup:
                raise ValueError(f"{self.name}: duplicate {field_name} {dup}")
        for ent_name, ent in self.entities.items():
            for ref in ent.refs:
                if ref.entity not in self.entities:
                    raise ValueError(f"{self.name}: entity {ent_name!r} references unknown entity {ref.entity!r}")
        for t in self.tools:
            where = f"{self.name}.{t.verb}"
            if t.parameters.get("type") != "object":
                raise ValueError(f"{where}: parameters must be a JSON Schema object (type 'object')")
            for label, schema in (("parameters", t.parameters), ("returns", t.returns)):
                try:
                    Draft202012Validator.check_schema(schema)
                except jsonschema.SchemaError as exc:
                    raise ValueError(f"{where}: {label} is not valid JSON Schema: {exc.message}") from None
            loose = _unbounded(t.parameters, "")
            if loose:
                raise ValueError(f"{where}: parameter {loose}")
            props = t.parameters.get("properties", {})
            for pname, sub in props.items():
                if isinstance(sub, dict) and "default" in sub:
                    err = best_match(Draft202012Validator(sub).iter_errors(sub["default"]))
                    if err is not None:
                        raise ValueError(f"{where}: default of {pname!r} is invalid: {err.message}")
        return self

    def tool(self, verb: str) -> SimTool:
        """The tool ``verb``. Raises ``KeyError`` if the app has none."""
        for t in self.tools:
            if t.verb == verb:
                return t
        raise KeyError(f"{self.name} has no tool {verb!r}")

    def specs(self) -> list[ToolSpec]:
        """The app's tools as :class:`ToolSpec` named ``"<app>.<verb>"``, in declaration order."""
        return [
            ToolSpec(
                name=f"{self.name}.{t.verb}",
                description=t.description,
                parameters=t.parameters,
                returns=t.returns,
                app=self.name,
                domain=self.domain,
                effect=t.effect,
                requires_login=t.requires_login,
            )
            for t in self.tools
        ]


def _unbounded(schema: Any, path: str) -> str | None:
    """The first parameter of ``schema`` (as ``"/pointer needs ..."``) that lacks the bounds
    :class:`SimApp` requires, or None."""
    if not isinstance(schema, dict):
        return None
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            why = _unbounded(sub, path)
            if why:
                return why
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    fixed = "enum" in schema or "const" in schema
    where = path or "/"
    if not fixed and ("integer" in kinds or "number" in kinds):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if lo is None or hi is None:
            return f"{where} needs a minimum and a maximum"
        if "integer" in kinds and not INT_MIN <= lo <= hi <= INT_MAX:
            return f"{where} must lie within {INT_MIN} to {INT_MAX}"
    if not fixed and "string" in kinds and not 0 <= schema.get("maxLength", MAX_STRING + 1) <= MAX_STRING:
        return f"{where} needs a maxLength of at most {MAX_STRING}"
    if "array" in kinds and "maxItems" not in schema:
        return f"{where} needs a maxItems"
    if isinstance(schema.get("items"), dict):
        why = _unbounded(schema["items"], f"{path}/0")
        if why:
            return why
    for key, sub in (schema.get("properties") or {}).items():
        why = _unbounded(sub, f"{path}/{key}")
        if why:
            return why
    return None


def _default_folder() -> Path:
    import apps

    return Path(apps.__file__).parent / "simulated"


@functools.lru_cache(maxsize=8)
def _load_folder(folder: str) -> tuple[tuple[str, SimApp], ...]:
    out: list[tuple[str, SimApp]] = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            app = SimApp.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
        if app.name != path.stem:
            raise ValueError(f"{path}: app name {app.name!r} differs from the file name")
        out.append((app.name, app))
    return tuple(out)


def load_sim_apps(folder: str | os.PathLike[str] | None = None) -> dict[str, SimApp]:
    """Every simulated app in ``folder`` (default ``apps/simulated/``), by name, sorted by file.

    Each ``*.json`` file holds one :class:`SimApp` whose ``name`` is the file's stem. Parsed once
    per folder per process. Raises ``ValueError`` (naming the file) for an invalid app.
    """
    path = Path(folder) if folder is not None else _default_folder()
    return dict(_load_folder(str(path.resolve())))


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def _pointer(parts: Iterable[Any]) -> str:
    """A JSON Pointer (RFC 6901) from path parts; ``""`` for the root."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _type_text(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    t = schema.get("type")
    if isinstance(t, list):
        return " or ".join(str(x) for x in t)
    if isinstance(t, str):
        return t
    if "enum" in schema:
        return f"one of {json.dumps(schema['enum'])}"
    return None


_EXPECTED_BY_KEYWORD = {
    "minimum": "number",
    "maximum": "number",
    "exclusiveMinimum": "number",
    "exclusiveMaximum": "number",
    "multipleOf": "number",
    "minLength": "string",
    "maxLength": "string",
    "minItems": "array",
    "maxItems": "array",
    "uniqueItems": "array",
    "minProperties": "object",
    "maxProperties": "object",
}


def _describe(err: SchemaValidationError) -> tuple[str, str, str | None]:
    """(message, JSON Pointer, expected) for a jsonschema error, in :class:`ArgumentError` terms."""
    parts = list(err.absolute_path)
    kw = err.validator
    inst = err.instance
    schema = err.schema if isinstance(err.schema, dict) else {}
    if kw == "required" and isinstance(inst, dict):
        missing = next((p for p in err.validator_value if p not in inst), None)
        if missing is not None:
            parts.append(missing)
            name = _pointer(parts)[1:]
            expected = _type_text(schema.get("properties", {}).get(missing))
            return f"missing required argument {name!r}", _pointer(parts), expected
    if kw == "additionalProperties" and isinstance(inst, dict):
        allowed = list(schema.get("properties", {}))
        extra = sorted(k for k in inst if k not in allowed)
        if extra:
            parts.append(extra[0])
            return (
                f"unexpected argument {_pointer(parts)[1:]!r}; allowed here: {', '.join(allowed) or 'none'}",
                _pointer(parts),
                None,
            )
    path = _pointer(parts)
    where = f"argument {path[1:]!r}" if path else "arguments"
    if kw == "type":
        expected = _type_text(schema)
    elif kw == "enum":
        expected = f"one of {json.dumps(err.validator_value)}"
    elif kw == "const":
        expected = json.dumps(err.validator_value)
    elif kw in ("pattern", "format"):
        expected = f"string matching {err.validator_value}" if kw == "pattern" else f"string ({err.validator_value})"
    else:
        expected = _EXPECTED_BY_KEYWORD.get(str(kw)) or _type_text(schema)
    return f"{where}: {err.message}", path, expected


def _non_finite(value: Any, parts: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The path to the first float in ``value`` that is ``NaN`` or infinite, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else parts
    if isinstance(value, dict):
        items: Iterable[tuple[Any, Any]] = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, sub in items:
        found = _non_finite(sub, (*parts, key))
        if found is not None:
            return found
    return None


def _fill_defaults(schema: Any, value: Any) -> Any:
    """A copy of ``value`` with missing object properties set to their schema ``default``."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        out = dict(value)
        for key, sub in schema["properties"].items():
            if key in out:
                out[key] = _fill_defaults(sub, out[key])
            elif isinstance(sub, dict) and "default" in sub:
                out[key] = copy.deepcopy(sub["default"])
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_fill_defaults(schema["items"], v) for v in value]
    return value


class SchemaValidator:
    """Checks a JSON value against a JSON Schema (draft 2020-12, ``date``-style formats checked).

    As the argument validator of a simulated tool (the env calls ``validate(arguments)``) it
    returns the arguments with schema defaults filled in, or raises
    :class:`~phoneenv.tools.ArgumentError` whose ``path`` is a JSON Pointer into the arguments
    (``/items/0/qty``) and ``expected`` the type or values expected there. ``error(value)`` is the
    non-raising form used for results. Raises ``jsonschema.SchemaError`` at construction for an
    invalid schema.
    """

    __slots__ = ("_validator", "schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        Draft202012Validator.check_schema(schema)
        self.schema = schema
        self._validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate; return a copy with defaults filled. Raises :class:`ArgumentError` (also for
        a ``NaN`` or an infinity anywhere in the arguments, which JSON Schema cannot exclude)."""
        err = best_match(self._validator.iter_errors(arguments))
        if err is not None:
            message, path, expected = _describe(err)
            raise ArgumentError(message, path, expected)
        bad = _non_finite(arguments, ())
        if bad is not None:
            path = _pointer(bad)
            raise ArgumentError(f"argument {path[1:]!r}: not a finite number", path, "finite number")
        return _fill_defaults(self.schema, arguments)

    def error(self, value: Any) -> str | None:
        """None when ``value`` is valid, else the most relevant error as ``"<pointer>: <message>"``."""
        err = best_match(self._validator.iter_errors(value))
        if err is None:
            return None
        return f"{_pointer(err.absolute_path) or '/'}: {err.message}"


# ---------------------------------------------------------------------------------------------
# The fact ledger
# ---------------------------------------------------------------------------------------------

Tables = dict[str, dict[str, dict[str, Any]]]


def _same(a: Any, b: Any) -> bool:
    """Whether two asserted values agree: numbers by value, text ignoring case and outer spaces,
    objects on their common keys, lists as multisets of agreeing elements."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().casefold() == b.strip().casefold()
    if isinstance(a, dict) and isinstance(b, dict):
        return all(_same(a[k], b[k]) for k in a.keys() & b.keys())
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        left = list(b)
        for x in a:
            for i, y in enumerate(left):
                if _same(x, y):
                    del left[i]
                    break
            else:
                return False
        return True
    return a == b


def _number(value: Any) -> bool:
    """Whether ``value`` is a finite JSON number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _amount(value: float) -> str:
    """An amount in words: up to six decimals, trailing zeros dropped (``11.5``, ``1725``)."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _parse_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def _earlier(new: Any, old: Any) -> bool:
    """Whether time ``new`` lies strictly before ``old`` (False when either is not a time)."""
    a, b = _parse_time(new), _parse_time(old)
    if a is None or b is None or (a.tzinfo is None) != (b.tzinfo is None):
        return False
    return a < b


@dataclass(frozen=True)
class LedgerSnapshot:
    """A frozen copy of a :class:`FactLedger`: its fact tables and its verification view."""

    facts: Tables
    view: Tables


class FactLedger:
    """Everything the simulated world has asserted, per entity, and the rules that bind it.

    Two sets of tables ``{"<app>.<table>": {id: record}}``: :attr:`facts` (seeded records plus
    every fact any result asserted; shown to the simulator and hashed into cache keys) and
    :attr:`tables` (seeded records plus the records writes touched; read by verification).
    Records are never mutated in place: a change replaces the record with a new dict, so
    snapshots are shallow table copies and diffs compare by identity first.

    Args:
        apps: the simulated apps whose entities the ledger tracks, by name.
    """

    def __init__(self, apps: Mapping[str, SimApp]) -> None:
        self.apps = dict(apps)
        self._entities: dict[str, list[tuple[str, EntitySpec]]] = {
            name: list(reversed(app.entities.items())) for name, app in self.apps.items()
        }
        self._rank: dict[str, dict[str, int]] = {
            name: {ent: i for i, ent in enumerate(app.entities)} for name, app in self.apps.items()
        }
        self.facts: Tables = {}
        self._view: Tables = {}
        self.seed({})

    @property
    def tables(self) -> Tables:
        """The verification view, live (read-only by convention)."""
        return self._view

    def seed(self, records: Mapping[str, Iterable[Mapping[str, Any]]]) -> None:
        """Reset to ``records`` (a task's ``fixtures.records``): rows of tables of the tracked
        apps are seeded, keyed by the entity's key field (or ``id``); other tables are ignored.

        Raises ``ValueError`` for a table a tracked app does not declare, or a row without an id.
        """
        facts: Tables = {f"{name}.{e.table}": {} for name, app in self.apps.items() for e in app.entities.values()}
        by_table = {f"{name}.{e.table}": e for name, app in self.apps.items() for e in app.entities.values()}
        for table, rows in records.items():
            app = table.split(".", 1)[0]
            if app not in self.apps:
                continue
            ent = by_table.get(table)
            if ent is None:
                raise ValueError(f"fixtures seed {table!r}, which the simulated app {app!r} does not declare")
            tbl = facts[table]
            for row in rows:
                rid = row.get(ent.key, row.get("id"))
                if not isinstance(rid, (str, int)) or isinstance(rid, bool) or rid == "":
                    raise ValueError(f"record in {table!r} needs {ent.key!r} (or 'id'): {dict(row)!r}")
                tbl[str(rid)] = dict(row)
        self.facts = facts
        self._view = {k: dict(v) for k, v in facts.items()}

    def _objects(self, app: str, value: Any, out: list[tuple[str, EntitySpec, dict[str, Any]]]) -> None:
        if isinstance(value, dict):
            for name, ent in self._entities[app]:
                rid = value.get(ent.key)
                if isinstance(rid, (str, int)) and not isinstance(rid, bool) and rid != "":
                    out.append((name, ent, value))
                    break
            for v in value.values():
                self._objects(app, v, out)
        elif isinstance(value, list):
            for v in value:
                self._objects(app, v, out)

    def merge(self, app: SimApp | str, result: Any, *, write: bool = True) -> list[str]:
        """Record the facts in ``result`` (any JSON value) of a call of ``app``.

        Every object in ``result`` (searched through nested objects and lists) that holds an
        entity's key describes that entity: its fields are merged into the entity's record (the
        record is created the first time); objects of entities declared earlier in
        :attr:`SimApp.entities` are merged first, so an order is checked against the restaurant
        the same reply describes. A field that contradicts an established fact is not merged;
        instead the contradiction is returned, in words naming the entity, the field, the old
        and the new value: an ``immutable`` field (or the ``created`` time) asserted with another
        value, a ``terminal`` status left, a status moving back in ``order``, a ``times`` field
        moving backwards.

        Then the record is checked as a whole (:meth:`rule_issues`): a ``times`` field before the
        ``created`` time, ``sums`` and ``line_sums`` that do not add up, ``refs`` facts that
        differ from the referenced entity's. A violation this reply introduced is returned; the
        fields of the rule it changed are kept out of the record when the rule also involves
        established facts (earlier fields of the record, or the referenced entity), and merged
        when the reply asserted all of them at once (there is nothing earlier to prefer).
        ``write`` (the call was a write) also copies the touched records into :attr:`tables`.

        Returns the contradictions (empty when consistent). Raises ``KeyError`` for an app the
        ledger does not track.
        """
        name = app if isinstance(app, str) else app.name
        found: list[tuple[str, EntitySpec, dict[str, Any]]] = []
        self._objects(name, result, found)
        rank = self._rank[name]
        found.sort(key=lambda f: rank[f[0]])
        issues: list[str] = []
        for ent_name, ent, obj in found:
            table = f"{name}.{ent.table}"
            rid = str(obj[ent.key])
            tbl = self.facts.setdefault(table, {})
            old = tbl.get(rid)
            label = f"{name} {ent_name} {rid!r}"
            if old is None:
                new = dict(obj)
            else:
                new = dict(old)
                for field, val in obj.items():
                    if field not in old:
                        new[field] = val
                        continue
                    prev = old[field]
                    why = self._conflict(ent, field, prev, val)
                    if why:
                        issues.append(f"{label}: {why.format(field=field, old=_compact(prev), new=_compact(val))}")
                        continue
                    new[field] = val
            before = {text for text, _, _ in self.rule_issues(name, ent, old)} if old is not None else set()
            for text, fields, referenced in self.rule_issues(name, ent, new):
                if text in before:
                    continue  # already so before this reply: reported when it arose
                issues.append(f"{label}: {text}")
                if referenced or (old is not None and fields & old.keys()):
                    for field in fields:
                        if old is not None and field in old:
                            new[field] = old[field]
                        else:
                            new.pop(field, None)
            if new == old:
                new = old
            tbl[rid] = new
            if write:
                self._view.setdefault(table, {})[rid] = new
        return issues

    def rule_issues(self, app: str, ent: EntitySpec, record: Mapping[str, Any]) -> list[tuple[str, set[str], bool]]:
        """The whole-record rules ``record`` (an ``ent`` of ``app``) breaks, against the facts
        known now: ``(sentence, the record's fields involved, whether a referenced entity's facts
        are involved)`` for each. Rules whose fields are not all known yet are skipped."""
        out: list[tuple[str, set[str], bool]] = []
        created = record.get(ent.created) if ent.created else None
        if created is not None:
            for field in ent.times:
                if field in record and _earlier(record[field], created):
                    out.append(
                        (
                            f"{field} {_compact(record[field])} lies before {ent.created} {_compact(created)}",
                            {field},
                            False,
                        )
                    )
        for rule in ent.sums:
            total = record.get(rule.total)
            parts = [record.get(p) for p in rule.parts]
            if _number(total) and all(_number(v) for v in parts):
                expected = math.fsum(parts)
                if abs(total - expected) > rule.tolerance + 1e-9:
                    sum_text = " + ".join(rule.parts)
                    out.append(
                        (
                            f"{rule.total} {_compact(total)} is not {sum_text} ({_amount(expected)})",
                            {rule.total, *rule.parts},
                            False,
                        )
                    )
        for rule in ent.line_sums:
            total, lines = record.get(rule.total), record.get(rule.lines)
            if not _number(total) or not isinstance(lines, list):
                continue
            terms = []
            for line in lines:
                price = line.get(rule.price) if isinstance(line, dict) else None
                qty = (line.get(rule.qty) if isinstance(line, dict) else None) if rule.qty else 1
                if not (_number(price) and _number(qty)):
                    break
                terms.append(price * qty)
            else:
                expected = math.fsum(terms)
                if abs(total - expected) > rule.tolerance + 1e-9:
                    what = f"{rule.qty} × {rule.price}" if rule.qty else rule.price
                    out.append(
                        (
                            f"{rule.total} {_compact(total)} is not the sum of its {rule.lines}' {what} "
                            f"({_amount(expected)})",
                            {rule.total, rule.lines},
                            False,
                        )
                    )
        for ref in ent.refs:
            rid = record.get(ref.via)
            if not isinstance(rid, (str, int)) or isinstance(rid, bool):
                continue
            target_spec = self.apps[app].entities[ref.entity]
            other = self.facts.get(f"{app}.{target_spec.table}", {}).get(str(rid))
            if other is None:
                continue
            who = f"{ref.entity} {str(rid)!r}"
            for mine, theirs in ref.same.items():
                if mine in record and theirs in other and not _same(record[mine], other[theirs]):
                    out.append(
                        (
                            f"{mine} {_compact(record[mine])} differs from {who}'s {theirs} {_compact(other[theirs])}",
                            {mine},
                            True,
                        )
                    )
            cat = ref.lines
            if (
                cat is None
                or not isinstance(record.get(cat.lines), list)
                or not isinstance(other.get(cat.catalog), list)
            ):
                continue
            entries = {
                str(e[cat.key]): e for e in other[cat.catalog] if isinstance(e, dict) and e.get(cat.key) is not None
            }
            for i, line in enumerate(record[cat.lines]):
                entry = entries.get(str(line.get(cat.key))) if isinstance(line, dict) else None
                if entry is None:
                    continue
                for mine, theirs in cat.same.items():
                    if mine in line and theirs in entry and not _same(line[mine], entry[theirs]):
                        out.append(
                            (
                                f"{cat.lines}[{i}] ({cat.key} {_compact(line[cat.key])}) {mine} "
                                f"{_compact(line[mine])} differs from {who}'s {cat.catalog} {theirs} "
                                f"{_compact(entry[theirs])}",
                                {cat.lines},
                                True,
                            )
                        )
        return out

    @staticmethod
    def _conflict(ent: EntitySpec, field: str, prev: Any, val: Any) -> str | None:
        """A message template (``{field}``, ``{old}``, ``{new}``) when ``val`` contradicts ``prev``."""
        if (field in ent.immutable or field == ent.created) and not _same(prev, val):
            return "immutable {field} changed from {old} to {new}"
        if field == ent.status and prev != val:
            if prev in ent.terminal:
                return "{field} left the terminal status {old} for {new}"
            if ent.order and prev in ent.order and val in ent.order and ent.order.index(val) < ent.order.index(prev):
                return "{field} moved back in its lifecycle from {old} to {new}"
        if field in ent.times and _earlier(val, prev):
            return "{field} moved backwards in time from {old} to {new}"
        return None

    def app_facts(self, app: str) -> Tables:
        """The fact tables of one app (``"<app>.*"``)."""
        prefix = app + "."
        return {k: v for k, v in self.facts.items() if k.startswith(prefix)}

    def digest(self, app: str | None = None) -> str:
        """sha256 (hex) of the canonical JSON of the facts (of one app's tables when ``app`` is given)."""
        return _sha256(canonical_json(self.facts if app is None else self.app_facts(app)))

    def snapshot(self) -> LedgerSnapshot:
        """A snapshot sharing the (immutable) records; O(records)."""
        return LedgerSnapshot({k: dict(v) for k, v in self.facts.items()}, {k: dict(v) for k, v in self._view.items()})

    def restore(self, snap: LedgerSnapshot) -> None:
        """Return to ``snap``; the snapshot stays usable."""
        self.facts = {k: dict(v) for k, v in snap.facts.items()}
        self._view = {k: dict(v) for k, v in snap.view.items()}


# ---------------------------------------------------------------------------------------------
# The simulation cache
# ---------------------------------------------------------------------------------------------

_MISS = object()


class SimulationCache:
    """Simulated results by key: an in-memory dict, optionally backed by a JSON Lines file.

    The key (:meth:`key`) is the sha256 of the simulator model, the tool name, the canonical
    arguments and the digest of the simulated world's state (the app's ledger facts plus the
    task's records and script of the app). The phone clock is deliberately left out: the same
    call on the same world gets the same answer however many steps led there.

    Consequences: replaying an episode with the same actions reproduces it byte for byte (every
    simulated result comes from the cache, so the trace's ``model_dump_json()`` is identical), and
    a group of rollouts sharing one cache shares one world: two rollouts that make the same call in
    the same state see the same result (what GRPO-style group baselines need).

    With ``path``, entries are loaded when the cache is opened and each ``put`` appends one line
    ``{"key": ..., "tool": ..., "result": ...}``; a torn last line (a crash mid-write) is skipped.
    Thread-safe.

    Args:
        path: the JSONL file (created on the first ``put``), or None for memory only.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()
        if self.path is not None and self.path.exists():
            with self.path.open(encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        row = json.loads(line)
                        self._data[row["key"]] = _compact(row["result"])
                    except (ValueError, KeyError, TypeError):
                        log.warning("%s:%d: skipping an unreadable cache line", self.path, n)

    @staticmethod
    def key(model: str, tool: str, arguments: Mapping[str, Any], ledger_digest: str) -> str:
        """sha256 (hex) of ``[CACHE_VERSION, model, tool, canonical arguments, ledger_digest]``."""
        return _sha256(canonical_json([CACHE_VERSION, model, tool, canonical_json(arguments), ledger_digest]))

    def get(self, key: str, default: Any = None) -> Any:
        """A fresh copy of the result stored under ``key``, or ``default``."""
        text = self._data.get(key)
        return default if text is None else json.loads(text)

    def put(self, key: str, result: Any, *, tool: str = "") -> None:
        """Store ``result`` (a JSON value) under ``key`` and append it to the file, if any."""
        text = _compact(result)
        with self._lock:
            if self._data.get(key) == text:
                return
            self._data[key] = text
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                line = '{"key":' + json.dumps(key) + ',"tool":' + json.dumps(tool) + ',"result":' + text + "}\n"
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(line)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)


# ---------------------------------------------------------------------------------------------
# The backend
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SimEntry:
    """A simulated tool as the env sees it: ``spec``, ``validator`` (arguments), plus the app,
    the validator of replies (return schema or :data:`ERROR_SCHEMA`) and that reply schema."""

    spec: ToolSpec
    validator: SchemaValidator
    app: SimApp
    reply: SchemaValidator
    reply_schema: dict[str, Any]


RULES = """Rules:
1. Stay consistent with the facts: never contradict an id, name, price, total, item list, seat, status or time already established. Statuses only move forward; a delivered, returned, cancelled or used entity stays so. Timestamps never move backwards.
2. Where the facts say nothing, invent plausible new ids and values in the style of the existing ones (ids like "ord_301"), realistic for the user's city and the current date. Events that already happened lie before the phone's clock.
3. A write takes effect: its result shows the world after the change.
4. If the call cannot succeed in this world (an unknown id, an action the current status forbids), answer {"error": "<one sentence>", "kind": "not_found" | "conflict" | "precondition_failed"} instead.
5. Answer with ONE JSON value valid for the tool's return schema: no prose, no code fences."""
"""The rules of the simulator's system prompt (consistency, invention, writes, errors, format)."""


def _strip_fences(text: str) -> str:
    s = text.strip()
    if s.startswith("```"):
        nl = s.find("\n")
        s = s[nl + 1 :] if nl >= 0 else s[3:]
        if s.rstrip().endswith("```"):
            s = s.rstrip()[:-3]
    return s.strip()


def _screen_lines(result: Any, limit: int = 18) -> list[str]:
    def short(v: Any) -> str:
        return v if isinstance(v, str) else _compact(v)

    lines: list[str] = []
    if isinstance(result, dict):
        for k, v in result.items():
            if isinstance(v, list):
                lines.append(f"{k}: {len(v)} item(s)")
                for item in v[:5]:
                    if isinstance(item, dict):
                        scalars = [short(x) for x in item.values() if not isinstance(x, (dict, list))]
                        lines.append("  - " + " | ".join(scalars[:4]))
                    else:
                        lines.append(f"  - {short(item)}")
            elif isinstance(v, dict):
                lines.append(f"{k}: " + ", ".join(f"{a}={short(b)}" for a, b in v.items()))
            else:
                lines.append(f"{k}: {short(v)}")
    elif result is not None:
        lines.append(short(result))
    return [line if line.isascii() else line.encode("ascii", "replace").decode("ascii") for line in lines[:limit]]


_entry_cache: dict[int, tuple[SimApp, dict[str, SimEntry]]] = {}
"""Tool entries per app object (validators are costly to build; apps are shared per process)."""


class LLMSimBackend(Backend):
    """Long-tail apps simulated by a language model, kept consistent by a :class:`FactLedger`.

    Args:
        client: the simulator model (:class:`~phoneenv.llm.ChatClient`); without one, only
            scripted and cached results are served (anything else is a ``device_error``).
        apps: the simulated apps by name (default: :func:`load_sim_apps`).
        cache: a :class:`SimulationCache` shared by the rollouts that should share a world.
        max_retries: extra model calls after a reply that is not valid JSON for the schema.
        model: the model name in cache keys (default: ``client.model``, else ``"none"``), so a
            cache written with a model can be replayed without one.
        max_tokens: output token budget of one simulator call.
        screen_size: (width, height) of screenshots in pixels.

    Every call advances the phone clock by :data:`SECONDS_PER_CALL`. ``simulator_usage`` sums the
    simulator's token counts (a :class:`~phoneenv.llm.TokenUsage`).
    """

    name = "llmsim"

    def __init__(
        self,
        client: ChatClient | None = None,
        apps: Mapping[str, SimApp] | None = None,
        cache: SimulationCache | None = None,
        max_retries: int = 2,
        *,
        model: str | None = None,
        max_tokens: int = 1024,
        screen_size: tuple[int, int] = (360, 640),
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.client = client
        self.apps: dict[str, SimApp] = dict(apps) if apps is not None else load_sim_apps()
        self.cache = cache
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.screen_size = screen_size
        self._model = model
        self.simulator_usage = TokenUsage()
        self._entries: dict[str, dict[str, SimEntry]] = {name: self._build(app) for name, app in self.apps.items()}
        self._app_digest = {
            name: _sha256(canonical_json(app.model_dump(mode="json"))) for name, app in self.apps.items()
        }
        self._tool_sets: dict[tuple[str, ...], dict[str, SimEntry]] = {}
        self._active: tuple[str, ...] = tuple(self.apps)
        self._tools = self._tools_for(self._active)
        self.ledger = FactLedger(self.apps)
        self._issues: list[str] = []
        self._tz: dt.tzinfo = dt.timezone.utc
        self._now = 0.0
        self._task: TaskSpec | None = None
        self._location = "unknown"
        self._scripted: dict[tuple[str, str], str] = {}
        self._world: dict[str, str] = {}
        self._fixture_part: dict[str, str] = {}
        self._last_app: str | None = None
        self._last_result: Any = None
        self._accounts: dict[str, dict[str, Any]] = {}
        self._account_source: Backend | None = None

    # -- tools ----------------------------------------------------------------------------------
    @staticmethod
    def _build(app: SimApp) -> dict[str, SimEntry]:
        hit = _entry_cache.get(id(app))
        if hit is not None and hit[0] is app:
            return hit[1]
        out = {}
        for spec, t in zip(app.specs(), app.tools, strict=True):
            reply_schema = {"anyOf": [t.returns, ERROR_SCHEMA]}
            out[spec.name] = SimEntry(
                spec, SchemaValidator(t.parameters), app, SchemaValidator(reply_schema), reply_schema
            )
        _entry_cache[id(app)] = (app, out)
        return out

    def _tools_for(self, active: tuple[str, ...]) -> dict[str, SimEntry]:
        tools = self._tool_sets.get(active)
        if tools is None:
            tools = {}
            for name in active:
                tools.update(self._entries[name])
            self._tool_sets[active] = tools
        return tools

    def tools(self) -> Mapping[str, SimEntry]:
        """The tools of the simulated apps the current task uses (all of them before a reset, or
        when the task names none), by ``"<app>.<verb>"``; the same object while the set is unchanged."""
        return self._tools

    def _active_apps(self, task: TaskSpec) -> tuple[str, ...]:
        fx = task.fixtures
        named = set(task.apps) | set(fx.installed_apps or ())
        named |= {t.split(".", 1)[0] for t in fx.records}
        named |= {c.tool.split(".", 1)[0] for c in fx.simulated}
        active = tuple(a for a in self.apps if a in named)
        return active or tuple(self.apps)

    # -- lifecycle ------------------------------------------------------------------------------
    def reset(self, task: TaskSpec) -> None:
        """Seed the ledger from ``task.fixtures.records`` (simulated apps' tables), set the clock
        from ``fixtures.clock``/``timezone``, load the script (``fixtures.simulated``) and clear
        the consistency issues.

        Raises ``ValueError`` for a bad clock or timezone, a seeded table or scripted tool a
        simulated app does not declare, or a scripted result its return schema rejects.
        """
        fx = task.fixtures
        try:
            tz = ZoneInfo(fx.timezone)
            local = dt.datetime.fromisoformat(fx.clock)
        except Exception as exc:  # zoneinfo raises several types
            raise ValueError(f"bad clock/timezone in fixtures: {exc}") from exc
        active = self._active_apps(task)
        scripted: dict[tuple[str, str], str] = {}
        per_app: dict[str, list[Any]] = {}
        for sc in fx.simulated:
            app = sc.tool.split(".", 1)[0]
            if app not in self.apps:
                continue  # another backend's tool
            entry = self._entries[app].get(sc.tool)
            if entry is None:
                raise ValueError(f"task {task.id!r} scripts {sc.tool!r}, which the simulated app {app!r} lacks")
            try:
                args = entry.validator.validate(sc.arguments)
            except ArgumentError:
                args = sc.arguments
            err = entry.reply.error(sc.result)
            if err is not None:
                raise ValueError(f"task {task.id!r}: scripted result of {sc.tool} is invalid: {err}")
            scripted[(sc.tool, canonical_json(args))] = _compact(sc.result)
            per_app.setdefault(app, []).append({"call": {"name": sc.tool, "arguments": args}, "result": sc.result})
        self.ledger.seed(fx.records)
        self._tz = tz
        self._now = local.replace(tzinfo=tz).timestamp() if local.tzinfo is None else local.timestamp()
        self._task = task
        self._location = _compact(fx.location)
        self._scripted = scripted
        self._fixture_part = {}
        self._world = {}
        for name in self.apps:
            records = {t: rows for t, rows in fx.records.items() if t.split(".", 1)[0] == name}
            part = {"records": records, "script": per_app.get(name, [])}
            self._fixture_part[name] = _compact(part)
            self._world[name] = _sha256(
                canonical_json([part, fx.clock, fx.timezone, fx.location, self._app_digest[name]])
            )
        self._issues = []
        self._last_app = None
        self._last_result = None
        self._accounts = {
            app: {"app": app, "account": acc.get("account"), "signed_in": bool(acc.get("signed_in", False))}
            for app, acc in fx.accounts.items()
            if app in self.apps
        }
        if active != self._active:
            self._active = active
            self._tools = self._tools_for(active)

    def call(self, name: str, arguments: dict[str, Any]) -> Feedback:
        """Serve tool ``name`` from the script, the cache or the simulator (in that order), after
        the clock advanced and :meth:`~phoneenv.backends.base.Backend.login_gate` let it through
        (a tool that requires login, of an app signed out: ``login_required``, as on the sandbox).

        Never raises. A reply ``{"error": ...}`` becomes a recoverable ``not_found`` (or the
        ``kind`` it names) feedback; a simulator that fails (:class:`InfrastructureError`, or no
        valid reply after ``1 + max_retries`` attempts, or no simulator at all) a non-recoverable
        ``device_error`` (``timeout`` for a timed-out server) — an infrastructure error.
        """
        entry = self._tools.get(name)
        if entry is None:
            return Feedback(
                ok=False, error=ErrorKind.UNKNOWN_TOOL, message=f"{name!r} is not installed", recoverable=True
            )
        self._now += SECONDS_PER_CALL
        denied = self.login_gate(entry.spec)
        if denied is not None:
            return denied
        app = entry.app
        self._last_app = app.name
        canon = canonical_json(arguments)
        text = self._scripted.get((name, canon))
        key = None
        if text is None and self.cache is not None:
            key = self.cache_key(name, arguments)
            cached = self.cache.get(key, _MISS)
            if cached is not _MISS:
                text = _compact(cached)
        if text is None:
            if self.client is None:
                # A scripted world: it knows only what the task scripts. Anything else is
                # answered as the app would answer a request for something that does not exist,
                # so an agent's wrong call counts against the agent, not the infrastructure.
                return Feedback(
                    ok=False,
                    error=ErrorKind.NOT_FOUND,
                    message=f"{name}: nothing matches these arguments",
                    hint="check the ids and values against earlier results",
                    recoverable=True,
                )
            try:
                value, error = self._simulate(entry, arguments)
            except InfrastructureError as exc:
                kind = ErrorKind.TIMEOUT if exc.kind == "timeout" else ErrorKind.DEVICE_ERROR
                return Feedback(ok=False, error=kind, message=f"the simulator failed: {exc}", recoverable=False)
            except Exception as exc:
                log.exception("simulator client raised on %s", name)
                return Feedback(
                    ok=False,
                    error=ErrorKind.INTERNAL_ERROR,
                    message=f"the simulator client failed: {type(exc).__name__}",
                    recoverable=False,
                )
            if error is not None:
                return Feedback(ok=False, error=ErrorKind.DEVICE_ERROR, message=error, recoverable=False)
            text = _compact(value)
            if self.cache is not None:
                self.cache.put(key or self.cache_key(name, arguments), value, tool=name)
        result = json.loads(text)
        if isinstance(result, dict) and isinstance(result.get("error"), str):
            kind = result.get("kind")
            self._last_result = result
            return Feedback(
                ok=False,
                error=ErrorKind(kind) if kind in _ERROR_KINDS else ErrorKind.NOT_FOUND,
                message=result["error"],
                recoverable=True,
            )
        self._issues.extend(
            f"{name}: {issue}"
            for issue in self.ledger.merge(app, json.loads(text), write=entry.spec.effect is not Effect.READ)
        )
        self._last_result = result
        return Feedback(ok=True, result=result)

    # -- simulation -----------------------------------------------------------------------------
    def _model_name(self) -> str:
        return self._model or getattr(self.client, "model", None) or "none"

    def cache_key(self, name: str, arguments: Mapping[str, Any]) -> str:
        """The :class:`SimulationCache` key of calling ``name`` with ``arguments`` now: model,
        tool, arguments, and the digest of the app's world (its ledger facts, and the task's
        records, script and start clock)."""
        app = name.split(".", 1)[0]
        world = _sha256(self._world.get(app, "") + self.ledger.digest(app))
        return SimulationCache.key(self._model_name(), name, arguments, world)

    def messages_for(self, name: str, arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The chat messages that ask the simulator for the result of ``name(arguments)`` now.

        System: the role ("You simulate the <title> app ..."), the app's description, the rules,
        the phone's clock, the tool spec (JSON), the task's records and script of the app, and the
        facts established so far (ledger JSON). User: the call as ``{"name", "arguments"}`` JSON.
        Raises ``KeyError`` for a tool this backend does not offer.
        """
        entry = self._tools[name]
        app = entry.app
        spec = entry.spec.model_dump(include={"name", "description", "parameters", "returns", "effect"}, mode="json")
        system = "\n\n".join(
            [
                f"You simulate the {app.title} app (tool prefix {app.name!r}) on the user's phone: you are its "
                f"backend and answer each tool call with the result the real app would return.\n{app.description}",
                RULES,
                f"The phone's clock: {self.clock()} ({self._tz}). The user's location: {self._location}.",
                f"The tool being called:\n{_compact(spec)}",
                "The task's starting world for this app (seeded records, and scripted results the app returns "
                f"for exactly these calls):\n{self._fixture_part.get(app.name, '{}')}",
                f"Facts established so far, by table and id (binding):\n{_compact(self.ledger.app_facts(app.name))}",
            ]
        )
        user = _compact({"name": name, "arguments": dict(arguments)})
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _simulate(self, entry: SimEntry, arguments: Mapping[str, Any]) -> tuple[Any, str | None]:
        """(result, None) or (None, why the replies were invalid). Raises InfrastructureError."""
        assert self.client is not None
        messages = self.messages_for(entry.spec.name, arguments)
        problem = ""
        for _ in range(1 + self.max_retries):
            reply = self.client.chat(messages, json_schema=entry.reply_schema, max_tokens=self.max_tokens)
            self.simulator_usage = self.simulator_usage + reply.usage
            content = reply.content or ""
            try:
                value = json.loads(_strip_fences(content))
            except ValueError as exc:
                problem = f"not valid JSON ({exc})"
            else:
                err = entry.reply.error(value)
                if err is None:
                    return value, None
                problem = f"does not match the return schema at {err}"
            messages = [
                *messages,
                {"role": "assistant", "content": content[:4000]},
                {
                    "role": "user",
                    "content": f"Your reply is {problem}. Answer again with ONE JSON value valid for the "
                    "tool's return schema (or the error object), nothing else.",
                },
            ]
        return None, (
            f"the simulator gave no valid result for {entry.spec.name} in {1 + self.max_retries} attempt(s): "
            f"the last reply is {problem}"
        )

    # -- world ----------------------------------------------------------------------------------
    def account(self, app: str) -> Mapping[str, Any] | None:
        """``app``'s account now (``account``, ``signed_in``): from the world that keeps the
        phone's accounts when one is linked (:meth:`use_accounts_of`: the hybrid router links the
        sandbox, whose ``system.sign_in`` then unlocks the app), else as the task's
        ``fixtures.accounts`` declare it. An app the accounts do not name is signed in: the
        user's long-tail apps are logged in unless a fixture logs one out."""
        source = self._account_source
        acc = source.account(app) if source is not None else self._accounts.get(app)
        return acc if acc is not None else {"app": app, "account": None, "signed_in": True}

    def use_accounts_of(self, backend: Backend | None) -> None:
        """Read accounts from ``backend`` (its :meth:`~phoneenv.backends.base.Backend.account`)
        instead of the fixtures; None unlinks."""
        self._account_source = backend

    def consistency_issues(self) -> list[str]:
        """Contradictions found this episode, one sentence each (tool, entity, field, old, new)."""
        return list(self._issues)

    def can_run(self, task: TaskSpec) -> bool:
        """Whether ``task`` declares ``llmsim``."""
        return "llmsim" in task.backends

    def snapshot(self) -> tuple[Any, ...]:
        """The ledger, clock, issues and last screen; O(records)."""
        return (self.ledger.snapshot(), self._now, tuple(self._issues), self._last_app, self._last_result)

    def restore(self, snapshot: tuple[Any, ...]) -> None:
        """Return to ``snapshot`` (ledger, clock, issues, last screen)."""
        ledger, self._now, issues, self._last_app, self._last_result = snapshot
        self.ledger.restore(ledger)
        self._issues = list(issues)

    def tables(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """The ledger's verification view (:attr:`FactLedger.tables`), live."""
        return self.ledger.tables

    def clock_seconds(self) -> float:
        """The phone clock, seconds since the Unix epoch."""
        return self._now

    def set_clock(self, seconds: float) -> None:
        """Move the clock to ``seconds`` (epoch) if that is later (a router keeps worlds in step)."""
        self._now = max(self._now, seconds)

    def format_clock(self, seconds: float) -> str:
        """``seconds`` as the phone's local time, ``YYYY-MM-DDTHH:MM:SS``."""
        return dt.datetime.fromtimestamp(seconds, self._tz).replace(tzinfo=None).isoformat(timespec="seconds")

    def screenshot(self) -> np.ndarray:
        """The last simulated app's title and the last result's top-level fields, ``uint8`` (H, W, 3)."""
        from phoneenv.screen import render_screen

        return render_screen(*self._screen(), self.screen_size)

    def screen_text(self) -> str:
        """The screen :meth:`screenshot` draws, as text."""
        from phoneenv.screen import render_screen_text

        return render_screen_text(*self._screen(), self.screen_size)

    def _screen(self) -> tuple[str, str, list[str]]:
        if self._last_app is not None:
            title = self.apps[self._last_app].title
            lines = _screen_lines(self._last_result)
        else:
            title = "Simulated apps"
            lines = [self.apps[a].title for a in self._active]
        return f"{self.clock()[11:16]}  {title}", title, lines
