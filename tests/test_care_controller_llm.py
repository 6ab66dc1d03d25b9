"""The LLM CARE controller against a real OpenAI-compatible server (`transformers serve` on loopback
with the tiny random model), built the way TrainConfig builds it: ``make_controller("llm", ...,
base_url=..., model=...)``. The model's replies are scripted through the server's generation config
(tests/llm_server.py), so the test knows exactly what came back over HTTP."""

from __future__ import annotations

import json
import logging

import pytest

pytest.importorskip("openai")
pytest.importorskip("transformers")

from rl.care import CareConfig, LLMController, TrainingStats, make_controller

pytestmark = pytest.mark.slow

KEY = "sk-care-test-4f1d2c9b7a"  # a stand-in secret: it must reach no log line and no description
STATS = TrainingStats(success_rate=0.9, all_success_share=0.6, all_failure_share=0.0, token_trend=0.1, n_groups=16)


def _controller(server) -> LLMController:
    ctl = make_controller(
        "llm", CareConfig(), every=1, min_groups=8, base_url=server.base_url, model=server.model, api_key=KEY
    )
    assert isinstance(ctl, LLMController)
    ctl.client.timeout = 60.0
    return ctl


def _say(ctl: LLMController, server, text: str) -> None:
    ctl.client.extra_body = server.scripted(text)  # the server's next reply is exactly `text`


def _no_key_anywhere(ctl: LLMController, caplog: pytest.LogCaptureFixture) -> None:
    assert KEY not in json.dumps(ctl.describe())
    assert not any(KEY in r.getMessage() for r in caplog.records)
    assert all(KEY not in c.reason for c in ctl.history)


def test_llm_proposal_over_http_is_clamped_and_logged(llm_server, caplog: pytest.LogCaptureFixture) -> None:
    ctl = _controller(llm_server)
    d = ctl.describe()
    assert d["source"] == "llm" and d["model"] == llm_server.model and d["every"] == 1
    assert d["config"]["mu"] == 0.3 and d["bounds"]["mu"]["max_step"] == 0.05
    # μ 0.3 → proposed 0.9: one max_step 0.05 → 0.35, clamped ; p_f 0.25 → 0.22 is inside both limits
    reply = {"mu": {"value": 0.9, "reason": "tokens still growing"}, "p_f": {"value": 0.22, "reason": "sharper"}}
    _say(ctl, llm_server, json.dumps(reply))
    with caplog.at_level(logging.INFO):
        changes = ctl.update(1, STATS)
    got = {c.name: c for c in changes}
    assert set(got) == {"mu", "p_f"}, ctl.last_error
    assert got["mu"].old == 0.3 and got["mu"].new == pytest.approx(0.35) and got["mu"].clamped
    assert got["mu"].proposed == 0.9 and "tokens still growing" in got["mu"].reason
    assert got["p_f"].new == 0.22 and not got["p_f"].clamped
    assert ctl.config.mu == pytest.approx(0.35) and ctl.config.p_f == 0.22 and ctl.last_error is None
    assert any("mu 0.3 -> 0.35" in r.getMessage() and "clamped" in r.getMessage() for r in caplog.records)
    assert ctl.describe()["config"]["mu"] == pytest.approx(0.35)
    _no_key_anywhere(ctl, caplog)


def test_llm_garbage_over_http_keeps_the_old_values(llm_server, caplog: pytest.LogCaptureFixture) -> None:
    ctl = _controller(llm_server)
    before = ctl.config
    for step, text in enumerate(["I would raise mu a little.", '{"mu": {"value": "lots"}}'], start=1):
        _say(ctl, llm_server, text)
        with caplog.at_level(logging.INFO):
            assert ctl.update(step, STATS) == []
        assert ctl.config == before and ctl.history == []
        assert ctl.last_error
    assert any("keeping old values" in r.getMessage() for r in caplog.records)
    assert any("not a finite number" in r.getMessage() for r in caplog.records)
    _no_key_anywhere(ctl, caplog)


def test_llm_server_unreachable_keeps_the_old_values(caplog: pytest.LogCaptureFixture) -> None:
    import socket

    with socket.socket() as s:  # a loopback port nothing listens on (bound, then released)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctl = make_controller("llm", CareConfig(), every=1, base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key=KEY)
    assert isinstance(ctl, LLMController)
    ctl.client.max_attempts = 1
    before = ctl.config
    with caplog.at_level(logging.INFO):
        assert ctl.update(1, STATS) == []
    assert ctl.config == before and "chat failed" in (ctl.last_error or "")
    _no_key_anywhere(ctl, caplog)
