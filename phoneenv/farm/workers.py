"""Virtual-device workers for a farm on one machine: start them (Docker containers or local
processes), wait until each answers adb, ``adb connect`` them, and write the farm file that
:class:`phoneenv.farm.pool.DevicePool` reads; stop them; report their state.

A worker is ``phoneenv device serve``: the sandbox phone as an adb device
(:class:`phoneenv.farm.virtual.VirtualDevice` behind :class:`phoneenv.farm.adbwire.AdbDeviceServer`).

- ``runtime="docker"``: one container per worker from the image of
  ``docker/virtual-device.Dockerfile``, its port 5555 published on ``bind_host:PORT``; ready once
  Docker reports the container ``healthy`` (its ``HEALTHCHECK`` is :func:`adb_ping`).
- ``runtime="local"``: one ``python -m phoneenv device serve --port 0`` process per worker (for
  machines without Docker); ready once it printed its serial and answers :func:`adb_ping`.

Each device of the farm file carries, beside the keys of the interface (``serial``, ``kind``,
``restart``), a ``worker`` record (unknown to the pool, which keeps and ignores it) saying how to
stop or restart it: ``{"runtime": "docker", "container": NAME, "image": IMAGE, "port": P}`` or
``{"runtime": "local", "pid": PID, "port": P, "log": PATH}``. ``restart`` is
``phoneenv farm restart FARM_FILE SERIAL``, which restarts that one worker on the same port,
waits until it answers and reconnects it.

Used by ``phoneenv farm up|down|status|restart`` (:mod:`phoneenv.cli.farm`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import tenacity
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, TypeAdapter, ValidationError

from phoneenv.errors import PhoneEnvError
from phoneenv.extras import require
from phoneenv.farm.handshake import HandshakeError, handshake, recv_exact
from phoneenv.farm.pool import FARM_FILE_FIX, FarmFile, FarmFileError

__all__ = [
    "DEFAULT_IMAGE",
    "DeviceStatus",
    "FarmFile",
    "PingResult",
    "WorkerError",
    "adb_ping",
    "farm_down",
    "farm_status",
    "farm_up",
    "restart_worker",
    "stop_adb_server",
]

DEFAULT_IMAGE = "phoneenv-virtual-device"
DOCKER = os.environ.get("PHONEENV_DOCKER", "docker")  # the docker client (default: `docker` on PATH)
WORKER_PORT = 5555  # the port `phoneenv device serve` listens on inside a worker container
_SERVING = re.compile(r"serving .* on (?P<host>[^\s]+):(?P<port>\d+)\s*$", re.MULTILINE)


WORKER_HEALTH: dict[str, Any] = {"deadlines": {"reconnect": 10.0, "reattach": 10.0, "reboot": 0.0, "restart": 120.0}}
"""The recovery deadlines (s) ``farm up`` writes into the farm file (the pool's ``health``): a
worker is its process, so ``adb reboot`` heals nothing there (skipped: 0 s) and a restart takes
seconds; after 10 s of reconnecting and 10 s of re-attaching, the pool restarts the worker."""


class WorkerError(PhoneEnvError, RuntimeError):
    """A worker could not be started, did not become healthy, or could not be reached by adb.
    The message names the worker and carries the tail of its log where there is one."""


# -- the farm file (phoneenv.farm.pool.FarmFile) -----------------------------------------------


def _farm_dict(farm: Any) -> dict[str, Any]:
    """The farm file as JSON data, unknown keys (the ``worker`` records) included."""
    return json.loads(farm.model_dump_json(exclude_none=True))


class _DockerWorker(BaseModel):
    """A ``worker`` record of a container: ``docker rm -f`` / ``docker restart`` take its name."""

    model_config = ConfigDict(extra="allow")

    runtime: Literal["docker"]
    container: Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]  # Docker's names
    image: StrictStr | None = None
    port: Annotated[StrictInt, Field(ge=1, le=65535)] | None = None


class _LocalWorker(BaseModel):
    """A ``worker`` record of a local process: ``farm down`` signals its pid, so the pid must be
    one process's (never 0 or -1, which signal a process group or every process)."""

    model_config = ConfigDict(extra="allow")

    runtime: Literal["local"]
    pid: Annotated[StrictInt, Field(gt=0, lt=2**31)]
    port: Annotated[StrictInt, Field(ge=1, le=65535)]
    log: Annotated[StrictStr, Field(min_length=1)]


_WORKER: TypeAdapter[Any] = TypeAdapter(Annotated[_DockerWorker | _LocalWorker, Field(discriminator="runtime")])


def _read_farm(path: Path) -> dict[str, Any]:
    """The farm file at ``path`` as JSON data (:func:`_farm_dict`), each device's ``worker``
    record checked (:class:`_DockerWorker`, :class:`_LocalWorker`) before anything acts on it.
    Raises ``FileNotFoundError``, and :class:`~phoneenv.farm.pool.FarmFileError` naming the file
    and the first problem."""
    data = _farm_dict(FarmFile.load(path))
    for i, device in enumerate(data["devices"]):
        if device.get("worker") is None:
            continue  # a device listed by hand: no worker to stop or restart
        try:
            _WORKER.validate_python(device["worker"])
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(p) for p in ("devices", i, "worker", *problem.get("loc", ())))
            fix = FARM_FILE_FIX.format(path=path)
            raise FarmFileError(f"{path} is not a farm file: {where}: {problem['msg']} ({fix})") from None
    return data


def _save(data: dict[str, Any], path: Path) -> Any:
    farm = FarmFile.model_validate(data)
    farm.dump(path)
    return farm


# -- the adb handshake ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PingResult:
    """What a device endpoint answered to the adb host's ``CNXN``: ``state`` is ``"device"``
    (it answered ``CNXN`` with its banner) or ``"unauthorized"`` (it asked for ``AUTH``);
    ``banner`` the ``key=value`` properties of its ``device::`` banner; ``elapsed_s`` seconds."""

    state: Literal["device", "unauthorized"]
    banner: dict[str, str]
    elapsed_s: float


def adb_ping(host: str, port: int, timeout_s: float = 5.0) -> PingResult:
    """Do the adb host's handshake with the device endpoint at ``host:port`` (what ``adb connect``
    does first) and return what it answered, then hang up.

    Raises ``OSError`` when nothing listens or the connection breaks, ``TimeoutError`` when the
    endpoint accepts but does not answer within ``timeout_s`` seconds (a hung device), and
    ``WorkerError`` when it answers something other than ``CNXN`` or ``AUTH``.
    """
    try:
        state, text, elapsed = handshake(host, port, timeout_s)
    except HandshakeError as exc:
        raise WorkerError(str(exc)) from None
    props = text.partition("::")[2]
    banner = dict(p.split("=", 1) for p in props.split(";") if "=" in p)
    return PingResult(state, banner, elapsed)  # type: ignore[arg-type]


# -- the adb server ------------------------------------------------------------------------------


def _adb_client(host: str, port: int, timeout_s: float = 10.0) -> Any:
    """An ``adbutils.AdbClient`` on the adb server at ``host:port``; ``WorkerError`` when no server
    answers there (checked with a raw socket first: adbutils would start one on port 5037)."""
    require("farm", "adbutils", feature="A farm's adb connections")
    import adbutils

    if _adb_server_version(host, port) is None:
        raise WorkerError(
            f"no adb server answers on {host}:{port}; start one (adb -P {port} start-server) or pass its --adb-port"
        )
    return adbutils.AdbClient(host=host, port=port, socket_timeout=timeout_s)


def _adb_server_version(host: str, port: int, timeout_s: float = 2.0) -> int | None:
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.sendall(b"000chost:version")
            reply = recv_exact(s, 12)
    except OSError:
        return None
    return int(reply[8:12], 16) if reply.startswith(b"OKAY") else None


def ensure_adb_server(host: str, port: int, *, start: bool = True) -> bool:
    """Make sure an adb server answers on ``host:port``: when none does, ``host`` is loopback,
    ``start`` is true and ``adb`` is on PATH, run ``adb -P port start-server``. Returns True when
    this call started the server (the caller stops it: :func:`stop_adb_server`). Raises
    ``WorkerError`` when no server answers afterwards."""
    if _adb_server_version(host, port) is not None:
        return False
    adb = os.environ.get("PHONEENV_ADB") or shutil.which("adb")
    if start and adb and host in ("127.0.0.1", "localhost", "::1"):
        subprocess.run([adb, "-P", str(port), "start-server"], capture_output=True, timeout=30, check=False)
    if _adb_server_version(host, port) is None:
        if start and not adb and host in ("127.0.0.1", "localhost", "::1"):
            why = "adb is not on PATH to start one: apt-get install adb, or set PHONEENV_ADB"
        else:
            why = "none could be started here"
        raise WorkerError(f"no adb server answers on {host}:{port}; {why}")
    return True


def stop_adb_server(host: str, port: int, timeout_s: float = 10.0) -> bool:
    """Stop the adb server on ``host:port`` (``adb kill-server``: its ``host:kill`` request) and
    wait until it no longer answers. Returns False when none answered; raises ``WorkerError``
    when it still answers after ``timeout_s`` seconds."""
    if _adb_server_version(host, port) is None:
        return False
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout_s) as s:
        s.sendall(b"0009host:kill")
        with contextlib.suppress(OSError):
            s.recv(4)  # OKAY, then the server exits
    gone = tenacity.Retrying(
        stop=tenacity.stop_after_delay(timeout_s),
        wait=tenacity.wait_fixed(0.1),
        retry=tenacity.retry_if_result(lambda version: version is not None),
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else 0,
    )(_adb_server_version, host, port, 1.0)
    if gone is not None:
        raise WorkerError(f"the adb server on {host}:{port} still answers {timeout_s:.0f} s after adb kill-server")
    return True


def adb_states(host: str, port: int) -> dict[str, str]:
    """``{serial: state}`` of every device the adb server at ``host:port`` lists; ``WorkerError``
    when no server answers."""
    return {d.serial: d.state for d in _adb_client(host, port).list()}


def adb_connect(serial: str, host: str, port: int, timeout_s: float = 30.0) -> None:
    """``adb connect serial`` on the adb server at ``host:port`` and wait until it lists the device
    as ``device``. ``WorkerError`` naming the last state seen otherwise."""
    client = _adb_client(host, port)
    deadline = time.monotonic() + timeout_s
    state: str | None = None
    answer = ""
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # adbutils raises its own AdbError/AdbTimeout family
            answer = client.connect(serial, timeout=min(10.0, max(1.0, deadline - time.monotonic())))
        state = {d.serial: d.state for d in client.list()}.get(serial)
        if state == "device":
            return
        if state in ("offline", "unauthorized"):
            with contextlib.suppress(Exception):
                client.disconnect(serial)
        time.sleep(0.2)
    raise WorkerError(f"adb connect {serial}: state {state!r} after {timeout_s:.0f} s (adb said {answer!r})")


def adb_disconnect(serial: str, host: str, port: int) -> None:
    """``adb disconnect serial``; nothing when the server or the device is already gone."""
    with contextlib.suppress(Exception):
        _adb_client(host, port).disconnect(serial)


# -- Docker workers --------------------------------------------------------------------------------


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _docker(docker: str, *args: str, timeout: float = 120.0, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run([docker, *args], capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise WorkerError(f"{docker!r} is not installed; use --local to run the workers as processes") from None
    except subprocess.TimeoutExpired:
        raise WorkerError(f"`{docker} {' '.join(args[:2])}` did not finish in {timeout:.0f} s") from None
    if check and proc.returncode != 0:
        raise WorkerError(f"`{docker} {' '.join(args[:2])} ...` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def docker_available(docker: str = DOCKER) -> str | None:
    """``None`` when the Docker engine answers, else the reason it cannot be used."""
    if shutil.which(docker) is None:
        return f"{docker!r} is not installed"
    try:
        proc = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=20
        )
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer in 20 s"
    if proc.returncode != 0:
        return f"no Docker engine answers: {proc.stderr.strip()[:300]}"
    return None


def _run_container(docker: str, image: str, name: str, bind_host: str, label: str) -> int:
    """``docker run -d`` one worker publishing its 5555 on a free port of ``bind_host``; returns the
    port. A port taken between choosing and binding is chosen again (3 tries)."""
    last = ""
    for _ in range(3):
        port = _free_port(bind_host)
        proc = _docker(
            docker,
            "run",
            "-d",
            "--name",
            name,
            "--label",
            f"phoneenv.farm={label}",
            "-p",
            f"{bind_host}:{port}:{WORKER_PORT}",
            image,
            check=False,
        )
        if proc.returncode == 0:
            return port
        last = proc.stderr.strip()
        _docker(docker, "rm", "-f", name, check=False)
        if "already allocated" not in last and "address already in use" not in last:
            break
    hint = ""
    if any(m in last.lower() for m in ("unable to find image", "no such image", "pull access denied")):
        hint = (
            f"; build the image first: DOCKER_BUILDKIT=1 docker build -f docker/virtual-device.Dockerfile -t {image} ."
            " (docs/guides/run-a-farm.md: A farm on one machine)"
        )
    raise WorkerError(f"cannot start worker container {name} from {image}: {last}{hint}")


def _container_health(docker: str, name: str) -> tuple[str, str]:
    """(``State.Status``, health status or ``"none"``) of the container, ``("missing", "")`` if gone."""
    proc = _docker(
        docker,
        "inspect",
        "--format",
        "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}",
        name,
        check=False,
        timeout=30,
    )
    if proc.returncode != 0:
        return "missing", ""
    status, _, health = proc.stdout.strip().partition(" ")
    return status, health


HEALTH_POLL_S = 0.5
"""How often ``farm up`` asks Docker for a worker's health while it waits."""


def _wait_container_healthy(docker: str, name: str, timeout_s: float) -> None:
    """Wait until Docker reports the container ``running``/``healthy``. A worker still
    ``starting``, or ``unhealthy`` (a check that failed under load; Docker keeps checking and a
    later success makes it healthy again) is waited for until ``timeout_s`` has passed; one that
    exited, died or is gone ends the wait at once. Raises ``WorkerError`` (one line: the state,
    the seconds waited, the log's last line) otherwise."""
    t0 = time.monotonic()

    def waiting(state: tuple[str, str]) -> bool:
        status, health = state
        return status not in ("exited", "dead", "missing") and (status, health) != ("running", "healthy")

    status, health = tenacity.Retrying(
        stop=tenacity.stop_after_delay(timeout_s),
        wait=tenacity.wait_fixed(HEALTH_POLL_S),
        retry=tenacity.retry_if_result(waiting),
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else ("missing", ""),
    )(_container_health, docker, name)
    if (status, health) == ("running", "healthy"):
        return
    logs = _docker(docker, "logs", "--tail", "5", name, check=False, timeout=30)
    last = next((line.strip() for line in reversed((logs.stdout + logs.stderr).splitlines()) if line.strip()), "")
    raise WorkerError(
        f"worker container {name} is {status}/{health or 'no health'} after {time.monotonic() - t0:.0f} s "
        f"(the deadline: {timeout_s:.0f} s); its log's last line: {last or '-'} (docker logs {name})"
    )


# -- local workers ---------------------------------------------------------------------------------


def _local_command(port: int, host: str) -> list[str]:
    return [sys.executable, "-m", "phoneenv", "device", "serve", "--host", host, "--port", str(port)]


# Local workers started by this process, by pid: kept referenced so that they are reaped by
# _stop_pid (and never reported as "still running" when a Popen object is collected).
_children: dict[int, subprocess.Popen[bytes]] = {}


def _start_local(host: str, port: int, log_path: Path) -> subprocess.Popen[bytes]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            _local_command(port, host),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives `farm up`; its own process group
            env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
        )
    _children[proc.pid] = proc
    return proc


def _wait_local_serving(proc: subprocess.Popen[bytes], log_path: Path, timeout_s: float, offset: int) -> int:
    """Wait until the worker logged ``serving ... on HOST:PORT`` (after byte ``offset`` of its log)
    and answers the adb handshake; returns the port."""
    deadline = time.monotonic() + timeout_s
    port: int | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if port is None:
            with contextlib.suppress(OSError):
                with log_path.open("rb") as f:
                    f.seek(offset)
                    m = _SERVING.search(f.read().decode("utf-8", "replace"))
                if m:
                    port = int(m.group("port"))
        if port is not None:
            with contextlib.suppress(OSError, TimeoutError, WorkerError):
                if adb_ping("127.0.0.1", port, timeout_s=2.0).state == "device":
                    return port
        time.sleep(0.1)
    tail = _tail(log_path)
    _stop_pid(proc.pid)
    state = f"exited with {proc.returncode}" if proc.poll() is not None else f"not answering after {timeout_s:.0f} s"
    raise WorkerError(f"local worker (pid {proc.pid}) {state}; its log {log_path}:\n{tail}")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _is_our_worker(pid: int, port: int) -> bool:
    """Whether ``pid`` is still a ``device serve`` process on ``port`` (not a recycled pid)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return _pid_alive(pid) and not Path("/proc").is_dir()  # no /proc: trust the pid
    if b"serve" not in argv or b"--port" not in argv:
        return False
    listened = argv[argv.index(b"--port") + 1 : argv.index(b"--port") + 2]
    return listened in ([str(port).encode()], [b"0"])  # a worker asked for port 0 got `port`


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop_pid(pid: int, timeout_s: float = 10.0) -> None:
    """SIGTERM ``pid`` (then SIGKILL after ``timeout_s``) and reap it when it is our child."""
    _children.pop(pid, None)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        if not _pid_alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


# -- up / down / status / restart ----------------------------------------------------------------


def _restart_argv(farm_path: Path, serial: str) -> list[str]:
    return [sys.executable, "-m", "phoneenv", "farm", "restart", str(farm_path), serial]


def farm_up(
    workers: int,
    out: str | os.PathLike[str],
    *,
    runtime: Literal["docker", "local"] = "docker",
    image: str = DEFAULT_IMAGE,
    adb_host: str = "127.0.0.1",
    adb_port: int = 5037,
    bind_host: str = "127.0.0.1",
    name_prefix: str = "phoneenv-worker",
    docker: str = DOCKER,
    timeout_s: float = 120.0,
    log: Callable[[str], None] = lambda _msg: None,
) -> Any:
    """Start ``workers`` virtual-device workers, wait until each answers adb, ``adb connect`` each
    on the adb server at ``adb_host:adb_port`` (started when none runs on loopback), and write the
    farm file ``out``; returns the :class:`FarmFile`.

    ``runtime``: ``"docker"`` (containers ``{name_prefix}-1..N`` from ``image``, ports published on
    ``bind_host``) or ``"local"`` (``phoneenv device serve`` processes on ``bind_host``, logs in
    ``<out>.logs/``). Everything started is stopped again when a worker fails to come up, so a
    failed ``farm up`` leaves nothing running. Raises ``ValueError`` for ``workers < 1`` or an
    unknown runtime, ``FileExistsError`` when ``out`` already describes a farm (``farm down``
    it first), ``WorkerError`` when a worker or the adb server cannot be brought up.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if runtime not in ("docker", "local"):
        raise ValueError(f"unknown runtime {runtime!r}; use docker or local")
    out_path = Path(out).absolute()
    if out_path.exists():
        raise FileExistsError(f"{out_path} already describes a farm; `phoneenv farm down {out_path}` first")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    started_adb = ensure_adb_server(adb_host, adb_port)
    if started_adb:
        log(f"started an adb server on {adb_host}:{adb_port} (farm down stops it)")
    devices: list[dict[str, Any]] = []
    data = {
        "version": 1,
        "adb": {"host": adb_host, "port": adb_port, **({"started_by_farm": True} if started_adb else {})},
        "health": WORKER_HEALTH,
        "devices": devices,
    }
    try:
        if runtime == "docker":
            reason = docker_available(docker)
            if reason:
                raise WorkerError(f"{reason}; use --local to run the workers as processes")
            label = f"{out_path}"
            names = [f"{name_prefix}-{i}" for i in range(1, workers + 1)]
            for name in names:
                port = _run_container(docker, image, name, bind_host, label)
                serial = f"{bind_host}:{port}"
                worker = {"runtime": "docker", "container": name, "image": image, "port": port}
                devices.append({"serial": serial, "kind": "virtual", "worker": worker})
                log(f"started container {name} ({image}) on {serial}")
            for name in names:
                _wait_container_healthy(docker, name, timeout_s)
                log(f"{name} is healthy")
        else:
            log_dir = out_path.with_name(out_path.name + ".logs")
            for i in range(1, workers + 1):
                log_path = log_dir / f"worker-{i}.log"
                proc = _start_local(bind_host, 0, log_path)
                worker = {"runtime": "local", "pid": proc.pid, "port": None, "log": str(log_path)}
                devices.append({"serial": "", "kind": "virtual", "worker": worker})
                port = _wait_local_serving(proc, log_path, timeout_s, offset=0)
                worker["port"] = port
                devices[-1]["serial"] = f"{bind_host}:{port}"
                log(f"started local worker {i} (pid {proc.pid}) on {bind_host}:{port}")
        for device in devices:
            device["restart"] = _restart_argv(out_path, device["serial"])
            adb_connect(device["serial"], adb_host, adb_port, timeout_s=min(timeout_s, 60.0))
            log(f"adb connected {device['serial']}")
        return _save(data, out_path)
    except BaseException:
        _stop_workers(devices, docker, adb_host, adb_port)
        if started_adb:
            with contextlib.suppress(WorkerError):
                stop_adb_server(adb_host, adb_port)
        raise


def _stop_workers(devices: Sequence[dict[str, Any]], docker: str, adb_host: str, adb_port: int) -> list[str]:
    stopped = []
    containers = []
    for device in devices:
        worker = device.get("worker") or {}
        if device.get("serial"):
            adb_disconnect(device["serial"], adb_host, adb_port)
        if worker.get("runtime") == "docker":
            containers.append(worker["container"])
        elif worker.get("runtime") == "local" and worker.get("pid"):
            if _is_our_worker(worker["pid"], worker.get("port") or 0) or worker.get("port") is None:
                _stop_pid(worker["pid"])
            stopped.append(device.get("serial") or f"pid {worker['pid']}")
    if containers:
        _docker(docker, "rm", "-f", *containers, check=False, timeout=120)
        stopped += [d["serial"] for d in devices if (d.get("worker") or {}).get("runtime") == "docker"]
    return stopped


def farm_down(
    farm_path: str | os.PathLike[str],
    *,
    docker: str = DOCKER,
    remove_file: bool = True,
    keep_adb_server: bool = False,
    log: Callable[[str], None] = lambda _msg: None,
) -> list[str]:
    """Disconnect every worker of the farm file from adb and stop it (``docker rm -f`` its
    container, or SIGTERM its local process when that pid is still the worker); stop the adb
    server when ``farm up`` started it (the farm file's ``adb.started_by_farm``) unless
    ``keep_adb_server``; then remove the farm file unless ``remove_file`` is false. Returns the
    serials stopped. Devices without a ``worker`` record (emulators, phones listed by hand) are
    left alone, and so is an adb server that ran before ``farm up``. Raises
    ``FileNotFoundError`` / :class:`~phoneenv.farm.pool.FarmFileError` for a missing or bad farm
    file (before any worker is touched), ``WorkerError`` when the adb server does not stop."""
    path = Path(farm_path)
    data = _read_farm(path)
    workers = [d for d in data["devices"] if d.get("worker")]
    host, port = data["adb"]["host"], data["adb"]["port"]
    stopped = _stop_workers(workers, docker, host, port)
    owned = data["adb"].get("started_by_farm") is True
    if owned and not keep_adb_server and stop_adb_server(host, port):
        log(f"stopped the adb server on {host}:{port} (farm up started it)")
    if remove_file:
        path.unlink(missing_ok=True)
    return stopped


@dataclass
class DeviceStatus:
    """One device of a farm: ``adb`` is the adb server's state for it (``device``, ``offline``,
    ``unauthorized``, ... or ``None`` when not listed); ``worker`` the worker's state (``docker``:
    ``running/healthy`` etc.; ``local``: ``running``/``gone``; ``-`` for devices without a worker);
    ``ping`` what the endpoint answered to the adb handshake (``device``, ``unauthorized``, or the
    error)."""

    serial: str
    kind: str
    adb: str | None
    worker: str
    ping: str

    @property
    def ready(self) -> bool:
        """Whether the adb server lists the device as ``device``."""
        return self.adb == "device"


def farm_status(farm_path: str | os.PathLike[str], *, docker: str = DOCKER) -> list[DeviceStatus]:
    """The state of every device of the farm file (see :class:`DeviceStatus`). An adb server that
    does not answer shows every device as ``adb=None``. Raises ``FileNotFoundError`` /
    :class:`~phoneenv.farm.pool.FarmFileError` for a missing or bad farm file."""
    data = _read_farm(Path(farm_path))
    host, port = data["adb"]["host"], data["adb"]["port"]
    try:
        states = adb_states(host, port)
    except WorkerError:
        states = {}
    out = []
    for device in data["devices"]:
        serial, worker = device["serial"], device.get("worker") or {}
        if worker.get("runtime") == "docker":
            status, health = _container_health(docker, worker["container"])
            wstate = f"{status}/{health}" if health else status
        elif worker.get("runtime") == "local":
            wstate = "running" if _is_our_worker(worker["pid"], worker["port"]) else "gone"
        else:
            wstate = "-"
        ping = "-"
        if device["kind"] == "virtual" and ":" in serial:
            h, _, p = serial.rpartition(":")
            try:
                ping = adb_ping(h, int(p), timeout_s=3.0).state
            except (OSError, TimeoutError, WorkerError, ValueError) as exc:
                ping = f"{type(exc).__name__}: {exc}"
        out.append(DeviceStatus(serial, device["kind"], states.get(serial), wstate, ping))
    return out


def restart_worker(
    farm_path: str | os.PathLike[str], serial: str, *, docker: str = DOCKER, timeout_s: float = 120.0
) -> None:
    """Restart the worker serving ``serial`` (the farm file's ``restart`` step): ``docker restart``
    its container, or stop its local process and start a new one on the same port (the farm file
    gets the new pid); wait until it answers adb and ``adb connect`` it again. Raises
    ``FileNotFoundError`` / :class:`~phoneenv.farm.pool.FarmFileError` for a missing or bad farm
    file, ``KeyError`` when the farm has no worker for ``serial``, ``WorkerError`` when it does
    not come back."""
    path = Path(farm_path)
    data = _read_farm(path)
    device = next((d for d in data["devices"] if d["serial"] == serial and d.get("worker")), None)
    if device is None:
        raise KeyError(f"{path} has no worker serving {serial}")
    worker = device["worker"]
    host, port = data["adb"]["host"], data["adb"]["port"]
    adb_disconnect(serial, host, port)
    if worker["runtime"] == "docker":
        _docker(docker, "restart", "--time", "5", worker["container"], timeout=timeout_s)
        _wait_container_healthy(docker, worker["container"], timeout_s)
    else:
        if _is_our_worker(worker["pid"], worker["port"]):
            _stop_pid(worker["pid"])
        log_path = Path(worker["log"])
        offset = log_path.stat().st_size if log_path.exists() else 0
        bind = serial.rpartition(":")[0]
        proc = _start_local(bind, worker["port"], log_path)
        _wait_local_serving(proc, log_path, timeout_s, offset=offset)
        worker["pid"] = proc.pid
        _save(data, path)
    adb_connect(serial, host, port, timeout_s=min(timeout_s, 60.0))
