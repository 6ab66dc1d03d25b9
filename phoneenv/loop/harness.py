"""Harness versions: the skills, planner instructions and data-mix weights a round evaluates with.

A harness version is a folder ``<loop>/harness/<name>/`` (:data:`phoneenv.loop.HARNESS_DIR`)::

    harness.json      {"name", "parent", "created_at", "edits": [review item ids], "mix": {group: weight}}
    skills/           <app>/<skill-name>/SKILL.md: skills added to, or overriding, the shipped ones
    instructions.md   text appended to the planner's system prompt (may be absent or empty)

``v0`` is what ships: no extra skill, no instruction, the default mix (every weight 1). It needs no
folder: :func:`load_harness` gives it whether or not ``harness/v0`` exists. A new version is made
from its parent by :func:`create_version` (``phoneenv evolve apply`` does it from approved review
items): the parent's skills and instructions are copied, then the edits applied. Versions are
named ``v0``, ``v1``, ... in creation order; ``edits`` lists the review items each version
applied itself (its parent's are in the parent's ``harness.json``).

``phoneenv eval --harness NAME|DIR`` plays with a version: the env's skills are the shipped ones
with the version's ``skills/`` laid over them (:meth:`Harness.skill_library`), the LLM planner's
system prompt gets ``instructions.md`` and lists the version's own skills
(:meth:`Harness.planner_kwargs`), and the version's name goes into every trace, ``run.json`` and
the scoreboard.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from phoneenv.errors import PhoneEnvError
from phoneenv.loop import HARNESS_DIR, loop_dir

__all__ = [
    "BASE_VERSION",
    "INSTRUCTIONS_FILE",
    "MANIFEST_FILE",
    "SKILLS_DIR",
    "Harness",
    "HarnessError",
    "HarnessManifest",
    "applied_edits",
    "create_version",
    "harness_root",
    "latest_version",
    "load_harness",
    "versions",
]

BASE_VERSION = "v0"
"""The version that ships: no extra skills, no instructions, default mix."""
MANIFEST_FILE = "harness.json"
SKILLS_DIR = "skills"
INSTRUCTIONS_FILE = "instructions.md"
_NAME = re.compile(r"^v(\d+)$")
_SKILL_PATH = re.compile(r"^[A-Za-z0-9_]+/[a-z0-9]+(-[a-z0-9]+)*/SKILL\.md$")


class HarnessError(PhoneEnvError, ValueError):
    """A harness version that cannot be loaded or made (unknown name, bad ``harness.json``,
    a skill that does not parse, an edit that conflicts); the message says which and why."""


class HarnessManifest(BaseModel):
    """``harness.json``: the version's ``name``, its ``parent`` (None for v0), ``created_at``
    (ISO 8601 UTC), the review item ids it applied (``edits``) and its data-mix weights (``mix``:
    ``{"capability:send": 2.0, "template:x": 0.5, ...}``, see :func:`rl.sampler.config_from_mix`)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    parent: str | None = None
    created_at: str
    edits: list[Annotated[int, Field(ge=1)]] = Field(default_factory=list)  # review item ids
    mix: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] = Field(default_factory=dict)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def harness_root(loop: str | Path | None = None) -> Path:
    """``<loop>/harness`` (:func:`phoneenv.loop.loop_dir`); not created here."""
    return loop_dir(loop) / HARNESS_DIR


class Harness:
    """One loaded harness version.

    Attributes:
        manifest: its :class:`HarnessManifest`.
        path: its folder, or None for ``v0`` without a folder.
        instructions: the text of ``instructions.md`` ("" when absent).

    Raises:
        HarnessError: an ``instructions.md`` that cannot be read (not UTF-8, no permission).
    """

    def __init__(self, manifest: HarnessManifest, path: Path | None) -> None:
        self.manifest = manifest
        self.path = path
        file = None if path is None else path / INSTRUCTIONS_FILE
        try:
            self.instructions = file.read_text(encoding="utf-8").strip() if file is not None and file.is_file() else ""
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.reason if isinstance(exc, UnicodeDecodeError) else exc.strerror or exc
            raise HarnessError(f"{file}: cannot be read ({reason}); fix or remove it") from None

    @property
    def name(self) -> str:
        """The version's name (``v0``, ``v1``...)."""
        return self.manifest.name

    @property
    def skills_dir(self) -> Path | None:
        """The folder of the version's own skills, None when it has none."""
        if self.path is None:
            return None
        folder = self.path / SKILLS_DIR
        return folder if folder.is_dir() and any(folder.rglob("SKILL.md")) else None

    def own_skills(self) -> dict[str, Any]:
        """The version's own skills (added or overriding), ``{name: Skill}``.

        Raises:
            phoneenv.harness.skills.SkillError: a malformed ``SKILL.md``.
        """
        from phoneenv.harness.skills import load_skills

        return load_skills(self.skills_dir) if self.skills_dir is not None else {}

    def skill_library(self) -> Any:
        """The env's skills under this version: the shipped skills, each replaced by the version's
        skill of the same name, plus the version's new ones (a
        :class:`~phoneenv.harness.skills.SkillLibrary`, for ``PhonePlanEnv(skills=...)``)."""
        from phoneenv.harness.skills import SkillLibrary, load_skills

        return SkillLibrary({**load_skills(), **self.own_skills()})

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the env: ``{"skills": ...}`` for a version with skills of its own,
        ``{}`` otherwise (the env's default, the shipped skills)."""
        return {"skills": self.skill_library()} if self.skills_dir is not None else {}

    def planner_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :class:`~agents.planner.LLMPlanner`: ``instructions`` and
        ``list_skills`` (the names of the version's own skills, so the model is told of them); ``{}``
        for a version with neither, so v0's prompt is the one SFT and RL train on."""
        out: dict[str, Any] = {}
        if self.instructions:
            out["instructions"] = self.instructions
        names = sorted(self.own_skills())
        if names:
            out["list_skills"] = names
        return out

    def __repr__(self) -> str:
        return f"Harness({self.name!r}, parent={self.manifest.parent!r}, edits={self.manifest.edits})"


def _base() -> Harness:
    return Harness(HarnessManifest(name=BASE_VERSION, created_at="1970-01-01T00:00:00+00:00"), None)


def _read(folder: Path) -> Harness:
    from phoneenv.tracefiles import read_json_file

    file = folder / MANIFEST_FILE
    try:
        manifest = HarnessManifest.model_validate(read_json_file(file))
    except FileNotFoundError:
        raise HarnessError(f"{folder}: not a harness version (no {MANIFEST_FILE})") from None
    except ValidationError as exc:
        problem = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'file'}: {e['msg']}" for e in exc.errors())
        raise HarnessError(f"{file}: not a harness manifest ({problem})") from None
    except ValueError as exc:  # a folder, not UTF-8, not JSON (read_json_file names the file)
        raise HarnessError(f"{exc}; not a harness manifest") from None
    return Harness(manifest, folder)


def versions(loop: str | Path | None = None) -> list[Harness]:
    """Every version of the loop, oldest first: ``v0`` (always, with or without a folder), then
    ``v1``, ``v2``... by number.

    Raises:
        HarnessError: a version folder with a malformed ``harness.json``.
    """
    root = harness_root(loop)
    found: dict[int, Harness] = {0: _base()}
    if root.is_dir():
        for folder in root.iterdir():
            m = _NAME.match(folder.name)
            if m and (folder / MANIFEST_FILE).exists():
                found[int(m.group(1))] = _read(folder)
    return [found[n] for n in sorted(found)]


def latest_version(loop: str | Path | None = None) -> Harness:
    """The newest version (``v0`` when none was made)."""
    return versions(loop)[-1]


def load_harness(spec: str | Path, loop: str | Path | None = None) -> Harness:
    """A version by name (``v0``, ``v3``, ``latest``) in ``<loop>/harness``, or by folder path
    (any folder holding a ``harness.json``).

    Raises:
        HarnessError: no such version (the known ones named), or a malformed ``harness.json``.
    """
    text = str(spec)
    if text == "latest":
        return latest_version(loop)
    if _NAME.match(text):
        folder = harness_root(loop) / text
        if (folder / MANIFEST_FILE).exists():
            return _read(folder)
        if text == BASE_VERSION:
            return _base()
        known = ", ".join(h.name for h in versions(loop))
        raise HarnessError(f"no harness version {text!r} in {harness_root(loop)} (known: {known})")
    folder = Path(spec)
    if folder.is_dir():
        return _read(folder)
    raise HarnessError(f"{text!r} is neither a harness version name (v0, v1, ..., latest) nor a harness folder")


def applied_edits(loop: str | Path | None = None) -> set[int]:
    """The review item ids some version of the loop has applied."""
    return {i for h in versions(loop) for i in h.manifest.edits}


def _check_skill_path(path: str) -> None:
    if not _SKILL_PATH.match(path) or ".." in Path(path).parts:
        raise HarnessError(f"skill path {path!r} must be <app>/<skill-name>/SKILL.md")


def create_version(
    loop: str | Path | None = None,
    *,
    parent: Harness | None = None,
    skills: dict[str, str] | None = None,
    instructions: str | None = None,
    mix: dict[str, float] | None = None,
    edits: list[int] | None = None,
) -> Harness:
    """Make the next version (``v<n+1>``) from ``parent`` (default: the latest) and write it.

    Args:
        loop: the loop directory.
        parent: the version to start from: its skills folder and instructions are copied, its mix
            kept.
        skills: ``{"<app>/<name>/SKILL.md": text}`` written over the copy (each must parse as a
            skill whose name is its folder's).
        instructions: the new ``instructions.md`` text (None: the parent's).
        mix: data-mix weights laid over the parent's (``{group: weight >= 0}``).
        edits: the review item ids this version applies.

    Returns:
        The new version.

    Raises:
        HarnessError: a bad skill path or text, a negative or non-finite weight. Nothing is left
        behind on error (the version is built in a temporary folder and renamed into place).
    """
    import math

    from phoneenv.harness.skills import SkillError, parse_skill

    parent = parent or latest_version(loop)
    root = harness_root(loop)
    root.mkdir(parents=True, exist_ok=True)
    number = max(int(_NAME.match(h.name).group(1)) for h in versions(loop)) + 1  # type: ignore[union-attr]
    name = f"v{number}"
    merged_mix = dict(parent.manifest.mix)
    for group, weight in (mix or {}).items():
        if not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
            raise HarnessError(f"mix weight of {group!r} must be a finite number >= 0, not {weight!r}")
        merged_mix[group] = float(weight)
    tmp = root / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        if parent.skills_dir is not None:
            shutil.copytree(parent.skills_dir, tmp / SKILLS_DIR)
        for rel, text in (skills or {}).items():
            _check_skill_path(rel)
            target = tmp / SKILLS_DIR / rel
            try:
                parse_skill(text, target)
            except SkillError as exc:
                raise HarnessError(f"skill {rel}: {exc.problem}") from None
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        text = parent.instructions if instructions is None else instructions.strip()
        if text:
            (tmp / INSTRUCTIONS_FILE).write_text(text + "\n", encoding="utf-8")
        manifest = HarnessManifest(
            name=name, parent=parent.name, created_at=_now(), edits=sorted(set(edits or [])), mix=merged_mix
        )
        (tmp / MANIFEST_FILE).write_text(json.dumps(manifest.model_dump(), indent=2) + "\n", encoding="utf-8")
        try:  # every skill loads together with the shipped ones (no two of one name in the version)
            Harness(manifest, tmp).skill_library()
        except SkillError as exc:
            raise HarnessError(f"the new version's skills do not load: {exc}") from None
        tmp.rename(root / name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _read(root / name)
