"""Sandbox apps, one folder each: state tables, typed tools, screen, Android package, tasks, skills.

An app is a package of this one (``apps/<name>/``)::

    apps/clock/
        __init__.py      the App subclass and its tools
        templates.py     the task templates that are the app's own (optional)
        skills/<skill>/SKILL.md   the skills that ship with it (optional)

A plain module (``apps/<name>.py``) is still an app, one with no templates or skills of its own.

``APP_CLASSES`` maps app name → :class:`phoneenv.app.App` subclass, discovered from the modules
and packages of this package (every ``App`` subclass with a ``name`` defined in the module or the
package's ``__init__``), in module order. Two apps of one name raise ``TypeError``.

Apps kept outside this folder join them through ``PHONEENV_APPS_PATH`` (folders separated by
``os.pathsep``, read when this package is imported) or :func:`add_path` (at run time): their
modules and packages are read as if they were here, and an app folder there ships its templates
(:func:`template_modules`, imported by :func:`phoneenv.tasks.templates.all_templates`) and its
skills (:func:`skill_folders`) too. ``docs/guides/add-an-app.md`` walks through one.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sys
import warnings
from pathlib import Path

from phoneenv.app import App

__all__ = ["APP_CLASSES", "add_path", "app_folders", "skill_folders", "template_modules"]

_ENV_PATH = [p for p in os.environ.get("PHONEENV_APPS_PATH", "").split(os.pathsep) if p]
for _missing in [p for p in _ENV_PATH if not os.path.isdir(p)]:
    warnings.warn(
        f"PHONEENV_APPS_PATH names {_missing!r}, which is not a folder: no app is read from it",
        RuntimeWarning,
        stacklevel=2,
    )
__path__ += [p for p in _ENV_PATH if os.path.isdir(p)]

_FOLDERS: dict[str, Path] = {}
"""Module name → folder, for the apps that are packages (filled by :func:`_discover`)."""


def _discover() -> dict[str, type[App]]:
    found: dict[str, type[App]] = {}
    folders: dict[str, Path] = {}
    for mod_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{mod_info.name}")
        if mod_info.ispkg and module.__file__:
            folders[mod_info.name] = Path(module.__file__).parent
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, App) and cls is not App and cls.__module__ == module.__name__ and "name" in cls.__dict__:
                if cls.name in found:
                    raise TypeError(f"two apps named {cls.name!r}: {found[cls.name]} and {cls}")
                found[cls.name] = cls
    _FOLDERS.clear()
    _FOLDERS.update(folders)
    return found


APP_CLASSES: dict[str, type[App]] = _discover()


def app_folders() -> dict[str, Path]:
    """The apps that are folders: module name (``clock``) → folder, in module order."""
    return dict(_FOLDERS)


def template_modules() -> list[str]:
    """The modules of the app folders' own templates (``apps.clock.templates``), in module order:
    each app folder that holds ``templates.py`` or a ``templates/`` package."""
    return [
        f"{__name__}.{name}.templates"
        for name, folder in _FOLDERS.items()
        if (folder / "templates.py").is_file() or (folder / "templates" / "__init__.py").is_file()
    ]


def skill_folders() -> list[Path]:
    """The ``skills/`` folders of the app folders (``apps/clock/skills``), in module order; each
    holds ``<skill-name>/SKILL.md`` (see :mod:`phoneenv.harness.skills`)."""
    return [folder / "skills" for folder in _FOLDERS.values() if (folder / "skills").is_dir()]


def add_path(folder: str | os.PathLike[str]) -> dict[str, type[App]]:
    """Add ``folder`` to the places apps are read from, as ``PHONEENV_APPS_PATH`` does at import:
    its modules and app folders join ``APP_CLASSES`` (updated in place), the folders' templates
    join :func:`phoneenv.tasks.templates.all_templates` and their skills the shipped ones. The
    suite's caches in this process are cleared, so the next ``load_suite``, ``select`` or
    ``get_task`` sees the new tasks. Adding a folder twice does nothing.

    Returns ``APP_CLASSES``.

    Raises:
        NotADirectoryError: ``folder`` is not a folder.
        TypeError: an app there has the name of an app already known (the folder is not added).
    """
    path = str(Path(folder).resolve())
    if not Path(path).is_dir():
        raise NotADirectoryError(f"no such folder: {folder}")
    if path in __path__:
        return APP_CLASSES
    __path__.append(path)
    try:
        found = _discover()
    except TypeError:
        __path__.remove(path)
        raise
    APP_CLASSES.clear()
    APP_CLASSES.update(found)
    for name in ("phoneenv.tasks", "phoneenv.env"):  # their caches, if they are loaded (no import)
        forget = getattr(sys.modules.get(name), "_forget_apps", None)
        if forget is not None:
            forget()
    return APP_CLASSES
