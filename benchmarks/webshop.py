"""WebShop at scale: cold start, memory, step and search latency, and many env copies sharing one catalog.

Every measurement runs in a fresh Python process (this script with ``--child``), so that
its timings start cold and its resident memory (RSS, read from ``/proc/self/statm``) holds
nothing from the others. Memory is reported as RSS and as its anonymous part (RSS minus
the file-backed pages: the memory-mapped search index, which the OS shares between
processes and can drop under pressure).

At 100,000 products (``generated:100k``, indexed into a fresh temporary cache folder):

* **cold start**: ``gym.make("WebShop-v0", catalog=...)`` + the first ``reset``, in a new
  process, once without a cached index (the build, 10-25 s on 2 cores, included) and once with
  it (the files just written, so in the OS page cache; a cold disk read is not measured),
  with ``import agentgym`` timed apart; RSS after the start.
* **step latency per action type**: ``env.step`` (through ``gym.make``'s wrappers) over
  ``--episodes`` episodes on random tasks of all splits, half played by the oracle, half
  by a mix (each step the oracle's command with probability 0.6, else the random
  baseline's), so that every button is clicked: search, click a result, next/previous
  results page, click an option, click Description/Features/Reviews/Attributes, ``< prev``
  back, ``back to search``, ``buy now``; reset too. The shop's search cache is cleared
  before each timed search (outside the timing): the oracle looks its candidate queries
  up before it chooses one, which would make its search step a cache hit.
* **search latency**: the BM25 index's ``search(query, 50)`` itself (no cache) on
  agent-style queries for ``--queries`` random goals: what the oracle types (the goal's
  product type, attributes and options), the instruction without its price clause (an
  agent pasting it), 1-4 random words of it (the random baseline) and the target's title;
  after one untimed pass over other goals' queries.
* **100 copies share one catalog**: one env plays 100 tasks (warming the shared caches
  and index pages); then 100 more envs are made, each reset on one of those tasks and
  stepped as the first was, and all kept open. RSS of 1 env vs 101 envs; per extra copy
  = the difference / 100.

At 1,000,000 products (``generated:1m``): RSS after the start, search latency as above,
step latency and RSS after the episodes. Its index (about 300 MB) is built once into
``--cache-dir`` (default ``<agentgym cache>/benchmark``, see ``search.cache_root``) and
reused by later runs: the first run spends about 90 s more on that build (2 cores); a
rerun takes about 80 s in all.

Targets (issue 3): non-search step median < 1 ms; search median < 10 ms at 1M; RSS < 1.5 GB
at 1M; each extra env copy < 5 MB.

    python benchmarks/webshop.py                        # everything; writes results/webshop.{md,json}
    python benchmarks/webshop.py --no-write --episodes 100 --queries 200 --skip-1m
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 2**20
_PRICE_CLAUSE = re.compile(r",?\s*and price lower than [\d.,]+ dollars", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z][A-Za-z'-]*")
ACTION_TYPES = (
    "search",
    "click result",
    "next/prev results page",
    "click option",
    "click description/features/reviews/attributes",
    "back (< prev)",
    "back to search",
    "buy now",
    "reset",
)
SUB_PAGES = ("description", "features", "reviews", "attributes")


def memory() -> dict[str, float]:
    """This process's RSS and its anonymous (not file-backed) part, in MiB."""
    with open("/proc/self/statm") as statm:
        fields = [int(value) for value in statm.read().split()]
    resident, shared = fields[1] * PAGE, fields[2] * PAGE
    return {"rss_mib": resident / MIB, "anon_mib": (resident - shared) / MIB}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(samples: list[float], scale: float) -> dict[str, float]:
    """Count, median and p99 of ``samples`` (seconds) in units of ``scale`` seconds."""
    return {
        "count": len(samples),
        "median": statistics.median(samples) / scale,
        "p99": percentile(samples, 0.99) / scale,
    }


def catalog_source(products: int) -> str:
    return f"generated:{products}"


# ---- children: each runs in a fresh process and prints one JSON line ----------------------------


def child_cold(products: int, cache_dir: str) -> dict[str, Any]:
    """Import, then make + first reset; whether the index was built; RSS after."""
    start = time.perf_counter()
    import gymnasium as gym

    import agentgym  # noqa: F401  (registers WebShop-v0)
    from agentgym.environments.webshop.search import index_directory

    imported = time.perf_counter()
    name = f"generated-{products}-seed0"
    had_index = (index_directory(name, cache_dir) / "meta.json").exists()
    env = gym.make("WebShop-v0", catalog=catalog_source(products), cache_dir=cache_dir)
    made = time.perf_counter()
    base = env.unwrapped
    env.reset(options={"task_id": base.splits.ids("test").start})
    ready = time.perf_counter()
    return {
        "products": products,
        "had_index": had_index,
        "import_s": imported - start,
        "make_s": made - imported,
        "first_reset_s": ready - made,
        "make_and_first_reset_s": ready - imported,
        **memory(),
    }


def classify(page: str, command: str) -> str:
    """The action type of ``command`` played on ``page`` (see ``ACTION_TYPES``)."""
    if command.startswith("search["):
        return "search"
    target = command[len("click[") : -1]
    if target == "buy now":
        return "buy now"
    if target == "back to search":
        return "back to search"
    if target in SUB_PAGES:
        return "click description/features/reviews/attributes"
    if page == "results":
        return "next/prev results page" if target in ("next >", "< prev") else "click result"
    if target == "< prev":
        return "back (< prev)"
    return "click option"


def child_steps(products: int, cache_dir: str, episodes: int, seed: int) -> dict[str, Any]:
    """Step latency per action type over ``episodes`` oracle and mixed episodes; RSS after."""
    import gymnasium as gym

    import agentgym  # noqa: F401

    start = time.perf_counter()
    env = gym.make("WebShop-v0", catalog=catalog_source(products), cache_dir=cache_dir)
    base = env.unwrapped
    env.reset(options={"task_id": 0})
    load_s = time.perf_counter() - start
    after_start = memory()
    rng = random.Random(seed)
    timings: dict[str, list[float]] = {kind: [] for kind in ACTION_TYPES}
    scores, successes, steps = [], 0, 0
    for episode in range(episodes):
        task_id = rng.randrange(base.splits.total)
        began = time.perf_counter()
        env.reset(options={"task_id": task_id})
        timings["reset"].append(time.perf_counter() - began)
        oracle_only = episode % 2 == 0
        while True:
            session = base.session
            use_oracle = oracle_only or rng.random() < 0.6
            command = base.oracle_action() if use_oracle else base.random_action(rng)
            kind = classify(session.page, command)
            if kind == "search":
                base.shop._search.cache_clear()  # time the search, not the cache the oracle's look-ups filled
            began = time.perf_counter()
            _, _, terminated, truncated, info = env.step(command)
            timings[kind].append(time.perf_counter() - began)
            steps += 1
            assert not info["invalid_action"], (command, info)
            if terminated or truncated:
                scores.append(info["score"])
                successes += bool(info["success"]) if oracle_only else 0
                break
    return {
        "products": products,
        "load_s": load_s,
        "episodes": episodes,
        "steps": steps,
        "oracle_success_rate": successes / max(1, (episodes + 1) // 2),
        "latency_us": {kind: summary(samples, 1e-6) for kind, samples in timings.items() if samples},
        "memory_after_start": after_start,
        "memory_after_episodes": memory(),
    }


def agent_queries(goal: Any, rng: random.Random) -> dict[str, str]:
    """The kinds of query an agent types for ``goal``."""
    instruction = _PRICE_CLAUSE.sub("", goal.instruction_text)
    words = _WORDS.findall(instruction) or ["shop"]
    oracle = " ".join([goal.query, *goal.attributes, *goal.goal_options.values()])
    return {
        "oracle (type + attributes + options)": oracle,
        "instruction pasted": instruction,
        "1-4 random words of the instruction": " ".join(rng.sample(words, min(len(words), rng.randint(1, 4)))),
        "target title": goal.name,
    }


def child_search(products: int, cache_dir: str, queries: int, seed: int) -> dict[str, Any]:
    """BM25 search latency (uncached) on agent-style queries; load time and RSS before and after."""
    from agentgym.environments.webshop.engine import load_shop
    from agentgym.environments.webshop.search import index_directory

    had_index = (index_directory(f"generated-{products}-seed0", cache_dir) / "meta.json").exists()
    start = time.perf_counter()
    shop = load_shop(catalog_source(products), None, cache_dir)
    load_s = time.perf_counter() - start
    after_start = memory()
    rng = random.Random(seed)
    goals = rng.sample(shop.goals, min(len(shop.goals), 2 * queries))
    warm, timed = goals[:queries], goals[queries:]
    for goal in warm:  # one untimed pass over other goals' queries (page in the index's hot parts)
        for query in agent_queries(goal, rng).values():
            shop.index.search(query, 50)
    timings: dict[str, list[float]] = {}
    hits = []
    for goal in timed:
        for kind, query in agent_queries(goal, rng).items():
            began = time.perf_counter()
            results = shop.index.search(query, 50)
            timings.setdefault(kind, []).append(time.perf_counter() - began)
            hits.append(len(results))
    every = [sample for samples in timings.values() for sample in samples]
    return {
        "products": products,
        "had_index": had_index,
        "load_s": load_s,
        "index_postings": shop.index.meta["num_postings"],
        "index_terms": shop.index.meta["num_terms"],
        "mean_results": statistics.fmean(hits),
        "latency_ms": {"all": summary(every, 1e-3)} | {kind: summary(s, 1e-3) for kind, s in timings.items()},
        "memory_after_start": after_start,
        "memory_after_searches": memory(),
    }


def child_copies(products: int, cache_dir: str, copies: int, seed: int) -> dict[str, Any]:
    """RSS of one env vs ``copies`` + 1 envs in one process, all playing the same tasks."""
    import gymnasium as gym

    import agentgym  # noqa: F401

    def make() -> Any:
        return gym.make("WebShop-v0", catalog=catalog_source(products), cache_dir=cache_dir)

    def play(env: Any, task_id: int, steps: int) -> None:
        env.reset(options={"task_id": task_id})
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(env.unwrapped.oracle_action())
            if terminated or truncated:
                break

    rng = random.Random(seed)
    first = make()
    tasks = rng.sample(range(first.unwrapped.splits.total), copies)
    for task_id in tasks:  # the first env plays every task: the shared caches and index pages warm up
        play(first, task_id, 3)
    play(first, tasks[0], 3)
    gc.collect()
    one = memory()
    envs = [make() for _ in range(copies)]
    for env, task_id in zip(envs, tasks):
        play(env, task_id, 3)  # each copy holds a live session, on a product page
    gc.collect()
    many = memory()
    shared = all(env.unwrapped.shop is first.unwrapped.shop for env in envs)
    return {
        "products": products,
        "copies": copies,
        "one_env": one,
        "envs": many,
        "shared_shop": shared,
        "per_copy_rss_mib": (many["rss_mib"] - one["rss_mib"]) / copies,
        "per_copy_anon_mib": (many["anon_mib"] - one["anon_mib"]) / copies,
    }


CHILDREN = {"cold": child_cold, "steps": child_steps, "search": child_search, "copies": child_copies}


def run_child(name: str, **kwargs: Any) -> dict[str, Any]:
    """Run ``child_<name>(**kwargs)`` in a fresh Python process and return its JSON."""
    command = [sys.executable, __file__, "--child", name, "--child-args", json.dumps(kwargs)]
    began = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"child {name} {kwargs} failed:\n{result.stderr[-4000:]}")
    data = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"  {name} {kwargs}: {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
    return data


# ---- the report ----------------------------------------------------------------------------------


def tables(data: dict[str, Any]) -> str:
    cold_no, cold_yes = data["cold_no_index"], data["cold_cached_index"]
    copies = data["copies"]
    k = _size(cold_yes["products"])
    rows = [
        (f"{k}: `import agentgym` (+ gymnasium)", f"{cold_yes['import_s']:.2f} s", ""),
        (f"{k}: make + first reset, no cached index (builds it)", f"{cold_no['make_and_first_reset_s']:.2f} s", ""),
        (f"{k}: make + first reset, cached index", f"{cold_yes['make_and_first_reset_s']:.2f} s", ""),
        (f"{k}: RSS after start (anonymous part)", _mib(cold_yes), ""),
        (
            "100k: RSS after the step benchmark's episodes",
            _mib(data["steps_100k"]["memory_after_episodes"]),
            "",
        ),
        (
            f"100k: RSS, 1 env → {copies['copies'] + 1} envs in one process",
            f"{copies['one_env']['rss_mib']:.1f} → {copies['envs']['rss_mib']:.1f} MiB",
            "",
        ),
        (
            "100k: per extra env copy (RSS; anonymous)",
            f"{copies['per_copy_rss_mib'] * 1024:.1f} KiB; {copies['per_copy_anon_mib'] * 1024:.1f} KiB",
            "< 5 MB",
        ),
    ]
    if "search_1m" in data:
        s1m, st1m = data["search_1m"], data["steps_1m"]
        m = _size(s1m["products"])
        built = "built now" if not s1m["had_index"] else "cached"
        rows += [
            (f"{m}: load the shop (index {built})", f"{s1m['load_s']:.2f} s", ""),
            (f"{m}: RSS after start (anonymous part)", _mib(s1m["memory_after_start"]), "< 1.5 GB"),
            (f"{m}: RSS after the search benchmark", _mib(s1m["memory_after_searches"]), "< 1.5 GB"),
            (f"{m}: RSS after {st1m['episodes']} episodes", _mib(st1m["memory_after_episodes"]), "< 1.5 GB"),
        ]
    lines = ["| measure | value | target |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {target} |" for name, value, target in rows]

    lines += ["", "Step latency (`env.step` through `gym.make`), per action type:", ""]
    step_runs = [data[key] for key in ("steps_100k", "steps_1m") if key in data]
    header = "| action | " + " | ".join(f"{_size(run['products'])}: n, median µs, p99 µs" for run in step_runs)
    lines += [header + " | target (median) |", "|---|" + "---|" * len(step_runs) + "---|"]
    for kind in ACTION_TYPES:
        cells = []
        for run in step_runs:
            stats = run["latency_us"].get(kind)
            cells.append("–" if stats is None else f"{stats['count']:,}, {stats['median']:.1f}, {stats['p99']:.1f}")
        target = "" if kind in ("search", "reset") else "< 1,000 µs"
        lines.append(f"| {kind} | " + " | ".join(cells) + f" | {target} |")
    lines.append(
        "| oracle success (oracle-only episodes) | "
        + " | ".join(f"{run['oracle_success_rate']:.1%}" for run in step_runs)
        + " | |"
    )

    lines += ["", "BM25 search latency (`SearchIndex.search(query, 50)`, no cache), agent-style queries:", ""]
    search_runs = [data[key] for key in ("search_100k", "search_1m") if key in data]
    header = "| query | " + " | ".join(f"{_size(run['products'])}: median ms, p99 ms" for run in search_runs)
    lines += [header + " | target (1M median) |", "|---|" + "---|" * len(search_runs) + "---|"]
    for kind in search_runs[0]["latency_ms"]:
        stats = [run["latency_ms"][kind] for run in search_runs]
        cells = [f"{entry['median']:.2f}, {entry['p99']:.2f}" for entry in stats]
        lines.append(f"| {kind} | " + " | ".join(cells) + f" | {'< 10 ms' if kind == 'all' else ''} |")
    lines.append(
        "| index: terms, postings | "
        + " | ".join(f"{run['index_terms']:,}, {run['index_postings']:,}" for run in search_runs)
        + " | |"
    )
    return "\n".join(lines)


def _mib(measured: dict[str, float]) -> str:
    return f"{measured['rss_mib']:.1f} MiB ({measured['anon_mib']:.1f} MiB)"


def _size(products: int) -> str:
    return f"{products // 1_000_000}M" if products >= 1_000_000 else f"{products // 1000}k"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--products", type=int, default=100_000, help="catalog size of the main measurements")
    parser.add_argument("--large", type=int, default=1_000_000, help="catalog size of the large measurements")
    parser.add_argument("--episodes", type=int, default=500, help="episodes of the step-latency measurement")
    parser.add_argument("--episodes-large", type=int, default=200, help="episodes at the large size")
    parser.add_argument("--queries", type=int, default=500, help="goals whose queries are timed (4 queries each)")
    parser.add_argument("--copies", type=int, default=100, help="extra env copies in one process")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", help="index cache of the large catalog (default: <agentgym cache>/benchmark)")
    parser.add_argument("--skip-1m", action="store_true", help="skip the large catalog")
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results/")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--child-args", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](**json.loads(args.child_args))))
        return

    from agentgym.environments.webshop.search import cache_root

    large_cache = args.cache_dir or str(cache_root() / "benchmark")
    data: dict[str, Any] = {"load_average_at_start": os.getloadavg()[0]}
    began = time.perf_counter()
    fresh = tempfile.mkdtemp(prefix="webshop-bench-")
    try:
        size = args.products
        data["cold_no_index"] = run_child("cold", products=size, cache_dir=fresh)
        data["cold_cached_index"] = run_child("cold", products=size, cache_dir=fresh)
        data["steps_100k"] = run_child("steps", products=size, cache_dir=fresh, episodes=args.episodes, seed=args.seed)
        data["search_100k"] = run_child("search", products=size, cache_dir=fresh, queries=args.queries, seed=args.seed)
        data["copies"] = run_child("copies", products=size, cache_dir=fresh, copies=args.copies, seed=args.seed)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    if not args.skip_1m:
        size = args.large
        data["search_1m"] = run_child("search", products=size, cache_dir=large_cache, queries=args.queries, seed=1)
        data["steps_1m"] = run_child(
            "steps", products=size, cache_dir=large_cache, episodes=args.episodes_large, seed=args.seed
        )
    data["wall_s"] = time.perf_counter() - began
    data["cpus"] = os.cpu_count()
    table = tables(data)
    print(table)
    if args.no_write:
        return
    from recording import record

    setup = (
        f"{_size(args.products)} and {_size(args.large)} generated products; {args.episodes} and "
        f"{args.episodes_large} episodes; {args.queries} goals × 4 queries; {args.copies} copies; "
        f"each measurement in a fresh process; {os.cpu_count()} CPUs, 1-minute load average "
        f"{data['load_average_at_start']:.1f} at start (p99s suffer when other work shares the CPUs); "
        f"{data['wall_s']:.0f} s in all"
    )
    record("webshop", "WebShop at 100k and 1M products", setup, table, data)


if __name__ == "__main__":
    main()
