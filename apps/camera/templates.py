"""Camera templates: take a photo where the phone is and text it to someone (asking for the
camera permission when the app lacks it)."""

from __future__ import annotations

from apps.messages.templates import looked_up, similar, spaced
from phoneenv.contract import CompositeCriterion, Domain
from phoneenv.tasks.templates import (
    Draft,
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
from phoneenv.tasks.templates.media_world import seed_gallery
from phoneenv.tasks.world import World

CAMERA = "android.permission.CAMERA"
SPOTS = ["Central Station", "Riverside Cafe", "Museum Island", "Sports Hall", "Farmers Market", "Town Hall Square"]
"""Places the user is at when taking the photo (the fixture location's label)."""


NEW_PHOTO = {"ref": {"table": "gallery.photos", "change": "created", "where": {"kind": "photo"}}}
"""A photo taken during the episode, by what it is rather than by its id (``ref``)."""


def photo_sent(c: dict, photo: object, **where: object) -> object:
    """A text to contact ``c`` (any form of their number) carrying ``photo``: a gallery item's
    id, or a condition on the attachments such as :data:`NEW_PHOTO`."""
    attachments = photo if isinstance(photo, dict) else {"has": photo}
    return state("messages.messages", "created", number={"person": c["id"]}, attachments=attachments, **where)


@template(
    "camera.photo_to_contact",
    apps=["camera", "gallery", "contacts", "messages"],
    domain=Domain.DEVICE,
    difficulty=2,
    capabilities=["create", "send", "permission", "lookup"],
    count=12,
)
def photo_to_contact(w: World) -> Draft:
    """Template ``camera.photo_to_contact``, e.g. "Take a photo and send it to Ana, and tell her
    where I am.": the photo gets the phone's place; the text carries the photo (and the place)."""
    seed_gallery(w)
    spot, locked, say_where = pick(w, SPOTS, [False, True], [True, False])
    if locked:
        w.permissions = {"camera": {CAMERA: False}}
    (c,) = w.pick("contacts.contacts")
    name = first_name(c)
    new_id = w.next_id("gallery.photos", "ph_")
    goal = w.rng.choice([f"Take a photo and send it to {name}", f"Snap a picture and text it to {name}"])
    goal += ", and tell them where I am." if say_where else "."
    body = f"I'm at {spot}" if say_where else ""
    plan = [call("contacts.search", query=name)]
    if locked:
        plan.append(call("system.request_permission", app="camera", permission=CAMERA))
    plan += [
        call("camera.take_photo"),
        call("messages.send_photos", to=c["phone"], photo_ids=[new_id], body=body),
        call("finish", answer="Sent."),
    ]
    send = len(plan) - 2
    crit_msg = photo_sent(c, NEW_PHOTO)
    if say_where:
        # the place said (not denied) with the photo, or in a text of its own beside it
        told = state("messages.messages", "created", number={"person": c["id"]}, direction="out", body={"says": spot})
        crit_msg = CompositeCriterion(
            kind="any_of",
            id="photo and place sent",
            criteria=[
                suffixed(photo_sent(c, NEW_PHOTO, body={"says": spot}), "with the place"),
                CompositeCriterion(
                    kind="all_of",
                    id="photo, then the place",
                    criteria=[suffixed(photo_sent(c, NEW_PHOTO), "photo"), suffixed(told, "place")],
                ),
            ],
        )
    old = w.table("gallery.photos")[-1]["id"]
    fixtures = w.fixtures(location={"label": spot, "lat": w.locale.lat, "lon": w.locale.lon})
    exempt = [f"{len(plan) - 1}.answer"]
    if not say_where:
        exempt.append(f"{send}.body")
    if locked:
        exempt += [f"{send - 2}.app", f"{send - 2}.permission"]
    return Draft(
        goal=goal,
        criteria=[state("gallery.photos", "created", kind="photo", place=spot, count=1), crit_msg],
        milestones=[looked_up(name), state("gallery.photos", "created", kind="photo")],
        plan=plan,
        fixtures=fixtures,
        perturb_exempt=exempt,
        allowed_changes=plain_texts_to(c),
        probes=[
            passes(
                "number written another way",
                replacing(
                    plan, send, call("messages.send_photos", to=spaced(c["phone"]), photo_ids=[new_id], body=body)
                ),
            ),
            passes("with the front camera", replacing(plan, send - 1, call("camera.take_photo", lens="front"))),
            passes(
                "a greeting beside the photo",
                replacing(plan, send, call("messages.send", to=c["phone"], body="Hi! Look at this"), plan[send]),
            ),
            fails(
                "an old photo sent",
                replacing(plan, send, call("messages.send_photos", to=c["phone"], photo_ids=[old], body=body)),
            ),
            fails(
                "sent to someone else",
                replacing(
                    plan, send, call("messages.send_photos", to=similar(w, c)["phone"], photo_ids=[new_id], body=body)
                ),
            ),
            fails("two photos taken", replacing(plan, send - 1, plan[send - 1], call("camera.take_photo"))),
            *(
                [
                    passes(
                        "the place in a text of its own",
                        [
                            *plan[:send],
                            call("messages.send_photos", to=c["phone"], photo_ids=[new_id], body=""),
                            call("messages.send", to=c["phone"], body=f"I'm at {spot}."),
                            plan[-1],
                        ],
                    ),
                    fails(
                        "the place denied",
                        replacing(
                            plan,
                            send,
                            call("messages.send_photos", to=c["phone"], photo_ids=[new_id], body=f"I'm not at {spot}"),
                        ),
                    ),
                ]
                if say_where
                else []
            ),
            fails(
                "sent as plain text",
                replacing(plan, send, call("messages.send", to=c["phone"], body=body or "Here's a photo")),
            ),
        ],
    )
