"""SWE: fix bugs in real open-source Python repositories, judged by their own tests (SWE-smith style).

``SWE-v0`` (local edits) and ``SWE-Rewrite-v0`` (a function's body to re-implement) play the
validated tasks of ``data/tasks/`` on the pinned repositories of ``repositories.yaml``;
:class:`~agentgym.environments.swe.bench.SWEBenchEnv` plays SWE-bench-format instance files the user
supplies (docs/swe.md).
"""

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

#: The validated tasks per split (tests/test_swe.py checks these against data/tasks/).
EDIT_SPLITS = TaskSplits(train=1590, dev=167, test=310)
REWRITE_SPLITS = TaskSplits(train=251, dev=25, test=49)
#: Each repository's sdist downloaded and its venv built before episodes (agentgym prepare, agentgym eval).
_PREPARE = "agentgym.environments.swe.env:prepare"
#: The quick suite's repositories the first time on 2 cores (85 s beside a running eval, at 5b56ab0).
_PREPARE_S = 85

register(
    "SWE-v0",
    entry_point="agentgym.environments.swe.env:SWEEnv",
    family="swe",
    description=(
        "Fix a validated procedural bug in a real Python repository (28 pinned PyPI projects); its own tests "
        "judge (FAIL_TO_PASS, PASS_TO_PASS)"
    ),
    splits=EDIT_SPLITS,
    prepare=_PREPARE,
    prepare_s=_PREPARE_S,
    max_episode_steps=40,
    kwargs={"variant": "edit"},
)
register(
    "SWE-Rewrite-v0",
    entry_point="agentgym.environments.swe.env:SWEEnv",
    family="swe",
    description="Re-implement a function whose body was removed from a real Python repository, judged by its tests",
    splits=REWRITE_SPLITS,
    prepare=_PREPARE,
    prepare_s=_PREPARE_S,
    max_episode_steps=60,
    kwargs={"variant": "rewrite"},
)
