"""Seeded phone worlds: the people, threads, calls, events, alarms, notes, mail and settings a
task starts from, drawn from fixed pools with ``random.Random(seed)`` (same seed, same world).

Templates (see :mod:`phoneenv.tasks.templates`) take a :class:`World`, pick entities from it,
optionally add records, and turn it into :class:`~phoneenv.contract.Fixtures`.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from phoneenv.contract import Fixtures

__all__ = ["World"]

FIRST_NAMES = [
    "Ana", "Ben", "Carla", "David", "Elena", "Felix", "Grace", "Hugo", "Iris", "Jonas", "Kara", "Liam",
    "Maya", "Nico", "Olivia", "Paul", "Quinn", "Rosa", "Samir", "Tara", "Umar", "Vera", "Wes", "Yara", "Zoe",
    "Aaron", "Bianca", "Caleb", "Dana", "Emil",
]  # fmt: skip
LAST_NAMES = [
    "Lima", "Becker", "Okafor", "Novak", "Silva", "Tanaka", "Moreau", "Kowalski", "Haddad", "Jensen",
    "Rossi", "Nguyen", "Schmidt", "Costa", "Ivanova", "Murphy", "Santos", "Weber", "Khan", "Larsen",
]  # fmt: skip
RELATIONS = ["sister", "brother", "mom", "dad", "boss", "dentist", "landlord", "coworker", "neighbor", "coach"]
TIMEZONES = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "Europe/London", "Australia/Sydney"]
EVENT_TITLES = [
    "Team standup", "Dentist appointment", "Lunch with {p}", "Project review", "Yoga class", "Call with {p}",
    "Budget meeting", "Coffee with {p}", "Design sync", "Parent-teacher meeting", "Gym", "Book club",
]  # fmt: skip
LOCATIONS = ["Room 4.12", "Cafe Luna", "Main Street 5", "Online", "City Library", "Office", None]
NOTE_SEEDS = [
    ("Shopping list", "milk\neggs\nbread", ("groceries",)),
    ("Wifi at the cabin", "network: Cabin5G", ("travel",)),
    ("Gift ideas", "scarf for mom\nbook for Ben", ("family",)),
    ("Meeting notes", "ship v2 on Friday", ("work",)),
    ("Books to read", "Dune\nMiddlemarch", ()),
    ("Recipe: pancakes", "flour, milk, eggs, sugar", ("cooking",)),
    ("Packing list", "passport\ncharger\nsocks", ("travel",)),
]
MESSAGE_SEEDS = [
    "Are we still on for tonight?", "Can you call me back?", "Thanks for yesterday!", "Running a bit late",
    "Did you see the game?", "Lunch tomorrow?", "Happy birthday!!", "Sent you the photos", "See you at 7",
    "Where did you park?", "Can you pick up milk?", "Meeting moved to 3",
]  # fmt: skip
MAIL_SUBJECTS = [
    ("Invoice #{n}", "Please find attached invoice #{n}. Amount due: {a} EUR."),
    ("Your order has shipped", "Order {n} is on its way and arrives Tuesday."),
    ("Team offsite", "The offsite is on Friday at the lake house."),
    ("Password reset", "Someone asked to reset your password."),
    ("Dinner on Saturday?", "Are you free for dinner on Saturday at 8?"),
    ("Quarterly report", "The quarterly report draft is ready for review."),
]
SETTINGS_DEFAULTS: dict[str, Any] = {
    "wifi": True,
    "bluetooth": False,
    "dnd": False,
    "airplane_mode": False,
    "location": True,
    "brightness": 60,
    "volume_ring": 70,
    "volume_media": 50,
    "dark_mode": False,
    "wifi_network": "HomeNet",
}


class World:
    """One seeded world. ``records`` maps ``app.table`` to lists of record dicts.

    Args:
        seed: the world's seed (an int); equal seeds give equal worlds.
        n_contacts: people in the address book (≤ 30).
    """

    def __init__(self, seed: int, n_contacts: int = 14) -> None:
        self.seed = seed
        self.rng = rng = random.Random(seed)
        self.timezone = rng.choice(TIMEZONES)
        day = dt.date(2026, 11, 2) + dt.timedelta(days=rng.randrange(0, 26))
        self.now = dt.datetime.combine(day, dt.time(rng.choice([8, 9, 10, 11]), rng.choice([0, 15, 30, 45])))
        self.user_email = "sam.rivera@example.com"
        self.records: dict[str, list[dict[str, Any]]] = {}
        self.accounts: dict[str, dict[str, Any]] = {"mail": {"account": self.user_email, "signed_in": True}}
        self.vault: dict[str, str] = {self.user_email: f"pw-{rng.randrange(10**8):08d}"}
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
        self.records["settings.settings"] = [{"id": k, "value": v} for k, v in SETTINGS_DEFAULTS.items()]

    # -- generation -----------------------------------------------------------------------------
    def _people(self, n: int) -> None:
        firsts = self.rng.sample(FIRST_NAMES, n)
        relations = self.rng.sample(RELATIONS, min(6, n))
        people = []
        for i, first in enumerate(firsts):
            last = self.rng.choice(LAST_NAMES)
            people.append(
                {
                    "id": f"c_{i + 1}",
                    "name": f"{first} {last}",
                    "phone": self._phone_unique(people),
                    "email": f"{first.lower()}.{last.lower()}@example.com" if self.rng.random() < 0.7 else None,
                    "relation": relations[i] if i < len(relations) else None,
                    "favorite": self.rng.random() < 0.25,
                    "birthday": f"{self.rng.randrange(1, 13):02d}-{self.rng.randrange(1, 29):02d}"
                    if self.rng.random() < 0.5
                    else None,
                }
            )
        self.records["contacts.contacts"] = people

    def _phone_unique(self, people: list[dict[str, Any]]) -> str:
        while True:
            num = f"+49{self.rng.choice(['151', '160', '170', '176'])}{self.rng.randrange(10**7, 10**8)}"
            if all(p["phone"] != num for p in people):
                return num

    def ts(self, minutes_ago: int) -> str:
        """Local timestamp ``minutes_ago`` minutes before the world's clock (``YYYY-MM-DDTHH:MM:SS``)."""
        return (self.now - dt.timedelta(minutes=minutes_ago)).isoformat(timespec="seconds")

    def _messages(self) -> None:
        msgs = []
        people = self.rng.sample(self.contacts, 5)
        k = 0
        for p in people:
            for _ in range(self.rng.randrange(1, 4)):
                k += 1
                inbound = self.rng.random() < 0.6
                msgs.append(
                    {
                        "id": f"m_{k}",
                        "number": p["phone"],
                        "direction": "in" if inbound else "out",
                        "body": self.rng.choice(MESSAGE_SEEDS),
                        "time": self.ts(self.rng.randrange(10, 4000)),
                        "read": (not inbound) or self.rng.random() < 0.6,
                    }
                )
        self.records["messages.messages"] = msgs

    def _calls(self) -> None:
        calls = []
        for k in range(8):
            p = self.rng.choice(self.contacts)
            direction = self.rng.choice(["in", "out", "missed"])
            calls.append(
                {
                    "id": f"call_{k + 1}",
                    "number": p["phone"],
                    "direction": direction,
                    "time": self.ts(self.rng.randrange(30, 6000)),
                    "duration_s": 0 if direction == "missed" else self.rng.randrange(20, 900),
                }
            )
        self.records["phone.calls"] = calls
        self.records["phone.blocked"] = []

    def _events(self) -> None:
        events = []
        used: set[tuple[dt.date, int]] = set()
        for k in range(9):
            while True:
                day = self.now.date() + dt.timedelta(days=self.rng.randrange(0, 6))
                hour = self.rng.randrange(9, 18)
                if (day, hour) not in used:
                    used.add((day, hour))
                    break
            p = self.rng.choice(self.contacts)
            title = self.rng.choice(EVENT_TITLES).format(p=p["name"].split()[0])
            start = dt.datetime.combine(day, dt.time(hour, self.rng.choice([0, 30])))
            attendees = tuple(sorted(a["name"] for a in self.rng.sample(self.contacts, self.rng.randrange(0, 4))))
            events.append(
                {
                    "id": f"ev_{k + 1}",
                    "title": title,
                    "start": start.isoformat(timespec="minutes"),
                    "end": (start + dt.timedelta(minutes=self.rng.choice([30, 60]))).isoformat(timespec="minutes"),
                    "location": self.rng.choice(LOCATIONS),
                    "attendees": attendees,
                    "notes": None,
                    "all_day": False,
                }
            )
        self.records["calendar.events"] = events

    def _alarms(self) -> None:
        times = sorted(self.rng.sample(["06:30", "07:00", "07:15", "07:45", "08:00", "21:30", "13:00"], 3))
        self.records["clock.alarms"] = [
            {"id": f"al_{i + 1}", "time": t, "label": None, "enabled": self.rng.random() < 0.7, "days": ()}
            for i, t in enumerate(times)
        ]
        self.records["clock.timers"] = []

    def _notes(self) -> None:
        notes = []
        for i, (title, body, tags) in enumerate(self.rng.sample(NOTE_SEEDS, 5)):
            stamp = self.ts(self.rng.randrange(60, 20000))
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
        mails = []
        for i, (subj, body) in enumerate(self.rng.sample(MAIL_SUBJECTS, 4)):
            n = self.rng.randrange(1000, 9999)
            amount = self.rng.randrange(20, 900)
            sender = self.rng.choice(self.contacts)
            mails.append(
                {
                    "id": f"em_{i + 1}",
                    "folder": "inbox",
                    "from": sender["email"] or f"{sender['name'].split()[0].lower()}@example.org",
                    "to": (self.user_email,),
                    "subject": subj.format(n=n),
                    "body": body.format(n=n, a=amount),
                    "time": self.ts(self.rng.randrange(30, 5000)),
                    "read": self.rng.random() < 0.5,
                }
            )
        self.records["mail.messages"] = mails

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
