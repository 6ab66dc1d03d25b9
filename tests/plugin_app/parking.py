"""Parking: pay for street parking by zone."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App
from phoneenv.contract import Domain
from phoneenv.tools import tool


class Ticket(TypedDict):
    """A paid parking ticket."""

    id: str
    zone: str
    minutes: int


class Parking(App):
    """A street-parking app."""

    name = "parking"
    title = "Park"
    domain = Domain.DEVICE
    package = "org.example.parking"
    tables: ClassVar[dict[str, str]] = {"tickets": "t_"}
    records: ClassVar[dict[str, object]] = {"tickets": Ticket}

    def row(self, table: str, record: dict) -> str:
        return f"zone {record['zone']}: {record['minutes']} min"

    @tool(effect="write")
    def pay(
        self, zone: Annotated[str, Field(min_length=1, max_length=8)], minutes: Annotated[int, Field(ge=15, le=480)]
    ) -> Ticket:
        """Pay for parking in a zone.

        Args:
            zone: The parking zone, e.g. 'A'.
            minutes: How long to park, 15 to 480 minutes.
        """
        ticket = self.put("tickets", {"id": self.new_id("tickets"), "zone": zone, "minutes": minutes})
        self.show_detail("tickets", ticket["id"])
        return ticket  # type: ignore[return-value]
