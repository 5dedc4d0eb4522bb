"""The ``agentgym`` command line: list, info, play, eval, prepare, arena, leaderboard, serve, serve-model, train,
new-family."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import gymnasium as gym

from agentgym.contract.core import observation_text
from agentgym.contract.registry import UnknownEnvError, env_info, list_commands, list_envs, parse_limits
from agentgym.evaluation.arguments import add_eval_arguments
from agentgym.evaluation.table import format_table
from agentgym.serving.auth import (
    add_key_arguments,
    add_request_quota_arguments,
    keys_from_args,
    request_quotas_from_args,
)
from agentgym.serving.server import SERVE_HELP, serve_from_args
from agentgym.serving.server import add_arguments as add_serve_arguments
from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT


def _list(args: argparse.Namespace) -> int:
    if args.games:
        from agentgym.multiagent import list_games, make_game

        rows = []
        for game_id in list_games():
            game = make_game(game_id)
            rows.append((game_id, len(game.possible_agents), ", ".join(sorted(game.players)), game.strong_player))
        print(format_table(("game", "players", "scripted players", "strongest"), rows))
        return 0
    envs = list_envs(args.family)
    if args.json:
        print(json.dumps([info.to_dict() for info in envs], indent=2))
        return 0
    rows = [
        (
            info.id,
            info.family,
            info.observation,
            info.max_episode_steps,
            info.splits.train,
            info.splits.dev,
            info.splits.test,
            info.description,
        )
        for info in envs
    ]
    headers = ("id", "family", "obs", "max steps", "train", "dev", "test", "description")
    print(format_table(headers, rows))
    return 0


def _info(args: argparse.Namespace) -> int:
    info = env_info(args.env_id)
    env = gym.make(info.id)
    try:
        observation, _ = env.reset(options={"task_id": info.splits.ids("test")[0]})
        details = info.to_dict() | {
            "action_space": repr(env.action_space),
            "observation_space": repr(env.observation_space),
        }
    finally:
        env.close()
    from agentgym.evaluation.metrics import env_metrics

    metrics = env_metrics(info.id)  # what success and score mean (docs/protocols.md#metrics)
    if metrics is not None:
        details["metrics"] = {key: getattr(metrics, key) for key in ("success", "score", "published", "replay")}
    if args.json:
        print(json.dumps(details, indent=2))
        return 0
    for key, value in details.items():
        print(f"{key}: {value}")
    print("\nFirst observation of the first test task:\n")
    print(observation_text(observation))
    return 0


def _play(args: argparse.Namespace) -> int:
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  (line editing and history for input())

    env = gym.make(env_info(args.env_id).id)
    options = {"task_id": args.task_id} if args.task_id is not None else {"split": args.split}
    observation, info = env.reset(seed=args.seed, options=options)
    print(f"Task {info['task_id']} ({info['split']}). Type a command; ':hint' asks the oracle, ':quit' stops.\n")
    print(observation_text(observation))
    try:
        while True:
            try:
                line = input("\n> ")
            except EOFError:
                print()
                return 0
            if line.strip() == ":quit":
                return 0
            if line.strip() == ":hint":
                print(f"oracle: {env.unwrapped.oracle_action()}")
                continue
            observation, reward, terminated, truncated, info = env.step(line)
            print(f"\n{observation_text(observation)}")
            print(
                f"\n[reward {reward:+.3f}  score {info['score']:.3f}  steps {info['steps']}"
                f"  terminated {terminated}  truncated {truncated}]"
            )
            if terminated or truncated:
                print("Success!" if info["success"] else "Episode over.")
                return 0
    finally:
        env.close()


def _eval(args: argparse.Namespace) -> int:
    from agentgym.evaluation.leaderboard import collect, format_terminal

    items, suite_name = _items(args)
    specs = args.policy or ["oracle"]
    if args.ray is not None and args.backend is not None:
        raise UsageError("give --backend or --ray, not both (--ray runs the envs on the ray backend)")
    if args.ray is not None:
        _connect_ray(args.ray)
    base = Path(args.out) if args.out else Path("results") / _slug(suite_name or "+".join(args.env))
    folders = []
    at_once = max(1, args.policies_at_once)
    for start in range(0, len(specs), at_once):
        group = specs[start : start + at_once]
        done = _eval_policies(args, group, items, suite_name, base if args.out and len(specs) == 1 else None, base)
        if done is None:
            return 130
        folders.extend(done)
    print()
    print(format_terminal(collect(folders)))
    return 0


def _items(args: argparse.Namespace) -> tuple[list, str | None]:
    """The eval items of ``--env``/``--suite`` (with ``--episodes``, ``--split``, ``--max-turns``); the suite name."""
    from agentgym.evaluation.runner import EvalItem
    from agentgym.evaluation.suites import load_suite

    if bool(args.env) == bool(args.suite):
        raise UsageError("give --env ID (repeatable) or --suite NAME, not both")
    if args.suite:
        suite = load_suite(args.suite)
        items = suite.items
        # A published protocol's suite: recorded in run.json; its history length unless --history-window is given.
        args.protocol = suite.protocol
        if getattr(args, "history_window", None) is None:
            args.history_window = suite.history_window
        if args.max_turns is not None:
            items = [dataclasses.replace(item, max_turns=args.max_turns) for item in items]
        return items, suite.name
    return [EvalItem(env_info(env_id).id, args.episodes, args.split, args.max_turns) for env_id in args.env], None


def _rescore(args: argparse.Namespace) -> int:
    from agentgym.evaluation.rescore import format_report, rescore

    folder = Path(args.run_dir)
    if not (folder / "run.json").is_file():
        raise UsageError(f"{folder} is not a results folder of `agentgym eval` (no run.json)")
    report = rescore(folder, live=args.live, envs=args.env)
    print(format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(dataclasses.asdict(report), indent=2, default=str) + "\n")
    return 0 if report.ok else 1


def _prepare(args: argparse.Namespace) -> int:
    from agentgym.evaluation.plan import plan, planned_tasks
    from agentgym.evaluation.preparation import prepare_items

    if args.suite_name and args.suite:
        raise UsageError("give the suite as SUITE or --suite, not both")
    args.suite = args.suite or args.suite_name
    args.episodes, args.split, args.max_turns = 1, "test", None
    items, _ = _items(args)
    tasks = planned_tasks(plan(items, seed=0)) if args.suite else None  # a suite: the tasks it plays; --env: all
    failed = prepare_items(items, args.backend, lambda line: print(line, flush=True), tasks)
    problems = {label: reason for label, reason in failed.items() if reason}
    failures = f"; failed: {', '.join(problems)}" if problems else ""
    print(f"{len(failed) - len(problems)} of {len(failed)} envs ready{failures}")
    return 1 if problems else 0


def _new_family(args: argparse.Namespace) -> int:
    from agentgym.scaffold import FamilyNames, scaffold_family

    try:
        folder = scaffold_family(args.name, Path(args.dir) if args.dir else None)
    except FileExistsError as error:
        raise UsageError(str(error)) from None
    family = FamilyNames.of(args.name).family
    print(f"wrote {folder}; next: pip install -e {folder} && agentgym list --family {family}")
    return 0


def _connect_ray(address: str) -> None:
    """Connect to the Ray cluster ``--ray`` names, or say why not."""
    try:
        from agentgym.serving.backends.ray import connect
    except ImportError as error:
        raise UsageError(str(error)) from None
    try:
        connect(address)
    except ConnectionError as error:
        raise UsageError(f"cannot connect to the Ray cluster at {address!r}: {error}") from None


def _eval_policies(
    args: argparse.Namespace, specs: list[str], items: list, suite_name: str | None, out: Path | None, base: Path
) -> list[Path] | None:
    """Evaluate ``specs`` at once (sharing the envs' preparation and the families' limits); their results
    folders, or ``None`` when interrupted. ``out`` is the folder of a lone policy."""
    import asyncio

    from tqdm import tqdm

    from agentgym.evaluation.preparation import Preparations
    from agentgym.evaluation.runner import Together, run_eval
    from agentgym.images import ImageOptions
    from agentgym.llm.policies import make_policy, parse_spec

    policies = [make_policy(spec, **_policy_options(args, parse_spec(spec)[0])) for spec in specs]
    outs = [out or base / _slug(policy.name) for policy in policies]
    system_prompt = Path(args.system_prompt_file).read_text() if args.system_prompt_file else DEFAULT_SYSTEM_PROMPT
    backend = "ray" if args.ray is not None else args.backend
    bars: dict[int, tqdm] = {}

    def on_plan(index: int) -> Callable[[int, int], None]:
        def show(total: int, done: int) -> None:
            bars[index] = tqdm(
                desc=policies[index].name,
                total=total,
                initial=done,
                unit="episode",
                position=index,
                disable=args.no_progress,
            )

        return show

    def on_preparing(preparations: Preparations) -> None:
        """The first bar shows the preparations beside the episodes: how many ended, which run now, which failed."""
        running = f": {', '.join(preparations.running)}" if preparations.running else ""
        failed = f", {len(preparations.failed)} failed" if preparations.failed else ""
        if bars:
            bars[min(bars)].set_postfix_str(f"prepared {preparations.done}/{preparations.total}{failed}{running}")

    async def main() -> list:
        together = Together.start(
            items,
            seed=args.seed,
            backend=backend,
            prepare=not args.no_prepare,
            on_prepare=lambda line: tqdm.write(line, file=sys.stderr),
            prepare_concurrency=args.prepare_concurrency,
            on_preparing=on_preparing,
        )
        runs = [
            run_eval(
                spec,
                policy,
                items,
                folder,
                seed=args.seed,
                concurrency=args.concurrency,
                system_prompt=system_prompt,
                history_window=args.history_window,
                env_timeout_s=args.env_timeout,
                retry_errors=args.retry_errors,
                backend=backend,
                suite=suite_name,
                action_format=args.action_format,
                images=ImageOptions(args.observation, args.max_pixels or None, args.keep_images),
                on_plan=on_plan(index),
                on_episode=lambda record, index=index: bars[index].update(1),
                infra_retries=args.infra_retries,
                family_concurrency=parse_limits(args.family_concurrency),
                protocol=getattr(args, "protocol", None),
                together=together,
            )
            for index, (spec, policy, folder) in enumerate(zip(specs, policies, outs))
        ]
        try:
            return await asyncio.gather(*runs)
        finally:
            await together.aclose()
            for policy in policies:
                await policy.aclose()

    try:
        all_stats = asyncio.run(main())
    except KeyboardInterrupt:
        where = ", ".join(map(str, outs))
        print(f"\nInterrupted. Finished episodes are in {where}; run the same command again to resume.")
        return None
    finally:
        for bar in bars.values():
            bar.close()
    for folder, stats in zip(outs, all_stats):
        print(
            f"{folder}: played {stats.played} episodes ({stats.errored} errored), {stats.steps} steps "
            f"in {stats.wall_s:.1f} s; {stats.skipped} were already done."
        )
    return outs


def _arena(args: argparse.Namespace) -> int:
    import asyncio

    from tqdm import tqdm

    from agentgym.evaluation.arena import format_ratings, ratings, run_arena

    specs = args.policy or []
    out = Path(args.out) if args.out else Path("results") / "arena" / _slug(args.game)
    system_prompt = Path(args.system_prompt_file).read_text() if args.system_prompt_file else DEFAULT_SYSTEM_PROMPT
    options = {
        key: value for key, value in (("temperature", args.temperature), ("top_p", args.top_p)) if value is not None
    }
    bars: list[tqdm] = []

    def on_plan(total: int, done: int) -> None:
        bars.append(tqdm(desc=args.game, total=total, initial=done, unit="game", disable=args.no_progress))

    try:
        played = asyncio.run(
            run_arena(
                args.game,
                specs,
                out,
                games_per_pair=args.games,
                concurrency=args.concurrency,
                seed=args.seed,
                system_prompt=system_prompt,
                retry_errors=args.retry_errors,
                policy_options=options,
                on_plan=on_plan,
                on_match=lambda record: bars[0].update(1),
            )
        )
    except KeyboardInterrupt:
        print(f"\nInterrupted. Finished games are in {out}; run the same command again to resume.")
        return 130
    finally:
        for bar in bars:
            bar.close()
    print(f"{out}: played {played} games.")
    print(format_ratings(args.game, ratings(out)))
    return 0


def _leaderboard(args: argparse.Namespace) -> int:
    from agentgym.evaluation.leaderboard import (
        LeaderboardError,
        collect,
        format_markdown,
        format_terminal,
        load_prices,
        parse_price,
        write_html,
    )

    try:
        prices = load_prices(args.prices) if args.prices else {}
        prices.update(parse_price(text) for text in args.price or [])
        options = {"prices": prices, "strict": args.strict}
        board = write_html(args.dirs, args.html, **options) if args.html else collect(args.dirs, **options)
    except LeaderboardError as error:
        print(f"agentgym: {error}", file=sys.stderr)
        return 2
    if args.markdown:
        Path(args.markdown).write_text(format_markdown(board), encoding="utf-8")
    print(format_terminal(board))
    return 0


def _serve_model(args: argparse.Namespace) -> int:
    from agentgym.llm.serve_model import serve

    serve(
        args.path,
        args.host,
        args.port,
        device=args.device,
        dtype=args.dtype,
        quantize=args.quantize,
        model_name=args.served_model_name,
        max_batch_size=args.max_batch_size,
        batch_wait_ms=args.batch_wait_ms,
        log_level=args.log_level,
        api_keys=keys_from_args(args),
        allow_unauthenticated=args.allow_unauthenticated,
        quotas=request_quotas_from_args(args),
        # Left out when not given: serve()'s defaults hold (0 turns the limit or the cache off).
        **({} if args.max_batch_tokens is None else {"max_batch_tokens": args.max_batch_tokens or None}),
        **({} if args.prefix_cache_tokens is None else {"prefix_cache_tokens": args.prefix_cache_tokens}),
        **({} if args.max_body_bytes is None else {"max_body_bytes": args.max_body_bytes}),
    )
    return 0


def _policy_options(args: argparse.Namespace, backend: str) -> dict[str, object]:
    """The sampling and connection flags that apply to an LLM backend."""
    if backend == "openai":
        options = {
            "temperature": args.temperature,
            "top_p": args.top_p,
            "max_tokens": args.max_tokens,
            "api_key_env": args.api_key_env,
            "concurrency": args.concurrency,
            "timeout_s": getattr(args, "request_timeout", None),
        }
    elif backend == "hf":
        options = {
            "temperature": args.temperature,
            "top_p": args.top_p,
            "max_new_tokens": args.max_tokens,
            "quantize": getattr(args, "quantize", None),
        }
    else:
        return {}
    return {key: value for key, value in options.items() if value is not None}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("_")[:120]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agentgym`` command."""
    parser = argparse.ArgumentParser(prog="agentgym", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    listing = commands.add_parser("list", help="table of the registered environments")
    listing.add_argument("--family", help="only this family")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.add_argument("--games", action="store_true", help="list the multi-agent games instead")
    listing.set_defaults(run=_list)

    info = commands.add_parser("info", help="metadata and first observation of one environment")
    info.add_argument("env_id")
    info.add_argument("--json", action="store_true", help="print JSON (no observation)")
    info.set_defaults(run=_info)

    play = commands.add_parser("play", help="play an environment in the terminal")
    play.add_argument("env_id")
    play.add_argument("--task-id", type=int, help="task to play (default: drawn from --split)")
    play.add_argument("--split", default="train", choices=("train", "dev", "test"))
    play.add_argument("--seed", type=int, help="seed for the task draw and the env's randomness")
    play.set_defaults(run=_play)

    evaluate = commands.add_parser("eval", help="evaluate a policy on envs or a suite; resumable")
    add_eval_arguments(evaluate)
    evaluate.set_defaults(run=_eval)

    prepare = commands.add_parser(
        "prepare",
        help="do the envs' preparation (site installs, index builds, screenshots) now, not in an eval: a suite's "
        "for the tasks it plays, an --env's for every task",
    )
    prepare.add_argument("suite_name", nargs="?", metavar="SUITE", help="suite name (quick, full) or .yaml path")
    prepare.add_argument("--suite", help=argparse.SUPPRESS)
    prepare.add_argument("--env", action="append", help="env id (repeatable), instead of a suite")
    prepare.add_argument("--backend", choices=("local", "process", "docker"), help="as `agentgym eval --backend`")
    prepare.set_defaults(run=_prepare)

    new_family = commands.add_parser(
        "new-family", help="write a ready plugin package for a new env family (installs with pip; see docs/plugins.md)"
    )
    new_family.add_argument("name", help="the family's name, e.g. 'guess' or 'my-puzzle'")
    new_family.add_argument("--dir", help="where to write the package folder (default: ./agentgym-NAME)")
    new_family.set_defaults(run=_new_family)

    arena = commands.add_parser("arena", help="round-robin matches between policies in a game, with ratings")
    arena.add_argument("game", help="game id, e.g. TicTacToe-v0 (see `agentgym list --games`)")
    arena.add_argument(
        "--policy", action="append", help="a game player (random, minimax, ...), oracle, openai:MODEL[@URL] or hf:PATH"
    )
    arena.add_argument("--games", type=int, default=20, help="games per pair of policies (seats swapped)")
    arena.add_argument("--concurrency", type=int, default=64, help="games in flight")
    arena.add_argument("--out", help="results folder (default: results/arena/<game>)")
    arena.add_argument("--seed", type=int, default=0, help="seeds the games' chance events")
    arena.add_argument("--retry-errors", action="store_true", help="replay games a policy failed")
    arena.add_argument("--system-prompt-file", help="file with the system prompt for LLM policies")
    arena.add_argument("--temperature", type=float, help="sampling temperature (LLM policies)")
    arena.add_argument("--top-p", type=float, help="nucleus sampling (LLM policies)")
    arena.add_argument("--no-progress", action="store_true", help="no progress bar")
    arena.set_defaults(run=_arena)

    board = commands.add_parser("leaderboard", help="rank policies from results folders (terminal, Markdown, HTML)")
    board.add_argument(
        "dirs", nargs="+", metavar="DIR", help="folders holding runs at any depth (eval, arena and training runs)"
    )
    board.add_argument("--markdown", metavar="FILE", help="also write the tables as GitHub Markdown")
    board.add_argument(
        "--html", metavar="FILE", help="also write a static HTML page (trajectories in FILE's stem + _files/)"
    )
    board.add_argument(
        "--price", action="append", metavar="POLICY=IN,OUT", help="dollars per million input,output tokens (repeatable)"
    )
    board.add_argument("--prices", metavar="FILE", help="YAML/JSON prices: {POLICY: {input: X, output: Y}}")
    board.add_argument(
        "--strict", action="store_true", help="refuse runs whose env fingerprints differ (default: mark and leave out)"
    )
    board.set_defaults(run=_leaderboard)

    rescore = commands.add_parser(
        "rescore", help="replay a saved run's episodes through their envs; report which recorded scores reproduce"
    )
    rescore.add_argument("run_dir", metavar="RUN_DIR", help="an eval run's results folder (run.json, episodes.jsonl)")
    rescore.add_argument("--env", action="append", help="only this env label or id (repeatable)")
    rescore.add_argument(
        "--live", action="store_true", help="also replay live families (sites, desktops), reported apart"
    )
    rescore.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    rescore.set_defaults(run=_rescore)

    serve = commands.add_parser("serve", help=SERVE_HELP)
    add_serve_arguments(serve)
    serve.set_defaults(run=serve_from_args)

    for command in list_commands():  # provided by families; `main` hands them their arguments
        commands.add_parser(command.name, help=command.help, add_help=False)
    # `main` hands `train`'s arguments to agentgym.train.cli (imported only then: it needs torch).
    commands.add_parser("train", help="train a policy (SFT, GRPO, PPO, GiGPO); `train data`: SFT data", add_help=False)
    # `main` hands `fingerprint`'s arguments to agentgym.evaluation.fingerprint.
    commands.add_parser(
        "fingerprint", help="task-set fingerprints of env ids: compute, --check or --write", add_help=False
    )
    # `main` hands `mcp`'s arguments to agentgym.integrations.mcp (imported only then: it needs the mcp SDK).
    commands.add_parser("mcp", help="serve an env to MCP clients (stdio or streamable HTTP)", add_help=False)

    serve_model = commands.add_parser(
        "serve-model", help="serve a local Hugging Face model with an OpenAI-compatible API"
    )
    serve_model.add_argument(
        "path", help="folder of a model saved with save_pretrained, a .gguf file, or a packaged model (smollm2)"
    )
    serve_model.add_argument("--host", default="127.0.0.1")
    serve_model.add_argument("--port", type=int, default=8000)
    serve_model.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto")
    serve_model.add_argument(
        "--dtype", help="float32, bfloat16, float16 or auto (default: float32 on CPU, bfloat16 on CUDA)"
    )
    serve_model.add_argument(
        "--served-model-name", help="model name clients send (default: the folder's or model's name)"
    )
    serve_model.add_argument("--max-batch-size", type=int, default=32, help="requests decoded together")
    serve_model.add_argument("--batch-wait-ms", type=float, default=5.0, help="wait for more requests to batch")
    serve_model.add_argument(
        "--max-batch-tokens",
        type=int,
        help="most prompt tokens (rows x longest prompt) in one forward pass; a bigger batch runs in parts "
        "(default 32768; 0: no limit)",
    )
    serve_model.add_argument(
        "--prefix-cache-tokens",
        type=int,
        help="keys and values of this many recent tokens kept to reuse for prompts that start alike "
        "(default 32768; 0: off)",
    )
    serve_model.add_argument(
        "--quantize", choices=("int8",), help="int8 weights on CPU: 2-3x faster, replies may differ (see docs)"
    )
    serve_model.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    serve_model.add_argument(
        "--max-body-bytes",
        type=int,
        metavar="BYTES",
        help="largest request body; more gets HTTP 413 (default 64 MiB: chats may carry screenshots)",
    )
    add_key_arguments(serve_model)
    add_request_quota_arguments(serve_model)
    serve_model.set_defaults(run=_serve_model)

    return parser


class UsageError(ValueError):
    """A command line that asks for something impossible."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agentgym`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    family_commands = {command.name: command for command in list_commands()}
    if argv and argv[0] in family_commands:
        from gymnasium.envs.registration import load_env_creator

        return load_env_creator(family_commands[argv[0]].entry_point)(argv[1:])
    if argv and argv[0] == "train":
        from agentgym.train.cli import main as train

        return train(argv[1:])
    if argv and argv[0] == "fingerprint":
        from agentgym.evaluation.fingerprint import main as fingerprint

        return fingerprint(argv[1:])
    if argv and argv[0] == "mcp":
        from agentgym.integrations.mcp import main as mcp

        return mcp(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except UnknownEnvError as error:
        print(f"agentgym: {error.args[0]}", file=sys.stderr)
        return 2
    except ValueError as error:  # bad flags, suites, policy specs, a --out holding another run
        print(f"agentgym: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
