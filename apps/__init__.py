"""Sandbox apps, one module each: state tables, typed tools, screen, Android package.

``APP_CLASSES`` maps app name → :class:`phoneenv.app.App` subclass, discovered from the modules
of this package (every ``App`` subclass with a ``name`` defined in a module here), in module order.

Apps kept outside this folder join them through ``PHONEENV_APPS_PATH``: folders (separated by
``os.pathsep``) whose modules are read as if they were here, so adding an app is one module and
nothing in ``phoneenv/`` (see ``apps/README.md``). Two apps of one name raise ``TypeError``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil

from phoneenv.app import App

__path__ += [p for p in os.environ.get("PHONEENV_APPS_PATH", "").split(os.pathsep) if p]


def _discover() -> dict[str, type[App]]:
    found: dict[str, type[App]] = {}
    for mod_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{mod_info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, App) and cls is not App and cls.__module__ == module.__name__ and "name" in cls.__dict__:
                if cls.name in found:
                    raise TypeError(f"two apps named {cls.name!r}: {found[cls.name]} and {cls}")
                found[cls.name] = cls
    return found


APP_CLASSES: dict[str, type[App]] = _discover()

__all__ = ["APP_CLASSES"]
