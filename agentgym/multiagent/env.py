"""The single-agent view of any multi-agent game: :class:`GameEnv` plays a :class:`~agentgym.multiagent.game.TextGame`
as a Gymnasium env (a :class:`TextEnv`) against a fixed scripted opponent (``gym.make("TicTacToe-vs-Minimax-v0")``);
its tools are ``game_tools.yaml`` beside it."""

from __future__ import annotations

import random
from typing import Any

from agentgym.contract.core import InvalidAction, TaskSplits, TextEnv
from agentgym.contract.tools import ToolCall
from agentgym.multiagent.game import Player, TextGame, make_game

GAME_SPLITS = TaskSplits(train=100_000, dev=1_000, test=1_000)


class GameEnv(TextEnv):
    """A game played as a single-agent env against a fixed scripted opponent.

    ``opponent`` is a scripted player's name or any :data:`Player` callable: the hook for
    self-play, where a trainer passes a function that asks the current policy (or one
    drawn from a pool of checkpoints) for the opponent's move from
    ``game.observe(agent)["text"]``.

    Task ``task_id`` seeds the game (deals, dice) and seats the learner: seat
    ``task_id % players`` unless ``seat`` names one. The opponent's moves happen inside
    ``step``, and every observation is the learner's. Reward and score: 0 until the end,
    then the learner's game reward scaled from the game's ``reward_range`` to [0, 1] (a
    win 1, a draw 0.5, a loss 0 in zero-sum games); success is winning (in team games, a
    positive reward). The oracle plays the game's strongest scripted player.
    """

    splits = GAME_SPLITS
    metadata = {**TextEnv.metadata, "inline_safe": True}
    tool_file = "game_tools.yaml"
    toolset = "game"

    def __init__(
        self,
        game: str | TextGame,
        opponent: str | Player = "random",
        seat: str | None = None,
        game_kwargs: dict[str, Any] | None = None,
        render_mode: str | None = None,
        game_id: str | None = None,
    ) -> None:
        super().__init__(render_mode)
        # A registered game's id (made here), or a game made elsewhere (a family's own engines) with its game_id.
        self.game = make_game(game, **(game_kwargs or {})) if isinstance(game, str) else game
        self.game_id = game if isinstance(game, str) else game_id or type(game).__name__
        if isinstance(opponent, str) and opponent not in self.game.players:
            raise ValueError(f"unknown opponent {opponent!r} for {self.game_id}; known: {sorted(self.game.players)}")
        if seat is not None and seat not in self.game.possible_agents:
            raise ValueError(f"unknown seat {seat!r}; seats are {self.game.possible_agents}")
        self.opponent = opponent
        self.seat = seat
        self.learner = self.game.possible_agents[0]
        self._opponent_rng = random.Random()
        #: The oracle's own draws: consulting the oracle must not change the opponents' moves.
        self._oracle_rng = random.Random()
        self._reply = ""

    @property
    def action_syntax(self) -> str:
        return "Reply with your move; end your reply with a line 'Action: <move>'."

    def _generate(self, task_id: int) -> str:
        agents = self.game.possible_agents
        self.learner = self.seat or agents[task_id % len(agents)]
        self.game.reset(seed=task_id)
        self._opponent_rng = random.Random(task_id)
        self._oracle_rng = random.Random(f"oracle {task_id}")
        self._play_opponents()
        self._settle()
        other = self.opponent if isinstance(self.opponent, str) else "fixed"
        role = f"with a {other} partner" if self.game.cooperative else f"against a {other} opponent"
        return f"You play {self.game_id.removesuffix('-v0')} as {self.learner} {role}."

    def _describe(self) -> str:
        return self.game.observe(self.learner)["text"]

    def extract_action(self, reply: str) -> str:
        self._reply = reply  # the game gets the whole reply: games with talk read the text before the action
        return super().extract_action(reply)

    def tool_command(self, call: ToolCall) -> str:
        # The game reads the whole reply (talk, then 'Action: <move>'): a call's template writes one.
        return self.extract_action(super().tool_command(call))

    def _execute(self, command: str) -> str:
        game = self.game
        game.step(self._reply)
        if game.infos[self.learner]["invalid_action"]:
            self._settle()
            raise InvalidAction("too many illegal moves: you forfeit." if self.terminated else "that move is illegal.")
        self._play_opponents()
        self._settle()
        return "The game is over." if self.terminated else "Your move was played."

    def available_actions(self) -> list[str] | None:
        return self.game.legal_moves(self.learner) if not self.terminated else []

    def oracle_action(self) -> str:
        return self.game.play(self.game.strong_player, self.learner, self._oracle_rng)

    def random_action(self, rng: random.Random) -> str:
        return self.game.play("random", self.learner, rng)

    def _play_opponents(self) -> None:
        game = self.game
        while game.outcome is None and game.agent_selection != self.learner:
            agent = game.agent_selection
            if isinstance(self.opponent, str):
                game.step(game.play(self.opponent, agent, self._opponent_rng))
            else:
                game.step(self.opponent(game, agent, self._opponent_rng))

    def _settle(self) -> None:
        outcome = self.game.outcome
        if outcome is None:
            return
        low, high = self.game.reward_range
        reward = outcome.rewards.get(self.learner, 0.0)
        self.score = (reward - low) / (high - low)
        self.success = outcome.winner == self.learner or (outcome.winner is None and reward > 0)
        self.terminated = True

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        info["seat"] = self.learner
        if self.game.outcome is not None:
            info |= {"winner": self.game.outcome.winner, "reason": self.game.outcome.reason}
            info["game_reward"] = self.game.outcome.rewards.get(self.learner, 0.0)
        return info
