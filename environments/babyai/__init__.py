"""BabyAI-Text: minigrid's BabyAI levels described in text (BALROG style), with the BabyAI bot as oracle."""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

# Task N is the level reset with seed N, so the splits' seeds are disjoint.
SPLITS = TaskSplits(train=100_000, dev=1_000, test=1_000)

#: Our id suffix, minigrid's level id and the step limit: minigrid's own limit for one
#: navigation (room size squared times rooms), twice that for levels of several subtasks.
LEVELS = {
    "GoToLocal": ("BabyAI-GoToLocal-v0", 64, "go to an object in a single room with distractors"),
    "GoTo": ("BabyAI-GoTo-v0", 576, "go to an object somewhere in a 3x3 grid of rooms"),
    "Pickup": ("BabyAI-Pickup-v0", 576, "pick up an object somewhere in a 3x3 grid of rooms"),
    "Open": ("BabyAI-Open-v0", 576, "open a door somewhere in a 3x3 grid of rooms"),
    "PutNextLocal": ("BabyAI-PutNextLocal-v0", 128, "put an object next to another in a single room"),
    "PutNext": ("BabyAI-PutNextS7N4-v0", 392, "put an object next to another across two rooms"),
    "Unlock": ("BabyAI-Unlock-v0", 576, "find the key and open a locked door in a 3x3 grid of rooms"),
    "Synth": ("BabyAI-Synth-v0", 1152, "any one of go to, pick up, open and put next, in a 3x3 grid of rooms"),
    "BossLevel": ("BabyAI-BossLevel-v0", 1152, "composed missions (and, then, after) over all BabyAI skills"),
}

for name, (level, max_steps, description) in LEVELS.items():
    register(
        f"BabyAI-Text-{name}-v0",
        entry_point="agentgym.environments.babyai.env:BabyAITextEnv",
        family="babyai",
        description=f"BabyAI {name} ({level}) in text: {description}",
        splits=SPLITS,
        max_episode_steps=max_steps,
        kwargs={"level": level},
    )
