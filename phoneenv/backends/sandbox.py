"""The in-process sandbox phone: apps as Python state machines, resettable in microseconds.

    >>> from phoneenv.backends.sandbox import SandboxBackend
    >>> from phoneenv.contract import TaskSpec, AnswerCriterion
    >>> b = SandboxBackend()
    >>> b.reset(TaskSpec(id="t", domain="time", goal="What time is it?", criteria=[AnswerCriterion(equals="09:00")]))
    >>> b.call("clock.now", {}).result["local_time"]
    '2026-11-29T09:00:01'

Calls run through :class:`~phoneenv.backends.base.PhoneBackend`'s pipeline; each advances the
phone clock by :data:`~phoneenv.phone.SECONDS_PER_CALL` seconds, so timestamps are deterministic.
Fixture states are built once per process per task and shared between backends (records are
immutable, tables copy-on-write), so ``reset`` is a snapshot restore: O(tables), whatever the
number of records.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from phoneenv.backends.base import PhoneBackend
from phoneenv.contract import Fixtures, TaskSpec
from phoneenv.phone import Phone, app_classes, build_fixture_state
from phoneenv.state import Snapshot
from phoneenv.tools import ToolDef

__all__ = ["SandboxBackend"]

_FIXTURE_CACHE_SIZE = 4096
_fixture_cache: OrderedDict[int, tuple[Fixtures, Snapshot, tuple[str, ...], dt.tzinfo]] = OrderedDict()
_tool_cache: dict[tuple[str, ...], dict[str, ToolDef]] = {}


class SandboxBackend(PhoneBackend):
    """The in-process phone behind the :class:`Backend` interface.

    Args:
        apps: restrict to these app names (default: every app in :mod:`apps`).
        screen_size: (width, height) of screenshots in pixels.
    """

    name = "sandbox"

    def __init__(self, apps: list[str] | None = None, screen_size: tuple[int, int] = (360, 640)) -> None:
        classes = app_classes()
        if apps is not None:
            unknown = set(apps) - set(classes)
            if unknown:
                raise ValueError(f"unknown apps {sorted(unknown)}; known: {sorted(classes)}")
            classes = {k: v for k, v in classes.items() if k in apps}
        self._classes = classes
        self.phone = Phone(classes)
        self._installed: tuple[str, ...] = tuple(classes)
        self._tools = self._tools_for(self._installed)
        self.screen_size = screen_size
        self.phone.screen_size = screen_size

    # -- tools ----------------------------------------------------------------------------------
    def _tools_for(self, installed: tuple[str, ...]) -> dict[str, ToolDef]:
        """Tools of the installed apps (system apps included), by name."""
        key = tuple(sorted(installed))
        tools = _tool_cache.get(key)
        if tools is None:
            tools = {td.spec.name: td for name in key for td in self._classes[name].tool_defs()}
            _tool_cache[key] = tools
        return tools

    # -- lifecycle ------------------------------------------------------------------------------
    def reset(self, task: TaskSpec) -> None:
        """Restore ``task``'s fixture snapshot (built once per process, then cached).

        Raises ``ValueError`` when a seeded record breaks its app's record schema (naming the
        task, table, record and field: a task written by hand is checked here, a template's
        when it is built) or the fixtures are otherwise malformed."""
        fx = task.fixtures
        hit = _fixture_cache.get(id(fx))
        if hit is None or hit[0] is not fx:
            try:
                snap, installed = build_fixture_state(fx, app_classes())
            except ValueError as exc:
                raise ValueError(f"task {task.id}: {exc}") from None
            hit = (fx, snap, installed, ZoneInfo(fx.timezone))
            _fixture_cache[id(fx)] = hit
            if len(_fixture_cache) > _FIXTURE_CACHE_SIZE:
                _fixture_cache.popitem(last=False)
        _, snap, installed, tz = hit
        for name in installed:
            if name not in self._classes:
                raise ValueError(f"task {task.id!r} needs app {name!r}, which this backend leaves out")
        self.phone.state.restore(snap)
        self.phone.tz = tz
        self.phone.fixtures = fx
        if installed != self._installed:
            self._installed = installed
            self._tools = self._tools_for(installed)

    def implied_records(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """Every installed app's ``implied`` records, by ``<app>.<table>``."""
        return {
            f"{name}.{t}": records for name in self._installed for t, records in self._classes[name].implied.items()
        }

    def snapshot(self) -> Snapshot:
        """A snapshot of the whole phone (O(tables): the tables are shared, copy-on-write)."""
        return self.phone.state.snapshot()

    def restore(self, snapshot: Snapshot) -> None:
        """Return the phone to ``snapshot``."""
        self.phone.state.restore(snapshot)

    def tables(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """The phone's tables, live (read-only by convention)."""
        return self.phone.state.tables

    def frozen_tables(self) -> dict[str, Mapping[str, Mapping[str, Any]]]:
        """The tables as they are now, shared, not copied (O(tables)): the state's tables are
        copy-on-write, so a later write copies the table it changes first."""
        return self.phone.state.snapshot().tables  # type: ignore[return-value]

    def set_clock(self, seconds: float) -> None:
        """Move the phone clock to ``seconds`` (epoch) if that is later; a router keeps the
        worlds of one episode on one clock this way."""
        meta = self.phone.state.meta
        if seconds > meta["now"]:
            meta["now"] = seconds

    def screenshot(self) -> np.ndarray:
        """The foreground app's screen, ``uint8`` (H, W, 3), drawn with Pillow."""
        from phoneenv.screen import render_phone

        return render_phone(self.phone, self.screen_size)

    def screen_text(self) -> str:
        """The foreground app's screen as text: the rows :meth:`screenshot` draws."""
        from phoneenv.screen import render_phone_text

        return render_phone_text(self.phone, self.screen_size)
