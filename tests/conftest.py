"""Shared fixtures: small hand-built tasks that do not depend on the template suite."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator

import pytest

from phoneenv.contract import AnswerCriterion, Fixtures, StateCriterion, TaskSpec, ToolCall

ANA = {
    "id": "c_1",
    "name": "Ana Lima",
    "phone": "+4915111111111",
    "email": "ana@example.com",
    "relation": "sister",
    "favorite": False,
    "birthday": None,
}
BEN = {
    "id": "c_2",
    "name": "Ben Okafor",
    "phone": "+4916022222222",
    "email": None,
    "relation": "boss",
    "favorite": True,
    "birthday": "04-12",
}


@pytest.fixture
def contacts_task() -> TaskSpec:
    """Add Carla as a contact; verified by a created record and nothing else."""
    return TaskSpec(
        id="test.add_carla",
        domain="contacts",
        goal="Save Carla Novak, +4917033333333.",
        fixtures=Fixtures(
            records={"contacts.contacts": [ANA, BEN]}, clock="2026-11-29T09:00:00", timezone="Europe/Berlin"
        ),
        criteria=[
            StateCriterion(
                id="created",
                table="contacts.contacts",
                change="created",
                where={"name": "Carla Novak", "phone": {"number": "+4917033333333"}},
                count=1,
            )
        ],
        reference_plan=[
            ToolCall(name="contacts.create", arguments={"name": "Carla Novak", "phone": "+4917033333333"}),
            ToolCall(name="finish", arguments={"answer": "Saved."}),
        ],
        apps=["contacts"],
    )


@pytest.fixture
def answer_task() -> TaskSpec:
    """Ask for Ben's number; verified by the answer."""
    return TaskSpec(
        id="test.ben_number",
        domain="contacts",
        goal="What is Ben's number?",
        fixtures=Fixtures(records={"contacts.contacts": [ANA, BEN]}),
        criteria=[AnswerCriterion(id="answer", contains=["+4916022222222"])],
        reference_plan=[
            ToolCall(name="contacts.search", arguments={"query": "Ben"}),
            ToolCall(name="finish", arguments={"answer": "+4916022222222"}),
        ],
        apps=["contacts"],
    )


# -- a real OpenAI-compatible server over a tiny random model (tests/llm_server.py) ---------------


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory):
    """A tiny random Qwen2 checkpoint built from this repo's text (agents.llm.tiny), once per worker."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    for module in ("torch", "transformers", "tokenizers"):
        pytest.importorskip(module, reason=f"the tiny model needs `{module}` (pip install -e '.[llm]')")
    from agents.llm.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny_model"))


@pytest.fixture(scope="session")
def llm_server(tiny_model_dir):
    """`transformers serve` over the tiny model on 127.0.0.1 (free port), once per worker.

    Yields a tests.llm_server.LLMServer: `.base_url` (``http://127.0.0.1:PORT/v1``), `.model` (the name
    requests must send), `.scripted(text)` (extra_body forcing a reply), `.stop()`, `.kill()`. Tests that
    kill it must start their own with serve_tiny_model instead, since this one is shared.
    """
    for module in ("fastapi", "uvicorn", "openai"):
        pytest.importorskip(
            module, reason=f"`transformers serve` needs `{module}` (pip install 'transformers[serving]')"
        )
    from tests.llm_server import serve_tiny_model

    with serve_tiny_model(tiny_model_dir) as server:
        yield server


# -- a real Appium server with the official fake driver (tests/appium_server.py) ------------------


@pytest.fixture(scope="session")
def appium_server(tmp_path_factory: pytest.TempPathFactory):
    """Appium 2 with `@appium/fake-driver` on 127.0.0.1 (free port), once per worker.

    Yields a tests.appium_server.AppiumServer (`.url`, `.kill()`, `.pause()`, `.startup_s`). Skips when
    appium-python-client, Node.js or the npm install under tests/appium is missing. Tests that kill or
    pause it must start their own with serve_appium instead, since this one is shared.
    """
    pytest.importorskip(
        "appium.webdriver", reason="the Appium tests need appium-python-client (pip install -e '.[device]')"
    )
    from tests.appium_server import AppiumUnavailable, appium_command, serve_appium

    try:
        appium_command()
    except AppiumUnavailable as exc:
        pytest.skip(str(exc))
    with serve_appium(tmp_path_factory.mktemp("appium")) as server:
        yield server


# -- a real adb server of this worker's own (tests/adb.py) -----------------------------------------


@pytest.fixture(scope="session")
def adb_server(tmp_path_factory: pytest.TempPathFactory):
    """A real adb server (Debian's `adb`, or $PHONEENV_ADB) on a free loopback port, once per worker.

    Yields an ``adbutils.AdbClient(host="127.0.0.1", port=port)``; the server is killed at the end.
    Skips when adbutils or adb is missing. Tests that kill or restart a server must start their own
    with tests.adb.AdbServer instead, since this one is shared. Connect devices with
    tests.adb.connect_device / served_device, and disconnect them when done.
    """
    pytest.importorskip("adbutils", reason="the adb tests need adbutils (pip install -e '.[device]')")
    from tests.adb import AdbServer, adb_binary

    if adb_binary() is None:
        pytest.skip("adb is not installed (Debian: apt-get install adb; `make test` installs it when run as root)")
    with AdbServer(tmp_path_factory.mktemp("adb_home")) as server:
        yield server.client


@pytest.fixture(autouse=True)
def _loop_dir_in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every test gets its own loop directory (``$PHONEENV_LOOP_DIR``; made only when written), so
    ``phoneenv eval``'s run store, the review queue and generated tasks never land in the repo or
    leak from one test into another."""
    monkeypatch.setenv("PHONEENV_LOOP_DIR", str(tmp_path_factory.getbasetemp() / f"loop-{uuid.uuid4().hex}"))


@pytest.fixture(autouse=True, scope="session")
def _vector_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The on-disk vector cache (``$PHONEENV_VECTOR_CACHE``) of this test process lives in its
    temporary folder, never in the user's ``~/.cache``."""
    old = os.environ.get("PHONEENV_VECTOR_CACHE")
    os.environ["PHONEENV_VECTOR_CACHE"] = str(tmp_path_factory.mktemp("vectors"))
    yield
    if old is None:
        os.environ.pop("PHONEENV_VECTOR_CACHE", None)
    else:
        os.environ["PHONEENV_VECTOR_CACHE"] = old


_TOOL_CACHE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """The apps' tool-spec cache (``$PHONEENV_TOOL_CACHE``, :mod:`phoneenv.toolcache`) of this
    test process (each xdist worker its own, and the subprocesses it starts) is a temporary
    folder, set before any test module is imported, never the user's ``~/.cache``."""
    if "PHONEENV_TOOL_CACHE" not in os.environ:
        _TOOL_CACHE.append(tempfile.mkdtemp(prefix="phoneenv-tool-specs-"))
        os.environ["PHONEENV_TOOL_CACHE"] = _TOOL_CACHE[0]


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _TOOL_CACHE:
        os.environ.pop("PHONEENV_TOOL_CACHE", None)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    """Debian's chromium driven by Playwright (never Playwright's own browser download), for the
    browser tests of the viewer's pages and the docs site; skips with the reason when either is
    missing."""
    exe = shutil.which("chromium")
    if exe is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extra)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield browser
        browser.close()
