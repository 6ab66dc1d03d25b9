"""Optional extras: one clear line, naming the install command, when a feature's extra is missing.

phoneenv's core (the env, the sandbox backend, the rule-based agents, ``eval`` with them) needs only
the base dependencies. Everything else sits behind an extra declared in ``pyproject.toml`` (``llm``,
``rl``, ``memory``, ``device``, ``farm``, ``ray``, ``mcp``, ``view``, ``data``, ``vllm``, ``gpu``). A feature
imports its optional packages lazily, after calling :func:`require`, or inside :func:`needs`, so a
missing package surfaces as :class:`MissingExtra`::

    from phoneenv.extras import require

    require("llm", "openai", feature="A served model (--base-url)")
    import openai

    # MissingExtra: A served model (--base-url) needs the 'llm' extra: pip install "phoneenv[llm]"
    #               (missing module: openai)   <- all on one line

The install command is ``pip install -e ".[<extra>]"`` when phoneenv runs from a source checkout
(the package folder's parent holds a ``pyproject.toml`` naming ``phoneenv``) and
``pip install "phoneenv[<extra>]"`` otherwise. The ``phoneenv`` command line prints the message
as that one line, without a traceback, and exits with status 1.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

from phoneenv.errors import PhoneEnvError

__all__ = ["EXTRAS", "MissingExtra", "install_command", "needs", "require", "source_checkout"]

#: The extras declared in pyproject.toml, each with what it is for (the table of
#: docs/reference/extras.md says which command needs which).
EXTRAS: dict[str, str] = {
    "llm": "LLM planners and the LLM-simulated backend (OpenAI-compatible clients, transformers, xgrammar)",
    "rl": "SFT and GRPO/CARE training on TRL",
    "memory": "the harness's embedding memory (all-MiniLM-L6-v2)",
    "device": "real Android devices over Appium and adb",
    "farm": "emulator farms (adb, process management)",
    "ray": "episodes on Ray actors (eval --ray)",
    "mcp": "MCP server and client (the official mcp SDK)",
    "view": "HTML reports of runs (matplotlib plots)",
    "data": "Hugging Face datasets export",
    "vllm": "vLLM rollouts in train rl (--vllm, TRL's colocate mode)",
    "gpu": "GPU training (vLLM, DeepSpeed)",
    "docs": "the documentation site (MkDocs, Material, mkdocstrings)",
}

_PACKAGE_DIR = Path(__file__).resolve().parent


class MissingExtra(PhoneEnvError, ImportError):
    """An optional feature was used without its extra installed.

    ``str(exc)`` is one line: ``<feature> needs the '<extra>' extra: <install command>`` followed by
    ``(missing module: <name>)`` when the missing module is known.

    Attributes:
        extra: the extra's name (a key of :data:`EXTRAS`).
        feature: what the user tried to use, as a short phrase starting with a capital.
        command: the install command (see :func:`install_command`).
        name: the module that failed to import (``ImportError.name``), or None.
    """

    def __init__(self, extra: str, feature: str, missing: str | None = None) -> None:
        self.extra = extra
        self.feature = feature
        self.command = install_command(extra)
        message = f"{feature} needs the '{extra}' extra: {self.command}"
        if missing:
            message += f" (missing module: {missing})"
        super().__init__(message, name=missing)

    def __reduce__(self):  # pickles across processes (Ray actors, farm workers)
        return (type(self), (self.extra, self.feature, self.name))


@functools.lru_cache(maxsize=1)
def source_checkout() -> Path | None:
    """The source checkout phoneenv runs from (the folder holding its ``pyproject.toml``), or None
    for an installed wheel. A checkout is the package folder's parent when that parent has a
    ``pyproject.toml`` whose ``[project] name`` is ``phoneenv``."""
    root = _PACKAGE_DIR.parent
    pyproject = root / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the [project] table's name line is enough
        in_project = False
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith("["):
                in_project = stripped == "[project]"
            elif in_project and re.fullmatch(r"""name\s*=\s*["']phoneenv["']""", stripped):
                return root
        return None
    try:
        name = tomllib.loads(text).get("project", {}).get("name")
    except tomllib.TOMLDecodeError:
        return None
    return root if name == "phoneenv" else None


def install_command(extra: str) -> str:
    """The command that installs ``extra``: ``pip install -e ".[extra]"`` in a source checkout,
    else ``pip install "phoneenv[extra]"``.

    Raises:
        ValueError: ``extra`` is not one of :data:`EXTRAS`.
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; phoneenv's extras are: {', '.join(EXTRAS)}")
    if source_checkout() is not None:
        return f'pip install -e ".[{extra}]"'
    return f'pip install "phoneenv[{extra}]"'


def _missing_name(exc: ImportError, fallback: str) -> str:
    return exc.name or fallback


def require(extra: str, *modules: str, feature: str) -> None:
    """Import each of ``modules`` (dotted names allowed) and raise :class:`MissingExtra` naming
    ``extra``'s install command when one cannot be imported.

    Importing (not just finding) catches an extra installed only in part, e.g. a package whose own
    dependency is missing. Modules already imported cost nothing.

    Args:
        extra: the extra that brings the modules (a key of :data:`EXTRAS`).
        modules: the importable names the feature needs (``"openai"``, ``"mcp.server"``).
        feature: what needs them, a short phrase starting with a capital (``"phoneenv view"``,
            ``"The served-model client (--base-url)"``).

    Raises:
        MissingExtra: a module is missing; its ``__cause__`` is the original ImportError.
        ValueError: ``extra`` is not a known extra.
    """
    install_command(extra)  # unknown extras fail loudly, even when everything imports
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise MissingExtra(extra, feature, _missing_name(exc, module)) from exc


@contextlib.contextmanager
def needs(extra: str, *, feature: str) -> Iterator[None]:
    """A ``with`` block whose imports belong to ``extra``: a ModuleNotFoundError inside it (for
    a module outside phoneenv's own packages) becomes :class:`MissingExtra`::

        with needs("view", feature="phoneenv view"):
            import matplotlib.pyplot as plt

    A missing module of phoneenv itself (``phoneenv``, ``agents``, ``apps``, ``rl``) is a bug,
    not a missing extra, and propagates unchanged, as does any other exception.

    Raises:
        MissingExtra: a module imported in the block is missing.
        ValueError: ``extra`` is not a known extra.
    """
    install_command(extra)
    try:
        yield
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top in {"phoneenv", "agents", "apps", "rl"} or not top:
            raise
        raise MissingExtra(extra, feature, exc.name) from exc
