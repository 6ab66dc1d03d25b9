"""Task templates: functions from a seeded :class:`~phoneenv.tasks.world.World` to a :class:`Draft`.

    @template("clock.what_time", apps=["clock"], domain=Domain.TIME, capabilities=["lookup"])
    def what_time(w: World) -> Draft:
        ...

Each template yields ``count`` tasks with ids ``<name>/<k>``; task ``k`` uses the world of seed
``crc32(name) * 1000 + k``, so ids and contents are stable across processes and Python versions.
The modules of this package (the suites that span apps: cross-app, memory, skills, sub-agent,
hybrid...) and the ``templates`` module of every app folder (``apps/clock/templates.py``, also
those on ``PHONEENV_APPS_PATH``: :func:`apps.template_modules`) are imported by :func:`all_templates`.
"""

from __future__ import annotations

import datetime as dt
import importlib
import pkgutil
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import phonenumbers

from phoneenv.contract import (
    AnswerCriterion,
    BehaviorCriterion,
    Category,
    ChangeSelector,
    Criterion,
    Domain,
    Fixtures,
    Probe,
    StateCriterion,
    TaskSpec,
    ToolCall,
)
from phoneenv.tasks.schemas import check_fixtures
from phoneenv.tasks.undone import not_reported_undone
from phoneenv.tasks.world import World

__all__ = [
    "CANCELLED",
    "NOT_CANCELLED",
    "Draft",
    "Template",
    "all_templates",
    "answer",
    "answer_if_said",
    "answer_time_if_said",
    "ask_first",
    "behavior",
    "call",
    "confirm_variant",
    "dictated",
    "fails",
    "finishing",
    "first_name",
    "named",
    "namesake",
    "national",
    "not_reported_undone",
    "passes",
    "pick",
    "plain_texts_to",
    "replacing",
    "said_probes",
    "state",
    "suffixed",
    "template",
]


@dataclass
class Draft:
    """What a template returns for one world: the goal, how to verify it, and a reference plan.

    ``plan`` must end with a ``finish`` call. ``fixtures`` defaults to ``world.fixtures()``;
    ``backends`` to ``["sandbox"]`` (tasks that need simulated apps say ``["hybrid"]``).
    ``probes`` are alternative plans and the verdict each must get (:func:`passes`, :func:`fails`).
    """

    goal: str
    criteria: list[Criterion]
    plan: list[ToolCall]
    milestones: list[Criterion] = field(default_factory=list)
    allowed_changes: list[ChangeSelector] = field(default_factory=list)
    fixtures: Fixtures | None = None
    perturb_exempt: list[str] = field(default_factory=list)
    max_steps: int | None = None
    backends: list[str] | None = None
    probes: list[Probe] = field(default_factory=list)


@dataclass(frozen=True)
class Template:
    """A registered template: metadata plus the ``build(world) -> Draft`` function."""

    name: str
    build: Callable[[World], Draft]
    apps: tuple[str, ...]
    domain: Domain
    category: Category
    difficulty: int
    capabilities: tuple[str, ...]
    count: int
    max_steps: int

    def seed(self, k: int) -> int:
        """The world seed of this template's task ``k``."""
        return zlib.crc32(self.name.encode()) * 1000 + k

    def task(self, k: int) -> TaskSpec:
        """Build task ``k`` (``0 <= k < count``). Raises ``ValueError`` for a malformed draft or
        a seeded record that breaks its app's record schema (:func:`check_fixtures`)."""
        seed = self.seed(k)
        world = World(seed)
        world.index = k
        draft = self.build(world)
        if not draft.plan or draft.plan[-1].name != "finish":
            raise ValueError(f"template {self.name}: the reference plan must end with finish")
        for p in draft.probes:
            if p.plan[-1].name != "finish":
                raise ValueError(f"template {self.name}: probe {p.name!r} must end with finish")
        criteria, probes = list(draft.criteria), list(draft.probes)
        task = TaskSpec(
            id=f"{self.name}/{k}",
            category=self.category,
            domain=self.domain,
            goal=draft.goal,
            fixtures=draft.fixtures or world.fixtures(),
            criteria=criteria,
            milestones=draft.milestones,
            allowed_changes=draft.allowed_changes,
            max_steps=draft.max_steps or self.max_steps,
            difficulty=self.difficulty,
            source="template",
            template=self.name,
            seed=seed,
            capabilities=list(self.capabilities),
            apps=list(self.apps),
            reference_plan=draft.plan,
            perturb_exempt=draft.perturb_exempt,
            probes=probes,
            backends=draft.backends or ["sandbox"],
        )
        check_fixtures(task)
        return task

    def tasks(self) -> list[TaskSpec]:
        """All ``count`` tasks of this template."""
        return [self.task(k) for k in range(self.count)]


_REGISTRY: dict[str, Template] = {}


def template(
    name: str,
    *,
    apps: list[str],
    domain: Domain | str,
    category: Category | str = Category.TOOL,
    difficulty: int = 1,
    capabilities: list[str] | None = None,
    count: int = 8,
    max_steps: int = 20,
) -> Callable[[Callable[[World], Draft]], Callable[[World], Draft]]:
    """Register a template function under ``name`` (``<area>.<what>``).

    Raises ``ValueError`` on a duplicate name.
    """

    def register(fn: Callable[[World], Draft]) -> Callable[[World], Draft]:
        if name in _REGISTRY:
            raise ValueError(f"duplicate template {name!r}")
        _REGISTRY[name] = Template(
            name,
            fn,
            tuple(apps),
            Domain(domain),
            Category(category),
            difficulty,
            tuple(capabilities or ()),
            count,
            max_steps,
        )
        return fn

    return register


def all_templates() -> dict[str, Template]:
    """Every registered template, sorted by name: imports this package's modules and the app
    folders' templates modules (:func:`apps.template_modules`) once each."""
    import apps

    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{mod.name}")
    for name in apps.template_modules():
        importlib.import_module(name)
    return dict(sorted(_REGISTRY.items()))


# -- small constructors that keep templates short ------------------------------------------------


def call(tool: str, /, **arguments: Any) -> ToolCall:
    """A reference-plan step: ``call("contacts.create", name="Ana", phone="+49...")``."""
    return ToolCall(name=tool, arguments=arguments)


def state(table: str, change: str = "present", /, *, count: int | None = None, **where: Any) -> StateCriterion:
    """A state criterion on ``table``; keyword arguments are the ``where`` clause (``id=`` included).
    ``count=1`` by default for created/updated/deleted."""
    if count is None and change in ("created", "updated", "deleted"):
        count = 1
    return StateCriterion(id=f"{change}:{table}", table=table, change=change, where=where, count=count)  # type: ignore[arg-type]


def answer(id: str = "answer", type: str | None = None, value: Any = None, **kw: Any) -> AnswerCriterion:
    """An answer criterion: text checks (``equals=``, ``contains=[...]``, ``pattern=``) and/or a
    typed check (``type=`` one of :data:`phoneenv.tasks.answers.ANSWER_TYPES` with the expected
    ``value=``: ``answer(type="time", value="16:00")``, ``answer(type="contacts", value=["c_1",
    "c_2"])``, ``answer(type="number", value=3, unit="message")``), ``tolerance=``, ``unit=``,
    ``currency=``, ``judge=`` (an LLM rubric beside a deterministic check). ``number=`` is the
    older spelling of ``type="number", value=...``.

    Raises ``pydantic.ValidationError`` for a type without a value (or a value without a type)."""
    return AnswerCriterion(id=id, type=type, value=value, **kw)


def answer_time_if_said(hhmm: str, id: str = "answer_time", also: Sequence[str] = ()) -> AnswerCriterion:
    """The final answer need not give a time, but a time it gives must be ``hhmm`` (and that one
    alone): for tasks whose goal reports a time to someone else, where a wrong time told to the
    user is as wrong as one texted. ``also``: other times of the task the answer may give, beside
    ``hhmm`` or alone (a train's departure beside its arrival). See :func:`answer_if_said`."""
    return answer_if_said("time", hhmm, id=id, also=also)


def answer_if_said(type: str, value: Any, id: str = "", also: Sequence[Any] = (), **kw: Any) -> AnswerCriterion:
    """The final answer need not state a value of ``type``, but one it states must be ``value``
    (alone, not hedged) or one of ``also`` (other values of the task it may mention: the meeting's
    time beside the alarm's): ``AnswerCriterion.optional``. ``kw``: ``unit``, ``currency``,
    ``tolerance``. The id defaults to ``answer_<type>``."""
    return answer(id=id or f"answer_{type}", type=type, value=value, context=list(also), optional=True, **kw)


def confirm_variant(w: World, p: float) -> bool:
    """Draw (seeded) whether this world's user wants sensitive calls confirmed first; sets
    ``w.confirm_sensitive`` and returns it."""
    w.confirm_sensitive = w.rng.random() < p
    return w.confirm_sensitive


def ask_first(
    plan: list[ToolCall],
    criteria: list[Criterion],
    tool: str,
    question: str,
    milestones: list[Criterion] | None = None,
) -> None:
    """Add the confirmation a sensitive ``tool`` needs: a ``user.confirm`` step to ``plan``, a
    ``confirm_before`` criterion to ``criteria`` and, when given, a milestone requiring it."""
    plan.append(call("user.confirm", question=question))
    criteria.append(behavior("confirm_before", tool))
    if milestones is not None:
        milestones.append(behavior("required_call", "user.confirm"))


def behavior(rule: str, tool: str | None = None, *, id: str = "", **kw: Any) -> BehaviorCriterion:
    """A behaviour criterion (``required_call``, ``forbidden_call``, ``confirm_before``, ...)."""
    return BehaviorCriterion(id=id or f"{rule}:{tool or ''}", rule=rule, tool=tool, **kw)  # type: ignore[arg-type]


NOT_CANCELLED = (
    r"(?:\bnot\b|n't\b|\bcannot\b|\bunable\b|\bfailed\b)\W+(?:(?:be|been|able|to|get|manage|yet)\W+){0,3}cancel"
    r"|\bstill\s+on\b|\bwouldn't\s+let\s+me\b|\bdid(?:n't| not)\s+go\s+through\b|\bit\s+failed\b"
    r"|\b(?:tried|trying|try|going|want|wanted|plan|planning|about|will|i'll)\s+(?:to\s+)?cancel\b"
    r"|\b(?:need|needs|have|has|got|must|should)\s+(?:to\s+)?cancel\b"
    r"|\bcould(?:n't| not)\s+find\b|\bcancel(?!l?ed\b)\w*[^.!?]*\?"
    r"|(?:^|[.!?]\s+)(?:is|was|has|have|did)\b[^.!?]*\bcancell?ed\b[^.!?]*\?"
)
"""A text that says the booking or order was not cancelled ("couldn't cancel it", "don't
cancel", "dinner is still on", "the shop wouldn't let me", "it didn't go through"), or not yet
("I'm going to cancel it", "I still need to cancel it", "Should I cancel it?", "Is it
cancelled?"); a question after the cancellation is reported is none ("I cancelled our table,
want to pick another night?")."""

CANCELLED = (
    r"\bcancell?ed\b|\bwithdr[ae]wn?\b|\bcalled\s+off\b"
    r"|\bcancellation\s+(?:is\s+|was\s+|has\s+been\s+)?(?:confirmed|done|complete)"
)
"""A text that says a cancellation is done ("I cancelled it", "it's been canceled", "I withdrew
the request", "cancellation confirmed"): "cancel" alone may be a plan or a question."""


def plain_texts_to(*contacts: dict[str, Any]) -> list[ChangeSelector]:
    """Allowed changes: texts without attachments to ``contacts`` (a greeting, a note beside the
    photos a task sends them). Not collateral damage; not required either. The photos themselves
    are checked by the task's criteria, whatever texts go with them."""
    return [
        ChangeSelector(
            table="messages.messages",
            where={"number": {"person": c["id"]}, "direction": "out", "attachments": {"in": [None, []]}},
        )
        for c in contacts
    ]


def dictated(text: str, day: dt.date | None = None) -> dict[str, Any]:
    """A body predicate for a text the user dictated ('Text Sam: "..."'): the body is the text
    (``{"dictates": text}``, :func:`phoneenv.tasks.predicates.dictates`): its words in order,
    case, punctuation, contractions, abbreviations, word forms and number words aside, wrapped in
    a greeting, thanks or a sign-off at most ("Hi Sam, ... See you!"). A paraphrase, a part of
    it, the text denied, or a fact or commitment added to it ("... Unfortunately I can't make
    Saturday though") fails. With ``day`` (for a dictated text about "tonight" or "today" whose
    required part leaves the day out), the body names no other day ("Dinner is at 8 tomorrow"
    fails)."""
    return {"dictates": text} | ({"consistent": {"date": day.isoformat()}} if day is not None else {})


# -- verdict probes ------------------------------------------------------------------------------


def passes(name: str, plan: list[ToolCall]) -> Probe:
    """A probe that must succeed: another right way to do the task (another channel, an
    equivalent existing record, the answer in other words)."""
    return Probe(name=name, expect="pass", plan=plan)


def fails(name: str, plan: list[ToolCall]) -> Probe:
    """A probe that must not succeed: a near miss (a hedge, contradicting content, a stray
    record, the wrong person)."""
    return Probe(name=name, expect="fail", plan=plan)


def said_probes(plan: list[ToolCall], index: int, to: str, same: str, otherwise: str) -> list[Probe]:
    """Two probes for the text sent at step ``index`` to the number ``to``, which must say
    something: ``same`` (the same content in the agent's own words) passes, ``otherwise`` (a near
    miss that says something else) fails."""
    return [
        passes("the text in the agent's own words", replacing(plan, index, call("messages.send", to=to, body=same))),
        fails("a text that says otherwise", replacing(plan, index, call("messages.send", to=to, body=otherwise))),
    ]


def finishing(plan: list[ToolCall], answer: str | None = None, **typed: Any) -> list[ToolCall]:
    """``plan`` with its final ``finish`` replaced by one with ``answer`` (and ``value=`` when
    given): ``finishing(plan, "It's three")``."""
    if not plan or plan[-1].name != "finish":
        raise ValueError("the plan must end with finish")
    return [*plan[:-1], call("finish", answer=answer, **typed)]


def replacing(plan: list[ToolCall], index: int, *steps: ToolCall) -> list[ToolCall]:
    """``plan`` with step ``index`` replaced by ``steps`` (none: the step dropped; the step
    itself among them: steps added around it). Negative indices count from the end."""
    i = index % len(plan)
    return [*plan[:i], *steps, *plan[i + 1 :]]


# -- wording and people shared by templates ------------------------------------------------------


def pick(w: World, *options: list[Any]) -> tuple[Any, ...]:
    """The ``k``-th combination of ``options`` for task ``k`` of a template (``w.index``):
    distinct tasks get distinct combinations (wordings, values) while there are enough."""
    k, out = w.index, []
    for opts in options:
        out.append(opts[k % len(opts)])
        k //= len(opts)
    return tuple(out)


def national(phone: str) -> str:
    """``phone`` as dialled at home (``+4915112345678`` → ``0151 12345678``): the same line in
    another format (libphonenumber's NATIONAL format, brackets dropped)."""
    text = phonenumbers.format_number(phonenumbers.parse(phone), phonenumbers.PhoneNumberFormat.NATIONAL)
    return re.sub(r"[()]", "", text).strip()


def namesake(w: World, c: dict[str, Any], *, email: bool = True) -> dict[str, Any]:
    """Add to ``w`` and return a contact who shares ``c``'s last name (a near miss for the
    wrong person), with an e-mail address unless ``email`` is False."""
    first = w.new_name().split()[0]
    last = c["name"].split()[-1]
    rec = {
        "id": f"c_{len(w.contacts) + 1}",
        "name": f"{first} {last}",
        "phone": w.phone_number("mobile"),
        "email": f"{first.lower()}.{last.lower()}@example.com" if email else None,
        "relation": None,
        "favorite": False,
        "birthday": None,
    }
    w.table("contacts.contacts").append(rec)
    return rec


def first_name(c: dict[str, Any]) -> str:
    """A contact's first name, as the user calls them: ``"Ana Lima"`` → ``"Ana"``."""
    return c["name"].split()[0]


def named(crit: Criterion, id: str) -> Criterion:
    """``crit`` with its id set to ``id`` (several criteria on one table need distinct ids in
    a verdict); returns the same object."""
    crit.id = id
    return crit


def suffixed(crit: Criterion, suffix: str) -> Criterion:
    """``crit`` with ``:suffix`` added to its id (several criteria on one table stay apart)."""
    return named(crit, f"{crit.id}:{suffix}")
