"""The tiny model (agents.llm.tiny) and a real `transformers serve` over it (tests/llm_server.py)."""

from __future__ import annotations

import json

import pytest

TOOL = {
    "type": "function",
    "function": {
        "name": "contacts.search",
        "description": "Find contacts whose name, phone or email contains the query.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
        },
    },
}
MESSAGES = [
    {"role": "system", "content": "You operate a phone."},
    {"role": "user", "content": "What is Ben's number?"},
]


def _client(base_url: str):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=60)


# -- the checkpoint -------------------------------------------------------------------------------


def test_tiny_checkpoint_tokenizer_and_template(tiny_model_dir):
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    from agents.llm.tiny import SPECIAL_TOKENS

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    config = AutoConfig.from_pretrained(tiny_model_dir)
    gen = GenerationConfig.from_pretrained(tiny_model_dir)
    assert config.model_type == "qwen2"
    assert config.vocab_size == len(tok)
    assert 2000 <= len(tok) <= 4000
    for i, marker in enumerate(SPECIAL_TOKENS):
        assert tok.encode(marker, add_special_tokens=False) == [i], marker
    assert tok.eos_token == "<|im_end|>" and gen.eos_token_id == tok.eos_token_id == config.eos_token_id
    assert tok.pad_token_id is not None and gen.pad_token_id == tok.pad_token_id
    text = 'Call Ben: {"to": "+4916022222222"} — héllo'
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text

    messages = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "contacts.search", "arguments": {"query": "Ben"}}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '[{"name": "Ben Okafor"}]'},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "second"}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}, {"type": "image_url", "image_url": {}}]},
    ]
    prompt = tok.apply_chat_template(messages, tools=[TOOL], tokenize=False, add_generation_prompt=True)
    assert prompt.startswith("<|im_start|>system\nYou operate a phone.\n\n# Tools\n")
    # each tool as phoneenv.compact.tool_text writes it: a TypeScript-like declaration
    declared = (
        "// Find contacts whose name, phone or email contains the query.\n"
        "type contacts.search = (_: {\nquery: string,\nlimit?: integer,\n}) => any;"
    )
    assert "<tools>\n" + declared + "\n</tools>" in prompt
    assert "<|im_start|>user\nWhat is Ben's number?<|im_end|>\n" in prompt
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "contacts.search", "arguments": {"query": "Ben"}}\n'
        "</tool_call><|im_end|>\n"
    ) in prompt
    assert (
        '<|im_start|>user\n<tool_response>\n[{"name": "Ben Okafor"}]\n</tool_response>\n'
        "<tool_response>\nsecond\n</tool_response><|im_end|>\n"
    ) in prompt
    assert "<|im_start|>user\nThanks<|im_end|>\n" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")

    # Arguments as an OpenAI JSON string render the same; no tools and no system: no system turn.
    as_string = [
        {**messages[2], "tool_calls": [{"function": {"name": "contacts.search", "arguments": '{"query": "Ben"}'}}]}
    ]
    assert '{"name": "contacts.search", "arguments": {"query": "Ben"}}' in tok.apply_chat_template(
        as_string, tokenize=False
    )
    plain = tok.apply_chat_template([MESSAGES[1]], tokenize=False, add_generation_prompt=False)
    assert plain == "<|im_start|>user\nWhat is Ben's number?<|im_end|>\n"


def test_tiny_model_generates(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert sum(p.numel() for p in model.parameters()) < 1_000_000
    inputs = tok.apply_chat_template(
        MESSAGES, tools=[TOOL], add_generation_prompt=True, return_dict=True, return_tensors="pt"
    )
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=8)
    prompt_len = inputs["input_ids"].shape[1]
    assert out.shape[0] == 1 and prompt_len < out.shape[1] <= prompt_len + 8


# -- the server -----------------------------------------------------------------------------------


def test_chat_completion_with_tools(llm_server):
    from transformers import AutoTokenizer

    client = _client(llm_server.base_url)
    assert [m.id for m in client.models.list().data] == [llm_server.model]
    resp = client.chat.completions.create(model=llm_server.model, messages=MESSAGES, tools=[TOOL], max_tokens=16)
    assert resp.model == llm_server.model
    assert len(resp.choices) == 1
    choice = resp.choices[0]
    assert choice.message.role == "assistant"
    assert isinstance(choice.message.content, str)
    assert choice.finish_reason in {"stop", "length"}
    usage = resp.usage
    assert usage is not None and usage.prompt_tokens > 0 and 0 < usage.completion_tokens <= 16
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    # The server renders the prompt with the checkpoint's own chat template, tools included.
    tok = AutoTokenizer.from_pretrained(llm_server.model_dir)
    expected = tok.apply_chat_template(MESSAGES, tools=[TOOL], add_generation_prompt=True, return_dict=True)
    assert usage.prompt_tokens == len(expected["input_ids"])


def test_scripted_reply_becomes_tool_calls(llm_server):
    """`transformers serve` parses `<tool_call>{json}</tool_call>` of a qwen2 model into `tool_calls`."""
    client = _client(llm_server.base_url)
    reply = (
        'Looking.\n<tool_call>\n{"name": "contacts.search", "arguments": {"query": "Ben", "limit": "2"}}\n</tool_call>'
    )
    resp = client.chat.completions.create(
        model=llm_server.model, messages=MESSAGES, tools=[TOOL], max_tokens=64, extra_body=llm_server.scripted(reply)
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Looking."
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.id
    assert call.function.name == "contacts.search"
    # Arguments come back as a JSON string, cast by the tool's schema ("2" -> 2 for an integer).
    assert json.loads(call.function.arguments) == {"query": "Ben", "limit": 2}

    stream = client.chat.completions.create(
        model=llm_server.model,
        messages=MESSAGES,
        tools=[TOOL],
        max_tokens=64,
        stream=True,
        stream_options={"include_usage": True},
        extra_body=llm_server.scripted(reply),
    )
    received = list(stream)
    chunks = [c for c in received if c.choices]
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    calls = [tc for c in chunks for tc in c.choices[0].delta.tool_calls or []]
    assert text == "Looking."
    assert [(tc.function.name, json.loads(tc.function.arguments)) for tc in calls] == [
        ("contacts.search", {"query": "Ben", "limit": 2})
    ]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    # include_usage: the usage comes last, in a chunk of its own with no choices (OpenAI's protocol).
    assert received[-1].usage is not None and received[-1].usage.completion_tokens > 0

    resp = client.chat.completions.create(
        model=llm_server.model, messages=MESSAGES, max_tokens=64, extra_body=llm_server.scripted("Plain answer.")
    )
    assert resp.choices[0].message.content == "Plain answer."
    assert resp.choices[0].message.tool_calls is None and resp.choices[0].finish_reason == "stop"


def test_malformed_tool_call_fails_the_request(llm_server):
    """A `<tool_call>` the server cannot parse (cut by max_tokens, or not JSON) fails the request
    instead of coming back as text: HTTP 400 naming the JSON error in transformers 5.25 (HTTP 500 in an
    earlier release). Clients must treat that as a failed request, not a dead server.

    After such an error the server may close the keep-alive connection; a request sent on it at once can
    fail with APIConnectionError although the server is fine (a retry, the openai default, recovers)."""
    import openai

    client = _client(llm_server.base_url)
    reply = '<tool_call>\n{"name": "contacts.search", "arguments": {"query": "Ben"}}\n</tool_call>'
    with pytest.raises(openai.APIStatusError) as failed:
        client.chat.completions.create(
            model=llm_server.model, messages=MESSAGES, tools=[TOOL], max_tokens=6, extra_body=llm_server.scripted(reply)
        )
    assert failed.value.status_code == 400  # transformers is pinned to 5.25 (pyproject.toml)
    assert "json" in failed.value.response.text.lower()  # the server says what it could not parse
    assert llm_server.alive
    # phoneenv's client takes that refusal for what it is: the model's invalid reply, not a server failure.
    from agents.llm.client import OpenAIChatClient

    ours = OpenAIChatClient(
        llm_server.base_url, llm_server.model, max_attempts=1, extra_body=llm_server.scripted(reply)
    )
    result = ours.chat(MESSAGES, tools=[TOOL], max_tokens=6)
    assert result.tool_calls == [] and result.parse_errors
    assert result.raw and reply.startswith("<tool_call>" + result.raw)  # the cut-off call the model wrote
    client = _client(llm_server.base_url)  # a fresh connection pool (see the docstring)
    with pytest.raises(openai.BadRequestError):  # a server pinned to one model refuses other names
        client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=4)
    assert client.chat.completions.create(model=llm_server.model, messages=MESSAGES, max_tokens=2).choices


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_dead_server_is_a_connection_error(tiny_model_dir, how):
    import openai

    from tests.llm_server import serve_tiny_model

    with serve_tiny_model(tiny_model_dir) as server:
        client = _client(server.base_url)
        resp = client.chat.completions.create(model=server.model, messages=MESSAGES, max_tokens=2)
        assert resp.usage.completion_tokens <= 2
        assert server.process.pid in server.live_group_members()
        getattr(server, how)()
        assert not server.alive
        with pytest.raises(openai.APIConnectionError):
            client.chat.completions.create(model=server.model, messages=MESSAGES, max_tokens=2)
    # The whole process group is gone: no orphans (a zombie a non-reaping init keeps is not running).
    assert server.process.poll() is not None
    assert server.live_group_members() == []


def test_start_failure_reports_the_log(tiny_model_dir):
    pytest.importorskip("fastapi")
    from tests.llm_server import ServerStartError, serve_tiny_model

    with (
        pytest.raises(ServerStartError, match=r"(?s)exited with code 2 before it was ready; log tail:.*--no-such-flag"),
        serve_tiny_model(tiny_model_dir, extra_args=("--no-such-flag",), startup_timeout=60),
    ):
        pass
