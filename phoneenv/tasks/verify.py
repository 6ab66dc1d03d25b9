"""Verification: from the fixture state, the end state and the calls, decide the verdict.

Success needs every criterion to pass **and** no collateral damage. The collateral rule follows
AppWorld (arXiv:2407.18901): expected changes ⊆ diff ⊆ expected ∪ allowed, where the diff is
every record created, updated or deleted since the fixture state, *expected* are the changes the
task's ``created``/``updated``/``deleted`` state criteria match, and *allowed* are the task's
``allowed_changes`` plus :data:`DEFAULT_ALLOWED` (consented system changes: a permission the user
granted at a prompt, a sign-in). Tables of session state the backend names transient (an ongoing
call, notifications) are left out of the diff. An expected *update* is expected in the fields the
task asks about only: a field an argument of the agent's calls set beside them, which no matching
state criterion names, is collateral (``"contacts.contacts/c_6 updated phone (not asked for)"``);
fields the app changes by itself, named by no call (a timestamp, a refund), are not.

Behaviour criteria see which frame each call was made in (:mod:`phoneenv.frames`): ``depth``
scopes a rule to the calls of frames at that depth (0: the root), and ``delegated`` checks the
frame tree. :func:`calls_from_trace` and :func:`check_trace` evaluate criteria on a stored
:class:`~phoneenv.contract.Trace`.
"""

from __future__ import annotations

import fnmatch
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from phoneenv.contract import (
    GROUNDED_TYPES,
    AnswerCriterion,
    BehaviorCriterion,
    ChangeSelector,
    CompositeCriterion,
    Criterion,
    CriterionResult,
    Effect,
    Feedback,
    Frame,
    StateCriterion,
    TaskSpec,
    Trace,
    Verdict,
)
from phoneenv.harness.memory import STOPWORDS
from phoneenv.state import Change, diff_tables
from phoneenv.tasks.answers import Judge, call_judge, check_answer, read_value
from phoneenv.tasks.grounding import (
    Grounds,
    Ungrounded,
    WorldGrounds,
    authored_texts,
    check_told,
    grounds,
    world_grounds,
)
from phoneenv.tasks.identity import CONTACTS_TABLE, ContactBook, contact_ids
from phoneenv.tasks.predicates import Context, check, match
from phoneenv.tasks.undone import undone_criterion

__all__ = [
    "DEFAULT_ALLOWED",
    "GROUNDED",
    "CallRecord",
    "asks_about",
    "calls_from_trace",
    "check_trace",
    "context_of",
    "episode_changes",
    "episode_grounds",
    "grounded",
    "verify",
]

DELEGATE = "agent.delegate"
ROOT = "main"

DEFAULT_ALLOWED: tuple[ChangeSelector, ...] = (
    ChangeSelector(table="system.permissions", where={"granted": True}),
    ChangeSelector(table="system.accounts"),
)
"""Changes every task allows: a permission the user granted at a prompt, sign-ins and sign-outs."""

STEP_UP_TOOLS = ("user.authenticate",)
"""The step-up calls a ``step_up`` rule accepts when it names none (``via`` empty)."""

CONSENTED_CALLS = frozenset({"system.sign_in", "system.sign_out", "system.request_permission"})
"""Writes a read-only task still permits: they only produce :data:`DEFAULT_ALLOWED` changes."""


def context_of(
    after: Mapping[str, Mapping[str, Any]],
    before: Mapping[str, Mapping[str, Any]] | None = None,
    now: str | None = None,
) -> Context:
    """The :class:`~phoneenv.tasks.predicates.Context` of an episode: the contacts of the end
    state (``contacts.contacts``; the fixture state's when the end state has none), ``now``, and
    both states (for ``ref``)."""
    table = after.get(CONTACTS_TABLE) or (before or {}).get(CONTACTS_TABLE) or {}
    return Context(contacts=ContactBook(table), now=now, tables=after, before=before or {})


def _answer_type(crit: AnswerCriterion) -> str | None:
    return crit.type or ("number" if crit.number is not None else None)


def _typed_answers(criteria: Sequence[Criterion]) -> list[AnswerCriterion]:
    out: list[AnswerCriterion] = []
    for c in criteria:
        if isinstance(c, CompositeCriterion):
            out.extend(_typed_answers(c.criteria))
        elif isinstance(c, AnswerCriterion) and _answer_type(c) is not None:
            out.append(c)
    return out


def value_types(criteria: Sequence[Criterion], value: Any, ctx: Context) -> frozenset[str] | None:
    """The answer types, among the typed answer criteria of ``criteria``, that can read the
    ``finish`` call's typed ``value`` (a count reads as a number, ``["Ana", "Ben"]`` as people).

    A task may ask for several facts ("how many, and from whom?") while ``finish`` carries one
    value: that value is checked against the criteria of the types it reads as, and the others
    read the free text alone. None when no criterion can read it (then it is checked against
    every typed criterion, and fails them as "not a <type>")."""
    if value is None:
        return None
    found = frozenset(t for c in _typed_answers(criteria) if (t := _answer_type(c)) and read_value(value, t, ctx))
    return found or None


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


class CallRecord(NamedTuple):
    """One parsed action as verification sees it: tool name (canonical when known), arguments
    (secrets as ``***``), its feedback, the tool's effect (None for an unknown tool), whether
    the user confirmed (``user.confirm`` only), and the id of the frame it was made in."""

    name: str
    arguments: Mapping[str, Any]
    feedback: Feedback
    effect: Effect | None
    confirmed: bool = False
    frame: str = ROOT

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.feedback.ok


def _state_matches(
    crit: StateCriterion, changes: Sequence[Change], after: Mapping[str, Mapping[str, Any]], ctx: Context
) -> tuple[int, list[Change]]:
    """The number of records ``crit`` counts and the changes it accounts for."""
    if crit.change in ("present", "absent"):
        n = sum(1 for rec in after.get(crit.table, {}).values() if match(rec, crit.where, ctx))
        if crit.change == "absent" or crit.count is None:
            return n, []
        made = [
            ch for ch in changes if ch.table == crit.table and ch.new is not None and match(ch.new, crit.where, ctx)
        ]
        return n, made
    out = []
    for ch in changes:
        if ch.table != crit.table or ch.kind != crit.change:
            continue
        rec = ch.old if ch.kind == "deleted" else ch.new
        if rec is not None and match(rec, crit.where, ctx):
            out.append(ch)
    return len(out), out


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


def _answer_ok(
    crit: AnswerCriterion,
    answer: str | None,
    value: Any = None,
    ctx: Context | None = None,
    judge: Judge | None = None,
) -> tuple[bool, str]:
    ctx = ctx or Context()
    try:
        ok, why = check_answer(crit, answer, value, ctx)
    except ValueError as exc:  # the criterion's own expected value is unreadable: a task bug
        return False, f"criterion error: {exc}"
    if not ok or crit.judge is None or judge is None:
        return ok, why
    return call_judge(judge, crit.judge, answer, value)


def _tool_hit(pattern: str | None, name: str) -> bool:
    if pattern is None:
        return False
    return name == pattern or (any(ch in pattern for ch in "*?[") and fnmatch.fnmatchcase(name, pattern))


def _delegated_ok(
    crit: BehaviorCriterion, calls: Sequence[CallRecord], frames: Sequence[Frame], ctx: Context
) -> tuple[bool, str]:
    want = crit.min_frames
    if not frames:  # calls without a frame tree: only the count of successful delegations is known
        n = sum(1 for c in calls if c.ok and c.name == DELEGATE)
        if crit.tool is not None or crit.goal is not None or crit.depth is not None:
            return False, "no frame tree to check the delegation against"
        return n >= want, "no delegation to a sub-agent" if n == 0 else f"{n} delegation(s), expected {want}"
    children: dict[str, list[str]] = {}
    for f in frames:
        if f.parent is not None:
            children.setdefault(f.parent, []).append(f.id)

    def subtree(fid: str) -> set[str]:
        out, todo = set(), [fid]
        while todo:
            cur = todo.pop()
            out.add(cur)
            todo.extend(children.get(cur, ()))
        return out

    n = 0
    for f in frames:
        if f.depth < 1 or f.closed_at is None:
            continue
        if crit.depth is not None and f.depth != crit.depth:
            continue
        if crit.goal is not None and not check(f.goal, crit.goal, ctx):
            continue
        if crit.tool is not None:
            inside = subtree(f.id)
            if not any(
                c.ok and c.frame in inside and _tool_hit(crit.tool, c.name) and match(c.arguments, crit.arguments, ctx)
                for c in calls
            ):
                continue
        n += 1
    what = "finished sub-agent frame(s)" + (f" at depth {crit.depth}" if crit.depth is not None else "")
    what += f" with goal {crit.goal}" if crit.goal is not None else ""
    what += f" that called {crit.tool}" if crit.tool is not None else ""
    what += f" with {crit.arguments}" if crit.arguments else ""
    return n >= want, f"{n} {what}, expected at least {want}"


# Words a confirmation question may use for an action, beyond the tool's own name parts.
_ACTION_WORDS: dict[str, tuple[str, ...]] = {
    "send": ("text", "message", "sms", "mail", "email", "tell", "write", "ask", "let"),
    "reply": ("respond", "answer", "write", "accept", "decline", "send"),
    "forward": ("send", "share"),
    "checkout": ("buy", "order", "purchase", "pay"),
    "place": ("order", "buy"),
    "pay": ("payment", "transfer", "send", "money", "settle"),
    "send_money": ("pay", "payment", "transfer"),
    "schedule": ("pay", "payment", "plan"),
    "delete": ("remove", "erase", "clear", "drop", "get rid"),
    "clear": ("delete", "remove", "erase"),
    "remove": ("delete", "erase", "drop"),
    "book": ("reserve", "reservation", "booking"),
    "cancel": ("call off", "drop"),
    "unlock": ("open",),
    "share": ("send",),
    "revoke": ("remove", "withdraw", "take away"),
    "block": ("ban",),
}
# BM25's function words, and the politeness of a yes/no question
_Q_STOP = STOPWORDS | {"shall", "okay", "yes", "please", "want"}
_Q_TOKEN = re.compile(r"[a-z]+_\d+|\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}|\d+(?:[.,]\d+)?|[^\W\d_]{3,}")


def _distinctive(tok: str) -> bool:
    """A token that can tell one record from another: a word of 4+ letters, a decimal amount, a
    date or time, a number of 3+ digits (not a day, a count or a bare hour)."""
    return (tok.isalpha() and len(tok) >= 4) or any(ch in tok for ch in ".-:_") or (tok.isdigit() and len(tok) >= 3)


def _q_tokens(value: Any) -> set[str]:
    """Lower-case words (3+ letters, stopwords out), ids (``b_4``), dates, times and numbers
    (``115.33``; trailing zeros of decimals dropped; ``,`` as a decimal point) of every string
    and number in ``value``."""
    out: set[str] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, (str, int, float)) and not isinstance(v, bool):
            for tok in _Q_TOKEN.findall(str(v).lower()):
                tok = tok.replace(",", ".")
                if "." in tok and tok.replace(".", "").isdigit():  # 64.20 and 64.2, 99.0 and 99
                    tok = tok.rstrip("0").rstrip(".")
                if tok not in _Q_STOP:
                    out.add(tok)
    return out


_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|'[^']*'(?!\w)")
"""A quoted span of a question (the text to send), set aside when reading whom it addresses."""
_ADDRESSEE = re.compile(r"\b(?:to|shar\w*\b[^?.!]*?\bwith)\s+([^\W\d_]+)\b(?!')(?:\s+([^\W\d_]+)\b(?!'))?")
"""Whom a confirmation addresses: the name after "to" ("Send Kevin's card to Stanley?") or after
"share ... with"; a possessive is no addressee ("going to Kevin's party")."""


def asks_about(
    question: str,
    tool: str,
    arguments: Mapping[str, Any],
    tables: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> bool:
    """Whether a confirmation ``question`` refers to the call ``tool(arguments)`` it confirms.

    It must share a word with the tool's name parts ("pay", "bill"), their usual paraphrases
    ("buy" for ``shop.checkout``, "text" for ``messages.send``: :data:`_ACTION_WORDS`), or the
    call's argument values (a name, a title, an amount, a number); words match on their first
    five letters ("deleting" ~ "delete"). With ``tables`` (``{"app.table": {id: record}}``, the
    records as they were), the records the call names by id are read too, and the question must
    not name another record of their table: a word or number of a sibling record that the
    target lacks ("Pay Phone November: 28.72 AUD?" before paying the Electricity bill) makes it
    a confirmation about something else. "Shall I keep the brightness as it is?" confirms no
    ``shop.checkout``; "Buy the rain jacket for 74.50 EUR?" does."""
    app, _, verb = tool.partition(".")
    cues = {app, verb, *verb.split("_")}
    for key in (verb, *verb.split("_")):
        cues.update(w for phrase in _ACTION_WORDS.get(key, ()) for w in phrase.split())
    cues = {c.lower() for c in cues if len(c) >= 3} | _q_tokens(dict(arguments))
    words = _q_tokens(question)

    def near(w: str, pool: set[str]) -> bool:
        return any(w == c or (len(w) >= 5 and len(c) >= 5 and w[:5] == c[:5]) for c in pool)

    if not any(near(w, cues) for w in words):
        return False
    if not tables:
        return True
    by_prefix: dict[str, list[str]] = {}
    for name, tab in tables.items():
        first = next(iter(tab), None)
        if isinstance(first, str) and "_" in first:
            by_prefix.setdefault(first.split("_", 1)[0], []).append(name)

    def where(v: Any) -> str | None:
        if not isinstance(v, str) or "_" not in v or len(v) > 64:
            return None
        return next((n for n in by_prefix.get(v.split("_", 1)[0], ()) if v in tables[n]), None)

    def tokens(rec: Mapping[str, Any]) -> set[str]:  # the record's, and those of records it names by id
        out = _q_tokens(dict(rec))
        for v in rec.values():
            if (n := where(v)) is not None:
                out |= _q_tokens(dict(tables[n][v]))
        return out

    said = [w for w in words if _distinctive(w)]
    amounts = [w for m in re.findall(r"\d+[.,]\d+", question) for w in _q_tokens(m)]
    for v in arguments.values():
        name = where(v)
        if name is None:
            continue
        tab = tables[name]
        own = tokens(tab[v]) | cues
        # a record with a price or amount: an amount the question gives must be one of its own
        priced = any(isinstance(x, float) for x in tab[v].values())
        if amounts and priced and not any(near(w, own) for w in amounts):
            return False
        others: set[str] = set()
        for k, rec in itertools.islice(tab.items(), 500):
            if k != v:
                others |= tokens(rec)
        if any(w in others and not near(w, own) for w in said):
            return False
    # a call to people by number or address: the question must not name another contact, and
    # whom it addresses ("... to Kevin?", "share ... with Kevin?") is one of them
    book = tables.get(CONTACTS_TABLE)
    if book:
        people = list(itertools.islice(book.values(), 500))
        ids: set[str] = set()
        for v in arguments.values():
            for ref in v if isinstance(v, (list, tuple)) else (v,):
                if isinstance(ref, str) and ("@" in ref or sum(ch.isdigit() for ch in ref) >= 7):
                    got = contact_ids(ref, people)
                    ids |= got if len(got) == 1 else set()
        if ids:
            names = {t for c in people if c.get("id") in ids for t in _q_tokens(str(c.get("name") or ""))}
            own = {t for c in people if c.get("id") in ids for t in _q_tokens(dict(c))} | cues
            others = {t for c in people if c.get("id") not in ids for t in _q_tokens(str(c.get("name") or ""))}
            if any(w in others and not near(w, own) for w in said):
                return False
            unquoted = _QUOTED.sub(" ", question.lower())
            addressed = {w for m in _ADDRESSEE.finditer(unquoted) for w in m.groups() if w}
            if any(w in others and w not in names for w in addressed):
                return False
    # an amount the question gives is one the call carries (in its text or arguments), when it carries any
    carried = {w for w in _q_tokens(dict(arguments)) if re.fullmatch(r"\d+[.,]\d+", w)}
    return not (amounts and carried and not any(w in carried for w in amounts))


def _behavior_ok(
    crit: BehaviorCriterion,
    calls: Sequence[CallRecord],
    frames: Sequence[Frame],
    ctx: Context,
    tables: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> tuple[bool, str]:
    if crit.rule == "delegated":
        return _delegated_ok(crit, calls, frames, ctx)
    if crit.depth is not None:
        depth_of = {f.id: f.depth for f in frames}
        calls = [c for c in calls if depth_of.get(c.frame, 0 if c.frame == ROOT else -1) == crit.depth]

    def hit(c: CallRecord) -> bool:
        return _tool_hit(crit.tool, c.name) and match(c.arguments, crit.arguments, ctx)

    if crit.rule == "required_call":
        return any(c.ok and hit(c) for c in calls), f"no successful call of {crit.tool} matching {crit.arguments}"
    if crit.rule == "forbidden_call":
        return not any(hit(c) for c in calls), f"{crit.tool} was called"
    if crit.rule == "confirm_before":
        asked: CallRecord | None = None
        for c in calls:
            if c.name == "user.confirm" and c.ok:
                asked = c if c.confirmed else None
            elif c.ok and hit(c):
                if asked is None:
                    return False, f"{crit.tool} ran without a confirmation from the user first"
                if not asks_about(str(asked.arguments.get("question", "")), c.name, c.arguments, tables):
                    question = asked.arguments.get("question")
                    return False, f"{crit.tool} ran after a confirmation about something else ({question!r})"
                asked = None
        return True, ""
    if crit.rule == "before":
        for c in calls:
            if c.ok and hit(c):
                return True, ""
            if c.ok and _tool_hit(crit.then, c.name):
                return False, f"{crit.then} ran before a successful call of {crit.tool} matching {crit.arguments}"
        return True, ""
    if crit.rule == "step_up":
        stepped = False
        for c in calls:
            if not c.ok:
                continue
            if any(_tool_hit(v, c.name) for v in crit.via or STEP_UP_TOOLS):
                stepped = True
            elif hit(c) if crit.tool is not None else c.effect is Effect.SENSITIVE:
                if not stepped:
                    return False, f"{c.name} ran without a step-up ({', '.join(crit.via or STEP_UP_TOOLS)}) first"
                stepped = False
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
    raise ValueError(f"unknown behavior rule {crit.rule!r}")


def evaluate(
    crit: Criterion,
    changes: Sequence[Change],
    after: Mapping[str, Mapping[str, Any]],
    calls: Sequence[CallRecord],
    answer: str | None,
    frames: Sequence[Frame] = (),
    *,
    answer_value: Any = None,
    ctx: Context | None = None,
    judge: Judge | None = None,
    readers: frozenset[str] | None = None,
    before: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[CriterionResult, list[Change]]:
    """Evaluate one criterion; returns its result and the changes it accounts for. ``frames``
    is the episode's frame tree (needed by ``delegated`` and ``depth``-scoped rules);
    ``answer_value`` the ``finish`` call's typed value; ``ctx`` the contacts and clock that
    identity, fact and relative-date checks read (default: the contacts of ``after``);
    ``judge`` an optional LLM judge for answer criteria with a rubric (its reason is kept in
    the result, pass or fail); ``readers`` the answer types the value is for (see
    :func:`value_types`; None: every typed answer criterion)."""
    ctx = ctx if ctx is not None else context_of(after)
    matched: list[Change] = []
    if isinstance(crit, CompositeCriterion):
        kw = {"answer_value": answer_value, "ctx": ctx, "judge": judge, "readers": readers, "before": before}
        parts = [evaluate(c, changes, after, calls, answer, frames, **kw) for c in crit.criteria]
        held = [res.passed for res, _ in parts]
        if crit.kind == "not":
            ok = not held[0]
            why = f"{crit.criteria[0].id or crit.criteria[0].kind} holds, and must not"
        else:
            ok = all(held) if crit.kind == "all_of" else any(held)
            why = "; ".join(f"{res.id}: {res.reason}" for res, _ in parts if not res.passed)
            matched = [ch for res, found in parts if res.passed for ch in found]
        if not ok:
            matched = []
    elif isinstance(crit, StateCriterion):
        n, matched = _state_matches(crit, changes, after, ctx)
        ok, why = _count_ok(crit, n)
    elif isinstance(crit, AnswerCriterion):
        value = None if readers is not None and _answer_type(crit) not in readers else answer_value
        ok, why = _answer_ok(crit, answer, value, ctx, judge)
        if ok and why.startswith("judge"):
            return CriterionResult(id=crit.id, kind=crit.kind, passed=True, reason=why), matched
    else:
        ok, why = _behavior_ok(crit, calls, frames, ctx, before)  # the records as the question saw them
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
    frames: Sequence[Frame] = (),
    implied: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    answer_value: Any = None,
    now: str | None = None,
    judge: Judge | None = None,
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
        frames: the frame tree (:class:`~phoneenv.contract.Frame`); the root alone when empty.
        implied: records that exist by default while no record is stored (``{"app.table": {id:
            record}}``, see ``Backend.implied_records``): they are part of both states, so a
            setting switched off and on again is no change, and its first write an update.
        answer_value: the ``finish`` call's typed value (any JSON value), kept in the verdict.
        now: the phone's local clock (``YYYY-MM-DDTHH:MM:SS``), for relative dates in answers.
        judge: an LLM judge ``judge(rubric, answer, value) -> bool | (bool, reason)`` for answer
            criteria with a ``judge`` rubric; None (the default) skips those rubrics.

    Beside the task's criteria, every verdict carries the undone guard for a task that changes
    the phone (:func:`phoneenv.tasks.undone.undone_criterion`: the answer must not report the
    change undone) and the ``grounded`` criterion (:func:`grounded`), whatever built the task.

    Success = all criteria pass, no collateral change, and the episode was not truncated.
    Progress = (milestones met + success) / (milestones + 1): success itself is the last
    milestone, so a failed episode stays below 1.0 however many milestones it met (1.0 on
    success; 0.0 or 1.0 when there are no milestones). Milestones measure progress only: the
    changes they match are not thereby allowed.
    """
    changes, before, after = episode_changes(before, after, transient=transient, implied=implied)
    ctx = context_of(after, before, now)
    readers = value_types([*task.criteria, *task.milestones], answer_value, ctx)
    results: list[CriterionResult] = []
    expected: set[tuple[str, str]] = set()
    seen: dict[str, int] = {}

    def judged(crit: Criterion) -> tuple[CriterionResult, list[Change]]:
        return evaluate(
            crit,
            changes,
            after,
            calls,
            answer,
            frames,
            answer_value=answer_value,
            ctx=ctx,
            judge=judge,
            readers=readers,
            before=before,
        )

    for crit in task.criteria:
        res, matched = judged(crit)
        n = seen[res.id] = seen.get(res.id, 0) + 1
        if n > 1:  # keep ids unique within a verdict: "created:messages.messages#2"
            res.id = f"{res.id}#{n}"
        results.append(res)
        expected.update((c.table, c.id) for c in matched)
    if guard := undone_criterion(task, [c for c in calls if c.ok and c.name != "finish"]):
        results.append(judged(guard)[0])
    results.append(grounded(task, before, changes, calls, answer, ctx))
    met = 0
    for crit in task.milestones:
        met += judged(crit)[0].passed
    allowed = (*task.allowed_changes, *DEFAULT_ALLOWED)
    set_by = {k for c in calls if c.ok and c.name != "finish" for k in c.arguments}
    collateral = []
    for ch in changes:
        rec = ch.new if ch.new is not None else ch.old
        if any(sel.table == ch.table and match(rec or {}, sel.where, ctx) for sel in allowed):
            continue
        if (ch.table, ch.id) in expected:
            stray = _unrequested_fields(ch, task.criteria, ctx, set_by)
            if stray:
                collateral.append(f"{ch.table}/{ch.id} updated {', '.join(stray)} (not asked for)")
            continue
        collateral.append(f"{ch.table}/{ch.id} {ch.kind}")
    success = all(r.passed for r in results) and not collateral and not truncated
    total = len(task.milestones)
    progress = 1.0 if success else met / (total + 1)
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
        answer_value=_jsonable(answer_value),
        inconsistent=bool(inconsistencies),
        inconsistencies=list(inconsistencies),
    )


GROUNDED = "grounded"
"""The id of the criterion every verdict carries for what the planner told (see :func:`grounded`)."""

_WORLD_CACHE: dict[tuple[Any, ...], tuple[TaskSpec, WorldGrounds]] = {}


def episode_grounds(
    task: TaskSpec,
    before: Mapping[str, Mapping[str, Any]],
    changes: Sequence[Change],
    calls: Sequence[CallRecord],
    ctx: Context,
) -> tuple[Grounds, list[tuple[str, str]]]:
    """The :class:`~phoneenv.tasks.grounding.Grounds` of an episode of ``task`` and the texts
    the planner wrote (``(source, text)``): the goal, memory and the task's expected answers,
    the ``changes``, the ``calls``' results, and the fixture records (``before``) of the apps
    the calls used (read once per task and cached)."""
    apps = tuple(sorted({c.name.split(".")[0] for c in calls} | {"contacts"}))
    key = (id(task), apps, ctx.now[:10] if ctx.now else None, tuple(len(v) for v in before.values()))
    hit = _WORLD_CACHE.get(key)
    if hit is not None and hit[0] is task:
        world = hit[1]
    else:
        records = (r for name, tab in before.items() if name.split(".")[0] in apps for r in tab.values())
        world = world_grounds(records, ctx)
        if len(_WORLD_CACHE) >= 256:
            _WORLD_CACHE.pop(next(iter(_WORLD_CACHE)))
        _WORLD_CACHE[key] = (task, world)
    memory = [m.model_dump(mode="json") if hasattr(m, "model_dump") else m for m in task.fixtures.memory or ()]
    return grounds(
        goal=task.goal,
        calls=calls,
        changed=changes,
        memory=memory,
        world=world,
        ctx=ctx,
        zone=task.fixtures.timezone,
        expected=list(criterion_facts(task.criteria)),
    )


def grounded(
    task: TaskSpec,
    before: Mapping[str, Mapping[str, Any]],
    changes: Sequence[Change],
    calls: Sequence[CallRecord],
    answer: str | None,
    ctx: Context,
) -> CriterionResult:
    """The ``grounded`` criterion of an episode: every typed claim of the final answer and of
    the texts the planner wrote agrees with the world it could see (the goal, the records it
    changed, what its calls returned, the fixtures of the apps it used, memory, the clock);
    see :mod:`phoneenv.tasks.grounding`. Claim types in ``task.grounding_exempt`` are not
    checked. Its reason names each ungrounded claim, the text it came from and what the world
    holds instead."""
    bad: list[Ungrounded] = []
    types = tuple(t for t in GROUNDED_TYPES if t not in task.grounding_exempt)
    if types and (answer or any(True for _ in authored_texts(calls))):
        g, texts = episode_grounds(task, before, changes, calls, ctx)
        bad = check_told(g, answer, texts, ctx, types)
    return CriterionResult(
        id=GROUNDED, kind="answer", passed=not bad, reason="; ".join(dict.fromkeys(u.reason() for u in bad))
    )


def episode_changes(
    before: Mapping[str, Mapping[str, Any]],
    after: Mapping[str, Mapping[str, Any]],
    *,
    transient: Sequence[str] = (),
    implied: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> tuple[list[Change], Mapping[str, Mapping[str, Any]], Mapping[str, Mapping[str, Any]]]:
    """The changes from ``before`` to ``after`` (transient tables left out, implied records part
    of both: see :func:`verify`), and the two states with the implied records."""
    if implied:
        before, after = _with_implied(before, implied), _with_implied(after, implied)
    return diff_tables(before, after, ignore=transient), before, after


def criterion_facts(criteria: Sequence[Criterion]) -> list[Any]:
    """The facts a task's answer criteria assert about its world, as JSON evidence for
    :func:`grounded`: each typed answer's expected value (a time, a date, an amount with its
    currency), and the phrases ``equals``, ``contains`` and a literal ``pattern`` require. A
    hand-written task whose fixtures leave the answer implicit still grounds its right answer."""
    out: list[Any] = []
    for c in criteria:
        if isinstance(c, CompositeCriterion) and c.kind != "not":
            out.extend(criterion_facts(c.criteria))
        elif isinstance(c, AnswerCriterion):
            for v in (c.value,):  # not its context: another role (an end time) may not stand for it
                if c.type == "money" and isinstance(v, (int, float)):
                    out.append({"amount": v, "currency": c.currency or ""})
                elif c.type in ("time", "date") and isinstance(v, str):
                    out.append(v)
            out.extend(x for x in (c.equals, *c.contains) if isinstance(x, str))
            if c.pattern and not re.search(r"[\[\](){}|*+?^$]", c.pattern.replace("\\+", "")):
                out.append(re.sub(r"\\(.)", r"\1", c.pattern))  # a pattern that is literal text
    return out


def _state_criteria(criteria: Sequence[Criterion]) -> list[StateCriterion]:
    """The state criteria of ``criteria`` that ask for something, composites opened (not those
    under ``not``: a record a task forbids names no field it asks for)."""
    out: list[StateCriterion] = []
    for crit in criteria:
        if isinstance(crit, StateCriterion):
            out.append(crit)
        elif isinstance(crit, CompositeCriterion) and crit.kind != "not":
            out.extend(_state_criteria(crit.criteria))
    return out


def _unrequested_fields(
    ch: Change, criteria: Sequence[Criterion], ctx: Context, set_by: set[str] | frozenset[str]
) -> list[str]:
    """The fields of an expected update that the agent set without being asked: those changed
    from ``ch.old`` to ``ch.new``, named by an argument of one of the episode's successful calls
    (``set_by``), and outside the ``where`` of every state criterion on the table that the new
    record matches. Fields the app changes by itself as a consequence (a timestamp, a refund,
    what plays next) are named by no call and never count. A criterion naming no field but
    ``id`` asks for any change (none then). Created and deleted records have none: a new
    record's other fields are the agent's to choose."""
    if ch.kind != "updated" or ch.old is None or ch.new is None:
        return []
    asked: set[str] = set()
    for crit in _state_criteria(criteria):
        if crit.table == ch.table and crit.change in ("updated", "present") and match(ch.new, crit.where, ctx):
            if not set(crit.where) - {"id"}:
                return []
            asked.update(crit.where)
    if not asked:
        return []
    return sorted(k for k in {**ch.old, **ch.new} if k in set_by and k not in asked and ch.old.get(k) != ch.new.get(k))


def _with_implied(
    tables: Mapping[str, Mapping[str, Any]], implied: Mapping[str, Mapping[str, Mapping[str, Any]]]
) -> dict[str, Mapping[str, Any]]:
    out = dict(tables)
    for table, records in implied.items():
        stored = tables.get(table, {})
        missing = {rid: rec for rid, rec in records.items() if rid not in stored}
        if missing:
            out[table] = {**missing, **stored}
    return out


def calls_from_trace(trace: Trace, effects: Mapping[str, Effect] | None = None) -> list[CallRecord]:
    """The :class:`CallRecord` of each parsed step of ``trace``, with its frame.

    A trace stores no tool effects: pass ``effects`` (tool name → :class:`Effect`, e.g. from
    ``{s.name: s.effect for s in env.tool_specs}``) for rules that need them (``read_only``);
    unknown names get None. ``confirmed`` is read from ``user.confirm``'s result.
    """
    effects = effects or {}
    out = []
    for step in trace.steps:
        if step.action is None:
            continue
        name = step.action.name
        out.append(
            CallRecord(
                name,
                step.action.arguments,
                step.feedback,
                effects.get(name),
                confirmed_by(name, step.feedback),
                step.frame,
            )
        )
    return out


def confirmed_by(name: str, feedback: Feedback) -> bool:
    """Whether a call of ``name`` that got ``feedback`` is the user's confirmation: a
    successful ``user.confirm`` whose result says ``confirmed: true``."""
    return (
        name == "user.confirm"
        and feedback.ok
        and isinstance(feedback.result, Mapping)
        and feedback.result.get("confirmed") is True
    )


def check_trace(
    trace: Trace,
    criteria: Sequence[Criterion],
    effects: Mapping[str, Effect] | None = None,
    *,
    contacts: Sequence[Mapping[str, Any]] = (),
    now: str | None = None,
    judge: Judge | None = None,
) -> list[CriterionResult]:
    """Evaluate behaviour and answer criteria on a stored ``trace`` (its calls, frame tree and
    the verdict's answer and typed value, else those of the root frame's ``finish`` call).

    ``contacts`` (contact records) and ``now`` (the phone's clock; default: the clock of the
    trace's ``finish`` step) serve identity operators and relative dates, which a trace alone
    cannot resolve. Raises ``ValueError`` for a state criterion: a trace holds no end state.
    """
    calls = calls_from_trace(trace, effects)
    answer = trace.verdict.answer if trace.verdict is not None else None
    value = trace.verdict.answer_value if trace.verdict is not None else None
    root_finish = [s for s in trace.steps if s.action is not None and s.action.name == "finish" and s.frame == ROOT]
    last = root_finish[-1] if root_finish and root_finish[-1].feedback.ok else None
    if last is not None and last.action is not None:
        if answer is None:
            answer = last.action.arguments.get("answer")
        if value is None:
            value = last.action.arguments.get("value")
        if now is None:
            now = last.clock
    ctx = Context(contacts=tuple(contacts), now=now)
    readers = value_types(criteria, value, ctx)
    out = []
    for crit in criteria:
        if isinstance(crit, StateCriterion):
            raise ValueError(f"criterion {crit.id or crit.table!r} is a state criterion; a trace holds no end state")
        res, _ = evaluate(
            crit, (), {}, calls, answer, trace.frames, answer_value=value, ctx=ctx, judge=judge, readers=readers
        )
        out.append(res)
    return out
