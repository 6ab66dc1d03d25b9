"""Skills-category tasks: counts, proofs by execution, the skill each task names, and for every
task two plans built here from the goal and the fixture records alone: one that follows the
skill's procedure as its SKILL.md words it (must succeed) and a naive one that does what the goal
says without the skill (must fail, on the rule's criterion). The random agent must score near zero."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from typing import Any

import pytest

from agents import RandomAgent
from phoneenv.contract import Category, TaskSpec
from phoneenv.env import PhonePlanEnv
from phoneenv.evaluation import run_episodes
from phoneenv.harness.skills import load_skills
from phoneenv.tasks import select
from phoneenv.tasks.templates import all_templates
from phoneenv.tasks.validate import prove_suite
from phoneenv.tasks.world import CURRENCIES
from tests.test_templates_media import SKILL_MARKERS, SKILL_NAIVE_BREAKS, SKILL_PLANS, SKILL_TEMPLATES

TEMPLATES = {
    "skills.split_bill": "split-a-bill",
    "skills.archive_note": "archive-a-note",
    "skills.wake_routine": "wake-up-routine",
    "skills.forward_email": "forward-an-email",
    "skills.share_contact": "share-a-contact",
    "skills.meeting_invite": "send-a-meeting-invite",
    "skills.out_of_office": "out-of-office",
    "skills.pay_bill_safely": "pay-a-bill-safely",
    "skills.log_expense": "log-an-expense",
    "skills.evening_scene": "set-up-an-evening-scene",
    "skills.return_item": "return-an-item",
    "skills.event_table": "book-a-table-for-an-event",
    "skills.safe_dinner": "order-dinner-safely",
    "skills.reorder_usual": "reorder-the-usual",
    "skills.leave_home": "leave-the-house",
}
# Text that only the skill's body gives away: in the body, never in the goal or the description.
MARKERS = {
    "skills.split_bill": ["[Split]", "Total:", "Me:", "round down"],
    "skills.archive_note": ["[Archived]", "`archived`"],
    "skills.wake_routine": ["Wake up (backup)", "10 minutes after"],
    "skills.forward_email": ["---------- Forwarded message ----------", "Date:"],
    "skills.share_contact": ["BEGIN:VCARD", "TEL;TYPE=CELL:", "user.confirm"],
    "skills.meeting_invite": ["Full Name <email>", "Invitation:"],
    "skills.out_of_office": ["[Out of office]", "noreply@", "mail.mark_read"],
    "skills.pay_bill_safely": ["Bill: ", "`utilities`", "more than 7 days"],
    "skills.log_expense": ["<Shop> - <what it was>", "leftover"],
    "skills.evening_scene": ["Evening - <Room>", "never switches a plug", "68"],
    "skills.return_item": ["changed my mind", "earliest"],
    "skills.event_table": ["two hours", "`location`", "`note`"],
    "skills.safe_dinner": ["`min_order`", "user.confirm"],
    "skills.reorder_usual": ["most often", "cancelled"],
    "skills.leave_home": ["Every plug that is on", "overnight or longer", "61"],
}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip
WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

Steps = list[tuple[str, dict[str, Any]]]


@pytest.fixture(scope="module")
def tasks() -> list[TaskSpec]:
    # The skills.* templates; skills of other apps (travel_skills.*, ...) are tested beside those apps.
    return [t for t in select("category:skills") if t.template.startswith("skills.")]


@pytest.fixture(scope="module")
def shipped():
    return load_skills()


# -- helpers: read the fixtures and the goal as a planner would ----------------------------------


def recs(t: TaskSpec, table: str) -> list[dict[str, Any]]:
    return t.fixtures.records[table]


def person(t: TaskSpec, phrase: str) -> dict[str, Any]:
    """The contact a goal means by "my <relation>" or a first name."""
    phrase = phrase.strip()
    if phrase.startswith("my "):
        hits = [c for c in recs(t, "contacts.contacts") if c["relation"] == phrase[3:]]
    else:
        hits = [c for c in recs(t, "contacts.contacts") if c["name"].split()[0] == phrase]
    assert len(hits) == 1, (t.id, phrase)
    return hits[0]


def people(t: TaskSpec, listing: str) -> list[dict[str, Any]]:
    """Contacts of "Ana", "Ana and Ben", "Ana, my boss and Ben"."""
    return [person(t, p) for p in re.split(r", | and ", listing)]


def goal_day(t: TaskSpec, words: str) -> dt.date:
    weekday, day, month = words.split()
    d = dt.date(int(t.fixtures.clock[:4]), MONTHS.index(month) + 1, int(day))
    if d < dt.date.fromisoformat(t.fixtures.clock[:10]):  # a day past the year's end
        d = d.replace(year=d.year + 1)
    assert d.strftime("%A") == weekday, (t.id, words)
    return d


def play(t: TaskSpec, steps: Steps) -> dict[str, Any]:
    """Play ``steps`` then finish in a fresh env; the verdict. Every step but the naive ones'
    must be well formed, so feedback errors are returned for the caller to check."""
    env = PhonePlanEnv(task=t)
    env.reset(seed=0)
    errors = []
    for name, args in [*steps, ("finish", {"answer": "Done."})]:
        obs, _, term, trunc, info = env.step(json.dumps({"name": name, "arguments": args}))
        fb = json.loads(obs["feedback"])
        if not fb["ok"]:
            errors.append((name, fb))
        if term or trunc:
            break
    verdict = info["verdict"]
    verdict["step_errors"] = errors
    return verdict


def failed(verdict: dict[str, Any]) -> set[str]:
    return {c["id"] for c in verdict["criteria"] if not c["passed"]}


# -- per template: a plan that follows the skill, and a naive one ---------------------------------


def split_bill(t: TaskSpec, skill: bool) -> Steps:
    m = re.fullmatch(
        r'Split the bill for "(?P<what>[^"]+)" \((?P<total>\d+(?:\.\d\d)?) (?P<cur>[A-Z]{3})\) evenly between me(?:, | and )'
        r"(?P<who>.+), and ask them to pay their share\.",
        t.goal,
    )
    assert m, t.goal
    what, others, cur = m["what"], people(t, m["who"]), m["cur"]
    unit = 10 ** CURRENCIES[cur].decimals  # cents in one, or 1 for yen

    def money(amount: int) -> str:
        return str((Decimal(amount) / unit).quantize(Decimal(1) / unit))

    total = int(Decimal(m["total"]) * unit)
    share = total // (len(others) + 1)
    if not skill:  # an even split as a person would write it: rounded, one text each, no confirmation
        each = f"{total / unit / (len(others) + 1):.2f}"
        steps: Steps = [
            ("notes.create", {"title": f"{what} bill", "body": f"{m['total']} {cur} / {len(others) + 1} = {each} each"})
        ]
        return steps + [
            (
                "messages.send",
                {"to": c["phone"], "body": f"Hi {c['name'].split()[0]}, your share of {what} is {each} {cur}."},
            )
            for c in others
        ]
    mine = total - share * len(others)
    lines = [f"Total: {money(total)} {cur}"]
    lines += [f"{c['name']}: {money(share)} {cur}" for c in sorted(others, key=lambda c: c["name"])]
    lines.append(f"Me: {money(mine)} {cur}")
    steps = [("notes.create", {"title": f"Split: {what}", "body": "\n".join(lines), "tags": ["split"]})]
    for c in others:
        steps += [
            ("user.confirm", {"question": f"Ask {c['name']} for {money(share)} {cur}?"}),
            ("messages.send", {"to": c["phone"], "body": f"[Split] {what}: your share is {money(share)} {cur}"}),
        ]
    return steps


def archive_note(t: TaskSpec, skill: bool) -> Steps:
    titles = re.findall(r'"([^"]+)"', t.goal)
    assert titles and t.goal.startswith(("Archive my ", "Please archive the "))
    steps: Steps = []
    for title in titles:
        (note,) = [n for n in recs(t, "notes.notes") if n["title"] == title]
        steps.append(("notes.search", {"query": title}))
        if not skill:  # tag it and take it off the top of the list: an "archive" by guesswork
            steps += [("notes.add_tag", {"note_id": note["id"], "tag": "archive"})]
            steps += [("notes.pin", {"note_id": note["id"], "pinned": False})] if note["pinned"] else []
            continue
        steps += [
            ("notes.update", {"note_id": note["id"], "title": f"[Archived] {title}"}),
            ("notes.add_tag", {"note_id": note["id"], "tag": "archived"}),
        ]
        if note["pinned"]:
            steps.append(("notes.pin", {"note_id": note["id"], "pinned": False}))
    return steps


DAY_PHRASES = {
    "on weekdays": WEEKDAYS[:5],
    "on weekends": WEEKDAYS[5:],
    "every day": WEEKDAYS,
    "on Mondays, Wednesdays and Fridays": ["mon", "wed", "fri"],
    "on Tuesdays and Thursdays": ["tue", "thu"],
}


def wake_routine(t: TaskSpec, skill: bool) -> Steps:
    m = re.fullmatch(r"Set up my wake-up routine for (\d{1,2}):(\d\d) (AM|PM) (.+)\.", t.goal)
    assert m, t.goal
    hour = int(m[1]) % 12 + (12 if m[3] == "PM" else 0)
    main = f"{hour:02d}:{m[2]}"
    days = DAY_PHRASES[m[4]]
    if not skill:  # one repeating alarm at that time
        return [("clock.create_alarm", {"time": main, "label": "Wake up", "days": days})]
    later = dt.datetime(2026, 1, 1, hour, int(m[2])) + dt.timedelta(minutes=10)
    steps: Steps = [("clock.list_alarms", {})]
    for time, label in ((main, "Wake up"), (later.strftime("%H:%M"), "Wake up (backup)")):
        old = [a for a in recs(t, "clock.alarms") if a["time"] == time]
        if old:
            steps.append(("clock.update_alarm", {"alarm_id": old[0]["id"], "label": label, "days": days}))
            if not old[0]["enabled"]:
                steps.append(("clock.set_alarm_enabled", {"alarm_id": old[0]["id"], "enabled": True}))
        else:
            steps.append(("clock.create_alarm", {"time": time, "label": label, "days": days}))
    return steps


def forward_email(t: TaskSpec, skill: bool) -> Steps:
    m = re.fullmatch(
        r'Forward the "(?P<subject>[^"]+)" email to (?P<who>.+?)(?: with the note "(?P<note>[^"]+)")?\.', t.goal
    )
    assert m, t.goal
    (orig,) = [x for x in recs(t, "mail.messages") if x["subject"] == m["subject"]]
    to = person(t, m["who"])
    note = f"{m['note']}\n\n" if m["note"] else ""
    if not skill:  # the usual guess: "Fwd:" and the original text under the note
        body = note + orig["body"]
    else:
        when = f"{orig['time'][:10]} {orig['time'][11:16]}"
        body = (
            f"{note}{'-' * 10} Forwarded message {'-' * 10}\nFrom: {orig['from']}\nDate: {when}\n"
            f"Subject: {orig['subject']}\n\n{orig['body']}"
        )
    return [("mail.send", {"to": [to["email"]], "subject": f"Fwd: {orig['subject']}", "body": body})]


def share_contact(t: TaskSpec, skill: bool) -> Steps:
    who = r"(my [a-z]+|[A-Z][a-z]+)"
    m = re.fullmatch(rf"Send {who} {who}'s? contact details\.", t.goal)
    if m:
        to, shared = person(t, m[1]), person(t, m[2])
    else:
        m = re.fullmatch(rf"Share {who}'s? contact with {who}\.", t.goal)
        assert m, t.goal
        shared, to = person(t, m[1]), person(t, m[2])
    if not skill:  # a friendly text with the details
        extra = f", {shared['email']}" if shared["email"] else ""
        return [("messages.send", {"to": to["phone"], "body": f"{shared['name']}: {shared['phone']}{extra}"})]
    card = ["BEGIN:VCARD", "VERSION:3.0", f"FN:{shared['name']}", f"TEL;TYPE=CELL:{shared['phone']}"]
    card += [f"EMAIL:{shared['email']}"] if shared["email"] else []
    card.append("END:VCARD")
    return [
        ("user.confirm", {"question": f"Send {shared['name']}'s card to {to['name']}?"}),
        ("messages.send", {"to": to["phone"], "body": "\n".join(card)}),
    ]


def meeting_invite(t: TaskSpec, skill: bool) -> Steps:
    m = re.fullmatch(
        r'Invite (?P<who>.+) to "(?P<title>[^"]+)" on (?P<day>\w+ \d+ \w+) from (?P<s>\d\d:\d\d) to '
        r"(?P<e>\d\d:\d\d)(?: in (?P<room>.+))?\.",
        t.goal,
    )
    assert m, t.goal
    invitees = people(t, m["who"])
    day = goal_day(t, m["day"]).isoformat()
    args: dict[str, Any] = {"title": m["title"], "start": f"{day}T{m['s']}", "end": f"{day}T{m['e']}"}
    if m["room"]:
        args["location"] = m["room"]
    if not skill:  # attendees by name, as the calendar tool's own description allows
        return [("calendar.create_event", {**args, "attendees": [c["name"] for c in invitees]})]
    args["attendees"] = [f"{c['name']} <{c['email']}>" if c["email"] else c["name"] for c in invitees]
    text = f"Invitation: {m['title']}, {day} {m['s']}-{m['e']}"
    return [("calendar.create_event", args)] + [
        ("messages.send", {"to": c["phone"], "body": text}) for c in invitees if not c["email"]
    ]


def out_of_office(t: TaskSpec, skill: bool) -> Steps:
    m = re.fullmatch(
        r"I'm on holiday and back on (?P<day>\w+ \d+ \w+)\. Send the out-of-office reply to my mail; "
        r"(?P<who>.+) covers for me while I'm away\.",
        t.goal,
    )
    assert m, t.goal
    back, cover = goal_day(t, m["day"]), person(t, m["who"])
    unread = [x for x in recs(t, "mail.messages") if x["folder"] == "inbox" and not x["read"]]
    if not skill:  # answer every unread message in a friendly way
        body = f"Hi, I'm on holiday until {m['day']}. {cover['name']} ({cover['email']}) covers for me."
        return [("mail.reply", {"message_id": x["id"], "body": body}) for x in unread]
    body = (
        f"[Out of office] I am away and back on {back.isoformat()}. "
        f"For anything urgent, contact {cover['name']} ({cover['email']})."
    )
    steps: Steps = []
    for x in unread:
        if x["from"].startswith(("no-reply@", "noreply@")):
            continue
        steps += [
            ("mail.reply", {"message_id": x["id"], "body": body}),
            ("mail.mark_read", {"message_id": x["id"], "read": True}),
        ]
    return steps


def pay_bill_safely(t: TaskSpec, skill: bool) -> Steps:
    """The bill the goal names; with the skill, paid now when due within 7 days (else scheduled
    for its due date), confirmed first and logged as utilities; without it, simply paid."""
    kind = next(k for k in ("electricity", "internet", "phone") if k in t.goal)
    (bill,) = [b for b in recs(t, "wallet.bills") if b["status"] == "unpaid" and b["title"].lower().startswith(kind)]
    if not skill:
        return [("wallet.pay_bill", {"bill_id": bill["id"]})]
    today = dt.date.fromisoformat(t.fixtures.clock[:10])
    due = dt.date.fromisoformat(bill["due"])
    later = (due - today).days > 7
    act = (
        ("wallet.schedule_bill", {"bill_id": bill["id"], "date": bill["due"]})
        if later
        else ("wallet.pay_bill", {"bill_id": bill["id"]})
    )
    when = (due if later else today).isoformat()
    return [
        ("user.confirm", {"question": f"{act[0]} {bill['title']}?"}),
        act,
        (
            "budget.add_expense",
            {"amount": bill["amount_due"], "category": "utilities", "date": when, "note": f"Bill: {bill['title']}"},
        ),
    ]


SHOP_CATEGORY = {"Cafe Luna": "dining", "FreshMart": "groceries", "CityCab": "transport", "Apex Cinemas": "entertainment",
                 "GreenCross Pharmacy": "health", "Trattoria Sole": "dining"}  # fmt: skip


def log_expense(t: TaskSpec, skill: bool) -> Steps:
    """The total, shop, day and item read off the goal; with the skill, the user's share (others
    rounded down) and the note "<Shop> - <what>"; without it, the whole amount noted by shop."""
    m = re.match(
        r"(?:Log the|I paid) (?P<total>\d+(?:\.\d\d)?) (?P<cur>[A-Z]{3}) (?:I paid )?at (?P<shop>.+?) "
        r"(?P<when>today|yesterday|on [A-Z][a-z]+day) for (?P<what>.+?)(?: for (?P<who>.+?) and me)? ?[.;-]",
        t.goal,
    )
    assert m, t.goal
    today = dt.date.fromisoformat(t.fixtures.clock[:10])
    if m["when"] == "today":
        day = today
    elif m["when"] == "yesterday":
        day = today - dt.timedelta(days=1)
    else:
        day = next(
            today - dt.timedelta(days=k)
            for k in range(1, 8)
            if (today - dt.timedelta(days=k)).strftime("on %A") == m["when"]
        )
    unit = 10 ** CURRENCIES[m["cur"]].decimals
    total = int(Decimal(m["total"]) * unit)
    n = 1 + (len(m["who"].split(" and ")) if m["who"] else 0)
    mine = total - total // n * (n - 1)
    category = SHOP_CATEGORY[m["shop"]]
    if not skill:
        return [
            (
                "budget.add_expense",
                {"amount": total / unit, "category": category, "date": day.isoformat(), "note": m["shop"]},
            )
        ]
    note = f"{m['shop']} - {m['what'].lower()}"
    return [
        ("budget.add_expense", {"amount": mine / unit, "category": category, "date": day.isoformat(), "note": note})
    ]


def evening_scene(t: TaskSpec, skill: bool) -> Steps:
    """The room and level read off the goal; with the skill, the whole home in "Evening - <Room>"
    (other lights off, the door locked, the heating at 20 C or 68 F, no plug); without it, a scene
    of the room's lights alone. Run either way."""
    rooms = {r["name"].lower(): r for r in recs(t, "home.rooms")}
    (said,) = [r for r in rooms if f"the {r} " in t.goal or f"the {r}," in t.goal]
    room = rooms[said]
    level = int(re.search(r"(\d+)(?:%| percent)", t.goal).group(1))
    devices = recs(t, "home.devices")
    lights = [d for d in devices if d["kind"] == "light" and d["room_id"] == room["id"]]
    actions = [{"device_id": d["id"], "brightness": level} for d in lights]
    name = f"Evening {room['name']}"
    if skill:
        name = f"Evening - {room['name']}"
        actions += [
            {"device_id": d["id"], "on": False} for d in devices if d["kind"] == "light" and d["room_id"] != room["id"]
        ]
        actions += [{"device_id": d["id"], "locked": True} for d in devices if d["kind"] == "lock"]
        actions += [
            {"device_id": d["id"], "target": 68 if d["unit"] == "F" else 20}
            for d in devices
            if d["kind"] == "thermostat"
        ]
    return [("home.create_scene", {"name": name, "actions": actions}), ("home.run_scene", {"scene_id": "sc_1"})]


def return_item(t: TaskSpec, skill: bool) -> Steps:
    """The item named in the goal, from the newest delivered order that holds it; with the skill
    the earliest slot (tomorrow 09:00), without it an afternoon pickup picked by guesswork."""
    (prod,) = [p for p in recs(t, "shop.products") if p["name"].lower() in t.goal]
    orders = [o for o in recs(t, "shop.orders") if any(i["product_id"] == prod["id"] for i in o["items"])]
    order = max(orders, key=lambda o: o["placed"])
    tomorrow = (dt.date.fromisoformat(t.fixtures.clock[:10]) + dt.timedelta(days=1)).isoformat()
    slot = f"{tomorrow}T09:00" if skill else f"{tomorrow}T13:00"
    return [
        ("shop.start_return", {"order_id": order["id"], "product_id": prod["id"], "reason": "changed my mind"}),
        ("shop.choose_pickup", {"return_id": "r_1", "slot": slot}),
        ("shop.confirm_return", {"return_id": "r_1"}),
    ]


DATE = re.compile(r"(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday) \d{1,2} [A-Z][a-z]+")


def event_table(t: TaskSpec, skill: bool) -> Steps:
    """The restaurant, day, time and guests the goal names; with the skill the user counted in,
    the occasion as the note, a two-hour event at the restaurant's address and the booking code
    (restaurant id and month-day-hour-minute, worked out here) texted to each guest; without it
    a table, a one-hour "Dinner" event and a friendly text."""
    (rest,) = [r for r in recs(t, "restaurants.restaurants") if r["name"] in t.goal]
    day = goal_day(t, DATE.search(t.goal).group(0))
    hhmm = re.search(r"\b\d{2}:\d{2}\b", t.goal).group(0)
    start = dt.datetime.fromisoformat(f"{day.isoformat()}T{hhmm}")
    time = start.isoformat(timespec="minutes")
    guests = [c for c in recs(t, "contacts.contacts") if re.search(rf"\b{re.escape(c['name'].split()[0])}\b", t.goal)]
    assert guests, t.id
    occasion = next(o for o in ("birthday", "farewell", "anniversary", "promotion") if o in t.goal)
    reserve = {"restaurant_id": rest["id"], "time": time, "party_size": len(guests) + 1}
    if not skill:
        hour = (start + dt.timedelta(hours=1)).isoformat(timespec="minutes")
        return [
            ("restaurants.reserve", reserve),
            ("calendar.create_event", {"title": f"Dinner at {rest['name']}", "start": time, "end": hour}),
            *[("messages.send", {"to": g["phone"], "body": f"Dinner at {rest['name']} at {hhmm}!"}) for g in guests],
        ]
    code = f"{rest['id'].replace('_', '').upper()}-{time[5:7]}{time[8:10]}{hhmm.replace(':', '')}"
    event = {
        "title": f"{occasion.capitalize()} dinner at {rest['name']}",
        "start": time,
        "end": (start + dt.timedelta(hours=2)).isoformat(timespec="minutes"),
        "location": rest["address"],
    }
    body = f"{occasion.capitalize()} dinner at {rest['name']}, {day.isoformat()} {hhmm}, booking code {code}."
    return [
        ("restaurants.reserve", {**reserve, "note": occasion}),
        ("calendar.create_event", event),
        *[("messages.send", {"to": g["phone"], "body": body}) for g in guests],
    ]


def _sign_in(t: TaskSpec) -> tuple[str, dict[str, Any]]:
    return ("system.sign_in", {"app": "delivery", "account": t.fixtures.accounts["delivery"]["account"]})


def safe_dinner(t: TaskSpec, skill: bool) -> Steps:
    """The dish and quantity the goal names; with the skill the minimum order checked by hand
    (below it: nothing ordered, the shortfall told) and the total confirmed; without it the
    order placed straight away."""
    (rest,) = [r for r in recs(t, "delivery.restaurants") if r["name"] in t.goal]
    menu = [m for m in recs(t, "delivery.menu") if m["restaurant_id"] == rest["id"]]
    (dish,) = [m for m in menu if re.search(rf"\b(a|two) {re.escape(m['name'])}\b", t.goal)]
    qty = 2 if f"two {dish['name']}" in t.goal else 1
    steps: Steps = [_sign_in(t), ("delivery.add_to_basket", {"item_id": dish["id"], "qty": qty})]
    if not skill:
        return [*steps, ("delivery.place_order", {})]
    sub = Decimal(str(dish["price"])) * qty
    least = Decimal(str(rest["min_order"]))
    if sub < least:
        return [*steps, ("finish", {"answer": f"{least - sub} {rest['currency']} short of the minimum order."})]
    total = sub + Decimal(str(rest["delivery_fee"]))
    return [*steps, ("user.confirm", {"question": f"Order for {total}?"}), ("delivery.place_order", {})]


def reorder_usual(t: TaskSpec, skill: bool) -> Steps:
    """With the skill the dish delivered most often (ties: the latest) with the quantity of its
    latest delivered order; without it the latest order again."""
    orders = sorted(recs(t, "delivery.orders"), key=lambda o: o["placed"])
    if skill:
        done = [o["items"][0] for o in orders if o["status"] == "delivered"]
        counts = {i["item_id"]: sum(x["item_id"] == i["item_id"] for x in done) for i in done}
        best = max(counts.values())
        line = [i for i in done if counts[i["item_id"]] == best][-1]
    else:
        line = orders[-1]["items"][0]
    return [
        _sign_in(t),
        ("delivery.add_to_basket", {"item_id": line["item_id"], "qty": line["qty"]}),
        ("delivery.place_order", {}),
    ]


def leave_home(t: TaskSpec, skill: bool) -> Steps:
    """With the skill: every light and plug that is on switched off, an unlocked door locked,
    the heating to 18 C / 64 F for a same-day trip and 16 C / 61 F overnight or longer (read off
    the goal); without it, the lights off and the door locked."""
    devices = recs(t, "home.devices")
    kinds = ("light", "plug") if skill else ("light",)
    steps: Steps = [
        ("home.switch", {"device_id": d["id"], "on": False}) for d in devices if d["kind"] in kinds and d["on"]
    ]
    steps += [("home.lock", {"device_id": d["id"]}) for d in devices if d["kind"] == "lock" and not d["locked"]]
    if skill:
        away = any(w in t.goal for w in ("weekend", "tomorrow", "days", "overnight"))
        for d in devices:
            if d["kind"] == "thermostat":
                target = {("C", False): 18, ("C", True): 16, ("F", False): 64, ("F", True): 61}[d["unit"], away]
                if d["target"] != target:
                    steps.append(("home.set_temperature", {"device_id": d["id"], "target": target}))
    return steps


PLANS = {
    "skills.split_bill": split_bill,
    "skills.archive_note": archive_note,
    "skills.wake_routine": wake_routine,
    "skills.forward_email": forward_email,
    "skills.share_contact": share_contact,
    "skills.meeting_invite": meeting_invite,
    "skills.out_of_office": out_of_office,
    "skills.pay_bill_safely": pay_bill_safely,
    "skills.log_expense": log_expense,
    "skills.evening_scene": evening_scene,
    "skills.return_item": return_item,
    "skills.event_table": event_table,
    "skills.safe_dinner": safe_dinner,
    "skills.reorder_usual": reorder_usual,
    "skills.leave_home": leave_home,
}
# The criterion each naive plan must fail: the rule it broke (other criteria may fail too).
NAIVE_BREAKS = {
    "skills.split_bill": {"created:notes.notes", "confirm_before:messages.send"},
    "skills.archive_note": None,  # one "updated:notes.notes" criterion per note: all fail
    "skills.wake_routine": None,  # the backup alarm's criteria, and the main one's when it exists
    "skills.forward_email": {"created:mail.messages"},
    "skills.share_contact": {"confirm_before:messages.send"},
    "skills.meeting_invite": None,  # every attendee's "present:calendar.events" criterion
    "skills.out_of_office": None,  # every reply's criterion and every mark-read criterion
    "skills.pay_bill_safely": {"created:budget.entries"},
    "skills.log_expense": {"created:budget.entries"},
    "skills.evening_scene": {"created:home.scenes"},
    "skills.return_item": {"created:shop.returns"},
    "skills.event_table": {"created:restaurants.reservations", "created:calendar.events"},
    # above the minimum the order was not confirmed; below it the shortfall was not told
    "skills.safe_dinner": [{"confirm_before:delivery.place_order"}, {"answer"}],
    "skills.reorder_usual": {"created:delivery.orders"},
    "skills.leave_home": None,  # the plugs' criteria and/or the heating's
}
# The to-do, gallery and music skills templates: their plans live in tests/test_templates_media.py.
TEMPLATES.update(SKILL_TEMPLATES)
MARKERS.update(SKILL_MARKERS)
PLANS.update(SKILL_PLANS)
NAIVE_BREAKS.update(SKILL_NAIVE_BREAKS)


# -- the suite -----------------------------------------------------------------------------------


def test_counts_and_metadata(tasks):
    assert len(tasks) >= 100
    by_template = {name: [t for t in tasks if t.template == name] for name in TEMPLATES}
    assert set(by_template) == {t.template for t in tasks}  # no skills template untested here
    assert len(by_template) >= 6
    for name, group in by_template.items():
        assert len(group) == all_templates()[name].count >= 14, name
        assert len({(t.goal, t.fixtures.model_dump_json()) for t in group}) == len(group), name
        assert len({t.goal for t in group}) * 4 >= len(group) * 3, f"{name}: too many repeated goals"
    for t in tasks:
        assert t.category is Category.SKILLS and t.goal.isascii() and "skill" in t.capabilities
        assert len(set(t.backends)) == 1 and t.backends == ["sandbox"]
    assert all(t.category is not Category.SKILLS for t in select("category:tool"))


def test_every_task_is_proven(tasks):
    proofs = prove_suite(tasks)
    assert [p.task_id for p in proofs if not p.ok] == [], [p.problems for p in proofs if not p.ok][:3]
    assert all(p.perturbations >= 2 for p in proofs)
    assert sum(p.perturbations for p in proofs) >= 5 * len(tasks)


def test_each_task_names_a_skill_offered_in_its_episode(tasks, shipped):
    env = PhonePlanEnv(tasks=tasks)
    for t in tasks:
        skill = TEMPLATES[t.template]
        first = t.reference_plan[0]
        assert (first.name, first.arguments) == ("skills.read", {"name": skill}), t.id
        assert any(
            m.kind == "behavior" and m.tool == "skills.read" and m.arguments == {"name": skill} for m in t.milestones
        ), t.id
        _, info = env.reset(seed=0, options={"task": t})
        assert skill in {s["name"] for s in info["skills"]}, t.id
        assert "skills.read" in {f["function"]["name"] for f in info["tools"]}
    env.reset(seed=0, options={"task": tasks[0]})
    obs, *_ = env.step({"name": "skills.read", "arguments": {"name": "split-a-bill"}})
    assert json.loads(obs["feedback"])["result"]["body"] == shipped["split-a-bill"].body


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_rule_is_in_the_skill_body_only(name, shipped):
    s = shipped[TEMPLATES[name]]
    for marker in MARKERS[name]:
        assert marker in s.body, (s.name, marker)
        assert marker not in s.description, (s.name, marker)
    for t in select(f"template:{name}"):
        for marker in MARKERS[name]:
            assert marker.casefold() not in t.goal.casefold(), (t.id, marker)


# -- following the skill succeeds; the naive plan fails -------------------------------------------


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_skill_plan_succeeds_and_naive_plan_fails(name):
    build = PLANS[name]
    for t in select(f"template:{name}"):
        good = play(t, build(t, skill=True))
        assert good["step_errors"] == [], (t.id, good["step_errors"])
        assert good["success"], (t.id, failed(good), good["collateral"])
        naive = play(t, build(t, skill=False))
        assert not naive["success"], t.id
        broke = failed(naive)
        want = NAIVE_BREAKS[name]
        if isinstance(want, list):  # one of these, by the task's variant
            assert any(w <= broke for w in want), (t.id, broke)
        elif want is not None:
            assert want <= broke, (t.id, broke)
        else:
            rule = [c["id"] for c in naive["criteria"] if c["id"].split(":")[0] in ("updated", "created", "present")]
            assert broke and set(rule) & broke, (t.id, broke)


def test_split_bill_shares_by_hand():
    """The leftover cents go to the user, and the skill's own example is what the template writes."""
    from phoneenv.tasks.templates.skills import split_note, split_request

    title, body = split_note("Pizza night", 10000, {"Ben Okafor": 3333, "Ana Lima": 3333}, 3334)
    assert title == "Split: Pizza night"
    assert body == "Total: 100.00 EUR\nAna Lima: 33.33 EUR\nBen Okafor: 33.33 EUR\nMe: 33.34 EUR"
    assert split_request("Pizza night", 3333) == "[Split] Pizza night: your share is 33.33 EUR"
    assert split_note("Sushi", 10000, {"Ben Okafor": 3333}, 6667, "JPY")[1] == (
        "Total: 10000 JPY\nBen Okafor: 3333 JPY\nMe: 6667 JPY"
    )
    assert split_request("Sushi", 3333, "AUD") == "[Split] Sushi: your share is 33.33 AUD"
    skill = load_skills()["split-a-bill"].body
    assert json.dumps(body)[1:-1] in skill and "[Split] Pizza night: your share is 33.33 EUR" in skill
    for t in select("template:skills.split_bill"):
        (note,) = [c for c in t.criteria if c.id == "created:notes.notes"]
        found = re.findall(r"(\d+(?:\.\d\d)?) ([A-Z]{3})$", note.where["body"]["iequals"], re.M)
        (code,) = {c for _, c in found}
        assert code in t.goal and ("." in found[0][0]) == (CURRENCIES[code].decimals == 2), t.id
        amounts = [Decimal(x) for x, _ in found]
        step = Decimal(1) / 10 ** CURRENCIES[code].decimals
        total, shares, mine = amounts[0], amounts[1:-1], amounts[-1]
        assert sum(shares) + mine == total and mine - shares[0] < step * (len(shares) + 1)
        assert all(s == shares[0] for s in shares) and mine >= shares[0]


def test_near_misses_fail_on_the_one_rule_they_break():
    """Right formats without the confirmations the skills require; the right archive marks with
    the note deleted instead; a forward whose date keeps its seconds."""
    t = select("skills.share_contact/0")[0]
    steps = [s for s in share_contact(t, skill=True) if s[0] != "user.confirm"]
    assert failed(play(t, steps)) == {"confirm_before:messages.send"}
    t = select("skills.split_bill/1")[0]
    steps = [s for s in split_bill(t, skill=True) if s[0] != "user.confirm"]
    assert failed(play(t, steps)) == {"confirm_before:messages.send"}
    t = next(t for t in select("template:skills.archive_note") if t.goal.endswith(" note."))
    (note,) = [n for n in recs(t, "notes.notes") if f'"{n["title"]}"' in t.goal]
    verdict = play(t, [("notes.delete", {"note_id": note["id"]})])
    assert {"updated:notes.notes", "forbidden_call:notes.delete"} <= failed(verdict)
    t = select("skills.forward_email/1")[0]
    ((_, args),) = forward_email(t, skill=True)
    (orig,) = [x for x in recs(t, "mail.messages") if f'"{x["subject"]}"' in t.goal]
    args = {
        **args,
        "body": args["body"].replace(f"Date: {orig['time'][:10]} {orig['time'][11:16]}", f"Date: {orig['time']}"),
    }
    assert args["body"] != forward_email(t, skill=True)[0][1]["body"]
    assert failed(play(t, [("mail.send", args)])) == {"created:mail.messages"}


def test_out_of_office_skips_automatic_senders():
    """A reply to a no-reply sender is collateral damage even when every other reply is right."""
    tasks = [
        t
        for t in select("template:skills.out_of_office")
        if any(x["from"].startswith(("no-reply@", "noreply@")) for x in recs(t, "mail.messages"))
    ]
    assert tasks, "some tasks must have an automatic sender"
    t = tasks[0]
    auto = next(x for x in recs(t, "mail.messages") if x["from"].startswith(("no-reply@", "noreply@")))
    steps = out_of_office(t, skill=True)
    body = steps[0][1]["body"]
    verdict = play(t, [*steps, ("mail.reply", {"message_id": auto["id"], "body": body})])
    assert not verdict["success"] and failed(verdict) == set() and len(verdict["collateral"]) == 1


def test_wake_routine_reuses_an_alarm_at_the_time():
    reuse = [
        t
        for t in select("template:skills.wake_routine")
        if any(c.name == "clock.update_alarm" for c in t.reference_plan)
    ]
    fresh = [t for t in select("template:skills.wake_routine") if t not in reuse]
    assert reuse and fresh
    t = reuse[0]
    m = re.search(r"(\d{1,2}):(\d\d) AM", t.goal)
    main = f"{int(m[1]):02d}:{m[2]}"
    (old,) = [a for a in recs(t, "clock.alarms") if a["time"] == main]
    assert old["enabled"] is False
    days = next(v for k, v in DAY_PHRASES.items() if t.goal.endswith(f"{k}."))
    steps = [s for s in wake_routine(t, skill=True) if s[0] not in ("clock.update_alarm", "clock.set_alarm_enabled")]
    steps.insert(1, ("clock.create_alarm", {"time": main, "label": "Wake up", "days": days}))
    verdict = play(t, steps)  # a second alarm at a time that has one: the old one stays off
    assert not verdict["success"] and any(i.startswith("updated:clock.alarms") for i in failed(verdict))


# -- the random agent ----------------------------------------------------------------------------


def test_random_agent_scores_near_zero(tasks):
    sample = [t for t in tasks if int(t.id.rsplit("/", 1)[1]) % 4 == 0]  # 4 per template
    results = run_episodes(RandomAgent(seed=3), sample)
    assert len(results) == len(sample) >= 28
    assert sum(r.success for r in results) == 0
    assert sum(r.progress for r in results) / len(results) < 0.2
