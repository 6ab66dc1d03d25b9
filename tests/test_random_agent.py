"""The random agent draws the same calls in every process, whatever ``PYTHONHASHSEED`` is.

Each check runs fresh interpreters with different hash seeds (set iteration order follows them)
and compares their output byte for byte.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest

from tests import waiting

ROOT = Path(__file__).resolve().parent.parent

_XEGER = r"""
import random
from agents.random_agent import StableXeger, sample_schema

x = StableXeger(random.Random(7))
patterns = [r"\W{40}", r"[^a-z]{40}", r"[^@\s]+@[^@\s]+\.[a-z]{2,3}", r"\S{30}", r"\w{30}", r".{30}", r"[\W\d]{30}"]
for pattern in patterns:
    print(repr(x.xeger(pattern)))
print(x.unambiguous(30), x.nonword(30) == x.nonword(30))
schema = {"type": "object", "required": ["a", "b"], "properties": {
    "a": {"type": "string", "pattern": r"^\W+[^0-9]$", "maxLength": 12},
    "b": {"type": "array", "items": {"type": "string", "pattern": r"[^\w]{3}"}, "minItems": 2},
}}
print(repr(sample_schema(schema, random.Random(1), StableXeger(random.Random(1)), [])))
"""


def _python(code: str, hash_seed: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": hash_seed, "COLUMNS": "200"}
    proc = waiting.run(
        [sys.executable, *(["-c", code] if code else []), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_xeger_draws_do_not_depend_on_the_hash_seed():
    """Negated classes and ``\\W`` (rstr's set-built alphabets) draw alike under three hash seeds."""
    outputs = [_python(_XEGER, seed) for seed in ("0", "1", "2")]
    assert outputs[0] == outputs[1] == outputs[2]
    lines = outputs[0].splitlines()
    assert len(lines) == 9
    assert all(not ch.isalnum() and ch != "_" for ch in ast.literal_eval(lines[0]))  # \W drew non-word characters


def test_stable_xeger_keeps_custom_alphabets():
    import random

    from agents.random_agent import StableXeger

    x = StableXeger(random.Random(0), nonword="zyx")
    assert set(x.nonword(20)) <= set("zyx")
    assert x._alphabets["nonword"] == "zyx"


@pytest.mark.slow
def test_random_eval_traces_identical_across_hash_seeds(tmp_path):
    """``phoneenv eval --agent random`` over the test split (186 tasks, every template family) writes
    byte-identical traces from two processes with different hash seeds."""
    runs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"run{hash_seed}"
        _python(
            "",
            hash_seed,
            "-m",
            "phoneenv",
            "eval",
            "--agent",
            "random",
            "--tasks",
            "split:test",
            "--seed",
            "5",
            "--out",
            str(out),
        )
        runs.append(out / "traces")
    names = sorted(p.name for p in runs[0].iterdir())
    assert len(names) > 100 and names == sorted(p.name for p in runs[1].iterdir())
    differing = [n for n in names if (runs[0] / n).read_bytes() != (runs[1] / n).read_bytes()]
    assert differing == []
