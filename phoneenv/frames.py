"""Sub-agent frames: delegation as an action (``agent.delegate``), served by the env.

    >>> import json
    >>> from phoneenv.env import PhonePlanEnv
    >>> env = PhonePlanEnv(task="contacts.favorite/0", delegation=True)
    >>> obs, info = env.reset(seed=0)
    >>> obs, *_ = env.step({"name": "agent.delegate",
    ...                     "arguments": {"goal": "Find Ana's number", "tools": ["contacts"]}})
    >>> obs["frame"], int(obs["frame_depth"]), obs["frame_goal"]
    ('main.1', 1, "Find Ana's number")
    >>> obs, *_ = env.step({"name": "finish", "arguments": {"answer": "+49 151 0000"}})
    >>> json.loads(obs["feedback"])["result"]["answer"], obs["frame"]
    ('+49 151 0000', 'main')

The same policy plays the planner and its sub-agents; the observation says which frame is
active. Rules:

- The **root** frame (``"main"``, depth 0) has the user's goal and every tool of the episode.
- ``agent.delegate(goal, tools)`` opens a **child** frame one level deeper, with its own goal and
  only the named tools (dotted ``app.verb`` or ``app__verb`` names, or app names, which stand
  for all of that app's tools the delegating frame has). ``finish`` is always available. A frame
  can hand on only tools it has itself. The child's depth is at most :data:`MAX_DEPTH`; a frame
  at that depth cannot hold ``agent.delegate``. Bad names come back as ``invalid_arguments``
  with the JSON-Schema path of the name (``/tools/1``) and the nearest tool names as
  ``candidates``.
- Every following action acts in the **active** frame: the innermost open one. Open frames form
  a stack: a frame has at most one open child at a time, so siblings run one after another (the
  parent resumes when its child finishes, and may delegate again). This is how DESIGN.md's
  "frames opened in parallel are served in turn" is realised: in turn, by the stack.
- ``finish(answer)`` always closes the active frame. In a child it closes the child, and its
  feedback is the parent's ``agent.delegate`` result (``{"frame", "goal", "answer", ...}``), which
  the parent sees in its next observation. In the root it ends the episode. Since ``finish``
  acts in the innermost frame, the root can finish only after every child has: a root
  ``finish`` with frames still open cannot happen; each ``finish`` closes exactly one frame.
- A tool outside the active frame's set gets a ``precondition_failed`` feedback whose hint names
  the frame's tools (``candidates``: the nearest of them); a name that is no tool at all gets
  ``unknown_tool`` with candidates from the frame's tools. Neither changes the frame.
- ``max_steps`` counts the steps of all frames. A truncated episode leaves its open frames in the
  trace with ``closed_at`` None; they count as not finished for ``delegated`` criteria.

Verification (:mod:`phoneenv.tasks.verify`) sees each call's frame, so behaviour criteria can
require delegation (``rule="delegated"`` with a tool, goal and depth) and limit what a frame does
itself (``forbidden_call``/``max_calls``/... with ``depth=0`` for the root). The trace records
each step's frame and the frame tree (:class:`~phoneenv.contract.Frame`).

Reference plans express delegation as plain tool calls: an ``agent.delegate`` step, the child's
steps, and the child's ``finish`` (:func:`delegate_steps` builds the three parts;
:func:`plan_depths` and :func:`plan_frames` read a plan's frame structure back).
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field
from typing_extensions import NotRequired, TypedDict

from phoneenv.contract import ROOT_FRAME, Domain, ErrorKind, Feedback, Frame, ToolCall, ToolSpec
from phoneenv.harness import feedback
from phoneenv.sharing import ReadOnlyList, openai_tools
from phoneenv.tools import ArgumentError, ToolDef, ToolError, build_tool, nearest_tools, tool

__all__ = [
    "DELEGATE",
    "DELEGATE_TOOL",
    "MAX_DEPTH",
    "ROOT_FRAME",
    "DelegateResult",
    "FinishResult",
    "FrameStack",
    "delegate_steps",
    "plan_depths",
    "plan_frames",
]

MAX_DEPTH = 3
"""Deepest sub-agent frame: the root is depth 0, its sub-agents depth 1, theirs 2, then 3."""
DELEGATE = "agent.delegate"
"""The delegation tool's name."""
FINISH = "finish"
MAX_GOAL_CHARS = 2000
"""Longest goal ``agent.delegate`` accepts (characters)."""
MAX_TOOL_NAMES = 128
"""Most entries in ``agent.delegate``'s ``tools`` list."""

_PRINTABLE = frozenset(string.printable)

Goal = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_GOAL_CHARS,
        description="What the sub-agent must do and what to answer, in one or two sentences.",
    ),
]
ToolNames = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=100)]],
    Field(
        min_length=1,
        max_length=MAX_TOOL_NAMES,
        description="Tools the sub-agent may call: names from your tool list (e.g. 'messages.read_thread') "
        "or app names (e.g. 'messages' for all its tools). finish is always included.",
    ),
]


class DelegateResult(TypedDict):
    """A sub-agent frame was opened and is now active."""

    frame: str
    depth: int
    parent: str
    goal: str
    tools: list[str]
    status: str
    note: str


class FinishResult(TypedDict):
    """A sub-agent frame finished; this is the result of the parent's ``agent.delegate`` call."""

    frame: str
    goal: str
    answer: str | None
    value: NotRequired[Any]
    """The sub-agent's typed ``finish`` value, when it gave one."""
    status: str
    active_frame: str
    note: str


def _printable(text: str) -> str:
    """``text`` with every character outside ``string.printable`` escaped JSON-style (``\\u00e9``),
    so it fits the env's ``Text`` observation spaces."""
    if all(ch in _PRINTABLE for ch in text):
        return text
    return "".join(ch if ch in _PRINTABLE else json.dumps(ch)[1:-1] for ch in text)


@dataclass
class _FrameState:
    """An open or closed frame (the mutable form of :class:`~phoneenv.contract.Frame`)."""

    id: str
    parent: str | None
    depth: int
    goal: str
    tools: tuple[str, ...] | None
    specs: list[ToolSpec]
    openai: list[dict[str, Any]]
    opened_at: int
    goal_text: str = ""
    answer: str | None = None
    closed_at: int | None = None
    steps: list[int] = field(default_factory=list)
    children: int = 0
    allowed: frozenset[str] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.goal_text = _printable(self.goal)
        self.allowed = frozenset(self.tools) if self.tools is not None else None


class FrameStack:
    """The frames of one episode: the root and each sub-agent frame; the open ones are a stack.

    Args:
        goal: the user's goal (the root frame's).
        specs: every tool of the episode (the root frame's tools), ``finish`` included.
        openai: the same tools in OpenAI format (the env's cached list; built when None).
        max_depth: deepest frame allowed (default :data:`MAX_DEPTH`).

    The env calls :meth:`begin_step` once per step (it returns the frame the step acts in),
    :meth:`allows` before running a tool, :meth:`call` for ``agent.delegate`` and :meth:`finish`
    for ``finish`` in a child frame. Never raises on an agent's input: errors are feedbacks.
    """

    def __init__(
        self,
        goal: str,
        specs: Sequence[ToolSpec],
        openai: list[dict[str, Any]] | None = None,
        *,
        max_depth: int = MAX_DEPTH,
    ) -> None:
        if max_depth < 0:
            raise ValueError(f"max_depth must be at least 0, not {max_depth}")
        self.max_depth = max_depth
        specs = specs if type(specs) is ReadOnlyList else ReadOnlyList(specs)
        root = _FrameState(
            ROOT_FRAME, None, 0, goal, None, specs, openai if openai is not None else openai_tools(specs), 0
        )
        self.frames: list[_FrameState] = [root]
        self._stack: list[_FrameState] = [root]
        self._by_id = {root.id: root}
        self.step_frames: list[str] = []
        """The id of the frame each step acted in, step 1 first."""

    # -- state ----------------------------------------------------------------------------------
    @property
    def active(self) -> _FrameState:
        """The active (innermost open) frame."""
        return self._stack[-1]

    @property
    def at_root(self) -> bool:
        """Whether the root frame is active (no sub-agent frame open)."""
        return len(self._stack) == 1

    def specs(self) -> list[ToolSpec]:
        """The active frame's :class:`ToolSpec` list."""
        return self.active.specs

    def openai(self) -> list[dict[str, Any]]:
        """The active frame's tools in OpenAI ``tools`` format."""
        return self.active.openai

    def begin_step(self) -> str:
        """Record that a new step acts in the active frame; returns that frame's id."""
        f = self._stack[-1]
        self.step_frames.append(f.id)
        f.steps.append(len(self.step_frames))
        return f.id

    # -- tools ----------------------------------------------------------------------------------
    def allows(self, name: str) -> bool:
        """Whether the active frame may call the tool ``name`` (canonical dotted name)."""
        allowed = self._stack[-1].allowed
        return allowed is None or name in allowed

    def outside(self, name: str) -> Feedback:
        """The ``precondition_failed`` feedback for a call of ``name``, a tool of the episode but
        not of the active frame; ``candidates`` are the nearest of the frame's tools."""
        f = self.active
        names = [s.name for s in f.specs]
        if name == DELEGATE and f.depth >= self.max_depth:
            fb = feedback.precondition_failed(
                f"frame {f.id} is at the maximum delegation depth ({self.max_depth}); it cannot delegate",
                f"do this part yourself with this frame's tools ({', '.join(names)}), or call finish with your answer",
            )
        else:
            fb = feedback.precondition_failed(
                f"{name} is not among the tools of sub-agent frame {f.id}",
                f"this frame may call only: {', '.join(names)}; "
                "to use other tools, call finish with your answer and let the parent frame act",
            )
        near = nearest_tools(name, f.specs, cutoff=0.0)
        return fb.model_copy(update={"candidates": near or None})

    def unknown(self, name: str) -> Feedback:
        """The ``unknown_tool`` feedback for ``name``, with candidates from the active frame."""
        return feedback.unknown_tool(name, self.active.specs)

    def call(self, arguments: dict[str, Any], step: int | None = None) -> Feedback:
        """Serve one ``agent.delegate`` call: validate ``arguments`` against :data:`DELEGATE_TOOL`'s
        schema, then :meth:`delegate`. Never raises: returns the opened frame (``ok``),
        ``invalid_arguments`` (schema path, expected type, nearest tool names) or
        ``precondition_failed`` (maximum depth reached)."""
        try:
            args = DELEGATE_TOOL.validator.validate(dict(arguments))
        except ArgumentError as exc:
            return feedback.invalid_arguments(DELEGATE, exc, DELEGATE_TOOL.spec.parameters)
        try:
            return Feedback(ok=True, result=self.delegate(**args))
        except ToolError as exc:
            return feedback.from_tool_error(exc, DELEGATE_TOOL.spec.parameters)

    @tool()
    def delegate(self, goal: Goal, tools: ToolNames) -> DelegateResult:
        """Hand part of the work to a sub-agent. Opens a child frame with its own goal and only
        the tools you list; your next actions act inside it, as the sub-agent, until it calls
        finish(answer). That answer then comes back to you as the result of this call, and you
        continue. Give the sub-agent a self-contained goal that says what to answer.

        Args:
            goal: What the sub-agent must do and what to answer, in one or two sentences.
            tools: Tools the sub-agent may call: names from your tool list (e.g. 'messages.read_thread') or app names (e.g. 'messages' for all its tools). finish is always included.

        Raises:
            ToolError: ``precondition_failed`` when the active frame is at the maximum depth;
                ``invalid_arguments`` (path ``/tools/<i>``) for a name that is not one of the
                active frame's tools or apps, or for ``agent.delegate`` in a frame that would be
                at the maximum depth.
        """
        parent = self.active
        if parent.depth >= self.max_depth:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"precondition not met: frame {parent.id} is at the maximum delegation depth ({self.max_depth})",
                hint="do this part yourself, or call finish with your answer",
            )
        depth = parent.depth + 1
        chosen = self._resolve(tools, parent, depth)
        goal = " ".join(goal.split())
        if not goal:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "goal is blank",
                hint="say what the sub-agent must do and what to answer",
                path="/goal",
            )
        by_name = {s.name: s for s in parent.specs}
        specs = ReadOnlyList([*(s for s in parent.specs if s.name in chosen and s.name != FINISH), by_name[FINISH]])
        parent.children += 1
        child = _FrameState(
            id=f"{parent.id}.{parent.children}",
            parent=parent.id,
            depth=depth,
            goal=goal,
            tools=tuple(s.name for s in specs),
            specs=specs,
            openai=openai_tools(specs),
            opened_at=len(self.step_frames),
        )
        self.frames.append(child)
        self._by_id[child.id] = child
        self._stack.append(child)
        return DelegateResult(
            frame=child.id,
            depth=depth,
            parent=parent.id,
            goal=goal,
            tools=list(child.tools or ()),
            status="opened",
            note=f"You now act as sub-agent {child.id}: pursue its goal with only these tools, then call "
            f"finish with your answer, which returns to frame {parent.id} as the result of its agent.delegate call.",
        )

    def _resolve(self, names: list[str], parent: _FrameState, depth: int) -> set[str]:
        """The tool names a child gets from ``names``; raises ``ToolError`` at the first bad one."""
        have = [s.name for s in parent.specs]
        have_set = set(have)
        apps: dict[str, list[str]] = {}
        for s in parent.specs:
            if s.app:
                apps.setdefault(s.app, []).append(s.name)
        chosen: set[str] = {FINISH}
        for i, raw in enumerate(names):
            name = raw.strip().replace("__", ".")
            if name in have_set:
                got = [name]
            elif name in apps:
                got = apps[name]
            else:
                near = nearest_tools(name, parent.specs) or nearest_tools(name, parent.specs, cutoff=0.0)
                where = "this frame's" if parent.depth else "the episode's"
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"tools/{i}: {raw[:80]!r} is not one of {where} tools or apps, so it cannot be handed on",
                    hint=(f"did you mean {near[0]}? " if near else "")
                    + "name tools from your tool list (app.verb) or whole apps (e.g. 'messages')",
                    candidates=near or None,
                    path=f"/tools/{i}",
                )
            if DELEGATE in got and depth >= self.max_depth:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"tools/{i}: a sub-agent at depth {depth} cannot delegate further (maximum depth {self.max_depth})",
                    hint=f"leave {DELEGATE} out of tools",
                    candidates=[n for n in have if n != DELEGATE][:3] or None,
                    path=f"/tools/{i}",
                )
            chosen.update(got)
        return chosen

    def finish(self, answer: str | None, value: Any = None) -> Feedback:
        """Close the active sub-agent frame with ``answer`` (and its typed ``value``, passed up
        when given); the feedback is the result of the parent's ``agent.delegate`` call. Raises
        ``RuntimeError`` at the root (the env ends the episode there instead)."""
        if self.at_root:
            raise RuntimeError("the root frame is not closed by FrameStack.finish; the env ends the episode")
        child = self._stack.pop()
        child.answer = answer
        child.closed_at = len(self.step_frames)
        parent = self._stack[-1]
        result = FinishResult(
            frame=child.id,
            goal=child.goal,
            answer=answer,
            status="finished",
            active_frame=parent.id,
            note=f"Sub-agent {child.id} finished; its answer is the result of your agent.delegate call. "
            f"You act in frame {parent.id} again.",
        )
        if value is not None:
            result["value"] = value
        return Feedback(ok=True, result=result)

    def end(self, answer: str | None) -> None:
        """Record the root frame's ``finish`` (the episode's end) with ``answer``. Raises
        ``RuntimeError`` while a sub-agent frame is open (its ``finish`` closes it instead)."""
        if not self.at_root:
            raise RuntimeError(f"frame {self.active.id} is open; finish closes it, not the root")
        root = self._stack[0]
        root.answer = answer
        root.closed_at = len(self.step_frames)

    # -- export ---------------------------------------------------------------------------------
    def records(self) -> list[Frame]:
        """The frame tree as :class:`~phoneenv.contract.Frame` records, root first, then in
        opening order."""
        return [
            Frame(
                id=f.id,
                parent=f.parent,
                depth=f.depth,
                goal=f.goal,
                tools=None if f.tools is None else list(f.tools),
                answer=f.answer,
                opened_at=f.opened_at,
                closed_at=f.closed_at,
                steps=list(f.steps),
            )
            for f in self.frames
        ]


DELEGATE_TOOL: ToolDef = build_tool("agent", Domain.DEVICE, FrameStack.delegate)
"""The ``agent.delegate`` tool: spec (offered with the other tools), validator, and method
(served by :meth:`FrameStack.call`)."""


# -- reference plans ------------------------------------------------------------------------------


def delegate_steps(goal: str, tools: Iterable[str], steps: Iterable[ToolCall], answer: str) -> list[ToolCall]:
    """The reference-plan steps of one delegation: ``agent.delegate``, the sub-agent's ``steps``,
    and its ``finish`` with ``answer``. Nest by putting another ``delegate_steps`` in ``steps``."""
    return [
        ToolCall(name=DELEGATE, arguments={"goal": goal, "tools": list(tools)}),
        *steps,
        ToolCall(name=FINISH, arguments={"answer": answer}),
    ]


def plan_depths(plan: Sequence[ToolCall]) -> list[int]:
    """The depth of the frame each step of ``plan`` acts in, assuming every ``agent.delegate``
    opens a frame and every ``finish`` closes the innermost one (a reference plan's intent).

    Raises ``ValueError`` when a step follows the root's ``finish``.
    """
    out: list[int] = []
    depth = 0
    ended = False
    for i, c in enumerate(plan):
        if ended:
            raise ValueError(f"step {i} ({c.name}) follows the root frame's finish")
        out.append(depth)
        name = c.name.replace("__", ".")
        if name == DELEGATE:
            depth += 1
        elif name == FINISH:
            if depth == 0:
                ended = True
            else:
                depth -= 1
    return out


def plan_frames(plan: Sequence[ToolCall]) -> list[tuple[int, int | None]]:
    """Each delegation of ``plan`` as ``(index of its agent.delegate, index of the finish that
    closes it or None)``, in opening order (same assumptions as :func:`plan_depths`)."""
    out: list[tuple[int, int | None]] = []
    open_: list[int] = []
    for i, c in enumerate(plan):
        name = c.name.replace("__", ".")
        if name == DELEGATE:
            open_.append(len(out))
            out.append((i, None))
        elif name == FINISH and open_:
            k = open_.pop()
            out[k] = (out[k][0], i)
    return out
