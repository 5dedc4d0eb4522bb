"""The server's batch channel (the WebSocket ``/batch``) and its vector env, ``RemoteVectorEnv``: the same
episodes as Gymnasium's ``SyncVectorEnv`` of local envs, in every autoreset mode, and errors that stay per call."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import pytest
from asgi import serving_in_thread
from doc_examples import ROOT, python_block
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from test_vector import plain
from websockets.sync.client import connect

from agentgym.serving.client import RemoteEnvError
from agentgym.serving.server import create_app
from agentgym.serving.vector_client import RemoteVectorEnv

ENV_ID = "Sokoban-v0"
MOVES = ["Action: up", "Action: down", "Action: left", "Action: right", "not a move"]
#: Short episodes, so that every mode's autoreset happens many times.
LIMIT = 4


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving_in_thread(create_app([ENV_ID], max_sessions=64)) as url:
        yield url


def assert_same(remote: tuple, local: tuple) -> None:
    """Two vector resets (observations, infos) or steps (observations, rewards, terminations, truncations,
    infos) are equal."""
    assert len(remote) == len(local) and remote[0] == local[0]
    for got, expected in zip(remote[1:-1], local[1:-1], strict=True):
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
    assert plain(remote[-1]) == plain(local[-1])


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_remote_vector_env_plays_as_sync_vector_env(url: str, mode: AutoresetMode) -> None:
    local = SyncVectorEnv([lambda: gym.make(ENV_ID, max_episode_steps=LIMIT)] * 3, autoreset_mode=mode)
    remote = RemoteVectorEnv(url, ENV_ID, 3, autoreset_mode=mode, max_episode_steps=LIMIT)
    try:
        assert remote.metadata["autoreset_mode"] == mode == local.metadata["autoreset_mode"]
        assert remote.single_observation_space == local.single_observation_space
        assert remote.action_space == local.action_space
        assert_same(remote.reset(seed=7), local.reset(seed=7))
        rng, ended = random.Random(0), 0
        for _ in range(14):
            actions = tuple(rng.choice(MOVES) for _ in range(3))
            step = remote.step(actions)
            assert_same(step, local.step(actions))
            done = np.logical_or(step[2], step[3])
            ended += int(done.sum())
            if mode == AutoresetMode.DISABLED and done.any():
                options = {"reset_mask": done}
                assert_same(remote.reset(options=dict(options)), local.reset(options=dict(options)))
        assert ended >= 6
        assert remote.call("task_id") == tuple(env.unwrapped.task_id for env in local.envs)
    finally:
        remote.close()
        local.close()


def test_sessions_on_threads_of_their_own_play_as_inline_ones() -> None:
    """A server that runs every env call on its session's thread (``--no-inline``): a batch's calls run
    together, and the vector env still plays as the local one."""
    local = SyncVectorEnv([lambda: gym.make(ENV_ID, max_episode_steps=LIMIT)] * 4)
    with serving_in_thread(create_app([ENV_ID], inline=False)) as url:
        remote = RemoteVectorEnv(url, ENV_ID, 4, max_episode_steps=LIMIT)
        try:
            assert_same(remote.reset(seed=3), local.reset(seed=3))
            rng = random.Random(1)
            for _ in range(6):
                actions = tuple(rng.choice(MOVES) for _ in range(4))
                assert_same(remote.step(actions), local.step(actions))
        finally:
            remote.close()
            local.close()


def test_a_failed_call_raises_after_its_batch_and_a_reset_opens_a_new_session(url: str) -> None:
    remote = RemoteVectorEnv(url, ENV_ID, 3)
    try:
        remote.reset(seed=1)
        lost = remote.envs[1].session_id
        httpx.delete(f"{url}/sessions/{lost}").raise_for_status()
        with pytest.raises(RemoteEnvError, match="UnknownSession") as caught:
            remote.step(("Action: up",) * 3)
        assert caught.value.status == 404 and "sub-env 1" in str(caught.value)
        steps = {entry["session_id"]: entry["steps"] for entry in httpx.get(f"{url}/sessions").json()["sessions"]}
        assert steps[remote.envs[0].session_id] == steps[remote.envs[2].session_id] == 1  # the others were stepped
        with pytest.raises(gym.error.ResetNeeded, match="sub-env 1"):
            remote.step(("Action: up",) * 3)
        observations, _ = remote.reset(seed=1)
        assert remote.envs[1].session_id not in (None, lost)
        assert observations[1] == gym.make(ENV_ID).reset(seed=2)[0]
        remote.step(("Action: up",) * 3)
    finally:
        remote.close()
    open_ids = {entry["session_id"] for entry in httpx.get(f"{url}/sessions").json()["sessions"]}
    assert not open_ids & {env.session_id for env in remote.envs}


def batch(channel: Any, message: Any) -> dict[str, Any]:
    channel.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(channel.recv(timeout=30))


def test_the_batch_channel_answers_each_call_for_itself(url: str) -> None:
    sessions = [httpx.post(f"{url}/sessions", json={"env_id": ENV_ID}).json()["session_id"] for _ in range(2)]
    with connect(f"ws{url.removeprefix('http')}/batch") as channel:
        resets = [{"session_id": session, "call": "reset", "body": {"options": {"task_id": 5}}} for session in sessions]
        reply = batch(channel, {"id": "a", "calls": resets})
        assert reply["id"] == "a" and [answer["status"] for answer in reply["answers"]] == [200, 200]
        assert reply["answers"][0]["answer"] == reply["answers"][1]["answer"]
        calls = [
            {"session_id": sessions[0], "call": "step", "body": {"action": "Action: up"}},
            {"session_id": "no-such-session", "call": "step", "body": {"action": "Action: up"}},
            {"session_id": sessions[1], "call": "no_such_call"},
            {"call": "step"},
            {"session_id": ["not", "a", "string"], "call": "step"},
            {"session_id": sessions[1], "call": "close"},
            {"session_id": sessions[1], "call": "step", "body": {"action": "Action: up"}},
        ]
        answers = batch(channel, {"calls": calls})["answers"]
        assert [answer["status"] for answer in answers] == [200, 404, 404, 422, 422, 200, 404]
        assert [answer.get("error", {}).get("type") for answer in answers] == [
            None,
            "UnknownSession",
            "NotFound",
            "InvalidRequest",
            "InvalidRequest",
            None,
            "UnknownSession",
        ]
        assert answers[5]["answer"] == {"closed": sessions[1]}
        for message, kind in [
            ("not json", "InvalidJSON"),
            ({"id": 3, "calls": [1]}, "InvalidRequest"),
            ([], "InvalidRequest"),
        ]:
            reply = batch(channel, message)
            assert reply["error"]["type"] == kind and "answers" not in reply
        assert batch(channel, {"id": 4, "calls": []}) == {"id": 4, "answers": []}
        assert batch(channel, {"calls": calls[:1]})["answers"][0]["status"] == 200  # the channel is still open
    httpx.delete(f"{url}/sessions/{sessions[0]}").raise_for_status()


def test_the_example_in_docs_runs(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    example = python_block(ROOT / "docs" / "serving.md", "from agentgym.serving.vector_client import")
    exec(compile(example.replace("http://127.0.0.1:8000", url), "docs/serving.md", "exec"), {})
    count, reward_sum, scores = capsys.readouterr().out.strip().split(maxsplit=2)
    assert count == "8" and scores == "(8,)"
    float(reward_sum)  # a number
