"""The music app through the sandbox backend: library, playlists, player and podcasts, with
values worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Effect, ErrorKind, Feedback, Fixtures, TaskSpec


def song(n: int, title: str, artist: str) -> dict[str, Any]:
    return {"id": f"s_{n}", "title": title, "artist": artist, "album": "LP", "duration_s": 200 + n, "liked": False}


SONGS = [song(1, "Paper Moon", "The Lanterns"), song(2, "Last Tram", "The Lanterns"), song(3, "Blue Hour", "Mira Vale"),
         song(4, "Wolf Pass", "Northbound")]  # fmt: skip
PLAYLISTS = [{"id": "pl_1", "name": "Focus", "song_ids": ("s_1", "s_2", "s_3"), "created": "2026-11-01T08:00:00"},
             {"id": "pl_2", "name": "Empty", "song_ids": (), "created": "2026-11-01T08:00:00"}]  # fmt: skip
PODCASTS = [{"id": "pod_1", "title": "Deep Field", "publisher": "Science Hour", "subscribed": False},
            {"id": "pod_2", "title": "City Stories", "publisher": "Metro Audio", "subscribed": True}]  # fmt: skip


def episode(n: int, pod: str, published: str, played: bool = False) -> dict[str, Any]:
    return {"id": f"ep_{n}", "podcast_id": pod, "title": f"Episode {n}", "published": published,
            "duration_s": 1800, "played": played, "downloaded": False}  # fmt: skip


EPISODES = [episode(1, "pod_1", "2026-11-05", played=True), episode(2, "pod_1", "2026-11-12"),
            episode(3, "pod_1", "2026-11-19"), episode(4, "pod_2", "2026-11-18")]  # fmt: skip

TASK = TaskSpec(
    id="music-test",
    domain="entertainment",
    goal="test",
    criteria=[AnswerCriterion(equals="ok")],
    fixtures=Fixtures(
        records={
            "music.songs": SONGS,
            "music.playlists": PLAYLISTS,
            "music.podcasts": PODCASTS,
            "music.episodes": EPISODES,
        },
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

    def table(self, name: str) -> dict[str, dict[str, Any]]:
        return dict(self.backend.tables().get(name, {}))


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def titles(res: dict[str, Any]) -> list[str]:
    return [s["title"] for s in res["songs"]]


def test_schemas_are_valid() -> None:
    tools = {n: e for n, e in SandboxBackend().tools().items() if n.startswith("music.")}
    assert len(tools) == 17
    for entry in tools.values():
        Draft202012Validator.check_schema(entry.spec.parameters)
    assert tools["music.now_playing"].spec.effect is Effect.READ and tools["music.play"].spec.effect is Effect.WRITE


def test_search_songs_and_podcasts() -> None:
    phone = Phone()
    res = ok(phone("music.search", query="lanterns"))
    assert titles(res) == ["Paper Moon", "Last Tram"] and res["podcasts"] == []
    res = ok(phone("music.search", query="metro", kind="podcasts"))
    assert [p["id"] for p in res["podcasts"]] == ["pod_2"] and res["songs"] == []
    assert phone("music.search", query="  ").error is ErrorKind.INVALID_ARGUMENTS


def test_playlist_create_add_remove_and_move() -> None:
    phone = Phone()
    res = ok(phone("music.create_playlist", name="Road trip", song_ids=["s_4", "s_1", "s_4"]))
    assert res["id"] == "pl_3" and titles(res) == ["Wolf Pass", "Paper Moon"]
    assert phone("music.create_playlist", name="focus").error is ErrorKind.CONFLICT
    fb = phone("music.add_to_playlist", playlist_id="pl_3", song_ids=["s_2", "s_99"])
    assert fb.error is ErrorKind.NOT_FOUND and fb.path == "/song_ids/1"
    assert phone.table("music.playlists")["pl_3"]["song_ids"] == ("s_4", "s_1")  # unchanged
    assert titles(ok(phone("music.add_to_playlist", playlist_id="pl_3", song_ids=["s_1", "s_3"]))) == [
        "Wolf Pass", "Paper Moon", "Blue Hour"
    ]  # fmt: skip
    # Focus: s_1 s_2 s_3 -> move s_3 to 1 -> s_3 s_1 s_2 -> remove s_1 -> s_3 s_2
    assert [s["id"] for s in ok(phone("music.move_in_playlist", playlist_id="pl_1", song_id="s_3", position=1))["songs"]] == [
        "s_3", "s_1", "s_2"
    ]  # fmt: skip
    assert [s["id"] for s in ok(phone("music.remove_from_playlist", playlist_id="pl_1", song_id="s_1"))["songs"]] == [
        "s_3", "s_2"
    ]  # fmt: skip
    fb = phone("music.move_in_playlist", playlist_id="pl_1", song_id="s_3", position=3)
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/position"
    fb = phone("music.remove_from_playlist", playlist_id="pl_1", song_id="s_4")
    assert fb.error is ErrorKind.NOT_FOUND and fb.candidates == ["s_3", "s_2"]


def test_player_plays_a_playlist_queues_and_pauses() -> None:
    phone = Phone()
    assert ok(phone("music.now_playing")) == {
        "playing": False,
        "song": None,
        "episode": None,
        "playlist_id": None,
        "queue": [],
    }
    now = ok(phone("music.play", playlist_id="pl_1"))
    assert now["song"]["id"] == "s_1" and [s["id"] for s in now["queue"]] == ["s_2", "s_3"] and now["playing"]
    assert [s["id"] for s in ok(phone("music.add_to_queue", song_id="s_4", next=True))["queue"]] == [
        "s_4",
        "s_2",
        "s_3",
    ]
    assert [s["id"] for s in ok(phone("music.add_to_queue", song_id="s_1"))["queue"]] == ["s_4", "s_2", "s_3", "s_1"]
    assert ok(phone("music.pause"))["playing"] is False
    rec = phone.table("music.player")["now"]
    assert rec["playlist_id"] == "pl_1" and rec["song_id"] == "s_1" and rec["playing"] is False
    assert phone("music.play", playlist_id="pl_2").error is ErrorKind.PRECONDITION_FAILED
    assert phone("music.play").error is ErrorKind.INVALID_ARGUMENTS
    assert phone("music.play", song_id="s_1", episode_id="ep_1").error is ErrorKind.INVALID_ARGUMENTS
    ep = ok(phone("music.play", episode_id="ep_3"))
    assert ep["episode"]["id"] == "ep_3" and ep["song"] is None and ep["playing"] is True


def test_podcasts_subscribe_episodes_played_and_downloaded() -> None:
    phone = Phone()
    assert [p["id"] for p in ok(phone("music.list_podcasts", subscribed_only=True))["podcasts"]] == ["pod_2"]
    assert ok(phone("music.subscribe", podcast_id="pod_1"))["subscribed"] is True
    eps = ok(phone("music.list_episodes", podcast_id="pod_1"))
    assert [e["id"] for e in eps["episodes"]] == ["ep_3", "ep_2", "ep_1"]  # newest first
    assert [e["id"] for e in ok(phone("music.list_episodes", podcast_id="pod_1", unplayed_only=True))["episodes"]] == [
        "ep_3", "ep_2"
    ]  # fmt: skip
    assert ok(phone("music.mark_played", episode_id="ep_2"))["played"] is True
    assert ok(phone("music.download_episode", episode_id="ep_3"))["downloaded"] is True
    assert ok(phone("music.download_episode", episode_id="ep_3", downloaded=False))["downloaded"] is False
    assert phone("music.list_episodes", podcast_id="pod_9").error is ErrorKind.NOT_FOUND


@pytest.mark.parametrize(
    "tool,args", [("music.like_song", {"song_id": "s_9"}), ("music.mark_played", {"episode_id": "ep_9"})]
)
def test_unknown_ids_are_not_found(tool: str, args: dict[str, Any]) -> None:
    phone = Phone()
    assert phone(tool, **args).error is ErrorKind.NOT_FOUND
    assert ok(phone("music.like_song", song_id="s_2"))["liked"] is True
