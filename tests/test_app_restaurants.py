"""The restaurants app through the sandbox backend: search, availability from opening hours and
full times, reservations (create, change, cancel) with their booking code. Times below are worked
out by hand from the fixtures.

The fixture clock is 2026-11-10 10:00 (Europe/Berlin), a Tuesday."""

from __future__ import annotations

from typing import Any

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Feedback, Fixtures, TaskSpec

HOURS = {"mon": "closed", "tue": "17:00-21:00", "wed": "17:00-21:00", "thu": "17:00-21:00", "fri": "17:00-21:00",
         "sat": "17:00-21:00", "sun": "closed"}  # fmt: skip
SOLE = {"id": "rs_1", "name": "Trattoria Sole", "cuisine": "italian", "area": "Old Town", "rating": 4.6,
        "price_level": 2, "address": "Old Town 3", "phone": "+493012345678", "hours": HOURS, "max_party": 6,
        "full": ["2026-11-11T18:00"]}  # fmt: skip
VERDE = {**SOLE, "id": "rs_2", "name": "Osteria Verde", "area": "Riverside", "rating": 4.3, "price_level": 3}
TASK = TaskSpec(
    id="restaurants/test",
    domain="food",
    goal="test",
    criteria=[AnswerCriterion(equals="ok")],
    apps=["restaurants"],
    fixtures=Fixtures(
        clock="2026-11-10T10:00:00",
        timezone="Europe/Berlin",
        records={"restaurants.restaurants": [SOLE, VERDE]},
    ),
)


class Phone:
    def __init__(self) -> None:
        self.b = SandboxBackend()
        self.b.reset(TASK)

    def __call__(self, name: str, **args: Any) -> Feedback:
        return self.b.call(name, self.b.tools()[name].validator.validate(args))


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def err(fb: Feedback) -> str:
    assert not fb.ok, fb
    return fb.error.value


def test_search_filters_and_best_rated_first():
    p = Phone()
    assert [r["id"] for r in ok(p("restaurants.search", cuisine="Italian"))["restaurants"]] == ["rs_1", "rs_2"]
    assert [r["id"] for r in ok(p("restaurants.search", area="riverside"))["restaurants"]] == ["rs_2"]
    assert ok(p("restaurants.search", max_price_level=2))["total"] == 1
    assert ok(p("restaurants.search", query="sole old"))["restaurants"][0]["hours"]["mon"] == "closed"


def test_availability_from_hours_and_full_times():
    p = Phone()
    # Wednesday 17:00-21:00, last seating 19:30, 18:00 full
    assert ok(p("restaurants.availability", restaurant_id="rs_1", date="2026-11-11", party_size=2))["times"] == [
        "2026-11-11T17:00", "2026-11-11T17:30", "2026-11-11T18:30", "2026-11-11T19:00", "2026-11-11T19:30"]  # fmt: skip
    assert (
        ok(p("restaurants.availability", restaurant_id="rs_1", date="2026-11-16", party_size=2))["times"] == []
    )  # Monday
    assert ok(p("restaurants.availability", restaurant_id="rs_1", date="2026-11-11", party_size=7))["times"] == []
    assert (
        err(p("restaurants.availability", restaurant_id="rs_1", date="2026-02-30", party_size=2)) == "invalid_arguments"
    )


def test_reserve_change_cancel():
    p = Phone()
    assert err(p("restaurants.reserve", restaurant_id="rs_1", time="2026-11-11T18:00", party_size=2)) == "conflict"
    assert (
        err(p("restaurants.reserve", restaurant_id="rs_1", time="2026-11-11T19:00", party_size=7))
        == "precondition_failed"
    )
    res = ok(p("restaurants.reserve", restaurant_id="rs_1", time="2026-11-11T19:00", party_size=4))
    assert (res["id"], res["code"], res["status"]) == ("res_1", "RS1-11111900", "confirmed")
    # the booked time is no longer free for anyone else
    times = ok(p("restaurants.availability", restaurant_id="rs_1", date="2026-11-11", party_size=2))["times"]
    assert "2026-11-11T19:00" not in times
    moved = ok(p("restaurants.change_reservation", reservation_id="res_1", time="2026-11-11T19:30"))
    assert (moved["time"], moved["party_size"], moved["code"]) == ("2026-11-11T19:30", 4, "RS1-11111930")
    assert (
        err(p("restaurants.change_reservation", reservation_id="res_1", time="2026-11-11T20:00")) == "conflict"
    )  # after last seating
    assert ok(p("restaurants.cancel_reservation", reservation_id="res_1"))["status"] == "cancelled"
    assert err(p("restaurants.cancel_reservation", reservation_id="res_1")) == "precondition_failed"
    assert ok(p("restaurants.list_reservations"))["reservations"] == []
    assert len(ok(p("restaurants.list_reservations", include_cancelled=True))["reservations"]) == 1
    assert err(p("restaurants.get_reservation", reservation_id="res_9")) == "not_found"
