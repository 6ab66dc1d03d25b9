"""One co-evolution round with a real planner, through the command line, and its round report.

    python benchmarks/loop_round.py                       # the SFT model of `phoneenv train sft`
    python benchmarks/loop_round.py --model runs/sft/model --tasks template:clock.alarm_off --seeds 2
    python benchmarks/loop_round.py --model M --base-url URL   # a served model

Runs, in a fresh loop directory (``--loop``, default ``runs/loop-round``):

    phoneenv eval --agent llm ... --out <loop>/r0                 # harness v0
    phoneenv evolve round --run <loop>/r0 --min-size 2
    phoneenv review approve ID                                    # each skill edit (see below)
    phoneenv evolve apply                                         # harness v1
    phoneenv eval --agent llm ... --harness v1 --out <loop>/r1
    phoneenv evolve report --before <loop>/r0 --after <loop>/r1

and prints the report (``<loop>/rounds/1/report.md``). With ``--retrain`` (the default model only),
the model co-evolves with the harness: ``phoneenv train sft --harness v1`` retrains it on v1's
prompt, ``<loop>/r2`` evaluates that model with v1, and the report compares r0 with r2. The script approves the round's skill edits
and rejects its instruction and mix-weight edits, as reviewer ``loop_round.py``: it measures what
skill edits do. In real use a person reads each item first (``phoneenv review show ID``).
Without ``--model``, the SFT model of ``phoneenv train sft`` (``runs/sft/model``) is used; it is
trained first when missing (about 3 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_TASKS = "template:clock.alarm_off,template:clock.delete_alarm,template:clock.wake_up"


def phoneenv(*args: str, env: dict[str, str]) -> str:
    """Run ``phoneenv ARGS`` (the one next to this Python), echo it, and return its output;
    exits with its status when it fails."""
    exe = Path(sys.executable).with_name("phoneenv")
    print("$ phoneenv " + " ".join(args), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run([str(exe), *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n")
        sys.exit(proc.returncode)
    print(f"  ({time.perf_counter() - t0:.0f} s)", flush=True)
    return proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="Planner model folder, or a name served at --base-url.")
    ap.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint of --model.")
    ap.add_argument("--tasks", default=DEFAULT_TASKS, help="Task selector (default: the training tasks).")
    ap.add_argument("--seeds", type=int, default=2, help="Episodes per task.")
    ap.add_argument("--loop", type=Path, default=Path("runs/loop-round"), help="A fresh loop directory.")
    ap.add_argument("--retrain", action="store_true", help="Retrain the SFT model on v1's prompt (r2).")
    args = ap.parse_args()

    if args.loop.exists():
        shutil.rmtree(args.loop)
    env = {**os.environ, "PHONEENV_LOOP_DIR": str(args.loop), "PHONEENV_REVIEWER": "loop_round.py"}
    model = args.model
    if model is None:
        model = "runs/sft/model"
        if not Path(model).is_dir():
            phoneenv("train", "sft", "--out", "runs/sft", env=env)
    planner = ["--agent", "llm", "--model", model, "--tasks", args.tasks, "--seeds", str(args.seeds)]
    if args.base_url:
        planner += ["--base-url", args.base_url]
    r0, r1 = args.loop / "r0", args.loop / "r1"
    phoneenv("eval", *planner, "--out", str(r0), env=env)
    phoneenv("evolve", "round", "--run", str(r0), "--min-size", "2", env=env)
    clusters = json.loads((args.loop / "rounds" / "1" / "clusters.json").read_text())["clusters"]
    for cluster in clusters:
        for kind, item in cluster["items"].items():
            if kind == "skill_edit":
                phoneenv("review", "approve", str(item), "--note", "measuring skill edits", env=env)
            else:
                phoneenv("review", "reject", str(item), "--reason", "this round measures skill edits only", env=env)
    phoneenv("evolve", "apply", env=env)
    phoneenv("eval", *planner, "--harness", "v1", "--out", str(r1), env=env)
    after = r1
    if args.retrain:
        if args.model is not None:
            ap.error("--retrain retrains the default SFT model; leave --model out")
        sft_v1 = args.loop / "sft-v1"
        phoneenv("train", "sft", "--out", str(sft_v1), "--harness", "v1", env=env)
        after = args.loop / "r2"
        retrained = [*planner]
        retrained[retrained.index("--model") + 1] = str(sft_v1 / "model")
        phoneenv("eval", *retrained, "--harness", "v1", "--out", str(after), env=env)
        phoneenv("evolve", "report", "--before", str(r0), "--after", str(r1), env=env)
        print((args.loop / "rounds" / "1" / "report.md").read_text())
    phoneenv("evolve", "report", "--before", str(r0), "--after", str(after), env=env)
    print()
    print((args.loop / "rounds" / "1" / "report.md").read_text())


if __name__ == "__main__":
    main()
