"""Messages templates: text people, count and read unread texts, clean up and forward messages.

Also the helpers the single-app templates share for people: :func:`who` (how a user names a
contact), :func:`tell` ("let Ana know ...": a text or an e-mail to that person, by identity),
:func:`looked_up` (a milestone: the contacts search that finds them) and :func:`spaced`."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from phoneenv.contract import CompositeCriterion, Condition, Criterion, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer,
    ask_first,
    behavior,
    call,
    confirm_variant,
    dictated,
    fails,
    finishing,
    passes,
    replacing,
    said_probes,
    state,
    template,
)
from phoneenv.tasks.world import World

WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}

# (text to send, a word of it the sent message must contain)
TEXTS = [
    # (what the user dictates, the same text as an agent may write it, a near miss that says otherwise)
    ("I'm running about 15 minutes late", "Hi! I am running about fifteen minutes late.", "I'm running about 50 minutes late"),
    ("Can you bring the charger tonight?", "Hey, can you bring the charger tonight? Thanks", "Can you bring the charger tomorrow?"),
    ("Dinner is at 8 at Cafe Luna", "Dinner is at eight at Cafe Luna, see you!", "Dinner is at 9 at Cafe Luna"),
    ("Don't forget the concert tickets", "Hi, do not forget the concert tickets!", "Forget the concert tickets, I have them"),
    ("Call me when you land", "Call me when you land :)", "Don't call me when you land"),
    ("The package arrived, thanks!", "Hi - the package arrived. Thanks!", "The package hasn't arrived yet"),
    ("Let's meet at the station at 6", "Let us meet at the station at six", "Let's meet at the station at 7"),
    ("Happy anniversary to you both!", "Happy anniversary to you both!! Love", "Sorry I missed your anniversary"),
]  # fmt: skip
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


def spaced(number: str) -> str:
    """``number`` written another way, its digits in groups of three: ``+4915123456789`` ->
    ``+491 512 345 678 9`` (the same line: the same digits)."""
    digits = number.lstrip("+")
    return ("+" if number.startswith("+") else "") + " ".join(digits[i : i + 3] for i in range(0, len(digits), 3))


def similar(w: World, c: dict[str, Any]) -> dict[str, Any]:
    """Another contact, one sharing ``c``'s surname or initial when there is one (the wrong
    person an agent could mistake for ``c``)."""
    others = [o for o in w.contacts if o["id"] != c["id"]]
    last, first = c["name"].split()[-1], c["name"][0]
    near = [o for o in others if o["name"].split()[-1] == last or o["name"][0] == first]
    return (near or others)[0]


def labelled(crit: Any, id: str) -> Any:
    """``crit`` with its id set to ``id`` (several criteria on one table stay apart)."""
    crit.id = id
    return crit


def looked_up(query: str) -> Criterion:
    """Milestone: the contacts search that finds the person the user named by ``query``."""
    return behavior(
        "required_call", "contacts.search", id=f"looked_up:{query}", arguments={"query": {"icontains": query}}
    )


def tell(c: dict[str, Any], body: Condition, id: str = "told") -> CompositeCriterion:
    """ "Let ``c`` know": exactly one text to ``c``, or one e-mail to ``c`` (when ``c`` has an
    address), whose body satisfies ``body``; ``c`` named by identity (any form of number or
    address)."""
    parts: list[Criterion] = [state("messages.messages", "created", number={"person": c["id"]}, body=body)]
    if c.get("email"):
        parts.append(state("mail.messages", "created", folder="sent", to={"has_person": c["id"]}, body=body))
    return CompositeCriterion(kind="any_of", id=id, criteria=parts)


def telling(c: dict[str, Any], text: str) -> ToolCall:
    """The reference-plan step that tells ``c`` ``text`` by text message."""
    return call("messages.send", to=c["phone"], body=text)


def tell_probes(w: World, plan: list[ToolCall], i: int, c: dict[str, Any], text: str, wrong_text: str) -> list[Any]:
    """Probes for a "let ``c`` know" step at ``plan[i]`` (a :func:`telling`): by e-mail and to a
    differently written number pass; to a similar contact and with contradicting words fail."""
    out = [
        passes(
            "number written another way", replacing(plan, i, call("messages.send", to=spaced(c["phone"]), body=text))
        )
    ]
    if c.get("email"):
        out.append(
            passes(
                "told by e-mail", replacing(plan, i, call("mail.send", to=[c["email"]], subject="Update", body=text))
            )
        )
    out.append(fails("told the wrong person", replacing(plan, i, telling(similar(w, c), text))))
    out.append(fails("told something else", replacing(plan, i, telling(c, wrong_text))))
    return out


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
    """Template ``messages.text_contact``, e.g. task 0: "Text Shohei and Hanako: \"Can you bring the charger tonight?\""."""
    a, b = w.pick("contacts.contacts", 2)
    (name_a, query_a), (name_b, query_b) = who(w, a), who(w, b)
    if name_a.startswith("my ") and name_b.startswith("my "):
        name_b = query_b = b["name"].split()[0]
    text, same, opposite = w.rng.choice(TEXTS)
    confirm = confirm_variant(w, 0.3)
    plan = [call("contacts.search", query=query_a), call("contacts.search", query=query_b)]
    criteria: list[Criterion] = [
        labelled(
            state("messages.messages", "created", number={"person": p["id"]}, body=dictated(text)),
            f"texted:{p['id']}",
        )
        for p in (a, b)
    ]
    goal = f'Text {name_a} and {name_b}: "{text}"' + ("" if text[-1] in "?!." else ".")
    if confirm:
        goal += " Check with me before sending."
        ask_first(plan, criteria, "messages.send", f'Send "{text}" to {a["name"]}?')
    i = len(plan)
    plan.append(call("messages.send", to=a["phone"], body=text))
    if confirm:  # every sensitive call is confirmed on its own
        plan.append(call("user.confirm", question=f'Send "{text}" to {b["name"]}?'))
    plan += [
        call("messages.send", to=b["phone"], body=text),
        call("finish", answer=f"Sent to {a['name']} and {b['name']}."),
    ]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[looked_up(query_a), looked_up(query_b)],
        plan=plan,
        probes=[
            passes(
                "numbers written another way",
                replacing(plan, i, call("messages.send", to=spaced(a["phone"]), body=text)),
            ),
            passes("looked at the threads too", [call("messages.list_threads"), *plan]),
            fails("one of them left out", replacing(plan, i)),
            fails("the wrong person", replacing(plan, i, call("messages.send", to=similar(w, a)["phone"], body=text))),
            fails("other words", replacing(plan, i, call("messages.send", to=a["phone"], body="Talk soon"))),
            *said_probes(plan, i, a["phone"], same, opposite),
        ],
    )


@template(
    "messages.unread_count",
    apps=["messages"],
    domain=Domain.COMMUNICATION,
    capabilities=["lookup", "answer", "update"],
)
def unread_count(w: World) -> Draft:
    """Template ``messages.unread_count``, e.g. task 0: "Count my unread text messages and tell me who sent them, then mark them as read."."""
    msgs = w.table("messages.messages")
    unread = [m for m in msgs if m["direction"] == "in" and not m["read"]]
    if not unread:
        (c,) = w.pick("contacts.contacts")
        ago = w.ago_within(w.rng, 5, 300)
        unread = [add_inbound(w, c["phone"], w.text_for(c, ago), ago, read=False)]
    senders: list[str] = []
    numbers: list[str] = []
    ids: list[str] = []
    for m in unread:
        c = w.contact_by_number(m["number"])
        assert c is not None
        if c["name"] not in senders:
            senders.append(c["name"])
            numbers.append(m["number"])
            ids.append(c["id"])
    stranger = next(c["name"] for c in w.contacts if c["id"] not in ids)
    per_sender = {name: sum(w.contact_by_number(m["number"])["name"] == name for m in unread) for name in senders}
    ask = w.rng.choice(
        [
            "How many unread texts do I have, and who are they from?",
            "Who has texted me that I haven't read yet, and how many texts is it?",
            "Count my unread text messages and tell me who sent them,",
            "Tell me how many texts I haven't read and from whom.",
            "What's waiting in my messages: how many unread texts, and from who?",
        ]
    )
    then = w.rng.choice(["Mark them read afterwards.", "Then mark them all as read.", "and mark them as read.",
                         "After that, mark them read.", "Mark them as read when you're done."])  # fmt: skip
    if ask.endswith(","):
        then = "then mark them as read."
    elif then[0].islower():
        then = "Then " + then.removeprefix("and ")
    goal = f"{ask} {then}"
    n = len(unread)
    reply = f"{n} unread, from {', '.join(senders)}."
    plan = [call("messages.list_unread"), *(call("messages.mark_read", number=x) for x in numbers)]
    # Half the reference answers carry the count as a typed value, half are text only.
    plan.append(call("finish", answer=reply, value=n) if w.rng.random() < 0.5 else call("finish", answer=reply))
    said = WORDS.get(n, str(n))
    return Draft(
        goal=goal,
        criteria=[
            # the count; each sender's count and the number of senders may stand beside it
            answer(type="number", value=n, context=sorted({*per_sender.values(), len(senders)} - {n})),
            # A typed value goes to the criterion of its type: a count to the number, names to
            # the senders; what the value does not carry is read from the text.
            answer(id="senders", type="contacts", value=ids),
            state("messages.messages", "updated", count=n, direction="in", read=True),
        ],
        milestones=[
            behavior("required_call", "messages.mark_read", id=f"marked:{x}", arguments={"number": {"number": x}})
            for x in numbers
        ],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
        probes=[
            passes(
                "in words", finishing(plan, f"You have {said} unread texts; they are from {' and '.join(senders)}.")
            ),
            passes("typed count", finishing(plan, f"From {', '.join(senders)}.", value=n)),
            passes("threads read first", [call("messages.list_threads"), *plan]),
            fails("typed value contradicts the text", finishing(plan, reply, value=n + 1)),
            fails("one too many", finishing(plan, f"{n + 1} unread, from {', '.join(senders)}.")),
            fails("a hedge", finishing(plan, f"{n} or {n + 1} unread texts, from {', '.join(senders)}.")),
            fails(
                "a hedge further on", finishing(plan, f"{n} unread texts, or maybe {n + 1}, from {', '.join(senders)}.")
            ),
            passes(
                "each sender's count",
                finishing(
                    plan,
                    f"{n} unread: "
                    + ", ".join(f"{k} sent {v} text{'s' * (v > 1)}" for k, v in per_sender.items())
                    + ".",
                ),
            ),
            fails(
                "the right count only in passing",
                finishing(plan, f"Not {n} - you have {n + 2} unread messages, from {', '.join(senders)}."),
            ),
            fails("a sender left out", finishing(plan, f"{n} unread, from nobody I know.")),
            passes("typed senders", finishing(plan, f"{n} unread texts.", value=senders)),
            fails(
                "someone else, the sender only denied",
                finishing(plan, f"{n} unread, from {stranger}, not from {senders[0]}."),
            ),
            fails("a hedge on the sender", finishing(plan, f"{n} unread, from {' and '.join(senders)} or {stranger}.")),
            fails("an extra sender", finishing(plan, f"{n} unread, from {', '.join(senders)} and {stranger}.")),
            fails("left unread", [plan[0], plan[-1]]),
        ],
    )


@template(
    "messages.last_texter",
    apps=["messages"],
    domain=Domain.COMMUNICATION,
    difficulty=2,
    capabilities=["lookup", "answer", "send"],
)
def last_texter(w: World) -> Draft:
    """Template ``messages.last_texter``, e.g. task 0: "Who sent me the most recent text? Text them back: \"Got your message, will reply properly later\"."."""
    msgs = w.table("messages.messages")
    inbound = sorted((m for m in msgs if m["direction"] == "in"), key=lambda m: m["time"], reverse=True)
    if not inbound or (len(inbound) > 1 and inbound[0]["time"] == inbound[1]["time"]):
        (c,) = w.pick("contacts.contacts")
        # Seeded messages are at least 10 minutes old: this one is the newest.
        ago = w.rng.randrange(1, 10)
        last = add_inbound(w, c["phone"], w.text_for(c, ago), ago, read=False)
    else:
        last = inbound[0]
    c = w.contact_by_number(last["number"])
    assert c is not None
    age = int((w.now - dt.datetime.fromisoformat(last["time"])).total_seconds() // 60)
    if w.index % 2 == 0 and age >= 2:  # the user wrote to someone else since: the newest text is no one's
        to = w.rng.choice([x for x in w.contacts if x["id"] != c["id"]])
        ago = w.rng.randrange(1, age)
        mine = {"id": w.next_id("messages.messages", "m_"), "number": to["phone"], "direction": "out",
                "body": w.text_for(to, ago, inbound=False), "time": w.ts(ago), "read": True}  # fmt: skip
        msgs.append(mine)
    ask = w.rng.choice(
        ["Who texted me last?", "Who sent me the most recent text?", "Who was the last person to text me?"]
    )
    reply = w.rng.choice(
        ["I'll call you tonight",
         "Got your message, will reply properly later",
         "Sorry, I'm in a meeting until noon",
         "On my way home, talk soon",
         "Thanks, I'll check and get back to you"]
    )  # fmt: skip
    plan = [call("messages.list_threads"), call("messages.send", to=last["number"], body=reply)]
    done = f"{c['name']} texted last; I replied."
    plan.append(call("finish", answer=done, value=c["name"]) if w.rng.random() < 0.5 else call("finish", answer=done))
    first = c["name"].split()[0]
    other = next(x for x in w.contacts if x["id"] != c["id"])
    return Draft(
        goal=f'{ask} Text them back: "{reply}".',
        criteria=[
            answer(type="contact", value=c["id"]),
            state("messages.messages", "created", number={"person": c["id"]}, body=dictated(reply)),
        ],
        milestones=[behavior("required_call", "messages.send", id="replied", arguments={"to": {"person": c["id"]}})],
        plan=plan,
        perturb_exempt=["2.answer"],
        probes=[
            passes(
                "number written another way",
                replacing(plan, 1, call("messages.send", to=spaced(c["phone"]), body=reply)),
            ),
            passes("read the thread too", [plan[0], call("messages.read_thread", number=last["number"]), *plan[1:]]),
            fails("replied to someone else", replacing(plan, 1, call("messages.send", to=other["phone"], body=reply))),
            passes("by first name", finishing(plan, f"It was {first}. I texted back.")),
            passes("typed person", finishing(plan, "Replied.", value=c["id"])),
            fails("named someone else", finishing(plan, f"{other['name']} texted last.")),
            fails("a hedge", finishing(plan, f"{c['name']} or {other['name']}, I replied.")),
            fails("the right one only in passing", finishing(plan, f"Not {c['name']} - {other['name']} texted last.")),
            fails("typed value contradicts the text", finishing(plan, f"{c['name']} texted last.", value=other["id"])),
        ],
    )


@template(
    "messages.mark_thread_read",
    apps=["messages", "contacts"],
    domain=Domain.COMMUNICATION,
    capabilities=["lookup", "update"],
)
def mark_thread_read(w: World) -> Draft:
    """Template ``messages.mark_thread_read``, e.g. task 0: "Mark Taro's texts as read."."""
    msgs = w.table("messages.messages")
    numbers = sorted({m["number"] for m in msgs if m["direction"] == "in" and not m["read"]})
    if numbers:
        number = w.rng.choice(numbers)
    else:
        (c,) = w.pick("contacts.contacts")
        number = c["phone"]
        for _ in range(w.rng.randrange(1, 3)):
            ago = w.ago_within(w.rng, 10, 600)
            add_inbound(w, number, w.text_for(c, ago), ago, read=False)
    c = w.contact_by_number(number)
    assert c is not None
    n = sum(1 for m in msgs if m["number"] == number and m["direction"] == "in" and not m["read"])
    name, query = who(w, c)
    possessive = f"{name}'s"
    plan = [
        call("contacts.search", query=query),
        call("messages.mark_read", number=number),
        call("finish", answer=f"Marked {n} message(s) from {c['name']} as read."),
    ]
    others = sorted({m["number"] for m in msgs if m["number"] != number and m["direction"] == "in" and not m["read"]})
    probes = [
        passes("number written another way", replacing(plan, 1, call("messages.mark_read", number=spaced(number)))),
        passes("read the thread first", [plan[0], call("messages.read_thread", number=number), *plan[1:]]),
        fails("not marked", [plan[0], plan[-1]]),
    ]
    if others:
        probes.append(fails("another thread too", [*plan[:-1], call("messages.mark_read", number=others[0]), plan[-1]]))
    return Draft(
        goal=w.rng.choice(
            [
                f"Mark {possessive} texts as read.",
                f"Mark my conversation with {name} as read.",
                f"I've seen {possessive} messages already, mark them read.",
            ]
        ),
        criteria=[state("messages.messages", "updated", count=n, number={"person": c["id"]}, read=True)],
        milestones=[looked_up(query)],
        plan=plan,
        probes=probes,
    )


@template(
    "messages.delete_message",
    apps=["messages", "contacts"],
    domain=Domain.COMMUNICATION,
    difficulty=2,
    capabilities=["lookup", "delete", "confirm"],
)
def delete_message(w: World) -> Draft:
    """Template ``messages.delete_message``, e.g. task 0: "Get rid of the most recent message from Marlene."."""
    msgs = w.table("messages.messages")
    latest: dict[str, dict[str, Any]] = {}
    for m in sorted(msgs, key=lambda m: m["time"]):
        if m["direction"] == "in":
            latest[m["number"]] = m
    times = [m["time"] for m in msgs]
    pool = [m for m in latest.values() if times.count(m["time"]) == 1]
    if pool:
        m = w.rng.choice(sorted(pool, key=lambda m: m["id"]))
    else:  # no inbound text to name: add one
        (c,) = w.pick("contacts.contacts")
        m = add_inbound(w, c["phone"], w.rng.choice(EXTRA_BODIES), w.rng.randrange(1, 9), read=True)
    c = w.contact_by_number(m["number"])
    assert c is not None
    name, query = who(w, c)
    confirm = confirm_variant(w, 0.5)
    goal = w.rng.choice([f"Delete the last text {name} sent me.", f"Get rid of the most recent message from {name}."])
    plan = [call("contacts.search", query=query), call("messages.read_thread", number=c["phone"])]
    criteria: list[Criterion] = [state("messages.messages", "deleted", id=m["id"])]
    milestones = [
        looked_up(query),
        behavior("required_call", "messages.read_thread", arguments={"number": {"person": c["id"]}}),
    ]
    if confirm:
        goal += " Ask me before you delete it."
        ask_first(plan, criteria, "messages.delete", f'Delete the message "{m["body"]}" ({c["name"]})?')
    plan += [call("messages.delete", message_id=m["id"]), call("finish", answer="Deleted the message.")]
    older = [x for x in msgs if x["number"] == m["number"] and x["id"] != m["id"]]
    probes = [
        passes("found by searching the text", replacing(plan, 1, call("messages.search", query=m["body"]))),
        passes("listed the threads first", [call("messages.list_threads"), *plan]),
        fails("nothing deleted", [*plan[:-2], plan[-1]]),
    ]
    if older:
        probes.append(fails("an older text", replacing(plan, -2, call("messages.delete", message_id=older[0]["id"]))))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=milestones,
        plan=plan,
        probes=probes,
    )


@template(
    "messages.forward",
    apps=["messages", "contacts"],
    domain=Domain.COMMUNICATION,
    difficulty=2,
    capabilities=["lookup", "send"],
)
def forward(w: World) -> Draft:
    """Template ``messages.forward``, e.g. task 0: "Send Jimmy the message \"Are we still on for tonight?\" that I got from Benjamin."."""
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
    plan = [
        call("messages.search", query=src["body"]),
        call("contacts.search", query=query),
        call("messages.forward", message_id=src["id"], to=to["phone"]),
        call("finish", answer=f"Forwarded it to {to['name']}."),
    ]
    wrong = similar(w, to)
    text = r"[\W_]+".join(re.escape(x) for x in re.findall(r"[^\W_]+", src["body"]))
    carried = rf"^\W*(?:(?:fwd?|forwarded(?:\s+message)?|from\s+{re.escape(first)})\W+)?{text}\W*$"
    return Draft(
        goal=w.rng.choice(
            [
                f'Forward the text {first} sent me ("{src["body"]}") to {name}.',
                f'Send {name} the message "{src["body"]}" that I got from {first}.',
            ]
        ),
        # the text itself, with at most a forwarding prefix ("Fwd:", "From Ana:") and quotes around it
        criteria=[state("messages.messages", "created", number={"person": to["id"]}, body={"regex": carried})],
        milestones=[
            looked_up(query),
            behavior(
                "required_call", "messages.search", id="found", arguments={"query": {"icontains": src["body"][:12]}}
            ),
        ],
        plan=plan,
        probes=[
            passes("sent as a new text", replacing(plan, 2, call("messages.send", to=to["phone"], body=src["body"]))),
            passes(
                "number written another way",
                replacing(plan, 2, call("messages.forward", message_id=src["id"], to=spaced(to["phone"]))),
            ),
            fails(
                "the wrong person",
                replacing(plan, 2, call("messages.forward", message_id=src["id"], to=wrong["phone"])),
            ),
            fails("forwarded twice", [*plan[:-1], plan[2], plan[-1]]),
            passes(
                "sent as a new text marked as forwarded",
                replacing(plan, 2, call("messages.send", to=to["phone"], body=f'Fwd: "{src["body"]}"')),
            ),
            fails(
                "only part of the text",
                replacing(plan, 2, call("messages.send", to=to["phone"], body=src["body"].split()[0])),
            ),
            fails(
                "the text with words of its own",
                replacing(
                    plan, 2, call("messages.send", to=to["phone"], body=f"{src['body']} Ignore this, it's wrong.")
                ),
            ),
        ],
    )
