"""The flags of ``agentgym eval``: what to play, with which policies, where the envs run, and how the model sees
and acts (the command's handler is in :mod:`agentgym.cli`)."""

from __future__ import annotations

import argparse

from agentgym.evaluation.preparation import DEFAULT_PREPARE_CONCURRENCY


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``agentgym eval``'s flags to ``parser``."""
    parser.add_argument("--env", action="append", help="env id (repeatable)")
    parser.add_argument("--suite", help="suite name (quick, full) or path to a suite .yaml")
    parser.add_argument(
        "--policy",
        action="append",
        help="oracle (default), random, obedient (envs under prompt injection), openai:MODEL[@URL[,URL...]] "
        "(several URLs: load-balanced) or hf:PATH (a model folder, a .gguf file, or a packaged model such as "
        "hf:smollm2); repeatable",
    )
    parser.add_argument("--split", default="test", choices=("train", "dev", "test"), help="with --env")
    parser.add_argument("--episodes", type=int, default=10, help="episodes per env (with --env)")
    parser.add_argument("--max-turns", type=int, help="turn limit (default: each env's own)")
    parser.add_argument("--concurrency", type=int, default=64, help="episodes in flight")
    parser.add_argument(
        "--family-concurrency",
        action="append",
        metavar="FAMILY=N",
        help="at most N episodes of a family (or ENV_ID=N: of an id) in flight, over the family's own limit "
        "(`agentgym info ID` shows it); repeatable",
    )
    parser.add_argument(
        "--infra-retries",
        type=int,
        default=2,
        help="replays of an episode whose env's infrastructure failed (a site that did not answer, a crashed env)",
    )
    parser.add_argument(
        "--prepare-concurrency",
        type=int,
        default=DEFAULT_PREPARE_CONCURRENCY,
        metavar="N",
        help="envs prepared at once, in the background, while the episodes of ready envs play "
        f"(default {DEFAULT_PREPARE_CONCURRENCY})",
    )
    parser.add_argument(
        "--policies-at-once",
        type=int,
        default=1,
        metavar="N",
        help="play the episodes of N of the --policy policies at the same time (each with --concurrency), sharing "
        "the envs' preparation and the families' limits (default 1: one policy after another)",
    )
    parser.add_argument(
        "--no-prepare", action="store_true", help="skip the envs' preparation for the tasks the run plays"
    )
    parser.add_argument(
        "--out",
        help="results folder of the one policy; with several, their parent (default: results/<suite or envs>/<policy>)",
    )
    parser.add_argument("--seed", type=int, default=0, help="run seed; episode seeds derive from it")
    parser.add_argument("--retry-errors", action="store_true", help="play errored episodes again")
    parser.add_argument("--history-window", type=int, help="keep only the last K turns in the prompt")
    parser.add_argument(
        "--action-format",
        default="text",
        choices=("text", "tools", "pyautogui", "qwen-computer", "qwen-mobile", "ui-tars", "anthropic", "openai"),
        help="how the model acts: text replies ('Action: ...'), native tool calls (docs/tool-calls.md), or a "
        "computer-use format on envs with pixel actions (docs/computer-use.md)",
    )
    parser.add_argument(
        "--observation",
        default="text",
        choices=("text", "screenshot", "both"),
        help="what a VLM sees of screen envs: text only, the screenshot (and the text without the page's element "
        "list), or both (see docs/vlm.md)",
    )
    parser.add_argument(
        "--max-pixels",
        type=int,
        default=1024 * 768,
        help="image budget: larger screenshots are scaled down to this many pixels, aspect kept (0: no limit)",
    )
    parser.add_argument("--keep-images", type=int, help="send only the last K screenshots of an episode")
    parser.add_argument("--system-prompt-file", help="file with the system prompt")
    parser.add_argument("--env-timeout", type=float, default=120.0, help="seconds an env call may take")
    parser.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help="run the envs as Ray actors across a cluster: its address (default: the one this machine joined "
        "with `ray start`; 'local': a new one-machine instance)",
    )
    parser.add_argument(
        "--backend",
        choices=("local", "process", "docker"),
        help="where every env runs (default: as the suite says, else local); docker: a container of its family's "
        "image per env",
    )
    parser.add_argument("--temperature", type=float, help="sampling temperature (LLM policies)")
    parser.add_argument("--top-p", type=float, help="nucleus sampling (LLM policies)")
    parser.add_argument("--max-tokens", type=int, help="reply length limit (LLM policies)")
    parser.add_argument("--quantize", choices=("int8",), help="int8 weights for an hf: model on CPU (faster)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="env variable holding the API key")
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds an openai: policy waits for a reply (default 300); a server that answers one request at a "
        "time, such as llama.cpp's, keeps the others waiting in line",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
