"""Adapters that put agentgym envs on other frameworks' and protocols' paths.

One module per protocol, each importing its library (install the matching extra):

* :mod:`agentgym.integrations.mcp` - ``agentgym mcp ENV_ID``: an env as an MCP server
  (``pip install 'agentgym[mcp]'``);
* :mod:`agentgym.integrations.openenv` - OpenEnv's routes on ``agentgym serve`` and an
  OpenEnv client class (``agentgym[openenv]``);
* :mod:`agentgym.integrations.verifiers` - ``load_environment(env_id, ...)`` for
  Prime Intellect's verifiers (``agentgym[verifiers]``).

``import agentgym`` imports none of them. See docs/integrations.md.
"""
