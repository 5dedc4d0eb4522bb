"""OpenSpiel's engines (open-spiel 2.0.2) on agentgym's AEC base, and single-agent views.

:func:`~.game.make_game` makes any game of ``games.yaml`` (Hanabi first, then games TextArena lacks)
as a PettingZoo AEC env (``make_game("Hanabi")``), registered for the arena and self-play as
``OpenSpiel-<Name>-v0``; each is also a single-agent Gymnasium env per
scripted player, ``OpenSpiel-<Name>-vs-Random-v0`` and, where OpenSpiel's MCTS bot plays,
``OpenSpiel-<Name>-vs-MCTS-v0``. State, legal actions, observations and returns are OpenSpiel's own
(:mod:`.game`).
"""

from importlib import resources

import yaml

from agentgym.contract.registry import register
from agentgym.multiagent import GAME_SPLITS, register_game

_SPECS = yaml.safe_load(resources.files(__package__).joinpath("games.yaml").read_text(encoding="utf-8"))

for _name, _spec in _SPECS.items():
    # The AEC game, for the arena and self-play: OpenSpiel-<Name>-v0.
    register_game(f"OpenSpiel-{_name}-v0", "agentgym.environments.openspiel.game:OpenSpielGame", {"name": _name})
    _partner = _spec["game"] == "hanabi"
    for _player, _label in [("random", "Random"), *([("mcts", "MCTS")] if "mcts" in _spec else [])]:
        register(
            f"OpenSpiel-{_name}-vs-{_label}-v0",
            entry_point="agentgym.environments.openspiel.game:OpenSpielEnv",
            family="openspiel",
            description=f"OpenSpiel's {_spec['game']}, {'with a' if _partner else 'vs'} {_player} "
            f"{'partner' if _partner else 'opponent'}",
            splits=GAME_SPLITS,
            max_episode_steps=_spec["steps"],
            kwargs={"game": _name, "opponent": _player},
        )
