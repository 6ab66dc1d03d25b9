"""Restaurants: find a place to eat and book a table.

Tables:

- ``restaurants.restaurants`` ``{"id": "rs_1", "name": "Trattoria Sole", "cuisine": "italian",
  "area": "Old Town", "rating": 4.5, "price_level": 2, "address": str, "phone": str,
  "hours": {"mon": "12:00-22:00", ..., "sun": "closed"}, "max_party": 8,
  "full": ["2026-11-05T19:00", ...]}``: the listing, its opening hours by weekday and the times
  already fully booked (fixture data; the sandbox simulates no other guests).
- ``restaurants.reservations`` ``{"id": "res_1", "restaurant_id": "rs_1", "restaurant": str,
  "time": "YYYY-MM-DDTHH:MM", "party_size": 4, "status": "confirmed" | "cancelled",
  "code": "RS1-11051930", "note": str}``.

A table can be booked on the half hour from opening until 90 minutes before closing, for a
party of at most ``max_party``, at a time that is not full and not in the past. A cancelled
reservation stays listed with status ``cancelled``.

No faithful Android path: booking apps keep listings and reservations on their servers with no
public content provider; the tools run on the sandbox only.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, check_year, format_local_time, id_key, parse_local_time
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.tools import ToolError, tool

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
LAST_SEATING = dt.timedelta(minutes=90)
"""The last table is booked this long before closing."""
STEP = dt.timedelta(minutes=30)

Party = Annotated[int, Field(ge=1, le=20, description="Number of guests, 1 to 20")]
DateArg = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="A date, YYYY-MM-DD")]


class Restaurant(TypedDict):
    """A restaurant listing."""

    id: str
    name: str
    cuisine: str
    area: str
    rating: float
    price_level: int
    address: str
    phone: str
    hours: dict[str, str]
    max_party: int
    full: list[str]


class Reservation(TypedDict):
    """A table reservation."""

    id: str
    restaurant_id: str
    restaurant: str
    time: str
    party_size: int
    status: str
    code: str
    note: str


class RestaurantList(TypedDict):
    """Search results, best rated first."""

    restaurants: list[Restaurant]
    total: int


class Availability(TypedDict):
    """Free table times on one day for one party size."""

    restaurant_id: str
    date: str
    party_size: int
    times: list[str]


class ReservationList(TypedDict):
    """Reservations, soonest first."""

    reservations: list[Reservation]


def confirmation_code(restaurant_id: str, time: str) -> str:
    """The booking code a reservation shows: the restaurant id upper-cased without ``_`` and the
    reserved month, day, hour and minute (``rs_3``, ``2026-11-05T19:30`` → ``RS3-11051930``)."""
    return f"{restaurant_id.replace('_', '').upper()}-{time[5:7]}{time[8:10]}{time[11:13]}{time[14:16]}"


def _listing(rec: dict[str, Any]) -> Restaurant:
    return {**rec, "hours": dict(rec["hours"]), "full": list(rec["full"])}  # type: ignore[typeddict-item]


class Restaurants(App):
    """A restaurant guide with table booking."""

    name = "restaurants"
    title = "Tables"
    domain = Domain.FOOD
    package = "com.example.tables"
    tables: ClassVar[dict[str, str]] = {"restaurants": "rs_", "reservations": "res_"}
    records: ClassVar[dict[str, Any]] = {"restaurants": Restaurant, "reservations": Reservation}

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "restaurants":
            return f"{record['name']} ({record['cuisine']}, {record['area']}) {record['rating']}*"
        return f"{record['restaurant']} {record['time'].replace('T', ' ')}, {record['party_size']} people ({record['status']})"

    def _rest(self, restaurant_id: str) -> dict[str, Any]:
        return self.require("restaurants", restaurant_id, "restaurant", "restaurants.search")

    def _res(self, reservation_id: str) -> dict[str, Any]:
        return self.require("reservations", reservation_id, "reservation", "restaurants.list_reservations")

    def _times(self, rest: dict[str, Any], day: dt.date, party_size: int, skip: str | None = None) -> list[str]:
        """Bookable times at ``rest`` on ``day`` for ``party_size`` (the user's own reservation
        ``skip`` does not block its own time)."""
        if party_size > rest["max_party"]:
            return []
        hours = rest["hours"].get(WEEKDAYS[day.weekday()], "closed")
        if hours == "closed":
            return []
        open_, close = (dt.time.fromisoformat(x) for x in hours.split("-"))
        t = dt.datetime.combine(day, open_)
        end = dt.datetime.combine(day, close) - LAST_SEATING
        now = self.now()
        full = set(rest["full"])
        taken = {
            r["time"]
            for r in self.t("reservations").values()
            if r["restaurant_id"] == rest["id"] and r["status"] == "confirmed" and r["id"] != skip
        }
        out = []
        while t <= end:
            text = format_local_time(t)
            if t > now and text not in full and text not in taken:
                out.append(text)
            t += STEP
        return out

    def _bookable(self, rest: dict[str, Any], time: str, party_size: int, skip: str | None = None) -> str:
        when = parse_local_time(time, "time")
        text = format_local_time(when)
        if party_size > rest["max_party"]:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"{rest['name']} seats at most {rest['max_party']} at one table",
                hint="pick another restaurant for a party this size",
                path="/party_size",
            )
        free = self._times(rest, when.date(), party_size, skip)
        if text not in free:
            raise ToolError(
                ErrorKind.CONFLICT,
                f"{rest['name']} has no table at {text.replace('T', ' ')}",
                hint="pick one of the free times" if free else "try another day or restaurant",
                path="/time",
                candidates=free[:12],
            )
        return text

    @tool()
    def search(
        self,
        query: Annotated[str, Field(max_length=100)] = "",
        cuisine: Annotated[str, Field(max_length=40)] | None = None,
        area: Annotated[str, Field(max_length=60)] | None = None,
        min_rating: Annotated[float, Field(ge=0, le=5)] | None = None,
        max_price_level: Annotated[int, Field(ge=1, le=4)] | None = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
    ) -> RestaurantList:
        """Find restaurants, best rated first.

        Args:
            query: Words of the name, cuisine or area (case-insensitive); empty for all.
            cuisine: Only this cuisine, e.g. "italian".
            area: Only this neighbourhood, e.g. "Old Town".
            min_rating: Only places rated at least this (0 to 5 stars).
            max_price_level: Only places at most this expensive (1 cheap to 4 fine dining).
            limit: Maximum number of restaurants returned.
        """
        words = query.casefold().split()
        hits = []
        for r in self.t("restaurants").values():
            text = f"{r['name']} {r['cuisine']} {r['area']}".casefold()
            if not all(w in text for w in words):
                continue
            if cuisine and r["cuisine"].casefold() != cuisine.strip().casefold():
                continue
            if area and r["area"].casefold() != area.strip().casefold():
                continue
            if min_rating is not None and r["rating"] < min_rating:
                continue
            if max_price_level is not None and r["price_level"] > max_price_level:
                continue
            hits.append(r)
        hits.sort(key=lambda r: (-r["rating"], id_key(r["id"])))
        self.show_list("restaurants", [r["id"] for r in hits[:limit]])
        return {"restaurants": [_listing(r) for r in hits[:limit]], "total": len(hits)}

    @tool()
    def get_restaurant(self, restaurant_id: str) -> Restaurant:
        """A restaurant's details: address, phone, opening hours by weekday, largest party.

        Args:
            restaurant_id: The restaurant's id, e.g. "rs_2".
        """
        rec = self._rest(restaurant_id)
        self.show_detail("restaurants", restaurant_id)
        return _listing(rec)

    @tool()
    def availability(self, restaurant_id: str, date: DateArg, party_size: Party) -> Availability:
        """The times a table for ``party_size`` is free on ``date`` (on the half hour).

        Args:
            restaurant_id: The restaurant's id, e.g. "rs_2".
            date: The day, YYYY-MM-DD.
            party_size: Number of guests.
        """
        rest = self._rest(restaurant_id)
        try:
            day = dt.date.fromisoformat(date)
        except ValueError:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"{date!r} is not a date", hint="use YYYY-MM-DD", path="/date"
            ) from None
        check_year(day, date, "date")
        return {
            "restaurant_id": restaurant_id,
            "date": date,
            "party_size": party_size,
            "times": self._times(rest, day, party_size),
        }

    @tool(effect=Effect.WRITE, writes=("reservations",))
    def reserve(
        self,
        restaurant_id: str,
        time: str,
        party_size: Party,
        note: Annotated[str, Field(max_length=200)] = "",
    ) -> Reservation:
        """Book a table.

        Args:
            restaurant_id: The restaurant's id, e.g. "rs_2".
            time: Local time, YYYY-MM-DDTHH:MM (a free time from restaurants.availability).
            party_size: Number of guests.
            note: A note for the restaurant, e.g. "a high chair, please".
        """
        rest = self._rest(restaurant_id)
        when = self._bookable(rest, time, party_size)
        rec = {
            "id": self.new_id("reservations"),
            "restaurant_id": restaurant_id,
            "restaurant": rest["name"],
            "time": when,
            "party_size": party_size,
            "status": "confirmed",
            "code": confirmation_code(restaurant_id, when),
            "note": note,
        }
        self.put("reservations", rec)
        self.show_detail("reservations", rec["id"])
        return rec  # type: ignore[return-value]

    @tool()
    def list_reservations(self, include_cancelled: bool = False) -> ReservationList:
        """The user's reservations, soonest first.

        Args:
            include_cancelled: Also list cancelled ones.
        """
        recs = [r for r in self.t("reservations").values() if include_cancelled or r["status"] == "confirmed"]
        recs.sort(key=lambda r: (r["time"], id_key(r["id"])))
        self.show_list("reservations", [r["id"] for r in recs])
        return {"reservations": [dict(r) for r in recs]}  # type: ignore[misc]

    @tool()
    def get_reservation(self, reservation_id: str) -> Reservation:
        """A reservation's confirmation: restaurant, time, party size, status and booking code.

        Args:
            reservation_id: The reservation's id, e.g. "res_1".
        """
        rec = self._res(reservation_id)
        self.show_detail("reservations", reservation_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("reservations",))
    def change_reservation(
        self, reservation_id: str, time: str | None = None, party_size: Party | None = None
    ) -> Reservation:
        """Move a reservation to another time or change the party size (the booking code
        follows the new time).

        Args:
            reservation_id: The reservation's id, e.g. "res_1".
            time: New local time, YYYY-MM-DDTHH:MM.
            party_size: New number of guests.
        """
        rec = self._res(reservation_id)
        if rec["status"] != "confirmed":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED, f"reservation {reservation_id} is {rec['status']}", hint="make a new one"
            )
        if time is None and party_size is None:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "nothing to change", hint="pass a time or a party_size")
        rest = self._rest(rec["restaurant_id"])
        when = self._bookable(rest, time or rec["time"], party_size or rec["party_size"], skip=reservation_id)
        rec = self.patch(
            "reservations",
            reservation_id,
            time=when,
            party_size=party_size or rec["party_size"],
            code=confirmation_code(rec["restaurant_id"], when),
        )
        self.show_detail("reservations", reservation_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("reservations",))
    def cancel_reservation(self, reservation_id: str) -> Reservation:
        """Cancel a reservation (it stays listed as cancelled).

        Args:
            reservation_id: The reservation's id, e.g. "res_1".
        """
        rec = self._res(reservation_id)
        if rec["status"] == "cancelled":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"reservation {reservation_id} is already cancelled",
                hint="nothing to do",
            )
        rec = self.patch("reservations", reservation_id, status="cancelled")
        self.show_detail("reservations", reservation_id)
        return rec  # type: ignore[return-value]
