"""Sub-agent templates for the to-do, gallery and music apps: a sub-agent reads (texts, the
gallery, podcast episodes) and reports; the planner acts on the report. ``delegated`` criteria
require the sub-agent's frame to have used the tools; ``forbidden_call`` at depth 0 keeps the
planner from doing that reading itself.

| template | the sub-agent reads | the planner does |
|---|---|---|
| ``subagent.todo_from_texts`` | unread texts, some asking the user to do something | one to-do item per request |
| ``subagent.album_of_person`` | the photos a person is tagged in, over several days | an album of exactly those |
| ``subagent.newest_unplayed`` | episodes of every followed podcast | downloads each newest unplayed one |
| ``subagent.photos_to_tagged`` | who is tagged in which photo of a day out | texts each person their photos |
"""

from __future__ import annotations

import itertools
from typing import Any

from apps.gallery.templates import album_criteria, got_photos, outing_of, photos_of
from phoneenv.contract import Category, Criterion, Domain, ToolCall
from phoneenv.frames import delegate_steps
from phoneenv.tasks.templates import (
    Draft,
    answer_if_said,
    behavior,
    call,
    fails,
    finishing,
    first_name,
    passes,
    pick,
    plain_texts_to,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.templates.media_world import day_words, seed_gallery, seed_music, seed_todo
from phoneenv.tasks.world import World

SUBAGENT = Category.SUBAGENT
AGENT_APP = "agent"
COUNT = 15


def delegated(tool: str) -> Criterion:
    """A finished sub-agent frame used ``tool`` (a glob such as ``messages.*``)."""
    return behavior("delegated", tool, id=f"delegated:{tool}")


def not_itself(tool: str) -> Criterion:
    """The planner (depth 0) did not call ``tool`` itself."""
    return behavior("forbidden_call", tool, depth=0, id=f"forbidden@0:{tool}")


REQUESTS = [
    ("Could you pick up the parcel from the post office?", "pick up the parcel", "parcel"),
    ("Please book the car for its service next week", "book the car service", "car service"),
    ("Can you renew the library books before Friday?", "renew the library books", "library"),
    ("Don't forget to buy the birthday card for Mum", "buy the birthday card", "birthday card"),
    ("Could you send me the photos of the flat?", "send the flat photos", "flat"),
    ("Remember to pay the window cleaner", "pay the window cleaner", "window cleaner"),
    ("Can you water my plants while I'm away?", "water the neighbour's plants", "plants"),
]
"""(text a contact sends, the item a person writes, the word the item must hold)."""
CHATTER = ["Thanks again for yesterday :)", "What a game last night!", "Happy weekend!", "Haha that was great"]


@template(
    "subagent.todo_from_texts",
    apps=["contacts", "messages", "todo", AGENT_APP],
    domain=Domain.NOTES,
    category=SUBAGENT,
    difficulty=3,
    capabilities=["delegate", "lookup", "create", "multi-entity"],
    count=COUNT,
    max_steps=30,
)
def todo_from_texts(w: World) -> Draft:
    """Template ``subagent.todo_from_texts``, e.g. "Go through my unread texts and put everything
    people asked me to do on my Errands list.": a sub-agent reads the texts, the planner adds one
    item per request (chatter adds none)."""
    lists = seed_todo(w)
    errands = lists["Errands"]
    msgs = w.table("messages.messages")
    for i, m in enumerate(msgs):  # only the new texts are unread
        if m["direction"] == "in" and not m["read"]:
            msgs[i] = {**m, "read": True}
    # Two or three requests, a different set for each task (indices worked out to differ).
    k = w.index
    picked = [k % 7, (k + 1 + k // 7) % 7] + ([(k + 4 + k // 7) % 7] if k % 2 == 0 else [])
    asks = [REQUESTS[i] for i in picked]
    senders = w.rng.sample(w.contacts, len(asks) + 1)
    for k, (c, text) in enumerate(
        [*zip(senders, [a[0] for a in asks], strict=False), (senders[-1], w.rng.choice(CHATTER))]
    ):
        msgs.append(
            {
                "id": w.next_id("messages.messages", "m_"),
                "number": c["phone"],
                "direction": "in",
                "body": text,
                "time": w.ts(10 + 15 * k),  # this morning, after 07:00 (the clock is 08:00 or later)
                "read": False,
            }
        )
    goal = ["Go through my unread texts and put everything people asked me to do on my Errands list.",
            "Some people texted me favours to do. Add each one to the Errands to-do list.",
            "Check my unread messages and turn every request in them into an item on Errands."][w.index % 3]  # fmt: skip
    report = "; ".join(f"{first_name(c)}: {a[1]}" for c, a in zip(senders, asks, strict=False))
    plan = [
        *delegate_steps(
            "Read my unread texts and list every request someone made of me (who asked, what to do).",
            ["messages.list_unread", "messages.read_thread"],
            [call("messages.list_unread")],
            report,
        ),
        call("todo.list_lists"),
        *(call("todo.add_item", list_id=errands["id"], title=a[1]) for a in asks),
        call("finish", answer=f"Added {len(asks)} items to Errands."),
    ]
    criteria: list[Criterion] = [
        suffixed(state("todo.items", "created", list_id=errands["id"], title={"icontains": a[2]}), a[2]) for a in asks
    ]
    criteria += [
        delegated("messages.*"),
        not_itself("messages.*"),
        answer_if_said("number", len(asks), unit="items?|things?|tasks?|requests?|errands?|to-?dos?"),  # a count told
    ]
    first_add = 4
    other = lists["Home"]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[delegated("messages.*")],
        plan=plan,
        probes=[
            passes(
                "in own words",
                replacing(plan, first_add, call("todo.add_item", list_id=errands["id"], title=f"{asks[0][1]} (asked)")),
            ),
            fails("a miscount told", finishing(plan, f"Added {len(asks) + 1} items to Errands.")),
            fails("a request forgotten", replacing(plan, first_add)),
            fails(
                "on the Home list",
                replacing(plan, first_add, call("todo.add_item", list_id=other["id"], title=asks[0][1])),
            ),
            fails(
                "chatter added too",
                [*plan[:-1], call("todo.add_item", list_id=errands["id"], title="reply to the game text"), plan[-1]],
            ),
            fails(
                "read the texts itself",
                [call("messages.list_unread"), *plan[3:]],
            ),
        ],
    )


@template(
    "subagent.album_of_person",
    apps=["gallery", "contacts", AGENT_APP],
    domain=Domain.ENTERTAINMENT,
    category=SUBAGENT,
    difficulty=3,
    capabilities=["delegate", "lookup", "create", "filter"],
    count=COUNT,
    max_steps=25,
)
def album_of_person(w: World) -> Draft:
    """Template ``subagent.album_of_person``, e.g. "Make an album "Best of Ana" with every photo
    Ana is tagged in.": a sub-agent finds the photos, the planner makes the album."""
    seed_gallery(w)
    photos = w.table("gallery.photos")
    tagged = sorted({n for p in photos for n in p["people"]})
    (k,) = pick(w, list(range(len(tagged))))
    name = tagged[k]
    c = next(x for x in w.contacts if x["name"] == name)
    ids = [p["id"] for p in photos if name in p["people"]]
    album = w.rng.choice([f"Best of {first_name(c)}", f"{first_name(c)} {w.now.year}", f"Me and {first_name(c)}"])
    goal = w.rng.choice(
        [f'Make an album "{album}" with every photo {first_name(c)} is tagged in.',
         f'I want an album called "{album}": all the photos where {c["name"]} is tagged.']
    )  # fmt: skip
    plan = [
        *delegate_steps(
            f"Which photos in my gallery is {c['name']} tagged in? Give me their ids.",
            ["gallery.list_photos", "gallery.get_photo"],
            [call("gallery.list_photos", person=name)],
            ", ".join(ids),
        ),
        call("gallery.create_album", name=album, photo_ids=ids),
        call("finish", answer=f'Created "{album}" with {len(ids)} photos.'),
    ]
    others = [p["id"] for p in photos if name not in p["people"] and p["people"]]
    probes = [
        passes(
            "created empty, then filled",
            replacing(
                plan,
                3,
                call("gallery.create_album", name=album),
                call("gallery.add_to_album", album_id=w.next_id("gallery.albums", "alb_"), photo_ids=ids),
            ),
        ),
        fails("looked them up itself", [call("gallery.list_photos", person=name), *plan[3:]]),
    ]
    if others:
        wrong = call("gallery.create_album", name=album, photo_ids=[*ids, others[0]])
        probes.append(fails("with someone else's photo", replacing(plan, 3, wrong)))
    if len(ids) > 1:
        probes.append(
            fails("a photo left out", replacing(plan, 3, call("gallery.create_album", name=album, photo_ids=ids[1:])))
        )
    return Draft(
        goal=goal,
        criteria=[*album_criteria(album, ids), delegated("gallery.*"), not_itself("gallery.list_photos")],
        milestones=[delegated("gallery.*")],
        plan=plan,
        probes=probes,
    )


@template(
    "subagent.newest_unplayed",
    apps=["music", AGENT_APP],
    domain=Domain.ENTERTAINMENT,
    category=SUBAGENT,
    difficulty=3,
    capabilities=["delegate", "lookup", "update", "multi-entity"],
    count=COUNT,
    max_steps=30,
)
def newest_unplayed(w: World) -> Draft:
    """Template ``subagent.newest_unplayed``, e.g. "For every podcast I follow, download the newest
    episode I haven't played yet.": a sub-agent reads the episodes, the planner downloads."""
    seed_music(w)
    pods = w.table("music.podcasts")
    eps = w.table("music.episodes")
    # A different pair of followed podcasts in each task (15 pairs of 6).
    followed = set(list(itertools.combinations(range(len(pods)), 2))[w.index % 15])
    for k in range(len(pods)):
        pods[k] = {**pods[k], "subscribed": k in followed}
    targets: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for k in sorted(followed):
        idx = sorted(
            (i for i, e in enumerate(eps) if e["podcast_id"] == pods[k]["id"]),
            key=lambda i: eps[i]["published"],
            reverse=True,
        )
        played = w.rng.randrange(0, 2)  # the newest may be played already
        for j, i in enumerate(idx):
            eps[i] = {**eps[i], "played": j < played or (j > played and eps[i]["played"]), "downloaded": False}
        target = eps[idx[played]]
        targets.append(target)
        skipped.append(eps[idx[played + 1]])
    goal = w.rng.choice(
        ["For every podcast I follow, download the newest episode I haven't played yet.",
         "Download the latest unplayed episode of each podcast I'm subscribed to."]
    )  # fmt: skip
    plan = [
        *delegate_steps(
            "For each podcast I follow, which is the newest episode I have not played? Give the episode ids.",
            ["music.list_podcasts", "music.list_episodes"],
            [
                call("music.list_podcasts", subscribed_only=True),
                *(call("music.list_episodes", podcast_id=pods[k]["id"]) for k in sorted(followed)),
            ],
            ", ".join(t["id"] for t in targets),
        ),
        *(call("music.download_episode", episode_id=t["id"]) for t in targets),
        call("finish", answer=f"Downloaded {len(targets)} episodes."),
    ]
    first = len(plan) - 1 - len(targets)
    unfollowed = next(p for k, p in enumerate(pods) if k not in followed)
    trap = next(e for e in eps if e["podcast_id"] == unfollowed["id"] and not e["downloaded"])
    return Draft(
        goal=goal,
        criteria=[
            *(suffixed(state("music.episodes", "updated", id=t["id"], downloaded=True), t["id"]) for t in targets),
            delegated("music.list_episodes"),
            not_itself("music.list_episodes"),
        ],
        milestones=[delegated("music.list_episodes")],
        plan=plan,
        probes=[
            fails("one podcast forgotten", replacing(plan, first)),
            fails("the next one too", replacing(plan, first, plan[first], call("music.download_episode", episode_id=skipped[0]["id"]))),
            fails("an unfollowed podcast too", replacing(plan, first, plan[first], call("music.download_episode", episode_id=trap["id"]))),
            fails("looked itself", [call("music.list_podcasts", subscribed_only=True), *plan[first:]]),
            passes("downloaded in another order", [*plan[:first], *reversed(plan[first:-1]), plan[-1]]),
        ],
    )  # fmt: skip


@template(
    "subagent.photos_to_tagged",
    apps=["gallery", "contacts", "messages", AGENT_APP],
    domain=Domain.ENTERTAINMENT,
    category=SUBAGENT,
    difficulty=4,
    capabilities=["delegate", "lookup", "send", "multi-entity"],
    count=COUNT,
    max_steps=30,
)
def photos_to_tagged(w: World) -> Draft:
    """Template ``subagent.photos_to_tagged``, e.g. "Send the photos from last Saturday's trip to
    the people tagged in them.": a sub-agent works out who is in which photo, the planner texts
    each person the photos they are in."""
    outing = outing_of(w)
    day, place = outing["day"], outing["place"]
    shots = photos_of(outing)
    people = [c for c in w.contacts if any(c["name"] in p["people"] for p in shots)]
    theirs = {c["id"]: [p["id"] for p in shots if c["name"] in p["people"]] for c in people}
    goal = w.rng.choice(
        [f"Send the photos from my day at the {place} on {day_words(day)} to the people tagged in them - each "
         "person just the photos they're in.",
         f"Everyone tagged in the {place} photos from {day_words(day)} should get the pictures they appear in, "
         "by text."]
    )  # fmt: skip
    report = "; ".join(f"{c['name']}: {', '.join(theirs[c['id']])}" for c in people)
    plan: list[ToolCall] = delegate_steps(
        f"Who is tagged in my photos from the {place} on {day_words(day)}? For each person, list the ids "
        "of the photos they are in.",
        ["gallery.list_photos", "gallery.get_photo"],
        [call("gallery.list_photos", date_from=day.isoformat(), date_to=day.isoformat(), kind="photo")],
        report,
    )
    criteria: list[Criterion] = []
    for c in people:
        plan += [
            call("contacts.search", query=c["name"]),
            call("messages.send_photos", to=c["phone"], photo_ids=theirs[c["id"]], body=f"From the {place}!"),
        ]
        # each of their photos once, in one text or several, and none of the others
        criteria += got_photos(c, theirs[c["id"]], [p["id"] for p in shots if p["id"] not in theirs[c["id"]]])
    plan.append(call("finish", answer="Sent."))
    criteria += [delegated("gallery.*"), not_itself("gallery.*")]
    exempt = [f"{len(plan) - 1}.answer"] + [f"{k}.body" for k, s in enumerate(plan) if s.name == "messages.send_photos"]
    c0 = people[0]
    s0 = 4
    outsider = next(c for c in w.contacts if c not in people)
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[delegated("gallery.*")],
        plan=plan,
        perturb_exempt=exempt,
        allowed_changes=plain_texts_to(*people),
        probes=[
            passes("no text with the photos", replacing(plan, s0, call("messages.send_photos", to=c0["phone"], photo_ids=theirs[c0["id"]]))),
            fails("someone not tagged", replacing(plan, s0, plan[s0], call("messages.send_photos", to=outsider["phone"], photo_ids=theirs[c0["id"]]))),
            fails("one person forgotten", replacing(plan, s0)),
            fails("looked itself", [plan[1], *plan[3:]]),
            passes("one text per photo", replacing(plan, s0, *[call("messages.send_photos", to=c0["phone"], photo_ids=[i]) for i in theirs[c0["id"]]])),
            *([fails("someone else's photo too", replacing(plan, s0, call("messages.send_photos", to=c0["phone"], photo_ids=[*theirs[c0["id"]], stray])))]
              if (stray := next((p["id"] for p in shots if p["id"] not in theirs[c0["id"]]), None)) else []),
        ],
    )  # fmt: skip
