"""A seeded task sampler that weights tasks by capability, difficulty, source, category and domain,
with the probability mass split across groups (templates by default), not by raw task counts.

Formula. For a task ``t`` with group ``g(t)`` (its template by default) the *task factor* is the
product of the configured weights of its attributes (a key not configured weighs
``default_weight``, 1 by default)::

    f(t) = w_source[source] · w_category[category] · w_domain[domain] · w_difficulty[difficulty]
           · Π_{c ∈ capabilities(t)} w_capability[c]

A group's *mass* is its group weight times the mean factor of its tasks, and a task's probability
is its group's share of the total mass times its share of the group's factors::

    m_g  = w_group[g] · mean_{t ∈ g} f(t)
    P(t) = m_g / Σ_h m_h  ·  f(t) / Σ_{u ∈ g} f(u)
         = w_group[g(t)] · f(t) / |g(t)|  /  Z,        Z = Σ_u w_group[g(u)] · f(u) / |g(u)|

So with all weights equal every group gets the same mass whatever its size (100 tasks of template
A and 10 of B: A's tasks get 1/200 each, B's 1/20, half the mass each), and a weight scales the mass
of the tasks it applies to relative to their group-mates and, through the mean, their group's mass
relative to the others. Capability weights multiply (a task tagged ``lookup`` and ``send`` with
``w_capability = {"send": 3}`` has factor 3); a weight of 0 removes the tasks it applies to, and a
group whose factors are all 0 gets no mass.

Worked example: template A (100 tasks, difficulty 1), template B (10 tasks, difficulty 3),
``difficulty={3: 2.0}``: ``m_A = 1``, ``m_B = 2``, so ``P(B) = 2/3``, each B task ``1/15`` and
each A task ``1/300``.

Groups: ``group_by="template"`` (tasks without a template are each their own group, keyed by id),
``"source"``, ``"category"``, ``"domain"``, ``"difficulty"``, ``"task"`` (every task its own group:
probability proportional to ``f(t)``, raw counts decide) or a callable ``TaskSpec -> str``.

:class:`CompetenceSampler` is the trainer's other sampler: it draws the next GRPO groups from the
tasks the policy can still learn from (recent group success strictly between 0 and 1).

Weights from results (the closed loop, :mod:`phoneenv.loop`): :func:`weights_from_results` sets the
capability, source and group (template) weights from a round's measured success (a run folder via
:func:`result_rows`, or run-store rows), :func:`apply_mix` lays approved data-mix weights
(``{"capability:send": 2.0, ...}``, a harness version's ``mix``) over a config; both return every
change as a :class:`WeightChange` (group, before, after, why) and append it to a JSON Lines log
when given one.

Draws use ``numpy.random.default_rng(seed)``: the same tasks, weights and seed give the same
sequence. :meth:`TaskSampler.summary` reports the effective distribution (probability mass per
group, capability, difficulty, source, category and domain); it is logged at INFO on construction.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from phoneenv.contract import TaskSpec

__all__ = [
    "CompetenceSampler",
    "SamplerConfig",
    "TaskSampler",
    "WeightChange",
    "apply_mix",
    "competence_weights",
    "config_from_json",
    "config_to_json",
    "measured_weight",
    "result_rows",
    "weights_from_results",
]

log = logging.getLogger(__name__)

_GROUPERS: dict[str, Callable[[TaskSpec], str]] = {
    "template": lambda t: t.template if t.template is not None else f"task:{t.id}",
    "source": lambda t: t.source,
    "category": lambda t: t.category.value,
    "domain": lambda t: t.domain.value,
    "difficulty": lambda t: str(t.difficulty),
    "task": lambda t: t.id,
}


_TABLES = ("capability", "difficulty", "source", "category", "domain", "group")
"""The weight tables of :class:`SamplerConfig` (key → weight)."""


@dataclass
class SamplerConfig:
    """Weights of :class:`TaskSampler` (see the module docstring for the formula).

    Parameters:
        capability (`dict[str, float]`, defaults to `{}`):
            Weight per capability tag (`"lookup"`, `"send"`, `"login"`...); a task's factor is the
            product over its tags. Empty: every tag weighs `default_weight`.
        difficulty (`dict[int, float]`, defaults to `{}`):
            Weight per difficulty 1-5 (string keys such as `"3"` are accepted, for JSON/YAML configs).
        source (`dict[str, float]`, defaults to `{}`):
            Weight per task source (`"template"`, hand-written or mined sources).
        category (`dict[str, float]`, defaults to `{}`):
            Weight per category (`"tool"`, `"memory"`, `"skills"`, `"subagent"`).
        domain (`dict[str, float]`, defaults to `{}`):
            Weight per domain (`"contacts"`, `"email"`...).
        group (`dict[str, float]`, defaults to `{}`):
            Weight per group key (a template name with the default `group_by`).
        group_by (`str` or callable, defaults to `"template"`):
            What the mass is split across: a template's variants share one group's mass, so a
            template with many variants does not dominate. `"task"` disables the split.
        default_weight (`float`, defaults to `1.0`):
            Weight of any key not listed in the tables above; 1 leaves it neutral.
        seed (`int`, defaults to `0`):
            Seed of the sampler's `numpy` generator.
    """

    capability: dict[str, float] = field(default_factory=dict)
    difficulty: dict[int, float] = field(default_factory=dict)
    source: dict[str, float] = field(default_factory=dict)
    category: dict[str, float] = field(default_factory=dict)
    domain: dict[str, float] = field(default_factory=dict)
    group: dict[str, float] = field(default_factory=dict)
    group_by: str | Callable[[TaskSpec], str] = "template"
    default_weight: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in _TABLES:
            if not isinstance(getattr(self, name), Mapping):
                raise ValueError(f"{name} must map keys to weights, not {getattr(self, name)!r}"[:200])
        try:
            self.difficulty = {int(k): v for k, v in self.difficulty.items()}
        except ValueError:
            raise ValueError(f"difficulty keys must be integers 1-5, not {sorted(map(str, self.difficulty))}") from None
        for name in _TABLES:
            for key, w in getattr(self, name).items():
                _check_weight(f"{name}[{key!r}]", w)
        _check_weight("default_weight", self.default_weight)
        if not callable(self.group_by) and (not isinstance(self.group_by, str) or self.group_by not in _GROUPERS):
            raise ValueError(f"group_by must be one of {sorted(_GROUPERS)} or a callable, not {self.group_by!r}")


def _check_weight(name: str, w: float) -> None:
    if not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
        raise ValueError(f"weight {name} must be a finite number >= 0, not {w!r}")


class TaskSampler:
    """Draws tasks with the probabilities of the module docstring's formula.

    Args:
        tasks: the pool (TaskSpecs or a suite selector such as ``"all"``).
        config: the weights; keyword arguments override its fields (``TaskSampler(tasks,
            difficulty={3: 2.0}, seed=1)``).

    Raises:
        ValueError: an empty pool, a negative or non-finite weight, or weights that give every
            task probability 0.
    """

    def __init__(self, tasks: Sequence[TaskSpec] | str, config: SamplerConfig | None = None, **overrides: Any) -> None:
        if isinstance(tasks, str):
            from phoneenv.tasks import select

            tasks = select(tasks)
        self.tasks: list[TaskSpec] = list(tasks)
        if not self.tasks:
            raise ValueError("the task pool is empty")
        base = config or SamplerConfig()
        if overrides:
            fields = {k: getattr(base, k) for k in base.__dataclass_fields__}
            base = SamplerConfig(**{**fields, **overrides})
        self.config = base
        group_of = base.group_by if callable(base.group_by) else _GROUPERS[base.group_by]
        self.groups: list[str] = [group_of(t) for t in self.tasks]
        self.factors = np.array([self.factor(t) for t in self.tasks], dtype=float)
        sizes: dict[str, int] = defaultdict(int)
        for g in self.groups:
            sizes[g] += 1
        raw = np.array([self._w(base.group, g) * f / sizes[g] for g, f in zip(self.groups, self.factors, strict=True)])
        total = raw.sum()
        if not total > 0:
            raise ValueError("the weights give every task probability 0")
        self.probs: np.ndarray = raw / total
        self._index = {t.id: i for i, t in enumerate(self.tasks)}
        self._warn_unused_keys()
        self.rng = np.random.default_rng(base.seed)
        self.log_summary()

    # -- weights ---------------------------------------------------------------------------------
    def _w(self, table: Mapping[Any, float], key: Any) -> float:
        return float(table.get(key, self.config.default_weight))

    def factor(self, task: TaskSpec) -> float:
        """The task factor ``f(t)``: the product of its attributes' weights."""
        c = self.config
        f = (
            self._w(c.source, task.source)
            * self._w(c.category, task.category.value)
            * self._w(c.domain, task.domain.value)
            * self._w(c.difficulty, task.difficulty)
        )
        for cap in task.capabilities:
            f *= self._w(c.capability, cap)
        return f

    def _warn_unused_keys(self) -> None:
        c = self.config
        seen = {
            "capability": {cap for t in self.tasks for cap in t.capabilities},
            "difficulty": {t.difficulty for t in self.tasks},
            "source": {t.source for t in self.tasks},
            "category": {t.category.value for t in self.tasks},
            "domain": {t.domain.value for t in self.tasks},
            "group": set(self.groups),
        }
        for name, present in seen.items():
            unused = [k for k in getattr(c, name) if k not in present]
            if unused:
                log.warning("sampler: %s weights %s match no task in the pool", name, unused)

    # -- drawing ---------------------------------------------------------------------------------
    def sample(self, n: int = 1, *, replace: bool = True) -> list[TaskSpec]:
        """``n`` tasks drawn from the sampler's generator (with replacement by default; without,
        ``n`` must not exceed the number of tasks with non-zero probability)."""
        idx = self.rng.choice(len(self.tasks), size=n, replace=replace, p=self.probs)
        return [self.tasks[i] for i in idx]

    def draw(self) -> TaskSpec:
        """One task."""
        return self.sample(1)[0]

    def __iter__(self) -> Iterator[TaskSpec]:
        """An endless stream of draws."""
        while True:
            yield self.draw()

    def reseed(self, seed: int) -> None:
        """Restart the generator from ``seed``."""
        self.rng = np.random.default_rng(seed)

    # -- the effective distribution --------------------------------------------------------------
    def probability(self, task_id: str) -> float:
        """``P(t)`` of one task (``KeyError`` when not in the pool)."""
        return float(self.probs[self._index[task_id]])

    def probabilities(self) -> dict[str, float]:
        """``P(t)`` of every task, by id."""
        return {t.id: float(p) for t, p in zip(self.tasks, self.probs, strict=True)}

    def summary(self) -> dict[str, Any]:
        """The effective distribution: probability mass per group, capability, difficulty,
        source, category and domain (each sorted by decreasing mass), pool and group counts,
        ``effective_groups`` (``exp`` of the entropy of the group masses: the number of equally
        likely groups it is worth) and the smallest and largest non-zero task probability.

        A task counts fully towards each of its capabilities, so capability masses can sum to more
        than 1 (``"(none)"`` collects untagged tasks); the other breakdowns sum to 1.
        """
        by: dict[str, dict[str, float]] = {k: defaultdict(float) for k in _BREAKDOWNS}
        for t, g, p in zip(self.tasks, self.groups, self.probs, strict=True):
            by["group"][g] += p
            for cap in t.capabilities or ["(none)"]:
                by["capability"][cap] += p
            by["difficulty"][str(t.difficulty)] += p
            by["source"][t.source] += p
            by["category"][t.category.value] += p
            by["domain"][t.domain.value] += p
        masses = np.array([m for m in by["group"].values() if m > 0])
        nonzero = self.probs[self.probs > 0]
        return {
            "tasks": len(self.tasks),
            "tasks_nonzero": int((self.probs > 0).sum()),
            "groups": len(by["group"]),
            "group_by": self.config.group_by if isinstance(self.config.group_by, str) else "custom",
            "effective_groups": float(np.exp(-(masses * np.log(masses)).sum())),
            "min_task_p": float(nonzero.min()),
            "max_task_p": float(nonzero.max()),
            **{f"by_{k}": dict(sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))) for k, v in by.items()},
        }

    def log_summary(self, level: int = logging.INFO) -> dict[str, Any]:
        """Log :meth:`summary` (one line per breakdown) and return it."""
        s = self.summary()
        log.log(
            level,
            "task sampler: %d tasks (%d drawable) in %d groups by %s, effective groups %.1f, task p in [%.3g, %.3g]",
            s["tasks"],
            s["tasks_nonzero"],
            s["groups"],
            s["group_by"],
            s["effective_groups"],
            s["min_task_p"],
            s["max_task_p"],
        )
        for k in _BREAKDOWNS:
            items = ", ".join(f"{key}={p:.3f}" for key, p in s[f"by_{k}"].items())
            log.log(level, "task sampler mass by %s: %s", k, items)
        return s


_BREAKDOWNS = ("group", "capability", "difficulty", "source", "category", "domain")


# ------------------------------------------------------------------------------------------------
# Competence-aware sampling of training groups
# ------------------------------------------------------------------------------------------------


def competence_weights(history: Mapping[str, Sequence[float]], tasks: Sequence[str], floor: float) -> dict[str, float]:
    """Each task's sampling weight from its recent group success rates.

    A task's *competence* is the mean of its remembered group success rates (each in [0, 1]). A
    task is in the learnable zone when ``0 < competence < 1`` (some recent episodes won and some
    lost, so groups have non-zero advantages): weight 1. A task never seen yet also weighs 1 (its
    competence is unknown). A task whose recent episodes all lost (competence 0) or all won (1)
    weighs ``floor``: it is still revisited now and then, since the policy moves.

    Example: ``history = {"a": [0.5], "b": [0.0, 0.0], "c": [1.0]}``, tasks ``a, b, c, d``,
    ``floor = 0.1`` → ``{"a": 1, "b": 0.1, "c": 0.1, "d": 1}``.

    Raises:
        ValueError: ``floor`` outside ``(0, 1]``.
    """
    if not 0.0 < floor <= 1.0:
        raise ValueError(f"floor must lie in (0, 1], got {floor!r}")
    out: dict[str, float] = {}
    for task in tasks:
        rates = history.get(task)
        if not rates:
            out[task] = 1.0
            continue
        c = float(np.mean(rates))
        out[task] = 1.0 if 0.0 < c < 1.0 else float(floor)
    return out


class CompetenceSampler:
    """A ``torch.utils.data.Sampler`` over episode-key rows, shaped like TRL's ``RepeatSampler``
    (each drawn row repeated ``mini_repeat_count`` times in a row, so a group's members stay
    together, and each chunk of ``batch_size`` rows repeated ``repeat_count`` times), whose rows
    are drawn by competence instead of by a shuffled pass.

    Each chunk draws ``batch_size`` distinct rows with probabilities proportional to their task's
    :func:`competence_weights` (a ``torch.Generator`` seeded with ``seed``, so every process draws the
    same rows). :meth:`update` feeds the success of finished groups; the weights of later draws follow.
    An epoch has as many chunks as TRL's sampler (``len(rows) // batch_size``).

    Note: accelerate's data loader fetches one batch ahead, so a group's result steers the draw
    after next (one generation batch of lag).

    Args:
        rows: the dataset's rows as ``(task_id, seed)`` pairs.
        mini_repeat_count: ``G``.
        batch_size: distinct rows per generation batch (``generation_batch_size // G``).
        repeat_count: ``num_iterations × steps_per_generation``.
        window: group results remembered per task.
        floor: weight of tasks outside the learnable zone (see :func:`competence_weights`).
        seed: the generator's seed.

    Raises:
        ValueError: fewer rows than ``batch_size``, non-positive counts, or a bad ``floor``.
    """

    def __init__(
        self,
        rows: Sequence[tuple[str, int]],
        mini_repeat_count: int,
        batch_size: int = 1,
        repeat_count: int = 1,
        *,
        window: int = 4,
        floor: float = 0.1,
        seed: int = 0,
    ) -> None:
        import torch

        self.rows = [(str(t), int(s)) for t, s in rows]
        if min(mini_repeat_count, batch_size, repeat_count, window) < 1:
            raise ValueError("mini_repeat_count, batch_size, repeat_count and window must be ≥ 1")
        if len(self.rows) < batch_size:
            raise ValueError(f"{len(self.rows)} dataset rows cannot fill a batch of {batch_size} distinct groups")
        competence_weights({}, [], floor)  # validates floor
        self.mini_repeat_count = mini_repeat_count
        self.batch_size = batch_size
        self.repeat_count = repeat_count
        self.window = window
        self.floor = floor
        self.tasks = sorted({t for t, _ in self.rows})
        self.history: dict[str, deque[float]] = {t: deque(maxlen=window) for t in self.tasks}
        self.generator = torch.Generator()
        self.generator.manual_seed(int(seed))

    def update(self, task_id: str, success: Sequence[float]) -> None:
        """Remember one finished group's success rate (``success``: its members' 0/1 outcomes)."""
        if task_id in self.history and len(success):
            self.history[task_id].append(float(np.mean(success)))

    def weights(self) -> dict[str, float]:
        """Each task's current weight (:func:`competence_weights`)."""
        return competence_weights(self.history, self.tasks, self.floor)

    def probabilities(self) -> dict[str, float]:
        """The probability that one draw picks each task (rows of a task share its weight each)."""
        w = self.weights()
        row_w = np.array([w[t] for t, _ in self.rows])
        p = row_w / row_w.sum()
        out: dict[str, float] = defaultdict(float)
        for (t, _), pi in zip(self.rows, p, strict=True):
            out[t] += float(pi)
        return dict(out)

    def _draw(self) -> list[int]:
        import torch

        w = self.weights()
        row_w = torch.tensor([w[t] for t, _ in self.rows], dtype=torch.float64)
        return torch.multinomial(row_w, self.batch_size, replacement=False, generator=self.generator).tolist()

    def __iter__(self) -> Iterator[int]:
        for _ in range(len(self.rows) // self.batch_size):
            chunk = self._draw()  # drawn lazily, when the loader asks for this batch
            for _ in range(self.repeat_count):
                for index in chunk:
                    for _ in range(self.mini_repeat_count):
                        yield index

    def __len__(self) -> int:
        return (len(self.rows) // self.batch_size) * self.batch_size * self.mini_repeat_count * self.repeat_count


# ------------------------------------------------------------------------------------------------
# Weights from a round's results (the closed loop)
# ------------------------------------------------------------------------------------------------

#: Mix group prefixes and the :class:`SamplerConfig` table each sets (``template:x`` sets the
#: ``group`` table, which holds template names with the default ``group_by``).
MIX_TABLES: dict[str, str] = {
    "capability": "capability",
    "difficulty": "difficulty",
    "source": "source",
    "category": "category",
    "domain": "domain",
    "template": "group",
    "group": "group",
}


@dataclass
class WeightChange:
    """One weight change: ``group`` (``"capability:send"``, ``"template:x"``...), the weight
    ``before`` and ``after``, and ``why`` (in words: the measured success, or the review item)."""

    group: str
    before: float
    after: float
    why: str
    at: str = ""

    def to_json(self) -> dict[str, Any]:
        """The change as one JSON object (a line of the log)."""
        return {"group": self.group, "before": self.before, "after": self.after, "why": self.why, "at": self.at}


def config_to_json(config: SamplerConfig) -> dict[str, Any]:
    """``config`` as JSON data ``SamplerConfig(**data)`` rebuilds (``TrainConfig.sampler``,
    ``python -m rl.trainers --sampler``); a callable ``group_by`` cannot be written (``ValueError``)."""
    if callable(config.group_by):
        raise ValueError("a callable group_by cannot be written as JSON")
    data = {k: getattr(config, k) for k in config.__dataclass_fields__}
    data["difficulty"] = {str(k): v for k, v in config.difficulty.items()}
    return data


def config_from_json(data: Any) -> SamplerConfig:
    """A :class:`SamplerConfig` from :func:`config_to_json`'s data (a weights file's JSON).

    Raises:
        ValueError: ``data`` is not an object of :class:`SamplerConfig`'s fields: an unknown field,
            a table that is not an object of weights, a weight that is not a finite number >= 0,
            an unknown ``group_by``, a ``seed`` that is not an integer >= 0.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"sampler weights must be a JSON object of SamplerConfig's fields, not {type(data).__name__}")
    known = list(SamplerConfig.__dataclass_fields__)
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise ValueError(f"unknown sampler field {', '.join(map(repr, unknown))[:200]} (known: {', '.join(known)})")
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, not {seed!r}")
    if not isinstance(data.get("group_by", "template"), str):
        raise ValueError(f"group_by must be one of {sorted(_GROUPERS)}, not {data['group_by']!r}")
    return SamplerConfig(**dict(data))


def _table_key(group: str) -> tuple[str, Any]:
    prefix, sep, key = group.partition(":")
    if not sep or not key or prefix not in MIX_TABLES:
        raise ValueError(f"mix group {group!r} must be one of {', '.join(p + ':NAME' for p in MIX_TABLES)}")
    table = MIX_TABLES[prefix]
    if table == "difficulty":
        try:
            return table, int(key)
        except ValueError:
            raise ValueError(f"mix group {group!r}: a difficulty is an integer 1-5") from None
    return table, key


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def _log(changes: Sequence[WeightChange], log_path: Any) -> None:
    if log_path is None or not changes:
        return
    import json
    from pathlib import Path

    path = Path(log_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for c in changes:
            fh.write(json.dumps(c.to_json()) + "\n")
    for c in changes:
        log.info("sampler weight %s: %g -> %g (%s)", c.group, c.before, c.after, c.why)


def _with(config: SamplerConfig, updates: Mapping[tuple[str, Any], float]) -> SamplerConfig:
    fields = {k: getattr(config, k) for k in config.__dataclass_fields__}
    for name in MIX_TABLES.values():
        fields[name] = dict(fields[name])
    for (table, key), w in updates.items():
        fields[table][key] = w
    return SamplerConfig(**fields)


def apply_mix(
    config: SamplerConfig, mix: Mapping[str, float], *, why: str = "approved mix weight", log_path: Any = None
) -> tuple[SamplerConfig, list[WeightChange]]:
    """``config`` with the data-mix weights ``mix`` (``{"capability:send": 2.0, "template:x": 0.5}``)
    laid over it, and the changes (weights already equal are not changes), appended to
    ``log_path`` (JSON Lines) when given.

    Raises:
        ValueError: a group not of the form ``<capability|difficulty|source|category|domain|template|group>:NAME``,
            or a weight that is negative or not finite.
    """
    updates: dict[tuple[str, Any], float] = {}
    changes = []
    at = _now()
    for group, w in mix.items():
        table, key = _table_key(group)
        _check_weight(group, w)
        before = float(getattr(config, table).get(key, config.default_weight))
        if float(w) != before:
            updates[(table, key)] = float(w)
            changes.append(WeightChange(group, before, float(w), why, at))
    out = _with(config, updates)
    _log(changes, log_path)
    return out, changes


def measured_weight(successes: int, episodes: int, *, rule: str = "failure", floor: float = 0.1) -> float:
    """The weight a group earns from its measured success ``s = successes / episodes``:

    * ``"failure"``: ``floor + (1 - floor) · (1 - s)``: never solved weighs 1, always solved ``floor``
      (more of what fails, for SFT data or a benchmark's mix);
    * ``"learnable"``: ``floor + (1 - floor) · 4 s (1 - s)``: half solved weighs 1, never or always
      solved ``floor`` (GRPO learns only where some rollouts win and some lose).

    Rounded to 4 decimals. Raises ``ValueError`` for ``episodes < 1``, ``successes`` outside
    ``[0, episodes]``, an unknown rule or ``floor`` outside ``[0, 1]``.
    """
    if episodes < 1 or not 0 <= successes <= episodes:
        raise ValueError(f"need 0 <= successes <= episodes and episodes >= 1, not {successes}/{episodes}")
    if not 0.0 <= floor <= 1.0:
        raise ValueError(f"floor must lie in [0, 1], not {floor!r}")
    s = successes / episodes
    if rule == "failure":
        shape = 1.0 - s
    elif rule == "learnable":
        shape = 4.0 * s * (1.0 - s)
    else:
        raise ValueError(f"unknown rule {rule!r}: failure or learnable")
    return round(floor + (1.0 - floor) * shape, 4)


def result_rows(run_dir: Any) -> list[dict[str, Any]]:
    """Rows like the run store's (``success``, ``capabilities``, ``source``, ``template``,
    ``task_id``, ``seed``) from an eval run folder's ``results.jsonl``, task metadata from the suite;
    infrastructure-error episodes and tasks not in the suite are left out.

    Raises:
        FileNotFoundError: no ``results.jsonl`` in ``run_dir``.
    """
    from pathlib import Path

    from phoneenv.evaluation import RunFolder, read_results
    from phoneenv.tasks import get_task

    path = Path(run_dir) / RunFolder.RESULTS
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir}: no {RunFolder.RESULTS} (is it an eval run's --out?)")
    rows = []
    for r in read_results(path):
        if r.infrastructure_error:
            continue
        try:
            task = get_task(r.task_id)
        except KeyError:
            continue
        rows.append(
            {
                "task_id": r.task_id,
                "seed": r.seed,
                "success": bool(r.success),
                "capabilities": list(task.capabilities),
                "source": task.source,
                "template": task.template,
            }
        )
    return rows


def _caps(value: Any) -> list[str]:
    if isinstance(value, str):  # the run store keeps JSON lists as text
        import json

        value = json.loads(value) if value else []
    return list(value or [])


def weights_from_results(
    rows: Iterable[Mapping[str, Any]],
    config: SamplerConfig | None = None,
    *,
    rule: str = "failure",
    floor: float = 0.1,
    min_episodes: int = 2,
    round_name: str = "",
    log_path: Any = None,
) -> tuple[SamplerConfig, list[WeightChange]]:
    """The sampler config after a round: each capability tag's, source's and template's weight
    set to :func:`measured_weight` of its episodes in ``rows`` (dicts with ``success`` and
    ``capabilities`` (a list or its JSON text), ``source``, ``template``: run-store rows or
    :func:`result_rows`), for groups with at least ``min_episodes`` episodes; other weights kept.
    Returns the new config and the changes (``why`` gives the success count and the rule), which
    are appended to ``log_path`` (JSON Lines) when given.

    Raises:
        ValueError: ``min_episodes < 1`` or a bad ``rule``/``floor`` (see :func:`measured_weight`).
    """
    if min_episodes < 1:
        raise ValueError(f"min_episodes must be >= 1, not {min_episodes}")
    measured_weight(0, 1, rule=rule, floor=floor)  # checks rule and floor
    config = config or SamplerConfig()
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        ok = int(bool(row["success"]))
        keys = [f"capability:{c}" for c in dict.fromkeys(_caps(row.get("capabilities")))]
        if row.get("source"):
            keys.append(f"source:{row['source']}")
        if row.get("template"):
            keys.append(f"template:{row['template']}")
        for key in keys:
            counts[key][0] += ok
            counts[key][1] += 1
    updates: dict[tuple[str, Any], float] = {}
    changes = []
    at = _now()
    where = f" in {round_name}" if round_name else ""
    for group in sorted(counts):
        won, n = counts[group]
        if n < min_episodes:
            continue
        table, key = _table_key(group)
        before = float(getattr(config, table).get(key, config.default_weight))
        after = measured_weight(won, n, rule=rule, floor=floor)
        if after != before:
            updates[(table, key)] = after
            why = f"{won}/{n} episodes succeeded{where} ({100 * won / n:.0f}%); rule {rule}, floor {floor:g}"
            changes.append(WeightChange(group, before, after, why, at))
    out = _with(config, updates)
    _log(changes, log_path)
    return out, changes
