"""Multi-agent text games (PettingZoo AEC) and their single-agent views against scripted opponents."""

from agentgym.multiagent import GAME_SPLITS, register_game
from agentgym.registry import register

PACKAGE = __name__


def _register(game: str, module_class: str, opponents: dict[str, str], max_steps: int, description: str) -> None:
    """Register a game and one single-agent id per scripted opponent (``<Game>-vs-<Opponent>-v0``)."""
    game_id = f"{game}-v0"
    register_game(game_id, f"{PACKAGE}.{module_class}")
    for opponent, label in opponents.items():
        register(
            f"{game}-vs-{label}-v0",
            entry_point="agentgym.multiagent:GameEnv",
            family="multiagent",
            description=f"{description}, against a {opponent} opponent",
            splits=GAME_SPLITS,
            max_episode_steps=max_steps,
            kwargs={"game": game_id, "opponent": opponent},
        )


_register("TicTacToe", "tictactoe:TicTacToe", {"random": "Random", "minimax": "Minimax"}, 30, "TicTacToe")
