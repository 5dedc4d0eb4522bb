"""KuhnPoker: the smallest poker game, one hand per game.

Agents: ``player_0`` acts first, ``player_1`` second.

Rules: the deck holds three cards, J < Q < K. Each player antes 1 chip and gets one
card (the deal comes from the game's seeded generator); the third card is not used.
One betting round, bets of 1 chip:

- ``player_0`` checks or bets;
- after a check, ``player_1`` checks (showdown for a pot of 2) or bets;
- facing a bet (``player_1`` after a bet, or ``player_0`` after check-bet), a player calls
  (showdown for a pot of 4) or folds (the other player takes the pot of 3).

At showdown the higher card wins the pot.

Observation: the rules, the actions so far, the agent's own card, the pot and each
player's stake. The opponent's card stays hidden: it is revealed (to both) only at a
showdown, never after a fold.

Move: ``check`` or ``bet`` when no bet is pending, ``call`` or ``fold`` facing a bet (case
and surrounding spaces ignored). Anything else is illegal (feedback, retries, then
forfeit: see :class:`agentgym.multiagent.TextGame`).

Rewards: the chips won or lost: +-1 after check-check or a fold, +-2 after a called bet.
``reward_range`` is (-2, 2).

Players: ``random`` (a uniformly random legal move) and ``nash``: the member of Kuhn's
(1950) Nash-equilibrium family with ``alpha`` = :data:`NASH_ALPHA` = 1/3
(:func:`nash_strategy` gives every member): as ``player_0``, bet a J with probability
alpha (bluff), never bet a Q, bet a K with probability 3 alpha; after check-bet, fold a
J, call with a Q with probability alpha + 1/3, call with a K. As ``player_1``, after a
check bet a K, bet a J with probability 1/3 (bluff), check a Q; facing a bet call with a
K, call with a Q with probability 1/3, fold a J. Its expected value against itself is
-1/18 chip per hand for ``player_0``, whatever alpha.
"""

from __future__ import annotations

import random

from agentgym.contract.core import InvalidAction
from agentgym.multiagent import Event, Outcome, TextGame, random_legal_move

CARDS = "JQK"
#: The ``alpha`` of the ``nash`` player (any value in [0, 1/3] is an equilibrium).
NASH_ALPHA = 1 / 3
#: Action letters in the history: check, bet, call, fold.
LETTERS = {"check": "k", "bet": "b", "call": "c", "fold": "f"}
WORDS = {letter: word for word, letter in LETTERS.items()}
VERBS = {"check": "checks", "bet": "bets 1 chip", "call": "calls", "fold": "folds"}


def legal_letters(history: str) -> str:
    """The legal actions after ``history`` (letters), ``""`` when the hand is over."""
    if history in ("", "k"):
        return "kb"
    if history in ("b", "kb"):
        return "cf"
    return ""


def nash_strategy(alpha: float = NASH_ALPHA) -> dict[str, dict[str, float]]:
    """The equilibrium strategy with bluffing parameter ``alpha``: infoset ``card + history`` -> move -> probability."""
    if not 0 <= alpha <= 1 / 3:
        raise ValueError("alpha must lie in [0, 1/3]")

    def mix(word: str, other: str, probability: float) -> dict[str, float]:
        return {word: probability, other: 1 - probability}

    return {
        # player_0, first to act
        "J": mix("bet", "check", alpha),
        "Q": mix("bet", "check", 0.0),
        "K": mix("bet", "check", 3 * alpha),
        # player_0 after check, bet
        "Jkb": mix("call", "fold", 0.0),
        "Qkb": mix("call", "fold", alpha + 1 / 3),
        "Kkb": mix("call", "fold", 1.0),
        # player_1 after a check
        "Jk": mix("bet", "check", 1 / 3),
        "Qk": mix("bet", "check", 0.0),
        "Kk": mix("bet", "check", 1.0),
        # player_1 facing a bet
        "Jb": mix("call", "fold", 0.0),
        "Qb": mix("call", "fold", 1 / 3),
        "Kb": mix("call", "fold", 1.0),
    }


NASH = nash_strategy()


class KuhnPoker(TextGame):
    """Kuhn poker as a text game; see the module docstring for the rules."""

    metadata = {**TextGame.metadata, "name": "kuhn_poker"}
    agent_names = ("player_0", "player_1")
    reward_range = (-2.0, 2.0)
    max_moves = 3

    @property
    def rules(self) -> str:
        return (
            "Kuhn poker, one hand. The deck has three cards, J < Q < K. Both players ante 1 chip and get one "
            "card each; the third card is not used. player_0 acts first: check or bet (1 chip). After a check, "
            "player_1 checks (showdown) or bets. Facing a bet, call (put in 1 chip; showdown) or fold (the "
            "opponent takes the pot). At showdown the higher card wins the pot. Moves: check, bet, call, fold."
        )

    def _setup(self) -> None:
        dealt = self.rng.sample(CARDS, 2)
        self.cards = dict(zip(self.agent_names, dealt))
        self.history = ""
        self.stakes = dict.fromkeys(self.agent_names, 1)

    def _current_agent(self) -> str:
        return self.agent_names[len(self.history) % 2]

    def _legal_moves(self, agent: str) -> list[str]:
        return [WORDS[letter] for letter in legal_letters(self.history)]

    def _apply(self, agent: str, move: str) -> list[Event]:
        word = move.strip().lower()
        legal = self._legal_moves(agent)
        if word not in legal:
            raise InvalidAction(f"the legal moves now are {' and '.join(legal)}.")
        self.history += LETTERS[word]
        if word in ("bet", "call"):
            self.stakes[agent] += 1
        events = [Event(f"{agent} {VERBS[word]}.")]
        if self.history in ("kk", "bc", "kbc"):
            first, second = self.agent_names
            events.append(Event(f"Showdown: {first} shows {self.cards[first]}, {second} shows {self.cards[second]}."))
        return events

    def infoset(self, agent: str) -> str:
        """What ``agent`` knows: its card and the action history (a key of :func:`nash_strategy`)."""
        return self.cards[agent] + self.history

    def _view(self, agent: str) -> str:
        other = next(name for name in self.agent_names if name != agent)
        mine, theirs = self.stakes[agent], self.stakes[other]
        view = f"You are {agent}. Your card: {self.cards[agent]}. "
        view += f"Pot: {mine + theirs} chips (you {mine}, {other} {theirs})."
        if theirs > mine and self.outcome is None:
            view += " To call you put in 1 chip."
        return view

    def _outcome(self) -> Outcome | None:
        if legal_letters(self.history):
            return None
        first, second = self.agent_names
        if self.history.endswith("f"):
            folder = self.agent_names[(len(self.history) - 1) % 2]
            winner = second if folder == first else first
            reason = f"{folder} folded"
        else:
            winner = first if CARDS.index(self.cards[first]) > CARDS.index(self.cards[second]) else second
            reason = f"showdown: {self.cards[winner]} beats {self.cards[second if winner == first else first]}"
        loser = second if winner == first else first
        won = float(self.stakes[loser])
        return Outcome({winner: won, loser: -won}, winner, reason)


def nash_probabilities(game: KuhnPoker, agent: str) -> dict[str, float]:
    """The ``nash`` player's probability of each legal move of ``agent`` now."""
    return NASH[game.infoset(agent)]


def nash_player(game: TextGame, agent: str, rng: random.Random) -> str:
    """Kuhn's equilibrium strategy with alpha = :data:`NASH_ALPHA` (see the module docstring)."""
    assert isinstance(game, KuhnPoker)
    probabilities = nash_probabilities(game, agent)
    moves = list(probabilities)
    return rng.choices(moves, weights=[probabilities[move] for move in moves])[0]


KuhnPoker.players = {"random": random_legal_move, "nash": nash_player}
KuhnPoker.strong_player = "nash"
