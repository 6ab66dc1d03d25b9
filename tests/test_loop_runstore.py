"""The run store (phoneenv.loop.runstore): every episode of a run kept, failures included."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agents import RandomAgent, ReferenceAgent
from phoneenv.contract import Trace
from phoneenv.evaluation import run_episodes
from phoneenv.export import find_trace_files, read_traces
from phoneenv.loop.runstore import COLUMNS, RunStore, episode_record, task_version
from phoneenv.tasks import get_task

IDS = ["contacts.lookup_number/0", "settings.toggle/0", "calendar.create_event/0"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder with the reference agent's traces (successes) and the random agent's (failures)."""
    root = tmp_path_factory.mktemp("run")
    tasks = [get_task(i) for i in IDS]
    run_episodes(ReferenceAgent(), tasks, root / "traces" / "ref")
    run_episodes(RandomAgent(seed=3), tasks, root / "traces" / "random", seed=1)
    return root


def _originals(run_dir: Path) -> list[Trace]:
    return list(read_traces(find_trace_files(run_dir)))


def test_ingest_keeps_every_episode_with_its_columns(run_dir: Path, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "loop" / "runs.sqlite")
    assert store.rows() == [] and len(store) == 0
    assert store.ingest_run(run_dir) == 6
    rows = store.rows()
    originals = _originals(run_dir)
    assert len(rows) == 6 == len(originals)
    assert list(rows[0]) == list(COLUMNS)
    for row, trace in zip(rows, originals, strict=True):
        task = get_task(trace.task_id)
        v = trace.verdict
        assert Trace.model_validate_json(row["trace"]) == trace
        assert (row["run"], row["origin"], row["mode"], row["step"]) == (str(run_dir), "eval", None, None)
        assert (row["task_id"], row["seed"], row["backend"], row["agent"]) == (
            trace.task_id,
            trace.seed,
            "sandbox",
            trace.agent,
        )
        # the version: SHA-256 of the task's JSON with sorted keys, computed here by hand
        text = json.dumps(task.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert row["task_version"] == hashlib.sha256(text.encode()).hexdigest()[:16]
        assert (row["template"], row["source"], row["capabilities"]) == (task.template, "template", task.capabilities)
        assert (row["category"], row["domain"]) == (task.category.value, task.domain.value)
        assert row["success"] is v.success and row["progress"] == pytest.approx(v.progress)
        assert row["tool_calls"] == v.tool_calls and row["output_tokens"] == v.output_tokens
        errors = {s.feedback.error.value for s in trace.steps if not s.feedback.ok}
        assert row["error_kinds"] == sorted(errors)
        # the task's criteria in order, then the undone guard and the grounded claims every verdict
        # of a task that changes the phone carries
        assert [r.id for r in v.criteria[len(task.criteria) :]] == ["not_reported_undone", "grounded"]
        names = [c.description or r.id for c, r in zip(task.criteria, v.criteria, strict=False)]
        names += ["not_reported_undone", "grounded"]
        failed = [n for n, r in zip(names, v.criteria, strict=True) if not r.passed]
        assert row["failed_criteria"] == failed
        assert row["harness"] is None and row["created_at"].endswith("+00:00")
    assert sum(r["success"] for r in rows) == 3
    assert any(r["failed_criteria"] for r in rows) and any(r["error_kinds"] for r in rows)
    assert all(r["failed_criteria"] == [] for r in rows if r["success"])


def test_ingest_is_idempotent_and_filters_work(run_dir: Path, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    store.ingest_run(run_dir)
    ids = [r["id"] for r in store.rows()]
    assert store.ingest_run(run_dir) == 6
    assert [r["id"] for r in store.rows()] == ids  # nothing added, nothing renumbered
    assert len(store.rows(success=True)) == 3 and len(store.rows(success=False)) == 3
    assert all(not r["success"] for r in store.rows(success=False))
    assert len(store.rows(run=str(run_dir), origin="eval")) == 6
    assert store.rows(origin="rl") == [] and store.rows(run="elsewhere") == []
    assert [r["task_id"] for r in store.rows(task_id=IDS[0])] == [IDS[0], IDS[0]]
    assert [t.agent for t in store.traces(success=True)] == ["reference"] * 3
    with pytest.raises(TypeError, match="unknown run-store filter colour"):
        store.rows(colour="red")


def test_add_stores_rl_rollouts_with_their_step(run_dir: Path, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    trace = _originals(run_dir)[0]
    a = store.add(trace, run="runs/rl", origin="rl", step=3, mode="train", harness="h1")
    b = store.add(trace, run="runs/rl", origin="rl", step=3, mode="train")  # two equal members: two rows
    assert a != b and len(store) == 2
    row = store.rows(origin="rl")[0]
    assert (row["step"], row["mode"], row["harness"]) == (3, "train", "h1")
    assert store.rows(origin="rl")[1]["harness"] is None
    # a key makes an add idempotent: the same key replaces the row and keeps its id
    c = store.add(trace, run="r", origin="eval", key="k")
    other = _originals(run_dir)[1]
    assert store.add(other, run="r", origin="eval", key="k") == c
    assert [r["task_id"] for r in store.rows(run="r")] == [other.task_id]
    with pytest.raises(ValueError, match="origin must be"):
        store.add(trace, run="r", origin="train")


def test_task_version_follows_the_task_and_unknown_tasks_are_kept(run_dir: Path) -> None:
    trace = _originals(run_dir)[0]
    task = get_task(trace.task_id)
    changed = task.model_copy(update={"goal": task.goal + " Please."})
    assert task_version(changed) != task_version(task) == episode_record(trace)["task_version"]
    assert episode_record(trace, changed)["task_version"] == task_version(changed)
    lost = trace.model_copy(update={"task_id": "gen.gone.0000"})
    rec = episode_record(lost)
    assert (rec["task_version"], rec["template"], rec["source"], rec["capabilities"]) == (None, None, None, [])
    assert rec["success"] == trace.verdict.success  # the episode itself still counts


def test_to_dataset_has_every_row_and_typed_columns(run_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("datasets", reason="to_dataset needs the 'data' extra")
    store = RunStore(tmp_path / "runs.sqlite")
    store.ingest_run(run_dir)
    ds = store.to_dataset()
    assert ds.num_rows == 6 and ds.column_names == list(COLUMNS)
    assert ds.features["success"].dtype == "bool" and ds.features["step"].dtype == "int64"
    rows = store.rows()
    for got, row in zip(ds, rows, strict=True):
        assert json.loads(got["capabilities"]) == row["capabilities"]
        assert json.loads(got["failed_criteria"]) == row["failed_criteria"]
        assert got["success"] == row["success"] and got["trace"] == row["trace"]
    assert store.to_dataset(success=False).num_rows == 3


def test_failed_criteria_are_named_by_their_descriptions(run_dir: Path) -> None:
    trace = next(t for t in _originals(run_dir) if not t.verdict.success and not t.verdict.criteria[0].passed)
    task = get_task(trace.task_id)
    described = task.model_copy(
        update={"criteria": [c.model_copy(update={"description": f"check {k}"}) for k, c in enumerate(task.criteria)]}
    )
    want = [f"check {k}" for k, r in enumerate(trace.verdict.criteria) if not r.passed]
    assert want and episode_record(trace, described)["failed_criteria"] == want
    # without descriptions (the templates'), the verdict's criterion ids
    assert episode_record(trace, task)["failed_criteria"] == [r.id for r in trace.verdict.criteria if not r.passed]


# -- phoneenv eval keeps its episodes -----------------------------------------------------------


def _eval(out: Path, *extra: str, agent: str = "reference") -> Any:
    from typer.testing import CliRunner

    from phoneenv.cli import app

    tasks = "calendar.create_event/0,settings.toggle/0"
    return CliRunner().invoke(app, ["eval", "--agent", agent, "--tasks", tasks, "--out", str(out), *extra])


def test_eval_stores_every_episode_and_queues_sensitive_calls(tmp_path: Path) -> None:
    from phoneenv.loop import loop_dir
    from phoneenv.loop.review import ReviewQueue

    loop = loop_dir()  # the test's own (conftest)
    assert loop.name.startswith("loop-")
    res = _eval(tmp_path / "ref")
    assert res.exit_code == 0, res.output
    store = RunStore(loop / "runs.sqlite")
    rows = store.rows()
    assert [(r["task_id"], r["success"], r["run"]) for r in rows] == [
        ("calendar.create_event/0", True, str(tmp_path / "ref")),
        ("settings.toggle/0", True, str(tmp_path / "ref")),
    ]
    assert "2 episodes kept in" in res.output and "1 queued for review" in res.output
    [item] = ReviewQueue(loop / "review.sqlite").items()
    assert item.kind == "sensitive" and item.payload["run"] == str(tmp_path / "ref")
    assert Path(item.evidence[0]["trace"]).is_file()
    # failures are kept too, and ingesting the run folder again adds nothing
    res = _eval(tmp_path / "random", "--seed", "2", agent="random")
    assert res.exit_code == 0, res.output
    assert len(store.rows(run=str(tmp_path / "random"))) == 2
    assert not any(r["success"] for r in store.rows(run=str(tmp_path / "random")))
    assert store.ingest_run(tmp_path / "random") == 2 and len(store) == 4


def test_eval_no_store_and_a_broken_store_lose_no_episode(tmp_path: Path) -> None:
    from phoneenv.loop import loop_dir

    res = _eval(tmp_path / "a", "--no-store")
    assert res.exit_code == 0, res.output
    assert not (loop_dir() / "runs.sqlite").exists() and "kept in" not in res.output
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "runs.sqlite").write_text("not a database", encoding="utf-8")
    res = _eval(tmp_path / "b", "--loop", str(broken))
    assert res.exit_code == 0, res.output
    assert "the run store stopped recording" in res.output
    assert len((tmp_path / "b" / "results.jsonl").read_text().splitlines()) == 2  # the run itself is whole


# -- train rl keeps its rollouts ----------------------------------------------------------------

RL_TASK = "contacts.lookup_number/0"
RL_TOOLS = ["contacts", "user", "finish"]


def test_train_rl_stores_in_the_loop_unless_told_not_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("trl")
    from typer.testing import CliRunner

    import rl.trainers
    from phoneenv.cli import app
    from phoneenv.loop import loop_dir

    seen: dict = {}
    monkeypatch.setattr(rl.trainers, "train_rl", lambda cfg: seen.setdefault("cfg", cfg) and {"steps": 0})
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    for name in ("model.safetensors", "tokenizer.json"):  # a checkpoint by its files' names
        (model / name).write_bytes(b"")
    args = ["train", "rl", "--model", str(model), "--out", str(tmp_path / "rl"), "--tasks", "template:settings.toggle"]
    assert CliRunner().invoke(app, args).exit_code == 0
    assert seen.pop("cfg").run_store == str(loop_dir())
    assert CliRunner().invoke(app, [*args, "--loop", str(tmp_path / "L")]).exit_code == 0
    assert seen.pop("cfg").run_store == str(tmp_path / "L")
    assert CliRunner().invoke(app, [*args, "--no-store"]).exit_code == 0
    assert seen.pop("cfg").run_store is None
    monkeypatch.delenv("PHONEENV_LOOP_DIR")  # no loop configured: the store goes with the run
    assert CliRunner().invoke(app, args).exit_code == 0
    assert seen.pop("cfg").run_store == str(tmp_path / "rl" / "loop")


def test_an_eval_with_no_loop_configured_writes_nothing_outside_its_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --loop or $PHONEENV_LOOP_DIR the run store and the review queue go to <out>/loop;
    the current folder stays empty, and the line that reports the queue names that folder."""
    from phoneenv.loop.review import ReviewQueue

    monkeypatch.delenv("PHONEENV_LOOP_DIR")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    out = tmp_path / "run"
    res = _eval(out)
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in cwd.rglob("*")) == []
    assert len(RunStore(out / "loop" / "runs.sqlite").rows()) == 2
    assert [i.kind for i in ReviewQueue(out / "loop" / "review.sqlite").items()] == ["sensitive"]
    assert f"1 queued for review (phoneenv review list --loop {out / 'loop'})" in "".join(res.output.split("\n"))


@pytest.mark.slow
def test_rollouts_carry_their_traces_and_training_stores_them(tmp_path: Path, tiny_model_dir: Path) -> None:
    pytest.importorskip("trl")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rl.rollout import RolloutConfig, rollout_group
    from rl.trainers import TrainConfig, train_rl

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    for vector in (True, False):  # a vector env resets a finished member on its next step: read before
        cfg = RolloutConfig(max_turns=2, max_new_tokens=24, tool_filter=RL_TOOLS, vector=vector)
        group = rollout_group(model, tokenizer, RL_TASK, 0, 2, cfg, sample_seed=1)
        for traj in group.trajectories:
            assert isinstance(traj.trace, Trace) and traj.trace.task_id == RL_TASK and traj.trace.seed == 0
            assert traj.trace.verdict.model_dump(mode="json") == json.loads(json.dumps(traj.verdict, default=str))
            assert len(traj.trace.steps) >= len(traj.turns) > 0

    loop = tmp_path / "loop"
    train = TrainConfig(
        model_path=None,
        output_dir=str(tmp_path / "run"),
        tasks=[RL_TASK],
        tool_filter=RL_TOOLS,
        num_generations=2,
        per_device_train_batch_size=2,
        max_steps=2,
        max_turns=2,
        max_new_tokens=24,
        use_cpu=True,
        report_to="none",
        save_final=False,
        run_store=str(loop),
    )
    summary = train_rl(train, model, tokenizer)
    rows = RunStore(loop / "runs.sqlite").rows()
    assert len(rows) == summary["episodes"] == 4
    assert {(r["origin"], r["mode"], r["run"]) for r in rows} == {("rl", "train", str(tmp_path / "run"))}
    assert sorted(r["step"] for r in rows) == [0, 0, 1, 1]
    assert all(r["task_id"] == RL_TASK and r["task_version"] for r in rows)
    assert {r["harness"] for r in rows} == {"v0"}
    models = [Trace.model_validate_json(r["trace"]).model for r in rows]
    assert sorted(m["step"] for m in models) == [0, 0, 1, 1] and {m["decoding"]["temperature"] for m in models} == {
        train.temperature
    }


def test_a_replaced_file_is_reopened_not_served_from_a_kept_connection(run_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    trace = _originals(run_dir)[0]
    RunStore(path).add(trace, run="a", origin="eval")
    assert len(RunStore(path).rows()) == 1
    for p in tmp_path.glob("runs.sqlite*"):
        p.unlink()
    store = RunStore(path)
    assert store.rows() == [] and len(store) == 0
    store.add(trace, run="b", origin="eval")
    assert [r["run"] for r in RunStore(path).rows()] == ["b"]


def test_suite_version_is_order_free_and_follows_every_task_change():
    import hashlib

    from phoneenv.loop.runstore import suite_version, task_version
    from phoneenv.tasks import get_task

    a, b = get_task("contacts.favorite/0"), get_task("contacts.favorite/1")
    by_hand = hashlib.sha256(f"{a.id} {task_version(a)}\n{b.id} {task_version(b)}".encode()).hexdigest()[:16]
    assert suite_version([b, a]) == suite_version([a, b]) == by_hand
    assert suite_version([a, b.model_copy(update={"goal": b.goal + "!"})]) != by_hand
    assert suite_version([a]) != by_hand
