"""Export an eval run's traces as a Hugging Face dataset folder that ``datasets.load_dataset`` loads.

``phoneenv traces export RUN_DIR --to DIR`` (or :func:`export_run`) writes::

    DIR/README.md                   dataset card: YAML ``configs`` (what load_dataset reads) + schema
    DIR/episodes/train.parquet      one row per episode (the default config)
    DIR/steps/train.parquet         one row per step of every episode
    DIR/sft/train.parquet           chat examples of the successful episodes (rl.sft's format)

so ``load_dataset(DIR)`` gives the episodes, ``load_dataset(DIR, "steps")`` the steps and
``load_dataset(DIR, "sft")`` the SFT examples. Every column has one Arrow type, declared when the
Parquet file is written (never inferred from the first rows, which is what fails with ``Couldn't
cast ... to null`` on raw traces): scalars keep their type (None allowed), and the values whose
shape varies from row to row (tool arguments and results, verdict criteria, frames, the model
record, the whole trace) are JSON strings, decoded with ``json.loads``. The ``trace`` column holds
the whole :class:`~phoneenv.contract.Trace` as its JSON, so ``Trace.model_validate_json(row["trace"])``
gives it back exactly. Secrets are not in traces to begin with (the env records them as ``***``).

Needs the ``data`` extra (``datasets``, which brings ``pyarrow``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phoneenv.contract import Trace
from phoneenv.extras import require
from phoneenv.tracefiles import find_trace_files, read_traces

log = logging.getLogger(__name__)

__all__ = ["ExportReport", "episode_row", "export_run", "find_trace_files", "read_traces", "step_rows"]

EPISODE_COLUMNS: dict[str, tuple[str, str]] = {
    "task_id": ("string", "the task's id"),
    "seed": ("int64", "the episode seed (null in traces that have none)"),
    "backend": ("string", "the world the episode ran on (sandbox, llmsim, hybrid, emulator, device)"),
    "category": ("string", "tool, memory, skills or subagent"),
    "domain": ("string", "the task's domain"),
    "goal": ("string", "the user's goal, as the agent saw it"),
    "agent": ("string", "the planner's name"),
    "model": ("string", "JSON: the planner's model record {name, endpoint, decoding} (null for no model)"),
    "success": ("bool", "the verdict's success (false without a verdict)"),
    "progress": ("float64", "the verdict's progress in [0, 1]"),
    "num_steps": ("int64", "steps played"),
    "tool_calls": ("int64", "steps that called a tool"),
    "errors": ("int64", "steps whose feedback was an error"),
    "truncated": ("bool", "the episode ran out of steps"),
    "infrastructure_error": ("bool", "the episode was lost to the world, not the agent"),
    "output_tokens": ("int64", "the agent's output tokens (null when it reported none)"),
    "answer": ("string", "the finish call's answer text"),
    "verdict": ("string", "JSON: the whole verdict (criteria, milestones, collateral, ...)"),
    "frames": ("string", "JSON: the frame tree (sub-agents)"),
    "attempts": ("int64", "tries on a device pool (1 outside a pool)"),
    "trace": ("string", "JSON: the whole trace (Trace.model_validate_json reads it back)"),
}
STEP_COLUMNS: dict[str, tuple[str, str]] = {
    "episode": ("int64", "the row of the episode in the episodes config"),
    "task_id": ("string", "the task's id"),
    "seed": ("int64", "the episode seed"),
    "index": ("int64", "the step's index in its episode (from 1)"),
    "tool": ("string", "the tool called (null when the reply did not parse)"),
    "arguments": ("string", "JSON: the call's arguments (null when the reply did not parse)"),
    "raw": ("string", "the reply's text when it did not parse"),
    "ok": ("bool", "the feedback's ok"),
    "error": ("string", "the feedback's error kind (null when ok)"),
    "feedback": ("string", "JSON: the whole feedback (result, message, hint, candidates, ...)"),
    "clock": ("string", "the phone's clock after the step (ISO 8601)"),
    "frame": ("string", "the frame the step acted in"),
    "tokens": ("string", "JSON: the agent's token counts for the step (null when none)"),
    "latency_s": ("float64", "the step's wall time in seconds, when recorded"),
}
SFT_DESCRIPTION = (
    "Chat examples in the planner's format (rl.sft.traces_to_examples): `task_id`, `success`, `messages` "
    "(role, content, tool_calls, tool_call_id, weight: 1 on turns to train, 0 on erroneous turns kept as "
    "context) and `tools` (the offered tools as one JSON string; TRL's SFTTrainer decodes it)."
)


@dataclass
class ExportReport:
    """What :func:`export_run` wrote: the folder, the episodes, steps and SFT examples exported
    (``sft`` None when no SFT config was written), and the trace files read."""

    out: Path
    episodes: int
    steps: int
    sft: int | None
    files: int


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def episode_row(trace: Trace) -> dict[str, Any]:
    """One trace as a row of the ``episodes`` config (see :data:`EPISODE_COLUMNS`)."""
    v = trace.verdict
    data = trace.model_dump(mode="json")
    return {
        "task_id": trace.task_id,
        "seed": trace.seed,
        "backend": trace.backend,
        "category": trace.category.value,
        "domain": trace.domain.value,
        "goal": trace.goal,
        "agent": trace.agent,
        "model": _json(data.get("model")),
        "success": bool(v and v.success),
        "progress": float(v.progress) if v else 0.0,
        "num_steps": len(trace.steps),
        "tool_calls": sum(s.action is not None for s in trace.steps),
        "errors": sum(not s.feedback.ok for s in trace.steps),
        "truncated": bool(v and v.truncated),
        "infrastructure_error": bool(v and v.infrastructure_error),
        "output_tokens": v.output_tokens if v else None,
        "answer": v.answer if v else None,
        "verdict": _json(data["verdict"]),
        "frames": _json(data["frames"]),
        "attempts": max(1, len(trace.attempts)),
        "trace": trace.model_dump_json(),
    }


def step_rows(trace: Trace, episode: int) -> list[dict[str, Any]]:
    """The steps of ``trace`` (the ``episode``-th row of the episodes config) as rows of the
    ``steps`` config (see :data:`STEP_COLUMNS`)."""
    rows = []
    for step in trace.steps:
        data = step.model_dump(mode="json")
        rows.append(
            {
                "episode": episode,
                "task_id": trace.task_id,
                "seed": trace.seed,
                "index": step.index,
                "tool": step.action.name if step.action is not None else None,
                "arguments": _json(data["action"]["arguments"]) if step.action is not None else None,
                "raw": step.raw,
                "ok": step.feedback.ok,
                "error": step.feedback.error.value if step.feedback.error is not None else None,
                "feedback": _json(data["feedback"]),
                "clock": step.clock,
                "frame": step.frame,
                "tokens": _json(step.tokens),
                "latency_s": step.latency_s,
            }
        )
    return rows


def _features(columns: dict[str, tuple[str, str]]) -> Any:
    from datasets import Features, Value

    return Features({name: Value(dtype) for name, (dtype, _) in columns.items()})


def export_run(
    run_dir: Path | str,
    out: Path | str,
    *,
    sft: bool = True,
    include_failed: bool = False,
    overwrite: bool = False,
) -> ExportReport:
    """Write the traces of ``run_dir`` (an eval output folder, a folder of traces or one trace
    file) as a dataset folder ``out`` that ``datasets.load_dataset(out)`` loads (see the module
    docstring for the layout and :data:`EPISODE_COLUMNS` / :data:`STEP_COLUMNS` for the schema).

    Args:
        run_dir: the run to export.
        out: the dataset folder (created; must be empty or absent unless ``overwrite``).
        sft: also write the ``sft`` config: :func:`rl.sft.traces_to_examples` of the traces (the
            tools offered rebuilt from each task; needs the ``agents`` package).
        include_failed: keep failed episodes in the ``sft`` config (their erroneous turns have
            weight 0).
        overwrite: replace the export files already in ``out``.

    Returns:
        an :class:`ExportReport`.

    Raises:
        FileNotFoundError: ``run_dir`` does not exist.
        ValueError: ``run_dir`` holds no trace, a line of a trace file is not a trace, or ``out``
            already holds files and ``overwrite`` is False.
        phoneenv.extras.MissingExtra: the ``data`` extra is not installed.
    """
    require("data", "datasets", "pyarrow", "yaml", feature="phoneenv traces export")
    from datasets.utils import logging as ds_logging

    run_dir, out = Path(run_dir), Path(out)
    quiet = ds_logging.is_progress_bar_enabled()
    if quiet:  # no "Creating parquet" bars in the command's output
        ds_logging.disable_progress_bar()
    try:
        return _export(run_dir, out, sft, include_failed, overwrite)
    finally:
        if quiet:
            ds_logging.enable_progress_bar()


def _export(run_dir: Path, out: Path, sft: bool, include_failed: bool, overwrite: bool) -> ExportReport:
    from datasets import Dataset

    files = find_trace_files(run_dir)
    traces = list(read_traces(files))
    if not traces:
        raise ValueError(
            f"no trace in {run_dir} (looked for *.jsonl trace files{' under traces/' if (run_dir / 'traces').is_dir() else ''})"
        )
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise ValueError(f"{out} is not empty; pass --overwrite to replace the export there, or another --to")
    episodes = [episode_row(t) for t in traces]
    steps = [row for k, t in enumerate(traces) for row in step_rows(t, k)]
    digests = {
        "episodes": _write(Dataset.from_list(episodes, features=_features(EPISODE_COLUMNS)), out, "episodes"),
        "steps": _write(Dataset.from_list(steps, features=_features(STEP_COLUMNS)), out, "steps"),
    }
    n_sft: int | None = None
    examples = []
    if sft:
        from rl.sft import traces_to_examples

        examples = traces_to_examples(traces, include_failed=include_failed)
        if not examples:
            log.warning("no SFT example: no episode of %s succeeded (pass include_failed to keep failed ones)", run_dir)
    if examples:
        digests["sft"] = _write(Dataset.from_list(examples), out, "sft")
        n_sft = len(examples)
    else:
        (out / "sft" / "train.parquet").unlink(missing_ok=True)
    (out / "README.md").write_text(_card(run_dir, len(episodes), len(steps), n_sft, digests), encoding="utf-8")
    return ExportReport(out=out, episodes=len(episodes), steps=len(steps), sft=n_sft, files=len(files))


def _write(ds: Any, out: Path, config: str) -> str:
    """Write ``ds`` as ``out/<config>/train.parquet`` (whole or not at all); return the SHA-256 of
    the file (the card names it, so ``load_dataset``'s cache, which is keyed by the card and not
    by the files' content, never serves an earlier export of the same folder name)."""
    folder = out / config
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / ".train.parquet.tmp"
    ds.to_parquet(str(tmp))
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    tmp.replace(folder / "train.parquet")
    return digest


def _schema_table(columns: dict[str, tuple[str, str]]) -> str:
    lines = ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | {dtype} | {text} |" for name, (dtype, text) in columns.items()]
    return "\n".join(lines)


def _card(run_dir: Path, episodes: int, steps: int, sft: int | None, digests: dict[str, str]) -> str:
    import yaml

    configs: list[dict[str, Any]] = [
        {
            "config_name": name,
            "data_files": [{"split": "train", "path": f"{name}/train.parquet"}],
            "description": f"phoneenv traces export; train.parquet sha256 {digest}",
            **({"default": True} if name == "episodes" else {}),
        }
        for name, digest in digests.items()
    ]
    header = yaml.safe_dump({"configs": configs, "tags": ["phoneenv", "agents", "tool-use"]}, sort_keys=False)
    sft_part = (
        f"\n## `sft` ({sft} examples)\n\n{SFT_DESCRIPTION}\n"
        if sft is not None
        else "\nNo `sft` config: no episode to train on.\n"
    )
    return (
        f"---\n{header}---\n\n# phoneenv traces of `{run_dir.name}`\n\n"
        'Exported by `phoneenv traces export`. Load with `datasets.load_dataset("<this folder>")` (episodes), '
        '`load_dataset("<this folder>", "steps")` or `load_dataset("<this folder>", "sft")`. Columns marked '
        "JSON are JSON strings: decode them with `json.loads`.\n\n"
        f"## `episodes` ({episodes} rows, the default)\n\n{_schema_table(EPISODE_COLUMNS)}\n\n"
        f"## `steps` ({steps} rows)\n\n{_schema_table(STEP_COLUMNS)}\n{sft_part}"
    )
