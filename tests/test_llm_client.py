"""The OpenAI-compatible client against real HTTP servers on loopback: retries with backoff on
5xx and 429, infrastructure errors when the retries are spent or the context overflows, usage
and thinking accounting, tool calls from the API field and from text."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("openai")
pytest.importorskip("tenacity")

from agents.llm.client import OpenAIChatClient
from phoneenv.llm import InfrastructureError
from tests.fake_openai import completion_body as completion


class Script:
    """Replies served in order: (status, json body). Requests are recorded."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests: list[dict] = []


@pytest.fixture
def server():
    state = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            script: Script = state["script"]
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            script.requests.append(body)
            status, reply = script.replies.pop(0) if len(script.replies) > 1 else script.replies[0]
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()

    def use(replies) -> tuple[str, Script]:
        state["script"] = Script(replies)
        return f"http://127.0.0.1:{httpd.server_address[1]}/v1", state["script"]

    yield use
    httpd.shutdown()
    httpd.server_close()


def client(url, **kw):
    return OpenAIChatClient(url, "m", timeout=5, backoff_max=0.01, **kw)


def test_retries_server_errors_then_succeeds(server):
    url, script = server(
        [(500, {"error": {"message": "boom"}}), (429, {"error": {"message": "slow down"}}), (200, completion("hi"))]
    )
    res = client(url, max_attempts=4).chat([{"role": "user", "content": "x"}])
    assert res.content == "hi" and len(script.requests) == 3
    assert (res.usage.prompt, res.usage.output) == (11, 7)


def test_retries_spent_is_infrastructure_error(server):
    url, script = server([(503, {"error": {"message": "down"}})])
    with pytest.raises(InfrastructureError) as err:
        client(url, max_attempts=3).chat([{"role": "user", "content": "x"}])
    assert err.value.kind == "server_error" and len(script.requests) == 3


def test_context_overflow_is_infrastructure_error_without_retry(server):
    url, script = server([(400, {"error": {"message": "This model's maximum context length is 4096 tokens"}})])
    with pytest.raises(InfrastructureError) as err:
        client(url).chat([{"role": "user", "content": "x"}])
    assert err.value.kind == "context_overflow" and len(script.requests) == 1


def test_connection_refused_is_infrastructure_error():
    with pytest.raises(InfrastructureError) as err:
        client("http://127.0.0.1:9/v1", max_attempts=2).chat([{"role": "user", "content": "x"}])
    assert err.value.kind == "connection"


def test_tool_calls_from_api_field_and_text_with_thinking(server):
    api_call = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "messages__send", "arguments": '{"to": "+49151", "body": "hi"}'},
        }
    ]
    url, _ = server([(200, completion(None, api_call))])
    res = client(url).chat(
        [{"role": "user", "content": "x"}],
        tools=[{"type": "function", "function": {"name": "messages__send", "parameters": {}}}],
    )
    assert res.tool_calls == [{"id": "c1", "name": "messages__send", "arguments": {"to": "+49151", "body": "hi"}}]
    text = '<think>I should look her up first, then text.</think><tool_call>{"name": "contacts.search", "arguments": {"query": "Ana"}}</tool_call>'
    url, _ = server([(200, completion(text, completion_tokens=30))])
    res = client(url).chat([{"role": "user", "content": "x"}])
    assert res.tool_calls[0]["name"] == "contacts.search" and res.thinking.startswith("I should")
    # Thinking tokens: the server reports only a total, so they are the thinking text's share.
    share = len(res.thinking) / (len(res.thinking) + len(text) - len(res.thinking))
    assert res.usage.thinking == round(30 * share) and 0 < res.usage.thinking < 30


def test_structured_output_falls_back_when_refused(server):
    url, script = server(
        [(400, {"error": {"message": "response_format json_schema is not supported"}}), (200, completion('{"a": 1}'))]
    )
    c = client(url)
    res = c.chat([{"role": "user", "content": "x"}], json_schema={"type": "object"})
    assert res.content == "" or json.loads(res.raw) == {"a": 1}
    assert "response_format" in script.requests[0] and "response_format" not in script.requests[1]
    assert c.structured_output is False


# transformers serve 5.25's answer to a reply whose <tool_call> it cannot parse (content_parsers.py).
UNPARSED = {
    "detail": 'json parser could not parse region as JSON.\nContent: \'\\n{"name": "contacts.sea\'\n'
    "Error: Unterminated string starting at: line 2 column 10 (char 10)"
}
TOOLS = [{"type": "function", "function": {"name": "contacts__search", "parameters": {}}}]


def test_a_tool_call_the_server_cannot_parse_is_the_models_bad_reply(server):
    """The server refuses (400) a reply whose tool call it cannot parse: that is the model's invalid
    output, returned as a reply with a parse error (one request, no retry), not an infrastructure
    error that would take the episode out of the score."""
    url, script = server([(400, UNPARSED)])
    res = client(url).chat([{"role": "user", "content": "x"}], tools=TOOLS)
    assert res.tool_calls == [] and res.content == ""
    assert res.raw == '\n{"name": "contacts.sea'
    assert len(res.parse_errors) == 1 and "Unterminated string" in res.parse_errors[0]
    assert (res.usage.prompt, res.usage.output) == (0, 0) and len(script.requests) == 1

    res = asyncio.run(client(url).achat([{"role": "user", "content": "x"}], tools=TOOLS))
    assert res.raw == '\n{"name": "contacts.sea' and res.parse_errors

    # Without tools offered, or with another 400, the server refused the request itself.
    with pytest.raises(InfrastructureError) as err:
        client(url).chat([{"role": "user", "content": "x"}])
    assert err.value.kind == "server_refused"
    url, _ = server([(400, {"error": {"message": "unknown field 'foo'"}})])
    with pytest.raises(InfrastructureError) as err:
        client(url).chat([{"role": "user", "content": "x"}], tools=TOOLS)
    assert err.value.kind == "server_refused"
