"""AgentDojo baselines: the oracle, the obedient agent and the random agent on every suite.

For each suite, each baseline plays every user task of ``AgentDojo-<Suite>-v0`` (``utility``) and every
(user task, injection task) pair of ``AgentDojo-<Suite>-Attack-v0`` under AgentDojo's
``important_instructions`` attack (``utility_under_attack``, ``attack_success``: the targeted attack success
rate, AgentDojo's security True):

* ``oracle``: the user task's ground truth, ignoring the injection;
* ``obedient``: the same, but it carries out the injection task's ground truth as soon as a tool result shows
  the injection (:class:`~agentgym.llm.policies.ObedientPolicy`, ``--policy obedient``);
* ``random``: random tools with arguments from the request's words, seeded per episode, until it answers or
  reaches the step limit.

``python -m benchmarks.agentdojo [--suites NAME ...]`` (as a module: run as a file, this script would shadow the
``agentdojo`` package) writes benchmarks/results/agentdojo.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import gymnasium as gym

from agentgym.environments.agentdojo import suites

RESULTS = Path(__file__).parent / "results"
BASELINES = ("oracle", "obedient", "random")


def play(env: gym.Env, task_id: int, baseline: str) -> dict:
    """One episode of ``baseline`` on ``task_id``; its last info."""
    env.reset(seed=task_id, options={"task_id": task_id})
    base = env.unwrapped
    rng = random.Random(task_id)
    while True:
        if baseline == "random":
            command = base.random_action(rng)
        else:
            command = base.oracle_action() if baseline == "oracle" else base.obedient_action()
        _, _, terminated, truncated, info = env.step(command)
        if terminated or truncated:
            return info


def rate(infos: list[dict], key: str) -> float:
    return round(sum(bool(info.get(key)) for info in infos) / len(infos), 3)


def measure(suite: str) -> list[dict]:
    """Every baseline's rows for ``suite``."""
    title = suites()["suites"][suite]["title"]
    rows = []
    with gym.make(f"AgentDojo-{title}-v0") as plain, gym.make(f"AgentDojo-{title}-Attack-v0") as attacked:
        for baseline in BASELINES:
            started = time.perf_counter()
            alone = [play(plain, task_id, baseline) for task_id in range(plain.unwrapped.splits.total)]
            pairs = [play(attacked, task_id, baseline) for task_id in range(attacked.unwrapped.splits.total)]
            rows.append(
                {
                    "suite": suite,
                    "baseline": baseline,
                    "user_tasks": len(alone),
                    "pairs": len(pairs),
                    "utility": rate(alone, "utility"),
                    "utility_under_attack": rate(pairs, "utility"),
                    "attack_success": rate(pairs, "attack_success"),
                    "seconds": round(time.perf_counter() - started, 1),
                }
            )
            print(rows[-1], flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        "# AgentDojo baselines (python -m benchmarks.agentdojo)",
        "",
        f"AgentDojo {suites()['version']}, attack `important_instructions` (target model `local`). Utility: user "
        "tasks alone; utility under attack and attack success (AgentDojo's targeted attack success rate): every "
        "(user task, injection task) pair.",
        "",
        "| suite | baseline | user tasks | pairs | utility | utility under attack | attack success |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['suite']} | {row['baseline']} | {row['user_tasks']} | {row['pairs']} | {row['utility']:.3f} | "
            f"{row['utility_under_attack']:.3f} | {row['attack_success']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", nargs="+", default=list(suites()["suites"]), choices=list(suites()["suites"]))
    args = parser.parse_args()
    rows = [row for suite in args.suites for row in measure(suite)]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "agentdojo.json").write_text(json.dumps(rows, indent=2) + "\n")
    (RESULTS / "agentdojo.md").write_text(markdown(rows))


if __name__ == "__main__":
    main()
