"""To-do, camera, gallery and music templates: facts checked against the fixtures by hand, and for
the skills templates a plan built here from the goal and the fixture records alone that follows
the skill as its SKILL.md words it (must succeed) and a naive one (must fail). The skills plans
are registered with ``tests/test_templates_skills.py``, which plays them beside the others."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from phoneenv.contract import TaskSpec
from phoneenv.tasks import select
from tests.criteria import goal_criteria

Steps = list[tuple[str, dict[str, Any]]]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip


def rows(t: TaskSpec, table: str) -> list[dict[str, Any]]:
    return t.fixtures.records.get(table, [])


# -- skills: a plan from the SKILL.md, and a naive one -------------------------------------------


def share_photos(t: TaskSpec, skill: bool) -> Steps:
    m = re.search(
        r"(?:from the|my) (?P<place>.+?) (?:on|photos from) \w+day (?P<day>\d+) (?P<month>[A-Z][a-z]+)", t.goal
    )
    assert m, t.goal
    place = m["place"]
    (c,) = [c for c in rows(t, "contacts.contacts") if re.search(rf"\b{c['name'].split()[0]}\b", t.goal)]
    photos = sorted(
        (p for p in rows(t, "gallery.photos") if p["place"] == place and p["kind"] == "photo"), key=lambda p: p["taken"]
    )
    ids = [p["id"] for p in photos]
    if not skill:
        return [("messages.send_photos", {"to": c["phone"], "photo_ids": ids, "body": f"Here are the {place} photos!"})]
    first = c["name"].split()[0]
    body = f"Photos from {place}, {int(m['day'])} {m['month']}"
    album = next((a for a in rows(t, "gallery.albums") if a["name"] == f"Shared with {first}"), None)
    file = (
        ("gallery.add_to_album", {"album_id": album["id"], "photo_ids": ids})
        if album
        else ("gallery.create_album", {"name": f"Shared with {first}", "photo_ids": ids})
    )
    return [("messages.send_photos", {"to": c["phone"], "photo_ids": ids, "body": body}), file]


def tidy_podcasts(t: TaskSpec, skill: bool) -> Steps:
    pods = [p for p in rows(t, "music.podcasts") if p["subscribed"] or not skill]
    steps: Steps = []
    for p in pods:
        eps = sorted((e for e in rows(t, "music.episodes") if e["podcast_id"] == p["id"]), key=lambda e: e["published"])
        eps.reverse()
        steps += [
            ("music.download_episode", {"episode_id": e["id"], "downloaded": False})
            for e in eps
            if e["played"] and e["downloaded"]
        ]
        unplayed = [e for e in eps if not e["played"]]
        if skill and unplayed and not unplayed[0]["downloaded"]:
            steps.append(("music.download_episode", {"episode_id": unplayed[0]["id"], "downloaded": True}))
    return steps  # naive: every podcast's played downloads removed, followed or not


def weekly_review(t: TaskSpec, skill: bool) -> Steps:
    m = re.search(r"(?:of|on) (?:my |the )?(?P<name>[A-Z][a-z]+)(?: list)?[.,?]", t.goal)
    assert m, t.goal
    (lst,) = [x for x in rows(t, "todo.lists") if x["name"] == m["name"]]
    now = dt.datetime.fromisoformat(t.fixtures.clock)
    tomorrow = (now + dt.timedelta(days=1)).date().isoformat()
    if not skill:  # clears at once, reschedules nothing
        return [("todo.clear_completed", {"list_id": lst["id"]})]
    steps: Steps = [
        ("user.confirm", {"question": f"Clear the done items from {lst['name']}?"}),
        ("todo.clear_completed", {"list_id": lst["id"]}),
    ]
    for i in rows(t, "todo.items"):
        if i["list_id"] == lst["id"] and not i["done"] and i["due"] and dt.datetime.fromisoformat(i["due"]) < now:
            steps += [
                ("todo.update_item", {"item_id": i["id"], "due": f"{tomorrow}T{i['due'][11:16]}"}),
                ("todo.set_reminder", {"item_id": i["id"], "at": f"{tomorrow}T08:00"}),
            ]
    return steps


SKILL_TEMPLATES = {
    "skills.share_photos": "share-photos",
    "skills.tidy_podcasts": "tidy-podcasts",
    "skills.weekly_review": "weekly-review",
}
SKILL_MARKERS = {
    "skills.share_photos": ["Photos from <place>", "Shared with <first name>"],
    "skills.tidy_podcasts": ['"downloaded": false', "newest episode that is not played"],
    "skills.weekly_review": ["08:00 tomorrow", "same time of day"],
}
SKILL_PLANS = {
    "skills.share_photos": share_photos,
    "skills.tidy_podcasts": tidy_podcasts,
    "skills.weekly_review": weekly_review,
}
SKILL_NAIVE_BREAKS: dict[str, set[str] | None] = {
    "skills.share_photos": None,  # the caption's and the album's criteria
    "skills.tidy_podcasts": None,  # the newest unplayed downloads (and collateral on the others)
    "skills.weekly_review": {"confirm_before:todo.clear_completed"},
}


# -- facts worked out from the fixtures ----------------------------------------------------------


def test_a_photo_is_taken_where_the_fixture_puts_the_phone() -> None:
    for t in select("template:camera.photo_to_contact"):
        (crit,) = [c for c in goal_criteria(t) if c.kind == "state" and c.table == "gallery.photos"]
        assert crit.where["place"] == t.fixtures.location["label"], t.id
        # one new photo, named by what it is, not by the id the camera will give it
        assert "id" not in crit.where and crit.count == 1 and crit.where["kind"] == "photo", t.id
        locked = t.fixtures.permissions.get("camera", {}).get("android.permission.CAMERA") is False
        assert locked == any(s.name == "system.request_permission" for s in t.reference_plan), t.id


def test_an_album_holds_that_days_photos_and_no_video() -> None:
    for t in select("template:gallery.album_from_outing"):
        goal = re.sub(r'"[^"]*"', "", t.goal)  # the album's name may hold "at the ..."
        m = re.search(r"(?:from|at) the (?P<place>.+?) on \w+day (?P<day>\d+) ", goal)
        assert m, t.goal
        want = {p["id"] for p in rows(t, "gallery.photos") if p["place"] == m["place"] and p["kind"] == "photo"}
        days = {p["taken"][:10] for p in rows(t, "gallery.photos") if p["id"] in want}
        assert len(days) == 1 and int(days.pop()[8:]) == int(m["day"]), t.id
        has = {c.where["photo_ids"]["has"] for c in goal_criteria(t) if "has" in c.where.get("photo_ids", {})}
        assert has == want, t.id
        (size,) = [c.where["photo_ids"]["len"] for c in goal_criteria(t) if "len" in c.where.get("photo_ids", {})]
        assert size == len(want), t.id


def test_each_tagged_person_gets_exactly_their_photos() -> None:
    for name in ("gallery.share_with_tagged", "subagent.photos_to_tagged"):
        for t in select(f"template:{name}"):
            contacts = {c["id"]: c for c in rows(t, "contacts.contacts")}
            got: dict[str, set[str]] = {}
            for c in goal_criteria(t):
                if c.kind == "state" and c.table == "messages.messages" and "has" in c.where.get("attachments", {}):
                    got.setdefault(c.where["number"]["person"], set()).add(c.where["attachments"]["has"])
            for cid, ids in got.items():
                person = contacts[cid]["name"]
                assert all(person in p["people"] for p in rows(t, "gallery.photos") if p["id"] in ids), t.id
            assert got, t.id


def test_the_running_playlist_is_never_the_one_named_for_running() -> None:
    for t in select("template:memory.running_playlist"):
        (crit,) = goal_criteria(t)
        names = {p["id"]: p["name"] for p in rows(t, "music.playlists")}
        assert names[crit.where["playlist_id"]] != "Morning run", t.id
        running = [m.content for m in t.fixtures.memory if "running" in m.content]
        assert running == [f'I play the "{names[crit.where["playlist_id"]]}" playlist when I go running'], t.id


def test_todo_requests_become_items_on_errands() -> None:
    for t in select("template:subagent.todo_from_texts"):
        errands = next(x["id"] for x in rows(t, "todo.lists") if x["name"] == "Errands")
        unread = [m for m in rows(t, "messages.messages") if m["direction"] == "in" and not m["read"]]
        items = [c for c in goal_criteria(t) if c.kind == "state"]
        assert len(unread) == len(items) + 1, t.id  # one text is chatter
        assert all(c.where["list_id"] == errands for c in items), t.id


# -- memory: what only memory may tell (registered with tests/test_templates_memory.py) -----------


def _list_name(t: TaskSpec, list_id: str) -> str:
    return next(x["name"] for x in rows(t, "todo.lists") if x["id"] == list_id)


def _playlist_name(t: TaskSpec, playlist_id: str) -> str:
    return next(x["name"] for x in rows(t, "music.playlists") if x["id"] == playlist_id)


MEMORY_SECRETS = {
    "memory.favorite_podcast": lambda t: [t.reference_plan[1].arguments["query"]],  # the podcast's title
    "memory.usual_list": lambda t: [_list_name(t, t.reference_plan[2].arguments["list_id"])],
    "memory.running_playlist": lambda t: [_playlist_name(t, t.reference_plan[2].arguments["playlist_id"])],
    "memory.tag_partner": lambda t: [t.reference_plan[2].arguments["name"]],  # who the partner is
}
"""Template → the values the goal must not name and memory must hold (the first is acted on)."""
