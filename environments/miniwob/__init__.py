"""MiniWoB++: the benchmark's own task pages in headless Chromium, one id per task (``MiniWoB-click-button-v0``)."""

from agentgym.core import TaskSplits
from agentgym.environments.miniwob.tasks import TASK_TIME_LIMITS_MS
from agentgym.registry import register

SPLITS = TaskSplits(train=10_000, dev=1_000, test=1_000)

for _task in TASK_TIME_LIMITS_MS:
    register(
        f"MiniWoB-{_task}-v0",
        entry_point="agentgym.environments.miniwob.env:MiniWoBEnv",
        family="miniwob",
        description=f"MiniWoB++ {_task} in headless Chromium; text commands on element ids, or pixels",
        splits=SPLITS,
        max_episode_steps=30,
        kwargs={"task": _task},
    )
