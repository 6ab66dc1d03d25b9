"""``LLMPlanner``: an LLM that plans by calling the env's tools, one tool call per step.

    >>> from agents.llm.client import OpenAIChatClient
    >>> planner = LLMPlanner(OpenAIChatClient("http://127.0.0.1:8000/v1", "my-model"))  # doctest: +SKIP

The conversation is the OpenAI chat format: a system prompt with the user's goal and the rules,
the tools passed as ``tools`` (names rendered ``app__verb`` for APIs that forbid dots; the env
accepts both), each model reply as an assistant message with its ``tool_calls``, and each
feedback as a ``tool`` message. Several calls in one reply are executed in order before the model
is asked again. A reply with no parseable call is sent to the env as it is, so it comes back as
an ``invalid_json`` feedback the model can correct. Screenshots ride as ``image_url`` parts when
``vision`` is on and the env gives them.

Sub-agent frames (``agent.delegate``, see :mod:`phoneenv.frames`): the same model plays each
frame. A step's info carries ``tools`` only when the offered tools changed (a frame opened or
closed, or more tools were loaded); the planner then offers those. When the observation's
``frame`` changes, the planner, before its next model call, tells the model in a user message which
frame is active: its id, depth, goal and tools, and that ``finish`` returns the answer to the
parent (or, back in a parent, that the sub-agent's answer is the last tool result).
"""

from __future__ import annotations

import base64
import io
import json
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from agents.base import Agent, AgentAction
from agents.llm.parsing import call_names_from_api
from agents.toolfilter import ToolFilter, allowed_tools, offered, parse_tool_filter
from phoneenv.llm import ChatClient

__all__ = ["SYSTEM_PROMPT", "LLMPlanner", "frame_note", "listed_skills", "skills_note", "system_message"]

SYSTEM_PROMPT = """You are a phone assistant. You act on the user's phone only by calling the tools you are given, one call at a time; each call's result comes back as a tool message with "ok", and on failure "error", "message" and a "hint" that says how to recover.
Rules:
- Look things up before acting; never invent ids, numbers or addresses.
- Do exactly what the user asked, nothing more: no extra messages, deletions or settings changes.
- Before sending, deleting, paying or granting, call user.confirm if the user asked to be asked.
- When the goal is done (or cannot be done), call finish with a short answer for the user; if the user asked a question, the answer must contain it.

The user's request: {goal}"""


def _png_data_url(image: Any) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def skills_note(skills: Sequence[dict[str, str]]) -> str:
    """The system-prompt section that lists an episode's skills (``info["skills"]``: name and
    description each) and says how to read one; empty when there is none."""
    if not skills:
        return ""
    lines = [f"- {s['name']}: {s['description']}" for s in skills]
    return (
        "Skills (step-by-step procedures for this phone; call skills.read with a skill's name and follow it "
        "before acting when one fits the request):\n" + "\n".join(lines)
    )


def listed_skills(info: Mapping[str, Any], list_skills: bool | Collection[str]) -> list[dict[str, str]]:
    """The skills an episode's system prompt lists: none when ``list_skills`` is False or empty,
    every skill of the reset ``info["skills"]`` when True, else those of ``info["skills"]`` named in
    ``list_skills`` (a harness version's own skills), in ``info``'s order."""
    if not list_skills:
        return []
    skills = list(info.get("skills") or [])
    if isinstance(list_skills, bool):
        return skills
    names = frozenset(list_skills)
    return [s for s in skills if s.get("name") in names]


def system_message(
    goal: str, *, template: str = SYSTEM_PROMPT, skills: Sequence[dict[str, str]] = (), instructions: str = ""
) -> str:
    """An episode's system message: ``template`` with the goal, then the skills note
    (:func:`skills_note`) and the harness's ``instructions``, each after a blank line. The LLM
    planner, the RL rollout and SFT examples all build it here, so a model is trained on the
    prompt it is evaluated with."""
    system = template.format(goal=goal)
    extra = [part for part in (skills_note(skills), instructions.strip()) if part]
    return "\n\n".join([system, *extra]) if extra else system


def frame_note(frame: str, depth: int, previous_depth: int, goal: str, tool_names: Sequence[str]) -> str:
    """The user message that tells the model the active sub-agent frame changed: ``frame`` (id),
    its ``depth`` (0 = the user's planner), the depth it came from, the frame's ``goal`` and the
    names of the tools that work in it. Used by :class:`LLMPlanner` and by :mod:`rl.rollout`, so
    training and evaluation prompts match."""
    returned = "The sub-agent finished; its answer is the last tool result. " if depth < previous_depth else ""
    if depth == 0:
        return f"[frame {frame}, depth 0] {returned}You are the user's planner again. The user's request: {goal}"
    return (
        f"[frame {frame}, depth {depth}] {returned}You act as a sub-agent. Your goal: {goal}\n"
        f"Only these tools work in this frame: {', '.join(tool_names)}. When your goal is done, call finish with "
        "your answer: it returns to the frame that delegated to you."
    )


class LLMPlanner(Agent):
    """An :class:`~agents.base.Agent` backed by a :class:`~phoneenv.llm.ChatClient`.

    Args:
        client: the model.
        max_steps: step budget; once spent the planner calls ``finish`` without asking the model.
        max_tokens: output budget per model call (tokens).
        name_style: ``"underscore"`` renders tool names as ``app__verb`` (OpenAI's API rule),
            ``"dotted"`` keeps ``app.verb``.
        vision: pass screenshots as image parts (the env must be made with ``screenshots=True``).
        system_prompt: a template with ``{goal}``.
        instructions: harness instructions (a harness version's ``instructions.md``, see
            :mod:`phoneenv.loop.harness`) appended to the system message after the rules; empty: none.
        list_skills: list the episode's skills (``info["skills"]``) in the system message
            (:func:`skills_note`) and offer ``skills.read`` whatever ``tool_filter`` says, when the
            env offers it: True for every skill of the episode, a collection of names for those
            among them (a harness version lists the skills it adds); off by default, so the prompt
            stays the one SFT and RL train on.
        tool_filter: which tools the model is offered, resolved per episode from the reset
            ``info`` by :mod:`agents.toolfilter` (the rule ``eval``, SFT and RL share): ``"all"``
            or None (every tool of the episode), ``"task"`` (the task's apps, ``user``,
            ``system``, ``finish`` and the category's harness app), or app / tool names
            (``["clock", "settings.set_dnd", "finish"]``). The env still accepts any call.

    Raises (from the constructor): ``ValueError`` for a malformed ``tool_filter``; (from
    :meth:`reset`) ``ValueError`` when ``"task"`` meets a reset ``info`` without ``apps``.

    Raises (from :meth:`act`): :class:`~phoneenv.llm.InfrastructureError` when the model server
    fails past its retries; the evaluator records the episode as an infrastructure error.
    """

    name = "llm"

    def __init__(
        self,
        client: ChatClient,
        *,
        max_steps: int = 30,
        max_tokens: int = 512,
        name_style: str = "underscore",
        vision: bool = False,
        system_prompt: str = SYSTEM_PROMPT,
        tool_filter: ToolFilter = None,
        instructions: str = "",
        list_skills: bool | Collection[str] = False,
    ) -> None:
        self.client = client
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.name_style = name_style
        self.vision = vision
        self.system_prompt = system_prompt
        parse_tool_filter(tool_filter)  # a malformed filter fails here, not at the first episode
        self.tool_filter = tool_filter
        self.instructions = instructions.strip()
        self.list_skills: bool | frozenset[str] = (
            list_skills if isinstance(list_skills, bool) else frozenset(list_skills)
        )
        self._allowed: frozenset[str] | None = None
        self.messages: list[dict[str, Any]] = []
        self._queue: deque[dict[str, Any]] = deque()
        self._pending: dict[str, Any] | None = None
        self._steps = 0
        self._frame = "main"
        self._depth = 0
        self._frame_note: str | None = None

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start the conversation from the goal and the episode's tool list (filtered by
        ``tool_filter`` for this episode's ``info``)."""
        self._allowed = allowed_tools(self.tool_filter, info)
        skills = listed_skills(info, self.list_skills)
        if skills and self._allowed is not None:
            self._allowed = self._allowed | {"skills.read"}
        self.tools = [self._rename(t) for t in info["tools"] if offered(t["function"]["name"], self._allowed)]
        system = system_message(
            observation["goal"], template=self.system_prompt, skills=skills, instructions=self.instructions
        )
        self.messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": observation["goal"]},
        ]
        self._queue.clear()
        self._pending = None
        self._steps = 0
        self._frame = str(observation.get("frame", "main"))
        self._depth = int(observation.get("frame_depth", 0))
        self._frame_note = None

    def _rename(self, tool: dict[str, Any]) -> dict[str, Any]:
        if self.name_style != "underscore":
            return tool
        fn = dict(tool["function"])
        fn["name"] = fn["name"].replace(".", "__")
        return {"type": "function", "function": fn}

    def _switch_frame(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Follow the offered tools and the active frame: a step's ``info["tools"]`` (present
        only when the offered tools changed) replaces the tools; a new frame is noted for the
        model."""
        if info.get("tools") is not None:
            self.tools = [self._rename(t) for t in info["tools"] if offered(t["function"]["name"], self._allowed)]
        frame = str(observation.get("frame", "main"))
        if frame == self._frame:
            return
        self._frame = frame
        depth = int(observation.get("frame_depth", 0))
        goal = observation.get("frame_goal", observation["goal"])
        names = [t["function"]["name"] for t in self.tools]
        self._frame_note = frame_note(frame, depth, self._depth, goal, names)
        self._depth = depth

    def _feed_back(self, observation: dict[str, Any]) -> None:
        pending = self._pending
        if pending is None:
            return
        if pending.get("id") is not None:
            self.messages.append({"role": "tool", "tool_call_id": pending["id"], "content": observation["feedback"]})
        else:
            self.messages.append(
                {
                    "role": "user",
                    "content": f"Your reply had no tool call I could run. Feedback: {observation['feedback']}",
                }
            )
        if self.vision and "screenshot" in observation:
            self.messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "The screen now:"},
                        {"type": "image_url", "image_url": {"url": _png_data_url(observation["screenshot"])}},
                    ],
                }
            )
        self._pending = None

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> AgentAction:
        """The next tool call: a queued call from the last reply, else a new model call."""
        queued = self._before_model(observation, info)
        if queued is not None:
            return queued
        return self._after_model(self.client.chat(self.messages, tools=self.tools, max_tokens=self.max_tokens))

    async def aact(self, observation: dict[str, Any], info: dict[str, Any]) -> AgentAction:
        """:meth:`act` as a coroutine: the model call is awaited (``client.achat``, e.g.
        :meth:`~agents.llm.client.OpenAIChatClient.achat`) so an evaluator can keep several
        episodes waiting on a served model at once; a client without ``achat`` is called as
        in :meth:`act`. Same decisions as :meth:`act`."""
        queued = self._before_model(observation, info)
        if queued is not None:
            return queued
        achat = getattr(self.client, "achat", None)
        if achat is None:
            result = self.client.chat(self.messages, tools=self.tools, max_tokens=self.max_tokens)
        else:
            result = await achat(self.messages, tools=self.tools, max_tokens=self.max_tokens)
        return self._after_model(result)

    def _before_model(self, observation: dict[str, Any], info: dict[str, Any]) -> AgentAction | None:
        """Take in the step's feedback; return the action that needs no model call (a queued
        call of the last reply, or ``finish`` once the steps are spent), else None."""
        self._feed_back(observation)
        self._switch_frame(observation, info)
        self._steps += 1
        if self._steps > self.max_steps:
            return AgentAction(json.dumps({"name": "finish", "arguments": {"answer": "I ran out of steps."}}))
        if self._queue:
            return self._pop(None)
        if self._frame_note is not None:
            self.messages.append({"role": "user", "content": self._frame_note})
            self._frame_note = None
        return None

    def _after_model(self, result: Any) -> AgentAction:
        """The action from the model's reply (a :class:`~phoneenv.llm.ChatResult`)."""
        tokens = result.usage.as_dict()
        calls = result.tool_calls
        assistant: dict[str, Any] = {"role": "assistant", "content": result.content or ""}
        if calls:
            assistant["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                }
                for c in calls
            ]
        self.messages.append(assistant)
        if not calls:
            self._pending = {"id": None}
            text = result.content or result.raw or ""
            if result.parse_errors:
                text = text or "; ".join(result.parse_errors)
            return AgentAction(text, tokens)
        self._queue.extend(calls)
        return self._pop(tokens)

    def _pop(self, tokens: dict[str, int] | None) -> AgentAction:
        """The next queued call as the action (``tokens``: the model call's, on its first call)."""
        call = self._queue.popleft()
        self._pending = call
        action = json.dumps({"name": call_names_from_api(call["name"]), "arguments": call["arguments"]})
        return AgentAction(action, tokens)
