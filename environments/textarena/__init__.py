"""TextArena's multi-player text games (textarena 0.7.4) on agentgym's AEC base, and single-agent views.

:func:`~.game.make_game` makes any game of ``games.yaml`` as a PettingZoo AEC env
(``make_game("TicTacToe")``), registered for the arena and self-play as ``TextArena-<Name>-v0``
(:func:`agentgym.multiagent.make_game`); the games where TextArena lists the legal moves are also
single-agent Gymnasium envs against a random opponent, ``TextArena-<Name>-vs-Random-v0``. Rules,
observations and rewards are TextArena's own (:mod:`.game`); ``left_out.yaml`` lists the games not
played and why.
"""

from functools import cache
from importlib import resources
from typing import Any

import yaml

from agentgym.contract.registry import register
from agentgym.multiagent import GAME_SPLITS, register_game


@cache
def games() -> dict[str, dict[str, Any]]:
    """The games of ``games.yaml``, with their specs."""
    return yaml.safe_load(resources.files(__package__).joinpath("games.yaml").read_text(encoding="utf-8"))


def single_agent_games() -> dict[str, dict[str, Any]]:
    """The games of ``games.yaml`` that have a single-agent id, with their specs."""
    return {name: spec for name, spec in games().items() if spec.get("single_agent")}


for _name in games():  # the AEC games, for the arena and self-play: TextArena-<Name>-v0
    register_game(f"TextArena-{_name}-v0", "agentgym.environments.textarena.game:TextArenaGame", {"name": _name})

for _name, _spec in single_agent_games().items():
    register(
        f"TextArena-{_name}-vs-Random-v0",
        entry_point="agentgym.environments.textarena.game:TextArenaEnv",
        family="textarena",
        description=f"TextArena's {_spec['id']} ({_spec['players']} players), vs random listed moves",
        splits=GAME_SPLITS,
        max_episode_steps=_spec["steps"],
        kwargs={"game": _name, "opponent": "random"},
    )
