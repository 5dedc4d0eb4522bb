"""Grounding family: reset and step latency from the cache, build time, tasks per split, oracle and random success.

For each grounding id (``Grounding-<Source>-v0`` per source, and ``Grounding-v0``, which mixes them): the
tasks and screenshots per split and each source's build duration (from the source's ``manifest.json``: the
build renders the pages once, in Chromium), the median and p99 latency of ``reset`` (reads the task, decodes
the PNG screenshot when the task is on a new one) and of ``step`` (one click), measured on task ids drawn at
random, and the success of the oracle (a click at the box's centre) and of random clicks next to the mean
share of the screen the target boxes cover (what random clicks should score). Latencies are taken on a shared
2-core machine under load: compare them with the 5 ms target, not across runs.

The build's time per page, side by side in one run: one round (:data:`~dataset.BATCH` task ids) of a sample
of MiniWoB++ envs rendered as a build renders them (load, screenshot, elements, PNG and fast copy written),
one env at a time (as builds did before) and with 2 workers, the two variants alternated, with the wall time
and the CPU time of this process and of its Chromium processes per page.

    python benchmarks/grounding.py              # writes results/grounding.{md,json}
    python benchmarks/grounding.py --tasks 500 --no-write
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import gymnasium as gym
from recording import record

import agentgym
from agentgym.environments.grounding.capture import PageSource
from agentgym.environments.grounding.dataset import BATCH, read_png, read_screen, source_spec, write_fast_screen
from agentgym.environments.grounding.env import pixel_share


def percentile_ms(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000, 3)


def screenshot_reads(env: gym.Env, count: int = 200) -> dict:
    """Reading a screenshot from its fast copy (what reset does) vs decoding its PNG, interleaved, ``count`` times."""
    base = env.unwrapped
    folder = next(iter(base.data.values())).folder
    screens = sorted({task["screen"] for tasks in next(iter(base.data.values())).tasks.values() for task in tasks})
    fast: list[float] = []
    png: list[float] = []
    for screen in random.Random(2).sample(screens, min(count, len(screens))):
        start = time.perf_counter()
        read_screen(folder, screen, (base.width, base.height))
        fast.append(time.perf_counter() - start)
        start = time.perf_counter()
        read_png(folder / screen)
        png.append(time.perf_counter() - start)
    return {"fast_copy_ms_median": percentile_ms(fast, 0.5), "png_decode_ms_median": percentile_ms(png, 0.5)}


def _cpu_seconds() -> float:
    """CPU time of this process and of its descendants alive now (Chromium's browser and renderer processes)."""
    import psutil

    total = time.process_time()
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:  # it ended meanwhile
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def build_speed(envs: int, repeats: int, worker_counts: tuple[int, ...] = (1, 2)) -> list[dict]:
    """Seconds per page of a build's rendering, each of ``worker_counts`` in turn, ``repeats`` times alternated, on
    one round of every ``len(ids) // envs``-th MiniWoB++ env (what :func:`~dataset.build` does per page)."""
    from PIL import Image

    source = PageSource("MiniWoB", source_spec("MiniWoB"))
    ids = source.env_ids()
    sample = ids[:: max(1, len(ids) // envs)][:envs]
    totals = {workers: {"wall_s": 0.0, "cpu_s": 0.0, "pages": 0} for workers in worker_counts}
    next(source.rendered(sample[:1], [0]))  # start Chromium outside the measurement
    with tempfile.TemporaryDirectory() as folder:
        png = Path(folder) / "page.png"
        for _ in range(repeats):
            for workers in worker_counts:
                cpu, wall = _cpu_seconds(), time.perf_counter()
                for _, pages in source.rendered(sample, range(BATCH), workers=workers):
                    for page in pages:
                        assert page.pixels is not None
                        Image.fromarray(page.pixels).save(png, compress_level=6)
                        write_fast_screen(png, page.pixels)
                        totals[workers]["pages"] += 1
                totals[workers]["wall_s"] += time.perf_counter() - wall
                totals[workers]["cpu_s"] += _cpu_seconds() - cpu
    return [
        {
            "workers": workers,
            "envs": len(sample),
            "pages": total["pages"],
            "wall_s_per_page": round(total["wall_s"] / total["pages"], 3),
            "cpu_s_per_page": round(total["cpu_s"] / total["pages"], 3),
        }
        for workers, total in totals.items()
    ]


def measure(env_id: str, tasks: int) -> dict:
    started = time.perf_counter()
    env = gym.make(env_id)
    make_s = time.perf_counter() - started
    base = env.unwrapped
    task_ids = random.Random(0).sample(range(base.splits.total), min(tasks, base.splits.total))
    rng = random.Random(1)
    resets: dict[str, list[float]] = {"oracle": [], "random": []}
    steps: list[float] = []
    oracle = random_hits = 0
    shares: list[float] = []
    for task_id in task_ids:
        for policy in ("oracle", "random"):
            start = time.perf_counter()
            env.reset(options={"task_id": task_id})
            resets[policy].append(time.perf_counter() - start)
            action = base.oracle_action() if policy == "oracle" else base.random_action(rng)
            start = time.perf_counter()
            _, _, _, _, info = env.step(action)
            steps.append(time.perf_counter() - start)
            if policy == "oracle":
                oracle += info["success"]
            else:
                random_hits += info["success"]
                shares.append(pixel_share(base.task["box"], base.width, base.height))
    reads = screenshot_reads(env)
    env.close()
    manifests = {name: data.manifest for name, data in base.data.items()}
    return {
        "env_id": env_id,
        "splits": base.splits.counts(),
        "screenshots": {name: manifest["pages"] for name, manifest in manifests.items()},
        "build_seconds": {name: manifest["build_seconds"] for name, manifest in manifests.items()},
        "make_ms": round(make_s * 1000, 1),
        # A random task id: its screenshot is read and decoded (random ids rarely share one).
        "reset_ms_median": percentile_ms(resets["oracle"], 0.5),
        "reset_ms_p99": percentile_ms(resets["oracle"], 0.99),
        # The same task again: its screenshot is still decoded (as for the tasks of a screenshot in id order).
        "reset_same_screen_ms_median": percentile_ms(resets["random"], 0.5),
        "step_ms_median": percentile_ms(steps, 0.5),
        "step_ms_p99": percentile_ms(steps, 0.99),
        "tasks_played": len(task_ids),
        "oracle_success": round(oracle / len(task_ids), 4),
        "random_success": round(random_hits / len(task_ids), 4),
        "mean_box_share": round(statistics.fmean(shares), 4),
        **reads,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2_000, help="task ids played per id (oracle and random each)")
    parser.add_argument("--build-envs", type=int, default=12, help="MiniWoB++ envs of the build-speed sample")
    parser.add_argument("--build-repeats", type=int, default=2, help="times each build variant renders the sample")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = [measure(info.id, args.tasks) for info in agentgym.list_envs(family="grounding")]
    speed = build_speed(args.build_envs, args.build_repeats)
    lines = [
        "| id | tasks (train / dev / test) | screenshots (train / dev / test) | build (s) | reset median / p99 (ms) "
        "| reset, same screenshot (ms) | step median / p99 (ms) | oracle | random | mean box share |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        counts = " / ".join(str(row["splits"][split]) for split in ("train", "dev", "test"))
        screens = "; ".join(
            f"{name}: " + " / ".join(str(pages[split]) for split in ("train", "dev", "test"))
            for name, pages in row["screenshots"].items()
        )
        build = " + ".join(f"{seconds:.0f}" for seconds in row["build_seconds"].values())
        lines.append(
            f"| {row['env_id']} | {counts} | {screens} | {build} | {row['reset_ms_median']} / {row['reset_ms_p99']} "
            f"| {row['reset_same_screen_ms_median']} | {row['step_ms_median']} / {row['step_ms_p99']} "
            f"| {row['oracle_success']:.3f} "
            f"| {row['random_success']:.4f} | {row['mean_box_share']:.4f} |"
        )
    lines += [
        "",
        "Reading one screenshot, interleaved on 200 screenshots (medians, ms):",
        "",
        "| id | fast copy (zlib, what reset reads) | PNG decode | PNG / fast |",
        "|---|---:|---:|---:|",
    ]
    for row in rows:
        ratio = row["png_decode_ms_median"] / row["fast_copy_ms_median"]
        lines.append(
            f"| {row['env_id']} | {row['fast_copy_ms_median']} | {row['png_decode_ms_median']} | {ratio:.1f} |"
        )
    lines += [
        "",
        f"A build's rendering per page, side by side in this run ({speed[0]['envs']} MiniWoB++ envs, one round of "
        f"{BATCH} task ids each, the variants alternated {args.build_repeats} times; CPU: this process and its "
        "Chromium processes):",
        "",
        "| envs rendered at once | pages | wall per page (s) | CPU per page (s) | wall vs one at a time |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in speed:
        ratio = row["wall_s_per_page"] / speed[0]["wall_s_per_page"]
        lines.append(
            f"| {row['workers']} | {row['pages']} | {row['wall_s_per_page']} | {row['cpu_s_per_page']} | {ratio:.2f} |"
        )
    table = "\n".join(lines)
    print(table)
    if not args.no_write:
        setup = (
            f"{args.tasks} random task ids per id, each played by the oracle and by a random click, from the built "
            "cache, on a shared 2-core machine under load; build time as the source's manifest records it"
        )
        record(
            "grounding",
            "Grounding: latency from the cache, build time, tasks, oracle and random",
            setup,
            table,
            {"ids": rows, "build_speed": speed},
        )


if __name__ == "__main__":
    main()
