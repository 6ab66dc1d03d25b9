"""Every task's reference answer, said the way people say it, still passes: wrapped in
pleasantries ("Sure! ... Let me know if you need anything else."), with its times in 12-hour form
("4:30 pm" for 16:30), and with its small numbers in words ("two" for 2). Each variant is played
on the task's sandbox env; a verdict that fails one is reading the answer too narrowly."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from phoneenv.contract import ToolCall
from phoneenv.tasks import load_suite
from phoneenv.tasks.validate import run_plan

_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
_SMALL = r"(?<![\d:.,/#+-])\b([1-9]|1[0-2])\b(?![\d:.,/-])(?!\s*(?:am|pm|AM|PM|%|€|\$|£|[A-Z]{3}\b))"
_HM = r"(?<![\d:T-])(\d{2}):(\d{2})(?![\d:])"


def _h12(m: re.Match[str]) -> str:
    h, mi = int(m[1]), int(m[2])
    if h > 23 or mi > 59:
        return m[0]
    ap = "am" if h < 12 else "pm"
    return f"{h % 12 or 12}:{mi:02d} {ap}" if mi else f"{h % 12 or 12} {ap}"


VARIANTS: dict[str, Callable[[str], str]] = {
    "pleasantries": lambda a: f"Sure! {a} Let me know if you need anything else.",
    "12-hour times": lambda a: re.sub(_HM, _h12, a),
    "number words": lambda a: re.sub(_SMALL, lambda m: _WORDS[int(m[1])], a),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_reference_answers_said_another_way_still_pass(variant):
    from phoneenv.env import PhonePlanEnv

    change = VARIANTS[variant]
    env = None
    played, failed = 0, []
    for t in load_suite():
        plan = t.reference_plan
        if "sandbox" not in t.backends or not plan or plan[-1].name != "finish":
            continue
        said = plan[-1].arguments.get("answer")
        if not isinstance(said, str) or change(said) == said:
            continue
        env = env or PhonePlanEnv(tasks=[t], backend="sandbox")
        variant_plan = [*plan[:-1], ToolCall(name="finish", arguments={**plan[-1].arguments, "answer": change(said)})]
        info, _ = run_plan(env, t, variant_plan)
        played += 1
        if not info["verdict"]["success"]:
            failed.append(f"{t.id}: {change(said)!r}")
    assert played >= 200, played  # the variant reaches a good part of the suite
    assert not failed, "\n".join(failed[:20])
