"""The openspiel family (environments/openspiel, docs/envs/multiagent.md): OpenSpiel's engines on our AEC base.

Every game passes PettingZoo's ``api_test`` and ``seed_test``; seeded-random games replayed through pyspiel
itself (the recorded action history, chance outcomes included) give the same legal moves, observation strings
and returns; the single-agent ids keep agentgym's contract.
"""

from __future__ import annotations

import random

import gymnasium as gym
import pytest
from pettingzoo.test import api_test, seed_test

import agentgym
from agentgym.utils import check_text_env

pyspiel = pytest.importorskip("pyspiel")

from agentgym.environments.openspiel.game import game_specs, list_games, make_game, normal  # noqa: E402

GAMES = list_games()
SINGLE_AGENT_IDS = [info.id for info in agentgym.list_envs() if info.family == "openspiel"]


@pytest.mark.parametrize("name", GAMES)
def test_pettingzoo_api_and_seed_tests(name: str) -> None:
    api_test(make_game(name), num_cycles=100)
    seed_test(lambda: make_game(name), num_cycles=100)


@pytest.mark.parametrize("name", GAMES)
def test_outcomes_equal_pyspiels_on_the_same_moves(name: str) -> None:
    game = make_game(name)
    spec = game_specs()[name]
    for seed in range(3):
        game.reset(seed=seed)
        rng = random.Random(seed)
        seen = []  # at each decision: (player, its legal moves, its observation text)
        for agent in game.agent_iter():
            _, _, terminated, truncated, _ = game.last()
            if terminated or truncated:
                game.step(None)
                continue
            seen.append((game.agents.index(agent), game.legal_moves(agent), game.observe(agent)["text"]))
            game.step(game.play("random", agent, rng))
        reference = pyspiel.load_game(spec["game"], spec["params"])
        state = reference.new_initial_state()
        decisions = iter(seen)
        for action in game.state.history():
            if not state.is_chance_node():
                player, moves, text = next(decisions)
                assert player == state.current_player()
                assert moves == [state.action_to_string(player, a) for a in state.legal_actions(player)]
                assert getattr(state, game._observation)(player) in text
            state.apply_action(action)
        assert state.is_terminal() and next(decisions, None) is None
        assert list(game.outcome.rewards.values()) == [float(value) for value in state.returns()]


def test_moves_match_action_names_loosely_and_illegal_ones_are_retried() -> None:
    assert normal(" (Play 0) ") == normal("play 0") == "play0"
    game = make_game("Hanabi")
    game.reset(seed=0)
    agent = game.agent_selection
    game.step("Action: play 0")
    assert not game.infos[agent]["invalid_action"] and game.agent_selection != agent
    other = game.agent_selection
    game.step("Action: (Play 9)")
    assert game.infos[other]["invalid_action"] and "not one of the legal moves" in game.observe(other)["text"]


def test_hanabi_is_cooperative_and_shows_the_partners_cards() -> None:
    game = make_game("Hanabi")
    game.reset(seed=1)
    assert game.cooperative and game.reward_range == (0.0, 15.0)
    text = game.observe("player_0")["text"]
    assert (
        "Life tokens: 3" in text
        and "Info tokens: 8" in text
        and "(Play 0), " in text
        and "(Reveal player +1 color " in text
    )


@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS)
def test_single_agent_ids_keep_the_contract(env_id: str) -> None:
    env = gym.make(env_id)
    try:
        report = check_text_env(env, oracle_tasks=3, oracle_must_win=False, random_replies=8, determinism_tasks=1)
    finally:
        env.close()
    assert {"gymnasium", "info-keys", "never-raises", "determinism"} <= set(report.checked)
