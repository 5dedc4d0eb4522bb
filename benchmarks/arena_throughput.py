"""Arena throughput: games and moves per second of ``run_arena`` vs a bare loop over the same games.

Each game pits its strongest scripted player against ``random`` (TicTacToe minimax,
ConnectFour search, KuhnPoker nash, LiarsDice probabilistic), one process, one core.

- arena: ``run_arena`` at concurrency 64 (64 workers, each with its own game), writing
  every match with its turns (observation, reply) to ``episodes.jsonl`` in a temporary
  folder, as ``agentgym arena`` does; the wall time covers the whole call (opening and
  closing the folder included).
- bare: the same matches (``schedule``: same seeds, same seats, same player generators,
  hence the same moves) played by a plain PettingZoo loop that calls the players directly:
  ``agent_iter``, ``last`` (which builds the observation text, as the arena does), the
  player's move, ``step``; no asyncio, no records, no writing.

Both play the same number of moves (checked). Untimed warm-up games first fill the
players' caches (minimax values, binomial tails) for both. Where the player itself is
slow (ConnectFour's depth-5 search) the two rates converge: the arena's cost is per move
and per match, not per search node.

    python benchmarks/arena_throughput.py                 # writes results/arena_throughput.{md,json}
    python benchmarks/arena_throughput.py --game KuhnPoker-v0 --games 1000 --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from recording import record

import agentgym
from agentgym.evaluation.arena import run_arena, schedule
from agentgym.evaluation.plan import stable_seed
from agentgym.evaluation.records import MatchRecord
from agentgym.multiagent import make_game

#: (game, strong player, default games); the other player is ``random``.
PAIRINGS = [
    ("TicTacToe-v0", "minimax", 4000),
    ("ConnectFour-v0", "search", 300),
    ("KuhnPoker-v0", "nash", 8000),
    ("LiarsDice-v0", "probabilistic", 2000),
]


def bare(game_id: str, specs: list[str], games: int, seed: int) -> tuple[int, int, float]:
    """Matches, moves and seconds of the plain loop over the arena's schedule."""
    game = make_game(game_id)
    matches = schedule(game_id, specs, games, seed)
    moves, clock = 0, time.perf_counter()
    for match in matches:
        seats = dict(zip(game.possible_agents, match.seats))
        rngs = {agent: random.Random(stable_seed(match.seed, agent)) for agent in seats}  # as the arena's Episode.rng
        game.reset(seed=match.seed)
        for agent in game.agent_iter():
            _, _, terminated, truncated, _ = game.last()
            if terminated or truncated:
                game.step(None)
                continue
            game.step(game.play(seats[agent], agent, rngs[agent]))
            moves += 1
    return len(matches), moves, time.perf_counter() - clock


def arena(game_id: str, specs: list[str], games: int, seed: int, concurrency: int) -> tuple[int, int, float, int]:
    """Matches, moves, seconds and bytes written of ``run_arena`` into a temporary folder."""
    moves = 0

    def count(record: MatchRecord) -> None:
        nonlocal moves
        moves += len(record.turns)

    with tempfile.TemporaryDirectory() as out:
        clock = time.perf_counter()
        played = asyncio.run(
            run_arena(game_id, specs, out, games_per_pair=games, concurrency=concurrency, seed=seed, on_match=count)
        )
        seconds = time.perf_counter() - clock
        written = sum(path.stat().st_size for path in Path(out).iterdir())
    return played, moves, seconds, written


def measure(game_id: str, player: str, games: int, concurrency: int, seed: int) -> dict[str, Any]:
    specs = [player, "random"]
    bare(game_id, specs, max(10, games // 5), seed + 1)  # warm-up: fill the players' caches
    arena(game_id, specs, max(10, games // 20), seed + 2, concurrency)
    bare_games, bare_moves, bare_s = bare(game_id, specs, games, seed)
    arena_games, arena_moves, arena_s, written = arena(game_id, specs, games, seed, concurrency)
    assert (arena_games, arena_moves) == (bare_games, bare_moves), (arena_games, arena_moves, bare_games, bare_moves)
    return {
        "game": game_id,
        "players": specs,
        "games": bare_games,
        "moves": bare_moves,
        "bare_games_per_s": bare_games / bare_s,
        "bare_moves_per_s": bare_moves / bare_s,
        "arena_games_per_s": arena_games / arena_s,
        "arena_moves_per_s": arena_moves / arena_s,
        "arena_over_bare": bare_s / arena_s,
        "arena_bytes_written": written,
        "concurrency": concurrency,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", action="append", help="game id (repeatable; default: the four below)")
    parser.add_argument("--games", type=int, help="games per game (default: 4000, 300, 8000, 2000)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    pairings = [pairing for pairing in PAIRINGS if not args.game or pairing[0] in args.game]
    if args.game and len(pairings) != len(set(args.game)):
        parser.error(f"--game must be among {', '.join(pairing[0] for pairing in PAIRINGS)}")
    rows = [
        measure(game_id, player, args.games or games, args.concurrency, args.seed)
        for game_id, player, games in pairings
    ]
    lines = [
        "| game | players | games | moves | bare games/s | bare moves/s | arena games/s | arena moves/s "
        "| arena ÷ bare | trajectories written |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['game']} | {' vs '.join(row['players'])} | {row['games']:,} | {row['moves']:,} | "
            f"{row['bare_games_per_s']:,.0f} | {row['bare_moves_per_s']:,.0f} | {row['arena_games_per_s']:,.0f} | "
            f"{row['arena_moves_per_s']:,.0f} | {row['arena_over_bare']:.0%} | "
            f"{row['arena_bytes_written'] / 1e6:.1f} MB |"
        )
    table = "\n".join(lines)
    print(table)
    if args.no_write:
        return
    setup = (
        f"scripted players, arena concurrency {args.concurrency} writing trajectories to a temporary folder, "
        f"seed {args.seed}; agentgym {agentgym.__version__}"
    )
    record("arena_throughput", "Arena throughput", setup, table, rows)


if __name__ == "__main__":
    main()
