"""TRL's real ``GRPOTrainer`` (trl 1.16) on agentgym envs, on CPU with tiny models built here.

Text replies (``rollout_func``): two GRPO steps on WebShop; the test reads the batch TRL
really trained on and checks that the shop's tokens were masked out of the loss
(``env_mask`` -> TRL's ``tool_mask``) and that the rewards TRL used are the episodes' scores.
A random tiny model scores 0 there, so GRPO's advantages are 0 and the parameters stay.
FrozenLake in text: the tiny model first learns (a few supervised steps) to reply
``Action: <random direction>``; then two GRPO steps on 2x2 lakes, where some sampled
episodes reach the goal and some do not, so the advantages are non-zero and the parameters
change; env tokens masked and rewards equal to the scores there too.
Tool calls (``environment_factory``): TRL's trainer takes the factory class for FrozenLake;
its tools, their schema and the reward function are the env's.
"""

from __future__ import annotations

import importlib.resources
import random
import re
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")

import gymnasium as gym  # noqa: E402
from tiny_model import build_tiny_model  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from transformers.utils import get_json_schema  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from agentgym.integrations.trl import grpo_kwargs  # noqa: E402
from agentgym.wrappers.chat import ChatWrapper  # noqa: E402


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


def assert_env_tokens_masked(batch: dict[str, Any], tokenizer: Any, page: str) -> None:
    """In the batch TRL trained on, the env's turns (each matching regex ``page`` once) are masked out of the loss.

    Every completion's ids with ``tool_mask`` 0 are the template's user turns, one per
    observation; the ids left in the loss (the model's replies) never match ``page``.
    """
    assert (batch["completion_mask"] * (1 - batch["tool_mask"])).sum() > 0
    for row_index in range(len(batch["completion_ids"])):
        keep = batch["completion_mask"][row_index].bool()
        row_ids, env_mask = batch["completion_ids"][row_index][keep], batch["tool_mask"][row_index][keep]
        model_text = tokenizer.decode(row_ids[env_mask == 1])
        env_text = tokenizer.decode(row_ids[env_mask == 0])
        assert not re.search(page, model_text)  # the env's observations are never in the loss
        if env_text:  # each masked run is the template's user turn holding an observation
            assert env_text.count("<|user|>") == len(re.findall(page, env_text)) >= 1


def snapshot(model: Any) -> dict[str, torch.Tensor]:
    """A copy of ``model``'s trainable parameters."""
    return {name: value.detach().clone() for name, value in model.named_parameters() if value.requires_grad}


def changed(model: Any, before: dict[str, torch.Tensor]) -> list[str]:
    """The names of the trainable parameters of ``model`` that differ from ``before``."""
    return [name for name, value in model.named_parameters() if name in before and not torch.equal(value, before[name])]


def padded_rows(rows: list[tuple[list[int], list[int]]], pad_id: int) -> tuple[Any, Any, Any]:
    """(prompt ids, reply ids) rows as right-padded input ids, labels on the replies only, and the attention mask."""
    width = max(len(prompt) + len(reply) for prompt, reply in rows)
    input_ids = torch.full((len(rows), width), pad_id)
    labels = torch.full((len(rows), width), -100)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for index, (prompt, reply) in enumerate(rows):
        ids = torch.tensor(prompt + reply)
        input_ids[index, : len(ids)], attention[index, : len(ids)] = ids, 1
        labels[index, len(prompt) : len(ids)] = torch.tensor(reply)
    return input_ids, labels, attention


def train_two_grpo_steps(trainer: Any, model: Any, reward_column: int) -> tuple[Spy, bool]:
    """Run ``trainer`` (two GRPO steps); each step's reward column ``reward_column`` must be the episodes'
    scores. The spy and whether any parameter moved."""
    spy = Spy(trainer)
    before = snapshot(model)
    trainer.train()
    assert len(spy.rewards) == 2
    for rewards, scores in zip(spy.rewards, spy.env_scores):
        assert rewards[:, reward_column].tolist() == pytest.approx(scores)
    return spy, changed(model, before)


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
            tmp_path / "out", max_completion_length=1000, per_device_train_batch_size=2, num_generations=2
        ),
        **kwargs,
    )
    spy = Spy(trainer)
    before = snapshot(model)
    trainer.train()

    assert_env_tokens_masked(spy.batches[0], tokenizer, re.escape("WebShop [SEP] Instruction: [SEP]"))
    assert trainer.reward_func_names == ["env_reward"]
    for rewards, scores in zip(spy.rewards, spy.env_scores):
        assert rewards[:, 0].tolist() == pytest.approx(scores)
    # A random model scores 0 everywhere, so GRPO's advantages are 0 and the parameters stay: the
    # control for the FrozenLake test below, where rewards differ and the parameters move.
    assert all(scores == [0.0, 0.0] for scores in spy.env_scores)
    assert not changed(model, before)


DIRECTIONS = ("left", "down", "right", "up")


def teach_random_moves(model: Any, tokenizer: Any, env_id: str, tasks: list[int], **env_kwargs: Any) -> None:
    """A few supervised steps so that ``model`` answers FrozenLake chats with ``Action: <any direction>``.

    The contexts are the chats of seeded random walks on ``tasks`` (the start and a few turns in);
    each is paired with all four directions, so the model learns the reply's form, not a move:
    sampled at temperature 1 its move is about uniform, and some episodes reach the goal, some not.
    """
    rng = random.Random(0)
    env = ChatWrapper(gym.make(env_id, disable_env_checker=True, **env_kwargs), "Lake.")
    contexts = []
    for task in tasks:  # the start, and two random moves in (unless the walk ended)
        messages, _ = env.reset(seed=0, options={"task_id": task})
        for _ in range(3):
            contexts.append(messages)
            messages, _, terminated, truncated, _ = env.step(f"Action: {rng.choice(DIRECTIONS)}")
            if terminated or truncated:
                break
    env.close()
    rows = []
    for messages in contexts:
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
        for direction in DIRECTIONS:
            reply = tokenizer.encode(f"Action: {direction}", add_special_tokens=False) + [tokenizer.eos_token_id]
            rows.append((list(prompt), reply))
    input_ids, labels, attention = padded_rows(rows, tokenizer.pad_token_id)
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(25):
        loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test_text_frozenlake_grpo_steps_move_the_parameters(tmp_path: Path) -> None:
    """A puzzle in text replies with real learning signal: rewards differ in a group, so GRPO moves the weights.

    The tiny model first learns the reply's form (``Action: <random direction>``); on 2x2
    lakes with up to 5 replies some sampled episodes reach the goal (score 1) and some do not.
    """
    folder = build_tiny_model(tmp_path / "model", context_length=1024)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    tasks = [0, 4]  # the 2x2 lakes "S F / F G" and "S H / F G"
    teach_random_moves(model, tokenizer, "FrozenLake-v0", tasks, size=2)

    kwargs = grpo_kwargs("FrozenLake-v0", tasks, env_kwargs={"size": 2}, max_turns=5, system_prompt="Lake.")
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=grpo_config(tmp_path / "out", per_device_train_batch_size=8, max_completion_length=512),
        **kwargs,
    )
    spy, moved = train_two_grpo_steps(trainer, model, reward_column=0)
    # Some episodes reached the goal and some did not, so some groups' advantages are non-zero.
    assert {score for scores in spy.env_scores for score in scores} == {0.0, 1.0}
    assert any(batch["advantages"].abs().sum() > 0 for batch in spy.batches)
    assert moved, "GRPO steps with non-zero advantages left every parameter as it was"
    for batch in spy.batches:
        assert_env_tokens_masked(batch, tokenizer, r"\n\n[SP] ")  # the lake's top row opens every observation
    replies = [
        reply
        for batch in spy.batches
        for ids, mask, env_mask in zip(batch["completion_ids"], batch["completion_mask"], batch["tool_mask"])
        for reply in tokenizer.decode(ids[(mask * env_mask).bool()]).split("</s>")[:-1]
    ]
    moves = [reply for reply in replies if re.fullmatch(r"Action: (left|down|right|up)", reply)]
    assert len(moves) >= 0.8 * len(replies) and len({*moves}) == 4  # the taught form, every direction sampled


def test_tasks_sharing_a_prompt_take_turns_by_group() -> None:
    """Wordle's tasks all start with the same prompt (the word is hidden): each GRPO group plays
    one task, and the groups take the tasks in turn instead of all playing the last one made."""
    from agentgym.integrations.trl import AgentGymRollout

    rollout = AgentGymRollout("Wordle-v0")
    prompts = [rollout.register(task_id, seed=10 + task_id) for task_id in range(3)]
    assert prompts[0] == prompts[1] == prompts[2]
    tasks = rollout.tasks_for([prompts[0]] * 16, group_size=4)
    assert tasks == [(0, 10)] * 4 + [(1, 11)] * 4 + [(2, 12)] * 4 + [(0, 10)] * 4
    with pytest.raises(ValueError, match="did not make"):
        rollout.tasks_for([[{"role": "user", "content": "another prompt"}]], group_size=1)
    rollout.close()
