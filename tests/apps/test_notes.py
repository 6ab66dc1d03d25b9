"""The notes app through the sandbox backend.

The fixture clock is 2026-11-29 09:00:00 (Europe/Berlin); every call advances it by one second, so
the n-th call of a test runs at 09:00:0n.
"""

from __future__ import annotations

from typing import Any

import pytest

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Effect, ErrorKind, Feedback, Fixtures, TaskSpec
from phoneenv.tools import ArgumentError

N1 = {
    "id": "n_1",
    "title": "Groceries",
    "body": "milk\neggs",
    "pinned": False,
    "created": "2026-11-20T10:00:00",
    "updated": "2026-11-28T18:00:00",
    "tags": ("shopping",),
}
N2 = {
    "id": "n_2",
    "title": "Wifi password",
    "body": "HomeNet: correct horse",
    "pinned": True,
    "created": "2026-11-01T08:00:00",
    "updated": "2026-11-01T08:00:00",
    "tags": (),
}
N3 = {
    "id": "n_3",
    "title": "Book ideas",
    "body": "Dune; Piranesi",
    "pinned": False,
    "created": "2026-11-25T12:00:00",
    "updated": "2026-11-25T12:00:00",
    "tags": ("Reading",),
}

TASK = TaskSpec(
    id="notes-test",
    domain="notes",
    goal="test",
    criteria=[AnswerCriterion(equals="ok")],
    fixtures=Fixtures(
        records={"notes.notes": [N1, N2, N3]},
        clock="2026-11-29T09:00:00",
        timezone="Europe/Berlin",
        accounts={"mail": {"account": "sam@example.com", "signed_in": False}},
        vault={"sam@example.com": "hunter2-secret"},
    ),
)


class Phone:
    """A sandbox backend reset to a task, called the way the env calls it."""

    def __init__(self, task: TaskSpec = TASK) -> None:
        self.backend = SandboxBackend()
        self.backend.reset(task)

    def __call__(self, name: str, **args: Any) -> Feedback:
        entry = self.backend.tools()[name]
        return self.backend.call(name, entry.validator.validate(args))

    @property
    def notes(self) -> dict[str, dict[str, Any]]:
        return dict(self.backend.tables()["notes.notes"])


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def ids(result: dict[str, Any]) -> list[str]:
    return [n["id"] for n in result["notes"]]


def test_list_pinned_first_then_most_recently_updated() -> None:
    phone = Phone()
    res = ok(phone("notes.list"))
    assert ids(res) == ["n_2", "n_1", "n_3"]
    assert res["total"] == 3
    assert res["notes"][1] == {**N1, "tags": ["shopping"]}
    page = ok(phone("notes.list", offset=1, limit=1))
    assert ids(page) == ["n_1"] and page["total"] == 3


def test_search_title_body_and_tags_case_insensitive() -> None:
    phone = Phone()
    assert ids(ok(phone("notes.search", query="SHOP"))) == ["n_1"]  # tag
    assert ids(ok(phone("notes.search", query="horse"))) == ["n_2"]  # body
    assert ids(ok(phone("notes.search", query="book"))) == ["n_3"]  # title
    assert ids(ok(phone("notes.search", query="reading"))) == ["n_3"]  # tag, other case
    everything = ok(phone("notes.search", query="i", limit=2))
    assert ids(everything) == ["n_2", "n_1"] and everything["total"] == 3
    assert ok(phone("notes.search", query="zebra")) == {"notes": [], "total": 0}
    fb = phone("notes.search", query="   ")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/query"


def test_get_and_not_found() -> None:
    phone = Phone()
    assert ok(phone("notes.get", note_id="n_3")) == {**N3, "tags": ["Reading"]}
    fb = phone("notes.get", note_id="n_9")
    assert fb.error is ErrorKind.NOT_FOUND and fb.recoverable
    assert "notes.search" in (fb.hint or "")


def test_create_append_and_ordering() -> None:
    phone = Phone()
    note = ok(phone("notes.create", title="  Trip   plan ", tags=["travel", "Travel", "work"]))  # 09:00:01
    assert note == {
        "id": "n_4",
        "title": "Trip plan",
        "body": "",
        "pinned": False,
        "created": "2026-11-29T09:00:01",
        "updated": "2026-11-29T09:00:01",
        "tags": ["travel", "work"],
    }
    assert phone.notes["n_4"]["tags"] == ("travel", "work")
    res = ok(phone("notes.append", note_id="n_1", text="bread"))  # 09:00:02
    assert res["body"] == "milk\neggs\nbread"
    assert res["updated"] == "2026-11-29T09:00:02"
    assert res["created"] == "2026-11-20T10:00:00"
    assert ok(phone("notes.append", note_id="n_4", text="Day 1: Lisbon"))["body"] == "Day 1: Lisbon"  # 09:00:03
    assert ids(ok(phone("notes.list"))) == ["n_2", "n_4", "n_1", "n_3"]
    assert phone("notes.append", note_id="n_9", text="x").error is ErrorKind.NOT_FOUND


def test_pin_does_not_touch_updated_and_reorders() -> None:
    phone = Phone()
    res = ok(phone("notes.pin", note_id="n_3"))
    assert res["pinned"] is True and res["updated"] == N3["updated"]
    assert ids(ok(phone("notes.list"))) == ["n_3", "n_2", "n_1"]
    ok(phone("notes.pin", note_id="n_2", pinned=False))
    assert ids(ok(phone("notes.list"))) == ["n_3", "n_1", "n_2"]


def test_update_and_no_op_writes_nothing() -> None:
    phone = Phone()
    before = phone.notes["n_3"]
    res = ok(phone("notes.update", note_id="n_3", title="Book ideas"))
    assert res == {**N3, "tags": ["Reading"]}
    assert phone.notes["n_3"] is before  # no write at all
    assert ok(phone("notes.add_tag", note_id="n_3", tag="READING"))["tags"] == ["Reading"]
    assert phone.notes["n_3"] is before
    ok(phone("notes.pin", note_id="n_2", pinned=True))
    assert phone.notes["n_2"] == N2

    res = ok(phone("notes.update", note_id="n_3", body="Dune"))  # 09:00:04
    assert (res["title"], res["body"], res["updated"]) == ("Book ideas", "Dune", "2026-11-29T09:00:04")
    assert phone("notes.update", note_id="n_3").error is ErrorKind.INVALID_ARGUMENTS
    fb = phone("notes.update", note_id="n_3", title="   ")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/title"


def test_tags() -> None:
    phone = Phone()
    res = ok(phone("notes.add_tag", note_id="n_1", tag="weekly"))  # 09:00:01
    assert res["tags"] == ["shopping", "weekly"] and res["updated"] == "2026-11-29T09:00:01"
    assert phone.notes["n_1"]["tags"] == ("shopping", "weekly")
    res = ok(phone("notes.remove_tag", note_id="n_1", tag="Shopping"))
    assert res["tags"] == ["weekly"]
    fb = phone("notes.remove_tag", note_id="n_1", tag="nope")
    assert fb.error is ErrorKind.NOT_FOUND and fb.candidates == ["weekly"]


def test_delete() -> None:
    phone = Phone()
    assert ok(phone("notes.delete", note_id="n_2")) == {"deleted": "n_2"}
    assert set(phone.notes) == {"n_1", "n_3"}
    fb = phone("notes.delete", note_id="n_2")
    assert fb.error is ErrorKind.NOT_FOUND
    assert ids(ok(phone("notes.list"))) == ["n_1", "n_3"]


@pytest.mark.parametrize(
    "args",
    [
        {"title": ""},
        {"title": "x" * 201},
        {"title": "ok", "body": "x" * 20001},
        {"title": "ok", "tags": [""]},
        {"title": "ok", "tags": "work"},
        {"body": "no title"},
    ],
)
def test_create_rejects_bad_arguments(args: dict[str, Any]) -> None:
    with pytest.raises(ArgumentError):
        Phone()("notes.create", **args)


def test_append_beyond_limit_is_refused() -> None:
    phone = Phone()
    ok(phone("notes.update", note_id="n_3", body="x" * 19999))
    fb = phone("notes.append", note_id="n_3", text="yz")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/text"
    assert len(phone.notes["n_3"]["body"]) == 19999


def test_restore_undoes_writes_and_results_do_not_alias_state() -> None:
    phone = Phone()
    before = phone.backend.snapshot()
    listed = ok(phone("notes.list"))
    listed["notes"][0]["title"] = "mutated"
    listed["notes"][1]["tags"].append("mutated")
    got = ok(phone("notes.get", note_id="n_3"))
    got["body"] = "mutated"
    assert phone.notes == {"n_1": N1, "n_2": N2, "n_3": N3}
    ok(phone("notes.create", title="Temp"))
    ok(phone("notes.delete", note_id="n_1"))
    ok(phone("notes.append", note_id="n_2", text="guest: hello"))
    phone.backend.restore(before)
    assert phone.backend.tables() == before.tables
    assert phone.notes == {"n_1": N1, "n_2": N2, "n_3": N3}
    assert ok(phone("notes.create", title="Again"))["id"] == "n_4"


def test_tool_specs() -> None:
    tools = SandboxBackend().tools()
    effects = {n: e.spec.effect for n, e in tools.items() if n.startswith("notes.")}
    assert effects == {
        "notes.list": Effect.READ,
        "notes.search": Effect.READ,
        "notes.get": Effect.READ,
        "notes.create": Effect.WRITE,
        "notes.update": Effect.WRITE,
        "notes.append": Effect.WRITE,
        "notes.delete": Effect.SENSITIVE,
        "notes.pin": Effect.WRITE,
        "notes.add_tag": Effect.WRITE,
        "notes.remove_tag": Effect.WRITE,
        "notes.create_checklist": Effect.WRITE,
        "notes.to_checklist": Effect.WRITE,
        "notes.list_items": Effect.READ,
        "notes.add_item": Effect.WRITE,
        "notes.check_item": Effect.WRITE,
        "notes.remove_item": Effect.WRITE,
    }
    for name in effects:
        spec = tools[name].spec
        assert spec.domain == "notes" and spec.description and not spec.permissions
    assert tools["notes.create"].spec.parameters["required"] == ["title"]


def test_screen_rows() -> None:
    phone = Phone()
    ok(phone("notes.list"))
    app = phone.backend.phone.apps["notes"]
    assert app.screen(phone.backend.phone.state.meta["view"]) == (
        "Keep Notes",
        ["* Wifi password", "Groceries  #shopping", "Book ideas  #Reading"],
    )
    assert phone.backend.screenshot().shape == (640, 360, 3)
