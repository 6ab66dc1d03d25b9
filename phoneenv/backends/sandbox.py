"""The in-process sandbox phone: apps as Python state machines, resettable in microseconds.

    >>> from phoneenv.backends.sandbox import SandboxBackend
    >>> from phoneenv.contract import TaskSpec, AnswerCriterion
    >>> b = SandboxBackend()
    >>> b.reset(TaskSpec(id="t", domain="time", goal="What time is it?", criteria=[AnswerCriterion(equals="09:00")]))
    >>> b.call("clock.now", {}).result["local_time"]
    '2026-11-29T09:00:01'

Every call advances the phone clock by :data:`SECONDS_PER_CALL` seconds, so timestamps are
deterministic. Fixture states are built once per process per task and shared between backends
(records are immutable), so ``reset`` is a snapshot restore: O(records) pointer copies.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from phoneenv.app import App
from phoneenv.backends.base import Backend
from phoneenv.contract import Feedback, Fixtures, TaskSpec, ToolSpec
from phoneenv.harness import feedback
from phoneenv.state import PhoneState, Snapshot
from phoneenv.tools import ArgumentValidator, ToolError

__all__ = ["SECONDS_PER_CALL", "Phone", "SandboxBackend", "app_classes"]

log = logging.getLogger(__name__)

SECONDS_PER_CALL = 1.0
"""Simulated seconds the phone clock advances per tool call."""

_FIXTURE_CACHE_SIZE = 4096


def app_classes() -> dict[str, type[App]]:
    """All sandbox app classes by name (imports :mod:`apps` lazily)."""
    from apps import APP_CLASSES

    return APP_CLASSES


class Phone:
    """The sandbox device: one :class:`PhoneState`, the app instances bound to it, the timezone,
    and the simulated user's answers and the credential vault from the task's fixtures."""

    def __init__(self, classes: Mapping[str, type[App]]) -> None:
        self.apps: dict[str, App] = {name: cls(self) for name, cls in classes.items()}
        self.state = PhoneState()
        self.tz: dt.tzinfo = dt.timezone.utc
        self.fixtures = Fixtures()
        self.screen_size: tuple[int, int] = (360, 640)

    def local_now(self) -> dt.datetime:
        """The phone's local time (naive datetime in the phone's timezone)."""
        return dt.datetime.fromtimestamp(self.state.meta["now"], self.tz).replace(tzinfo=None)

    def notify(self, app: str, title: str, text: str) -> None:
        """Post a notification (table ``system.notifications``)."""
        st = self.state
        rid = st.new_id("system.notifications", "ntf_")
        when = dt.datetime.fromtimestamp(st.meta["now"], self.tz).replace(tzinfo=None)
        st.insert(
            "system.notifications",
            {
                "id": rid,
                "app": app,
                "title": title,
                "text": text,
                "time": when.isoformat(timespec="seconds"),
                "read": False,
            },
        )

    def permission_granted(self, app: str, permission: str) -> bool:
        """Whether ``app`` holds runtime ``permission`` now."""
        rec = self.state.get("system.permissions", f"{app}/{permission}")
        return bool(rec and rec["granted"])

    def signed_in(self, app: str) -> bool:
        """Whether ``app``'s account is signed in now."""
        rec = self.state.get("system.accounts", app)
        return bool(rec and rec["signed_in"])


@dataclass(frozen=True)
class _Entry:
    spec: ToolSpec
    validator: ArgumentValidator
    method: Any


def build_fixture_state(fixtures: Fixtures, classes: Mapping[str, type[App]]) -> tuple[Snapshot, tuple[str, ...]]:
    """Build the phone state a task starts from: seeded records plus system tables.

    Returns the snapshot and the installed app names. Raises ``ValueError`` for an unknown app,
    a bad timezone or clock, or malformed records.
    """
    installed = tuple(fixtures.installed_apps) if fixtures.installed_apps is not None else tuple(classes)
    for name in installed:
        if name not in classes:
            raise ValueError(f"fixtures install unknown app {name!r}; known: {sorted(classes)}")
    try:
        tz = ZoneInfo(fixtures.timezone)
        local = dt.datetime.fromisoformat(fixtures.clock)
    except Exception as exc:  # zoneinfo raises several types
        raise ValueError(f"bad clock/timezone in fixtures: {exc}") from exc
    now = local.replace(tzinfo=tz).timestamp() if local.tzinfo is None else local.timestamp()
    state = PhoneState(fixtures.records, now=now)
    apps_t = state.table("system.apps")
    perms = state.table("system.permissions")
    for name in installed:
        cls = classes[name]
        apps_t[name] = {"id": name, "name": name, "title": cls.title, "package": cls.package}
        declared = fixtures.permissions.get(name, {})
        for perm in cls.permissions:
            perms[f"{name}/{perm}"] = {
                "id": f"{name}/{perm}",
                "app": name,
                "permission": perm,
                "granted": declared.get(perm, True),
            }
        for perm in declared:
            if perm not in cls.permissions:
                raise ValueError(f"fixtures set permission {perm!r} that app {name!r} does not declare")
    accounts = state.table("system.accounts")
    for app, acc in fixtures.accounts.items():
        accounts[app] = {
            "id": app,
            "app": app,
            "account": acc["account"],
            "signed_in": bool(acc.get("signed_in", False)),
        }
    for name in installed:
        if classes[name].requires_account and name not in accounts:
            accounts[name] = {"id": name, "app": name, "account": None, "signed_in": False}
    state.table("system.notifications")
    state.meta["view"] = None
    state.meta["foreground"] = "launcher"
    return state.snapshot(), installed


_fixture_cache: OrderedDict[int, tuple[Fixtures, Snapshot, tuple[str, ...], dt.tzinfo]] = OrderedDict()
_tool_cache: dict[tuple[str, ...], dict[str, _Entry]] = {}


class SandboxBackend(Backend):
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
        self._tools: dict[str, _Entry] = self._tools_for(self._installed)
        self.screen_size = screen_size
        self.phone.screen_size = screen_size

    # -- tools ----------------------------------------------------------------------------------
    def _tools_for(self, installed: tuple[str, ...]) -> dict[str, _Entry]:
        key = tuple(sorted(installed))
        tools = _tool_cache.get(key)
        if tools is None:
            tools = {}
            for name in key:
                for td in self._classes[name].tool_defs():
                    tools[td.spec.name] = _Entry(td.spec, td.validator, td.method)
            _tool_cache[key] = tools
        return tools

    def tools(self) -> Mapping[str, _Entry]:
        """Tools of the installed apps (system apps included), by name."""
        return self._tools

    # -- lifecycle ------------------------------------------------------------------------------
    def reset(self, task: TaskSpec) -> None:
        """Restore ``task``'s fixture snapshot (built once per process, then cached).

        Raises ``ValueError`` when a seeded record breaks its app's record schema (naming the
        task, table, record and field: a task written by hand is checked here, a template's
        when it is built) or the fixtures are otherwise malformed."""
        fx = task.fixtures
        hit = _fixture_cache.get(id(fx))
        if hit is None or hit[0] is not fx:
            from phoneenv.tasks.schemas import check_fixtures

            check_fixtures(task)
            snap, installed = build_fixture_state(fx, app_classes())
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

    def call(self, name: str, arguments: dict[str, Any]) -> Feedback:
        """Run tool ``name``: permission and login checks, then the app method.

        Never raises: a :class:`~phoneenv.tools.ToolError` becomes its feedback; any other
        exception is logged and returned as ``internal_error`` (an infrastructure error).
        """
        entry = self._tools.get(name)
        if entry is None:
            return feedback.unknown_tool(name, [e.spec for e in self._tools.values()])
        phone = self.phone
        meta = phone.state.meta
        meta["now"] += SECONDS_PER_CALL
        spec = entry.spec
        app = spec.app
        if spec.permissions:
            for perm in spec.permissions:
                if not phone.permission_granted(app, perm):
                    return feedback.permission_denied(app, perm)
        if spec.requires_login and not phone.signed_in(app):
            acc = phone.state.get("system.accounts", app)
            return feedback.login_required(app, acc["account"] if acc else None)
        if not phone.apps[app].system:
            meta["foreground"] = app
        try:
            result = entry.method(phone.apps[app], **arguments)
        except ToolError as exc:
            return exc.feedback(spec.parameters)
        except Exception:
            log.exception("tool %s raised", name)
            return feedback.internal_error(name, "the sandbox")
        if spec.returns_image:
            return Feedback(ok=True, result=result, image=self.screenshot())
        return Feedback(ok=True, result=result)

    def transient_tables(self) -> tuple[str, ...]:
        """``<app>.<table>`` for every installed app's ``transient`` tables."""
        return tuple(f"{name}.{t}" for name in self._installed for t in self._classes[name].transient)

    def implied_records(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """Every installed app's ``implied`` records, by ``<app>.<table>``."""
        return {
            f"{name}.{t}": records for name in self._installed for t, records in self._classes[name].implied.items()
        }

    def snapshot(self) -> Snapshot:
        """A snapshot of the whole phone (O(records))."""
        return self.phone.state.snapshot()

    def restore(self, snapshot: Snapshot) -> None:
        """Return the phone to ``snapshot``."""
        self.phone.state.restore(snapshot)

    def tables(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """The phone's tables, live (read-only by convention)."""
        return self.phone.state.tables

    def clock_seconds(self) -> float:
        """The phone clock, seconds since the Unix epoch."""
        return self.phone.state.meta["now"]

    def set_clock(self, seconds: float) -> None:
        """Move the phone clock to ``seconds`` (epoch) if that is later; a router keeps the
        worlds of one episode on one clock this way."""
        meta = self.phone.state.meta
        if seconds > meta["now"]:
            meta["now"] = seconds

    def format_clock(self, seconds: float) -> str:
        """``seconds`` as the phone's local time, ``YYYY-MM-DDTHH:MM:SS``."""
        return dt.datetime.fromtimestamp(seconds, self.phone.tz).replace(tzinfo=None).isoformat(timespec="seconds")

    def screenshot(self) -> np.ndarray:
        """The foreground app's screen, ``uint8`` (H, W, 3), drawn with Pillow."""
        from phoneenv.screen import render_phone

        return render_phone(self.phone, self.screen_size)
