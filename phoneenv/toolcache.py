"""The apps' tool specs, cached on disk so that a process builds none it has built before.

Building a tool's spec takes a pydantic model of its signature and two JSON Schema generations
(about 1.3 ms a tool, 0.33 s for the ~250 tools of the shipped apps: half of what loading one
task costs). :meth:`phoneenv.app.App.tool_defs` asks :func:`load` first and :func:`store`\\ s
what it built; the argument validators are built on first use either way
(:func:`phoneenv.tools.tool_def_from_spec`).

A cached file is used only while nothing it was built from has changed: its name carries a key of
the Python and pydantic versions and the path, size and modification time of every ``.py`` file
of the ``phoneenv`` package and of every folder on the apps path (``PHONEENV_APPS_PATH``
included); any edit makes a new key, and the stale file of that app is removed when the new one
is written. The folder is ``$PHONEENV_TOOL_CACHE`` (``off`` for none), else
``$PHONEENV_CACHE/tool-specs``, else ``~/.cache/phoneenv/tool-specs`` (:mod:`phoneenv.caches`).
A file that cannot be read or does not match the app's tools is ignored and rebuilt; a folder
that cannot be written only means no caching.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pydantic
from pydantic import TypeAdapter

from phoneenv.caches import cache_folder
from phoneenv.contract import ToolSpec

__all__ = ["TOOL_CACHE_ENV", "load", "source_key", "store", "tool_cache_dir"]

log = logging.getLogger(__name__)

TOOL_CACHE_ENV = "PHONEENV_TOOL_CACHE"
_SPECS = TypeAdapter(list[ToolSpec])
_NOT_SOURCE = frozenset({"__pycache__", "node_modules", "site-packages"})
"""Folders under an apps path that hold no app source (walked past when keying the cache)."""


def tool_cache_dir() -> Path | None:
    """The folder of the cached tool specs, or None when caching is off."""
    return cache_folder("tool-specs", TOOL_CACHE_ENV)


@functools.lru_cache(maxsize=8)
def source_key(folders: tuple[str, ...]) -> str:
    """A key of what tool specs are built from: Python's and pydantic's versions and every ``.py``
    file (path, size, mtime in ns) of the ``phoneenv`` package and of ``folders`` (the apps path).
    Computed once per process and apps path (about 2 ms)."""
    h = hashlib.sha256(f"{sys.version}|{pydantic.VERSION}".encode())
    roots = [str(Path(__file__).resolve().parent), *folders]
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _NOT_SOURCE and not d.startswith("."))
            for name in sorted(filenames):
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    h.update(f"{path}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _file(app: str, owner: str, folders: tuple[str, ...]) -> Path | None:
    folder = tool_cache_dir()
    if folder is None:
        return None
    key = hashlib.sha256(f"{source_key(folders)}|{owner}".encode()).hexdigest()[:20]
    return folder / f"{app}-{key}.json"


def load(app: str, owner: str, names: Sequence[str], folders: tuple[str, ...]) -> list[ToolSpec] | None:
    """The cached specs of app ``app`` (class ``owner``, ``module.qualname``), or None when there
    is no usable file: caching off, no file for the current sources, or one whose tool names are
    not exactly ``names`` (in order)."""
    path = _file(app, owner, folders)
    if path is None:
        return None
    try:
        specs = _SPECS.validate_json(path.read_bytes())
    except (OSError, ValueError) as exc:
        if not isinstance(exc, FileNotFoundError):
            log.debug("ignoring the cached tool specs %s: %s", path, exc)
        return None
    if [s.name for s in specs] != list(names):
        log.debug("ignoring the cached tool specs %s: they name other tools", path)
        return None
    return specs


def store(app: str, owner: str, specs: Sequence[ToolSpec], folders: tuple[str, ...]) -> None:
    """Write ``specs`` for the current sources (atomically) and remove the app's stale files;
    never raises (a cache that cannot be written is no cache)."""
    path = _file(app, owner, folders)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{app}-", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(_SPECS.dump_json(list(specs)))
        os.replace(tmp, path)
        for old in path.parent.glob(f"{app}-*.json"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError as exc:
        log.debug("cannot cache the tool specs of %s in %s: %s", app, path.parent, exc)
