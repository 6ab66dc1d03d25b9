"""The closed loop: tasks proposed without a gold trace, every rollout kept, human review, and
co-evolution rounds of model and harness.

Everything the loop keeps lives in one folder, the *loop directory* (:func:`loop_dir`)::

    runs.sqlite     every rollout of eval and RL, failures included (the run store)
    review.sqlite   the review queue and every decision taken on it
    tasks.jsonl     accepted generated tasks, with provenance
    harness/        harness versions (skills, instructions, data-mix weights)
    rounds/         one folder per co-evolution round: clusters and the round report

The method is the Qwen-Planner-Agent report's data flywheel: capability gaps become executable
tasks, failures are mined, people approve what enters the data and the harness.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path

__all__ = [
    "DEFAULT_LOOP_DIR",
    "HARNESS_DIR",
    "LOOP_DIR_ENV",
    "REVIEWER_ENV",
    "REVIEW_DB",
    "ROUNDS_DIR",
    "RUNS_DB",
    "TASKS_FILE",
    "loop_dir",
    "reviewer_name",
]

#: Where the loop keeps its files when neither an argument nor :data:`LOOP_DIR_ENV` names a folder.
DEFAULT_LOOP_DIR = Path("runs") / "loop"
#: Environment variable naming the loop directory.
LOOP_DIR_ENV = "PHONEENV_LOOP_DIR"
#: Environment variable naming the reviewer recorded with each decision.
REVIEWER_ENV = "PHONEENV_REVIEWER"

RUNS_DB = "runs.sqlite"
REVIEW_DB = "review.sqlite"
TASKS_FILE = "tasks.jsonl"
HARNESS_DIR = "harness"
ROUNDS_DIR = "rounds"


def loop_dir(path: str | os.PathLike[str] | None = None, default: str | os.PathLike[str] | None = None) -> Path:
    """The loop directory: ``path`` when given, else ``$PHONEENV_LOOP_DIR``, else ``default``,
    else ``runs/loop``.

    ``phoneenv eval`` passes ``<out>/loop`` as ``default``: an eval whose loop is not configured
    keeps its run store with the run, never in the current folder. The folder is not created
    here; whoever writes into it creates it.
    """
    if path is not None:
        return Path(path)
    env = os.environ.get(LOOP_DIR_ENV)
    if env:
        return Path(env)
    return Path(default) if default is not None else DEFAULT_LOOP_DIR


def reviewer_name() -> str:
    """Who takes a review decision: ``$PHONEENV_REVIEWER``, else the login name, else ``"unknown"``."""
    name = os.environ.get(REVIEWER_ENV, "").strip()
    if name:
        return name
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (containers without a passwd entry)
        return "unknown"
