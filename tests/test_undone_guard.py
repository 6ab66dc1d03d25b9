"""Every template task that changes the phone fails when its answer reports the change undone
(``templates.undone_guard``): the criterion, its words, and its probe across the suite."""

from __future__ import annotations

import re

import pytest

from phoneenv.tasks import load_suite
from phoneenv.tasks.templates import call, state, undone_guard, undone_pattern

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


def test_the_guard_comes_with_changes_and_not_with_reads_or_reported_failures():
    plan = [
        call("contacts.search", query="Ana"),
        call("messages.send", to="+1", body="hi"),
        call("finish", answer="Sent."),
    ]
    created = [state("messages.messages", "created", body={"says": "hi"})]
    crit, probe = undone_guard(created, plan)
    assert crit.kind == "not" and crit.id == "not_reported_undone"
    assert probe.expect == "fail" and probe.plan[-1].arguments["answer"] == "Sorry, I couldn't send it."
    assert undone_guard([state("messages.messages", "absent", body="x")], plan) is None  # changes nothing
    told = [*plan[:-1], call("finish", answer="I couldn't send it: no signal.")]
    assert undone_guard(created, told) is None  # the task is about a failure
    reads = [call("contacts.search", query="Ana"), call("finish", answer="Found her.")]
    assert undone_guard(created, reads) is None  # no action verb to read


def test_every_suite_task_that_changes_the_phone_is_guarded():
    """2,141 of the 2,213 tasks (186 of 192 templates) at the time of writing; the rest answer
    questions. Each guarded task proves its probe in ``phoneenv tasks validate``."""
    suite = load_suite()
    guarded = [t for t in suite if any(c.id.startswith("not_reported_undone") for c in t.criteria)]
    probed = [t for t in suite if any(p.name == "reported as not done" for p in t.probes)]
    assert len(guarded) >= 2141 and len(probed) >= 2100
    templates = {t.template for t in suite} - {t.template for t in guarded}
    assert templates == {
        "budget.spending_answer",
        "clock.what_time",
        "memory.recall_answer",
        "simulated.parcel_eta",
        "travel_memory.time_to_place",
        "travel_subagent.warmest_city",
    }
