"""Contacts templates: save a caller, look up and pass on a number, update, favourite and delete
people."""

from __future__ import annotations

from apps.messages.templates import looked_up, similar, spaced, tell, tell_probes, telling, who
from apps.phone.templates import add_call, digits_pattern, other_number_pattern, unknown_number
from phoneenv.contract import CompositeCriterion, Criterion, Domain
from phoneenv.tasks.templates import (
    Draft,
    answer,
    behavior,
    call,
    fails,
    finishing,
    passes,
    replacing,
    state,
    template,
)
from phoneenv.tasks.world import World


@template(
    "contacts.add_contact",
    apps=["contacts", "phone"],
    domain=Domain.CONTACTS,
    capabilities=["lookup", "create", "update"],
)
def add_contact(w: World) -> Draft:
    """Template ``contacts.add_contact``, e.g. task 0: "Whoever called me last and I missed is Hollie Roberts: save them in my contacts as a favorite."."""
    name = w.new_name()
    number = unknown_number(w)
    decoy = unknown_number(w)
    add_call(w, decoy, "in", w.rng.randrange(40, 90))
    # Seeded calls are at least 30 minutes old: this missed call is the newest.
    add_call(w, number, "missed", w.rng.randrange(3, 29))
    goal = w.rng.choice(
        [f"The last missed call was {name}. Save the number as a new contact and add them to my favorites.",
         f"Whoever called me last and I missed is {name}: save them in my contacts as a favorite."]
    )  # fmt: skip
    cid = f"c_{len(w.contacts) + 1}"
    plan = [
        call("phone.call_log", filter="missed"),
        call("contacts.create", name=name, phone=number),
        call("contacts.set_favorite", contact_id=cid, favorite=True),
        call("finish", answer=f"Saved {name} as a favorite."),
    ]
    return Draft(
        goal=goal,
        criteria=[
            state("contacts.contacts", "created", name={"iequals": name}, phone={"number": number}, favorite=True)
        ],
        milestones=[behavior("required_call", "contacts.create", id="saved", arguments={"phone": {"number": number}})],
        plan=plan,
        probes=[
            passes(
                "number written another way",
                replacing(plan, 1, call("contacts.create", name=name, phone=spaced(number))),
            ),
            passes("read the whole log", replacing(plan, 0, call("phone.call_log"))),
            fails("the other caller's number", replacing(plan, 1, call("contacts.create", name=name, phone=decoy))),
            fails("not a favorite", replacing(plan, 2)),
        ],
    )


@template(
    "contacts.lookup_number",
    apps=["contacts", "messages"],
    domain=Domain.CONTACTS,
    capabilities=["lookup", "answer", "send"],
)
def lookup_number(w: World) -> Draft:
    """Template ``contacts.lookup_number``, e.g. task 0: "What is Irene's phone number? Send it to Rebecca too."."""
    c, to = w.pick("contacts.contacts", 2)
    first = c["name"].split()[0]
    name, query = who(w, to)
    if name == first:
        name = query = to["name"]
    goal = w.rng.choice(
        [f"What is {first}'s phone number? Send it to {name} too.",
         f"{name[0].upper()}{name[1:]} needs {first}'s number: text it to them, and tell me what it is."]
    )  # fmt: skip
    text = f"{first}'s number is {c['phone']}"
    plan = [
        call("contacts.search", query=first),
        call("contacts.search", query=query),
        telling(to, text),
        call("finish", answer=c["phone"]),
    ]
    other = similar(w, c)
    return Draft(
        goal=goal,
        criteria=[
            # A phone number is not a typed value: its digits, and no other number (the
            # recipient's aside: "sent it to Rebecca (+44...)").
            answer(pattern=digits_pattern(c["phone"])),
            CompositeCriterion(
                kind="not",
                id="no_other_number",
                criteria=[answer(id="other_number", pattern=other_number_pattern(c["phone"], to["phone"]))],
            ),
            tell(
                to,
                {"regex": digits_pattern(c["phone"]), "not": {"regex": other_number_pattern(c["phone"], to["phone"])}},
            ),
        ],
        milestones=[looked_up(first), looked_up(query)],
        plan=plan,
        perturb_exempt=["0.query", "1.query", "2.body"],
        probes=[
            *tell_probes(w, plan, 2, to, f"Here you go: {spaced(c['phone'])}", f"{first}'s number is {other['phone']}"),
            passes("the number spaced", finishing(plan, f"It's {spaced(c['phone'])}.")),
            fails("someone else's number", finishing(plan, other["phone"])),
            fails("a hedge", finishing(plan, f"{c['phone']} or maybe {other['phone']}")),
            fails("the right number only in passing", finishing(plan, f"Not {c['phone']} - it's {other['phone']}.")),
            fails(
                "a hedge with a typo",
                finishing(plan, f"It's {c['phone']}, or possibly {c['phone'][:-1]}{(int(c['phone'][-1]) + 1) % 10}."),
            ),
            passes(
                "the recipient's number too", finishing(plan, f"{c['phone']}; sent it to {to['name']} ({to['phone']}).")
            ),
            fails("a hedge in the text", replacing(plan, 2, telling(to, f"{c['phone']} or maybe {other['phone']}"))),
        ],
    )


@template("contacts.favorite", apps=["contacts"], domain=Domain.CONTACTS, capabilities=["lookup", "update"])
def favorite(w: World) -> Draft:
    """Template ``contacts.favorite``, e.g. task 0: "Add Gerwin and Steve to my favorites."."""
    a, b = w.pick("contacts.contacts", 2, favorite=False)
    (na, qa), (nb, qb) = who(w, a), who(w, b)
    if na.startswith("my ") and nb.startswith("my "):
        nb = qb = b["name"].split()[0]
    goal = w.rng.choice([f"Add {na} and {nb} to my favorites.", f"Make {na} and {nb} favorites in my contacts."])
    plan = [
        call("contacts.search", query=qa),
        call("contacts.set_favorite", contact_id=a["id"], favorite=True),
        call("contacts.search", query=qb),
        call("contacts.set_favorite", contact_id=b["id"], favorite=True),
        call("finish", answer="Done."),
    ]
    crits = [state("contacts.contacts", "updated", id=x["id"], favorite=True) for x in (a, b)]
    crits[1].id += ":2"
    wrong = next(x for x in w.contacts if not x["favorite"] and x["id"] not in (a["id"], b["id"]))
    return Draft(
        goal=goal,
        criteria=crits,
        milestones=[looked_up(qa), looked_up(qb)],
        plan=plan,
        probes=[
            passes("looked at the favorites", [*plan[:-1], call("contacts.favorites"), plan[-1]]),
            passes("both looked up first", [plan[0], plan[2], plan[1], plan[3], plan[4]]),
            fails("one forgotten", replacing(plan, 3)),
            fails(
                "the wrong person",
                replacing(plan, 1, call("contacts.set_favorite", contact_id=wrong["id"], favorite=True)),
            ),
            fails(
                "changed a favourite's relation too (not asked)",
                [*plan[:-1], call("contacts.update", contact_id=a["id"], relation="colleague"), plan[-1]],
            ),
        ],
    )


@template(
    "contacts.update_email",
    apps=["contacts", "mail"],
    domain=Domain.CONTACTS,
    capabilities=["lookup", "update", "send"],
)
def update_email(w: World) -> Draft:
    """Template ``contacts.update_email``, e.g. task 0: "Paula's email address is now paula.evans@proton.me; update the contact and send a short test email there."."""
    (c,) = w.pick("contacts.contacts")
    first, last = c["name"].split()[0], c["name"].split()[-1]
    email = f"{first.lower()}.{last.lower()}@{w.rng.choice(['mail.com', 'proton.me', 'work.org'])}"
    goal = w.rng.choice(
        [f"{first}'s email address is now {email}; update the contact and send a short test email there.",
         f"Change {first}'s email to {email} in my contacts, then email them to check it works."]
    )  # fmt: skip
    plan = [
        call("contacts.search", query=first),
        call("contacts.update", contact_id=c["id"], email=email),
        call("mail.send", to=[email], subject="Test", body="Testing your new address."),
        call("finish", answer="Updated and sent a test email."),
    ]
    old = c["email"] or f"{first.lower()}@example.org"
    return Draft(
        goal=goal,
        criteria=[
            state(
                "contacts.contacts", "updated", id=c["id"], email={"iequals": email}, phone=c["phone"], name=c["name"]
            ),
            state("mail.messages", "created", folder="sent", to={"people": [c["id"]], "has": email}),
        ],
        milestones=[looked_up(first)],
        plan=plan,
        perturb_exempt=["0.query", "2.subject", "2.body", "3.answer"],
        probes=[
            passes(
                "address in capitals",
                replacing(plan, 1, call("contacts.update", contact_id=c["id"], email=email.upper())),
            ),
            passes(
                "other words",
                replacing(plan, 2, call("mail.send", to=[email], subject="New address", body="Does this arrive?")),
            ),
            fails(
                "test sent to the old address",
                replacing(plan, 2, call("mail.send", to=[old], subject="Test", body="Test")),
            ),
            fails("contact not updated", replacing(plan, 1)),
        ],
    )


@template(
    "contacts.delete_contact",
    apps=["contacts", "phone"],
    domain=Domain.CONTACTS,
    difficulty=2,
    capabilities=["lookup", "delete", "confirm"],
)
def delete_contact(w: World) -> Draft:
    """Template ``contacts.delete_contact``, e.g. task 0: "Delete Robert from my contacts and block the number. Check with me first."."""
    (c,) = w.pick("contacts.contacts")
    name, query = who(w, c)
    w.confirm_sensitive = True
    # A third of the phones ask for the PIN before a sensitive call (the deletion).
    step_up = w.rng.random() < 1 / 3
    goal = w.rng.choice(
        [f"Delete {name} from my contacts and block the number. Check with me first.",
         f"Block {name}'s number and remove them from my contacts - ask me first.",
         f"I don't want to hear from {name} again: block them and delete the contact, but ask me before you do.",
         f"Remove {name} from my contacts and block their number; confirm with me first."]
    )  # fmt: skip
    if step_up:
        goal += " My phone will ask for my PIN."
    plan = [
        call("contacts.search", query=query),
        call("user.confirm", question=f"Block {c['phone']} and delete {c['name']} from your contacts?"),
        call("phone.block_number", number=c["phone"]),
        call("contacts.delete", contact_id=c["id"]),
        call("finish", answer=f"Blocked and deleted {c['name']}."),
    ]
    criteria: list[Criterion] = [
        state("contacts.contacts", "deleted", id=c["id"]),
        state("phone.blocked", "created", number={"number": c["phone"]}),
        behavior("confirm_before", "contacts.delete"),
        behavior("confirm_before", "phone.block_number"),
    ]
    # On a phone that asks for the PIN, the deletion (step 3) is authenticated just before.
    d = 3
    probes = []
    if step_up:
        pin = call("user.authenticate", reason=f"Delete {c['name']} from your contacts")
        criteria.append(behavior("step_up", "contacts.delete"))
        probes = [
            passes("PIN entered before asking", [plan[0], pin, *plan[1:]]),
            fails("never authenticates", list(plan)),
        ]
        plan = replacing(plan, 3, pin, plan[3])
        d = 4
    other = similar(w, c)
    probes += [
        passes("number written another way", replacing(plan, 2, call("phone.block_number", number=spaced(c["phone"])))),
        passes("opened the contact first", [plan[0], call("contacts.get", contact_id=c["id"]), *plan[1:]]),
        fails("the wrong person", replacing(plan, d, call("contacts.delete", contact_id=other["id"]))),
        fails("never asked", replacing(plan, 1)),
    ]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[looked_up(query)],
        plan=plan,
        perturb_exempt=["0.query", "1.question", f"{len(plan) - 1}.answer", *(["3.reason"] if step_up else [])],
        probes=probes,
        fixtures=w.fixtures(step_up=True) if step_up else None,
    )
