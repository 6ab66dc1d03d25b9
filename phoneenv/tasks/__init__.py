"""The task suite: ``TaskSpec``s built from parameterised templates, selection, and verification.

    >>> from phoneenv.tasks import select
    >>> len(select("category:tool")) >= 300
    True

Selectors: ``"all"``; ``"category:NAME"``; ``"domain:NAME"``; ``"template:NAME"``;
``"app:NAME"`` (tasks that use the app); ``"split:train|dev|test"`` (fixed by a hash of the task
id, see :func:`split_of`); ``"source:template|generated"``; ``"cross-app"``; an exact id; or an id
glob (``"clock.*"``). Several selectors joined by ``,`` are a union.

The suite is the templates' tasks followed by the generated tasks of the loop directory
(``$PHONEENV_LOOP_DIR``, else ``runs/loop``: its ``tasks.jsonl``, see
:mod:`phoneenv.loop.generated`) that were accepted or approved in review.

The whole suite is built once per process, when first needed. A template task's id
(``clock.set_alarm/0``), a ``template:`` or an ``app:`` selector builds only the templates it
names until then (milliseconds, not seconds): a task is a pure function of its template and
index, so it is the same task either way.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from phoneenv.contract import Category, Domain, TaskSpec

__all__ = [
    "SOURCES",
    "SPLITS",
    "extra_task_id",
    "get_task",
    "load_suite",
    "needed_calls",
    "no_match_message",
    "select",
    "split_of",
]

SPLITS = ("train", "dev", "test")
SOURCES = ("template", "generated")
"""Where a task comes from: a hand-written template, or ``phoneenv tasks propose`` (see :mod:`phoneenv.loop.generated`)."""


def split_of(task_id: str) -> str:
    """The fixed split of a task: ``train`` (80%), ``dev`` (10%) or ``test`` (10%), from the
    first 8 bytes of SHA-256 of its id modulo 100, so a task never changes split when others are
    added or removed."""
    bucket = int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:8], "big") % 100
    return "train" if bucket < 80 else ("dev" if bucket < 90 else "test")


@functools.lru_cache(maxsize=1)
def _templates() -> tuple[TaskSpec, ...]:
    from phoneenv.tasks.templates import all_templates

    tasks: list[TaskSpec] = []
    for tpl in all_templates().values():
        tasks.extend(tpl.tasks())
    return tuple(tasks)


@functools.lru_cache(maxsize=1)
def _template_index() -> dict[str, TaskSpec]:
    return {t.id: t for t in _templates()}


@functools.lru_cache(maxsize=1)
def _template_ids() -> frozenset[str]:
    """Every template task's id, from the templates' names and counts (nothing built)."""
    from phoneenv.tasks.templates import all_templates

    return frozenset(f"{name}/{k}" for name, tpl in all_templates().items() for k in range(tpl.count))


_TEMPLATE_ID = re.compile(r"([a-z][a-z0-9_]*\.[a-z0-9_]+)/(extra-)?(\d+)")
"""A template task's id, ``name/k`` in the suite or ``name/extra-k`` beyond it."""


def extra_task_id(template: str, k: int) -> str:
    """The id of a template's instance ``k`` *beyond the suite* (``k`` ≥ the template's count):
    ``"clock.alarm_off/extra-12"``. :func:`get_task`, :func:`select` and the env build it on
    demand with the template's own builder and seed (:meth:`Template.task`), so it is as
    deterministic as a suite task, but it is in no suite, split or scoreboard: it is for training
    on more instances of a template than the suite holds and holding the suite's own instances
    out (as procedurally generated levels are split). Its reference plan is not proven by the
    suite's checks: keep those whose reference episode succeeds (:func:`rl.sft.reference_traces`
    does).

    Raises:
        KeyError: no template is named ``template``.
        ValueError: ``k`` is an instance the suite holds (use ``template/k``).
    """
    from phoneenv.tasks.templates import all_templates

    tpl = all_templates().get(template)
    if tpl is None:
        raise KeyError(
            no_match_message(f"template:{template}", f"unknown template {template!r}", kind="template", value=template)
        )
    if k < tpl.count:
        raise ValueError(
            f"{template}/{k} is in the suite (instances 0..{tpl.count - 1}); extra instances start at {tpl.count}"
        )
    return f"{template}/extra-{k}"


@functools.lru_cache(maxsize=512)
def _template_task(task_id: str) -> TaskSpec | None:
    """The template task ``task_id`` names, built alone (or taken from the suite once it is
    built), or the instance beyond the suite it names (:func:`extra_task_id`); None when no
    template has that task."""
    m = _TEMPLATE_ID.fullmatch(task_id)
    if m is None:
        return None
    beyond, k = m[2] is not None, int(m[3])
    if not beyond and _templates.cache_info().currsize:
        return _template_index().get(task_id)
    from phoneenv.tasks.templates import all_templates

    tpl = all_templates().get(m[1])
    if tpl is None or (k >= tpl.count) != beyond:
        return None
    return tpl.task(k).model_copy(update={"id": task_id}) if beyond else tpl.task(k)


def _template_tasks(keep: Callable[[Any], bool]) -> list[TaskSpec]:
    """The tasks of the templates ``keep`` accepts, in suite order, built alone unless the suite
    is built; then the generated tasks whose template it names."""
    from phoneenv.tasks.templates import all_templates

    if _templates.cache_info().currsize:
        names = {n for n, tpl in all_templates().items() if keep(tpl)}
        out = [t for t in _templates() if t.template in names]
    else:
        out = [t for tpl in all_templates().values() if keep(tpl) for t in tpl.tasks()]
    return out


def _generated() -> tuple[TaskSpec, ...]:
    from phoneenv.loop.generated import load_generated

    return load_generated(taken=_template_ids())


def _suite() -> tuple[TaskSpec, ...]:
    generated = _generated()
    return _templates() + generated if generated else _templates()


def _forget_apps() -> None:
    """Forget the suite built so far (called by :func:`apps.add_path` when apps join)."""
    for cached in (_templates, _template_index, _template_ids, _template_task, _vocabulary):
        cached.cache_clear()
    _GENERATED_INDEX[:] = [None, {}]


def needed_calls(task: TaskSpec) -> int:
    """The tool calls the task's reference plan makes, ``finish`` calls and confirmations
    with the user (``user.confirm``) not counted; 0 without a plan. Reference plans are the
    shortest way the template author knows, so this is the task's length in calls."""
    return sum(1 for c in task.reference_plan or () if c.name not in ("finish", "user.confirm"))


def load_suite(*, generated: bool = True) -> list[TaskSpec]:
    """Every task of the suite: the templates' (built once per process, in template order), then,
    unless ``generated`` is False, the loop directory's accepted and approved generated tasks."""
    return list(_suite() if generated else _templates())


def _index() -> dict[str, TaskSpec]:
    generated = _generated()
    if not generated:
        return _template_index()
    held, index = _GENERATED_INDEX
    if held is not generated:  # load_generated returns the same tuple until the files change
        index = {**_template_index(), **{t.id: t for t in generated}}
        _GENERATED_INDEX[:] = [generated, index]
    return index


_GENERATED_INDEX: list[Any] = [None, {}]
"""The last generated tuple seen and the suite index built with it."""


def get_task(task_id: str) -> TaskSpec:
    """The task with id ``task_id``. Raises ``KeyError`` naming close ids when there is none."""
    if (one := _template_task(task_id)) is not None:
        return one
    try:
        return _index()[task_id]
    except KeyError:
        import difflib

        near = difflib.get_close_matches(task_id, list(_index()), n=3)
        raise KeyError(f"no task {task_id!r}" + (f"; did you mean {', '.join(near)}?" if near else "")) from None


def select(selector: str) -> list[TaskSpec]:
    """The tasks a selector names, in suite order.

    Raises:
        KeyError: a part is a plain id that no task has; the message suggests close ids and
            selectors (``app:clock`` for ``clock``).
        ValueError: a part is of an unknown kind, names an unknown category, domain, split,
            template or app, or is a glob that matches no id. The message names close matches
            and lists the valid categories, domains, splits, apps and template families (see
            :func:`no_match_message`).
    """
    out: dict[str, TaskSpec] = {}
    for part in (p.strip() for p in selector.split(",")):
        if not part:
            continue
        for t in _select_one(part):
            out.setdefault(t.id, t)
    return list(out.values())


_KINDS = ("category", "domain", "template", "app", "split", "source")


@functools.lru_cache(maxsize=1)
def _vocabulary() -> dict[str, tuple[str, ...]]:
    """The valid values of each selector kind, from the suite."""
    suite = _templates()
    return {
        "category": tuple(c.value for c in Category),
        "domain": tuple(d.value for d in Domain),
        "template": tuple(sorted({t.template for t in suite if t.template})),
        "app": tuple(sorted({a for t in suite for a in t.apps})),
        "split": SPLITS,
        "source": SOURCES,
    }


def close_matches(word: str, candidates: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    return difflib.get_close_matches(word, list(candidates), n=n, cutoff=cutoff)


def _suggestions(word: str, kind: str | None = None) -> list[str]:
    """Selectors close to ``word``: ``kind:VALUE`` for values of ``kind`` (every kind when None)
    and template families as globs (``clock.*``)."""
    vocab = _vocabulary()
    out: list[str] = []
    for k in (kind,) if kind else _KINDS:
        out += [f"{k}:{v}" for v in close_matches(word, vocab[k])]
    if kind in (None, "template"):
        families = sorted({t.split(".")[0] for t in vocab["template"]})
        out += [f"{f}.*" for f in close_matches(word.split(".")[0].rstrip("*?[]"), families, n=2)]
    if kind is None and word not in ("all", "cross-app"):
        out += close_matches(word, ("all", "cross-app"), n=1)
    return list(dict.fromkeys(out))


def no_match_message(
    selector: str, problem: str, *, kind: str | None = None, value: str | None = None, near: Sequence[str] = ()
) -> str:
    """The error text for a selector part that names nothing.

    Args:
        selector: the part that matched nothing (``"template:clock.set_alarn"``).
        problem: what is wrong, one line without suggestions.
        kind: the selector kind the part used (``"template"``), None for an id or a glob.
        value: the part's value (after ``kind:``); default ``selector``.
        near: suggestions to put first (close task ids).

    Returns lines: ``problem`` with the close matches as selectors ("did you mean ...?", values of
    ``kind`` first, then those of other kinds: ``domain:clock`` suggests ``app:clock``), the
    templates of ``value``'s family for a ``template:`` miss, then the valid categories, domains,
    splits, apps and template families, one kind a line.
    """
    vocab = _vocabulary()
    word = value if value is not None else selector
    suggested = list(near) + _suggestions(word, kind)
    if kind is not None:
        suggested += [s for s in _suggestions(word) if s.split(":")[0] != kind][:2]
    near = list(dict.fromkeys(suggested))[:5]
    lines = [problem + (f"; did you mean {', '.join(near)}?" if near else "")]
    if kind == "template" and value:
        family = [t for t in vocab["template"] if t.split(".")[0] == value.split(".")[0]]
        if family:
            lines.append(f"  {value.split('.')[0]} templates: {', '.join(family)}")
    families = sorted({t.split(".")[0] for t in vocab["template"]})
    lines += [
        f"  categories: {', '.join(vocab['category'])}",
        f"  domains: {', '.join(vocab['domain'])}",
        f"  splits: {', '.join(vocab['split'])}",
        f"  sources: {', '.join(vocab['source'])}",
        f"  apps: {', '.join(vocab['app'])}",
        f"  templates: {len(vocab['template'])}, named FAMILY.NAME (`phoneenv tasks stats` lists them); "
        f"families: {', '.join(families)}",
        "  also: all, cross-app, an id (clock.set_alarm/0) or an id glob (clock.*); join several with commas",
    ]
    return "\n".join(lines)


def _select_one(sel: str) -> list[TaskSpec]:
    if (one := _template_task(sel)) is not None:
        return [one]
    kind, _, value = sel.partition(":")
    if kind in ("template", "app") and value:
        from phoneenv.tasks.templates import all_templates

        if kind == "template" and value in all_templates():
            own = _template_tasks(lambda tpl: tpl.name == value)
            return own + [t for t in _generated() if t.template == value]
        if kind == "app" and any(value in tpl.apps for tpl in all_templates().values()):
            own = _template_tasks(lambda tpl: value in tpl.apps)
            return own + [t for t in _generated() if value in t.apps]
    suite = _suite()
    if sel == "all":
        return list(suite)
    if sel == "cross-app":
        return [t for t in suite if t.cross_app]
    if ":" in sel:
        kind, _, value = sel.partition(":")
        vocab = _vocabulary()
        if kind == "category":
            value = value.replace("-", "")  # "sub-agent", as the scoreboard labels it
            if value not in vocab["category"]:
                problem = f"unknown category {value!r}; use one of {', '.join(vocab['category'])}"
                raise ValueError(no_match_message(sel, problem, kind=kind, value=value))
            return [t for t in suite if t.category.value == value]
        if kind == "domain":
            if value not in vocab["domain"]:
                problem = f"unknown domain {value!r}"
                raise ValueError(no_match_message(sel, problem, kind=kind, value=value))
            return [t for t in suite if t.domain.value == value]
        if kind == "template":
            if value not in vocab["template"]:
                raise ValueError(no_match_message(sel, f"unknown template {value!r}", kind=kind, value=value))
            return [t for t in suite if t.template == value]
        if kind == "app":
            if value not in vocab["app"]:
                raise ValueError(no_match_message(sel, f"no task uses an app {value!r}", kind=kind, value=value))
            return [t for t in suite if value in t.apps]
        if kind == "split":
            if value not in SPLITS:
                problem = f"unknown split {value!r}; use one of {', '.join(SPLITS)}"
                raise ValueError(no_match_message(sel, problem, kind=kind, value=value))
            return [t for t in suite if split_of(t.id) == value]
        if kind == "source":
            if value not in SOURCES:
                problem = f"unknown source {value!r}; use one of {', '.join(SOURCES)}"
                raise ValueError(no_match_message(sel, problem, kind=kind, value=value))
            return [t for t in suite if t.source == value]
        problem = f"unknown selector kind {kind!r}; use category:, domain:, template:, app:, split:, source:"
        near = [f"{k}:{value}" for k in close_matches(kind, _KINDS, n=1)]
        raise ValueError(no_match_message(sel, problem, value=value, near=near))
    if any(ch in sel for ch in "*?["):
        found = [t for t in suite if fnmatch.fnmatchcase(t.id, sel)]
        if not found:
            raise ValueError(no_match_message(sel, f"no task id matches {sel!r}", value=sel))
        return found
    if sel in _index():
        return [_index()[sel]]
    near = close_matches(sel, _index(), n=3)
    raise KeyError(no_match_message(sel, f"no task {sel!r}", value=sel.split("/")[0], near=near))


from phoneenv.tasks import answers as _answers  # noqa: E402, F401  (registers the states/consistent conditions)
