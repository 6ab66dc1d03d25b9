"""The random agent: well-formed tool calls drawn from the tools' JSON Schemas (a floor baseline).

Strings with a ``pattern`` are drawn from the pattern (``rstr.xeger``); parameters named
``*_id`` reuse ids seen in earlier results, so some calls touch real records. Each step finishes
the episode with probability ``finish_p``.

Where ``agent.delegate`` is offered the random agent calls it like any tool; its ``tools``
argument is drawn as free words, which name no tool, so its delegations almost never open a
frame. When one does, the agent draws from that frame's tools (``info["tools"]``) until its
``finish`` closes it.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import string
from itertools import chain
from typing import Any

import rstr

from agents.base import Agent, AgentAction

__all__ = ["RandomAgent", "StableXeger", "episode_seed", "sample_schema"]

_WORDS = ["hello", "meeting", "Ana", "tomorrow", "call me", "groceries", "late", "office", "ok", "note"]
_ID = re.compile(r"^[a-z]+_\d+$")


def sample_schema(schema: dict[str, Any], rng: random.Random, xeger: rstr.Rstr, ids: list[str], name: str = "") -> Any:
    """A random JSON value valid for ``schema`` (the subset tools use: object, string with
    pattern/enum/length, integer/number with bounds, boolean, array, anyOf, const)."""
    if "anyOf" in schema:
        branches = [b for b in schema["anyOf"] if b.get("type") != "null"] or schema["anyOf"]
        return sample_schema(rng.choice(branches), rng, xeger, ids, name)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        out = {}
        required = set(schema.get("required", []))
        for key, sub in schema.get("properties", {}).items():
            if key in required or rng.random() < 0.4:
                out[key] = sample_schema(sub, rng, xeger, ids, key)
        return out
    if kind == "string":
        if name.endswith("_id") and ids:
            return rng.choice(ids)
        if "pattern" in schema:
            limit = schema.get("maxLength", 10**6)
            best = ""
            for _ in range(500):  # xeger repeats `+` up to 100 times: a short draw comes soon
                text = xeger.xeger(schema["pattern"])
                if schema.get("minLength", 0) <= len(text) <= limit:
                    return text
                best = text if not best or len(text) < len(best) else best
            return best
        lo, hi = schema.get("minLength", 1), min(schema.get("maxLength", 40), 40)
        text = rng.choice(_WORDS)
        return (text * (lo // len(text) + 1))[: max(lo, min(len(text), hi))]
    if kind == "integer":
        lo, hi = schema.get("minimum", 0), schema.get("maximum", 100)
        return rng.randint(lo, min(hi, lo + 1000))
    if kind == "number":
        return rng.uniform(schema.get("minimum", 0.0), schema.get("maximum", 100.0))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        lo = schema.get("minItems", 0)
        hi = max(lo, min(schema.get("maxItems", 2), 2))
        return [sample_schema(schema.get("items", {}), rng, xeger, ids, name) for _ in range(rng.randint(lo, hi))]
    return None


class StableXeger(rstr.Rstr):
    """``rstr.Rstr`` whose draws do not depend on the process's string hash seed, so one seed
    draws the same strings in every process (``PYTHONHASHSEED`` differs between processes unless
    set). rstr builds three candidate lists from sets, whose order follows the hash seed: a negated
    class (``[^...]``, ``list(set(string.printable) - excluded)``) and rstr's ``nonword`` (``\\W``)
    and ``unambiguous`` alphabets (made once at import). Here all three are sorted.

    Args:
        _random: the ``random.Random`` the draws come from.
        custom_alphabets: extra named alphabets, as for ``rstr.Rstr``.
    """

    _SET_BUILT = ("nonword", "unambiguous")

    def __init__(self, _random: random.Random, **custom_alphabets: str) -> None:
        super().__init__(_random, **custom_alphabets)
        for name in self._SET_BUILT:
            if name not in custom_alphabets:
                self._alphabets[name] = "".join(sorted(self._alphabets[name]))

    def _handle_in(self, value: Any) -> Any:
        candidates = list(chain(*(self._handle_state(i) for i in value)))
        if candidates and candidates[0] is False:
            candidates = sorted(set(string.printable).difference(candidates[1:]))
        return self._random.choice(candidates)


def episode_seed(seed: int, task_id: str) -> int:
    """The RNG seed of an episode of ``task_id`` for agent seed ``seed``: the first 8 bytes of
    SHA-256 of ``"<seed>:<task_id>"`` as an unsigned integer (stable across processes and Python
    versions, unlike ``hash``)."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{task_id}".encode()).digest()[:8], "big")


def _collect_ids(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        for v in value.values():
            _collect_ids(v, out)
    elif isinstance(value, list):
        for v in value:
            _collect_ids(v, out)
    elif isinstance(value, str) and _ID.match(value) and value not in out:
        out.append(value)


class RandomAgent(Agent):
    """Uniformly random tool, random arguments valid for the offered schema (the compact
    rendering: a value past a limit it leaves out, such as a date's pattern, is refused by the
    env as ``invalid_arguments``).

    Each episode's draws depend only on ``seed`` and the task id (the RNG is reseeded at
    :meth:`reset` from both, see :func:`episode_seed`), not on the episodes played before nor on
    the process (:class:`StableXeger`): a run split over processes or machines, in any order,
    makes the same calls as one process.

    Args:
        seed: RNG seed (same seed, same calls for the same task and observations).
        finish_p: probability of calling ``finish`` at each step.
    """

    name = "random"

    def __init__(self, seed: int = 0, finish_p: float = 0.15) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.xeger = StableXeger(self.rng)
        self.finish_p = finish_p
        self._tools: list[dict[str, Any]] = []
        self._offered: list[dict[str, Any]] = []
        self._ids: list[str] = []

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Take the episode's tool list and reseed the RNG for this task (:func:`episode_seed`)."""
        self.rng.seed(episode_seed(self.seed, str(info.get("task_id", ""))))
        self._take_tools(info["tools"])
        self._ids = []

    def _take_tools(self, tools: list[dict[str, Any]]) -> None:
        self._offered = tools
        self._tools = [t["function"] for t in tools if t["function"]["name"] != "finish"]

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> AgentAction:
        """A random well-formed call (or ``finish`` with probability ``finish_p``)."""
        if info.get("tools") is not None and info["tools"] is not self._offered:
            self._take_tools(info["tools"])  # the active frame changed
        fb = info.get("feedback")
        if fb is not None and getattr(fb, "ok", False):
            _collect_ids(fb.result, self._ids)
        if not self._tools or self.rng.random() < self.finish_p:
            return AgentAction(json.dumps({"name": "finish", "arguments": {"answer": self.rng.choice(_WORDS)}}))
        fn = self.rng.choice(self._tools)
        args = sample_schema(fn["parameters"], self.rng, self.xeger, self._ids)
        return AgentAction(json.dumps({"name": fn["name"], "arguments": args}))
