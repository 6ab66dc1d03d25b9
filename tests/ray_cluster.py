"""A real local Ray cluster for the tests: a head node and worker nodes started with ``ray start
--block`` on 127.0.0.1, each in its own process group (stopped by signalling the group), small
(``num_cpus`` each, 100 MB object store, no dashboard), every port chosen free.

    with RayCluster(workers=1) as cluster:     # head + 1 worker node, 1 CPU each
        init_ray(cluster.address)              # this process joins it as the driver
        ...
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests import waiting
from tests.adb import free_port

ROOT = Path(__file__).resolve().parents[1]


def driver_auth() -> dict[str, str]:
    """Token authentication for the test clusters: a token of this process's own (not the user's
    ~/.ray/auth_token, which other clusters on the machine may share), put into this process's
    environment, where the driver reads it, and given to every node. Ray reads its auth mode once
    per process, when it is first imported: call this before ``import ray``."""
    if os.environ.get("RAY_AUTH_MODE") != "token" or not os.environ.get("RAY_AUTH_TOKEN"):
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": os.environ["RAY_AUTH_TOKEN"]}


def ray_binary() -> str | None:
    """The ``ray`` command next to this Python (the venv's), else on PATH, else None."""
    here = Path(sys.executable).with_name("ray")
    return str(here) if here.exists() else shutil.which("ray")


class RayCluster:
    """Head plus ``workers`` worker nodes; :attr:`address` is the head's ``127.0.0.1:PORT``.

    Args:
        workers: worker nodes besides the head.
        num_cpus: CPUs each node offers.
        object_store_bytes: each node's object store.
    """

    def __init__(self, workers: int = 1, num_cpus: int = 1, object_store_bytes: int = 100_000_000) -> None:
        self.workers = workers
        self.num_cpus = num_cpus
        self.object_store_bytes = object_store_bytes
        self.port = 0
        self.procs: list[subprocess.Popen[bytes]] = []
        # Short: Ray's Unix sockets live under it (108-character limit).
        self.tmp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
        self.auth = driver_auth()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
        return {**os.environ, "PYTHONPATH": path, "RAY_USAGE_STATS_ENABLED": "0", **self.auth}

    def _ports(self) -> list[str]:
        return [
            f"--node-manager-port={free_port()}",
            f"--object-manager-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            f"--metrics-export-port={free_port()}",
        ]

    def _start(self, args: list[str], name: str) -> subprocess.Popen[bytes]:
        binary = ray_binary()
        assert binary is not None, "ray is not installed"
        log = (self.tmp / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            [binary, "start", "--block", "--node-ip-address=127.0.0.1", f"--num-cpus={self.num_cpus}",
             f"--object-store-memory={self.object_store_bytes}", "--disable-usage-stats", *self._ports(), *args],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=self._env(),
            start_new_session=True,
        )  # fmt: skip
        log.close()
        self.procs.append(proc)
        return proc

    def start(self, timeout: float = 120.0) -> RayCluster:
        """Start the head, then the worker nodes, and wait until the head lists them all alive;
        ``RuntimeError`` with the logs' tails when a node exits or the cluster is not up in time."""
        import ray

        self.port = free_port()
        self._start(
            ["--head", f"--port={self.port}", "--include-dashboard=false", f"--ray-client-server-port={free_port()}",
             f"--temp-dir={self.tmp / 'h'}"],
            "head",
        )  # fmt: skip
        for k in range(self.workers):
            self._start([f"--address={self.address}", f"--temp-dir={self.tmp / f'w{k}'}"], f"worker{k}")
        deadline = time.monotonic() + waiting.scaled(timeout)
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Ray node exited with {proc.returncode}:\n{self.log_tail()}")
            if ray.is_initialized() and self.alive_nodes() == self.workers + 1:
                return self
            if not ray.is_initialized():
                with contextlib.suppress(Exception):
                    from phoneenv.farm.distributed import init_ray

                    init_ray(self.address, _node_ip_address="127.0.0.1")
            time.sleep(0.5)
        raise RuntimeError(f"the Ray cluster was not up within {timeout} s:\n{self.log_tail()}")

    def alive_nodes(self) -> int:
        import ray

        return sum(1 for n in ray.nodes() if n.get("Alive"))

    def log_tail(self, n: int = 20) -> str:
        out = []
        for log in sorted(self.tmp.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()[-n:]
            out.append(f"--- {log.name}\n" + "\n".join(lines))
        return "\n".join(out)

    def stop(self) -> None:
        """Disconnect this process, then stop every node: SIGTERM to its process group, SIGKILL
        to what is left after 10 s."""
        import ray

        with contextlib.suppress(Exception):
            ray.shutdown()
        for proc in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + waiting.scaled(10)
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the group's leftovers (gcs_server ignores SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self.procs.clear()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> RayCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
