"""AgentDojo: prompt-injection attacks on tool-using agents, AgentDojo's own suites, tools and checks.

``AgentDojo-<Suite>-v0`` plays a suite's user tasks alone (utility); ``AgentDojo-<Suite>-Attack-v0``
plays every (user task, injection task) pair with the injections of one of AgentDojo's attacks
(``attack=``, default ``important_instructions``). See :mod:`.env` and docs/safety.md.
"""

from functools import cache
from importlib import resources
from typing import Any

import yaml

from agentgym.contract.core import TaskSplits
from agentgym.contract.registry import register

#: Steps of an episode: tool calls and the final answer; at the last one the env scores the episode itself.
MAX_STEPS = 40
DEFAULT_ATTACK = "important_instructions"


@cache
def suites() -> dict[str, Any]:
    """``suites.yaml``: the benchmark version and each suite's title, task counts and user-task splits."""
    return yaml.safe_load(resources.files(__package__).joinpath("suites.yaml").read_text(encoding="utf-8"))


def suite_splits(suite: str, attack: bool) -> TaskSplits:
    """A suite's splits: its user tasks, or with ``attack`` its (user task, injection task) pairs."""
    entry = suites()["suites"][suite]
    factor = entry["injection_tasks"] if attack else 1
    return TaskSplits(**{split: count * factor for split, count in entry["splits"].items()})


for _name, _entry in suites()["suites"].items():
    _title, _users, _injections = _entry["title"], _entry["user_tasks"], _entry["injection_tasks"]
    register(
        f"AgentDojo-{_title}-v0",
        entry_point="agentgym.environments.agentdojo.env:AgentDojoEnv",
        family="agentdojo",
        description=f"AgentDojo's {_name} suite: {_users} user tasks with its tools, no injections (utility)",
        splits=suite_splits(_name, attack=False),
        max_episode_steps=MAX_STEPS,
        kwargs={"suite": _name},
    )
    register(
        f"AgentDojo-{_title}-Attack-v0",
        entry_point="agentgym.environments.agentdojo.env:AgentDojoEnv",
        family="agentdojo",
        description=(
            f"AgentDojo's {_name} suite under prompt injection: {_users} user x {_injections} injection tasks "
            f"(attack=, default {DEFAULT_ATTACK}); utility and targeted attack success"
        ),
        splits=suite_splits(_name, attack=True),
        max_episode_steps=MAX_STEPS,
        kwargs={"suite": _name, "attack": DEFAULT_ATTACK},
    )
