"""Grounding: click the element a phrase describes on a screenshot of a page agentgym already runs.

``Grounding-v0`` mixes every source of ``sources.yaml`` (MiniWoB++, WebShop and the desktop's apps);
``Grounding-<Source>-v0`` plays one (``Grounding-MiniWoB-v0``, ``Grounding-WebShop-v0``, ``Grounding-Desktop-v0``,
``Grounding-WebApps-v0``).
The tasks ship as each source's task index (``tasks/``); a task's screenshot is rendered into the cache when
the task is first used or prepared (``agentgym prepare --env Grounding-v0``: all of them) and only read
afterwards (docs/envs/grounding.md).
"""

from pathlib import Path

import yaml

from agentgym.contract.core import SPLIT_NAMES, TaskSplits
from agentgym.contract.registry import register

_SOURCES: dict = yaml.safe_load((Path(__file__).with_name("sources.yaml")).read_text())["sources"]
_ENTRY_POINT = "agentgym.environments.grounding.env:GroundingEnv"
_PREPARE = "agentgym.environments.grounding.env:prepare"
#: A click ends the episode; invalid replies leave it open for a few more tries.
MAX_STEPS = 3


def _splits(names: list[str]) -> TaskSplits:
    return TaskSplits(**{split: sum(int(_SOURCES[name]["splits"][split]) for name in names) for split in SPLIT_NAMES})


register(
    "Grounding-v0",
    entry_point=_ENTRY_POINT,
    family="grounding",
    description="Click the described element (by text, role or relative place) on screenshots of "
    + ", ".join(_SOURCES)
    + " pages; reward 1 when the click lands in its box",
    splits=_splits(list(_SOURCES)),
    max_episode_steps=MAX_STEPS,
    observation="text+screenshot",
    kwargs={"sources": list(_SOURCES)},
    prepare=_PREPARE,
)
for _name, _spec in _SOURCES.items() if len(_SOURCES) > 1 else ():
    register(
        f"Grounding-{_name}-v0",
        entry_point=_ENTRY_POINT,
        family="grounding",
        description=f"Click the described element on screenshots of {_spec['description']}",
        splits=_splits([_name]),
        max_episode_steps=MAX_STEPS,
        observation="text+screenshot",
        kwargs={"sources": [_name]},
        prepare=_PREPARE,
    )
