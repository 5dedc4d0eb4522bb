"""Self-play demonstration on CPU: a tiny transformer learns Kuhn poker by playing itself (SPIRAL's setting).

The model (a 2-layer Llama, 64 hidden units) and its word-level tokenizer are made here, offline. A short
warm-up trains it by next-token prediction on moves of games between two *random* players (every token
of the prompt and the move), so it learns the reply format and starts near random play. Then the
reference trainer (``agentgym.train`` with ``selfplay``) trains it by self-play only: the learner plays
both seats of every game, GRPO with SPIRAL's role-conditioned advantages (a moving-average baseline per
game and seat). It never plays a scripted player while training.

Measured, at every checkpoint: the learner's greedy win rate and mean chips against the scripted
``random`` and ``nash`` players (the first games of the dev seeds, seats alternating: opponents it never
trained against), and the arena's ratings (Bradley-Terry, Elo scale) of the checkpoints, the warm-up
model and the two scripted players in one round-robin.

Run: ``python benchmarks/self_play.py`` (minutes on 2 shared, busy cores; needs matplotlib). Writes
``benchmarks/results/self_play.{md,json,png}``. ``--check`` runs a tiny version to check the script.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import agentgym  # noqa: E402,F401  (registers the games)
from agentgym.evaluation.arena import ratings, run_arena  # noqa: E402
from agentgym.multiagent import make_game  # noqa: E402
from agentgym.train.config import (  # noqa: E402
    AlgorithmConfig,
    GameConfig,
    ModelConfig,
    RolloutConfig,
    SelfPlayConfig,
    TrainConfig,
)
from agentgym.train.trainer import Trainer  # noqa: E402
from benchmarks.recording import RESULTS, record  # noqa: E402
from benchmarks.train_learning import next_token_warm_up, word_level_model  # noqa: E402

GAME = "KuhnPoker-v0"
SYSTEM_PROMPT = "Win chips. Reply with one move."
OPPONENTS = ("random", "nash")  # held out: never played in training


@dataclass(frozen=True)
class Setting:
    """The demonstration's budget."""

    name: str
    seeds: tuple[int, ...]
    iterations: int
    groups: int  # deals per iteration
    group_size: int  # games per deal
    checkpoint_every: int
    eval_games: int  # per held-out opponent and checkpoint
    arena_games: int  # per pair of the arena
    warm_up_steps: int
    learning_rate: float
    epochs: int


CPU = Setting("self_play", (0, 1), 40, 8, 8, 5, 400, 100, 150, 2e-4, 1)


def random_game_chats(count: int, rng: random.Random) -> list[list[dict[str, str]]]:
    """``count`` moves of games between two random players, each as the chat the trainer prompts with plus the move."""
    game, chats = make_game(GAME), []
    while len(chats) < count:
        game.reset(seed=rng.getrandbits(31))
        while game.outcome is None:
            agent = game.agent_selection
            move = game.play("random", agent, rng)
            observation = game.observe(agent)["text"]
            chats.append(
                [
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": observation},
                    {"role": "assistant", "content": move},
                ]
            )
            game.step(move)
    return chats[:count]


def build_model(setting: Setting, folder: Path) -> float:
    """The word-level model, warmed up on random play; returns the warm-up's final loss."""
    texts = [message["content"] for chat in random_game_chats(2000, random.Random(0)) for message in chat]
    word_level_model(texts, folder, hidden=64, layers=2, context=512)
    return next_token_warm_up(folder, lambda rng: random_game_chats(32, rng), setting.warm_up_steps, 3e-3, "cpu")


def strategy(folder: Path) -> dict[str, dict[str, float]]:
    """The model's probability of each legal move at each of Kuhn poker's 12 information sets (card + history).

    A move is one word of the word-level tokenizer, so its probability is that of its token after the prompt.
    """
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    game, table = make_game(GAME), {}
    for history in ("", "k", "b", "kb"):
        for card in "JQK":
            seed = 0
            while True:  # a deal that gives the seat to move this card
                game.reset(seed=seed)
                seat = game.possible_agents[len(history) % 2]
                if game.cards[seat] == card:
                    break
                seed += 1
            for letter in history:
                game.step({"k": "check", "b": "bet"}[letter])
            observation = game.observe(seat)["text"]
            chat = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": observation}]
            ids = tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
            with torch.no_grad():
                logits = model(**ids).logits[0, -1]
            probabilities = torch.softmax(logits, -1)
            ids_of = tokenizer.convert_tokens_to_ids
            table[card + history] = {move: float(probabilities[ids_of(move)]) for move in game.legal_moves(seat)}
    return table


def card_spread(table: dict[str, dict[str, float]]) -> float:
    """The largest difference, over the points of a hand and their moves, of a move's probability between cards."""
    spreads = []
    for history in ("", "k", "b", "kb"):
        rows = [table[card + history] for card in "JQK"]
        spreads += [max(row[move] for row in rows) - min(row[move] for row in rows) for move in rows[0]]
    return max(spreads)


def config(setting: Setting, model: Path, seed: int, out: Path) -> TrainConfig:
    return TrainConfig(
        model=ModelConfig(path=str(model), device="cpu"),
        algorithm=AlgorithmConfig(name="grpo", group_size=setting.group_size),
        rollout=RolloutConfig(
            temperature=1.0,
            max_new_tokens=2,
            system_prompt=SYSTEM_PROMPT,
            max_turns=[[0, 3]],
            max_batch_size=setting.groups * setting.group_size,
        ),
        selfplay=SelfPlayConfig(
            games=[GameConfig(id=GAME)], opponents=["self"], baseline="rae", eval_opponents=list(OPPONENTS)
        ),
        out=str(out),
        iterations=setting.iterations,
        groups_per_iteration=setting.groups,
        learning_rate=setting.learning_rate,
        epochs=setting.epochs,
        minibatch_size=32,
        seed=seed,
        eval_every=setting.checkpoint_every,
        eval_episodes=setting.eval_games,
        checkpoint_every=setting.checkpoint_every,
        tensorboard=False,
    )


def held_out(metrics: dict[str, float]) -> dict[str, dict[str, float]]:
    """The evaluation's win rate and mean chips per held-out opponent."""
    return {
        opponent: {
            "win_rate": metrics[f"eval_win_rate/{GAME}/vs_{opponent}"],
            "chips": metrics[f"eval_reward/{GAME}/vs_{opponent}"],
        }
        for opponent in OPPONENTS
    }


def train(setting: Setting, model: Path, seed: int, out: Path) -> dict:
    """One self-play run: its evaluations at iteration 0 and at every checkpoint, and its training curve."""
    clock = time.perf_counter()
    trainer = Trainer(config(setting, model, seed, out))
    evaluations = {0: held_out(trainer.evaluate())}
    curve: list[dict[str, float]] = []

    def on_iteration(metrics: dict[str, float]) -> None:
        curve.append({key: value for key, value in metrics.items() if key.startswith(("reward/", "loss", "entropy"))})
        if f"eval_win_rate/{GAME}/vs_random" in metrics:
            evaluations[int(metrics["iteration"]) + 1] = held_out(metrics)
            print(
                json.dumps({"seed": seed, "iteration": int(metrics["iteration"]) + 1, **held_out(metrics)}), flush=True
            )

    try:
        trainer.train(on_iteration=on_iteration)
    finally:
        trainer.close()
    return {"seed": seed, "evaluations": evaluations, "curve": curve, "wall_s": time.perf_counter() - clock}


def arena(setting: Setting, model: Path, run: Path, out: Path) -> list[dict]:
    """The arena's ratings of the warm-up model, every checkpoint of ``run`` and the scripted players."""
    folders = {"iteration 0": model}
    for folder in sorted((run / "checkpoints").glob("iteration-*")):
        folders[f"iteration {int(folder.name.split('-')[1])}"] = folder / "model"
    specs = [f"hf:{folder}" for folder in folders.values()] + list(OPPONENTS)
    names = {f"hf:{folder}": name for name, folder in folders.items()} | {name: name for name in OPPONENTS}
    options = {"device": "cpu", "max_new_tokens": 2}
    asyncio.run(
        run_arena(
            GAME, specs, out, games_per_pair=setting.arena_games, system_prompt=SYSTEM_PROMPT, policy_options=options
        )
    )
    return [
        {"policy": names[rating.policy], "rating": rating.rating, "low": rating.low, "high": rating.high,
         "games": rating.games, "wins": rating.wins, "losses": rating.losses, "mean_reward": rating.mean_reward}
        for rating in ratings(out)
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description="Self-play demonstration (see the module docstring)")
    parser.add_argument("--check", action="store_true", help="a tiny version, to check the script")
    parser.add_argument("--learning-rate", type=float, help="override the setting's learning rate")
    parser.add_argument("--iterations", type=int, help="override the setting's iterations")
    parser.add_argument("--seeds", help="comma-separated seeds (default: the setting's)")
    parser.add_argument("--name", help="the results files' name (default: the setting's)")
    args = parser.parse_args()
    setting = CPU
    if args.learning_rate:
        setting = replace(setting, learning_rate=args.learning_rate)
    if args.iterations:
        setting = replace(setting, iterations=args.iterations)
    if args.seeds:
        setting = replace(setting, seeds=tuple(int(seed) for seed in args.seeds.split(",")))
    if args.name:
        setting = replace(setting, name=args.name)
    if args.check:
        setting = replace(
            setting, name="self_play_check", seeds=(0,), iterations=2, groups=2, group_size=2, checkpoint_every=1,
            eval_games=4, arena_games=2, warm_up_steps=2,
        )  # fmt: skip
    torch.set_num_threads(1)
    clock = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="agentgym-self-play-"))
    model = work / "model"
    warm_loss = build_model(setting, model)
    runs = []
    for seed in setting.seeds:
        runs.append(train(setting, model, seed, work / f"seed-{seed}"))
        last = sorted((work / f"seed-{seed}" / "checkpoints").glob("iteration-*"))[-1] / "model"
        runs[-1]["strategy"] = {"warm-up": strategy(model), "last checkpoint": strategy(last)}
        runs[-1]["arena"] = arena(setting, model, work / f"seed-{seed}", work / f"arena-{seed}")
        print(json.dumps(runs[-1]["arena"]), flush=True)
        write_results(setting, runs, warm_loss, time.perf_counter() - clock)


def write_results(setting: Setting, runs: list[dict], warm_loss: float, total_s: float) -> None:
    lines = []
    for run in runs:
        lines.append(f"**Seed {run['seed']}** ({run['wall_s'] / 60:.1f} min of training):\n")
        lines.append("| iteration | win rate vs random | chips vs random | win rate vs nash | chips vs nash |")
        lines.append("|---|---|---|---|---|")
        for iteration, result in sorted(run["evaluations"].items()):
            random_, nash = result["random"], result["nash"]
            lines.append(
                f"| {iteration} | {random_['win_rate']:.3f} | {random_['chips']:+.3f} "
                f"| {nash['win_rate']:.3f} | {nash['chips']:+.3f} |"
            )
        lines.append("\nArena (the checkpoints of this run, the warm-up model and the scripted players):\n")
        lines.append("| policy | rating [95% CI] | games | wins | losses | mean chips |")
        lines.append("|---|---|---|---|---|---|")
        for rating in run["arena"]:
            lines.append(
                f"| {rating['policy']} | {rating['rating']:.0f} [{rating['low']:.0f}, {rating['high']:.0f}] "
                f"| {rating['games']} | {rating['wins']} | {rating['losses']} | {rating['mean_reward']:+.3f} |"
            )
        lines.append("\nThe model's probability of each legal move at Kuhn poker's 12 information sets (card, then")
        lines.append("the actions so far: k check, b bet), warm-up model and last checkpoint:\n")
        lines.append("| infoset | warm-up | last checkpoint |")
        lines.append("|---|---|---|")
        for infoset, before in run["strategy"]["warm-up"].items():
            after = run["strategy"]["last checkpoint"][infoset]
            shown = [" ".join(f"{move} {p:.2f}" for move, p in moves.items()) for moves in (before, after)]
            lines.append(f"| {infoset} | {shown[0]} | {shown[1]} |")
        lines.append("")
    for run in runs:
        spread = card_spread(run["strategy"]["last checkpoint"])
        lines.append(
            f"Seed {run['seed']}: at the last checkpoint a move's probability differs by at most {spread:.2f} between "
            "the three cards at the same point of the hand"
            + (": the policy does not read its card." if spread < 0.1 else ".")
        )
    table = "\n".join(lines) + f"\n\n![self-play curves]({setting.name}.png)\n"
    setup = (
        f"{GAME}; a 2-layer Llama (64 hidden) and a word-level tokenizer made from scratch, warmed up on "
        f"random play ({setting.warm_up_steps} steps, final loss {warm_loss:.3f}); self-play only (GRPO, "
        f"role-conditioned baselines), {setting.iterations} iterations x {setting.groups} deals x "
        f"{setting.group_size} games, learning rate {setting.learning_rate:g}; greedy evaluation on "
        f"{setting.eval_games} dev games per held-out opponent; arena {setting.arena_games} games per pair; "
        f"CPU, 1 thread; whole run {total_s / 60:.1f} min"
    )
    record(
        setting.name,
        "Self-play demonstration: Kuhn poker (CPU)",
        setup,
        table,
        {"setting": setting.__dict__, "warm_up_loss": warm_loss, "runs": runs, "total_s": total_s},
        command=" ".join(["python benchmarks/self_play.py", *sys.argv[1:]]),
    )
    plot(setting, runs)


def plot(setting: Setting, runs: list[dict]) -> None:
    """``results/<name>.png``: win rate against the held-out players per checkpoint, and the arena's ratings."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (rates, elo) = plt.subplots(1, 2, figsize=(11, 4))
    for run in runs:
        style = "-" if run["seed"] == setting.seeds[0] else "--"
        iterations = sorted(run["evaluations"])
        for opponent, color in zip(OPPONENTS, ("tab:blue", "tab:red")):
            values = [run["evaluations"][i][opponent]["win_rate"] for i in iterations]
            rates.plot(iterations, values, style, color=color, label=f"vs {opponent}, seed {run['seed']}")
        checkpoints = [r for r in run["arena"] if r["policy"].startswith("iteration")]
        checkpoints.sort(key=lambda r: int(r["policy"].split()[1]))
        xs = [int(r["policy"].split()[1]) for r in checkpoints]
        elo.errorbar(
            xs,
            [r["rating"] for r in checkpoints],
            yerr=[[r["rating"] - r["low"] for r in checkpoints], [r["high"] - r["rating"] for r in checkpoints]],
            fmt=style + "o",
            color="tab:green",
            label=f"checkpoints, seed {run['seed']}",
        )
        for rating in run["arena"]:
            if rating["policy"] in OPPONENTS:
                elo.axhline(rating["rating"], linestyle=":", color="grey")
                elo.annotate(rating["policy"], (0, rating["rating"]), fontsize=8)
    rates.set(xlabel="iteration", ylabel="greedy win rate", title="Held-out scripted opponents")
    rates.legend(fontsize=7)
    elo.set(xlabel="iteration", ylabel="arena rating (Elo scale)", title="Arena ratings of checkpoints")
    elo.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(RESULTS / f"{setting.name}.png", dpi=100)


if __name__ == "__main__":
    main()
