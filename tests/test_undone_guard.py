"""Every task that changes the phone fails when its answer reports the change undone
(:mod:`phoneenv.tasks.undone`): the criterion, its words, the verdict of template and hand-written
tasks alike, and its generated probe across the suite."""

from __future__ import annotations

import re

import pytest

from phoneenv.contract import TaskSpec
from phoneenv.tasks import load_suite
from phoneenv.tasks.templates import call, state
from phoneenv.tasks.undone import UNDONE, undone_answer, undone_criterion, undone_pattern

VERBS = ["pay", "send", "transfer", "add", "create", "change"]


@pytest.mark.parametrize(
    "answer",
    [
        "Sorry, I couldn't pay Clive.",
        "I was unable to send the text.",
        "I didn't add the event yet.",
        "Failed to transfer the money",
        "I can't create it, the calendar is full",
        "I wasn’t able to change the booking",
        "The text couldn't be sent.",
        "The bill wasn't paid",
        "The event hasn't been created yet",
        "The transfer didn't go through.",
        "Your card was declined.",
        "I didn't send it because the app crashed.",
    ],
)
def test_a_failure_or_denial_of_the_action_is_a_report_of_it_undone(answer):
    assert re.search(undone_pattern(VERBS), answer, re.I)


@pytest.mark.parametrize(
    "answer",
    [
        "Done: I paid Clive 20 USD.",
        "I didn't need to add it again: it was already there.",
        "Moved the meeting; I didn't change anything else.",
        "I couldn't find a photo of the dog, so I sent the beach one.",
        "Sent. I did not pay the other bill, as you asked.",
        "Sent 1 reply. I didn't reply to the automatic no-reply message, as the skill says.",
        "I didn't add the curry because you've gone vegetarian; 1 Palak Paneer is on its way.",
        "Replied to Ana. I didn't reply to messages you had already read.",
        "Paid the bill. The one that wasn't paid last month is settled too.",
    ],
)
def test_other_answers_are_no_such_report(answer):
    assert not re.search(undone_pattern(VERBS), answer, re.I)


def _task(criteria, plan=None):
    return TaskSpec(id="t/0", domain="communication", goal="Text Ana hi.", criteria=criteria, reference_plan=plan)


def test_the_guard_comes_with_changes_and_not_with_reads_or_reported_failures():
    plan = [
        call("contacts.search", query="Ana"),
        call("messages.send", to="+1", body="hi"),
        call("finish", answer="Sent."),
    ]
    created = [state("messages.messages", "created", body={"says": "hi"})]
    crit = undone_criterion(_task(created, plan))
    assert crit.kind == "not" and crit.id == UNDONE
    assert undone_answer(_task(created, plan)) == "Sorry, I couldn't send it."
    assert undone_criterion(_task([state("messages.messages", "absent", body="x")], plan)) is None  # changes nothing
    told = [*plan[:-1], call("finish", answer="I couldn't send it: no signal.")]
    assert undone_criterion(_task(created, told)) is None  # the task is about a failure
    reads = [call("contacts.search", query="Ana"), call("finish", answer="Found her.")]
    assert undone_criterion(_task(created, reads)) is None  # no action verb to read
    own = [*created, crit.model_copy(update={"id": f"{UNDONE}:own"})]
    assert undone_criterion(_task(own, plan)) is None  # the task carries its own


def test_a_hand_written_task_without_a_plan_is_guarded_by_the_calls_it_made():
    """No reference plan: the verbs are those of the episode's calls, so "couldn't send" fails
    a task whose text was sent, and the same words pass where nothing was sent at all."""
    from phoneenv.env import PhonePlanEnv

    ana = {"id": "c_1", "name": "Ana Silva", "phone": "+15550100"}
    task = TaskSpec.model_validate(
        {
            "id": "hand/0",
            "domain": "communication",
            "goal": "Text Ana: running late.",
            "fixtures": {"records": {"contacts.contacts": [ana]}},
            "criteria": [
                {
                    "kind": "state",
                    "table": "messages.messages",
                    "change": "created",
                    "where": {"body": {"says": "running late"}},
                }
            ],
        }
    )
    env = PhonePlanEnv(tasks=[task])
    env.reset(seed=0, options={"task": task})
    env.step({"name": "messages.send", "arguments": {"to": ana["phone"], "body": "Running late"}})
    info = env.step({"name": "finish", "arguments": {"answer": "Sorry, I couldn't send it."}})[-1]
    verdict = info["verdict"]
    guard = [c for c in verdict["criteria"] if c["id"] == UNDONE]
    assert guard and not guard[0]["passed"] and not verdict["success"]
    env.reset(seed=0, options={"task": task})
    env.step({"name": "messages.send", "arguments": {"to": ana["phone"], "body": "Running late"}})
    assert env.step({"name": "finish", "arguments": {"answer": "Texted Ana."}})[-1]["verdict"]["success"]


def test_every_suite_task_that_changes_the_phone_is_guarded():
    """2,141 of the 2,213 tasks (186 of 192 templates) at the time of writing; the rest answer
    questions. Each guarded task proves its generated "undone" probe in ``phoneenv tasks
    validate``."""
    suite = load_suite()
    guarded = [t for t in suite if undone_criterion(t) is not None or any(c.id.startswith(UNDONE) for c in t.criteria)]
    assert len(guarded) >= 2141
    assert sum(1 for t in suite if undone_answer(t)) >= 2100
    templates = {t.template for t in suite} - {t.template for t in guarded}
    assert templates == {
        "budget.spending_answer",
        "clock.what_time",
        "memory.recall_answer",
        "simulated.parcel_eta",
        "travel_memory.time_to_place",
        "travel_subagent.warmest_city",
    }


def test_the_prover_leaves_free_arguments_alone_and_perturbs_fixed_ones():
    """``free_arguments``: the answer of an action task and a greeting no word of which the goal
    holds are free; a body that names the goal's place, a recipient's number, a size code and the
    answer of a task that asks for one are not."""
    from phoneenv.contract import AnswerCriterion
    from phoneenv.tasks.validate import free_arguments

    plan = [
        call("camera.take_photo"),
        call("messages.send_photos", to="+4915112345678", photo_ids=["ph_5"], body="Hi! Look at this"),
        call("shop.add_to_cart", product_id="p_1", size="XL"),
        call("messages.send", to="+4915112345678", body="I'm at Central Station"),
        call("finish", answer="Sent."),
    ]
    created = [state("messages.messages", "created", body={"says": "Central Station"})]
    task = TaskSpec(id="t/0", domain="communication", goal="Send Ana a photo; I'm at Central Station.",
                    criteria=created, reference_plan=plan)  # fmt: skip
    assert free_arguments(task) == {"1.body", "4.answer"}
    asked = task.model_copy(update={"criteria": [*created, AnswerCriterion(contains=["sent"])]})
    assert free_arguments(asked) == {"1.body"}
