"""Tool-call parsing overhead per step: the same commands sent as text and as tool calls.

For each env id, the oracle's commands of a few episodes are recorded once, then replayed
twice on the same env (``gym.make``, so with Gymnasium's default wrappers): as the text
reply ``"Action: <command>"``, and as an OpenAI assistant message whose one tool call
(arguments a JSON string, as an API returns them) maps onto the same command. Only the
``step`` call is timed; the ratio of the medians is the cost of reading, checking and
mapping a call relative to a whole text step. One run; ratios, not absolute times.

    python benchmarks/tool_call_overhead.py            # writes results/tool_call_overhead.{md,json}
    python benchmarks/tool_call_overhead.py --no-write
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import gymnasium as gym
from recording import record

from agentgym.contract.tools import command_to_tool_call

ENVS = {"Sokoban-v0": range(20), "Wordle-v0": range(20), "WebShop-v0": range(10), "TextCraft-Depth2-v0": range(20)}


def oracle_commands(env: gym.Env, task_ids: range) -> list[tuple[int, list[str]]]:
    """The oracle's commands per task, recorded once (so both replays play the same steps)."""
    base, episodes = env.unwrapped, []
    for task_id in task_ids:
        env.reset(seed=0, options={"task_id": task_id})
        commands, done = [], False
        while not done:
            commands.append(base.extract_action(base.oracle_action()))
            _, _, terminated, truncated, _ = env.step(commands[-1])
            done = terminated or truncated
        episodes.append((task_id, commands))
    return episodes


def as_message(base: Any, command: str, number: int) -> dict[str, Any]:
    call = command_to_tool_call(base.tool_specs(), command)
    assert call is not None, command
    function = {"name": call.name, "arguments": json.dumps(call.arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"c{number}", "type": "function", "function": function}],
    }


def replay(env: gym.Env, episodes: list[tuple[int, list[Any]]], repeats: int) -> list[int]:
    samples = []
    for _ in range(repeats):
        for task_id, actions in episodes:
            env.reset(seed=0, options={"task_id": task_id})
            for action in actions:
                start = time.perf_counter_ns()
                env.step(action)
                samples.append(time.perf_counter_ns() - start)
    return samples


def measure(env_id: str, task_ids: range, repeats: int) -> dict[str, Any]:
    env = gym.make(env_id)
    base = env.unwrapped
    episodes = oracle_commands(env, task_ids)
    text = [(task_id, [f"Action: {command}" for command in commands]) for task_id, commands in episodes]
    tools = [
        (task_id, [as_message(base, command, n) for n, command in enumerate(commands)])
        for task_id, commands in episodes
    ]
    replay(env, text[:2], 1)  # warm caches (tool declarations, catalogs)
    replay(env, tools[:2], 1)
    text_ns, tool_ns = replay(env, text, repeats), replay(env, tools, repeats)
    env.close()
    text_us, tool_us = statistics.median(text_ns) / 1e3, statistics.median(tool_ns) / 1e3
    return {
        "env_id": env_id,
        "steps": len(text_ns),
        "text_median_us": round(text_us, 2),
        "tool_call_median_us": round(tool_us, 2),
        "overhead_us": round(tool_us - text_us, 2),
        "ratio": round(tool_us / text_us, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = [measure(env_id, task_ids, args.repeats) for env_id, task_ids in ENVS.items()]
    lines = [
        "| env | steps | text step, median µs | tool-call step, median µs | overhead µs | ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['env_id']} | {row['steps']} | {row['text_median_us']} | {row['tool_call_median_us']} "
            f"| {row['overhead_us']} | {row['ratio']} |"
        )
    table = "\n".join(lines)
    print(table)
    if not args.no_write:
        setup = f"oracle commands replayed {args.repeats}x as text and as tool calls, step only timed, one process"
        record("tool_call_overhead", "Tool-call parsing overhead per step", setup, table, rows)


if __name__ == "__main__":
    main()
