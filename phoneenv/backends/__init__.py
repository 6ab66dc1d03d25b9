"""Backends behind one interface: ``sandbox`` (in-process phone), ``llmsim`` (LLM-simulated
long-tail apps over a fact ledger), ``hybrid`` (both in one episode)."""

from __future__ import annotations

from typing import Any

from phoneenv.backends.base import Backend

__all__ = ["BACKENDS", "Backend", "make_backend"]

BACKENDS = ("sandbox", "llmsim", "hybrid")


def make_backend(name: str, *, simulator: Any = None, screen_size: tuple[int, int] = (360, 640)) -> Backend:
    """Build a backend by name. ``simulator`` is the :class:`~phoneenv.llm.ChatClient` for
    ``llmsim``/``hybrid``. Raises ``ValueError`` for an unknown name."""
    if name == "sandbox":
        from phoneenv.backends.sandbox import SandboxBackend

        return SandboxBackend(screen_size=screen_size)
    if name == "llmsim":
        from phoneenv.backends.llmsim import LLMSimBackend

        return LLMSimBackend(client=simulator)
    if name == "hybrid":
        from phoneenv.backends.hybrid import HybridBackend
        from phoneenv.backends.llmsim import LLMSimBackend
        from phoneenv.backends.sandbox import SandboxBackend

        return HybridBackend(SandboxBackend(screen_size=screen_size), LLMSimBackend(client=simulator))
    raise ValueError(f"unknown backend {name!r}; available: {', '.join(BACKENDS)}")
