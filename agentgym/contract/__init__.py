"""The env contract, the bottom floor: what every family and every harness part stands on.

- :mod:`~agentgym.contract.core`: ``TextEnv``, ``TaskSplits``, ``UnicodeText``, ``InvalidAction``;
- :mod:`~agentgym.contract.reply_text`: reading an LLM's reply (``</think>``, the ``Action:`` line, fenced blocks);
- :mod:`~agentgym.contract.tools` and :mod:`~agentgym.contract.tool_parsing`: actions as function tools, and
  tool calls in model text <-> OpenAI messages;
- :mod:`~agentgym.contract.registry`: ``register``, ``list_envs``, ``env_info``, a family's preparation;
- :mod:`~agentgym.contract.plugins`: families of other packages (the ``agentgym.envs`` entry point group);
- :mod:`~agentgym.contract.vector`: Gymnasium vector envs over text observations.

These modules stood at the package root before; their old names (``agentgym.core``, ``agentgym.tools``, ...)
stay importable as the same module objects (``import agentgym`` puts them in ``sys.modules``).

Floor: contract; it imports only its own floor (docs/architecture.md).
"""
