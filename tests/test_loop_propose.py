"""Task construction without a gold trace (phoneenv.loop.propose, phoneenv.loop.generated):
drafts parsed from a model's reply, checked against the contract and the apps' schemas, checked
by execution, filed as accepted or unproven, and loaded into the suite only when accepted or
approved in review."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest
from typer.testing import CliRunner

from agents import factory
from phoneenv.llm import ChatResult, TokenUsage
from phoneenv.loop import REVIEW_DB, TASKS_FILE, loop_dir
from phoneenv.loop.propose import PROPOSALS_FILE, GoalIndex, check_draft, parse_drafts, parse_gap, propose
from phoneenv.loop.review import ReviewQueue
from phoneenv.tasks import get_task, load_suite, select

ALARMS = [
    {"id": "al_1", "time": "06:30", "label": None, "enabled": True, "days": []},
    {"id": "al_2", "time": "08:00", "label": "Work", "enabled": True, "days": ["mon"]},
]


def draft(goal, criteria, **kw):
    return {
        "goal": goal,
        "domain": "time",
        "category": "tool",
        "apps": ["clock"],
        "fixtures": {"clock": "2026-11-20T21:00:00", "records": {"clock.alarms": ALARMS}},
        "criteria": criteria,
        **kw,
    }


SWIM = draft(
    "I start swimming on weekdays: wake me at 05:40 Monday to Friday, call the alarm Swim.",
    [
        {
            "kind": "state",
            "table": "clock.alarms",
            "where": {"time": "05:40", "label": {"icontains": "swim"}, "days": {"has": "fri"}},
            "change": "created",
            "count": 1,
        }
    ],
)
SWIM_CALL = {"time": "05:40", "label": "Swim", "days": ["mon", "tue", "wed", "thu", "fri"]}
TYPO = draft(
    "Turn my work alarm off for the holidays.",
    [{"kind": "state", "table": "clock.alarm", "where": {"enabled": False}, "change": "updated"}],
)
HOLDS = draft(
    "Make sure I have an alarm at 06:30.",
    [{"kind": "state", "table": "clock.alarms", "where": {"time": "06:30"}, "change": "present"}],
)
EARLIER = draft(
    "Move my Work alarm half an hour earlier.",
    [{"kind": "state", "table": "clock.alarms", "where": {"id": "al_2", "time": "07:30"}, "change": "updated"}],
)


def bag_of_words(texts):
    """A stand-in embedder (MiniLM takes ~30 s for the suite's goals): hashed word counts, L2-normalised."""
    out = np.zeros((len(texts), 256), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            out[i, hash(word) % 256] += 1
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1)


class Proposer:
    """Replies with the drafts, wrapped in prose and a fence, as chat models do."""

    model = "scripted-proposer"

    def __init__(self, drafts):
        self.text = "Here are the tasks:\n```json\n" + json.dumps(drafts) + "\n```\nHope this helps."
        self.prompts = []

    def chat(self, messages, *, tools=None, json_schema=None, max_tokens=512):
        self.prompts.append(messages[-1]["content"])
        return ChatResult(content=self.text, raw=self.text)


class Solver:
    """A planner's model that sets the swim alarm, and gives up on anything else."""

    model = "scripted-solver"

    def chat(self, messages, *, tools=None, json_schema=None, max_tokens=512):
        done = any(m.get("role") == "tool" for m in messages)
        if "swimming" in messages[1]["content"] and not done:
            call = {"id": "c1", "name": "clock__create_alarm", "arguments": SWIM_CALL}
        else:
            call = {"id": "c2", "name": "finish", "arguments": {"answer": "Done."}}
        return ChatResult(tool_calls=[call], usage=TokenUsage(10, 2, 0))


def solver():
    from agents.planner import LLMPlanner

    return LLMPlanner(Solver(), tool_filter="apps")


# -- parsing ---------------------------------------------------------------------------------------


def test_drafts_are_found_in_prose_fences_arrays_and_wrappers():
    assert parse_drafts('Sure! ```json\n[{"goal": "a"}, {"goal": "b"}]\n``` and {"goal": "c"}') == [
        {"goal": "a"},
        {"goal": "b"},
        {"goal": "c"},
    ]
    assert parse_drafts('{"tasks": [{"goal": "a"}]}') == [{"goal": "a"}]
    assert parse_drafts("no json here [at all") == []
    assert parse_drafts('[1, "x"]') == [1, "x"]  # kept: check_draft rejects them by name


def test_gaps_by_capability_domain_and_cluster(tmp_path):
    gap = parse_gap("capability:remind")
    assert gap.kind == "capability" and gap.examples and all("remind" in t.capabilities for t in gap.examples)
    assert parse_gap("time").kind == "capability"  # a bare tag
    assert parse_gap("domain:travel").apps[0] == "travel"
    with pytest.raises(ValueError, match="did you mean remind"):
        parse_gap("capability:remnd")
    with pytest.raises(ValueError, match="unknown gap kind"):
        parse_gap("flavour:x")
    cluster = tmp_path / "cluster-c1.json"
    cluster.write_text(
        json.dumps(
            {
                "id": "c1",
                "signature": {"error_kind": "not_found", "focus": "clock.update_alarm"},
                "size": 3,
                "templates": {"clock.toggle_alarm": 3},
                "apps": {"clock": 3},
                "reasons": ["alarm al_2 still on"],
                "messages": ["no alarm al_9"],
                "capabilities": {"update": 3},
            }
        )
    )
    gap = parse_gap(f"cluster:{cluster}")
    assert gap.kind == "cluster" and gap.name == "c1" and gap.apps == ["clock"]
    assert any("not_found on clock.update_alarm" in note for note in gap.notes)
    with pytest.raises(ValueError, match="not a cluster file"):
        (tmp_path / "x.json").write_text("{}")
        parse_gap(f"cluster:{tmp_path / 'x.json'}")


def test_the_prompt_shows_the_gaps_tools_tables_and_an_example_with_criterion_kinds():
    from phoneenv.loop.propose import draft_prompt

    prompt = draft_prompt(parse_gap("capability:remind"), 3)
    assert "Write 3 new task(s)" in prompt
    assert "- clock.create_alarm(time: string, label?: string" in prompt
    assert "- memory.remind(" in prompt  # the harness tools of the gap's (memory) category
    assert "- clock.alarms {id: str, time: str" in prompt
    example = json.loads(prompt.split("An example task of this kind:\n")[1].split("\n")[0])
    assert all("kind" in c for c in example["criteria"])  # the discriminator survives the shortening


# -- the contract and reference checks --------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (TYPO, "criterion updated:clock.alarm: no table 'clock.alarm' (tables: clock.alarms, clock.timers)"),
        (
            draft("x", [{"kind": "state", "table": "clock.alarms", "where": {"colour": "red"}, "change": "created"}]),
            "clock.alarms has no field 'colour'",
        ),
        (draft("x", [{"kind": "behavior", "rule": "required_call", "tool": "clock.snooze"}]), "no tool 'clock.snooze'"),
        (
            draft(
                "x",
                [{"kind": "behavior", "rule": "required_call", "tool": "clock.create_alarm", "arguments": {"hour": 5}}],
            ),
            "clock.create_alarm takes no argument 'hour'",
        ),
        (
            draft("x", [{"kind": "state", "table": "contacts.contacts", "where": {}, "change": "created"}]),
            "table 'contacts.contacts' is not of the task's apps ['clock']",
        ),
        (
            draft("x", [{"kind": "state", "table": "clock.alarms", "where": {"days": ["mon"]}, "change": "created"}]),
            "criteria.0.state.where.days: Input should be a valid",  # one line, not one per union member
        ),
        ({**SWIM, "id": "mine"}, "unknown keys ['id']"),
        ({**SWIM, "fixtures": {"records": {"clock.alarms": [{"id": "al_1", "time": 630}]}}}, "field 'time'"),
        (draft("x", []), "no criteria"),
        ("a task", "must be a JSON object, not str"),
    ],
)
def test_a_draft_that_breaks_the_contract_or_names_what_does_not_exist_is_refused(bad, problem):
    task, problems = check_draft(bad, parse_gap("capability:time"))
    assert task is None
    assert any(problem in p for p in problems), problems
    assert len(problems) <= 5


def test_a_good_draft_becomes_a_generated_task_with_a_content_id():
    gap = parse_gap("capability:time")
    task, problems = check_draft(SWIM, gap)
    assert problems == [] and task is not None
    assert re.fullmatch(r"gen\.time/[0-9a-f]{8}", task.id) and task.source == "generated"
    assert "time" in task.capabilities and task.reference_plan is None
    assert check_draft(dict(SWIM), gap)[0].id == task.id  # same draft, same id
    assert check_draft({**SWIM, "goal": SWIM["goal"] + "!"}, gap)[0].id != task.id


def test_near_duplicates_by_the_packaged_minilm():
    pytest.importorskip("tokenizers")
    index = GoalIndex(["Set an alarm for 6:45 tomorrow called Gym", "Text Ana that I am running late"])
    goal, sim = index.nearest("Set a 6:45 alarm named Gym for tomorrow")
    assert goal == "Set an alarm for 6:45 tomorrow called Gym" and sim >= 0.92
    assert index.nearest("Set an alarm for 7:30 tomorrow called Work")[1] < 0.92
    assert index.nearest("Delete all my notes")[1] < 0.5


# -- checks by execution, filing, loading -----------------------------------------------------------


def test_propose_checks_by_execution_files_and_loads_only_what_is_accepted_or_approved():
    dup = draft(load_suite()[0].goal, [{"kind": "state", "table": "clock.alarms", "where": {"time": "05:41"},
                                        "change": "created"}])  # fmt: skip
    proposer = Proposer([SWIM, dup, TYPO, HOLDS, EARLIER])
    outcomes = propose("capability:time", proposer, n=5, solver=solver, solver_name="scripted-solver",
                       embedder=bag_of_words)  # fmt: skip
    assert [o.status for o in outcomes] == ["accepted", "rejected", "rejected", "rejected", "unproven"]
    swim, dup_o, typo, holds, earlier = outcomes
    # solved on the first attempt's calls; the free-text answer dropped (no criterion reads it)
    assert [c.model_dump(exclude_none=True) for c in swim.task.reference_plan] == [
        {"name": "clock.create_alarm", "arguments": SWIM_CALL},
        {"name": "finish", "arguments": {}},
    ]
    assert swim.checks["solver"] == {"attempts": 3, "successes": 3, "steps": [2, 2, 2]}
    assert swim.checks["random"] == {"plans": 5, "successes": 0} and swim.checks["noop_fails"]
    assert dup_o.problems[0].startswith("a near-duplicate (cosine 1.000)")
    assert "no table 'clock.alarm'" in typo.problems[0]
    assert holds.problems[0] == "the no-op plan succeeds: the criteria hold on the fixture state"
    assert earlier.problems == ["no planner solved it in 3 attempts"] and earlier.review_id is not None

    folder = loop_dir()
    lines = [json.loads(x) for x in (folder / TASKS_FILE).read_text().splitlines()]
    assert [(e["task"]["id"], e["provenance"]["status"]) for e in lines] == [
        (swim.task.id, "accepted"),
        (earlier.task.id, "unproven"),
    ]
    prov = lines[0]["provenance"]
    assert prov["model"] == "scripted-proposer" and prov["solver"] == "scripted-solver"
    assert prov["gap"] == "capability:time" and prov["reviewer"] is None
    logged = [json.loads(x) for x in (folder / PROPOSALS_FILE).read_text().splitlines()]
    assert Counter(e["status"] for e in logged) == {"rejected": 3, "accepted": 1, "unproven": 1}

    # the suite: the accepted task, selectable, played by the reference agent from its found plan
    assert [t.id for t in select("source:generated")] == [swim.task.id]
    assert get_task(swim.task.id).goal == SWIM["goal"]
    assert len(select("source:template")) == len(load_suite(generated=False))
    from agents.reference import ReferenceAgent
    from phoneenv.evaluation import run_episodes

    assert run_episodes(ReferenceAgent(), [get_task(swim.task.id)], None)[0].success

    # the unproven one enters only once approved, with the reviewer's edit
    queue = ReviewQueue(folder / REVIEW_DB)
    item = queue.get(earlier.review_id)
    assert item.kind == "task" and item.status == "pending"
    edited = json.loads(json.dumps(item.payload))
    edited["task"]["goal"] = "Move my Work alarm to 07:30."
    queue.edit(item.id, "rev", edited, note="say the time")
    assert [t.id for t in select("source:generated")] == [swim.task.id]  # an edit is not an approval
    queue.approve(item.id, "rev")
    assert [t.id for t in select("source:generated")] == [swim.task.id, earlier.task.id]
    assert get_task(earlier.task.id).goal == "Move my Work alarm to 07:30."


def test_a_rejected_task_never_loads_and_review_all_queues_even_solved_tasks():
    outcomes = propose("capability:time", Proposer([SWIM]), solver=solver, review_all=True, embedder=bag_of_words)
    (o,) = outcomes
    assert o.status == "unproven" and o.review_id is not None and o.problems == []
    assert select("source:generated") == []
    ReviewQueue(loop_dir() / REVIEW_DB).reject(o.review_id, "rev", "not a real request")
    assert select("source:generated") == []


def test_no_solver_means_every_checked_task_waits_for_review():
    (o,) = propose("capability:time", Proposer([SWIM]), solver=None, embedder=bag_of_words)
    assert o.status == "unproven" and o.problems == ["no planner tried it"] and o.checks["solver"] is None


def test_a_reply_without_json_is_sent_back_once_and_logged():
    class Chatty:
        model = "chatty"
        calls = 0

        def chat(self, messages, **kw):
            Chatty.calls += 1
            return ChatResult(content="I would love to help with tasks!")

    assert propose("capability:time", Chatty(), embedder=bag_of_words) == []
    assert Chatty.calls == 2
    (entry,) = [json.loads(x) for x in (loop_dir() / PROPOSALS_FILE).read_text().splitlines()]
    assert entry["status"] == "no_drafts" and "love to help" in entry["reply"]


def test_broken_lines_and_taken_ids_in_tasks_jsonl_are_skipped_not_fatal(caplog):
    from phoneenv.loop.generated import append_entries

    task, _ = check_draft(SWIM, parse_gap("capability:time"))
    good = {"task": task.model_dump(mode="json"), "provenance": {"status": "accepted"}}
    clash = {"task": {**good["task"], "id": "contacts.favorite/0"}, "provenance": {"status": "accepted"}}
    path = append_entries([good, clash, good])
    with path.open("a") as fh:
        fh.write("{not json\n")
        fh.write(json.dumps({"task": {"goal": "no id"}, "provenance": {"status": "accepted"}}) + "\n")
    with path.open("ab") as fb:  # one invalid byte, and a line nested past the parser's stack
        fb.write(b'{"task": "caf\xe9"}\n' + b"[" * 100_000 + b"\n")
    assert [t.id for t in select("source:generated")] == [task.id]
    assert get_task("contacts.favorite/0").source == "template"
    text = caplog.text
    assert "line 4 is not JSON" in text and "'contacts.favorite/0' is taken" in text
    assert "line 3: task id" in text and "line 5: not a valid task" in text
    assert "line 6 is not UTF-8" in text and "line 7 is not JSON" in text


def test_selector_source_is_validated():
    with pytest.raises(ValueError, match="unknown source 'generate'; use one of template, generated"):
        select("source:generate")


# -- the command line --------------------------------------------------------------------------------


def test_cli_tasks_propose(monkeypatch):
    import phoneenv.cli as cli

    made = []

    def fake_client(base_url, model, api_key=None, option="--model"):
        made.append((base_url, model, option))
        return Proposer([SWIM, TYPO]) if option == "--model" else Solver()

    monkeypatch.setattr(factory, "make_client", fake_client)
    monkeypatch.setattr("phoneenv.harness.memory.default_embedder", lambda device="cpu": bag_of_words)
    # the process-wide embedder made from it is this test's alone (memory search shares it)
    monkeypatch.setattr("phoneenv.harness.memory._shared", None)
    monkeypatch.setattr("phoneenv.harness.memory._unavailable", None)
    res = CliRunner().invoke(
        cli.app,
        ["tasks", "propose", "--gap", "capability:time", "--n", "2", "--model", "drafter", "--base-url",
         "http://127.0.0.1:9/v1", "--solver-model", "solver", "--random-plans", "2"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "1 accepted into" in out and "0 waiting for review, 1 rejected" in out
    assert made == [
        ("http://127.0.0.1:9/v1", "drafter", "--model"),
        ("http://127.0.0.1:9/v1", "solver", "--solver-model"),
    ]
    res = CliRunner().invoke(cli.app, ["tasks", "list", "source:generated", "--json"])
    assert [json.loads(x)["goal"] for x in res.output.splitlines()] == [SWIM["goal"]]
    res = CliRunner().invoke(cli.app, ["tasks", "propose", "--gap", "capability:tme", "--model", "m"])
    assert res.exit_code == 2 and "did you mean time" in " ".join(res.output.split())
