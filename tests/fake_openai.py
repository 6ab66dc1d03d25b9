"""A fake OpenAI-compatible chat server for tests that replays a *failure script*.

A real HTTP server (stdlib ``http.server`` in a thread) on ``127.0.0.1``, port 0, answering each
``POST .../chat/completions`` with the next step of its script, in order, and recording every
request it got::

    with FakeOpenAI([status(429), status(500), reply(200, "text/plain", "oops"), tool_call("finish", {"answer": "hi"})]) as srv:
        client = OpenAIChatClient(srv.base_url, "m", max_attempts=4, backoff_max=0.01)
        client.chat([{"role": "user", "content": "hi"}])      # three failures retried, then the call
        len(srv.requests)                                      # 4

Steps:

* :class:`Reply` — a status, a content type and a body (bytes or text), sent whole:
  :func:`status` (an error status with an OpenAI-style error body), :func:`reply` (anything),
  :func:`completion` / :func:`tool_call` (a valid chat completion, with text or one tool call).
* :class:`Hang` — accept the request, answer nothing for ``seconds``, then close the connection
  (a client whose timeout is shorter sees a timeout).
* :class:`Truncated` — send the headers (``Content-Length`` of the whole body) and only the first
  ``keep`` bytes of the body, then close (a body cut off mid-way).
* :class:`Stream` — a ``text/event-stream`` of chat completion chunks (SSE), optionally cut off
  before ``data: [DONE]`` and in the middle of an event.

When the script is used up, every further request gets :attr:`FakeOpenAI.default` (a 503 saying
so, unless given), and :attr:`FakeOpenAI.exhausted` counts them, so a test can tell a client
that asked more often than the script foresaw.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeOpenAI",
    "Hang",
    "Reply",
    "Step",
    "Stream",
    "Truncated",
    "completion",
    "completion_body",
    "reply",
    "status",
    "tool_call",
]


@dataclass(frozen=True)
class Reply:
    """An HTTP answer sent whole: ``status``, ``content_type`` and ``body`` (text is UTF-8)."""

    status: int
    content_type: str
    body: bytes | str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Hang:
    """Say nothing for ``seconds``, then close the connection without an answer."""

    seconds: float


@dataclass(frozen=True)
class Truncated:
    """Announce ``body`` whole (``Content-Length``) but send only its first ``keep`` bytes, then close."""

    body: bytes | str
    keep: int
    status: int = 200
    content_type: str = "application/json"


@dataclass(frozen=True)
class Stream:
    """Server-sent events: one ``data: <json>`` event per chunk (chat completion chunks), then
    ``data: [DONE]``. With ``cut`` set, the stream stops after that many events and the first
    ``cut_bytes`` bytes of the next one, without ``[DONE]``, and the connection is closed."""

    chunks: tuple[dict[str, Any], ...]
    cut: int | None = None
    cut_bytes: int = 10


Step = Reply | Hang | Truncated | Stream


def completion_body(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
) -> dict[str, Any]:
    """The JSON body of a valid chat completion whose message has ``content`` and ``tool_calls``
    (OpenAI format: ``[{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}]``)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def reply(code: int, content_type: str, body: bytes | str | dict[str, Any] | list[Any]) -> Reply:
    """Any answer; a dict or list body is sent as its JSON text."""
    if isinstance(body, dict | list):
        body = json.dumps(body)
    return Reply(code, content_type, body)


def status(code: int, message: str | None = None) -> Reply:
    """An error status with an OpenAI-style JSON error body."""
    text = message or f"fake server error {code}"
    return reply(code, "application/json", {"error": {"message": text, "type": "fake", "code": code}})


def completion(content: str | None = None, tool_calls: list[dict[str, Any]] | None = None) -> Reply:
    """A 200 with a valid chat completion (see :func:`completion_body`)."""
    return reply(200, "application/json", completion_body(content, tool_calls))


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> Reply:
    """A 200 with a valid chat completion carrying one tool call of ``name`` with ``arguments``."""
    entry = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return completion(None, [entry])


@dataclass
class FakeOpenAI:
    """The server. Use as a context manager (or :meth:`start` / :meth:`stop`).

    Attributes:
        script: the steps still to be served, in order.
        default: the answer once the script is used up.
        requests: every request received, in order: ``{"method", "path", "body"}`` with the
            body decoded from JSON (``None`` when it was not JSON).
        exhausted: how many requests came after the script was used up.
        base_url: ``http://127.0.0.1:<port>/v1`` once started.
    """

    script: list[Step] = field(default_factory=list)
    default: Step = field(default_factory=lambda: status(503, "fake server: failure script used up"))
    requests: list[dict[str, Any]] = field(default_factory=list)
    exhausted: int = 0
    base_url: str = ""

    def __post_init__(self) -> None:
        self.script = list(self.script)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def add(self, steps: Iterable[Step]) -> None:
        """Append ``steps`` to the script."""
        with self._lock:
            self.script.extend(steps)

    def _next(self, request: dict[str, Any]) -> Step:
        with self._lock:
            self.requests.append(request)
            if self.script:
                return self.script.pop(0)
            self.exhausted += 1
            return self.default

    def start(self) -> FakeOpenAI:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
                self._send_whole(Reply(200, "application/json", body))

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                step = fake._next({"method": "POST", "path": self.path, "body": body})
                if isinstance(step, Reply):
                    self._send_whole(step)
                elif isinstance(step, Hang):
                    fake._closing.wait(step.seconds)
                    self.close_connection = True
                elif isinstance(step, Truncated):
                    data = step.body.encode() if isinstance(step.body, str) else step.body
                    self.send_response(step.status)
                    self.send_header("Content-Type", step.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[: step.keep])
                    self.wfile.flush()
                    self.close_connection = True
                else:
                    self._stream(step)

            def _send_whole(self, step: Reply) -> None:
                data = step.body.encode() if isinstance(step.body, str) else step.body
                self.send_response(step.status)
                self.send_header("Content-Type", step.content_type)
                self.send_header("Content-Length", str(len(data)))
                for key, value in step.headers:
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, step: Stream) -> None:
                events = [f"data: {json.dumps(c)}\n\n".encode() for c in step.chunks]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                if step.cut is None:
                    for event in events:
                        self.wfile.write(event)
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                for event in events[: step.cut]:
                    self.wfile.write(event)
                if step.cut < len(events):
                    self.wfile.write(events[step.cut][: step.cut_bytes])
                self.wfile.flush()

        self._closing.clear()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; hanging answers end at once."""
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
