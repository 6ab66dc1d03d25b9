"""The ``mcp`` backend: the tools of any MCP server join an episode as an app.

An MCP server (a stdio command or a streamable-HTTP URL, :class:`McpServer`) becomes the app
``<app>``: each of its tools is offered as ``<app>.<verb>`` (:func:`tool_verb`: the MCP name
lower-cased, each run of other characters than ``[a-z0-9]`` as one ``_``, ``complete-item`` →
``checklist.complete_item``; the mapping back to the server's name is kept). The tools join
those of an inner backend (the sandbox by default), so a task can mix sandbox apps and real MCP
servers, and they are served through the same contract as every other tool:

- arguments are validated against the tool's ``inputSchema`` (JSON Schema) before the server is
  called: a bad call is an ``invalid_arguments`` feedback with the JSON Pointer of the bad value,
  and the server never sees it;
- a result becomes a :class:`~phoneenv.contract.Feedback`: ``structuredContent`` when the server
  gives it, else the text blocks (read as JSON when they parse; several blocks as a list; an
  image block as ``{"type": "image", "mime_type", "bytes"}``); a result with ``isError`` is a
  ``precondition_failed`` feedback carrying the server's message; a JSON-RPC error is
  ``invalid_arguments`` (invalid params), ``unknown_tool`` (method not found) or
  ``device_error``; a server that cannot be reached or drops the connection is ``device_error``
  and a call past ``timeout_s`` is ``timeout`` (both infrastructure errors, never the agent's);
- each call advances the phone clock by one second, as in every world;
- the effect comes from the tool's annotations (``readOnlyHint`` → ``read``,
  ``destructiveHint`` → ``sensitive``, else ``write``; :attr:`McpServer.effects` overrides), so
  confirmation and ``read_only`` rules apply to MCP tools too.

An MCP server's state is opaque to phoneenv, so a task over one is judged by ``answer`` and
``behavior`` criteria (``required_call`` with arguments, ``forbidden_call``, ``read_only``,
``confirm_before``...); its ``state`` criteria read the inner backend's tables as usual. Such a
task lists ``"mcp"`` in its ``backends``.

**Replay cache.** With a :class:`ReplayCache` (one JSON file), every tool list and every answer
the servers give is recorded; an episode then replays without the server. An answer is keyed by
the app, the tool, the canonical JSON of the arguments and the digest of the *writes* the
episode made to that app before it (every call of a non-read tool, in order): a read after an
``add_item`` is another key than the same read before it, so a stateful server replays
faithfully and a call whose world was never recorded is never answered from another world's.
Modes (``mode=``):

- ``"record"`` (default): answers found in the cache are served from it, others are asked of the
  live server and recorded; before the first live call of an episode, the writes that episode
  already made from the cache are sent to the (fresh) server, so its state matches;
- ``"replay"``: the cache only, the server is never started (the tool list comes from the
  cache too); a call not recorded is a ``device_error`` feedback (an infrastructure error: the
  recording lacks it);
- ``"live"``: the server answers every call; nothing is read from or written to the cache.

Determinism needs a server that starts from the same state each episode: with
``fresh_per_episode`` (the default) a stdio server is restarted at every reset after a live
call (an HTTP server must reset itself, or be stateless). :meth:`McpClientBackend.restore` cannot
roll a live server back; replayed episodes restore fully.

    >>> from phoneenv.backends.mcp_client import McpClientBackend, McpServer, ReplayCache
    >>> backend = McpClientBackend(  # doctest: +SKIP
    ...     [McpServer(app="checklist", command=["python", "checklist_server.py"], domain="notes")],
    ...     cache=ReplayCache("checklist.replay.json"),
    ... )
    >>> env = gym.make("PhonePlan-v0", task=task, backend=backend)  # doctest: +SKIP

Needs the ``mcp`` extra (the official MCP SDK) unless ``mode="replay"``.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import logging
import os
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from phoneenv.backends.base import Backend
from phoneenv.backends.llmsim import SchemaValidator, canonical_json
from phoneenv.contract import Domain, Effect, ErrorKind, Feedback, TaskSpec, ToolSpec
from phoneenv.errors import PhoneEnvError
from phoneenv.harness import feedback
from phoneenv.phone import SECONDS_PER_CALL

__all__ = [
    "CACHE_FORMAT",
    "McpClientBackend",
    "McpEntry",
    "McpServer",
    "ReplayCache",
    "ReplayCacheError",
    "ReplayMiss",
    "tool_verb",
]

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
"""The replay cache file's ``format``; a file of another format is refused."""

_APP = re.compile(r"^[a-z][a-z0-9_]*$")
_MAX_MESSAGE = 2_000


def tool_verb(mcp_name: str) -> str:
    """The verb an MCP tool name becomes: lower case, each run of characters outside
    ``[a-z0-9]`` as one ``_`` (so no verb holds ``__``, which tool-name mapping reserves), a
    leading digit prefixed with ``t``. ``complete-item`` → ``complete_item``, ``Get.Weather`` →
    ``get_weather``, ``a__b`` → ``a_b``."""
    verb = re.sub(r"[^a-z0-9]+", "_", mcp_name.lower()).strip("_")
    if not verb or not verb[0].isalpha():
        verb = "t" + (verb or "ool")
    return verb


class McpServer(BaseModel):
    """One MCP server as an app of the episode.

    ``app``: the app name its tools are offered under (``[a-z][a-z0-9_]*``; not an app the inner
    backend has). Exactly one of ``command`` (argv of a stdio server, started as a subprocess)
    or ``url`` (a streamable-HTTP endpoint). ``env`` (extra environment variables of the stdio
    server) and ``cwd``; ``domain`` of its tools; ``effects`` overrides a tool's effect by its
    MCP name; ``timeout_s`` bounds one call (seconds); ``fresh_per_episode`` restarts the server
    connection (a stdio server: the process) at each reset after a live call.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    app: str = Field(pattern=_APP.pattern, max_length=40)
    command: list[str] | None = Field(default=None, min_length=1)
    url: str | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    domain: Domain = Domain.DEVICE
    effects: dict[str, Effect] = Field(default_factory=dict)
    timeout_s: float = Field(default=30.0, gt=0)
    fresh_per_episode: bool = True

    @model_validator(mode="after")
    def _one_target(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.app!r}: give exactly one of command= (stdio) or url= (streamable HTTP)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"MCP server {self.app!r}: url must be http(s)://..., not {self.url!r}")
        return self

    def where(self) -> str:
        """The server in words for messages (the URL without credentials, or the command)."""
        if self.url is not None:
            return re.sub(r"//[^/@]*@", "//", self.url)
        return " ".join(self.command or [])


class ReplayMiss(PhoneEnvError, LookupError):
    """A call (or a tool list) that a ``replay``-mode cache does not hold."""


class ReplayCacheError(PhoneEnvError, ValueError):
    """A replay cache file that cannot be read or is not a replay cache; the message names it."""


def _cache_problem(doc: Any) -> str | None:
    """What makes ``doc`` (a replay cache file's JSON) no replay cache, None when it is one: the
    layout of :class:`ReplayCache`, each recorded tool an object with a name, each call's
    ``result`` an object."""
    if not isinstance(doc, dict) or doc.get("format") != CACHE_FORMAT:
        return f"an object with 'format': {CACHE_FORMAT} expected"
    tools, calls = doc.get("tools") or {}, doc.get("calls") or {}
    if not isinstance(tools, dict):
        return "'tools' must be an object of tool lists by app"
    for app, listed in tools.items():
        if not isinstance(listed, list):
            return f"tools.{app} must be a list of tools"
        for i, tool in enumerate(listed):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
                return f"tools.{app}.{i} must be a tool object with a name"
            for key, kind in (
                ("inputSchema", dict), ("outputSchema", dict), ("annotations", dict), ("description", str),
                ("title", str),
            ):  # fmt: skip
                if tool.get(key) is not None and not isinstance(tool[key], kind):
                    return f"tools.{app}.{i}.{key} must be {'an object' if kind is dict else 'a string'}"
    if not isinstance(calls, dict):
        return "'calls' must be an object of recorded calls by key"
    for key, entry in calls.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("result"), dict):
            return f"calls.{key} must be an object with a 'result' object"
    return None


class ReplayCache:
    """The recorded tool lists and answers of MCP servers: one JSON file, written atomically
    after each new entry (entries sorted by key, so equal recordings are equal files).

    Layout: ``{"format": 1, "tools": {app: [Tool as MCP JSON, ...]}, "calls": {key: {"app",
    "tool", "arguments", "writes", "result"}}}`` with ``key`` from :meth:`key` and ``result``
    the server's ``CallToolResult`` as MCP JSON. Thread-safe.

    Args:
        path: the file (read when it exists, created on the first entry), or None for memory only.

    Raises:
        ReplayCacheError: (a ``ValueError``) a file that cannot be read or is not a replay cache of
            :data:`CACHE_FORMAT` (a tool list that is not a list of named tools, a call without its
            result...); the message names the file.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._tools: dict[str, list[dict[str, Any]]] = {}
        self._calls: dict[str, dict[str, Any]] = {}
        if self.path is not None and self.path.exists():
            from phoneenv.tracefiles import read_json_file

            fix = "move it aside to record a new one"
            try:
                doc = read_json_file(self.path)
            except ValueError as exc:
                raise ReplayCacheError(f"{exc}; not a replay cache ({fix})") from None
            problem = _cache_problem(doc)
            if problem is not None:
                raise ReplayCacheError(f"{self.path}: not a replay cache of format {CACHE_FORMAT}: {problem} ({fix})")
            self._tools = dict(doc.get("tools") or {})
            self._calls = dict(doc.get("calls") or {})

    @staticmethod
    def key(app: str, tool: str, arguments: Mapping[str, Any], writes: str) -> str:
        """sha256 (hex) of the app, the server's tool name, the canonical arguments and the
        digest of the episode's earlier writes to the app (:meth:`McpClientBackend` keeps it)."""
        text = canonical_json([app, tool, canonical_json(arguments), writes])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def tools(self, app: str) -> list[dict[str, Any]] | None:
        """The recorded tool list of ``app`` (MCP JSON), or None."""
        got = self._tools.get(app)
        return None if got is None else json.loads(json.dumps(got))

    def put_tools(self, app: str, tools: list[dict[str, Any]]) -> None:
        """Record ``app``'s tool list."""
        with self._lock:
            if self._tools.get(app) == tools:
                return
            self._tools[app] = tools
            self._save()

    def get(self, key: str) -> dict[str, Any] | None:
        """A copy of the recorded answer (``CallToolResult`` MCP JSON) under ``key``, or None."""
        entry = self._calls.get(key)
        return None if entry is None else json.loads(json.dumps(entry["result"]))

    def put(self, key: str, result: dict[str, Any], *, app: str, tool: str, arguments: Any, writes: str) -> None:
        """Record ``result`` under ``key`` (the call's parts kept beside it for people reading the file)."""
        with self._lock:
            self._calls[key] = {"app": app, "tool": tool, "arguments": arguments, "writes": writes, "result": result}
            self._save()

    def __len__(self) -> int:
        return len(self._calls)

    def _save(self) -> None:
        if self.path is None:
            return
        # entries sorted by app and key; the values keep the server's own key order (a replayed
        # result is then the recorded one byte for byte)
        doc = {
            "format": CACHE_FORMAT,
            "tools": {a: self._tools[a] for a in sorted(self._tools)},
            "calls": {k: self._calls[k] for k in sorted(self._calls)},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")
        tmp.replace(self.path)


@dataclass(frozen=True)
class McpEntry:
    """An MCP tool as the env sees it: ``spec``, ``validator``, and the server's name for it."""

    spec: ToolSpec
    validator: SchemaValidator
    server: McpServer
    mcp_name: str


_open: weakref.WeakSet[_Connection] = weakref.WeakSet()


@atexit.register
def _close_open_connections() -> None:
    """At exit, close the sessions an un-closed backend left open (their stdio servers stop)."""
    for conn in list(_open):
        conn.close()


class _Connection:
    """A live MCP client session on its own event loop, in a daemon thread (the env is
    synchronous; a daemon thread never keeps the process alive when a backend is left open)."""

    def __init__(self, server: McpServer) -> None:
        import anyio
        from anyio.from_thread import BlockingPortal
        from mcp import Client, StdioServerParameters

        if server.command is not None:
            target: Any = StdioServerParameters(
                command=server.command[0], args=server.command[1:], env=server.env, cwd=server.cwd
            )
        else:
            target = server.url
        ready = threading.Event()
        box: dict[str, Any] = {}

        async def serve() -> None:
            async with BlockingPortal() as portal:
                box["portal"] = portal
                ready.set()
                await portal.sleep_until_stopped()

        def run() -> None:
            try:
                anyio.run(serve)
            finally:
                ready.set()

        self._thread = threading.Thread(target=run, name=f"phoneenv-mcp-{server.app}", daemon=True)
        self._thread.start()
        ready.wait()
        self.portal: Any = box["portal"]
        self._closed = False
        try:
            self._client_cm = self.portal.wrap_async_context_manager(
                Client(target, read_timeout_seconds=server.timeout_s)
            )
            self.client = self._client_cm.__enter__()
        except BaseException:
            self._stop()
            raise
        _open.add(self)

    def list_tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(100):
            page = self.portal.call(functools.partial(self.client.list_tools, cursor=cursor))
            tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.portal.call(self.client.call_tool, name, arguments)
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    def close(self) -> None:
        """End the session (a stdio server's process with it) and the loop thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        _open.discard(self)
        try:
            self._client_cm.__exit__(None, None, None)
        except Exception:  # a server already gone: nothing left to close
            log.debug("closing an MCP session failed", exc_info=True)
        finally:
            self._stop()

    def _stop(self) -> None:
        try:
            self.portal.call(self.portal.stop)
        except Exception:  # the loop already ended
            log.debug("stopping an MCP event loop failed", exc_info=True)
        self._thread.join(timeout=10)


def _effect(server: McpServer, tool: Mapping[str, Any]) -> Effect:
    if tool["name"] in server.effects:
        return server.effects[tool["name"]]
    notes = tool.get("annotations") or {}
    if notes.get("readOnlyHint"):
        return Effect.READ
    if notes.get("destructiveHint"):
        return Effect.SENSITIVE
    return Effect.WRITE


def _entry(server: McpServer, tool: Mapping[str, Any]) -> McpEntry:
    """The :class:`McpEntry` of an MCP tool (MCP JSON). Raises ``ValueError`` for a tool whose
    input schema is not a valid JSON Schema object."""
    params = dict(tool.get("inputSchema") or {"type": "object"})
    if params.get("type", "object") != "object":
        raise ValueError(
            f"MCP server {server.app!r}: tool {tool['name']!r} takes {params.get('type')!r}, not an object"
        )
    params["type"] = "object"
    params.setdefault("properties", {})
    params.setdefault("required", [])
    try:
        validator = SchemaValidator(params)
    except Exception as exc:  # jsonschema.SchemaError: the server's schema, not the agent's input
        reason = getattr(exc, "message", None) or str(exc).splitlines()[0]  # not the whole metaschema
        raise ValueError(
            f"MCP server {server.app!r}: tool {tool['name']!r} has an invalid input schema: {reason}"
        ) from None
    spec = ToolSpec(
        name=f"{server.app}.{tool_verb(tool['name'])}",
        description=tool.get("description") or tool.get("title") or tool["name"],
        parameters=params,
        returns=tool.get("outputSchema") or {},
        app=server.app,
        domain=server.domain,
        effect=_effect(server, tool),
    )
    return McpEntry(spec, validator, server, tool["name"])


def _value(result: Mapping[str, Any]) -> Any:
    """What an MCP ``CallToolResult`` (MCP JSON) says, as one JSON value."""
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    values: list[Any] = []
    for block in result.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            text = block.get("text", "")
            try:
                values.append(json.loads(text))
            except ValueError:
                values.append(text)
        elif kind in ("image", "audio"):
            values.append(
                {"type": kind, "mime_type": block.get("mimeType"), "bytes": len(block.get("data", "")) * 3 // 4}
            )
        elif kind == "resource_link":
            values.append({"type": kind, "uri": block.get("uri"), "name": block.get("name")})
        else:
            values.append({"type": kind})
    return values[0] if len(values) == 1 else values


def _message(result: Mapping[str, Any]) -> str:
    texts = [b.get("text", "") for b in result.get("content") or [] if b.get("type") == "text"]
    text = " ".join(t for t in texts if t) or "the server reported an error without a message"
    return text[:_MAX_MESSAGE]


class McpClientBackend(Backend):
    """An inner backend plus the tools of MCP servers, each server an app (module docstring).

    Args:
        servers: the MCP servers (:class:`McpServer`), app names distinct.
        inner: the world of every other tool (default: a new
            :class:`~phoneenv.backends.sandbox.SandboxBackend`).
        cache: a :class:`ReplayCache` or the path of its file; None: no recording.
        mode: ``"record"``, ``"replay"`` or ``"live"`` (module docstring).

    Raises:
        ValueError: duplicate apps, an app the inner backend has, a tool name clash, an invalid
            input schema, ``replay`` without a cache, an unknown mode.
        ReplayCacheError: (a ``ValueError``) a cache file that cannot be read or is no replay
            cache, or whose recorded tool list is not usable (named).
        ReplayMiss: ``replay`` mode and a server whose tool list the cache lacks.
        ConnectionError: a server that cannot be reached to list its tools.
        ImportError: the ``mcp`` extra is missing and a server must be contacted.
    """

    name = "mcp"

    def __init__(
        self,
        servers: Sequence[McpServer],
        inner: Backend | None = None,
        *,
        cache: ReplayCache | str | os.PathLike[str] | None = None,
        mode: Literal["record", "replay", "live"] = "record",
    ) -> None:
        if mode not in ("record", "replay", "live"):
            raise ValueError(f"mode must be 'record', 'replay' or 'live', not {mode!r}")
        if mode == "replay" and cache is None:
            raise ValueError("mode='replay' needs a cache= (the recording to replay)")
        apps = [s.app for s in servers]
        if len(set(apps)) != len(apps):
            raise ValueError(f"MCP servers with the same app name: {sorted(a for a in set(apps) if apps.count(a) > 1)}")
        if inner is None:
            from phoneenv.backends.sandbox import SandboxBackend

            inner = SandboxBackend()
        self.inner = inner
        self.servers: dict[str, McpServer] = {s.app: s for s in servers}
        self.cache = ReplayCache(cache) if cache is not None and not isinstance(cache, ReplayCache) else cache
        self.mode = mode
        self._conns: dict[str, _Connection] = {}
        self._live_used: set[str] = set()
        self._writes: dict[str, list[str]] = {a: [] for a in self.servers}
        """Per app, this episode's earlier write calls (canonical JSON of [tool, arguments])."""
        self._unsent: dict[str, list[tuple[str, dict[str, Any]]]] = {a: [] for a in self.servers}
        """Per app, writes served from the cache this episode that the live server has not seen."""
        inner_apps = {e.spec.app for e in inner.tools().values()}
        taken = sorted(set(self.servers) & inner_apps)
        if taken:
            raise ValueError(f"MCP app names {taken} are apps of the {inner.name} backend; pick other names")
        self._entries: dict[str, McpEntry] = {}
        for app in self.servers:
            cached = self.cache is not None and self.mode != "live" and self.cache.tools(app) is not None
            for tool in self._tool_list(app):
                try:
                    entry = _entry(self.servers[app], tool)
                except ValueError as exc:
                    if not cached:
                        raise
                    raise ReplayCacheError(
                        f"{self._cache_name()}: a recorded tool of {app!r} is not usable: {exc} (move the cache "
                        "aside to record a new one)"
                    ) from None
                if entry.spec.name in self._entries:
                    raise ValueError(
                        f"MCP tools {self._entries[entry.spec.name].mcp_name!r} and {tool['name']!r} of {app!r} "
                        f"both become {entry.spec.name!r}"
                    )
                self._entries[entry.spec.name] = entry
        self._merged_for: Any = None
        self._merged: dict[str, Any] = {}

    @property
    def entries(self) -> dict[str, McpEntry]:
        """The MCP tools by the name the episode offers (``<app>.<verb>``), in the servers' order."""
        return dict(self._entries)

    # -- servers ------------------------------------------------------------------------------
    def _tool_list(self, app: str) -> list[dict[str, Any]]:
        recorded = self.cache.tools(app) if self.cache is not None and self.mode != "live" else None
        if recorded is not None:
            return recorded
        if self.mode == "replay":
            raise ReplayMiss(f"the replay cache {self._cache_name()} holds no tool list of {app!r}; record it first")
        try:
            tools = self._connect(app).list_tools()
        except ImportError:
            raise
        except Exception as exc:
            raise ConnectionError(
                f"MCP server {app!r} ({self.servers[app].where()}) could not list its tools: {_reason(exc)}"
            ) from exc
        if self.cache is not None and self.mode == "record":
            self.cache.put_tools(app, tools)
        return tools

    def _cache_name(self) -> str:
        path = None if self.cache is None else self.cache.path
        return str(path) if path is not None else "(in memory)"

    def _connect(self, app: str) -> _Connection:
        conn = self._conns.get(app)
        if conn is None:
            from phoneenv.mcp_server import require_mcp

            require_mcp("an MCP server's tools as an app")
            conn = self._conns[app] = _Connection(self.servers[app])
        return conn

    def _drop(self, app: str) -> None:
        conn = self._conns.pop(app, None)
        if conn is not None:
            conn.close()

    # -- the Backend interface ----------------------------------------------------------------
    def reset(self, task: TaskSpec) -> None:
        """Reset the inner world to ``task``; forget the episode's writes; restart the servers
        used live last episode (those with ``fresh_per_episode``)."""
        self.inner.reset(task)
        for app in sorted(self._live_used):
            if self.servers[app].fresh_per_episode:
                self._drop(app)
        self._live_used.clear()
        self._writes = {a: [] for a in self.servers}
        self._unsent = {a: [] for a in self.servers}

    def tools(self) -> Mapping[str, Any]:
        """The inner backend's tools and every MCP tool (one mapping, the same object while the
        inner backend's tools are)."""
        inner = self.inner.tools()
        if self._merged_for is not inner:
            clash = sorted(set(inner) & set(self._entries))
            if clash:
                raise ValueError(f"MCP tools {clash} clash with the {self.inner.name} backend's")
            self._merged = {**inner, **self._entries}
            self._merged_for = inner
        return self._merged

    def can_run(self, task: TaskSpec) -> bool:
        """Tasks that list ``mcp`` in their backends, and every task the inner backend runs."""
        return self.name in task.backends or self.inner.can_run(task)

    def served_by(self, name: str) -> str:
        """``mcp`` for an MCP tool, else what the inner backend says."""
        return self.name if name in self._entries else self.inner.served_by(name)

    def call(self, name: str, arguments: dict[str, Any]) -> Feedback:
        """Serve an MCP tool from the cache or its server (module docstring), anything else
        from the inner backend. Never raises."""
        entry = self._entries.get(name)
        if entry is None:
            return self.inner.call(name, arguments)
        self._tick()
        spec = entry.spec
        app = entry.server.app
        writes = hashlib.sha256("\n".join(self._writes[app]).encode("utf-8")).hexdigest()
        key = ReplayCache.key(app, entry.mcp_name, arguments, writes)
        result = self.cache.get(key) if self.cache is not None and self.mode != "live" else None
        from_cache = result is not None
        if result is None:
            if self.mode == "replay":
                return Feedback(
                    ok=False,
                    error=ErrorKind.DEVICE_ERROR,
                    message=f"{name}: this call is not in the replay cache {self._cache_name()}",
                    hint="record the episode against the live server (mode='record') to replay it",
                    recoverable=False,
                )
            try:
                result = self._live(app, entry.mcp_name, arguments)
            except Exception as exc:
                return self._failed(name, entry.server, exc)
            if self.cache is not None and self.mode == "record":
                self.cache.put(key, result, app=app, tool=entry.mcp_name, arguments=arguments, writes=writes)
        if spec.effect is not Effect.READ:
            self._writes[app].append(canonical_json([entry.mcp_name, arguments]))
            if from_cache:
                self._unsent[app].append((entry.mcp_name, dict(arguments)))
        return self._feedback(name, entry.server, result)

    def _live(self, app: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Ask the live server; a fresh one (``fresh_per_episode``: restarted at reset) is first
        sent the writes this episode made from the cache, so its state is the episode's."""
        conn = self._connect(app)
        self._live_used.add(app)
        if self.servers[app].fresh_per_episode:
            for earlier, args in self._unsent[app]:
                conn.call(earlier, args)
        self._unsent[app].clear()
        return conn.call(tool, arguments)

    def _feedback(self, name: str, server: McpServer, result: Mapping[str, Any]) -> Feedback:
        if result.get("isError"):
            return Feedback(
                ok=False,
                error=ErrorKind.PRECONDITION_FAILED,
                message=f"{name}: {_message(result)}",
                hint=(
                    f"the {server.app} server refused the call; read its message, "
                    "then change the arguments or do what it needs first"
                ),
                recoverable=True,
            )
        return Feedback(ok=True, result=_value(result))

    def _failed(self, name: str, server: McpServer, exc: Exception) -> Feedback:
        """The feedback of a call that raised: the server's JSON-RPC error (invalid params,
        unknown method), a timeout, or the server lost (then the session is dropped, and the next
        call reconnects). Never raises, not even without the ``mcp`` extra."""
        try:
            from mcp.shared.exceptions import MCPError
            from mcp.types import INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_TIMEOUT
        except ImportError:  # the SDK is missing: exc says so
            MCPError, INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_TIMEOUT = (), None, None, None
        for err in _leaves(exc):
            timed_out = isinstance(err, TimeoutError)
            if MCPError and isinstance(err, MCPError):
                if err.code == INVALID_PARAMS:
                    return Feedback(
                        ok=False, error=ErrorKind.INVALID_ARGUMENTS, message=f"{name}: {err.message}"[:_MAX_MESSAGE]
                    )
                if err.code == METHOD_NOT_FOUND:
                    return feedback.unknown_tool(name, [e.spec for e in self._entries.values()])
                timed_out = err.code == REQUEST_TIMEOUT
            if timed_out:
                return Feedback(
                    ok=False,
                    error=ErrorKind.TIMEOUT,
                    message=f"{name}: the {server.app} MCP server did not answer within {server.timeout_s:g} s",
                    recoverable=False,
                )
        log.warning("MCP server %s (%s) failed on %s: %s", server.app, server.where(), name, _reason(exc))
        self._drop(server.app)  # reconnect on the next call
        return Feedback(
            ok=False,
            error=ErrorKind.DEVICE_ERROR,
            message=f"{name}: the {server.app} MCP server failed: {_reason(exc)}"[:_MAX_MESSAGE],
            recoverable=False,
        )

    def _tick(self) -> None:
        set_clock = getattr(self.inner, "set_clock", None)
        if set_clock is not None:
            set_clock(self.inner.clock_seconds() + SECONDS_PER_CALL)
            return
        meta = getattr(getattr(getattr(self.inner, "phone", None), "state", None), "meta", None)
        if isinstance(meta, dict) and "now" in meta:
            meta["now"] += SECONDS_PER_CALL

    def snapshot(self) -> Any:
        """The inner world's snapshot and the episode's write history (a live server's own
        state is not in it)."""
        return (
            self.inner.snapshot(),
            {a: list(w) for a, w in self._writes.items()},
            {a: list(u) for a, u in self._unsent.items()},
        )

    def restore(self, snapshot: Any) -> None:
        """Restore :meth:`snapshot` (the inner world and the write history)."""
        inner, writes, unsent = snapshot
        self.inner.restore(inner)
        self._writes = {a: list(w) for a, w in writes.items()}
        self._unsent = {a: list(u) for a, u in unsent.items()}

    def tables(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """The inner world's tables (an MCP server's state is opaque)."""
        return self.inner.tables()

    def frozen_tables(self) -> dict[str, Mapping[str, Mapping[str, Any]]]:
        """The inner world's frozen tables."""
        return self.inner.frozen_tables()

    def clock_seconds(self) -> float:
        """The inner world's clock (epoch seconds); MCP calls advance it too."""
        return self.inner.clock_seconds()

    def format_clock(self, seconds: float) -> str:
        """Local time of the inner world."""
        return self.inner.format_clock(seconds)

    def screenshot(self) -> np.ndarray:
        """The inner world's screen."""
        return self.inner.screenshot()

    def consistency_issues(self) -> list[str]:
        """The inner world's."""
        return self.inner.consistency_issues()

    def infrastructure_fault(self) -> str | None:
        """The inner world's."""
        return self.inner.infrastructure_fault()

    def transient_tables(self) -> tuple[str, ...]:
        """The inner world's."""
        return self.inner.transient_tables()

    def implied_records(self) -> Mapping[str, Mapping[str, Mapping[str, Any]]]:
        """The inner world's."""
        return self.inner.implied_records()

    def account(self, app: str) -> Mapping[str, Any] | None:
        """The inner world's account of ``app`` (an MCP app has none unless the inner world's
        ``system.accounts`` names it)."""
        return self.inner.account(app)

    def close(self) -> None:
        """Close every MCP session (stopping stdio servers) and the inner backend."""
        for app in list(self._conns):
            self._drop(app)
        self.inner.close()


def _leaves(exc: BaseException) -> list[BaseException]:
    """``exc`` and, for an exception group, every exception inside it; then their causes."""
    out: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop(0)
        if e in out:
            continue
        out.append(e)
        inner = getattr(e, "exceptions", None)  # an exception group (3.11+, or the backport)
        if isinstance(inner, tuple):
            todo.extend(inner)
        if e.__cause__ is not None:
            todo.append(e.__cause__)
    return out


def _reason(exc: BaseException) -> str:
    leaf = next((e for e in _leaves(exc) if not isinstance(getattr(e, "exceptions", None), tuple)), exc)
    return f"{type(leaf).__name__}: {leaf}"[:_MAX_MESSAGE]
