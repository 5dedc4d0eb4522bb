"""The trainer on a vision-language model: GRPO iterations on a screen env (MiniWoB++ in Chromium) with the
tiny Qwen2-VL, its screenshots kept as image inputs per turn (never re-tokenized), env and image tokens
masked, sampler and trainer scoring alike, parameters changing, and resume equal to the straight run."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("PIL")

import torch  # noqa: E402
from tiny_vlm import build_tiny_qwen2_vl  # noqa: E402

from agentgym.train.config import LoraConfig, TrainConfig, from_dict  # noqa: E402
from agentgym.train.trainer import Trainer  # noqa: E402

ENV = "MiniWoB-click-button-v0"


def vlm_config(model: Path, out: Path) -> TrainConfig:
    return from_dict(
        TrainConfig,
        {
            "model": {"path": str(model), "device": "cpu"},
            "envs": [{"id": ENV}],
            # Random replies earn nothing here: the entropy bonus makes every update move the weights.
            "algorithm": {"name": "grpo", "group_size": 2, "entropy_weight": 0.01},
            "rollout": {
                "max_new_tokens": 6,
                "max_turns": [[0, 2]],
                "observation": "screenshot",
                "max_pixels": 160 * 128,
                "system_prompt": "Click the button.",
                "env_workers": 2,
            },
            "out": str(out),
            "iterations": 2,
            "groups_per_iteration": 1,
            "minibatch_size": 2,
            "learning_rate": 0.01,
            "checkpoint_every": 1,
            "eval_every": 2,
            "eval_episodes": 1,
            "tensorboard": False,
        },
    )


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen2_vl(tmp_path_factory.mktemp("vlm") / "tiny-qwen2-vl", context_length=4096)


@pytest.fixture(scope="module")
def run(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict], dict]:
    """Two GRPO iterations with a checkpoint after each; the folder, each iteration's metrics, the first weights."""
    out = tmp_path_factory.mktemp("train") / "run"
    trainer = Trainer(vlm_config(model_path, out))
    initial = copy.deepcopy({name: p.detach() for name, p in trainer.model.named_parameters()})
    rows: list[dict] = []
    try:
        trainer.train(on_iteration=rows.append)
    finally:
        trainer.close()
    return out, rows, initial


def test_rollouts_keep_each_turns_images_and_mask_them(model_path: Path, tmp_path: Path) -> None:
    """Rollouts on screenshots, then a PPO step (value head) with LoRA and the KL reference (the adapter off)."""
    config = vlm_config(model_path, tmp_path / "run")
    config.model.lora = LoraConfig(r=4, alpha=8)
    config.algorithm.name, config.algorithm.kl_weight = "ppo", 0.1
    trainer = Trainer(config)
    try:
        trajectories = trainer.rollout()
        processor = trainer.processor
        assert processor is not None
        image_token = processor.image_token_id
        for trajectory in trajectories:
            # One image chunk per observation the model acted on: the reset's and each answer but the last.
            assert len(trajectory.images) == trajectory.turns >= 1
            grids = torch.cat([chunk["image_grid_thw"] for chunk in trajectory.images])
            positions = [i for i, token in enumerate(trajectory.token_ids) if token == image_token]
            assert len(positions) == int(grids.prod(dim=1).sum()) // 4  # every image's tokens, 2x2 merged
            assert all(trajectory.loss_mask[i] == 0 for i in positions)  # env and image tokens are masked
            assert sum(trajectory.loss_mask) > 0
            inputs = trainer.chat_tokens.model_inputs(trajectory)
            assert inputs["mm_token_type_ids"].sum() == len(positions)
        adapter = {name: p.detach().clone() for name, p in trainer.model.named_parameters() if p.requires_grad}
        assert adapter and all("lora_" in name for name in adapter)
        metrics = trainer.step()
        assert metrics["logprob_mismatch_mean"] < 1e-3 and "kl" in metrics and "value_loss" in metrics
        assert any(not torch.equal(p, adapter[name]) for name, p in trainer.model.named_parameters() if name in adapter)
    finally:
        trainer.close()


def test_grpo_on_screenshots_updates_the_vlm(run: tuple[Path, list[dict], dict]) -> None:
    out, rows, initial = run
    assert [row["iteration"] for row in rows] == [0, 1]
    assert rows[1]["eval_errors"] == 0 and "eval_success_rate" in rows[1]
    (record,) = [json.loads(line) for line in (out / "eval" / "iteration-000002" / "episodes.jsonl").open()]
    assert record["messages"][1]["content"][0]["type"] == "image_url"  # evaluated on screenshots too
    for row in rows:
        assert row["model_tokens"] > 0
        assert row["logprob_mismatch_mean"] < 1e-3  # the sampler and the trainer saw the same images
    straight = torch.load(out / "checkpoints" / "iteration-000002" / "trainer_state.pt")
    changed = [name for name, value in straight["model"].items() if not torch.equal(value, initial[name])]
    assert any("visual" in name for name in changed) and any("language_model" in name for name in changed)
    saved = out / "checkpoints" / "iteration-000002" / "model"
    assert (saved / "preprocessor_config.json").is_file() and (saved / "tokenizer_config.json").is_file()


def test_resume_from_a_checkpoint_gives_the_same_next_step(run: tuple[Path, list[dict], dict], tmp_path: Path) -> None:
    out, rows, _ = run
    model = json.loads((out / "config.json").read_text())["model"]["path"]
    resumed = Trainer(vlm_config(Path(model), tmp_path / "resumed"))
    try:
        assert resumed.load_checkpoint(out / "checkpoints" / "iteration-000001") and resumed.iteration == 1
        got = resumed.step()
    finally:
        resumed.close()
    assert got["loss"] == pytest.approx(rows[1]["loss"], abs=1e-6)
    straight = torch.load(out / "checkpoints" / "iteration-000002" / "trainer_state.pt")
    for name, parameter in resumed.model.named_parameters():
        assert torch.allclose(parameter, straight["model"][name], atol=1e-6), name


def test_gigpo_anchors_tell_screens_apart() -> None:
    """GiGPO groups turns by the observation they acted on: for screenshots, its text and its images."""
    from agentgym.images import image_part, text_part
    from agentgym.train.rollout import _observation

    def history(url: str) -> list[dict]:
        return [{"role": "user", "content": [image_part(url), text_part("Click OK.")]}]

    same, again, other = (_observation(history(url)) for url in ("data:a", "data:a", "data:b"))
    assert same == again != other and same.startswith("Click OK.\n[screen ")
    assert _observation([{"role": "user", "content": "text"}]) == "text"
