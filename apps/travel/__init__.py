"""Travel: flights, trains and hotels searched from the app's inventory, booked, checked in and
cancelled; confirmations and boarding passes arrive in the mail.

Tables (the inventory is seeded by a task and never changes; bookings are the user's):

- ``travel.flights`` and ``travel.trains``: one departure each, ``{"id": "fl_1", "carrier": str,
  "number": "SK 204", "origin": "Berlin", "origin_code": "BER", "origin_tz": "Europe/Berlin",
  "destination": "London", "destination_code": "LHR", "destination_tz": "Europe/London",
  "departs": "YYYY-MM-DDTHH:MM", "arrives": "YYYY-MM-DDTHH:MM", "price": float, "currency": str}``.
  ``departs`` is local time at the origin and ``arrives`` local time at the destination (each in
  its own IANA zone), as on a ticket; train codes are station names ("Berlin Hbf").
- ``travel.hotels``: ``{"id": "ht_1", "name", "city", "timezone", "address", "price_per_night",
  "currency", "rating" (0-5), "check_in_time": "15:00", "check_out_time": "11:00"}``.
- ``travel.bookings``: ``{"id": "bk_1", "kind": "flight" | "train" | "hotel", "item": "fl_1",
  "title": str, "passengers": int, "nights": int | None, "start": local, "start_tz": zone,
  "end": local, "end_tz": zone, "total": float, "currency": str, "status": "confirmed" |
  "cancelled", "code": str, "booked": local phone time, "seat": str | None, "checked_in": bool}``.

Booking, checking in and cancelling each put a mail from the carrier or hotel into the inbox
(``mail.messages``), addressed to the mail account: the confirmation, the boarding pass, the
cancellation. Online check-in opens 30 hours before a flight departs and closes 45 minutes
before. A booking cancelled more than 24 hours before it starts is refunded in full, later ones
not at all.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import zoneinfo
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, check_year, format_local_time, id_key
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import AndroidDriver
from phoneenv.tools import ToolError, tool

DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
Date = Annotated[str, Field(pattern=DATE_PATTERN, description="Date YYYY-MM-DD")]
Place = Annotated[str, Field(min_length=2, max_length=80, description='A city, airport code or station, e.g. "Berlin"')]
Money = Annotated[float, Field(gt=0, le=1_000_000)]
Seat = Annotated[str, Field(pattern=r"^([1-9]|[1-3]\d)[A-F]$", description='Seat row 1-39 and letter A-F, e.g. "14C"')]
CHECK_IN_OPENS = dt.timedelta(hours=30)
CHECK_IN_CLOSES = dt.timedelta(minutes=45)
FREE_CANCEL = dt.timedelta(hours=24)
BOARDING_BEFORE = dt.timedelta(minutes=40)


class Connection(TypedDict):
    """A flight or train departure as stored (times local at each end)."""

    id: str
    carrier: str
    number: str
    origin: str
    origin_code: str
    origin_tz: str
    destination: str
    destination_code: str
    destination_tz: str
    departs: str
    arrives: str
    price: float
    currency: str


class Hotel(TypedDict):
    """A hotel as stored; ``price_per_night`` in ``currency``."""

    id: str
    name: str
    city: str
    timezone: str
    address: str
    price_per_night: float
    currency: str
    rating: float
    check_in_time: str
    check_out_time: str


class Booking(TypedDict):
    """A booking as stored (``start``/``end`` local in ``start_tz``/``end_tz``)."""

    id: str
    kind: Literal["flight", "train", "hotel"]
    item: str
    title: str
    passengers: int
    nights: int | None
    start: str
    start_tz: str
    end: str
    end_tz: str
    total: float
    currency: str
    status: Literal["confirmed", "cancelled"]
    code: str
    booked: str
    seat: str | None
    checked_in: bool


class Departure(TypedDict):
    """A flight or train as the user reads it: each time local, with its zone and UTC offset;
    ``duration_minutes`` is the real time between them."""

    id: str
    carrier: str
    number: str
    origin: str
    origin_code: str
    destination: str
    destination_code: str
    departs: str
    departs_timezone: str
    departs_utc_offset: str
    arrives: str
    arrives_timezone: str
    arrives_utc_offset: str
    duration_minutes: int
    price: float
    currency: str


class DepartureList(TypedDict):
    """Departures found, in the order asked for."""

    results: list[Departure]
    total: int


class HotelOffer(TypedDict):
    """A hotel with the price of the stay asked about."""

    id: str
    name: str
    city: str
    address: str
    rating: float
    price_per_night: float
    nights: int
    total: float
    currency: str
    check_in: str
    check_out: str
    timezone: str


class HotelList(TypedDict):
    """Hotels found, in the order asked for."""

    results: list[HotelOffer]
    total: int


class BookingView(Booking):
    """A booking with the UTC offsets of its local times."""

    start_utc_offset: str
    end_utc_offset: str


class BookingList(TypedDict):
    """Bookings, soonest first."""

    bookings: list[BookingView]
    total: int


class Cancelled(BookingView):
    """A cancelled booking and what is refunded."""

    refund: float


class Station(TypedDict):
    """An airport or station served by the app's inventory."""

    code: str
    city: str
    kind: Literal["airport", "station"]
    timezone: str


class StationList(TypedDict):
    """Airports and stations matching a query."""

    places: list[Station]


def _offset(moment: dt.datetime) -> str:
    minutes = int((moment.utcoffset() or dt.timedelta()).total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def aware(local: str, zone: str) -> dt.datetime:
    """The moment a local ``YYYY-MM-DDTHH:MM`` time in IANA ``zone`` names (zone-aware)."""
    return dt.datetime.fromisoformat(local).replace(tzinfo=zoneinfo.ZoneInfo(zone))


def _date(value: str, arg: str) -> dt.date:
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS, f"{value!r} is not a valid date", hint="use YYYY-MM-DD", path=f"/{arg}"
        ) from None
    check_year(day, value, arg)
    return day


def _words(local: str) -> str:
    return local.replace("T", " ")


class Travel(App):
    """A travel app for flights, trains and hotels."""

    name = "travel"
    title = "Trips"
    domain = Domain.TRAVEL
    package = "com.example.trips"
    tables: ClassVar[dict[str, str]] = {"bookings": "bk_", "flights": "fl_", "trains": "tr_", "hotels": "ht_"}
    records: ClassVar[dict[str, Any]] = {
        "bookings": Booking,
        "flights": Connection,
        "trains": Connection,
        "hotels": Hotel,
    }
    android = AndroidDriver(
        tables={},
        tools=(),
        unavailable={
            f"travel.{t}": "a third-party travel app keeps its inventory and bookings on its own servers and in "
            "private storage: no public content provider or intent reads or books them"
            for t in (
                "search_flights",
                "search_trains",
                "search_hotels",
                "find_station",
                "book_flight",
                "book_train",
                "book_hotel",
                "list_bookings",
                "get_booking",
                "cancel_booking",
                "check_in",
            )
        },
    )

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "bookings":
            return f"{record['title']}  {_words(record['start'])}  {record['status']}"
        if table == "hotels":
            return f"{record['name']}, {record['city']}  {record['price_per_night']} {record['currency']}/night"
        return f"{record['number']} {record['origin']} → {record['destination']}  {_words(record['departs'])}"

    # -- views ----------------------------------------------------------------------------------
    @staticmethod
    def _departure(rec: dict[str, Any]) -> Departure:
        dep, arr = aware(rec["departs"], rec["origin_tz"]), aware(rec["arrives"], rec["destination_tz"])
        return {
            "id": rec["id"],
            "carrier": rec["carrier"],
            "number": rec["number"],
            "origin": rec["origin"],
            "origin_code": rec["origin_code"],
            "destination": rec["destination"],
            "destination_code": rec["destination_code"],
            "departs": rec["departs"],
            "departs_timezone": rec["origin_tz"],
            "departs_utc_offset": _offset(dep),
            "arrives": rec["arrives"],
            "arrives_timezone": rec["destination_tz"],
            "arrives_utc_offset": _offset(arr),
            "duration_minutes": int((arr - dep).total_seconds() // 60),
            "price": rec["price"],
            "currency": rec["currency"],
        }

    @staticmethod
    def _booking(rec: dict[str, Any]) -> BookingView:
        return {
            **rec,  # type: ignore[typeddict-item]
            "start_utc_offset": _offset(aware(rec["start"], rec["start_tz"])),
            "end_utc_offset": _offset(aware(rec["end"], rec["end_tz"])),
        }

    def _now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.phone.state.meta["now"], dt.timezone.utc)

    # -- search ---------------------------------------------------------------------------------
    def _matches(self, rec: dict[str, Any], side: str, query: str) -> bool:
        q = query.strip().casefold()
        return q in (rec[side].casefold(), rec[f"{side}_code"].casefold()) or rec[f"{side}_code"].casefold().startswith(
            q + " "
        )

    def _known(self, table: str, side: str, query: str) -> None:
        if not any(self._matches(r, side, query) for r in self.t(table).values()):
            names = sorted(
                {r[side] for r in self.t(table).values()} | {r[f"{side}_code"] for r in self.t(table).values()}
            )
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no {'flights' if table == 'flights' else 'trains'} {'from' if side == 'origin' else 'to'} {query!r}",
                hint="call travel.find_station to see the cities, airports and stations served",
                candidates=names[:10],
                path=f"/{side}",
            )

    def _search(
        self, table: str, origin: str, destination: str, date: str, max_price: float | None, sort: str
    ) -> DepartureList:
        day = _date(date, "date").isoformat()
        self._known(table, "origin", origin)
        self._known(table, "destination", destination)
        hits = [
            r
            for r in self.t(table).values()
            if self._matches(r, "origin", origin)
            and self._matches(r, "destination", destination)
            and r["departs"][:10] == day
            and (max_price is None or r["price"] <= max_price)
        ]
        views = [self._departure(r) for r in hits]
        keys = {
            "departure": lambda v: (v["departs"], id_key(v["id"])),
            "price": lambda v: (v["price"], v["departs"], id_key(v["id"])),
            "duration": lambda v: (v["duration_minutes"], v["departs"], id_key(v["id"])),
        }
        views.sort(key=keys[sort])
        self.show_list(table, [v["id"] for v in views])
        return {"results": views, "total": len(views)}

    @tool()
    def search_flights(
        self,
        origin: Place,
        destination: Place,
        date: Date,
        max_price: Money | None = None,
        sort: Literal["departure", "price", "duration"] = "departure",
    ) -> DepartureList:
        """Find direct flights on a day. Times are local at each airport, with the zone.

        Args:
            origin: Where from: a city ("Berlin") or airport code ("BER").
            destination: Where to: a city or airport code.
            date: The day of departure (local at the origin), YYYY-MM-DD.
            max_price: Only flights costing at most this much per passenger.
            sort: "departure" (earliest first), "price" (cheapest first) or "duration" (shortest first).
        """
        return self._search("flights", origin, destination, date, max_price, sort)

    @tool()
    def search_trains(
        self,
        origin: Place,
        destination: Place,
        date: Date,
        max_price: Money | None = None,
        sort: Literal["departure", "price", "duration"] = "departure",
    ) -> DepartureList:
        """Find direct trains on a day. Times are local at each station, with the zone.

        Args:
            origin: Where from: a city ("Hamburg") or station ("Hamburg Hbf").
            destination: Where to: a city or station.
            date: The day of departure, YYYY-MM-DD.
            max_price: Only trains costing at most this much per passenger.
            sort: "departure" (earliest first), "price" (cheapest first) or "duration" (shortest first).
        """
        return self._search("trains", origin, destination, date, max_price, sort)

    @tool()
    def search_hotels(
        self,
        city: Place,
        check_in: Date,
        nights: Annotated[int, Field(ge=1, le=30)],
        max_price_per_night: Money | None = None,
        min_rating: Annotated[float, Field(ge=0, le=5)] | None = None,
        sort: Literal["price", "rating"] = "price",
    ) -> HotelList:
        """Find hotels in a city for a stay, with the total price of the stay.

        Args:
            city: The city, e.g. "Lisbon".
            check_in: Arrival day, YYYY-MM-DD.
            nights: How many nights, 1 to 30.
            max_price_per_night: Only hotels costing at most this much a night.
            min_rating: Only hotels rated at least this (0 to 5).
            sort: "price" (cheapest first) or "rating" (best first).
        """
        start = _date(check_in, "check_in")
        want = city.strip().casefold()
        pool = [r for r in self.t("hotels").values() if r["city"].casefold() == want]
        if not pool:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no hotels in {city!r}",
                candidates=sorted({r["city"] for r in self.t("hotels").values()})[:10],
                path="/city",
            )
        hits = [
            r
            for r in pool
            if (max_price_per_night is None or r["price_per_night"] <= max_price_per_night)
            and (min_rating is None or r["rating"] >= min_rating)
        ]
        if sort == "price":
            hits.sort(key=lambda r: (r["price_per_night"], -r["rating"], id_key(r["id"])))
        else:
            hits.sort(key=lambda r: (-r["rating"], r["price_per_night"], id_key(r["id"])))
        self.show_list("hotels", [r["id"] for r in hits])
        return {"results": [self._offer(r, start, nights) for r in hits], "total": len(hits)}

    @staticmethod
    def _offer(rec: dict[str, Any], start: dt.date, nights: int) -> HotelOffer:
        end = start + dt.timedelta(days=nights)
        return {
            "id": rec["id"],
            "name": rec["name"],
            "city": rec["city"],
            "address": rec["address"],
            "rating": rec["rating"],
            "price_per_night": rec["price_per_night"],
            "nights": nights,
            "total": round(rec["price_per_night"] * nights, 2),
            "currency": rec["currency"],
            "check_in": f"{start.isoformat()}T{rec['check_in_time']}",
            "check_out": f"{end.isoformat()}T{rec['check_out_time']}",
            "timezone": rec["timezone"],
        }

    @tool()
    def find_station(self, query: Annotated[str, Field(min_length=1, max_length=80)]) -> StationList:
        """Find the airports and train stations the app serves whose city or code contains the
        query (case-insensitive).

        Args:
            query: Part of a city name or code, e.g. "lon" or "Hbf".
        """
        q = query.strip().casefold()
        seen: dict[str, Station] = {}
        for table, kind in (("flights", "airport"), ("trains", "station")):
            for r in self.t(table).values():
                for side in ("origin", "destination"):
                    code, city = r[f"{side}_code"], r[side]
                    if q in code.casefold() or q in city.casefold():
                        seen[code] = {"code": code, "city": city, "kind": kind, "timezone": r[f"{side}_tz"]}  # type: ignore[typeddict-item]
        return {"places": sorted(seen.values(), key=lambda s: (s["city"], s["code"]))}

    # -- booking --------------------------------------------------------------------------------
    def _code(self, rid: str, item: str) -> str:
        digest = hashlib.sha256(f"{rid}/{item}/{self.phone.state.meta['now']}".encode()).digest()
        letters = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        return "".join(letters[b % len(letters)] for b in digest[:6])

    def _mail(self, sender: str, subject: str, body: str) -> None:
        """Put a mail from ``sender`` into the inbox of the phone's mail app (when installed)."""
        if "mail" not in self.phone.apps:
            return
        account = self.phone.state.get("system.accounts", "mail")
        to = (account["account"],) if account and account.get("account") else ()
        self.phone.state.insert(
            "mail.messages",
            {
                "id": self.phone.state.new_id("mail.messages", "em_"),
                "folder": "inbox",
                "from": sender,
                "to": to,
                "subject": subject[:200],
                "body": body,
                "time": self.now_str(),
                "read": False,
            },
        )

    @staticmethod
    def _sender(company: str) -> str:
        return f"bookings@{re.sub(r'[^a-z0-9]+', '', company.casefold())}.example.com"

    def _company(self, booking: dict[str, Any]) -> str:
        """The carrier or hotel of a booking (its title when the inventory no longer lists it)."""
        table = {"flight": "flights", "train": "trains", "hotel": "hotels"}[booking["kind"]]
        item = self.t(table).get(booking["item"])
        if item is None:
            return booking["title"]
        return item["name"] if booking["kind"] == "hotel" else item["carrier"]

    def _started(self, local: str, zone: str) -> bool:
        return aware(local, zone) <= self._now()

    def _book_connection(self, table: str, kind: str, item_id: str, passengers: int) -> BookingView:
        finder = f"travel.search_{table}"
        rec = self.require(table, item_id, kind, finder)
        if self._started(rec["departs"], rec["origin_tz"]):
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"{kind} {rec['number']} already left at {_words(rec['departs'])} ({rec['origin_tz']})",
                hint=f"call {finder} for a later one",
            )
        rid = self.new_id("bookings")
        title = f"{rec['number']} {rec['origin']} → {rec['destination']}"
        booking = {
            "id": rid,
            "kind": kind,
            "item": item_id,
            "title": title,
            "passengers": passengers,
            "nights": None,
            "start": rec["departs"],
            "start_tz": rec["origin_tz"],
            "end": rec["arrives"],
            "end_tz": rec["destination_tz"],
            "total": round(rec["price"] * passengers, 2),
            "currency": rec["currency"],
            "status": "confirmed",
            "code": self._code(rid, item_id),
            "booked": self.now_str(),
            "seat": None,
            "checked_in": False,
        }
        self.put("bookings", booking)
        view = self._booking(booking)
        self._mail(
            self._sender(rec["carrier"]),
            f"Booking confirmed: {title}, {rec['departs'][:10]}",
            f"{rec['carrier']} {kind} {rec['number']}\n"
            f"Departs {rec['origin']} ({rec['origin_code']}) {_words(rec['departs'])} "
            f"{rec['origin_tz']} (UTC{view['start_utc_offset']})\n"
            f"Arrives {rec['destination']} ({rec['destination_code']}) {_words(rec['arrives'])} "
            f"{rec['destination_tz']} (UTC{view['end_utc_offset']})\n"
            f"Passengers: {passengers}\nTotal: {booking['total']:.2f} {rec['currency']}\nBooking code: {booking['code']}",
        )
        self.show_detail("bookings", rid)
        return view

    @tool(effect=Effect.SENSITIVE, writes=("mail.messages", "bookings"))
    def book_flight(self, flight_id: str, passengers: Annotated[int, Field(ge=1, le=9)] = 1) -> BookingView:
        """Book and pay for seats on a flight; the confirmation arrives by mail.

        Args:
            flight_id: The flight's id from travel.search_flights, e.g. "fl_3".
            passengers: How many people travel, 1 to 9 (the price is per passenger).
        """
        return self._book_connection("flights", "flight", flight_id, passengers)

    @tool(effect=Effect.SENSITIVE, writes=("mail.messages", "bookings"))
    def book_train(self, train_id: str, passengers: Annotated[int, Field(ge=1, le=9)] = 1) -> BookingView:
        """Book and pay for tickets on a train; the confirmation arrives by mail.

        Args:
            train_id: The train's id from travel.search_trains, e.g. "tr_2".
            passengers: How many people travel, 1 to 9 (the price is per passenger).
        """
        return self._book_connection("trains", "train", train_id, passengers)

    @tool(effect=Effect.SENSITIVE, writes=("mail.messages", "bookings"))
    def book_hotel(
        self,
        hotel_id: str,
        check_in: Date,
        nights: Annotated[int, Field(ge=1, le=30)],
        guests: Annotated[int, Field(ge=1, le=6)] = 1,
    ) -> BookingView:
        """Book and pay for a hotel room; the confirmation arrives by mail.

        Args:
            hotel_id: The hotel's id from travel.search_hotels, e.g. "ht_4".
            check_in: Arrival day, YYYY-MM-DD.
            nights: How many nights, 1 to 30.
            guests: How many people stay in the room, 1 to 6 (the price is per room and night).
        """
        rec = self.require("hotels", hotel_id, "hotel", "travel.search_hotels")
        offer = self._offer(rec, _date(check_in, "check_in"), nights)
        if self._started(offer["check_in"], rec["timezone"]):
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"check-in on {check_in} at {rec['check_in_time']} is in the past",
                hint="pick a later arrival day",
                path="/check_in",
            )
        rid = self.new_id("bookings")
        booking = {
            "id": rid,
            "kind": "hotel",
            "item": hotel_id,
            "title": f"{rec['name']}, {rec['city']}",
            "passengers": guests,
            "nights": nights,
            "start": offer["check_in"],
            "start_tz": rec["timezone"],
            "end": offer["check_out"],
            "end_tz": rec["timezone"],
            "total": offer["total"],
            "currency": rec["currency"],
            "status": "confirmed",
            "code": self._code(rid, hotel_id),
            "booked": self.now_str(),
            "seat": None,
            "checked_in": False,
        }
        self.put("bookings", booking)
        self._mail(
            self._sender(rec["name"]),
            f"Reservation confirmed: {rec['name']}, {check_in}",
            f"{rec['name']}, {rec['address']}\nCheck-in {_words(offer['check_in'])} ({rec['timezone']})\n"
            f"Check-out {_words(offer['check_out'])} ({rec['timezone']})\nNights: {nights}, guests: {guests}\n"
            f"Total: {offer['total']:.2f} {rec['currency']}\nConfirmation code: {booking['code']}",
        )
        self.show_detail("bookings", rid)
        return self._booking(booking)

    # -- bookings -------------------------------------------------------------------------------
    @tool()
    def list_bookings(
        self,
        status: Literal["confirmed", "cancelled"] | None = None,
        kind: Literal["flight", "train", "hotel"] | None = None,
    ) -> BookingList:
        """List the user's bookings, soonest start first (by the real moment, whatever the zone).

        Args:
            status: Only "confirmed" or only "cancelled" bookings; all by default.
            kind: Only flights, trains or hotels; all by default.
        """
        recs = [
            r
            for r in self.t("bookings").values()
            if (status is None or r["status"] == status) and (kind is None or r["kind"] == kind)
        ]
        recs.sort(key=lambda r: (aware(r["start"], r["start_tz"]), id_key(r["id"])))
        self.show_list("bookings", [r["id"] for r in recs])
        return {"bookings": [self._booking(r) for r in recs], "total": len(recs)}

    @tool()
    def get_booking(self, booking_id: str) -> BookingView:
        """Open one booking.

        Args:
            booking_id: The booking's id, e.g. "bk_2".
        """
        rec = self.require("bookings", booking_id, "booking", "travel.list_bookings")
        self.show_detail("bookings", booking_id)
        return self._booking(rec)

    @tool(effect=Effect.SENSITIVE, writes=("mail.messages", "bookings"))
    def cancel_booking(self, booking_id: str) -> Cancelled:
        """Cancel a booking. Cancelled more than 24 hours before it starts, it is refunded in
        full; later, nothing is refunded. A cancellation mail follows.

        Args:
            booking_id: The booking's id, e.g. "bk_2".
        """
        rec = self.require("bookings", booking_id, "booking", "travel.list_bookings")
        if rec["status"] == "cancelled":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED, f"booking {booking_id} is already cancelled", hint="nothing to do"
            )
        start = aware(rec["start"], rec["start_tz"])
        if start <= self._now():
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"booking {booking_id} started at {_words(rec['start'])} ({rec['start_tz']}); it cannot be cancelled",
                hint="only future bookings can be cancelled",
            )
        refund = rec["total"] if start - self._now() > FREE_CANCEL else 0.0
        rec = self.patch("bookings", booking_id, status="cancelled")
        self._mail(
            self._sender(self._company(rec)),
            f"Cancelled: {rec['title']}",
            f"Your booking {rec['code']} ({rec['title']}, {_words(rec['start'])} {rec['start_tz']}) is cancelled.\n"
            f"Refund: {refund:.2f} {rec['currency']}",
        )
        self.show_detail("bookings", booking_id)
        return {**self._booking(rec), "refund": refund}

    @tool(effect=Effect.WRITE, writes=("mail.messages", "bookings"))
    def check_in(self, booking_id: str, seat: Seat) -> BookingView:
        """Check in online for a booked flight and pick a seat; the boarding pass arrives by
        mail. Check-in opens 30 hours before departure and closes 45 minutes before. Seats
        A and F are by the window, C and D on the aisle.

        Args:
            booking_id: The flight booking's id, e.g. "bk_1".
            seat: The seat, row 1-39 and letter A-F, e.g. "14C".
        """
        rec = self.require("bookings", booking_id, "booking", "travel.list_bookings")
        if rec["kind"] != "flight":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"booking {booking_id} is a {rec['kind']}, not a flight",
                path="/booking_id",
            )
        if rec["status"] != "confirmed":
            raise ToolError(ErrorKind.PRECONDITION_FAILED, f"booking {booking_id} is cancelled")
        if rec["checked_in"]:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"booking {booking_id} is already checked in (seat {rec['seat']})",
                hint="the boarding pass is in the mail",
            )
        departs = aware(rec["start"], rec["start_tz"])
        now = self._now()
        if now < departs - CHECK_IN_OPENS:
            opens = (departs - CHECK_IN_OPENS).astimezone(zoneinfo.ZoneInfo(rec["start_tz"]))
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"check-in opens 30 hours before departure, at {format_local_time(opens.replace(tzinfo=None)).replace('T', ' ')} "
                f"({rec['start_tz']})",
                hint="check in later",
            )
        if now > departs - CHECK_IN_CLOSES:
            raise ToolError(ErrorKind.PRECONDITION_FAILED, "check-in closed 45 minutes before departure")
        rec = self.patch("bookings", booking_id, seat=seat, checked_in=True)
        boarding = (departs - BOARDING_BEFORE).replace(tzinfo=None)
        self._mail(
            self._sender(self._company(rec)),
            f"Boarding pass: {rec['title']}, seat {seat}",
            f"Boarding pass for {rec['title']}\nDeparts {_words(rec['start'])} ({rec['start_tz']})\n"
            f"Boarding from {format_local_time(boarding)[11:]}\nSeat {seat}\nBooking code: {rec['code']}",
        )
        self.show_detail("bookings", booking_id)
        return self._booking(rec)
