"""Agents for the Ray tests, built inside Ray actors through ``AgentSpec(factory=...)``."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from agents.reference import ReferenceAgent


class DyingAgent(ReferenceAgent):
    """The reference agent, except that the first process to start an episode of ``task_id``
    kills itself (SIGKILL: a worker lost mid-episode, as when its node goes); ``marker`` (a file
    it creates first) makes that happen once across all processes."""

    def __init__(self, task_id: str, marker: str) -> None:
        super().__init__()
        self.task_id = task_id
        self.marker = Path(marker)

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        super().reset(observation, info)
        if info["task_id"] == self.task_id:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)
