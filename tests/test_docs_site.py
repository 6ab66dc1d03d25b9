"""The documentation site (``mkdocs.yml``, ``docs/``): it builds with ``--strict``, its pages render
in a real browser and its search finds them, and its code blocks run as written.

Which blocks run (the convention ``docs/index.md`` states for writers):

- every ```` ```python ```` block runs, in page order, in a scratch folder, one namespace per page;
  a block titled as a file (```` ```python title="my_agents.py" ````) is written to that file in the
  scratch folder instead, for the commands after it to import;
- every ```` ```sh ```` / ```` ```bash ```` block runs too, in the same folder: each command (``\\``
  continuations joined, ``#`` comments dropped) must be ``phoneenv ...`` and exit with 0;
- a block right after ``<!-- not run: REASON -->`` is not run; the reason must be given;
- other fences (``text``, ``json``, ``yaml``, ...) are output or data and never run.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import waiting

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]  # the README is the site's landing page
RUN_LANGS = {"python", "sh", "bash"}
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^`\n]*)$")


@dataclass
class Block:
    lang: str
    title: str | None  # a file name: the block is that file's content
    code: str
    line: int  # 1-based line of the opening fence
    not_run: str | None  # the reason, when marked


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, with the not-run marker of each."""
    lines = page.read_text().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group("info").strip():
            i += 1
            continue
        indent, lang = m.group("indent"), m.group("info").split()[0]
        title = re.search(r'title="([^"]+)"', m.group("info"))
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent) :])
            i += 1
        marker = NOT_RUN.match(lines[start - 1].strip()) if start else None
        reason = marker.group("reason") if marker else None
        out.append(Block(lang, title.group(1) if title else None, "\n".join(body) + "\n", start + 1, reason))
        i += 1
    return out


def commands(code: str) -> list[list[str]]:
    """A shell block's commands: continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [argv for line in joined.splitlines() if (argv := shlex.split(line, comments=True))]


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


# -- the convention is kept ---------------------------------------------------------------------


def test_every_not_run_marker_gives_a_reason_and_precedes_a_runnable_block():
    for page in PAGES:
        lines = page.read_text().splitlines()
        for n, line in enumerate(lines):
            if "not run" not in line or not line.strip().startswith("<!--"):
                continue
            m = NOT_RUN.match(line.strip())
            assert m and m.group("reason"), f"{_rel(page)}:{n + 1}: write <!-- not run: REASON -->"
            nxt = FENCE.match(lines[n + 1]) if n + 1 < len(lines) else None
            assert nxt and nxt.group("info").split()[:1] and nxt.group("info").split()[0] in RUN_LANGS, (
                f"{_rel(page)}:{n + 1}: a not-run marker must sit right above a python or sh block"
            )


def test_shell_blocks_that_run_are_phoneenv_commands():
    for page in PAGES:
        for b in blocks(page):
            if b.lang in ("sh", "bash") and b.not_run is None:
                for argv in commands(b.code):
                    assert argv[0] == "phoneenv", (
                        f"{_rel(page)}:{b.line}: {shlex.join(argv)!r} is not a phoneenv command; "
                        "mark the block <!-- not run: REASON --> if it cannot run in the tests"
                    )


# -- every block that claims to run, runs --------------------------------------------------------


def _runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.lang in RUN_LANGS and b.not_run is None]


RUNNABLE = [p for p in PAGES if _runnable(p)]


# Runs one page's blocks (JSON on stdin) in a fresh interpreter: a page may change its process for
# good (the add-an-app guide puts an app on the apps path), which must not leak into other tests.
_RUNNER = r"""
import json, os, shlex, subprocess, sys, traceback
from pathlib import Path

page, blocks = json.load(sys.stdin)
namespace = {"__name__": "docs_" + Path(page).stem.replace("-", "_")}
for b in blocks:
    where = f"{page}:{b['line']}"
    if b["lang"] == "python" and b["title"]:
        Path(b["title"]).parent.mkdir(parents=True, exist_ok=True)
        Path(b["title"]).write_text(b["code"])
    elif b["lang"] == "python":
        try:
            exec(compile(b["code"], where, "exec"), namespace)
        except BaseException:
            print(f"{where}: the block raised", file=sys.stderr)
            traceback.print_exc()
            sys.exit(1)
    else:
        for argv in b["commands"]:
            env = {**os.environ, "COLUMNS": "120"}
            res = subprocess.run([sys.executable, "-m", "phoneenv", *argv[1:]], env=env, capture_output=True,
                                 text=True, timeout=300)
            if res.returncode != 0:
                print(f"{where}: {shlex.join(argv)} exited {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}",
                      file=sys.stderr)
                sys.exit(1)
"""


@pytest.mark.parametrize("page", RUNNABLE, ids=[_rel(p).removeprefix("docs/") for p in RUNNABLE])
def test_a_page_runs_as_written(page: Path, tmp_path):
    """The page's python and shell blocks, in order, in a scratch folder (nothing is written in
    the repository), in a fresh interpreter; the python blocks share one namespace."""
    payload = [
        {"lang": b.lang, "title": b.title, "code": b.code, "line": b.line,
         "commands": commands(b.code) if b.lang in ("sh", "bash") else []}
        for b in _runnable(page)
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PHONEENV_APPS_PATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    res = waiting.run(
        [sys.executable, "-c", _RUNNER], input=json.dumps([_rel(page), payload]), cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-6000:]


def _build(out: Path) -> subprocess.CompletedProcess[str]:
    return waiting.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (the docs extra)")
    out = tmp_path_factory.mktemp("site")
    res = _build(out)
    assert res.returncode == 0, f"mkdocs build --strict failed:\n{res.stderr[-6000:]}"
    return out


def test_the_site_builds_strictly(site):
    """``mkdocs build --strict``: broken links, anchors, nav entries and API references fail it."""
    assert (site / "index.html").is_file() and (site / "search" / "search_index.json").is_file()
    assert (site / "reference" / "api" / "env" / "index.html").read_text().count("PhonePlanEnv") > 1


def test_a_broken_link_fails_the_strict_build(tmp_path):
    """The strict build is a real check: the same site with one broken link does not build."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (the docs extra)")
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copytree(DOCS, copy / "docs")
    for pkg in ("phoneenv", "agents", "rl", "apps"):
        (copy / pkg).symlink_to(ROOT / pkg)
    page = copy / "docs" / "getting-started.md"
    page.write_text(page.read_text() + "\nSee [nowhere](concepts/no-such-page.md).\n")
    res = waiting.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(copy / "mkdocs.yml"),
            "-d",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=copy,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert res.returncode != 0 and "no-such-page.md" in res.stderr, res.stderr[-3000:]


# -- in a real browser ----------------------------------------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def served(site):
    """The built site over http on loopback (search needs http: it fetches its index)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _pages(site: Path) -> list[str]:
    """Every page of the site, as a path below its root, from the search index."""
    index = json.loads((site / "search" / "search_index.json").read_text())
    return sorted({doc["location"].split("#", 1)[0] for doc in index["docs"]})


def _open(chromium, url: str):
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.goto(url)
    page.wait_for_load_state("load")
    return page, problems


@pytest.mark.browser
def test_browser_every_page_renders(site, served, chromium):
    """Every page of the site opens with one h1 and no console error or uncaught exception."""
    pages = _pages(site)
    assert len(pages) >= 30 and "" in pages and "guides/add-an-app/" in pages
    for path in pages:
        page, problems = _open(chromium, served + path)
        try:
            assert page.locator("article h1").count() == 1, f"{path or 'index'}: no single h1"
            assert page.locator("article").inner_text().strip(), f"{path}: empty page"
            assert not problems, f"{path}: {problems}"
        finally:
            page.close()


@pytest.mark.browser
def test_browser_search_finds_a_page(served, chromium):
    """Material's search: typing a word lists results, and a result leads to the page about it."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page, problems = _open(chromium, served)
    try:
        box = page.locator("input.md-search__input")
        box.click()
        box.type("collateral")
        results = page.locator(".md-search-result__item")
        results.first.wait_for(timeout=15_000)
        # the list is rebuilt as each letter is typed: wait for the page, then read every link at once
        # (counting items and then reading them one by one races a rebuild)
        with contextlib.suppress(PlaywrightTimeout):
            page.locator(".md-search-result__item a[href*='concepts/verdicts/']").first.wait_for(timeout=15_000)
        links = page.eval_on_selector_all(".md-search-result__item a", "els => els.map(e => e.getAttribute('href'))")
        assert any("concepts/verdicts/" in (href or "") for href in links), links
        page.locator(".md-search-result__item a[href*='concepts/verdicts/']").first.click()
        page.wait_for_load_state("load")
        assert "/concepts/verdicts/" in page.url and page.locator("article h1").inner_text().startswith("Verdicts")
        assert not problems, problems
    finally:
        page.close()
