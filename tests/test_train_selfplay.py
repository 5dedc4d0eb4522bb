"""Self-play, opponent pools and role teams in the trainer (agentgym/train/selfplay.py, roles.py, docs/training.md).

Hand-made batches for the role-conditioned advantages; rollouts of a tiny random model for the rest: every
seat's moves with the game's rewards (zero-sum, general-sum, cooperative), pool opponents that are never
trained, a resumed run that takes the same next step, and a team of roles credited with the shared outcome.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from pettingzoo.test import api_test  # noqa: E402

from agentgym.llm.generation import Generator, SamplingParams  # noqa: E402
from agentgym.multiagent import make_game  # noqa: E402
from agentgym.train.advantages import rae_advantages  # noqa: E402
from agentgym.train.config import TrainConfig, from_dict, load_config  # noqa: E402
from agentgym.train.roles import RoleTeam  # noqa: E402
from agentgym.train.rollout import ChatTokens, HFSampler, Trajectory  # noqa: E402
from agentgym.train.selfplay import GameSlot, Player, SnapshotSampler, play_games, role_advantages  # noqa: E402
from agentgym.train.trainer import Trainer  # noqa: E402

CONFIGS = Path(__file__).resolve().parent.parent / "agentgym" / "train" / "configs"


def move(game: int, role: str, reward: float, group: int = 0) -> Trajectory:
    """A learner's move as the self-play rollout makes it: one turn, its seat's reward."""
    return Trajectory("KuhnPoker-v0", 7, group, role=role, game=game, rewards=[reward], turn_ends=[0])


def chat(system: str, observation: str) -> list[dict[str, str]]:
    """The prompt of a move: the seat's system prompt and its observation."""
    return [{"role": "system", "content": system}, {"role": "user", "content": observation}]


def test_rae_advantages_by_hand() -> None:
    baselines: dict = {}
    keys = [("g", "a"), ("g", "b"), ("g", "a"), ("g", "a")]
    advantages = rae_advantages([1.0, -1.0, 1.0, 1.0], keys, baselines, decay=0.5)
    # a: 1 - 0 (then b_a = 0.5); b: -1 - 0 (b_b = -0.5); a: 1 - 0.5 (b_a = 0.75); a: 1 - 0.75 (b_a = 0.875)
    assert advantages == pytest.approx([1.0, -1.0, 0.5, 0.25])
    assert baselines == pytest.approx({("g", "a"): 0.875, ("g", "b"): -0.5})


def test_role_advantages_on_a_fixed_batch() -> None:
    """Two self-play games of one group; every move of a seat gets that seat's advantage, each seat counted once."""
    rows = [
        move(0, "player_0", 1.0),
        move(0, "player_1", -1.0),
        move(0, "player_0", 1.0),
        move(1, "player_0", -2.0),
        move(1, "player_1", 2.0),
        move(1, "player_0", -2.0),
    ]
    baselines = {("KuhnPoker-v0", "player_0"): 0.5}
    # player_0: 1 - 0.5 = 0.5 (b = 0.9 * 0.5 + 0.1 * 1 = 0.55), then -2 - 0.55 = -2.55 (b = 0.295);
    # player_1: -1 - 0 = -1 (b = -0.1), then 2 + 0.1 = 2.1 (b = 0.11).
    rae = role_advantages(rows, "rae", baselines, decay=0.9)
    assert [turns[0] for turns in rae] == pytest.approx([0.5, -1.0, 0.5, -2.55, 2.1, -2.55])
    assert baselines == pytest.approx({("KuhnPoker-v0", "player_0"): 0.295, ("KuhnPoker-v0", "player_1"): 0.11})
    # GRPO's groups split by role: player_0 returns [1, -2] (mean -0.5), player_1 [-1, 2] (mean 0.5).
    group = role_advantages(rows, "group", {}, std_normalize=False)
    assert group == [[1.5], [-1.5], [1.5], [-1.5], [1.5], [-1.5]]


def selfplay_config(model: Path, out: Path, **selfplay: object) -> TrainConfig:
    return from_dict(
        TrainConfig,
        {
            "model": {"path": str(model), "device": "cpu"},
            "selfplay": {"games": [{"id": "KuhnPoker-v0"}], **selfplay},
            "algorithm": {"name": "grpo", "group_size": 2},
            "rollout": {"max_new_tokens": 4, "max_turns": [[0, 3]], "system_prompt": "Play."},
            "out": str(out),
            "iterations": 2,
            "groups_per_iteration": 2,
            "minibatch_size": 4,
            "learning_rate": 0.01,
            "checkpoint_every": 1,
            "tensorboard": False,
        },
    )


def test_self_play_rollout_plays_every_seat_with_role_advantages(
    tiny_model_with_long_context_path: Path, tmp_path: Path
) -> None:
    trainer = Trainer(selfplay_config(tiny_model_with_long_context_path, tmp_path / "run"))
    try:
        rows = trainer.rollout()
        again = trainer.rollout()  # the same iteration replays exactly
        advantages, returns = trainer.advantages(rows, torch.zeros(len(rows), max(len(r.token_ids) for r in rows)))
        chat_tokens = trainer.chat_tokens
    finally:
        trainer.close()
    assert [row.token_ids for row in again] == [row.token_ids for row in rows]
    assert {row.game for row in rows} == {0, 1, 2, 3} and returns is None
    for row in rows:
        # One move: the arena's prompt (system + the seat's observation), then the sampled ids.
        prompt = chat_tokens.prompt(chat("Play.", row.anchors[0]))
        assert row.token_ids[: len(prompt)] == prompt and row.turns == 1 and sum(row.loss_mask) >= 1
        assert f"You are {row.role}" in row.anchors[0]
    seats = {(row.game, row.role): row.rewards[0] for row in rows}
    for game in {row.game for row in rows}:
        if (game, "player_1") in seats:  # both seats moved: Kuhn poker is zero-sum
            assert seats[(game, "player_0")] + seats[(game, "player_1")] == 0
    # RAE by hand: baselines from 0, one update per seat in game order, decay 0.95.
    baselines: dict = {}
    expected = {}
    for game, role in sorted(seats, key=lambda key: key[0]):
        baseline = baselines.get(role, 0.0)
        expected[(game, role)] = seats[(game, role)] - baseline
        baselines[role] = 0.95 * baseline + 0.05 * seats[(game, role)]
    for index, row in enumerate(rows):
        sampled = torch.tensor(row.loss_mask, dtype=torch.bool)
        values = advantages[index, : len(row.token_ids)][sampled]
        assert values.tolist() == pytest.approx([expected[(row.game, row.role)]] * len(values))


@pytest.fixture(scope="module")
def learner(tiny_model_with_long_context_path: Path) -> Player:
    generator = Generator.from_pretrained(tiny_model_with_long_context_path, device="cpu")
    sampler = HFSampler(generator, SamplingParams(temperature=1.0, max_new_tokens=6), 16)
    return Player("self", sampler, ChatTokens(generator.tokenizer, sorted(generator.eos_token_ids)), trained=True)


@pytest.mark.parametrize(
    "game_id",
    ["SimpleNegotiation-v0", "ReferentialGame-v0", "TicTacToe-v0", "TextArena-KuhnPoker-v0", "OpenSpiel-Hanabi-v0"],
)
def test_every_seat_gets_its_own_reward_from_the_game(learner: Player, game_id: str) -> None:
    """General-sum, cooperative and zero-sum games alike: each move's reward is its seat's in the game's outcome."""
    slots = []
    for index in range(3):
        game = make_game(game_id)
        seats = dict.fromkeys(game.possible_agents, learner)
        system = dict.fromkeys(game.possible_agents, "Play.")
        slots.append(GameSlot(game, game_id, 100 + index, 0, seats, system, random.Random(index)))
    rows = play_games(slots, 4, lambda game, move: game * 100 + move)
    assert rows and all(row.env_id == game_id for row in rows)
    for row in rows:
        outcome = slots[row.game].game.outcome
        reward = outcome.rewards[row.role] if outcome is not None else 0.0
        assert row.rewards == [reward] and row.success == (
            outcome is not None
            and outcome.winner == row.role
            or (outcome is not None and outcome.winner is None and reward > 0)
        )
        if slots[row.game].game.cooperative and outcome is not None:
            assert len(set(outcome.rewards.values())) == 1  # partners share one result


def test_pool_opponents_play_but_are_not_trained(tiny_model_with_long_context_path: Path, tmp_path: Path) -> None:
    config = selfplay_config(
        tiny_model_with_long_context_path,
        tmp_path / "run",
        opponents=["snapshot", "random", f"model:{tiny_model_with_long_context_path}"],
        snapshot_every=1,
        pool_size=2,
    )
    config.groups_per_iteration = 6
    trainer = Trainer(config)
    try:
        for _ in range(3):
            before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
            rows = trainer.rollout()
            for name, parameter in trainer.model.named_parameters():  # snapshots were swapped back out
                assert torch.equal(parameter, before[name]), name
            metrics = trainer.step()
            # The learner takes one seat, rotating with the group; only its moves are trained.
            assert {row.role for row in rows if row.group % 2 == 0} <= {"player_0"}
            assert {row.role for row in rows if row.group % 2 == 1} <= {"player_1"}
            assert metrics["games"] == len({row.game for row in rows})
        assert sorted(trainer.selfplay.pool) == [1, 2]  # a snapshot per iteration, the latest two kept
    finally:
        trainer.close()
    with pytest.raises(ValueError, match="unknown opponent 'minimax'"):
        Trainer(selfplay_config(tiny_model_with_long_context_path, tmp_path / "bad", opponents=["minimax"]))


def test_snapshot_sampler_samples_with_the_snapshot_and_restores_the_weights(learner: Player) -> None:
    assert learner.sampler is not None and learner.chat_tokens is not None
    model = learner.sampler.generator.model
    current = {name: p.detach().clone() for name, p in model.named_parameters()}
    prompt = learner.chat_tokens.prompt([{"role": "user", "content": "Your card: K. Action?"}])
    same = SnapshotSampler(model, learner.sampler, current).sample([prompt], [3])
    assert same[0].token_ids == learner.sampler.sample([prompt], [3])[0].token_ids
    shifted = {name: value + 0.5 * torch.randn_like(value) for name, value in current.items()}
    other = SnapshotSampler(model, learner.sampler, shifted).sample([prompt], [3])
    assert other[0].logprobs != same[0].logprobs
    for name, parameter in model.named_parameters():
        assert torch.equal(parameter, current[name]), name


def test_resume_of_a_self_play_run_takes_the_same_next_step(
    tiny_model_with_long_context_path: Path, tmp_path: Path
) -> None:
    config = selfplay_config(
        tiny_model_with_long_context_path, tmp_path / "run", opponents=["self", "snapshot"], snapshot_every=1
    )
    straight = Trainer(config)
    try:
        straight.train()
        baselines, pool = dict(straight.selfplay.baselines), sorted(straight.selfplay.pool)
    finally:
        straight.close()
    config.out = str(tmp_path / "resumed")
    resumed = Trainer(config)
    try:
        assert resumed.load_checkpoint(tmp_path / "run" / "checkpoints" / "iteration-000001")
        got = resumed.step()
        assert resumed.selfplay.baselines == pytest.approx(baselines) and sorted(resumed.selfplay.pool) == pool
    finally:
        resumed.close()
    expected_metrics = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[1])
    assert got["loss"] == pytest.approx(expected_metrics["loss"], abs=1e-6)
    assert got["advantage_abs_mean"] == pytest.approx(expected_metrics["advantage_abs_mean"], abs=1e-6)
    state = torch.load(tmp_path / "run" / "checkpoints" / "iteration-000002" / "trainer_state.pt")
    for name, parameter in resumed.model.named_parameters():
        assert torch.allclose(parameter, state["model"][name], atol=1e-6), name


def test_a_team_of_roles_passes_pettingzoo_api_test_and_shares_the_outcome() -> None:
    api_test(RoleTeam("FrozenLake-v0", ["planner", "executor"], {"size": 2}), num_cycles=20)
    team = RoleTeam("FrozenLake-v0", ["planner", "executor"], {"size": 3})
    team.reset(seed=0, options={"task_id": 4})
    while team.outcome is None:
        if team.agent_selection == "planner":
            team.step("Go toward the goal.\nAction: none")
        else:
            team.step(f"Action: {team.env.unwrapped.oracle_action()}")
    assert team.outcome.rewards == {"planner": 1.0, "executor": 1.0} and team.last_info["success"]
    assert "planner: Go toward the goal." in team.observe("executor")["text"]


def test_roles_in_one_episode_credit_every_role_with_the_shared_outcome(
    tiny_model_with_long_context_path: Path, tmp_path: Path
) -> None:
    roles = [{"name": "planner", "prompt": "You plan."}, {"name": "executor", "prompt": "You act."}]
    team = {"id": "FrozenLake-v0", "kwargs": {"size": 2}, "roles": roles}
    # A team plays every role itself, whatever the pool says.
    config = selfplay_config(tiny_model_with_long_context_path, tmp_path / "run", games=[team], opponents=["random"])
    trainer = Trainer(config)
    try:
        rows = trainer.rollout()
        turn_advantages = trainer.selfplay.advantages(rows, std_normalize=True)
        games = trainer.selfplay.games[0]
    finally:
        trainer.close()
    assert {row.role for row in rows} == {"planner", "executor"}
    for row in rows:
        system = {"planner": "You plan.", "executor": "You act."}[row.role]
        prompt = trainer.chat_tokens.prompt(chat(system, row.anchors[0]))
        assert row.token_ids[: len(prompt)] == prompt
    # Every role of a game has the game's one reward: the env episode's return.
    by_game: dict[int, set[float]] = {}
    for row in rows:
        by_game.setdefault(row.game, set()).add(row.rewards[0])
    assert all(len(rewards) == 1 for rewards in by_game.values())
    last = games[-1]  # the iteration's last game is still this instance's state
    assert by_game[len(by_game) - 1] == {last.episode_return}
    # Role-conditioned: the planner's and executor's baselines are kept apart, each seat credited once.
    assert set(trainer.selfplay.baselines) == {("FrozenLake-v0", "planner"), ("FrozenLake-v0", "executor")}
    assert len(turn_advantages) == len(rows)


@pytest.mark.parametrize("name", ["selfplay-kuhn.yaml", "roles-frozenlake.yaml"])
def test_the_shipped_configs_train_an_iteration(
    name: str, tiny_model_with_long_context_path: Path, tmp_path: Path
) -> None:
    """Each shipped self-play config, on the tiny model and a small budget: its games, pool and evaluation work."""
    config = load_config(CONFIGS / name)
    config.model.path, config.model.device, config.out = str(tiny_model_with_long_context_path), "cpu", str(tmp_path)
    config.groups_per_iteration, config.algorithm.group_size, config.rollout.max_new_tokens = 3, 2, 4
    config.rollout.max_turns = [[0, 2]]
    config.eval_episodes, config.tensorboard = 2, False
    trainer = Trainer(config)
    try:
        metrics = trainer.step() | trainer.evaluate()
    finally:
        trainer.close()
    assert metrics["games"] >= 1 and metrics["model_tokens"] > 0
    assert any(key.startswith("eval_win_rate/") for key in metrics)


def test_selfplay_config_checks_and_the_shipped_configs_load() -> None:
    base = {"model": {"path": "m"}, "selfplay": {"games": [{"id": "KuhnPoker-v0"}]}}
    assert from_dict(TrainConfig, base).selfplay.opponents == ["self"]
    with pytest.raises(ValueError, match="grpo or ppo"):
        from_dict(TrainConfig, base | {"algorithm": {"name": "gigpo"}})
    with pytest.raises(ValueError, match="backend hf"):
        from_dict(TrainConfig, base | {"rollout": {"backend": "openai"}, "model": {"path": "m", "lora": {}}})
    with pytest.raises(ValueError, match="envs must name"):
        from_dict(TrainConfig, {"model": {"path": "m"}})
    for name in ("selfplay-kuhn.yaml", "roles-frozenlake.yaml"):
        assert load_config(CONFIGS / name).selfplay is not None
