"""The file inputs of the loop's commands fuzzed with damaged files (issue 34,
tests/fuzzfiles.py): a review item's new payload (``review edit --file``), the loop's sampler
weights (``weights.json``, which ``evolve weights`` updates), a round's ``clusters.json``
(``evolve report``) and a harness version's files (``eval --harness``, ``evolve versions``).
(Those read before a model is loaded are in test_fuzz_cli_models.py.)

Each damaged file gives one error naming it with exit code 2, or is read around; never a
traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phoneenv.cli import app
from tests.fuzzfiles import KINDS, check, damage, fuzz_file, mistyped

TASK = "clock.alarm_off/0"


# -- review edit --file ----------------------------------------------------------------------------


PAYLOADS = {
    "skill_edit": {"skill": "s", "path": "clock/s/SKILL.md", "before": None, "after": "x", "diff": "+x"},
    "instruction_edit": {"before": "", "after": "- check first", "diff": "+- check first"},
    "mix_weight": {"group": "capability:time", "before": 1.0, "after": 2.0},
    "verdict": {"task_id": TASK, "seed": 0, "run": "runs/r", "verdict": None, "why": "low confidence"},
}


WRONG_TYPE = {
    "skill_edit": ("diff", 7),
    "instruction_edit": ("before", None),
    "mix_weight": ("group", 7),
    "verdict": ("seed", "0"),
    "task": ("provenance", "gap x"),
}


@pytest.mark.parametrize("kind", [*PAYLOADS, "task"])
def test_review_edit_meets_a_damaged_payload_file_with_one_line(kind: str, tmp_path: Path) -> None:
    """``review edit ID --file F``: a payload file that is damaged or does not fit the item's kind
    (a key missing, a diff that is a number, a seed that is a string) is one error naming the file
    (exit 2) and the item is left as it was; a payload that fits is taken, and the item still
    shows (``review show``)."""
    from phoneenv.loop.review import ReviewQueue
    from phoneenv.tasks import get_task

    loop = tmp_path / "loop"
    queue = ReviewQueue(loop / "review.sqlite")
    payload = PAYLOADS.get(kind) or {"task": get_task(TASK).model_dump(mode="json"), "provenance": {"gap": "x"}}
    item = queue.submit(kind, "an item", payload)
    file = tmp_path / "payload.json"
    argv = ["review", "edit", str(item), "--file", str(file), "--loop", str(loop), "--reviewer", "me"]
    good = json.dumps(payload).encode()
    for label, bad in [*((k, None) for k in KINDS), *mistyped(payload, limit=20)]:
        damage(file, "empty", good)
        if bad is None:
            damage(file, label, good)
        else:
            file.write_text(json.dumps(bad), encoding="utf-8")
        before = queue.get(item).payload
        res = check(argv, file, f"{kind} {label}")
        if res.exit_code == 2:
            assert queue.get(item).payload == before, label
            assert "reviewshow" in "".join(res.output.split()), (label, res.output)  # what to do
        else:
            shown = CliRunner().invoke(app, ["review", "show", str(item), "--loop", str(loop)])
            assert shown.exit_code == 0 and "Traceback" not in shown.output, (label, shown.output)
    key, wrong = WRONG_TYPE[kind]  # a key of the kind with a value its readers cannot take
    damage(file, "empty", good)
    file.write_text(json.dumps({**queue.get(item).payload, key: wrong}), encoding="utf-8")
    res = check(argv, file, f"{kind} {key} {wrong!r}")
    assert res.exit_code == 2 and f"payload.{key}" in res.output, res.output


# -- sampler weights -------------------------------------------------------------------------------

WEIGHTS = {
    "capability": {"time": 2.0},
    "difficulty": {"2": 0.5},
    "source": {"template": 1.0},
    "category": {},
    "domain": {},
    "group": {"clock.alarm_off": 0.3},
    "group_by": "template",
    "default_weight": 1.0,
    "seed": 0,
}


def test_evolve_weights_meets_damaged_current_weights_with_one_line(tmp_path: Path) -> None:
    """``evolve weights`` starts from ``<loop>/weights.json``: damaged, it is one error naming it
    (exit 2), not a traceback, and it is not overwritten."""
    run = tmp_path / "run"
    res = CliRunner().invoke(app, ["eval", "--tasks", TASK, "--out", str(run)])
    assert res.exit_code == 0, res.output
    loop = tmp_path / "loop"
    file = loop / "weights.json"
    argv = ["evolve", "weights", "--run", str(run), "--loop", str(loop)]
    good = json.dumps(WEIGHTS).encode()
    cases = [*((kind, None) for kind in KINDS), *mistyped(WEIGHTS, limit=25)]
    for label, bad in cases:
        damage(file, "empty", good)
        if bad is None:
            damage(file, label, good)
        else:
            file.write_text(json.dumps(bad), encoding="utf-8")
        before = file.read_bytes() if file.is_file() else None
        if check(argv, file, label).exit_code == 2 and before is not None:
            assert file.read_bytes() == before, label  # a file it cannot read is not overwritten


# -- cluster files and round files -----------------------------------------------------------------

CLUSTER = {
    "id": "c1",
    "signature": {"error_kind": "not_found", "focus": "clock.update_alarm"},
    "size": 3,
    "templates": {"clock.toggle_alarm": 3},
    "apps": {"clock": 3},
    "capabilities": {"update": 3},
    "reasons": ["alarm al_2 still on"],
    "messages": ["no alarm al_9"],
}


def test_evolve_report_meets_a_damaged_round_file_with_one_line(tmp_path: Path) -> None:
    """``evolve report`` reads the round's ``clusters.json``: damaged, or its clusters of the wrong
    shape (pairs that are not pairs, a run that is a number), it is one error naming it (exit 2)."""
    run = tmp_path / "run"
    res = CliRunner().invoke(app, ["eval", "--tasks", TASK, "--out", str(run)])
    assert res.exit_code == 0, res.output
    loop = tmp_path / "loop"
    res = CliRunner().invoke(app, ["evolve", "round", "--run", str(run), "--loop", str(loop)])
    assert res.exit_code == 0, res.output
    file = loop / "rounds" / "1" / "clusters.json"
    doc = json.loads(file.read_text(encoding="utf-8"))
    doc["clusters"] = [{**CLUSTER, "pairs": [[TASK, 0]], "items": {"skill_edit": 1}}]
    argv = ["evolve", "report", "--before", str(run), "--after", str(run), "--loop", str(loop)]
    assert fuzz_file(file, doc, argv, limit=30) > 0


# -- harness versions ------------------------------------------------------------------------------


def _harness(loop: Path) -> dict[str, Path]:
    """Version v1 of ``loop``: its manifest, instructions and one skill of its own."""
    v1 = loop / "harness" / "v1"
    skill = v1 / "skills" / "clock" / "wake-check" / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    manifest = {"name": "v1", "parent": "v0", "created_at": "2026-01-01T00:00:00+00:00", "edits": [3], "mix": {}}
    manifest["mix"] = {"capability:time": 2.0}
    (v1 / "harness.json").write_text(json.dumps(manifest), encoding="utf-8")
    (v1 / "instructions.md").write_text("- Check the alarm list first.\n", encoding="utf-8")
    skill.write_text(
        "---\nname: wake-check\ndescription: Check alarms.\ntools: [clock.list_alarms]\n---\nList, then act.\n",
        encoding="utf-8",
    )
    return {"harness.json": v1 / "harness.json", "instructions.md": v1 / "instructions.md", "SKILL.md": skill}


@pytest.mark.parametrize("command", ["eval", "versions"])
@pytest.mark.parametrize("name", ["harness.json", "instructions.md", "SKILL.md"])
def test_a_damaged_harness_version_is_one_line(command: str, name: str, tmp_path: Path) -> None:
    """``eval --harness v1`` and ``evolve versions`` on a version whose manifest, instructions or
    skill is damaged (not UTF-8, a folder, not JSON, a negative mix weight...): one error naming
    the file (exit 2), before any episode."""
    loop = tmp_path / "loop"
    files = _harness(loop)
    argv = {
        "eval": ["eval", "--harness", "v1", "--loop", str(loop), "--tasks", TASK, "--out", str(tmp_path / "run")],
        "versions": ["evolve", "versions", "--loop", str(loop)],
    }[command] + (["--overwrite"] if command == "eval" else [])
    path = files[name]
    good = path.read_bytes()
    for kind in KINDS:
        damage(path, kind, good)
        check(argv, path, f"{name} {kind}")
    if name == "harness.json":
        for label, bad in mistyped(json.loads(good), limit=None):
            damage(path, "empty", good)
            path.write_text(json.dumps(bad), encoding="utf-8")
            check(argv, path, label)
        bad = {**json.loads(good), "mix": {"capability:time": -1.0}}
        path.write_text(json.dumps(bad), encoding="utf-8")
        assert check(argv, path, "negative mix weight").exit_code == 2
