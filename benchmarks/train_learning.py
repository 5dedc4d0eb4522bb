"""Learning demonstration on CPU: a tiny transformer made from scratch learns FrozenLake with GRPO, PPO and GiGPO.

The model (a 2-layer Llama, 64 hidden units) and its word-level tokenizer are made here, offline.
A short warm-up trains it on transcripts of the *random* policy (a uniformly random legal move
per turn), predicting every token: it learns the reply format and the env's text, and its
replies imitate the random policy, so training starts near random-policy level. (Imitating
the replies alone gave a model whose move distribution did not depend on the board at all,
and RL then only tuned that one distribution.) Then each
algorithm trains a copy with the reference trainer (``agentgym.train``) for the setting's iterations
iterations, for each seed (the seed draws the tasks and the sampling; the warm-up is shared).

Measured: the success rate of each iteration's training episodes (sampled at temperature 1,
on tasks drawn afresh from the train split), and before and after training the success on
the first 200 train tasks, greedy and sampled, next to the random policy's and
the oracle's on the same tasks. A 3x3 lake has about 35 distinct maps and they all fall in
the train split (its dev and test splits get none), so there is no held-out set: this shows
learning, not generalisation to unseen maps.

Run: ``python benchmarks/train_learning.py`` (16 minutes on 2 shared, busy cores; needs matplotlib). Writes
``benchmarks/results/train_learning.{md,json,png}``.

``--gpu`` repeats it on a CUDA device, larger: FrozenLake 4x4 (at most 10 turns), an 8-layer
Llama (512 hidden), 16 tasks x 8 episodes per iteration, bfloat16 mixed precision, GRPO and PPO,
evaluated on held-out dev maps (4x4 lakes have enough distinct maps for every split) as well as
on train maps. Writes ``benchmarks/results/gpu_learning.{md,json,png}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import gymnasium as gym
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import agentgym  # noqa: E402,F401  (registers the envs)
from agentgym.evaluation.records import EpisodeRecord  # noqa: E402
from agentgym.evaluation.results import iter_episodes  # noqa: E402
from agentgym.evaluation.runner import EvalItem, run_eval  # noqa: E402
from agentgym.llm.policies import OraclePolicy, Policy, RandomPolicy  # noqa: E402
from agentgym.train.config import AlgorithmConfig, EnvConfig, ModelConfig, RolloutConfig, TrainConfig  # noqa: E402
from agentgym.train.trainer import Trainer  # noqa: E402
from agentgym.wrappers.chat import ChatWrapper  # noqa: E402
from benchmarks.recording import RESULTS, record  # noqa: E402

SYSTEM_PROMPT = "Reply with one move."
SAMPLED = 1.0  # the temperature of training episodes and of the sampled evaluation


@dataclass(frozen=True)
class Setting:
    """One learning demonstration: the task, the model's size, the training budget, where it runs."""

    name: str  # the results file's name
    size: int  # the lake's side
    max_turns: int
    hidden: int
    layers: int
    algorithms: tuple[str, ...]
    seeds: tuple[int, ...]
    iterations: int
    groups: int  # tasks per iteration
    group_size: int  # episodes per task
    eval_episodes: int  # the first N tasks of each evaluated split, one episode each
    eval_splits: tuple[str, ...]  # the first is the headline; train maps first where no held-out maps exist
    device: str
    warm_up_steps: int
    warm_up_batch: int
    learning_rate: float

    @property
    def env(self) -> EnvConfig:
        return EnvConfig(id="FrozenLake-v0", split="train", kwargs={"size": self.size})


CPU = Setting(
    "train_learning", 3, 6, 64, 2, ("grpo", "ppo", "gigpo"), (0, 1), 30, 8, 8, 200, ("train",), "cpu", 100, 16, 1e-3
)
GPU = Setting(
    "gpu_learning", 4, 10, 512, 8, ("grpo", "ppo"), (0,), 40, 16, 8, 200, ("dev", "train"), "cuda", 300, 64, 3e-4
)
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|> ' + message['content'] + ' </s> ' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|> ' }}{% endif %}"
)


def random_transcripts(setting: Setting, count: int, rng: random.Random) -> list[list[dict[str, str]]]:
    """Chats of whole episodes played by the random policy on random train tasks."""
    env = ChatWrapper(gym.make(setting.env.id, **setting.env.kwargs), SYSTEM_PROMPT)
    chats = []
    for _ in range(count):
        task = rng.randrange(10_000)
        env.reset(seed=task, options={"task_id": task})
        for _ in range(setting.max_turns):
            *_, terminated, truncated, _ = env.step(env.unwrapped.random_action(rng))
            if terminated or truncated:
                break
        chats.append(env.transcript[:])
    return chats


def build_model(setting: Setting, folder: Path) -> Path:
    """A word-level tokenizer of the env's words and a randomly initialised Llama of the setting's size."""
    texts = [message["content"] for chat in random_transcripts(setting, 100, random.Random(0)) for message in chat]
    context = 512 if setting.max_turns <= 6 else 2048
    return word_level_model(texts, folder, setting.hidden, setting.layers, context)


def word_level_model(
    texts: list[str], folder: Path, hidden: int, layers: int, context: int, spelled_digits: bool = False
) -> Path:
    """A word-level tokenizer of the words of ``texts`` and a random Llama (seeded), saved in ``folder``.

    With ``spelled_digits`` every digit is a token of its own and a word carries its leading space (``▁``), so
    any number can be written and decoding joins the pieces back exactly (``open[doc53249]``).
    """
    if spelled_digits:
        parts = [
            pre_tokenizers.Metaspace(),
            pre_tokenizers.Punctuation(),
            pre_tokenizers.Digits(individual_digits=True),
        ]
        decoder = decoders.Metaspace()
    else:
        parts, decoder = [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()], decoders.WordPiece()
    pre = pre_tokenizers.Sequence(parts)
    words = sorted({word for text in texts for word, _ in pre.pre_tokenize_str(text)})
    special = ["<pad>", "<unk>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]
    backend = Tokenizer(models.WordLevel({token: i for i, token in enumerate(special + words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre
    backend.decoder = decoder
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", eos_token="</s>"
    )
    tokenizer.add_special_tokens({"additional_special_tokens": special[3:]})
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4 if hidden < 256 else hidden // 64,
        num_key_value_heads=4 if hidden < 256 else hidden // 64,
        max_position_embeddings=context,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def warm_up(setting: Setting, folder: Path) -> float:
    """Next-token prediction on every token of random-policy episodes; returns the final loss.

    Predicting the observations teaches the model to read the board; predicting the replies
    teaches the format and the random policy's uniform choice (not where to go).
    """
    learning_rate = 3e-3 if setting.hidden < 256 else 1e-3

    def draw(rng: random.Random) -> list[list[dict[str, str]]]:
        return random_transcripts(setting, setting.warm_up_batch, rng)

    return next_token_warm_up(folder, draw, setting.warm_up_steps, learning_rate, setting.device)


def next_token_warm_up(
    folder: Path,
    draw: Callable[[random.Random], list[list[dict[str, str]]]],
    steps: int,
    learning_rate: float,
    device: str,
) -> float:
    """``steps`` steps of next-token prediction on every token of the chats ``draw`` gives; saves the model in
    ``folder`` and returns the final loss."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    rng = random.Random(1)
    loss = torch.tensor(0.0)
    for _ in range(steps):
        chats = draw(rng)
        batch = len(chats)
        rows = [
            tokenizer(tokenizer.apply_chat_template(chat, tokenize=False), add_special_tokens=False).input_ids
            for chat in chats
        ]
        ids = torch.full((batch, max(map(len, rows))), tokenizer.pad_token_id)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
        ids = ids.to(device)
        padding = ids == tokenizer.pad_token_id
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device != "cpu"):
            logits_loss = model(input_ids=ids, attention_mask=(~padding).long(), labels=ids.masked_fill(padding, -100))
        loss = logits_loss.loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.save_pretrained(folder)
    return loss.item()


def config(setting: Setting, model: Path, algorithm: str, seed: int, out: Path) -> TrainConfig:
    return TrainConfig(
        model=ModelConfig(path=str(model), device=setting.device),
        envs=[setting.env],
        algorithm=AlgorithmConfig(name=algorithm, group_size=setting.group_size, gamma=0.95, lam=0.95),
        rollout=RolloutConfig(
            temperature=SAMPLED,
            max_new_tokens=3,
            system_prompt=SYSTEM_PROMPT,
            max_turns=[[0, setting.max_turns]],
            max_batch_size=setting.groups * setting.group_size,
        ),
        out=str(out),
        iterations=setting.iterations,
        groups_per_iteration=setting.groups,
        learning_rate=setting.learning_rate,
        epochs=2,
        minibatch_size=32,
        seed=seed,
        eval_episodes=setting.eval_episodes,
        eval_split=setting.eval_splits[0],
        eval_concurrency=setting.eval_episodes,
        checkpoint_every=setting.iterations,
        tensorboard=False,
    )


def baseline_success(setting: Setting, policy: Policy, split: str, out: Path, repeats: int = 1) -> float:
    """A scripted policy's success on the evaluation tasks of ``split``, over ``repeats`` runs with different seeds."""
    records: list[EpisodeRecord] = []
    env = setting.env
    item = EvalItem(env.id, setting.eval_episodes, split, setting.max_turns, env.kwargs)
    for seed in range(repeats):
        asyncio.run(run_eval(policy.name, policy, [item], out / str(seed), seed=seed, on_episode=records.append))
    return sum(r.success for r in records) / len(records)


def evaluate(setting: Setting, trainer: Trainer) -> dict[str, float]:
    """Success on the evaluation tasks, greedy and sampled (and greedy on the other splits evaluated)."""
    results = {
        "greedy": trainer.evaluate()["eval_success_rate"],
        "sampled": trainer.evaluate(temperature=SAMPLED)["eval_success_rate"],
    }
    for split in setting.eval_splits[1:]:
        results[f"greedy_{split}"] = trainer.evaluate(split=split)["eval_success_rate"]
    return results


def greedy_route(setting: Setting, out: Path) -> dict:
    """The final greedy evaluation's most common move sequence, the share of episodes that played it
    whole, and the share that followed it (whole, or cut short by a hole on the way)."""
    folder = out / "eval" / f"iteration-{setting.iterations:06d}"
    records = list(iter_episodes(folder))
    played = [tuple(turn.action for turn in record.turns) for record in records]
    route, count = Counter(played).most_common(1)[0]
    on_route = sum(moves == route[: len(moves)] for moves in played)
    return {"moves": " ".join(route), "whole": count / len(played), "on_route": on_route / len(played)}


def train(setting: Setting, model: Path, algorithm: str, seed: int, out: Path) -> dict:
    """One training run; its curve and its evaluations before and after."""
    clock = time.perf_counter()
    trainer = Trainer(config(setting, model, algorithm, seed, out))
    curve: list[float] = []
    try:
        before = evaluate(setting, trainer)
        trainer.train(on_iteration=lambda metrics: curve.append(metrics["success_rate"]))
        after = evaluate(setting, trainer)
    finally:
        trainer.close()
    return {
        "algorithm": algorithm,
        "seed": seed,
        "train_success": curve,
        "before": before,
        "after": after,
        "greedy_route_after": greedy_route(setting, out),
        "wall_s": time.perf_counter() - clock,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Learning demonstration (see the module docstring)")
    parser.add_argument("--gpu", action="store_true", help="the larger run on a CUDA device")
    parser.add_argument("--check", action="store_true", help="a tiny version on the CPU, to check the script")
    parser.add_argument("--algorithms", help="comma-separated subset of grpo,ppo,gigpo (default: the setting's)")
    parser.add_argument("--learning-rate", type=float, help="override the setting's learning rate")
    parser.add_argument("--name", help="the results files' name (default: the setting's)")
    args = parser.parse_args()
    setting = GPU if args.gpu else CPU
    if args.algorithms:
        setting = replace(setting, algorithms=tuple(args.algorithms.split(",")))
    if args.learning_rate:
        setting = replace(setting, learning_rate=args.learning_rate)
    if args.name:
        setting = replace(setting, name=args.name)
    if args.check:
        setting = replace(
            setting, name=f"{setting.name}_check", device="cpu", hidden=64, layers=2, iterations=2, groups=2,
            eval_episodes=4, warm_up_steps=2, warm_up_batch=4,
        )  # fmt: skip
    if setting.device == "cpu":
        torch.set_num_threads(1)
    clock = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="agentgym-train-learning-"))
    model = build_model(setting, work / "model")
    warm_loss = warm_up(setting, model)
    headline = setting.eval_splits[0]
    baselines = {
        "random": baseline_success(setting, RandomPolicy(), headline, work / "random", repeats=10),
        "oracle": baseline_success(setting, OraclePolicy(), headline, work / "oracle"),
        "warm_up_loss": warm_loss,
        "warm_up_s": time.perf_counter() - clock,
    }
    print(json.dumps(baselines), flush=True)
    runs = []
    for algorithm in setting.algorithms:
        for seed in setting.seeds:
            runs.append(train(setting, model, algorithm, seed, work / f"{algorithm}-{seed}"))
            print(json.dumps(runs[-1]), flush=True)
            # after each run: partial results survive
            write_results(setting, runs, baselines, time.perf_counter() - clock)


def write_results(setting: Setting, runs: list[dict], baselines: dict, total_s: float) -> None:
    rows = [
        "| algorithm | seed | train success, first 3 iterations | last 5 | greedy before | greedy after "
        "| sampled before | sampled after | greedy route after: most common moves (played whole, followed) "
        "| wall s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        curve, before, after, route = run["train_success"], run["before"], run["after"], run["greedy_route_after"]
        rows.append(
            f"| {run['algorithm']} | {run['seed']} | {mean(curve[:3]):.2f} | {mean(curve[-5:]):.2f} "
            f"| {before['greedy']:.2f} | **{after['greedy']:.2f}** | {before['sampled']:.2f} "
            f"| **{after['sampled']:.2f}** | {route['moves']} ({route['whole']:.0%}, {route['on_route']:.0%}) "
            f"| {run['wall_s']:.0f} |"
        )
    sampled_before = [run["before"]["sampled"] for run in runs]
    notes = [
        f"On the same {setting.eval_episodes} {setting.eval_splits[0]} tasks: random policy (uniform legal moves, "
        f"10 episodes per task) {baselines['random']:.3f}, oracle (shortest safe path) {baselines['oracle']:.2f}. "
        "Greedy: temperature 0; "
        f"sampled: temperature {SAMPLED:g}, one episode per task. Warm-up final loss "
        f"{baselines['warm_up_loss']:.3f} ({baselines['warm_up_s']:.0f} s); whole run {total_s / 60:.1f} min.",
        f"Sampled, the warm-up model succeeds on {min(sampled_before):.2f} to {max(sampled_before):.2f} of the "
        f"tasks (the seed sets the sampling), near the random policy's {baselines['random']:.2f}: its move "
        "choice is close to uniform, not exactly. The training curves dip together because a seed draws the "
        "same tasks at each iteration for every algorithm.",
    ]
    if all(run["before"]["greedy"] == 0 for run in runs):
        notes.append(
            "Greedy before training is 0: the warm-up model's choice is near-uniform with a slight bias, so its "
            "argmax is one move on every board, which never reaches the goal."
        )
    if all(run["greedy_route_after"]["on_route"] >= 0.95 for run in runs):
        notes.append(
            "After training, at least 95% of each run's greedy episodes follow its most common route (whole, or "
            "until a hole on it): the runs learned a fixed route that is safe on most maps, not (yet) to read the "
            "holes and go around them as the oracle does."
        )
    for run in runs:
        for key in sorted(set(run["after"]) - {"greedy", "sampled"}):
            split = key.removeprefix("greedy_")
            notes.append(
                f"{run['algorithm']} seed {run['seed']}, greedy on the first {setting.eval_episodes} {split} tasks: "
                f"{run['before'][key]:.2f} before, **{run['after'][key]:.2f}** after."
            )
    curves = "".join(
        f"- {run['algorithm']} seed {run['seed']}: {' '.join(f'{v:.2f}' for v in run['train_success'])}\n"
        for run in runs
    )
    table = "\n".join(rows) + "\n\n" + "\n\n".join(notes) + f"\n\n![success curves]({setting.name}.png)\n\n"
    table += (
        f"Training success per iteration ({setting.groups * setting.group_size} sampled episodes each):\n\n{curves}"
    )
    if setting.device == "cpu":
        where = "evaluated on the first 200 train tasks (3x3 maps have no dev/test split); CPU, 1 thread"
    else:
        where = (
            f"evaluated on the first {setting.eval_episodes} tasks of each of {', '.join(setting.eval_splits)} "
            f"(dev maps are never trained on); {torch.cuda.get_device_name()}, bfloat16 mixed precision"
        )
    setup = (
        f"FrozenLake-v0 size {setting.size}, at most {setting.max_turns} turns; a {setting.layers}-layer Llama "
        f"({setting.hidden} hidden) and a word-level tokenizer made from scratch, warmed up on random-policy "
        f"transcripts; {setting.iterations} iterations x {setting.groups} tasks x {setting.group_size} episodes, "
        f"learning rate {setting.learning_rate:g}; "
        f"seeds {list(setting.seeds)}; {where}"
    )
    names = ", ".join(name.upper() if name != "gigpo" else "GiGPO" for name in setting.algorithms)
    record(
        setting.name,
        f"Learning demonstration: {names} on FrozenLake {setting.size}x{setting.size} ({setting.device.upper()})",
        setup,
        table,
        {"setting": setting.__dict__, "baselines": baselines, "runs": runs, "total_s": total_s},
        command=" ".join(["python benchmarks/train_learning.py", *sys.argv[1:]]),
    )
    plot(setting, runs, baselines)


def mean(values: list[float]) -> float:
    return sum(values) / max(len(values), 1)


COLORS = {"grpo": "tab:blue", "ppo": "tab:red", "gigpo": "tab:green"}


def plot(setting: Setting, runs: list[dict], baselines: dict) -> None:
    """``results/<name>.png``: training success per iteration, and the evaluations before and after."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (curves, bars) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
    for run in runs:
        style = "-" if run["seed"] == setting.seeds[0] else "--"
        label = f"{run['algorithm']} seed {run['seed']}"
        curves.plot(run["train_success"], style, color=COLORS[run["algorithm"]], label=label, linewidth=1.2)
    for name, style in (("random", ":"), ("oracle", "-.")):
        curves.axhline(baselines[name], color="grey", linestyle=style, label=f"{name} policy")
    curves.set(xlabel="iteration", ylabel="success rate", ylim=(0, 1.02), title="training episodes (sampled, T=1)")
    curves.legend(fontsize=7, ncol=2, loc="lower right")
    labels = [f"{run['algorithm']}\nseed {run['seed']}" for run in runs]
    x = range(len(runs))
    for offset, (moment, mode, shade) in enumerate(
        [("before", "greedy", 0.35), ("after", "greedy", 1.0), ("before", "sampled", 0.35), ("after", "sampled", 1.0)]
    ):
        heights = [run[moment][mode] for run in runs]
        colors = [COLORS[run["algorithm"]] for run in runs]
        bars.bar(
            [i + (offset - 1.5) * 0.2 for i in x],
            heights,
            width=0.2,
            color=colors,
            alpha=shade,
            hatch="//" if mode == "sampled" else None,
            edgecolor="white",
        )
    bars.axhline(baselines["random"], color="grey", linestyle=":")
    bars.set_xticks(list(x), labels, fontsize=7)
    title = (
        f"first {setting.eval_episodes} {setting.eval_splits[0]} tasks, before (light) and after\n"
        "(plain: greedy; hatched: sampled, T=1)"
    )
    bars.set(ylim=(0, 1.02), title=title)
    figure.tight_layout()
    figure.savefig(RESULTS / f"{setting.name}.png", dpi=120)
    plt.close(figure)


if __name__ == "__main__":
    main()
