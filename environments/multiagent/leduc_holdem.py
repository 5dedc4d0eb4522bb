"""LeducHoldem: two-round poker with a six-card deck, one hand per game.

Agents: ``player_0`` acts first in both betting rounds, ``player_1`` second.

Rules (Southey et al., 2005): the deck holds six cards, J, Q and K in two suits (♠, ♥;
suits never matter). Each player antes 1 chip and gets one private card. Two betting
rounds follow; bets and raises are 2 chips in round 1 and 4 chips in round 2, and a round
allows at most two of them (a bet and a raise). After round 1 one public card is dealt
face up. Within a round:

- with no bet pending, ``check`` or ``raise`` (the first raise of a round is a bet; a
  fold is not offered); check-check ends the round;
- facing a bet, ``call`` (match it; ends the round), ``fold`` (the opponent takes the pot)
  or ``raise`` (match it and bet again; only while fewer than two raises were made this
  round).

At showdown (after round 2) a player whose card pairs the public card wins; otherwise
the higher card wins; equal ranks split the pot.

Observation: the rules, the actions and the public card so far, the agent's own card,
the round, the pot with each player's stake, and what a call costs. The opponent's card
stays hidden: it is revealed (to both) only at a showdown, never after a fold.

Move: ``check``, ``raise``, ``call`` or ``fold`` as listed among the legal moves (``bet`` is
accepted for ``raise``; case and surrounding spaces ignored). Anything else is illegal
(feedback, retries, then forfeit: see :class:`agentgym.multiagent.TextGame`).

Rewards: the chips won or lost, i.e. the loser's stake: from 1 (the ante, after folding
to a bet) to 13 (the ante, two raises of 2 and two raises of 4), so ``reward_range`` is
(-13, 13); a split pot gives 0 each.

Players: ``random`` (a uniformly random legal move) and ``cfr``: the average strategy of
CFR+ (:func:`train_cfr`, 2,000 iterations), shipped as ``leduc_cfr_strategy.json``
(regenerate with ``python -m agentgym.environments.multiagent.leduc_holdem``). Its
exploitability (:func:`exploitability`: exact best responses over the full game tree,
averaged over the two seats) is recorded in that file: 0.0002 chips per hand (the tests
hold it below 0.01). Leduc's game value is about -0.0856 chips per hand for ``player_0``.
"""

from __future__ import annotations

import argparse
import json
import random
from functools import cache
from importlib import resources
from pathlib import Path

from agentgym.contract.core import InvalidAction
from agentgym.multiagent import Event, Outcome, TextGame, random_legal_move

RANKS = "JQK"
SUITS = "♠♥"
DECK = tuple(rank + suit for rank in RANKS for suit in SUITS)
ANTE = 1
#: The bet (and raise) size of round 1 and round 2.
BET_SIZES = (2, 4)
MAX_RAISES = 2
MAX_STAKE = ANTE + MAX_RAISES * sum(BET_SIZES)
#: History letters: check, raise, call, fold.
LETTERS = {"check": "k", "raise": "r", "call": "c", "fold": "f"}
WORDS = {letter: word for word, letter in LETTERS.items()}
STRATEGY_FILE = "leduc_cfr_strategy.json"
CFR_ITERATIONS = 2000

#: A strategy: infoset key (:func:`infoset_key`) -> legal move -> probability.
Strategy = dict[str, dict[str, float]]


# ---- the rules, on action histories (one string of letters per round) --------------------------


def legal_letters(history: str) -> str:
    """The legal actions in a betting round after ``history`` (its letters so far)."""
    if history.endswith("r"):
        return "crf" if history.count("r") < MAX_RAISES else "cf"
    return "kr"


def round_over(history: str) -> bool:
    """Whether a betting round with ``history`` is over (check-check, a call or a fold)."""
    return history == "kk" or history.endswith(("c", "f"))


def stakes(rounds: tuple[str, ...]) -> list[int]:
    """Each player's chips in the pot after the rounds' histories (ante included)."""
    stake = [ANTE, ANTE]
    for size, history in zip(BET_SIZES, rounds):
        for turn, letter in enumerate(history):
            if letter == "r":
                stake[turn % 2] = max(stake) + size
            elif letter == "c":
                stake[turn % 2] = max(stake)
    return stake


def compare(mine: str, theirs: str, public: str) -> int:
    """+1 if the rank ``mine`` beats ``theirs`` given the ``public`` rank, -1 if it loses, 0 for a split."""
    if mine == public:
        return 1
    if theirs == public:
        return -1
    return (RANKS.index(mine) > RANKS.index(theirs)) - (RANKS.index(mine) < RANKS.index(theirs))


def infoset_key(rank: str, public: str | None, rounds: tuple[str, ...]) -> str:
    """What the player to act knows: its rank, the public rank, the history (e.g. ``"KQ:rc/k"``)."""
    return rank + (public or "") + ":" + "/".join(rounds)


def _deal_probabilities() -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], dict[str, float]]]:
    """P(private ranks of player_0, player_1), and P(public rank | private ranks)."""
    privates, publics = {}, {}
    for first in RANKS:
        for second in RANKS:
            privates[first, second] = 2 / 6 * (2 - (first == second)) / 5
            left = {public: (2 - (public == first) - (public == second)) / 4 for public in RANKS}
            publics[first, second] = {public: p for public, p in left.items() if p > 0}
    return privates, publics


PRIVATE_DEALS, PUBLIC_DEALS = _deal_probabilities()


# ---- CFR+ and exploitability ----------------------------------------------------------------------


def train_cfr(iterations: int = CFR_ITERATIONS) -> Strategy:
    """The average strategy of CFR+ after ``iterations`` (Tammelin 2014).

    Full-width traversals over the rank-level game tree (suits are strategically
    irrelevant), alternating updates, regret matching+ (regrets floored at 0, applied after
    each traversal) and linear averaging (iteration ``t`` weighs ``t``).
    """
    regrets: dict[str, list[float]] = {}
    totals: dict[str, list[float]] = {}

    def current(key: str, width: int) -> list[float]:
        if key not in regrets:
            regrets[key], totals[key] = [0.0] * width, [0.0] * width
        positive = sum(regrets[key])
        return [regret / positive for regret in regrets[key]] if positive > 0 else [1.0 / width] * width

    def walk(
        ranks: tuple[str, str],
        public: str | None,
        rounds: tuple[str, ...],
        me: int,
        reach_me: float,
        reach_other: float,
        weight: int,
        deltas: dict[str, list[float]],
    ) -> float:
        """The expected chips of player ``me`` from this history on; collects ``me``'s regret deltas."""
        history = rounds[-1]
        if history.endswith("f"):
            folder = (len(history) - 1) % 2
            return -stakes(rounds)[me] if folder == me else stakes(rounds)[1 - me]
        if round_over(history):
            if public is None:
                return sum(
                    p * walk(ranks, card, (*rounds, ""), me, reach_me, reach_other * p, weight, deltas)
                    for card, p in PUBLIC_DEALS[ranks].items()
                )
            return compare(ranks[me], ranks[1 - me], public) * stakes(rounds)[me]
        actor = len(history) % 2
        letters = legal_letters(history)
        key = infoset_key(ranks[actor], public, rounds)
        sigma = current(key, len(letters))
        children = [(*rounds[:-1], history + letter) for letter in letters]
        if actor != me:
            return sum(
                s * walk(ranks, public, child, me, reach_me, reach_other * s, weight, deltas)
                for s, child in zip(sigma, children)
                if s > 0
            )
        values = [
            walk(ranks, public, child, me, reach_me * s, reach_other, weight, deltas)
            for s, child in zip(sigma, children)
        ]
        value = sum(s * v for s, v in zip(sigma, values))
        delta = deltas.setdefault(key, [0.0] * len(letters))
        total = totals[key]
        for i, (s, v) in enumerate(zip(sigma, values)):
            delta[i] += reach_other * (v - value)  # counterfactual regret
            total[i] += weight * reach_me * s  # linear averaging
        return value

    for iteration in range(1, iterations + 1):
        for me in (0, 1):
            deltas: dict[str, list[float]] = {}
            for ranks, p in PRIVATE_DEALS.items():
                walk(ranks, None, ("",), me, 1.0, p, iteration, deltas)
            for key, delta in deltas.items():
                regrets[key] = [max(regret + d, 0.0) for regret, d in zip(regrets[key], delta)]
    strategy = {}
    for key, total in sorted(totals.items()):
        letters = legal_letters(key.split(":")[1].split("/")[-1])
        norm = sum(total)
        strategy[key] = {
            WORDS[letter]: (t / norm if norm > 0 else 1 / len(letters)) for letter, t in zip(letters, total)
        }
    return strategy


def best_response_value(strategy: Strategy, player: int) -> float:
    """Expected chips per hand of a best response seated as ``player`` against ``strategy``'s other seat."""

    def value(mine: str, public: str | None, rounds: tuple[str, ...], reach: dict[str, float]) -> float:
        # ``reach``: the opponent's rank -> P(that rank and the opponent's and chance's actions so far).
        history = rounds[-1]
        if history.endswith("f"):
            folder = (len(history) - 1) % 2
            stake = stakes(rounds)
            return sum(reach.values()) * (-stake[player] if folder == player else stake[1 - player])
        if round_over(history):
            if public is None:
                total = 0.0
                for card in RANKS:
                    child = {
                        theirs: p * PUBLIC_DEALS[(mine, theirs) if player == 0 else (theirs, mine)].get(card, 0.0)
                        for theirs, p in reach.items()
                    }
                    if any(child.values()):
                        total += value(mine, card, (*rounds, ""), child)
                return total
            stake = stakes(rounds)[player]
            return sum(p * compare(mine, theirs, public) * stake for theirs, p in reach.items())
        actor = len(history) % 2
        letters = legal_letters(history)
        children = [(*rounds[:-1], history + letter) for letter in letters]
        if actor == player:
            return max(value(mine, public, child, reach) for child in children)
        total = 0.0
        for letter, child in zip(letters, children):
            moved = {
                theirs: p * strategy[infoset_key(theirs, public, rounds)][WORDS[letter]]
                for theirs, p in reach.items()
                if p > 0
            }
            total += value(mine, public, child, moved)
        return total

    total = 0.0
    for mine in RANKS:
        reach = {
            theirs: PRIVATE_DEALS[(mine, theirs) if player == 0 else (theirs, mine)] for theirs in RANKS
        }  # P(mine, theirs)
        total += value(mine, None, ("",), reach)
    return total


def exploitability(strategy: Strategy) -> float:
    """Chips per hand a best response wins against ``strategy`` beyond the game's value, averaged over seats.

    ``(BR_0 + BR_1) / 2``, where ``BR_i`` is a best response's value in seat ``i``; 0 exactly
    at a Nash equilibrium (NashConv / 2).
    """
    return (best_response_value(strategy, 0) + best_response_value(strategy, 1)) / 2


@cache
def cfr_strategy() -> Strategy:
    """The shipped CFR+ strategy (``leduc_cfr_strategy.json``), probabilities normalised."""
    data = json.loads(resources.files(__package__).joinpath(STRATEGY_FILE).read_text(encoding="utf-8"))
    return {
        key: {move: p / sum(moves.values()) for move, p in moves.items()} for key, moves in data["strategy"].items()
    }


# ---- the game -----------------------------------------------------------------------------------


class LeducHoldem(TextGame):
    """Leduc hold'em as a text game; see the module docstring for the rules."""

    metadata = {**TextGame.metadata, "name": "leduc_holdem"}
    agent_names = ("player_0", "player_1")
    reward_range = (-float(MAX_STAKE), float(MAX_STAKE))
    max_moves = 2 * (MAX_RAISES + 2)

    @property
    def rules(self) -> str:
        return (
            "Leduc hold'em, one hand. The deck has six cards: J, Q and K in two suits (suits do not matter). "
            "Both players ante 1 chip and get one private card. There are two betting rounds; player_0 acts "
            "first in each. Bets are 2 chips in round 1 and 4 chips in round 2, with at most two raises per "
            "round (the first raise of a round is a bet). With no bet pending: check or raise; check-check ends "
            "the round. Facing a bet: call (ends the round), fold (the opponent takes the pot) or raise (if "
            "fewer than two raises were made this round). After round 1 a public card is dealt face up. At "
            "showdown a card that pairs the public card wins, otherwise the higher card wins; equal ranks split "
            "the pot. Moves: check, raise, call, fold."
        )

    def _setup(self) -> None:
        first, second, public = self.rng.sample(DECK, 3)
        self.cards = {"player_0": first, "player_1": second}
        self.public_card = public
        self.rounds: tuple[str, ...] = ("",)

    @property
    def public(self) -> str | None:
        """The public card once it is dealt (after round 1), else ``None``."""
        return self.public_card if len(self.rounds) == 2 else None

    def _current_agent(self) -> str:
        return self.agent_names[len(self.rounds[-1]) % 2]

    def _legal_moves(self, agent: str) -> list[str]:
        return [WORDS[letter] for letter in legal_letters(self.rounds[-1])]

    def _apply(self, agent: str, move: str) -> list[Event]:
        word = move.strip().lower()
        word = "raise" if word == "bet" else word
        legal = self._legal_moves(agent)
        if word not in legal:
            raise InvalidAction(f"the legal moves now are {', '.join(legal)}.")
        before = stakes(self.rounds)
        history = self.rounds[-1] + LETTERS[word]
        self.rounds = (*self.rounds[:-1], history)
        after = stakes(self.rounds)
        index = self.agent_names.index(agent)
        number = len(self.rounds)
        if word == "raise":
            verb = f"bets {BET_SIZES[number - 1]}" if history.count("r") == 1 else f"raises {BET_SIZES[number - 1]}"
            text = f"{verb} (puts in {after[index] - before[index]} chips)"
        elif word == "call":
            text = f"calls (puts in {after[index] - before[index]} chips)"
        else:
            text = {"check": "checks", "fold": "folds"}[word]
        events = [Event(f"Round {number}: {agent} {text}.")]
        if round_over(history) and word != "fold":
            if number == 1:
                self.rounds = (*self.rounds, "")
                events.append(Event(f"The public card is {self.public_card}. Round 2 begins."))
            else:
                shown = ", ".join(f"{name} shows {self.cards[name]}" for name in self.agent_names)
                events.append(Event(f"Showdown: {shown}; the public card is {self.public_card}."))
        return events

    def infoset(self, agent: str) -> str:
        """What ``agent`` knows, as a key of the CFR strategy (:func:`infoset_key`)."""
        return infoset_key(self.cards[agent][0], self.public and self.public[0], self.rounds)

    def _view(self, agent: str) -> str:
        stake = stakes(self.rounds)
        other = 1 - self.agent_names.index(agent)
        mine = stake[1 - other]
        public = self.public or "not dealt yet"
        lines = [
            f"You are {agent}. Your card: {self.cards[agent]}. Public card: {public}.",
            f"Round {len(self.rounds)} of 2 (bets of {BET_SIZES[len(self.rounds) - 1]} chips; raises this round: "
            f"{self.rounds[-1].count('r')} of {MAX_RAISES}).",
            f"Pot: {sum(stake)} chips (you {mine}, {self.agent_names[other]} {stake[other]}).",
        ]
        if stake[other] > mine and self.outcome is None:
            lines.append(f"To call you put in {stake[other] - mine} chips.")
        return "\n".join(lines)

    def _outcome(self) -> Outcome | None:
        history = self.rounds[-1]
        first, second = self.agent_names
        stake = dict(zip(self.agent_names, stakes(self.rounds)))
        if history.endswith("f"):
            folder = self.agent_names[(len(history) - 1) % 2]
            winner = second if folder == first else first
            reason = f"{folder} folded"
        elif len(self.rounds) == 2 and round_over(history):
            ranks = {name: card[0] for name, card in self.cards.items()}
            result = compare(ranks[first], ranks[second], self.public_card[0])
            if result == 0:
                return Outcome(dict.fromkeys(self.agent_names, 0.0), None, "showdown: equal ranks split the pot")
            winner = first if result > 0 else second
            loser = second if winner == first else first
            paired = " (a pair)" if ranks[winner] == self.public_card[0] else ""
            reason = f"showdown: {self.cards[winner]}{paired} beats {self.cards[loser]}"
        else:
            return None
        loser = second if winner == first else first
        return Outcome({winner: float(stake[loser]), loser: -float(stake[loser])}, winner, reason)


def cfr_probabilities(game: LeducHoldem, agent: str) -> dict[str, float]:
    """The ``cfr`` player's probability of each legal move of ``agent`` now."""
    return cfr_strategy()[game.infoset(agent)]


def cfr_player(game: TextGame, agent: str, rng: random.Random) -> str:
    """The shipped CFR+ average strategy (see the module docstring)."""
    assert isinstance(game, LeducHoldem)
    probabilities = cfr_probabilities(game, agent)
    moves = list(probabilities)
    return rng.choices(moves, weights=[probabilities[move] for move in moves])[0]


LeducHoldem.players = {"random": random_legal_move, "cfr": cfr_player}
LeducHoldem.strong_player = "cfr"


def main() -> None:
    """Train CFR+ and write the strategy table shipped with the game."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--iterations", type=int, default=CFR_ITERATIONS)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name(STRATEGY_FILE))
    args = parser.parse_args()
    strategy = train_cfr(args.iterations)
    rounded = {key: {move: round(p, 5) for move, p in moves.items()} for key, moves in strategy.items()}
    header = {
        "game": "LeducHoldem-v0",
        "algorithm": "CFR+ (alternating updates, regret matching+, linear averaging); see train_cfr",
        "iterations": args.iterations,
        "exploitability": round(exploitability(rounded), 6),
        "infosets": len(rounded),
    }
    lines = [f"  {json.dumps(key)}: {json.dumps(moves)}" for key, moves in rounded.items()]  # one infoset a line
    text = json.dumps(header, indent=1)[:-2] + ',\n "strategy": {\n' + ",\n".join(lines) + "\n }\n}\n"
    json.loads(text)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}: {len(rounded)} infosets, exploitability {header['exploitability']} chips/hand")


if __name__ == "__main__":
    main()
