"""Where phoneenv keeps what it can rebuild: one documented cache folder per kind.

The root is ``$PHONEENV_CACHE``, else ``~/.cache/phoneenv``; each kind has a subfolder and an
environment variable that moves it or turns it off (``off``, ``0``, ``false``, ``no`` or empty):

======================== ============================ ==================================
kind                     variable                     default
======================== ============================ ==================================
sentence vectors         ``PHONEENV_VECTOR_CACHE``    ``<root>/vectors``
the apps' tool specs     ``PHONEENV_TOOL_CACHE``      ``<root>/tool-specs``
converted models         (``cache_dir=`` argument)    ``<root>/models``
======================== ============================ ==================================

Nothing else phoneenv writes goes outside the output folder a command was given.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_folder", "cache_root"]

CACHE_ENV = "PHONEENV_CACHE"
_OFF = ("", "0", "off", "false", "no")


def cache_root() -> Path:
    """``$PHONEENV_CACHE``, else ``~/.cache/phoneenv``."""
    root = os.environ.get(CACHE_ENV)
    return Path(root) if root else Path.home() / ".cache" / "phoneenv"


def cache_folder(kind: str, env: str) -> Path | None:
    """The folder of cache ``kind``: ``$env`` when set (None when it says off), else
    ``cache_root() / kind``. The folder is not created here."""
    value = os.environ.get(env)
    if value is not None:
        return None if value.strip().lower() in _OFF else Path(value)
    return cache_root() / kind
