"""Skills: procedures for using the current tools well, disclosed progressively.

A skill is a folder holding a ``SKILL.md``: YAML front matter between ``---`` lines, then a
Markdown body (a procedure, optionally examples)::

    ---
    name: text-a-contact
    description: Send an SMS to someone by name - find their number first, confirm when asked.
    tools: [messages.send]
    apps: [messages]
    ---
    1. Call `contacts.search` with the person's name ...

Front matter keys: ``name`` (lowercase words joined by ``-``, at most 64 characters, equal to
the folder's name, unique in a library), ``description`` (one line an agent chooses by, at most
1024 characters), ``tools`` (tool names ``app.verb`` it covers) and/or ``apps`` (app names), and
an optional free ``metadata`` mapping. Anything else is an error, so a typo does not go unseen.
``tools`` and ``apps`` decide where a skill is shown: list the tools the skill is *about*, not
every tool its procedure mentions (a messaging skill that looks up a contact lists
``messages.send``, not ``contacts.search``, or it would show in every contacts episode).

Skills ship in their app's folder, ``apps/<app>/skills/<skill-name>/SKILL.md`` (an app folder on
``PHONEENV_APPS_PATH`` ships its own the same way: :func:`shipped_skills_dirs`), and
can be added from any folder (:func:`load_skills`). An episode sees only the skills whose
``tools``/``apps`` meet its tool set (:func:`skills_for`): their names and descriptions go into
the observation or ``info`` (:meth:`SkillLibrary.descriptions`), and the agent reads a body with
the ``skills.read`` tool (:data:`READ_TOOL`, served by :meth:`SkillLibrary.call`).

This follows the Agent Skills layout (a ``SKILL.md`` with ``name``/``description`` front matter,
bodies loaded on demand) and the Qwen-Planner-Agent report's *Harness* split: tools say what can
be done, skills say how to do it with the tools at hand.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from typing_extensions import TypedDict

from phoneenv.contract import Domain, Feedback
from phoneenv.errors import PhoneEnvError
from phoneenv.harness.feedback import from_tool_error, invalid_arguments, not_found, to_tool_error
from phoneenv.sharing import ReadOnlyList
from phoneenv.tools import ArgumentError, ToolDef, ToolError, build_tool, tool

__all__ = [
    "MAX_BODY_CHARS",
    "READ_TOOL",
    "SKILL_FILE",
    "Skill",
    "SkillError",
    "SkillLibrary",
    "SkillText",
    "load_skills",
    "parse_skill",
    "shipped_skills_dirs",
    "skills_for",
    "unknown_references",
]

SKILL_FILE = "SKILL.md"
"""The file that makes a folder a skill."""
MAX_BODY_CHARS = 20_000
"""Longest skill body accepted (a procedure, not a manual)."""

NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
TOOL_PATTERN = r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)+$"
APP_PATTERN = r"^[A-Za-z0-9_]+$"

_FRONT = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


class SkillError(PhoneEnvError, ValueError):
    """A skill file is malformed; ``str()`` names the file first (``path: problem``).

    Attributes:
        path: the ``SKILL.md`` (or folder) at fault, or None for text parsed without a path.
        problem: what is wrong, in words.
    """

    def __init__(self, path: Path | str | None, problem: str) -> None:
        self.path = Path(path) if path is not None else None
        self.problem = problem
        super().__init__(f"{self.path}: {problem}" if self.path is not None else problem)


class _FrontMatter(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: Annotated[str, Field(pattern=NAME_PATTERN, max_length=64)]
    description: Annotated[str, Field(min_length=1, max_length=1024)]
    tools: list[Annotated[str, Field(pattern=TOOL_PATTERN)]] = Field(default_factory=list)
    apps: list[Annotated[str, Field(pattern=APP_PATTERN)]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("description")
    @classmethod
    def _one_line(cls, value: str) -> str:
        value = " ".join(value.split())
        if not value:
            raise ValueError("description is blank")
        return value

    @model_validator(mode="after")
    def _covers_something(self) -> _FrontMatter:
        if not self.tools and not self.apps:
            raise ValueError("give 'tools' and/or 'apps': the tools or apps the skill covers")
        return self


class Skill(BaseModel):
    """One skill: its front matter, its Markdown ``body`` and the ``SKILL.md`` it came from.

    ``tools`` are tool names (``app.verb``), ``apps`` app names; a skill applies to an episode
    whose tool set meets either (:func:`skills_for`). ``path`` is None for a skill built in code.
    Round-trips through JSON.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    tools: tuple[str, ...] = ()
    apps: tuple[str, ...] = ()
    body: str
    path: Path | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def covers(self, tool_names: Iterable[str]) -> bool:
        """Whether this skill applies to an episode offering ``tool_names`` (see :func:`skills_for`)."""
        names = _normalize(tool_names)
        return self._covers(names, _apps(names))

    def _covers(self, names: frozenset[str], apps: frozenset[str]) -> bool:
        return not (names.isdisjoint(self.tools) and apps.isdisjoint(self.apps))


def _normalize(tool_names: Iterable[str]) -> frozenset[str]:
    """Tool names in dotted form (``messages__send`` → ``messages.send``)."""
    return frozenset(n.replace("__", ".") for n in tool_names)


def _apps(names: frozenset[str]) -> frozenset[str]:
    """The apps of dotted tool names (``messages.send`` → ``messages``)."""
    return frozenset(n.split(".", 1)[0] for n in names if "." in n)


def parse_skill(text: str, path: Path | str | None = None) -> Skill:
    """Parse the text of a ``SKILL.md``.

    Args:
        text: the file's text: ``---``, YAML front matter, ``---``, Markdown body.
        path: the file, for error messages and ``Skill.path``; when given, ``name`` must equal
            the name of the folder holding it.

    Raises:
        SkillError: no front matter, YAML that does not parse or is not a mapping, a missing,
            unknown or ill-typed key, a name that differs from its folder, an empty or too long
            body. The message names the file and the field.
    """
    p = Path(path) if path is not None else None
    m = _FRONT.match(text)
    if m is None:
        raise SkillError(p, "no front matter: the file must start with a '---' line, YAML, and a closing '---' line")
    try:
        data = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        raise SkillError(p, f"front matter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SkillError(p, f"front matter must be a YAML mapping, not {type(data).__name__}")
    try:
        front = _FrontMatter.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            where = ".".join(str(x) for x in err["loc"]) or "front matter"
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown key {where!r} (allowed: {', '.join(_FrontMatter.model_fields)})")
            elif err["type"] == "missing":
                problems.append(f"missing key {where!r}")
            else:
                problems.append(f"{where}: {err['msg']}")
        raise SkillError(p, "bad front matter: " + "; ".join(problems)) from None
    if p is not None and p.parent.name != front.name:
        raise SkillError(p, f"name {front.name!r} differs from its folder {p.parent.name!r}")
    body = text[m.end() :].strip()
    if not body:
        raise SkillError(p, "the body is empty: write the procedure below the front matter")
    if len(body) > MAX_BODY_CHARS:
        raise SkillError(p, f"the body has {len(body)} characters; at most {MAX_BODY_CHARS}")
    return Skill(
        name=front.name,
        description=front.description,
        tools=tuple(dict.fromkeys(front.tools)),
        apps=tuple(dict.fromkeys(front.apps)),
        body=body,
        path=p,
        metadata=front.metadata,
    )


def shipped_skills_dirs() -> list[Path]:
    """The folders of the skills that ship with the apps: the ``skills/`` folder of every app
    folder (``apps/clock/skills``) on the apps path (the ``apps`` package's own folder, then those
    of ``PHONEENV_APPS_PATH`` and :func:`apps.add_path`), in path then app order.

    Found from the ``apps`` package's location without importing it (when it is imported, from
    its ``__path__``).
    """
    module = sys.modules.get("apps")
    if module is not None:
        roots = list(module.__path__)
    else:
        spec = importlib.util.find_spec("apps")
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError("the 'apps' package is not installed, so there are no shipped skills")
        roots = [
            *spec.submodule_search_locations,
            *filter(None, os.environ.get("PHONEENV_APPS_PATH", "").split(os.pathsep)),
        ]
    return [
        d
        for root in roots
        for d in sorted(Path(root).glob("*/skills"))
        if d.is_dir() and (d.parent / "__init__.py").is_file()
    ]


def _skill_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise SkillError(folder, "no such skills folder")
    return sorted(folder.rglob(SKILL_FILE))


def load_skills(*folders: Path | str) -> dict[str, Skill]:
    """Load every skill under ``folders`` (each searched recursively for ``SKILL.md``; a folder
    may itself be one skill). With no folder, the shipped skills (:func:`shipped_skills_dirs`).

    Returns ``{name: Skill}`` sorted by name.

    Raises:
        SkillError: a folder that does not exist, a malformed ``SKILL.md`` (see
            :func:`parse_skill`), or two skills with one name (both files named).
    """
    roots = [Path(f) for f in folders] or shipped_skills_dirs()
    found: dict[str, Skill] = {}
    seen: set[Path] = set()
    for root in roots:
        for file in _skill_files(root):
            real = file.resolve()
            if real in seen:
                continue
            seen.add(real)
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise SkillError(file, f"cannot read: {exc}") from None
            skill = parse_skill(text, file)
            if skill.name in found:
                raise SkillError(file, f"skill {skill.name!r} is already defined in {found[skill.name].path}")
            found[skill.name] = skill
    return dict(sorted(found.items()))


def skills_for(tool_names: Iterable[str], skills: Mapping[str, Skill] | Iterable[Skill]) -> list[Skill]:
    """The skills that apply to an episode offering ``tool_names``, sorted by name.

    A skill applies when one of its ``tools`` is offered or one of its ``apps`` has an offered
    tool. Tool names may be dotted (``messages.send``) or underscored (``messages__send``).
    """
    pool = skills.values() if isinstance(skills, Mapping) else skills
    names = _normalize(tool_names)
    apps = _apps(names)
    return sorted((s for s in pool if s._covers(names, apps)), key=lambda s: s.name)


def unknown_references(skill: Skill, tool_names: Iterable[str]) -> list[str]:
    """The tools and apps ``skill`` names in its front matter that ``tool_names`` lacks (apps
    as ``app``, tools as ``app.verb``), in order; empty when every reference exists. Use it to
    check skills added from outside against a backend's ``tools()``."""
    names = _normalize(tool_names)
    apps = {n.split(".", 1)[0] for n in names if "." in n}
    return [t for t in skill.tools if t not in names] + [a for a in skill.apps if a not in apps]


class SkillText(TypedDict):
    """A skill as skills.read returns it; "body" is its procedure, in Markdown."""

    name: str
    description: str
    tools: list[str]
    apps: list[str]
    body: str


SkillName = Annotated[
    str,
    Field(
        min_length=1, max_length=64, description="The skill's name, as listed with the skills, e.g. 'text-a-contact'"
    ),
]


_SCOPES_KEPT = 1024
"""Scoped libraries a :class:`SkillLibrary` keeps (one per distinct offered tool set)."""


class SkillLibrary:
    """A set of skills: what an episode may see and the ``skills.read`` tool that serves bodies.

    Args:
        skills: ``{name: Skill}`` (from :func:`load_skills`) or an iterable of skills.

    Raises:
        ValueError: two skills share a name.

    Progressive disclosure: put :meth:`descriptions` (names and one-line descriptions) in the
    observation or ``info``; offer :data:`READ_TOOL`'s spec with the tools and serve its calls
    with :meth:`call`. Use :meth:`scoped` so that ``skills.read`` serves only the skills the
    episode was shown.
    """

    def __init__(self, skills: Mapping[str, Skill] | Iterable[Skill] = ()) -> None:
        pool = list(skills.values()) if isinstance(skills, Mapping) else list(skills)
        by_name: dict[str, Skill] = {}
        for s in pool:
            if s.name in by_name:
                raise ValueError(f"two skills named {s.name!r}: {by_name[s.name].path} and {s.path}")
            by_name[s.name] = s
        self._skills = dict(sorted(by_name.items()))
        self._scopes: dict[frozenset[str], SkillLibrary] = {}
        self._described: ReadOnlyList | None = None

    @classmethod
    def load(cls, *folders: Path | str) -> SkillLibrary:
        """A library of the skills under ``folders`` (the shipped ones when none); raises
        :class:`SkillError` like :func:`load_skills`."""
        return cls(load_skills(*folders))

    # -- the set ------------------------------------------------------------------------------
    @property
    def skills(self) -> Mapping[str, Skill]:
        """The skills by name, sorted by name (do not mutate)."""
        return self._skills

    def __len__(self) -> int:
        return len(self._skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self._skills.values())

    def __contains__(self, name: object) -> bool:
        return name in self._skills

    def __getitem__(self, name: str) -> Skill:
        return self._skills[name]

    def scoped(self, tool_names: Iterable[str]) -> SkillLibrary:
        """The library of the skills that apply to ``tool_names`` (:func:`skills_for`), kept per
        tool set: an env's resets offer a few distinct sets, and every env of a process shares
        the library."""
        names = _normalize(tool_names)
        scope = self._scopes.get(names)
        if scope is None:
            if len(self._scopes) >= _SCOPES_KEPT:
                self._scopes.clear()
            scope = self._scopes[names] = SkillLibrary(skills_for(names, self._skills))
        return scope

    def descriptions(self, tool_names: Iterable[str] | None = None) -> list[dict[str, str]]:
        """``[{"name": ..., "description": ...}]`` of the skills that apply to ``tool_names``
        (every skill when None), sorted by name: what an agent sees before reading any body.
        Every skill's (None) is made once per library and shared (a
        :class:`~phoneenv.sharing.ReadOnlyList`; do not change its dicts): each env's
        ``info["skills"]`` is that list, not a copy."""
        if tool_names is None:
            if self._described is None:
                self._described = ReadOnlyList(
                    {"name": s.name, "description": s.description} for s in self._skills.values()
                )
            return self._described
        return [{"name": s.name, "description": s.description} for s in skills_for(tool_names, self._skills)]

    def nearest(self, name: str, n: int = 3) -> list[str]:
        """Up to ``n`` skill names closest to ``name`` (difflib ratio ≥ 0.4), best first; when none
        is close, the first ``n`` names."""
        names = list(self._skills)
        return difflib.get_close_matches(name.strip().casefold(), names, n=n, cutoff=0.4) or names[:n]

    # -- the tool -----------------------------------------------------------------------------
    @tool()
    def read(self, name: SkillName) -> SkillText:
        """Read a skill: a step-by-step procedure for one kind of request. Read the one whose
        description fits the request before acting.

        Args:
            name: The skill's name, as listed with the skills.
        """
        skill = self._skills.get(name) or self._skills.get(name.strip().casefold())
        if skill is None:
            raise to_tool_error(not_found("skill", name, candidates=self.nearest(name) or None))
        return {
            "name": skill.name,
            "description": skill.description,
            "tools": list(skill.tools),
            "apps": list(skill.apps),
            "body": skill.body,
        }

    def call(self, arguments: Mapping[str, Any]) -> Feedback:
        """Serve one ``skills.read`` call: validate ``arguments`` against :data:`READ_TOOL`'s
        schema, then read. Never raises: returns the skill (``ok``), ``invalid_arguments`` (with
        path and expected type), or ``not_found`` with the nearest skill names as candidates."""
        try:
            args = READ_TOOL.validator.validate(dict(arguments))
        except ArgumentError as exc:
            return invalid_arguments(READ_TOOL.spec.name, exc, READ_TOOL.spec.parameters)
        try:
            return Feedback(ok=True, result=self.read(**args))
        except ToolError as exc:
            return from_tool_error(exc)


READ_TOOL: ToolDef = build_tool("skills", Domain.DEVICE, SkillLibrary.read)
"""The ``skills.read`` tool: spec (offer it with the other tools), validator, and method
(call ``READ_TOOL.method(library, name=...)``, or :meth:`SkillLibrary.call`)."""
