"""Rollout throughput through OpenRLHF's multi-turn agent executor against agentgym's own paths (CPU, one run).

OpenRLHF 0.11.2 lives in its own venv (``agentgym.integrations.venvs``, entry ``openrlhf``): run from
the main environment, this script makes that venv if needed and runs itself there. Two
workloads on the same env and tasks, all episodes concurrent (``asyncio.gather`` of
``AgentGymExecutor().execute``, as OpenRLHF's rollout actor runs them):

* **scripted** (no model): the same random ``Action:`` replies, given to OpenRLHF's
  executor as sampled ids by a scripted engine, against the plain ``gym.make`` env: what the
  adapter costs per step (prompt rendering, chat-template deltas, tokenization by OpenRLHF);
* **tiny model** (greedy, same ``Generator``): agentgym's trainer rollout
  (``play_episodes``, one batch per turn) against OpenRLHF's executor over
  :class:`~agentgym.integrations.openrlhf.LocalEngine` (requests of one event-loop turn
  decoded as one batch), standing in for OpenRLHF's vLLM actor. The token sequences of the
  two paths are compared.

Usage::

    python benchmarks/rollouts_openrlhf.py            # writes results/rollouts_openrlhf.{md,json}
    python benchmarks/rollouts_openrlhf.py --no-write --episodes 4
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

try:
    import openrlhf  # noqa: F401
except ImportError:  # not in OpenRLHF's venv: make it and run there
    from rollout_paths import rerun_in_side_venv

    rerun_in_side_venv("openrlhf", __file__)

import json  # noqa: E402

from recording import record  # noqa: E402
from rollout_paths import arguments, paths_table, plain_episodes, scripted_replies, tiny_generator, trainer_rollout  # noqa: E402

from agentgym.integrations import openrlhf as adapter  # noqa: E402


class ScriptedEngine:
    """Returns each episode's next scripted reply as sampled ids (keyed by the episode's first prompt ids)."""

    def __init__(self, tokenizer: Any, replies: dict[int, list[str]]) -> None:
        self.tokenizer = tokenizer
        self.replies = {
            task: [tokenizer(t, add_special_tokens=False).input_ids for t in ts] for task, ts in replies.items()
        }

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        episode = adapter._EPISODE.get()
        task = episode.instance.chat.unwrapped.task_id
        ids = self.replies[task][episode.instance.turns] + [self.tokenizer.eos_token_id]
        output = SimpleNamespace(token_ids=ids, text="", finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[output])


async def _execute_all(engine: Any, labels: list[str], tokenizer: Any, params: Any) -> list[dict]:
    executor = adapter.AgentGymExecutor()
    return await asyncio.gather(*(executor.execute("x", label, params, 1 << 20, tokenizer, engine) for label in labels))


def openrlhf_episodes(engine: Any, env_id: str, task_ids: list[int], max_turns: int, tokenizer: Any, params: Any):
    """Seconds and responses of OpenRLHF's executor playing the tasks concurrently."""
    labels = [json.dumps({"env_id": env_id, "task_id": t, "max_turns": max_turns}) for t in task_ids]
    start = time.perf_counter()
    responses = asyncio.run(_execute_all(engine, labels, tokenizer, params))
    return time.perf_counter() - start, responses


def main() -> None:
    args = arguments(__doc__.split("\n\n")[0])

    replies = scripted_replies(args.env, list(range(args.scripted_episodes)), args.max_turns)
    task_ids = list(range(args.episodes))
    with tempfile.TemporaryDirectory() as folder:
        generator = tiny_generator(Path(folder) / "tiny")
        tokenizer = generator.tokenizer
        scripted = ScriptedEngine(tokenizer, replies)
        params = adapter.EngineParams(temperature=0.0)
        warm = dict(list(replies.items())[:5])
        plain_episodes(args.env, warm)
        openrlhf_episodes(scripted, args.env, list(warm), args.max_turns, tokenizer, params)
        plain_s, plain_steps = plain_episodes(args.env, replies)
        scripted_s, responses = openrlhf_episodes(scripted, args.env, list(replies), args.max_turns, tokenizer, params)
        scripted_steps = sum(len(r["action_ranges"]) for r in responses)
        assert scripted_steps == plain_steps, (scripted_steps, plain_steps)

        engine = adapter.LocalEngine(generator, max_new_tokens=args.max_new_tokens)
        trainer_rollout(generator, args.env, task_ids[:2], 1, 4)  # warm up
        trainer_s, model_s = float("inf"), float("inf")
        for _ in range(args.repeat):  # alternated, best of each: the machine is shared
            seconds, trajectories = trainer_rollout(generator, args.env, task_ids, args.max_turns, args.max_new_tokens)
            trainer_s = min(trainer_s, seconds)
            seconds, responses = openrlhf_episodes(engine, args.env, task_ids, args.max_turns, tokenizer, params)
            model_s = min(model_s, seconds)
    same = [t.token_ids for t in trajectories] == [r["observation_tokens"] for r in responses]
    trainer_turns = sum(t.turns for t in trajectories)
    model_turns = sum(len(r["action_ranges"]) for r in responses)

    rows = [
        ("scripted replies", "plain `gym.make` env", args.scripted_episodes, plain_steps, plain_s),
        ("scripted replies", "OpenRLHF `MultiTurnAgentExecutor`", args.scripted_episodes, scripted_steps, scripted_s),
        ("tiny model, greedy", "agentgym trainer rollout", args.episodes, trainer_turns, trainer_s),
        ("tiny model, greedy", "OpenRLHF executor + LocalEngine", args.episodes, model_turns, model_s),
    ]
    table = paths_table(
        rows,
        same,
        f"Overhead of the OpenRLHF path on scripted steps (chat template, tokenization): "
        f"{(scripted_s - plain_s) / scripted_steps * 1e6:.0f} µs per step.",
    )
    print(table)
    from importlib.metadata import version

    setup = (
        f"{args.env}, scripted: {args.scripted_episodes} episodes of up to {args.max_turns} random actions; "
        f"tiny model: {args.episodes} episodes, {args.max_turns} turns, {args.max_new_tokens} new tokens, "
        f"best of {args.repeat}, {args.torch_threads} torch thread(s); load average {args.load:.1f} at start; "
        f"openrlhf {version('openrlhf')} (--no-deps venv)"
    )
    data = {
        "env": args.env,
        "rows": [dict(zip(("workload", "path", "episodes", "steps", "seconds"), row)) for row in rows],
        "same_tokens": same,
    }
    if not args.no_write:
        record(
            "rollouts_openrlhf",
            "Rollouts through OpenRLHF's agent executor vs agentgym's own paths",
            setup,
            table,
            data,
        )


if __name__ == "__main__":
    main()
