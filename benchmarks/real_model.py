"""The real model on agentgym: SmolLM2-135M-Instruct through three serving paths, on the same episodes.

Paths (each an ``agentgym eval --policy ...`` run, as a user types it):

* ``hf``: ``--policy hf:smollm2``, the model in the eval's own process (transformers, float32 on CPU);
  ``hf-int8``: the same with ``--quantize int8``;
* ``serve-model``: ``agentgym serve-model smollm2`` and ``--policy openai:SmolLM2-135M-Instruct@URL``;
  ``serve-model-int8``: the server started with ``--quantize int8``;
* ``llamacpp``: llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``, llama-cpp-python in its
  side venv: ``python -m agentgym.integrations.venvs llamacpp``) on the same GGUF file, and the same policy.

Two reports:

* ``leaderboard SUITE``: every path on the suite (greedy, the same seeds), beside the oracle and random: success
  and score with 95% intervals per family, the invalid-action rate and its reasons (no ``Action:`` line, unknown
  command, bad arguments, reply cut at ``--max-tokens``), tokens per episode, turns whose prompt left out old
  turns to fit the 8k context, episodes stopped because even their task overflows it, errored episodes ->
  ``benchmarks/results/real_model_leaderboard.{json,md}`` (``--results NAME``: ``NAME.{json,md}``, for a protocol
  suite's table beside the quick one's: ``leaderboard ragen --paths serve-model-int8 --results
  real_model_ragen``);
* ``throughput``: the same episodes at concurrency 1, 8 and 32 on each path: prompt and generated tokens per
  second, episodes per minute, seconds per reply and to the first reply, and for the servers the time to the first
  streamed token of the episodes' first prompts sent at that concurrency -> ``real_model_throughput.{json,md}``
  (each row is kept in ``--out`` as it is measured: the same command run again measures only the missing rows);
* ``passes``: one forward pass of the model alone (a batch's prefill of 320-token prompts, then one decode step)
  in float32, bfloat16 and int8 (``--quantize int8``) at batch 1, 8 and 32: what the paths above are made of
  -> ``real_model_passes.{json,md}``;
* ``fixtures FOLDER...``: the real replies of eval folders, with the env's reading of each, as the tests'
  regression set (``tests/data/smollm2_replies.jsonl``).

    python -m benchmarks.real_model leaderboard benchmarks/real_model.yaml --out /tmp/real-model
    python -m benchmarks.real_model throughput --out /tmp/real-model-throughput
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx

import agentgym  # noqa: F401  (registers the envs)
from agentgym.contract.registry import env_info
from agentgym.evaluation.records import EpisodeRecord, Turn
from agentgym.evaluation.results import read_episodes
from agentgym.evaluation.stats import wilson_interval
from agentgym.evaluation.suites import load_suite
from agentgym.integrations.venvs import ensure
from agentgym.llm.models import resolve_model
from agentgym.utils.sockets import free_port
from agentgym.utils.text import last_action_line, strip_thinking

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
MODEL = "SmolLM2-135M-Instruct"
#: Each path: how the model is served (in process, serve-model or llama.cpp's server) and the flags it adds (to
#: ``agentgym eval`` in process, to the server's command otherwise).
PATHS = {
    "hf": ("hf", []),
    "hf-int8": ("hf", ["--quantize", "int8"]),
    "serve-model": ("serve-model", []),
    "serve-model-int8": ("serve-model", ["--quantize", "int8"]),
    "llamacpp": ("llamacpp", []),
}
DEFAULT_PATHS = ["hf", "serve-model", "serve-model-int8", "llamacpp"]
#: Paths whose server answers one request at a time (llama-cpp-python's server holds a lock around its one model):
#: the leaderboard plays them with at most this many episodes at once, so that no request waits in a line of 32
#: long prompts past the client's timeout. One: llama.cpp then reuses the previous turn's prompt (it keeps the
#: keys and values of the last prompt it ran), which another episode's request in between would evict.
ONE_AT_A_TIME = {"llamacpp": 1}
REASONS = ("no Action: line", "unknown command", "bad arguments", "cut at max tokens")


# ---- serving -----------------------------------------------------------------------------------


@contextlib.contextmanager
def served(path: str, threads: int, max_batch_size: int, port: int | None = None) -> Iterator[tuple[str, list[str]]]:
    """The policy spec of ``path`` and the flags it adds to ``agentgym eval``, with its server running (none in
    process) on ``port`` (a free one by default)."""
    kind, flags = PATHS[path]
    if kind == "hf":
        yield "hf:smollm2", flags
        return
    port = port or free_port()
    env = os.environ | {"OMP_NUM_THREADS": str(threads)}
    if kind == "serve-model":
        command = [sys.executable, "-m", "agentgym.cli", "serve-model", "smollm2", "--device", "cpu", *flags]
        command += ["--port", str(port), "--max-batch-size", str(max_batch_size), "--log-level", "warning"]
    else:
        gguf = resolve_model("smollm2").gguf
        command = [str(ensure("llamacpp")), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL]
        command += ["--n_ctx", "8192", "--n_threads", str(threads), "--n_threads_batch", str(threads)]
        command += ["--host", "127.0.0.1", "--port", str(port)]
        # By default a new request cuts off the reply being streamed (llama-cpp-python's interrupt_requests): the
        # first-token measurement streams several at once.
        command += ["--interrupt_requests", "False"]
    # A pipe nobody reads would fill up and stop llama.cpp's verbose server: its output goes to a file.
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            deadline = time.monotonic() + 300
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{url}/models", timeout=5).status_code == 200:
                        break
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"{path} did not start: {log.read()[-3000:]}")
                time.sleep(1)
            yield f"openai:{MODEL}@{url}", []
        finally:
            server.terminate()
            server.wait(timeout=60)


def earlier_port(folder: Path) -> int | None:
    """The port an earlier run into ``folder`` served on, so that its policy spec (the URL) is the same and the
    runner resumes it; None without one, or if the port is taken now."""
    run = folder / "run.json"
    recorded = json.loads(run.read_text(encoding="utf-8")) if run.exists() else {}
    base_url = recorded.get("policy_info", {}).get("base_url")
    port = urllib.parse.urlsplit(base_url).port if base_url else None
    if port is None:
        return None
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return None
    return port


def evaluate(spec: str, out: Path, eval_args: list[str], threads: int) -> float:
    """Run ``agentgym eval`` for one policy into ``out``; its wall seconds."""
    command = [sys.executable, "-m", "agentgym.cli", "eval", "--policy", spec, "--out", str(out), "--no-progress"]
    env = os.environ | {"OMP_NUM_THREADS": str(threads)}
    start = time.perf_counter()
    subprocess.run(command + eval_args, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


async def first_token_seconds(
    url: str, chats: list[list[dict[str, Any]]], concurrency: int, max_tokens: int
) -> list[float]:
    """Send ``chats`` as streamed chat requests, ``concurrency`` at a time; each one's seconds to its first token."""
    gate = asyncio.Semaphore(concurrency)

    async def one(client: httpx.AsyncClient, chat: list[dict[str, Any]]) -> float:
        body = {"model": MODEL, "messages": chat, "max_tokens": max_tokens, "temperature": 0, "stream": True}
        async with gate:
            start = time.perf_counter()
            async with client.stream("POST", f"{url}/chat/completions", json=body) as response:
                first = None
                async for line in response.aiter_lines():
                    if first is None and line.startswith("data: {") and streamed_text(json.loads(line[6:])):
                        first = time.perf_counter() - start
            return first if first is not None else time.perf_counter() - start

    async with httpx.AsyncClient(timeout=600) as client:
        return list(await asyncio.gather(*(one(client, chat) for chat in chats)))


def streamed_text(chunk: dict[str, Any]) -> str:
    """The text a ``chat.completion.chunk`` adds."""
    return "".join((choice.get("delta") or {}).get("content") or "" for choice in chunk.get("choices") or [])


def first_prompts(folder: Path) -> list[list[dict[str, Any]]]:
    """The chats the episodes of an eval folder sent first (everything before the first reply), each starting
    with a mark of this call, so that no server finds them in its prefix cache from the run."""
    mark = f"[{time.time_ns()}] "
    chats = []
    for record in read_episodes(folder / "episodes.jsonl").values():
        replied = next((i for i, message in enumerate(record.messages) if message.get("role") == "assistant"), None)
        if replied:
            first, *rest = record.messages[:replied]
            chats.append([first | {"content": mark + (first.get("content") or "")}, *rest])
    return chats


# ---- reading the replies -----------------------------------------------------------------------


def replies(record: EpisodeRecord) -> list[str]:
    """The model's replies of an episode, one per turn (its transcript's assistant messages)."""
    return [message.get("content") or "" for message in record.messages if message.get("role") == "assistant"]


def verbs(env_id: str, kwargs: dict[str, Any], cache: dict[str, set[str]]) -> set[str]:
    """The words a command of the env may start with: its tools' names and the first words of its commands."""
    if env_id not in cache:
        env = gym.make(env_id, **kwargs)
        try:
            env.reset(options={"split": "test"})
            unwrapped = env.unwrapped
            words = (
                {tool.name.lower() for tool in unwrapped.tool_specs()} if hasattr(unwrapped, "tool_specs") else set()
            )
            for action in (unwrapped.available_actions() if hasattr(unwrapped, "available_actions") else None) or ():
                words.add(first_word(action))
        finally:
            env.close()
        cache[env_id] = words
    return cache[env_id]


def first_word(command: str) -> str:
    word = command.strip().split(maxsplit=1)[0] if command.strip() else ""
    return word.split("[", 1)[0].split("(", 1)[0].lower()


def invalid_reason(turn: Turn, reply: str, known: set[str]) -> str:
    """Why a turn's action was invalid: the reply was cut, had no ``Action:`` line, or named a command the env
    does not know, or one it knows with arguments it refused."""
    if turn.finish_reason == "length":
        return "cut at max tokens"
    if not turn.tool_calls and last_action_line(strip_thinking(reply)) is None:
        return "no Action: line"
    command = turn.action if isinstance(turn.action, str) else ""
    return "bad arguments" if first_word(command) in known else "unknown command"


# ---- the leaderboard ---------------------------------------------------------------------------


def family_rows(folder: Path, verb_cache: dict[str, set[str]]) -> dict[str, dict[str, Any]]:
    """Per family: episodes, success and score, invalid actions and their reasons, tokens, truncations, errors."""
    grouped: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in read_episodes(folder / "episodes.jsonl").values():
        grouped[env_info(record.env_id).family].append(record)
    rows = {}
    for family, records in sorted(grouped.items()):
        played = [record for record in records if record.status == "ok"]
        successes = sum(record.success for record in played)
        low, high = wilson_interval(successes, len(played)) if played else (0.0, 0.0)
        turns = reasons = 0
        reason_counts: Counter[str] = Counter()
        for record in played:
            known = verbs(record.env_id, record.env_kwargs, verb_cache)
            for turn, reply in zip(record.turns, replies(record)):
                turns += 1
                if turn.invalid_action:
                    reasons += 1
                    reason_counts[invalid_reason(turn, reply, known)] += 1
        rows[family] = {
            "episodes": len(records),
            "errored": len(records) - len(played),
            "success": successes / len(played) if played else 0.0,
            "interval": [low, high],
            "score": sum(record.score for record in played) / len(played) if played else 0.0,
            "turns": turns,
            "invalid_rate": reasons / turns if turns else 0.0,
            "reasons": {reason: reason_counts[reason] for reason in REASONS},
            "prompt_tokens": sum(record.tokens.prompt for record in played if record.tokens) / max(len(played), 1),
            "completion_tokens": sum(r.tokens.completion for r in played if r.tokens) / max(len(played), 1),
            "truncated_prompts": sum(turn.dropped_turns > 0 for record in played for turn in record.turns),
            "context_stopped": sum(record.stopped == "context" for record in played),
        }
    return rows


def episodes_wall_s(folder: Path) -> float:
    """Seconds during which an episode of the folder was playing: from the first start to the last end, less the
    gaps between a run cut short and its resumption."""
    spans = sorted(
        (start := datetime.fromisoformat(record.started).timestamp(), start + record.wall_s)
        for record in read_episodes(folder / "episodes.jsonl").values()
        if record.started
    )
    total, covered_to = 0.0, float("-inf")
    for start, end in spans:
        total += max(0.0, end - max(start, covered_to))
        covered_to = max(covered_to, end)
    return total


def leaderboard(args: argparse.Namespace) -> None:
    """Play the suite with the baselines and each path into ``--out``; a policy whose folder already holds every
    episode of the suite finished (an earlier call's) is not played again, one with errored episodes plays them
    again. ``--report-only`` reports the folders as they
    are (a run cut short counts the episodes it finished)."""
    out = Path(args.out)
    eval_args = ["--suite", args.suite, "--max-tokens", str(args.max_tokens), "--temperature", "0", "--seed", "0"]
    expected = sum(item.episodes for item in load_suite(args.suite).items)
    walls = {}
    recorded = RESULTS / f"{args.results}.json"
    kept = (
        json.loads(recorded.read_text(encoding="utf-8"))["wall_s"] if args.keep_recorded and recorded.exists() else {}
    )
    for name in (*(baseline for baseline in ("oracle", "random") if baseline not in kept), *args.paths):
        folder = out / name
        played = read_episodes(folder / "episodes.jsonl") if (folder / "episodes.jsonl").exists() else {}
        done = sum(record.status == "ok" for record in played.values())
        retry = ["--retry-errors"] if len(played) > done else []  # errored episodes (a timeout, a crash) play again
        if done >= expected or (args.report_only and played):
            walls[name] = episodes_wall_s(folder)
        elif args.report_only:
            continue
        elif name in ("oracle", "random"):
            evaluate(name, folder, ["--suite", args.suite, "--seed", "0", *retry], args.threads)
            walls[name] = episodes_wall_s(folder)
        else:
            concurrency = ["--concurrency", str(path_concurrency(name, args.concurrency))]
            with served(name, args.threads, args.concurrency, earlier_port(folder)) as (spec, flags):
                evaluate(spec, folder, eval_args + concurrency + flags + retry, args.threads)
            walls[name] = episodes_wall_s(folder)
    verb_cache: dict[str, set[str]] = {}
    table = {name: family_rows(out / name, verb_cache) for name in walls}
    report = {
        "suite": args.suite,
        "max_tokens": args.max_tokens,
        "concurrency": args.concurrency,
        "path_concurrency": {name: path_concurrency(name, args.concurrency) for name in walls if name in ONE_AT_A_TIME},
        "threads": args.threads,
        "wall_s": walls,
        "expected_episodes": expected,
        "played_episodes": {name: len(read_episodes(out / name / "episodes.jsonl")) for name in walls},
        "families": table,
    }
    if args.keep_recorded:
        report = with_recorded_columns(report, recorded)
    (RESULTS / f"{args.results}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (RESULTS / f"{args.results}.md").write_text(leaderboard_markdown(report), encoding="utf-8")
    print(leaderboard_markdown(report))


def path_concurrency(name: str, concurrency: int) -> int:
    """The episodes at once the leaderboard plays ``name`` with: ``concurrency``, or fewer for a server that answers
    one request at a time."""
    return min(concurrency, ONE_AT_A_TIME.get(name, concurrency))


def with_recorded_columns(report: dict[str, Any], recorded_file: Path) -> dict[str, Any]:
    """``report`` with the columns of the recorded report that it lacks (policies whose folders are not here), when
    both played the same suite with the same settings; the carried ones are listed under ``carried``."""
    if not recorded_file.exists():
        return report
    recorded = json.loads(recorded_file.read_text(encoding="utf-8"))
    settings = ("suite", "max_tokens", "concurrency", "threads", "expected_episodes")
    if any(recorded.get(key) != report[key] for key in settings):
        raise SystemExit(
            f"--keep-recorded: {recorded_file} played other settings: {[recorded.get(k) for k in settings]}"
        )
    carried = [name for name in recorded["wall_s"] if name not in report["wall_s"]]
    merged = dict(report, carried=sorted(set(carried) | set(recorded.get("carried", [])) - set(report["wall_s"])))
    for key in ("wall_s", "played_episodes", "families"):
        merged[key] = report[key] | {name: recorded[key][name] for name in carried}
    merged["path_concurrency"] = report["path_concurrency"] | {
        name: value for name, value in recorded.get("path_concurrency", {}).items() if name in carried
    }
    return merged


def leaderboard_markdown(report: dict[str, Any]) -> str:
    policies = list(report["families"])
    families = sorted({family for rows in report["families"].values() for family in rows})
    lines = [
        f"# SmolLM2-135M-Instruct on `{report['suite']}`",
        "",
        f"Greedy, `--max-tokens {report['max_tokens']}`, concurrency {report['concurrency']}"
        + "".join(
            f" ({name}: {value}, its server answers one request at a time)"
            for name, value in report.get("path_concurrency", {}).items()
        )
        + ", "
        f"{report['threads']} torch/llama.cpp thread(s); the same seeds and tasks for every row. "
        "Made by `benchmarks/real_model.py leaderboard`.",
        *(
            f"\n**`{name}` played {played} of the suite's {report['expected_episodes']} episodes** (a run cut short: "
            "its families without a finished episode have no cell)."
            for name, played in report["played_episodes"].items()
            if played < report["expected_episodes"]
        ),
        *(
            [
                f"\nColumns {', '.join(f'`{name}`' for name in report['carried'])} are carried from an earlier run of "
                "the same suite and settings (`--keep-recorded`): the other columns were played again since."
            ]
            if report.get("carried")
            else []
        ),
        "",
        "## Success rate (95% Wilson interval) and mean score per family",
        "",
        "| family | " + " | ".join(policies) + " |",
        "|---|" + "---|" * len(policies),
    ]
    for family in families:
        cells = []
        for policy in policies:
            row = report["families"][policy].get(family)
            if row is None:
                cells.append("")
                continue
            low, high = row["interval"]
            errored = f", {row['errored']} errored" if row["errored"] else ""
            cells.append(f"{row['success']:.0%} [{low:.0%}, {high:.0%}] · {row['score']:.2f}{errored}")
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    model_paths = [policy for policy in policies if policy not in ("oracle", "random")]
    for policy in model_paths:
        lines += [
            "",
            f"## `{policy}`: invalid actions and their reasons, tokens, context",
            "",
            "| family | episodes | turns | invalid | " + " | ".join(REASONS) + " | prompt tok/ep | gen tok/ep | "
            "prompts cut to fit | episodes over the context |",
            "|---" * (8 + len(REASONS)) + "|",
        ]
        for family, row in report["families"][policy].items():
            reasons = " | ".join(str(row["reasons"][reason]) for reason in REASONS)
            lines.append(
                f"| {family} | {row['episodes']} | {row['turns']} | {row['invalid_rate']:.0%} | {reasons} | "
                f"{row['prompt_tokens']:,.0f} | {row['completion_tokens']:,.0f} | {row['truncated_prompts']} | "
                f"{row.get('context_stopped', 0)} |"
            )
    walls = ", ".join(f"{name} {seconds / 60:.1f} min" for name, seconds in report["wall_s"].items())
    lines += [
        "",
        f"Wall time (while an episode was playing, from the first start to the last end; a resumed run's pause left "
        f"out; machine shared with other work): {walls}.",
        "",
    ]
    return "\n".join(lines)


# ---- throughput --------------------------------------------------------------------------------


def throughput(args: argparse.Namespace) -> None:
    out = Path(args.out)
    eval_args = ["--max-tokens", str(args.max_tokens), "--temperature", "0", "--seed", "0"]
    eval_args += ["--max-turns", str(args.max_turns), "--episodes", str(args.episodes), "--split", "test"]
    for env_id in args.env:
        eval_args += ["--env", env_id]
    # Each row is kept in --out as it is measured: a run stopped (or failed) part way measures only the rest again.
    measured = out / "rows.jsonl"
    rows = [json.loads(line) for line in measured.read_text(encoding="utf-8").splitlines()] if measured.exists() else []
    for path in args.paths:
        wanted = [c for c in args.concurrency if not any((r["path"], r["concurrency"]) == (path, c) for r in rows)]
        if not wanted:
            continue
        with served(path, args.threads, max(args.concurrency)) as (spec, flags):
            for concurrency in wanted:
                folder = out / f"{path}-c{concurrency}"
                wall = evaluate(spec, folder, [*eval_args, *flags, "--concurrency", str(concurrency)], args.threads)
                records = [r for r in read_episodes(folder / "episodes.jsonl").values() if r.status == "ok"]
                turns = [turn for record in records for turn in record.turns]
                first = [record.turns[0].policy_s for record in records if record.turns]
                ttft = None
                if not spec.startswith("hf:"):
                    url = spec.partition("@")[2]
                    seconds = asyncio.run(first_token_seconds(url, first_prompts(folder), concurrency, args.max_tokens))
                    ttft = statistics.median(seconds)
                rows.append(
                    {
                        "path": path,
                        "concurrency": concurrency,
                        "episodes": len(records),
                        "wall_s": wall,
                        "prompt_tokens_per_s": sum(turn.prompt_tokens for turn in turns) / wall,
                        "generated_tokens_per_s": sum(turn.completion_tokens for turn in turns) / wall,
                        "episodes_per_min": 60 * len(records) / wall,
                        "reply_s": sum(turn.policy_s for turn in turns) / max(len(turns), 1),
                        "first_reply_s": sum(first) / max(len(first), 1),
                        "first_token_s": ttft,
                    }
                )
                with measured.open("a", encoding="utf-8") as file:
                    file.write(json.dumps(rows[-1]) + "\n")
                print(rows[-1], flush=True)
    report = {
        "envs": args.env,
        "episodes_per_env": args.episodes,
        "max_turns": args.max_turns,
        "max_tokens": args.max_tokens,
        "threads": args.threads,
        "rows": [row for path in args.paths for row in rows if row["path"] == path],
    }
    (RESULTS / "real_model_throughput.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "real_model_throughput.md").write_text(throughput_markdown(report), encoding="utf-8")
    print(throughput_markdown(report))


def throughput_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# SmolLM2-135M-Instruct: serving paths side by side on the same episodes",
        "",
        f"{report['episodes_per_env']} test episodes of each of {', '.join(report['envs'])}, at most "
        f"{report['max_turns']} turns, greedy, `--max-tokens {report['max_tokens']}`, {report['threads']} thread(s) "
        "for torch and llama.cpp. Prompt tokens count each turn's whole prompt (the history is resent; hf, serve-model "
        "and llama.cpp reuse the keys and values of a prefix they computed before). "
        "Made by `benchmarks/real_model.py throughput`.",
        "",
        "| path | concurrency | episodes | wall s | prompt tok/s | generated tok/s | episodes/min | s per reply "
        "| s to first reply | s to first token |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        ttft = "—" if row.get("first_token_s") is None else f"{row['first_token_s']:.2f}"
        lines.append(
            f"| {row['path']} | {row['concurrency']} | {row['episodes']} | {row['wall_s']:.0f} | "
            f"{row['prompt_tokens_per_s']:,.0f} | {row['generated_tokens_per_s']:,.1f} | "
            f"{row['episodes_per_min']:.1f} | {row['reply_s']:.2f} | {row['first_reply_s']:.2f} | {ttft} |"
        )
    lines += [
        "",
        "s to first token: the episodes' first prompts sent again as streamed requests, as many at once as the "
        "concurrency, after the run; the median seconds until a reply's first text arrives (servers only).",
    ]
    return "\n".join(lines) + "\n"


# ---- forward passes ----------------------------------------------------------------------------


def passes(args: argparse.Namespace) -> None:
    import torch

    from agentgym.llm.generation import Generator

    torch.set_num_threads(args.threads)
    folder = resolve_model("smollm2").folder
    rows = []
    for name, dtype, quantize in (("float32", None, None), ("bfloat16", "bfloat16", None), ("int8", None, "int8")):
        model = Generator.from_pretrained(folder, "cpu", dtype, quantize).model
        for batch in args.batch:
            ids = torch.randint(100, 40_000, (batch, args.prompt_tokens), generator=torch.Generator().manual_seed(0))
            with torch.inference_mode():
                start = time.perf_counter()
                cache = model(input_ids=ids, use_cache=True, logits_to_keep=1).past_key_values
                prefill = time.perf_counter() - start
                start = time.perf_counter()
                for _ in range(args.steps):
                    cache = model(input_ids=ids[:, :1], past_key_values=cache, use_cache=True, logits_to_keep=1)
                    cache = cache.past_key_values
                step = (time.perf_counter() - start) / args.steps
            rows.append({"weights": name, "batch": batch, "prefill_s": prefill, "decode_step_s": step})
            print(rows[-1], flush=True)
    report = {"prompt_tokens": args.prompt_tokens, "threads": args.threads, "steps": args.steps, "rows": rows}
    (RESULTS / "real_model_passes.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# SmolLM2-135M-Instruct: forward passes on this CPU",
        "",
        f"A batch of {args.prompt_tokens}-token prompts run at once (prefill), then one token per row with the cache "
        f"(a decode step, the mean of {args.steps}), {args.threads} torch thread(s). Made by "
        "`benchmarks/real_model.py passes`.",
        "",
        "| weights | batch | prefill s | prompt tok/s | decode step ms | generated tok/s |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        tokens = row["batch"] * args.prompt_tokens
        lines.append(
            f"| {row['weights']} | {row['batch']} | {row['prefill_s']:.2f} | {tokens / row['prefill_s']:,.0f} | "
            f"{row['decode_step_s'] * 1000:.0f} | {row['batch'] / row['decode_step_s']:,.0f} |"
        )
    (RESULTS / "real_model_passes.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


# ---- recorded replies (the tests' regression set) ------------------------------------------------


def fixtures(args: argparse.Namespace) -> None:
    """Write the replies of eval folders' episodes, with the env's reading of each, as the tests' regression set
    (``tests/data/smollm2_replies.jsonl``: one line per episode, replayed by ``tests/test_real_model.py``)."""
    target = ROOT / "tests" / "data" / "smollm2_replies.jsonl"
    lines = []
    taken: Counter[str] = Counter()
    for folder in args.folders:
        for record in sorted(read_episodes(Path(folder) / "episodes.jsonl").values(), key=lambda r: r.key):
            if record.status != "ok" or (args.env and record.env_id not in args.env):
                continue
            if args.per_env and taken[record.env_id] >= args.per_env:
                continue
            taken[record.env_id] += 1
            readings = [
                {"action": turn.action, "invalid_action": turn.invalid_action, "reward": turn.reward}
                for turn in record.turns
            ]
            lines.append(
                {
                    "env_id": record.env_id,
                    "kwargs": record.env_kwargs,
                    "task_id": record.task_id,
                    "seed": record.seed,
                    "replies": replies(record),
                    "finish_reasons": [turn.finish_reason for turn in record.turns],
                    "readings": readings,
                }
            )
    if args.append and target.exists():
        # The set's other envs stay as they were recorded.
        kept = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
        lines += [line for line in kept if line["env_id"] not in taken]
    lines.sort(key=lambda line: (line["env_id"], line["task_id"]))
    target.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines), encoding="utf-8")
    print(f"{len(lines)} episodes -> {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    board = commands.add_parser("leaderboard")
    board.add_argument("suite")
    board.add_argument("--concurrency", type=int, default=32)
    board.add_argument("--report-only", action="store_true", help="report the --out folders as they are")
    board.add_argument(
        "--keep-recorded",
        action="store_true",
        help="keep the recorded leaderboard's columns of policies not played here (same suite and settings)",
    )
    board.add_argument(
        "--results",
        default="real_model_leaderboard",
        help="the results' name: benchmarks/results/NAME.{json,md} (a protocol suite's table beside the quick one)",
    )
    board.set_defaults(run=leaderboard)
    speed = commands.add_parser("throughput")
    speed.add_argument("--env", action="append", default=None)
    speed.add_argument("--episodes", type=int, default=8)
    speed.add_argument("--max-turns", type=int, default=4)
    speed.add_argument("--concurrency", type=lambda text: [int(x) for x in text.split(",")], default=[1, 8, 32])
    speed.set_defaults(run=throughput)
    forward = commands.add_parser("passes")
    forward.add_argument("--batch", type=lambda text: [int(x) for x in text.split(",")], default=[1, 8, 32])
    forward.add_argument("--prompt-tokens", type=int, default=320)
    forward.add_argument("--steps", type=int, default=16)
    forward.add_argument("--threads", type=int, default=2)
    forward.set_defaults(run=passes)
    record = commands.add_parser("fixtures")
    record.add_argument("folders", nargs="+")
    record.add_argument("--env", action="append", help="only these env ids (repeatable)")
    record.add_argument("--per-env", type=int, help="at most this many episodes of an env")
    record.add_argument("--append", action="store_true", help="keep the set's episodes of the other envs")
    record.set_defaults(run=fixtures)
    for command in (board, speed):
        command.add_argument("--out", required=True)
        command.add_argument("--paths", type=lambda text: text.split(","), default=DEFAULT_PATHS)
        command.add_argument("--max-tokens", type=int, default=128)
        command.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.command == "throughput" and not args.env:
        args.env = ["Wordle-v0", "TicTacToe-vs-Random-v0", "FrozenLake-v0", "Sokoban-v0"]
    args.run(args)


if __name__ == "__main__":
    main()
