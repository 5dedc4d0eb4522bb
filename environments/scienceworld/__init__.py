"""ScienceWorld: the 30 science task types of Wang et al. (2022) on the real simulator (a JVM per env)."""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

#: The official variation splits of the 30 task types, summed (see tasks.py; a test checks both).
SPLITS = TaskSplits(train=3592, dev=1796, test=1819)

register(
    "ScienceWorld-v0",
    entry_point="agentgym.environments.scienceworld.env:ScienceWorldEnv",
    family="scienceworld",
    description="ScienceWorld's 30 task types, 7,207 variations, official split; the real simulator in a JVM",
    splits=SPLITS,
    max_episode_steps=300,
)
