"""Wallet: a payments app with accounts, known payees, transfers, money requests and bills.

Tables (amounts are numbers in the account's currency, rounded to its minor unit: cents, or
whole yen):

- ``wallet.accounts``: ``{"id": "acct_1", "name": "Main", "balance": 1200.5, "currency": "EUR",
  "primary": True}``.
- ``wallet.payees``: people and companies money can go to: ``{"id": "py_1", "name": "Ana Lima",
  "handle": "+4915112345678" | "billing@power.de", "kind": "person" | "company",
  "contact_id": "c_3" | None}``. A person is added from the address book (``wallet.add_payee``),
  so money only goes to a recipient the user knows.
- ``wallet.transactions``: ``{"id": "tx_1", "account_id": "acct_1", "payee_id": "py_2",
  "direction": "out" | "in", "amount": 25.0, "currency": "EUR", "note": str,
  "time": "YYYY-MM-DDTHH:MM:SS", "kind": "transfer" | "request" | "bill"}``.
- ``wallet.requests``: ``{"id": "rq_1", "direction": "in" | "out", "payee_id": "py_2",
  "amount": 12.5, "currency": "EUR", "note": str, "status": "pending" | "paid" | "declined" |
  "cancelled", "created": "YYYY-MM-DDTHH:MM:SS"}``; ``in`` is someone asking the user for money.
- ``wallet.bills``: ``{"id": "b_1", "payee_id": "py_5", "title": "Electricity November",
  "amount_due": 84.2, "currency": "EUR", "due": "YYYY-MM-DD", "status": "unpaid" | "scheduled" |
  "paid", "scheduled_for": "YYYY-MM-DD" | None, "paid_on": "YYYY-MM-DD" | None}``.

Paying (``send_money``, ``pay_request``, ``pay_bill``, ``schedule_bill``) is ``sensitive``: a
phone whose fixtures set ``confirm_sensitive`` or ``step_up`` asks the user to confirm or to
enter their PIN (``user.authenticate``) first. Every wallet tool needs the wallet's account to be
signed in.

No Android path: a payments app keeps its ledger on its servers and in private storage, with no
public content provider or shell command to read or write it, so ``android`` is None and the
tools run on the sandbox only.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.app import App, check_year
from phoneenv.contract import Domain, Effect, ErrorKind
from phoneenv.tools import ToolError, tool

DECIMALS = {"JPY": 0, "KRW": 0}
"""Minor-unit digits of currencies without cents; every other currency has two."""

Amount = Annotated[
    float,
    Field(gt=0, le=1_000_000, description="Amount in the account's currency, e.g. 12.5 (whole yen for JPY)"),
]
Note = Annotated[str, Field(max_length=200, description="What the money is for, e.g. 'Pizza on Friday'")]
Date = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="A date YYYY-MM-DD")]


def decimals(currency: str) -> int:
    """Minor-unit digits of ``currency`` (ISO 4217): 0 for JPY, else 2."""
    return DECIMALS.get(currency, 2)


def to_minor(amount: float, currency: str, arg: str = "amount") -> int:
    """``amount`` in ``currency``'s minor unit (cents, or yen). Raises :class:`ToolError`
    (``invalid_arguments`` at ``/arg``) for an amount with more decimals than the currency has."""
    scale = 10 ** decimals(currency)
    minor = round(amount * scale)
    if not math.isclose(minor, amount * scale, abs_tol=1e-6):
        raise ToolError(
            ErrorKind.INVALID_ARGUMENTS,
            f"argument {arg!r}: {amount} has more than {decimals(currency)} decimals for {currency}",
            hint=f"round the amount to {decimals(currency)} decimals",
            path=f"/{arg}",
        )
    return minor


def from_minor(minor: int, currency: str) -> float:
    """An amount in ``currency``'s minor unit as a number of whole units (``1250`` → 12.5)."""
    return round(minor / 10 ** decimals(currency), decimals(currency))


class Account(TypedDict):
    """A money account in the wallet."""

    id: str
    name: str
    balance: float
    currency: str
    primary: bool


class Payee(TypedDict):
    """Someone money can go to: a person from the address book or a company."""

    id: str
    name: str
    handle: str
    kind: Literal["person", "company"]
    contact_id: str | None


class Transaction(TypedDict):
    """Money that moved."""

    id: str
    account_id: str
    payee_id: str
    direction: Literal["in", "out"]
    amount: float
    currency: str
    note: str
    time: str
    kind: Literal["transfer", "request", "bill"]


class MoneyRequest(TypedDict):
    """A request for money: ``in`` from someone to the user, ``out`` from the user to someone."""

    id: str
    direction: Literal["in", "out"]
    payee_id: str
    amount: float
    currency: str
    note: str
    status: Literal["pending", "paid", "declined", "cancelled"]
    created: str


class Bill(TypedDict):
    """A bill to a company payee."""

    id: str
    payee_id: str
    title: str
    amount_due: float
    currency: str
    due: str
    status: Literal["unpaid", "scheduled", "paid"]
    scheduled_for: str | None
    paid_on: str | None


class AccountList(TypedDict):
    """The wallet's accounts, primary first."""

    accounts: list[Account]


class PayeeList(TypedDict):
    """Payees matching a search."""

    payees: list[Payee]


class TransactionList(TypedDict):
    """Transactions, newest first."""

    transactions: list[Transaction]
    total: int


class RequestList(TypedDict):
    """Money requests, newest first."""

    requests: list[MoneyRequest]


class BillList(TypedDict):
    """Bills, soonest due first."""

    bills: list[Bill]


class Payment(TypedDict):
    """A payment made: the transaction and the account's balance after it."""

    transaction: Transaction
    balance: float


class Split(TypedDict):
    """A bill split as requests: one per person, the user's own share, and the total."""

    requests: list[MoneyRequest]
    share: float
    my_share: float
    total: float
    currency: str


def _amount_error(what: str) -> ToolError:
    return ToolError(ErrorKind.INVALID_ARGUMENTS, what, hint="give a positive amount", path="/amount")


class Wallet(App):
    """A payments app: balance, transfers to known payees, requests, bill splitting and bills."""

    name = "wallet"
    title = "Wallet"
    domain = Domain.FINANCE
    package = "com.example.wallet"
    requires_account = True
    tables: ClassVar[dict[str, str]] = {
        "accounts": "acct_",
        "payees": "py_",
        "transactions": "tx_",
        "requests": "rq_",
        "bills": "b_",
    }
    records: ClassVar[dict[str, Any]] = {
        "accounts": Account,
        "payees": Payee,
        "transactions": Transaction,
        "requests": MoneyRequest,
        "bills": Bill,
    }

    def row(self, table: str, record: dict[str, Any]) -> str:
        if table == "accounts":
            return f"{record['name']}: {record['balance']} {record['currency']}"
        if table == "payees":
            return f"{record['name']}  {record['handle']}"
        if table == "bills":
            return f"{record['title']}: {record['amount_due']} {record['currency']} due {record['due']} ({record['status']})"
        if table == "requests":
            arrow = "from" if record["direction"] == "in" else "to"
            who = self.t("payees").get(record["payee_id"], {}).get("name", record["payee_id"])
            return f"{record['amount']} {record['currency']} {arrow} {who}: {record['note']} ({record['status']})"
        sign = "-" if record["direction"] == "out" else "+"
        who = self.t("payees").get(record["payee_id"], {}).get("name", record["payee_id"])
        return f"{sign}{record['amount']} {record['currency']}  {who}  {record['note']}"

    # -- helpers --------------------------------------------------------------------------------
    def _account(self, account_id: str | None) -> dict[str, Any]:
        if account_id is not None:
            return self.require("accounts", account_id, "account", "wallet.accounts")
        accounts = sorted(self.t("accounts").values(), key=lambda a: (not a["primary"], a["id"]))
        if not accounts:
            raise ToolError(ErrorKind.PRECONDITION_FAILED, "the wallet has no account", hint="add an account first")
        return accounts[0]

    def _payee(self, payee_id: str) -> dict[str, Any]:
        return self.require("payees", payee_id, "payee", "wallet.search_payees")

    def _debit(
        self, account: dict[str, Any], payee_id: str, minor: int, note: str, kind: str
    ) -> tuple[dict[str, Any], float]:
        """Take ``minor`` (minor units) from ``account`` to ``payee_id``; returns (transaction, balance)."""
        cur = account["currency"]
        balance = to_minor(account["balance"], cur, "balance")
        if minor > balance:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"insufficient funds: {account['name']} holds {from_minor(balance, cur)} {cur}, "
                f"{from_minor(minor, cur)} {cur} needed",
                hint="pay from another account (account_id) or a smaller amount",
            )
        new_balance = from_minor(balance - minor, cur)
        self.patch("accounts", account["id"], balance=new_balance)
        tx = self.put(
            "transactions",
            {
                "id": self.new_id("transactions"),
                "account_id": account["id"],
                "payee_id": payee_id,
                "direction": "out",
                "amount": from_minor(minor, cur),
                "currency": cur,
                "note": note,
                "time": self.now_str(),
                "kind": kind,
            },
        )
        self.show_detail("transactions", tx["id"])
        return tx, new_balance

    def _date(self, value: str, arg: str) -> dt.date:
        try:
            day = dt.date.fromisoformat(value)
        except ValueError:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"{value!r} is not a date", hint="use YYYY-MM-DD", path=f"/{arg}"
            ) from None
        check_year(day, value, arg)
        return day

    # -- accounts and payees -------------------------------------------------------------------
    @tool(name="accounts", requires_login=True)
    def accounts_(self) -> AccountList:
        """The wallet's accounts with their balances and currency, the primary account first."""
        recs = sorted(self.t("accounts").values(), key=lambda a: (not a["primary"], a["id"]))
        self.show_list("accounts", [a["id"] for a in recs])
        return {"accounts": [dict(a) for a in recs]}  # type: ignore[misc]

    @tool(requires_login=True)
    def search_payees(self, query: Annotated[str, Field(max_length=100)] = "") -> PayeeList:
        """Find payees (people and companies money can be sent to) by name or handle.

        Args:
            query: Part of the name, phone number or e-mail, case-insensitive; empty lists all.
        """
        q = " ".join(query.split()).casefold()
        digits = "".join(ch for ch in q if ch.isdigit())
        hits = [
            p
            for p in self.t("payees").values()
            if q in p["name"].casefold()
            or q in p["handle"].casefold()
            or (len(digits) >= 6 and digits[-9:] in "".join(ch for ch in p["handle"] if ch.isdigit()))
        ]
        hits.sort(key=lambda p: (p["name"].casefold(), p["id"]))
        self.show_list("payees", [p["id"] for p in hits])
        return {"payees": [dict(p) for p in hits]}  # type: ignore[misc]

    @tool(effect=Effect.WRITE, requires_login=True, writes=("payees",))
    def add_payee(self, contact_id: str) -> Payee:
        """Add a person from the address book as a payee (by their mobile number); a contact
        already added is returned as it is.

        Args:
            contact_id: The contact's id, e.g. "c_3" (from contacts.search).
        """
        contact = self.phone.state.get("contacts.contacts", contact_id)
        if contact is None:
            raise ToolError(ErrorKind.NOT_FOUND, f"no contact with id {contact_id!r}", hint="call contacts.search")
        if not contact.get("phone"):
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"{contact['name']} has no phone number to receive money",
                hint="add their mobile number to the contact first",
            )
        for p in self.t("payees").values():
            if p["contact_id"] == contact_id:
                self.show_detail("payees", p["id"])
                return dict(p)  # type: ignore[return-value]
        rec = self.put(
            "payees",
            {
                "id": self.new_id("payees"),
                "name": contact["name"],
                "handle": contact["phone"],
                "kind": "person",
                "contact_id": contact_id,
            },
        )
        self.show_detail("payees", rec["id"])
        return rec  # type: ignore[return-value]

    # -- transfers -----------------------------------------------------------------------------
    @tool(effect=Effect.SENSITIVE, requires_login=True, writes=("accounts", "transactions"))
    def send_money(self, payee_id: str, amount: Amount, note: Note = "", account_id: str | None = None) -> Payment:
        """Send money to a payee now, from the primary account unless another is named.

        Args:
            payee_id: The payee's id, e.g. "py_2" (from wallet.search_payees).
            amount: How much, in the account's currency.
            note: What it is for; the payee sees it.
            account_id: The account to pay from; default the primary one.
        """
        payee = self._payee(payee_id)
        account = self._account(account_id)
        minor = to_minor(amount, account["currency"])
        if minor <= 0:
            raise _amount_error("the amount rounds to nothing")
        tx, balance = self._debit(account, payee["id"], minor, note, "transfer")
        return {"transaction": tx, "balance": balance}  # type: ignore[typeddict-item]

    @tool(requires_login=True)
    def transactions(
        self,
        payee_id: str | None = None,
        limit: Annotated[int, Field(ge=1, le=50)] = 20,
    ) -> TransactionList:
        """Past transactions, newest first.

        Args:
            payee_id: Only those with this payee.
            limit: Maximum number returned.
        """
        if payee_id is not None:
            self._payee(payee_id)
        recs = [t for t in self.t("transactions").values() if payee_id is None or t["payee_id"] == payee_id]
        recs.sort(key=lambda t: (t["time"], len(t["id"]), t["id"]), reverse=True)
        self.show_list("transactions", [t["id"] for t in recs[:limit]])
        return {"transactions": [dict(t) for t in recs[:limit]], "total": len(recs)}  # type: ignore[misc]

    # -- requests ------------------------------------------------------------------------------
    def _new_request(self, payee_id: str, minor: int, currency: str, note: str) -> dict[str, Any]:
        return self.put(
            "requests",
            {
                "id": self.new_id("requests"),
                "direction": "out",
                "payee_id": payee_id,
                "amount": from_minor(minor, currency),
                "currency": currency,
                "note": note,
                "status": "pending",
                "created": self.now_str(),
            },
        )

    @tool(effect=Effect.WRITE, requires_login=True, writes=("requests",))
    def request_money(self, payee_id: str, amount: Amount, note: Note = "") -> MoneyRequest:
        """Ask a person for money; they get a request they can pay or decline.

        Args:
            payee_id: The person's payee id (from wallet.search_payees or wallet.add_payee).
            amount: How much, in the primary account's currency.
            note: What it is for, e.g. "Concert tickets".
        """
        payee = self._payee(payee_id)
        if payee["kind"] != "person":
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{payee['name']} is a company; money can be requested from people only",
                hint="pick a person's payee id",
                path="/payee_id",
            )
        cur = self._account(None)["currency"]
        rec = self._new_request(payee_id, to_minor(amount, cur), cur, note)
        self.show_detail("requests", rec["id"])
        return rec  # type: ignore[return-value]

    @tool(requires_login=True)
    def requests(
        self,
        direction: Literal["in", "out"] | None = None,
        status: Literal["pending", "paid", "declined", "cancelled"] | None = None,
    ) -> RequestList:
        """Money requests, newest first: "in" are people asking the user for money, "out" the
        user's requests to others.

        Args:
            direction: Only "in" or only "out".
            status: Only requests in this state.
        """
        recs = [
            r
            for r in self.t("requests").values()
            if (direction is None or r["direction"] == direction) and (status is None or r["status"] == status)
        ]
        recs.sort(key=lambda r: (r["created"], len(r["id"]), r["id"]), reverse=True)
        self.show_list("requests", [r["id"] for r in recs])
        return {"requests": [dict(r) for r in recs]}  # type: ignore[misc]

    def _pending(self, request_id: str, direction: str, verb: str) -> dict[str, Any]:
        req = self.require("requests", request_id, "money request", "wallet.requests")
        if req["direction"] != direction:
            mine = "your own request" if direction == "in" else "a request someone sent you"
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"{request_id} is {mine}; it cannot be {verb}",
                hint="wallet.pay_request and decline_request take incoming requests, cancel_request your own",
            )
        if req["status"] != "pending":
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED, f"{request_id} is already {req['status']}", hint="nothing left to do"
            )
        return req

    @tool(effect=Effect.SENSITIVE, requires_login=True, writes=("accounts", "requests", "transactions"))
    def pay_request(self, request_id: str, account_id: str | None = None) -> Payment:
        """Pay a pending request someone sent the user, for the amount asked.

        Args:
            request_id: The incoming request's id, e.g. "rq_2" (from wallet.requests).
            account_id: The account to pay from; default the primary one.
        """
        req = self._pending(request_id, "in", "paid")
        account = self._account(account_id)
        if account["currency"] != req["currency"]:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"the request is in {req['currency']}, {account['name']} holds {account['currency']}",
                hint="pay from an account in the request's currency",
            )
        tx, balance = self._debit(
            account, req["payee_id"], to_minor(req["amount"], req["currency"]), req["note"], "request"
        )
        self.patch("requests", request_id, status="paid")
        return {"transaction": tx, "balance": balance}  # type: ignore[typeddict-item]

    @tool(effect=Effect.WRITE, requires_login=True, writes=("requests",))
    def decline_request(self, request_id: str) -> MoneyRequest:
        """Decline a pending request someone sent the user.

        Args:
            request_id: The incoming request's id.
        """
        self._pending(request_id, "in", "declined")
        rec = self.patch("requests", request_id, status="declined")
        self.show_detail("requests", request_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, requires_login=True, writes=("requests",))
    def cancel_request(self, request_id: str) -> MoneyRequest:
        """Withdraw a pending request the user sent.

        Args:
            request_id: The outgoing request's id.
        """
        self._pending(request_id, "out", "cancelled")
        rec = self.patch("requests", request_id, status="cancelled")
        self.show_detail("requests", request_id)
        return rec  # type: ignore[return-value]

    @tool(effect=Effect.WRITE, requires_login=True, writes=("requests",))
    def split_bill(
        self,
        total: Annotated[float, Field(gt=0, le=1_000_000, description="The whole bill, e.g. 86.4")],
        payee_ids: Annotated[list[str], Field(min_length=1, max_length=20)],
        note: Note = "",
        include_me: bool = True,
    ) -> Split:
        """Split a bill equally and send each person a request for their share. Shares are
        rounded down to the cent (whole yen); the user covers what is left over.

        Args:
            total: The whole amount, in the primary account's currency.
            payee_ids: The people who share it (payee ids of persons), each once.
            note: What it was, e.g. "Dinner at Luigi's".
            include_me: Whether the user pays a share too (else the people split it alone).
        """
        if len(set(payee_ids)) != len(payee_ids):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "a payee is named twice", hint="name each person once", path="/payee_ids"
            )
        for i, pid in enumerate(payee_ids):
            p = self.t("payees").get(pid)
            if p is None or p["kind"] != "person":
                raise ToolError(
                    ErrorKind.NOT_FOUND if p is None else ErrorKind.INVALID_ARGUMENTS,
                    f"{pid!r} is not a person's payee id",
                    hint="find people with wallet.search_payees or add them with wallet.add_payee",
                    path=f"/payee_ids/{i}",
                )
        cur = self._account(None)["currency"]
        minor = to_minor(total, cur, "total")
        people = len(payee_ids) + (1 if include_me else 0)
        share = minor // people
        if share == 0:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, "the total is too small to split", hint="check the total", path="/total"
            )
        reqs = [self._new_request(pid, share, cur, note) for pid in payee_ids]
        self.show_list("requests", [r["id"] for r in reqs])
        return {
            "requests": reqs,  # type: ignore[typeddict-item]
            "share": from_minor(share, cur),
            "my_share": from_minor(minor - share * len(payee_ids), cur) if include_me else 0.0,
            "total": from_minor(minor, cur),
            "currency": cur,
        }

    # -- bills ---------------------------------------------------------------------------------
    @tool(requires_login=True)
    def bills(self, status: Literal["unpaid", "scheduled", "paid"] | None = None) -> BillList:
        """Bills with payee, amount due and due date, soonest due first.

        Args:
            status: Only bills in this state.
        """
        recs = sorted(
            (b for b in self.t("bills").values() if status is None or b["status"] == status),
            key=lambda b: (b["due"], len(b["id"]), b["id"]),
        )
        self.show_list("bills", [b["id"] for b in recs])
        return {"bills": [dict(b) for b in recs]}  # type: ignore[misc]

    def _open_bill(self, bill_id: str) -> dict[str, Any]:
        bill = self.require("bills", bill_id, "bill", "wallet.bills")
        if bill["status"] == "paid":
            raise ToolError(ErrorKind.PRECONDITION_FAILED, f"{bill_id} is already paid", hint="nothing left to do")
        return bill

    @tool(effect=Effect.SENSITIVE, requires_login=True, writes=("accounts", "bills", "transactions"))
    def pay_bill(self, bill_id: str, account_id: str | None = None) -> Payment:
        """Pay a bill now, in full (a scheduled payment of it is replaced).

        Args:
            bill_id: The bill's id, e.g. "b_2" (from wallet.bills).
            account_id: The account to pay from; default the primary one.
        """
        bill = self._open_bill(bill_id)
        account = self._account(account_id)
        if account["currency"] != bill["currency"]:
            raise ToolError(
                ErrorKind.PRECONDITION_FAILED,
                f"the bill is in {bill['currency']}, {account['name']} holds {account['currency']}",
                hint="pay from an account in the bill's currency",
            )
        minor = to_minor(bill["amount_due"], bill["currency"], "amount_due")
        tx, balance = self._debit(account, bill["payee_id"], minor, bill["title"], "bill")
        self.patch("bills", bill_id, status="paid", paid_on=self.now().date().isoformat(), scheduled_for=None)
        return {"transaction": tx, "balance": balance}  # type: ignore[typeddict-item]

    @tool(effect=Effect.SENSITIVE, requires_login=True, writes=("bills",))
    def schedule_bill(self, bill_id: str, date: Date) -> Bill:
        """Schedule a bill to be paid in full on a date, from today up to its due date.

        Args:
            bill_id: The bill's id.
            date: The day to pay it, YYYY-MM-DD.
        """
        bill = self._open_bill(bill_id)
        day = self._date(date, "date")
        today = self.now().date()
        if day < today:
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS, f"{date} is in the past", hint=f"pick {today} or later", path="/date"
            )
        if day > dt.date.fromisoformat(bill["due"]):
            raise ToolError(
                ErrorKind.INVALID_ARGUMENTS,
                f"{date} is after the bill's due date {bill['due']}",
                hint="pick a day on or before the due date",
                path="/date",
            )
        rec = self.patch("bills", bill_id, status="scheduled", scheduled_for=day.isoformat())
        self.show_detail("bills", bill_id)
        return rec  # type: ignore[return-value]
