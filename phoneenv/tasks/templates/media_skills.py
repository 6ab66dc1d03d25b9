"""Skills templates for the gallery, music and to-do apps: the procedure lives only in a shipped
skill (``apps/<app>/skills/<name>/SKILL.md``), the goal only names it.

| template | skill | the rule the goal does not state |
|---|---|---|
| ``skills.share_photos`` | ``share-photos`` | one text with the photos and the caption ``Photos from <place>, <day> <Month>``; the photos filed in the album ``Shared with <first name>`` (created once) |
| ``skills.tidy_podcasts`` | ``tidy-podcasts`` | for followed podcasts only: played downloads removed, the newest unplayed episode downloaded |
| ``skills.weekly_review`` | ``weekly-review`` | done items cleared after asking; overdue items moved to tomorrow, same time, with an 08:00 reminder |
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.gallery.templates import album_criteria, outing_of, photos_of, sent_photos
from phoneenv.contract import Category, Criterion, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    behavior,
    call,
    fails,
    first_name,
    passes,
    pick,
    plain_texts_to,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.templates.media_world import MONTHS, day_words, seed_music, seed_todo
from phoneenv.tasks.templates.skills import read_skill
from phoneenv.tasks.world import World

__all__ = ["COUNT", "caption", "shared_album"]

SKILLS = Category.SKILLS
COUNT = 14
"""Tasks per template here (3 templates: 42 tasks)."""


def caption(place: str, day: dt.date) -> str:
    """The text of a photo share (skill ``share-photos``): ``Photos from Old Town, 14 November``."""
    return f"Photos from {place}, {day.day} {MONTHS[day.month - 1]}"


def shared_album(c: dict[str, Any]) -> str:
    """The album a share with ``c`` is filed in (skill ``share-photos``): ``Shared with Ana``."""
    return f"Shared with {first_name(c)}"


@template(
    "skills.share_photos",
    apps=["gallery", "contacts", "messages"],
    domain=Domain.ENTERTAINMENT,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "lookup", "send", "create", "format"],
    count=COUNT,
    max_steps=25,
)
def share_photos(w: World) -> Draft:
    """Template ``skills.share_photos``, e.g. "Share the photos from the Harbour on Sunday 8
    November with Ana Lima.": the caption and the per-person album come from the skill."""
    outing = outing_of(w)
    day, place = outing["day"], outing["place"]
    ids = [p["id"] for p in photos_of(outing)]
    (exists,) = pick(w, [False, True])
    c = w.rng.choice(w.contacts)
    album = shared_album(c)
    albums = w.table("gallery.albums")
    old: list[str] = []
    if exists:
        home = [p["id"] for p in w.table("gallery.photos") if p["place"] == "home"]
        old = home[:1]
        albums.append(
            {"id": w.next_id("gallery.albums", "alb_"), "name": album, "photo_ids": tuple(old), "created": w.ts(30000)}
        )
        alb_id = albums[-1]["id"]
    else:
        alb_id = w.next_id("gallery.albums", "alb_")
    goal = w.rng.choice(
        [f"Share the photos from the {place} on {day_words(day)} with {c['name']}.",
         f"Please share my {place} photos from {day_words(day)} with {first_name(c)}."]
    )  # fmt: skip
    text = caption(place, day)
    read, read_ms = read_skill("share-photos")
    plan = [
        read,
        call("gallery.list_photos", date_from=day.isoformat(), date_to=day.isoformat(), kind="photo"),
        call("contacts.search", query=c["name"]),
        call("messages.send_photos", to=c["phone"], photo_ids=ids, body=text),
        call("gallery.list_albums"),
        call("gallery.add_to_album", album_id=alb_id, photo_ids=ids)
        if exists
        else call("gallery.create_album", name=album, photo_ids=ids),
        call("finish", answer=f"Shared {len(ids)} photos with {first_name(c)}."),
    ]
    if exists:
        alb: list[Criterion] = [
            state("gallery.albums", "updated", id=alb_id, photo_ids={"len": len(ids) + len(old)}),
            *(suffixed(state("gallery.albums", "updated", id=alb_id, photo_ids={"has": i}), i) for i in ids),
        ]
    else:
        alb = album_criteria(album, ids)
    criteria = [*sent_photos(c, ids, body={"iequals": text}), *alb]
    probes = [
        passes("album first", [plan[0], plan[1], plan[4], plan[5], plan[2], plan[3], plan[6]]),
        fails("no album", replacing(plan, 5)),
        fails(
            "a caption of its own",
            replacing(plan, 3, call("messages.send_photos", to=c["phone"], photo_ids=ids, body=f"Pics from {place}!")),
        ),
        fails(
            "one message per photo",
            replacing(plan, 3, *(call("messages.send_photos", to=c["phone"], photo_ids=[i], body=text) for i in ids)),
        ),
    ]
    if not exists:
        probes.append(
            fails(
                "album named after the place",
                replacing(plan, 5, call("gallery.create_album", name=f"{place} photos", photo_ids=ids)),
            )
        )
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[read_ms, state("messages.messages", "created", number={"person": c["id"]})],
        plan=plan,
        probes=probes,
        allowed_changes=plain_texts_to(c),
    )


@template(
    "skills.tidy_podcasts",
    apps=["music"],
    domain=Domain.ENTERTAINMENT,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "lookup", "update", "multi-entity"],
    count=COUNT,
    max_steps=30,
)
def tidy_podcasts(w: World) -> Draft:
    """Template ``skills.tidy_podcasts``, e.g. "Tidy up my podcasts.": which downloads go and
    which come is the skill's rule; podcasts not followed are a trap."""
    seed_music(w)
    pods = w.table("music.podcasts")
    eps = w.table("music.episodes")
    followed = set(w.rng.sample(range(len(pods)), w.rng.choice([1, 2])))
    for k in range(len(pods)):
        pods[k] = {**pods[k], "subscribed": k in followed}

    def newest_first(pid: str) -> list[int]:
        idx = [i for i, e in enumerate(eps) if e["podcast_id"] == pid]
        return sorted(idx, key=lambda i: eps[i]["published"], reverse=True)

    # Every podcast (followed or not) has a played download among its older episodes.
    for p in pods:
        i = newest_first(p["id"])[w.rng.randrange(2, 5)]
        eps[i] = {**eps[i], "played": True, "downloaded": True}
    read, read_ms = read_skill("tidy-podcasts")
    plan: list[ToolCall] = [read, call("music.list_podcasts", subscribed_only=True)]
    criteria: list[Criterion] = []
    removals: list[ToolCall] = []
    downloads: list[ToolCall] = []
    spare: list[str] = []
    for k in sorted(followed):
        p = pods[k]
        plan.append(call("music.list_episodes", podcast_id=p["id"]))
        order = newest_first(p["id"])
        for i in order:
            e = eps[i]
            if e["played"] and e["downloaded"]:
                step = call("music.download_episode", episode_id=e["id"], downloaded=False)
                plan.append(step)
                removals.append(step)
                criteria.append(suffixed(state("music.episodes", "updated", id=e["id"], downloaded=False), e["id"]))
        unplayed = [eps[i] for i in order if not eps[i]["played"]]
        if unplayed and not unplayed[0]["downloaded"]:
            step = call("music.download_episode", episode_id=unplayed[0]["id"], downloaded=True)
            plan.append(step)
            downloads.append(step)
            criteria.append(
                suffixed(state("music.episodes", "updated", id=unplayed[0]["id"], downloaded=True), unplayed[0]["id"])
            )
        spare += [e["id"] for e in unplayed[1:] if not e["downloaded"]]
    plan.append(call("finish", answer="Tidied your podcasts."))
    trap_pod = next(p for k, p in enumerate(pods) if k not in followed)
    trap = next(eps[i] for i in newest_first(trap_pod["id"]) if eps[i]["played"] and eps[i]["downloaded"])
    ask, why = pick(
        w,
        ["Tidy up my podcasts", "Could you tidy up my podcast downloads", "My podcasts need a tidy-up"],
        ["", " - the phone is nearly full", " before my trip", " for the week ahead", " for my commute"],
    )
    goal = f"{ask}{why}{'?' if ask.startswith('Could') else '.'}"
    probes = [
        passes("listed every podcast", replacing(plan, 1, call("music.list_podcasts"))),
        fails(
            "an unfollowed podcast tidied too",
            [*plan[:-1], call("music.download_episode", episode_id=trap["id"], downloaded=False), plan[-1]],
        ),
        fails("played downloads kept", [s for s in plan if s not in removals]),
    ]
    if spare:
        probes.append(
            fails(
                "every unplayed episode downloaded",
                [*plan[:-1], call("music.download_episode", episode_id=spare[0]), plan[-1]],
            )
        )
    if downloads:
        probes.append(fails("nothing new downloaded", [s for s in plan if s not in downloads]))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[
            read_ms,
            behavior("required_call", "music.list_episodes", arguments={"podcast_id": pods[min(followed)]["id"]}),
        ],
        plan=plan,
        probes=probes,
    )


@template(
    "skills.weekly_review",
    apps=["todo"],
    domain=Domain.NOTES,
    category=SKILLS,
    difficulty=3,
    capabilities=["skill", "lookup", "update", "delete", "confirm", "time"],
    count=COUNT,
    max_steps=30,
)
def weekly_review(w: World) -> Draft:
    """Template ``skills.weekly_review``, e.g. "Do the weekly review of my Home list.": clear the
    done items after asking, move overdue ones to tomorrow at the same time with an 08:00 reminder."""
    lists = seed_todo(w)
    name, wording = pick(w, sorted(lists), [0, 1, 2, 3])
    lst = lists[name]
    items = w.table("todo.items")
    now = w.now
    mine = [i for i in items if i["list_id"] == lst["id"]]

    def add(title: str, due: str | None, done: bool) -> None:
        rec = {
            "id": w.next_id("todo.items", "ti_"),
            "list_id": lst["id"],
            "title": title,
            "due": due,
            "reminder": None,
            "done": done,
            "completed": w.ts(200) if done else None,
            "created": w.ts(w.rng.randrange(3000, 9000)),
        }
        items.append(rec)
        mine.append(rec)

    extra = iter(["tidy the desk", "sort the receipts", "back up the laptop", "order new filters"])
    if not any(i["done"] for i in mine):
        add(next(extra), None, True)
    if not any(not i["done"] and i["due"] and i["due"] < now.isoformat(timespec="minutes") for i in mine):
        back = now - dt.timedelta(days=w.rng.randrange(1, 4))
        add(next(extra), back.replace(hour=w.rng.choice([9, 12, 18]), minute=0).isoformat(timespec="minutes"), False)
    if w.rng.random() < 0.5 and all(i["due"] is None or i["done"] for i in mine):  # an item due later: untouched
        add(next(extra), (now + dt.timedelta(days=2)).replace(minute=0).isoformat(timespec="minutes"), False)
    tomorrow = now.date() + dt.timedelta(days=1)
    overdue = [i for i in mine if not i["done"] and i["due"] and i["due"] < now.isoformat(timespec="minutes")]
    done = [i for i in mine if i["done"]]
    remind = f"{tomorrow.isoformat()}T08:00"
    read, read_ms = read_skill("weekly-review")
    plan: list[ToolCall] = [
        read,
        call("todo.list_lists"),
        call("todo.list_items", list_id=lst["id"]),
        call("user.confirm", question=f"Clear the done items from {name}?"),
        call("todo.clear_completed", list_id=lst["id"]),
    ]
    criteria: list[Criterion] = [suffixed(state("todo.items", "deleted", id=i["id"]), i["id"]) for i in done]
    criteria.append(behavior("confirm_before", "todo.clear_completed"))
    moves: list[ToolCall] = []
    reminders: list[ToolCall] = []
    for i in overdue:
        due = f"{tomorrow.isoformat()}T{i['due'][11:16]}"
        moves.append(call("todo.update_item", item_id=i["id"], due=due))
        reminders.append(call("todo.set_reminder", item_id=i["id"], at=remind))
        plan += [moves[-1], reminders[-1]]
        criteria.append(
            suffixed(state("todo.items", "updated", id=i["id"], due=due, reminder=remind, done=False), i["id"])
        )
    plan.append(call("finish", answer="Review done."))
    first = overdue[0]
    week = (dt.datetime.fromisoformat(first["due"]) + dt.timedelta(days=7)).isoformat(timespec="minutes")
    goal = [f"Do the weekly review of my {name} list.", f"Time for the weekly review of {name}, please.",
            f"Run my weekly to-do review on the {name} list.",
            f"Could you do the weekly review of the {name} list?"][wording]  # fmt: skip
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[read_ms, behavior("required_call", "todo.list_items", arguments={"list_id": lst["id"]})],
        plan=plan,
        probes=[
            passes("rescheduled before clearing", [*plan[:3], *[s for s in plan[5:-1]], plan[3], plan[4], plan[-1]]),
            fails("cleared without asking", replacing(plan, 3)),
            fails("no reminders", [s for s in plan if s not in reminders]),
            fails(
                "moved a week on",
                [s if s is not moves[0] else call("todo.update_item", item_id=first["id"], due=week) for s in plan],
            ),
            fails("done items kept", [s for s in plan if s.name not in ("user.confirm", "todo.clear_completed")]),
        ],
    )
