"""Seeding for the travel, maps and weather apps: timetables, hotels, map places and weather that
follow a :class:`~phoneenv.tasks.world.World` (its home city, time zone, currency, clock).

Each app draws from its own stream (``w.stream("travel")``, ``"maps"``, ``"weather"``), so seeding
one never shifts another's records. Times are real: a departure's arrival is its departure plus
the trip's duration, converted to the destination's IANA zone.
"""

from __future__ import annotations

import datetime as dt
import math
import zoneinfo
from dataclasses import dataclass
from typing import Any

from phoneenv.tasks.world import World

__all__ = [
    "CITIES",
    "City",
    "arrival_at_home",
    "destinations",
    "ensure_places",
    "home",
    "seed_hotels",
    "seed_maps",
    "seed_route",
    "seed_weather",
]


@dataclass(frozen=True)
class City:
    """A city the travel app serves: airport code, main station, zone, coordinates, a November
    climate (mean low and high °C) and its region (trains run only within a region)."""

    name: str
    airport: str
    station: str
    tz: str
    lat: float
    lon: float
    low: float
    high: float
    region: str


CITIES: dict[str, City] = {c.name: c for c in [
    City("Berlin", "BER", "Berlin Hbf", "Europe/Berlin", 52.52, 13.405, 2, 8, "EU"),
    City("Munich", "MUC", "München Hbf", "Europe/Berlin", 48.137, 11.575, 1, 8, "EU"),
    City("Hamburg", "HAM", "Hamburg Hbf", "Europe/Berlin", 53.551, 9.993, 3, 8, "EU"),
    City("Frankfurt", "FRA", "Frankfurt Hbf", "Europe/Berlin", 50.110, 8.682, 3, 9, "EU"),
    City("Paris", "CDG", "Paris Nord", "Europe/Paris", 48.857, 2.352, 5, 11, "EU"),
    City("Amsterdam", "AMS", "Amsterdam Centraal", "Europe/Amsterdam", 52.370, 4.895, 4, 10, "EU"),
    City("London", "LHR", "London St Pancras", "Europe/London", 51.507, -0.128, 5, 11, "EU"),
    City("Edinburgh", "EDI", "Edinburgh Waverley", "Europe/London", 55.953, -3.188, 3, 8, "EU"),
    City("Manchester", "MAN", "Manchester Piccadilly", "Europe/London", 53.480, -2.242, 4, 10, "EU"),
    City("Lisbon", "LIS", "Lisboa Oriente", "Europe/Lisbon", 38.722, -9.139, 11, 17, "EU"),
    City("New York", "JFK", "New York Penn", "America/New_York", 40.713, -74.006, 5, 12, "US"),
    City("Boston", "BOS", "Boston South", "America/New_York", 42.360, -71.059, 3, 10, "US"),
    City("Washington", "DCA", "Washington Union", "America/New_York", 38.907, -77.037, 5, 14, "US"),
    City("Chicago", "ORD", "Chicago Union", "America/Chicago", 41.878, -87.630, 1, 9, "US"),
    City("Los Angeles", "LAX", "Los Angeles Union", "America/Los_Angeles", 34.052, -118.244, 11, 22, "US"),
    City("Tokyo", "HND", "Tokyo", "Asia/Tokyo", 35.676, 139.650, 9, 17, "JP"),
    City("Osaka", "KIX", "Shin-Osaka", "Asia/Tokyo", 34.694, 135.502, 9, 17, "JP"),
    City("Kyoto", "UKB", "Kyoto", "Asia/Tokyo", 35.012, 135.768, 7, 16, "JP"),
    City("Seoul", "ICN", "Seoul Station", "Asia/Seoul", 37.566, 126.978, 2, 11, "KR"),
    City("Sydney", "SYD", "Sydney Central", "Australia/Sydney", -33.869, 151.209, 16, 24, "AU"),
    City("Melbourne", "MEL", "Southern Cross", "Australia/Melbourne", -37.814, 144.963, 11, 21, "AU"),
    City("Brisbane", "BNE", "Roma Street", "Australia/Brisbane", -27.470, 153.026, 19, 28, "AU"),
    City("Perth", "PER", "Perth", "Australia/Perth", -31.950, 115.860, 14, 26, "AU"),
    City("Canberra", "CBR", "Canberra", "Australia/Sydney", -35.281, 149.130, 9, 22, "AU"),
]}  # fmt: skip

# Home city → destinations: (city, flight minutes or None, train minutes or None).
ROUTES: dict[str, list[tuple[str, int | None, int | None]]] = {
    "Berlin": [("Munich", 70, 245), ("Hamburg", None, 105), ("Frankfurt", 70, 240), ("Paris", 105, 480),
               ("Amsterdam", 85, 370), ("London", 110, None), ("Lisbon", 215, None)],
    "London": [("Edinburgh", 80, 265), ("Manchester", None, 130), ("Paris", 75, 138), ("Amsterdam", 75, 240),
               ("Berlin", 110, None), ("Lisbon", 165, None)],
    "New York": [("Boston", 75, 230), ("Washington", 80, 175), ("Chicago", 150, None),
                 ("Los Angeles", 380, None), ("London", 420, None)],
    "Tokyo": [("Osaka", 75, 150), ("Kyoto", None, 135), ("Seoul", 150, None), ("Sydney", 585, None)],
    "Sydney": [("Melbourne", 95, 660), ("Canberra", 55, 260), ("Brisbane", 95, None), ("Perth", 320, None), ("Tokyo", 570, None)],
}  # fmt: skip
AIRLINES = [("Skylark Air", "SK"), ("Aurora Airways", "AR"), ("Meridian", "MD"), ("Bluewing", "BW")]
RAILWAYS = {"EU": ("EuroRail", "ER"), "US": ("Coastline Rail", "CL"), "JP": ("Shinkansen Lines", "SL"),
            "AU": ("Southern Rail", "SR"), "KR": ("Korail", "KR")}  # fmt: skip
HOTEL_NAMES = ["Hotel Aurora", "Harbour View Inn", "Parkside Suites", "The Linden", "Old Town Lodge",
               "Riverside Hotel", "Station Hotel", "Grand Plaza"]  # fmt: skip
STREETS = ["Market Street", "Harbour Road", "Park Avenue", "Station Square", "River Lane", "Hill Street",
           "Castle Road", "Garden Row"]  # fmt: skip
# Map places near home: (name, category, metres north, metres east) of the home point.
POIS = [
    ("Cafe Luna", "cafe", 900, -1200), ("City Library", "library", -1500, 800),
    ("Central Station", "station", 2500, 1800), ("Riverside Pharmacy", "pharmacy", 400, 600),
    ("Green Market", "supermarket", -700, -500), ("Iron Gym", "gym", 1800, -2600),
    ("City Hospital", "hospital", -3200, -1400), ("Airport", "airport", 14000, 9000),
    ("Northwind Office", "office", 5200, 3100), ("Lakeside Park", "park", -4100, 3600),
    ("Trattoria Roma", "restaurant", 1300, 2200), ("Sunrise Bakery", "bakery", -300, 1500),
    ("Main Street 5", "address", 600, 300), ("Bella Pizza", "restaurant", -2600, -3000),
    ("Westside Pharmacy", "pharmacy", 3000, -4200), ("Oak Hill School", "school", -1900, 2700),
]  # fmt: skip
CONDITIONS = ["sunny", "partly cloudy", "cloudy", "rain", "showers", "fog", "windy"]


def home(w: World) -> City:
    """The world's home city."""
    return CITIES[w.locale.city]


def destinations(w: World, *, flight: bool = False, train: bool = False) -> list[str]:
    """The home city's destinations (with a flight and/or a train when asked), in table order."""
    return [d for d, f, t in ROUTES[w.locale.city] if (not flight or f) and (not train or t)]


def _local(day: dt.date, minutes: int) -> dt.datetime:
    return dt.datetime.combine(day, dt.time()) + dt.timedelta(minutes=minutes)


def arrive(departs: dt.datetime, origin: City, dest: City, minutes: int) -> dt.datetime:
    """The local arrival time at ``dest`` of a trip leaving ``origin`` at local ``departs``."""
    start = departs.replace(tzinfo=zoneinfo.ZoneInfo(origin.tz))
    return (start + dt.timedelta(minutes=minutes)).astimezone(zoneinfo.ZoneInfo(dest.tz)).replace(tzinfo=None)


def aware_minutes(local: str, zone: str) -> float:
    """Minutes since the Unix epoch of a local ``YYYY-MM-DDTHH:MM`` in IANA ``zone`` (to order
    times given in different zones)."""
    return dt.datetime.fromisoformat(local).replace(tzinfo=zoneinfo.ZoneInfo(zone)).timestamp() / 60


def arrival_at_home(w: World, local: str, zone: str) -> str:
    """A local ``YYYY-MM-DDTHH:MM`` in ``zone`` as the phone's local time (the world's zone)."""
    moment = dt.datetime.fromisoformat(local).replace(tzinfo=zoneinfo.ZoneInfo(zone))
    return moment.astimezone(zoneinfo.ZoneInfo(w.timezone)).replace(tzinfo=None).isoformat(timespec="minutes")


def seed_route(
    w: World, dest: str, day: dt.date, kind: str, n: int = 4, *, back: bool = False, extra_days: bool = True
) -> list[dict[str, Any]]:
    """Add ``n`` departures by ``kind`` ("flights" or "trains") between home and ``dest`` on
    ``day`` (from ``dest`` to home when ``back``), at distinct times 06:00-20:59, with distinct
    prices; plus (``extra_days``) one the day before and one the day after, so a search must use
    the date. Returns that day's departures, earliest first."""
    rng = w.stream("travel")
    here = home(w)
    there = CITIES[dest]
    minutes = next((f if kind == "flights" else t) for d, f, t in ROUTES[here.name] if d == dest)
    assert minutes, f"no {kind} between {here.name} and {dest}"
    origin, target = (there, here) if back else (here, there)
    table = w.table(f"travel.{kind}")
    prefix = "fl_" if kind == "flights" else "tr_"
    region = here.region if here.region == there.region else "EU"
    base = w.price(max(25.0, minutes * (0.9 if kind == "flights" else 0.45)))
    starts = sorted(rng.sample(range(6 * 60, 21 * 60, 5), n))
    prices = rng.sample(range(0, 40), n)
    out = []
    days = [(d, i) for i, d in enumerate([day] * n)]
    if extra_days:
        days += [(day - dt.timedelta(days=1), n), (day + dt.timedelta(days=1), n + 1)]
    for d, i in days:
        start_min = starts[i] if i < n else rng.randrange(7 * 60, 20 * 60, 5)
        departs = _local(d, start_min)
        length = minutes + rng.choice([-10, -5, 0, 0, 5, 10, 15])
        if kind == "flights":
            carrier, code = AIRLINES[rng.randrange(len(AIRLINES))]
            number = f"{code} {rng.randrange(100, 999)}"
            o_code, d_code = origin.airport, target.airport
        else:
            carrier, code = RAILWAYS[region]
            number = f"{code} {rng.randrange(100, 999)}"
            o_code, d_code = origin.station, target.station
        price = round(base * (0.8 + (prices[i] if i < n else rng.randrange(0, 40)) / 50), 2)
        if w.currency == "JPY":
            price = float(round(price, -1))
        rec = {
            "id": w.next_id(f"travel.{kind}", prefix),
            "carrier": carrier,
            "number": number,
            "origin": origin.name,
            "origin_code": o_code,
            "origin_tz": origin.tz,
            "destination": target.name,
            "destination_code": d_code,
            "destination_tz": target.tz,
            "departs": departs.isoformat(timespec="minutes"),
            "arrives": arrive(departs, origin, target, length).isoformat(timespec="minutes"),
            "price": price,
            "currency": w.currency,
        }
        table.append(rec)
        if d == day:
            out.append(rec)
    return sorted(out, key=lambda r: r["departs"])


def seed_flight(w: World, dest: str, departs: dt.datetime) -> dict[str, Any]:
    """Add one flight from home to ``dest`` leaving at local ``departs``; returns it."""
    rng = w.stream("travel")
    here, there = home(w), CITIES[dest]
    minutes = next(f for d, f, _ in ROUTES[here.name] if d == dest)
    assert minutes, f"no flight between {here.name} and {dest}"
    carrier, code = AIRLINES[rng.randrange(len(AIRLINES))]
    rec = {
        "id": w.next_id("travel.flights", "fl_"),
        "carrier": carrier,
        "number": f"{code} {rng.randrange(100, 999)}",
        "origin": here.name,
        "origin_code": here.airport,
        "origin_tz": here.tz,
        "destination": dest,
        "destination_code": there.airport,
        "destination_tz": there.tz,
        "departs": departs.isoformat(timespec="minutes"),
        "arrives": arrive(departs, here, there, minutes).isoformat(timespec="minutes"),
        "price": w.price(float(max(40, minutes))),
        "currency": w.currency,
    }
    w.table("travel.flights").append(rec)
    return rec


def seed_hotels(w: World, city: str, n: int = 5) -> list[dict[str, Any]]:
    """Add ``n`` hotels in ``city`` with distinct prices and ratings; returns them."""
    rng = w.stream("travel")
    c = CITIES[city]
    names = rng.sample(HOTEL_NAMES, n)
    prices = rng.sample(range(60, 260, 5), n)
    ratings = rng.sample([3.2, 3.6, 3.9, 4.1, 4.3, 4.5, 4.7, 4.8], n)
    out = []
    for name, price, rating in zip(names, prices, ratings, strict=True):
        rec = {
            "id": w.next_id("travel.hotels", "ht_"),
            "name": name,
            "city": city,
            "timezone": c.tz,
            "address": f"{rng.randrange(1, 90)} {rng.choice(STREETS)}, {city}",
            "price_per_night": w.price(float(price)),
            "currency": w.currency,
            "rating": rating,
            "check_in_time": rng.choice(["14:00", "15:00"]),
            "check_out_time": rng.choice(["11:00", "12:00"]),
        }
        w.table("travel.hotels").append(rec)
        out.append(rec)
    return out


def add_booking(w: World, conn_or_hotel: dict[str, Any], kind: str, **over: Any) -> dict[str, Any]:
    """Add a confirmed booking of a seeded flight/train (``kind`` "flight"/"train") or hotel
    (``kind`` "hotel", with ``nights`` and ``check_in`` date in ``over``); returns it."""
    rng = w.stream("travel")
    rid = w.next_id("travel.bookings", "bk_")
    code = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
    if kind == "hotel":
        nights = over.pop("nights")
        start_day = dt.date.fromisoformat(over.pop("check_in"))
        h = conn_or_hotel
        rec = {
            "id": rid, "kind": "hotel", "item": h["id"], "title": f"{h['name']}, {h['city']}",
            "passengers": 1, "nights": nights,
            "start": f"{start_day.isoformat()}T{h['check_in_time']}", "start_tz": h["timezone"],
            "end": f"{(start_day + dt.timedelta(days=nights)).isoformat()}T{h['check_out_time']}",
            "end_tz": h["timezone"], "total": round(h["price_per_night"] * nights, 2),
        }  # fmt: skip
    else:
        c = conn_or_hotel
        rec = {
            "id": rid, "kind": kind, "item": c["id"], "title": f"{c['number']} {c['origin']} → {c['destination']}",
            "passengers": 1, "nights": None, "start": c["departs"], "start_tz": c["origin_tz"],
            "end": c["arrives"], "end_tz": c["destination_tz"], "total": c["price"],
        }  # fmt: skip
    rec.update(
        {
            "currency": w.currency,
            "status": "confirmed",
            "code": code,
            "booked": w.ts(rng.randrange(1440, 30 * 1440)),
            "seat": None,
            "checked_in": False,
        }
    )
    rec.update(over)
    w.table("travel.bookings").append(rec)
    return rec


LOCATION = "android.permission.ACCESS_FINE_LOCATION"
"""The permission maps needs to read and share the phone's location."""
SPEEDS = {"drive": (30.0, 5), "transit": (20.0, 8), "walk": (5.0, 0), "bike": (15.0, 0)}
"""The maps app's model (see ``apps/maps/__init__.py``): km/h and minutes of overhead per mode."""


def street_minutes(a: dict[str, Any], b: dict[str, Any], mode: str) -> int:
    """Minutes from place ``a`` to ``b`` (records with ``lat``/``lon``) by ``mode`` under the
    maps app's documented model: great-circle km × 1.3 rounded to 0.1 km, at the mode's speed,
    rounded up, plus the mode's overhead."""
    p1, p2 = math.radians(a["lat"]), math.radians(b["lat"])
    h = (
        math.sin((p2 - p1) / 2) ** 2
        + math.cos(p1) * math.cos(p2) * math.sin(math.radians(b["lon"] - a["lon"]) / 2) ** 2
    )
    km = round(2 * 6371.0 * math.asin(math.sqrt(h)) * 1.3, 1)
    speed, extra = SPEEDS[mode]
    return math.ceil(km / speed * 60 - 1e-9) + extra


def _offset_point(c_lat: float, c_lon: float, north_m: float, east_m: float) -> tuple[float, float]:
    lat = c_lat + north_m / 111_320
    lon = c_lon + east_m / (111_320 * math.cos(math.radians(c_lat)))
    return round(lat, 5), round(lon, 5)


def seed_maps(w: World) -> dict[str, dict[str, Any]]:
    """Seed the map places around home (every :data:`POIS` entry, jittered by up to 200 m) and
    the saved places Home (the world's home point) and Work (the office); returns the places by
    name (saved ones by label)."""
    if w.table("maps.pois"):
        return {r["name"]: r for r in w.table("maps.pois")} | {r["label"]: r for r in w.table("maps.places")}
    rng = w.stream("maps")
    lat0, lon0 = w.locale.lat, w.locale.lon
    out: dict[str, dict[str, Any]] = {}
    for i, (name, cat, north, east) in enumerate(POIS, 1):
        lat, lon = _offset_point(lat0, lon0, north + rng.randrange(-200, 200), east + rng.randrange(-200, 200))
        addr = name if cat == "address" else f"{rng.randrange(1, 120)} {rng.choice(STREETS)}"
        rec = {"id": f"poi_{i}", "name": name, "category": cat, "address": f"{addr}, {w.locale.city}", "lat": lat,
               "lon": lon}  # fmt: skip
        w.table("maps.pois").append(rec)
        out[name] = rec
    office = out["Northwind Office"]
    home_rec = {"id": "pl_1", "label": "Home", "address": f"{rng.randrange(1, 60)} {rng.choice(STREETS)}, "
                f"{w.locale.city}", "lat": w.locale.lat, "lon": w.locale.lon}  # fmt: skip
    work = {"id": "pl_2", "label": "Work", "address": office["address"], "lat": office["lat"], "lon": office["lon"]}
    w.table("maps.places").extend([home_rec, work])
    out["Home"], out["Work"] = home_rec, work
    return out


def ensure_places(w: World) -> dict[str, dict[str, Any]]:
    """:func:`seed_maps`, once."""
    return seed_maps(w)


def seed_weather(w: World, cities: list[str], days: int = 7) -> None:
    """Seed current conditions and a ``days``-day forecast from today for each of ``cities``
    (November climate of :data:`CITIES`), and the home city as the one saved location."""
    rng = w.stream("weather")
    today = w.now.date()
    for city in cities:
        c = CITIES[city]
        if any(r["city"] == city for r in w.table("weather.forecast")):
            continue
        for i in range(days):
            low = round(c.low + rng.uniform(-3, 3), 1)
            high = round(max(low + 2, c.high + rng.uniform(-3, 3)), 1)
            cond = rng.choice(CONDITIONS)
            wet = cond in ("rain", "showers")
            w.table("weather.forecast").append(
                {
                    "id": w.next_id("weather.forecast", "wf_"),
                    "city": city,
                    "date": (today + dt.timedelta(days=i)).isoformat(),
                    "high_c": high,
                    "low_c": low,
                    "condition": cond,
                    "precip_chance": rng.randrange(60, 95) if wet else rng.randrange(0, 30),
                    "precip_mm": round(rng.uniform(2, 15), 1) if wet else 0.0,
                    "wind_kph": round(rng.uniform(5, 45), 1),
                }
            )
        day0 = next(r for r in w.table("weather.forecast") if r["city"] == city and r["date"] == today.isoformat())
        temp = round(day0["low_c"] + (day0["high_c"] - day0["low_c"]) * 0.4, 1)
        w.table("weather.current").append(
            {
                "id": w.next_id("weather.current", "wc_"),
                "city": city,
                "observed": w.ts(rng.randrange(5, 40)),
                "temp_c": temp,
                "feels_like_c": round(temp - rng.uniform(0, 3), 1),
                "condition": day0["condition"],
                "humidity": rng.randrange(40, 95),
                "wind_kph": day0["wind_kph"],
            }
        )
    if not w.table("weather.locations"):
        w.table("weather.locations").append({"id": "wl_1", "city": w.locale.city})
