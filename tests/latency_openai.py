"""An OpenAI-compatible chat server with a fixed latency that plays tasks' reference plans.

For the eval-throughput tests and ``benchmarks/bench_eval.py``: a real HTTP server (stdlib
``http.server``, one thread per connection, HTTP/1.1 keep-alive) on ``127.0.0.1``, port 0. Each
``POST .../chat/completions`` waits ``latency_s`` seconds, then answers one tool call: the next
call of the reference plan of the task whose goal is the conversation's first user message (the
:class:`~agents.planner.LLMPlanner` puts the goal there), the call's index being the number of
assistant messages so far; ``finish`` once the plan is spent. Tool names are rendered
``app__verb``, as the planner offers them. So an LLM planner against this server plays exactly
the reference agent's actions, deterministically, whatever the order requests arrive in::

    with LatencyOpenAI(tasks, latency_s=0.1) as server:
        planner = LLMPlanner(OpenAIChatClient(server.base_url, "m"))

Goals must identify the tasks: a goal shared by two given tasks with different plans raises
``ValueError``. ``requests`` counts the requests answered; ``in_flight_max`` the most answered
at once (how many the clients had waiting together).

Run as a process (``python -m tests.latency_openai --latency 0.1 --plans FILE``, FILE the JSON of
:func:`plans_by_goal`), it prints
``PORT <n>`` on its first line once listening and serves until stdin closes, so a benchmark can
keep the server's CPU off its own process.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from phoneenv.contract import TaskSpec

__all__ = ["LatencyOpenAI", "plans_by_goal"]


def plans_by_goal(tasks: Iterable[TaskSpec]) -> dict[str, list[dict[str, Any]]]:
    """Each task's reference plan (calls as ``{"name", "arguments"}``) keyed by its goal (as given
    and as the env's observation shows it, non-ASCII characters escaped). Raises
    ``ValueError`` for a goal two tasks share with different plans."""
    plans: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        plan = [c.model_dump(exclude_none=True) for c in task.reference_plan]
        if task.goal in plans and plans[task.goal] != plan:
            raise ValueError(f"two tasks share the goal {task.goal!r} with different plans; pick one")
        plans[task.goal] = plan
        # the observation's goal is ASCII (the env escapes the rest), and so is what the planner sends
        plans[task.goal.encode("ascii", "backslashreplace").decode("ascii")] = plan
    return plans


def _completion(call: dict[str, Any], index: int) -> bytes:
    name = str(call["name"]).replace(".", "__")
    entry = {
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(call.get("arguments", {}))},
    }
    body = {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [entry]},
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }
    return json.dumps(body).encode()


class LatencyOpenAI:
    """The server (a context manager; or :meth:`start` / :meth:`stop`).

    Args:
        tasks: the tasks whose reference plans it plays (see the module docstring), or their
            :func:`plans_by_goal`.
        latency_s: seconds each answer waits (per request, concurrently).
    """

    def __init__(self, tasks: Iterable[TaskSpec] | dict[str, list[dict[str, Any]]], latency_s: float = 0.1) -> None:
        self.plans = dict(tasks) if isinstance(tasks, dict) else plans_by_goal(tasks)
        self.latency_s = latency_s
        self.requests = 0
        self.in_flight_max = 0
        self.base_url = ""
        self._in_flight = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    def answer(self, body: dict[str, Any]) -> tuple[int, bytes]:
        """The status and body answering a chat completion request ``body``."""
        messages = body.get("messages") or []
        goal = next((m.get("content") for m in messages if m.get("role") == "user"), None)
        plan = self.plans.get(goal) if isinstance(goal, str) else None
        if plan is None:
            error = {"error": {"message": f"no task has the goal {goal!r}", "type": "invalid_request_error"}}
            return 400, json.dumps(error).encode()
        index = sum(1 for m in messages if m.get("role") == "assistant")
        call = plan[index] if index < len(plan) else {"name": "finish", "arguments": {"answer": "done"}}
        return 200, _completion(call, index)

    def start(self) -> LatencyOpenAI:
        """Listen on 127.0.0.1 (a free port) and serve in daemon threads."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server._in_flight += 1
                    server.in_flight_max = max(server.in_flight_max, server._in_flight)
                try:
                    time.sleep(server.latency_s)
                    try:
                        code, out = server.answer(json.loads(raw))
                    except (ValueError, AttributeError) as exc:
                        code, out = 400, json.dumps({"error": {"message": f"bad request: {exc}"}}).encode()
                finally:
                    with server._lock:
                        server._in_flight -= 1
                        server.requests += 1
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256  # the default backlog of 5 refuses a burst of new connections

        httpd = Server(("127.0.0.1", 0), Handler)
        self._httpd = httpd
        self.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        threading.Thread(target=httpd.serve_forever, name="latency-openai", daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> LatencyOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """Serve as a process: ``PORT <n>`` on stdout once listening, until stdin closes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per answer")
    parser.add_argument("--plans", required=True, help="a JSON file of plans_by_goal (loading the suite is slow)")
    args = parser.parse_args(argv)
    with open(args.plans, encoding="utf-8") as fh:
        plans = json.load(fh)
    with LatencyOpenAI(plans, args.latency) as server:
        print(f"PORT {server.base_url.rsplit(':', 1)[1].split('/')[0]}", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
