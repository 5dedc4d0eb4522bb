"""Where decoding time goes on a GPU: agentgym's Generator against Hugging Face ``generate``.

``gpu_paths.py`` found ``Generator.generate_tokens`` (and serve-model on it) at about a third
of ``model.generate``'s tokens/s on an H100. This splits a decode of the same batch into its
parts, on the same random Qwen2 model (``gpu_paths.build_model``), 64 prompts, 64 new tokens:

- ``hf_generate``: ``model.generate`` sampling at temperature 1;
- ``generator_sampled`` / ``generator_greedy``: ``Generator.generate_tokens``;
- ``forward_loop``: the model calls alone, as the Generator makes them (left padding, explicit
  position ids, the KV cache), picking the argmax with no other bookkeeping;
- ``forward_loop_implicit_positions``: the same without position ids (the model derives them).

Run on a CUDA machine: ``python benchmarks/gpu_generation.py``; writes
``benchmarks/results/gpu_generation.{md,json}`` (``--results DIR`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agentgym.llm.generation import Generator, SamplingParams  # noqa: E402
from benchmarks.gpu_paths import FULL, SMALL, build_model, throughput_prompts  # noqa: E402

NEW_TOKENS = 64


def timed(device: str, function: Callable[[], int]) -> dict[str, float]:
    """Tokens and seconds of one call of ``function`` (which returns its token count), after a warm-up call."""
    function()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    clock = time.perf_counter()
    tokens = function()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - clock
    return {"tokens": tokens, "s": seconds, "tokens_per_s": tokens / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--small", action="store_true", help="a tiny model (a check of the script)")
    parser.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    shape = SMALL if args.small else FULL
    model_path = build_model(Path(tempfile.mkdtemp(prefix="agentgym-gpu-generation-")) / "qwen2-random", shape)
    prompts = throughput_prompts(model_path, 64)
    generator = Generator.from_pretrained(model_path, device=args.device)
    model, device = generator.model, generator.device
    width = max(map(len, prompts))
    pad = generator.pad_token_id
    lengths = torch.tensor([len(p) for p in prompts], device=device)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)
    attention = (torch.arange(width, device=device)[None, :] >= (width - lengths)[:, None]).long()

    def hf_generate() -> int:
        with torch.inference_mode():
            output = model.generate(
                input_ids=ids, attention_mask=attention, do_sample=True, temperature=1.0, top_p=1.0, top_k=0,
                max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, pad_token_id=pad,
            )  # fmt: skip
        return int((output[:, width:] != pad).sum())

    def generator_run(temperature: float) -> Callable[[], int]:
        params = [SamplingParams(temperature=temperature, max_new_tokens=NEW_TOKENS, seed=i) for i in range(64)]
        return lambda: sum(c.completion_tokens for c in generator.generate_tokens(prompts, params))

    def forward_loop(explicit_positions: bool) -> Callable[[], int]:
        @torch.inference_mode()
        def run() -> int:
            mask, step_ids = attention, ids
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            cache = None
            for _ in range(NEW_TOKENS):
                extra = {"position_ids": positions} if explicit_positions else {}
                output = model(
                    input_ids=step_ids, attention_mask=mask, past_key_values=cache, use_cache=True, logits_to_keep=1,
                    **extra,
                )  # fmt: skip
                cache = output.past_key_values
                step_ids = output.logits[:, -1].argmax(-1, keepdim=True)
                mask = torch.cat([mask, mask.new_ones((len(prompts), 1))], dim=-1)
                positions = positions[:, -1:] + 1
            return NEW_TOKENS * len(prompts)

        return run

    parts = {
        "hf_generate": hf_generate,
        "generator_sampled": generator_run(1.0),
        "generator_greedy": generator_run(0.0),
        "forward_loop": forward_loop(True),
        "forward_loop_implicit_positions": forward_loop(False),
    }
    results = {name: timed(args.device, function) for name, function in parts.items()}
    data = {
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "CPU",
        "torch": torch.__version__,
        "batch": len(prompts),
        "new_tokens": NEW_TOKENS,
        "prompt_tokens_mean": float(lengths.float().mean()),
        "results": results,
    }
    print(json.dumps(data, indent=2), flush=True)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "gpu_generation.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    base = results["hf_generate"]["tokens_per_s"]
    rows = [f"| {name} | {r['tokens']} | {r['s']:.2f} | {r['tokens_per_s']:.0f} | {r['tokens_per_s'] / base:.2f}x |"
            for name, r in results.items()]  # fmt: skip
    (args.results / "gpu_generation.md").write_text(
        "# Where decoding time goes: Generator vs Hugging Face generate\n\n"
        f"`python benchmarks/gpu_generation.py` on {data['device']} (torch {data['torch']}); the random Qwen2 model "
        f"of gpu_paths.py, {data['batch']} prompts ({data['prompt_tokens_mean']:.0f} tokens on average), "
        f"{NEW_TOKENS} new tokens each, one batch, after one warm-up call of each.\n\n"
        "| path | tokens | seconds | tokens/s | vs HF generate |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
