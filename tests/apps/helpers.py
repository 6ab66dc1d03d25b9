"""Calling sandbox tools from app tests: validate the arguments as the env does, then call."""

from __future__ import annotations

from typing import Any

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import Feedback


def call(b: SandboxBackend, name: str, **args: Any) -> Feedback:
    """Validate ``args`` against tool ``name``'s schema and call it on ``b``."""
    entry = b.tools()[name]
    return b.call(name, entry.validator.validate(args))


def ok(b: SandboxBackend, name: str, **args: Any) -> Any:
    """:func:`call` that must succeed; returns the result."""
    fb = call(b, name, **args)
    assert fb.ok, fb
    return fb.result
