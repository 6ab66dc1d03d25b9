"""messages.search and contacts.search through their indexes answer exactly what the plain scans
they replaced answered: same records, same order, same total, on random phones and random
episodes of writes."""

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


def _churn(state: Any, rng: random.Random, person: Any, step: int, snap: Any) -> Any:
    """One random change to the contacts of ``state``: insert ``person(100 + step)``, replace or
    delete a contact, restore ``snap``, or take a new snapshot (returned; else ``snap``)."""
    tbl = state.tables["contacts.contacts"]
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
        return state.snapshot()
    return snap


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
            gone = [person(500 + k) for k in range(step % 3)]  # records after the table's (deleted ones)
            assert contact_ids(ref, ContactBook(tbl, gone)) == contact_ids(ref, people + gone), ref
            ids = contact_ids(ref, people + gone)
            assert ContactBook(tbl, gone).having_ids(ids) == [c for c in people + gone if c["id"] in ids], ref
        snap = _churn(state, rng, person, step, snap)


def _old_mentions(text: Any, contacts: Any) -> list[set[str]]:
    """identity.mentioned_contacts as it was (the oracle): every contact's name searched in the
    text, longest first; first names in order of first appearance; e-mails and numbers."""
    import re

    from phoneenv.tasks.identity import _EMAIL_IN_TEXT, _PHONE_IN_TEXT, _fold, contact_ids

    people = list(contacts)
    src = str(text or "")
    low = src.casefold()
    spans: list[tuple[int, int, set[str]]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e, _ in spans)

    for c in sorted(people, key=lambda c: -len(str(c.get("name") or ""))):
        name = _fold(c.get("name"))
        if not name:
            continue
        for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", low):
            if free(*m.span()):
                spans.append((m.start(), m.end(), {c["id"]}))
    firsts: dict[str, set[str]] = {}
    for c in people:
        first = _fold(c.get("name")).split(" ")[0]
        if first:
            firsts.setdefault(first, set()).add(c["id"])
    for first, ids in firsts.items():
        for m in re.finditer(rf"(?<!\w){re.escape(first)}(?!\w)", low):
            if free(*m.span()):
                spans.append((m.start(), m.end(), set(ids)))
    for m in _EMAIL_IN_TEXT.finditer(src):
        ids = contact_ids(m.group(), people)
        if ids and free(*m.span()):
            spans.append((m.start(), m.end(), ids))
    for m in _PHONE_IN_TEXT.finditer(src):
        ids = contact_ids(m.group(), people)
        if ids and free(*m.span()):
            spans.append((m.start(), m.end(), ids))
    out: list[set[str]] = []
    for _, _, ids in sorted(spans, key=lambda s: s[0]):
        if ids not in out:
            out.append(ids)
    return out


# Names that overlap, repeat, nest and carry punctuation, so the order the scan takes them in decides.
NAMES = ("Ana", "Ana Lima", "Lima Ana", "ana lima", "Ana  Lima", "Ben", "Ben-Ole Weber", "Ole", "Dr. Ana",
         "Anabel Lima", "Lima", "Ana Lima Costa", "Ça Va", "STRASSE", "Straße", "", "O'Neil", "ana-maria", "ana", "Ana Ana", "Ana-Maria Lima", "Maria Costa", "Ana-Maria")  # fmt: skip


def _mention_text(rng: random.Random, people: list[dict[str, Any]]) -> str:
    parts = []
    for _ in range(rng.randrange(1, 8)):
        c = (
            rng.choice(people)
            if people and rng.random() < 0.7
            else {"name": rng.choice(NAMES), "phone": "", "email": ""}
        )
        name = str(c.get("name") or "x")
        digits = "".join(ch for ch in c.get("phone") or "" if ch.isdigit())
        parts.append(
            rng.choice(
                [name, name.upper(), name.split(" ")[0], f"{name}'s", f"({name})", name + "s", c.get("email") or "a@b.org",
                 digits, f"+49 {digits[-9:]}", "and", "then", ",", "Ana Lima Ana", "ana ana ana", "Ana-Maria", "lima ana lima"]
            )
        )  # fmt: skip
    return rng.choice((" ", "  ", ", ", "-")).join(parts)


@pytest.mark.parametrize("seed", range(10))
def test_mentioned_contacts_through_the_book_match_the_scan(seed):
    from phoneenv.state import PhoneState
    from phoneenv.tasks.answers import _first_mention
    from phoneenv.tasks.identity import ContactBook, mentioned_contacts

    rng = random.Random(seed)

    def person(i: int) -> dict[str, Any]:
        phone = rng.choice([f"+49151{rng.randrange(10**7):07d}", f"{rng.randrange(10**8):08d}", ""])
        return {
            "id": f"c_{i}",
            "name": rng.choice([*NAMES, f"{rng.choice(FIRST)} {rng.choice(('Lima', 'Costa'))}", None]),
            "phone": phone,
            "email": rng.choice([None, f"p{rng.randrange(5)}@x.org"]),
        }

    state = PhoneState({"contacts.contacts": [person(i) for i in range(1, rng.randrange(2, 50))]})
    snap = state.snapshot()
    for step in range(60):
        tbl = state.tables["contacts.contacts"]
        people = list(tbl.values())
        for _ in range(4):
            text = _mention_text(rng, people)
            got = mentioned_contacts(text, ContactBook(tbl))
            assert got == _old_mentions(text, people), text
            for ids in got:  # the span a claim reports: first mention of any of those people
                assert _first_mention(text, ids, ContactBook(tbl)) == _first_mention(text, ids, people), (text, ids)
        op = rng.random()
        if op < 0.3:
            state.insert("contacts.contacts", person(100 + step))
        elif op < 0.55 and tbl:
            rid = rng.choice(sorted(tbl))
            state.replace("contacts.contacts", rid, {**person(0), "id": rid})
        elif op < 0.7 and tbl:
            state.delete("contacts.contacts", rng.choice(sorted(tbl)))
        elif op < 0.8 and tbl:  # deleted and added back: it moves to the end of the table
            rid = rng.choice(sorted(tbl))
            rec = state.delete("contacts.contacts", rid)
            state.insert("contacts.contacts", rec)
        elif op < 0.9:
            state.restore(snap)
        else:
            snap = state.snapshot()


def test_mentions_take_first_names_in_the_order_they_first_appear_in_the_book():
    """Overlapping first names: the one whose first bearer comes first in the book wins, also
    when a contact moved to the end of the table this episode (worked out by hand)."""
    from phoneenv.state import PhoneState
    from phoneenv.tasks.identity import ContactBook, mentioned_contacts

    book = [
        {"id": "c_1", "name": "Ana Lima"},
        {"id": "c_2", "name": "Ana-Maria Costa"},
        {"id": "c_3", "name": "Ana Weber"},
    ]
    state = PhoneState({"contacts.contacts": book})
    state.snapshot()
    tbl = state.tables["contacts.contacts"]
    assert mentioned_contacts("Ask ana-maria.", ContactBook(tbl)) == [{"c_1", "c_3"}]  # "ana" (c_1) before "ana-maria"
    state.insert("contacts.contacts", state.delete("contacts.contacts", "c_1"))  # c_1 is now last
    tbl = state.tables["contacts.contacts"]
    assert list(tbl) == ["c_2", "c_3", "c_1"]
    assert mentioned_contacts("Ask ana-maria.", ContactBook(tbl)) == [{"c_2"}]  # "ana-maria" (c_2) before "ana" (c_3)


def _old_contacts_search(tables: dict[str, Any], query: str, limit: int) -> dict[str, Any]:
    """contacts.search as it was: scan every contact, then sort the hits by name (stable)."""
    from apps.contacts import emails_of, numbers_of, view

    q = query.casefold().strip()
    qd = "".join(ch for ch in q if ch.isdigit())
    hits = []
    for rec in tables.get("contacts.contacts", {}).values():
        hay = f"{rec['name']} {' '.join(emails_of(rec))} {rec.get('relation') or ''}".casefold()
        digits = " ".join("".join(ch for ch in n if ch.isdigit()) for n in numbers_of(rec))
        if q in hay or (len(qd) >= 3 and qd in digits):
            hits.append(rec)
    hits.sort(key=lambda r: r["name"])
    return {"contacts": [view(r) for r in hits[:limit]], "total": len(hits)}


# queries that hit names, e-mails, relations, numbers (3+ digits, or too few), and nothing
CONTACT_QUERIES = ("ana", "Ana ", "a", "lima", "LIMA", "sister", "x.org", "@", "151", "49 151", "15", "0",
                   "Ana Lima", "zzz", "ña", "ß", "ss", "p1@", "renamed", "new", "\0", "a\0b", " ")  # fmt: skip


def _contact(rng: random.Random, rid: str) -> dict[str, Any]:
    other = [{"number": f"0{rng.randrange(10**9):09d}", "label": "work"}] if rng.random() < 0.3 else []
    return {
        "id": rid,
        "name": rng.choice([f"{rng.choice(FIRST)} {rng.choice(('Lima', 'Costa', 'Straße'))}", "Ña Ana", "Ana Lima"]),
        "phone": f"+49151{rng.randrange(10**7):07d}",
        "email": rng.choice([None, f"p{rng.randrange(5)}@x.org"]),
        "relation": rng.choice([None, "sister", "Boss"]),
        "favorite": False,
        "birthday": None,
        **({"other_phones": other} if other else {}),
    }


@pytest.mark.parametrize("seed", range(8))
def test_contacts_search_matches_the_plain_scan(seed):
    rng = random.Random(seed)
    n = rng.choice((0, 1, rng.randrange(2, 80)))
    fx = Fixtures(records={"contacts.contacts": [_contact(rng, f"c_{i + 1}") for i in range(n)]})
    task = TaskSpec(id="rand", domain="communication", goal="g", fixtures=fx, criteria=[AnswerCriterion(equals="x")])
    b = SandboxBackend()

    def check() -> None:
        for _ in range(5):
            query, limit = rng.choice(CONTACT_QUERIES), rng.choice((1, 3, 10, 50))
            fb = call(b, "contacts.search", query=query, limit=limit)
            if not query.strip():
                continue
            assert fb.ok, fb
            assert fb.result == _old_contacts_search(dict(b.tables()), query, limit), query

    for _episode in range(3):
        b.reset(task)
        check()
        state = b.phone.state
        for step in range(15):
            tbl = state.tables.get("contacts.contacts", {})
            op = rng.random()
            if op < 0.25:
                state.insert("contacts.contacts", _contact(rng, state.new_id("contacts.contacts", "c_")))
            elif op < 0.45 and tbl:
                rid = rng.choice(sorted(tbl))
                state.update("contacts.contacts", rid, name=rng.choice(FIRST) + " Renamed")
            elif op < 0.55 and tbl:
                state.delete("contacts.contacts", rng.choice(sorted(tbl)))
            elif op < 0.7 and tbl:  # deleted and added back: it moves to the end of the table
                rec = state.delete("contacts.contacts", rng.choice(sorted(tbl)))
                state.insert("contacts.contacts", {**rec, "name": rng.choice((rec["name"], "Ana Lima"))})
            elif op < 0.8:
                args = {"name": rng.choice(("Ana Lima", "Zoe New")), "phone": f"+4930{step:07d}"}
                b.call("contacts.create", b.tools()["contacts.create"].validator.validate(args))
            else:
                snap = b.snapshot()
                check()
                b.restore(snap)
            check()


@pytest.mark.parametrize("seed", range(6))
def test_people_in_told_names_through_the_book_match_the_scan(seed):
    """The answer's names a contact is called (left to the person claims) are the same through
    the contacts table's index (plus the records written since) as through a scan of the
    names, after inserts, renames, deletes and restores."""
    from phoneenv.state import PhoneState
    from phoneenv.tasks.identity import ContactBook
    from phoneenv.tasks.names import _Folk, _folk_words

    rng = random.Random(seed)
    pool = ["Ana Lima", "Zoë Costa", "Bryan Parry", "José", "", None, "Jo-Ann O'Neil", "Lima"]

    def person(i: int) -> dict[str, Any]:
        return {"id": f"c_{i}", "name": rng.choice([*pool, f"{rng.choice(FIRST)} {rng.choice(('Lima', 'Costa'))}"])}

    asked = [" ana lima ", " ana ", " zoe ", " zoe costa ", " jose ", " jo ", " lima ", " bryan ", " costa ", " "]
    state = PhoneState({"contacts.contacts": [person(i) for i in range(1, rng.randrange(2, 40))]})
    snap = state.snapshot()
    for step in range(50):
        tbl = state.tables["contacts.contacts"]
        scan = {w for c in tbl.values() for w in _folk_words(str(c.get("name") or "")) if w is not None}
        book, names = _Folk(ContactBook(tbl)), _Folk([str(c.get("name") or "") for c in tbl.values()])
        for w in asked + [f" {str(c.get('name') or '').lower()} " for c in list(tbl.values())[:3]]:
            assert (w in book) == (w in scan) == (w in names), (w, step)
        snap = _churn(state, rng, person, step, snap)


def test_finish_on_a_big_phone_reads_no_record_it_did_not_touch(monkeypatch):
    """Judging an episode on a phone of 5,000 contacts and messages reads the words of no more
    records than the episode touched (the address book's names come from the index built once
    per fixture table), whether or not the answer tells a name: no finish grows with the phone."""
    import json

    from phoneenv.env import PhonePlanEnv
    from phoneenv.tasks import get_task, predicates
    from phoneenv.tasks.world import pad_fixtures

    base = get_task("messages.text_contact/0")
    counts = {"contacts.contacts": 5_000, "messages.messages": 5_000}
    task = base.model_copy(update={"fixtures": pad_fixtures(base.fixtures, counts)})
    send = '{"name": "messages.send", "arguments": {"to": "+4915112345678", "body": "hi"}}'
    env = PhonePlanEnv(task=task, memory=False, max_steps=50)
    calls = [0]
    real = predicates.words

    def counted(text: Any) -> str:
        calls[0] += 1
        return real(text)

    for answer in ("done", "Sent hi to Ana Lima and texted Bryan Parry."):
        finish = json.dumps({"name": "finish", "arguments": {"answer": answer}})
        for episode in range(2):  # the first builds the indexes; the second must not scan
            env.reset(seed=0, options={"task": task})
            env.step(send)
            monkeypatch.setattr(predicates, "words", counted)
            import phoneenv.tasks.names as names

            monkeypatch.setattr(names, "words", counted)
            calls[0] = 0
            env.step(finish)
            monkeypatch.undo()
            if episode == 1:
                assert calls[0] < 500, (answer, calls[0])
    env.close()
