"""The commands that read a run folder's files (``view``, ``compare``, ``traces export``,
``evolve round``, ``evolve weights``, ``evolve report``, ``eval --resume``) fuzzed with damaged
files (issue 34): empty, truncated, random bytes, not UTF-8, nested deeper than Python's parser
goes, another schema, a 3 MB line, Unicode line separators, a folder where the file should be
(tests/fuzzfiles.py). Each command either reads around the damage (exit 0) or ends with one
error naming the file; never a traceback. (The other file inputs of the command line are in
test_fuzz_cli_inputs.py; ``review``'s queue and ``tasks.jsonl`` have their own tests in
test_loop_review.py and test_loop_propose.py; the line separators in test_line_separators.py.)"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phoneenv.cli import app
from tests.fuzzfiles import KINDS, corrupt

TASKS = "clock.alarm_off/0,settings.toggle/0"


FILES = ["results.jsonl", "run.json", "scoreboard.json", "trace"]


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("good") / "run"
    res = CliRunner().invoke(app, ["eval", "--tasks", TASKS, "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _damaged(good: Path, where: Path, file: str, kind: str) -> tuple[Path, Path]:
    """A copy of ``good`` under ``where`` with ``file`` damaged; (run folder, damaged file)."""
    run = where / "run"
    shutil.copytree(good, run)
    path = next((run / "traces").rglob("*.jsonl")) if file == "trace" else run / file
    data = corrupt(path.read_bytes(), kind)
    if data is None:
        path.unlink()
        path.mkdir()
    else:
        path.write_bytes(data)
    return run, path


def _check(argv: list[str], damaged: Path, label: str) -> int:
    """Run ``argv``; no exception escapes, no traceback is printed, and a failure is one error
    naming the damaged file (or its run folder). The exit code."""
    res = CliRunner().invoke(app, argv)
    assert res.exception is None or isinstance(res.exception, SystemExit), (label, repr(res.exception))
    out = res.output
    assert "Traceback" not in out, (label, out[-2000:])
    if res.exit_code != 0:
        flat = "".join(out.split())  # rich wraps long paths; the words are whole once joined
        assert damaged.name in flat or "".join(str(damaged.parent).split()) in flat, (label, out[-1000:])
        errors = [line for line in out.splitlines() if "error" in line.lower() or damaged.name in line]
        assert errors and len(out.strip().splitlines()) <= 10, (label, out)  # one message, wrapped at 80
    return res.exit_code


READERS: dict[str, Callable[[Path, Path, Path], list[str]]] = {
    "view": lambda run, tmp, loop: ["view", str(run), "--out", str(tmp / "report.html")],
    "compare": lambda run, tmp, loop: ["compare", str(run), str(run)],
    "export": lambda run, tmp, loop: ["traces", "export", str(run), "--to", str(tmp / "dataset")],
    "evolve-round": lambda run, tmp, loop: ["evolve", "round", "--run", str(run), "--loop", str(tmp / "loop")],
    "evolve-weights": lambda run, tmp, loop: ["evolve", "weights", "--run", str(run), "--loop", str(tmp / "loop")],
    # the round was made from the good run (--before); the damaged one is the run after it
    "evolve-report": lambda run, tmp, loop: [
        "evolve",
        "report",
        "--before",
        str(loop.parent / "run"),
        "--after",
        str(run),
        "--loop",
        str(loop),
    ],
}


@pytest.fixture(scope="module")
def round_loop(good_run: Path) -> Path:
    """A loop with round 1 made from ``good_run`` (what ``evolve report --before`` needs)."""
    loop = good_run.parent / "loop"
    res = CliRunner().invoke(app, ["evolve", "round", "--run", str(good_run), "--loop", str(loop)])
    assert res.exit_code == 0, res.output
    return loop


@pytest.mark.parametrize("command", sorted(READERS))
def test_run_readers_meet_damaged_files_with_one_line(
    command: str, good_run: Path, round_loop: Path, tmp_path: Path
) -> None:
    """36 damaged run folders (4 files x 9 kinds of damage) per command."""
    failed = 0
    for file in FILES:
        for kind in KINDS:
            where = tmp_path / f"{file}-{kind}".replace(" ", "-")
            run, damaged = _damaged(good_run, where, file, kind)
            failed += _check(READERS[command](run, where, round_loop), damaged, f"{command} {file} {kind}") != 0
            shutil.rmtree(where)
    assert failed > 0  # some damage is refused (each command reads at least one of these files)


@pytest.mark.slow
@pytest.mark.parametrize("file", ["run.json", "results.jsonl"])
def test_resume_meets_a_damaged_run_with_one_line(file: str, good_run: Path, tmp_path: Path) -> None:
    """``eval --resume`` on a run whose manifest or results are damaged: one error naming the
    file (or, for a damaged last line of results, the episodes replayed), never a traceback."""
    for kind in KINDS:
        where = tmp_path / kind.replace(" ", "-")
        run, damaged = _damaged(good_run, where, file, kind)
        _check(["eval", "--tasks", TASKS, "--out", str(run), "--resume"], damaged, f"resume {file} {kind}")
        shutil.rmtree(where)


def test_an_unwritable_scoreboard_is_one_line_and_keeps_the_episodes(good_run: Path, tmp_path: Path) -> None:
    """``scoreboard.json`` a folder in a resumed run: the scoreboard is printed, one line says it
    cannot be written (naming the file), the episodes stay, exit 2; no episode is blamed."""
    run, damaged = _damaged(good_run, tmp_path, "scoreboard.json", "dir")
    before = (run / "results.jsonl").read_bytes()
    res = CliRunner().invoke(app, ["eval", "--tasks", TASKS, "--out", str(run), "--resume"])
    assert res.exit_code == 2, res.output
    flat = "".join(res.output.split())
    assert "Traceback" not in res.output and "stoppedbyanerrorintheepisode" not in flat
    assert "cannotwritethescoreboard" in flat and "scoreboard.json" in flat
    assert (run / "results.jsonl").read_bytes() == before
