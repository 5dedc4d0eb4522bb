"""TextCraft: craft Minecraft items from base materials with get / craft / inventory commands."""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

# Goals are assigned to splits by name (TaskSplits.bucket), so train and test goals differ.
SPLITS = TaskSplits(train=8_000, dev=1_000, test=1_000)

register(
    "TextCraft-v0",
    entry_point="agentgym.environments.textcraft.env:TextCraftEnv",
    family="textcraft",
    description="Craft a Minecraft 1.20 item of crafting depth 1-4 (depth drawn uniformly) from shown recipes",
    splits=SPLITS,
    max_episode_steps=40,
)

for depth in (1, 2, 3, 4):
    register(
        f"TextCraft-Depth{depth}-v0",
        entry_point="agentgym.environments.textcraft.env:TextCraftEnv",
        family="textcraft",
        description=f"TextCraft with goals of crafting depth {depth} only",
        splits=SPLITS,
        max_episode_steps=40,
        kwargs={"depths": (depth,)},
    )
