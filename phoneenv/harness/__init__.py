"""The agent harness around the env: what an agent is told besides the tool list.

- :mod:`phoneenv.harness.feedback`: one builder per :class:`~phoneenv.contract.ErrorKind`, so
  every error feedback says what went wrong and how to recover, in the same words.
- :mod:`phoneenv.harness.skills`: skills (``SKILL.md`` folders): procedures for using the current
  tools, disclosed progressively (descriptions up front, bodies through ``skills.read``).
- :mod:`phoneenv.harness.memory`: persistent per-user memory (preferences, episodes, facts,
  intents) in SQLite, hybrid BM25 + embedding search fused by RRF, newer memories superseding
  outdated ones, and the ``memory.search``/``memory.save``/``memory.forget`` tools.
- :mod:`phoneenv.harness.providers`: the features that offer tools beside the backend's (skills,
  delegation, memory, confirm, step-up, finish), one module each, behind one small interface
  the env loops over.
"""
