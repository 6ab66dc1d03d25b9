"""Validation batches: the same plans on Android devices and on the sandbox, compared.

    >>> from phoneenv.validation import validate_devices
    >>> report = validate_devices(tasks, ["127.0.0.1:40001"], out_dir="runs/validate")  # doctest: +SKIP
    >>> report["agreement"]["episodes"]["rate"]  # doctest: +SKIP
    1.0

For every task that the device backend can run (:meth:`~phoneenv.backends.adb.AdbBackend.can_run`
and the sandbox too), the task's reference plan (and, optionally, the actions of an eval run's
recorded traces, re-sent in order) is played on each device and on the sandbox, through
``PhonePlan-v0`` with the same seed, so both sides get the same verification. The two episodes
are compared:

- per **step**: ``ok``, the error kind, and the result after normalising ids (every value of an
  ``id`` / ``*_id`` / ``*_ids`` field is renamed ``#n`` in its order of first appearance in the
  episode, so provider row ids and sandbox ids compare equal when they name the same records) and
  times (two ISO 8601 date-times within ``time_tolerance_s`` seconds are equal: a device's own
  clock keeps running while the episode clock moves one second per call);
- per **criterion**: each criterion's and milestone's outcome;
- per **verdict**: success, progress, collateral writes (tables and normalised ids) and
  whether the episode was lost to the infrastructure (a failed reset is a difference of its own).

A device episode that differs is re-played ``reruns`` more times on the same device, and each
difference is classified:

``flaky``
    not the same in every run on that device (the evidence lists each run's value).
``driver_gap``
    reproducible, and the device backend lacks or maps differently a tool or a field: the device
    answers ``unknown_tool`` or ``internal_error`` where the sandbox answers, a result's fields
    differ (a field missing or extra), or the same difference appears on every device of a batch
    of two or more (the shared driver is the common cause).
``device_state``
    reproducible on this device only, in values or in the end state (a row the device kept
    differently, a reset the device refused).

:func:`validate_devices` writes ``report.json`` (:func:`build_report`'s dict), ``report.md`` (a
readable page: agreement rates overall, per app, per tool and per device, then every difference
with its class and evidence) and every episode's trace under ``traces/<side>/<source>/``.
Devices are played one after another (one adb server, one env per device).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phoneenv.contract import TaskSpec, Trace
from phoneenv.llm import InfrastructureError
from phoneenv.tracefiles import read_traces

__all__ = [
    "DIFFERENCE_CLASSES",
    "Difference",
    "EpisodeView",
    "Source",
    "build_report",
    "compare_episodes",
    "load_trace_sources",
    "play",
    "render_markdown",
    "validate_devices",
]

log = logging.getLogger(__name__)

DIFFERENCE_CLASSES = ("driver_gap", "device_state", "flaky")
"""The classes a difference gets (module docstring)."""
_DRIVER_ERRORS = frozenset({"unknown_tool", "internal_error"})
_MAX_FINISH = 8
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


# -- sources: what is played ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Source:
    """One plan to play for one task: ``name`` is ``reference`` or ``trace:<file name>``;
    ``actions`` are what the env's ``step`` receives (dicts, or raw text for a recorded step
    that did not parse)."""

    task_id: str
    name: str
    actions: tuple[Any, ...]
    # identity equality and hash: the actions hold dicts


def reference_source(task: TaskSpec) -> Source:
    """The task's reference plan as a :class:`Source`. Raises ``ValueError`` when it has none."""
    if not task.reference_plan:
        raise ValueError(f"task {task.id} has no reference plan")
    return Source(task.id, "reference", tuple(c.model_dump(exclude_none=True) for c in task.reference_plan))


def load_trace_sources(folder: str | Path, task_ids: Iterable[str]) -> tuple[list[Source], list[str]]:
    """The recorded actions of every trace under ``folder`` (``*.jsonl`` files, searched
    recursively; an eval run's folder means its ``traces/``) for the tasks in ``task_ids``; returns
    ``(sources, skipped)`` where ``skipped`` names each file left out and why (not a trace: a
    file that cannot be read, is not UTF-8 or whose first trace line is damaged; or a task
    outside the selection). A step recorded as parsed is re-sent as its action, one that
    did not parse as its raw text. Raises ``FileNotFoundError`` when ``folder`` is not a folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no traces folder {folder}")
    if (folder / "run.json").is_file() and (folder / "traces").is_dir():
        folder = folder / "traces"  # an eval run's folder: its traces, not its results.jsonl
    wanted = set(task_ids)
    sources: list[Source] = []
    skipped: list[str] = []
    for path in sorted(folder.rglob("*.jsonl")):
        rel = path.relative_to(folder).as_posix()
        try:
            trace = next(read_traces([path]), None)  # the first trace; a folder or damage: ValueError
        except ValueError:
            trace = None
        if trace is None:
            skipped.append(f"{rel}: not a trace")
            continue
        if trace.task_id not in wanted:
            skipped.append(f"{rel}: task {trace.task_id} is not selected or not runnable on the devices")
            continue
        actions = tuple(
            s.action.model_dump(exclude_none=True) if s.action is not None else (s.raw or "") for s in trace.steps
        )
        sources.append(Source(trace.task_id, f"trace:{rel}", actions))
    return sources, skipped


# -- one episode ---------------------------------------------------------------------------------


@dataclass
class StepView:
    """One step as compared: ``tool`` (None for an action that did not parse), ``ok``, ``error``
    (the kind, or None), ``result`` (ids normalised) and ``message`` (evidence only)."""

    index: int
    tool: str | None
    ok: bool
    error: str | None
    result: Any
    message: str | None = None


@dataclass
class EpisodeView:
    """One played episode as compared: verdict fields, criteria outcomes by id, steps; or
    ``reset_error`` when the world could not be put in the task's state (no steps then)."""

    success: bool = False
    progress: float = 0.0
    infrastructure_error: bool = False
    criteria: dict[str, bool] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    collateral: list[str] = field(default_factory=list)
    steps: list[StepView] = field(default_factory=list)
    reset_error: str | None = None
    trace: Trace | None = None


def _is_id_key(key: str) -> bool:
    return key == "id" or key.endswith(("_id", "_ids"))


class _Ids:
    """Renames ids ``#1``, ``#2``, ... in their order of first appearance (one per episode)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def name(self, value: Any) -> str:
        key = f"{type(value).__name__}:{value}"
        if key not in self.names:
            self.names[key] = f"#{len(self.names) + 1}"
        return self.names[key]

    def walk(self, value: Any, id_field: bool = False) -> Any:
        if isinstance(value, Mapping):
            return {k: self.walk(v, isinstance(k, str) and _is_id_key(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.walk(v, id_field) for v in value]
        if id_field and isinstance(value, (str, int)) and not isinstance(value, bool):
            return self.name(value)
        return value


def view_of(trace: Trace) -> EpisodeView:
    """The comparable view of a finished episode's trace (ids normalised per episode)."""
    ids = _Ids()
    steps = []
    for s in trace.steps:
        fb = s.feedback
        steps.append(
            StepView(
                s.index,
                s.action.name if s.action is not None else None,
                fb.ok,
                fb.error.value if fb.error is not None else None,
                ids.walk(fb.result),
                fb.message,
            )
        )
    v = trace.verdict
    if v is None:
        return EpisodeView(steps=steps, trace=trace)
    collateral = []
    for item in v.collateral:
        table, _, rid = item.partition("/")
        collateral.append(f"{table}/{ids.name(rid)}" if rid else table)
    return EpisodeView(
        success=v.success,
        progress=v.progress,
        infrastructure_error=v.infrastructure_error,
        criteria={c.id: c.passed for c in v.criteria},
        reasons={c.id: c.reason for c in v.criteria if not c.passed},
        collateral=sorted(collateral),
        steps=steps,
        trace=trace,
    )


def play(env: Any, task: TaskSpec, source: Source, seed: int = 0) -> EpisodeView:
    """Play ``source``'s actions for ``task`` on ``env`` (a :class:`~phoneenv.env.PhonePlanEnv`)
    from ``reset(seed=seed)``; a plan that never finishes is ended with ``finish`` calls (one per
    open frame). A reset that raises :class:`~phoneenv.llm.InfrastructureError` (a device gone,
    fixtures refused) or ``ValueError`` gives a view with ``reset_error`` and no steps; nothing
    else is caught."""
    try:
        env.reset(seed=seed, options={"task": task})
    except (InfrastructureError, ValueError) as exc:
        return EpisodeView(reset_error=f"{type(exc).__name__}: {exc}", infrastructure_error=True)
    done = False
    for action in source.actions:
        _, _, term, trunc, _ = env.step(action)
        if term or trunc:
            done = True
            break
    for _ in range(_MAX_FINISH):
        if done:
            break
        _, _, term, trunc, _ = env.step({"name": "finish", "arguments": {}})
        done = term or trunc
    return view_of(env.trace)


# -- comparing two episodes ----------------------------------------------------------------------


@dataclass
class Difference:
    """One place where a device's episode differs from the sandbox's.

    ``level``: ``reset``, ``verdict``, ``criterion`` or ``step``; ``where``: what differs
    (``success``, a criterion id, ``step 3 contacts.get /result/email``); ``tool``: the step's
    tool (step level); ``sandbox`` / ``device``: the two values; ``hint``: what kind of
    difference (``unknown_tool``, ``internal_error``, ``fields``, ``error``, ``value``,
    ``state``, ``reset``), from which :func:`classify` starts; ``evidence``: what explains it
    (the criteria's reasons on both sides). ``klass``, ``why`` and ``runs`` (the device's value in
    every run on its device, the first run's first) are filled by the batch.
    """

    level: str
    where: str
    sandbox: Any
    device: Any
    hint: str
    tool: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    klass: str | None = None
    why: str = ""
    runs: list[Any] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        """What identifies the difference across runs and devices."""
        return (self.level, self.where)


_MISSING = "<missing>"


def _as_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or len(value) < 16 or value[10] not in "T ":
        return None
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return t.replace(tzinfo=None) if t.tzinfo is None else t.astimezone(dt.UTC).replace(tzinfo=None)


def _leaf_equal(a: Any, b: Any, tolerance_s: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if a == b:
        return True
    ta, tb = _as_time(a), _as_time(b)
    return ta is not None and tb is not None and abs((ta - tb).total_seconds()) <= tolerance_s


def _diff(a: Any, b: Any, path: str, tolerance_s: float) -> list[tuple[str, Any, Any, bool]]:
    """Leaf differences ``(pointer, a, b, structural)``; structural when a field or an item is
    missing on one side (or the kinds of value differ)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            p = f"{path}/{k}"
            if k not in a or k not in b:
                out.append((p, a.get(k, _MISSING), b.get(k, _MISSING), True))
            else:
                out.extend(_diff(a[k], b[k], p, tolerance_s))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [(f"{path}/length", len(a), len(b), False)]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _diff(x, y, f"{path}/{i}", tolerance_s)]
    if isinstance(a, (Mapping, list)) or isinstance(b, (Mapping, list)):
        return [(path or "/", a, b, True)]
    if _leaf_equal(a, b, tolerance_s):
        return []
    return [(path or "/", a, b, False)]


def compare_episodes(box: EpisodeView, dev: EpisodeView, *, time_tolerance_s: float = 60.0) -> list[Difference]:
    """Every difference of ``dev`` (a device's episode) from ``box`` (the sandbox's), in order:
    reset, verdict, criteria, then steps (module docstring). Both views must come from the same
    source."""
    if dev.reset_error is not None or box.reset_error is not None:
        if dev.reset_error == box.reset_error:
            return []
        return [Difference("reset", "reset", box.reset_error, dev.reset_error, "reset")]
    out: list[Difference] = []
    for name in ("success", "progress", "infrastructure_error"):
        a, b = getattr(box, name), getattr(dev, name)
        if a != b:
            out.append(Difference("verdict", name, a, b, "state"))
    if box.collateral != dev.collateral:
        out.append(Difference("verdict", "collateral", box.collateral, dev.collateral, "state"))
    for cid in sorted(set(box.criteria) | set(dev.criteria)):
        a, b = box.criteria.get(cid), dev.criteria.get(cid)
        if a != b:
            why = {"sandbox_reason": box.reasons.get(cid, ""), "device_reason": dev.reasons.get(cid, "")}
            out.append(Difference("criterion", cid, a, b, "state", evidence=why))
    n = max(len(box.steps), len(dev.steps))
    for i in range(n):
        s = box.steps[i] if i < len(box.steps) else None
        d = dev.steps[i] if i < len(dev.steps) else None
        if s is None or d is None:
            present = s or d
            assert present is not None
            out.append(
                Difference(
                    "step",
                    f"step {i + 1} {present.tool}: present",
                    s is not None,
                    d is not None,
                    "state",
                    present.tool,
                )
            )
            continue
        tool = s.tool or d.tool
        label = f"step {s.index} {tool}"
        if s.ok != d.ok or s.error != d.error:
            hint = d.error if d.error in _DRIVER_ERRORS and s.error != d.error else "error"
            out.append(
                Difference(
                    "step",
                    f"{label}: outcome",
                    {"ok": s.ok, "error": s.error, "message": s.message},
                    {"ok": d.ok, "error": d.error, "message": d.message},
                    hint,
                    tool,
                )
            )
            continue
        for pointer, a, b, structural in _diff(s.result, d.result, "", time_tolerance_s):
            out.append(Difference("step", f"{label}: result{pointer}", a, b, "fields" if structural else "value", tool))
    return out


def classify(diff: Difference, runs: Sequence[Any], *, on_every_device: bool) -> tuple[str, str]:
    """``(class, why)`` of one difference from the device's value in every run on its device
    (``runs``, the first run's first) and whether it appears alike on every device of a batch of
    two or more (module docstring)."""
    distinct = {json.dumps(r, sort_keys=True, default=str) for r in runs}
    if len(distinct) > 1:
        return "flaky", f"the device gave {len(distinct)} different values in {len(runs)} runs"
    again = f"the same in {len(runs)} runs" if len(runs) > 1 else "seen once (no re-run)"
    if diff.hint in _DRIVER_ERRORS:
        return "driver_gap", f"the device answers {diff.hint} where the sandbox does not ({again})"
    if diff.hint == "fields":
        return "driver_gap", f"the device's result lacks or adds a field ({again})"
    if on_every_device:
        return "driver_gap", f"alike on every device of the batch ({again}): the shared driver maps it differently"
    if diff.hint == "reset":
        return "device_state", f"the device could not be put in the task's state ({again})"
    return "device_state", f"this device's state differs from the sandbox's ({again})"


# -- the batch -----------------------------------------------------------------------------------


def _safe(name: str) -> str:
    return _SAFE.sub("_", name).strip("_") or "_"


def _write_trace(root: Path | None, side: str, source: Source, view: EpisodeView, run: int) -> str | None:
    if root is None or view.trace is None:
        return None
    folder = root / "traces" / _safe(side) / _safe(source.name)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (f"{_safe(source.task_id)}.jsonl" if run == 0 else f"{_safe(source.task_id)}.run{run}.jsonl")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(view.trace.model_dump_json() + "\n", encoding="utf-8")
    tmp.replace(path)
    return path.relative_to(root).as_posix()


@dataclass
class _Comparison:
    task: TaskSpec
    device: str
    source: Source
    box: EpisodeView
    dev: EpisodeView
    diffs: list[Difference]
    trace_paths: dict[str, str | None]


def _rate(agreed: int, compared: int) -> dict[str, Any]:
    return {"compared": compared, "agreed": agreed, "rate": round(agreed / compared, 4) if compared else None}


def _apps(task: TaskSpec) -> list[str]:
    apps = [a for a in task.apps if a not in ("system", "user")]
    if not apps and task.reference_plan:
        apps = sorted({c.name.split(".")[0] for c in task.reference_plan if "." in c.name} - {"system", "user"})
    return apps or ["-"]


def build_report(
    comparisons: Sequence[_Comparison],
    devices: Sequence[str],
    *,
    selected: int,
    skipped: Mapping[str, str],
    traces_skipped: Sequence[str] = (),
    reruns: int = 1,
) -> dict[str, Any]:
    """The report's dict (JSON-able): ``devices``; ``tasks`` (selected, compared, skipped with
    reasons); ``agreement``: ``episodes``, ``criteria`` and ``steps`` overall, then episodes
    ``by_app`` (each app of a task), ``by_device``, and steps ``by_tool``, each
    ``{"compared", "agreed", "rate"}``; ``classes`` (differences per class); ``differences``
    (one per difference: task, device, source, level, where, tool, sandbox, device_value,
    class, why, runs, traces); ``episodes`` (one row per comparison)."""
    ep_total = ep_ok = cr_total = cr_ok = st_total = st_ok = 0
    by_app: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_device: dict[str, list[int]] = {d: [0, 0] for d in devices}
    by_tool: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    differences = []
    episodes = []
    classes: Counter[str] = Counter()
    for c in comparisons:
        agreed = not c.diffs
        ep_total += 1
        ep_ok += agreed
        for app in _apps(c.task):
            by_app[app][0] += 1
            by_app[app][1] += agreed
        by_device[c.device][0] += 1
        by_device[c.device][1] += agreed
        bad_criteria = {d.where for d in c.diffs if d.level == "criterion"}
        ids = set(c.box.criteria) | set(c.dev.criteria)
        cr_total += len(ids)
        cr_ok += len(ids - bad_criteria)
        bad_steps = {d.where.split(":")[0] for d in c.diffs if d.level == "step"}
        for i in range(max(len(c.box.steps), len(c.dev.steps))):
            s = c.box.steps[i] if i < len(c.box.steps) else c.dev.steps[i]
            label = f"step {s.index} {s.tool}"
            ok = label not in bad_steps and i < len(c.box.steps) and i < len(c.dev.steps)
            st_total += 1
            st_ok += ok
            by_tool[s.tool or "<unparsed>"][0] += 1
            by_tool[s.tool or "<unparsed>"][1] += ok
        episodes.append(
            {
                "task": c.task.id,
                "device": c.device,
                "source": c.source.name,
                "agreed": agreed,
                "differences": len(c.diffs),
                "sandbox": {"success": c.box.success, "reset_error": c.box.reset_error},
                "device_result": {"success": c.dev.success, "reset_error": c.dev.reset_error},
                "traces": c.trace_paths,
            }
        )
        for d in c.diffs:
            classes[d.klass or "?"] += 1
            differences.append(
                {
                    "task": c.task.id,
                    "device": c.device,
                    "source": c.source.name,
                    "level": d.level,
                    "where": d.where,
                    "tool": d.tool,
                    "sandbox": d.sandbox,
                    "device_value": d.device,
                    "hint": d.hint,
                    "evidence": d.evidence,
                    "class": d.klass,
                    "why": d.why,
                    "runs": d.runs,
                    "traces": c.trace_paths,
                }
            )
    return {
        "version": 1,
        "devices": list(devices),
        "reruns": reruns,
        "tasks": {
            "selected": selected,
            "compared": len({c.task.id for c in comparisons}),
            "skipped": dict(skipped),
            "traces_skipped": list(traces_skipped),
        },
        "agreement": {
            "episodes": _rate(ep_ok, ep_total),
            "criteria": _rate(cr_ok, cr_total),
            "steps": _rate(st_ok, st_total),
            "by_app": {k: _rate(v[1], v[0]) for k, v in sorted(by_app.items())},
            "by_tool": {k: _rate(v[1], v[0]) for k, v in sorted(by_tool.items())},
            "by_device": {k: _rate(v[1], v[0]) for k, v in by_device.items()},
        },
        "classes": {k: classes.get(k, 0) for k in DIFFERENCE_CLASSES},
        "differences": differences,
        "episodes": episodes,
    }


def _pct(r: Mapping[str, Any]) -> str:
    return "-" if r["rate"] is None else f"{100 * r['rate']:.1f}% ({r['agreed']}/{r['compared']})"


def _cell(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else value
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_markdown(report: Mapping[str, Any]) -> str:
    """``report`` (:func:`build_report`'s dict) as a Markdown page."""
    a = report["agreement"]
    t = report["tasks"]
    lines = [
        "# Device validation: devices against the sandbox",
        "",
        f"Devices: {', '.join(f'`{d}`' for d in report['devices'])}. Tasks selected: {t['selected']}, "
        f"compared: {t['compared']}, skipped: {len(t['skipped'])}. Re-runs of a differing episode: {report['reruns']}.",
        "",
        "| agreement | rate |",
        "|---|---|",
        f"| episodes | {_pct(a['episodes'])} |",
        f"| criteria | {_pct(a['criteria'])} |",
        f"| steps | {_pct(a['steps'])} |",
        "",
        "Differences by class: " + ", ".join(f"{k} {v}" for k, v in report["classes"].items()) + ".",
    ]
    for title, key, what in (
        ("Per device", "by_device", "device"),
        ("Per app", "by_app", "app"),
        ("Per tool", "by_tool", "tool"),
    ):
        lines += ["", f"## {title}", "", f"| {what} | agreement |", "|---|---|"]
        lines += [f"| `{k}` | {_pct(v)} |" for k, v in a[key].items()]
    lines += ["", "## Differences", ""]
    if not report["differences"]:
        lines.append("None: every compared episode agreed.")
    else:
        lines += [
            "| class | task | device | source | where | sandbox | device | why |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for d in report["differences"]:
            lines.append(
                f"| {d['class']} | `{d['task']}` | `{d['device']}` | {d['source']} | {_cell(d['where'])} "
                f"| {_cell(d['sandbox'])} | {_cell(d['device_value'])} | {_cell(d['why'])} |"
            )
    if t["skipped"]:
        lines += ["", "## Skipped tasks", ""]
        lines += [f"- `{k}`: {v}" for k, v in t["skipped"].items()]
    if t["traces_skipped"]:
        lines += ["", "## Trace files left out", ""]
        lines += [f"- {s}" for s in t["traces_skipped"]]
    return "\n".join(lines) + "\n"


def _why_not(backend: Any, task: TaskSpec) -> str | None:
    """Why the device ``backend`` cannot run ``task`` faithfully (its ``why_not``, which names the
    tool or table), None when it can; a backend without ``why_not`` says only ``can_run``."""
    why_not = getattr(backend, "why_not", None)
    if why_not is not None:
        return why_not(task)
    return None if backend.can_run(task) else f"{type(backend).__name__}.can_run refuses it"


def validate_devices(
    tasks: Sequence[TaskSpec],
    serials: Sequence[str],
    out_dir: str | Path | None = None,
    *,
    adb_host: str = "127.0.0.1",
    adb_port: int = 5037,
    traces: str | Path | None = None,
    reruns: int = 1,
    seed: int = 0,
    time_tolerance_s: float = 60.0,
    timeout_s: float = 30.0,
    set_device_clock: bool = True,
    backend_factory: Callable[[str], Any] | None = None,
    on_episode: Callable[[str, str, str, int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Play ``tasks`` on each device of ``serials`` and on the sandbox; compare and classify.

    Args:
        tasks: the candidate tasks; those the device backend or the sandbox cannot run are
            skipped (listed with the reason in the report).
        serials: the devices (adb serials); at least one, no repeats.
        out_dir: where ``report.json``, ``report.md`` and ``traces/`` go (None: nothing written).
        adb_host, adb_port: the adb server.
        traces: an eval run's folder whose traces' actions are replayed too (``--traces``).
        reruns: how many more times a differing episode is re-played on its device (0: none,
            so nothing can be called flaky).
        seed: the episode seed on both sides.
        time_tolerance_s: how far apart two ISO date-times may be and still agree.
        timeout_s, set_device_clock: passed to each :class:`~phoneenv.backends.adb.AdbBackend`.
        backend_factory: serial → device backend (default: an ``AdbBackend`` with the options
            above); for tests and other device kinds.
        on_episode: called as ``(side, task_id, source, run)`` before each episode (progress).
        on_total: called once, before the first episode, with the number of episodes planned
            (each source on the sandbox and on every device; re-runs come on top).

    Returns the report dict (:func:`build_report`).

    Raises:
        ValueError: no serial, a repeated serial, or ``reruns < 0``.
        FileNotFoundError: ``traces`` is not a folder.
    """
    from phoneenv.backends.sandbox import SandboxBackend
    from phoneenv.env import PhonePlanEnv

    serials = list(serials)
    if not serials:
        raise ValueError("give at least one device serial")
    if len(set(serials)) != len(serials):
        raise ValueError(f"a serial is given twice: {serials}")
    if reruns < 0:
        raise ValueError(f"reruns must be 0 or more, not {reruns}")

    def make(serial: str) -> Any:
        if backend_factory is not None:
            return backend_factory(serial)
        from phoneenv.backends.adb import AdbBackend

        return AdbBackend(
            serial=serial,
            adb_host=adb_host,
            adb_port=adb_port,
            kind="device",
            timeout_s=timeout_s,
            set_device_clock=set_device_clock,
        )

    backends = {s: make(s) for s in serials}
    probe = backends[serials[0]]
    box_backend = SandboxBackend()
    runnable: list[TaskSpec] = []
    skipped: dict[str, str] = {}
    for t in tasks:
        if not t.reference_plan:
            skipped[t.id] = "no reference plan"
        elif (why := _why_not(probe, t)) is not None:
            skipped[t.id] = f"the device backend cannot run it faithfully: {why}"
        elif not box_backend.can_run(t):
            skipped[t.id] = f"the sandbox cannot run it (backends {t.backends})"
        else:
            runnable.append(t)
    by_id = {t.id: t for t in runnable}
    sources = [reference_source(t) for t in runnable]
    traces_skipped: list[str] = []
    if traces is not None:
        more, traces_skipped = load_trace_sources(traces, by_id)
        sources += more
    root = Path(out_dir) if out_dir is not None else None
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)

    comparisons: list[_Comparison] = []
    if on_total is not None:
        on_total(len(sources) * (1 + len(serials)) if runnable else 0)
    if runnable:
        box_env = PhonePlanEnv(tasks=runnable, backend=box_backend)
        try:
            box_views: dict[Source, EpisodeView] = {}
            box_paths: dict[Source, str | None] = {}
            for src in sources:
                if on_episode:
                    on_episode("sandbox", src.task_id, src.name, 0)
                box_views[src] = play(box_env, by_id[src.task_id], src, seed)
                box_paths[src] = _write_trace(root, "sandbox", src, box_views[src], 0)
        finally:
            box_env.close()
        for serial in serials:
            env = PhonePlanEnv(tasks=runnable, backend=backends[serial])
            try:
                for src in sources:
                    task = by_id[src.task_id]
                    if on_episode:
                        on_episode(serial, src.task_id, src.name, 0)
                    dev = play(env, task, src, seed)
                    paths = {
                        "sandbox": box_paths[src],
                        "device": _write_trace(root, serial, src, dev, 0),
                    }
                    diffs = compare_episodes(box_views[src], dev, time_tolerance_s=time_tolerance_s)
                    runs: list[list[Difference]] = [diffs]
                    if diffs:
                        for r in range(1, reruns + 1):
                            if on_episode:
                                on_episode(serial, src.task_id, src.name, r)
                            again = play(env, task, src, seed)
                            paths[f"device_run{r}"] = _write_trace(root, serial, src, again, r)
                            runs.append(compare_episodes(box_views[src], again, time_tolerance_s=time_tolerance_s))
                    for d in diffs:
                        values = []
                        for run in runs:
                            hit = next((x for x in run if x.key == d.key), None)
                            values.append(d.sandbox if hit is None else hit.device)
                        d.runs = values
                    comparisons.append(_Comparison(task, serial, src, box_views[src], dev, diffs, paths))
            finally:
                env.close()
        # classes need every device's differences (a difference alike on all devices is the driver's)
        seen: dict[tuple[str, str, tuple[str, str]], dict[str, str]] = defaultdict(dict)
        for c in comparisons:
            for d in c.diffs:
                seen[(c.task.id, c.source.name, d.key)][c.device] = json.dumps(d.device, sort_keys=True, default=str)
        for c in comparisons:
            for d in c.diffs:
                alike = seen[(c.task.id, c.source.name, d.key)]
                every = len(serials) >= 2 and len(alike) == len(serials) and len(set(alike.values())) == 1
                d.klass, d.why = classify(d, d.runs, on_every_device=every)
    report = build_report(
        comparisons, serials, selected=len(tasks), skipped=skipped, traces_skipped=traces_skipped, reruns=reruns
    )
    if root is not None:
        (root / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        (root / "report.md").write_text(render_markdown(report), encoding="utf-8")
    for b in backends.values():
        b.close()
    return report
