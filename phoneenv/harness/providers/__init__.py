"""Tool providers: the harness features that offer tools beside the backend's.

:class:`~phoneenv.env.PhonePlanEnv` holds a list of providers and loops over them; it knows none
of them by name. Each provider is one module here (as Gymnasium keeps one wrapper a file):

- :mod:`~phoneenv.harness.providers.skills`: ``skills.read`` and ``info["skills"]``;
- :mod:`~phoneenv.harness.providers.delegation`: ``agent.delegate`` (sub-agent frames);
- :mod:`~phoneenv.harness.providers.memory`: the user's memory tools, its verified table and
  the notifications of intents that fire;
- :mod:`~phoneenv.harness.providers.confirm`: ``user.confirm`` and the confirmation a sensitive
  call needs when the task's fixtures ask for one;
- :mod:`~phoneenv.harness.providers.step_up`: ``user.authenticate`` and the step-up a sensitive
  call needs;
- :mod:`~phoneenv.harness.providers.finish`: ``finish``, which closes a sub-agent frame or ends
  the episode.

The env offers the backend's tools, then each provider's in list order (that is the order of
``env.tools``). A provider's :meth:`~ToolProvider.offer` sees the backend's tools and those of
the providers listed after it (so ``skills``, listed first, sees every other tool).
"""

from __future__ import annotations

from typing import Any

from phoneenv.harness.providers.base import Notes, ToolProvider

__all__ = ["Notes", "ToolProvider", "default_providers"]


def default_providers(skills: Any, memory: Any, delegation: bool | None) -> list[ToolProvider]:
    """The env's providers in the order their tools are listed: skills (a
    :class:`~phoneenv.harness.skills.SkillLibrary` or None), delegation (``True``/``False``/None
    as :class:`~phoneenv.env.PhonePlanEnv`'s ``delegation``), memory (an
    :class:`~phoneenv.harness.episode_memory.EpisodeMemory`, left out when None), confirm,
    step-up and finish."""
    from phoneenv.harness.providers.confirm import Confirm
    from phoneenv.harness.providers.delegation import Delegation
    from phoneenv.harness.providers.finish import Finish
    from phoneenv.harness.providers.memory import Memory
    from phoneenv.harness.providers.skills import Skills
    from phoneenv.harness.providers.step_up import StepUp

    providers: list[ToolProvider] = [Skills(skills), Delegation(delegation)]
    if memory is not None:
        providers.append(Memory(memory))
    providers += [Confirm(), StepUp(), Finish()]
    return providers
