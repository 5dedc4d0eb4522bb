"""FrozenLake: cross a frozen lake from start to goal without falling into a hole."""

import warnings

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

SPLITS = TaskSplits(train=10_000, dev=1_000, test=1_000)

register(
    "FrozenLake-v0",
    entry_point="agentgym.environments.frozenlake.env:FrozenLakeEnv",
    family="frozenlake",
    description="Gymnasium's FrozenLake rules in text; a new map per task; is_slippery option",
    splits=SPLITS,
    max_episode_steps=100,
)

register(
    "FrozenLake-Visual-v0",
    entry_point="agentgym.environments.frozenlake.visual:FrozenLakeVisualEnv",
    family="frozenlake",
    description="FrozenLake-v0's lakes seen as 96x96 images (24-pixel tiles), text actions; for VLMs",
    observation="text+screenshot",
    splits=SPLITS,
    max_episode_steps=100,
)

# Gymnasium ships its own FrozenLake-v1 and warns that any lower version is "out of date";
# ours is a different environment, not an older Gymnasium one.
warnings.filterwarnings("ignore", message=r".*FrozenLake-v0 is out of date")
