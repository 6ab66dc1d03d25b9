"""Reply parsing: a corpus of real-format model outputs (Qwen2.5 / Qwen3 Hermes-style text and
OpenAI ``tool_calls``), plus a round-trip property."""

from __future__ import annotations

import doctest
import json
from types import SimpleNamespace as NS

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.llm import parsing
from agents.llm.parsing import (
    call_names_from_api,
    parse_api_tool_calls,
    parse_reply,
    parse_tool_calls,
    split_thinking,
)
from phoneenv.llm import ChatResult, TokenUsage


def test_docstring_examples() -> None:
    result = doctest.testmod(parsing)
    assert result.attempted >= 10
    assert result.failed == 0


# ------------------------------------------------------------------------------ split_thinking


@pytest.mark.parametrize(
    ("text", "thinking", "visible"),
    [
        ("Hello there.", "", "Hello there."),
        ("", "", ""),
        ("<think>\nAna is the sister.\n</think>\n\nSending now.", "Ana is the sister.", "Sending now."),
        # several segments, text in between kept in order
        ("<think>a</think>One. <think> b </think>Two.", "a\nb", "One. Two."),
        # empty thinking (Qwen3 with thinking disabled emits an empty block)
        ("<think>\n\n</think>\n\nDone.", "", "Done."),
        # unclosed: ran out of tokens while thinking
        (
            "<think>\nThe user wants the 3 newest emails. First I list",
            "The user wants the 3 newest emails. First I list",
            "",
        ),
        # starts inside thinking (template put <think> in the prompt)
        ("Okay, search contacts first.\n</think>\n\nLet me look.", "Okay, search contacts first.", "Let me look."),
        # </think>-only, then a later full segment
        ("first\n</think>\nA<think>second</think>B", "first\nsecond", "AB"),
        # a stray close tag after a closed segment is dropped from visible text
        ("<think>x</think>answer</think>", "x", "answer"),
    ],
)
def test_split_thinking(text: str, thinking: str, visible: str) -> None:
    assert split_thinking(text) == (thinking, visible)


# ---------------------------------------------------------------------------- parse_tool_calls

QWEN25_ONE = (
    "<tool_call>\n"
    '{"name": "messages.send", "arguments": {"to": "Ana Lima", "body": "Running 10 min late"}}\n'
    "</tool_call>"
)

QWEN25_SEVERAL = (
    "I'll check both calendars.\n"
    "<tool_call>\n"
    '{"name": "calendar.list_events", "arguments": {"date": "2025-03-14"}}\n'
    "</tool_call>\n"
    "<tool_call>\n"
    '{"name": "contacts.search", "arguments": {"query": "Ben"}}\n'
    "</tool_call>\n"
    "<tool_call>\n"
    '{"name": "clock.now", "arguments": {}}\n'
    "</tool_call>"
)

NESTED = (
    "<tool_call>\n"
    "{\n"
    '  "name": "calendar.create_event",\n'
    '  "arguments": {\n'
    '    "title": "Team \\"sync\\"",\n'
    '    "attendees": [{"name": "Ana", "email": "ana@example.com"}, {"name": "Ben", "email": null}],\n'
    '    "reminders": [{"minutes": 10, "method": "push"}],\n'
    '    "recurrence": {"freq": "weekly", "days": ["MO", "WE"], "until": null},\n'
    '    "all_day": false, "priority": 2.5\n'
    "  }\n"
    "}\n"
    "</tool_call>"
)

UNICODE = (
    "<tool_call>\n"
    '{"name": "messages.send", "arguments": {"to": "Zoë Müller", "body": "Bis später 🎉 — 東京で会いましょう"}}\n'
    "</tool_call>\n"
    "<tool_call>\n"
    '{"name": "contacts.search", "arguments": {"query": "Ren\\u00e9e Fran\\u00e7ois \\ud83d\\ude00"}}\n'
    "</tool_call>"
)

QWEN3_THINK_THEN_CALL = (
    "<think>\n"
    "The user wants to text Ana that they're late. I need the contact first? No — messages.send takes "
    "a name. I'll call it directly.\n"
    "</think>\n\n"
    "<tool_call>\n"
    '{"name": "messages.send", "arguments": {"to": "Ana", "body": "Late, sorry!"}}\n'
    "</tool_call>"
)

QWEN3_CLOSE_ONLY = (
    "Let me find the note titled groceries.\n"
    "</think>\n\n"
    "<tool_call>\n"
    '{"name": "notes.search", "arguments": {"query": "groceries"}}\n'
    "</tool_call>"
)


def test_one_call() -> None:
    assert parse_tool_calls(QWEN25_ONE) == (
        [{"id": "call_0", "name": "messages.send", "arguments": {"to": "Ana Lima", "body": "Running 10 min late"}}],
        [],
    )


def test_several_calls_in_order() -> None:
    calls, errors = parse_tool_calls(QWEN25_SEVERAL)
    assert errors == []
    assert calls == [
        {"id": "call_0", "name": "calendar.list_events", "arguments": {"date": "2025-03-14"}},
        {"id": "call_1", "name": "contacts.search", "arguments": {"query": "Ben"}},
        {"id": "call_2", "name": "clock.now", "arguments": {}},
    ]


def test_nested_arguments() -> None:
    calls, errors = parse_tool_calls(NESTED)
    assert errors == []
    assert calls == [
        {
            "id": "call_0",
            "name": "calendar.create_event",
            "arguments": {
                "title": 'Team "sync"',
                "attendees": [{"name": "Ana", "email": "ana@example.com"}, {"name": "Ben", "email": None}],
                "reminders": [{"minutes": 10, "method": "push"}],
                "recurrence": {"freq": "weekly", "days": ["MO", "WE"], "until": None},
                "all_day": False,
                "priority": 2.5,
            },
        }
    ]


def test_unicode() -> None:
    calls, errors = parse_tool_calls(UNICODE)
    assert errors == []
    assert calls == [
        {
            "id": "call_0",
            "name": "messages.send",
            "arguments": {"to": "Zoë Müller", "body": "Bis später 🎉 — 東京で会いましょう"},
        },
        {"id": "call_1", "name": "contacts.search", "arguments": {"query": "Renée François 😀"}},
    ]


def test_accepted_shapes() -> None:
    text = (
        '<tool_call>{"name": "a.one", "parameters": {"x": 1}}</tool_call>'
        '<tool_call>{"name": "a.two", "arguments": "{\\"y\\": [1, 2], \\"z\\": \\"caf\\u00e9\\"}"}</tool_call>'
        '<tool_call>{"type": "function", "function": {"name": "a.three", "arguments": {"k": "v"}}}</tool_call>'
        '<tool_call>{"function": {"name": "a.four", "arguments": "{\\"n\\": null}"}}</tool_call>'
        '<tool_call>{"name": "a.five"}</tool_call>'
        '<tool_call>{"name": "a.six", "arguments": null}</tool_call>'
        '<tool_call>{"name": "a.seven", "arguments": ""}</tool_call>'
        '<tool_call>\n```json\n{"name": "a.eight", "arguments": {"q": 1}}\n```\n</tool_call>'
    )
    calls, errors = parse_tool_calls(text)
    assert errors == []
    assert [(c["id"], c["name"], c["arguments"]) for c in calls] == [
        ("call_0", "a.one", {"x": 1}),
        ("call_1", "a.two", {"y": [1, 2], "z": "café"}),
        ("call_2", "a.three", {"k": "v"}),
        ("call_3", "a.four", {"n": None}),
        ("call_4", "a.five", {}),
        ("call_5", "a.six", {}),
        ("call_6", "a.seven", {}),
        ("call_7", "a.eight", {"q": 1}),
    ]


def test_truncated_json_inside_closed_block() -> None:
    text = '<tool_call>\n{"name": "messages.send", "arguments": {"to": "Ana", "bo\n</tool_call>'
    calls, errors = parse_tool_calls(text)
    assert calls == []
    assert len(errors) == 1
    assert errors[0].startswith("tool call block 1 is not valid JSON (")
    assert '"bo' in errors[0]


def test_unclosed_final_block_after_good_block() -> None:
    text = (
        "<tool_call>\n"
        '{"name": "contacts.search", "arguments": {"query": "Ana"}}\n'
        "</tool_call>\n"
        "<tool_call>\n"
        '{"name": "messages.send", "arguments": {"to": "Ana", "body": "Hi'
    )
    calls, errors = parse_tool_calls(text)
    assert calls == [{"id": "call_0", "name": "contacts.search", "arguments": {"query": "Ana"}}]
    assert errors == [
        'tool call block 2 is truncated (no closing </tool_call>): {"name": "messages.send", "arguments": {"to": "Ana", "body": "Hi'
    ]


def test_unclosed_block_with_complete_json_is_still_an_error() -> None:
    calls, errors = parse_tool_calls('<tool_call>\n{"name": "clock.now", "arguments": {}}\n')
    assert calls == []
    assert errors == [
        'tool call block 1 is truncated (no closing </tool_call>): {"name": "clock.now", "arguments": {}}'
    ]


def test_unclosed_block_before_another_block() -> None:
    text = '<tool_call>{"name": "a.b", "argu<tool_call>{"name": "c.d", "arguments": {}}</tool_call>'
    calls, errors = parse_tool_calls(text)
    assert calls == [{"id": "call_0", "name": "c.d", "arguments": {}}]
    assert errors == ['tool call block 1 is truncated (no closing </tool_call>): {"name": "a.b", "argu']


def test_tool_call_tag_inside_a_string_argument() -> None:
    text = '<tool_call>{"name": "notes.create", "arguments": {"body": "use <tool_call> tags"}}</tool_call>'
    assert parse_tool_calls(text) == (
        [{"id": "call_0", "name": "notes.create", "arguments": {"body": "use <tool_call> tags"}}],
        [],
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            '[{"name": "a.b", "arguments": {}}]',
            'tool call block 1 is a JSON array, not an object: [{"name": "a.b", "arguments": {}}]',
        ),
        ('"clock.now"', 'tool call block 1 is a JSON string, not an object: "clock.now"'),
        ('{"arguments": {"x": 1}}', 'tool call block 1 has no "name" string: {"arguments": {"x": 1}}'),
        ('{"name": 7, "arguments": {}}', 'tool call block 1 has no "name" string: {"name": 7, "arguments": {}}'),
        (
            '{"name": "a.b", "arguments": [1, 2]}',
            'tool call block 1 (a.b) has arguments that are a JSON array, not an object: {"name": "a.b", "arguments": [1, 2]}',
        ),
        (
            '{"name": "a.b", "arguments": "[1]"}',
            'tool call block 1 (a.b) has arguments that are a JSON array, not an object: {"name": "a.b", "arguments": "[1]"}',
        ),
    ],
)
def test_block_errors(body: str, error: str) -> None:
    assert parse_tool_calls(f"<tool_call>\n{body}\n</tool_call>") == ([], [error])


def test_arguments_string_with_bad_json() -> None:
    calls, errors = parse_tool_calls('<tool_call>{"name": "a.b", "arguments": "{to: Ana}"}</tool_call>')
    assert calls == []
    assert len(errors) == 1
    assert errors[0].startswith("tool call block 1 (a.b) has arguments as a string that is not valid JSON (")


def test_errors_do_not_stop_later_calls() -> None:
    text = '<tool_call>[1]</tool_call><tool_call>{"name": "x.y", "arguments": {"a": 1}}</tool_call>'
    calls, errors = parse_tool_calls(text)
    assert calls == [{"id": "call_0", "name": "x.y", "arguments": {"a": 1}}]
    assert errors == ["tool call block 1 is a JSON array, not an object: [1]"]


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"name": "files.list", "arguments": {"folder": "Downloads"}}\n```',
        '```\n{"name": "files.list", "arguments": {"folder": "Downloads"}}\n```',
        '  {"name": "files.list", "arguments": {"folder": "Downloads"}}  ',
        '{"name": "files.list", "parameters": {"folder": "Downloads"}}',
    ],
)
def test_bare_json_object_fallback(text: str) -> None:
    assert parse_tool_calls(text) == (
        [{"id": "call_0", "name": "files.list", "arguments": {"folder": "Downloads"}}],
        [],
    )


@pytest.mark.parametrize(
    "text",
    [
        "Sure! I've sent the message to Ana. Anything else?",
        "The answer is 42.",
        '{"answer": "42"}',
        '[{"name": "a.b", "arguments": {}}]',
        # an answer that happens to be a record with a "name" is not a call
        '{"name": "Ana Lima", "phone": "+4915111111111"}',
        # JSON followed by chatter is not exactly one object
        '{"name": "files.list", "arguments": {}}\nI will now list the files.',
        'I would call files.list with {"folder": "Downloads"}.',
        "</tool_call>",
    ],
)
def test_plain_text_has_no_calls_and_no_errors(text: str) -> None:
    assert parse_tool_calls(text) == ([], [])


def test_bare_json_call_with_bad_arguments_is_an_error() -> None:
    assert parse_tool_calls('{"name": "a.b", "arguments": [1]}') == (
        [],
        ["tool call (bare JSON) (a.b) has arguments that are a JSON array, not an object"],
    )


# ------------------------------------------------------------------------ parse_api_tool_calls


def _api_call(id_: str, name: str, arguments: str) -> NS:
    return NS(id=id_, type="function", function=NS(name=name, arguments=arguments))


def test_api_tool_calls_objects() -> None:
    tool_calls = [
        _api_call("call_abc", "messages__send", '{"to": "Zoë", "body": "On my way 🚗"}'),
        _api_call("call_def", "calendar__create_event", '{"attendees": [{"name": "Ben"}], "all_day": true}'),
        _api_call("call_ghi", "clock__now", ""),
    ]
    assert parse_api_tool_calls(tool_calls) == (
        [
            {"id": "call_abc", "name": "messages__send", "arguments": {"to": "Zoë", "body": "On my way 🚗"}},
            {
                "id": "call_def",
                "name": "calendar__create_event",
                "arguments": {"attendees": [{"name": "Ben"}], "all_day": True},
            },
            {"id": "call_ghi", "name": "clock__now", "arguments": {}},
        ],
        [],
    )


def test_api_tool_calls_invalid_json() -> None:
    tool_calls = [
        _api_call("call_1", "contacts__search", '{"query": "Ana"}'),
        _api_call("call_2", "messages__send", '{"to": "Ana", "body": "hi'),
    ]
    calls, errors = parse_api_tool_calls(tool_calls)
    assert calls == [{"id": "call_1", "name": "contacts__search", "arguments": {"query": "Ana"}}]
    assert len(errors) == 1
    assert errors[0].startswith("API tool call 2 (id call_2, messages__send): arguments are not valid JSON (")


def test_api_tool_calls_dicts_and_odd_entries() -> None:
    tool_calls = [
        {"id": "c1", "type": "function", "function": {"name": "a__b", "arguments": '{"x": 1}'}},
        {"type": "function", "function": {"name": "c__d", "arguments": {"already": "decoded"}}},
        {"id": "c3", "function": {"name": "e__f", "arguments": "[1, 2]"}},
        {"id": "c4", "function": {"name": "", "arguments": "{}"}},
        {"id": "c5", "type": "custom"},
        NS(id="c6", function=NS(name="g__h", arguments=None)),
    ]
    calls, errors = parse_api_tool_calls(tool_calls)
    assert calls == [
        {"id": "c1", "name": "a__b", "arguments": {"x": 1}},
        {"id": "call_1", "name": "c__d", "arguments": {"already": "decoded"}},
        {"id": "c6", "name": "g__h", "arguments": {}},
    ]
    assert errors == [
        "API tool call 3 (id c3, e__f): arguments are a JSON array, not an object",
        "API tool call 4 (id c4, ): missing function name",
        "API tool call 5 (id c5) has no function",
    ]


def test_api_tool_calls_none_or_empty() -> None:
    assert parse_api_tool_calls(None) == ([], [])
    assert parse_api_tool_calls([]) == ([], [])


# --------------------------------------------------------------------------------- parse_reply


def test_parse_reply_thinking_then_call() -> None:
    result = parse_reply(QWEN3_THINK_THEN_CALL)
    assert isinstance(result, ChatResult)
    assert result.thinking == (
        "The user wants to text Ana that they're late. I need the contact first? No — messages.send takes "
        "a name. I'll call it directly."
    )
    assert result.content == ""
    assert result.tool_calls == [
        {"id": "call_0", "name": "messages.send", "arguments": {"to": "Ana", "body": "Late, sorry!"}}
    ]
    assert result.parse_errors == []
    assert result.raw == QWEN3_THINK_THEN_CALL
    assert result.usage == TokenUsage()


def test_parse_reply_close_think_only() -> None:
    result = parse_reply(QWEN3_CLOSE_ONLY)
    assert result.thinking == "Let me find the note titled groceries."
    assert result.content == ""
    assert result.tool_calls == [{"id": "call_0", "name": "notes.search", "arguments": {"query": "groceries"}}]


def test_parse_reply_unclosed_thinking() -> None:
    text = '<think>\nI should call <tool_call>{"name": "x.y", "arguments": {}}</tool_call> maybe, but'
    result = parse_reply(text)
    assert result.thinking == 'I should call <tool_call>{"name": "x.y", "arguments": {}}</tool_call> maybe, but'
    assert (result.content, result.tool_calls, result.parse_errors) == ("", [], [])


def test_parse_reply_content_around_calls() -> None:
    result = parse_reply(QWEN25_SEVERAL)
    assert result.content == "I'll check both calendars."
    assert [c["name"] for c in result.tool_calls] == ["calendar.list_events", "contacts.search", "clock.now"]


def test_parse_reply_truncated_call_is_removed_from_content() -> None:
    result = parse_reply('Texting her.\n<tool_call>\n{"name": "messages.send", "argum')
    assert result.content == "Texting her."
    assert result.tool_calls == []
    assert result.parse_errors == [
        'tool call block 1 is truncated (no closing </tool_call>): {"name": "messages.send", "argum'
    ]


def test_parse_reply_plain_answer() -> None:
    result = parse_reply("<think>easy</think>\nIt is 14:05.")
    assert (result.thinking, result.content, result.tool_calls, result.parse_errors) == (
        "easy",
        "It is 14:05.",
        [],
        [],
    )


def test_parse_reply_bare_json_call_empties_content() -> None:
    result = parse_reply('<think>ok</think>\n```json\n{"name": "clock.now", "arguments": {}}\n```')
    assert result.content == ""
    assert result.tool_calls == [{"id": "call_0", "name": "clock.now", "arguments": {}}]


def test_parse_reply_prefers_api_tool_calls() -> None:
    text = '<think>use the API</think>Calling.<tool_call>{"name": "text.call", "arguments": {}}</tool_call>'
    result = parse_reply(text, [_api_call("call_z", "clock__now", "{}")])
    assert result.thinking == "use the API"
    assert result.content == "Calling."
    assert result.tool_calls == [{"id": "call_z", "name": "clock__now", "arguments": {}}]
    assert result.parse_errors == []


def test_parse_reply_api_errors_and_empty_list() -> None:
    result = parse_reply(None, [_api_call("call_q", "a__b", "{oops")])  # type: ignore[arg-type]
    assert (result.content, result.raw, result.tool_calls) == ("", "", [])
    assert len(result.parse_errors) == 1
    # an empty API list falls back to the text
    result = parse_reply(QWEN25_ONE, [])
    assert [c["name"] for c in result.tool_calls] == ["messages.send"]


# ------------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("name", "dotted"),
    [
        ("messages__send", "messages.send"),
        ("calendar__create_event", "calendar.create_event"),
        ("messages.send", "messages.send"),
        ("clock_now", "clock_now"),
    ],
)
def test_call_names_from_api(name: str, dotted: str) -> None:
    assert call_names_from_api(name) == dotted


# ----------------------------------------------------------------------------- round trip

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30).filter(lambda s: "</tool_call>" not in s)
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_text, children, max_size=4),
    max_leaves=15,
)
_names = st.from_regex(r"[a-z][a-z_]{0,11}\.[a-z][a-z_]{0,15}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(
    name=_names,
    arguments=st.dictionaries(_text, _json_values, max_size=6),
    ensure_ascii=st.booleans(),
    indent=st.sampled_from([None, 2]),
)
def test_round_trip(name: str, arguments: dict, ensure_ascii: bool, indent: int | None) -> None:
    call = {"name": name, "arguments": arguments}
    rendered = json.dumps(call, ensure_ascii=ensure_ascii, indent=indent)
    assert "</tool_call>" not in rendered
    text = f"<tool_call>\n{rendered}\n</tool_call>"
    assert parse_tool_calls(text) == ([{"id": "call_0", "name": name, "arguments": arguments}], [])
    if "think>" in rendered:  # thinking tags are split off before calls are parsed
        return
    result = parse_reply(f"<think>plan</think>\n{text}")
    assert result.tool_calls == [{"id": "call_0", "name": name, "arguments": arguments}]
    assert result.content == ""
