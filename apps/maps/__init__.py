"""Maps: saved places, place search, travel times and routes, and sharing the phone's location.

Tables:

- ``maps.places``: the user's saved places, ``{"id": "pl_1", "label": "Home", "address": str,
  "lat": float, "lon": float}``; labels are unique (case-insensitive).
- ``maps.pois``: the map data a task seeds, ``{"id": "poi_1", "name": str, "category": str,
  "address": str, "lat": float, "lon": float}``; it never changes.
- ``maps.shares``: location shares, ``{"id": "sh_1", "to": str (a phone number or e-mail),
  "lat": float, "lon": float, "started": local time, "until": local time}``.

Travel times come from the map data's coordinates: the great-circle distance (haversine, Earth
radius 6371 km) times 1.3 for the street network, rounded to 0.1 km, at a steady speed per mode
(walk 5 km/h, bike 15 km/h, drive 30 km/h plus 5 minutes to park, transit 20 km/h plus 8
minutes of walking and waiting), rounded up to whole minutes. ``"here"`` names the phone's
current location and needs the location permission, as sharing it does.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import TIME_PATTERN, App, Deleted, format_local_time, id_key, parse_local_time
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import AndroidDriver
from phoneenv.tools import ToolError, tool

LOCATION = "android.permission.ACCESS_FINE_LOCATION"
EARTH_KM = 6371.0
DETOUR = 1.3
Mode = Literal["drive", "transit", "walk", "bike"]
MODES: tuple[str, ...] = ("drive", "transit", "walk", "bike")
SPEED_KMH = {"drive": 30.0, "transit": 20.0, "walk": 5.0, "bike": 15.0}
OVERHEAD_MIN = {"drive": 5, "transit": 8, "walk": 0, "bike": 0}
Label = Annotated[str, Field(min_length=1, max_length=40)]
PlaceRef = Annotated[
    str, Field(min_length=1, max_length=40, description='A saved place id ("pl_1"), a map place id ("poi_3") or "here"')
]
LocalTime = Annotated[str, Field(pattern=TIME_PATTERN, description="Local time YYYY-MM-DDTHH:MM")]


class SavedPlace(TypedDict):
    """A saved place."""

    id: str
    label: str
    address: str
    lat: float
    lon: float


class Poi(TypedDict):
    """A place on the map."""

    id: str
    name: str
    category: str
    address: str
    lat: float
    lon: float


class Share(TypedDict):
    """A live location share."""

    id: str
    to: str
    lat: float
    lon: float
    started: str
    until: str


class PlaceList(TypedDict):
    """Saved places, by label."""

    places: list[SavedPlace]
    total: int


class Found(Poi):
    """A map place with its distance (km, straight line) from the phone."""

    distance_km: float


class FoundList(TypedDict):
    """Map places found, nearest first."""

    results: list[Found]
    total: int


class Leg(TypedDict):
    """Minutes and road distance by one mode."""

    mode: str
    minutes: int
    distance_km: float


class TravelTimes(TypedDict):
    """How long from one place to another by every mode."""

    origin: str
    destination: str
    times: list[Leg]


class Route(TypedDict):
    """A trip by one mode with its local departure and arrival times."""

    origin: str
    destination: str
    mode: str
    minutes: int
    distance_km: float
    depart: str
    arrive: str


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in km between two WGS84 points (Earth radius 6371 km)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_KM * math.asin(math.sqrt(a))


def road_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Street distance in km (great circle × 1.3), rounded to 0.1 km."""
    return round(haversine_km(lat1, lon1, lat2, lon2) * DETOUR, 1)


def minutes_by(mode: str, km: float) -> int:
    """Whole minutes (rounded up) to cover ``km`` of street by ``mode``, overhead included."""
    return math.ceil(km / SPEED_KMH[mode] * 60 - 1e-9) + OVERHEAD_MIN[mode]


class Maps(App):
    """Maps and places."""

    name = "maps"
    title = "Maps"
    domain = Domain.TRAVEL
    package = "com.google.android.apps.maps"
    permissions = (LOCATION,)
    tables: ClassVar[dict[str, str]] = {"places": "pl_", "pois": "poi_", "shares": "sh_"}
    records: ClassVar[dict[str, Any]] = {"places": SavedPlace, "pois": Poi, "shares": Share}
    android = AndroidDriver(
        tables={},
        tools=(),
        unavailable={
            f"maps.{t}": "Google Maps keeps saved places, map data and location shares in the user's account "
            "and private storage: no public content provider reads or writes them, and geo: intents only open the UI"
            for t in (
                "list_places",
                "get_place",
                "save_place",
                "rename_place",
                "delete_place",
                "search",
                "travel_time",
                "route",
                "share_location",
            )
        },
    )

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "places":
            return f"{record['label']}  {record['address']}"
        if table == "shares":
            return f"sharing with {record['to']} until {record['until'].replace('T', ' ')}"
        return f"{record['name']} ({record['category']})  {record['address']}"

    # -- helpers --------------------------------------------------------------------------------
    def _here(self) -> tuple[float, float]:
        if not self.phone.permission_granted(self.name, LOCATION):
            raise ToolError(
                ErrorKind.PERMISSION_DENIED,
                "maps may not read the phone's location",
                hint=f"call system.request_permission with app='maps' and permission='{LOCATION}'",
            )
        loc = self.phone.fixtures.location
        return float(loc["lat"]), float(loc["lon"])

    def _point(self, ref: str, arg: str) -> tuple[str, float, float]:
        """(name, lat, lon) of a place reference."""
        ref = ref.strip()
        if ref.casefold() == "here":
            lat, lon = self._here()
            return "your location", lat, lon
        for table, key in (("places", "label"), ("pois", "name")):
            rec = self.t(table).get(ref)
            if rec is not None:
                return rec[key], rec["lat"], rec["lon"]
        raise ToolError(
            ErrorKind.NOT_FOUND,
            f"no place with id {ref!r}",
            hint='use a saved place id from maps.list_places, a map place id from maps.search, or "here"',
            path=f"/{arg}",
        )

    def _label_taken(self, label: str, skip: str | None = None) -> None:
        for r in self.t("places").values():
            if r["id"] != skip and r["label"].casefold() == label.casefold():
                raise ToolError(
                    ErrorKind.CONFLICT,
                    f"a saved place is already labelled {r['label']!r} ({r['id']})",
                    hint="rename or delete that place first, or choose another label",
                    path="/label",
                )

    # -- saved places ---------------------------------------------------------------------------
    @tool()
    def list_places(self) -> PlaceList:
        """List the user's saved places (home, work, ...) by label."""
        recs = sorted(self.t("places").values(), key=lambda r: (r["label"].casefold(), id_key(r["id"])))
        self.show_list("places", [r["id"] for r in recs])
        return {"places": [dict(r) for r in recs], "total": len(recs)}  # type: ignore[misc]

    @tool()
    def get_place(self, place_id: str) -> Poi | SavedPlace:
        """Open a saved place or a map place.

        Args:
            place_id: A saved place id ("pl_2") or a map place id ("poi_5").
        """
        for table in ("places", "pois"):
            rec = self.t(table).get(place_id)
            if rec is not None:
                self.show_detail(table, place_id)
                return dict(rec)  # type: ignore[return-value]
        raise ToolError(
            ErrorKind.NOT_FOUND, f"no place with id {place_id!r}", hint="call maps.list_places or maps.search"
        )

    @tool(effect=Effect.WRITE, writes=("places",))
    def save_place(self, label: Label, place_id: str) -> SavedPlace:
        """Save a map place under a label of the user's choice ("Home", "Work", "Gym").

        Args:
            label: The label, unique among saved places.
            place_id: The map place to save, from maps.search ("poi_3").
        """
        label = label.strip()
        poi = self.require("pois", place_id, "map place", "maps.search")
        self._label_taken(label)
        rec = {
            "id": self.new_id("places"),
            "label": label,
            "address": poi["address"],
            "lat": poi["lat"],
            "lon": poi["lon"],
        }
        self.put("places", rec)
        self.show_detail("places", rec["id"])
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("places",))
    def rename_place(self, place_id: str, label: Label) -> SavedPlace:
        """Give a saved place another label.

        Args:
            place_id: The saved place's id, e.g. "pl_2".
            label: The new label, unique among saved places.
        """
        self.require("places", place_id, "saved place", "maps.list_places")
        label = label.strip()
        self._label_taken(label, skip=place_id)
        rec = self.patch("places", place_id, label=label)
        self.show_detail("places", place_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.SENSITIVE, writes=("places",))
    def delete_place(self, place_id: str) -> Deleted:
        """Delete a saved place.

        Args:
            place_id: The saved place's id, e.g. "pl_2".
        """
        self.require("places", place_id, "saved place", "maps.list_places")
        self.remove("places", place_id)
        self.show_list("places", sorted(self.t("places"), key=id_key))
        return {"deleted": place_id}

    # -- map data -------------------------------------------------------------------------------
    @tool()
    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=100)],
        category: Annotated[str, Field(min_length=1, max_length=40)] | None = None,
        limit: Annotated[int, Field(ge=1, le=20)] = 10,
    ) -> FoundList:
        """Find places on the map whose name, category or address contains the query
        (case-insensitive), nearest to the phone's home location first.

        Args:
            query: What to look for, e.g. "pharmacy" or "Cafe Luna".
            category: Only this category, e.g. "restaurant", "station", "pharmacy".
            limit: At most this many results.
        """
        q = query.strip().casefold()
        loc = self.phone.fixtures.location
        hits = []
        for r in self.t("pois").values():
            text = f"{r['name']}\n{r['category']}\n{r['address']}".casefold()
            if q in text and (category is None or r["category"].casefold() == category.strip().casefold()):
                km = round(haversine_km(loc["lat"], loc["lon"], r["lat"], r["lon"]), 1)
                hits.append({**r, "distance_km": km})
        hits.sort(key=lambda r: (r["distance_km"], id_key(r["id"])))
        page = hits[:limit]
        self.show_list("pois", [r["id"] for r in page])
        return {"results": page, "total": len(hits)}  # type: ignore[typeddict-item]

    @tool()
    def travel_time(self, origin: PlaceRef, destination: PlaceRef) -> TravelTimes:
        """How long it takes from one place to another by car, transit, on foot and by bike.

        Args:
            origin: Where from: a saved place id, a map place id or "here".
            destination: Where to: a saved place id, a map place id or "here".
        """
        a, lat1, lon1 = self._point(origin, "origin")
        b, lat2, lon2 = self._point(destination, "destination")
        km = road_km(lat1, lon1, lat2, lon2)
        return {
            "origin": a,
            "destination": b,
            "times": [{"mode": m, "minutes": minutes_by(m, km), "distance_km": km} for m in MODES],
        }

    @tool()
    def route(
        self,
        origin: PlaceRef,
        destination: PlaceRef,
        mode: Mode = "drive",
        depart_at: LocalTime | None = None,
        arrive_by: LocalTime | None = None,
    ) -> Route:
        """Plan a trip by one mode: when to leave and when you arrive (phone's local time). Give
        depart_at or arrive_by, or neither to leave now.

        Args:
            origin: Where from: a saved place id, a map place id or "here".
            destination: Where to: a saved place id, a map place id or "here".
            mode: "drive", "transit", "walk" or "bike".
            depart_at: Leave at this local time, YYYY-MM-DDTHH:MM.
            arrive_by: Arrive by this local time; the answer says when to leave.
        """
        if depart_at is not None and arrive_by is not None:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "give depart_at or arrive_by, not both", path="/arrive_by")
        a, lat1, lon1 = self._point(origin, "origin")
        b, lat2, lon2 = self._point(destination, "destination")
        km = road_km(lat1, lon1, lat2, lon2)
        minutes = minutes_by(mode, km)
        trip = dt.timedelta(minutes=minutes)
        if arrive_by is not None:
            arrive = parse_local_time(arrive_by, "arrive_by")
            depart = arrive - trip
        else:
            depart = parse_local_time(depart_at, "depart_at") if depart_at is not None else self.now()
            depart = depart.replace(second=0, microsecond=0)
            arrive = depart + trip
        return {
            "origin": a,
            "destination": b,
            "mode": mode,
            "minutes": minutes,
            "distance_km": km,
            "depart": format_local_time(depart),
            "arrive": format_local_time(arrive),
        }

    # -- sharing --------------------------------------------------------------------------------
    @tool(effect=Effect.SENSITIVE, permissions=(LOCATION,), writes=("shares",))
    def share_location(
        self,
        to: Annotated[str, Field(min_length=3, max_length=254, description="A phone number or e-mail address")],
        minutes: Annotated[int, Field(ge=15, le=1440)] = 60,
    ) -> Share:
        """Share the phone's live location with someone for a while.

        Args:
            to: The person's phone number or e-mail address.
            minutes: How long to share, 15 to 1440 minutes (default 60).
        """
        lat, lon = self._here()
        now = self.now().replace(second=0, microsecond=0)
        rec = {
            "id": self.new_id("shares"),
            "to": to.strip(),
            "lat": lat,
            "lon": lon,
            "started": format_local_time(now),
            "until": format_local_time(now + dt.timedelta(minutes=minutes)),
        }
        self.put("shares", rec)
        self.show_detail("shares", rec["id"])
        return rec  # type: ignore[return-value]
