"""Gymnasium vector envs over agentgym's text spaces: the cost of the shared-memory layout.

``agentgym.contract.vector`` gives each sub-env of an ``AsyncVectorEnv`` a slot of ``max_length + 1``
32-bit integers (the length, then the code points). This measures what that costs and buys:

* the buffer: bytes allocated, and the parent's resident memory grown by making the vector env;
* the transfer: writing and reading one observation of N characters through the slot, against
  pickling it through a pipe (what ``shared_memory=False`` does);
* steps per second of ``gym.make_vec`` on a text env: sync, async with shared memory (the
  default), async without.

Usage::

    python benchmarks/vector_envs.py            # writes results/vector_envs.{md,json}
    python benchmarks/vector_envs.py --no-write
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pickle
import platform
import time
import timeit
from pathlib import Path

import gymnasium as gym
import psutil
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

import agentgym  # noqa: F401  (registers the ids and the shared-memory functions)
from agentgym.contract.core import TextEnv, UnicodeText

RESULTS = Path(__file__).with_name("results")
TEXT_SAMPLE = "#  √ @ $ .  ✓ ─ 中文 🙂 The box is pushed up. "


def transfer(chars: int, number: int = 20, repeat: int = 5) -> dict[str, float]:
    """Microseconds to write + read one observation of ``chars`` characters, slot vs pickle (best of ``repeat``)."""
    space = UnicodeText(TextEnv.max_observation_chars)
    text = (TEXT_SAMPLE * (chars // len(TEXT_SAMPLE) + 1))[:chars]
    memory = create_shared_memory(space, n=1, ctx=multiprocessing.get_context("fork"))
    batch = read_from_shared_memory(space, memory, n=1)

    def through_slot() -> str:
        write_to_shared_memory(space, 0, text, memory)
        return batch[0]

    def through_pickle() -> str:
        return pickle.loads(pickle.dumps(text, protocol=pickle.HIGHEST_PROTOCOL))

    assert through_slot() == text == through_pickle()
    slot = min(timeit.repeat(through_slot, number=number, repeat=repeat)) / number
    pickled = min(timeit.repeat(through_pickle, number=number, repeat=repeat)) / number
    return {"chars": chars, "slot_us": slot * 1e6, "pickle_us": pickled * 1e6}


def buffer(num_envs: int) -> dict[str, float]:
    """The slot buffer of ``num_envs`` sub-envs at the default 200,000 characters: bytes, RSS growth, time."""
    space = UnicodeText(TextEnv.max_observation_chars)
    process = psutil.Process()
    before = process.memory_info().rss
    start = time.perf_counter()
    memory = create_shared_memory(space, n=num_envs, ctx=multiprocessing.get_context("fork"))
    seconds = time.perf_counter() - start
    grown = process.memory_info().rss - before
    del memory
    size = 4 * (space.max_length + 1) * num_envs
    return {"num_envs": num_envs, "bytes": size, "rss_growth": grown, "ms": seconds * 1e3}


def throughput(env_id: str, num_envs: int, mode: str, shared_memory: bool, seconds: float) -> float:
    """Vector steps per second (each steps every sub-env once) with the same reply to every sub-env."""
    vector_kwargs = {"shared_memory": shared_memory} if mode == "async" else {}
    envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, vector_kwargs=vector_kwargs)
    try:
        envs.reset(seed=0)
        actions = ["Action: up", "Action: left", "Action: down", "Action: right"]
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            envs.step([actions[steps % 4]] * num_envs)
            steps += 1
        return steps / (time.perf_counter() - start)
    finally:
        envs.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="Sokoban-v0")
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    results = {
        "machine": f"{platform.machine()}, {platform.system()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores, 1-minute load average {os.getloadavg()[0]:.1f} at start",
        "buffers": [buffer(n) for n in (1, 4, 64)],
        "transfers": [transfer(n) for n in (1_000, 20_000, 200_000)],
        "throughput": {
            label: throughput(args.env, args.num_envs, mode, shared, args.seconds)
            for label, mode, shared in (
                ("sync", "sync", False),
                ("async, shared memory", "async", True),
                ("async, pipes", "async", False),
            )
        },
        "env": args.env,
        "num_envs": args.num_envs,
    }
    lines = [
        "# Vector envs: the shared-memory layout of text observations",
        "",
        f"`python benchmarks/vector_envs.py` ({results['machine']}).",
        "",
        "Slot buffer at the default `max_observation_chars` (200,000), allocated and zero-filled once:",
        "",
        "| sub-envs | bytes | parent RSS growth | allocation |",
        "|---:|---:|---:|---:|",
        *(
            f"| {b['num_envs']} | {b['bytes'] / 2**20:.1f} MiB | {b['rss_growth'] / 2**20:.1f} MiB | {b['ms']:.1f} ms |"
            for b in results["buffers"]
        ),
        "",
        "One observation written to its slot and read back, against a pickle round trip (what a pipe carries):",
        "",
        "| characters | slot write + read | pickle dumps + loads |",
        "|---:|---:|---:|",
        *(f"| {t['chars']:,} | {t['slot_us']:.0f} µs | {t['pickle_us']:.0f} µs |" for t in results["transfers"]),
        "",
        f'`gym.make_vec("{args.env}", num_envs={args.num_envs})`, vector steps per second:',
        "",
        "| mode | steps/s |",
        "|---|---:|",
        *(f"| {label} | {rate:.0f} |" for label, rate in results["throughput"].items()),
        "",
    ]
    print("\n".join(lines))
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "vector_envs.json").write_text(json.dumps(results, indent=2) + "\n")
        (RESULTS / "vector_envs.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
