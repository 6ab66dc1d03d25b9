"""The trace files of a run folder and the traces in them (one JSON trace a line): what the
exporter, the run store and SFT read. Depends on :mod:`phoneenv.contract` alone."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from phoneenv.contract import Trace

__all__ = ["SKIPPED_FILES", "find_trace_files", "jsonl_lines", "read_json_file", "read_traces"]

SKIPPED_FILES = frozenset(
    {"results.jsonl", "results.superseded.jsonl", "metrics.jsonl", "sft_log.jsonl", "rl_log.jsonl"}
)
"""JSON Lines files of a run folder that are not traces."""


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text, split on ``\\n`` alone (a ``\\r`` before it dropped).

    Never ``str.splitlines()``: it also breaks at U+2028, U+2029, U+0085, ``\\v``, ``\\f`` and
    ``\\x1c``-``\\x1e``, which JSON keeps raw inside strings, so a model's answer holding one would
    cut its trace in two. The last element is ``""`` when the text ends with a newline."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def find_trace_files(run_dir: Path) -> list[Path]:
    """The trace files of a run folder, in path order: ``traces/**/*.jsonl`` when the folder has
    a ``traces`` folder (both the one-seed layout ``traces/<task>.jsonl`` and the seeded one
    ``traces/<task>/seed-<s>.jsonl``), else every ``*.jsonl`` under it except the run's other
    JSON Lines files (``results.jsonl``, ``metrics.jsonl``...). A file is returned as itself.

    Raises:
        FileNotFoundError: ``run_dir`` does not exist.
    """
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise FileNotFoundError(f"{run_dir} does not exist")
    if run_dir.is_file():
        return [run_dir]
    root = run_dir / "traces" if (run_dir / "traces").is_dir() else run_dir
    return sorted(p for p in root.rglob("*.jsonl") if p.name not in SKIPPED_FILES and not p.name.startswith("."))


def read_traces(files: Iterable[Path]) -> Iterator[Trace]:
    """Every trace of ``files`` (one JSON trace a line), in order.

    Raises:
        FileNotFoundError: a file does not exist.
        ValueError: a file cannot be read (a folder where the file should be, no permission), is
            not UTF-8, or a line is not a trace (the message names the file, and the line).
    """
    for path in files:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not a trace file (not UTF-8: {exc.reason} at byte {exc.start})") from None
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        for n, line in enumerate(jsonl_lines(text), 1):
            if not line.strip():
                continue
            try:
                yield Trace.model_validate_json(line)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = "/".join(str(p) for p in first.get("loc", ()))
                raise ValueError(f"{path}, line {n}: not a trace ({where}: {first['msg']})") from None


def read_json_file(path: Path) -> object:
    """The JSON document in ``path`` (a run's ``run.json``, ``scoreboard.json``, ...).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: one line naming ``path`` when it cannot be read (a folder, no permission),
            is not UTF-8, not JSON, or is nested deeper than Python's parser goes.
    """
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except OSError as exc:  # a folder where the file should be, no permission
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    except RecursionError:
        raise ValueError(f"{path}: not JSON this reader takes (nested too deeply)") from None
