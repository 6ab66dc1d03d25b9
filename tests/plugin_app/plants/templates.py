"""The plants app's own task: water one plant named by the user."""

from __future__ import annotations

from phoneenv.contract import Domain
from phoneenv.tasks.templates import Draft, call, fails, passes, replacing, state, template
from phoneenv.tasks.world import World

KINDS = [("fern", "bathroom"), ("basil", "kitchen"), ("monstera", "living room"), ("cactus", "bedroom")]


@template("plants.water", apps=["plants"], domain=Domain.DEVICE, count=4)
def water(w: World) -> Draft:
    """Template ``plants.water``, e.g. "Water the basil in the kitchen."."""
    rng = w.stream("plants")
    rows = w.table("plants.plants")
    for name, room in KINDS:
        rows.append(
            {
                "id": f"pl_{len(rows) + 1}",
                "name": name,
                "room": room,
                "watered": f"2026-10-{rng.randrange(1, 28):02d}T08:00:00",
            }
        )
    plant = rows[w.index % len(rows)]
    plan = [
        call("plants.search", query=plant["name"]),
        call("plants.water", plant_id=plant["id"]),
        call("finish", answer=f"Watered the {plant['name']}."),
    ]
    other = rows[(w.index + 1) % len(rows)]
    return Draft(
        goal=f"Water the {plant['name']} in the {plant['room']}.",
        criteria=[state("plants.plants", "updated", id=plant["id"])],
        plan=plan,
        probes=[
            passes("found by room", replacing(plan, 0, call("plants.search", query=plant["room"]))),
            fails("the wrong plant", replacing(plan, 1, call("plants.water", plant_id=other["id"]))),
        ],
    )
