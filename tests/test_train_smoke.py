"""``agentgym train`` end to end, 2 iterations on a tiny model: in-process (PPO), and against
``serve-model``'s app (GiGPO) with LoRA hot-loading; and checkpoint + resume giving the same next step."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from asgi import serving_in_thread

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

import httpx  # noqa: E402
import yaml  # noqa: E402

from agentgym.contract.registry import env_info  # noqa: E402
from agentgym.evaluation.plan import EvalItem  # noqa: E402
from agentgym.llm.generation import Generator  # noqa: E402
from agentgym.llm.serve_model import create_app  # noqa: E402
from agentgym.train.cli import main  # noqa: E402
from agentgym.train.config import TrainConfig, from_dict, load_config  # noqa: E402
from agentgym.train.trainer import Trainer  # noqa: E402

CONFIGS = Path(__file__).resolve().parent.parent / "agentgym" / "train" / "configs"


def tiny_config(model: Path, out: Path, **overrides: object) -> dict:
    config = {
        "model": {"path": str(model), "device": "cpu", "lora": {"r": 4, "alpha": 8}},
        "envs": [{"id": "FrozenLake-v0", "kwargs": {"size": 2}}],
        "algorithm": {"name": "grpo", "group_size": 2},
        "rollout": {"max_new_tokens": 4, "max_turns": [[0, 1], [1, 2]], "system_prompt": "Reply with one move."},
        "out": str(out),
        "iterations": 2,
        "groups_per_iteration": 2,
        "minibatch_size": 2,
        "learning_rate": 0.01,
        "checkpoint_every": 1,
        "tensorboard": False,
    }
    for key, value in overrides.items():
        config[key] = value if not isinstance(value, dict) else config.get(key, {}) | value
    return config


def write(config: dict, path: Path) -> Path:
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def in_process_run(tiny_model_with_long_context_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``agentgym train`` in-process: 2 iterations of PPO with KL and LoRA, a checkpoint after each; its folder."""
    folder = tmp_path_factory.mktemp("train")
    config = tiny_config(
        tiny_model_with_long_context_path,
        folder / "run",
        algorithm={"name": "ppo", "kl_weight": 0.1, "clip_high": 0.28},
        eval_every=2,
        eval_episodes=2,
        tensorboard=True,
    )
    assert main([str(write(config, folder / "config.yaml"))]) == 0
    return folder


def test_agentgym_train_in_process(in_process_run: Path) -> None:
    run = in_process_run / "run"
    rows = metrics(run)
    assert [row["iteration"] for row in rows] == [0, 1]
    assert [row["max_turns"] for row in rows] == [1, 2]  # the horizon schedule
    assert all(row["model_tokens"] > 0 and "value_loss" in row and "kl" in row for row in rows)
    assert rows[0]["logprob_mismatch_mean"] < 1e-3  # sampler and trainer score the same ids alike
    assert "eval_success_rate" in rows[1] and (run / "eval" / "iteration-000002").is_dir()
    assert (run / "checkpoints" / "iteration-000002" / "model" / "adapter_config.json").is_file()
    assert any((run / "tensorboard").iterdir())


def test_resume_from_a_checkpoint_gives_the_same_next_step(in_process_run: Path) -> None:
    """From the run's first checkpoint, one step reproduces the run's second: loss, weights, value head."""
    config = load_config(in_process_run / "config.yaml")
    config.out, config.tensorboard = str(in_process_run / "resumed"), False
    resumed = Trainer(config)
    try:
        assert resumed.load_checkpoint(in_process_run / "run" / "checkpoints" / "iteration-000001")
        assert resumed.iteration == 1
        got = resumed.step()
    finally:
        resumed.close()
    expected = metrics(in_process_run / "run")[1]
    assert got["loss"] == pytest.approx(expected["loss"], abs=1e-6)
    assert got["success_rate"] == expected["success_rate"]
    straight = torch.load(in_process_run / "run" / "checkpoints" / "iteration-000002" / "trainer_state.pt")
    for name, parameter in resumed.model.named_parameters():
        if parameter.requires_grad:
            assert torch.allclose(parameter, straight["model"][name], atol=1e-6), name
    for name, value in resumed.value_head.state_dict().items():
        assert torch.allclose(value, straight["value_head"][name], atol=1e-6), name


def test_a_run_resumed_in_its_folder_logs_each_iteration_once(in_process_run: Path, tmp_path: Path) -> None:
    """Resumed from its first checkpoint, a run drops the metrics rows after it and writes them again, once; started
    afresh in a folder without checkpoints (a run killed before its first), it drops them all."""
    shutil.copytree(in_process_run / "run", tmp_path / "run")
    config = load_config(in_process_run / "config.yaml")
    config.out, config.tensorboard, config.eval_every = str(tmp_path / "run"), False, 0
    trainer = Trainer(config)
    try:
        assert trainer.load_checkpoint(tmp_path / "run" / "checkpoints" / "iteration-000001")
        assert [row["iteration"] for row in metrics(tmp_path / "run")] == [0]
        trainer.train()
    finally:
        trainer.close()
    assert [row["iteration"] for row in metrics(tmp_path / "run")] == [0, 1]
    shutil.rmtree(tmp_path / "run" / "checkpoints")  # as if killed before its first checkpoint: started afresh
    config.iterations = 1
    trainer = Trainer(config)
    try:
        trainer.train()
    finally:
        trainer.close()
    assert [row["iteration"] for row in metrics(tmp_path / "run")] == [0]


def test_the_prefix_cache_changes_no_rollout_and_no_evaluation(
    tiny_model_with_long_context_path: Path, tmp_path: Path
) -> None:
    """While the weights hold still (one rollout, one evaluation) the trainer reuses each turn's prefix: the same
    tokens and replies as without it; the cache is gone before the update."""
    played, evaluated, reused = [], [], []
    for tokens in (0, 32_768):
        overrides = {"prefix_cache_tokens": tokens, "max_turns": [[0, 3]]}
        config = tiny_config(
            tiny_model_with_long_context_path, tmp_path / str(tokens), rollout=overrides, eval_episodes=3
        )
        trainer = Trainer(from_dict(TrainConfig, config))
        try:
            with trainer.prefix_cached():
                cache = trainer.generator.prefix_cache
                played.append([(t.token_ids, t.loss_mask) for t in trainer.rollout()])
                reused.append(len(cache) if cache is not None else 0)
            assert trainer.generator.prefix_cache is None
            trainer.evaluate()
            episodes = (tmp_path / str(tokens) / "eval" / "iteration-000000" / "episodes.jsonl").read_text()
            evaluated.append(sorted(json.loads(line)["messages"] for line in episodes.splitlines()))
        finally:
            trainer.close()
    assert reused[0] == 0 and reused[1] > 0
    assert played[0] == played[1] and evaluated[0] == evaluated[1]


def test_evaluate_plays_the_items_it_is_given_beside_the_training_envs(
    tiny_model_with_long_context_path: Path, tmp_path: Path
) -> None:
    trainer = Trainer(from_dict(TrainConfig, tiny_config(tiny_model_with_long_context_path, tmp_path)))
    held_out = [EvalItem("Maze-v0", 2, "dev", 1, task_ids=(3, 5)), EvalItem("FrozenLake-v0", 1, "test", 1)]
    try:
        metrics = trainer.evaluate(items=held_out, label="held-out")
    finally:
        trainer.close()
    assert metrics["eval_errors"] == 0
    episodes = (tmp_path / "eval" / "iteration-000000-held-out" / "episodes.jsonl").read_text().splitlines()
    played = sorted((record["env_id"], record["task_id"]) for record in map(json.loads, episodes))
    assert played[1:] == [("Maze-v0", 3), ("Maze-v0", 5)]
    assert played[0][0] == "FrozenLake-v0" and played[0][1] in env_info("FrozenLake-v0").splits.ids("test")
    assert not (tmp_path / "eval" / "iteration-000000").exists()


@pytest.fixture
def model_server(tiny_model_with_long_context_path: Path) -> Iterator[str]:
    """``serve-model``'s app for the tiny model on a free loopback port, in a thread; yields its base URL."""
    generator = Generator.from_pretrained(tiny_model_with_long_context_path, device="cpu")
    app = create_app(generator, tiny_model_with_long_context_path.name)
    with serving_in_thread(app) as url:
        yield f"{url}/v1"


def test_agentgym_train_against_serve_model_with_lora_hot_loading(
    tiny_model_with_long_context_path: Path, model_server: str, tmp_path: Path
) -> None:
    config = tiny_config(
        tiny_model_with_long_context_path,
        tmp_path / "run",
        algorithm={"name": "gigpo"},
        rollout={"backend": "openai", "base_url": model_server, "adapter_name": "policy"},
        eval_every=2,
        eval_episodes=2,
        checkpoint_every=2,
    )
    assert main([str(write(config, tmp_path / "config.yaml"))]) == 0
    rows = metrics(tmp_path / "run")
    assert [row["iteration"] for row in rows] == [0, 1] and all(row["model_tokens"] > 0 for row in rows)
    # The adapter was hot-loaded after the update and served the second rollout and the evaluation.
    served = [entry["id"] for entry in httpx.get(model_server + "/models").json()["data"]]
    assert "policy" in served
    assert rows[1]["logprob_mismatch_mean"] < 1e-3  # the server sampled with the updated adapter
    assert "eval_success_rate" in rows[1]


def test_configs_load_and_reject_unknown_keys(tmp_path: Path) -> None:
    shipped = sorted(CONFIGS.glob("*.yaml"))
    assert len(shipped) >= 3
    for path in shipped:
        config = load_config(path)
        assert (config.envs or config.selfplay) and config.model.path
    bad = write(
        {"model": {"path": "m"}, "envs": [{"id": "Maze-v0"}], "algorithm": {"nmae": "ppo"}}, tmp_path / "b.yaml"
    )
    with pytest.raises(ValueError, match="nmae"):
        load_config(bad)
    assert main([str(bad)]) == 2
    schedule = from_dict(TrainConfig, {"model": {"path": "m"}, "envs": [{"id": "Maze-v0"}]}).rollout
    schedule.max_turns = [[0, 3], [10, 5], [20, 8]]
    assert [schedule.turns_at(i) for i in (0, 9, 10, 25)] == [3, 3, 5, 8]
