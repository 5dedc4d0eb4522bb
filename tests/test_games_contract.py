"""PettingZoo's own checks on every game of the multiagent family (single-agent views: see test_contract.py;
TextArena's and OpenSpiel's registered games: tests/test_textarena.py and tests/test_openspiel.py)."""

from __future__ import annotations

import pytest
from pettingzoo.test import api_test, seed_test

import agentgym  # noqa: F401  (registers the games)
from agentgym.multiagent import TextGame, list_games, make_game

GAME_IDS = [game_id for game_id in list_games() if not game_id.startswith(("TextArena-", "OpenSpiel-"))]


def test_every_family_game_is_registered() -> None:
    assert len(GAME_IDS) >= 8 and "TicTacToe-v0" in GAME_IDS and "ReferentialGame-v0" in GAME_IDS
    assert {"TextArena-KuhnPoker-v0", "OpenSpiel-Hanabi-v0"} <= set(list_games())  # the engines' games too


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_pettingzoo_api_and_seed_tests(game_id: str) -> None:
    api_test(make_game(game_id), num_cycles=200)
    seed_test(lambda: make_game(game_id), num_cycles=200)


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_scripted_players_finish_games_without_forfeits(game_id: str) -> None:
    game = make_game(game_id)
    assert isinstance(game, TextGame) and "random" in game.players and game.strong_player in game.players
    for seed in range(5):
        game.reset(seed=seed)
        for agent in game.agent_iter():
            _, _, terminated, truncated, info = game.last()
            if terminated or truncated:
                game.step(None)
                continue
            player = game.strong_player if agent == game.possible_agents[seed % 2] else "random"
            game.step(game.play(player, agent, game.rng))
            assert not game.infos.get(agent, {}).get("invalid_action"), game.observe(agent)["text"]
        assert game.outcome is not None and "forfeit" not in game.outcome.reason


@pytest.mark.parametrize("game_id", GAME_IDS)
def test_garbage_replies_get_feedback_then_forfeit(game_id: str) -> None:
    game = make_game(game_id, max_illegal_moves=2)
    game.reset(seed=0)
    agent = game.agent_selection
    for reply in ["", "\x00 garbage 🙂", "a" * 100_000]:
        game.step(reply)
    assert game.outcome is not None and game.outcome.reason == f"{agent} forfeited after illegal moves"
    assert all(game.terminations.values())
