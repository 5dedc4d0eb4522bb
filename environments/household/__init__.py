"""Household: ALFWorld-style pick / clean / heat / cool / place / examine tasks, generated offline.

An engine of ours with ALFWorld's rooms, objects, task types and commands; not the ALFWorld
benchmark itself (that is ``ALFWorld-v0`` in the ``alfworld`` family).
"""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

SPLITS = TaskSplits(train=10_000, dev=1_000, test=1_000)

# ALFWorld's LLM-agent evaluations allow 50 steps; the oracle needs at most about 15.
register(
    "Household-v0",
    entry_point="agentgym.environments.household.env:HouseholdEnv",
    family="household",
    description="ALFWorld-style household tasks (six task types) in generated rooms; offline, pure Python",
    splits=SPLITS,
    max_episode_steps=50,
)
