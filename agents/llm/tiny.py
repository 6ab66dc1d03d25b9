"""A tiny, random-weight chat model built from this repo's own text, for testing LLM plumbing offline.

:func:`build_tiny_model` writes a complete Hugging Face checkpoint directory (model, tokenizer with a
Hermes/Qwen-style tool-calling chat template, generation config) in a few seconds on CPU, without
touching the network. The model is ``Qwen2ForCausalLM`` on purpose: ``transformers serve`` knows the
``qwen2`` response format and parses ``<tool_call>{json}</tool_call>`` text into OpenAI ``tool_calls``
for that model type, so a server over this checkpoint behaves like one over a real Qwen2.5 model
(apart from the outputs being noise).

    >>> path = build_tiny_model(tmp_dir)              # doctest: +SKIP
    >>> AutoModelForCausalLM.from_pretrained(path)    # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from phoneenv.compact import tool_text
from phoneenv.extras import require

__all__ = ["CHAT_TEMPLATE", "SPECIAL_TOKENS", "build_tiny_model"]

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
PAD = "<|endoftext|>"
SPECIAL_TOKENS: tuple[str, ...] = (
    PAD,
    IM_START,
    IM_END,
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
"""Markers that always encode as exactly one token (ids 0..8, in this order)."""

# Control tokens are `special` (dropped by ``decode(skip_special_tokens=True)``); the markup tokens
# are added but not special, as in the Qwen2.5 tokenizer, so decoded text keeps them visible.
_CONTROL_TOKENS = (PAD, IM_START, IM_END)

VOCAB_SIZE = 3072
"""Target BPE vocabulary size (the trained size can come out a little lower on a small corpus)."""

CHAT_TEMPLATE = r"""
{#- Hermes/Qwen2.5-style chat template with tool calling.
    messages: role system|user|assistant|tool; content a string or a list of parts (text parts are used);
    assistant messages may carry tool_calls ({"function": {"name", "arguments"}}, arguments a mapping or a
    JSON string); consecutive tool messages share one user turn of <tool_response> blocks. -#}

{%- macro text(content) -%}
    {%- if content is string -%}
        {{- content -}}
    {%- elif content is iterable and content is not mapping -%}
        {%- for part in content if part is mapping and part.get("type", "text") == "text" -%}
            {{- part["text"] -}}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro -%}

{#- Tools as TypeScript-like declarations: phoneenv.compact.tool_text writes the same text. -#}
{%- macro ts_comment(description) -%}
    {%- if description is string and description -%}
        {%- for line in description.split("\n") -%}
            {{- "// " + line + "\n" -}}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro -%}

{%- macro ts_union(node) -%}
    {{- "enum" in node or "anyOf" in node or "oneOf" in node or (node.get("type") is not string and node.get("type") is iterable) -}}
{%- endmacro -%}

{%- macro ts_type(node) -%}
    {%- if node is not mapping -%}
        {{- "any" -}}
    {%- elif "enum" in node -%}
        {%- for value in node["enum"] -%}
            {{- (" | " if not loop.first else "") + (value | tojson) -}}
        {%- endfor -%}
    {%- elif "const" in node -%}
        {{- node["const"] | tojson -}}
    {%- elif "anyOf" in node or "oneOf" in node -%}
        {%- for branch in (node["anyOf"] if "anyOf" in node else node["oneOf"]) -%}
            {{- (" | " if not loop.first else "") + ts_type(branch) -}}
        {%- endfor -%}
    {%- elif node.get("type") is not string and node.get("type") is iterable -%}
        {%- for kind in node["type"] -%}
            {{- (" | " if not loop.first else "") + ts_type(dict(node, type=kind)) -}}
        {%- endfor -%}
    {%- elif node.get("type") == "array" -%}
        {%- set items = node.get("items") -%}
        {%- if items is mapping and ts_union(items) == "True" -%}
            {{- "(" + ts_type(items) + ")[]" -}}
        {%- else -%}
            {{- ts_type(items) + "[]" -}}
        {%- endif -%}
    {%- elif node.get("type") == "object" and node.get("properties") is mapping and node["properties"] -%}
        {{- ts_object(node) -}}
    {%- elif node.get("type") in ["string", "integer", "number", "boolean", "null", "object"] -%}
        {{- node["type"] -}}
    {%- else -%}
        {{- "any" -}}
    {%- endif -%}
{%- endmacro -%}

{%- macro ts_object(node) -%}
    {{- "{\n" -}}
    {%- for name, prop in node["properties"].items() -%}
        {{- ts_comment(prop.get("description") if prop is mapping else none) -}}
        {{- name + ("" if name in (node.get("required") or []) else "?") + ": " + ts_type(prop) + "," -}}
        {%- if prop is mapping and "default" in prop -%}
            {{- " // default: " + (prop["default"] | tojson) -}}
        {%- endif -%}
        {{- "\n" -}}
    {%- endfor -%}
    {{- "}" -}}
{%- endmacro -%}

{%- macro ts_tool(fn) -%}
    {{- ts_comment(fn.get("description")) + "type " + (fn.get("name") | string) + " = " -}}
    {%- set params = fn.get("parameters") -%}
    {%- if params is mapping and params.get("properties") is mapping and params["properties"] -%}
        {{- "(_: " + ts_object(params) + ")" -}}
    {%- else -%}
        {{- "()" -}}
    {%- endif -%}
    {{- " => any;" -}}
{%- endmacro -%}

{#- System turn: the caller's system message (or a default one when there are tools), then the tools. -#}
{%- set has_system = messages and messages[0]["role"] == "system" -%}
{%- set system = text(messages[0]["content"]) if has_system else "You are a helpful assistant that operates a phone by calling tools." -%}
{%- if tools or has_system -%}
    {{- "<|im_start|>system\n" + system -}}
    {%- if tools -%}
        {{- "\n\n# Tools\n\nYou may call one or more functions to carry out the user's request.\n\n" -}}
        {{- "You are provided with function signatures, declared in TypeScript, within <tools></tools> XML tags:\n<tools>" -}}
        {%- for tool in tools -%}
            {{- "\n" + ts_tool(tool["function"] if tool is mapping and "function" in tool else tool) -}}
        {%- endfor -%}
        {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments " -}}
        {{- "within <tool_call></tool_call> XML tags:\n" -}}
        {{- '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' -}}
    {%- endif -%}
    {{- "<|im_end|>\n" -}}
{%- endif -%}

{%- for message in (messages[1:] if has_system else messages) -%}
    {%- set role = message["role"] -%}
    {%- if role == "tool" -%}
        {%- if loop.first or loop.previtem["role"] != "tool" -%}
            {{- "<|im_start|>user" -}}
        {%- endif -%}
        {{- "\n<tool_response>\n" + text(message["content"]) + "\n</tool_response>" -}}
        {%- if loop.last or loop.nextitem["role"] != "tool" -%}
            {{- "<|im_end|>\n" -}}
        {%- endif -%}
    {%- elif role == "assistant" -%}
        {%- set content = text(message.get("content")) -%}
        {{- "<|im_start|>assistant\n" + content -}}
        {%- for call in message.get("tool_calls") or [] -%}
            {%- set fn = call["function"] if call.get("function") else call -%}
            {%- if content or not loop.first -%}
                {{- "\n" -}}
            {%- endif -%}
            {{- '<tool_call>\n{"name": ' + (fn["name"] | tojson) + ', "arguments": ' -}}
            {{- fn["arguments"] if fn["arguments"] is string else (fn["arguments"] | tojson) -}}
            {{- "}\n</tool_call>" -}}
        {%- endfor -%}
        {{- "<|im_end|>\n" -}}
    {%- else -%}
        {{- "<|im_start|>" + role + "\n" + text(message["content"]) + "<|im_end|>\n" -}}
    {%- endif -%}
{%- endfor -%}

{%- if add_generation_prompt -%}
    {{- "<|im_start|>assistant\n" -}}
{%- endif -%}
"""
"""The Jinja chat template saved with the tokenizer (``tools`` in the system turn, one line break before
each, each as :func:`phoneenv.compact.tool_text` writes it: a TypeScript-like declaration)."""


def _corpus() -> Iterator[str]:
    """Tokenizer training text: task goals, tool specs, chat-template prose, JSON punctuation."""
    from phoneenv.backends.sandbox import SandboxBackend
    from phoneenv.tasks import load_suite

    for task in load_suite(generated=False):
        yield task.goal
    for entry in SandboxBackend().tools().values():
        spec = entry.spec
        yield spec.name
        yield spec.description
        params = json.dumps(spec.parameters)
        yield params
        yield tool_text(spec.to_openai())
        yield '<tool_call>\n{"name": ' + json.dumps(spec.name) + ', "arguments": {}}\n</tool_call>'
    yield CHAT_TEMPLATE
    yield "".join(SPECIAL_TOKENS) + "system user assistant tool\n"
    yield '{}[]:,"\\ {"": ""} [{}] true false null 0123456789 -+.eE \n\t'
    yield '{"type": "function", "function": {"name": "finish", "arguments": {"answer": "Done."}}}'


def train_tokenizer(vocab_size: int):
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on :func:`_corpus` (deterministic).

    Normalizer, pre-tokenizer and decoder are those of ``Qwen2Tokenizer`` (NFC, Qwen's split regex,
    byte level): ``AutoTokenizer`` rebuilds a ``qwen2`` checkpoint's tokenizer with them, so training
    with anything else would make the loaded tokenizer split text differently from the trained one.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(_corpus()), trainer=trainer)
    return tok


def _wrap_tokenizer(tok):
    """Wrap as a ``PreTrainedTokenizerFast`` with the special tokens and :data:`CHAT_TEMPLATE`."""
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast

    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in _CONTROL_TOKENS])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in SPECIAL_TOKENS if t not in _CONTROL_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=PAD,
        extra_special_tokens=[IM_START],
        chat_template=CHAT_TEMPLATE,
        model_max_length=65536,
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )


def build_tiny_model(out_dir: Path, seed: int = 0) -> Path:
    """Build and save a random-initialised tiny chat model with a trained tokenizer into ``out_dir``.

    Tokenizer: byte-level BPE, ~2,400 tokens (the corpus is small; :data:`VOCAB_SIZE` at most), trained on
    the task goals and tool specs of this repo, with Qwen2's pre-tokenizer; :data:`SPECIAL_TOKENS` are single tokens with ids 0..8; eos is
    ``<|im_end|>``, pad ``<|endoftext|>``; chat template :data:`CHAT_TEMPLATE` (Qwen2.5/Hermes format).

    Model: ``Qwen2ForCausalLM``, hidden 64, 2 layers, 4 attention heads (head dim 16), 2 KV heads,
    MLP 128, tied embeddings (vocab x 64), max positions 65,536 (every tool of the suite fits in a prompt), float32: about 0.22M parameters, ~0.9 MB
    on disk. Random weights: greedy replies are noise (seed 0 answers with a run of newlines).
    Weights come from ``torch.manual_seed(seed)``: the same seed gives the same checkpoint.
    ``generation_config.json`` sets eos/pad and greedy decoding.

    Takes about a second on CPU (plus ~4 s to import torch/transformers). Returns ``out_dir`` (created
    if needed).
    """
    require("llm", "torch", "transformers", "tokenizers", feature="The tiny model (--model tiny)")
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = _wrap_tokenizer(train_tokenizer(VOCAB_SIZE))
    eos_id = tokenizer.convert_tokens_to_ids(IM_END)
    pad_id = tokenizer.convert_tokens_to_ids(PAD)

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        max_position_embeddings=65536,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        dtype="float32",
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).eval()
    model.generation_config = GenerationConfig(
        eos_token_id=eos_id, pad_token_id=pad_id, bos_token_id=None, do_sample=False, max_new_tokens=256
    )
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
