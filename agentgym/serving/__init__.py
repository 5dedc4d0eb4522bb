"""Where envs run, and how they are reached (docs/serving.md).

Layers, each importing only those below it (tests/test_architecture.py checks this):

* :mod:`.wire`: the protocol's data: JSON encoding, spaces as JSON, the observation codec,
  an env's description;
* :mod:`.calls`: the session calls (reset, step, render, the baselines' calls), a JSON
  body in and a JSON answer out, run by the server and by the Ray backend's actor;
* :mod:`.server` (``agentgym serve``, with its pydantic schema in :mod:`.api`) and
  :mod:`.client` (:class:`~.client.ProxyEnv`, the base of every remote env, and
  :class:`~.client.RemoteEnv`), with :mod:`.vector_client` above it (:class:`~.vector_client.RemoteVectorEnv`,
  sessions stepped together over the server's batch channel);
* :mod:`.backends`: ``gym.make(ID, backend=...)``'s table, and one module per backend
  (``local``, ``process``, ``docker``, ``ray``).
"""
