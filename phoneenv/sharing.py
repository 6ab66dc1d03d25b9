"""What every env of a process shares: tool lists rendered once, read-only; and :func:`freeze_gc`.

An env offers the same tools as every other env of the process running the same backend (the
specs are module-level objects), so their OpenAI rendering is built once per set of specs
(:func:`openai_tools`) and handed to every env, every frame and every consumer as the same
object. Shared objects must not change under anyone: the list and its entries are
:class:`ReadOnlyList` and :class:`ReadOnlyDict`, which raise ``TypeError`` on any in-place change
and whose copies (``list(x)``, ``dict(x)``, ``copy.copy``, ``copy.deepcopy``, pickling) are plain,
mutable ``list``/``dict`` objects. (The ``parameters`` schema inside an entry is the spec's own
dict, shared as it always was: treat it as read-only too.)
"""

from __future__ import annotations

import copy
import gc
from collections.abc import Iterable
from typing import Any, NoReturn

from phoneenv.contract import ToolSpec

__all__ = ["ReadOnlyDict", "ReadOnlyList", "freeze_gc", "full_parameters", "openai_tools", "shared_specs"]

_MAX_LISTS = 512
"""Distinct tool lists kept (a backend's set, each harness variant, each sub-agent frame's)."""
_MAX_ENTRIES = 8192
"""Distinct specs whose rendering is kept."""


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(
        f"this {type(self).__name__} is shared by every env of the process and cannot change; "
        "change a copy (list(tools), dict(entry))"
    )


class ReadOnlyList(list):  # type: ignore[type-arg]
    """A ``list`` that refuses in-place changes (``TypeError``); compares, iterates, indexes,
    JSON-serialises like a list. Copies and pickles are plain lists."""

    __slots__ = ()
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return copy.deepcopy(list(self), memo)


class ReadOnlyDict(dict):  # type: ignore[type-arg]
    """A ``dict`` that refuses in-place changes (``TypeError``); reads and JSON-serialises like
    a dict. Copies and pickles are plain dicts."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    pop = popitem = clear = update = setdefault = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        return copy.deepcopy(dict(self), memo)


_entries: dict[int, tuple[ToolSpec, ReadOnlyDict]] = {}
_lists: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], ReadOnlyList]] = {}
_spec_lists: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], ReadOnlyList]] = {}


def shared_specs(specs: Iterable[ToolSpec]) -> ReadOnlyList:
    """``specs`` as one :class:`ReadOnlyList` shared by every caller that passes the same spec
    objects in the same order (as :func:`openai_tools` shares their rendering): an env's tool
    lists cost a lookup, not a list of ~260 references per env. Same objects, same list: an env
    that compares lists by identity sees a change exactly when the tools change."""
    held = tuple(specs)
    key = tuple(map(id, held))
    hit = _spec_lists.get(key)  # a hit holds the objects with these ids, so they are these specs
    if hit is not None:
        return hit[1]
    shared = ReadOnlyList(held)
    if len(_spec_lists) >= _MAX_LISTS:
        _spec_lists.clear()
    _spec_lists[key] = (held, shared)
    return shared


def _entry(spec: ToolSpec) -> ReadOnlyDict:
    """``spec.to_openai()`` as a read-only dict, built once per spec object."""
    hit = _entries.get(id(spec))  # a hit holds the spec with this id: this one
    if hit is not None:
        return hit[1]
    rendered = spec.to_openai()
    entry = ReadOnlyDict(rendered, function=ReadOnlyDict(rendered["function"]))
    if len(_entries) >= _MAX_ENTRIES:
        _entries.clear()
        _full.clear()
    _entries[id(spec)] = (spec, entry)  # the spec is kept, so its id is not reused meanwhile
    params = rendered["function"]["parameters"]
    _full[id(params)] = (params, spec)
    return entry


_full: dict[int, tuple[dict[str, Any], ToolSpec]] = {}


def full_parameters(parameters: Any) -> dict[str, Any] | None:
    """The full ``parameters`` schema (:attr:`ToolSpec.parameters`, every limit validation
    enforces) of the tool whose offered rendering ``parameters`` is: the ``parameters`` object of
    an entry :func:`openai_tools` made in this process (also through a shallow copy of the entry
    or its ``function``, as a renaming agent makes). None for any other object (a copy made by
    pickling or JSON, a hand-written tool). Constrained decoding uses it, so that a grammar holds
    a call to the patterns and bounds the compact rendering leaves out of the prompt."""
    hit = _full.get(id(parameters))
    if hit is None or hit[0] is not parameters:
        return None
    return hit[1].parameters


def openai_tools(specs: Iterable[ToolSpec]) -> ReadOnlyList:
    """The tools ``specs`` in OpenAI ``tools`` format (``ToolSpec.to_openai``, dotted names), as
    one :class:`ReadOnlyList` of :class:`ReadOnlyDict` entries shared by every caller that passes
    the same spec objects in the same order (the same list object: an env announces its tools
    when the object changes). Cost: O(len(specs)) to look up, once per distinct list to build."""
    specs = tuple(specs)
    key = tuple(map(id, specs))
    hit = _lists.get(key)  # a hit holds the objects with these ids, so they are these specs
    if hit is not None:
        return hit[1]
    tools = ReadOnlyList(_entry(s) for s in specs)
    if len(_lists) >= _MAX_LISTS:
        _lists.clear()
    _lists[key] = (specs, tools)
    return tools


def freeze_gc() -> int:
    """Move every object alive now into the garbage collector's permanent generation
    (:func:`gc.freeze`, after a :func:`gc.collect`); returns how many objects were frozen.

    Call it once after set-up (envs made, tasks and models loaded) and before a long step loop:
    the collector then stops re-scanning the long-lived objects (task suites, tool specs, the
    envs' worlds) at every full collection, which took 14-36% of a step loop's CPU. Frozen objects
    are never collected, so freeze after set-up, not in a loop; :func:`gc.unfreeze` undoes it.
    Objects made later (each episode's steps and traces) are collected as usual. In a process
    that forks workers (``AsyncVectorEnv``), freezing before the fork also keeps the children
    from touching (and so copying) the parent's pages.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
