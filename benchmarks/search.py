"""Search family at 100k and 1M documents: index build, search latency, memory per env, baselines.

Each measurement runs in a fresh Python process (this script with ``--child``), so timings
start cold and resident memory (RSS from ``/proc/self/statm``, and its anonymous part: RSS
minus the file-backed pages of the memory-mapped index, which processes share) holds nothing
from the others.

* **100k (the default world, 111,080 documents)**, in a fresh temporary cache:
  make + first reset without a cached index (world generation + index build), the index's
  size on disk; make + first reset with it.
* **search latency**: ``BM25Index.search(query, 20)`` on agent-style queries for
  ``--questions`` test questions: the question pasted whole, each hop's entity name (what the
  oracle types), and 2 random words of the question; after one untimed pass.
* **memory per extra env**: RSS with 1 env (after an oracle episode) and after 50 more envs,
  each reset and played for an oracle episode, all kept open; per copy = difference / 50.
* **baselines per question kind**: the oracle (played through ``env.step``) and the
  no-search baseline (:mod:`agentgym.environments.search.baselines`) on ``--questions`` test
  tasks of ``Search-v0`` (every kind), with the no-search baseline's prior from 2,000 train
  questions; chance for comparisons is 1/2, for counts at most 1/5, else about 0.
* **1M documents**: the default world and four more seeds, cut into passages of about 100
  words as Search-R1's wiki-18 corpus is, written as a Search-R1 JSONL corpus, indexed by
  :class:`~agentgym.environments.search.corpus.CorpusSearchEnv` (the same BM25); build time,
  size, search latency on the same kinds of queries. The corpus and index are written into
  ``--cache-dir`` (default a temporary folder, removed afterwards).

Targets (issue 31): search median < 20 ms at 1M; memory per extra env < 1 MB.

    python benchmarks/search.py                      # everything; writes results/search.{md,json}
    python benchmarks/search.py --no-write --questions 100 --skip-1m
    python benchmarks/search.py --only-1m              # add the 1M part to the recorded results
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 2**20
RESULTS = Path(__file__).resolve().parent / "results"
PASSAGE_WORDS = 100
MILLION_SEEDS = 5


def memory() -> dict[str, float]:
    """This process's RSS and its anonymous (not file-backed) part, in MiB."""
    with open("/proc/self/statm") as statm:
        fields = [int(value) for value in statm.read().split()]
    resident, shared = fields[1] * PAGE, fields[2] * PAGE
    return {"rss_mib": resident / MIB, "anon_mib": (resident - shared) / MIB}


def summary(samples: list[float]) -> dict[str, float]:
    """Count, median and p99 of ``samples`` (seconds), in milliseconds."""
    ordered = sorted(samples)
    return {
        "count": len(samples),
        "median_ms": statistics.median(samples) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000,
    }


def agent_queries(questions: list[Any], rng: random.Random) -> list[str]:
    """The question pasted whole, each hop's entity name, and 2 random words of the question."""
    queries = []
    for question in questions:
        queries.append(question.text)
        queries.extend(sorted({hop.query for hop in question.hops}))
        words = question.text.rstrip("?").split()
        queries.append(" ".join(rng.sample(words, 2)))
    return queries


def time_searches(index: Any, queries: list[str], k: int = 20) -> dict[str, float]:
    for query in queries:  # untimed pass: the index's pages in the OS cache
        index.search(query, k)
    samples = []
    for query in queries:
        start = time.perf_counter()
        index.search(query, k)
        samples.append(time.perf_counter() - start)
    return summary(samples)


# ---- children: each runs in a fresh process and prints one JSON line -----------------------


def child_start(cache_dir: str) -> dict[str, Any]:
    """make + first reset of Search-v0 (building the index when the cache lacks it)."""
    start = time.perf_counter()
    import gymnasium as gym

    import agentgym  # noqa: F401

    imported = time.perf_counter()
    env = gym.make("Search-v0", cache_dir=cache_dir)
    env.reset(options={"task_id": 0})
    ready = time.perf_counter()
    index = env.unwrapped.index
    return {
        "import_s": imported - start,
        "make_and_first_reset_s": ready - imported,
        "num_docs": index.num_docs,
        "index_mib": index.size_bytes / MIB,
        "num_terms": index.meta["num_terms"],
        "num_postings": index.meta["num_postings"],
        **memory(),
    }


def child_play(cache_dir: str, questions: int) -> dict[str, Any]:
    """Search latency, memory per extra env, oracle and no-search success per kind (100k world)."""
    import gymnasium as gym

    import agentgym  # noqa: F401
    from agentgym.environments.search.baselines import answer_prior, no_search_answer
    from agentgym.environments.search.scoring import exact_match

    env = gym.make("Search-v0", cache_dir=cache_dir)
    base = env.unwrapped
    rng = random.Random(0)
    test_ids = list(base.splits.ids("test"))
    sample = rng.sample(test_ids, min(questions, len(test_ids)))

    def oracle_episode(environment: Any, task_id: int) -> dict[str, Any]:
        environment.reset(options={"task_id": task_id})
        while True:
            *_, terminated, truncated, info = environment.step(environment.unwrapped.oracle_action())
            if terminated or truncated:
                return info

    kinds: dict[str, dict[str, list[float]]] = {}
    started = time.perf_counter()
    for task_id in sample:
        info = oracle_episode(env, task_id)
        row = kinds.setdefault(
            info["question_kind"], {"oracle": [], "no_search": [], "steps": [], "searches": [], "reads": []}
        )
        row["oracle"].append(float(info["success"]))
        row["steps"].append(info["steps"])
        row["searches"].append(info["searches"])
        row["reads"].append(info["reads"])
    oracle_seconds = time.perf_counter() - started
    prior = answer_prior(base.question_for(task_id) for task_id in base.splits.ids("train")[:2000])
    for task_id in sample:
        question = base.question_for(task_id)
        kinds[question.kind]["no_search"].append(exact_match(no_search_answer(question, prior, rng), question.answer))
    per_kind = {
        kind: {
            "tasks": len(row["oracle"]),
            "oracle_success": statistics.mean(row["oracle"]),
            "no_search_success": statistics.mean(row["no_search"]),
            "mean_steps": statistics.mean(row["steps"]),
            "mean_searches": statistics.mean(row["searches"]),
            "mean_reads": statistics.mean(row["reads"]),
        }
        for kind, row in sorted(kinds.items())
    }
    latency = time_searches(base.index, agent_queries([base.question_for(t) for t in sample], rng))

    one = memory()
    extra = []
    for task_id in sample[:50]:
        copy = gym.make("Search-v0", cache_dir=cache_dir)
        oracle_episode(copy, task_id)
        extra.append(copy)
    many = memory()
    return {
        "search_latency": latency,
        "per_kind": per_kind,
        "oracle_episodes_per_s": len(sample) / oracle_seconds,
        "rss_one_env_mib": one["rss_mib"],
        "rss_51_envs_mib": many["rss_mib"],
        "per_extra_env_kib": (many["rss_mib"] - one["rss_mib"]) * 1024 / len(extra),
        "anon_per_extra_env_kib": (many["anon_mib"] - one["anon_mib"]) * 1024 / len(extra),
    }


def child_million(cache_dir: str, questions: int) -> dict[str, Any]:
    """A ~1M-passage Search-R1 corpus cut from five worlds: build the index, time searches."""
    from agentgym.environments.search.corpus import CorpusSearchEnv
    from agentgym.environments.search.questions import make_question
    from agentgym.environments.search.world import World, WorldConfig

    folder = Path(cache_dir)
    corpus = folder / "million.jsonl"
    started = time.perf_counter()
    passages = 0
    worlds = []
    with open(corpus, "w", encoding="utf-8") as handle:
        for seed in range(MILLION_SEEDS):
            world = World(WorldConfig(seed=seed))
            worlds.append(world)
            for doc in range(world.num_docs):
                document = world._render(doc)
                words = document.text.split()
                for start in range(0, len(words), PASSAGE_WORDS):
                    text = " ".join(words[start : start + PASSAGE_WORDS])
                    handle.write(json.dumps({"id": str(passages), "contents": f'"{document.title}"\n{text}'}) + "\n")
                    passages += 1
    written = time.perf_counter()
    questions_file = folder / "questions.jsonl"
    rng = random.Random(1)
    sample = [
        make_question(worlds[0], rng.choice(("single", "bridge2", "bridge3", "count")), "test", rng)
        for _ in range(questions)
    ]
    questions_file.write_text(
        "".join(json.dumps({"question": q.text, "golden_answers": [q.answer]}) + "\n" for q in sample)
    )
    env = CorpusSearchEnv(corpus=corpus, test=questions_file, cache_dir=folder)
    env.reset(options={"task_id": 0})
    built = time.perf_counter()
    return {
        "passages": passages,
        "corpus_mib": corpus.stat().st_size / MIB,
        "write_corpus_s": written - started,
        "build_index_s": built - written,
        "index_mib": env.index.size_bytes / MIB,
        "num_terms": env.index.meta["num_terms"],
        "search_latency": time_searches(env.index, agent_queries(sample, rng)),
        **memory(),
    }


def run_child(*args: str) -> dict[str, Any]:
    output = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def markdown(results: dict[str, Any]) -> str:
    cold, warm, play = results["cold"], results["warm"], results["play"]
    lines = [
        "# Search: index, latency, memory, baselines",
        "",
        f"`python benchmarks/search.py` ({results['questions']} test questions; each measurement in a fresh "
        f"process; {results['machine']}; 1-minute load average {results['load_average']:.1f} at start; "
        f"{results['seconds']:.0f} s in all)",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| 100k: documents, terms, postings | {cold['num_docs']:,}, {cold['num_terms']:,}, "
        f"{cold['num_postings']:,} |  |",
        f"| 100k: make + first reset, no cached index (world + index build) | "
        f"{cold['make_and_first_reset_s']:.1f} s |  |",
        f"| 100k: index size on disk | {cold['index_mib']:.1f} MiB |  |",
        f"| 100k: make + first reset, cached index | {warm['make_and_first_reset_s']:.2f} s |  |",
        f"| 100k: search median, p99 (k = 20; {play['search_latency']['count']} queries) | "
        f"{play['search_latency']['median_ms']:.2f} ms, {play['search_latency']['p99_ms']:.2f} ms |  |",
        f"| 100k: RSS 1 env → 51 envs | {play['rss_one_env_mib']:.1f} → {play['rss_51_envs_mib']:.1f} MiB |  |",
        f"| 100k: per extra env (RSS; anonymous) | {play['per_extra_env_kib']:.0f} KiB; "
        f"{play['anon_per_extra_env_kib']:.0f} KiB | < 1 MB |",
        f"| 100k: oracle episodes per second (one env) | {play['oracle_episodes_per_s']:.1f} |  |",
    ]
    million = results.get("million")
    if million:
        lines += [
            f"| 1M: 1-minute load average at the 1M run's start | {results.get('million_load_average', 0):.1f} |  |",
            f"| 1M: passages (~{PASSAGE_WORDS} words, {MILLION_SEEDS} worlds), corpus size | "
            f"{million['passages']:,}, {million['corpus_mib']:.0f} MiB |  |",
            f"| 1M: index build (CorpusSearchEnv, Search-R1 JSONL) | {million['build_index_s']:.0f} s |  |",
            f"| 1M: index size on disk, terms | {million['index_mib']:.0f} MiB, {million['num_terms']:,} |  |",
            f"| 1M: search median, p99 (k = 20; {million['search_latency']['count']} queries) | "
            f"{million['search_latency']['median_ms']:.2f} ms, {million['search_latency']['p99_ms']:.2f} ms "
            "| median < 20 ms |",
            f"| 1M: RSS after the searches (anonymous part) | {million['rss_mib']:.0f} MiB "
            f"({million['anon_mib']:.0f} MiB) |  |",
        ]
    lines += [
        "",
        "Baselines per question kind (Search-v0, test split): the oracle plays the hop chain through the tools;",
        "the no-search baseline answers from the question alone (a named option at random, else the relation's",
        "most frequent train answer).",
        "",
        "| kind | tasks | oracle success | no-search success | mean steps | mean searches | mean reads |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, row in play["per_kind"].items():
        lines.append(
            f"| {kind} | {row['tasks']} | {row['oracle_success']:.3f} | {row['no_search_success']:.3f} | "
            f"{row['mean_steps']:.1f} | {row['mean_searches']:.1f} | {row['mean_reads']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--skip-1m", action="store_true")
    parser.add_argument(
        "--only-1m", action="store_true", help="measure 1M only, added to the recorded results/search.json's 100k part"
    )
    parser.add_argument(
        "--cache-dir", default=None, help="where the 1M corpus and index go (default: a temporary folder)"
    )
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        kind, cache_dir, *rest = args.child
        result = {"start": child_start, "play": child_play, "million": child_million}[kind](cache_dir, *map(int, rest))
        print(json.dumps(result))
        return
    started = time.perf_counter()
    results: dict[str, Any] = {
        "questions": args.questions,
        "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}",
        "load_average": os.getloadavg()[0],
    }
    if args.only_1m:
        recorded = json.loads((RESULTS / "search.json").read_text())
        results = {**recorded, "million_load_average": os.getloadavg()[0], "million_questions": args.questions}
    else:
        cache = tempfile.mkdtemp(prefix="agentgym-search-bench-")
        try:
            results["cold"] = run_child("start", cache)
            results["warm"] = run_child("start", cache)
            results["play"] = run_child("play", cache, str(args.questions))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    if not args.skip_1m:
        million_dir = args.cache_dir or tempfile.mkdtemp(prefix="agentgym-search-1m-")
        try:
            results["million"] = run_child("million", million_dir, str(min(args.questions, 200)))
        finally:
            if args.cache_dir is None:
                shutil.rmtree(million_dir, ignore_errors=True)
    results["seconds" if not args.only_1m else "million_seconds"] = time.perf_counter() - started
    text = markdown(results)
    print(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "search.json").write_text(json.dumps(results, indent=1) + "\n")
        (RESULTS / "search.md").write_text(text)


if __name__ == "__main__":
    main()
