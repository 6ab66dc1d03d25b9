"""Planners and chat clients from their names and options, as ``phoneenv eval --agent``,
``tasks propose``, ``evolve`` and the Ray farm build them: :func:`make_agent` (reference,
random, llm, or a user's ``module:Class``) and :func:`make_client` (an OpenAI-compatible server,
or a local transformers model folder).

Errors are :class:`AgentSpecError` (a ``ValueError`` naming the command-line option at fault),
which the command line shows as a usage error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from phoneenv.errors import PhoneEnvError

__all__ = ["USER_AGENT_KWARGS", "AgentSpecError", "make_agent", "make_client", "user_agent"]


class AgentSpecError(PhoneEnvError, ValueError):
    """A planner or model that cannot be built from its options; ``param_hint`` names the
    command-line option (``--agent``, ``--model``, ``--tools``)."""

    def __init__(self, message: str, param_hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param_hint = param_hint


def make_client(base_url: str | None, model: str | None, api_key: str | None = None, option: str = "--model") -> Any:
    """A chat client: OpenAI-compatible at ``base_url``, else a local transformers model at the
    path ``model``. Raises ``AgentSpecError`` when neither is usable."""
    if not model:
        raise AgentSpecError("a model name (with --base-url) or a local model folder is needed", param_hint=option)
    if base_url:
        from agents.llm.client import OpenAIChatClient

        return OpenAIChatClient(base_url, model, api_key=api_key)
    if not Path(model).is_dir():
        raise AgentSpecError(
            f"{model!r} is not a local model folder; pass --base-url for a served model", param_hint=option
        )
    from agents.llm.client import LocalChatClient

    return LocalChatClient(model)


def make_agent(name: str, seed: int, llm: dict[str, Any] | None = None, client: Any = None) -> Any:
    """The planner ``name`` (reference, random, llm, or ``module:Class``: :func:`user_agent`). ``llm`` holds the LLM planner's options:
    ``base_url``, ``model``, ``api_key``, ``max_tokens``, ``max_steps``, ``vision`` and ``tools``
    (its tool filter, default ``"task"``); ``client``: the chat client to use instead of making
    one (another planner's, for ``--concurrency``). Raises ``AgentSpecError`` for an unknown
    agent, a model that does not load or a malformed tool filter."""
    from agents import AGENTS

    if ":" in name:
        return user_agent(name, seed, llm)
    if name not in AGENTS and name != "llm":
        raise AgentSpecError(f"unknown agent {name!r}; choose from {', '.join([*AGENTS, 'llm'])}", param_hint="--agent")
    if name == "llm":
        from agents.planner import LLMPlanner

        opts = llm or {}
        try:
            client = client or make_client(opts.get("base_url"), opts.get("model"), opts.get("api_key"))
        except AgentSpecError:
            raise  # already names what is missing and the option
        except (OSError, ValueError) as exc:
            raise AgentSpecError(f"cannot load the model: {exc}", param_hint="--model") from None
        try:
            return LLMPlanner(
                client,
                max_steps=opts.get("max_steps", 30),
                max_tokens=opts.get("max_tokens", 512),
                vision=opts.get("vision", False),
                tool_filter=opts.get("tools", "task"),
            )
        except ValueError as exc:  # a malformed tool filter
            raise AgentSpecError(str(exc), param_hint="--tools") from None
    if name not in AGENTS:
        raise AgentSpecError(f"unknown agent {name!r}; choose from {', '.join([*AGENTS, 'llm'])}", param_hint="--agent")
    cls = AGENTS[name]
    return cls(seed=seed) if name == "random" else cls()


USER_AGENT_KWARGS = ("seed", "base_url", "model", "api_key", "max_tokens", "max_steps", "vision", "tools")
"""The keyword arguments ``--agent module:Class`` may take, from the eval options of the same names."""


def user_agent(spec: str, seed: int, llm: dict[str, Any] | None = None) -> Any:
    """``--agent module:Class``: a user's own planner, ``Class`` from the importable ``module``
    (the current folder is searched first, as ``python -m`` would), constructed with the keyword
    arguments its ``__init__`` names among :data:`USER_AGENT_KWARGS` (all of them if it takes
    ``**kwargs``): ``seed`` is ``--seed``, the others the options of the same name (``--base-url``,
    ``--model``, ``--api-key``, ``--max-tokens``, ``--max-steps``, ``--vision``, ``--tools``).

    The object needs ``act(observation, info)`` (an ``AgentAction``, or the call's JSON text) and
    may have ``reset(observation, info)``, ``name`` (default: the class name), ``aact`` (async, for
    ``--concurrency``) and ``model_info`` (recorded in traces). See ``agents.base.Agent``.

    Raises:
        AgentSpecError: naming what failed: the spec's form, the import, the class, its
            construction, or a missing ``act``.
    """
    import importlib
    import inspect
    import os

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr or ":" in attr:
        raise AgentSpecError(f"{spec!r} is not module:Class (e.g. my_agents:MyPlanner)", param_hint="--agent")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or whatever the module raises at import
        raise AgentSpecError(
            f"cannot import {module_name!r} for --agent {spec}: {type(exc).__name__}: {exc}", param_hint="--agent"
        ) from None
    cls: Any = module
    for part in attr.split("."):
        if not hasattr(cls, part):
            raise AgentSpecError(f"module {module_name!r} has no {attr!r} (--agent {spec})", param_hint="--agent")
        cls = getattr(cls, part)
    if not callable(cls):
        raise AgentSpecError(f"{spec} is not a class (a {type(cls).__name__})", param_hint="--agent")
    opts = {"seed": seed, **{k: v for k, v in (llm or {}).items() if k in USER_AGENT_KWARGS}}
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = opts if takes_all else {k: v for k, v in opts.items() if k in params}
    try:
        agent = cls(**kwargs)
    except Exception as exc:
        given = ", ".join(sorted(kwargs)) or "no arguments"
        raise AgentSpecError(
            f"constructing {spec} ({given}) failed: {type(exc).__name__}: {exc}", param_hint="--agent"
        ) from None
    if not callable(getattr(agent, "act", None)):
        raise AgentSpecError(f"{spec} has no act(observation, info) method", param_hint="--agent")
    if not callable(getattr(agent, "reset", None)):
        agent.reset = lambda observation, info: None
    if not isinstance(getattr(agent, "name", None), str):
        agent.name = getattr(cls, "__name__", attr)
    return agent
