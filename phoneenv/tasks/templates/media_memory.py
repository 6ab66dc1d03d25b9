"""Memory templates for the to-do, gallery and music apps: what only the user's memories say.

| template | what memory says | how the task is verified |
|---|---|---|
| ``memory.favorite_podcast`` | the favourite podcast (sometimes replacing an older one) | its newest episode downloaded and playing |
| ``memory.usual_list`` | which to-do list the shopping goes on (not the one named Groceries) | the item created on that list |
| ``memory.running_playlist`` | which playlist the user runs to, beside other playlists' occasions | the player plays that playlist |
| ``memory.tag_partner`` | who the partner is, beside other relations | the partner tagged in every photo of that day |
"""

from __future__ import annotations

from typing import Any

from apps.gallery.templates import outing_of, photos_of
from apps.todo.templates import NEW_ITEMS
from phoneenv.contract import Category, Criterion, Domain
from phoneenv.tasks.templates import (
    Draft,
    call,
    fails,
    first_name,
    passes,
    pick,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.templates.media_world import day_words, seed_music, seed_todo
from phoneenv.tasks.templates.memory import MemoryBook, ago, forget_relations, memory_searched
from phoneenv.tasks.world import World

MEMORY = Category.MEMORY


def with_memory(w: World, book: MemoryBook, **kw: Any) -> Draft:
    """A :class:`Draft` whose fixtures are the world's plus ``book``'s memories."""
    return Draft(fixtures=w.fixtures(memory=book.fixtures()), **kw)


@template(
    "memory.favorite_podcast",
    apps=["music"],
    domain=Domain.ENTERTAINMENT,
    category=MEMORY,
    difficulty=2,
    capabilities=["memory", "lookup", "update"],
    count=12,
)
def favorite_podcast(w: World) -> Draft:
    """Template ``memory.favorite_podcast``: "Download the newest episode of my favourite podcast
    and put it on." where a memory names the favourite (a newer one replacing an older one half
    the time)."""
    music = seed_music(w)
    fav_i, wording = pick(w, list(range(len(music["podcasts"]))), [0, 1])
    fav = music["podcasts"][fav_i]
    old = w.rng.choice([p for p in music["podcasts"] if p is not fav])
    book = MemoryBook()
    if w.rng.random() < 0.5:
        o = book.add("preference", f"My favourite podcast is {old['title']}", ago(w, w.rng.randrange(200, 500)))
        book.add(
            "preference",
            f"{fav['title']} has replaced {old['title']} as my favourite podcast",
            ago(w, w.rng.randrange(5, 100)),
            supersedes=o if w.rng.random() < 0.5 else None,
        )
    else:
        book.add("preference", f"My favourite podcast is {fav['title']}", ago(w, w.rng.randrange(5, 300)))
    book.distract(w, 4)
    newest = music["episodes"][fav["id"]][0]
    table = w.table("music.episodes")
    j = next(i for i, r in enumerate(table) if r["id"] == newest["id"])
    table[j] = {**table[j], "downloaded": False}
    goal = [
        "Download the newest episode of my favourite podcast and put it on.",
        "Play the newest episode of my favourite podcast - and download it too.",
    ][wording]
    plan = [
        call("memory.search", query="favourite podcast"),
        call("music.search", query=fav["title"], kind="podcasts"),
        call("music.list_episodes", podcast_id=fav["id"]),
        call("music.download_episode", episode_id=newest["id"]),
        call("music.play", episode_id=newest["id"]),
        call("finish", answer=f'Playing "{newest["title"]}" from {fav["title"]}.'),
    ]
    old_newest = music["episodes"][old["id"]][0]
    return with_memory(
        w,
        book,
        goal=goal,
        criteria=[
            state("music.episodes", "updated", id=newest["id"], downloaded=True),
            state("music.player", "updated", id="now", episode_id=newest["id"], playing=True),
        ],
        milestones=[memory_searched("podcast", "favourite", "favorite")],
        plan=plan,
        probes=[
            passes("played first", [*plan[:3], plan[4], plan[3], plan[5]]),
            passes("asked memory in other words", replacing(plan, 0, call("memory.search", query="podcast I like"))),
            fails(
                "the other podcast",
                [
                    *plan[:2],
                    call("music.list_episodes", podcast_id=old["id"]),
                    call("music.download_episode", episode_id=old_newest["id"]),
                    call("music.play", episode_id=old_newest["id"]),
                    plan[5],
                ],
            ),
            fails("not downloaded", replacing(plan, 3)),
            fails(
                "an older episode",
                replacing(plan, 4, call("music.play", episode_id=music["episodes"][fav["id"]][1]["id"])),
            ),
        ],
    )


SHOP_LISTS = ["Family shop", "Weekly shop", "Supermarket", "Market run"]


@template(
    "memory.usual_list",
    apps=["todo"],
    domain=Domain.NOTES,
    category=MEMORY,
    difficulty=2,
    capabilities=["memory", "lookup", "create"],
    count=12,
)
def usual_list(w: World) -> Draft:
    """Template ``memory.usual_list``: "Add bananas to my shopping list." where a memory says the
    shopping goes on a list not named Groceries (the Groceries list is the trap)."""
    lists = seed_todo(w)
    shop = SHOP_LISTS[w.index % len(SHOP_LISTS)]
    rec = {"id": w.next_id("todo.lists", "tl_"), "name": shop, "created": w.ts(w.rng.randrange(3000, 9000))}
    w.table("todo.lists").append(rec)
    item = NEW_ITEMS["Groceries"][w.index % len(NEW_ITEMS["Groceries"])]
    book = MemoryBook()
    book.add(
        "fact",
        w.rng.choice(
            [f'We keep the shopping on the shared "{shop}" to-do list; the old Groceries list is not used any more',
             f'Shopping goes on my "{shop}" list, which my family shares (not on Groceries)']
        ),
        ago(w, w.rng.randrange(10, 400)),
    )  # fmt: skip
    book.add("fact", 'Work tasks go on the "Work" list', ago(w, w.rng.randrange(10, 400)))
    book.distract(w, 3, skip=("shopping",))
    goal = [f'Add "{item}" to my shopping list.', f'Put "{item}" on the shopping list.',
            f'Can you add "{item}" to the list I use for shopping?'][w.index % 3]  # fmt: skip
    plan = [
        call("memory.search", query="shopping list"),
        call("todo.list_lists"),
        call("todo.add_item", list_id=rec["id"], title=item),
        call("finish", answer=f"Added to {shop}."),
    ]
    return with_memory(
        w,
        book,
        goal=goal,
        criteria=[state("todo.items", "created", list_id=rec["id"], title={"icontains": item}, done=False)],
        milestones=[memory_searched("shop", "list", "grocer")],
        plan=plan,
        probes=[
            passes(
                "capitalised", replacing(plan, 2, call("todo.add_item", list_id=rec["id"], title=item.capitalize()))
            ),
            fails(
                "on the Groceries list",
                replacing(plan, 2, call("todo.add_item", list_id=lists["Groceries"]["id"], title=item)),
            ),
            fails(
                "on both lists",
                replacing(plan, 2, plan[2], call("todo.add_item", list_id=lists["Groceries"]["id"], title=item)),
            ),
        ],
    )


OCCASIONS = ["when I go running", "for dinner parties", "when I need to concentrate"]


@template(
    "memory.running_playlist",
    apps=["music"],
    domain=Domain.ENTERTAINMENT,
    category=MEMORY,
    difficulty=2,
    capabilities=["memory", "lookup"],
    count=12,
)
def running_playlist(w: World) -> Draft:
    """Template ``memory.running_playlist``: "Put on my running music." where memories say which
    playlist goes with running and which with other occasions (names that do not give it away)."""
    music = seed_music(w)
    # "Morning run" sounds like running: it is never the one (a guess from the names fails), and
    # it goes with another occasion.
    decoy = next(p for p in music["playlists"] if p["name"] == "Morning run")
    rest = [p for p in music["playlists"] if p is not decoy]
    pick_i, wording = pick(w, [0, 1], list(range(6)))
    shuffled = [rest[pick_i], decoy, rest[1 - pick_i]]
    book = MemoryBook()
    for occasion, pl in zip(OCCASIONS, shuffled, strict=True):
        book.add("preference", f'I play the "{pl["name"]}" playlist {occasion}', ago(w, w.rng.randrange(10, 600)))
    book.distract(w, 2)
    target, other = shuffled[0], shuffled[1]
    goal = [
        "I'm heading out for a run - put on my running music.",
        "Start my usual running playlist, please.",
        "Going for a jog now. Play the playlist I run to.",
        "Put on the music I usually run to.",
        "Time for my run: play my running playlist.",
        "I'm about to go jogging, start my running music please.",
    ][wording]
    plan = [
        call("memory.search", query="running playlist"),
        call("music.list_playlists"),
        call("music.play", playlist_id=target["id"]),
        call("finish", answer=f'Playing "{target["name"]}".'),
    ]
    return with_memory(
        w,
        book,
        goal=goal,
        criteria=[state("music.player", "updated", id="now", playlist_id=target["id"], playing=True)],
        milestones=[memory_searched("run", "jog", "playlist")],
        plan=plan,
        probes=[
            passes("opened it first", [*plan[:2], call("music.get_playlist", playlist_id=target["id"]), *plan[2:]]),
            fails("the playlist named for running", replacing(plan, 2, call("music.play", playlist_id=other["id"]))),
            fails(
                "only its first song",
                replacing(plan, 2, call("music.play", song_id=target["song_ids"][0])),
            ),
            fails("played, then paused", replacing(plan, 2, plan[2], call("music.pause"))),
        ],
    )


RELS = ["partner", "sister", "brother", "neighbour", "coworker", "best friend"]


@template(
    "memory.tag_partner",
    apps=["gallery", "contacts"],
    domain=Domain.ENTERTAINMENT,
    category=MEMORY,
    difficulty=3,
    capabilities=["memory", "lookup", "update", "multi-entity"],
    count=12,
)
def tag_partner(w: World) -> Draft:
    """Template ``memory.tag_partner``: "Tag my partner in the photos from the Harbour on Sunday 8
    November - they're in all of them." where only a memory says who the partner is."""
    forget_relations(w)
    outing = outing_of(w)
    shots = photos_of(outing)
    tagged_all = {n for n in shots[0]["people"] if all(n in p["people"] for p in shots)}
    pool = [c for c in w.contacts if c["name"] not in tagged_all]
    partner, other = w.rng.sample(pool, 2)
    (rel,) = pick(w, ["partner", "husband", "wife", "boyfriend", "girlfriend", "fiance"])
    book = MemoryBook()
    book.add("fact", f"{partner['name']} is my {rel}", ago(w, w.rng.randrange(100, 900)))
    book.add("fact", f"{other['name']} is my {w.rng.choice(['neighbour', 'coworker', 'best friend'])}", ago(w, 50))
    book.distract(w, 3)
    day, place = outing["day"], outing["place"]
    goal = w.rng.choice(
        [f"Tag my {rel} in the photos from the {place} on {day_words(day)} - they're in all of them.",
         f"My {rel} is in every photo from {day_words(day)} at the {place}; tag them, please."]
    )  # fmt: skip
    plan: list[Any] = [
        call("memory.search", query=f"who is my {rel}"),
        call("gallery.list_photos", date_from=day.isoformat(), date_to=day.isoformat(), kind="photo"),
    ]
    criteria: list[Criterion] = []
    for p in shots:
        if partner["name"] in p["people"]:
            criteria.append(
                suffixed(state("gallery.photos", "present", id=p["id"], people={"has": partner["name"]}), p["id"])
            )
        else:
            plan.append(call("gallery.tag_person", photo_id=p["id"], name=partner["name"]))
            criteria.append(
                suffixed(state("gallery.photos", "updated", id=p["id"], people={"has": partner["name"]}), p["id"])
            )
    plan.append(call("finish", answer=f"Tagged {first_name(partner)}."))
    first_tag = 2
    return with_memory(
        w,
        book,
        goal=goal,
        criteria=criteria,
        milestones=[memory_searched(rel)],
        plan=plan,
        probes=[
            passes("listed by place", replacing(plan, 1, call("gallery.list_photos", place=place))),
            fails(
                "tagged the other person",
                [*plan[:2], *(call("gallery.tag_person", photo_id=p["id"], name=other["name"]) for p in shots), plan[-1]],
            ),
            fails("one photo missed", replacing(plan, first_tag)),
            fails(
                "another item tagged too",
                [*plan[:-1], call("gallery.tag_person", photo_id=_video_or_home(w, outing), name=partner["name"]), plan[-1]],
            ),
        ],
    )  # fmt: skip


def _video_or_home(w: World, outing: dict[str, Any]) -> str:
    """A gallery item that is not a photo of ``outing``: its video, else a photo taken at home."""
    for p in outing["photos"]:
        if p["kind"] == "video":
            return p["id"]
    return next(p["id"] for p in w.table("gallery.photos") if p["place"] == "home")
