"""Hybrid templates (a sandbox app and an LLM-simulated app in one episode): each template's goal,
script and criteria checked against values derived by hand from its fixtures, a plausible wrong
plan that fails for the right reason, the trace's per-step backends, the sandbox refusing a
hybrid task, and an unscripted simulated call served by a (fake) simulator model."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from phoneenv.contract import Domain, StateCriterion, TaskSpec
from phoneenv.env import PhonePlanEnv
from phoneenv.llm import ChatResult, TokenUsage
from phoneenv.tasks.predicates import Context, match
from phoneenv.tasks.templates import all_templates
from phoneenv.tasks.validate import prove

NAMES = [
    "hybrid.order_food_text_eta",
    "hybrid.parcel_window_calendar",
    "hybrid.parcel_reschedule_text",
    "hybrid.cinema_book_text",
    "hybrid.cancel_order_note_refund",
]
SIMULATED = {"food", "parcels", "cinema"}
SANDBOX = {"contacts", "messages", "calendar", "notes", "mail", "clock", "phone"}
APPS_DIR = Path(__file__).resolve().parents[1] / "apps" / "simulated"
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip
# the windows parcels.reschedule_delivery's description names
WINDOWS = {"morning": ("08:00", "12:00"), "afternoon": ("12:00", "17:00"), "evening": ("17:00", "21:00")}


# -- helpers ------------------------------------------------------------------------------------


def task(name: str, k: int) -> TaskSpec:
    return all_templates()[name].task(k)


def tasks(name: str) -> list[TaskSpec]:
    return [task(name, k) for k in range(all_templates()[name].count)]


def recs(t: TaskSpec, table: str) -> list[dict[str, Any]]:
    return t.fixtures.records[table]


def contact(t: TaskSpec, first: str) -> dict[str, Any]:
    """The one contact whose first name is ``first`` (goals name people as users do)."""
    (c,) = [c for c in recs(t, "contacts.contacts") if c["name"].split()[0] == first]
    return c


def texted(t: TaskSpec, sms: StateCriterion, person: dict[str, Any], body: str) -> bool:
    """Whether a text to ``person`` saying ``body`` meets ``sms`` (by identity, as verify does)."""
    ctx = Context(contacts=tuple(recs(t, "contacts.contacts")), now=t.fixtures.clock)
    return match({"number": person["phone"], "direction": "out", "body": body}, sms.where, ctx)


def scripted(t: TaskSpec, tool: str, **arguments: Any) -> Any:
    """The scripted result of ``tool`` called with exactly ``arguments``."""
    (hit,) = [s.result for s in t.fixtures.simulated if s.tool == tool and s.arguments == arguments]
    return hit


def scripts(t: TaskSpec, tool: str) -> list[Any]:
    return [s for s in t.fixtures.simulated if s.tool == tool]


def day_of(t: TaskSpec, words: str) -> dt.date:
    """``"Saturday 5 December"`` as a date in the fixture clock's year (weekday checked)."""
    weekday, d, month = words.split()
    day = dt.date(int(t.fixtures.clock[:4]), MONTHS.index(month) + 1, int(d))
    assert day.strftime("%A") == weekday, words
    return day


def parcel_window(t: TaskSpec, tid: str) -> str:
    """The parcel's current window as ``"HH:MM-HH:MM"`` (from its scripted delivery window)."""
    cur = scripted(t, "parcels.get_delivery_window", tracking_id=tid)
    return f"{cur['window_start']}-{cur['window_end']}"


def states(t: TaskSpec, table: str, change: str) -> list[StateCriterion]:
    return [c for c in t.criteria if isinstance(c, StateCriterion) and c.table == table and c.change == change]


def play(t: TaskSpec, *steps: tuple[str, dict[str, Any]], simulator: Any = None, backend: str = "hybrid"):
    """Play ``steps`` (ending with finish) in a fresh env; returns (verdict, feedbacks, env)."""
    env = PhonePlanEnv(task=t, backend=backend, simulator=simulator)
    env.reset(seed=0)
    fbs = []
    info: dict[str, Any] = {}
    for name, args in steps:
        obs, _, term, _, info = env.step(json.dumps({"name": name, "arguments": args}))
        fbs.append(json.loads(obs["feedback"]))
        if term:
            break
    assert "verdict" in info, "the plan must end with finish"
    return info["verdict"], fbs, env


def failed(verdict: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["reason"] for c in verdict["criteria"] if not c["passed"]}


def finish(answer: str = "Done.") -> tuple[str, dict[str, Any]]:
    return ("finish", {"answer": answer})


def plan_steps(t: TaskSpec, **replace: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The reference plan as steps; ``replace={"<index>": new arguments}`` swaps a step's arguments."""
    return [(c.name, replace.get(str(i), c.arguments)) for i, c in enumerate(t.reference_plan)]


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[str, Any]]:
    """``{"<app>.<verb>": {"parameters": ..., "returns": ...}}`` read straight from the app files."""
    out = {}
    for f in sorted(APPS_DIR.glob("*.json")):
        app = json.loads(f.read_text())
        for tool in app["tools"]:
            out[f"{app['name']}.{tool['verb']}"] = {"parameters": tool["parameters"], "returns": tool["returns"]}
    return out


# -- every template: metadata, script validity, proof ----------------------------------------------


def test_at_least_five_templates_of_eight():
    tpls = {n: t for n, t in all_templates().items() if n.startswith("hybrid.")}
    assert sorted(tpls) == sorted(NAMES)
    assert sum(t.count for t in tpls.values()) >= 32


@pytest.mark.parametrize("name", NAMES)
def test_template_metadata_and_scripts(name, schemas):
    for t in tasks(name):
        assert t.backends == ["hybrid"]
        assert set(t.apps) & SIMULATED and set(t.apps) & SANDBOX, t.apps
        assert t.goal.isascii() and t.reference_plan[-1].name == "finish"
        used = {c.name.split(".")[0] for c in t.reference_plan if "." in c.name}
        assert used <= set(t.apps) and used & SIMULATED and used & SANDBOX
        fmt = Draft202012Validator.FORMAT_CHECKER
        for sc in t.fixtures.simulated:
            assert sc.tool.split(".")[0] in t.apps
            sch = schemas[sc.tool]
            assert not list(Draft202012Validator(sch["parameters"], format_checker=fmt).iter_errors(sc.arguments))
            errors = list(Draft202012Validator(sch["returns"], format_checker=fmt).iter_errors(sc.result))
            assert not errors, f"{t.id} {sc.tool}: {errors[0].message}"
        # every simulated call of the reference plan is scripted
        for c in t.reference_plan:
            if c.name.split(".")[0] in SIMULATED:
                scripted(t, c.name, **c.arguments)
        # seeded rows of simulated apps carry an id equal to their key (the sandbox loads them too)
        for table, rows in t.fixtures.records.items():
            if table.split(".")[0] in SIMULATED:
                assert rows and all(isinstance(r["id"], str) and r["id"] in r.values() for r in rows)


@pytest.mark.parametrize("name", NAMES)
def test_first_task_is_proven_on_hybrid(name):
    proof = prove(task(name, 0))
    assert proof.ok, proof.problems
    assert proof.perturbations >= 3


# -- hybrid.order_food_text_eta -------------------------------------------------------------------

FOOD_GOAL = re.compile(
    r"(?:Order (a|two) (.+) from (.+) for delivery home and text (\w+) what time it will arrive"
    r"|Get me (a|two) (.+) delivered from (.+), and text (\w+) when it will get here)\."
)


def test_order_food_goal_script_and_criteria():
    for t in tasks("hybrid.order_food_text_eta"):
        m = FOOD_GOAL.fullmatch(t.goal)
        assert m, t.goal
        words, dish, rest_name, first = [g for g in m.groups() if g is not None]
        qty = {"a": 1, "two": 2}[words]
        person = contact(t, first)
        assert t.domain is Domain.FOOD
        (rest,) = [r for r in recs(t, "food.restaurants") if r["name"] == rest_name]
        rid = rest["restaurant_id"]
        assert rest["id"] == rid
        menu = scripted(t, "food.get_menu", restaurant_id=rid)
        (item,) = [i for i in menu["menu"] if i["name"] == dish]
        order = scripted(t, "food.place_order", restaurant_id=rid, items=[{"item_id": item["item_id"], "qty": qty}])
        total = round(item["price"] * qty + rest["delivery_fee"], 2)
        assert order["restaurant_id"] == rid and order["total"] == pytest.approx(total)
        assert order["delivery_fee"] == rest["delivery_fee"]
        eta = dt.datetime.fromisoformat(order["eta"])
        assert eta > dt.datetime.fromisoformat(t.fixtures.clock)
        hhmm = eta.strftime("%H:%M")
        (ordered,) = states(t, "food.orders", "created")
        assert ordered.where == {"restaurant_id": rid, "total": pytest.approx(total)} and ordered.count == 1
        (sms,) = states(t, "messages.messages", "created")
        h12 = f"{eta.hour % 12 or 12}:{eta.minute:02d} {'am' if eta.hour < 12 else 'pm'}"
        assert texted(t, sms, person, f"It comes at {hhmm}.") and texted(t, sms, person, f"ETA {h12}")
        other = next(c for c in recs(t, "contacts.contacts") if c["id"] != person["id"])
        assert not texted(t, sms, other, f"It comes at {hhmm}.")
        placed = dt.datetime.fromisoformat(order["placed_at"]).strftime("%H:%M")
        assert not texted(t, sms, person, f"Ordered at {placed}.")


def test_order_food_wrong_time_in_text_fails_on_the_message():
    t = task("hybrid.order_food_text_eta", 0)
    order = scripts(t, "food.place_order")[0].result
    placed = dt.datetime.fromisoformat(order["placed_at"]).strftime("%H:%M")
    steps = plan_steps(t)
    to = steps[4][1]["to"]
    steps[4] = ("messages.send", {"to": to, "body": f"Ordered food at {placed}, see you soon."})
    verdict, fbs, _ = play(t, *steps)
    assert all(fb["ok"] for fb in fbs)
    assert list(failed(verdict)) == ["created:messages.messages"]
    assert not verdict["success"]
    assert [c.split("/")[0] for c in verdict["collateral"]] == ["messages.messages"]  # the order is expected


# -- hybrid.parcel_window_calendar ----------------------------------------------------------------

WINDOW_GOAL = re.compile(
    r"(?:My .+ from (.+) has shipped\. Find out when it will be delivered and block the delivery window in my "
    r'calendar, titled "(.+)"|When is my (.+) parcel coming\? Put the delivery window in my calendar as "(.+)" '
    r"so I stay home)\."
)


def test_parcel_window_goal_script_and_criteria():
    for t in tasks("hybrid.parcel_window_calendar"):
        m = WINDOW_GOAL.fullmatch(t.goal)
        assert m, t.goal
        shop, title = [g for g in m.groups() if g is not None]
        (mail,) = [x for x in recs(t, "mail.messages") if shop in x["body"]]
        tid = re.search(r"Tracking number: (\S+)\.", mail["body"]).group(1)
        (parcel,) = [p for p in recs(t, "parcels.parcels") if p["tracking_id"] == tid]
        assert parcel["id"] == tid and parcel["sender"] == shop and parcel["description"] in t.goal + mail["body"]
        win = scripted(t, "parcels.get_delivery_window", tracking_id=tid)
        assert win["delivery_date"] == parcel["estimated_delivery"] and win["status"] == parcel["status"]
        assert dt.date.fromisoformat(win["delivery_date"]) > dt.date.fromisoformat(t.fixtures.clock[:10])
        (event,) = states(t, "calendar.events", "created")
        assert event.where["start"] == f"{win['delivery_date']}T{win['window_start']}"
        assert event.where["end"] == f"{win['delivery_date']}T{win['window_end']}"
        assert event.where["start"] < event.where["end"]
        assert event.where["title"] == {"iequals": title}


def test_parcel_window_other_option_fails_on_the_event():
    t = task("hybrid.parcel_window_calendar", 0)
    tid = t.reference_plan[1].arguments["tracking_id"]
    opt = scripted(t, "parcels.get_delivery_window", tracking_id=tid)["options"][0]
    wrong = {
        "title": t.reference_plan[2].arguments["title"],
        "start": f"{opt['date']}T{opt['window_start']}",
        "end": f"{opt['date']}T{opt['window_end']}",
    }
    verdict, fbs, _ = play(t, *plan_steps(t, **{"2": wrong}))
    assert all(fb["ok"] for fb in fbs)
    # the answer tells the parcel's window (true): only the event is wrong
    assert list(failed(verdict)) == ["created:calendar.events"]
    assert not verdict["success"]


# -- hybrid.parcel_reschedule_text ----------------------------------------------------------------

RESCHEDULE_GOAL = re.compile(
    r"(?:I won't be home when my (.+) parcel comes\. Move the delivery to (\w+ \d+ \w+) in the "
    r"(morning|afternoon|evening), and text (\w+) the new day and time window"
    r"|Please push my (.+) delivery to (\w+ \d+ \w+), (morning|afternoon|evening) slot, and text (\w+) "
    r"the new day and time)\."
)


def test_parcel_reschedule_goal_script_and_criteria():
    for t in tasks("hybrid.parcel_reschedule_text"):
        m = RESCHEDULE_GOAL.fullmatch(t.goal)
        assert m, t.goal
        shop, day_words, window, name = [g for g in m.groups() if g is not None]
        day = day_of(t, day_words)
        person = contact(t, name)
        (sms_in,) = [x for x in recs(t, "messages.messages") if shop in x["body"]]
        tid = re.search(r"Your parcel (\S+) from", sms_in["body"]).group(1)
        (parcel,) = [p for p in recs(t, "parcels.parcels") if p["tracking_id"] == tid]
        assert parcel["sender"] == shop and parcel["status"] == "in_transit"
        old_day = dt.date.fromisoformat(parcel["estimated_delivery"])
        assert old_day < day <= dt.date.fromisoformat(t.fixtures.clock[:10]) + dt.timedelta(days=7)
        ws, we = WINDOWS[window]
        res = scripted(t, "parcels.reschedule_delivery", tracking_id=tid, date=day.isoformat(), window=window)
        assert (res["delivery_date"], res["window_start"], res["window_end"]) == (day.isoformat(), ws, we)
        assert res["last_update"] > parcel["last_update"]
        (moved,) = states(t, "parcels.parcels", "updated")
        assert moved.where == {"tracking_id": tid, "delivery_date": day.isoformat(), "window_start": ws,
                               "window_end": we}  # fmt: skip
        (sms,) = states(t, "messages.messages", "created")
        assert texted(t, sms, person, f"New slot: {day.strftime('%A')} {ws}-{we}")
        assert texted(t, sms, person, f"{day.day} {MONTHS[day.month - 1]}, from {ws}")
        assert not texted(t, sms, person, f"New slot: {ws}-{we}")  # no day
        assert not texted(t, sms, person, f"{old_day.strftime('%A')} {parcel_window(t, tid)}")  # the old slot


def test_parcel_reschedule_text_only_fails_on_the_parcel():
    t = task("hybrid.parcel_reschedule_text", 0)
    steps = [s for s in plan_steps(t) if s[0] != "parcels.reschedule_delivery"]
    verdict, fbs, _ = play(t, *steps)
    assert all(fb["ok"] for fb in fbs)
    # the text tells a window the parcel was never moved to
    assert list(failed(verdict)) == ["updated:parcels.parcels", "grounded"]
    assert "says '17:00" in failed(verdict)["grounded"]
    assert "0 matching updated" in failed(verdict)["updated:parcels.parcels"]


# -- hybrid.cinema_book_text ----------------------------------------------------------------------

CINEMA_GOAL = re.compile(
    r"Book seats ([A-Z]\d+) and ([A-Z]\d+) for (.+) on (\w+ \d+ \w+), the first screening after 7 pm at (.+), "
    r"and text (\w+) the start time and the cinema\."
)
CINEMA_GOAL_2 = re.compile(
    r"Get us seats ([A-Z]\d+) and ([A-Z]\d+) for (.+) at (.+) on (\w+ \d+ \w+), whichever screening comes "
    r"first after 7 pm, then text (\w+) where and when it starts\."
)


def cinema_goal(goal: str) -> tuple[str, ...]:
    """``(seat1, seat2, title, day words, cinema, first name)`` of either wording."""
    if m := CINEMA_GOAL.fullmatch(goal):
        return m.groups()
    s1, s2, title, cinema, day, name = CINEMA_GOAL_2.fullmatch(goal).groups()
    return s1, s2, title, day, cinema, name


def test_cinema_goal_script_and_criteria():
    for t in tasks("hybrid.cinema_book_text"):
        s1, s2, title, day_words, cinema, name = cinema_goal(t.goal)
        day = day_of(t, day_words)
        person = contact(t, name)
        (movie,) = scripted(t, "cinema.search_movies", query=title)["movies"]
        assert movie["title"] == title
        shows = scripted(t, "cinema.list_showtimes", movie_id=movie["movie_id"], date=day.isoformat())["showtimes"]
        evening = [s for s in shows if s["cinema"] == cinema and s["start"][11:16] >= "19:00"]
        first = min(evening, key=lambda s: s["start"])
        # a decoy: another cinema's screening after 19:00 that starts earlier
        assert any(s["cinema"] != cinema and "19:00" <= s["start"][11:16] < first["start"][11:16] for s in shows)
        # and an earlier one at the right cinema
        assert any(s["cinema"] == cinema and s["start"][11:16] < "19:00" for s in shows)
        booking = scripted(t, "cinema.book_tickets", showtime_id=first["showtime_id"], seats=[s1, s2])
        assert booking["price"] == pytest.approx(2 * first["price_per_seat"]) and booking["cinema"] == cinema
        wheres = [c.where for c in states(t, "cinema.bookings", "created")]
        assert wheres == [
            {"showtime_id": first["showtime_id"], "seats": {"has": s1, "len": 2}},
            {"showtime_id": first["showtime_id"], "seats": {"has": s2}},
        ]
        at, on = states(t, "messages.messages", "created")
        hhmm = first["start"][11:16]
        h12 = f"{int(hhmm[:2]) - 12}:{hhmm[3:]} PM"
        for body in (f"{hhmm} at {cinema}", f"{cinema}, {h12}"):
            assert texted(t, at, person, body) and texted(t, on, person, body)
        assert not texted(t, at, person, f"19:15 at {cinema}") and not texted(t, on, person, f"{hhmm} somewhere")
        assert len({c.id for c in t.criteria}) == len(t.criteria)


def test_cinema_decoy_time_in_text_fails_on_the_time():
    t = task("hybrid.cinema_book_text", 0)
    cinema = cinema_goal(t.goal)[4]
    shows = scripts(t, "cinema.list_showtimes")[0].result["showtimes"]
    (decoy,) = [s for s in shows if s["cinema"] != cinema]
    steps = plan_steps(t)
    to = steps[4][1]["to"]
    steps[4] = ("messages.send", {"to": to, "body": f"Tickets: {decoy['start'][11:16]} at {cinema}."})
    verdict, fbs, _ = play(t, *steps)
    assert all(fb["ok"] for fb in fbs)
    # the decoy's time at the user's cinema: no screening there starts then
    assert list(failed(verdict)) == ["created:messages.messages:time", "grounded"]
    assert f"says '{decoy['start'][11:16]}'" in failed(verdict)["grounded"]


def test_cinema_booking_the_decoy_screening_is_unscripted_and_fails():
    t = task("hybrid.cinema_book_text", 0)
    s1, s2, _, _, cinema, _ = cinema_goal(t.goal)
    shows = scripts(t, "cinema.list_showtimes")[0].result["showtimes"]
    (decoy,) = [s for s in shows if s["cinema"] != cinema]
    steps = plan_steps(t, **{"2": {"showtime_id": decoy["showtime_id"], "seats": [s1, s2]}})
    verdict, fbs, _ = play(t, *steps)
    assert fbs[2]["error"] == "not_found"  # no simulator model: only the script is served
    assert {"created:cinema.bookings:seat1", "created:cinema.bookings:seat2"} <= set(failed(verdict))
    assert not verdict["infrastructure_error"] and not verdict["success"]


# -- hybrid.cancel_order_note_refund --------------------------------------------------------------

CANCEL_GOAL = re.compile(
    r'(?:Cancel my (.+) order that is still being prepared, add the refund to my "(.+)" note, and tell me how '
    r"much it is|I don't want the (.+) order that's still being made any more\. Cancel it, write the refund "
    r'down in my "(.+)" note and tell me the amount)\.'
)


def test_cancel_order_goal_script_and_criteria():
    for t in tasks("hybrid.cancel_order_note_refund"):
        m = CANCEL_GOAL.fullmatch(t.goal)
        assert m, t.goal
        rest_name, title = [g for g in m.groups() if g is not None]
        orders = recs(t, "food.orders")
        mine = [o for o in orders if o["restaurant_name"] == rest_name]
        assert len(mine) == 2  # an older delivered order from the same place is the trap
        (open_,) = [o for o in mine if o["status"] not in ("delivered", "cancelled")]
        total = round(sum(i["qty"] * i["price"] for i in open_["items"]) + open_["delivery_fee"], 2)
        assert open_["total"] == pytest.approx(total)
        listed = scripted(t, "food.list_past_orders")["orders"]
        assert {o["order_id"] for o in listed} == {o["order_id"] for o in orders}
        res = scripted(t, "food.cancel_order", order_id=open_["order_id"])
        assert res["status"] == "cancelled" and res["refund"] == pytest.approx(total)
        (note,) = [n for n in recs(t, "notes.notes") if n["title"] == title]
        (cancelled,) = states(t, "food.orders", "updated")
        assert cancelled.where == {"order_id": open_["order_id"], "status": "cancelled"}
        (noted,) = states(t, "notes.notes", "updated")
        assert noted.where["id"] == note["id"]
        dot, comma = f"{total:.2f}", f"{total:.2f}".replace(".", ",")
        for text in (f"Refund +{dot}", f"refund {comma} EUR"):
            assert match({"id": note["id"], "body": f"{note['body']}\n{text}"}, noted.where)
        assert not match({"id": note["id"], "body": f"{note['body']}\nRefund {total + 1:.2f}"}, noted.where)
        assert not match({"id": note["id"], "body": note["body"]}, noted.where)  # only the new line can satisfy it


def test_cancel_order_refund_in_a_new_note_fails_with_collateral():
    t = task("hybrid.cancel_order_note_refund", 0)
    text = t.reference_plan[3].arguments["text"]
    steps = plan_steps(t)
    steps[3] = ("notes.create", {"title": "Refund", "body": text})
    verdict, fbs, _ = play(t, *steps)
    assert all(fb["ok"] for fb in fbs)
    assert list(failed(verdict)) == ["updated:notes.notes"]
    assert any(c.startswith("notes.notes/") for c in verdict["collateral"])


# -- backends: the trace, the sandbox's refusal, a simulator for calls off the script -----------


@pytest.mark.parametrize("name", NAMES)
def test_trace_records_both_backends(name):
    t = task(name, 0)
    verdict, _, env = play(t, *plan_steps(t))
    assert verdict["success"]
    trace = env.trace
    assert trace.backend == "hybrid"
    assert {s.backend for s in trace.steps} == {"sandbox", "llmsim"}
    for s in trace.steps:
        app = s.action.name.split(".")[0]
        assert s.backend == ("llmsim" if app in SIMULATED else "sandbox"), s.action.name


@pytest.mark.parametrize("name", NAMES)
def test_sandbox_backend_refuses_hybrid_task(name):
    env = PhonePlanEnv(task=task(name, 0), backend="sandbox")
    with pytest.raises(ValueError, match=r"backends \['hybrid'\].*'sandbox' backend"):
        env.reset(seed=0)


class FakeSimulator:
    """A ChatClient that replays prepared JSON replies and records what it was asked."""

    model = "fake-sim"

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatResult:
        self.calls.append({"messages": messages, "json_schema": json_schema})
        if not self.replies:
            raise AssertionError("the simulator was called more often than scripted")
        content = json.dumps(self.replies.pop(0))
        return ChatResult(content=content, raw=content, usage=TokenUsage(prompt=50, output=10))


def test_unscripted_simulated_call_is_served_by_the_model_and_merged():
    t = task("hybrid.order_food_text_eta", 0)
    place = t.reference_plan[2].arguments
    scripted_order = scripted(t, "food.place_order", **place)
    # paying cash is not scripted: the simulator answers, with a new order id
    cash = {**place, "payment": "cash"}
    sim_order = {**scripted_order, "order_id": "ord_999"}
    fake = FakeSimulator([sim_order])
    steps = plan_steps(t, **{"2": cash})
    verdict, fbs, env = play(t, *steps, simulator=fake)
    assert len(fake.calls) == 1
    user = json.loads(fake.calls[0]["messages"][-1]["content"])
    assert user["name"] == "food.place_order" and user["arguments"]["payment"] == "cash"
    system = fake.calls[0]["messages"][0]["content"]
    assert scripted_order["order_id"] in system  # the task's script is shown to the simulator
    assert fbs[2]["ok"] and fbs[2]["result"]["order_id"] == "ord_999"
    assert env.trace.steps[2].backend == "llmsim"
    orders = env.backend.tables()["food.orders"]
    assert orders["ord_999"]["restaurant_id"] == place["restaurant_id"]
    assert scripted_order["order_id"] not in orders
    assert verdict["success"] and not verdict["inconsistent"], failed(verdict)

    # the same unscripted call without a simulator is an infrastructure error
    verdict, fbs, _ = play(t, *steps)
    assert fbs[2]["error"] == "not_found" and not verdict["infrastructure_error"] and not verdict["success"]


def test_unscripted_read_merges_facts_but_not_the_verification_view():
    t = task("hybrid.order_food_text_eta", 0)
    order = scripted(t, "food.place_order", **t.reference_plan[2].arguments)
    status = {**order, "status": "preparing", "courier": None}
    fake = FakeSimulator([status])
    steps = plan_steps(t)
    steps.insert(3, ("food.order_status", {"order_id": order["order_id"]}))
    verdict, fbs, env = play(t, *steps, simulator=fake)
    assert fbs[3]["ok"] and len(fake.calls) == 1
    sim = env.backend.simulated
    assert sim.ledger.facts["food.orders"][order["order_id"]]["status"] == "preparing"
    assert sim.ledger.facts["food.orders"][order["order_id"]]["courier"] is None
    # the view holds what the write put there; the read's facts bind the simulation only
    assert env.backend.tables()["food.orders"][order["order_id"]]["status"] == "placed"
    assert verdict["success"] and not verdict["inconsistent"]
