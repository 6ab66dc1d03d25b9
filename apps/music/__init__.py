"""Music: a song library, playlists, the player and its queue, and podcasts.

Tables:

- ``music.songs``: ``{"id": "s_1", "title", "artist", "album": str, "duration_s": int, "liked": bool}``;
- ``music.playlists``: ``{"id": "pl_1", "name": str, "song_ids": ("s_3", ...), "created": "YYYY-MM-DDTHH:MM:SS"}``;
- ``music.player``: one record ``"now"``: ``{"song_id": str | None, "episode_id": str | None,
  "playlist_id": str | None, "queue": ("s_4", ...), "playing": bool}`` (what plays, from which
  playlist, what comes next); stopped and empty while none is stored;
- ``music.podcasts``: ``{"id": "pod_1", "title", "publisher": str, "subscribed": bool}``;
- ``music.episodes``: ``{"id": "ep_1", "podcast_id": "pod_1", "title": str, "published":
  "YYYY-MM-DD", "duration_s": int, "played": bool, "downloaded": bool}``.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, id_key
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import AndroidDriver
from phoneenv.tools import ToolError, tool

PlaylistName = Annotated[str, Field(min_length=1, max_length=80)]
SongIds = Annotated[list[str], Field(min_length=1, max_length=200)]
PLAYER = "now"


class Song(TypedDict):
    """A song in the library."""

    id: str
    title: str
    artist: str
    album: str
    duration_s: int
    liked: bool


class Playlist(TypedDict):
    """A playlist as stored: its songs in order."""

    id: str
    name: str
    song_ids: list[str]
    created: str


class Player(TypedDict):
    """The player: what plays now, from which playlist, and the queue after it."""

    id: str
    song_id: str | None
    episode_id: str | None
    playlist_id: str | None
    queue: list[str]
    playing: bool


class Podcast(TypedDict):
    """A podcast show."""

    id: str
    title: str
    publisher: str
    subscribed: bool


class Episode(TypedDict):
    """A podcast episode."""

    id: str
    podcast_id: str
    title: str
    published: str
    duration_s: int
    played: bool
    downloaded: bool


class SearchResult(TypedDict):
    """Songs and podcasts matching a query."""

    songs: list[Song]
    podcasts: list[Podcast]


class PlaylistSummary(TypedDict):
    """A playlist with its number of songs."""

    id: str
    name: str
    count: int


class PlaylistList(TypedDict):
    """Playlists by name."""

    playlists: list[PlaylistSummary]
    total: int


class PlaylistDetail(TypedDict):
    """A playlist with its songs in order (position 1 first)."""

    id: str
    name: str
    songs: list[Song]


class NowPlaying(TypedDict):
    """What plays now and what is queued."""

    playing: bool
    song: Song | None
    episode: Episode | None
    playlist_id: str | None
    queue: list[Song]


class PodcastList(TypedDict):
    """Podcasts by title."""

    podcasts: list[Podcast]
    total: int


class EpisodeList(TypedDict):
    """Episodes of a podcast, newest first."""

    episodes: list[Episode]
    total: int


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _listed(rec: dict[str, Any], key: str) -> dict[str, Any]:
    return {**rec, key: list(rec[key])}


_TOOLS = (
    "music.add_to_playlist",
    "music.add_to_queue",
    "music.create_playlist",
    "music.download_episode",
    "music.get_playlist",
    "music.like_song",
    "music.list_episodes",
    "music.list_playlists",
    "music.list_podcasts",
    "music.mark_played",
    "music.move_in_playlist",
    "music.now_playing",
    "music.pause",
    "music.play",
    "music.remove_from_playlist",
    "music.search",
    "music.subscribe",
)

ANDROID = AndroidDriver(
    tables={},
    tools=(),
    unavailable={
        name: "a streaming app's library, playlists, podcasts and player live in its own storage and "
        "service with no public content provider, so there is no faithful adb path"
        for name in _TOOLS
    },
)


class Music(App):
    """A music and podcast player."""

    name = "music"
    title = "Music"
    domain = Domain.ENTERTAINMENT
    package = "org.example.music"
    tables: ClassVar[dict[str, str]] = {
        "songs": "s_",
        "playlists": "pl_",
        "player": "player_",
        "podcasts": "pod_",
        "episodes": "ep_",
    }
    records: ClassVar[dict[str, Any]] = {
        "songs": Song,
        "playlists": Playlist,
        "player": Player,
        "podcasts": Podcast,
        "episodes": Episode,
    }
    implied: ClassVar[dict[str, dict[str, dict[str, Any]]]] = {
        "player": {
            PLAYER: {
                "id": PLAYER,
                "song_id": None,
                "episode_id": None,
                "playlist_id": None,
                "queue": (),
                "playing": False,
            }
        }
    }
    android = ANDROID

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "songs":
            heart = "<3 " if record.get("liked") else ""
            return f"{heart}{record['title']} - {record['artist']}"
        if table == "playlists":
            return f"{record['name']} ({len(record['song_ids'])})"
        if table == "podcasts":
            return f"{'+ ' if record['subscribed'] else ''}{record['title']} ({record['publisher']})"
        if table == "episodes":
            marks = ("played " if record["played"] else "") + ("downloaded" if record["downloaded"] else "")
            return f"{record['published']} {record['title']} {marks}".rstrip()
        return super().row(table, record)

    # -- helpers --------------------------------------------------------------------------------
    def _song(self, song_id: str, path: str = "/song_id") -> dict[str, Any]:
        rec = self.t("songs").get(song_id)
        if rec is None:
            raise ToolError(
                ErrorKind.NOT_FOUND, f"no song with id {song_id!r}", hint="call music.search to find it", path=path
            )
        return rec

    def _playlist(self, playlist_id: str) -> dict[str, Any]:
        return self.require("playlists", playlist_id, "playlist", "music.list_playlists")

    def _podcast(self, podcast_id: str) -> dict[str, Any]:
        return self.require("podcasts", podcast_id, "podcast", "music.list_podcasts or music.search")

    def _episode(self, episode_id: str) -> dict[str, Any]:
        return self.require("episodes", episode_id, "episode", "music.list_episodes")

    def _player(self) -> dict[str, Any]:
        return self.t("player").get(PLAYER) or dict(self.implied["player"][PLAYER])

    def _set_player(self, **changes: Any) -> dict[str, Any]:
        if PLAYER in self.t("player"):
            return self.patch("player", PLAYER, **changes)
        return self.put("player", {**self.implied["player"][PLAYER], **changes})

    def _detail(self, rec: dict[str, Any]) -> PlaylistDetail:
        songs = self.t("songs")
        self.show_list("songs", [s for s in rec["song_ids"] if s in songs])
        return {
            "id": rec["id"],
            "name": rec["name"],
            "songs": [songs[s] for s in rec["song_ids"] if s in songs],  # type: ignore[misc]
        }

    def _check_songs(self, song_ids: list[str]) -> list[str]:
        out: list[str] = []
        for i, sid in enumerate(song_ids):
            self._song(sid, f"/song_ids/{i}")
            if sid not in out:
                out.append(sid)
        return out

    def _now(self) -> NowPlaying:
        p = self._player()
        songs = self.t("songs")
        return {
            "playing": p["playing"],
            "song": songs.get(p["song_id"]) if p["song_id"] else None,  # type: ignore[typeddict-item]
            "episode": self.t("episodes").get(p["episode_id"]) if p["episode_id"] else None,  # type: ignore[typeddict-item]
            "playlist_id": p["playlist_id"],
            "queue": [songs[s] for s in p["queue"] if s in songs],  # type: ignore[misc]
        }

    # -- library --------------------------------------------------------------------------------
    @tool()
    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=100)],
        kind: Literal["all", "songs", "podcasts"] = "all",
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
    ) -> SearchResult:
        """Find songs by title, artist or album, and podcasts by title or publisher
        (case-insensitive).

        Args:
            query: Words to look for, e.g. "Beatles" or "history".
            kind: "songs", "podcasts" or "all".
            limit: Maximum number of songs and of podcasts returned.
        """
        q = _norm(query)
        if not q:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the query is blank", hint="search for a word", path="/query")
        songs = []
        if kind in ("all", "songs"):
            songs = [
                s
                for s in sorted(self.t("songs").values(), key=lambda r: id_key(r["id"]))
                if q in _norm(f"{s['title']} | {s['artist']} | {s['album']}")
            ][:limit]
        pods = []
        if kind in ("all", "podcasts"):
            pods = [
                p
                for p in sorted(self.t("podcasts").values(), key=lambda r: id_key(r["id"]))
                if q in _norm(f"{p['title']} | {p['publisher']}")
            ][:limit]
        self.show_list("songs", [s["id"] for s in songs])
        return {"songs": songs, "podcasts": pods}  # type: ignore[typeddict-item]

    @tool(effect=Effect.WRITE, writes=("songs",))
    def like_song(self, song_id: str, liked: bool = True) -> Song:
        """Add a song to the liked songs, or take it out.

        Args:
            song_id: The song's id, e.g. "s_12".
            liked: True to like it, false to unlike it.
        """
        rec = self._song(song_id)
        if rec["liked"] != liked:
            rec = self.patch("songs", song_id, liked=liked)
        self.show_detail("songs", song_id)
        return rec  # type: ignore[return-value]

    # -- playlists ------------------------------------------------------------------------------
    @tool()
    def list_playlists(self) -> PlaylistList:
        """List playlists by name with their number of songs."""
        recs = sorted(self.t("playlists").values(), key=lambda r: (_norm(r["name"]), id_key(r["id"])))
        self.show_list("playlists", [r["id"] for r in recs])
        return {
            "playlists": [{"id": r["id"], "name": r["name"], "count": len(r["song_ids"])} for r in recs],
            "total": len(recs),
        }

    @tool()
    def get_playlist(self, playlist_id: str) -> PlaylistDetail:
        """Get a playlist's songs in order.

        Args:
            playlist_id: The playlist's id, e.g. "pl_2".
        """
        return self._detail(self._playlist(playlist_id))

    @tool(effect=Effect.WRITE, writes=("playlists",))
    def create_playlist(
        self,
        name: PlaylistName,
        song_ids: Annotated[list[str], Field(max_length=200)] = [],  # noqa: B006 - the schema's default; never mutated
    ) -> PlaylistDetail:
        """Create a playlist, optionally with songs.

        Args:
            name: The playlist's name, e.g. "Road trip"; unique (case-insensitive).
            song_ids: Songs to put in it, in this order.
        """
        clean = " ".join(name.split())
        if not clean:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the name is blank", hint="name the playlist", path="/name")
        for r in self.t("playlists").values():
            if _norm(r["name"]) == _norm(clean):
                raise ToolError(
                    ErrorKind.CONFLICT,
                    f"a playlist named {r['name']!r} exists ({r['id']})",
                    hint="add the songs to it with music.add_to_playlist, or pick another name",
                    path="/name",
                )
        ids = self._check_songs(song_ids)
        rec = {"id": self.new_id("playlists"), "name": clean, "song_ids": tuple(ids), "created": self.now_str()}
        self.put("playlists", rec)
        return self._detail(rec)

    @tool(effect=Effect.WRITE, writes=("playlists",))
    def add_to_playlist(self, playlist_id: str, song_ids: SongIds) -> PlaylistDetail:
        """Add songs to the end of a playlist (a song already in it is not added twice).

        Args:
            playlist_id: The playlist's id.
            song_ids: The songs to add, in order.
        """
        rec = self._playlist(playlist_id)
        ids = self._check_songs(song_ids)
        new = tuple(rec["song_ids"]) + tuple(s for s in ids if s not in rec["song_ids"])
        if new != tuple(rec["song_ids"]):
            rec = self.patch("playlists", playlist_id, song_ids=new)
        return self._detail(rec)

    @tool(effect=Effect.WRITE, writes=("playlists",))
    def remove_from_playlist(self, playlist_id: str, song_id: str) -> PlaylistDetail:
        """Take a song out of a playlist.

        Args:
            playlist_id: The playlist's id.
            song_id: The song to take out; it must be in the playlist.
        """
        rec = self._playlist(playlist_id)
        if song_id not in rec["song_ids"]:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"song {song_id!r} is not in playlist {playlist_id}",
                hint="call music.get_playlist to see its songs",
                path="/song_id",
                candidates=list(rec["song_ids"]),
            )
        rec = self.patch("playlists", playlist_id, song_ids=tuple(s for s in rec["song_ids"] if s != song_id))
        return self._detail(rec)

    @tool(effect=Effect.WRITE, writes=("playlists",))
    def move_in_playlist(
        self, playlist_id: str, song_id: str, position: Annotated[int, Field(ge=1, le=1000)]
    ) -> PlaylistDetail:
        """Move a song of a playlist to another position (1 = first); the others keep their order.

        Args:
            playlist_id: The playlist's id.
            song_id: The song to move; it must be in the playlist.
            position: Its new position, 1 to the playlist's length.
        """
        rec = self._playlist(playlist_id)
        ids = list(rec["song_ids"])
        if song_id not in ids:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"song {song_id!r} is not in playlist {playlist_id}",
                hint="call music.get_playlist to see its songs",
                path="/song_id",
                candidates=ids,
            )
        if position > len(ids):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"position {position} is past the end (the playlist has {len(ids)} songs)",
                hint=f"use 1 to {len(ids)}",
                path="/position",
            )
        ids.remove(song_id)
        ids.insert(position - 1, song_id)
        if tuple(ids) != tuple(rec["song_ids"]):
            rec = self.patch("playlists", playlist_id, song_ids=tuple(ids))
        return self._detail(rec)

    # -- player ---------------------------------------------------------------------------------
    @tool(effect=Effect.WRITE, writes=("player",))
    def play(
        self, song_id: str | None = None, playlist_id: str | None = None, episode_id: str | None = None
    ) -> NowPlaying:
        """Start playing one song, a playlist from its first song (the rest queued), or a podcast
        episode. Give exactly one of the three.

        Args:
            song_id: A song to play now; the queue is kept.
            playlist_id: A playlist to play from the start; it replaces the queue.
            episode_id: A podcast episode to play now.
        """
        given = [k for k, v in (("song_id", song_id), ("playlist_id", playlist_id), ("episode_id", episode_id)) if v]
        if len(given) != 1:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                "give exactly one of song_id, playlist_id and episode_id",
                hint="pick what to play",
            )
        if song_id:
            self._song(song_id)
            self._set_player(song_id=song_id, episode_id=None, playlist_id=None, playing=True)
        elif playlist_id:
            rec = self._playlist(playlist_id)
            if not rec["song_ids"]:
                raise ToolError(
                    ErrorKind.PRECONDITION_FAILED,
                    f"playlist {playlist_id} is empty",
                    hint="add songs with music.add_to_playlist first",
                    path="/playlist_id",
                )
            first, *rest = rec["song_ids"]
            self._set_player(song_id=first, episode_id=None, playlist_id=playlist_id, queue=tuple(rest), playing=True)
        else:
            self._episode(str(episode_id))
            self._set_player(song_id=None, episode_id=episode_id, playlist_id=None, playing=True)
        return self._now()

    @tool(effect=Effect.WRITE, writes=("player",))
    def add_to_queue(self, song_id: str, next: bool = False) -> NowPlaying:
        """Queue a song: at the end of the queue, or to play next.

        Args:
            song_id: The song to queue.
            next: True to play it right after the current song.
        """
        self._song(song_id)
        queue = tuple(self._player()["queue"])
        self._set_player(queue=(song_id, *queue) if next else (*queue, song_id))
        return self._now()

    @tool()
    def now_playing(self) -> NowPlaying:
        """What plays now (a song or an episode), from which playlist, and the queue."""
        return self._now()

    @tool(effect=Effect.WRITE, writes=("player",))
    def pause(self) -> NowPlaying:
        """Pause playback (what plays and the queue are kept)."""
        if self._player()["playing"]:
            self._set_player(playing=False)
        return self._now()

    # -- podcasts -------------------------------------------------------------------------------
    @tool()
    def list_podcasts(self, subscribed_only: bool = False) -> PodcastList:
        """List podcasts by title.

        Args:
            subscribed_only: Only the podcasts the user follows.
        """
        recs = sorted(self.t("podcasts").values(), key=lambda r: _norm(r["title"]))
        recs = [r for r in recs if r["subscribed"] or not subscribed_only]
        self.show_list("podcasts", [r["id"] for r in recs])
        return {"podcasts": recs, "total": len(recs)}  # type: ignore[typeddict-item]

    @tool(effect=Effect.WRITE, writes=("podcasts",))
    def subscribe(self, podcast_id: str, subscribed: bool = True) -> Podcast:
        """Follow a podcast, or unfollow it.

        Args:
            podcast_id: The podcast's id, e.g. "pod_3".
            subscribed: True to follow, false to unfollow.
        """
        rec = self._podcast(podcast_id)
        if rec["subscribed"] != subscribed:
            rec = self.patch("podcasts", podcast_id, subscribed=subscribed)
        self.show_detail("podcasts", podcast_id)
        return rec  # type: ignore[return-value]

    @tool()
    def list_episodes(self, podcast_id: str, unplayed_only: bool = False) -> EpisodeList:
        """A podcast's episodes, newest first.

        Args:
            podcast_id: The podcast's id.
            unplayed_only: Only episodes not yet played.
        """
        self._podcast(podcast_id)
        recs = sorted(
            (r for r in self.t("episodes").values() if r["podcast_id"] == podcast_id),
            key=lambda r: (r["published"], id_key(r["id"])),
            reverse=True,
        )
        recs = [r for r in recs if not (unplayed_only and r["played"])]
        self.show_list("episodes", [r["id"] for r in recs])
        return {"episodes": recs, "total": len(recs)}  # type: ignore[typeddict-item]

    @tool(effect=Effect.WRITE, writes=("episodes",))
    def mark_played(self, episode_id: str, played: bool = True) -> Episode:
        """Mark an episode as played, or as not played.

        Args:
            episode_id: The episode's id, e.g. "ep_7".
            played: True for played, false for unplayed.
        """
        rec = self._episode(episode_id)
        if rec["played"] != played:
            rec = self.patch("episodes", episode_id, played=played)
        self.show_detail("episodes", episode_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("episodes",))
    def download_episode(self, episode_id: str, downloaded: bool = True) -> Episode:
        """Download an episode for offline listening, or remove the download.

        Args:
            episode_id: The episode's id.
            downloaded: True to download, false to remove the download.
        """
        rec = self._episode(episode_id)
        if rec["downloaded"] != downloaded:
            rec = self.patch("episodes", episode_id, downloaded=downloaded)
        self.show_detail("episodes", episode_id)
        return rec  # type: ignore[return-value]
