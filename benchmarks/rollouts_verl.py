"""Rollout throughput through verl's agent-loop worker against agentgym's own paths (CPU, one run).

verl 0.9.1 lives in a side venv (``agentgym.integrations.venvs``): run from the main
environment, this script makes that venv if needed and runs itself there. verl's path is
its own ``AgentLoopWorker.generate_sequences`` on a ``DataProto`` batch (rows read by its
``RLHFDataset``), running :class:`~agentgym.integrations.verl.AgentGymAgentLoop` for every
row concurrently, as verl's rollout does; only the LLM server is ours. Two workloads on
the same env and tasks:

* **scripted** (no model): the same random ``Action:`` replies, returned as sampled ids by a
  scripted server manager, against the plain ``gym.make`` env: what the agent loop and
  verl's worker (padding, batching into tensors) cost per step;
* **tiny model** (greedy, same ``Generator``): agentgym's trainer rollout (``play_episodes``,
  one batch per turn) against verl's worker over
  :class:`~agentgym.integrations.verl.GeneratorServerManager` (concurrent requests decoded
  as one batch), standing in for verl's vLLM servers. The token sequences are compared.

Usage::

    python benchmarks/rollouts_verl.py            # writes results/rollouts_verl.{md,json}
    python benchmarks/rollouts_verl.py --no-write --episodes 4
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
try:
    import verl  # noqa: F401
except ImportError:  # not in verl's venv: make it and run there
    from rollout_paths import rerun_in_side_venv

    rerun_in_side_venv("verl", __file__)

from recording import record  # noqa: E402
from rollout_paths import arguments, paths_table, plain_episodes, scripted_replies, tiny_generator, trainer_rollout  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from agentgym.integrations import verl as adapter  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from verl_cases import batch_of, verl_config  # noqa: E402


class ScriptedServerManager:
    """Returns each episode's next scripted reply as sampled ids (the episode known by its first prompt ids)."""

    def __init__(self, tokenizer: Any, replies: dict[int, list[str]], first_prompts: dict[tuple[int, ...], int]):
        self.eos = tokenizer.eos_token_id
        self.replies = {
            task: [tokenizer(t, add_special_tokens=False).input_ids for t in ts] for task, ts in replies.items()
        }
        self.first_prompts = first_prompts
        self.turns: dict[str, list[Any]] = defaultdict(list)

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **_: Any):
        turns = self.turns[request_id]
        if not turns:
            turns.append(self.first_prompts[tuple(prompt_ids)])
        ids = self.replies[turns[0]][len(turns) - 1] + [self.eos]
        turns.append(ids)
        return TokenOutput(token_ids=ids, log_probs=[0.0] * len(ids))


def first_prompts(env_id: str, task_ids: list[int], tokenizer: Any) -> dict[tuple[int, ...], int]:
    """The agent loop's first prompt ids of each task (rows are reset with seed = task id)."""
    from agentgym.train.rollout import ChatTokens, chat_env
    from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT

    tokens = ChatTokens(tokenizer, tokenizer.all_special_ids)
    prompts = {}
    for task_id in task_ids:
        env = chat_env(env_id, {}, DEFAULT_SYSTEM_PROMPT)
        messages, _ = env.reset(seed=task_id, options={"task_id": task_id})
        prompts[tuple(tokens.prompt(messages))] = task_id
        env.close()
    return prompts


def verl_episodes(config: Any, server: Any, batch: Any) -> tuple[float, Any]:
    """Seconds and output of verl's worker playing the batch's rows concurrently."""
    worker = AgentLoopWorker(config, llm_client=server)
    start = time.perf_counter()
    output = asyncio.run(worker.generate_sequences(batch))
    return time.perf_counter() - start, output


def sequences(output: Any) -> list[list[int]]:
    """Each row's prompt + response ids, padding removed."""
    ids, mask = output.batch["input_ids"], output.batch["attention_mask"].bool()
    return [ids[row][mask[row]].tolist() for row in range(ids.shape[0])]


def main() -> None:
    args = arguments(__doc__.split("\n\n")[0])

    replies = scripted_replies(args.env, list(range(args.scripted_episodes)), args.max_turns)
    task_ids = list(range(args.episodes))
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        generator = tiny_generator(folder / "tiny")
        tokenizer = generator.tokenizer
        config = verl_config(folder / "tiny", max_turns=args.max_turns, max_tokens_per_turn=args.max_new_tokens)
        config.actor_rollout_ref.rollout.temperature = 0.0  # greedy, as trainer_rollout samples
        scripted_batch = batch_of(config, adapter.dataset_rows(args.env, list(replies)), folder)
        scripted = ScriptedServerManager(tokenizer, replies, first_prompts(args.env, list(replies), tokenizer))
        plain_episodes(args.env, dict(list(replies.items())[:5]))  # warm up
        plain_s, plain_steps = plain_episodes(args.env, replies)
        scripted_s, output = verl_episodes(config, scripted, scripted_batch)
        scripted_steps = int(sum(output.non_tensor_batch["replies"]))
        assert scripted_steps == plain_steps, (scripted_steps, plain_steps)

        server = adapter.GeneratorServerManager(generator, max_batch_size=len(task_ids))
        model_batch = batch_of(config, adapter.dataset_rows(args.env, task_ids), folder)
        trainer_rollout(generator, args.env, task_ids[:2], 1, 4)  # warm up
        trainer_s, model_s = float("inf"), float("inf")
        for _ in range(args.repeat):  # alternated, best of each: the machine is shared
            seconds, trajectories = trainer_rollout(generator, args.env, task_ids, args.max_turns, args.max_new_tokens)
            trainer_s = min(trainer_s, seconds)
            seconds, output = verl_episodes(config, server, model_batch)
            model_s = min(model_s, seconds)
    same = [t.token_ids for t in trajectories] == sequences(output)
    trainer_turns = sum(t.turns for t in trajectories)
    model_turns = int(sum(output.non_tensor_batch["replies"]))

    rows = [
        ("scripted replies", "plain `gym.make` env", args.scripted_episodes, plain_steps, plain_s),
        (
            "scripted replies",
            "verl `AgentLoopWorker` + agentgym loop",
            args.scripted_episodes,
            scripted_steps,
            scripted_s,
        ),
        ("tiny model, greedy", "agentgym trainer rollout", args.episodes, trainer_turns, trainer_s),
        ("tiny model, greedy", "verl worker + GeneratorServerManager", args.episodes, model_turns, model_s),
    ]
    table = paths_table(
        rows,
        same,
        f"Overhead of the verl path on scripted steps (chat template, tokenization, verl's padding "
        f"and batching): {(scripted_s - plain_s) / scripted_steps * 1e6:.0f} µs per step.",
    )
    print(table)
    from importlib.metadata import version

    setup = (
        f"{args.env}, scripted: {args.scripted_episodes} episodes of up to {args.max_turns} random actions; "
        f"tiny model: {args.episodes} episodes, {args.max_turns} turns, {args.max_new_tokens} new tokens, "
        f"best of {args.repeat}, {args.torch_threads} torch thread(s); load average {args.load:.1f} at start; "
        f"verl {version('verl')}, transformers {version('transformers')} (side venv)"
    )
    data = {
        "env": args.env,
        "rows": [dict(zip(("workload", "path", "episodes", "steps", "seconds"), row)) for row in rows],
        "same_tokens": same,
        "verl": version("verl"),
    }
    if not args.no_write:
        record("rollouts_verl", "Rollouts through verl's agent-loop worker (CPU)", setup, table, data)


if __name__ == "__main__":
    main()
