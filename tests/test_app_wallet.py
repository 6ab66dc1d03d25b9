"""The wallet app through the sandbox backend: balances, payees, transfers, requests, splits
and bills, with amounts worked out by hand. Fixture clock: 2026-11-20 10:00 (Europe/Berlin)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from apps.wallet import Wallet
from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import AnswerCriterion, ErrorKind, Feedback, Fixtures, TaskSpec
from phoneenv.tools import ArgumentError

CONTACTS = [
    {"id": "c_1", "name": "Ana Lima", "phone": "+4915112345678", "email": None, "relation": None,
     "favorite": False, "birthday": None},
    {"id": "c_2", "name": "Ben Ott", "phone": "+4915198765432", "email": None, "relation": None,
     "favorite": False, "birthday": None},
    {"id": "c_3", "name": "Cleo Brandt", "phone": "+4917011112222", "email": None, "relation": None,
     "favorite": False, "birthday": None},
]  # fmt: skip
RECORDS = {
    "contacts.contacts": CONTACTS,
    "wallet.accounts": [
        {"id": "acct_1", "name": "Main", "balance": 100.0, "currency": "EUR", "primary": True},
        {"id": "acct_2", "name": "Savings", "balance": 500.0, "currency": "EUR", "primary": False},
    ],
    "wallet.payees": [
        {"id": "py_1", "name": "Ana Lima", "handle": "+4915112345678", "kind": "person", "contact_id": "c_1"},
        {"id": "py_2", "name": "Ben Ott", "handle": "+4915198765432", "kind": "person", "contact_id": "c_2"},
        {
            "id": "py_3",
            "name": "Brightpower",
            "handle": "billing@brightpower.de",
            "kind": "company",
            "contact_id": None,
        },
    ],
    "wallet.transactions": [],
    "wallet.requests": [
        {
            "id": "rq_1",
            "direction": "in",
            "payee_id": "py_1",
            "amount": 12.5,
            "currency": "EUR",
            "note": "Cinema",
            "status": "pending",
            "created": "2026-11-19T20:00:00",
        },
        {
            "id": "rq_2",
            "direction": "out",
            "payee_id": "py_2",
            "amount": 8.0,
            "currency": "EUR",
            "note": "Taxi",
            "status": "pending",
            "created": "2026-11-18T20:00:00",
        },
    ],
    "wallet.bills": [
        {
            "id": "b_1",
            "payee_id": "py_3",
            "title": "Electricity November",
            "amount_due": 84.2,
            "currency": "EUR",
            "due": "2026-11-30",
            "status": "unpaid",
            "scheduled_for": None,
            "paid_on": None,
        },
        {
            "id": "b_2",
            "payee_id": "py_3",
            "title": "Electricity October",
            "amount_due": 150.0,
            "currency": "EUR",
            "due": "2026-10-31",
            "status": "paid",
            "scheduled_for": None,
            "paid_on": "2026-10-30",
        },
    ],
}


def make_task(signed_in: bool = True) -> TaskSpec:
    return TaskSpec(
        id="wallet-test",
        domain="finance",
        goal="test",
        criteria=[AnswerCriterion(equals="ok")],
        fixtures=Fixtures(
            records=RECORDS,
            clock="2026-11-20T10:00:00",
            timezone="Europe/Berlin",
            accounts={"wallet": {"account": "sam@example.com", "signed_in": signed_in}},
        ),
    )


class Phone:
    """A sandbox backend reset to the wallet task, called the way the env calls it."""

    def __init__(self, signed_in: bool = True) -> None:
        self.backend = SandboxBackend()
        self.backend.reset(make_task(signed_in))

    def __call__(self, tool: str, /, **args: Any) -> Feedback:
        return self.backend.call(tool, self.backend.tools()[tool].validator.validate(args))

    def table(self, name: str) -> dict[str, dict[str, Any]]:
        return dict(self.backend.tables()[f"wallet.{name}"])


def ok(fb: Feedback) -> Any:
    assert fb.ok, fb
    return fb.result


def test_every_tool_schema_is_valid_and_described() -> None:
    for d in Wallet.tool_defs():
        jsonschema.Draft202012Validator.check_schema(d.spec.parameters)
        for prop, schema in d.spec.parameters["properties"].items():
            assert schema.get("description"), (d.spec.name, prop)
    assert len(Wallet.tool_defs()) == 14


def test_send_money_debits_the_primary_account_and_records_it() -> None:
    phone = Phone()
    res = ok(phone("wallet.send_money", payee_id="py_1", amount=23.45, note="Pizza"))
    assert res["balance"] == 76.55  # 100.00 - 23.45
    assert res["transaction"]["amount"] == 23.45 and res["transaction"]["direction"] == "out"
    assert phone.table("accounts")["acct_1"]["balance"] == 76.55
    assert phone.table("accounts")["acct_2"]["balance"] == 500.0
    (tx,) = phone.table("transactions").values()
    assert (tx["payee_id"], tx["note"], tx["kind"], tx["time"]) == ("py_1", "Pizza", "transfer", "2026-11-20T10:00:01")
    res = ok(phone("wallet.send_money", payee_id="py_2", amount=150, account_id="acct_2"))
    assert res["balance"] == 350.0


def test_send_money_refuses_bad_amounts_unknown_payees_and_overdrafts() -> None:
    phone = Phone()
    fb = phone("wallet.send_money", payee_id="py_1", amount=1.234)
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/amount"
    fb = phone("wallet.send_money", payee_id="py_9", amount=5)
    assert fb.error is ErrorKind.NOT_FOUND and "wallet.search_payees" in (fb.hint or "")
    fb = phone("wallet.send_money", payee_id="py_1", amount=100.01)
    assert fb.error is ErrorKind.PRECONDITION_FAILED and "insufficient" in fb.message
    assert phone.table("transactions") == {} and phone.table("accounts")["acct_1"]["balance"] == 100.0
    with pytest.raises(ArgumentError):
        phone.backend.tools()["wallet.send_money"].validator.validate({"payee_id": "py_1", "amount": -5})


def test_signed_out_wallet_needs_login() -> None:
    phone = Phone(signed_in=False)
    fb = phone("wallet.accounts")
    assert fb.error is ErrorKind.LOGIN_REQUIRED


def test_payees_search_by_name_or_number_and_add_from_contacts() -> None:
    phone = Phone()
    assert [p["id"] for p in ok(phone("wallet.search_payees", query="ben"))["payees"]] == ["py_2"]
    assert [p["id"] for p in ok(phone("wallet.search_payees", query="0151 12345678"))["payees"]] == ["py_1"]
    new = ok(phone("wallet.add_payee", contact_id="c_3"))
    assert new == {"id": "py_4", "name": "Cleo Brandt", "handle": "+4917011112222", "kind": "person",
                   "contact_id": "c_3"}  # fmt: skip
    assert ok(phone("wallet.add_payee", contact_id="c_3"))["id"] == "py_4"  # not twice
    assert len(phone.table("payees")) == 4
    assert phone("wallet.add_payee", contact_id="c_9").error is ErrorKind.NOT_FOUND


def test_requests_pay_decline_cancel_and_wrong_direction() -> None:
    phone = Phone()
    assert phone("wallet.cancel_request", request_id="rq_1").error is ErrorKind.PRECONDITION_FAILED
    assert phone("wallet.pay_request", request_id="rq_2").error is ErrorKind.PRECONDITION_FAILED
    res = ok(phone("wallet.pay_request", request_id="rq_1"))
    assert res["balance"] == 87.5 and res["transaction"]["kind"] == "request"
    assert phone.table("requests")["rq_1"]["status"] == "paid"
    assert phone("wallet.decline_request", request_id="rq_1").error is ErrorKind.PRECONDITION_FAILED
    assert ok(phone("wallet.cancel_request", request_id="rq_2"))["status"] == "cancelled"
    req = ok(phone("wallet.request_money", payee_id="py_2", amount=19.9, note="Concert"))
    assert (req["id"], req["direction"], req["amount"], req["status"]) == ("rq_3", "out", 19.9, "pending")
    fb = phone("wallet.request_money", payee_id="py_3", amount=5)
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/payee_id"
    pending_in = ok(phone("wallet.requests", direction="in", status="pending"))["requests"]
    assert pending_in == []


def test_split_bill_rounds_shares_down_and_the_user_covers_the_rest() -> None:
    phone = Phone()
    res = ok(phone("wallet.split_bill", total=100, payee_ids=["py_1", "py_2"], note="Dinner"))
    # 100.00 / 3 = 33.333..: each share 33.33, the user 33.34
    assert (res["share"], res["my_share"], res["total"]) == (33.33, 33.34, 100.0)
    assert [(r["payee_id"], r["amount"], r["note"]) for r in res["requests"]] == [
        ("py_1", 33.33, "Dinner"),
        ("py_2", 33.33, "Dinner"),
    ]
    alone = ok(phone("wallet.split_bill", total=45, payee_ids=["py_1", "py_2"], include_me=False))
    assert (alone["share"], alone["my_share"]) == (22.5, 0.0)
    fb = phone("wallet.split_bill", total=10, payee_ids=["py_1", "py_1"])
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/payee_ids"
    fb = phone("wallet.split_bill", total=10, payee_ids=["py_1", "py_3"])
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and fb.path == "/payee_ids/1"


def test_bills_pay_and_schedule() -> None:
    phone = Phone()
    assert [b["id"] for b in ok(phone("wallet.bills", status="unpaid"))["bills"]] == ["b_1"]
    fb = phone("wallet.schedule_bill", bill_id="b_1", date="2026-12-01")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and "due date" in fb.message
    fb = phone("wallet.schedule_bill", bill_id="b_1", date="2026-11-19")
    assert fb.error is ErrorKind.INVALID_ARGUMENTS and "past" in fb.message
    rec = ok(phone("wallet.schedule_bill", bill_id="b_1", date="2026-11-28"))
    assert (rec["status"], rec["scheduled_for"]) == ("scheduled", "2026-11-28")
    res = ok(phone("wallet.pay_bill", bill_id="b_1"))
    assert res["balance"] == 15.8  # 100.00 - 84.20
    bill = phone.table("bills")["b_1"]
    assert (bill["status"], bill["paid_on"], bill["scheduled_for"]) == ("paid", "2026-11-20", None)
    assert phone("wallet.pay_bill", bill_id="b_2").error is ErrorKind.PRECONDITION_FAILED
    assert phone("wallet.pay_bill", bill_id="b_7").error is ErrorKind.NOT_FOUND
