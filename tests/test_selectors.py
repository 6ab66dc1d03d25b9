"""Selectors that match nothing say what would, and ``tasks list`` reads well at 80 columns."""

from __future__ import annotations

import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from phoneenv.contract import Category, Domain
from phoneenv.tasks import SPLITS, load_suite, select
from tests import waiting

ROOT = Path(__file__).resolve().parent.parent


def _error(selector: str) -> str:
    with pytest.raises((KeyError, ValueError)) as info:
        select(selector)
    return str(info.value.args[0])


def _did_you_mean(message: str) -> list[str]:
    first = message.splitlines()[0]
    found = re.search(r"did you mean (.*)\?$", first)
    return found.group(1).split(", ") if found else []


def _listed(message: str, label: str) -> list[str]:
    (line,) = [x for x in message.splitlines() if x.strip().startswith(f"{label}:")]
    return line.split(":", 1)[1].split(";")[0].strip().split(", ")


def test_every_miss_lists_the_valid_values():
    suite = load_suite()
    apps = sorted({a for t in suite for a in t.apps})
    families = sorted({t.template.split(".")[0] for t in suite})
    for selector in (
        "template:nope.nothing",
        "app:nope",
        "domain:nope",
        "category:nope",
        "split:nope",
        "nope.*",
        "nope",
    ):
        message = _error(selector)
        assert _listed(message, "categories") == [c.value for c in Category], selector
        assert _listed(message, "domains") == [d.value for d in Domain], selector
        assert _listed(message, "splits") == list(SPLITS), selector
        assert _listed(message, "apps") == apps, selector
        assert message.split("families: ")[1].splitlines()[0].split(", ") == families, selector
        assert f"templates: {len({t.template for t in suite})}," in message


@pytest.mark.parametrize(
    ("selector", "first_suggestion", "error"),
    [
        ("template:contacts.favourite", "template:contacts.favorite", ValueError),
        ("app:clok", "app:clock", ValueError),
        ("domain:clock", "app:clock", ValueError),  # a value of another kind
        ("category:tools", "category:tool", ValueError),
        ("split:tst", "split:test", ValueError),
        ("clok.*", "app:clock", ValueError),
        ("clock", "app:clock", KeyError),
        ("templte:clock.set_alarm", "template:clock.set_alarm", ValueError),
        ("contacts.add_contat/3", "contacts.add_contact/3", KeyError),
        ("domain:finace", "domain:finance", ValueError),
    ],
)
def test_close_matches_are_suggested(selector, first_suggestion, error):
    with pytest.raises(error):
        select(selector)
    near = _did_you_mean(_error(selector))
    assert near[0] == first_suggestion, near
    assert len(near) <= 5
    for suggestion in near:  # every suggestion is itself a selector that selects tasks
        assert select(suggestion), suggestion


def test_template_miss_lists_its_family():
    message = _error("template:clock.set_alarn")
    (line,) = [x for x in message.splitlines() if x.strip().startswith("clock templates:")]
    expected = sorted({t.template for t in load_suite() if t.template.startswith("clock.")})
    assert line.split(": ", 1)[1].split(", ") == expected


def test_a_miss_inside_a_union_is_an_error():
    with pytest.raises(ValueError, match=r"unknown template 'notes\.nope'"):
        select("template:contacts.favorite,template:notes.nope")


def test_matches_are_unchanged():
    assert [t.id for t in select("template:contacts.favorite")] == [f"contacts.favorite/{k}" for k in range(8)]
    assert select("clock.*") and all(t.id.startswith("clock.") for t in select("clock.*"))
    assert [t.id for t in select("contacts.add_contact/3")] == ["contacts.add_contact/3"]


def test_cli_prints_the_suggestions():
    from typer.testing import CliRunner

    from phoneenv.cli import app

    res = CliRunner().invoke(app, ["tasks", "list", "app:clok"])
    assert res.exit_code == 2
    text = " ".join(re.sub("[│╭╮╰╯─]", " ", res.output).split())  # the error panel's frame out
    assert "no task uses an app 'clok'; did you mean app:clock, clock.*?" in text
    assert "apps: agent, budget, calendar" in text


# ---------------------------------------------------------------------------------------------
# tasks list at 80 columns
# ---------------------------------------------------------------------------------------------


def _tasks_list(selector: str, columns: int, monkeypatch: pytest.MonkeyPatch) -> str:
    """``phoneenv tasks list SELECTOR`` on a terminal ``columns`` wide (a rich Console of that
    width, as COLUMNS would make), its output as plain text."""
    import io

    from rich.console import Console

    from phoneenv.cli import tasks as cli

    buf = io.StringIO()
    monkeypatch.setattr(cli, "console", Console(file=buf, width=columns, no_color=True, color_system=None))
    cli.tasks_list(selector, as_json=False)
    return buf.getvalue()


# The longest ids, the longest app lists, llmsim/hybrid backends and long goals.
_SELECTOR = "subagent.meeting_from_availability/*,simulated.*,hybrid.*,cross.*,clock.alarm_off/*"


@pytest.mark.parametrize("columns", [80, 60])
def test_tasks_list_fits_and_keeps_everything(columns, monkeypatch):
    out = _tasks_list(_SELECTOR, columns, monkeypatch)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= columns, [line for line in lines if len(line) > columns][:3]
    flat = " ".join(out.split())
    tasks = select(_SELECTOR)
    assert f"{len(tasks)} tasks" in lines[0]
    for task in tasks:
        # The id on one line, whole (ids are copied from here).
        (row,) = [i for i, line in enumerate(lines) if line.split()[:1] == [task.id]]
        block = " ".join(" ".join(lines[row : next_row(lines, row)]).split())
        fields = [task.category.value, task.domain.value, str(task.difficulty), *task.apps, *task.backends]
        for field in fields:
            assert re.search(rf"(?<![\w.]){re.escape(field)}(?![\w])", block), (task.id, field, block)
        assert " ".join(task.goal.split()) in block, (task.id, block)
    assert len(flat) > 0


def next_row(lines: list[str], row: int) -> int:
    """The index of the line after ``row``'s block (the next unindented line)."""
    end = row + 1
    while end < len(lines) and lines[end].startswith(" "):
        end += 1
    return end


def test_tasks_list_wide_terminal_keeps_the_table(monkeypatch):
    out = _tasks_list("clock.alarm_off/0", 160, monkeypatch)
    header = next(line for line in out.splitlines() if "goal" in line)
    assert all(col in header for col in ("id", "category", "domain", "apps", "backends", "goal"))
    assert textwrap.shorten(select("clock.alarm_off/0")[0].goal, 40)[:20] in out


def test_tasks_list_reads_the_terminal_width():
    """The command line itself, with COLUMNS=80: the narrow layout, no line over 80."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80", "NO_COLOR": "1"}
    code = "from phoneenv.cli import app\napp(prog_name='phoneenv')\n"
    proc = waiting.run(
        [sys.executable, "-c", code, "tasks", "list", "subagent.meeting_from_availability/1*"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"{len(select('subagent.meeting_from_availability/1*'))} tasks" and lines[2] == "  goal"
    assert max(map(len, lines)) <= 80
    assert re.search(r"^subagent\.meeting_from_availability/10 +subagent +scheduling +4 +sandbox$", proc.stdout, re.M)
