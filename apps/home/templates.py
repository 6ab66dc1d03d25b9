"""Smart-home templates, and the seeding of the home app from a :class:`World`.

:func:`seed_home` (stream ``"home"``) adds four rooms, a light or two per room, a thermostat in
the locale's unit (°F in the US, °C elsewhere), the front-door lock and two plugs.

| template | what the user asks | verified by |
|---|---|---|
| ``home.evening`` | dim a room's lights and set the heating | each light's brightness, the thermostat's target in its unit |
| ``home.let_in`` | unlock the door for a contact and text them | the lock (sensitive: confirmation or PIN), the text |
"""

from __future__ import annotations

from typing import Any

from apps.messages.templates import looked_up
from phoneenv.contract import Criterion, Domain
from phoneenv.tasks.templates import (
    Draft,
    ask_first,
    behavior,
    call,
    confirm_variant,
    fails,
    first_name,
    passes,
    pick,
    replacing,
    state,
    suffixed,
    template,
)
from phoneenv.tasks.world import World

__all__ = ["ROOMS", "seed_home", "temperature"]

OPEN = {
    "regex": r"\bopen|\bunlock|(?:\bnot|n't|\bno\s+longer)\s+locked\b",
    "not": {
        "regex": r"(?:\bnot\b|n't\b|\bcannot\b|\bunable\b|\bno longer\b)\W+(?:\w+\W+){0,3}?(?:open|unlock)"
        r"|\bstill\s+locked\b|(?:\bis|\bit's|\bit\s+is)\s+(?:still\s+|now\s+)?locked\b"
    },
}
"""A text that says the door is open or unlocked (and not that it isn't: a negation shortly
before "open"/"unlock", "still locked", or "it's locked" anywhere, as in "open now... actually
no, it's locked"; "don't forget to shut it" elsewhere is fine)."""
ROOMS = ["Living room", "Bedroom", "Kitchen", "Hallway"]
LIGHTS = {
    "Living room": ["Ceiling light", "Floor lamp"],
    "Bedroom": ["Bedside lamp", "Ceiling light"],
    "Kitchen": ["Spotlights"],
    "Hallway": ["Hall light"],
}


def fahrenheit(w: World) -> bool:
    """Whether the world's thermostats work in °F (the US) rather than °C."""
    return w.locale.country == "US"


def temperature(w: World, celsius: float) -> float:
    """``celsius`` in the world's thermostat unit: °C as is, °F rounded to a whole degree."""
    return float(round(celsius * 9 / 5 + 32)) if fahrenheit(w) else float(celsius)


def seed_home(w: World) -> dict[str, Any]:
    """Seed the home app from stream ``"home"``; returns ``rooms`` (name → room), ``lights``
    (room name → its lights), ``thermostat``, ``lock`` and ``plugs``."""
    rng = w.stream("home")
    rooms = {name: {"id": f"r_{i + 1}", "name": name} for i, name in enumerate(ROOMS)}
    w.table("home.rooms").extend(rooms.values())
    devices = w.table("home.devices")
    base = {"on": None, "brightness": None, "target": None, "unit": None, "locked": None}

    def add(name: str, room: str, kind: str, **st: Any) -> dict[str, Any]:
        rec = {"id": f"d_{len(devices) + 1}", "name": name, "room_id": rooms[room]["id"], "kind": kind, **base, **st}
        devices.append(rec)
        return rec

    lights: dict[str, list[dict[str, Any]]] = {}
    for room in ROOMS:
        lights[room] = [
            add(n, room, "light", on=rng.random() < 0.6, brightness=rng.choice([40, 60, 80, 100])) for n in LIGHTS[room]
        ]
    unit = "F" if fahrenheit(w) else "C"
    thermostat = add(
        "Thermostat", "Living room", "thermostat", target=temperature(w, rng.choice([18, 19, 20])), unit=unit
    )
    lock = add("Front door", "Hallway", "lock", locked=True)
    plugs = [add("Coffee machine", "Kitchen", "plug", on=rng.random() < 0.5), add("TV", "Living room", "plug", on=True)]
    w.table("home.scenes")
    return {"rooms": rooms, "lights": lights, "thermostat": thermostat, "lock": lock, "plugs": plugs}


@template(
    "home.evening",
    apps=["home"],
    domain=Domain.DEVICE,
    difficulty=2,
    capabilities=["lookup", "update", "multi-entity"],
    count=12,
)
def evening(w: World) -> Draft:
    """Template ``home.evening``: "Dim the living room lights to 30% and set the heating to 21
    degrees": every light of the room, the thermostat in its own unit (70 °F in the US)."""
    home = seed_home(w)
    room, level, celsius = pick(w, ["Living room", "Bedroom"], [20, 30, 45], [21, 22])
    target = temperature(w, celsius)
    unit = "°F" if fahrenheit(w) else "°C"
    goal = w.rng.choice(
        [f"Dim the {room.lower()} lights to {level}% and set the heating to {target:g}{unit}.",
         f"Set all the {room.lower()} lights to {level} percent brightness and the thermostat to {target:g} degrees."]
    )  # fmt: skip
    lights = home["lights"][room]
    plan = [call("home.list_devices", room_id=home["rooms"][room]["id"])]
    plan += [call("home.set_brightness", device_id=d["id"], level=level) for d in lights]
    plan += [
        call("home.set_temperature", device_id=home["thermostat"]["id"], target=target),
        call("finish", answer="Done."),
    ]
    criteria: list[Criterion] = [
        suffixed(state("home.devices", "updated", id=d["id"], on=True, brightness=level), d["id"]) for d in lights
    ]
    if home["thermostat"]["target"] != target:
        criteria.append(suffixed(state("home.devices", "updated", id=home["thermostat"]["id"], target=target), "heat"))
    other_room = next(r for r in ROOMS if r != room)
    wrong_unit = float(celsius) if fahrenheit(w) else None
    probes = [
        passes("listed every device", replacing(plan, 0, call("home.list_devices"))),
        fails("one light missed", replacing(plan, 1)),
        fails(
            "the other room's light",
            replacing(plan, 1, call("home.set_brightness", device_id=home["lights"][other_room][0]["id"], level=level)),
        ),
        fails("switched off instead", replacing(plan, 1, call("home.switch", device_id=lights[0]["id"], on=False))),
    ]
    if wrong_unit is not None:
        probes.append(
            fails(
                "Celsius on a Fahrenheit thermostat",
                replacing(
                    plan, -2, call("home.set_temperature", device_id=home["thermostat"]["id"], target=wrong_unit)
                ),
            )
        )
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[criteria[0]],
        plan=plan,
        probes=probes,
    )


@template(
    "home.let_in",
    apps=["home", "contacts", "messages"],
    domain=Domain.DEVICE,
    difficulty=3,
    capabilities=["lookup", "unlock", "send", "confirm"],
    count=12,
)
def let_in(w: World) -> Draft:
    """Template ``home.let_in``: "Ana is at the door - unlock it and text her it's open": the
    unlock is sensitive (a confirmation the user asks for, or the phone's PIN step-up)."""
    home = seed_home(w)
    c = w.rng.choice(w.contacts)
    first = first_name(c)
    (goal,) = pick(
        w,
        [
            f"{first} is at the front door - unlock it and text them that it's open.",
            f"Let {first} in: unlock the front door and send them a text saying the door is open.",
            f"Open the front door lock for {first} and message them so they know.",
        ],
    )
    step_up = w.rng.random() < 0.5
    confirm = confirm_variant(w, 0.5 if step_up else 1.0)
    if confirm:
        goal += " Ask me before unlocking."
    lock = home["lock"]
    plan = [call("home.list_devices", kind="lock"), call("contacts.search", query=first)]
    criteria: list[Criterion] = [
        state("home.devices", "updated", id=lock["id"], locked=False),
        state("messages.messages", "created", number={"person": c["id"]}, body=OPEN),
    ]
    if confirm:
        ask_first(plan, criteria, "home.unlock", f"Unlock the front door for {c['name']}?")
    if step_up:
        plan.append(call("user.authenticate", reason="Unlock the front door"))
        criteria.append(behavior("step_up", "home.unlock"))
    plan.append(call("home.unlock", device_id=lock["id"]))
    # Texting is sensitive too: on this phone it is confirmed or authenticated on its own.
    if confirm:
        plan.append(call("user.confirm", question=f"Text {c['name']} that the door is open?"))
    if step_up:
        plan.append(call("user.authenticate", reason=f"Text {c['name']}"))
    plan += [
        call("messages.send", to=c["phone"], body="The front door is open, come in!"),
        call("finish", answer=f"Unlocked the door and texted {c['name']}."),
    ]
    send = len(plan) - 2
    other = next(p for p in w.contacts if p is not c)
    probes = [
        passes(
            "other words", replacing(plan, send, call("messages.send", to=c["phone"], body="Door's open - come on in."))
        ),
        passes(
            "says unlocked",
            replacing(plan, send, call("messages.send", to=c["phone"], body="I've unlocked the door, come in!")),
        ),
        passes(
            "no longer locked",
            replacing(
                plan,
                send,
                call("messages.send", to=c["phone"], body="The front door is no longer locked - come on in!"),
            ),
        ),
        fails(
            "takes it back",
            replacing(
                plan,
                send,
                call("messages.send", to=c["phone"], body="The door is open now. Actually no, it's locked, wait."),
            ),
        ),
        passes(
            "a reminder beside it",
            replacing(plan, send, call("messages.send", to=c["phone"], body="It's open - don't forget to shut it.")),
        ),
        fails(
            "says it won't open",
            replacing(plan, send, call("messages.send", to=c["phone"], body="The door won't open, wait a minute")),
        ),
        fails("texted someone else", replacing(plan, send, call("messages.send", to=other["phone"], body="It's open"))),
        fails("never unlocked", [p for p in plan if p.name != "home.unlock"]),
        fails(
            "says it is still locked",
            replacing(plan, send, call("messages.send", to=c["phone"], body="Sorry, I can't open it")),
        ),
    ]
    if confirm:
        probes.append(fails("never asked", [p for p in plan if p.name != "user.confirm"]))
    if step_up:
        probes.append(fails("never enters the PIN", [p for p in plan if p.name != "user.authenticate"]))
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[looked_up(first), criteria[0]],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer", f"{send}.body", "1.query"]
        + [f"{i}.{a}" for i, p in enumerate(plan) for a in ("question", "reason") if a in p.arguments],
        probes=probes,
        fixtures=w.fixtures(step_up=True) if step_up else None,
    )
