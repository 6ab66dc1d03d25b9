"""Field conditions over records, declared as data (no lambdas in tasks).

A ``where`` clause maps field names to conditions; a record matches when every condition holds::

    >>> match({"body": "Running 10 min late", "to": "+4915"}, {"body": {"icontains": "late"}, "to": "+4915"})
    True

Operators: a literal means equality (``True`` does not equal ``1``); ``{"eq": v}``, ``{"ne": v}``, ``{"in": [..]}``,
``{"iequals": s}`` (case- and space-insensitive), ``{"icontains": s}``, ``{"startswith": s}``,
``{"gte": x}``, ``{"lte": x}`` (numbers or ISO strings), ``{"has": v}`` (a list/tuple field holds
``v``, case-insensitive for strings), ``{"len": n}``, ``{"number": s}`` (same phone line: last
nine digits equal). Several operators in one object must all hold. An unknown operator raises
``ValueError`` (a task bug, caught by ``phoneenv tasks validate``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["OPERATORS", "match", "norm"]


def norm(text: Any) -> str:
    """Case-folded text with runs of whitespace collapsed (None → "")."""
    return " ".join(str(text if text is not None else "").casefold().split())


def _digits(x: Any) -> str:
    return "".join(ch for ch in str(x) if ch.isdigit())


def _has(value: Any, item: Any) -> bool:
    if not isinstance(value, (list, tuple)):
        return False
    if isinstance(item, str):
        return any(isinstance(v, str) and norm(v) == norm(item) for v in value)
    return item in value


OPERATORS = {
    "eq": lambda v, a: v == a,
    "ne": lambda v, a: v != a,
    "in": lambda v, a: v in a,
    "iequals": lambda v, a: v is not None and norm(v) == norm(a),
    "icontains": lambda v, a: v is not None and norm(a) in norm(v),
    "startswith": lambda v, a: isinstance(v, str) and v.startswith(a),
    "gte": lambda v, a: v is not None and type(v) is type(a) and v >= a,
    "lte": lambda v, a: v is not None and type(v) is type(a) and v <= a,
    "has": _has,
    "len": lambda v, a: isinstance(v, (list, tuple, str)) and len(v) == a,
    "number": lambda v, a: v is not None and len(_digits(a)) >= 3 and _digits(v)[-9:] == _digits(a)[-9:],
}


def check(value: Any, cond: Any) -> bool:
    """Whether ``value`` satisfies one condition (literal or operator object)."""
    if isinstance(cond, dict):
        for op, arg in cond.items():
            fn = OPERATORS.get(op)
            if fn is None:
                raise ValueError(f"unknown operator {op!r}; known: {sorted(OPERATORS)}")
            if not fn(value, arg):
                return False
        return True
    if isinstance(cond, bool) or isinstance(value, bool):
        return type(value) is type(cond) and value == cond
    return value == cond


def match(record: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """Whether ``record`` satisfies every condition of ``where`` (missing fields are None)."""
    return all(check(record.get(field), cond) for field, cond in where.items())
