"""Episodes on a real Ray cluster (phoneenv.farm.distributed): a head node and a worker node
started by the test (tests/ray_cluster.py), on the sandbox and on virtual devices behind the real
adb server. Scores and traces must equal the single-process run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from agents import RandomAgent, ReferenceAgent
from phoneenv.evaluation import EpisodeResult, run_episodes
from phoneenv.farm.distributed import AgentSpec, ray_flag_argv, run_episodes_ray
from phoneenv.tasks import select
from tests import waiting
from tests.ray_cluster import driver_auth

driver_auth()  # before ray is imported (see there)
pytest.importorskip("ray", reason="the Ray tests need ray (pip install -e '.[ray]')")


pytestmark = pytest.mark.slow  # a cluster takes 10-30 s to start on a 2-core machine


@pytest.fixture(scope="module")
def cluster():
    from tests.ray_cluster import RayCluster, ray_binary

    if ray_binary() is None:
        pytest.skip("the `ray` command is not installed (pip install ray)")
    with RayCluster(workers=1, num_cpus=1) as c:
        yield c


def sandbox_tasks(n: int = 20) -> list:
    """``n`` Tool-category sandbox tasks spread over the suite (deterministic)."""
    tasks = [t for t in select("category:tool") if t.backends[0] == "sandbox"]
    return tasks[:: max(1, len(tasks) // n)][:n]


def _plain(result: EpisodeResult, leased: bool = False) -> dict:
    """A result without what may differ between two runs of the same episode: its wall time and
    the folder of its trace; ``leased``: also the device a pool lent it and its tries."""
    d = dataclasses.asdict(result)
    d.pop("wall_s")
    d["trace_path"] = Path(d["trace_path"]).name if d["trace_path"] else None
    if leased:
        for key in ("device", "attempts", "time_lost_s"):
            d.pop(key)
    return d


def _without_tries(trace: bytes) -> dict:
    """A trace without the tries a device pool records (their devices and times)."""
    data = json.loads(trace)
    data.pop("attempts")
    return data


def assert_same_run(
    one: list[EpisodeResult], many: list[EpisodeResult], one_dir: Path, many_dir: Path, *, leased: bool = False
) -> None:
    """Same results and byte-identical traces; ``leased`` (the Ray run leased devices, the other
    ran on one backend): equal but for the Ray run's devices and tries, one good try each."""
    assert sorted(r.task_id for r in many) == sorted(r.task_id for r in one)
    by_id = {r.task_id: r for r in many}
    for r in one:
        assert _plain(by_id[r.task_id], leased) == _plain(r, leased), r.task_id
        name = Path(r.trace_path).name
        if not leased:
            assert (many_dir / name).read_bytes() == (one_dir / name).read_bytes(), name
            continue
        assert _without_tries((many_dir / name).read_bytes()) == _without_tries((one_dir / name).read_bytes()), name
        [attempt] = json.loads((many_dir / name).read_bytes())["attempts"]
        assert attempt["device"] == by_id[r.task_id].device and attempt["failure"] is None, name
    assert sorted(p.name for p in many_dir.iterdir()) == sorted(p.name for p in one_dir.iterdir())


def test_ray_flag_alone_means_a_local_ray():
    assert ray_flag_argv(["eval", "--ray"]) == ["eval", "--ray", "local"]
    assert ray_flag_argv(["eval", "--ray", "--workers", "3"]) == ["eval", "--ray", "local", "--workers", "3"]
    assert ray_flag_argv(["eval", "--ray", "auto"]) == ["eval", "--ray", "auto"]
    assert ray_flag_argv(["eval", "--ray=10.0.0.1:6379"]) == ["eval", "--ray=10.0.0.1:6379"]


@pytest.mark.parametrize("agent", ["reference", "random"])
def test_sandbox_eval_on_two_nodes_equals_one_process(cluster, tmp_path, agent):
    import ray

    tasks = sandbox_tasks()
    assert len(tasks) == 20
    nodes = [n for n in ray.nodes() if n["Alive"]]
    assert len(nodes) == 2 and all(n["Resources"]["CPU"] == 1 for n in nodes)  # 2 actors: one per node
    seen: list[str] = []
    run = run_episodes_ray(
        AgentSpec(agent, seed=7),
        tasks,
        tmp_path / "ray",
        seed=3,
        workers=2,
        on_episode=lambda r: seen.append(r.task_id),
    )
    assert run.workers == 2 and run.reruns == [] and run.workers_lost == 0
    assert seen == [r.task_id for r in run.results]  # reported as they finished, each once
    local = ReferenceAgent() if agent == "reference" else RandomAgent(seed=7)
    one = run_episodes(local, tasks, tmp_path / "one", seed=3)
    assert_same_run(one, run.results, tmp_path / "one", tmp_path / "ray")
    if agent == "reference":
        assert all(r.success for r in run.results)
    else:
        assert sum(r.success for r in run.results) < 5 and sum(r.steps for r in run.results) > 20


def test_a_worker_killed_mid_episode_is_replayed_on_another(cluster, tmp_path):
    tasks = sandbox_tasks(6)
    victim = tasks[2].id
    marker = tmp_path / "killed"
    spec = AgentSpec(
        "reference", factory="tests.ray_agents:DyingAgent", options={"task_id": victim, "marker": str(marker)}
    )
    run = run_episodes_ray(spec, tasks, tmp_path / "ray", workers=2, replace_timeout_s=60)
    assert marker.exists()  # a worker process really died (SIGKILL) in that episode
    assert run.workers_lost == 1
    assert [(r.task_id, r.reason) for r in run.reruns] == [(victim, "worker_lost")]
    assert sorted(r.task_id for r in run.results) == sorted(t.id for t in tasks)  # each once
    assert all(r.success and not r.infrastructure_error for r in run.results)
    one = run_episodes(ReferenceAgent(), tasks, tmp_path / "one")
    assert_same_run(one, run.results, tmp_path / "one", tmp_path / "ray")


def test_eval_command_on_the_cluster(cluster, tmp_path):
    from typer.testing import CliRunner

    from phoneenv.cli import app

    ids = ",".join(t.id for t in sandbox_tasks(5))
    res = CliRunner().invoke(
        app, ["eval", "--agent", "random", "--tasks", ids, "--out", str(tmp_path / "ray"), "--ray", cluster.address]
    )
    assert res.exit_code == 0, res.output
    one = CliRunner().invoke(app, ["eval", "--agent", "random", "--tasks", ids, "--out", str(tmp_path / "one")])
    assert one.exit_code == 0, one.output
    lines = {}
    for name in ("ray", "one"):
        rows = [json.loads(x) for x in (tmp_path / name / "results.jsonl").read_text().splitlines()]
        lines[name] = sorted(
            (json.dumps({**r, "wall_s": 0, "trace_path": Path(r["trace_path"]).name}) for r in rows),
        )
        board = json.loads((tmp_path / name / "scoreboard.json").read_text())
        board.pop("wall_s")
        lines[name + "_board"] = board
    assert len(lines["ray"]) == 5 and lines["ray"] == lines["one"]
    assert lines["ray_board"] == lines["one_board"]
    for trace in (tmp_path / "one" / "traces").iterdir():
        assert (tmp_path / "ray" / "traces" / trace.name).read_bytes() == trace.read_bytes()


def test_virtual_devices_on_two_nodes_equal_one_process(cluster, adb_server, tmp_path):
    from phoneenv.backends.adb import AdbBackend
    from phoneenv.farm.virtual import VirtualDevice
    from tests.adb import served_device

    backend = AdbBackend(serial="none")
    tasks = [t for t in select("category:tool") if backend.can_run(t)]
    tasks = tasks[:: max(1, len(tasks) // 8)][:8]
    d1, d2 = VirtualDevice(), VirtualDevice()
    with served_device(adb_server, d1) as (s1, _), served_device(adb_server, d2) as (s2, _):
        serials = [s1.serial, s2.serial]
        run = run_episodes_ray(
            AgentSpec("reference"), tasks, tmp_path / "ray", workers=2, devices=serials, adb_port=adb_server.port
        )
        used = len(d1.command_log), len(d2.command_log)
        one = run_episodes(
            ReferenceAgent(),
            tasks,
            tmp_path / "one",
            env_kwargs={"backend": AdbBackend(serial=s1.serial, adb_port=adb_server.port)},
        )
    assert min(used) > 50  # both devices played episodes (each reset alone is dozens of commands)
    assert run.reruns == [] and all(not r.infrastructure_error for r in run.results)
    assert sum(r.success for r in run.results) >= 6
    assert {r.device for r in run.results} == set(serials) and all(r.attempts == 1 for r in run.results)
    assert_same_run(one, run.results, tmp_path / "one", tmp_path / "ray", leased=True)


def test_rl_rollouts_with_envs_on_the_cluster_equal_local_envs(cluster, tiny_model_dir):
    """A GRPO group whose members' envs run on Ray actors (one per node), the model here: the
    same token sequences, log-probs and verdicts as the local serial driver."""
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from phoneenv.farm.distributed import RayEnvPool
    from rl.rollout import RolloutConfig, rollout_group

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    cfg = RolloutConfig(max_turns=3, max_new_tokens=40, temperature=1.0, tool_filter=["contacts", "user", "finish"])
    serial = RolloutConfig(**{**cfg.__dict__, "vector": False})
    local = rollout_group(model, tokenizer, "contacts.lookup_number/0", 0, 2, serial, sample_seed=2)
    with RayEnvPool(2) as pool:
        remote = rollout_group(model, tokenizer, "contacts.lookup_number/0", 0, 2, cfg, sample_seed=2, env_pool=pool)
        with pytest.raises(ValueError, match="needs 3 env actors"):
            rollout_group(model, tokenizer, "contacts.lookup_number/0", 0, 3, cfg, sample_seed=2, env_pool=pool)
    assert sum(len(t.turns) for t in local.trajectories) >= 2  # the members did step the env
    for a, b in zip(local.trajectories, remote.trajectories, strict=True):
        assert torch.equal(a.episode_ids, b.episode_ids) and torch.equal(a.episode_mask, b.episode_mask)
        assert torch.allclose(a.episode_logprobs, b.episode_logprobs)
        assert a.verdict == b.verdict and a.messages == b.messages


def test_training_steps_its_envs_on_the_cluster(cluster, tiny_model_dir, tmp_path, monkeypatch):
    """`TrainConfig(env_ray=...)` (`phoneenv train rl --env-ray`): one optimiser step whose group's
    envs step on the cluster's actors rolls out what the same step with local envs rolls out, and
    the trainer closes its actors at the end."""
    from phoneenv.farm.distributed import RayEnvPool
    from rl.trainers import TrainConfig, train_rl

    pools: list[tuple[int, bool]] = []  # (actors, closed) of each pool the trainer made
    close = RayEnvPool.close

    def spy_close(self) -> None:
        pools.append((len(self.actors), True))
        close(self)

    monkeypatch.setattr(RayEnvPool, "close", spy_close)

    def run(name: str, env_ray: str | None) -> list[dict]:
        cfg = TrainConfig(
            model_path=str(tiny_model_dir), output_dir=str(tmp_path / name), tasks=["contacts.lookup_number/0"],
            tool_filter=["contacts", "user", "finish"], num_generations=2, per_device_train_batch_size=2,
            max_steps=1, max_turns=3, max_new_tokens=40, learning_rate=1e-2, use_cpu=True, report_to="none",
            save_final=False, seed=0, env_ray=env_ray,
        )  # fmt: skip
        summary = train_rl(cfg)
        assert summary["steps"] == 1 and summary["episodes"] == 2
        records = [json.loads(line) for line in Path(summary["metrics_path"]).read_text().splitlines()]
        return [r for r in records if r["kind"] == "rollout"]

    local, remote = run("local", None), run("ray", "auto")
    assert len(local) == len(remote) == 1
    for key in ("phone/success", "phone/progress", "phone/output_tokens", "phone/tool_calls"):
        assert local[0]["metrics"][key] == remote[0]["metrics"][key], key
    assert local[0]["groups"] == remote[0]["groups"]
    assert pools == [(2, True)]  # one pool of G actors, for the Ray run only, closed when training ended


def test_bare_ray_flag_works_beside_a_running_cluster(cluster, tmp_path):
    """`eval --ray --workers 2` (the docs' local form) with a Ray head already running (found
    through RAY_ADDRESS, as `ray start --head` is found through /tmp/ray): the eval plays its
    episodes instead of ending in Ray's "num_cpus must not be provided" traceback."""
    import os
    import sys

    from tests.ray_cluster import ROOT

    ids = ",".join(t.id for t in sandbox_tasks(2))
    env = {**os.environ, "RAY_ADDRESS": cluster.address, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    argv = ["eval", "--agent", "reference", "--tasks", ids, "--out", str(tmp_path / "ray"), "--ray", "--workers", "2"]
    proc = waiting.run(
        [sys.executable, "-m", "phoneenv", *argv], capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in out and "--resume" not in out
    assert len((tmp_path / "ray" / "results.jsonl").read_text().splitlines()) == 2
