"""The env server and RemoteEnv over real HTTP on loopback: equivalence with local envs, limits, errors."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import psutil
import pytest
import uvicorn
from asgi import serving_in_thread
from episodes import sampled
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK

import agentgym
from agentgym.browser.page import CHROMIUM
from agentgym.contract.core import InvalidAction, TaskSplits, TextEnv, UnicodeText
from agentgym.serving import server as server_module
from agentgym.serving.backends.process import ServerProcess
from agentgym.serving.client import RemoteEnv, RemoteEnvError, ServerUnavailableError
from agentgym.serving.monitor import MetricsListener
from agentgym.serving.server import ChannelsFirst, create_app
from agentgym.serving.sessions import PYTHON_SHARE, EnvServer, LoopLag, PythonCalls, Session
from agentgym.serving.wire import (
    CHANNEL_SESSION_GONE,
    decode_observation,
    describe_space,
    encode_json,
    encode_observation,
    space_from_description,
)
from agentgym.utils.processes import descendants
from agentgym.utils.sockets import listening_socket

PUZZLES = [
    ("Sokoban-v0", {}),
    ("FrozenLake-v0", {"is_slippery": True}),
    ("Maze-v0", {}),
    ("Wordle-v0", {}),
]


#: How long FragileEnv's ``stall`` command blocks, and the event it sets as it starts to.
STALL_S = 2.0
STALLING = threading.Event()


class FragileEnv(TextEnv):
    """Say 'go' twice to win; 'crash' makes the engine raise. Counts closes; info holds numpy values."""

    splits = TaskSplits(train=5, dev=5, test=5)
    metadata = {**TextEnv.metadata, "inline_safe": True}
    closed = 0

    def __init__(self, explode: bool = False, make_s: float = 0.0, render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        if explode:
            raise RuntimeError("the constructor blew up")
        time.sleep(make_s)

    @property
    def action_syntax(self) -> str:
        return "Say 'go'."

    def _generate(self, task_id: int) -> str:
        self.left = 2
        return f"Task {task_id}: say go twice."

    def _describe(self) -> str:
        return f"{self.left} to go."

    def _execute(self, command: str) -> str:
        if command == "crash":
            raise RuntimeError("the engine fell over")
        if command == "stall":  # on the event loop, for an inline env: the loop stands still meanwhile
            STALLING.set()
            time.sleep(STALL_S)
            return "Stalled."
        if command != "go":
            raise InvalidAction("say go")
        self.left -= 1
        self.score = (2 - self.left) / 2
        self.terminated = self.success = self.left == 0
        return "Going."

    def oracle_action(self) -> str:
        return "go"

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        numbers = {"np_int": np.int64(self.left), "np_float": np.float32(0.5), "np_bool": np.bool_(invalid)}
        return super()._info(command, invalid) | numbers | {"np_array": np.arange(3)}

    def close(self) -> None:
        FragileEnv.closed += 1


class ThreadedFragileEnv(FragileEnv):
    """The same env, run on a session thread."""

    metadata = {**TextEnv.metadata}


@pytest.fixture(scope="module", autouse=True)
def registered_envs() -> Iterator[None]:
    """The server's test envs (family ``test``), registered for this module."""
    for env_id, env_class in [("Fragile-v0", FragileEnv), ("ThreadedFragile-v0", ThreadedFragileEnv)]:
        agentgym.register(
            env_id,
            entry_point=f"{__name__}:{env_class.__name__}",
            family="test",
            description="server test env",
            splits=env_class.splits,
            max_episode_steps=10,
        )
    yield
    for env_id in ("Fragile-v0", "ThreadedFragile-v0"):
        agentgym.contract.registry.unregister(env_id)


@contextlib.contextmanager
def serving(env_ids: list[str], **options: Any) -> Iterator[str]:
    """Run ``create_app(env_ids, **options)`` with uvicorn in a thread, as ``agentgym serve`` runs it
    (:class:`ChannelsFirst`: the channels' tests here play its path, tests/test_vector_client.py the app's own);
    yields its URL."""
    app = ChannelsFirst(create_app(env_ids, **options))
    sock = listening_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()  # the socket already listens: the first request waits until uvicorn accepts it
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def url(registered_envs: None) -> Iterator[str]:
    served = [env_id for env_id, _ in PUZZLES] + ["Fragile-v0", "ThreadedFragile-v0"]
    with serving(served) as address:
        yield address


def trajectory(env: gym.Env, task_id: int, seed: int, steps: int = 40) -> list[Any]:
    """Two episodes (a seeded one, then one drawn by the env's generator) of mixed replies."""
    rng = random.Random(seed)
    transitions: list[Any] = []
    for options in ({"task_id": task_id}, {"split": "test"}):
        transitions.append(env.reset(seed=seed if options.get("task_id") is not None else None, options=options))
        for _ in range(steps):
            base = env.unwrapped
            choice = rng.randrange(4)
            if choice == 3:
                reply = base.random_action(rng)
            else:
                reply = ["garbage \ud800 ünï 🙂", f"Action: {base.oracle_action()}", base.oracle_action()][choice]
            transitions.append(env.step(reply))
            if transitions[-1][2] or transitions[-1][3]:
                break
    return transitions


def assert_same_transitions(remote: list[Any], local: list[Any]) -> None:
    """Equal transitions; dict observations compared key by key, their arrays by dtype, shape and values."""
    assert len(remote) == len(local)
    for index, (got, expected) in enumerate(zip(remote, local)):
        if isinstance(expected[0], dict):
            assert_same_observation(got[0], expected[0], f"transition {index}: ")
            got, expected = got[1:], expected[1:]
        assert got == expected, f"transition {index} differs"
        assert [type(value) for value in got[:-1]] == [type(value) for value in expected[:-1]]


def assert_same_observation(got: dict[str, Any], expected: dict[str, Any], where: str = "") -> None:
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, np.ndarray):
            assert isinstance(got[key], np.ndarray) and got[key].dtype == value.dtype and got[key].shape == value.shape
            if not np.array_equal(got[key], value):
                pytest.fail(f"{where}observation[{key!r}] differs{differing_part(got[key], value)}")
        else:
            assert got[key] == value, f"{where}observation[{key!r}] differs"


def differing_part(got: np.ndarray, expected: np.ndarray) -> str:
    """Where two arrays of one shape differ: the count and bounding box of the differing (pixel) positions."""
    differs = got != expected
    if differs.ndim == 3:  # an image: a pixel differs where any channel does
        differs = differs.any(axis=2)
    positions = np.argwhere(differs)
    return f" at {len(positions)} positions, from {positions.min(0).tolist()} to {positions.max(0).tolist()}"


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
@pytest.mark.parametrize(("env_id", "kwargs"), PUZZLES)
def test_remote_episodes_equal_local_ones(url: str, env_id: str, kwargs: dict[str, Any], websocket: bool) -> None:
    local = gym.make(env_id, **kwargs)
    remote = RemoteEnv(url, env_id, websocket=websocket, **kwargs)
    try:
        assert repr(remote.observation_space) == repr(local.observation_space)
        assert repr(remote.action_space) == repr(local.action_space)
        assert remote.splits == local.unwrapped.splits and remote.spec.max_episode_steps == local.spec.max_episode_steps
        assert remote.metadata["render_modes"] == local.metadata["render_modes"] and not remote.metadata["inline_safe"]
        for task_id, seed in [(0, 0), (agentgym.env_info(env_id).splits.ids("test")[5], 11)]:
            assert_same_transitions(trajectory(remote, task_id, seed), trajectory(local, task_id, seed))
            assert remote.task_id == local.unwrapped.task_id and remote.split == local.unwrapped.split
        assert remote.available_actions() == local.unwrapped.available_actions()
    finally:
        remote.close()


@pytest.fixture(scope="module")
def every_env_url() -> Iterator[str]:
    with serving(["*"]) as address:
        yield address


@pytest.mark.usefixtures("alfworld_data")
@pytest.mark.parametrize("env_id", sampled([info.id for info in agentgym.list_envs()]))
def test_every_registered_env_plays_the_same_episode_remotely(every_env_url: str, env_id: str) -> None:
    # Real web apps put their own clock, notices and script-rewritten URLs (MediaWiki's filters) into the
    # pages an action opens, so their episodes are compared on the reset, as in the contract and vector
    # tests (docs/webapps.md, deviations).
    steps = 0 if agentgym.env_info(env_id).family == "webapps" else 10
    runs = []
    for env in (gym.make(env_id), RemoteEnv(every_env_url, env_id)):
        rng = random.Random(1)
        runs.append([env.reset(seed=2, options={"task_id": 5})])
        for _ in range(steps):
            runs[-1].append(env.step(env.unwrapped.random_action(rng)))
            if runs[-1][-1][2] or runs[-1][-1][3]:
                break
        env.close()
    assert_same_transitions(*reversed(runs))


@pytest.mark.parametrize(("env_id", "kwargs"), PUZZLES)
def test_truncation_at_the_step_limit_matches_local(url: str, env_id: str, kwargs: dict[str, Any]) -> None:
    limit = 12
    remote = RemoteEnv(url, env_id, max_episode_steps=limit, **kwargs)
    envs = [remote, gym.make(env_id, max_episode_steps=limit, **kwargs)]
    runs = []
    for env in envs:
        run = [env.reset(seed=1, options={"task_id": 4})]
        run += [env.step("not an action") for _ in range(limit)]
        runs.append(run)
    remote.close()
    assert_same_transitions(*runs)
    assert [transition[3] for transition in runs[0][1:]] == [False] * (limit - 1) + [True]


def test_check_env_passes_on_a_remote_env(url: str) -> None:
    env = RemoteEnv(url, "Sokoban-v0")
    check_env(env)  # also makes new RemoteEnvs from env.spec, one per render mode
    env.close()
    check_env(RemoteEnv(url, "Sokoban-v0", render_mode="ansi"))


def test_dict_spaces_and_array_observations_round_trip() -> None:
    """A screenshot-style observation and its spaces survive the wire format unchanged."""
    space = spaces.Dict(
        {
            "text": UnicodeText(100),
            "screenshot": spaces.Box(0, 255, (48, 64, 3), np.uint8),
            "cursor": spaces.Box(np.array([0, 0]), np.array([63, 47]), (2,), np.int64),
            "scores": spaces.Box(-1.0, np.array([1.0, 2.0], dtype=np.float32), (2,), np.float32),
        }
    )
    description = describe_space(space)
    assert len(encode_json(description)) < 1000  # uniform bounds travel as one number
    assert repr(space_from_description(json.loads(encode_json(description)))) == repr(space)
    observation = space.sample()
    observation["text"] = "ünï 🙂"
    wire = json.loads(encode_json({"observation": encode_observation(observation)}))
    assert_same_observation(decode_observation(wire["observation"]), observation)
    assert decode_observation(json.loads(encode_json(encode_observation("plain text")))) == "plain text"


def test_numpy_values_and_odd_strings_round_trip_exactly(url: str) -> None:
    local, remote = gym.make("Fragile-v0"), RemoteEnv(url, "ThreadedFragile-v0")
    replies = [
        "\ud800 lone \udfff surrogates",
        "\x00\u202e control",
        "Ünïcödé 中文 🙂",
        "Action: " + "up " * 300_000,
        "go",
    ]
    for env in (local, remote):
        env.reset(seed=0, options={"task_id": 3})
    for reply in replies:
        got, expected = remote.step(reply), local.step(reply)
        assert got[-1].pop("np_array") == expected[-1].pop("np_array").tolist() == [0, 1, 2]
        assert got == expected
        assert type(got[-1]["np_int"]) is int and type(got[-1]["np_float"]) is float
        assert type(got[-1]["np_bool"]) is bool
    remote.close()


def test_random_action_draws_like_the_local_env(url: str) -> None:
    local, remote = gym.make("Sokoban-v0"), RemoteEnv(url, "Sokoban-v0")
    local_rng, remote_rng = random.Random(5), random.Random(5)
    for env in (local, remote):
        env.reset(options={"task_id": 9})
    for _ in range(20):
        assert remote.random_action(remote_rng) == local.unwrapped.random_action(local_rng)
    assert remote_rng.getstate() == local_rng.getstate()
    answer = httpx.post(f"{url}/sessions/{remote.session_id}/random_action", json={"seed": 3}).json()
    local_rng = random.Random(3)
    assert answer["action"] == local.unwrapped.random_action(local_rng)
    remote.close()


def test_remote_envs_make_their_tls_context_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx reads the CA bundle for every client it makes (about 50 ms of CPU); RemoteEnvs share one context per
    CA setting, the one httpx would make ($SSL_CERT_FILE, else certifi's bundle)."""
    import ssl

    import certifi

    from agentgym.serving import client

    server = ServerProcess(["FrozenLake-v0"])
    made: list[dict[str, Any]] = []
    create, this_thread = ssl.create_default_context, threading.current_thread()

    def counted(**kwargs: Any) -> ssl.SSLContext:
        if threading.current_thread() is this_thread:  # not another test's leftover thread
            made.append(kwargs)
        return create(**kwargs)

    monkeypatch.setattr(client.ssl, "create_default_context", counted)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    client._tls_context.cache_clear()
    try:
        for _ in range(3):
            with RemoteEnv(server.url, "FrozenLake-v0") as env:
                env.reset(seed=0)
        assert made == [{"cafile": certifi.where()}]
        monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
        for _ in range(2):
            with RemoteEnv(server.url, "FrozenLake-v0") as env:
                env.reset(seed=0)
        assert len(made) == 2 and client.tls_context() is not client._tls_context(None, None)
    finally:
        client._tls_context.cache_clear()
        server.stop()


def test_200_concurrent_sessions_on_one_server() -> None:
    """200 threads, each with a RemoteEnv and a local twin playing the same oracle episode."""
    server = ServerProcess(["FrozenLake-v0"], max_sessions=256)
    count, opened, errors = 200, threading.Barrier(201, timeout=60), []

    def play(index: int) -> None:
        try:
            remote, local = RemoteEnv(server.url, "FrozenLake-v0"), gym.make("FrozenLake-v0")
            transitions = [tuple(env.reset(seed=index, options={"task_id": index}) for env in (remote, local))]
            opened.wait()  # every session is open at once here
            opened.wait()
            done = False
            while not done:
                action = local.unwrapped.oracle_action()
                transitions += [(remote.step(action), local.step(action))]
                done = transitions[-1][1][2] or transitions[-1][1][3]
            remote.close()
            assert_same_transitions(*zip(*transitions))
        except Exception as error:  # reported by the main thread
            errors.append(error)
            opened.abort()

    threads = [threading.Thread(target=play, args=(index,)) for index in range(count)]
    try:
        for thread in threads:
            thread.start()
        opened.wait()
        assert httpx.get(f"{server.url}/metrics").json()["sessions"] == count
        opened.wait()
        for thread in threads:
            thread.join(60)
        assert not errors, errors[:3]
        metrics = httpx.get(f"{server.url}/metrics").json()
    finally:
        server.stop()
    assert metrics["sessions"] == 0 and metrics["sessions_created"] == metrics["sessions_closed"] == count


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_abandoned_sessions_are_reaped_and_a_remote_env_recovers(websocket: bool) -> None:
    FragileEnv.closed = 0
    with serving(["Fragile-v0"], session_ttl_s=0.3) as address:
        for _ in range(5):
            assert httpx.post(f"{address}/sessions", json={"env_id": "Fragile-v0"}).status_code == 201
        env = RemoteEnv(address, "Fragile-v0", websocket=websocket)
        env.reset(options={"task_id": 1})
        deadline = time.monotonic() + 10
        while httpx.get(f"{address}/metrics").json()["sessions"] and time.monotonic() < deadline:
            time.sleep(0.05)
        metrics = httpx.get(f"{address}/metrics").json()
        assert metrics["sessions"] == 0 and metrics["sessions_reaped"] == 6 and FragileEnv.closed == 6
        with pytest.raises(RemoteEnvError, match="UnknownSession") as caught:
            env.step("go")
        assert caught.value.status == 404
        if not websocket:  # the server says why it went (a channel's error names the channel closing)
            assert re.search(r"reaped after idling \d+\.\d s; the server's idle TTL is 0.3 s", str(caught.value))
        env.reset(options={"task_id": 1})  # opens a new session
        assert env.step("go")[1] == 0.5
        env.close()


def test_a_session_idles_from_when_its_env_is_ready_not_from_when_it_was_asked_for() -> None:
    """An env that takes longer to make than the TTL (a browser on a loaded machine) is not reaped before its
    client's first call."""

    async def open_then_reap() -> tuple[int, int]:
        server = EnvServer(["ThreadedFragile-v0"], session_ttl_s=0.3)
        await server.create({"env_id": "ThreadedFragile-v0", "kwargs": {"make_s": 0.6}})
        reaped, held = await server.reap(), len(server.sessions)
        await server.close_all()
        return reaped, held

    assert asyncio.run(open_then_reap()) == (0, 1)


def test_max_sessions_answers_429_until_one_closes() -> None:
    with serving(["Fragile-v0"], max_sessions=2) as address:
        envs = [RemoteEnv(address, "Fragile-v0") for _ in range(2)]
        response = httpx.post(f"{address}/sessions", json={"env_id": "Fragile-v0"})
        assert response.status_code == 429 and response.headers["retry-after"]
        assert response.json()["error"]["type"] == "TooManySessions"
        with pytest.raises(RemoteEnvError, match="TooManySessions"):
            RemoteEnv(address, "Fragile-v0", retries=1)
        envs.pop().close()
        RemoteEnv(address, "Fragile-v0").close()
        envs[0].close()


SESSION = "{session}"
MALFORMED = [
    ("POST", "/sessions", b"{not json", 400, "InvalidJSON"),
    ("POST", "/sessions", b"[1, 2]", 422, "InvalidRequest"),
    ("POST", "/sessions", {}, 422, "InvalidRequest"),
    ("POST", "/sessions", {"env_id": 7}, 422, "InvalidRequest"),
    ("POST", "/sessions", {"env_id": "Sokoban-v0", "kwargs": "dim_room=6"}, 422, "InvalidRequest"),
    ("POST", "/sessions", {"env_id": "Sokoban-v0", "max_episode_steps": 0}, 422, "InvalidRequest"),
    ("POST", "/sessions", {"env_id": "Nope-v0"}, 404, "UnknownEnv"),
    ("POST", "/sessions", {"env_id": "Maze-Partial-v0"}, 404, "UnknownEnv"),  # registered, not served
    ("POST", "/sessions", {"env_id": "Sokoban-v0", "kwargs": {"colour": "red"}}, 422, "InvalidArgument"),
    ("POST", "/sessions", {"env_id": "FrozenLake-v0", "kwargs": {"size": 1}}, 422, "InvalidArgument"),
    ("POST", "/sessions", {"env_id": "Sokoban-v0", "kwargs": {"backend": "process"}}, 422, "InvalidArgument"),
    ("POST", "/sessions/nope/step", {"action": "up"}, 404, "UnknownSession"),
    ("DELETE", "/sessions/nope", None, 404, "UnknownSession"),
    ("POST", f"/sessions/{SESSION}/step", {"action": "up"}, 409, "ResetNeeded"),
    ("POST", f"/sessions/{SESSION}/oracle_action", None, 409, "ResetNeeded"),
    ("POST", f"/sessions/{SESSION}/reset", {"seed": "1"}, 422, "InvalidRequest"),
    ("POST", f"/sessions/{SESSION}/reset", {"seed": True}, 422, "InvalidRequest"),
    ("POST", f"/sessions/{SESSION}/reset", {"options": {"task_id": 10**9}}, 422, "InvalidArgument"),
    ("POST", f"/sessions/{SESSION}/reset", {"options": {"colour": 1}}, 422, "InvalidArgument"),
    ("POST", f"/sessions/{SESSION}/random_action", {"rng_state": [1, 2]}, 422, "InvalidRequest"),
    ("POST", f"/sessions/{SESSION}/teleport", {}, 404, "NotFound"),
    ("GET", f"/sessions/{SESSION}/step", None, 405, "MethodNotAllowed"),
    ("GET", "/nowhere", None, 404, "NotFound"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "kind"), MALFORMED)
def test_client_mistakes_get_json_4xx_and_leave_the_session_usable(
    url: str, method: str, path: str, body: Any, status: int, kind: str
) -> None:
    created = httpx.post(f"{url}/sessions", json={"env_id": "Sokoban-v0"}).json()
    session = created["session_id"]
    content = body if isinstance(body, bytes) else None
    response = httpx.request(
        method, url + path.format(session=session), content=content, json=None if content else body
    )
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["type"] == kind and error["message"] and "Traceback" not in response.text
    assert httpx.post(f"{url}/sessions/{session}/reset", json={"options": {"task_id": 0}}).status_code == 200
    assert httpx.post(f"{url}/sessions/{session}/step", json={"action": "up"}).status_code == 200
    httpx.delete(f"{url}/sessions/{session}")


def test_oversized_bodies_get_413_with_or_without_a_length() -> None:
    with serving(["Fragile-v0"], max_body_bytes=1000) as address:
        session = httpx.post(f"{address}/sessions", json={"env_id": "Fragile-v0"}).json()["session_id"]
        step = f"{address}/sessions/{session}/step"
        for content in (b'{"action": "%s"}' % (b"a" * 2000), iter([b'{"action": "', b"a" * 2000, b'"}'])):
            response = httpx.post(step, content=content)  # an iterator is sent chunked, without a length
            assert response.status_code == 413 and response.json()["error"]["type"] == "PayloadTooLarge"
        assert httpx.post(f"{address}/sessions/{session}/reset", json={}).status_code == 200
        assert httpx.post(step, json={"action": "go"}).json()["reward"] == 0.5


def test_remote_env_raises_what_the_local_env_raises(url: str) -> None:
    with pytest.raises(TypeError, match="colour"):
        RemoteEnv(url, "Sokoban-v0", colour="red")
    with pytest.raises(ValueError, match="size"):
        RemoteEnv(url, "FrozenLake-v0", size=1)
    with pytest.raises(RemoteEnvError, match="UnknownEnv"):
        RemoteEnv(url, "Maze-Partial-v0")
    env = RemoteEnv(url, "Sokoban-v0")
    with pytest.raises(gym.error.ResetNeeded):
        env.step("up")
    with pytest.raises(ValueError, match="outside"):
        env.reset(options={"task_id": -1})
    env.close()
    fragile = RemoteEnv(url, "Fragile-v0")  # no enumerable actions: no random baseline
    fragile.reset()
    with pytest.raises(NotImplementedError):
        fragile.random_action(random.Random(0))
    fragile.close()


@pytest.mark.parametrize("env_id", ["Fragile-v0", "ThreadedFragile-v0"])
def test_an_env_that_raises_gets_env_error_and_its_session_is_closed(url: str, env_id: str) -> None:
    FragileEnv.closed = 0
    env = RemoteEnv(url, env_id)
    env.reset(options={"task_id": 2})
    session = env.session_id
    response = httpx.post(f"{url}/sessions/{session}/step", json={"action": "crash"})
    assert response.status_code == 500 and "Traceback" not in response.text
    assert response.json()["error"] == {
        "type": "EnvError",
        "message": "step raised RuntimeError: the engine fell over",
        "session_closed": True,
    }
    assert FragileEnv.closed == 1
    assert session not in {entry["session_id"] for entry in httpx.get(f"{url}/sessions").json()["sessions"]}
    with pytest.raises(RemoteEnvError, match="UnknownSession"):
        env.step("go")
    env.reset(options={"task_id": 2})  # a new session
    with pytest.raises(RemoteEnvError, match="EnvError.*engine fell over"):
        env.step("crash")
    env.reset(options={"task_id": 2})
    assert env.step("go")[1] == 0.5
    env.close()
    response = httpx.post(f"{url}/sessions", json={"env_id": env_id, "kwargs": {"explode": True}})
    assert response.status_code == 500 and response.json()["error"]["type"] == "EnvError"
    assert "constructor blew up" in response.json()["error"]["message"]


def test_health_metrics_and_session_listing(url: str) -> None:
    health = httpx.get(f"{url}/health").json()
    assert health["status"] == "ok" and "Sokoban-v0" in health["envs"]
    env = RemoteEnv(url, "Maze-v0")
    env.reset(options={"task_id": 0})
    env.step(env.oracle_action())
    listed = {entry["session_id"]: entry for entry in httpx.get(f"{url}/sessions").json()["sessions"]}
    assert listed[env.session_id]["env_id"] == "Maze-v0" and listed[env.session_id]["steps"] == 1
    metrics = httpx.get(f"{url}/metrics").json()
    assert metrics["steps"] >= 1 and metrics["calls"]["oracle_action"] >= 1 and metrics["rss_bytes"] > 10**6
    assert metrics["sessions_by_env"]["Maze-v0"] >= 1 and metrics["errors"] == sum(metrics["errors_by_type"].values())
    lag = metrics["loop_lag_s"]
    assert 0 <= lag["last"] <= lag["max_last_minute"] <= lag["max"]
    memory = httpx.get(f"{url}/memory").json()
    assert memory["rss_bytes"] > 10**6 and memory["python_blocks"] > 0 and memory["gc_objects"] > 1000
    assert memory["malloc"]["in_use"] <= memory["malloc"]["held"] and memory["threads"] >= 1
    assert "dict" in memory["objects_by_type"] and sum(memory["objects_by_type"].values()) <= memory["gc_objects"]
    env.close()


def test_the_metrics_listener_answers_while_the_event_loop_stands_still() -> None:
    """``--metrics-port``: while an inline env's step holds the event loop for 2 s, the listener answers a scrape
    at once with the counters the loop's ``/metrics`` gives after; the server's keys guard it; its relay process,
    killed, is started again, and closing the listener ends it."""
    app = create_app(["Fragile-v0"], api_keys=["secret"])
    keyed = {"Authorization": "Bearer secret"}
    listener = MetricsListener(app.state.server, "127.0.0.1", 0, ["secret"]).start()
    with serving_in_thread(ChannelsFirst(app)) as url, concurrent.futures.ThreadPoolExecutor(2) as pool:
        env = RemoteEnv(url, "Fragile-v0", api_key="secret")
        env.reset(options={"task_id": 0})
        STALLING.clear()
        stalled = pool.submit(env.step, "stall")
        assert STALLING.wait(30)
        on_loop = pool.submit(httpx.get, f"{url}/metrics", headers=keyed, timeout=30)
        asked = time.monotonic()
        scraped = httpx.get(listener.url, headers=keyed, timeout=30)
        listener_s = time.monotonic() - asked
        loop_answer = on_loop.result()
        loop_s = time.monotonic() - asked
        assert "Stalled." in stalled.result()[0]
        assert scraped.status_code == 200 and listener_s < 0.5 < STALL_S - 0.5 < loop_s, (listener_s, loop_s)
        metrics, after = scraped.json(), loop_answer.json()
        assert metrics["sessions"] == after["sessions"] == 1 and metrics["sessions_by_env"] == {"Fragile-v0": 1}
        assert metrics["calls"]["reset"] == after["calls"]["reset"] == 1 and after["loop_lag_s"]["max"] >= 1.0
        refused = httpx.get(listener.url, timeout=30)
        assert refused.status_code == 401 and refused.json()["error"]["type"] == "Unauthorized"
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
        wrong = httpx.get(listener.url, headers={"Authorization": "Bearer guess"}, timeout=30)
        assert wrong.status_code == 401 and wrong.json()["error"]["message"] == "the API key is not valid"
        elsewhere = httpx.get(listener.url.replace("/metrics", "/sessions"), headers=keyed, timeout=30)
        assert elsewhere.status_code == 404 and elsewhere.json()["error"]["type"] == "NotFound"
        posted = httpx.post(listener.url, headers=keyed, timeout=30)
        assert posted.status_code == 405 and posted.headers["Allow"] == "GET"
        killed = listener.relay_pid
        os.kill(killed, signal.SIGKILL)  # the relay process dies: the server starts another on the same port
        again = httpx.get(listener.url, headers=keyed, timeout=30)
        assert again.status_code == 200 and again.json()["calls"]["step"] == 1 and listener.relay_pid != killed
        assert int(again.headers["Age"]) <= 1
        env.close()
    listener.close()
    assert not psutil.pid_exists(listener.relay_pid)


def test_the_loop_lag_is_how_late_the_loop_runs_a_timer() -> None:
    async def blocked_once() -> dict[str, float]:
        lag = LoopLag(period_s=0.02)
        watch = asyncio.create_task(lag.watch())
        await asyncio.sleep(0.1)
        time.sleep(0.3)  # the loop blocked, as a blocking call in a handler would block it
        await asyncio.sleep(0.1)
        watch.cancel()
        return lag.summary()

    summary = asyncio.run(blocked_once())
    assert 0.25 <= summary["max_last_minute"] == summary["max"] and summary["last"] <= summary["max"], summary


def test_calls_that_run_python_take_turns_and_calls_that_wait_elsewhere_do_not() -> None:
    """With one turn, envs computing in Python never overlap; envs waiting (on a browser, a JVM: a sleep here)
    take a turn only until their first call has been measured, then run side by side."""
    running, most = [0], [0]
    lock = threading.Lock()

    def compute() -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        deadline = time.thread_time() + 0.05
        while time.thread_time() < deadline:
            pass
        with lock:
            running[0] -= 1

    def wait() -> None:
        time.sleep(0.3)

    def session(name: str) -> Session:
        return Session(name, "Test-v0", {}, env=None, executor=concurrent.futures.ThreadPoolExecutor(1))  # type: ignore[arg-type]

    async def rounds() -> tuple[float, float, list[float], list[float]]:
        gate = PythonCalls(1)
        computing, waiting = [session(f"c{i}") for i in range(3)], [session(f"w{i}") for i in range(3)]
        timings = []
        for _ in range(2):
            started = time.perf_counter()
            await asyncio.gather(*(s.run(wait, gate) for s in waiting), *(s.run(compute, gate) for s in computing))
            timings.append(time.perf_counter() - started)
        assert gate.summary() == {"limit": 1, "running": 0, "waiting": 0}
        return *timings, [s.python_share for s in computing], [s.python_share for s in waiting]  # type: ignore[return-value]

    first, second, computing_shares, waiting_shares = asyncio.run(rounds())
    assert most[0] == 1
    assert all(share >= PYTHON_SHARE for share in computing_shares), computing_shares
    assert all(share < PYTHON_SHARE for share in waiting_shares), waiting_shares
    assert first >= 0.9 and second < first - 0.4, (first, second)  # the three waits one after another, then together


def test_memory_freed_on_many_threads_goes_back_to_the_system() -> None:
    """What envs free on session threads stays in malloc's arenas until release_free_memory (run in a fresh
    process, whose heap holds nothing else)."""
    script = """
import json, threading
from agentgym.serving.server import release_free_memory, rss_bytes
kept = []
def churn():
    blocks = [bytearray(3000) for _ in range(4000)]
    kept.extend(blocks[::16])  # one block in 16 stays: the freed rest is scattered between them
base = rss_bytes()
threads = [threading.Thread(target=churn) for _ in range(8)]
[thread.start() for thread in threads]
[thread.join() for thread in threads]
before = rss_bytes()
print(json.dumps({"released": release_free_memory(), "base": base, "before": before, "after": rss_bytes()}))
"""
    result = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, check=True).stdout)
    # the threads' 96 MB, 6 of them kept: most of what they left resident goes back
    assert result["released"] and result["after"] - result["base"] < (result["before"] - result["base"]) / 2, result


def test_the_server_caps_malloc_arenas_however_many_threads_allocate(tmp_path: Path) -> None:
    """Sixteen allocating threads get sixteen arenas by default on two cores, two after limit_malloc_arenas
    (counted in glibc's malloc_info report; fresh processes)."""
    script = """
import ctypes, sys, threading
from agentgym.serving.server import limit_malloc_arenas
if sys.argv[1] == "capped":
    assert limit_malloc_arenas()
barrier = threading.Barrier(16)
def allocate():
    barrier.wait()  # all sixteen allocate at once
    blocks = [bytearray(200) for _ in range(20000)]
threads = [threading.Thread(target=allocate) for _ in range(16)]
[thread.start() for thread in threads]
[thread.join() for thread in threads]
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
report = libc.fopen(sys.argv[2].encode(), b"w")
libc.malloc_info(0, ctypes.c_void_p(report))
libc.fclose(ctypes.c_void_p(report))
"""
    arenas = {}
    for mode in ("default", "capped"):
        report = tmp_path / f"{mode}.xml"
        environment = {key: value for key, value in os.environ.items() if key != "MALLOC_ARENA_MAX"}
        subprocess.run([sys.executable, "-c", script, mode, str(report)], check=True, env=environment)
        arenas[mode] = report.read_text().count("<heap nr=")
    assert arenas["capped"] <= server_module.SERVER_MALLOC_ARENAS < arenas["default"], arenas


def test_the_server_releases_freed_memory_after_sessions_close() -> None:
    with serving(["Sokoban-v0"], session_ttl_s=0.2) as address:
        time.sleep(0.3)
        assert httpx.get(f"{address}/metrics").json()["memory_releases"] == 0  # nothing closed: nothing to hand back
        session = httpx.post(f"{address}/sessions", json={"env_id": "Sokoban-v0"}).json()["session_id"]
        httpx.delete(f"{address}/sessions/{session}")
        deadline = time.monotonic() + 10
        while httpx.get(f"{address}/metrics").json()["memory_releases"] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # several more housekeeping rounds: no new close, no new release
        assert httpx.get(f"{address}/metrics").json()["memory_releases"] == 1


def test_shutting_the_server_down_closes_every_env() -> None:
    FragileEnv.closed = 0
    with serving(["Fragile-v0", "ThreadedFragile-v0"]) as address:
        for env_id in ("Fragile-v0", "ThreadedFragile-v0", "Fragile-v0"):
            httpx.post(f"{address}/sessions", json={"env_id": env_id})
    assert FragileEnv.closed == 3


def test_killing_the_server_mid_episode_gives_a_clear_connection_error() -> None:
    server = ServerProcess(["Sokoban-v0"])
    env = RemoteEnv(server.url, "Sokoban-v0")
    env.reset(options={"task_id": 0})
    env.step(env.oracle_action())
    os.kill(server.pid, signal.SIGKILL)
    clock = time.monotonic()
    with pytest.raises(ServerUnavailableError, match=server.url) as caught:
        env.step("up")
    assert isinstance(caught.value, ConnectionError) and time.monotonic() - clock < 10
    env.close()  # the session cannot be deleted any more: close still succeeds
    server.stop()
    with pytest.raises(ServerUnavailableError, match="cannot reach"):
        RemoteEnv(server.url, "Sokoban-v0", retries=0)


async def _cycle_sessions(url: str, count: int, concurrency: int = 8) -> None:
    """Open, play one step of, and close ``count`` sessions, ``concurrency`` at a time."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:

        async def worker(first: int) -> None:
            for index in range(first, count, concurrency):
                response = await client.post("/sessions", json={"env_id": "Sokoban-v0"})
                session = response.json()["session_id"]
                await client.post(f"/sessions/{session}/reset", json={"options": {"task_id": index % 1000}})
                await client.post(f"/sessions/{session}/step", json={"action": "up"})
                await client.delete(f"/sessions/{session}")

        await asyncio.gather(*(worker(first) for first in range(concurrency)))


def test_server_memory_stays_flat_over_many_sessions() -> None:
    """1,500 sessions after a warm-up of 500 (benchmarks/server_throughput.py runs 10,000)."""
    server = ServerProcess(["Sokoban-v0"], max_sessions=64)
    try:
        asyncio.run(_cycle_sessions(server.url, 500))
        before = httpx.get(f"{server.url}/metrics").json()
        asyncio.run(_cycle_sessions(server.url, 1500))
        after = httpx.get(f"{server.url}/metrics").json()
    finally:
        server.stop()
    assert after["sessions"] == 0 and after["sessions_closed"] == 2000
    print(f"server RSS {before['rss_bytes'] / 2**20:.2f} MiB -> {after['rss_bytes'] / 2**20:.2f} MiB")
    assert after["rss_bytes"] - before["rss_bytes"] < 2 * 2**20  # a leaked Sokoban session holds ~50 KB


def channel_to(url: str, session_id: str) -> Any:
    """A raw WebSocket connection to a session's channel."""
    from websockets.sync.client import connect

    return connect(f"ws{url.removeprefix('http')}/sessions/{session_id}/channel", compression=None, proxy=None)


def test_the_channel_answers_each_message_in_order_and_refuses_bad_ones_clearly(url: str) -> None:
    session = httpx.post(f"{url}/sessions", json={"env_id": "Fragile-v0"}).json()["session_id"]
    with channel_to(url, session) as channel:

        def ask(message: str | bytes) -> dict[str, Any]:
            channel.send(message)
            return json.loads(channel.recv(timeout=10))

        assert ask('{"call": "step", "body": {"action": "go"}}')["error"]["type"] == "ResetNeeded"
        answer = ask('{"call": "reset", "body": {"options": {"task_id": 1}}, "id": 7}')
        assert answer["id"] == 7 and answer["status"] == 200 and answer["answer"]["info"]["task_id"] == 1
        for message, status, kind in [
            ("{not json", 400, "InvalidJSON"),
            ("[1, 2]", 422, "InvalidRequest"),
            ('{"body": {}}', 422, "InvalidRequest"),
            ('{"call": "step", "body": []}', 422, "InvalidRequest"),
            ('{"call": "teleport"}', 404, "NotFound"),
            ('{"call": "step", "body": {"action": 5}}', 422, "InvalidRequest"),
            ('{"call": "reset", "body": {"options": {"task_id": -1}}}', 422, "InvalidArgument"),
            (b'{"call": "step", "body": {"action": "x' + b"x" * 9_000_000 + b'"}}', 413, "PayloadTooLarge"),
        ]:
            answer = ask(message)
            assert (answer["status"], answer["error"]["type"]) == (status, kind), message[:60]
            assert answer["error"]["message"] and "Traceback" not in answer["error"]["message"]
        step = ask(b'{"call": "step", "body": {"action": "go"}}')  # a binary frame is read the same way
        assert step == {"status": 200, "answer": {**step["answer"], "reward": 0.5}}
        assert ask('{"call": "close", "id": "bye"}') == {"id": "bye", "status": 200, "answer": {"closed": session}}
        with pytest.raises(ConnectionClosedOK):
            channel.recv(timeout=10)
    assert session not in {entry["session_id"] for entry in httpx.get(f"{url}/sessions").json()["sessions"]}


def test_a_channel_ends_with_4404_when_its_session_is_gone(url: str) -> None:
    with channel_to(url, "no-such-session") as channel:
        assert json.loads(channel.recv(timeout=10))["error"]["type"] == "UnknownSession"
        with pytest.raises(ConnectionClosed) as closed:
            channel.recv(timeout=10)
        assert closed.value.rcvd.code == CHANNEL_SESSION_GONE
    for ending in ("delete", "crash"):  # closed over HTTP while the channel idles; the env raising
        session = httpx.post(f"{url}/sessions", json={"env_id": "Fragile-v0"}).json()["session_id"]
        with channel_to(url, session) as channel:
            channel.send('{"call": "reset"}')
            assert json.loads(channel.recv(timeout=10))["status"] == 200
            if ending == "delete":
                assert httpx.delete(f"{url}/sessions/{session}").status_code == 200
            else:
                channel.send('{"call": "step", "body": {"action": "crash"}}')
                answer = json.loads(channel.recv(timeout=10))
                assert answer["status"] == 500 and answer["error"]["session_closed"] is True
            with pytest.raises(ConnectionClosed) as closed:
                channel.recv(timeout=10)
            assert closed.value.rcvd.code == CHANNEL_SESSION_GONE, ending


def test_a_websocket_remote_env_recovers_after_its_env_crashed(url: str) -> None:
    env = RemoteEnv(url, "Fragile-v0", websocket=True)
    env.reset(options={"task_id": 2})
    with pytest.raises(RemoteEnvError, match="EnvError.*engine fell over"):
        env.step("crash")
    with pytest.raises(gym.error.ResetNeeded):
        env.step("go")
    env.reset(options={"task_id": 2})  # a new session, and a new channel
    assert env.step("go")[1] == 0.5
    env.close()


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0 or not Path(CHROMIUM).exists(),
    reason="thread priorities as root on Linux, with Debian's Chromium",
)
def test_env_work_runs_below_the_servers_own_priority() -> None:
    """``agentgym serve`` runs at its own priority, threads and all; the processes its envs start (here Chromium,
    which as root would raise its IO and compositor threads to nice -8) are put 10 nice steps below it."""

    def nice_of_threads(pid: int) -> dict[int, tuple[str, int]]:  # thread id -> (name, nice)
        found = {}
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
                found[int(tid)] = (name, os.getpriority(os.PRIO_PROCESS, int(tid)))
        return found

    server = ServerProcess(["MiniWoB-click-button-v0"], max_sessions=4, session_ttl_s=60)
    try:
        env = RemoteEnv(server.url, "MiniWoB-click-button-v0")
        env.reset(options={"task_id": 0})
        own = os.getpriority(os.PRIO_PROCESS, server.pid)
        assert {nice for _, nice in nice_of_threads(server.pid).values()} == {own}
        deadline, raised = time.monotonic() + 10, None
        while raised != [] and time.monotonic() < deadline:  # the server lowers its children every 2 s
            time.sleep(0.5)
            chromium = [pid for pid in descendants(server.pid) if "chrom" in Path(f"/proc/{pid}/comm").read_text()]
            assert chromium
            raised = sorted(
                (pid, name, nice)
                for pid in chromium
                for name, nice in nice_of_threads(pid).values()
                if nice < min(19, own + 10)
            )
        assert raised == [], raised[:10]
        env.close()
    finally:
        server.stop()
