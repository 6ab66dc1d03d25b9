"""Generated tasks as data: the loop directory's ``tasks.jsonl``, loaded into the suite beside the
templates.

One JSON object a line::

    {"task": TaskSpec.model_dump(mode="json"), "provenance": {
        "source": "propose", "model": "...", "gap": "capability:time", "status": "accepted",
        "checks": {...}, "review_id": null, "reviewer": null, "proposed_at": "2026-12-03T07:01:02Z"}}

``provenance.status`` is ``accepted`` (every check by execution held, a planner solved the task)
or ``unproven`` (no planner solved it in K attempts, or its criteria looked loose: it waits in the
review queue, item ``review_id``). The suite (:func:`phoneenv.tasks.load_suite`) holds the
accepted tasks and the unproven ones a person approved, with the approved payload's task (a
reviewer's edit wins); pending and rejected ones are never loaded, so nothing enters a training
mix or a benchmark split from the queue without an approval.

A line that does not parse, or a task whose id is already taken (by a template or an earlier
line), is skipped with a warning: a hand edit gone wrong never stops the suite from loading.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from phoneenv.contract import TaskSpec
from phoneenv.loop import REVIEW_DB, TASKS_FILE, loop_dir

__all__ = ["ACCEPTED", "GENERATED_SOURCE", "UNPROVEN", "append_entries", "load_generated", "read_entries"]

GENERATED_SOURCE = "generated"
"""``TaskSpec.source`` of every generated task (selector ``source:generated``)."""
ACCEPTED = "accepted"
UNPROVEN = "unproven"

log = logging.getLogger(__name__)


def read_entries(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The entries of a ``tasks.jsonl`` (``[]`` when the file does not exist), each
    ``{"task": dict, "provenance": dict, "line": int}``; lines that are not such an object (not
    UTF-8, not JSON, another shape) are skipped with a warning naming the line, so one damaged
    line never stops the suite from loading."""
    path = Path(path)
    if not path.is_file():
        return []
    out: list[dict[str, Any]] = []
    try:
        raw = path.read_bytes()
    except OSError as exc:
        log.warning("%s cannot be read (%s); no generated task loaded from it", path, exc)
        return []
    for n, line in enumerate(raw.split(b"\n"), 1):  # one bad line is skipped, never the whole file
        if not line.strip():
            continue
        try:
            entry = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            log.warning("%s line %d is not UTF-8 (%s); skipped", path, n, exc)
            continue
        except (json.JSONDecodeError, RecursionError) as exc:
            log.warning("%s line %d is not JSON (%s); skipped", path, n, exc)
            continue
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("task"), dict)
            and isinstance(entry.get("provenance"), dict)
        ):
            log.warning("%s line %d is not a {task, provenance} object; skipped", path, n)
            continue
        out.append({**entry, "line": n})
    return out


def append_entries(entries: Iterable[Mapping[str, Any]], loop: str | os.PathLike[str] | None = None) -> Path:
    """Append ``{"task", "provenance"}`` entries to ``<loop>/tasks.jsonl`` (one write and an
    ``fsync``; the folder is made when missing) and return the file's path."""
    path = loop_dir(loop) / TASKS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(
        json.dumps({"task": e["task"], "provenance": e["provenance"]}, ensure_ascii=False) + "\n" for e in entries
    )
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    return path


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def load_generated(
    loop: str | os.PathLike[str] | None = None, taken: frozenset[str] = frozenset()
) -> tuple[TaskSpec, ...]:
    """The generated tasks of the loop directory that the suite holds (see the module docstring),
    in file order. ``taken``: ids already in the suite (the templates'); a generated task with
    one of them is skipped with a warning.

    Cached on the files' modification times and sizes (``tasks.jsonl``, ``review.sqlite`` and
    its write-ahead log), so a new line or a review decision shows up at the next call.
    """
    folder = loop_dir(loop).absolute()
    review = folder / REVIEW_DB
    key = (
        str(folder),
        _stamp(folder / TASKS_FILE),
        _stamp(review),
        _stamp(review.with_name(review.name + "-wal")),
        taken,
    )
    if key[1] is None:
        return ()
    return _load(*key)


@functools.lru_cache(maxsize=8)
def _load(folder: str, _tasks: Any, _review: Any, _wal: Any, taken: frozenset[str]) -> tuple[TaskSpec, ...]:
    root = Path(folder)
    entries = read_entries(root / TASKS_FILE)
    decided: dict[int, Any] = {}
    wanted = [int(e["provenance"]["review_id"]) for e in entries if e["provenance"].get("review_id") is not None]
    if wanted and (root / REVIEW_DB).is_file():
        import sqlite3

        from phoneenv.loop.review import ReviewQueue

        queue = ReviewQueue(root / REVIEW_DB)
        for item_id in wanted:
            try:
                decided[item_id] = queue.get(item_id)
            except KeyError:
                log.warning("%s names review item %d, which the queue lacks", root / TASKS_FILE, item_id)
            except sqlite3.DatabaseError as exc:  # unreadable queue: its tasks wait, the suite loads
                log.warning("the review queue %s cannot be read (%s)", root / REVIEW_DB, exc)
                break
    out: list[TaskSpec] = []
    seen = set(taken)
    for e in entries:
        prov = e["provenance"]
        data = e["task"]
        if prov.get("review_id") is not None:
            item = decided.get(int(prov["review_id"]))
            if item is None or item.status != "approved":
                continue  # pending or rejected: never in the suite
            data = item.payload.get("task", data)
        elif prov.get("status") != ACCEPTED:
            continue
        try:
            task = TaskSpec.model_validate(data)
        except ValidationError as exc:
            log.warning("%s line %d: not a valid task (%s); skipped", root / TASKS_FILE, e["line"], exc.errors()[0])
            continue
        if task.id in seen:
            log.warning("%s line %d: task id %r is taken; skipped", root / TASKS_FILE, e["line"], task.id)
            continue
        seen.add(task.id)
        out.append(task)
    return tuple(out)
