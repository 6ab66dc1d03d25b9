"""The phone model: the device the sandbox apps run on, the state a task starts from, and the apps.

:class:`Phone` holds one :class:`~phoneenv.state.PhoneState`, the app instances bound to it, the
timezone and the task's fixtures; :func:`build_fixture_state` builds a task's starting state
(seeded records plus the system tables of apps, permissions and accounts); :func:`app_classes`
finds the apps (the modules of :mod:`apps`). The sandbox backend runs on a :class:`Phone`, the
device backends on one whose state is on a device, and the virtual device keeps its state in one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo

from phoneenv.app import App
from phoneenv.contract import Fixtures
from phoneenv.state import PhoneState, Snapshot

__all__ = ["SECONDS_PER_CALL", "Phone", "app_classes", "build_fixture_state"]

SECONDS_PER_CALL = 1.0
"""Simulated seconds the phone clock advances per tool call."""


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

    def account(self, app: str) -> Mapping[str, Any] | None:
        """``app``'s account now (``system.accounts``: ``account``, ``signed_in``), or None."""
        return self.state.get("system.accounts", app)


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
