"""MiniWoB++: the benchmark's own task pages in headless Chromium, one id per task (``MiniWoB-click-button-v0``)."""

import json
from pathlib import Path

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

#: Every task page of the ``miniwob`` package's ``html/miniwob/`` folder (miniwob 1.1.0) with its
#: episode time limit in milliseconds (``core.EPISODE_MAX_TIME``): data, so that registering the ids
#: imports neither ``miniwob`` nor a module of this family.
TASK_TIME_LIMITS_MS: dict[str, int] = json.loads((Path(__file__).parent / "tasks.json").read_text())

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
