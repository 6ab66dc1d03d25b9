"""The budget app through the sandbox backend: entries, period totals and budgets, with sums
worked out by hand. Fixture clock: Friday 2026-11-20 10:00; home currency GBP."""

from __future__ import annotations

import datetime as dt
from typing import Any

import jsonschema

from apps.budget import BudgetApp, period_bounds
from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, ErrorKind, Feedback, Fixtures, TaskSpec


def entry(i: int, amount: float, category: str, date: str, note: str = "", currency: str = "GBP") -> dict[str, Any]:
    return {"id": f"e_{i}", "amount": amount, "currency": currency, "category": category, "date": date, "note": note}


ENTRIES = [
    entry(1, 12.4, "dining", "2026-11-16", "Lunch"),  # Monday of this week
    entry(2, 30.1, "groceries", "2026-11-18"),
    entry(3, 7.5, "dining", "2026-11-20", "Coffee and cake"),
    entry(4, 99.99, "shopping", "2026-11-03"),  # this month, last-but-one week
    entry(5, 20.0, "dining", "2026-10-31"),  # last month
    entry(6, 15.0, "dining", "2026-11-19", "Airport", currency="EUR"),  # another currency
]
TASK = TaskSpec(
    id="budget-test",
    domain="finance",
    goal="test",
    criteria=[AnswerCriterion(equals="ok")],
    fixtures=Fixtures(
        records={
            "budget.entries": ENTRIES,
            "budget.budgets": [
                {"id": "bg_1", "category": "dining", "limit": 40.0, "currency": "GBP", "period": "month"}
            ],
            "budget.settings": [{"id": "currency", "value": "GBP"}],
        },
        clock="2026-11-20T10:00:00",
        timezone="Europe/London",
    ),
)


class Phone:
    def __init__(self) -> None:
        self.backend = SandboxBackend()
        self.backend.reset(TASK)

    def __call__(self, tool: str, /, **args: Any) -> Feedback:
        return self.backend.call(tool, self.backend.tools()[tool].validator.validate(args))

    def table(self, name: str) -> dict[str, dict[str, Any]]:
        return dict(self.backend.tables()[f"budget.{name}"])


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def test_every_tool_schema_is_valid_and_described() -> None:
    for d in BudgetApp.tool_defs():
        jsonschema.Draft202012Validator.check_schema(d.spec.parameters)
        for prop, schema in d.spec.parameters["properties"].items():
            assert schema.get("description"), (d.spec.name, prop)


def test_period_bounds() -> None:
    assert period_bounds(dt.date(2026, 11, 20), "week") == (dt.date(2026, 11, 16), dt.date(2026, 11, 22))
    assert period_bounds(dt.date(2026, 2, 10), "month") == (dt.date(2026, 2, 1), dt.date(2026, 2, 28))
    assert period_bounds(dt.date(2026, 12, 31), "month") == (dt.date(2026, 12, 1), dt.date(2026, 12, 31))


def test_totals_by_week_and_month_in_the_home_currency() -> None:
    phone = Phone()
    week = ok(phone("budget.totals", period="week"))
    assert (week["start"], week["end"], week["currency"]) == ("2026-11-16", "2026-11-22", "GBP")
    assert week["total"] == 50.0  # 12.40 + 30.10 + 7.50
    assert week["by_category"] == [
        {"category": "groceries", "total": 30.1, "entries": 1},
        {"category": "dining", "total": 19.9, "entries": 2},
    ]
    assert [e["id"] for e in week["other_currencies"]] == ["e_6"]
    month = ok(phone("budget.totals", period="month"))
    assert month["total"] == 149.99  # 12.40 + 30.10 + 7.50 + 99.99
    october = ok(phone("budget.totals", period="month", date="2026-10-05"))
    assert october["total"] == 20.0 and october["by_category"][0]["category"] == "dining"


def test_add_edit_delete_and_budget_checks() -> None:
    phone = Phone()
    (check,) = ok(phone("budget.check_budgets"))["checks"]
    assert (check["spent"], check["remaining"], check["over"]) == (19.9, 20.1, False)
    rec = ok(phone("budget.add_expense", amount=25, category="dining", note="  Dinner  with Ben "))
    assert rec == entry(7, 25.0, "dining", "2026-11-20", "Dinner with Ben")
    (check,) = ok(phone("budget.check_budgets"))["checks"]
    assert (check["spent"], check["remaining"], check["over"]) == (44.9, -4.9, True)
    ok(phone("budget.update_expense", entry_id="e_7", amount=20.1))
    (check,) = ok(phone("budget.check_budgets"))["checks"]
    assert (check["spent"], check["over"]) == (40.0, False)  # exactly at the limit is not over
    ok(phone("budget.delete_expense", entry_id="e_3"))
    assert "e_3" not in phone.table("entries")
    assert phone("budget.delete_expense", entry_id="e_3").error is ErrorKind.NOT_FOUND
    fb = phone("budget.update_expense", entry_id="e_1")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS
    fb = phone("budget.add_expense", amount=3.333, category="dining")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/amount"
    fb = phone("budget.add_expense", amount=3, category="dining", date="2026-02-30")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/date"


def test_set_budget_creates_then_updates_one_per_category() -> None:
    phone = Phone()
    new = ok(phone("budget.set_budget", category="groceries", limit=60, period="week"))
    assert new == {"id": "bg_2", "category": "groceries", "limit": 60.0, "currency": "GBP", "period": "week"}
    ok(phone("budget.set_budget", category="dining", limit=25))
    assert phone.table("budgets")["bg_1"]["limit"] == 25.0 and len(phone.table("budgets")) == 2
    checks = {c["category"]: c for c in ok(phone("budget.check_budgets"))["checks"]}
    assert checks["dining"]["over"] is False and checks["groceries"]["spent"] == 30.1
    ok(phone("budget.delete_budget", category="groceries"))
    assert phone("budget.delete_budget", category="groceries").error is ErrorKind.NOT_FOUND


def test_list_expenses_filters() -> None:
    phone = Phone()
    res = ok(phone("budget.list_expenses", category="dining", start="2026-11-01"))
    assert [e["id"] for e in res["entries"]] == ["e_3", "e_6", "e_1"]
    assert [e["id"] for e in ok(phone("budget.list_expenses", query="coffee"))["entries"]] == ["e_3"]
