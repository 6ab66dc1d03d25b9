"""The docs' guides run as written: every ``python`` block of each guide in ``docs/guides/``,
in order, in one namespace per guide."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDES = sorted((Path(__file__).parent.parent / "docs" / "guides").glob("*.md"))


@pytest.mark.parametrize("guide", GUIDES, ids=[g.stem for g in GUIDES])
def test_a_guide_runs_as_written(guide: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", guide.read_text(), re.S)
    assert blocks, f"{guide.name} has no python block"
    namespace: dict[str, object] = {"__name__": f"guide_{guide.stem}"}
    for code in blocks:
        exec(compile(code, str(guide), "exec"), namespace)
