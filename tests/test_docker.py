"""The Docker images on a real Docker engine: the virtual-device worker image as a farm
(`phoneenv farm up --docker`), and the root image's default command and HEALTHCHECK.

Skips with the reason when no engine answers, when no docker client can build with BuildKit, or
when there is no base image. The base image is $PHONEENV_DOCKER_BASE, else phoneenv-base:bookworm
(docker/base-image.sh makes it with debootstrap), else python:3.11-slim when the engine has it.
Builds use the layer cache: a cold build of both images takes about two minutes, a cached one a
second. When this machine's pip trusts a CA bundle (/etc/ssl/certs/ca-certificates.crt), it is
given to the build as the secret `ca` (see docker/virtual-device.Dockerfile).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("adbutils", reason="the farm needs adbutils (pip install -e '.[device]')")
pytest.importorskip("bashlex", reason="the virtual device needs bashlex (pip install -e '.[device]')")

from phoneenv.cli import app
from phoneenv.farm.workers import DOCKER, adb_ping, docker_available
from phoneenv.tasks import select, split_of
from tests import waiting
from tests.adb import state_of, wait_for_state
from tests.test_farm_cli import (
    MODEL,
    assert_episodes_match_the_sandbox,
    device_tasks,
    play_reference,
    sandbox_reference,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
runner = CliRunner()


def _docker(*args: str, timeout: float = 120.0, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = waiting.run([DOCKER, *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, f"docker {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _builder() -> str | None:
    """A docker client that builds with BuildKit (RUN --mount): $PHONEENV_DOCKER_BUILD, the
    default client, or Debian's /usr/bin/docker (a newer client without buildx cannot)."""
    env = {**os.environ, "DOCKER_BUILDKIT": "1"}
    for client in (os.environ.get("PHONEENV_DOCKER_BUILD"), DOCKER, "/usr/bin/docker"):
        if not client:
            continue
        try:
            ok = waiting.run([client, "build", "--help"], capture_output=True, env=env, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            continue
        if ok:
            return client
    return None


def _base_image() -> str | None:
    candidates = [os.environ.get("PHONEENV_DOCKER_BASE"), "phoneenv-base:bookworm", "python:3.11-slim"]
    for image in filter(None, candidates):
        if _docker("image", "inspect", image, check=False, timeout=30).returncode == 0:
            return image
    return None


@pytest.fixture(scope="module")
def docker_build():
    """``build(dockerfile, tag) -> seconds``: builds from the repository root on the base image."""
    reason = docker_available()
    if reason:
        pytest.skip(f"no Docker engine: {reason}")
    builder = _builder()
    if builder is None:
        pytest.skip("no docker client here builds with BuildKit (install buildx, or Debian's docker.io)")
    base = _base_image()
    if base is None:
        pytest.skip("no base image: run docker/base-image.sh (debootstrap) or pull python:3.11-slim")

    def build(dockerfile: str, tag: str) -> float:
        cmd = [builder, "build", "--network", "host", "--build-arg", f"BASE_IMAGE={base}", "-f", dockerfile, "-t", tag]
        if CA_BUNDLE.exists():
            cmd += ["--secret", f"id=ca,src={CA_BUNDLE}"]
        t0 = time.monotonic()
        proc = waiting.run(
            [*cmd, "."],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "DOCKER_BUILDKIT": "1"},
        )
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr[-4000:]}"
        seconds = time.monotonic() - t0
        print(f"\nbuilt {tag} from {dockerfile} on {base} in {seconds:.1f} s")
        return seconds

    return build


def _health(name: str) -> str:
    return _docker("inspect", "--format", "{{.State.Health.Status}}", name).stdout.strip()


def _wait_health(name: str, wanted: str, timeout: float) -> str:
    deadline = time.monotonic() + waiting.scaled(timeout)
    while (health := _health(name)) != wanted and time.monotonic() < deadline:
        time.sleep(0.5)
    return health


def test_farm_up_docker_stands_up_workers_that_play_episodes_heal_and_come_down(docker_build, adb_server, tmp_path):
    image = "phoneenv-virtual-device:test"
    docker_build("docker/virtual-device.Dockerfile", image)
    config = json.loads(_docker("image", "inspect", image).stdout)[0]["Config"]
    assert config["Healthcheck"]["Test"][1:4] == ["python3", "-I", "/opt/phoneenv/phoneenv/farm/handshake.py"]

    path = tmp_path / "farm.json"
    prefix = f"phoneenv-test-{uuid.uuid4().hex[:8]}"
    up = [
        *("farm", "up", "--docker", "--workers", "2", "--image", image, "--name-prefix", prefix),
        *("--adb-port", str(adb_server.port), "--out", str(path), "--timeout", "120"),
    ]
    t0 = time.monotonic()
    try:
        result = runner.invoke(app, up)
        assert result.exit_code == 0, result.output
        print(f"farm up --docker --workers 2: {time.monotonic() - t0:.1f} s")
        data = json.loads(path.read_text())
        names = [d["worker"]["container"] for d in data["devices"]]
        assert names == [f"{prefix}-1", f"{prefix}-2"]
        labelled = _docker("ps", "--filter", f"label=phoneenv.farm={path}", "--format", "{{.Names}}").stdout.split()
        assert sorted(labelled) == names
        serials = [d["serial"] for d in data["devices"]]
        tasks = device_tasks(2)
        box = sandbox_reference(tasks, tmp_path / "sandbox")
        for i, serial in enumerate(serials):
            assert state_of(adb_server, serial) == "device"
            assert adb_server.device(serial).shell("getprop ro.product.model").strip() == MODEL
            assert_episodes_match_the_sandbox(play_reference(serial, adb_server.port, tasks, tmp_path / f"d{i}"), box)

        # a hung worker (SIGSTOP): its HEALTHCHECK (the adb handshake) turns it unhealthy, and
        # the farm file's restart argv (what the pool runs last) brings it back on its serial
        hung = data["devices"][0]
        _docker("kill", "--signal", "SIGSTOP", hung["worker"]["container"])
        with pytest.raises(TimeoutError):
            host, _, port = hung["serial"].rpartition(":")
            adb_ping(host, int(port), timeout_s=2)
        assert _wait_health(hung["worker"]["container"], "unhealthy", 60) == "unhealthy"
        status = runner.invoke(app, ["farm", "status", str(path), "--json"])
        rows = {r["serial"]: r for r in json.loads(status.output)}
        assert rows[hung["serial"]]["worker"] == "running/unhealthy"
        assert rows[serials[1]]["worker"] == "running/healthy" and rows[serials[1]]["ready"]
        proc = waiting.run(hung["restart"], capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert _health(hung["worker"]["container"]) == "healthy"
        assert state_of(adb_server, hung["serial"]) == "device"
        assert_episodes_match_the_sandbox(play_reference(hung["serial"], adb_server.port, tasks, tmp_path / "r"), box)
        status = runner.invoke(app, ["farm", "status", str(path), "--json"])
        assert status.exit_code == 0 and all(r["ready"] for r in json.loads(status.output))

        down = runner.invoke(app, ["farm", "down", str(path)])
        assert down.exit_code == 0, down.output
        assert _docker("ps", "-a", "--filter", f"label=phoneenv.farm={path}", "--format", "{{.Names}}").stdout == ""
        for serial in serials:
            wait_for_state(adb_server, serial, {None}, timeout=10)
    finally:
        leftover = _docker("ps", "-aq", "--filter", f"name={prefix}", check=False).stdout.split()
        if leftover:
            _docker("rm", "-f", *leftover, check=False)


def test_root_image_default_command_evaluates_the_test_split_and_its_healthcheck_passes(docker_build, tmp_path):
    image = "phoneenv:test"
    docker_build("Dockerfile", image)
    config = json.loads(_docker("image", "inspect", image).stdout)[0]["Config"]
    assert config["Entrypoint"] == ["phoneenv"] and config["Cmd"][0] == "eval"

    runs = tmp_path / "runs"
    runs.mkdir()
    user = f"{os.getuid()}:{os.getgid()}"
    t0 = time.monotonic()
    _docker("run", "--rm", "--user", user, "-v", f"{runs}:/runs", image, timeout=600)
    print(f"default command: {time.monotonic() - t0:.1f} s")
    [run] = list(runs.iterdir())
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    expected = [t.id for t in select("all") if split_of(t.id) == "test"]
    assert sorted(r["task_id"] for r in lines) == sorted(expected)
    assert all(r["success"] and not r["infrastructure_error"] for r in lines)
    assert len(list((run / "traces").iterdir())) == len(expected)

    # the HEALTHCHECK's own command, in the image
    test = config["Healthcheck"]["Test"]
    assert test[0] == "CMD"
    proc = _docker("run", "--rm", "--user", user, "--entrypoint", test[1], image, *test[2:], check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_farm_up_with_an_image_that_is_not_built_says_how_to_build_it(adb_server, tmp_path):
    reason = docker_available()
    if reason:
        pytest.skip(f"no Docker engine: {reason}")
    image = f"phoneenv-not-built-{uuid.uuid4().hex[:8]}"
    prefix = f"pe-missing-{uuid.uuid4().hex[:6]}"
    out = tmp_path / "farm.json"
    result = runner.invoke(
        app,
        ["farm", "up", "--workers", "1", "--image", image, "--name-prefix", prefix, "--adb-port", str(adb_server.port),
         "--out", str(out)],
    )  # fmt: skip
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "build the image first: DOCKER_BUILDKIT=1 docker build" in said, said
    assert not out.exists()
    assert _docker("ps", "-aq", "--filter", f"name={prefix}").stdout.strip() == ""  # nothing left behind
