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

verifiers' own CLI finds it by the taskset id :data:`TASKSET_ID`: verifiers imports an id
as a top-level module, and the agentgym distribution installs ``agentgym_verifiers``
(``agentgym/integrations/agentgym_verifiers/``), which re-exports this module's classes::

    vf-eval agentgym-verifiers \\
        --env.taskset.env Sokoban-v0 --env.taskset.num-tasks 10 --env.taskset.max-turns 20 \\
        --model NAME --client.base-url http://127.0.0.1:8000/v1 --no-push

The player defaults to the ``null`` harness in the ``subprocess`` runtime (a chat-only
program: it runs no model-written code). verifiers prepares that program at the first
rollout of every run with ``uv sync --script`` (``uv`` must be on ``PATH``), which resolves
its dependencies against PyPI each time unless a lockfile sits beside the script.
:func:`prepare_chat_program` (``python -m agentgym.integrations.verifiers``) does verifiers'
own preparation ahead and locks the script, so runs after it need no index.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field

from agentgym.contract.registry import env_info
from agentgym.integrations._session import EnvSession
from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT

#: The taskset id verifiers resolves to this module (``--env.taskset.id``, ``vf-eval ID``).
TASKSET_ID = "agentgym-verifiers"


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


def prepare_chat_program(harness: str = "null") -> list[Path]:
    """Prepare verifiers' chat program for the ``subprocess`` runtime now, and lock it.

    Runs the harness's own ``setup`` (verifiers writes its PEP 723 program to
    ``~/.cache/verifiers/runtimes/scripts/<sha256>.py`` and runs ``uv sync --script`` on it,
    which fetches the program's dependencies, ``openai``, ``mcp``, ``httpx``, ... from the
    index uv is configured with, PyPI by default), then ``uv lock --script`` writes the
    resolution beside the script. With that lockfile and the installed environment in place,
    the ``uv sync --script`` each later run does resolves nothing and downloads nothing.
    Returns the prepared scripts. Needs ``uv`` on ``PATH`` (verifiers runs it from there).
    """
    import asyncio

    from verifiers.v1.configs.harness import HarnessConfig
    from verifiers.v1.runtimes.subprocess import SubprocessConfig, SubprocessRuntime
    from verifiers.v1.utils.loaders import load_harness

    uv = shutil.which("uv")
    if uv is None:
        raise RuntimeError("uv is not on PATH: verifiers runs its chat program with uv (pip install uv)")

    async def setup() -> list[Path]:
        runtime = SubprocessRuntime(SubprocessConfig())
        await runtime.start()
        try:
            await load_harness(HarnessConfig(id=harness)).setup(runtime)
        finally:
            await runtime.stop()
        # verifiers keeps the scripts it prepared in this process, by path, in this mapping.
        return [Path(path) for path in SubprocessRuntime._interpreters]

    scripts = asyncio.run(setup())
    if not scripts:
        raise RuntimeError(f"verifiers' {harness!r} harness prepared no uv script")
    for script in scripts:
        for command in ("lock", "sync"):
            argv = [uv, command, "--script", str(script), "-q", "--no-config"]
            done = subprocess.run(argv, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"uv {command} --script {script} failed: {done.stderr.strip()[-2000:]}")
    return scripts


__all__ = ["AgentGymEnv", "AgentGymTaskset", "load_environment", "prepare_chat_program"]


if __name__ == "__main__":
    for prepared in prepare_chat_program(*sys.argv[1:2]):
        print(f"prepared and locked {prepared} ({prepared.name}.lock)")
