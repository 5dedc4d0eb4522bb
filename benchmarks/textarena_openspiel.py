"""TextArena's and OpenSpiel's games (environments/textarena, environments/openspiel): scripted matches per game.

Per game: ``--games`` games of ``random`` against ``random`` (and, where a stronger scripted player exists,
OpenSpiel's ``mcts`` against ``random``, seats alternating), with each seat's win rate, the draw rate, the
share of games that TextArena ended because of a malformed or illegal move, the mean number of moves, and
the mean latency of one AEC ``step`` (the scripted player's own time excluded). Writes
``benchmarks/results/textarena_openspiel.{json,md}``.

    python benchmarks/textarena_openspiel.py [--games 20]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import random
import statistics
import time
from pathlib import Path
from typing import Any

from agentgym.environments.openspiel import game as openspiel
from agentgym.environments.textarena import game as textarena
from agentgym.multiagent import TextGame

RESULTS = Path(__file__).parent / "results"
#: Words in TextArena's reasons for ending a game that say a move was malformed or illegal.
INVALID_WORDS = ("invalid", "illegal", "format", "must ", "use [", "please use", "not your", "already")


def play(game: TextGame, players: dict[str, str], seed: int) -> tuple[Any, int, float]:
    """One game: its outcome, its number of moves and the seconds spent in ``step``."""
    game.reset(seed=seed)
    rng = random.Random(seed)
    moves, stepping = 0, 0.0
    with contextlib.redirect_stdout(io.StringIO()):  # a few TextArena games print
        for agent in game.agent_iter():
            _, _, terminated, truncated, _ = game.last()
            move = None if terminated or truncated else game.play(players.get(agent, "random"), agent, rng)
            started = time.perf_counter()
            game.step(move)
            stepping += time.perf_counter() - started
            moves += move is not None
    return game.outcome, moves, stepping


def match(engine: str, name: str, game: TextGame, strong: str, games: int) -> dict[str, Any]:
    """``games`` games of ``strong`` (in seat 0 on even seeds, seat 1 on odd ones) against ``random``."""
    wins = dict.fromkeys(game.possible_agents, 0)
    strong_wins = draws = invalid = moves = 0
    latencies = []
    for seed in range(games):
        seat = game.possible_agents[seed % 2]
        outcome, count, stepping = play(game, {seat: strong}, seed)
        moves += count
        latencies.append(stepping / max(count, 1))
        if outcome.winner is None:
            draws += 1
        else:
            wins[outcome.winner] += 1
            strong_wins += outcome.winner == seat
        invalid += any(word in outcome.reason.lower() for word in INVALID_WORDS)
    return {
        "engine": engine,
        "game": name,
        "players": len(game.possible_agents),
        "match": f"{strong} vs random",
        "games": games,
        "seat_win_rates": {agent: round(count / games, 3) for agent, count in wins.items()},
        "first_player_win_rate": round(strong_wins / games, 3) if strong != "random" else None,
        "draw_rate": round(draws / games, 3),
        "invalid_end_rate": round(invalid / games, 3) if engine == "textarena" else None,
        "mean_moves": round(moves / games, 1),
        "step_ms": round(1000 * statistics.mean(latencies), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20)
    args = parser.parse_args()
    rows = []
    for name in textarena.list_games():
        rows.append(match("textarena", name, textarena.make_game(name), "random", args.games))
    for name in openspiel.list_games():
        game = openspiel.make_game(name)
        rows.append(match("openspiel", name, game, "random", args.games))
        if game.strong_player != "random":
            rows.append(match("openspiel", name, game, game.strong_player, args.games))
    RESULTS.mkdir(exist_ok=True)
    meta = {"games_per_match": args.games, "python": platform.python_version(), "machine": platform.machine()}
    (RESULTS / "textarena_openspiel.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    lines = [
        "# TextArena and OpenSpiel games: scripted matches",
        "",
        f"{args.games} games per match (`python benchmarks/textarena_openspiel.py`), seeds 0..{args.games - 1}. "
        "Seat win rates are of seat 0 / seat 1 (/ ...); in `mcts vs random`, MCTS sits in seat 0 on even seeds "
        "and seat 1 on odd ones, and its own win rate is given. `invalid end`: TextArena ended the game because "
        "of a malformed or illegal move (its reason says so), which is how most games of TextArena's random "
        "player end where TextArena does not list the legal moves. `step ms`: one AEC step, the scripted "
        "player's thinking excluded; on 2 shared cores, compare rows, not machines.",
        "",
        "| engine | game | players | match | seat win rates | strong player wins | draws | invalid end | "
        "moves | step ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        seats = " / ".join(f"{rate:.2f}" for rate in row["seat_win_rates"].values())
        strong = "" if row["first_player_win_rate"] is None else f"{row['first_player_win_rate']:.2f}"
        invalid = "" if row["invalid_end_rate"] is None else f"{row['invalid_end_rate']:.2f}"
        lines.append(
            f"| {row['engine']} | {row['game']} | {row['players']} | {row['match']} | {seats} | {strong} | "
            f"{row['draw_rate']:.2f} | {invalid} | {row['mean_moves']} | {row['step_ms']} |"
        )
    (RESULTS / "textarena_openspiel.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
