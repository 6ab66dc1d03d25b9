"""The travel, maps and weather tasks: their share of the suite, the skills they name, and their
proofs by execution (reference plan, no-op, perturbations, probes)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from phoneenv.contract import Category, Domain, TaskSpec
from phoneenv.tasks import load_suite
from phoneenv.tasks.validate import prove_suite

ROOT = Path(__file__).resolve().parents[1]
PREFIXES = ("travel.", "maps.", "weather.", "travel_memory.", "travel_skills.", "travel_subagent.")
# skill template -> (skill, text only the skill's body gives away)
SKILLS = {
    "travel_skills.trip_in_calendar": ("travel/trip-in-calendar", "Trip: "),
    "travel_skills.plan_a_trip": ("travel/plan-a-trip", "rated 4.0"),
    "travel_skills.share_my_eta": ("maps/share-my-eta", "[ETA]"),
    "travel_skills.weather_briefing": ("weather/weather-briefing", "Weather: "),
}


@pytest.fixture(scope="module")
def tasks() -> list[TaskSpec]:
    return [t for t in load_suite() if (t.template or "").startswith(PREFIXES)]


def test_travel_has_its_share_of_the_suite(tasks):
    assert all(t.domain is Domain.TRAVEL for t in tasks)
    by_cat = Counter(t.category for t in tasks)
    assert len(tasks) >= 190 and by_cat[Category.TOOL] >= 100
    assert min(by_cat[Category.MEMORY], by_cat[Category.SKILLS], by_cat[Category.SUBAGENT]) >= 40
    by_template = Counter(t.template for t in tasks)
    for name in by_template:
        goals = {t.goal for t in tasks if t.template == name}
        assert len(goals) * 4 >= by_template[name] * 3, f"{name}: too many repeated goals"
    assert sum(len(t.apps) > 1 for t in tasks) >= 0.6 * len(tasks)
    assert sum(len([c for c in t.reference_plan or [] if c.name != "finish"]) >= 3 for t in tasks) >= 0.8 * len(tasks)


def test_skill_tasks_name_a_shipped_skill_whose_rule_the_goal_does_not_state(tasks):
    for t in tasks:
        if t.category is not Category.SKILLS:
            continue
        skill, marker = SKILLS[t.template]
        app, _, folder = skill.partition("/")
        body = (ROOT / "apps" / app / "skills" / folder / "SKILL.md").read_text()
        name = skill.split("/")[1]
        assert re.search(rf"^name: {name}$", body, re.M)
        assert marker in body.split("---", 2)[2] and marker not in t.goal, t.id
        reads = [c for c in t.reference_plan or [] if c.name == "skills.read"]
        assert [c.arguments for c in reads] == [{"name": name}], t.id


@pytest.mark.slow
def test_every_travel_task_is_proven(tasks):
    proofs = prove_suite([t for t in tasks if t.category is not Category.MEMORY])
    assert [p.task_id for p in proofs if not p.ok] == [], [p.problems for p in proofs if not p.ok][:3]
    assert all(p.perturbations >= 1 for p in proofs)


def _needed(t: TaskSpec) -> int:
    """The id of the fixture memory the reference plan of a travel memory task acts on."""
    mem, plan = t.fixtures.memory, t.reference_plan or []
    if t.template == "travel_memory.seat_preference":
        seat = next(c.arguments["seat"] for c in plan if c.name == "travel.check_in")
        key = "aisle" if seat[-1] in "CD" else "window"
    elif t.template == "travel_memory.parents_train":
        train = next(c.arguments["train_id"] for c in plan if c.name == "travel.book_train")
        key = next(r["destination"] for r in t.fixtures.records["travel.trains"] if r["id"] == train)
    elif t.template == "travel_memory.hotel_budget":
        key = "New rule"
    else:
        key = next(c.arguments["query"] for c in plan if c.name == "maps.search")
    return max((m for m in mem if key in m.content), key=lambda m: m.created).id


@pytest.fixture
def one_torch_thread():
    """Encode with one thread: on a busy 2-core machine, two threads contend."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
def test_the_reference_memory_search_finds_the_needed_memory(tasks, one_torch_thread):
    from phoneenv.env import PhonePlanEnv

    mem_tasks = [t for t in tasks if t.category is Category.MEMORY]
    env = PhonePlanEnv(tasks=mem_tasks)
    for t in mem_tasks:
        env.reset(options={"task": t})
        *_, info = env.step(t.reference_plan[0].model_dump())
        hits = [h["id"] for h in info["feedback"].result["memories"]]
        assert _needed(t) in hits, (t.id, t.reference_plan[0].arguments, hits)
    env.close()
