"""The LLM-simulated backend with a scripted fake simulator: apps as data, argument validation,
scripts, reply validation and retries, the fact ledger and its contradictions, the cache, and
infrastructure errors, down to full env episodes and their verdicts."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from phoneenv.backends import make_backend
from phoneenv.backends.llmsim import (
    FactLedger,
    LLMSimBackend,
    SchemaValidator,
    SimulationCache,
    load_sim_apps,
)
from phoneenv.contract import (
    Effect,
    ErrorKind,
    Fixtures,
    SimulatedCall,
    StateCriterion,
    TaskSpec,
)
from phoneenv.env import PhonePlanEnv
from phoneenv.llm import ChatResult, InfrastructureError, TokenUsage
from phoneenv.tools import ArgumentError


class FakeSimulator:
    """A ChatClient that replays prepared replies (text, JSON values, or exceptions to raise)."""

    model = "fake-sim"

    def __init__(self, replies: list[Any] | None = None) -> None:
        self.replies = list(replies or [])
        self.calls: list[dict[str, Any]] = []

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatResult:
        self.calls.append({"messages": messages, "json_schema": json_schema, "max_tokens": max_tokens})
        if not self.replies:
            raise AssertionError("the simulator was called more often than scripted")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        content = reply if isinstance(reply, str) else json.dumps(reply)
        return ChatResult(content=content, raw=content, usage=TokenUsage(prompt=100, output=20))


CLOCK = "2026-11-29T09:00:00"
LUIGI = {"restaurant_id": "rst_1", "name": "Luigi's", "cuisine": "pizza"}
ORDER = {
    "order_id": "ord_1",
    "restaurant_id": "rst_1",
    "restaurant_name": "Luigi's",
    "items": [{"item_id": "m_1", "name": "Margherita", "qty": 1, "price": 9.5}],
    "subtotal": 9.5,
    "delivery_fee": 2.0,
    "total": 11.5,
    "currency": "EUR",
    "status": "placed",
    "placed_at": "2026-11-29T09:00:01",
    "eta": "2026-11-29T09:40:00",
    "last_update": "2026-11-29T09:00:01",
}
STATUS = {**ORDER, "status": "preparing", "last_update": "2026-11-29T09:05:00", "courier": None}
PARCEL = {
    "tracking_id": "DHL1234567",
    "carrier": "DHL",
    "sender": "Bookshop",
    "description": "2 books",
    "status": "in_transit",
    "last_update": "2026-11-29T07:30:00",
    "estimated_delivery": "2026-11-30",
    "location": "Leipzig hub",
    "events": [{"time": "2026-11-29T07:30:00", "location": "Leipzig hub", "description": "Arrived"}],
}
PLACE = {"restaurant_id": "rst_1", "items": [{"item_id": "m_1"}]}


def order_task(**fixtures: Any) -> TaskSpec:
    """Order from Luigi's; verified by one created order of rst_1 in the ledger."""
    return TaskSpec(
        id="test.sim.order",
        domain="food",
        goal="Order a margherita from Luigi's.",
        fixtures=Fixtures(clock=CLOCK, records={"food.restaurants": [LUIGI]}, **fixtures),
        criteria=[
            StateCriterion(
                id="ordered", table="food.orders", change="created", where={"restaurant_id": "rst_1"}, count=1
            )
        ],
        apps=["food"],
        backends=["llmsim"],
    )


def parcel_task(**fixtures: Any) -> TaskSpec:
    """Where is my parcel? (the answer is not checked here)."""
    return TaskSpec(
        id="test.sim.parcel",
        domain="shopping",
        goal="Where is my DHL parcel?",
        fixtures=Fixtures(clock=CLOCK, **fixtures),
        criteria=[],
        apps=["parcels"],
        backends=["llmsim"],
    )


def act(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments})


# ------------------------------------------------------------------------------------------ apps


def test_apps_load_and_render_as_openai_tools() -> None:
    apps = load_sim_apps()
    assert set(apps) == {"parcels", "food", "cinema"}
    assert {a.name: a.domain.value for a in apps.values()} == {
        "parcels": "shopping",
        "food": "food",
        "cinema": "entertainment",
    }
    for app in apps.values():
        specs = app.specs()
        assert len(specs) >= 5
        assert app.entities
        for spec in specs:
            assert spec.name.startswith(app.name + ".")
            fn = spec.to_openai()["function"]
            assert fn["parameters"]["type"] == "object"
            assert spec.returns["type"] == "object"
            assert len(fn["description"]) > 30
    effects = {s.name: s.effect for a in apps.values() for s in a.specs()}
    assert effects["food.place_order"] is Effect.SENSITIVE
    assert effects["cinema.book_tickets"] is Effect.SENSITIVE
    assert effects["food.cancel_order"] is Effect.WRITE
    assert effects["cinema.cancel_booking"] is Effect.WRITE
    assert effects["parcels.track_parcel"] is Effect.READ
    order = apps["food"].entities["order"]
    assert order.key == "order_id" and set(order.terminal) == {"delivered", "cancelled"}
    assert set(order.immutable) >= {"total", "restaurant_id", "items"}
    parcel = apps["parcels"].entities["parcel"]
    assert parcel.key == "tracking_id" and parcel.times == ["last_update"]
    assert set(apps["cinema"].entities) == {"movie", "showtime", "booking"}


def test_load_rejects_bad_apps(tmp_path: Any) -> None:
    app = json.loads(json.dumps(load_sim_apps()["food"].model_dump(mode="json")))
    (tmp_path / "other.json").write_text(json.dumps(app))
    with pytest.raises(ValueError, match="differs from the file name"):
        load_sim_apps(tmp_path)
    (tmp_path / "other.json").unlink()
    app["tools"][0]["parameters"]["properties"]["query"]["type"] = "strnig"
    (tmp_path / "food.json").write_text(json.dumps(app))
    with pytest.raises(ValueError, match=r"food\.json"):
        load_sim_apps(tmp_path)


def test_tools_follow_the_task_apps() -> None:
    b = LLMSimBackend()
    assert len(b.tools()) == 17
    b.reset(order_task())
    assert {e.spec.app for e in b.tools().values()} == {"food"}
    first = b.tools()
    b.reset(order_task())
    assert b.tools() is first
    b.reset(TaskSpec(id="t", domain="food", goal="g", criteria=[], backends=["llmsim"]))
    assert {e.spec.app for e in b.tools().values()} == {"food", "parcels", "cinema"}


# ------------------------------------------------------------------------------------------ arguments


def test_arguments_validated_with_json_pointer_paths() -> None:
    v = LLMSimBackend().tools()["food.place_order"].validator
    with pytest.raises(ArgumentError) as exc:
        v.validate({"restaurant_id": "rst_1", "items": [{"item_id": "m_1", "qty": "2"}]})
    assert exc.value.path == "/items/0/qty" and exc.value.expected == "integer"
    with pytest.raises(ArgumentError) as exc:
        v.validate({"items": [{"item_id": "m_1"}]})
    assert exc.value.path == "/restaurant_id" and "missing" in exc.value.message
    assert exc.value.expected == "string"
    with pytest.raises(ArgumentError) as exc:
        v.validate({**PLACE, "tip": 2})
    assert exc.value.path == "/tip" and "unexpected" in exc.value.message
    with pytest.raises(ArgumentError) as exc:
        v.validate({**PLACE, "payment": "bitcoin"})
    assert exc.value.path == "/payment" and exc.value.expected.startswith("one of")
    with pytest.raises(ArgumentError) as exc:
        v.validate({"restaurant_id": "rst_1", "items": []})
    assert exc.value.path == "/items" and exc.value.expected == "array"
    with pytest.raises(ArgumentError) as exc:
        v.validate({"restaurant_id": "rst_1", "items": [{"item_id": "m_1", "qty": True}]})
    assert exc.value.path == "/items/0/qty"
    filled = v.validate(PLACE)
    assert filled == {
        "restaurant_id": "rst_1",
        "items": [{"item_id": "m_1", "qty": 1, "notes": ""}],
        "address": None,
        "payment": "saved_card",
    }
    assert PLACE == {"restaurant_id": "rst_1", "items": [{"item_id": "m_1"}]}  # not mutated
    with pytest.raises(ArgumentError) as exc:
        LLMSimBackend().tools()["parcels.reschedule_delivery"].validator.validate(
            {"tracking_id": "DHL1234567", "date": "tomorrow", "window": "morning"}
        )
    assert exc.value.path == "/date" and "string" in exc.value.expected


def test_env_reports_invalid_arguments_with_path() -> None:
    env = PhonePlanEnv(task=order_task(), backend="llmsim", simulator=FakeSimulator())
    env.reset(seed=0)
    obs, *_ = env.step(act("food.place_order", restaurant_id="rst_1", items=[{"item_id": "m_1", "qty": 0}]))
    fb = json.loads(obs["feedback"])
    assert fb["error"] == "invalid_arguments" and fb["path"] == "/items/0/qty" and fb["expected"] == "integer"


def test_schema_validator_error_text() -> None:
    v = SchemaValidator({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert v.error({"n": 1}) is None
    assert v.error({"n": "x"}).startswith("/n:")


# ------------------------------------------------------------------------------------------ serving


def test_scripted_calls_are_served_without_the_client() -> None:
    script = [SimulatedCall(tool="parcels.track_parcel", arguments={"tracking_id": "DHL1234567"}, result=PARCEL)]
    fake = FakeSimulator()
    b = LLMSimBackend(client=fake)
    b.reset(parcel_task(simulated=script))
    fb = b.call("parcels.track_parcel", {"tracking_id": "DHL1234567"})
    assert fb.ok and fb.result == PARCEL
    assert fake.calls == []
    offline = LLMSimBackend()
    offline.reset(parcel_task(simulated=script))
    assert offline.call("parcels.track_parcel", {"tracking_id": "DHL1234567"}).result == PARCEL
    fb = offline.call("parcels.track_parcel", {"tracking_id": "UPS9999999"})
    # A scripted world answers what it does not know as "not found": the agent's problem.
    assert fb.error is ErrorKind.NOT_FOUND and fb.recoverable and "nothing matches" in fb.message
    assert not fb.infrastructure
    assert offline.ledger.facts["parcels.parcels"]["DHL1234567"]["status"] == "in_transit"


def test_scripted_arguments_match_after_defaults() -> None:
    script = [SimulatedCall(tool="parcels.list_parcels", arguments={}, result={"parcels": [], "total": 0})]
    b = LLMSimBackend()
    b.reset(parcel_task(simulated=script))
    args = b.tools()["parcels.list_parcels"].validator.validate({})
    assert b.call("parcels.list_parcels", args).result == {"parcels": [], "total": 0}


def test_invalid_scripted_result_is_rejected_at_reset() -> None:
    script = [SimulatedCall(tool="parcels.track_parcel", arguments={"tracking_id": "DHL1234567"}, result={"x": 1})]
    with pytest.raises(ValueError, match="scripted result"):
        LLMSimBackend().reset(parcel_task(simulated=script))
    with pytest.raises(ValueError, match="lacks"):
        LLMSimBackend().reset(parcel_task(simulated=[SimulatedCall(tool="parcels.teleport")]))


def test_simulated_result_validated_and_prompt_built() -> None:
    fake = FakeSimulator(["```json\n" + json.dumps(ORDER) + "\n```"])
    b = LLMSimBackend(client=fake)
    b.reset(order_task())
    fb = b.call("food.place_order", b.tools()["food.place_order"].validator.validate(PLACE))
    assert fb.ok and fb.result == ORDER
    call = fake.calls[0]
    system, user = call["messages"][0]["content"], call["messages"][1]["content"]
    assert system.startswith("You simulate the Food Delivery app")
    assert "2026-11-29T09:00:01 (Europe/Berlin)" in system
    assert "Luigi's" in system and '"food.place_order"' in system
    assert json.loads(user)["name"] == "food.place_order"
    assert call["json_schema"]["anyOf"][0] == b.tools()["food.place_order"].spec.returns
    assert b.simulator_usage.output == 20


def test_invalid_replies_retried_with_feedback() -> None:
    fake = FakeSimulator(["not json", {"order_id": "ord_1"}, ORDER])
    b = LLMSimBackend(client=fake)
    b.reset(order_task())
    fb = b.call("food.place_order", PLACE)
    assert fb.ok and fb.result == ORDER
    assert len(fake.calls) == 3
    retry = fake.calls[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "not json"}
    assert "not valid JSON" in retry[-1]["content"]
    assert "return schema" in fake.calls[2]["messages"][-1]["content"]


@pytest.mark.parametrize("max_retries", [0, 2])
def test_invalid_replies_end_in_device_error(max_retries: int) -> None:
    fake = FakeSimulator(["{broken"] * 5)
    b = LLMSimBackend(client=fake, max_retries=max_retries)
    b.reset(order_task())
    fb = b.call("food.place_order", PLACE)
    assert not fb.ok and fb.error is ErrorKind.DEVICE_ERROR and fb.recoverable is False
    assert len(fake.calls) == 1 + max_retries
    assert b.tables()["food.orders"] == {}


def test_error_reply_is_a_tool_error() -> None:
    fake = FakeSimulator([{"error": "There is no order ord_9.", "kind": "not_found"}, {"error": "Too late."}])
    b = LLMSimBackend(client=fake)
    b.reset(order_task())
    fb = b.call("food.order_status", {"order_id": "ord_9"})
    assert fb.error is ErrorKind.NOT_FOUND and fb.message == "There is no order ord_9." and fb.recoverable
    fb = b.call("food.cancel_order", {"order_id": "ord_9", "reason": ""})
    assert fb.error is ErrorKind.NOT_FOUND and not fb.infrastructure


def test_infrastructure_errors() -> None:
    fake = FakeSimulator([InfrastructureError("server down"), InfrastructureError("slow", kind="timeout")])
    b = LLMSimBackend(client=fake)
    b.reset(order_task())
    fb = b.call("food.place_order", PLACE)
    assert fb.error is ErrorKind.DEVICE_ERROR and fb.recoverable is False and "server down" in fb.message
    fb = b.call("food.place_order", PLACE)
    assert fb.error is ErrorKind.TIMEOUT and fb.recoverable is False and fb.infrastructure


def test_infrastructure_error_marks_the_verdict() -> None:
    env = PhonePlanEnv(task=order_task(), backend="llmsim", simulator=FakeSimulator([InfrastructureError("boom")]))
    env.reset(seed=0)
    obs, *_ = env.step(act("food.place_order", **PLACE))
    assert json.loads(obs["feedback"])["error"] == "device_error"
    *_, info = env.step(act("finish", answer="failed"))
    assert info["verdict"]["infrastructure_error"] is True and info["infrastructure_error"] is True


# ------------------------------------------------------------------------------------------ ledger


def test_ledger_merge_creates_records_visible_in_tables() -> None:
    b = LLMSimBackend(client=FakeSimulator([ORDER, STATUS]))
    b.reset(order_task())
    assert set(b.tables()["food.restaurants"]) == {"rst_1"}
    assert b.call("food.place_order", PLACE).ok
    rec = b.tables()["food.orders"]["ord_1"]
    assert rec["total"] == 11.5 and rec["status"] == "placed"
    snap_rec = rec
    assert b.call("food.order_status", {"order_id": "ord_1"}).ok
    # a read updates the facts, not the verification view (no collateral from lookups)
    assert b.ledger.facts["food.orders"]["ord_1"]["status"] == "preparing"
    assert b.tables()["food.orders"]["ord_1"] is snap_rec
    assert snap_rec["status"] == "placed"  # records are replaced, never mutated
    assert b.consistency_issues() == []


def test_ledger_entity_choice_and_nested_objects() -> None:
    ledger = FactLedger(load_sim_apps())
    issues = ledger.merge(
        "food",
        {"orders": [{"order_id": "ord_1", "restaurant_id": "rst_1", "total": 5}, {"order_id": "ord_2", "total": 7}]},
        write=False,
    )
    assert issues == []
    assert set(ledger.facts["food.orders"]) == {"ord_1", "ord_2"}
    assert ledger.facts["food.restaurants"] == {}  # the order holds rst_1 as a reference only
    assert ledger.tables["food.orders"] == {}
    ledger.merge("cinema", {"booking_id": "bkg_1", "showtime_id": "shw_1", "movie_id": "mov_1", "seats": ["F7"]})
    assert set(ledger.tables["cinema.bookings"]) == {"bkg_1"}
    assert ledger.facts["cinema.showtimes"] == {} and ledger.facts["cinema.movies"] == {}


def test_contradictions_flagged() -> None:
    ledger = FactLedger(load_sim_apps())
    assert ledger.merge("food", ORDER) == []
    # agreeing restatements are no contradiction: 11.50 == 11.5, items as a multiset on common fields
    assert ledger.merge("food", {"order_id": "ord_1", "total": 11.50, "items": [{"item_id": "m_1", "qty": 1}]}) == []
    issues = ledger.merge("food", {"order_id": "ord_1", "total": 14.0})
    assert len(issues) == 1 and "ord_1" in issues[0] and "total" in issues[0]
    assert "11.5" in issues[0] and "14.0" in issues[0]
    assert ledger.facts["food.orders"]["ord_1"]["total"] == 11.5  # the established fact stands
    issues = ledger.merge("food", {"order_id": "ord_1", "items": [{"item_id": "m_2", "qty": 1}]})
    assert len(issues) == 1 and "items" in issues[0]
    assert ledger.merge("food", {"order_id": "ord_1", "status": "out_for_delivery"}) == []
    issues = ledger.merge("food", {"order_id": "ord_1", "status": "preparing"})
    assert len(issues) == 1 and "lifecycle" in issues[0]
    assert ledger.merge("food", {"order_id": "ord_1", "status": "cancelled"}) == []
    issues = ledger.merge("food", {"order_id": "ord_1", "status": "delivered"})
    assert len(issues) == 1 and "terminal" in issues[0] and '"cancelled"' in issues[0] and '"delivered"' in issues[0]
    assert ledger.facts["food.orders"]["ord_1"]["status"] == "cancelled"
    assert ledger.merge("parcels", PARCEL) == []
    assert ledger.merge("parcels", {**PARCEL, "last_update": "2026-11-29T08:00:00"}) == []
    issues = ledger.merge("parcels", {**PARCEL, "last_update": "2026-11-28T20:00:00"})
    assert len(issues) == 1 and "last_update" in issues[0] and "backwards" in issues[0]
    assert "DHL1234567" in issues[0]


def test_contradiction_marks_the_episode_inconsistent() -> None:
    late = {**STATUS, "total": 19.9}
    env = PhonePlanEnv(task=order_task(), backend="llmsim", simulator=FakeSimulator([ORDER, late]))
    env.reset(seed=0)
    env.step(act("food.place_order", **PLACE))
    env.step(act("food.order_status", order_id="ord_1"))
    *_, info = env.step(act("finish", answer="Ordered."))
    verdict = info["verdict"]
    assert verdict["inconsistent"] is True
    assert any("total" in s and "19.9" in s for s in verdict["inconsistencies"])
    assert verdict["success"] is True  # the goal was met; the episode is flagged, not failed


def test_consistent_episode_verified_from_the_ledger() -> None:
    env = PhonePlanEnv(task=order_task(), backend="llmsim", simulator=FakeSimulator([ORDER, STATUS]))
    env.reset(seed=0)
    obs, *_ = env.step(act("food.place_order", **PLACE))
    obs, *_ = env.step(act("food.order_status", order_id="ord_1"))
    *_, info = env.step(act("finish", answer="Ordered."))
    assert info["verdict"]["inconsistent"] is False
    assert info["success"] is True and info["verdict"]["collateral"] == []
    trace = env.trace
    assert [s.backend for s in trace.steps] == ["llmsim"] * 3
    assert trace.steps[0].clock == "2026-11-29T09:00:01"


def test_reads_leave_no_collateral() -> None:
    fake = FakeSimulator([{"restaurants": [], "total": 0}, ORDER])
    env = PhonePlanEnv(task=order_task(), backend="llmsim", simulator=fake)
    env.reset(seed=0)
    env.step(act("food.search_restaurants", query="pizza"))
    *_, info = env.step(act("finish", answer="nothing"))
    assert info["verdict"]["collateral"] == [] and not info["success"]


# ------------------------------------------------------------------------------------------ cache


EPISODE = [
    act("food.search_restaurants", query="pizza"),
    act("food.place_order", **PLACE),
    act("food.order_status", order_id="ord_1"),
    act("finish", answer="Ordered."),
]
SEARCH = {
    "restaurants": [
        {
            **LUIGI,
            "rating": 4.6,
            "delivery_fee": 2.0,
            "min_order": 10.0,
            "eta_minutes": 35,
            "open_now": True,
            "currency": "EUR",
        }
    ],
    "total": 1,
}


def run_episode(backend: LLMSimBackend) -> str:
    env = PhonePlanEnv(task=order_task(), backend=backend)
    env.reset(seed=0)
    for a in EPISODE:
        env.step(a)
    assert env.unwrapped.verdict.success
    return env.unwrapped.trace.model_dump_json()


def test_cache_replays_byte_identical(tmp_path: Any) -> None:
    path = tmp_path / "sim.jsonl"
    cache = SimulationCache(path)
    first = FakeSimulator([SEARCH, ORDER, STATUS])
    trace1 = run_episode(LLMSimBackend(client=first, cache=cache))
    assert len(first.calls) == 3 and len(cache) == 3
    second = FakeSimulator()
    trace2 = run_episode(LLMSimBackend(client=second, cache=cache))
    assert second.calls == []
    assert trace1 == trace2
    # a fresh process: the file alone replays the world, even without a simulator
    trace3 = run_episode(LLMSimBackend(cache=SimulationCache(path), model="fake-sim"))
    assert trace3 == trace1
    assert len(path.read_text().splitlines()) == 3


def test_cache_key_follows_the_ledger() -> None:
    b = LLMSimBackend(client=FakeSimulator([ORDER]), cache=SimulationCache())
    b.reset(order_task())
    args = {"order_id": "ord_1"}
    k1 = b.cache_key("food.order_status", args)
    assert b.cache_key("food.order_status", dict(args)) == k1
    assert b.cache_key("food.order_status", {"order_id": "ord_2"}) != k1
    assert b.call("food.place_order", PLACE).ok
    k2 = b.cache_key("food.order_status", args)
    assert k2 != k1
    b.reset(order_task())
    assert b.cache_key("food.order_status", args) == k1
    other = LLMSimBackend(client=FakeSimulator(), model="another-model")
    other.reset(order_task())
    assert other.cache_key("food.order_status", args) != k1
    assert SimulationCache.key("m", "t", {"a": 1, "b": 2}, "d") == SimulationCache.key("m", "t", {"b": 2, "a": 1}, "d")


def test_cache_file_survives_a_torn_line(tmp_path: Any) -> None:
    path = tmp_path / "c.jsonl"
    c = SimulationCache(path)
    c.put("k1", {"x": [1, 2.5, "é"]}, tool="t")
    with path.open("a") as fh:
        fh.write('{"key": "k2", "res')
    again = SimulationCache(path)
    assert again.get("k1") == {"x": [1, 2.5, "é"]} and "k2" not in again
    assert again.get("k2", "miss") == "miss"


# ------------------------------------------------------------------------------------------ world


def test_snapshot_restore_and_clock() -> None:
    b = LLMSimBackend(client=FakeSimulator([ORDER, {**STATUS, "total": 1.0}]))
    b.reset(order_task())
    assert b.clock() == CLOCK
    snap = b.snapshot()
    b.call("food.place_order", PLACE)
    b.call("food.order_status", {"order_id": "ord_1"})
    assert b.clock() == "2026-11-29T09:00:02"
    assert "ord_1" in b.tables()["food.orders"] and len(b.consistency_issues()) == 1
    after = b.snapshot()
    b.restore(snap)
    assert b.clock() == CLOCK and b.tables()["food.orders"] == {} and b.consistency_issues() == []
    assert b.ledger.facts["food.orders"] == {}
    b.restore(after)
    assert "ord_1" in b.tables()["food.orders"] and len(b.consistency_issues()) == 1
    b.set_clock(0.0)
    assert b.clock() == "2026-11-29T09:00:02"


def test_screenshot_backend_registry_and_can_run() -> None:
    fake = FakeSimulator([ORDER])
    b = make_backend("llmsim", simulator=fake)
    assert isinstance(b, LLMSimBackend) and b.client is fake
    task = order_task()
    assert b.can_run(task) and not b.can_run(task.model_copy(update={"backends": ["sandbox"]}))
    b.reset(task)
    img = b.screenshot()
    assert img.shape == (640, 360, 3) and img.dtype == np.uint8
    b.call("food.place_order", PLACE)
    assert b.screenshot().shape == (640, 360, 3)
    assert b.served_by("food.place_order") == "llmsim"
