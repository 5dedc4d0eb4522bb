"""``agentgym train CONFIG.yaml``: run (or resume) a training run from a YAML config.

``agentgym train data ...``: make an SFT data set from eval results, or by playing the oracle
(:mod:`agentgym.train.sft_data`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from agentgym.evaluation.runner import EvalItem
from agentgym.evaluation.suites import load_suite
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
    """Train (or, for ``data ...``, make a data set); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["data"]:
        return data_main(argv[1:])
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


def build_data_parser() -> argparse.ArgumentParser:
    """The arguments of ``agentgym train data``."""
    parser = argparse.ArgumentParser(
        prog="agentgym train data",
        description="Make an SFT data set (examples.jsonl, trl.jsonl, verl.parquet, data.json) from the "
        "episodes of eval results folders (--from), or by playing the oracle (--env or --suite).",
    )
    parser.add_argument("--out", required=True, help="the data set's folder")
    parser.add_argument("--from", dest="sources", action="append", default=[], help="a results folder; repeatable")
    parser.add_argument("--env", action="append", default=[], help="play the oracle on this env id; repeatable")
    parser.add_argument("--suite", help="play the oracle on a suite's envs (on --split)")
    parser.add_argument("--env-kwargs", default="{}", help="gym.make kwargs of the --env ids, as JSON")
    parser.add_argument("--split", default="train", choices=("train", "dev", "test"), help="with --env/--suite")
    parser.add_argument("--episodes", type=int, default=100, help="oracle episodes per env (with --env/--suite)")
    parser.add_argument("--ids", help="task ids to play, comma-separated (with --env; instead of --episodes)")
    parser.add_argument("--max-turns", type=int, help="turn limit of the oracle's episodes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--action-format", default="text", choices=("text", "tools"), help="with --env/--suite")
    parser.add_argument("--min-score", type=float, help="keep episodes scoring at least this")
    parser.add_argument("--include-failures", action="store_true", help="keep unsuccessful episodes too")
    parser.add_argument(
        "--allow-split", action="append", default=[], help="also take episodes of this split (dev, test); repeatable"
    )
    return parser


def data_main(argv: Sequence[str]) -> int:
    """``agentgym train data``: build the data set, print its summary; returns the exit status."""
    args = build_data_parser().parse_args(argv)
    from agentgym.train.sft_data import build_dataset, play_oracle

    try:
        sources = list(args.sources)
        items = oracle_items(args)
        if items:
            played = Path(args.out) / "oracle"
            print(f"playing the oracle into {played}", file=sys.stderr)
            sources.append(play_oracle(items, played, seed=args.seed, action_format=args.action_format))
        if not sources:
            raise ValueError("name results folders (--from) or envs to play the oracle on (--env, --suite)")
        allowed = ("train", *args.allow_split)
        manifest = build_dataset(
            sources, args.out, success_only=not args.include_failures, min_score=args.min_score, allow_splits=allowed
        )
    except (OSError, ValueError) as error:
        print(f"agentgym train data: {error}", file=sys.stderr)
        return 2
    summary = {key: manifest[key] for key in ("examples", "turns", "splits", "tasks_digest", "digest")}
    print(json.dumps(summary | {"out": args.out}, indent=2))
    return 0


def oracle_items(args: argparse.Namespace) -> list[EvalItem]:
    """The runner items of ``--env``/``--suite`` (none without them)."""
    if args.split not in ("train", *args.allow_split):
        raise ValueError(f"--split {args.split}: training data comes from train tasks (add --allow-split to insist)")
    task_ids = tuple(int(i) for i in args.ids.split(",")) if args.ids else None
    kwargs = json.loads(args.env_kwargs)
    items = [EvalItem(env, args.episodes, args.split, args.max_turns, kwargs, task_ids) for env in args.env]
    if args.suite:
        suite = load_suite(args.suite).items
        items += [replace(item, split=args.split, episodes=args.episodes, task_ids=None) for item in suite]
    return items
