"""What phoneenv needs of a language model, without importing one.

The LLM-simulated backend and the evaluator talk to models through :class:`ChatClient`; the
implementations (an OpenAI-compatible HTTP client, a local ``transformers`` model) live in
``agents.llm`` so that ``phoneenv`` stays free of model dependencies.

Messages are OpenAI chat messages (``{"role": ..., "content": ...}``; ``content`` may be a list of
parts, ``{"type": "image_url", ...}`` included). Tools are OpenAI ``tools`` entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from phoneenv.errors import InfrastructureError

__all__ = ["ChatClient", "ChatResult", "InfrastructureError", "TokenUsage"]


@dataclass
class TokenUsage:
    """Token counts of one model call: ``prompt`` (input), ``output`` (all generated tokens,
    thinking included) and ``thinking`` (the part inside ``<think>…</think>``), all ints."""

    prompt: int = 0
    output: int = 0
    thinking: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.prompt + other.prompt, self.output + other.output, self.thinking + other.thinking)

    def as_dict(self) -> dict[str, int]:
        """``{"prompt": ..., "output": ..., "thinking": ...}``."""
        return {"prompt": self.prompt, "output": self.output, "thinking": self.thinking}


@dataclass
class ChatResult:
    """One model reply: ``content`` (visible text, thinking removed), ``thinking`` (the text of
    thinking segments), ``tool_calls`` (``[{"id", "name", "arguments": dict}]``, from the API's
    field or parsed from text), ``parse_errors`` (why a call-looking segment did not parse),
    ``usage`` and the model's ``raw`` text."""

    content: str = ""
    thinking: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    parse_errors: list[str] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    raw: str = ""


@runtime_checkable
class ChatClient(Protocol):
    """A chat model. ``model`` names it (part of simulation cache keys).

    ``chat`` returns a :class:`ChatResult` or raises :class:`InfrastructureError` once its retry
    budget is spent. ``json_schema``, when given, asks for a reply that is one JSON value valid
    for that schema (constrained decoding where the backend supports it; callers still validate).
    """

    model: str

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatResult:
        """One reply to ``messages`` (OpenAI chat format), offering ``tools`` (OpenAI format);
        ``max_tokens`` bounds the output tokens. Raises :class:`InfrastructureError`."""
