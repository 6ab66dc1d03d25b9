"""Contacts templates: create, look up, update, favourite and delete people."""

from __future__ import annotations

from phoneenv.contract import Domain
from phoneenv.tasks.templates import Draft, answer, behavior, call, state, template
from phoneenv.tasks.world import World


@template("contacts.add_contact", apps=["contacts"], domain=Domain.CONTACTS, capabilities=["create"])
def add_contact(w: World) -> Draft:
    """Template ``contacts.add_contact``, e.g. task 0: "Save Umar Tanaka as a new contact, number +4915749951185."."""
    name = w.new_name()
    number = w.phone_number("mobile")
    return Draft(
        goal=f"Save {name} as a new contact, number {number}.",
        criteria=[state("contacts.contacts", "created", name={"iequals": name}, phone={"number": number})],
        plan=[call("contacts.create", name=name, phone=number), call("finish", answer=f"Saved {name}.")],
        perturb_exempt=["1.answer"],
    )


@template("contacts.lookup_number", apps=["contacts"], domain=Domain.CONTACTS, capabilities=["lookup", "answer"])
def lookup_number(w: World) -> Draft:
    """Template ``contacts.lookup_number``, e.g. task 0: "What is Ben's phone number?"."""
    (c,) = w.pick("contacts.contacts")
    first = c["name"].split()[0]
    return Draft(
        goal=f"What is {first}'s phone number?",
        criteria=[answer(pattern=c["phone"].replace("+", r"\+")), behavior("read_only")],
        plan=[call("contacts.search", query=first), call("finish", answer=c["phone"])],
    )


@template("contacts.favorite", apps=["contacts"], domain=Domain.CONTACTS, capabilities=["lookup", "update"])
def favorite(w: World) -> Draft:
    """Template ``contacts.favorite``, e.g. task 0: "Add Grace Novak to my favorites."."""
    (c,) = w.pick("contacts.contacts", favorite=False)
    return Draft(
        goal=f"Add {c['name']} to my favorites.",
        criteria=[state("contacts.contacts", "updated", id=c["id"], favorite=True)],
        milestones=[behavior("required_call", "contacts.search")],
        plan=[
            call("contacts.search", query=c["name"]),
            call("contacts.set_favorite", contact_id=c["id"], favorite=True),
            call("finish", answer="Done."),
        ],
        perturb_exempt=["0.query", "2.answer"],
    )


@template("contacts.update_email", apps=["contacts"], domain=Domain.CONTACTS, capabilities=["lookup", "update"])
def update_email(w: World) -> Draft:
    """Template ``contacts.update_email``, e.g. task 0: "Samir's email address is now samir.khan@proton.me; update the contact."."""
    (c,) = w.pick("contacts.contacts")
    first, last = c["name"].split()
    email = f"{first.lower()}.{last.lower()}@{w.rng.choice(['mail.com', 'proton.me', 'work.org'])}"
    return Draft(
        goal=f"{first}'s email address is now {email}; update the contact.",
        criteria=[state("contacts.contacts", "updated", id=c["id"], email=email, phone=c["phone"], name=c["name"])],
        milestones=[behavior("required_call", "contacts.search")],
        plan=[
            call("contacts.search", query=first),
            call("contacts.update", contact_id=c["id"], email=email),
            call("finish", answer="Updated."),
        ],
        perturb_exempt=["0.query", "2.answer"],
    )


@template(
    "contacts.delete_contact",
    apps=["contacts"],
    domain=Domain.CONTACTS,
    difficulty=2,
    capabilities=["lookup", "delete", "confirm"],
)
def delete_contact(w: World) -> Draft:
    """Template ``contacts.delete_contact``, e.g. task 0: "Delete Bianca Haddad from my contacts. Check with me before deleting."."""
    (c,) = w.pick("contacts.contacts")
    w.confirm_sensitive = True
    return Draft(
        goal=f"Delete {c['name']} from my contacts. Check with me before deleting.",
        criteria=[state("contacts.contacts", "deleted", id=c["id"]), behavior("confirm_before", "contacts.delete")],
        milestones=[behavior("required_call", "user.confirm")],
        plan=[
            call("contacts.search", query=c["name"].split()[0]),
            call("user.confirm", question=f"Delete {c['name']} from your contacts?"),
            call("contacts.delete", contact_id=c["id"]),
            call("finish", answer=f"Deleted {c['name']}."),
        ],
        perturb_exempt=["0.query", "1.question", "3.answer"],
    )
