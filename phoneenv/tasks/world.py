"""Seeded phone worlds: the user, the people, threads, calls, events, alarms, notes, mail and
settings a task starts from. Same seed, same world (see :class:`World` for the guarantees).

Templates (see :mod:`phoneenv.tasks.templates`) take a :class:`World`, pick entities from it,
optionally add records, and turn it into :class:`~phoneenv.contract.Fixtures`.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import random
import re
from dataclasses import dataclass
from typing import Any

import phonenumbers
from faker import Faker

from phoneenv.contract import Fixtures

__all__ = [
    "CIRCLES",
    "CURRENCIES",
    "EVENT_KINDS",
    "EVENT_TITLES",
    "LOCALES",
    "MESSAGE_LINES",
    "MESSAGE_SEEDS",
    "NOTE_SEEDS",
    "PAD_TABLES",
    "PERSONAL_MAIL",
    "WAKING",
    "Currency",
    "EventKind",
    "Locale",
    "MailLine",
    "MessageLine",
    "World",
    "circle",
    "first_names",
    "line_fits_time",
    "pad_fixtures",
    "stream",
]


@dataclass(frozen=True)
class Locale:
    """Where a world's phone lives: its country, time zone, home city and number plan.

    ``mobile`` and ``landline`` are national number prefixes (after the country code); each is
    followed by ``mobile_digits`` / ``landline_digits`` random digits, and a drawn number is
    kept only when :func:`phonenumbers.is_valid_number` accepts it for ``country``.
    """

    country: str
    faker: str
    timezone: str
    city: str
    lat: float
    lon: float
    calling_code: str
    mobile: tuple[str, ...]
    mobile_digits: int
    landline: tuple[str, ...]
    landline_digits: int
    currency: str


LOCALES: dict[str, Locale] = {
    "DE": Locale("DE", "de_DE", "Europe/Berlin", "Berlin", 52.52, 13.405, "49",
                 ("151", "152", "157", "160", "162", "170", "171", "172", "173", "175", "176", "177", "178", "179"), 8,
                 ("30",), 8, "EUR"),
    "US": Locale("US", "en_US", "America/New_York", "New York", 40.7128, -74.006, "1",
                 ("212", "332", "347", "646", "718", "917", "929"), 7, ("212", "718"), 7, "USD"),
    "GB": Locale("GB", "en_GB", "Europe/London", "London", 51.5074, -0.1278, "44",
                 ("74", "75", "77", "78", "79"), 8, ("20",), 8, "GBP"),
    "JP": Locale("JP", "ja_JP", "Asia/Tokyo", "Tokyo", 35.6762, 139.6503, "81", ("70", "80", "90"), 8, ("3",), 8, "JPY"),
    "AU": Locale("AU", "en_AU", "Australia/Sydney", "Sydney", -33.8688, 151.2093, "61", ("4",), 8, ("2",), 8, "AUD"),
}  # fmt: skip
"""The countries a world may be in, by ISO 3166 code (also the :mod:`phonenumbers` region)."""


@dataclass(frozen=True)
class Currency:
    """How a world's money is written and sized.

    Templates draw amounts at euro size; :meth:`World.price` multiplies them by ``factor`` and
    rounds to ``decimals`` places (a yen amount is a whole number about 150 times the euro one).
    ``symbol`` is the sign written before an amount, one :mod:`phoneenv.tasks.answers` reads as
    this currency (``"A$"`` for Australian dollars; a bare ``"$"`` reads as US dollars except in
    an Australian world); ``words`` is how a sentence names it after an amount ("12 euros").
    """

    code: str
    symbol: str
    factor: float
    decimals: int
    words: str


CURRENCIES: dict[str, Currency] = {
    "EUR": Currency("EUR", "€", 1, 2, "euros"),
    "USD": Currency("USD", "$", 1, 2, "dollars"),
    "GBP": Currency("GBP", "£", 1, 2, "pounds"),
    "JPY": Currency("JPY", "¥", 150, 0, "yen"),
    "AUD": Currency("AUD", "A$", 1.5, 2, "dollars"),
}
"""The currencies of :data:`LOCALES`, by ISO 4217 code."""

RELATIONS = ["sister", "brother", "mom", "dad", "boss", "dentist", "landlord", "coworker", "neighbor", "coach"]
FEMALE_RELATIONS = frozenset({"sister", "mom", "aunt", "daughter", "grandma"})
MALE_RELATIONS = frozenset({"brother", "dad", "uncle", "son", "grandpa"})
FAMILY_RELATIONS = frozenset({"sister", "brother", "mom", "dad"})
"""Relatives who share the user's surname."""
WORK_RELATIONS = frozenset({"boss", "coworker"})
"""Colleagues: who sits in work meetings (with contacts of no stated relation)."""
TIMEZONES = [loc.timezone for loc in LOCALES.values()]


def circle(relation: str | None) -> str:
    """The circle a contact's ``relation`` puts them in, as :data:`EVENT_KINDS` and
    :data:`MESSAGE_LINES` name who fits: ``"family"`` (sister, brother, mom, dad), ``"other"`` (no
    relation: a friend or acquaintance), else the relation itself ("boss", "coach", ...)."""
    if relation in FAMILY_RELATIONS:
        return "family"
    return relation or "other"


CIRCLES = frozenset({"family", "other", *RELATIONS} - FAMILY_RELATIONS)
"""Every value :func:`circle` returns."""
_ANYONE = CIRCLES
_SOCIAL = frozenset({"family", "other", "neighbor", "coworker", "coach"})
_COLLEAGUES = frozenset({"boss", "coworker", "other"})


@dataclass(frozen=True)
class EventKind:
    """What a calendar event with this title looks like when it holds together.

    ``title`` may hold ``{p}``, the first name of a person who is then among the attendees.
    ``places`` are the locations that fit (``None``: no location). The event starts between
    ``starts`` (local ``"HH:MM"``, both ends included), lasts one of
    ``minutes``, and its attendees are contacts whose :func:`circle` is in ``circles`` (at most
    ``most`` of them, the named person included). ``work`` events fall on weekdays.
    """

    title: str
    places: tuple[str | None, ...]
    minutes: tuple[int, ...]
    starts: tuple[str, str]
    circles: frozenset[str]
    most: int
    work: bool = False

    def matches(self, title: str) -> bool:
        """Whether an event titled ``title`` is of this kind ("Lunch with Ana" for "Lunch with {p}")."""
        if "{p}" not in self.title:
            return title == self.title
        head, _, tail = self.title.partition("{p}")
        return bool(re.fullmatch(re.escape(head) + r"[A-Z][a-z]+" + re.escape(tail), title))


EVENT_KINDS = [
    EventKind("Team standup", ("Room 4.12", "Office", "Online"), (15, 30), ("09:00", "10:30"), _COLLEAGUES, 3, True),
    EventKind("Project review", ("Room 4.12", "Office", "Online"), (45, 60, 90), ("09:00", "15:30"), _COLLEAGUES, 3,
              True),
    EventKind("Budget meeting", ("Room 4.12", "Office"), (60, 90), ("09:00", "15:30"), _COLLEAGUES, 3, True),
    EventKind("Design sync", ("Room 4.12", "Office", "Online"), (30, 45, 60), ("09:00", "16:00"), _COLLEAGUES, 3, True),
    EventKind("Lunch with {p}", ("Cafe Luna", "Trattoria Roma", "The Green Table"), (45, 60, 90), ("11:30", "13:30"),
              _SOCIAL | {"boss"}, 1),
    EventKind("Call with {p}", (None, "Phone", "Online"), (15, 30, 45), ("08:00", "20:00"), _ANYONE, 1),
    EventKind("Coffee with {p}", ("Cafe Luna", "Corner Bakery"), (30, 45, 60), ("08:00", "17:00"), _SOCIAL | {"boss"}, 1),
    EventKind("Dentist appointment", ("Bright Smile Dental",), (30, 45, 60), ("08:00", "17:00"), frozenset({"dentist"}),
              1),
    EventKind("Yoga class", ("Lotus Yoga Studio",), (60, 75, 90), ("07:00", "20:00"), _SOCIAL - {"coach"}, 1),
    EventKind("Parent-teacher meeting", ("Oak Hill School",), (15, 30), ("15:00", "18:30"), frozenset(), 0),
    EventKind("Gym", ("FitHub Gym",), (60, 90), ("07:00", "20:00"), _SOCIAL, 1),
    EventKind("Book club", ("City Library", "Cafe Luna", "Main Street 5"), (90, 120), ("18:00", "19:30"),
              _SOCIAL - {"coach"}, 3),
]  # fmt: skip
"""The kinds of the world's calendar events and how each holds together (see :class:`EventKind`)."""
WORK_EVENTS = [k.title for k in EVENT_KINDS if k.work]
"""Work events: Monday to Friday, starting 09:00-16:00 and over by 17:30."""
PERSON_EVENTS = [k.title for k in EVENT_KINDS if "{p}" in k.title]
"""Events that name a person, who is then among the attendees."""
PERSONAL_EVENTS = [k.title for k in EVENT_KINDS if not k.work and "{p}" not in k.title]
EVENT_TITLES = [k.title for k in EVENT_KINDS]
LOCATIONS = sorted({p for k in EVENT_KINDS for p in k.places if p})
"""Every place a seeded event may be at."""
WAKING = (dt.time(7, 0), dt.time(22, 30))
"""Local hours in which people's records happen: calls, texts, their mail, notes, photos."""
NIGHT_SHARE = 0.01
"""The share of seeded calls that happen at any hour instead (a late call happens)."""
NOTE_SEEDS = [
    ("Shopping list", "milk\neggs\nbread", ("groceries",)),
    ("Wifi at the cabin", "network: Cabin5G", ("travel",)),
    ("Gift ideas", "scarf for mom\nbook for Ben", ("family",)),
    ("Meeting notes", "ship v2 on Friday", ("work",)),
    ("Books to read", "Dune\nMiddlemarch", ()),
    ("Recipe: pancakes", "flour, milk, eggs, sugar", ("cooking",)),
    ("Packing list", "passport\ncharger\nsocks", ("travel",)),
]


@dataclass(frozen=True)
class MessageLine:
    """A text one person sends another, and when it fits.

    ``circles``: the :func:`circle` of the contact the text is with. ``way``: who sends it,
    ``"in"`` (the contact), ``"out"`` (the user) or ``"both"``. ``hours``: the local send time
    (``"HH:MM"``, both ends included) that fits its words ("See you at 7" goes out before 18:30);
    ``weekday``: sent Monday to Friday only. ``reply``: the answer the other side may send back,
    which answers this text and no other.
    """

    text: str
    circles: frozenset[str]
    hours: tuple[str, str] = ("07:00", "22:30")
    way: str = "both"
    weekday: bool = False
    reply: str | None = None


_FRIENDS = frozenset({"family", "other", "neighbor"})
_WORK = frozenset({"boss", "coworker"})
MESSAGE_LINES = [
    MessageLine("Are we still on for tonight?", _FRIENDS | {"coworker"}, ("09:00", "18:00"),
                reply="Yes, see you later!"),
    MessageLine("Can you call me back?", _ANYONE, ("08:00", "21:00"), reply="Will call you in 5"),
    MessageLine("Thanks for yesterday!", _FRIENDS | {"coworker"}, ("08:00", "21:00"), reply="Anytime, it was fun!"),
    MessageLine("Running a bit late", _FRIENDS | _WORK | {"coach"}, ("07:00", "21:00"), reply="No worries"),
    MessageLine("Did you see the game?", _SOCIAL, ("08:00", "22:30"), reply="Yes, what a finish!"),
    MessageLine("Lunch tomorrow?", _FRIENDS - {"neighbor"} | _WORK, ("09:00", "20:00"), reply="Sure, 12:30?"),
    MessageLine("Sent you the photos", _FRIENDS | {"coworker"}, reply="Thanks, they're great!"),
    MessageLine("See you at 7", _FRIENDS | {"coach"}, ("08:00", "18:30"), reply="See you then!"),
    MessageLine("Where did you park?", frozenset({"family", "other", "coworker"}), ("08:00", "22:00"),
                reply="Level 2, by the exit"),
    MessageLine("Can you pick up milk?", frozenset({"family"}), ("08:00", "20:00"), reply="Sure, anything else?"),
    MessageLine("Dinner at ours on Sunday?", frozenset({"family"}), ("08:00", "21:00"), reply="Yes! What can I bring?"),
    MessageLine("Meeting moved to 3", _WORK, ("08:00", "14:30"), weekday=True, reply="Thanks, noted"),
    MessageLine("Can you send me the slides?", _WORK, ("08:00", "19:00"), weekday=True, reply="Sending them now"),
    MessageLine("Rent for next month is due on the 1st", frozenset({"landlord"}), ("09:00", "19:00"), "in",
                reply="Thanks, I'll pay it this week"),
    MessageLine("The plumber can come on Thursday", frozenset({"landlord"}), ("08:00", "19:00"), "in",
                reply="Great, Thursday works"),
    MessageLine("Is the heating working again?", frozenset({"landlord"}), ("09:00", "20:00"), "in",
                reply="Yes, all good now"),
    MessageLine("Reminder: your check-up is next week", frozenset({"dentist"}), ("08:00", "18:00"), "in", True,
                reply="Thanks, see you then"),
    MessageLine("Please confirm your appointment", frozenset({"dentist"}), ("08:00", "18:00"), "in", True,
                reply="Confirmed, thank you"),
    MessageLine("Practice moved to 6pm", frozenset({"coach"}), ("08:00", "16:30"), "in", reply="OK, I'll be there"),
    MessageLine("Bring your kit tomorrow", frozenset({"coach"}), ("08:00", "21:00"), "in", reply="Will do"),
    MessageLine("Great effort at training today!", frozenset({"coach"}), ("12:00", "22:30"), "in",
                reply="Thanks, coach!"),
    MessageLine("Got a parcel for you", frozenset({"neighbor"}), ("08:00", "21:00"), "in",
                reply="Thanks! I'll pick it up later"),
    MessageLine("Can you water my plants this weekend?", frozenset({"neighbor"}), ("08:00", "21:00"), "in",
                reply="Of course"),
]  # fmt: skip
"""The texts of seeded threads, each with who sends it, when, and its reply (see :class:`MessageLine`)."""
MESSAGE_SEEDS = [line.text for line in MESSAGE_LINES]
"""The texts that open a seeded thread (:data:`MESSAGE_LINES`)."""


@dataclass(frozen=True)
class MailLine:
    """Mail a contact writes: its subject, body and the :func:`circle` of the senders it fits."""

    subject: str
    body: str
    circles: frozenset[str]


PERSONAL_MAIL = [
    MailLine("Team offsite", "The offsite is on Friday at the lake house.", _WORK),
    MailLine("Dinner on Saturday?", "Are you free for dinner on Saturday at 8?", _FRIENDS),
    MailLine("Quarterly report", "The quarterly report draft is ready for review.", _WORK),
    MailLine("Rent for next month", "A reminder that next month's rent is due on the 1st.", frozenset({"landlord"})),
    MailLine("Time for your check-up", "It's time for your check-up. Reply to book a slot.", frozenset({"dentist"})),
    MailLine("Training schedule", "Here is the training schedule for the coming weeks.", frozenset({"coach"})),
    MailLine("Photos from the weekend", "Here are the photos from the weekend, enjoy!", frozenset({"family", "other"})),
]
"""Mail a contact writes (sent from the contact's own address)."""
SERVICE_MAIL = [
    ("billing", "Invoice #{n}", "Please find attached invoice #{n}. Amount due: {a} {cur}."),
    ("orders", "Your order has shipped", "Order {n} is on its way and arrives Tuesday."),
    ("no-reply", "Password reset", "Someone asked to reset your password."),
]
"""Mail from a company: (mailbox, subject, body), sent from ``mailbox@<company domain>``."""
MAIL_SUBJECTS = [(m.subject, m.body) for m in PERSONAL_MAIL] + [(s, b) for _, s, b in SERVICE_MAIL]
COMPANIES = ["northwind", "brightpower", "parcelpoint", "cloudnest", "greenleaf", "urbanfiber"]
COMPANY_TLD = {"DE": "de", "US": "com", "GB": "co.uk", "JP": "co.jp", "AU": "com.au"}
# First names that read as ordinary words, or that templates would trip over.
_STOPWORDS = (
    "Will May Mark Bill Art Hope Joy Rose Amber Summer Faith Chase Hunter Page Rich Sunny Guy Autumn Crystal Ruby "
    "Jade Dawn April June August Angel Destiny Patience Honey Pearl Ivy Holly Lily Daisy Violet Rusty Sky Storm "
    "Sandy Penny Sage Rain Star Miles Dean Gene Don Ken Max Ray Ward Young Green Brown White Black Gray Little "
    "King Long Love Case Hall Lane Wood Stone Street Field Church Price Cash Gay Moody Hardy Sharp Strong Wise "
    "Mo Al Ed Jo Lu Sam"
)
NAME_STOPLIST = frozenset(_STOPWORDS.split())
_NAME_RE = re.compile(r"^[A-Z][a-z]{2,11}$")


def _minutes(hhmm: str) -> int:
    """``"HH:MM"`` as minutes after midnight."""
    hours, minutes = hhmm.split(":")
    return int(hours) * 60 + int(minutes)


def line_fits_time(line: MessageLine, when: dt.datetime) -> bool:
    """Whether ``line`` fits being sent at local time ``when``: inside its hours, and on a
    weekday when it says so."""
    first, last = (_minutes(h) for h in line.hours)
    return first <= when.hour * 60 + when.minute <= last and not (line.weekday and when.weekday() >= 5)


def stream(seed: int, name: str) -> random.Random:
    """The random stream ``name`` of world ``seed``: seeded from SHA-256 of ``"<seed>/<name>"``,
    so it is the same in every process and Python version (``hash()`` is salted per process)."""
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@functools.cache
def _faker(locale: str) -> Faker:
    return Faker(locale)


@functools.cache
def first_names(locale: str) -> tuple[frozenset[str], frozenset[str]]:
    """The Faker ``locale``'s (female, male) first names, romanised for Japanese."""
    person = next(p for p in _faker(locale).providers if p.__provider__ == "faker.providers.person")
    if locale == "ja_JP":
        return frozenset(person.first_romanized_names_female), frozenset(person.first_romanized_names_male)
    return frozenset(person.first_names_female), frozenset(person.first_names_male)


@functools.cache
def last_names(locale: str) -> frozenset[str]:
    """The Faker ``locale``'s surnames (romanised for Japanese)."""
    person = next(p for p in _faker(locale).providers if p.__provider__ == "faker.providers.person")
    return frozenset(person.last_romanized_names if locale == "ja_JP" else person.last_names)


@functools.cache
def surnames() -> frozenset[str]:
    """Every surname the world's people may have (all locales of :data:`LOCALES`), case-folded."""
    return frozenset(n.casefold() for loc in LOCALES.values() for n in last_names(loc.faker))


@functools.cache
def given_names() -> frozenset[str]:
    """Every first name the world's people may have (all locales of :data:`LOCALES`), case-folded."""
    return frozenset(n.casefold() for loc in LOCALES.values() for names in first_names(loc.faker) for n in names)


def _usable(name: str) -> bool:
    """A name templates can use: ASCII letters, capitalised, not a word, no relation inside."""
    folded = name.casefold()
    return bool(_NAME_RE.match(name)) and name not in NAME_STOPLIST and not any(r in folded for r in RELATIONS)


class World:
    """One seeded world: a user in one country, their address book and what their apps hold.

    ``records`` maps ``app.table`` to lists of record dicts (what :class:`Fixtures` seeds).

    Locale: each world draws a country from :data:`LOCALES` (Germany, the US, the UK, Japan,
    Australia). The time zone, the home location (``fixtures().location``, the country's main
    city), every phone number (E.164, valid per :mod:`phonenumbers`, distinct on the last nine
    digits, the digits the ``number`` predicate compares) and every name (Faker with that
    country's locale, ASCII letters only) follow it.

    Streams: every app's seeded records come from its own random stream, ``stream(seed, app)``
    (plus ``"world"`` for the country and clock, ``"people"`` for Faker, ``"accounts"`` for the
    password), and templates draw from ``rng``, a stream of their own. So a template's draws
    never shift the world, and one more draw in one app's generator changes only that app's
    records (records that refer to people follow the address book, which every app reads).

    Guarantees, checked over the whole suite by ``tests/test_world.py``:

    - a relation with a gender (sister, mom, brother, dad) has a first name of that gender;
      family (mom, dad, sister, brother) share the user's surname;
    - first names are unique in a world, none is part of another person's name, none is a
      common word or contains a relation ("dad" in "Haddad");
    - "Lunch with {p}", "Call with {p}", "Coffee with {p}" list ``p`` among the attendees;
    - work events (standup, project review, budget meeting, design sync) fall on weekdays
      between 09:00 and 17:30; personal ones on any day;
    - every event's place, hours, length and attendees fit its kind (:data:`EVENT_KINDS`), and
      no two seeded events overlap;
    - texts fit the contact's relation and the hour (:data:`MESSAGE_LINES`), a reply follows
      the text it answers; personal mail fits its sender (:data:`PERSONAL_MAIL`);
    - calls, texts, personal mail and notes happen between 07:00 and 22:30 local time (calls
      about 1% excepted), all before the clock;
    - mail from a contact comes from the contact's email; company mail from a company domain.

    :mod:`phoneenv.tasks.coherence` measures these over every task's final fixtures (``phoneenv
    tasks stats``, under ``world``).

    Args:
        seed: the world's seed (an int); equal seeds give equal worlds.
        n_contacts: people in the address book (≤ 30).
        country: force a country of :data:`LOCALES` instead of drawing one.
    """

    def __init__(self, seed: int, n_contacts: int = 14, country: str | None = None) -> None:
        self.seed = seed
        self.index = 0
        """The task's index within its template (set by ``Template.task``)."""
        self.streams: dict[str, random.Random] = {}
        base = self.stream("world")
        self.locale = LOCALES[country] if country else base.choice(list(LOCALES.values()))
        self.timezone = self.locale.timezone
        day = dt.date(2026, 11, 2) + dt.timedelta(days=base.randrange(0, 26))
        self.now = dt.datetime.combine(day, dt.time(base.choice([8, 9, 10, 11]), base.choice([0, 15, 30, 45])))
        self.rng = self.stream("template")
        """The templates' stream: draws here never shift the world's records."""
        self.records: dict[str, list[dict[str, Any]]] = {}
        self._user()
        self.accounts: dict[str, dict[str, Any]] = {"mail": {"account": self.user_email, "signed_in": True}}
        self.vault: dict[str, str] = {self.user_email: f"pw-{self.stream('accounts').randrange(10**8):08d}"}
        self.permissions: dict[str, dict[str, bool]] = {}
        self.permission_responses: dict[str, bool] = {}
        self.confirm_sensitive = False
        self.user_confirms = True
        self._people(n_contacts)
        self._messages()
        self._calls()
        self._events()
        self._alarms()
        self._notes()
        self._mail()
        from apps.settings import DEFAULTS  # apps import phoneenv: the settings app owns its defaults

        self.records["settings.settings"] = [{"id": k, "value": v} for k, v in DEFAULTS.items()]

    def stream(self, name: str) -> random.Random:
        """This world's random stream ``name`` (created on first use; see :func:`stream`)."""
        if name not in self.streams:
            self.streams[name] = stream(self.seed, name)
        return self.streams[name]

    # -- people ---------------------------------------------------------------------------------
    def _fake(self, rng: random.Random) -> Faker:
        """The locale's Faker, reseeded from ``rng`` (one shared instance per locale)."""
        fake = _faker(self.locale.faker)
        fake.seed_instance(rng.getrandbits(64))
        return fake

    def _first_name(self, fake: Faker, female: bool) -> str:
        if self.locale.faker == "ja_JP":
            draw = fake.first_romanized_name_female if female else fake.first_romanized_name_male
        else:
            draw = fake.first_name_female if female else fake.first_name_male
        taken = self._names_taken()
        other = first_names(self.locale.faker)[1 if female else 0]
        for _ in range(500):
            name = draw()
            folded = name.casefold()
            if _usable(name) and name not in other and not any(folded in t or t in folded for t in taken):
                return name
        raise RuntimeError(f"no usable first name left in locale {self.locale.faker}")

    def _last_name(self, fake: Faker) -> str:
        draw = fake.last_romanized_name if self.locale.faker == "ja_JP" else fake.last_name
        taken = self._names_taken()
        for _ in range(500):
            name = draw()
            folded = name.casefold()
            if _usable(name) and folded not in self._surnames and not any(t in folded for t in taken):
                return name
        raise RuntimeError(f"no usable surname left in locale {self.locale.faker}")

    def _names_taken(self) -> set[str]:
        """First names and surnames in use (casefolded)."""
        return {p.casefold() for c in self.records.get("contacts.contacts", []) for p in c["name"].split()} | {
            p.casefold() for p in self.user_name.split() if p
        }

    def _user(self) -> None:
        rng = self.stream("people")
        fake = self._fake(rng)
        self.user_name = ""
        self._surnames: set[str] = set()
        self.user_gender = rng.choice(["female", "male"])
        first = self._first_name(fake, self.user_gender == "female")
        self.user_name = first
        last = self._last_name(fake)
        self.user_name = f"{first} {last}"
        self._surnames = {last.casefold()}
        self.user_email = f"{first}.{last}@{fake.free_email_domain()}".lower()

    def _people(self, n: int) -> None:
        rng = self.stream("people")
        fake = self._fake(rng)
        relations = rng.sample(RELATIONS, min(6, n))
        family_name = self.user_name.split()[-1]
        contact = self.stream("contacts")
        people: list[dict[str, Any]] = []
        self.records["contacts.contacts"] = people
        for i in range(n):
            relation = relations[i] if i < len(relations) else None
            if relation in FEMALE_RELATIONS:
                female = True
            elif relation in MALE_RELATIONS:
                female = False
            else:
                female = rng.random() < 0.5
            first = self._first_name(fake, female)
            last = family_name if relation in FAMILY_RELATIONS else self._last_name(fake)
            self._surnames.add(last.casefold())
            domain = fake.free_email_domain()
            people.append(
                {
                    "id": f"c_{i + 1}",
                    "name": f"{first} {last}",
                    "phone": self.phone_number("mobile", contact),
                    "email": f"{first}.{last}@{domain}".lower() if contact.random() < 0.7 else None,
                    "relation": relation,
                    "favorite": contact.random() < 0.25,
                    "birthday": f"{contact.randrange(1, 13):02d}-{contact.randrange(1, 29):02d}"
                    if contact.random() < 0.5
                    else None,
                }
            )

    def new_name(self, female: bool | None = None) -> str:
        """A "First Last" name of this locale that no one in the world has (drawn from ``rng``,
        the templates' stream); the first name also fits the rules names in :class:`World` keep."""
        fake = self._fake(self.rng)
        if female is None:
            female = self.rng.random() < 0.5
        return f"{self._first_name(fake, female)} {self._last_name(fake)}"

    def phone_number(self, kind: str = "mobile", rng: random.Random | None = None) -> str:
        """A valid E.164 number of this world's country, ``kind`` ``"mobile"`` or ``"landline"``
        (a line in the home city), distinct on its last nine digits from every number in the
        world's contacts, messages and calls. Draws from ``rng`` (default: the templates' ``rng``)."""
        rng = rng or self.rng
        loc = self.locale
        prefixes, digits = (loc.mobile, loc.mobile_digits) if kind == "mobile" else (loc.landline, loc.landline_digits)
        taken = {
            n[-9:]
            for table, key in (
                ("contacts.contacts", "phone"),
                ("messages.messages", "number"),
                ("phone.calls", "number"),
            )
            for n in (r.get(key) or "" for r in self.records.get(table, []))
        }
        for _ in range(1000):
            num = f"+{loc.calling_code}{rng.choice(prefixes)}{rng.randrange(10 ** (digits - 1), 10**digits)}"
            if num[-9:] in taken:
                continue
            parsed = phonenumbers.parse(num)
            if phonenumbers.is_valid_number(parsed) and phonenumbers.region_code_for_number(parsed) == loc.country:
                return num
        raise RuntimeError(f"no free {kind} number in {loc.country}")

    # -- time -----------------------------------------------------------------------------------
    def ts(self, minutes_ago: int) -> str:
        """Local timestamp ``minutes_ago`` minutes before the world's clock (``YYYY-MM-DDTHH:MM:SS``)."""
        return (self.now - dt.timedelta(minutes=minutes_ago)).isoformat(timespec="seconds")

    def waking_ago(self, rng: random.Random, lo: int, hi: int) -> int:
        """Minutes before now in ``[lo, hi)`` that land in waking hours (07:00-22:30 local), or,
        with probability NIGHT_SHARE (1%), at any hour."""
        if rng.random() < NIGHT_SHARE:
            return rng.randrange(lo, hi)
        for _ in range(100):
            minutes = rng.randrange(lo, hi)
            if WAKING[0] <= (self.now - dt.timedelta(minutes=minutes)).time() <= WAKING[1]:
                return minutes
        return minutes

    def ago_within(
        self, rng: random.Random, lo: int, hi: int, hours: tuple[str, str] = ("07:00", "22:30"), weekday: bool = False
    ) -> int:
        """Minutes before now in ``[lo, hi)`` that land between local ``hours`` (``"HH:MM"``, both
        ends included) and, with ``weekday``, on Monday to Friday. Draws from ``rng``; after 300
        misses (a window the range hardly reaches) the last draw."""
        first, last = (dt.time.fromisoformat(h) for h in hours)
        minutes = lo
        for _ in range(300):
            minutes = rng.randrange(lo, hi)
            when = self.now - dt.timedelta(minutes=minutes)
            if first <= when.time() <= last and not (weekday and when.weekday() >= 5):
                return minutes
        return minutes

    def text_for(
        self, contact: dict[str, Any], minutes_ago: int, rng: random.Random | None = None, inbound: bool = True
    ) -> str:
        """A text ``contact`` may send the user (the user may send ``contact``, when not
        ``inbound``) ``minutes_ago`` minutes before now: one of :data:`MESSAGE_SEEDS` that fits
        the contact's relation and that local time (see :class:`MessageLine`), drawn from ``rng``
        (default: the templates' ``rng``)."""
        rng = rng or self.rng
        when = self.now - dt.timedelta(minutes=minutes_ago)
        kind = circle(contact.get("relation"))
        way = "in" if inbound else "out"
        lines = [line for line in MESSAGE_LINES if kind in line.circles and line.way in (way, "both")]
        fits = [line for line in lines if line_fits_time(line, when)]
        return rng.choice(fits or lines).text

    # -- app records ----------------------------------------------------------------------------
    def _messages(self) -> None:
        """Threads with five contacts: one or two exchanges each, a text that fits the contact
        and the hour (:data:`MESSAGE_LINES`), answered by its reply half the time."""
        rng = self.stream("messages")
        msgs = []
        k = 0
        for p in rng.sample(self.contacts, 5):
            kind = circle(p["relation"])
            fits = [line for line in MESSAGE_LINES if kind in line.circles]
            thread: list[tuple[int, bool, str]] = []  # (minutes ago, inbound, text)
            for _ in range(rng.randrange(1, 3)):
                line = rng.choice(fits)
                inbound = line.way == "in" or (line.way == "both" and rng.random() < 0.6)
                ago = self.ago_within(rng, 40, 4000, line.hours, line.weekday)
                if any(abs(ago - other) < 60 for other, _, _ in thread):
                    continue  # keep exchanges apart, so a reply follows its own text
                thread.append((ago, inbound, line.text))
                gap = rng.randrange(2, 30)
                answered = self.now - dt.timedelta(minutes=ago - gap)
                if line.reply and rng.random() < 0.5 and WAKING[0] <= answered.time() <= WAKING[1]:
                    thread.append((ago - gap, not inbound, line.reply))
            thread.sort(key=lambda m: -m[0])
            for i, (ago, inbound, text) in enumerate(thread):
                k += 1
                answered_later = any(not later_in for _, later_in, _ in thread[i + 1 :])
                msgs.append(
                    {
                        "id": f"m_{k}",
                        "number": p["phone"],
                        "direction": "in" if inbound else "out",
                        "body": text,
                        "time": self.ts(ago),
                        "read": (not inbound) or answered_later or rng.random() < 0.6,
                    }
                )
        self.records["messages.messages"] = msgs

    def _calls(self) -> None:
        rng = self.stream("phone")
        calls = []
        for k in range(8):
            p = rng.choice(self.contacts)
            direction = rng.choice(["in", "out", "missed"])
            calls.append(
                {
                    "id": f"call_{k + 1}",
                    "number": p["phone"],
                    "direction": direction,
                    "time": self.ts(self.waking_ago(rng, 30, 6000)),
                    "duration_s": 0 if direction == "missed" else rng.randrange(20, 900),
                }
            )
        self.records["phone.calls"] = calls
        self.records["phone.blocked"] = []

    def _events(self) -> None:
        """Nine events in the next six days, each of a kind of :data:`EVENT_KINDS` with a place,
        hours, length and attendees that fit it, none overlapping another."""
        rng = self.stream("calendar")
        events = []
        busy: list[tuple[dt.datetime, dt.datetime]] = []
        for k in range(9):
            kind = rng.choice(EVENT_KINDS)
            first, last = (_minutes(h) for h in kind.starts)
            slots = list(range(first + (-first) % 30, last + 1, 30))
            for _ in range(200):
                day = self.now.date() + dt.timedelta(days=rng.randrange(0, 6))
                start = dt.datetime.combine(day, dt.time()) + dt.timedelta(minutes=rng.choice(slots))
                end = start + dt.timedelta(minutes=rng.choice(kind.minutes))
                if not (kind.work and day.weekday() >= 5) and all(end <= s or start >= e for s, e in busy):
                    break
            busy.append((start, end))
            fitting = [c for c in self.contacts if circle(c["relation"]) in kind.circles]
            named = rng.choice(fitting) if "{p}" in kind.title else None
            rest = [c for c in fitting if c is not named]
            n = rng.randrange(0, kind.most + 1) - (named is not None)
            people = {a["name"] for a in rng.sample(rest, max(0, min(n, len(rest))))}
            title = kind.title
            if named is not None:
                title = title.format(p=named["name"].split()[0])
                people.add(named["name"])
            events.append(
                {
                    "id": f"ev_{k + 1}",
                    "title": title,
                    "start": start.isoformat(timespec="minutes"),
                    "end": end.isoformat(timespec="minutes"),
                    "location": rng.choice(kind.places),
                    "attendees": tuple(sorted(people)),
                    "notes": None,
                    "all_day": False,
                }
            )
        self.records["calendar.events"] = events

    def _alarms(self) -> None:
        rng = self.stream("clock")
        times = sorted(rng.sample(["06:30", "07:00", "07:15", "07:45", "08:00", "21:30", "13:00"], 3))
        self.records["clock.alarms"] = [
            {"id": f"al_{i + 1}", "time": t, "label": None, "enabled": rng.random() < 0.7, "days": ()}
            for i, t in enumerate(times)
        ]
        self.records["clock.timers"] = []

    def _notes(self) -> None:
        rng = self.stream("notes")
        notes = []
        for i, (title, body, tags) in enumerate(rng.sample(NOTE_SEEDS, 5)):
            stamp = self.ts(self.ago_within(rng, 60, 20000))
            notes.append(
                {
                    "id": f"n_{i + 1}",
                    "title": title,
                    "body": body,
                    "pinned": i == 0,
                    "created": stamp,
                    "updated": stamp,
                    "tags": tags,
                }
            )
        self.records["notes.notes"] = notes

    def _mail(self) -> None:
        """Four inbox mails: personal ones (:data:`PERSONAL_MAIL`) from a contact whose relation
        they fit, written in waking hours; company ones (:data:`SERVICE_MAIL`) at any hour."""
        rng = self.stream("mail")
        writers = [c for c in self.contacts if c["email"]]
        tld = COMPANY_TLD[self.locale.country]
        mails = []
        personal = [m for m in PERSONAL_MAIL if any(circle(c["relation"]) in m.circles for c in writers)]
        pool: list[MailLine | tuple[str, str, str]] = [*personal, *SERVICE_MAIL]
        for i, mail in enumerate(rng.sample(pool, min(4, len(pool)))):
            n = rng.randrange(1000, 9999)
            amount = rng.randrange(20, 900)
            if isinstance(mail, MailLine):
                subj, body = mail.subject, mail.body
                sender = rng.choice([c for c in writers if circle(c["relation"]) in mail.circles])["email"]
                ago = self.ago_within(rng, 30, 5000)
            else:
                box, subj, body = mail
                sender = f"{box}@{rng.choice(COMPANIES)}.{tld}"
                ago = rng.randrange(30, 5000)
            mails.append(
                {
                    "id": f"em_{i + 1}",
                    "folder": "inbox",
                    "from": sender,
                    "to": (self.user_email,),
                    "subject": subj.format(n=n),
                    "body": body.format(n=n, a=amount, cur=self.locale.currency),
                    "time": self.ts(ago),
                    "read": rng.random() < 0.5,
                }
            )
        self.records["mail.messages"] = mails

    # -- money ---------------------------------------------------------------------------------
    @property
    def currency(self) -> str:
        """The ISO 4217 code of the world's currency ("EUR", "USD", "GBP", "JPY", "AUD")."""
        return self.locale.currency

    @property
    def currency_words(self) -> str:
        """How a sentence names the currency after an amount: "euros", "dollars", "yen"."""
        return CURRENCIES[self.currency].words

    def price(self, euros: float) -> float:
        """A euro-sized amount in the world's currency: scaled by its factor and rounded to its
        decimals (``12.5`` → 12.5 EUR/USD/GBP, 18.75 AUD, 1875.0 JPY). Deterministic."""
        cur = CURRENCIES[self.currency]
        return float(round(euros * cur.factor, cur.decimals))

    def amount(self, amount: float) -> str:
        """``amount`` as digits with the currency's decimals, a whole amount without them:
        ``"12.50"``, ``"120"``, ``"1875"``."""
        text = f"{amount:.{CURRENCIES[self.currency].decimals}f}"
        return text.removesuffix(".00")

    def money(self, amount: float, symbol: bool = False) -> str:
        """``amount`` written in the world's currency: ``"12.50 USD"``, ``"1875 JPY"``, or with
        ``symbol``, ``"$12.50"``, ``"€12.50"``, ``"£8"``, ``"¥1875"``, ``"A$18.75"``."""
        if symbol:
            return f"{CURRENCIES[self.currency].symbol}{self.amount(amount)}"
        return f"{self.amount(amount)} {self.currency}"

    # -- access for templates --------------------------------------------------------------------
    @property
    def contacts(self) -> list[dict[str, Any]]:
        """The address book's records."""
        return self.records["contacts.contacts"]

    def table(self, name: str) -> list[dict[str, Any]]:
        """The records of table ``name`` (created empty if absent)."""
        return self.records.setdefault(name, [])

    def contact_by_number(self, number: str) -> dict[str, Any] | None:
        """The contact with phone ``number``, or None."""
        return next((c for c in self.contacts if c["phone"] == number), None)

    def pick(self, table: str, k: int = 1, **where: Any) -> list[dict[str, Any]]:
        """``k`` distinct records of ``table`` whose fields equal ``where`` (seeded choice).

        Raises ``ValueError`` when fewer than ``k`` records match.
        """
        pool = [r for r in self.table(table) if all(r.get(f) == v for f, v in where.items())]
        if len(pool) < k:
            raise ValueError(f"only {len(pool)} records of {table} match {where}, need {k}")
        return self.rng.sample(pool, k)

    def next_id(self, table: str, prefix: str) -> str:
        """The id the sandbox will give the next record created in ``table``: one above the
        largest number among the table's ids, as :meth:`PhoneState.new_id` counts."""
        top = 0
        for r in self.table(table):
            digits = r["id"][len(r["id"].rstrip("0123456789")) :]
            if digits:
                top = max(top, int(digits))
        return f"{prefix}{top + 1}"

    def fixtures(self, **overrides: Any) -> Fixtures:
        """These records and policies as :class:`Fixtures`; ``overrides`` replace fields."""
        data: dict[str, Any] = {
            "clock": self.now.isoformat(timespec="seconds"),
            "timezone": self.timezone,
            "location": {"label": "home", "lat": self.locale.lat, "lon": self.locale.lon},
            "records": self.records,
            "permissions": self.permissions,
            "permission_responses": self.permission_responses,
            "accounts": self.accounts,
            "vault": self.vault,
            "confirm_sensitive": self.confirm_sensitive,
            "user_confirms": self.user_confirms,
        }
        data.update(overrides)
        return Fixtures.model_validate(data)


# -- big phones ---------------------------------------------------------------------------------
PAD_TABLES = ("contacts.contacts", "messages.messages", "phone.calls")
"""The tables :func:`pad_fixtures` can fill."""

_SYLLABLES = ("ka", "lo", "mi", "ren", "sa", "tu", "vi", "no", "be", "dor", "fa", "gi", "ha", "jun", "ko", "li",
              "ma", "ni", "po", "ra", "se", "ta", "ul", "ve", "wen", "ya", "zo", "bri", "cla", "dru")  # fmt: skip


def _letters(n: int) -> str:
    """``n`` ≥ 0 as lowercase letters (a, b, ..., z, ba, bb, ...): an id suffix with no digits."""
    out = ""
    while True:
        n, r = divmod(n, 26)
        out = chr(97 + r) + out
        if not n:
            return out


def _pad_name(n: int) -> str:
    """A made-up two-word name, different for every ``n`` below 27,000² ("Kalo Mise")."""
    s = len(_SYLLABLES)
    first, last = divmod(n, s**3)
    parts = []
    for k in (first % s**3, last):
        a, rest = divmod(k, s * s)
        b, c = divmod(rest, s)
        parts.append((_SYLLABLES[a] + _SYLLABLES[b] + _SYLLABLES[c]).capitalize())
    return " ".join(parts)


def pad_fixtures(fixtures: Fixtures, counts: dict[str, int], seed: int = 0) -> Fixtures:
    """A copy of ``fixtures`` with filler records added, for measuring a big phone.

    ``counts`` maps each table of :data:`PAD_TABLES` to how many filler records to add
    (``{"contacts.contacts": 100_000, "messages.messages": 100_000}``). The filler is made so
    that a task on the padded fixtures asks and means what it did: made-up names no seeded
    contact has, numbers whose last 9 digits no seeded number shares (filler messages and calls
    are with filler numbers), everything read and older than every seeded record, and ids with
    no trailing number (``c_xbaf``), so the ids a task expects new records to get do not move.
    Searches may of course find filler too. Same ``seed``, same records. Give the result to
    ``env.reset(options={"task": task.model_copy(update={"fixtures": padded})})``.

    Raises:
        ValueError: a table not in :data:`PAD_TABLES` or a negative count.
    """
    bad = sorted(set(counts) - set(PAD_TABLES))
    if bad:
        raise ValueError(f"pad_fixtures cannot fill {bad}; it fills {list(PAD_TABLES)}")
    if any(n < 0 for n in counts.values()):
        raise ValueError(f"counts must be ≥ 0: {counts}")
    rng = random.Random(f"pad:{seed}")
    records = {k: list(v) for k, v in fixtures.records.items()}
    seeded = [r for rows in fixtures.records.values() for r in rows]
    taken = {
        re.sub(r"\D", "", str(r.get(f) or ""))[-9:]
        for r in seeded
        for f in ("phone", "number")
        if isinstance(r.get(f), str)
    }
    taken |= {
        re.sub(r"\D", "", p["number"])[-9:] for r in seeded for p in r.get("other_phones") or () if isinstance(p, dict)
    }
    names = {str(r.get("name", "")).casefold() for r in fixtures.records.get("contacts.contacts", ())}
    times = [r[f] for r in seeded for f in ("time", "start", "date") if isinstance(r.get(f), str) and len(r[f]) >= 10]
    oldest = min([fixtures.clock[:10], *(t[:10] for t in times)])
    start = dt.datetime.fromisoformat(oldest) - dt.timedelta(days=1)  # midnight before the oldest day
    n_numbers = max(counts.get("contacts.contacts", 0), 1000)
    numbers: list[str] = []
    k = 0
    while len(numbers) < n_numbers:
        k += 1
        digits = f"{(k * 7_919_003 + 12_345) % 10**9:09d}"
        if digits not in taken and digits[0] != "0":
            numbers.append(f"+99{digits}")
    contacts = records.setdefault("contacts.contacts", [])
    i = 0
    for n in range(counts.get("contacts.contacts", 0)):
        while _pad_name(i).casefold() in names:
            i += 1
        name = _pad_name(i)
        i += 1
        contacts.append(
            {
                "id": f"c_x{_letters(n)}",
                "name": name,
                "phone": numbers[n],
                "email": f"{name.replace(' ', '.').lower()}@example.com" if rng.random() < 0.5 else None,
                "relation": None,
                "favorite": False,
                "birthday": None,
            }
        )
    msgs = records.setdefault("messages.messages", [])
    for n in range(counts.get("messages.messages", 0)):
        msgs.append(
            {
                "id": f"m_x{_letters(n)}",
                "number": numbers[rng.randrange(len(numbers))],
                "direction": "in" if rng.random() < 0.6 else "out",
                "body": rng.choice(MESSAGE_SEEDS),
                "time": (start - dt.timedelta(minutes=n)).isoformat(timespec="seconds"),
                "read": True,
            }
        )
    calls = records.setdefault("phone.calls", [])
    for n in range(counts.get("phone.calls", 0)):
        calls.append(
            {
                "id": f"call_x{_letters(n)}",
                "number": numbers[rng.randrange(len(numbers))],
                "direction": rng.choice(("in", "out")),
                "time": (start - dt.timedelta(minutes=n)).isoformat(timespec="seconds"),
                "duration_s": rng.randrange(20, 900),
            }
        )
    return fixtures.model_copy(update={"records": records})
