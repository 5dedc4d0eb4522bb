"""Wordle: guess a hidden 5-letter English word in 6 tries from per-letter feedback."""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

# One task per word of answers.txt (2,200 words), partitioned by a hash of the word;
# env.py checks that the word list and these counts agree.
SPLITS = TaskSplits(train=1_700, dev=200, test=300)

register(
    "Wordle-v0",
    entry_point="agentgym.environments.wordle.env:WordleEnv",
    family="wordle",
    description="Wordle: 6 guesses at a hidden 5-letter word; green/yellow/gray letter feedback",
    splits=SPLITS,
    # 6 guesses; invalid words do not use up a guess, so leave room for some.
    max_episode_steps=20,
)
