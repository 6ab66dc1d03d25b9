"""PhonePlan-v0 for TRL's ``environment_factory`` (GRPOTrainer's built-in tool loop).

TRL's ``GRPOTrainer(environment_factory=...)`` takes a zero-argument callable that makes an
environment object; the object's public methods are the tools the model may call (their schema is
what ``transformers.utils.get_json_schema`` reads from type hints and a Google-style docstring),
``reset(**row)`` starts an episode from a dataset row and returns text appended to the prompt, and
``get_reward()`` scores the finished rollout. :func:`environment_factory` builds such a class over
``PhonePlan-v0``::

    >>> from phoneenv.trl_env import environment_factory
    >>> PhoneTools = environment_factory(tasks="app:clock", apps=["clock"])   # doctest: +SKIP
    >>> trainer = GRPOTrainer(model, args=cfg, train_dataset=rows,            # doctest: +SKIP
    ...                       environment_factory=PhoneTools, processing_class=tokenizer)

Each row of ``train_dataset`` has a ``prompt`` (conversational: the system/user messages; the
env's goal is appended to the last one) and, optionally, ``task_id`` (the task of that rollout;
otherwise drawn from ``tasks``) and ``seed``. Each phone tool becomes a method named with
``.`` written ``__`` (``clock.set_alarm`` -> ``clock__set_alarm``; the env accepts both), which
runs one ``env.step`` and returns the step's feedback (the observation's JSON text); ``finish``
ends the episode. ``get_reward()`` is the verdict's success (1.0/0.0) or, with
``reward="progress"``, its progress; an episode the model left without ``finish`` is judged as
truncated (never a success).

Limits (TRL's loop is simpler than :mod:`rl.rollout`'s, which ``rollout_func`` uses):

- One tool list per class, fixed when the class is built: the tools of ``apps`` (default: the
  apps of the tasks' pool) plus the harness tools (``finish``, memory, confirmation, skills...).
  Tool selection per episode (``tools="retrieve"``/``"search"``) and sub-agent frames' own tool
  lists cannot be shown to the model; a call of a tool not offered in the episode gets a
  ``precondition_failed`` feedback. The whole suite's ~250 tools make a long prompt: pass
  ``apps``.
- The schema the model sees is what ``get_json_schema`` can say from Python type hints: types,
  enums, required arguments and descriptions, not patterns, bounds or nested objects' fields
  (and no parameter whose name is not a Python identifier: none of the suite's tools has one).
  The env still checks every call against the full schema and answers ``invalid_arguments``.
- Text only: screenshots are not sent back (make the env with ``screenshots=False``); no token
  accounting (``add_agent_tokens``) and no traces are written; TRL's ``max_tool_calling_iterations``
  and the env's ``max_steps`` both bound an episode (a step past the end gets "the episode is
  over").
- TRL marks ``environment_factory`` experimental; this adapter follows TRL 1.16's contract.
"""

from __future__ import annotations

import inspect
import keyword
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

__all__ = ["PhonePlanToolEnv", "environment_factory", "method_name"]

_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}


def method_name(tool: str) -> str:
    """The method name of phone tool ``tool``: dots written ``__`` (``clock.set_alarm`` ->
    ``clock__set_alarm``); the env resolves either spelling to the same tool."""
    return tool.replace(".", "__")


def _hint(schema: Any) -> Any:
    """A Python type hint for the JSON schema ``schema`` that ``transformers.get_json_schema``
    turns back into the same type (enums as ``Literal``, ``anyOf`` as a union; anything it
    cannot say as ``Any``)."""
    if not isinstance(schema, Mapping):
        return Any
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, (str, int, float, bool)) or v is None for v in enum):
        return Literal[tuple(enum)]  # type: ignore[valid-type]
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        return _union([_hint(o) for o in options])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([_hint({**schema, "type": k}) for k in kind])
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        items = schema.get("items")
        return list if items is None else list[_hint(items)]  # type: ignore[misc]
    if kind == "object":
        return dict
    return Any


def _union(hints: list[Any]) -> Any:
    if any(h is Any for h in hints):
        return Any
    unique = list(dict.fromkeys(hints))
    return unique[0] if len(unique) == 1 else typing.Union[tuple(unique)]


def _one_line(text: Any) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip()


def _make_method(tool: str, description: str, parameters: Mapping[str, Any]) -> Any:
    """A method for tool ``tool`` whose signature, type hints and docstring describe its
    parameters to ``transformers.get_json_schema``; it passes the arguments the model sent (and
    only those) to :meth:`PhonePlanToolEnv._call`."""
    props: Mapping[str, Any] = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    names = [
        n for n in props if n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("_") and n != "self"
    ]
    ordered = [n for n in names if n in required] + [n for n in names if n not in required]
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    hints: dict[str, Any] = {}
    doc_args = []
    for n in ordered:
        hints[n] = _hint(props[n])
        default = inspect.Parameter.empty if n in required else None
        params.append(inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hints[n]))
        doc_args.append(f"    {n}: {_one_line(props[n].get('description')) or n.replace('_', ' ')}")
    hints["return"] = str

    def call(self: PhonePlanToolEnv, **arguments: Any) -> str:
        return self._call(tool, arguments)

    name = method_name(tool)
    call.__name__ = call.__qualname__ = name
    call.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    call.__annotations__ = hints
    doc = _one_line(description) or tool
    if doc_args:
        doc += "\n\nArgs:\n" + "\n".join(doc_args)
    call.__doc__ = doc + "\n\nReturns:\n    The tool's feedback as JSON text."
    return call


class PhonePlanToolEnv:
    """The base of the classes :func:`environment_factory` builds: one ``PhonePlan-v0`` env
    per instance, driven by TRL's tool loop. Subclasses add one method per tool.

    Attributes set by the factory: ``env_kwargs`` (``gym.make`` arguments), ``tool_names``
    (the phone tools exposed, in order), ``reward`` (``"success"`` or ``"progress"``).
    """

    env_kwargs: ClassVar[dict[str, Any]] = {}
    tool_names: ClassVar[tuple[str, ...]] = ()
    reward: ClassVar[str] = "success"

    def __init__(self) -> None:
        import gymnasium as gym

        import phoneenv  # noqa: F401  (registers PhonePlan-v0)

        self._env = gym.make("PhonePlan-v0", **self.env_kwargs)
        self._info: dict[str, Any] = {}
        self._episodes = 0

    @property
    def env(self) -> Any:
        """The wrapped ``gym.make("PhonePlan-v0", ...)`` env (``env.unwrapped.trace``, ...)."""
        return self._env

    @property
    def final_info(self) -> dict[str, Any]:
        """The last finished episode's final ``info`` (``verdict``, ``success``, ``progress``,
        ...), or ``{}`` while an episode runs."""
        return self._info

    def reset(self, **row: Any) -> str:
        """Start an episode for one dataset row (TRL passes the row's columns): ``task_id``
        picks the task (else one is drawn from the pool), ``seed`` seeds it (else a count of
        this instance's episodes). Returns the goal, which TRL appends to the last prompt
        message (after a blank line when that message has text)."""
        task_id = row.get("task_id")
        seed = row.get("seed")
        options = {"task": task_id} if task_id else None
        obs, _ = self._env.reset(seed=self._episodes if seed is None else int(seed), options=options)
        self._episodes += 1
        self._info = {}
        prompt = row.get("prompt")
        last = prompt[-1].get("content") if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict) else ""
        return ("\n\n" if isinstance(last, str) and last.strip() else "") + obs["goal"]

    def get_reward(self) -> float:
        """The rollout's reward: the verdict's success (1.0 or 0.0), or its progress with
        ``reward="progress"``. An episode still running (the model stopped without ``finish``)
        is judged now, as truncated."""
        if not self._info:
            self._info = self._env.unwrapped.truncate()
        if not self._info:  # no episode was started
            return 0.0
        return float(self._info["progress"] if self.reward == "progress" else self._info["success"])

    def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        obs, _, terminated, truncated, info = self._env.step({"name": tool, "arguments": arguments})
        if (terminated or truncated) and "verdict" in info:
            self._info = {k: info[k] for k in ("verdict", "success", "progress", "steps", "tool_calls", "errors")}
        return str(obs["feedback"])


def environment_factory(
    tasks: str | Sequence[Any] | None = None,
    *,
    apps: Sequence[str] | None = None,
    reward: Literal["success", "progress"] = "success",
    name: str = "PhonePlanTools",
    **env_kwargs: Any,
) -> type[PhonePlanToolEnv]:
    """A class to pass as TRL's ``environment_factory``: each instance runs one
    ``gym.make("PhonePlan-v0", tasks=tasks, **env_kwargs)`` env, and its public methods are
    the phone's tools (see the module docstring for the contract and its limits).

    Args:
        tasks: the env's ``tasks`` (a selector or a list of ``TaskSpec``); a row's ``task_id``
            may name any task of the suite.
        apps: expose the tools of these apps (plus the harness tools: ``finish``, memory, ...);
            default: the apps of the pool's tasks.
        reward: what ``get_reward`` returns: ``"success"`` (1.0/0.0) or ``"progress"``.
        name: the class name (TRL logs the reward under it).
        **env_kwargs: more ``gym.make`` arguments (``backend``, ``max_steps``, ``memory``...).

    Returns:
        A subclass of :class:`PhonePlanToolEnv` with one method per tool (``clock__set_alarm``).

    Raises:
        ValueError: ``reward`` not one of the two, ``apps`` naming no app of the suite's
            tools, or ``screenshots=True`` (text only).
        TypeError / ValueError / KeyError: from ``gym.make`` for bad env arguments, now rather
            than in the trainer.
    """
    import gymnasium as gym

    import phoneenv  # noqa: F401  (registers PhonePlan-v0)

    if reward not in ("success", "progress"):
        raise ValueError(f"reward must be 'success' or 'progress', not {reward!r}")
    if env_kwargs.get("screenshots"):
        raise ValueError("the TRL adapter is text only: leave screenshots off")
    if tasks is not None:
        env_kwargs["tasks"] = tasks
    probe = gym.make("PhonePlan-v0", **env_kwargs)
    try:
        base = probe.unwrapped
        base.reset(seed=0)
        backend = base.selectable_specs()  # every backend tool, offered in the episode or not
        in_backend = {s.name for s in backend}
        harness = [s for s in base.tool_specs if s.name not in in_backend]
        known = {s.app for s in backend}
        wanted = set(apps) if apps is not None else {a for t in base.pool for a in t.apps}
    finally:
        probe.close()
    if apps is not None and not wanted & known:
        raise ValueError(f"apps {sorted(wanted)} name no app with tools; the apps are {', '.join(sorted(known))}")
    specs = [s for s in backend if s.app in wanted] + harness
    namespace: dict[str, Any] = {
        "env_kwargs": dict(env_kwargs),
        "tool_names": tuple(s.name for s in specs),
        "reward": reward,
        "__doc__": f"PhonePlan-v0 for TRL's environment_factory: {len(specs)} tools.",
        "__module__": __name__,
    }
    for s in specs:
        namespace[method_name(s.name)] = _make_method(s.name, s.description, s.parameters)
    return type(name, (PhonePlanToolEnv,), namespace)
