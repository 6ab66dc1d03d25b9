"""Nearest tool names for an unknown tool: at least as good as difflib's ratio over every name on
a corpus of typos of the suite's tools, built once per tool list, and bounded in its input."""

from __future__ import annotations

import difflib
import json
import random
import string

import pytest

from phoneenv.env import PhonePlanEnv
from phoneenv.tools import nearest_tools


@pytest.fixture(scope="module")
def specs():
    env = PhonePlanEnv(task="contacts.favorite/0", delegation=True)
    env.reset(seed=0)
    return env.tool_specs


def difflib_nearest(name, specs, n=3):
    """The suggestion rule nearest_tools replaced: difflib over every name, then the app prefix."""
    names = [s.name for s in specs]
    name = name[:100].lower()
    near = difflib.get_close_matches(name, names, n=n, cutoff=0.5)
    if near:
        return near
    apps = sorted({s.app for s in specs})
    close_app = difflib.get_close_matches(name.split(".", 1)[0], apps, n=1, cutoff=0.6)
    return [s.name for s in specs if s.app == close_app[0]][:n] if close_app else []


def typo(name: str, rng: random.Random) -> str:
    i = rng.randrange(len(name))
    c = rng.choice(string.ascii_lowercase)
    kind = rng.choice(["delete", "insert", "substitute", "swap", "separator", "case"])
    if kind == "delete":
        return name[:i] + name[i + 1 :]
    if kind == "insert":
        return name[:i] + c + name[i:]
    if kind == "substitute":
        return name[:i] + c + name[i + 1 :]
    if kind == "swap" and i < len(name) - 1:
        return name[:i] + name[i + 1] + name[i] + name[i + 2 :]
    if kind == "separator":
        return name.replace(".", rng.choice(["_", " ", "/", "-", ""]))
    return name.title()


def test_typos_find_their_tool_at_least_as_often_as_difflib(specs):
    rng = random.Random(15)
    corpus = [(t, s.name) for s in specs for _ in range(2) if (t := typo(s.name, rng)) != s.name]
    assert len(corpus) > 400
    scores = {}
    for label, fn in (("new", nearest_tools), ("difflib", difflib_nearest)):
        results = [(fn(t, specs), want) for t, want in corpus]
        scores[label] = (
            sum(bool(r) and r[0] == want for r, want in results) / len(results),
            sum(want in r for r, want in results) / len(results),
        )
    (first, top3), (old_first, old_top3) = scores["new"], scores["difflib"]
    assert first >= old_first and top3 >= old_top3, scores
    assert first > 0.97 and top3 > 0.99, scores


@pytest.mark.parametrize(
    ("name", "first"),
    [
        ("messages.snd", "messages.send"),
        ("mesages.send", "messages.send"),
        ("contacts.gte", "contacts.get"),
        ("Contacts.Get", "contacts.get"),
        ("contacts_get", "contacts.get"),
        ("messages.send_message", "messages.send"),
        ("clock.create_alarms", "clock.create_alarm"),
    ],
)
def test_common_mistakes(specs, name, first):
    assert nearest_tools(name, specs)[0] == first


def test_unrelated_names_get_nothing_or_their_apps_tools(specs):
    assert nearest_tools("qqqq", specs) == []
    assert nearest_tools("zzqx.frob", specs) == []
    near = nearest_tools("calender.zzzzzzzzzzzz", specs)
    assert len(near) == 3 and all(n.startswith("calendar.") for n in near)
    assert len(nearest_tools("qqqq", specs, cutoff=0.0)) == 3  # cutoff 0 always fills n


def test_the_index_follows_the_list_it_is_given(specs):
    few = [s for s in specs if s.app == "contacts"]
    assert nearest_tools("messages.snd", few) != nearest_tools("messages.snd", specs)
    mutable = list(few)
    assert nearest_tools("contacts.gte", mutable)[0] == "contacts.get"
    mutable[:] = [s for s in specs if s.app == "messages"]  # same list object, new content
    assert nearest_tools("contacts.gte", mutable) == [] or nearest_tools("contacts.gte", mutable)[0].startswith(
        "messages."
    )
    assert nearest_tools("messages.snd", mutable)[0] == "messages.send"


def test_a_huge_unknown_name_is_bounded(specs):
    # The intake caps a name's length; the suggestions compare its first 100 characters only.
    assert nearest_tools("contacts.gte" + "x" * 1_000_000, specs) == nearest_tools("contacts.gte" + "x" * 88, specs)


def test_the_env_suggests_from_the_active_frame(specs):
    env = PhonePlanEnv(task="contacts.favorite/0", delegation=True)
    env.reset(seed=0)
    fb = json.loads(env.step('{"name": "contacts.gte", "arguments": {}}')[0]["feedback"])
    assert fb["error"] == "unknown_tool" and fb["candidates"][0] == "contacts.get"
    assert fb["hint"].startswith("did you mean contacts.get?")
    env.step({"name": "agent.delegate", "arguments": {"goal": "g", "tools": ["contacts.search", "contacts.list"]}})
    fb = json.loads(env.step('{"name": "contacts.gte", "arguments": {}}')[0]["feedback"])
    assert fb["error"] == "unknown_tool" and "contacts.get" not in fb["candidates"]
    fb = json.loads(env.step('{"name": "contacts.get", "arguments": {"contact_id": "c_1"}}')[0]["feedback"])
    assert fb["error"] == "precondition_failed" and len(fb["candidates"]) == 3
    assert set(fb["candidates"]) == {"contacts.search", "contacts.list", "finish"}


def test_a_repeated_name_gets_the_same_answer_as_a_list_of_its_own(specs):
    """Answers are kept per query (a planner repeats its wrong names): the second call gives
    what the first did, each as a new list, so a caller changing one changes no later answer."""
    for query in ["contacts.gett", "mesages.send", "clok.create_alarm", "zzz", "Contacts.Get"]:
        first = nearest_tools(query, specs)
        again = nearest_tools(query, specs)
        assert again == first and again is not first
        first.append("changed")
        assert "changed" not in nearest_tools(query, specs)
    assert nearest_tools("contacts.gett", specs, n=1) == ["contacts.get"]


def test_the_byte_lane_scores_rank_as_the_matrix_does(specs):
    """The index answers a cutoff above 0 by adding one integer per bigram (a byte per name)
    and scoring only the names that reach the cutoff; the bigram matrix scores every name. Both
    must give the same names in the same order, for typos, random strings, names far longer
    than any tool's, and every cutoff."""
    from phoneenv.tools import _index_of

    _, index, app_index, _ = _index_of(specs)
    rng = random.Random(11)
    names = [s.name for s in specs]
    queries = [typo(rng.choice(names), rng).lower() for _ in range(1500)]
    queries += [
        "".join(rng.choice(string.ascii_lowercase + "._") for _ in range(rng.randrange(0, 40))) for _ in range(500)
    ]
    queries += ["", "a", "contacts.", "x" * 100, "".join(names)[:100], "messages.send" * 7]
    for ix in (index, app_index):
        for q in queries:
            for cutoff in (0.01, 0.3, 0.5, 0.6, 0.75, 1.0):
                assert ix._best(q, 3, cutoff) == ix._dense(q, 3, cutoff), (q, cutoff)
                assert ix._best(q, 50, cutoff) == ix._dense(q, 50, cutoff), (q, cutoff)
