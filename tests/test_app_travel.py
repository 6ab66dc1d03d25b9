"""The travel app through the sandbox backend: search in local time zones, booking with a mail
confirmation, check-in windows, cancellation refunds, and errors the agent can fix.

The fixture clock is Sunday 2026-11-29 09:00 in Europe/Berlin (08:00 UTC). Expected values below
are worked out by hand from the fixture rows (UTC offsets in November: Berlin +01:00, London
+00:00, New York -05:00).
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Effect, ErrorKind, Fixtures, TaskSpec
from phoneenv.tools import ArgumentError
from tests.apps.helpers import call, ok


def _conn(id: str, number: str, o: tuple[str, str, str], d: tuple[str, str, str], departs: str, arrives: str,
          price: float, carrier: str = "Skylark Air") -> dict[str, Any]:  # fmt: skip
    return {
        "id": id, "carrier": carrier, "number": number, "origin": o[0], "origin_code": o[1], "origin_tz": o[2],
        "destination": d[0], "destination_code": d[1], "destination_tz": d[2], "departs": departs,
        "arrives": arrives, "price": price, "currency": "EUR",
    }  # fmt: skip


BER = ("Berlin", "BER", "Europe/Berlin")
LHR = ("London", "LHR", "Europe/London")
JFK = ("New York", "JFK", "America/New_York")
RECORDS = {
    "travel.flights": [
        _conn("fl_1", "SK 204", BER, LHR, "2026-12-01T10:00", "2026-12-01T10:50", 120.5),
        _conn("fl_2", "MD 310", BER, LHR, "2026-12-01T07:15", "2026-12-01T08:10", 99.0, "Meridian"),
        _conn("fl_3", "BW 118", BER, LHR, "2026-11-29T20:00", "2026-11-29T20:55", 140.0, "Bluewing"),
        _conn("fl_4", "AR 77", JFK, LHR, "2026-12-01T18:00", "2026-12-02T06:00", 420.0, "Aurora Airways"),
    ],
    "travel.trains": [
        _conn(
            "tr_1",
            "ER 101",
            ("Berlin", "Berlin Hbf", "Europe/Berlin"),
            ("Hamburg", "Hamburg Hbf", "Europe/Berlin"),
            "2026-12-01T09:30",
            "2026-12-01T11:15",
            39.9,
            "EuroRail",
        ),
    ],
    "travel.hotels": [
        {
            "id": "ht_1",
            "name": "The Linden",
            "city": "London",
            "timezone": "Europe/London",
            "address": "4 Park Avenue",
            "price_per_night": 100.0,
            "currency": "EUR",
            "rating": 4.5,
            "check_in_time": "15:00",
            "check_out_time": "11:00",
        },
        {
            "id": "ht_2",
            "name": "Station Hotel",
            "city": "London",
            "timezone": "Europe/London",
            "address": "1 Station Square",
            "price_per_night": 80.0,
            "currency": "EUR",
            "rating": 3.6,
            "check_in_time": "14:00",
            "check_out_time": "12:00",
        },
    ],
}


def _backend(records: dict[str, list[dict[str, Any]]] | None = None) -> SandboxBackend:
    task = TaskSpec(
        id="travel-test",
        domain="travel",
        goal="test",
        criteria=[AnswerCriterion(equals="ok")],
        fixtures=Fixtures(
            records=RECORDS if records is None else records,
            clock="2026-11-29T09:00:00",
            timezone="Europe/Berlin",
            accounts={"mail": {"account": "sam@example.com", "signed_in": True}},
        ),
    )
    b = SandboxBackend()
    b.reset(task)
    return b


@pytest.fixture
def b() -> SandboxBackend:
    return _backend()


def test_every_travel_tool_has_a_valid_schema_and_money_is_sensitive(b):
    tools = {n: e for n, e in b.tools().items() if n.startswith("travel.")}
    assert len(tools) == 11
    for entry in tools.values():
        jsonschema.Draft202012Validator.check_schema(entry.spec.parameters)
    for name in ("book_flight", "book_train", "book_hotel", "cancel_booking"):
        assert tools[f"travel.{name}"].spec.effect is Effect.SENSITIVE


def test_search_gives_local_times_with_zones_and_real_durations(b):
    res = ok(b, "travel.search_flights", origin="berlin", destination="LHR", date="2026-12-01", sort="price")
    assert [r["id"] for r in res["results"]] == ["fl_2", "fl_1"]  # 99 before 120.5; fl_3 is another day
    first = res["results"][1]
    assert (first["departs"], first["departs_timezone"], first["departs_utc_offset"]) == (
        "2026-12-01T10:00", "Europe/Berlin", "+01:00")  # fmt: skip
    assert (first["arrives"], first["arrives_timezone"], first["arrives_utc_offset"]) == (
        "2026-12-01T10:50", "Europe/London", "+00:00")  # fmt: skip
    assert first["duration_minutes"] == 110  # 09:00 UTC to 10:50 UTC
    ny = ok(b, "travel.search_flights", origin="New York", destination="London", date="2026-12-01")["results"][0]
    assert (ny["departs_utc_offset"], ny["duration_minutes"]) == ("-05:00", 420)  # 23:00 UTC to 06:00 UTC
    by_time = ok(b, "travel.search_flights", origin="BER", destination="London", date="2026-12-01")
    assert [r["id"] for r in by_time["results"]] == ["fl_2", "fl_1"]
    cheap = ok(b, "travel.search_flights", origin="BER", destination="London", date="2026-12-01", max_price=100)
    assert [r["id"] for r in cheap["results"]] == ["fl_2"]


def test_search_errors_name_what_exists(b):
    fb = call(b, "travel.search_flights", origin="Berlin", destination="Atlantis", date="2026-12-01")
    assert fb.error is ErrorKind.NOT_FOUND and "London" in fb.candidates
    fb = call(b, "travel.search_trains", origin="Berlin", destination="Hamburg", date="2026-02-30")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS
    assert ok(b, "travel.find_station", query="hbf")["places"] == [
        {"code": "Berlin Hbf", "city": "Berlin", "kind": "station", "timezone": "Europe/Berlin"},
        {"code": "Hamburg Hbf", "city": "Hamburg", "kind": "station", "timezone": "Europe/Berlin"},
    ]


def test_booking_a_flight_mails_the_confirmation_in_local_times(b):
    bk = ok(b, "travel.book_flight", flight_id="fl_1", passengers=2)
    assert (bk["id"], bk["kind"], bk["total"], bk["status"], bk["start"], bk["end_tz"]) == (
        "bk_1", "flight", 241.0, "confirmed", "2026-12-01T10:00", "Europe/London")  # fmt: skip
    assert len(bk["code"]) == 6
    mail = b.phone.state.table("mail.messages")
    (m,) = mail.values()
    assert m["folder"] == "inbox" and m["to"] == ("sam@example.com",)
    assert m["from"] == "bookings@skylarkair.example.com"
    assert m["subject"] == "Booking confirmed: SK 204 Berlin → London, 2026-12-01"
    assert "2026-12-01 10:00 Europe/Berlin (UTC+01:00)" in m["body"]
    assert "2026-12-01 10:50 Europe/London (UTC+00:00)" in m["body"]
    assert "Total: 241.00 EUR" in m["body"] and bk["code"] in m["body"]


def test_a_hotel_stay_costs_nights_times_price_and_checks_out_on_the_last_day(b):
    res = ok(b, "travel.search_hotels", city="london", check_in="2026-12-01", nights=3, min_rating=4)
    assert [(h["id"], h["total"]) for h in res["results"]] == [("ht_1", 300.0)]
    bk = ok(b, "travel.book_hotel", hotel_id="ht_1", check_in="2026-12-01", nights=3)
    assert (bk["start"], bk["end"], bk["nights"], bk["total"]) == ("2026-12-01T15:00", "2026-12-04T11:00", 3, 300.0)
    fb = call(b, "travel.book_hotel", hotel_id="ht_1", check_in="2026-11-28", nights=1)
    assert fb.error is ErrorKind.PRECONDITION_FAILED


def test_check_in_opens_thirty_hours_ahead_and_mails_the_boarding_pass(b):
    far = ok(b, "travel.book_flight", flight_id="fl_1")["id"]
    fb = call(b, "travel.check_in", booking_id=far, seat="14C")
    assert fb.error is ErrorKind.PRECONDITION_FAILED
    assert "2026-11-30 04:00 (Europe/Berlin)" in fb.message  # 10:00 on 1 December minus 30 hours
    near = ok(b, "travel.book_flight", flight_id="fl_3")["id"]
    done = ok(b, "travel.check_in", booking_id=near, seat="14C")
    assert (done["seat"], done["checked_in"]) == ("14C", True)
    passes = [m for m in b.phone.state.table("mail.messages").values() if m["subject"].startswith("Boarding pass")]
    assert len(passes) == 1 and "Boarding from 19:20" in passes[0]["body"] and "Seat 14C" in passes[0]["body"]
    assert call(b, "travel.check_in", booking_id=near, seat="15D").error is ErrorKind.PRECONDITION_FAILED
    with pytest.raises(ArgumentError, match="seat"):
        call(b, "travel.check_in", booking_id=near, seat="44Z")
    train = ok(b, "travel.book_train", train_id="tr_1")["id"]
    assert call(b, "travel.check_in", booking_id=train, seat="3A").error is ErrorKind.PRECONDITION_FAILED


def test_cancelling_refunds_in_full_only_more_than_a_day_ahead(b):
    far = ok(b, "travel.book_flight", flight_id="fl_1")["id"]  # 49 hours away
    near = ok(b, "travel.book_flight", flight_id="fl_3")["id"]  # 11 hours away
    assert ok(b, "travel.cancel_booking", booking_id=far)["refund"] == 120.5
    assert ok(b, "travel.cancel_booking", booking_id=near)["refund"] == 0.0
    assert call(b, "travel.cancel_booking", booking_id=far).error is ErrorKind.PRECONDITION_FAILED
    assert call(b, "travel.cancel_booking", booking_id="bk_9").error is ErrorKind.NOT_FOUND
    subjects = sorted(m["subject"] for m in b.phone.state.table("mail.messages").values())
    assert subjects.count("Cancelled: SK 204 Berlin → London") == 1
    assert ok(b, "travel.list_bookings", status="confirmed")["total"] == 0


def test_bookings_are_listed_by_the_real_moment_they_start(b):
    ok(b, "travel.book_flight", flight_id="fl_4")  # 23:00 UTC on 1 December
    ok(b, "travel.book_flight", flight_id="fl_1")  # 09:00 UTC on 1 December
    ok(b, "travel.book_hotel", hotel_id="ht_1", check_in="2026-12-01", nights=1)  # 15:00 UTC
    assert [x["item"] for x in ok(b, "travel.list_bookings")["bookings"]] == ["fl_1", "ht_1", "fl_4"]
    assert call(b, "travel.book_flight", flight_id="fl_99").error is ErrorKind.NOT_FOUND
