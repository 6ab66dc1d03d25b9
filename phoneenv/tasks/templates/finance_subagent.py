"""Sub-agent templates over the wallet and home apps: a sub-agent does the reading, the
delegating frame acts on what it reports (criteria forbid the root from reading itself).

| template | the sub-agent finds | the planner does | verified by |
|---|---|---|---|
| ``subagent.pay_chosen_bill`` | the unpaid bill due soonest, or the largest, or the smallest | pays it (confirmed or PIN when the phone asks) | that bill paid, the balance, the delegation |
| ``subagent.collect_debts`` | who texted that they owe the user money, and how much | one wallet request per debtor (never to a creditor) | the requests, the delegation |
| ``subagent.lights_off`` | the lights left on in the other rooms | switches them off and says how many | each light off, the typed count, the delegation |
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.home.templates import ROOMS, seed_home
from phoneenv.contract import Criterion, Domain, ToolCall
from phoneenv.frames import delegate_steps
from phoneenv.tasks.templates import (
    Draft,
    answer,
    answer_if_said,
    behavior,
    call,
    fails,
    finishing,
    first_name,
    passes,
    pick,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.templates.wallet import (
    OWED,
    add_text,
    balance_after,
    exempt,
    paid,
    secure,
    seed_wallet,
    step_up_fixtures,
)
from phoneenv.tasks.world import World

__all__ = ["AGENT_APP", "delegated", "not_itself"]

AGENT_APP = "agent"
"""The pseudo-app that offers ``agent.delegate`` in a task's episodes."""


def delegated(tool: str, **kw: Any) -> Any:
    """A ``delegated`` criterion: a finished sub-agent frame used ``tool`` (a glob such as
    ``messages.*``); ``kw`` as :class:`~phoneenv.contract.BehaviorCriterion` takes (``depth``...)."""
    return behavior("delegated", tool, id=f"delegated:{tool}", **kw)


def not_itself(tool: str, depth: int = 0) -> Any:
    """A ``forbidden_call`` criterion scoped to frames of ``depth``: the delegating frame must
    not call ``tool`` (a glob) itself."""
    return behavior("forbidden_call", tool, depth=depth, id=f"forbidden@{depth}:{tool}")


# -- pay the bill the user means ---------------------------------------------------------------

WHICH = {
    "soonest": ["Look through my unpaid bills and pay the one that's due first.",
                "Which of my bills is due soonest? Pay that one.",
                "Pay the bill with the earliest due date.",
                "Of my open bills, settle the one that's due next.",
                "Find the unpaid bill that comes due first and pay it.",
                "Pay whichever of my bills is due soonest."],
    "largest": ["Pay the biggest of my unpaid bills.",
                "Go through my open bills and pay the largest one.",
                "Which unpaid bill is the most expensive? Pay it.",
                "Settle my largest open bill.",
                "Find the bill with the highest amount due and pay it.",
                "Pay off whichever bill costs the most."],
    "smallest": ["Pay whichever unpaid bill is the smallest.",
                 "Check my open bills and pay the cheapest of them.",
                 "Settle the smallest of my unpaid bills.",
                 "Find the bill with the lowest amount due and pay it.",
                 "Which open bill costs the least? Pay that one.",
                 "Pay my cheapest unpaid bill."],
}  # fmt: skip


@template(
    "subagent.pay_chosen_bill",
    apps=["wallet", AGENT_APP],
    domain=Domain.FINANCE,
    category="subagent",
    difficulty=3,
    capabilities=["delegate", "compare", "pay"],
    count=16,
    max_steps=20,
)
def pay_chosen_bill(w: World) -> Draft:
    """Template ``subagent.pay_chosen_bill``, e.g. "Pay the biggest of my unpaid bills.": a
    sub-agent compares the open bills (last month's paid ones are older, due earlier and cheaper),
    the planner pays the one it names."""
    seeded = seed_wallet(w)
    main = seeded["main"]
    which, k = pick(w, list(WHICH), list(range(6)))
    bills = list(seeded["bills"].values())
    days = w.rng.sample(range(3, 22), len(bills))  # distinct due dates and amounts
    for bill, d in zip(bills, days, strict=True):
        bill["due"] = (w.now.date() + dt.timedelta(days=d)).isoformat()
    amounts = sorted({b["amount_due"] for b in bills})
    if len(amounts) < len(bills):
        for i, bill in enumerate(bills):
            bill["amount_due"] = w.price(30 + 25 * i + w.rng.randrange(100) / 100)
    key = {"soonest": lambda b: b["due"], "largest": lambda b: -b["amount_due"], "smallest": lambda b: b["amount_due"]}
    ranked = sorted(bills, key=key[which])
    bill, runner_up = ranked[0], ranked[1]
    payee = next(p for p in seeded["companies"].values() if p["id"] == bill["payee_id"])
    goal = WHICH[which][k]
    plan: list[ToolCall] = delegate_steps(
        f"List my unpaid wallet bills and tell me which one is the {which} "
        f"({'earliest due date' if which == 'soonest' else 'amount due'}): its id, title, amount and due date.",
        ["wallet.bills"],
        [call("wallet.bills", status="unpaid")],
        f"{bill['id']}: {bill['title']}, {w.money(bill['amount_due'])}, due {bill['due']}.",
    )
    plan.append(call("wallet.pay_bill", bill_id=bill["id"]))
    criteria: list[Criterion] = [
        state("wallet.bills", "updated", id=bill["id"], status="paid"),
        *paid(w, payee, bill["amount_due"], main, "bill"),
        delegated("wallet.bills"),
        not_itself("wallet.bills"),
        answer_if_said("money", bill["amount_due"], currency=w.currency),
    ]
    _, step_up = secure(w, plan, criteria, "wallet.pay_bill", f"Pay {bill['title']}: {w.money(bill['amount_due'])}")
    plan.append(call("finish", answer=f"Paid {bill['title']} ({w.money(bill['amount_due'])})."))
    act = len(plan) - 2
    probes = [
        passes(
            "the sub-agent listed every bill",
            replacing(plan, 1, call("wallet.bills")),
        ),
        fails("the runner-up", replacing(plan, act, call("wallet.pay_bill", bill_id=runner_up["id"]))),
        fails("another amount told", finishing(plan, f"Paid {bill['title']} ({w.money(runner_up['amount_due'])}).")),
        fails(
            "paid from savings", replacing(plan, act, call("wallet.pay_bill", bill_id=bill["id"], account_id="acct_2"))
        ),
        fails(
            "paid both candidates",
            replacing(
                plan,
                act,
                plan[act],
                *[p for p in plan if p.name in ("user.confirm", "user.authenticate")],  # guarded again
                call("wallet.pay_bill", bill_id=runner_up["id"]),
            ),
        ),
    ]
    if step_up:
        probes.append(fails("never enters the PIN", [p for p in plan if p.name != "user.authenticate"]))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[delegated("wallet.bills"), criteria[0]],
        plan=plan,
        perturb_exempt=exempt(plan, "0.goal", f"{_finish_of_sub(plan)}.answer"),
        probes=probes,
        fixtures=step_up_fixtures(w, step_up),
    )


def _finish_of_sub(plan: list[ToolCall]) -> int:
    """The index of the first ``finish`` (the sub-agent's)."""
    return next(i for i, c in enumerate(plan) if c.name == "finish")


# -- collect what people owe ---------------------------------------------------------------------

OWE_ME = [
    "I still owe you {m} for {what} - will send it soon!",
    "Sorry, forgot: I owe you {m} for {what}.",
    "Just so you know, I haven't paid you back the {m} for {what} yet.",
]
I_OWE = ["You owe me {m} for {what}, no rush :)", "Could you send me the {m} for {what}?"]
CHATTER = ["See you on Saturday!", "Did you get home ok?", "Thanks for yesterday, that was fun."]


@template(
    "subagent.collect_debts",
    apps=["wallet", "messages", "contacts", AGENT_APP],
    domain=Domain.FINANCE,
    category="subagent",
    difficulty=4,
    capabilities=["delegate", "read", "multi-entity", "request"],
    count=16,
    max_steps=30,
)
def collect_debts(w: World) -> Draft:
    """Template ``subagent.collect_debts``, e.g. "A few friends texted that they owe me money.
    Send each of them a wallet request for what they owe.": a sub-agent reads the unread texts
    (one friend is owed money by the user instead), the planner sends the requests."""
    seeded = seed_wallet(w)
    people = list(seeded["people"].values())
    phrase, n, careful = pick(
        w,
        [
            "{N} friends texted that they owe me money. Send each of them a wallet request for what they owe.",
            "{N} people told me by text that they owe me - request the money from each of them in my wallet.",
            "Go through my unread texts: {N} friends say they owe me. Send each a money request for their amount.",
            "Collect what {N} of my friends owe me: they texted me the amounts. Use wallet requests.",
        ],
        [2, 3],
        [False, True],
    )
    debtors = w.rng.sample(people, n + 1)
    creditor, debtors = debtors[-1], debtors[:-1]
    things = w.rng.sample(OWED, n + 1)
    owed: list[tuple[dict[str, Any], float, str]] = []
    for p, what in zip(debtors, things, strict=False):
        amount = w.price(w.rng.choice([8.5, 12, 14.9, 19, 23.5, 27, 32.4, 40]))
        add_text(
            w, p["handle"], w.rng.choice(OWE_ME).format(m=w.money(amount), what=what), w.ago_within(w.rng, 30, 900)
        )
        owed.append((p, amount, what))
    their = w.price(w.rng.choice([11, 16.5, 22]))
    add_text(
        w,
        creditor["handle"],
        w.rng.choice(I_OWE).format(m=w.money(their), what=things[-1]),
        w.ago_within(w.rng, 30, 900),
    )
    chatty = w.rng.choice([p for p in people if p not in debtors and p is not creditor])
    add_text(w, chatty["handle"], w.rng.choice(CHATTER), w.ago_within(w.rng, 30, 900))
    goal = phrase.format(N=["Two", "Three"][n - 2])
    if careful:
        goal += " Nobody I owe money to gets a request."
    report = "; ".join(f"{p['name']} owes {w.money(a)} for {what}" for p, a, what in owed)
    plan = delegate_steps(
        "Read my unread text messages and tell me who says they owe me money, and how much. "
        "Leave out anyone I owe money to.",
        ["messages.list_unread", "messages.read_thread", "contacts.search"],
        [call("messages.list_unread")],
        report + ".",
    )
    for p, amount, what in owed:
        plan += [
            call("wallet.search_payees", query=first_name(p)),
            call("wallet.request_money", payee_id=p["id"], amount=amount, note=what.removeprefix("the ").capitalize()),
        ]
    plan.append(call("finish", answer=f"Sent {len(owed)} requests."))
    reqs = [
        suffixed(state("wallet.requests", "created", payee_id=p["id"], amount=amount, direction="out"), p["id"])
        for p, amount, _ in owed
    ]
    first_req = next(i for i, c in enumerate(plan) if c.name == "wallet.request_money")
    p0, a0, _ = owed[0]
    return Draft(
        goal=goal,
        criteria=[*reqs, delegated("messages.*"), not_itself("messages.*")],
        milestones=[delegated("messages.*"), reqs[0]],
        plan=plan,
        perturb_exempt=exempt(plan, "0.goal", f"{_finish_of_sub(plan)}.answer"),
        probes=[
            passes(
                "split the reading per thread",
                [
                    plan[0],
                    call("messages.list_unread"),
                    *(call("messages.read_thread", number=p["handle"]) for p, _, _ in owed),
                    *plan[2:],
                ],
            ),
            passes(
                "no notes on the requests",
                [
                    c
                    if c.name != "wallet.request_money"
                    else call("wallet.request_money", payee_id=c.arguments["payee_id"], amount=c.arguments["amount"])
                    for c in plan
                ],
            ),
            fails(
                "asked the friend the user owes",
                [*plan[:-1], call("wallet.request_money", payee_id=creditor["id"], amount=their), plan[-1]],
            ),
            fails("one debtor forgotten", replacing(plan, first_req)),
            fails(
                "the wrong amount",
                replacing(
                    plan,
                    first_req,
                    call("wallet.request_money", payee_id=p0["id"], amount=balance_after(w, a0, -w.price(5))),
                ),
            ),
        ],
    )


# -- switch off the lights left on ----------------------------------------------------------------


@template(
    "subagent.lights_off",
    apps=["home", AGENT_APP],
    domain=Domain.DEVICE,
    category="subagent",
    difficulty=3,
    capabilities=["delegate", "filter", "update", "count"],
    count=16,
    max_steps=25,
)
def lights_off(w: World) -> Draft:
    """Template ``subagent.lights_off``, e.g. "I'm in the bedroom. Switch off every light that's
    on anywhere else, and tell me how many there were.": a sub-agent checks every room, the
    planner switches them off and answers the count."""
    home = seed_home(w)
    room, k = pick(w, ROOMS, [0, 1, 2, 3])
    others = [d for r in ROOMS if r != room for d in home["lights"][r]]
    for d in others:
        d["on"] = w.rng.random() < 0.55
    if sum(d["on"] for d in others) < 2:
        for d in w.rng.sample(others, 2):
            d["on"] = True
    left_on = [d for d in others if d["on"]]
    lit_here = home["lights"][room][0]
    lit_here["on"] = True
    r = room.lower()
    goal = [
        f"I'm in the {r}. Switch off every light that's on anywhere else, and tell me how many there were.",
        f"Check all the other rooms besides the {r} and turn off any lights left on - how many were on?",
        f"Turn off the lights that are still on outside the {r} and tell me the number you switched off.",
        f"Apart from the {r}, which lights are on? Switch them all off and tell me how many.",
    ][k]
    rooms = home["rooms"]
    names = ", ".join(
        f"{d['name']} ({d['id']}) in {next(n for n, x in rooms.items() if x['id'] == d['room_id'])}" for d in left_on
    )
    plan = delegate_steps(
        f"Check every room except the {r}: which lights are switched on? Give each light's id and room.",
        ["home.list_rooms", "home.list_devices"],
        [call("home.list_devices", kind="light")],
        f"On: {names}.",
    )
    plan += [call("home.switch", device_id=d["id"], on=False) for d in left_on]
    plan.append(call("finish", answer=f"Switched off {len(left_on)} lights.", value=len(left_on)))
    offs = [suffixed(state("home.devices", "updated", id=d["id"], on=False), d["id"]) for d in left_on]
    first = next(i for i, c in enumerate(plan) if c.name == "home.switch")
    room_of_first = next(n for n, x in rooms.items() if x["id"] == left_on[0]["room_id"]).lower()
    return Draft(
        goal=goal,
        criteria=[
            *offs,
            # the lights counted, not the rooms' shares ("4 lights: 2 in the bedroom, 1 in the hall")
            answer(type="number", value=len(left_on), unit="light|lamp"),
            delegated("home.list_*"),
            not_itself("home.list_*"),
        ],
        milestones=[delegated("home.list_*"), offs[0]],
        plan=plan,
        perturb_exempt=["0.goal", f"{_finish_of_sub(plan)}.answer", f"{len(plan) - 1}.answer"],
        probes=[
            passes(
                "the sub-agent went room by room",
                [
                    plan[0],
                    call("home.list_rooms"),
                    *(call("home.list_devices", room_id=x["id"]) for n, x in rooms.items() if n != room),
                    *plan[2:],
                ],
            ),
            passes("the count in words", finishing(plan, f"There were {len(left_on)} lights on; all off now.")),
            passes(
                "the count with rooms",
                finishing(
                    plan, f"Switched off {len(left_on)} lights, 1 of them in the {room_of_first}.", value=len(left_on)
                ),
            ),
            fails("one left on", replacing(plan, first)),
            fails(
                "the user's own room too",
                [*plan[:-1], call("home.switch", device_id=lit_here["id"], on=False), plan[-1]],
            ),
            fails("a wrong count", finishing(plan, f"Switched off {len(left_on) + 1} lights.", value=len(left_on) + 1)),
        ],
    )
