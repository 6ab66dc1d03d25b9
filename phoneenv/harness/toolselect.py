"""Tool selection: which of an episode's tools the env offers (``tools="all" | "task" | "retrieve" | "search"``).

Offering every tool costs every turn: the 256 specs of a sandbox episode are about 130,000
characters of JSON. With ``gym.make("PhonePlan-v0", tools="retrieve", tools_k=20)`` the env
offers, at reset, the ``k`` backend tools most relevant to the goal plus every *harness* tool (the
tools the harness's providers serve: ``finish``, ``user.*``, ``memory.*`` and the ``system``
tools memory brings, ``skills.read``, ``agent.delegate`` where offered). ``tools="search"`` does
the same and adds :data:`SEARCH` (``tools.search(query, k)``): its result lists the matching
tools and *loads* them into the episode's offered set (announced in the next step's
``info["tools"]``). A call of a tool that exists but is not offered is a
``precondition_failed`` feedback whose hint names ``tools.search`` (recorded like any call).
``tools="task"`` offers the backend tools of the task's own apps (``TaskSpec.apps``) and of the
phone's (:data:`DEVICE_APPS`), plus every harness tool (:func:`task_tools`): what a one-app task
needs without a ranking, and what ``phoneenv mcp serve`` offers by default.

Ranking (:class:`ToolSelector`), for a goal:

1. **Experience**: the tools the reference plans of the most similar *example* tasks used (by
   default the suite's ``train`` split, the task itself left out). Similar = BM25 over the goals
   (:func:`phoneenv.harness.memory.tokenize`, :func:`phoneenv.harness.memory.bm25_class`: the
   memory's BM25, whose idf stays positive in small sets where Okapi's goes negative); each of the
   :data:`NEIGHBOURS` nearest examples votes ``1 / rank`` for each tool its plan called.
2. **Direct**: BM25 and the packaged MiniLM sentence embeddings over each tool's document (name,
   description, parameter names and descriptions: :func:`tool_document`), fused by Reciprocal
   Rank Fusion (:func:`phoneenv.harness.memory.rrf_fuse`), as memory retrieval does.

The offered ``k`` are the experience tools by votes, then the direct ranking fills the rest. With
a token budget (``tools_budget``, :meth:`ToolSelector.offer`) the ``k`` are cut to those that fit
beside the harness tools, counted by the model's tokenizer or :func:`estimate_tokens`.
``tools.search`` ranks by name first (every tool named exactly in the query), then directly.
Rankings are cached per task (goal) and per tool set; the embedder loads only when a ranking
needs it (never in ``"all"``, nor with ``k = 0``). Without the ``memory`` extra the direct
ranking is BM25 alone, with one ``RuntimeWarning``, as memory search is.

Reused from :mod:`phoneenv.harness.memory` (public API only): ``tokenize``, ``rrf_fuse``,
``bm25_class``, ``shared_embedder`` (the process's one embedder, shared with memory search),
``Embedder``.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import Field
from typing_extensions import TypedDict

from phoneenv.compact import tool_text
from phoneenv.contract import Domain, Feedback, TaskSpec, ToolSpec
from phoneenv.harness import feedback
from phoneenv.harness.memory import (
    Embedder,
    bm25_class,
    rrf_fuse,
    shared_embedder,
    tokenize,
)
from phoneenv.harness.providers import ToolProvider
from phoneenv.tools import ToolDef, build_tool, tool

if TYPE_CHECKING:
    from phoneenv.env import PhonePlanEnv

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_K",
    "DEVICE_APPS",
    "MODES",
    "NEIGHBOURS",
    "SEARCH",
    "SEARCH_TOOL",
    "ToolSearch",
    "ToolSelector",
    "estimate_tokens",
    "plan_tools",
    "selector_for",
    "task_tools",
    "tool_document",
]

log = logging.getLogger(__name__)

Mode = Literal["all", "task", "retrieve", "search"]
MODES: tuple[str, ...] = ("all", "task", "retrieve", "search")
"""The env's ``tools=`` modes."""
DEVICE_APPS: tuple[str, ...] = ("system", "screen", "user")
"""The phone's own apps, whose tools ``tools="task"`` offers in every episode (signing in,
permissions, notifications, the screen, authenticating the user) beside the task's apps."""
DEFAULT_K = 20
"""Backend tools offered at reset in ``retrieve``/``search`` (``tools_k``)."""
NEIGHBOURS = 10
"""Example tasks whose plans vote for tools (see the module docstring)."""
SEARCH = "tools.search"
"""The search tool's name (offered in ``tools="search"`` only)."""
MAX_QUERY_CHARS = 500
_NAME = re.compile(r"[a-z][a-z0-9_]*(?:\.|__)[a-z][a-z0-9_]*")


def tool_document(spec: ToolSpec) -> str:
    """The text a tool is retrieved by: its name with ``.``/``_`` as spaces, its description, and
    each parameter's name and description."""
    parts = [spec.name.replace(".", " ").replace("_", " "), spec.description]
    for pname, prop in spec.parameters.get("properties", {}).items():
        desc = prop.get("description") if isinstance(prop, Mapping) else None
        parts.append(f"{pname.replace('_', ' ')} {desc or ''}".strip())
    return " ".join(parts)


def plan_tools(task: TaskSpec) -> list[str]:
    """The tool names ``task``'s reference plan needs, in first-use order: every call's name and
    every full tool name an ``agent.delegate`` step hands on (``__`` read as ``.``)."""
    out: dict[str, None] = {}
    for call in task.reference_plan:
        out.setdefault(call.name.replace("__", "."))
        if call.name.replace("__", ".") == "agent.delegate":
            for name in call.arguments.get("tools") or ():
                if isinstance(name, str) and "." in name:
                    out.setdefault(name.strip().replace("__", "."))
    return list(out)


def _bm25(docs: list[list[str]]) -> Any:
    return bm25_class()(docs) if any(docs) else None


def _bm25_order(index: Any, query: str) -> list[int]:
    terms = tokenize(query)
    if index is None or not terms:
        return []
    scores = np.asarray(index.get_scores(terms), dtype=np.float64)
    # only documents sharing a term with the query rank
    hits = np.zeros(len(scores), dtype=bool)
    for term in set(terms):
        hits |= np.asarray([term in f for f in index.doc_freqs])
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order if hits[i]]


class _Direct:
    """BM25 + embeddings over one tool set's documents (the embeddings made on first use), or
    BM25 alone when ``embedder()`` is None."""

    def __init__(self, specs: Sequence[ToolSpec], embedder: Callable[[], Embedder | None]) -> None:
        self.names = [s.name for s in specs]
        self.docs = [tool_document(s) for s in specs]
        self.bm25 = _bm25([tokenize(d) for d in self.docs])
        self._embedder = embedder
        self._matrix: np.ndarray | None = None

    def rank(self, query: str) -> list[str]:
        bm = _bm25_order(self.bm25, query)
        emb = self._embedder()
        if emb is None:  # BM25 alone: its hits first, then the other tools in their given order
            fused = rrf_fuse({"bm25": bm}, len(self.names))
            return [self.names[int(i)] for i in np.argsort(-fused, kind="stable")]
        if self._matrix is None:
            self._matrix = np.asarray(emb(self.docs), dtype=np.float32)
        q = np.asarray(emb([query]), dtype=np.float32)[0]
        sims = self._matrix @ q
        order = [int(i) for i in np.argsort(-sims, kind="stable")]
        fused = rrf_fuse({"bm25": bm, "embedding": order}, len(self.names))
        return [self.names[int(i)] for i in np.argsort(-fused, kind="stable")]


class _Examples:
    """Example tasks (goal → the tools its plan used), searchable by BM25 over the goals."""

    def __init__(self, tasks: Iterable[TaskSpec]) -> None:
        kept = [t for t in tasks if t.reference_plan]
        self.ids = [t.id for t in kept]
        self.tools = [plan_tools(t) for t in kept]
        self.bm25 = _bm25([tokenize(t.goal) for t in kept])

    def votes(self, goal: str, exclude: str | None, n: int) -> list[str]:
        scores: dict[str, float] = {}
        rank = 0
        for i in _bm25_order(self.bm25, goal):
            if self.ids[i] == exclude:
                continue
            rank += 1
            for name in self.tools[i]:
                scores[name] = scores.get(name, 0.0) + 1.0 / rank
            if rank >= n:
                break
        return sorted(scores, key=lambda name: -scores[name])


def _train_examples() -> list[TaskSpec]:
    from phoneenv.tasks import select

    return select("split:train")


class ToolSelector:
    """Chooses the tools an episode offers (``retrieve``/``search``) and serves ``tools.search``.

    Args:
        mode: ``"retrieve"`` or ``"search"`` (``"all"`` needs no selector).
        k: backend tools offered at reset (0 offers only the harness tools, and ``tools.search``
            in ``"search"``).
        embedder: an :class:`~phoneenv.harness.memory.Embedder` for the direct ranking (default:
            :func:`~phoneenv.harness.memory.shared_embedder`, the packaged all-MiniLM-L6-v2
            loaded on first use, or BM25 alone when it cannot load).
        examples: the example tasks whose plans vote (default: the suite's ``train`` split,
            loaded on first use); ``()`` for none (direct ranking only).
        neighbours: how many nearest examples vote.
        budget: tokens the tools offered at reset may take in all, harness tools included
            (None: no budget, the ``k`` best are offered). The ``k`` best are offered in rank
            order while they fit; one that does not fit is passed over for smaller ones below
            it, and the best-ranked tool is offered whatever its size, so an episode never
            starts without a backend tool. ``tools.search`` may load tools beyond it.
        count_tokens: tokens of one tool as the model reads it, given what a chat template
            writes for the tool's OpenAI entry (:func:`phoneenv.compact.tool_text`: its
            TypeScript-like declaration); default :func:`estimate_tokens`. Pass the model's tokenizer
            (``lambda text: len(tok.encode(text)) + 1``) for an exact budget.

    Thread-safe; cheap to share: :func:`selector_for` returns one per ``(mode, k, budget)`` per
    process.

    Raises:
        ValueError: an unknown mode, ``k < 0``, ``neighbours < 1``, ``budget < 1``, or
            ``count_tokens`` without a budget.
    """

    def __init__(
        self,
        mode: str = "retrieve",
        k: int = DEFAULT_K,
        *,
        embedder: Embedder | None = None,
        examples: Iterable[TaskSpec] | None = None,
        neighbours: int = NEIGHBOURS,
        budget: int | None = None,
        count_tokens: Callable[[str], int] | None = None,
    ) -> None:
        if mode not in ("retrieve", "search"):
            raise ValueError(f"a tool selector's mode is 'retrieve' or 'search', not {mode!r}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"tools_k must be an integer >= 0, not {k!r}")
        if neighbours < 1:
            raise ValueError(f"neighbours must be at least 1, not {neighbours}")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise ValueError(f"tools_budget must be None or an integer >= 1 (tokens), not {budget!r}")
        if count_tokens is not None and budget is None:
            raise ValueError("count_tokens counts against a budget: pass budget= too")
        self.mode = mode
        self.k = k
        self.neighbours = neighbours
        self.budget = budget
        self.count_tokens: Callable[[str], int] = count_tokens or estimate_tokens
        self._sizes: dict[int, tuple[ToolSpec, int]] = {}
        self._warned = False
        self._embedder = embedder
        self._example_tasks = None if examples is None else list(examples)
        self._examples: _Examples | None = None
        self._direct: dict[tuple[tuple[str, str], ...], _Direct] = {}
        self._cache: OrderedDict[tuple[Any, ...], tuple[str, ...]] = OrderedDict()
        self._lock = threading.RLock()

    # -- parts, made on first use ------------------------------------------------------------------
    def embedder(self) -> Embedder | None:
        """The embedder: the one given, else the process-wide MiniLM one
        (:func:`~phoneenv.harness.memory.shared_embedder`, loaded on the first call); None when
        that cannot load (one ``RuntimeWarning``), and the direct ranking is BM25 alone."""
        return self._embedder if self._embedder is not None else shared_embedder()

    def _examples_index(self) -> _Examples:
        if self._examples is None:
            tasks = self._example_tasks if self._example_tasks is not None else _train_examples()
            self._examples = _Examples(tasks)
        return self._examples

    def _direct_for(self, specs: Sequence[ToolSpec]) -> _Direct:
        key = tuple((s.name, s.description) for s in specs)
        direct = self._direct.get(key)
        if direct is None:
            direct = self._direct[key] = _Direct(specs, self.embedder)
        return direct

    # -- ranking ---------------------------------------------------------------------------------
    def rank(
        self, goal: str, specs: Sequence[ToolSpec], *, task_id: str | None = None, k: int | None = None
    ) -> list[str]:
        """The ``k`` (default :attr:`k`) names of ``specs`` most relevant to ``goal``, best first:
        the tools similar example tasks used (``task_id`` itself left out), then the direct
        ranking. Cached per ``(task_id, goal, k)`` and tool set."""
        k = self.k if k is None else k
        if k <= 0 or not specs:
            return []
        key = (task_id, goal, k, tuple(s.name for s in specs))
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return list(hit)
            have = {s.name for s in specs}
            out: dict[str, None] = {}
            for name in self._examples_index().votes(goal, task_id, self.neighbours):
                if name in have:
                    out.setdefault(name)
                    if len(out) >= k:
                        break
            if len(out) < k:
                for name in self._direct_for(specs).rank(goal):
                    out.setdefault(name)
                    if len(out) >= k:
                        break
            ranked = tuple(out)
            self._cache[key] = ranked
            while len(self._cache) > 8192:
                self._cache.popitem(last=False)
            return list(ranked)

    def tokens(self, spec: ToolSpec) -> int:
        """Tokens ``spec`` takes in the offered list: :attr:`count_tokens` of what a chat
        template writes for its OpenAI entry (:func:`~phoneenv.compact.tool_text` of
        :meth:`~phoneenv.contract.ToolSpec.to_openai`); cached per spec object."""
        hit = self._sizes.get(id(spec))
        if hit is None:
            n = self.count_tokens(tool_text(spec.to_openai()))  # once per spec: the cache below
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
                raise TypeError(f"count_tokens must return an int >= 0 (tokens), not {n!r}")
            n = int(n)
            with self._lock:
                if len(self._sizes) >= 8192:
                    self._sizes.clear()
                self._sizes[id(spec)] = hit = (spec, n)  # the spec is kept, so its id is not reused
        return hit[1]

    def offer(
        self,
        goal: str,
        specs: Sequence[ToolSpec],
        always: Sequence[ToolSpec] = (),
        *,
        task_id: str | None = None,
    ) -> list[str]:
        """The backend tools of ``specs`` an episode offers at reset, best first: :meth:`rank`'s
        ``k`` names, cut to :attr:`budget` tokens less what ``always`` (the harness tools,
        offered in any case) takes. Without a budget, :meth:`rank` as it is. When the harness
        tools and the best tool alone exceed the budget, those are offered and a warning is
        logged once per selector.

        Raises:
            TypeError: ``count_tokens`` returned something other than an int >= 0.
        """
        ranked = self.rank(goal, specs, task_id=task_id)
        if self.budget is None or not ranked:
            return ranked
        by_name = {s.name: s for s in specs}
        room = self.budget - sum(self.tokens(s) for s in always) - self.tokens(by_name[ranked[0]])
        if room < 0 and not self._warned:
            self._warned = True
            log.warning(
                "tools_budget %d is below what is always offered: the harness tools and the best tool take %d "
                "tokens (%s); offering those only",
                self.budget,
                self.budget - room,
                task_id or "this task",
            )
        out = [ranked[0]]
        for name in ranked[1:]:
            size = self.tokens(by_name[name])
            if size <= room:
                out.append(name)
                room -= size
        return out

    def search(self, query: str, specs: Sequence[ToolSpec], k: int) -> list[str]:
        """``tools.search``'s ranking: every name of ``specs`` written in ``query`` (``app.verb``
        or ``app__verb``), in query order, then the direct ranking until there are ``k`` (the
        embedder is not needed when the named tools are already ``k``)."""
        have = {s.name for s in specs}
        out: dict[str, None] = {}
        for m in _NAME.finditer(query.lower()):
            name = m.group().replace("__", ".")
            if name in have:
                out.setdefault(name)
        if len(out) < k:
            with self._lock:
                direct = self._direct_for(specs)
                for name in direct.rank(query):
                    out.setdefault(name)
                    if len(out) >= k:
                        break
        return list(out)


CHARS_PER_TOKEN = 3.0
"""Characters of a tool's text (:func:`phoneenv.compact.tool_text`) per token in
:func:`estimate_tokens`. SmolLM2's tokenizer (the default ``--agent llm`` model's) reads the
suite's tool declarations at 3.31 characters a token (median; 2.77 at the 5th percentile, 2.51
at the least), so the estimate errs high by about a tenth on a list of tools (all 259: 19,166
estimated, 17,522 counted)."""


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` estimated without a tokenizer: ``ceil(len(text) / CHARS_PER_TOKEN)``
    plus 1 for the line break that follows each tool in a chat template."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) + 1


_SELECTORS: dict[tuple[str, int, int | None], ToolSelector] = {}
_SELECTORS_LOCK = threading.Lock()


def task_tools(task: TaskSpec, specs: Sequence[ToolSpec]) -> list[str]:
    """The names of ``specs`` (an episode's backend tools) that ``tools="task"`` offers for
    ``task``: those of its apps (``task.apps``) and of :data:`DEVICE_APPS`, in ``specs``'
    order. A task that names no apps (one about the user's memory, say) gets the phone's own."""
    apps = {*task.apps, *DEVICE_APPS}
    return [s.name for s in specs if s.app in apps]


def selector_for(mode: str, k: int = DEFAULT_K, budget: int | None = None) -> ToolSelector | None:
    """The process-wide :class:`ToolSelector` for ``mode``, ``k`` and ``budget`` (None for
    ``"all"`` and ``"task"``, which rank nothing), so every env of a process shares one set of
    indexes and caches.

    Raises:
        ValueError: an unknown mode or a bad ``k`` or ``budget`` (see :class:`ToolSelector`).
    """
    if mode in ("all", "task"):
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"tools_k must be an integer >= 0, not {k!r}")
        return None
    if mode not in MODES:
        raise ValueError(f"tools must be one of {', '.join(MODES)} or a ToolSelector, not {mode!r}")
    with _SELECTORS_LOCK:
        sel = _SELECTORS.get((mode, k, budget))
        if sel is None:
            sel = _SELECTORS[(mode, k, budget)] = ToolSelector(mode, k, budget=budget)
        return sel


# -- the tools.search tool --------------------------------------------------------------------------

Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]


class FoundTool(TypedDict):
    """One tool ``tools.search`` found."""

    name: str
    description: str


class SearchResult(TypedDict):
    """``tools.search``'s result."""

    tools: list[FoundTool]
    loaded: list[str]
    note: str


class ToolSearch(ToolProvider):
    """Offers :data:`SEARCH` (``tools="search"``): finds tools of the episode by name or
    meaning and loads them into the offered set through
    :meth:`~phoneenv.env.PhonePlanEnv.load_tools`."""

    def __init__(self, selector: ToolSelector) -> None:
        self.selector = selector

    @tool()
    def search(self, query: Query, k: Annotated[int, Field(ge=1, le=20)] = 5) -> SearchResult:
        """Find more tools and load them: tools you name exactly (app.verb) and the k best matches for what you describe are added to your tool list.

        Args:
            query: What you need to do, or tool names, e.g. "send a text message" or "contacts.search messages.send".
            k: How many tools to load: those named exactly, then the best matches up to k.
        """
        raise NotImplementedError  # served by call()

    def offer(self, env: PhonePlanEnv, offered: Mapping[str, ToolDef]) -> dict[str, ToolDef]:
        return {SEARCH: SEARCH_TOOL}

    def call(self, env: PhonePlanEnv, name: str, args: dict[str, Any]) -> Feedback:
        specs = env.selectable_specs()
        query = args["query"]
        k = args["k"]
        try:
            names = self.selector.search(query, specs, k)
        except Exception:  # the embedder failed to load or run: the harness's fault, not the agent's
            log.exception("tools.search failed")
            return feedback.internal_error(SEARCH, "the tool index")
        loaded = env.load_tools(names)
        by_name = {s.name: s for s in specs}
        found = [FoundTool(name=n, description=by_name[n].description) for n in names]
        note = (
            f"loaded {len(loaded)} tool(s) into your tool list"
            if loaded
            else "these tools were already in your tool list"
        )
        return Feedback(ok=True, result=SearchResult(tools=found, loaded=loaded, note=note))


SEARCH_TOOL: ToolDef = build_tool("tools", Domain.DEVICE, ToolSearch.search)
"""The ``tools.search`` tool's spec, validator and method."""
