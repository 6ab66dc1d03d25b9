"""Settings templates: switch a setting, set the brightness, revoke an app's permission, fly."""

from __future__ import annotations

from typing import Any

from phoneenv.contract import ChangeSelector, Domain
from phoneenv.tasks.templates import Draft, ask_first, behavior, call, confirm_variant, state, template
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
    """Template ``settings.toggle``, e.g. task 0: "Turn on do not disturb."."""
    # Task k of the template takes toggle k (seeds are consecutive), so all eight appear.
    key, want, tool, goal = TOGGLES[w.seed % len(TOGGLES)]
    set_value(w, key, not want)
    return Draft(
        goal=goal,
        criteria=[state("settings.settings", "updated", id=key, value=want)],
        plan=[call(tool, enabled=want), call("finish", answer="Done.")],
        perturb_exempt=["1.answer"],
    )


@template("settings.brightness", apps=["settings"], domain=Domain.DEVICE, capabilities=["update"])
def brightness(w: World) -> Draft:
    """Template ``settings.brightness``, e.g. task 0: "Set the screen brightness to 10%."."""
    now = value_of(w, "brightness")
    level = w.rng.choice([n for n in range(10, 100, 5) if n != now])
    return Draft(
        goal=w.rng.choice(
            [f"Set the screen brightness to {level}%.", f"Change my screen brightness to {level} percent."]
        ),
        criteria=[state("settings.settings", "updated", id="brightness", value=level)],
        plan=[call("settings.set_brightness", level=level), call("finish", answer=f"Brightness is {level}%.")],
        perturb_exempt=["1.answer"],
    )


@template(
    "settings.revoke_permission",
    apps=["settings"],
    domain=Domain.DEVICE,
    difficulty=2,
    capabilities=["lookup", "update", "confirm"],
)
def revoke_permission(w: World) -> Draft:
    """Template ``settings.revoke_permission``, e.g. task 0: "I don't want the Phone app to be able to make phone calls anymore. Revoke that permission."."""
    app, perm, what = PERMISSIONS[w.seed % len(PERMISSIONS)]  # consecutive seeds: every permission
    confirm_variant(w, 0.4)
    goal = f"I don't want the {APP_NAMES[app]} app to be able to {what} anymore. Revoke that permission."
    criteria = [state("system.permissions", "updated", id=f"{app}/{perm}", granted=False)]
    plan = [call("settings.list_app_permissions", app=app)]
    if w.confirm_sensitive:
        ask_first(plan, criteria, "settings.revoke_permission", f"Revoke {perm} from {app}?")
    plan += [call("settings.revoke_permission", app=app, permission=perm), call("finish", answer="Revoked.")]
    return Draft(
        goal=goal,
        criteria=criteria,
        milestones=[behavior("required_call", "settings.list_app_permissions", arguments={"app": app})],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
    )


@template("settings.airplane_mode", apps=["settings"], domain=Domain.DEVICE, difficulty=2, capabilities=["update"])
def airplane_mode(w: World) -> Draft:
    """Template ``settings.airplane_mode``, e.g. task 0: "I'm boarding my flight, turn on airplane mode."."""
    if w.rng.random() < 0.5:
        set_value(w, "bluetooth", True)  # so the side effect shows on Bluetooth too
    keep = w.rng.choice([None, None, "wifi", "bluetooth"])
    criteria = [state("settings.settings", "updated", id="airplane_mode", value=True)]
    plan = [call("settings.set_airplane_mode", enabled=True)]
    goal = "I'm boarding my flight, turn on airplane mode."
    side = ["wifi", "bluetooth"]
    if keep is not None:
        label, tool = {"wifi": ("Wi-Fi", "settings.set_wifi"), "bluetooth": ("Bluetooth", "settings.set_bluetooth")}[
            keep
        ]
        goal = f"Turn on airplane mode, but I want {label} on during the flight."
        side.remove(keep)
        plan.append(call(tool, enabled=True))
        was_on = value_of(w, keep) is True
        # Airplane mode switches it off; switched back on it is unchanged, or updated if it was off.
        crit = state("settings.settings", "present" if was_on else "updated", id=keep, value=True)
        criteria.append(crit)
    plan.append(call("finish", answer="Airplane mode is on."))
    return Draft(
        goal=goal,
        criteria=criteria,
        allowed_changes=[ChangeSelector(table="settings.settings", where={"id": {"in": side}})],
        plan=plan,
        perturb_exempt=[f"{len(plan) - 1}.answer"],
    )
