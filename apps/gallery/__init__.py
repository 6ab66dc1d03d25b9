"""Gallery: photos and videos with the time and place they were taken, people tags, favourites
and albums.

Table ``gallery.photos``: ``{"id": "ph_1", "kind": "photo" | "video", "taken":
"YYYY-MM-DDTHH:MM:SS" (local), "place": str | None, "people": ("Ana Lima", ...), "favorite":
bool, "duration_s": int | None}`` (``duration_s`` only for a video). Table ``gallery.albums``:
``{"id": "alb_1", "name": str, "photo_ids": ("ph_3", ...), "created": "YYYY-MM-DDTHH:MM:SS"}``.

Photos are added by the camera app (:mod:`apps.camera`) or seeded. Deleting a photo removes it
from every album too; deleting is sensitive (it cannot be undone).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, Deleted, id_key
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import AndroidDriver
from phoneenv.tools import ToolError, tool

DateText = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="A local date, YYYY-MM-DD")]
PersonName = Annotated[str, Field(min_length=1, max_length=100)]
AlbumName = Annotated[str, Field(min_length=1, max_length=80)]
PhotoIds = Annotated[list[str], Field(min_length=1, max_length=200)]


class DeletedMany(TypedDict):
    """The ids a batch deletion removed, in the order given, and how many."""

    deleted: list[str]
    total: int


class Photo(TypedDict):
    """A photo or video in the gallery."""

    id: str
    kind: Literal["photo", "video"]
    taken: str
    place: str | None
    people: list[str]
    favorite: bool
    duration_s: int | None


class Album(TypedDict):
    """An album: a named, ordered selection of photos."""

    id: str
    name: str
    photo_ids: list[str]
    created: str


class PhotoList(TypedDict):
    """Photos, newest first, and how many matched in all."""

    photos: list[Photo]
    total: int


class AlbumSummary(TypedDict):
    """An album with how many photos it holds."""

    id: str
    name: str
    count: int
    created: str


class AlbumList(TypedDict):
    """Albums by name."""

    albums: list[AlbumSummary]
    total: int


class AlbumDetail(TypedDict):
    """An album with its photos in album order."""

    id: str
    name: str
    created: str
    photos: list[Photo]


def _photo(rec: dict[str, Any]) -> Photo:
    return {**rec, "people": list(rec["people"])}  # type: ignore[typeddict-item]


def _newest_first(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(recs, key=lambda r: (r["taken"], id_key(r["id"])), reverse=True)


def _day(text: str, arg: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"argument {arg!r}: {text!r} is not a valid date",
            hint="use YYYY-MM-DD, e.g. 2026-11-21",
            path=f"/{arg}",
        ) from None


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


ANDROID = AndroidDriver(
    tables={},
    tools=(),
    unavailable={
        name: "not mapped yet: MediaStore (content://media/external/images/media) lists and deletes "
        "photos with their time, but people tags, favourites and albums are the gallery app's own data "
        "with no public provider, so only a partial mapping would exist"
        for name in (
            "gallery.add_to_album",
            "gallery.create_album",
            "gallery.delete_album",
            "gallery.delete_photo",
            "gallery.delete_photos",
            "gallery.get_album",
            "gallery.get_photo",
            "gallery.list_albums",
            "gallery.list_photos",
            "gallery.remove_from_album",
            "gallery.set_favorite",
            "gallery.tag_person",
            "gallery.untag_person",
        )
    },
)


class Gallery(App):
    """A photo gallery."""

    name = "gallery"
    title = "Photos"
    domain = Domain.ENTERTAINMENT
    package = "com.google.android.apps.photos"
    tables: ClassVar[dict[str, str]] = {"photos": "ph_", "albums": "alb_"}
    records: ClassVar[dict[str, Any]] = {"photos": Photo, "albums": Album}
    android = ANDROID

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "albums":
            return f"{record['name']} ({len(record['photo_ids'])})"
        star = "* " if record.get("favorite") else ""
        where = f" @ {record['place']}" if record.get("place") else ""
        people = f" with {', '.join(record['people'])}" if record.get("people") else ""
        return f"{star}{record['kind']} {record['taken']}{where}{people}"

    def _get(self, photo_id: str) -> dict[str, Any]:
        return self.require("photos", photo_id, "photo", "gallery.list_photos")

    def _album(self, album_id: str) -> dict[str, Any]:
        return self.require("albums", album_id, "album", "gallery.list_albums")

    def _check_photos(self, photo_ids: list[str]) -> list[str]:
        """``photo_ids`` without repeats, each an existing photo (else ``not_found`` at its index)."""
        out: list[str] = []
        for i, pid in enumerate(photo_ids):
            if pid not in self.t("photos"):
                raise ToolError(
                    ErrorKind.NOT_FOUND,
                    f"no photo with id {pid!r}",
                    hint="call gallery.list_photos to find the right ids",
                    path=f"/photo_ids/{i}",
                )
            if pid not in out:
                out.append(pid)
        return out

    def add_photo(self, kind: str, place: str | None, duration_s: int | None = None) -> dict[str, Any]:
        """Store a new photo or video taken now at ``place`` (used by the camera app)."""
        rec = {
            "id": self.new_id("photos"),
            "kind": kind,
            "taken": self.now_str(),
            "place": place,
            "people": (),
            "favorite": False,
            "duration_s": duration_s,
        }
        return self.put("photos", rec)

    # -- photos ---------------------------------------------------------------------------------
    @tool()
    def list_photos(
        self,
        date_from: DateText | None = None,
        date_to: DateText | None = None,
        place: Annotated[str, Field(min_length=1, max_length=100)] | None = None,
        person: PersonName | None = None,
        favorites_only: bool = False,
        kind: Literal["photo", "video"] | None = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 50,
    ) -> PhotoList:
        """List photos and videos, newest first, optionally filtered.

        Args:
            date_from: Only items taken on or after this local date, e.g. "2026-11-21".
            date_to: Only items taken on or before this local date.
            place: Only items whose place contains this text (case-insensitive), e.g. "Lisbon".
            person: Only items tagged with a person whose name contains this text, e.g. "Ana".
            favorites_only: Only favourites.
            kind: Only photos or only videos.
            limit: Maximum number of items returned.
        """
        lo = _day(date_from, "date_from") if date_from else None
        hi = _day(date_to, "date_to") if date_to else None
        if lo and hi and lo > hi:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "date_from is after date_to",
                hint="swap the dates",
                path="/date_to",
            )
        hits = []
        for rec in self.t("photos").values():
            day = rec["taken"][:10]
            if (lo and day < lo.isoformat()) or (hi and day > hi.isoformat()):
                continue
            if place and _norm(place) not in _norm(rec.get("place") or ""):
                continue
            if person and not any(_norm(person) in _norm(p) for p in rec["people"]):
                continue
            if favorites_only and not rec["favorite"]:
                continue
            if kind and rec["kind"] != kind:
                continue
            hits.append(rec)
        hits = _newest_first(hits)
        self.show_list("photos", [r["id"] for r in hits[:limit]])
        return {"photos": [_photo(r) for r in hits[:limit]], "total": len(hits)}

    @tool()
    def get_photo(self, photo_id: str) -> Photo:
        """Get one photo or video.

        Args:
            photo_id: The item's id, e.g. "ph_3".
        """
        rec = self._get(photo_id)
        self.show_detail("photos", photo_id)
        return _photo(rec)

    @tool(effect=Effect.WRITE, writes=("photos",))
    def set_favorite(self, photo_id: str, favorite: bool = True) -> Photo:
        """Mark a photo as a favourite, or take it out of the favourites.

        Args:
            photo_id: The item's id.
            favorite: True to mark it, false to unmark it.
        """
        rec = self._get(photo_id)
        if rec["favorite"] != favorite:
            rec = self.patch("photos", photo_id, favorite=favorite)
        self.show_detail("photos", photo_id)
        return _photo(rec)

    @tool(effect=Effect.WRITE, writes=("photos",))
    def tag_person(self, photo_id: str, name: PersonName) -> Photo:
        """Tag a person in a photo (a name already tagged, in any case, is left as is).

        Args:
            photo_id: The item's id.
            name: The person's full name as saved in contacts, e.g. "Ana Lima".
        """
        rec = self._get(photo_id)
        clean = " ".join(name.split())
        if not clean:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the name is blank", hint="give a name", path="/name")
        if all(_norm(p) != _norm(clean) for p in rec["people"]):
            rec = self.patch("photos", photo_id, people=(*rec["people"], clean))
        self.show_detail("photos", photo_id)
        return _photo(rec)

    @tool(effect=Effect.WRITE, writes=("photos",))
    def untag_person(self, photo_id: str, name: PersonName) -> Photo:
        """Remove a person's tag from a photo (matched case-insensitively on the full name).

        Args:
            photo_id: The item's id.
            name: The tagged name to remove.
        """
        rec = self._get(photo_id)
        kept = tuple(p for p in rec["people"] if _norm(p) != _norm(name))
        if len(kept) == len(rec["people"]):
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"photo {photo_id} has no tag {name!r}",
                hint="pick one of its tags",
                candidates=list(rec["people"]),
            )
        rec = self.patch("photos", photo_id, people=kept)
        self.show_detail("photos", photo_id)
        return _photo(rec)

    @tool(effect=Effect.SENSITIVE, writes=("albums", "photos"))
    def delete_photo(self, photo_id: str) -> Deleted:
        """Delete a photo or video for good; it also leaves every album.

        Args:
            photo_id: The item's id.
        """
        self._get(photo_id)
        for alb in list(self.t("albums").values()):
            if photo_id in alb["photo_ids"]:
                self.patch("albums", alb["id"], photo_ids=tuple(p for p in alb["photo_ids"] if p != photo_id))
        self.remove("photos", photo_id)
        self.show_list("photos", [r["id"] for r in _newest_first(list(self.t("photos").values()))])
        return {"deleted": photo_id}

    @tool(effect=Effect.SENSITIVE, writes=("albums", "photos"))
    def delete_photos(self, photo_ids: PhotoIds) -> DeletedMany:
        """Delete several photos or videos for good, in one action (one confirmation covers the
        batch); each also leaves every album. Nothing is deleted if any id is unknown.

        Args:
            photo_ids: The items' ids (repeats count once).
        """
        ids = self._check_photos(photo_ids)
        gone = set(ids)
        for alb in list(self.t("albums").values()):
            if gone.intersection(alb["photo_ids"]):
                self.patch("albums", alb["id"], photo_ids=tuple(p for p in alb["photo_ids"] if p not in gone))
        for pid in ids:
            self.remove("photos", pid)
        self.show_list("photos", [r["id"] for r in _newest_first(list(self.t("photos").values()))])
        return {"deleted": ids, "total": len(ids)}

    # -- albums ---------------------------------------------------------------------------------
    @tool()
    def list_albums(self) -> AlbumList:
        """List albums by name, with how many photos each holds."""
        recs = sorted(self.t("albums").values(), key=lambda r: (_norm(r["name"]), id_key(r["id"])))
        self.show_list("albums", [r["id"] for r in recs])
        return {
            "albums": [
                {"id": r["id"], "name": r["name"], "count": len(r["photo_ids"]), "created": r["created"]} for r in recs
            ],
            "total": len(recs),
        }

    @tool()
    def get_album(self, album_id: str) -> AlbumDetail:
        """Get an album and its photos in album order.

        Args:
            album_id: The album's id, e.g. "alb_2".
        """
        rec = self._album(album_id)
        photos = self.t("photos")
        self.show_detail("albums", album_id)
        return {
            "id": rec["id"],
            "name": rec["name"],
            "created": rec["created"],
            "photos": [_photo(photos[p]) for p in rec["photo_ids"] if p in photos],
        }

    @tool(effect=Effect.WRITE, writes=("albums",))
    def create_album(
        self,
        name: AlbumName,
        photo_ids: Annotated[list[str], Field(max_length=200)] = [],  # noqa: B006 - the schema's default; never mutated
    ) -> AlbumDetail:
        """Create an album, optionally with photos in it.

        Args:
            name: The album's name, e.g. "Lisbon trip"; unique (case-insensitive).
            photo_ids: Photos to put in it, in this order.
        """
        clean = " ".join(name.split())
        if not clean:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the name is blank", hint="name the album", path="/name")
        for alb in self.t("albums").values():
            if _norm(alb["name"]) == _norm(clean):
                raise ToolError(
                    ErrorKind.CONFLICT,
                    f"an album named {alb['name']!r} exists ({alb['id']})",
                    hint="add the photos to that album with gallery.add_to_album, or pick another name",
                    path="/name",
                )
        ids = self._check_photos(photo_ids)
        rec = {"id": self.new_id("albums"), "name": clean, "photo_ids": tuple(ids), "created": self.now_str()}
        self.put("albums", rec)
        return self.get_album(rec["id"])

    @tool(effect=Effect.WRITE, writes=("albums",))
    def add_to_album(self, album_id: str, photo_ids: PhotoIds) -> AlbumDetail:
        """Add photos to the end of an album (photos already in it stay where they are).

        Args:
            album_id: The album's id.
            photo_ids: The photos to add.
        """
        rec = self._album(album_id)
        ids = self._check_photos(photo_ids)
        new = tuple(rec["photo_ids"]) + tuple(p for p in ids if p not in rec["photo_ids"])
        if new != tuple(rec["photo_ids"]):
            self.patch("albums", album_id, photo_ids=new)
        return self.get_album(album_id)

    @tool(effect=Effect.WRITE, writes=("albums",))
    def remove_from_album(self, album_id: str, photo_ids: PhotoIds) -> AlbumDetail:
        """Take photos out of an album (the photos stay in the gallery).

        Args:
            album_id: The album's id.
            photo_ids: The photos to take out; each must be in the album.
        """
        rec = self._album(album_id)
        for i, pid in enumerate(photo_ids):
            if pid not in rec["photo_ids"]:
                raise ToolError(
                    ErrorKind.NOT_FOUND,
                    f"photo {pid!r} is not in album {album_id}",
                    hint="call gallery.get_album to see its photos",
                    path=f"/photo_ids/{i}",
                    candidates=list(rec["photo_ids"]),
                )
        self.patch("albums", album_id, photo_ids=tuple(p for p in rec["photo_ids"] if p not in photo_ids))
        return self.get_album(album_id)

    @tool(effect=Effect.SENSITIVE, writes=("albums",))
    def delete_album(self, album_id: str) -> Deleted:
        """Delete an album; its photos stay in the gallery.

        Args:
            album_id: The album's id.
        """
        self._album(album_id)
        self.remove("albums", album_id)
        self.show_list("albums", sorted(self.t("albums"), key=id_key))
        return {"deleted": album_id}
