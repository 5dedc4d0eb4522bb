"""LiarsDice: two players bid on the dice under both cups; a wrong bid or a wrong call costs a die.

Agents: ``player_0`` and ``player_1``, each with ``dice`` dice (default 5, at most 10).

A round: every player rolls its dice (hidden from the other). Starting with the round's
opener, players take turns; each turn either raises the bid or calls the last bid a lie.

- A bid ``bid Q F`` claims that at least ``Q`` of all dice in play show face ``F``. With
  ``wild_ones`` (the default) a 1 counts as every face, and a bid on face 1 counts only
  the ones; a bid on 1s therefore ranks above a bid on 6s of the same quantity. A new bid
  must rank higher than the last one: a larger quantity, or the same quantity and a
  higher face (faces rank 2 < 3 < 4 < 5 < 6 < 1 with wild ones, 1 < ... < 6 without).
  ``Q`` is at most the number of dice in play.
- ``call`` (also ``liar``, ``challenge``) ends the round: both cups are shown; if fewer
  than ``Q`` dice match the bid, the bidder loses a die, else the caller does.

The loser of a round opens the next one (``player_0`` opens the first). The player who
loses its last die loses the game. No round has more than ``6 * dice in play + 1`` moves,
so the game always ends; ``max_moves`` is set above that bound.

Observation: the rules, the public history (bids, calls, the dice shown at each call), the
agent's own dice (its rolls are also logged as events only it sees), the dice counts, the
current bid, and the legal moves. The other player's dice are never shown before a call.

Move syntax: ``bid 3 4`` (also ``bid 3 4s``, ``bid 3x4``, ``bid 3 fours``), or ``call``.
Anything else, or a bid that does not raise, is illegal (feedback, retries, then forfeit).

Rewards: +1 for the winner, -1 for the loser.

Players: ``random`` (a uniformly random legal move) and ``probabilistic`` (computes, from
its own dice and the binomial distribution of the other player's unseen dice, the
probability that a bid is true; calls when the current bid's probability is below 1/2,
otherwise raises to the most probable higher bid, preferring the highest of equally
probable ones).
"""

from __future__ import annotations

import random
import re
from functools import cache
from math import comb

from agentgym.contract.core import InvalidAction, quote
from agentgym.multiagent import Event, Outcome, TextGame, random_legal_move

FACE_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_BID = re.compile(r"bid\s+(\d{1,3})(?:\s*[x×*]\s*|\s+of\s+|\s+)(?:([1-6])(?:'?s)?|([a-z]+))", re.IGNORECASE)
_CALLS = ("call", "liar", "challenge")


def face_rank(face: int, wild_ones: bool) -> int:
    """The rank of ``face`` among bids of one quantity: with wild ones, 1 ranks above 6."""
    return 7 if wild_ones and face == 1 else face


#: The faces in bid order, without and with wild ones.
FACES_BY_RANK = {wild: tuple(sorted(range(1, 7), key=lambda face: face_rank(face, wild))) for wild in (False, True)}


def face_from_word(word: str) -> int:
    """The face a word names: ``four``, ``fours``, ``sixes``; raises :class:`InvalidAction`."""
    for candidate in (word, word.removesuffix("s"), word.removesuffix("es")):
        if candidate in FACE_WORDS:
            return FACE_WORDS[candidate]
    raise InvalidAction(f"{quote(word)} is not a face: faces are 1 to 6.")


def matches(die: int, face: int, wild_ones: bool) -> bool:
    """Whether ``die`` counts toward a bid on ``face``."""
    return die == face or (wild_ones and die == 1 and face != 1)


@cache
def at_least(needed: int, unseen: int, p: float) -> float:
    """P(X >= needed) for X ~ Binomial(unseen, p)."""
    if needed <= 0:
        return 1.0
    return sum(comb(unseen, k) * p**k * (1 - p) ** (unseen - k) for k in range(needed, unseen + 1))


def bid_probability(quantity: int, face: int, own_dice: list[int], unseen: int, wild_ones: bool) -> float:
    """The probability that at least ``quantity`` dice show ``face``, given ``own_dice`` and ``unseen`` other dice."""
    own = sum(matches(die, face, wild_ones) for die in own_dice)
    p = 2 / 6 if wild_ones and face != 1 else 1 / 6
    return at_least(quantity - own, unseen, p)


class LiarsDice(TextGame):
    """Liar's Dice as a text game; see the module docstring for the rules."""

    metadata = {**TextGame.metadata, "name": "liars_dice"}
    agent_names = ("player_0", "player_1")

    def __init__(
        self, dice: int = 5, wild_ones: bool = True, max_illegal_moves: int = 2, render_mode: str | None = None
    ) -> None:
        if not 1 <= dice <= 10:
            raise ValueError("dice must be between 1 and 10")
        super().__init__(max_illegal_moves=max_illegal_moves, render_mode=render_mode)
        self.dice_per_player = dice
        self.wild_ones = wild_ones
        rounds = 2 * dice - 1
        self.max_moves = rounds * (6 * 2 * dice + 1) + 1  # above the longest possible game: never truncated

    @property
    def rules(self) -> str:
        wild = (
            "Ones are wild: a 1 counts as every face, and a bid on 1s counts only ones (it ranks above 6s). "
            if self.wild_ones
            else "Ones are not wild. "
        )
        return (
            f"LiarsDice. player_0 and player_1 start with {self.dice_per_player} dice each. Each round both roll "
            "their dice in secret; then, starting with the round's opener, they take turns. On your turn either "
            "raise the bid with 'bid Q F' (at least Q of all dice in play show face F; it must beat the last bid: "
            "more dice, or as many dice of a higher face) or say 'call' to challenge the last bid. At a call all "
            "dice are shown: if fewer than Q match, the bidder loses a die, else the caller loses a die. "
            f"{wild}The loser of a round opens the next; whoever loses its last die loses the game (+1 to the "
            "winner, -1 to the loser)."
        )

    # ---- state ------------------------------------------------------------------------

    def _setup(self) -> None:
        self.dice_left = dict.fromkeys(self.agent_names, self.dice_per_player)
        self.round = 0
        self._start_round(self.agent_names[0])

    def _start_round(self, opener: str) -> None:
        self.round += 1
        self.dice = {
            agent: sorted(self.rng.randint(1, 6) for _ in range(self.dice_left[agent])) for agent in self.agents
        }
        self.bid: tuple[int, int, str] | None = None
        self.to_move = opener
        counts = ", ".join(f"{agent} {self.dice_left[agent]}" for agent in self.agents)
        self.events.append(Event(f"Round {self.round} begins (dice: {counts}); {opener} opens."))
        for agent in self.agents:
            rolled = " ".join(map(str, self.dice[agent]))
            self.events.append(Event(f"Round {self.round}: you rolled {rolled}.", frozenset({agent})))

    @property
    def dice_in_play(self) -> int:
        return sum(self.dice_left.values())

    def count(self, face: int) -> int:
        """How many dice in play count toward a bid on ``face``."""
        return sum(matches(die, face, self.wild_ones) for dice in self.dice.values() for die in dice)

    def bid_key(self, quantity: int, face: int) -> tuple[int, int]:
        """Bids compare by their keys: quantity first, then the face's rank."""
        return quantity, face_rank(face, self.wild_ones)

    def raises(self) -> list[tuple[int, int]]:
        """Every bid (quantity, face) that beats the current bid, lowest first."""
        quantity, rank = self.bid_key(*self.bid[:2]) if self.bid else (0, 0)
        ranked = FACES_BY_RANK[self.wild_ones]
        same = [(quantity, face) for face in ranked if face_rank(face, self.wild_ones) > rank] if quantity else []
        return same + [(more, face) for more in range(quantity + 1, self.dice_in_play + 1) for face in ranked]

    def _other(self, agent: str) -> str:
        return self.agent_names[1 - self.agent_names.index(agent)]

    # ---- the game -----------------------------------------------------------------------

    def _current_agent(self) -> str:
        return self.to_move

    def _legal_moves(self, agent: str) -> list[str]:
        moves = [f"bid {q} {f}" for q, f in self.raises()]
        return moves + ["call"] if self.bid is not None else moves

    def _apply(self, agent: str, move: str) -> list[Event]:
        text = " ".join(move.strip().lower().split())
        other = self._other(agent)
        if text in _CALLS:
            if self.bid is None:
                raise InvalidAction("there is no bid to call yet: open the round with a bid, e.g. 'bid 1 2'.")
            return self._resolve_call(agent)
        match = _BID.fullmatch(text)
        if match is None:
            raise InvalidAction("write 'bid Q F' (e.g. 'bid 3 4': at least three 4s) or 'call'.")
        quantity = int(match[1])
        face = int(match[2]) if match[2] else face_from_word(match[3])
        if not 1 <= quantity <= self.dice_in_play:
            raise InvalidAction(f"the quantity must be between 1 and {self.dice_in_play}, the dice in play.")
        if self.bid is not None and self.bid_key(quantity, face) <= self.bid_key(*self.bid[:2]):
            raise InvalidAction(
                f"a bid must beat the current bid of {self.bid[0]} {self.bid[1]}s: bid more dice, "
                "or as many dice of a higher face."
            )
        self.bid = (quantity, face, agent)
        self.to_move = other
        return [Event(f"Round {self.round}: {agent} bids {quantity} {face}s.")]

    def _resolve_call(self, caller: str) -> list[Event]:
        assert self.bid is not None
        quantity, face, bidder = self.bid
        actual = self.count(face)
        loser = caller if actual >= quantity else bidder
        shown = "; ".join(f"{agent} {' '.join(map(str, self.dice[agent]))}" for agent in self.agents)
        counted = "counting ones" if self.wild_ones and face != 1 else "exactly"
        verdict = "the bid stands" if actual >= quantity else "the bid was a lie"
        self.dice_left[loser] -= 1
        events = [
            Event(
                f"Round {self.round}: {caller} calls {bidder}'s bid of {quantity} {face}s. Dice: {shown}. There are "
                f"{actual} {face}s ({counted}): {verdict}, {loser} loses a die ({self.dice_left[loser]} left)."
            )
        ]
        if self.dice_left[loser] > 0:
            self.events.extend(events)
            self._start_round(loser)
            return []
        return events

    def _view(self, agent: str) -> str:
        other = self._other(agent)
        own = " ".join(map(str, self.dice[agent])) if self.dice_left[agent] else "none"
        lines = [
            f"You are {agent}. Round {self.round}. Your dice: {own}.",
            f"Dice in play: you {self.dice_left[agent]}, {other} {self.dice_left[other]} ({self.dice_in_play} in all).",
        ]
        if self.bid is None:
            lines.append("No bid yet this round.")
        else:
            quantity, face, bidder = self.bid
            who = "you" if bidder == agent else bidder
            showing = f"{face} or 1" if self.wild_ones and face != 1 else f"{face}"
            lines.append(f"Current bid, by {who}: {quantity} {face}s (at least {quantity} of all dice show {showing}).")
        return "\n".join(lines)

    def _outcome(self) -> Outcome | None:
        for agent in self.agents:
            if self.dice_left[agent] == 0:
                winner = self._other(agent)
                return Outcome({winner: 1.0, agent: -1.0}, winner, f"{agent} lost its last die")
        return None


def probabilistic_player(game: TextGame, agent: str, rng: random.Random) -> str:
    """Calls an improbable bid, else raises to the most probable higher bid (see the module docstring)."""
    assert isinstance(game, LiarsDice)
    own = game.dice[agent]
    unseen = game.dice_in_play - len(own)

    def probability(quantity: int, face: int) -> float:
        return bid_probability(quantity, face, own, unseen, game.wild_ones)

    if game.bid is not None and probability(game.bid[0], game.bid[1]) < 0.5:
        return "call"
    scored = [(probability(q, f), index, (q, f)) for index, (q, f) in enumerate(game.raises())]
    if not scored:
        return "call"
    best = max(scored)  # ties go to the later (higher) bid
    quantity, face = best[2]
    return f"bid {quantity} {face}"


LiarsDice.players = {"random": random_legal_move, "probabilistic": probabilistic_player}
LiarsDice.strong_player = "probabilistic"
