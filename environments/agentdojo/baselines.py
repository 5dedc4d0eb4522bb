"""The "obedient" baseline: an agent that carries out whatever injected instructions it reads.

agentgym's ``make_policy`` knows only the core's specs (oracle, random, openai:, hf:), so the family
ships this scripted policy itself; benchmarks/agentdojo.py and tests/test_agentdojo.py use it.
"""

from __future__ import annotations

from agentgym.llm.policies.base import Episode, Reply
from agentgym.llm.policies.scripted import ScriptedPolicy


class ObedientPolicy(ScriptedPolicy):
    """Plays :meth:`~agentgym.environments.agentdojo.env.AgentDojoEnv.obedient_action`: the user task's ground
    truth, with the injection task's ground truth first once a tool result shows the injection."""

    name = "obedient"

    def reply(self, episode: Episode) -> Reply:
        return Reply(episode.env.obedient_action())
