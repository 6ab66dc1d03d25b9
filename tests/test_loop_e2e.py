"""The closed loop end to end, through the command line, as a user runs it:

    tasks propose (check by execution) -> review approve -> sample -> eval (r0, run store)
    -> evolve round (clusters, a skill edit) -> review approve -> evolve apply (harness v1)
    -> eval --harness v1 (r1) -> evolve report (before/after) -> evolve weights -> train rl --sampler

The model is scripted twice over: in process (a ChatClient), and through a real `transformers serve`
on a tiny random model, made to say each scripted reply (tests/llm_server.py). Its planner policy:
play the task's reference plan, except that it calls `clock.set_alarm_enabled` without arguments
(and gives up) unless a skill it read mentions that tool. A skill edit therefore addresses the
failures, and the round report must show it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agents import factory
from phoneenv.cli import app
from phoneenv.contract import ToolCall
from phoneenv.llm import ChatResult, TokenUsage
from phoneenv.loop import REVIEW_DB, loop_dir
from phoneenv.loop.review import ReviewQueue
from phoneenv.tasks import load_suite, select
from tests.test_loop_propose import EARLIER, SWIM, SWIM_CALL, TYPO, bag_of_words

BROKEN = "clock.set_alarm_enabled"
TEMPLATE = "template:clock.alarm_off"


def policy(messages: list[dict[str, Any]]) -> tuple[str | None, str | dict[str, Any]]:
    """The scripted model: ``(None, text)`` for a drafting request, ``(tool, arguments)`` for a planner turn."""
    first = messages[0]["content"]
    if first.startswith("You write test tasks"):
        return None, json.dumps([SWIM, EARLIER, TYPO])
    goal = messages[1]["content"]
    task = next((t for t in load_suite() if t.goal == goal), None)
    if task is None:  # a draft being checked: the model knows how to set the swim alarm, nothing else
        plan = [ToolCall(name="clock.create_alarm", arguments=SWIM_CALL)] if goal == SWIM["goal"] else []
    else:
        plan = list(task.reference_plan or ())
    listed = re.findall(r"^- ([a-z0-9-]+): ", first.split("Skills (", 1)[1], re.M) if "Skills (" in first else []
    turn = sum(m["role"] == "assistant" for m in messages)
    if turn < len(listed):
        return "skills.read", {"name": listed[turn]}
    read = " ".join(
        str(m.get("content")) for m in messages if m["role"] == "tool" and '"body"' in str(m.get("content"))
    )
    step = turn - len(listed)
    if any(c.name == BROKEN for c in plan) and BROKEN.split(".")[1] not in read:
        return (BROKEN, {}) if step == 0 else ("finish", {"answer": "I could not do it."})
    if step < len(plan):
        return plan[step].name, plan[step].arguments
    return "finish", {"answer": "I am not sure how."}


class InProcess:
    """The policy as a ChatClient."""

    model = "scripted"

    def chat(self, messages, *, tools=None, json_schema=None, max_tokens=512):
        name, what = policy(messages)
        if name is None:
            return ChatResult(content=what, raw=what)
        call = {"id": f"c{len(messages)}", "name": name.replace(".", "__"), "arguments": what}
        return ChatResult(tool_calls=[call], usage=TokenUsage(20, 5, 0))


def served_client(server):
    """The policy spoken by `transformers serve`: each reply forced through the server's generation config."""
    from agents.llm.client import OpenAIChatClient

    class Served(OpenAIChatClient):
        def chat(self, messages, **kw):
            name, what = policy(messages)
            if name is None:
                text = what
            else:
                text = "<tool_call>" + json.dumps({"name": name.replace(".", "__"), "arguments": what}) + "</tool_call>"
            self.extra_body = server.scripted(text)
            return super().chat(messages, **{**kw, "max_tokens": max(kw.get("max_tokens", 512), 2048)})

    return Served(server.base_url, server.model, timeout=120, max_attempts=2, backoff_max=0.2)


def run(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: Any, *, train: bool = False) -> None:
    from rl.sampler import SamplerConfig, TaskSampler

    monkeypatch.setattr(factory, "make_client", lambda *a, **k: client)
    monkeypatch.setattr("phoneenv.harness.memory.default_embedder", lambda device="cpu": bag_of_words)
    # the process-wide embedder made from it is this test's alone (memory search shares it)
    monkeypatch.setattr("phoneenv.harness.memory._shared", None)
    monkeypatch.setattr("phoneenv.harness.memory._unavailable", None)
    monkeypatch.setenv("PHONEENV_REVIEWER", "tester")
    loop = loop_dir()
    model = ["--model", "scripted", "--base-url", "http://127.0.0.1:9/v1"]

    # 1. propose: one solved (accepted), one no planner solves (unproven, queued), one broken (rejected)
    out = run("tasks", "propose", "--gap", "capability:time", "--n", "3", *model, "--random-plans", "2")
    assert "1 accepted" in out and "1 waiting for review" in out and "1 rejected" in out, out
    queue = ReviewQueue(loop / REVIEW_DB)
    (task_item,) = queue.items(kind="task")
    assert len(select("source:generated")) == 1
    # 2. a person looks and approves
    assert "Move my Work alarm half an hour earlier." in run("review", "show", str(task_item.id))
    run("review", "approve", str(task_item.id), "--note", "a fair request")
    generated = [t.id for t in select("source:generated")]
    assert len(generated) == 2
    # 3. sample the episodes: generated tasks weighted up beside the template's
    pool = select(f"source:generated,{TEMPLATE}")
    drawn = TaskSampler(pool, SamplerConfig(source={"generated": 2.0}), seed=0).sample(8)
    ids = sorted({t.id for t in drawn} | set(generated))
    assert set(generated) <= set(ids) and any(i.startswith("clock.alarm_off/") for i in ids)
    # 4. eval r0 with the base harness; every rollout kept in the run store
    r0, r1 = tmp_path / "r0", tmp_path / "r1"
    run("eval", "--agent", "llm", *model, "--tasks", ",".join(ids), "--out", str(r0))
    board0 = json.loads((r0 / "scoreboard.json").read_text())
    # 5. a round: failures clustered, edits proposed into the queue
    out = run("evolve", "round", "--run", str(r0), "--min-size", "1")
    clusters = json.loads((loop / "rounds" / "1" / "clusters.json").read_text())["clusters"]
    broken = next(c for c in clusters if c["signature"] == {"error_kind": "invalid_arguments", "focus": BROKEN})
    skill = queue.get(broken["items"]["skill_edit"])
    assert BROKEN in skill.payload["after"]
    # 6. approve the skill edit only; 7. apply it as harness v1
    run("review", "approve", str(skill.id))
    assert "v1" in run("evolve", "apply")
    # 8. re-evaluate with v1, 9. the round report
    run("eval", "--agent", "llm", *model, "--tasks", ",".join(ids), "--out", str(r1), "--harness", "v1")
    run("evolve", "report", "--before", str(r0), "--after", str(r1))
    report = json.loads((loop / "rounds" / "1" / "report.json").read_text())
    overall = report["categories"][-1]
    n_broken = sum(i.startswith("clock.alarm_off/") for i in ids)
    n = len(ids)
    assert overall["before"]["episodes"] == overall["after"]["episodes"] == n == board0["categories"][-1]["episodes"]
    # before: the swim task only (the approved one has no plan the model knows); after: the template's too
    assert overall["before"]["success"] == pytest.approx(1 / n)
    assert overall["after"]["success"] == pytest.approx((1 + n_broken) / n)
    assert report["edits"] == [{"id": skill.id, "kind": "skill_edit", "title": skill.title}]
    fixed = next(c for c in report["clusters"] if c["id"] == broken["id"])
    assert fixed["failing"] == fixed["now_succeed"] == n_broken and fixed["edits_applied"] == [skill.id]
    assert report["before"]["harness"] == "v0" and report["after"]["harness"] == "v1"
    from phoneenv.loop.runstore import suite_version

    assert report["before"]["suite"] == report["after"]["suite"] == suite_version(select(",".join(ids)))
    assert json.loads((r1 / "scoreboard.json").read_text())["suite"] == report["after"]["suite"]
    assert "| Overall |" in (loop / "rounds" / "1" / "report.md").read_text()
    # the run store kept every rollout of both runs, failures included, with the harness named
    from phoneenv.loop.runstore import RunStore

    rows = RunStore(loop / "runs.sqlite").rows()
    assert len(rows) == 2 * n and sum(not r["success"] for r in rows) == (n - 1) + (n - 1 - n_broken)
    assert {r["harness"] for r in rows if r["run"] == str(r1)} == {"v1"}
    # 10. the sampler's weights follow the last round's results; every change logged
    run("evolve", "weights", "--run", str(r1), "--min-episodes", "1")
    weights = json.loads((loop / "weights.json").read_text())
    assert weights["source"]["generated"] != 1.0
    assert (loop / "weights.jsonl").read_text().strip()
    if train:  # 11. one RL step on the tiny model, prompts drawn by those weights
        from agents.llm.tiny import build_tiny_model

        base = build_tiny_model(tmp_path / "tiny")
        out = run("train", "rl", "--model", str(base), "--out", str(tmp_path / "rl"), "--tasks", ",".join(ids),
                  "--sampler", str(loop / "weights.json"), "--steps", "1", "--group-size", "2", "--max-turns", "2",
                  "--max-new-tokens", "16", "--eval-every", "0", "--use-cpu")  # fmt: skip
        assert (tmp_path / "rl" / "final").is_dir()
        trained = [r for r in RunStore(loop / "runs.sqlite").rows() if r["origin"] != "eval"]
        assert trained and {r["task_id"] for r in trained} <= set(ids)


pytestmark = pytest.mark.slow


def test_the_whole_loop_with_a_scripted_model(tmp_path, monkeypatch):
    pytest.importorskip("trl", reason="`train rl` needs the rl extra")
    the_loop(tmp_path, monkeypatch, InProcess(), train=True)


def test_the_whole_loop_through_transformers_serve(tmp_path, monkeypatch, llm_server):
    the_loop(tmp_path, monkeypatch, served_client(llm_server))
