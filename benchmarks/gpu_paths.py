"""The CUDA paths on a GPU: the trainer, serve-model with LoRA hot-loading, and the eval runner.

Nothing is downloaded: a byte-level BPE tokenizer is trained on the envs' own text and a
Qwen2-architecture model with Qwen2.5-0.5B's shape (24 layers, 896 hidden, 14 heads, 2 KV
heads) but that tokenizer's vocabulary is initialised at random. That is enough to measure
speed and memory and to check the CUDA code paths; a random model does not solve tasks.

1. The trainer (in-process sampling) on two families at once (Sokoban and Wordle): GRPO and PPO,
   each with LoRA and with full fine-tuning, in bfloat16 mixed precision; per iteration the
   rollout and update time, peak GPU memory and the logprob mismatch between the sampler and
   the trainer. A resume check: a new trainer loaded from the iteration-2 checkpoint plays
   iteration 3, which must match the uninterrupted run's. A "pure bf16" full fine-tuning run
   (``model.dtype: bfloat16``) beside the default shows how many weights an update moves.
2. ``agentgym serve-model`` on CUDA (a subprocess, as a user starts it): the trainer's ``openai``
   rollout backend with LoRA hot-loading against it; ``agentgym eval`` with the ``openai``
   policy at concurrency 64; tokens/s of serve-model against ``Generator.generate_tokens`` and
   Hugging Face's ``model.generate`` on the same model, prompts and batch.

Run on a CUDA machine: ``python benchmarks/gpu_paths.py`` (about 6 minutes on one H100).
``--device cpu --small`` runs the same code on a CPU with a tiny model (a check of the script).
Writes ``benchmarks/results/gpu_paths.{md,json}`` (``--results DIR`` elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import agentgym  # noqa: E402,F401  (registers the envs)
from agentgym.evaluation.results import iter_episodes  # noqa: E402
from agentgym.llm.generation import Generator, SamplingParams  # noqa: E402
from agentgym.train.config import TrainConfig, from_dict  # noqa: E402
from agentgym.train.trainer import Trainer  # noqa: E402
from agentgym.utils.sockets import free_port  # noqa: E402

ENVS = [{"id": "Sokoban-v0"}, {"id": "Wordle-v0"}]
#: Qwen2.5's chat markup, without its tool-calling branches.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


@dataclass(frozen=True)
class Shape:
    """The model's size and the workload of each part."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    max_new_tokens: int
    groups: int
    group_size: int
    iterations: int
    eval_episodes: int
    concurrency: int


FULL = Shape(896, 24, 14, 2, 4864, 16_384, 48, 8, 8, 3, 64, 64)
SMALL = Shape(64, 2, 4, 2, 128, 2_048, 8, 2, 2, 3, 4, 4)


def corpus() -> list[str]:
    """Text of the envs the benchmark plays: first observations and every Wordle word."""
    texts = []
    for spec in ENVS:
        env = gym.make(spec["id"])
        for task in range(200):
            texts.append(env.reset(options={"task_id": task})[0])
        env.close()
    words = Path(agentgym.environments.__path__[0], "wordle", "guesses.txt").read_text().split()
    return texts + [" ".join(words[i : i + 50]) for i in range(0, len(words), 50)]


def build_model(folder: Path, shape: Shape) -> Path:
    """A byte-level BPE tokenizer of the envs' text and a random Qwen2 model, saved in ``folder``."""
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=shape.vocab,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(corpus(), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        max_position_embeddings=4096,
        rope_theta=1_000_000.0,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def train_config(model_path: Path, out: Path, shape: Shape, device: str, **overrides: Any) -> TrainConfig:
    """Two iterations' worth of episodes on both envs; ``overrides`` are merged into the config's sections.

    A random model never succeeds, so every advantage is 0: a small entropy bonus gives the
    update a gradient, so that it runs (and moves the weights) as it would in real training.
    """
    config: dict[str, Any] = {
        "model": {"path": str(model_path), "device": device},
        "envs": ENVS,
        "algorithm": {"name": "grpo", "group_size": shape.group_size, "entropy_weight": 1e-3},
        "rollout": {"max_new_tokens": shape.max_new_tokens, "max_turns": [[0, 2]], "max_batch_size": 64},
        "out": str(out),
        "iterations": shape.iterations,
        "groups_per_iteration": shape.groups,
        "minibatch_size": 16,
        "learning_rate": 1e-5,
        "checkpoint_every": 1000,
        "tensorboard": False,
    }
    for key, value in overrides.items():
        config[key] = config.get(key, {}) | value if isinstance(value, dict) else value
    return from_dict(TrainConfig, config)


def reset_peak(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def peak_gib(device: str) -> float | None:
    return torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None


def trainable_snapshot(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in trainer.model.named_parameters() if p.requires_grad}


def changed_fraction(before: dict[str, torch.Tensor], trainer: Trainer) -> float:
    """The share of trainable weights whose value an update changed."""
    changed = total = 0
    for name, p in trainer.model.named_parameters():
        if name in before:
            changed += int((p.detach() != before[name]).sum())
            total += p.numel()
    return changed / max(total, 1)


KEPT = (
    "rollout_s",
    "update_s",
    "logprob_mismatch_mean",
    "logprob_mismatch_max",
    "model_tokens",
    "sequence_tokens_mean",
    "loss",
    "success_rate",
)


def trainer_run(name: str, model_path: Path, work: Path, shape: Shape, device: str, **overrides: Any) -> dict[str, Any]:
    """``shape.iterations`` iterations, a checkpoint after the second, and a resumed third iteration."""
    config = train_config(model_path, work / name, shape, device, **overrides)
    reset_peak(device)
    clock = time.perf_counter()
    trainer = Trainer(config)
    load_s = time.perf_counter() - clock
    before = trainable_snapshot(trainer)
    iterations, checkpoint = [], None
    try:
        for _ in range(config.iterations):
            metrics = trainer.step()
            iterations.append({key: metrics[key] for key in KEPT if key in metrics} | {"peak_gib": peak_gib(device)})
            if trainer.iteration == config.iterations - 1:
                checkpoint = trainer.save_checkpoint()
        moved = changed_fraction(before, trainer)
        dtypes = sorted({str(p.dtype) for p in trainer.model.parameters() if p.requires_grad})
        trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    finally:
        trainer.close()
        del trainer
        torch.cuda.empty_cache() if device.startswith("cuda") else None
    result = {
        "name": name,
        "overrides": overrides,
        "load_s": load_s,
        "iterations": iterations,
        "trainable_parameters": trainable,
        "trainable_dtypes": dtypes,
        "changed_fraction": moved,
        "peak_gib": peak_gib(device),
    }
    try:
        result["resume"] = resume(config, checkpoint, iterations[-1])
    except Exception:  # the run's own figures stay
        result["resume"] = {"error": traceback.format_exc()}
    return result


def resume(config: TrainConfig, checkpoint: Path | None, last: dict[str, Any]) -> dict[str, Any]:
    """A new trainer loaded from ``checkpoint`` plays the next iteration; compared with the uninterrupted ``last``."""
    resumed = Trainer(config)
    try:
        assert checkpoint is not None and resumed.load_checkpoint(checkpoint)
        again = resumed.step()
    finally:
        resumed.close()
        del resumed
        torch.cuda.empty_cache() if config.model.device.startswith("cuda") else None
    return {
        "same_tokens": again["model_tokens"] == last["model_tokens"]
        and again["sequence_tokens_mean"] == last["sequence_tokens_mean"],
        "same_success": again["success_rate"] == last["success_rate"],
        "loss_uninterrupted": last["loss"],
        "loss_resumed": again["loss"],
    }


class ServeModel:
    """``agentgym serve-model`` in a subprocess, as a user starts it; ready when ``/health`` answers."""

    def __init__(self, model: Path, device: str, max_batch_size: int, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        command = [
            sys.executable, "-m", "agentgym.cli", "serve-model", str(model), "--port", str(self.port),
            "--device", device, "--max-batch-size", str(max_batch_size), "--served-model-name", model.name,
        ]  # fmt: skip
        self.log = log.open("w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve-model exited with {self.process.returncode}; see {log}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("serve-model did not start in 300 s")
            time.sleep(0.5)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)
        self.log.close()


def eval_with_cli(url: str, model_name: str, out: Path, shape: Shape) -> dict[str, Any]:
    """``agentgym eval`` with the openai policy at the shape's concurrency on both envs."""
    command = [sys.executable, "-m", "agentgym.cli", "eval", "--policy", f"openai:{model_name}@{url}"]
    for spec in ENVS:
        command += ["--env", spec["id"]]
    command += [
        "--episodes", str(shape.eval_episodes), "--concurrency", str(shape.concurrency), "--max-turns", "3",
        "--max-tokens", str(shape.max_new_tokens), "--split", "test", "--out", str(out), "--no-progress",
    ]  # fmt: skip
    clock = time.perf_counter()
    finished = subprocess.run(command, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - clock
    records = list(iter_episodes(out))
    completion_tokens = sum(r.tokens.completion for r in records if r.tokens is not None)
    return {
        "exit_code": finished.returncode,
        "output_tail": (finished.stdout + finished.stderr)[-1500:],
        "episodes": len(records),
        "errored": sum(r.status != "ok" for r in records),
        "wall_s": wall,
        "turns": sum(len(r.turns) for r in records),
        "completion_tokens": completion_tokens,
        "completion_tokens_per_s": completion_tokens / wall,
    }


def throughput_prompts(model: Path, count: int) -> list[list[int]]:
    """``count`` chat prompts (first observations of both envs) as token ids."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    prompts = []
    for i in range(count):
        env = gym.make(ENVS[i % len(ENVS)]["id"])
        text = env.reset(options={"task_id": i})[0]
        env.close()
        chat = [{"role": "user", "content": text}]
        prompts.append(
            tokenizer(tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)).input_ids
        )
    return prompts


async def serve_model_tokens(url: str, name: str, prompts: list[list[int]], max_tokens: int) -> tuple[int, float]:
    """Every prompt sent at once to ``/v1/completions``; generated tokens and seconds."""
    async with httpx.AsyncClient(timeout=600) as client:

        async def one(i: int, prompt: list[int]) -> int:
            body = {"model": name, "prompt": prompt, "max_tokens": max_tokens, "temperature": 1.0, "seed": i}
            response = await client.post(f"{url}/completions", json=body)
            response.raise_for_status()
            return response.json()["usage"]["completion_tokens"]

        clock = time.perf_counter()
        tokens = await asyncio.gather(*(one(i, prompt) for i, prompt in enumerate(prompts)))
        return sum(tokens), time.perf_counter() - clock


def throughput(model: Path, url: str, device: str, shape: Shape) -> dict[str, Any]:
    """Tokens/s of serve-model, our Generator and HF ``generate`` on the same prompts (batch = concurrency)."""
    prompts = throughput_prompts(model, shape.concurrency)
    max_tokens = 128 if device.startswith("cuda") else 16
    # Each path is timed on its second identical call: a GPU's first decode of a batch shape
    # costs several times a later one (gpu_generation.md), which a short warm-up does not pay.
    asyncio.run(serve_model_tokens(url, model.name, prompts, max_tokens))
    served_tokens, served_s = asyncio.run(serve_model_tokens(url, model.name, prompts, max_tokens))
    generator = Generator.from_pretrained(model, device=device)
    params = [SamplingParams(temperature=1.0, max_new_tokens=max_tokens, seed=i) for i in range(len(prompts))]
    generator.generate_tokens(prompts, params)
    sync(device)
    clock = time.perf_counter()
    ours = generator.generate_tokens(prompts, params)
    sync(device)
    ours_s = time.perf_counter() - clock
    ours_tokens = sum(c.completion_tokens for c in ours)
    # Hugging Face's generate on the same left-padded batch, sampling at temperature 1.
    hf_model = generator.model
    width = max(map(len, prompts))
    pad = generator.pad_token_id
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=generator.device)
    attention = (
        torch.arange(width, device=generator.device)[None, :]
        >= (width - torch.tensor([len(p) for p in prompts], device=generator.device))[:, None]
    ).long()

    def hf_generate(rows: int, new_tokens: int) -> torch.Tensor:
        with torch.inference_mode():
            return hf_model.generate(
                input_ids=ids[:rows], attention_mask=attention[:rows], do_sample=True, temperature=1.0, top_p=1.0,
                top_k=0, max_new_tokens=new_tokens, pad_token_id=pad, eos_token_id=sorted(generator.eos_token_ids),
            )  # fmt: skip

    hf_generate(len(prompts), max_tokens)
    sync(device)
    clock = time.perf_counter()
    output = hf_generate(len(prompts), max_tokens)
    sync(device)
    hf_s = time.perf_counter() - clock
    new = output[:, width:]
    hf_tokens = int(sum((row != pad).sum() for row in new))
    return {
        "batch": len(prompts),
        "max_tokens": max_tokens,
        "prompt_tokens_mean": sum(map(len, prompts)) / len(prompts),
        "serve_model": {"tokens": served_tokens, "s": served_s, "tokens_per_s": served_tokens / served_s},
        "generator": {"tokens": ours_tokens, "s": ours_s, "tokens_per_s": ours_tokens / ours_s},
        "hf_generate": {"tokens": hf_tokens, "s": hf_s, "tokens_per_s": hf_tokens / hf_s},
    }


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def serving_part(model: Path, work: Path, shape: Shape, device: str) -> dict[str, Any]:
    """serve-model on the device: trainer rollouts with LoRA hot-loading, eval at concurrency 64, tokens/s."""
    server = ServeModel(model, device, shape.concurrency, work / "serve-model.log")
    result: dict[str, Any] = {}
    try:
        config = train_config(
            model,
            work / "server-grpo-lora",
            shape,
            device,
            model={"lora": {"r": 16, "alpha": 32}},
            rollout={"backend": "openai", "base_url": server.url},
            iterations=2,
        )
        reset_peak(device)
        trainer = Trainer(config)
        try:
            result["trainer_openai_backend"] = [
                {key: m[key] for key in KEPT if key in m} for m in (trainer.step() for _ in range(config.iterations))
            ]
            result["adapter_loaded"] = httpx.get(f"{server.url}/models").json()
        finally:
            trainer.close()
            del trainer
        result["eval"] = eval_with_cli(server.url, model.name, work / "eval", shape)
        result["throughput"] = throughput(model, server.url, device, shape)
    finally:
        server.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--small", action="store_true", help="a tiny model and workload (a check of the script)")
    parser.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--parts", default="trainer,serving", help="comma-separated: trainer, serving")
    args = parser.parse_args()
    shape = SMALL if args.small else FULL
    work = Path(tempfile.mkdtemp(prefix="agentgym-gpu-"))
    clock = time.perf_counter()
    model = build_model(work / "qwen2-random", shape)
    parameters = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(model).parameters())
    data: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else f"CPU ({platform.machine()})",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "model_parameters": parameters,
        "shape": shape.__dict__,
        "build_s": time.perf_counter() - clock,
        "errors": {},
    }
    print(json.dumps(data), flush=True)
    runs = {
        "grpo-lora": {"model": {"lora": {"r": 16, "alpha": 32}}},
        "grpo-full-kl": {"algorithm": {"kl_weight": 0.01}},
        "ppo-lora-kl": {"model": {"lora": {"r": 16, "alpha": 32}}, "algorithm": {"name": "ppo", "kl_weight": 0.01}},
        "ppo-full": {"algorithm": {"name": "ppo"}},
        "grpo-full-pure-bf16": {"model": {"dtype": "bfloat16"}},
    }
    if "trainer" in args.parts:
        data["trainer"] = []
        for name, overrides in runs.items():
            try:
                data["trainer"].append(trainer_run(name, model, work, shape, args.device, **overrides))
                print(json.dumps(data["trainer"][-1]), flush=True)
            except Exception:  # keep the other runs' results
                data["errors"][name] = traceback.format_exc()
                print(data["errors"][name], flush=True)
            write(data, args.results, time.perf_counter() - clock)
    if "serving" in args.parts:
        try:
            data["serving"] = serving_part(model, work, shape, args.device)
        except Exception:
            data["errors"]["serving"] = traceback.format_exc()
        print(json.dumps(data.get("serving", data["errors"])), flush=True)
    write(data, args.results, time.perf_counter() - clock)


def throughput_rows(tp: dict[str, Any]) -> list[str]:
    """The tokens/s table's rows (each path against HF ``generate``) of a :func:`throughput` result."""
    base = tp["hf_generate"]["tokens_per_s"]
    rows = []
    for key, label in (
        ("serve_model", f"serve-model over HTTP ({tp['batch']} concurrent requests)"),
        ("generator", "agentgym Generator.generate_tokens (in-process)"),
        ("hf_generate", "Hugging Face model.generate (in-process)"),
    ):
        row = tp[key]
        rows.append(
            f"| {label} | {row['tokens']} | {row['s']:.2f} | {row['tokens_per_s']:.0f} "
            f"| {row['tokens_per_s'] / base:.2f}x |"
        )
    return rows


def write(data: dict[str, Any], results: Path, total_s: float) -> None:
    """``gpu_paths.json`` (everything) and ``gpu_paths.md`` (the tables)."""
    data["total_s"] = total_s
    results.mkdir(parents=True, exist_ok=True)
    (results / "gpu_paths.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# The CUDA paths on a GPU: trainer, serve-model, eval runner",
        "",
        f"`python benchmarks/gpu_paths.py` on {data['device']} (torch {data['torch']}, Python {data['python']}); "
        f"a random Qwen2-architecture model of {data['model_parameters'] / 1e6:.0f}M parameters "
        f"(Qwen2.5-0.5B's layers, a {data['shape']['vocab']}-token BPE vocabulary of the envs' text); "
        f"Sokoban-v0 + Wordle-v0, {data['shape']['groups']} groups x {data['shape']['group_size']} episodes per "
        f"iteration, 2 turns, at most {data['shape']['max_new_tokens']} new tokens per reply; whole run "
        f"{total_s / 60:.1f} min.",
        "",
        "## Trainer (in-process sampling)",
        "",
        "| run | trainable params (dtype) | load s | rollout s / iteration | update s / iteration | peak GPU GiB "
        "| logprob mismatch mean (max) | weights moved | resumed iteration 3 = uninterrupted |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in data.get("trainer", []):
        its = run["iterations"]
        rollout = " / ".join(f"{it['rollout_s']:.1f}" for it in its)
        update = " / ".join(f"{it['update_s']:.2f}" for it in its)
        mismatch = " / ".join(f"{it['logprob_mismatch_mean']:.4f} ({it['logprob_mismatch_max']:.3f})" for it in its)
        peak = f"{run['peak_gib']:.1f}" if run["peak_gib"] is not None else "-"
        resume = run["resume"]
        if "error" in resume:
            same = f"failed: `{resume['error'].strip().splitlines()[-1]}`"
        else:
            same = "yes" if resume["same_tokens"] and resume["same_success"] else "no"
            same += f" (loss {resume['loss_uninterrupted']:.4g} vs {resume['loss_resumed']:.4g})"
        lines.append(
            f"| {run['name']} | {run['trainable_parameters'] / 1e6:.1f}M ({', '.join(run['trainable_dtypes'])}) "
            f"| {run['load_s']:.1f} | {rollout} | {update} | {peak} | {mismatch} | {run['changed_fraction']:.1%} "
            f"| {same} |"
        )
    serving = data.get("serving")
    if serving:
        lines += ["", "## serve-model on the GPU", ""]
        for i, it in enumerate(serving.get("trainer_openai_backend", [])):
            lines.append(
                f"- trainer, `rollout.backend: openai` + LoRA hot-load, iteration {i}: "
                f"rollout {it['rollout_s']:.1f} s, update {it['update_s']:.2f} s, "
                f"logprob mismatch {it['logprob_mismatch_mean']:.4f} "
                f"(max {it['logprob_mismatch_max']:.3f}), {it['model_tokens']} sampled tokens"
            )
        if "adapter_loaded" in serving:
            names = [entry["id"] for entry in serving["adapter_loaded"].get("data", [])]
            lines.append(f"- models served after the hot-load: {', '.join(names)}")
        if "eval" in serving:
            ev = serving["eval"]
            lines.append(
                f"- `agentgym eval --policy openai:...` at concurrency {data['shape']['concurrency']}: "
                f"{ev['episodes']} episodes ({ev['errored']} errored, exit code {ev['exit_code']}), "
                f"{ev['turns']} turns, "
                f"{ev['completion_tokens']} completion tokens in {ev['wall_s']:.1f} s "
                f"({ev['completion_tokens_per_s']:.0f} tokens/s, process start included)"
            )
        if "throughput" in serving:
            tp = serving["throughput"]
            lines += [
                "",
                f"Tokens/s on the same {tp['batch']} prompts ({tp['prompt_tokens_mean']:.0f} tokens on average), "
                f"sampling at temperature 1, at most {tp['max_tokens']} new tokens, one batch:",
                "",
                "| path | tokens | seconds | tokens/s | vs HF generate |",
                "|---|---|---|---|---|",
            ]
            lines += throughput_rows(tp)
    if data["errors"]:
        lines += ["", "## Errors", ""] + [
            f"- {name}: `{text.strip().splitlines()[-1]}`" for name, text in data["errors"].items()
        ]
    (results / "gpu_paths.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
