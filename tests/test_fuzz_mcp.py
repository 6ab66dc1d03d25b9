"""``phoneenv mcp serve`` fuzzed (issue 34): random and hostile tool calls and resource reads, in
process and through real server processes over stdio and streamable HTTP, plus malformed
JSON-RPC sent raw over HTTP.

Every call is answered with a ``CallToolResult`` whose structured content is a valid feedback
(never ``internal_error``), only an unknown resource URI raises (``KeyError``, a JSON-RPC error
over the wire), the trace always serialises, a broken request gets a JSON-RPC error, and the
server stays alive: a reset and the task's reference plan still succeed afterwards."""

from __future__ import annotations

import base64
import functools
import json
import math
import os
import random
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import anyio
from mcp import Client, StdioServerParameters

from phoneenv.contract import ErrorKind, Feedback, Trace
from phoneenv.mcp_server import MAX_SEED, RESOURCES, EpisodeServer
from phoneenv.tasks import get_task
from tests import waiting

ROOT = Path(__file__).resolve().parents[1]
MEMORY_TASK = "delivery.usual_order/0"  # memory, delivery and the phone's own tools
SCREEN_TASK = "fields.dnd_schedule/0"  # settings writes that reach the screen
URI = "phoneenv://episode/"

JUNK: list[Any] = [
    None,
    True,
    -1,
    0,
    2**63,
    -(2**70),
    10**400,
    1.5e308,
    math.nan,
    math.inf,
    -math.inf,
    "",
    "x" * 20_000,
    "\u202e\U0001f600\u2028",
    "\ud800",
    "NaN",
    "null",
    "a\x00b",
    [],
    {},
    [[[]]],
    {"a": {"b": None}},
    ["x"] * 500,
]


def _deep(depth: int) -> Any:
    return functools.reduce(lambda x, _: {"a": [x]}, range(depth), 1)


def _name(rng: random.Random, served: list[str]) -> str:
    """A served name, or one mangled: unknown, dotted, doubled underscores, unicode, empty, huge."""
    base = rng.choice(served)
    return rng.choice(
        [
            base,
            base,
            base,
            base.replace("__", "."),  # the canonical (dotted) form: accepted too
            base + rng.choice(["x", "_", "__", ".", "___", "\u00e9", "\U0001f600"]),
            "__" + base,
            base.replace("__", "____"),
            "",
            "__",
            ".",
            "episode",
            "episode__",
            "episode__reset__",
            "nope__" + base,
            "x" * rng.choice([129, 10_000]),
            "\u202e" + base,
            "\ud800",
        ]
    )


def _arguments(rng: random.Random) -> Any:
    """Arguments of the wrong shape or with junk values: None, non-objects, deep, huge, NaN."""
    kind = rng.randrange(8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([[1, 2], "text", 5, 2.5, True, [{"a": 1}]])
    if kind == 2:
        return {"query": _deep(rng.choice([10, 40, 300]))}
    if kind == 3:
        return {"k" * rng.choice([1, 200, 50_000]): rng.choice(JUNK)}
    keys = ["query", "name", "id", "order_id", "content", "answer", "app", "limit", "seed", "enabled", "start"]
    return {k: rng.choice(JUNK) for k in rng.sample(keys, rng.randrange(0, 5))}


def corpus(srv: EpisodeServer, rng: random.Random, n: int) -> list[tuple[str, str, Any]]:
    """``n`` operations: ``("call", name, arguments)`` or ``("read", uri, None)``; a reset with a
    bad or good seed, a finish now and then (so calls after the episode's end are fuzzed too)."""
    served = [t.name for t in srv.list_tools()]
    ops: list[tuple[str, str, Any]] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.1:
            seed = rng.choice([None, 0, 7, MAX_SEED, MAX_SEED + 1, -1, 2**64, 1.5, "3", True, math.nan, [], {}])
            extra = rng.choice([{}, {}, {"x": 1}, {"seed": 1, "seeds": 2}])
            ops.append(("call", "episode__reset", {"seed": seed, **extra} if rng.random() < 0.9 else seed))
        elif r < 0.18:
            uri = rng.choice(
                [URI + name for name in RESOURCES]
                + [URI, URI + "nothing", URI + "screen.png/..", "phoneenv://other/task", "", "x" * 5000, URI + "\ud800"]
            )
            ops.append(("read", uri, None))
        elif r < 0.22:
            ops.append(("call", "finish", rng.choice([{"answer": "done"}, {}, {"answer": "x" * 9000}, None])))
        else:
            ops.append(("call", _name(rng, served), _arguments(rng)))
    return ops


def check_payload(payload: Any) -> dict[str, Any]:
    """``payload`` is a valid feedback (the ``episode`` block aside) and no infrastructure error."""
    assert isinstance(payload, dict) and isinstance(payload.get("ok"), bool), payload
    fb = Feedback.model_validate({k: v for k, v in payload.items() if k != "episode"})
    assert fb.ok == (fb.error is None), payload
    assert fb.error is not ErrorKind.INTERNAL_ERROR, payload
    if not fb.ok:
        assert fb.message, payload
    if "episode" in payload:
        assert payload["episode"]["over"] is True and isinstance(payload["episode"]["verdict"], dict)
    return payload


def _solve(srv: EpisodeServer, task_id: str) -> None:
    assert not srv.call_tool("episode__reset", {"seed": 1}).is_error
    last = None
    for call in get_task(task_id).reference_plan or []:
        last = check_payload(srv.call_tool(call.name.replace(".", "__"), call.arguments).structured_content)
    assert last is not None and last["episode"]["success"] is True, last


@pytest.mark.parametrize(("task_id", "screenshots"), [(MEMORY_TASK, False), (SCREEN_TASK, True)])
def test_in_process_fuzz(task_id: str, screenshots: bool) -> None:
    """300 random and hostile operations on an EpisodeServer: every call a valid feedback, only an
    unknown URI raises (KeyError), the trace serialises throughout, the plan still solves."""
    from mcp import types

    srv = EpisodeServer.for_task(task_id, screenshots=screenshots)
    rng = random.Random(34)
    kinds: set[str] = set()
    try:
        for i, (op, name, arguments) in enumerate(corpus(srv, rng, 300)):
            if op == "read":
                try:
                    content, mime = srv.read_resource(name)
                except KeyError as exc:
                    assert name.removeprefix(URI) not in RESOURCES and "no resource" in str(exc)
                    continue
                assert (mime == "image/png") == isinstance(content, bytes) and content
                continue
            result = srv.call_tool(name, arguments)
            assert isinstance(result, types.CallToolResult)
            payload = check_payload(result.structured_content)
            assert result.is_error is (not payload["ok"])
            assert json.loads(result.content[0].text) == json.loads(json.dumps(payload))
            if screenshots and payload["ok"]:  # the screen after every call that ran, a reset's too
                assert [c.type for c in result.content] == ["text", "image"], (name, result.content)
            kinds.add(payload.get("error") or "ok")
            if i % 25 == 0:
                Trace.model_validate_json(srv.read_resource(URI + "trace")[0])
                assert srv.list_tools()
        # the corpus reached the errors an agent meets, and successes
        assert {"ok", "unknown_tool", "invalid_arguments", "precondition_failed"} <= kinds, kinds
        _solve(srv, task_id)
    finally:
        srv.close()


def test_non_object_arguments_to_reset_are_an_error_feedback() -> None:
    """``episode__reset`` with arguments that are no object (a list, a string, a number) answers
    invalid_arguments, as any tool does, instead of raising inside the server."""
    srv = EpisodeServer.for_task("clock.what_time/0")
    try:
        for arguments in ([1], "seed", 5, [{"seed": 1}]):
            payload = srv.call_tool("episode__reset", arguments).structured_content
            assert payload["error"] == "invalid_arguments" and "episode.reset" in payload["message"], payload
    finally:
        srv.close()


# -- over stdio and streamable HTTP ------------------------------------------------------------


def _env() -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def _wire_corpus(n: int) -> list[tuple[str, str, Any]]:
    """``n`` operations of the corpus that JSON can carry (no NaN, no lone surrogate, no nesting
    deeper than a JSON library writes), with object arguments (the protocol's type)."""
    srv = EpisodeServer.for_task(MEMORY_TASK)
    try:
        ops = corpus(srv, random.Random(35), 4 * n)
    finally:
        srv.close()
    out = []
    for op in ops:
        if op[0] == "call" and op[2] is not None and not isinstance(op[2], dict):
            continue
        try:
            json.dumps(op, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (ValueError, RecursionError):
            continue
        out.append(op)
    return out[:n]


async def _drive(client: Client, ops: list[tuple[str, str, Any]]) -> set[str]:
    """Send ``ops`` through ``client``; check each answer; then reset and solve the task."""
    from mcp.shared.exceptions import MCPError

    kinds: set[str] = set()
    for op, name, arguments in ops:
        if op == "read":
            try:
                res = await client.read_resource(name)
            except MCPError as exc:
                assert name.removeprefix(URI) not in RESOURCES, (name, exc)
                kinds.add("bad_uri")
                continue
            assert res.contents
            continue
        result = await client.call_tool(name, arguments)
        payload = check_payload(result.structured_content)
        kinds.add(payload.get("error") or "ok")
    trace = Trace.model_validate_json((await client.read_resource(URI + "trace")).contents[0].text)
    assert trace.task_id == MEMORY_TASK
    assert not (await client.call_tool("episode__reset", {"seed": 2})).is_error
    last = None
    for call in get_task(MEMORY_TASK).reference_plan or []:
        last = check_payload((await client.call_tool(call.name.replace(".", "__"), call.arguments)).structured_content)
    assert last is not None and last["episode"]["success"] is True, last
    return kinds


@pytest.mark.slow
def test_stdio_server_survives_the_corpus(tmp_path: Path) -> None:
    """60 corpus operations through a real ``mcp serve`` over stdio, then the plan solves."""
    ops = _wire_corpus(60)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "phoneenv", "mcp", "serve", "--task", MEMORY_TASK],
        env=_env(),
        cwd=str(tmp_path),
    )

    async def main() -> set[str]:
        async with Client(params, read_timeout_seconds=waiting.scaled(120)) as client:
            return await _drive(client, ops)

    kinds = anyio.run(main)
    assert {"ok", "unknown_tool", "invalid_arguments"} <= kinds, kinds


def _post(url: str, body: bytes, session: str | None = None, content_type: str = "application/json") -> tuple[int, Any]:
    """POST ``body`` to the server; (HTTP status, the JSON-RPC answer or None)."""
    headers = {"Content-Type": content_type, "Accept": "application/json, text/event-stream"}
    if session is not None:
        headers["mcp-session-id"] = session
        headers["mcp-protocol-version"] = "2025-06-18"
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            status, raw, sid = resp.status, resp.read().decode("utf-8", "replace"), resp.headers.get("mcp-session-id")
            kind = resp.headers.get("content-type", "")
    except urllib.error.HTTPError as exc:
        status, raw, sid, kind = (
            exc.code,
            exc.read().decode("utf-8", "replace"),
            None,
            exc.headers.get("content-type", ""),
        )
    if "text/event-stream" in kind:  # the answer as one SSE event
        raw = "\n".join(line[5:].strip() for line in raw.splitlines() if line.startswith("data:"))
    try:
        answer = json.loads(raw) if raw.strip() else None
    except json.JSONDecodeError:
        answer = raw
    if sid is not None and isinstance(answer, dict):
        answer["_session"] = sid
    return status, answer


def _rpc(method: str, params: Any = None, id_: Any = 1) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


MALFORMED: list[tuple[str, bytes]] = [
    ("not json", b"{not json"),
    ("empty body", b""),
    ("non-utf8", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list\xff\xfe"}'),
    ("a bare number", b"5"),
    ("a string", b'"tools/list"'),
    ("null", b"null"),
    ("an empty batch", b"[]"),
    ("no jsonrpc", b'{"id": 1, "method": "tools/list"}'),
    ("wrong version", b'{"jsonrpc": "1.0", "id": 1, "method": "tools/list"}'),
    ("unknown method", _rpc("tools/destroy")),
    ("method not a string", b'{"jsonrpc": "2.0", "id": 1, "method": 5}'),
    ("call without params", _rpc("tools/call")),
    ("call params a list", _rpc("tools/call", ["finish", {}])),
    ("call without a name", _rpc("tools/call", {"arguments": {}})),
    ("call with a numeric name", _rpc("tools/call", {"name": 5, "arguments": {}})),
    ("arguments a list", _rpc("tools/call", {"name": "finish", "arguments": [1]})),
    ("arguments a string", _rpc("tools/call", {"name": "episode__reset", "arguments": "seed"})),
    (
        "NaN argument",
        _rpc("tools/call", {"name": "memory__search", "arguments": {"query": "@"}}).replace(b'"@"', b"NaN"),
    ),
    ("lone surrogate", _rpc("tools/call", {"name": "memory__search", "arguments": {"query": "\ud800"}})),
    ("read without a uri", _rpc("resources/read", {})),
    ("read a bad uri", _rpc("resources/read", {"uri": "::::"})),
    ("read an unknown uri", _rpc("resources/read", {"uri": URI + "nothing"})),
    ("id an object", _rpc("tools/list", id_={"a": 1})),
    (
        "deep nesting",
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ' + b"[" * 20_000 + b"]" * 20_000 + b"}",
    ),
    ("oversized body", _rpc("tools/call", {"name": "memory__search", "arguments": {"query": "x" * (8 << 20)}})),
    ("duplicate keys", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "method": "tools/call"}'),
]


@pytest.mark.slow
def test_http_server_survives_the_corpus_and_malformed_json_rpc(tmp_path: Path) -> None:
    """60 corpus operations through the SDK client over streamable HTTP, then malformed JSON-RPC
    sent raw in a live session: every broken request gets an HTTP 4xx or a JSON-RPC error, none
    a 5xx, and the server then still solves the task."""
    from tests.test_mcp_server import serving_http

    ops = _wire_corpus(60)
    with serving_http(["--task", MEMORY_TASK], tmp_path) as (url, proc):

        async def main() -> set[str]:
            async with Client(url, read_timeout_seconds=waiting.scaled(120)) as client:
                return await _drive(client, ops)

        kinds = anyio.run(main)
        assert {"ok", "unknown_tool", "invalid_arguments"} <= kinds, kinds

        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "0"},
        }
        status, answer = _post(url, _rpc("initialize", init))
        assert status == 200 and isinstance(answer, dict) and "result" in answer, (status, answer)
        session = answer["_session"]
        _post(url, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(), session)
        for label, body in MALFORMED:
            try:
                status, answer = _post(url, body, session)
            except urllib.error.URLError as exc:  # a body past the SDK's limit: refused unread
                assert label == "oversized body" and isinstance(exc.reason, ConnectionError), (label, exc)
                assert proc.poll() is None, (label, "the server exited")
                continue
            assert status < 500, (label, status, answer)
            if status == 200:
                assert isinstance(answer, dict), (label, answer)
                if "result" in answer and "content" in (answer["result"] or {}):  # a tool call: a feedback
                    check_payload(answer["result"]["structuredContent"])
                else:
                    assert "error" in answer, (label, answer)
            assert proc.poll() is None, (label, "the server exited")
        for label, body, kind in [
            ("text/plain", _rpc("tools/list"), "text/plain"),
            ("no session", _rpc("tools/list"), None),
        ]:
            status, answer = _post(url, body, session if kind else None, content_type=kind or "application/json")
            assert 400 <= status < 500, (label, status, answer)
        status, answer = _post(url, _rpc("tools/call", {"name": "episode__reset", "arguments": {}}), session)
        assert status == 200 and answer["result"]["structuredContent"]["ok"] is True, answer

        async def again() -> set[str]:
            async with Client(url, read_timeout_seconds=waiting.scaled(120)) as client:
                return await _drive(client, ops[:5])

        anyio.run(again)
        read = _post(url, _rpc("resources/read", {"uri": URI + "screen.png"}), session)[1]
        assert base64.b64decode(read["result"]["contents"][0]["blob"])[:4] == b"\x89PNG"
