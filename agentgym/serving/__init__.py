"""Where envs run, and how they are reached (docs/serving.md).

Layers, each importing only those below it (tests/test_architecture.py checks this):

* :mod:`.wire`: the protocol's data: JSON encoding, spaces as JSON, the observation codec,
  an env's description;
* :mod:`.calls`: the session calls (reset, step, render, the baselines' calls), a JSON
  body in and a JSON answer out, run by the server and by the Ray backend's actor;
* the server: :mod:`.memory` (resident memory and malloc's heap), :mod:`.sessions` (:class:`~.sessions.EnvServer`:
  the sessions and their calls), :mod:`.channels` (the raw WebSocket channels), :mod:`.app` (the FastAPI app,
  its routes and the pydantic schema of :mod:`.api`) and :mod:`.server` (``agentgym serve``, the command line);
  beside it :mod:`.client` (:class:`~.client.ProxyEnv`, the base of every remote env, and
  :class:`~.client.RemoteEnv`), with :mod:`.vector_client` above it (:class:`~.vector_client.RemoteVectorEnv`,
  sessions stepped together over the server's batch channel);
* :mod:`.backends`: ``gym.make(ID, backend=...)``'s table, and one module per backend
  (``local``, ``process``, ``docker``, ``ray``).

Floor: serving; it imports only its own floor and those below it: contract, env machinery, wrappers
(docs/architecture.md).
"""
