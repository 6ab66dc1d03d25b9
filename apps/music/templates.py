"""Music templates: build a playlist and play it, catch up on a podcast, reorder a playlist, and
make a playlist for a calendar event."""

from __future__ import annotations

from typing import Any

from phoneenv.contract import Criterion, Domain
from phoneenv.tasks.templates import (
    Draft,
    behavior,
    call,
    fails,
    passes,
    pick,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.templates.media_world import ARTISTS, seed_music
from phoneenv.tasks.world import World

__all__ = ["playlist_criteria", "songs_by"]

PLAYLIST_NAMES = ["Road trip", "Sunday chill", "Workout mix", "Cooking tunes", "Late night", "Rainy day"]


def songs_by(w: World, artist: str) -> list[dict[str, Any]]:
    """The seeded songs of ``artist``, in library order."""
    return [s for s in seed_music(w)["songs"] if s["artist"] == artist]


def playlist_criteria(name: str, ids: list[str], change: str = "created", **where: Any) -> list[Criterion]:
    """A playlist named ``name`` holding exactly the songs ``ids`` (any order)."""
    out: list[Criterion] = [
        state("music.playlists", change, name={"iequals": name}, song_ids={"len": len(ids)}, **where)
    ]
    out += [
        suffixed(state("music.playlists", change, name={"iequals": name}, song_ids={"has": i}, **where), i) for i in ids
    ]
    return out


@template(
    "music.playlist_and_play",
    apps=["music"],
    domain=Domain.ENTERTAINMENT,
    difficulty=2,
    capabilities=["lookup", "create", "multi-entity"],
    count=12,
)
def playlist_and_play(w: World) -> Draft:
    """Template ``music.playlist_and_play``, e.g. "Make a playlist "Road trip" with all the songs by
    Mira Vale plus "Wolf Pass", and start playing it."."""
    seed_music(w)
    # Artist k % 6 and a name that shifts after six tasks: no two tasks share both.
    a1 = ARTISTS[w.index % len(ARTISTS)]
    name = PLAYLIST_NAMES[(w.index + w.index // len(ARTISTS)) % len(PLAYLIST_NAMES)]
    a2 = w.rng.choice([a for a in ARTISTS if a is not a1])
    mine = songs_by(w, a1[0])
    extra = w.rng.choice(songs_by(w, a2[0]))
    ids = [s["id"] for s in mine] + [extra["id"]]
    new = w.next_id("music.playlists", "pl_")
    goal = w.rng.choice(
        [f'Make a playlist "{name}" with all the songs by {a1[0]} plus "{extra["title"]}", and start playing it.',
         f'Create a "{name}" playlist: every {a1[0]} song and "{extra["title"]}" by {a2[0]}. Then put it on.']
    )  # fmt: skip
    plan = [
        call("music.search", query=a1[0], kind="songs"),
        call("music.search", query=extra["title"], kind="songs"),
        call("music.create_playlist", name=name, song_ids=ids),
        call("music.play", playlist_id=new),
        call("finish", answer=f'Playing "{name}".'),
    ]
    criteria = [
        *playlist_criteria(name, ids),
        state("music.player", "updated", id="now", playlist_id=new, playing=True),
    ]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[state("music.playlists", "created", name={"iequals": name})],
        plan=plan,
        probes=[
            passes(
                "created empty, then added",
                replacing(
                    plan,
                    2,
                    call("music.create_playlist", name=name),
                    call("music.add_to_playlist", playlist_id=new, song_ids=ids),
                ),
            ),
            passes(
                "the extra song first",
                replacing(plan, 2, call("music.create_playlist", name=name, song_ids=[ids[-1], *ids[:-1]])),
            ),
            fails("not started", replacing(plan, 3)),
            fails("played one song only", replacing(plan, 3, call("music.play", song_id=ids[0]))),
            fails("a song missing", replacing(plan, 2, call("music.create_playlist", name=name, song_ids=ids[1:]))),
            fails(
                "the whole second artist",
                replacing(
                    plan,
                    2,
                    call("music.create_playlist", name=name, song_ids=ids + [s["id"] for s in songs_by(w, a2[0])]),
                ),
            ),
        ],
    )


@template(
    "music.podcast_catch_up",
    apps=["music"],
    domain=Domain.ENTERTAINMENT,
    difficulty=2,
    capabilities=["lookup", "update", "multi-entity"],
    count=12,
)
def podcast_catch_up(w: World) -> Draft:
    """Template ``music.podcast_catch_up``, e.g. "Follow Deep Field, download its newest episode,
    and mark "Tiny worlds" as played - I heard it on the radio."."""
    music = seed_music(w)
    (k,) = pick(w, list(range(len(music["podcasts"]))))
    pod = music["podcasts"][k]
    pods = w.table("music.podcasts")
    pods[k] = pod = {**pod, "subscribed": False}
    eps = music["episodes"][pod["id"]]
    newest = eps[0]
    older = eps[1 + w.index // len(music["podcasts"]) % (len(eps) - 1)]
    table = w.table("music.episodes")
    for e in (newest, older):
        j = next(i for i, r in enumerate(table) if r["id"] == e["id"])
        table[j] = {**table[j], "downloaded": False, "played": False}
    goal = w.rng.choice(
        [f'Follow {pod["title"]}, download its newest episode, and mark "{older["title"]}" as played - I heard it '
         "on the radio.",
         f'Subscribe to the {pod["title"]} podcast. Download the latest episode for the train, and mark the '
         f'"{older["title"]}" episode as played.']
    )  # fmt: skip
    plan = [
        call("music.search", query=pod["title"], kind="podcasts"),
        call("music.subscribe", podcast_id=pod["id"]),
        call("music.list_episodes", podcast_id=pod["id"]),
        call("music.download_episode", episode_id=newest["id"]),
        call("music.mark_played", episode_id=older["id"]),
        call("finish", answer="Done."),
    ]
    oldest = eps[-1]
    return Draft(
        goal=goal,
        criteria=[
            state("music.podcasts", "updated", id=pod["id"], subscribed=True),
            state("music.episodes", "updated", id=newest["id"], downloaded=True, played=False),
            state("music.episodes", "updated", id=older["id"], played=True, downloaded=False),
        ],
        milestones=[state("music.podcasts", "updated", id=pod["id"], subscribed=True)],
        plan=plan,
        probes=[
            passes("listed the podcasts", replacing(plan, 0, call("music.list_podcasts"))),
            passes("only unplayed listed", replacing(plan, 2, call("music.list_episodes", podcast_id=pod["id"], unplayed_only=True))),
            fails("not followed", replacing(plan, 1)),
            fails("downloaded the oldest", replacing(plan, 3, call("music.download_episode", episode_id=oldest["id"]))),
            fails("newest also marked played", replacing(plan, 4, plan[4], call("music.mark_played", episode_id=newest["id"]))),
        ],
    )  # fmt: skip


@template(
    "music.reorder_playlist",
    apps=["music"],
    domain=Domain.ENTERTAINMENT,
    difficulty=2,
    capabilities=["lookup", "update"],
    count=12,
)
def reorder_playlist(w: World) -> Draft:
    """Template ``music.reorder_playlist``, e.g. "In my Focus playlist, put "Attic Rain" first and
    take out "Wolf Pass"."."""
    music = seed_music(w)
    (k,) = pick(w, [0, 1, 2])
    pl = music["playlists"][k]
    ids = list(pl["song_ids"])
    songs = {s["id"]: s for s in music["songs"]}
    top = w.rng.choice(ids[1:])
    # not the song just above it at the top: taking that out would put it first without a move
    drop = w.rng.choice([i for i in ids if i != top and not (top == ids[1] and i == ids[0])])
    want = [top, *[i for i in ids if i not in (top, drop)]]
    goal = w.rng.choice(
        [f'In my {pl["name"]} playlist, put "{songs[top]["title"]}" first and take out "{songs[drop]["title"]}".',
         f'Remove "{songs[drop]["title"]}" from {pl["name"]} and move "{songs[top]["title"]}" to the top of it.']
    )  # fmt: skip
    plan = [
        call("music.list_playlists"),
        call("music.get_playlist", playlist_id=pl["id"]),
        call("music.move_in_playlist", playlist_id=pl["id"], song_id=top, position=1),
        call("music.remove_from_playlist", playlist_id=pl["id"], song_id=drop),
        call("finish", answer="Done."),
    ]
    last = ids[-1] if ids[-1] not in (top, drop) else None
    probes = [
        passes("removed first", [plan[0], plan[1], plan[3], plan[2], plan[4]]),
        fails("only moved", replacing(plan, 3)),
        fails("moved to the end", replacing(plan, 2, call("music.move_in_playlist", playlist_id=pl["id"], song_id=top, position=len(ids)))),
        fails("the wrong song removed", replacing(plan, 3, call("music.remove_from_playlist", playlist_id=pl["id"], song_id=want[-1]))),
        fails("moved first, then to the end", [*plan[:3], call("music.move_in_playlist", playlist_id=pl["id"], song_id=top, position=len(ids)), *plan[3:]]),
    ]  # fmt: skip
    if last is not None and len(want) > 2:
        probes.append(
            passes(
                "rebuilt as a new order",
                [
                    *plan[:2],
                    call("music.remove_from_playlist", playlist_id=pl["id"], song_id=drop),
                    call("music.move_in_playlist", playlist_id=pl["id"], song_id=top, position=1),
                    plan[4],
                ],
            )
        )
    return Draft(
        goal=goal,
        # The whole order: the song first, the one taken out gone, the others as they were.
        criteria=[state("music.playlists", "updated", id=pl["id"], song_ids={"seq": want})],
        milestones=[
            behavior("required_call", "music.get_playlist", arguments={"playlist_id": pl["id"]}),
            behavior(
                "required_call",
                "music.move_in_playlist",
                arguments={"playlist_id": pl["id"], "song_id": top, "position": 1},
                id="moved_to_top",
            ),
        ],
        plan=plan,
        # a move to position 2 above the song taken out gives the same order: the state decides
        perturb_exempt=["2.position", "4.answer"],
        probes=probes,
    )
