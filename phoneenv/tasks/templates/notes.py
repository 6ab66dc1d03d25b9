"""Notes templates: write a note, add to a list, look a fact up in a note, delete a note."""

from __future__ import annotations

import re
from typing import Any

from phoneenv.contract import Domain, StateCriterion
from phoneenv.tasks.templates import Draft, answer, ask_first, behavior, call, confirm_variant, state, template
from phoneenv.tasks.world import NOTE_SEEDS, World

# New notes (titles never seeded by the world) and their items; no item reads the same backwards.
NEW_NOTES = [
    ("Camping gear", ["tent", "sleeping bag", "headlamp", "bug spray"]),
    ("Party supplies", ["balloons", "candles", "paper plates", "napkins"]),
    ("Garden to-do", ["water tomatoes", "trim hedge", "buy compost"]),
    ("Movies to watch", ["Arrival", "Amelie", "Paddington", "Heat"]),
    ("Questions for the doctor", ["knee pain", "flu shot", "blood test"]),
    ("Moving checklist", ["change address", "book a van", "cancel internet"]),
    ("Weekend errands", ["return library books", "car wash", "pick up dry cleaning"]),
    ("Podcast ideas", ["city history", "home cooking", "board games"]),
]
# Seeded list notes (title as in NOTE_SEEDS) -> how the user names it, a search query, items to add.
LISTS = {
    "Shopping list": ("my shopping list", "shopping", ["oat milk", "bananas", "coffee beans", "butter"]),
    "Packing list": ("my packing list", "packing", ["sunscreen", "swimsuit", "headphones"]),
    "Books to read": ('my "Books to read" note', "books", ["Piranesi", "The Hobbit", "Beloved"]),
    "Gift ideas": ("my gift ideas note", "gift", ["puzzle for Grandma", "wool socks for Dad"]),
}
WIFI_NETS = ["PineLodge", "LakeHouse24", "Birchwood", "Cabin5G", "Timberline"]


def _ensure_note(w: World, title: str, body: str | None = None, tags: tuple[str, ...] = ()) -> dict[str, Any]:
    """The world's note titled ``title``, added (fresh id, unpinned) when missing; ``body`` (when
    given) replaces its text. Returns the record as it is in the world."""
    notes = w.table("notes.notes")
    for i, n in enumerate(notes):
        if n["title"] == title:
            if body is not None and n["body"] != body:
                notes[i] = {**n, "body": body}
            return notes[i]
    if body is None:
        body, tags = next((b, t) for s, b, t in NOTE_SEEDS if s == title)
    stamp = w.ts(w.rng.randrange(60, 20000))
    rec = {
        "id": w.next_id("notes.notes", "n_"),
        "title": title,
        "body": body,
        "pinned": False,
        "created": stamp,
        "updated": stamp,
        "tags": tuple(tags),
    }
    notes.append(rec)
    return rec


def _named(crit: StateCriterion, suffix: str) -> StateCriterion:
    """``crit`` with ``:suffix`` added to its id (several criteria on one table stay apart)."""
    crit.id = f"{crit.id}:{suffix}"
    return crit


def _no_palindrome(w: World, digits: int) -> str:
    while True:
        code = "".join(str(w.rng.randrange(10)) for _ in range(digits))
        if code != code[::-1]:
            return code


@template("notes.create_note", apps=["notes"], domain=Domain.NOTES, capabilities=["create"])
def create_note(w: World) -> Draft:
    """Template ``notes.create_note``, e.g. task 0: "Make a new note titled \"Garden to-do\" listing: trim hedge, water tomatoes."."""
    title, pool = w.rng.choice(NEW_NOTES)
    items = w.rng.sample(pool, w.rng.choice([2, 3]))
    body = "\n".join(items)
    return Draft(
        goal=f'Make a new note titled "{title}" listing: {", ".join(items)}.',
        criteria=[
            _named(state("notes.notes", "created", title={"iequals": title}, body={"icontains": item}), item)
            for item in items
        ],
        plan=[call("notes.create", title=title, body=body), call("finish", answer=f'Created "{title}".')],
        perturb_exempt=["1.answer"],
    )


@template("notes.append_item", apps=["notes"], domain=Domain.NOTES, capabilities=["lookup", "update"])
def append_item(w: World) -> Draft:
    """Template ``notes.append_item``, e.g. task 0: "Add headphones to my packing list."."""
    title = w.rng.choice(sorted(LISTS))
    said, query, items = LISTS[title]
    note = _ensure_note(w, title)
    old_lines = [line for line in note["body"].split("\n") if line.strip()]
    # An item that holds an old line ("oat milk" on a list with "milk") would let a note whose
    # text was replaced by the item alone pass the checks that the old lines are kept.
    fresh = [
        i for i in items if not any(x.casefold() in i.casefold() or i.casefold() in x.casefold() for x in old_lines)
    ]
    item = w.rng.choice(fresh)
    return Draft(
        goal=f"Add {item} to {said}.",
        criteria=[
            state("notes.notes", "updated", id=note["id"], body={"icontains": item}),
            *(
                _named(state("notes.notes", "present", id=note["id"], body={"icontains": line}), line)
                for line in old_lines
            ),
        ],
        milestones=[behavior("required_call", "notes.search")],
        plan=[
            call("notes.search", query=query),
            call("notes.append", note_id=note["id"], text=item),
            call("finish", answer=f"Added {item}."),
        ],
        perturb_exempt=["2.answer"],
    )


@template("notes.lookup_fact", apps=["notes"], domain=Domain.NOTES, difficulty=2, capabilities=["lookup", "answer"])
def lookup_fact(w: World) -> Draft:
    """Template ``notes.lookup_fact``, e.g. task 0: "Which parking spot did I write down for the airport garage?"."""
    kind = w.rng.choice(["wifi_net", "wifi_pw", "locker", "bike", "parking"])
    if kind in ("wifi_net", "wifi_pw"):
        net = w.rng.choice(WIFI_NETS)
        pw = f"{w.rng.choice(['maple', 'otter', 'comet', 'cedar'])}{_no_palindrome(w, 4)}"
        note = _ensure_note(w, "Wifi at the cabin", f"network: {net}\npassword: {pw}", ("travel",))
        query = "cabin"
        if kind == "wifi_net":
            goal, value = "What's the wifi network called at the cabin?", net
        else:
            goal, value = "What's the wifi password at the cabin?", pw
    elif kind == "locker":
        value = _no_palindrome(w, 4)
        note = _ensure_note(w, "Gym locker", f"locker {w.rng.randrange(10, 99)}, code {value}", ("gym",))
        goal, query = "What's the code for my gym locker? It's in my notes.", "locker"
    elif kind == "bike":
        value = _no_palindrome(w, 4)
        note = _ensure_note(w, "Bike lock", f"combination: {value}", ())
        goal, query = "What's the combination of my bike lock? I saved it in a note.", "bike"
    else:
        value = f"{w.rng.choice('BCDEF')}{w.rng.randrange(10, 60)}"
        note = _ensure_note(w, "Parking", f"airport garage, level {w.rng.randrange(1, 6)}, spot {value}", ())
        goal, query = "Which parking spot did I write down for the airport garage?", "parking"
    return Draft(
        goal=goal,
        criteria=[answer(pattern=rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])"), behavior("read_only")],
        plan=[call("notes.search", query=query), call("notes.get", note_id=note["id"]), call("finish", answer=value)],
    )


@template(
    "notes.delete_note",
    apps=["notes"],
    domain=Domain.NOTES,
    difficulty=2,
    capabilities=["lookup", "delete", "confirm"],
)
def delete_note(w: World) -> Draft:
    """Template ``notes.delete_note``, e.g. task 0: "Delete my \"Gift ideas\" note. Ask me before you delete it."."""
    (note,) = w.pick("notes.notes")
    confirm_variant(w, 0.5)
    goal = f'Delete my "{note["title"]}" note.'
    criteria = [state("notes.notes", "deleted", id=note["id"])]
    plan = [call("notes.search", query=note["title"])]
    if w.confirm_sensitive:
        goal += " Ask me before you delete it."
        ask_first(plan, criteria, "notes.delete", f'Delete the note "{note["title"]}"?')
    plan += [call("notes.delete", note_id=note["id"]), call("finish", answer="Deleted.")]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[behavior("required_call", "notes.search")],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
    )
