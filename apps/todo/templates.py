"""To-do templates: add an item with a due time (and a reminder), tick items off and clear the
done ones, and turn a text someone sent into an item."""

from __future__ import annotations

import datetime as dt
import re

from apps.clock.templates import spoken
from phoneenv.contract import Domain
from phoneenv.tasks.templates import (
    Draft,
    ask_first,
    behavior,
    call,
    confirm_variant,
    fails,
    passes,
    pick,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.templates.media_world import day_words, seed_todo
from phoneenv.tasks.world import World

NEW_ITEMS = {
    "Groceries": ["buy oat milk", "get bananas", "pick up yoghurt", "buy dish soap", "get olive oil"],
    "Home": ["call the plumber", "hang the new mirror", "sort the recycling", "bleed the radiators"],
    "Work": ["draft the quarterly report", "email the supplier", "prepare the demo", "file the expenses"],
    "Errands": ["buy stamps", "drop off the keys", "collect the prescription", "get the bike serviced"],
}
"""Items a user adds (never among the seeded ones of that list)."""


ARTICLES = {"the", "a", "an", "my", "some"}


def title_words_only(title: str) -> list[str]:
    """The words of ``title`` without articles (``"collect the prescription"`` -> ``["collect",
    "prescription"]``)."""
    return [x for x in title.split() if x.lower() not in ARTICLES]


def title_words(title: str) -> str:
    """A regex: the item's title says ``title``, in its words and order, with or without the
    articles ("Collect prescription" for "collect the prescription")."""
    art = "|".join(sorted(ARTICLES))
    return r"\b" + r"\s+".join(rf"(?:(?:{art})\s+)?{re.escape(x)}" for x in title_words_only(title)) + r"\b"


def when_words(w: World, day: dt.date) -> str:
    """``tomorrow`` or ``on Friday 20 November``."""
    return "tomorrow" if day == w.now.date() + dt.timedelta(days=1) else f"on {day_words(day)}"


@template(
    "todo.add_due_item",
    apps=["todo"],
    domain=Domain.NOTES,
    capabilities=["lookup", "create", "time"],
    count=12,
)
def add_due_item(w: World) -> Draft:
    """Template ``todo.add_due_item``, e.g. "Add "buy oat milk" to my Groceries list, due tomorrow
    at 6:00 PM, and remind me at 5:00 PM that day."."""
    lists = seed_todo(w)
    name, remind = pick(w, sorted(NEW_ITEMS), [True, False, True])
    title = w.rng.choice(NEW_ITEMS[name])
    day = w.now.date() + dt.timedelta(days=w.rng.randrange(1, 6))
    hour = w.rng.choice([9, 12, 17, 18, 19])
    due = f"{day.isoformat()}T{hour:02d}:00"
    rem = f"{day.isoformat()}T{hour - 1:02d}:00" if remind else None
    lst = lists[name]
    goal = w.rng.choice(
        [f'Add "{title}" to my {name} list, due {when_words(w, day)} at {spoken(f"{hour:02d}:00")}',
         f'Put "{title}" on the {name} to-do list for {when_words(w, day).removeprefix("on ")}, '
         f'{spoken(f"{hour:02d}:00")}']
    )  # fmt: skip
    if remind:
        goal += ", and remind me an hour before"
    goal += "."
    args = {"list_id": lst["id"], "title": title, "due": due}
    if rem:
        args["reminder"] = rem
    plan = [call("todo.list_lists"), call("todo.add_item", **args), call("finish", answer="Added.")]
    crit = state("todo.items", "created", list_id=lst["id"], title={"regex": title_words(title)}, due=due, reminder=rem)
    other = next(v for k, v in lists.items() if k != name)
    return Draft(
        goal=goal,
        criteria=[crit],
        milestones=[state("todo.items", "created", list_id=lst["id"], title={"regex": title_words(title)})],
        plan=plan,
        probes=[
            passes("capitalised", replacing(plan, 1, call("todo.add_item", **{**args, "title": title.capitalize()}))),
            passes(
                "reminder set afterwards",
                replacing(
                    plan,
                    1,
                    call("todo.add_item", list_id=lst["id"], title=title, due=due),
                    *([call("todo.set_reminder", item_id=w.next_id("todo.items", "ti_"), at=rem)] if rem else []),
                ),
            ),
            passes(
                "without the article",
                replacing(plan, 1, call("todo.add_item", **{**args, "title": " ".join(title_words_only(title))})),
            ),
            fails(
                "another item's title",
                replacing(
                    plan, 1, call("todo.add_item", **{**args, "title": next(t for t in NEW_ITEMS[name] if t != title)})
                ),
            ),
            fails(
                "on another list",
                replacing(plan, 1, call("todo.add_item", **{**args, "list_id": other["id"]})),
            ),
            fails(
                "a day late",
                replacing(
                    plan, 1, call("todo.add_item", **{**args, "due": f"{day + dt.timedelta(days=1)}T{hour:02d}:00"})
                ),
            ),
            fails("added twice", replacing(plan, 1, plan[1], plan[1])),
        ],
    )


@template(
    "todo.tick_off_and_clear",
    apps=["todo"],
    domain=Domain.NOTES,
    difficulty=2,
    capabilities=["lookup", "update", "delete", "confirm"],
    count=12,
)
def tick_off_and_clear(w: World) -> Draft:
    """Template ``todo.tick_off_and_clear``, e.g. "I've done "eggs" and "bread" on my Groceries
    list: tick them off, then clear everything that's done from that list."."""
    lists = seed_todo(w)
    (name,) = pick(w, sorted(lists))
    lst = lists[name]
    items = [i for i in w.table("todo.items") if i["list_id"] == lst["id"]]
    open_items = [i for i in items if not i["done"]]
    if len(open_items) < 2:  # make sure two open items exist
        extra = [t for t in NEW_ITEMS[name] if all(t != i["title"] for i in items)]
        for t in extra[: 2 - len(open_items)]:
            rec = {
                "id": w.next_id("todo.items", "ti_"),
                "list_id": lst["id"],
                "title": t,
                "due": None,
                "reminder": None,
                "done": False,
                "completed": None,
                "created": w.ts(w.rng.randrange(500, 5000)),
            }
            w.table("todo.items").append(rec)
            items.append(rec)
        open_items = [i for i in items if not i["done"]]
    k = 1 if len(open_items) == 2 or w.rng.random() < 0.5 else 2
    ticked = w.rng.sample(open_items, k)
    kept = [i for i in open_items if i not in ticked]
    done_before = [i for i in items if i["done"]]
    quoted = " and ".join(f'"{i["title"]}"' for i in ticked)
    confirm_variant(w, 0.5)
    goal = w.rng.choice(
        [f"I've done {quoted} on my {name} list: tick {'them' if k > 1 else 'it'} off, then clear everything "
         "that's done from that list.",
         f"Mark {quoted} as done in {name} and then remove all completed items from the list."]
    )  # fmt: skip
    plan = [call("todo.list_lists"), call("todo.list_items", list_id=lst["id"])]
    plan += [call("todo.complete_item", item_id=i["id"]) for i in ticked]
    criteria = [
        *(suffixed(state("todo.items", "deleted", id=i["id"]), i["id"]) for i in ticked + done_before),
        *(suffixed(state("todo.items", "present", id=i["id"], done=False), i["id"]) for i in kept),
    ]
    if w.confirm_sensitive:
        goal += " Check with me before clearing."
        ask_first(plan, criteria, "todo.clear_completed", f"Clear the done items from {name}?")
    plan += [call("todo.clear_completed", list_id=lst["id"]), call("finish", answer="Done and cleared.")]
    dirty = [v for k2, v in lists.items() if k2 != name and any(
        i["done"] for i in w.table("todo.items") if i["list_id"] == v["id"])]  # fmt: skip
    probes = [fails("cleared without ticking", [p for p in plan if p.name != "todo.complete_item"])]
    if dirty:
        extra = [call("todo.clear_completed", list_id=dirty[0]["id"])]
        if w.confirm_sensitive:
            extra.insert(0, call("user.confirm", question=f"Clear {dirty[0]['name']} too?"))
        probes.append(fails("cleared another list too", [*plan[:-1], *extra, plan[-1]]))
    if kept:
        more = [call("todo.complete_item", item_id=i["id"]) for i in open_items]
        probes.append(fails("ticked an item too many", [*plan[:2], *more, *plan[2 + k :]]))
    if not w.confirm_sensitive:
        one_by_one = [call("todo.delete_item", item_id=i["id"]) for i in ticked + done_before]
        probes.append(passes("deleted the done items one by one", [*plan[: 2 + k], *one_by_one, plan[-1]]))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[behavior("required_call", "todo.clear_completed", arguments={"list_id": lst["id"]})],
        plan=plan,
        probes=probes,
    )
