"""Agents and the command line: reference and random agents, eval output, tasks commands."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import rstr
from typer.testing import CliRunner

from agents import RandomAgent, ReferenceAgent
from agents.random_agent import sample_schema
from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.cli import app
from phoneenv.evaluation import EpisodeResult, run_episodes, score
from phoneenv.tasks import select
from tests import waiting

runner = CliRunner()


def test_random_arguments_are_schema_valid():
    tools = SandboxBackend().tools()
    rng = random.Random(0)
    xeger = rstr.Rstr(rng)
    # Dates drawn from a pattern can be impossible (2026-02-31) and are caught by the tool, not
    # the schema; everything the schema alone decides must pass.
    for _ in range(20):
        for entry in tools.values():
            args = sample_schema(entry.spec.parameters, rng, xeger, ids=[])
            entry.validator.validate(args)  # raises ArgumentError on a schema-invalid draw


def test_reference_and_random_agents_on_tasks(tmp_path):
    tasks = select("contacts.*")
    ref = run_episodes(ReferenceAgent(), tasks, tmp_path / "ref")
    assert all(r.success for r in ref)
    rnd = run_episodes(RandomAgent(seed=1), tasks, tmp_path / "rnd")
    assert sum(r.success for r in rnd) < len(tasks) // 4
    trace = json.loads((tmp_path / "ref" / "contacts.add_contact-0.jsonl").read_text())
    assert trace["task_id"] == "contacts.add_contact/0" and trace["verdict"]["success"]
    assert trace["steps"][-1]["action"]["name"] == "finish"
    # Same agent seed, same traces.
    again = run_episodes(RandomAgent(seed=1), tasks, tmp_path / "rnd2")
    for a, b in zip(rnd, again, strict=True):
        assert (tmp_path / "rnd" / a.trace_path.split("/")[-1]).read_text() == (
            tmp_path / "rnd2" / b.trace_path.split("/")[-1]
        ).read_text()


def test_random_agent_draws_depend_only_on_seed_and_task(tmp_path):
    """A run split over processes plays episodes in another order: each episode's calls must not
    depend on the episodes before it (the Ray path relies on this)."""
    tasks = select("contacts.*")[:6]
    forward = run_episodes(RandomAgent(seed=4), tasks, tmp_path / "fwd")
    backward = run_episodes(RandomAgent(seed=4), tasks[::-1], tmp_path / "bwd")
    alone = run_episodes(RandomAgent(seed=4), tasks[3:4], tmp_path / "one")
    steps = {r.task_id: r.steps for r in forward}
    assert steps == {r.task_id: r.steps for r in backward}
    for r in forward:
        name = Path(r.trace_path).name
        assert (tmp_path / "fwd" / name).read_text() == (tmp_path / "bwd" / name).read_text()
    one = Path(alone[0].trace_path).name
    assert (tmp_path / "one" / one).read_text() == (tmp_path / "fwd" / one).read_text()
    # A different agent seed draws differently (the seed is not ignored).
    other = run_episodes(RandomAgent(seed=5), tasks, tmp_path / "other")
    assert any(
        (tmp_path / "other" / Path(a.trace_path).name).read_text()
        != (tmp_path / "fwd" / Path(a.trace_path).name).read_text()
        for a in other
    )


_DRAWS = """
import hashlib, sys
from agents import RandomAgent
from phoneenv.env import PhonePlanEnv
from phoneenv.evaluation import play_episode
from phoneenv.tasks import select
tasks = select("contacts.favorite/*")[:8]
env = PhonePlanEnv(tasks=tasks)
agent = RandomAgent(seed=3)
print(hashlib.sha256("".join(play_episode(agent, env, t, 0)[1] for t in tasks).encode()).hexdigest())
"""


@pytest.mark.slow
def test_random_agent_draws_do_not_depend_on_the_hash_seed(tmp_path):
    """rstr draws a negated class (``[^...]``) from a set whose order follows PYTHONHASHSEED, so
    two processes with one agent seed drew other calls (found on Ray workers). Two processes with
    different hash seeds must now play the same episodes."""
    import os
    import sys

    digests = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = waiting.run([sys.executable, "-c", _DRAWS], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        digests.append(out.stdout.strip())
    assert len(digests[0]) == 64 and digests[0] == digests[1]


def test_scoreboard_by_hand():
    def r(cat, dom, ok, prog, steps, errors, infra=False, task="t"):
        return EpisodeResult(task, cat, dom, ok, prog, steps, errors, infra, 10, 0.5, None)

    results = [
        r("tool", "time", True, 1.0, 4, 1, task="a"),
        r("tool", "notes", False, 0.5, 6, 3, task="b"),
        r("tool", "notes", False, 0.0, 10, 10, infra=True, task="c"),
        r("skills", "notes", True, 1.0, 0, 0, task="d"),
        r("skills", "notes", False, 0.0, 0, 0, task="d"),  # a second episode of the same task
    ]
    board = score("x", results)
    cats = {row.label: row for row in board.categories}
    assert (cats["Tool"].episodes, cats["Tool"].tasks, cats["Tool"].success, cats["Tool"].progress) == (2, 2, 0.5, 0.75)
    assert (cats["Skills"].episodes, cats["Skills"].tasks, cats["Skills"].success) == (2, 1, 0.5)
    assert cats["Memory"].episodes == 0 and cats["Memory"].tasks == 0 and cats["Memory"].success is None
    assert (cats["Overall"].tasks, cats["Overall"].success) == (3, 0.5)
    assert {row.label: row.success for row in board.domains} == {"notes": 1 / 3, "time": 1.0}
    assert board.mean_steps == 20 / 5
    assert board.error_rate == 14 / 20
    assert board.infrastructure_errors == 1


def test_cli_eval_writes_traces_and_scoreboard(tmp_path):
    res = runner.invoke(
        app, ["eval", "--agent", "reference", "--tasks", "template:contacts.favorite", "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    assert "Overall" in res.output and "Sub-agent" in res.output
    assert len(list((tmp_path / "traces").glob("*.jsonl"))) == 8
    board = json.loads((tmp_path / "scoreboard.json").read_text())
    assert board["categories"][-1] == {"label": "Overall", "episodes": 8, "success": 1.0, "progress": 1.0, "tasks": 8}
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 8


def test_cli_errors_are_clear(tmp_path):
    res = runner.invoke(app, ["eval", "--agent", "genius", "--tasks", "contacts.*", "--out", str(tmp_path)])
    assert res.exit_code != 0 and "unknown agent" in res.output
    res = runner.invoke(app, ["eval", "--tasks", "nope:1", "--out", str(tmp_path)])
    assert res.exit_code != 0 and "unknown selector" in res.output


def test_cli_tasks_commands():
    res = runner.invoke(app, ["tasks", "list", "contacts.favorite/*"])
    assert res.exit_code == 0 and "8 tasks" in res.output and "sandbox" in res.output
    assert all(f"contacts.favorite/{k}" in res.output for k in range(8))  # ids are never folded
    res = runner.invoke(app, ["tasks", "show", "contacts.favorite/0"])
    assert res.exit_code == 0
    shown = json.loads(res.output)
    assert shown["id"] == "contacts.favorite/0" and set(shown["fixtures"]["vault"].values()) == {"**********"}
    res = runner.invoke(app, ["tasks", "validate", "template:contacts.favorite"])
    assert res.exit_code == 0 and "8/8 tasks proven" in res.output
    # The probe counts, from the tasks themselves: all must-pass accepted, all must-fail rejected.
    tasks = select("template:contacts.favorite")
    n_pass = sum(p.expect == "pass" for t in tasks for p in t.probes)
    n_fail = sum(p.expect == "fail" for t in tasks for p in t.probes)
    assert n_pass >= 16 and n_fail >= 16
    flat = " ".join(res.output.split())
    assert f"{n_pass}/{n_pass} must-pass probes accepted, {n_fail}/{n_fail} must-fail probes rejected" in flat
    assert "│ contacts.favorite" in res.output  # a row of the probe table


def test_cli_validate_reports_a_probe_with_the_wrong_verdict(monkeypatch):
    from phoneenv.contract import Probe

    task = select("contacts.favorite/0")[0]
    lying = task.model_copy(
        update={"probes": [Probe(name="do nothing", expect="pass", plan=[task.reference_plan[-1]])]}
    )
    monkeypatch.setattr("phoneenv.cli.tasks.select_tasks", lambda *_: [lying])
    res = runner.invoke(app, ["tasks", "validate", "contacts.favorite/0"])
    assert res.exit_code == 1 and "BROKEN contacts.favorite/0" in res.output
    assert "probe 'do nothing' must pass but fails" in " ".join(res.output.split())
    assert "0/1 must-pass probes accepted" in " ".join(res.output.split())


def test_cli_backend_errors_are_one_liners(tmp_path):
    res = runner.invoke(app, ["eval", "--backend", "nope", "--out", str(tmp_path)])
    assert res.exit_code != 0 and "unknown backend" in res.output and "Traceback" not in res.output
    res = runner.invoke(
        app, ["eval", "--tasks", "hybrid.cinema_book_text/0", "--backend", "sandbox", "--out", str(tmp_path)]
    )
    flat = " ".join(res.output.replace("\u2502", " ").split())
    assert res.exit_code != 0 and "runs on the 'sandbox' backend" in flat


def test_cli_list_json_and_stats():
    res = runner.invoke(app, ["tasks", "list", "template:contacts.favorite", "--json"])
    rows = [json.loads(line) for line in res.output.splitlines()]
    assert [r["id"] for r in rows] == [f"contacts.favorite/{k}" for k in range(8)]
    stats = json.loads(runner.invoke(app, ["tasks", "stats"]).output)
    assert stats["by_template"]["contacts.favorite"] == 8 and sum(stats["by_backend"].values()) == stats["tasks"]
    # The breadth floors: 200+ tools, 170+ of them verified from the sandbox's state, each of the
    # 13 domains with tools of its own.
    tools = stats["tools"]
    assert tools["total"] >= 200 and tools["sandbox"] >= 170, tools
    assert len(tools["by_domain"]) == 13 and min(tools["by_domain"].values()) >= 5, tools
    # The world's coherence rules, measured over the suite (phoneenv.tasks.coherence).
    from phoneenv.tasks.coherence import RULES

    assert set(stats["world"]) == set(RULES)
    assert all(r["share"] >= 0.99 and r["total"] > 1000 for r in stats["world"].values()), stats["world"]


def test_cli_eval_llm_defaults_to_smollm2_and_the_task_tool_filter(tmp_path, monkeypatch, tiny_model_dir):
    """`eval --agent llm` without --model or --base-url plays SmolLM2 (here the checkpoint function
    hands back the tiny model, to stay fast), offering the task filter's tools; --tools all offers
    every tool, and a malformed filter is a clear error."""
    import agents.llm.client
    import agents.llm.smollm2

    offered = []
    real_chat = agents.llm.client.LocalChatClient.chat

    def chat(self, messages, *, tools=None, **kw):
        offered.append({t["function"]["name"] for t in tools})
        return real_chat(self, messages, tools=tools, **kw)

    monkeypatch.setattr(agents.llm.smollm2, "smollm2_checkpoint", lambda cache_dir=None: Path(tiny_model_dir))
    monkeypatch.setattr(agents.llm.client.LocalChatClient, "chat", chat)
    args = ["eval", "--agent", "llm", "--tasks", "settings.toggle/0", "--max-steps", "1", "--max-tokens", "16"]
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert "SmolLM2" in res.output
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run["model"] == str(tiny_model_dir) and run["tools"] == "task"
    assert offered and all(n.split("__")[0] in {"settings", "user", "system", "finish"} for n in offered[0])
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "b"), "--tools", "all"])
    assert res.exit_code == 0, res.output
    assert len(offered[-1]) > 200
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "c"), "--tools", "clock,"])
    assert res.exit_code != 0 and "--tools" in res.output
    # a trained model folder records its filter (train sft/rl): eval offers that prompt by default
    trained = tmp_path / "trained"
    trained.mkdir()
    for f in Path(tiny_model_dir).iterdir():
        (trained / f.name).symlink_to(f)
    (trained / "phoneenv_tools.json").write_text('{"tool_filter": "apps"}')
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "e"), "--model", str(trained)])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "e" / "run.json").read_text())["tools"] == "apps"
    assert "finish" in offered[-1] and {n.split("__")[0] for n in offered[-1]} == {"settings", "finish"}
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "d"), "--model", str(tmp_path / "nowhere")])
    assert res.exit_code != 0 and "not a model folder" in res.output
