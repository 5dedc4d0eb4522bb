"""TextWorld games generated on first use: a generator child that waits for the next game vs a new child per game.

An env resets to tasks whose games the cache lacks, so each reset generates one (what a user's first episodes, or an
RL loop over fresh tasks, pays). Each id's games are made twice in one run, into empty caches, alternating per game:
by the child that waits after its last game (agentgym's way, :data:`~agentgym.environments.textworld.games.GENERATORS`)
and by a new child each time (the waiting one closed before each reset: what agentgym did before). The games must be
the same either way (their manifests' SHA-256 are compared).

    python benchmarks/textworld_generation.py                  # writes results/textworld_generation.{md,json}
    python benchmarks/textworld_generation.py --games 2 --no-write
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import gymnasium as gym
from recording import record

import agentgym  # noqa: F401  (registers the ids)
from agentgym.environments.textworld import SPLITS, games

IDS = ("TextWorld-Cooking-Easy-v0", "TextWorld-Cooking-Hard-v0", "TextWorld-Custom-v0")


def reset_seconds(env: gym.Env, task_id: int, new_child: bool) -> float:
    """Seconds a reset to ``task_id`` took (its game generated), with a new generator child or the waiting one."""
    if new_child:
        games.GENERATORS.close()
    started = time.perf_counter()
    env.reset(options={"task_id": task_id})
    return time.perf_counter() - started


def manifests(cache: Path) -> dict[str, dict[str, str]]:
    return {
        path.parent.name: json.loads(path.read_text())["sha256"] for path in sorted(cache.rglob("task-*/manifest.json"))
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=6, help="games per id and way (default 6)")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    rows, data = [], {}
    task_ids = list(SPLITS.ids("train")[500 : 500 + args.games])
    for env_id in IDS:
        caches = {way: Path(tempfile.mkdtemp(prefix=f"textworld-{way}-")) for way in ("waiting", "new")}
        envs = {way: gym.make(env_id, cache_dir=str(cache)) for way, cache in caches.items()}
        seconds: dict[str, list[float]] = {"waiting": [], "new": []}
        games.GENERATORS.close()
        reset_seconds(envs["waiting"], task_ids[0] - 1, new_child=False)  # the waiting child's first game: not timed
        for task_id in task_ids:
            for way in ("new", "waiting"):
                seconds[way].append(reset_seconds(envs[way], task_id, new_child=way == "new"))
        for env in envs.values():
            env.close()
        found = {way: manifests(cache) for way, cache in caches.items()}
        same = all(found["new"][task] == digests for task, digests in found["waiting"].items() if task in found["new"])
        if not same:
            raise SystemExit(f"{env_id}: the games differ between the two ways")
        medians = {way: statistics.median(values) for way, values in seconds.items()}
        data[env_id] = {"seconds": seconds, "median_s": medians, "same_games": same}
        rows.append(
            f"| {env_id} | {medians['new']:.2f} | {medians['waiting']:.2f} | "
            f"{medians['waiting'] / medians['new']:.2f} | yes |"
        )
        print(rows[-1], flush=True)

    table = "\n".join(
        [
            "| id | new child, s/game (median) | waiting child, s/game (median) | ratio | same games |",
            "|---|---:|---:|---:|---|",
            *rows,
        ]
    )
    if not args.no_write:
        record(
            "textworld_generation",
            "TextWorld: a game generated on first use, by a waiting generator child vs a new one",
            f"{args.games} train games per id and way, alternating, into empty caches; one reset each",
            table,
            data,
        )
    print(table)


if __name__ == "__main__":
    main()
