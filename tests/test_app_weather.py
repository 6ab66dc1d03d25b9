"""The weather app through the sandbox backend: units by locale (checked by hand: 20.0 °C =
68 °F, 21.5 °C = 70.7 → 71 °F, 16.09344 km/h = 10 mph), forecasts by day, alerts that are over
left out, and saved cities."""

from __future__ import annotations

import jsonschema

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, ErrorKind, Fixtures, TaskSpec
from tests.apps.helpers import call, ok

RECORDS = {
    "weather.current": [
        {"id": "wc_1", "city": "Lisbon", "observed": "2026-11-29T08:40:00", "temp_c": 20.0, "feels_like_c": 21.5,
         "condition": "sunny", "humidity": 60, "wind_kph": 16.09344},
    ],
    "weather.forecast": [
        {"id": f"wf_{i}", "city": "Lisbon", "date": f"2026-11-{29 + i}" if i < 2 else "2026-12-01",
         "high_c": 18.0 + i, "low_c": 11.0, "condition": "rain" if i == 1 else "sunny", "precip_chance": 80 if i == 1
         else 5, "precip_mm": 4.0 if i == 1 else 0.0, "wind_kph": 20.0} for i in range(3)
    ],
    "weather.alerts": [
        {"id": "wa_1", "city": "Lisbon", "event": "Heavy rain", "severity": "moderate", "starts": "2026-11-30T06:00",
         "ends": "2026-11-30T18:00", "description": "Up to 40 mm"},
        {"id": "wa_2", "city": "Lisbon", "event": "Fog advisory", "severity": "minor", "starts": "2026-11-28T06:00",
         "ends": "2026-11-28T10:00", "description": "over"},
    ],
    "weather.locations": [{"id": "wl_1", "city": "Lisbon"}],
}  # fmt: skip


def _backend(timezone: str) -> SandboxBackend:
    task = TaskSpec(
        id="weather-test",
        domain="travel",
        goal="test",
        criteria=[AnswerCriterion(equals="ok")],
        fixtures=Fixtures(records=RECORDS, clock="2026-11-29T09:00:00", timezone=timezone),
    )
    b = SandboxBackend()
    b.reset(task)
    return b


def test_weather_tools_have_valid_schemas():
    tools = {n: e for n, e in _backend("Europe/Lisbon").tools().items() if n.startswith("weather.")}
    assert len(tools) == 6
    for entry in tools.values():
        jsonschema.Draft202012Validator.check_schema(entry.spec.parameters)


def test_units_follow_the_locale_and_can_be_overridden():
    us = ok(_backend("America/New_York"), "weather.current", city="lisbon")
    assert (us["temperature"], us["feels_like"], us["wind"], us["temperature_unit"], us["wind_unit"]) == (
        68.0, 71.0, 10.0, "°F", "mph")  # fmt: skip
    eu = _backend("Europe/Berlin")
    here = ok(eu, "weather.current", city="Lisbon")
    assert (here["temperature"], here["wind"], here["temperature_unit"]) == (20.0, 16.09344, "°C")
    assert ok(eu, "weather.current", city="Lisbon", units="imperial")["temperature"] == 68.0


def test_forecast_days_start_today_or_on_the_date_given():
    b = _backend("Europe/Berlin")
    days = ok(b, "weather.forecast", city="Lisbon", days=2)["days"]
    assert [(d["date"], d["weekday"], d["condition"]) for d in days] == [
        ("2026-11-29", "Sunday", "sunny"), ("2026-11-30", "Monday", "rain")]  # fmt: skip
    one = ok(b, "weather.forecast", city="Lisbon", days=1, start_date="2026-12-01")["days"]
    assert [d["high"] for d in one] == [20.0]
    assert call(b, "weather.forecast", city="Lisbon", start_date="2027-01-10").error is ErrorKind.NOT_FOUND
    assert call(b, "weather.forecast", city="Gotham").error is ErrorKind.NOT_FOUND


def test_alerts_that_are_over_are_left_out():
    assert [a["id"] for a in ok(_backend("Europe/Berlin"), "weather.alerts")["alerts"]] == ["wa_1"]


def test_saved_cities_are_unique():
    b = _backend("Europe/Berlin")
    assert call(b, "weather.add_location", city="LISBON").error is ErrorKind.CONFLICT
    assert call(b, "weather.add_location", city="Paris").error is ErrorKind.NOT_FOUND
    assert ok(b, "weather.remove_location", location_id="wl_1") == {"deleted": "wl_1"}
    assert ok(b, "weather.add_location", city="lisbon") == {"id": "wl_2", "city": "Lisbon"}
    assert call(b, "weather.remove_location", location_id="wl_1").error is ErrorKind.NOT_FOUND
