"""The apps' tool specs on disk (:mod:`phoneenv.toolcache`): what a process reads back is what it
would have built, a stale or broken file is rebuilt, and a cache that cannot be written costs
nothing but the build. The figures (cold and warm) are in ``benchmarks/bench_load.py``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests import waiting

ROOT = Path(__file__).resolve().parents[1]

# Every tool's spec and a few validations, from a fresh interpreter with the given cache.
_DUMP = """
import json
from apps import APP_CLASSES
out = {"specs": {}, "checks": []}
for cls in APP_CLASSES.values():
    for td in cls.tool_defs():
        out["specs"][td.spec.name] = td.spec.model_dump(mode="json")
tools = {td.spec.name: td for cls in APP_CLASSES.values() for td in cls.tool_defs()}
for name, args in [("contacts.search", {"query": "ana"}), ("clock.create_alarm", {"time": "07:30"}),
                   ("contacts.search", {"query": 5}), ("clock.create_alarm", {"when": "7"})]:
    try:
        out["checks"].append(["ok", tools[name].validator.validate(args)])
    except Exception as exc:
        out["checks"].append([type(exc).__name__, exc.path, exc.message])
print(json.dumps(out, sort_keys=True))
"""


def _dump(cache: str) -> dict:
    env = {**os.environ, "PHONEENV_TOOL_CACHE": cache}
    out = waiting.run(
        [sys.executable, "-c", _DUMP], cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=300
    )
    return json.loads(out.stdout)


def test_a_cached_process_serves_what_a_building_one_builds(tmp_path):
    """Off (built), cold (built and written) and warm (read back) give the same specs and the
    same validations, for every tool of every app."""
    built = _dump("off")
    cache = tmp_path / "specs"
    cold = _dump(str(cache))
    files = sorted(p.name for p in cache.glob("*.json"))
    assert len(files) >= 20 and any(f.startswith("contacts-") for f in files)
    warm = _dump(str(cache))
    assert len(built["specs"]) >= 240
    assert cold == built and warm == built
    assert built["checks"][0] == ["ok", {"query": "ana", "limit": 10}]
    assert [c[0] for c in built["checks"][2:]] == ["ArgumentError", "ArgumentError"]
    assert sorted(p.name for p in cache.glob("*.json")) == files  # read, not rewritten


def test_the_cache_is_read_not_rebuilt(tmp_path, monkeypatch):
    """A warm load builds no tool (``build_tool`` is never called) and no argument model until
    a tool's arguments are validated."""
    from apps import APP_CLASSES
    from phoneenv import app as app_module
    from phoneenv import toolcache

    monkeypatch.setenv("PHONEENV_TOOL_CACHE", str(tmp_path))
    cls = APP_CLASSES["clock"]
    monkeypatch.setattr(cls, "_tool_defs", None)
    first = cls.tool_defs()
    assert list(tmp_path.glob("clock-*.json"))
    monkeypatch.setattr(cls, "_tool_defs", None)

    def no_build(*a, **k):
        raise AssertionError("built although cached")

    monkeypatch.setattr(app_module, "build_tool", no_build)
    second = cls.tool_defs()
    assert [d.spec for d in second] == [d.spec for d in first]
    assert all(d._validator is None for d in second)
    td = next(d for d in second if d.spec.name == "clock.create_alarm")
    assert td.validator.validate({"time": "07:30"}) == first[
        [d.spec.name for d in first].index(td.spec.name)
    ].validator.validate({"time": "07:30"})
    assert toolcache.tool_cache_dir() == tmp_path


@pytest.mark.parametrize("damage", ["garbage", "other tools", "empty"])
def test_a_broken_or_foreign_file_is_rebuilt(tmp_path, monkeypatch, damage):
    from apps import APP_CLASSES

    monkeypatch.setenv("PHONEENV_TOOL_CACHE", str(tmp_path))
    cls = APP_CLASSES["weather"]
    monkeypatch.setattr(cls, "_tool_defs", None)
    good = [d.spec for d in cls.tool_defs()]
    [path] = tmp_path.glob("weather-*.json")
    specs = json.loads(path.read_text())
    bad = {"garbage": "{not json", "other tools": json.dumps(specs[:-1]), "empty": ""}[damage]
    path.write_text(bad)
    monkeypatch.setattr(cls, "_tool_defs", None)
    assert [d.spec for d in cls.tool_defs()] == good
    assert json.loads(path.read_text()) == specs  # written again, whole


def test_an_edit_makes_a_new_key_and_the_stale_file_goes(tmp_path, monkeypatch):
    """The key follows the sources: a plugin folder's file changing (its mtime) gives another
    file name, and writing it removes the app's stale one."""
    from phoneenv import toolcache

    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "mine.py").write_text("X = 1\n")
    cache = tmp_path / "cache"
    monkeypatch.setenv("PHONEENV_TOOL_CACHE", str(cache))
    toolcache.source_key.cache_clear()
    a = toolcache.source_key((str(plugin),))
    os.utime(plugin / "mine.py", ns=(1, 1))
    toolcache.source_key.cache_clear()
    b = toolcache.source_key((str(plugin),))
    assert a != b
    from phoneenv.contract import Domain, ToolSpec

    spec = ToolSpec(
        name="mine.x",
        description="x",
        parameters={"type": "object", "properties": {}},
        app="mine",
        domain=next(iter(Domain)),
    )
    toolcache.source_key.cache_clear()
    (plugin / "mine.py").write_text("X = 2\n")
    toolcache.store("mine", "m.Mine", [spec], (str(plugin),))
    old = list(cache.glob("mine-*.json"))
    os.utime(plugin / "mine.py", ns=(2, 2))
    toolcache.source_key.cache_clear()
    assert toolcache.load("mine", "m.Mine", ["mine.x"], (str(plugin),)) is None  # stale: another key
    toolcache.store("mine", "m.Mine", [spec], (str(plugin),))
    new = list(cache.glob("mine-*.json"))
    assert len(old) == len(new) == 1 and old != new
    assert toolcache.load("mine", "m.Mine", ["mine.x"], (str(plugin),)) == [spec]
    toolcache.source_key.cache_clear()


def test_off_or_unwritable_costs_only_the_build(tmp_path, monkeypatch):
    from apps import APP_CLASSES
    from phoneenv import toolcache

    cls = APP_CLASSES["notes"]
    for value in ("off", "0", ""):
        monkeypatch.setenv("PHONEENV_TOOL_CACHE", value)
        assert toolcache.tool_cache_dir() is None
    monkeypatch.setenv("PHONEENV_TOOL_CACHE", "off")
    monkeypatch.setattr(cls, "_tool_defs", None)
    assert cls.tool_defs()
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PHONEENV_TOOL_CACHE", str(blocker / "below"))  # a folder under a file
    monkeypatch.setattr(cls, "_tool_defs", None)
    assert [d.spec.name for d in cls.tool_defs()] == [d.spec.name for d in APP_CLASSES["notes"].tool_defs()]
    monkeypatch.delenv("PHONEENV_TOOL_CACHE")
    monkeypatch.setenv("PHONEENV_CACHE", str(tmp_path / "root"))
    assert toolcache.tool_cache_dir() == tmp_path / "root" / "tool-specs"
