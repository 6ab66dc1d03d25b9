"""Memory templates: requests that only what the harness remembers about the user can fulfil.

Every task seeds the user's memory (``Fixtures.memory``) with the fact, preference, episode or
intent it needs, among distractor memories, and leaves the rest of the phone unable to tell:
no contact carries a ``relation``, no app names the plumber, the usual restaurant or the new
gate code. The reference plan looks the memory up with ``memory.search`` (a milestone), then
acts; criteria check what was done, so a guess, an outdated memory or acting before an intent's
moment fails.

| template | what memory says | how the task is verified |
|---|---|---|
| ``memory.text_relation`` | who "my sister" (boss, landlord, ...) is | the text reaches that person |
| ``memory.call_past_provider`` | two episodes with two plumbers (...): the newer is "last time" | the call goes to the newer one |
| ``memory.usual_booking`` | the usual table (restaurant, party size, time), an outdated one | the booking text and the calendar event |
| ``memory.preference_setting`` | wake-up time, tea steeping time, brightness, ring volume, gym slot | the alarm, timer, setting or event takes the preferred value; an outdated preference fails |
| ``memory.updated_fact`` | a code that changed (old and new fact, linked or not) | the text carries the new code and no message the old |
| ``memory.recall_answer`` | a locker, a parking spot, whose dinner had the wine, what the plumber cost | typed answers joined with the calendar or contacts (the session's or flight's time, the number): the newest value only; read only |
| ``memory.save_preference`` | an old preference the user now changes (or none) | ``memory.entries``: the new one created, the old superseded |
| ``memory.forget_outdated`` | a fact the user says is obsolete, beside similar ones | ``memory.entries``: that entry invalid, nothing else touched |
| ``memory.intent_time`` | "remind me at 10:30 to text Ana ..." among later and place intents | the text is sent at or after the intent's time (``system.wait``) |
| ``memory.intent_place`` | "when I get to the office, call Ben" and a location timeline | the call or text happens at or after the arrival |
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from apps.clock.templates import spoken
from apps.messages.templates import TEXTS
from phoneenv.contract import Category, Domain, ToolCall
from phoneenv.tasks.templates import (
    Draft,
    answer,
    behavior,
    call,
    dictated,
    fails,
    finishing,
    first_name,
    passes,
    replacing,
    said_probes,
    state,
    template,
)
from phoneenv.tasks.world import World

__all__ = ["COUNT", "MemoryBook", "ago", "forget_relations"]

MEMORY = Category.MEMORY
COUNT = 12
"""Tasks per memory template (15 for ``memory.preference_setting``, 10 for
``memory.forget_outdated``: 121 tasks from 10 templates)."""

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip

# Distractor memories: (kind, content, topic); a template leaves out the topics it asks about.
DISTRACTORS = [
    ("preference", "I prefer aisle seats on long flights", "seat"),
    ("preference", "I take my coffee with oat milk", "coffee"),
    ("preference", "No phone calls before 9 in the morning, please", "calls"),
    ("preference", "I like the thermostat at 21 degrees", "home"),
    ("preference", "I'd rather take the train than fly for trips under four hours", "travel"),
    ("preference", "For birthdays I usually send flowers", "gifts"),
    ("fact", "My passport expires in March 2028", "passport"),
    ("fact", "Our car is a blue Skoda Octavia", "car"),
    ("fact", "The recycling is collected on Tuesdays", "home"),
    ("fact", "My shoe size is 43", "clothes"),
    ("fact", "The spare key is with the neighbours on the second floor", "home"),
    ("fact", "I'm allergic to penicillin", "health"),
    ("episode", "Renewed the car insurance online; the new policy starts in January", "car"),
    ("episode", "Went to the farmers market and bought honey and apples", "shopping"),
    ("episode", "Booked the flights to Lisbon for the spring holidays", "travel"),
    ("episode", "Returned the broken headphones to the electronics shop", "shopping"),
]


def ago(w: World, days: int) -> str:
    """A local time ``days`` days before the world's clock, at a seeded hour between 07:00 and
    22:59 (``YYYY-MM-DDTHH:MM:SS``)."""
    day = w.now.date() - dt.timedelta(days=days)
    return dt.datetime.combine(day, dt.time(w.rng.randrange(7, 23), w.rng.randrange(60))).isoformat(timespec="seconds")


def forget_relations(w: World) -> None:
    """Drop every contact's ``relation``: who someone is to the user must come from memory."""
    for c in w.contacts:
        c["relation"] = None


def _day_label(day: dt.date) -> str:
    return f"{WEEKDAYS[day.weekday()]} {day.day} {MONTHS[day.month - 1]}"


def _next_weekday(w: World, weekday: int) -> dt.date:
    """The next date (tomorrow at the earliest) that falls on ``weekday`` (0 = Monday)."""
    day = w.now.date() + dt.timedelta(days=1)
    while day.weekday() != weekday:
        day += dt.timedelta(days=1)
    return day


def _only(new: str, old: str | None = None) -> str:
    """A regex (case-insensitive where used) that holds when a text names ``new`` and not ``old``."""
    neg = "" if old is None else rf"(?!.*{re.escape(old)})"
    return rf"(?s)^{neg}(?=.*{re.escape(new)})"


@dataclass
class MemoryBook:
    """The memories a template seeds: entries are added in any order, then sorted by creation
    time and numbered 1, 2, ... (the ids a reference plan can name). ``supersedes`` links are
    given as the earlier entry's dict."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self, kind: str, content: str, created: str, *, supersedes: dict[str, Any] | None = None, **extra: Any
    ) -> dict[str, Any]:
        """Add one memory and return its (mutable until :meth:`fixtures`) dict."""
        entry = {"kind": kind, "content": content, "created": created, "_sup": supersedes, **extra}
        self.entries.append(entry)
        return entry

    def distract(self, w: World, n: int, skip: tuple[str, ...] = ()) -> None:
        """Add ``n`` distractor memories whose topics are not in ``skip``."""
        pool = [d for d in DISTRACTORS if d[2] not in skip]
        for kind, content, _ in w.rng.sample(pool, n):
            self.add(kind, content, ago(w, w.rng.randrange(5, 500)))

    def fixtures(self) -> list[dict[str, Any]]:
        """The entries as ``Fixtures.memory`` dicts, oldest first, ids assigned (read each
        entry's id from its dict afterwards)."""
        order = sorted(self.entries, key=lambda e: e["created"])
        for i, e in enumerate(order, 1):
            e["id"] = i
        out = []
        for e in order:
            item = {k: v for k, v in e.items() if k != "_sup"}
            if e["_sup"] is not None:
                item["supersedes"] = e["_sup"]["id"]
            out.append(item)
        return out


def _old_and_new(
    w: World, book: MemoryBook, kind: str, old: str, new: str, link: bool | None = None
) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """An outdated memory and the newer one that replaced it; linked by ``supersedes`` when
    ``link`` (drawn when None). Returns (old entry, new entry, linked)."""
    linked = w.rng.random() < 0.5 if link is None else link
    old_e = book.add(kind, old, ago(w, w.rng.randrange(250, 700)))
    new_e = book.add(kind, new, ago(w, w.rng.randrange(10, 200)), supersedes=old_e if linked else None)
    return old_e, new_e, linked


def _sms(
    c: dict[str, Any],
    contains: str | None = None,
    states: dict[str, Any] | None = None,
    said: str | None = None,
    day: dt.date | None = None,
    part: str | None = None,
    **where: Any,
) -> Any:
    """A text to contact ``c`` (by identity: any format of their number) created whose body
    contains ``contains``, states the facts ``states`` (``{"time": "19:30"}``: "7:30 pm"
    holds, another time beside it does not), is the dictated text ``said``
    (:func:`~phoneenv.tasks.templates.dictated`: greetings aside, nothing added) or says ``part``
    (:func:`~phoneenv.tasks.predicates.says`: the words the user's reported request requires,
    the agent's own words around them), naming no day but ``day`` when given, and whose fields
    match ``where``."""
    if contains is not None:
        where["body"] = {"icontains": contains}
    if said is not None:
        where["body"] = dictated(said, day)
    if part is not None:
        where["body"] = {"says": part} | ({"consistent": {"date": day.isoformat()}} if day is not None else {})
    if states is not None:
        where["body"] = {"states": states}
    crit = state("messages.messages", "created", number={"person": c["id"]}, direction="out", **where)
    if states is not None:
        crit.id += ":" + ",".join(states)
    return crit


def memory_searched(*words: str) -> Any:
    """A milestone (shared by every app's memory templates): ``memory.search`` with a query naming one of ``words`` (what this task is about)."""
    return behavior(
        "required_call",
        "memory.search",
        id=f"searched:{words[0]}",
        arguments={"query": {"any": [{"icontains": w} for w in words]}},
    )


def _spaced(phone: str) -> str:
    """``+4917012345678`` written as a person might type it: ``0049 170 1234 5678``."""
    digits = phone.lstrip("+")
    return "00" + " ".join(digits[i : i + 4] for i in range(0, len(digits), 4))


def _mem_draft(w: World, book: MemoryBook, fixture_extra: dict[str, Any] | None = None, **kw: Any) -> Draft:
    """A :class:`Draft` whose fixtures are the world's plus ``book``'s memories (and ``fixture_extra``)."""
    fixtures = w.fixtures(memory=book.fixtures(), **(fixture_extra or {}))
    return Draft(fixtures=fixtures, **kw)


# ---------------------------------------------------------------------------------------------
# Facts: who is who
# ---------------------------------------------------------------------------------------------

RELATIONS = ["sister", "brother", "mom", "dad", "boss", "landlord", "neighbor", "coworker", "coach", "cousin",
             "best friend", "babysitter"]  # fmt: skip
RELATION_PHRASES = ["{name} is my {rel}", "My {rel} is {name}", "{first} ({name}) is my {rel}"]


@template(
    "memory.text_relation",
    apps=["contacts", "messages"],
    domain=Domain.COMMUNICATION,
    category=MEMORY,
    difficulty=2,
    capabilities=["recall", "lookup", "send"],
    count=COUNT,
)
def text_relation(w: World) -> Draft:
    """Template ``memory.text_relation``: "Text my sister: ..." where only a memory says who the
    sister is, beside memories of who the boss, the neighbour and others are."""
    forget_relations(w)
    people = w.rng.sample(w.contacts, 4)
    # A relation that is part of the person's name or email ("dad" in "Haddad") would let
    # contacts.search find them without memory.
    rels = [r for r in RELATIONS if r not in f"{people[0]['name']} {people[0]['email'] or ''}".casefold()]
    rels = w.rng.sample(rels, 4)
    book = MemoryBook()
    for p, r in zip(people, rels, strict=True):
        phrase = w.rng.choice(RELATION_PHRASES)
        book.add("fact", phrase.format(name=p["name"], first=first_name(p), rel=r), ago(w, w.rng.randrange(30, 900)))
    book.distract(w, 3)
    target, rel = people[0], rels[0]
    text, same, opposite = w.rng.choice(TEXTS)
    end = "" if text[-1] in "?!." else "."
    goal = w.rng.choice([f'Text my {rel}: "{text}"{end}', f'Send my {rel} a message saying "{text}"{end}'])
    plan = [
        call("memory.search", query=f"who is my {rel}"),
        call("contacts.search", query=target["name"]),
        call("messages.send", to=target["phone"], body=text),
        call("finish", answer=f"Sent to {target['name']}, your {rel}."),
    ]
    return _mem_draft(
        w,
        book,
        goal=goal,
        criteria=[_sms(target, said=text)],
        milestones=[memory_searched(rel), _sms(target)],
        plan=plan,
        probes=[
            passes(
                "number typed with spaces",
                replacing(plan, 2, call("messages.send", to=_spaced(target["phone"]), body=text)),
            ),
            passes("searched memory twice", [call("memory.search", query=rel), *plan]),
            fails(
                f"texts the {rels[1]} instead",
                replacing(plan, 2, call("messages.send", to=people[1]["phone"], body=text)),
            ),
            fails(
                "texts someone else too",
                replacing(plan, 2, plan[2], call("messages.send", to=people[2]["phone"], body=text)),
            ),
            *said_probes(plan, 2, target["phone"], same, opposite),
        ],
    )


# ---------------------------------------------------------------------------------------------
# Episodes: "the plumber I used last time"
# ---------------------------------------------------------------------------------------------

TRADES = {
    "plumber": (["fixed the leaking kitchen sink", "replaced the bathroom tap", "unblocked the shower drain"],
                "The bathroom sink is blocked again"),
    "electrician": (["fixed the fuse box", "rewired the kitchen lights", "installed the outdoor lamp"],
                    "The kitchen lights keep flickering again"),
    "locksmith": (["changed the front door lock", "opened the door when I was locked out"],
                  "The front door lock is sticking again"),
    "painter": (["painted the living room", "repainted the hallway"], "The bedroom walls need a fresh coat"),
    "cleaner": (["did a deep clean of the flat", "cleaned all the windows"],
                "The flat needs a proper clean before the party"),
    "mechanic": (["changed the brake pads", "did the winter check on the car"], "The car is making that noise again"),
    "piano tuner": (["tuned the piano"], "The piano sounds off again"),
    "dog sitter": (["looked after the dog for the weekend"], "I'm away next weekend and the dog needs looking after"),
}  # fmt: skip


@template(
    "memory.call_past_provider",
    apps=["contacts", "phone"],
    domain=Domain.CALLS,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "recency", "lookup", "call"],
    count=COUNT,
)
def call_past_provider(w: World) -> Draft:
    """Template ``memory.call_past_provider``: "Call the plumber I used last time", with two
    episodes of two different plumbers (the newer one is meant) and episodes of other trades."""
    forget_relations(w)
    trade = _phrasing(w, 1, sorted(TRADES))  # tasks k and k + 8 share a trade and differ in wording
    other = w.rng.choice([t for t in sorted(TRADES) if t != trade])
    jobs, problem = TRADES[trade]
    older, newer, third = w.rng.sample(w.contacts, 3)
    book = MemoryBook()
    phrasing = [
        "Had {name} over as our {trade}: {first} {job}.",
        "{name}, the {trade}, {job}. Paid {price}.",
        "Our {trade} {name} came round and {job}.",
    ]
    for who, days in ((older, w.rng.randrange(300, 700)), (newer, w.rng.randrange(20, 200))):
        text = w.rng.choice(phrasing).format(
            name=who["name"],
            first=first_name(who),
            trade=trade,
            job=w.rng.choice(jobs),
            price=w.money(w.price(w.rng.randrange(60, 400))),
        )
        book.add("episode", text, ago(w, days))
    book.add(
        "episode", f"{third['name']}, the {other}, {w.rng.choice(TRADES[other][0])}.", ago(w, w.rng.randrange(5, 400))
    )
    book.distract(w, 3)
    goal = f"{problem}. " + _phrasing(
        w, len(TRADES), [f"Call the {trade} I used last time.", f"Give the {trade} we had last time a ring."]
    )
    plan = [
        call("memory.search", query=f"{trade}", kind="episode"),
        call("contacts.search", query=newer["name"]),
        call("phone.call", number=newer["phone"]),
        call("finish", answer=f"Calling {newer['name']}, the {trade} from last time."),
    ]
    return _mem_draft(
        w,
        book,
        goal=goal,
        criteria=[state("phone.calls", "created", number={"person": newer["id"]}, direction="out")],
        milestones=[memory_searched(trade, trade.split()[0])],
        plan=plan,
        probes=[
            passes("number typed with spaces", replacing(plan, 2, call("phone.call", number=_spaced(newer["phone"])))),
            passes("looked through the contacts", [*plan[:2], call("contacts.list"), *plan[2:]]),
            fails(f"calls the older {trade}", replacing(plan, 2, call("phone.call", number=older["phone"]))),
            fails(
                "calls both",
                replacing(plan, 2, call("phone.call", number=older["phone"]), call("phone.end_call"), plan[2]),
            ),
        ],
    )


# ---------------------------------------------------------------------------------------------
# Preferences that decide arguments
# ---------------------------------------------------------------------------------------------

RESTAURANTS = ["Trattoria Roma", "Sushi Kaito", "Bistro Lumiere", "Taverna Olympia", "The Green Table",
               "Curry House Mumbai", "Casa Pepe"]  # fmt: skip
OCCASIONS = [
    # (how the memory says it, how the goal says it, weekday, times)
    ("Friday dinners", "Friday dinner", 4, ["19:00", "19:30", "20:00"]),
    ("date night on Saturdays", "Saturday date night", 5, ["19:30", "20:00", "20:30"]),
    ("Sunday brunch", "Sunday brunch", 6, ["10:30", "11:00", "11:30"]),
]


def _business(w: World, name: str) -> dict[str, Any]:
    """Add a business to the address book (a landline in the home city, no email) and return it."""
    phone = w.phone_number("landline")
    rec = {
        "id": w.next_id("contacts.contacts", "c_"),
        "name": name,
        "phone": phone,
        "email": None,
        "relation": None,
        "favorite": False,
        "birthday": None,
    }
    w.contacts.append(rec)
    return rec


@template(
    "memory.usual_booking",
    apps=["contacts", "messages", "calendar"],
    domain=Domain.FOOD,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "preference", "send", "create"],
    count=COUNT,
)
def usual_booking(w: World) -> Draft:
    """Template ``memory.usual_booking``: "Book our usual Friday dinner table", where a preference
    names the restaurant, party size and time (sometimes replacing an older usual place), among
    other restaurants in the address book."""
    forget_relations(w)
    mem_words, goal_words, weekday, times = _phrasing(w, 1, OCCASIONS)
    usual, old_place, lunch = w.rng.sample(RESTAURANTS, 3)
    places = {name: _business(w, name) for name in (usual, old_place, lunch)}
    size, hhmm = w.rng.choice([2, 3, 4, 5, 6]), w.rng.choice(times)
    old_size, old_time = w.rng.choice([2, 4, 6]), w.rng.choice(times)
    book = MemoryBook()
    new_text = f"For {mem_words} we always book {usual}: a table for {size} at {hhmm}."
    if w.rng.random() < 0.6:
        _old_and_new(
            w,
            book,
            "preference",
            f"For {mem_words} we always book {old_place}: a table for {old_size} at {old_time}.",
            f"We switched our {mem_words} to {usual}: now it's a table for {size} at {hhmm}.",
        )
    else:
        book.add("preference", new_text, ago(w, w.rng.randrange(30, 400)))
    book.add("preference", f"For work lunches I like {lunch}.", ago(w, w.rng.randrange(10, 300)))
    book.distract(w, 3, skip=("coffee",))
    day = _next_weekday(w, weekday)
    start = dt.datetime.combine(day, dt.time.fromisoformat(hhmm))
    s, e = start.isoformat(timespec="minutes"), (start + dt.timedelta(hours=2)).isoformat(timespec="minutes")
    rest = places[usual]
    body = f"Hello, I'd like to book a table for {size} on {_day_label(day)} at {hhmm}, under the name {w.user_name}. Thanks!"
    plan = [
        call("memory.search", query=f"usual {goal_words} restaurant table"),
        call("contacts.search", query=usual),
        call("messages.send", to=rest["phone"], body=body),
        call("calendar.create_event", title=f"{goal_words.capitalize()} at {usual}", start=s, end=e, location=usual),
        call(
            "finish",
            answer=f"Booked {usual} for {size} at {hhmm} on {_day_label(day)} and added it to your calendar.",
        ),
    ]
    e2 = (start + dt.timedelta(hours=3)).isoformat(timespec="minutes")
    other_time = next(t for t in times if t != hhmm)
    return _mem_draft(
        w,
        book,
        goal=_phrasing(
            w,
            len(OCCASIONS),
            [
                f"Book our usual {goal_words} table for {_day_label(day)}: text the restaurant, and put it in my calendar.",
                f"Please sort out our usual {goal_words} on {_day_label(day)}: book it by text and add it to my calendar.",
                f"Text the restaurant to book our usual {goal_words} table on {_day_label(day)}, and add it to my calendar.",
                f"Can you book the usual {goal_words} for {_day_label(day)}? Text the place and put it in my calendar.",
            ],
        ),
        criteria=[
            # the restaurant must be told the day and the time (and no other), and the party size
            _sms(rest, states={"time": hhmm, "date": day.isoformat()}),
            _sms(rest, states={"number": size}),
            state("calendar.events", "created", start=s, location={"iequals": usual}),
        ],
        milestones=[_sms(rest), state("calendar.events", "created", location={"iequals": usual})],
        probes=[
            fails(
                "the wrong day",
                replacing(
                    plan,
                    2,
                    call(
                        "messages.send",
                        to=rest["phone"],
                        body=body.replace(_day_label(day), _day_label(day + dt.timedelta(days=7))),
                    ),
                ),
            ),
            fails(
                "no day",
                replacing(
                    plan, 2, call("messages.send", to=rest["phone"], body=f"Table for {size} at {hhmm}, {w.user_name}.")
                ),
            ),
            passes(
                "in other words",
                replacing(
                    plan,
                    2,
                    call(
                        "messages.send",
                        to=rest["phone"],
                        body=f"Hi! Table for {size} at {hhmm} on {_day_label(day)}, please. {w.user_name}",
                    ),
                ),
            ),
            passes(
                "the time and party size in other words",
                replacing(
                    plan,
                    2,
                    call(
                        "messages.send",
                        to=rest["phone"],
                        body=f"Hello, could we have a table for {_words(size)} on {_day_label(day)} at {spoken(hhmm)}? "
                        f"{w.user_name}",
                    ),
                ),
            ),
            fails(
                "another time beside the right one",
                replacing(
                    plan,
                    2,
                    call("messages.send", to=rest["phone"], body=f"{body} Or {spoken(other_time)} if that's easier."),
                ),
            ),
            fails(
                "a table for another party size",
                replacing(
                    plan,
                    2,
                    call("messages.send", to=rest["phone"], body=body.replace(f"for {size}", f"for {size + 2}")),
                ),
            ),
            passes(
                "another event title",
                replacing(
                    plan, 3, call("calendar.create_event", title=f"Dinner - {usual}", start=s, end=e, location=usual)
                ),
            ),
            fails(
                f"books {old_place} instead",
                replacing(plan, 2, call("messages.send", to=places[old_place]["phone"], body=body)),
            ),
            fails(
                "calendar two hours late",
                replacing(
                    plan, 3, call("calendar.create_event", title=f"Table at {usual}", start=e, end=e2, location=usual)
                ),
            ),
        ],
        plan=plan,
        perturb_exempt=["3.title", "3.end", "4.answer"],
    )


ALARM_TIMES = ["05:45", "06:10", "06:20", "06:40", "06:50", "07:05", "07:20", "07:40"]
TEAS = {"green tea": [2, 3], "black tea": [4, 5], "rooibos": [6, 7], "chamomile tea": [5, 8]}


@template(
    "memory.preference_setting",
    apps=["clock", "settings", "calendar"],
    domain=Domain.DEVICE,
    category=MEMORY,
    difficulty=2,
    capabilities=["recall", "preference", "create", "update"],
    count=15,
)
def preference_setting(w: World) -> Draft:
    """Template ``memory.preference_setting``: "Set an alarm for my usual wake-up time", "Start a
    timer for my green tea", "Put the brightness back to how I like it", "... ringer volume",
    "Put my usual gym session in my calendar": the value comes only from a preference, which
    may have replaced an outdated one (the outdated value fails)."""
    variant = ["alarm", "tea", "brightness", "volume", "gym"][w.seed % 5]
    book = MemoryBook()
    exempt: list[str] = []
    if variant == "alarm":
        taken = {a["time"] for a in w.table("clock.alarms")}
        old, new = w.rng.sample([t for t in ALARM_TIMES if t not in taken], 2)
        if w.rng.random() < 0.6:
            _old_and_new(
                w, book, "preference", f"On workdays I get up at {old}",
                f"Since I started the new job I get up at {new} on workdays",
            )  # fmt: skip
        else:
            book.add("preference", f"On workdays I get up at {new}", ago(w, w.rng.randrange(20, 400)))
        goal = _phrasing(
            w,
            5,
            [
                "Set an alarm for my usual wake-up time tomorrow.",
                "Set my alarm for when I usually get up.",
                "Wake me up tomorrow at my normal time - set an alarm.",
            ],
        )
        act = call("clock.create_alarm", time=new, label="Wake up")
        criteria = [state("clock.alarms", "created", time=new, enabled=True)]
        query, exempt = "usual wake-up time", ["1.label"]
        keys = ("wake", "get up", "alarm", "morning")
        alt = call("clock.create_alarm", time=new)
        wrong = call("clock.create_alarm", time=old, label="Wake up")
        stray = call("clock.create_alarm", time="23:55")
    elif variant == "tea":
        tea = _phrasing(w, 5, sorted(TEAS))
        old, new = w.rng.sample(TEAS[tea], 2)
        if w.rng.random() < 0.6:
            _old_and_new(
                w, book, "preference", f"I steep my {tea} for {old} minutes",
                f"{tea.capitalize()} gets bitter at {old} minutes; now I steep it for exactly {new} minutes",
            )  # fmt: skip
        else:
            book.add("preference", f"I steep my {tea} for exactly {new} minutes", ago(w, w.rng.randrange(20, 400)))
        goal = f"Start a timer for my {tea}."
        act = call("clock.start_timer", duration_seconds=new * 60, label=tea.capitalize())
        criteria = [state("clock.timers", "created", duration_s=new * 60, running=True)]
        query, exempt = f"how long I steep {tea}", ["1.label"]
        keys = ("tea", "steep", tea.split()[0])
        alt = call("clock.start_timer", duration_seconds=new * 60)
        wrong = call("clock.start_timer", duration_seconds=old * 60, label=tea.capitalize())
        stray = call("clock.start_timer", duration_seconds=60 * 60, label="Laundry")
    elif variant == "brightness":
        level = w.rng.choice([25, 30, 35, 40, 45, 75, 80, 85])
        book.add("preference", f"I keep my screen brightness at {level}%", ago(w, w.rng.randrange(20, 400)))
        goal = _phrasing(
            w,
            5,
            [
                "Put the screen brightness back to how I like it.",
                "Set the brightness the way I like it.",
                "The screen is too bright or too dim - set it to my usual level.",
            ],
        )
        act = call("settings.set_brightness", level=level)
        criteria = [state("settings.settings", "updated", id="brightness", value=level)]
        query = "screen brightness I like"
        keys = ("bright", "screen", "display")
        alt = act
        wrong = call("settings.set_brightness", level=100 - level)
        stray = call("settings.set_volume", stream="media", level=0)
    elif variant == "volume":
        level = w.rng.choice([15, 20, 30, 40, 55, 85, 90])
        book.add("preference", f"I keep the ringer volume at {level}", ago(w, w.rng.randrange(20, 400)))
        goal = _phrasing(
            w,
            5,
            [
                "Set my ringer volume the way I like it.",
                "Put the ring volume back to my usual level.",
                "Make the phone ring as loud as I normally have it.",
            ],
        )
        act = call("settings.set_volume", stream="ring", level=level)
        criteria = [state("settings.settings", "updated", id="volume_ring", value=level)]
        query = "ringer volume preference"
        keys = ("volume", "ring", "loud", "sound")
        alt = act
        wrong = call("settings.set_volume", stream="media", level=level)
        stray = call("settings.set_brightness", level=100)
    else:
        weekday = w.rng.randrange(7)
        old_t, new_t = w.rng.sample(["07:00", "12:30", "17:30", "18:00", "18:30", "19:30"], 2)
        minutes = w.rng.choice([45, 60, 75, 90])
        day_name = WEEKDAYS[weekday]
        if w.rng.random() < 0.6:
            _old_and_new(
                w, book, "preference", f"I go to the gym on {day_name}s at {old_t} for {minutes} minutes",
                f"The gym class moved: on {day_name}s I now go at {new_t}, still {minutes} minutes",
            )  # fmt: skip
        else:
            book.add(
                "preference",
                f"I go to the gym on {day_name}s at {new_t} for {minutes} minutes",
                ago(w, w.rng.randrange(20, 300)),
            )
        day = _next_weekday(w, weekday)
        start = dt.datetime.combine(day, dt.time.fromisoformat(new_t))
        s, e = (
            start.isoformat(timespec="minutes"),
            (start + dt.timedelta(minutes=minutes)).isoformat(timespec="minutes"),
        )
        goal = _phrasing(
            w,
            5,
            [
                f"Put my usual gym session in my calendar for {_day_label(day)}.",
                f"Add my regular gym slot on {_day_label(day)} to my calendar.",
                f"Block my usual gym time on {_day_label(day)} in the calendar.",
            ],
        )
        act = call("calendar.create_event", title="Gym", start=s, end=e)
        criteria = [state("calendar.events", "created", title={"icontains": "gym"}, start=s, end=e)]
        query = f"gym on {day_name}s"
        keys = ("gym", "workout", "exercise")
        alt = call("calendar.create_event", title="Gym session", start=s, end=e)
        old_start = dt.datetime.combine(day, dt.time.fromisoformat(old_t))
        wrong = call(
            "calendar.create_event",
            title="Gym",
            start=old_start.isoformat(timespec="minutes"),
            end=(old_start + dt.timedelta(minutes=minutes)).isoformat(timespec="minutes"),
        )
        stray = call(
            "calendar.create_event", title="Gym", start=s.replace(s[11:], "23:00"), end=s.replace(s[11:], "23:30")
        )
    book.distract(w, 4, skip=("home",))
    plan = [call("memory.search", query=query), act, call("finish", answer="Done, as you like it.")]
    probes = [passes("searched memory twice", [call("memory.search", query=keys[0]), *plan])]
    if alt is not act:
        probes.append(passes("no label or another title", replacing(plan, 1, alt)))
    probes += [
        fails("the outdated or a wrong value", replacing(plan, 1, wrong)),
        fails("something else changed too", replacing(plan, 1, act, stray)),
    ]
    return _mem_draft(
        w,
        book,
        goal=goal,
        criteria=criteria,
        milestones=[memory_searched(*keys)],
        plan=plan,
        perturb_exempt=[*exempt, "2.answer"],
        probes=probes,
    )


# ---------------------------------------------------------------------------------------------
# Conflicting facts: the newer must win
# ---------------------------------------------------------------------------------------------

CODES = [
    # (what it is, the query that finds it)
    ("gate code of our building", "building gate code"),
    ("wifi password at home", "home wifi password"),
    ("code for the bike shed", "bike shed code"),
    ("garage door code", "garage door code"),
    ("key safe code at the holiday flat", "holiday flat key safe code"),
]
WORDS = ["Sunflower", "Harbour", "Maple", "Comet", "Lantern", "Pebble", "Orchid", "Falcon"]


def _code(w: World, thing: str) -> str:
    if "wifi" in thing:
        return f"{w.rng.choice(WORDS)}-{w.rng.randrange(1000, 9999)}"
    if w.rng.random() < 0.5:
        return f"{w.rng.randrange(1000, 9999)}"
    letters = "".join(w.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(2))
    return f"{letters}{w.rng.randrange(2, 9)}-{w.rng.randrange(10, 99)}"


def _two_codes(w: World, thing: str) -> tuple[str, str]:
    """An old and a new code of ``thing``, neither contained in the other."""
    while True:
        old, new = _code(w, thing), _code(w, thing)
        if old.casefold() not in new.casefold() and new.casefold() not in old.casefold():
            return old, new


@template(
    "memory.updated_fact",
    apps=["contacts", "messages"],
    domain=Domain.COMMUNICATION,
    category=MEMORY,
    difficulty=3,
    capabilities=["recall", "conflict", "send"],
    count=COUNT,
)
def updated_fact(w: World) -> Draft:
    """Template ``memory.updated_fact``: "Text Ana the gate code" when memory holds the old code
    and the new one (linked by ``supersedes`` or not: then the newer date decides); the old code
    sent anywhere fails."""
    forget_relations(w)
    thing, query = w.rng.choice(CODES)
    old, new = _two_codes(w, thing)
    book = MemoryBook()
    _old_and_new(w, book, "fact", f"The {thing} is {old}", f"The {thing} has changed, it is now {new}")
    other_thing = w.rng.choice([c for c in CODES if c[0] != thing])[0]
    book.add("fact", f"The {other_thing} is {_code(w, other_thing)}", ago(w, w.rng.randrange(20, 600)))
    book.distract(w, 3)
    (friend,) = w.pick("contacts.contacts")
    first = first_name(friend)
    reason = w.rng.choice(["is coming over later", "is picking up a parcel for me", "is looking after the place"])
    plan = [
        call("memory.search", query=query),
        call("contacts.search", query=first),
        call("messages.send", to=friend["phone"], body=f"Hi {first}, the {thing} is {new}."),
        call("finish", answer=f"Sent {first} the {thing} ({new})."),
    ]
    (stranger,) = w.rng.sample([c for c in w.contacts if c is not friend], 1)
    return _mem_draft(
        w,
        book,
        goal=f"{first} {reason}. Text {first} the {thing}.",
        criteria=[_sms(friend, part=new), state("messages.messages", "absent", body={"icontains": old})],
        milestones=[memory_searched(*query.split()[-2:]), _sms(friend)],
        plan=plan,
        probes=[
            passes(
                "number typed with spaces",
                replacing(plan, 2, call("messages.send", to=_spaced(friend["phone"]), body=f"{new} is the {thing}.")),
            ),
            passes("searched memory twice", [call("memory.search", query=thing), *plan]),
            fails(
                "the old code",
                replacing(
                    plan, 2, call("messages.send", to=friend["phone"], body=f"Hi {first}, the {thing} is {old}.")
                ),
            ),
            fails(
                "sent to someone else",
                replacing(plan, 2, call("messages.send", to=stranger["phone"], body=f"Hi, the {thing} is {new}.")),
            ),
        ],
    )


WINES = ["Riesling from the Mosel", "Rioja Reserva", "Gruner Veltliner", "Barolo", "Pinot Noir from Baden"]
CITIES = ["Lisbon", "Rome", "Oslo", "Madrid", "Vienna", "Dublin"]


def _phone_pattern(phone: str) -> str:
    """A regex that finds ``phone`` in a text in any common format (its last eight digits,
    separators allowed between them)."""
    digits = re.sub(r"\D", "", phone)[-8:]
    return r"[\s\-/.()]*".join(digits)


def _phrasing(w: World, period: int, options: list[str]) -> str:
    """The phrasing of this task: tasks ``k`` of one template that share ``k % period`` (the
    same variant) take different options while there are enough (seeds are
    ``crc32(name) * 1000 + k``)."""
    return options[(w.seed // period) % len(options)]


_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]  # fmt: skip
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _words(n: int) -> str:
    """``n`` (0-999) in English words: ``245`` -> ``"two hundred and forty-five"``."""
    if n >= 100:
        rest = n % 100
        return f"{_ONES[n // 100]} hundred" + (f" and {_words(rest)}" if rest else "")
    if n < 20:
        return _ONES[n]
    return _TENS[n // 10] + (f"-{_ONES[n % 10]}" if n % 10 else "")


def _event(w: World, title: str, start: dt.datetime, minutes: int) -> dict[str, Any]:
    """Add a timed event to the calendar and return it."""
    ev = {
        "id": w.next_id("calendar.events", "ev_"),
        "title": title,
        "start": start.isoformat(timespec="minutes"),
        "end": (start + dt.timedelta(minutes=minutes)).isoformat(timespec="minutes"),
        "location": None,
        "attendees": (),
        "notes": None,
        "all_day": False,
    }
    w.table("calendar.events").append(ev)
    return ev


@template(
    "memory.recall_answer",
    apps=["calendar", "contacts"],
    domain=Domain.DEVICE,
    category=MEMORY,
    difficulty=2,
    capabilities=["recall", "lookup", "answer"],
    count=COUNT,
)
def recall_answer(w: World) -> Draft:
    """Template ``memory.recall_answer``, e.g. task 0: "What's my gym locker number these days,
    and when is my gym session tomorrow?": questions that join what only memory says
    (a locker that changed, where the car is parked, whose dinner had the wine we loved, what
    the plumber cost last time) with what an app says (tomorrow's session or flight in the
    calendar, the person's number in the contacts). Typed answers: the newest value only, a
    hedge or an outdated value fails; read only."""
    forget_relations(w)
    variant = ["locker", "parking", "wine", "price"][w.seed % 4]
    book = MemoryBook()
    tomorrow = w.now.date() + dt.timedelta(days=1)
    extra: list[tuple[Any, str, str, dict[str, Any]]] = []  # (passes or fails, name, text, typed value)
    if variant in ("locker", "parking"):
        if variant == "locker":
            old, new = w.rng.sample(range(100, 999), 2)
            _old_and_new(
                w, book, "fact", f"My locker at the gym is number {old}", f"I moved to locker {new} at the gym"
            )
            hhmm = w.rng.choice(["07:00", "07:30", "12:15", "17:45", "18:30", "19:00", "19:30", "20:15"])
            ev = _event(w, "Gym session", dt.datetime.combine(tomorrow, dt.time.fromisoformat(hhmm)), 60)
            at = ev["start"][11:16]
            goal = _phrasing(
                w,
                4,
                [
                    "I'm going to the gym tomorrow. Which locker is mine, and what time is my session?",
                    "What's my gym locker number these days, and when is my gym session tomorrow?",
                    "Remind me which locker I have at the gym and what time tomorrow's gym session starts.",
                ],
            )
            query = "gym locker number"
            reply = f"Locker {new}; your gym session tomorrow is at {at}."
            other_words = f"You're in locker number {_words(new)} now, and the session starts at {spoken(at)}."
            extra.append((passes, "the locker as #N", f"Locker #{new}; your gym session tomorrow is at {at}.", {}))
            extra.append(
                (
                    passes,
                    "the old locker named as old",
                    f"Locker {new} now (you moved from {old}); the session is at {at}.",
                    {},
                )
            )
        else:
            zone, spot = w.rng.choice(["P1", "P3", "P4"]), w.rng.randrange(100, 399)
            book.add(
                "episode",
                f"Parked the car at the airport in {zone}, spot {spot}, before the flight",
                ago(w, w.rng.randrange(2, 9)),
            )
            old = w.rng.choice([s for s in range(100, 399) if s != spot])
            book.add(
                "episode",
                f"Parked at the airport in P2, spot {old}, for the last trip",
                ago(w, w.rng.randrange(60, 300)),
            )
            new = spot
            land = dt.datetime.combine(tomorrow, dt.time(w.rng.randrange(12, 23), w.rng.choice([5, 20, 35, 50])))
            minutes = w.rng.choice([125, 150, 170, 195])
            ev = _event(w, f"Flight home from {w.rng.choice(CITIES)}", land - dt.timedelta(minutes=minutes), minutes)
            at = ev["end"][11:16]
            goal = _phrasing(
                w,
                4,
                [
                    "I'm flying back tomorrow. Where did I park the car at the airport, and what time does my flight land?",
                    "Which spot is the car in at the airport, and when does my flight home get in tomorrow?",
                    "I land tomorrow and need the car: where did I leave it at the airport, and what time do I land?",
                ],
            )
            query = "parked car airport"
            reply = f"In {zone}, spot {spot}. Your flight lands at {at} tomorrow."
            other_words = f"The car is in {zone} (spot {_words(spot)}); you land at {spoken(at)}."
            extra.append(
                (
                    passes,
                    "the departure beside the landing",
                    f"Spot {spot} in {zone}; you land at {at} (departing {ev['start'][11:16]}).",
                    {},
                )
            )
        # the outdated value, and the flight's departure, may be named beside the answer as such
        # ("663 now, you moved from 412"); alone or as an alternative to it they fail
        criteria = [
            answer(id="answer", type="number", value=new, context=[old]),
            answer(id="time", type="time", value=at, context=[ev["start"][11:16]] if variant == "parking" else []),
        ]
        lookup = call("calendar.list_events", date=tomorrow.isoformat())
        typed = {}
        extra.append((fails, "a typed value contradicting the text", f"{new}, at {at}.", {"value": old}))
        hedge = f"Either {new} or {old}, I'm not sure which; {at}."
        passing = f"Not {new} - it's {old}. At {at}."
        outdated = f"{old}, and {at}."
        wrong_time = reply.replace(at, ev["start"][11:16]) if variant == "parking" else reply.replace(at, "06:00")
    else:
        trade = w.rng.choice(["plumber", "electrician", "locksmith"])
        a, b = w.rng.sample(w.contacts, 2)
        if variant == "wine":
            wine, other_wine = w.rng.sample(WINES, 2)
            book.add("episode", f"Dinner at {b['name']}'s place: we loved the {wine}", ago(w, w.rng.randrange(5, 200)))
            book.add(
                "episode", f"The {other_wine} at {a['name']}'s was too sour for us", ago(w, w.rng.randrange(5, 300))
            )
            goal = _phrasing(
                w,
                4,
                [
                    f"We loved a {wine} at a friend's dinner. Whose dinner was it? Give me their number so I can "
                    "ask where they got it.",
                    f"Who served us that {wine} we loved at dinner? I want to call them - what's their number?",
                    f"Whose place was the dinner with the {wine} we loved? Tell me their phone number too.",
                ],
            )
            query = f"dinner {wine}"
            criteria = [answer(id="answer", type="contact", value=b["id"])]
            reply = f"It was at {b['name']}'s. Their number is {b['phone']}."
            typed = {"value": b["name"]}
            other_words = f"{b['name']} hosted that one; call them on {_spaced(b['phone'])}."
            hedge = f"Either {b['name']} or {a['name']}: {b['phone']}."
            passing = f"Not {b['name']} - it was {a['name']} ({b['phone']})."
            outdated = f"{a['name']}, {a['phone']}."
            wrong_value = a["name"]
        else:
            while True:
                old_eur, new_eur = w.rng.sample(range(60, 480), 2)
                old, new = w.price(old_eur), w.price(new_eur)
                if w.amount(old) not in w.amount(new) and w.amount(new) not in w.amount(old):
                    break
            book.add(
                "episode",
                f"Paid {a['name']}, the {trade}, {w.money(old)} for a repair",
                ago(w, w.rng.randrange(300, 700)),
            )
            book.add(
                "episode",
                f"Paid {b['name']}, the {trade}, {w.money(new)} for a repair",
                ago(w, w.rng.randrange(10, 200)),
            )
            goal = _phrasing(
                w,
                4,
                [
                    f"How much did the {trade} charge me last time? And what's their number - I need them again.",
                    f"What did I pay the {trade} I had last time, and what's their phone number?",
                    f"The {trade} from last time: how much did they charge, and what's their number?",
                ],
            )
            query = f"paid the {trade}"
            criteria = [answer(id="answer", type="money", value=new, currency=w.currency, context=[old])]
            reply = f"{w.money(new)} ({b['name']}). Their number is {b['phone']}."
            typed = {"value": w.money(new)}
            said = (
                f"{_words(int(new))} {w.currency_words}"
                if new == int(new) and new < 1000
                else w.money(new, symbol=True)
            )
            other_words = f"{said}; {b['name']} is on {_spaced(b['phone'])}."
            hedge = f"Either {w.amount(new)} or {w.money(old)}; {b['phone']}."
            passing = f"Not {w.money(new)} - it was {w.money(old)}. {b['phone']}."
            outdated = f"{w.money(old)}, {b['phone']}."
            wrong_value = w.money(old)
            extra.append(
                (
                    passes,
                    "the earlier price named as earlier",
                    f"{w.money(new)} (the time before you paid {w.money(old)}); {b['phone']}.",
                    {},
                )
            )
        criteria.append(answer(id="number", pattern=_phone_pattern(b["phone"])))
        lookup = call("contacts.search", query=b["name"])
        extra.append((fails, "a typed value contradicting the text", reply, {"value": wrong_value}))
        extra.append((fails, "the other person's number", reply.replace(b["phone"], a["phone"]), {}))
        extra.append((passes, "a typed value, the number in the text", f"Call them on {b['phone']}.", typed))
        wrong_time = None
    book.distract(w, 4)
    plan = [call("memory.search", query=query), lookup, call("finish", answer=reply, **typed)]
    keys = {"locker": ("locker", "gym"), "parking": ("park", "car", "airport"), "wine": ("wine", "dinner")}.get(
        variant, ("paid", "charge", "cost", "plumber", "electrician", "locksmith")
    )
    probes = [
        passes("in other words", finishing(plan, other_words)),
        passes("searched memory twice", [call("memory.search", query=keys[0]), *plan]),
        fails("the outdated value", finishing(plan, outdated)),
        fails("a hedge", finishing(plan, hedge)),
        fails("wrong, with the right value in passing", finishing(plan, passing)),
        *(verdict(name, finishing(plan, text, **value)) for verdict, name, text, value in extra),
    ]
    if typed:
        probes.append(passes("text only", finishing(plan, reply)))
    if wrong_time is not None:
        probes.append(fails("the wrong time", finishing(plan, wrong_time)))
    return _mem_draft(
        w,
        book,
        goal=goal,
        criteria=[*criteria, behavior("read_only")],
        milestones=[memory_searched(*keys)],
        plan=plan,
        probes=probes,
    )


# ---------------------------------------------------------------------------------------------
# Changing what is remembered
# ---------------------------------------------------------------------------------------------

CHANGES = [
    # (kind, old or None, new memory, key of the new one, query, the user's words)
    ("preference", "I prefer window seats on flights", "I prefer aisle seats on flights", "aisle", "seats on flights",
     "From now on I want aisle seats on flights, not the window. Remember that."),
    ("preference", "I take my coffee black", "I take my coffee with oat milk now", "oat milk", "how I take my coffee",
     "I've switched to coffee with oat milk - please remember that."),
    ("preference", "I eat meat", "I'm pescetarian now: fish yes, meat no", "pescetarian", "what I eat",
     "Note that I'm pescetarian now: fish is fine, meat is not."),
    ("preference", "Meetings from 8 in the morning are fine", "No meetings before 10 in the morning", "before 10",
     "meeting times",
     "Remember: no meetings before 10 in the morning from now on."),
    ("preference", "I like hotel rooms on a high floor", "I prefer hotel rooms on a low floor", "low floor",
     "hotel room floor",
     "I'd rather have hotel rooms on a low floor now. Keep that in mind."),
    ("preference", "I fly with Lufthansa when I can", "I prefer flying with KLM", "KLM", "airline I fly with",
     "I prefer KLM these days when I fly. Remember that."),
    ("fact", None, "I'm allergic to shellfish", "shellfish", "allergies",
     "Remember that I'm allergic to shellfish."),
    ("preference", None, "I like my steak medium rare", "medium rare", "how I like my steak",
     "Remember that I like my steak medium rare."),
    ("fact", None, "My blood type is A negative", "A negative", "blood type",
     "Please remember my blood type: A negative."),
    ("preference", "I like the thermostat at 21 degrees", "I like the thermostat at 19 degrees now", "19 degrees",
     "thermostat temperature", "Keep the heating at 19 degrees from now on, not 21. Remember that."),
    ("fact", None, "My dentist is Dr Okafor at the Linden Street practice", "Okafor", "my dentist",
     "Remember that my dentist is Dr Okafor at the Linden Street practice."),
    ("preference", "I like to be reminded of birthdays a day before", "Remind me of birthdays a week before",
     "a week before", "birthday reminders",
     "For birthdays, I want a reminder a week ahead now, not the day before. Please remember."),
]  # fmt: skip


KEY_FORMS = {
    # other ways to write a key (regular expressions, case-insensitive) beside its own words
    "A negative": r"\bA(?:-|\s*−)(?![\w-])|\bA\s*neg\b|\bA\s*Rh\s*negative\b",
    "pescetarian": r"\bpesc[ae]tarian",
    "19 degrees": r"\b19\s*(?:°|degrees?\b|deg\b)",
    "a week before": r"\b(?:a|one|1)\s+week\s+(?:before|ahead|earlier|in advance|prior)\b|\b7\s+days\s+(?:before|ahead|earlier|in advance|prior)\b",
    "medium rare": r"\bmedium[\s-]*rare\b",
}
"""Keys of :data:`CHANGES` a user may write otherwise ("A-", "pescatarian", "19 °C")."""

FORM_EXAMPLES = {
    "A negative": "Blood type: A-",
    "pescetarian": "I'm pescatarian now",
    "19 degrees": "Thermostat at 19 °C",
    "a week before": "Birthday reminders one week ahead",
    "medium rare": "Steak: medium-rare",
}
"""One memory in another form per :data:`KEY_FORMS` key (the template's probes)."""

AFFIRMED_NEGATIVE = {"before 10"}
"""Keys that a negation introduces in the preference itself ("I don't want meetings before 10")."""


def key_pattern(key: str) -> str:
    """A case-insensitive pattern for a memory key: its words (any spacing, hyphens or punctuation
    between them, whole words) or one of its :data:`KEY_FORMS`."""
    words = r"[\W_]+".join(re.escape(w) for w in re.findall(r"\w+", key))
    return rf"(?:\b{words}\b" + (f"|{KEY_FORMS[key]})" if key in KEY_FORMS else ")")


def negated_key(key: str) -> str:
    """A pattern for ``key`` negated: "not", "never", "no longer" or "n't" up to two words before it
    ("A positive, not A negative"; "I no longer take it with oat milk")."""
    return rf"(?:\b(?:not|never|no\s+longer)|n't)\s+(?:\S+\s+){{0,2}}?{key_pattern(key)}"


@template(
    "memory.save_preference",
    apps=[],
    domain=Domain.DEVICE,
    category=MEMORY,
    difficulty=2,
    capabilities=["remember", "conflict"],
    count=COUNT,
)
def save_preference(w: World) -> Draft:
    """Template ``memory.save_preference``: the user states a new preference or fact; it must be
    saved, and an older preference it replaces superseded (``memory.entries``: the new entry
    created, the old one updated to ``valid: False``, nothing else touched)."""
    kind, old, new, key, query, words = CHANGES[w.seed % len(CHANGES)]
    book = MemoryBook()
    book.distract(w, 5, skip=("seat", "coffee", "home"))
    old_e = book.add(kind, old, ago(w, w.rng.randrange(100, 700))) if old else None
    fixtures = book.fixtures()
    # The key stated, in any of its forms, and not denied ("A positive (not A negative)").
    content: dict[str, Any] = {"regex": key_pattern(key)}
    if key not in AFFIRMED_NEGATIVE:
        content["not"] = {"regex": negated_key(key)}
    criteria = [state("memory.entries", "created", kind=kind, content=content, valid=True)]
    save = call("memory.save", kind=kind, content=new)
    if old_e is not None:
        criteria.append(state("memory.entries", "updated", id=old_e["id"], valid=False))
        save = call("memory.save", kind=kind, content=new, supersedes=old_e["id"])
    plan = [call("memory.search", query=query), save, call("finish", answer="Got it, I'll remember that.")]
    probes = [
        passes("searched memory twice", [call("memory.search", query=key), *plan]),
        passes(
            "in other words",
            replacing(
                plan,
                1,
                save.model_copy(update={"arguments": {**save.arguments, "content": f"Remember: {new.lower()}"}}),
            ),
        ),
        fails("saved twice", replacing(plan, 1, save, call("memory.save", kind=kind, content=new))),
    ]

    def saving(content: str) -> list[ToolCall]:
        return replacing(plan, 1, save.model_copy(update={"arguments": {**save.arguments, "content": content}}))

    if key in FORM_EXAMPLES:
        probes.append(passes("written another way", saving(FORM_EXAMPLES[key])))
    if key not in AFFIRMED_NEGATIVE:
        probes.append(fails("the key denied", saving(f"Something else, not {key}")))
    if old_e is not None:
        probes.append(fails("the old one left valid", replacing(plan, 1, call("memory.save", kind=kind, content=new))))
    else:
        probes.append(
            fails(
                "saved something else",
                replacing(plan, 1, call("memory.save", kind=kind, content="I like window seats")),
            )
        )
    return Draft(
        goal=words,
        criteria=criteria,
        milestones=[state("memory.entries", "created", content={"icontains": key})],
        plan=plan,
        fixtures=w.fixtures(memory=fixtures),
        probes=probes,
    )


OBSOLETE = [
    # (the memory, a similar memory to keep, the user's words, query); {m12}, {m15}: 12 and 15 euros in the world's money
    ("My car is parked in spot 17 of the garage on Kantstrasse", "The bike is in the shed behind the house",
     "I sold the car, so forget where it's parked.", "car parking spot"),
    ("My gym membership number is GM-55821", "My library card number is LB-20417",
     "I cancelled the gym membership - forget its number.", "gym membership number"),
    ("Choir rehearsal is on Wednesdays at 19:30", "Yoga is on Mondays at 18:00",
     "I left the choir, so forget the rehearsal times.", "choir rehearsal"),
    ("My bank adviser at Sparkasse is Ms Lenz", "My insurance agent at Allianz is Mr Brandt",
     "I moved my accounts to another bank; forget the old bank adviser.", "bank adviser"),
    ("The babysitter's rate is {m12} an hour", "The dog walker's rate is {m15} a walk",
     "We don't need a babysitter any more - forget the babysitter's rate.", "babysitter rate"),
    ("The code for the office door is 4471", "The code for the bike shed is 9034",
     "I changed jobs, so the office door code is useless now - forget it.", "office door code"),
    ("My season ticket for the football club is seat 14, row F", "My theatre subscription is for Thursday evenings",
     "I gave up the football season ticket; forget the seat.", "football season ticket seat"),
    ("Piano lessons with Mrs Kowalski are on Tuesdays at 17:00", "Swimming lessons are on Fridays at 16:00",
     "The piano lessons have stopped. Forget when they were.", "piano lessons"),
    ("My old flat's landlord is Mr Petersen", "My parents' neighbour is Mr Hansen",
     "I moved out, so forget who the old landlord was.", "old flat landlord"),
    ("The cat's vet is the clinic on Rosenweg", "The car garage is the one on Hafenstrasse",
     "Our cat passed away; please forget the vet.", "cat vet clinic"),
]  # fmt: skip


@template(
    "memory.forget_outdated",
    apps=[],
    domain=Domain.DEVICE,
    category=MEMORY,
    difficulty=2,
    capabilities=["remember", "delete"],
    count=10,
)
def forget_outdated(w: World) -> Draft:
    """Template ``memory.forget_outdated``: "I sold the car, so forget where it's parked": that
    memory must become invalid and a similar one must stay."""
    gone, keep, words, query = OBSOLETE[w.seed % len(OBSOLETE)]
    rates = {"m12": w.money(w.price(12)), "m15": w.money(w.price(15))}
    gone, keep = gone.format(**rates), keep.format(**rates)
    book = MemoryBook()
    target = book.add("fact", gone, ago(w, w.rng.randrange(30, 700)))
    similar = book.add("fact", keep, ago(w, w.rng.randrange(30, 700)))
    book.distract(w, 4)
    fixtures = book.fixtures()
    plan = [
        call("memory.search", query=query),
        call("memory.forget", id=target["id"]),
        call("finish", answer="Forgotten."),
    ]
    return Draft(
        goal=words,
        criteria=[state("memory.entries", "updated", id=target["id"], valid=False)],
        milestones=[memory_searched(*query.split())],
        plan=plan,
        fixtures=w.fixtures(memory=fixtures),
        probes=[
            passes("searched memory twice", [call("memory.search", query=query.split()[0]), *plan]),
            passes("listed what is remembered first", [call("memory.search", query="my"), *plan]),
            fails("forgot the similar one instead", replacing(plan, 1, call("memory.forget", id=similar["id"]))),
            fails("forgot the similar one too", replacing(plan, 1, plan[1], call("memory.forget", id=similar["id"]))),
        ],
    )


# ---------------------------------------------------------------------------------------------
# Intents that must fire, and be acted on at the right moment
# ---------------------------------------------------------------------------------------------

REMINDER_TEXTS = [
    # (what the reminder says, the text it asks for, what the text must say (a paraphrase of the
    # rest is fine), a text that says otherwise)
    ("that the keys are under the blue flowerpot", "The keys are under the blue flowerpot",
     "under the blue flowerpot", "The keys are no longer under the blue flowerpot"),
    ("that I'll pick up the cake", "I'll pick up the cake on my way", "pick up the cake",
     "I won't pick up the cake after all"),
    ("to bring the camping chairs", "Could you bring the camping chairs?", "bring the camping chairs",
     "Don't bring the camping chairs"),
    ("that the parcel is at the neighbour's", "Your parcel is at the neighbour's", "parcel is at the neighbour",
     "Your parcel is not at the neighbour's"),
    ("to send me the photos", "Could you send me the photos from Saturday?", "send me the photos",
     "Don't send me the photos from Saturday"),
    ("that dinner is at 8", "Dinner is at 8 tonight, see you there", "dinner is at 8", "Dinner is at 9 tonight"),
]  # fmt: skip


def _today_in(text: str, day: dt.date) -> dt.date | None:
    """``day`` when the dictated ``text`` is about it ("tonight", "today"), else None."""
    return day if re.search(r"\b(?:tonight|today)\b", text, re.I) else None


ERRANDS = ["buy milk", "pick up the dry cleaning", "get stamps", "return the library books"]


def _intent(book: MemoryBook, w: World, content: str, ttype: str, value: str, action: str) -> dict[str, Any]:
    return book.add(
        "intent", content, ago(w, w.rng.randrange(1, 4)), trigger={"type": ttype, "value": value}, action=action
    )


@template(
    "memory.intent_time",
    apps=["contacts", "messages"],
    domain=Domain.COMMUNICATION,
    category=MEMORY,
    difficulty=4,
    capabilities=["recall", "intent", "wait", "send"],
    count=COUNT,
)
def intent_time(w: World) -> Draft:
    """Template ``memory.intent_time``: "keep an eye on my reminders and take care of the next
    one": a time intent ("remind me at 10:30 to text Ana that ...") fires only once the clock
    reaches it (``system.wait``), and the text must be sent then, not before; a later intent and
    a place intent must not be acted on."""
    forget_relations(w)
    minutes = w.rng.choice([20, 25, 30, 40, 45, 60, 75, 90])
    due = w.now + dt.timedelta(minutes=minutes)
    later = due + dt.timedelta(hours=w.rng.randrange(2, 6))
    person, other = w.rng.sample(w.contacts, 2)
    (what, text, key, opposite), (what2, text2, *_) = w.rng.sample(REMINDER_TEXTS, 2)
    book = MemoryBook()
    _intent(
        book, w, f"Remind me at {due:%H:%M} to text {first_name(person)} {what}", "time",
        due.isoformat(timespec="seconds"), f'Text {first_name(person)}: "{text}"',
    )  # fmt: skip
    _intent(
        book, w, f"Remind me at {later:%H:%M} to text {first_name(other)} {what2}", "time",
        later.isoformat(timespec="seconds"), f'Text {first_name(other)}: "{text2}"',
    )  # fmt: skip
    errand = w.rng.choice(ERRANDS)
    _intent(book, w, f"When I'm at the supermarket, remind me to {errand}", "place", "supermarket", errand.capitalize())
    book.distract(w, 3)
    plan = [
        call("memory.search", query="remind me", kind="intent"),
        call("system.wait", minutes=minutes),
        call("contacts.search", query=first_name(person)),
        call("messages.send", to=person["phone"], body=text),
        call("finish", answer=f"Your {due:%H:%M} reminder came up: I texted {first_name(person)}."),
    ]
    away = _phrasing(w, 3, ["in meetings", "driving", "at the dentist", "in a workshop", "on a long call"])
    goal = _phrasing(
        w,
        1,
        [
            f"I'll be {away} for a while. Keep an eye on my reminders and, when the next one comes up, do what it says.",
            f"I'm {away} for the next couple of hours. Wait for my next reminder to come up and take care of it for me.",
            f"While I'm {away}, handle my next reminder when it comes up.",
        ],
    )
    return _mem_draft(
        w,
        book,
        goal=goal,
        criteria=[
            _sms(person, part=key, day=_today_in(text, due.date()), time={"gte": due.isoformat(timespec="seconds")})
        ],
        milestones=[_sms(person), _sms(person, time={"gte": due.isoformat(timespec="seconds")})],
        plan=plan,
        max_steps=25,
        probes=[
            passes(
                "number typed with spaces",
                replacing(plan, 3, call("messages.send", to=_spaced(person["phone"]), body=text)),
            ),
            passes(
                "waited in two steps",
                replacing(
                    plan,
                    1,
                    call("system.wait", minutes=minutes // 2),
                    call("system.wait", minutes=minutes - minutes // 2),
                ),
            ),
            fails("sent before the reminder came up", [plan[0], plan[2], plan[3], plan[1], plan[4]]),
            *said_probes(plan, 3, person["phone"], f"Hi {first_name(person)}, {key}!", opposite),
            *(
                [
                    fails(
                        "another day",
                        replacing(
                            plan, 3, call("messages.send", to=person["phone"], body=text.replace("tonight", "tomorrow"))
                        ),
                    ),
                    passes(
                        "the day in other words",
                        replacing(
                            plan, 3, call("messages.send", to=person["phone"], body=f"{key.capitalize()} this evening")
                        ),
                    ),
                ]
                if "tonight" in text
                else []
            ),
            fails(
                "acted on the later reminder too",
                replacing(plan, 3, plan[3], call("messages.send", to=other["phone"], body=text2)),
            ),
        ],
    )


PLACES = ["office", "train station", "gym", "pharmacy", "post office", "university library"]


@template(
    "memory.intent_place",
    apps=["contacts", "phone", "messages"],
    domain=Domain.CALLS,
    category=MEMORY,
    difficulty=4,
    capabilities=["recall", "intent", "wait", "call", "send"],
    count=COUNT,
)
def intent_place(w: World) -> Draft:
    """Template ``memory.intent_place``: "when I get to the office, remind me to call Ben": the
    task's location timeline brings the phone there after some minutes (``system.wait``), the
    place intent fires, and the call or text must happen then, not before; an intent for another
    place must not be acted on."""
    forget_relations(w)
    place = _phrasing(w, 1, PLACES)
    elsewhere = w.rng.choice([p for p in PLACES if p != place])
    minutes = w.rng.choice([10, 15, 20, 25, 30, 40])
    arrive = w.now + dt.timedelta(minutes=minutes)
    home = arrive + dt.timedelta(hours=w.rng.randrange(3, 7))
    person, other = w.rng.sample(w.contacts, 2)
    first = first_name(person)
    book = MemoryBook()
    key = opposite = ""  # what a text must say, and a near miss (texts only)
    if w.rng.random() < 0.5:
        topic = w.rng.choice(["the lease", "the invoice", "the weekend plans", "the birthday present"])
        _intent(
            book,
            w,
            f"When I get to the {place}, remind me to call {first} about {topic}",
            "place",
            place,
            f"Call {first}",
        )
        act = call("phone.call", number=person["phone"])
        criteria = [state("phone.calls", "created", number={"person": person["id"]}, direction="out",
                          time={"gte": arrive.isoformat(timespec="seconds")})]  # fmt: skip
        done = f"called {first}"
    else:
        what, text, key, opposite = w.rng.choice(REMINDER_TEXTS)
        _intent(
            book,
            w,
            f"When I get to the {place}, remind me to text {first} {what}",
            "place",
            place,
            f'Text {first}: "{text}"',
        )
        act = call("messages.send", to=person["phone"], body=text)
        criteria = [
            _sms(
                person, part=key, day=_today_in(text, arrive.date()), time={"gte": arrive.isoformat(timespec="seconds")}
            )
        ]
        done = f"texted {first}"
    _intent(
        book,
        w,
        f"When I get to the {elsewhere}, remind me to call {first_name(other)}",
        "place",
        elsewhere,
        f"Call {first_name(other)}",
    )
    book.distract(w, 3)
    plan = [
        call("memory.search", query=f"when I get to the {place}", kind="intent"),
        call("system.wait", minutes=minutes),
        call("contacts.search", query=first),
        act,
        call("finish", answer=f"You reached the {place}, so I {done}."),
    ]
    hang_up = [call("phone.end_call")] if act.name == "phone.call" else []
    if act.name == "phone.call":
        reached = state("phone.calls", "created", number={"person": person["id"]}, direction="out")
    else:
        reached = _sms(person)
    timeline = [
        {"at": arrive.isoformat(timespec="seconds"), "label": place},
        {"at": home.isoformat(timespec="seconds"), "label": "home"},
    ]
    goal = _phrasing(
        w,
        len(PLACES),
        [
            f"I'm on my way to the {place}, I'll be there in about {minutes} minutes. Take care of what I wanted to do when I get there.",
            f"Heading to the {place} now (about {minutes} minutes). When I arrive, do what I asked you to remind me of there.",
        ],
    )
    return _mem_draft(
        w,
        book,
        goal=goal,
        criteria=criteria,
        milestones=[memory_searched(place, "remind", "when I get"), reached],
        plan=plan,
        max_steps=25,
        fixture_extra={"location_timeline": timeline},
        probes=[
            passes(
                "number typed with spaces",
                replacing(
                    plan,
                    3,
                    act.model_copy(
                        update={
                            "arguments": {
                                **act.arguments,
                                ("number" if act.name == "phone.call" else "to"): _spaced(person["phone"]),
                            }
                        }
                    ),
                ),
            ),
            passes(
                "waited in two steps",
                replacing(
                    plan,
                    1,
                    call("system.wait", minutes=minutes // 2),
                    call("system.wait", minutes=minutes - minutes // 2),
                ),
            ),
            fails("acted before getting there", [plan[0], plan[2], plan[3], plan[1], plan[4]]),
            *(
                said_probes(plan, 3, person["phone"], f"Hi {first}, {key}!", opposite)
                if act.name == "messages.send"
                else []
            ),
            fails(
                f"also acted on the {elsewhere} reminder",
                replacing(plan, 3, act, *hang_up, call("phone.call", number=other["phone"])),
            ),
        ],
    )
