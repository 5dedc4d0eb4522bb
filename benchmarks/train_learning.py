"""Learning demonstration on CPU: a tiny transformer made from scratch learns FrozenLake with GRPO, PPO and GiGPO.

The model (a 2-layer Llama, 64 hidden units) and its word-level tokenizer are made here, offline.
A short warm-up trains it on transcripts of the *random* policy (a uniformly random legal move
per turn), predicting every token: it learns the reply format and the env's text, and its
replies imitate the random policy, so training starts near random-policy level. (Imitating
the replies alone gave a model whose move distribution did not depend on the board at all,
and RL then only tuned that one distribution.) Then each
algorithm trains a copy with the reference trainer (``agentgym.train``) for ``ITERATIONS``
iterations, for each seed (the seed draws the tasks and the sampling; the warm-up is shared).

Measured: the success rate of each iteration's training episodes (sampled at temperature 1,
on tasks drawn afresh from the train split), and before and after training the success on
the first ``EVAL_EPISODES`` train tasks, greedy and sampled, next to the random policy's and
the oracle's on the same tasks. A 3x3 lake has about 35 distinct maps and they all fall in
the train split (its dev and test splits get none), so there is no held-out set: this shows
learning, not generalisation to unseen maps.

Run: ``python benchmarks/train_learning.py`` (16 minutes on 2 shared, busy cores; needs matplotlib). Writes
``benchmarks/results/train_learning.{md,json,png}``.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import gymnasium as gym
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import agentgym  # noqa: E402,F401  (registers the envs)
from agentgym.policies import OraclePolicy, Policy, RandomPolicy  # noqa: E402
from agentgym.runner import EvalItem, run_eval  # noqa: E402
from agentgym.train.config import AlgorithmConfig, EnvConfig, ModelConfig, RolloutConfig, TrainConfig  # noqa: E402
from agentgym.train.trainer import Trainer  # noqa: E402
from agentgym.wrappers.chat import ChatWrapper  # noqa: E402
from benchmarks.recording import RESULTS, record  # noqa: E402

ENV = EnvConfig(id="FrozenLake-v0", split="train", kwargs={"size": 3})
MAX_TURNS = 6
SYSTEM_PROMPT = "Reply with one move."
ALGORITHMS = ("grpo", "ppo", "gigpo")
SEEDS = (0, 1)
ITERATIONS = 30
GROUPS, GROUP_SIZE = 8, 8  # episodes per iteration: 8 tasks x 8 episodes
EVAL_EPISODES = 200  # the first 200 train tasks, one episode each (no held-out maps exist at 3x3)
SAMPLED = 1.0  # the temperature of training episodes and of the sampled evaluation
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|> ' + message['content'] + ' </s> ' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|> ' }}{% endif %}"
)


def random_transcripts(count: int, rng: random.Random) -> list[list[dict[str, str]]]:
    """Chats of whole episodes played by the random policy on random train tasks."""
    env = ChatWrapper(gym.make(ENV.id, **ENV.kwargs), SYSTEM_PROMPT)
    chats = []
    for _ in range(count):
        task = rng.randrange(10_000)
        env.reset(seed=task, options={"task_id": task})
        for _ in range(MAX_TURNS):
            *_, terminated, truncated, _ = env.step(env.unwrapped.random_action(rng))
            if terminated or truncated:
                break
        chats.append(env.transcript[:])
    return chats


def build_model(folder: Path) -> Path:
    """A word-level tokenizer of the env's words and a randomly initialised 2-layer Llama."""
    pre = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    texts = [message["content"] for chat in random_transcripts(100, random.Random(0)) for message in chat]
    words = sorted({word for text in texts for word, _ in pre.pre_tokenize_str(text)})
    special = ["<pad>", "<unk>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]
    backend = Tokenizer(models.WordLevel({token: i for i, token in enumerate(special + words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre
    backend.decoder = decoders.WordPiece()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", eos_token="</s>"
    )
    tokenizer.add_special_tokens({"additional_special_tokens": special[3:]})
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def warm_up(folder: Path, steps: int = 100, batch: int = 16) -> float:
    """Next-token prediction on every token of random-policy episodes; returns the final loss.

    Predicting the observations teaches the model to read the board; predicting the replies
    teaches the format and the random policy's uniform choice (not where to go).
    """
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rng = random.Random(1)
    loss = torch.tensor(0.0)
    for _ in range(steps):
        chats = random_transcripts(batch, rng)
        rows = [
            tokenizer(tokenizer.apply_chat_template(chat, tokenize=False), add_special_tokens=False).input_ids
            for chat in chats
        ]
        ids = torch.full((batch, max(map(len, rows))), tokenizer.pad_token_id)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
        padding = ids == tokenizer.pad_token_id
        loss = model(input_ids=ids, attention_mask=(~padding).long(), labels=ids.masked_fill(padding, -100)).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.save_pretrained(folder)
    return loss.item()


def config(model: Path, algorithm: str, seed: int, out: Path) -> TrainConfig:
    return TrainConfig(
        model=ModelConfig(path=str(model), device="cpu"),
        envs=[ENV],
        algorithm=AlgorithmConfig(name=algorithm, group_size=GROUP_SIZE, gamma=0.95, lam=0.95),
        rollout=RolloutConfig(
            temperature=SAMPLED, max_new_tokens=3, system_prompt=SYSTEM_PROMPT, max_turns=[[0, MAX_TURNS]]
        ),
        out=str(out),
        iterations=ITERATIONS,
        groups_per_iteration=GROUPS,
        learning_rate=1e-3,
        epochs=2,
        minibatch_size=32,
        seed=seed,
        eval_episodes=EVAL_EPISODES,
        eval_split=ENV.split,
        eval_concurrency=EVAL_EPISODES,
        checkpoint_every=ITERATIONS,
        tensorboard=False,
    )


def baseline_success(policy: Policy, out: Path, repeats: int = 1) -> float:
    """A scripted policy's success on the evaluation tasks, over ``repeats`` runs with different seeds."""
    records: list[dict] = []
    item = EvalItem(ENV.id, EVAL_EPISODES, ENV.split, MAX_TURNS, ENV.kwargs)
    for seed in range(repeats):
        asyncio.run(run_eval(policy.name, policy, [item], out / str(seed), seed=seed, on_episode=records.append))
    return sum(r["success"] for r in records) / len(records)


def evaluate(trainer: Trainer) -> dict[str, float]:
    """Success on the evaluation tasks, greedy and sampled."""
    return {
        "greedy": trainer.evaluate()["eval_success_rate"],
        "sampled": trainer.evaluate(temperature=SAMPLED)["eval_success_rate"],
    }


def greedy_route(out: Path) -> dict:
    """The final greedy evaluation's most common move sequence, the share of episodes that played it
    whole, and the share that followed it (whole, or cut short by a hole on the way)."""
    records = [json.loads(line) for line in (out / "eval" / f"iteration-{ITERATIONS:06d}" / "episodes.jsonl").open()]
    played = [tuple(turn["action"] for turn in record["turns"]) for record in records]
    route, count = Counter(played).most_common(1)[0]
    on_route = sum(moves == route[: len(moves)] for moves in played)
    return {"moves": " ".join(route), "whole": count / len(played), "on_route": on_route / len(played)}


def train(model: Path, algorithm: str, seed: int, out: Path) -> dict:
    """One training run; its curve and its evaluations before and after."""
    clock = time.perf_counter()
    trainer = Trainer(config(model, algorithm, seed, out))
    curve: list[float] = []
    try:
        before = evaluate(trainer)
        trainer.train(on_iteration=lambda metrics: curve.append(metrics["success_rate"]))
        after = evaluate(trainer)
    finally:
        trainer.close()
    return {
        "algorithm": algorithm,
        "seed": seed,
        "train_success": curve,
        "before": before,
        "after": after,
        "greedy_route_after": greedy_route(out),
        "wall_s": time.perf_counter() - clock,
    }


def main() -> None:
    torch.set_num_threads(1)
    clock = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="agentgym-train-learning-"))
    model = build_model(work / "model")
    warm_loss = warm_up(model)
    baselines = {
        "random": baseline_success(RandomPolicy(), work / "random", repeats=10),
        "oracle": baseline_success(OraclePolicy(), work / "oracle"),
        "warm_up_loss": warm_loss,
        "warm_up_s": time.perf_counter() - clock,
    }
    print(json.dumps(baselines), flush=True)
    runs = []
    for algorithm in ALGORITHMS:
        for seed in SEEDS:
            runs.append(train(model, algorithm, seed, work / f"{algorithm}-{seed}"))
            print(json.dumps(runs[-1]), flush=True)
            write_results(runs, baselines, time.perf_counter() - clock)  # after each run: partial results survive


def write_results(runs: list[dict], baselines: dict, total_s: float) -> None:
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
        f"On the same {EVAL_EPISODES} tasks: random policy (uniform legal moves, 10 episodes per task) "
        f"{baselines['random']:.3f}, oracle (shortest safe path) {baselines['oracle']:.2f}. Greedy: temperature 0; "
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
    curves = "".join(
        f"- {run['algorithm']} seed {run['seed']}: {' '.join(f'{v:.2f}' for v in run['train_success'])}\n"
        for run in runs
    )
    table = "\n".join(rows) + "\n\n" + "\n\n".join(notes) + "\n\n![success curves](train_learning.png)\n\n"
    table += f"Training success per iteration ({GROUPS * GROUP_SIZE} sampled episodes each):\n\n{curves}"
    setup = (
        f"FrozenLake-v0 size 3, at most {MAX_TURNS} turns; a 2-layer Llama (64 hidden) and a word-level tokenizer "
        f"made from scratch, warmed up on random-policy transcripts; {ITERATIONS} iterations x {GROUPS} tasks x "
        f"{GROUP_SIZE} episodes; seeds {list(SEEDS)}; evaluated on the first {EVAL_EPISODES} train tasks "
        "(3x3 maps have no dev/test split); CPU, 1 thread"
    )
    record(
        "train_learning",
        "Learning demonstration: GRPO, PPO, GiGPO on FrozenLake 3x3 (CPU)",
        setup,
        table,
        {"baselines": baselines, "runs": runs, "total_s": total_s},
    )
    plot(runs, baselines)


def mean(values: list[float]) -> float:
    return sum(values) / max(len(values), 1)


COLORS = {"grpo": "tab:blue", "ppo": "tab:red", "gigpo": "tab:green"}


def plot(runs: list[dict], baselines: dict) -> None:
    """``results/train_learning.png``: training success per iteration, and the evaluations before and after."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (curves, bars) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
    for run in runs:
        style = "-" if run["seed"] == SEEDS[0] else "--"
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
    title = f"first {EVAL_EPISODES} train tasks, before (light) and after\n(plain: greedy; hatched: sampled, T=1)"
    bars.set(ylim=(0, 1.02), title=title)
    figure.tight_layout()
    figure.savefig(RESULTS / "train_learning.png", dpi=120)
    plt.close(figure)


if __name__ == "__main__":
    main()
