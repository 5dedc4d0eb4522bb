"""Per-move latency of agentgym's multi-agent games vs TextArena's same games, in one process.

For each game that both frameworks have, random games are played to their end in each and
every move of an agent loop is timed: getting the acting agent's observation, then playing
its move. Only the framework calls are timed, never the choice of the move.

- agentgym: ``game.last()`` (which calls ``game.observe(agent)``: the full text prompt with
  rules, visible history, view and legal moves) + ``game.step(reply)``, in the
  ``agent_iter()`` loop; the moves are the game's own ``random`` player. The dead steps
  (``step(None)``) after the end are not moves and are not timed.
- TextArena ``-raw`` ids (no wrappers): ``env.get_observation()`` + ``env.step(action)``.
  A raw observation is only the list of messages that reached the player since its last
  turn, not a prompt.
- TextArena default ids (``LLMObservationWrapper`` or ``GameMessagesObservationWrapper``,
  plus ``ActionFormattingWrapper``): the same two calls; the observation wrapper joins the
  player's whole message history into one string, like agentgym's observation. These
  wrappers never clear their history on ``reset``, so a fresh env is made for every game
  (outside the timing), in both TextArena variants.

TextArena moves are random moves written in each env's own action syntax (its regex),
chosen from the env's state so that they are legal: ``[4]`` (TicTacToe), ``[col 3]``
(ConnectFour), ``[check]``/``[bet]``/``[call]``/``[fold]`` (KuhnPoker), ``[check]``/``[bet]``/
``[raise]``/``[call]``/``[fold]`` (LeducHoldem), ``[Bid: 3, 4]``/``[Call]`` (LiarsDice),
``[Offer: 2 Wood -> 3 Wheat]``/``[Accept]``/``[Deny]`` or plain talk (SimpleNegotiation),
``[rock]``/``[paper]``/``[scissors]`` (IteratedRockPaperScissors); the illegal ones are
counted (by the env's ``set_invalid_move``). Each framework plays games with seeds
``0..games-1`` and a move generator seeded with 0. The games differ in length where the
registered TextArena games do (KuhnPoker-v0 plays 3 hands, LeducHoldem 5, agentgym's one):
see the moves per game. TextArena 0.7.4 has LeducHoldem's registrations commented out; it
is built from its entry point (``LeducHoldemEnv()``, 5 hands), raw and with the wrappers its
commented registration names (``LLMObservationWrapper``, ``ActionFormattingWrapper``).

TextArena is a benchmark-only dependency: ``pip install textarena``.

    python benchmarks/game_latency.py                       # writes results/game_latency.{md,json}
    python benchmarks/game_latency.py --game TicTacToe-v0 --games 500 --no-write
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from recording import record

import agentgym
from agentgym.multiagent import make_game

try:
    import textarena as ta
    from textarena.envs import DEFAULT_WRAPPERS
    from textarena.envs.LeducHoldem.env import LeducHoldemEnv
    from textarena.envs.registration import ENV_REGISTRY
except ImportError:
    sys.exit("this benchmark compares with TextArena: pip install textarena")

#: A random move in TextArena's syntax: (env, acting player id, generator) -> action.
Mover = Callable[[Any, int, random.Random], str]
#: TextArena stops a game that runs longer than this (none does: a safety net).
MAX_TEXTARENA_MOVES = 10_000


# ---- random moves in TextArena's action syntax (read from each env's step and regex) ------------


def tictactoe_move(env: Any, player: int, rng: random.Random) -> str:
    board = env.state.game_state["board"]  # 3x3 of "" / "X" / "O"; cells 0-8 row by row
    return f"[{rng.choice([3 * r + c for r in range(3) for c in range(3) if board[r][c] == ''])}]"


def connect_four_move(env: Any, player: int, rng: random.Random) -> str:
    board = env.state.game_state["board"]  # rows top first; a column is open while its top cell is "."
    return f"[col {rng.choice([c for c in range(len(board[0])) if board[0][c] == '.'])}]"


def kuhn_poker_move(env: Any, player: int, rng: random.Random) -> str:
    return f"[{rng.choice(list(env.state.game_state['current_legal_action_tree']))}]"


def leduc_holdem_move(env: Any, player: int, rng: random.Random) -> str:
    return f"[{rng.choice(sorted(env._legal(env.state.game_state)))}]"


def liars_dice_move(env: Any, player: int, rng: random.Random) -> str:
    """Uniform over every legal raise (neither quantity nor face lower, not the same bid) and the call."""
    state = env.state.game_state
    quantity, face = state["current_bid"]["quantity"], state["current_bid"]["face_value"]
    dice = sum(state["remaining_dice"].values())
    moves = [
        f"[Bid: {q}, {f}]"
        for q in range(max(quantity, 1), dice + 1)
        for f in range(max(face, 1), 7)
        if (q, f) != (quantity, face)
    ]
    if state["last_bidder_id"] is not None:
        moves.append("[Call]")
    return rng.choice(moves)


TEXTARENA_RESOURCES = ("Wheat", "Wood", "Sheep", "Brick", "Ore")


def negotiation_move(env: Any, player: int, rng: random.Random) -> str:
    """Like agentgym's ``random`` player: answer an offer (accept if affordable, deny, counter) or offer, or talk."""
    state = env.state.game_state
    held = state["player_resources"][player]
    offer = state["current_offer"]
    if offer is not None and offer["from_player"] != player:
        choice = rng.randrange(3)
        if choice == 0 and all(held[name] >= count for name, count in offer["requested_resources"].items()):
            return "[Accept]"
        if choice <= 1:
            return "[Deny]"
    if rng.random() < 0.15:
        return f"Let's trade, I could use some {rng.choice(TEXTARENA_RESOURCES)}."
    have = [name for name in TEXTARENA_RESOURCES if held[name] > 0]
    give = rng.sample(have, rng.randint(1, min(2, len(have))))  # TextArena needs both sides non-empty
    get = rng.sample([name for name in TEXTARENA_RESOURCES if name not in give], rng.randint(1, 2))
    offered = ", ".join(f"{rng.randint(1, min(held[name], 5))} {name}" for name in give)
    requested = ", ".join(f"{rng.randint(1, 5)} {name}" for name in get)
    return f"[Offer: {offered} -> {requested}]"


def rock_paper_scissors_move(env: Any, player: int, rng: random.Random) -> str:
    return f"[{rng.choice(('rock', 'paper', 'scissors'))}]"


@dataclass(frozen=True)
class Pair:
    """One game in both frameworks."""

    game: str  # agentgym game id
    textarena: str  # TextArena id of the default (wrapped) env; its raw env is ``<id>-raw``
    move: Mover


PAIRS = [
    Pair("TicTacToe-v0", "TicTacToe-v0", tictactoe_move),
    Pair("ConnectFour-v0", "ConnectFour-v0", connect_four_move),
    Pair("KuhnPoker-v0", "KuhnPoker-v0", kuhn_poker_move),
    Pair("LeducHoldem-v0", "LeducHoldem-v0", leduc_holdem_move),
    Pair("LiarsDice-v0", "LiarsDice-v0", liars_dice_move),
    Pair("SimpleNegotiation-v0", "SimpleNegotiation-v0", negotiation_move),
    Pair("RockPaperScissors-v0", "IteratedRockPaperScissors-v0", rock_paper_scissors_move),
]


def make_textarena(env_id: str, raw: bool) -> Any:
    """A new TextArena env: ``<env_id>-raw`` or ``env_id`` with its default wrappers."""
    if env_id in ENV_REGISTRY:
        return ta.make(f"{env_id}-raw" if raw else env_id)
    if env_id != "LeducHoldem-v0":
        raise KeyError(f"{env_id} is not in TextArena's registry")
    env = LeducHoldemEnv()  # unregistered in textarena 0.7.4: what its commented-out registration builds
    if not raw:
        for wrapper in DEFAULT_WRAPPERS:
            env = wrapper(env)
    return env


def textarena_label(env_id: str, raw: bool) -> str:
    if env_id == "LeducHoldem-v0":
        return "LeducHoldemEnv() (unregistered)" if raw else "LeducHoldemEnv() + default wrappers"
    return f"{env_id}-raw" if raw else env_id


# ---- the timed loops ----------------------------------------------------------------------------


@dataclass
class Run:
    """One framework's timings on one game."""

    move_ns: list[int]
    games: int
    finished: int
    illegal: int
    observation_chars: int

    def row(self) -> dict[str, float]:
        moves = len(self.move_ns)
        return {
            "games": self.games,
            "finished": self.finished,
            "moves": moves,
            "moves_per_game": moves / self.games,
            "illegal_moves": self.illegal,
            "illegal_fraction": self.illegal / moves if moves else 0.0,
            "median_us": statistics.median(self.move_ns) / 1e3,
            "p99_us": percentile(self.move_ns, 0.99) / 1e3,
            "mean_us": statistics.fmean(self.move_ns) / 1e3,
            "mean_observation_chars": self.observation_chars / moves if moves else 0.0,
        }


def percentile(samples: list[int], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_agentgym(game_id: str, games: int) -> Run:
    game = make_game(game_id)
    rng = random.Random(0)
    move_ns: list[int] = []
    finished = illegal = chars = 0
    clock = time.perf_counter_ns
    for seed in range(games):
        game.reset(seed=seed)
        for agent in game.agent_iter():
            start = clock()
            observation, _, terminated, truncated, _ = game.last()
            observed = clock() - start
            if terminated or truncated:
                game.step(None)  # PettingZoo's dead step: not a move
                continue
            reply = game.play("random", agent, rng)
            start = clock()
            game.step(reply)
            move_ns.append(observed + clock() - start)
            illegal += game.infos[agent]["invalid_action"]
            chars += len(observation["text"])
        finished += game.outcome is not None
    return Run(move_ns, games, finished, illegal, chars)


def run_textarena(env_id: str, raw: bool, move: Mover, games: int) -> Run:
    rng = random.Random(0)
    move_ns: list[int] = []
    finished = chars = 0
    illegal = [0]
    clock = time.perf_counter_ns
    for seed in range(games):
        env = make_textarena(env_id, raw)  # the wrappers keep their history across resets: one env per game
        env.reset(num_players=2, seed=seed)
        state = env.state
        set_invalid_move = state.set_invalid_move

        def counted(*args: Any, _original: Callable[..., Any] = set_invalid_move, **kwargs: Any) -> Any:
            illegal[0] += 1
            return _original(*args, **kwargs)

        state.set_invalid_move = counted
        done = False
        for _ in range(MAX_TEXTARENA_MOVES):
            start = clock()
            player, observation = env.get_observation()
            observed = clock() - start
            action = move(env, player, rng)
            start = clock()
            done, _ = env.step(action)
            move_ns.append(observed + clock() - start)
            chars += len(observation) if isinstance(observation, str) else sum(len(m[1]) for m in observation)
            if done:
                break
        finished += done
        env.close()
    return Run(move_ns, games, finished, illegal[0], chars)


def measure(pair: Pair, games: int, warmup: int) -> dict[str, Any]:
    run_agentgym(pair.game, warmup)
    run_textarena(pair.textarena, True, pair.move, warmup)
    run_textarena(pair.textarena, False, pair.move, warmup)
    agentgym_row = run_agentgym(pair.game, games).row()
    raw_row = run_textarena(pair.textarena, True, pair.move, games).row()
    wrapped_row = run_textarena(pair.textarena, False, pair.move, games).row()
    return {
        "game": pair.game,
        "textarena_raw": textarena_label(pair.textarena, raw=True),
        "textarena_default": textarena_label(pair.textarena, raw=False),
        "agentgym": agentgym_row,
        "textarena_raw_run": raw_row,
        "textarena_default_run": wrapped_row,
        "raw_over_agentgym": raw_row["median_us"] / agentgym_row["median_us"],
        "default_over_agentgym": wrapped_row["median_us"] / agentgym_row["median_us"],
    }


def format_rows(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| game | TextArena env (raw / default) | games | moves agentgym / TextArena "
        "| agentgym median / p99 µs | TextArena raw median / p99 µs | raw ÷ agentgym "
        "| TextArena default median / p99 µs | default ÷ agentgym | TextArena illegal moves |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        ours, raw, wrapped = row["agentgym"], row["textarena_raw_run"], row["textarena_default_run"]
        illegal = raw["illegal_moves"] + wrapped["illegal_moves"]
        lines.append(
            f"| {row['game']} | {row['textarena_raw']} / {row['textarena_default']} | {ours['games']} | "
            f"{ours['moves']:,} / {raw['moves']:,} | {ours['median_us']:.1f} / {ours['p99_us']:.1f} | "
            f"{raw['median_us']:.1f} / {raw['p99_us']:.1f} | {row['raw_over_agentgym']:.2f} | "
            f"{wrapped['median_us']:.1f} / {wrapped['p99_us']:.1f} | {row['default_over_agentgym']:.2f} | "
            f"{illegal} ({illegal / (raw['moves'] + wrapped['moves']):.1%}) |"
        )
    return "\n".join(lines)


NOTES = """
A move = getting the acting agent's observation + stepping its move (agentgym: `game.last()` + `game.step(reply)`;
TextArena: `env.get_observation()` + `env.step(action)`); move choice untimed. Ratios are of the medians (> 1: TextArena
slower). TextArena raw observations are the new messages since the player's last turn (a list, not a prompt); the
default ids' wrappers join the player's whole history into one string each turn, as agentgym's observation does. Mean
observation size in characters (agentgym / TextArena default): {sizes}. Every game in every framework ran to its end."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", action="append", help="agentgym game id (repeatable; default: all seven)")
    parser.add_argument("--games", type=int, default=4000, help="random games per game and framework")
    parser.add_argument("--warmup", type=int, default=50, help="untimed games per game and framework first")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    args = parser.parse_args()

    pairs = [pair for pair in PAIRS if not args.game or pair.game in args.game]
    if args.game and len(pairs) != len(set(args.game)):
        parser.error(f"--game must be among {', '.join(pair.game for pair in PAIRS)}")
    rows = [measure(pair, args.games, args.warmup) for pair in pairs]
    sizes = ", ".join(
        f"{row['game'].removesuffix('-v0')} {row['agentgym']['mean_observation_chars']:,.0f} / "
        f"{row['textarena_default_run']['mean_observation_chars']:,.0f}"
        for row in rows
    )
    unfinished = sum(
        row[run]["games"] - row[run]["finished"]
        for row in rows
        for run in ("agentgym", "textarena_raw_run", "textarena_default_run")
    )
    notes = NOTES.format(sizes=sizes)
    if unfinished:
        notes = notes.replace("Every game in every framework ran to its end.", f"{unfinished} games did NOT end.")
    table = format_rows(rows) + "\n" + notes
    print(table)
    if args.no_write:
        return
    setup = (
        f"{args.games} random games per game and framework after {args.warmup} untimed, seeds 0..{args.games - 1}; "
        f"textarena {version('textarena')}, agentgym {agentgym.__version__}"
    )
    record("game_latency", "Game move latency: agentgym vs TextArena", setup, table, rows)


if __name__ == "__main__":
    main()
