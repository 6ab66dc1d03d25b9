"""The vLLM sampling path of multi-turn rollouts (rl.vllm_engine), on CPU.

vLLM needs a GPU, so these tests drive :class:`VLLMSampler` with ``HFEngine``: an object with
``vllm.LLM.generate``'s call shape and output shape that samples with the Hugging Face model under
the grammar it is *given as EBNF text* (what vLLM receives), with the seed, temperature, token
budget and stop ids of each request. Under the same seeds it must reproduce the ``transformers``
sampler token for token, which proves the EBNF text, the seeds and the budgets are passed right.
The real engine is exercised by ``test_vllm_engine_on_gpu`` where vLLM and a GPU exist.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from rl.vllm_engine import VLLMSampler, check_vllm_generation, sampling_params_kwargs

TASK = "contacts.lookup_number/0"
TOOLS = ["contacts", "finish"]


class HFEngine:
    """``vllm.LLM.generate`` over a Hugging Face model (sampling params are plain dicts here)."""

    def __init__(self, model, tokenizer, drop_stop_token: bool = False) -> None:
        import xgrammar as xgr

        self.model = model
        self.vocab_size = int(model.config.vocab_size)
        self.compiler = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=self.vocab_size))
        self.calls: list[list[dict]] = []
        self.drop_stop_token = drop_stop_token

    def generate(self, prompts, sampling_params, use_tqdm=True):
        import torch
        import xgrammar as xgr

        assert use_tqdm is False and len(prompts) == len(sampling_params)
        self.calls.append(list(sampling_params))
        outputs = []
        for prompt, p in zip(prompts, sampling_params, strict=True):
            assert p["n"] == 1 and p["top_p"] == 1.0 and p["top_k"] == -1 and p["logprobs"] == 0
            ids = torch.tensor([prompt["prompt_token_ids"]], dtype=torch.long)
            processors = []
            if "grammar" in p:
                grammar = xgr.Grammar.from_ebnf(p["grammar"])
                processors.append(xgr.contrib.hf.LogitsProcessor(self.compiler.compile_grammar(grammar)))
            kwargs = {"do_sample": p["temperature"] > 0}
            if p["temperature"] > 0:
                kwargs.update(temperature=p["temperature"], top_k=0, top_p=1.0)
            with torch.random.fork_rng(devices=[]), torch.no_grad():
                torch.manual_seed(p["seed"])
                out = self.model.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=p["max_tokens"],
                    logits_processor=processors or None,
                    eos_token_id=p["stop_token_ids"],
                    pad_token_id=p["stop_token_ids"][0],
                    use_cache=True,
                    **kwargs,
                )
            new = out[0, ids.shape[1] :].tolist()
            finish = "length"
            for i, tok in enumerate(new):
                if tok in p["stop_token_ids"]:
                    new, finish = new[: i + 1], "stop"
                    break
            temp = p["temperature"] if p["temperature"] > 0 else 1.0
            with torch.no_grad():
                logits = self.model(torch.tensor([prompt["prompt_token_ids"] + new])).logits[0].float()
            lps = torch.log_softmax(logits[ids.shape[1] - 1 : -1] / temp, -1)
            per_pos = [{tok: SimpleNamespace(logprob=float(lps[i, tok]))} for i, tok in enumerate(new)]
            if self.drop_stop_token and finish == "stop":
                new, per_pos = new[:-1], per_pos[:-1]
            outputs.append(
                SimpleNamespace(
                    outputs=[SimpleNamespace(token_ids=new, logprobs=per_pos, finish_reason=finish, stop_reason=None)]
                )
            )
        return outputs


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(tiny_model_dir)


def _rollout(tiny, llm=None, G: int = 2):
    from rl.rollout import RolloutConfig, rollout_group

    model, tokenizer = tiny
    cfg = RolloutConfig(max_turns=3, max_new_tokens=40, temperature=1.0, tool_filter=TOOLS)
    if llm is None:
        return rollout_group(model, tokenizer, TASK, 0, G, cfg, sample_seed=5)
    from rl.rollout import Group, rollout_members

    trajs = rollout_members(model, tokenizer, TASK, 0, range(G), cfg, sample_seed=5, llm=llm)
    return Group(task_id=TASK, seed=0, trajectories=trajs)


def _params_as_dict(kwargs):
    return dict(kwargs)


def test_sampling_params_and_engine_checks() -> None:
    kw = sampling_params_kwargs(temperature=0.7, max_tokens=12, seed=3, stop_token_ids=[5, 9], grammar='root ::= "a"')
    assert kw == {
        "n": 1,
        "temperature": 0.7,
        "top_p": 1.0,
        "top_k": -1,
        "max_tokens": 12,
        "seed": 3,
        "stop_token_ids": [5, 9],
        "logprobs": 0,
        "skip_special_tokens": False,
        "grammar": 'root ::= "a"',
    }
    assert "grammar" not in sampling_params_kwargs(temperature=0, max_tokens=1, seed=0, stop_token_ids=[], grammar=None)
    with pytest.raises(ValueError, match="max_tokens"):
        sampling_params_kwargs(temperature=1, max_tokens=0, seed=0, stop_token_ids=[], grammar=None)
    llm = object()
    assert check_vllm_generation(SimpleNamespace(mode="colocate", llm=llm, tensor_parallel_size=1)) is llm
    with pytest.raises(ValueError, match="colocate"):
        check_vllm_generation(SimpleNamespace(mode="server", llm=None, tensor_parallel_size=1))
    with pytest.raises(ValueError, match="tensor_parallel_size=1"):
        check_vllm_generation(SimpleNamespace(mode="colocate", llm=llm, tensor_parallel_size=2))


def test_grammar_text_is_the_grammar_the_local_client_compiles(tiny) -> None:
    """The EBNF sent to vLLM accepts exactly what the compiled grammar accepts (checked on samples)."""
    import xgrammar as xgr

    from agents.llm.client import LocalChatClient, compile_grammar

    model, tokenizer = tiny
    sampler = VLLMSampler(object(), model, tokenizer, max_new_tokens=8, temperature=1.0, constrained=True,
                          max_string_chars=20, params_factory=_params_as_dict)  # fmt: skip
    tools = [
        {"type": "function", "function": {"name": "contacts__search", "description": "d",
         "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
    ]  # fmt: skip
    text = sampler.grammar_text(tools)
    assert sampler.grammar_text(tools) is text  # cached
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=int(model.config.vocab_size))
    compiler = xgr.GrammarCompiler(info)
    direct = compile_grammar(compiler, LocalChatClient.call_schema(tools), 20, tool_call=True)
    via_text = compiler.compile_grammar(xgr.Grammar.from_ebnf(text))
    good = '<tool_call>\n{"name": "contacts__search", "arguments": {"query": "ana"}}\n</tool_call>'
    bad = [
        '<tool_call>{"name": "contacts__search", "arguments": {"query": 3}}</tool_call>',  # wrong type
        '<tool_call>{"name": "nope", "arguments": {"query": "ana"}}</tool_call>',  # unknown tool
        '<tool_call>{"name": "contacts__search", "arguments": {"query": "' + "x" * 21 + '"}}</tool_call>',  # too long
        '{"name": "contacts__search", "arguments": {"query": "ana"}}',  # no tags
    ]
    for compiled in (direct, via_text):
        for text_, ok in [(good, True), *[(b, False) for b in bad]]:
            matcher = xgr.GrammarMatcher(compiled)
            accepted = matcher.accept_string(text_) and matcher.is_completed()
            assert accepted is ok, (text_, ok)


def test_vllm_rollout_reproduces_the_transformers_rollout_and_batches_members(tiny, dict_params) -> None:
    import torch

    model, tokenizer = tiny
    reference = _rollout(tiny)
    engine = HFEngine(model, tokenizer)
    got = _rollout(tiny, llm=engine)
    for a, b in zip(reference.trajectories, got.trajectories, strict=True):
        assert torch.equal(a.episode_ids, b.episode_ids) and torch.equal(a.episode_mask, b.episode_mask)
        assert a.verdict == b.verdict and [t.text for t in a.turns] == [t.text for t in b.turns]
        # The engine's log-probs are kept (TRL compares them with the trainer's); here both are the
        # same model at the same temperature, so they agree with the re-scored ones.
        assert torch.allclose(a.episode_logprobs, b.episode_logprobs, atol=1e-4)
    # The first turn of both members went to the engine in one call; every call's seeds are the
    # per-member turn seeds, and the budgets respect max_new_tokens.
    assert len(engine.calls[0]) == 2
    assert all(p["max_tokens"] <= 40 and "grammar" in p for call in engine.calls for p in call)
    n_turns = sum(len(t.turns) for t in got.trajectories)
    assert sum(len(c) for c in engine.calls) == n_turns
    seeds = [p["seed"] for call in engine.calls for p in call]
    assert sorted(seeds) == sorted(t.seed for traj in got.trajectories for t in traj.turns)


def test_a_stop_token_dropped_by_the_engine_is_put_back(tiny, dict_params) -> None:
    import torch

    model, tokenizer = tiny
    reference = _rollout(tiny, G=1)
    got = _rollout(tiny, llm=HFEngine(model, tokenizer, drop_stop_token=True), G=1)
    a, b = reference.trajectories[0], got.trajectories[0]
    assert torch.equal(a.episode_ids, b.episode_ids)
    for turn in b.turns:
        if not turn.truncated:
            assert int(turn.completion_ids[-1]) == tokenizer.eos_token_id or int(turn.completion_ids[-1]) in (
                model.generation_config.eos_token_id
                if isinstance(model.generation_config.eos_token_id, list)
                else [model.generation_config.eos_token_id]
            )
            assert turn.logprobs[-1].item() == 0.0  # not reported by the engine
    assert all(math.isfinite(x) for x in b.episode_logprobs.tolist())


@pytest.fixture
def dict_params(monkeypatch):
    """Without vLLM installed, VLLMSampler's default factory would import it: use plain dicts."""
    real_init = VLLMSampler.__init__

    def init(self, llm, model, tokenizer, *, params_factory=None, **kwargs):
        real_init(self, llm, model, tokenizer, params_factory=params_factory or _params_as_dict, **kwargs)

    monkeypatch.setattr(VLLMSampler, "__init__", init)


@pytest.mark.slow
def test_trainer_samples_through_the_colocated_engine(tmp_path, tiny_model_dir, monkeypatch, dict_params) -> None:
    """``use_vllm=True`` in colocate mode: TRL pushes the weights, the rollout samples through the
    engine, and the engine's log-probs reach TRL's importance-sampling correction."""
    import torch

    from rl.trainers import TrainConfig, make_trainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    cfg = TrainConfig(model_path=None, output_dir=str(tmp_path / "run"), tasks=[TASK], tool_filter=TOOLS, algo="care",
                      num_generations=2, per_device_train_batch_size=2, max_steps=2, max_turns=2, max_new_tokens=24,
                      learning_rate=1e-2, use_cpu=True, report_to="none", save_final=False, seed=0)  # fmt: skip
    trainer = make_trainer(cfg, model, tokenizer)
    engine_model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    engine = HFEngine(engine_model, tokenizer)
    syncs = []
    pushed = {}

    def sync_weights():
        engine_model.load_state_dict(trainer.model.state_dict())
        pushed.update({k: v.clone() for k, v in trainer.model.state_dict().items()})
        syncs.append(int(trainer.state.global_step))

    trainer.use_vllm = True
    trainer.vllm_mode = "colocate"
    trainer.vllm_importance_sampling_correction = True
    trainer.vllm_importance_sampling_mode = "token_truncate"
    trainer.vllm_importance_sampling_clip_max = 3.0
    trainer.vllm_importance_sampling_clip_min = None
    trainer._last_loaded_step = -1
    trainer.vllm_generation = SimpleNamespace(mode="colocate", llm=engine, tensor_parallel_size=1,
                                              enable_sleep_mode=False, sync_weights=sync_weights)  # fmt: skip
    trainer.train()
    assert syncs == [0, 1]  # the weights were pushed before each step's rollout
    assert len(engine.calls) >= 2  # every reply came from the engine
    for name, p in engine_model.state_dict().items():  # the engine holds the weights of the last push
        assert torch.equal(p, pushed[name])
    assert torch.isfinite(torch.tensor([t.episode_logprobs.sum() for t in trainer._phone_trajectories])).all()


@pytest.mark.gpu
def test_vllm_engine_on_gpu(tiny_model_dir) -> None:
    """The real engine: a tiny model served by vLLM samples schema-valid tool calls."""
    pytest.importorskip("vllm", reason="vLLM is a GPU extra (pip install -e '.[gpu]')")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("vLLM needs a CUDA GPU")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from vllm import LLM

    from rl.rollout import RolloutConfig, rollout_members

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    llm = LLM(model=str(tiny_model_dir), gpu_memory_utilization=0.2, logprobs_mode="processed_logprobs", seed=0)
    cfg = RolloutConfig(max_turns=2, max_new_tokens=40, temperature=1.0, tool_filter=TOOLS)
    trajs = rollout_members(model, tokenizer, TASK, 0, range(2), cfg, llm=llm)
    assert len(trajs) == 2
    for traj in trajs:
        assert traj.turns and all(turn.calls for turn in traj.turns if not turn.truncated)


class ScriptedEngine:
    """``vllm.LLM.generate`` that answers each request with the next scripted reply (token ids of
    the text plus the end-of-turn token), recording the grammar each request was constrained by."""

    def __init__(self, tokenizer, replies: list[str]) -> None:
        self.tokenizer = tokenizer
        self.replies = list(replies)
        self.grammars: list[str] = []

    def generate(self, prompts, sampling_params, use_tqdm=True):
        outputs = []
        for _prompt, p in zip(prompts, sampling_params, strict=True):
            self.grammars.append(p.get("grammar", ""))
            text = self.replies.pop(0)
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [p["stop_token_ids"][0]]
            per_pos = [{tok: SimpleNamespace(logprob=-0.5)} for tok in ids]
            outputs.append(
                SimpleNamespace(
                    outputs=[SimpleNamespace(token_ids=ids, logprobs=per_pos, finish_reason="stop", stop_reason=None)]
                )
            )
        return outputs


def _call(name: str, **arguments) -> str:
    import json

    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def test_rollout_follows_sub_agent_frames(tiny, dict_params) -> None:
    """After ``agent.delegate`` the rollout offers only the frame's tools (the grammar of the next
    reply) and tells the model, as LLMPlanner does; after the child's ``finish`` the parent's
    tools come back. The frame notes are context (mask 0), never sampled tokens."""
    from agents.planner import frame_note
    from rl.rollout import RolloutConfig, rollout_members

    model, tokenizer = tiny
    task = "subagent.best_offer_reply/0"
    engine = ScriptedEngine(
        tokenizer,
        [
            _call("agent__delegate", goal="Find the offers.", tools=["mail.search", "mail.read"]),
            _call("mail__search", query="standing desks"),
            _call("finish", answer="em_5"),
            _call("finish", answer="done"),
        ],
    )
    cfg = RolloutConfig(max_turns=4, max_new_tokens=200, temperature=1.0, constrained=True, tool_filter="all")
    (traj,) = rollout_members(model, tokenizer, task, 0, [0], cfg, llm=engine)
    assert len(traj.turns) == 4 and traj.terminated
    g_root, g_child, g_child2, g_back = engine.grammars
    assert "agent__delegate" in g_root and "mail__reply" in g_root
    for g in (g_child, g_child2):  # only the frame's tools (and finish) may be called in the child
        assert "mail__search" in g and "mail__read" in g and "finish" in g
        assert "mail__reply" not in g and "agent__delegate" not in g
    assert "mail__reply" in g_back and "agent__delegate" in g_back
    notes = [m["content"] for m in traj.messages if m["role"] == "user" and m["content"].startswith("[frame ")]
    child_tools = notes[0].split("Only these tools work in this frame: ")[1].split(". When")[0].split(", ")
    assert sorted(child_tools) == ["finish", "mail__read", "mail__search"]
    assert notes[0] == frame_note("main.1", 1, 0, "Find the offers.", child_tools)
    assert notes[1] == frame_note("main", 0, 1, traj.messages[1]["content"], [])
    text = tokenizer.decode(traj.episode_ids[traj.episode_mask == 0])
    assert all(n in text for n in notes)
    assert not any(n in tokenizer.decode(traj.episode_ids[traj.episode_mask == 1]) for n in notes)
