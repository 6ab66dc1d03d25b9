"""Nothing lost in `phoneenv eval`: results written as episodes end, a killed run resumed, a
device blip waited out within a budget, any exception still writing the scoreboard, and no
fixture secret in any artifact of a run."""

from __future__ import annotations

import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import phoneenv.cli as cli
from agents import factory
from phoneenv.backends.sandbox import SandboxBackend
from phoneenv.contract import Trace
from phoneenv.evaluation import (
    EpisodeResult,
    InfraRetry,
    RunConfigError,
    RunFolder,
    read_results,
    run_episodes,
    score,
)
from phoneenv.llm import InfrastructureError
from phoneenv.tasks import get_task, select
from tests import waiting

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

# 20 sandbox tasks in three categories (memory tasks left out: they load an embedding model).
KILL_TASKS = ",".join(
    f"{tpl}/{k}"
    for tpl in ("contacts.favorite", "clock.set_alarm", "notes.create_note", "skills.share_contact",
                "subagent.birthday_note")
    for k in range(4)
)  # fmt: skip
SMALL = "contacts.favorite/0,contacts.favorite/1,skills.share_contact/0,subagent.birthday_note/0"

# The CLI with the reference agent slowed to 0.15 s per episode, so a kill lands mid-run
# (episodes take about a millisecond). Everything else is `python -m phoneenv.cli`.
SLOW_CLI = """
import time
import agents.reference as ref
from phoneenv.cli import app

reset = ref.ReferenceAgent.reset

def slow_reset(self, *args):
    time.sleep(0.15)
    return reset(self, *args)

ref.ReferenceAgent.reset = slow_reset
app(prog_name="phoneenv")
"""


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else "")}


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _board_figures(path: Path) -> dict[str, Any]:
    """What an interrupted-and-resumed run must share with an uninterrupted one (not wall times)."""
    board = json.loads(path.read_text(encoding="utf-8"))
    return {
        k: board[k] for k in ("agent", "categories", "domains", "mean_steps", "error_rate", "infrastructure_errors")
    }


def _eval(out: Path, *extra: str, tasks: str = SMALL, agent: str = "reference") -> Any:
    return runner.invoke(cli.app, ["eval", "--agent", agent, "--tasks", tasks, "--out", str(out), *extra])


# --- kill mid-run, then resume ----------------------------------------------------------------


def test_a_killed_run_keeps_its_finished_episodes_and_resume_completes_it(tmp_path):
    out = tmp_path / "killed"
    cmd = ["eval", "--agent", "reference", "--tasks", KILL_TASKS, "--out", str(out)]
    log = tmp_path / "killed.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-c", SLOW_CLI, *cmd], env=_env(), stdout=sink, stderr=sink)
    results = out / "results.jsonl"
    deadline = time.monotonic() + waiting.scaled(120)
    try:
        while len(_lines(results)) < 4:
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, "no episode reached results.jsonl in 120 s"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    kept = _lines(results)
    assert 4 <= len(kept) < 20, len(kept)  # killed mid-run, after some episodes
    for line in kept:  # every line is a whole result whose trace is on disk and parses
        row = json.loads(line)
        trace = Trace.model_validate_json(Path(row["trace_path"]).read_text(encoding="utf-8"))
        assert trace.task_id == row["task_id"] and trace.verdict is not None
    for path in (out / "traces").glob("*.jsonl"):  # no trace is ever half-written
        Trace.model_validate_json(path.read_text(encoding="utf-8"))
    assert not (out / "scoreboard.json").exists()  # SIGKILL: nothing ran after the kill

    res = waiting.run(
        [sys.executable, "-m", "phoneenv.cli", *cmd, "--resume"], env=_env(), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{len(kept)} episodes done, {20 - len(kept)} to run" in " ".join(res.stdout.split())
    final = read_results(results)
    assert sorted(r.task_id for r in final) == sorted(KILL_TASKS.split(","))  # each task exactly once
    assert [asdict(r) for r in final[: len(kept)]] == [json.loads(line) for line in kept]  # old lines kept as is
    assert all(Path(r.trace_path).exists() for r in final)

    whole = tmp_path / "whole"
    res = _eval(whole, tasks=KILL_TASKS)
    assert res.exit_code == 0, res.output
    assert _board_figures(out / "scoreboard.json") == _board_figures(whole / "scoreboard.json")
    cats = {row["label"]: row for row in json.loads((out / "scoreboard.json").read_text())["categories"]}
    assert cats["Overall"]["episodes"] == 20 and cats["Overall"]["success"] == 1.0
    assert [cats[c]["episodes"] for c in ("Tool", "Memory", "Skills", "Sub-agent")] == [12, 0, 4, 4]


def test_a_truncated_last_line_is_dropped_and_its_episode_run_again(tmp_path):
    out = tmp_path / "run"
    assert _eval(out).exit_code == 0
    results = out / "results.jsonl"
    lines = _lines(results)
    assert len(lines) == 4
    whole = _board_figures(out / "scoreboard.json")
    cut = lines[2][: len(lines[2]) // 2]  # a kill in the middle of writing the third line
    results.write_text("\n".join(lines[:2]) + "\n" + cut, encoding="utf-8")
    (out / "scoreboard.json").unlink()
    res = _eval(out, "--resume")
    assert res.exit_code == 0, res.output
    final = read_results(results)
    assert [r.task_id for r in final] == SMALL.split(",")[:2] + SMALL.split(",")[2:]
    assert all(json.loads(line) for line in _lines(results))  # the cut line is gone from the file too
    assert _board_figures(out / "scoreboard.json") == whole


def test_read_results_refuses_a_broken_line_that_is_not_the_last(tmp_path):
    path = tmp_path / "results.jsonl"
    good = json.dumps(asdict(EpisodeResult("a/0", "tool", "contacts", True, 1.0, 2, 0, False, 0, 0.1, None, 0)))
    path.write_text(f'{good}\n{{"task_id": \n{good}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 2"):
        read_results(path)
    path.write_text(f'{good}\n{good}\n{{"task_id": "b/0", "success": tr', encoding="utf-8")
    assert [r.task_id for r in read_results(path)] == ["a/0", "a/0"]
    path.write_text(f"{good}\n" + json.dumps({"task_id": "x", "success": "maybe"}) + "\n" + good, encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: not an episode result"):
        read_results(path)


def test_resume_refuses_another_configuration(tmp_path):
    out = tmp_path / "run"
    assert _eval(out).exit_code == 0
    before = (out / "results.jsonl").read_bytes()
    for extra, key in (
        (["--seed", "3"], "seed"),
        (["--backend", "sandbox"], "backend"),
        (["--max-steps", "4"], "max_steps"),
    ):
        res = _eval(out, "--resume", *extra)
        assert res.exit_code == 2, res.output
        text = " ".join(res.output.split())
        assert "another configuration" in text and f"{key}:" in text, text
    res = _eval(out, "--resume", agent="random")
    assert res.exit_code == 2 and 'agent: run "reference", now "random"' in " ".join(res.output.split())
    res = _eval(out, "--resume", tasks="contacts.favorite/0")
    assert res.exit_code == 2 and "task_ids:" in " ".join(res.output.split())
    assert (out / "results.jsonl").read_bytes() == before  # nothing touched
    res = _eval(tmp_path / "empty", "--resume")
    assert res.exit_code == 2 and "no run to resume" in " ".join(res.output.split())
    (out / "run.json").unlink()  # results from before run.json existed: never resumed, never mixed
    for extra in (["--resume"], []):
        res = _eval(out, *extra)
        assert res.exit_code == 2 and "4 episodes" in res.output and "--overwrite" in res.output, res.output
    assert (out / "results.jsonl").read_bytes() == before


def test_a_folder_holding_a_run_is_refused_unless_resumed_or_overwritten(tmp_path):
    out = tmp_path / "run"
    assert _eval(out, tasks="contacts.favorite/0").exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    res = _eval(out)
    assert res.exit_code == 2 and "already holds a run (1 episodes" in " ".join(res.output.split()), res.output
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    res = _eval(out, "--overwrite")
    assert res.exit_code == 0, res.output
    assert [r.task_id for r in read_results(out / "results.jsonl")] == SMALL.split(",")
    assert json.loads((out / "run.json").read_text())["tasks"] == SMALL
    res = _eval(out, "--resume")  # complete: nothing runs, the scoreboard is rewritten
    assert res.exit_code == 0 and "4 episodes done, 0 to run" in " ".join(res.output.split())
    assert len(read_results(out / "results.jsonl")) == 4
    assert _eval(out, "--resume", "--overwrite").exit_code == 2


def test_run_json_holds_no_api_key(tmp_path, monkeypatch):
    folder = RunFolder(tmp_path)
    folder.start({"agent": "x"})
    folder.close()
    with pytest.raises(RunConfigError, match="already holds a run"):
        RunFolder(tmp_path).start({"agent": "x"})

    class DeadServer:
        model = "m"

        def chat(self, messages, **kwargs):
            raise InfrastructureError("connection refused", kind="connection")

    monkeypatch.setattr(factory, "make_client", lambda *args, **kwargs: DeadServer())
    out = tmp_path / "llm"
    res = runner.invoke(
        cli.app,
        ["eval", "--agent", "llm", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--api-key", "sk-KEY-123",
         "--tasks", "contacts.favorite/0", "--out", str(out), "--max-consecutive-infra", "1"],
    )  # fmt: skip
    assert res.exit_code == 2, res.output  # a dead server: an infrastructure stop, with everything written
    assert "sk-KEY-123" not in (out / "run.json").read_text()
    assert json.loads((out / "run.json").read_text())["model"] == "m"
    assert [r.infrastructure_error for r in read_results(out / "results.jsonl")] == [True]
    assert json.loads((out / "scoreboard.json").read_text())["infrastructure_errors"] == 1


# --- any exception keeps the finished episodes -----------------------------------------------


def test_an_exception_in_an_episode_keeps_the_finished_ones_and_writes_the_scoreboard(tmp_path, monkeypatch):
    import phoneenv.evaluation as evaluation

    play = evaluation._play

    def buggy(agent, env, task, *args):
        if task.id == "skills.share_contact/0":
            raise TypeError("a bug in the third episode")
        return play(agent, env, task, *args)

    monkeypatch.setattr(evaluation, "_play", buggy)
    out = tmp_path / "run"
    res = _eval(out)
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "stopped by an error in the episode of skills.share_contact/0" in text and "TypeError" in text, text
    assert [r.task_id for r in read_results(out / "results.jsonl")] == ["contacts.favorite/0", "contacts.favorite/1"]
    board = json.loads((out / "scoreboard.json").read_text())
    assert board["categories"][-1]["episodes"] == 2
    monkeypatch.setattr(evaluation, "_play", play)  # the bug fixed: resume finishes the run
    res = _eval(out, "--resume")
    assert res.exit_code == 0, res.output
    assert [r.task_id for r in read_results(out / "results.jsonl")] == SMALL.split(",")


def test_a_trace_that_cannot_be_serialised_stops_the_run_with_everything_before_it_written(tmp_path, monkeypatch):
    def unserialisable(self, *args, **kwargs):
        raise ValueError("surrogates not allowed")

    real = Trace.model_dump_json

    def second_fails(self, *args, **kwargs):  # the second episode's trace, wherever it is dumped
        return unserialisable(self) if self.task_id == "contacts.favorite/1" else real(self, *args, **kwargs)

    monkeypatch.setattr(Trace, "model_dump_json", second_fails)
    out = tmp_path / "run"
    res = _eval(out)
    assert res.exit_code == 2, res.output
    assert [r.task_id for r in read_results(out / "results.jsonl")] == ["contacts.favorite/0"]
    assert not (out / "traces" / "contacts.favorite-1.jsonl").exists()  # never a half-written trace
    assert json.loads((out / "scoreboard.json").read_text())["categories"][-1]["episodes"] == 1


# --- a device blip: backoff within a budget ---------------------------------------------------


class FakeClock:
    """A clock that only the fake sleep advances: waits are recorded, never slept."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


class FlakyBackend(SandboxBackend):
    """A sandbox whose ``reset`` fails like a lost device on the given calls (1-based)."""

    def __init__(self, failing: set[int]) -> None:
        super().__init__()
        self.failing = failing
        self.resets = 0

    def reset(self, task):
        self.resets += 1
        if self.resets in self.failing:
            raise InfrastructureError(f"device offline (reset {self.resets})", kind="device")
        super().reset(task)


def _policy(clock: FakeClock, budget_s: float) -> InfraRetry:
    return InfraRetry(budget_s=budget_s, max_wait_s=30.0, jitter_s=0.0, sleep=clock.sleep, clock=clock)


def test_a_device_back_within_the_budget_continues_the_run():
    from agents import ReferenceAgent

    tasks = select(SMALL)
    clock = FakeClock()
    backend = FlakyBackend(failing={2, 3, 4, 5})  # the second task's reset fails four times
    seen: list[EpisodeResult] = []
    results = run_episodes(
        ReferenceAgent(), tasks, env_kwargs={"backend": backend}, on_episode=seen.append,
        infra_retry=_policy(clock, budget_s=60.0), max_consecutive_infra=1,
    )  # fmt: skip
    assert [r.task_id for r in results] == SMALL.split(",") and results == seen
    assert all(r.success and not r.infrastructure_error for r in results)
    assert clock.waits == [1.0, 2.0, 4.0, 8.0]  # exponential backoff (no jitter here)
    assert backend.resets == 8


def test_a_device_gone_past_the_budget_stops_the_run_cleanly():
    from agents import ReferenceAgent

    tasks = select(SMALL)
    clock = FakeClock()
    backend = FlakyBackend(failing=set(range(2, 100)))  # gone after the first episode
    seen: list[EpisodeResult] = []
    with pytest.raises(InfrastructureError, match="past the 10 s budget") as caught:
        run_episodes(
            ReferenceAgent(), tasks, env_kwargs={"backend": backend}, on_episode=seen.append,
            infra_retry=_policy(clock, budget_s=10.0),
        )  # fmt: skip
    assert "device offline" in str(caught.value) and caught.value.kind == "device"
    assert clock.waits == [1.0, 2.0, 4.0, 3.0]  # the last wait cut to what was left of the budget
    assert sum(clock.waits) == 10.0 and backend.resets == 1 + 5
    first, lost = seen
    assert first.success and not first.infrastructure_error
    assert lost.task_id == "contacts.favorite/1" and lost.infrastructure_error and lost.trace_path is None
    assert (first.infrastructure_kind, lost.infrastructure_kind) == (None, "device")


def test_without_a_retry_policy_a_failed_reset_is_an_infrastructure_episode_at_once():
    from agents import ReferenceAgent

    backend = FlakyBackend(failing={1})
    results = run_episodes(ReferenceAgent(), select(SMALL), env_kwargs={"backend": backend})
    assert [r.infrastructure_error for r in results] == [True, False, False, False]


def test_episodes_that_end_in_an_infrastructure_error_are_kept_and_followed_by_a_wait():
    from agents import ReferenceAgent

    class DeadServerTwice(ReferenceAgent):
        calls = 0

        def act(self, observation, info):
            DeadServerTwice.calls += 1
            if DeadServerTwice.calls <= 2:
                raise InfrastructureError("connection refused", kind="connection")
            return super().act(observation, info)

    clock = FakeClock()
    results = run_episodes(DeadServerTwice(), select(SMALL), infra_retry=_policy(clock, 60.0), max_consecutive_infra=5)
    assert [r.infrastructure_error for r in results] == [True, True, False, False]
    assert [r.infrastructure_kind for r in results] == ["connection", "connection", None, None]
    assert score("x", results).infrastructure_kinds == {"connection": 2}
    assert clock.waits == [1.0, 2.0]
    clock = FakeClock()
    DeadServerTwice.calls = -100  # dead for good
    with pytest.raises(InfrastructureError, match=r"past the 2\.5 s budget"):
        run_episodes(DeadServerTwice(), select(SMALL), infra_retry=_policy(clock, 2.5))
    assert clock.waits == [1.0, 1.5]


@pytest.mark.parametrize(("failing", "code"), [({2, 3}, 0), (set(range(2, 100)), 2)])
def test_cli_waits_out_a_blip_and_stops_with_everything_written_past_the_budget(tmp_path, monkeypatch, failing, code):
    import phoneenv.backends as backends

    clock = FakeClock()
    backend = FlakyBackend(failing)
    monkeypatch.setattr(backends, "make_backend", lambda name, **kw: backend)
    monkeypatch.setattr(
        "phoneenv.cli.evaluate.InfraRetry", partial(InfraRetry, sleep=clock.sleep, clock=clock, jitter_s=0.0)
    )
    out = tmp_path / "run"
    res = _eval(out, "--backend", "sandbox", "--infra-budget-s", "20")
    assert res.exit_code == code, res.output
    results = read_results(out / "results.jsonl")
    board = json.loads((out / "scoreboard.json").read_text())
    if code == 0:
        assert clock.waits == [1.0, 2.0]
        assert [r.task_id for r in results] == SMALL.split(",") and all(r.success for r in results)
        assert board["infrastructure_errors"] == 0
    else:
        assert sum(clock.waits) == 20.0
        assert [(r.task_id, r.infrastructure_error) for r in results] == [
            ("contacts.favorite/0", False),
            ("contacts.favorite/1", True),
        ]
        assert board["infrastructure_errors"] == 1 and board["categories"][-1]["episodes"] == 1
        assert "past the 20 s budget" in " ".join(res.output.split())
        monkeypatch.setattr(backend, "failing", set())  # the device is back: resume re-runs the lost one
        res = _eval(out, "--backend", "sandbox", "--resume")
        assert res.exit_code == 0, res.output
        ids = SMALL.split(",")  # the one lost runs again after those never played
        assert [(r.task_id, r.infrastructure_error) for r in read_results(out / "results.jsonl")] == [
            (t, False) for t in [ids[0], *ids[2:], ids[1]]
        ]


# --- no fixture secret in any artifact --------------------------------------------------------


def _secrets(tasks) -> set[str]:
    """Every fixture secret of ``tasks``: the vault's passwords (the only secret fixtures hold;
    ``Fixtures`` has no PIN or token values, ``step_up`` is a yes/no)."""
    return {v.get_secret_value() for t in tasks for v in t.fixtures.vault.values()}


def _grep(out: Path, texts: list[str], secrets: set[str]) -> tuple[int, list[str]]:
    files = [p for p in sorted(out.rglob("*")) if p.is_file()]
    found = []
    for name, text in [(str(p), p.read_text(encoding="utf-8", errors="replace")) for p in files] + [
        (f"<captured {k}>", t) for k, t in enumerate(texts)
    ]:
        found += [f"{name}: {s}" for s in secrets if s in text]
    return len(files), found


class SignInAgent:
    """The reference plan, after signing in with the task's saved password given explicitly
    (the documented ``password`` argument, which traces must mask)."""

    name = "sign-in"

    def __init__(self, seed: int = 0) -> None:
        from agents import ReferenceAgent

        self.ref = ReferenceAgent()
        self.first = True

    def reset(self, observation, info):
        self.ref.reset(observation, info)
        self.task = get_task(info["task_id"])
        self.first = True

    def act(self, observation, info):
        from agents.base import AgentAction

        if self.first:
            self.first = False
            (account, pw), *_ = [(k, v.get_secret_value()) for k, v in self.task.fixtures.vault.items()]
            args = {"app": "mail", "account": account, "password": pw}
            return AgentAction(json.dumps({"name": "system.sign_in", "arguments": args}))
        return self.ref.act(observation, info)


class HostileAgent(SignInAgent):
    """Plays the task's password wherever no schema marks it secret (issue 10's cases): an extra
    argument, another key, a misspelled tool, broken JSON, ``ui.type``, the user's confirmation
    question, a mail's fields, and the ``finish`` answer and value that end the episode."""

    name = "hostile"

    def act(self, observation, info):
        from agents.base import AgentAction

        if self.first:
            self.first = False
            (account, pw), *_ = [(k, v.get_secret_value()) for k, v in self.task.fixtures.vault.items()]
            self.queue = [
                {"name": "system.sign_in", "arguments": {"app": "mail", "account": account, "password": pw, "x": 1}},
                {"name": "system.sign_in", "arguments": {"app": "mail", "account": account, "passwd": pw}},
                {"name": "system.sign_inn", "arguments": {"app": "mail", "account": account, "password": pw}},
                '{"name": "system.sign_in", "arguments": {"password": "' + pw + '"',
                {"name": "system.sign_in", "arguments": '{"password": "' + pw + '", '},
                {"name": "ui.type", "arguments": {"text": pw}},
                {"name": "user.confirm", "arguments": {"question": f"sign in with {pw}?"}},
                {"name": "mail.send", "arguments": {"to": [pw], "subject": pw, "body": f"my password is {pw}"}},
                {"name": "finish", "arguments": {"answer": f"signed in with {pw}", "value": pw}},
            ]
        if self.queue:
            action = self.queue.pop(0)
            return AgentAction(action if isinstance(action, str) else json.dumps(action))
        return self.ref.act(observation, info)


def _eval_grep(
    tmp_path, monkeypatch, caplog, runs: list[tuple[str, str]], extra: dict[str, Any] | None = None
) -> tuple[int, int, list[str]]:
    """Run ``phoneenv eval`` for each (agent, selector); grep every file under each --out and the
    captured stdout, stderr and logs for every fixture secret of the selected tasks. Returns
    (secrets, files checked, leaks as "where: secret")."""
    import agents as agents_pkg

    monkeypatch.setattr(agents_pkg, "AGENTS", {**agents_pkg.AGENTS, **(extra or {})})
    caplog.set_level(logging.DEBUG)
    all_secrets: set[str] = set()
    n_files, found = 0, []
    for name, selector in runs:
        tasks = select(selector)
        secrets = _secrets(tasks)
        assert len(secrets) == len(tasks)  # one distinct password per task
        all_secrets |= secrets
        out = tmp_path / name
        res = runner.invoke(cli.app, ["eval", "--agent", name, "--tasks", selector, "--out", str(out)])
        assert res.exit_code == 0, res.output
        assert len(read_results(out / "results.jsonl")) == len(tasks)
        files, leaks = _grep(out, [res.output, res.stderr, caplog.text], secrets)
        n_files, found = n_files + files, found + leaks
        caplog.clear()
    return len(all_secrets), n_files, found


@pytest.mark.slow
def test_no_fixture_secret_reaches_any_artifact_of_an_eval_run(tmp_path, monkeypatch, caplog):
    """Reference and random agents on every task with a fixture secret (all of them), and an
    agent that gives the password in sign_in's secret argument on the mail tasks: every file
    under --out (run.json, results.jsonl, scoreboard.json, traces) and the captured stdout,
    stderr and logs hold none of the tasks' secrets."""
    every = ",".join(t.id for t in select("all") if t.fixtures.vault)
    runs = [("reference", every), ("random", every), ("sign-in", "mail.*")]
    n_secrets, n_files, found = _eval_grep(tmp_path, monkeypatch, caplog, runs, {"sign-in": SignInAgent})
    print(f"{n_secrets} secrets checked in {n_files} files and the captured output: {len(found)} found")
    assert n_secrets >= 800 and n_files >= 2 * (n_secrets + 3)
    assert found == [], found[:5]


class SecretsFound(AssertionError):
    """Fixture secrets found in the artifacts of a run."""


def test_no_fixture_secret_reaches_an_artifact_whatever_the_agent_sends(tmp_path, monkeypatch, caplog):
    """A hostile agent gives each mail task's password everywhere but the secret parameter
    (issue 10's leak paths): no artifact of the run and no captured output holds it."""
    runs = [("hostile", "mail.*")]
    _, _, found = _eval_grep(tmp_path, monkeypatch, caplog, runs, {"hostile": HostileAgent})
    if found:
        raise SecretsFound(f"{len(found)} found, e.g. {found[:3]}")


def test_a_second_run_on_the_same_folder_is_refused_while_the_first_holds_it(tmp_path):
    first = RunFolder(tmp_path / "run")
    first.start({"agent": "a"})
    second = RunFolder(tmp_path / "run")
    for attempt in (lambda: second.resume({"agent": "a"}), lambda: second.start({"agent": "a"}, overwrite=True)):
        with pytest.raises(RunConfigError, match="in use by another run"):
            attempt()
    assert (tmp_path / "run" / "run.json").exists()  # the refused overwrite removed nothing
    first.close()
    assert second.resume({"agent": "a"}) == []
    second.close()


def test_ctrl_c_while_an_episode_is_recorded_waits_and_keeps_disk_and_count_equal(tmp_path, monkeypatch):
    """SIGINT arriving while a finished episode is being written (between the line on disk and
    the count) is held until both are done; one swallowed by Python elsewhere still stops the
    run at the next episode. results.jsonl and the scoreboard then agree."""
    import signal

    original = RunFolder.append
    calls = {"n": 0}

    def append_then_interrupt(self, result):
        original(self, result)
        calls["n"] += 1
        if calls["n"] == 2:
            signal.raise_signal(signal.SIGINT)  # lands between the line on disk and the count

    monkeypatch.setattr(RunFolder, "append", append_then_interrupt)
    out = tmp_path / "run"
    res = runner.invoke(cli.app, ["eval", "--agent", "reference", "--tasks", SMALL, "--out", str(out)])
    assert res.exit_code != 0 and "interrupted" in res.output, (res.exit_code, repr(res.exception))
    lines = read_results(out / "results.jsonl")
    board = json.loads((out / "scoreboard.json").read_text())
    assert len(lines) == 2 == board["categories"][-1]["episodes"] + board["infrastructure_errors"]


def test_a_swallowed_ctrl_c_still_stops_the_run_at_the_next_episode(tmp_path, monkeypatch):
    """Python swallows a KeyboardInterrupt raised inside a finalizer (it prints "Exception
    ignored"); the run must stop anyway once the episode in progress is recorded."""
    import gc
    import signal

    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)
            for _ in range(100):  # the handler runs here, and its KeyboardInterrupt dies with __del__
                pass

    import phoneenv.evaluation as evaluation

    original = evaluation._play
    calls = {"n": 0}

    def play_after_a_swallowed_interrupt(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            Finalized()
            gc.collect()
        return original(*args, **kwargs)

    monkeypatch.setattr(evaluation, "_play", play_after_a_swallowed_interrupt)
    out = tmp_path / "run"
    res = runner.invoke(cli.app, ["eval", "--agent", "reference", "--tasks", SMALL, "--out", str(out)])
    assert res.exit_code != 0 and "interrupted" in res.output, (res.exit_code, repr(res.exception))
    assert len(read_results(out / "results.jsonl")) == 1


def test_results_reach_the_disk_in_group_syncs_and_at_close(tmp_path, monkeypatch):
    # One sync per SYNC_INTERVAL_S however many episodes end in it, and one at close: a killed
    # process loses nothing (each line is flushed to the OS), a crashed machine the last second.
    import phoneenv.evaluation as evaluation

    syncs: list[float] = []
    monkeypatch.setattr(evaluation.os, "sync", lambda: syncs.append(time.monotonic()))
    clock = [1000.0]
    monkeypatch.setattr(evaluation.time, "monotonic", lambda: clock[0])
    run = RunFolder(tmp_path / "run")
    run.start({"agent": "x"})
    row = EpisodeResult("a/0", "tool", "contacts", True, 1.0, 2, 0, False, 0, 0.1, None, 0)
    for _ in range(50):  # 50 episodes within one second: no sync yet, every line already readable
        clock[0] += 0.01
        run.append(row)
    assert syncs == []
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 50
    clock[0] += 0.6  # past the interval: the next episode syncs, the one after does not
    run.append(row)
    run.append(row)
    assert len(syncs) == 1
    run.close()
    assert len(syncs) == 2
    run.close()  # idempotent
    assert len(syncs) == 2


def test_an_episode_is_reported_while_the_next_one_runs_not_after_it(tmp_path):
    """The trace writer works off the episode loop, and the run reports a finished episode (its
    result line) between the next episode's steps once its trace is on disk, not when that next
    episode has ended: a run killed during a long episode keeps the one before it."""
    from agents.reference import ReferenceAgent

    events: list[tuple[str, str]] = []

    class Slow(ReferenceAgent):
        def reset(self, obs, info):
            self._task = info["task_id"]
            return super().reset(obs, info)

        def act(self, obs, info):
            time.sleep(0.05)  # a trace write (about a millisecond) ends well within a step
            events.append(("act", self._task))
            return super().act(obs, info)

    tasks = [get_task(t) for t in ("contacts.favorite/0", "contacts.favorite/1", "clock.set_alarm/0")]
    run_episodes(Slow(), tasks, tmp_path, seed=0, on_episode=lambda r: events.append(("report", r.task_id)))
    for done, nxt in itertools.pairwise(tasks):
        reported = events.index(("report", done.id))
        acts_after = [e for e in events[reported:] if e == ("act", nxt.id)]
        assert acts_after, f"{done.id} was reported only after {nxt.id} had ended: {events}"
    assert [e[1] for e in events if e[0] == "report"] == [t.id for t in tasks]


def test_an_agent_raising_stop_iteration_is_a_bug_reported_not_an_episode_end():
    """StopIteration from ``act`` (a ``next()`` on an exhausted iterator) once ended the episode
    generator silently and returned None as the result."""
    from phoneenv.env import PhonePlanEnv
    from phoneenv.evaluation import play_episode
    from phoneenv.tasks import get_task

    class Exhausted:
        def reset(self, observation, info):
            self.plan = iter(())

        def act(self, observation, info):
            return next(self.plan)

    task = get_task("contacts.favorite/0")
    with pytest.raises(RuntimeError, match=r"Exhausted\.act raised StopIteration"):
        play_episode(Exhausted(), PhonePlanEnv(tasks=[task]), task, 0)


def test_resume_runs_earlier_infrastructure_errors_after_new_tasks_and_keeps_their_lines(tmp_path):
    """An endpoint that failed before must not spend the outage budget before any never-played
    task runs: --resume plays the never-played tasks first, then the earlier infrastructure
    errors; their old lines go to results.superseded.jsonl (none is lost), and it says so."""
    out = tmp_path / "run"
    res = _eval(out)
    assert res.exit_code == 0, res.output
    ids = SMALL.split(",")
    lines = (out / "results.jsonl").read_text().splitlines()
    rows = {json.loads(line)["task_id"]: json.loads(line) for line in lines}
    broken = {**rows[ids[1]], "success": False, "infrastructure_error": True, "infrastructure_kind": "server_error"}
    (out / "results.jsonl").write_text(json.dumps(rows[ids[0]]) + "\n" + json.dumps(broken) + "\n")
    res = _eval(out, "--resume")
    assert res.exit_code == 0, res.output
    assert "2 to run" not in res.output and "1 earlier infrastructure errors run again" in " ".join(res.output.split())
    order = [json.loads(line)["task_id"] for line in (out / "results.jsonl").read_text().splitlines()]
    assert order == [ids[0], ids[2], ids[3], ids[1]]  # the redo after the never-played ones
    [old] = (out / "results.superseded.jsonl").read_text().splitlines()
    assert json.loads(old) == broken
