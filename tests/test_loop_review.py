"""The review queue (phoneenv.loop.review): submit, decide, read back, across processes."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from phoneenv.contract import TaskSpec, Trace
from phoneenv.loop.review import KINDS, ReviewQueue, canonical_json, check_payload, episode_flags, submit_episode


def _verdict_payload(seed: int = 0) -> dict:
    return {"task_id": "t.a", "seed": seed, "run": "runs/x", "verdict": {"success": True}, "why": "progress 0.5"}


def _task_payload(task: TaskSpec) -> dict:
    return {"task": task.model_dump(mode="json"), "provenance": {"source": "propose", "model": "m"}}


@pytest.fixture
def queue(tmp_path: Path) -> ReviewQueue:
    return ReviewQueue(tmp_path / "sub" / "review.sqlite")


def test_submit_creates_the_file_and_reads_back(queue: ReviewQueue, contacts_task: TaskSpec) -> None:
    assert not queue.path.exists()
    ev = [{"run": "runs/a", "task_id": contacts_task.id, "seed": 3, "trace": "runs/a/traces/x.jsonl"}]
    i = queue.submit(
        "task", "Save Carla", _task_payload(contacts_task), evidence=ev, source="propose", reason="unproven"
    )
    assert queue.path.exists()
    item = queue.get(i)
    assert (item.id, item.kind, item.status, item.title) == (i, "task", "pending", "Save Carla")
    assert item.payload == _task_payload(contacts_task)
    assert TaskSpec.model_validate(item.payload["task"]) == contacts_task
    assert item.evidence == ev
    assert (item.source, item.reason, item.decisions) == ("propose", "unproven", [])
    assert item.created_at.endswith("+00:00")
    with sqlite3.connect(queue.path) as con:  # the write-ahead log, for several processes
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_submit_is_idempotent_and_merges_new_evidence(queue: ReviewQueue) -> None:
    a = queue.submit("verdict", "t.a seed 0", _verdict_payload(), evidence=[{"run": "r1"}])
    # same payload, keys in another order: the same item
    reordered = dict(reversed(list(_verdict_payload().items())))
    b = queue.submit("verdict", "other title", reordered, evidence=[{"run": "r1"}, {"run": "r2"}])
    assert a == b
    assert queue.get(a).evidence == [{"run": "r1"}, {"run": "r2"}]
    assert queue.get(a).title == "t.a seed 0"  # the first submission's title stays
    c = queue.submit("verdict", "t.a seed 1", _verdict_payload(seed=1))
    d = queue.submit("sensitive", "t.a seed 0", _verdict_payload())  # same payload, another kind
    assert len({a, c, d}) == 3
    assert [i.id for i in queue.items()] == [a, c, d]


def test_resubmitting_an_edited_item_finds_it_by_its_first_payload(queue: ReviewQueue) -> None:
    payload = {"group": "cap:search", "before": 1.0, "after": 2.0}
    i = queue.submit("mix_weight", "weight", payload)
    queue.edit(i, "rev", {"group": "cap:search", "before": 1.0, "after": 1.5})
    assert queue.submit("mix_weight", "weight", payload) == i
    assert queue.get(i).payload["after"] == 1.5


def test_approve_reject_edit_are_recorded(queue: ReviewQueue) -> None:
    a = queue.submit("verdict", "a", _verdict_payload(0))
    b = queue.submit("verdict", "b", _verdict_payload(1))
    c = queue.submit("instruction_edit", "c", {"before": "", "after": "Search first.", "diff": "+Search first."})
    item = queue.approve(a, "alice", note="looks right")
    assert item.status == "approved"
    [d] = item.decisions
    assert (d.action, d.reviewer, d.note, d.payload_before) == ("approve", "alice", "looks right", None)
    assert d.at.endswith("+00:00")
    item = queue.reject(b, "bob", "the rule verdict is correct")
    assert (item.status, item.decisions[0].note, item.decisions[0].action) == (
        "rejected",
        "the rule verdict is correct",
        "reject",
    )
    new = {"before": "", "after": "Search before you write.", "diff": "+Search before you write."}
    item = queue.edit(c, "carol", new, note="clearer")
    assert item.status == "pending" and item.payload == new
    assert item.decisions[0].payload_before == {"before": "", "after": "Search first.", "diff": "+Search first."}
    item = queue.approve(c, "dave")
    assert [x.action for x in item.decisions] == ["edit", "approve"]
    assert [x.reviewer for x in item.decisions] == ["carol", "dave"]
    assert item.decided is not None and item.decided.reviewer == "dave"
    assert [i.id for i in queue.approved()] == [a, c]
    assert [i.id for i in queue.approved("instruction_edit")] == [c]
    assert [i.id for i in queue.items(status="rejected")] == [b]
    assert [i.id for i in queue.items(status="pending")] == []
    assert queue.counts() == {"approved": {"verdict": 1, "instruction_edit": 1}, "rejected": {"verdict": 1}}


def test_a_decided_item_is_not_overwritten(queue: ReviewQueue) -> None:
    a = queue.submit("verdict", "a", _verdict_payload())
    queue.approve(a, "alice")
    with pytest.raises(ValueError, match=r"already approved by alice"):
        queue.reject(a, "bob", "no")
    with pytest.raises(ValueError, match="already approved"):
        queue.approve(a, "bob")
    with pytest.raises(ValueError, match="already approved"):
        queue.edit(a, "bob", _verdict_payload(5))
    item = queue.get(a)
    assert item.status == "approved" and len(item.decisions) == 1 and item.payload == _verdict_payload()


def test_bad_input_is_refused_and_changes_nothing(queue: ReviewQueue, contacts_task: TaskSpec) -> None:
    a = queue.submit("verdict", "a", _verdict_payload())
    with pytest.raises(ValueError, match="needs a reason"):
        queue.reject(a, "bob", "  ")
    with pytest.raises(ValueError, match="reviewer"):
        queue.approve(a, "")
    with pytest.raises(KeyError, match="no review item 99"):
        queue.get(99)
    with pytest.raises(KeyError, match="99"):
        queue.approve(99, "bob")
    with pytest.raises(ValueError, match="unknown review kind"):
        queue.submit("bogus", "x", {})
    with pytest.raises(ValueError, match="needs a title"):
        queue.submit("verdict", " ", _verdict_payload(2))
    with pytest.raises(ValueError, match="needs why"):
        queue.submit("verdict", "x", {k: v for k, v in _verdict_payload().items() if k != "why"})
    with pytest.raises(ValueError, match="not JSON"):
        queue.submit("verdict", "x", {**_verdict_payload(), "why": {1, 2}})
    broken = _task_payload(contacts_task)
    broken["task"]["criteria"] = "nope"
    with pytest.raises(ValueError, match=r"not a valid TaskSpec.*criteria"):
        queue.submit("task", "x", broken)
    with pytest.raises(ValueError, match="weight >= 0"):
        queue.submit("mix_weight", "x", {"group": "g", "before": 1.0, "after": -1})
    with pytest.raises(ValueError, match="needs task_id"):
        queue.edit(a, "bob", {"seed": 1})
    with pytest.raises(ValueError, match="unknown review status"):
        queue.items(status="done")
    item = queue.get(a)
    assert item.status == "pending" and item.decisions == [] and item.payload == _verdict_payload()
    assert [i.id for i in queue.items()] == [a]


def test_check_payload_knows_every_kind() -> None:
    for kind in KINDS:
        with pytest.raises(ValueError, match=f"a {kind} payload needs"):
            check_payload(kind, {})
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'


def _submit_many(path: str, worker: int, n: int) -> None:
    q = ReviewQueue(path)
    for k in range(n):
        q.submit("verdict", f"w{worker} {k}", {**_verdict_payload(k), "run": f"w{worker}"})
        q.submit("verdict", "shared", _verdict_payload(k))  # the same items from every process


def test_several_processes_write_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "review.sqlite")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_submit_many, args=(path, w, 15)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    items = ReviewQueue(path).items()
    assert len(items) == 3 * 15 + 15
    assert len({canonical_json(i.payload) for i in items}) == len(items)


def test_items_survive_a_new_queue_object(queue: ReviewQueue) -> None:
    a = queue.submit(
        "skill_edit", "skill", {"skill": "s", "path": "x/s/SKILL.md", "before": None, "after": "# S", "diff": "+# S"}
    )
    queue.approve(a, "alice")
    again = ReviewQueue(queue.path)
    assert json.loads(again.get(a).model_dump_json())["decisions"][0]["reviewer"] == "alice"


# -- what an episode sends to the queue ---------------------------------------------------------


@pytest.fixture(scope="module")
def played() -> dict:
    """The reference agent's traces of a task with no sensitive tool and of one that sends a message."""
    from agents import ReferenceAgent
    from phoneenv.env import PhonePlanEnv
    from phoneenv.evaluation import play_episode
    from phoneenv.tasks import get_task

    out = {}
    for tid in ("settings.toggle/0", "calendar.create_event/0"):
        task = get_task(tid)
        _, text = play_episode(ReferenceAgent(), PhonePlanEnv(task=task, memory=False), task, 0)
        out[tid] = Trace.model_validate_json(text)
    return out


def test_a_clean_success_without_sensitive_tools_is_not_flagged(played: dict) -> None:
    trace = played["settings.toggle/0"]
    assert trace.verdict.success
    assert episode_flags(trace) == []


def test_a_successful_sensitive_call_is_flagged(played: dict, queue: ReviewQueue) -> None:
    trace = played["calendar.create_event/0"]
    assert "messages.send" in [s.action.name for s in trace.steps if s.action]
    assert episode_flags(trace) == [("sensitive", "sensitive tools ran: messages.send")]
    # a refused sensitive call is not a flag
    refused = trace.model_copy(deep=True)
    for s in refused.steps:
        if s.action and s.action.name == "messages.send":
            s.feedback.ok = False
    assert episode_flags(refused) == []
    ids = submit_episode(queue, trace, run="runs/e", trace_ref="runs/e/traces/x.jsonl")
    assert submit_episode(queue, trace, run="runs/e", trace_ref="runs/e/traces/x.jsonl") == ids
    [item] = queue.items()
    assert (item.kind, item.source, item.status) == ("sensitive", "eval", "pending")
    assert item.payload["task_id"] == trace.task_id and item.payload["verdict"]["success"] is True
    assert item.evidence == [{"run": "runs/e", "task_id": trace.task_id, "seed": 0, "trace": "runs/e/traces/x.jsonl"}]


def test_contradicting_verdicts_and_inconsistent_worlds_are_flagged(played: dict, queue: ReviewQueue) -> None:
    trace = played["settings.toggle/0"]
    v = trace.verdict
    unmet = trace.model_copy(
        update={"verdict": v.model_copy(update={"milestones_total": 2, "milestones_met": 1, "progress": 2 / 3})}
    )
    assert episode_flags(unmet) == [("verdict", "success with 1/2 milestones met (progress 0.67)")]
    crit = v.criteria[0].model_copy(update={"passed": False, "reason": "judge: the answer names no number"})
    judged = trace.model_copy(update={"verdict": v.model_copy(update={"success": False, "criteria": [crit]})})
    assert episode_flags(judged) == [("verdict", f"{crit.id}: the rules passed it, judge: the answer names no number")]
    plain = crit.model_copy(update={"reason": "no number in the answer"})
    failed = trace.model_copy(update={"verdict": v.model_copy(update={"success": False, "criteria": [plain]})})
    assert episode_flags(failed) == []  # an honest rule-based failure needs nobody
    sim = trace.model_copy(update={"verdict": v.model_copy(update={"inconsistent": True, "inconsistencies": ["x"]})})
    assert episode_flags(sim) == [("sim_inconsistent", "x")]
    assert len(submit_episode(queue, unmet, run="r") + submit_episode(queue, sim, run="r")) == 2
    assert [i.kind for i in queue.items()] == ["verdict", "sim_inconsistent"]
    assert json.loads(queue.get(1).evidence[0]["trace"])["task_id"] == trace.task_id  # inline without a path


# -- phoneenv review ----------------------------------------------------------------------------


def test_review_cli_lists_shows_and_decides(
    played: dict, contacts_task: TaskSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console
    from typer.testing import CliRunner

    from phoneenv.cli import app
    from phoneenv.cli import review as review_cli
    from phoneenv.loop import REVIEW_DB

    monkeypatch.setattr(review_cli, "console", Console(width=250, no_color=True))

    monkeypatch.setenv("PHONEENV_LOOP_DIR", str(tmp_path / "loop"))
    monkeypatch.setenv("PHONEENV_REVIEWER", "rita")
    queue = ReviewQueue(tmp_path / "loop" / REVIEW_DB)
    trace_file = tmp_path / "t.jsonl"
    trace = played["calendar.create_event/0"]
    trace_file.write_text(trace.model_dump_json() + "\n", encoding="utf-8")
    [sens] = submit_episode(queue, trace, run="runs/e", trace_ref=str(trace_file))
    task = queue.submit("task", "Save Carla", _task_payload(contacts_task), source="propose", reason="unproven")
    diff = "--- a\n+++ b\n@@ -0,0 +1 @@\n+Search contacts before writing."
    edit = queue.submit("instruction_edit", "search first", {"before": "", "after": "Search first.", "diff": diff})
    run = CliRunner().invoke

    res = run(app, ["review", "list"])
    assert res.exit_code == 0, res.output
    assert "Save Carla" in res.output and "sensitive" in res.output and "search first" in res.output
    res = run(app, ["review", "list", "--kind", "task"])
    assert "Save Carla" in res.output and "search first" not in res.output
    assert run(app, ["review", "list", "--status", "nope"]).exit_code == 2

    res = run(app, ["review", "show", str(task)])
    assert res.exit_code == 0, res.output
    assert contacts_task.goal in res.output and "contacts.contacts: 2 records" in res.output
    assert "criteria" in res.output and '"table": "contacts.contacts"' in res.output
    res = run(app, ["review", "show", str(sens)])
    assert res.exit_code == 0, res.output
    assert "messages.send(" in res.output and "sensitive tools ran: messages.send" in res.output
    assert trace.goal.split()[0] in res.output
    res = run(app, ["review", "show", str(edit)])
    assert "+Search contacts before writing." in res.output

    res = run(app, ["review", "reject", str(sens)])
    assert res.exit_code != 0 and queue.get(sens).status == "pending"  # --reason is required
    res = run(app, ["review", "reject", str(sens), "--reason", "the user asked for it"])
    assert res.exit_code == 0, res.output
    assert queue.get(sens).decisions[0].reviewer == "rita"
    res = run(app, ["review", "approve", str(sens)])
    assert res.exit_code == 2 and "already rejected by rita" in res.output

    new = {"before": "", "after": "Search contacts first.", "diff": "+Search contacts first."}
    f = tmp_path / "edit.json"
    f.write_text(json.dumps(new), encoding="utf-8")
    res = run(app, ["review", "edit", str(edit), "--file", str(f), "--note", "shorter", "--reviewer", "ed"])
    assert res.exit_code == 0, res.output
    f.write_text("{not json", encoding="utf-8")
    assert run(app, ["review", "edit", str(edit), "--file", str(f)]).exit_code == 2
    res = run(app, ["review", "approve", str(edit), "--note", "ok"])
    assert res.exit_code == 0, res.output
    item = queue.get(edit)
    assert item.status == "approved" and item.payload == new
    assert [(d.action, d.reviewer, d.note) for d in item.decisions] == [
        ("edit", "ed", "shorter"),
        ("approve", "rita", "ok"),
    ]
    res = run(app, ["review", "approve", "99"])
    assert res.exit_code == 2 and "no review item 99" in res.output
    res = run(app, ["review", "list", "--status", "approved", "--loop", str(tmp_path / "other")])
    assert res.exit_code == 0 and "no review item (status approved)" in res.output


def test_review_show_masks_the_tasks_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A verdict item's goal is read from the suite: a task whose goal holds a fixture secret (a
    generated one that quotes the vault's password, say) shows it masked, as traces do."""
    from typer.testing import CliRunner

    import phoneenv.tasks
    from phoneenv.cli import app
    from phoneenv.intake import MASK, fixture_secrets
    from phoneenv.loop import REVIEW_DB

    real = phoneenv.tasks.get_task("budget.fix_expense/0")
    [secret] = fixture_secrets(real.fixtures)
    leaky = real.model_copy(update={"goal": f"Sign in with {secret} and fix the expense."})
    monkeypatch.setattr(phoneenv.tasks, "get_task", lambda task_id: leaky)
    monkeypatch.setenv("PHONEENV_LOOP_DIR", str(tmp_path / "loop"))
    queue = ReviewQueue(tmp_path / "loop" / REVIEW_DB)
    payload = {"task_id": real.id, "seed": 0, "run": "runs/x", "why": f"the answer quoted {secret}", "verdict": {}}
    item = queue.submit("verdict", f"check {secret}", payload, source="eval", reason="contradiction")
    res = CliRunner().invoke(app, ["review", "show", str(item)])
    assert res.exit_code == 0, res.output
    assert secret not in res.output and f"Sign in with {MASK}" in res.output


@pytest.mark.parametrize("damage", ["not sqlite", "foreign schema", "bad payload row"])
def test_a_corrupt_or_foreign_queue_is_one_line_not_a_traceback(tmp_path: Path, damage: str, monkeypatch) -> None:
    """Every review command meets a damaged queue file with one line naming it and what to do,
    and an eval whose loop holds it still keeps every episode."""
    import sqlite3

    from typer.testing import CliRunner

    from phoneenv.cli import app
    from phoneenv.loop import REVIEW_DB

    loop = tmp_path / "loop"
    loop.mkdir()
    db = loop / REVIEW_DB
    if damage == "not sqlite":
        db.write_bytes(b"garbage\xff" * 10)
    elif damage == "foreign schema":
        with sqlite3.connect(db) as con:
            con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, something TEXT)")
            con.execute("INSERT INTO items (something) VALUES ('x')")
    else:
        queue = ReviewQueue(db)
        queue.submit("instruction_edit", "e", {"before": "", "after": "A.", "diff": "+A."})
        with sqlite3.connect(db) as con:
            con.execute("UPDATE items SET payload = '{not json'")
    monkeypatch.setenv("PHONEENV_LOOP_DIR", str(loop))
    for argv in (["list"], ["show", "1"], ["approve", "1"], ["reject", "1", "--reason", "r"]):
        res = CliRunner().invoke(app, ["review", *argv])
        assert res.exit_code == 2, (argv, res.output)
        flat = " ".join(res.output.split())
        assert "cannot be read as a review queue" in flat and "review.sqlite" in flat and "Traceback" not in flat
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["eval", "--tasks", "calendar.create_event/0,settings.toggle/0", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
