"""Where training and evaluation run: the device, bf16 and vLLM, decided by the hardware.

Every entry point of :mod:`rl` and ``benchmarks/`` asks these functions instead of hard-coding a
device: ``auto`` is CUDA when torch sees a GPU and the CPU otherwise; an explicit ``cuda`` on a
machine without one is an error, not a silent CPU run. torch is imported lazily (``import rl``
stays cheap).

    >>> resolve_device("cpu")
    'cpu'
"""

from __future__ import annotations

import importlib.util

__all__ = ["DEVICES", "bf16_supported", "resolve_device", "use_cpu", "vllm_installed"]

DEVICES: tuple[str, ...] = ("auto", "cuda", "cpu")
"""The values a ``--device`` option takes."""


def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def resolve_device(device: str | None = "auto") -> str:
    """The device a run uses: ``"cuda"`` or ``"cpu"``.

    Args:
        device: ``"auto"`` (or None): ``"cuda"`` when ``torch.cuda.is_available()``, else
            ``"cpu"``; ``"cuda"`` or ``"cpu"``: that device (``"cuda:N"`` is kept as given).

    Raises:
        ValueError: an unknown name, or ``"cuda"`` where torch sees no CUDA GPU.
    """
    name = (device or "auto").strip().lower()
    if name == "auto":
        return "cuda" if _cuda_available() else "cpu"
    if name == "cpu":
        return "cpu"
    if name == "cuda" or name.startswith("cuda:"):
        if not _cuda_available():
            raise ValueError(
                f"device {device!r} asked for, but torch sees no CUDA GPU (torch.cuda.is_available() is False)"
            )
        return name
    raise ValueError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")


def use_cpu(device: str | None = "auto") -> bool:
    """``transformers.TrainingArguments.use_cpu`` for ``device``: True when it resolves to the CPU."""
    return resolve_device(device) == "cpu"


def bf16_supported(device: str | None = "auto") -> bool:
    """Whether bf16 mixed precision can train on ``device``: a CUDA GPU whose
    ``torch.cuda.is_bf16_supported()`` is True. The CPU answers False: transformers' Trainer
    takes ``bf16=True`` on a CPU only through ``use_cpu`` autocast, which the runs here never
    use (fp32 tiny models gain nothing from it)."""
    if resolve_device(device) == "cpu":
        return False
    import torch

    return bool(torch.cuda.is_bf16_supported())


def vllm_installed() -> bool:
    """Whether the ``vllm`` package can be found (without importing it: that takes seconds)."""
    return importlib.util.find_spec("vllm") is not None
