"""Budget: an expense tracker with categories, period totals and budgets per category.

Tables:

- ``budget.entries``: ``{"id": "e_1", "amount": 12.5, "currency": "EUR", "category": "dining",
  "date": "YYYY-MM-DD", "note": "Lunch with Ana"}``.
- ``budget.budgets``: ``{"id": "bg_1", "category": "groceries", "limit": 300.0,
  "currency": "EUR", "period": "month" | "week"}``, at most one per category.
- ``budget.settings``: ``{"id": "currency", "value": "EUR"}``: the home currency, used when an
  entry names none (EUR while none is stored).

Totals are computed from the rows: a week runs Monday to Sunday, a month is the calendar month;
only entries in the home currency count towards totals and budgets (others are listed apart).

No Android path: an expense tracker keeps its data in private storage, with no public content
provider, so ``android`` is None and the tools run on the sandbox only.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import TypedDict

from apps.wallet import from_minor, to_minor
from phoneenv.app import App, Deleted, check_year
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.tools import ToolError, tool

Category = Literal[
    "groceries", "dining", "transport", "rent", "utilities", "entertainment", "health", "shopping", "travel", "other"
]
CATEGORIES: tuple[str, ...] = Category.__args__  # type: ignore[attr-defined]
Period = Literal["week", "month"]
Amount = Annotated[float, Field(gt=0, le=1_000_000, description="The amount, e.g. 12.5 (whole yen for JPY)")]
Date = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="A date YYYY-MM-DD")]
Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$", description="ISO 4217 code, e.g. EUR")]
DEFAULT_CURRENCY = "EUR"


class Entry(TypedDict):
    """One expense."""

    id: str
    amount: float
    currency: str
    category: str
    date: str
    note: str


class Budget(TypedDict):
    """A spending limit for one category per week or month."""

    id: str
    category: str
    limit: float
    currency: str
    period: str


class Setting(TypedDict):
    """A budget app setting."""

    id: str
    value: str


class EntryList(TypedDict):
    """Expenses, newest first."""

    entries: list[Entry]
    total: int


class CategoryTotal(TypedDict):
    """What was spent in one category."""

    category: str
    total: float
    entries: int


class Totals(TypedDict):
    """Spending in a period: the sum, per category (largest first) and entries in other currencies."""

    start: str
    end: str
    currency: str
    total: float
    by_category: list[CategoryTotal]
    other_currencies: list[Entry]


class BudgetList(TypedDict):
    """The budgets set, by category."""

    budgets: list[Budget]


class BudgetCheck(TypedDict):
    """A budget against what was spent in its current period."""

    category: str
    period: str
    start: str
    end: str
    limit: float
    spent: float
    remaining: float
    over: bool
    currency: str


class BudgetChecks(TypedDict):
    """Every budget checked on a day."""

    checks: list[BudgetCheck]


def period_bounds(day: dt.date, period: str) -> tuple[dt.date, dt.date]:
    """First and last day of the week (Monday-Sunday) or calendar month holding ``day``."""
    if period == "week":
        start = day - dt.timedelta(days=day.weekday())
        return start, start + dt.timedelta(days=6)
    start = day.replace(day=1)
    nxt = (start + dt.timedelta(days=32)).replace(day=1)
    return start, nxt - dt.timedelta(days=1)


class BudgetApp(App):
    """An expense tracker."""

    name = "budget"
    title = "Budget"
    domain = Domain.FINANCE
    package = "com.example.budget"
    tables: ClassVar[dict[str, str]] = {"entries": "e_", "budgets": "bg_", "settings": "set_"}
    records: ClassVar[dict[str, Any]] = {"entries": Entry, "budgets": Budget, "settings": Setting}
    implied: ClassVar[dict[str, dict[str, dict[str, Any]]]] = {
        "settings": {"currency": {"id": "currency", "value": DEFAULT_CURRENCY}}
    }

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "entries":
            note = f"  {record['note']}" if record["note"] else ""
            return f"{record['date']}  {record['amount']} {record['currency']}  {record['category']}{note}"
        if table == "budgets":
            return f"{record['category']}: {record['limit']} {record['currency']} per {record['period']}"
        return f"{record['id']}: {record['value']}"

    # -- helpers --------------------------------------------------------------------------------
    def home_currency(self) -> str:
        """The currency entries and budgets default to (setting ``currency``; EUR when unset)."""
        rec = self.t("settings").get("currency")
        return rec["value"] if rec else DEFAULT_CURRENCY

    def _day(self, value: str | None, arg: str) -> dt.date:
        if value is None:
            return self.now().date()
        try:
            day = dt.date.fromisoformat(value)
        except ValueError:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"{value!r} is not a date", hint="use YYYY-MM-DD", path=f"/{arg}"
            ) from None
        check_year(day, value, arg)
        return day

    def _entry(self, entry_id: str) -> dict[str, Any]:
        return self.require("entries", entry_id, "expense", "budget.list_expenses")

    def _spent(self, category: str | None, start: dt.date, end: dt.date, currency: str) -> tuple[int, int]:
        """(minor units spent, entries) in ``category`` (all when None) from ``start`` to ``end``."""
        lo, hi = start.isoformat(), end.isoformat()
        minor = n = 0
        for e in self.t("entries").values():
            if e["currency"] == currency and lo <= e["date"] <= hi and category in (None, e["category"]):
                minor += to_minor(e["amount"], currency)
                n += 1
        return minor, n

    # -- entries --------------------------------------------------------------------------------
    @tool(effect=Effect.WRITE, writes=("entries",))
    def add_expense(
        self,
        amount: Amount,
        category: Category,
        date: Date | None = None,
        note: Annotated[str, Field(max_length=200)] = "",
        currency: Currency | None = None,
    ) -> Entry:
        """Log an expense.

        Args:
            amount: What was spent.
            category: The spending category.
            date: The day it was spent, YYYY-MM-DD; default today.
            note: What it was, e.g. "Lunch with Ana".
            currency: The currency; default the app's home currency.
        """
        cur = currency or self.home_currency()
        day = self._day(date, "date")
        rec = self.put(
            "entries",
            {
                "id": self.new_id("entries"),
                "amount": from_minor(to_minor(amount, cur), cur),
                "currency": cur,
                "category": category,
                "date": day.isoformat(),
                "note": " ".join(note.split()),
            },
        )
        self.show_detail("entries", rec["id"])
        return rec  # type: ignore[return-value]

    @tool()
    def list_expenses(
        self,
        category: Category | None = None,
        start: Date | None = None,
        end: Date | None = None,
        query: Annotated[str, Field(max_length=100)] = "",
        limit: Annotated[int, Field(ge=1, le=100)] = 30,
    ) -> EntryList:
        """Expenses, newest first, optionally filtered.

        Args:
            category: Only this category.
            start: Only from this day on, YYYY-MM-DD.
            end: Only up to this day, YYYY-MM-DD.
            query: Only those whose note contains this text (case-insensitive).
            limit: Maximum number returned.
        """
        lo = self._day(start, "start").isoformat() if start else ""
        hi = self._day(end, "end").isoformat() if end else "9999"
        q = " ".join(query.split()).casefold()
        recs = [
            e
            for e in self.t("entries").values()
            if (category is None or e["category"] == category) and lo <= e["date"] <= hi and q in e["note"].casefold()
        ]
        recs.sort(key=lambda e: (e["date"], len(e["id"]), e["id"]), reverse=True)
        self.show_list("entries", [e["id"] for e in recs[:limit]])
        return {"entries": [dict(e) for e in recs[:limit]], "total": len(recs)}  # type: ignore[misc]

    @tool(effect=Effect.WRITE, writes=("entries",))
    def update_expense(
        self,
        entry_id: str,
        amount: Amount | None = None,
        category: Category | None = None,
        date: Date | None = None,
        note: Annotated[str, Field(max_length=200)] | None = None,
    ) -> Entry:
        """Correct an expense; fields left out stay as they are.

        Args:
            entry_id: The expense's id, e.g. "e_4" (from budget.list_expenses).
            amount: The right amount, in the entry's currency.
            category: The right category.
            date: The right day, YYYY-MM-DD.
            note: The new note.
        """
        rec = self._entry(entry_id)
        changes: dict[str, Any] = {}
        if amount is not None:
            changes["amount"] = from_minor(to_minor(amount, rec["currency"]), rec["currency"])
        if category is not None:
            changes["category"] = category
        if date is not None:
            changes["date"] = self._day(date, "date").isoformat()
        if note is not None:
            changes["note"] = " ".join(note.split())
        if not changes:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "nothing to update", hint="pass a field to change")
        diff = {k: v for k, v in changes.items() if rec[k] != v}
        if diff:
            rec = self.patch("entries", entry_id, **diff)
        self.show_detail("entries", entry_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.SENSITIVE, writes=("entries",))
    def delete_expense(self, entry_id: str) -> Deleted:
        """Delete an expense for good.

        Args:
            entry_id: The expense's id.
        """
        self._entry(entry_id)
        self.remove("entries", entry_id)
        return {"deleted": entry_id}

    # -- totals and budgets ---------------------------------------------------------------------
    @tool()
    def totals(self, period: Period = "month", date: Date | None = None) -> Totals:
        """Spending in the week (Monday-Sunday) or calendar month holding a day: the sum and per
        category, in the home currency; entries in other currencies are listed apart.

        Args:
            period: "week" or "month".
            date: A day in the period, YYYY-MM-DD; default today.
        """
        start, end = period_bounds(self._day(date, "date"), period)
        cur = self.home_currency()
        lo, hi = start.isoformat(), end.isoformat()
        per: dict[str, list[int]] = {}
        other = []
        for e in self.t("entries").values():
            if not lo <= e["date"] <= hi:
                continue
            if e["currency"] != cur:
                other.append(dict(e))
                continue
            slot = per.setdefault(e["category"], [0, 0])
            slot[0] += to_minor(e["amount"], cur)
            slot[1] += 1
        by_cat = sorted(per.items(), key=lambda kv: (-kv[1][0], kv[0]))
        return {
            "start": lo,
            "end": hi,
            "currency": cur,
            "total": from_minor(sum(v[0] for v in per.values()), cur),
            "by_category": [{"category": k, "total": from_minor(v[0], cur), "entries": v[1]} for k, v in by_cat],
            "other_currencies": other,  # type: ignore[typeddict-item]
        }

    @tool(effect=Effect.WRITE, writes=("budgets",))
    def set_budget(
        self,
        category: Category,
        limit: Annotated[float, Field(gt=0, le=1_000_000, description="The most to spend per period")],
        period: Period = "month",
    ) -> Budget:
        """Set (or change) the spending limit of a category, in the home currency.

        Args:
            category: The category.
            limit: The most to spend per period.
            period: "week" or "month".
        """
        cur = self.home_currency()
        value = from_minor(to_minor(limit, cur, "limit"), cur)
        old = next((b for b in self.t("budgets").values() if b["category"] == category), None)
        if old is None:
            rec = self.put(
                "budgets",
                {"id": self.new_id("budgets"), "category": category, "limit": value, "currency": cur, "period": period},
            )
        elif (old["limit"], old["period"], old["currency"]) != (value, period, cur):
            rec = self.patch("budgets", old["id"], limit=value, period=period, currency=cur)
        else:
            rec = old
        self.show_detail("budgets", rec["id"])
        return rec  # type: ignore[return-value]

    @tool()
    def list_budgets(self) -> BudgetList:
        """The budgets set, by category."""
        recs = sorted(self.t("budgets").values(), key=lambda b: b["category"])
        self.show_list("budgets", [b["id"] for b in recs])
        return {"budgets": [dict(b) for b in recs]}  # type: ignore[misc]

    @tool()
    def check_budgets(self, date: Date | None = None) -> BudgetChecks:
        """Each budget against what was spent in its period (the week or month holding the day).

        Args:
            date: A day, YYYY-MM-DD; default today.
        """
        day = self._day(date, "date")
        out: list[BudgetCheck] = []
        for b in sorted(self.t("budgets").values(), key=lambda b: b["category"]):
            start, end = period_bounds(day, b["period"])
            cur = b["currency"]
            spent, _ = self._spent(b["category"], start, end, cur)
            limit = to_minor(b["limit"], cur)
            out.append(
                {
                    "category": b["category"],
                    "period": b["period"],
                    "start": start.isoformat(),
                    "end": end.isoformat(),
                    "limit": b["limit"],
                    "spent": from_minor(spent, cur),
                    "remaining": from_minor(limit - spent, cur),
                    "over": spent > limit,
                    "currency": cur,
                }
            )
        return {"checks": out}

    @tool(effect=Effect.SENSITIVE, writes=("budgets",))
    def delete_budget(self, category: Category) -> Deleted:
        """Remove the budget of a category.

        Args:
            category: The category whose budget goes.
        """
        old = next((b for b in self.t("budgets").values() if b["category"] == category), None)
        if old is None:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no budget for {category}",
                hint="call budget.list_budgets",
                candidates=sorted(b["category"] for b in self.t("budgets").values()),
            )
        self.remove("budgets", old["id"])
        return {"deleted": old["id"]}
