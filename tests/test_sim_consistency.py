"""The simulated world's consistency checker on the contradictions a simulator makes: a currency
changing on an order, subtotal plus fees not matching the total, lines not making the subtotal, a
charged price differing from the menu price, a venue's category changing, an update time before
the creation time, and facts that differ from the entity they reference.

Each kind runs as a scripted reply sequence through the env: the contradicting sequence reports
the issue and marks the verdict ``inconsistent``; a consistent sequence of the same shape (totals
within rounding, prices in minor units, a status that legitimately moves on) reports nothing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from phoneenv.backends.llmsim import FactLedger, SimApp, load_sim_apps
from phoneenv.contract import AnswerCriterion, Fixtures, TaskSpec
from phoneenv.env import PhonePlanEnv
from tests.test_llmsim import CLOCK, ORDER, PLACE, SEARCH, FakeSimulator

MENU = {
    "restaurant_id": "rst_1",
    "name": "Luigi's",
    "currency": "EUR",
    "menu": [
        {
            "item_id": "m_1",
            "name": "Margherita",
            "description": "Tomato, mozzarella",
            "category": "pizza",
            "price": 9.5,
            "available": True,
        },
        {
            "item_id": "m_2",
            "name": "Tiramisu",
            "description": "Coffee, mascarpone",
            "category": "dessert",
            "price": 3.33,
            "available": True,
        },
    ],
}
# The same restaurant priced in yen: amounts in minor units, whole numbers.
MENU_JPY = {
    **MENU,
    "currency": "JPY",
    "menu": [{**MENU["menu"][0], "price": 1725.0}, {**MENU["menu"][1], "price": 450}],
}
ORDER_JPY = {
    **ORDER,
    "items": [
        {"item_id": "m_1", "name": "Margherita", "qty": 2, "price": 1725},
        {"item_id": "m_2", "name": "Tiramisu", "qty": 1, "price": 450.0},
    ],
    "subtotal": 3900,
    "delivery_fee": 300,
    "total": 4200.0,
    "currency": "JPY",
}
# Three tiramisu at 3.333 make 9.999, billed as a subtotal of 10.00: within rounding to the cent.
ORDER_ROUNDED = {
    **ORDER,
    "items": [{"item_id": "m_2", "name": "Tiramisu", "qty": 3, "price": 3.333}],
    "subtotal": 10.0,
    "delivery_fee": 2.99,
    "total": 12.99,
}
STATUS = {**ORDER, "status": "preparing", "last_update": "2026-11-29T09:05:00", "courier": None}
DELIVERED = {**STATUS, "status": "delivered", "eta": None, "last_update": "2026-11-29T09:40:00", "courier": "Max"}

SHOWTIMES = {
    "date": "2026-11-29",
    "showtimes": [
        {
            "showtime_id": "shw_1",
            "movie_id": "mov_1",
            "cinema": "Kino Central",
            "hall": "3",
            "start": "2026-11-29T20:00:00",
            "format": "2D",
            "price_per_seat": 11.0,
            "currency": "EUR",
            "seats_available": 40,
        }
    ],
}
MOVIES = {
    "movies": [
        {
            "movie_id": "mov_1",
            "title": "The Long Night",
            "genre": "thriller",
            "runtime_min": 118,
            "age_rating": "16",
            "language": "en",
            "synopsis": "A night shift goes wrong.",
        }
    ],
    "total": 1,
}
BOOKING = {
    "booking_id": "bkg_1",
    "showtime_id": "shw_1",
    "movie_id": "mov_1",
    "movie_title": "The Long Night",
    "cinema": "Kino Central",
    "hall": "3",
    "start": "2026-11-29T20:00:00",
    "seats": ["F7", "F8"],
    "price": 22.0,
    "currency": "EUR",
    "status": "confirmed",
    "booked_at": "2026-11-29T09:00:03",
}
CLAIM = {
    "claim_id": "clm_1",
    "tracking_id": "DHL1234567",
    "status": "open",
    "created_at": "2026-11-29T09:00:01",
    "updated_at": "2026-11-29T09:00:01",
    "next_steps": "We will contact the carrier within two days.",
}


def sim_task(apps: list[str]) -> TaskSpec:
    return TaskSpec(
        id="test.sim.consistency",
        domain="food",
        goal="Do what I asked.",
        fixtures=Fixtures(clock=CLOCK),
        criteria=[AnswerCriterion(id="answer", equals="done")],
        apps=apps,
        backends=["llmsim"],
    )


SEARCH_PIZZA = ("food.search_restaurants", {"query": "pizza"})
MENU_CALL = ("food.get_menu", {"restaurant_id": "rst_1"})
PLACE_CALL = ("food.place_order", PLACE)
STATUS_CALL = ("food.order_status", {"order_id": "ord_1"})
MOVIES_CALL = ("cinema.search_movies", {"query": "night"})
SHOWTIMES_CALL = ("cinema.list_showtimes", {"movie_id": "mov_1", "date": "2026-11-29"})
BOOK_CALL = ("cinema.book_tickets", {"showtime_id": "shw_1", "seats": ["F7", "F8"]})
CLAIM_CALL = ("parcels.report_missing", {"tracking_id": "DHL1234567"})


def restaurant(**changes: Any) -> dict[str, Any]:
    return {**SEARCH, "restaurants": [{**SEARCH["restaurants"][0], **changes}]}


# (kind, apps, contradicting steps, words every reported issue must hold, consistent steps)
CASES: list[tuple[str, list[str], list[Any], list[str], list[Any]]] = [
    (
        "currency_changes_on_an_order",
        ["food"],
        [(PLACE_CALL, ORDER), (STATUS_CALL, {**STATUS, "currency": "USD"})],
        ["'ord_1'", "immutable currency", '"EUR"', '"USD"'],
        # the status legitimately moves on, twice, with the currency restated as it was
        [(PLACE_CALL, ORDER), (STATUS_CALL, STATUS), (STATUS_CALL, DELIVERED)],
    ),
    (
        "subtotal_plus_fees_is_not_the_total",
        ["food"],
        [(PLACE_CALL, {**ORDER, "total": 12.5})],
        ["'ord_1'", "total 12.5 is not subtotal + delivery_fee (11.5)"],
        [(PLACE_CALL, ORDER_ROUNDED), (STATUS_CALL, {**ORDER_ROUNDED, "status": "confirmed", "courier": None})],
    ),
    (
        "fee_changes_so_the_total_no_longer_adds_up",
        ["food"],
        [(PLACE_CALL, ORDER), (STATUS_CALL, {**STATUS, "delivery_fee": 3.5})],
        ["'ord_1'", "delivery_fee"],
        [(PLACE_CALL, ORDER_JPY), (STATUS_CALL, {**ORDER_JPY, "status": "preparing", "courier": None})],
    ),
    (
        "lines_do_not_make_the_subtotal",
        ["food"],
        [(PLACE_CALL, {**ORDER, "items": [{**ORDER["items"][0], "qty": 2}]})],
        ["'ord_1'", "subtotal 9.5 is not the sum of its items' qty × price (19)"],
        [(PLACE_CALL, {**ORDER, "items": [{**ORDER["items"][0], "qty": 1}]})],
    ),
    (
        "charged_price_differs_from_the_menu",
        ["food"],
        [
            (MENU_CALL, MENU),
            (
                PLACE_CALL,
                {**ORDER, "items": [{**ORDER["items"][0], "price": 10.5}], "subtotal": 10.5, "total": 12.5},
            ),
        ],
        ["'ord_1'", 'items[0] (item_id "m_1") price 10.5', "menu price 9.5"],
        [
            (MENU_CALL, MENU_JPY),
            (PLACE_CALL, ORDER_JPY),
            (STATUS_CALL, {**ORDER_JPY, "status": "confirmed", "courier": None}),
        ],
    ),
    (
        "order_currency_differs_from_the_restaurant",
        ["food"],
        [(SEARCH_PIZZA, restaurant(currency="EUR")), (PLACE_CALL, {**ORDER, "currency": "CHF"})],
        ["'ord_1'", 'currency "CHF" differs from restaurant \'rst_1\'\'s currency "EUR"'],
        [(SEARCH_PIZZA, restaurant(currency="EUR")), (PLACE_CALL, ORDER)],
    ),
    (
        "venue_category_changes",
        ["food"],
        [
            (SEARCH_PIZZA, restaurant()),
            (("food.search_restaurants", {"query": "luigi"}), restaurant(cuisine="burgers")),
        ],
        ["restaurant 'rst_1'", "immutable cuisine", '"pizza"', '"burgers"'],
        # the rating, the fee and opening change; the category is restated in other letters
        [
            (SEARCH_PIZZA, restaurant()),
            (
                ("food.search_restaurants", {"query": "luigi"}),
                restaurant(cuisine=" Pizza", rating=4.7, delivery_fee=2.5, open_now=False),
            ),
        ],
    ),
    (
        "order_updated_before_it_was_placed",
        ["food"],
        [(PLACE_CALL, {**ORDER, "last_update": "2026-11-29T08:59:00"})],
        ["'ord_1'", 'last_update "2026-11-29T08:59:00" lies before placed_at "2026-11-29T09:00:01"'],
        [(PLACE_CALL, ORDER), (STATUS_CALL, STATUS)],
    ),
    (
        "claim_updated_before_it_was_created",
        ["parcels"],
        [(CLAIM_CALL, {**CLAIM, "updated_at": "2026-11-29T08:00:00"})],
        ["claim 'clm_1'", "updated_at", "lies before created_at"],
        [(CLAIM_CALL, {**CLAIM, "updated_at": "2026-11-29T09:30:00"})],
    ),
    (
        "booking_differs_from_its_showtime_and_film",
        ["cinema"],
        [
            (MOVIES_CALL, MOVIES),
            (SHOWTIMES_CALL, SHOWTIMES),
            (BOOK_CALL, {**BOOKING, "currency": "USD", "hall": "5", "movie_title": "The Long Day"}),
        ],
        ["booking 'bkg_1'"],
        [(MOVIES_CALL, MOVIES), (SHOWTIMES_CALL, SHOWTIMES), (BOOK_CALL, BOOKING)],
    ),
    (
        "film_genre_changes",
        ["cinema"],
        [
            (MOVIES_CALL, MOVIES),
            (
                ("cinema.search_movies", {"query": "long"}),
                {**MOVIES, "movies": [{**MOVIES["movies"][0], "genre": "comedy"}]},
            ),
        ],
        ["movie 'mov_1'", "immutable genre"],
        [(MOVIES_CALL, MOVIES), (("cinema.search_movies", {"query": "long"}), MOVIES)],
    ),
]


def run(apps: list[str], steps: list[Any]) -> dict[str, Any]:
    """Play ``steps`` ((tool, arguments), simulator reply) through the env, then finish; the verdict."""
    fake = FakeSimulator([reply for _, reply in steps])
    env = PhonePlanEnv(task=sim_task(apps), backend="llmsim", simulator=fake, memory=False)
    env.reset(seed=0)
    for (name, arguments), _ in steps:
        obs, *_ = env.step({"name": name, "arguments": arguments})
        assert json.loads(obs["feedback"])["ok"], obs["feedback"]
    *_, info = env.step({"name": "finish", "arguments": {"answer": "done"}})
    assert fake.replies == []  # every reply was asked for
    return info["verdict"]


@pytest.mark.parametrize(("kind", "apps", "bad", "words", "good"), CASES, ids=[c[0] for c in CASES])
def test_contradiction_is_reported_and_marks_the_verdict(kind, apps, bad, words, good) -> None:
    verdict = run(apps, bad)
    assert verdict["inconsistent"] is True
    assert verdict["inconsistencies"], kind
    joined = "\n".join(verdict["inconsistencies"])
    for word in words:
        assert word in joined, (kind, word, verdict["inconsistencies"])


@pytest.mark.parametrize(("kind", "apps", "bad", "words", "good"), CASES, ids=[c[0] for c in CASES])
def test_consistent_sequence_of_the_same_shape_reports_nothing(kind, apps, bad, words, good) -> None:
    verdict = run(apps, good)
    assert verdict["inconsistencies"] == [], kind
    assert verdict["inconsistent"] is False


def test_booking_reports_each_shared_fact_that_differs() -> None:
    verdict = run(
        ["cinema"],
        [
            (MOVIES_CALL, MOVIES),
            (SHOWTIMES_CALL, SHOWTIMES),
            (BOOK_CALL, {**BOOKING, "currency": "USD", "hall": "5", "movie_title": "The Long Day"}),
        ],
    )
    issues = verdict["inconsistencies"]
    assert len(issues) == 3
    assert any('currency "USD" differs from showtime \'shw_1\'\'s currency "EUR"' in s for s in issues)
    assert any('hall "5" differs from showtime \'shw_1\'\'s hall "3"' in s for s in issues)
    assert any('movie_title "The Long Day" differs from movie \'mov_1\'\'s title "The Long Night"' in s for s in issues)


# ------------------------------------------------------------------------------ the ledger


def test_established_facts_stand_and_a_contradiction_is_reported_once() -> None:
    ledger = FactLedger(load_sim_apps())
    assert ledger.merge("food", MENU, write=False) == []
    # a new order whose charged price differs from the menu: reported, its items kept out
    wrong = {**ORDER, "items": [{**ORDER["items"][0], "price": 10.5}], "subtotal": 10.5, "total": 12.5}
    issues = ledger.merge("food", wrong)
    assert len(issues) == 1 and "menu price 9.5" in issues[0]
    assert "items" not in ledger.facts["food.orders"]["ord_1"]
    assert ledger.facts["food.orders"]["ord_1"]["total"] == 12.5  # subtotal + fee = total held
    # a later fee is kept out as the immutable fact it contradicts; the sum still holds
    issues = ledger.merge("food", {"order_id": "ord_1", "delivery_fee": 4.0})
    assert len(issues) == 1 and "immutable delivery_fee changed from 2.0 to 4.0" in issues[0]
    assert ledger.facts["food.orders"]["ord_1"]["delivery_fee"] == 2.0
    # an order asserted wrong in one reply (nothing established to prefer) is kept as said,
    # and restating it unchanged is not a new contradiction
    lone = {**ORDER, "order_id": "ord_2", "restaurant_id": "rst_9", "total": 99.0}
    assert len(ledger.merge("food", lone)) == 1
    assert ledger.facts["food.orders"]["ord_2"]["total"] == 99.0
    assert ledger.merge("food", lone) == []


def test_referenced_entity_in_the_same_reply_is_merged_first() -> None:
    """A reply holding the restaurant after the order still checks the order against it."""
    ledger = FactLedger(load_sim_apps())
    issues = ledger.merge("food", {"order": {**ORDER, "currency": "CHF"}, "restaurant": MENU})
    assert len(issues) == 1 and 'currency "CHF" differs' in issues[0]


def test_rules_are_declared_per_app_as_data() -> None:
    apps = load_sim_apps()
    order = apps["food"].entities["order"]
    assert order.created == "placed_at" and {"currency", "subtotal", "delivery_fee"} <= set(order.immutable)
    assert [(r.total, r.parts) for r in order.sums] == [("total", ["subtotal", "delivery_fee"])]
    assert order.refs[0].lines is not None and order.refs[0].lines.same == {"price": "price", "name": "name"}
    assert "cuisine" in apps["food"].entities["restaurant"].immutable
    assert apps["parcels"].entities["claim"].created == "created_at"
    bad = apps["food"].model_dump(mode="json")
    bad["entities"]["order"]["refs"][0]["entity"] = "shop"
    with pytest.raises(ValueError, match="references unknown entity 'shop'"):
        SimApp.model_validate(bad)


def test_a_later_part_that_breaks_an_established_sum_is_kept_out() -> None:
    """With fees that may change (not immutable), a fee that no longer adds up to the
    established total is reported and the established fee stands."""
    food = load_sim_apps()["food"].model_dump(mode="json")
    food["entities"]["order"]["immutable"] = ["total"]
    ledger = FactLedger({"food": SimApp.model_validate(food)})
    assert ledger.merge("food", ORDER) == []
    issues = ledger.merge("food", {"order_id": "ord_1", "delivery_fee": 3.0})
    assert issues == ["food order 'ord_1': total 11.5 is not subtotal + delivery_fee (12.5)"]
    assert ledger.facts["food.orders"]["ord_1"]["delivery_fee"] == 2.0
    # a fee and subtotal that change together and still add up are no contradiction
    cheaper = [{**ORDER["items"][0], "price": 8.5}]
    assert ledger.merge("food", {"order_id": "ord_1", "items": cheaper, "subtotal": 8.5, "delivery_fee": 3.0}) == []
    assert ledger.facts["food.orders"]["ord_1"]["delivery_fee"] == 3.0
