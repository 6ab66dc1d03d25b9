"""Notes: short text notes with a title, tags and a pin.

Table ``notes.notes``: ``{"id": "n_1", "title": str, "body": str, "pinned": bool,
"created": "YYYY-MM-DDTHH:MM:SS", "updated": "YYYY-MM-DDTHH:MM:SS", "tags": ("shopping", ...)}``.

``updated`` is the time of the last change to the title, body or tags; pinning does not touch it.
A write that would change nothing writes nothing. Tags are unique case-insensitively and keep the
spelling they were first given.
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
    tables: ClassVar[dict[str, str]] = {"notes": "n_"}
    records: ClassVar[dict[str, Any]] = {"notes": Note}

    def row(self, table: str, record: dict[str, Any]) -> str:
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

    @tool(effect=Effect.WRITE)
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

    @tool(effect=Effect.WRITE)
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

    @tool(effect=Effect.WRITE)
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

    @tool(effect=Effect.SENSITIVE)
    def delete(self, note_id: str) -> Deleted:
        """Delete a note for good.

        Args:
            note_id: The note's id.
        """
        self._get(note_id)
        self.remove("notes", note_id)
        self.show_list("notes", [r["id"] for r in _order(list(self.t("notes").values()))])
        return {"deleted": note_id}

    @tool(effect=Effect.WRITE)
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

    @tool(effect=Effect.WRITE)
    def add_tag(self, note_id: str, tag: Tag) -> Note:
        """Add a tag to a note (a tag it already has, in any case, is left as is).

        Args:
            note_id: The note's id.
            tag: The tag, e.g. "work".
        """
        rec = self._get(note_id)
        return self._edit(note_id, tags=_merge_tags(rec["tags"], [tag], "tag"))

    @tool(effect=Effect.WRITE)
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
