"""Grounded claims: what the planner tells is held to the world it could see, on every task.

Each case plays a whole plan through ``env.step`` (the reference plan with one text changed) and
reads the verdict's ``grounded`` criterion. The expectations are a careful person's: a time, date,
weekday, amount, currency, temperature unit, address or number the world does not hold fails;
the same facts said another way (12-hour times, words, a converted unit, a true extra fact) pass.
"""

from __future__ import annotations

import pytest

from phoneenv.contract import TaskSpec, ToolCall
from phoneenv.env import PhonePlanEnv
from phoneenv.tasks import get_task
from phoneenv.tasks.grounding import Evidence, temperature_claims
from phoneenv.tasks.predicates import Context
from phoneenv.tasks.validate import run_plan
from phoneenv.tasks.verify import GROUNDED


def _play(task: TaskSpec, plan: list[ToolCall]) -> dict:
    env = PhonePlanEnv(tasks=[task], backend=task.backends[0])
    info, _ = run_plan(env, task, plan)
    return info["verdict"]


def _grounded(verdict: dict) -> dict:
    return next(c for c in verdict["criteria"] if c["id"] == GROUNDED)


def _answer(task_id: str, answer: str) -> dict:
    task = get_task(task_id)
    plan = [*task.reference_plan[:-1], ToolCall(name="finish", arguments={"answer": answer})]
    return _play(task, plan)


def _text(task_id: str, tool: str, key: str, body: str) -> dict:
    """The reference plan of ``task_id`` with the ``key`` argument of its ``tool`` call replaced."""
    task = get_task(task_id)
    plan = [
        ToolCall(name=c.name, arguments={**c.arguments, key: body}) if c.name == tool else c
        for c in task.reference_plan
    ]
    return _play(task, plan)


# Wrong facts told beside the right result: each was a pass before grounded claims.
TOLD_WRONG = [
    # an alarm's time told an hour off (the alarm itself set right)
    ("clock.set_alarm/0", "Alarm set for 06:00; the 07:15 one is off.", "06:00"),
    ("clock.set_alarm/0", "Your 6 AM alarm 'Walk the dog' is on, and the 7:15 one is off.", "6 AM"),
    # a price in another currency, an amount off
    ("shop.price_check/0", "It costs $74.50; no, size 41 is sold out.", "$74.50"),
    ("budget.spending_answer/0", "36.32 EUR this month.", "36.32 EUR"),
    ("budget.spending_answer/0", "You've spent 63.32 USD on dining this month.", "63.32 USD"),
    # a temperature in the wrong unit
    ("weather.text_forecast/0", "Tomorrow in Amsterdam: fog, high 8.6°F.", "8.6°F"),
    # a number or an address that is no one's
    ("contacts.lookup_number/0", "+447999030282", "+447999030282"),
    # the day of an act a call does at once, told as another: the clock says Monday 9 November
    ("wallet.pay_back/3", "Sent 2,700 yen to Chiyo on Sunday.", "Sunday"),
    ("wallet.pay_back/3", "I just sent Chiyo 2700 JPY yesterday.", "yesterday"),
    ("wallet.pay_back/3", "Sent 2700 JPY to Chiyo on Tuesday 10 November.", "Tuesday 10 November"),
]


@pytest.mark.parametrize(("task_id", "answer", "said"), TOLD_WRONG)
def test_a_wrong_fact_in_the_answer_fails(task_id, answer, said):
    verdict = _answer(task_id, answer)
    crit = _grounded(verdict)
    assert not crit["passed"] and not verdict["success"]
    assert said in crit["reason"] and "answer says" in crit["reason"]


TOLD_RIGHT = [
    ("clock.set_alarm/0", "Done: the 5 AM alarm 'Walk the dog' is set, and the quarter past seven one is off."),
    ("clock.set_alarm/0", "Sure! Alarm set for 5:00 a.m. tomorrow; I switched off the 7:15 AM one."),
    ("weather.text_forecast/0", "Tomorrow in Amsterdam: foggy, with a high of 47 °F (8.6 °C)."),
    ("shop.price_check/0", "It costs £74.50 - and no, size 41 is sold out."),
    ("budget.spending_answer/0", "You've spent $36.32 on dining so far this month."),
    ("contacts.lookup_number/0", "Irene's number is +44 7999 030281; I sent it to Rebecca."),
    # the act's day told right; a day of another thing beside an act
    ("wallet.pay_back/3", "Paid Chiyo 2700 JPY on Monday."),
    ("wallet.pay_back/3", "Sent 2700 JPY to Chiyo on Monday 9 November."),
    ("wallet.pay_back/3", "Sent Chiyo 2700 JPY for the taxi on Sunday."),
    ("wallet.pay_back/3", "Chiyo texted on Monday; sent her 2700 JPY."),
    ("wallet.pay_back/3", "Chiyo sent the request on Monday and I paid her 2700 JPY."),
    ("weather.text_forecast/0", "Sent tomorrow's forecast: fog, high 8.6°C in Amsterdam."),
    # an amount in words: the pence are no count ("58 left")
    ("budget.set_and_check/6", "Done. Forty-two pounds fifty-eight left for dining this week."),
]


@pytest.mark.parametrize(("task_id", "answer"), TOLD_RIGHT)
def test_a_right_fact_said_another_way_passes(task_id, answer):
    verdict = _answer(task_id, answer)
    assert _grounded(verdict)["passed"], _grounded(verdict)["reason"]


def test_a_weekday_must_be_the_dates():
    # 10 November 2026 is a Tuesday: a text that calls it Wednesday tells the invitee a false day
    task = "calendar.move_event/0"
    verdict = _text(task, "messages.send", "body", "Parent-teacher meeting moves to Wednesday 10 November.")
    crit = _grounded(verdict)
    assert not crit["passed"] and "is a Tuesday" in crit["reason"] and "messages.send body" in crit["reason"]
    ok = _text(task, "messages.send", "body", "Parent-teacher meeting moves to Tuesday 10 November, same time.")
    assert _grounded(ok)["passed"], _grounded(ok)["reason"]


def test_a_wrong_time_in_a_text_fails_and_names_the_text():
    task = "calendar.move_event/0"
    verdict = _text(task, "messages.send", "body", "Parent-teacher meeting moves to Tuesday 10 November at 18:30.")
    crit = _grounded(verdict)
    assert not crit["passed"] and "'18:30'" in crit["reason"] and "messages.send body" in crit["reason"]
    same = _text(task, "messages.send", "body", "It moves to Tuesday 10 November, 5:30 pm as usual.")
    assert _grounded(same)["passed"], _grounded(same)["reason"]


def test_the_day_the_episode_did_must_be_told():
    # the event moved to Tuesday the 10th: "moved to Wednesday" names a day the episode did not use
    task = get_task("calendar.move_event/0")
    verdict = _answer("calendar.move_event/0", "Moved the parent-teacher meeting to Wednesday and told Stanley.")
    assert not _grounded(verdict)["passed"]
    right = _answer("calendar.move_event/0", "Moved the parent-teacher meeting to Tuesday 10 November, told Stanley.")
    assert _grounded(right)["passed"], (task.goal, _grounded(right)["reason"])


def test_the_old_time_of_a_move_is_not_the_new_one():
    # a move from 17:30 on Saturday: "17:30" is still the time, so it passes; 18:30 does not
    ok = _answer("calendar.move_event/0", "Moved it to Tuesday 10 November at 17:30, and told Stanley.")
    assert _grounded(ok)["passed"], _grounded(ok)["reason"]
    bad = _answer("calendar.move_event/0", "Moved it to Tuesday 10 November at 18:30, and told Stanley.")
    assert not _grounded(bad)["passed"]


def test_free_speech_is_free():
    verdict = _answer("clock.set_alarm/0", "All set - have a lovely walk with the dog! Alarm 05:00, 07:15 off.")
    assert _grounded(verdict)["passed"], _grounded(verdict)["reason"]


def test_a_task_may_exempt_a_type_with_a_reason():
    task = get_task("clock.set_alarm/0")
    exempt = task.model_copy(update={"grounding_exempt": {"time": "the user asked for a made-up time"}})
    plan = [*task.reference_plan[:-1], ToolCall(name="finish", arguments={"answer": "Alarm set for 06:00."})]
    assert _grounded(_play(exempt, plan))["passed"]
    with pytest.raises(ValueError, match="say why"):
        TaskSpec.model_validate({**task.model_dump(), "grounding_exempt": {"time": " "}})
    with pytest.raises(ValueError, match="unknown claim type"):
        TaskSpec.model_validate({**task.model_dump(), "grounding_exempt": {"mood": "x"}})


def test_temperature_claims_read_units_and_ranges():
    assert [(v, u) for _, v, u, _ in temperature_claims("fog, 46 to 58 °F, rain 4%")] == [(46.0, "F"), (58.0, "F")]
    assert [(v, u) for _, v, u, _ in temperature_claims("high 8,6 degrees Celsius")] == [(8.6, "C")]
    assert [(v, u) for _, v, u, _ in temperature_claims("about 12°")] == [(12.0, "")]


def test_derived_values_the_planner_can_work_out():
    ev = Evidence(times={"20:15"}, durations={134}, money={(20518.0, "JPY")})
    assert "22:29" in ev.derived_times() and "18:01" in ev.derived_times()  # either way
    assert "21:15" not in ev.derived_times()
    money = ev.derived_money()
    # a three-way split rounded down, and the share of whoever pays the rest
    assert (6839.0, "JPY") in money and (6840.0, "JPY") in money
    assert (6850.0, "JPY") not in money
    assert Evidence(times={"08:00"}).derived_times(later=[60]) >= {"09:00"}
    assert "07:00" not in Evidence(times={"08:00"}).derived_times(later=[60])


def test_the_clock_is_evidence():
    ctx = Context(now="2026-11-07T08:00:03")
    from phoneenv.tasks.grounding import evidence_of

    ev = evidence_of([], ctx)
    assert ev.today is not None and ev.today.isoformat() == "2026-11-07" and "08:00" in ev.times


def test_claim_probes_are_generated_both_ways():
    from phoneenv.tasks.claim_probes import claim_probes

    task = get_task("clock.set_alarm/0")  # "Alarm set for 05:00; the 07:15 one is off."
    env = PhonePlanEnv(tasks=[task])
    run_plan(env, task, task.reference_plan)
    probes = claim_probes(task, env.episode_grounds(), env.episode_context())
    by = {(p.type, p.expect): p for p in probes}
    # the first time told, an hour later: 06:00, which no alarm of this world holds
    time_probe = by[("time", "fail")]
    assert time_probe.name == "answer: '06:00'" and not time_probe.held
    assert time_probe.plan[-1].arguments["answer"] == "Alarm set for 06:00; the 07:15 one is off."
    assert not run_plan(env, task, time_probe.plan)[0]["verdict"]["success"]
    twelve = next(p for p in probes if p.name == "answer: times in 12-hour form")
    assert twelve.plan[-1].arguments["answer"] == "Alarm set for 5:00 am; the 7:15 am one is off."
    for p in probes:
        if p.expect == "pass":
            assert run_plan(env, task, p.plan)[0]["verdict"]["success"], p.name
    weather = get_task("weather.text_forecast/0")
    run_plan(env, weather, weather.reference_plan)
    kinds = {(p.type, p.name) for p in claim_probes(weather, env.episode_grounds(), env.episode_context())}
    assert ("temperature", "answer: '8.6°F'") in kinds and ("temperature", "messages.send body: '8.6°F'") in kinds


def test_code_and_commitment_probes_are_generated_both_ways():
    from phoneenv.tasks.claim_probes import claim_probes

    task = get_task("restaurants.book_table/0")  # answer and text tell the code RS8-11272030
    env = PhonePlanEnv(tasks=[task])
    run_plan(env, task, task.reference_plan)
    probes = claim_probes(task, env.episode_grounds(), env.episode_context())
    mine = [p for p in probes if p.type in ("code", "commitment") or "code" in p.name or "added" in p.name]
    told = {(p.type, p.expect, p.name) for p in mine}
    assert told == {
        ("code", "fail", "answer: 'RS8-11272031'"),  # the last digit changed
        ("code", "fail", "messages.send body: 'RS8-11272031'"),
        ("paraphrase", "pass", "answer: the code in lower case"),
        ("paraphrase", "pass", "messages.send body: the code in lower case"),
        ("commitment", "fail", 'messages.send body: "I\'ll bring the umbrellas for everyone too." added'),
        ("paraphrase", "pass", "messages.send body: \"I'll let you know when I'm there.\" added"),
    }
    for p in mine:
        assert run_plan(env, task, p.plan)[0]["verdict"]["success"] is (p.expect == "pass"), p.name


def test_a_distance_probe_tells_a_distance_no_record_holds():
    """No reference answer of the suite tells a distance; one that does gets a must-fail probe
    (the distance doubled and one more), which the verdict refuses, while the answer passes."""
    from phoneenv.tasks.claim_probes import claim_probes

    base = get_task("maps.nearest_text/0")  # Riverside Pharmacy, 0.8 km away
    plan = [c.model_copy(deep=True) for c in base.reference_plan]
    plan[-1] = plan[-1].model_copy(update={"arguments": {"answer": "Riverside Pharmacy, 0.8 km away; texted Dragica."}})
    task = base.model_copy(update={"reference_plan": plan})
    env = PhonePlanEnv(tasks=[task])
    assert run_plan(env, task, plan)[0]["verdict"]["success"]
    probes = [p for p in claim_probes(task, env.episode_grounds(), env.episode_context()) if p.type == "distance"]
    assert [(p.expect, p.name, p.held) for p in probes] == [("fail", "answer: '2.6 km'", False)]
    assert probes[0].plan[-1].arguments["answer"] == "Riverside Pharmacy, 2.6 km away; texted Dragica."
    assert not run_plan(env, task, probes[0].plan)[0]["verdict"]["success"]


def test_a_period_probe_tells_the_repetition_the_other_way_round():
    from phoneenv.tasks.claim_probes import claim_probes

    task = get_task("skills.wake_routine/0")  # "... 07:55 with a backup at 08:05, every day."
    env = PhonePlanEnv(tasks=[task])
    run_plan(env, task, task.reference_plan)
    (probe,) = [p for p in claim_probes(task, env.episode_grounds(), env.episode_context()) if p.type == "period"]
    assert probe.expect == "fail" and not probe.held
    assert probe.plan[-1].arguments["answer"] == "Wake-up routine set: 07:55 with a backup at 08:05, just once."
    assert not run_plan(env, task, probe.plan)[0]["verdict"]["success"]


def test_size_and_place_probes_swap_the_told_value_for_another_the_world_holds():
    from phoneenv.tasks.claim_probes import claim_probes

    cases = {
        "shop.buy_item/4": ("size", "Ordered the hiking boots in size 43.", "size 43"),  # the size the cart holds
        "cross.sms_event_location/3": ("place", "The pottery class on Saturday is at Harbour Hall.", "Harbour Hall"),
    }
    for task_id, (kind, told, value) in cases.items():
        task = get_task(task_id)
        env = PhonePlanEnv(tasks=[task])
        run_plan(env, task, task.reference_plan)
        (probe,) = [p for p in claim_probes(task, env.episode_grounds(), env.episode_context()) if p.type == kind]
        before, after = told.split(value)
        ref = {a for c in task.reference_plan for a in c.arguments.values() if isinstance(a, str)}
        (new,) = {a for c in probe.plan for a in c.arguments.values() if isinstance(a, str)} - ref
        assert told in ref and new.startswith(before) and new.endswith(after) and value not in new, new
        assert probe.expect == "fail" and not probe.held
        assert not run_plan(env, task, probe.plan)[0]["verdict"]["success"], probe.name


def test_switch_and_name_probes_are_generated_both_ways():
    from phoneenv.tasks.claim_probes import claim_probes

    task = get_task("clock.set_alarm/0")  # "Alarm set for 05:00; the 07:15 one is off."
    env = PhonePlanEnv(tasks=[task])
    run_plan(env, task, task.reference_plan)
    probes = [p for p in claim_probes(task, env.episode_grounds(), env.episode_context()) if p.type == "switch"]
    told = {(p.expect, p.plan[-1].arguments["answer"]) for p in probes}
    assert told == {
        ("fail", "Alarm set for 05:00; the 07:15 one is on."),  # the told state flipped, the rest as written
        ("pass", "Alarm set for 05:00; the 07:15 one is off. The 07:15 alarm is off now."),  # what it changed
        ("fail", "Alarm set for 05:00; the 07:15 one is off. The 07:15 alarm is on now."),
    }
    for p in probes:
        assert run_plan(env, task, p.plan)[0]["verdict"]["success"] is (p.expect == "pass"), p.plan[-1]
    task = get_task("memory.usual_list/0")  # "Added to Family shop."; the world also has Errands, Groceries...
    env = PhonePlanEnv(tasks=[task])
    run_plan(env, task, task.reference_plan)
    (name,) = [p for p in claim_probes(task, env.episode_grounds(), env.episode_context()) if p.type == "name"]
    assert (name.expect, name.plan[-1].arguments["answer"]) == ("fail", "Added to Errands.")
    assert not run_plan(env, task, name.plan)[0]["verdict"]["success"]


def test_a_status_probe_tells_the_act_done_as_another():
    from phoneenv.tasks.claim_probes import claim_probes

    cases = {  # each reference answer's status verb, swapped for one no act of the episode did
        "wallet.pay_back/0": ("Sent 18 GBP to Clive Morrison.", "Scheduled 18 GBP to Clive Morrison."),
        "restaurants.cancel_booking/0": ("Cancelled.", "Booked."),
        "skills.reorder_usual/0": (
            "Ordered your usual: 1 x Margherita from Pizza Roma.",
            "Cancelled your usual: 1 x Margherita from Pizza Roma.",
        ),
    }
    for task_id, (told, swapped) in cases.items():
        task = get_task(task_id)
        env = PhonePlanEnv(tasks=[task])
        run_plan(env, task, task.reference_plan)
        assert task.reference_plan[-1].arguments["answer"] == told
        probes = [p for p in claim_probes(task, env.episode_grounds(), env.episode_context()) if p.type == "status"]
        (probe,) = [p for p in probes if p.name.startswith("answer")]
        assert probe.expect == "fail" and probe.plan[-1].arguments["answer"] == swapped, probe.plan[-1]
        assert not run_plan(env, task, probe.plan)[0]["verdict"]["success"], task_id


# Told facts of the episode, from the eighth held-out set's kinds (reworded, other instances)
TOLD_OF_THE_EPISODE = [
    # told as done without asking, after an authentication; where nothing was asked it is true
    ("home.let_in/0", "Unlocked the front door without bothering you and texted Lesley Ahmed.", False),
    ("notes.delete_note/0", "Deleted it without asking.", True),
    # told as left undone: a draft for a mail sent, the cart for an order placed, an offer to run a scene run
    ("mail.send_email/0", "Saved a draft for you - ready to send.", False),
    ("memory.shop_my_size/0", "The cotton t-shirt in size L is in your cart - just confirm the checkout.", False),
    ("skills.evening_scene/0", '"Evening - Living room" is saved - say the word and I\'ll start it.', False),
    (
        "skills.evening_scene/0",
        '"Evening - Living room" is set up and running - let me know and I\'ll tweak it.',
        True,
    ),
    # the flight booked told by another flight's number (the world holds AR 637 too)
    ("travel_subagent.train_or_flight/0", "Booked flight AR 637, arriving 10:30.", False),
    ("travel_subagent.train_or_flight/0", "Booked AR 335, arriving 10:30, rather than the 07:00 train.", True),
    # what was cancelled is told as it was: 18:30 is the other table's (Golden Dragon's)
    ("restaurants.cancel_booking/0", "Cancelled your Bistro Marais dinner on Tuesday at 18:30.", False),
    ("restaurants.cancel_booking/0", "Cancelled your Bistro Marais dinner on Tuesday at 19:30.", True),
    # a landing told by its day: BW 849 leaves on Friday 4 December and lands on Saturday the 5th
    ("travel_skills.plan_a_trip/6", "Booked BW 849, which lands in Tokyo on Friday at 00:55, and BW 825.", False),
    ("travel_skills.plan_a_trip/6", "Booked BW 849, which lands in Tokyo on Saturday at 00:55, and BW 825.", True),
    # the thing an act left in a state, told as the subject of that state: it must be what was acted on
    ("memory.usual_table/0", "Your table at Taj Garden is booked for Thursday at 19:30 for two.", False),
    ("memory.usual_table/0", "Your table at Sakura Table is booked for Thursday at 19:30 for two.", True),
    ("home.make_scene/0", '"Film night" is saved and running.', False),
    ("home.make_scene/0", '"Movie night" is set up and running.', True),
    # a dash inside a quoted name ends no clause
    ("skills.evening_scene/0", '"Evening - Kitchen" is set up and running.', False),
    # "already": the state before the episode, which turned Do Not Disturb on
    (
        "settings.airplane_mode/0",
        "Airplane mode is on, Wi-Fi is back on, brightness 10%; Do Not Disturb was already on.",
        False,
    ),
    (
        "settings.airplane_mode/0",
        "Airplane mode is on, Wi-Fi is back on, brightness 10%; Do Not Disturb is on too.",
        True,
    ),
    # the order cancelled was placed, not shipped (another order of the list read is shipped)
    (
        "shop.cancel_order/0",
        "The earbuds order is cancelled - it had already shipped, so it goes back. Maria knows.",
        False,
    ),
    ("shop.cancel_order/0", "The earbuds order is cancelled before it shipped. Maria knows.", True),
    # the coffee with Linda is at Cafe Luna; "Harbour Hall" is no place of this episode's records
    ("fields.dnd_until/0", "Do not disturb is on until 11:00, when your coffee at Harbour Hall ends.", False),
    ("fields.dnd_until/0", "Do not disturb is on until 11:00, when your coffee at Cafe Luna ends.", True),
    ("fields.dnd_until/0", "Do not disturb is on until 11:00, when your coffee with Linda ends.", True),
    # a given name with a contact's surname, no one of the episode: the contact is Bobby Ayers
    ("mail.send_email/6", "Sent Billy Ayers the 'Thank you' email.", False),
    ("mail.send_email/6", "Sent Bobby Ayers the 'Thank you' email.", True),
    # a relation told before a possessive name: Sabrina Davis is a coworker
    ("contacts.lookup_number/6", "Your cousin Sabrina's number is +61463865840; Sean has it.", False),
    ("contacts.lookup_number/6", "Your coworker Sabrina's number is +61463865840; Sean has it.", True),
    # an item of a list told with one word swapped ("jasmine rice" for "basmati rice"), or one it lacks
    (
        "subagent.daily_brief/0",
        "Sent the summary: standup at 10:30; list: sunscreen, plasters, jasmine rice.",
        False,
    ),
    (
        "subagent.daily_brief/0",
        "Sent the summary: standup at 10:30; list: sunscreen, plasters, basmati rice.",
        True,
    ),
    ("subagent.daily_brief/0", "Sent the summary: standup at 10:30; list: sunscreen, plasters and rice.", True),
    ("notes.delete_note/0", "Deleted 'Packing list' (it had: passport, charger, socks).", True),
    ("notes.delete_note/0", "Deleted 'Packing list' (it had: passport, charger, shoes).", False),
    # a thing told as sent to someone by a participle alone: the planner's act, by mail here
    ("travel.check_in_forward/0", "Checked in, seat 15C; boarding pass texted to Paul.", False),
    ("travel.check_in_forward/0", "Checked in, seat 15C; boarding pass e-mailed to Paul.", True),
]


@pytest.mark.parametrize(("task_id", "answer", "ok"), TOLD_OF_THE_EPISODE)
def test_a_fact_told_of_the_episode_is_the_worlds(task_id, answer, ok):
    verdict = _answer(task_id, answer)
    assert verdict["success"] is ok, _grounded(verdict)["reason"]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("Re: Dinner on Saturday?", True),
        ("Re: Dinner on Saturday", True),  # trailing punctuation aside
        ("RE: dinner on saturday?", True),
        ("AW: Dinner on Saturday?", True),  # a German client's reply prefix
        ("Re[2]: Dinner on Saturday?", True),
        ("Dinner on Saturday?", False),  # no reply prefix
        ("Fwd: Dinner on Saturday?", False),  # a forward is no reply
        ("Re: Lunch on Saturday?", False),
    ],
)
def test_a_reply_subject_as_any_client_writes_it(value, ok):
    from phoneenv.tasks.predicates import match

    assert match({"subject": value}, {"subject": {"subject": "Re: Dinner on Saturday?"}}) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("Photos from the trip", True),
        ("photos from the trip.", True),  # typed as a sentence
        ("Photos from the trip!", True),
        ("Photos from the trip 2", False),
        ("Photos from the", False),
        ("Photos. From the trip", False),
    ],
)
def test_a_dictated_title_may_end_as_a_sentence(value, ok):
    from phoneenv.tasks.predicates import match

    assert match({"subject": value}, {"subject": {"iequals": "Photos from the trip"}}) is ok


def _dictated_task() -> tuple[TaskSpec, ToolCall]:
    task = get_task("messages.text_contact/0")
    sent = next(c for c in task.reference_plan if c.name == "messages.send")
    return task, sent


def test_a_dictated_text_may_be_greeted_and_abbreviated_but_not_added_to():
    task, sent = _dictated_task()
    body = sent.arguments["body"]
    first = get_task(task.id).goal.split()[1].rstrip(":,")  # "Text Sam: ..." -> the contact's first name
    for ok in (
        f"Hi {first}! {body} See you soon x",
        f"Hey - {body.lower()} Thx!",
        f"{body.replace('minutes', 'mins')} :)",
    ):
        verdict = _text(task.id, "messages.send", "body", ok)
        assert verdict["success"], (ok, verdict)
    stop = "" if body.rstrip()[-1:] in ".!?" else "."
    for added in (
        f"{body}{stop} Unfortunately I can't make Saturday though.",  # a refusal the user never gave
        f"{body}{stop} I'll bring the wine.",  # a promise
        f"{body}{stop} Call me at 9.",  # a time
    ):
        verdict = _text(task.id, "messages.send", "body", added)
        assert not verdict["success"], added


def test_spoken_times_are_the_times_they_say():
    from phoneenv.tasks.answers import read_value
    from phoneenv.tasks.claim_probes import _spoken

    ctx = Context(now="2026-11-20T09:00:00")
    assert _spoken("16:30") == "half past four in the afternoon"
    assert _spoken("20:45") == "quarter to nine in the evening"
    assert _spoken("11:50") is None  # "ten to twelve": noon is another part of the day
    assert _spoken("07:03") is None
    for h in range(24):
        for m in range(0, 60, 5):
            hm = f"{h:02d}:{m:02d}"
            said = _spoken(hm)
            if said is not None:
                got = read_value(f"at {said}", "time", ctx)
                assert got and got[0].value == hm, (hm, said, got)


TOLD_TYPED = [
    # a time the episode set is told as set: not moved by a duration the goal holds ("an hour before")
    (
        "time",
        "todo.add_due_item/0",
        'Added "collect the prescription" to Errands, due tomorrow at 17:00, reminder at 15:00.',
        False,
    ),
    (
        "time",
        "todo.add_due_item/0",
        'Added "collect the prescription" to Errands, due tomorrow at 17:00, reminder at 16:00.',
        True,
    ),
    # a count of what the episode made ("made ... with 3 items")
    ("count", "checklists.make/0", 'Made the "Camping gear" checklist with 3 items.', True),
    # status: a draft, a request, a call, a tick need a call of that kind; "shipped" a record's state
    ("status", "mail.send_email/0", 'Saved "Book club" as a draft for Christopher.', False),
    ("status", "mail.reply/0", "Your reply to Margot is drafted but not sent yet.", False),
    ("status", "wallet.pay_back/0", "Requested 18 GBP from Clive Morrison.", False),  # it was paid
    ("status", "messages.last_texter/0", 'Kyle Rubio texted last ("See you then!"); I called him back.', False),
    ("status", "checklists.make/0", 'Made the "Camping gear" checklist and ticked off the headlamp.', False),
    ("status", "checklists.make/0", 'Made the "Camping gear" checklist; nothing is ticked off yet.', True),
    # percent: a level or chance the grounds hold, of the setting the part of the sentence names
    ("percent", "settings.brightness/0", "Brightness is 65%, media volume 30%.", True),
    ("percent", "settings.brightness/0", "Brightness is 75%, media volume 30%.", False),
    ("percent", "settings.brightness/0", "Brightness is 65%, media volume 40%.", False),
    ("percent", "settings.toggle/0", "Do not disturb is on, light theme is back, brightness set to 70%.", False),
    ("percent", "settings.toggle/0", "DND is on, you're on the light theme and brightness is at 80%.", True),
    ("percent", "weather.rain_alarm/0", "Rain is forecast (76%): alarm moved to 06:45.", False),
    # a spoken time is no count ("half past six alarm"); "800 m" is a distance, not a duration
    ("count", "clock.delete_alarm/0", "Deleted the half past six alarm; the quarter past seven one is on again.", True),
    ("duration", "maps.nearest_text/0", "Texted Dragica: Riverside Pharmacy, 28 Harbour Road - 800 m from here.", True),
    # date: "today is" is the clock's date, whatever record the sentence also names
    ("date", "mail.reply/7", "Replied. By the way, today is Saturday, 21 November.", True),
    ("date", "mail.reply/7", "Replied. By the way, today is Saturday, 14 November.", False),
    # status: a thing told as done must be one the episode did; a state, the record's
    ("status", "wallet.pay_bill/0", "Paid your Electricity November bill just now.", True),
    # a permission told as revoked where no revoke succeeded (the tiny planner's "Revoked." after a refused call)
    ("status", "settings.revoke_permission/0", "Revoked the Phone app's permission to make phone calls.", True),
    (
        "status",
        "fields.dnd_schedule/0",
        "Set up your weeknight schedule and revoked the Phone app's call access.",
        False,
    ),
    ("status", "wallet.pay_bill/0", "Scheduled your Electricity November bill.", False),  # it was paid, not scheduled
    ("status", "calendar.move_event/0", "Moved it to Tuesday 10 November at 17:30 and told Stanley.", True),
    ("status", "calendar.move_event/0", "I cancelled the parent-teacher meeting and told Stanley.", False),
    (
        "status",
        "calendar.move_event/0",
        "Moved it to Tuesday 10 November at 17:30 and e-mailed Stanley.",
        False,
    ),  # texted
    ("status", "calendar.move_event/0", "Moved it; should I cancel the old one?", True),  # a question tells nothing
    ("status", "restaurants.book_table/0", "Booked Golden Dragon at 20:30 and texted Haruka.", True),
    ("status", "restaurants.book_table/0", "Booked, but I haven't paid the deposit.", True),  # negated
    # a state told of what the planner looked at: that record's status, not another's
    ("status", "delivery.track_and_tell/0", "It arrives at 10:55; Rhonda knows.", True),
    ("status", "delivery.track_and_tell/0", "It was delivered at 10:55; Rhonda knows.", False),  # on its way
    ("status", "wallet.split_dinner/0", "Requested 43 USD from each of 3 people; they've all paid.", False),
    ("status", "shop.buy_item/0", "Ordered the earbuds; they've already been delivered.", False),
    # count: a party's size is the booking's; a count after an act, what the episode did
    ("count", "restaurants.book_table/0", "Booked a table for two at Golden Dragon at 20:30.", True),
    (
        "count",
        "restaurants.book_table/0",
        "Booked a table for four at Golden Dragon at 20:30.",
        False,
    ),  # booked for two
    ("count", "restaurants.book_table/0", "Booked Golden Dragon for 4 guests at 20:30.", False),
    ("count", "travel.book_hotel/0", "Booked Station Hotel for four nights.", True),
    ("count", "travel.book_hotel/0", "Booked Station Hotel for 3 nights.", False),
    ("count", "cross.late_to_meeting/0", "Texted all 3 people.", True),
    ("count", "cross.late_to_meeting/0", "Texted 4 people.", False),
    ("count", "cross.late_to_meeting/0", "Texted 3 people; the meeting is at 12:00 in 1 room.", True),  # a world count
    # person: a contact by their own full name; someone told is someone the episode addressed
    ("person", "calendar.move_event/0", "Moved it to Tuesday 10 November at 17:30 and told Stanley Brookes.", True),
    ("person", "calendar.move_event/0", "Moved it to Tuesday 10 November at 17:30 and told Stanley Potter.", False),
    (
        "person",
        "memory.intent_time/0",
        "Your 11:30 reminder came up: I texted Sandra.",
        False,
    ),  # the text went elsewhere
    ("person", "wallet.split_dinner/0", "Requested 43 USD each from Charles, Douglas and Steven.", True),  # via payees
    ("person", "wallet.split_dinner/0", "Requested 43 USD each from Charles, Douglas and Anna.", False),
    # duration: a stated duration, one record's span, between subject times; from now, the clock's
    (
        "duration",
        "travel.train_tell_arrival/0",
        "Booked SR 766 at 11:30, arriving 16:05 after a 4 h 35 min ride.",
        True,
    ),
    ("duration", "travel.train_tell_arrival/0", "Booked SR 766 at 11:30, arriving 16:05 after about 4.5 hours.", True),
    ("duration", "travel.train_tell_arrival/0", "Booked SR 766 at 11:30, arriving 16:05 after a 3-hour ride.", False),
    ("duration", "clock.what_time/0", "Sao Paulo: 6:00 AM; Dubai: 1:00 PM - Dubai is 7 hours ahead.", True),
    ("duration", "clock.what_time/0", "Sao Paulo: 6:00 AM; Dubai: 1:00 PM - Dubai is 6 hours ahead.", False),
    # from now: the clock to the time told (10:30 to 10:55), not another span of the record
    ("duration", "delivery.track_and_tell/0", "It arrives in about 25 mins, at 10:55; Rhonda knows.", True),
    ("duration", "delivery.track_and_tell/0", "It arrives in about 35 mins, at 10:55; Rhonda knows.", False),
    (
        "duration",
        "music.podcast_catch_up/0",
        "Subscribed, downloaded 'Bridges' (54 min), marked 'Market days' played.",
        True,
    ),
    # a time told of a record named is that record's: 10:40 is the train's arrival, not the flight's
    ("time", "travel_subagent.train_or_flight/0", "Booked the flight AR 335 - it lands in Boston at 10:40.", False),
    ("time", "travel_subagent.train_or_flight/0", "Booked the flight AR 335 - it lands in Boston at 10:30.", True),
    # an act told of a record is of the record the act addressed (the charger's line went, the pan's stayed)
    ("status", "shop.fix_cart/0", "Two cotton t-shirts now, and I took the cast-iron pan out.", False),
    ("status", "shop.fix_cart/0", "Made it two cotton t-shirts and removed the cast-iron pan.", False),
    ("status", "shop.fix_cart/0", "Two cotton t-shirts now, and I took the phone charger out.", True),
    ("status", "shop.fix_cart/0", "Two cotton t-shirts; removed the phone charger, the cast-iron pan stays.", True),
    # "sent a text message" is a text, not the e-mail sent
    (
        "status",
        "contacts.update_email/0",
        "Updated Paula's contact with paula.evans@proton.me and sent a test text message to her phone.",
        False,
    ),
    (
        "status",
        "contacts.update_email/0",
        "Updated Paula's e-mail to paula.evans@proton.me and sent a test email.",
        True,
    ),
    # "have both paid" is a state the requests do not hold (they are pending)
    ("status", "memory.split_usual/0", "Naoto and Shota have both paid their 5,700 JPY share.", False),
    ("status", "memory.split_usual/0", "Requests sent; Naoto and Shota have both been asked for 5,700 JPY.", True),
    # a bill paid now is not "scheduled"
    (
        "status",
        "wallet.pay_bill/0",
        "Your Electricity November bill of 134.35 AUD is scheduled to be paid on its due date, 16 November.",
        False,
    ),
    (
        "status",
        "wallet.pay_bill/0",
        "Your Electricity November bill of 134.35 AUD is paid; it was due 16 November.",
        True,
    ),
    # no tool reports spam
    ("status", "cross.block_spam_caller/0", "Blocked it, deleted its texts and reported it as spam.", False),
    ("status", "cross.block_spam_caller/0", "Blocked it and deleted its texts.", True),
    # a list told as a record's contents is in the record
    (
        "name",
        "subagent.daily_brief/0",
        "Team standup starts at 10:30. On the Hardware store list: sunscreen, plasters, basmati rice and batteries.",
        False,
    ),
    (
        "name",
        "subagent.daily_brief/0",
        "Team standup starts at 10:30. On the Hardware store list: sunscreen, plasters and basmati rice.",
        True,
    ),
    ("name", "notes.delete_note/0", "Deleted the Packing list note (passport, charger, headphones).", False),
    ("name", "notes.delete_note/0", "Deleted the Packing list note (passport, charger, socks).", True),
    # a price spoken as two numbers is units and cents (49.99 EUR)
    ("money", "shop.buy_item/0", "I ordered the wireless earbuds - forty-nine ninety-nine euros - for home.", True),
    ("money", "shop.buy_item/0", "I ordered the wireless earbuds - forty-nine nineteen euros - for home.", False),
    # "on the 12th" after a month named in the sentence is of that month
    (
        "date",
        "subagent.birthday_note/0",
        "Two contacts have September birthdays: your dad Kenichi Takahashi on the 12th and Ryohei Kimura on the 27th.",
        True,
    ),
    (
        "date",
        "subagent.birthday_note/0",
        "Two contacts have September birthdays: your dad Kenichi Takahashi on the 13th and Ryohei Kimura on the 27th.",
        False,
    ),
    # the days of a schedule, as a range or a set
    (
        "date",
        "fields.dnd_schedule/0",
        'Done - a "Weeknights" schedule turns DND on at 22:00 and off at 07:00, Mon-Fri.',
        True,
    ),
    ("date", "fields.dnd_schedule/0", "Done - DND goes on at 22:00 and off at 07:00, Mon-Sun.", False),
    (
        "date",
        "fields.dnd_schedule/0",
        "Do not disturb will turn on every night of the week from 22:00 to 07:00.",
        False,
    ),
    ("date", "fields.dnd_schedule/0", "Do not disturb will turn on every weeknight from 22:00 to 07:00.", True),
    # the people an act was told to end at the sentence (a quote's closing mark), a dash or a clause
    (
        "person",
        "memory.intent_time/0",
        "Your 11:30 reminder fired, so I texted Mary Gill: \u201cDinner is at 8 tonight, see you there.\u201d "
        "The next one is at 4:30 PM \u2014 texting Sandra about the cake.",
        True,
    ),
    (
        "person",
        "memory.split_usual/0",
        "Sent payment requests for \u00a55,700 each to Naoto Tanaka and Shota Ishikawa - your usual crowd now "
        "that Hanako has moved away.",
        True,
    ),
    ("person", "memory.split_usual/0", "Sent payment requests for \u00a55,700 each to Naoto and Hanako.", False),
    # a request's payee is addressed through the request's payee id
    (
        "person",
        "wallet.cancel_request/0",
        "Cancelled (Concert tickets, 24 GBP, requested from Francesca on 23 Nov).",
        True,
    ),
    # a name holding "budget" is no budget: the time in brackets after it is told, and checked
    ("time", "cross.email_attendees/0", "Emailed the agenda for Budget review (15:00, Room 1.10).", False),
    ("time", "cross.email_attendees/0", "Emailed the agenda for Budget review (14:00, Room 1.10).", True),
    # a numbered room told anywhere, and a place told after a day, is where the record named is
    ("place", "cross.email_attendees/0", "Emailed the agenda for Budget review (Thursday, 14:00, Room 1.01).", False),
    (
        "place",
        "fields.event_reminders/0",
        "Lunch with Anka on Thursday at Cafe Roma now has reminders 30 and 5 min before.",
        False,
    ),
    (
        "place",
        "fields.event_reminders/0",
        "Lunch with Anka on Thursday at Cafe Luna now has reminders 30 and 5 min before.",
        True,
    ),
    # "both" told of an act done to one record by one call
    ("status", "phone.delete_call_entry/0", "Deleted both of your calls with Bastian from the log.", False),
    ("status", "phone.delete_call_entry/0", "Deleted the call to Bastian from the log.", True),
    # a total told "for the whole trip" is the sum of what was booked
    (
        "money",
        "travel_subagent.two_city_hotels/0",
        "Booked Riverside Hotel in Kyoto (\u00a512,750) and The Linden in Osaka (\u00a555,500) - \u00a565,250 for the whole trip.",
        False,
    ),
    (
        "money",
        "travel_subagent.two_city_hotels/0",
        "Booked Riverside Hotel in Kyoto (\u00a512,750) and The Linden in Osaka (\u00a555,500) - \u00a568,250 for the whole trip.",
        True,
    ),
    # a field told with its value is the value the episode set (the return's reason)
    ("name", "skills.return_item/0", "Return confirmed - I gave the reason as 'damaged'. Pickup Saturday at 9.", False),
    ("name", "skills.return_item/0", "All set - going back (reason: changed my mind). Pickup Saturday at 9.", True),
    # what a payment was for, told after its amount, is the note it carried
    ("name", "wallet.pay_back/0", "Paid Clive Morrison back \u00a318 for the pizza.", False),
    ("name", "wallet.pay_back/0", "Paid Clive Morrison back \u00a318 for the groceries.", True),
    # "last night" is yesterday (the dinner is tonight) - in the answer here
    ("date", "memory.split_usual/0", "Requested 5,700 JPY each for Luigi's dinner last night.", False),
    ("date", "memory.split_usual/0", "Requested 5,700 JPY each for Luigi's dinner tonight.", True),
    # a count told of a named record's contents is of its last version (one of 4 songs was removed)
    (
        "count",
        "music.reorder_playlist/0",
        "Last Tram is first, Paper Moon is out, and Morning run still has 4 songs.",
        False,
    ),
    (
        "count",
        "music.reorder_playlist/0",
        "Last Tram is first, Paper Moon is out, and Morning run now has 3 songs.",
        True,
    ),
    # ... also where its contents are records of their own that name it (a checklist's 4 items)
    (
        "count",
        "checklists.convert/0",
        "Converted “Groceries” into a checklist with 5 items; bananas are ticked.",
        False,
    ),
    ("count", "checklists.convert/0", "Converted “Groceries” into a checklist with 4 items; bananas are ticked.", True),
    ("count", "checklists.convert/0", "Groceries is now a checklist with 3 open items; bananas are checked off.", True),
    (
        "count",
        "checklists.convert/0",
        "Groceries is now a checklist with 4 open items; bananas are checked off.",
        False,
    ),
    # a count with a name between it and its noun ("3 City Zoo photos"), not a currency or AM/PM
    ("count", "memory.tag_partner/0", "Tagged your partner Sayuri Fujita in all three City Zoo photos.", False),
    ("count", "memory.tag_partner/0", "Tagged your partner Sayuri Fujita in 2 City Zoo photos.", True),
    # a text the episode wrote, told back with one name or letter swapped (it saved "A negative")
    ("name", "memory.save_preference/0", "Saved: your blood type is AB negative.", False),
    ("name", "memory.save_preference/0", "Saved: your blood type is A negative.", True),
    ("name", "memory.save_preference/0", "Saved: you're A negative.", True),
    ("name", "reminders.after_call/0", "Called Martin; then I reminded you to book a table for you and Mark.", False),
    (
        "name",
        "reminders.after_call/0",
        "Called Martin; then I reminded you to reserve a table for you and Martin.",
        True,
    ),
    (  # words moved, not swapped; a weekday is a date's word ("Photos from Riverside Market, 30 October")
        "name",
        "skills.share_photos/0",
        'Shared both Riverside Market photos from Friday 30 October with Kaori Yamada, in a new "Shared with Kaori" album.',
        True,
    ),
    # a street the world holds only at other house numbers (the gym is at 57 Park Avenue)
    ("place", "maps.save_place/0", "Saved Iron Gym (75 Park Avenue, Berlin) to your places as “Gym”.", False),
    ("place", "maps.save_place/0", "Saved Iron Gym (57 Park Ave, Berlin) to your places as “Gym”.", True),
    # a role told of a contact is the contact book's relation or what the user said (Irene is the dentist)
    ("person", "contacts.lookup_number/0", "Irene (your physio) is on +44 7999 030281. I sent it to Rebecca.", False),
    ("person", "contacts.lookup_number/0", "Irene (your dentist) is on +44 7999 030281. I sent it to Rebecca.", True),
    ("person", "memory.tag_partner/0", "Tagged your partner Sayuri Fujita in 2 City Zoo photos.", True),
    ("person", "memory.tag_partner/0", "Tagged your physio Sayuri Fujita in 2 City Zoo photos.", False),
    # a relative day and the date told after it must agree (the 24th's tomorrow is the 25th)
    ("date", "simulated.parcel_eta/0", "It's due tomorrow: Friday 27 November.", False),
    ("date", "simulated.parcel_eta/0", "It's due in three days: Friday 27 November.", True),
    # ... where a bare weekday after it is that day's weekday, they agree (the 14th is a Saturday)
    ("date", "reminders.at_time/0", "Reminder: 21:30 today (Saturday) → take the laundry out of the machine.", True),
    ("date", "reminders.at_time/0", "Reminder: 21:30 today (Friday) → take the laundry out of the machine.", False),
    # a share of an amount only where a share is told: "your 12 GBP request" is no half of 24 GBP
    ("money", "wallet.cancel_request/0", "Cancelled your \u00a312 concert-ticket request to Francesca Webster.", False),
    ("money", "wallet.cancel_request/0", "Cancelled your \u00a324 concert-ticket request to Francesca Webster.", True),
    # the weather told is the forecast read for that day (fog), unless hedged
    (
        "status",
        "weather.text_forecast/0",
        "Texted Ashleigh: tomorrow will be rainy in Amsterdam, high 8.6\u00b0C.",
        False,
    ),
    ("status", "weather.text_forecast/0", "Texted Ashleigh: foggy tomorrow in Amsterdam, high 8.6\u00b0C.", True),
    (
        "status",
        "weather.text_forecast/0",
        "Texted Ashleigh: fog tomorrow in Amsterdam, high 8.6\u00b0C, only a 16% chance of rain.",
        True,
    ),
    # a length in brackets after a record's name is that record's (Bridges runs 65 minutes)
    ("duration", "memory.favorite_podcast/0", "Downloaded 'Bridges' (45 min), the newest City Stories episode.", False),
    ("duration", "memory.favorite_podcast/0", "Downloaded 'Bridges' (65 min), the newest City Stories episode.", True),
    # ... and so is a rough one, in brackets after the clause that names it
    (
        "duration",
        "memory.favorite_podcast/0",
        "Downloaded and playing “Bridges”, the latest City Stories episode (about 45 minutes long).",
        False,
    ),
    (
        "duration",
        "memory.favorite_podcast/0",
        "Playing “Bridges”, the newest City Stories episode (about an hour).",
        True,
    ),
    (
        "duration",
        "subagent.newest_unplayed/0",
        "Downloaded “Market days” from City Stories (38 min) and “Soups for winter” from Kitchen Table.",
        False,
    ),
    (
        "duration",
        "subagent.newest_unplayed/0",
        "Downloaded “Market days” from City Stories (67 min) and “Soups for winter” from Kitchen Table.",
        True,
    ),
    # the phone's clock is no end of a length: the 08:30-09:30 meeting is not 90 minutes from its end to 11:00
    (
        "duration",
        "calendar.create_event/0",
        "Added the 90-minute “Tax advisor” meeting on Sunday at Cafe Luna and let Emily Clarke know.",
        False,
    ),
    (
        "duration",
        "calendar.create_event/0",
        "Added the one-hour “Tax advisor” meeting on Sunday at Cafe Luna and let Emily Clarke know.",
        True,
    ),
]
"""(claim type, task, answer, whether the grounded check passes): status, count, person,
duration, time and list claims, each kind both ways."""


@pytest.mark.parametrize(("kind", "task_id", "answer", "ok"), TOLD_TYPED)
def test_a_status_count_person_or_duration_told_must_be_grounded(kind, task_id, answer, ok):
    crit = _grounded(_answer(task_id, answer))
    assert crit["passed"] is ok, (answer, crit["reason"])
    if not ok:
        assert f"({kind})" in crit["reason"], crit["reason"]


TOLD_STATE = [
    # switch: a setting told on or off is the phone's end state; "light theme" is dark mode off
    ("switch", "settings.toggle/0", "Do not disturb is off, light theme is back, brightness 80%.", False),
    ("switch", "settings.toggle/0", "DND on, dark mode on, brightness 80%.", False),
    ("switch", "settings.toggle/0", "Wi-Fi is off now; DND on; light theme; brightness 80%.", False),
    (
        "switch",
        "settings.toggle/0",
        "Turned on do not disturb, switched back to the light theme, brightness 80%.",
        True,
    ),
    ("switch", "settings.toggle/0", "DND is now enabled; dark mode disabled; brightness at 80 percent.", True),
    (
        "switch",
        "settings.toggle/0",
        "I did not touch Wi-Fi; DND is on and the light theme is back, brightness 80%.",
        True,
    ),
    # a person told of an act must be one the episode acted on or with (a name after the verb)
    ("person", "cross.call_with_permission/0", "Calling Bobby Gibbs.", True),
    ("person", "cross.call_with_permission/0", "Calling Alison Deleon.", False),  # another contact
    ("person", "cross.call_with_permission/0", "Calling Bobby Deleon.", False),  # a surname swapped
    ("person", "cross.call_with_permission/0", "Calling your landlord, Bobby Gibbs.", True),
    ("person", "wallet.pay_back/0", "Paid Clive Morrison back 18 GBP.", True),
    ("person", "wallet.pay_back/0", "Paid Ann Griffin back 18 GBP.", False),
    ("person", "skills.share_contact/0", "Sent Kevin Chan's card to Mohammed Watts.", True),  # the card's name
    ("person", "skills.share_contact/0", "Sent Ruth Cox's contact card to Mohammed Watts.", False),
    ("person", "subagent.cheapest_quote/0", "Accepted Ashlee Ingram's quote.", True),  # the quote read
    ("person", "subagent.cheapest_quote/0", "Accepted Sarah Jordan's quote.", False),
    ("person", "calendar.add_attendee/0", "Added Natalie Taylor to Call with Denis.", True),
    ("person", "calendar.add_attendee/0", "Added Lynn Fowler to Call with Denis.", False),
    ("person", "contacts.delete_contact/1", "Deleted Zoe Holmes and blocked her number.", True),  # a deleted contact
    (
        "person",
        "contacts.delete_contact/1",
        "Blocked and deleted Zoe Stevenson.",
        False,
    ),  # her first name, no such surname
    ("person", "messages.mark_thread_read/5", "Marked 1 message(s) from Karen Zamora as read.", True),
    ("person", "messages.mark_thread_read/5", "Marked 1 message(s) from Jennifer Larsen as read.", False),
    # a count of a kind of thing the episode acted on is the count of those things it acted on
    ("count", "memory.split_usual/9", "Asked 3 people for 38.20 USD each.", True),
    ("count", "memory.split_usual/9", "Asked 4 people for 38.20 USD each.", False),  # 4: another count of the episode
    ("count", "skills.share_photos/12", "Shared both photos with Bryan.", True),
    ("count", "skills.share_photos/12", "Shared 1 photo with Bryan.", False),
    ("count", "skills.split_bill/9", "Split 20518 JPY 3 ways; asked for 6839 JPY each.", True),
    ("count", "skills.split_bill/9", "Split 20518 JPY 4 ways; asked for 6839 JPY each.", False),
    ("count", "subagent.album_of_person/14", 'Created "Best of Maureen" with two photos.', True),
    ("count", "subagent.album_of_person/14", 'Created "Best of Maureen" with 1 photo.', False),
    ("count", "music.playlist_and_play/5", 'Made "Rainy day" with 5 songs; it\'s playing now.', True),
    ("count", "music.playlist_and_play/5", 'Made "Rainy day" with 4 songs; it\'s playing now.', False),
    ("count", "skills.leave_home/4", "Switched off 5 devices and set the heating to 16.", True),
    ("count", "skills.leave_home/4", "Switched off 6 devices; the house is ready.", False),  # 5 off, 1 set
    ("switch", "clock.alarm_off/3", "Switched off the 7:45 am and 1 pm alarms; they're kept.", True),  # no count
    # "today" beside a time the episode set is the day it set it for: an alarm set at 11:15 for
    # 06:25 rings tomorrow; a pickup booked for tomorrow is not today's
    ("date", "clock.wake_up/2", "You'll be woken at 06:25 tomorrow.", True),
    ("date", "clock.wake_up/2", "You'll be woken at 06:25 today.", False),
    ("date", "fields.dnd_until/8", "Do not disturb until 08:00 today.", False),
    ("date", "memory.return_pickup_time/3", "Return confirmed, pickup tomorrow at 09:00.", True),
    ("date", "memory.return_pickup_time/3", "Return confirmed, pickup today at 09:00.", False),
    # a status told in a clause that names "Do not disturb" is told, not denied; moved is an act
    ("status", "fields.dnd_off/6", "Do not disturb is off and School nights is paused.", True),
    ("status", "fields.dnd_off/6", "Do not disturb is off and I deleted School nights.", False),
    ("status", "restaurants.cancel_booking/3", "Cancelled your table at Le Petit Zinc.", True),
    ("status", "restaurants.cancel_booking/3", "Moved your table at Le Petit Zinc to next week.", False),
    ("status", "music.playlist_and_play/5", 'Made "Rainy day" and started it.', True),
    ("status", "music.playlist_and_play/5", 'Made "Rainy day"; I haven\'t started it yet.', False),
    # switches told together: every light of the end state must be in the state told
    ("switch", "skills.leave_home/4", "All the lights are off now.", True),
    ("switch", "skills.leave_home/4", "All the lights are on now.", False),
    ("switch", "subagent.lights_off/4", "All the lights are off now.", False),  # the living room's are on
    # how often a changed record repeats: an alarm's days, a budget's period
    ("period", "clock.set_alarm/2", "Alarm set for 06:35, just once; the 08:00 one is off.", True),
    ("period", "clock.set_alarm/2", "Alarm set for 06:35 every day; the 08:00 one is off.", False),
    ("period", "skills.wake_routine/0", "Set: 07:55 with a backup at 08:05, every day.", True),
    ("period", "skills.wake_routine/0", "Set: 07:55 with a backup at 08:05, weekdays only.", False),
    ("period", "budget.set_and_check/8", "Transport budget: 110.00 EUR a week; 14.71 EUR left this week.", True),
    ("period", "budget.set_and_check/8", "Transport budget: 110.00 EUR a month; 14.71 EUR left this week.", False),
    # a booking's time is what was booked (a field named "time" in the future is no stamp)
    ("time", "restaurants.book_table/3", "Booked Spice Route for Thursday at 7 pm, code RS12-11191900.", True),
    ("time", "restaurants.book_table/3", "Booked Spice Route at 19:30, code RS12-11191900.", False),
    # an amount told of the planner's act is one it worked with, not its sum with one it read
    ("money", "wallet.pay_back/9", "Sent 18.75 AUD to Michael Carter.", True),
    ("money", "wallet.pay_back/9", "Sent 19.75 AUD to Michael Carter.", False),  # 18.75 + a 1.00 it read
    # an alarm by its time: deleted is not "off"; one turned on that was on already was not turned on
    ("switch", "clock.delete_alarm/0", "Turned off the 6:30 alarm and switched the 7:15 one on.", False),
    ("switch", "clock.delete_alarm/0", "Deleted the 6:30 alarm and turned the 7:00 alarm on.", False),
    ("switch", "clock.delete_alarm/0", "Deleted the 6:30 alarm; the 7:15 alarm is still off.", False),
    ("switch", "clock.delete_alarm/0", "Deleted the 6:30 alarm; the 7:15 one is still off.", False),  # "one": an alarm
    ("switch", "clock.delete_alarm/0", "Your 6:30 AM alarm is gone and the 7:15 AM one is back on.", True),
    ("switch", "clock.delete_alarm/0", "Deleted the 6:30 alarm and turned the 7:15 alarm back on.", True),
    (
        "switch",
        "clock.delete_alarm/0",
        "Deleted the 6:30 alarm and switched on the 7:15 alarm; the 7:00 one is still on.",
        True,
    ),
    # a device by its name
    ("switch", "home.evening/0", "Set the lights to 20%, the thermostat to 70 and turned the TV off.", False),
    ("switch", "home.evening/0", "Set the lights to 20% and the thermostat to 70; the TV is on.", True),
    # person by relation: "texted your brother" when the episode texted dad
    (
        "person",
        "clock.start_timer/0",
        "Started a 45-minute Tea timer and texted your brother that dinner is ready.",
        False,
    ),
    ("person", "clock.start_timer/0", "Timer started (45 min, Tea) and I texted your dad that dinner is ready.", True),
    # a count after an act verb, of any things: records changed alike (2 lights dimmed, 1 thermostat)
    ("count", "home.evening/0", "Set all three living room lights to 20%.", False),
    ("count", "home.evening/0", "Set the 2 living room lights to 20% and the thermostat to 70.", True),
    ("count", "memory.shop_my_size/0", "Ordered two cotton t-shirts in size L.", False),
    ("count", "memory.shop_my_size/0", "Ordered one cotton t-shirt in size L.", True),
    ("count", "cross.block_spam_caller/0", "Blocked +4917717106809 and deleted its 3 texts.", False),
    ("count", "notes.create_note/0", "Note created with three films; Osamu Shimizu has the list.", True),
    # a spoken time or an amount in words is no count of things
    (
        "count",
        "clock.delete_alarm/0",
        "Deleted the half past six alarm; the quarter past seven alarm is on again.",
        True,
    ),
    (
        "count",
        "wallet.pay_bill/0",
        "All done: electricity paid, one hundred thirty-four dollars and thirty-five cents.",
        True,
    ),
    # someone else's act is no act of the episode ("Marlene sent yesterday"); a weekday range is days
    ("date", "messages.delete_message/0", "Removed the text Marlene sent yesterday afternoon.", True),
    ("date", "fields.dnd_schedule/0", "Done - Do Not Disturb now runs Monday to Friday from 10 PM to 7 AM.", True),
    # a relation told beside a name: that contact's, by the contact book or the user's words
    ("person", "calendar.add_attendee/0", "Invited your boss, Denis Naylor, to Call with Denis.", False),
    ("person", "messages.forward/0", "Forwarded it to your coach, Michelle Smith.", False),
    ("person", "messages.forward/0", "Forwarded it to your coach, Ashley Burton.", True),
    ("person", "memory.text_relation/0", 'Texted your sister Doreen: "Don\'t forget the concert tickets".', True),
    # a name told of an act must be what the act was done to
    ("name", "memory.usual_list/0", 'Added "buy oat milk" to Groceries.', False),
    ("name", "memory.usual_list/0", 'Added "buy oat milk" to Family shop.', True),
    ("name", "memory.usual_list/0", "Put it on Family shop (the Groceries list isn't used any more).", True),
    ("name", "messages.forward/0", 'Forwarded "See you at 8" to Ashley Burton.', False),
    ("name", "messages.forward/0", 'Forwarded "See you at 7" to Ashley Burton.', True),
    ("name", "checklists.tick_off/0", "Ticked off butter and oat milk.", False),
    ("name", "checklists.tick_off/0", "Ticked off butter and bananas on your Groceries checklist.", True),
    ("name", "notes.delete_note/0", 'Deleted "Shopping list".', False),
    ("name", "notes.delete_note/0", 'Deleted your "Packing list" note (passport, charger, socks).', True),
    # status: archived is not deleted, an order placed needs an order, "as paid" needs a payment
    ("status", "messages.delete_message/0", "Archived Marlene's latest message.", False),
    ("status", "mail.archive/0", "Archived it and marked it as read.", False),
    ("status", "mail.archive/0", "Archived it.", True),
    ("status", "wallet.cancel_request/0", "Marked Francesca's concert tickets request as paid.", False),
    ("status", "shop.fix_cart/0", "Made it two t-shirts, removed the charger and placed the order.", False),
    # told as not done although done; "nothing is pending" denies nothing done
    ("status", "home.make_scene/0", '"Movie night" is saved; I haven\'t run it yet.', False),
    ("status", "music.playlist_and_play/0", 'Created "Road trip"; it\'s not playing yet.', False),
    ("status", "shop.return_from_mail/0", "Return started, but the pickup isn't booked yet.", False),
    ("status", "music.podcast_catch_up/0", "Subscribed, downloaded Bridges; Market days is still unplayed.", False),
    ("status", "todo.tick_off_and_clear/0", "Marked it done and cleared the completed ones; nothing is pending.", True),
    ("status", "subagent.meeting_from_availability/0", "Scheduled for one o'clock on Sunday; all three invited.", True),
    # where a change started is the record as it was ("from 19"), told nowhere else
    ("temperature", "memory.heating_preference/0", "Raised the thermostat from 19 to 20.5 °C.", True),
    ("temperature", "memory.heating_preference/0", "Raised the thermostat from 18 to 20.5 °C.", False),
    ("temperature", "memory.heating_preference/0", "Set it to 19 °C.", False),
    # a reminder goes off at the event's start less its minutes; a time listed after one set is set too
    ("time", "fields.event_reminders/0", "You'll get reminders at 12:00 and 12:25 before Lunch with Anka.", True),
    ("time", "fields.event_reminders/0", "You'll be reminded at 12:00 and 12:35.", False),
    ("time", "fields.event_reminders/0", "You'll be reminded at 11:55 and 12:25.", False),
    (
        "date",
        "fields.reminder_change/1",
        "Call with Karen now has one reminder, 24 hours before (Friday 27 Nov).",
        True,
    ),
    (
        "date",
        "fields.reminder_change/1",
        "Call with Karen now has one reminder, 24 hours before (Thursday 26 Nov).",
        False,
    ),
    # "in 4 days" of an offer delivered within 4 days is a span; of a wrong span a false day
    (
        "date",
        "subagent.best_offer_reply/0",
        "Marc Bailey's offer: $610, delivery in 4 days. I replied accepting it.",
        True,
    ),
    (
        "date",
        "subagent.best_offer_reply/0",
        "Marc Bailey's offer: $610, delivery in 5 days. I replied accepting it.",
        False,
    ),
    # a gap told "before" another moment may be to a time read; a ride's length may not
    (
        "duration",
        "travel_subagent.train_or_flight/0",
        "Booked AR 335: it lands at 10:30, ten minutes before the earliest train (10:40).",
        True,
    ),
    (
        "duration",
        "travel_subagent.train_or_flight/0",
        "Booked AR 335: it lands at 10:30, 25 minutes before the train.",
        False,
    ),
    # "two September birthdays" counts birthdays; it is no date
    ("count", "subagent.birthday_note/0", "There are two September birthdays; both are in the note.", True),
    ("date", "subagent.birthday_note/0", "The birthdays are on 2 September; both are in the note.", False),
    # a clause naming a record in full is about it, not about one that shares a word of its name
    ("money", "wallet.pay_bill/2", "Paid Phone November, 49.96 EUR.", False),
    ("money", "wallet.pay_bill/2", "Paid Phone November, 42.48 EUR.", True),
    # "playing" tells an act, and what follows "Ordered your usual:" is what was ordered
    ("name", "memory.favorite_podcast/1", 'Playing "Breakfast ideas" from Kitchen Table.', False),
    ("name", "memory.favorite_podcast/1", 'Playing "Soups for winter" from Kitchen Table.', True),
    ("name", "skills.reorder_usual/1", "Ordered your usual: 2 x Palak Paneer from Curry House.", False),
    ("name", "skills.reorder_usual/1", "Ordered your usual: 2 x Lentil Soup from Green Bowl.", True),
    ("name", "skills.reorder_usual/1", "Then ordered your usual: 2 x Palak Paneer from Curry House.", False),
    # someone else's act names what they wrote, not what the episode did
    (
        "name",
        "subagent.collect_debts/0",
        'Nicole wrote "Sorry, forgot: I owe you 18 AUD for the cinema", so she got a request for 18 AUD.',
        True,
    ),
    # a code told must be one the world holds, and not one the episode's change replaced
    ("code", "travel.book_hotel/2", "Booked Parkside Suites; code 5AGL4N.", False),
    ("code", "travel.book_hotel/2", "Booked Parkside Suites; code 5AGLN4.", True),
    ("code", "restaurants.move_booking/2", "Moved to 20:00; your code is RS8-11111830.", False),
    ("code", "restaurants.move_booking/2", "Moved to 20:00; your code is RS8-11112000.", True),
    # a party told after "booked X for", a hyphenated count of nights
    ("count", "restaurants.book_table/2", "Booked El Patio for six at 19:30, code RS9-11281930.", False),
    ("count", "restaurants.book_table/2", "Booked El Patio for four at 19:30, code RS9-11281930.", True),
    ("count", "restaurants.move_booking/2", "Moved the table for four to 20:00.", False),
    # money sent to people is a payment; a request is none
    ("status", "wallet.split_dinner/2", "Sent Bert and Dino 44.26 EUR each.", False),
    ("status", "wallet.split_dinner/2", "Sent Bert and Dino requests for 44.26 EUR each.", True),
    ("count", "travel.cancel_refund/2", "Cancelled the 3-night stay at Hotel Aurora; refund 240 USD.", False),
    ("count", "travel.cancel_refund/2", "Cancelled the 4-night stay at Hotel Aurora; refund 240 USD.", True),
    # "today's" of a record with a day is that record's day, not the clock's
    ("date", "budget.fix_expense/1", "Today's FreshMart expense is now filed under groceries.", False),
    ("date", "budget.fix_expense/1", "Yesterday's FreshMart expense is now filed under groceries.", True),
    # one record read in several results (the product, its cart line, its order line) is one
    # amount in a total, and one amount with and without its currency is not two to add
    ("money", "shop.buy_item/4", "Ordered the hiking boots in size 43, 38700 JPY in total.", False),
    ("money", "shop.buy_item/4", "Ordered the hiking boots in size 43, 19350 JPY in total.", True),
    # no sum with an amount of the fixtures the planner never read
    ("money", "simulated.food_sign_in/4", "Signed in and ordered; the total is 1960.0 JPY.", False),
    ("money", "simulated.food_sign_in/4", "Signed in and ordered; the total is 1950 JPY.", True),
    # a balance as it was before the payment, told as it is now
    ("money", "memory.pay_rent/1", "Paid 990 EUR to Frank Hornig; your balance is now 2498.57 EUR.", False),
    ("money", "wallet.pay_back/1", "Sent 6420 JPY to Kenichi Goto. Balance: 156134 JPY.", False),
    ("money", "memory.pay_rent/1", "Paid 990 EUR to Frank Hornig; your balance is now 1508.57 EUR.", True),
    ("money", "wallet.pay_back/1", "Sent 6420 JPY to Kenichi Goto; you had 156134 JPY, now 149714 JPY.", True),
    # the week, month or year the user and the calls speak of
    ("period", "budget.spending_answer/1", "19.74 USD last month.", False),
    ("period", "budget.spending_answer/1", "You spent $19.74 on groceries this week.", False),
    ("period", "budget.spending_answer/1", "So far this month you have spent $19.74 on groceries.", True),
    # alarms listed by their times share what is told of them; a state joined by "but"
    ("switch", "clock.alarm_off/1", "The 07:00 and 21:30 alarms are on.", False),
    ("switch", "clock.alarm_off/1", "Your 7 am, 9:30 pm alarms are still on.", False),
    ("switch", "clock.alarm_off/1", "The 7:00 AM and 9:30 PM alarms are now off.", True),
    ("switch", "clock.set_alarm/1", "Alarm set for 06:20 but switched off; the 06:30 one is off.", False),
    ("switch", "clock.set_alarm/1", "Alarm set for 06:20 and switched on; the 06:30 one is off.", True),
    # a favourite told as not made yet, when the episode made it one
    ("status", "contacts.add_contact/1", "Saved Hideki Kato, though he is not in your favorites yet.", False),
    ("status", "contacts.add_contact/1", "Saved Hideki Kato and starred him.", True),
    # an amount told as the total of the planner's order is the order's total
    ("money", "delivery.order_dish/1", "Ordered two Bun Cha from Saigon Kitchen: 3900 JPY in total.", False),
    (
        "money",
        "delivery.order_dish/1",
        "Ordered two Bun Cha from Saigon Kitchen: 3675 JPY in total, fee included.",
        True,
    ),
    # a currency the world holds no amount in and the user never named
    ("money", "subagent.cheaper_app/14", "Ordered on the food app; it came to 24.0 USD.", False),
    ("money", "subagent.cheaper_app/14", "Ordered on the food app; it came to £24.", True),
    ("money", "subagent.cheaper_app/1", "The Tiramisu came to €6.50 with the fee.", True),
    # the address a contact had before the change, told as the one it has
    ("email", "contacts.update_email/1", "Norbert's email is now norbert.geisler@yahoo.de; I sent a test.", False),
    (
        "email",
        "contacts.update_email/1",
        "Changed Norbert's email from norbert.geisler@yahoo.de to norbert.geisler@proton.me; I sent a test.",
        True,
    ),
    # the people a state the act left are told of ("... are now favorites") are those acted on
    ("person", "contacts.favorite/1", "Marian Meister and Canan Lehmann are now favorites.", False),
    ("person", "contacts.favorite/1", "Marian Meister and Cristina Pohl are now favorites.", True),
    # a count of what was noted or ordered, whatever the noun
    ("count", "subagent.birthday_note/1", "Noted 4 birthdays.", False),
    ("count", "subagent.birthday_note/1", "Noted 3 birthdays in the note.", True),
    ("count", "delivery.order_dish/1", "Ordered 3 of them from Saigon Kitchen.", False),
    ("count", "delivery.order_dish/1", "Ordered 2 of them from Saigon Kitchen.", True),
    # a record's day told relative to now ("from today", "today's") is the day of that record
    ("date", "budget.fix_expense/10", "Fixed the GreenCross Pharmacy expense from today.", False),
    ("date", "budget.fix_expense/10", "Fixed today's GreenCross Pharmacy expense.", False),
    ("date", "budget.fix_expense/10", "Fixed the GreenCross Pharmacy expense from yesterday.", True),
    # what was cancelled is told as it was: the table's own time, not the restaurant's hours
    ("time", "restaurants.cancel_booking/1", "Cancelled your 19:00 table at Trattoria Sole.", False),
    ("time", "restaurants.cancel_booking/1", "Cancelled your 18:30 table at Trattoria Sole.", True),
    # a time told beside a word only one changed record's label has is that record's time
    (
        "time",
        "skills.wake_routine/1",
        "Wake-up routine set: 06:25 with a backup at 06:45, Tuesdays and Thursdays.",
        False,
    ),
    (
        "time",
        "skills.wake_routine/1",
        "Wake-up routine set: 06:25 with a backup at 6:35 am, Tuesdays and Thursdays.",
        True,
    ),
    # a value the user gave without a unit grounds no other unit than the one the world holds it in
    ("temperature", "memory.heating_preference/1", "Thermostat set to 20.5°F.", False),
    ("temperature", "memory.heating_preference/1", "Thermostat set to 20.5 °C, as you like it.", True),
    ("temperature", "memory.heating_preference/1", "Thermostat set to 20.5 degrees.", True),
    # a time told as due or as a reminder is the due or reminder time the episode set
    ("time", "todo.add_due_item/9", 'Added "get olive oil", due at 13:00.', False),
    ("time", "todo.add_due_item/9", "Added; I'll remind you at 12:00.", False),
    (
        "time",
        "todo.add_due_item/9",
        "Added, due Thursday 26 November at 12 pm, with a reminder an hour before at 11 am.",
        True,
    ),
    # the person or amount an act is told of is what a call of that act was about, not another's
    ("status", "wallet.settle_requests/1", "Paid Arnold Hellwig and declined Etta's request.", False),
    ("status", "wallet.settle_requests/1", "Paid Arnold and declined Etta.", False),
    ("status", "wallet.settle_requests/1", "Paid 26 EUR to Etta; declined the other one.", False),
    ("status", "wallet.settle_requests/1", "Paid Etta Cichorius 14 EUR and declined Arnold's 26 EUR request.", True),
    ("status", "wallet.split_dinner/1", "Requested 70.13 AUD from each of 2 people.", False),
    ("status", "wallet.split_dinner/1", "Requested 46.75 AUD from each of 2 people.", True),
    # an alarm by its label: deleted is not switched off
    ("switch", "clock.delete_alarm/5", "Switched off the Gym alarm and turned the 6:30 alarm on.", False),
    ("switch", "clock.delete_alarm/5", "Deleted the Gym alarm and turned the 6:30 alarm on.", True),
    # a code told bare: the one the planner wrote, not the old one or one a slip away
    ("code", "memory.updated_fact/9", "Sent Molly the gate code of our building (JX2-72).", False),
    ("code", "memory.updated_fact/9", "Sent Molly the gate code of our building (RX4-28).", False),
    ("code", "memory.updated_fact/9", "Sent Molly the new gate code RX4-29 (it used to be JX2-72).", True),
    # a code of digits told after its name is one the world holds (memory says 4716)
    ("code", "memory.updated_fact/6", "Sent Hideki the new gate code, 4617.", False),
    ("code", "memory.updated_fact/6", "Sent Hideki the gate code: 4761", False),
    ("code", "memory.updated_fact/6", "Texted Hideki the building's gate code (4716).", True),
    ("code", "memory.updated_fact/6", "Gate code 4716 is on its way to Hideki; PIN-free entry.", True),
    # a size told is the size the episode ordered; one the shop lists may be told as such
    ("size", "shop.buy_item/8", "Ordered the rain jacket in size M.", False),
    ("size", "memory.shop_my_size/1", "Ordered the denim jeans in size 30.", False),
    ("size", "memory.shop_my_size/1", "Ordered the denim jeans in your size, 28.", True),
    # a day told as paid or due is the payment or due day of what the episode changed
    ("date", "wallet.pay_bill/3", "Electricity November will be paid on Tuesday 8 December.", False),
    ("date", "wallet.pay_bill/3", "Scheduled Electricity November for 7 December; it is due 8 December.", True),
    ("date", "wallet.pay_bill/3", "Scheduled it for 7 December; Internet November is also due 8 December.", True),
    # a day told with a forecast's temperature is that forecast's day
    ("date", "weather.text_forecast/1", "Texted Carmen: today in Hamburg it'll rain, high 6.2°C.", False),
    ("date", "weather.text_forecast/1", "Texted Carmen: tomorrow Hamburg gets rain, with a high of 6.2°C.", True),
    # a place told is where the record the sentence (or the request) is about is
    ("place", "cross.sms_event_location/3", "It's at Cafe Luna; I texted Paula.", False),
    ("place", "cross.sms_event_location/3", "The pottery class is at Bright Smile Dental.", False),
    ("place", "cross.sms_event_location/3", "It's at Harbour Hall; I texted Paula.", True),
    ("place", "cross.sms_event_location/3", "Pottery class: Harbour Hall (lunch with Stacey is at Cafe Luna).", True),
    # a time told on your clock or a city's is the one the record set in that city's zone holds there
    ("time", "fields.event_in_zone/2", "Added for 16:30 your time (09:30 in Singapore).", False),
    ("time", "fields.event_in_zone/2", "Added: 09:30 Singapore time.", False),
    ("time", "fields.event_in_zone/2", "Added: 16:30 Singapore time, which is 9:30 am for you.", True),
    # a time told as an arrival is the arrival the episode's order holds, roughly or not
    ("time", "delivery.order_dish/1", "Ordered two Bun Cha from Saigon Kitchen; it arrives around 11:40.", False),
    ("time", "delivery.order_dish/1", "Ordered two Bun Cha from Saigon Kitchen, arriving about 11:00.", True),
    # who a text went to, told in a sentence of its own
    ("person", "calendar.delete_event/0", "Deleted Lunch with Christel. The text went to Tina Conradi.", False),
    ("person", "calendar.delete_event/0", "Deleted Lunch with Christel; the text went to Christel Berger.", True),
    # a flight number one digit off the one the world holds
    ("code", "travel.flight_to_calendar/1", "Booked AR 273, departing 11:20; it's in your calendar.", False),
    ("code", "travel.flight_to_calendar/1", "Booked AR272, departing 11:20; it's in your calendar.", True),
    # a place no record holds, told as where the changed record is; an address a number off
    ("place", "calendar.move_event/1", "Moved Book club to 15:00 and told Julian. It's at Harbour Hall.", False),
    ("place", "calendar.move_event/1", "Moved Book club to 15:00 and told Julian. It's still at Cafe Luna.", True),
    ("place", "maps.nearest_text/1", "Trattoria Roma, at 118 Market Street, Sydney; sent to Nicholas.", False),
    ("place", "maps.nearest_text/1", "Trattoria Roma, at 116 Market Street, Sydney; sent to Nicholas.", True),
    # a total told in a sentence of its own; a line's quantity told with its item
    ("money", "delivery.order_dish/2", "Ordered three Miso Soup from Sushi Yama. The total is 12.50 EUR.", False),
    ("count", "delivery.order_dish/2", "Ordered four Miso Soup from Sushi Yama.", False),
    ("count", "delivery.order_dish/2", "Ordered 3 x Miso Soup from Sushi Yama.", True),
    ("count", "shop.buy_item/1", "Ordered three of the cast-iron pan.", False),
    ("count", "shop.buy_item/1", "Ordered 2 of the cast-iron pan.", True),
    # statuses no call made: waitlisted, muted; "left it unread" after marking it read
    ("status", "travel.book_hotel/1", "Waitlisted for Parkside Suites for 5 nights.", False),
    ("status", "cross.block_spam_caller/1", "Muted and deleted.", False),
    (
        "status",
        "messages.unread_count/1",
        "3 unread, from Gregory Hartman, Kimberly Flores, Melissa Moore; I left them unread.",
        False,
    ),
    (
        "status",
        "messages.unread_count/1",
        "3 unread, from Gregory Hartman, Kimberly Flores, Melissa Moore; all marked read now.",
        True,
    ),
    # a value the changed record held before the change, told as now
    ("percent", "settings.brightness/1", "Brightness is 65%, media volume 25%. Brightness is now 50%.", False),
    ("percent", "settings.brightness/1", "Brightness is 65% (it was 50%), media volume 25%.", True),
    # a high told with the day's low
    ("temperature", "weather.text_forecast/3", "Texted Joshua: tomorrow in Canberra fog, high 7.5°C.", False),
    ("temperature", "weather.text_forecast/3", "Texted Joshua: tomorrow in Canberra fog, high 23°C, low 7.5°C.", True),
    # a label or category told of the change must be the one it set
    ("status", "fields.contact_add_number/1", "Saved +493018157229 as Hinrich's work number.", False),
    ("status", "fields.contact_add_number/1", "Saved +493018157229 as a home number, now the main one.", True),
    ("status", "budget.fix_expense/1", "Fixed: the FreshMart expense is now under dining.", False),
    ("status", "budget.fix_expense/1", "Moved the FreshMart expense from shopping to groceries.", True),
    # how long the record the episode set runs
    ("duration", "calendar.create_event/6", "Added Haircut and told Shohei Yamada. It runs for an hour.", False),
    ("duration", "calendar.create_event/1", "Added Car service and told Yosuke. It lasts an hour.", True),
    # the day of someone else's act is a day of the records read
    ("date", "phone.last_missed_call/2", "Yui Okada (+817090036903) at 16:39. They called this morning.", False),
    ("date", "phone.last_missed_call/1", "An unknown number, +17184465796, called this morning at 08:17.", True),
    # an amount told of a payment is the amount it paid
    ("status", "memory.pay_rent/1", "Paid 970 EUR to Frank Hornig.", False),
    ("status", "memory.pay_rent/1", "Paid 990 EUR to Frank Hornig, your new rent.", True),
    # a forwarded mail's subject is held word for word
    ("name", "mail.reply/3", 'Replied. I replied to "Fwd: Time for your check-up".', False),
    ("name", "mail.reply/3", 'Replied to "Re: Time for your check-up".', True),
    # a contact by title and surname
    ("person", "contacts.delete_contact/2", "Blocked and deleted Mr Cox.", True),
    ("person", "contacts.delete_contact/2", "Blocked and deleted Mr Fowler.", False),
    # an arrival told roughly is still that arrival to the nearest five minutes
    (
        "time",
        "delivery.usual_order/1",
        "Ordered Iced Coffee from Saigon Kitchen. It should arrive around 09:50.",
        False,
    ),
    (
        "time",
        "delivery.usual_order/1",
        "Ordered Iced Coffee from Saigon Kitchen; it should be there around 9:40.",
        True,
    ),
    # a size the shop does not list, where the episode set none
    ("size", "shop.price_check/1", "It costs 74.50 EUR; yes, size 38 is in stock.", False),
    ("size", "shop.price_check/1", "It costs 74.50 EUR; size 39 is in stock, and so is size 40.", True),
    # "That's X" after an act: what the act moved
    ("money", "skills.pay_bill_safely/2", "Phone November: paid for 2026-11-22. That's 45.75 EUR.", False),
    ("money", "skills.pay_bill_safely/2", "Phone November: paid for 2026-11-22. That's 40.75 EUR.", True),
    ("money", "skills.pay_bill_safely/1", "Internet November: scheduled for 2026-11-20. That's 94.25 AUD.", False),
    # a duration told with a way of travel is that way's
    ("duration", "travel_memory.time_to_place/1", "About 13 minutes by car, or 13 minutes by bike.", False),
    ("duration", "travel_memory.time_to_place/1", "About 13 minutes by car (16 minutes by bike).", True),
    # a temperature told with a decimal is not a rounding of another
    ("temperature", "memory.heating_preference/11", "Set the thermostat to 21.5°C, your usual.", False),  # now 22
    ("temperature", "memory.heating_preference/1", "Set the thermostat to 20.5°C, your usual.", True),
    # an amount with thousands separators
    ("status", "wallet.split_dinner/7", "Requested ¥4,518 from each of 3 people.", True),
    ("status", "memory.pay_rent/10", "Paid 111,000 JPY to Tomoya Saito.", False),
    # a warning's severity is the one read; a voicemail told as left is one the phone holds
    ("status", "weather.save_trip_city/4", "Added Los Angeles. There is a severe fog advisory.", False),
    ("status", "weather.save_trip_city/4", "Added Los Angeles. There is a minor fog advisory.", True),
    (
        "status",
        "phone.last_missed_call/3",
        "An unknown number, +61298710195, at 09:57; they left a voicemail too.",
        False,
    ),
    # what a payment was for is what the records acted on say
    ("name", "wallet.pay_back/1", "Sent 6420 JPY to Kenichi Goto. That was for the taxi home.", False),
    ("name", "wallet.pay_back/1", "Sent 6420 JPY to Kenichi Goto. That was for the concert tickets.", True),
    # a time told as an end ("until 09:30") is the end the episode set
    ("time", "fields.dnd_until/1", "Do not disturb is on until 10:00.", False),  # the review's start
    ("time", "fields.dnd_until/1", "Do not disturb is on until half past eleven.", True),
    # an act told of every one of several things it did to one
    ("status", "wallet.settle_requests/1", "Paid both requests.", False),
    ("status", "wallet.settle_requests/1", "Paid one and declined the other; both requests are settled.", True),
    # a weekday range told of a schedule the episode set is the schedule's days
    ("date", "fields.dnd_schedule/4", "Do not disturb will turn on Monday to Thursday from 09:00 to 12:00.", False),
    ("date", "fields.dnd_schedule/4", "Do not disturb will turn on Sun–Thu, 9 am to noon.", True),
    # times said in words, with the part of the day
    ("time", "clock.set_alarm/1", "Alarm set for six-twenty in the evening; the 06:30 one is off.", False),
    ("time", "clock.set_alarm/1", "Alarm set for six-twenty in the morning; the six-thirty one is off.", True),
    # counts said in words
    ("count", "delivery.order_dish/2", "Ordered a dozen Miso Soup from Sushi Yama.", False),
    # the day someone else did something, by a lone weekday
    ("date", "messages.forward/5", "Forwarded it to Timothy Garcia. Mary sent it on Sunday.", True),
    ("date", "messages.forward/5", "Forwarded it to Timothy Garcia. Mary sent it on Saturday.", False),
    # a state that tells the act as not done
    (
        "status",
        "delivery.usual_order/1",
        "Ordered Iced Coffee from Saigon Kitchen. It's sitting in your basket.",
        False,
    ),
    ("status", "checklists.tick_off/1", 'Done. "sunscreen" is still unticked.', False),
    ("status", "checklists.tick_off/1", 'Done: sunscreen and passport ticked, "charger" is unticked again.', True),
    ("status", "contacts.favorite/2", "Done. Anthony is not a favourite now.", False),
    # who got the text, told as a list or as having it
    ("person", "calendar.create_event/1", "Added Car service. Recipients: Yosuke Matsumoto and Miki Aoki.", False),
    ("person", "calendar.create_event/1", "Added Car service. Recipient: Yosuke Matsumoto.", True),
    ("person", "camera.photo_to_contact/1", "Sent. Your landlord has the message now.", False),
    # a record's length told beside its name
    ("duration", "fields.reminder_change/1", "Now it reminds you a day before (Call with Karen: 30 minutes).", False),
    ("duration", "fields.reminder_change/1", "Now it reminds you a day before (Call with Karen: 15 minutes).", True),
    # a conflict denied where the call reported one; a one-off told of a repeating alarm
    ("status", "skills.meeting_invite/8", "Done. No clashes with anything else in your calendar.", False),
    (
        "period",
        "skills.wake_routine/1",
        "Wake-up routine set: 06:25 with a backup at 06:35. It's just for tomorrow.",
        False,
    ),
    # a weekday abbreviated, a day told as today's, a length told as an adjective in words
    ("date", "calendar.move_event/0", "Moved the parent-teacher meeting to Wed and told Stanley.", False),
    ("date", "calendar.move_event/0", "Moved the parent-teacher meeting to Tue. and told Stanley.", True),
    ("date", "clock.set_alarm/0", "Alarm set for 05:00; the 07:15 one is off. Enjoy the rest of your Tuesday!", False),
    ("date", "clock.set_alarm/0", "Alarm set for 05:00; the 07:15 one is off. Happy Tuesday!", False),
    ("date", "clock.set_alarm/0", "Alarm set for 05:00; the 07:15 one is off. Enjoy the rest of your Monday!", True),
    (
        "duration",
        "travel.train_tell_arrival/0",
        "Booked SR 766 at 11:30, arriving 16:05 after a three-hour ride.",
        False,
    ),
    (
        "duration",
        "travel.train_tell_arrival/0",
        "Booked SR 766 at 11:30, arriving 16:05: a three and a half hour trip.",
        False,
    ),
    (
        "duration",
        "travel.train_tell_arrival/0",
        "Booked SR 766 at 11:30, arriving 16:05 after a four-and-a-half-hour ride.",
        True,
    ),
    # an act told by another verb, a state told by a name and a participle, after an opener
    ("status", "wallet.cancel_request/0", "Got it. Declined the request to Francesca Webster.", False),
    ("status", "wallet.cancel_request/0", "Got it. Cancelled the request to Francesca Webster.", True),
    ("status", "home.let_in/0", "No problem! Locked the door and texted Lesley Ahmed.", False),
    ("status", "home.let_in/0", "Door unlocked, and Lesley Ahmed has been texted.", True),
    ("status", "skills.return_item/0", "Got it. Return waitlisted. Have a lovely day!", False),
    ("status", "skills.return_item/0", "Got it. Return booked. Have a lovely day!", True),
    ("status", "skills.pay_bill_safely/0", "Electricity November: paid for Friday 27 November.", False),
    ("status", "skills.pay_bill_safely/0", "Electricity November: scheduled for Friday 27 November.", True),
    ("status", "subagent.pay_chosen_bill/0", "Great news: Scheduled Electricity November (69.76 EUR).", False),
    ("status", "subagent.pay_chosen_bill/0", "Great news: Paid Electricity November (69.76 EUR).", True),
    # a currency by any ISO code, where the world holds amounts in another
    ("money", "memory.pay_rent/0", "Paid 1410 CAD to Rachel Rodriguez.", False),
    ("money", "memory.pay_rent/0", "Paid A$1,410 to Rachel Rodriguez.", True),
    # an amount in brackets after an act is the act's; an order line's quantity is no amount
    ("money", "delivery.order_dish/0", "Ordered a Tiramisu from Pizza Roma (6.50 EUR).", False),
    ("money", "delivery.order_dish/0", "Ordered a Tiramisu from Pizza Roma (5.50 EUR, no delivery fee).", True),
    # a first name alone told of an act; a message told with its sender
    ("person", "memory.tag_partner/0", "Here's what I did: Tagged Asuka.", False),
    ("person", "memory.tag_partner/0", "Here's what I did: Tagged Sayuri.", True),
    ("person", "travel_skills.share_my_eta/0", "Sent Hiroshi your ETA (11:34) and shared your location.", False),
    ("person", "wallet.settle_requests/0", "I paid Sandra's money request for the taxi home, declined Derek's.", False),
    ("person", "wallet.settle_requests/0", "I paid Heather's money request for the taxi home, declined Derek's.", True),
    ("person", "fields.voicemail_callback/0", "Fiona said: Hey, Bernard here. I left the keys at the bakery.", False),
    ("person", "fields.voicemail_callback/0", "Bernard said: Hey, Bernard here. I left the keys at the bakery.", True),
    # read as a chat client shows it: Markdown emphasis is no part of a value
    ("money", "simulated.food_sign_in/0", "Signed in and ordered; the total is **21.5 AUD**.", False),
    ("money", "simulated.food_sign_in/0", "Signed in and ordered; the total is **19.5 AUD**.", True),
    ("status", "skills.pay_bill_safely/0", "Great news: Electricity November: paid for Friday 27 November.", False),
    # a bare number in a record's text ("Nights: 1") is summed with no amount
    (
        "money",
        "travel_subagent.two_city_hotels/0",
        "Booked Riverside Hotel (12751 JPY) and The Linden (55500 JPY).",
        False,
    ),
    (
        "money",
        "travel_subagent.two_city_hotels/0",
        "Booked Riverside Hotel (12750 JPY) and The Linden (55500 JPY).",
        True,
    ),
    # a seat told is the one set; the clock told is the clock; two days told together agree
    ("code", "travel_memory.seat_preference/0", "Checked in: seat 12D.", False),
    ("code", "travel_memory.seat_preference/0", "Checked in: seat 12 C.", True),
    ("time", "cross.text_missed_caller/0", "Texted Edward Montoya. (Finished just now, at 08:04.)", False),
    ("time", "cross.text_missed_caller/0", "Texted Edward Montoya. It's 8:31 now.", True),
    (
        "date",
        "calendar.delete_event/5",
        "I cancelled Budget meeting tomorrow (Tuesday 24 November), told Shawn.",
        False,
    ),
    ("date", "calendar.delete_event/5", "I cancelled Budget meeting today (Tuesday 24 November), told Shawn.", True),
    (
        "time",
        "hybrid.parcel_window_calendar/0",
        "It comes on Thu 19 Nov between **10 a.m.** and noon; it's in your calendar.",
        True,
    ),
    # a range with one end right and the other not; a move told by how far
    ("time", "cross.event_from_email/0", "Added Dinner with Alf from 20:30 to 21:30 at Cafe Luna and replied.", False),
    ("time", "cross.event_from_email/0", "Added Dinner with Alf, 7:30 to 9:30 pm at Cafe Luna, and replied.", True),
    (
        "duration",
        "weather.rain_alarm/0",
        "Rain is forecast (67%), so I moved your alarm 20 minutes earlier, to 06:45.",
        False,
    ),
    (
        "duration",
        "weather.rain_alarm/0",
        "Rain is forecast (67%): alarm moved a quarter of an hour earlier, to 06:45.",
        True,
    ),
    # a total told beside another amount; the end state's total where no call returned it
    ("money", "skills.safe_dinner/9", "Placed it: ¥3,675 total, well over the ¥750 minimum.", True),
    (
        "money",
        "simulated.food_sign_in/7",
        "Logged back in and ordered 3 Dragon Rolls from Sushi Yama — ¥6,075 total.",
        False,
    ),
    (
        "money",
        "delivery.order_dish/7",
        "Ordered 2× Diavola and 1× Margherita from Pizza Roma — €33.50 with delivery.",
        False,
    ),
    (
        "money",
        "shop.fix_cart/7",
        "Removed the phone charger and bumped the yoga mat to 2. Your cart total is now A$298.18.",
        False,
    ),
    (
        "money",
        "shop.fix_cart/7",
        "Removed the phone charger and bumped the yoga mat to 2. Your cart total is now A$268.20.",
        True,
    ),
    (
        "size",
        "shop.fix_cart/7",
        "Cart updated: 2 × Yoga mat and your Hiking boots (size 42); the charger is out.",
        True,
    ),
    ("count", "shop.cancel_order/6", "Cancelled order o_1 (the $64 backpack) and texted Krista Diaz.", True),
    # an arrival told beside the place it comes from; what was switched off told as it was
    (
        "time",
        "delivery.order_dish/7",
        "Your pizzas from Pizza Roma are on the way: two Diavola and one Margherita, ETA 10:30.",
        False,
    ),
    ("time", "clock.alarm_off/7", "Turned off your 7:45 and 8:00 alarms; they're still saved for later.", False),
    ("time", "clock.alarm_off/7", "Turned off your 7:45 AM and 1 PM alarms; they're still saved for later.", True),
    # a place's own address in brackets; a common word that is also an event's place
    (
        "place",
        "maps.leave_for_meeting/10",
        "Leave at 12:01 to get to Trattoria Roma (70 Park Avenue) right at 12:15.",
        True,
    ),
    (
        "place",
        "fields.dnd_until/6",
        "Your phone will stay quiet until 8:45 PM on Monday the 16th, when Yoga class ends.",
        True,
    ),
    # a contact reached on another of their numbers; seats; a surname a slip off; a relation
    ("person", "fields.reach_work_number/11", "All set. Diana Wallis now has your message on her work phone.", True),
    ("phone", "fields.reach_work_number/11", "Done, I texted Diana Wallis on her mobile (+447464602864).", False),
    # whose number a text carried is what was sent, not whom it was sent to
    ("person", "contacts.lookup_number/0", "Texted Irene's number to Rebecca: +447999030281.", True),
    ("person", "contacts.lookup_number/0", "Texted Irene's number to Terry: +447999030281.", False),
    (
        "person",
        "gallery.album_from_outing/6",
        "Album “Lakeside Park 2026” is ready: 3 photos of you and Susan Sharon.",
        False,
    ),
    ("person", "messages.text_contact/7", "Sent it to your neighbor Thomas and your cousin Maria Richards.", False),
    # a record's length told as an adjective of the act; a call's direction
    (
        "duration",
        "memory.usual_booking/7",
        "I texted Taverna Olympia and put a three-hour brunch in your calendar.",
        False,
    ),
    (
        "duration",
        "memory.usual_booking/7",
        "I texted Taverna Olympia and put a two-hour brunch in your calendar.",
        True,
    ),
    ("status", "phone.delete_call_entry/7", "Deleted your outgoing call to Donald on Tue 24 Nov at 7:11 pm.", False),
    ("status", "phone.delete_call_entry/7", "Deleted the incoming call from Donald on Tue 24 Nov at 7:11 pm.", True),
    # a day of the month gone by, an amount's cents in words, a changed record that now says so
    ("date", "budget.fix_expense/6", "All fixed: Cafe Luna on the 7th is now 26.64 euros instead of 46.64.", True),
    ("date", "budget.fix_expense/6", "All fixed: Cafe Luna on the 6th is now 26.64 euros instead of 46.64.", False),
    (
        "count",
        "wallet.settle_requests/6",
        "Aaron's been paid twenty-two pounds fifty for the groceries; Lee's is declined.",
        True,
    ),
    ("status", "skills.archive_note/7", "Done - they are archived now; you'll find them tagged archived.", True),
    # a line of a list is a clause of its own: "no videos" above does not deny the count below
    (
        "count",
        "gallery.album_from_outing/0",
        "Summary:\n- photos from Monday 26 October - no videos\n- Created it with 5 photos",
        False,
    ),
    (
        "count",
        "gallery.album_from_outing/0",
        "Summary:\n- photos from Monday 26 October - no videos\n- Created it with 4 photos",
        True,
    ),
]
"""(claim type, task, answer, whether the grounded check passes): switches, people by relation,
names told of an act, statuses told done or not done, a change's start, reminder moments, spans
and counts, each kind both ways."""


SEATS_TEXTED = [
    ("Hey Kenichi! Booked Paper Tigers for Tuesday, 8:45pm at Cinema Paradiso, seats F5 and F7.", False),
    ("Hey Kenichi! Booked Paper Tigers for Tuesday, 8:45pm at Cinema Paradiso, seats F5 & F6.", True),
]


@pytest.mark.parametrize(("body", "ok"), SEATS_TEXTED)
def test_seats_told_in_a_text_are_the_seats_booked(body, ok):
    crit = _grounded(_text("hybrid.cinema_book_text/7", "messages.send", "body", body))
    assert crit["passed"] is ok, (body, crit["reason"])


NUMBER_OWNERS = [
    ("contacts.lookup_number/0", "messages.send", "Jemma's number is +447999030281", False),
    ("contacts.lookup_number/0", "messages.send", "Irene Jackson: +44 7999 030281", True),
    ("cross.note_contact_number/0", "notes.create", "Erin Robinson: +19297416976", False),
    ("cross.note_contact_number/0", "notes.create", "Eric: +1 929 741 6976", True),
]
"""(task, tool, body, passes): a contact's number told as someone else's, in a text or a note."""


@pytest.mark.parametrize(("task_id", "tool", "body", "ok"), NUMBER_OWNERS)
def test_a_number_is_told_as_its_owners(task_id, tool, body, ok):
    crit = _grounded(_text(task_id, tool, "body", body))
    assert crit["passed"] is ok, (body, crit["reason"])


@pytest.mark.parametrize(("kind", "task_id", "answer", "ok"), TOLD_STATE)
def test_a_state_name_or_relation_told_must_be_the_worlds(kind, task_id, answer, ok):
    crit = _grounded(_answer(task_id, answer))
    assert crit["passed"] is ok, (answer, crit["reason"])
    if not ok:
        assert f"({kind})" in crit["reason"], crit["reason"]


@pytest.mark.parametrize(
    ("task_id", "answer"),
    [
        # "nothing else" is no amount of zero
        ("travel_skills.plan_a_trip/1", "Booked SK 186, Grand Plaza and BW 691. Nothing else needed your attention."),
        # a dollar named by its country is one amount, and the count beside it is no amount
        ("memory.split_usual/8", "Asked 2 people for 42 Australian dollars each."),
        # a low chance told after its weather does not say it will rain
        ("weather.rain_alarm/3", "No rain tomorrow: fog. I left the alarm at 07:00. The chance of rain is only 11%."),
        # an amount in words with its cents
        ("wallet.pay_back/7", "Sent Bridget Peters twelve dollars fifty."),
        ("budget.spending_answer/1", "nineteen dollars seventy-four this month."),
        # what a payment moved, not what a decline did not
        ("wallet.settle_requests/10", "Paid one, declined one. That's fourteen dollars in all."),
        # what someone else said, reported, is no second answer
        ("messages.unread_count/6", "Only one unread text, from John Johnson - he says he'll see you at 7."),
        # another thing's amount told as a comparison is no second answer
        (
            "subagent.pay_chosen_bill/8",
            "Paid Internet November, £32.69 — cheaper than Phone (£38.61) and Electricity (£62.46).",
        ),
        # the request's bound told again beside the answer is no second answer
        (
            "travel.train_tell_arrival/0",
            "I booked the first train leaving after 11:00: SR 766, arriving 16:05. Told Charles.",
        ),
    ],
)
def test_a_right_answer_in_other_words_passes_the_whole_verdict(task_id, answer):
    verdict = _answer(task_id, answer)
    assert verdict["success"], [c["reason"] for c in verdict["criteria"] if not c["passed"]]


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ("My boarding pass: BW 969 London → Edinburgh, seat 16A, departs 09:00.", False),  # the flight is BW 968
        ("My boarding pass: BW 968 London → Edinburgh, seat 16A, departs 09:00.", True),
    ],
)
def test_a_flight_number_the_planner_wrote_grounds_nothing(body, ok):
    crit = _grounded(_text("travel.check_in_forward/1", "mail.send", "body", body))
    assert crit["passed"] is ok, (body, crit["reason"])


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ("I'll be out in twelve minutes", True),  # the user's words, a number written out
        ("I'll be out in around 12 minutes", True),  # a hedge is no content
        ("I'll be out in 12 minutes. I'll pick up the drinks on the way.", False),  # a promise never given
        ("I'll be out in 12 minutes, but I can't make dinner.", False),  # a refusal never given
        ("I'll be out in 12 minutes, I'll call you right away", True),  # a light word of contact
    ],
)
def test_a_text_makes_no_commitment_the_user_did_not_give(body, ok):
    verdict = _text("clock.start_timer/4", "messages.send", "body", body)
    crit = _grounded(verdict)
    assert crit["passed"] is ok, (body, crit["reason"])
    if not ok:
        assert "(commitment)" in crit["reason"], crit["reason"]


def test_a_price_listed_without_currency_is_the_shops_currency():
    verdict = _text("shop.buy_item/0", "user.confirm", "question", "Buy the wireless earbuds for 49.99 USD?")
    assert not verdict["success"]
    assert "49.99 USD" in _grounded(verdict)["reason"]
    assert _text("shop.buy_item/0", "user.confirm", "question", "Buy the wireless earbuds for 49.99 EUR?")["success"]


# Which record a clause is about, where its names are words most records share: the records it
# names by them (showtimes at Kino Central, not the one at Astor Filmpalast), the ones at the place
# it says (the pottery class at Harbour Hall, not the one at Pier 7), and, for a clause that opens
# with a pronoun, the records of the clause before it.
ABOUT = [
    ("simulated.cinema_booking/0", "Booked F10 and F11 for The Last Lighthouse at Kino Central at 19:15.", False),
    ("simulated.cinema_booking/0", "Your Kino Central seats F10 and F11 are for the 19:15 show.", False),
    (
        "simulated.cinema_booking/0",
        "Booked F10 and F11 at Kino Central for 20:45. The earlier Kino Central show was at 17:30.",
        True,
    ),
    ("simulated.cinema_booking/0", "F10 and F11 are yours at 8:45 pm; Astor Filmpalast had a 7:15 pm show.", True),
    ("cross.sms_event_location/0", "Texted Gotthold that the class is at Harbour Hall; it starts at 6 pm.", False),
    ("cross.sms_event_location/0", "Told Gotthold the pottery class at Harbour Hall starts at 6 pm.", False),
    ("cross.sms_event_location/0", "Texted Gotthold that the class is at Harbour Hall; it starts at 7 pm.", True),
    ("cross.sms_event_location/0", "Sent Gotthold the address. The pottery class at Pier 7 starts at 6 pm.", True),
    # a yes/no field that says a status ("locked": true), and the records of one kind changed alike
    (
        "skills.leave_home/0",
        "Switched off 4 lights, the coffee machine and the TV. The front door was already locked.",
        True,
    ),
    ("skills.leave_home/0", "All set:\n- Front door: locked\n- Heating: 18 °C", True),
    ("skills.leave_home/0", "Switched off 5 lights and the TV; heating down to 18 °C.", False),
    ("skills.leave_home/0", "Heating is down to 18 °C; the front door is unlocked.", False),
]
"""(task, answer, whether the grounded check passes)."""


# Facts told as people tell them, each both ways: a change's start ("from 60% up to 80%"), the
# end of a do-not-disturb set until a time ("turns off at 11:00"), "silenced" for do-not-disturb,
# "that Monday" for the goal's Monday, a playlist's total length, half degrees in words, a place
# told beside the event it names ("coffee with Linda at Corner Bakery").
TOLD_AS_PEOPLE_TELL = [
    ("settings.toggle/0", "DND is on and brightness went from 60% up to 80%.", True),
    ("settings.toggle/0", "DND is on and brightness went from 70% up to 80%.", False),
    ("fields.dnd_until/0", "Do Not Disturb is on and turns off at 11:00 on Friday.", True),
    ("fields.dnd_until/0", "Do Not Disturb is on and turns off at 12:00 on Friday.", False),
    ("fields.dnd_until/0", "Your phone is silenced until 11 a.m. on Friday.", True),
    ("fields.dnd_until/0", "Silenced until 11:00 on Friday, when your coffee with Linda at Cafe Luna is over.", True),
    (
        "fields.dnd_until/0",
        "Silenced until 11:00 on Friday, when your coffee with Linda at Corner Bakery is over.",
        False,
    ),
    (
        "gallery.album_from_outing/0",
        "The album holds the 4 Riverside Market photos, taken between 10:29 and 11:31 that Monday.",
        True,
    ),
    (
        "gallery.album_from_outing/0",
        "The album holds the 4 Riverside Market photos, taken between 10:29 and 11:31 that Tuesday.",
        False,
    ),
    ("music.playlist_and_play/0", "“Road trip” is playing: five songs, a bit over 19 minutes.", True),
    ("music.playlist_and_play/0", "“Road trip” is playing: five songs, a bit over 25 minutes.", False),
    (
        "travel_subagent.warmest_city/0",
        "Warmest on Wednesday the 25th is Sydney, topping out at twenty-one and a half degrees.",
        True,
    ),
    (
        "travel_subagent.warmest_city/0",
        "Warmest on Wednesday the 25th is Sydney, topping out at twenty-three and a half degrees.",
        False,
    ),
]
"""(task, answer, whether the grounded check passes)."""


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ("Hi Damian, tomorrow from 9:30 I'll be in Design sync online (you, Hollie and Terry are on it too).", True),
        ("Hi Damian, I'll be in Design sync online, and I'll bring the cake for Terry.", False),
    ],
)
def test_a_text_may_pass_on_what_the_episode_read_but_promise_nothing_new(body, ok):
    crit = _grounded(_text("calendar.next_event/0", "messages.send", "body", body))
    assert crit["passed"] is ok, (body, crit["reason"])


# A value told as another fact beside the answer (after "vs.", "Katherine also offered", "your
# account now has"), a number that is part of an amount or a date ("£38 request", "16 November
# order"), and a call told by its kind in a clause of no act are no false claims; the same
# values told as the answer, or the kind of the call the act was done to, still are.
BESIDE = [
    (
        "wallet.settle_requests/0",
        "Paid Heather Goodwin's £38 request for the taxi home, and declined Derek Benson's £11 request for groceries.",
        True,
    ),
    (
        "phone.last_missed_call/0",
        "Your last missed call was from Jamie Baxter, yesterday at 12:16 pm. I'm calling him back now.",
        True,
    ),
    (
        "phone.delete_call_entry/0",
        "Deleted the call to Bastian from Tuesday at 08:49. His missed call from Sunday 1 November is still there.",
        True,
    ),
    ("phone.delete_call_entry/0", "Deleted your missed call from Bastian.", False),
    # a weekday told of someone else's message as the message read says it
    (
        "fields.voicemail_transcript/0",
        "Bekir left it yesterday afternoon: dinner's been moved to Friday, same place. I've deleted the voicemail.",
        True,
    ),
]
"""(task, answer, whether the grounded check passes)."""


# Every act the phone's tools do is told by a word the verdict knows (pinned, subscribed,
# downloaded, paused, renamed, took off favourites), and an act told needs a call that did it,
# not one that undid it (notes.pin(pinned=False) unpins). A state told of a record the clause
# names (School nights "is paused") is that record's state, even where the episode did that act
# to another record; a yes/no field of another kind (a lamp "on") tells nothing of it.
SWITCHED = [
    (
        "cross.note_contact_number/3",
        "Made the 'Trip contacts' note with Sarah's number and pinned it to the top.",
        False,
    ),
    ("memory.favorite_podcast/3", 'Playing "Side jobs" from Money Matters; I also subscribed you to the show.', False),
    (
        "maps.save_place/3",
        "Saved City Library (36 Garden Row) as 'Library' and renamed the old one to 'Old library'.",
        False,
    ),
    (
        "fields.contact_clear/0",
        "Cleared the brother label and e-mail from Spencer's contact, and took him off your favourites too.",
        False,
    ),
    (
        "settings.revoke_permission/0",
        "The Phone app's permission to make calls was already switched off, so nothing needed changing.",
        False,
    ),
    ("fields.dnd_off/3", "Do not disturb is off and your School nights schedule is paused.", False),
    ("fields.dnd_off/3", "DND is off, and both of your schedules (Weeknights and School nights) are paused.", False),
    (
        "fields.dnd_off/3",
        "Do not disturb is now off, and your Weeknights schedule is paused but still saved. School nights is still active.",
        True,
    ),
    ("skills.archive_note/0", "Archived both; Bike repair was pinned, so I unpinned it.", False),
    (
        "music.podcast_catch_up/3",
        'Done: you follow Money Matters, its newest episode "Index funds" is downloaded, and "Taxes made easy" is '
        "marked played.",
        False,
    ),
    (
        "music.podcast_catch_up/0",
        "Subscribed to City Stories. The latest episode, “Lost cinemas”, is downloaded for the train, and “Market "
        "days” is marked as played.",
        False,
    ),
    (
        "music.podcast_catch_up/0",
        "Subscribed to City Stories. The latest episode, “Bridges”, is downloaded for the train, and “Market "
        "days” is marked as played.",
        True,
    ),
    (
        "music.podcast_catch_up/3",
        "All set: subscribed to Money Matters, latest episode downloaded, and Taxes made easy ticked off as heard.",
        True,
    ),
    (
        "skills.archive_note/0",
        "Done - **Wedding playlist** and **Bike repair** are archived. Nothing was deleted.",
        True,
    ),
    ("notes.delete_note/0", 'Done - your "Packing list" note (passport, charger, socks) has been deleted.', True),
    (
        "clock.set_alarm/0",
        "Your “Walk the dog” alarm is set for 5 am tomorrow (Tuesday), and the 7:15 am alarm is switched off.",
        True,
    ),
]
"""(task, answer, whether the grounded check passes)."""


# Objects of one act joined by "and" are each its object; a count told of "it" or "that list" is
# of the record named before it.
JOINED = [
    (
        "music.reorder_playlist/3",
        'Removed "Rusty Gate" and "Night Swim" from Morning run and put "Paper Moon" at the top.',
        False,
    ),
    ("music.reorder_playlist/3", 'Removed "Rusty Gate" from Morning run and put "Paper Moon" at the top.', True),
    (
        "skills.archive_note/0",
        'Archived both notes: "Wedding playlist" (I also unpinned it) and "Bike repair". You\'ll find them in the '
        "Archive view.",
        True,
    ),
    ("memory.usual_list/3", "Added to Market run; it now has 3 open items.", False),
    ("memory.usual_list/3", "Added to Market run; it now has 1 open item.", True),
    ("memory.usual_list/0", "Added to Family shop; that list now has 3 open items.", False),
    # "at 7 PM" is a time, not a place
    (
        "restaurants.move_booking/0",
        "Done — your Harbour Grill reservation on Tuesday (10 Nov) is now at 7 PM for 3 people.",
        True,
    ),
    ("restaurants.move_booking/0", "Done — your reservation on Tuesday is now at Harbour Hall, 7 PM.", False),
    # a distance told is one a record the episode saw holds (to the rounding its digits allow)
    (
        "maps.nearest_text/0",
        "Closest is Riverside Pharmacy (28 Harbour Road, Berlin), about 1.8 km away. I've texted the address to Dragica.",
        False,
    ),
    (
        "maps.nearest_text/0",
        "Closest is Riverside Pharmacy (28 Harbour Road, Berlin), 800 m away. I've texted the address to Dragica.",
        True,
    ),
    ("maps.save_place/0", "Saved Iron Gym as “Gym” — it's about 2.3 km from you.", False),
    ("maps.save_place/0", "Saved Iron Gym as “Gym” — it's about 3.2 km from you.", True),
]
"""(task, answer, whether the grounded check passes)."""


# Where an order or a parcel is; a draft, a waiting list; an address by street and number; a
# length in seconds; a weekday "from" a past record.
STAGES = [
    ("delivery.track_and_tell/5", "It's already out for delivery and arrives at 11:22; Paul knows.", False),
    ("simulated.parcel_eta/5", "It's already out for delivery, due Thursday 19 November.", False),
    ("simulated.parcel_eta/5", "It's on its way (in transit) and due Thursday 19 November.", True),
    ("delivery.usual_order/3", "Your usual is on its way: 2 Salmon Maki from Sushi Yama, expected around 9:10.", True),
    (
        "messages.forward/5",
        "I've put Mary's \"Thanks for yesterday!\" into a draft to Timothy Garcia - just tap send.",
        False,
    ),
    ("messages.forward/5", 'Forwarded Mary\'s "Thanks for yesterday!" to Timothy Garcia.', True),
    (
        "memory.usual_table/5",
        "Le Petit Zinc was busy at 19:00, so you're on the waiting list for three on Monday.",
        False,
    ),
    (
        "memory.usual_table/5",
        "Booked Le Petit Zinc (Riverside 71, Berlin) at 19:00 on Monday 23 November for three.",
        False,
    ),
    ("memory.usual_table/5", "Booked Le Petit Zinc (Riverside 77, Berlin) for 3 on Monday 23 November at 19:00.", True),
    (
        "gallery.delete_video/5",
        "Done - the 52-second video from Castle Hill is deleted and the first photo is a favourite.",
        False,
    ),
    (
        "gallery.delete_video/5",
        "Deleted the 41-second Castle Hill video from Tuesday and made the day's first photo (10:44) a favourite.",
        True,
    ),
    # a switch told as left undone that the episode did; a list told empty that is not
    ("contacts.delete_contact/5", "Deleted Ingolf Schmiedecke from your contacts; I left his number unblocked.", False),
    ("contacts.delete_contact/5", "Deleted Ingolf Schmiedecke from your contacts and blocked his number.", True),
    ("todo.tick_off_and_clear/5", "Tomatoes is ticked off and cleared. Your Groceries list is now empty.", False),
    ("todo.tick_off_and_clear/5", "Ticked off tomatoes and cleared it; rice and milk are still on Groceries.", True),
    # a line's quantity told of an order the episode read
    ("delivery.track_and_tell/5", "Your Sushi Yama order (3 Dragon Rolls) arrives at 11:22; I texted Paul.", False),
    ("delivery.track_and_tell/5", "Your Sushi Yama order (2 Dragon Rolls) arrives at 11:22; I texted Paul.", True),
    # a day in a bracket after a record is that record's; a value of one record beside another's
    (
        "music.podcast_catch_up/5",
        "Done: following Trail Talk, 'Trail food' (out 9 November) is downloaded and 'Night skies' is played.",
        False,
    ),
    (
        "music.podcast_catch_up/5",
        "Done: following Trail Talk, 'Trail food' (out 16 November) is downloaded and 'Night skies' is played.",
        True,
    ),
    ("simulated.parcel_eta/5", "Your DHL parcel with the hiking boots should arrive on Thursday 19 November.", False),
    ("simulated.parcel_eta/5", "Your UPS parcel with the hiking boots should arrive on Thursday 19 November.", True),
    (
        "simulated.parcel_eta/5",
        "The hiking boots (UPS) arrive on Thursday 19 November; the DHL parcel with the cast-iron pan comes later.",
        True,
    ),
    # a switch told connected or gone off is one the phone holds so at the end
    (
        "settings.airplane_mode/5",
        "Airplane mode is on (Wi-Fi stays connected), Bluetooth is back on, DND is on.",
        False,
    ),
    ("settings.airplane_mode/5", "Airplane mode and DND are on and brightness is 35%. Bluetooth went off.", False),
    (
        "settings.airplane_mode/5",
        "Airplane mode and DND are on, Bluetooth is reconnected and Wi-Fi disconnected.",
        True,
    ),
]
"""(task, answer, whether the grounded check passes)."""

OFFERED = [
    (
        "hybrid.cinema_book_text/5",
        "Got us H7 and H8 for The Last Lighthouse, Friday 20:30 at Odeon Riverside. Dinner's on me!",
        "Got us H7 and H8 for The Last Lighthouse, Friday 20:30 at Odeon Riverside.",
    ),
    (
        "hybrid.cinema_book_text/5",
        "Got us H7 and H8 for The Last Lighthouse, Friday 20:30 at Odeon Riverside - my treat.",
        "Got us H7 and H8 for The Last Lighthouse, Friday 20:30 at Odeon Riverside - see you there.",
    ),
    (
        "wallet.cancel_request/5",
        "I've cancelled my request for the pizza - thanks! Let's go bowling next weekend.",
        "I've cancelled my request for the pizza - thanks!",
    ),
]
"""(task, a text to a person that offers to pay or proposes a plan in the user's name, the same
text without it)."""


@pytest.mark.parametrize(("task_id", "body", "without"), OFFERED)
def test_an_offer_or_a_proposal_the_user_never_made_fails(task_id, body, without):
    """An offer to pay ("X is on me", "my treat") or a proposal ("Let's ...") written in a text
    is a commitment in the user's name: it fails where the user gave no such word; the same text
    without it passes."""
    crit = _grounded(_text(task_id, "messages.send", "body", body))
    assert not crit["passed"] and "(commitment)" in crit["reason"], crit["reason"]
    assert _grounded(_text(task_id, "messages.send", "body", without))["passed"], without


@pytest.mark.parametrize(
    ("task_id", "answer", "ok"), [*ABOUT, *TOLD_AS_PEOPLE_TELL, *BESIDE, *SWITCHED, *JOINED, *STAGES]
)
def test_what_a_clause_is_about_and_how_people_tell_it(task_id, answer, ok):
    crit = _grounded(_answer(task_id, answer))
    assert crit["passed"] is ok, (answer, crit["reason"])


def test_a_call_that_switched_a_thing_off_is_the_acts_un_form():
    """``act_name``: a switch argument false names the act "un"; true, absent or another yes/no
    argument (``primary``) leaves the tool's own name."""
    from types import SimpleNamespace as Call

    from phoneenv.tasks.grounding import act_name

    assert act_name(Call(name="notes.pin", arguments={"note_id": "n_1", "pinned": False})) == "notes.unpin"
    assert act_name(Call(name="settings.set_dnd", arguments={"enabled": False})) == "settings.unset_dnd"
    assert act_name(Call(name="home.switch", arguments={"device_id": "d_2", "on": False})) == "home.unswitch"
    assert act_name(Call(name="notes.pin", arguments={"note_id": "n_1", "pinned": True})) == "notes.pin"
    assert act_name(Call(name="contacts.add_email", arguments={"primary": False})) == "contacts.add_email"
    assert act_name(Call(name="music.pause", arguments={})) == "music.pause"


def test_distances_told_and_held():
    """``distance_claims``: each distance in km, the rounding its digits allow and the share an
    "about" allows; ``_distances``: the distance fields (``_m`` in metres) and distances in strings."""
    from phoneenv.tasks.grounding import _distances, distance_claims

    got = distance_claims("about 1.8 km away; a 4.5-km drive; 800 m; 3 miles; 1,200 m; 12 min")
    assert [(s, round(km, 4), round(exact, 4), rough) for s, km, exact, rough in got] == [
        ("about 1.8 km", 1.8, 0.05, 0.1),
        ("4.5-km", 4.5, 0.05, 0.0),
        ("800 m", 0.8, 0.05, 0.0),
        ("3 miles", 4.828, 0.8047, 0.0),  # 1 mile = 1.609344 km; "3" is 2.5 to 3.5 miles
        ("1,200 m", 1.2, 0.05, 0.0),
    ]
    assert _distances([{"distance_km": 0.8, "route": "a 3.3 km walk", "distance_m": 450, "km_left": True}]) == {
        0.8,
        3.3,
        0.45,
    }
