"""Research-grade eval: several seeds per task, pass@k and pass^k, seed-keyed traces, --resume."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agents import ReferenceAgent
from agents.base import AgentAction
from phoneenv.cli import app
from phoneenv.evaluation import (
    EpisodeResult,
    check_seeds,
    pass_at_k,
    pass_hat_k,
    pass_k,
    read_results,
    run_episodes,
    score,
)
from phoneenv.export import find_trace_files, read_traces
from phoneenv.tasks import get_task

A, B = "settings.toggle/0", "clock.alarm_off/0"  # each needs a change of state: finishing at once fails


class Flaky(ReferenceAgent):
    """Plays the reference plan on the episodes ``wins`` names ((task id, k): the k-th episode
    of that task, counted from 0) and gives up at once (finish) on the others."""

    name = "flaky"

    def __init__(self, wins=frozenset(), **kwargs):
        super().__init__(**kwargs)
        self.wins = set(wins)
        self.seen: Counter[str] = Counter()
        self.give_up = False

    def reset(self, observation, info):
        super().reset(observation, info)
        k = self.seen[info["task_id"]]
        self.seen[info["task_id"]] += 1
        self.give_up = (info["task_id"], k) not in self.wins

    def act(self, observation, info):
        if self.give_up:
            return AgentAction(json.dumps({"name": "finish", "arguments": {"answer": "no"}}))
        return super().act(observation, info)


def brute(n, c, k):
    """pass@k and pass^k by enumerating every k-subset of n episodes (c successes first)."""
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(s) for s in subsets) / len(subsets), sum(all(s) for s in subsets) / len(subsets)


def test_estimators_match_enumeration_and_hand_values():
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)  # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)  # C(2,2)/C(5,2) = 1/10
    for n in range(1, 7):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert (pass_at_k(n, c, k), pass_hat_k(n, c, k)) == pytest.approx(brute(n, c, k))
    for bad in [(3, 4, 1), (3, 1, 0), (3, 1, 4), (2, -1, 1)]:
        with pytest.raises(ValueError, match="pass@k needs"):
            pass_at_k(*bad)


def result(task_id, seed, success, infra=False):
    return EpisodeResult(task_id, "tool", "time", success, float(success), 1, 0, infra, 0, 0.0, None, seed)


def test_pass_k_per_task_and_overall_by_hand():
    rs = [result("a", s, s != 1) for s in range(3)] + [result("b", s, s == 1) for s in range(3)]
    rs += [result("c", 0, True), result("c", 1, False, infra=True)]  # c: one scored episode
    pk = pass_k(rs)
    assert pk["k"] == [1, 2, 3] and pk["tasks_at_k"] == [3, 2, 2]
    assert pk["per_task"]["a"] == {
        "n": 3, "c": 2, "pass_at_k": [pytest.approx(2 / 3), 1.0, 1.0],
        "pass_hat_k": [pytest.approx(2 / 3), pytest.approx(1 / 3), 0.0],
    }  # fmt: skip
    assert pk["per_task"]["c"]["n"] == 1  # the infrastructure-error episode is not scored
    assert pk["pass_at_k"] == pytest.approx([(2 / 3 + 1 / 3 + 1) / 3, (1 + 2 / 3) / 2, 1.0])
    assert pk["pass_hat_k"] == pytest.approx([(2 / 3 + 1 / 3 + 1) / 3, (1 / 3 + 0) / 2, 0.0])
    assert pass_k([result("a", 0, True), result("b", 0, False)]) is None  # one seed: no pass@k block
    assert score("x", rs).pass_k == pk and score("x", rs[:1]).pass_k is None


def test_check_seeds():
    assert check_seeds(range(2, 5)) == [2, 3, 4]
    for bad, msg in [([], "empty"), ([0, -1], ">= 0"), ([1, 1], "repeat"), (["0"], ">= 0"), ([True], ">= 0")]:
        with pytest.raises(ValueError, match=msg):
            check_seeds(bad)


def test_run_episodes_with_seeds_keys_traces_by_seed(tmp_path):
    wins = {(A, 0), (A, 2), (B, 1)}
    agent = Flaky(wins)
    results = run_episodes(agent, [get_task(A), get_task(B)], tmp_path, seeds=[0, 1, 2])
    assert [(r.task_id, r.seed) for r in results] == [(t, s) for s in range(3) for t in (A, B)]
    assert [r.success for r in results] == [(r.task_id, r.seed) in wins for r in results]
    for r in results:
        path = Path(r.trace_path)
        assert path.parent == tmp_path / f"seed-{r.seed}" and path.name == r.task_id.replace("/", "-") + ".jsonl"
        (trace,) = read_traces([path])
        assert trace.seed == r.seed and trace.task_id == r.task_id and trace.verdict.success == r.success
    pk = score("flaky", results).pass_k
    assert pk["per_task"][A]["pass_hat_k"] == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert pk["per_task"][B]["pass_at_k"] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert len(find_trace_files(tmp_path)) == 6
    # SFT reads a multi-seed run's traces too (its seed-<s> folders), and none of its other files.
    from rl.sft import load_traces

    (tmp_path / "results.jsonl").write_text("{}\n")
    got = sorted((t.task_id, t.seed) for t in load_traces(tmp_path))
    assert got == sorted((t, s) for s in range(3) for t in (A, B))


def cli(*args):
    return CliRunner().invoke(app, ["eval", *args])


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_cli_seeds_resume_and_layouts(tmp_path):
    out = tmp_path / "run"
    res = cli("--tasks", f"{A},{B}", "--seeds", "3", "--seed", "4", "--out", str(out))
    assert res.exit_code == 0, res.output
    first = lines(out / "results.jsonl")
    assert sorted((r["task_id"], r["seed"]) for r in first) == sorted((t, s) for t in (A, B) for s in (4, 5, 6))
    board = json.loads((out / "scoreboard.json").read_text())
    assert board["pass_k"]["k"] == [1, 2, 3] and board["pass_k"]["pass_hat_k"] == [1.0, 1.0, 1.0]
    assert json.loads((out / "run.json").read_text())["seeds"] == 3
    assert {p.parent.name for p in find_trace_files(out)} == {"seed-4", "seed-5", "seed-6"}
    assert "pass@k" in res.output
    # A run killed after 4 episodes: --resume plays exactly the 2 missing (task, seed) pairs.
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in first[:4]))
    res = cli("--tasks", f"{A},{B}", "--seeds", "3", "--seed", "4", "--out", str(out), "--resume")
    assert res.exit_code == 0, res.output
    assert "4 episodes done, 2 to run" in " ".join(res.output.split())
    again = lines(out / "results.jsonl")
    assert again[:4] == first[:4] and len(again) == 6
    assert sorted((r["task_id"], r["seed"]) for r in again[4:]) == sorted((r["task_id"], r["seed"]) for r in first[4:])
    assert len(read_results(out / "results.jsonl")) == 6
    assert json.loads((out / "scoreboard.json").read_text())["categories"][-1]["episodes"] == 6
    # Another number of seeds is another run: refused, naming the key.
    res = cli("--tasks", f"{A},{B}", "--seeds", "2", "--seed", "4", "--out", str(out), "--resume")
    assert res.exit_code == 2 and "seeds" in res.output
    # One seed keeps the old layout and run.json (so runs made before --seeds still resume).
    one = tmp_path / "one"
    assert cli("--tasks", A, "--out", str(one)).exit_code == 0
    assert [p.relative_to(one).as_posix() for p in find_trace_files(one)] == ["traces/settings.toggle-0.jsonl"]
    assert "seeds" not in json.loads((one / "run.json").read_text())
    assert json.loads((one / "scoreboard.json").read_text())["pass_k"] is None


# -- the model, endpoint and decoding settings, recorded -------------------------------------------


def test_public_url_cuts_credentials_and_query():
    from phoneenv.evaluation import public_url

    assert public_url("https://user:s3cret@api.example.com:8443/v1?api-key=sk-1#x") == "https://api.example.com:8443/v1"
    assert public_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert public_url(None) is None and public_url("") is None


def test_model_endpoint_and_decoding_in_traces_scoreboard_and_run_json(tmp_path):
    from tests.latency_openai import LatencyOpenAI

    secret = "sk-do-not-leak-0123456789"
    tasks = [get_task(A), get_task(B)]
    out = tmp_path / "run"
    with LatencyOpenAI(tasks, latency_s=0.0) as server:
        args = ["--agent", "llm", "--base-url", server.base_url, "--model", "m-7b", "--api-key", secret]
        res = cli(*args, "--max-tokens", "77", "--tasks", f"{A},{B}", "--out", str(out))
        assert res.exit_code == 0, res.output
        want = {"name": "m-7b", "endpoint": server.base_url, "decoding": {"temperature": 0.0, "max_tokens": 77}}
        for trace in read_traces(find_trace_files(out)):
            assert trace.model == want
        assert json.loads((out / "scoreboard.json").read_text())["model"] == want
        assert json.loads((out / "run.json").read_text())["model_record"] == want
        assert f"model m-7b at {server.base_url} · temperature 0.0, max_tokens 77" in res.output
        for path in out.rglob("*"):
            assert not path.is_file() or secret not in path.read_text(errors="replace"), path
        from phoneenv.export import export_run

        export_run(out, tmp_path / "ds", sft=False)
        rows = pytest.importorskip("datasets").load_dataset(str(tmp_path / "ds"), split="train")
        assert [json.loads(m) for m in rows["model"]] == [want, want]
        # The record is not configuration: a run resumes against the same model served elsewhere.
        (out / "results.jsonl").write_text((out / "results.jsonl").read_text().splitlines()[0] + "\n")
        res = cli(*args, "--max-tokens", "77", "--tasks", f"{A},{B}", "--out", str(out), "--resume")
        assert res.exit_code == 0 and "1 episodes done, 1 to run" in " ".join(res.output.split()), res.output
    # Agents without a model record none; an agent may describe its own (its endpoint cleaned).
    (ref,) = run_episodes(ReferenceAgent(), [get_task(A)], tmp_path / "ref")
    assert next(read_traces([Path(ref.trace_path)])).model is None

    class Described(ReferenceAgent):
        def model_info(self):
            return {"name": "mine", "endpoint": "http://k:pw@host/v1/?token=t", "decoding": {"top_p": 0.9}}

    (own,) = run_episodes(Described(), [get_task(A)], tmp_path / "own")
    assert next(read_traces([Path(own.trace_path)])).model == {
        "name": "mine", "endpoint": "http://host/v1", "decoding": {"top_p": 0.9},
    }  # fmt: skip


# -- --agent module:Class ------------------------------------------------------------------------

BUILT: list[dict] = []


class OwnAgent(ReferenceAgent):
    """A user's agent: takes two of the documented keyword arguments."""

    name = "own"

    def __init__(self, seed, max_tokens=1):
        super().__init__()
        BUILT.append({"seed": seed, "max_tokens": max_tokens})


class TextAgent:
    """No base class, no name, no reset; act returns the call's JSON text."""

    def act(self, observation, info):
        return json.dumps({"name": "finish", "arguments": {"answer": "no"}})


class Broken:
    def __init__(self):
        raise RuntimeError("boom")


class NoAct:
    name = "no-act"


def test_cli_agent_module_class(tmp_path):
    BUILT.clear()
    out = tmp_path / "own"
    res = cli("--agent", "tests.test_eval_seeds:OwnAgent", "--tasks", A, "--seed", "3", "--max-tokens", "9",
              "--out", str(out))  # fmt: skip
    assert res.exit_code == 0, res.output
    assert BUILT == [{"seed": 3, "max_tokens": 9}]
    (row,) = lines(out / "results.jsonl")
    assert row["success"] and row["seed"] == 3
    assert json.loads((out / "run.json").read_text())["agent"] == "tests.test_eval_seeds:OwnAgent"
    assert next(read_traces(find_trace_files(out))).agent == "own"
    res = cli("--agent", "tests.test_eval_seeds:TextAgent", "--tasks", A, "--out", str(tmp_path / "text"))
    assert res.exit_code == 0, res.output
    (row,) = lines(tmp_path / "text" / "results.jsonl")
    assert not row["success"] and row["steps"] == 1
    assert next(read_traces(find_trace_files(tmp_path / "text"))).agent == "TextAgent"


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("no_such_module_xyz:Agent", "cannot import 'no_such_module_xyz' for --agent no_such_module_xyz:Agent: "
         "ModuleNotFoundError"),
        ("tests.test_eval_seeds:Missing", "module 'tests.test_eval_seeds' has no 'Missing'"),
        ("tests.test_eval_seeds:Broken", "constructing tests.test_eval_seeds:Broken (no arguments) failed: "
         "RuntimeError: boom"),
        ("tests.test_eval_seeds:NoAct", "tests.test_eval_seeds:NoAct has no act(observation, info) method"),
        ("tests.test_eval_seeds:BUILT", "is not a class"),
        ("tests.test_eval_seeds:", "is not module:Class"),
    ],
)  # fmt: skip
def test_cli_agent_module_class_errors(tmp_path, spec, said):
    res = cli("--agent", spec, "--tasks", A, "--out", str(tmp_path / "x"))
    assert res.exit_code == 2 and said in " ".join(res.output.replace("│", " ").split()), res.output


def test_docs_python_api_example_runs(tmp_path, monkeypatch, capsys):
    """The docs' eval-loop example (docs/guides/plan-with-an-llm.md), run as written in a scratch
    folder, gives what it says (tests/test_docs_site.py runs it too, without these checks)."""
    guide = (Path(__file__).parent.parent / "docs" / "guides" / "plan-with-an-llm.md").read_text()
    section = guide.split("loop from Python:", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "plan-with-an-llm.md", "exec"), namespace)
    results, board, specs = namespace["results"], namespace["board"], namespace["specs"]
    assert len(results) == 2 * len(namespace["select"]("contacts.*")) and all(r.success for r in results)
    assert {r.seed for r in results} == {0, 1} and (tmp_path / "runs/py/seed-1").is_dir()
    assert board.pass_k["pass_hat_k"] == [1.0, 1.0]
    assert "contacts.set_favorite" in {s.name for s in specs}
    assert {t["function"]["name"] for t in namespace["openai_tools"]} >= {"contacts__set_favorite", "finish"}
    assert capsys.readouterr().out.strip() == "1.0 [1.0, 1.0]"
