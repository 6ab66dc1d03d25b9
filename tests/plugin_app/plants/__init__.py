"""Plants: house plants and when each was last watered (an app kept as one folder, with its own
templates and skill)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App
from phoneenv.contract import Domain
from phoneenv.tools import tool


class Plant(TypedDict):
    """A house plant."""

    id: str
    name: str
    room: str
    watered: str | None


class Found(TypedDict):
    """The plants a search found."""

    plants: list[Plant]


class Plants(App):
    """A plant-care app."""

    name = "plants"
    title = "Plants"
    domain = Domain.DEVICE
    package = "org.example.plants"
    tables: ClassVar[dict[str, str]] = {"plants": "pl_"}
    records: ClassVar[dict[str, object]] = {"plants": Plant}

    def row(self, table: str, record: dict) -> str:
        return f"{record['name']} ({record['room']})"

    @tool()
    def search(self, query: Annotated[str, Field(max_length=80)] = "") -> Found:
        """Find plants by name or room.

        Args:
            query: Words of the plant's name or room; empty for every plant.
        """
        words = query.lower().split()
        hits = [p for p in self.t("plants").values() if all(w in f"{p['name']} {p['room']}".lower() for w in words)]
        self.show_list("plants", [p["id"] for p in hits])
        return {"plants": hits}  # type: ignore[typeddict-item]

    @tool(effect="write", writes=("plants",))
    def water(self, plant_id: Annotated[str, Field(max_length=32)]) -> Plant:
        """Record that a plant was watered now.

        Args:
            plant_id: The plant's id, from plants.search.
        """
        self.require("plants", plant_id, "plant", "plants.search")
        plant = self.patch("plants", plant_id, watered=self.now_str())
        self.show_detail("plants", plant_id)
        return plant  # type: ignore[return-value]
