"""Notes: short text notes with a title, tags and a pin.

Table ``notes.notes``: ``{"id": "n_1", "title": str, "body": str, "pinned": bool,
"created": "YYYY-MM-DDTHH:MM:SS", "updated": "YYYY-MM-DDTHH:MM:SS", "tags": ("shopping", ...)}``.

``updated`` is the time of the last change to the title, body or tags; pinning does not touch it.
A write that would change nothing writes nothing. Tags are unique case-insensitively and keep the
spelling they were first given.

Checklists: table ``notes.items``: ``{"id": "ci_1", "note_id": "n_3", "text": str, "done": bool,
"position": int}``. A note with items is a checklist (Keep's "show checkboxes"): items are kept
in ``position`` order, checked and unchecked one by one, and deleted with their note. Item changes
are the items' own state: they do not touch the note's ``updated``.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, Deleted
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.tools import ToolError, tool

MAX_BODY = 20000

Title = Annotated[str, Field(min_length=1, max_length=200)]
Body = Annotated[str, Field(max_length=MAX_BODY)]
Tag = Annotated[str, Field(min_length=1, max_length=40, description="A tag, e.g. 'shopping'")]
ItemText = Annotated[str, Field(min_length=1, max_length=500, description="An item, e.g. 'oat milk'")]
MAX_ITEMS = 100
"""Most items one checklist holds."""


class Note(TypedDict):
    """A note."""

    id: str
    title: str
    body: str
    pinned: bool
    created: str
    updated: str
    tags: list[str]


class NoteList(TypedDict):
    """Notes, pinned first, then most recently updated first."""

    notes: list[Note]
    total: int


class ChecklistItem(TypedDict):
    """One item of a checklist note."""

    id: str
    note_id: str
    text: str
    done: bool
    position: int


class ItemList(TypedDict):
    """A checklist's items in order, with how many are done."""

    note_id: str
    title: str
    items: list[ChecklistItem]
    done: int
    total: int


class Checklist(TypedDict):
    """A checklist note and its items in order."""

    note: Note
    items: list[ChecklistItem]


def _order(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pinned first, then most recently updated first, then newest id first."""
    return sorted(recs, key=lambda r: (r["pinned"], r["updated"], len(r["id"]), r["id"]), reverse=True)


def _clean_title(title: str) -> str:
    clean = " ".join(title.split())
    if not clean:
        raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the title is blank", hint="give the note a title", path="/title")
    return clean


def _merge_tags(tags: tuple[str, ...], new: list[str], arg: str) -> tuple[str, ...]:
    """``tags`` with ``new`` appended, skipping ones already there (case-insensitively)."""
    out = list(tags)
    seen = {t.casefold() for t in out}
    for i, tag in enumerate(new):
        clean = " ".join(tag.split())
        if not clean:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "a tag is blank",
                hint="drop the blank tag",
                path=f"/{arg}/{i}" if arg == "tags" else f"/{arg}",
            )
        if clean.casefold() not in seen:
            seen.add(clean.casefold())
            out.append(clean)
    return tuple(out)


def _note(rec: dict[str, Any]) -> Note:
    return {**rec, "tags": list(rec["tags"])}  # type: ignore[typeddict-item]


class Notes(App):
    """A note-taking app."""

    name = "notes"
    title = "Keep Notes"
    domain = Domain.NOTES
    package = "com.google.android.keep"
    tables: ClassVar[dict[str, str]] = {"notes": "n_", "items": "ci_"}
    records: ClassVar[dict[str, Any]] = {"notes": Note, "items": ChecklistItem}

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "items":
            return f"[{'x' if record['done'] else ' '}] {record['text']}"
        pin = "* " if record.get("pinned") else ""
        tags = "  #" + " #".join(record["tags"]) if record.get("tags") else ""
        return f"{pin}{record['title']}{tags}"

    def _get(self, note_id: str) -> dict[str, Any]:
        return self.require("notes", note_id, "note", "notes.search or notes.list")

    def _edit(self, note_id: str, **changes: Any) -> Note:
        """Apply the changes that differ from the note (bumping ``updated``); write nothing if none do."""
        rec = self._get(note_id)
        diff = {k: v for k, v in changes.items() if (tuple(rec[k]) if isinstance(rec[k], list) else rec[k]) != v}
        if diff:
            rec = self.patch("notes", note_id, **diff, updated=self.now_str())
        self.show_detail("notes", note_id)
        return _note(rec)

    @tool(name="list")
    def list_(
        self,
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
    ) -> NoteList:
        """List notes: pinned ones first, then the most recently edited.

        Args:
            offset: Number of notes to skip.
            limit: Maximum number of notes returned.
        """
        recs = _order(list(self.t("notes").values()))
        page = recs[offset : offset + limit]
        self.show_list("notes", [r["id"] for r in page])
        return {"notes": [_note(r) for r in page], "total": len(recs)}

    @tool()
    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=100)],
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
    ) -> NoteList:
        """Find notes whose title, text or tags contain the query (case-insensitive), ordered
        like notes.list.

        Args:
            query: Text to look for, e.g. "wifi password" or a tag such as "recipes".
            limit: Maximum number of notes returned.
        """
        q = query.strip().casefold()
        if not q:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the query is blank", hint="search for a word", path="/query")
        hits = _order(
            [
                r
                for r in self.t("notes").values()
                if q in r["title"].casefold() or q in r["body"].casefold() or any(q in t.casefold() for t in r["tags"])
            ]
        )
        self.show_list("notes", [r["id"] for r in hits[:limit]])
        return {"notes": [_note(r) for r in hits[:limit]], "total": len(hits)}

    @tool()
    def get(self, note_id: str) -> Note:
        """Get one note with its full text.

        Args:
            note_id: The note's id, e.g. "n_3".
        """
        rec = self._get(note_id)
        self.show_detail("notes", note_id)
        return _note(rec)

    @tool(effect=Effect.WRITE, writes=("notes",))
    def create(
        self,
        title: Title,
        body: Body = "",
        tags: list[Tag] = [],  # noqa: B006 - the schema's default; never mutated
    ) -> Note:
        """Create a note.

        Args:
            title: Title shown in the list, e.g. "Shopping list".
            body: The note's text; may be empty.
            tags: Tags to file it under, e.g. ["shopping"].
        """
        now = self.now_str()
        rec = {
            "id": self.new_id("notes"),
            "title": _clean_title(title),
            "body": body,
            "pinned": False,
            "created": now,
            "updated": now,
            "tags": _merge_tags((), tags, "tags"),
        }
        self.put("notes", rec)
        self.show_detail("notes", rec["id"])
        return _note(rec)

    @tool(effect=Effect.WRITE, writes=("notes",))
    def update(self, note_id: str, title: Title | None = None, body: Body | None = None) -> Note:
        """Replace a note's title or whole text; fields left out stay as they are. To add a line
        to the text, use notes.append instead.

        Args:
            note_id: The note's id.
            title: New title.
            body: New full text (replaces the old text).
        """
        self._get(note_id)
        changes: dict[str, Any] = {}
        if title is not None:
            changes["title"] = _clean_title(title)
        if body is not None:
            changes["body"] = body
        if not changes:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "nothing to update", hint="pass a title or a body")
        return self._edit(note_id, **changes)

    @tool(effect=Effect.WRITE, writes=("notes",))
    def append(self, note_id: str, text: Annotated[str, Field(min_length=1, max_length=MAX_BODY)]) -> Note:
        """Add text to the end of a note, on a new line.

        Args:
            note_id: The note's id.
            text: Text to add, e.g. "- oat milk".
        """
        rec = self._get(note_id)
        body = f"{rec['body']}\n{text}" if rec["body"] else text
        if len(body) > MAX_BODY:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"the note would exceed {MAX_BODY} characters",
                hint="create a new note for the rest",
                path="/text",
            )
        return self._edit(note_id, body=body)

    @tool(effect=Effect.SENSITIVE, writes=("notes",))
    def delete(self, note_id: str) -> Deleted:
        """Delete a note for good.

        Args:
            note_id: The note's id.
        """
        self._get(note_id)
        for item in self._items(note_id):
            self.remove("items", item["id"])
        self.remove("notes", note_id)
        self.show_list("notes", [r["id"] for r in _order(list(self.t("notes").values()))])
        return {"deleted": note_id}

    @tool(effect=Effect.WRITE, writes=("notes",))
    def pin(self, note_id: str, pinned: bool = True) -> Note:
        """Pin a note to the top of the list, or unpin it.

        Args:
            note_id: The note's id.
            pinned: True to pin, false to unpin.
        """
        rec = self._get(note_id)
        if rec["pinned"] != pinned:
            rec = self.patch("notes", note_id, pinned=pinned)
        self.show_detail("notes", note_id)
        return _note(rec)

    @tool(effect=Effect.WRITE, writes=("notes",))
    def add_tag(self, note_id: str, tag: Tag) -> Note:
        """Add a tag to a note (a tag it already has, in any case, is left as is).

        Args:
            note_id: The note's id.
            tag: The tag, e.g. "work".
        """
        rec = self._get(note_id)
        return self._edit(note_id, tags=_merge_tags(rec["tags"], [tag], "tag"))

    @tool(effect=Effect.WRITE, writes=("notes",))
    def remove_tag(self, note_id: str, tag: Tag) -> Note:
        """Remove a tag from a note (matched case-insensitively).

        Args:
            note_id: The note's id.
            tag: The tag to remove.
        """
        rec = self._get(note_id)
        kept = tuple(t for t in rec["tags"] if t.casefold() != " ".join(tag.split()).casefold())
        if len(kept) == len(rec["tags"]):
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"note {note_id} has no tag {tag!r}",
                hint="pick one of its tags",
                candidates=list(rec["tags"]),
            )
        return self._edit(note_id, tags=kept)

    # -- checklists -----------------------------------------------------------------------------
    def _items(self, note_id: str) -> list[dict[str, Any]]:
        """The note's items in position order."""
        return sorted(
            (r for r in self.t("items").values() if r["note_id"] == note_id), key=lambda r: (r["position"], r["id"])
        )

    def _add_items(self, note_id: str, texts: list[str], arg: str) -> list[dict[str, Any]]:
        have = self._items(note_id)
        if len(have) + len(texts) > MAX_ITEMS:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"a checklist holds at most {MAX_ITEMS} items (this one has {len(have)})",
                hint="start a new checklist for the rest",
                path=f"/{arg}",
            )
        pos = have[-1]["position"] + 1 if have else 0
        out = []
        for i, text in enumerate(texts):
            clean = " ".join(text.split())
            if not clean:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    "an item is blank",
                    hint="drop the blank item",
                    path=f"/{arg}/{i}" if arg == "items" else f"/{arg}",
                )
            rec = {"id": self.new_id("items"), "note_id": note_id, "text": clean, "done": False, "position": pos + i}
            out.append(self.put("items", rec))
        return out

    def _item(self, item_id: str) -> dict[str, Any]:
        return self.require("items", item_id, "checklist item", "notes.list_items")

    @tool(effect=Effect.WRITE, writes=("items", "notes"))
    def create_checklist(
        self,
        title: Title,
        items: Annotated[list[ItemText], Field(min_length=1, max_length=MAX_ITEMS)],
        tags: list[Tag] = [],  # noqa: B006 - the schema's default; never mutated
    ) -> Checklist:
        """Create a checklist: a note whose items can each be checked off.

        Args:
            title: Title shown in the list, e.g. "Packing list".
            items: The items in order, e.g. ["passport", "charger"].
            tags: Tags to file it under, e.g. ["travel"].
        """
        note = self.create(title=title, tags=tags)
        recs = self._add_items(note["id"], items, "items")
        self.show_list("items", [r["id"] for r in recs])
        return {"note": note, "items": [dict(r) for r in recs]}  # type: ignore[misc]

    @tool(effect=Effect.WRITE, writes=("items", "notes"))
    def to_checklist(self, note_id: str) -> Checklist:
        """Turn a note's text into a checklist: each non-blank line of the text becomes an item
        (a leading "-", "*" or "[ ]" is dropped; "[x]" makes the item done) and the text is
        cleared.

        Args:
            note_id: The note's id.
        """
        rec = self._get(note_id)
        if self._items(note_id):
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"note {note_id} is already a checklist",
                hint="add items with notes.add_item",
            )
        lines = []
        for line in rec["body"].splitlines():
            text = line.strip()
            done = False
            for mark, is_done in (("[x]", True), ("[X]", True), ("[ ]", False), ("- ", False), ("* ", False)):
                if text.startswith(mark):
                    text, done = text[len(mark) :].strip(), done or is_done
            if text:
                lines.append((text[:500], done))
        if not lines:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"note {note_id} has no text to turn into items",
                hint="add items with notes.add_item",
            )
        recs = self._add_items(note_id, [t for t, _ in lines], "note_id")
        recs = [self.patch("items", r["id"], done=True) if d else r for r, (_, d) in zip(recs, lines, strict=True)]
        note = self._edit(note_id, body="")
        self.show_list("items", [r["id"] for r in recs])
        return {"note": note, "items": [dict(r) for r in recs]}  # type: ignore[misc]

    @tool()
    def list_items(self, note_id: str, pending_only: bool = False) -> ItemList:
        """List a checklist's items in order, with how many are done.

        Args:
            note_id: The checklist note's id.
            pending_only: Only the items not yet checked off.
        """
        rec = self._get(note_id)
        items = self._items(note_id)
        shown = [r for r in items if not (pending_only and r["done"])]
        self.show_list("items", [r["id"] for r in shown])
        return {
            "note_id": note_id,
            "title": rec["title"],
            "items": [dict(r) for r in shown],  # type: ignore[misc]
            "done": sum(1 for r in items if r["done"]),
            "total": len(items),
        }

    @tool(effect=Effect.WRITE, writes=("items",))
    def add_item(self, note_id: str, text: ItemText) -> ChecklistItem:
        """Add an item at the end of a checklist (a note without items becomes a checklist).

        Args:
            note_id: The note's id.
            text: The item, e.g. "sunscreen".
        """
        self._get(note_id)
        (rec,) = self._add_items(note_id, [text], "text")
        self.show_list("items", [r["id"] for r in self._items(note_id)])
        return dict(rec)  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("items",))
    def check_item(self, item_id: str, done: bool = True) -> ChecklistItem:
        """Check an item off (done) or uncheck it.

        Args:
            item_id: The item's id, from notes.list_items, e.g. "ci_4".
            done: True to check it off, false to uncheck it.
        """
        rec = self._item(item_id)
        if rec["done"] != done:
            rec = self.patch("items", item_id, done=done)
        self.show_list("items", [r["id"] for r in self._items(rec["note_id"])])
        return dict(rec)  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("items",))
    def remove_item(self, item_id: str) -> Deleted:
        """Remove an item from a checklist.

        Args:
            item_id: The item's id, from notes.list_items.
        """
        rec = self._item(item_id)
        self.remove("items", item_id)
        self.show_list("items", [r["id"] for r in self._items(rec["note_id"])])
        return {"deleted": item_id}
