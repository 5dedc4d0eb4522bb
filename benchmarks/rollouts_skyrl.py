"""Rollout throughput through skyrl-gym's env interface against agentgym's own paths (CPU, one run).

Two workloads on the same env and tasks:

* **scripted** (no model): the same random ``Action:`` replies played on plain ``gym.make``
  envs and through ``skyrl_gym.make("agentgym:<ID>")`` + ``init`` + ``step`` + ``close``:
  what the adapter (chat messages, registry, one env per episode) costs per step;
* **tiny model** (greedy, every episode's turn decoded as one batch): agentgym's trainer
  rollout (``play_episodes``) against a loop that drives the skyrl-gym envs the way
  SkyRL's generator does (``make`` with ``extras``, ``init`` for the chat, then per turn:
  generate from the token ids, ``step`` with the decoded text, append the observations'
  chat-template ids), with the same ``Generator``. skyrl-train itself (the trainer, Ray,
  vLLM) is not installed: the loop is ours. Both paths produce the same token sequences
  (checked), so the difference is the env interface.

Usage::

    python benchmarks/rollouts_skyrl.py              # writes results/rollouts_skyrl.{md,json}
    python benchmarks/rollouts_skyrl.py --no-write --episodes 4
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import skyrl_gym
from recording import record  # noqa: E402
from rollout_paths import (  # noqa: E402
    arguments,
    greedy,
    paths_table,
    plain_episodes,
    scripted_replies,
    tiny_generator,
    trainer_rollout,
)

import agentgym.integrations.skyrl  # noqa: F401  (registers agentgym:<ID> with skyrl-gym)
from agentgym.llm.generation import Generator
from agentgym.train.rollout import ChatTokens


def skyrl_scripted(env_id: str, replies: dict[int, list[str]]) -> tuple[float, int]:
    """Seconds and steps to play the replies through skyrl-gym (one env per episode, as SkyRL's generator does)."""
    steps, start = 0, time.perf_counter()
    for task_id, texts in replies.items():
        env = skyrl_gym.make(f"agentgym:{env_id}", env_config={}, extras={"task_id": task_id, "max_turns": len(texts)})
        env.init([])
        for text in texts:
            steps += 1
            if env.step(text)["done"]:
                break
        env.close()
    return time.perf_counter() - start, steps


def skyrl_model(
    generator: Generator, env_id: str, task_ids: list[int], max_turns: int, max_new_tokens: int
) -> tuple[float, list[list[int]], int]:
    """Seconds, token sequences and turns of a SkyRL-generator-style loop over skyrl-gym envs, batched per turn."""
    chat_tokens = ChatTokens(generator.tokenizer, sorted(generator.eos_token_ids))
    start = time.perf_counter()
    envs = [
        skyrl_gym.make(f"agentgym:{env_id}", env_config={}, extras={"task_id": task_id, "max_turns": max_turns})
        for task_id in task_ids
    ]
    chats = [env.init([])[0] for env in envs]
    tokens = [chat_tokens.prompt(chat) for chat in chats]
    active, turns = list(range(len(envs))), 0
    while active:
        completions = generator.generate_tokens([tokens[i] for i in active], [greedy(max_new_tokens)] * len(active))
        still = []
        for i, completion in zip(active, completions):
            turns += 1
            text = generator.tokenizer.decode(completion.token_ids, skip_special_tokens=True)
            output = envs[i].step(text)
            history = chats[i]
            tokens[i] += completion.token_ids
            chats[i] = [*history, {"role": "assistant", "content": text}, *output["observations"]]
            if not output["done"]:
                tokens[i] += chat_tokens.delta(history, completion.token_ids, output["observations"])
                still.append(i)
        active = still
    for env in envs:
        env.close()
    return time.perf_counter() - start, tokens, turns


def main() -> None:
    args = arguments(__doc__.split("\n\n")[0])

    replies = scripted_replies(args.env, list(range(args.scripted_episodes)), args.max_turns)
    plain_episodes(args.env, dict(list(replies.items())[:5]))  # warm up: imports, first env
    skyrl_scripted(args.env, dict(list(replies.items())[:5]))
    plain_s, plain_steps = plain_episodes(args.env, replies)
    skyrl_s, skyrl_steps = skyrl_scripted(args.env, replies)
    assert plain_steps == skyrl_steps, (plain_steps, skyrl_steps)

    task_ids = list(range(args.episodes))
    with tempfile.TemporaryDirectory() as folder:
        generator = tiny_generator(Path(folder) / "tiny")
        trainer_rollout(generator, args.env, task_ids[:2], 1, 4)  # warm up
        trainer_s, model_s = float("inf"), float("inf")
        for _ in range(args.repeat):  # alternated, best of each: the machine is shared
            seconds, trajectories = trainer_rollout(generator, args.env, task_ids, args.max_turns, args.max_new_tokens)
            trainer_s = min(trainer_s, seconds)
            seconds, sequences, model_turns = skyrl_model(
                generator, args.env, task_ids, args.max_turns, args.max_new_tokens
            )
            model_s = min(model_s, seconds)
    same = [t.token_ids for t in trajectories] == sequences
    trainer_turns = sum(t.turns for t in trajectories)

    rows = [
        ("scripted replies", "plain `gym.make` env", args.scripted_episodes, plain_steps, plain_s),
        ("scripted replies", "skyrl-gym `make`/`init`/`step`", args.scripted_episodes, skyrl_steps, skyrl_s),
        ("tiny model, greedy", "agentgym trainer rollout", args.episodes, trainer_turns, trainer_s),
        ("tiny model, greedy", "skyrl-gym env loop", args.episodes, model_turns, model_s),
    ]
    table = paths_table(
        rows,
        same,
        f"Overhead of the skyrl-gym interface on scripted steps: "
        f"{(skyrl_s - plain_s) / skyrl_steps * 1e6:.0f} µs per step ({skyrl_s / plain_s:.2f}x the plain env).",
    )
    print(table)
    setup = (
        f"{args.env}, scripted: {args.scripted_episodes} episodes of up to {args.max_turns} random actions; "
        f"tiny model: {args.episodes} episodes, {args.max_turns} turns, {args.max_new_tokens} new tokens, "
        f"best of {args.repeat}, {args.torch_threads} torch thread(s); load average {args.load:.1f} at start, "
        f"skyrl-gym {_version('skyrl-gym')}"
    )
    data = {
        "env": args.env,
        "rows": [dict(zip(("workload", "path", "episodes", "steps", "seconds"), row)) for row in rows],
        "same_tokens": same,
    }
    if not args.no_write:
        record("rollouts_skyrl", "Rollouts through skyrl-gym vs agentgym's own paths", setup, table, data)


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()
