"""Notes templates: write a note, add to a list, look a fact up in a note, delete a note."""

from __future__ import annotations

import re
from typing import Any

from apps.messages.templates import looked_up, tell, tell_probes, telling, who
from phoneenv.contract import CompositeCriterion, Criterion, Domain
from phoneenv.tasks.templates import (
    Draft,
    answer,
    ask_first,
    behavior,
    call,
    confirm_variant,
    fails,
    finishing,
    passes,
    replacing,
    state,
    suffixed,
    template,
)
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
    stamp = w.ts(w.ago_within(w.rng, 60, 20000))
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


def _no_palindrome(w: World, digits: int) -> str:
    while True:
        code = "".join(str(w.rng.randrange(10)) for _ in range(digits))
        if code != code[::-1]:
            return code


def searched(query: str) -> behavior:  # type: ignore[valid-type]
    """Milestone: a notes search for ``query`` (how the note the user means is found)."""
    return behavior("required_call", "notes.search", id=f"searched:{query}", arguments={"query": {"icontains": query}})


def all_of_words(items: list[str]) -> str:
    """A regex that holds when a text names every one of ``items``, in any order."""
    return "(?s)" + "".join(rf"(?=.*{re.escape(i)})" for i in items)


@template(
    "notes.create_note", apps=["notes", "contacts", "messages"], domain=Domain.NOTES, capabilities=["create", "send"]
)
def create_note(w: World) -> Draft:
    """Template ``notes.create_note``, e.g. task 0: "Write down \"Movies to watch\": Arrival, Heat, Paddington. Send that list to Osamu as well."."""
    title, pool = w.rng.choice(NEW_NOTES)
    items = w.rng.sample(pool, w.rng.choice([2, 3]))
    body = "\n".join(items)
    (c,) = w.pick("contacts.contacts")
    name, query = who(w, c)
    goal = w.rng.choice(
        [f'Make a new note titled "{title}" listing: {", ".join(items)}, and text the list to {name}.',
         f'Write down "{title}": {", ".join(items)}. Send that list to {name} as well.']
    )  # fmt: skip
    text = f"{title}: {', '.join(items)}"
    plan = [
        call("notes.create", title=title, body=body),
        call("contacts.search", query=query),
        telling(c, text),
        call("finish", answer=f'Created "{title}" and sent it to {c["name"]}.'),
    ]
    return Draft(
        goal=goal,
        criteria=[
            state("notes.notes", "created", title={"iequals": title}),
            # each item in the note's text, or as a checklist item (notes.create_checklist)
            *(
                CompositeCriterion(
                    kind="any_of",
                    id=f"listed:{item}",
                    criteria=[
                        suffixed(
                            state("notes.notes", "created", title={"iequals": title}, body={"icontains": item}), item
                        ),
                        suffixed(state("notes.items", "created", text={"iequals": item}), item),
                    ],
                )
                for item in items
            ),
            tell(c, {"regex": all_of_words(items)}),
        ],
        milestones=[looked_up(query)],
        plan=plan,
        perturb_exempt=["1.query", "2.body", "3.answer"],
        probes=[
            *tell_probes(w, plan, 2, c, " and ".join(reversed(items)), f"{title}: {items[0]}"),
            passes("items on one line", replacing(plan, 0, call("notes.create", title=title, body=", ".join(items)))),
            fails("an item missing", replacing(plan, 0, call("notes.create", title=title, body="\n".join(items[1:])))),
            passes("as a checklist", replacing(plan, 0, call("notes.create_checklist", title=title, items=items))),
            fails(
                "a checklist missing an item",
                replacing(plan, 0, call("notes.create_checklist", title=title, items=items[1:])),
            ),
            fails("a stray second note", [*plan[:1], call("notes.create", title=f"{title} 2", body=body), *plan[1:]]),
        ],
    )


@template("notes.append_item", apps=["notes"], domain=Domain.NOTES, capabilities=["lookup", "update"])
def append_item(w: World) -> Draft:
    """Template ``notes.append_item``, e.g. task 0: "Add The Hobbit to my \"Books to read\" note and headphones to my packing list."."""
    picks = w.rng.sample(sorted(LISTS), 2)
    criteria: list[Criterion] = []
    plan = []
    parts = []
    milestones = []
    notes = []
    for title in picks:
        said, query, items = LISTS[title]
        note = _ensure_note(w, title)
        notes.append(note)
        old_lines = [line for line in note["body"].split("\n") if line.strip()]
        # An item that holds an old line ("oat milk" on a list with "milk") would let a note whose
        # text was replaced by the item alone pass the checks that the old lines are kept.
        fresh = [
            i for i in items if not any(x.casefold() in i.casefold() or i.casefold() in x.casefold() for x in old_lines)
        ]
        item = w.rng.choice(fresh)
        parts.append(f"{item} to {said}")
        # On the note's text, or as a checklist item of the note (notes.add_item keeps the text).
        criteria.append(
            CompositeCriterion(
                kind="any_of",
                id=f"added:{title}",
                criteria=[
                    suffixed(state("notes.notes", "updated", id=note["id"], body={"icontains": item}), title),
                    suffixed(state("notes.items", "created", note_id=note["id"], text={"icontains": item}), title),
                ],
            )
        )
        criteria += [
            suffixed(state("notes.notes", "present", id=note["id"], body={"icontains": line}), f"{title}:{line}")
            for line in old_lines
        ]
        plan += [call("notes.search", query=query), call("notes.append", note_id=note["id"], text=item)]
        milestones.append(searched(query))
    plan.append(call("finish", answer="Added both."))
    return Draft(
        goal=f"Add {parts[0]} and {parts[1]}.",
        criteria=criteria,
        milestones=milestones,
        plan=plan,
        probes=[
            passes("listed the notes first", [call("notes.list"), *plan]),
            passes("looked both up first", [plan[0], plan[2], plan[1], plan[3], plan[4]]),
            passes(
                "added as a checklist item",
                replacing(plan, 1, call("notes.add_item", note_id=notes[0]["id"], text=plan[1].arguments["text"])),
            ),
            fails(
                "a checklist item on the other list",
                replacing(plan, 1, call("notes.add_item", note_id=notes[1]["id"], text=plan[1].arguments["text"])),
            ),
            fails("one list forgotten", replacing(plan, 3)),
            fails(
                "both on one list",
                replacing(plan, 3, call("notes.append", note_id=notes[0]["id"], text=plan[3].arguments["text"])),
            ),
            fails(
                "list replaced by the item",
                replacing(plan, 1, call("notes.update", note_id=notes[0]["id"], body=plan[1].arguments["text"])),
            ),
        ],
    )


@template(
    "notes.lookup_fact",
    apps=["notes", "contacts", "messages"],
    domain=Domain.NOTES,
    difficulty=2,
    capabilities=["lookup", "answer", "send"],
)
def lookup_fact(w: World) -> Draft:
    """Template ``notes.lookup_fact``, e.g. task 0: "Which parking spot did I write down for the airport garage? Joshua needs it as well, send it to them."."""
    kind = w.rng.choice(["wifi_net", "wifi_pw", "locker", "bike", "parking"])
    if kind in ("wifi_net", "wifi_pw"):
        net = w.rng.choice(WIFI_NETS)
        pw = f"{w.rng.choice(['maple', 'otter', 'comet', 'cedar'])}{_no_palindrome(w, 4)}"
        note = _ensure_note(w, "Wifi at the cabin", f"network: {net}\npassword: {pw}", ("travel",))
        query = "cabin"
        if kind == "wifi_net":
            goal, value, decoy = "What's the wifi network called at the cabin?", net, pw
            alt = next(n for n in WIFI_NETS if n != net)
            shape = "|".join(re.escape(n) for n in WIFI_NETS)
        else:
            goal, value, decoy = "What's the wifi password at the cabin?", pw, net
            alt, shape = pw[:-4] + pw[-4:][::-1], r"[a-z]+\d{4}"
    elif kind == "locker":
        value = _no_palindrome(w, 4)
        number = w.rng.randrange(10, 99)
        decoy = str(number)
        note = _ensure_note(w, "Gym locker", f"locker {number}, code {value}", ("gym",))
        alt, shape = value[::-1], r"\d{4}"
        goal, query = "What's the code for my gym locker? It's in my notes.", "locker"
    elif kind == "bike":
        value = _no_palindrome(w, 4)
        decoy = value[::-1]
        note = _ensure_note(w, "Bike lock", f"combination: {value}", ())
        alt, shape = value[::-1], r"\d{4}"
        goal, query = "What's the combination of my bike lock? I saved it in a note.", "bike"
    else:
        value = f"{w.rng.choice('BCDEF')}{w.rng.randrange(10, 60)}"
        level = w.rng.randrange(1, 6)
        decoy = f"level {level}"
        note = _ensure_note(w, "Parking", f"airport garage, level {level}, spot {value}", ())
        alt, shape = next(x for x in "BCDEF" if x != value[0]) + value[1:], r"[B-F]\d{2}"
        goal, query = "Which parking spot did I write down for the airport garage?", "parking"
    (c,) = w.pick("contacts.contacts")
    name, cq = who(w, c)
    goal += w.rng.choice(
        [f" Text it to {name} too.", f" {name[0].upper()}{name[1:]} needs it as well, send it to them."]
    )
    exact = rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])"
    other = rf"(?<![A-Za-z0-9])(?!{re.escape(value)}(?![A-Za-z0-9]))({shape})(?![A-Za-z0-9])"
    plan = [
        call("notes.search", query=query),
        call("notes.get", note_id=note["id"]),
        call("contacts.search", query=cq),
        telling(c, f"It's {value}"),
        call("finish", answer=value),
    ]
    return Draft(
        goal=goal,
        # A code or a name is free text: the value, and no other of its shape (a hedge).
        criteria=[
            answer(pattern=exact),
            CompositeCriterion(
                kind="not",
                id="no_other_value",
                criteria=[answer(id="other_value", pattern=other)],
            ),
            # the text too: the value stated (not denied, no guess), and no other of its shape
            tell(c, {"says": value, "not": {"regex": other}}),
        ],
        milestones=[searched(query), looked_up(cq)],
        plan=plan,
        perturb_exempt=["0.query", "2.query", "3.body"],
        probes=[
            *tell_probes(w, plan, 3, c, f"Here: {value}", f"It's {decoy}"),
            fails("a hedge in the text", replacing(plan, 3, telling(c, f"It's {value}, or maybe {alt}"))),
            passes("in a sentence", finishing(plan, f"You noted {value}.")),
            fails("the neighbouring fact", finishing(plan, decoy)),
            fails("a hedge", finishing(plan, f"{value} or {alt}")),
            fails("the right value only in passing", finishing(plan, f"Not {value} - it's {alt}.")),
        ],
    )


@template(
    "notes.delete_note",
    apps=["notes"],
    domain=Domain.NOTES,
    difficulty=2,
    capabilities=["lookup", "delete", "confirm"],
)
def delete_note(w: World) -> Draft:
    """Template ``notes.delete_note``, e.g. task 0: "I no longer need the note \"Packing list\", remove it."."""
    (note,) = w.pick("notes.notes")
    confirm_variant(w, 0.5)
    goal = w.rng.choice(
        [f'Delete my "{note["title"]}" note.', f'I no longer need the note "{note["title"]}", remove it.']
    )
    criteria = [state("notes.notes", "deleted", id=note["id"])]
    word = note["title"].split()[0].rstrip(":")
    plan = [call("notes.search", query=word)]
    if w.confirm_sensitive:
        goal += " Ask me before you delete it."
        ask_first(plan, criteria, "notes.delete", f'Delete the note "{note["title"]}"?')
    plan += [call("notes.delete", note_id=note["id"]), call("finish", answer="Deleted.")]
    other = next(n for n in w.table("notes.notes") if n["id"] != note["id"])
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[searched(word)],
        plan=plan,
        probes=[
            passes("listed the notes instead", replacing(plan, 0, call("notes.list"))),
            passes("opened it first", [plan[0], call("notes.get", note_id=note["id"]), *plan[1:]]),
            fails("another note deleted", replacing(plan, -2, call("notes.delete", note_id=other["id"]))),
            fails(
                "deleted both",
                [
                    *plan[:-1],
                    *([call("user.confirm", question="And the other one?")] if w.confirm_sensitive else []),
                    call("notes.delete", note_id=other["id"]),
                    plan[-1],
                ],
            ),
        ],
    )
