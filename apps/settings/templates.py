"""Settings templates: switch a setting, set the brightness, revoke an app's permission, fly."""

from __future__ import annotations

from typing import Any

from phoneenv.contract import ChangeSelector, Domain
from phoneenv.tasks.templates import (
    Draft,
    ask_first,
    behavior,
    call,
    confirm_variant,
    fails,
    finishing,
    passes,
    replacing,
    state,
    template,
)
from phoneenv.tasks.world import World

# (setting, value wanted, tool, what the user says)
TOGGLES = [
    ("dnd", True, "settings.set_dnd", "Turn on do not disturb."),
    ("dnd", False, "settings.set_dnd", "Turn do not disturb off, I'm expecting a call."),
    ("bluetooth", True, "settings.set_bluetooth", "Turn Bluetooth on."),
    ("bluetooth", False, "settings.set_bluetooth", "Switch Bluetooth off."),
    ("dark_mode", True, "settings.set_dark_mode", "Switch the phone to dark mode."),
    ("dark_mode", False, "settings.set_dark_mode", "Turn dark mode off, I want the light theme back."),
    ("location", False, "settings.set_location", "Turn off location services."),
    ("wifi", True, "settings.set_wifi", "Turn Wi-Fi back on."),
]
# (app, permission, what the user says the app may no longer do)
PERMISSIONS = [
    ("messages", "android.permission.SEND_SMS", "send text messages"),
    ("messages", "android.permission.READ_SMS", "read my text messages"),
    ("contacts", "android.permission.WRITE_CONTACTS", "change my contacts"),
    ("calendar", "android.permission.READ_CALENDAR", "read my calendar"),
    ("calendar", "android.permission.WRITE_CALENDAR", "change my calendar"),
    ("phone", "android.permission.CALL_PHONE", "make phone calls"),
    ("phone", "android.permission.READ_CALL_LOG", "read my call log"),
]
# How a user asks for each toggle inside a longer request.
CLAUSES = {
    ("dnd", True): "turn on do not disturb",
    ("dnd", False): "turn do not disturb off",
    ("bluetooth", True): "switch Bluetooth on",
    ("bluetooth", False): "switch Bluetooth off",
    ("dark_mode", True): "put the phone in dark mode",
    ("dark_mode", False): "go back to the light theme",
    ("location", False): "turn off location",
    ("wifi", True): "turn Wi-Fi back on",
}
APP_NAMES = {"messages": "Messages", "contacts": "Contacts", "calendar": "Calendar", "phone": "Phone"}


def set_value(w: World, key: str, value: Any) -> None:
    """Make setting ``key`` start at ``value`` in the world (every setting is seeded)."""
    recs = w.table("settings.settings")
    i = next(i for i, r in enumerate(recs) if r["id"] == key)
    recs[i] = {"id": key, "value": value}


def value_of(w: World, key: str) -> Any:
    """The world's value of setting ``key``."""
    return next(r["value"] for r in w.table("settings.settings") if r["id"] == key)


@template("settings.toggle", apps=["settings"], domain=Domain.DEVICE, capabilities=["update"])
def toggle(w: World) -> Draft:
    """Template ``settings.toggle``, e.g. task 0: "Turn on do not disturb, go back to the light theme and set the screen brightness to 80%."."""
    # Task k of the template starts with toggle k (seeds are consecutive), so all eight appear.
    first = TOGGLES[w.seed % len(TOGGLES)]
    second = w.rng.choice([t for t in TOGGLES if t[0] != first[0]])
    level = w.rng.choice([n for n in range(10, 100, 10) if n != value_of(w, "brightness")])
    criteria = []
    plan = []
    for key, want, tool, _ in (first, second):
        set_value(w, key, not want)
        criteria.append(state("settings.settings", "updated", id=key, value=want))
        plan.append(call(tool, enabled=want))
    criteria.append(state("settings.settings", "updated", id="brightness", value=level))
    plan += [call("settings.set_brightness", level=level), call("finish", answer="Done.")]
    a, b = CLAUSES[first[:2]], CLAUSES[second[:2]]
    goal = w.rng.choice(
        [f"{a[0].upper()}{a[1:]}, {b} and set the screen brightness to {level}%.",
         f"Please {a} and {b}, and put the screen brightness at {level} percent."]
    )  # fmt: skip
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[],
        plan=plan,
        probes=[
            passes("in another order", [plan[2], plan[0], plan[1], plan[3]]),
            passes("checked the settings first", [call("settings.list_all"), *plan]),
            fails("one forgotten", replacing(plan, 1)),
            fails(
                "brightness off by ten",
                replacing(plan, 2, call("settings.set_brightness", level=level + 10 if level < 90 else level - 10)),
            ),
            fails("ringer silenced instead", replacing(plan, 0, call("settings.set_volume", stream="ring", level=0)))
            if first[0] == "dnd"
            else fails("the opposite", replacing(plan, 0, call(first[2], enabled=not first[1]))),
        ],
    )


@template("settings.brightness", apps=["settings"], domain=Domain.DEVICE, capabilities=["lookup", "update"])
def brightness(w: World) -> Draft:
    """Template ``settings.brightness``, e.g. task 0: "Make the screen 10 points brighter than it is now, and lower the media volume by 20."."""
    now = w.rng.choice(range(20, 80, 5))
    set_value(w, "brightness", now)
    vol = w.rng.choice(range(30, 80, 5))
    set_value(w, "volume_media", vol)
    # Consecutive seeds: the eight tasks take each step and direction once.
    up = [10, 15, 20, 25][w.seed % 4]
    down = w.rng.choice([10, 20])
    sign = 1 if w.seed % 8 < 4 else -1
    level = now + sign * up
    word = "up" if sign > 0 else "down"
    goal = w.rng.choice(
        [f"Turn the screen brightness {word} by {up} points and the media volume down by {down}.",
         f"Make the screen {up} points {'brighter' if sign > 0 else 'dimmer'} than it is now, and lower the media volume by {down}."]
    )  # fmt: skip
    plan = [
        call("settings.list_all"),
        call("settings.set_brightness", level=level),
        call("settings.set_volume", stream="media", level=vol - down),
        call("finish", answer=f"Brightness is {level}%, media volume {vol - down}%."),
    ]
    return Draft(
        goal=goal,
        criteria=[
            state("settings.settings", "updated", id="brightness", value=level),
            state("settings.settings", "updated", id="volume_media", value=vol - down),
        ],
        milestones=[
            behavior("required_call", "settings.set_brightness", id="bright", arguments={"level": level}),
            behavior(
                "required_call", "settings.set_volume", id="volume", arguments={"stream": "media", "level": vol - down}
            ),
        ],
        plan=plan,
        probes=[
            passes(
                "read each setting",
                replacing(plan, 0, call("settings.get", key="brightness"), call("settings.get", key="volume_media")),
            ),
            passes("volume first", [plan[0], plan[2], plan[1], plan[3]]),
            fails("set to the step, not by it", replacing(plan, 1, call("settings.set_brightness", level=up))),
            fails(
                "ring volume instead", replacing(plan, 2, call("settings.set_volume", stream="ring", level=vol - down))
            ),
        ],
    )


@template(
    "settings.revoke_permission",
    apps=["settings"],
    domain=Domain.DEVICE,
    difficulty=2,
    capabilities=["lookup", "update", "confirm"],
)
def revoke_permission(w: World) -> Draft:
    """Template ``settings.revoke_permission``, e.g. task 0: "Take away the Phone app's permission to make phone calls."."""
    app, perm, what = PERMISSIONS[w.seed % len(PERMISSIONS)]  # consecutive seeds: every permission
    confirm_variant(w, 0.4)
    goal = w.rng.choice(
        [f"I don't want the {APP_NAMES[app]} app to be able to {what} anymore. Revoke that permission.",
         f"Take away the {APP_NAMES[app]} app's permission to {what}."]
    )  # fmt: skip
    criteria = [state("system.permissions", "updated", id=f"{app}/{perm}", granted=False)]
    plan = [call("settings.list_app_permissions", app=app)]
    if w.confirm_sensitive:
        ask_first(plan, criteria, "settings.revoke_permission", f"Revoke {perm} from {app}?")
    plan += [call("settings.revoke_permission", app=app, permission=perm), call("finish", answer="Revoked.")]
    sibling = next((p for a, p, _ in PERMISSIONS if a == app and p != perm), "android.permission.READ_CONTACTS")
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[behavior("required_call", "settings.list_app_permissions", arguments={"app": app})],
        plan=plan,
        probes=[
            passes("checked again afterwards", [*plan[:-1], plan[0], plan[-1]]),
            passes("answered in other words", finishing(plan, f"{APP_NAMES[app]} can no longer {what}.")),
            fails(
                "the sibling permission",
                replacing(plan, -2, call("settings.revoke_permission", app=app, permission=sibling)),
            ),
            fails("only looked", [x for x in plan if x.name != "settings.revoke_permission"]),
        ],
    )


@template("settings.airplane_mode", apps=["settings"], domain=Domain.DEVICE, difficulty=2, capabilities=["update"])
def airplane_mode(w: World) -> Draft:
    """Template ``settings.airplane_mode``, e.g. task 0: "I'm boarding: airplane mode on, Wi-Fi back on, screen brightness at 10 percent, and don't disturb me."."""
    if w.rng.random() < 0.5:
        set_value(w, "bluetooth", True)  # so the side effect shows on Bluetooth too
    keep = w.rng.choice(["wifi", "bluetooth"])
    # Task k dims to 10 + 5k percent (consecutive seeds), 40 points more when the screen is
    # already there: the eight goals differ.
    level = 10 + 5 * (w.seed % 8)
    if level == value_of(w, "brightness"):
        level += 40
    criteria = [state("settings.settings", "updated", id="airplane_mode", value=True)]
    plan = [call("settings.set_airplane_mode", enabled=True)]
    goal = "I'm boarding my flight, turn on airplane mode."
    side = ["wifi", "bluetooth"]
    if keep is not None:
        label, tool = {"wifi": ("Wi-Fi", "settings.set_wifi"), "bluetooth": ("Bluetooth", "settings.set_bluetooth")}[
            keep
        ]
        goal = w.rng.choice(
            [f"Turn on airplane mode and do not disturb, but I want {label} on during the flight."
             f" And dim the screen to {level}%.",
             f"I'm boarding: airplane mode on, {label} back on, screen brightness at {level} percent,"
             " and don't disturb me."]
        )  # fmt: skip
        side.remove(keep)
        plan.append(call(tool, enabled=True))
        was_on = value_of(w, keep) is True
        # Airplane mode switches it off; switched back on it is unchanged, or updated if it was off.
        crit = state("settings.settings", "present" if was_on else "updated", id=keep, value=True)
        criteria.append(crit)
    plan += [call("settings.set_dnd", enabled=True), call("settings.set_brightness", level=level)]
    criteria += [
        state("settings.settings", "updated", id="dnd", value=True),
        state("settings.settings", "updated", id="brightness", value=level),
        # Airplane mode switches the other radio off (or leaves it off): on again is unasked,
        # even where it ends as it began.
        *(state("settings.settings", "present", id=radio, value=False) for radio in side),
    ]
    plan.append(call("finish", answer="Airplane mode is on."))
    other_tool = {"wifi": "settings.set_wifi", "bluetooth": "settings.set_bluetooth"}[side[0]]
    return Draft(
        goal=goal,
        criteria=criteria,
        allowed_changes=[ChangeSelector(table="settings.settings", where={"id": {"in": side}})],
        plan=plan,
        probes=[
            passes("in another order", [plan[2], plan[3], plan[0], plan[1], plan[4]]),
            passes("checked the settings after", [*plan[:-1], call("settings.list_all"), plan[-1]]),
            fails("radio not turned back on", replacing(plan, 1)),
            fails(
                "brightness as a volume", replacing(plan, 3, call("settings.set_volume", stream="media", level=level))
            ),
            fails("airplane mode left off", replacing(plan, 0)),
            fails("the other radio on too", [*plan[:-1], call(other_tool, enabled=True), plan[-1]]),
        ],
    )
