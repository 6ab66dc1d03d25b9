"""Run a real OpenAI-compatible server (``transformers serve``) on loopback for tests.

    with serve_tiny_model(model_dir) as server:       # model_dir from agents.llm.tiny.build_tiny_model
        client = OpenAI(base_url=server.base_url, api_key="none")
        client.chat.completions.create(model=server.model, messages=[...], max_tokens=16)
        server.kill()                                   # abrupt death, as mid-episode

The server is pinned to the checkpoint (``FORCE_MODEL``): it loads it before it starts listening, so a
``/health`` 200 means ready, and it answers only requests whose ``model`` is that argument, verbatim
(the absolute path string, :attr:`LLMServer.model`); any other name gets HTTP 400.

The tiny model is random, so greedy decoding yields noise. :meth:`LLMServer.scripted` makes it say an
exact text instead (for instance a ``<tool_call>`` block, which the server parses into ``tool_calls``).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import waiting

__all__ = ["LLMServer", "ServerStartError", "serve_tiny_model", "start_server"]

SERVER_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_UPDATE_CHECK": "1",  # the CLI otherwise asks PyPI for a newer version
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",  # a 0.2M-parameter model gains nothing from threads; xdist workers share CPUs
    "PYTHONUNBUFFERED": "1",
}


class ServerStartError(RuntimeError):
    """The server exited or did not become healthy in time; the message ends with its log tail."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _new_session_dying_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Child setup: own process group (so stop() can signal it whole); on Linux, SIGTERM when the
    parent dies, so a killed pytest leaves no orphan server behind."""
    os.setsid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class LLMServer:
    """A running ``transformers serve`` subprocess.

    ``base_url`` is ``http://127.0.0.1:PORT/v1`` (pass it to ``OpenAI(base_url=...)``); ``model`` the
    name requests must carry; ``log_path`` holds its stdout and stderr.
    """

    base_url: str
    model: str
    model_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    startup_s: float = 0.0
    _tokenizer: Any = field(default=None, repr=False)

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1].split("/")[0])

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def rss_bytes(self) -> int:
        """Resident memory of the server process (Linux; 0 where unknown)."""
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def live_group_members(self) -> list[int]:
        """PIDs of the server's process group that still run (zombies left for a non-reaping init,
        as in a container, are dead and not counted). `transformers serve` 5.x starts
        multiprocessing helpers (a resource tracker, a spawned worker) in the group."""
        from phoneenv.farm.emulator import live_group_members

        return [p.pid for p in live_group_members(self.process.pid)]

    def _wait_group_gone(self, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + waiting.scaled(timeout)
        while self.live_group_members() and time.monotonic() < deadline:
            time.sleep(0.05)

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)  # the child leads its own session: pgid == pid

    def stop(self, timeout: float = 10.0) -> None:
        """Shut down: SIGTERM to the process group (uvicorn exits in ~2 s), SIGKILL after ``timeout``.
        Idempotent."""
        if self.process.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.process.wait(5)
        self._signal_group(signal.SIGKILL)  # anything the server left in its group
        self._wait_group_gone()

    def kill(self) -> None:
        """Die abruptly (SIGKILL to the process group), as a crashed or preempted server would."""
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        self._wait_group_gone()

    def scripted(self, text: str, bias: float = 100.0) -> dict[str, Any]:
        """``extra_body`` for a chat request that makes the random model reply exactly ``text``, then stop.

        The body's ``generation_config`` (a field ``transformers serve`` accepts, replacing the model's
        generation config) holds a ``sequence_bias`` that, right after the ``<|im_start|>assistant\\n``
        generation prompt, raises each next token of ``text`` (and then ``<|im_end|>``) by ``bias``, far
        above the tiny model's logits. Greedy decoding then emits it verbatim; ``max_tokens`` still
        applies, so a smaller one cuts the text short (handy for a truncated ``<tool_call>``).
        """
        tok = self.tokenizer
        anchor = tok.encode("<|im_start|>assistant\n", add_special_tokens=False)
        target = [*tok.encode(text, add_special_tokens=False), tok.eos_token_id]
        sequence_bias = [[anchor + target[: i + 1], float(bias)] for i in range(len(target))]
        config = {
            "sequence_bias": sequence_bias,
            "do_sample": False,
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id,
            "max_new_tokens": len(target),
        }
        return {"generation_config": json.dumps(config)}

    @property
    def tokenizer(self) -> Any:
        """The served checkpoint's tokenizer (loaded on first use)."""
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.model_dir)
        return self._tokenizer


def _get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.read()


def start_server(
    model_dir: str | os.PathLike[str],
    *,
    port: int | None = None,
    device: str = "cpu",
    startup_timeout: float = 120.0,
    extra_args: tuple[str, ...] = (),
    log_dir: str | os.PathLike[str] | None = None,
) -> LLMServer:
    """Start ``transformers serve MODEL_DIR`` on 127.0.0.1 and wait until ``/health`` answers 200 and
    ``/v1/models`` lists the model. Logs go to ``log_dir`` (default: a new temporary directory). Raises :class:`ServerStartError` (with the log tail) if the process
    exits first or ``startup_timeout`` passes; the process is stopped in both cases. The caller must
    :meth:`LLMServer.stop` it (or use :func:`serve_tiny_model`)."""
    model_dir = Path(model_dir).resolve()
    model = str(model_dir)
    port = port or _free_port()
    log_dir = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="llm_server_"))
    log_path = log_dir / f"serve_{port}.log"
    exe = Path(sys.executable).with_name("transformers")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "transformers.cli.transformers"]
    cmd += ["serve", model, "--host", "127.0.0.1", "--port", str(port), "--device", device, *extra_args]
    env = {**os.environ, **SERVER_ENV}
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=_new_session_dying_with_parent,
        )
    base = f"http://127.0.0.1:{port}"
    server = LLMServer(base_url=f"{base}/v1", model=model, model_dir=model_dir, process=process, log_path=log_path)
    try:
        while True:
            if process.poll() is not None:
                raise ServerStartError(
                    f"`{' '.join(cmd)}` exited with code {process.returncode} before it was ready; "
                    f"log tail:\n{server.log_tail()}"
                )
            if time.monotonic() - t0 > waiting.scaled(startup_timeout):
                raise ServerStartError(
                    f"`{' '.join(cmd)}` not healthy after {startup_timeout:.0f} s; log tail:\n{server.log_tail()}"
                )
            try:
                status, _ = _get(f"{base}/health")
                if status == 200:
                    status, body = _get(f"{base}/v1/models")
                    ids = [m.get("id") for m in json.loads(body).get("data", [])]
                    if status == 200 and model in ids:
                        break
            except (OSError, urllib.error.URLError, ValueError):
                pass
            time.sleep(0.2)
    except BaseException:
        server.stop()
        raise
    server.startup_s = time.monotonic() - t0
    return server


@contextlib.contextmanager
def serve_tiny_model(model_dir: str | os.PathLike[str], **kwargs: Any) -> Iterator[LLMServer]:
    """Serve ``model_dir`` for the ``with`` block; yields the :class:`LLMServer` (``.base_url`` is
    ``http://127.0.0.1:PORT/v1``). Always stops the server, whole process group, on exit. Retries on
    another free port if the chosen one was taken between picking and binding (parallel workers)."""
    with contextlib.ExitStack() as stack:
        if kwargs.get("log_dir") is None:
            kwargs["log_dir"] = stack.enter_context(tempfile.TemporaryDirectory(prefix="llm_server_"))
        for attempt in range(3):
            try:
                server = start_server(model_dir, **kwargs)
                break
            except ServerStartError as e:
                if attempt == 2 or "address already in use" not in str(e).lower() or kwargs.get("port"):
                    raise
        stack.callback(server.stop)
        yield server
