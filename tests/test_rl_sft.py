"""rl.sft: traces → planner-format chat examples, the per-token loss mask (erroneous turns masked),
TRL's labels and loss following the mask, and a short CPU SFT run on the tiny model."""

from __future__ import annotations

import json

import pytest

from agents.planner import SYSTEM_PROMPT, LLMPlanner
from phoneenv.env import PhonePlanEnv
from phoneenv.evaluation import run_episodes
from phoneenv.llm import ChatResult
from phoneenv.tasks import get_task, select
from rl.sft import (
    DETOUR_AGENT,
    NO_CALL_PREFIX,
    SFTRunConfig,
    build_sft_dataset,
    checked_plan,
    checked_traces,
    detour_traces,
    episode_tools,
    example_tools,
    load_traces,
    reference_traces,
    tokenize_example,
    traces_to_examples,
    train_sft,
)

FAVORITE = "contacts.favorite/0"  # search, set_favorite, search, set_favorite, finish


def run_calls(task_id, calls):
    """Play ``calls`` (dicts, or raw text for a reply with no call) through the env; the trace."""
    env = PhonePlanEnv(task=get_task(task_id))
    env.reset(seed=0)
    for call in calls:
        _, _, terminated, truncated, _ = env.step(call if isinstance(call, str) else json.dumps(call))
        if terminated or truncated:
            break
    trace = env.trace
    env.close()
    return trace


def plan(task_id):
    return [{"name": c.name, "arguments": c.arguments} for c in get_task(task_id).reference_plan]


@pytest.fixture(scope="module")
def erroneous_trace():
    """contacts.favorite/0 with one erroneous turn: set_favorite with a string for the boolean
    ``favorite`` (invalid_arguments), then the correct call."""
    search, fav, *rest = plan(FAVORITE)
    bad = {"name": fav["name"], "arguments": {**fav["arguments"], "favorite": "yes"}}
    trace = run_calls(FAVORITE, [search, bad, fav, *rest])
    assert trace.verdict.success
    assert [s.feedback.ok for s in trace.steps] == [True, False, True, *[True] * len(rest)]
    assert trace.steps[1].feedback.error.value == "invalid_arguments"
    return trace


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


# -- traces → examples -------------------------------------------------------------------------


def test_reference_trace_to_messages_hand_checked(tmp_path):
    task = get_task("contacts.lookup_number/0")
    traces = reference_traces(task.id, tmp_path)
    assert len(traces) == 1 and traces[0].verdict.success
    assert load_traces(tmp_path)[0] == traces[0]  # the JSONL written by run_episodes reads back
    (ex,) = traces_to_examples(traces)
    # The plan: look the person up, look the recipient up, text the number, answer with it.
    search, _, send, done = task.reference_plan
    first = search.arguments["query"]
    (person,) = [c for c in task.fixtures.records["contacts.contacts"] if c["name"].split()[0] == first]
    assert done.arguments == {"answer": person["phone"]} and send.name == "messages.send"
    assert ex["task_id"] == task.id and ex["success"] is True
    msgs = ex["messages"]
    assert msgs[:4] == [
        {"role": "system", "content": SYSTEM_PROMPT.format(goal=task.goal)},
        {"role": "user", "content": task.goal},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "contacts__search", "arguments": json.dumps({"query": first})},
                }
            ],
            "weight": 1,
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": json.dumps({"ok": True, "result": {"contacts": [person], "total": 1}}, separators=(",", ":")),
        },
    ]
    assert [m["role"] for m in msgs[4:]] == ["assistant", "tool", "assistant", "tool", "assistant"]
    assert msgs[6]["tool_calls"][0]["function"]["name"] == "messages__send"
    assert msgs[-1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_4",
                "type": "function",
                "function": {"name": "finish", "arguments": json.dumps({"answer": person["phone"]})},
            }
        ],
        "weight": 1,
    }  # no tool message after finish: the planner never sees that feedback
    names = [t["function"]["name"] for t in example_tools(ex)]
    assert json.loads(ex["tools"]) == episode_tools("sandbox") and len(names) > 50
    assert "contacts__search" in names and "finish" in names and not any("." in n for n in names)
    (short,) = traces_to_examples(traces, tool_filter="task")
    short_names = {t["function"]["name"] for t in example_tools(short)}
    assert {"contacts__search", "system__sign_in", "user__confirm", "finish"} <= short_names
    assert not any(n.startswith(("mail__", "calendar__")) for n in short_names)


class Scripted:
    """A ChatClient replaying replies, with ids call_<step> like the examples'."""

    model = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)
        self.n = 0

    def chat(self, messages, *, tools=None, json_schema=None, max_tokens=512):
        self.n += 1
        reply = self.replies.pop(0)
        if isinstance(reply, str):
            return ChatResult(content=reply, raw=reply)
        name = reply["name"].replace(".", "__")
        return ChatResult(tool_calls=[{"id": f"call_{self.n}", "name": name, "arguments": reply["arguments"]}])


def test_examples_are_what_the_llm_planner_sends(tmp_path):
    """Replay a trace with a reply without a call and an erroneous call through LLMPlanner; its
    conversation and tools equal the example built from the resulting trace (weights aside)."""
    # notes.delete_note where the user wants to confirm before deleting: search, confirm, delete, finish
    task = next(t for t in select("template:notes.delete_note") if t.fixtures.confirm_sensitive)
    search, confirm, send, finish = plan(task.id)
    planner = LLMPlanner(Scripted(["Let me look the note up.", search, send, confirm, send, finish]))
    (res,) = run_episodes(planner, [task], tmp_path)
    assert res.success
    (trace,) = load_traces(tmp_path)
    assert [s.feedback.error.value if s.feedback.error else None for s in trace.steps] == [
        "invalid_json",
        None,
        "confirmation_required",
        None,
        None,
        None,
    ]
    (ex,) = traces_to_examples([trace])
    assert example_tools(ex) == planner.tools
    weights = [m.get("weight") for m in ex["messages"] if m["role"] == "assistant"]
    assert weights == [0, 1, 0, 1, 1, 1]
    assert [{k: v for k, v in m.items() if k != "weight"} for m in ex["messages"]] == planner.messages
    assert ex["messages"][3] == {
        "role": "user",
        "content": NO_CALL_PREFIX + trace.steps[0].feedback.model_dump_json(exclude_none=True),
    }


def test_failed_inconsistent_and_redacted_traces(tmp_path):
    failed = run_calls("contacts.lookup_number/0", [{"name": "finish", "arguments": {"answer": "no idea"}}])
    assert not failed.verdict.success
    assert traces_to_examples([failed]) == []
    (ex,) = traces_to_examples([failed], include_failed=True)
    assert ex["success"] is False
    ok = run_calls("contacts.lookup_number/0", plan("contacts.lookup_number/0"))
    weird = ok.model_copy(update={"verdict": ok.verdict.model_copy(update={"inconsistent": True})})
    assert traces_to_examples([weird]) == [] and len(traces_to_examples([weird], include_inconsistent=True)) == 1
    # A secret argument is redacted in the trace: the call stays in context but is not trained.
    task = get_task("mail.archive/0")
    sign_in, *rest = plan(task.id)
    account = sign_in["arguments"]["account"]
    password = task.fixtures.vault[account].get_secret_value()
    trace = run_calls(task.id, [{**sign_in, "arguments": {**sign_in["arguments"], "password": password}}, *rest])
    assert trace.verdict.success and trace.steps[0].feedback.ok
    (ex,) = traces_to_examples([trace], tool_filter="task")
    first = ex["messages"][2]
    assert '"password": "***"' in first["tool_calls"][0]["function"]["arguments"] and first["weight"] == 0
    assert password not in json.dumps(ex)


# -- the loss mask -----------------------------------------------------------------------------


def runs(ids, mask):
    """Maximal runs of consecutive mask-1 tokens."""
    out, cur = [], []
    for i, m in zip(ids, mask, strict=True):
        if m:
            cur.append(i)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def rendered_call(call):
    return (
        '<tool_call>\n{"name": '
        + json.dumps(call["name"].replace(".", "__"))
        + ', "arguments": '
        + json.dumps(call["arguments"])
        + "}\n</tool_call><|im_end|>"
    )


def test_mask_is_one_exactly_on_successful_assistant_turns(erroneous_trace, tokenizer):
    (ex,) = traces_to_examples([erroneous_trace], tool_filter="task")
    assert [m["weight"] for m in ex["messages"] if m["role"] == "assistant"] == [1, 0, 1, 1, 1, 1]
    tok = tokenize_example(ex, tokenizer)
    ids, mask = tok["input_ids"], tok["assistant_masks"]
    assert len(ids) == len(mask) and set(mask) == {0, 1}
    full = tokenizer.apply_chat_template(ex["messages"], tools=example_tools(ex), tokenize=False)
    assert tokenizer.decode(ids) == full
    search, fav, *rest = plan(FAVORITE)
    bad = {"name": fav["name"], "arguments": {**fav["arguments"], "favorite": "yes"}}
    # Masked tokens decode to exactly the successful replies, end-of-turn token included.
    assert [tokenizer.decode(r) for r in runs(ids, mask)] == [rendered_call(c) for c in (search, fav, *rest)]
    # Everything else (system with tools, goal, tool results, the erroneous reply, the assistant
    # headers) is mask 0.
    unmasked = tokenizer.decode([i for i, m in zip(ids, mask, strict=True) if not m])
    assert unmasked.count("<|im_start|>assistant\n") == 2 + len(rest) + 1
    assert rendered_call(bad) in unmasked
    assert SYSTEM_PROMPT.format(goal=erroneous_trace.goal).split("\n")[0] in unmasked
    assert '"error":"invalid_arguments"' in unmasked and "<tool_response>" in unmasked
    assert "<tool_response>" not in tokenizer.decode([i for i, m in zip(ids, mask, strict=True) if m])


def test_trl_labels_and_loss_follow_the_mask(erroneous_trace, tiny_model_dir, tokenizer, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM
    from trl import SFTTrainer

    ds = build_sft_dataset([erroneous_trace], tokenizer, tool_filter="task")
    assert ds.column_names == ["input_ids", "assistant_masks", "task_id", "masked_tokens"]
    mask = ds[0]["assistant_masks"]
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    trainer = SFTTrainer(
        model=model,
        args=SFTRunConfig(max_steps=1, tensorboard=False).to_sft_config(tmp_path),
        train_dataset=ds,
        processing_class=tokenizer,
    )
    # TRL folded our mask into labels: -100 exactly where the mask is 0.
    labels = trainer.train_dataset[0]["labels"]
    assert [lab == -100 for lab in labels] == [m == 0 for m in mask]
    assert [lab for lab in labels if lab != -100] == [i for i, m in zip(ds[0]["input_ids"], mask, strict=True) if m]
    batch = trainer.data_collator([trainer.train_dataset[0]])
    assert ((batch["labels"] == -100) == (torch.tensor(mask) == 0)[None]).all()
    # TRL's loss is the mean NLL over the mask-1 tokens only (checked against a hand computation).
    model.eval()
    with torch.no_grad():
        trl_loss = trainer.compute_loss(model, {k: v.clone() for k, v in batch.items()}).item()
        logits = model(input_ids=batch["input_ids"]).logits[0, :-1]
    targets = batch["input_ids"][0, 1:]
    nll = torch.nn.functional.cross_entropy(logits, targets, reduction="none")
    m = torch.tensor(mask[1:], dtype=torch.bool)
    assert trl_loss == pytest.approx(nll[m].mean().item(), rel=1e-4)
    assert abs(nll.mean().item() - trl_loss) > 1e-3  # an unmasked loss would differ
    # Masked positions get no gradient: d loss / d logits is zero wherever the next token is masked.
    logits = model(input_ids=batch["input_ids"]).logits
    logits.retain_grad()
    loss = torch.nn.functional.cross_entropy(logits[0, :-1], batch["labels"][0, 1:], ignore_index=-100)
    loss.backward()
    grad_rows = logits.grad[0, :-1].abs().sum(-1)
    assert (grad_rows[~m] == 0).all() and (grad_rows[m] > 0).all()


# -- detours: erroneous turns to mask ----------------------------------------------------------


@pytest.fixture(scope="module")
def detour_trace(tmp_path_factory):
    """contacts.favorite/0 with a detour before every plan step (rate 1: never twice in a row)."""
    (trace,) = detour_traces(FAVORITE, tmp_path_factory.mktemp("detours"), detour_rate=1.0, seed=3)
    return trace


def test_detour_traces_recover_and_only_plan_calls_are_trained(detour_trace, tmp_path):
    reference = plan(FAVORITE)
    steps = detour_trace.steps
    assert detour_trace.agent == DETOUR_AGENT and detour_trace.verdict.success  # the detours harm nothing
    assert len(steps) == 2 * len(reference)  # one wrong call before each plan call
    detours, recoveries = steps[0::2], steps[1::2]
    assert [{"name": s.action.name, "arguments": s.action.arguments} for s in recoveries] == reference
    assert all(s.feedback.ok for s in recoveries)
    assert sum(not s.feedback.ok for s in detours) >= 2  # errors the model reads and recovers from
    assert all(s.action != r.action for s, r in zip(detours, recoveries, strict=True))
    (ex,) = traces_to_examples([detour_trace], tool_filter="task")
    assert [m["weight"] for m in ex["messages"] if m["role"] == "assistant"] == [0, 1] * len(reference)
    # detour traces are SFT data even when they failed (only their plan calls are trained)
    failed = detour_trace.model_copy(update={"verdict": detour_trace.verdict.model_copy(update={"success": False})})
    assert len(traces_to_examples([failed], tool_filter="task")) == 1
    assert traces_to_examples([failed.model_copy(update={"agent": "reference"})], tool_filter="task") == []
    with pytest.raises(ValueError, match="detour_rate"):
        detour_traces(FAVORITE, tmp_path, detour_rate=1.5)


# -- checked plans: redundant but correct ----------------------------------------------------


def test_checked_plan_rereads_after_every_change(tmp_path):
    """clock.alarm_off/0 is list, off, off, finish: checked, each change is followed by the list
    read again (written out by hand), every call succeeds, and every turn is trained."""
    task = get_task("clock.alarm_off/0")
    names = [c.name for c in checked_plan(task.reference_plan, {"clock.list_alarms"})]
    assert names == [
        "clock.list_alarms",
        "clock.set_alarm_enabled",
        "clock.list_alarms",
        "clock.set_alarm_enabled",
        "clock.list_alarms",
        "finish",
    ]
    assert checked_plan(task.reference_plan, set()) == task.reference_plan  # no read before a write: as is
    (trace,) = checked_traces([task], tmp_path)
    assert trace.verdict.success and [s.action.name for s in trace.steps] == names
    assert all(s.feedback.ok for s in trace.steps)
    (ex,) = traces_to_examples([trace], tool_filter="clock,finish")
    assert [m["weight"] for m in ex["messages"] if m["role"] == "assistant"] == [1] * len(names)
    with pytest.raises(ValueError, match="reference plan"):
        checked_traces([task.model_copy(update={"reference_plan": []})], tmp_path)


def test_masked_tokens_are_the_detour_replies_counted_by_hand(detour_trace, tokenizer):
    (ex,) = traces_to_examples([detour_trace], tool_filter="task")
    tok = tokenize_example(ex, tokenizer)
    detours = [s.action for s in detour_trace.steps[0::2]]
    # by hand: each detour reply as the template renders it, tokenised on its own
    by_hand = sum(
        len(tokenizer(rendered_call({"name": a.name, "arguments": a.arguments}), add_special_tokens=False)["input_ids"])
        for a in detours
    )
    assert tok["masked_tokens"] == by_hand > 0
    recoveries = [rendered_call(c) for c in plan(FAVORITE)]
    assert [tokenizer.decode(r) for r in runs(tok["input_ids"], tok["assistant_masks"])] == recoveries
    (ref,) = traces_to_examples([run_calls(FAVORITE, plan(FAVORITE))], tool_filter="task")
    assert tokenize_example(ref, tokenizer)["masked_tokens"] == 0


# -- training ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_sft_on_reference_traces_decreases_the_loss(erroneous_trace, tiny_model_dir, tmp_path):
    tasks = "contacts.lookup_number/0,clock.set_alarm/0,clock.what_time/0"
    traces = [*reference_traces(tasks, tmp_path / "traces"), erroneous_trace]
    # Only the tools these traces call, to keep sequences short (~1.3k tokens) on a shared CPU.
    used = {s.action.name.replace(".", "__") for t in traces for s in t.steps}
    tools = [t for t in episode_tools() if t["function"]["name"] in used]
    cfg = SFTRunConfig(max_steps=12, learning_rate=5e-3, seed=0)
    out = train_sft(tiny_model_dir, traces, tmp_path / "run", cfg, tool_specs_or_tools=tools)
    losses = out["losses"]
    assert out["steps"] == 12 and len(losses) == 12 and out["examples"] == 4
    assert 0 < out["trained_tokens"] < out["tokens"] / 10
    first, last = sum(losses[:4]) / 4, sum(losses[-4:]) / 4  # one epoch each (4 examples, batch 1)
    assert last < first - 1.0, losses
    records = [json.loads(line) for line in (tmp_path / "run" / "sft_log.jsonl").read_text().splitlines()]
    assert [r["loss"] for r in records if "loss" in r] == pytest.approx(losses)
    assert any((tmp_path / "run" / "tensorboard").iterdir())
    assert (tmp_path / "run" / "model" / "config.json").exists()


def test_prefix_inconsistent_template_and_over_long_examples_are_refused(erroneous_trace, tokenizer):
    (ex,) = traces_to_examples([erroneous_trace], tool_filter="task")
    # A template that writes the number of messages up front renders no prefix as a prefix.
    counting = "{{ messages | length }}" + tokenizer.chat_template

    class Counting:
        eos_token = tokenizer.eos_token

        def apply_chat_template(self, messages, **kw):
            return tokenizer.apply_chat_template(messages, chat_template=counting, **kw)

    with pytest.raises(ValueError, match="prefix-consistently"):
        tokenize_example(ex, Counting())
    n = len(tokenize_example(ex, tokenizer)["input_ids"])
    assert len(build_sft_dataset([ex], tokenizer, max_length=n)) == 1
    with pytest.raises(ValueError, match="no SFT example left"):
        build_sft_dataset([ex], tokenizer, max_length=n - 1)
