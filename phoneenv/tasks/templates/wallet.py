"""Wallet and budget templates, and the seeding of both apps from a :class:`World`.

Seeding (each app from its own stream, amounts drawn at euro size and written in the world's
currency with :meth:`World.price`): :func:`seed_wallet` signs the wallet in and adds a primary
and a savings account, payees for five contacts and three companies, unpaid bills with due
dates in the coming weeks and last month's paid ones; :func:`seed_budget` sets the home currency
and logs a month of expenses with two budgets.

| template | what the user asks | verified by |
|---|---|---|
| ``wallet.pay_back`` | pay back what a contact's text says is owed | the transfer to that payee, the balance |
| ``wallet.pay_bill`` | pay a bill now, or schedule it before its due date | the bill's status, the transfer |
| ``wallet.settle_requests`` | pay one incoming request, decline another | both requests' status, the transfer |
| ``wallet.split_dinner`` | split last night's dinner with the event's attendees | one request per attendee for the share |
| ``budget.log_receipt`` | log the receipt mail's amount as an expense | the entry: amount, category, date |
| ``budget.spending_answer`` | how much went on a category this week or month | the typed money answer, read only |
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from phoneenv.contract import Criterion, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer,
    answer_if_said,
    ask_first,
    behavior,
    call,
    confirm_variant,
    fails,
    finishing,
    first_name,
    not_reported_undone,
    passes,
    pick,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.world import COMPANY_TLD, CURRENCIES, World

__all__ = [
    "BILL_KINDS",
    "add_text",
    "balance_after",
    "exempt",
    "from_minor",
    "paid",
    "period_bounds",
    "secure",
    "seed_budget",
    "seed_wallet",
    "step_up_fixtures",
    "to_minor",
]

BILL_KINDS = [
    ("electricity", "Brightpower Energy", "brightpower", 60, 140),
    ("internet", "Urbanfiber", "urbanfiber", 30, 60),
    ("phone", "Cloudnest Mobile", "cloudnest", 15, 45),
]
"""(what the bill is for, company, mail domain, euro range of the amount)."""
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip


def to_minor(amount: float, currency: str) -> int:
    """``amount`` in ``currency``'s minor unit (cents, or whole yen), as the wallet app stores it."""
    return round(amount * 10 ** CURRENCIES[currency].decimals)


def from_minor(minor: int, currency: str) -> float:
    """An amount in ``currency``'s minor unit as whole units (``1250`` -> 12.5)."""
    decimals = CURRENCIES[currency].decimals
    return round(minor / 10**decimals, decimals)


def period_bounds(day: dt.date, period: str) -> tuple[dt.date, dt.date]:
    """First and last day of the week (Monday-Sunday) or calendar month holding ``day``, as the
    budget app counts them."""
    if period == "week":
        start = day - dt.timedelta(days=day.weekday())
        return start, start + dt.timedelta(days=6)
    start = day.replace(day=1)
    return start, (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)


def balance_after(w: World, balance: float, *amounts: float) -> float:
    """``balance`` less ``amounts``, exact in the world's currency's minor unit."""
    cur = w.currency
    return from_minor(to_minor(balance, cur) - sum(to_minor(a, cur) for a in amounts), cur)


def seed_wallet(w: World) -> dict[str, Any]:
    """Sign the wallet in and seed its tables from stream ``"wallet"``; returns the seeded
    records by role: ``main`` (the primary account), ``people`` (contact id → payee), ``bills``
    (kind → this month's unpaid bill), ``companies`` (kind → payee)."""
    rng = w.stream("wallet")
    w.accounts["wallet"] = {"account": w.user_email, "signed_in": True}
    main = {
        "id": "acct_1",
        "name": "Main",
        "balance": w.price(rng.randrange(900, 3000) + rng.randrange(100) / 100),
        "currency": w.currency,
        "primary": True,
    }
    savings = {
        "id": "acct_2",
        "name": "Savings",
        "balance": w.price(rng.randrange(2000, 9000)),
        "currency": w.currency,
        "primary": False,
    }
    w.table("wallet.accounts").extend([main, savings])
    payees = w.table("wallet.payees")
    people: dict[str, dict[str, Any]] = {}
    for c in rng.sample(w.contacts, 6):
        rec = {
            "id": f"py_{len(payees) + 1}",
            "name": c["name"],
            "handle": c["phone"],
            "kind": "person",
            "contact_id": c["id"],
        }
        payees.append(rec)
        people[c["id"]] = rec
    companies: dict[str, dict[str, Any]] = {}
    bills: dict[str, dict[str, Any]] = {}
    tld = COMPANY_TLD[w.locale.country]
    month = MONTHS[w.now.month - 1]
    last = MONTHS[w.now.month - 2]
    for kind, company, domain, lo, hi in BILL_KINDS:
        rec = {
            "id": f"py_{len(payees) + 1}",
            "name": company,
            "handle": f"billing@{domain}.{tld}",
            "kind": "company",
            "contact_id": None,
        }
        payees.append(rec)
        companies[kind] = rec
        old_due = (w.now - dt.timedelta(days=rng.randrange(25, 35))).date()
        w.table("wallet.bills").append(
            {
                "id": f"b_{len(w.table('wallet.bills')) + 1}",
                "payee_id": rec["id"],
                "title": f"{kind.capitalize()} {last}",
                "amount_due": w.price(rng.randrange(lo, hi) + rng.randrange(100) / 100),
                "currency": w.currency,
                "due": old_due.isoformat(),
                "status": "paid",
                "scheduled_for": None,
                "paid_on": (old_due - dt.timedelta(days=2)).isoformat(),
            }
        )
    for kind, _, _, lo, hi in BILL_KINDS:
        bill = {
            "id": f"b_{len(w.table('wallet.bills')) + 1}",
            "payee_id": companies[kind]["id"],
            "title": f"{kind.capitalize()} {month}",
            "amount_due": w.price(rng.randrange(lo, hi) + rng.randrange(100) / 100),
            "currency": w.currency,
            "due": (w.now + dt.timedelta(days=rng.randrange(4, 21))).date().isoformat(),
            "status": "unpaid",
            "scheduled_for": None,
            "paid_on": None,
        }
        w.table("wallet.bills").append(bill)
        bills[kind] = bill
    w.table("wallet.transactions")
    w.table("wallet.requests")
    return {"main": main, "people": people, "companies": companies, "bills": bills}


CATEGORY_SEEDS = {
    "groceries": (["Supermarket", "Farmers market", "Bakery"], 8, 70),
    "dining": (["Lunch", "Coffee", "Dinner out", "Takeaway"], 4, 45),
    "transport": (["Train ticket", "Taxi", "Fuel"], 3, 60),
    "entertainment": (["Cinema", "Concert", "Streaming"], 8, 40),
    "health": (["Pharmacy", "Physio"], 6, 50),
}


def seed_budget(w: World, n: int = 10) -> list[dict[str, Any]]:
    """Seed the budget app from stream ``"budget"``: the world's currency as home currency,
    ``n`` expenses over the last 40 days, budgets for groceries and dining. Returns the entries."""
    rng = w.stream("budget")
    w.table("budget.settings").append({"id": "currency", "value": w.currency})
    entries = w.table("budget.entries")
    for _ in range(n):
        cat = rng.choice(sorted(CATEGORY_SEEDS))
        notes, lo, hi = CATEGORY_SEEDS[cat]
        entries.append(
            {
                "id": f"e_{len(entries) + 1}",
                "amount": w.price(rng.randrange(lo, hi) + rng.randrange(100) / 100),
                "currency": w.currency,
                "category": cat,
                "date": (w.now - dt.timedelta(days=rng.randrange(0, 40))).date().isoformat(),
                "note": rng.choice(notes),
            }
        )
    w.table("budget.budgets").extend(
        [
            {"id": "bg_1", "category": "groceries", "limit": w.price(300), "currency": w.currency, "period": "month"},
            {"id": "bg_2", "category": "dining", "limit": w.price(150), "currency": w.currency, "period": "month"},
        ]
    )
    return entries


def add_text(w: World, number: str, body: str, minutes_ago: int) -> dict[str, Any]:
    """Add an unread incoming text from ``number``, ``minutes_ago`` before the world's now;
    returns the record."""
    msg = {
        "id": w.next_id("messages.messages", "m_"),
        "number": number,
        "direction": "in",
        "body": body,
        "time": w.ts(minutes_ago),
        "read": False,
    }
    w.table("messages.messages").append(msg)
    return msg


def paid(w: World, payee: dict[str, Any], amount: float, main: dict[str, Any], kind: str, *extra: float) -> list[Any]:
    """Criteria of one payment from the main account: the transaction and the new balance
    (``extra``: other payments of the task from the same account)."""
    return [
        state("wallet.transactions", "created", payee_id=payee["id"], amount=amount, direction="out", kind=kind),
        state("wallet.accounts", "updated", id=main["id"], balance=balance_after(w, main["balance"], amount, *extra)),
    ]


def secure(w: World, plan: list[ToolCall], criteria: list[Criterion], tool: str, what: str) -> tuple[bool, bool]:
    """Draw how this phone guards payments: a confirmation the user asks for (30%) and/or the
    PIN step-up (50%); adds the steps before the last call of ``tool`` in ``plan`` (the plan
    ends with that call) and the criteria. Returns (confirm, step_up)."""
    confirm = confirm_variant(w, 0.3)
    step_up = w.rng.random() < 0.5
    act = plan.pop()
    if confirm:
        ask_first(plan, criteria, tool, f"{what}?")
    if step_up:
        plan.append(call("user.authenticate", reason=what))
        criteria.append(behavior("step_up", tool))
    plan.append(act)
    return confirm, step_up


def exempt(plan: list[ToolCall], *more: str) -> list[str]:
    """Arguments a perturbation may change without changing the task: questions, reasons,
    payment notes, the final answer (plus ``more``)."""
    out = [f"{len(plan) - 1}.answer", *more]
    for i, c in enumerate(plan):
        for arg in ("question", "reason", "note"):
            if arg in c.arguments:
                out.append(f"{i}.{arg}")
    return out


def step_up_fixtures(w: World, step_up: bool) -> Any:
    """The world's fixtures with the PIN step-up on when ``step_up``, else None (the default)."""
    return w.fixtures(step_up=True) if step_up else None


# -- wallet -------------------------------------------------------------------------------------

OWED = ["the concert tickets", "the pizza", "the taxi home", "the groceries", "the cinema", "the birthday present"]
OWED_TEXTS = [
    "Hey! You still owe me {m} for {what} :)",
    "Hi, could you send me the {m} for {what}?",
    "No rush, but it's {m} for {what} when you get a chance",
]


@template(
    "wallet.pay_back",
    apps=["wallet", "messages", "contacts"],
    domain=Domain.FINANCE,
    difficulty=3,
    capabilities=["lookup", "read", "pay"],
    count=12,
    max_steps=20,
)
def pay_back(w: World) -> Draft:
    """Template ``wallet.pay_back``: "Ana texted me about the money I owe her - pay her back":
    the amount is in her text (another friend's text names another amount)."""
    seeded = seed_wallet(w)
    main = seeded["main"]
    c, other = w.rng.sample([w.contact_by_number(p["handle"]) for p in seeded["people"].values()], 2)
    what, other_what = w.rng.sample(OWED, 2)
    amount = w.price(w.rng.choice([12.5, 18, 23.4, 35, 42.8, 60, 27.9]))
    other_amount = w.price(w.rng.choice([9, 15.5, 31, 48]))
    text, other_text = w.rng.sample(OWED_TEXTS, 2)
    add_text(w, c["phone"], text.format(m=w.money(amount, symbol=True), what=what), w.ago_within(w.rng, 30, 600))
    add_text(
        w, other["phone"], other_text.format(m=w.money(other_amount), what=other_what), w.ago_within(w.rng, 30, 600)
    )
    payee = seeded["people"][c["id"]]
    first = first_name(c)
    (goal,) = pick(
        w,
        [
            f"{first} texted me about money I owe - pay them back through my wallet.",
            f"Send {first} what I owe them; the amount is in their text.",
            f"Check {first}'s message and pay back what I owe with the wallet app.",
            f"Settle up with {first} - they messaged me the amount.",
        ],
    )
    plan = [
        call("contacts.search", query=first),
        call("messages.read_thread", number=c["phone"]),
        call("wallet.search_payees", query=first),
        call("wallet.send_money", payee_id=payee["id"], amount=amount, note=what.removeprefix("the ").capitalize()),
    ]
    criteria: list[Criterion] = [
        *paid(w, payee, amount, main, "transfer"),
        not_reported_undone("pay", "send", "transfer"),
    ]
    secure(w, plan, criteria, "wallet.send_money", f"Send {w.money(amount)} to {c['name']}")
    step_up = "user.authenticate" in [p.name for p in plan]
    plan.append(call("finish", answer=f"Sent {w.money(amount)} to {c['name']}."))
    send = len(plan) - 2
    other_payee = seeded["people"][other["id"]]
    probes = [
        passes("another note", replacing(plan, send, call("wallet.send_money", payee_id=payee["id"], amount=amount))),
        passes("read the unread list first", [call("messages.list_unread"), *plan]),
        fails(
            "the other friend's amount",
            replacing(plan, send, call("wallet.send_money", payee_id=payee["id"], amount=other_amount)),
        ),
        fails(
            "paid the other friend",
            replacing(plan, send, call("wallet.send_money", payee_id=other_payee["id"], amount=amount)),
        ),
        fails("reported as not done", finishing(plan, f"Sorry, I couldn't pay {c['name']}.")),
        fails(
            "paid from savings",
            replacing(plan, send, call("wallet.send_money", payee_id=payee["id"], amount=amount, account_id="acct_2")),
        ),
    ]
    if step_up:
        probes.append(fails("never enters the PIN", [p for p in plan if p.name != "user.authenticate"]))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[
            behavior(
                "required_call", "messages.read_thread", id="read_text", arguments={"number": {"number": c["phone"]}}
            ),
            criteria[0],
        ],
        plan=plan,
        perturb_exempt=exempt(plan),
        probes=probes,
        fixtures=step_up_fixtures(w, step_up),
    )


@template(
    "wallet.pay_bill",
    apps=["wallet"],
    domain=Domain.FINANCE,
    difficulty=2,
    capabilities=["lookup", "pay", "schedule"],
    count=12,
)
def pay_bill(w: World) -> Draft:
    """Template ``wallet.pay_bill``: "Pay my electricity bill" (now, in full) or "Schedule my
    internet bill for the day before it's due"."""
    seeded = seed_wallet(w)
    main = seeded["main"]
    kind, schedule = pick(w, [k for k, *_ in BILL_KINDS], [False, True])
    bill = seeded["bills"][kind]
    other = seeded["bills"][next(k for k, *_ in BILL_KINDS if k != kind)]
    payee = seeded["companies"][kind]
    plan = [call("wallet.bills", status="unpaid")]
    criteria: list[Criterion]
    if schedule:
        day = (dt.date.fromisoformat(bill["due"]) - dt.timedelta(days=1)).isoformat()
        goal = w.rng.choice(
            [f"Schedule my {kind} bill to be paid the day before it's due.",
             f"Set up the {kind} bill so it gets paid one day before the due date."]
        )  # fmt: skip
        plan.append(call("wallet.schedule_bill", bill_id=bill["id"], date=day))
        criteria = [state("wallet.bills", "updated", id=bill["id"], status="scheduled", scheduled_for=day)]
        tool, what = "wallet.schedule_bill", f"Schedule {bill['title']} for {day}"
        wrong = call("wallet.pay_bill", bill_id=bill["id"])
        wrong_name = "paid now instead of scheduling"
    else:
        goal = w.rng.choice(
            [f"Pay my {kind} bill.", f"Please pay this month's {kind} bill now.",
             f"The {kind} bill is in my wallet - pay it."]
        )  # fmt: skip
        plan.append(call("wallet.pay_bill", bill_id=bill["id"]))
        criteria = [
            state("wallet.bills", "updated", id=bill["id"], status="paid"),
            *paid(w, payee, bill["amount_due"], main, "bill"),
        ]
        tool, what = "wallet.pay_bill", f"Pay {bill['title']}: {w.money(bill['amount_due'])}"
        wrong = call("wallet.schedule_bill", bill_id=bill["id"], date=bill["due"])
        wrong_name = "scheduled instead of paying"
    _, step_up = secure(w, plan, criteria, tool, what)
    plan.append(call("finish", answer=f"Done: {bill['title']}."))
    act = len(plan) - 2
    probes = [
        passes("listed every bill", replacing(plan, 0, call("wallet.bills"))),
        fails(
            "the wrong bill",
            replacing(
                plan, act, plan[act].model_copy(update={"arguments": {**plan[act].arguments, "bill_id": other["id"]}})
            ),
        ),
        fails(wrong_name, replacing(plan, act, wrong)),
    ]
    if step_up:
        probes.append(fails("never enters the PIN", [p for p in plan if p.name != "user.authenticate"]))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[criteria[0]],
        plan=plan,
        perturb_exempt=exempt(plan),
        probes=probes,
        fixtures=step_up_fixtures(w, step_up),
    )


@template(
    "wallet.settle_requests",
    apps=["wallet"],
    domain=Domain.FINANCE,
    difficulty=3,
    capabilities=["lookup", "pay", "update"],
    count=12,
)
def settle_requests(w: World) -> Draft:
    """Template ``wallet.settle_requests``: "Pay Ben's request for the taxi and decline the
    one from Cleo": two pending incoming requests (and an old paid one from Ben)."""
    seeded = seed_wallet(w)
    main = seeded["main"]
    a, b = w.rng.sample(list(seeded["people"].values()), 2)
    what_a, what_b = w.rng.sample(OWED, 2)
    amount_a, amount_b = w.price(w.rng.choice([14, 22.5, 38, 45.9])), w.price(w.rng.choice([11, 19.5, 26]))
    reqs = w.table("wallet.requests")
    for payee, amount, what, status, ago in [
        (a, w.price(17), "the last dinner", "paid", 9000),
        (a, amount_a, what_a, "pending", w.rng.randrange(60, 2000)),
        (b, amount_b, what_b, "pending", w.rng.randrange(60, 2000)),
    ]:
        reqs.append(
            {
                "id": f"rq_{len(reqs) + 1}",
                "direction": "in",
                "payee_id": payee["id"],
                "amount": amount,
                "currency": w.currency,
                "note": what.removeprefix("the ").capitalize(),
                "status": status,
                "created": w.ts(ago),
            }
        )
    ra, rb = reqs[1], reqs[2]
    fa, fb = a["name"].split()[0], b["name"].split()[0]
    (goal,) = pick(
        w,
        [
            f"Pay {fa}'s money request for {what_a.removeprefix('the ')} and decline the one from {fb}.",
            f"In my wallet, accept {fa}'s request and turn down {fb}'s.",
            f"Decline {fb}'s payment request, but pay the one from {fa}.",
        ],
    )
    plan = [call("wallet.requests", direction="in", status="pending"), call("wallet.pay_request", request_id=ra["id"])]
    criteria: list[Criterion] = [
        state("wallet.requests", "updated", id=ra["id"], status="paid"),
        suffixed(state("wallet.requests", "updated", id=rb["id"], status="declined"), "declined"),
        *paid(w, a, amount_a, main, "request"),
    ]
    _, step_up = secure(w, plan, criteria, "wallet.pay_request", f"Pay {w.money(amount_a)} to {a['name']}")
    plan += [call("wallet.decline_request", request_id=rb["id"]), call("finish", answer="Paid one, declined one.")]
    pay = next(i for i, p in enumerate(plan) if p.name == "wallet.pay_request")
    probes = [
        passes("declined first", [plan[0], plan[-2], *plan[1:-2], plan[-1]]),
        fails("paid both", replacing(plan, -2, call("wallet.pay_request", request_id=rb["id"]))),
        fails(
            "swapped",
            replacing(
                replacing(plan, pay, call("wallet.pay_request", request_id=rb["id"])),
                -2,
                call("wallet.decline_request", request_id=ra["id"]),
            ),
        ),
        fails(
            "paid by hand instead", replacing(plan, pay, call("wallet.send_money", payee_id=a["id"], amount=amount_a))
        ),
    ]
    if step_up:
        probes.append(fails("never enters the PIN", [p for p in plan if p.name != "user.authenticate"]))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[criteria[0]],
        plan=plan,
        perturb_exempt=exempt(plan),
        probes=probes,
        fixtures=step_up_fixtures(w, step_up),
    )


RESTAURANTS = ["Luigi's", "Sakura Garden", "The Golden Fork", "Casa Verde", "Blue Lantern", "Bistro Margot"]


@template(
    "wallet.split_dinner",
    apps=["wallet", "calendar", "contacts"],
    domain=Domain.FINANCE,
    difficulty=4,
    capabilities=["lookup", "multi-entity", "arithmetic", "request"],
    count=12,
    max_steps=25,
)
def split_dinner(w: World) -> Draft:
    """Template ``wallet.split_dinner``: "Split the 96 euro bill from last night's dinner at
    Luigi's with everyone who came": the attendees come from the calendar event; one of them may
    not be a payee yet (added from the address book)."""
    seeded = seed_wallet(w)
    people = list(seeded["people"].values())
    guests = w.rng.sample(people, w.rng.choice([2, 3]))
    new_guest = None
    if w.rng.random() < 0.5:
        new_guest = w.rng.choice([c for c in w.contacts if c["id"] not in seeded["people"]])
    names = [g["name"] for g in guests] + ([new_guest["name"]] if new_guest else [])
    restaurant = RESTAURANTS[w.index % len(RESTAURANTS)]
    start = dt.datetime.combine(w.now.date() - dt.timedelta(days=1), dt.time(19, 30))
    events = w.table("calendar.events")
    event = {
        **events[0],
        "id": w.next_id("calendar.events", "ev_"),
        "title": f"Dinner at {restaurant}",
        "start": start.isoformat(timespec="minutes"),
        "end": (start + dt.timedelta(hours=2)).isoformat(timespec="minutes"),
        "location": restaurant,
        "attendees": tuple(sorted(names)),
        "notes": None,
        "all_day": False,
    }
    events.append(event)
    n = len(names) + 1
    total = w.price(w.rng.randrange(25, 45) * n + w.rng.choice([0, 0.5, 0.8]))
    minor = to_minor(total, w.currency)
    share = from_minor(minor // n, w.currency)
    (goal,) = pick(
        w,
        [
            f"Split the {w.money(total)} bill from last night's dinner at {restaurant} with everyone who came.",
            f"Dinner at {restaurant} yesterday was {w.money(total, symbol=True)} - request an equal share from each "
            "person who was there (I pay my share too).",
        ],
    )
    plan = [call("calendar.search_events", query=restaurant), call("wallet.search_payees", query="")]
    ids = [g["id"] for g in guests]
    if new_guest is not None:
        new_id = f"py_{len(w.table('wallet.payees')) + 1}"
        plan += [
            call("contacts.search", query=new_guest["name"]),
            call("wallet.add_payee", contact_id=new_guest["id"]),
        ]
        ids.append(new_id)
    plan += [
        call("wallet.split_bill", total=total, payee_ids=ids, note=f"Dinner at {restaurant}"),
        call("finish", answer=f"Requested {w.money(share)} from each of {len(ids)} people."),
    ]
    # An equal share not a whole number of cents may be rounded either way when asked for one by one.
    share_up = from_minor(-(-minor // n), w.currency)
    amount = share if share_up == share else {"in": [share, share_up]}
    criteria: list[Criterion] = [
        suffixed(state("wallet.requests", "created", payee_id=pid, amount=amount, direction="out"), pid) for pid in ids
    ]
    if new_guest is not None:
        criteria.append(state("wallet.payees", "created", contact_id=new_guest["id"]))
    split = len(plan) - 2
    outsider = next(p for p in people if p not in guests)
    words = [x for x in restaurant.replace("'s", "").split() if len(x) > 3]  # what a search may name
    probes = [
        passes(
            "requested one by one",
            replacing(plan, split, *[call("wallet.request_money", payee_id=pid, amount=share) for pid in ids]),
        ),
        fails(
            "forgot to count the user",
            replacing(plan, split, call("wallet.split_bill", total=total, payee_ids=ids, include_me=False)),
        ),
        fails(
            "someone who was not there",
            replacing(plan, split, call("wallet.split_bill", total=total, payee_ids=[*ids, outsider["id"]])),
        ),
        fails("left one guest out", replacing(plan, split, call("wallet.split_bill", total=total, payee_ids=ids[1:]))),
        fails(
            "a share too large",
            replacing(
                plan,
                split,
                *[
                    call("wallet.request_money", payee_id=pid, amount=from_minor(minor // n + 100, w.currency))
                    for pid in ids
                ],
            ),
        ),
    ]
    if share_up != share:
        probes.append(
            passes(
                "one by one, rounded up",
                replacing(plan, split, *[call("wallet.request_money", payee_id=pid, amount=share_up) for pid in ids]),
            )
        )
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[
            behavior(
                "required_call",
                "calendar.search_events",
                id="found_dinner",
                arguments={"query": {"any": [{"icontains": x} for x in ["dinner", *words]]}},
            ),
            criteria[0],
        ],
        plan=plan,
        perturb_exempt=exempt(plan),
        probes=probes,
    )


# -- budget -------------------------------------------------------------------------------------

MERCHANTS = [
    ("Cafe Luna", "dining", "cafeluna", 8, 40),
    ("FreshMart", "groceries", "freshmart", 20, 90),
    ("CityCab", "transport", "citycab", 9, 35),
    ("Apex Cinemas", "entertainment", "apexcinemas", 10, 30),
    ("GreenCross Pharmacy", "health", "greencross", 5, 40),
    ("Trattoria Sole", "dining", "trattoriasole", 25, 80),
]


@template(
    "budget.log_receipt",
    apps=["budget", "mail"],
    domain=Domain.FINANCE,
    difficulty=2,
    capabilities=["lookup", "read", "create"],
    count=12,
)
def log_receipt(w: World) -> Draft:
    """Template ``budget.log_receipt``: "Add the Cafe Luna receipt from my mail to my budget":
    the amount and the day come from the receipt mail, the category from what the shop is."""
    seed_budget(w)
    merchant, category, domain, lo, hi = MERCHANTS[w.index % len(MERCHANTS)]
    amount = w.price(w.rng.randrange(lo, hi) + w.rng.randrange(100) / 100)
    day = (w.now - dt.timedelta(days=w.rng.randrange(1, 4))).date()
    mails = w.table("mail.messages")
    mail = {
        **mails[0],
        "id": w.next_id("mail.messages", "em_"),
        "folder": "inbox",
        "from": f"receipts@{domain}.{COMPANY_TLD[w.locale.country]}",
        "to": (w.user_email,),
        "subject": f"Your receipt from {merchant}",
        "body": f"Thank you for your visit on {day.isoformat()}.\nTotal paid: {w.money(amount)}\nSee you soon!",
        "time": f"{day.isoformat()}T{w.rng.randrange(10, 21):02d}:{w.rng.randrange(60):02d}:00",
        "read": False,
    }
    mails.append(mail)
    (goal,) = pick(
        w,
        [
            f"Add the {merchant} receipt from my mail to my budget.",
            f"Log what I paid at {merchant} as an expense - the receipt is in my inbox.",
        ],
    )
    plan = [
        call("mail.search", query=merchant),
        call("mail.read", message_id=mail["id"]),
        call("budget.add_expense", amount=amount, category=category, date=day.isoformat(), note=merchant),
        call("finish", answer=f"Logged {w.money(amount)} at {merchant}."),
    ]
    crit = state(
        "budget.entries", "created", amount=amount, category=category, date=day.isoformat(), currency=w.currency
    )
    add = 2
    wrong_cat = "shopping" if category != "shopping" else "other"
    return Draft(
        goal=goal,
        criteria=[
            crit,
            # an amount or a day the answer tells is the receipt's
            answer_if_said("money", amount, currency=w.currency, tolerance=0.001),
            answer_if_said("date", day.isoformat()),
        ],
        milestones=[
            behavior("required_call", "mail.read", id="read_receipt", arguments={"message_id": mail["id"]}),
            crit,
        ],
        plan=plan,
        perturb_exempt=exempt(plan, "2.note"),
        probes=[
            passes(
                "currency named",
                replacing(
                    plan,
                    add,
                    call(
                        "budget.add_expense",
                        amount=amount,
                        category=category,
                        date=day.isoformat(),
                        currency=w.currency,
                    ),
                ),
            ),
            fails(
                "logged for today", replacing(plan, add, call("budget.add_expense", amount=amount, category=category))
            ),
            fails(
                "the wrong category",
                replacing(
                    plan, add, call("budget.add_expense", amount=amount, category=wrong_cat, date=day.isoformat())
                ),
            ),
            fails("logged twice", replacing(plan, add, plan[add], plan[add])),
            fails("told another amount", finishing(plan, f"Logged {w.money(round(amount + 0.54, 2))} at {merchant}.")),
            fails(
                "told it was logged for today", finishing(plan, f"Logged {w.money(amount)} at {merchant} for today.")
            ),
            passes(
                "told the day", finishing(plan, f"Logged {w.money(amount)} at {merchant}, dated {day.isoformat()}.")
            ),
        ],
    )


@template(
    "budget.spending_answer",
    apps=["budget"],
    domain=Domain.FINANCE,
    difficulty=2,
    capabilities=["lookup", "arithmetic", "answer"],
    count=12,
)
def spending_answer(w: World) -> Draft:
    """Template ``budget.spending_answer``: "How much have I spent on dining this month?": the
    sum of that category's entries in the period, read only."""
    entries = seed_budget(w, n=14)
    category, period = pick(
        w, ["dining", "groceries", "transport", "entertainment", "health", "all"], ["month", "week"]
    )
    start, end = period_bounds(w.now.date(), period)
    cur = w.currency
    spent = from_minor(
        sum(
            to_minor(e["amount"], cur)
            for e in entries
            if start.isoformat() <= e["date"] <= end.isoformat() and category in ("all", e["category"])
        ),
        cur,
    )
    what = "in total" if category == "all" else f"on {category}"
    goal = w.rng.choice(
        [f"How much have I spent {what} this {period}?", f"What's my {period}'s spending {what} so far?"]
    )
    plan = [call("budget.totals", period=period), call("finish", answer=f"{w.money(spent)} this {period}.")]
    off = from_minor(to_minor(spent, cur) + to_minor(w.price(10), cur), cur)
    # Amounts an answer may give beside the one asked for: each category's part of a total, and
    # the category's monthly budget and what is left of it.
    by_category: dict[str, int] = {}
    for e in entries:
        if start.isoformat() <= e["date"] <= end.isoformat():
            by_category[e["category"]] = by_category.get(e["category"], 0) + to_minor(e["amount"], cur)
    context = [from_minor(v, cur) for k, v in sorted(by_category.items()) if category == "all" or k == category]
    budget = next((b for b in w.table("budget.budgets") if b["category"] == category), None)
    left = None
    if budget is not None and period == "month":
        left = from_minor(to_minor(budget["limit"], cur) - to_minor(spent, cur), cur)
        context += [budget["limit"], left]
    context = [x for x in context if x != spent]
    probes = [
        passes("with the symbol", finishing(plan, f"You've spent {w.money(spent, symbol=True)}.")),
        passes("listed the entries", [call("budget.list_expenses", start=start.isoformat()), *plan]),
        fails("another amount", finishing(plan, f"{w.money(off)}.")),
        fails("logged something", [call("budget.add_expense", amount=w.price(1), category="other"), *plan]),
    ]
    if left is not None and left > 0:
        probes += [
            passes(
                "with what is left of the budget",
                finishing(
                    plan, f"You've spent {w.money(spent)} {what} this month, leaving {w.money(left)} of your budget."
                ),
            ),
            fails("only what is left", finishing(plan, f"You have {w.money(left)} of your budget left.")),
        ]
    if category == "all" and len(context) > 1:
        parts = ", ".join(f"{k} {w.money(from_minor(v, cur))}" for k, v in sorted(by_category.items()))
        probes.append(
            passes("a total with its parts", finishing(plan, f"{w.money(spent)} in total this {period}: {parts}."))
        )
    return Draft(
        goal=goal,
        criteria=[answer(type="money", value=spent, currency=cur, context=context), behavior("read_only")],
        plan=plan,
        probes=probes,
    )
