"""To-do: lists of items with due dates, a done state and reminders.

Table ``todo.lists``: ``{"id": "tl_1", "name": str, "created": "YYYY-MM-DDTHH:MM:SS"}``.
Table ``todo.items``: ``{"id": "ti_1", "list_id": "tl_1", "title": str, "due": "YYYY-MM-DDTHH:MM"
| None (local time), "reminder": "YYYY-MM-DDTHH:MM" | None (local time), "done": bool,
"completed": "YYYY-MM-DDTHH:MM:SS" | None, "created": "YYYY-MM-DDTHH:MM:SS"}``.

An item with a due date but no time of day is due at 23:59 that day. Clearing completed items
and deleting items are sensitive (they cannot be undone).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import TIME_PATTERN, App, Deleted, format_local_time, id_key, parse_local_time
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import AndroidDriver
from phoneenv.tools import ToolError, tool

ItemTitle = Annotated[str, Field(min_length=1, max_length=200)]
ListName = Annotated[str, Field(min_length=1, max_length=80)]
LocalTime = Annotated[str, Field(pattern=TIME_PATTERN, description="Local time, YYYY-MM-DDTHH:MM")]


class TodoList(TypedDict):
    """A to-do list."""

    id: str
    name: str
    created: str


class Item(TypedDict):
    """A to-do item."""

    id: str
    list_id: str
    title: str
    due: str | None
    reminder: str | None
    done: bool
    completed: str | None
    created: str


class ListSummary(TypedDict):
    """A list with how many items are open and done."""

    id: str
    name: str
    open: int
    done: int


class Lists(TypedDict):
    """To-do lists by name."""

    lists: list[ListSummary]
    total: int


class ItemList(TypedDict):
    """Items: open ones first by due time (undated last), then done ones."""

    items: list[Item]
    total: int


class Cleared(TypedDict):
    """The completed items removed from a list."""

    list_id: str
    deleted: list[str]


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _order(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(recs, key=lambda r: (r["done"], r["due"] is None, r["due"] or "", id_key(r["id"])))


def _time(value: str, arg: str) -> str:
    return format_local_time(parse_local_time(value, arg))


ANDROID = AndroidDriver(
    tables={},
    tools=(),
    unavailable={
        name: "a third-party to-do app keeps its lists in private storage with no public content "
        "provider, so there is no faithful adb path"
        for name in (
            "todo.add_item",
            "todo.clear_completed",
            "todo.complete_item",
            "todo.create_list",
            "todo.delete_item",
            "todo.list_items",
            "todo.list_lists",
            "todo.move_item",
            "todo.search",
            "todo.set_reminder",
            "todo.update_item",
        )
    },
)


class Todo(App):
    """A to-do list app."""

    name = "todo"
    title = "Tasks"
    domain = Domain.NOTES
    package = "org.example.todo"
    tables: ClassVar[dict[str, str]] = {"items": "ti_", "lists": "tl_"}
    records: ClassVar[dict[str, Any]] = {"items": Item, "lists": TodoList}
    android = ANDROID

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "lists":
            return record["name"]
        box = "[x]" if record["done"] else "[ ]"
        due = f"  due {record['due']}" if record.get("due") else ""
        bell = "  (reminder)" if record.get("reminder") else ""
        return f"{box} {record['title']}{due}{bell}"

    def _list(self, list_id: str, path: str = "/list_id") -> dict[str, Any]:
        rec = self.t("lists").get(list_id)
        if rec is None:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no to-do list with id {list_id!r}",
                hint="call todo.list_lists to find the right id",
                path=path,
                candidates=[f"{r['id']} ({r['name']})" for r in self.t("lists").values()][:10],
            )
        return rec

    def _item(self, item_id: str) -> dict[str, Any]:
        return self.require("items", item_id, "to-do item", "todo.list_items or todo.search")

    def _items_of(self, list_id: str) -> list[dict[str, Any]]:
        return _order([r for r in self.t("items").values() if r["list_id"] == list_id])

    @tool()
    def list_lists(self) -> Lists:
        """List the to-do lists by name, with how many items are open and done in each."""
        recs = sorted(self.t("lists").values(), key=lambda r: (_norm(r["name"]), id_key(r["id"])))
        out: list[ListSummary] = []
        for r in recs:
            items = [i for i in self.t("items").values() if i["list_id"] == r["id"]]
            done = sum(1 for i in items if i["done"])
            out.append({"id": r["id"], "name": r["name"], "open": len(items) - done, "done": done})
        self.show_list("lists", [r["id"] for r in recs])
        return {"lists": out, "total": len(out)}

    @tool(effect=Effect.WRITE, writes=("lists",))
    def create_list(self, name: ListName) -> TodoList:
        """Create a to-do list.

        Args:
            name: The list's name, e.g. "Groceries"; unique (case-insensitive).
        """
        clean = " ".join(name.split())
        if not clean:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the name is blank", hint="name the list", path="/name")
        for r in self.t("lists").values():
            if _norm(r["name"]) == _norm(clean):
                raise ToolError(
                    ErrorKind.CONFLICT,
                    f"a list named {r['name']!r} exists ({r['id']})",
                    hint="add the items to that list",
                    path="/name",
                )
        rec = {"id": self.new_id("lists"), "name": clean, "created": self.now_str()}
        self.put("lists", rec)
        self.show_list("items", [])
        return rec  # type: ignore[return-value]

    @tool()
    def list_items(self, list_id: str, include_done: bool = True) -> ItemList:
        """The items of a list: open ones by due time (undated last), then done ones.

        Args:
            list_id: The list's id, e.g. "tl_2".
            include_done: Whether to include completed items.
        """
        self._list(list_id)
        recs = [r for r in self._items_of(list_id) if include_done or not r["done"]]
        self.show_list("items", [r["id"] for r in recs])
        return {"items": recs, "total": len(recs)}  # type: ignore[typeddict-item]

    @tool()
    def search(self, query: Annotated[str, Field(min_length=1, max_length=100)]) -> ItemList:
        """Find items in every list whose title contains the query (case-insensitive).

        Args:
            query: Words to look for, e.g. "milk".
        """
        q = _norm(query)
        if not q:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the query is blank", hint="search for a word", path="/query")
        hits = _order([r for r in self.t("items").values() if q in _norm(r["title"])])
        self.show_list("items", [r["id"] for r in hits])
        return {"items": hits, "total": len(hits)}  # type: ignore[typeddict-item]

    @tool(effect=Effect.WRITE, writes=("items",))
    def add_item(
        self,
        list_id: str,
        title: ItemTitle,
        due: LocalTime | None = None,
        reminder: LocalTime | None = None,
    ) -> Item:
        """Add an item to a list.

        Args:
            list_id: The list's id.
            title: What to do, e.g. "buy milk".
            due: When it is due, local time, e.g. "2026-11-21T18:00"; for a whole day use 23:59.
            reminder: When to remind the user, local time; must not be in the past.
        """
        self._list(list_id)
        clean = " ".join(title.split())
        if not clean:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the title is blank", hint="say what to do", path="/title")
        rec = {
            "id": self.new_id("items"),
            "list_id": list_id,
            "title": clean,
            "due": _time(due, "due") if due else None,
            "reminder": self._reminder(reminder) if reminder else None,
            "done": False,
            "completed": None,
            "created": self.now_str(),
        }
        self.put("items", rec)
        self.show_detail("items", rec["id"])
        return rec  # type: ignore[return-value]

    def _reminder(self, value: str) -> str:
        when = parse_local_time(value, "reminder")
        if when < self.now().replace(second=0, microsecond=0):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"the reminder time {value} has passed (it is {self.now_str(seconds=False)})",
                hint="pick a time from now on",
                path="/reminder",
            )
        return format_local_time(when)

    @tool(effect=Effect.WRITE, writes=("items",))
    def update_item(
        self,
        item_id: str,
        title: ItemTitle | None = None,
        due: LocalTime | None = None,
        clear_due: bool = False,
    ) -> Item:
        """Change an item's title or due time, or remove its due time.

        Args:
            item_id: The item's id, e.g. "ti_4".
            title: New title.
            due: New due time, local, e.g. "2026-11-22T09:00".
            clear_due: True to remove the due time (do not pass due then).
        """
        rec = self._item(item_id)
        changes: dict[str, Any] = {}
        if title is not None:
            clean = " ".join(title.split())
            if not clean:
                raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the title is blank", hint="give a title", path="/title")
            changes["title"] = clean
        if due is not None and clear_due:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "both due and clear_due given", hint="pass one of them", path="/clear_due"
            )
        if due is not None:
            changes["due"] = _time(due, "due")
        if clear_due:
            changes["due"] = None
        if not changes:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "nothing to update", hint="pass a title, due or clear_due")
        diff = {k: v for k, v in changes.items() if rec[k] != v}
        if diff:
            rec = self.patch("items", item_id, **diff)
        self.show_detail("items", item_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("items",))
    def complete_item(self, item_id: str, done: bool = True) -> Item:
        """Tick an item off as done, or reopen it.

        Args:
            item_id: The item's id.
            done: True to mark it done, false to reopen it.
        """
        rec = self._item(item_id)
        if rec["done"] != done:
            rec = self.patch("items", item_id, done=done, completed=self.now_str() if done else None)
        self.show_detail("items", item_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("items",))
    def set_reminder(self, item_id: str, at: LocalTime | None = None) -> Item:
        """Set or remove the reminder of an item.

        Args:
            item_id: The item's id.
            at: When to remind the user, local time, e.g. "2026-11-21T08:00"; leave out to remove
                the reminder.
        """
        rec = self._item(item_id)
        value = self._reminder(at) if at else None
        if rec["reminder"] != value:
            rec = self.patch("items", item_id, reminder=value)
        self.show_detail("items", item_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("items",))
    def move_item(self, item_id: str, list_id: str) -> Item:
        """Move an item to another list (it keeps its due time, reminder and done state).

        Args:
            item_id: The item's id.
            list_id: The list to move it to.
        """
        rec = self._item(item_id)
        self._list(list_id)
        if rec["list_id"] == list_id:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"item {item_id} is already on list {list_id}",
                hint="pick the other list",
                path="/list_id",
            )
        rec = self.patch("items", item_id, list_id=list_id)
        self.show_detail("items", item_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.SENSITIVE, writes=("items",))
    def delete_item(self, item_id: str) -> Deleted:
        """Delete an item for good.

        Args:
            item_id: The item's id.
        """
        rec = self._item(item_id)
        self.remove("items", item_id)
        self.show_list("items", [r["id"] for r in self._items_of(rec["list_id"])])
        return {"deleted": item_id}

    @tool(effect=Effect.SENSITIVE, writes=("items",))
    def clear_completed(self, list_id: str) -> Cleared:
        """Delete every done item of a list for good (open items stay).

        Args:
            list_id: The list's id.
        """
        self._list(list_id)
        gone = [r["id"] for r in self._items_of(list_id) if r["done"]]
        for rid in gone:
            self.remove("items", rid)
        self.show_list("items", [r["id"] for r in self._items_of(list_id)])
        return {"list_id": list_id, "deleted": gone}
