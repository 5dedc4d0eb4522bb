"""The trainer's rollouts with Ray env actors: the same token-in/token-out trajectories as with local envs.

Uses conftest's two-node local cluster (head + worker, 1 CPU each; the env
actors ask for a quarter CPU); the Ray tests skip without Ray. Envs that wait on something
are stepped concurrently (``env_workers``), which the first test checks without Ray.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from test_ray import alive_node_ids  # noqa: E402
from test_train_rollout import ScriptedSampler  # noqa: E402
from test_train_smoke import tiny_config  # noqa: E402

from agentgym.contract.registry import inline_safe  # noqa: E402
from agentgym.llm.generation import Generator, SamplingParams  # noqa: E402
from agentgym.train.config import TrainConfig, from_dict  # noqa: E402
from agentgym.train.rollout import (  # noqa: E402
    ChatTokens,
    HFSampler,
    Trajectory,
    chat_env,
    make_slots,
    play_episodes,
)
from agentgym.train.trainer import Trainer  # noqa: E402
from agentgym.wrappers.chat import ChatWrapper  # noqa: E402

SYSTEM = "Reply with one move."
#: (env id, task id, group) of the episodes played, two per task, and each id's kwargs.
TASKS = [("FrozenLake-v0", 3, 0), ("FrozenLake-v0", 3, 0), ("Maze-v0", 5, 1), ("Maze-v0", 5, 1)]
KWARGS: dict[str, dict[str, Any]] = {"FrozenLake-v0": {"size": 4, "is_slippery": True}, "Maze-v0": {}}


class SlowEnv(gym.Wrapper):
    """A local env whose steps wait (as a remote one's do), so it is not stepped inline."""

    metadata = {"inline_safe": False}

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        time.sleep(0.1)
        return self.env.step(action)


def rollout(
    envs: list[ChatWrapper], sampler: Any, chat_tokens: ChatTokens, turns: int, env_workers: int
) -> list[Trajectory]:
    slots = make_slots(envs, TASKS, random.Random(0))
    return play_episodes(slots, sampler, chat_tokens, turns, lambda slot, turn: 1000 * slot + turn, env_workers)


def test_envs_that_wait_are_stepped_concurrently_into_the_same_trajectories(
    tiny_model_with_long_context_path: Path,
) -> None:
    generator = Generator.from_pretrained(tiny_model_with_long_context_path, device="cpu")
    tokenizer = generator.tokenizer
    chat_tokens = ChatTokens(tokenizer, [tokenizer.eos_token_id])
    reply = tokenizer("Action: right", add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
    played, seconds = [], []
    for workers in (1, 4):
        envs = [ChatWrapper(SlowEnv(gym.make(env_id, **KWARGS[env_id])), SYSTEM) for env_id, _, _ in TASKS]
        clock = time.perf_counter()
        played.append(rollout(envs, ScriptedSampler(reply), chat_tokens, 3, workers))
        seconds.append(time.perf_counter() - clock)
    assert played[0] == played[1] and all(t.turns == 3 for t in played[0])
    assert seconds[0] > 1.2 and seconds[1] < 0.6 * seconds[0]  # 12 steps of 0.1 s in turn, 3 rounds of 4 at once


@pytest.mark.usefixtures("cluster")
def test_ray_envs_play_the_trajectories_local_envs_play(tiny_model_with_long_context_path: Path) -> None:
    generator = Generator.from_pretrained(tiny_model_with_long_context_path, device="cpu")
    tokenizer = generator.tokenizer
    chat_tokens = ChatTokens(tokenizer, [tokenizer.eos_token_id])
    sampler = HFSampler(generator, SamplingParams(temperature=1.0, max_new_tokens=8), max_batch_size=8)
    local = [chat_env(env_id, KWARGS[env_id], SYSTEM) for env_id, _, _ in TASKS]
    remote = [chat_env(env_id, {**KWARGS[env_id], "backend": "ray"}, SYSTEM) for env_id, _, _ in TASKS]
    try:
        assert not any(inline_safe(env) for env in remote)
        expected = rollout(local, sampler, chat_tokens, 3, env_workers=1)
        played = rollout(remote, sampler, chat_tokens, 3, env_workers=4)
        assert {env.unwrapped.node_id for env in remote} == alive_node_ids()  # spread over both nodes
        transcripts = [env.transcript for env in remote]
    finally:
        for env in remote:
            env.close()
    assert transcripts == [env.transcript for env in local]
    for got, want in zip(played, expected):
        assert got.token_ids == want.token_ids and got.loss_mask == want.loss_mask
        assert got.logprobs == pytest.approx(want.logprobs, abs=1e-5)
        assert (got.rewards, got.anchors, got.turn_ends) == (want.rewards, want.anchors, want.turn_ends)
        assert (got.done, got.truncated, got.success, got.score) == (
            want.done,
            want.truncated,
            want.success,
            want.score,
        )
    assert sum(t.loss_mask.count(1) for t in played) > 0 and all(t.turns >= 1 for t in played)


@pytest.mark.usefixtures("cluster")
def test_a_trainer_step_with_ray_envs(tiny_model_with_long_context_path: Path, tmp_path: Path) -> None:
    def trainer(kwargs: dict[str, Any], out: str) -> Trainer:
        config = tiny_config(
            tiny_model_with_long_context_path,
            tmp_path / out,
            envs=[{"id": "FrozenLake-v0", "kwargs": {"size": 2, **kwargs}}],
            rollout={"max_turns": [[0, 2]], "env_workers": 4},
        )
        return Trainer(from_dict(TrainConfig, config))

    local, on_ray = trainer({}, "local"), trainer({"backend": "ray"}, "ray")
    try:
        expected = local.rollout()
        assert [t.token_ids for t in on_ray.rollout()] == [t.token_ids for t in expected]
        metrics = on_ray.step()
        actors = [env.unwrapped for env in on_ray.envs[0]]
        assert len(actors) == 4 and {actor.node_id for actor in actors} <= alive_node_ids()
        assert (
            metrics["iteration"] == 0 and metrics["model_tokens"] > 0 and torch.isfinite(torch.tensor(metrics["loss"]))
        )
    finally:
        local.close()
        on_ray.close()
    assert not any(actor.alive for actor in actors)  # closing the trainer ended its actors
