"""Co-evolution rounds (phoneenv.loop.harness, phoneenv.loop.evolve, phoneenv evolve, rl.sampler's
weights from results): harness versions, Trace.harness, eval --harness, failure clusters, edit
proposals into the review queue, apply, the round report, and a whole round with a planner whose
failures a skill edit addresses."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from agents.base import AgentAction
from agents.planner import SYSTEM_PROMPT, LLMPlanner
from phoneenv.cli import app
from phoneenv.contract import CriterionResult, Feedback, Step, ToolCall, Trace, Verdict
from phoneenv.harness.skills import load_skills, parse_skill
from phoneenv.loop import evolve
from phoneenv.loop.harness import (
    HarnessError,
    applied_edits,
    create_version,
    latest_version,
    load_harness,
    versions,
)
from phoneenv.tasks import get_task
from rl.sampler import (
    SamplerConfig,
    TaskSampler,
    apply_mix,
    config_from_json,
    config_to_json,
    measured_weight,
    weights_from_results,
)
from tests.fake_openai import FakeOpenAI, completion

SKILL = """---
name: check-the-alarm
description: Switch an alarm with the right id and flag.
tools: [clock.set_alarm_enabled]
---
1. Call `clock.list_alarms` and take the alarm's id.
"""


@pytest.fixture
def loop(tmp_path, monkeypatch):
    folder = tmp_path / "loop"
    monkeypatch.setenv("PHONEENV_LOOP_DIR", str(folder))
    monkeypatch.setenv("PHONEENV_REVIEWER", "tester")
    return folder


class Queue:
    """A minimal in-test stand-in for phoneenv.loop.review.ReviewQueue (Part B, built in parallel):
    the methods this part calls, with its documented semantics (idempotent submit, KeyError for an
    unknown id, ValueError for a second decision)."""

    def __init__(self) -> None:
        self.rows: list[SimpleNamespace] = []

    def submit(self, kind, title, payload, *, evidence=None, source="", reason=""):
        for row in self.rows:
            if row.kind == kind and json.dumps(row.payload, sort_keys=True) == json.dumps(payload, sort_keys=True):
                return row.id
        row = SimpleNamespace(
            id=len(self.rows) + 1, kind=kind, title=title, payload=payload, evidence=list(evidence or []),
            source=source, reason=reason, status="pending",
        )  # fmt: skip
        self.rows.append(row)
        return row.id

    def get(self, item_id):
        if not 1 <= item_id <= len(self.rows):
            raise KeyError(f"no review item {item_id}")
        return self.rows[item_id - 1]

    def items(self, *, status=None, kind=None):
        return [r for r in self.rows if status in (None, r.status) and kind in (None, r.kind)]

    def _decide(self, item_id, status):
        row = self.get(item_id)
        if row.status != "pending":
            raise ValueError(f"item {item_id} is already {row.status}")
        row.status = status
        return row

    def approve(self, item_id, reviewer, note=""):
        return self._decide(item_id, "approved")

    def reject(self, item_id, reviewer, reason):
        return self._decide(item_id, "rejected")

    def approved(self, kind=None):
        return self.items(status="approved", kind=kind)


# -- harness versions -------------------------------------------------------------------------------


def test_v0_is_what_ships_without_a_folder(loop):
    v0 = load_harness("v0")
    assert v0.name == "v0" and v0.path is None and v0.instructions == "" and v0.manifest.mix == {}
    assert v0.env_kwargs() == {} and v0.planner_kwargs() == {}
    assert [h.name for h in versions()] == ["v0"] and latest_version().name == "v0"
    with pytest.raises(HarnessError, match=r"no harness version 'v3'.*known: v0"):
        load_harness("v3")
    with pytest.raises(HarnessError, match="neither a harness version name"):
        load_harness("nonsense")


def test_create_version_copies_the_parent_and_lays_edits_over(loop):
    v1 = create_version(
        skills={"clock/check-the-alarm/SKILL.md": SKILL}, instructions="- Check ids.", mix={"capability:update": 2},
        edits=[4, 2],
    )  # fmt: skip
    assert (v1.name, v1.manifest.parent, v1.manifest.edits) == ("v1", "v0", [2, 4])
    assert v1.instructions == "- Check ids." and v1.manifest.mix == {"capability:update": 2.0}
    assert v1.planner_kwargs() == {"instructions": "- Check ids.", "list_skills": ["check-the-alarm"]}
    lib = v1.skill_library()
    assert "check-the-alarm" in lib and len(lib) == len(load_skills()) + 1
    # a child keeps the parent's skill and instructions unless it changes them; a shipped skill is overridden
    shipped = load_skills()["set-an-alarm"]
    changed = Path(shipped.path).read_text(encoding="utf-8").rstrip() + "\n\n## Pitfalls\n- Mind the time zone.\n"
    v2 = create_version(skills={"clock/set-an-alarm/SKILL.md": changed}, mix={"template:x": 0.5}, edits=[7])
    assert v2.manifest.parent == "v1" and v2.instructions == "- Check ids."
    assert v2.manifest.mix == {"capability:update": 2.0, "template:x": 0.5}
    lib2 = v2.skill_library()
    assert "Mind the time zone." in lib2["set-an-alarm"].body and "check-the-alarm" in lib2
    assert "Mind the time zone." not in load_skills()["set-an-alarm"].body  # the shipped file is untouched
    assert applied_edits() == {2, 4, 7} and latest_version().name == "v2"
    assert load_harness("latest").name == "v2" and load_harness(v2.path).name == "v2"


def test_create_version_refuses_a_bad_skill_and_leaves_nothing(loop):
    with pytest.raises(
        HarnessError, match=re.escape("skill clock/other-name/SKILL.md: name 'check-the-alarm' differs")
    ):
        create_version(skills={"clock/other-name/SKILL.md": SKILL})
    with pytest.raises(HarnessError, match=re.escape("must be <app>/<skill-name>/SKILL.md")):
        create_version(skills={"../escape/SKILL.md": SKILL})
    with pytest.raises(HarnessError, match="finite number >= 0"):
        create_version(mix={"capability:x": -1.0})
    assert [h.name for h in versions()] == ["v0"]
    assert not [p for p in (loop / "harness").iterdir()]


# -- the planner's prompt, the trace and the scoreboard -----------------------------------------------


class _Client:
    model = "m"

    def chat(self, messages, tools=None, max_tokens=None):  # pragma: no cover - never called here
        raise AssertionError


def _reset(planner, skills):
    info = {"tools": [], "apps": ["clock"], "category": "tool", "skills": skills}
    planner.reset({"goal": "Wake me at 7."}, info)
    return planner.messages[0]["content"]


def test_planner_instructions_and_skills_list():
    skills = [{"name": "check-the-alarm", "description": "Ids first."}, {"name": "other", "description": "x"}]
    assert _reset(LLMPlanner(_Client()), skills) == SYSTEM_PROMPT.format(goal="Wake me at 7.")
    text = _reset(LLMPlanner(_Client(), instructions="- Check ids.\n", list_skills=["check-the-alarm"]), skills)
    head = SYSTEM_PROMPT.format(goal="Wake me at 7.")
    assert text.startswith(head + "\n\n")
    assert "- check-the-alarm: Ids first." in text and "other" not in text[len(head) :]
    assert text.endswith("\n\n- Check ids.")
    planner = LLMPlanner(_Client(), list_skills=True, tool_filter="task")
    assert "- other: x" in _reset(planner, skills) and "skills.read" in planner._allowed


def test_trace_harness_defaults_and_old_traces_load():
    old = {"task_id": "t", "backend": "sandbox", "category": "tool", "domain": "time", "goal": "g"}
    assert Trace.model_validate(old).harness is None
    assert Trace.model_validate_json(Trace(**old, harness="v2").model_dump_json()).harness == "v2"


class BrokenCaller:
    """A planner whose failures a skill addresses: it plays the task's reference plan, except that
    the first call to a write tool goes out without arguments (an invalid_arguments failure) and it
    then gives up, unless a skill it was told of (``list_skills``, which a harness version sets)
    names that tool; it reads such skills with skills.read first, so the skill must be served by
    the env's library."""

    name = "broken-caller"

    def __init__(self, seed: int = 0) -> None:
        self.list_skills: frozenset[str] = frozenset()
        self.instructions = ""

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        plan = list(get_task(info["task_id"]).reference_plan)
        self.queue = [{"name": "skills.read", "arguments": {"name": n}} for n in sorted(self.list_skills)]
        self.plan = plan
        self.read: list[str] = []
        self.fixed: set[str] = set()
        self.started = False

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> AgentAction:
        fb = info.get("feedback")
        if self.read and fb is not None and fb.ok:
            body = fb.result["body"]
            self.fixed |= {c.name for c in self.plan if f"`{c.name}`" in body}
        if self.queue:
            call = self.queue.pop(0)
            self.read.append(call["arguments"]["name"])
            return AgentAction(json.dumps(call))
        self.read = []
        if not self.plan:
            return AgentAction(json.dumps({"name": "finish", "arguments": {"answer": "done"}}))
        call = self.plan.pop(0)
        if not self.started and call.name not in self.fixed and call.name.split(".")[1].startswith("set_"):
            self.plan = [ToolCall(name="finish", arguments={"answer": "I could not do it."})]
            self.started = True
            return AgentAction(json.dumps({"name": call.name, "arguments": {}}))
        return AgentAction(json.dumps({"name": call.name, "arguments": call.arguments}))


def _eval(out: Path, *extra: str) -> Any:
    return CliRunner().invoke(
        app, ["eval", "--agent", "tests.test_loop_evolve:BrokenCaller", "--tasks", "template:clock.alarm_off",
              "--out", str(out), *extra],
    )  # fmt: skip


def test_eval_harness_names_the_version_everywhere(loop, tmp_path):
    create_version(instructions="- Check ids.")
    res = _eval(tmp_path / "run", "--harness", "v1")
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "run" / "run.json").read_text())["harness"] == "v1"
    assert json.loads((tmp_path / "run" / "scoreboard.json").read_text())["harness"] == "v1"
    traces = evolve.read_run(tmp_path / "run")
    assert traces and {t.harness for t, _ in traces} == {"v1"}
    res = _eval(tmp_path / "plain")
    assert res.exit_code == 0 and "harness" not in json.loads((tmp_path / "plain" / "run.json").read_text())
    assert {t.harness for t, _ in evolve.read_run(tmp_path / "plain")} == {None}
    bad = _eval(tmp_path / "bad", "--harness", "v9")
    assert bad.exit_code == 2 and "no harness version 'v9'" in bad.output


# -- failures and clusters -------------------------------------------------------------------------


def _trace(task_id, seed, success, steps, criteria=(), infra=False):
    fbs = [
        Step(index=i + 1, action=ToolCall(name=name, arguments={}), clock="2026-01-01T00:00:00", backend="sandbox",
             feedback=Feedback(ok=err is None, error=err, message=f"m:{err}", hint=f"h:{name}" if err else None))
        for i, (name, err) in enumerate(steps)
    ]  # fmt: skip
    verdict = Verdict(
        success=success, progress=1.0 if success else 0.0, infrastructure_error=infra,
        criteria=[CriterionResult(id=c, kind="state", passed=False, reason="0 matching") for c in criteria],
    )  # fmt: skip
    t = get_task(task_id)
    return Trace(task_id=task_id, seed=seed, backend="sandbox", category=t.category, domain=t.domain, goal=t.goal,
                 steps=fbs, verdict=verdict)  # fmt: skip


def test_failure_cases_and_clusters_by_signature():
    a, b = "clock.alarm_off/0", "clock.alarm_off/1"
    crit = get_task(a).criteria[0].id
    traces = [
        (_trace(a, 0, False, [("clock.list_alarms", None), ("clock.set_alarm_enabled", "invalid_arguments"),
                              ("clock.set_alarm_enabled", "not_found")], [crit]), Path("t1")),
        (_trace(b, 0, False, [("clock.set_alarm_enabled", "invalid_arguments")], [crit]), Path("t2")),
        (_trace(a, 1, False, [("clock.list_alarms", "timeout")], [crit]), Path("t3")),  # infra kind ignored
        (_trace(b, 1, False, [("clock.list_alarms", None)], [crit], infra=True), Path("t4")),  # the world's fault
        (_trace(a, 2, True, [("clock.list_alarms", None)]), Path("t5")),  # a success
    ]  # fmt: skip
    cases = evolve.failure_cases(traces)
    assert [(c.task_id, c.seed) for c in cases] == [(a, 0), (b, 0), (a, 1)]
    assert cases[0].error_kinds == ["invalid_arguments", "not_found"] and cases[0].tool == "clock.set_alarm_enabled"
    assert cases[2].signature == ("no_error", f"table:{get_task(a).criteria[0].table}")
    assert cases[0].capabilities == get_task(a).capabilities and cases[0].template == "clock.alarm_off"
    clusters = evolve.cluster_failures(cases)
    assert [(c.id, c.error_kind, c.focus, c.size) for c in clusters] == [
        ("c1", "invalid_arguments", "clock.set_alarm_enabled", 2),
        ("c2", "no_error", f"table:{get_task(a).criteria[0].table}", 1),
    ]
    c1 = clusters[0]
    assert c1.tools == {"clock.set_alarm_enabled": 3} and c1.error_kinds == {"invalid_arguments": 2, "not_found": 1}
    assert c1.hints == ["h:clock.set_alarm_enabled"] and c1.messages == ["m:invalid_arguments"]
    assert c1.failed_criteria == {crit: 2} and c1.reasons == [f"{crit}: 0 matching"]
    assert evolve.cluster_failures(cases, min_size=2) == clusters[:1]


# -- a whole round --------------------------------------------------------------------------------


def test_round_apply_report_with_a_planner_a_skill_edit_fixes(loop, tmp_path):
    """eval (v0) -> round -> approve the skill edit only -> apply (v1) -> eval (v1) -> report."""
    before, after = tmp_path / "r0", tmp_path / "r1"
    assert _eval(before).exit_code == 0
    task_ids = [t.task_id for t, _ in evolve.read_run(before)]
    n = len(task_ids)
    assert n == len(set(task_ids)) and n >= 2
    q = Queue()
    result = evolve.run_round(before, queue=q)
    assert result.round == 1 and len(result.clusters) == 1
    (c1,) = result.clusters
    assert (c1.error_kind, c1.focus, c1.size) == ("invalid_arguments", "clock.set_alarm_enabled", n)
    data = json.loads((loop / "rounds" / "1" / "clusters.json").read_text())
    assert data["run"] == str(before) and data["harness"] == "v0" and data["failed"] == n
    gap = data["clusters"][0]["gap"]
    assert gap.startswith("cluster:") and json.loads(Path(gap[8:]).read_text())["size"] == n
    ids = result.items["c1"]
    assert sorted(ids) == ["instruction_edit", "mix_weight", "skill_edit"]
    skill = q.get(ids["skill_edit"])
    assert skill.kind == "skill_edit" and skill.source == "evolve" and skill.evidence[0]["cluster"] == "c1"
    assert {(e["task_id"], e["seed"]) for e in skill.evidence[1:]} == {(t, 0) for t in task_ids}
    parsed = parse_skill(skill.payload["after"])
    assert "`clock.set_alarm_enabled`" in parsed.body and skill.payload["path"].endswith(f"/{parsed.name}/SKILL.md")
    assert skill.payload["diff"].startswith(("--- a/", "--- /dev/null"))
    mix = q.get(ids["mix_weight"]).payload
    assert mix["group"] == "capability:lookup" and mix["before"] == 1.0 and mix["after"] == 2.0  # all n of n failed
    # the same run again gives the same items (the queue dedups), in a new round folder
    assert evolve.run_round(before, queue=q).items == result.items and (loop / "rounds" / "2").is_dir()
    assert evolve.apply_approved(queue=q) is None  # nothing approved yet
    q.approve(ids["skill_edit"], "tester")
    q.reject(ids["instruction_edit"], "tester", "not needed")
    v1 = evolve.apply_approved(queue=q)
    assert v1.name == "v1" and v1.manifest.edits == [ids["skill_edit"]] and v1.instructions == ""
    assert list(v1.own_skills()) == [parsed.name] and evolve.apply_approved(queue=q) is None
    assert _eval(after, "--harness", "v1").exit_code == 0
    report = evolve.round_report(before, after, queue=q, round_no=1)
    overall = report["categories"][-1]
    assert overall["label"] == "Overall" and overall["before"]["success"] == 0.0 and overall["after"]["success"] == 1.0
    assert overall["success_delta"] == 1.0 and overall["after"]["episodes"] == n
    assert report["edits"] == [{"id": ids["skill_edit"], "kind": "skill_edit", "title": skill.title}]
    assert report["clusters"] == [
        {"id": "c1", "signature": {"error_kind": "invalid_arguments", "focus": "clock.set_alarm_enabled"},
         "failing": n, "replayed": n, "now_succeed": n, "edits_applied": [ids["skill_edit"]]}
    ]  # fmt: skip
    md = (loop / "rounds" / "1" / "report.md").read_text()
    assert "| Overall | " in md and f"| c1 | invalid_arguments on clock.set_alarm_enabled | {n} | {n} | {n} |" in md
    assert report["before"]["harness"] == "v0" and report["after"]["harness"] == "v1"


def test_llm_drafts_the_skill_with_one_repair(loop, tmp_path):
    run = tmp_path / "r0"
    assert _eval(run).exit_code == 0
    drafted = SKILL.replace("check-the-alarm", "switch-alarms-by-id")
    from agents.llm.client import OpenAIChatClient

    script = [completion("no front matter here"), completion(f"```markdown\n{drafted}```"), completion("Check ids.")]
    with FakeOpenAI(script) as srv:
        q = Queue()
        result = evolve.run_round(run, queue=q, client=OpenAIChatClient(srv.base_url, "m", max_attempts=1))
        assert len(srv.requests) == 3
        assert "Your last draft was refused: no front matter" in json.dumps(srv.requests[1])
    ids = result.items["c1"]
    skill = q.get(ids["skill_edit"]).payload
    assert skill["drafted_by"] == "llm" and skill["skill"] == "switch-alarms-by-id"
    assert skill["path"] == "clock/switch-alarms-by-id/SKILL.md" and skill["after"] == drafted
    instr = q.get(ids["instruction_edit"]).payload
    assert instr["after"] == "- Check ids." and instr["drafted_by"] == "llm"
    # drafts that never validate (an unknown tool) fall back to the rule-based draft, reason kept
    bad = SKILL.replace("clock.set_alarm_enabled", "clock.nope")
    with FakeOpenAI([completion(bad), completion(bad), completion("")]) as srv:
        q2 = Queue()
        res2 = evolve.run_round(run, queue=q2, client=OpenAIChatClient(srv.base_url, "m", max_attempts=1))
    p2 = q2.get(res2.items["c1"]["skill_edit"]).payload
    assert p2["drafted_by"] == "rules" and "unknown tools or apps ['clock.nope']" in p2["llm_error"]
    assert q2.get(res2.items["c1"]["instruction_edit"]).payload["drafted_by"] == "rules"


def test_apply_merges_instruction_edits_and_mix(loop):
    q = Queue()
    a = q.submit("instruction_edit", "a", {"before": "", "after": "- One.", "diff": ""})
    b = q.submit("instruction_edit", "b", {"before": "", "after": "- Two.", "diff": ""})
    m = q.submit("mix_weight", "m", {"group": "capability:send", "before": 1.0, "after": 3.0})
    for i in (a, b, m):
        q.approve(i, "tester")
    v1 = evolve.apply_approved(queue=q)
    assert v1.instructions == "- One.\n- Two." and v1.manifest.mix == {"capability:send": 3.0}
    assert v1.manifest.edits == [a, b, m]


# -- sampler weights from results -----------------------------------------------------------------


def test_measured_weight_rules():
    assert measured_weight(0, 4) == 1.0 and measured_weight(4, 4) == 0.1 and measured_weight(1, 4) == 0.775
    assert measured_weight(2, 4, rule="learnable") == 1.0 and measured_weight(0, 4, rule="learnable") == 0.1
    with pytest.raises(ValueError, match="unknown rule"):
        measured_weight(1, 2, rule="x")
    with pytest.raises(ValueError, match="successes <= episodes"):
        measured_weight(3, 2)


def test_weights_from_results_log_every_change(tmp_path):
    rows = [
        {"success": True, "capabilities": '["send", "lookup"]', "source": "template", "template": "a"},
        {"success": False, "capabilities": ["send"], "source": "template", "template": "a"},
        {"success": False, "capabilities": ["send"], "source": "generated", "template": "b"},
        {"success": False, "capabilities": ["lookup"], "source": "generated", "template": "b"},
    ]
    log = tmp_path / "w.jsonl"
    cfg, changes = weights_from_results(rows, SamplerConfig(capability={"lookup": 0.55}), round_name="r1", log_path=log)
    # send: 1/3 -> 0.1 + 0.9 * 2/3 = 0.7; lookup: 1/2 -> 0.55 (unchanged, no entry); template:a 1/2 -> 0.55;
    # template:b 0/2 -> 1.0 (the default: no change); source:template 1/2 -> 0.55; source:generated 0/2 -> 1.0
    assert cfg.capability == {"lookup": 0.55, "send": 0.7} and cfg.group == {"a": 0.55}
    assert cfg.source == {"template": 0.55}
    assert [(c.group, c.before, c.after) for c in changes] == [
        ("capability:send", 1.0, 0.7), ("source:template", 1.0, 0.55), ("template:a", 1.0, 0.55),
    ]  # fmt: skip
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["group"] for e in logged] == ["capability:send", "source:template", "template:a"]
    assert logged[0]["why"].startswith("1/3 episodes succeeded in r1 (33%)") and logged[0]["after"] == 0.7
    cfg2, more = apply_mix(cfg, {"capability:send": 2.0, "template:a": 0.55, "difficulty:3": 0.5}, log_path=log)
    assert [(c.group, c.before, c.after) for c in more] == [("capability:send", 0.7, 2.0), ("difficulty:3", 1.0, 0.5)]
    assert cfg2.difficulty == {3: 0.5} and len(log.read_text().splitlines()) == 5
    assert config_from_json(json.loads(json.dumps(config_to_json(cfg2)))) == cfg2
    with pytest.raises(ValueError, match="mix group 'send'"):
        apply_mix(cfg, {"send": 1.0})
    TaskSampler("template:clock.alarm_off", cfg2)  # a config the sampler takes


# -- the CLI ----------------------------------------------------------------------------------------


def test_evolve_cli_round_apply_report_weights(loop, tmp_path):
    pytest.importorskip("phoneenv.loop.review", reason="the review queue (Part B) is not merged yet")
    from phoneenv.loop.review import ReviewQueue

    before, after = tmp_path / "r0", tmp_path / "r1"
    assert _eval(before).exit_code == 0
    cli = CliRunner()
    res = cli.invoke(app, ["evolve", "round", "--run", str(before)])
    assert res.exit_code == 0, res.output
    assert "invalid_arguments on" in res.output
    queue = ReviewQueue(loop / "review.sqlite")
    (skill,) = queue.items(kind="skill_edit")
    queue.approve(skill.id, "tester")
    res = cli.invoke(app, ["evolve", "apply"])
    assert res.exit_code == 0 and "harness v1" in res.output, res.output
    assert _eval(after, "--harness", "v1").exit_code == 0
    res = cli.invoke(app, ["evolve", "report", "--before", str(before), "--after", str(after)])
    assert res.exit_code == 0 and "| c1 |" in res.output, res.output
    res = cli.invoke(app, ["evolve", "weights", "--run", str(after)])
    assert res.exit_code == 0 and (loop / "weights.json").is_file(), res.output
    res = cli.invoke(app, ["evolve", "versions"])
    assert res.exit_code == 0 and "v1" in res.output


def test_training_takes_the_harness_prompt_the_planner_is_evaluated_with(loop, tmp_path):
    """Co-evolution: `train sft --harness` and `train rl --harness` put the version's skills list and
    instructions in the system message exactly as `eval --harness` (the LLM planner) does."""
    from phoneenv.env import PhonePlanEnv
    from rl.sft import reference_traces, traces_to_examples
    from rl.trainers import TrainConfig

    v1 = create_version(skills={"clock/check-the-alarm/SKILL.md": SKILL}, instructions="- Check ids.")
    task = get_task("clock.alarm_off/0")
    env = PhonePlanEnv(task=task, **v1.env_kwargs())
    obs, info = env.reset(seed=0)
    planner = LLMPlanner(_Client(), tool_filter="apps", **v1.planner_kwargs())
    planner.reset(obs, info)
    system = planner.messages[0]["content"]
    assert "- check-the-alarm: Switch an alarm with the right id and flag." in system
    assert system.endswith("\n\n- Check ids.") and "skills.read" in planner._allowed

    traces = reference_traces(task.id, tmp_path / "traces")
    (example,) = traces_to_examples(traces, tool_filter="apps", harness=v1)
    assert example["messages"][0]["content"] == system  # the same prompt, character for character
    offered = {t["function"]["name"] for t in json.loads(example["tools"])}
    assert offered == {t["function"]["name"] for t in planner.tools}
    (base,) = traces_to_examples(traces, tool_filter="apps")
    assert base["messages"][0]["content"] == SYSTEM_PROMPT.format(goal=task.goal)  # v0: the base prompt

    cfg = TrainConfig(output_dir=str(tmp_path / "rl"), harness="v1", harness_loop=str(loop), report_to="none")
    rollout = cfg.rollout_config()
    assert rollout.instructions == "- Check ids." and rollout.list_skills == ("check-the-alarm",)
    assert "check-the-alarm" in rollout.env_kwargs["skills"]
    assert TrainConfig(output_dir=str(tmp_path / "rl0"), report_to="none").rollout_config().list_skills == ()
