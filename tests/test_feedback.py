"""Structured error feedback: a builder per error kind, one recoverability table, JSON round-trips."""

from __future__ import annotations

import json

import pytest

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import INFRASTRUCTURE_ERRORS, ErrorKind, Feedback
from phoneenv.harness import feedback as fb
from phoneenv.tools import ArgumentError, ToolError


@pytest.fixture(scope="module")
def tools():
    return SandboxBackend().tools()


def _arg_error(tools, name, arguments):
    entry = tools[name]
    with pytest.raises(ArgumentError) as info:
        entry.validator.validate(arguments)
    return entry.spec, info.value


def _examples(tools) -> dict[ErrorKind, Feedback]:
    specs = [e.spec for e in tools.values()]
    spec, err = _arg_error(tools, "clock.create_alarm", {"time": "7pm"})
    return {
        ErrorKind.INVALID_JSON: fb.invalid_json("the action is not valid JSON: Expecting value"),
        ErrorKind.UNKNOWN_TOOL: fb.unknown_tool("mesages.snd", specs),
        ErrorKind.INVALID_ARGUMENTS: fb.invalid_arguments(spec.name, err, spec.parameters),
        ErrorKind.PERMISSION_DENIED: fb.permission_denied("messages", "android.permission.SEND_SMS"),
        ErrorKind.LOGIN_REQUIRED: fb.login_required("mail", "ana@example.com"),
        ErrorKind.NOT_FOUND: fb.not_found("contact", "c_9", "contacts.search", ["c_1"]),
        ErrorKind.CONFLICT: fb.conflict("Ana Lima (c_1) already has number +4915111111111", candidates=["c_1"]),
        ErrorKind.PRECONDITION_FAILED: fb.precondition_failed("a call must be in progress", "call phone.call first"),
        ErrorKind.CONFIRMATION_REQUIRED: fb.confirmation_required("messages.send"),
        ErrorKind.DEVICE_ERROR: fb.device_error("adb lost the device"),
        ErrorKind.TIMEOUT: fb.timeout("messages.send after 30 s"),
        ErrorKind.INTERNAL_ERROR: fb.internal_error("notes.create", "the sandbox"),
    }


def test_every_kind_has_a_builder_a_hint_and_a_recoverability():
    assert set(fb.BUILDERS) == set(ErrorKind)
    assert set(fb.RECOVERABLE) == set(ErrorKind)
    assert set(fb.DEFAULT_HINTS) == set(ErrorKind)
    for kind in ErrorKind:
        assert fb.recoverable(kind) is fb.RECOVERABLE[kind]
        assert fb.recoverable(kind.value) is fb.RECOVERABLE[kind]


def test_infrastructure_kinds_are_not_recoverable_and_agent_kinds_are():
    for kind in ErrorKind:
        assert fb.RECOVERABLE[kind] is (kind not in INFRASTRUCTURE_ERRORS), kind


@pytest.mark.parametrize("kind", list(ErrorKind), ids=lambda k: k.value)
def test_builder_output_for_every_kind(tools, kind):
    out = _examples(tools)[kind]
    assert out.ok is False and out.error is kind
    assert out.message and out.hint
    assert out.recoverable is fb.RECOVERABLE[kind]
    assert out.infrastructure is (kind in INFRASTRUCTURE_ERRORS)
    text = out.model_dump_json()
    assert Feedback.model_validate_json(text) == out
    assert json.loads(text)["error"] == kind.value
    # the env shows feedback as ASCII JSON without nulls; that must parse back too
    assert Feedback.model_validate_json(out.model_dump_json(exclude_none=True, ensure_ascii=True)) == out


def test_examples_cover_every_kind(tools):
    assert set(_examples(tools)) == set(ErrorKind)


# -- contents, kind by kind ---------------------------------------------------------------------


def test_invalid_json_keeps_the_detail():
    out = fb.invalid_json("'arguments' must be a JSON object")
    assert out.message == "'arguments' must be a JSON object"
    assert '"name": "app.verb"' in out.hint


def test_unknown_tool_lists_nearest_names(tools):
    specs = [e.spec for e in tools.values()]
    out = fb.unknown_tool("mesages.snd", specs)
    assert out.candidates and out.candidates[0] == "messages.send"
    assert "messages.send" in out.hint
    assert "'mesages.snd'" in out.message
    nothing = fb.unknown_tool("zzzz", specs)
    assert nothing.candidates is None and nothing.hint == fb.DEFAULT_HINTS[ErrorKind.UNKNOWN_TOOL]


def test_invalid_arguments_pattern_path_expected_and_description(tools):
    spec, err = _arg_error(tools, "clock.create_alarm", {"time": "7pm"})
    out = fb.invalid_arguments(spec.name, err, spec.parameters)
    assert out.path == "/time" and out.expected == "string"
    assert out.message.startswith("clock.create_alarm: ")
    assert "matching ^([01]\\d|2[0-3]):[0-5]\\d$" in out.hint
    assert "24-hour HH:MM" in out.hint  # the schema's description at /time


def test_invalid_arguments_nested_array_item(tools):
    spec, err = _arg_error(
        tools,
        "calendar.create_event",
        {"title": "x", "start": "2026-11-30T10:00", "end": "2026-11-30T11:00", "attendees": ["Ana", 3]},
    )
    out = fb.invalid_arguments(spec.name, err, spec.parameters)
    assert out.path == "/attendees/1" and out.expected == "string"
    assert "1 to 100 characters" in out.hint and "A contact's name or an email address" in out.hint


def test_invalid_arguments_missing_argument_gets_type_from_schema(tools):
    spec, err = _arg_error(tools, "calendar.create_event", {"title": "x", "end": "2026-11-30T11:00"})
    assert err.expected is None
    out = fb.invalid_arguments(spec.name, err, spec.parameters)
    assert out.path == "/start" and out.expected == "string"
    assert "When it starts" in out.hint


def test_invalid_arguments_enum_and_range(tools):
    spec, err = _arg_error(tools, "clock.create_alarm", {"time": "07:00", "days": ["monday"]})
    out = fb.invalid_arguments(spec.name, err, spec.parameters)
    assert out.path == "/days/0" and out.expected.startswith("one of") and "'mon'" in out.expected
    spec, err = _arg_error(tools, "settings.set_brightness", {"level": 150})
    out = fb.invalid_arguments(spec.name, err, spec.parameters)
    assert out.path == "/level" and out.expected == "integer" and "0 to 100" in out.hint


def test_invalid_arguments_unexpected_argument_lists_allowed_names(tools):
    spec, err = _arg_error(
        tools,
        "calendar.create_event",
        {"title": "x", "start": "2026-11-30T10:00", "end": "2026-11-30T11:00", "atendees": []},
    )
    out = fb.invalid_arguments(spec.name, err, spec.parameters)
    assert out.path == "/atendees" and out.expected is None
    assert out.candidates[0] == "attendees" and set(out.candidates) == set(spec.parameters["properties"])
    assert "not a parameter of calendar.create_event" in out.hint
    spec, err = _arg_error(tools, "clock.now", {"x": 1})
    out = fb.invalid_arguments(spec.name, err, spec.parameters)
    assert out.candidates is None and "takes no arguments" in out.hint


def test_invalid_arguments_without_schema_still_has_path():
    out = fb.invalid_arguments("t.x", ArgumentError("argument 'a': bad", "/a", "integer"))
    assert out.path == "/a" and out.expected == "integer" and out.hint == fb.DEFAULT_HINTS[ErrorKind.INVALID_ARGUMENTS]


def test_schema_at_follows_refs_unions_and_items():
    schema = {
        "type": "object",
        "properties": {
            "who": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/P"}}, {"type": "null"}]},
            "tags": {"type": "object", "additionalProperties": {"type": "integer", "description": "count"}},
            "a/b": {"type": "boolean"},
        },
        "$defs": {"P": {"type": "object", "properties": {"name": {"type": "string", "description": "Name"}}}},
    }
    assert fb.schema_at(schema, "") is schema
    assert fb.schema_at(schema, "/who/2/name") == {"type": "string", "description": "Name"}
    assert fb.schema_at(schema, "/tags/x")["description"] == "count"
    assert fb.schema_at(schema, "/a~1b") == {"type": "boolean"}
    assert fb.schema_at(schema, "/nope") is None
    assert fb.schema_at(schema, "/who/0/nope") is None
    assert fb.describe_type(schema["properties"]["who"], schema) == "array of object or null"
    assert fb.describe_type({"enum": ["a", 1]}) == 'one of "a", 1'
    assert fb.describe_type({}) is None


def test_permission_denied_names_the_exact_request():
    out = fb.permission_denied("messages", "android.permission.SEND_SMS")
    assert "android.permission.SEND_SMS" in out.message and "messages" in out.message
    call = out.hint.split("call ", 1)[1].split(", then")[0]
    tool, args = call.split(" ", 1)
    assert tool == "system.request_permission"
    assert json.loads(args) == {"app": "messages", "permission": "android.permission.SEND_SMS"}
    denied = fb.permission_denied("messages", "android.permission.SEND_SMS", denied_by_user=True)
    assert "denied" in denied.message and "system.request_permission" not in denied.hint
    assert denied.recoverable is True


def test_login_required_names_sign_in():
    out = fb.login_required("mail", "ana@example.com")
    assert "ana@example.com" in out.message
    assert 'system.sign_in {"app": "mail", "account": "ana@example.com"}' in out.hint
    unknown = fb.login_required("mail", None)
    assert "system.list_accounts" in unknown.hint and "system.sign_in" in unknown.hint


def test_confirmation_required_names_user_confirm():
    out = fb.confirmation_required("messages.send")
    assert "messages.send" in out.message and "user.confirm" in out.hint and "messages.send" in out.hint


def test_not_found_with_finder_and_candidates():
    out = fb.not_found("contact", "c_9", "contacts.search", ["c_1", "c_2"])
    assert out.message == "no contact 'c_9'" and out.candidates == ["c_1", "c_2"]
    assert "'c_1'" in out.hint and "contacts.search" in out.hint
    bare = fb.not_found("skill", "x")
    assert bare.candidates is None and "skill" in bare.hint


def test_conflict_and_precondition():
    out = fb.conflict("a call with Ana is already in progress", "call phone.end_call first")
    assert out.hint == "call phone.end_call first" and out.candidates is None
    assert fb.conflict("dup").hint == fb.DEFAULT_HINTS[ErrorKind.CONFLICT]
    pre = fb.precondition_failed("a call must be in progress", "call phone.call first")
    assert pre.message == "precondition not met: a call must be in progress" and pre.hint == "call phone.call first"


def test_infrastructure_builders():
    for out in (fb.device_error("adb lost the device"), fb.timeout("30 s"), fb.internal_error("notes.create")):
        assert out.infrastructure and out.recoverable is False
    assert fb.internal_error("notes.create", "the sandbox").message == "notes.create failed inside the sandbox"


def test_suggest_call_drops_none():
    assert fb.suggest_call("system.sign_in", app="mail", account="a@b.c", password=None) == (
        'system.sign_in {"app": "mail", "account": "a@b.c"}'
    )


# -- the ToolError bridge -----------------------------------------------------------------------


def test_from_tool_error_uses_the_table_and_default_hints():
    out = fb.from_tool_error(ToolError(ErrorKind.NOT_FOUND, "no note with id 'n_9'", candidates=["n_1"]))
    assert out.error is ErrorKind.NOT_FOUND and out.recoverable is True and out.candidates == ["n_1"]
    assert out.hint == fb.DEFAULT_HINTS[ErrorKind.NOT_FOUND]
    # TIMEOUT is infrastructure: not recoverable by acting differently
    assert fb.from_tool_error(ToolError(ErrorKind.TIMEOUT, "slow")).recoverable is False


def test_from_tool_error_fills_expected_from_the_schema(tools):
    spec = tools["calendar.create_event"].spec
    exc = ToolError(ErrorKind.INVALID_ARGUMENTS, "the event would end before it starts", hint="x", path="/end")
    out = fb.from_tool_error(exc, spec.parameters)
    assert out.path == "/end" and out.expected == "string" and out.hint == "x"


def test_to_tool_error_round_trips():
    built = fb.not_found("contact", "c_9", "contacts.search", ["c_1"])
    again = fb.from_tool_error(fb.to_tool_error(built))
    assert again == built
    with pytest.raises(ValueError):
        fb.to_tool_error(Feedback(ok=True, result={}))


def test_sandbox_tool_errors_become_structured_feedback(contacts_task):
    backend = SandboxBackend()
    backend.reset(contacts_task)
    entry = backend.tools()["contacts.create"]
    args = entry.validator.validate({"name": "Ana Again", "phone": "+49 151 1111 1111"})
    with pytest.raises(ToolError) as info:
        entry.method(backend.phone.apps["contacts"], **args)
    out = fb.from_tool_error(info.value, entry.spec.parameters)
    assert out.error is ErrorKind.CONFLICT and out.candidates == ["c_1"] and out.recoverable is True
