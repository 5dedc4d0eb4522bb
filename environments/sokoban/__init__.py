"""Sokoban: push every box onto a target in a small walled room (RAGEN style)."""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

SPLITS = TaskSplits(train=10_000, dev=1_000, test=1_000)

register(
    "Sokoban-v0",
    entry_point="agentgym.environments.sokoban.env:SokobanEnv",
    family="sokoban",
    description="RAGEN-style Sokoban: 6x6 room, 1 box; solver-verified generated levels",
    splits=SPLITS,
    max_episode_steps=100,
)

register(
    "Sokoban-2Boxes-v0",
    entry_point="agentgym.environments.sokoban.env:SokobanEnv",
    family="sokoban",
    description="Harder Sokoban: 8x8 room, 2 boxes; solver-verified generated levels",
    splits=SPLITS,
    max_episode_steps=200,
    kwargs={"dim_room": (8, 8), "num_boxes": 2},
)

register(
    "Sokoban-Visual-v0",
    entry_point="agentgym.environments.sokoban.visual:SokobanVisualEnv",
    family="sokoban",
    description="Sokoban-v0's levels seen as 144x144 images (24-pixel tiles), text actions; for VLMs",
    observation="text+screenshot",
    splits=SPLITS,
    max_episode_steps=100,
)
