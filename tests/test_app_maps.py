"""The maps app through the sandbox backend: saved places, search by distance, travel times and
routes under the documented model, and the location permission.

Clock: 2026-11-29 09:00 Europe/Berlin; the phone is at home (52.52, 13.405). Worked by hand:
``poi_1`` lies 0.01° of latitude north, 1.11195 km of great circle, 1.3 × that = 1.4 km of street:
drive 1.4/30 h = 2.8 → 3 min + 5 parking = 8; transit 4.2 → 5 + 8 = 13; walk 16.8 → 17; bike
5.6 → 6.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Effect, ErrorKind, Fixtures, TaskSpec
from tests.apps.helpers import call, ok

LOCATION = "android.permission.ACCESS_FINE_LOCATION"
RECORDS: dict[str, list[dict[str, Any]]] = {
    "maps.pois": [
        {"id": "poi_1", "name": "Cafe Luna", "category": "cafe", "address": "3 Hill Street, Berlin", "lat": 52.53,
         "lon": 13.405},
        {"id": "poi_2", "name": "Westside Pharmacy", "category": "pharmacy", "address": "9 River Lane, Berlin",
         "lat": 52.56, "lon": 13.405},
        {"id": "poi_3", "name": "Riverside Pharmacy", "category": "pharmacy", "address": "2 Park Avenue, Berlin",
         "lat": 52.525, "lon": 13.405},
    ],
    "maps.places": [
        {"id": "pl_1", "label": "Home", "address": "1 Garden Row, Berlin", "lat": 52.52, "lon": 13.405},
    ],
}  # fmt: skip


def _backend(granted: bool = True) -> SandboxBackend:
    task = TaskSpec(
        id="maps-test",
        domain="travel",
        goal="test",
        criteria=[AnswerCriterion(equals="ok")],
        fixtures=Fixtures(
            records=RECORDS,
            clock="2026-11-29T09:00:00",
            timezone="Europe/Berlin",
            location={"label": "home", "lat": 52.52, "lon": 13.405},
            permissions={"maps": {LOCATION: granted}},
        ),
    )
    b = SandboxBackend()
    b.reset(task)
    return b


def test_maps_tools_have_valid_schemas_and_deleting_or_sharing_is_sensitive():
    tools = {n: e for n, e in _backend().tools().items() if n.startswith("maps.")}
    assert len(tools) == 9
    for entry in tools.values():
        jsonschema.Draft202012Validator.check_schema(entry.spec.parameters)
    assert tools["maps.delete_place"].spec.effect is Effect.SENSITIVE
    assert tools["maps.share_location"].spec.effect is Effect.SENSITIVE
    assert tuple(tools["maps.share_location"].spec.permissions) == (LOCATION,)


def test_travel_times_follow_the_documented_model():
    b = _backend()
    times = ok(b, "maps.travel_time", origin="pl_1", destination="poi_1")["times"]
    assert {t["mode"]: (t["minutes"], t["distance_km"]) for t in times} == {
        "drive": (8, 1.4), "transit": (13, 1.4), "walk": (17, 1.4), "bike": (6, 1.4)}  # fmt: skip
    r = ok(b, "maps.route", origin="pl_1", destination="poi_1", mode="drive", arrive_by="2026-11-29T10:00")
    assert (r["depart"], r["arrive"], r["minutes"]) == ("2026-11-29T09:52", "2026-11-29T10:00", 8)
    r = ok(b, "maps.route", origin="here", destination="poi_1", mode="walk")
    assert (r["depart"], r["arrive"]) == ("2026-11-29T09:00", "2026-11-29T09:17")
    fb = call(b, "maps.route", origin="pl_1", destination="poi_1", depart_at="2026-11-29T10:00",
              arrive_by="2026-11-29T11:00")  # fmt: skip
    assert fb.error is ErrorKind.INVALID_ARGUMENTS
    assert call(b, "maps.travel_time", origin="pl_9", destination="poi_1").error is ErrorKind.NOT_FOUND


def test_search_puts_the_nearest_first():
    res = ok(_backend(), "maps.search", query="pharmacy")
    assert [(r["id"], r["distance_km"]) for r in res["results"]] == [("poi_3", 0.6), ("poi_2", 4.4)]


def test_saved_places_keep_labels_unique():
    b = _backend()
    saved = ok(b, "maps.save_place", label="Coffee", place_id="poi_1")
    assert (saved["id"], saved["address"]) == ("pl_2", "3 Hill Street, Berlin")
    assert call(b, "maps.save_place", label="home", place_id="poi_2").error is ErrorKind.CONFLICT
    assert call(b, "maps.rename_place", place_id="pl_2", label="HOME").error is ErrorKind.CONFLICT
    assert ok(b, "maps.rename_place", place_id="pl_2", label="Cafe")["label"] == "Cafe"
    assert ok(b, "maps.delete_place", place_id="pl_2") == {"deleted": "pl_2"}
    assert [p["label"] for p in ok(b, "maps.list_places")["places"]] == ["Home"]
    assert call(b, "maps.save_place", label="X", place_id="pl_1").error is ErrorKind.NOT_FOUND


def test_location_needs_the_permission():
    b = _backend(granted=False)
    assert call(b, "maps.share_location", to="+4915112345678").error is ErrorKind.PERMISSION_DENIED
    assert call(b, "maps.route", origin="here", destination="poi_1").error is ErrorKind.PERMISSION_DENIED
    ok(b, "system.request_permission", app="maps", permission=LOCATION)
    share = ok(b, "maps.share_location", to="+4915112345678", minutes=90)
    assert (share["started"], share["until"], share["lat"]) == ("2026-11-29T09:00", "2026-11-29T10:30", 52.52)


@pytest.mark.parametrize("minutes", [5, 2000])
def test_share_duration_is_bounded(minutes):
    from phoneenv.tools import ArgumentError

    with pytest.raises(ArgumentError):
        call(_backend(), "maps.share_location", to="+4915112345678", minutes=minutes)
