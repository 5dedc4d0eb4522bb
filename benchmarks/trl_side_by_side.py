"""TRL's ``GRPOTrainer`` side by side with agentgym's trainer: the same GRPO run on the real model, on a CPU.

Both sides train SmolLM2-135M-Instruct (``--model``, default ``smollm2``; ``--init-from`` an SFT run of agentgym's
trainer, whose latest adapter both merge into the base weights) with a fresh LoRA adapter (r 16, alpha 32) on
4x4 FrozenLake-v0 in text replies: the system prompt below, replies of at most 8 new tokens, up to 8 turns,
temperature 1.0. An iteration plays 4 tasks x 8 episodes (one GRPO group per task) and then takes 4 AdamW steps
(learning rate 1e-4, constant) of 8 episodes each, the loss the mean over the minibatch's sampled tokens, the
advantages normalised by the group's std, clip 0.2, no KL term, the ratio's denominator the logprobs scored before
the first step. The tasks are the ones agentgym's trainer draws; TRL plays the same ones in the same order.

* ``agentgym``: :class:`agentgym.train.trainer.Trainer` from a ``TrainConfig`` (in-process sampling with its
  ``Generator`` and prefix cache), one ``Trainer.step()`` per iteration.
* ``trl``: TRL's own ``GRPOTrainer`` (transformers generation, ``use_cpu``, no vLLM) driven through agentgym's
  adapter, ``grpo_kwargs`` (``rollout_func``: text replies; ``environment_factory`` is the tool-call mode, which
  needs a chat template TRL can parse tool calls from). TRL's settings that match agentgym's:
  ``per_device_train_batch_size`` 8, ``steps_per_generation`` 4 (one generation of 32 episodes per 4 optimizer
  steps), ``loss_type`` bnpo, ``beta`` 0, ``lr_scheduler_type`` constant, no gradient checkpointing, float32.

Measured per side, each side in its own subprocess: seconds per iteration (the median of the iterations after the
first), generated (sampled) tokens and total tokens (the episodes' whole sequences) per second over those
iterations, the process's peak resident memory (``ru_maxrss``) at the end of training and overall, the training
success of each iteration, and greedy success on the first ``--eval-episodes`` dev tasks before and after training,
both evaluated by the same function (agentgym's eval runner over ``GeneratorPolicy``). Where the time goes: TRL's
own timers (``profiling_context``: ``transformers.generate``, ``_prepare_inputs``, ``compute_loss``, which it
reports only to W&B, MLflow or Trackio, here collected in the process) split a TRL iteration into generation,
env steps and chat tokens (the rest of ``rollout_func``), scoring (the rest of ``_prepare_inputs``), the loss's
forward passes and the backward passes with the optimizer (the rest of the step); agentgym's into generation, the
rest of the rollout and the update (scoring, advantages and the minibatch steps).

Memory: with SmolLM2, agentgym's side alone reached 16 GiB resident in its second iteration of a smoke run (one
side runs at a time); on a 23 GiB machine run nothing else as large beside it.

Run::

    python -m benchmarks.trl_side_by_side --iterations 5 --eval-episodes 20 \\
        --init-from runs/real-model-learning/FrozenLake/sft     # writes results/trl_side_by_side.{md,json}
    python -m benchmarks.trl_side_by_side --iterations 2 --eval-episodes 4 --no-write   # a quick check
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch  # noqa: E402
import trl  # noqa: E402
from peft import LoraConfig  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402
from trl.extras.profiling import ProfilingContext  # noqa: E402

import agentgym  # noqa: E402,F401  (registers the envs)
from agentgym.evaluation.runner import EvalItem, run_eval  # noqa: E402
from agentgym.evaluation.stats import wilson_interval  # noqa: E402
from agentgym.integrations.trl import grpo_kwargs  # noqa: E402
from agentgym.llm.generation import Generator, SamplingParams  # noqa: E402
from agentgym.llm.models import resolve_model  # noqa: E402
from agentgym.train.config import TrainConfig, from_dict  # noqa: E402
from agentgym.train.rollout import GeneratorPolicy  # noqa: E402
from agentgym.train.trainer import Trainer  # noqa: E402
from agentgym.train.weights import checkpoint_model, load_weights  # noqa: E402
from benchmarks.recording import record  # noqa: E402

ENV_ID = "FrozenLake-v0"
SYSTEM_PROMPT = "Reply with one move: left, down, right or up."
MAX_NEW_TOKENS = 8
MAX_TURNS = 8
GROUP_SIZE = 8
GROUPS = 4  # tasks per iteration
EPISODES = GROUP_SIZE * GROUPS
MINIBATCH = 8  # episodes per optimizer step: EPISODES // MINIBATCH steps per iteration
LEARNING_RATE = 1e-4
TEMPERATURE = 1.0
LORA_R, LORA_ALPHA = 16, 32
#: TRL's completion is the whole episode after the prompt (replies and observations): room for every turn.
COMPLETION_BUDGET = 4096
PREFIX_CACHE_TOKENS = 32_768  # as agentgym's trainer evaluates
SIDES = ("agentgym", "trl")


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB (Linux reports ``ru_maxrss`` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def held_out_success(model: Any, tokenizer: Any, episodes: int, seed: int, out: Path) -> dict[str, Any]:
    """Greedy success of ``model`` on the first ``episodes`` dev tasks, through agentgym's eval runner
    (as ``Trainer.evaluate`` plays them: ``GeneratorPolicy``, the prefix cache, the same prompt and limits)."""
    clock = time.perf_counter()
    generator = Generator(model, tokenizer, prefix_cache_tokens=PREFIX_CACHE_TOKENS)
    policy = GeneratorPolicy(generator, SamplingParams(temperature=0.0, max_new_tokens=MAX_NEW_TOKENS))
    records: list[Any] = []

    async def play() -> None:
        try:
            await run_eval(
                "trainer",
                policy,
                [EvalItem(ENV_ID, episodes, "dev", MAX_TURNS)],
                out,
                seed=seed,
                concurrency=episodes,
                system_prompt=SYSTEM_PROMPT,
                on_episode=records.append,
            )
        finally:
            await policy.aclose()

    asyncio.run(play())
    ok = [record for record in records if record.status == "ok"]
    wins = sum(record.success for record in ok)
    low, high = wilson_interval(wins, len(ok))
    return {
        "success": wins / max(len(ok), 1),
        "wins": wins,
        "episodes": len(ok),
        "errors": len(records) - len(ok),
        "low": low,
        "high": high,
        "seconds": time.perf_counter() - clock,
    }


def timed(function: Callable[..., Any], seconds: list[float]) -> Callable[..., Any]:
    """``function``, appending each call's wall time to ``seconds``."""

    def call(*args: Any, **kwargs: Any) -> Any:
        clock = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - clock)

    return call


# ---- agentgym's trainer ------------------------------------------------------------------------------------------


def run_agentgym(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Train with agentgym's ``Trainer``; per iteration its seconds, tokens, success and tasks, and the evaluations."""
    model: dict[str, Any] = {"path": args.model, "device": "cpu", "lora": {"r": LORA_R, "alpha": LORA_ALPHA}}
    if args.init_from:
        model["init_from"] = args.init_from
    config = from_dict(
        TrainConfig,
        {
            "model": model,
            "envs": [{"id": ENV_ID, "split": "train"}],
            "algorithm": {"name": "grpo", "group_size": GROUP_SIZE, "kl_weight": 0.0},
            "rollout": {
                "system_prompt": SYSTEM_PROMPT,
                "temperature": TEMPERATURE,
                "max_new_tokens": MAX_NEW_TOKENS,
                "max_turns": [[0, MAX_TURNS]],
            },
            "out": str(work / "run"),
            "iterations": args.iterations,
            "groups_per_iteration": GROUPS,
            "learning_rate": LEARNING_RATE,
            "minibatch_size": MINIBATCH,
            "seed": args.seed,
            "tensorboard": False,
        },
    )
    clock = time.perf_counter()
    trainer = Trainer(config)
    load_s = time.perf_counter() - clock
    generation_s: list[float] = []
    trainer.sampler.sample = timed(trainer.sampler.sample, generation_s)  # type: ignore[method-assign]
    played: list[list[int]] = []
    rollout = trainer.rollout

    def rollout_and_note_tasks() -> list[Any]:
        trajectories = rollout()
        played.append([trajectory.task_id for trajectory in trajectories[::GROUP_SIZE]])
        return trajectories

    trainer.rollout = rollout_and_note_tasks  # type: ignore[method-assign]
    try:
        before = held_out_success(trainer.model, trainer.tokenizer, args.eval_episodes, args.seed, work / "before")
        iterations = []
        for _ in range(args.iterations):
            generation_s.clear()
            clock = time.perf_counter()
            metrics = trainer.step()
            seconds = time.perf_counter() - clock
            iterations.append(
                {
                    "seconds": seconds,
                    "generated_tokens": int(metrics["model_tokens"]),
                    "total_tokens": round(metrics["sequence_tokens_mean"] * EPISODES),
                    "success_rate": metrics["success_rate"],
                    "tasks": played[-1],
                    "time": {
                        "generation": sum(generation_s),
                        "env and chat tokens": metrics["rollout_s"] - sum(generation_s),
                        "update (scoring, advantages, minibatch steps)": metrics["update_s"],
                    },
                }
            )
            print(json.dumps({"side": "agentgym", **iterations[-1]}), flush=True)
        training_rss = peak_rss_mb()
        after = held_out_success(trainer.model, trainer.tokenizer, args.eval_episodes, args.seed, work / "after")
    finally:
        trainer.close()
    return side_result(load_s, iterations, before, after, training_rss)


def side_result(
    load_s: float, iterations: list[dict[str, Any]], before: Any, after: Any, training_rss: float
) -> dict[str, Any]:
    """What one side reports to the comparison."""
    return {
        "load_s": load_s,
        "iterations": iterations,
        "held_out_before": before,
        "held_out_after": after,
        "peak_rss_mb_training": training_rss,
    }


# ---- TRL's GRPOTrainer --------------------------------------------------------------------------------------------


class TRLTimers:
    """TRL's own profiling timers (``profiling_context``), summed per optimizer step and name.

    TRL reports them only to W&B, MLflow or Trackio; in this process each one's duration is kept here instead.
    """

    def __init__(self) -> None:
        self.seconds: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        timers = self

        def keep(context: ProfilingContext, duration: float) -> None:
            timers.seconds[context.step or 0][context.name.removeprefix("GRPOTrainer.")] += duration

        ProfilingContext._log_metrics = keep  # type: ignore[method-assign]

    def of_steps(self, steps: range) -> dict[str, float]:
        """Each timer's seconds summed over the optimizer steps ``steps``."""
        total: dict[str, float] = defaultdict(float)
        for step in steps:
            for name, seconds in self.seconds[step].items():
                total[name] += seconds
        return total


class TimedRollout:
    """agentgym's ``rollout_func`` for TRL, each call's seconds, tokens and success noted."""

    def __init__(self, rollout: Callable[[list[Any], Any], dict[str, Any]]) -> None:
        self.rollout = rollout
        self.calls: list[dict[str, Any]] = []

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        clock = time.perf_counter()
        output = self.rollout(prompts, trainer)
        self.calls.append(
            {
                "seconds": time.perf_counter() - clock,
                "generated_tokens": sum(sum(mask) for mask in output["env_mask"]),
                "total_tokens": sum(len(p) + len(c) for p, c in zip(output["prompt_ids"], output["completion_ids"])),
                "success_rate": sum(output["env_success"]) / len(prompts),
            }
        )
        return output


class IterationClock(TrainerCallback):
    """The wall time at which each iteration (``steps`` optimizer steps) of TRL's training ends."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.marks: list[float] = []

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.marks = [time.perf_counter()]

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step % self.steps == 0:
            self.marks.append(time.perf_counter())


def run_trl(args: argparse.Namespace, work: Path, tasks: list[list[int]]) -> dict[str, Any]:
    """Train with TRL's ``GRPOTrainer`` on ``tasks`` (each iteration's, as agentgym's trainer drew them)."""
    steps = EPISODES // MINIBATCH
    clock = time.perf_counter()
    folder = resolve_model(args.model).folder
    tokenizer = AutoTokenizer.from_pretrained(folder)
    start = checkpoint_model(args.init_from) if args.init_from else None
    model = load_weights(AutoModelForCausalLM, folder, start, torch.float32)
    kwargs = grpo_kwargs(
        ENV_ID,
        [task for iteration in tasks for task in iteration],
        system_prompt=SYSTEM_PROMPT,
        max_turns=MAX_TURNS,
        seed=args.seed,
    )
    rollout = kwargs["rollout_func"] = TimedRollout(kwargs["rollout_func"])
    config = GRPOConfig(
        output_dir=str(work / "run"),
        max_steps=args.iterations * steps,
        per_device_train_batch_size=MINIBATCH,
        steps_per_generation=steps,
        gradient_accumulation_steps=1,
        num_generations=GROUP_SIZE,
        shuffle_dataset=False,  # the dataset's tasks in order, GROUPS per generation
        max_completion_length=COMPLETION_BUDGET,
        generation_kwargs={"max_new_tokens": MAX_NEW_TOKENS},  # per reply; the budget is the episode's
        temperature=TEMPERATURE,
        learning_rate=LEARNING_RATE,
        lr_scheduler_type="constant",
        weight_decay=0.0,
        max_grad_norm=1.0,
        beta=0.0,
        epsilon=0.2,
        loss_type="bnpo",  # the mean over the minibatch's sampled tokens, as agentgym's loss_aggregation: token
        scale_rewards="group",
        gradient_checkpointing=False,
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        seed=args.seed,
    )
    lora = LoraConfig(
        r=LORA_R, lora_alpha=LORA_ALPHA, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )
    iteration_clock = IterationClock(steps)
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config,
        peft_config=lora,
        callbacks=[iteration_clock],
        **kwargs,
    )
    load_s = time.perf_counter() - clock
    timers = TRLTimers()
    try:
        before = held_out_success(trainer.model, tokenizer, args.eval_episodes, args.seed, work / "before")
        trainer.train()
        training_rss = peak_rss_mb()
        after = held_out_success(trainer.model, tokenizer, args.eval_episodes, args.seed, work / "after")
    finally:
        rollout.rollout.close()
    marks = iteration_clock.marks
    iterations = []
    for index, call in enumerate(rollout.calls):
        seconds = marks[index + 1] - marks[index]
        timer = timers.of_steps(range(index * steps, (index + 1) * steps))
        generation = timer["transformers.generate"]
        prepare, loss_forward = timer["_prepare_inputs"], timer["compute_loss"]
        iterations.append(
            {
                "seconds": seconds,
                "generated_tokens": call["generated_tokens"],
                "total_tokens": call["total_tokens"],
                "success_rate": call["success_rate"],
                "tasks": tasks[index],
                "time": {
                    "generation": generation,
                    "env and chat tokens": call["seconds"] - generation,
                    "scoring (rewards, old logprobs, padding)": prepare - call["seconds"],
                    "loss forward": loss_forward,
                    "backward and optimizer": seconds - prepare - loss_forward,
                },
                "trl_timers": dict(timer),
            }
        )
    return side_result(load_s, iterations, before, after, training_rss)


# ---- the comparison -----------------------------------------------------------------------------------------------


def run_side(args: argparse.Namespace) -> None:
    """One side, in this process: its results as JSON to ``--result``."""
    with tempfile.TemporaryDirectory(prefix=f"trl-side-by-side-{args.side}-") as folder:
        if args.side == "agentgym":
            result = run_agentgym(args, Path(folder))
        else:
            tasks = json.loads(Path(args.tasks).read_text(encoding="utf-8"))
            result = run_trl(args, Path(folder), tasks)
    result["peak_rss_mb"] = peak_rss_mb()
    Path(args.result).write_text(json.dumps(result, indent=2), encoding="utf-8")


def spawn_side(side: str, args: argparse.Namespace, folder: Path, tasks: list[list[int]] | None) -> dict[str, Any]:
    """Run ``side`` in a subprocess of its own (so that its peak memory is its own); its results."""
    argv = [sys.executable, "-m", "benchmarks.trl_side_by_side", "--side", side, "--result", str(folder / side)]
    argv += ["--model", args.model, "--iterations", str(args.iterations)]
    argv += ["--eval-episodes", str(args.eval_episodes), "--seed", str(args.seed)]
    if args.init_from:
        argv += ["--init-from", args.init_from]
    if tasks is not None:
        (folder / "tasks.json").write_text(json.dumps(tasks), encoding="utf-8")
        argv += ["--tasks", str(folder / "tasks.json")]
    subprocess.run(argv, check=True, cwd=Path(__file__).resolve().parent.parent)
    return json.loads((folder / side).read_text(encoding="utf-8"))


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """A side's headline numbers: the median iteration after the first, token rates over those iterations."""
    iterations = result["iterations"]
    timed_iterations = iterations[1:] or iterations
    seconds = sum(iteration["seconds"] for iteration in timed_iterations)
    parts = timed_iterations[0]["time"]
    return {
        "seconds_per_iteration": statistics.median(iteration["seconds"] for iteration in timed_iterations),
        "generated_tokens_per_s": sum(iteration["generated_tokens"] for iteration in timed_iterations) / seconds,
        "total_tokens_per_s": sum(iteration["total_tokens"] for iteration in timed_iterations) / seconds,
        "time": {part: statistics.median(iteration["time"][part] for iteration in timed_iterations) for part in parts},
        "peak_rss_mb_training": result["peak_rss_mb_training"],
        "peak_rss_mb": result["peak_rss_mb"],
        "success_per_iteration": [iteration["success_rate"] for iteration in iterations],
        "held_out_before": result["held_out_before"],
        "held_out_after": result["held_out_after"],
    }


def held_out_cell(evaluation: dict[str, Any]) -> str:
    return (
        f"{evaluation['wins']}/{evaluation['episodes']} ({evaluation['success']:.0%}, "
        f"95% CI {evaluation['low']:.0%}-{evaluation['high']:.0%})"
    )


def tables(ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    """The headline table, where each side's time goes, and the training success per iteration."""

    def row(name: str, key: str, fmt: str) -> str:
        ratio = theirs[key] / ours[key] if ours[key] else float("nan")
        return f"| {name} | {ours[key]:{fmt}} | {theirs[key]:{fmt}} | {ratio:.2f} |"

    lines = [
        "| | agentgym | TRL GRPOTrainer | TRL / agentgym |",
        "|---|---:|---:|---:|",
        row("seconds per iteration (median after the first)", "seconds_per_iteration", ".1f"),
        row("generated tokens / s", "generated_tokens_per_s", ".1f"),
        row("total tokens / s (whole episodes)", "total_tokens_per_s", ".1f"),
        row("peak RSS at the end of training (MiB)", "peak_rss_mb_training", ".0f"),
        row("peak RSS, with the final evaluation (MiB)", "peak_rss_mb", ".0f"),
        f"| held-out greedy success before | {held_out_cell(ours['held_out_before'])} "
        f"| {held_out_cell(theirs['held_out_before'])} | |",
        f"| held-out greedy success after | {held_out_cell(ours['held_out_after'])} "
        f"| {held_out_cell(theirs['held_out_after'])} | |",
        "",
        "Where an iteration's time goes (median seconds after the first iteration):",
        "",
        "| side | part | seconds |",
        "|---|---|---:|",
    ]
    for name, side in (("agentgym", ours), ("TRL", theirs)):
        lines += [f"| {name} | {part} | {seconds:.1f} |" for part, seconds in side["time"].items()]
    lines += ["", "Training success per iteration (32 sampled episodes):", "", "| iteration | agentgym | TRL |"]
    lines.append("|---:|---:|---:|")
    for index, (mine, trls) in enumerate(zip(ours["success_per_iteration"], theirs["success_per_iteration"])):
        lines.append(f"| {index} | {mine:.2f} | {trls:.2f} |")
    return "\n".join(lines)


def compare(args: argparse.Namespace) -> None:
    """Both sides, one after the other (agentgym first: TRL then plays the tasks it drew); the table."""
    with tempfile.TemporaryDirectory(prefix="trl-side-by-side-") as folder:
        ours = spawn_side("agentgym", args, Path(folder), None)
        theirs = spawn_side("trl", args, Path(folder), [iteration["tasks"] for iteration in ours["iterations"]])
    summaries = {"agentgym": summary(ours), "trl": summary(theirs)}
    table = tables(summaries["agentgym"], summaries["trl"])
    print(table)
    if args.no_write:
        return
    start = f", from the SFT run {args.init_from}" if args.init_from else ""
    setup = (
        f"{args.model}{start}, LoRA r {LORA_R} alpha {LORA_ALPHA}, {ENV_ID} 4x4, {GROUPS} tasks x {GROUP_SIZE} "
        f"episodes per iteration, {args.iterations} iterations, up to {MAX_TURNS} turns of <= {MAX_NEW_TOKENS} new "
        f"tokens, temperature {TEMPERATURE}, learning rate {LEARNING_RATE}, {EPISODES // MINIBATCH} optimizer steps "
        f"of {MINIBATCH} episodes per iteration, held-out: the first {args.eval_episodes} dev tasks, greedy; CPU, "
        f"float32; trl {trl.__version__}, torch {torch.__version__}"
    )
    command = "python -m benchmarks.trl_side_by_side " + " ".join(sys.argv[1:])
    settings = {key: getattr(args, key) for key in ("model", "init_from", "iterations", "eval_episodes", "seed")}
    data = {"settings": settings, "summary": summaries, "agentgym": ours, "trl": theirs}
    record("trl_side_by_side", "TRL's GRPOTrainer side by side with agentgym's trainer", setup, table, data, command)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="a model reference for resolve_model (default smollm2)")
    parser.add_argument("--init-from", help="an SFT run folder of agentgym's trainer (its latest checkpoint)")
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--eval-episodes", type=int, default=20, help="held-out dev tasks, greedy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # a subprocess running one side
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--tasks", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        run_side(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
