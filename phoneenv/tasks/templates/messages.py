"""Messages templates: text people, count and read unread texts, clean up and forward messages."""

from __future__ import annotations

import re
from typing import Any

from phoneenv.contract import Domain
from phoneenv.tasks.templates import Draft, answer, ask_first, behavior, call, confirm_variant, state, template
from phoneenv.tasks.world import MESSAGE_SEEDS, World

# (text to send, a word of it the sent message must contain)
TEXTS = [
    ("I'm running about 15 minutes late", "late"),
    ("Can you bring the charger tonight?", "charger"),
    ("Dinner is at 8 at Cafe Luna", "Cafe Luna"),
    ("Don't forget the concert tickets", "tickets"),
    ("Call me when you land", "land"),
    ("The package arrived, thanks!", "package"),
    ("Let's meet at the station at 6", "station"),
    ("Happy anniversary to you both!", "anniversary"),
]
# Bodies never used by the seeded world, for messages a template adds.
EXTRA_BODIES = [
    "The keys are under the blue flowerpot",
    "Your parcel is at the neighbor's",
    "Movie starts at 20:15, got the seats",
    "Grandma says thanks for the flowers",
    "The plumber comes on Thursday morning",
]


def who(w: World, c: dict[str, Any]) -> tuple[str, str]:
    """How the user names contact ``c`` (first name, or "my <relation>" half the time when the
    contact has one) and the contacts.search query that finds them."""
    if c.get("relation") and w.rng.random() < 0.5:
        return f"my {c['relation']}", c["relation"]
    first = c["name"].split()[0]
    return first, first


def names_pattern(names: list[str]) -> str:
    """A regex that holds when every person of ``names`` (full names) is named, in any order, by
    first name as a whole word. When every first name reads the same backwards ("Ana"), the
    surnames are required too, or a reversed answer would still name them."""
    firsts = [n.split()[0] for n in names]
    words = firsts
    if all(f.casefold() == f.casefold()[::-1] for f in firsts):
        words = [part for n in names for part in n.split()]
    return "(?s)" + "".join(rf"(?=.*\b{re.escape(p)}\b)" for p in words)


def add_inbound(w: World, number: str, body: str, minutes_ago: int, read: bool) -> dict[str, Any]:
    """Append an incoming message to the world and return it."""
    rec = {
        "id": w.next_id("messages.messages", "m_"),
        "number": number,
        "direction": "in",
        "body": body,
        "time": w.ts(minutes_ago),
        "read": read,
    }
    w.table("messages.messages").append(rec)
    return rec


@template(
    "messages.text_contact",
    apps=["messages", "contacts"],
    domain=Domain.COMMUNICATION,
    capabilities=["lookup", "send"],
)
def text_contact(w: World) -> Draft:
    """Template ``messages.text_contact``, e.g. task 0: "Text Jonas: \"I'm running about 15 minutes late\". Check with me before sending it."."""
    (c,) = w.pick("contacts.contacts")
    name, query = who(w, c)
    text, key = w.rng.choice(TEXTS)
    confirm = confirm_variant(w, 0.3)
    plan = [call("contacts.search", query=query)]
    criteria = [state("messages.messages", "created", number={"number": c["phone"]}, body={"icontains": key})]
    goal = f'Text {name}: "{text}"' + ("" if text[-1] in "?!." else ".")
    if confirm:
        goal += " Check with me before sending it."
        ask_first(plan, criteria, "messages.send", f'Send "{text}" to {c["name"]}?')
    plan += [call("messages.send", to=c["phone"], body=text), call("finish", answer=f"Sent to {c['name']}.")]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[behavior("required_call", "contacts.search")],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
    )


@template(
    "messages.unread_count",
    apps=["messages"],
    domain=Domain.COMMUNICATION,
    capabilities=["lookup", "answer"],
)
def unread_count(w: World) -> Draft:
    """Template ``messages.unread_count``, e.g. task 0: "How many unread text messages do I have, and who are they from?"."""
    msgs = w.table("messages.messages")
    unread = [m for m in msgs if m["direction"] == "in" and not m["read"]]
    if not unread:
        (c,) = w.pick("contacts.contacts")
        unread = [add_inbound(w, c["phone"], w.rng.choice(MESSAGE_SEEDS), w.rng.randrange(5, 300), read=False)]
    senders = []
    for m in unread:
        c = w.contact_by_number(m["number"])
        assert c is not None
        if c["name"] not in senders:
            senders.append(c["name"])
    return Draft(
        goal="How many unread text messages do I have, and who are they from?",
        criteria=[
            answer(number=len(unread), unit="message|text", pattern=names_pattern(senders)),
            behavior("read_only"),
        ],
        plan=[
            call("messages.list_unread"),
            call("finish", answer=f"{len(unread)} unread, from {', '.join(senders)}."),
        ],
    )


@template(
    "messages.last_texter",
    apps=["messages"],
    domain=Domain.COMMUNICATION,
    difficulty=2,
    capabilities=["lookup", "answer"],
)
def last_texter(w: World) -> Draft:
    """Template ``messages.last_texter``, e.g. task 0: "Who sent me the most recent text message?"."""
    msgs = w.table("messages.messages")
    inbound = sorted((m for m in msgs if m["direction"] == "in"), key=lambda m: m["time"], reverse=True)
    if not inbound or (len(inbound) > 1 and inbound[0]["time"] == inbound[1]["time"]):
        (c,) = w.pick("contacts.contacts")
        # Seeded messages are at least 10 minutes old: this one is the newest.
        last = add_inbound(w, c["phone"], w.rng.choice(MESSAGE_SEEDS), w.rng.randrange(1, 10), read=False)
    else:
        last = inbound[0]
    c = w.contact_by_number(last["number"])
    assert c is not None
    return Draft(
        goal=w.rng.choice(["Who texted me last?", "Who sent me the most recent text message?"]),
        criteria=[answer(pattern=names_pattern([c["name"]])), behavior("read_only")],
        plan=[
            call("messages.list_threads"),
            call("finish", answer=f'{c["name"]}: "{last["body"]}"'),
        ],
    )


@template(
    "messages.mark_thread_read",
    apps=["messages", "contacts"],
    domain=Domain.COMMUNICATION,
    capabilities=["lookup", "update"],
)
def mark_thread_read(w: World) -> Draft:
    """Template ``messages.mark_thread_read``, e.g. task 0: "Mark my dad's texts as read."."""
    msgs = w.table("messages.messages")
    numbers = sorted({m["number"] for m in msgs if m["direction"] == "in" and not m["read"]})
    if numbers:
        number = w.rng.choice(numbers)
    else:
        (c,) = w.pick("contacts.contacts")
        number = c["phone"]
        for _ in range(w.rng.randrange(1, 3)):
            add_inbound(w, number, w.rng.choice(MESSAGE_SEEDS), w.rng.randrange(10, 600), read=False)
    c = w.contact_by_number(number)
    assert c is not None
    n = sum(1 for m in msgs if m["number"] == number and m["direction"] == "in" and not m["read"])
    name, query = who(w, c)
    possessive = f"{name}'s"
    return Draft(
        goal=w.rng.choice([f"Mark {possessive} texts as read.", f"Mark my conversation with {name} as read."]),
        criteria=[state("messages.messages", "updated", count=n, number={"number": number}, read=True)],
        milestones=[behavior("required_call", "contacts.search")],
        plan=[
            call("contacts.search", query=query),
            call("messages.mark_read", number=number),
            call("finish", answer=f"Marked {n} message(s) from {c['name']} as read."),
        ],
        perturb_exempt=["2.answer"],
    )


@template(
    "messages.delete_message",
    apps=["messages"],
    domain=Domain.COMMUNICATION,
    difficulty=2,
    capabilities=["lookup", "delete", "confirm"],
)
def delete_message(w: World) -> Draft:
    """Template ``messages.delete_message``, e.g. task 0: "Delete the text Yara sent me that says \"Lunch tomorrow?\"."."""
    msgs = w.table("messages.messages")
    seen: dict[tuple[str, str], int] = {}
    for m in msgs:
        seen[m["number"], m["body"]] = seen.get((m["number"], m["body"]), 0) + 1
    pool = [m for m in msgs if seen[m["number"], m["body"]] == 1]
    if pool:
        m = w.rng.choice(pool)
    else:  # every text repeats within its thread: add one that does not
        (c,) = w.pick("contacts.contacts")
        m = add_inbound(w, c["phone"], w.rng.choice(EXTRA_BODIES), w.rng.randrange(10, 900), read=True)
    c = w.contact_by_number(m["number"])
    assert c is not None
    first = c["name"].split()[0]
    side = f"{first} sent me" if m["direction"] == "in" else f"I sent {first}"
    confirm = confirm_variant(w, 0.5)
    goal = f'Delete the text {side} that says "{m["body"]}".'
    plan = [call("messages.search", query=m["body"])]
    criteria = [state("messages.messages", "deleted", id=m["id"])]
    milestones = [behavior("required_call", "messages.search")]
    if confirm:
        goal += " Ask me before you delete it."
        ask_first(plan, criteria, "messages.delete", f'Delete the message "{m["body"]}" ({c["name"]})?', milestones)
    plan += [call("messages.delete", message_id=m["id"]), call("finish", answer="Deleted the message.")]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=milestones,
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
    )


@template(
    "messages.forward",
    apps=["messages", "contacts"],
    domain=Domain.COMMUNICATION,
    difficulty=2,
    capabilities=["lookup", "send"],
)
def forward(w: World) -> Draft:
    """Template ``messages.forward``, e.g. task 0: "Forward the text Umar sent me (\"Meeting moved to 3\") to Felix."."""
    msgs = w.table("messages.messages")
    bodies: dict[str, int] = {}
    for m in msgs:
        bodies[m["body"]] = bodies.get(m["body"], 0) + 1
    # The source text is unique in the whole inbox, so "the message that says X" names one message
    # and forwarding any other message sends different words.
    pool = [m for m in msgs if m["direction"] == "in" and bodies[m["body"]] == 1]
    if pool:
        src = w.rng.choice(pool)
    else:
        (c,) = w.pick("contacts.contacts")
        src = add_inbound(w, c["phone"], w.rng.choice(EXTRA_BODIES), w.rng.randrange(10, 900), read=True)
    sender = w.contact_by_number(src["number"])
    assert sender is not None
    to = w.rng.choice([c for c in w.contacts if c["id"] != sender["id"]])
    name, query = who(w, to)
    first = sender["name"].split()[0]
    return Draft(
        goal=f'Forward the text {first} sent me ("{src["body"]}") to {name}.',
        criteria=[state("messages.messages", "created", number={"number": to["phone"]}, body=src["body"])],
        milestones=[behavior("required_call", "contacts.search")],
        plan=[
            call("messages.search", query=src["body"]),
            call("contacts.search", query=query),
            call("messages.forward", message_id=src["id"], to=to["phone"]),
            call("finish", answer=f"Forwarded it to {to['name']}."),
        ],
        perturb_exempt=["3.answer"],
    )
