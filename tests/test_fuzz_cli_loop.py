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
from tests.fuzzfiles import KINDS, check, damage, mistyped

TASK = "clock.alarm_off/0"


# -- review edit --file ----------------------------------------------------------------------------


PAYLOADS = {
    "skill_edit": {"skill": "s", "path": "clock/s/SKILL.md", "before": None, "after": "x", "diff": "+x"},
    "instruction_edit": {"before": "", "after": "- check first", "diff": "+- check first"},
    "mix_weight": {"group": "capability:time", "before": 1.0, "after": 2.0},
    "verdict": {"task_id": TASK, "seed": 0, "run": "runs/r", "verdict": None, "why": "low confidence"},
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
