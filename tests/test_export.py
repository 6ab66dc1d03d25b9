"""``phoneenv traces export``: a run's traces as a folder ``datasets.load_dataset`` loads, and SFT
examples that are a valid ``datasets.Dataset`` (tested with the real ``datasets``)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agents import RandomAgent, ReferenceAgent
from phoneenv.cli import app
from phoneenv.contract import Trace
from phoneenv.evaluation import run_episodes
from phoneenv.export import episode_row, export_run, find_trace_files, read_traces
from phoneenv.tasks import get_task
from tests import waiting

datasets = pytest.importorskip("datasets", reason="the export needs the 'data' extra (datasets)")

IDS = ["contacts.lookup_number/0", "settings.toggle/0", "clock.alarm_off/0"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run folder with the reference agent's traces (successes) and the random agent's (failures,
    errors, unparsed calls: rows whose nullable columns are null in some rows and not in others)."""
    root = tmp_path_factory.mktemp("run")
    tasks = [get_task(i) for i in IDS]
    run_episodes(ReferenceAgent(), tasks, root / "traces" / "ref")
    run_episodes(RandomAgent(seed=3), tasks, root / "traces" / "random", seed=1)
    return root


def originals(run_dir):
    return list(read_traces(find_trace_files(run_dir)))


def test_export_loads_with_datasets_and_keeps_every_value(run_dir, tmp_path):
    traces = originals(run_dir)
    assert len(traces) == 6 and {t.agent for t in traces} == {"reference", "random"}
    report = export_run(run_dir, tmp_path / "ds")
    assert (report.episodes, report.files) == (6, 6)
    episodes = datasets.load_dataset(str(tmp_path / "ds"), split="train")
    assert episodes.num_rows == 6
    for row, trace in zip(episodes, traces, strict=True):
        assert Trace.model_validate_json(row["trace"]) == trace  # the whole trace, exactly
        assert row["task_id"] == trace.task_id and row["seed"] == trace.seed and row["agent"] == trace.agent
        assert row["success"] == trace.verdict.success and row["progress"] == pytest.approx(trace.verdict.progress)
        assert row["num_steps"] == len(trace.steps)
        assert row["errors"] == sum(not s.feedback.ok for s in trace.steps)
        assert json.loads(row["verdict"]) == trace.verdict.model_dump(mode="json")
    assert sum(episodes["success"]) == 3 and not all(episodes["success"])  # the reference's 3 succeed
    steps = datasets.load_dataset(str(tmp_path / "ds"), "steps", split="train")
    assert steps.num_rows == sum(len(t.steps) for t in traces)
    for row in steps:
        step = traces[row["episode"]].steps[row["index"] - 1]
        assert row["tool"] == (step.action.name if step.action else None)
        assert (json.loads(row["arguments"]) if row["arguments"] else None) == (
            step.action.arguments if step.action else None
        )
        assert row["ok"] == step.feedback.ok and json.loads(row["feedback"]) == step.feedback.model_dump(mode="json")
    assert None in steps["error"] and any(e is not None for e in steps["error"])  # nullable columns both ways


def test_sft_config_and_examples_are_a_valid_dataset(run_dir, tmp_path):
    from rl.sft import traces_to_examples

    traces = originals(run_dir)
    examples = traces_to_examples(traces, include_failed=True)
    ds = datasets.Dataset.from_list(examples)  # raised ArrowInvalid while tools were nested dicts
    assert ds.num_rows == 6 and ds.features["tools"] == datasets.Value("string")
    assert [json.loads(t) for t in ds["tools"]] == [json.loads(e["tools"]) for e in examples]
    export_run(run_dir, tmp_path / "ds")
    sft = datasets.load_dataset(str(tmp_path / "ds"), "sft", split="train")
    ok = [t for t in traces if t.verdict.success]
    assert sft.num_rows == len(ok) == 3  # failed episodes left out by default
    assert sft["task_id"] == [t.task_id for t in ok]
    export_run(run_dir, tmp_path / "all", include_failed=True)
    assert datasets.load_dataset(str(tmp_path / "all"), "sft", split="train").num_rows == 6


def test_sft_rows_tokenize_as_the_examples(run_dir, tokenizer):
    """A row read back from Arrow (absent keys as None) renders to the same tokens and mask."""
    from rl.sft import tokenize_example, traces_to_examples

    examples = traces_to_examples(originals(run_dir), include_failed=True)
    for row, ex in zip(datasets.Dataset.from_list(examples), examples, strict=True):
        assert tokenize_example(row, tokenizer) == tokenize_example(ex, tokenizer)


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def test_rows_with_shapes_arrow_cannot_mix(tmp_path):
    """Answer values of every JSON type, tokens present and absent, a seedless trace: each file
    alone would infer other column types (``Couldn't cast ... to null``); the export loads."""
    base = Trace.model_validate_json(_one_trace(tmp_path))
    variants = []
    for k, value in enumerate([None, 3, "x", [1, "a"], {"k": {"deep": [None]}}]):
        t = base.model_copy(deep=True)
        t.verdict.answer_value = value
        t.seed = None if k == 0 else k
        if k % 2:
            for s in t.steps:
                s.tokens = {"output": k}
        variants.append(t)
    src = tmp_path / "mixed"
    src.mkdir()
    for k, t in enumerate(variants):
        (src / f"t{k}.jsonl").write_text(t.model_dump_json() + "\n")
    export_run(src, tmp_path / "ds", sft=False)
    rows = datasets.load_dataset(str(tmp_path / "ds"), split="train")
    assert [json.loads(v)["answer_value"] for v in rows["verdict"]] == [None, 3, "x", [1, "a"], {"k": {"deep": [None]}}]
    assert rows["seed"] == [None, 1, 2, 3, 4]
    steps = datasets.load_dataset(str(tmp_path / "ds"), "steps", split="train")
    assert {r["tokens"] for r in steps} == {None, json.dumps({"output": 1}), json.dumps({"output": 3})}
    assert (
        not (tmp_path / "ds" / "sft").exists() and "config_name: sft" not in (tmp_path / "ds" / "README.md").read_text()
    )


def _one_trace(tmp_path):
    (res,) = run_episodes(ReferenceAgent(), [get_task(IDS[0])], tmp_path / "one")
    return open(res.trace_path).read()


def said(res):
    return " ".join(res.output.split())  # rich wraps lines at spaces


def test_cli_export_and_its_errors(run_dir, tmp_path):
    out = tmp_path / "ds"
    res = CliRunner().invoke(app, ["traces", "export", str(run_dir), "--to", str(out), "--no-sft"])
    assert res.exit_code == 0, res.output
    assert "6 episodes" in res.output and not (out / "sft").exists()
    assert datasets.load_dataset(str(out), split="train").num_rows == 6
    res = CliRunner().invoke(app, ["traces", "export", str(run_dir), "--to", str(out)])
    assert res.exit_code == 2 and "not empty; pass --overwrite" in said(res)
    res = CliRunner().invoke(app, ["traces", "export", str(tmp_path / "nope"), "--to", str(tmp_path / "x")])
    assert res.exit_code == 2 and "does not exist" in said(res)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "t.jsonl").write_text('{"task_id": "x"}\n')
    res = CliRunner().invoke(app, ["traces", "export", str(bad), "--to", str(tmp_path / "y")])
    assert res.exit_code == 2 and "t.jsonl, line 1: not a trace" in said(res)


def test_episode_row_counts_hand_checked():
    """A trace built by hand: two steps, one error, no verdict."""
    trace = Trace.model_validate(
        {
            "task_id": "t", "seed": 0, "backend": "sandbox", "category": "tool", "domain": "time", "goal": "g",
            "steps": [
                {"index": 1, "action": {"name": "clock.get", "arguments": {}}, "feedback": {"ok": True},
                 "clock": "2026-01-01T00:00:00", "backend": "sandbox"},
                {"index": 2, "raw": "hm", "feedback": {"ok": False, "error": "invalid_json"},
                 "clock": "2026-01-01T00:00:00", "backend": "sandbox"},
            ],
        }
    )  # fmt: skip
    row = episode_row(trace)
    assert (row["num_steps"], row["tool_calls"], row["errors"], row["success"], row["verdict"]) == (
        2,
        1,
        1,
        False,
        None,
    )


def test_export_without_the_data_extra_says_how_to_install_it(run_dir, tmp_path):
    """`datasets` hidden in a fresh interpreter: one line naming the install command, exit code 1."""
    import sys

    code = (
        "import sys\nsys.modules['datasets'] = None\nfrom phoneenv.cli import app\n"
        f"sys.argv = ['phoneenv', 'traces', 'export', {str(run_dir)!r}, '--to', {str(tmp_path / 'ds')!r}]\napp()\n"
    )
    proc = waiting.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout.strip()
    assert len(out.splitlines()) == 1 and "phoneenv traces export needs the 'data' extra" in out
    assert "[data]" in out and "Traceback" not in proc.stderr
    assert not (tmp_path / "ds").exists()
