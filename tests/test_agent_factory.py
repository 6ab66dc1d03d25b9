"""Planners and clients built by the library (``agents.factory``): errors name the option at
fault, are ``ValueError``s for library callers, and usage errors on the command line."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agents.factory import AgentSpecError, make_agent, make_client
from agents.reference import ReferenceAgent
from phoneenv.cli import app


@pytest.mark.parametrize(
    ("call", "message", "option"),
    [
        (
            lambda: make_agent("llm", 0, {}),
            "a model name (with --base-url) or a local model folder is needed",
            "--model",
        ),
        (lambda: make_agent("nope", 0), "unknown agent 'nope'; choose from reference, random, llm", "--agent"),
        (lambda: make_agent("no_such_module:X", 0), "cannot import 'no_such_module'", "--agent"),
        (lambda: make_client(None, "/no/such/folder"), "'/no/such/folder' is not a local model folder", "--model"),
    ],
)
def test_errors_name_the_option(call, message, option):
    with pytest.raises(AgentSpecError) as err:
        call()
    assert isinstance(err.value, ValueError) and message in err.value.message and err.value.param_hint == option


def test_a_named_planner_is_built_and_the_cli_shows_a_usage_error(tmp_path):
    assert isinstance(make_agent("reference", 0), ReferenceAgent)
    res = CliRunner().invoke(app, ["eval", "--agent", "nope", "--tasks", "clock.set_alarm/0", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "unknown agent 'nope'" in res.output and "Traceback" not in res.output
