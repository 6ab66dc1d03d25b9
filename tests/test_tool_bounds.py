"""Every tool's schema rejects what its implementation cannot take.

For every tool the env offers on each in-process backend (sandbox, llmsim with scripted results,
hybrid), the memory, ``system.wait``/``system.location``, ``skills.read``, ``agent.delegate``,
``finish`` and ``user.*`` tools included, each parameter in turn gets boundary and out-of-range
values of its type (integers at and past their bounds, ±2⁶³, huge floats, NaN and infinities,
strings at and past their length, lone surrogates, impossible dates that match a date pattern,
wrong types, empty and deeply nested containers), the other arguments staying valid. Every call
goes through ``env.step``; none may raise or come back as an infrastructure error
(``internal_error``, ``device_error``, ``timeout``): an agent's bad value is the agent's mistake
(``invalid_arguments``, ``not_found``, ...), never the world's.

The values are generated deterministically from the full JSON Schema of each tool the agent is
offered (:func:`hostile`; ``phoneenv.sharing.full_parameters``, every limit the compact rendering
leaves out of the prompt), so the same calls run every time; a hypothesis test adds random JSON values.
"""

from __future__ import annotations

import copy
import hashlib
import math
import random
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import rstr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phoneenv.compact import LIMIT_KEYWORDS
from phoneenv.contract import AnswerCriterion, Fixtures, TaskSpec
from phoneenv.env import PhonePlanEnv
from phoneenv.harness.episode_memory import EpisodeMemory
from phoneenv.sharing import full_parameters
from phoneenv.tasks import get_task
from phoneenv.tools import INT_MAX, INT_MIN, MAX_STRING, bounded

INFRASTRUCTURE = {"internal_error", "device_error", "timeout"}


class HashEmbedder:
    """Words hashed into 256 dimensions, L2-normalised: a stand-in for the sentence model."""

    def __call__(self, texts: Any) -> np.ndarray:
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int(hashlib.md5(word.encode("utf-8", "replace")).hexdigest()[:6], 16) % 256] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)


# ----------------------------------------------------------------------------------- worlds

MEMORY = [
    {"id": 1, "kind": "fact", "content": "Ana Lima is my sister", "created": "2026-02-01T08:00:00"},
    {"id": 2, "kind": "preference", "content": "I like window seats", "created": "2026-03-01T08:00:00"},
]
SIM_SOURCES = (
    "hybrid.cancel_order_note_refund/0",
    "hybrid.order_food_text_eta/0",
    "hybrid.cinema_book_text/0",
    "hybrid.parcel_reschedule_text/0",
)


def _sim_fixtures() -> tuple[dict[str, list[Any]], list[Any]]:
    """Simulated apps' records and scripted calls gathered from the suite's hybrid tasks."""
    records: dict[str, list[Any]] = {}
    scripted: dict[str, Any] = {}
    for tid in SIM_SOURCES:
        fx = get_task(tid).fixtures
        for table, rows in fx.records.items():
            if table.split(".", 1)[0] in ("food", "cinema", "parcels"):
                records.setdefault(table, list(rows))
        for call in fx.simulated:
            scripted.setdefault(call.tool + repr(sorted(call.arguments.items())), call)
    return records, list(scripted.values())


def world_task(backend: str, step_up: bool = False) -> TaskSpec:
    """A task whose world has records in every app the backend serves, seeded memories, no
    confirmation in the way (so calls reach the implementations), and delegation; ``step_up``
    offers ``user.authenticate`` (and puts it before every sensitive call)."""
    base = get_task("calendar.add_attendee/0").fixtures
    sim_records, scripted = _sim_fixtures()
    sandbox_records = dict(base.records)
    if backend == "sandbox":
        records, apps, simulated = sandbox_records, ["calendar", "contacts"], []
    elif backend == "llmsim":
        records, apps, simulated = sim_records, ["food", "cinema", "parcels"], scripted
    else:
        records, apps, simulated = {**sandbox_records, **sim_records}, ["food", "cinema", "parcels", "notes"], scripted
    return TaskSpec(
        id=f"test.bounds.{backend}",
        domain="device",
        goal="Do what I asked.",
        fixtures=Fixtures(
            clock=base.clock,
            timezone=base.timezone,
            records=records,
            simulated=simulated,
            memory=MEMORY,
            confirm_sensitive=False,
            step_up=step_up,
        ),
        criteria=[AnswerCriterion(id="answer", equals="done")],
        apps=apps,
        backends=[backend],
        max_steps=1000,
    )


def make_env(backend: str, step_up: bool = False) -> PhonePlanEnv:
    return PhonePlanEnv(
        task=world_task(backend, step_up),
        backend=backend,
        memory=EpisodeMemory(embedder=HashEmbedder()),
        delegation=True,
        max_steps=100_000,
    )


# ------------------------------------------------------------------------------- generation


def _branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The non-null alternatives of ``schema`` (its ``anyOf``/``oneOf`` or itself)."""
    alts = schema.get("anyOf") or schema.get("oneOf")
    if not alts:
        t = schema.get("type")
        if isinstance(t, list):
            return [{**schema, "type": x} for x in t if x != "null"] or [schema]
        return [schema]
    out = []
    for alt in alts:
        out.extend(b for b in _branches(alt) if b.get("type") != "null")
    return out or [schema]


def example(schema: dict[str, Any], rng: random.Random) -> Any:
    """A value valid for ``schema`` (the first non-null alternative)."""
    if "default" in schema and schema["default"] is not None:
        return copy.deepcopy(schema["default"])
    b = _branches(schema)[0]
    if "enum" in b:
        return next(v for v in b["enum"] if v is not None)
    if "const" in b:
        return b["const"]
    t = b.get("type")
    if t == "string":
        lo, hi = b.get("minLength", 1), b.get("maxLength", 20)
        if "pattern" in b:
            gen = rstr.Rstr(rng)
            for _ in range(50):
                s = gen.xeger(b["pattern"])
                if lo <= len(s) <= hi:
                    return s
        return "x" * max(lo, min(3, hi))
    if t == "integer":
        return max(b.get("minimum", 1), min(1, b.get("maximum", 1)))
    if t == "number":
        return float(max(b.get("minimum", 1), min(1, b.get("maximum", 1))))
    if t == "boolean":
        return True
    if t == "array":
        return [example(b.get("items", {}), rng) for _ in range(max(1, b.get("minItems", 1)))]
    if t == "object":
        props = b.get("properties", {})
        return {k: example(props[k], rng) for k in b.get("required", [])}
    return "x"


def _nest(depth: int, kind: str) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


GENERIC: list[tuple[str, Any]] = [
    ("null", None),
    ("true", True),
    ("zero", 0),
    ("half", 0.5),
    ("text", "x"),
    ("empty_object", {}),
    ("empty_array", []),
    ("deep_list", _nest(300, "list")),
    ("deep_object", _nest(300, "dict")),
]
STRINGS: list[tuple[str, Any]] = [
    ("empty", ""),
    ("blank", "   "),
    ("lone_surrogate", "\ud800"),
    ("inner_surrogate", "a\udfffb"),
    ("nul", "a\x00b"),
    ("bidi", "\u202eevil"),
    ("emoji", "\U0001f600" * 3),
    ("format", "%s%n{0}{__class__}"),
    ("path", "../../etc/passwd"),
    ("sql", "x'); DROP TABLE memories;--"),
    ("newlines", "\n" * 50),
    ("over_default", "x" * (MAX_STRING + 1)),
]
BIG_INTS: list[tuple[str, Any]] = [
    ("2**63", 2**63),
    ("-2**63-1", -(2**63) - 1),
    ("2**63-1", 2**63 - 1),
    ("-2**63", -(2**63)),
    ("2**64", 2**64),
    ("10**400", 10**400),
    ("-1", -1),
    ("integral_float", 1.0),
    ("digit_text", "5"),
]
FLOATS: list[tuple[str, Any]] = [
    ("nan", math.nan),
    ("inf", math.inf),
    ("-inf", -math.inf),
    ("max_float", 1.7976931348623157e308),
    ("-max_float", -1.7976931348623157e308),
    ("tiny", 5e-324),
    ("-zero", -0.0),
    ("huge_int", 10**400),
    ("2**63", 2**63),
]


def hostile(schema: dict[str, Any], rng: random.Random, depth: int = 0) -> list[tuple[str, Any]]:
    """Boundary, out-of-range and wrong-typed values for ``schema``, labelled."""
    out = list(GENERIC)
    for b in _branches(schema):
        t = b.get("type")
        if "enum" in b:
            out += [(f"enum={v!r}", v) for v in b["enum"]] + [("not_in_enum", "zz_not_a_value")]
        if t == "integer":
            lo, hi = b.get("minimum"), b.get("maximum")
            for edge in (lo, hi):
                if edge is not None:
                    out += [(f"edge={edge}", edge), (f"edge-1={edge - 1}", edge - 1), (f"edge+1={edge + 1}", edge + 1)]
            out += BIG_INTS
        elif t == "number":
            for edge in (b.get("minimum"), b.get("maximum")):
                if edge is not None:
                    out += [(f"edge={edge}", edge), (f"edge-0.5={edge - 0.5}", edge - 0.5), ("edge+0.5", edge + 0.5)]
            out += FLOATS
        elif t == "string":
            out += STRINGS
            top = b.get("maxLength")
            if top is not None:
                out += [(f"len={top}", "x" * top), (f"len={top + 1}", "x" * (top + 1))]
            if "pattern" in b:
                gen = rstr.Rstr(rng)
                out += [(f"pattern#{i}", gen.xeger(b["pattern"])) for i in range(6)]
                out += [
                    ("impossible_date", "2026-02-30"),
                    ("zero_date", "0000-00-00"),
                    ("far_date", "9999-12-31"),
                    ("impossible_time", "2026-02-30T25:61"),
                    ("far_time", "9999-12-31T23:59"),
                    ("clock_edge", "23:59"),
                    ("day_month", "31-02"),
                ]
        elif t == "array" and depth < 2:
            items = b.get("items", {})
            top = b.get("maxItems")
            if top is not None:
                out.append((f"items={top + 1}", [example(items, rng) for _ in range(top + 1)]))
            out.append(("items=1000", [example(items, rng) for _ in range(1000)]))
            out += [(f"[{label}]", [v]) for label, v in hostile(items, rng, depth + 1)]
        elif t == "object" and depth < 2:
            base = example(b, rng)
            for key, sub in b.get("properties", {}).items():
                out += [(f"{{{key}: {label}}}", {**base, key: v}) for label, v in hostile(sub, rng, depth + 1)]
            out.append(("extra_key", {**base, "zz_extra": 1}))
    return out


def _full(tool: dict[str, Any]) -> dict[str, Any]:
    """The full parameters schema of an offered tool (every pattern and bound validation holds,
    which the compact rendering leaves out of the prompt), so the cases below test each limit."""
    full = full_parameters(tool["parameters"])
    assert full is not None, tool["name"]
    return full


def calls_for(tool: dict[str, Any], env: PhonePlanEnv, rng: random.Random) -> Iterator[tuple[str, dict[str, Any]]]:
    """(label, arguments) for one OpenAI-format tool, from its full schema: whole-argument cases, then each parameter
    replaced by each hostile value while the others keep valid values (real ids where the world
    has them)."""
    params = _full(tool)
    props: dict[str, Any] = params.get("properties", {})
    base = {k: example(props[k], rng) for k in params.get("required", [])}
    app = tool["name"].split(".", 1)[0]
    tables = env.unwrapped.backend.tables()
    for key in props:
        if key.endswith("_id") or key == "id":
            table = f"{app}.{key[:-3]}s" if key != "id" else ""
            ids = list(tables.get(table) or next((v for t, v in tables.items() if t.startswith(app + ".") and v), {}))
            if key == "id" or key == "supersedes":
                ids = [1]
            if ids:
                base[key] = ids[0]
    yield "no_arguments", {}
    yield "valid", dict(base)
    yield "extra_argument", {**base, "zz_extra": 1}
    yield "long_extra_key", {**base, "k" * 10_000: 1}
    for key, sub in props.items():
        for label, value in hostile(sub, rng):
            yield f"{key}={label}", {**base, key: value}


# ------------------------------------------------------------------------------------- runs


def fuzz(backend: str, step_up: bool = False, skip: frozenset[str] = frozenset()) -> tuple[int, list[str]]:
    """Run every generated call of every tool offered on ``backend`` (but those in ``skip``);
    (calls, failures)."""
    rng = random.Random(0)
    env = make_env(backend, step_up)
    _, info = env.reset(seed=0)
    tools = [t["function"] for t in info["tools"] if t["function"]["name"] not in skip]
    calls, failures = 0, []
    for tool in tools:
        env.reset(seed=0)
        for label, arguments in list(calls_for(tool, env, rng)):
            calls += 1
            try:
                _, _, terminated, truncated, info = env.step({"name": tool["name"], "arguments": arguments})
            except Exception as exc:  # the env must never raise on an action
                failures.append(f"{tool['name']} {label}: raised {type(exc).__name__}: {exc}"[:300])
                env.reset(seed=0)
                continue
            fb = info["feedback"]
            if fb.error is not None and fb.error.value in INFRASTRUCTURE:
                failures.append(f"{tool['name']} {label}: {fb.error.value}: {fb.message}"[:300])
            if fb.ok or terminated or truncated:
                env.reset(seed=0)  # keep the world as it started (ids, frames, open episode)
    env.close()
    return calls, failures


def _offered(backend: str, step_up: bool = False) -> frozenset[str]:
    _, info = make_env(backend, step_up).reset(seed=0)
    return frozenset(t["function"]["name"] for t in info["tools"])


@pytest.mark.parametrize("backend", ["sandbox", "llmsim", "hybrid", "step_up"])
def test_no_argument_value_is_an_infrastructure_error(backend: str) -> None:
    if backend == "step_up":  # the tools only a step-up world offers (user.authenticate)
        calls, failures = fuzz("sandbox", step_up=True, skip=_offered("sandbox"))
        assert calls > 20
    else:
        calls, failures = fuzz(backend)
        assert calls > 1000
    print(f"{backend}: {calls} (tool, value) calls")
    assert failures == [], "\n".join(failures[:40])


def test_every_offered_tool_is_fuzzed() -> None:
    """The fuzzed envs offer every family of tools (a tool left out would go unchecked)."""
    names = _offered("sandbox") | _offered("llmsim") | _offered("hybrid") | _offered("sandbox", step_up=True)
    for needed in (
        "finish",
        "user.confirm",
        "user.authenticate",
        "memory.search",
        "memory.save",
        "memory.forget",
        "system.wait",
        "system.location",
        "skills.read",
        "agent.delegate",
        "food.place_order",
        "cinema.book_tickets",
        "parcels.report_missing",
        "notes.append",
        "calendar.free_slots",
    ):
        assert needed in names


def test_integer_parameters_are_bounded_in_every_schema() -> None:
    """Every tool's full schema gives every integer a range inside SQLite's 64-bit INTEGER, and no
    string more room than MAX_STRING (a string without maxLength is held to MAX_STRING by
    validation: the fuzz above sends MAX_STRING + 1 characters to every string). The rendering the
    agent is offered leaves every bound out (validation holds them, the fuzz above sends values
    past each, and ``full_parameters`` gives the offered rendering's full schema back)."""
    for backend in ("sandbox", "llmsim"):
        env = make_env(backend)
        _, info = env.reset(seed=0)
        offered = {t["function"]["name"]: t["function"]["parameters"] for t in info["tools"]}
        specs = env.tool_specs
        assert set(offered) == {s.name for s in specs}
        for spec in specs:
            assert full_parameters(offered[spec.name]) is spec.parameters, spec.name
            shown = dict(_walk(offered[spec.name]))
            for path, node in _walk(spec.parameters):
                t = node.get("type")
                kinds = t if isinstance(t, list) else [t]
                where = f"{spec.name}{path}"
                if "integer" in kinds and not {"enum", "const"} & set(node):
                    lo, hi = node.get("minimum"), node.get("maximum")
                    assert lo is not None and hi is not None and INT_MIN <= lo <= hi <= INT_MAX, where
                    if t == "integer":
                        assert not LIMIT_KEYWORDS & set(shown[path]), where
                if "string" in kinds and not {"enum", "const"} & set(node):
                    assert node.get("maxLength", 0) <= MAX_STRING, where


def _walk(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            yield from _walk(sub, path)
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"], path + "/0")
    for key, sub in schema.get("properties", {}).items():
        yield from _walk(sub, f"{path}/{key}")
    for key, sub in schema.get("$defs", {}).items():
        yield from _walk(sub, f"#{key}")


def test_bounded_keeps_declared_bounds_and_fills_the_rest() -> None:
    from typing import Annotated

    from pydantic import Field, TypeAdapter, ValidationError

    narrow = TypeAdapter(bounded(Annotated[int, Field(ge=1, le=50)]), config={"strict": True})
    assert narrow.json_schema() == {"type": "integer", "minimum": 1, "maximum": 50}
    half = TypeAdapter(bounded(Annotated[int, Field(ge=1)] | None), config={"strict": True})
    assert half.validate_python(2**63 - 1) == 2**63 - 1
    for bad in (2**63, 0):
        with pytest.raises(ValidationError):
            half.validate_python(bad)
    floats = TypeAdapter(bounded(list[float]), config={"strict": True})
    assert floats.validate_python([1, 2.5]) == [1, 2.5]
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValidationError):
            floats.validate_python([bad])
    text = TypeAdapter(bounded(dict[str, str]), config={"strict": True})
    text.validate_python({"k": "x" * MAX_STRING})
    with pytest.raises(ValidationError):
        text.validate_python({"k": "x" * (MAX_STRING + 1)})
    flag = TypeAdapter(bounded(bool), config={"strict": True})
    assert flag.json_schema() == {"type": "boolean"}


# ------------------------------------------------------------------------------- hypothesis

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(codec=None, categories=None), max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def hybrid_env() -> Iterator[tuple[PhonePlanEnv, list[dict[str, Any]]]]:
    env = make_env("hybrid")
    _, info = env.reset(seed=0)
    yield env, [t["function"] for t in info["tools"]]
    env.close()


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_json_values_are_never_infrastructure_errors(hybrid_env: Any, data: Any) -> None:
    env, tools = hybrid_env
    tool = data.draw(st.sampled_from(tools))
    params = _full(tool)
    props = sorted(params.get("properties", {}))
    rng = random.Random(0)
    arguments = {k: example(params["properties"][k], rng) for k in params.get("required", [])}
    if props:
        arguments[data.draw(st.sampled_from(props))] = data.draw(JSON)
    env.reset(seed=0)
    _, _, _, _, info = env.step({"name": tool["name"], "arguments": arguments})
    fb = info["feedback"]
    assert fb.error is None or fb.error.value not in INFRASTRUCTURE, (tool["name"], arguments, fb.message)


@pytest.mark.parametrize(
    ("parameter", "message"),
    [
        ({"type": "integer", "minimum": 1}, "/n needs a minimum and a maximum"),
        ({"type": "integer", "minimum": 0, "maximum": 2**63}, "/n must lie within"),
        ({"type": ["number", "null"], "maximum": 5}, "/n needs a minimum and a maximum"),
        ({"type": "string"}, "/n needs a maxLength"),
        ({"type": "string", "maxLength": MAX_STRING + 1}, "/n needs a maxLength"),
        ({"type": "array", "items": {"type": "string", "maxLength": 5}}, "/n needs a maxItems"),
        ({"type": "array", "maxItems": 3, "items": {"type": "string"}}, "/n/0 needs a maxLength"),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "/n needs a maxLength"),
    ],
)
def test_simulated_apps_must_bound_their_parameters(parameter: dict[str, Any], message: str) -> None:
    from phoneenv.backends.llmsim import SimApp

    app = {
        "name": "shop",
        "title": "Shop",
        "description": "A shop.",
        "domain": "shopping",
        "tools": [
            {
                "verb": "find",
                "description": "Find.",
                "parameters": {"type": "object", "properties": {"n": parameter}, "additionalProperties": False},
                "returns": {"type": "object"},
            }
        ],
    }
    with pytest.raises(ValueError, match=re.escape(message)):
        SimApp.model_validate(app)
    ok = {"type": "string", "enum": ["a", "b"]}
    SimApp.model_validate(
        {**app, "tools": [{**app["tools"][0], "parameters": {"type": "object", "properties": {"n": ok}}}]}
    )


def test_simulated_arguments_reject_non_finite_numbers() -> None:
    from phoneenv.backends.llmsim import SchemaValidator
    from phoneenv.tools import ArgumentError

    v = SchemaValidator(
        {"type": "object", "properties": {"xs": {"type": "array", "maxItems": 3, "items": {"type": "number"}}}}
    )
    assert v.validate({"xs": [1.5, 2]}) == {"xs": [1.5, 2]}
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ArgumentError) as err:
            v.validate({"xs": [1.0, bad]})
        assert err.value.path == "/xs/1" and err.value.expected == "finite number"
