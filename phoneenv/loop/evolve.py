"""Co-evolution rounds: mine a run's failures, propose harness and data-mix edits for review,
apply the approved ones as a new harness version, and report what changed.

A round, end to end::

    phoneenv eval --harness v0 --out runs/r0 ...        # a run (traces kept, failures included)
    phoneenv evolve round --run runs/r0                  # clusters + edits into the review queue
    phoneenv review approve ID ...                       # a person decides (phoneenv.loop.review)
    phoneenv evolve apply                                # approved edits -> harness v1
    phoneenv eval --harness v1 --out runs/r1 ...
    phoneenv evolve report --before runs/r0 --after runs/r1

:func:`failure_cases` reads a run folder's traces and keeps the failed episodes (infrastructure
errors are the world's fault, not the planner's, and are left out). :func:`cluster_failures`
groups them by a *signature*: the error kind and tool of the episode's first failed call, or,
for an episode with no failed call, ``no_error`` and what its first failed criterion is about
(the tool of a behavior criterion, ``table:<t>`` of a state criterion, ``answer``). Each cluster
keeps its capability tags, templates, failed criteria (their descriptions), the feedback
messages and hints of the failed calls, and references to every trace.

:func:`propose_edits` turns each cluster into review items (:class:`~phoneenv.loop.review.ReviewQueue`):

* ``skill_edit``: a changed shipped skill (one that covers the cluster's tool gets a *Pitfalls*
  section) or a new ``SKILL.md``; drafted by the LLM when a client is given (validated as a skill
  whose tools exist; one repair; else the rule-based draft), else by rules from the failed calls'
  feedback and the failed criteria;
* ``instruction_edit``: one line appended to the harness's ``instructions.md``;
* ``mix_weight``: the weight of the cluster's capability (or template) in the data mix, raised by
  the cluster's failure rate on it;

and writes ``<loop>/rounds/<n>/clusters.json`` with, per cluster, a ``gap`` for ``phoneenv tasks
propose --gap`` (``cluster:<file>``, one file per cluster beside it) and the submitted item ids.

:func:`apply_approved` makes a new harness version (:mod:`phoneenv.loop.harness`) from the
approved, not yet applied edits. :func:`round_report` compares two runs: the scoreboard per
category before and after, the edits the after-run's harness applied, and per cluster of the
before-run how many of its failing (task, seed) pairs now succeed.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from phoneenv.contract import INFRASTRUCTURE_ERRORS, Trace
from phoneenv.loop import REVIEW_DB, ROUNDS_DIR, loop_dir
from phoneenv.tracefiles import jsonl_lines, read_json_file

__all__ = [
    "CLUSTERS_FILE",
    "Cluster",
    "FailureCase",
    "RoundResult",
    "apply_approved",
    "cluster_failures",
    "failure_cases",
    "propose_edits",
    "read_round",
    "read_run",
    "round_dir",
    "round_report",
    "run_round",
]

CLUSTERS_FILE = "clusters.json"
REPORT_FILE = "report"
EDIT_KINDS = ("skill_edit", "instruction_edit", "mix_weight")
MAX_EXAMPLES = 5
"""Feedback messages, hints and failing calls kept per cluster (the most frequent first)."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------------------------
# reading a run
# ------------------------------------------------------------------------------------------------


def read_run(run_dir: str | Path) -> list[tuple[Trace, Path]]:
    """Every trace of an eval run folder (``traces/**/<task>.jsonl``, see
    :class:`~phoneenv.evaluation.RunFolder`), with its file, sorted by path.

    Raises:
        FileNotFoundError: no ``traces`` folder in ``run_dir``.
        ValueError: a trace file that does not hold a trace (the file named).
    """
    folder = Path(run_dir) / "traces"
    if not folder.is_dir():
        raise FileNotFoundError(f"{run_dir}: no traces folder (is it an eval run's --out?)")
    out = []
    for file in sorted(folder.rglob("*.jsonl")):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:  # a folder named like a trace, bytes not UTF-8
            raise ValueError(f"{file}: not a trace file ({getattr(exc, 'strerror', None) or exc})") from None
        for n, line in enumerate(jsonl_lines(text), 1):
            if not line.strip():
                continue
            try:
                out.append((Trace.model_validate_json(line), file))
            except ValueError as exc:
                raise ValueError(f"{file}, line {n}: not a trace ({str(exc).splitlines()[0]})") from None
    return out


def _task(task_id: str) -> Any:
    from phoneenv.tasks import get_task

    try:
        return get_task(task_id)
    except KeyError:
        return None


def _criteria(task: Any) -> dict[str, Any]:
    """The task's criteria by id, composites' children included."""
    out: dict[str, Any] = {}

    def walk(items: Iterable[Any]) -> None:
        for c in items:
            if getattr(c, "id", ""):
                out[c.id] = c
            walk(getattr(c, "criteria", None) or [])

    if task is not None:
        walk([*task.criteria, *task.milestones])
    return out


@dataclass
class FailureCase:
    """One failed episode, as the clustering sees it.

    ``error_kinds``: the error kinds of its failed calls (infrastructure kinds left out), in step
    order; ``first_error``/``tool``: the kind and tool of the first failed call (None when every call
    succeeded); ``focus``: what the signature is about (that tool, else what the first failed
    criterion names: a tool, ``table:<name>`` or ``answer``); ``failed_criteria``: the failed
    criteria (each its description, else its id); ``reasons``: the same with the verdict's reason
    (``"updated:clock.alarms: 0 matching updated record(s), expected exactly 1"``); ``calls``: the failed calls as
    ``{"tool", "arguments", "error", "message", "hint"}``.
    """

    task_id: str
    seed: int | None
    trace: str
    category: str
    domain: str
    template: str | None
    source: str | None
    capabilities: list[str]
    apps: list[str]
    error_kinds: list[str]
    first_error: str | None
    tool: str | None
    focus: str
    failed_criteria: list[str]
    reasons: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    progress: float = 0.0

    @property
    def signature(self) -> tuple[str, str]:
        """``(first error kind or "no_error", focus)``: the cluster key."""
        return (self.first_error or "no_error", self.focus)


def _criterion_focus(criterion: Any, result: Any) -> str:
    kind = getattr(criterion, "kind", None) or getattr(result, "kind", "")
    if kind == "behavior" and getattr(criterion, "tool", None):
        return str(criterion.tool)
    if kind == "state" and getattr(criterion, "table", None):
        return f"table:{criterion.table}"
    if kind == "answer":
        return "answer"
    return str(kind or "criteria")


def failure_cases(traces: Iterable[tuple[Trace, Path]]) -> list[FailureCase]:
    """The failed episodes of ``traces`` (not successful, not infrastructure errors, with a
    verdict), as :class:`FailureCase`. Task metadata (capabilities, template, criterion
    descriptions) comes from the suite (:func:`phoneenv.tasks.get_task`); a task not in it keeps
    what the trace says."""
    infra = {k.value for k in INFRASTRUCTURE_ERRORS}
    out = []
    for trace, path in traces:
        v = trace.verdict
        if v is None or v.success or v.infrastructure_error:
            continue
        task = _task(trace.task_id)
        calls = []
        for step in trace.steps:
            fb = step.feedback
            if fb.ok or fb.error is None or fb.error.value in infra:
                continue
            calls.append(
                {
                    "tool": step.action.name if step.action is not None else None,
                    "arguments": step.action.arguments if step.action is not None else None,
                    "error": fb.error.value,
                    "message": fb.message or "",
                    "hint": fb.hint or "",
                }
            )
        by_id = _criteria(task)
        failed = [c for c in v.criteria if not c.passed]
        descriptions = [getattr(by_id.get(c.id), "description", "") or c.id or c.kind for c in failed]
        reasons = [f"{d}: {c.reason}" if c.reason else d for d, c in zip(descriptions, failed, strict=True)]
        first = calls[0] if calls else None
        if first is not None and first["tool"]:
            focus = first["tool"]
        elif failed:
            focus = _criterion_focus(by_id.get(failed[0].id), failed[0])
        else:
            focus = "criteria"
        out.append(
            FailureCase(
                task_id=trace.task_id,
                seed=trace.seed,
                trace=str(path),
                category=trace.category.value,
                domain=trace.domain.value,
                template=getattr(task, "template", None),
                source=getattr(task, "source", None),
                capabilities=list(getattr(task, "capabilities", []) or []),
                apps=list(getattr(task, "apps", []) or []),
                error_kinds=[c["error"] for c in calls],
                first_error=first["error"] if first else None,
                tool=first["tool"] if first else None,
                focus=focus,
                failed_criteria=descriptions,
                reasons=reasons,
                calls=calls,
                progress=v.progress,
            )
        )
    return out


# ------------------------------------------------------------------------------------------------
# clusters
# ------------------------------------------------------------------------------------------------


@dataclass
class Cluster:
    """Failures that share a signature (:attr:`FailureCase.signature`).

    ``error_kind``/``focus``: the signature; ``cases``: its failed episodes; the counters say how
    often each capability tag, template, tool, error kind and failed criterion occurs among them;
    ``messages``/``hints``: the most frequent feedback of the failed calls; ``examples``: a few
    failing calls (tool, arguments, error).
    """

    id: str
    error_kind: str
    focus: str
    cases: list[FailureCase]

    @property
    def size(self) -> int:
        """Failed episodes in the cluster."""
        return len(self.cases)

    def _count(self, values: Iterable[str | None]) -> dict[str, int]:
        return dict(Counter(v for v in values if v).most_common())

    @property
    def capabilities(self) -> dict[str, int]:
        """Capability tag → failed episodes carrying it."""
        return self._count(c for case in self.cases for c in case.capabilities)

    @property
    def templates(self) -> dict[str, int]:
        """Template → failed episodes of it."""
        return self._count(case.template for case in self.cases)

    @property
    def tools(self) -> dict[str, int]:
        """Tool → failed calls to it."""
        return self._count(call["tool"] for case in self.cases for call in case.calls)

    @property
    def error_kinds(self) -> dict[str, int]:
        """Error kind → failed calls with it."""
        return self._count(k for case in self.cases for k in case.error_kinds)

    @property
    def failed_criteria(self) -> dict[str, int]:
        """Failed criterion description → episodes it failed in."""
        return self._count(d for case in self.cases for d in dict.fromkeys(case.failed_criteria))

    @property
    def apps(self) -> dict[str, int]:
        """App → failed episodes whose task uses it."""
        return self._count(a for case in self.cases for a in case.apps)

    @property
    def reasons(self) -> list[str]:
        """The most frequent failed criteria with the verdict's reason."""
        return [r for r, _ in Counter(r for case in self.cases for r in case.reasons).most_common(MAX_EXAMPLES)]

    def _feedback(self, key: str) -> list[str]:
        calls = [
            c for case in self.cases for c in case.calls if (c["error"], c["tool"]) == (self.error_kind, self.focus)
        ]
        return [m for m, _ in Counter(c[key] for c in calls if c[key]).most_common(MAX_EXAMPLES)]

    @property
    def messages(self) -> list[str]:
        """The most frequent messages of the cluster's failed calls of its error kind."""
        return self._feedback("message")

    @property
    def hints(self) -> list[str]:
        """The most frequent hints of the cluster's failed calls of its error kind."""
        return self._feedback("hint")

    @property
    def pairs(self) -> list[tuple[str, int | None]]:
        """The failing (task id, seed) pairs."""
        return [(c.task_id, c.seed) for c in self.cases]

    def evidence(self, run: str) -> list[dict[str, Any]]:
        """Trace references: ``{"run", "task_id", "seed", "trace"}`` per failed episode."""
        return [{"run": run, "task_id": c.task_id, "seed": c.seed, "trace": c.trace} for c in self.cases]

    def summary(self) -> dict[str, Any]:
        """The cluster as JSON data (``clusters.json``)."""
        examples = [
            {k: call[k] for k in ("tool", "arguments", "error", "message")}
            for case in self.cases
            for call in case.calls[:1]
        ][:MAX_EXAMPLES]
        return {
            "id": self.id,
            "signature": {"error_kind": self.error_kind, "focus": self.focus},
            "size": self.size,
            "capabilities": self.capabilities,
            "templates": self.templates,
            "apps": self.apps,
            "tools": self.tools,
            "error_kinds": self.error_kinds,
            "failed_criteria": self.failed_criteria,
            "reasons": self.reasons,
            "messages": self.messages,
            "hints": self.hints,
            "examples": examples,
            "pairs": [[t, s] for t, s in self.pairs],
            "traces": [c.trace for c in self.cases],
        }


def cluster_failures(cases: Sequence[FailureCase], *, min_size: int = 1) -> list[Cluster]:
    """Group ``cases`` by signature; clusters with fewer than ``min_size`` episodes are dropped.
    Sorted by size (largest first), then signature; ids ``c1``, ``c2``... in that order."""
    groups: dict[tuple[str, str], list[FailureCase]] = {}
    for case in cases:
        groups.setdefault(case.signature, []).append(case)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [
        Cluster(id=f"c{i}", error_kind=key[0], focus=key[1], cases=members)
        for i, (key, members) in enumerate(((k, v) for k, v in ordered if len(v) >= min_size), 1)
    ]


# ------------------------------------------------------------------------------------------------
# proposals
# ------------------------------------------------------------------------------------------------


def _slug(text: str, limit: int = 60) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = "-".join(words)[:limit].strip("-")
    return out or "skill"


def _diff(before: str | None, after: str, name: str) -> str:
    return "".join(
        difflib.unified_diff(
            (before or "").splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{name}" if before is not None else "/dev/null",
            tofile=f"b/{name}",
        )
    )


def _tool_names() -> set[str]:
    from phoneenv.backends import make_backend

    return set(make_backend("sandbox").tools())


def _skill_app(path: Path) -> str:
    """The app a skill file belongs to: ``<app>/skills/<name>/SKILL.md`` in an app folder (the
    shipped skills), ``<app>/<name>/SKILL.md`` in a harness version's skills."""
    parent = path.parent.parent
    return parent.parent.name if parent.name == "skills" else parent.name


def _shipped_skill_for(tool: str | None) -> Any:
    """The shipped skill listing ``tool`` among its tools (the first by name), or None."""
    if not tool:
        return None
    from phoneenv.harness.skills import load_skills

    for skill in load_skills().values():
        if tool in skill.tools:
            return skill
    return None


def _pitfalls(cluster: Cluster) -> list[str]:
    lines = []
    tool = cluster.focus if cluster.error_kind != "no_error" else None
    for hint in cluster.hints[:3]:
        lines.append(f"- When `{tool}` fails with `{cluster.error_kind}`: {hint}")
    for message in cluster.messages[:2]:
        if not cluster.hints:
            lines.append(f"- `{tool}` answered `{cluster.error_kind}`: {message}")
    for reason in cluster.reasons[:3]:
        lines.append(f"- Before calling `finish`, check the change the request needs ({reason})")
    return lines or [f"- Check the result of every call before moving on (`{cluster.focus}` failed here)."]


def rule_skill(cluster: Cluster, harness_skills: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The rule-based ``skill_edit`` payload for ``cluster``: when a skill (the harness's own,
    else a shipped one) covers the cluster's tool, that skill with a *Pitfalls seen in
    evaluation* section appended; else a new skill ``<app>/<name>/SKILL.md`` covering the
    tool (or, for failures without a failed call, the cluster's most frequent app) whose body
    turns the failed calls' hints and the failed criteria into a checklist."""
    tool = cluster.focus if cluster.error_kind != "no_error" else None
    pitfalls = _pitfalls(cluster)
    existing = None
    for skill in (harness_skills or {}).values():
        if tool and tool in skill.tools:
            existing = skill
            break
    existing = existing or _shipped_skill_for(tool)
    if existing is not None and existing.path is not None:
        before = Path(existing.path).read_text(encoding="utf-8")
        app = _skill_app(Path(existing.path))
        heading = "## Pitfalls seen in evaluation"
        after = before.rstrip() + ("\n" if heading in before else f"\n\n{heading}\n") + "\n".join(pitfalls) + "\n"
        name = existing.name
    else:
        before = None
        app = tool.split(".", 1)[0] if tool else next(iter(cluster.apps), "system")
        name = _slug(f"{tool.replace('.', ' ')} without {cluster.error_kind}" if tool else f"finish {app} requests")
        covers = {"tools": [tool]} if tool else {"apps": [app]}
        what = (
            f"How to call {tool} without the {cluster.error_kind.replace('_', ' ')} failures seen in evaluation"
            if tool
            else f"What to check before finishing a {app} request (failures seen in evaluation)"
        )
        steps = [
            "1. Look up every id, number or address the call needs with the app's read tools first.",
            f"2. Call `{tool}` with exactly the parameters its schema names." if tool else "2. Do what was asked.",
            "3. Read the result: on failure, follow its hint before trying again.",
            "4. Check the points below, then call `finish`.",
        ]
        after = (
            "---\n"
            + yaml.safe_dump({"name": name, "description": f"{what}.", **covers}, sort_keys=False, width=1000)
            + "---\n"
            + "\n".join(steps)
            + "\n\n## Pitfalls seen in evaluation\n"
            + "\n".join(pitfalls)
            + "\n"
        )
    path = f"{app}/{name}/SKILL.md"
    return {"skill": name, "path": path, "before": before, "after": after, "diff": _diff(before, after, path)}


def rule_instruction(cluster: Cluster) -> str:
    """One rule-based instruction line for ``cluster``."""
    if cluster.error_kind == "no_error":
        first = next(iter(cluster.reasons), None)
        if first:
            return f"- Before you call finish, check that what the request needs has happened (seen failing: {first})."
        return f"- Before you call finish, check that the request ({cluster.focus}) is really done."
    hint = cluster.hints[0] if cluster.hints else "read the error's hint and fix the call before retrying"
    return f"- When {cluster.focus} fails with {cluster.error_kind}: {hint.rstrip('.')}."


def _llm_text(client: Any, prompt: str, max_tokens: int) -> str:
    result = client.chat([{"role": "user", "content": prompt}], max_tokens=max_tokens)
    text = (result.content or "").strip()
    fenced = re.search(r"```(?:markdown|md)?\s*\n(.*?)```", text, re.DOTALL)
    return (fenced.group(1) if fenced else text).strip()


_SKILL_PROMPT = """You improve the skills of a phone assistant. A skill is a SKILL.md file: YAML front matter
between '---' lines with keys name (lowercase words joined by '-'), description (one line), tools (a list of
tool names app.verb it is about) and/or apps; then a short numbered procedure in Markdown.

The assistant failed {size} episodes the same way: {error} on {focus}.
Failed criteria (with why they failed): {criteria}
Feedback messages: {messages}
Hints: {hints}
Failing calls: {examples}
{existing}
Reply with the whole SKILL.md only (no comments), a procedure that would avoid these failures."""


def llm_skill(client: Any, cluster: Cluster, fallback: dict[str, Any], *, max_tokens: int = 800) -> dict[str, Any]:
    """A ``skill_edit`` payload whose SKILL.md the model ``client`` drafted for ``cluster``: the
    draft must parse as a skill (:func:`~phoneenv.harness.skills.parse_skill`) naming only tools
    and apps that exist; a draft that does not is sent back once with the problem, and a second
    failure (or a server error) gives ``fallback`` (the rule-based draft) with ``drafted_by:
    rules`` and the reason in ``llm_error``."""
    from phoneenv.harness.skills import SkillError, parse_skill, unknown_references
    from phoneenv.llm import InfrastructureError

    existing = ""
    if fallback["before"] is not None:
        existing = f"Change this existing skill (keep its name):\n{fallback['before']}"
    summary = cluster.summary()
    prompt = _SKILL_PROMPT.format(
        size=cluster.size,
        error=cluster.error_kind,
        focus=cluster.focus,
        criteria=json.dumps(summary["reasons"]),
        messages=json.dumps(summary["messages"]),
        hints=json.dumps(summary["hints"]),
        examples=json.dumps(summary["examples"])[:2000],
        existing=existing,
    )
    names = _tool_names()
    problem = ""
    for _ in range(2):
        try:
            text = _llm_text(
                client, prompt if not problem else f"{prompt}\n\nYour last draft was refused: {problem}", max_tokens
            )
        except InfrastructureError as exc:
            return {**fallback, "drafted_by": "rules", "llm_error": f"{exc.kind}: {exc}"}
        try:
            skill = parse_skill(text)
        except SkillError as exc:
            problem = exc.problem
            continue
        unknown = unknown_references(skill, names)
        if unknown:
            problem = f"unknown tools or apps {unknown}"
            continue
        app = skill.tools[0].split(".", 1)[0] if skill.tools else skill.apps[0]
        if fallback["before"] is not None:
            app = fallback["path"].split("/", 1)[0]
        path = f"{app}/{skill.name}/SKILL.md"
        after = text.strip() + "\n"
        before = fallback["before"] if skill.name == fallback["skill"] else None
        return {
            "skill": skill.name, "path": path, "before": before, "after": after, "diff": _diff(before, after, path),
            "drafted_by": "llm",
        }  # fmt: skip
    return {**fallback, "drafted_by": "rules", "llm_error": f"the model's drafts were refused: {problem}"}


def llm_instruction(client: Any, cluster: Cluster, fallback: str, *, max_tokens: int = 120) -> tuple[str, str]:
    """One instruction line drafted by ``client`` for ``cluster`` (``("- ...", "llm")``), or
    ``(fallback, "rules")`` when the reply is empty or the server fails."""
    from phoneenv.llm import InfrastructureError

    prompt = (
        "A phone assistant keeps failing the same way: "
        f"{cluster.error_kind} on {cluster.focus} ({cluster.size} episodes). Hints it got: "
        f"{json.dumps(cluster.hints)}. Failed criteria: {json.dumps(cluster.reasons[:3])}. "
        "Write ONE short imperative rule for its system prompt that avoids this failure. Reply with the rule only."
    )
    try:
        text = _llm_text(client, prompt, max_tokens)
    except InfrastructureError:
        return fallback, "rules"
    line = " ".join(text.split())
    if not line:
        return fallback, "rules"
    return (line if line.startswith("- ") else f"- {line.lstrip('-* ')}"), "llm"


def _mix_group(cluster: Cluster) -> str:
    if cluster.capabilities:
        return f"capability:{next(iter(cluster.capabilities))}"
    if cluster.templates:
        return f"template:{next(iter(cluster.templates))}"
    return f"category:{cluster.cases[0].category}"


def _rate(cases: Sequence[FailureCase], traces: Sequence[tuple[Trace, Path]], group: str) -> tuple[int, int]:
    """(failed episodes of the cluster in ``group``, scored episodes of the run in ``group``)."""
    table, _, key = group.partition(":")

    def member(task_id: str, category: str) -> bool:
        task = _task(task_id)
        if table == "capability":
            return task is not None and key in task.capabilities
        if table == "template":
            return task is not None and task.template == key
        return category == key

    scored = [t for t, _ in traces if t.verdict is not None and not t.verdict.infrastructure_error]
    total = sum(member(t.task_id, t.category.value) for t in scored)
    failed = sum(member(c.task_id, c.category) for c in cases)
    return failed, total


@dataclass
class RoundResult:
    """What :func:`run_round` did: the round number and folder, the clusters and, per cluster id,
    the review item ids submitted (``{"skill_edit": id, "instruction_edit": id, "mix_weight": id}``)."""

    round: int
    folder: Path
    clusters: list[Cluster]
    items: dict[str, dict[str, int]]


def round_dir(loop: str | Path | None = None, number: int | None = None) -> Path:
    """``<loop>/rounds/<number>``; with no number, the next free one (1, 2, ...); not created."""
    root = loop_dir(loop) / ROUNDS_DIR
    if number is None:
        taken = [int(p.name) for p in root.iterdir() if p.name.isdigit()] if root.is_dir() else []
        number = max(taken, default=0) + 1
    return root / str(number)


def _queue(loop: str | Path | None, queue: Any) -> Any:
    if queue is not None:
        return queue
    from phoneenv.loop.review import ReviewQueue

    return ReviewQueue(loop_dir(loop) / REVIEW_DB)


def propose_edits(
    clusters: Sequence[Cluster],
    traces: Sequence[tuple[Trace, Path]],
    *,
    run: str,
    queue: Any,
    round_no: int,
    harness: Any = None,
    client: Any = None,
) -> dict[str, dict[str, int]]:
    """Submit, per cluster, a ``skill_edit``, an ``instruction_edit`` and a ``mix_weight`` review
    item (see the module docstring), each with the cluster's traces as evidence (after an
    ``{"round", "cluster", "signature"}`` entry) and ``source="evolve"``; return their ids by
    cluster id. ``harness``: the version the run played with (its skills and instructions are the
    ``before`` of the edits; default v0); ``client``: a chat model that drafts the skills and
    instructions (rules without one)."""
    from phoneenv.loop.harness import BASE_VERSION, load_harness

    harness = harness or load_harness(BASE_VERSION)
    own = harness.own_skills()
    instructions = harness.instructions
    out: dict[str, dict[str, int]] = {}
    for cluster in clusters:
        head = {"round": round_no, "cluster": cluster.id, "signature": [cluster.error_kind, cluster.focus]}
        evidence = [head, *cluster.evidence(run)]
        why = f"{cluster.size} failed episodes: {cluster.error_kind} on {cluster.focus}"
        skill = rule_skill(cluster, own)
        skill["drafted_by"] = "rules"
        if client is not None:
            skill = llm_skill(client, cluster, skill)
        line = rule_instruction(cluster)
        by = "rules"
        if client is not None:
            line, by = llm_instruction(client, cluster, line)
        after = (instructions + "\n" + line).strip() if instructions else line
        group = _mix_group(cluster)
        failed, total = _rate(cluster.cases, traces, group)
        before_w = float(harness.manifest.mix.get(group, 1.0))
        after_w = round(before_w * (1.0 + failed / total), 3) if total else before_w
        verb = "change" if skill["before"] is not None else "add"
        ids = {
            "skill_edit": queue.submit(
                "skill_edit", f"{cluster.id}: {verb} skill {skill['skill']}", skill,
                evidence=evidence, source="evolve", reason=why,
            ),
            "instruction_edit": queue.submit(
                "instruction_edit", f"{cluster.id}: instruction {line[2:62]}",
                {"before": instructions, "after": after, "diff": _diff(instructions, after, "instructions.md"),
                 "line": line, "drafted_by": by},
                evidence=evidence, source="evolve", reason=why,
            ),
            "mix_weight": queue.submit(
                "mix_weight", f"{cluster.id}: {group} weight {before_w:g} -> {after_w:g}",
                {"group": group, "before": before_w, "after": after_w,
                 "why": f"{failed} of the run's {total} scored episodes of {group} failed this way"},
                evidence=evidence, source="evolve", reason=why,
            ),
        }  # fmt: skip
        out[cluster.id] = ids
    return out


def run_round(
    run_dir: str | Path,
    *,
    loop: str | Path | None = None,
    queue: Any = None,
    client: Any = None,
    min_size: int = 1,
    max_clusters: int | None = None,
) -> RoundResult:
    """One round's proposals: read the run, cluster its failures, submit the edits
    (:func:`propose_edits`) and write ``<loop>/rounds/<n>/clusters.json`` and one
    ``cluster-<id>.json`` per cluster (a ``--gap cluster:FILE`` for ``phoneenv tasks propose``).
    Clusters smaller than ``min_size`` are left out, and past the ``max_clusters`` largest.

    The harness the run played with is read from its ``run.json`` (``harness``; v0 when absent).

    Raises:
        FileNotFoundError: ``run_dir`` has no traces.
        phoneenv.loop.harness.HarnessError: the run names a harness version the loop lacks.
    """
    from phoneenv.loop.harness import BASE_VERSION, load_harness

    run_dir = Path(run_dir)
    traces = read_run(run_dir)
    manifest = run_dir / "run.json"
    config = read_json_file(manifest) if manifest.exists() else {}
    if not isinstance(config, dict):
        raise ValueError(f"{manifest}: not a run manifest (a JSON {type(config).__name__})")
    harness = load_harness(config.get("harness") or BASE_VERSION, loop)
    clusters = cluster_failures(failure_cases(traces), min_size=min_size)[:max_clusters]
    queue = _queue(loop, queue)
    folder = round_dir(loop)
    folder.mkdir(parents=True, exist_ok=False)
    items = propose_edits(
        clusters, traces, run=str(run_dir), queue=queue, round_no=int(folder.name), harness=harness, client=client
    )
    scored = [t for t, _ in traces if t.verdict is not None and not t.verdict.infrastructure_error]
    data = {
        "round": int(folder.name),
        "run": str(run_dir),
        "harness": harness.name,
        "model": config.get("model_record") or config.get("model"),
        "created_at": _now(),
        "episodes": len(traces),
        "scored": len(scored),
        "failed": sum(c.size for c in clusters),
        "clusters": [],
    }
    for cluster in clusters:
        file = folder / f"cluster-{cluster.id}.json"
        summary = cluster.summary()
        file.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        data["clusters"].append({**summary, "gap": f"cluster:{file}", "items": items[cluster.id]})
    (folder / CLUSTERS_FILE).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return RoundResult(int(folder.name), folder, clusters, items)


# ------------------------------------------------------------------------------------------------
# apply
# ------------------------------------------------------------------------------------------------


def _merge_instructions(current: str, item: Any) -> str:
    before, after = item.payload.get("before") or "", item.payload["after"]
    if current.strip() == before.strip():
        return after
    added = after[len(before) :] if after.startswith(before) else after
    lines = [ln for ln in added.strip().splitlines() if ln.strip() and ln.strip() not in current]
    return "\n".join([current.rstrip(), *lines]).strip()


def apply_approved(loop: str | Path | None = None, queue: Any = None) -> Any:
    """Make a new harness version from the approved edit items (``skill_edit``,
    ``instruction_edit``, ``mix_weight``) no version applied yet; its parent is the latest version.
    Returns the new :class:`~phoneenv.loop.harness.Harness`, or None when there is nothing to apply.

    Skill edits write their ``after`` text at their ``path`` (a later item for the same path wins,
    in item order); instruction edits are applied in item order: an item whose ``before`` is the
    current text replaces it, another appends its new lines; mix weights set their group's weight.

    Raises:
        phoneenv.loop.harness.HarnessError: an approved skill that does not parse (nothing is
            written; reject or edit the item and apply again).
    """
    from phoneenv.loop.harness import applied_edits, create_version, latest_version

    queue = _queue(loop, queue)
    done = applied_edits(loop)
    todo = sorted((i for k in EDIT_KINDS for i in queue.approved(k) if i.id not in done), key=lambda i: i.id)
    if not todo:
        return None
    parent = latest_version(loop)
    skills: dict[str, str] = {}
    mix: dict[str, float] = {}
    instructions = parent.instructions
    for item in todo:
        if item.kind == "skill_edit":
            skills[item.payload["path"]] = item.payload["after"]
        elif item.kind == "instruction_edit":
            instructions = _merge_instructions(instructions, item)
        else:
            mix[item.payload["group"]] = float(item.payload["after"])
    return create_version(
        loop, parent=parent, skills=skills, instructions=instructions, mix=mix, edits=[i.id for i in todo]
    )


# ------------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------------


def _run_summary(run_dir: Path) -> dict[str, Any]:
    from phoneenv.evaluation import RunFolder, read_results, score

    results = read_results(run_dir / RunFolder.RESULTS)
    if not results:
        raise FileNotFoundError(f"{run_dir}: no episode results (results.jsonl)")
    manifest = run_dir / RunFolder.MANIFEST
    config = read_json_file(manifest) if manifest.exists() else {}
    if not isinstance(config, dict):
        raise ValueError(f"{manifest}: not a run manifest (a JSON {type(config).__name__})")
    board = score(config.get("agent", "?"), results)
    return {
        "run": str(run_dir),
        "harness": config.get("harness") or "v0",
        "model": (config.get("model_record") or {}).get("name") or config.get("model"),
        "suite": board.suite,
        "categories": [asdict(r) for r in board.categories],
        "success": {(r.task_id, r.seed): r.success for r in results if not r.infrastructure_error},
    }


def _lineage(loop: str | Path | None, name: str) -> list[Any]:
    from phoneenv.loop.harness import load_harness

    chain = []
    seen: set[str] = set()
    current: str | None = name
    while current is not None and current not in seen:
        seen.add(current)
        version = load_harness(current, loop)
        chain.append(version)
        current = version.manifest.parent
    return chain


def round_report(
    before: str | Path,
    after: str | Path,
    *,
    loop: str | Path | None = None,
    queue: Any = None,
    round_no: int | None = None,
) -> dict[str, Any]:
    """The round report: write ``<loop>/rounds/<n>/report.json`` and ``report.md`` and return the
    JSON data.

    ``n``: ``round_no``, else the latest round whose ``clusters.json`` was made from ``before``,
    else the latest round. The report holds both runs' scoreboards per category (episodes,
    success, progress) and their difference, the edits applied between the two runs' harness
    versions (the after-harness's lineage back to the before-harness: item id, kind, title), and
    per cluster of the round how many of its failing (task, seed) pairs succeed in ``after``
    (pairs ``after`` did not play are counted apart).

    Raises:
        FileNotFoundError: a run without results, or no round in the loop.
        ValueError: the chosen round's ``clusters.json`` is damaged (:func:`read_round`).
    """
    b, a = _run_summary(Path(before)), _run_summary(Path(after))
    root = loop_dir(loop) / ROUNDS_DIR
    rounds = sorted((int(p.name) for p in root.iterdir() if p.name.isdigit()), reverse=True) if root.is_dir() else []
    if round_no is None:
        for n in rounds:
            try:
                data = read_round(root / str(n) / CLUSTERS_FILE)
            except (OSError, ValueError):
                continue  # a damaged round is not known to be made from `before`; read (and named) if chosen
            if Path(data["run"]).resolve() == Path(before).resolve():
                round_no = n
                break
        else:
            round_no = rounds[0] if rounds else None
    if round_no is None:
        raise FileNotFoundError(f"no round in {root}: run `phoneenv evolve round --run {before}` first")
    folder = root / str(round_no)
    try:
        clusters = read_round(folder / CLUSTERS_FILE)["clusters"]
    except ValueError as exc:
        raise ValueError(f"{exc} (pass --round N for another round, or make a new one)") from None
    chain = _lineage(loop, a["harness"])
    names = [h.name for h in chain]
    stop = names.index(b["harness"]) if b["harness"] in names else len(chain)
    edit_ids = sorted({i for h in chain[:stop] for i in h.manifest.edits})
    q = _queue(loop, queue) if edit_ids else None
    edits = []
    for i in edit_ids:
        try:
            item = q.get(i)
            edits.append({"id": i, "kind": item.kind, "title": item.title})
        except KeyError:
            edits.append({"id": i, "kind": None, "title": "(not in the review queue)"})
    per_cluster = []
    for c in clusters:
        pairs = [(t, s) for t, s in c["pairs"]]
        played = [p for p in pairs if p in a["success"]]
        fixed = [p for p in played if a["success"][p]]
        applied = sorted(set(c.get("items", {}).values()) & set(edit_ids))
        per_cluster.append(
            {
                "id": c["id"],
                "signature": c["signature"],
                "failing": len(pairs),
                "replayed": len(played),
                "now_succeed": len(fixed),
                "edits_applied": applied,
            }
        )
    rows = []
    after_rows = {r["label"]: r for r in a["categories"]}
    for r in b["categories"]:
        x = after_rows[r["label"]]
        delta = None if r["success"] is None or x["success"] is None else x["success"] - r["success"]
        rows.append({"label": r["label"], "before": r, "after": x, "success_delta": delta})
    report = {
        "round": round_no,
        "created_at": _now(),
        "before": {k: b[k] for k in ("run", "harness", "model", "suite")},
        "after": {k: a[k] for k in ("run", "harness", "model", "suite")},
        "categories": rows,
        "edits": edits,
        "clusters": per_cluster,
    }
    (folder / f"{REPORT_FILE}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (folder / f"{REPORT_FILE}.md").write_text(report_markdown(report), encoding="utf-8")
    return report


class _Signature(BaseModel):
    model_config = ConfigDict(extra="allow")

    error_kind: StrictStr
    focus: StrictStr


class _RoundCluster(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: StrictStr
    signature: _Signature
    pairs: list[tuple[StrictStr, StrictInt | None]] = Field(default_factory=list)
    items: dict[str, StrictInt] = Field(default_factory=dict)


class _Round(BaseModel):
    """What :func:`round_report` reads of a round's ``clusters.json``."""

    model_config = ConfigDict(extra="allow")

    run: StrictStr
    clusters: list[_RoundCluster]


def read_round(path: Path) -> dict[str, Any]:
    """A round's ``clusters.json`` (written by :func:`run_round`) as JSON data, checked to hold
    what :func:`round_report` reads: the ``run`` it was made from, and per cluster its ``id``,
    ``signature``, failing ``pairs`` and review ``items``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: one line naming the file when it cannot be read or is no round's clusters file.
    """
    data = read_json_file(path)
    try:
        return _Round.model_validate(data).model_dump()
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem.get("loc", ())) or "the file"
        raise ValueError(f"{path}: not a round's {CLUSTERS_FILE} ({where}: {problem['msg']})") from None


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def report_markdown(report: Mapping[str, Any]) -> str:
    """The round report as Markdown (what ``report.md`` holds)."""
    b, a = report["before"], report["after"]
    lines = [
        f"# Round {report['round']}",
        "",
        f"Before: `{b['run']}` (model {b['model'] or '—'}, harness {b['harness']}, suite {b.get('suite') or '—'})  ",
        f"After: `{a['run']}` (model {a['model'] or '—'}, harness {a['harness']}, suite {a.get('suite') or '—'})",
        "",
        "## Scoreboard per category",
        "",
        "| Category | Episodes before | Success % before | Progress % before | Episodes after | Success % after "
        "| Progress % after | Δ success (points) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["categories"]:
        x, y, d = r["before"], r["after"], r["success_delta"]
        lines.append(
            f"| {r['label']} | {x['episodes']} | {_pct(x['success'])} | {_pct(x['progress'])} | {y['episodes']} "
            f"| {_pct(y['success'])} | {_pct(y['progress'])} | {'—' if d is None else f'{100 * d:+.1f}'} |"
        )
    lines += ["", "## Edits applied", ""]
    lines += [f"- #{e['id']} ({e['kind']}): {e['title']}" for e in report["edits"]] or ["- none"]
    lines += [
        "",
        "## Failures addressed",
        "",
        "| Cluster | Signature | Failing pairs | Replayed | Now succeed | Edits applied |",
        "|---|---|---:|---:|---:|---|",
    ]
    for c in report["clusters"]:
        sig = f"{c['signature']['error_kind']} on {c['signature']['focus']}"
        applied = ", ".join(f"#{i}" for i in c["edits_applied"]) or "—"
        lines.append(f"| {c['id']} | {sig} | {c['failing']} | {c['replayed']} | {c['now_succeed']} | {applied} |")
    return "\n".join(lines) + "\n"
