"""JSON keeps U+2028, U+2029 and U+0085 raw inside strings, and ``str.splitlines()`` breaks lines
at them: a model's answer holding one used to cut its trace in two for every reader that split
that way ("no trace found" in view, an aborted evolve round, review show and validate-devices
refusing the file). Every JSON Lines reader splits on ``\\n`` alone (``jsonl_lines``); this test
writes each separator into a trace's answer and its results line and reads them back through
each reader."""

from __future__ import annotations

import json

import pytest

from agents.reference import ReferenceAgent
from phoneenv.evaluation import RunFolder, read_results, run_episodes, score
from phoneenv.tasks import get_task
from phoneenv.tracefiles import find_trace_files, jsonl_lines, read_traces

SEPARATORS = ["\u2028", "\u2029", "\u0085"]  # JSON escapes \v, \f and \x1c-\x1e (control characters); these stay raw
TASK = "clock.alarm_off/0"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A run folder whose trace's final answer and results line hold every separator, raw."""
    out = tmp_path_factory.mktemp("run")
    folder = RunFolder(out)
    folder.start({"agent": "reference"})
    [result] = run_episodes(ReferenceAgent(), [get_task(TASK)], folder.traces)
    [path] = find_trace_files(out)
    trace = json.loads(path.read_text())
    answer = "Done" + "".join(f" {s}part" for s in SEPARATORS)
    trace["steps"][-1]["action"]["arguments"]["answer"] = answer
    text = json.dumps(trace, ensure_ascii=False) + "\n"
    assert all(s in text for s in SEPARATORS) and len(text.splitlines()) > 1  # what used to break
    path.write_text(text, encoding="utf-8")
    result.infrastructure_kind = None
    folder.append(result)
    line = (out / RunFolder.RESULTS).read_text(encoding="utf-8")
    (out / RunFolder.RESULTS).write_text(line.replace('"task_id"', '"note": "a\u2028b", "task_id"', 1))
    folder.write_scoreboard(score("reference", [result], 0.0))
    folder.close()
    return out, answer


def test_jsonl_lines_splits_on_newline_alone():
    assert jsonl_lines("a\u2028b\r\nc\u0085d\n") == ["a\u2028b", "c\u0085d", ""]


def test_every_reader_reads_the_trace_whole(run):
    out, answer = run
    [trace] = list(read_traces(find_trace_files(out)))
    assert trace.steps[-1].action.arguments["answer"] == answer
    from phoneenv.view import load_run

    [episode] = load_run(out).episodes
    assert episode.trace is not None and episode.task_id == TASK
    from phoneenv.loop.evolve import read_run

    [(evolved, _)] = read_run(out)
    assert evolved.task_id == TASK
    from phoneenv.validation import load_trace_sources

    sources, skipped = load_trace_sources(out, [TASK])
    assert [s.task_id for s in sources] == [TASK] and skipped == []
    from phoneenv.cli.review import _trace_summary

    assert not _trace_summary(str(find_trace_files(out)[0]))[0].startswith("(trace not readable")


def test_results_lines_with_a_separator_are_read(run):
    out, _ = run
    [result] = read_results(out / RunFolder.RESULTS)
    assert result.task_id == TASK
