"""Gallery templates: an album from a day out, deleting a video (behind confirmation) and
favouriting a photo, and sending a day's photos to the people tagged in them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.messages.templates import spaced
from phoneenv.contract import Criterion, Domain
from phoneenv.tasks.templates import (
    Draft,
    ask_first,
    call,
    confirm_variant,
    fails,
    passes,
    plain_texts_to,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.templates.media_world import day_words, seed_gallery
from phoneenv.tasks.world import World

__all__ = ["album_criteria", "outing_of", "photos_of", "sent_photos"]


def outing_of(w: World) -> dict[str, Any]:
    """The seeded outing this task is about: a different one for neighbouring tasks."""
    outings = seed_gallery(w)
    return outings[w.index % len(outings)]


def photos_of(outing: dict[str, Any]) -> list[dict[str, Any]]:
    """The still photos (not videos) of an outing, oldest first."""
    return [p for p in outing["photos"] if p["kind"] == "photo"]


def album_criteria(name: str, ids: list[str], change: str = "created", **where: Any) -> list[Criterion]:
    """An album named ``name`` holding exactly ``ids`` (any order)."""
    out: list[Criterion] = [
        state("gallery.albums", change, name={"iequals": name}, photo_ids={"len": len(ids)}, **where)
    ]
    out += [
        suffixed(state("gallery.albums", change, name={"iequals": name}, photo_ids={"has": i}, **where), i) for i in ids
    ]
    return out


def sent_photos(c: dict[str, Any], ids: list[str], **where: Any) -> list[Criterion]:
    """One text to ``c`` carrying exactly the gallery items ``ids``."""
    base = {"number": {"person": c["id"]}, "direction": "out", **where}
    out: list[Criterion] = [
        suffixed(state("messages.messages", "created", attachments={"len": len(ids)}, **base), c["id"])
    ]
    out += [
        suffixed(state("messages.messages", "created", attachments={"has": i}, **base), f"{c['id']}:{i}") for i in ids
    ]
    return out


def got_photos(c: dict[str, Any], ids: list[str], others: list[str]) -> list[Criterion]:
    """``c`` gets each gallery item of ``ids`` once, in one text or several, and none of ``others``
    (the other items a careless send would attach)."""
    base = {"number": {"person": c["id"]}, "direction": "out"}
    out: list[Criterion] = [
        suffixed(state("messages.messages", "created", attachments={"has": i}, **base), f"{c['id']}:{i}") for i in ids
    ]
    if others:
        stray = {"any": [{"has": i} for i in others]}
        out.append(
            suffixed(state("messages.messages", "created", count=0, attachments=stray, **base), f"{c['id']}:stray")
        )
    return out


@template(
    "gallery.album_from_outing",
    apps=["gallery"],
    domain=Domain.ENTERTAINMENT,
    difficulty=2,
    capabilities=["lookup", "create", "filter"],
    count=12,
)
def album_from_outing(w: World) -> Draft:
    """Template ``gallery.album_from_outing``, e.g. "Make an album "Zoo with the kids" with the
    photos from the City Zoo on Saturday 14 November (no videos)."."""
    outing = outing_of(w)
    day, place = outing["day"], outing["place"]
    ids = [p["id"] for p in photos_of(outing)]
    name = w.rng.choice([f"{place} {day.strftime('%B')}", f"Our day at the {place}", f"{place} {day.year}"])
    goal = w.rng.choice(
        [f'Make an album "{name}" with the photos from the {place} on {day_words(day)} - no videos.',
         f'Put the photos I took at the {place} on {day_words(day)} into a new album called "{name}" '
         "(photos only, not videos)."]
    )  # fmt: skip
    plan = [
        call("gallery.list_photos", date_from=day.isoformat(), date_to=day.isoformat(), kind="photo"),
        call("gallery.create_album", name=name, photo_ids=ids),
        call("finish", answer=f'Created "{name}" with {len(ids)} photos.'),
    ]
    other = next(o for o in seed_gallery(w) if o is not outing)
    stray = photos_of(other)[0]["id"]
    new_alb = w.next_id("gallery.albums", "alb_")
    probes = [
        passes("listed by place", replacing(plan, 0, call("gallery.list_photos", place=place))),
        passes(
            "created empty, then added",
            replacing(
                plan,
                1,
                call("gallery.create_album", name=name),
                call("gallery.add_to_album", album_id=new_alb, photo_ids=ids),
            ),
        ),
        fails("a photo left out", replacing(plan, 1, call("gallery.create_album", name=name, photo_ids=ids[1:]))),
        fails(
            "a photo of another day",
            replacing(plan, 1, call("gallery.create_album", name=name, photo_ids=[*ids, stray])),
        ),
        fails("two albums", replacing(plan, 1, plan[1], call("gallery.create_album", name=f"{name} 2", photo_ids=ids))),
    ]
    videos = [p["id"] for p in outing["photos"] if p["kind"] == "video"]
    if videos:
        probes.append(
            fails("the video too", replacing(plan, 1, call("gallery.create_album", name=name, photo_ids=ids + videos)))
        )
    return Draft(
        goal=goal,
        criteria=album_criteria(name, ids),
        milestones=[state("gallery.albums", "created", name={"iequals": name})],
        plan=plan,
        probes=probes,
    )


@template(
    "gallery.delete_video",
    apps=["gallery"],
    domain=Domain.ENTERTAINMENT,
    difficulty=2,
    capabilities=["lookup", "delete", "update", "confirm"],
    count=12,
)
def delete_video(w: World) -> Draft:
    """Template ``gallery.delete_video``, e.g. "Delete the video from the Harbour on Sunday 8
    November and make the first photo of that day a favourite.": the deletion, sensitive, is
    confirmed first when the user asks for it."""
    outing = outing_of(w)
    day, place = outing["day"], outing["place"]
    photos = w.table("gallery.photos")
    videos = [p for p in outing["photos"] if p["kind"] == "video"]
    if not videos:
        last = outing["photos"][-1]
        video = {
            "id": w.next_id("gallery.photos", "ph_"),
            "kind": "video",
            "taken": (dt.datetime.fromisoformat(last["taken"]) + dt.timedelta(minutes=2)).isoformat(),
            "place": place,
            "people": (),
            "favorite": False,
            "duration_s": 40 + w.rng.randrange(60),
        }
        photos.append(video)
    else:
        video = videos[0]
    first = photos_of(outing)[0]
    i = next(k for k, p in enumerate(photos) if p["id"] == first["id"])
    photos[i] = first = {**first, "favorite": False}
    confirm_variant(w, 0.5)
    goal = w.rng.choice(
        [f"Delete the video from the {place} on {day_words(day)} and make the first photo of that day a favourite.",
         f"Get rid of the video I shot at the {place} on {day_words(day)}, and favourite the first photo I took "
         "there."]
    )  # fmt: skip
    criteria: list[Criterion] = [
        state("gallery.photos", "deleted", id=video["id"]),
        state("gallery.photos", "updated", id=first["id"], favorite=True),
    ]
    plan = [call("gallery.list_photos", place=place), call("gallery.set_favorite", photo_id=first["id"], favorite=True)]
    if w.confirm_sensitive:
        goal += " Ask me before deleting anything."
        ask_first(plan, criteria, "gallery.delete_photo", f"Delete the video from the {place}?")
    plan += [call("gallery.delete_photo", photo_id=video["id"]), call("finish", answer="Done.")]
    last_photo = photos_of(outing)[-1]
    confirm = [call("user.confirm", question="Delete it?")] if w.confirm_sensitive else []
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[state("gallery.photos", "deleted", id=video["id"])],
        plan=plan,
        perturb_exempt=["0.place", f"{len(plan) - 1}.answer", "1.favorite"],
        probes=[
            passes("listed by date", replacing(plan, 0, call("gallery.list_photos", date_from=day.isoformat()))),
            passes("opened the video first", [plan[0], call("gallery.get_photo", photo_id=video["id"]), *plan[1:]]),
            fails(
                "deleted a photo instead",
                replacing(plan, -2, call("gallery.delete_photo", photo_id=last_photo["id"])),
            ),
            fails(
                "favourited the last photo",
                replacing(plan, 1, call("gallery.set_favorite", photo_id=last_photo["id"])),
            )
            if last_photo["id"] != first["id"]
            else fails("did not favourite", replacing(plan, 1)),
            fails(
                "deleted the first photo too",
                [*plan[:-1], *confirm, call("gallery.delete_photo", photo_id=first["id"]), plan[-1]],
            ),
        ],
    )


@template(
    "gallery.share_with_tagged",
    apps=["gallery", "contacts", "messages"],
    domain=Domain.ENTERTAINMENT,
    difficulty=3,
    capabilities=["lookup", "send", "multi-entity"],
    count=12,
    max_steps=25,
)
def share_with_tagged(w: World) -> Draft:
    """Template ``gallery.share_with_tagged``, e.g. "Send the photos from the Old Town on Saturday
    14 November to the people tagged in them.": each person tagged gets every photo of that day
    they are tagged in, once (in one text or several), and no other."""
    outing = outing_of(w)
    day, place = outing["day"], outing["place"]
    shots = photos_of(outing)
    people = [c for c in w.contacts if any(c["name"] in p["people"] for p in shots)]
    goal = w.rng.choice(
        [f"Send everyone who's tagged in my photos from the {place} on {day_words(day)} the photos they're in.",
         f"Text the people tagged in the {place} photos from {day_words(day)} the pictures they appear in."]
    )  # fmt: skip
    plan = [call("gallery.list_photos", date_from=day.isoformat(), date_to=day.isoformat(), kind="photo")]
    criteria: list[Criterion] = []
    theirs: dict[str, list[str]] = {}
    for c in people:
        ids = [p["id"] for p in shots if c["name"] in p["people"]]
        theirs[c["id"]] = ids
        plan += [
            call("contacts.search", query=c["name"]),
            call("messages.send_photos", to=c["phone"], photo_ids=ids, body=f"Photos from the {place}"),
        ]
        criteria += got_photos(c, ids, [p["id"] for p in outing["photos"] if p["id"] not in ids])
    plan.append(call("finish", answer=f"Sent to {', '.join(c['name'] for c in people)}."))
    exempt = [f"{len(plan) - 1}.answer", "0.date_from", "0.date_to"]
    exempt += [f"{k}.body" for k, s in enumerate(plan) if s.name == "messages.send_photos"]
    c0 = people[0]
    s0 = 2
    outsider = next(c for c in w.contacts if c not in people)
    everything = [p["id"] for p in outing["photos"]]
    probes = [
        passes(
            "number written another way, no text",
            replacing(plan, s0, call("messages.send_photos", to=spaced(c0["phone"]), photo_ids=theirs[c0["id"]])),
        ),
        passes("listed by place", replacing(plan, 0, call("gallery.list_photos", place=place))),
        fails(
            "someone not in the photos",
            replacing(
                plan, s0, plan[s0], call("messages.send_photos", to=outsider["phone"], photo_ids=theirs[c0["id"]])
            ),
        ),
        fails("one person forgotten", replacing(plan, s0)),
        passes(
            "a greeting beside the photos",
            replacing(plan, s0, call("messages.send", to=c0["phone"], body="Hi! Photos coming"), plan[s0]),
        ),
    ]
    if len(theirs[c0["id"]]) > 1:
        probes.append(
            fails(
                "a photo left out",
                replacing(plan, s0, call("messages.send_photos", to=c0["phone"], photo_ids=theirs[c0["id"]][1:])),
            )
        )
    if len(theirs[c0["id"]]) > 1:
        one_by_one = [call("messages.send_photos", to=c0["phone"], photo_ids=[i]) for i in theirs[c0["id"]]]
        probes += [
            passes("one text per photo", replacing(plan, s0, *one_by_one)),
            fails("a photo sent twice", replacing(plan, s0, plan[s0], one_by_one[0])),
        ]
    if set(everything) != set(theirs[c0["id"]]):
        stray = next(i for i in everything if i not in theirs[c0["id"]])
        probes.append(
            fails(
                "a stray photo in a second text",
                replacing(plan, s0, plan[s0], call("messages.send_photos", to=c0["phone"], photo_ids=[stray])),
            )
        )
        probes.append(
            fails(
                "every photo of the day to everyone",
                replacing(plan, s0, call("messages.send_photos", to=c0["phone"], photo_ids=everything)),
            )
        )
    return Draft(
        goal=goal,
        criteria=criteria,
        plan=plan,
        perturb_exempt=exempt,
        probes=probes,
        allowed_changes=plain_texts_to(*people),
    )
