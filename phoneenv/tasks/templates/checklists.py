"""Checklist templates: make a checklist, tick items off one, turn a note into a checklist.

Checklist items are rows of ``notes.items`` (``note_id``, ``text``, ``done``, ``position``); the
criteria name each item the user asked for, so a missing, stray or wrongly ticked item fails.
"""

from __future__ import annotations

from typing import Any

from apps.notes.templates import NEW_NOTES
from phoneenv.contract import Domain
from phoneenv.tasks.templates import Draft, call, fails, passes, replacing, state, suffixed, template
from phoneenv.tasks.world import World

# Seeded checklists: title, how the user names it, a search word, its items.
SEEDED = [
    ("Groceries", "my groceries list", "groceries", ["oat milk", "bananas", "coffee beans", "butter", "rice"]),
    ("Trip packing", "the packing checklist", "packing", ["passport", "charger", "sunscreen", "swimsuit", "hat"]),
    ("Hardware store", "my hardware store list", "hardware", ["screws", "wood glue", "sandpaper", "light bulbs"]),
    ("Party prep", "the party prep list", "party", ["balloons", "ice", "napkins", "candles", "playlist"]),
    ("Chores", "my chores checklist", "chores", ["vacuum", "laundry", "dishes", "bathroom", "windows"]),
]


def _note(w: World, title: str, body: str) -> dict[str, Any]:
    stamp = w.ts(w.ago_within(w.rng, 120, 9000))
    rec = {"id": w.next_id("notes.notes", "n_"), "title": title, "body": body, "pinned": False, "created": stamp,
           "updated": stamp, "tags": ()}  # fmt: skip
    w.table("notes.notes").append(rec)
    return rec


def _checklist(w: World, title: str, items: list[str], done: set[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Seed a checklist note with ``items`` (those in ``done`` ticked); returns note and items."""
    note = _note(w, title, "")
    rows = []
    for pos, text in enumerate(items):
        rec = {"id": w.next_id("notes.items", "ci_"), "note_id": note["id"], "text": text, "done": text in done,
               "position": pos}  # fmt: skip
        w.table("notes.items").append(rec)
        rows.append(rec)
    return note, rows


@template("checklists.make", apps=["notes"], domain=Domain.NOTES, capabilities=["create", "checklist"], count=10)
def make(w: World) -> Draft:
    """Template ``checklists.make``: "make me a checklist 'Camping gear': tent, headlamp, ...":
    one note with exactly those items, unticked, in order."""
    title, pool = NEW_NOTES[w.index % len(NEW_NOTES)]
    items = w.rng.sample(pool, min(len(pool), w.rng.choice([3, 4])))
    goal = w.rng.choice([f'Make me a checklist called "{title}" with {", ".join(items)}.',
                         f'Start a "{title}" checklist: {", ".join(items)}. I want to tick them off as I go.'])  # fmt: skip
    plan = [
        call("notes.create_checklist", title=title, items=items),
        call("finish", answer=f'Made the "{title}" checklist with {len(items)} items.'),
    ]
    nid = w.next_id("notes.notes", "n_")  # for the probes' plans; the criteria name the note by its title
    made = {"ref": {"table": "notes.notes", "change": "created", "where": {"title": {"iequals": title}}}}
    return Draft(
        goal=goal,
        criteria=[
            state("notes.notes", "created", title={"iequals": title}),
            *(
                suffixed(state("notes.items", "created", note_id=made, text={"iequals": t}, done=False), t)
                for t in items
            ),
        ],
        plan=plan,
        probes=[
            passes(
                "a note, then its items one by one",
                [
                    call("notes.create", title=title),
                    *(call("notes.add_item", note_id=nid, text=t) for t in items),
                    plan[-1],
                ],
            ),
            fails("an item left out", replacing(plan, 0, call("notes.create_checklist", title=title, items=items[1:]))),
            fails(
                "a plain note with the items as text",
                replacing(plan, 0, call("notes.create", title=title, body="\n".join(items))),
            ),
            fails("a stray extra item", [plan[0], call("notes.add_item", note_id=nid, text="misc"), plan[1]]),
        ],
    )


@template(
    "checklists.tick_off", apps=["notes"], domain=Domain.NOTES, capabilities=["lookup", "update", "checklist"], count=10
)
def tick_off(w: World) -> Draft:
    """Template ``checklists.tick_off``: "I got the bananas and the butter, tick them off my
    groceries list" (and, every other task, "... and put X back on it": uncheck a ticked item)."""
    title, named, query, items = SEEDED[w.index % len(SEEDED)]
    got = w.rng.sample(items, 2)
    rest = [t for t in items if t not in got]
    undo = rest[0] if w.index % 2 else None
    note, rows = _checklist(w, title, items, {undo} if undo else set())
    by_text = {r["text"]: r for r in rows}
    goal = f"I got the {got[0]} and the {got[1]}, tick them off {named}."
    if undo:
        goal += f" And uncheck the {undo}, I still need it."
    plan = [
        call("notes.search", query=query),
        call("notes.list_items", note_id=note["id"]),
        *(call("notes.check_item", item_id=by_text[t]["id"]) for t in got),
        *([call("notes.check_item", item_id=by_text[undo]["id"], done=False)] if undo else []),
        call("finish", answer="Done."),
    ]
    criteria = [suffixed(state("notes.items", "updated", id=by_text[t]["id"], done=True), t) for t in got]
    if undo:
        criteria.append(suffixed(state("notes.items", "updated", id=by_text[undo]["id"], done=False), undo))
    wrong = by_text[rest[-1]]["id"]
    return Draft(
        goal=goal,
        criteria=criteria,
        plan=plan,
        probes=[
            passes("ticked in the other order", [plan[0], plan[1], plan[3], plan[2], *plan[4:]]),
            fails("ticked the wrong item", replacing(plan, 3, call("notes.check_item", item_id=wrong))),
            fails(
                "removed instead of ticked",
                replacing(plan, 2, call("notes.remove_item", item_id=by_text[got[0]]["id"])),
            ),
        ],
    )


@template(
    "checklists.convert", apps=["notes"], domain=Domain.NOTES, capabilities=["lookup", "update", "checklist"], count=10
)
def convert(w: World) -> Draft:
    """Template ``checklists.convert``: "turn my 'Hardware store' note into a checklist and tick
    off the screws": each line becomes an item, the named one ticked, the text cleared."""
    title, named, query, items = SEEDED[w.index % len(SEEDED)]
    items = w.rng.sample(items, 4)
    note = _note(w, title, "\n".join(f"- {t}" for t in items))
    first = w.next_id("notes.items", "ci_")
    n0 = int(first[3:])
    tick = items[w.index % 4]
    tid = f"ci_{n0 + items.index(tick)}"
    goal = w.rng.choice([f'Turn my "{title}" note into a checklist, and tick off the {tick}, I already have it.',
                         f'Can you make {named} a proper checklist? The {tick} is done already.'])  # fmt: skip
    plan = [
        call("notes.search", query=query),
        call("notes.to_checklist", note_id=note["id"]),
        call("notes.check_item", item_id=tid),
        call("finish", answer="Done."),
    ]
    return Draft(
        goal=goal,
        criteria=[
            state("notes.notes", "updated", id=note["id"], body=""),
            *(suffixed(state("notes.items", "created", note_id=note["id"], text=t, done=t == tick), t) for t in items),
        ],
        plan=plan,
        probes=[
            passes(
                "text cleared, items added by hand",
                [
                    plan[0],
                    call("notes.update", note_id=note["id"], body=""),
                    *(call("notes.add_item", note_id=note["id"], text=t) for t in items),
                    call("notes.check_item", item_id=tid),
                    plan[3],
                ],
            ),
            fails("nothing ticked", [plan[0], plan[1], plan[3]]),
            fails(
                "another item ticked",
                replacing(plan, 2, call("notes.check_item", item_id=f"ci_{n0 + (items.index(tick) + 1) % 4}")),
            ),
        ],
    )
