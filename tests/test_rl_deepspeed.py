"""The shipped DeepSpeed ZeRO-2/ZeRO-3 accelerate configs, launched for real on two CPU ranks.

``accelerate launch --config_file rl/configs/accelerate_deepspeed_zero{2,3}.yaml -m rl.trainers``
with the config's GPU settings swapped for CPU ones (2 processes, no bf16, ``use_cpu``; DeepSpeed
then talks over gloo). Ranks run episodes with different numbers of turns, which is what hung
ZeRO-3 before the rollout turned off transformers' ``synced_gpus`` (an all-reduce per token).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TASKS = [f"contacts.lookup_number/{k}" for k in range(4)]


@pytest.mark.slow
@pytest.mark.parametrize("stage", [2, 3])
def test_zero_config_trains_on_two_ranks(stage: int, tmp_path, tmp_path_factory, tiny_model_dir) -> None:
    pytest.importorskip("deepspeed", reason="DeepSpeed is not installed (pip install -e '.[test]')")
    if shutil.which("g++") is None:
        pytest.skip("DeepSpeed's CPU communication op is compiled at run time and needs g++")
    shipped = yaml.safe_load((ROOT / "rl" / "configs" / f"accelerate_deepspeed_zero{stage}.yaml").read_text())
    assert shipped["distributed_type"] == "DEEPSPEED" and shipped["deepspeed_config"]["zero_stage"] == stage
    config = dict(shipped, num_processes=2, mixed_precision="no")
    (tmp_path / "accelerate.yaml").write_text(yaml.safe_dump(config))
    cfg = {
        "model_path": str(tiny_model_dir),
        "output_dir": str(tmp_path / "run"),
        "tasks": TASKS,
        "tool_filter": ["contacts", "finish"],
        "algo": "care",
        "num_generations": 2,
        "per_device_train_batch_size": 2,
        "max_steps": 2,
        "max_turns": 2,
        "max_new_tokens": 24,
        "learning_rate": 0.01,
        "report_to": "none",
        "save_final": False,
        "seed": 0,
        "use_cpu": True,
    }
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    env = dict(os.environ, TRL_EXPERIMENTAL_SILENCE="1", HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    env["MASTER_PORT"] = str(_free_port())
    # DeepSpeed JIT-compiles its CPU shared-memory op into TORCH_EXTENSIONS_DIR under a lock file that
    # nothing removes when a build is killed; a stale lock in ~/.cache made both ranks wait forever.
    # One directory per pytest run (the parent of each xdist worker's base temp) builds it once.
    env["TORCH_EXTENSIONS_DIR"] = str(tmp_path_factory.getbasetemp().parent / "torch_extensions")
    cmd = [
        sys.executable, "-m", "accelerate.commands.launch",
        "--config_file", str(tmp_path / "accelerate.yaml"),
        "--main_process_port", env["MASTER_PORT"],
        "-m", "rl.trainers", str(tmp_path / "cfg.json"),
    ]  # fmt: skip
    proc = _run_group(cmd, env, timeout=420)
    if proc.returncode != 0 and _aborted_at_teardown(proc):
        # Known under load: both ranks finish and rank 0 prints its summary, then a C++ thread of
        # the communication stack aborts the interpreter's exit ("terminate called without an
        # active exception", -6) although the process group was destroyed. One more launch; a
        # second abort, or any other failure, fails the test.
        env["MASTER_PORT"] = str(_free_port())
        cmd[cmd.index("--main_process_port") + 1] = env["MASTER_PORT"]
        proc = _run_group(cmd, env, timeout=420)
    assert proc.returncode == 0, _failure_report(proc)
    assert proc.stdout.count('"algo"') == 1  # one summary, printed by rank 0 (TRL prints its logs too)
    summary = json.loads(proc.stdout[proc.stdout.index('{\n  "algo"') :])
    assert summary["distributed"] == {"type": "DEEPSPEED", "num_processes": 2, "process_index": 0, "zero_stage": stage}
    # 2 steps x 2 ranks x 2 episodes per rank, gathered into whole groups by CARE.
    assert summary["steps"] == 2 and summary["episodes"] == 8


def _aborted_at_teardown(proc: subprocess.CompletedProcess) -> bool:
    """Whether a failed launch finished its run (rank 0's summary is out) and then aborted on exit."""
    return '{\n  "algo"' in proc.stdout and "terminate called without an active exception" in proc.stderr


def _failure_report(proc: subprocess.CompletedProcess) -> str:
    """The lines of a failed launch that say why (a rank's exception or abort), then the tail.

    The launcher's own ``ChildFailedError`` fills the tail of stderr; what made a rank fail is
    printed earlier, by that rank.
    """
    why = [
        line
        for line in proc.stderr.splitlines()
        if re.search(r"Error|error:|terminate|what\(\)|Abort|Traceback|Killed|signal", line)
        and "ChildFailedError" not in line
    ]
    return "\n".join(why[-40:]) + "\n--- tail of stderr ---\n" + proc.stderr[-2500:]


def _run_group(cmd: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """Run `cmd` as the leader of its own process group; on timeout kill the whole group.

    ``subprocess.run(timeout=...)`` kills only the launcher and leaves its two ranks running.
    """
    with subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"the two-rank run did not finish in {timeout:.0f} s; its stderr ends:\n{err[-4000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
