"""The ``hybrid`` router: sandbox apps from the sandbox, every other tool from ``llmsim``, in one
episode, one clock and one trace.

    >>> from phoneenv.backends import make_backend
    >>> router = make_backend("hybrid")  # doctest: +SKIP

Each step's backend is recorded in the trace (``Step.backend`` is ``sandbox`` or ``llmsim``).
Verification reads both worlds at once: the sandbox's tables and the simulation's fact ledger
(the ledger wins for tables both hold). A task runs here when it declares ``hybrid`` — or
``sandbox``, whose tasks the router serves unchanged. Accounts are the sandbox's
(``system.accounts``): a simulated tool that requires login reads them, so ``system.sign_in``
unlocks a simulated app as it does a sandbox one.

**Routes to a device.** Where simulation is not faithful, a task sends just some apps or tools to
an Android device: ``backends=["hybrid", "device:messages", "device:contacts.search"]``
(:attr:`~phoneenv.contract.TaskSpec.routes`). The router then needs a ``device`` backend (an
:class:`~phoneenv.backends.adb.AdbBackend` on a serial; ``make_backend("hybrid", serial=...)``),
and at reset, before anything else runs, it checks the routes against the device's drivers and
raises ``ValueError`` naming what does not fit:

- ``device:<app>`` sends every tool of the app that the device offers; the app's reads without a
  driver stay in the sandbox, its writes without one are not offered (never faked);
- ``device:<app>.<verb>`` sends that tool, which the device must offer; a routed app's state
  lives on the device, so every write tool of that app that the sandbox would otherwise serve
  must be routed too (route the app, or each of its writes);
- a routed app must be a sandbox app (the device has no simulated apps).

The device is reset to the task too (its fixtures verified, :class:`~phoneenv.backends.adb.ResetError`
otherwise). After each routed call the routed apps' tables are read back from the device into
the sandbox, so sandbox tools that read them (a contact lookup before a text) see the device's
rows; verification reads routed apps' tables from the device itself. Steps served there record
the device backend's name (``device`` or ``emulator``). One clock: every world is moved to the
latest after each call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from phoneenv.backends.base import Backend
from phoneenv.contract import Effect, Feedback, TaskSpec

__all__ = ["HybridBackend"]


def _set_clock(backend: Backend, seconds: float) -> None:
    """Move ``backend``'s episode clock forward to ``seconds`` (epoch) if it is behind."""
    set_clock = getattr(backend, "set_clock", None)
    if set_clock is not None:
        set_clock(seconds)
        return
    phone = getattr(backend, "phone", None)
    meta = getattr(getattr(phone, "state", None), "meta", None)
    if isinstance(meta, dict) and seconds > meta.get("now", seconds):
        meta["now"] = seconds


class HybridBackend(Backend):
    """Routes each tool call to the backend that owns the tool.

    Args:
        sandbox: the in-process phone (owner of every sandbox app's tools).
        simulated: the LLM-simulated backend (owner of the rest).
        device: an Android backend for the apps and tools a task routes to a device
            (``device:<app>`` / ``device:<app>.<verb>`` in its ``backends``; module docstring);
            None: such tasks cannot run here.

    Raises:
        ValueError: at construction, when the sandbox and the simulation offer a tool of the same
            name; at :meth:`reset`, when the task's routes do not fit the device (module docstring).
    """

    name = "hybrid"

    def __init__(self, sandbox: Backend, simulated: Backend, device: Backend | None = None) -> None:
        self.sandbox = sandbox
        self.simulated = simulated
        self.device = device
        self._key: tuple[Any, ...] | None = None
        self._tools: dict[str, Any] = {}
        self._sim_names: frozenset[str] = frozenset()
        self._routed: frozenset[str] = frozenset()
        """Tool names served by the device this episode."""
        self._hidden: frozenset[str] = frozenset()
        """Tools of routed apps the device cannot run (writes without a driver): not offered."""
        self._routed_apps: frozenset[str] = frozenset()
        link = getattr(simulated, "use_accounts_of", None)
        if link is not None:
            link(sandbox)  # one account table: the sandbox's system.sign_in unlocks simulated apps
        self._refresh()

    def _refresh(self) -> None:
        a, b = self.sandbox.tools(), self.simulated.tools()
        d = self.device.tools() if self.device is not None and self._routed else None
        key = (a, b, d, self._routed, self._hidden)
        old = self._key
        # the same tool maps (by identity) and the same routes: the merged map stands, so the
        # env's tool cache (keyed on this map's identity) survives a reset that changed nothing
        if old is not None and all(x is y for x, y in zip(old[:3], key[:3], strict=True)) and old[3:] == key[3:]:
            return
        clash = set(a) & set(b)
        if clash:
            raise ValueError(f"tools offered by both backends: {sorted(clash)}")
        tools = {**a, **b}
        for name in self._hidden:
            tools.pop(name, None)
        if d is not None:
            tools.update({name: d[name] for name in self._routed})
        self._tools = tools
        self._sim_names = frozenset(b)
        self._key = key

    def can_run(self, task: TaskSpec) -> bool:
        """Tasks that declare ``hybrid`` or ``sandbox``; with routes, only when a device is set."""
        if "hybrid" not in task.backends and "sandbox" not in task.backends:
            return False
        return not task.routes or self.device is not None

    def plan_routes(self, task: TaskSpec) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """``(routed tools, hidden tools, routed apps)`` for ``task``'s routes, from the sandbox's
        tools (after its reset to ``task``) and the device's drivers.

        Raises ``ValueError`` naming the route that does not fit: no device, a simulated or
        unknown app, a tool the device does not offer, an app the device offers no tool of, or
        a write tool of a routed app left to the sandbox."""
        routes = task.routes
        if not routes:
            return frozenset(), frozenset(), frozenset()
        if self.device is None:
            raise ValueError(f"task {task.id} routes {routes} to a device, but this hybrid backend has none")
        box = self.sandbox.tools()
        sim = self.simulated.tools()
        offered = set(self.device.tools())
        routed: set[str] = set()
        hidden: set[str] = set()
        apps: set[str] = set()
        by_app: dict[str, list[str]] = {}
        for name in box:
            by_app.setdefault(name.split(".")[0], []).append(name)
        for target in routes:
            app = target.split(".")[0]
            if app not in by_app:
                where = "a simulated app" if any(n.startswith(f"{app}.") for n in sim) else "not a sandbox app"
                raise ValueError(
                    f"task {task.id}: route device:{target}: {app!r} is {where}; only sandbox apps run on a device"
                )
            if "." in target:
                if target not in box:
                    raise ValueError(f"task {task.id}: route device:{target}: the sandbox has no tool {target!r}")
                if target not in offered:
                    raise ValueError(
                        f"task {task.id}: route device:{target}: the {self.device.name} backend has no driver for it"
                    )
                routed.add(target)
            else:
                mine = [n for n in by_app[app] if n in offered]
                if not mine:
                    raise ValueError(
                        f"task {task.id}: route device:{target}: the {self.device.name} backend offers no tool of {app!r}"
                    )
                routed.update(mine)
                hidden.update(n for n in by_app[app] if n not in offered and box[n].spec.effect is not Effect.READ)
            apps.add(app)
        for app in sorted(apps):
            left = sorted(
                n for n in by_app[app] if n not in routed and n not in hidden and box[n].spec.effect is not Effect.READ
            )
            if left:
                raise ValueError(
                    f"task {task.id}: {app!r} is routed to a device, whose state the sandbox would not see written by "
                    f"{left}: route device:{app}, or each of those tools too"
                )
        return frozenset(routed), frozenset(hidden), frozenset(apps)

    def reset(self, task: TaskSpec) -> None:
        """Reset the worlds to the task's fixtures; with routes, check them (:meth:`plan_routes`)
        and reset the device too (which raises what the device backend raises: a device that
        is gone, fixtures it refuses)."""
        self.sandbox.reset(task)
        self.simulated.reset(task)
        self._routed = self._hidden = self._routed_apps = frozenset()
        routed, hidden, apps = self.plan_routes(task)
        if routed:
            assert self.device is not None
            self.device.reset(task)
            missing = sorted(routed - set(self.device.tools()))
            if missing:
                raise ValueError(
                    f"task {task.id}: the {self.device.name} backend does not offer {missing} for this task"
                )
            self._routed, self._hidden, self._routed_apps = routed, hidden, apps
            _set_clock(self.device, self.sandbox.clock_seconds())
        self._refresh()

    def tools(self) -> Mapping[str, Any]:
        """Both backends' tools (routed tools: the device's entries)."""
        self._refresh()
        return self._tools

    def served_by(self, name: str) -> str:
        """The device backend's name for routed tools, ``llmsim`` for simulated tools, else ``sandbox``."""
        if name in self._routed and self.device is not None:
            return self.device.name
        return self.simulated.name if name in self._sim_names else self.sandbox.name

    def _worlds(self) -> list[Backend]:
        worlds = [self.sandbox, self.simulated]
        if self._routed and self.device is not None:
            worlds.append(self.device)
        return worlds

    def _device_tables(self) -> dict[str, Mapping[str, Mapping[str, Any]]]:
        """The routed apps' tables, read from the device."""
        if not self._routed or self.device is None:
            return {}
        apps = self._routed_apps
        return {t: rows for t, rows in self.device.tables().items() if t.split(".")[0] in apps}

    def _mirror(self) -> None:
        """Copy the routed apps' device tables into the sandbox (what its reads then see)."""
        state = getattr(getattr(self.sandbox, "phone", None), "state", None)
        if state is None:
            return
        for table, rows in self._device_tables().items():
            state.tables[table] = {rid: dict(rec) for rid, rec in rows.items()}

    def call(self, name: str, arguments: dict[str, Any]) -> Feedback:
        """Serve the call from its owner, then move the other worlds' clocks to match (and, after a
        routed call, mirror the routed apps' device tables into the sandbox)."""
        if name in self._hidden:
            from phoneenv.harness import feedback

            return feedback.unknown_tool(name, [e.spec for e in self.tools().values()])
        if name in self._routed and self.device is not None:
            owner = self.device
        elif name in self._sim_names:
            owner = self.simulated
        else:
            owner = self.sandbox
        fb = owner.call(name, arguments)
        if owner is self.device:
            self._mirror()
        now = owner.clock_seconds()
        for world in self._worlds():
            if world is not owner:
                _set_clock(world, now)
        return fb

    def snapshot(self) -> tuple[Any, ...]:
        """Every world's snapshot (the device's only while a task routes to it)."""
        snaps: tuple[Any, ...] = (self.sandbox.snapshot(), self.simulated.snapshot())
        if self._routed and self.device is not None:
            snaps += (self.device.snapshot(),)
        return snaps

    def restore(self, snapshot: tuple[Any, ...]) -> None:
        """Restore every world of :meth:`snapshot`."""
        self.sandbox.restore(snapshot[0])
        self.simulated.restore(snapshot[1])
        if len(snapshot) > 2 and self.device is not None:
            self.device.restore(snapshot[2])
            self._mirror()

    def tables(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """Sandbox tables, the simulation's ledger tables and the routed apps' device tables in one
        mapping (the device's win for routed apps)."""
        return {**self.sandbox.tables(), **self.simulated.tables(), **self._device_tables()}

    def frozen_tables(self) -> dict[str, Mapping[str, Mapping[str, Any]]]:
        """:meth:`tables` frozen, each world as it freezes its own: the sandbox's copy-on-write
        tables shared (O(tables), not O(records)), the ledger's and the routed apps' device
        tables copied."""
        return {
            **self.sandbox.frozen_tables(),
            **self.simulated.frozen_tables(),
            **{t: dict(rows) for t, rows in self._device_tables().items()},
        }

    def clock_seconds(self) -> float:
        """The shared clock (epoch seconds): the latest of the worlds'."""
        return max(w.clock_seconds() for w in self._worlds())

    def format_clock(self, seconds: float) -> str:
        """Local time in the sandbox's timezone."""
        return self.sandbox.format_clock(seconds)

    def screenshot(self) -> np.ndarray:
        """The sandbox phone's screen."""
        return self.sandbox.screenshot()

    def screen_text(self) -> str:
        """The sandbox phone's screen as text."""
        return self.sandbox.screen_text()

    def consistency_issues(self) -> list[str]:
        """Contradictions in the simulated world."""
        return self.simulated.consistency_issues()

    def infrastructure_fault(self) -> str | None:
        """The device's fault this episode (reading its state failed), while a task routes to it."""
        if self._routed and self.device is not None:
            return self.device.infrastructure_fault()
        return None

    def implied_records(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """The sandbox's implied records (simulated apps have none)."""
        return self.sandbox.implied_records()

    def transient_tables(self) -> tuple[str, ...]:
        """Session-state tables of every world."""
        return tuple(t for w in self._worlds() for t in w.transient_tables())

    def close(self) -> None:
        """Close every backend."""
        self.sandbox.close()
        self.simulated.close()
        if self.device is not None:
            self.device.close()
