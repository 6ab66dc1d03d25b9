"""Tool specs from type hints, strict argument validation, OpenAI rendering, contract JSON."""

from __future__ import annotations

import json

import pytest
from typing_extensions import TypedDict

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import Feedback, TaskSpec, ToolCall, Trace, Verdict
from phoneenv.tools import ArgumentError, nearest_tools


@pytest.fixture(scope="module")
def tools():
    return SandboxBackend().tools()


def test_schema_generated_from_signature(tools):
    spec = tools["contacts.create"].spec
    params = spec.parameters
    assert params["type"] == "object" and params["additionalProperties"] is False
    assert params["required"] == ["name", "phone"]
    assert params["properties"]["name"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 80,
        "description": "Full name.",
    }
    assert params["properties"]["email"]["default"] is None
    assert spec.description.startswith("Create a contact.")
    assert spec.effect.value == "write" and spec.app == "contacts" and spec.domain.value == "contacts"
    assert spec.permissions == ("android.permission.READ_CONTACTS", "android.permission.WRITE_CONTACTS")
    assert set(spec.returns["properties"]) == {"id", "name", "phone", "email", "relation", "favorite", "birthday",
                                               "phone_label", "other_phones", "email_label", "other_emails"}  # fmt: skip
    assert spec.returns["required"] == ["id", "name", "phone", "email", "relation", "favorite", "birthday"]
    assert tools["system.sign_in"].spec.secret_parameters == ("password",)
    assert tools["screen.capture"].spec.returns_image


def test_at_least_sixty_tools_over_seven_apps(tools):
    apps = {s.spec.app for s in tools.values()}
    assert {"contacts", "messages", "phone", "calendar", "clock", "notes", "settings"} <= apps
    assert len(tools) >= 60


def test_every_tool_is_documented(tools):
    for name, entry in tools.items():
        spec = entry.spec
        assert spec.description and spec.description != name, name
        for pname, prop in spec.parameters["properties"].items():
            assert prop.get("description"), f"{name}.{pname} has no description"


def test_openai_rendering(tools):
    spec = tools["messages.send"].spec
    rendered = spec.to_openai()
    assert rendered["type"] == "function" and rendered["function"]["name"] == "messages.send"
    # rendered compactly (phoneenv.tools.compact_parameters): the limits validation enforces go,
    # and so does the full stop that ends a description
    assert rendered["function"]["parameters"] == {
        "properties": {
            "to": {"description": spec.parameters["properties"]["to"]["description"][:-1], "type": "string"},
            "body": {"description": "The text of the message (1 to 1000 characters)", "type": "string"},
        },
        "required": ["to", "body"],
        "type": "object",
    }
    assert spec.to_openai(name_style="underscore")["function"]["name"] == "messages__send"
    json.dumps(rendered)


@pytest.mark.parametrize(
    ("args", "path", "expected"),
    [
        ({"query": 5}, "/query", "string"),
        ({"query": "a", "limit": "5"}, "/limit", "int"),
        ({"query": "a", "limit": 0}, "/limit", "number"),
        ({}, "/query", None),
        ({"query": "a", "extra": 1}, "/extra", None),
        ({"query": ""}, "/query", "string"),
    ],
)
def test_strict_validation_paths(tools, args, path, expected):
    with pytest.raises(ArgumentError) as err:
        tools["contacts.search"].validator.validate(args)
    assert err.value.path == path
    assert err.value.expected == expected


def test_validation_fills_defaults(tools):
    assert tools["contacts.search"].validator.validate({"query": "ana"}) == {"query": "ana", "limit": 10}


def test_nearest_tools(tools):
    specs = [e.spec for e in tools.values()]
    assert nearest_tools("messages.snd", specs)[0] == "messages.send"
    assert nearest_tools("calender.zzzzzzzzzzzz", specs)[0].startswith("calendar.")
    assert nearest_tools("MESSAGES.SEND", specs)[0] == "messages.send"  # case is not a typo
    assert nearest_tools("qqqq", specs) == []


def test_contract_models_round_trip():
    call = ToolCall(name="notes.create", arguments={"title": "x"}, id="call_1")
    assert ToolCall.model_validate_json(call.model_dump_json()) == call
    fb = Feedback(ok=False, error="not_found", message="no note", hint="search first", image=b"x")
    assert "image" not in fb.model_dump_json()
    assert Feedback.model_validate_json(fb.model_dump_json()).error.value == "not_found"
    t = TaskSpec.model_validate_json(
        TaskSpec(
            id="t",
            domain="notes",
            goal="g",
            criteria=[{"kind": "answer", "equals": "x"}, {"kind": "behavior", "rule": "read_only"}],
        ).model_dump_json()
    )
    assert [c.kind for c in t.criteria] == ["answer", "behavior"]
    tr = Trace(
        task_id="t",
        backend="sandbox",
        category="tool",
        domain="notes",
        goal="g",
        verdict=Verdict(success=True, progress=1.0),
    )
    assert Trace.model_validate_json(tr.model_dump_json()) == tr


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"k": 1}, "/value"),
        ([1, {"a": 2}], "/value/1"),
        (["ok", ["nested"]], "/value/1"),
    ],
)
def test_paths_name_places_in_the_data_not_union_members(value, path):
    """``finish``'s ``value`` is a union (number, string, bool, list): pydantic's error locations
    carry member tags (``constrained-str``, ``list[...]``); the path names only the data."""
    from phoneenv.harness.providers.finish import FINISH_TOOL as _FINISH

    with pytest.raises(ArgumentError) as err:
        _FINISH.validator.validate({"answer": "x", "value": value})
    assert err.value.path == path


def test_tool_schemas_stand_alone_without_refs():
    # Nested argument types (a scene's actions, a trip's legs) are inlined: xgrammar and
    # function-calling prompts read each tool's schema alone, where "#/$defs/..." points nowhere.
    import json

    from phoneenv.phone import app_classes

    nested = 0
    for cls in app_classes().values():
        for d in cls.tool_defs():
            text = json.dumps(d.spec.parameters) + json.dumps(d.spec.returns)
            assert "$ref" not in text and "$defs" not in text, d.spec.name  # (the Appium tree: test_appium)
            nested += any(p.get("type") == "array" and p["items"].get("type") == "object"
                          for p in d.spec.parameters["properties"].values())  # fmt: skip
    assert nested >= 1  # at least one tool takes a list of objects (home.create_scene)


def test_inline_refs_keeps_siblings_and_refuses_recursion():
    from phoneenv.tools import inline_refs

    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A", "description": "the a"}},
        "$defs": {"A": {"type": "object", "properties": {"n": {"type": "integer"}}, "description": "an A"}},
    }
    assert inline_refs(schema) == {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"n": {"type": "integer"}}, "description": "the a"}},
    }
    loop = {"$ref": "#/$defs/L", "$defs": {"L": {"type": "array", "items": {"$ref": "#/$defs/L"}}}}
    with pytest.raises(TypeError, match="recursive"):
        inline_refs(loop)
    with pytest.raises(TypeError, match="not a local definition"):
        inline_refs({"$ref": "https://example.com/x.json"})


class Node(TypedDict):
    """A tree node (a recursive type, as the Appium backend's UI element tree)."""

    name: str
    children: list[Node]


def test_a_recursive_result_keeps_its_defs_and_a_recursive_argument_is_refused():
    from phoneenv.contract import Domain
    from phoneenv.tools import build_tool, tool

    class Tree:
        @tool()
        def root(self) -> Node:
            """The tree's root."""
            return {"name": "r", "children": []}

        @tool()
        def plant(self, tree: Node) -> dict:
            """Plant a tree.

            Args:
                tree: the tree.
            """
            return {}

    spec = build_tool("tree", Domain.DEVICE, Tree.root).spec
    assert spec.returns["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    with pytest.raises(TypeError, match="recursive"):
        build_tool("tree", Domain.DEVICE, Tree.plant)
