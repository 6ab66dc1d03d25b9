"""Delivery: a food-delivery app behind a sign-in (menus, a basket, orders, tracking).

Every tool needs the app's account signed in (``system.sign_in`` with ``app="delivery"``; the
password comes from the phone's vault). Tasks start signed out.

Tables:

- ``delivery.restaurants`` ``{"id": "dr_1", "name": "Pizza Roma", "cuisine": "pizza",
  "rating": 4.5, "delivery_fee": 2.0, "min_order": 12.0, "eta_minutes": 30, "currency": "EUR",
  "open_now": True}``.
- ``delivery.menu`` ``{"id": "mi_1", "restaurant_id": "dr_1", "name": "Margherita",
  "description": str, "price": 8.5, "available": True}``.
- ``delivery.basket`` ``{"id": "bk_1", "item_id": "mi_1", "restaurant_id": "dr_1", "name": str,
  "qty": 2, "price": 8.5}``: one restaurant at a time.
- ``delivery.orders`` ``{"id": "do_1", "restaurant_id": "dr_1", "restaurant": str, "items":
  [{"item_id", "name", "qty", "price"}], "subtotal": 17.0, "delivery_fee": 2.0, "total": 19.0,
  "currency": "EUR", "status": "placed" | "preparing" | "on_the_way" | "delivered" |
  "cancelled", "placed": time, "eta": "YYYY-MM-DDTHH:MM"}``. Placing an order empties the basket;
  the eta is the placing time plus the restaurant's ``eta_minutes``. An order can be cancelled
  while it is ``placed``.

No faithful Android path: a delivery app's menus, basket and orders live on its servers and in
private storage, with no public content provider; the tools run on the sandbox only.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, Deleted, format_local_time, id_key
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.tools import ToolError, tool


class DeliveryRestaurant(TypedDict):
    """A restaurant that delivers."""

    id: str
    name: str
    cuisine: str
    rating: float
    delivery_fee: float
    min_order: float
    eta_minutes: int
    currency: str
    open_now: bool


class MenuItem(TypedDict):
    """A dish on a restaurant's menu."""

    id: str
    restaurant_id: str
    name: str
    description: str
    price: float
    available: bool


class BasketLine(TypedDict):
    """A line of the basket."""

    id: str
    item_id: str
    restaurant_id: str
    name: str
    qty: int
    price: float


class DeliveryItem(TypedDict):
    """An ordered dish."""

    item_id: str
    name: str
    qty: int
    price: float


class DeliveryOrder(TypedDict):
    """A delivery order."""

    id: str
    restaurant_id: str
    restaurant: str
    items: list[DeliveryItem]
    subtotal: float
    delivery_fee: float
    total: float
    currency: str
    status: str
    placed: str
    eta: str


class RestaurantHits(TypedDict):
    """Search results, best rated first."""

    restaurants: list[DeliveryRestaurant]
    total: int


class Menu(TypedDict):
    """A restaurant's menu."""

    restaurant_id: str
    name: str
    currency: str
    items: list[MenuItem]


class Basket(TypedDict):
    """The basket: lines, subtotal, the restaurant's delivery fee and the total."""

    lines: list[BasketLine]
    subtotal: float
    delivery_fee: float
    total: float
    currency: str


class DeliveryOrders(TypedDict):
    """Orders, newest first."""

    orders: list[DeliveryOrder]
    total: int


def _money(x: float) -> float:
    return round(x + 1e-9, 2)


def _order(rec: dict[str, Any]) -> DeliveryOrder:
    return {**rec, "items": [dict(i) for i in rec["items"]]}  # type: ignore[typeddict-item]


class Delivery(App):
    """A food-delivery app with an account."""

    name = "delivery"
    title = "Deliveroo"
    domain = Domain.FOOD
    package = "com.example.delivery"
    requires_account = True
    tables: ClassVar[dict[str, str]] = {"restaurants": "dr_", "menu": "mi_", "basket": "bk_", "orders": "do_"}
    records: ClassVar[dict[str, Any]] = {
        "restaurants": DeliveryRestaurant,
        "menu": MenuItem,
        "basket": BasketLine,
        "orders": DeliveryOrder,
    }

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "restaurants":
            return f"{record['name']} ({record['cuisine']}) {record['rating']}*, {record['eta_minutes']} min"
        if table in ("menu", "basket"):
            qty = f"{record['qty']} x " if table == "basket" else ""
            return f"{qty}{record['name']} - {record['price']}"
        if table == "orders":
            return f"{record['restaurant']}: {record['status']}, {record['total']} {record['currency']}"
        return super().row(table, record)

    def _rest(self, restaurant_id: str) -> dict[str, Any]:
        return self.require("restaurants", restaurant_id, "restaurant", "delivery.search")

    def _basket(self) -> Basket:
        lines = sorted(self.t("basket").values(), key=lambda r: id_key(r["id"]))
        sub = _money(sum(r["price"] * r["qty"] for r in lines))
        rest = self.t("restaurants").get(lines[0]["restaurant_id"]) if lines else None
        fee = float(rest["delivery_fee"]) if rest else 0.0
        cur = rest["currency"] if rest else next((r["currency"] for r in self.t("restaurants").values()), "EUR")
        self.show_list("basket", [r["id"] for r in lines])
        return {
            "lines": [dict(r) for r in lines],
            "subtotal": sub,
            "delivery_fee": fee,
            "total": _money(sub + fee),
            "currency": cur,
        }  # type: ignore[misc]

    @tool(requires_login=True)
    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=100)],
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
    ) -> RestaurantHits:
        """Find restaurants that deliver, by name, cuisine or a dish on their menu
        (case-insensitive), best rated first.

        Args:
            query: A restaurant name, a cuisine or a dish, e.g. "pho".
            limit: Maximum number of restaurants returned.
        """
        q = " ".join(query.split()).casefold()
        if not q:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the query is blank", hint="search for a word", path="/query")
        dishes = {m["restaurant_id"] for m in self.t("menu").values() if q in m["name"].casefold()}
        hits = [
            r
            for r in self.t("restaurants").values()
            if q in r["name"].casefold() or q in r["cuisine"].casefold() or r["id"] in dishes
        ]
        hits.sort(key=lambda r: (-r["rating"], id_key(r["id"])))
        self.show_list("restaurants", [r["id"] for r in hits[:limit]])
        return {"restaurants": [dict(r) for r in hits[:limit]], "total": len(hits)}  # type: ignore[misc]

    @tool(requires_login=True)
    def get_menu(self, restaurant_id: str) -> Menu:
        """A restaurant's menu with prices and what is available now.

        Args:
            restaurant_id: The restaurant's id, e.g. "dr_2".
        """
        rest = self._rest(restaurant_id)
        items = sorted(
            (m for m in self.t("menu").values() if m["restaurant_id"] == restaurant_id), key=lambda m: id_key(m["id"])
        )
        self.show_list("menu", [m["id"] for m in items])
        return {
            "restaurant_id": restaurant_id,
            "name": rest["name"],
            "currency": rest["currency"],
            "items": [dict(m) for m in items],
        }  # type: ignore[misc]

    @tool(requires_login=True)
    def view_basket(self) -> Basket:
        """The basket with its subtotal, delivery fee and total."""
        return self._basket()

    @tool(effect=Effect.WRITE, requires_login=True, writes=("basket",))
    def add_to_basket(
        self, item_id: str, qty: Annotated[int, Field(ge=1, le=20, description="How many, 1 to 20")] = 1
    ) -> Basket:
        """Put a dish in the basket (a dish already there gets its quantity raised). The basket
        holds dishes of one restaurant at a time.

        Args:
            item_id: The dish's id from delivery.get_menu, e.g. "mi_7".
            qty: How many.
        """
        item = self.require("menu", item_id, "dish", "delivery.get_menu")
        if not item["available"]:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"{item['name']} is sold out right now",
                hint="pick another dish",
                path="/item_id",
            )
        other = next((r for r in self.t("basket").values() if r["restaurant_id"] != item["restaurant_id"]), None)
        if other is not None:
            raise ToolError(
                ErrorKind.CONFLICT,
                "the basket holds dishes of another restaurant",
                hint="remove them with delivery.remove_from_basket first",
                path="/item_id",
            )
        line = next((r for r in self.t("basket").values() if r["item_id"] == item_id), None)
        total = qty + (line["qty"] if line else 0)
        if total > 20:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "at most 20 of a dish", hint="lower qty", path="/qty")
        if line:
            self.patch("basket", line["id"], qty=total)
        else:
            rec = {"id": self.new_id("basket"), "item_id": item_id, "restaurant_id": item["restaurant_id"]}
            self.put("basket", {**rec, "name": item["name"], "qty": qty, "price": item["price"]})
        return self._basket()

    @tool(effect=Effect.WRITE, requires_login=True, writes=("basket",))
    def remove_from_basket(self, line_id: str) -> Deleted:
        """Take a line out of the basket.

        Args:
            line_id: The basket line's id from delivery.view_basket, e.g. "bk_1".
        """
        self.require("basket", line_id, "basket line", "delivery.view_basket")
        self.remove("basket", line_id)
        self._basket()
        return {"deleted": line_id}

    @tool(effect=Effect.SENSITIVE, requires_login=True, writes=("basket", "orders"))
    def place_order(self) -> DeliveryOrder:
        """Order the basket for delivery home, paid with the saved card; the basket is emptied."""
        lines = sorted(self.t("basket").values(), key=lambda r: id_key(r["id"]))
        if not lines:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED, "the basket is empty", hint="add dishes with delivery.add_to_basket"
            )
        rest = self._rest(lines[0]["restaurant_id"])
        if not rest["open_now"]:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED, f"{rest['name']} is closed now", hint="order from another restaurant"
            )
        basket = self._basket()
        if basket["subtotal"] < rest["min_order"]:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"{rest['name']} delivers from {rest['min_order']} {rest['currency']}; the basket is {basket['subtotal']}",
                hint="add more dishes",
            )
        now = self.now()
        order = {
            "id": self.new_id("orders"),
            "restaurant_id": rest["id"],
            "restaurant": rest["name"],
            "items": [
                {"item_id": r["item_id"], "name": r["name"], "qty": r["qty"], "price": r["price"]} for r in lines
            ],
            "subtotal": basket["subtotal"],
            "delivery_fee": basket["delivery_fee"],
            "total": basket["total"],
            "currency": basket["currency"],
            "status": "placed",
            "placed": self.now_str(),
            "eta": format_local_time(now + dt.timedelta(minutes=rest["eta_minutes"])),
        }
        self.put("orders", order)
        for r in lines:
            self.remove("basket", r["id"])
        self.show_detail("orders", order["id"])
        return _order(order)

    @tool(requires_login=True)
    def list_orders(self) -> DeliveryOrders:
        """Past and current orders, newest first."""
        recs = sorted(self.t("orders").values(), key=lambda r: (r["placed"], id_key(r["id"])), reverse=True)
        self.show_list("orders", [r["id"] for r in recs])
        return {"orders": [_order(r) for r in recs], "total": len(recs)}

    @tool(requires_login=True)
    def track_order(self, order_id: str) -> DeliveryOrder:
        """An order's status and expected delivery time.

        Args:
            order_id: The order's id, e.g. "do_3".
        """
        rec = self.require("orders", order_id, "order", "delivery.list_orders")
        self.show_detail("orders", order_id)
        return _order(rec)

    @tool(effect=Effect.SENSITIVE, requires_login=True, writes=("orders",))
    def cancel_order(self, order_id: str) -> DeliveryOrder:
        """Cancel an order the restaurant has not started on (status placed); the money goes back.

        Args:
            order_id: The order's id, e.g. "do_3".
        """
        rec = self.require("orders", order_id, "order", "delivery.list_orders")
        if rec["status"] != "placed":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"order {order_id} is {rec['status']} and can no longer be cancelled",
                hint="contact the restaurant",
            )
        rec = self.patch("orders", order_id, status="cancelled")
        self.show_detail("orders", order_id)
        return _order(rec)
