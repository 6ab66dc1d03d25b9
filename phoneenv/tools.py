"""Typed tools: the ``@tool`` decorator, schema generation from type hints, argument validation.

A tool is a method of an app whose type hints *are* its schema::

    class Notes(App):
        @tool(effect="write")
        def create(self, title: str, body: str = "") -> NoteResult:
            '''Create a note.

            Args:
                title: Title shown in the list.
                body: Text of the note.
            '''

:func:`build_tool` turns it into a :class:`~phoneenv.contract.ToolSpec` (parameters from the
signature through a pydantic model, descriptions from the Google-style docstring, ``returns`` from
the return annotation) and an :class:`ArgumentValidator` that checks a JSON ``arguments`` object
against the same model in strict mode (``"5"`` is not an integer).

Every parameter is bounded, so that what the schema accepts the implementation can take and an
agent's bad value is ``invalid_arguments``, never a crash inside the tool (an ``internal_error``,
which counts against the infrastructure): an ``int`` without bounds of its own gets SQLite's
signed 64-bit range (:data:`INT_MIN` … :data:`INT_MAX`), a ``float`` must be finite (no ``NaN`` or
``Infinity``, which Python's JSON reader accepts), and a ``str`` without a ``max_length`` gets
:data:`MAX_STRING` characters (enforced, but left out of the schema, so constrained decoding keeps
its own shorter budget for free text). Bounds a parameter declares (``Annotated[int, Field(ge=1, le=50)]``)
take precedence; declare tighter ones wherever the meaning allows (counts, minutes, limits).
"""

from __future__ import annotations

import copy
import functools
import inspect
import itertools
import struct
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import docstring_parser
import numpy as np
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, create_model

from phoneenv.compact import INT_MAX, INT_MIN, compact_parameters, compact_text
from phoneenv.contract import Domain, Effect, ErrorKind, ToolSpec
from phoneenv.errors import ArgumentError, ToolError
from phoneenv.sharing import ReadOnlyList

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "MAX_STRING",
    "ArgumentError",
    "ArgumentValidator",
    "ToolDef",
    "ToolError",
    "bounded",
    "build_tool",
    "compact_parameters",
    "compact_text",
    "nearest_tools",
    "tool",
    "tool_def_from_spec",
]

MAX_STRING = 20_000
"""Longest string (characters) a tool parameter accepts unless it declares its own ``max_length``."""

_RECOVERABLE = {
    ErrorKind.INVALID_JSON: True,
    ErrorKind.UNKNOWN_TOOL: True,
    ErrorKind.INVALID_ARGUMENTS: True,
    ErrorKind.PERMISSION_DENIED: True,
    ErrorKind.LOGIN_REQUIRED: True,
    ErrorKind.NOT_FOUND: True,
    ErrorKind.CONFLICT: True,
    ErrorKind.PRECONDITION_FAILED: True,
    ErrorKind.CONFIRMATION_REQUIRED: True,
    ErrorKind.DEVICE_ERROR: False,
    ErrorKind.TIMEOUT: False,
    ErrorKind.INTERNAL_ERROR: False,
}


def recoverable(kind: ErrorKind) -> bool:
    """Whether an agent can recover from ``kind`` by acting differently."""
    return _RECOVERABLE[kind]


@dataclass(frozen=True)
class _ToolMeta:
    effect: Effect
    domain: Domain | None
    permissions: tuple[str, ...]
    requires_login: bool
    returns_image: bool
    secret: tuple[str, ...]
    name: str | None
    writes: tuple[str, ...] = ()


def tool(
    *,
    effect: Effect | str = Effect.READ,
    domain: Domain | str | None = None,
    permissions: tuple[str, ...] | list[str] = (),
    requires_login: bool = False,
    returns_image: bool = False,
    secret: tuple[str, ...] | list[str] = (),
    name: str | None = None,
    writes: tuple[str, ...] | list[str] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark an app method as a tool.

    Args:
        effect: ``read``, ``write`` or ``sensitive`` (payment, sending, deleting, sharing, granting).
        domain: query domain; defaults to the app's.
        permissions: Android runtime permissions the app needs for this call.
        requires_login: the app's account must be signed in.
        returns_image: the result carries a screenshot.
        secret: argument names redacted as ``***`` in traces.
        name: the verb, if not the method name (``app.verb`` is the tool name).
        writes: the tables a successful call may change: the app's own by name (``"lists"``),
            another app's as ``"app.table"`` (a booking's confirmation mail, ``"mail.messages"``).
            Every ``write`` and ``sensitive`` tool declares them; a change outside them is a bug
            the tool tests catch, so the records a call can touch (and so collateral damage) are
            known from the spec.
    """

    meta = _ToolMeta(
        Effect(effect),
        Domain(domain) if domain is not None else None,
        tuple(permissions),
        requires_login,
        returns_image,
        tuple(secret),
        name,
        tuple(writes),
    )

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__phoneenv_tool__ = meta  # type: ignore[attr-defined]
        return fn

    return mark


class ArgumentValidator:
    """Checks a tool's JSON ``arguments`` object against the pydantic model of its signature.

    ``validate(arguments) -> dict`` returns the arguments with defaults filled in, or raises
    :class:`ArgumentError`. Strict mode: no coercion of ``"5"`` to ``5``; unknown keys rejected.
    Cost: one pydantic-core validation (about a microsecond for a few scalar fields).
    """

    __slots__ = ("_fields", "_model", "_validate")

    def __init__(self, model: Any) -> None:
        self._model = model
        self._validate = model.__pydantic_validator__.validate_python
        self._fields = tuple(model.model_fields)

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate; return the argument dict (defaults filled). Raises :class:`ArgumentError`."""
        try:
            inst = self._validate(arguments)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            # a union reports one error per member: the one reaching deepest into the data is
            # the member the value was meant for
            err = max(errors, key=lambda e: len(_data_loc(arguments, e.get("loc", ()))))
            loc = _data_loc(arguments, err.get("loc", ()))
            path = "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in loc) if loc else ""
            kind = err.get("type", "")
            if kind == "missing":
                msg = f"missing required argument {loc[0]!r}" if loc else "missing argument"
            elif kind == "extra_forbidden":
                msg = f"unexpected argument {loc[0]!r}; allowed: {', '.join(self._fields) or 'none'}"
            else:
                where = f"argument {path[1:]!r}" if path else "arguments"
                msg = f"{where}: {err.get('msg', 'invalid value')}"
            expected = _expected_from_error(kind, err)
            raise ArgumentError(msg, path, expected) from None
        return inst.__dict__


def _data_loc(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The part of a pydantic error location that names places in ``data``: the keys and indices
    it holds, without the union-member tags pydantic inserts (``constrained-str``, ``int``...).
    A missing or unexpected argument's own name is kept."""
    out: list[Any] = []
    for part in loc:
        if isinstance(data, dict) and isinstance(part, str) and (part in data or not out):
            out.append(part)
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            out.append(part)
            data = data[part]
    return tuple(out)


def _expected_from_error(kind: str, err: Any) -> str | None:
    if kind == "finite_number":
        return "finite number"
    if kind.endswith("_type"):
        return kind[: -len("_type")].replace("_parsing", "")
    if kind in ("literal_error", "enum"):
        ctx = err.get("ctx") or {}
        return f"one of {ctx.get('expected', '')}".strip()
    if kind.startswith("string_"):
        return "string"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return "number"
    return None


_BOUNDS: dict[type, Any] = {
    int: Field(ge=INT_MIN, le=INT_MAX),
    float: Field(allow_inf_nan=False),
    str: Field(max_length=MAX_STRING),
}
_UNIONS = (Union, types.UnionType)


def bounded(tp: Any) -> Any:
    """``tp`` with the default bounds applied to every ``int``, ``float`` and ``str`` inside it
    (through ``Annotated``, unions, ``Optional``, ``list``, ``tuple``, ``set`` and ``dict``).

    The default sits *under* the parameter's own metadata, so ``Annotated[int, Field(ge=1)]``
    becomes ``1 … INT_MAX`` and ``Annotated[str, Field(max_length=40)]`` keeps 40. ``bool``,
    ``Literal``, enums and models are returned as they are. Raises nothing.
    """
    if tp in _BOUNDS and tp is not bool:
        return Annotated[tp, _BOUNDS[tp]]
    origin = get_origin(tp)
    if origin is None or origin is Literal:
        return tp
    args = get_args(tp)
    if origin is Annotated:
        return Annotated[(bounded(args[0]), *args[1:])]  # type: ignore[valid-type]
    if origin in _UNIONS:
        return Union[tuple(bounded(a) for a in args)]
    if origin in (list, set, frozenset, dict, tuple) and args:
        return origin[tuple(a if a is Ellipsis else bounded(a) for a in args)]
    return tp


def _drop_default_max_length(schema: Any) -> Any:
    """``schema`` without the ``maxLength`` of :data:`MAX_STRING` that :func:`bounded` adds
    (validation enforces it; a decoder given 20,000 characters of room would spend them)."""
    if isinstance(schema, dict):
        return {
            k: _drop_default_max_length(v)
            for k, v in schema.items()
            if not (k == "maxLength" and v == MAX_STRING and schema.get("type") == "string")
        }
    if isinstance(schema, list):
        return [_drop_default_max_length(v) for v in schema]
    return schema


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``{"$ref": "#/$defs/Name"}`` replaced by that definition (its
    sibling keys, such as ``description``, kept over it) and ``$defs`` dropped: a tool's schema
    then stands alone, as function-calling prompts and grammar compilers (xgrammar, which
    resolves ``$ref`` only from the root of the document it is given) expect.

    Raises ``TypeError`` for a recursive definition or a ``$ref`` outside ``#/$defs/``.
    """
    defs = schema.get("$defs", {})

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(v, seen) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if ref is not None:
            name = ref.removeprefix("#/$defs/")
            if name == ref or name not in defs:
                raise TypeError(f"schema $ref {ref!r} is not a local definition")
            if name in seen:
                raise TypeError(f"schema definition {name!r} is recursive; a tool's arguments must be finite")
            siblings = {k: walk(v, seen) for k, v in node.items() if k != "$ref"}
            return {**walk(defs[name], (*seen, name)), **siblings}
        return {k: walk(v, seen) for k, v in node.items() if k != "$defs"}

    return walk(schema, ())


def _returns_schema(ret: Any) -> dict[str, Any]:
    """The JSON Schema of a tool's return annotation, its definitions inlined where they are
    finite; a recursive result (a UI element tree) keeps its ``$defs``, since results are
    described to the agent, never decoded against a grammar. Built once per annotation (many
    tools return one shape); each call gets its own copy."""
    if ret in (None, type(None)):
        return {}
    try:
        return copy.deepcopy(_returns_cached(ret))
    except TypeError:  # an unhashable annotation
        return _returns_uncached(ret)


@functools.lru_cache(maxsize=1024)
def _returns_cached(ret: Any) -> dict[str, Any]:
    return _returns_uncached(ret)


def _returns_uncached(ret: Any) -> dict[str, Any]:
    schema = TypeAdapter(ret).json_schema()
    try:
        return inline_refs(schema)
    except TypeError:
        return schema


class ToolDef:
    """A tool ready to serve: its spec, its argument validator, and the unbound method.

    The validator (a pydantic model of the signature) is built on first use when the ToolDef was
    made from a cached spec (:func:`tool_def_from_spec`): a process that serves one task's tools
    never builds the models of the other ~250.
    """

    __slots__ = ("_app", "_validator", "method", "spec")

    def __init__(self, spec: ToolSpec, validator: ArgumentValidator | None, method: Callable[..., Any]) -> None:
        self.spec = spec
        self.method = method
        self._validator = validator
        self._app = spec.app

    @property
    def validator(self) -> ArgumentValidator:
        """The :class:`ArgumentValidator` of the tool's arguments (built once, on first use)."""
        if self._validator is None:
            self._validator = ArgumentValidator(_arguments_model(self._app, self.method)[0])
        return self._validator

    def __repr__(self) -> str:
        return f"ToolDef({self.spec.name!r})"


def _arguments_model(app: str, method: Callable[..., Any]) -> tuple[Any, dict[str, Any], Any]:
    """The pydantic model of ``method``'s arguments, its type hints and its parsed docstring."""
    hints = get_type_hints(method, include_extras=True)
    doc = docstring_parser.parse(inspect.getdoc(method) or "")
    param_docs = {p.arg_name: (p.description or "") for p in doc.params}
    fields: dict[str, Any] = {}
    for pname, param in list(inspect.signature(method).parameters.items())[1:]:
        if pname not in hints:
            raise TypeError(f"{method.__qualname__}: parameter {pname!r} has no type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (bounded(hints[pname]), Field(default, description=param_docs.get(pname) or None))
    meta: _ToolMeta = method.__phoneenv_tool__  # type: ignore[attr-defined]
    verb = meta.name or method.__name__
    name = f"{app}.{verb}" if app else verb
    model = create_model(  # type: ignore[call-overload]
        name.replace(".", "__"),
        __config__=ConfigDict(extra="forbid", strict=True),
        **fields,
    )
    return model, hints, doc


def build_tool(app: str, app_domain: Domain, method: Callable[..., Any]) -> ToolDef:
    """Build the :class:`ToolDef` of an app method marked with :func:`tool`.

    The parameters schema comes from the signature's type hints (``Annotated[..., Field(...)]``
    constraints included, and the default bounds of :func:`bounded` where a hint gives none),
    descriptions from the Google-style docstring, ``returns`` from the return annotation. Raises
    ``TypeError`` if the method is not marked or a parameter lacks a hint.
    """
    meta: _ToolMeta | None = getattr(method, "__phoneenv_tool__", None)
    if meta is None:
        raise TypeError(f"{method.__qualname__} is not marked with @tool")
    model, hints, doc = _arguments_model(app, method)
    verb = meta.name or method.__name__
    name = f"{app}.{verb}" if app else verb
    params = inline_refs(_drop_default_max_length(model.model_json_schema()))
    params.pop("title", None)
    for prop in params.get("properties", {}).values():
        prop.pop("title", None)
    params.setdefault("required", [])
    ret = hints.get("return")
    returns = _returns_schema(ret)
    description = " ".join(x for x in (doc.short_description, doc.long_description) if x) or name
    spec = ToolSpec(
        name=name,
        description=description,
        parameters=params,
        returns=returns,
        app=app,
        domain=meta.domain or app_domain,
        effect=meta.effect,
        permissions=meta.permissions,
        requires_login=meta.requires_login,
        returns_image=meta.returns_image,
        secret_parameters=meta.secret,
        writes=tuple(t if "." in t or not app else f"{app}.{t}" for t in meta.writes),
    )
    return ToolDef(spec, ArgumentValidator(model), method)


def tool_def_from_spec(spec: ToolSpec, method: Callable[..., Any]) -> ToolDef:
    """The :class:`ToolDef` of ``method`` from its already built ``spec`` (a cached one, see
    :mod:`phoneenv.toolcache`); the argument validator is built on first use. Raises
    ``TypeError`` if the method is not marked with :func:`tool`."""
    if getattr(method, "__phoneenv_tool__", None) is None:
        raise TypeError(f"{method.__qualname__} is not marked with @tool")
    return ToolDef(spec, None, method)


_NEAR_CUTOFF = 0.5
"""Least bigram similarity (Dice) for a tool name to be suggested."""
_APP_CUTOFF = 0.6
"""Least bigram similarity for an app prefix to name an app whose tools are suggested."""
_MAX_INDEXES = 256
"""Distinct tool lists whose name index is kept (each backend's, each sub-agent frame's)."""
_ANSWERS_KEPT = 4096
"""Queries whose nearest names each index keeps."""
_SCORES_KEPT = 1 << 16
"""Scores (a count of shared bigrams against a name) each index keeps per query size."""


def _bigrams(text: str) -> set[str]:
    """The character bigrams of ``^text$`` (the markers weigh the first and last letters)."""
    text = f"^{text}$"
    return set(map(str.__add__, text, text[1:]))  # each character and the next


class _NameIndex:
    """Tool names as bigram sets, indexed two ways. For a cutoff above 0 (the usual question:
    which names are close?), each bigram is a Python integer with one byte per name, 1 in the
    byte of every name that holds the bigram: adding the query's bigrams' integers counts, in
    one byte per name, the bigrams each name shares with the query (a name has fewer than 128
    bigrams, so no byte overflows), and adding one more integer, built once per query size, sets
    the top bit of a byte exactly when its name shares enough bigrams to reach the cutoff; only
    those few names are scored. A cutoff of 0 (rank every name) uses a bigram incidence matrix
    (bigrams × names, numpy), built on first use. Both score in float32, the same operations
    in the same order, so they rank alike."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self._grams = [_bigrams(n.lower()) for n in self.names]
        self.vocab: dict[str, int] = {}
        for g in self._grams:
            for x in g:
                self.vocab.setdefault(x, len(self.vocab))
        lanes = dict.fromkeys(self.vocab, 0)
        for j, g in enumerate(self._grams):
            bit = 1 << (8 * j)
            for x in g:
                lanes[x] += bit
        self.lanes = lanes
        self._fits = all(len(g) < 128 for g in self._grams)  # a byte counts any name's bigrams
        self._top = sum(0x80 << (8 * j) for j in range(len(self.names)))
        self.sizes = np.array([len(g) for g in self._grams], dtype=np.float32)
        self._matrix: np.ndarray | None = None
        self._scales: dict[int, tuple[np.ndarray, list[Any]]] = {}
        self._biases: dict[tuple[int, float], int] = {}
        self._score_cache: dict[int, dict[int, float]] = {}
        self._answers: dict[tuple[str, int, float], tuple[int, ...]] = {}

    @property
    def matrix(self) -> np.ndarray:
        """Bigrams × names, 1.0 where a name holds a bigram (last row: a bigram no name has)."""
        if self._matrix is None:
            matrix = np.zeros((len(self.vocab) + 1, len(self.names)), dtype=np.float32)
            for j, g in enumerate(self._grams):
                matrix[[self.vocab[x] for x in g], j] = 1.0
            self._matrix = matrix
        return self._matrix

    def best(self, query: str, n: int, cutoff: float) -> list[int]:
        """Indices of up to ``n`` names whose Dice similarity to ``query`` (over bigram sets) is at
        least ``cutoff``, best first (ties in list order). Answers are kept per query (up to
        :data:`_ANSWERS_KEPT`): a planner, and the samples of a group of rollouts, repeat the
        same wrong names."""
        if not self.names or n <= 0:
            return []
        key = (query, n, cutoff)
        hit = self._answers.get(key)
        if hit is None:
            hit = tuple(self._best(query, n, cutoff) if cutoff > 0 and self._fits else self._dense(query, n, cutoff))
            if len(self._answers) >= _ANSWERS_KEPT:
                self._answers.clear()
            self._answers[key] = hit
        return list(hit)

    def _scale(self, size: int) -> tuple[np.ndarray, list[Any]]:
        """2 / (|name| + ``size``) for every name (float32), as an array and as a list."""
        hit = self._scales.get(size)
        if hit is None:
            scale = 2.0 / (self.sizes + size)
            hit = self._scales[size] = (scale, list(scale))
        return hit

    def _bias(self, size: int, cutoff: float) -> int:
        """For each name's byte, 128 minus the fewest shared bigrams whose score (as
        :meth:`_dense` computes it, float32) reaches ``cutoff`` against a query of ``size``
        bigrams; 0 where no count can (more than 128 needed)."""
        key = (size, cutoff)
        hit = self._biases.get(key)
        if hit is None:
            scale = self._scale(size)[1]
            hit = 0
            for j, s in enumerate(self.sizes.tolist()):
                need = max(0, int(cutoff * (s + size) / 2) - 2)  # below the least count, by float32 rounding
                while need <= 128 and np.float32(need) * scale[j] < cutoff:
                    need += 1
                hit += (128 - need) << (8 * j) if need <= 128 else 0
            if len(self._biases) >= _ANSWERS_KEPT:
                self._biases.clear()
            self._biases[key] = hit
        return hit

    def _best(self, query: str, n: int, cutoff: float) -> list[int]:
        q = _bigrams(query)
        shared = sum(map(self.lanes.get, q, itertools.repeat(0, len(q))))  # a bigram no name has adds 0
        close = (shared + self._bias(len(q), cutoff)) & self._top  # the names reaching the cutoff
        if not close:
            return []
        width = len(self.names)
        flags, counts = close.to_bytes(width, "little"), shared.to_bytes(width, "little")
        scores = self._scores(len(q))
        scored: list[tuple[float, int]] = []
        j = flags.find(0x80)
        while j >= 0:
            key = (counts[j] << 16) | j
            score = scores.get(key)
            if score is None:  # the float32 score of _dense: the exact product (31 bits), rounded to float32
                score = scores[key] = _F32.unpack(_F32.pack(counts[j] * float(self._scale(len(q))[1][j])))[0]
            scored.append((-score, j))
            j = flags.find(0x80, j + 1)
        scored.sort()
        return [j for _, j in scored[:n]]

    def _scores(self, size: int) -> dict[int, float]:
        """Scores met against queries of ``size`` bigrams, by count and name (``count << 16 | j``)."""
        hit = self._score_cache.get(size)
        if hit is None or len(hit) > _SCORES_KEPT:
            hit = self._score_cache[size] = {}
        return hit

    def _dense(self, query: str, n: int, cutoff: float) -> list[int]:
        q = _bigrams(query)
        unseen = len(self.vocab)
        score = self.matrix[[self.vocab.get(x, unseen) for x in q]].sum(axis=0)
        score *= self._scale(len(q))[0]
        out: list[int] = []
        for _ in range(min(n, len(self.names))):
            j = int(score.argmax())  # the first of equals: list order breaks ties
            if score[j] < cutoff:
                break
            out.append(j)
            score[j] = -1.0
        return out


_F32 = struct.Struct("f")
"""Rounds a float to float32 (packing it)."""

_Indexed = tuple[Sequence[ToolSpec], _NameIndex, _NameIndex, list[list[str]]]
_by_ids: dict[tuple[int, ...], _Indexed] = {}
_by_object: dict[int, _Indexed] = {}


def _index_of(specs: Sequence[ToolSpec]) -> _Indexed:
    """(the specs, their name index, their app index, each app's tool names in the specs' order,
    in the app index's order), built once per list of spec objects; an immutable list (a tuple, or the env's read-only lists) is found by identity."""
    frozen = type(specs) is ReadOnlyList or type(specs) is tuple
    if frozen:
        hit = _by_object.get(id(specs))  # a hit holds the object with this id: this one
        if hit is not None:
            return hit
    held = tuple(specs)
    key = tuple(map(id, held))
    hit = _by_ids.get(key)  # a hit holds the objects with these ids, so they are these specs
    if hit is None:
        apps = sorted({s.app for s in held})
        names: dict[str, list[str]] = {app: [] for app in apps}
        for s in held:
            names[s.app].append(s.name)
        hit = (held, _NameIndex([s.name for s in held]), _NameIndex(apps), [names[app] for app in apps])
        if len(_by_ids) >= _MAX_INDEXES:
            _by_ids.clear()
        _by_ids[key] = hit
    if frozen:
        if len(_by_object) >= _MAX_INDEXES:
            _by_object.clear()
        _by_object[id(specs)] = (specs, *hit[1:])  # type: ignore[assignment]
    return hit


def nearest_tools(name: str, specs: Sequence[ToolSpec], n: int = 3, cutoff: float = _NEAR_CUTOFF) -> list[str]:
    """Up to ``n`` tool names closest to ``name``, best first: those whose character bigrams
    (``^name$``, lower case, the first 100 characters) overlap ``name``'s with a Dice
    similarity of at least ``cutoff`` (0.5; 0.0 always fills ``n``); when none is close, the tools
    of the app named by ``name``'s prefix (``"mesages.snd"`` → messages tools), else ``[]``.

    Costs a few numpy operations per call (the index of a list of specs is built once and
    reused), whatever the number of tools or the length of ``name``; on a corpus of one-edit
    typos of the suite's tool names it ranks the intended tool first more often than difflib's
    ratio over every name did (the tests compare both).
    """
    _, index, app_index, app_tools = _index_of(specs)
    query = name[:100].lower()
    near = index.best(query, n, cutoff)
    if near:
        return [index.names[j] for j in near]
    close_app = app_index.best(query.split(".", 1)[0], 1, _APP_CUTOFF)
    if close_app:
        return app_tools[close_app[0]][:n]
    return []
