"""A failing model endpoint must not end a run (issue 10, item 2).

Against :mod:`tests.fake_openai` (a real HTTP server on loopback replaying failure scripts): every
answer that is not a valid chat completion — 429, 5xx, timeouts, non-JSON 200, HTML, JSON without
``choices``, a choice without a message, truncated bodies, SSE streams (the client does not
stream, so a stream whole or cut off is a malformed answer) — is retried per the client's policy
and then raised as :class:`~phoneenv.llm.InfrastructureError` of the right ``kind``; the server
sees exactly ``max_attempts`` requests. ``phoneenv eval --agent llm`` against it keeps every
episode: infrastructure episodes are marked, good ones scored, and the run goes on.
"""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("openai")
pytest.importorskip("tenacity")

from typer.testing import CliRunner

from agents.llm.client import RETRYABLE_KINDS, OpenAIChatClient
from phoneenv.cli import app
from phoneenv.llm import ChatResult, InfrastructureError
from phoneenv.tasks import get_task
from tests.fake_openai import (
    FakeOpenAI,
    Hang,
    Stream,
    Truncated,
    completion,
    completion_body,
    reply,
    status,
    tool_call,
)

MESSAGES = [{"role": "user", "content": "What time is it?"}]
TIMEOUT = 0.4  # seconds per request in these tests; a Hang outlasts it
CHUNK = {
    "id": "chatcmpl-fake",
    "object": "chat.completion.chunk",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": "It is"}, "finish_reason": None}],
}
GOOD = completion_body(None, [{"id": "c1", "type": "function", "function": {"name": "clock__now", "arguments": "{}"}}])


def _message(**message):
    return {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message}]}


# name -> (one failing answer, the kind it must end as after the retries)
FAILURES = {
    "429": (status(429, "Rate limit reached"), "rate_limit"),
    "500": (status(500), "server_error"),
    "502": (status(502), "server_error"),
    "503": (status(503), "server_error"),
    "504 html": (reply(504, "text/html", "<html><h1>504 Gateway Time-out</h1></html>"), "server_error"),
    "408": (status(408), "timeout"),
    "timeout": (Hang(5.0), "timeout"),
    "non-json 200": (reply(200, "application/json", "Expecting this to be JSON? no"), "malformed_response"),
    "plain-text 200": (reply(200, "text/plain", "upstream overloaded"), "malformed_response"),
    "html 200": (reply(200, "text/html", "<html><body>Bad gateway</body></html>"), "malformed_response"),
    "empty 200": (reply(200, "application/json", ""), "malformed_response"),
    "json without choices": (
        reply(200, "application/json", {"id": "x", "object": "chat.completion"}),
        "malformed_response",
    ),
    "empty choices": (reply(200, "application/json", {"id": "x", "choices": []}), "malformed_response"),
    "choices not a list": (reply(200, "application/json", {"choices": {"0": {}}}), "malformed_response"),
    "choice without message": (
        reply(200, "application/json", {"choices": [{"index": 0, "finish_reason": "stop"}]}),
        "malformed_response",
    ),
    "message is text": (reply(200, "application/json", {"choices": [{"message": "hi"}]}), "malformed_response"),
    "content not text": (reply(200, "application/json", _message(role="assistant", content=5)), "malformed_response"),
    "tool_calls not a list": (
        reply(200, "application/json", _message(role="assistant", content=None, tool_calls="clock__now")),
        "malformed_response",
    ),
    "error object with 200": (
        reply(200, "application/json", {"error": {"message": "model is loading"}}),
        "malformed_response",
    ),
    "json array": (reply(200, "application/json", [GOOD]), "malformed_response"),
    "json null": (reply(200, "application/json", "null"), "malformed_response"),
    "truncated body": (Truncated(json.dumps(GOOD), keep=40), "connection"),
    "headers only": (Truncated(json.dumps(GOOD), keep=0), "connection"),
    "truncated html 200": (Truncated("<html><body>" + "x" * 200, keep=30, content_type="text/html"), "connection"),
    "sse stream": (Stream((CHUNK, CHUNK)), "malformed_response"),
    "sse stream cut off": (Stream((CHUNK, CHUNK, CHUNK), cut=1), "malformed_response"),
}


def _client(url: str, attempts: int) -> OpenAIChatClient:
    return OpenAIChatClient(url, "m", timeout=TIMEOUT, max_attempts=attempts, backoff_max=0.01)


@pytest.mark.parametrize("name", list(FAILURES))
def test_each_failure_is_retried_then_an_infrastructure_error_of_its_kind(name):
    step, kind = FAILURES[name]
    attempts = 2 if isinstance(step, Hang) else 3
    with FakeOpenAI([step] * attempts) as srv:
        with pytest.raises(InfrastructureError) as err:
            _client(srv.base_url, attempts).chat(MESSAGES)
        assert err.value.kind == kind and kind in RETRYABLE_KINDS
        assert len(srv.requests) == attempts and srv.exhausted == 0
        # every retry resends the same request
        assert all(r["body"] == srv.requests[0]["body"] for r in srv.requests)
        assert srv.requests[0]["body"]["messages"] == MESSAGES and srv.requests[0]["path"] == "/v1/chat/completions"
    assert f"{attempts} tries" in str(err.value)


@pytest.mark.parametrize("name", list(FAILURES))
def test_each_failure_then_a_good_completion_recovers(name):
    step, _ = FAILURES[name]
    with FakeOpenAI([step, tool_call("clock__now", {"tz": "UTC"}, call_id="c7")]) as srv:
        res = _client(srv.base_url, 2).chat(MESSAGES)
        assert len(srv.requests) == 2 and srv.exhausted == 0
    assert res.tool_calls == [{"id": "c7", "name": "clock__now", "arguments": {"tz": "UTC"}}]
    assert (res.usage.prompt, res.usage.output) == (11, 7)


def test_a_long_chain_of_failures_within_the_budget_recovers():
    chain = [step for step, _ in FAILURES.values()]
    with FakeOpenAI([*chain, completion("It is noon.")]) as srv:
        res = _client(srv.base_url, len(chain) + 1).chat(MESSAGES)
        assert len(srv.requests) == len(chain) + 1 and srv.exhausted == 0
    assert res.content == "It is noon." and res.tool_calls == []


def test_a_budget_one_short_of_the_chain_fails_with_the_last_kind():
    with FakeOpenAI([status(429), status(503), reply(200, "text/html", "<p>down</p>"), completion("late")]) as srv:
        with pytest.raises(InfrastructureError) as err:
            _client(srv.base_url, 3).chat(MESSAGES)
        assert err.value.kind == "malformed_response" and len(srv.requests) == 3
        assert srv.script == [completion("late")]  # the good answer was never asked for


@pytest.mark.parametrize(
    ("step", "kind"),
    [
        (status(400, "This model's maximum context length is 4096 tokens"), "context_overflow"),
        (status(401, "Incorrect API key"), "server_refused"),
        (status(404, "The model `m` does not exist"), "server_refused"),
        (status(422, "unprocessable"), "server_refused"),
    ],
)
def test_refusals_are_infrastructure_errors_at_once(step, kind):
    with FakeOpenAI([step] * 3) as srv:
        with pytest.raises(InfrastructureError) as err:
            _client(srv.base_url, 3).chat(MESSAGES)
        assert err.value.kind == kind and len(srv.requests) == 1


def test_valid_completions_with_odd_but_legal_fields_are_accepted():
    """Not over-strict: extra fields (vLLM's), no usage, no id, an unknown finish reason and a
    reasoning field are a completion; a reasoning field that is not text is ignored."""
    odd = {
        "choices": [
            {
                "message": {"role": "assistant", "content": "Noon.", "reasoning_content": "Check the clock."},
                "finish_reason": "abort",
                "stop_reason": None,
            }
        ],
        "prompt_logprobs": None,
        "kv_transfer_params": None,
    }
    weird_reasoning = _message(role="assistant", content="Noon.", reasoning={"effort": "low"})
    with FakeOpenAI(
        [reply(200, "application/json", odd), reply(200, "application/json; charset=utf-8", weird_reasoning)]
    ) as srv:
        client = _client(srv.base_url, 1)
        first, second = client.chat(MESSAGES), client.chat(MESSAGES)
    assert (first.content, first.thinking, first.usage.prompt) == ("Noon.", "Check the clock.", 0)
    assert (second.content, second.thinking) == ("Noon.", "")


def test_retry_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("PHONEENV_LLM_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("PHONEENV_LLM_BACKOFF_MAX", "0")
    monkeypatch.setenv("PHONEENV_LLM_TIMEOUT", "0.3")
    with FakeOpenAI([status(503)] * 5) as srv:
        client = OpenAIChatClient(srv.base_url, "m")
        assert (client.max_attempts, client.backoff_max, client.timeout) == (2, 0.0, 0.3)
        with pytest.raises(InfrastructureError):
            client.chat(MESSAGES)
        assert len(srv.requests) == 2
    assert OpenAIChatClient("http://127.0.0.1:9/v1", "m", max_attempts=5).max_attempts == 5  # an argument wins
    monkeypatch.setenv("PHONEENV_LLM_MAX_ATTEMPTS", "many")
    with pytest.raises(ValueError, match="PHONEENV_LLM_MAX_ATTEMPTS"):
        OpenAIChatClient("http://127.0.0.1:9/v1", "m")
    monkeypatch.setenv("PHONEENV_LLM_MAX_ATTEMPTS", "0")
    with pytest.raises(ValueError, match="at least 1"):
        OpenAIChatClient("http://127.0.0.1:9/v1", "m")
    monkeypatch.setenv("PHONEENV_LLM_MAX_ATTEMPTS", "2.7")
    with pytest.raises(ValueError, match="whole number"):
        OpenAIChatClient("http://127.0.0.1:9/v1", "m")
    monkeypatch.setenv("PHONEENV_LLM_MAX_ATTEMPTS", "2")
    for bad in ("inf", "nan", "-1"):
        monkeypatch.setenv("PHONEENV_LLM_TIMEOUT", bad)
        with pytest.raises(ValueError, match="PHONEENV_LLM_TIMEOUT"):
            OpenAIChatClient("http://127.0.0.1:9/v1", "m")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def _paths(value, path=()):
    """Every path into a JSON value (keys and indices), the root included."""
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, (*path, key))


@st.composite
def broken_completions(draw):
    """A valid completion with one value replaced by any JSON value, or one key deleted."""
    body = json.loads(json.dumps(GOOD))
    path = draw(st.sampled_from(list(_paths(body))[1:]))
    parent = body
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(JSON)
    return json.dumps(body)


@pytest.fixture(scope="module")
def fuzz_server():
    with FakeOpenAI() as srv:
        yield srv, _client(srv.base_url, 1)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=broken_completions() | JSON.map(json.dumps) | st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
    content_type=st.sampled_from(["application/json", "text/html", "text/plain", "application/json; charset=utf-8"]),
)
def test_any_200_body_gives_a_result_or_an_infrastructure_error(fuzz_server, body, content_type):
    """Whatever a server answers with 200, the client returns a result or raises
    InfrastructureError(malformed_response); nothing else escapes."""
    srv, client = fuzz_server
    before = len(srv.requests)
    srv.add([reply(200, content_type, body)])
    try:
        res = client.chat(MESSAGES)
    except InfrastructureError as exc:
        assert exc.kind == "malformed_response", exc
    else:
        assert isinstance(res, ChatResult)
        assert isinstance(res.content, str) and all(isinstance(c["arguments"], dict) for c in res.tool_calls)
    assert len(srv.requests) == before + 1 and srv.exhausted == 0


# ----------------------------------------------------------------------------- the fake itself


def _raw_post(url: str) -> tuple[int, dict[str, str], bytes]:
    """POST with the stdlib, reading what arrives until the server closes."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        body = b"{}"
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 2\r\n\r\n" + body
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    return int(lines[0].split()[1]), headers, rest


def test_the_fake_sends_what_its_script_says():
    body = json.dumps(GOOD)
    script = [
        Truncated(body, keep=25),
        Stream((CHUNK, CHUNK), cut=1, cut_bytes=7),
        Stream((CHUNK,)),
        reply(200, "text/html", "<b>x</b>"),
    ]
    with FakeOpenAI(script) as srv:
        code, headers, rest = _raw_post(srv.base_url)
        assert code == 200 and headers["content-length"] == str(len(body)) and rest == body[:25].encode()
        code, headers, rest = _raw_post(srv.base_url)
        event = f"data: {json.dumps(CHUNK)}\n\n".encode()
        assert headers["content-type"] == "text/event-stream" and rest == event + event[:7]
        code, headers, rest = _raw_post(srv.base_url)
        assert rest == event + b"data: [DONE]\n\n"
        conn = http.client.HTTPConnection(srv.base_url.split("//")[1].split("/")[0], timeout=5)
        conn.request("POST", "/v1/chat/completions", body="not json")
        resp = conn.getresponse()
        assert (resp.status, resp.getheader("Content-Type"), resp.read()) == (200, "text/html", b"<b>x</b>")
        conn.request("POST", "/v1/chat/completions", body="{}")
        resp = conn.getresponse()
        assert resp.status == 503 and b"used up" in resp.read()
        conn.close()
        assert [r["body"] for r in srv.requests] == [{}, {}, {}, None, {}] and srv.exhausted == 1


def test_a_cut_stream_ends_silently_for_a_streaming_sdk_client():
    """The fake's streams are real SSE: the SDK reads a whole one. A stream cut off (no
    ``[DONE]``, half an event, connection closed) raises nothing in the SDK: it yields the events
    before the cut and stops, so a streaming client would have to check ``[DONE]`` or a
    ``finish_reason`` itself. :class:`OpenAIChatClient` does not stream (see the tests above)."""
    import openai

    with FakeOpenAI([Stream((CHUNK, CHUNK)), Stream((CHUNK, CHUNK, CHUNK), cut=1)]) as srv:
        sdk = openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0, timeout=5)
        whole = list(sdk.chat.completions.create(model="m", messages=MESSAGES, stream=True))
        cut = list(sdk.chat.completions.create(model="m", messages=MESSAGES, stream=True))
        assert srv.requests[0]["body"]["stream"] is True
    assert [c.choices[0].delta.content for c in whole] == ["It is", "It is"]
    assert [c.choices[0].delta.content for c in cut] == ["It is"]
    assert all(c.choices[0].finish_reason is None for c in whole + cut)


# ------------------------------------------------------------------------------------- the CLI

TASKS = ["clock.wake_up/0", "clock.wake_up/1", "clock.wake_up/2"]


def _plan_calls(task_id: str) -> list:
    """The task's reference plan as a model would send it: one tool call per completion, with
    OpenAI-safe names."""
    plan = get_task(task_id).reference_plan
    return [tool_call(c.name.replace(".", "__"), c.arguments or {}, call_id=f"c{i}") for i, c in enumerate(plan)]


def _eval(srv: FakeOpenAI, out, attempts: int = 3):
    env = {
        "PHONEENV_LLM_MAX_ATTEMPTS": str(attempts),
        "PHONEENV_LLM_BACKOFF_MAX": "0.01",
        "PHONEENV_LLM_TIMEOUT": str(TIMEOUT),
    }
    args = ["eval", "--agent", "llm", "--base-url", srv.base_url, "--model", "m", "--tasks", ",".join(TASKS)]
    return CliRunner().invoke(app, [*args, "--out", str(out)], env=env)


def test_eval_against_a_failing_endpoint_keeps_every_episode(tmp_path):
    first, second, third = (_plan_calls(t) for t in TASKS)
    assert len(second) == 3 and len(third) == 3
    script = [
        # episode 1: the 429, 500, non-JSON 200: three tries spent, an infrastructure error
        status(429),
        status(500),
        reply(200, "application/json", "Expecting value"),
        # episode 2: HTML, then the first call; a truncated body and a timeout, then the rest
        reply(200, "text/html", "<html>Bad gateway</html>"),
        second[0],
        Truncated(json.dumps(GOOD), keep=30),
        Hang(5.0),
        second[1],
        second[2],
        # episode 3: one good step, then JSON without choices three times: aborted mid-episode
        third[0],
        *[reply(200, "application/json", {"object": "chat.completion"})] * 3,
    ]
    with FakeOpenAI(script) as srv:
        res = _eval(srv, tmp_path)
        assert len(srv.requests) == len(script) and srv.exhausted == 0
        episode_one = [r["body"] for r in srv.requests[:3]]
    assert res.exit_code == 0, res.output
    assert episode_one[0] == episode_one[1] == episode_one[2]
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in rows] == TASKS
    assert [r["infrastructure_error"] for r in rows] == [True, False, True]
    assert [r["infrastructure_kind"] for r in rows] == ["malformed_response", None, "malformed_response"]
    assert [r["steps"] for r in rows] == [0, 3, 1]
    assert rows[1]["success"] is True and rows[1]["progress"] == 1.0
    board = json.loads((tmp_path / "scoreboard.json").read_text())
    assert board["infrastructure_errors"] == 2
    assert board["infrastructure_kinds"] == {"malformed_response": 2}
    assert "infrastructure errors 2 (malformed_response 2)" in " ".join(res.output.split())
    assert board["categories"][-1]["episodes"] == 1 and board["categories"][-1]["success"] == 1.0
    for row in rows:
        trace = json.loads(Path(row["trace_path"]).read_text(encoding="utf-8"))
        assert trace["verdict"]["infrastructure_error"] is row["infrastructure_error"]


def test_eval_against_a_dead_endpoint_writes_every_episode_and_exits_2(tmp_path):
    with FakeOpenAI([], default=reply(200, "text/html", "<html>maintenance</html>")) as srv:
        res = _eval(srv, tmp_path, attempts=2)
        assert len(srv.requests) == 2 * len(TASKS)
    assert res.exit_code == 2 and "every episode ended in an infrastructure error" in res.output
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in rows] == TASKS and all(r["infrastructure_error"] for r in rows)
