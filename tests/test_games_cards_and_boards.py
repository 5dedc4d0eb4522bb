"""ConnectFour, Kuhn poker and Leduc hold'em: contract, rules, hidden information and scripted players."""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics
from collections import defaultdict
from collections.abc import Callable
from importlib import resources

import pytest

import agentgym  # noqa: F401  (registers the games)
from agentgym.contract.core import InvalidAction
from agentgym.environments.multiagent import kuhn_poker, leduc_holdem
from agentgym.multiagent import TextGame, make_game

GAME_IDS = ["ConnectFour-v0", "KuhnPoker-v0", "LeducHoldem-v0"]
VIEW_IDS = [
    "ConnectFour-vs-Random-v0",
    "ConnectFour-vs-Search-v0",
    "KuhnPoker-vs-Random-v0",
    "KuhnPoker-vs-Nash-v0",
    "LeducHoldem-vs-Random-v0",
    "LeducHoldem-vs-CFR-v0",
]
#: A move's probability for an agent in a game state: (game, agent) -> move -> probability.
Policy = Callable[[TextGame, str], dict[str, float]]


def uniform(game: TextGame, agent: str) -> dict[str, float]:
    moves = game.legal_moves(agent)
    return dict.fromkeys(moves, 1 / len(moves))


def play_game(game: TextGame, players: dict[str, str], rng: random.Random, seed: int | None = None) -> float:
    """Play one game with scripted players; return player_0's reward."""
    game.reset(seed=seed)
    while game.outcome is None:
        agent = game.agent_selection
        game.step(game.play(players[agent], agent, rng))
    return game.outcome.rewards["player_0"]


def play_moves(game: TextGame, moves: list[str]) -> None:
    for move in moves:
        assert game.outcome is None
        game.step(move)
        assert not game.infos[game.possible_agents[0]]["invalid_action"], move


def reset_until(game: TextGame, wanted: Callable[[TextGame], bool]) -> int:
    """Reset with seeds 0, 1, ... until the deal is ``wanted``; return the seed."""
    for seed in range(10_000):
        game.reset(seed=seed)
        if wanted(game):
            return seed
    raise AssertionError("no seed deals the wanted cards")


def exact_value(game: TextGame, seed: int, policies: dict[str, Policy], moves: tuple[str, ...] = ()) -> float:
    """player_0's expected reward after ``moves`` in game ``seed``, walking every move with positive probability."""
    game.reset(seed=seed)
    for move in moves:
        game.step(move)
    assert not any(info["invalid_action"] for info in game.infos.values())
    if game.outcome is not None:
        return game.outcome.rewards["player_0"]
    agent = game.agent_selection
    probabilities = policies[agent](game, agent)
    return sum(
        probability * exact_value(game, seed, policies, (*moves, move))
        for move, probability in probabilities.items()
        if probability > 0
    )


def exact_value_over_deals(game_id: str, policies: dict[str, Policy], deal: Callable[[TextGame], tuple]) -> float:
    """player_0's expected reward over all equally likely deals (found by resetting with seeds 0, 1, ...)."""
    game = make_game(game_id)
    seeds: dict[tuple, int] = {}
    for seed in range(5_000):
        game.reset(seed=seed)
        seeds.setdefault(deal(game), seed)
    return statistics.fmean(exact_value(game, seed, policies) for seed in seeds.values())


# ---- ConnectFour --------------------------------------------------------------------------------


def board(columns: str) -> TextGame:
    """A ConnectFour game after the moves ``columns`` (one digit a move)."""
    game = make_game("ConnectFour-v0")
    game.reset(seed=0)
    play_moves(game, list(columns))
    return game


@pytest.mark.parametrize(
    ("columns", "winner"),
    [
        ("1212121", "player_0"),  # vertical
        ("1122334", "player_0"),  # horizontal
        ("72736465", "player_1"),  # horizontal, second player
        ("12233434474", "player_0"),  # diagonal /
        ("76655454414", "player_0"),  # diagonal \
    ],
)
def test_connect_four_lines_win(columns: str, winner: str) -> None:
    game = board(columns[:-1])
    assert game.outcome is None
    game.step(columns[-1])
    assert game.outcome is not None and game.outcome.winner == winner
    assert game.rewards[winner] == 1.0 and "four in a row" in game.infos["player_0"]["reason"]


def test_connect_four_gravity_and_move_syntax() -> None:
    game = board("4")
    game.step("column 4")
    game.step("d")
    game.step("Action: 5")
    assert [game.cell(row, 3) for row in range(4)] == ["X", "O", "X", "."] and game.cell(0, 4) == "O"
    view = game.observe("player_0")["text"]
    assert "1 2 3 4 5 6 7\n" in view and view.endswith(
        "Legal moves: 1, 2, 3, 4, 5, 6, 7. End your reply with 'Action: <move>'."
    )


def test_connect_four_full_column_is_illegal() -> None:
    game = board("111111")
    assert "1" not in game.legal_moves(game.agent_selection)
    with pytest.raises(InvalidAction, match="column 1 is full"):
        game._apply(game.agent_selection, "1")
    game.step("1")
    assert game.infos[game.agent_selection]["invalid_action"]
    assert "column 1 is full" in game.observe(game.agent_selection)["text"]


def test_connect_four_full_board_is_a_draw() -> None:
    game = board("527321255352474421577234343376616576661141")
    assert game.moves == 42 and game.outcome is not None and game.outcome.winner is None
    assert all(game.terminations.values()) and not any(game.truncations.values())
    assert game.rewards == {"player_0": 0.0, "player_1": 0.0} and "draw" in game.outcome.reason


def test_connect_four_search_beats_random() -> None:
    game = make_game("ConnectFour-v0")
    rng = random.Random(0)
    wins = 0
    for index in range(40):
        search = game.possible_agents[index % 2]
        players = {agent: "search" if agent == search else "random" for agent in game.possible_agents}
        play_game(game, players, rng, seed=index)
        wins += game.outcome.winner == search
    print(f"ConnectFour: search beats random in {wins}/40 games")
    assert wins >= 38


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        ("121212", "1"),  # X wins vertically (rather than blocking O's column 2)
        ("1212126", "2"),  # O wins vertically (rather than blocking X's column 1)
        ("17161", "1"),  # O blocks X's vertical three
        ("11223", "4"),  # O blocks X's horizontal three
        ("112233", "4"),  # X completes the bottom row (O threatens the row above)
        ("1122337", "4"),  # O blocks the bottom row
    ],
)
def test_connect_four_search_takes_wins_and_blocks_losses(columns: str, expected: str) -> None:
    for seed in range(5):
        game = board(columns)
        assert game.play("search", game.agent_selection, random.Random(seed)) == expected


# ---- Kuhn poker ---------------------------------------------------------------------------------


def kuhn_deal(game: TextGame) -> tuple:
    return (game.cards["player_0"], game.cards["player_1"])


@pytest.mark.parametrize("alpha", [0.0, 1 / 6, 1 / 3])
def test_kuhn_nash_value_is_minus_one_eighteenth_exactly(alpha: float) -> None:
    table = kuhn_poker.nash_strategy(alpha)

    def nash(game: TextGame, agent: str) -> dict[str, float]:
        return table[game.infoset(agent)]

    value = exact_value_over_deals("KuhnPoker-v0", {"player_0": nash, "player_1": nash}, kuhn_deal)
    assert math.isclose(value, -1 / 18, abs_tol=1e-12)


def test_kuhn_nash_value_by_simulation() -> None:
    game = make_game("KuhnPoker-v0")
    rng = random.Random(1)
    game.reset(seed=1)
    results = [play_game(game, {"player_0": "nash", "player_1": "nash"}, rng) for _ in range(20_000)]
    mean, error = statistics.fmean(results), statistics.stdev(results) / math.sqrt(len(results))
    print(f"Kuhn: nash vs nash, player_0 wins {mean:.4f} ± {error:.4f} chips/hand over 20,000 hands (theory -1/18)")
    assert abs(mean + 1 / 18) < 3 * error


def test_kuhn_nash_beats_random() -> None:
    def nash(game: TextGame, agent: str) -> dict[str, float]:
        return kuhn_poker.nash_probabilities(game, agent)

    as_first = exact_value_over_deals("KuhnPoker-v0", {"player_0": nash, "player_1": uniform}, kuhn_deal)
    as_second = -exact_value_over_deals("KuhnPoker-v0", {"player_0": uniform, "player_1": nash}, kuhn_deal)
    print(f"Kuhn: nash vs random wins {as_first:.4f} (seat 0) and {as_second:.4f} (seat 1) chips/hand")
    assert math.isclose(as_first, 1 / 6) and math.isclose(as_second, 1 / 6)
    game = make_game("KuhnPoker-v0")
    rng = random.Random(2)
    game.reset(seed=2)
    results = [play_game(game, {"player_0": "nash", "player_1": "random"}, rng) for _ in range(4_000)]
    assert statistics.fmean(results) > 0.08  # 1/6 expected; the standard error is about 0.02


@pytest.mark.parametrize(
    ("moves", "reward", "reason"),
    [
        ("check check", 1.0, "showdown: K beats J"),
        ("bet call", 2.0, "showdown: K beats J"),
        ("check bet call", 2.0, "showdown: K beats J"),
        ("bet fold", 1.0, "player_1 folded"),
        ("check bet fold", -1.0, "player_0 folded"),
    ],
)
def test_kuhn_payoffs(moves: str, reward: float, reason: str) -> None:
    game = make_game("KuhnPoker-v0")
    reset_until(game, lambda g: kuhn_deal(g) == ("K", "J"))
    play_moves(game, moves.split())
    assert game.outcome.rewards == {"player_0": reward, "player_1": -reward}
    assert game.outcome.reason == reason


def test_kuhn_legal_moves() -> None:
    game = make_game("KuhnPoker-v0")
    game.reset(seed=0)
    assert game.legal_moves("player_0") == ["check", "bet"] and game.legal_moves("player_1") == []
    with pytest.raises(InvalidAction, match="check and bet"):
        game._apply("player_0", "call")
    game.step("BET")
    assert game.legal_moves("player_1") == ["call", "fold"]
    assert "To call you put in 1 chip." in game.observe("player_1")["text"]


# ---- hidden information -------------------------------------------------------------------------


def visible_deal(game: TextGame, agent: str) -> tuple:
    """The cards ``agent`` may see before a showdown: its own, and Leduc's public card once dealt."""
    return (game.cards[agent], getattr(game, "public", None))


@pytest.mark.parametrize("game_id", ["KuhnPoker-v0", "LeducHoldem-v0"])
def test_no_card_leaks_before_showdown(game_id: str) -> None:
    """What an agent sees never depends on the opponent's card (until a showdown reveals it)."""
    game = make_game(game_id)
    seen: dict[tuple, set[str]] = defaultdict(set)
    opponents: dict[tuple, set[str]] = defaultdict(set)
    showdowns = 0
    for line, seed in itertools.product(range(12), range(40)):
        game.reset(seed=seed)
        rng = random.Random(line)  # legal moves do not depend on the cards: the same line of play for every deal
        for step in itertools.count():
            for agent in game.possible_agents:
                other = next(name for name in game.possible_agents if name != agent)
                if game.outcome is None or "folded" in game.outcome.reason:
                    info = {key: value for key, value in game.infos[agent].items() if key != "game_seed"}
                    key = (line, step, agent, visible_deal(game, agent))
                    seen[key].add(game.observe(agent)["text"] + json.dumps(info))
                    opponents[key].add(game.cards[other])
                else:
                    text = game.observe(agent)["text"]
                    assert f"{other} shows {game.cards[other]}" in text  # the showdown shows both cards
                    showdowns += 1
            if game.outcome is not None:
                break
            game.step(rng.choice(game.legal_moves(game.agent_selection)))
    assert showdowns > 0 and any(len(cards) > 1 for cards in opponents.values())
    leaks = [key for key, texts in seen.items() if len(texts) > 1]
    assert not leaks, f"observations depend on the opponent's card at {leaks[:3]}"


# ---- Leduc hold'em ------------------------------------------------------------------------------


def test_leduc_hand_ranking() -> None:
    compare = leduc_holdem.compare
    assert compare("J", "K", "J") == 1  # a pair beats a higher card
    assert compare("K", "Q", "Q") == -1
    assert compare("K", "Q", "J") == 1 and compare("J", "Q", "K") == -1  # else the higher card
    assert compare("Q", "Q", "K") == 0  # equal ranks split


def test_leduc_betting_rules() -> None:
    legal = leduc_holdem.legal_letters
    assert legal("") == "kr" and legal("k") == "kr" and legal("r") == "crf" and legal("kr") == "crf"
    assert legal("rr") == "cf" and legal("krr") == "cf"  # at most two raises a round
    assert all(leduc_holdem.round_over(h) for h in ("kk", "rc", "rrc", "krc", "krrf", "rf"))
    assert not any(leduc_holdem.round_over(h) for h in ("", "k", "r", "kr", "rr", "krr"))
    stakes = leduc_holdem.stakes
    assert stakes(("",)) == [1, 1] and stakes(("r",)) == [3, 1] and stakes(("rr",)) == [3, 5]
    assert stakes(("rrc", "rrc")) == [13, 13] and stakes(("kk", "kr")) == [1, 5]
    assert leduc_holdem.MAX_STAKE == 13 and make_game("LeducHoldem-v0").reward_range == (-13.0, 13.0)


def leduc_dealt(first: str, second: str, public: str) -> Callable[[TextGame], bool]:
    return lambda g: (g.cards["player_0"][0], g.cards["player_1"][0], g.public_card[0]) == (first, second, public)


@pytest.mark.parametrize(
    ("deal", "moves", "reward", "reason"),
    [
        ("KQQ", "check check check check", -1.0, "(a pair) beats"),  # Q pairs the public card
        ("KQJ", "raise raise call raise raise call", 13.0, "showdown"),  # the biggest pot
        ("KQJ", "raise call check raise fold", -3.0, "player_0 folded"),
        ("JJQ", "raise call raise call", 0.0, "split"),
        ("QKJ", "check raise call bet call", -7.0, "showdown"),  # "bet" is accepted for raise
    ],
)
def test_leduc_hands(deal: str, moves: str, reward: float, reason: str) -> None:
    game = make_game("LeducHoldem-v0")
    reset_until(game, leduc_dealt(*deal))
    play_moves(game, moves.split())
    assert game.outcome.rewards == {"player_0": reward, "player_1": -reward}
    assert reason in game.outcome.reason
    if "folded" not in reason:
        assert "Showdown: player_0 shows" in game.observe("player_1")["text"]


def test_leduc_rounds_and_legal_moves() -> None:
    game = make_game("LeducHoldem-v0")
    game.reset(seed=0)
    assert game.legal_moves("player_0") == ["check", "raise"]
    with pytest.raises(InvalidAction, match="check, raise"):
        game._apply("player_0", "fold")  # folding with no bet pending is not a move
    play_moves(game, ["raise", "raise"])
    assert game.legal_moves("player_0") == ["call", "fold"]  # two raises this round already
    assert "To call you put in 2 chips." in game.observe("player_0")["text"]
    assert game.public is None and "Public card: not dealt yet" in game.observe("player_0")["text"]
    play_moves(game, ["call"])
    assert game.public == game.public_card and game.agent_selection == "player_0"
    for agent in game.possible_agents:
        text = game.observe(agent)["text"]
        assert f"The public card is {game.public_card}. Round 2 begins." in text and "Round 2 of 2" in text
    assert game.legal_moves("player_0") == ["check", "raise"]


def leduc_deal(game: TextGame) -> tuple:
    return (game.cards["player_0"], game.cards["player_1"], game.public_card)


def cfr(game: TextGame, agent: str) -> dict[str, float]:
    return leduc_holdem.cfr_probabilities(game, agent)


def test_leduc_cfr_beats_random() -> None:
    as_first = exact_value_over_deals("LeducHoldem-v0", {"player_0": cfr, "player_1": uniform}, leduc_deal)
    as_second = -exact_value_over_deals("LeducHoldem-v0", {"player_0": uniform, "player_1": cfr}, leduc_deal)
    expected = (as_first + as_second) / 2
    game = make_game("LeducHoldem-v0")
    rng = random.Random(3)
    game.reset(seed=3)
    results = []
    for hand in range(3_000):
        seat = game.possible_agents[hand % 2]
        players = {agent: "cfr" if agent == seat else "random" for agent in game.possible_agents}
        reward = play_game(game, players, rng)
        results.append(reward if seat == "player_0" else -reward)
    mean, error = statistics.fmean(results), statistics.stdev(results) / math.sqrt(len(results))
    print(
        f"Leduc: cfr vs random wins {as_first:.4f} (seat 0) and {as_second:.4f} (seat 1) chips/hand exactly; "
        f"{mean:.3f} ± {error:.3f} over 3,000 hands, seats alternating"
    )
    assert as_first > 0.5 and as_second > 0.5
    assert mean > 0.4 and mean > 5 * error and abs(mean - expected) < 4 * error


def test_leduc_shipped_strategy_has_low_exploitability() -> None:
    strategy = leduc_holdem.cfr_strategy()
    value = leduc_holdem.exploitability(strategy)
    recorded = json.loads(resources.files(leduc_holdem.__package__).joinpath(leduc_holdem.STRATEGY_FILE).read_text())
    print(f"Leduc: shipped CFR+ strategy exploitability {value:.6f} chips/hand")
    assert value < 0.01 and math.isclose(value, recorded["exploitability"], abs_tol=1e-5)
    # The best responses bracket Leduc's game value for player_0, about -0.0856 chips per hand.
    assert -leduc_holdem.best_response_value(strategy, 1) <= -0.0856 <= leduc_holdem.best_response_value(strategy, 0)


def test_leduc_exploitability_of_uniform_play() -> None:
    """The uniform strategy's NashConv in Leduc is 4.747222 (OpenSpiel's exploitability tests)."""
    uniform_table = {key: dict.fromkeys(moves, 1 / len(moves)) for key, moves in leduc_holdem.cfr_strategy().items()}
    assert math.isclose(2 * leduc_holdem.exploitability(uniform_table), 4.747222222, abs_tol=1e-6)


def test_leduc_shipped_strategy_matches_retraining_structure() -> None:
    shipped = leduc_holdem.cfr_strategy()
    retrained = leduc_holdem.train_cfr(iterations=3)
    assert len(shipped) == 288
    assert {key: list(moves) for key, moves in shipped.items()} == {
        key: list(moves) for key, moves in retrained.items()
    }
    assert all(math.isclose(sum(moves.values()), 1.0) and min(moves.values()) >= 0 for moves in shipped.values())


def test_leduc_cfr_self_play_value_matches_game_value() -> None:
    """The engine's payoffs agree with the CFR model: the exact self-play value is Leduc's -0.0856 for player_0."""
    value = exact_value_over_deals("LeducHoldem-v0", {"player_0": cfr, "player_1": cfr}, leduc_deal)
    print(f"Leduc: cfr vs cfr, player_0 wins {value:.6f} chips/hand exactly")
    assert abs(value + 0.0856) < 0.001
