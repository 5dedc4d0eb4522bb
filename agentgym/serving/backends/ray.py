"""The ray backend: ``gym.make(ENV_ID, backend="ray", **kwargs)`` runs the env in a Ray actor.

The actor (:class:`EnvActor`) holds the family's env, made as the local backend makes it, on
whichever node of the Ray cluster has the resources the family asks for
(:func:`actor_options`); ``gym.make`` returns a :class:`RayEnv`, a ``gymnasium.Env`` that
forwards every call to it. Episodes are the local env's: same spaces, observations,
rewards and ``info``; ``TimeLimit`` applies on the caller's side, as with every backend. Like
a :class:`~agentgym.contract.core.TextEnv` it has ``oracle_action()``, ``random_action(rng)``,
``available_actions()``, ``splits``, ``task_id`` and ``split``, and it tells where it runs
(``node_id``, ``actor_id``, ``pid``).

* **Connecting**: the first ray env connects this process to a cluster when it is not
  connected yet (:func:`connect`): the address in ``ray_address=``, else ``$RAY_ADDRESS``,
  else a new single-node Ray instance on this machine (no dashboard, a small object store,
  and the custom resources this machine has, :func:`local_resources`).
* **Resources**: each family asks for CPUs, memory and custom resources
  (:data:`FAMILY_OPTIONS`; :data:`DEFAULT_OPTIONS` for the rest). A custom resource names
  what a node must have for the family (``java``, ``browser``, ``desktop``, ``bwrap``); its
  amount on a node is how many envs of that kind the node may run at once, and each env
  takes 1. ``python -m agentgym.serving.backends.ray`` prints this machine's, for
  ``ray start --resources``. Actors are placed with the ``SPREAD`` strategy.
* **Failures**: an actor that dies (its process killed or crashed, its node gone) or that
  does not answer within ``ray_timeout`` s (it is then killed) makes the call raise
  :class:`EnvActorDiedError`, a ``ConnectionError`` naming the actor and its node, as a
  crashed env server does; the next ``reset()`` starts a new actor. An exception the env
  raises reaches the caller as itself (with Ray's remote traceback in its message). An env
  that cannot be placed because no alive node offers a resource it needs raises
  ``ValueError`` at once; one that stays pending (the cluster is full) raises
  ``TimeoutError`` after ``ray_startup_timeout`` s.

Keyword arguments of ``gym.make`` for this backend (taken out before the rest goes to the
env's constructor):

* ``ray_options``: a dict merged over the family's actor options (``num_cpus``, ``memory``
  in bytes, ``resources``, ``scheduling_strategy``, any option of ``ActorClass.options``);
* ``ray_address``: the cluster to connect to when this process is not connected yet;
* ``ray_startup_timeout``: seconds the actor may take to start (default 120);
* ``ray_timeout``: seconds one call may take (default 300; None: no limit).

:class:`EnvActorPool` keeps ``size`` ray envs of one id for a caller that plays many
episodes (a trainer's rollout workers): ``acquire()`` hands out a gymnasium env,
``release(env)`` takes it back, and a broken env is replaced by a fresh actor.

**Per-step cost.** One call to an actor is one Ray round trip, whatever the env does: about
1 ms on this project's loaded 2-core machine for an empty actor method, and a ray env's step
costs that plus the env (``benchmarks/ray_scaleout.py`` measures both). Where that is too
much, :class:`RayEnvBatch` holds ``size`` envs of one id in one actor and plays a call of every
env in one round trip (``step(actions)``: one action per env), so a step costs the round trip
divided by ``size``, plus the env.
"""

from __future__ import annotations

import functools
import json
import math
import os
import queue
import shutil
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import gymnasium as gym

from agentgym.contract.registry import env_info, limit_key, max_concurrency
from agentgym.serving.backends.local import make_local
from agentgym.serving.calls import CALLS
from agentgym.serving.client import ProxyEnv
from agentgym.serving.wire import describe_env

try:
    import ray
    from ray.exceptions import GetTimeoutError, RayActorError
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError("the ray backend needs Ray: pip install 'agentgym[ray]'") from error

#: Actor options of families without an entry in :data:`FAMILY_OPTIONS`: pure-Python envs.
DEFAULT_OPTIONS: dict[str, Any] = {"num_cpus": 0.25, "memory": 256 * 2**20}
#: Family (or env id, which wins) -> actor options merged over :data:`DEFAULT_OPTIONS` (custom
#: resources: see the module docstring).
FAMILY_OPTIONS: dict[str, dict[str, Any]] = {
    "webshop": {"num_cpus": 0.5, "memory": 512 * 2**20},
    "code": {"num_cpus": 0.5, "memory": 1 * 2**30, "resources": {"bwrap": 1}},
    "scienceworld": {"num_cpus": 1, "memory": 2 * 2**30, "resources": {"java": 1}},
    "alfworld": {"num_cpus": 1, "memory": 1 * 2**30},
    "textworld": {"num_cpus": 0.5, "memory": 512 * 2**20},
    "miniwob": {"num_cpus": 1, "memory": 1 * 2**30, "resources": {"browser": 1}},
    "WebShop-Browser-v0": {"num_cpus": 1, "memory": 2 * 2**30, "resources": {"browser": 1}},
    "desktop": {"num_cpus": 1, "memory": 2 * 2**30, "resources": {"desktop": 1}},
}
#: Custom resource -> programs, any one of which gives a node that resource (see :func:`local_resources`).
RESOURCE_PROGRAMS: dict[str, tuple[str, ...]] = {
    "java": ("java",),
    "browser": ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"),
    "desktop": ("Xvfb",),
    "bwrap": ("bwrap",),
}
#: ``ray.init`` settings of the single-node instance :func:`connect` starts when there is no cluster.
LOCAL_INSTANCE: dict[str, Any] = {"include_dashboard": False, "object_store_memory": 200 * 2**20}
#: Defaults of ``ray_startup_timeout`` and ``ray_timeout`` (seconds).
STARTUP_TIMEOUT_S = 120.0
#: How long :func:`connect` waits for a ``HOST:PORT`` to accept a connection.
CONNECT_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 300.0
#: How long ``close()`` lets the env close in its actor before the actor is killed.
CLOSE_TIMEOUT_S = 10.0


class EnvActorDiedError(ConnectionError):
    """The env's Ray actor died (its process or node is gone) or hung and was killed."""


def local_resources() -> dict[str, float]:
    """The custom resources this machine can offer: each found program's resource, one unit per CPU."""
    cpus = float(os.cpu_count() or 1)
    return {
        resource: cpus
        for resource, programs in RESOURCE_PROGRAMS.items()
        if any(shutil.which(program) for program in programs)
    }


def connect(address: str | None = None) -> None:
    """Connect this process to a Ray cluster, unless it is connected already.

    ``address`` (or ``$RAY_ADDRESS``): an existing cluster (``"auto"``: the one this machine
    joined with ``ray start``, ``HOST:PORT``, ``ray://HOST:PORT``); ``"local"`` or neither: a
    new single-node instance with :data:`LOCAL_INSTANCE` settings and :func:`local_resources`.
    """
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    if address == "local":
        ray.init(address="local", resources=local_resources(), log_to_driver=False, **LOCAL_INSTANCE)
        return
    host, colon, port = address.rpartition(":")
    if colon and port.isdigit() and "://" not in address:  # fail fast where Ray would retry for minutes
        try:
            socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as error:
            raise ConnectionError(f"no Ray cluster answers at {address}: {error}") from None
    ray.init(address=address, log_to_driver=False)


def actor_options(env_id: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Ray actor options of an env: its id's or family's, then ``overrides``, spread over nodes."""
    own = FAMILY_OPTIONS.get(env_id, FAMILY_OPTIONS.get(env_info(env_id).family, {}))
    options = {"scheduling_strategy": "SPREAD", **DEFAULT_OPTIONS, **own}
    return {**options, **(overrides or {})}


def _needs(options: dict[str, Any]) -> dict[str, float]:
    """The resources an actor with ``options`` takes, by Ray's names."""
    needs = {"CPU": options.get("num_cpus") or 0, "memory": options.get("memory") or 0, **options.get("resources", {})}
    return {name: amount for name, amount in needs.items() if amount}


def _fits(needs: dict[str, float], offered: dict[str, float]) -> bool:
    return all(offered.get(name, 0.0) + 1e-9 >= amount for name, amount in needs.items())


def capacity(options: dict[str, Any]) -> int:
    """How many actors with ``options`` the alive nodes of the connected cluster hold in all."""
    needs = _needs(options)
    total = 0
    for node in ray.nodes():
        if node["Alive"]:
            offered = node["Resources"]
            total += min(
                (math.floor(offered.get(name, 0.0) / amount + 1e-9) for name, amount in needs.items()),
                default=1_000_000,
            )
    return total


def has_room(
    actors: list[tuple[str | None, str, dict[str, Any]]],
    env_id: str,
    kwargs: dict[str, Any],
    limits: Mapping[str, int] | None = None,
) -> bool:
    """Whether the cluster holds one more ray env of ``env_id`` beside ``actors`` (counting nothing else).

    ``actors``: ``(node_id, env_id, kwargs)`` of the envs a caller has on the cluster; node
    None for one still starting (then placed first, where it fits). Actors of dead nodes are
    gone. A family's ``max_concurrency`` (or the user's ``limits``, by family or id) caps its
    actors on each node: a node holding that many of them has no room for another.
    """
    free = {node["NodeID"]: dict(node["Resources"]) for node in ray.nodes() if node["Alive"]}
    key, limit = limit_key(env_id, limits), max_concurrency(env_id, limits)
    held = dict.fromkeys(free, 0)  # per node: actors counted under this env's limit
    starting = []
    for node_id, other_id, other_kwargs in actors:
        needs = _needs(actor_options(other_id, other_kwargs.get("ray_options")))
        same = limit is not None and limit_key(other_id, limits) == key
        if node_id is None:
            starting.append((needs, same))
        elif node_id in free:
            held[node_id] += same
            for name, amount in needs.items():
                free[node_id][name] = free[node_id].get(name, 0.0) - amount
    for needs, same in [*starting, (_needs(actor_options(env_id, kwargs.get("ray_options"))), limit is not None)]:
        node_id = next(
            (
                node_id
                for node_id, offered in free.items()
                if _fits(needs, offered) and not (same and limit is not None and held[node_id] >= limit)
            ),
            None,
        )
        if node_id is None:
            return False
        held[node_id] += same
        for name, amount in needs.items():
            free[node_id][name] -= amount
    return True


def check_feasible(env_id: str, options: dict[str, Any]) -> None:
    """Raise ``ValueError`` when no alive node of the cluster can hold the env's actor."""
    alive = [node["Resources"] for node in ray.nodes() if node["Alive"]]
    missing = sorted(set(options.get("resources", {})) - {name for offered in alive for name in offered})
    if missing:
        names = ", ".join(repr(name) for name in missing)
        example = json.dumps(dict.fromkeys(missing, 4))
        raise ValueError(
            f"{env_id} needs the Ray resource(s) {names}, which no node of the cluster offers: start the nodes that "
            f"can run it with `ray start ... --resources '{example}'` (`python -m "
            f"agentgym.serving.backends.ray` prints a machine's), or pass ray_options={{'resources': {{}}}}"
        )
    if capacity(options) == 0:
        raise ValueError(
            f"no alive node of the Ray cluster can hold an actor of {env_id} with options {options} "
            f"(the nodes offer {alive}); pass smaller ray_options"
        )


class EnvActor:
    """Holds one env in a Ray actor process and runs its session calls, as the env server runs a
    session's (made a Ray actor class by :func:`_remote`)."""

    def __init__(self, env_id: str, kwargs: dict[str, Any]) -> None:
        self.env_id, self.kwargs = env_id, kwargs
        self.env = make_local(env_id, kwargs)

    def describe(self) -> dict[str, Any]:
        """The env's wire description, and where the actor runs."""
        context = ray.get_runtime_context()
        return {
            **describe_env(self.env, self.env_id, self.kwargs),
            "node_id": context.get_node_id(),
            "actor_id": context.get_actor_id(),
            "pid": os.getpid(),
        }

    def call(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """Run the session call ``name`` (:data:`~agentgym.serving.calls.CALLS`) on the env."""
        return CALLS[name](self.env, body)()

    def close(self) -> None:
        self.env.close()


@functools.cache
def _remote(actor: type) -> Any:
    """``actor`` as a Ray actor class (made once: never restarted, its calls never retried by Ray)."""
    return ray.remote(max_restarts=0, max_task_retries=0)(actor)


class EnvBatchActor:
    """Holds ``size`` envs of one id in one Ray actor and runs a session call on several of them
    in one actor call (made a Ray actor class by :func:`_remote`)."""

    def __init__(self, env_id: str, kwargs: dict[str, Any], size: int) -> None:
        self.envs = [make_local(env_id, kwargs) for _ in range(size)]

    def describe(self) -> dict[str, Any]:
        """Where the actor runs."""
        context = ray.get_runtime_context()
        return {"node_id": context.get_node_id(), "actor_id": context.get_actor_id(), "pid": os.getpid()}

    def call_each(self, name: str, bodies: list[dict[str, Any] | None]) -> list[dict[str, Any] | None]:
        """The session call ``name`` on env ``i`` with ``bodies[i]``, for each env whose body is not None."""
        call = CALLS[name]
        return [None if body is None else call(env, body)() for env, body in zip(self.envs, bodies)]

    def close(self) -> None:
        for env in self.envs:
            with suppress(Exception):
                env.close()


class RayEnvBatch:
    """``size`` envs of one id in one Ray actor, each call played on all of them in one round trip.

    The envs are the local backend's (``kwargs`` go to their constructor; no ``TimeLimit``: the
    caller counts turns); the actor asks for the family's options (:func:`actor_options`) times
    ``size`` CPUs and memory, less ``options`` overrides. ``None`` in a list of seeds, options
    or actions leaves that env out of the call (its answer is None), so envs whose episodes
    ended wait for the rest::

        batch = RayEnvBatch("Sokoban-v0", size=16)
        observations, infos = batch.reset(options=[{"task_id": i} for i in range(16)])
        results = batch.step(batch.oracle_actions())   # [(observation, reward, terminated, truncated, info), ...]
        batch.close()

    A dead or hung actor raises :class:`EnvActorDiedError` (the batch is then closed).
    """

    def __init__(
        self,
        env_id: str,
        size: int,
        *,
        options: dict[str, Any] | None = None,
        timeout_s: float | None = CALL_TIMEOUT_S,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        if size < 1:
            raise ValueError(f"a batch holds at least one env, got size={size}")
        connect(kwargs.pop("ray_address", None))
        self.env_id, self.size, self.timeout_s = env_id, size, timeout_s
        own = actor_options(env_id)
        scaled = {"num_cpus": (own.get("num_cpus") or 0) * size, "memory": (own.get("memory") or 0) * size}
        resources = {name: amount * size for name, amount in own.get("resources", {}).items()}
        self.options = {**own, **scaled, **({"resources": resources} if resources else {}), **(options or {})}
        check_feasible(env_id, self.options)
        self._actor: Any = _remote(EnvBatchActor).options(**self.options).remote(env_id, kwargs, size)
        try:
            where = ray.get(self._actor.describe.remote(), timeout=startup_timeout_s)
        except GetTimeoutError:
            self.close()
            raise TimeoutError(
                f"the Ray actor of {size} {env_id} envs did not start within {startup_timeout_s:g} s"
            ) from None
        except RayActorError as error:
            self._actor = None
            raise EnvActorDiedError(f"the Ray actor of {size} {env_id} envs died while starting: {error}") from error
        self.node_id: str = where["node_id"]
        self.pid: int = where["pid"]

    def reset(
        self,
        seeds: list[int | None] | None = None,
        options: list[dict[str, Any] | None] | None = None,
        which: list[bool] | None = None,
    ) -> tuple[list[Any], list[dict[str, Any] | None]]:
        """Start an episode in every env (only where ``which[i]``, when given) with ``seeds[i]`` and
        ``options[i]``; the observations and infos (None for the envs left be)."""
        seeds = seeds or [None] * self.size
        options = options or [None] * self.size
        bodies = [
            {"seed": seed, "options": option} if which is None or which[index] else None
            for index, (seed, option) in enumerate(zip(seeds, options))
        ]
        answers = self._call_each("reset", bodies)
        return (
            [None if answer is None else answer["observation"] for answer in answers],
            [None if answer is None else answer["info"] for answer in answers],
        )

    def step(
        self, actions: list[str | dict[str, Any] | None]
    ) -> list[tuple[Any, float, bool, bool, dict[str, Any]] | None]:
        """Play ``actions[i]`` in env ``i`` (None: leave it be); each played env's step result."""
        bodies = [None if action is None else {"action": action} for action in actions]
        return [
            None
            if answer is None
            else (answer["observation"], answer["reward"], answer["terminated"], answer["truncated"], answer["info"])
            for answer in self._call_each("step", bodies)
        ]

    def oracle_actions(self, which: list[bool] | None = None) -> list[str | None]:
        """Each env's oracle action (only where ``which[i]``, when given)."""
        bodies = [{} if which is None or which[index] else None for index in range(self.size)]
        return [None if answer is None else answer["action"] for answer in self._call_each("oracle_action", bodies)]

    def close(self) -> None:
        """Close the envs and end the actor; safe to call twice."""
        actor, self._actor = self._actor, None
        if actor is None:
            return
        with suppress(Exception):
            ray.get(actor.close.remote(), timeout=CLOSE_TIMEOUT_S)
        with suppress(Exception):
            ray.kill(actor, no_restart=True)

    def _call_each(self, name: str, bodies: list[dict[str, Any] | None]) -> list[dict[str, Any] | None]:
        if self._actor is None:
            raise EnvActorDiedError(f"the Ray actor of {self.size} {self.env_id} envs is closed")
        if len(bodies) != self.size:
            raise ValueError(f"{name}: {len(bodies)} entries for a batch of {self.size} envs")
        try:
            return ray.get(self._actor.call_each.remote(name, bodies), timeout=self.timeout_s)
        except RayActorError as error:
            self.close()
            raise EnvActorDiedError(
                f"the Ray actor of {self.size} {self.env_id} envs died: {_first_line(error)}"
            ) from error
        except GetTimeoutError:
            self.close()
            raise EnvActorDiedError(
                f"the Ray actor of {self.size} {self.env_id} envs did not answer {name} "
                f"within {self.timeout_s:g} s; killed"
            ) from None


class RayEnv(ProxyEnv):
    """An env in a Ray actor; see the module docstring.

    ``options`` are the actor's Ray options (:func:`actor_options`); the other keyword
    arguments go to the env's constructor in the actor.
    """

    def __init__(
        self,
        env_id: str,
        *,
        options: dict[str, Any] | None = None,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
        timeout_s: float | None = CALL_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        self.env_id = env_id
        self.kwargs = kwargs
        self.options = actor_options(env_id) if options is None else options
        self.startup_timeout_s = startup_timeout_s
        self.timeout_s = timeout_s
        self._actor: Any = None
        description = self._start()
        self._adopt(description, "agentgym.serving.backends.ray:RayEnv", {"env_id": env_id, **kwargs})

    @property
    def alive(self) -> bool:
        """Whether the env has an actor (False after it died or was closed, until the next ``reset``)."""
        return self._actor is not None

    # ---- the Gymnasium API ----------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Start an episode in the actor (starting a new actor if the last one died)."""
        super().reset(seed=seed)
        if self._actor is None:
            self._start()
        return self._started(self._call("reset", {"seed": seed, "options": options}))

    def close(self) -> None:
        """Close the env in its actor and end the actor; safe to call twice."""
        actor, self._actor = self._actor, None
        if actor is None:
            return
        with suppress(Exception):  # a dead or hung actor is killed all the same
            ray.get(actor.close.remote(), timeout=CLOSE_TIMEOUT_S)
        with suppress(Exception):
            ray.kill(actor, no_restart=True)

    # ---- the actor --------------------------------------------------------------------

    def _start(self) -> dict[str, Any]:
        """Start a new actor; its env's description once it answers."""
        connect()
        check_feasible(self.env_id, self.options)
        actor = _remote(EnvActor).options(**self.options).remote(self.env_id, self.kwargs)
        try:
            description = ray.get(actor.describe.remote(), timeout=self.startup_timeout_s)
        except GetTimeoutError:
            ray.kill(actor, no_restart=True)
            raise TimeoutError(
                f"the Ray actor of {self.env_id} did not start within {self.startup_timeout_s:g} s "
                f"(options {self.options}; is the cluster full?)"
            ) from None
        except RayActorError as error:
            raise EnvActorDiedError(f"the Ray actor of {self.env_id} died while starting: {error}") from error
        self._actor = actor
        self.node_id: str = description["node_id"]
        self.pid: int = description["pid"]
        self.actor_id: str = description["actor_id"]
        return description

    def _call(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        if self._actor is None:
            raise gym.error.ResetNeeded(f"the Ray actor of {self.env_id} is gone: call reset() to start a new one")
        where = f"the Ray actor of {self.env_id} (actor {self.actor_id}, pid {self.pid}, node {self.node_id})"
        try:
            return ray.get(self._actor.call.remote(name, body), timeout=self.timeout_s)
        except RayActorError as error:
            self.close()
            raise EnvActorDiedError(f"{where} died: {_first_line(error)}") from error
        except GetTimeoutError:
            self.close()
            raise EnvActorDiedError(f"{where} did not answer {name}() within {self.timeout_s:g} s; killed") from None


def _first_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    reason = next((line for line in lines if "died because" in line or "because its node" in line), None)
    return " ".join(filter(None, [lines[0] if lines else type(error).__name__, reason]))


def make_ray(env_id: str, kwargs: dict[str, Any]) -> RayEnv:
    """The env in a new Ray actor (see the module docstring)."""
    known = ("ray_options", "ray_address", "ray_startup_timeout", "ray_timeout")
    unknown = sorted(key for key in kwargs if key.startswith("ray_") and key not in known)
    if unknown:
        raise TypeError(f"unknown ray backend argument(s) {', '.join(unknown)}; known: {', '.join(known)}")
    env_kwargs = {key: value for key, value in kwargs.items() if key not in known}
    connect(kwargs.get("ray_address"))
    return RayEnv(
        env_id,
        options=actor_options(env_id, kwargs.get("ray_options")),
        startup_timeout_s=kwargs.get("ray_startup_timeout", STARTUP_TIMEOUT_S),
        timeout_s=kwargs.get("ray_timeout", CALL_TIMEOUT_S),
        **env_kwargs,
    )


class EnvActorPool:
    """``size`` ray envs of one id, handed out one caller at a time; thread-safe.

    ``size`` None: as many as the cluster holds (:func:`capacity`), at most 64. The envs
    are made lazily with ``gym.make(env_id, backend="ray", **kwargs)`` (so ``TimeLimit``
    applies; ``max_episode_steps=`` and ``ray_*`` arguments work). A trainer's rollout
    worker does::

        pool = EnvActorPool("WebShop-v0", size=32)
        with pool.env() as env:              # blocks until one is free
            observation, info = env.reset(options={"task_id": 3})
            ...
        pool.close()

    An env whose call raised :class:`EnvActorDiedError` (or any error, with
    ``release(env, broken=True)``) is closed and replaced by a new actor when next needed.
    """

    def __init__(self, env_id: str, size: int | None = None, **kwargs: Any) -> None:
        connect(kwargs.get("ray_address"))
        self.env_id = env_id
        self.kwargs = kwargs
        self.size = size or max(1, min(64, capacity(actor_options(env_id, kwargs.get("ray_options")))))
        self._free: queue.SimpleQueue[gym.Env | None] = queue.SimpleQueue()
        for _ in range(self.size):
            self._free.put(None)  # a slot whose env is made when handed out
        self._lock = threading.Lock()
        self._made: list[gym.Env] = []

    def acquire(self, timeout: float | None = None) -> gym.Env:
        """A free env (made now if its slot has none); ``TimeoutError`` if none frees up in ``timeout`` s."""
        try:
            env = self._free.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no env of the pool of {self.env_id} was free within {timeout} s") from None
        if env is not None and env.unwrapped.alive:
            return env
        try:
            env = gym.make(self.env_id, backend="ray", **self.kwargs)
        except BaseException:
            self._free.put(None)
            raise
        with self._lock:
            self._made.append(env)
        return env

    def release(self, env: gym.Env, *, broken: bool = False) -> None:
        """Hand ``env`` back; ``broken``: close it, and its slot gets a new actor when next handed out."""
        if broken or not env.unwrapped.alive:
            env.close()
            with self._lock:
                self._made.remove(env)
            env = None
        self._free.put(env)

    @contextmanager
    def env(self, timeout: float | None = None) -> Iterator[gym.Env]:
        """``acquire`` and ``release``: an env raising :class:`EnvActorDiedError` inside is replaced."""
        env = self.acquire(timeout)
        broken = False
        try:
            yield env
        except EnvActorDiedError:
            broken = True
            raise
        finally:
            self.release(env, broken=broken)

    def close(self) -> None:
        """Close every env the pool made (envs handed out stop working)."""
        with self._lock:
            made, self._made = self._made, []
        for env in made:
            env.close()


if __name__ == "__main__":
    print(json.dumps(local_resources()))
