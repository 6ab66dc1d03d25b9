"""The shop, restaurants and delivery memory templates (phoneenv/tasks/templates/shop_memory.py):
the value each task acts on is the newest memory on its topic, never the outdated one, worked
out here from the fixture memories alone."""

from __future__ import annotations

import re

from phoneenv.tasks import select


def newest(t, pattern: str) -> re.Match:
    """The match of ``pattern`` in the newest fixture memory that has one (an older one must too)."""
    hits = [(m.created, re.search(pattern, m.content, re.IGNORECASE)) for m in t.fixtures.memory]
    hits = sorted((c, h) for c, h in hits if h)
    assert len(hits) >= 2, (t.id, "no outdated memory beside the current one")
    return hits[-1][1]


def created(t, table):
    return [c.where for c in t.criteria if c.kind == "state" and c.table == table and c.change == "created"]


def test_the_size_ordered_is_the_newest_remembered_size():
    for t in select("template:memory.shop_my_size"):
        size = newest(t, r"size is (\S+)").group(1)
        (where,) = created(t, "shop.orders")
        assert where["items"]["has"]["size"] == size, t.id
        assert size.casefold() not in re.findall(r"\w+", t.goal.casefold()), t.id


def test_the_table_is_at_the_newest_usual_place_for_the_newest_group_size():
    for t in select("template:memory.usual_table"):
        place = newest(t, r"(?:usual|regular) (?:restaurant|place) (?:is|to) (.+?)(?: now)?$").group(1)
        people = int(newest(t, r"(?:we are|group is|We're) (\d+)").group(1))
        (rest,) = [r for r in t.fixtures.records["restaurants.restaurants"] if r["name"] == place]
        (where,) = created(t, "restaurants.reservations")
        assert (where["restaurant_id"], where["party_size"]) == (rest["id"], people), t.id


def test_the_dish_fits_the_newest_diet():
    for t in select("template:memory.diet_dinner"):
        assert newest(t, r"vegetarian|meat with every").group(0) == "vegetarian", t.id
        veg = {"Margherita", "Palak Paneer"}  # no meat or fish, by the menus' descriptions
        (where,) = created(t, "delivery.orders")
        names = {i["name"] for order in where["items"]["any"] for i in order}
        assert names <= veg, t.id


def test_the_pickup_is_at_the_newest_time_of_day():
    hours = {"morning": "09", "afternoon": "13", "evening": "17"}
    for t in select("template:memory.return_pickup_time"):
        part = newest(t, r"\b(morning|afternoon|evening)\b").group(1)
        (where,) = created(t, "shop.returns")
        assert where["slot"][11:13] == hours[part] and where["status"] == "confirmed", t.id
