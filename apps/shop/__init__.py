"""Shop: an online store's app: catalogue, cart, checkout to a saved address, orders and returns.

Tables:

- ``shop.products`` ``{"id": "p_1", "name": "Trail running shoes", "brand": str, "category": str,
  "price": 89.9, "currency": "EUR", "sizes": ["42", "43"], "stock": {"42": 3, "43": 0}}``: the
  catalogue. ``sizes`` is empty for a one-size product, whose stock is under the key ``""``.
  Stock is the shop's count when the task starts: checkout refuses more than it, and the sandbox
  does not count the user's own purchase down (other shoppers are not simulated either).
- ``shop.cart`` ``{"id": "ci_1", "product_id": "p_1", "name": str, "size": "43" | "", "qty": 1,
  "price": 89.9}``: one line per product and size.
- ``shop.addresses`` ``{"id": "ad_1", "label": "home", "name": str, "street": str, "city": str,
  "postcode": str, "default": bool}``: saved delivery addresses.
- ``shop.orders`` ``{"id": "o_1", "items": [{"product_id", "name", "size", "qty", "price"}],
  "total": float, "currency": str, "address_id": "ad_1", "status": "placed" | "shipped" |
  "delivered" | "cancelled", "placed": "YYYY-MM-DDTHH:MM:SS", "delivered": time | None}``.
- ``shop.returns`` ``{"id": "r_1", "order_id": "o_1", "product_id": "p_1", "size": str,
  "reason": str, "status": "started" | "scheduled" | "confirmed", "slot": "YYYY-MM-DDTHH:MM" |
  None, "created": time}``.

A return goes through three steps, in this order: ``shop.start_return`` (an item of a delivered
order and a reason), ``shop.choose_pickup`` (one of the slots ``shop.pickup_slots`` offers), then
``shop.confirm_return``. A step out of order is ``precondition_failed``, and the return's
``status`` shows how far it got. A slot may be changed until the return is confirmed.

No faithful Android path: a store's app keeps its catalogue, cart and orders on its own servers
and in private storage, with no public content provider and no intent that reads them back.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, Deleted, format_local_time, id_key, parse_local_time
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.tools import ToolError, tool

RETURN_DAYS = 30
"""Days after delivery in which an item may be returned."""
PICKUP_HOURS = (9, 13, 17)
"""Start hours of the pickup slots offered each day (three hours each)."""
PICKUP_DAYS = 3
"""Pickup slots are offered on this many days, starting tomorrow."""
REASONS = ("too small", "too big", "damaged", "not as described", "changed my mind", "wrong item")
"""The return reasons the shop accepts."""

Qty = Annotated[int, Field(ge=1, le=10, description="How many, 1 to 10")]


class Product(TypedDict):
    """A catalogue product."""

    id: str
    name: str
    brand: str
    category: str
    price: float
    currency: str
    sizes: list[str]
    stock: dict[str, int]


class CartLine(TypedDict):
    """One line of the cart."""

    id: str
    product_id: str
    name: str
    size: str
    qty: int
    price: float


class Address(TypedDict):
    """A saved delivery address."""

    id: str
    label: str
    name: str
    street: str
    city: str
    postcode: str
    default: bool


class OrderItem(TypedDict):
    """One item of an order."""

    product_id: str
    name: str
    size: str
    qty: int
    price: float


class Order(TypedDict):
    """An order."""

    id: str
    items: list[OrderItem]
    total: float
    currency: str
    address_id: str
    status: str
    placed: str
    delivered: str | None


class Return(TypedDict):
    """A return of one item of an order."""

    id: str
    order_id: str
    product_id: str
    size: str
    reason: str
    status: str
    slot: str | None
    created: str


class ProductList(TypedDict):
    """Search results."""

    products: list[Product]
    total: int


class Cart(TypedDict):
    """The cart: its lines and their total."""

    lines: list[CartLine]
    total: float
    currency: str


class OrderList(TypedDict):
    """Orders, newest first."""

    orders: list[Order]
    total: int


class AddressList(TypedDict):
    """Saved addresses."""

    addresses: list[Address]


class Slots(TypedDict):
    """Pickup slots offered for a return: start times, each slot three hours long."""

    return_id: str
    slots: list[str]


def _money(x: float) -> float:
    return round(x + 1e-9, 2)


def _product(rec: dict[str, Any]) -> Product:
    return {**rec, "sizes": list(rec["sizes"]), "stock": dict(rec["stock"])}  # type: ignore[typeddict-item]


def _order(rec: dict[str, Any]) -> Order:
    return {**rec, "items": [dict(i) for i in rec["items"]]}  # type: ignore[typeddict-item]


class Shop(App):
    """An online store."""

    name = "shop"
    title = "Shop"
    domain = Domain.SHOPPING
    package = "com.example.shop"
    tables: ClassVar[dict[str, str]] = {
        "products": "p_",
        "cart": "ci_",
        "addresses": "ad_",
        "orders": "o_",
        "returns": "r_",
    }
    records: ClassVar[dict[str, Any]] = {
        "products": Product,
        "cart": CartLine,
        "addresses": Address,
        "orders": Order,
        "returns": Return,
    }

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "products":
            sizes = f" (sizes {', '.join(record['sizes'])})" if record["sizes"] else ""
            return f"{record['name']} - {record['price']} {record['currency']}{sizes}"
        if table == "cart":
            size = f" size {record['size']}" if record["size"] else ""
            return f"{record['qty']} x {record['name']}{size}"
        if table == "orders":
            return f"{record['id']}: {record['status']}, {record['total']} {record['currency']}"
        if table == "returns":
            return f"{record['id']}: {record['status']} ({record['reason']})"
        if table == "addresses":
            return f"{record['label']}: {record['street']}, {record['city']}"
        return super().row(table, record)

    # -- helpers ------------------------------------------------------------------------------
    def _product_rec(self, product_id: str) -> dict[str, Any]:
        return self.require("products", product_id, "product", "shop.search")

    def _size(self, prod: dict[str, Any], size: str | None) -> str:
        """The size key of ``prod`` for ``size``: required when the product comes in sizes."""
        if not prod["sizes"]:
            if size:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    f"{prod['name']} comes in one size",
                    hint="leave size out",
                    path="/size",
                )
            return ""
        if not size:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{prod['name']} comes in sizes: pick one",
                hint="pass one of its sizes",
                path="/size",
                candidates=list(prod["sizes"]),
            )
        match = next((s for s in prod["sizes"] if s.casefold() == size.strip().casefold()), None)
        if match is None:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{prod['name']} has no size {size!r}",
                hint="pass one of its sizes",
                path="/size",
                candidates=list(prod["sizes"]),
            )
        return match

    def _check_stock(self, prod: dict[str, Any], size: str, qty: int, path: str) -> None:
        have = int(prod["stock"].get(size, 0))
        if qty > have:
            what = f"{prod['name']}" + (f" in size {size}" if size else "")
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"only {have} of {what} in stock, {qty} asked",
                hint="lower the quantity or pick another size" if have else "pick another size or product",
                path=path,
            )

    def _cart(self) -> Cart:
        lines = sorted(self.t("cart").values(), key=lambda r: id_key(r["id"]))
        cur = next((p["currency"] for p in self.t("products").values()), "EUR")
        total = _money(sum(r["price"] * r["qty"] for r in lines))
        return {"lines": [dict(r) for r in lines], "total": total, "currency": cur}  # type: ignore[misc]

    def _return_rec(self, return_id: str) -> dict[str, Any]:
        return self.require("returns", return_id, "return", "shop.list_returns")

    def _slots(self) -> list[str]:
        day = self.now().date()
        out = []
        for d in range(1, PICKUP_DAYS + 1):
            for h in PICKUP_HOURS:
                out.append(format_local_time(dt.datetime.combine(day + dt.timedelta(days=d), dt.time(h))))
        return out

    # -- catalogue ----------------------------------------------------------------------------
    @tool()
    def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=100)],
        category: Annotated[str, Field(max_length=40)] | None = None,
        max_price: Annotated[float, Field(ge=0)] | None = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
    ) -> ProductList:
        """Search the catalogue by words of a product's name, brand or category
        (case-insensitive; every word must match), cheapest first.

        Args:
            query: Words to look for, e.g. "running shoes" or a brand.
            category: Only this category, e.g. "shoes".
            max_price: Only products at most this price, in the shop's currency.
            limit: Maximum number of products returned.
        """
        words = query.casefold().split()
        if not words:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "the query is blank", hint="search for a word", path="/query")
        hits = []
        for p in self.t("products").values():
            text = f"{p['name']} {p['brand']} {p['category']}".casefold()
            if not all(w in text for w in words):
                continue
            if category and p["category"].casefold() != category.strip().casefold():
                continue
            if max_price is not None and p["price"] > max_price:
                continue
            hits.append(p)
        hits.sort(key=lambda p: (p["price"], id_key(p["id"])))
        self.show_list("products", [p["id"] for p in hits[:limit]])
        return {"products": [_product(p) for p in hits[:limit]], "total": len(hits)}

    @tool()
    def get_product(self, product_id: str) -> Product:
        """A product's details: price, sizes and stock per size.

        Args:
            product_id: The product's id, e.g. "p_4".
        """
        rec = self._product_rec(product_id)
        self.show_detail("products", product_id)
        return _product(rec)

    # -- cart ---------------------------------------------------------------------------------
    @tool()
    def view_cart(self) -> Cart:
        """The cart's lines and their total."""
        return self._show_cart()

    @tool(effect=Effect.WRITE, writes=("cart",))
    def add_to_cart(
        self, product_id: str, size: Annotated[str, Field(max_length=20)] | None = None, qty: Qty = 1
    ) -> Cart:
        """Put a product in the cart; a product and size already there gets its quantity raised.

        Args:
            product_id: The product's id, e.g. "p_4".
            size: The size, for a product that comes in sizes, e.g. "43" or "M".
            qty: How many to add.
        """
        prod = self._product_rec(product_id)
        key = self._size(prod, size)
        line = next((r for r in self.t("cart").values() if r["product_id"] == product_id and r["size"] == key), None)
        total = qty + (line["qty"] if line else 0)
        if total > 10:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "at most 10 of a product per order", hint="lower qty", path="/qty"
            )
        self._check_stock(prod, key, total, "/qty")
        if line:
            self.patch("cart", line["id"], qty=total)
        else:
            rec = {"id": self.new_id("cart"), "product_id": product_id, "name": prod["name"], "size": key}
            self.put("cart", {**rec, "qty": qty, "price": prod["price"]})
        return self._show_cart()

    def _show_cart(self) -> Cart:
        cart = self._cart()
        self.show_list("cart", [r["id"] for r in cart["lines"]])
        return cart

    @tool(effect=Effect.WRITE, writes=("cart",))
    def update_cart(self, line_id: str, qty: Annotated[int, Field(ge=0, le=10)]) -> Cart:
        """Change how many of a cart line to buy; 0 removes the line.

        Args:
            line_id: The cart line's id, e.g. "ci_2" (from shop.view_cart).
            qty: The new quantity, 0 to 10.
        """
        line = self.require("cart", line_id, "cart line", "shop.view_cart")
        if qty == 0:
            self.remove("cart", line_id)
        elif qty != line["qty"]:
            self._check_stock(self._product_rec(line["product_id"]), line["size"], qty, "/qty")
            self.patch("cart", line_id, qty=qty)
        return self._show_cart()

    @tool(effect=Effect.WRITE, writes=("cart",))
    def remove_from_cart(self, line_id: str) -> Deleted:
        """Take a line out of the cart.

        Args:
            line_id: The cart line's id, e.g. "ci_2" (from shop.view_cart).
        """
        self.require("cart", line_id, "cart line", "shop.view_cart")
        self.remove("cart", line_id)
        self._show_cart()
        return {"deleted": line_id}

    # -- checkout and orders ------------------------------------------------------------------
    @tool()
    def list_addresses(self) -> AddressList:
        """The saved delivery addresses, the default first."""
        recs = sorted(self.t("addresses").values(), key=lambda r: (not r["default"], id_key(r["id"])))
        self.show_list("addresses", [r["id"] for r in recs])
        return {"addresses": [dict(r) for r in recs]}  # type: ignore[misc]

    @tool(effect=Effect.SENSITIVE, writes=("cart", "orders"))
    def checkout(self, address_id: str | None = None) -> Order:
        """Buy everything in the cart with the saved card and send it to a saved address; the
        cart is emptied.

        Args:
            address_id: A saved address's id, e.g. "ad_2"; the default address when left out.
        """
        lines = sorted(self.t("cart").values(), key=lambda r: id_key(r["id"]))
        if not lines:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED, "the cart is empty", hint="add products with shop.add_to_cart"
            )
        if address_id is None:
            addr = next((a for a in self.t("addresses").values() if a["default"]), None)
            if addr is None:
                raise ToolError(
                    ErrorKind.INVALID_ARGUMENTS,
                    "no default address",
                    hint="pass an address_id from shop.list_addresses",
                    path="/address_id",
                )
        else:
            addr = self.require("addresses", address_id, "address", "shop.list_addresses")
        for line in lines:
            self._check_stock(self._product_rec(line["product_id"]), line["size"], line["qty"], "/address_id")
        cart = self._cart()
        order = {
            "id": self.new_id("orders"),
            "items": [
                {
                    "product_id": r["product_id"],
                    "name": r["name"],
                    "size": r["size"],
                    "qty": r["qty"],
                    "price": r["price"],
                }
                for r in lines
            ],
            "total": cart["total"],
            "currency": cart["currency"],
            "address_id": addr["id"],
            "status": "placed",
            "placed": self.now_str(),
            "delivered": None,
        }
        self.put("orders", order)
        for r in lines:
            self.remove("cart", r["id"])
        self.show_detail("orders", order["id"])
        return _order(order)

    @tool()
    def list_orders(
        self,
        status: Annotated[str, Field(pattern="^(placed|shipped|delivered|cancelled)$")] | None = None,
    ) -> OrderList:
        """The user's orders, newest first.

        Args:
            status: Only orders in this status: placed, shipped, delivered or cancelled.
        """
        recs = [r for r in self.t("orders").values() if status is None or r["status"] == status]
        recs.sort(key=lambda r: (r["placed"], id_key(r["id"])), reverse=True)
        self.show_list("orders", [r["id"] for r in recs])
        return {"orders": [_order(r) for r in recs], "total": len(recs)}

    @tool()
    def get_order(self, order_id: str) -> Order:
        """One order with its items, status and delivery time.

        Args:
            order_id: The order's id, e.g. "o_3".
        """
        rec = self.require("orders", order_id, "order", "shop.list_orders")
        self.show_detail("orders", order_id)
        return _order(rec)

    @tool(effect=Effect.SENSITIVE, writes=("orders",))
    def cancel_order(self, order_id: str) -> Order:
        """Cancel an order that has not shipped yet; the money goes back to the card.

        Args:
            order_id: The order's id, e.g. "o_3".
        """
        rec = self.require("orders", order_id, "order", "shop.list_orders")
        if rec["status"] != "placed":
            hint = (
                "start a return once it is delivered" if rec["status"] in ("shipped", "delivered") else "nothing to do"
            )
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED, f"order {order_id} is {rec['status']} and cannot be cancelled", hint=hint
            )
        rec = self.patch("orders", order_id, status="cancelled")
        self.show_detail("orders", order_id)
        return _order(rec)

    # -- returns --------------------------------------------------------------------------------
    @tool()
    def list_returns(self) -> dict[str, list[Return]]:
        """The user's returns with how far each got (started, scheduled, confirmed)."""
        recs = sorted(self.t("returns").values(), key=lambda r: id_key(r["id"]))
        self.show_list("returns", [r["id"] for r in recs])
        return {"returns": [dict(r) for r in recs]}  # type: ignore[misc]

    @tool(effect=Effect.WRITE, writes=("returns",))
    def start_return(
        self,
        order_id: str,
        product_id: str,
        reason: Annotated[str, Field(min_length=1, max_length=40)],
    ) -> Return:
        """Step 1 of a return: name the item of a delivered order and why it goes back. Then
        pick a pickup slot (shop.pickup_slots, shop.choose_pickup) and confirm (shop.confirm_return).

        Args:
            order_id: The order's id, e.g. "o_3".
            product_id: The product to return, one of the order's items.
            reason: One of: too small, too big, damaged, not as described, changed my mind, wrong item.
        """
        order = self.require("orders", order_id, "order", "shop.list_orders")
        item = next((i for i in order["items"] if i["product_id"] == product_id), None)
        if item is None:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"order {order_id} has no product {product_id!r}",
                hint="pick one of the order's items",
                path="/product_id",
                candidates=[i["product_id"] for i in order["items"]],
            )
        clean = " ".join(reason.split()).casefold()
        if clean not in REASONS:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"unknown reason {reason!r}",
                hint="use one of the shop's reasons",
                path="/reason",
                candidates=list(REASONS),
            )
        if order["status"] != "delivered":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"order {order_id} is {order['status']}: only delivered items can be returned",
                hint="cancel an order that has not shipped with shop.cancel_order",
            )
        delivered = parse_local_time(order["delivered"], "order_id")
        if self.now() - delivered > dt.timedelta(days=RETURN_DAYS):
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"order {order_id} was delivered more than {RETURN_DAYS} days ago",
                hint="the return window is over",
            )
        open_ = next(
            (r for r in self.t("returns").values() if r["order_id"] == order_id and r["product_id"] == product_id), None
        )
        if open_ is not None:
            raise ToolError(
                ErrorKind.CONFLICT,
                f"return {open_['id']} for this item already exists ({open_['status']})",
                hint="continue that return instead",
            )
        rec = {
            "id": self.new_id("returns"),
            "order_id": order_id,
            "product_id": product_id,
            "size": item["size"],
            "reason": clean,
            "status": "started",
            "slot": None,
            "created": self.now_str(),
        }
        self.put("returns", rec)
        self.show_detail("returns", rec["id"])
        return rec  # type: ignore[return-value]

    @tool()
    def pickup_slots(self, return_id: str) -> Slots:
        """Step 2a of a return: the courier pickup slots offered (start times, three hours each).

        Args:
            return_id: The return's id, e.g. "r_1".
        """
        self._return_rec(return_id)
        return {"return_id": return_id, "slots": self._slots()}

    @tool(effect=Effect.WRITE, writes=("returns",))
    def choose_pickup(self, return_id: str, slot: str) -> Return:
        """Step 2 of a return: book a courier pickup slot (changeable until confirmed).

        Args:
            return_id: The return's id, e.g. "r_1".
            slot: A slot's start time from shop.pickup_slots, YYYY-MM-DDTHH:MM.
        """
        rec = self._return_rec(return_id)
        if rec["status"] == "confirmed":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED, f"return {return_id} is already confirmed", hint="nothing more to do"
            )
        start = format_local_time(parse_local_time(slot, "slot"))
        if start not in self._slots():
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{slot!r} is not an offered pickup slot",
                hint="call shop.pickup_slots and pick one",
                path="/slot",
                candidates=self._slots(),
            )
        rec = self.patch("returns", return_id, slot=start, status="scheduled")
        self.show_detail("returns", return_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, writes=("returns",))
    def confirm_return(self, return_id: str) -> Return:
        """Step 3 of a return: confirm it; the courier comes in the chosen slot.

        Args:
            return_id: The return's id, e.g. "r_1".
        """
        rec = self._return_rec(return_id)
        if rec["status"] == "started":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"return {return_id} has no pickup slot yet",
                hint="call shop.pickup_slots, then shop.choose_pickup, then confirm",
            )
        if rec["status"] == "scheduled":
            rec = self.patch("returns", return_id, status="confirmed")
        self.show_detail("returns", return_id)
        return rec  # type: ignore[return-value]
