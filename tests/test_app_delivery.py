"""The delivery app through the sandbox backend: signed out by fixture, signed in from the vault,
then menu, basket, order, tracking. Totals below are worked out by hand from the fixtures.

The fixture clock is 2026-11-10 19:00 (Europe/Berlin); each call adds a second, so an order placed
then is due 30 minutes later at 19:30."""

from __future__ import annotations

from typing import Any

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Feedback, Fixtures, TaskSpec

ROMA = {"id": "dr_1", "name": "Pizza Roma", "cuisine": "pizza", "rating": 4.5, "delivery_fee": 2.5,
        "min_order": 10.0, "eta_minutes": 30, "currency": "EUR", "open_now": True}  # fmt: skip
YAMA = {**ROMA, "id": "dr_2", "name": "Sushi Yama", "cuisine": "sushi", "rating": 4.8}
MARG = {"id": "mi_1", "restaurant_id": "dr_1", "name": "Margherita", "description": "", "price": 8.5, "available": True}
TIRA = {**MARG, "id": "mi_2", "name": "Tiramisu", "price": 5.5}
GONE = {**MARG, "id": "mi_3", "name": "Calzone", "available": False}
MAKI = {**MARG, "id": "mi_4", "restaurant_id": "dr_2", "name": "Salmon Maki", "price": 7.0}
TASK = TaskSpec(
    id="delivery/test",
    domain="food",
    goal="test",
    criteria=[AnswerCriterion(equals="ok")],
    apps=["delivery", "system"],
    fixtures=Fixtures(
        clock="2026-11-10T19:00:00",
        timezone="Europe/Berlin",
        records={"delivery.restaurants": [ROMA, YAMA], "delivery.menu": [MARG, TIRA, GONE, MAKI]},
        accounts={"delivery": {"account": "ana@example.com", "signed_in": False}},
        vault={"ana@example.com": "pw-12345678"},
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


def test_signed_out_until_signed_in_from_the_vault():
    p = Phone()
    fb = p("delivery.search", query="pizza")
    assert err(fb) == "login_required" and "ana@example.com" in fb.hint
    ok(p("system.sign_in", app="delivery", account="ana@example.com"))
    assert [r["id"] for r in ok(p("delivery.search", query="maki"))["restaurants"]] == ["dr_2"]  # by dish


def test_basket_order_and_tracking():
    p = Phone()
    ok(p("system.sign_in", app="delivery", account="ana@example.com"))
    assert err(p("delivery.place_order")) == "precondition_failed"  # empty basket
    assert err(p("delivery.add_to_basket", item_id="mi_3")) == "precondition_failed"  # sold out
    ok(p("delivery.add_to_basket", item_id="mi_1"))
    assert err(p("delivery.add_to_basket", item_id="mi_4")) == "conflict"  # another restaurant
    assert err(p("delivery.place_order")) == "precondition_failed"  # 8.50 < 10 minimum
    basket = ok(p("delivery.add_to_basket", item_id="mi_2", qty=2))
    assert (basket["subtotal"], basket["delivery_fee"], basket["total"]) == (19.5, 2.5, 22.0)  # 8.5 + 2 x 5.5
    order = ok(p("delivery.place_order"))
    assert (order["id"], order["total"], order["eta"], order["status"]) == ("do_1", 22.0, "2026-11-10T19:30", "placed")
    assert ok(p("delivery.view_basket"))["lines"] == []
    assert ok(p("delivery.track_order", order_id="do_1"))["eta"] == "2026-11-10T19:30"
    assert ok(p("delivery.cancel_order", order_id="do_1"))["status"] == "cancelled"
    assert err(p("delivery.cancel_order", order_id="do_1")) == "precondition_failed"
    assert err(p("delivery.track_order", order_id="do_9")) == "not_found"
