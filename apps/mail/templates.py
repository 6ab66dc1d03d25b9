"""Mail templates, all starting with the mail app signed out (``login_required`` until the agent
calls ``system.sign_in``): read the latest unread subject, send, archive and reply."""

from __future__ import annotations

import re
from typing import Any

from apps.messages.templates import looked_up, similar, who
from phoneenv.contract import Criterion, Domain
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
    state,
    template,
)
from phoneenv.tasks.world import World

# Mails a template may add to the inbox (subjects never seeded by the world).
EXTRA_MAILS = [
    ("Your flight check-in is open", "Check in now for your flight on Thursday."),
    ("Library books due Friday", "Two of your library books are due on Friday."),
    ("Welcome to the book club", "Our first meeting is next Tuesday at the City Library."),
    ("Parcel waiting at the post office", "Pick up your parcel within seven days."),
]
# (subject, body, a word of it the sent mail must contain); no key reads the same backwards.
EMAILS = [
    ("Saturday hike", "Let's meet at the trailhead at 9."),
    ("Book club", "I finished the book and loved the ending."),
    ("Photos from the trip", "I uploaded the photos to the shared album."),
    ("Rent for December", "I transferred the rent this morning."),
    ("Lunch next week", "Are you free for lunch on Wednesday?"),
    ("Thank you", "Thanks again for helping me move last weekend."),
]
REPLIES = [
    "Thanks, I'll take a look today.",
    "Got it, thank you!",
    "Sounds good, count me in.",
    "Can we talk about this on Monday?",
]


def signed_out(w: World) -> list[Any]:
    """Sign the mail app out in the world; returns the reference-plan step that signs it in."""
    w.accounts["mail"]["signed_in"] = False
    return [call("system.sign_in", app="mail", account=w.user_email)]


def inbox(w: World) -> list[dict[str, Any]]:
    """The world's inbox messages."""
    return [m for m in w.table("mail.messages") if m["folder"] == "inbox"]


def add_mail(w: World, sender: str, subject: str, body: str, minutes_ago: int, read: bool) -> dict[str, Any]:
    """Append an inbox message to the world and return it."""
    rec = {
        "id": w.next_id("mail.messages", "em_"),
        "folder": "inbox",
        "from": sender,
        "to": (w.user_email,),
        "subject": subject,
        "body": body,
        "time": w.ts(minutes_ago),
        "read": read,
    }
    w.table("mail.messages").append(rec)
    return rec


def sender_name(w: World, address: str) -> str | None:
    """The contact's full name for a sender ``address`` (None for an unknown sender)."""
    return next((c["name"] for c in w.contacts if c["email"] == address), None)


@template(
    "mail.latest_unread",
    apps=["mail"],
    domain=Domain.EMAIL,
    difficulty=2,
    capabilities=["login", "lookup", "answer", "update"],
)
def latest_unread(w: World) -> Draft:
    """Template ``mail.latest_unread``, e.g. task 0: "Sign in to my mail, find the latest unread email, tell me its sender and subject, and mark it read."."""
    plan = signed_out(w)
    unread = sorted((m for m in inbox(w) if not m["read"]), key=lambda m: m["time"], reverse=True)
    # Half the tasks ask who sent it too (a typed person): their newest mail is from a contact.
    ask_sender = w.rng.random() < 0.5
    known = {c["email"] for c in w.contacts if c["email"]}
    if (
        not unread
        or (len(unread) > 1 and unread[0]["time"] == unread[1]["time"])
        or w.rng.random() < 0.3
        or (ask_sender and unread[0]["from"] not in known)
    ):
        subject, body = w.rng.choice(EXTRA_MAILS)
        sender = w.rng.choice([c for c in w.contacts if c["email"]])["email"]
        # Seeded mail is at least 30 minutes old: this one is the newest.
        unread.insert(0, add_mail(w, sender, subject, body, w.rng.randrange(2, 29), read=False))
    latest = unread[0]
    others = [m["subject"] for m in inbox(w) if m is not latest]
    # Naming other mails' subjects too is not an answer.
    avoid = "".join(rf"(?!.*{re.escape(s)})" for s in others if s.casefold() not in latest["subject"].casefold())
    sender = next((c for c in w.contacts if c["email"] == latest["from"]), None)
    reply = latest["subject"]
    criteria: list[Criterion] = [
        # A subject is free text: it (as words, not denied), and no other mail's subject.
        answer(contains=[latest["subject"]], pattern=rf"(?s)^{avoid}")
        if avoid
        else answer(contains=[latest["subject"]]),
        state("mail.messages", "updated", id=latest["id"], read=True),
    ]
    if sender is not None and ask_sender:
        goal = w.rng.choice(
            [
                "Who sent my latest unread email, and what's the subject? Mark it as read.",
                "Tell me who wrote the newest email I haven't opened and its subject, then mark it read.",
                "My newest unread email: who is it from and what's it called? Mark it read afterwards.",
                "Sign in to my mail, find the latest unread email, tell me its sender and subject, and mark it read.",
            ]
        )
        reply = f'"{latest["subject"]}" from {sender["name"]}'
        criteria.insert(1, answer(id="sender", type="contact", value=sender["id"]))
    else:
        goal = w.rng.choice(
            [
                "What's the subject of my latest unread email? Mark it as read.",
                "What is my newest unread email about? Just the subject, and mark it read.",
                "Tell me the subject of the most recent email I haven't opened, then mark it as read.",
                "Read me the subject line of my newest unopened email and mark it as read.",
                "Which email came in last that I haven't read? Give me its subject and mark it read.",
            ]
        )
    typed = sender is not None and ask_sender and w.rng.random() < 0.5
    plan = [
        *plan,
        call("mail.list_inbox", unread_only=True),
        call("mail.mark_read", message_id=latest["id"]),
        call("finish", answer=reply, value=sender["id"]) if typed and sender else call("finish", answer=reply),
    ]
    probes = [
        passes("opened it first", [*plan[:2], call("mail.read", message_id=latest["id"]), *plan[2:]]),
        passes("in a sentence", finishing(plan, f'It\'s "{reply}".')),
        passes(
            "the subject in other punctuation",
            finishing(plan, reply.replace(latest["subject"], re.sub(r"[^\w\s]", " ", latest["subject"]).lower())),
        ),
        fails("the subject denied", finishing(plan, f'It\'s not "{latest["subject"]}".')),
        fails("every subject listed", finishing(plan, "; ".join([reply, *others]))),
        fails("left unread", replacing(plan, 2)),
    ]
    if others:
        probes += [
            fails("a hedge", finishing(plan, f"{reply}, or maybe {others[0]}")),
            fails("the right one only in passing", finishing(plan, f"Not {reply} - it's {others[0]}.")),
        ]
    if sender is not None and ask_sender:
        wrong = similar(w, sender)
        first = sender["name"].split()[0]
        probes += [
            passes("sender by first name", finishing(plan, f'{first} wrote "{latest["subject"]}".')),
            passes("typed sender", finishing(plan, f'"{latest["subject"]}"', value=sender["id"])),
            fails("the wrong sender", finishing(plan, f'"{latest["subject"]}" from {wrong["name"]}')),
            fails("a hedge on the sender", finishing(plan, f'"{latest["subject"]}" from {first} or {wrong["name"]}')),
            fails(
                "typed value contradicts the text",
                finishing(plan, f'"{latest["subject"]}" from {sender["name"]}', value=wrong["id"]),
            ),
        ]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[
            behavior("required_call", "system.sign_in", arguments={"app": "mail"}),
            behavior("required_call", "mail.mark_read", id="marked", arguments={"message_id": latest["id"]}),
        ],
        plan=plan,
        # The sign-in only opens the inbox; the answer proves it was read.
        perturb_exempt=["0.app", "0.account"],
        probes=probes,
    )


@template(
    "mail.send_email",
    apps=["mail", "contacts"],
    domain=Domain.EMAIL,
    difficulty=2,
    capabilities=["login", "lookup", "send"],
)
def send_email(w: World) -> Draft:
    """Template ``mail.send_email``, e.g. task 0: "Send Christopher an email, subject \"Book club\": \"I finished the book and loved the ending.\" Check with me before sending."."""
    plan = signed_out(w)
    people = [c for c in w.contacts if c["email"]]
    (c,) = w.rng.sample(people, 1) if people else w.pick("contacts.contacts")
    if not c["email"]:
        first, last = c["name"].split()
        c["email"] = f"{first.lower()}.{last.lower()}@example.com"
    name, query = who(w, c)
    subject, body = w.rng.choice(EMAILS)
    goal = w.rng.choice(
        [f'Email {name} with the subject "{subject}" and the message: "{body}"',
         f'Send {name} an email, subject "{subject}": "{body}"']
    )  # fmt: skip
    criteria = [
        state(
            "mail.messages",
            "created",
            folder="sent",
            to={"people": [c["id"]]},
            subject={"iequals": subject},
            body=dictated(body),
        )
    ]
    plan.append(call("contacts.search", query=query))
    if confirm_variant(w, 0.3):
        goal += " Check with me before sending."
        ask_first(plan, criteria, "mail.send", f'Send "{subject}" to {c["email"]}?')
    i = len(plan)
    plan += [call("mail.send", to=[c["email"]], subject=subject, body=body), call("finish", answer="Sent.")]
    other = next((x for x in w.contacts if x["email"] and x["id"] != c["id"]), similar(w, c))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[behavior("required_call", "system.sign_in", arguments={"app": "mail"}), looked_up(query)],
        plan=plan,
        probes=[
            passes(
                "address in capitals",
                replacing(plan, i, call("mail.send", to=[c["email"].upper()], subject=subject, body=body)),
            ),
            passes(
                "subject in lower case",
                replacing(plan, i, call("mail.send", to=[c["email"]], subject=subject.lower(), body=body)),
            ),
            fails(
                "the wrong person",
                replacing(
                    plan, i, call("mail.send", to=[other["email"] or "x@example.org"], subject=subject, body=body)
                ),
            ),
            fails(
                "someone copied in",
                replacing(
                    plan,
                    i,
                    call("mail.send", to=[c["email"], other["email"] or "x@example.org"], subject=subject, body=body),
                ),
            ),
        ],
    )


@template(
    "mail.archive",
    apps=["mail"],
    domain=Domain.EMAIL,
    difficulty=2,
    capabilities=["login", "lookup", "update"],
)
def archive(w: World) -> Draft:
    """Template ``mail.archive``, e.g. task 0: "Archive the \"Team offsite\" email."."""
    plan = signed_out(w)
    m = w.rng.choice(inbox(w))
    who_sent = sender_name(w, m["from"])
    word = m["subject"].split()[0]
    plan = [
        *plan,
        call("mail.search", query=m["subject"]),
        call("mail.archive", message_id=m["id"]),
        call("finish", answer="Archived."),
    ]
    other = next(x for x in inbox(w) if x["id"] != m["id"])
    return Draft(
        goal=w.rng.choice(
            [
                f'Archive the "{m["subject"]}" email.',
                f'Move the email "{m["subject"]}"'
                + (f" from {who_sent.split()[0]}" if who_sent else "")
                + " to the archive.",
            ]
        ),
        criteria=[state("mail.messages", "updated", id=m["id"], folder="archive")],
        milestones=[
            behavior("required_call", "system.sign_in", arguments={"app": "mail"}),
            behavior("required_call", "mail.search", id="found", arguments={"query": {"icontains": word}}),
        ],
        plan=plan,
        probes=[
            passes("listed the inbox instead", replacing(plan, 1, call("mail.list_inbox"))),
            passes("opened it first", [*plan[:2], call("mail.read", message_id=m["id"]), *plan[2:]]),
            fails("deleted instead", replacing(plan, 2, call("mail.delete", message_id=m["id"]))),
            fails("another email archived", replacing(plan, 2, call("mail.archive", message_id=other["id"]))),
        ],
    )


@template(
    "mail.reply",
    apps=["mail"],
    domain=Domain.EMAIL,
    difficulty=2,
    capabilities=["login", "lookup", "send"],
)
def reply(w: World) -> Draft:
    """Template ``mail.reply``, e.g. task 0: "Reply to the \"Dinner on Saturday?\" email from Wendelin: \"Thanks, I'll take a look today.\" Ask me before you send it."."""
    plan = signed_out(w)
    m = w.rng.choice(inbox(w))
    text = w.rng.choice(REPLIES)
    who_sent = sender_name(w, m["from"])
    about = f'the "{m["subject"]}" email' + (f" from {who_sent.split()[0]}" if who_sent else "")
    goal = f'Reply to {about}: "{text}"'
    criteria = [
        state(
            "mail.messages",
            "created",
            folder="sent",
            to={"has": m["from"], "len": 1},
            subject={"subject": f"Re: {m['subject']}"},
            body=dictated(text),
        )
    ]
    plan.append(call("mail.search", query=m["subject"]))
    if confirm_variant(w, 0.3):
        goal += " Ask me before you send it."
        ask_first(plan, criteria, "mail.reply", f'Reply "{text}" to {m["from"]}?')
    i = len(plan)
    plan += [call("mail.reply", message_id=m["id"], body=text), call("finish", answer="Replied.")]
    other = (
        next(x for x in inbox(w) if x["from"] != m["from"]) if any(x["from"] != m["from"] for x in inbox(w)) else None
    )
    probes = [
        passes(
            "a new mail with Re: subject",
            replacing(plan, i, call("mail.send", to=[m["from"]], subject=f"Re: {m['subject']}", body=text)),
        ),
        passes("opened it first", [*plan[:2], call("mail.read", message_id=m["id"]), *plan[2:]]),
        passes(
            "a new mail, its subject as another client writes it",
            replacing(
                plan, i, call("mail.send", to=[m["from"]], subject=f"RE: {m['subject'].rstrip('?!.')}", body=text)
            ),
        ),
        fails(
            "a new mail without the reply's subject",
            replacing(plan, i, call("mail.send", to=[m["from"]], subject=f"Fwd: {m['subject']}", body=text)),
        ),
        fails("other words", replacing(plan, i, call("mail.reply", message_id=m["id"], body="OK."))),
        fails(
            "replied twice",
            [*plan[:-1], *([plan[i - 1]] if plan[i - 1].name == "user.confirm" else []), plan[i], plan[-1]],
        ),
    ]
    if other is not None:
        probes.append(
            fails("replied to another email", replacing(plan, i, call("mail.reply", message_id=other["id"], body=text)))
        )
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[
            behavior("required_call", "system.sign_in", arguments={"app": "mail"}),
            behavior(
                "required_call", "mail.search", id="found", arguments={"query": {"icontains": m["subject"].split()[0]}}
            ),
        ],
        plan=plan,
        probes=probes,
    )
