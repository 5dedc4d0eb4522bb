"""Maze: walk through a perfect grid maze to the goal, seeing all of it or only nearby squares."""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

SPLITS = TaskSplits(train=10_000, dev=1_000, test=1_000)

# A 7x7-cell maze's longest path is 2 * (7*7 - 1) = 96 moves, so 100 steps always suffice
# with the full view; with the partial view, walking every passage there and back
# (4 * (7*7 - 1) = 192 moves) fits in 200.
register(
    "Maze-v0",
    entry_point="agentgym.environments.maze.env:MazeEnv",
    family="maze",
    description="A perfect 7x7-cell maze drawn as a 15x15 grid; the whole maze is shown",
    splits=SPLITS,
    max_episode_steps=100,
)

register(
    "Maze-Partial-v0",
    entry_point="agentgym.environments.maze.env:MazeEnv",
    family="maze",
    description="The Maze-v0 mazes seen through a 5x5 window; seen squares stay on the map",
    splits=SPLITS,
    max_episode_steps=200,
    kwargs={"view": "partial"},
)

register(
    "Maze-Visual-v0",
    entry_point="agentgym.environments.maze.visual:MazeVisualEnv",
    family="maze",
    description="Maze-v0's mazes seen as 240x240 images (16-pixel tiles), text actions; for VLMs",
    observation="text+screenshot",
    splits=SPLITS,
    max_episode_steps=100,
)
