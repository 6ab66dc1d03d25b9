"""messages.search through its indexes answers exactly what the plain scan it replaced answered:
same messages, same order, same total, on random phones and random episodes of writes."""

from __future__ import annotations

import random
from typing import Any

import pytest

from apps.contacts import same_number
from apps.messages import _chrono
from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Fixtures, TaskSpec
from tests.apps.helpers import call

WORDS = ("dinner", "lunch", "Call me", "ANA", "late", "photos", "see you", "ok", "Ana's keys", "milk")
FIRST = ("Ana", "Ben", "Cara", "Dan", "Anabel", "Lena", "Marta")


def _old_search(tables: dict[str, Any], query: str, limit: int) -> dict[str, Any]:
    """messages.search as it was: sort every message, look each number's contact up by scan."""

    def contact_name(number: str) -> str | None:
        for rec in tables.get("contacts.contacts", {}).values():
            if same_number(rec.get("phone", ""), number):
                return rec["name"]
        return None

    q = query.casefold().strip()
    names: dict[str, str | None] = {}
    hits = []
    for rec in sorted(tables["messages.messages"].values(), key=_chrono, reverse=True):
        if rec["number"] not in names:
            names[rec["number"]] = contact_name(rec["number"])
        contact = names[rec["number"]]
        msg = {
            "id": rec["id"],
            "number": rec["number"],
            "contact": contact,
            "direction": rec["direction"],
            "body": rec["body"],
            "time": rec["time"],
            "read": bool(rec.get("read", False)),
        }
        if q in msg["body"].casefold() or (contact is not None and q in contact.casefold()):
            hits.append(msg)
    return {"messages": hits[:limit], "total": len(hits)}


def _number(rng: random.Random, pool: list[str]) -> str:
    if pool and rng.random() < 0.5:  # the same line written another way
        base = rng.choice(pool)
        digits = "".join(ch for ch in base if ch.isdigit())
        return rng.choice([digits[-9:], "0" + digits[-9:], f"+49 {digits[-9:-6]} {digits[-6:]}"])
    return f"+49151{rng.randrange(10**7):07d}"


def _task(rng: random.Random, n_contacts: int, n_msgs: int) -> TaskSpec:
    numbers: list[str] = []
    contacts = []
    for i in range(n_contacts):
        num = _number(rng, numbers)
        numbers.append(num)
        contacts.append(
            {
                "id": f"c_{i + 1}",
                "name": f"{rng.choice(FIRST)} {rng.choice(('Lima', 'Costa', 'Weber', 'Anders'))}",
                "phone": num,
                "email": None,
                "relation": None,
                "favorite": False,
                "birthday": None,
            }
        )
    msgs = [
        {
            "id": f"m_{i + 1}",
            "number": _number(rng, numbers),
            "direction": rng.choice(("in", "out")),
            "body": " ".join(rng.sample(WORDS, 2)),
            "time": f"2026-11-{rng.randrange(1, 28):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:00",
            "read": rng.random() < 0.5,
        }
        for i in range(n_msgs)
    ]
    fx = Fixtures(records={"contacts.contacts": contacts, "messages.messages": msgs})
    return TaskSpec(id="rand", domain="communication", goal="g", fixtures=fx, criteria=[AnswerCriterion(equals="x")])


def _check(b: SandboxBackend, rng: random.Random) -> None:
    for _ in range(4):
        query = rng.choice([*WORDS, *FIRST, "an", "a", "zzz", "lima", "ANA "])
        limit = rng.choice((1, 3, 20, 100))
        fb = call(b, "messages.search", query=query, limit=limit)
        assert fb.ok, fb
        assert fb.result == _old_search(dict(b.tables()), query, limit), query


@pytest.mark.parametrize("seed", range(8))
def test_messages_search_matches_the_plain_scan(seed):
    rng = random.Random(seed)
    task = _task(rng, rng.randrange(0, 40), rng.randrange(1, 150))
    b = SandboxBackend()
    for _episode in range(3):
        b.reset(task)
        _check(b, rng)
        state = b.phone.state
        for _ in range(12):
            op = rng.random()
            contacts = state.tables.get("contacts.contacts", {})
            msgs = state.tables["messages.messages"]
            if op < 0.25:
                call(
                    b, "messages.send", to=_number(rng, [c["phone"] for c in contacts.values()]), body=rng.choice(WORDS)
                )
            elif op < 0.4 and msgs:
                call(b, "messages.delete", message_id=rng.choice(sorted(msgs)))
            elif op < 0.55:
                rid = state.new_id("contacts.contacts", "c_")
                num = _number(rng, [m["number"] for m in msgs.values()])
                state.insert(
                    "contacts.contacts",
                    {"id": rid, "name": f"{rng.choice(FIRST)} New", "phone": num, "email": None,
                     "relation": None, "favorite": False, "birthday": None},
                )  # fmt: skip
            elif op < 0.7 and contacts:
                rid = rng.choice(sorted(contacts))
                state.update("contacts.contacts", rid, name=rng.choice(FIRST) + " Renamed")
            elif op < 0.8 and contacts:
                rid = rng.choice(sorted(contacts))
                state.update("contacts.contacts", rid, phone=_number(rng, [m["number"] for m in msgs.values()]))
            elif op < 0.9 and contacts:
                state.delete("contacts.contacts", rng.choice(sorted(contacts)))
            else:
                snap = b.snapshot()
                _check(b, rng)
                b.restore(snap)
            _check(b, rng)


def _ref(rng: random.Random, contacts: list[dict[str, Any]]) -> Any:
    c = rng.choice(contacts) if contacts else {"id": "c_1", "name": "Ana Lima", "phone": "+4915112345678"}
    digits = "".join(ch for ch in c.get("phone") or "" if ch.isdigit())
    return rng.choice(
        [
            c["id"],
            f" {c['id']} ",
            c["name"],
            c["name"].upper(),
            c["name"].split(" ")[0],
            c.get("email") or "nobody@x.org",
            f"{c['name']} <{c.get('email') or 'x@y.org'}>",
            f"Someone <{c.get('email') or 'x@y.org'}>",
            digits[-7:],
            digits[-8:],
            "0" + digits[-9:],
            f"+1 {digits[-10:]}",
            digits[-5:],
            "Ana",
            "",
            None,
            42,
        ]
    )


@pytest.mark.parametrize("seed", range(8))
def test_contact_ids_through_the_book_match_the_scan(seed):
    from phoneenv.state import PhoneState
    from phoneenv.tasks.identity import ContactBook, contact_ids

    rng = random.Random(seed)

    def person(i: int) -> dict[str, Any]:
        phone = rng.choice([f"+49151{rng.randrange(10**7):07d}", f"{rng.randrange(10**7):07d}",
                            f"{rng.randrange(10**8):08d}", "12", ""])  # fmt: skip
        if rng.random() < 0.3 and i > 1:
            phone = "0" + phone[-9:]  # another spelling of a number the book may hold
        email = rng.choice([None, "", f"p{rng.randrange(5)}@X.org"])
        return {
            "id": f"c_{i}",
            "name": f"{rng.choice(FIRST)} {rng.choice(('Lima', 'Costa'))}",
            "phone": phone,
            "email": email,
        }

    state = PhoneState({"contacts.contacts": [person(i) for i in range(1, rng.randrange(2, 60))]})
    snap = state.snapshot()
    for step in range(60):
        tbl = state.tables["contacts.contacts"]
        people = list(tbl.values())
        for _ in range(5):
            ref = _ref(rng, people)
            assert contact_ids(ref, ContactBook(tbl)) == contact_ids(ref, people), ref
        op = rng.random()
        if op < 0.3:
            state.insert("contacts.contacts", person(100 + step))
        elif op < 0.6 and tbl:
            rid = rng.choice(sorted(tbl))
            state.replace("contacts.contacts", rid, {**person(0), "id": rid})
        elif op < 0.8 and tbl:
            state.delete("contacts.contacts", rng.choice(sorted(tbl)))
        elif op < 0.9:
            state.restore(snap)
        else:
            snap = state.snapshot()
