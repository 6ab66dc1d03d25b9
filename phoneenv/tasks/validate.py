"""Prove tasks by execution: the reference plan succeeds, the empty plan fails, and every
perturbed plan (one argument of one state-changing call, or the answer, changed) fails.

    >>> from phoneenv.tasks import select
    >>> from phoneenv.tasks.validate import prove
    >>> prove(select("contacts.add_contact/0")[0]).ok
    True

A perturbation changes one value so that it means something else: a bool is negated, a number
moved by one, an id pointed at the next id, a time or date shifted by an hour or a day, a phone
number's last digit changed, an email address prefixed with ``zz``, other text ROT13-shifted
with each digit moved by five (no character maps to itself), a list's first item perturbed.

Arguments the goal does not fix are not perturbed (:func:`free_arguments`): the final answer of a
task with no answer criterion to meet (an action task: its answer is still checked for what it
must not say), and free text (no digit, not an id, time, date, phone number or address) that
neither the goal nor the criteria hold (a greeting beside a photo, a label the goal leaves
open). A task lists further such arguments in ``perturb_exempt`` (``"<step>.<arg>"``); one
written by hand rarely needs to.

Plans with sub-agent frames (:mod:`phoneenv.frames`): a sub-agent's ``finish`` answer is a
message between frames, not the user's answer, so it is not perturbed (a replayed plan cannot
act on a changed answer anyway). Instead, each delegation is *inlined*: the plan without that
``agent.delegate`` and its closing ``finish``, its steps acted by the delegating frame itself.
That plan must fail too, which proves the task's criteria require the delegation.

Verdict probes (:class:`~phoneenv.contract.Probe`, written beside each template) are played too:
each must get the verdict it declares, so a plausible right alternative (another channel, an
equivalent record, the answer in words) is accepted and a near miss (a hedge, contradicting
content, a stray record, the wrong person) rejected.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from phoneenv.contract import AnswerCriterion, CompositeCriterion, Effect, TaskSpec, ToolCall
from phoneenv.frames import MAX_DEPTH, plan_depths, plan_frames
from phoneenv.harness.memory import STOPWORDS
from phoneenv.tasks.predicates import words

__all__ = [
    "TaskProof",
    "free_arguments",
    "inlined_plans",
    "perturb",
    "perturbations",
    "prove",
    "prove_suite",
    "run_plan",
]

_ID = re.compile(r"^([a-z]+_)(\d+)$")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_PHONE = re.compile(r"^\+?\d[\d \-]{2,}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_SHIFT = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM5678901234",
)
"""ROT13 on letters and +5 on digits: no letter or digit maps to itself, so a perturbed text
shares no word or number with the original ("Ana" → "Nan", "3" → "8")."""


def perturb(value: Any) -> Any:
    """A value of the same type that means something else (see the module docstring).

    Returns ``None`` when ``value`` has nothing to perturb (None, an empty dict).
    """
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        if m := _ID.match(value):
            return f"{m.group(1)}{int(m.group(2)) + 1}"
        if _TIME.match(value):
            t = dt.datetime.fromisoformat(value) + dt.timedelta(hours=1)
            return t.isoformat(timespec="seconds" if value.count(":") == 2 else "minutes")
        if _DATE.match(value):
            return (dt.date.fromisoformat(value) + dt.timedelta(days=1)).isoformat()
        if _HHMM.match(value):
            h, m2 = value.split(":")
            return f"{(int(h) + 1) % 24:02d}:{m2}"
        if _PHONE.match(value):
            last = value[-1]
            return value[:-1] + ("0" if last != "0" else "1")
        if _EMAIL.match(value):
            return "zz" + value
        return value.translate(_SHIFT) if value.strip() else "zz"
    if isinstance(value, (list, tuple)):
        if not value:
            return ["zz"]
        return [perturb(value[0]), *value[1:]]
    return None


def _fixes_answer(criteria: Iterable[Any]) -> bool:
    """Whether ``criteria`` hold an answer check the answer must meet (not one under ``not``, not
    an optional one that checks only a value the answer happens to state)."""
    for c in criteria:
        if isinstance(c, AnswerCriterion) and not c.optional:
            return True
        if isinstance(c, CompositeCriterion) and c.kind != "not" and _fixes_answer(c.criteria):
            return True
    return False


_CODE = re.compile(r"^(?:[A-Z][A-Z0-9_-]*|\w+(?:\.\w+)+)$")
"""A code or a dotted name, not words: ``XL``, ``SYD``, ``android.permission.CAMERA``."""
_SHAPED = (_ID, _TIME, _DATE, _HHMM, _PHONE, _EMAIL, _CODE)


def _content(text: str) -> list[str]:
    """The content words of ``text`` (not a function word: :data:`~phoneenv.harness.memory.STOPWORDS`),
    as :func:`~phoneenv.tasks.predicates.words` spells them."""
    return [w for w in words(text).split() if w not in STOPWORDS]


def free_arguments(task: TaskSpec) -> set[str]:
    """The ``"<step>.<arg>"`` keys of ``task``'s reference plan that the goal does not fix, so a
    perturbation of them proves nothing: the root ``finish`` answer when no criterion checks
    what it must state (:func:`_fixes_answer`), and each free-text argument (a string with a
    letter and no digit, not shaped as an id, time, date, phone number, e-mail address or code such as
    ``XL``) no
    content word of which occurs in the goal, the criteria or a contact's name (``"Hi! Look at
    this"`` beside a photo; not ``"I'm at Central Station"`` where the goal names the place)."""
    plan = task.reference_plan or []
    depths = plan_depths(plan) if plan else []
    goal = words(task.goal)
    contacts = task.fixtures.records.get("contacts.contacts") or []
    held = words(" ".join([*(c.model_dump_json() for c in task.criteria), *(str(r.get("name")) for r in contacts)]))
    fixes_answer = _fixes_answer(task.criteria)
    out: set[str] = set()
    for i, step in enumerate(plan):
        for arg, value in step.arguments.items():
            if step.name == "finish":
                if arg == "answer" and depths[i] == 0 and not fixes_answer:
                    out.add(f"{i}.{arg}")
                continue
            if not isinstance(value, str) or not re.search(r"[^\W\d_]", value) or re.search(r"\d", value):
                continue
            if any(p.match(value) for p in _SHAPED):
                continue
            if not any(f" {w} " in goal or f" {w} " in held for w in _content(value)):
                out.add(f"{i}.{arg}")
    return out


def perturbations(task: TaskSpec, effects: dict[str, Effect]) -> Iterable[tuple[str, list[ToolCall]]]:
    """Each ``("<step>.<arg>", perturbed plan)`` of the task's reference plan.

    Perturbed steps: those whose tool has a ``write`` or ``sensitive`` effect, and the root
    frame's ``finish`` (a sub-agent's ``finish`` is not: see the module docstring); arguments
    the goal does not fix (:func:`free_arguments`, ``perturb_exempt``) are left as they are.
    """
    plan = task.reference_plan or []
    exempt = set(task.perturb_exempt) | free_arguments(task)
    depths = plan_depths(plan)
    for i, step in enumerate(plan):
        if step.name == "finish" and depths[i] > 0:
            continue
        if step.name != "finish" and effects.get(step.name, Effect.READ) is Effect.READ:
            continue
        for arg, value in step.arguments.items():
            key = f"{i}.{arg}"
            if key in exempt:
                continue
            new = perturb(value)
            if new is None or new == value:
                continue
            changed = step.model_copy(update={"arguments": {**step.arguments, arg: new}})
            yield key, [*plan[:i], changed, *plan[i + 1 :]]


def inlined_plans(task: TaskSpec) -> Iterable[tuple[str, list[ToolCall]]]:
    """Each ``("inline:<step>", plan)``: the reference plan with the delegation opened at
    ``<step>`` removed (its ``agent.delegate`` and closing ``finish`` dropped, its steps acted by
    the delegating frame). Delegations never closed in the plan are skipped."""
    plan = task.reference_plan or []
    for start, end in plan_frames(plan):
        if end is None:
            continue
        yield f"inline:{start}", [c for k, c in enumerate(plan) if k not in (start, end)]


@dataclass
class TaskProof:
    """The outcome of proving one task: ``ok`` when every check held; ``problems`` in words."""

    task_id: str
    ok: bool
    problems: list[str] = field(default_factory=list)
    perturbations: int = 0
    probes: int = 0
    """Verdict probes played."""
    probes_as_expected: int = 0
    """Probes whose verdict was the one declared (must-pass accepted, must-fail rejected)."""
    claims: dict[str, dict[str, int]] = field(default_factory=dict)
    """Generated claim probes (:mod:`phoneenv.tasks.claim_probes`) per type: ``generated``,
    ``held`` (a must-fail value the world holds somewhere: not played), ``as_expected`` (must-fail
    rejected, must-pass accepted) and ``unexpected``."""


def run_plan(env: Any, task: TaskSpec, plan: list[ToolCall]) -> tuple[dict[str, Any], list[Any]]:
    """Play ``plan`` on ``env`` (a :class:`~phoneenv.env.PhonePlanEnv`) for ``task``; returns the
    final info and the feedback of each step. A plan that never finishes is ended by extra
    ``finish`` calls (one per open frame, then the root's) so every run ends with a verdict."""
    env.reset(seed=0, options={"task": task})
    info: dict[str, Any] = {}
    feedbacks = []
    for c in plan:
        _, _, term, trunc, info = env.step(c.model_dump(exclude_none=True))
        feedbacks.append(info["feedback"])
        if term or trunc:
            return info, feedbacks
    for _ in range(MAX_DEPTH + 1):
        _, _, term, trunc, info = env.step({"name": "finish", "arguments": {}})
        if term or trunc:
            break
    return info, feedbacks


def _crashes(what: str, plan: list[ToolCall], feedbacks: list[Any]) -> list[str]:
    """A problem for each step of ``plan`` that failed inside the backend (``internal_error``: a
    tool raised something other than a ToolError). Such a run fails its verdict for a reason that
    is no check of the task, so a perturbation or probe it ends proves nothing."""
    return [
        f"{what}: step {i} ({plan[i].name if i < len(plan) else 'finish'}) failed inside the backend: {fb.message}"
        for i, fb in enumerate(feedbacks)
        if not fb.ok and fb.error is not None and fb.error.value == "internal_error"
    ]


def prove(task: TaskSpec, env: Any = None) -> TaskProof:
    """Check that ``task`` is solvable and not trivially or loosely verified.

    Problems reported: no reference plan; a reference plan whose frames do not nest (a step
    after the root's ``finish``); a reference-plan step that returned an error; the reference
    plan failing; the empty plan succeeding; a perturbed or inlined plan (see
    :func:`inlined_plans`) succeeding; no perturbation to try at all; a verdict probe whose
    verdict differs from the one it declares; any step of a perturbed plan or a probe that
    failed inside the backend (a tool that raised: its verdict proves nothing).
    """
    from phoneenv.env import PhonePlanEnv

    env = env or PhonePlanEnv(tasks=[task], backend=task.backends[0])
    problems: list[str] = []
    if not task.reference_plan:
        return TaskProof(task.id, False, ["no reference plan"])
    try:
        plan_depths(task.reference_plan)
    except ValueError as exc:
        return TaskProof(task.id, False, [f"reference plan: {exc}"])
    info, fbs = run_plan(env, task, task.reference_plan)
    generated = _claim_probes(env, task, info)
    for i, fb in enumerate(fbs):
        if not fb.ok:
            problems.append(
                f"reference step {i} ({task.reference_plan[i].name}) failed: {fb.error.value}: {fb.message}"
            )
    verdict = info["verdict"]
    if not verdict["success"]:
        why = [f"{c['id']}: {c['reason']}" for c in verdict["criteria"] if not c["passed"]] + verdict["collateral"]
        problems.append(f"reference plan fails: {'; '.join(why)}")
    info, _ = run_plan(env, task, [ToolCall(name="finish", arguments={})])
    if info["verdict"]["success"]:
        problems.append("the empty plan succeeds")
    effects = {s.name: s.effect for s in env.tool_specs}
    n = 0
    for key, plan in perturbations(task, effects):
        n += 1
        info, fbs = run_plan(env, task, plan)
        problems += _crashes(f"perturbing {key}", plan, fbs)
        if info["verdict"]["success"]:
            problems.append(f"perturbing {key} still succeeds")
    for key, plan in inlined_plans(task):
        n += 1
        info, fbs = run_plan(env, task, plan)
        problems += _crashes(key, plan, fbs)
        if info["verdict"]["success"]:
            problems.append(f"{key} (the delegation done by its parent itself) still succeeds")
    if n == 0:
        problems.append("no argument to perturb")
    as_expected = 0
    for probe in task.probes:
        info, fbs = run_plan(env, task, probe.plan)
        problems += _crashes(f"probe {probe.name!r}", probe.plan, fbs)
        verdict = info["verdict"]
        if verdict["success"] == (probe.expect == "pass"):
            as_expected += 1
            continue
        if probe.expect == "pass":
            why = [f"{c['id']}: {c['reason']}" for c in verdict["criteria"] if not c["passed"]] + verdict["collateral"]
            problems.append(f"probe {probe.name!r} must pass but fails: {'; '.join(why)}")
        else:
            problems.append(f"probe {probe.name!r} must fail but succeeds")
    counts: dict[str, dict[str, int]] = {}
    for cp in generated:
        row = counts.setdefault(cp.type, {"generated": 0, "held": 0, "as_expected": 0, "unexpected": 0})
        row["generated"] += 1
        if cp.held:
            row["held"] += 1
            continue
        verdict = run_plan(env, task, cp.plan)[0]["verdict"]
        if verdict["success"] == (cp.expect == "pass"):
            row["as_expected"] += 1
            continue
        row["unexpected"] += 1
        if cp.expect == "pass":
            why = [f"{c['id']}: {c['reason']}" for c in verdict["criteria"] if not c["passed"]] + verdict["collateral"]
            problems.append(f"generated {cp.type} probe {cp.name!r} must pass but fails: {'; '.join(why)}")
        else:
            problems.append(f"generated {cp.type} probe {cp.name!r} must fail but succeeds")
    return TaskProof(task.id, not problems, problems, n, len(task.probes), as_expected, counts)


def _claim_probes(env: Any, task: TaskSpec, info: dict[str, Any]) -> list[Any]:
    """The generated claim probes of ``task`` from the episode ``env`` just finished (its
    reference plan), or none when that episode did not end with a verdict."""
    from phoneenv.tasks.claim_probes import claim_probes

    if not info.get("verdict"):
        return []
    try:
        return claim_probes(task, env.episode_grounds(), env.episode_context())
    except RuntimeError:
        return []


def prove_suite(tasks: Iterable[TaskSpec], on_task: Callable[[TaskProof], None] | None = None) -> list[TaskProof]:
    """Prove every task, each on the first backend it declares (one shared env per backend, no
    simulator model: simulated tools serve the task's scripted results); ``on_task`` is called
    after each (for progress bars)."""
    from phoneenv.env import PhonePlanEnv

    tasks = list(tasks)
    envs: dict[str, PhonePlanEnv] = {}
    out = []
    for t in tasks:
        name = t.backends[0]
        if name not in envs:
            envs[name] = PhonePlanEnv(tasks=tasks, backend=name)
        proof = prove(t, envs[name])
        out.append(proof)
        if on_task is not None:
            on_task(proof)
    return out
