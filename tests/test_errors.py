"""One root for every error: each public exception class that phoneenv, agents, apps and rl
define derives from :class:`phoneenv.errors.PhoneEnvError` (and keeps the built-in base a caller
would expect). The classes are found in the source (``ast``: a class whose bases name an
exception), then checked on the imported module."""

from __future__ import annotations

import ast
import importlib
import re

import pytest

from phoneenv.errors import ArgumentError, InfrastructureError, PhoneEnvError, RunConfigError, ToolError
from tests.test_import_graph import modules

_EXCEPTION_BASE = re.compile(r"(Error|Exception|Fault|Exhausted|Unavailable|Miss|Extra|Table|Response)$")


def exception_classes() -> dict[str, list[str]]:
    """Module → the public classes defined in it whose bases look like exceptions (their names end
    in Error, Exception, Fault, ...); the import below tells the true ones apart."""
    found: dict[str, list[str]] = {}
    for mod, path in sorted(modules().items()):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = [ast.unparse(b).rpartition(".")[2] for b in node.bases]
                if any(_EXCEPTION_BASE.search(b) for b in bases):
                    found.setdefault(mod, []).append(node.name)
    return found


def outside_root(found: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """The exception classes of ``found`` that do not derive from PhoneEnvError, and the modules
    that could not be imported (with why)."""
    outside, skipped = [], []
    for mod, names in found.items():
        try:
            module = importlib.import_module(mod)
        except ImportError as exc:  # a GPU extra (vllm, deepspeed) not installed here
            skipped.append(f"{mod} ({exc})")
            continue
        for name in names:
            cls = getattr(module, name)
            if isinstance(cls, type) and issubclass(cls, BaseException) and not issubclass(cls, PhoneEnvError):
                outside.append(f"{mod}.{name}")
    return outside, skipped


def test_every_public_exception_class_has_the_one_root():
    found = exception_classes()
    assert sum(len(v) for v in found.values()) >= 39  # the public ones, counted by hand when written
    outside, skipped = outside_root(found)
    assert outside == [], "exceptions outside phoneenv.errors.PhoneEnvError: " + ", ".join(outside)
    assert len(skipped) <= 2, skipped


def test_the_shared_errors_keep_their_builtin_bases_and_old_homes():
    import phoneenv.evaluation
    import phoneenv.llm
    import phoneenv.tools
    from phoneenv.extras import MissingExtra
    from phoneenv.harness.skills import SkillError

    assert phoneenv.llm.InfrastructureError is InfrastructureError and issubclass(InfrastructureError, RuntimeError)
    assert phoneenv.tools.ToolError is ToolError and phoneenv.tools.ArgumentError is ArgumentError
    assert phoneenv.evaluation.RunConfigError is RunConfigError and issubclass(RunConfigError, ValueError)
    assert issubclass(MissingExtra, ImportError) and issubclass(SkillError, ValueError)
    with pytest.raises(PhoneEnvError):
        raise MissingExtra("view", "phoneenv view", "matplotlib")


def test_the_scan_finds_a_class_outside_the_root(tmp_path, monkeypatch):
    """The check can fail: a stray exception class is reported, one under the root is not."""
    import tests.test_errors as me

    stray = tmp_path / "stray_mod.py"
    stray.write_text(
        "from phoneenv.errors import PhoneEnvError\n"
        "class StrayError(ValueError):\n    pass\n"
        "class KeptError(PhoneEnvError, ValueError):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(me, "modules", lambda: {"stray_mod": stray})
    found = me.exception_classes()
    assert found == {"stray_mod": ["StrayError", "KeptError"]}
    assert outside_root(found) == (["stray_mod.StrayError"], [])
