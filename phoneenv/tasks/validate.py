"""Prove tasks by execution: the reference plan succeeds, the empty plan fails, and every
perturbed plan (one argument of one state-changing call, or the answer, changed) fails.

    >>> from phoneenv.tasks import select
    >>> from phoneenv.tasks.validate import prove
    >>> prove(select("contacts.add_contact/0")[0]).ok
    True

A perturbation changes one value so that it means something else: a bool is negated, a number
moved by one, an id pointed at the next id, a time or date shifted by an hour or a day, a phone
number's last digit changed, an email address prefixed with ``zz``, other text ROT13-shifted
with each digit moved by five (no character maps to itself), a list's first item perturbed. Arguments listed in the task's ``perturb_exempt`` (``"<step>.<arg>"``) are skipped:
the goal does not fix them (a message's exact wording, a search query).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from phoneenv.contract import Effect, TaskSpec, ToolCall

__all__ = ["TaskProof", "perturb", "perturbations", "prove", "prove_suite", "run_plan"]

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


def perturbations(task: TaskSpec, effects: dict[str, Effect]) -> Iterable[tuple[str, list[ToolCall]]]:
    """Each ``("<step>.<arg>", perturbed plan)`` of the task's reference plan.

    Perturbed steps: those whose tool has a ``write`` or ``sensitive`` effect, and ``finish``.
    """
    plan = task.reference_plan or []
    exempt = set(task.perturb_exempt)
    for i, step in enumerate(plan):
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


@dataclass
class TaskProof:
    """The outcome of proving one task: ``ok`` when every check held; ``problems`` in words."""

    task_id: str
    ok: bool
    problems: list[str] = field(default_factory=list)
    perturbations: int = 0


def run_plan(env: Any, task: TaskSpec, plan: list[ToolCall]) -> tuple[dict[str, Any], list[Any]]:
    """Play ``plan`` on ``env`` (a :class:`~phoneenv.env.PhonePlanEnv`) for ``task``; returns the
    final info and the feedback of each step. A plan that never finishes is truncated by an
    extra ``finish`` call so every run ends with a verdict."""
    env.reset(seed=0, options={"task": task})
    info: dict[str, Any] = {}
    feedbacks = []
    for c in plan:
        _, _, term, trunc, info = env.step(c.model_dump(exclude_none=True))
        feedbacks.append(info["feedback"])
        if term or trunc:
            return info, feedbacks
    _, _, _, _, info = env.step({"name": "finish", "arguments": {}})
    return info, feedbacks


def prove(task: TaskSpec, env: Any = None) -> TaskProof:
    """Check that ``task`` is solvable and not trivially or loosely verified.

    Problems reported: no reference plan; a reference-plan step that returned an error; the
    reference plan failing; the empty plan succeeding; a perturbed plan succeeding; no
    perturbation to try at all.
    """
    from phoneenv.env import PhonePlanEnv

    env = env or PhonePlanEnv(tasks=[task], backend=task.backends[0])
    problems: list[str] = []
    if not task.reference_plan:
        return TaskProof(task.id, False, ["no reference plan"])
    info, fbs = run_plan(env, task, task.reference_plan)
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
        info, _ = run_plan(env, task, plan)
        if info["verdict"]["success"]:
            problems.append(f"perturbing {key} still succeeds")
    if n == 0:
        problems.append("no argument to perturb")
    return TaskProof(task.id, not problems, problems, n)


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
