"""Planners that drive ``PhonePlan-v0``: the agent interface, a reference agent, a random agent.

LLM planners (OpenAI-compatible endpoints, local transformers) implement :class:`Agent` too.
"""

from agents.base import Agent, AgentAction
from agents.random_agent import RandomAgent
from agents.reference import ReferenceAgent

AGENTS = {"reference": ReferenceAgent, "random": RandomAgent}
"""Agents ``phoneenv eval --agent NAME`` can build without extra arguments."""

__all__ = ["AGENTS", "Agent", "AgentAction", "RandomAgent", "ReferenceAgent"]
