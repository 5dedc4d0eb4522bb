"""``agentgym train CONFIG.yaml``: run (or resume) a training run from a YAML config."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from agentgym.train.config import load_config


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The arguments of ``agentgym train`` (added to ``parser`` if given)."""
    parser = parser or argparse.ArgumentParser(prog="agentgym train", description=__doc__)
    parser.add_argument("config", help="a YAML training config (see agentgym/train/configs/)")
    parser.add_argument("--out", help="output folder (overrides the config's out)")
    parser.add_argument("--iterations", type=int, help="total iterations (overrides the config)")
    parser.add_argument("--resume", action="store_true", help="continue from the output folder's latest checkpoint")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Train; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        config = load_config(args.config)
    except (OSError, ValueError) as error:
        print(f"agentgym train: {error}", file=sys.stderr)
        return 2
    if args.out:
        config.out = args.out
    if args.iterations is not None:
        config.iterations = args.iterations
    from agentgym.train.trainer import Trainer

    trainer = Trainer(config)
    try:
        if args.resume and trainer.load_checkpoint():
            print(f"resumed at iteration {trainer.iteration}", file=sys.stderr)
        trainer.train(on_iteration=show)
    finally:
        trainer.close()
    print(f"done: {config.out}", file=sys.stderr)
    return 0


SHOWN = ("iteration", "success_rate", "return_mean", "turns_mean", "loss", "entropy", "eval_success_rate")


def show(metrics: dict[str, float]) -> None:
    """Print an iteration's main metrics as one JSON line."""
    print(json.dumps({key: round(metrics[key], 4) for key in SHOWN if key in metrics}), flush=True)
