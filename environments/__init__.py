"""Environment families, one package each; installed as ``agentgym.environments``.

A family's ``__init__`` only registers its ids (string entry points, no heavy imports);
its engine, tasks, reward and oracle live in the family's own modules.
"""
