"""One live PhonePlan-v0 episode served over the Model Context Protocol (the official ``mcp`` SDK).

Any MCP client (an IDE agent, a desktop assistant, a script on :class:`mcp.Client`) can then be
evaluated on a phoneenv task: it sees the episode's tools as MCP tools, reads the goal from the
server's instructions (and the ``task`` resource), calls tools, and ends the episode with
``finish``, whose result carries the verdict.

    >>> from phoneenv.mcp_server import EpisodeServer
    >>> srv = EpisodeServer.for_task("clock.what_time/0")  # doctest: +SKIP
    >>> srv.to_mcp("clock.set_alarm"), srv.to_canonical("clock__set_alarm")  # doctest: +SKIP
    ('clock__set_alarm', 'clock.set_alarm')

**Tools.** Every tool the episode offers (``env.unwrapped.tool_specs``: the backend's and the
harness's, ``finish`` included), with its JSON Schema as the MCP ``inputSchema`` and its effect
as annotations (``read`` → ``readOnlyHint``, ``sensitive`` → ``destructiveHint``). Names: MCP
itself allows dots, but the model APIs most MCP clients forward tools to (OpenAI's, Anthropic's)
accept only ``[a-zA-Z0-9_-]``, so by default (``names="underscore"``) a dotted name is served
with each ``.`` as ``__`` (``clock.set_alarm`` → ``clock__set_alarm``). Canonical names never
hold ``__``, so the mapping is one-to-one and reversible (:meth:`EpisodeServer.to_canonical`);
``names="dotted"`` serves the canonical names unchanged. One more tool,
``episode__reset`` (``episode.reset``), starts a new episode of the same task (optional
``seed``).

A call's result is the step's :class:`~phoneenv.contract.Feedback` as JSON, in
``structuredContent`` and as one text block (plus the screen as a PNG image block for a tool
that returns one, and after every call with ``screenshots=True``); ``isError`` is set when the feedback is an error. The call that ends the
episode (``finish``, or the step that reaches ``max_steps``) adds ``episode``: ``{"over": true,
"terminated", "truncated", "success", "progress", "verdict"}`` (the
:class:`~phoneenv.contract.Verdict` as a dict). Later calls answer ``precondition_failed`` until
``episode__reset``.

**Resources** (``phoneenv://episode/...``): ``screen.png`` (the phone's screen, ``image/png``),
``screen.txt`` (the same screen as text), ``task`` (id, goal, category, domain, step,
max_steps), ``verdict`` (the verdict once the episode is over, else ``{"over": false}``) and
``trace`` (the episode's :class:`~phoneenv.contract.Trace`, secrets masked).

**Which tools.** The server offers the tools of the env's tool selection
(:mod:`phoneenv.harness.toolselect`): by default (``tools="task"``) the task's apps and the
phone's own (``system``, ``screen``, ``user``) plus the harness tools, 20 to 72 tools for a task of the
suite, within the 128 tools OpenAI's API accepts; ``"retrieve"``, ``"search"`` and ``"all"`` as
for the env. The list is the active frame's: after ``agent__delegate`` opens a sub-agent frame,
its ``finish`` closes it, ``tools__search`` loads tools or ``episode__reset`` starts over, the
server sends ``notifications/tools/list_changed`` (it declares ``tools.listChanged``) before the
call's result, and a client re-lists the tools (``tools/list``).

**Threads.** Every use of the env (reset, steps, the screen, the trace, close) runs on one
thread the server owns, one call at a time, whichever thread or task the transport serves a
request on: an episode's objects (the env, its backend, its memory store) are only ever used
from that thread. A step that raises despite the env's contract (a defect) answers
``internal_error`` with a hint to call ``episode__reset``, which then starts a clean episode.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from phoneenv.contract import Effect, ToolSpec

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from phoneenv.env import PhonePlanEnv

__all__ = [
    "RESET_TOOL",
    "RESOURCES",
    "EpisodeServer",
    "NameStyle",
    "require_mcp",
    "serve_http",
    "serve_stdio",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

NameStyle = Literal["underscore", "dotted"]
"""How tool names are served: ``underscore`` (``clock__set_alarm``) or ``dotted`` (``clock.set_alarm``)."""

RESET_TOOL = "episode.reset"
"""The canonical name of the tool that starts a new episode (served as ``episode__reset``)."""

_URI = "phoneenv://episode/"
RESOURCES: dict[str, tuple[str, str]] = {
    "screen.png": ("image/png", "The phone's screen now (PNG)."),
    "screen.txt": ("text/plain", "The phone's screen now, as text."),
    "task": ("application/json", "The task: id, the user's goal, category, domain, step and max_steps."),
    "verdict": ("application/json", 'The verdict once the episode is over, else {"over": false}.'),
    "trace": ("application/json", "The episode so far as a phoneenv Trace (secrets masked)."),
}
"""The served resources: name (after ``phoneenv://episode/``) → (MIME type, description)."""

MAX_SEED = 2**63 - 1
"""The largest episode seed ``episode__reset`` takes (its schema's bound)."""

_RESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "seed": {
            "anyOf": [{"type": "integer", "minimum": 0, "maximum": MAX_SEED}, {"type": "null"}],
            "default": None,
            "description": "Seed of the new episode (default: none).",
        }
    },
    "required": [],
    "additionalProperties": False,
}


def require_mcp(feature: str) -> None:
    """Raise a one-line :class:`ImportError` naming the install command when the ``mcp`` extra
    (the official MCP SDK) is missing; ``feature`` names what needed it."""
    from phoneenv.extras import require

    require("mcp", "mcp", feature=feature)


def png_bytes(image: np.ndarray) -> bytes:
    """``image`` (``uint8`` (H, W, 3)) encoded as PNG."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def screen_text(env: PhonePlanEnv) -> str:
    """The phone's screen as text: status line, title and rows, as the screenshot draws them
    (each row on one line: a value's line breaks and control characters are spaces).

    A world without an in-process phone shows its backend's text screen (the simulated apps'
    frame); one without any (an emulator) gets one line saying so.
    """
    from phoneenv.screen import one_line, phone_screen

    phone = getattr(env.backend, "phone", None)
    if phone is None or not hasattr(phone, "apps"):
        text = env.backend.screen_text()
        return (
            text if text is not None else f"(the {env.backend.name} backend's screen is available as screen.png only)"
        )
    status, title, rows = phone_screen(phone)
    return "\n".join([one_line(status), f"== {one_line(title)} ==", *map(one_line, rows)])


class EpisodeServer:
    """A live episode of one PhonePlan-v0 env, as an MCP server's tools and resources.

    Args:
        env: the env (unwrapped or not) whose episodes are served; it is reset here.
        names: ``"underscore"`` (default; ``clock__set_alarm``) or ``"dotted"`` tool names.
        seed: the first episode's seed.
        trace_path: a file the episode's trace (JSON) is written to whenever an episode ends
            (and on :meth:`close` for one still running), so a run of an MCP client can be
            scored and viewed like any phoneenv run.

    Its methods may be called from any thread: each runs its env work on the server's episode
    thread (see the module docstring) and waits for it.

    Raises:
        ValueError: an unknown ``names`` style, or tool names that collide once mapped.
    """

    def __init__(
        self,
        env: Any,
        *,
        names: NameStyle = "underscore",
        seed: int | None = 0,
        trace_path: str | Path | None = None,
    ) -> None:
        if names not in ("underscore", "dotted"):
            raise ValueError(f"names must be 'underscore' or 'dotted', not {names!r}")
        self.env: PhonePlanEnv = getattr(env, "unwrapped", env)
        self.names: NameStyle = names
        self.trace_path = Path(trace_path) if trace_path is not None else None
        self._info: dict[str, Any] = {}
        self._over = False
        self._written = True
        self._announced: tuple[str, ...] = ()
        self._episode_thread: int | None = None
        self._worker: ThreadPoolExecutor | None = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="phoneenv-episode", initializer=self._mark_episode_thread
        )
        try:
            self._on_episode_thread(self._reset, seed)
            self._announced = self._on_episode_thread(self._served_names)
        except BaseException:
            self._worker.shutdown(wait=False)
            self._worker = None
            raise

    def _mark_episode_thread(self) -> None:
        self._episode_thread = threading.get_ident()

    def _on_episode_thread(self, fn: Callable[..., _T], /, *args: Any) -> _T:
        """``fn(*args)`` run on the episode thread (directly when already on it); its result,
        or its exception raised here."""
        if threading.get_ident() == self._episode_thread:
            return fn(*args)
        if self._worker is None:
            raise RuntimeError("the episode server is closed")
        return self._worker.submit(fn, *args).result()

    @classmethod
    def for_task(
        cls,
        task: str,
        *,
        backend: str = "sandbox",
        max_steps: int | None = None,
        tools: str = "task",
        screenshots: bool = False,
        **kwargs: Any,
    ) -> EpisodeServer:
        """A server over a new ``PhonePlanEnv(task=task, backend=backend, max_steps=max_steps,
        tools=tools, screenshots=screenshots)`` (``tools``: ``"task"``, the default,
        ``"retrieve"``, ``"search"`` or ``"all"``; see the module docstring; ``screenshots``:
        every call's result carries the screen after it as an image block); ``kwargs`` go to
        :class:`EpisodeServer`. Raises ``KeyError`` for an unknown task id and ``ValueError``
        for a backend that cannot run it or an unknown ``tools``."""
        from phoneenv.env import PhonePlanEnv

        env = PhonePlanEnv(task=task, backend=backend, max_steps=max_steps, tools=tools, screenshots=screenshots)
        return cls(env, **kwargs)

    # -- names --------------------------------------------------------------------------------
    def to_mcp(self, name: str) -> str:
        """The served name of canonical tool ``name`` (``clock.set_alarm`` → ``clock__set_alarm``
        with ``names="underscore"``)."""
        return name.replace(".", "__") if self.names == "underscore" else name

    def to_canonical(self, name: str) -> str:
        """The canonical name of served tool ``name`` (the inverse of :meth:`to_mcp`); a dotted
        name is accepted in either style."""
        return name.replace("__", ".") if self.names == "underscore" else name

    def _specs(self) -> list[ToolSpec]:
        specs = list(self.env.tool_specs)
        served: dict[str, str] = {}
        for spec in [*specs, _reset_spec()]:
            if "__" in spec.name:
                raise ValueError(f"tool {spec.name!r} holds '__', which the name mapping reserves")
            mcp_name = self.to_mcp(spec.name)
            if mcp_name in served:
                raise ValueError(f"tools {served[mcp_name]!r} and {spec.name!r} are both served as {mcp_name!r}")
            served[mcp_name] = spec.name
        return specs

    # -- tools --------------------------------------------------------------------------------
    def list_tools(self) -> list[Any]:
        """The episode's tools as ``mcp.types.Tool`` (the active frame's, plus ``episode__reset``)."""
        from mcp import types

        specs = self._on_episode_thread(self._specs)
        tools = [_mcp_tool(self.to_mcp(s.name), s, types) for s in specs]
        tools.append(_mcp_tool(self.to_mcp(RESET_TOOL), _reset_spec(), types))
        return tools

    def _served_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.env.tool_specs)

    def tools_changed(self) -> bool:
        """Whether the offered tools differ from those last announced (at start, or by an
        earlier True answer, which counts as announcing them): the server then sends
        ``notifications/tools/list_changed``."""

        def check() -> bool:
            now = self._served_names()
            changed, self._announced = now != self._announced, now
            return changed

        return self._on_episode_thread(check)

    def call_tool(self, name: str, arguments: dict[str, Any] | None) -> Any:
        """Serve one call (``name`` as served): a step of the episode, or ``episode__reset``.
        Returns an ``mcp.types.CallToolResult``; never raises on the client's input (a bad
        name or bad arguments is an error feedback, as for any agent)."""
        from mcp import types

        canonical = self.to_canonical(name)
        if canonical == RESET_TOOL:
            payload, image = self._on_episode_thread(self._reset_call, arguments or {})
        else:
            payload, image = self._on_episode_thread(self._step, canonical, arguments or {})
        content: list[Any] = [types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))]
        if image is not None:
            content.append(
                types.ImageContent(
                    type="image", data=base64.b64encode(png_bytes(image)).decode(), mime_type="image/png"
                )
            )
        return types.CallToolResult(content=content, structured_content=payload, is_error=not payload.get("ok", False))

    def _reset(self, seed: int | None) -> dict[str, Any]:
        self._write_trace()
        obs, info = self.env.reset(seed=seed)
        self._info = info
        self._goal = self.env.trace.goal
        self._over = False
        self._written = False
        return obs

    def _reset_call(self, arguments: Any) -> tuple[dict[str, Any], np.ndarray | None]:
        if not isinstance(arguments, dict):  # the protocol's type; a client in process may send any
            return {
                "ok": False,
                "error": "invalid_arguments",
                "message": f"{RESET_TOOL}: arguments must be an object, not {type(arguments).__name__}",
                "path": "",
            }, None
        seed = arguments.get("seed")
        extra = sorted(set(arguments) - {"seed"})
        if extra or not (
            seed is None or (isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed <= MAX_SEED)
        ):
            what = (
                f"unknown arguments {extra}"
                if extra
                else f"seed must be an integer from 0 to {MAX_SEED} (2**63 - 1) or null, not {seed!r}"
            )
            return {
                "ok": False,
                "error": "invalid_arguments",
                "message": f"{RESET_TOOL}: {what}",
                "path": "/seed",
            }, None
        obs = self._reset(seed)
        return {
            "ok": True,
            "result": {"episode": "started", "task_id": self.env.task.id, "goal": self._goal, "seed": seed},
        }, obs.get("screenshot")  # screenshots=True: the new episode's first screen

    def _step(self, canonical: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], np.ndarray | None]:
        reset = self.to_mcp(RESET_TOOL)
        if self._over:
            return {
                "ok": False,
                "error": "precondition_failed",
                "message": "the episode is over",
                "hint": f"call {reset} to start a new episode; the verdict is in {_URI}verdict",
            }, None
        try:
            obs, _, terminated, truncated, info = self.env.step({"name": canonical, "arguments": arguments})
        except Exception as exc:  # a defect: the env's contract is never to raise on an action
            log.error("env.step raised on %s in %s", canonical, self.env.task.id, exc_info=True)
            return {
                "ok": False,
                "error": "internal_error",
                "message": f"the env failed inside this call ({type(exc).__name__}), not because of it",
                "hint": f"call {reset} to start the task over",
            }, None
        payload: dict[str, Any] = json.loads(obs["feedback"])
        fb = info.get("feedback")
        image = getattr(fb, "image", None)
        if image is None:
            image = obs.get("screenshot")  # screenshots=True: the screen after every call
        if "verdict" in info:
            self._over = True
            payload["episode"] = {
                "over": True,
                "terminated": terminated,
                "truncated": truncated,
                "success": info["success"],
                "progress": info["progress"],
                "verdict": info["verdict"],
            }
            self._write_trace()
        return payload, image

    def _write_trace(self) -> None:
        """Write the episode's trace to ``trace_path`` (atomically); a failure is logged, never
        raised into the client's call."""
        if self.trace_path is None or self._written or not self.env.trace.steps:
            return
        tmp = self.trace_path.with_name(self.trace_path.name + ".tmp")
        try:
            self.trace_path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(self.env.trace.model_dump_json(), encoding="utf-8")
            tmp.replace(self.trace_path)
        except OSError:
            log.error("could not write the trace of %s to %s", self.env.task.id, self.trace_path, exc_info=True)
            return
        self._written = True

    # -- resources ----------------------------------------------------------------------------
    def list_resources(self) -> list[Any]:
        """The served resources as ``mcp.types.Resource`` (see :data:`RESOURCES`)."""
        from mcp import types

        return [
            types.Resource(uri=_URI + name, name=name, mime_type=mime, description=desc)
            for name, (mime, desc) in RESOURCES.items()
        ]

    def read_resource(self, uri: str) -> tuple[str | bytes, str]:
        """``(content, mime type)`` of resource ``uri``; bytes for the PNG. Raises ``KeyError``
        for an unknown URI."""
        name = uri[len(_URI) :] if uri.startswith(_URI) else None
        if name not in RESOURCES:
            raise KeyError(f"no resource {uri!r}; resources: {', '.join(_URI + n for n in RESOURCES)}")
        return self._on_episode_thread(self._read, name)

    def _read(self, name: str) -> tuple[str | bytes, str]:
        mime = RESOURCES[name][0]
        env = self.env
        if name == "screen.png":
            return png_bytes(env.backend.screenshot()), mime
        if name == "screen.txt":
            return screen_text(env), mime
        if name == "task":
            task = env.task
            doc = {
                "id": task.id,
                "goal": self._goal,
                "category": task.category.value,
                "domain": task.domain.value,
                "step": len(env.trace.steps),
                "max_steps": self._info.get("max_steps"),
                "over": self._over,
            }
            return json.dumps(doc, ensure_ascii=False), mime
        if name == "verdict":
            verdict = env.verdict if self._over else None
            doc = {"over": False} if verdict is None else {"over": True, **verdict.model_dump(mode="json")}
            return json.dumps(doc, ensure_ascii=False), mime
        return env.trace.model_dump_json(), mime

    def instructions(self) -> str:
        """The server's instructions: the user's goal and how the episode ends."""
        finish = self.to_mcp("finish")
        return (
            f"You are operating a phone for its user (phoneenv task {self.env.task.id}). "
            f"The user asks: {self._goal}\n"
            f"Use the tools to do it, then call {finish} with your answer or a one-line summary; "
            f"its result carries the verdict. Resources {_URI}screen.png and {_URI}screen.txt show the screen; "
            f"{self.to_mcp(RESET_TOOL)} starts the task over."
        )

    def close(self) -> None:
        """Write the trace of an unfinished episode (with ``trace_path``), close the env and
        stop the episode thread. Idempotent."""
        if self._worker is None:
            return

        def close() -> None:
            self._write_trace()
            self.env.close()

        try:
            self._on_episode_thread(close)
        finally:
            worker, self._worker = self._worker, None
            worker.shutdown(wait=threading.get_ident() != self._episode_thread)

    # -- the SDK server -----------------------------------------------------------------------
    def build(self, name: str = "phoneenv") -> Server[Any]:
        """The ``mcp.server.lowlevel.Server`` serving this episode (tools and resources)."""
        import anyio
        from mcp import types
        from mcp.server.lowlevel import NotificationOptions, Server
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated, ToolsListChanged
        from mcp.shared.exceptions import MCPError

        bus = InMemorySubscriptionBus()  # the 2026-07-28 era: list changes ride subscriptions/listen

        class EpisodeMCPServer(Server[Any]):
            """The SDK's server, declaring ``tools.listChanged`` (the episode's tools change)."""

            def create_initialization_options(self, notification_options: Any = None, *args: Any, **kw: Any) -> Any:
                options = notification_options or NotificationOptions(tools_changed=True)
                return super().create_initialization_options(options, *args, **kw)

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=await anyio.to_thread.run_sync(self.list_tools))

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            result = await anyio.to_thread.run_sync(self.call_tool, params.name, params.arguments)
            for name in RESOURCES:  # a call may change each of them (the verdict: finish, reset)
                await bus.publish(ResourceUpdated(_URI + name))
            if await anyio.to_thread.run_sync(self.tools_changed):
                try:  # each era's channel; the session drops its copy at 2026-07-28
                    await bus.publish(ToolsListChanged())
                    await ctx.session.send_tool_list_changed()
                except Exception:  # a client gone mid-call; the result below fails the same way
                    log.warning("could not send tools/list_changed", exc_info=True)
            return result

        async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=self.list_resources())

        async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
            uri = str(params.uri)
            try:
                content, mime = await anyio.to_thread.run_sync(self.read_resource, uri)
            except KeyError as exc:
                raise MCPError(code=types.INVALID_PARAMS, message=str(exc.args[0])) from None
            if isinstance(content, bytes):
                blob = types.BlobResourceContents(uri=uri, blob=base64.b64encode(content).decode(), mime_type=mime)
                return types.ReadResourceResult(contents=[blob])
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, text=content, mime_type=mime)]
            )

        from phoneenv import __version__

        return EpisodeMCPServer(
            name,
            version=__version__,
            instructions=self.instructions(),
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_read_resource=read_resource,
            on_subscriptions_listen=ListenHandler(bus),
        )


def _reset_spec() -> ToolSpec:
    from phoneenv.contract import Domain

    return ToolSpec(
        name=RESET_TOOL,
        description="Start the task over: a new episode from the task's initial state.",
        parameters=_RESET_SCHEMA,
        app="episode",
        domain=Domain.DEVICE,
        effect=Effect.WRITE,
    )


def _mcp_tool(name: str, spec: ToolSpec, types: Any) -> Any:
    """``spec`` as an ``mcp.types.Tool`` named ``name``."""
    schema = dict(spec.parameters)
    schema.setdefault("type", "object")
    annotations = types.ToolAnnotations(
        title=spec.name,
        read_only_hint=spec.effect is Effect.READ,
        destructive_hint=spec.effect is Effect.SENSITIVE,
    )
    return types.Tool(name=name, description=spec.description, input_schema=schema, annotations=annotations)


async def _serve_stdio(server: EpisodeServer) -> None:
    from mcp.server.stdio import stdio_server

    lowlevel = server.build()
    async with stdio_server() as (read, write):  # the options declare tools.listChanged
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


def serve_stdio(server: EpisodeServer) -> None:
    """Serve ``server`` over this process's stdin/stdout until the client closes them."""
    import anyio

    try:
        anyio.run(_serve_stdio, server)
    finally:
        server.close()


def serve_http(
    server: EpisodeServer,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    path: str = "/mcp",
    ready: Any = None,
) -> None:
    """Serve ``server`` over streamable HTTP at ``http://host:port/path`` until interrupted.

    ``port=0`` takes a free port; ``ready(url)`` is called with the URL once the socket listens
    (before requests are answered: early ones wait in the listen queue). DNS-rebinding protection
    is on for loopback hosts (the SDK's default).

    Raises:
        OSError: the address is taken or cannot be bound.
    """
    import socket

    import uvicorn

    app = server.build().streamable_http_app(streamable_http_path=path, host=host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        if ready is not None:
            ready(f"http://{shown}:{bound}{path}")
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        server.close()
