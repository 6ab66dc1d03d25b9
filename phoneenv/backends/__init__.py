"""Backends behind one interface: ``sandbox`` (in-process phone), ``llmsim`` (LLM-simulated
long-tail apps over a fact ledger), ``hybrid`` (both in one episode), ``emulator`` and ``device``
(an Android emulator or phone over adb, :mod:`phoneenv.backends.adb`)."""

from __future__ import annotations

from typing import Any

from phoneenv.backends.base import Backend

__all__ = ["BACKENDS", "Backend", "make_backend"]

BACKENDS = ("sandbox", "llmsim", "hybrid", "emulator", "device")


def make_backend(
    name: str, *, simulator: Any = None, screen_size: tuple[int, int] = (360, 640), **device: Any
) -> Backend:
    """Build a backend by name. ``simulator`` is the :class:`~phoneenv.llm.ChatClient` for
    ``llmsim``/``hybrid``; ``device`` options (``serial``, ``adb_host``, ``adb_port``, ...) go to
    :class:`~phoneenv.backends.adb.AdbBackend` for ``emulator``/``device`` (defaults:
    ``$ANDROID_SERIAL`` and the adb server on ``$ANDROID_ADB_SERVER_PORT`` or 5037), and for
    ``hybrid`` they add that device for the apps and tools a task routes to one (``kind``:
    ``device`` by default). Raises ``ValueError`` for an unknown name."""
    if name in ("emulator", "device"):
        from phoneenv.backends.adb import AdbBackend

        return AdbBackend(kind=name, screen_size=screen_size, **device)  # type: ignore[arg-type]
    if device and name != "hybrid":
        raise ValueError(f"device options {sorted(device)} apply only to the emulator and device backends")
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

        android = None
        if device:
            from phoneenv.backends.adb import AdbBackend

            android = AdbBackend(screen_size=screen_size, **device)
        return HybridBackend(SandboxBackend(screen_size=screen_size), LLMSimBackend(client=simulator), android)
    raise ValueError(f"unknown backend {name!r}; available: {', '.join(BACKENDS)}")
