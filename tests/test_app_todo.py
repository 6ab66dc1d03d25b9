"""The to-do app through the sandbox backend, with values worked out by hand.

The fixture clock is 2026-11-20 10:00:00 (Europe/Berlin); every call advances it by one second.
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Effect, ErrorKind, Feedback, Fixtures, TaskSpec

LISTS = [
    {"id": "tl_1", "name": "Groceries", "created": "2026-11-01T08:00:00"},
    {"id": "tl_2", "name": "Home", "created": "2026-11-01T08:00:00"},
]


def item(rid: str, list_id: str, title: str, due: str | None = None, done: bool = False) -> dict[str, Any]:
    return {
        "id": rid,
        "list_id": list_id,
        "title": title,
        "due": due,
        "reminder": None,
        "done": done,
        "completed": "2026-11-19T12:00:00" if done else None,
        "created": "2026-11-10T09:00:00",
    }


ITEMS = [
    item("ti_1", "tl_1", "milk", "2026-11-21T18:00"),
    item("ti_2", "tl_1", "eggs", done=True),
    item("ti_3", "tl_1", "bread", "2026-11-20T09:00"),
    item("ti_4", "tl_2", "fix the shelf"),
    item("ti_5", "tl_2", "water the plants", done=True),
    item("ti_6", "tl_1", "coffee", "2026-11-19T10:00", done=True),
]

TASK = TaskSpec(
    id="todo-test",
    domain="notes",
    goal="test",
    criteria=[AnswerCriterion(equals="ok")],
    fixtures=Fixtures(
        records={"todo.lists": LISTS, "todo.items": ITEMS},
        clock="2026-11-20T10:00:00",
        timezone="Europe/Berlin",
    ),
)


class Phone:
    def __init__(self) -> None:
        self.backend = SandboxBackend()
        self.backend.reset(TASK)

    def __call__(self, tool: str, /, **args: Any) -> Feedback:
        entry = self.backend.tools()[tool]
        return self.backend.call(tool, entry.validator.validate(args))

    def items(self) -> dict[str, dict[str, Any]]:
        return dict(self.backend.tables()["todo.items"])


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def test_every_tool_has_a_valid_schema_and_the_effects_a_user_expects() -> None:
    tools = {n: e for n, e in SandboxBackend().tools().items() if n.startswith("todo.")}
    assert len(tools) == 11
    for entry in tools.values():
        Draft202012Validator.check_schema(entry.spec.parameters)
    effects = {n: e.spec.effect for n, e in tools.items()}
    assert effects["todo.clear_completed"] is Effect.SENSITIVE and effects["todo.delete_item"] is Effect.SENSITIVE
    assert effects["todo.add_item"] is Effect.WRITE and effects["todo.list_items"] is Effect.READ


def test_lists_count_open_and_done_items() -> None:
    res = ok(Phone()("todo.list_lists"))
    assert res == {
        "lists": [{"id": "tl_1", "name": "Groceries", "open": 2, "done": 2}, {"id": "tl_2", "name": "Home", "open": 1, "done": 1}],
        "total": 2,
    }  # fmt: skip


def test_items_open_by_due_time_undated_last_then_done() -> None:
    phone = Phone()
    # Open first (due soonest first), then done ones (a done item due yesterday after the open ones).
    assert [i["id"] for i in ok(phone("todo.list_items", list_id="tl_1"))["items"]] == ["ti_3", "ti_1", "ti_6", "ti_2"]
    assert [i["id"] for i in ok(phone("todo.list_items", list_id="tl_1", include_done=False))["items"]] == [
        "ti_3",
        "ti_1",
    ]
    assert [i["id"] for i in ok(phone("todo.search", query="SHELF"))["items"]] == ["ti_4"]


def test_add_item_with_due_time_and_reminder() -> None:
    phone = Phone()
    res = ok(
        phone(
            "todo.add_item",
            list_id="tl_1",
            title="  buy  oat milk ",
            due="2026-11-21T18:00",
            reminder="2026-11-21T17:00",
        )
    )
    assert res == {
        "id": "ti_7", "list_id": "tl_1", "title": "buy oat milk", "due": "2026-11-21T18:00",
        "reminder": "2026-11-21T17:00", "done": False, "completed": None, "created": "2026-11-20T10:00:01",
    }  # fmt: skip
    assert phone.items()["ti_7"]["title"] == "buy oat milk"


def test_add_item_errors_lose_nothing() -> None:
    phone = Phone()
    fb = phone("todo.add_item", list_id="tl_9", title="x")
    assert fb.error is ErrorKind.NOT_FOUND and fb.path == "/list_id"
    fb = phone("todo.add_item", list_id="tl_1", title="x", due="2026-02-30T10:00")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/due"
    fb = phone("todo.add_item", list_id="tl_1", title="x", reminder="2026-11-20T09:59")  # a minute ago
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/reminder"
    assert set(phone.items()) == {r["id"] for r in ITEMS}


def test_complete_reopen_and_clear_completed() -> None:
    phone = Phone()
    done = ok(phone("todo.complete_item", item_id="ti_1"))
    assert done["done"] is True and done["completed"] == "2026-11-20T10:00:01"
    res = ok(phone("todo.clear_completed", list_id="tl_1"))
    assert res == {"list_id": "tl_1", "deleted": ["ti_6", "ti_1", "ti_2"]}  # done ones by due, undated last
    assert set(phone.items()) == {"ti_3", "ti_4", "ti_5"}  # Home's done item stays
    again = ok(phone("todo.complete_item", item_id="ti_3", done=False))
    assert again["done"] is False and again["completed"] is None


def test_update_move_reminder_and_delete() -> None:
    phone = Phone()
    assert ok(phone("todo.update_item", item_id="ti_4", due="2026-11-22T09:00"))["due"] == "2026-11-22T09:00"
    assert ok(phone("todo.update_item", item_id="ti_4", clear_due=True))["due"] is None
    fb = phone("todo.update_item", item_id="ti_4", due="2026-11-22T09:00", clear_due=True)
    assert fb.error is ErrorKind.INVALID_ARGUMENTS
    assert phone("todo.update_item", item_id="ti_4").error is ErrorKind.INVALID_ARGUMENTS
    moved = ok(phone("todo.move_item", item_id="ti_4", list_id="tl_1"))
    assert moved["list_id"] == "tl_1" and moved["title"] == "fix the shelf"
    assert phone("todo.move_item", item_id="ti_4", list_id="tl_1").error is ErrorKind.PRECONDITION_FAILED
    assert ok(phone("todo.set_reminder", item_id="ti_4", at="2026-11-21T08:00"))["reminder"] == "2026-11-21T08:00"
    assert ok(phone("todo.set_reminder", item_id="ti_4"))["reminder"] is None
    assert ok(phone("todo.delete_item", item_id="ti_4")) == {"deleted": "ti_4"}
    assert phone("todo.delete_item", item_id="ti_4").error is ErrorKind.NOT_FOUND


def test_create_list_refuses_a_duplicate_name() -> None:
    phone = Phone()
    assert ok(phone("todo.create_list", name="Errands"))["id"] == "tl_3"
    fb = phone("todo.create_list", name=" groceries ")
    assert fb.error is ErrorKind.CONFLICT and "tl_1" in fb.message


@pytest.mark.parametrize("tool", ["todo.list_items", "todo.clear_completed"])
def test_unknown_list_names_the_finder(tool: str) -> None:
    fb = Phone()(tool, list_id="tl_7")
    assert fb.error is ErrorKind.NOT_FOUND and "todo.list_lists" in (fb.hint or "")
