"""A learning check on CPU: agentgym's trainer teaches a tiny random VLM a visual task (docs/vlm.md).

The task (``ColourScreen-v0``, registered here, not shipped): the screen is red or blue, the text
is the same for both ("What colour is the screen?"), and the reply's first letter must be the
colour's (``r`` or ``b``). Only the screenshot tells the colours apart, so a success rate above
one half needs the image; a model that ignores it stays at or below one half. The model is the
tests' tiny Qwen2-VL (``tests/tiny_vlm.py``) with flat random weights; GRPO, full fine-tuning,
in-process sampling. The curve is each iteration's training success rate (``--groups`` x 8 sampled
episodes).

    python benchmarks/vlm_learning.py                   # writes results/vlm_learning.{md,json}
    python benchmarks/vlm_learning.py --iterations 20
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from recording import record

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import agentgym  # noqa: E402
from agentgym.core import TaskSplits, TextEnv, UnicodeText  # noqa: E402
from agentgym.train.config import TrainConfig, from_dict  # noqa: E402
from agentgym.train.trainer import Trainer  # noqa: E402

ENV_ID = "ColourScreen-v0"


class ColourScreenEnv(TextEnv):
    """One step: reply with the first letter of the screen's colour (``r`` red, ``b`` blue); reward 1 if right."""

    splits: ClassVar[TaskSplits] = TaskSplits(train=10_000, dev=200, test=200)
    action_syntax = "Reply with one letter: r if the screen is red, b if it is blue."

    def __init__(self, size: int = 56, render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        self.size, self.colour = size, "red"
        self.observation_space = spaces.Dict(
            {"text": UnicodeText(1000), "screenshot": spaces.Box(0, 255, (size, size, 3), np.uint8)}
        )

    def _generate(self, task_id: int) -> str:
        self.colour = "red" if self.task_rng(task_id).random() < 0.5 else "blue"
        return "What colour is the screen?"

    def _describe(self) -> str:
        return "The screen is shown."

    def _execute(self, command: str) -> str:
        self.terminated = True
        self.success = command.strip().lower()[:1] == self.colour[0]
        self.score = float(self.success)
        return "Right." if self.success else "Wrong."

    def oracle_action(self) -> str:
        return self.colour[0]

    def _observation(self, text: str) -> dict[str, Any]:
        pixels = np.zeros((self.size, self.size, 3), dtype=np.uint8)
        pixels[..., 0 if self.colour == "red" else 2] = 255
        return {"text": text, "screenshot": pixels}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--groups", type=int, default=8, help="groups of 8 episodes per iteration")
    args = parser.parse_args()
    from tiny_vlm import build_tiny_qwen2_vl

    agentgym.register(
        ENV_ID,
        entry_point=f"{__name__}:ColourScreenEnv",
        family="benchmark",
        description="red or blue screen; reply r or b",
        splits=ColourScreenEnv.splits,
        max_episode_steps=1,
    )
    with tempfile.TemporaryDirectory() as folder:
        model = build_tiny_qwen2_vl(Path(folder) / "tiny-qwen2-vl", context_length=1024, initializer_range=0.02)
        config = from_dict(
            TrainConfig,
            {
                "model": {"path": str(model), "device": "cpu"},
                "envs": [{"id": ENV_ID}],
                "algorithm": {"name": "grpo", "group_size": 8},
                "rollout": {
                    "max_new_tokens": 2,
                    "max_turns": [[0, 1]],
                    "observation": "screenshot",
                    "system_prompt": None,
                    "env_workers": 1,
                    "max_batch_size": 64,
                },
                "out": str(Path(folder) / "run"),
                "iterations": args.iterations,
                "groups_per_iteration": args.groups,
                "minibatch_size": 16,
                "learning_rate": args.learning_rate,
                "checkpoint_every": args.iterations,
                "tensorboard": False,
                "seed": args.seed,
            },
        )
        trainer = Trainer(config)
        curve: list[dict[str, float]] = []
        started = time.perf_counter()
        try:
            trainer.train(on_iteration=lambda row: (curve.append(row), print(row["iteration"], row["success_rate"])))
        finally:
            trainer.close()
        wall = time.perf_counter() - started
    write_record(curve, wall, args.groups, args.learning_rate, args.seed)


def task_colours(iterations: int, groups: int, seed: int) -> list[str]:
    """Each iteration's task colours (``r``/``b`` per group), drawn as the trainer draws its tasks.

    An image-blind policy (one answer whatever the screen) scores at most the share of its colour;
    a success rate above the larger share needs the screenshot.
    """
    import random

    from agentgym.evaluation.runner import stable_seed

    env, colours = ColourScreenEnv(), []
    for iteration in range(iterations):
        rng = random.Random(stable_seed(seed, "rollout", iteration))
        drawn = ""
        for _ in range(groups):
            env._generate(rng.choice(ColourScreenEnv.splits.ids("train")))
            drawn += env.colour[0]
        colours.append(drawn)
    return colours


def write_record(curve: list[dict[str, float]], wall: float, groups: int, learning_rate: float, seed: int) -> None:
    """Record the curve: the first iterations' success, the best window of 5, the last ones, every point,
    and the iterations where success beat any image-blind policy."""
    rates = [row["success_rate"] for row in curve]
    colours = task_colours(len(rates), groups, seed)
    blind = [max(drawn.count("r"), drawn.count("b")) / len(drawn) for drawn in colours]
    seeing = [f"{i} ({rate:.2f} > {bound:.2f})" for i, (rate, bound) in enumerate(zip(rates, blind)) if rate > bound]
    for row, drawn in zip(curve, colours):
        row["task_colours"] = drawn
    first, last = sum(rates[:3]) / 3, sum(rates[-3:]) / 3
    best = max(range(len(rates) - 4), key=lambda i: sum(rates[i : i + 5]))
    window = sum(rates[best : best + 5]) / 5
    points = " ".join(f"{rate:.2f}" for rate in rates)
    table = (
        "| iterations | success, first 3 | best 5 in a row | success, last 3 | iterations above 1/2 | wall |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        f"| {len(rates)} | {first:.2f} | {window:.2f} (iterations {best}-{best + 4}) | {last:.2f} "
        f"| {sum(rate > 0.5 for rate in rates)} | {wall:.0f} s |\n\n"
        f"Curve (training success per iteration): {points}\n\n"
        f"Task colours per iteration (r/b per group): {' '.join(colours)}\n\n"
        "Iterations whose success beat every image-blind policy (its bound: the larger colour share): "
        + (", ".join(seeing) or "none")
    )
    setup = (
        f"tiny Qwen2-VL (2 text layers, 1 vision layer, random, initializer 0.02), GRPO, {groups} groups of 8, "
        f"lr {learning_rate}, 56x56 screens (4 image tokens), full fine-tuning, no KL, CPU"
    )
    command = "python benchmarks/vlm_learning.py"
    command += f" --iterations {len(rates)} --groups {groups} --learning-rate {learning_rate:g}"
    record("vlm_learning", "A tiny VLM learns a visual task with agentgym's trainer", setup, table, curve, command)
    print(table)


if __name__ == "__main__":
    main()
