"""See what happened in a run: a static HTML report of an eval folder, and run-to-run comparison.

``write_report(run_dir)`` reads what ``phoneenv eval`` (or :func:`~phoneenv.evaluation.run_episodes`
with a :class:`~phoneenv.evaluation.RunFolder`) wrote, ``run.json``, ``results.jsonl``,
``scoreboard.json`` and the traces under ``traces/`` (any depth, ``*.json`` or ``*.jsonl``, one
:class:`~phoneenv.contract.Trace` a line), and, when the folder holds a trainer's
``metrics.jsonl``, its rollout records; it writes one self-contained HTML file (inline CSS, script
and images; no server, no network: its Content-Security-Policy forbids any fetch)::

    from phoneenv.view import write_report
    path = write_report("runs/eval")            # runs/eval/report.html

The page holds the scoreboard, plots (success and progress by category and by domain, output
tokens and tool calls per episode, and success against training step from ``metrics.jsonl``), then
one section per episode: the goal, every step (frame, call, feedback), the screens, the verdict
with each criterion, and the state diff. Filters (category, domain, success, error kind) hide the
episodes that do not match, in the browser.

Traces hold no images and no state: for a ``sandbox`` episode the report replays the recorded
actions at the recorded seed (the sandbox is deterministic; milliseconds an episode) to render the
screens and the diff between the fixture state and the end state. A replay whose verdict differs
from the recorded one (a task changed since the run, a secret masked as ``***`` in the trace) is
said so and shows neither. Other backends' episodes show the trace alone. The diff is masked with
the task's fixture secrets.

Every string from a run (goals, answers, arguments, tool results, reasons) is untrusted and is
HTML-escaped; images are PNG data URLs made here.

``compare_runs(a, b)`` pairs two runs' episodes by (task, seed) and lists success flips and the
change of progress, output tokens and tool calls; :func:`render_compare_html` renders it.
"""

from __future__ import annotations

import base64
import html
import io
import json
import logging
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from phoneenv.contract import Trace
from phoneenv.evaluation import CATEGORY_LABELS, EpisodeResult, RunFolder, read_results
from phoneenv.tracefiles import jsonl_lines, read_json_file

log = logging.getLogger(__name__)

__all__ = [
    "Comparison",
    "Episode",
    "EpisodePair",
    "Run",
    "ScreenMode",
    "compare_runs",
    "load_run",
    "render_compare_html",
    "render_report",
    "write_report",
]

ScreenMode = Literal["none", "captures", "all"]
"""Which screens a report shows for a replayed sandbox episode: ``none``; ``captures`` (the
default): the screen returned by each ``returns_image`` call (``screen.capture``) and the end
screen; ``all``: the screen after every step."""

REPORT_NAME = "report.html"
METRICS_NAME = "metrics.jsonl"
MAX_JSON_CHARS = 4000
"""Longest JSON text (characters) a report shows for one argument set, result or record; longer
text is cut with a note."""
OPEN_EPISODES = 20
"""Up to this many episodes, a report shows every episode open; beyond, each opens on a click."""


@dataclass
class Episode:
    """One episode of a run: its result row and/or its trace, and what a replay added.

    ``screens``: ``(step, PNG bytes)`` pairs, step 0 the screen at reset; ``diff``: the state's
    changes ``{"table", "id", "kind", "old", "new"}`` (None when not replayed); ``note``: why the
    screens and diff are missing, in words (None when replayed or not asked)."""

    result: EpisodeResult | None
    trace: Trace | None
    screens: list[tuple[int, bytes]] = field(default_factory=list)
    diff: list[dict[str, Any]] | None = None
    note: str | None = None

    @property
    def task_id(self) -> str:
        """The task's id."""
        return self.result.task_id if self.result is not None else self.trace.task_id  # type: ignore[union-attr]

    @property
    def seed(self) -> int | None:
        """The episode's seed (None when unknown)."""
        if self.result is not None and self.result.seed is not None:
            return self.result.seed
        return self.trace.seed if self.trace is not None else None

    @property
    def category(self) -> str:
        """The task's category (``tool``, ``memory``, ``skills``, ``subagent``)."""
        return self.result.category if self.result is not None else self.trace.category.value  # type: ignore[union-attr]

    @property
    def domain(self) -> str:
        """The task's domain."""
        return self.result.domain if self.result is not None else self.trace.domain.value  # type: ignore[union-attr]

    @property
    def success(self) -> bool:
        """Whether the episode succeeded."""
        if self.result is not None:
            return self.result.success
        return bool(self.trace is not None and self.trace.verdict is not None and self.trace.verdict.success)

    @property
    def progress(self) -> float:
        """Progress in [0, 1]."""
        if self.result is not None:
            return self.result.progress
        v = self.trace.verdict if self.trace is not None else None
        return v.progress if v is not None else 0.0

    @property
    def infrastructure_error(self) -> bool:
        """Whether the episode was lost to the world (device, server), not the agent."""
        if self.result is not None:
            return self.result.infrastructure_error
        v = self.trace.verdict if self.trace is not None else None
        return bool(v is not None and v.infrastructure_error)

    @property
    def output_tokens(self) -> int:
        """The agent's output tokens (0 when it reported none)."""
        if self.result is not None:
            return self.result.output_tokens
        v = self.trace.verdict if self.trace is not None else None
        return (v.output_tokens or 0) if v is not None else 0

    @property
    def tool_calls(self) -> int:
        """Tool calls the verdict counted, else the steps taken."""
        v = self.trace.verdict if self.trace is not None else None
        if v is not None:
            return v.tool_calls
        return self.result.steps if self.result is not None else 0

    @property
    def error_kinds(self) -> list[str]:
        """The feedback error kinds of its steps (sorted, distinct), ``infrastructure`` for an
        infrastructure-error episode, or ``["none"]``."""
        kinds: set[str] = set()
        if self.trace is not None:
            kinds = {s.feedback.error.value for s in self.trace.steps if s.feedback.error is not None}
        if self.infrastructure_error:
            kinds.add("infrastructure")
        return sorted(kinds) or ["none"]


@dataclass
class Run:
    """A run folder as read: its ``run.json`` (``config``, {} when absent), ``scoreboard.json``
    (``scoreboard``, None when absent), episodes in ``results.jsonl`` order (then traces with no
    result row), and the trainer's ``metrics.jsonl`` records (``metrics``)."""

    path: Path
    config: dict[str, Any]
    scoreboard: dict[str, Any] | None
    episodes: list[Episode]
    metrics: list[dict[str, Any]]

    @property
    def agent(self) -> str:
        """The agent's name, from ``run.json``, the scoreboard, a trace or the trainer's algorithm
        in ``metrics.jsonl`` (``?`` when none says)."""
        name = self.config.get("agent") or (self.scoreboard or {}).get("agent")
        if not name:
            name = next((e.trace.agent for e in self.episodes if e.trace is not None and e.trace.agent), None)
        if not name:  # a trainer's folder: its algorithm
            name = next((r["algo"] for r in self.metrics if r.get("algo")), None)
        return str(name or "?")


def _read_json(path: Path) -> Any:
    try:
        return read_json_file(path)
    except FileNotFoundError:
        return None


def _read_traces(folder: Path) -> list[tuple[Path, Trace]]:
    out: list[tuple[Path, Trace]] = []
    if not folder.is_dir():
        return out
    for path in sorted(p for p in folder.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file()):
        for n, line in enumerate(jsonl_lines(path.read_text(encoding="utf-8", errors="replace")), 1):
            if not line.strip():
                continue
            try:
                out.append((path, Trace.model_validate_json(line)))
            except ValidationError as exc:
                log.warning("%s, line %d: not a trace, skipped (%s)", path, n, exc.errors()[0]["msg"])
    return out


def _read_metrics(path: Path) -> list[dict[str, Any]]:
    records = []
    for n, line in enumerate(jsonl_lines(path.read_text(encoding="utf-8", errors="replace")), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            log.warning("%s, line %d: not JSON, skipped", path, n)
            continue
        if isinstance(rec, dict):
            records.append(rec)
    return records


def load_run(path: str | Path) -> Run:
    """Read a run folder (see the module's docstring for what it may hold).

    Episodes are paired with their traces by (task id, seed), else by the trace file's name.

    Raises:
        FileNotFoundError: ``path`` is not a folder, or holds no results, traces nor metrics.
        ValueError: a ``run.json``/``scoreboard.json`` that is not JSON, or a ``results.jsonl``
            line other than the last that is not a result.
    """
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such run folder")
    config = _read_json(root / RunFolder.MANIFEST) or {}
    board = _read_json(root / RunFolder.SCOREBOARD)
    results = read_results(root / RunFolder.RESULTS)
    traces = _read_traces(root / "traces")
    metrics_path = next(iter(sorted(root.rglob(METRICS_NAME))), None)
    metrics = _read_metrics(metrics_path) if metrics_path is not None else []
    if not results and not traces and not metrics:
        raise FileNotFoundError(f"{root}: no results.jsonl, traces/ nor {METRICS_NAME}: not a run folder")
    by_key: dict[tuple[str, int | None], Trace] = {}
    by_name: dict[str, Trace] = {}
    for p, t in traces:
        by_key.setdefault((t.task_id, t.seed), t)
        by_name.setdefault(p.name, t)
    used: set[int] = set()
    episodes = []
    for r in results:
        t = by_key.get((r.task_id, r.seed))
        if t is None and r.trace_path:
            t = by_name.get(Path(r.trace_path).name)
            if t is not None and t.task_id != r.task_id:
                t = None
        if t is not None:
            used.add(id(t))
        episodes.append(Episode(r, t))
    for _, t in traces:
        if id(t) not in used:
            used.add(id(t))
            episodes.append(Episode(None, t))
    config = config if isinstance(config, dict) else {}
    return Run(root, config, board if isinstance(board, dict) else None, episodes, metrics)


# -- replay ---------------------------------------------------------------------------------------


def _png(image: Any) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def _replay(episode: Episode, screens: ScreenMode) -> None:
    """Fill ``episode``'s screens and diff by replaying its trace in the sandbox (see the module's
    docstring), or its note saying why not."""
    import gymnasium as gym

    from phoneenv.intake import Masker, fixture_secrets
    from phoneenv.state import diff_tables
    from phoneenv.tasks import get_task

    trace = episode.trace
    if trace is None:
        episode.note = "no trace was found for this episode"
        return
    if trace.backend != "sandbox":
        episode.note = (
            f"played on the {trace.backend} backend: only sandbox episodes are replayed for screens and state"
        )
        return
    if trace.verdict is None or not trace.steps:
        episode.note = "the trace has no verdict or no step: not replayed"
        return
    try:
        task = get_task(trace.task_id)
    except KeyError:
        episode.note = f"task {trace.task_id} is not in this suite: not replayed"
        return
    # the trace's own length as the step limit: a run truncated at its --max-steps ends here too
    env = gym.make("PhonePlan-v0", task=task.id, backend="sandbox", max_steps=max(len(trace.steps), 1),
                   disable_env_checker=True)  # fmt: skip
    try:
        core = env.unwrapped
        core.reset(seed=trace.seed, options={"task": task.id})
        before = core.backend.frozen_tables()
        shots: list[tuple[int, bytes]] = []
        if screens == "all":
            shots.append((0, _png(core.backend.screenshot())))
        info: dict[str, Any] = {}
        done = False
        for step in trace.steps:
            if done:
                break
            action: Any = step.action.model_dump(mode="json") if step.action is not None else (step.raw or "")
            _, _, term, trunc, info = core.step(action)
            done = term or trunc
            if screens == "all" or (screens == "captures" and (done or _returns_image(core, step))):
                image = getattr(info.get("feedback"), "image", None)  # what a returns_image tool gave
                shots.append((step.index, _png(image if image is not None else core.backend.screenshot())))
        verdict = info.get("verdict") or {}
        if (
            not done
            or verdict.get("success") != trace.verdict.success
            or verdict.get("progress") != trace.verdict.progress
        ):
            episode.note = (
                "replaying the recorded actions gave another outcome (the task changed since the run, or an "
                "argument was stored masked): screens and state diff not shown"
            )
            return
        masker = Masker(fixture_secrets(task.fixtures), {p for s in core.tool_specs for p in s.secret_parameters})
        after = core.backend.tables()
        changes = diff_tables(before, after, ignore=core.backend.transient_tables())
        episode.diff = [
            masker.value({"table": c.table, "id": c.id, "kind": c.kind, "old": _plain(c.old), "new": _plain(c.new)})
            for c in changes
        ]
        episode.screens = shots
    except Exception as exc:  # a replay is a best effort; the report keeps the trace
        log.warning("replay of %s failed", trace.task_id, exc_info=True)
        episode.note = f"the replay failed ({type(exc).__name__}): screens and state diff not shown"
    finally:
        env.close()


def _returns_image(core: Any, step: Any) -> bool:
    if step.action is None:
        return False
    return any(s.name == step.action.name and s.returns_image for s in core.tool_specs)


def _plain(value: Any) -> Any:
    """A record as JSON data (tuples as lists, anything else as its str)."""
    return json.loads(json.dumps(value, default=str)) if value is not None else None


# -- plots ----------------------------------------------------------------------------------------


def _pyplot() -> Any:
    from phoneenv.extras import require

    require("view", "matplotlib", feature="phoneenv view (plots)")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _rates(episodes: Sequence[Episode], key: str) -> dict[str, tuple[float, float, int]]:
    groups: dict[str, list[Episode]] = {}
    for e in episodes:
        if not e.infrastructure_error:
            groups.setdefault(getattr(e, key), []).append(e)
    return {
        k: (sum(e.success for e in g) / len(g), sum(e.progress for e in g) / len(g), len(g))
        for k, g in sorted(groups.items())
    }


def _plots(run: Run) -> list[tuple[str, bytes]]:
    """(title, PNG) pairs: success and progress by category and domain, tokens and calls per
    episode, and success against step from ``metrics.jsonl``."""
    plt = _pyplot()
    out: list[tuple[str, bytes]] = []
    eps = run.episodes
    if eps:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
        for ax, key, title in ((axes[0], "category", "by category"), (axes[1], "domain", "by domain")):
            rates = _rates(eps, key)
            names = [CATEGORY_LABELS_BY_VALUE.get(k, k) if key == "category" else k for k in rates]
            xs = range(len(names))
            ax.bar([x - 0.2 for x in xs], [100 * r[0] for r in rates.values()], 0.4, label="success %")
            ax.bar([x + 0.2 for x in xs], [100 * r[1] for r in rates.values()], 0.4, label="progress %")
            ax.set_xticks(list(xs), [f"{n}\n({r[2]})" for n, r in zip(names, rates.values(), strict=True)], fontsize=8)
            ax.set_ylim(0, 100)
            ax.set_title(f"Success and progress {title}")
            ax.legend(fontsize=8)
        out.append(("Success and progress by category and domain", _save(plt, fig)))
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.2))
        idx = list(range(1, len(eps) + 1))
        colours = ["#2a9d3a" if e.success else "#c0392b" for e in eps]
        axes[0].bar(idx, [e.output_tokens for e in eps], color=colours)
        axes[0].set_title("Output tokens per episode (green: success)")
        axes[1].bar(idx, [e.tool_calls for e in eps], color=colours)
        axes[1].set_title("Tool calls per episode (green: success)")
        for ax in axes:
            ax.set_xlabel("episode")
        out.append(("Tokens and calls per episode", _save(plt, fig)))
    curves = _training_curves(run.metrics)
    if curves:
        fig, ax = plt.subplots(figsize=(11, 3.2))
        for mode, pts in curves.items():
            ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], marker="o", label=f"{mode} success %")
        ax.set_xlabel("training step")
        ax.set_ylim(0, 100)
        ax.set_title("Success against training step (metrics.jsonl)")
        ax.legend(fontsize=8)
        out.append(("Success against training step", _save(plt, fig)))
    return out


CATEGORY_LABELS_BY_VALUE = {c.value: label for c, label in CATEGORY_LABELS.items()}


def _save(plt: Any, fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _training_curves(metrics: Iterable[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """Per mode (``train``, ``eval``), ``(step, success)`` points of the ``rollout`` records."""
    out: dict[str, list[tuple[float, float]]] = {}
    for rec in metrics:
        m = rec.get("metrics")
        if rec.get("kind") != "rollout" or not isinstance(m, dict) or "phone/success" not in m:
            continue
        try:
            out.setdefault(str(rec.get("mode", "train")), []).append((float(rec["step"]), float(m["phone/success"])))
        except (KeyError, TypeError, ValueError):
            continue
    return out


# -- HTML -----------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:1em;color:#222;background:#fafafa}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.5em}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left}th{background:#eee}
.ok{color:#1e7b30;font-weight:bold}.fail{color:#b02a1a;font-weight:bold}.muted{color:#777}
pre{margin:0;white-space:pre-wrap;word-break:break-word;max-height:20em;overflow:auto;font-size:12px}
.episode{border:1px solid #bbb;background:#fff;margin:1em 0;padding:.5em 1em}
.episode>summary{cursor:pointer;font-weight:bold}.filters{background:#eef;padding:.5em}
.filters label{margin-right:1em}.screen{max-width:180px;border:1px solid #999;display:block}
.plot{max-width:100%}.note{background:#fff7d6;padding:.3em .6em}
"""

_FILTER_JS = """
(function(){
  var sel = document.querySelectorAll('.filters select');
  function apply(){
    var want = {};
    sel.forEach(function(s){ want[s.name] = s.value; });
    var shown = 0, all = document.querySelectorAll('[data-episode]');
    all.forEach(function(el){
      var ok = (!want.category || el.dataset.category === want.category)
        && (!want.domain || el.dataset.domain === want.domain)
        && (!want.success || el.dataset.success === want.success)
        && (!want.error || el.dataset.errors.split(' ').indexOf(want.error) >= 0);
      el.hidden = !ok;
      if (ok && el.tagName === 'TR') shown++;
    });
    document.getElementById('shown').textContent = shown;
  }
  sel.forEach(function(s){ s.addEventListener('change', apply); });
  apply();
})();
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _json_block(value: Any) -> str:
    text = json.dumps(value, indent=1, ensure_ascii=False, default=str)
    if len(text) > MAX_JSON_CHARS:
        text = text[:MAX_JSON_CHARS] + f"\n… ({len(text) - MAX_JSON_CHARS} more characters)"
    return f"<pre>{_e(text)}</pre>"


def _img(png: bytes, alt: str, cls: str) -> str:
    return f'<img class="{cls}" alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def _pct(x: Any) -> str:
    if x is None:
        return "—"
    return f"{100 * x:.1f}" if isinstance(x, (int, float)) else _e(x)


def _scoreboard_html(run: Run) -> str:
    board = run.scoreboard
    parts = []
    if board:
        for key, title in (("categories", "By category"), ("domains", "By domain")):
            rows = "".join(
                f"<tr><td>{_e(r.get('label'))}</td><td>{_e(r.get('episodes'))}</td>"
                f"<td>{_pct(r.get('success'))}</td><td>{_pct(r.get('progress'))}</td></tr>"
                for r in board.get(key) or []
                if isinstance(r, dict)
            )
            parts.append(f"<h3>{title}</h3><table><tr><th></th><th>Episodes</th><th>Success %</th>"
                         f"<th>Progress %</th></tr>{rows}</table>")  # fmt: skip
        figures = [
            ("mean steps", board.get("mean_steps")),
            ("error rate", board.get("error_rate")),
            ("infrastructure errors", board.get("infrastructure_errors")),
            ("mean output tokens", board.get("mean_output_tokens")),
            ("wall time (s)", board.get("wall_s")),
        ]
        parts.append("<p>" + " · ".join(f"{_e(k)} {_e(_num(v))}" for k, v in figures if v is not None) + "</p>")
        known = {"agent", "categories", "domains", "mean_steps", "error_rate", "infrastructure_errors"}
        known |= {"mean_output_tokens", "wall_s"}
        other = {k: v for k, v in board.items() if k not in known and v not in (None, {}, [])}
        if other:  # pass@k, the model's settings, the farm block...: shown as they are
            parts.append(f"<details open><summary>More of scoreboard.json</summary>{_json_block(other)}</details>")
    else:
        parts.append('<p class="muted">no scoreboard.json in this folder</p>')
    return "".join(parts)


def _num(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _filters_html(episodes: Sequence[Episode]) -> str:
    def select(name: str, label: str, values: Iterable[str], names: dict[str, str] | None = None) -> str:
        opts = "".join(f'<option value="{_e(v)}">{_e((names or {}).get(v, v))}</option>' for v in values)
        return f'<label>{label} <select name="{name}"><option value="">all</option>{opts}</select></label>'

    kinds = sorted({k for e in episodes for k in e.error_kinds})
    return (
        '<div class="filters">'
        + select("category", "Category", sorted({e.category for e in episodes}), CATEGORY_LABELS_BY_VALUE)
        + select("domain", "Domain", sorted({e.domain for e in episodes}))
        + select("success", "Outcome", ["yes", "no"], {"yes": "success", "no": "failure"})
        + select("error", "Error kind", kinds)
        + f' <span><span id="shown">{len(episodes)}</span> of {len(episodes)} episodes shown</span></div>'
    )


def _data_attrs(e: Episode) -> str:
    return (
        f'data-episode="" data-category="{_e(e.category)}" data-domain="{_e(e.domain)}" '
        f'data-success="{"yes" if e.success else "no"}" data-errors="{_e(" ".join(e.error_kinds))}"'
    )


def _outcome(e: Episode) -> str:
    if e.infrastructure_error:
        return '<span class="fail">infrastructure error</span>'
    return '<span class="ok">success</span>' if e.success else '<span class="fail">failure</span>'


def _episode_html(i: int, e: Episode, is_open: bool) -> str:
    t = e.trace
    head = (
        f'<details class="episode" id="ep-{i}" {_data_attrs(e)}{" open" if is_open else ""}><summary>{_e(e.task_id)} · seed {_e(e.seed)} · '
        f"{_outcome(e)} · progress {_pct(e.progress)}%</summary>"
    )
    if t is None:
        return head + f'<p class="note">{_e(e.note or "no trace was found for this episode")}</p></details>'
    meta = (
        f"<p>{_e(CATEGORY_LABELS_BY_VALUE.get(e.category, e.category))} · domain {_e(e.domain)} · "
        f"backend {_e(t.backend)} · agent {_e(t.agent or '?')}</p><p><b>Goal:</b> {_e(t.goal)}</p>"
    )
    screens = dict(e.screens)
    rows = []
    for s in t.steps:
        call = (
            f"<b>{_e(s.action.name)}</b>{_json_block(s.action.arguments)}"
            if s.action is not None
            else f'<span class="fail">unparsed</span><pre>{_e(s.raw or "")}</pre>'
        )
        fb = s.feedback
        if fb.ok:
            feedback = '<span class="ok">ok</span>' + _json_block(fb.result)
        else:
            extra = {k: v for k, v in fb.model_dump(mode="json", exclude_none=True).items() if k not in ("ok", "error")}
            feedback = f'<span class="fail">{_e(fb.error.value if fb.error else "error")}</span>' + _json_block(extra)
        shot = _img(screens[s.index], f"screen after step {s.index}", "screen") if s.index in screens else ""
        tokens = _e(json.dumps(s.tokens)) if s.tokens else ""
        rows.append(f"<tr><td>{s.index}</td><td>{_e(s.frame)}</td><td>{call}</td><td>{feedback}</td>"
                    f"<td>{_e(s.clock)}<br>{tokens}</td><td>{shot}</td></tr>")  # fmt: skip
    start = _img(screens[0], "screen at reset", "screen") if 0 in screens else ""
    steps = (
        "<h4>Steps</h4>" + (f"<p>At reset:</p>{start}" if start else "")
        + "<table><tr><th>#</th><th>Frame</th><th>Call</th><th>Feedback</th><th>Clock · tokens</th><th>Screen</th></tr>"
        + "".join(rows) + "</table>"
    )  # fmt: skip
    return head + meta + steps + _verdict_html(t) + _diff_html(e) + "</details>"


def _verdict_html(t: Trace) -> str:
    v = t.verdict
    if v is None:
        return '<h4>Verdict</h4><p class="muted">none recorded</p>'
    crit = "".join(
        f"<tr><td>{_e(c.id)}</td><td>{_e(c.kind)}</td><td>{'<span class=ok>pass</span>' if c.passed else '<span class=fail>fail</span>'}"
        f"</td><td>{_e(c.reason)}</td></tr>"
        for c in v.criteria
    )
    facts = [
        ("success", v.success), ("progress", f"{100 * v.progress:.1f}%"),
        ("milestones", f"{v.milestones_met}/{v.milestones_total}"), ("steps", v.steps), ("tool calls", v.tool_calls),
        ("errors", v.errors), ("output tokens", v.output_tokens), ("truncated", v.truncated),
    ]  # fmt: skip
    out = "<h4>Verdict</h4><p>" + " · ".join(f"{k} {_e(x)}" for k, x in facts) + "</p>"
    if v.answer is not None or v.answer_value is not None:
        out += f"<p><b>Answer:</b> {_e(v.answer)}</p>"
        if v.answer_value is not None:
            out += _json_block(v.answer_value)
    out += f"<table><tr><th>Criterion</th><th>Kind</th><th></th><th>Reason</th></tr>{crit}</table>"
    if v.collateral:
        out += "<p><b>Collateral changes:</b> " + ", ".join(_e(c) for c in v.collateral) + "</p>"
    if v.inconsistencies:
        out += "<p><b>Inconsistencies:</b> " + "; ".join(_e(c) for c in v.inconsistencies) + "</p>"
    return out


def _diff_html(e: Episode) -> str:
    if e.diff is None:
        return f'<h4>State diff</h4><p class="note">{_e(e.note)}</p>' if e.note else ""
    if not e.diff:
        return '<h4>State diff</h4><p class="muted">no change</p>'
    rows = []
    for c in e.diff:
        old, new = c["old"] or {}, c["new"] or {}
        if c["kind"] == "updated":
            keys = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
            old, new = {k: old.get(k) for k in keys}, {k: new.get(k) for k in keys}
        rows.append(f"<tr><td>{_e(c['table'])}</td><td>{_e(c['id'])}</td><td>{_e(c['kind'])}</td>"
                    f"<td>{_json_block(old) if old else ''}</td><td>{_json_block(new) if new else ''}</td></tr>")  # fmt: skip
    return ("<h4>State diff</h4><table><tr><th>Table</th><th>Id</th><th>Change</th><th>Before</th><th>After</th></tr>"
            + "".join(rows) + "</table>")  # fmt: skip


def _page(title: str, body: str, script: str = "") -> str:
    csp = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
    js = f"<script>{script}</script>" if script else ""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>{body}{js}</body></html>\n"
    )


def render_report(run: Run, *, screens: ScreenMode = "captures", plots: bool = True) -> str:
    """The HTML report of ``run`` (a whole page, see the module's docstring).

    Args:
        run: the run, from :func:`load_run`.
        screens: which screens replayed sandbox episodes show (:data:`ScreenMode`); ``none``
            still replays for the state diff.
        plots: draw the plots (needs matplotlib, the ``view`` extra).

    Raises:
        phoneenv.extras.MissingExtra: ``plots`` without matplotlib (raised before any replay).
    """
    if plots:
        _pyplot()  # the extra is checked before the replays, which take seconds an episode
    for e in run.episodes:
        if e.diff is None and e.note is None:
            _replay(e, screens)
    title = f"phoneenv run: {run.agent} · {run.path.name}"
    index_rows = "".join(
        f'<tr {_data_attrs(e)}><td><a href="#ep-{i}">{_e(e.task_id)}</a></td><td>{_e(e.seed)}</td>'
        f"<td>{_e(CATEGORY_LABELS_BY_VALUE.get(e.category, e.category))}</td><td>{_e(e.domain)}</td>"
        f"<td>{_outcome(e)}</td><td>{_pct(e.progress)}</td><td>{e.tool_calls}</td><td>{e.output_tokens}</td>"
        f"<td>{_e(', '.join(e.error_kinds))}</td></tr>"
        for i, e in enumerate(run.episodes)
    )
    figs = "".join(f"<h3>{_e(t)}</h3>{_img(png, t, 'plot')}" for t, png in _plots(run)) if plots else ""
    config = {k: v for k, v in run.config.items() if k != "task_ids"}
    body = (
        f"<h1>{_e(title)}</h1>"
        f"<details><summary>Run configuration (run.json)</summary>{_json_block(config)}</details>"
        f"<h2>Scoreboard</h2>{_scoreboard_html(run)}{figs}"
        f"<h2>Episodes</h2>{_filters_html(run.episodes)}"
        '<table id="episodes"><tr><th>Task</th><th>Seed</th><th>Category</th><th>Domain</th><th>Outcome</th>'
        f"<th>Progress %</th><th>Calls</th><th>Output tokens</th><th>Errors</th></tr>{index_rows}</table>"
        + "".join(_episode_html(i, e, len(run.episodes) <= OPEN_EPISODES) for i, e in enumerate(run.episodes))
    )
    return _page(title, body, _FILTER_JS)


def write_report(
    run_dir: str | Path, out: str | Path | None = None, *, screens: ScreenMode = "captures", plots: bool = True
) -> Path:
    """Write the HTML report of the run in ``run_dir`` to ``out`` (default
    ``<run_dir>/report.html``) and return its path. Arguments and errors as :func:`load_run` and
    :func:`render_report`."""
    run = load_run(run_dir)
    path = Path(out) if out is not None else run.path / REPORT_NAME
    text = render_report(run, screens=screens, plots=plots)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


# -- compare --------------------------------------------------------------------------------------

Change = Literal["fixed", "broken", "same", "infrastructure", "only in A", "only in B"]


@dataclass
class EpisodePair:
    """One task (and seed) in two runs: its episode in A and in B (None where that run lacks it).

    ``change``: ``fixed`` (failed in A, succeeded in B), ``broken`` (the reverse), ``same``
    outcome, ``infrastructure`` (either episode lost to the world: not a flip), or ``only in
    A``/``only in B``. The deltas are B − A (None unless both ran)."""

    task_id: str
    seed: int | None
    a: Episode | None
    b: Episode | None

    @property
    def change(self) -> Change:
        """How the outcome changed from A to B."""
        if self.a is None:
            return "only in B"
        if self.b is None:
            return "only in A"
        if self.a.infrastructure_error or self.b.infrastructure_error:
            return "infrastructure"
        if self.a.success == self.b.success:
            return "same"
        return "fixed" if self.b.success else "broken"

    def _delta(self, name: str) -> float | None:
        if self.a is None or self.b is None:
            return None
        return getattr(self.b, name) - getattr(self.a, name)

    @property
    def progress_delta(self) -> float | None:
        """Progress B − A (in [-1, 1])."""
        return self._delta("progress")

    @property
    def tokens_delta(self) -> int | None:
        """Output tokens B − A."""
        d = self._delta("output_tokens")
        return None if d is None else int(d)

    @property
    def calls_delta(self) -> int | None:
        """Tool calls B − A."""
        d = self._delta("tool_calls")
        return None if d is None else int(d)

    @property
    def differs(self) -> bool:
        """Whether anything differs: outcome, progress, tokens or calls (or one run lacks it)."""
        return self.change != "same" or any(d for d in (self.progress_delta, self.tokens_delta, self.calls_delta))


@dataclass
class Comparison:
    """Two runs' episodes paired by (task, seed): see :func:`compare_runs`."""

    a: Run
    b: Run
    pairs: list[EpisodePair]

    def counts(self) -> dict[str, int]:
        """Pairs per :attr:`EpisodePair.change`, every kind present (0 when none)."""
        out = dict.fromkeys(("fixed", "broken", "same", "infrastructure", "only in A", "only in B"), 0)
        for p in self.pairs:
            out[p.change] += 1
        return out

    def summary(self) -> dict[str, dict[str, float | int | None]]:
        """Per side (``A``, ``B``), over the pairs both ran outside infrastructure errors:
        ``episodes``, ``success`` and ``progress`` rates, mean ``output_tokens`` and
        ``tool_calls`` (None when no pair qualifies)."""
        both = [p for p in self.pairs if p.change in ("fixed", "broken", "same")]
        out: dict[str, dict[str, float | int | None]] = {}
        for side in ("a", "b"):
            eps = [getattr(p, side) for p in both]
            n = len(eps)

            def mean(name: str, eps: list[Episode] = eps, n: int = n) -> float | None:
                return sum(float(getattr(e, name)) for e in eps) / n if n else None

            out[side.upper()] = {
                "episodes": n,
                "success": mean("success"),
                "progress": mean("progress"),
                "output_tokens": mean("output_tokens"),
                "tool_calls": mean("tool_calls"),
            }
        return out


def compare_runs(a: str | Path | Run, b: str | Path | Run) -> Comparison:
    """Pair the episodes of runs ``a`` and ``b`` (folders or :func:`load_run` results) by (task id,
    seed); episodes of a task left unpaired (the runs used other seeds) pair in order. Pairs come
    in A's order, then B's episodes that A lacks.

    Raises:
        FileNotFoundError, ValueError: as :func:`load_run`.
    """
    run_a = a if isinstance(a, Run) else load_run(a)
    run_b = b if isinstance(b, Run) else load_run(b)
    by_key: dict[tuple[str, int | None], deque[Episode]] = defaultdict(deque)
    for f in run_b.episodes:
        by_key[(f.task_id, f.seed)].append(f)
    partner = [by_key[k].popleft() if by_key.get(k := (e.task_id, e.seed)) else None for e in run_a.episodes]
    taken = {id(m) for m in partner if m is not None}
    by_task: dict[str, deque[Episode]] = defaultdict(deque)  # B's unpaired episodes, by task
    for f in run_b.episodes:
        if id(f) not in taken:
            by_task[f.task_id].append(f)
    pairs = []
    for e, m in zip(run_a.episodes, partner, strict=True):
        if m is None and by_task.get(e.task_id):
            m = by_task[e.task_id].popleft()
            taken.add(id(m))
        pairs.append(EpisodePair(e.task_id, e.seed, e, m))
    pairs += [EpisodePair(f.task_id, f.seed, None, f) for f in run_b.episodes if id(f) not in taken]
    return Comparison(run_a, run_b, pairs)


def _signed(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "—"
    return f"{100 * x:+.1f}" if pct else f"{x:+d}" if isinstance(x, int) else f"{x:+.3g}"


_COMPARE_JS = """
(function(){
  var s = document.querySelector('select[name="change"]');
  function apply(){
    var shown = 0;
    document.querySelectorAll('tr[data-change]').forEach(function(tr){
      var ok = !s.value || (s.value === 'differs' ? tr.dataset.differs === 'yes' : tr.dataset.change === s.value);
      tr.hidden = !ok;
      if (ok) shown++;
    });
    document.getElementById('shown').textContent = shown;
  }
  s.addEventListener('change', apply);
  apply();
})();
"""


def render_compare_html(cmp: Comparison) -> str:
    """A self-contained HTML page of ``cmp``: both runs' summaries, the change counts, and one
    row per pair, filterable by change."""
    summ = cmp.summary()
    title = f"phoneenv compare: {cmp.a.agent} ({cmp.a.path.name}) → {cmp.b.agent} ({cmp.b.path.name})"
    head = "".join(
        f"<tr><td>{side} · {_e(run.agent)} · {_e(run.path)}</td><td>{_e(summ[side]['episodes'])}</td>"
        f"<td>{_pct(summ[side]['success'])}</td><td>{_pct(summ[side]['progress'])}</td>"
        f"<td>{_e(_num(summ[side]['output_tokens']))}</td><td>{_e(_num(summ[side]['tool_calls']))}</td></tr>"
        for side, run in (("A", cmp.a), ("B", cmp.b))
    )
    counts = " · ".join(f"{_e(k)} {v}" for k, v in cmp.counts().items())
    rows = []
    for p in cmp.pairs:
        cell = {
            "fixed": '<span class="ok">fixed</span>',
            "broken": '<span class="fail">broken</span>',
        }.get(p.change, _e(p.change))
        rows.append(
            f'<tr data-change="{_e(p.change)}" data-differs="{"yes" if p.differs else "no"}"><td>{_e(p.task_id)}</td>'
            f"<td>{_e(p.seed)}</td><td>{cell}</td>"
            + "".join(f"<td>{_outcome(e) if e else '—'}</td>" for e in (p.a, p.b))
            + f"<td>{_pct(p.a.progress) if p.a else '—'} → {_pct(p.b.progress) if p.b else '—'}</td>"
            f"<td>{_signed(p.progress_delta, pct=True)}</td><td>{_signed(p.tokens_delta)}</td>"
            f"<td>{_signed(p.calls_delta)}</td></tr>"
        )
    options = "".join(
        f'<option value="{v}">{label}</option>'
        for v, label in (
            ("differs", "anything differs"),
            ("fixed", "fixed"),
            ("broken", "broken"),
            ("same", "same outcome"),
            ("infrastructure", "infrastructure"),
            ("only in A", "only in A"),
            ("only in B", "only in B"),
        )
    )
    body = (
        f"<h1>{_e(title)}</h1><table><tr><th>Run</th><th>Paired episodes</th><th>Success %</th><th>Progress %</th>"
        f"<th>Mean output tokens</th><th>Mean tool calls</th></tr>{head}</table><p>{counts}</p>"
        f'<div class="filters"><label>Show <select name="change"><option value="">all</option>{options}</select>'
        f'</label> <span id="shown">{len(cmp.pairs)}</span> of {len(cmp.pairs)} tasks</div>'
        "<table><tr><th>Task</th><th>Seed</th><th>Change</th><th>A</th><th>B</th><th>Progress % A → B</th>"
        f"<th>Δ progress</th><th>Δ output tokens</th><th>Δ tool calls</th></tr>{''.join(rows)}</table>"
    )
    return _page(title, body, _COMPARE_JS)
