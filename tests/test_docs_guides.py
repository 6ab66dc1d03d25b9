"""The docs' guides run as written: every ``python`` block of each guide in ``docs/guides/``,
in order, in one namespace per guide, each guide in a fresh interpreter (a guide may change its
process for good: ``add-an-app.md`` puts an app on the apps path)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = sorted((ROOT / "docs" / "guides").glob("*.md"))

RUN = r"""
import re, sys
from pathlib import Path

guide = Path(sys.argv[1])
blocks = re.findall(r"```python\n(.*?)```", guide.read_text(), re.S)
assert blocks, f"{guide.name} has no python block"
namespace = {"__name__": f"guide_{guide.stem}"}
for code in blocks:
    exec(compile(code, str(guide), "exec"), namespace)
"""


@pytest.mark.parametrize("guide", GUIDES, ids=[g.stem for g in GUIDES])
def test_a_guide_runs_as_written(guide: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PHONEENV_APPS_PATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    res = subprocess.run([sys.executable, "-c", RUN, str(guide)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr[-4000:]
