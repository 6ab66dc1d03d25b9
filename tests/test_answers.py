"""Typed answers by hand: claims of each type, single-value and set semantics, finish's value."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from phoneenv.contract import AnswerCriterion, Feedback, Step, TaskSpec, ToolCall, Trace
from phoneenv.env import PhonePlanEnv
from phoneenv.tasks import select
from phoneenv.tasks.answers import check_answer, extract_claims, states_facts
from phoneenv.tasks.predicates import PLAIN_MAX_CHARS, Context, match, plain, says
from phoneenv.tasks.verify import check_trace, context_of, verify

BOOK = (
    {"id": "c_1", "name": "Ana Lima", "phone": "+4915123456789", "email": "ana@x.org"},
    {"id": "c_2", "name": "Ben Weber", "phone": "+4916011112222", "email": None},
    {"id": "c_3", "name": "Carla Diaz", "phone": "+4917011112222", "email": None},
    {"id": "c_4", "name": "Ana Costa", "phone": "+4917612345678", "email": None},
)
CTX = Context(contacts=BOOK, now="2026-11-29T09:00:00")  # a Sunday


def ok(text, given=None, **crit):
    return check_answer(AnswerCriterion(**crit), text, given, CTX)[0]


# -- extraction ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "type", "claims"),
    [
        ("You have three unread messages", "number", [3.0]),
        ("Only one unread message, from Ana", "number", [1.0]),
        ("A single unread text", "number", [1.0]),
        ("The only one who wrote is Ana: 2 texts", "number", [2.0]),
        ("Ben called at 12.16pm", "time", ["12:16"]),
        ("Ben called at 12h16", "time", ["12:16"]),
        ("It costs 12.16", "time", []),
        ("You have 3, maybe 4", "number", [3.0, 4.0]),
        ("Ana (+49 151 2345 6789) sent 2 messages", "number", [2.0]),
        ("On 2026-11-30 you got 2", "number", [2.0]),
        ("At 14:05 invoice #4821 was paid, 2 items", "number", [2.0]),
        ("about 3.5 km", "number", [3.5]),
        ("3,5 km", "number", [3.5]),
        ("1,250 steps", "number", [1250.0]),
        ("1.250,00 steps", "number", [1250.0]),
        ("Not 3 — you have 5", "number", [5.0]),
        ("It's 12 not 13", "number", [12.0]),
        ("You have no unread messages", "number", [0.0]),
        ("The first one is from Ana, 3 in all", "number", [3.0]),
        ("The 3rd message came 2 hours ago; 4 in all", "number", [4.0]),
        ("The meeting is at 4 pm", "time", ["16:00"]),
        ("14:00 or 16:00", "time", ["14:00", "16:00"]),
        ("at 16:00 (4 PM)", "time", ["16:00"]),
        ("3:15 PM", "time", ["15:15"]),
        ("lunch at noon, back by midnight", "time", ["12:00", "00:00"]),
        ("moved to 16:00, not 14:00", "time", ["16:00"]),
        ("moved from 14:00 to 16:00", "time", ["16:00"]),
        ("2026-11-30T16:00", "time", ["16:00"]),
        ("2026-11-30 at 9:30 am", "date", ["2026-11-30"]),
        ("tomorrow", "date", ["2026-11-30"]),
        ("next Friday", "date", ["2026-12-04"]),
        ("on the 3rd", "date", ["2026-12-03"]),
        ("Monday, December 7", "date", ["2026-12-07"]),
        ("30.11.2026", "date", ["2026-11-30"]),
        ("1 hour 30 minutes", "duration", [5400]),
        ("1 h 30 min", "duration", [5400]),
        ("90 minutes", "duration", [5400]),
        ("an hour and a half", "duration", [5400]),
        ("half an hour", "duration", [1800]),
        ("€45.90", "money", [45.9]),
        ("45,90 EUR", "money", [45.9]),
        ("$1,250.00", "money", [1250.0]),
        ("No, you don't have any meeting", "yes_no", [False]),
        ("Yes, at 3 pm", "yes_no", [True]),
        ("You don't.", "yes_no", [False]),
        ("Maybe, I'm not sure", "yes_no", [True, False]),
    ],
)
def test_extract_claims(text, type, claims):
    assert extract_claims(text, type, CTX) == claims


def test_relative_dates_need_the_clock():
    assert extract_claims("tomorrow", "date", Context()) == []
    assert extract_claims("December 7, 2026", "date", Context()) == ["2026-12-07"]


def test_contact_mentions_by_identity():
    assert extract_claims("Ben Weber and Carla", "contacts", CTX) == [frozenset({"c_2"}), frozenset({"c_3"})]
    assert extract_claims("Ana and Ben", "contacts", CTX) == [frozenset({"c_1", "c_4"}), frozenset({"c_2"})]
    assert extract_claims("It was Ben, not Carla", "contact", CTX) == [frozenset({"c_2"})]


# -- single-valued types ---------------------------------------------------------------------


def test_number_exact_hedge_and_contradiction():
    assert ok("You have three unread messages", number=3)
    assert not ok("You have 3, maybe 4", number=3)
    assert ok("Ana (+49 151 2345 6789) sent 2 messages", number=2)
    assert ok("On 2026-11-30 you got 2", number=2)
    assert not ok("Not 3 — you have 5", number=3)  # mentions 3 in passing, asserts 5
    assert ok("Not 3 — you have 5", number=5)
    assert ok("It's 12 not 13", number=12)
    assert ok("about 3.5 km", type="number", value=3.5)
    assert ok("3,5 km", number=3.4, tolerance=0.1)
    assert not ok("3,5 km", number=3.4)
    assert not ok("I could not find it", number=3)
    assert ok("You have no unread messages", number=0)


def test_number_unit_reads_the_counted_noun():
    text = "You have 3 unread messages: 2 from Ana and 1 from Ben."
    assert ok(text, number=3, unit="message")
    assert not ok(text, number=3)  # without the unit every number is a claim
    assert not ok("3 or 4 messages", number=3, unit="message")
    assert not ok("3, or perhaps 4 unread text messages", number=4, unit="message")  # hedged numbers stay linked
    assert ok("3 unread, from Ana", number=3, unit="message|text")  # no number carries it: all count


def test_time():
    assert ok("The meeting is at 4 pm", type="time", value="16:00")
    assert ok("16:00", type="time", value="16:00")
    assert ok("at 16:00 (4 PM)", type="time", value="16:00")
    assert not ok("14:00 or 16:00", type="time", value="16:00")
    assert not ok("The meeting is at 14:00", type="time", value="16:00")
    assert ok("a quarter past four", type="time", value="16:15")  # 12 h without am/pm: either
    assert ok("a quarter past four", type="time", value="04:15")
    assert not ok("a quarter past four", type="time", value="16:45")


def test_date_duration_money():
    assert ok("Tomorrow.", type="date", value="2026-11-30")
    assert not ok("Today.", type="date", value="2026-11-30")
    assert ok("It's on Friday, December 4th", type="date", value="2026-12-04")
    assert ok("1 hour 30 minutes", type="duration", value=5400)
    assert not ok("1 hour 20 minutes", type="duration", value=5400)
    assert ok("€45.90", type="money", value=45.9, currency="EUR")
    assert ok("45,90 EUR", type="money", value=45.9, currency="EUR")
    assert not ok("45,90 USD", type="money", value=45.9, currency="EUR")
    assert not ok("€54.90", type="money", value=45.9)
    # a hyphenated duration ("a 14-minute drive")
    assert ok("It's a 14-minute drive.", type="duration", value=840)
    assert not ok("It's a 15-minute drive.", type="duration", value=840)
    # a bare number hedged with a duration is a duration in its unit: the hedge fails
    for text in ("About 14 minutes, or 20 in traffic.", "14 or 20 minutes", "14 min / 20 min"):
        assert not ok(text, type="duration", value=840), text
        assert not ok(text, type="duration", value=1200), text
    assert ok("14 minutes (2 km).", type="duration", value=840)
    assert ok("It's 14 minutes, 2 stops on the way.", type="duration", value=840)
    # no money at all, in words
    for text in ("You haven't spent anything on dining this week.", "Nothing on dining this week."):
        assert ok(text, type="money", value=0, currency="USD"), text
        assert not ok(text, type="money", value=5, currency="USD"), text
    # a time with a dot where it reads as one: after "at"/"by"..., or before am/pm; not a price
    assert ok("Food arrives at 8.28, come over!", type="time", value="08:28")
    assert ok("Ready by 8.28 pm", type="time", value="20:28")
    assert ok("It comes at 8.28 and I'll be home", type="time", value="08:28")
    assert not ok("Food arrives at 8.38", type="time", value="08:28")
    assert not ok("Sold at 8.28 EUR", type="time", value="08:28")
    assert ok("Sold at 8.28 EUR", type="money", value=8.28, currency="EUR")
    # "and" is no "a d(ay)": 2 h 5 min, not 26 h 5 min
    assert ok("2 hours and 5 minutes", type="duration", value=7500)
    assert not ok("2 hours and 5 minutes", type="duration", value=7500 + 86400)
    assert ok("a minute and 20 seconds", type="duration", value=80)
    assert not ok("36 dollars and 32 cents", type="duration", value=86400)


def test_no_refund_is_an_amount_of_zero():
    for text in ("Cancelled, but there's no refund.", "You get nothing back.", "It won't be refunded."):
        assert ok(text, type="money", value=0, currency="GBP"), text
        assert not ok(text, type="money", value=765, currency="GBP"), text
    # beside other amounts too: the total as context, or a contradiction
    assert ok("You lose the whole 765 GBP - nothing is refunded.", type="money", value=0, currency="GBP", context=[765])
    assert not ok("You paid 720 AUD but get nothing back.", type="money", value=720, currency="AUD", context=[720])
    assert not ok("Refund: 720 AUD. Actually no refund, sorry.", type="money", value=720, currency="AUD")
    assert ok("Refund: 720 AUD, nothing else to pay.", type="money", value=720, currency="AUD")
    # a spaced dash between two amounts is still a range
    assert not ok("Refund 700 - 720 AUD", type="money", value=720, currency="AUD")


def test_stock_counts_and_out_of_a_size():
    for text in ("£69, but they're out of size L.", "£69. Size L: 0 left."):
        assert ok(text, type="yes_no", value=False), text
        assert not ok(text, type="yes_no", value=True), text
    for text in ("74.50 EUR - only 2 left in size 39, so hurry.", "74.50 EUR. Size 39: 3 left."):
        assert ok(text, type="yes_no", value=True), text
        assert not ok(text, type="yes_no", value=False), text


def test_money_in_words():
    # whole units then cents, in words or digits: 16.50, not 16 (and not 50)
    for text in ("Sixteen dollars fifty", "16 dollars 50.", "sixteen dollars and fifty cents", "$16 and 50 cents"):
        assert ok(text, type="money", value=16.5, currency="USD"), text
        assert not ok(text, type="money", value=16, currency="USD"), text
        assert not ok(text, type="money", value=50, currency="USD"), text
    assert ok("Thirty-six dollars and thirty-two cents", type="money", value=36.32, currency="USD")
    assert ok("It was twelve euros fifty.", type="money", value=12.5, currency="EUR")
    assert not ok("It was twelve euros fifty.", type="money", value=12.5, currency="USD")
    assert ok("Fifty cents left.", type="money", value=0.5, currency="USD")
    # a count after the amount is no cents
    assert ok("5 dollars, 3 people paid", type="money", value=5, currency="USD")
    assert ok("5 dollars 3 people paid", type="money", value=5, currency="USD")
    assert not ok("5 dollars 3 people paid", type="money", value=5.03, currency="USD")


def test_times_in_words():
    assert ok("quarter past 3 pm", type="time", value="15:15")  # not 15:00 from "3 pm"
    assert ok("half past 4 in the afternoon", type="time", value="16:30")  # not 04:30
    assert ok("Landing in Edinburgh at five past twelve.", type="time", value="12:05")
    assert ok("at twenty to nine in the evening", type="time", value="20:40")
    assert not ok("at twenty to nine in the evening", type="time", value="08:40")
    # an hour alone after "at", "by"...: either half of the day unless the phrase says which
    for text in ("Gym at seven.", "gym at 7", "Table for 4 at 7, see you there", "back by 7 then"):
        assert ok(text, type="time", value="19:00"), text
        assert ok(text, type="time", value="07:00"), text
        assert not ok(text, type="time", value="19:30"), text
    assert ok("Gym at 7 tonight", type="time", value="19:00")
    assert not ok("Gym at 7 tonight", type="time", value="07:00")
    assert ok("at seven in the morning", type="time", value="07:00")
    assert not ok("Not at 7, at 8.", type="time", value="19:00")
    assert ok("Not at 7, at 8.", type="time", value="20:00")
    # a count, an address or a temperature is no time; the digits stay a number
    assert not ok("at 7 people", type="time", value="19:00")
    assert not ok("at 7 Main Street", type="time", value="19:00")
    assert ok("Sydney is at 24, warmer than Kyoto (18)", type="number", value=24)
    assert ok("Locker 663, session at seven in the morning.", type="number", value=663)


def test_says_reads_a_thing_done_instead_as_denied():
    for body in ("Ordered the Palak Paneer instead of the Chicken Tikka", "the paneer rather than the chicken tikka",
                 "Skipped the Chicken Tikka: you're vegetarian", "I didn't order the Chicken Tikka"):  # fmt: skip
        assert not says(body, "Chicken Tikka"), body
        assert not says(body, "the Chicken Tikka"), body
    assert says("Ordered the Chicken Tikka instead of the paneer", "Chicken Tikka")
    assert says("Ordered the Palak Paneer instead of the Chicken Tikka", "Palak Paneer")


def test_says_reads_a_compound_written_open_or_closed_alike():
    for body, phrase in (
        ("See you at lunch time!", "See you at lunchtime"),
        ("see you at lunchtime", "See you at lunch time"),
        ("Online check in opens at 6", "check-in opens at 6"),
        ("Bring the passport and the boarding pass", "boardingpass"),
    ):
        assert says(body, phrase), (body, phrase)
    for body, phrase in (
        ("Not at lunch time", "at lunchtime"),  # still denied
        ("Gate 10 15 minutes", "Gate 1015"),  # numbers stay apart
        ("lunch at the time", "lunchtime"),  # only a space or hyphen joins a compound
        ("a lunchtimer talk", "lunchtime"),  # whole words
    ):
        assert not says(body, phrase), (body, phrase)


def test_says_reads_word_forms_and_abbreviations_as_the_same_words():
    for body, phrase in (
        ("Foggy tomorrow, high 9", "fog"),  # the adjective in -y
        ("Windy all day", "wind"),
        ("Icy roads in the morning", "ice"),
        ("Don't forget the concert ticket", "Don't forget the concert tickets"),  # singular/plural
        ("I'm running about 15 mins late", "I'm running about 15 minutes late"),  # a unit abbreviated
        ("Back in 2hrs", "back in 2 hours"),
        ("Be there in 10 min.", "be there in 10 minutes"),
        ("thx & see you tmrw", "thanks and see you tomorrow"),
        ("Can you bring the charger tonite?", "Can you bring the charger tonight?"),
    ):
        assert says(body, phrase), (body, phrase)
    for body, phrase in (
        ("Dinner at eighty", "dinner at eight"),  # number words keep their form
        ("The fogger is broken", "fog"),
        ("I'm not running 15 min late", "I'm running 15 minutes late"),  # still denied
        ("Running 15 min late", "running 50 minutes late"),
    ):
        assert not says(body, phrase), (body, phrase)


def test_a_denial_reaches_to_the_end_of_its_part_of_the_sentence():
    for body, phrase in (
        ("Don't worry, got your message", "got your message"),
        ("Not a problem - see you at 8", "see you at 8"),
        ("No, the package arrived: thanks!", "the package arrived"),
        ("Not Tuesday \u2013 Wednesday at 8", "Wednesday at 8"),
    ):
        assert says(body, phrase), (body, phrase)
    for body, phrase in (
        ("I'm not at the station", "at the station"),
        ("The package hasn't arrived yet", "the package arrived"),
        ("Don't call me when you land", "call me when you land"),
        ("Not Tuesday \u2013 Wednesday at 8", "Tuesday"),
    ):
        assert not says(body, phrase), (body, phrase)


def test_says_reads_contractions_and_number_words_as_written_out():
    assert plain("I'm fifteen minutes late, don’t wait") == "I am 15 minutes late, do not wait"
    dictated = "Don't forget the concert tickets"
    for body in ("Hi, do not forget the concert tickets!", "don’t forget the concert tickets :)", dictated):
        assert says(body, dictated), body
    for body in (
        "Forget the concert tickets, I have them",
        "Don't forget the tickets",
        "I never said don't forget the concert tickets",
    ):
        assert not says(body, dictated), body
    assert says("Hi! I am running about fifteen minutes late.", "I'm running about 15 minutes late")
    assert not says("I'm running about 50 minutes late", "I'm running about 15 minutes late")
    assert not says("I'm not running about 15 minutes late", "I'm running about 15 minutes late")
    assert not says("I can't pick up the cake on my way, sorry", "pick up the cake")
    assert not says("I cannot pick up the cake", "pick up the cake")
    # a guess states nothing
    assert not says("It's at Harbour Hall or Pier 7, not sure which.", "Harbour Hall")
    assert not says("The gate code is 2181, or maybe 2118", "2181")
    assert says("Maybe see you later. The gate code is 2181.", "2181")
    assert says("Maybe we should meet at 6", "Maybe we should meet at 6")  # the guess is the text itself
    # a number is whole: "at 8" is not said by "at 8:30", nor "to 4" by "to 4.5"
    assert not says("Dinner is at 8:30 tonight", "dinner is at 8")
    assert not says("Can we move our call to 4:30?", "Can we move our call to 4?")
    assert says("Dinner is at 8. See you", "dinner is at 8") and says("Move it to 4, ok?", "move it to 4")
    # a noun's "'s" before a place, time, state or participle reads "is"/"has"; a possessive stays
    assert says("Dinner's at eight tonight, see you", "Dinner is at 8 tonight")
    assert says("The meeting’s been moved to Friday", "the meeting has been moved")
    assert plain("Ana's party") == "Ana's party" and not says("Ana's party is on", "Ana is party")
    # "an hour" is one hour; "6pm" is "6 pm"
    assert says("I'll call you back in 1 hour", "I'll call you back in an hour")
    assert says("I'll call you back after 6pm.", "I'll call you back after 6")
    assert not says("I'll call you back in 2 hours", "I'll call you back in an hour")
    # a fuzzed huge body is read as written, not rewritten (seconds of work)
    huge = "I'm late. " * (PLAIN_MAX_CHARS // 10 + 1)
    assert plain(huge) == huge and says(huge, "I'm late")


def test_contains_means_stated_as_words_and_not_denied():
    assert ok('Your newest unread email is "Dinner on Saturday".', contains=["Dinner on Saturday?"])
    assert ok("Meet me at the Parent–Teacher meeting", contains=["parent-teacher meeting"])
    assert ok("I'm at Central Station, not at home", contains=["Central Station"])
    assert ok("Not the window seat but the aisle", contains=["aisle"])
    assert not ok('It\'s not "Team offsite".', contains=["Team offsite"])
    assert not ok("The latest unread email isn't Team offsite.", contains=["Team offsite"])
    assert not ok("Team offsite", contains=["Team off"])
    assert not ok("No showers expected, sunny.", contains=["showers"])  # "no" right before it
    assert ok("No, it's Team offsite.", contains=["Team offsite"])  # "no" as an answer word


def test_time_ranges_are_one_claim_of_either_end():
    """ "08:30-09:30" and "from 08:30 to 09:30" state 08:30 (an event's start beside its end is no
    contradiction); "moved from 14:00 to 16:00" is still a change, 14:00 the old value."""
    from phoneenv.tasks.answers import consistent_facts, states_facts

    ctx = context_of({}, {}, "2026-11-07T09:00:00")
    for text in ("Tax advisor from 08:30 to 09:30", "Tax advisor 08:30-09:30", "Tax advisor 08:30 – 09:30"):
        assert states_facts(text, {"time": "08:30"}, ctx), text
    assert not states_facts("Tax advisor 09:30-10:30", {"time": "08:30"}, ctx)
    assert states_facts("Moved from 14:00 to 16:00", {"time": "16:00"}, ctx)
    assert not states_facts("Moved from 14:00 to 16:00", {"time": "14:00"}, ctx)
    assert states_facts("not 14:00-15:00 but 16:00", {"time": "16:00"}, ctx)
    assert not states_facts("14:00 or 16:00", {"time": "16:00"}, ctx)  # a hedge is no range
    # a fact with context values the text may state beside it
    eta = {"time": {"value": "12:28", "context": ["11:53"]}}
    assert states_facts("Arrives at 12:28 - ordered at 11:53.", eta, ctx)
    assert not states_facts("Ordered at 11:53.", eta, ctx)
    assert not states_facts("Arrives at 12:28 or 11:53.", eta, ctx)
    assert not states_facts("Arrives at 12:28, ordered at 11:50.", eta, ctx)
    # several consistent values: the meeting's time or the arrival
    assert consistent_facts("5 minutes late, see you at 10:05", {"time": ["10:00", "10:05"]}, ctx)
    assert not consistent_facts("5 minutes late, see you at 11:05", {"time": ["10:00", "10:05"]}, ctx)


def test_bare_amounts_and_numbers_written_as_ids():
    """Without an amount carrying a currency, bare numbers are amounts ("16,066 left"); a
    number written as an id ("locker #663") is read when the text has no other number."""
    assert ok("You have 16,066 left this month.", type="money", value=16066.0, currency="JPY")
    assert ok("36.32 so far", type="money", value=36.32, currency="USD")
    assert not ok("37.32 so far", type="money", value=36.32, currency="USD")
    assert not ok("36.32 EUR so far", type="money", value=36.32, currency="USD")  # a currency still counts
    assert not ok("36.32 or 40 so far", type="money", value=36.32, currency="USD")
    # where some bare numbers have cents, only those are amounts: a count beside them is no claim
    assert ok("3 payments, 36.32 so far", type="money", value=36.32, currency="USD")
    assert not ok("3 payments, 37.32 so far", type="money", value=36.32, currency="USD")
    assert not ok("36.32 or 40 so far, in 3 payments", type="money", value=36.32, currency="USD")
    assert not ok("3 payments so far", type="money", value=36.32, currency="USD")
    assert ok("Locker #663", type="number", value=663) and ok("Locker no. 663", type="number", value=663)
    assert not ok("Locker no. 664", type="number", value=663)
    assert ok("Order #A12 has 3 items", type="number", value=3)  # an id beside a number stays an id
    # a short date in brackets after its weekday is a date, not two numbers beside the answer
    assert ok("Table for 4 this Saturday (7/11) at 19:30", type="number", value=4)
    assert not ok("Table for 5 this Saturday (7/11) at 19:30", type="number", value=4)
    # a value in another role, said as context, is no contradicting claim
    assert ok("$36.32 so far, out of a $200 budget.", type="money", value=36.32, currency="USD")
    assert not ok("$200 out of a $36.32 budget.", type="money", value=36.32, currency="USD")
    assert ok("Sydney is at 24, warmer than Kyoto (18)", type="number", value=24)
    # a bare number hedged with an amount is an amount: the hedge fails
    for text in ("Refund: 700 or 720 AUD.", "Refund around 700-720 AUD.", "somewhere between 700 and 720 AUD"):
        assert not ok(text, type="money", value=720, currency="AUD"), text
    # context values the task names may stand beside the answer; alone they are no answer
    assert ok("Leave at 12:59 to arrive by 13:30", type="time", value="12:59", context=["13:30"])
    assert not ok("Leave at 12:59 to arrive by 13:30", type="time", value="12:59")
    assert not ok("Arrive by 13:30", type="time", value="12:59", context=["13:30"])
    assert ok("The stay (360 AUD a night): 720 AUD back", type="money", value=720, currency="AUD", context=[360])
    # a context value offered as the answer in a hedge is a claim
    assert not ok("Leave at 12:59 or 13:30", type="time", value="12:59", context=["13:30"])
    assert not ok("720 or 360 AUD back", type="money", value=720, currency="AUD", context=[360])


def test_yes_no():
    assert ok("No, you don't have any meeting", type="yes_no", value=False)
    assert not ok("No, you don't have any meeting", type="yes_no", value=True)
    assert ok("Yes, you have one at 3 pm", type="yes_no", value=True)
    assert not ok("Maybe, I'm not sure", type="yes_no", value=True)
    # clause by clause: a set phrase's negation negates nothing; "sold out" denies without one
    assert ok("£74.50 and they do have size 41 in stock, no problem!", type="yes_no", value=True)
    assert not ok("£74.50 and they do have size 41 in stock, no problem!", type="yes_no", value=False)
    assert ok("£74.50; size 41 is available, don't worry.", type="yes_no", value=True)
    assert ok("It costs £74.50 but size 41 is sold out", type="yes_no", value=False)
    assert ok("It's £74.50; size 41: none left", type="yes_no", value=False)
    assert ok("Size 41 is not sold out; £74.50", type="yes_no", value=True)
    assert not ok("It costs £74.50.", type="yes_no", value=True)  # no answer to the question
    assert not ok("Yes and no", type="yes_no", value=True) and not ok("Yes and no", type="yes_no", value=False)
    # saying it could not look is no answer either way
    for text in ("I have no way to check warnings from here.", "I couldn't check; probably none."):
        assert not ok(text, type="yes_no", value=False) and not ok(text, type="yes_no", value=True)
    assert ok("Saved it; there are none in effect there, all clear.", type="yes_no", value=False)
    assert ok("There's a storm warning from Friday.", type="yes_no", value=True)


# -- set-valued types ------------------------------------------------------------------------


def test_contacts_set_semantics():
    want = {"type": "contacts", "value": ["c_2", "c_3"]}
    assert ok("Ben and Carla", **want)
    assert ok("Carla Diaz and Ben Weber", **want)
    assert not ok("Ben, Carla and Ana Lima", **want)
    assert not ok("Only Ben", **want)
    assert ok("Ana Lima and Ben", type="contacts", value=["c_1", "c_2"])
    assert not ok("Ana and Ben", type="contacts", value=["c_1", "c_2"])  # which Ana?
    assert not ok("Ana and Ben", type="contacts", value=["c_1", "c_4", "c_2"])  # "Ana" is one of them, not both
    assert ok("It was Ben", type="contact", value="c_2")
    assert not ok("Ben or Carla", type="contact", value="c_2")
    assert ok("It was Ben, not Carla", type="contact", value="c_2")


def test_items_set_semantics():
    want = {"type": "items", "value": ["milk", "eggs", "bread"]}
    assert ok("Your list has milk, eggs and bread.", **want)
    assert ok("- bread\n- milk\n- eggs", **want)
    assert not ok("Your list has milk and eggs.", **want)
    assert not ok("Your list has milk, eggs, butter and bread.", **want)
    assert ok(None, ["Bread", "milk", "eggs"], **want)
    assert not ok(None, ["milk", "eggs"], **want)


def test_text_type_and_legacy_checks():
    assert ok("Your Dune note is in Books", type="text", value=["dune", "books"])
    assert not ok("Your note is in Books", type="text", value=["dune", "books"])
    assert ok("Done.", equals="done")
    assert ok("moved to 4 pm", contains=["moved"], type="time", value="16:00")


# -- typed value beside the text -------------------------------------------------------------


def test_typed_value_and_text_must_agree():
    assert ok("The meeting is at 4 pm", "16:00", type="time", value="16:00")
    assert ok(None, "4 PM", type="time", value="16:00")
    assert ok("Here is the time you asked for.", "16:00", type="time", value="16:00")
    assert not ok("It is at 14:00", "16:00", type="time", value="16:00")  # they contradict
    assert not ok(None, "14:00", type="time", value="16:00")
    assert ok("three", 3, number=3)
    assert not ok("You have 3", 4, number=3)
    assert ok(None, ["Ben", "c_3"], type="contacts", value=["c_2", "c_3"])
    assert ok(None, False, type="yes_no", value=False)


@pytest.mark.parametrize(
    "value", [{"a": 1}, [[1]], [None], True, "nonsense", 1e308, float("nan"), ["x", 1, False], "", []]
)
def test_any_json_value_gives_a_clean_result(value):
    for crit in (
        {"number": 3},
        {"type": "time", "value": "16:00"},
        {"type": "contacts", "value": ["c_2"]},
        {"type": "items", "value": ["a"]},
        {"type": "yes_no", "value": True},
        {"type": "money", "value": 3, "currency": "EUR"},
        {"type": "date", "value": "2026-11-30"},
        {"type": "duration", "value": 60},
        {"type": "text", "value": "x"},
        {"contains": ["x"]},
    ):
        passed, why = check_answer(AnswerCriterion(**crit), None, value, CTX)
        assert isinstance(passed, bool) and (passed or why)


def test_criterion_validation():
    with pytest.raises(ValidationError, match="needs the expected value"):
        AnswerCriterion(type="time")
    with pytest.raises(ValidationError, match="no type"):
        AnswerCriterion(value=3)
    with pytest.raises(ValidationError, match="deterministic check"):
        AnswerCriterion(judge="Is it polite?")
    AnswerCriterion(judge="Is it polite?", contains=["sorry"])


# -- facts in message bodies -----------------------------------------------------------------


def test_states_facts():
    assert states_facts("Moved to 4 pm", {"time": "16:00"}, CTX)
    assert states_facts("Moved to 16:00, not 14:00", {"time": "16:00"}, CTX)
    assert not states_facts("Moved to 14:00", {"time": "16:00"}, CTX)
    assert not states_facts("Moved to 14:00 or 16:00", {"time": "16:00"}, CTX)
    assert states_facts("See you tomorrow at 4 pm", {"time": "16:00", "date": "2026-11-30"}, CTX)
    assert match({"body": "Moved to 4 pm"}, {"body": {"states": {"time": "16:00"}}}, CTX)
    assert not match({"body": None}, {"body": {"states": {"time": "16:00"}}}, CTX)
    with pytest.raises(ValueError, match="unknown answer type"):
        states_facts("x", {"colour": "red"}, CTX)


# -- through verify, check_trace and the env -------------------------------------------------


def _task(**crit):
    return TaskSpec(id="t/0", domain="time", goal="?", criteria=[AnswerCriterion(**crit)])


def test_verify_uses_contacts_clock_and_records_the_value():
    tables = {"contacts.contacts": {c["id"]: dict(c) for c in BOOK}}
    v = verify(_task(type="date", value="2026-11-30"), tables, tables, [], "tomorrow", steps=1, errors=0,
               now="2026-11-29T09:00:00", answer_value=["x"])  # fmt: skip
    assert not v.success and v.answer_value == ["x"]  # the value is not a date
    v = verify(_task(type="contact", value="c_2"), tables, tables, [], "Ben did", steps=1, errors=0)
    assert v.success and v.answer_value is None
    assert json.loads(v.model_dump_json())["answer_value"] is None


def test_judge_is_off_by_default_and_recorded():
    t = _task(contains=["sorry"], judge="Does it apologise politely?")
    seen = []

    def judge(rubric, text, value):
        seen.append(rubric)
        return "rude" not in text, "polite" if "rude" not in text else "rude tone"

    assert verify(t, {}, {}, [], "sorry, rude", steps=1, errors=0).success  # no judge configured
    v = verify(t, {}, {}, [], "sorry, rude", steps=1, errors=0, judge=judge)
    assert not v.success and v.criteria[0].reason == "judge: rude tone"
    v = verify(t, {}, {}, [], "so sorry", steps=1, errors=0, judge=judge)
    assert v.success and v.criteria[0].reason == "judge: polite"
    assert not verify(t, {}, {}, [], "no apology", steps=1, errors=0, judge=judge).success
    assert seen == ["Does it apologise politely?"] * 2  # never asked when the check fails

    def broken(rubric, text, value):
        raise RuntimeError("endpoint down")

    v = verify(t, {}, {}, [], "so sorry", steps=1, errors=0, judge=broken)
    assert not v.success and "endpoint down" in v.criteria[0].reason


def test_check_trace_reads_the_finish_value():
    step = Step(
        index=0,
        action=ToolCall(name="finish", arguments={"answer": "The meeting moved.", "value": "16:00"}),
        feedback=Feedback(ok=True, result={"finished": True}),
        clock="2026-11-29T09:00:01",
        backend="sandbox",
    )
    trace = Trace(task_id="t/0", seed=0, backend="sandbox", category="tool", domain="time", goal="?", steps=[step])
    assert check_trace(trace, [AnswerCriterion(type="time", value="16:00")])[0].passed
    assert not check_trace(trace, [AnswerCriterion(type="time", value="14:00")])[0].passed
    step.action.arguments["value"] = "tomorrow"
    assert check_trace(trace, [AnswerCriterion(type="date", value="2026-11-30")])[0].passed


def _unread_env():
    (t,) = select("messages.unread_count/0")
    env = PhonePlanEnv(task=t)
    env.reset(seed=0)
    for c in t.reference_plan[:-1]:  # everything but the final answer: list, then mark read
        env.step(c.model_dump())
    n = next(c for c in t.criteria if isinstance(c, AnswerCriterion)).value
    return env, int(n), t


def _finish(env, **args):
    _, reward, terminated, _, info = env.step({"name": "finish", "arguments": args})
    assert terminated
    return info["verdict"]


def test_finish_value_through_the_env():
    env, n, t = _unread_env()
    names = t.reference_plan[-1].arguments["answer"].split("from ", 1)[1]
    verdict = _finish(env, answer=f"{n} unread, from {names}", value=n)
    assert verdict["success"] and verdict["answer_value"] == n
    env, n, _ = _unread_env()
    verdict = _finish(env, answer=f"{n} unread, from {names}", value=n + 1)  # value contradicts the text
    assert not verdict["success"]
    env, n, _ = _unread_env()
    verdict = _finish(env, answer=f"unread ones are from {names}", value=n)
    assert verdict["success"]
    env, n, _ = _unread_env()
    obs, _, terminated, _, _ = env.step({"name": "finish", "arguments": {"answer": "x", "value": {"n": n}}})
    assert not terminated and json.loads(obs["feedback"])["error"] == "invalid_arguments"


def test_unread_count_paraphrases_of_every_task():
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    for t in select("template:messages.unread_count"):
        crit = next(c for c in t.criteria if isinstance(c, AnswerCriterion))
        n = int(crit.value)
        ctx = Context(contacts=tuple(t.fixtures.records["contacts.contacts"]), now=t.fixtures.clock)
        names = t.reference_plan[-1].arguments["answer"].split("from ", 1)[1].rstrip(".")
        phone = t.fixtures.records["contacts.contacts"][0]["phone"]
        right = [
            f"You have {words[n]} unread messages, from {names}.",
            f"You have {n} unread messages: 1 from {names}.",
            f"{names} (the first one {phone}): {n} unread texts.",
            f"Since 2026-11-28 you got {n} unread messages from {names}.",
        ]
        wrong = [
            f"{n} or {n + 1} unread messages from {names}.",
            f"Not {n} — you have {n + 2} unread messages from {names}.",
            f"{n + 1} unread, from {names}.",
        ]
        assert all(check_answer(crit, a, None, ctx)[0] for a in right), t.id
        assert not any(check_answer(crit, a, None, ctx)[0] for a in wrong), t.id


def test_finish_schema_offers_the_typed_value():
    env, _, _ = _unread_env()
    spec = next(s for s in env.tool_specs if s.name == "finish")
    types = {a.get("type") for a in spec.parameters["properties"]["value"]["anyOf"]}
    assert {"string", "number", "integer", "boolean", "array", "null"} <= types


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_WORDS = st.lists(
    st.sampled_from(
        ["3", "three", "4 pm", "16:00", "not", "or", "Ana", "Ben", "+49 151 2345 6789", "2026-11-30", "tomorrow",
         "€45,90", "1.250,00", "#4821", "an hour", "and a half", "no", "yes", ",", "on the 31st", "Feb 30", "99:99",
         "quarter to 0", "13 pm", "0 o'clock", "1e308", "٣", "\u00a0", "maybe"]
    ) | st.text(max_size=8),
    max_size=12,
).map(" ".join)  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(text=st.none() | _WORDS, given_value=_JSON)
def test_check_answer_never_raises(text, given_value):
    for crit in (
        {"number": 3, "unit": "message"},
        {"type": "time", "value": "16:00"},
        {"type": "date", "value": "2026-11-30"},
        {"type": "duration", "value": 5400},
        {"type": "money", "value": 45.9, "currency": "EUR"},
        {"type": "contacts", "value": ["c_1", "c_2"]},
        {"type": "items", "value": ["milk"]},
        {"type": "yes_no", "value": False},
    ):
        passed, why = check_answer(AnswerCriterion(**crit), text, given_value, CTX)
        assert isinstance(passed, bool) and (passed or why)


def test_env_reads_relative_dates_against_the_phone_clock():
    t = _task(type="date", value="2026-11-30")  # fixtures' clock: 2026-11-29T09:00:00
    env = PhonePlanEnv(task=t)
    env.reset(seed=0)
    assert _finish(env, answer="It is tomorrow.")["success"]
    env.reset(seed=0)
    assert not _finish(env, answer="It is today.")["success"]


def test_one_typed_value_goes_to_the_criteria_of_its_type():
    """ "How many unread texts, and from whom?": a number value is checked as the count, the
    senders are read from the text; a value no criterion can read fails the typed ones."""
    ctx_contacts = {c["id"]: c for c in BOOK}
    task = TaskSpec(
        id="t/0",
        domain="communication",
        goal="How many unread texts, and from whom?",
        criteria=[
            AnswerCriterion(id="count", type="number", value=2),
            AnswerCriterion(id="who", type="contacts", value=["c_2", "c_3"]),
        ],
    )
    tables = {"contacts.contacts": ctx_contacts}
    first, third = "Ben", "Carla Diaz"

    def run(text, value):
        return verify(task, tables, tables, [], text, steps=1, errors=0, answer_value=value)

    assert run(f"Two, from {first} and {third}.", 2).success
    assert run(f"From {first} and {third}.", 2).success  # the count only as the value
    v = run(f"Two, from {first} and {third}.", 3)  # the value contradicts the count
    assert [c.id for c in v.criteria if not c.passed] == ["count"]
    v = run("Two of them.", [first, third])  # the people as the value, the count in words
    assert v.success, v.criteria
    v = run(f"Two, from {first} and {third}.", {"x": 1})  # no criterion reads it: both fail
    assert [c.id for c in v.criteria if not c.passed] == ["count", "who"]


def test_items_after_a_label():
    crit = AnswerCriterion(type="items", value=["Arrival", "Heat", "Paddington"])
    ctx = Context()
    assert check_answer(crit, "Movies to watch: Arrival, Heat, Paddington", None, ctx)[0]
    assert check_answer(crit, "Arrival: Heat and Paddington", None, ctx)[0]  # the colon after an item
    assert not check_answer(crit, "Movies to watch: Arrival, Heat", None, ctx)[0]
    assert not check_answer(crit, "Movies: Arrival, Heat, Paddington and Dune", None, ctx)[0]


@pytest.mark.parametrize(
    ("text", "facts", "expected"),
    [
        ("Moved to 4 pm", {"date": "2026-11-30"}, True),  # no date stated: nothing contradicted
        ("Moved to Monday 30 November at 16:00", {"date": "2026-11-30"}, True),
        ("Moved to Tuesday at 4 pm", {"date": "2026-11-30"}, False),
        ("Moved to 1 December, not 30 November", {"date": "2026-11-30"}, False),
        ("Moved to 30 November, not 1 December", {"date": "2026-11-30"}, True),  # the denied value is no claim
        ("See you at 16:00 or 17:00", {"time": "16:00"}, False),
    ],
)
def test_consistent_facts(text, facts, expected):
    assert match({"body": text}, {"body": {"consistent": facts}}, CTX) is expected


@pytest.mark.parametrize(
    ("text", "facts", "stated"),
    [
        # a negated verb before a time or date denies it, unless the negation keeps the time
        ("My train won't get in at 16:00", {"time": "16:00"}, False),
        ("I'm not arriving at 16:00 but at 17:00", {"time": "16:00"}, False),
        ("It isn't moving on Monday 30 November", {"date": "2026-11-30"}, False),
        ("I won't be in until 16:00", {"time": "16:00"}, True),
        ("Don't forget dinner at 16:00", {"time": "16:00"}, True),
        ("Don't miss the 16:00 train", {"time": "16:00"}, True),
        ("If I'm not delayed I get in at 16:00", {"time": "16:00"}, True),
        ("You don't have anything on Monday 30 November", {"date": "2026-11-30"}, True),
    ],
)
def test_a_negated_verb_denies_the_time_after_it(text, facts, stated):
    assert match({"body": text}, {"body": {"states": facts}}, CTX) is stated


@pytest.mark.parametrize(
    ("text", "phone", "dates"),
    [
        ("Moved to 09/11 at 16:00", "+447783783071", ["2026-11-09"]),  # a UK world: day first
        ("Moved to 11/9 at 16:00", "+12025550143", ["2026-11-09"]),  # a US world: month first
        ("See you Monday 30/11", "+4915123456789", ["2026-11-30"]),
        ("3/4 of them came", "+447783783071", []),  # a fraction, no date
    ],
)
def test_numeric_dates_without_a_year_follow_the_worlds_locale(text, phone, dates):
    ctx = Context(
        contacts=({"id": "c_1", "name": "Ana Lima", "phone": phone, "email": None},), now="2026-11-05T09:00:00"
    )
    assert extract_claims(text, "date", ctx) == dates


@pytest.mark.parametrize(
    ("text", "times"),
    [
        ("It's 6 in the morning in Sao Paulo", ["06:00"]),
        ("4:15 in the afternoon", ["16:15"]),
        ("11 at night", ["23:00"]),
        ("2 at night", ["02:00"]),
        ("19:30 in the evening", ["19:30"]),
        ("6 o'clock in the evening", ["18:00"]),
        ("at 12 at night", ["00:00"]),
        ("6 in the box", []),
    ],
)
def test_a_time_with_its_part_of_the_day(text, times):
    assert extract_claims(text, "time", CTX) == times


def test_patterns_and_answers_read_a_part_of_the_day_alike():
    """Every hour said with its part of the day (``clock.day_part``) is the time both to the
    answer reader and to ``clock.time_pattern``; the other half of the day is neither."""
    from apps.clock.templates import day_part, time_pattern

    for hour in range(24):
        for minute in (0, 15):
            said, other = day_part(hour, minute), day_part((hour + 12) % 24, minute)
            assert extract_claims(said, "time", CTX) == [f"{hour:02d}:{minute:02d}"], said
            assert re.search(time_pattern(hour, minute), said, re.I), said
            assert not re.search(time_pattern(hour, minute), other, re.I), (hour, other)


def test_a_yes_no_answer_sets_aside_clauses_about_other_subjects():
    crit = AnswerCriterion(type="yes_no", value=True, context=["size 40", "size 41"])
    for text in ("Size 39 is in stock, though size 40 isn't.", "Yes! Size 41 is sold out but 39 is in stock"):
        assert check_answer(crit, text, None, CTX)[0], text
    for text in ("Size 39 is sold out, but size 40 is in stock.", "Size 40 is in stock.", "Maybe, size 40 is"):
        assert not check_answer(crit, text, None, CTX)[0], text
    # without the other subjects named, the clauses contradict each other
    plain_crit = AnswerCriterion(type="yes_no", value=True)
    assert not check_answer(plain_crit, "Size 39 is in stock, though size 40 isn't.", None, CTX)[0]
    with pytest.raises(ValidationError, match="phrases"):
        AnswerCriterion(type="yes_no", value=True, context=[40])


def test_a_context_value_given_as_a_correction_is_the_answer_corrected():
    crit = AnswerCriterion(type="number", value=4, context=[3])  # 4 unread texts, from 3 people
    for text in ("4 unread, from 3 people", "4 unread (3 from Ana)", "4 unread texts, actually from 3 people"):
        assert check_answer(crit, text, None, CTX)[0], text
    for text in ("You have 4 unread texts. Correction: it's 3", "4 unread. Sorry, I meant 3", "4 unread. Actually, 3"):
        assert not check_answer(crit, text, None, CTX)[0], text


def test_an_optional_answer_need_not_state_the_value_but_must_not_state_another():
    crit = AnswerCriterion(type="time", value="08:00", context=["09:30"], optional=True)
    for text in ("Reminder set.", "Reminder set for 8 am.", "Set for 08:00, before your 09:30 meeting", "Before 9:30"):
        assert check_answer(crit, text, None, CTX)[0], text
    for text in ("Reminder set for 9:00.", "Set for 8:00 or 8:30", "Set for 7 am"):
        assert not check_answer(crit, text, None, CTX)[0], text
    money = AnswerCriterion(type="money", value=35.36, currency="USD", context=[70.72], optional=True)
    assert check_answer(money, "Asked both for their share.", None, CTX)[0]
    assert check_answer(money, "Split the 70.72 USD bill: 35.36 USD each.", None, CTX)[0]
    assert not check_answer(money, "Asked them for 40.00 USD each.", None, CTX)[0]


def test_each_end_of_a_range_is_the_answer_or_a_context_value():
    """With the end known as context, "16:00-18:00" tells a wrong end; without context a range
    is one claim of either end (the end is not judged)."""
    crit = AnswerCriterion(type="time", value="16:00", context=["17:00"])
    for text in ("Now 16:00-17:00.", "From 4 pm to 5 pm", "At 16:00 until 17:00", "16:00", "Moved from 14:00 to 16:00"):
        assert check_answer(crit, text, None, CTX)[0], text
    for text in ("Now 16:00-18:00.", "From 4 pm to 6 pm", "At 16:00 until 18:00", "15:00-17:00"):
        assert not check_answer(crit, text, None, CTX)[0], text
    assert check_answer(AnswerCriterion(type="time", value="16:00"), "Now 16:00-18:00.", None, CTX)[0]
    # the answer may be the far end, the start a context value
    closes = AnswerCriterion(type="time", value="17:00", context=["09:00"])
    assert check_answer(closes, "Open 9:00-17:00 today", None, CTX)[0]
    assert not check_answer(closes, "Open 8:00-17:00 today", None, CTX)[0]


def test_a_context_time_may_be_told_roughly_or_as_a_bound_that_holds():
    """A film from 20:30 to 22:17: "out by 23:00" and "around 22:15" tell the end right; an end
    said as exact and wrong, a bound that does not hold, or a rough end far off do not."""
    crit = AnswerCriterion(type="time", value="20:30", context=["22:17"])
    for text in ("Starts 20:30, out by 23:00", "Starts 20:30, ends around 22:15", "20:30 start, done ~22:20"):
        assert check_answer(crit, text, None, CTX)[0], text
    for text in (
        "Starts 20:30, ends at 22:15",
        "Starts 20:30, out by 22:00",
        "Starts 20:30, ends around 23:00",
        "Starts by 21:00",
    ):
        assert not check_answer(crit, text, None, CTX)[0], text
    late = AnswerCriterion(type="time", value="21:00", context=["23:17"])
    assert check_answer(late, "Starts 21:00, out by midnight", None, CTX)[0]
    assert not check_answer(late, "Starts 21:00, out by 22:00", None, CTX)[0]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("Reminders at 30 minutes and 10 minutes before.", [1800, 600]),  # a unit that does not fall: two
        ("Alerts 1 day before and 2 hours before", [86400, 7200]),
        ("It takes 1 hour and 30 minutes", [5400]),  # falling units: one
        ("2 hours, 15 minutes", [8100]),
        ("an hour and a half", [5400]),
        ("Leave half an hour before", [1800]),  # a lead time is a duration
        ("She called 2 hours ago", []),  # a moment
    ],
)
def test_durations_in_a_row_are_one_only_in_falling_units(text, seconds):
    assert extract_claims(text, "duration", CTX) == seconds


def test_an_acknowledgement_before_the_answer_is_no_yes():
    crit = AnswerCriterion(type="yes_no", value=False)
    for text in (
        "Sure! The trail shoes are sold out.",
        "Of course. No, it's not in stock.",
        "Okay - they don't have it",
    ):
        assert check_answer(crit, text, None, CTX)[0], text
    yes = AnswerCriterion(type="yes_no", value=True)
    assert check_answer(yes, "Sure.", None, CTX)[0]  # alone, it is the answer
    assert not check_answer(yes, "Sure! It's sold out.", None, CTX)[0]


def test_a_time_relayed_from_a_voicemail_may_take_any_form_but_not_be_denied():
    from phoneenv.tasks.templates.fields import relayed

    crit = relayed("16:00")
    for text in ("The plumber comes Thursday at 4 pm.", "Thursday, 16:00", "at four in the afternoon"):
        assert check_answer(crit, text, None, CTX)[0], text
    for text in ("It's not about 16:00 any more.", "Thursday at 6 pm", "Thursday"):
        assert not check_answer(crit, text, None, CTX)[0], text
    assert check_answer(relayed("bakery"), "The keys are at the bakery.", None, CTX)[0]


def test_a_flight_or_train_number_is_no_amount():
    money = AnswerCriterion(type="money", value=949.48, currency="EUR", optional=True)
    assert check_answer(money, "Booked SK 139, Hotel Lux and SK 896.", None, CTX)[0]
    assert check_answer(money, "Booked ICE 578 and U2 123; 949.48 EUR in all.", None, CTX)[0]
    assert not check_answer(money, "Booked SK 139; 1049.48 EUR in all.", None, CTX)[0]
    assert extract_claims("Total: EUR 139", "money", CTX) == [139.0]  # a currency code is no carrier


def test_a_count_of_things_is_no_amount_beside_it():
    crit = AnswerCriterion(type="number", value=2, unit="salmon|maki", optional=True)
    assert check_answer(crit, "Ordered Salmon Maki from Sushi Yama, 2400 JPY in total.", None, CTX)[0]
    assert check_answer(crit, "Ordered 2 Salmon Maki, 2400 JPY in total.", None, CTX)[0]
    assert not check_answer(crit, "Ordered 3 Salmon Maki, 2400 JPY in total.", None, CTX)[0]
    assert not check_answer(crit, "Ordered 3 of them.", None, CTX)[0]  # a bare number is still read


def test_a_time_before_a_colon_is_that_time():
    assert extract_claims("Leave at 12:01: it's 14 minutes.", "time", CTX) == ["12:01"]
    assert extract_claims("At 07:45:30 sharp", "time", CTX) == ["07:45"]  # seconds


def test_dictates_allows_a_greeting_and_nothing_added():
    from phoneenv.tasks.predicates import dictates

    def named(w: str) -> bool:
        return w == "sam"

    said = "I'm running about 15 minutes late"
    for body in (
        "Hi Sam! I'm running about 15 mins late, see you soon x",
        "Hey, I am running about fifteen minutes late. Thanks!",
        "i'm running about 15 minutes late 🙏",
        "Running about 15 min late, sorry!",  # the subject left out, an apology
        "Sorry, I'm running about 15 minutes late",
    ):
        assert dictates(body, said, named), body
    for body in (
        "On my way home, talk soon. Cheers!",
        "On my way home, talk soon x",
        "On my way home, talk soon. Thanks!",
    ):
        assert dictates(body, "On my way home, talk soon"), body  # a sign-off after a dictated sign-off
    assert dictates("On my way home. Best,\nOskar", "On my way home")  # a sign-off and the writer's name
    assert dictates("On my way home.\n\nTeresa", "On my way home")  # a mail signed with a first name alone
    assert not dictates("On my way home.\n\nSaturday", "On my way home")  # an added word on the last line
    assert dictates("Could you bring the charger tonight?", "Can you bring the charger tonight?")
    assert dictates("The viewing is on Thursday at 6:00.", "The viewing is on Thursday at 6.")
    assert not dictates("The viewing is on Thursday at 6:30.", "The viewing is on Thursday at 6.")
    assert not dictates("Not running about 15 minutes late", said)
    for body in (
        "I'm running about 15 minutes late. Unfortunately I can't make Saturday though.",
        "I'm running about 15 minutes late, start without me",
        "I'm running about 15 minutes late, there by 9",
        "Hi Bob, I'm running about 15 minutes late",  # a name that is no contact's
        "I'm running about 50 minutes late",
        "I'm not running about 15 minutes late",
    ):
        assert not dictates(body, said, named), body


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("Dubai: 13:00, Sao Paulo: 06:00", True),
        ("In Sao Paulo it's six in the morning and in Dubai it's 1 pm.", True),
        ("It's 1 pm in Dubai while Sao Paulo is at 6 am", True),
        ("Dubai is at five past one? No: one o'clock in the afternoon", False),  # two times told for Dubai
        ("Dubai: 13:00 or 14:00, Sao Paulo: 06:00", False),  # a hedge
        ("Dubai: 06:00, Sao Paulo: 13:00", False),  # the times swapped
        ("8 am here (Dubai: 1 pm)", True),  # Dubai's own bracket
        ("Sao Paulo (06:00) and Dubai (13:00)", True),
        ("Dubai is 8 am here (1 pm)", False),  # two times in Dubai's part
        ("13:00 and 06:00", False),  # Dubai named nowhere
    ],
)
def test_a_typed_answer_about_a_place_reads_that_place_s_part(text, ok):
    from phoneenv.tasks.answers import check_answer
    from phoneenv.tasks.predicates import Context

    crit = AnswerCriterion(type="time", value="13:00", about="Dubai")
    assert check_answer(crit, text, None, Context(now="2026-11-20T09:00:00"))[0] is ok, text


def test_about_needs_a_typed_check():
    with pytest.raises(ValidationError, match="about="):
        AnswerCriterion(contains=["Dubai"], about="Dubai")


def test_a_low_chance_does_not_state_the_thing():
    assert not says("Fog, only a 16% chance of rain", "rain")
    assert not says("a 20 percent chance of showers later", "showers")
    assert says("an 80% chance of rain", "rain")  # likely: stated
    assert says("Rain, 16% chance of it clearing", "rain")  # the chance is of something else


def test_a_person_may_be_named_by_title_and_surname():
    from phoneenv.tasks.identity import ContactBook, contact_ids, mentioned_contacts

    people = [
        {"id": "c1", "name": "Tom Baxter", "phone": "+4915100000001"},
        {"id": "c2", "name": "Ana Baxter"},
        {"id": "c3", "name": "Lea Braun"},
    ]
    book = ContactBook({c["id"]: c for c in people})
    for contacts in (people, book):
        assert contact_ids("Ms Braun", contacts) == {"c3"}
        assert contact_ids("Dr. Braun", contacts) == {"c3"}
        assert contact_ids("Mr Baxter", contacts) == {"c1", "c2"}  # two Baxters: ambiguous
        assert contact_ids("Braun", contacts) == set()  # a surname alone is no name
        assert mentioned_contacts("I called Ms Braun and Tom", contacts) == [{"c3"}, {"c1"}]


@pytest.mark.parametrize(
    ("crit", "text", "ok"),
    [
        ({"type": "contact", "value": "c1"}, "Iris Lang, and next is Lea Braun", True),
        ({"type": "contact", "value": "c1"}, "Lea Braun, and next is Iris Lang", False),  # the order told wrong
        ({"type": "contact", "value": "c1"}, "Iris Lang or Lea Braun", False),
        ({"type": "date", "value": "2026-11-27"}, "Due Friday 27 November; last scanned on 24 November", True),
        ({"type": "date", "value": "2026-11-27"}, "Due 24 November; next scan 27 November", False),
        ({"type": "date", "value": "2026-11-27"}, "Due 27 November, or maybe 28 November", False),  # a hedge
        ({"type": "time", "value": "16:00"}, "It is at 16:00, then maybe 17:00", False),
        ({"type": "time", "value": "16:00"}, "At 16:00; previously it was at 14:00", True),
        ({"type": "money", "value": 69.76}, "Paid €69.76. Your balance is now €1,619.78.", True),
        ({"type": "money", "value": 69.76}, "Paid €1,619.78. Your balance is now €69.76.", False),
        # a duration told roughly beside the exact one, or alone within 10 % or 5 minutes
        ({"type": "duration", "value": 840}, "Roughly a quarter of an hour - 14 minutes by car.", True),
        ({"type": "duration", "value": 840}, "About 15 minutes by car.", True),
        ({"type": "duration", "value": 840}, "About 25 minutes by car.", False),
        ({"type": "duration", "value": 840}, "About 10 minutes by car.", False),  # 14 rounds to 15, not 10
        ({"type": "duration", "value": 540}, "About 14 minutes.", False),  # 14 is no rounding of 9
        ({"type": "duration", "value": 3300}, "About an hour.", True),
        ({"type": "duration", "value": 1860}, "About an hour.", False),
        ({"type": "duration", "value": 840}, "Roughly half an hour - 14 minutes by car.", False),
        ({"type": "duration", "value": 840}, "Not about 14 minutes.", False),
    ],
)
def test_another_fact_told_as_context_is_not_a_second_answer(crit, text, ok):
    from phoneenv.tasks.predicates import Context

    people = [{"id": "c1", "name": "Iris Lang"}, {"id": "c3", "name": "Lea Braun"}]
    ctx = Context(now="2026-11-20T09:00:00", contacts=people)
    assert check_answer(AnswerCriterion(**crit), text, None, ctx)[0] is ok, text


@pytest.mark.parametrize(
    ("text", "crit", "expected"),
    [
        # a 12-hour time without its half of the day reads as either half ("by 1:15")
        ("Be there by 1:15.", {"type": "time", "value": "13:15"}, True),
        ("Be there by 1:15.", {"type": "time", "value": "01:15"}, True),
        ("Be there by 01:15.", {"type": "time", "value": "13:15"}, False),  # zero-padded: the 24-hour clock
        ("Be there by 2:15.", {"type": "time", "value": "13:15"}, False),
        ("Head out at one minute to one tomorrow afternoon.", {"type": "time", "value": "12:59"}, True),
        # the dots of "p.m." do not end the part of the answer about a place
        ("Dubai: 1:00 p.m.; Sao Paulo: 6:00 a.m.", {"type": "time", "value": "13:00", "about": "Dubai"}, True),
        ("Dubai: 1:00 a.m.; Sao Paulo: 6:00 p.m.", {"type": "time", "value": "13:00", "about": "Dubai"}, False),
    ],
)
def test_twelve_hour_times_read_in_either_half_of_the_day_unless_said(text, crit, expected):
    assert ok(text, **crit) is expected


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("half past midnight here", [("time", "00:30", ())]),
        ("ten past midnight", [("time", "00:10", ())]),
        ("quarter to noon", [("time", "11:45", ())]),
        ("everything's off and the heating's at eighteen", [("number", 18.0, ())]),  # no hour
        ("the thermostat is now at 20", [("number", 20.0, ())]),
        ("meet at 18.", [("time", "18:00", ()), ("number", 18.0, ())]),
        # a bare weekday is that weekday this week or the next two; "next Thursday" is one day
        ("arrives on Thursday", [("date", "2026-11-12", ("2026-11-19", "2026-11-26"))]),
        ("next Thursday", [("date", "2026-11-12", ())]),
        ("Two September birthdays", [("number", 2.0, ())]),  # a count of things of a month
        ("on 2 September flights leave", [("date", "2026-09-02", ())]),
    ],
)
def test_spoken_times_temperatures_weekdays_and_counted_months(text, found):
    from phoneenv.tasks.answers import scan_cached

    sc = scan_cached(text, "2026-11-08T08:00", "")
    assert [(c.type, c.value, c.alts) for c in sc.claims] == found


@pytest.mark.parametrize(
    ("text", "type", "claims"),
    [
        # "half seven" is 7:30 in British English, in the half of the day said, else either
        ("See you at half seven in the evening", "time", ["19:30"]),
        ("Table's at half 8 pm", "time", ["20:30"]),
        ("Meet at half seven", "time", ["07:30"]),
        ("It's half past seven", "time", ["07:30"]),
        ("It takes half an hour", "time", []),
        # a fraction of an hour, and seconds written apart from their digits
        ("Dinner in three quarters of an hour", "duration", [2700]),
        ("Dinner in three-quarters of an hour", "duration", [2700]),
        ("a quarter of an hour", "duration", [900]),
        ("the video (1 min 42 s) was left out", "duration", [102]),
        ("800 m from here", "duration", []),
        # a number that counts things is no amount in the expected currency
        ("four nights at the Harbour View Inn", "money", []),
        ("2 tickets for 30", "money", [30.0]),
        ("You have 16,066 left", "money", [16066.0]),
        # "at twenty-one and a half degrees" is a temperature, not a time
        ("topping out at twenty-one and a half degrees", "time", []),
        ("back at 7 and a half hours later", "time", []),
        # a number spelled digit by digit is its digits; a time so spelled stays a time
        ("Locker six-six-three.", "number", [663.0]),
        ("four-oh-nine in the afternoon", "time", ["16:09"]),
        ("a two-for-one deal", "number", []),
    ],
)
def test_readers_of_british_times_fractions_of_an_hour_and_counted_things(text, type, claims):
    values = extract_claims(text, type, CTX)
    assert values == claims, (text, values)


@pytest.mark.parametrize(
    ("task_id", "criterion", "text", "ok"),
    [
        # "vs." does not end the words that lead a value: the other offers are context
        (
            "subagent.best_offer_reply/0",
            "answer_money",
            "Marc's offer was the cheapest: $610 (vs. $680 from Wendy and $720 from your dad).",
            True,
        ),
        ("subagent.best_offer_reply/0", "answer_money", "The cheapest is $610 or $680.", False),
        # a balance after the payment and the other slots someone offered are other facts
        (
            "subagent.pay_chosen_bill/0",
            "answer_money",
            "Paid the Electricity November bill, 69.76 EUR. Your main account now has 1,619.78 EUR.",
            True,
        ),
        (
            "subagent.group_table/0",
            "answer_time",
            "Sunday 29 November at 19:30 was the only slot on both lists (Katherine also offered Fri 27 at 20:00), so Spice Route is booked.",
            True,
        ),
        ("subagent.group_table/0", "answer_time", "Spice Route is booked for Sunday at 19:30 or 20:00.", False),
        # a sentence, a part after a semicolon or a bracket of its own subject that tells no
        # answer is another fact (for the grounded check); one that points back, hedges or corrects is not
        (
            "subagent.todo_from_texts/0",
            "answer_number",
            "Done - three new errands: parcel pickup, car service booking and sending the flat photos. "
            "Errands now has 4 open items.",
            True,
        ),
        ("subagent.todo_from_texts/0", "answer_number", "Done - three new errands. Or maybe 4.", False),
        ("subagent.todo_from_texts/0", "answer_number", "Done - three new errands. Actually 4.", False),
        ("subagent.todo_from_texts/0", "answer_number", "Added 3 new errands, 4 in all.", False),
        (
            "cross.alarm_before_first_event/0",
            "answer_time",
            "Alarm set for half past eight tomorrow morning, 30 minutes before your 9:00 swimming lesson. "
            "(Later in the day you've got a haircut at 3 pm.)",
            True,
        ),
        ("cross.alarm_before_first_event/0", "answer_time", "Alarm set for 8:30 tomorrow. It rings at 15:00.", False),
    ],
)
def test_other_facts_beside_the_answer(task_id, criterion, text, ok):
    from phoneenv.tasks import get_task

    crit = next(c for c in get_task(task_id).criteria if c.id == criterion)
    assert check_answer(crit, text, None, Context(now="2026-11-22T10:00:00"))[0] is ok, text
