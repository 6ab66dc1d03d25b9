"""Checklist notes (``notes.items``): create, turn a note into a checklist, add, check, uncheck,
remove, list, and deletion with the note; values checked by hand.

The fixture clock is 2026-11-29 09:00:00 (Europe/Berlin); every call advances it by one second.
"""

from __future__ import annotations

import pytest

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, ErrorKind, Fixtures, TaskSpec
from phoneenv.tools import ArgumentError
from tests.apps.helpers import call, ok

N1 = {
    "id": "n_1",
    "title": "Packing",
    "body": "- passport\n[x] charger\n\n* socks\n[ ] sunscreen",
    "pinned": False,
    "created": "2026-11-20T10:00:00",
    "updated": "2026-11-28T18:00:00",
    "tags": ("travel",),
}
N2 = {**N1, "id": "n_2", "title": "Empty", "body": "  \n", "tags": ()}


@pytest.fixture
def b() -> SandboxBackend:
    backend = SandboxBackend()
    backend.reset(
        TaskSpec(
            id="t",
            domain="notes",
            goal="g",
            criteria=[AnswerCriterion(equals="ok")],
            fixtures=Fixtures(records={"notes.notes": [N1, N2]}),
        )
    )
    return backend


def test_create_checklist_keeps_items_in_order(b):
    out = ok(b, "notes.create_checklist", title="Camping", items=["tent", " sleeping   bag ", "stove"])
    assert out["note"]["id"] == "n_3" and out["note"]["body"] == ""
    assert [(i["id"], i["text"], i["done"], i["position"]) for i in out["items"]] == [
        ("ci_1", "tent", False, 0),
        ("ci_2", "sleeping bag", False, 1),
        ("ci_3", "stove", False, 2),
    ]
    assert b.tables()["notes.items"]["ci_2"]["note_id"] == "n_3"


def test_to_checklist_reads_the_lines_and_their_marks(b):
    out = ok(b, "notes.to_checklist", note_id="n_1")
    assert [(i["text"], i["done"]) for i in out["items"]] == [
        ("passport", False),
        ("charger", True),
        ("socks", False),
        ("sunscreen", False),
    ]
    note = b.tables()["notes.notes"]["n_1"]
    assert note["body"] == "" and note["updated"] == "2026-11-29T09:00:01"
    fb = call(b, "notes.to_checklist", note_id="n_1")
    assert fb.error is ErrorKind.PRECONDITION_FAILED
    fb = call(b, "notes.to_checklist", note_id="n_2")
    assert fb.error is ErrorKind.PRECONDITION_FAILED


def test_check_uncheck_add_remove_and_list(b):
    ok(b, "notes.to_checklist", note_id="n_1")  # ci_1..ci_4
    assert ok(b, "notes.check_item", item_id="ci_3")["done"] is True
    assert ok(b, "notes.check_item", item_id="ci_2", done=False)["done"] is False
    added = ok(b, "notes.add_item", note_id="n_1", text="adapter")
    assert (added["id"], added["position"]) == ("ci_5", 4)
    assert ok(b, "notes.remove_item", item_id="ci_1") == {"deleted": "ci_1"}
    listed = ok(b, "notes.list_items", note_id="n_1")
    assert [i["text"] for i in listed["items"]] == ["charger", "socks", "sunscreen", "adapter"]
    assert (listed["done"], listed["total"], listed["title"]) == (1, 4, "Packing")
    pending = ok(b, "notes.list_items", note_id="n_1", pending_only=True)
    assert [i["text"] for i in pending["items"]] == ["charger", "sunscreen", "adapter"]


def test_a_plain_note_becomes_a_checklist_by_adding_an_item(b):
    assert ok(b, "notes.add_item", note_id="n_2", text="first")["position"] == 0
    assert ok(b, "notes.list_items", note_id="n_2")["total"] == 1


def test_deleting_the_note_deletes_its_items(b):
    ok(b, "notes.create_checklist", title="Camping", items=["tent", "stove"])
    ok(b, "notes.add_item", note_id="n_2", text="keep me")
    ok(b, "notes.delete", note_id="n_3")
    assert sorted(b.tables()["notes.items"]) == ["ci_3"]


def test_errors_name_what_to_fix(b):
    fb = call(b, "notes.check_item", item_id="ci_9")
    assert fb.error is ErrorKind.NOT_FOUND and "notes.list_items" in fb.hint
    fb = call(b, "notes.add_item", note_id="n_9", text="x")
    assert fb.error is ErrorKind.NOT_FOUND
    fb = call(b, "notes.add_item", note_id="n_2", text="   ")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/text"
    fb = call(b, "notes.create_checklist", title="T", items=["a", " "])
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/items/1"
    with pytest.raises(ArgumentError):
        b.tools()["notes.create_checklist"].validator.validate({"title": "T", "items": []})


def test_item_changes_leave_the_note_row_alone(b):
    before = dict(b.tables()["notes.notes"]["n_2"])
    ok(b, "notes.add_item", note_id="n_2", text="a")
    ok(b, "notes.check_item", item_id="ci_1")
    assert b.tables()["notes.notes"]["n_2"] == before


def test_checklist_tool_schemas_are_valid_json_schema(b):
    from jsonschema import Draft202012Validator

    for name in ("create_checklist", "to_checklist", "list_items", "add_item", "check_item", "remove_item"):
        spec = b.tools()[f"notes.{name}"].spec
        Draft202012Validator.check_schema(spec.parameters)
        assert spec.description
