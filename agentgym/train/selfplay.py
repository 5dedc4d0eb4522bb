"""Self-play, opponent pools and role teams: the trainer's rollouts on multi-agent games (``TrainConfig.selfplay``).

The learner (the model being trained) plays the games of ``SelfPlayConfig.games``: every seat (SPIRAL's
self-play), or one seat against an opponent drawn from a pool (earlier snapshots of itself, the game's
scripted players, a fixed model); a team of roles (:class:`~agentgym.train.roles.RoleTeam`) is played
in every role. A move is prompted as the arena prompts (:mod:`agentgym.evaluation.arena`): the system
prompt (a role's own prompt in a team) and the seat's current observation, which holds the rules,
everything the seat has seen and its legal moves. Each of the learner's moves is one trajectory of one
turn, token-in/token-out as every rollout (the prompt's ids, then the ids sampled, never re-tokenised);
when the game ends, each move of a seat gets the seat's reward from the game, so zero-sum, general-sum
and cooperative games need nothing of their own. All games of an iteration advance together: each
round samples, per player, one batch of the moves that wait for it.

Advantages (:meth:`SelfPlay.advantages`, ``algorithm.name: grpo``): SPIRAL's role-conditioned
baselines (:func:`~agentgym.train.advantages.rae_advantages`, kept per game and role across iterations
and saved with checkpoints) or GRPO's groups split by role; PPO's critic needs nothing more.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from gymnasium.envs.registration import load_env_creator
from torch import nn

from agentgym.contract.registry import env_info
from agentgym.evaluation.plan import stable_seed
from agentgym.llm.generation import Generator, SamplingParams
from agentgym.multiagent import GAME_SPLITS, TextGame, make_game
from agentgym.train.advantages import grpo_advantages, rae_advantages
from agentgym.train.config import GameConfig, TrainConfig
from agentgym.train.roles import RoleTeam
from agentgym.train.rollout import ChatTokens, HFSampler, Sample, Sampler, Trajectory
from agentgym.wrappers.chat import Message


def make_train_game(config: GameConfig) -> TextGame:
    """The game ``config`` names: a team of roles on an env, a ``module:function``'s game, or a registered one."""
    if config.roles:
        return RoleTeam(config.id, [role.name for role in config.roles], config.kwargs, config.split)
    if ":" in config.id:
        return load_env_creator(config.id)(**config.kwargs)
    return make_game(config.id, **config.kwargs)


def game_label(config: GameConfig) -> str:
    """The game's name in trajectories, baselines and metrics: its id (an entry point's ``name`` kwarg)."""
    return str(config.kwargs.get("name", config.id)) if ":" in config.id else config.id


def task_ids(config: GameConfig, split: str) -> range:
    """A game's task ids on ``split``: the env's tasks for a team, else seeds (``GAME_SPLITS``)."""
    return env_info(config.id).splits.ids(split) if config.roles else GAME_SPLITS.ids(split)


@dataclass(eq=False)
class Player:
    """Who plays a seat: the learner (``trained``), a model opponent, or a scripted player (no ``sampler``)."""

    name: str
    sampler: Sampler | None = None
    chat_tokens: ChatTokens | None = None
    trained: bool = False


class SnapshotSampler:
    """Samples with earlier trainable weights of the learner's model, swapped in for the call and back after it."""

    def __init__(self, model: nn.Module, sampler: Sampler, weights: dict[str, torch.Tensor]) -> None:
        self.model, self.sampler, self.weights = model, sampler, weights
        self.context_length = sampler.context_length

    def sample(self, prompts: list[list[int]], seeds: list[int]) -> list[Sample]:
        parameters = dict(self.model.named_parameters())
        current = {name: parameters[name].detach().clone() for name in self.weights}
        with torch.no_grad():
            for name, value in self.weights.items():
                parameters[name].copy_(value)
            try:
                return self.sampler.sample(prompts, seeds)
            finally:
                for name, value in current.items():
                    parameters[name].copy_(value)


@dataclass
class GameSlot:
    """One game being played: its seats' players and system prompts, and the moves made so far."""

    game: TextGame
    label: str
    task_id: int
    group: int
    seats: dict[str, Player]
    system: dict[str, str | None]
    rng: random.Random
    moves: list[tuple[str, Trajectory | None]] = field(default_factory=list)
    cut: bool = False

    def messages(self, agent: str) -> list[Message]:
        """What the seat's player is prompted with: its system prompt and its observation now."""
        system = self.system[agent]
        observation = self.game.observe(agent)["text"]
        return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": observation}]

    def next_model_seat(self, max_moves: int) -> str | None:
        """Play scripted seats until a model's seat is to move (returned) or the game ends or is cut (None)."""
        game = self.game
        while game.outcome is None and not self.cut:
            agent = game.agent_selection
            player = self.seats[agent]
            if player.sampler is not None:
                if sum(seat == agent for seat, _ in self.moves) < max_moves:
                    return agent
                self.cut = True
                break
            game.step(game.play(player.name, agent, self.rng))
        return None

    def play(self, agent: str, prompt: list[int], sample: Sample, player: Player, observation: str) -> None:
        """Step the game with the sampled reply; a learner's move becomes a trajectory (its reward comes at the end)."""
        assert player.chat_tokens is not None
        row = None
        if player.trained:
            row = Trajectory(self.label, self.task_id, self.group, role=agent)
            row.extend(prompt, sampled=False)
            row.extend(sample.token_ids, sampled=True, logprobs=sample.logprobs)
            row.turn_ends.append(len(row.token_ids) - 1)
            row.anchors.append(observation)
        self.game.step(player.chat_tokens.tokenizer.decode(sample.token_ids, skip_special_tokens=True))
        self.moves.append((agent, row))

    def finish(self, index: int) -> list[Trajectory]:
        """The learner's moves, each with its seat's reward, score and success; ``index`` is the game's."""
        outcome, game = self.game.outcome, self.game
        low, high = game.reward_range
        rows = []
        for agent, row in self.moves:
            if row is None:
                continue
            reward = outcome.rewards.get(agent, 0.0) if outcome is not None else 0.0
            row.rewards.append(float(reward))
            row.score = (reward - low) / (high - low)
            row.success = outcome is not None and (outcome.winner == agent or (outcome.winner is None and reward > 0))
            row.done, row.truncated, row.game = True, outcome is None or any(game.truncations.values()), index
            rows.append(row)
        return rows


def play_games(slots: list[GameSlot], max_moves: int, seed_of: Callable[[int, int], int]) -> list[Trajectory]:
    """Play every slot's game to its end (or ``max_moves`` moves of one seat); the learner's moves as trajectories.

    Each round, every game waiting for a model moves once: one batch per player. ``seed_of(game, move)``
    gives each sample's seed, so rollouts replay exactly. A game whose prompt fills the model's context
    is cut (every seat's reward 0).
    """
    for slot in slots:
        slot.game.reset(seed=slot.task_id, options={"task_id": slot.task_id})
    while True:
        waiting = [(index, agent) for index, slot in enumerate(slots) if (agent := slot.next_model_seat(max_moves))]
        if not waiting:
            break
        for player in _unique(slots[index].seats[agent] for index, agent in waiting):
            assert player.sampler is not None and player.chat_tokens is not None
            mine, prompts, observations = [], [], []
            for index, agent in waiting:
                if slots[index].seats[agent] is not player:
                    continue
                messages = slots[index].messages(agent)
                prompt = player.chat_tokens.prompt(messages)
                context = player.sampler.context_length
                if context is not None and len(prompt) >= context - 1:
                    slots[index].cut = True
                    continue
                mine.append((index, agent))
                prompts.append(prompt)
                observations.append(messages[-1]["content"])
            seeds = [seed_of(index, len(slots[index].moves)) for index, _ in mine]
            samples = player.sampler.sample(prompts, seeds) if mine else []
            for (index, agent), prompt, sample, observation in zip(mine, prompts, samples, observations):
                slots[index].play(agent, prompt, sample, player, observation)
    return [row for index, slot in enumerate(slots) for row in slot.finish(index)]


def _unique(players: Iterator[Player]) -> list[Player]:
    """The players in their first order, each once."""
    seen: list[Player] = []
    for player in players:
        if all(player is not other for other in seen):
            seen.append(player)
    return seen


def seat_outcomes(rows: list[Trajectory]) -> dict[tuple[int, str], Trajectory]:
    """Each (game, seat) of the learner, in game order, with its first move (which carries the seat's reward)."""
    seats: dict[tuple[int, str], Trajectory] = {}
    for row in rows:
        seats.setdefault((row.game, str(row.role)), row)
    return dict(sorted(seats.items(), key=lambda item: item[0][0]))


def role_advantages(
    rows: list[Trajectory],
    baseline: str,
    baselines: dict[tuple[str, str], float],
    decay: float = 0.95,
    std_normalize: bool = True,
) -> list[list[float]]:
    """Each move's advantage: its seat's reward less the baseline of its game and role (one per row and turn).

    ``rae``: SPIRAL's moving average per (game, role) in ``baselines`` (updated in place, one update per
    seat, in game order; :func:`~agentgym.train.advantages.rae_advantages`). ``group``: GRPO's group
    normalisation among the seats of the same group and role.
    """
    seats = seat_outcomes(rows)
    returns = [row.episode_return for row in seats.values()]
    if baseline == "rae":
        keys = [(row.env_id, str(row.role)) for row in seats.values()]
        values = rae_advantages(returns, keys, baselines, decay)
    else:
        groups = [(row.group, row.role) for row in seats.values()]
        values = grpo_advantages(torch.tensor(returns), groups, std_normalize).tolist()
    by_seat = dict(zip(seats, values))
    return [[by_seat[(row.game, str(row.role))]] for row in rows]


def _eval_seed(tasks: list[int], game: int, move: int) -> int:
    """An evaluation sample's seed: its game's task and the move's number."""
    return stable_seed(tasks[game], move)


def selfplay_metrics(rows: list[Trajectory]) -> dict[str, float]:
    """An iteration's games: how many, and each game's and role's mean reward and win rate (success in a team)."""
    seats = seat_outcomes(rows)
    by_role: dict[str, list[Trajectory]] = {}
    for row in seats.values():
        by_role.setdefault(f"{row.env_id}/{row.role}", []).append(row)
    metrics = {"games": float(len({game for game, _ in seats}))}
    for name, played in sorted(by_role.items()):
        metrics[f"reward/{name}"] = sum(row.episode_return for row in played) / len(played)
        metrics[f"win_rate/{name}"] = sum(row.success for row in played) / len(played)
    return metrics


class SelfPlay:
    """The self-play side of a trainer: its games, the learner and its opponents, the pool, the baselines."""

    def __init__(self, config: TrainConfig, model: nn.Module, generator: Generator, chat_tokens: ChatTokens) -> None:
        assert config.selfplay is not None
        self.config, self.settings = config, config.selfplay
        self.model, self.generator = model, generator
        rollout = config.rollout
        self.params = SamplingParams(
            temperature=rollout.temperature, top_p=rollout.top_p, max_new_tokens=rollout.max_new_tokens
        )
        self.learner = Player("self", HFSampler(generator, self.params, rollout.max_batch_size), chat_tokens, True)
        self.games: dict[int, list[TextGame]] = {}  # per game config, the instances the iteration's slots reuse
        self.opponents: dict[str, Player] = {}
        probes = [make_train_game(game) for game in self.settings.games]
        for probe, game in zip(probes, self.settings.games):
            missing = sorted(set(self.settings.eval_opponents) - set(probe.players))
            if missing and not game.roles:
                known = sorted(probe.players)
                raise ValueError(f"eval_opponents {missing} are not scripted players of {game.id}: {known}")
        for spec in self.settings.opponents:
            if spec.startswith("model:"):
                fixed = Generator.from_pretrained(spec.removeprefix("model:"), device=str(generator.device))
                sampler = HFSampler(fixed, self.params, rollout.max_batch_size)
                self.opponents[spec] = Player(spec, sampler, ChatTokens(fixed.tokenizer, sorted(fixed.eos_token_ids)))
            elif spec not in ("self", "snapshot"):
                for probe, game in zip(probes, self.settings.games):
                    if not game.roles and spec not in probe.players:
                        known = sorted(probe.players)
                        raise ValueError(f"unknown opponent {spec!r} for {game.id}; its scripted players: {known}")
                self.opponents[spec] = Player(spec)
        for probe in probes:
            probe.close()
        #: The pool: iteration -> the learner's trainable weights then (on the CPU).
        self.pool: dict[int, dict[str, torch.Tensor]] = {}
        #: SPIRAL's role baselines: (game, role) -> moving average of the seat's rewards.
        self.baselines: dict[tuple[str, str], float] = {}

    # ------------------------------------------------------------------------------ rollout
    def rollout(
        self,
        iteration: int,
        groups: int,
        group_size: int,
        rng: random.Random,
        max_moves: int,
        seed_of: Callable[[int, int], int],
    ) -> list[Trajectory]:
        """Play ``groups`` groups of ``group_size`` games (one task, opponent and learner seat per group)."""
        if iteration % self.settings.snapshot_every == 0:
            self.snapshot(iteration)
        slots, used = [], [0] * len(self.settings.games)
        players: dict[str, Player] = {}  # this iteration's snapshot players, one per snapshot drawn
        for group in range(groups):
            which = group % len(self.settings.games)
            game_config = self.settings.games[which]
            task_id = rng.choice(task_ids(game_config, game_config.split))
            opponent = rng.choice(self.settings.opponents)
            if opponent == "snapshot":
                opponent = f"snapshot:{rng.choice(sorted(self.pool))}"
            for _ in range(group_size):
                game = self._game(which, used[which])
                used[which] += 1
                seats = self._seats(game, game_config, opponent, group, players)
                slots.append(self._slot(game, game_config, task_id, group, seats, rng.getrandbits(31)))
        return play_games(slots, max_moves, seed_of)

    def snapshot(self, iteration: int) -> None:
        """Add the learner's current trainable weights to the pool (keeping the latest ``pool_size``)."""
        self.pool[iteration] = {
            name: p.detach().cpu().clone() for name, p in self.model.named_parameters() if p.requires_grad
        }
        for old in sorted(self.pool)[: -self.settings.pool_size]:
            del self.pool[old]

    def _game(self, which: int, index: int) -> TextGame:
        games = self.games.setdefault(which, [])
        if index == len(games):
            games.append(make_train_game(self.settings.games[which]))
        return games[index]

    def _seats(
        self, game: TextGame, config: GameConfig, opponent: str, group: int, players: dict[str, Player]
    ) -> dict[str, Player]:
        """Every seat the learner's in self-play and in a team; else the learner's one seat rotates with the group."""
        agents = game.possible_agents
        if opponent == "self" or config.roles:
            return dict.fromkeys(agents, self.learner)
        if opponent.startswith("snapshot:") and opponent not in players:
            assert self.learner.sampler is not None
            weights = self.pool[int(opponent.removeprefix("snapshot:"))]
            sampler = SnapshotSampler(self.model, self.learner.sampler, weights)
            players[opponent] = Player(opponent, sampler, self.learner.chat_tokens)
        other = players.get(opponent) or self.opponents[opponent]
        learner = agents[group % len(agents)]
        return {agent: self.learner if agent == learner else other for agent in agents}

    def _slot(
        self, game: TextGame, config: GameConfig, task_id: int, group: int, seats: dict[str, Player], seed: int
    ) -> GameSlot:
        prompts = {role.name: role.prompt for role in config.roles}
        system = {agent: prompts.get(agent, self.config.rollout.system_prompt) for agent in game.possible_agents}
        return GameSlot(game, game_label(config), task_id, group, seats, system, random.Random(seed))

    # --------------------------------------------------------------------------- advantages
    def advantages(self, rows: list[Trajectory], std_normalize: bool) -> list[list[float]]:
        """GRPO's per-turn advantages of the learner's moves (:func:`role_advantages`; the baselines carry over)."""
        settings = self.settings
        return role_advantages(rows, settings.baseline, self.baselines, settings.rae_decay, std_normalize)

    # ---------------------------------------------------------------------------- evaluation
    def evaluate(self, split: str, episodes: int, max_moves: int, temperature: float = 0.0) -> dict[str, float]:
        """Games against each of ``eval_opponents`` (a team: on its own), seats alternating; their results.

        The first ``episodes`` tasks of ``split`` per game and opponent, greedy unless ``temperature`` > 0
        (seeds from the task and move); metrics per game and opponent: the learner's win rate (success,
        for a team) and mean reward.
        """
        params = SamplingParams(temperature=temperature, max_new_tokens=self.params.max_new_tokens)
        sampler = HFSampler(self.generator, params, self.config.rollout.max_batch_size)
        greedy = Player("self", sampler, self.learner.chat_tokens, True)
        metrics: dict[str, float] = {}
        for config in self.settings.games:
            label = game_label(config)
            for opponent in [None] if config.roles else self.settings.eval_opponents:
                slots = []
                for index, task_id in enumerate(task_ids(config, split)[:episodes]):
                    game = make_train_game(config)
                    agents = game.possible_agents
                    learner = agents[index % len(agents)]
                    seats = {a: greedy if config.roles or a == learner else Player(str(opponent)) for a in agents}
                    slots.append(self._slot(game, config, task_id, index, seats, task_id))
                tasks = [slot.task_id for slot in slots]
                seats_played = seat_outcomes(play_games(slots, max_moves, partial(_eval_seed, tasks)))
                for slot in slots:
                    slot.game.close()
                name = f"{label}/{'team' if opponent is None else 'vs_' + opponent}"
                # A team's games count once (every role shares the outcome).
                results = {key[0]: row for key, row in seats_played.items()}.values()
                metrics[f"eval_win_rate/{name}"] = sum(row.success for row in results) / max(len(results), 1)
                metrics[f"eval_reward/{name}"] = sum(row.episode_return for row in results) / max(len(results), 1)
        return metrics

    # ---------------------------------------------------------------------------- checkpoints
    def state(self) -> dict[str, Any]:
        """What a resumed run needs: the pool's weights and the role baselines."""
        return {"pool": self.pool, "baselines": dict(self.baselines)}

    def load_state(self, state: dict[str, Any]) -> None:
        self.pool = dict(state["pool"])
        self.baselines = dict(state["baselines"])

    def close(self) -> None:
        for games in self.games.values():
            for game in games:
                game.close()
