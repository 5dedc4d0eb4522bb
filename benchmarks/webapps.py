"""The web apps (environments/webapps): setup, reset, step latency, memory per env, concurrency, oracle success.

* setup per site, cold (``--cold``: in a fresh ``AGENTGYM_WEBAPPS_HOME`` on other ports): install
  (its venv or config), generate and load the content into the golden snapshot, start; and the
  snapshot's size on disk;
* ``reset_tenant`` per site (restore one tenant to the snapshot) and a whole ``env.reset``
  (tenant reset, a fresh logged-in browser context, the start page);
* step latency: the oracle's commands through ``env.step`` (the action, the page settling, the
  page read back as text);
* memory per extra env: the machine's used memory (MemTotal - MemAvailable) with 1, then N envs
  open and reset (each a tenant on every site and a browser context), and the processes' PSS;
* concurrency: N envs resetting and playing their oracle at once from threads;
* oracle success per template, on tasks of each split.

    python benchmarks/webapps.py                    # writes results/webapps.{md,json}
    python benchmarks/webapps.py --cold --tasks 3 --envs 32
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from recording import record

from agentgym.environments.webapps.env import WebAppEnv, all_templates, registry, site_class
from agentgym.environments.webapps.site import webapps_home

SPLITS = ("train", "dev", "test")


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 1)


def used_memory_mb() -> float:
    """MemTotal - MemAvailable, in MB."""
    fields = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0])
    return (fields["MemTotal"] - fields["MemAvailable"]) / 1024


def available_memory_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def du_mb(path: Path) -> float:
    output = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True).stdout
    return int(output.split()[0]) / 1024


def cold_setup(name: str, port_offset: int) -> dict[str, Any]:
    """Install, seed and start site ``name`` in a fresh home (a child process, so that its env vars hold)."""
    home = tempfile.mkdtemp(prefix=f"webapps-cold-{name}-")
    environment = dict(os.environ, AGENTGYM_WEBAPPS_HOME=home)
    for site in registry()["sites"]:
        environment[f"AGENTGYM_WEBAPPS_{site.upper()}_PORT"] = str(site_class(site).default_port + port_offset)
    script = (
        "import json, time, sys\n"
        "from agentgym.environments.webapps.env import site_class\n"
        f"site = site_class({name!r})()\n"
        "t0 = time.perf_counter(); site.content(); t1 = time.perf_counter()\n"
        "site.ensure_ready(); t2 = time.perf_counter()\n"
        "site.stop()\n"
        "print(json.dumps({'generate_s': t1 - t0, 'install_seed_start_s': t2 - t1}))\n"
    )
    output = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True)
    if output.returncode != 0:
        return {"error": output.stderr.strip()[-500:]}
    result = json.loads(output.stdout.strip().splitlines()[-1])
    result["golden_mb"] = round(du_mb(Path(home) / name / "golden"), 1)
    subprocess.run(["pkill", "-f", home], check=False)
    subprocess.run(["rm", "-rf", home], check=False)
    return {key: round(value, 2) if isinstance(value, float) else value for key, value in result.items()}


def task_ids(env: WebAppEnv, template_id: str, split: str, count: int) -> list[int]:
    index = [template.id for template in env.templates].index(template_id)
    start = env.splits.ids(split).start  # type: ignore[arg-type]
    return [start + index + len(env.templates) * n for n in range(count)]


def play_oracle(env: WebAppEnv, task_id: int, step_times: list[float]) -> bool:
    env.reset(options={"task_id": task_id})
    info: dict[str, Any] = {}
    for _ in range(30):
        action = env.oracle_action()
        start = time.perf_counter()
        _, _, terminated, _, info = env.step(action)
        step_times.append(time.perf_counter() - start)
        if terminated:
            break
    return bool(info.get("success"))


def site_costs(name: str, repeats: int) -> dict[str, Any]:
    site = site_class(name)()
    site.ensure_ready()
    tenant = 200  # a tenant the benchmark's envs never lease first
    site.reset_tenant(tenant)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        site.reset_tenant(tenant)
        samples.append(time.perf_counter() - start)
    return {"reset_tenant_ms": median_ms(samples), "reset_tenant_max_ms": round(max(samples) * 1000, 1)}


def oracle_table(tasks: int, splits: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Per template: oracle successes over ``tasks`` tasks of each split; env.reset and step times per site."""
    per_template: dict[str, Any] = {}
    timings: dict[str, list[float]] = {}
    envs: dict[tuple[str, ...], WebAppEnv] = {}
    try:
        for template in all_templates():
            key = tuple(sorted(template.sites))
            env = envs.setdefault(key, WebAppEnv(sites=key))
            wins = played = 0
            resets, steps = (
                timings.setdefault(f"{'+'.join(key)}:reset", []),
                timings.setdefault(f"{'+'.join(key)}:step", []),
            )
            for split in splits:
                for task_id in task_ids(env, template.id, split, tasks):
                    start = time.perf_counter()
                    env.reset(options={"task_id": task_id})
                    resets.append(time.perf_counter() - start)
                    wins += play_oracle(env, task_id, steps)
                    played += 1
            per_template[template.id] = {
                "kind": template.kind,
                "sites": list(template.sites),
                "won": wins,
                "played": played,
            }
    finally:
        for env in envs.values():
            env.close()
    return per_template, timings


def memory_and_concurrency(count: int) -> dict[str, Any]:
    """Used memory with 1 and ``count`` envs open (each reset on every site), then all playing at once."""
    sites = tuple(registry()["sites"])
    envs: list[WebAppEnv] = []

    def open_env() -> WebAppEnv:
        env = WebAppEnv()
        for name in sites:  # a task on each site: the env's tenant exists on all of them, its context has pages
            template = next(t for t in env.templates if t.sites == (name,))
            env.reset(options={"task_id": task_ids(env, template.id, "train", 1)[0]})
        return env

    try:
        envs.append(open_env())
        one = used_memory_mb()
        for _ in range(count - 1):
            envs.append(open_env())
        many = used_memory_mb()
        per_env = (many - one) / (count - 1)
        results: list[bool] = []
        lock = threading.Lock()

        def play(env: WebAppEnv, index: int) -> None:
            won = play_oracle(env, env.splits.ids("dev").start + index, [])
            with lock:
                results.append(won)

        threads = [threading.Thread(target=play, args=(env, index)) for index, env in enumerate(envs)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(900)
        wall = time.perf_counter() - start
        return {
            "envs": count,
            "used_mb_with_1_env": round(one, 0),
            "used_mb_with_n_envs": round(many, 0),
            "mb_per_extra_env": round(per_env, 1),
            "available_mb_left": round(available_memory_mb(), 0),
            "envs_that_fit_in_available_memory": int(available_memory_mb() / per_env) + count if per_env > 0 else None,
            "concurrent_episodes": len(results),
            "concurrent_successes": sum(results),
            "concurrent_wall_s": round(wall, 1),
        }
    finally:
        for env in envs:
            env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2, help="oracle tasks per template and split")
    parser.add_argument("--repeats", type=int, default=20, help="tenant resets timed per site")
    parser.add_argument("--envs", type=int, default=16, help="envs open at once for memory and concurrency")
    parser.add_argument(
        "--cold", action="store_true", help="also time install + seed + start of each site from nothing"
    )
    parser.add_argument("--splits", default=",".join(SPLITS), help="splits of the oracle table (comma-separated)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    names = list(registry()["sites"])
    cold = {name: cold_setup(name, 100) for name in names} if args.cold else {}
    costs = {name: site_costs(name, args.repeats) for name in names}
    golden_mb = {name: round(du_mb(webapps_home() / name / "golden"), 1) for name in names}
    per_template, timings = oracle_table(args.tasks, tuple(args.splits.split(",")))
    memory = memory_and_concurrency(args.envs)

    lines = [
        "## Per site",
        "",
        "| site | cold setup (s) | golden snapshot (MB) | tenant reset (ms, med / max) | env.reset (ms) | step (ms) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        setup = cold.get(name, {})
        cold_text = (
            f"{setup['install_seed_start_s']:.0f}" if "install_seed_start_s" in setup else ("failed" if setup else "-")
        )
        reset, step = timings.get(f"{name}:reset", []), timings.get(f"{name}:step", [])
        resets = f"{costs[name]['reset_tenant_ms']} / {costs[name]['reset_tenant_max_ms']}"
        lines.append(
            f"| {name} | {cold_text} | {golden_mb[name]} | {resets} "
            f"| {median_ms(reset) if reset else '-'} | {median_ms(step) if step else '-'} |"
        )
    lines += [
        "",
        "## Oracle success per template",
        "",
        "| template | kind | sites | oracle success |",
        "|---|---|---|---:|",
    ]
    for template_id, row in per_template.items():
        lines.append(f"| {template_id} | {row['kind']} | {', '.join(row['sites'])} | {row['won']}/{row['played']} |")
    won = sum(row["won"] for row in per_template.values())
    played = sum(row["played"] for row in per_template.values())
    lines += ["", f"All templates: {won}/{played} oracle episodes succeeded ({len(per_template)} templates).", ""]
    m = memory
    lines += [
        "## Memory and concurrency",
        "",
        f"{m['envs']} envs open at once (WebApps-v0; each reset once on every site: a tenant per site and a "
        f"browser context): used memory {m['used_mb_with_1_env']:.0f} MB with 1 env, "
        f"{m['used_mb_with_n_envs']:.0f} MB with {m['envs']}: **{m['mb_per_extra_env']} MB per extra env**; "
        f"with {m['available_mb_left']:.0f} MB still available, about {m['envs_that_fit_in_available_memory']} "
        f"envs fit in this machine's memory. All {m['envs']} then played an oracle episode at once from threads: "
        f"{m['concurrent_successes']}/{m['concurrent_episodes']} succeeded in {m['concurrent_wall_s']} s.",
    ]
    table = "\n".join(lines)
    print(table)
    if not args.no_write:
        data = {
            "cold": cold,
            "sites": costs,
            "golden_mb": golden_mb,
            "templates": per_template,
            "timings_ms": {key: median_ms(value) for key, value in timings.items() if value},
            "memory": memory,
        }
        setup = (
            f"{args.tasks} oracle tasks per template and split, {args.repeats} tenant resets per site, {args.envs} envs"
        )
        record(
            "webapps",
            "Web apps: setup, reset, step latency, memory per env, concurrency, oracle success",
            setup,
            table,
            data,
        )


if __name__ == "__main__":
    main()
