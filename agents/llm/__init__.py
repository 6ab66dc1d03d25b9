"""LLM client layer: OpenAI-compatible and local transformers clients, reply parsing."""
