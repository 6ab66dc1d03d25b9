"""Sandbox apps, one module each: state tables, typed tools, screen, Android package.

``APP_CLASSES`` maps app name → :class:`phoneenv.app.App` subclass; the sandbox backend serves
every app listed here.
"""

from __future__ import annotations

from phoneenv.app import App

from apps.contacts import Contacts
from apps.system import Screen, System

APP_CLASSES: dict[str, type[App]] = {
    cls.name: cls for cls in (Contacts, System, Screen)
}

__all__ = ["APP_CLASSES"]
