"""``phoneenv eval``'s options as one object (:class:`phoneenv.runconfig.EvalConfig`): the command
line offers exactly its fields with their defaults and help, ``check`` names the option at fault,
and ``run.json`` holds what ``run_record`` says (the keys ``--resume`` compares)."""

from __future__ import annotations

import inspect
import json
from dataclasses import fields
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phoneenv.runconfig import EVAL_HELP, EvalConfig, EvalConfigError


def test_the_command_line_offers_every_field_with_its_default():
    from phoneenv.cli.evaluate import eval_cmd

    params = inspect.signature(eval_cmd).parameters
    assert list(params) == [f.name for f in fields(EvalConfig)]
    for f in fields(EvalConfig):
        assert params[f.name].default == f.default, f.name
    assert len(params) == 33


def test_the_help_is_the_fields_help():
    from phoneenv.cli import app

    out = CliRunner().invoke(app, ["eval", "--help"], terminal_width=400).output
    flat = " ".join(out.replace("│", " ").split())
    for name in ("infra_budget_s", "tool_budget", "concurrency"):
        assert " ".join(EVAL_HELP[name].split()[:8]) in flat, name


@pytest.mark.parametrize(
    ("change", "option"),
    [
        ({"resume": True, "overwrite": True}, "resume"),
        ({"concurrency": 4, "ray": "local"}, "concurrency"),
        ({"concurrency": 2, "device": ["emulator-5554"]}, "concurrency"),
        ({"backend": "sandbx"}, "backend"),
        ({"split": "validation"}, "split"),
        ({"tool_selection": "some"}, "tool_selection"),
        ({"tool_budget": 3000}, "tool_budget"),
        ({"seeds": 0}, "seeds"),
        ({"tool_k": -1}, "tool_k"),
    ],
)
def test_check_names_the_option_at_fault(change, option):
    with pytest.raises(EvalConfigError) as info:
        EvalConfig(**change).check()
    assert info.value.option == option and info.value.flag == "--" + option.replace("_", "-")
    assert isinstance(info.value, ValueError)


def test_check_accepts_what_runs():
    EvalConfig().check()
    EvalConfig(backend="sandbox", split="test", tool_selection="retrieve", tool_budget=3000, seeds=3).check()
    EvalConfig(concurrency=8, agent="llm", base_url="http://127.0.0.1:9/v1").check()


def test_run_record_keys_by_hand():
    ids = ["clock.alarm_off/0"]
    assert EvalConfig().run_record(ids) == {
        "agent": "reference", "tasks": "all", "split": None, "seed": 0, "backend": "auto",
        "max_steps": None, "sim_model": None, "task_ids": ids,
    }  # fmt: skip
    rec = EvalConfig(agent="llm", model="m", tools="apps", seeds=2, tool_selection="search", tool_budget=900)
    assert rec.run_record(ids, harness="v1") == {
        "agent": "llm", "tasks": "all", "split": None, "seed": 0, "seeds": 2, "backend": "auto",
        "max_steps": None, "sim_model": None, "task_ids": ids, "model": "m", "max_tokens": 512,
        "vision": False, "tools": "apps", "harness": "v1", "tool_selection": "search", "tool_k": 20,
        "tool_budget": 900,
    }  # fmt: skip
    assert EvalConfig(vision=True, tool_selection="retrieve", max_steps=9).env_kwargs({"skills": "x"}) == {
        "backend": "auto", "screenshots": True, "max_steps": 9, "skills": "x",
        "tools": "retrieve", "tools_k": 20, "tools_budget": None,
    }  # fmt: skip
    assert EvalConfig(max_steps=None).llm_spec()["max_steps"] == 30


def test_run_json_is_the_run_record(tmp_path: Path):
    from phoneenv.cli import app

    out = tmp_path / "run"
    res = CliRunner().invoke(
        app, ["eval", "--tasks", "clock.alarm_off/0", "--out", str(out), "--seeds", "2", "--no-store"]
    )
    assert res.exit_code == 0, res.output
    run = json.loads((out / "run.json").read_text())
    expected = EvalConfig(tasks="clock.alarm_off/0", seeds=2).run_record(["clock.alarm_off/0"])
    assert {k: run[k] for k in expected} == expected
    bad = CliRunner().invoke(app, ["eval", "--out", str(tmp_path / "x"), "--tool-budget", "10"])
    assert bad.exit_code == 2 and "--tool-budget" in bad.output and "retrieve or search" in bad.output
