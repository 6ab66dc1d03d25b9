"""The shop, restaurants and delivery sub-agent templates (phoneenv/tasks/templates/shop_subagent.py):
the outcome each task expects, worked out here from its goal and fixture records alone."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

from phoneenv.tasks import select

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip
SLOT = re.compile(
    r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday) (\d{1,2}) ([A-Z][a-z]+) at (\d{2}:\d{2})"
)


def recs(t, table):
    return t.fixtures.records.get(table, [])


def created(t, table):
    return [c.where for c in t.criteria if c.kind == "state" and c.table == table and c.change == "created"]


def slot_times(t, text: str) -> set[str]:
    """The local times a text names ("Friday 4 December at 19:30"), in the clock's year (or the next)."""
    now = dt.datetime.fromisoformat(t.fixtures.clock)
    out = set()
    for day, month, hhmm in SLOT.findall(text):
        d = dt.date(now.year, MONTHS.index(month) + 1, int(day))
        if d < now.date():
            d = d.replace(year=d.year + 1)
        out.add(f"{d.isoformat()}T{hhmm}")
    return out


def test_group_table_books_the_one_time_everyone_can_do_and_the_restaurant_has_free():
    tasks = select("template:subagent.group_table")
    assert len(tasks) == 16
    blocked = 0
    for t in tasks:
        (rest,) = [r for r in recs(t, "restaurants.restaurants") if r["name"] in t.goal]
        friends = [c for c in recs(t, "contacts.contacts") if re.search(rf"\b{c['name'].split()[0]}\b", t.goal)]
        assert len(friends) in (2, 3), t.id
        common = None
        for f in friends:
            said = set().union(
                *(slot_times(t, m["body"]) for m in recs(t, "messages.messages") if m["number"] == f["phone"])
            )
            common = said if common is None else common & said
        blocked += len(common) == 2
        free = common - set(rest["full"])
        assert len(free) == 1, (t.id, common, free)
        (where,) = created(t, "restaurants.reservations")
        assert where["restaurant_id"] == rest["id"] and where["time"] == free.pop(), t.id
        assert where["party_size"] == len(friends) + 1, t.id  # the user comes too
    assert 0 < blocked < len(tasks)  # a second common time is fully booked in some worlds only


def test_returns_check_returns_exactly_the_items_still_in_their_window():
    tasks = select("template:subagent.returns_check")
    assert len(tasks) == 16
    for t in tasks:
        now = dt.datetime.fromisoformat(t.fixtures.clock)
        named = [p for p in recs(t, "shop.products") if p["name"].lower() in t.goal]
        assert len(named) == 3, t.id
        can, late = {}, []
        for p in named:
            ok = [
                o
                for o in recs(t, "shop.orders")
                if o["status"] == "delivered"
                and any(i["product_id"] == p["id"] for i in o["items"])
                and now - dt.datetime.fromisoformat(o["delivered"]) <= dt.timedelta(days=30)
            ]
            if ok:
                can[p["id"]] = max(ok, key=lambda o: o["placed"])["id"]
            else:
                late.append(p["name"].lower())
        got = {w["product_id"]: w["order_id"] for w in created(t, "shop.returns")}
        assert got == can, t.id
        assert all(w["status"] == "confirmed" for w in created(t, "shop.returns"))
        (ans,) = [c for c in t.criteria if c.kind == "answer"]
        assert sorted(ans.value) == sorted(late), t.id


def test_cheaper_app_orders_where_the_total_with_the_fee_is_lower():
    tasks = select("template:subagent.cheaper_app")
    assert len(tasks) == 16
    traps = 0
    for t in tasks:
        (rest,) = [r for r in recs(t, "delivery.restaurants") if r["name"] in t.goal]
        (dish,) = [
            m for m in recs(t, "delivery.menu") if m["restaurant_id"] == rest["id"] and f" {m['name']} from" in t.goal
        ]
        qty = 2 if f"two {dish['name']}" in t.goal else 1
        sims = {s.tool: s.result for s in t.fixtures.simulated}
        (f_rest,) = sims["food.search_restaurants"]["restaurants"]
        (f_dish,) = [m for m in sims["food.get_menu"]["menu"] if m["name"] == dish["name"]]
        d_total = Decimal(str(dish["price"])) * qty + Decimal(str(rest["delivery_fee"]))
        f_total = Decimal(str(f_dish["price"])) * qty + Decimal(str(f_rest["delivery_fee"]))
        assert d_total != f_total, t.id
        if d_total < f_total:
            (where,) = created(t, "delivery.orders")
            assert where["restaurant_id"] == rest["id"] and not created(t, "food.orders"), t.id
            traps += dish["price"] > f_dish["price"]
        else:
            (where,) = created(t, "food.orders")
            assert Decimal(str(where["total"])) == f_total and not created(t, "delivery.orders"), t.id
            traps += f_dish["price"] > dish["price"]
        assert t.backends == ["hybrid"]
    assert 0 < traps < len(tasks)  # the dish alone points the wrong way in some worlds
