"""Each tool names the tables it writes (``ToolSpec.writes``), and the tables it names are the
ones it changes: every write the suite's reference plans and probes make, one task per template,
is within its tool's declared tables; reads write nothing."""

from __future__ import annotations

import pytest

from phoneenv.contract import Effect
from phoneenv.env import PhonePlanEnv
from phoneenv.phone import app_classes
from phoneenv.tasks import load_suite


@pytest.fixture(scope="module")
def env():
    suite = load_suite(generated=False)
    return PhonePlanEnv(tasks=suite, backend="sandbox")


def test_every_write_names_tables_that_exist_and_every_read_none(env):
    env.reset(seed=0)
    system = {n for n in env.backend.tables() if n.startswith("system.")}  # the phone's own
    known = {f"{app}.{t}" for app, cls in app_classes().items() for t in cls.records} | system | {"memory.entries"}
    specs = env.tool_specs
    writers = [s for s in specs if s.effect is not Effect.READ]
    assert len(writers) >= 150
    assert [s.name for s in writers if not s.writes] == []
    assert [s.name for s in specs if s.effect is Effect.READ and s.writes] == []
    assert {t for s in writers for t in s.writes} <= known
    spec = {s.name: s for s in specs}
    # spot checks by hand: a booking mails its confirmation; a photo lands in the gallery
    assert spec["travel.book_flight"].writes == ("mail.messages", "travel.bookings")
    assert spec["camera.take_photo"].writes == ("gallery.photos",)
    assert spec["memory.save"].writes == ("memory.entries",)
    assert "writes" not in str(spec["todo.add_item"].to_openai())  # not sent to a model


def test_the_suite_writes_only_the_declared_tables(env):
    suite = load_suite(generated=False)
    one = {}
    for t in suite:
        if t.backends[0] == "sandbox":
            one.setdefault(t.template, t)
    declared = {s.name: set(s.writes) for s in env.tool_specs}
    backend = env.backend
    outside: list[str] = []
    writes = 0
    for t in one.values():
        for plan in [t.reference_plan, *(p.plan for p in t.probes)]:
            env.reset(seed=0, options={"task": t})
            for c in plan:
                before = backend.frozen_tables()
                *_, term, trunc, info = env.step(c.model_dump(exclude_none=True))
                after = backend.frozen_tables()
                changed = {n for n in set(before) | set(after) if dict(before.get(n) or {}) != dict(after.get(n) or {})}
                if info["feedback"].ok and c.name != "finish":
                    writes += bool(changed)
                    outside += [f"{t.id}: {c.name} wrote {n}" for n in changed - declared.get(c.name, set())]
                if term or trunc:
                    break
    assert writes > 300 and outside == []
