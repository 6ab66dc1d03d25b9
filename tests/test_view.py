"""`phoneenv view` and `phoneenv compare`: the HTML report of a run and run-to-run differences.

Run folders are made here by `phoneenv eval` (reference and random agents on the sandbox) and by
`run_episodes` with an agent that takes a screenshot. The browser tests drive Debian's chromium
through Playwright (marker ``browser``); they skip, saying why, where either is missing."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from agents.random_agent import RandomAgent
from agents.reference import ReferenceAgent
from phoneenv.cli import app
from phoneenv.contract import Trace
from phoneenv.evaluation import read_results, run_episodes, score, write_results
from phoneenv.tasks import get_task
from phoneenv.view import load_run, render_report, write_report

runner = CliRunner()
REF_TASKS = "clock.set_alarm/0,clock.set_alarm/1,settings.toggle/0"
RANDOM_TASKS = "clock.set_alarm/0,clock.set_alarm/1,settings.toggle/0,settings.toggle/1"
CAPTURE_TASK = "clock.set_alarm/0"


class CaptureAgent:
    """Takes a screenshot, then finishes: a trace whose report shows the screen it captured."""

    name = "capture"

    def reset(self, observation, info):
        self.turn = 0

    def act(self, observation, info):
        self.turn += 1
        if self.turn == 1:
            return json.dumps({"name": "screen.capture", "arguments": {}})
        return json.dumps({"name": "finish", "arguments": {"answer": "I looked at the screen."}})


def _eval(out: Path, agent: str, tasks: str) -> Path:
    res = runner.invoke(app, ["eval", "--agent", agent, "--tasks", tasks, "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Run folders: reference and random (by `phoneenv eval`; random on the same tasks plus one), a
    screenshot-bearing one, and a mixed one (reference on two tasks, random on two others)."""
    root = tmp_path_factory.mktemp("runs")
    ref = _eval(root / "ref", "reference", REF_TASKS)
    rnd = _eval(root / "random", "random", RANDOM_TASKS)
    cap = root / "capture"
    results = run_episodes(CaptureAgent(), [get_task(CAPTURE_TASK)], cap / "traces")
    write_results(cap, results, score("capture", results))
    mixed = root / "mixed"
    results = run_episodes(
        ReferenceAgent(), [get_task("clock.set_alarm/2"), get_task("settings.toggle/2")], mixed / "traces"
    )
    results += run_episodes(
        RandomAgent(), [get_task("clock.set_alarm/3"), get_task("settings.toggle/3")], mixed / "traces"
    )
    write_results(mixed, results, score("mixed", results))
    return {"ref": ref, "random": rnd, "capture": cap, "mixed": mixed}


class _Collect(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def _parse(text: str) -> _Collect:
    p = _Collect()
    p.feed(text)
    return p


def _section(page: str, index: int) -> str:
    start = page.index(f'id="ep-{index}"')
    return page[start : page.index("</details>", start)]


def test_report_lists_every_episode_with_steps_verdict_and_diff(runs):
    """Each result row is an index row and a section; each step's call is shown; the criteria and
    the state diff of clock.set_alarm/0 are those worked out by hand from its goal."""
    path = write_report(runs["ref"], plots=False)
    assert path == runs["ref"] / "report.html"
    page = path.read_text(encoding="utf-8")
    results = read_results(runs["ref"] / "results.jsonl")
    doc = _parse(page)
    rows = [a for t, a in doc.tags if t == "tr" and "data-episode" in a]
    assert [(a["data-success"], a["data-domain"]) for a in rows] == [
        ("yes" if r.success else "no", r.domain) for r in results
    ]
    i = [r.task_id for r in results].index("clock.set_alarm/0")
    sec = _section(page, i)
    trace = Trace.model_validate_json((runs["ref"] / "traces" / "clock.set_alarm-0.jsonl").read_text())
    for step in trace.steps:
        assert f"<b>{step.action.name}</b>" in sec
    for c in trace.verdict.criteria:
        assert c.id in sec
    # the goal: an alarm at 05:00 labelled "Walk the dog" created, the 07:15 one (al_2) switched off
    diff = sec[sec.index("State diff") :]
    cells = re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>", diff)
    assert cells == [("clock.alarms", "al_2", "updated"), ("clock.alarms", "al_4", "created")]
    assert "&quot;enabled&quot;: true" in diff and "&quot;enabled&quot;: false" in diff
    assert "Walk the dog" in diff
    assert 'id="shown">3<' in page and "<script>" in page and "http" not in page.split("<body>")[1].split("<script>")[0]


def test_report_shows_the_captured_screen_pixel_for_pixel(runs):
    """The screenshot trace's report carries the screen `screen.capture` returned: the PNG decodes to
    exactly what a fresh env shows after the same call."""
    page = render_report(load_run(runs["capture"]), plots=False)
    imgs = [a for t, a in _parse(page).tags if t == "img" and a.get("class") == "screen"]
    assert [a["alt"] for a in imgs] == ["screen after step 1", "screen after step 2"]
    shown = np.asarray(Image.open(io.BytesIO(base64.b64decode(imgs[0]["src"].split(",", 1)[1]))).convert("RGB"))
    env = gym.make("PhonePlan-v0", task=CAPTURE_TASK, backend="sandbox", screenshots=True)
    env.reset(seed=0)
    obs, *_ = env.step({"name": "screen.capture", "arguments": {}})
    env.close()
    assert shown.shape == obs["screenshot"].shape and np.array_equal(shown, obs["screenshot"])
    none = render_report(load_run(runs["capture"]), screens="none", plots=False)
    assert 'class="screen"' not in none and "State diff" in none


def test_report_filters_carry_each_episodes_error_kinds(runs):
    """The filter attributes of the random run's rows are the error kinds of each trace's steps."""
    page = render_report(load_run(runs["random"]), screens="none", plots=False)
    rows = [a for t, a in _parse(page).tags if t == "tr" and "data-episode" in a]
    results = read_results(runs["random"] / "results.jsonl")
    assert len(rows) == len(results) == 4
    for a, r in zip(rows, results, strict=True):
        trace = Trace.model_validate_json(Path(r.trace_path).read_text())
        kinds = sorted({s.feedback.error.value for s in trace.steps if not s.feedback.ok}) or ["none"]
        assert a["data-errors"].split() == kinds
    options = re.search(r'<select name="error">(.*?)</select>', page).group(1)
    assert set(re.findall(r'value="([^"]*)"', options)) - {""} == {k for a in rows for k in a["data-errors"].split()}


def test_plotted_rates_are_the_runs_own(runs):
    """The bars of the category and domain plot: success and progress per group, from the rows of
    results.jsonl."""
    from phoneenv.view import _rates

    run = load_run(runs["mixed"])
    results = read_results(runs["mixed"] / "results.jsonl")
    for key in ("category", "domain"):
        want = {}
        for g in sorted({getattr(r, key) for r in results}):
            rs = [r for r in results if getattr(r, key) == g]
            want[g] = (sum(r.success for r in rs) / len(rs), sum(r.progress for r in rs) / len(rs), len(rs))
        assert _rates(run.episodes, key) == want
    assert _rates(run.episodes, "domain")["time"][0] == 0.5  # the reference's success, the random agent's failure


def _hostile_run(src: Path, dst: Path) -> Path:
    """A copy of a run whose trace text is hostile HTML."""
    shutil.copytree(src, dst)
    path = dst / "traces" / "clock.set_alarm-0.jsonl"
    trace = Trace.model_validate_json(path.read_text())
    trace.goal = "<script>window.__pwned = 1</script>"
    trace.steps[0].feedback.result = {"x": '</pre><img src=x onerror="window.__pwned=2">'}
    trace.verdict.answer = "<iframe src=javascript:alert(1)>"
    trace.verdict.criteria[0].reason = "\"'><svg onload=window.__pwned=3>"
    trace.agent = "<b onmouseover=window.__pwned=4>"
    path.write_text(trace.model_dump_json() + "\n")
    return dst


def test_report_escapes_every_string_from_the_run(runs, tmp_path):
    """Trace text is untrusted: no tag from it reaches the page; it shows as text."""
    run = load_run(_hostile_run(runs["ref"], tmp_path / "hostile"))
    run.episodes[0].note = "skip the replay"  # the replay would (rightly) disagree with a doctored trace
    page = render_report(run, plots=False)
    doc = _parse(page)
    assert [t for t, _ in doc.tags if t in ("script", "iframe", "svg")] == ["script"]
    assert not any(k.startswith("on") for _, a in doc.tags for k in a)
    text = "".join(doc.text)
    assert "<script>window.__pwned = 1</script>" in text and "<iframe src=javascript:alert(1)>" in text


def test_a_replay_that_disagrees_with_the_trace_is_said_and_shows_nothing(runs, tmp_path):
    """A trace whose recorded outcome the replay does not reproduce gets a note, no screens, no diff."""
    dst = shutil.copytree(runs["capture"], tmp_path / "doctored")
    path = next((dst / "traces").glob("*.jsonl"))
    trace = Trace.model_validate_json(path.read_text())
    trace.verdict.progress = 0.25
    path.write_text(trace.model_dump_json() + "\n")
    page = render_report(load_run(dst), plots=False)
    assert "replaying the recorded actions gave another outcome" in page
    assert 'class="screen"' not in page and "<th>Before</th>" not in page


def test_load_run_pairs_traces_by_task_and_seed_in_any_layout(runs, tmp_path):
    """Traces moved to ``traces/<task>/seed-<s>.json`` (and the folder moved) still pair with
    their results; a trace with no result row is still shown."""
    dst = shutil.copytree(runs["ref"], tmp_path / "moved")
    for p in list((dst / "traces").glob("*.jsonl")):
        t = Trace.model_validate_json(p.read_text())
        (dst / "traces" / p.stem).mkdir()
        p.rename(dst / "traces" / p.stem / f"seed-{t.seed}.json")
    lines = (dst / "results.jsonl").read_text().splitlines()
    (dst / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    run = load_run(dst)
    assert [(e.task_id, e.result is not None, e.trace is not None) for e in run.episodes] == [
        ("clock.set_alarm/0", True, True),
        ("clock.set_alarm/1", True, True),
        ("settings.toggle/0", False, True),
    ]
    assert all(e.trace.task_id == e.task_id for e in run.episodes)


def test_state_diff_is_masked_with_the_tasks_fixture_secrets(runs, monkeypatch):
    """A fixture secret that shows up in the replayed state is masked in the diff."""
    import phoneenv.intake

    monkeypatch.setattr(phoneenv.intake, "fixture_secrets", lambda fixtures: ("Walk the dog",))
    run = load_run(runs["ref"])
    page = render_report(run, screens="none", plots=False)
    i = [e.task_id for e in run.episodes].index("clock.set_alarm/0")
    diff = _section(page, i).split("State diff")[1]
    assert "Walk the dog" not in diff and "&quot;label&quot;: &quot;***&quot;" in diff


def test_episodes_without_traces_are_listed_and_said_so(runs, tmp_path):
    """A run whose traces are gone still lists its results, each saying its trace is missing."""
    dst = shutil.copytree(runs["ref"], tmp_path / "notraces")
    shutil.rmtree(dst / "traces")
    page = render_report(load_run(dst), plots=False)
    assert page.count("no trace was found for this episode") == 3
    assert page.count("<tr data-episode") == 3


def test_training_metrics_give_a_success_curve(tmp_path):
    """A trainer's folder (metrics.jsonl only) renders a success-against-step plot from its
    train rollout records, ignoring other kinds."""
    from phoneenv.view import _training_curves

    recs = [
        {"kind": "rollout", "mode": "train", "step": 0, "algo": "care", "metrics": {"phone/success": 0.25}},
        {"kind": "log", "step": 1, "loss": 1.0},
        {"kind": "rollout", "mode": "train", "step": 1, "metrics": {"phone/success": 0.5}},
        {"kind": "rollout", "mode": "eval", "step": 1, "metrics": {"phone/success": 0.75}},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs) + "not json\n")
    run = load_run(tmp_path)
    assert _training_curves(run.metrics) == {"train": [(0.0, 0.25), (1.0, 0.5)], "eval": [(1.0, 0.75)]}
    page = render_report(run)
    assert "Success against training step" in page and page.count('class="plot"') == 1
    assert "<title>phoneenv run: care" in page


def test_scoreboard_figures_the_report_does_not_know_are_shown_as_they_are(runs, tmp_path):
    """Fields a newer scoreboard carries (pass@k, the model's settings) are shown, escaped."""
    dst = shutil.copytree(runs["ref"], tmp_path / "more")
    board = json.loads((dst / "scoreboard.json").read_text())
    board["pass_at_k"] = {"1": 0.5, "2": 0.75}
    board["model"] = {"name": "<b>m</b>"}
    (dst / "scoreboard.json").write_text(json.dumps(board))
    page = render_report(load_run(dst), screens="none", plots=False)
    more = page[page.index("More of scoreboard.json") :]
    assert "&quot;pass_at_k&quot;: {" in more and "&quot;2&quot;: 0.75" in more and "&lt;b&gt;m&lt;/b&gt;" in more


def test_view_cli_writes_the_report_and_refuses_what_is_not_a_run(runs, tmp_path):
    out = tmp_path / "r" / "page.html"
    res = runner.invoke(app, ["view", str(runs["capture"]), "--out", str(out), "--screens", "all"])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert page.count('class="screen"') == 3 and page.count('class="plot"') == 2  # reset + 2 steps
    (tmp_path / "empty").mkdir()
    res = runner.invoke(app, ["view", str(tmp_path / "empty")])
    assert res.exit_code == 2 and "not a run folder" in res.output
    res = runner.invoke(app, ["view", str(runs["capture"]), "--screens", "some"])
    assert res.exit_code == 2 and "captures, all or none" in res.output


def test_view_without_its_extra_says_so_before_replaying_anything(runs, monkeypatch):
    """No matplotlib: ``render_report`` raises MissingExtra before the first replay (replays take
    seconds an episode, so the check comes first); without plots it needs no extra."""
    import sys

    import phoneenv.view as view
    from phoneenv.extras import MissingExtra

    replayed: list[str] = []
    monkeypatch.setattr(view, "_replay", lambda e, screens: replayed.append(e.task_id))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtra, match="view"):
        view.render_report(view.load_run(runs["ref"]))
    assert replayed == []
    view.render_report(view.load_run(runs["ref"]), plots=False)
    assert replayed


# -- in a real browser ----------------------------------------------------------------------------


def _open(chromium, path: Path):
    """A page showing ``path``, and the console errors and uncaught exceptions it logs."""
    page = chromium.new_page(viewport={"width": 1200, "height": 900})
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.goto(path.resolve().as_uri())
    page.wait_for_load_state("load")
    return page, problems


def _visible_rows(page) -> int:
    return page.locator("tr[data-episode]:visible").count()


@pytest.mark.browser
def test_browser_report_loads_clean_and_its_filters_hide_rows(runs, chromium, tmp_path):
    """The mixed run's report loads with no console error, every image decodes, and each filter
    leaves visible exactly the rows (and sections) results.jsonl says match."""
    path = write_report(runs["mixed"], tmp_path / "mixed.html")
    results = read_results(runs["mixed"] / "results.jsonl")
    page, problems = _open(chromium, path)
    try:
        assert page.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
        assert page.locator("img.plot").count() == 2
        assert _visible_rows(page) == len(results) == page.locator("details.episode:visible").count()
        failures = sum(not r.success for r in results)
        assert 0 < failures < len(results), "the random run should hold both outcomes"
        page.select_option('select[name="success"]', "no")
        assert _visible_rows(page) == failures == page.locator("details.episode:visible").count()
        assert page.locator("#shown").inner_text() == str(failures)
        page.select_option('select[name="success"]', "")
        page.select_option('select[name="domain"]', "time")
        assert _visible_rows(page) == sum(r.domain == "time" for r in results)
        page.select_option('select[name="domain"]', "")
        traces = [Trace.model_validate_json(Path(r.trace_path).read_text()) for r in results]
        kind = next(s.feedback.error.value for t in traces for s in t.steps if not s.feedback.ok)
        page.select_option('select[name="error"]', kind)
        assert _visible_rows(page) == sum(
            any(s.feedback.error and s.feedback.error.value == kind for s in t.steps) for t in traces
        )
        assert problems == []
    finally:
        page.close()


def _blue(png: bytes) -> int:
    """Pixels of the sandbox screens' header blue (about RGB 13-30, 110-120, 253)."""
    a = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    return int(((a[..., 0] < 60) & (a[..., 1] > 95) & (a[..., 1] < 135) & (a[..., 2] > 235)).sum())


@pytest.mark.browser
def test_browser_screenshot_of_a_trace_shows_its_screens(runs, chromium, tmp_path):
    """A screenshot of the capture episode's section holds the phone screen's pixels (its blue
    header), which vanish when the page's images are hidden: the images render, not just exist."""
    path = write_report(runs["capture"], tmp_path / "capture.html")
    page, problems = _open(chromium, path)
    try:
        section = page.locator("#ep-0")
        shown = _blue(section.screenshot())
        page.evaluate("document.querySelectorAll('img.screen').forEach(i => i.style.visibility = 'hidden')")
        hidden = _blue(section.screenshot())
        assert shown > 2000 and hidden == 0, (shown, hidden)
        assert problems == []
    finally:
        page.close()


@pytest.mark.browser
def test_browser_hostile_trace_text_runs_nothing(runs, chromium, tmp_path):
    """Script-bearing trace text shows as text and runs nothing (no flag set, no dialog)."""
    path = write_report(_hostile_run(runs["ref"], tmp_path / "hostile"), tmp_path / "hostile.html", plots=False)
    page, problems = _open(chromium, path)
    try:
        page.locator("#ep-0 p").first.hover()
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert "<script>window.__pwned = 1</script>" in page.locator("#ep-0").inner_text()
        assert problems == []
    finally:
        page.close()


# -- compare --------------------------------------------------------------------------------------


def _by_task(run: Path) -> dict[str, tuple[bool, float, int]]:
    """Per task of a run, read straight from its files: (success, progress, tool calls)."""
    out = {}
    for r in read_results(run / "results.jsonl"):
        trace = Trace.model_validate_json(Path(r.trace_path).read_text())
        out[r.task_id] = (r.success, r.progress, trace.verdict.tool_calls)
    return out


def test_compare_pairs_tasks_and_reports_flips_and_deltas(runs):
    """Random (A) against reference (B): the change of each task and its deltas are those read
    from the two runs' results and traces; the task only A ran is said so."""
    from phoneenv.view import compare_runs

    cmp = compare_runs(runs["random"], runs["ref"])
    a, b = _by_task(runs["random"]), _by_task(runs["ref"])
    want = {}
    for task, (ok_a, prog_a, calls_a) in a.items():
        if task not in b:
            want[task] = ("only in A", None, None)
            continue
        ok_b, prog_b, calls_b = b[task]
        change = "same" if ok_a == ok_b else ("fixed" if ok_b else "broken")
        want[task] = (change, prog_b - prog_a, calls_b - calls_a)
    got = {p.task_id: (p.change, p.progress_delta, p.calls_delta) for p in cmp.pairs}
    assert got == want and len(cmp.pairs) == 4
    assert [c for c, *_ in want.values()].count("fixed") == 3  # the random agent fails where the reference succeeds
    assert cmp.counts()["only in A"] == 1 and sum(cmp.counts().values()) == 4
    summ = cmp.summary()
    shared = [t for t in a if t in b]
    assert summ["A"]["episodes"] == summ["B"]["episodes"] == 3
    assert summ["B"]["success"] == sum(b[t][0] for t in shared) / 3
    assert summ["A"]["tool_calls"] == sum(a[t][2] for t in shared) / 3


def test_compare_pairs_other_seeds_by_task_in_order(runs, tmp_path):
    """Runs made at other seeds still pair, task by task."""
    from phoneenv.view import compare_runs

    dst = shutil.copytree(runs["ref"], tmp_path / "seed7")
    lines = [json.loads(x) for x in (dst / "results.jsonl").read_text().splitlines()]
    (dst / "results.jsonl").write_text("".join(json.dumps({**r, "seed": 7}) + "\n" for r in lines))
    shutil.rmtree(dst / "traces")
    cmp = compare_runs(runs["ref"], dst)
    assert [(p.task_id, p.change, p.a.seed, p.b.seed) for p in cmp.pairs] == [
        (r["task_id"], "same", 0, 7) for r in lines
    ]


def test_compare_cli_prints_and_writes_an_escaped_page(runs, tmp_path, monkeypatch):
    """The command prints the counts and the differing tasks, and its HTML escapes run text."""
    from rich.console import Console

    import phoneenv.cli.view

    monkeypatch.setattr(phoneenv.cli.view, "console", Console(width=200))  # no folded task ids
    hostile = shutil.copytree(runs["random"], tmp_path / "hostile")
    cfg = json.loads((hostile / "run.json").read_text())
    (hostile / "run.json").write_text(json.dumps({**cfg, "agent": "<script>window.__pwned=1</script>"}))
    out = tmp_path / "cmp.html"
    res = runner.invoke(app, ["compare", str(hostile), str(runs["ref"]), "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert "fixed 3 · broken 0 · same 0 · infrastructure 0 · only in A 1 · only in B 0" in res.output
    assert "settings.toggle/1" in res.output and "+100.0" in res.output
    page = out.read_text()
    assert page.count("<script") == 1 and "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    res = runner.invoke(app, ["compare", str(runs["ref"]), str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "no such run folder" in " ".join(res.output.split())


@pytest.mark.browser
def test_browser_compare_page_loads_clean_and_filters_by_change(runs, chromium, tmp_path):
    from phoneenv.view import compare_runs, render_compare_html

    cmp = compare_runs(runs["random"], runs["ref"])
    path = tmp_path / "cmp.html"
    path.write_text(render_compare_html(cmp), encoding="utf-8")
    page, problems = _open(chromium, path)
    try:
        rows = page.locator("tr[data-change]:visible")
        assert rows.count() == len(cmp.pairs)
        for change in ("fixed", "same", "only in A"):
            page.select_option('select[name="change"]', change)
            assert rows.count() == cmp.counts()[change]
        page.select_option('select[name="change"]', "differs")
        assert rows.count() == sum(p.differs for p in cmp.pairs)
        assert problems == []
    finally:
        page.close()
