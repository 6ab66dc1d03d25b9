"""Task construction without a gold trace: a model drafts tasks for a capability gap, and each
draft is checked by execution before it enters the suite.

    phoneenv tasks propose --gap capability:time --n 4 --model M --base-url URL

A *gap* (:func:`parse_gap`) is a capability tag (``capability:time``), a domain (``domain:travel``)
or a cluster of failures from a co-evolution round (``cluster:FILE``, written by ``phoneenv
evolve round``). The prompt (:func:`draft_prompt`) describes the gap, the tools and the record
fields of the apps it involves, one task of the suite in the gap as an example of the format, and
goals the suite already has (not to repeat).

Each draft goes through, in order (:func:`check_draft`):

1. **Contract**: a JSON object with the draft keys only (:data:`DRAFT_KEYS`), valid as a
   :class:`~phoneenv.contract.TaskSpec`, seeded records valid for their tables
   (:func:`~phoneenv.tasks.schemas.check_fixtures`).
2. **References**: every criterion, milestone and allowed change names tables of the task's apps
   that exist, fields those tables have, and tools (names or ``fnmatch`` patterns) that exist, with
   arguments the tool takes.
3. **Not a duplicate**: the goal's all-MiniLM-L6-v2 cosine similarity to every goal of the suite,
   of the loop's generated tasks and of the drafts accepted before it is below
   :data:`DEDUP_THRESHOLD`.
4. **Execution** (:func:`check_by_execution`, on the task's first backend): the criteria are not
   met on the fixture state (the no-op plan, ``finish`` alone, fails); no random plan succeeds
   (``random_plans`` episodes of :class:`~agents.random_agent.RandomAgent`); a planner (the model
   under training, or a stronger served one) solves it in at least one of ``attempts`` episodes.
   The first solving episode's successful calls become the task's ``reference_plan`` when
   replaying them alone succeeds, and the perturbation checks of
   :func:`~phoneenv.tasks.validate.prove` are run on it (a criterion that still passes when an
   argument is changed is loose).

A draft failing 1–3, or the no-op or random check, is **rejected**. One that passes them all and
is solved with tight criteria is **accepted** into ``<loop>/tasks.jsonl``
(:mod:`phoneenv.loop.generated`); one that no planner solved, or whose criteria look loose, is
kept **unproven**: written with ``status: unproven`` and queued for review (kind ``task``), and it
loads into the suite only once a person approves it. Every draft, rejected ones included, is
logged in ``<loop>/proposals.jsonl`` with its problems.

The method is the Qwen-Planner-Agent report's task construction: executable task specs verified
by running them, without a gold trajectory.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import functools
import hashlib
import json
import re
import typing
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from phoneenv.contract import AnswerCriterion, BehaviorCriterion, Category, Domain, StateCriterion, TaskSpec, ToolCall
from phoneenv.loop import REVIEW_DB, loop_dir

__all__ = [
    "DEDUP_THRESHOLD",
    "DRAFT_KEYS",
    "PROPOSALS_FILE",
    "Gap",
    "GoalIndex",
    "Outcome",
    "check_by_execution",
    "check_draft",
    "draft_prompt",
    "parse_drafts",
    "parse_gap",
    "propose",
]

PROPOSALS_FILE = "proposals.jsonl"
"""Every draft of every ``propose`` call with its status and problems, in the loop directory."""
DEDUP_THRESHOLD = 0.92
"""Cosine similarity (all-MiniLM-L6-v2) from which a goal is a near-duplicate. Measured on the
suite: goals of one template differing only in names and values score 0.24–0.89 (5th–95th
percentile), so 0.92 drops rewordings of one request and keeps new requests in a known family."""
DRAFT_KEYS = frozenset(
    {"goal", "category", "domain", "apps", "fixtures", "criteria", "milestones", "allowed_changes", "max_steps",
     "difficulty", "capabilities", "backends"}
)  # fmt: skip
"""The keys a draft may have; the id, source and provenance are the proposer's."""
HARNESS_APPS = frozenset({"memory", "skills", "agent", "user", "tools"})
"""Apps of the harness, not of the phone: their tables and tools need not be among a task's apps."""


# ------------------------------------------------------------------------------------------------
# gaps
# ------------------------------------------------------------------------------------------------


@dataclass
class Gap:
    """What the drafts are for.

    ``kind``: ``capability``, ``domain`` or ``cluster``; ``name``: the tag, the domain, or the
    cluster's id; ``spec``: the gap as given (``capability:time``); ``apps``: the apps involved
    (most used first); ``examples``: suite tasks in the gap (the prompt shows the first);
    ``notes``: lines describing the gap (for a cluster, how the planner failed).
    """

    kind: str
    name: str
    spec: str
    apps: list[str]
    examples: list[TaskSpec]
    notes: list[str] = field(default_factory=list)

    @property
    def slug(self) -> str:
        """The gap's name for task ids (``gen.<slug>/<hash>``): lower case, ``[a-z0-9_-]``."""
        return re.sub(r"[^a-z0-9_-]+", "-", self.name.lower()).strip("-")[:40] or "gap"


def _apps_of(tasks: Iterable[TaskSpec]) -> list[str]:
    counts = Counter(a for t in tasks for a in t.apps if a not in ("system", "user"))
    return [a for a, _ in counts.most_common()]


def _cluster_problem(data: Any) -> str | None:
    """Why ``data`` is no cluster file's JSON (``Cluster.summary()`` of :mod:`phoneenv.loop.evolve`),
    None when it is one: an object with a ``signature`` object and ``templates``; ``apps``,
    ``capabilities`` objects (or lists) of names; ``reasons`` and ``messages`` lists of text."""
    if not isinstance(data, dict) or "signature" not in data or "templates" not in data:
        return "an object with 'signature' and 'templates' expected"
    if not isinstance(data["signature"], dict):
        return "'signature' must be an object"
    for key in ("templates", "apps", "capabilities"):
        names = data.get(key) or {}
        if not isinstance(names, (dict, list)) or not all(isinstance(n, str) for n in names):
            return f"'{key}' must be an object (or a list) of names"
    for key in ("reasons", "messages"):
        lines = data.get(key) or []
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            return f"'{key}' must be a list of strings"
    if not isinstance(data.get("id", ""), str):
        return "'id' must be a string"
    return None


def parse_gap(spec: str) -> Gap:
    """The :class:`Gap` ``spec`` names: ``capability:TAG``, ``domain:NAME``, ``cluster:FILE``
    (a ``cluster-<id>.json`` of ``phoneenv evolve round``), or a bare tag or domain.

    Raises:
        ValueError: an unknown kind, tag or domain (close names suggested), or a cluster file that
            is missing or not a cluster.
    """
    from phoneenv.tasks import close_matches, load_suite

    suite = load_suite(generated=False)
    tags = sorted({c for t in suite for c in t.capabilities})
    domains = [d.value for d in Domain]
    kind, sep, value = spec.partition(":")
    if not sep:
        kind, value = ("capability" if spec in tags else "domain" if spec in domains else ""), spec
        if not kind:
            near = close_matches(spec, [*tags, *domains])
            raise ValueError(
                f"gap {spec!r} is neither a capability tag nor a domain"
                + (f"; did you mean {', '.join(near)}?" if near else "")
                + f"\n  capabilities: {', '.join(tags)}\n  domains: {', '.join(domains)}"
            )
    if kind == "capability":
        if value not in tags:
            near = close_matches(value, tags)
            raise ValueError(
                f"unknown capability {value!r}" + (f"; did you mean {', '.join(near)}?" if near else "")
                + f"\n  capabilities: {', '.join(tags)}"
            )  # fmt: skip
        examples = [t for t in suite if value in t.capabilities]
        return Gap("capability", value, spec, _apps_of(examples), examples, [f"The capability {value!r}."])
    if kind == "domain":
        if value not in domains:
            near = close_matches(value, domains)
            raise ValueError(f"unknown domain {value!r}" + (f"; did you mean {', '.join(near)}?" if near else ""))
        examples = [t for t in suite if t.domain.value == value]
        return Gap("domain", value, spec, _apps_of(examples), examples, [f"The domain {value!r}."])
    if kind == "cluster":
        from phoneenv.tracefiles import read_json_file

        path = Path(value)
        try:
            data = read_json_file(path)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read the cluster file {value!r}: {exc}") from None
        problem = _cluster_problem(data)
        if problem is not None:
            raise ValueError(
                f"{value!r} is not a cluster file of `phoneenv evolve round` (cluster-<id>.json): {problem}"
            )
        templates = set(data.get("templates") or {})
        examples = [t for t in suite if t.template in templates]
        sig = data["signature"]
        notes = [f"A planner failed {data.get('size', '?')} episodes the same way: {sig.get('error_kind')} on "
                 f"{sig.get('focus')}."]  # fmt: skip
        notes += [f"Failed criterion: {r}" for r in (data.get("reasons") or [])[:3]]
        notes += [f"Feedback it got: {m}" for m in (data.get("messages") or [])[:3]]
        if data.get("capabilities"):
            notes.append(f"Capabilities involved: {', '.join(data['capabilities'])}.")
        apps = [a for a in (data.get("apps") or {}) if a not in ("system", "user")] or _apps_of(examples)
        return Gap("cluster", str(data.get("id", path.stem)), spec, apps, examples, notes)
    raise ValueError(f"unknown gap kind {kind!r}; use capability:TAG, domain:NAME or cluster:FILE")


# ------------------------------------------------------------------------------------------------
# the prompt
# ------------------------------------------------------------------------------------------------


def _type_name(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"][:8])
    if "anyOf" in schema:
        return "|".join(_type_name(s) for s in schema["anyOf"] if s.get("type") != "null")
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list[{_type_name(schema.get('items') or {})}]"
    return str(kind)


def _tool_line(spec: Any) -> str:
    props = spec.parameters.get("properties") or {}
    required = set(spec.parameters.get("required") or [])
    params = ", ".join(f"{k}{'' if k in required else '?'}: {_type_name(v)}" for k, v in props.items())
    return f"- {spec.name}({params}): {spec.description.splitlines()[0] if spec.description else ''}"


def _table_lines(app: str) -> list[str]:
    from phoneenv.phone import app_classes

    cls = app_classes().get(app)
    if cls is None or not cls.records:
        return []
    out = []
    for table, kind in cls.records.items():
        hints = typing.get_type_hints(kind)
        fields = ", ".join(f"{k}: {getattr(v, '__name__', str(v)).replace('typing.', '')}" for k, v in hints.items())
        out.append(f"- {app}.{table} {{{fields}}}")
    return out


def _example_json(task: TaskSpec) -> str:
    """The task as a draft (:data:`DRAFT_KEYS`), shortened: fixtures as the clock and at most two
    records of each table of the task's apps; criteria without their default fields (``kind``
    kept)."""
    data = task.model_dump(mode="json", include=set(DRAFT_KEYS - {"fixtures", "backends"}))
    apps = set(task.apps)
    records = {t: rows[:2] for t, rows in task.fixtures.records.items() if t.split(".")[0] in apps and rows}
    fixtures: dict[str, Any] = {"clock": task.fixtures.clock}
    if records:
        fixtures["records"] = records
    defaults = {
        "state": StateCriterion(table="x").model_dump(mode="json"),
        "answer": AnswerCriterion().model_dump(mode="json"),
        "behavior": BehaviorCriterion(rule="required_call").model_dump(mode="json"),
    }

    def short(c: dict[str, Any]) -> dict[str, Any]:
        if c.get("criteria"):
            c = {**c, "criteria": [short(x) for x in c["criteria"]]}
        base = defaults.get(c["kind"], {})
        return {k: v for k, v in c.items() if k == "kind" or (v != base.get(k, None) and v not in ("", [], {}))}

    data["criteria"] = [short(c) for c in data["criteria"]]
    data["milestones"] = [short(c) for c in data["milestones"]]
    data = {"goal": data.pop("goal"), **{k: v for k, v in data.items() if v not in ([], None)}, "fixtures": fixtures}
    return json.dumps(data, ensure_ascii=False)


_PROMPT = """You write test tasks for a phone assistant. The assistant does what the user asks by calling the
phone's tools; afterwards, criteria check what really happened on the phone (records created, updated or deleted,
calls made) or what the final answer says.

Write {n} new task(s) for this gap:
{notes}

Apps and their tools (name(arguments): what it does):
{tools}

Tables the criteria can check (fields):
{tables}

A task is a JSON object with the keys goal (the user's request in their own words), category (one of {categories}),
domain (one of {domains}), apps (the apps it needs), fixtures (the phone's start: "clock" as ISO local time and
"records" as {{"app.table": [rows]}} with ids), criteria (all must hold for success) and milestones (partial
progress). A criterion is one of:
- {{"kind": "state", "table": "app.table", "where": {{"field": value or {{"icontains": "text"}}}}, "change":
  "created"|"updated"|"deleted"|"present"|"absent", "count": 1}}
- {{"kind": "answer", "type": "number"|"time"|"date"|"contact"|"yes_no"|"text", "value": expected}}
- {{"kind": "behavior", "rule": "required_call"|"forbidden_call", "tool": "app.verb", "arguments": {{...}}}}
Criteria must be false on the start state and need the assistant to act; ask for one outcome, unambiguously.

An example task of this kind:
{example}

Requests the suite already has (do not repeat them):
{existing}

Reply with a JSON array of {n} task object(s) and nothing else."""


def draft_prompt(gap: Gap, n: int, *, existing: Sequence[str] = (), max_tools: int = 40) -> str:
    """The prompt asking for ``n`` drafts for ``gap``: the gap's notes, the tools (at most
    ``max_tools``, those its examples call first) of its apps (the first four) and of the harness
    apps its examples use, the
    record fields of those apps, the format, one example task
    of the gap, and up to ten ``existing`` goals not to repeat."""
    from agents.toolfilter import CATEGORY_APPS

    apps = gap.apps[:4]
    categories = Counter(t.category.value for t in gap.examples)
    harness = set(CATEGORY_APPS.get(categories.most_common(1)[0][0], frozenset())) if categories else set()
    harness |= {c.name.split(".")[0] for t in gap.examples for c in t.reference_plan or ()} & HARNESS_APPS
    used = {c.name for t in gap.examples for c in t.reference_plan or ()}
    specs = [s for s in _tool_specs().values() if s.name.split(".")[0] in {*apps, *harness}]
    specs.sort(key=lambda s: s.name not in used)  # the tools the gap's tasks call first (stable)
    tools = "\n".join(_tool_line(s) for s in specs[:max_tools]) or "- (the apps of the example)"
    tables = "\n".join(line for a in apps for line in _table_lines(a)) or "- (none declared)"
    example = _example_json(gap.examples[0]) if gap.examples else "(none)"
    goals = list(dict.fromkeys(existing or [t.goal for t in gap.examples]))[:10]
    return _PROMPT.format(
        n=n,
        notes="\n".join(gap.notes),
        tools=tools,
        tables=tables,
        categories=", ".join(c.value for c in Category),
        domains=", ".join(d.value for d in Domain),
        example=example,
        existing="\n".join(f"- {g}" for g in goals),
    )


def parse_drafts(text: str) -> list[Any]:
    """The drafts in a model's reply: every top-level JSON value in ``text`` (fences and prose
    around them ignored), arrays flattened, ``{"tasks": [...]}`` unwrapped. Items that are not
    objects are returned as they are (:func:`check_draft` rejects them); a value nested too deep
    for the parser (a ``RecursionError``) is no draft and is skipped whole."""
    decoder = json.JSONDecoder()
    out: list[Any] = []
    i = 0
    while i < len(text):
        if text[i] not in "[{":
            i += 1
            continue
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        except RecursionError:  # nested deeper than Python's stack: no draft, skip the whole run
            i += 1
            while i < len(text) and text[i] in "[{ \t\r\n":
                i += 1
            continue
        if isinstance(value, dict) and isinstance(value.get("tasks"), list):
            value = value["tasks"]
        out.extend(value if isinstance(value, list) else [value])
        i = end
    return out


# ------------------------------------------------------------------------------------------------
# the checks
# ------------------------------------------------------------------------------------------------


def _criteria(task: TaskSpec) -> Iterable[Any]:
    stack = [*task.criteria, *task.milestones]
    while stack:
        c = stack.pop(0)
        if c.kind in ("all_of", "any_of", "not"):
            stack.extend(c.criteria)
        else:
            yield c


def _fields(table: str) -> frozenset[str] | None:
    """The fields of the sandbox table ``app.table``; None when its app declares no layout;
    raises KeyError when the app or table does not exist."""
    from phoneenv.phone import app_classes

    app, _, name = table.partition(".")
    cls = app_classes().get(app)
    if cls is None and app in HARNESS_APPS:
        return None  # the harness's own tables (memory.entries): no declared layout
    if cls is None:
        raise KeyError(f"no app {app!r}")
    if not cls.records:
        return None
    kind = cls.records.get(name)
    if kind is None:
        raise KeyError(f"no table {table!r} (tables: {', '.join(f'{app}.{t}' for t in cls.records)})")
    return frozenset(kind.__required_keys__ | kind.__optional_keys__)


def _reference_problems(task: TaskSpec, tools: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    apps = set(task.apps)

    def table_ok(where: str, table: str, conditions: Mapping[str, Any]) -> None:
        try:
            fields = _fields(table)
        except KeyError as exc:
            problems.append(f"{where}: {exc.args[0]}")
            return
        if apps and table.split(".")[0] not in apps | HARNESS_APPS | {"system"}:
            problems.append(f"{where}: table {table!r} is not of the task's apps {sorted(apps)}")
        for key in conditions:
            if fields is not None and key.split(".")[0] not in fields:
                problems.append(f"{where}: {table} has no field {key!r} (fields: {', '.join(sorted(fields))})")

    def tool_ok(where: str, pattern: str | None, arguments: Mapping[str, Any] = {}) -> None:
        if pattern is None:
            return
        matched = [n for n in tools if fnmatch.fnmatchcase(n, pattern)]
        if not matched:
            problems.append(f"{where}: no tool {pattern!r}")
            return
        if pattern in tools:
            params = set(tools[pattern].parameters.get("properties") or {})
            for key in arguments:
                if key.split(".")[0] not in params:
                    problems.append(
                        f"{where}: {pattern} takes no argument {key!r} (it takes {', '.join(sorted(params))})"
                    )

    for n, c in enumerate(_criteria(task)):
        where = f"criterion {c.id or n}"
        if c.kind == "state":
            table_ok(where, c.table, c.where)
        elif c.kind == "behavior":
            tool_ok(where, c.tool, c.arguments)
            tool_ok(where, c.then)
            for via in c.via:
                tool_ok(where, via)
    for n, sel in enumerate(task.allowed_changes):
        table_ok(f"allowed change {n}", sel.table, sel.where)
    return problems


@functools.lru_cache(maxsize=1)
def _tool_specs() -> dict[str, Any]:
    """Every tool an episode can offer (the sandbox apps' and the harness's), by name."""
    from phoneenv.env import PhonePlanEnv
    from phoneenv.tasks import load_suite

    env = PhonePlanEnv(tasks=load_suite(generated=False)[:1])
    return {s.name: s for s in env.tool_specs}


def _task_id(gap: Gap, draft: Mapping[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(draft, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return f"gen.{gap.slug}/{digest[:8]}"


def _validation_problems(exc: ValidationError, limit: int = 5) -> list[str]:
    """Pydantic's errors in words, one per place: a value that fits no member of a union (a field
    condition) gives one line, not one per member."""
    out: dict[str, str] = {}
    for e in exc.errors():
        loc = [str(p) for p in e["loc"]]
        while loc and (loc[-1] in _UNION_MEMBERS or "[" in loc[-1]):
            loc.pop()  # the union member pydantic tried: str, int, dict[str,any], ...
        out.setdefault(".".join(loc) or "task", e["msg"])
    return [f"{where}: {msg}" for where, msg in list(out.items())[:limit]]


_UNION_MEMBERS = frozenset({"str", "int", "float", "bool", "none", "list", "dict", "state", "answer", "behavior"})


def check_draft(draft: Any, gap: Gap) -> tuple[TaskSpec | None, list[str]]:
    """Checks 1 and 2 of the module docstring on one draft: the task (id ``gen.<gap>/<hash of the
    draft>``, ``source="generated"``, the gap's capability added for a capability gap) and no
    problems, or None and the problems in words."""
    from phoneenv.loop.generated import GENERATED_SOURCE
    from phoneenv.tasks.schemas import check_fixtures

    if not isinstance(draft, dict):
        return None, [f"a draft must be a JSON object, not {type(draft).__name__}"]
    extra = sorted(set(draft) - DRAFT_KEYS)
    if extra:
        return None, [f"unknown keys {extra} (a draft has {', '.join(sorted(DRAFT_KEYS))})"]
    data = dict(draft)
    if gap.kind == "capability" and gap.name not in (data.get("capabilities") or []):
        data["capabilities"] = [*(data.get("capabilities") or []), gap.name]
    data.setdefault("category", Counter(t.category.value for t in gap.examples).most_common(1)[0][0]
                    if gap.examples else "tool")  # fmt: skip
    try:
        task = TaskSpec.model_validate(
            {**data, "id": _task_id(gap, draft), "source": GENERATED_SOURCE, "template": None, "seed": None}
        )
    except ValidationError as exc:
        return None, _validation_problems(exc)
    if not task.goal.strip():
        return None, ["the goal is empty"]
    if not task.criteria:
        return None, ["no criteria: nothing would decide success"]
    try:
        check_fixtures(task)
    except ValueError as exc:
        return None, [str(exc)]
    tools = _tool_specs()
    known_apps = {name.split(".")[0] for name in tools}
    problems = [f"unknown app {a!r}" for a in task.apps if a not in known_apps | HARNESS_APPS | {"system"}]
    problems += _reference_problems(task, tools)
    return (None, problems) if problems else (task, [])


class GoalIndex:
    """Goals and their all-MiniLM-L6-v2 embeddings (the packaged model,
    :func:`~phoneenv.harness.memory.default_embedder`), for near-duplicate checks.

    Args:
        goals: the goals known at the start (the suite's and the loop's generated tasks').
        embedder: maps texts to ``float32`` ``(n, d)`` L2-normalised vectors (default MiniLM).
        cache: an ``.npz`` file keeping the vectors of ``goals`` between runs (keyed by a
            SHA-256 of the goals), or None.
    """

    def __init__(self, goals: Sequence[str], embedder: Any = None, cache: Path | None = None) -> None:
        import numpy as np

        if embedder is None:
            from phoneenv.harness.memory import default_embedder

            embedder = default_embedder()
        self.embedder = embedder
        self.goals = list(goals)
        key = hashlib.sha256("\n".join(self.goals).encode()).hexdigest()
        vectors = None
        if cache is not None and cache.is_file():
            with np.load(cache) as data:
                if str(data["key"]) == key:
                    vectors = data["vectors"]
        if vectors is None:
            vectors = np.asarray(embedder(self.goals), dtype=np.float32).reshape(len(self.goals), -1)
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                with cache.open("wb") as fh:
                    np.savez(fh, key=key, vectors=vectors)
        self.vectors = vectors

    def nearest(self, goal: str) -> tuple[str | None, float]:
        """The most similar known goal and its cosine similarity (``(None, 0.0)`` when empty)."""
        import numpy as np

        if not self.goals:
            return None, 0.0
        v = np.asarray(self.embedder([goal]), dtype=np.float32)[0]
        sims = self.vectors @ v
        i = int(np.argmax(sims))
        return self.goals[i], float(sims[i])

    def add(self, goal: str) -> None:
        """Know ``goal`` too (a draft accepted in this call)."""
        import numpy as np

        v = np.asarray(self.embedder([goal]), dtype=np.float32).reshape(1, -1)
        self.goals.append(goal)
        self.vectors = np.concatenate([self.vectors.reshape(-1, v.shape[1]), v])


def _calls_of(trace: Any, task: TaskSpec) -> list[ToolCall]:
    """The calls of a trace's steps that succeeded (``finish`` calls included), in order; the
    answer dropped from ``finish`` when no criterion reads the answer (it is free text then, and
    perturbing it proves nothing)."""
    reads_answer = any(c.kind == "answer" for c in _criteria(task))
    calls: list[ToolCall] = []
    for step in trace.steps:
        if step.action is None or not step.feedback.ok:
            continue
        args = step.action.arguments
        if step.action.name == "finish" and not reads_answer:
            args = {k: v for k, v in args.items() if k not in ("answer", "value")}
        calls.append(ToolCall(name=step.action.name, arguments=args))
    return calls


def check_by_execution(
    task: TaskSpec,
    *,
    solver: Callable[[], Any] | None = None,
    attempts: int = 3,
    random_plans: int = 5,
) -> dict[str, Any]:
    """Check 4 of the module docstring, on ``task``'s first backend. Returns a JSON-ready dict:

    ``noop_fails`` (bool), ``fixture_holds`` (ids of criteria already true at the
    start), ``random`` (``{"plans", "successes"}``), ``solver`` (``{"attempts", "successes",
    "steps"}``, None without a solver), ``reference_plan`` (the replayed plan as dicts, or None),
    ``loose`` (perturbations that still succeed), ``problems`` (why the task is rejected) and
    ``status`` (``accepted``, ``unproven`` or ``rejected``).

    ``solver`` makes a fresh planner (an :class:`~phoneenv.evaluation.AgentLike`) per attempt;
    attempts ``k`` run with seed ``k``.
    """
    from agents.random_agent import RandomAgent
    from phoneenv.env import PhonePlanEnv
    from phoneenv.evaluation import play_trace
    from phoneenv.tasks.validate import perturbations, run_plan

    env = PhonePlanEnv(tasks=[task], backend=task.backends[0])
    out: dict[str, Any] = {"problems": [], "loose": [], "reference_plan": None, "solver": None}
    info, _ = run_plan(env, task, [ToolCall(name="finish", arguments={})])
    verdict = info["verdict"]
    out["noop_fails"] = not verdict["success"]
    out["fixture_holds"] = [c["id"] for c in verdict["criteria"] if c["passed"]]
    if verdict["success"]:
        out["problems"].append("the no-op plan succeeds: the criteria hold on the fixture state")
    wins = 0
    for seed in range(random_plans):
        result, _, _ = play_trace(RandomAgent(seed=seed), env, task, seed)
        wins += bool(result.success)
    out["random"] = {"plans": random_plans, "successes": wins}
    if wins:
        out["problems"].append(f"{wins} of {random_plans} random plans succeed: the criteria are too loose")
    if out["problems"]:
        out["status"] = "rejected"
        return out
    if solver is not None:
        solved, steps, plan = 0, [], None
        for k in range(attempts):
            result, trace, _ = play_trace(solver(), env, task, k)
            steps.append(result.steps)
            if result.success:
                solved += 1
                if plan is None:
                    plan = _calls_of(trace, task)
        out["solver"] = {"attempts": attempts, "successes": solved, "steps": steps}
        if plan is not None:
            info, _ = run_plan(env, task, plan)
            if info["verdict"]["success"]:
                out["reference_plan"] = [c.model_dump(mode="json", exclude_none=True) for c in plan]
                effects = {s.name: s.effect for s in env.tool_specs}
                replay = task.model_copy(update={"reference_plan": plan})
                for key, perturbed in perturbations(replay, effects):
                    info, _ = run_plan(env, replay, perturbed)
                    if info["verdict"]["success"]:
                        out["loose"].append(key)
    proven = out["reference_plan"] is not None and not out["loose"]
    out["status"] = "accepted" if proven else "unproven"
    return out


# ------------------------------------------------------------------------------------------------
# propose
# ------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One draft's fate: ``status`` (``accepted``, ``unproven``, ``rejected``), the ``task`` (None
    when the draft is not a task), the ``problems`` that rejected it or sent it to review, the
    ``checks`` (:func:`check_by_execution`'s dict plus ``duplicate_of`` and ``similarity``) and,
    for an unproven task, its ``review_id``."""

    index: int
    status: str
    task: TaskSpec | None
    problems: list[str]
    checks: dict[str, Any]
    review_id: int | None = None
    draft: Any = None


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _model_name(client: Any) -> str | None:
    return None if client is None else str(getattr(client, "model", type(client).__name__))


def propose(
    gap: Gap | str,
    client: Any,
    *,
    n: int = 4,
    loop: str | Path | None = None,
    solver: Callable[[], Any] | None = None,
    solver_name: str | None = None,
    attempts: int = 3,
    random_plans: int = 5,
    review_all: bool = False,
    threshold: float = DEDUP_THRESHOLD,
    embedder: Any = None,
    max_tokens: int = 4096,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Ask ``client`` (a :class:`~phoneenv.llm.ChatClient`) for ``n`` drafts for ``gap``, check
    each (module docstring) and file it: accepted tasks into ``<loop>/tasks.jsonl``, unproven
    ones there too with a review item (every task with ``review_all``), every draft into
    ``<loop>/proposals.jsonl``. A reply with no JSON value in it is sent back once with the problem.

    ``solver`` makes the planner that must solve a task (None: no task is proven, all wait for
    review); ``solver_name`` names it in the provenance. Returns the outcomes in draft order.

    Raises:
        ValueError: a malformed ``gap`` (see :func:`parse_gap`).
        phoneenv.llm.InfrastructureError: the model server failed (nothing is written).
    """
    from phoneenv.loop.generated import ACCEPTED, UNPROVEN, append_entries
    from phoneenv.loop.review import ReviewQueue
    from phoneenv.tasks import load_suite

    gap = parse_gap(gap) if isinstance(gap, str) else gap
    folder = loop_dir(loop)
    suite_goals = [t.goal for t in load_suite()]
    prompt = draft_prompt(gap, n)
    messages = [{"role": "user", "content": prompt}]
    reply = client.chat(messages, max_tokens=max_tokens)
    drafts = parse_drafts(reply.content or reply.raw)
    if not drafts:
        messages += [
            {"role": "assistant", "content": reply.content or reply.raw},
            {"role": "user", "content": "Your reply held no JSON. Reply with the JSON array of task objects only."},
        ]
        reply = client.chat(messages, max_tokens=max_tokens)
        drafts = parse_drafts(reply.content or reply.raw)
    index = GoalIndex(suite_goals, embedder, cache=folder / "goal_vectors.npz") if drafts else None
    queue = ReviewQueue(folder / REVIEW_DB)
    outcomes: list[Outcome] = []
    entries: list[dict[str, Any]] = []
    for i, draft in enumerate(drafts):
        task, problems = check_draft(draft, gap)
        checks: dict[str, Any] = {}
        if task is not None and index is not None:
            near, sim = index.nearest(task.goal)
            checks.update(duplicate_of=near, similarity=round(sim, 4))
            if sim >= threshold:
                problems = [f"a near-duplicate (cosine {sim:.3f}) of {near!r}"]
        if task is not None and not problems:
            checks.update(check_by_execution(task, solver=solver, attempts=attempts, random_plans=random_plans))
            problems = list(checks.pop("problems"))
            plan = checks.pop("reference_plan")
            if plan is not None:
                task = task.model_copy(update={"reference_plan": [ToolCall.model_validate(c) for c in plan]})
            if checks["status"] == "rejected":
                pass
            elif checks["solver"] is None:
                problems.append("no planner tried it")
            elif checks["solver"]["successes"] == 0:
                problems.append(f"no planner solved it in {attempts} attempts")
            elif plan is None:
                problems.append("the solving episode's calls, replayed alone, do not succeed")
            if checks["loose"]:
                problems.append(f"loose criteria: perturbing {', '.join(checks['loose'][:3])} still succeeds")
        status = str(checks.get("status", "rejected")) if task is not None else "rejected"
        if status == ACCEPTED and review_all:
            status = UNPROVEN
        outcome = Outcome(i, status, task, problems, checks, draft=draft)
        if status != "rejected" and task is not None:
            provenance = {
                "source": "propose", "model": _model_name(client), "gap": gap.spec, "status": status,
                "solver": solver_name, "checks": checks, "proposed_at": _now(), "review_id": None, "reviewer": None,
            }  # fmt: skip
            payload = {"task": task.model_dump(mode="json"), "provenance": provenance}
            if status == UNPROVEN:
                why = "; ".join(problems) or "every task of this call goes to review"
                outcome.review_id = provenance["review_id"] = queue.submit(
                    "task", f"{task.id}: {task.goal[:80]}", payload, source="propose", reason=why
                )
            entries.append(payload)
            if index is not None:
                index.add(task.goal)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    if entries:
        append_entries(entries, folder)
    log_lines = [
        json.dumps({"at": _now(), "gap": gap.spec, "model": _model_name(client), "index": o.index,
                    "status": o.status, "task_id": o.task.id if o.task else None, "problems": o.problems,
                    "checks": o.checks, "review_id": o.review_id, "draft": o.draft}, ensure_ascii=False, default=str)
        for o in outcomes
    ] or [json.dumps({"at": _now(), "gap": gap.spec, "model": _model_name(client), "index": None,
                      "status": "no_drafts", "reply": (reply.content or reply.raw)[:2000]}, ensure_ascii=False)]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / PROPOSALS_FILE).open("a", encoding="utf-8") as fh:
        fh.write("\n".join(log_lines) + "\n")
    return outcomes
