"""The shop app through the sandbox backend: catalogue, cart, checkout, orders and the ordered
returns procedure. Amounts and slots below are worked out by hand from the fixtures.

The fixture clock is 2026-11-10 10:00 (Europe/Berlin), a Tuesday."""

from __future__ import annotations

from typing import Any

import jsonschema

from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, Feedback, Fixtures, TaskSpec

SHOES = {"id": "p_1", "name": "Trail running shoes", "brand": "Stridex", "category": "shoes", "price": 89.9,
         "currency": "EUR", "sizes": ["42", "43"], "stock": {"42": 0, "43": 2}}  # fmt: skip
PAN = {"id": "p_2", "name": "Cast-iron pan", "brand": "Ferro", "category": "kitchen", "price": 39.5,
       "currency": "EUR", "sizes": [], "stock": {"": 5}}  # fmt: skip
HOME = {"id": "ad_1", "label": "home", "name": "Ana Lima", "street": "Linden Street 12", "city": "Berlin",
        "postcode": "10115", "default": True}  # fmt: skip
WORK = {**HOME, "id": "ad_2", "label": "work", "street": "Market Tower 14", "default": False}
DELIVERED = {"id": "o_1", "items": [{"product_id": "p_1", "name": "Trail running shoes", "size": "43", "qty": 1,
             "price": 89.9}], "total": 89.9, "currency": "EUR", "address_id": "ad_1", "status": "delivered",
             "placed": "2026-11-01T09:00:00", "delivered": "2026-11-03T12:00"}  # fmt: skip
PLACED = {**DELIVERED, "id": "o_2", "status": "placed", "placed": "2026-11-09T20:00:00", "delivered": None}
OLD = {**DELIVERED, "id": "o_3", "placed": "2026-09-01T09:00:00", "delivered": "2026-09-03T12:00"}

TASK = TaskSpec(
    id="shop/test",
    domain="shopping",
    goal="test",
    criteria=[AnswerCriterion(equals="ok")],
    apps=["shop"],
    fixtures=Fixtures(
        clock="2026-11-10T10:00:00",
        timezone="Europe/Berlin",
        records={
            "shop.products": [SHOES, PAN],
            "shop.addresses": [HOME, WORK],
            "shop.orders": [DELIVERED, PLACED, OLD],
        },
    ),
)


class Phone:
    def __init__(self) -> None:
        self.b = SandboxBackend()
        self.b.reset(TASK)

    def __call__(self, name: str, **args: Any) -> Feedback:
        return self.b.call(name, self.b.tools()[name].validator.validate(args))

    def table(self, name: str) -> dict[str, dict[str, Any]]:
        return dict(self.b.tables()[name])


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def err(fb: Feedback) -> str:
    assert not fb.ok, fb
    return fb.error.value if hasattr(fb.error, "value") else str(fb.error)


def test_search_every_word_cheapest_first():
    p = Phone()
    assert [x["id"] for x in ok(p("shop.search", query="running stridex"))["products"]] == ["p_1"]
    assert ok(p("shop.search", query="e"))["total"] == 2
    assert [x["id"] for x in ok(p("shop.search", query="e"))["products"]] == ["p_2", "p_1"]  # 39.5 before 89.9
    assert ok(p("shop.search", query="shoes", max_price=50))["total"] == 0


def test_cart_and_checkout_to_a_saved_address():
    p = Phone()
    assert err(p("shop.add_to_cart", product_id="p_1", size="42")) == "precondition_failed"  # sold out
    assert err(p("shop.add_to_cart", product_id="p_1")) == "invalid_arguments"  # needs a size
    assert err(p("shop.add_to_cart", product_id="p_2", size="M")) == "invalid_arguments"  # one size
    ok(p("shop.add_to_cart", product_id="p_1", size="43"))
    cart = ok(p("shop.add_to_cart", product_id="p_2", qty=2))
    assert cart["total"] == 168.9  # 89.90 + 2 x 39.50
    assert err(p("shop.add_to_cart", product_id="p_1", size="43", qty=2)) == "precondition_failed"  # 3 > 2 in stock
    assert ok(p("shop.update_cart", line_id="ci_2", qty=1))["total"] == 129.4
    order = ok(p("shop.checkout", address_id="ad_2"))
    assert order["id"] == "o_4" and order["total"] == 129.4 and order["address_id"] == "ad_2"
    assert order["items"][1] == {"product_id": "p_2", "name": "Cast-iron pan", "size": "", "qty": 1, "price": 39.5}
    assert p.table("shop.cart") == {}
    assert err(p("shop.checkout")) == "precondition_failed"  # empty cart


def test_cancel_only_before_shipping():
    p = Phone()
    assert ok(p("shop.cancel_order", order_id="o_2"))["status"] == "cancelled"
    assert err(p("shop.cancel_order", order_id="o_1")) == "precondition_failed"
    assert err(p("shop.cancel_order", order_id="o_99")) == "not_found"


def test_return_steps_in_order():
    p = Phone()
    assert err(p("shop.start_return", order_id="o_1", product_id="p_1", reason="meh")) == "invalid_arguments"
    assert err(p("shop.start_return", order_id="o_2", product_id="p_1", reason="too small")) == "precondition_failed"
    assert err(p("shop.start_return", order_id="o_3", product_id="p_1", reason="too small")) == "precondition_failed"
    r = ok(p("shop.start_return", order_id="o_1", product_id="p_1", reason="Too  Small"))
    assert (r["id"], r["status"], r["reason"], r["size"]) == ("r_1", "started", "too small", "43")
    fb = p("shop.confirm_return", return_id="r_1")  # out of order: no slot yet
    assert err(fb) == "precondition_failed"
    assert p.table("shop.returns")["r_1"]["status"] == "started"
    slots = ok(p("shop.pickup_slots", return_id="r_1"))["slots"]
    assert slots[:3] == ["2026-11-11T09:00", "2026-11-11T13:00", "2026-11-11T17:00"] and len(slots) == 9
    assert err(p("shop.choose_pickup", return_id="r_1", slot="2026-11-11T10:00")) == "invalid_arguments"
    assert ok(p("shop.choose_pickup", return_id="r_1", slot="2026-11-12T13:00"))["status"] == "scheduled"
    done = ok(p("shop.confirm_return", return_id="r_1"))
    assert (done["status"], done["slot"]) == ("confirmed", "2026-11-12T13:00")
    assert err(p("shop.choose_pickup", return_id="r_1", slot="2026-11-11T09:00")) == "precondition_failed"
    assert err(p("shop.start_return", order_id="o_1", product_id="p_1", reason="damaged")) == "conflict"


def test_every_tool_schema_is_valid():
    tools = {
        n: t for n, t in SandboxBackend().tools().items() if n.split(".")[0] in ("shop", "restaurants", "delivery")
    }
    assert len(tools) == 33
    for t in tools.values():
        jsonschema.Draft202012Validator.check_schema(t.spec.parameters)
        assert t.spec.description
    assert tools["shop.checkout"].spec.effect.value == "sensitive"
    assert all(t.spec.requires_login for n, t in tools.items() if n.startswith("delivery."))
