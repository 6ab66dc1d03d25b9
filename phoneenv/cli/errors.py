"""The command line's view of library errors: an :class:`agents.factory.AgentSpecError` is a
usage error (``typer.BadParameter`` naming the option), shown without a traceback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer

from agents.factory import AgentSpecError

__all__ = ["usage_errors"]


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """Turn an :class:`~agents.factory.AgentSpecError` raised inside into ``typer.BadParameter``."""
    try:
        yield
    except AgentSpecError as exc:
        raise typer.BadParameter(exc.message, param_hint=exc.param_hint) from None
