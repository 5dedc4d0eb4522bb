"""TRL's real ``GRPOTrainer`` (trl 1.16) on agentgym envs, on CPU with tiny models built here.

Text replies (``rollout_func``): two GRPO steps on WebShop; the test reads the batch TRL
really trained on and checks that the shop's tokens were masked out of the loss
(``env_mask`` -> TRL's ``tool_mask``) and that the rewards TRL used are the episodes' scores.
Tool calls (``environment_factory``): TRL's trainer takes the factory class for FrozenLake;
its tools, their schema and the reward function are the env's.
A random tiny model scores 0, so these steps do not show the parameters moving
(GRPO's advantages are all 0); docs/train-with-trl.md says so.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from tiny_model import build_tiny_model  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from transformers.utils import get_json_schema  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from agentgym.integrations.trl import grpo_kwargs  # noqa: E402


def grpo_config(out: Path, **overrides: Any) -> GRPOConfig:
    settings: dict[str, Any] = {
        "output_dir": str(out),
        "max_steps": 2,
        "per_device_train_batch_size": 4,
        "num_generations": 4,
        "learning_rate": 1e-3,
        "use_cpu": True,
        "bf16": False,
        "report_to": "none",
        "save_strategy": "no",
        "logging_steps": 1,
        "seed": 0,
    }
    return GRPOConfig(**(settings | overrides))


class Spy:
    """Records what ``trainer`` really computed: each batch's tensors and the rewards with the envs' scores."""

    def __init__(self, trainer: GRPOTrainer) -> None:
        self.batches: list[dict[str, Any]] = []
        self.rewards: list[torch.Tensor] = []
        self.env_scores: list[list[float]] = []
        generate, calculate = trainer._generate_and_score_completions, trainer._calculate_rewards

        def generate_and_score(inputs: Any) -> dict[str, Any]:
            output = generate(inputs)
            self.batches.append(output)
            return output

        def calculate_rewards(inputs: Any, *args: Any) -> torch.Tensor:
            rewards = calculate(inputs, *args)
            self.rewards.append(rewards.clone())
            if trainer.environments:
                self.env_scores.append([env.score for env in trainer.environments])
            else:
                self.env_scores.append([row["env_score"] for row in inputs])
            return rewards

        trainer._generate_and_score_completions = generate_and_score
        trainer._calculate_rewards = calculate_rewards


def test_tool_calls_environment_factory_is_taken_by_grpo_trainer(tmp_path: Path) -> None:
    """Tools mode: TRL's GRPOTrainer takes the factory; its tools, their schema and the env reward are the env's."""
    folder = build_tiny_model(tmp_path / "model", context_length=1024, tools=True)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    # TRL parses tool calls with a response template it knows by chat template: Qwen2.5's, as TRL ships it.
    tokenizer.chat_template = importlib.resources.files("trl").joinpath("chat_templates/qwen2_5.jinja").read_text()
    model = AutoModelForCausalLM.from_pretrained(folder)

    # The few lines (docs/train-with-trl.md):
    kwargs = grpo_kwargs("FrozenLake-v0", [0], action_format="tools", env_kwargs={"size": 2})
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=grpo_config(tmp_path / "out"), **kwargs)

    assert trainer.reward_func_names == ["FrozenLake_v0"]  # get_reward, the env's score
    (environment,) = trainer._environment_pool[None]
    assert [tool.__name__ for tool in trainer.tools] == ["move"]
    schema = get_json_schema(trainer.tools[0])["function"]
    assert schema["parameters"]["properties"]["direction"]["enum"] == ["left", "down", "right", "up"]
    row = kwargs["train_dataset"][0]
    assert "S" in environment.reset(**row)
    environment.move(direction="right")
    assert "reached the goal" in environment.move(direction="down") and environment.get_reward() == 1.0
    with pytest.raises(ValueError, match="episode is over"):
        environment.move(direction="up")
    environment.reset(**row)
    assert "must be one of" in environment.move(direction="sideways")  # the env's explanatory observation


def test_text_webshop_rollout_func(tmp_path: Path) -> None:
    """WebShop in text replies: agentgym's rollout inside TRL's rollout_func, env tokens masked by env_mask."""
    folder = build_tiny_model(tmp_path / "model", context_length=4096)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)

    # The few lines (docs/train-with-trl.md):
    kwargs = grpo_kwargs("WebShop-v0", [0], max_turns=2, system_prompt="Shop.")

    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=grpo_config(
            tmp_path / "out", max_completion_length=3000, per_device_train_batch_size=2, num_generations=2
        ),
        **kwargs,
    )
    spy = Spy(trainer)
    trainer.train()

    batch = spy.batches[0]
    assert (batch["completion_mask"] * (1 - batch["tool_mask"])).sum() > 0
    for row_index in range(len(batch["completion_ids"])):
        keep = batch["completion_mask"][row_index].bool()
        row_ids, env_mask = batch["completion_ids"][row_index][keep], batch["tool_mask"][row_index][keep]
        model_text = tokenizer.decode(row_ids[env_mask == 1])
        env_text = tokenizer.decode(row_ids[env_mask == 0])
        assert "[SEP] Instruction: [SEP]" not in model_text  # the shop's pages are never in the loss
        if env_text:  # each masked run is the template's user turn holding the shop's page
            assert env_text.count("<|user|>") == env_text.count("WebShop [SEP] Instruction: [SEP]") >= 1
    assert trainer.reward_func_names == ["env_reward"]
    for rewards, scores in zip(spy.rewards, spy.env_scores):
        assert rewards[:, 0].tolist() == pytest.approx(scores)
    # A random model scores 0 everywhere, so GRPO's advantages are 0 and the parameters stay (see the docs).
    assert all(scores == [0.0, 0.0] for scores in spy.env_scores)
