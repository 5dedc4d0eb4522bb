"""Screenshots for vision-language models (docs/vlm.md): what a step costs per screen family.

Per family, at the default image budget (``ImageOptions().max_pixels``, 1024x768):

* the screen size and the size the image is sent at;
* image tokens per step for Qwen2-VL's own image processor with its shipped defaults
  (``Qwen2VLImageProcessorPil()``: 14-px patches merged 2x2, so one token per 28x28 pixels),
  and the trainer's pixel values per image (float32 bytes);
* the data URL's size (PNG) per step;
* step latency: ``ChatWrapper.step`` in text mode (no screenshot rendered where the env
  renders on request) and in screenshot mode (rendered and encoded), median over the steps;
* memory per env: the PSS of this process and its descendants (the browser's and the X
  server's processes) before and after making and resetting one env of the family in
  screenshot mode (kept open while measuring);
* per batch of episodes in the trainer: ``episodes x steps`` screenshots' pixel values and
  image tokens (arithmetic on the measured per-image numbers).

    python benchmarks/vlm.py                  # writes results/vlm.{md,json}
    python benchmarks/vlm.py --steps 5 --envs Desktop-v0
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np
from recording import record

import agentgym
from agentgym.images import ImageOptions, decode_image, image_url, screenshot_kwargs

FAMILIES = {
    "Desktop-v0": "move(100, 100)",
    "MiniWoB-click-button-v0": "scroll(down)",
    "WebShop-Browser-v0": "scroll(down)",
    "WebApps-Wiki-v0": "scroll(down)",
}


def used_memory_mb() -> float:
    """The proportional set size (PSS) of this process and all its descendants (browsers, X servers), in MB."""
    import psutil

    me = psutil.Process()
    total = 0
    for process in [me, *me.children(recursive=True)]:
        try:
            total += process.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total / 1e6


def step_times(env_id: str, action: str, steps: int, images: ImageOptions | None) -> tuple[list[float], Any]:
    """Seconds per ``ChatWrapper.step`` of ``action`` over ``steps`` steps (after a reset); the last messages."""
    kwargs = screenshot_kwargs(env_id) if images is not None and images.images else {}
    chat = agentgym.ChatWrapper(gym.make(env_id, **kwargs), images=images)
    try:
        messages, _ = chat.reset(seed=0, options={"task_id": 0})
        times = []
        for _ in range(steps):
            started = time.perf_counter()
            messages, _, terminated, truncated, _ = chat.step(action)
            times.append(time.perf_counter() - started)
            if terminated or truncated:
                messages, _ = chat.reset(seed=0, options={"task_id": 0})
        return times, messages
    finally:
        chat.close()


def measure(env_id: str, action: str, steps: int) -> dict[str, Any]:
    from transformers.models.qwen2_vl import Qwen2VLImageProcessorPil

    options = ImageOptions("screenshot")
    gc.collect()
    before = used_memory_mb()
    kwargs = screenshot_kwargs(env_id)
    env = gym.make(env_id, **kwargs)
    observation, _ = env.reset(seed=0, options={"task_id": 0})
    after = used_memory_mb()
    screen = observation["screenshot"].shape
    text_times, _ = step_times(env_id, action, steps, ImageOptions("text"))
    image_times, messages = step_times(env_id, action, steps, options)
    env.close()
    part = messages[-1]["content"][0]
    url = image_url(part)
    image = decode_image(url)
    features = Qwen2VLImageProcessorPil()(images=[image], return_tensors="pt")
    grid = features["image_grid_thw"][0]
    return {
        "env": env_id,
        "screen": [int(screen[1]), int(screen[0])],
        "sent": list(image.size),
        "image_tokens": int(grid.prod()) // 4,
        "pixel_values_mb": features["pixel_values"].numel() * 4 / 1e6,
        "data_url_kb": len(url) / 1024,
        "step_text_ms": 1000 * statistics.median(text_times),
        "step_screenshot_ms": 1000 * statistics.median(image_times),
        "memory_per_env_mb": after - before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--envs", nargs="*", default=list(FAMILIES))
    parser.add_argument("--batch", type=int, default=64, help="episodes per trainer batch (for the arithmetic)")
    parser.add_argument("--turns", type=int, default=10, help="steps per episode (for the arithmetic)")
    args = parser.parse_args()
    rows = [measure(env_id, FAMILIES[env_id], args.steps) for env_id in args.envs]
    images_per_batch = args.batch * (args.turns + 1)
    lines = [
        "| env | screen | sent | image tokens/step | pixel values/image | data URL/step | step, text | "
        f"step, screenshot | memory/env | batch of {args.batch}x{args.turns + 1} screenshots |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        row["batch_pixel_values_gb"] = row["pixel_values_mb"] * images_per_batch / 1000
        row["batch_image_tokens"] = row["image_tokens"] * images_per_batch
        lines.append(
            f"| {row['env']} | {row['screen'][0]}x{row['screen'][1]} | {row['sent'][0]}x{row['sent'][1]} "
            f"| {row['image_tokens']} | {row['pixel_values_mb']:.1f} MB | {row['data_url_kb']:.0f} KB "
            f"| {row['step_text_ms']:.0f} ms | {row['step_screenshot_ms']:.0f} ms | {row['memory_per_env_mb']:.0f} MB "
            f"| {row['batch_image_tokens']:,} tokens, {row['batch_pixel_values_gb']:.1f} GB |"
        )
    setup = (
        f"default budget {ImageOptions().max_pixels:,} px, PNG; Qwen2-VL's image processor defaults; "
        f"{args.steps} steps per mode, median; memory/env: PSS added by one more env, the browser families "
        "sharing this process's Chromium (the first browser env, MiniWoB's row, includes starting it); "
        f"batch: pixel values in float32, numpy {np.__version__}"
    )
    record("vlm", "Screenshots for VLMs: image tokens, step latency, memory", setup, "\n".join(lines), rows)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
