"""Verification: from the fixture state, the end state and the calls, decide the verdict.

Success needs every criterion to pass **and** no collateral damage. The collateral rule follows
AppWorld (Trivedi et al., 2024): expected changes ⊆ diff ⊆ expected ∪ allowed, where the diff is
every record created, updated or deleted since the fixture state, *expected* are the changes the
task's ``created``/``updated``/``deleted`` state criteria match, and *allowed* are the task's
``allowed_changes`` plus :data:`DEFAULT_ALLOWED` (consented system changes: a permission the user
granted at a prompt, a sign-in). Tables of session state the backend names transient (an ongoing
call, notifications) are left out of the diff.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from phoneenv.contract import (
    AnswerCriterion,
    BehaviorCriterion,
    ChangeSelector,
    Criterion,
    CriterionResult,
    Effect,
    Feedback,
    StateCriterion,
    TaskSpec,
    Verdict,
)
from phoneenv.state import Change, diff_tables
from phoneenv.tasks.predicates import match, norm

__all__ = ["DEFAULT_ALLOWED", "CallRecord", "verify"]

DEFAULT_ALLOWED: tuple[ChangeSelector, ...] = (
    ChangeSelector(table="system.permissions", where={"granted": True}),
    ChangeSelector(table="system.accounts"),
)
"""Changes every task allows: a permission the user granted at a prompt, sign-ins and sign-outs."""

CONSENTED_CALLS = frozenset({"system.sign_in", "system.sign_out", "system.request_permission"})
"""Writes a read-only task still permits: they only produce :data:`DEFAULT_ALLOWED` changes."""

_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?")


class CallRecord(NamedTuple):
    """One parsed action as verification sees it: tool name (canonical when known), arguments
    (secrets as ``***``), its feedback, the tool's effect (None for an unknown tool), and whether
    the user confirmed (``user.confirm`` only)."""

    name: str
    arguments: Mapping[str, Any]
    feedback: Feedback
    effect: Effect | None
    confirmed: bool = False

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.feedback.ok


def _state_matches(
    crit: StateCriterion, changes: Sequence[Change], after: Mapping[str, Mapping[str, Any]]
) -> list[Change] | int:
    if crit.change in ("present", "absent"):
        return sum(1 for rec in after.get(crit.table, {}).values() if match(rec, crit.where))
    out = []
    for ch in changes:
        if ch.table != crit.table or ch.kind != crit.change:
            continue
        rec = ch.old if ch.kind == "deleted" else ch.new
        if rec is not None and match(rec, crit.where):
            out.append(ch)
    return out


def _count_ok(crit: StateCriterion, n: int) -> tuple[bool, str]:
    if crit.change == "absent":
        return n == 0, f"{n} matching record(s) left, expected none"
    if crit.count is not None:
        return n == crit.count, f"{n} matching {crit.change} record(s), expected exactly {crit.count}"
    if crit.min is not None and n < crit.min:
        return False, f"{n} matching {crit.change} record(s), expected at least {crit.min}"
    if crit.max is not None and n > crit.max:
        return False, f"{n} matching {crit.change} record(s), expected at most {crit.max}"
    return True, ""


def _answer_ok(crit: AnswerCriterion, answer: str | None) -> tuple[bool, str]:
    if answer is None:
        return False, "no answer given"
    text = norm(answer)
    if crit.equals is not None and text.strip(" .!") != norm(crit.equals).strip(" .!"):
        return False, f"answer {answer!r} is not {crit.equals!r}"
    for part in crit.contains:
        if norm(part) not in text:
            return False, f"answer lacks {part!r}"
    if crit.pattern is not None and re.search(crit.pattern, answer, re.IGNORECASE) is None:
        return False, f"answer does not match /{crit.pattern}/"
    if crit.number is not None:
        m = _NUMBER.search(answer)
        if m is None:
            return False, "answer has no number"
        if abs(float(m.group().replace(",", ".")) - crit.number) > crit.tolerance:
            return False, f"answer {m.group()} is not {crit.number:g} ± {crit.tolerance:g}"
    return True, ""


def _behavior_ok(crit: BehaviorCriterion, calls: Sequence[CallRecord]) -> tuple[bool, str]:
    def hit(c: CallRecord) -> bool:
        return c.name == crit.tool and match(c.arguments, crit.arguments)

    if crit.rule == "required_call":
        return any(c.ok and hit(c) for c in calls), f"no successful call of {crit.tool} matching {crit.arguments}"
    if crit.rule == "forbidden_call":
        return not any(hit(c) for c in calls), f"{crit.tool} was called"
    if crit.rule == "confirm_before":
        confirmed = False
        for c in calls:
            if c.name == "user.confirm" and c.ok:
                confirmed = c.confirmed
            elif c.ok and hit(c):
                if not confirmed:
                    return False, f"{crit.tool} ran without a confirmation from the user first"
                confirmed = False
        return True, ""
    if crit.rule == "max_calls":
        n = sum(1 for c in calls if c.name != "finish")
        return n <= (crit.limit or 0), f"{n} tool calls, budget {crit.limit}"
    if crit.rule == "read_only":
        bad = [
            c.name
            for c in calls
            if c.ok and c.effect in (Effect.WRITE, Effect.SENSITIVE) and c.name not in CONSENTED_CALLS
        ]
        return not bad, f"writes in a read-only task: {', '.join(bad)}"
    if crit.rule == "delegated":
        return any(c.ok and c.name == "agent.delegate" for c in calls), "no delegation to a sub-agent"
    raise ValueError(f"unknown behavior rule {crit.rule!r}")


def evaluate(
    crit: Criterion,
    changes: Sequence[Change],
    after: Mapping[str, Mapping[str, Any]],
    calls: Sequence[CallRecord],
    answer: str | None,
) -> tuple[CriterionResult, list[Change]]:
    """Evaluate one criterion; returns its result and the changes it accounts for."""
    matched: list[Change] = []
    if isinstance(crit, StateCriterion):
        found = _state_matches(crit, changes, after)
        if isinstance(found, list):
            matched = found
            n = len(found)
        else:
            n = found
        ok, why = _count_ok(crit, n)
    elif isinstance(crit, AnswerCriterion):
        ok, why = _answer_ok(crit, answer)
    else:
        ok, why = _behavior_ok(crit, calls)
    return CriterionResult(id=crit.id, kind=crit.kind, passed=ok, reason="" if ok else why), matched


def verify(
    task: TaskSpec,
    before: Mapping[str, Mapping[str, Any]],
    after: Mapping[str, Mapping[str, Any]],
    calls: Sequence[CallRecord],
    answer: str | None,
    *,
    steps: int,
    errors: int,
    truncated: bool = False,
    infrastructure_error: bool = False,
    tokens: Mapping[str, int] | None = None,
    transient: Sequence[str] = (),
    inconsistencies: Sequence[str] = (),
) -> Verdict:
    """The :class:`Verdict` of an episode of ``task``.

    Args:
        before: fixture-state tables (``{"app.table": {id: record}}``); after: end-state tables.
        calls: executed steps in order (see :class:`CallRecord`).
        answer: the ``finish`` answer, or None if the agent never finished.
        steps: actions taken; errors: feedbacks with ``ok=False``.
        tokens: the agent's totals (``prompt``, ``output`` with thinking included, ``thinking``).
        transient: tables of session state left out of the diff (see ``Backend.transient_tables``).
        inconsistencies: contradictions the world reported (``Backend.consistency_issues``).

    Success = all criteria pass, no collateral change, and the episode was not truncated.
    Progress = milestones met / total (1.0 on success; 0.0 or 1.0 when there are no milestones).
    """
    changes = diff_tables(before, after, ignore=transient)
    results: list[CriterionResult] = []
    expected: set[tuple[str, str]] = set()
    seen: dict[str, int] = {}
    for crit in task.criteria:
        res, matched = evaluate(crit, changes, after, calls, answer)
        n = seen[res.id] = seen.get(res.id, 0) + 1
        if n > 1:  # keep ids unique within a verdict: "created:messages.messages#2"
            res.id = f"{res.id}#{n}"
        results.append(res)
        expected.update((c.table, c.id) for c in matched)
    met = 0
    for crit in task.milestones:
        res, matched = evaluate(crit, changes, after, calls, answer)
        met += res.passed
        expected.update((c.table, c.id) for c in matched)
    allowed = (*task.allowed_changes, *DEFAULT_ALLOWED)
    collateral = []
    for ch in changes:
        if (ch.table, ch.id) in expected:
            continue
        rec = ch.new if ch.new is not None else ch.old
        if any(sel.table == ch.table and match(rec or {}, sel.where) for sel in allowed):
            continue
        collateral.append(f"{ch.table}/{ch.id} {ch.kind}")
    success = all(r.passed for r in results) and not collateral and not truncated
    total = len(task.milestones)
    progress = 1.0 if success else (met / total if total else 0.0)
    return Verdict(
        success=success,
        progress=progress,
        criteria=results,
        milestones_met=met,
        milestones_total=total,
        collateral=collateral,
        steps=steps,
        tool_calls=sum(1 for c in calls if c.name != "finish"),
        errors=errors,
        prompt_tokens=None if tokens is None else tokens.get("prompt", 0),
        output_tokens=None if tokens is None else tokens.get("output", 0),
        thinking_tokens=None if tokens is None else tokens.get("thinking", 0),
        infrastructure_error=infrastructure_error,
        truncated=truncated,
        answer=answer,
        inconsistent=bool(inconsistencies),
        inconsistencies=list(inconsistencies),
    )
