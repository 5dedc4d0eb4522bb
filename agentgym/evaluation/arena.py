"""The arena: round-robin matches between policies in a two-player game, and their ratings.

Every pair of policies plays ``games_per_pair`` games, seats swapped: games ``2k`` and
``2k + 1`` share a seed (the same deal, the same dice) with the policies in opposite
seats, so luck cancels out within a pair of games. A policy is a scripted player of the
game (``random``, ``minimax``, ``nash``...) or an LLM policy spec (``openai:...``,
``hf:...``); an LLM sees its own observations as user turns of one chat per game.

Matches are written like eval episodes (``run.json`` + ``episodes.jsonl``, one
:class:`~agentgym.evaluation.records.MatchRecord` per finished match, crash-safe, through the
same resume-and-worker loop, :func:`~agentgym.evaluation.results.play_missing`), so the same
command resumes a killed arena. A match whose policy fails is recorded as ``"error"`` and
replayed by ``--retry-errors``.

Ratings are Bradley-Terry maximum-likelihood strengths on the Elo scale (a draw counts
half a win for each side), anchored at a mean of 1500, with 95% intervals from a
bootstrap over matches.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agentgym
from agentgym.evaluation.plan import stable_seed
from agentgym.evaluation.records import MatchRecord, MatchTurn, Tokens
from agentgym.evaluation.results import play_missing, read_matches, read_run
from agentgym.evaluation.table import format_table
from agentgym.llm.policies import Policy, make_policy
from agentgym.llm.policies.base import Episode
from agentgym.multiagent import TextGame, make_game
from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT

ELO_SCALE = 400 / math.log(10)


@dataclass(frozen=True)
class Match:
    """One planned game: who sits where, and the seed of its chance events."""

    key: str
    seats: tuple[str, str]
    seed: int


def schedule(game_id: str, players: list[str], games_per_pair: int, seed: int) -> list[Match]:
    """Round-robin: every pair plays ``games_per_pair`` games, seats swapped every other game."""
    matches = []
    for first, second in itertools.combinations(players, 2):
        for index in range(games_per_pair):
            seats = (first, second) if index % 2 == 0 else (second, first)
            game_seed = stable_seed(seed, game_id, first, second, index // 2)
            matches.append(Match(f"{first}|{second}|{index}", seats, game_seed))
    return matches


class ArenaPlayer:
    """A scripted player of the game (``oracle`` is its strongest), or an LLM :class:`Policy`.

    An LLM is prompted with the system prompt and the agent's current observation, which
    holds the rules, everything the agent has seen so far and the legal moves.
    """

    def __init__(self, spec: str, game: TextGame, system_prompt: str | None, **policy_options: Any) -> None:
        self.spec = spec
        self.scripted = game.strong_player if spec == "oracle" else spec if spec in game.players else None
        if self.scripted is None and not spec.startswith(("openai:", "hf:")):
            raise ValueError(
                f"unknown player {spec!r}: use one of {sorted(game.players)}, oracle, openai:MODEL[@URL] or hf:PATH"
            )
        self.policy: Policy | None = None if self.scripted else make_policy(spec, **policy_options)
        self.name = spec if self.policy is None else self.policy.name
        self.system = [] if system_prompt is None else [{"role": "system", "content": system_prompt}]

    async def move(self, game: TextGame, agent: str, observation: str, episode: Episode) -> tuple[str, int, int]:
        """The reply for ``agent``, with its prompt and completion tokens."""
        if self.policy is None:
            return game.play(self.scripted, agent, episode.rng), 0, 0
        reply = await self.policy.act([*self.system, {"role": "user", "content": observation}], episode)
        return reply.text, reply.prompt_tokens, reply.completion_tokens

    async def aclose(self) -> None:
        if self.policy is not None:
            await self.policy.aclose()


async def play_match(game: TextGame, match: Match, players: dict[str, ArenaPlayer]) -> MatchRecord:
    """Play one match to its end; a failing player makes an ``"error"`` record."""
    clock = time.perf_counter()
    seats = dict(zip(game.possible_agents, match.seats))
    record = MatchRecord(
        key=match.key, seats=seats, seed=match.seed, tokens={name: Tokens() for name in set(match.seats)}
    )
    game.reset(seed=match.seed)
    episodes = {agent: Episode(f"{match.key}/{agent}", stable_seed(match.seed, agent), None) for agent in seats}
    try:
        for agent in game.agent_iter():
            observation, _, terminated, truncated, _ = game.last()
            if terminated or truncated:
                game.step(None)
                continue
            name = seats[agent]
            text = observation["text"]
            reply, prompt_tokens, completion_tokens = await players[name].move(game, agent, text, episodes[agent])
            record.tokens[name].prompt += prompt_tokens
            record.tokens[name].completion += completion_tokens
            game.step(reply)
            invalid = game.infos.get(agent, {}).get("invalid_action", False)
            record.turns.append(MatchTurn(agent, text, reply, invalid))
    except Exception as error:  # a policy failed: record it, the arena goes on
        record.status, record.error = "error", f"{type(error).__name__}: {error}"
    outcome = game.outcome
    if record.status == "ok" and outcome is not None:
        record.rewards = {seats[agent]: reward for agent, reward in outcome.rewards.items()}
        record.winner = seats.get(outcome.winner) if outcome.winner else None
        record.reason = outcome.reason
    record.wall_s = time.perf_counter() - clock
    return record


async def run_arena(
    game_id: str,
    specs: list[str],
    out: Path | str,
    *,
    games_per_pair: int = 20,
    concurrency: int = 64,
    seed: int = 0,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    retry_errors: bool = False,
    policy_options: dict[str, Any] | None = None,
    on_plan: Callable[[int, int], None] | None = None,
    on_match: Callable[[MatchRecord], None] | None = None,
) -> int:
    """Play (or resume) a round-robin arena into ``out``; returns how many matches this call played."""
    if len(set(specs)) < 2:
        raise ValueError("an arena needs at least two different policies")
    probe = make_game(game_id)
    if len(probe.possible_agents) != 2:
        raise ValueError(f"the arena plays two-player games; {game_id} has {len(probe.possible_agents)} players")
    players = {spec: ArenaPlayer(spec, probe, system_prompt, **(policy_options or {})) for spec in specs}
    run = {
        "kind": "arena",
        "agentgym_version": agentgym.__version__,
        "game": game_id,
        "policies": specs,
        "games_per_pair": games_per_pair,
        "seed": seed,
        "system_prompt": system_prompt,
    }
    games: dict[int, TextGame] = {}  # each worker plays on a game of its own

    async def play(match: Match, worker: int) -> MatchRecord:
        if worker not in games:
            games[worker] = make_game(game_id)
        record = await play_match(games[worker], match, players)
        record.game = game_id
        return record

    try:
        tally = await play_missing(
            out,
            run,
            schedule(game_id, specs, games_per_pair, seed),
            play,
            concurrency=concurrency,
            retry_errors=retry_errors,
            on_plan=on_plan,
            on_record=on_match,
        )
    finally:
        for player in players.values():
            await player.aclose()
    return tally.played


# ---- ratings ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rating:
    """A policy's arena results: Elo-scale rating with its 95% bootstrap interval."""

    policy: str
    rating: float
    low: float
    high: float
    games: int
    wins: int
    draws: int
    losses: int
    mean_reward: float


def bradley_terry(results: list[tuple[str, str, float]], names: list[str], iterations: int = 200) -> dict[str, float]:
    """Elo-scale strengths from (a, b, score of a) results by minorisation-maximisation.

    Every policy also gets half a win and half a loss against a virtual average player,
    so that ratings stay finite when a policy wins or loses every game.
    """
    wins = dict.fromkeys(names, 0.5)
    pairs: dict[tuple[str, str], float] = {}
    for a, b, score in results:
        wins[a] += score
        wins[b] += 1 - score
        key = (a, b) if a < b else (b, a)
        pairs[key] = pairs.get(key, 0) + 1
    strength = dict.fromkeys(names, 1.0)
    for _ in range(iterations):
        updated = {}
        for name in names:
            denominator = 1 / (strength[name] + 1.0)  # the virtual opponent, strength 1
            for (a, b), count in pairs.items():
                if name in (a, b):
                    other = b if name == a else a
                    denominator += count / (strength[name] + strength[other])
            updated[name] = wins[name] / denominator
        strength = updated
    mean_log = sum(math.log(value) for value in strength.values()) / len(names)
    return {name: 1500 + ELO_SCALE * (math.log(value) - mean_log) for name, value in strength.items()}


def ratings(folder: Path | str, resamples: int = 200, seed: int = 0) -> list[Rating]:
    """Ratings of an arena folder's policies, best first (errored matches left out)."""
    run = read_run(Path(folder))
    if run.get("kind") != "arena":
        raise ValueError(f"{folder} is not an arena results folder")
    # (winner, rewards by policy) of each match that finished without error; None wins a draw
    games = [
        (record.winner, record.rewards)
        for record in read_matches(Path(folder)).values()
        if record.status == "ok" and record.rewards is not None
    ]
    names = sorted({name for _, rewards in games for name in rewards}) or sorted(run["policies"])
    results = []
    for winner, rewards in games:
        a, b = sorted(rewards)
        score = 0.5 if winner is None else float(winner == a)
        results.append((a, b, score))
    point = bradley_terry(results, names)
    rng = random.Random(seed)
    samples = [bradley_terry([rng.choice(results) for _ in results], names) for _ in range(resamples if results else 0)]
    table = []
    for name in names:
        mine = [(winner, rewards[name]) for winner, rewards in games if name in rewards]
        values = sorted(sample[name] for sample in samples) or [point[name]]
        table.append(
            Rating(
                policy=name,
                rating=point[name],
                low=values[int(0.025 * (len(values) - 1))],
                high=values[int(0.975 * (len(values) - 1))],
                games=len(mine),
                wins=sum(winner == name for winner, _ in mine),
                draws=sum(winner is None for winner, _ in mine),
                losses=sum(winner not in (None, name) for winner, _ in mine),
                mean_reward=sum(reward for _, reward in mine) / len(mine) if mine else 0.0,
            )
        )
    return sorted(table, key=lambda rating: -rating.rating)


def format_ratings(game_id: str, table: list[Rating]) -> str:
    """The ratings as a terminal table."""
    rows = [
        (
            rank,
            rating.policy,
            f"{rating.rating:.0f} [{rating.low:.0f}, {rating.high:.0f}]",
            rating.games,
            f"{rating.wins}/{rating.draws}/{rating.losses}",
            f"{rating.mean_reward:+.3f}",
        )
        for rank, rating in enumerate(table, 1)
    ]
    headers = ("rank", "policy", "rating [95% CI]", "games", "W/D/L", "mean reward")
    return f"{game_id} arena\n" + format_table(headers, rows)
