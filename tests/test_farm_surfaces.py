"""The farm's commands as a new user meets them (issue 34, item 10): a driver setup error is one
line and blames no episode, the Docker workers are waited for until the deadline stated, and
every process a command starts is stopped by its counterpart. Fast: no Docker engine, no Ray
cluster (tests/test_farm_ray.py and tests/test_docker.py run those)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from phoneenv.cli import app
from tests import waiting

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


# -- farm up --docker: waiting for a worker's health ---------------------------------------------


def fake_docker(tmp_path, answers: list[str]):
    """A `docker` client that answers each `docker inspect` with the next of ``answers`` (the last
    one again when they run out) and `docker logs` with two lines; returns its path."""
    (tmp_path / "answers").write_text("\n".join(answers) + "\n")
    (tmp_path / "count").write_text("0")
    script = tmp_path / "docker"
    script.write_text(
        f"""#!/bin/sh
dir={tmp_path}
case "$1" in
  inspect)
    n=$(cat "$dir/count"); echo $((n + 1)) > "$dir/count"
    total=$(wc -l < "$dir/answers")
    [ "$n" -ge "$total" ] && n=$((total - 1))
    sed -n "$((n + 1))p" "$dir/answers" ;;
  logs) echo "serving the virtual device"; echo "still serving" ;;
esac
"""
    )
    script.chmod(0o755)
    return str(script)


def test_farm_up_waits_through_starting_and_unhealthy_until_healthy(tmp_path, monkeypatch):
    from phoneenv.farm import workers

    monkeypatch.setattr(workers, "HEALTH_POLL_S", 0.05)
    answers = ["running starting", "running starting", "running unhealthy", "running unhealthy", "running healthy"]
    docker = fake_docker(tmp_path, answers)
    workers._wait_container_healthy(docker, "phoneenv-worker-1", timeout_s=30)  # returns: healthy
    assert int((tmp_path / "count").read_text()) == 5  # asked until it was healthy, past "unhealthy"


def test_farm_up_waits_for_the_deadline_it_states_then_says_so_in_one_line(tmp_path, monkeypatch):
    import time

    from phoneenv.farm import workers

    monkeypatch.setattr(workers, "HEALTH_POLL_S", 0.05)
    docker = fake_docker(tmp_path, ["running starting", "running unhealthy"])
    t0 = time.monotonic()
    with pytest.raises(workers.WorkerError) as caught:
        workers._wait_container_healthy(docker, "phoneenv-worker-1", timeout_s=2)
    waited = time.monotonic() - t0
    assert waited >= 2  # not the first "unhealthy"
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("worker container phoneenv-worker-1 is running/unhealthy after 2 s (the deadline: 2 s)")
    assert message.endswith("its log's last line: still serving (docker logs phoneenv-worker-1)")


def test_a_worker_that_exits_ends_the_wait_at_once(tmp_path, monkeypatch):
    import time

    from phoneenv.farm import workers

    monkeypatch.setattr(workers, "HEALTH_POLL_S", 0.05)
    docker = fake_docker(tmp_path, ["running starting", "exited none"])
    t0 = time.monotonic()
    with pytest.raises(workers.WorkerError, match="is exited/none after"):
        workers._wait_container_healthy(docker, "phoneenv-worker-1", timeout_s=60)
    assert time.monotonic() - t0 < 30


# -- the worker image's health check ---------------------------------------------------------------


def test_the_health_check_imports_nothing_of_phoneenv_and_answers_like_device_ping(tmp_path):
    """The image's HEALTHCHECK runs phoneenv/farm/handshake.py with the standard library alone
    (`python3 -I`): exit 0 for a device, 1 for a refused or unauthorized endpoint."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")
    from phoneenv.farm.adbwire import AdbDeviceServer
    from phoneenv.farm.virtual import VirtualDevice

    root = Path(__file__).resolve().parents[1]
    script = root / "phoneenv" / "farm" / "handshake.py"
    dockerfile = (root / "docker" / "virtual-device.Dockerfile").read_text()
    assert '"python3", "-I", "/opt/phoneenv/phoneenv/farm/handshake.py"' in dockerfile

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return waiting.run([sys.executable, "-I", str(script), *args], capture_output=True, text=True, timeout=60)

    with AdbDeviceServer(VirtualDevice()) as server:
        assert run(server.serial, "--timeout", "4").returncode == 0
        modules = waiting.run(
            [sys.executable, "-I", "-c", f"import runpy, sys; sys.argv = [{str(script)!r}, {server.serial!r}]\n"
             f"try:\n    runpy.run_path({str(script)!r}, run_name='__main__')\nexcept SystemExit as e:\n"
             "    assert e.code == 0\nprint(sorted(m for m in sys.modules if m.startswith('phoneenv')))"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert modules.stdout.strip().endswith("[]"), modules.stdout + modules.stderr
        port = server.port
    with AdbDeviceServer(VirtualDevice(), require_auth=True) as server:
        assert run(server.serial).returncode == 1
    refused = run(f"127.0.0.1:{port}", "--timeout", "2")
    assert refused.returncode == 1 and refused.stderr.startswith("no device: ")
    assert run("no-port").returncode == 2


# -- the root Docker image: where the results land -------------------------------------------------


def test_eval_in_the_root_image_says_where_the_host_finds_the_run(tmp_path, monkeypatch):
    """The root image sets PHONEENV_RUNS_VOLUME=/runs: eval names the host folder that holds the
    run (the one mounted there), and warns of an --out outside it, which a --rm container loses."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert "ENV PHONEENV_RUNS_VOLUME=/runs" in (root / "Dockerfile").read_text()
    volume = tmp_path / "runs"
    monkeypatch.setenv("PHONEENV_RUNS_VOLUME", str(volume))
    args = ["eval", "--agent", "reference", "--tasks", "budget.fix_expense/0", "--out"]
    res = runner.invoke(app, [*args, str(volume / "reference-test")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "on the host it is runs/reference-test in the folder mounted on" in text
    assert 'docker run --rm -v "$PWD/runs:' in text
    res = runner.invoke(app, [*args, str(tmp_path / "elsewhere")])
    assert res.exit_code == 0, res.output
    assert "is inside this container, outside" in " ".join(res.output.split())
    monkeypatch.delenv("PHONEENV_RUNS_VOLUME")
    res = runner.invoke(app, [*args, str(tmp_path / "host")])
    assert res.exit_code == 0 and "note:" not in res.output  # outside the image: nothing to say
