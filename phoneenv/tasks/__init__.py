"""The task suite: ``TaskSpec``s built from parameterised templates, selection, and verification.

    >>> from phoneenv.tasks import select
    >>> len(select("category:tool")) >= 300
    True

Selectors: ``"all"``; ``"category:NAME"``; ``"domain:NAME"``; ``"template:NAME"``;
``"app:NAME"`` (tasks that use the app); ``"split:train|dev|test"`` (fixed by a hash of the task
id, see :func:`split_of`); ``"cross-app"``; an exact id; or an id glob (``"clock.*"``). Several
selectors joined by ``,`` are a union.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib

from phoneenv.contract import Category, Domain, TaskSpec

__all__ = ["SPLITS", "get_task", "load_suite", "needed_calls", "select", "split_of"]

SPLITS = ("train", "dev", "test")


def split_of(task_id: str) -> str:
    """The fixed split of a task: ``train`` (80%), ``dev`` (10%) or ``test`` (10%), from the
    first 8 bytes of SHA-256 of its id modulo 100, so a task never changes split when others are
    added or removed."""
    bucket = int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:8], "big") % 100
    return "train" if bucket < 80 else ("dev" if bucket < 90 else "test")


@functools.lru_cache(maxsize=1)
def _suite() -> tuple[TaskSpec, ...]:
    from phoneenv.tasks.templates import all_templates

    tasks: list[TaskSpec] = []
    for tpl in all_templates().values():
        tasks.extend(tpl.tasks())
    return tuple(tasks)


def needed_calls(task: TaskSpec) -> int:
    """The tool calls the task's reference plan makes, ``finish`` calls and confirmations
    with the user (``user.confirm``) not counted; 0 without a plan. Reference plans are the
    shortest way the template author knows, so this is the task's length in calls."""
    return sum(1 for c in task.reference_plan or () if c.name not in ("finish", "user.confirm"))


def load_suite() -> list[TaskSpec]:
    """Every task of the built-in suite (built once per process, in template order)."""
    return list(_suite())


@functools.lru_cache(maxsize=1)
def _index() -> dict[str, TaskSpec]:
    return {t.id: t for t in _suite()}


def get_task(task_id: str) -> TaskSpec:
    """The task with id ``task_id``. Raises ``KeyError`` naming close ids when there is none."""
    try:
        return _index()[task_id]
    except KeyError:
        import difflib

        near = difflib.get_close_matches(task_id, list(_index()), n=3)
        raise KeyError(f"no task {task_id!r}" + (f"; did you mean {', '.join(near)}?" if near else "")) from None


def select(selector: str) -> list[TaskSpec]:
    """The tasks a selector names, in suite order. Raises ``KeyError`` for an unknown exact id
    and ``ValueError`` for an unknown selector kind."""
    out: dict[str, TaskSpec] = {}
    for part in (p.strip() for p in selector.split(",")):
        if not part:
            continue
        for t in _select_one(part):
            out.setdefault(t.id, t)
    return list(out.values())


def _select_one(sel: str) -> list[TaskSpec]:
    suite = _suite()
    if sel == "all":
        return list(suite)
    if sel == "cross-app":
        return [t for t in suite if t.cross_app]
    if ":" in sel:
        kind, _, value = sel.partition(":")
        if kind == "category":
            value = value.replace("-", "")  # "sub-agent", as the scoreboard labels it
            if value not in {c.value for c in Category}:
                raise ValueError(f"unknown category {value!r}; use one of {', '.join(c.value for c in Category)}")
            return [t for t in suite if t.category.value == value]
        if kind == "domain":
            if value not in {d.value for d in Domain}:
                raise ValueError(f"unknown domain {value!r}; use one of {', '.join(d.value for d in Domain)}")
            return [t for t in suite if t.domain.value == value]
        if kind == "template":
            return [t for t in suite if t.template == value]
        if kind == "app":
            return [t for t in suite if value in t.apps]
        if kind == "split":
            if value not in SPLITS:
                raise ValueError(f"unknown split {value!r}; use one of {', '.join(SPLITS)}")
            return [t for t in suite if split_of(t.id) == value]
        raise ValueError(f"unknown selector kind {kind!r}; use category:, domain:, template:, app:, split:")
    if any(ch in sel for ch in "*?["):
        return [t for t in suite if fnmatch.fnmatchcase(t.id, sel)]
    return [get_task(sel)]
