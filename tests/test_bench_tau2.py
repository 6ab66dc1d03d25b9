"""bench_sandbox's τ²-bench baseline: the child process protocol (benchmarks/tau2_step.py) and how
the interpreter is found. τ²-bench itself is not on the package registries, so a stand-in
``tau2`` package with its retail domain's interface (``get_environment``, ``ToolCall``,
``Environment.get_response``) plays it here; the figures come from the real one (see
docs/figures/speed.md)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_sandbox

STANDIN = {
    "tau2/__init__.py": "",
    "tau2/data_model/__init__.py": "",
    "tau2/data_model/message.py": """
        class ToolCall:
            def __init__(self, id, name, arguments):
                self.id, self.name, self.arguments = id, name, arguments
    """,
    "tau2/domains/__init__.py": "",
    "tau2/domains/retail/__init__.py": "",
    "tau2/domains/retail/environment.py": """
        import json
        from types import SimpleNamespace

        LOG = []

        class Env:
            def __init__(self):
                self.tools = SimpleNamespace(db=SimpleNamespace(users={"ana_lima_1": {}, "ben_2": {}}))

            def get_tools(self):
                return {"get_user_details": None, "calculate": None}

            def get_response(self, call):
                LOG.append(call.name)
                if call.name not in self.get_tools():
                    return "Error: Tool '%s' not found." % call.name
                if call.arguments.get("user_id") not in self.tools.db.users:
                    return "Error: User not found"
                with open(__file__ + ".seen", "a") as fh:
                    fh.write(json.dumps(call.arguments) + "\\n")
                return json.dumps({"user_id": call.arguments["user_id"]})

        def get_environment():
            return Env()
    """,
}


@pytest.fixture
def standin(tmp_path, monkeypatch):
    for rel, text in STANDIN.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return tmp_path


def test_the_child_times_each_kind_of_step_and_names_the_tools(standin):
    tau2 = bench_sandbox.Tau2(sys.executable)
    try:
        assert tau2.tools == ["calculate", "get_user_details"]
        wrong = ['{"name": "get_usr_details", "arguments": {}}', '{"name": "calculte", "arguments": {}}']
        rates = {
            kind: tau2.rate(kind, 50, wrong if kind == "unknown" else None) for kind in ("read", "not_found", "unknown")
        }
    finally:
        tau2.close()
    assert all(r > 0 for r in rates.values()), rates
    seen = (standin / "tau2/domains/retail/environment.py.seen").read_text().splitlines()
    assert seen == ['{"user_id": "ana_lima_1"}'] * 50  # only the read found its user: the first the database holds


def test_a_child_that_cannot_start_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # no tau2 there
    with pytest.raises(RuntimeError, match=r"(?s)τ²-bench did not start.*No module named 'tau2'"):
        bench_sandbox.Tau2(sys.executable)


def test_the_interpreter_is_the_one_given_then_the_environment_then_none(monkeypatch):
    monkeypatch.delenv("TAU2_PYTHON", raising=False)
    assert bench_sandbox.tau2_python("/opt/py/bin/python") == "/opt/py/bin/python"
    monkeypatch.setenv("TAU2_PYTHON", "/srv/tau2/bin/python")
    assert bench_sandbox.tau2_python(None) == "/srv/tau2/bin/python"
    monkeypatch.delenv("TAU2_PYTHON")
    assert bench_sandbox.tau2_python(None) is None  # tau2 is not installed beside phoneenv


def test_misspellings_of_too_few_names_are_an_error_not_a_hang():
    assert len(set(bench_sandbox.typos(["calculate", "get_user_details"], 300))) == 300
    with pytest.raises(ValueError, match="fewer than 5000"):
        bench_sandbox.typos(["ab"], 5000)
