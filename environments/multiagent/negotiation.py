"""SimpleNegotiation: two players trade resources whose values each of them knows only for itself (SPIRAL style).

Agents: ``player_0`` and ``player_1``; they take turns, ``player_0`` first, for ``rounds``
turns each (default 5, so 10 turns in all).

Setup (from the game's seed): each player holds 5 to 25 units of each of five resources
(Grain, Wood, Sheep, Brick, Stone) and values each unit privately: the market values are
Grain 5, Wood 10, Sheep 15, Brick 25, Stone 40 (public), and each player's own value of a
resource is its market value times a private factor drawn uniformly from [0.8, 1.2],
rounded. Hidden information: a player sees its own inventory and values, never the other's.

Observation: the rules, the public history (messages, offers, answers, trades), the
agent's private inventory with its per-unit values and total value, the offer waiting for
its answer, and whose turn it is.

Moves (one per turn; resource names and keywords in any case):

- ``offer give=Wood:2,Stone:1 get=Grain:3``: propose that you give 2 Wood and 1 Stone and
  receive 3 Grain. Items may also be written ``2 Wood`` or ``Wood x2``; one side may be
  empty (``offer get=Grain:3`` asks for a gift), not both; a resource may not be on both
  sides; you must hold what you give.
- ``accept``: take the offer the other player made on its last turn; the trade happens at
  once. You must hold what it asks of you.
- ``deny``: decline it (also ``reject``, ``decline``).
- ``say <message>``: only talk.

An offer stands until its receiver's next move: any move but ``accept`` declines it (a new
offer is a counter-offer). ``accept`` and ``deny`` without an offer are illegal, and so is
anything else (feedback, retries, then forfeit: see :class:`agentgym.multiagent.TextGame`).

Messages: in a reply that ends with an ``Action: <move>`` line, the text before that line
(reasoning inside ``<think>...</think>`` dropped, whitespace collapsed, at most
``max_message_chars`` characters) is shown to the other player as the mover's message,
together with the move. A reply without an ``Action:`` line is all move and carries no
message. (The single-agent view passes only the extracted move to the game, so there a
learner talks with ``say``.)

Rewards: each player's change in the total value of its inventory, by its own values, as a
fraction of the value it started with, capped to [-1, 1] (giving everything away is -1).
The player with the larger fractional gain wins; equal gains (no trade) are a draw. A
forfeit scores -1 for the forfeiting player and +1 for the other.

Players: ``random`` (a random legal move: answers a pending offer with accept, deny or a
counter-offer at random, accepting only offers it can pay; else a random offer of what it
holds, or a word) and ``greedy`` (accepts exactly the offers that raise its own value and
that it can pay; otherwise proposes a one-for-one-resource trade that raises its own value
by at least 10% of what it gives and is worth at least as much to the other player at
market values, so that an average player gains too; it never accepts a value-losing
offer).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from agentgym.contract.core import InvalidAction, quote, split_reply
from agentgym.multiagent import Event, Outcome, TextGame

#: Public market value per unit; each player's private values lie within 20% of these.
MARKET_VALUES = {"Grain": 5, "Wood": 10, "Sheep": 15, "Brick": 25, "Stone": 40}
RESOURCES = tuple(MARKET_VALUES)
VALUE_SPREAD = 0.2
INITIAL_UNITS = (5, 25)
#: The greedy player's least gain from an offer it proposes, as a fraction of what it gives.
GREEDY_MARGIN = 0.1

_RESOURCE_NAMES = {name.lower(): name for name in RESOURCES}
_ITEM = re.compile(r"(?:(\d{1,6})\s*[x×*]?\s*([a-z]+)|([a-z]+)\s*[:=x×*]?\s*(\d{1,6}))", re.IGNORECASE)
_SIDES = re.compile(r"\b(give|get)\b\s*[=:]?", re.IGNORECASE)

Bundle = dict[str, int]


@dataclass(frozen=True)
class Offer:
    """``proposer`` gives ``give`` and receives ``get``."""

    proposer: str
    give: tuple[tuple[str, int], ...]
    get: tuple[tuple[str, int], ...]


def talk_before_action(reply: str, limit: int) -> str:
    """The message of a reply: its text before the last ``Action:`` line, reasoning dropped, at most ``limit`` chars."""
    talk = " ".join(split_reply(reply)[0][: 4 * limit].split())
    return talk if len(talk) <= limit else talk[: limit - 1] + "…"


def resource_name(word: str) -> str:
    """The resource named by ``word`` (any case, plural ``s`` allowed); raises :class:`InvalidAction`."""
    key = word.lower()
    name = _RESOURCE_NAMES.get(key) or _RESOURCE_NAMES.get(key.removesuffix("s"))
    if name is None:
        raise InvalidAction(f"unknown resource {quote(word)}; the resources are {', '.join(RESOURCES)}.")
    return name


def parse_bundle(text: str) -> Bundle:
    """``"Wood:2, Stone:1"`` (or ``"2 Wood and 1 Stone"``) as ``{"Wood": 2, "Stone": 1}``."""
    bundle: Bundle = {}
    for item in re.split(r",|;|\band\b|&", text):
        if not item.strip():
            continue
        match = _ITEM.fullmatch(item.strip())
        if match is None:
            raise InvalidAction(f"cannot read {quote(item.strip())}: write each item as Resource:amount, e.g. Wood:2.")
        count, name = (match[1], match[2]) if match[1] else (match[4], match[3])
        resource = resource_name(name)
        if resource in bundle:
            raise InvalidAction(f"{resource} appears twice on one side of the offer.")
        if int(count) < 1:
            raise InvalidAction("amounts must be at least 1.")
        bundle[resource] = int(count)
    return bundle


def parse_offer(body: str) -> tuple[Bundle, Bundle]:
    """The ``give`` and ``get`` bundles of an offer's text after the word ``offer``."""
    pieces = _SIDES.split(body)
    if pieces[0].strip() or len(pieces) == 1:
        raise InvalidAction("write an offer as 'offer give=Wood:2,Stone:1 get=Grain:3'.")
    sides: dict[str, Bundle] = {}
    for keyword, text in zip(pieces[1::2], pieces[2::2]):
        side = keyword.lower()
        if side in sides:
            raise InvalidAction(f"the offer names '{side}' twice.")
        sides[side] = parse_bundle(text)
    give, get = sides.get("give", {}), sides.get("get", {})
    if not give and not get:
        raise InvalidAction("an offer must give or get something.")
    both = sorted(set(give) & set(get))
    if both:
        raise InvalidAction(f"{', '.join(both)} is on both sides of the offer.")
    return give, get


def format_bundle(bundle: Any) -> str:
    items = dict(bundle)
    return ", ".join(f"{count} {name}" for name, count in items.items()) if items else "nothing"


def format_offer(give: Bundle, get: Bundle) -> str:
    """The move that proposes giving ``give`` for ``get``."""
    parts = ["offer"]
    if give:
        parts.append("give=" + ",".join(f"{name}:{count}" for name, count in give.items()))
    if get:
        parts.append("get=" + ",".join(f"{name}:{count}" for name, count in get.items()))
    return " ".join(parts)


class SimpleNegotiation(TextGame):
    """SimpleNegotiation as a text game; see the module docstring for the rules."""

    metadata = {**TextGame.metadata, "name": "simple_negotiation"}
    agent_names = ("player_0", "player_1")

    def __init__(
        self,
        rounds: int = 5,
        max_message_chars: int = 300,
        max_illegal_moves: int = 2,
        render_mode: str | None = None,
    ) -> None:
        if not 1 <= rounds <= 50:
            raise ValueError("rounds must be between 1 and 50")
        if not 1 <= max_message_chars <= 2000:
            raise ValueError("max_message_chars must be between 1 and 2000")
        super().__init__(max_illegal_moves=max_illegal_moves, render_mode=render_mode)
        self.rounds = rounds
        self.max_message_chars = max_message_chars
        self.max_moves = 2 * rounds  # the game always ends after its last turn; never truncated
        self._talk = ""

    @property
    def rules(self) -> str:
        market = ", ".join(f"{name} {value}" for name, value in MARKET_VALUES.items())
        return (
            f"SimpleNegotiation. player_0 and player_1 each hold private amounts of {len(RESOURCES)} resources and "
            f"value each unit privately: the market values are {market}, and each player's own values differ from "
            f"them by up to {VALUE_SPREAD:.0%} either way. Players take turns, player_0 first, {self.rounds} turns "
            "each. On your turn make one move:\n"
            "- offer give=Wood:2,Stone:1 get=Grain:3 : propose to give 2 Wood and 1 Stone for 3 Grain (one side may "
            "be empty, not both; you must hold what you give);\n"
            "- accept : take the offer the other player made on its last turn; the trade happens at once (you must "
            "hold what it asks of you);\n"
            "- deny : decline that offer;\n"
            "- say <message> : only talk.\n"
            "An offer stands until its receiver's next move: any move but accept declines it. Text you write before "
            "the 'Action:' line of your reply is shown to the other player as your message. Your reward is the "
            "change in the total value of your inventory, by your own values, as a fraction of its value at the "
            "start (capped to -1..1); the player with the larger gain wins."
        )

    # ---- state ------------------------------------------------------------------------

    def _setup(self) -> None:
        low, high = INITIAL_UNITS
        self.values: dict[str, Bundle] = {}
        self.inventory: dict[str, Bundle] = {}
        for agent in self.agent_names:
            self.values[agent] = {
                name: max(1, round(value * self.rng.uniform(1 - VALUE_SPREAD, 1 + VALUE_SPREAD)))
                for name, value in MARKET_VALUES.items()
            }
            self.inventory[agent] = {name: self.rng.randint(low, high) for name in RESOURCES}
        self.initial_value = {agent: self.value(agent) for agent in self.agent_names}
        self.turns = 0
        self.trades = 0
        self.pending: Offer | None = None

    def value(self, agent: str, bundle: Bundle | None = None) -> int:
        """The value of ``bundle`` (default: ``agent``'s inventory) by ``agent``'s own values."""
        items = self.inventory[agent] if bundle is None else bundle
        return sum(count * self.values[agent][name] for name, count in items.items())

    def offer_to(self, agent: str) -> Offer | None:
        """The offer waiting for ``agent``'s answer, if any."""
        return self.pending if self.pending is not None and self.pending.proposer != agent else None

    def gains(self) -> dict[str, float]:
        """Each agent's change in value as a fraction of its starting value (uncapped)."""
        return {agent: self.value(agent) / self.initial_value[agent] - 1.0 for agent in self.agent_names}

    def _other(self, agent: str) -> str:
        return self.agent_names[1 - self.agent_names.index(agent)]

    # ---- the game -----------------------------------------------------------------------

    def step(self, action: Any) -> None:
        """Play the selected agent's reply; the text before its ``Action:`` line is its message."""
        self._talk = talk_before_action(action, self.max_message_chars) if isinstance(action, str) else ""
        super().step(action)

    def _current_agent(self) -> str:
        return self.agent_names[self.turns % 2]

    def _legal_moves(self, agent: str) -> None:
        return None  # offers are not enumerable

    def _apply(self, agent: str, move: str) -> list[Event]:
        words = move.strip().split(maxsplit=1)
        keyword = words[0].lower() if words else ""
        rest = words[1] if len(words) > 1 else ""
        other = self._other(agent)
        waiting = self.offer_to(agent)
        events = []
        if keyword in ("accept", "deny", "reject", "decline"):
            if rest.strip():
                raise InvalidAction(f"'{keyword}' takes nothing after it.")
            if waiting is None:
                raise InvalidAction(f"there is no offer to {keyword}: make an offer or say something.")
            if keyword == "accept":
                pay, receive = dict(waiting.get), dict(waiting.give)
                self._check_holds(agent, pay, "you")
                self._check_holds(other, receive, other)
                self._transfer(agent, other, pay)
                self._transfer(other, agent, receive)
                self.trades += 1
                event = f"{agent} accepts: {agent} gives {format_bundle(pay)} and receives {format_bundle(receive)}."
            else:
                event = f"{agent} declines {other}'s offer."
            self.pending = None
        elif keyword == "offer":
            give, get = parse_offer(rest)
            self._check_holds(agent, give, "you")
            self.pending = Offer(agent, tuple(give.items()), tuple(get.items()))
            lapsed = f" ({other}'s offer is declined.)" if waiting is not None else ""
            event = f"{agent} offers to give {format_bundle(give)} for {format_bundle(get)}.{lapsed}"
        elif keyword == "say":
            said = " ".join(rest.split())
            if not said:
                raise InvalidAction("say what? Write 'say <message>'.")
            if len(said) > self.max_message_chars:
                said = said[: self.max_message_chars - 1] + "…"
            self._talk = f"{self._talk} {said}".strip()
            self.pending = None
            event = f"{agent} makes no offer." + (f" ({other}'s offer is declined.)" if waiting is not None else "")
        else:
            raise InvalidAction(
                "start your move with offer, accept, deny or say, e.g. 'offer give=Wood:2 get=Grain:3'."
            )
        if self._talk:
            events.append(Event(f"{agent} says: {quote(self._talk, self.max_message_chars)}"))
        self.turns += 1
        events.append(Event(f"Turn {self.turns}: {event}"))
        return events

    def _check_holds(self, agent: str, bundle: Bundle, who: str) -> None:
        short = [name for name, count in bundle.items() if self.inventory[agent][name] < count]
        if short:
            held = ", ".join(f"{self.inventory[agent][name]} {name}" for name in short)
            subject = "you hold" if who == "you" else f"{who} holds"
            raise InvalidAction(f"{subject} only {held}.")

    def _transfer(self, giver: str, taker: str, bundle: Bundle) -> None:
        for name, count in bundle.items():
            self.inventory[giver][name] -= count
            self.inventory[taker][name] += count

    def _view(self, agent: str) -> str:
        lines = [
            f"You are {agent}. Turn {min(self.turns + 1, 2 * self.rounds)} of {2 * self.rounds}.",
            "Your inventory and your own value per unit (private):",
        ]
        for name in RESOURCES:
            count, value = self.inventory[agent][name], self.values[agent][name]
            lines.append(f"  {name}: {count} units x {value} = {count * value}")
        start = self.initial_value[agent]
        change = self.value(agent) / start - 1.0
        lines.append(f"Your total value: {self.value(agent)} (at the start {start}; change {change:+.1%}).")
        waiting = self.offer_to(agent)
        if waiting is not None:
            lines.append(
                f"Offer waiting for your answer: {waiting.proposer} gives you {format_bundle(waiting.give)} "
                f"for {format_bundle(waiting.get)} (worth {self.value(agent, dict(waiting.give))} for "
                f"{self.value(agent, dict(waiting.get))} to you). Answer accept or deny, or make a counter-offer."
            )
        elif self.pending is not None:
            lines.append(f"Your offer waits for {self._other(agent)}'s answer.")
        return "\n".join(lines)

    def _outcome(self) -> Outcome | None:
        if self.turns < 2 * self.rounds:
            return None
        gains = self.gains()
        rewards = {agent: max(-1.0, min(1.0, gain)) for agent, gain in gains.items()}
        first, second = self.agent_names
        winner = None
        if abs(gains[first] - gains[second]) > 1e-9:
            winner = first if gains[first] > gains[second] else second
        changes = ", ".join(f"{agent} {gain:+.1%}" for agent, gain in gains.items())
        trades = f"{self.trades} trade{'s' if self.trades != 1 else ''}"
        return Outcome(rewards, winner, f"all {2 * self.rounds} turns played ({trades}; value change: {changes})")


# ---- scripted players -------------------------------------------------------------------------

_SMALL_TALK = ("Let's trade.", "What do you need?", "I could use some", "That is my best offer.", "Hmm.")


def random_player(game: TextGame, agent: str, rng: random.Random) -> str:
    """A random legal move, using only what ``agent`` can see."""
    assert isinstance(game, SimpleNegotiation)
    inventory = game.inventory[agent]
    waiting = game.offer_to(agent)
    if waiting is not None:
        choice = rng.randrange(3)
        if choice == 0 and all(inventory[name] >= count for name, count in waiting.get):
            return "accept"
        if choice <= 1:
            return "deny"
    if rng.random() < 0.15:
        return f"say {rng.choice(_SMALL_TALK)} {rng.choice(RESOURCES)}"
    held = [name for name in RESOURCES if inventory[name] > 0]
    give_names = rng.sample(held, rng.randint(0, min(2, len(held))))
    rest = [name for name in RESOURCES if name not in give_names]
    get_names = rng.sample(rest, rng.randint(0 if give_names else 1, 2))
    give = {name: rng.randint(1, min(inventory[name], 5)) for name in give_names}
    get = {name: rng.randint(1, 5) for name in get_names}
    return format_offer(give, get)


def greedy_player(game: TextGame, agent: str, rng: random.Random) -> str:
    """Accepts offers that raise its value; proposes trades good for it and fair at market values."""
    assert isinstance(game, SimpleNegotiation)
    inventory, values = game.inventory[agent], game.values[agent]
    waiting = game.offer_to(agent)
    if waiting is not None:
        gain = game.value(agent, dict(waiting.give)) - game.value(agent, dict(waiting.get))
        if gain > 0 and all(inventory[name] >= count for name, count in waiting.get):
            return "accept"
    candidates: list[tuple[float, str]] = []
    for give in RESOURCES:
        for get in RESOURCES:
            if give == get or inventory[give] == 0:
                continue
            for give_count in range(1, min(inventory[give], 5) + 1):
                for get_count in range(1, 6):
                    mine = get_count * values[get] - give_count * values[give]
                    theirs = give_count * MARKET_VALUES[give] - get_count * MARKET_VALUES[get]
                    if theirs >= 0 and mine >= GREEDY_MARGIN * give_count * values[give]:
                        candidates.append((mine + 0.5 * theirs, format_offer({give: give_count}, {get: get_count})))
    if not candidates:
        return "deny" if waiting is not None else "say I have nothing to offer that suits me."
    best = max(score for score, _ in candidates)
    return rng.choice(sorted(move for score, move in candidates if score >= 0.9 * best))


SimpleNegotiation.players = {"random": random_player, "greedy": greedy_player}
SimpleNegotiation.strong_player = "greedy"
