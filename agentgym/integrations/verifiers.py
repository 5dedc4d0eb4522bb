"""agentgym envs as Prime Intellect ``verifiers`` environments (verifiers 0.4, ``verifiers.v1``).

verifiers 0.4 runs a *taskset* of tasks through an ``Env`` whose ``run(task, agents)``
plays one episode: here one agentgym env per rollout, stepped host-side while the model
(an agent behind verifiers' ``null`` chat harness) plays the user's counterpart. The
env's first observation is the first user message; each model reply goes to
``env.step`` as text (the env reads its ``Action:`` line); the next observation is the
next user message, until the episode terminates or is truncated, or ``max_turns``
replies were stepped. The system prompt is agentgym's default (it asks for an
``Action:`` line; verifiers' ``--env.taskset.system-prompt FILE`` replaces it). The
trace's reward ``score`` is the env's final ``info["score"]``; its metrics ``success``
(0/1) and ``steps`` come from the same ``info``.

Tasks are agentgym task ids of one split (``num_tasks`` of them, the first ones).
Python::

    from agentgym.integrations.verifiers import load_environment
    env = load_environment("Sokoban-v0", num_tasks=10, max_turns=20)

verifiers resolves a taskset by an importable module name, and this module's name
(``agentgym.integrations.verifiers``) is dotted, which its loader cannot import; so importing
this module also registers it as the module ``agentgym_verifiers`` (taskset id
:data:`TASKSET_ID`). ``python -m agentgym.integrations.verifiers ARGS`` is ``vf-eval ARGS``
with that done first::

    python -m agentgym.integrations.verifiers agentgym-verifiers \\
        --env.taskset.env Sokoban-v0 --env.taskset.num-tasks 10 --env.taskset.max-turns 20 \\
        --model NAME --client.base-url http://127.0.0.1:8000/v1 --no-push

The player defaults to the ``null`` harness in the ``subprocess`` runtime (a chat-only
program: it runs no model-written code). verifiers prepares that program with ``uv``
(``uv sync --script``), so ``uv`` must be on ``PATH`` and its dependencies installable.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field

from agentgym.integrations._session import EnvSession
from agentgym.registry import env_info
from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT

#: The taskset id verifiers resolves to this module (``--env.taskset.id``, ``vf-eval ID``).
TASKSET_ID = "agentgym-verifiers"
_MODULE_ALIAS = TASKSET_ID.replace("-", "_")


class AgentGymTasksetConfig(vf.TasksetConfig):
    """Which agentgym tasks to play (``--env.taskset.*``)."""

    env: str = ""
    """The agentgym env id, e.g. ``Sokoban-v0``."""
    split: Literal["train", "dev", "test"] = "test"
    """The split whose task ids are the tasks."""
    num_tasks: int | None = Field(None, ge=1)
    """Play the split's first ``num_tasks`` task ids (None: all of them)."""
    max_turns: int | None = Field(None, ge=1)
    """Stop an episode after this many model replies (None: the env's own step limit)."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of ``gym.make``."""


class AgentGymData(vf.TaskData):
    """One agentgym task: the env to make and the task id to reset it to."""

    env: str
    task_id: int
    split: str
    max_turns: int | None = None
    env_kwargs: dict[str, Any] = Field(default_factory=dict)


class AgentGymTask(vf.Task[AgentGymData]):
    """An agentgym task (the env opens the conversation: no prompt of its own)."""


class AgentGymTaskset(vf.Taskset[AgentGymTask, AgentGymTasksetConfig]):
    """The first ``num_tasks`` task ids of a split of one agentgym env."""

    def __init__(self, config: AgentGymTasksetConfig) -> None:
        if not config.env:
            raise ValueError("name the agentgym env: --env.taskset.env ENV_ID (e.g. Sokoban-v0)")
        env_info(config.env)  # an unknown id fails here, with agentgym's hint
        super().__init__(config)

    def load(self) -> Iterator[AgentGymTask]:
        config = self.config
        info = env_info(config.env)
        ids = info.splits.ids(config.split)
        for task_id in ids if config.num_tasks is None else ids[: config.num_tasks]:
            yield AgentGymTask(
                AgentGymData(
                    name=f"{info.id}#{task_id}",
                    prompt=None,
                    system_prompt=DEFAULT_SYSTEM_PROMPT,
                    env=info.id,
                    task_id=task_id,
                    split=config.split,
                    max_turns=config.max_turns,
                    env_kwargs=config.env_kwargs,
                ),
                config.task,
            )


class AgentGymEnvConfig(vf.EnvConfig):
    """The env block: one seat, ``player``, a plain chat model by default."""

    player: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime={"type": "subprocess"})


class AgentGymEnv(vf.Env[AgentGymEnvConfig]):
    """Plays one agentgym episode per rollout, host-side, the model's replies as actions."""

    async def run(self, task: AgentGymTask, agents: Any) -> None:
        data = task.data
        session = EnvSession(data.env, data.env_kwargs)
        try:
            result = await session.reset(task_id=data.task_id)
            replies = 0
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn(result["observation"])
                while not segment.terminated:
                    result = await session.step(segment.last_reply)
                    replies += 1
                    if result["terminated"] or result["truncated"]:
                        break
                    if data.max_turns is not None and replies >= data.max_turns:
                        interaction.trace.stop("max_turns")
                        break
                    segment = await interaction.turn(result["observation"])
            trace = interaction.trace
            trace.record_reward("score", result["score"])
            trace.record_metrics({"success": float(result["success"]), "steps": float(result["steps"])})
            trace.info["agentgym"] = {
                "env": data.env,
                "task_id": data.task_id,
                "split": data.split,
                "terminated": result["terminated"],
                "truncated": result["truncated"],
                "replies": replies,
            }
        finally:
            await session.close()


def load_environment(
    env_id: str,
    num_tasks: int | None = 10,
    split: Literal["train", "dev", "test"] = "test",
    max_turns: int | None = None,
    **env_kwargs: Any,
) -> AgentGymEnv:
    """A verifiers env playing ``env_id``'s first ``num_tasks`` tasks of ``split``.

    ``env_kwargs`` go to ``gym.make``; the reward is the env's final score. Pass the
    result's ``config`` to verifiers' runners, or run it with ``vf-eval`` (see the module
    docstring for the command line).
    """
    taskset = AgentGymTasksetConfig(
        id=TASKSET_ID,
        env=env_id,
        split=split,
        num_tasks=num_tasks,
        max_turns=max_turns,
        env_kwargs=env_kwargs,
    )
    return AgentGymEnv(AgentGymEnvConfig(taskset=taskset))


__all__ = ["AgentGymEnv", "AgentGymTaskset", "load_environment"]

if __name__ != "__main__":
    # verifiers imports a taskset by its id as a plain module name (see the module docstring).
    sys.modules.setdefault(_MODULE_ALIAS, sys.modules[__name__])


def main(argv: list[str] | None = None) -> None:
    """``vf-eval`` with this module importable under :data:`TASKSET_ID`."""
    from verifiers.v1.cli.eval.main import main as vf_eval

    vf_eval(argv)


if __name__ == "__main__":
    # Run as a script the module is ``__main__``: register the importable module instead.
    import agentgym.integrations.verifiers as _module

    _module.main()
