"""The file inputs of the commands that load a model fuzzed with damaged files (issue 34,
tests/fuzzfiles.py), each read before the model is: sampler weights (``train rl --sampler``), a
cluster file (``tasks propose --gap cluster:FILE``), a model folder's tool-filter record (``eval
--agent llm --model FOLDER``, also read by ``train``) and its ``config.json`` (``train sft``).

Each damaged file gives one error naming it with exit code 2; never a traceback. A file still of
its schema goes on to load the model, which fails on its own (a model folder that does not exist
or holds no weights). Most of this file's time is importing transformers and TRL once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzzfiles import KINDS, fuzz_file, mistyped
from tests.test_fuzz_cli_loop import CLUSTER, TASK, WEIGHTS


def test_train_rl_reads_the_sampler_file_before_the_model(tmp_path: Path) -> None:
    """``train rl --sampler FILE``: damaged weights, a table that is not an object, a negative
    weight, an unknown field are one error naming the file (exit 2); weights that are weights go
    on to the model (a folder that does not exist here)."""
    pytest.importorskip("trl", reason="train rl needs the rl extra")
    file = tmp_path / "weights.json"
    argv = ["train", "rl", "--sampler", str(file), "--model", str(tmp_path / "no-model"), "--tasks", TASK]
    assert fuzz_file(file, WEIGHTS, argv, went_on=("is not a model folder",), limit=None) > 0


def test_propose_reads_the_cluster_file_before_the_model(tmp_path: Path) -> None:
    """``tasks propose --gap cluster:FILE``: a damaged cluster file, or one whose ``signature`` is
    no object or whose ``apps`` are a string (whose letters would become apps), is one error
    naming it (exit 2); a cluster file goes on to the model (a folder that does not exist)."""
    file = tmp_path / "cluster-c1.json"
    argv = ["tasks", "propose", "--gap", f"cluster:{file}", "--model", str(tmp_path / "no-model")]
    argv += ["--loop", str(tmp_path / "loop")]
    assert fuzz_file(file, CLUSTER, argv, went_on=("Invalidvaluefor--model",), limit=None) > 0


# -- model folders ---------------------------------------------------------------------------------


def test_a_damaged_tool_filter_record_is_one_line(tmp_path: Path) -> None:
    """``eval --agent llm --model FOLDER`` reads the folder's tool-filter record first: damaged
    (nested too deeply, a folder, not an object with a filter) it is one error naming it (exit
    2); a record that is one goes on to load the model (no weights here)."""
    pytest.importorskip("transformers", reason="a local model needs transformers")
    model = tmp_path / "model"
    model.mkdir()
    file = model / "phoneenv_tools.json"
    argv = ["eval", "--agent", "llm", "--model", str(model), "--tasks", TASK, "--out", str(tmp_path / "run")]
    argv += ["--overwrite"]
    assert fuzz_file(file, {"tool_filter": "apps"}, argv, went_on=("cannot load the model",), limit=None) > 0


def test_train_sft_reads_the_model_config_before_any_episode(tmp_path: Path, monkeypatch) -> None:
    """``train sft --model FOLDER``: a damaged ``config.json`` (or one whose context length is no
    length) is one error naming it (exit 2) before the reference episodes are played; a config
    that is one goes on to the episodes and the trainer (both stand-ins here)."""
    pytest.importorskip("trl", reason="train sft needs the rl extra")
    import rl.sft

    played = []
    monkeypatch.setattr(rl.sft, "reference_traces", lambda ids, out, seed=0: played.append(ids) or [])
    summary = {"losses": [], "steps": 0, "examples": 0, "trained_tokens": 0, "masked_tokens": 0}
    monkeypatch.setattr(rl.sft, "train_sft", lambda *args, **kwargs: summary)
    model = tmp_path / "model"
    model.mkdir()
    for name in ("model.safetensors", "tokenizer.json"):  # by name: the trainer is a stand-in
        (model / name).write_bytes(b"")
    file = model / "config.json"
    argv = ["train", "sft", "--model", str(model), "--tasks", TASK, "--out", str(tmp_path / "sft"), "--detours", "0"]
    config = {"model_type": "llama", "max_position_embeddings": 2048}
    refused = fuzz_file(file, config, argv, limit=None)
    assert refused > 0 and len(played) == len(KINDS) + len(mistyped(config)) - refused  # only what was read


@pytest.mark.parametrize("command", ["sft", "rl"])
@pytest.mark.parametrize(
    ("files", "lacks"),
    [
        (["config.json", "tokenizer.json"], "weights"),
        (["config.json", "model.safetensors"], "a tokenizer"),
        (["tokenizer.json", "model.safetensors"], "config.json"),
    ],
)
def test_train_refuses_a_model_folder_that_is_no_checkpoint(tmp_path: Path, monkeypatch, command, files, lacks):
    """``train sft|rl --model FOLDER`` on a folder without weights, tokenizer or config: one
    error saying what it lacks (exit 2) before any episode is played; no transformers traceback."""
    pytest.importorskip("trl", reason="train needs the rl extra")
    import rl.sft
    from tests.fuzzfiles import check

    monkeypatch.setattr(rl.sft, "reference_traces", lambda *a, **k: pytest.fail("an episode was played"))
    model = tmp_path / "model"
    model.mkdir()
    for name in files:
        (model / name).write_text('{"model_type": "llama", "max_position_embeddings": 2048}', encoding="utf-8")
    argv = ["train", command, "--model", str(model), "--tasks", TASK, "--out", str(tmp_path / command)]
    res = check(argv, model / "config.json", f"{command} without {lacks}")
    assert res.exit_code == 2 and lacks.replace(" ", "") in "".join(res.output.split()), res.output
