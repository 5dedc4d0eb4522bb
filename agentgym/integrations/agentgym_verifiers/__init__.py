"""The verifiers environment package of agentgym: taskset id ``agentgym-verifiers``.

verifiers (0.4) finds an environment by importing its id as a top-level module
(``agentgym-verifiers`` -> ``agentgym_verifiers``) and taking the ``Taskset`` and ``Env``
subclasses that module exports in ``__all__``; its own environment packages are shipped
that way. The agentgym distribution installs this folder as that top-level module
(``pyproject.toml``'s ``package-dir``), so verifiers' own CLI finds agentgym::

    vf-eval agentgym-verifiers --env.taskset.env Sokoban-v0 --model NAME --client.base-url URL

The adapter itself is :mod:`agentgym.integrations.verifiers`; this module only re-exports it.
"""

from agentgym.integrations.verifiers import AgentGymEnv, AgentGymTaskset, load_environment

__all__ = ["AgentGymEnv", "AgentGymTaskset", "load_environment"]
