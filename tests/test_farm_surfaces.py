"""The farm's commands as a new user meets them (issue 34, item 10): a driver setup error is one
line and blames no episode, the Docker workers are waited for until the deadline stated, and
every process a command starts is stopped by its counterpart. Fast: no Docker engine, no Ray
cluster (tests/test_farm_ray.py and tests/test_docker.py run those)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from phoneenv.cli import app

runner = CliRunner()


def test_a_ray_that_cannot_start_is_one_line_blaming_no_episode(monkeypatch, tmp_path):
    ray = pytest.importorskip("ray", reason="needs the ray extra (pip install -e '.[ray]')")

    def refuse(*_args, **_kwargs):
        raise ValueError("When connecting to an existing cluster, num_cpus\n and num_gpus must not be provided.")

    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    out = tmp_path / "run"
    res = runner.invoke(
        app, ["eval", "--agent", "reference", "--tasks", "budget.fix_expense/0", "--out", str(out), "--ray", "local"]
    )
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())  # one message (rich wraps it at the terminal's width)
    assert text.startswith("error: cannot start a local Ray") and text.count("error") == 1, res.output
    assert "num_cpus and num_gpus" in text and text.endswith("(no episode was played)")
    assert "episode of" not in res.output and "--resume" not in res.output and "Traceback" not in res.output
    assert not (out / "results.jsonl").exists()  # no run was started: the same command may run again
