"""Damaged files for the fuzz tests of the command line's file inputs (issue 34).

:func:`corrupt` damages a good file's bytes each :data:`KINDS` way (empty, cut in half, random
bytes, not UTF-8, nested deeper than Python's parser goes, another schema, a 3 MB line, Unicode
line separators, a folder where the file should be); :func:`mistyped` makes documents of the
right schema with wrong types (a string where a number goes, a number where a string goes, a
negative or huge number, null, a missing key, an extra key). :func:`check` runs a command on
one and asserts what every command owes a damaged file: no traceback, an answer in bounded
time, and either the file read (around its damage, or the command going on to its own work) or
one error naming the file with exit code 2.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from phoneenv.cli import app
from tests.waiting import scaled

__all__ = ["KINDS", "check", "corrupt", "damage", "fuzz_file", "mistyped"]

KINDS = ["empty", "truncated", "random", "non-utf8", "deep", "schema", "huge line", "separators", "dir"]
"""The ways :func:`corrupt` damages a file."""


def corrupt(text: bytes, kind: str) -> bytes | None:
    """``text`` damaged the ``kind`` way; None: a folder instead of the file."""
    return {
        "empty": b"",
        "truncated": text[: len(text) // 2],
        "random": bytes(random.Random(0).randrange(256) for _ in range(300)),
        "non-utf8": text[:40] + b"\xff\xfe" + text[40:],
        "deep": b"[" * 100_000 + b"\n",
        "schema": b'{"a": 1}\n[1, 2]\n5\n',
        "huge line": b'{"x": "' + b"a" * 3_000_000 + b'"}\n',
        "separators": text.replace(b'"', '"\u2028'.encode(), 3),
        "dir": None,
    }[kind]


def damage(path: Path, kind: str, good: bytes) -> None:
    """Replace whatever is at ``path`` with ``good`` damaged the ``kind`` way."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    data = corrupt(good, kind)
    if data is None:
        path.mkdir(parents=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


_WRONG = {"string": "fuzz", "number": 7, "negative": -1, "huge": 10**30, "null": None}


def mistyped(doc: Any, limit: int | None = None, seed: int = 0) -> list[tuple[str, Any]]:
    """Documents like ``doc`` (JSON data) with one thing wrong each, labelled ``path:how``: every
    value (into the first two items of a list) replaced by a string, or a number where it is a
    string, -1 and 10**30 where it is a number, null; every key removed; an extra key in every
    object. ``limit``: at most that many, drawn with ``seed`` (always the same ones)."""
    edits: list[tuple[list[Any], str]] = []

    def walk(node: Any, path: list[Any]) -> None:
        if isinstance(node, dict):
            edits.append(([*path, None], "extra"))
            for key, value in node.items():
                edits.append(([*path, key], "missing"))
                walk(value, [*path, key])
        elif isinstance(node, list):
            for i, value in enumerate(node[:2]):
                walk(value, [*path, i])
        if not path:
            return
        if isinstance(node, (int, float)) and not isinstance(node, bool):
            edits.extend((path, how) for how in ("string", "negative", "huge"))
        else:
            edits.append((path, "number" if isinstance(node, str) else "string"))
        edits.append((path, "null"))

    walk(doc, [])
    if limit is not None and len(edits) > limit:
        edits = random.Random(seed).sample(edits, limit)
    out = []
    for path, how in edits:
        new = copy.deepcopy(doc)
        parent = new
        for key in path[:-1]:
            parent = parent[key]
        if how == "extra":
            parent["fuzz_extra"] = {"x": 1}
        elif how == "missing":
            del parent[path[-1]]
        else:
            parent[path[-1]] = _WRONG[how]
        out.append(("/".join(str(k) for k in path if k is not None) + ":" + how, new))
    return out


def check(
    argv: Sequence[str], damaged: Path, label: str, *, went_on: Sequence[str] = (), budget_s: float = 20.0
) -> Result:
    """Run ``phoneenv argv`` on the damaged file ``damaged``: no exception escapes and no traceback
    is printed; it answers within ``budget_s`` (scaled, tests/waiting.py); and unless it exits 0
    or says one of ``went_on`` (the file was read and the command went on to its own work, which
    failed for its own reason: no device, no model), it exits with code 2 and one error (at most
    10 lines, wrapped at 80 columns) naming the file or its folder. Returns the result."""
    started = time.monotonic()
    res = CliRunner().invoke(app, list(argv))
    took = time.monotonic() - started
    assert res.exception is None or isinstance(res.exception, SystemExit), (label, repr(res.exception))
    out = res.output
    assert "Traceback" not in out, (label, out[-2000:])
    assert took < scaled(budget_s), (label, f"{took:.1f} s")
    flat = "".join(out.split())  # rich wraps long paths anywhere; the words are whole once joined
    if res.exit_code == 0 or any("".join(w.split()) in flat for w in went_on):
        return res
    assert res.exit_code == 2, (label, res.exit_code, out[-1000:])
    assert damaged.name in flat or "".join(str(damaged.parent).split()) in flat, (label, out[-1000:])
    assert "error" in out.lower() and len(out.strip().splitlines()) <= 10, (label, out)
    return res


def fuzz_file(
    path: Path,
    doc: Any,
    argv: Sequence[str],
    *,
    went_on: Sequence[str] = (),
    limit: int | None = 40,
    dump: Callable[[Any], str] = json.dumps,
) -> int:
    """:func:`check` ``argv`` with ``path`` holding ``doc`` (written by ``dump``) damaged every
    :data:`KINDS` way, then each of ``limit`` of its :func:`mistyped` variants. Returns how many
    were refused (exit code 2)."""
    good = dump(doc).encode()
    refused = 0
    for kind in KINDS:
        damage(path, kind, good)
        refused += check(argv, path, f"{path.name} {kind}", went_on=went_on).exit_code == 2
    for label, bad in mistyped(doc, limit=limit):
        damage(path, "empty", good)
        path.write_text(dump(bad), encoding="utf-8")
        refused += check(argv, path, f"{path.name} {label}", went_on=went_on).exit_code == 2
    return refused
