"""Multi-agent text games (PettingZoo AEC) and their single-agent views against scripted opponents."""

from agentgym.contract.registry import register
from agentgym.multiagent import GAME_SPLITS, register_game

PACKAGE = __name__


def _register(
    game: str, module_class: str, opponents: dict[str, str], max_steps: int, description: str, partner: bool = False
) -> None:
    """Register a game and one single-agent id per scripted opponent (``<Game>-vs-<Opponent>-v0``).

    In a cooperative game (``partner=True``) the scripted player is the learner's partner.
    """
    game_id = f"{game}-v0"
    register_game(game_id, f"{PACKAGE}.{module_class}")
    for opponent, label in opponents.items():
        register(
            f"{game}-vs-{label}-v0",
            entry_point="agentgym.multiagent:GameEnv",
            family="multiagent",
            description=f"{description}, with a {opponent} partner" if partner else f"{description}, vs {opponent}",
            splits=GAME_SPLITS,
            max_episode_steps=max_steps,
            kwargs={"game": game_id, "opponent": opponent},
        )


_register("TicTacToe", "tictactoe:TicTacToe", {"random": "Random", "minimax": "Minimax"}, 30, "TicTacToe")
_register("ConnectFour", "connect_four:ConnectFour", {"random": "Random", "search": "Search"}, 60, "ConnectFour")
_register("KuhnPoker", "kuhn_poker:KuhnPoker", {"random": "Random", "nash": "Nash"}, 10, "Kuhn poker (one hand)")
_register("LeducHoldem", "leduc_holdem:LeducHoldem", {"random": "Random", "cfr": "CFR"}, 20, "Leduc hold'em (one hand)")
_register(
    "SimpleNegotiation",
    "negotiation:SimpleNegotiation",
    {"random": "Random", "greedy": "Greedy"},
    20,
    "SimpleNegotiation: trade resources with private values",
)
_register("LiarsDice", "liars_dice:LiarsDice", {"random": "Random", "probabilistic": "Probabilistic"}, 300, "LiarsDice")
_register(
    "RockPaperScissors",
    "rock_paper_scissors:RockPaperScissors",
    {"random": "Random", "pattern": "Pattern"},
    30,
    "RockPaperScissors, 9 rounds with hidden simultaneous choices",
)
_register(
    "ReferentialGame",
    "referential:ReferentialGame",
    {"random": "Random", "rule": "Rule"},
    15,
    "ReferentialGame, cooperative",
    partner=True,
)
