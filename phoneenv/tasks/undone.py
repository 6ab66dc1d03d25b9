"""The undone guard: a task that changes the phone fails when the final answer tells the user the
change did not happen ("Sorry, I couldn't send it") although it did. A misreport is as wrong as
the wrong action: the user acts on what they are told.

Every task gets the guard in its verdict (:func:`phoneenv.tasks.verify.verify` adds
:func:`undone_criterion`), whether a template built it or it was written by hand, unless its
criteria already carry one (an id starting ``not_reported_undone``). The verbs it listens for are
the action verbs of the task's reference plan (:data:`ACTION_VERBS`), or, for a task without one,
of the calls the episode made.

    >>> import re
    >>> bool(re.search(undone_pattern(["send", "text"]), "Sorry, I couldn't send it.", re.I))
    True
    >>> bool(re.search(undone_pattern(["send", "text"]), "I didn't need to send it again.", re.I))
    False
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from phoneenv.contract import AnswerCriterion, CompositeCriterion, Criterion, StateCriterion, TaskSpec

__all__ = [
    "ACTION_VERBS",
    "UNDONE",
    "action_verbs",
    "changes_phone",
    "not_reported_undone",
    "undone_answer",
    "undone_criterion",
    "undone_pattern",
]

UNDONE = "not_reported_undone"
"""The id of the guard's criterion (and the prefix that marks a task's own guard)."""


def not_reported_undone(*verbs: str, id: str = UNDONE) -> CompositeCriterion:
    """The final answer does not tell the user the action failed or did not happen ("Couldn't pay
    Clive", "I didn't send it", "unable to transfer"), where it did: a misreport is as wrong as
    the wrong action. ``verbs``: the action's verbs as a regex alternation's parts ("pay", "send").
    Not a report of the action undone: "I didn't need to add it again", "didn't change anything
    else". Every task that changes the phone gets one in its verdict (:func:`undone_criterion`)."""
    return CompositeCriterion(
        kind="not", id=id, criteria=[AnswerCriterion(id=f"{id}:said", pattern=undone_pattern(verbs))]
    )


_IRREGULAR = {"send": "sent", "pay": "paid", "make": "made", "ring": "rung", "buy": "bought", "write": "written",
              "tell": "told", "forget": "forgotten", "begin": "begun", "put": "put", "set": "set", "split": "split"}  # fmt: skip
"""Past participles that are not the verb plus "-ed" ("it couldn't be sent")."""
_NOT = r"(?:n't|n’t|\s+not)"
_DELIBERATE = (
    r"(?![^.;!?\n]*\b(?:error|fail|crash|down|broke|wouldn|couldn|rejected|declined|unavailable|problem|issue)\w*)"
    r"(?=[^.;!?\n]*(?:\bbecause\b|\bsince\b|\bas\s+(?:the|you|your|per|requested|asked|instructed)\b|\bper\s+|"
    r"\bdue\s+to\b|\balready\b|\s[-–—:]\s))"
)
"""After "didn't": a clause that gives a reason for a choice ("I didn't order the curry because
you've gone vegetarian", "didn't reply to the no-reply sender, as the skill says", "didn't
reply to mail you had already read") rather than for a failure ("because the app crashed")."""


def undone_pattern(verbs: Sequence[str]) -> str:
    """The regex of :func:`not_reported_undone`: a failure or a denial up to two words before one
    of ``verbs`` (not through "need", "have", "want", "bother"), not followed by "anything",
    "else", "again" or "more"; the action in the passive ("it couldn't be sent", "wasn't paid",
    "hasn't been booked"; not in a relative clause, "the one that wasn't paid"); "didn't go
    through/out"; "was rejected/declined". A "didn't" whose
    clause gives the reason for a choice (:data:`_DELIBERATE`) reports a skip, not a failure."""
    action = "|".join(verbs)
    done = "|".join([*verbs, *(_IRREGULAR[v] for v in (x for vs in verbs for x in vs.split("|")) if v in _IRREGULAR)])
    tail = r"(?!\s+(?:anything|else|again|more|any\s+other|the\s+others?)\b)"
    return (
        rf"\b(?:could{_NOT}|can(?:'t|’t|not)|unable to|failed to|was{_NOT} able to|did{_NOT}(?!{_DELIBERATE}))"
        rf"\s+(?:(?!(?:need|needs|have|want|bother|mean)\b)\w+\s+){{0,2}}?(?:{action})\w*{tail}"
        rf"|(?<!\bthat\s)(?<!\bwhich\s)\b(?:could{_NOT}\s+be|can(?:'t|’t|not)\s+be|(?:was|were){_NOT}|(?:has|have){_NOT}\s+been)"
        rf"\s+(?:(?:yet|actually|successfully|properly)\s+)?(?:{done})\w*\b{tail}"
        rf"|\bdid{_NOT}\s+go\s+(?:through|out)\b|\b(?:was|were|got)\s+(?:rejected|declined)\b"
    )


ACTION_VERBS: dict[str, str] = {
    "send": "send|text|message|e-?mail|forward|reply|share",
    "create": "create|add|make|save|schedule|set|book",
    "add": "add|create|put|save|invite|include|set",
    "set": "set|create|add|schedule|turn",
    "book": "book|reserve",
    "delete": "delete|remove|clear|erase",
    "switch": "switch|turn|toggle|enable|disable",
    "call": "call|ring|phone",
    "update": "update|change|edit|move",
    "place": "place|order",
    "start": "start|set|begin",
    "mark": "mark|tick",
    "request": "request|ask for|send",
    "reply": "reply|respond|answer|send|write",
    "play": "play|start",
    "reserve": "reserve|book",
    "cancel": "cancel",
    "clear": "clear|delete|remove",
    "remind": "remind|set",
    "remove": "remove|delete",
    "pay": "pay|send|transfer",
    "tag": "tag|label",
    "block": "block",
    "append": "append|add",
    "save": "save|store|add|note",
    "share": "share|send",
    "checkout": "buy|order|purchase|check ?out|place",
    "split": "split|send|request",
    "notify": "notify|tell|text|send",
    "forget": "forget|delete|remove",
    "schedule": "schedule|set|book|arrange",
    "complete": "complete|tick|mark",
    "unlock": "unlock|open",
    "subscribe": "subscribe|follow",
    "move": "move|reschedule|change",
    "end": "end|stop|hang",
    "change": "change|update|set|move",
    "decline": "decline|reject|refuse",
    "reschedule": "reschedule|move|change",
    "archive": "archive",
    "forward": "forward|send|share",
    "revoke": "revoke|remove|disable|turn",
    "pin": "pin",
    "lock": "lock",
    "download": "download|save",
    "pickup": "schedule|book|arrange",
    "to": "convert|turn|make",
    "check": "check|tick|mark",
}
"""The verb a tool's name starts with (``wallet.pay_bill``: "pay") → the words a user reads for
that action in an answer (a regex alternation). Tools whose verb is absent read or ask."""


def changes_phone(criteria: Sequence[Criterion]) -> bool:
    """Whether ``criteria`` require a change to the phone or a record present (created, updated,
    deleted or kept); a criterion under ``not`` requires nothing."""
    for c in criteria:
        if isinstance(c, StateCriterion) and c.change in ("created", "updated", "deleted", "present"):
            return True
        if isinstance(c, CompositeCriterion) and c.kind != "not" and changes_phone(c.criteria):
            return True
    return False


def action_verbs(calls: Sequence[Any]) -> list[str]:
    """The :data:`ACTION_VERBS` keys that ``calls`` (each with a tool ``name``) start with, in order of first use
    (``wallet.pay_bill`` → ``"pay"``); reads and asks have none."""
    verbs: list[str] = []
    for step in calls:
        head = step.name.partition(".")[2].split("_")[0]
        if head in ACTION_VERBS and head not in verbs:
            verbs.append(head)
    return verbs


def undone_criterion(task: TaskSpec, calls: Sequence[Any] = ()) -> CompositeCriterion | None:
    """The guard of ``task``'s verdict: a :func:`not_reported_undone` over the action verbs of its
    reference plan (of ``calls``, the episode's successful calls, when it has none).

    None when the task's criteria change nothing (:func:`changes_phone`), already hold a guard
    (an id starting ``not_reported_undone``), no action verb is found, or the reference answer
    itself reports a failure (a task about something that could not be done)."""
    if any(c.id.startswith(UNDONE) for c in task.criteria) or not changes_phone(task.criteria):
        return None
    plan = task.reference_plan or []
    verbs = action_verbs(plan or calls)
    if not verbs:
        return None
    words = list(dict.fromkeys(w for v in verbs for w in ACTION_VERBS[v].split("|")))
    said = plan[-1].arguments.get("answer") if plan and plan[-1].name == "finish" else None
    if isinstance(said, str) and re.search(undone_pattern(words), said, re.I):
        return None
    return not_reported_undone(*words)


def undone_answer(task: TaskSpec) -> str | None:
    """An answer that reports ``task``'s first action undone ("Sorry, I couldn't send it."): a
    generated must-fail probe of every guarded task; None for a task without a guard."""
    guard = undone_criterion(task)
    if guard is None:
        return None
    first = ACTION_VERBS[action_verbs(task.reference_plan or [])[0]].split("|")[0].replace("?", "")
    return f"Sorry, I couldn't {first} it."
