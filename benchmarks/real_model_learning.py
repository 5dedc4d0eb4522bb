"""Learning with a real model on a CPU: SmolLM2-135M-Instruct before and after SFT on the oracle's episodes, then GRPO.

For each family of ``benchmarks/real_model_learning.yaml`` (one env each, of different kinds), in ``--work``:

1. ``data``: the oracle's episodes on train tasks, as ``agentgym train data --env ID --episodes N`` makes them;
2. ``sft``: the SFT config with the family's overrides, evaluated greedy on the first ``eval_episodes`` dev tasks
   before its first step (the untrained model) and after its last;
3. ``rl``: the GRPO config from the SFT run's model (``model.init_from``), evaluated after its last iteration
   (families with an ``rl`` entry).

Each stage resumes where it stopped (its checkpoints, the runner's finished episodes). ``report`` reads the
folders and writes ``benchmarks/results/real_model_learning.{md,json,png}``: held-out success with 95% Wilson
intervals per stage, the SFT loss and GRPO's training success per iteration, and the wall time of each stage;
a family with no folder in ``--work`` keeps the row recorded there before (families run on different days).

Run: ``python -m benchmarks.real_model_learning run [--family NAME ...]``, then ``... report`` (needs matplotlib).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import yaml

import agentgym  # noqa: F401  (registers the envs)
from agentgym.evaluation.results import iter_episodes
from agentgym.evaluation.stats import wilson_interval
from agentgym.train.cli import main as train_main
from agentgym.train.config import TrainConfig, from_dict, load_config, to_dict
from benchmarks.recording import RESULTS, record

SUITE = Path(__file__).with_suffix(".yaml")
ROOT = Path(__file__).resolve().parent.parent
STAGES = ("before", "sft", "rl")


def merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` laid over it, mappings merged key by key."""
    out = dict(base)
    for key, value in overrides.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def stage_config(suite: dict[str, Any], family: dict[str, Any], stage: str, work: Path) -> TrainConfig:
    """The ``sft`` or ``rl`` config of ``family``: the suite's config file on the family's env, with the family's
    overrides, then the stage's own (``rl: {overrides: ...}``); or the family's own config file (``rl_config``,
    ``sft_config``), whose env and evaluation stay."""
    folder = work / family["name"]
    own = family.get(f"{stage}_config")
    base = to_dict(load_config(ROOT / (own or suite[f"{stage}_config"])))
    config = merged(merged(base, family.get("overrides", {})), family[stage].get("overrides", {}))
    iterations = family[stage]["iterations"]
    config |= {
        "out": str(folder / stage),
        "iterations": iterations,
        "checkpoint_every": max(1, iterations // 2),
        "tensorboard": False,
    }
    if own is None:
        config |= {
            "envs": [{"id": family["env"], "split": "train", "kwargs": family.get("env_kwargs", {})}],
            "eval_every": iterations,
            "eval_episodes": suite["eval_episodes"],
            "eval_concurrency": suite["eval_episodes"],
        }
    if stage == "sft":
        config["data"] = config["data"] | {"path": str(folder / "data")}
    elif "sft" in family:
        config["model"] = config["model"] | {"init_from": str(folder / "sft")}
    else:  # RL alone, from the instruct model
        config["model"] = {key: value for key, value in config["model"].items() if key != "init_from"}
    return from_dict(TrainConfig, config)


def run_stage(config: TrainConfig, evaluate_first: bool) -> float:
    """Train ``config`` (resuming from its checkpoints), evaluating first if asked; the seconds it took."""
    from agentgym.train.trainer import Trainer

    clock = time.perf_counter()
    trainer = Trainer(config)
    try:
        trainer.load_checkpoint()
        if evaluate_first and trainer.iteration == 0:
            trainer.evaluate()
        trainer.train(on_iteration=lambda metrics: print(json.dumps(metrics), flush=True))
    finally:
        trainer.close()
    return time.perf_counter() - clock


def run(suite: dict[str, Any], names: list[str], work: Path) -> None:
    for family in suite["families"]:
        if names and family["name"] not in names:
            continue
        folder = work / family["name"]
        folder.mkdir(parents=True, exist_ok=True)
        times_path = folder / "times.json"
        times = json.loads(times_path.read_text()) if times_path.exists() else {}
        if "sft" in family and not (folder / "data" / "data.json").exists():
            clock = time.perf_counter()
            argv = ["data", "--env", family["env"], "--episodes", str(family["data_episodes"])]
            argv += ["--env-kwargs", json.dumps(family.get("env_kwargs", {})), "--out"]
            assert train_main([*argv, str(folder / "data")]) == 0
            times["data_s"] = time.perf_counter() - clock
        for stage in ("sft", "rl"):
            last = folder / stage / "checkpoints" / f"iteration-{family.get(stage, {}).get('iterations', 0):06d}"
            if stage in family and not last.is_dir():
                times[f"{stage}_s"] = times.get(f"{stage}_s", 0.0) + run_stage(
                    stage_config(suite, family, stage, work), evaluate_first=stage == _first_stage(family)
                )
                times_path.write_text(json.dumps(times, indent=2), encoding="utf-8")


def _first_stage(family: dict[str, Any]) -> str:
    return "sft" if "sft" in family else "rl"


def held_out(folder: Path) -> dict[str, Any] | None:
    """Success of an evaluation folder's finished episodes, with its 95% interval; None if it is missing."""
    if not (folder / "episodes.jsonl").exists():
        return None
    records = [record for record in iter_episodes(folder) if record.status == "ok"]
    wins = sum(record.success for record in records)
    low, high = wilson_interval(wins, len(records))
    turns = [turn for record in records for turn in record.turns]
    invalid = sum(turn.invalid_action for turn in turns) / max(len(turns), 1)
    return {
        "success": wins / max(len(records), 1),
        "low": low,
        "high": high,
        "episodes": len(records),
        "score_mean": sum(record.score for record in records) / max(len(records), 1),
        "invalid_rate": invalid,
    }


def metrics_of(run_folder: Path) -> list[dict[str, Any]]:
    path = run_folder / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def measured(family: dict[str, Any], folder: Path) -> dict[str, Any] | None:
    """What ``family``'s runs in ``folder`` measured, or None where nothing ran there."""
    sft, rl = metrics_of(folder / "sft"), metrics_of(folder / "rl")
    if not (sft or rl):
        return None
    sft_steps, rl_steps = family.get("sft", {}).get("iterations", 0), family.get("rl", {}).get("iterations", 0)
    evals = {
        "before": held_out(folder / _first_stage(family) / "eval" / "iteration-000000"),
        "sft": held_out(folder / "sft" / "eval" / f"iteration-{sft_steps:06d}") if sft else None,
        "rl": held_out(folder / "rl" / "eval" / f"iteration-{rl_steps:06d}") if rl else None,
    }
    rl_evals = sorted((folder / "rl" / "eval").glob("iteration-*")) if rl else []
    times = json.loads((folder / "times.json").read_text()) if (folder / "times.json").exists() else {}
    first_config = json.loads((folder / _first_stage(family) / "config.json").read_text())
    # Training time from the iterations' own clocks (a resumed stage's wall time would miss what ran before).
    trained = [sum(row.get("rollout_s", 0.0) + row.get("update_s", 0.0) for row in rows) for rows in (sft, rl)]
    data_file = folder / "data" / "data.json"
    return {
        "family": family["name"],
        "kind": family["kind"],
        "env": family["env"],
        "env_kwargs": first_config["envs"][0].get("kwargs", {}),
        "examples": json.loads(data_file.read_text())["examples"] if data_file.exists() else 0,
        "sft_iterations": len(sft),
        "rl_iterations": len(rl),
        "rl_from": "sft" if "sft" in family else "instruct",
        "held_out": evals,
        "times_s": times,
        "training_s": {"sft": trained[0], "rl": trained[1]},
        "sft_loss": [row["loss"] for row in sft],
        "rl_success": [row["success_rate"] for row in rl],
        "rl_held_out": [[int(path.name.split("-")[1]), held_out(path)] for path in rl_evals],
    }


def table_row(family: dict[str, Any], entry: dict[str, Any] | None) -> str:
    """``family``'s line of the results table."""
    if entry is None:
        return f"| {family['name']} ({family['kind']}) | `{family['env']}` | not run yet |" + " |" * 7
    sft_steps, rl_steps = family.get("sft", {}).get("iterations", 0), family.get("rl", {}).get("iterations", 0)
    cells = [_cell(entry["held_out"][stage]) for stage in STAGES]
    minutes = " / ".join(f"{seconds / 60:.0f}" if seconds else "-" for seconds in entry["training_s"].values())
    loss = entry["sft_loss"]
    loss_cell = f"{loss[0]:.2f} -> {loss[-1]:.2f}" if loss else "-"
    env = entry["env"] + "".join(f" {key}={value}" for key, value in entry["env_kwargs"].items())
    return (
        f"| {entry['family']} ({entry['kind']}) | `{env}` | {entry['examples'] or '-'} | "
        f"{_ran(entry['sft_iterations'], sft_steps)} | {loss_cell} | {_ran(entry['rl_iterations'], rl_steps)} | "
        f"{' | '.join(cells)} | {minutes} |"
    )


def report(suite: dict[str, Any], work: Path) -> None:
    """Write the results from ``work``'s folders; a family with no folder there keeps its recorded measurement."""
    recorded_path = RESULTS / "real_model_learning.json"
    recorded = json.loads(recorded_path.read_text()) if recorded_path.exists() else []
    earlier = {entry["family"]: entry for entry in recorded}
    rows, data = [], []
    for family in suite["families"]:
        entry = measured(family, work / family["name"]) or earlier.get(family["name"])
        rows.append(table_row(family, entry))
        if entry is not None:
            data.append(entry)
    table = (
        "Held-out success: greedy, on the first dev tasks (never trained on), with 95% Wilson intervals; "
        "the share of invalid actions in brackets.\n\n"
        "| family | env | SFT examples | SFT steps | SFT loss | GRPO iterations | untrained | after SFT | "
        "after GRPO (from SFT, or alone) | training minutes (SFT / GRPO) |\n|---|---|---|---|---|---|---|---|---|---|\n"
        + "\n".join(rows)
    )
    setup = (
        f"SmolLM2-135M-Instruct, LoRA r 16, float32, {suite['eval_episodes']} dev episodes per evaluation (a family "
        "with a config of its own: that config's eval_episodes)"
    )
    record(
        "real_model_learning",
        "A real model learns on a CPU: SFT on oracle episodes, then GRPO",
        setup,
        table,
        data,
        command="python -m benchmarks.real_model_learning run && python -m benchmarks.real_model_learning report",
    )
    plot(data)


def _ran(done: int, planned: int) -> str:
    """``planned`` steps of a stage, or how many of them ran where it stopped short (a run still going or cut)."""
    if not done:
        return "-"
    return str(planned) if done >= planned else f"{done} of {planned} (still running or cut)"


def _cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    return f"{result['success']:.0%} [{result['low']:.0%}, {result['high']:.0%}] ({result['invalid_rate']:.0%} invalid)"


def held_out_points(family: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """(iteration counted from the first SFT step, held-out result) of every evaluation of a family's runs."""
    start = family["sft_iterations"]
    points = [(0, family["held_out"]["before"]), (start, family["held_out"]["sft"])]
    during_rl = [(start + iteration, result) for iteration, result in family.get("rl_held_out", []) if iteration]
    points += during_rl or [(start + family["rl_iterations"], family["held_out"]["rl"])]
    return [(x, result) for x, result in points if result]


def plot(data: list[dict[str, Any]]) -> None:
    """Per family: the SFT loss per step, GRPO's training success per iteration, held-out success per stage."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, len(data), figsize=(4 * len(data), 6.5), squeeze=False)
    for column, family in enumerate(data):
        top, bottom = axes[0][column], axes[1][column]
        top.set_title(f"{family['family']}: SFT")
        if family["sft_loss"]:
            top.plot(range(1, len(family["sft_loss"]) + 1), family["sft_loss"], label="SFT loss per assistant token")
            top.set_xlabel("step")
            top.legend(fontsize=8)
        else:
            top.text(0.5, 0.5, "none: GRPO alone,\nfrom the instruct model", ha="center", transform=top.transAxes)
        points = held_out_points(family)
        ys = [result["success"] for _, result in points]
        errors = [[y - r["low"] for y, (_, r) in zip(ys, points)], [r["high"] - y for y, (_, r) in zip(ys, points)]]
        bottom.errorbar([x for x, _ in points], ys, yerr=errors, fmt="o-", capsize=4, label="held-out success (greedy)")
        if family["rl_success"]:
            start = family["sft_iterations"]
            bottom.plot(
                range(start + 1, start + len(family["rl_success"]) + 1),
                family["rl_success"],
                ":",
                label="GRPO training episodes (sampled)",
            )
        bottom.set_ylim(-0.05, 1.05)
        bottom.set_xlabel("iteration (SFT steps, then GRPO)")
        bottom.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(RESULTS / "real_model_learning.png", dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "report"))
    parser.add_argument("--family", action="append", default=[], help="only this family (repeatable)")
    parser.add_argument("--work", type=Path, default=Path("runs/real-model-learning"), help="the runs' folder")
    args = parser.parse_args()
    suite = yaml.safe_load(SUITE.read_text(encoding="utf-8"))
    if args.command == "run":
        run(suite, args.family, args.work)
    report(suite, args.work)


if __name__ == "__main__":
    main()
