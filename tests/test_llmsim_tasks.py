"""Tasks that run on ``llmsim`` alone: the suite has them, ``gym.make(backend="llmsim")`` runs
them with no simulator model (the task's script answers), and their verdicts hold: the reference
plan succeeds, a wrong quantity, screening or a hedged answer fails; a call that names nothing
the task is about earns no milestone."""

from __future__ import annotations

import gymnasium as gym

import phoneenv  # noqa: F401 - registers PhonePlan-v0
from phoneenv.contract import ToolCall
from phoneenv.tasks import load_suite, select
from phoneenv.tasks.validate import run_plan


def test_the_suite_has_llmsim_only_tasks_for_the_simulated_apps():
    only = [t for t in load_suite() if t.backends == ["llmsim"]]
    assert len(only) >= 30
    assert {a for t in only for a in t.apps} >= {"food", "parcels", "cinema"}


def test_gym_make_on_llmsim_runs_a_suite_task_to_success():
    env = gym.make("PhonePlan-v0", backend="llmsim")
    task = select("simulated.food_order/0")[0]
    info, fbs = run_plan(env.unwrapped, task, task.reference_plan)
    assert all(fb.ok for fb in fbs)
    assert info["verdict"]["success"], info["verdict"]
    order = task.reference_plan[2].arguments
    wrong = [{**order["items"][0], "qty": order["items"][0]["qty"] + 1}]
    plan = [
        *task.reference_plan[:2],
        ToolCall(name="food.place_order", arguments={**order, "items": wrong}),
        task.reference_plan[3],
    ]
    info, _ = run_plan(env.unwrapped, task, plan)
    assert not info["verdict"]["success"]


def test_a_parcel_date_is_checked_against_the_script():
    task = select("simulated.parcel_eta/0")[0]
    env = gym.make("PhonePlan-v0", backend="llmsim", tasks=[task])
    info, _ = run_plan(env.unwrapped, task, task.reference_plan)
    assert info["verdict"]["success"], info["verdict"]
    assert task.criteria[0].value == "2026-11-27"  # the script's estimated_delivery (read by hand)
    wrong = [*task.reference_plan[:2], ToolCall(name="finish", arguments={"answer": "It arrives on 2026-11-28."})]
    info, _ = run_plan(env.unwrapped, task, wrong)
    assert not info["verdict"]["success"]


def test_a_cinema_booking_is_checked_against_the_screening_and_seats():
    task = select("simulated.cinema_booking/0")[0]
    # read by hand from the task: Sunday 8 November 2026, Kino Central's first screening after 7 pm
    assert "F10 and F11" in task.goal and "Sunday 8 November" in task.goal and "Kino Central" in task.goal
    book = task.reference_plan[2]
    assert book.arguments == {"showtime_id": "shw_168", "seats": ["F10", "F11"]}
    env = gym.make("PhonePlan-v0", backend="llmsim", tasks=[task])
    info, _ = run_plan(env.unwrapped, task, task.reference_plan)
    assert info["verdict"]["success"], info["verdict"]
    assert info["verdict"]["progress"] == 1.0
    one_seat = ToolCall(name="cinema.book_tickets", arguments={"showtime_id": "shw_168", "seats": ["F10"]})
    info, fbs = run_plan(env.unwrapped, task, [*task.reference_plan[:2], one_seat, task.reference_plan[3]])
    assert not fbs[2].ok  # unscripted: nothing matches, no booking
    assert not info["verdict"]["success"]


def test_calling_the_app_without_the_right_ids_earns_no_progress():
    task = select("simulated.parcel_eta/0")[0]
    env = gym.make("PhonePlan-v0", backend="llmsim", tasks=[task])
    listed_only = [task.reference_plan[0], ToolCall(name="finish", arguments={"answer": "soon"})]
    info, _ = run_plan(env.unwrapped, task, listed_only)
    assert info["verdict"]["progress"] == 0.0
    info, _ = run_plan(env.unwrapped, task, task.reference_plan)
    assert info["verdict"]["progress"] == 1.0
