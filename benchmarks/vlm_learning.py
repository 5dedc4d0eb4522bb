"""A learning check on CPU: agentgym's trainer teaches a tiny random VLM a visual task (docs/vlm.md).

The task (``ColourScreen-v0``, registered here, not shipped): the screen is red or blue, the text
is the same for both ("What colour is the screen?"), and the reply's first letter must be the
colour's (``r`` or ``b``). Only the screenshot tells the colours apart, so a success rate above
one half needs the image; a model that ignores it stays at or below one half. The model is the
tests' tiny Qwen2-VL (``tests/tiny_vlm.py``) with flat random weights; GRPO, full fine-tuning,
in-process sampling. The curve is each iteration's training success rate (64 sampled episodes).

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
                "groups_per_iteration": 8,
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
    rates = [row["success_rate"] for row in curve]
    first, last = sum(rates[:3]) / 3, sum(rates[-3:]) / 3
    points = " ".join(f"{rate:.2f}" for rate in rates)
    table = (
        f"| iterations | success, first 3 | success, last 3 | wall |\n| --- | --- | --- | --- |\n"
        f"| {len(rates)} | {first:.2f} | {last:.2f} | {wall:.0f} s |\n\n"
        f"Curve (training success per iteration): {points}"
    )
    setup = (
        f"tiny Qwen2-VL (2 text layers, 1 vision layer, random, initializer 0.02), GRPO, 8 groups of 8, "
        f"lr {args.learning_rate}, 56x56 screens (4 image tokens), full fine-tuning, CPU"
    )
    record("vlm_learning", "A tiny VLM learns a visual task with agentgym's trainer", setup, table, curve)
    print(table)


if __name__ == "__main__":
    main()
