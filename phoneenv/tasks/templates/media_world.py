"""Seeding for the to-do, gallery and music apps: rows drawn from each app's own stream of a
:class:`~phoneenv.tasks.world.World`, in its time zone and with its contacts' names.

- :func:`seed_todo`: lists (Groceries, Home, Work, Errands) with open and done items;
- :func:`seed_gallery`: outings (a day at one place, 2-4 photos, contacts tagged) over the last
  three weeks, a video or two, and an album;
- :func:`seed_music`: a library of fictional artists, three playlists, podcasts with weekly
  episodes (some followed, played, downloaded).

Each helper is idempotent per world (a second call returns the rows already seeded).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from phoneenv.tasks.world import World

__all__ = [
    "ARTISTS",
    "MONTHS",
    "PLACES",
    "PODCASTS",
    "TODO_LISTS",
    "day_words",
    "seed_gallery",
    "seed_music",
    "seed_todo",
]

TODO_LISTS = {
    "Groceries": ["milk", "eggs", "bread", "coffee", "apples", "rice", "cheese", "tomatoes", "butter"],
    "Home": ["fix the shelf", "water the plants", "change the bed sheets", "descale the kettle", "clean the oven"],
    "Work": ["send the slides", "book the meeting room", "update the roadmap", "review the budget"],
    "Errands": ["post the parcel", "pick up dry cleaning", "return library books", "renew the parking permit"],
}
"""Seeded lists and the items they may hold."""

PLACES = ["Old Town", "Botanical Garden", "Lakeside Park", "City Zoo", "Harbour", "Riverside Market",
          "Castle Hill", "Science Museum"]  # fmt: skip
"""Places of seeded outings (each world uses a few, one outing per place)."""

ARTISTS = [
    ("The Lanterns", "Night Ferry", ["Harbour Lights", "Paper Moon", "Last Tram", "Salt and Honey"]),
    ("Mira Vale", "Glasshouse", ["Open Window", "Copper Sky", "Slow Rivers", "Blue Hour"]),
    ("Northbound", "Tundra Radio", ["Cold Engines", "Aurora Line", "Static Hearts", "Wolf Pass"]),
    ("Kofi and the Tides", "Low Tide Club", ["Sunday Swell", "Coral Steps", "Driftwood", "Night Swim"]),
    ("Sora Quartet", "Four Rooms", ["Kitchen Waltz", "Attic Rain", "Cellar Blues", "Hallway Song"]),
    ("Juniper Road", "Dust and Gold", ["Prairie Letter", "Rusty Gate", "Long Way Home", "Canyon Echo"]),
]
"""Fictional artists: (artist, album, song titles)."""

PLAYLISTS = ["Morning run", "Dinner jazz", "Focus"]

PODCASTS = [
    ("City Stories", "Metro Audio", ["The old harbour", "Tram lines", "Lost cinemas", "Market days", "Bridges"]),
    ("Kitchen Table", "Home Radio", ["Sourdough basics", "One-pot dinners", "Spices 101", "Breakfast ideas",
                                      "Soups for winter"]),
    ("Deep Field", "Science Hour", ["Black holes", "Tiny worlds", "Ocean floor", "The first stars", "Ice ages"]),
    ("Money Matters", "Plain Finance", ["Budgeting", "Saving for a home", "Index funds", "Taxes made easy",
                                        "Side jobs"]),
    ("Game Night", "Board Talk", ["Strategy games", "Party games", "Classic chess", "Cooperative play",
                                  "Card games"]),
    ("Trail Talk", "Outdoor Co", ["First hike", "Camping gear", "Mountain safety", "Night skies", "Trail food"]),
]  # fmt: skip
"""Podcasts: (title, publisher, episode titles newest last)."""

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def day_words(day: dt.date) -> str:
    """``Saturday 14 November``."""
    return f"{WEEKDAYS[day.weekday()]} {day.day} {MONTHS[day.month - 1]}"


def _stamp(day: dt.date, hour: int, minute: int) -> str:
    return dt.datetime.combine(day, dt.time(hour, minute)).isoformat(timespec="seconds")


def seed_todo(w: World) -> dict[str, dict[str, Any]]:
    """Seed ``todo.lists`` and ``todo.items`` (once per world); returns list name → list record."""
    if w.records.get("todo.lists"):
        return {r["name"]: r for r in w.records["todo.lists"]}
    rng = w.stream("todo")
    lists, items = w.table("todo.lists"), w.table("todo.items")
    out = {}
    for i, name in enumerate(TODO_LISTS):
        rec = {"id": f"tl_{i + 1}", "name": name, "created": w.ts(rng.randrange(20000, 60000))}
        lists.append(rec)
        out[name] = rec
        for title in rng.sample(TODO_LISTS[name], 3):
            done = rng.random() < 0.35
            due = None
            if rng.random() < 0.6:
                day = w.now.date() + dt.timedelta(days=rng.randrange(-2, 8))
                due = dt.datetime.combine(day, dt.time(rng.choice([9, 12, 18, 23]), 0 if rng.random() < 0.8 else 30))
                due = due.replace(minute=59) if due.hour == 23 else due
            items.append(
                {
                    "id": f"ti_{len(items) + 1}",
                    "list_id": rec["id"],
                    "title": title,
                    "due": due.isoformat(timespec="minutes") if due else None,
                    "reminder": None,
                    "done": done,
                    "completed": w.ts(rng.randrange(60, 3000)) if done else None,
                    "created": w.ts(rng.randrange(3000, 20000)),
                }
            )
    return out


def seed_gallery(w: World) -> list[dict[str, Any]]:
    """Seed ``gallery.photos`` and ``gallery.albums`` (once per world); returns the outings:
    ``{"day": date, "place": str, "people": [contact, ...], "photos": [record, ...]}``, oldest first."""
    if "_outings" in w.__dict__:
        return w.__dict__["_outings"]
    rng = w.stream("gallery")
    photos = w.table("gallery.photos")
    outings: list[dict[str, Any]] = []
    days = sorted(rng.sample(range(1, 22), 4), reverse=True)
    for place, back in zip(rng.sample(PLACES, 4), days, strict=True):
        day = w.now.date() - dt.timedelta(days=back)
        people = rng.sample(w.contacts, rng.randrange(1, 3))
        shots = []
        hour, minute = rng.randrange(10, 16), rng.randrange(60)
        for _ in range(rng.randrange(2, 5)):
            minute += rng.randrange(3, 40)
            tagged = [p["name"] for p in people if rng.random() < 0.7] or [people[0]["name"]]
            rec = {
                "id": f"ph_{len(photos) + 1}",
                "kind": "photo",
                "taken": _stamp(day, hour + minute // 60, minute % 60),
                "place": place,
                "people": tuple(tagged),
                "favorite": rng.random() < 0.2,
                "duration_s": None,
            }
            photos.append(rec)
            shots.append(rec)
        if rng.random() < 0.5:
            minute += rng.randrange(3, 30)
            rec = {
                "id": f"ph_{len(photos) + 1}",
                "kind": "video",
                "taken": _stamp(day, hour + minute // 60, minute % 60),
                "place": place,
                "people": (),
                "favorite": False,
                "duration_s": rng.randrange(8, 120),
            }
            photos.append(rec)
            shots.append(rec)
        outings.append({"day": day, "place": place, "people": people, "photos": shots})
    # A few photos at home, nobody tagged.
    for _ in range(2):
        day = w.now.date() - dt.timedelta(days=rng.randrange(1, 22))  # evenings before today's
        photos.append(
            {
                "id": f"ph_{len(photos) + 1}",
                "kind": "photo",
                "taken": _stamp(day, rng.randrange(18, 22), rng.randrange(60)),
                "place": "home",
                "people": (),
                "favorite": False,
                "duration_s": None,
            }
        )
    first = outings[0]
    w.table("gallery.albums").append(
        {
            "id": "alb_1",
            "name": f"{first['place']} day",
            "photo_ids": tuple(p["id"] for p in first["photos"] if p["kind"] == "photo"),
            "created": _stamp(first["day"], 21, 0),
        }
    )
    w.__dict__["_outings"] = outings
    return outings


def seed_music(w: World) -> dict[str, Any]:
    """Seed the music tables (once per world); returns ``{"songs": [...], "playlists": [...],
    "podcasts": [...], "episodes": {podcast_id: [episode, ... newest first]}}``."""
    if "_music" in w.__dict__:
        return w.__dict__["_music"]
    rng = w.stream("music")
    songs = w.table("music.songs")
    for artist, album, titles in ARTISTS:
        for title in titles:
            songs.append(
                {
                    "id": f"s_{len(songs) + 1}",
                    "title": title,
                    "artist": artist,
                    "album": album,
                    "duration_s": rng.randrange(150, 330),
                    "liked": rng.random() < 0.25,
                }
            )
    playlists = w.table("music.playlists")
    for name in PLAYLISTS:
        playlists.append(
            {
                "id": f"pl_{len(playlists) + 1}",
                "name": name,
                "song_ids": tuple(s["id"] for s in rng.sample(songs, rng.randrange(3, 6))),
                "created": w.ts(rng.randrange(5000, 50000)),
            }
        )
    pods, eps = w.table("music.podcasts"), w.table("music.episodes")
    by_pod: dict[str, list[dict[str, Any]]] = {}
    for i, (title, publisher, titles) in enumerate(PODCASTS):
        pid = f"pod_{i + 1}"
        pods.append({"id": pid, "title": title, "publisher": publisher, "subscribed": rng.random() < 0.5})
        last = w.now.date() - dt.timedelta(days=rng.randrange(0, 7))
        mine = []
        for k, ep in enumerate(reversed(titles)):
            mine.append(
                {
                    "id": f"ep_{len(eps) + 1}",
                    "podcast_id": pid,
                    "title": ep,
                    "published": (last - dt.timedelta(days=7 * k)).isoformat(),
                    "duration_s": rng.randrange(20, 70) * 60,
                    "played": k >= 2 and rng.random() < 0.6,
                    "downloaded": k >= 1 and rng.random() < 0.3,
                }
            )
            eps.append(mine[-1])
        by_pod[pid] = mine
    w.table("music.player")
    out = {"songs": songs, "playlists": playlists, "podcasts": pods, "episodes": by_pod}
    w.__dict__["_music"] = out
    return out
