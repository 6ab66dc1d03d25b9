"""Replies without a tool call, success and output tokens of an RL run's training episodes, by
step band, read from the run store `train rl` writes (`<loop>/runs.sqlite`).

Run: ``.venv/bin/python benchmarks/rl_reply_validity.py runs/loop/runs.sqlite [--bands 0-19,20-59,60-89,90-120]``

A reply without a tool call is a step whose feedback error is ``invalid_json`` (the env's answer to
text that holds no call). Per band it prints the training episodes, their success rate, the share
of replies without a call, how many won episodes hold one, and output tokens per episode. The
the figures of docs/figures/care.md (3.0% -> 38% without ``--invalid-reply-penalty``, 2.2-3.3%
with it) come from this script.
"""

from __future__ import annotations

import argparse
import json
import sqlite3


def bands(text: str) -> list[tuple[int, int]]:
    """``"0-19,20-59"`` as ``[(0, 19), (20, 59)]`` (inclusive). Raises ValueError on other text."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.append((int(lo), int(hi)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", help="a run store (runs.sqlite)")
    ap.add_argument("--bands", type=bands, default=bands("0-19,20-59,60-89,90-120"), help="step bands, inclusive")
    args = ap.parse_args()
    db = sqlite3.connect(f"file:{args.store}?mode=ro", uri=True)
    for lo, hi in args.bands:
        rows = db.execute(
            "SELECT success, trace FROM episodes WHERE mode = 'train' AND step BETWEEN ? AND ?", (lo, hi)
        ).fetchall()
        if not rows:
            print(f"steps {lo}-{hi}: no training episodes")
            continue
        replies = invalid = won = won_with_one = tokens = 0
        for success, trace in rows:
            t = json.loads(trace)
            bad = sum(1 for s in t["steps"] if (s.get("feedback") or {}).get("error") == "invalid_json")
            replies += len(t["steps"])
            invalid += bad
            tokens += (t.get("verdict") or {}).get("output_tokens") or 0
            won += bool(success)
            won_with_one += bool(success and bad)
        print(
            f"steps {lo:3d}-{hi:3d}: {len(rows):4d} episodes, success {sum(r[0] for r in rows) / len(rows):.3f}, "
            f"replies without a call {invalid / max(replies, 1):.3f} ({invalid}/{replies}), "
            f"won episodes holding one {won_with_one}/{won}, output tokens/episode {tokens / len(rows):.1f}"
        )


if __name__ == "__main__":
    main()
