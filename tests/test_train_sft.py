"""Supervised fine-tuning on expert episodes: the data set, its tokens, the ``sft`` algorithm, RL from SFT.

The oracle plays 2x2 FrozenLake train tasks (short chats, so the real model's steps take seconds);
``agentgym train data`` turns its results folder into a data set. The real SmolLM2-135M-Instruct
(``model.path: smollm2``) checks the assistant-only mask against its chat template and that an SFT
step lowers the loss on the oracle's transcripts while only the LoRA parameters move; the tiny random
model checks what needs only shapes: SFT checkpoints resume exactly, GRPO starts from the SFT run's
weights (``model.init_from``) and resumes exactly too. The exports load in TRL's ``SFTTrainer`` and in
verl's ``MultiTurnSFTDataset`` (verl's side venv).
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

import yaml  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from agentgym.contract.tool_parsing import template_messages  # noqa: E402
from agentgym.evaluation.runner import EvalItem  # noqa: E402
from agentgym.integrations import venvs  # noqa: E402
from agentgym.llm.models import ModelNotFoundError, resolve_model  # noqa: E402
from agentgym.train.cli import main  # noqa: E402
from agentgym.train.config import TrainConfig, from_dict, load_config  # noqa: E402
from agentgym.train.rollout import ChatTokens  # noqa: E402
from agentgym.train.sft_data import (  # noqa: E402
    batch_indices,
    build_dataset,
    example_trajectory,
    load_examples,
    play_oracle,
    training_trajectories,
)
from agentgym.train.trainer import Trainer  # noqa: E402

CONFIGS = Path(__file__).resolve().parent.parent / "agentgym" / "train" / "configs"
SYSTEM_PROMPT = "Reply with one move."
LAKE = {"id": "FrozenLake-v0", "kwargs": {"size": 2}}


@pytest.fixture(scope="module")
def oracle_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``agentgym train data``: the oracle's episodes on 2x2 lakes of the train split, as a data set."""
    out = tmp_path_factory.mktemp("sft") / "data"
    argv = ["data", "--env", "FrozenLake-v0", "--env-kwargs", '{"size": 2}', "--episodes", "12", "--out", str(out)]
    assert main(argv) == 0
    return out


@pytest.fixture(scope="module")
def smollm2() -> Path:
    try:
        return resolve_model("smollm2").folder
    except (ModelNotFoundError, ImportError) as error:
        pytest.skip(f"SmolLM2 is not installed: {error}")


def sft_config(model_path: Path | str, data: Path, out: Path, /, **overrides: object) -> dict:
    config = {
        "model": {"path": str(model_path), "device": "cpu"},
        "envs": [LAKE],
        "algorithm": {"name": "sft"},
        "data": {"path": str(data), "batch_size": 4},
        "rollout": {"system_prompt": SYSTEM_PROMPT, "max_new_tokens": 4, "max_turns": [[0, 2]]},
        "out": str(out),
        "iterations": 2,
        "minibatch_size": 2,
        "learning_rate": 0.002,
        "checkpoint_every": 1,
        "tensorboard": False,
    }
    return config | overrides


def write(config: dict, path: Path) -> Path:
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_data_set_records_its_size_and_tasks_and_keeps_to_train_tasks(oracle_data: Path, tmp_path: Path) -> None:
    manifest = json.loads((oracle_data / "data.json").read_text())
    examples = load_examples(oracle_data)
    assert manifest["examples"] == len(examples) > 1 and manifest["turns"] == sum(e.turns for e in examples)
    assert manifest["splits"] == {"train": len(examples)}  # identical chats (same lake) are kept once
    assert manifest["sources"][0]["episodes"] == 12 and manifest["sources"][0]["policy"] == "oracle"
    lake = manifest["envs"]["FrozenLake-v0[size=2]"]
    assert lake["task_set_fingerprint"] and lake["tasks"]["train"] == len({e.task_id for e in examples})
    assert len(manifest["tasks_digest"]) == len(manifest["digest"]) == 64
    assert all(e.success and e.split == "train" and e.messages[0]["role"] == "system" for e in examples)
    # Episodes of the dev split are refused as training data unless allowed.
    dev = play_oracle([EvalItem("FrozenLake-v0", 2, "dev", kwargs={"size": 2})], tmp_path / "dev")
    with pytest.raises(ValueError, match="dev split"):
        build_dataset([dev], tmp_path / "refused")
    assert build_dataset([dev], tmp_path / "allowed", allow_splits=("train", "dev"))["splits"].keys() == {"dev"}
    assert main(["data", "--env", "FrozenLake-v0", "--split", "test", "--out", str(tmp_path / "test")]) == 2
    # ...and the trainer refuses a data set holding tasks of the split it evaluates on.
    with pytest.raises(ValueError, match="never train on what you evaluate"):
        training_trajectories(tmp_path / "allowed", ChatTokens(None, [0]), SYSTEM_PROMPT, "text", "dev")


def test_assistant_only_mask_matches_the_chat_template(oracle_data: Path, smollm2: Path) -> None:
    """The example's ids are the template's rendering of the chat, token for token; the mask is 1 on the
    replies and their end-of-turn token only, as in a rollout where the model sampled them."""
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    chat_tokens = ChatTokens(tokenizer, [tokenizer.eos_token_id])
    for example in load_examples(oracle_data):
        trajectory = example_trajectory(example, chat_tokens, SYSTEM_PROMPT)
        chat = [{"role": "system", "content": SYSTEM_PROMPT}, *example.messages[1:]]
        last_reply = max(i for i, m in enumerate(chat) if m["role"] == "assistant")
        rendered = tokenizer.apply_chat_template(chat[: last_reply + 1], tokenize=False)
        ids = tokenizer(rendered, add_special_tokens=False).input_ids
        assert trajectory.token_ids == ids[: len(trajectory.token_ids)]
        assert tokenizer.decode(ids[len(trajectory.token_ids) :]) == "\n"  # the template's newline after the last turn
        replies = [m["content"] for m in chat if m["role"] == "assistant"]
        masked = [token for token, mask in zip(trajectory.token_ids, trajectory.loss_mask) if mask]
        assert tokenizer.decode(masked) == "".join(reply + "<|im_end|>" for reply in replies)
        assert len(trajectory.turn_ends) == len(replies) == example.turns
        assert all(trajectory.token_ids[end] == tokenizer.eos_token_id for end in trajectory.turn_ends)


def test_tool_call_episodes_render_as_the_template_does(tiny_tool_model_path: Path, tmp_path: Path) -> None:
    """Tools mode: a reply's ids are its ``<tool_call>`` block as the template writes it, then ``<|im_end|>``."""
    played = play_oracle(
        [EvalItem("FrozenLake-v0", 4, "train", kwargs={"size": 2})], tmp_path / "run", action_format="tools"
    )
    manifest = build_dataset([played], tmp_path / "data")
    assert manifest["action_format"] == "tools" and manifest["examples"] < 4  # call ids aside, repeats are kept once
    tokenizer = AutoTokenizer.from_pretrained(tiny_tool_model_path)
    chat_tokens = ChatTokens(tokenizer, [tokenizer.eos_token_id])
    for example in load_examples(tmp_path / "data"):
        assert example.tools and example.tools[0]["function"]["name"] == "move"
        trajectory = example_trajectory(example, chat_tokens, example.messages[0]["content"])
        last_reply = max(i for i, m in enumerate(example.messages) if m["role"] == "assistant")
        chat = template_messages(example.messages[: last_reply + 1])
        rendered = tokenizer.apply_chat_template(chat, tools=example.tools, tokenize=False)
        assert (
            trajectory.token_ids == tokenizer(rendered, add_special_tokens=False).input_ids[: len(trajectory.token_ids)]
        )
        masked = tokenizer.decode([t for t, mask in zip(trajectory.token_ids, trajectory.loss_mask) if mask])
        assert masked.count("<tool_call>") == masked.count("<|im_end|>") == example.turns
    with pytest.raises(ValueError, match="rollout.action_format is text"):
        training_trajectories(tmp_path / "data", chat_tokens, None, "text", "dev")


def test_sft_on_smollm2_lowers_the_loss_trains_only_lora_and_raises_success(
    oracle_data: Path, smollm2: Path, tmp_path: Path
) -> None:
    """Three SFT steps of the real model on the oracle's 2x2 lakes: the loss falls, only LoRA weights move, and
    greedy success on held-out dev lakes rises above the untrained model's (whose replies are not moves)."""
    examples = len(load_examples(oracle_data))
    config = sft_config(
        "smollm2",
        oracle_data,
        tmp_path / "run",
        model={"path": "smollm2", "device": "cpu", "lora": {"r": 8, "alpha": 16}},
        data={"path": str(oracle_data), "batch_size": examples},  # each step sees every example
        minibatch_size=examples,
        iterations=3,
        checkpoint_every=3,
        eval_every=3,
        eval_episodes=8,
        eval_concurrency=8,
    )
    trainer = Trainer(from_dict(TrainConfig, config))
    try:
        untrained = trainer.evaluate()["eval_success_rate"]
        before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
        trainer.train()
        after = dict(trainer.model.named_parameters())
    finally:
        trainer.close()
    rows = metrics(tmp_path / "run")
    assert rows[1]["loss"] < rows[0]["loss"]  # the oracle's replies' negative log-likelihood, before each update
    moved = {name for name, value in before.items() if not torch.equal(value, after[name])}
    assert {"lora_A", "lora_B"} <= {part for name in moved for part in name.split(".")}
    assert all("lora_" in name for name in moved)  # the base model's weights stay as they were
    assert (tmp_path / "run" / "checkpoints" / "iteration-000003" / "model" / "adapter_config.json").is_file()
    assert rows[-1]["eval_success_rate"] >= 0.5 > untrained  # measured here: 8 of 8 dev lakes, from 0 of 8


def test_sft_resumes_exactly_then_grpo_starts_from_it_and_resumes_exactly(
    oracle_data: Path, tiny_model_with_long_context_path: Path, tmp_path: Path
) -> None:
    # SFT, full fine-tuning, a checkpoint after each of 2 iterations.
    sft = sft_config(tiny_model_with_long_context_path, oracle_data, tmp_path / "sft", learning_rate=0.01)
    assert main([str(write(sft, tmp_path / "sft.yaml"))]) == 0
    assert_resumes_exactly(load_config(tmp_path / "sft.yaml"), tmp_path / "sft", tmp_path / "sft-resumed")
    # GRPO with a new LoRA adapter on the SFT run's weights.
    grpo = sft | {
        "model": {
            "path": str(tiny_model_with_long_context_path),
            "device": "cpu",
            "lora": {"r": 4, "alpha": 8},
            "init_from": str(tmp_path / "sft"),
        },
        "algorithm": {"name": "grpo", "group_size": 2},
        "data": {"path": ""},
        "out": str(tmp_path / "grpo"),
        "groups_per_iteration": 2,
    }
    assert main([str(write(grpo, tmp_path / "grpo.yaml"))]) == 0
    config = load_config(tmp_path / "grpo.yaml")
    config.out = str(tmp_path / "grpo-start")
    start = Trainer(config)
    try:  # before its first update the GRPO policy is the SFT run's last model (a new adapter changes nothing yet)
        sft_model = AutoModelForCausalLM.from_pretrained(
            tmp_path / "sft" / "checkpoints" / "iteration-000002" / "model"
        )
        ids = torch.arange(3, 40)[None]
        assert torch.allclose(start.model(input_ids=ids).logits, sft_model(input_ids=ids).logits, atol=1e-5)
        base = AutoModelForCausalLM.from_pretrained(tiny_model_with_long_context_path)
        assert not torch.allclose(base(input_ids=ids).logits, sft_model(input_ids=ids).logits, atol=1e-3)
    finally:
        start.close()
    assert_resumes_exactly(config, tmp_path / "grpo", tmp_path / "grpo-resumed")


def assert_resumes_exactly(config: TrainConfig, run: Path, out: Path) -> None:
    """From the run's first checkpoint, one step gives the run's second: loss and trainable weights."""
    config.out = str(out)
    resumed = Trainer(config)
    try:
        assert resumed.load_checkpoint(run / "checkpoints" / "iteration-000001")
        got = resumed.step()
        trained = {name: p for name, p in resumed.model.named_parameters() if p.requires_grad}
    finally:
        resumed.close()
    assert got["loss"] == pytest.approx(metrics(run)[1]["loss"], abs=1e-6)
    straight = torch.load(run / "checkpoints" / "iteration-000002" / "trainer_state.pt")["model"]
    assert straight.keys() == trained.keys()
    for name, value in straight.items():
        assert torch.allclose(trained[name], value, atol=1e-6), name


def test_batches_cover_each_epoch_once() -> None:
    seen = [index for iteration in range(5) for index in batch_indices(10, 4, 0, iteration)]
    assert sorted(seen[:10]) == list(range(10)) and sorted(seen[10:20]) == list(range(10))
    assert seen[:10] != seen[10:20]  # reshuffled each epoch
    assert batch_indices(10, 4, 0, 3) == batch_indices(10, 4, 0, 3)


def test_export_trains_in_trls_sft_trainer(oracle_data: Path, tiny_model_path: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    from trl import SFTConfig, SFTTrainer

    dataset = datasets.load_dataset("json", data_files=str(oracle_data / "trl.jsonl"), split="train")
    assert len(dataset) == len(load_examples(oracle_data)) and dataset.column_names == ["messages"]
    args = SFTConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=2,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        max_length=256,
    )
    trainer = SFTTrainer(model=str(tiny_model_path), args=args, train_dataset=dataset)
    tokenizer = trainer.processing_class
    rendered = tokenizer.apply_chat_template(dataset[0]["messages"], tokenize=False)
    ids = tokenizer(rendered, add_special_tokens=False).input_ids
    assert trainer.train_dataset[0]["input_ids"] == ids[:256]  # the chat as its template renders it (cut at max_length)
    trainer.train()
    assert trainer.state.global_step == 1


def test_export_loads_in_verls_multiturn_sft_dataset(oracle_data: Path, smollm2: Path) -> None:
    python = venvs.ensure("verl")
    code = VERL_CHECK.format(parquet=str(oracle_data / "verl.parquet"), tokenizer=str(smollm2))
    run = subprocess.run(
        [str(python), "-c", code], env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-3000:]
    replies = [[m["content"] for m in e.messages if m["role"] == "assistant"] for e in load_examples(oracle_data)]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == [
        "".join(r + "<|im_end|>\n" for r in row) for row in replies
    ]


#: In verl's venv: its MultiTurnSFTDataset reads the parquet; what its loss mask covers, per row.
VERL_CHECK = """
import json
from transformers import AutoTokenizer
from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset
tokenizer = AutoTokenizer.from_pretrained({tokenizer!r})
dataset = MultiTurnSFTDataset({parquet!r}, tokenizer, {{"max_length": 1024, "truncation": "error"}})
rows = [dataset[i] for i in range(len(dataset))]
print(json.dumps([tokenizer.decode(row["input_ids"][row["loss_mask"].bool()]) for row in rows]))
"""


def test_shipped_sft_configs_load() -> None:
    sft = [load_config(path) for path in sorted(CONFIGS.glob("sft-*.yaml"))]
    assert sft and all(c.algorithm.name == "sft" and c.data.path for c in sft)
    rl = [load_config(path) for path in sorted(CONFIGS.glob("*-from-sft.yaml"))]
    assert rl and all(c.model.init_from and c.algorithm.name != "sft" for c in rl)
    with pytest.raises(ValueError, match="data.path"):
        from_dict(TrainConfig, {"model": {"path": "m"}, "envs": [LAKE], "algorithm": {"name": "sft"}})


def test_gradient_checkpointing_takes_the_same_step_through_transformers_current_name(
    oracle_data: Path, tiny_model_path: Path, tmp_path: Path
) -> None:
    """``model.gradient_checkpointing`` recomputes activations (the same loss and gradients) and calls transformers'
    current name for it, so a run does not warn on every start."""
    steps = []
    for checkpointing in (False, True):
        config = sft_config(tiny_model_path, oracle_data, tmp_path / str(checkpointing), iterations=1)
        config["model"] |= {"gradient_checkpointing": checkpointing}
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*gradient_checkpointing_enable.*", category=FutureWarning)
            trainer = Trainer(from_dict(TrainConfig, config))
        try:
            steps.append((trainer.step()["loss"], trainer.model.is_gradient_checkpointing))
        finally:
            trainer.close()
    assert steps[0][1] is False and steps[1][1] is True
    assert steps[1][0] == pytest.approx(steps[0][0], abs=1e-6)
