"""Weather: current conditions, daily forecasts and alerts per city, and the user's saved cities.

Tables (conditions, forecasts and alerts are the data a task seeds and never change):

- ``weather.locations``: saved cities, ``{"id": "wl_1", "city": "Berlin"}`` (unique by city).
- ``weather.current``: ``{"id": "wc_1", "city": str, "observed": local time, "temp_c": float,
  "feels_like_c": float, "condition": str, "humidity": int (%), "wind_kph": float}``.
- ``weather.forecast``: one row per city and day, ``{"id": "wf_1", "city": str, "date":
  "YYYY-MM-DD", "high_c": float, "low_c": float, "condition": str, "precip_chance": int (%),
  "precip_mm": float, "wind_kph": float}``.
- ``weather.alerts``: ``{"id": "wa_1", "city": str, "event": str, "severity": "minor" |
  "moderate" | "severe", "starts": local time, "ends": local time, "description": str}``.

Units follow the phone's locale: Fahrenheit and mph in a US time zone, Celsius and km/h
elsewhere (``units`` overrides). °F = °C × 9/5 + 32 and mph = km/h / 1.609344, each rounded to
a whole number; Celsius and km/h are given to one decimal as stored.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, Deleted, check_year, id_key
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.farm.android import AndroidDriver
from phoneenv.tools import ToolError, tool

City = Annotated[str, Field(min_length=2, max_length=80, description='A city name, e.g. "Lisbon"')]
Units = Literal["metric", "imperial"]
US_ZONES = frozenset(
    {
        "America/New_York",
        "America/Chicago",
        "America/Denver",
        "America/Phoenix",
        "America/Los_Angeles",
        "America/Anchorage",
        "Pacific/Honolulu",
        "America/Detroit",
    }
)
Condition = Literal["sunny", "partly cloudy", "cloudy", "rain", "showers", "thunderstorms", "snow", "fog", "windy"]


class Location(TypedDict):
    """A saved city."""

    id: str
    city: str


class Current(TypedDict):
    """Current conditions as stored (metric)."""

    id: str
    city: str
    observed: str
    temp_c: float
    feels_like_c: float
    condition: str
    humidity: int
    wind_kph: float


class Day(TypedDict):
    """One day's forecast as stored (metric)."""

    id: str
    city: str
    date: str
    high_c: float
    low_c: float
    condition: str
    precip_chance: int
    precip_mm: float
    wind_kph: float


class Alert(TypedDict):
    """A weather warning."""

    id: str
    city: str
    event: str
    severity: Literal["minor", "moderate", "severe"]
    starts: str
    ends: str
    description: str


class Now(TypedDict):
    """Current conditions in the units asked for."""

    city: str
    observed: str
    temperature: float
    feels_like: float
    condition: str
    humidity: int
    wind: float
    temperature_unit: str
    wind_unit: str


class DayView(TypedDict):
    """One forecast day in the units asked for."""

    date: str
    weekday: str
    high: float
    low: float
    condition: str
    precip_chance: int
    precip_mm: float
    wind: float


class Forecast(TypedDict):
    """A daily forecast."""

    city: str
    days: list[DayView]
    temperature_unit: str
    wind_unit: str


class AlertList(TypedDict):
    """Alerts in effect now or later, soonest first."""

    alerts: list[Alert]
    total: int


class LocationList(TypedDict):
    """Saved cities."""

    locations: list[Location]
    total: int


def to_f(celsius: float) -> float:
    """Degrees Celsius in whole degrees Fahrenheit (rounded half to even)."""
    return float(round(celsius * 9 / 5 + 32))


def to_mph(kph: float) -> float:
    """km/h in whole miles per hour."""
    return float(round(kph / 1.609344))


class Weather(App):
    """A weather app."""

    name = "weather"
    title = "Weather"
    domain = Domain.TRAVEL
    package = "com.example.weather"
    tables: ClassVar[dict[str, str]] = {"locations": "wl_", "current": "wc_", "forecast": "wf_", "alerts": "wa_"}
    records: ClassVar[dict[str, Any]] = {"locations": Location, "current": Current, "forecast": Day, "alerts": Alert}
    android = AndroidDriver(
        tables={},
        tools=(),
        unavailable={
            f"weather.{t}": "weather apps fetch forecasts from their own servers and keep saved cities in private "
            "storage: no public content provider exposes either"
            for t in ("current", "forecast", "alerts", "list_locations", "add_location", "remove_location")
        },
    )

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "forecast":
            return f"{record['city']} {record['date']}: {record['condition']}, {record['low_c']}-{record['high_c']} °C"
        if table == "alerts":
            return f"{record['severity']}: {record['event']} ({record['city']})"
        if table == "current":
            return f"{record['city']}: {record['temp_c']} °C, {record['condition']}"
        return record["city"]

    # -- helpers --------------------------------------------------------------------------------
    def _units(self, units: Units | None) -> Units:
        if units is not None:
            return units
        return "imperial" if self.phone.fixtures.timezone in US_ZONES else "metric"

    def _cities(self) -> list[str]:
        return sorted({r["city"] for t in ("current", "forecast") for r in self.t(t).values()})

    def _city(self, city: str) -> str:
        want = city.strip().casefold()
        for known in self._cities():
            if known.casefold() == want:
                return known
        raise ToolError(
            ErrorKind.NOT_FOUND,
            f"no weather data for {city!r}",
            hint="check the spelling; the cities with data are listed",
            candidates=self._cities()[:10],
            path="/city",
        )

    # -- tools ----------------------------------------------------------------------------------
    @tool()
    def current(self, city: City, units: Units | None = None) -> Now:
        """The weather in a city right now.

        Args:
            city: The city, e.g. "Berlin".
            units: "metric" (°C, km/h) or "imperial" (°F, mph); by default the phone's locale.
        """
        name = self._city(city)
        rec = next((r for r in self.t("current").values() if r["city"] == name), None)
        if rec is None:
            raise ToolError(
                ErrorKind.NOT_FOUND, f"no current observation for {name}", hint="call weather.forecast instead"
            )
        u = self._units(units)
        imp = u == "imperial"
        self.show_detail("current", rec["id"])
        return {
            "city": name,
            "observed": rec["observed"],
            "temperature": to_f(rec["temp_c"]) if imp else rec["temp_c"],
            "feels_like": to_f(rec["feels_like_c"]) if imp else rec["feels_like_c"],
            "condition": rec["condition"],
            "humidity": rec["humidity"],
            "wind": to_mph(rec["wind_kph"]) if imp else rec["wind_kph"],
            "temperature_unit": "°F" if imp else "°C",
            "wind_unit": "mph" if imp else "km/h",
        }

    @tool()
    def forecast(
        self,
        city: City,
        days: Annotated[int, Field(ge=1, le=10)] = 3,
        start_date: Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD")] | None = None,
        units: Units | None = None,
    ) -> Forecast:
        """The daily forecast for a city: high, low, condition, chance of rain, wind.

        Args:
            city: The city, e.g. "Lisbon".
            days: How many days, 1 to 10 (default 3).
            start_date: The first day, YYYY-MM-DD; today (phone's date) by default.
            units: "metric" (°C, km/h) or "imperial" (°F, mph); by default the phone's locale.
        """
        name = self._city(city)
        if start_date is None:
            first = self.now().date()
        else:
            try:
                first = dt.date.fromisoformat(start_date)
            except ValueError:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"{start_date!r} is not a date",
                    hint="use YYYY-MM-DD",
                    path="/start_date",
                ) from None
            check_year(first, start_date, "start_date")
        wanted = {(first + dt.timedelta(days=i)).isoformat() for i in range(days)}
        recs = sorted(
            (r for r in self.t("forecast").values() if r["city"] == name and r["date"] in wanted),
            key=lambda r: r["date"],
        )
        if not recs:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no forecast for {name} from {first.isoformat()}",
                hint="forecasts cover the next days only; ask for a nearer date",
                path="/start_date",
            )
        imp = self._units(units) == "imperial"
        self.show_list("forecast", [r["id"] for r in recs])
        return {
            "city": name,
            "days": [
                {
                    "date": r["date"],
                    "weekday": dt.date.fromisoformat(r["date"]).strftime("%A"),
                    "high": to_f(r["high_c"]) if imp else r["high_c"],
                    "low": to_f(r["low_c"]) if imp else r["low_c"],
                    "condition": r["condition"],
                    "precip_chance": r["precip_chance"],
                    "precip_mm": r["precip_mm"],
                    "wind": to_mph(r["wind_kph"]) if imp else r["wind_kph"],
                }
                for r in recs
            ],
            "temperature_unit": "°F" if imp else "°C",
            "wind_unit": "mph" if imp else "km/h",
        }

    @tool()
    def alerts(self, city: City | None = None) -> AlertList:
        """Weather warnings in effect now or later (ones already over are left out), soonest first.

        Args:
            city: Only this city; every city with data by default.
        """
        name = self._city(city) if city is not None else None
        now = self.now_str(seconds=False)
        recs = sorted(
            (r for r in self.t("alerts").values() if (name is None or r["city"] == name) and r["ends"][:16] > now),
            key=lambda r: (r["starts"], id_key(r["id"])),
        )
        self.show_list("alerts", [r["id"] for r in recs])
        return {"alerts": [dict(r) for r in recs], "total": len(recs)}  # type: ignore[misc]

    @tool()
    def list_locations(self) -> LocationList:
        """The user's saved cities, in the order they were added."""
        recs = sorted(self.t("locations").values(), key=lambda r: id_key(r["id"]))
        self.show_list("locations", [r["id"] for r in recs])
        return {"locations": [dict(r) for r in recs], "total": len(recs)}  # type: ignore[misc]

    @tool(effect=Effect.WRITE, writes=("locations",))
    def add_location(self, city: City) -> Location:
        """Save a city to the list.

        Args:
            city: The city, e.g. "Osaka" (one the app has data for).
        """
        name = self._city(city)
        if any(r["city"] == name for r in self.t("locations").values()):
            raise ToolError(ErrorKind.CONFLICT, f"{name} is already saved", hint="nothing to do", path="/city")
        rec = self.put("locations", {"id": self.new_id("locations"), "city": name})
        self.show_detail("locations", rec["id"])
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.SENSITIVE, writes=("locations",))
    def remove_location(self, location_id: str) -> Deleted:
        """Remove a saved city from the list.

        Args:
            location_id: The saved city's id, e.g. "wl_2".
        """
        self.require("locations", location_id, "saved city", "weather.list_locations")
        self.remove("locations", location_id)
        self.show_list("locations", sorted(self.t("locations"), key=id_key))
        return {"deleted": location_id}
