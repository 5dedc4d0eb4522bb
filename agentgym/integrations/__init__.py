"""Adapters that put agentgym envs on other frameworks' and protocols' paths.

One module per protocol, each importing its library (install the matching extra):

* :mod:`agentgym.integrations.mcp` - ``agentgym mcp ENV_ID``: an env as an MCP server
  (``pip install 'agentgym[mcp]'``);
* :mod:`agentgym.integrations.openenv` - OpenEnv's routes on ``agentgym serve`` and an
  OpenEnv client class (``agentgym[openenv]``);
* :mod:`agentgym.integrations.verifiers` - ``load_environment(env_id, ...)`` for
  Prime Intellect's verifiers (``agentgym[verifiers]``);
* :mod:`agentgym.integrations.skyrl` - every id as a skyrl-gym text env, ``agentgym:<ID>`` in
  its registry (``agentgym[skyrl]``; docs/train-with-skyrl.md);
* :mod:`agentgym.integrations.openrlhf` - ``AgentGymExecutor``, OpenRLHF's multi-turn agent
  executor (``--train.agent_func_path``; docs/train-with-openrlhf.md).
* :mod:`agentgym.integrations.verl` - ``AgentGymAgentLoop``, verl's agent loop ``"agentgym"``
  (verl installs apart: docs/train-with-verl.md, :mod:`agentgym.integrations.venvs`).

``import agentgym`` imports none of them. See docs/integrations.md.

Floor: integrations; it imports only its own floor and those below it: contract, env machinery, wrappers, serving,
llm, evaluation, training (docs/architecture.md).
"""
