"""The action–feedback–verification contract shared by every part of phoneenv.

Every type here is a pydantic v2 model that round-trips through JSON::

    >>> call = ToolCall(name="messages.send", arguments={"to": "+15550100", "body": "hi"})
    >>> ToolCall.model_validate_json(call.model_dump_json()) == call
    True

The *action* is a :class:`ToolCall`, the *feedback* a :class:`Feedback` (a result or a structured
error from the closed :class:`ErrorKind` enum, never an exception), and the *verification* a
:class:`Verdict` computed from a :class:`TaskSpec`'s :data:`Criterion` list. A whole episode is a
:class:`Trace`.
"""

from __future__ import annotations

import datetime as dt
import enum
import itertools
import re
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

__all__ = [
    "GROUNDED_TYPES",
    "INFRASTRUCTURE_ERRORS",
    "ROOT_FRAME",
    "AnswerCriterion",
    "AnswerType",
    "Attempt",
    "BehaviorCriterion",
    "Category",
    "ChangeSelector",
    "CompositeCriterion",
    "Criterion",
    "CriterionResult",
    "Domain",
    "Effect",
    "ErrorKind",
    "Feedback",
    "Fixtures",
    "Frame",
    "IntentTrigger",
    "LocationChange",
    "MemoryFixture",
    "Probe",
    "SimulatedCall",
    "StateCriterion",
    "Step",
    "TaskSpec",
    "ToolCall",
    "ToolSpec",
    "Trace",
    "Verdict",
]


class ErrorKind(str, enum.Enum):
    """The closed set of error kinds a :class:`Feedback` may carry.

    ``device_error``, ``timeout`` and ``internal_error`` are *infrastructure* errors: they say
    the world failed, not the agent, and evaluation labels them as such
    (see :data:`INFRASTRUCTURE_ERRORS`).
    """

    INVALID_JSON = "invalid_json"
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    PERMISSION_DENIED = "permission_denied"
    LOGIN_REQUIRED = "login_required"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    PRECONDITION_FAILED = "precondition_failed"
    CONFIRMATION_REQUIRED = "confirmation_required"
    DEVICE_ERROR = "device_error"
    TIMEOUT = "timeout"
    INTERNAL_ERROR = "internal_error"


INFRASTRUCTURE_ERRORS: frozenset[ErrorKind] = frozenset(
    {ErrorKind.DEVICE_ERROR, ErrorKind.TIMEOUT, ErrorKind.INTERNAL_ERROR}
)
"""Error kinds that blame the world (device, network, a bug in a tool), never the agent."""


class Effect(str, enum.Enum):
    """What a tool does to the world: ``read`` nothing, ``write`` state, ``sensitive`` payment,
    sending, deleting, sharing or granting (the writes a user may want to confirm)."""

    READ = "read"
    WRITE = "write"
    SENSITIVE = "sensitive"


class Category(str, enum.Enum):
    """Benchmark categories, after the four of the Qwen-Planner-Agent report's MobilePA-Bench."""

    TOOL = "tool"
    MEMORY = "memory"
    SKILLS = "skills"
    SUBAGENT = "subagent"


class Domain(str, enum.Enum):
    """The thirteen query domains a tool or task belongs to."""

    COMMUNICATION = "communication"
    CONTACTS = "contacts"
    CALLS = "calls"
    SCHEDULING = "scheduling"
    TIME = "time"
    NOTES = "notes"
    DEVICE = "device"
    EMAIL = "email"
    SHOPPING = "shopping"
    FOOD = "food"
    TRAVEL = "travel"
    ENTERTAINMENT = "entertainment"
    FINANCE = "finance"


class ToolSpec(BaseModel):
    """A typed tool: its name (``app.verb``), JSON Schemas for arguments and result, and policy.

    ``parameters`` and ``returns`` are JSON Schema (draft 2020-12) objects; ``parameters`` is in the
    OpenAI function-calling form (``{"type": "object", "properties": ..., "required": ...}``).
    ``secret_parameters`` names arguments whose values are redacted (``***``) in traces and logs.
    ``writes`` names the tables (``app.table``) a successful call may change; empty for a read
    (not sent to a model: :meth:`to_openai` renders name, description and parameters).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]
    returns: dict[str, Any] = Field(default_factory=dict)
    app: str
    domain: Domain
    effect: Effect = Effect.READ
    permissions: tuple[str, ...] = ()
    requires_login: bool = False
    returns_image: bool = False
    secret_parameters: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()

    def to_openai(self, *, name_style: Literal["dotted", "underscore"] = "dotted") -> dict[str, Any]:
        """Render as an OpenAI ``tools`` entry: ``{"type": "function", "function": {...}}``.

        OpenAI's own API accepts only ``[a-zA-Z0-9_-]`` in names; ``name_style="underscore"``
        renders ``messages.send`` as ``messages__send``, a name the env also accepts. Description
        and parameters are rendered compactly (:func:`phoneenv.compact.compact_parameters`:
        every parameter, type, enum and ``required`` list, without the limits validation
        enforces); :func:`phoneenv.compact.tool_text` is what a chat template writes for it
        (a TypeScript-like declaration).
        """
        from phoneenv.compact import compact_description, compact_parameters

        name = self.name if name_style == "dotted" else self.name.replace(".", "__")
        return {
            "type": "function",
            "function": {
                "name": name,
                "description": compact_description(self.description),
                "parameters": compact_parameters(self.parameters, self.name),
            },
        }


class ToolCall(BaseModel):
    """One action: a tool name and its JSON arguments; ``id`` echoes an API's tool-call id."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class Feedback(BaseModel):
    """What a tool call returned: a JSON ``result`` when ``ok``, else a structured error.

    ``error`` is from the closed :class:`ErrorKind`; ``path`` is the JSON Pointer of a bad argument
    inside ``arguments`` (e.g. ``/attendees/0``); ``expected`` the schema type expected there;
    ``candidates`` the nearest valid names (tools, contacts, ...); ``recoverable`` whether the agent
    can fix it by acting differently. ``notifications`` are the memory intents that fired during
    this step (or at reset), each ``{"type": "reminder", "memory_id", "content", "action",
    "trigger": {"type", "value"}, "time"}`` (see :mod:`phoneenv.harness.episode_memory`); None
    when none fired. ``redacted`` names the arguments of the call that the world found secret
    (text typed into a password field): the env records them as ``***`` and masks their values
    for the rest of the episode. ``image`` (``uint8`` H×W×3) is never serialised.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    ok: bool
    result: Any = None
    error: ErrorKind | None = None
    message: str | None = None
    hint: str | None = None
    path: str | None = None
    expected: str | None = None
    candidates: list[str] | None = None
    recoverable: bool | None = None
    notifications: list[dict[str, Any]] | None = None
    redacted: list[str] | None = None
    image: Any = Field(default=None, exclude=True)

    @property
    def infrastructure(self) -> bool:
        """True when the error blames the world (device, network, tool bug), not the agent."""
        return self.error in INFRASTRUCTURE_ERRORS

    @classmethod
    def success(cls, result: Any, image: Any = None) -> Feedback:
        """``Feedback(ok=True, result=result, image=image)``, validated the same way, without
        ``__init__``'s Python wrapper (a third less: what every successful tool call builds)."""
        data = {"ok": True, "result": result} if image is None else {"ok": True, "result": result, "image": image}
        return cls.__pydantic_validator__.validate_python(data)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# Tasks and criteria
# ---------------------------------------------------------------------------------------------

Condition = Union[str, int, float, bool, None, dict[str, Any]]
"""A field condition: a literal (equality) or an operator object such as ``{"icontains": "late"}``.

Operators: ``eq``, ``ne``, ``in``, ``icontains``, ``says``, ``iequals``, ``gte``, ``lte``, ``startswith``,
``has`` (a list field contains the value), ``regex``, ``any`` (alternatives), ``not``, and by
contact identity ``person``, ``has_person``, ``people``; facts in text ``states``; another record
by what it holds, ``ref`` (``{"ref": {"table": "notes.notes", "where": {"title": "Packing"},
"change": "created"}}``: the id of a note the episode created) — see :mod:`phoneenv.tasks.predicates`.
"""


class ChangeSelector(BaseModel):
    """Selects records of one table (``app.table``) whose fields satisfy ``where``."""

    table: str
    where: dict[str, Condition] = Field(default_factory=dict)


class StateCriterion(BaseModel):
    """A predicate over the end state: count the records of ``table`` matching ``where`` whose
    change since the fixture state is ``change``, and compare with ``count``/``min``/``max``.

    ``change``: ``created`` (new), ``updated`` (existed, now differs), ``deleted`` (existed, gone;
    matched against the old record), ``present`` (in the end state), ``absent`` (no match left:
    count must be 0). Records matched by ``created``/``updated``/``deleted`` criteria are the
    task's *expected* changes for the collateral-damage rule; so are, for ``present`` with a
    ``count``, the records created or updated into a matching record: ``present`` with
    ``count=1`` is "exactly one such record", whether the agent created it or modified an
    equivalent existing one. A ``present`` guard without ``count`` accounts for no change.
    """

    kind: Literal["state"] = "state"
    id: str = ""
    description: str = ""
    table: str
    where: dict[str, Condition] = Field(default_factory=dict)
    change: Literal["created", "updated", "deleted", "present", "absent"] = "present"
    count: int | None = None
    min: int | None = 1
    max: int | None = None


AnswerType = Literal["number", "money", "time", "date", "duration", "contact", "contacts", "items", "yes_no", "text"]
"""The types of a typed answer (see :mod:`phoneenv.tasks.answers`)."""


class AnswerCriterion(BaseModel):
    """The final answer (the ``finish`` call's ``answer`` text and typed ``value``) matches.

    Text checks: ``equals`` (case- and space-insensitive), every string in ``contains`` (stated
    as whole words and not denied: :func:`phoneenv.tasks.predicates.says`),
    ``pattern`` (regex, searched case-insensitive, accents aside:
    :func:`phoneenv.tasks.predicates.searches`). Typed check: ``type`` with the expected ``value`` in its
    normalised form (number/money: a number; time: ``"HH:MM"``; date: ``"YYYY-MM-DD"``;
    duration: seconds; contact: a contact id; contacts: a list of contact ids; items: a list of
    strings; yes_no: a bool; text: a phrase or list of phrases that must all appear), compared
    within ``tolerance`` for numbers, money (and ``currency``, an ISO code, when given) and
    durations; ``unit`` narrows the numbers read to those followed by that word ("message"; alternatives "message|text").
    ``number`` without a type is the older spelling of ``type="number", value=number``. The
    answer passes when its claims of the type are exactly the expected value (a hedge or a
    contradicting claim fails): :func:`phoneenv.tasks.answers.check_answer` has the rules.

    ``context``: other values of the type the answer may state beside the expected one without
    contradicting it, each in the same normalised form (the meeting's time in "leave at 12:59 to
    arrive by 13:30"; the world knows them, so the template names them). Stating only a context
    value still fails. For ``yes_no``, ``context`` names the question's other subjects (phrases:
    "size 40" beside the size asked about), and a clause that says one answers another question
    and is set aside ("size 39 is in stock, though size 40 isn't").

    ``about``: the typed check reads only the parts of the answer that name ``about`` (a place,
    a person; parts split at sentence ends, commas, semicolons, dashes, "and", "but", "while"):
    "Dubai: 13:00, Sao Paulo: 06:00" and "In Sao Paulo it's six in the morning and in Dubai it's 1
    pm" tell Dubai's time as 13:00. An answer that names ``about`` nowhere fails.

    ``optional``: the answer need not state a value of the type, but one it states must be the
    expected one (or a ``context`` value): for a task whose answer is free, where a wrong time or
    amount told to the user is as wrong as a wrong one written ("Reminder set for 9:00" when it is
    set for 8:00). Read from the text only; a typed ``value`` is checked as usual.

    ``judge``: a rubric for an LLM judge, consulted only when verification is given a judge
    (off by default), and only beside a deterministic check (a type, ``equals``, ``contains``
    or ``pattern``).
    """

    kind: Literal["answer"] = "answer"
    id: str = ""
    description: str = ""
    equals: str | None = None
    contains: list[str] = Field(default_factory=list)
    pattern: str | None = None
    number: float | None = None
    tolerance: float = 0.0
    type: AnswerType | None = None
    value: Any = None
    unit: str | None = None
    currency: str | None = None
    context: list[Any] = Field(default_factory=list)
    optional: bool = False
    judge: str | None = None
    about: str | None = None

    @model_validator(mode="after")
    def _typed_needs_value(self) -> AnswerCriterion:
        if self.about is not None and (self.type is None or not self.about.strip()):
            raise ValueError("about= names what a typed answer is about (a place, a person): give type= and value=")
        if self.type is not None and self.value is None:
            raise ValueError(f"answer criterion of type {self.type!r} needs the expected value= (normalised form)")
        if self.type is None and self.value is not None:
            raise ValueError("answer criterion has value= but no type=; name the type (number, time, date, ...)")
        if self.type is not None and self.number is not None:
            raise ValueError("give either number= or type=/value=, not both")
        if self.context and self.type not in ("number", "money", "time", "date", "duration", "yes_no"):
            raise ValueError(
                "context= values go with a single-valued type (number, money, time, date, duration) or names "
                "a yes_no question's other subjects"
            )
        if self.type == "yes_no" and not all(isinstance(c, str) and c.strip() for c in self.context):
            raise ValueError("a yes_no answer's context= names other subjects as phrases (strings)")
        if self.judge is not None and not (
            self.type or self.equals is not None or self.contains or self.pattern or self.number is not None
        ):
            raise ValueError(
                "an answer criterion with a judge needs a deterministic check too (type, contains, pattern)"
            )
        return self


class BehaviorCriterion(BaseModel):
    """A rule over the trace's calls.

    ``rule``: ``required_call`` (``tool`` called successfully, arguments matching ``arguments``),
    ``forbidden_call`` (never called), ``confirm_before`` (every successful call of ``tool`` came
    after a granted ``user.confirm``), ``max_calls`` (at most ``limit`` tool calls), ``read_only``
    (no successful write or sensitive call besides signing in and permission requests),
    ``delegated`` (at least ``min_frames`` sub-agent frames were opened and finished whose goal
    matches ``goal`` and inside which — the frame or the frames it delegated to — ``tool`` was
    called successfully with ``arguments``; see :mod:`phoneenv.frames`), ``before`` (a successful
    call of ``tool`` matching ``arguments`` precedes the first successful call of ``then``; holds
    when ``then`` is never called, so pair it with a ``required_call`` when ``then`` is needed),
    ``step_up`` (every successful call of ``tool`` — every ``sensitive`` call when ``tool`` is
    None — comes after a successful step-up call, one of the tools in ``via`` (default
    ``user.authenticate``, the PIN or fingerprint prompt), made since the
    previous such call: authentication is fresh per sensitive action).

    ``tool`` is a name or an ``fnmatch`` pattern (``"messages.*"``: every tool of an app).
    ``depth`` scopes the rule to the calls made in frames at that depth (0: the root frame, the
    user's own planner; 1: its sub-agents); None counts every frame. For ``delegated`` it is
    the depth of the delegated frame (None: any sub-agent frame).
    """

    kind: Literal["behavior"] = "behavior"
    id: str = ""
    description: str = ""
    rule: Literal[
        "required_call", "forbidden_call", "confirm_before", "max_calls", "read_only", "delegated", "before", "step_up"
    ]
    tool: str | None = None
    then: str | None = None
    via: list[str] = Field(default_factory=list)
    arguments: dict[str, Condition] = Field(default_factory=dict)
    limit: int | None = None
    depth: int | None = Field(default=None, ge=0)
    goal: Condition = None
    min_frames: int = Field(default=1, ge=1)


class CompositeCriterion(BaseModel):
    """Criteria composed: ``all_of`` (every part holds), ``any_of`` (at least one part holds:
    "tell Ana" by text *or* by e-mail), ``not`` (its single part does not hold).

    The changes a composite accounts for (see :class:`StateCriterion`) are those of its parts
    that hold; a ``not`` accounts for none.
    """

    kind: Literal["all_of", "any_of", "not"]
    id: str = ""
    description: str = ""
    criteria: list[Criterion] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_part_for_not(self) -> CompositeCriterion:
        if self.kind == "not" and len(self.criteria) != 1:
            raise ValueError(f"a 'not' criterion has exactly one part, got {len(self.criteria)}")
        return self


Criterion = Annotated[
    Union[StateCriterion, AnswerCriterion, BehaviorCriterion, CompositeCriterion], Field(discriminator="kind")
]
"""A verification criterion, discriminated by ``kind``: ``state``, ``answer``, ``behavior``, or
a composite ``all_of``/``any_of``/``not``."""

CompositeCriterion.model_rebuild()


class SimulatedCall(BaseModel):
    """A scripted result of an LLM-simulated tool: when ``tool`` is called with exactly
    ``arguments``, it returns ``result`` (which must validate against the tool's return schema)."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None


def _local_time(value: str, what: str) -> str:
    """``value`` checked as an ISO 8601 local time without a UTC offset (ValueError otherwise)."""
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{what} {value!r} is not an ISO local time such as 2026-11-29T09:00:00") from None
    if parsed.tzinfo is not None:
        raise ValueError(f"{what} {value!r} must be local time without a UTC offset")
    return value


class IntentTrigger(BaseModel):
    """When a memory intent fires: ``type`` ``time`` (``value``: an ISO local time; due once the
    phone clock reaches it), ``place`` (a place label such as ``"office"``; due when the phone is
    there, compared case- and space-insensitively) or ``app_event`` (an ``app.event`` name; due
    when it happens: every successful tool call ``app.verb`` is the event ``app.verb``, and a
    location change is ``system.location_changed``)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["time", "place", "app_event"]
    value: str = Field(min_length=1, max_length=200)

    @model_validator(mode="after")
    def _check_value(self) -> IntentTrigger:
        if not self.value.strip():
            raise ValueError("the trigger value is blank")
        if self.type == "time":
            _local_time(self.value, "the trigger time")
        elif self.type == "app_event" and not re.fullmatch(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*", self.value):
            raise ValueError(f"app event {self.value!r} is not an 'app.event' name such as 'phone.end_call'")
        return self


class MemoryFixture(BaseModel):
    """One memory the task's user already has, seeded into the harness's memory store on reset
    (:mod:`phoneenv.harness.memory`).

    ``kind``: ``preference``, ``episode``, ``fact`` or ``intent``; ``content``: the memory in
    words; ``created``: ISO local time it was written (older than the task's clock, usually);
    ``id``: an explicit row id (≥ 1) so that later entries and reference plans can name it;
    ``supersedes``: the ``id`` of an earlier entry of the list that this one replaces (that
    entry's chain becomes invalid, as with ``memory.save(..., supersedes=)``); ``trigger`` and
    ``action``: required for an intent, forbidden otherwise; ``valid``: False for a forgotten
    memory; ``fired``: an intent that already fired.
    """

    model_config = ConfigDict(extra="forbid")

    id: int | None = Field(default=None, ge=1)
    kind: Literal["preference", "episode", "fact", "intent"]
    content: str = Field(min_length=1, max_length=2000)
    created: str
    supersedes: int | None = Field(default=None, ge=1)
    trigger: IntentTrigger | None = None
    action: str | None = Field(default=None, min_length=1, max_length=2000)
    valid: bool = True
    fired: bool = False

    @model_validator(mode="after")
    def _check_entry(self) -> MemoryFixture:
        if not self.content.strip():
            raise ValueError("the memory content is blank")
        _local_time(self.created, "created")
        if self.kind == "intent":
            if self.trigger is None or self.action is None or not self.action.strip():
                raise ValueError("an intent needs a trigger and an action")
        elif self.trigger is not None or self.action is not None or self.fired:
            raise ValueError(f"only intents have a trigger, an action or fired, not a {self.kind}")
        return self


class LocationChange(BaseModel):
    """One step of a task's location timeline: from ``at`` (ISO local time) on, the phone is at
    the place ``label`` (with optional coordinates in degrees)."""

    model_config = ConfigDict(extra="forbid")

    at: str
    label: str = Field(min_length=1, max_length=100)
    lat: float | None = Field(default=None, ge=-90, le=90)
    lon: float | None = Field(default=None, ge=-180, le=180)

    @model_validator(mode="after")
    def _check_time(self) -> LocationChange:
        _local_time(self.at, "at")
        if not self.label.strip():
            raise ValueError("the place label is blank")
        return self


MIN_SECRET_CHARS = 4
"""Shortest fixture secret (a vault password or PIN): every occurrence of a secret is masked as
``***`` in what the env records (a 4- or 5-digit one only as a whole number), so a shorter one
would mask unrelated text."""


class Fixtures(BaseModel):
    """The world a task starts from; applied on ``reset`` by restoring a snapshot of it.

    - ``clock``: ISO 8601 local time of the phone, frozen per task; ``timezone``: IANA name.
    - ``records``: seeded rows per table (``"contacts.contacts": [{"id": ..., ...}]``).
    - ``permissions``: ``{"app": {"android.permission.X": granted}}``; apps not named have all
      their declared permissions granted.
    - ``permission_responses``: what the simulated user answers to a permission request,
      ``{"app/android.permission.X": grant}`` (default: grant).
    - ``accounts``: ``{"app": {"account": "ana@example.com", "signed_in": false}}``.
    - ``vault``: saved credentials ``{"account": password}``; secret, shown as ``***``.
    - ``confirm_sensitive``: sensitive calls need a granted ``user.confirm`` first;
      ``user_confirms``: what the simulated user answers to ``user.confirm``.
    - ``step_up``: the phone asks for the user's PIN or fingerprint before every sensitive call
      (``user.authenticate`` is offered, and a sensitive call without a fresh authentication
      fails with ``precondition_failed``); ``user_authenticates``: whether the user passes it.
    - ``simulated``: scripted results of LLM-simulated tools for given arguments (the task's
      world script; calls not scripted are simulated by the model).
    - ``memory``: the user's memories (:class:`MemoryFixture`) seeded into the harness's memory
      store on reset; ids unique, ``supersedes`` naming an earlier entry's id.
    - ``location_timeline``: where the phone goes during the episode (:class:`LocationChange`,
      ``at`` strictly increasing); before the first change it is at ``location``.
    """

    clock: str = "2026-11-29T09:00:00"
    timezone: str = "Europe/Berlin"
    location: dict[str, Any] = Field(default_factory=lambda: {"label": "home", "lat": 52.52, "lon": 13.405})
    installed_apps: list[str] | None = None
    records: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    permissions: dict[str, dict[str, bool]] = Field(default_factory=dict)
    permission_responses: dict[str, bool] = Field(default_factory=dict)
    accounts: dict[str, dict[str, Any]] = Field(default_factory=dict)
    vault: dict[str, SecretStr] = Field(default_factory=dict)
    confirm_sensitive: bool = False
    user_confirms: bool = True
    step_up: bool = False
    user_authenticates: bool = True
    simulated: list[SimulatedCall] = Field(default_factory=list)
    memory: list[MemoryFixture] = Field(default_factory=list)
    location_timeline: list[LocationChange] = Field(default_factory=list)

    @field_validator("vault")
    @classmethod
    def _check_vault(cls, vault: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for account, secret in vault.items():
            if len(secret.get_secret_value()) < MIN_SECRET_CHARS:
                raise ValueError(
                    f"the vault password of {account!r} has fewer than {MIN_SECRET_CHARS} characters; "
                    "traces mask every occurrence of a secret, and one this short would mask unrelated text"
                )
        return vault

    @field_validator("memory")
    @classmethod
    def _check_memory(cls, entries: list[MemoryFixture]) -> list[MemoryFixture]:
        seen: set[int] = set()
        for n, entry in enumerate(entries):
            if entry.supersedes is not None and entry.supersedes not in seen:
                raise ValueError(f"memory {n} supersedes {entry.supersedes}, which is no earlier entry's id")
            if entry.id is not None:
                if entry.id in seen:
                    raise ValueError(f"memory {n}: duplicate id {entry.id}")
                seen.add(entry.id)
        return entries

    @field_validator("location_timeline")
    @classmethod
    def _check_timeline(cls, changes: list[LocationChange]) -> list[LocationChange]:
        times = [dt.datetime.fromisoformat(c.at) for c in changes]
        if any(b <= a for a, b in itertools.pairwise(times)):
            raise ValueError("location_timeline times must be strictly increasing")
        return changes


GROUNDED_TYPES = (
    "time", "date", "money", "temperature", "email", "phone", "status", "count", "percent", "duration", "person",
    "switch", "name", "commitment", "code", "period", "size", "place", "distance",
)  # fmt: skip
"""The claim types a verdict holds to the world by default (:mod:`phoneenv.tasks.grounding`)."""


class Probe(BaseModel):
    """A verdict probe: a plausible alternative plan and the verdict a careful person gives it.

    ``expect="pass"``: another way to do the task right (another channel, an equivalent
    existing record, the answer in another format) that must succeed; ``expect="fail"``: a
    near miss (a hedged answer, contradicting content, a stray record, the wrong person) that
    must not. ``plan`` is the whole plan, ending with ``finish``; ``phoneenv tasks validate``
    plays it and compares the verdict.
    """

    name: str = Field(min_length=1)
    expect: Literal["pass", "fail"]
    plan: list[ToolCall] = Field(min_length=1)


_ROUTE_TARGET = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)?")


class TaskSpec(BaseModel):
    """An executable task: the user's goal, the fixtures it starts from, and how it is verified.

    ``criteria`` decide success (all must pass); ``milestones`` give partial ``progress``;
    ``allowed_changes`` lists writes that are neither required nor collateral damage. The
    ``reference_plan`` only proves the task solvable; ``perturb_exempt`` names plan arguments
    (``"<step>.<arg>"``) that the perturbation check may leave out because the goal does not fix them.
    ``probes`` are alternative plans with the verdict each must get (see :class:`Probe`).
    ``grounding_exempt`` names claim types (:data:`GROUNDED_TYPES`)
    the task does not hold to the world, each with the reason (``{"time": "the user asks for
    a made-up time"}``); every other type of claim the planner tells must be grounded.

    ``backends`` names the worlds that run the task faithfully; a ``hybrid`` task may add routes
    ``device:<app>`` or ``device:<app>.<verb>``, which send just that app's or tool's calls to an
    Android device (where simulation is not faithful; see :mod:`phoneenv.backends.hybrid`).
    Routes are checked here (``hybrid`` declared, a known form, the app among ``apps`` when
    ``apps`` is given) and against the device's drivers at reset.
    """

    id: str
    category: Category = Category.TOOL
    domain: Domain
    goal: str
    fixtures: Fixtures = Field(default_factory=Fixtures)
    criteria: list[Criterion]
    milestones: list[Criterion] = Field(default_factory=list)
    allowed_changes: list[ChangeSelector] = Field(default_factory=list)
    max_steps: int = 30
    difficulty: int = Field(default=1, ge=1, le=5)
    source: str = "template"
    template: str | None = None
    seed: int | None = None
    capabilities: list[str] = Field(default_factory=list)
    apps: list[str] = Field(default_factory=list)
    backends: list[str] = Field(default_factory=lambda: ["sandbox"])
    reference_plan: list[ToolCall] | None = None
    perturb_exempt: list[str] = Field(default_factory=list)
    probes: list[Probe] = Field(default_factory=list)
    grounding_exempt: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _name_criteria(self) -> TaskSpec:
        """A criterion or milestone written without an ``id`` gets the one a template would give it
        (``created:contacts.contacts``; else its kind: ``answer``, ``behavior``, ``all_of``...;
        ``#2``, ``#3`` when taken), so a verdict names every criterion it reports."""
        taken = {c.id for c in [*self.criteria, *self.milestones] if c.id}
        for group in (self.criteria, self.milestones):
            for i, c in enumerate(group):
                if c.id:
                    continue
                base = (
                    f"{c.change}:{c.table}"
                    if isinstance(c, StateCriterion)
                    else {"composite": "all"}.get(c.kind, c.kind)
                )
                name, k = base, 1
                while name in taken:
                    k += 1
                    name = f"{base}#{k}"
                taken.add(name)
                group[i] = c.model_copy(update={"id": name})
        return self

    @model_validator(mode="after")
    def _check_grounding_exempt(self) -> TaskSpec:
        for kind, why in self.grounding_exempt.items():
            if kind not in GROUNDED_TYPES:
                raise ValueError(f"grounding_exempt: unknown claim type {kind!r}; known: {list(GROUNDED_TYPES)}")
            if not why.strip():
                raise ValueError(f"grounding_exempt[{kind!r}]: say why the task does not check it")
        return self

    @model_validator(mode="after")
    def _check_routes(self) -> TaskSpec:
        routes = [b for b in self.backends if ":" in b]
        for entry in routes:
            kind, _, target = entry.partition(":")
            if kind != "device" or not _ROUTE_TARGET.fullmatch(target):
                raise ValueError(
                    f"backend route {entry!r}: routes are 'device:<app>' or 'device:<app>.<verb>' (lower case)"
                )
            if self.apps and target.split(".")[0] not in self.apps:
                raise ValueError(f"backend route {entry!r}: {target.split('.')[0]!r} is not among the task's apps")
        if routes and ("hybrid" not in self.backends or ":" in self.backends[0]):
            raise ValueError(f"backend routes {routes} need the 'hybrid' backend listed before them")
        return self

    @property
    def routes(self) -> list[str]:
        """The apps and tools ``backends`` sends to a device (``device:<target>`` entries), in order."""
        return [b.partition(":")[2] for b in self.backends if b.startswith("device:")]

    @property
    def cross_app(self) -> bool:
        """True when the task needs more than one app (system tools not counted)."""
        return len([a for a in self.apps if a not in ("system", "user")]) > 1


# ---------------------------------------------------------------------------------------------
# Verdicts and traces
# ---------------------------------------------------------------------------------------------


class CriterionResult(BaseModel):
    """One criterion's outcome: ``passed`` and, when not, ``reason`` in words."""

    id: str
    kind: str
    passed: bool
    reason: str = ""


class Verdict(BaseModel):
    """Whether the user's goal really happened, how far the agent got, and at what cost.

    ``progress`` = (milestones met + success) / (milestones total + 1): 1.0 on success only, 0.0
    with no milestones and no success. ``collateral`` lists writes the task neither asked for nor allowed
    (``table/id``). ``infrastructure_error`` marks an episode lost to the world, not the agent.
    Token totals are the agent's (None when it reported none); ``output_tokens`` includes
    ``thinking_tokens``. ``answer`` and ``answer_value`` are the ``finish`` call's text and typed
    value (any JSON value, as given). ``inconsistent`` marks an episode whose simulated world contradicted itself
    (``inconsistencies`` says how), so evaluation and RL can drop or down-weight it.
    """

    success: bool
    progress: float
    criteria: list[CriterionResult] = Field(default_factory=list)
    milestones_met: int = 0
    milestones_total: int = 0
    collateral: list[str] = Field(default_factory=list)
    steps: int = 0
    tool_calls: int = 0
    errors: int = 0
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    thinking_tokens: int | None = None
    infrastructure_error: bool = False
    truncated: bool = False
    answer: str | None = None
    answer_value: Any = None
    inconsistent: bool = False
    inconsistencies: list[str] = Field(default_factory=list)


ROOT_FRAME = "main"
"""The id of the root frame: the planner that serves the user (see :mod:`phoneenv.frames`)."""


class Frame(BaseModel):
    """One frame of an episode's frame tree: the root (the user's planner) or a sub-agent.

    ``id``: ``"main"`` for the root, else the parent's id and the child's number
    (``"main.1"``, ``"main.1.2"``); ``parent``: the parent's id (None for the root); ``depth``:
    0 for the root; ``goal``: the user's goal (root) or the goal given to ``agent.delegate``;
    ``tools``: the tool names the frame may call (None for the root: every tool of the
    episode); ``answer``: the answer its ``finish`` returned; ``opened_at``/``closed_at``: the
    1-based indices of the steps that opened (``agent.delegate``; 0 for the root) and closed it
    (its ``finish``; None while open or when the episode ended first); ``steps``: the indices of
    the steps acted in this frame, its closing ``finish`` included.
    """

    id: str
    parent: str | None = None
    depth: int = 0
    goal: str
    tools: list[str] | None = None
    answer: str | None = None
    opened_at: int = 0
    closed_at: int | None = None
    steps: list[int] = Field(default_factory=list)


class Step(BaseModel):
    """One step of a trace: the action as parsed (secrets shown as ``***``) or the ``raw`` text
    (first 200 characters, secrets masked) when it did not parse, its feedback, the phone's
    clock after the step (ISO 8601, deterministic), the agent's token counts if given, the
    wall-clock latency in seconds only when the env records it, and the id of the
    :class:`Frame` it acted in (``"main"`` in traces written before frames existed).

    ``escaped`` is True when something of the step could not be stored as it was and is stored
    escaped instead: ``raw`` text with lone UTF-16 surrogates (written as ``\\udXXX``), or a
    feedback holding what JSON cannot carry (see :func:`phoneenv.intake.seal`).
    """

    index: int
    action: ToolCall | None = None
    raw: str | None = None
    feedback: Feedback
    clock: str
    backend: str
    tokens: dict[str, int] | None = None
    latency_s: float | None = None
    frame: str = ROOT_FRAME
    escaped: bool = False


class Attempt(BaseModel):
    """One try of an episode on one device of a pool (see ``phoneenv.farm.pool``): the device's
    ``device`` serial, when it ``started`` (ISO 8601, UTC), its wall time (s), and for a try lost
    to the device, ``failure`` (what failed, in words), its ``kind`` (``reset``, ``device_error``,
    ``timeout``...) and the ``steps`` it had played. The try that counts has ``failure=None`` and
    no steps of its own: they are the trace's."""

    device: str | None = None
    started: str
    wall_s: float = 0.0
    failure: str | None = None
    kind: str | None = None
    steps: list[Step] = Field(default_factory=list)


class Trace(BaseModel):
    """A whole episode, one JSON Lines record: task, seed, backend, steps, frame tree and verdict.

    ``frames`` is the frame tree (:class:`Frame`, root first, then in opening order); traces
    written before frames existed load with an empty list. Same seed and same actions give a
    byte-identical ``model_dump_json()``. ``attempts`` lists every try of an episode that a
    device pool re-ran on another device (:class:`Attempt`, in order, the last the one whose
    steps and verdict these are); empty for an episode played once outside a pool. ``model`` is
    the planner's model record (``{"name", "endpoint", "decoding"}``: the model's name, the base
    URL it was served at without credentials or query, and the decoding settings; see
    ``phoneenv.evaluation.model_record``), None for a planner with no model. ``harness`` is the
    name of the harness version the episode ran with (skills, instructions; see
    ``phoneenv.loop.harness``), None when none was named (traces written before harness versions
    existed load with None).
    """

    task_id: str
    seed: int | None = None
    backend: str
    category: Category
    domain: Domain
    goal: str
    agent: str | None = None
    steps: list[Step] = Field(default_factory=list)
    frames: list[Frame] = Field(default_factory=list)
    verdict: Verdict | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    model: dict[str, Any] | None = None
    harness: str | None = None
