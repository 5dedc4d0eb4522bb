"""Shared by the framework rollout benchmarks (rollouts_skyrl.py, rollouts_openrlhf.py, rollouts_verl.py).

* :func:`plain_episodes`: scripted replies stepped on ``gym.make`` envs (no chat, no model): the floor;
* :func:`trainer_rollout`: agentgym's own trainer rollout (``agentgym.train.rollout.play_episodes``
  with an in-process ``HFSampler``), greedy, every episode's turn in one batch;
* :func:`tiny_generator`: the tests' tiny random chat model (Qwen2.5 chat format), built offline;
* :func:`arguments` and :func:`paths_table`: their common options and result table.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import NoReturn

import gymnasium as gym
import torch

import agentgym  # noqa: F401  (registers the envs)
from agentgym.llm.generation import Generator, SamplingParams
from agentgym.train.rollout import ChatTokens, HFSampler, Trajectory, chat_env, make_slots, play_episodes
from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT

ROOT = Path(__file__).resolve().parent.parent


def tiny_generator(folder: Path) -> Generator:
    """The tests' tiny model with a 4,096-token context and Qwen2.5's chat template (tests/tiny_model.py)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_model import build_tiny_model

    return Generator.from_pretrained(build_tiny_model(folder, context_length=4096, tools=True), device="cpu")


def scripted_replies(env_id: str, task_ids: list[int], turns: int, seed: int = 0) -> dict[int, list[str]]:
    """``turns`` replies per task: the env's random actions as ``Action:`` lines (the same for every path)."""
    rng = random.Random(seed)
    env = gym.make(env_id)
    replies = {}
    for task_id in task_ids:
        env.reset(options={"task_id": task_id})
        replies[task_id] = [f"Action: {env.unwrapped.random_action(rng)}" for _ in range(turns)]
    env.close()
    return replies


def plain_episodes(env_id: str, replies: dict[int, list[str]]) -> tuple[float, int]:
    """Seconds and steps to play the replies on ``gym.make`` envs (one env per episode, as the frameworks do)."""
    steps, start = 0, time.perf_counter()
    for task_id, texts in replies.items():
        env = gym.make(env_id)
        env.reset(options={"task_id": task_id})
        for text in texts:
            steps += 1
            _, _, terminated, truncated, _ = env.step(text)
            if terminated or truncated:
                break
        env.close()
    return time.perf_counter() - start, steps


def greedy(max_new_tokens: int) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens)


def trainer_rollout(
    generator: Generator, env_id: str, task_ids: list[int], max_turns: int, max_new_tokens: int
) -> tuple[float, list[Trajectory]]:
    """Seconds and trajectories of agentgym's trainer rollout over the tasks (one batch per turn)."""
    chat_tokens = ChatTokens(generator.tokenizer, sorted(generator.eos_token_ids))
    sampler = HFSampler(generator, greedy(max_new_tokens), max_batch_size=len(task_ids))
    start = time.perf_counter()
    envs = [chat_env(env_id, {}, DEFAULT_SYSTEM_PROMPT) for _ in task_ids]
    slots = make_slots(envs, [(env_id, task_id, 0) for task_id in task_ids], random.Random(0))
    trajectories = play_episodes(slots, sampler, chat_tokens, max_turns, lambda i, turn: 0)
    for env in envs:
        env.close()
    return time.perf_counter() - start, trajectories


def arguments(description: str) -> argparse.Namespace:
    """The options every rollout benchmark takes; sets torch's intra-op threads and notes the load average."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--env", default="Sokoban-v0")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--scripted-episodes", type=int, default=200)
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=2, help="tiny-model runs per path (best kept)")
    parser.add_argument(
        "--torch-threads", type=int, default=1, help="intra-op threads (a worker thread decodes on 1; keep paths equal)"
    )
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    args.load = os.getloadavg()[0]  # the machine may be shared: say how busy it was
    torch.set_num_threads(args.torch_threads)
    return args


#: One row of :func:`paths_table`: workload, path, episodes, steps, seconds.
Row = tuple[str, str, int, int, float]


def paths_table(rows: list[Row], same_tokens: bool, overhead: str) -> str:
    """The Markdown table of the paths' throughput, then whether the tiny-model paths agree and ``overhead``."""
    table = "| workload | path | episodes | steps | seconds | episodes/s | steps/s |\n"
    table += "|---|---|---:|---:|---:|---:|---:|\n"
    table += "\n".join(f"| {w} | {p} | {e} | {n} | {s:.3f} | {e / s:.1f} | {n / s:.0f} |" for w, p, e, n, s in rows)
    return table + f"\n\nSame token sequences on both tiny-model paths: {'yes' if same_tokens else 'NO'}. {overhead}"


def rerun_in_side_venv(name: str, script: str) -> NoReturn:
    """Run ``script`` again with this command line in the side venv ``name`` (made once, see
    :mod:`agentgym.integrations.venvs`), and exit with its status."""
    from agentgym.integrations.venvs import ensure

    python = ensure(name)
    sys.exit(subprocess.run([str(python), os.path.abspath(script), *sys.argv[1:]]).returncode)
