"""Login gating for simulated apps: a simulated tool that declares ``requires_login`` answers a
signed-out account (``fixtures.accounts``) with the same ``login_required`` feedback as a sandbox
app's (one check, :meth:`Backend.login_gate`), on ``llmsim`` alone and under ``hybrid``, where the
sandbox's ``system.sign_in`` (password from the vault) unlocks it. Values written by hand from
the fixtures of ``simulated.food_sign_in/0`` and ``mail.latest_unread/0``."""

from __future__ import annotations

from typing import Any

from phoneenv.backends import make_backend
from phoneenv.backends.base import Backend
from phoneenv.backends.llmsim import LLMSimBackend, load_sim_apps
from phoneenv.contract import ErrorKind, Feedback, TaskSpec
from phoneenv.tasks.templates import all_templates


def task(name: str, k: int = 0) -> TaskSpec:
    return all_templates()[name].task(k)


def run(backend: Backend, name: str, **arguments: Any) -> Feedback:
    return backend.call(name, backend.tools()[name].validator.validate(arguments))


def order_call(t: TaskSpec) -> dict[str, Any]:
    (step,) = [c for c in t.reference_plan if c.name == "food.place_order"]
    return step.arguments


def test_the_account_tools_of_food_and_cinema_declare_login_and_the_lookups_do_not():
    apps = load_sim_apps()
    gated = {f"{a}.{t.verb}" for a in ("food", "cinema", "parcels") for t in apps[a].tools if t.requires_login}
    assert gated == {
        "food.place_order", "food.order_status", "food.cancel_order", "food.list_past_orders",
        "cinema.book_tickets", "cinema.get_booking", "cinema.list_bookings", "cinema.cancel_booking",
    }  # fmt: skip
    specs = {s.name: s for s in apps["food"].specs()}
    assert specs["food.place_order"].requires_login and not specs["food.get_menu"].requires_login


def test_a_signed_out_simulated_app_answers_as_a_signed_out_sandbox_app():
    food = task("simulated.food_sign_in")
    mail = task("mail.latest_unread")
    email = food.fixtures.accounts["food"]["account"]
    assert food.fixtures.accounts["food"]["signed_in"] is False
    mail_email = mail.fixtures.accounts["mail"]["account"]
    assert mail.fixtures.accounts["mail"]["signed_in"] is False

    sim = LLMSimBackend()
    sim.reset(food)
    before = sim.clock_seconds()
    fb = run(sim, "food.place_order", **order_call(food))
    sandbox = make_backend("sandbox")
    sandbox.reset(mail)
    fb_mail = run(sandbox, "mail.list_inbox")

    assert fb.error is ErrorKind.LOGIN_REQUIRED and not fb.ok and fb.recoverable
    assert fb.message == f"food needs a signed-in account ({email})"
    assert fb.hint == f'call system.sign_in {{"app": "food", "account": "{email}"}}, then retry'
    assert fb_mail.message == f"mail needs a signed-in account ({mail_email})"
    as_mail = {
        k: v.replace("food", "mail").replace(email, mail_email) if isinstance(v, str) else v
        for k, v in fb.model_dump(mode="json").items()
    }
    assert as_mail == fb_mail.model_dump(mode="json")
    # refused before the world: no order in the ledger, the clock still moved one call
    assert dict(sim.tables().get("food.orders", {})) == {}
    assert sim.clock_seconds() == before + 1
    # a lookup is not behind the sign-in
    (rid,) = {order_call(food)["restaurant_id"]}
    assert run(sim, "food.get_menu", restaurant_id=rid).ok


def test_signed_in_by_fixture_or_not_named_the_app_works_on_llmsim():
    t = task("simulated.food_order")
    assert "food" not in t.fixtures.accounts  # not named: the user's app is signed in
    sim = LLMSimBackend()
    sim.reset(t)
    assert sim.account("food") == {"app": "food", "account": None, "signed_in": True}
    assert run(sim, "food.place_order", **order_call(t)).ok

    signed_in = task("simulated.food_sign_in")
    fx = signed_in.fixtures.model_copy(
        update={"accounts": {**signed_in.fixtures.accounts, "food": {"account": "x@example.com", "signed_in": True}}}
    )
    sim.reset(signed_in.model_copy(update={"fixtures": fx}))
    fb = run(sim, "food.place_order", **order_call(signed_in))
    assert fb.ok, fb
    assert fb.result["total"] == signed_in.criteria[0].where["total"]


def test_on_hybrid_system_sign_in_unlocks_the_simulated_app_and_sign_out_locks_it():
    t = task("simulated.food_sign_in")
    email = t.fixtures.accounts["food"]["account"]
    hybrid = make_backend("hybrid")
    hybrid.reset(t)
    order = order_call(t)

    refused = run(hybrid, "food.place_order", **order)
    assert refused.error is ErrorKind.LOGIN_REQUIRED
    assert hybrid.served_by("food.place_order") == "llmsim"
    listed = run(hybrid, "system.list_accounts")
    assert {"app": "food", "account": email, "signed_in": False} in listed.result["accounts"]

    wrong = run(hybrid, "system.sign_in", app="food", account=email, password="not-the-saved-one")
    assert wrong.error is ErrorKind.PERMISSION_DENIED
    assert run(hybrid, "food.place_order", **order).error is ErrorKind.LOGIN_REQUIRED

    signed = run(hybrid, "system.sign_in", app="food", account=email)
    assert signed.ok and signed.result == {"app": "food", "account": email, "signed_in": True}
    placed = run(hybrid, "food.place_order", **order)
    assert placed.ok, placed
    tables = hybrid.tables()
    assert [r["restaurant_id"] for r in tables["food.orders"].values()] == [order["restaurant_id"]]
    assert tables["system.accounts"]["food"]["signed_in"] is True

    assert run(hybrid, "system.sign_out", app="food").ok
    assert run(hybrid, "food.order_status", order_id=placed.result["order_id"]).error is ErrorKind.LOGIN_REQUIRED


def test_sign_in_to_an_app_with_no_account_anywhere_is_still_not_found():
    hybrid = make_backend("hybrid")
    hybrid.reset(task("simulated.food_sign_in"))
    fb = run(hybrid, "system.sign_in", app="cinema", account="someone@example.com")
    assert fb.error is ErrorKind.NOT_FOUND
