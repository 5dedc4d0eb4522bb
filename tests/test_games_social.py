"""Social games: SimpleNegotiation, LiarsDice, RockPaperScissors (AEC and Parallel), cooperative ReferentialGame."""

from __future__ import annotations

import copy
import itertools
import math
import random
import statistics

import gymnasium as gym
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from agentgym.contract.core import InvalidAction
from agentgym.environments.multiagent.liars_dice import LiarsDice, bid_probability
from agentgym.environments.multiagent.negotiation import SimpleNegotiation, parse_offer, talk_before_action
from agentgym.environments.multiagent.referential import ReferentialGame
from agentgym.environments.multiagent.rock_paper_scissors import (
    RockPaperScissors,
    match_outcome,
    parallel_env,
    round_winner,
)
from agentgym.multiagent import TextGame, make_game

GAMES = ["SimpleNegotiation-v0", "LiarsDice-v0", "RockPaperScissors-v0", "ReferentialGame-v0"]
SINGLE_AGENT_IDS = [
    "SimpleNegotiation-vs-Random-v0",
    "SimpleNegotiation-vs-Greedy-v0",
    "LiarsDice-vs-Random-v0",
    "LiarsDice-vs-Probabilistic-v0",
    "RockPaperScissors-vs-Random-v0",
    "RockPaperScissors-vs-Pattern-v0",
    "ReferentialGame-vs-Random-v0",
    "ReferentialGame-vs-Rule-v0",
]


def play(game: TextGame, players: dict[str, str], seed: int, rng: random.Random) -> TextGame:
    """Play one game between scripted players (by agent); every move must be legal."""
    game.reset(seed=seed)
    while game.outcome is None:
        agent = game.agent_selection
        move = game.play(players[agent], agent, rng)
        game.step(move)
        assert not game.infos[agent]["invalid_action"], (move, game.observe(agent)["text"][-300:])
    return game


def text(game: TextGame, agent: str) -> str:
    return game.observe(agent)["text"]


# ---- the Parallel version --------------------------------------------------------------------


def test_rock_paper_scissors_parallel_api_and_seed_tests() -> None:
    parallel_api_test(parallel_env(), num_cycles=200)
    parallel_seed_test(parallel_env, num_cycles=200)


# ---- hidden information ------------------------------------------------------------------------


def test_private_events_reach_only_their_agent() -> None:
    rng = random.Random(2)
    for game_id in GAMES:
        game = make_game(game_id)
        game.reset(seed=3)
        for _ in range(6):
            if game.outcome is not None:
                break
            game.step(game.play("random", game.agent_selection, rng))
            for agent in game.possible_agents:
                seen = text(game, agent)
                visible = {event.text for event in game.events if event.visible_to is None or agent in event.visible_to}
                hidden = [event.text for event in game.events if event.visible_to and agent not in event.visible_to]
                assert all(line not in seen for line in hidden if line not in visible)


def test_negotiation_hides_the_other_players_values_and_inventory() -> None:
    first, second = SimpleNegotiation(), SimpleNegotiation()
    first.reset(seed=5)
    second.reset(seed=5)
    second.values["player_1"] = {name: 97 for name in second.values["player_1"]}
    second.inventory["player_1"] = {name: 83 for name in second.inventory["player_1"]}
    assert text(first, "player_0") == text(second, "player_0")
    assert text(first, "player_1") != text(second, "player_1") and "83 units x 97" in text(second, "player_1")


def test_liars_dice_hides_the_other_players_dice() -> None:
    first, second = LiarsDice(), LiarsDice()
    first.reset(seed=5)
    second.reset(seed=5)
    second.dice["player_1"] = [6, 6, 6, 6, 6] if first.dice["player_1"] != [6] * 5 else [2] * 5
    for game in (first, second):
        game.step("bid 2 3")
    assert text(first, "player_0") == text(second, "player_0")
    assert text(first, "player_1") != text(second, "player_1")


def test_rock_paper_scissors_hides_the_first_choice_until_the_round_ends() -> None:
    views = []
    for choice in ("rock", "paper", "scissors"):
        game = RockPaperScissors()
        game.reset(seed=0)
        game.step(choice)
        views.append(text(game, "player_1"))
        assert f"you chose {choice}" in text(game, "player_0")
        game.step("rock")
        assert f"player_0 {choice}, player_1 rock" in text(game, "player_1")
    assert views[0] == views[1] == views[2]


def test_referential_listener_never_sees_the_target() -> None:
    first, second = ReferentialGame(), ReferentialGame()
    first.reset(seed=4)
    second.reset(seed=4)
    second.target = (first.target + 1) % first.object_count
    for game in (first, second):
        game.step("say red")
        assert "<- the target" not in text(game, "player_1")
    assert text(first, "player_1") == text(second, "player_1")
    assert text(first, "player_0") != text(second, "player_0")


# ---- SimpleNegotiation -----------------------------------------------------------------------------


def test_offer_parsing() -> None:
    assert parse_offer(" give=Wood:2,Stone:1 get=Grain:3") == ({"Wood": 2, "Stone": 1}, {"Grain": 3})
    assert parse_offer(" GIVE = 2 wood and stone x1 GET: grains 3") == ({"Wood": 2, "Stone": 1}, {"Grain": 3})
    assert parse_offer(" get=Sheep:4") == ({}, {"Sheep": 4})
    for bad in (
        "",
        " give=",
        " give=Gold:2",
        " give=Wood:2 get=Wood:1",
        " give=Wood:2,Wood:1",
        " give=Wood:0",
        " give=Wood:" + "9" * 5000,
        " hello give=Wood:1",
        " give=Wood:1 give=Stone:1",
        " give=Wood",
    ):
        with pytest.raises(InvalidAction):
            parse_offer(bad)


def test_talk_before_the_action_line_is_the_message() -> None:
    assert talk_before_action("<think>secret plan</think>I need  stone.\nAction: offer get=Stone:1", 300) == (
        "I need stone."
    )
    assert talk_before_action("offer get=Stone:1", 300) == ""
    assert talk_before_action("x" * 1000 + "\nAction: deny", 10) == "x" * 9 + "…"
    game = SimpleNegotiation()
    game.reset(seed=0)
    game.step("<think>I value Stone at 44</think>Hello there.\nAction: offer give=Grain:1 get=Stone:1")
    for agent in game.possible_agents:
        assert "player_0 says: 'Hello there.'" in text(game, agent) and "44" not in text(game, agent)


def negotiation(inventories: dict[str, dict[str, int]], values: dict[str, dict[str, int]]) -> SimpleNegotiation:
    game = SimpleNegotiation(rounds=2)
    game.reset(seed=0)
    game.inventory, game.values = copy.deepcopy(inventories), copy.deepcopy(values)
    game.initial_value = {agent: game.value(agent) for agent in game.possible_agents}
    return game


UNITS = {"Grain": 10, "Wood": 10, "Sheep": 10, "Brick": 10, "Stone": 10}


def test_negotiation_feasibility_trades_and_value_accounting() -> None:
    values = {"player_0": {"Grain": 5, "Wood": 10, "Sheep": 15, "Brick": 25, "Stone": 40},
              "player_1": {"Grain": 6, "Wood": 8, "Sheep": 15, "Brick": 25, "Stone": 48}}  # fmt: skip
    game = negotiation({"player_0": dict(UNITS), "player_1": dict(UNITS, Stone=1)}, values)
    assert game.initial_value == {"player_0": 950, "player_1": 588}
    with pytest.raises(InvalidAction, match="no offer"):
        game._apply("player_0", "accept")
    with pytest.raises(InvalidAction, match="only 10 Wood"):
        game._apply("player_0", "offer give=Wood:11 get=Stone:1")
    game.step("offer give=Wood:5 get=Stone:2")  # player_1 holds only 1 Stone: it cannot accept
    assert game.agent_selection == "player_1"
    with pytest.raises(InvalidAction, match="only 1 Stone"):
        game._apply("player_1", "accept")
    game.step("offer give=Stone:1 get=Wood:4")  # a counter-offer declines player_0's offer
    game.step("accept")
    assert game.inventory["player_0"]["Wood"] == 6 and game.inventory["player_0"]["Stone"] == 11
    assert game.inventory["player_1"]["Wood"] == 14 and game.inventory["player_1"]["Stone"] == 0
    game.step("say thanks")
    assert game.outcome is not None and game.trades == 1
    # player_0: -4 Wood (40) + 1 Stone (40) = 0; player_1: +4 Wood (32) - 1 Stone (48) = -16.
    assert game.outcome.rewards == {"player_0": 0.0, "player_1": pytest.approx(-16 / 588)}
    assert game.outcome.winner == "player_0" and "1 trade" in game.outcome.reason
    assert game.infos["player_1"]["winner"] == "player_0" and game.infos["player_1"]["reason"]


def test_negotiation_rewards_are_capped_and_equal_gains_draw() -> None:
    values = {
        agent: {"Grain": 5, "Wood": 10, "Sheep": 15, "Brick": 25, "Stone": 40} for agent in ("player_0", "player_1")
    }
    game = negotiation({"player_0": dict(UNITS), "player_1": {name: 1 for name in UNITS}}, values)
    game.step("offer give=Grain:10,Wood:10,Sheep:10,Brick:10,Stone:10")
    game.step("accept")
    game.step("deny" if game.offer_to("player_0") else "say bye")
    game.step("say bye")
    assert game.outcome.rewards == {"player_0": -1.0, "player_1": 1.0}
    draw = negotiation({"player_0": dict(UNITS), "player_1": dict(UNITS)}, values)
    for _ in range(4):
        draw.step("say hello")
    assert draw.outcome.winner is None and draw.outcome.rewards == {"player_0": 0.0, "player_1": 0.0}


def test_greedy_accepts_exactly_the_offers_that_raise_its_value() -> None:
    values = {
        agent: {"Grain": 5, "Wood": 10, "Sheep": 15, "Brick": 25, "Stone": 40} for agent in ("player_0", "player_1")
    }
    rng = random.Random(0)
    for offer, accepted in (("offer give=Stone:1 get=Wood:3", True), ("offer give=Stone:1 get=Wood:4", False),
                            ("offer give=Stone:1 get=Wood:5", False), ("offer give=Grain:1", True)):  # fmt: skip
        game = negotiation({"player_0": dict(UNITS), "player_1": dict(UNITS)}, values)
        game.step(offer)
        assert (game.play("greedy", "player_1", rng) == "accept") == accepted


def test_greedy_never_accepts_a_value_losing_offer_and_beats_random() -> None:
    game, rng, wins, accepts = SimpleNegotiation(), random.Random(3), 0, 0
    for seed in range(100):
        seats = (
            {"player_0": "greedy", "player_1": "random"} if seed % 2 else {"player_0": "random", "player_1": "greedy"}
        )
        greedy = "player_0" if seed % 2 else "player_1"
        game.reset(seed=seed)
        while game.outcome is None:
            agent = game.agent_selection
            move = game.play(seats[agent], agent, rng)
            before = game.value(greedy)
            game.step(move)
            if agent == greedy and move == "accept":
                accepts += 1
                assert game.value(greedy) > before
        wins += game.outcome.winner == greedy
    assert accepts > 20 and wins >= 75


# ---- LiarsDice ------------------------------------------------------------------------------------


def dice_game(dice: dict[str, list[int]], wild_ones: bool = True) -> LiarsDice:
    game = LiarsDice(dice=len(dice["player_0"]), wild_ones=wild_ones)
    game.reset(seed=0)
    game.dice = {agent: list(values) for agent, values in dice.items()}
    game.dice_left = {agent: len(values) for agent, values in dice.items()}
    return game


def test_liars_dice_call_resolution_with_wild_ones() -> None:
    hands = {"player_0": [1, 2, 4, 4, 6], "player_1": [1, 3, 4, 5, 5]}
    # Five 4s counting ones (two ones, three 4s): "bid 5 4" stands, so the caller loses a die; "bid 6 4" was a lie.
    # Exactly two ones; four 5s counting ones.
    for bid, loser in (("bid 5 4", "player_1"), ("bid 6 4", "player_0"), ("bid 2 1", "player_1"),
                       ("bid 3 1", "player_0"), ("bid 4 5", "player_1"), ("bid 5 5", "player_0")):  # fmt: skip
        game = dice_game(hands)
        game.step(bid)
        game.step("call")
        assert game.dice_left[loser] == 4 and sum(game.dice_left.values()) == 9, bid
        assert game.round == 2 and game.agent_selection == loser and game.bid is None
        assert "player_0 1 2 4 4 6; player_1 1 3 4 5 5" in text(game, "player_0")
    game = dice_game(hands, wild_ones=False)
    game.step("bid 3 4")  # only three real 4s without wild ones
    game.step("call")
    assert game.dice_left == {"player_0": 5, "player_1": 4}


def test_liars_dice_bid_order_and_syntax() -> None:
    game = dice_game({"player_0": [2, 2, 3, 3, 4], "player_1": [5, 5, 6, 6, 6]})
    with pytest.raises(InvalidAction, match="no bid to call"):
        game._apply("player_0", "call")
    for bad in ("bid 11 2", "bid 0 2", "bid 2 7", "bid 2 sevens", "bid two 2", "raise", "bid 2"):
        with pytest.raises(InvalidAction):
            game._apply("player_0", bad)
    game.step("bid 2 sixes")
    assert game.bid == (2, 6, "player_0")
    for not_higher in ("bid 2 6", "bid 2 5", "bid 1 1"):
        with pytest.raises(InvalidAction, match="must beat"):
            game._apply("player_1", not_higher)
    game.step("bid 2 1s")  # with wild ones, 1s rank above 6s
    game.step("bid 3x2")
    assert game.bid == (3, 2, "player_0")
    assert game.legal_moves("player_1")[0] == "bid 3 3" and game.legal_moves("player_1")[-1] == "call"
    assert "bid 10 1" in game.legal_moves("player_1") and "bid 11 2" not in game.legal_moves("player_1")


def test_liars_dice_game_ends_when_a_player_loses_its_last_die() -> None:
    game = dice_game({"player_0": [3], "player_1": [2]})
    game.step("bid 2 3")
    game.step("call")
    assert game.outcome is not None and game.outcome.winner == "player_1" and game.outcome.rewards["player_0"] == -1
    assert game.infos["player_0"]["reason"] == "player_0 lost its last die"


def test_bid_probability_matches_enumeration() -> None:
    own = [1, 4, 6]
    for quantity, face, wild in ((3, 4, True), (4, 4, True), (2, 1, True), (3, 4, False), (2, 6, False)):
        hits = 0
        for other in itertools.product(range(1, 7), repeat=3):
            dice = own + list(other)
            hits += sum(d == face or (wild and d == 1 and face != 1) for d in dice) >= quantity
        assert math.isclose(bid_probability(quantity, face, own, 3, wild), hits / 6**3)


def test_probabilistic_player_beats_random() -> None:
    game, rng = LiarsDice(), random.Random(4)
    wins = 0
    for seed in range(200):
        seats = ("probabilistic", "random") if seed % 2 == 0 else ("random", "probabilistic")
        play(game, dict(zip(game.possible_agents, seats)), seed, rng)
        wins += game.outcome.winner == game.possible_agents[seats.index("probabilistic")]
    assert wins >= 180


# ---- RockPaperScissors ----------------------------------------------------------------------------


def test_round_and_match_scoring() -> None:
    assert [round_winner("rock", b) for b in ("rock", "paper", "scissors")] == [-1, 1, 0]
    assert [round_winner(None, "rock"), round_winner("rock", None), round_winner(None, None)] == [1, 0, -1]
    outcome = match_outcome([("rock", "scissors"), ("paper", "scissors"), ("rock", "scissors"), ("rock", "rock")])
    assert outcome.winner == "player_0" and outcome.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert "2-1 with 1 tied round" in outcome.reason
    assert match_outcome([("rock", "rock")]).winner is None


def test_parallel_illegal_replies_lose_the_round_and_never_raise() -> None:
    env = parallel_env(rounds=3)
    observations, infos = env.reset(seed=0)
    assert "Round 1 of 3" in observations["player_0"]["text"] and infos["player_0"]["available_actions"]
    _, rewards, terminations, _, infos = env.step({"player_0": "I pick the stone.\nAction: ROCK", "player_1": "banana"})
    assert env.history[-1] == ("rock", None) and infos["player_1"]["invalid_action"] and rewards["player_1"] == 0
    env.step({"player_0": "\x00" * 1000, "player_1": ""})
    assert env.history[-1] == (None, None)
    observations, rewards, terminations, _, infos = env.step({"player_1": "Action: s"})  # player_0 sent nothing
    assert env.history[-1] == (None, "scissors") and all(terminations.values()) and env.agents == []
    assert rewards == {"player_0": 0.0, "player_1": 0.0} and infos["player_0"]["winner"] is None
    assert (
        "tied" in observations["player_1"]["text"]
        and "Score: you (player_1) 1, player_0 1" in observations["player_1"]["text"]
    )
    assert env.step({"player_0": "rock"}) == ({}, {}, {}, {}, {})


def test_aec_illegal_moves_get_feedback_then_forfeit() -> None:
    game = RockPaperScissors()
    game.reset(seed=0)
    game.step("lizard")
    assert game.infos["player_0"]["invalid_action"] and game.agent_selection == "player_0"
    assert "is illegal" in text(game, "player_0") and "rock, paper or scissors" in text(game, "player_0")
    game.step("spock")
    game.step("Action: nothing")
    assert game.outcome is not None and game.outcome.winner == "player_1" and "forfeit" in game.outcome.reason


def test_pattern_player_beats_constant_and_breaks_even_with_random() -> None:
    game, rng = RockPaperScissors(), random.Random(5)
    RockPaperScissors.players["rock"] = lambda game, agent, rng: "rock"
    try:
        for seed in range(50):
            play(game, {"player_0": "rock", "player_1": "pattern"}, seed, rng)
            assert game.outcome.winner == "player_1"
            assert sum(round_winner(*choices) == 1 for choices in game.history) >= 8
        results = [play(game, {"player_0": "pattern", "player_1": "random"}, seed, rng).outcome.rewards["player_0"]
                   for seed in range(400)]  # fmt: skip
    finally:
        del RockPaperScissors.players["rock"]
    assert abs(statistics.mean(results)) < 4 * statistics.stdev(results) / math.sqrt(len(results))


# ---- ReferentialGame --------------------------------------------------------------------------------


def test_referential_scoring_roles_and_syntax() -> None:
    game = ReferentialGame(rounds=2)
    game.reset(seed=0)
    for bad in ("red", "say", "say big red", "this is not a move", "pick A"):
        with pytest.raises(InvalidAction):
            game._apply("player_0", bad)
    game.step("say red")
    target_label = "ABCD"[game.listener_order.index(game.target)]
    for bad in ("pick E", "say red", "A B"):
        with pytest.raises(InvalidAction):
            game._apply("player_1", bad)
    game.step(f"Action: pick {target_label.lower()}")
    assert game.solved == 1 and game.speaker == "player_1" and game.agent_selection == "player_1"
    game.step("say anything")
    wrong = next(label for label in "ABCD" if game.listener_order["ABCD".index(label)] != game.target)
    game.step(f"{wrong})")
    assert game.outcome.rewards == {"player_0": 0.0, "player_1": 0.0} and game.outcome.winner is None
    assert "solved 1 of 2" in game.outcome.reason


def test_referential_listener_can_name_the_object_and_forfeit_is_a_team_loss() -> None:
    game = ReferentialGame(rounds=1)
    game.reset(seed=1)
    game.step("say x")
    game.step(" ".join(game.objects[game.target]))
    assert game.outcome.rewards == {"player_0": 1.0, "player_1": 1.0}
    game.reset(seed=1)
    for _ in range(3):
        game.step("nonsense")
    assert game.outcome.rewards == {"player_0": -1.0, "player_1": -1.0} and game.outcome.winner is None


def test_rule_team_succeeds_at_the_stated_rate() -> None:
    game, rng = ReferentialGame(), random.Random(6)
    games = [play(game, {"player_0": "rule", "player_1": "rule"}, seed, rng).solved for seed in range(1000)]
    round_rate = sum(games) / (4 * len(games))
    assert abs(round_rate - 0.904) < 4 * math.sqrt(0.904 * 0.096 / (4 * len(games)))
    assert 0.93 < sum(solved >= 3 for solved in games) / len(games) < 0.98
    env = gym.make("ReferentialGame-vs-Rule-v0")
    successes = 0
    for task_id in range(100):
        env.reset(options={"task_id": task_id})
        terminated = False
        while not terminated:
            _, _, terminated, _, info = env.step(env.unwrapped.oracle_action())
        successes += info["success"]
        assert info["success"] == (info["score"] > 0.5) and info["winner"] is None
    assert successes >= 85


@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS)
def test_single_agent_oracle_plays_whole_games(env_id: str) -> None:
    env = gym.make(env_id)
    for task_id in range(10):
        _, info = env.reset(options={"task_id": task_id})
        assert info["seat"] == ("player_0", "player_1")[task_id % 2]
        terminated = truncated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            assert not info["invalid_action"]
        assert terminated and info["reason"] and 0.0 <= info["score"] <= 1.0
