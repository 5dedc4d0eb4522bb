"""The textarena family (environments/textarena, docs/envs/multiagent.md): TextArena's games on our AEC base.

Every game passes PettingZoo's ``api_test`` and ``seed_test``; on seeded-random move sequences our outcomes,
turn order and observations equal TextArena's own loop (``reset``/``get_observation``/``step``/``close``) on
every game, two seeds each (about 10 s on 2 cores); the single-agent ids keep agentgym's contract.
"""

from __future__ import annotations

import contextlib
import io
import random
import re

import gymnasium as gym
import pytest
from pettingzoo.test import api_test, seed_test

import agentgym
from agentgym.utils import check_text_env

textarena = pytest.importorskip("textarena")

from agentgym.environments.textarena.game import (  # noqa: E402 (after the skip)
    TextArenaGame,
    game_specs,
    left_out,
    list_games,
    make_game,
)

GAMES = list_games()
SINGLE_AGENT_IDS = [info.id for info in agentgym.list_envs() if info.family == "textarena"]
#: A move in TextArena's reference loop: a quoted bracketed move near the end of the observation, else any.
QUOTED, BRACKETED = re.compile(r"'(\[[^\[\]']{1,60}\])'"), re.compile(r"\[[^\[\]\n]{1,60}\]")
#: Moves after which a reference game is compared as it stands (TextArena's games end long before).
MAX_MOVES = 400


def test_every_textarena_game_is_played_or_left_out_with_a_reason() -> None:
    from textarena.envs.registration import ENV_REGISTRY

    classes = {spec.entry_point.split(":")[1].removesuffix("Env") for spec in ENV_REGISTRY.values()}
    assert len(classes) == 96
    played = {spec["id"] for spec in game_specs().values()}
    assert played <= set(ENV_REGISTRY)
    reasons = left_out()
    named = {*map(str, reasons["single-player"]), *reasons["games"]}
    assert len(GAMES) + len(named) == 96 and not named & set(GAMES)
    assert all(reasons["games"].values())


@pytest.mark.parametrize("name", GAMES)
def test_pettingzoo_api_and_seed_tests(name: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):  # a few games print
        api_test(make_game(name), num_cycles=50)
        seed_test(lambda: make_game(name), num_cycles=50)


def reference_move(observation: str, rng: random.Random) -> str:
    """A seeded-random move from TextArena's observation text (listed moves first)."""
    moves = QUOTED.findall(observation[-800:]) or BRACKETED.findall(observation) or ["[?]"]
    return rng.choice(moves)


def textarena_game(name: str, seed: int) -> tuple[list[tuple[int, str, str]], dict, dict]:
    """TextArena's own loop on ``seed``: each turn's (player, observation, move), then rewards and game info."""
    spec = game_specs()[name]
    env = textarena.make(spec["id"])
    rng = random.Random(seed)
    turns = []
    with contextlib.redirect_stdout(io.StringIO()):
        env.reset(num_players=spec["players"], seed=seed)
        done = False
        while not done and len(turns) < MAX_MOVES:
            player, observation = env.get_observation()
            move = reference_move(observation, rng)
            turns.append((player, observation, move))
            done, _ = env.step(move)
        rewards, info = env.close()
    return turns, rewards or {}, info


@pytest.mark.parametrize("name", GAMES)
def test_outcomes_equal_textarenas_own_loop(name: str) -> None:
    """The same moves through our AEC game and through TextArena: same turns, observations and rewards."""
    game = make_game(name)
    for seed in (0, 1):
        game.reset(seed=seed)
        turns, rewards, info = textarena_game(name, game.game_seed)  # the seed our game gave TextArena
        with contextlib.redirect_stdout(io.StringIO()):
            for player, observation, move in turns:
                assert game.agent_selection == f"player_{player}"
                assert observation.strip("\n") in game.observe(game.agent_selection)["text"]
                game.step(move)
        if game.outcome is None:
            assert len(turns) == MAX_MOVES
            continue
        expected = {f"player_{pid}": float(rewards.get(pid, 0.0)) for pid in range(game_specs()[name]["players"])}
        assert game.outcome.rewards == expected
        assert all(game.env.state.game_info[pid] == info[pid] for pid in info)


def test_games_are_isolated_from_the_global_random() -> None:
    """Two games stepped in turn play as each alone: each keeps its own state of TextArena's global generator."""
    alone = []
    for seed in (3, 4):
        game = make_game("PigDice")
        game.reset(seed=seed)
        rng = random.Random(seed)
        for agent in game.agent_iter(max_iter=40):
            _, _, terminated, truncated, _ = game.last()
            game.step(None if terminated or truncated else game.play("random", agent, rng))
        alone.append(game.view("player_0"))
    games = [make_game("PigDice"), make_game("PigDice")]
    rngs = [random.Random(3), random.Random(4)]
    for game, seed in zip(games, (3, 4), strict=True):
        game.reset(seed=seed)
    for _ in range(40):
        for game, rng in zip(games, rngs, strict=True):
            random.random()  # someone else drawing from the global generator in between
            if game.agents:
                agent = game.agent_selection
                done = game.terminations[agent] or game.truncations[agent]
                game.step(None if done else game.play("random", agent, rng))
    assert [game.view("player_0") for game in games] == alone


def test_invalid_moves_are_textarenas_to_judge() -> None:
    game = make_game("TicTacToe")
    game.reset(seed=0)
    agent = game.agent_selection
    game.step("Action: [42]")
    assert game.infos[agent]["invalid_action"] and game.agent_selection == agent and game.outcome is None
    assert "attempted an invalid move" in game.observe(agent)["text"]
    game.step("no move at all")
    assert game.outcome is not None and game.outcome.rewards[agent] == -1.0


@pytest.mark.timeout(60)
def test_a_game_whose_players_are_all_eliminated_ends_in_a_draw() -> None:
    """TextArena 0.7.4's turn loop never ends once every player is eliminated (MarketEntryGame, found by
    PettingZoo's api_test after 900 s); the game ends in a draw there, its own rule for that case."""
    game = make_game("MarketEntryGame")
    game.reset(seed=0)
    state = game.env.state
    for _ in range(200):
        if game.outcome is not None:
            break
        if state.game_state["phase"] == "conversation":
            move = "{hello}"
        else:  # invalid until eliminated, then a valid move, which hands the turn on
            move = "[S]" if state.current_player_id in state.elimination_order else "no decision"
        game.step(move)
    assert set(state.elimination_order) == {0, 1, 2, 3}
    assert game.outcome is not None and game.outcome.rewards == dict.fromkeys(game.possible_agents, 0.0)
    assert game.outcome.winner is None and game.outcome.reason == "All players eliminated!"


def test_player_counts_and_unknown_games() -> None:
    assert len(make_game("LiarsDice", num_players=4).possible_agents) == 4
    with pytest.raises(ValueError, match="players"):
        make_game("TicTacToe", num_players=3)
    with pytest.raises(KeyError, match="unknown TextArena game"):
        TextArenaGame("Chess")


@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS)
def test_single_agent_ids_keep_the_contract(env_id: str) -> None:
    env = gym.make(env_id)
    try:
        report = check_text_env(env, oracle_tasks=4, oracle_must_win=False, random_replies=8, determinism_tasks=1)
    finally:
        env.close()
    assert {"gymnasium", "info-keys", "never-raises", "determinism"} <= set(report.checked)
