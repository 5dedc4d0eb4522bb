"""Expert data for supervised fine-tuning: eval results -> filtered chats -> the rollout's tokens.

Any results folder that ``agentgym eval`` wrote is a source: the oracle's, or any policy's. Its
episodes are filtered (finished without error; successful, or scoring at least ``min_score``: with
a sampling policy, rejection sampling), identical chats are kept once, and each is kept as the chat
the policy was given and gave (system prompt, observations, replies, and in tools mode the tools
offered). :func:`play_oracle` makes such a folder by playing an env's oracle through the eval runner.

Training data comes from ``train`` tasks: episodes of other splits are refused unless allowed, and
the trainer refuses examples of the split it evaluates on (never train on what you evaluate).

A data set is a folder (:func:`build_dataset`)::

    data.json       what it holds: examples, turns, sources, filter, and per env its splits, distinct
                    tasks and committed task-set fingerprint; a digest of its task list and of its examples
    examples.jsonl  one example per line: key, env, env_id, env_kwargs, split, task_id, success, score,
                    source, action_format, messages, tools
    trl.jsonl       TRL's conversational format for ``SFTTrainer``: {"messages": [...]} (and "tools")
    verl.parquet    verl's multi-turn SFT format (``MultiTurnSFTDataset``): a messages column (and tools)

:func:`example_trajectory` turns an example into what the RL rollout of the same episode would be
(:class:`~agentgym.train.rollout.Trajectory`): the chat template's prompt, the assistant's replies as
the ids a model samples (loss mask 1), the template's delta for each observation (loss mask 0), with
the system prompt the trainer's rollouts use. Screenshot episodes are not supported yet.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import gymnasium as gym

from agentgym.contract.tool_parsing import template_messages
from agentgym.evaluation.fingerprint import recorded_fingerprint
from agentgym.evaluation.plan import stable_seed
from agentgym.evaluation.records import EpisodeRecord
from agentgym.evaluation.results import iter_episodes, read_run
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.policies.scripted import OraclePolicy
from agentgym.train.rollout import ChatTokens, Trajectory
from agentgym.wrappers.chat import DEFAULT_SYSTEM_PROMPT, DEFAULT_TOOLS_SYSTEM_PROMPT, ActionFormat, Message

DATA_FILE = "data.json"
EXAMPLES_FILE = "examples.jsonl"
TRL_FILE = "trl.jsonl"
VERL_FILE = "verl.parquet"
#: The splits training data may come from unless the builder is told otherwise.
TRAIN_SPLITS = ("train",)


@dataclass
class Example:
    """One expert episode: its chat (system prompt first) and where it came from."""

    key: str  #: the episode's key in its results folder (``env/split/task_id/repeat``)
    env: str  #: the env label (id and kwargs)
    env_id: str
    env_kwargs: dict[str, Any]
    split: str | None
    task_id: int
    success: bool
    score: float
    source: str  #: the results folder it was read from
    action_format: str
    messages: list[Message]
    tools: list[dict[str, Any]] | None = None
    turns: int = field(init=False)

    def __post_init__(self) -> None:
        self.turns = sum(message["role"] == "assistant" for message in self.messages)


def play_oracle(
    items: Sequence[EvalItem],
    out: Path | str,
    *,
    seed: int = 0,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    action_format: ActionFormat = "text",
    concurrency: int = 32,
) -> Path:
    """Play the oracle on ``items`` into the results folder ``out`` (resumed if it holds part of the run)."""
    asyncio.run(
        run_eval(
            "oracle",
            OraclePolicy(),
            list(items),
            out,
            seed=seed,
            concurrency=concurrency,
            system_prompt=system_prompt,
            action_format=action_format,
        )
    )
    return Path(out)


def read_examples(
    folder: Path | str,
    *,
    success_only: bool = True,
    min_score: float | None = None,
    allow_splits: Sequence[str] = TRAIN_SPLITS,
) -> tuple[list[Example], int]:
    """The examples of a results folder that pass the filter, and the number of episodes read.

    An episode passes when it finished without error, has a reply, and is successful (``success_only``)
    and scores at least ``min_score`` (when given). Raises ``ValueError`` for episodes of splits not in
    ``allow_splits`` and for screenshot episodes.
    """
    folder = Path(folder)
    action_format = read_run(folder).get("action_format", "text")
    records = list(iter_episodes(folder))
    outside = sorted({str(r.split) for r in records if r.split not in allow_splits})
    if outside:
        raise ValueError(
            f"{folder} holds episodes of the {', '.join(outside)} split(s): training data comes from "
            f"{', '.join(allow_splits)} tasks (never train on what you evaluate); allow a split explicitly to use it"
        )
    tools: dict[str, list[dict[str, Any]] | None] = {}
    examples = []
    for record in records:
        if not _passes(record, success_only, min_score):
            continue
        if record.screenshots or any(not isinstance(m.get("content"), str | None) for m in record.messages):
            raise ValueError(f"{record.key}: screenshot episodes are not supported as SFT data yet")
        if action_format == "tools" and record.env not in tools:
            tools[record.env] = env_tools(record.env_id, record.env_kwargs)
        examples.append(
            Example(
                record.key,
                record.env,
                record.env_id,
                record.env_kwargs,
                record.split,
                record.task_id,
                record.success,
                record.score,
                str(folder),
                action_format,
                record.messages,
                tools.get(record.env),
            )
        )
    return examples, len(records)


def _passes(record: EpisodeRecord, success_only: bool, min_score: float | None) -> bool:
    if record.status != "ok" or not record.turns or (success_only and not record.success):
        return False
    return min_score is None or record.score >= min_score


def env_tools(env_id: str, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    """The function tools an env offers in tools mode (what its episodes' prompts were rendered with)."""
    env = gym.make(env_id, **kwargs)
    try:
        return env.unwrapped.tools()
    finally:
        env.close()


def build_dataset(
    sources: Sequence[Path | str],
    out: Path | str,
    *,
    success_only: bool = True,
    min_score: float | None = None,
    allow_splits: Sequence[str] = TRAIN_SPLITS,
) -> dict[str, Any]:
    """Write the data set of the filtered episodes of ``sources`` (results folders) to ``out``; its ``data.json``.

    Chats that occur more than once (a deterministic policy's repeats) are kept once.
    """
    out = Path(out)
    examples: list[Example] = []
    seen: set[str] = set()
    described = []
    for source in sources:
        found, read = read_examples(source, success_only=success_only, min_score=min_score, allow_splits=allow_splits)
        kept = 0
        for example in found:
            digest = _digest(example.messages)
            if digest not in seen:
                seen.add(digest)
                examples.append(example)
                kept += 1
        policy = read_run(Path(source)).get("policy")
        described.append({"folder": str(source), "policy": policy, "episodes": read, "kept": kept})
    if not examples:
        raise ValueError(f"no episode of {', '.join(map(str, sources))} passes the filter: nothing to train on")
    if len({e.action_format for e in examples}) > 1:
        raise ValueError("the sources played different action formats (text and tools): build one data set for each")
    out.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(asdict(e), ensure_ascii=False) + "\n" for e in examples]
    (out / EXAMPLES_FILE).write_text("".join(lines), encoding="utf-8")
    write_trl(examples, out / TRL_FILE)
    write_verl(examples, out / VERL_FILE)
    manifest = describe(examples, described, {"success_only": success_only, "min_score": min_score})
    manifest["digest"] = hashlib.sha256("".join(lines).encode()).hexdigest()
    (out / DATA_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def describe(examples: list[Example], sources: list[dict[str, Any]], selection: dict[str, Any]) -> dict[str, Any]:
    """``data.json`` less the examples' digest: sizes, sources, filter, tasks per env and their fingerprints."""
    envs: dict[str, dict[str, Any]] = {}
    for example in examples:
        entry = envs.setdefault(
            example.env,
            {"env_id": example.env_id, "kwargs": example.env_kwargs, "examples": 0, "tasks": {}},
        )
        entry["examples"] += 1
        entry["tasks"].setdefault(str(example.split), set()).add(example.task_id)
    for entry in envs.values():
        entry["tasks"] = {split: len(ids) for split, ids in sorted(entry["tasks"].items())}
        entry["task_set_fingerprint"] = recorded_fingerprint(entry["env_id"])
    tasks = sorted({f"{e.env}/{e.split}/{e.task_id}" for e in examples})
    splits = {str(e.split) for e in examples}
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "examples": len(examples),
        "turns": sum(e.turns for e in examples),
        "action_format": examples[0].action_format,
        "splits": {split: sum(str(e.split) == split for e in examples) for split in sorted(splits)},
        "sources": sources,
        "filter": selection,
        "envs": envs,
        "tasks_digest": hashlib.sha256("\n".join(tasks).encode()).hexdigest(),
    }


def _digest(messages: list[Message]) -> str:
    """A chat's identity, tool-call ids left out (each episode makes up its own)."""
    plain = []
    for message in messages:
        message = {key: value for key, value in message.items() if key != "tool_call_id"}
        if message.get("tool_calls"):
            message["tool_calls"] = [{k: v for k, v in call.items() if k != "id"} for call in message["tool_calls"]]
        plain.append(message)
    return hashlib.sha256(json.dumps(plain, sort_keys=True).encode()).hexdigest()


def write_trl(examples: Iterable[Example], path: Path) -> None:
    """TRL's conversational format, one ``{"messages": [...]}`` per line (with ``"tools"`` in tools mode)."""
    with path.open("w", encoding="utf-8") as file:
        for example in examples:
            row: dict[str, Any] = {"messages": template_messages(example.messages)}
            if example.tools:
                row["tools"] = example.tools
            file.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_verl(examples: Sequence[Example], path: Path) -> None:
    """verl's multi-turn SFT parquet: a ``messages`` column of chats (and ``tools`` in tools mode)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, list[Any]] = {"messages": [template_messages(e.messages) for e in examples]}
    if any(e.tools for e in examples):
        columns["tools"] = [e.tools for e in examples]
    pq.write_table(pa.table(columns), path)


def load_examples(folder: Path | str) -> list[Example]:
    """The examples of a data set folder (``examples.jsonl``)."""
    lines = (Path(folder) / EXAMPLES_FILE).read_text(encoding="utf-8").splitlines()
    examples = []
    for line in lines:
        data = json.loads(line)
        data.pop("turns")
        examples.append(Example(**data))
    return examples


def effective_system_prompt(system_prompt: str | None, action_format: str) -> str | None:
    """The system prompt a ``ChatWrapper`` shows for ``system_prompt`` (in tools mode the default is the tools one)."""
    if action_format == "tools" and system_prompt == DEFAULT_SYSTEM_PROMPT:
        return DEFAULT_TOOLS_SYSTEM_PROMPT
    return system_prompt


def example_trajectory(example: Example, chat_tokens: ChatTokens, system_prompt: str | None) -> Trajectory:
    """The example as the rollout's tokens, its chat shown with ``system_prompt`` (None: no system message).

    The prompt is the chat up to the first reply; each reply is :meth:`ChatTokens.reply`'s ids (loss
    mask 1); the messages after it up to the next reply are :meth:`ChatTokens.delta`'s ids (mask 0).
    The episode's last observation is left out, as in a rollout that ends with the episode.
    """
    chat = [m for m in example.messages if m["role"] != "system"]
    if system_prompt is not None:
        chat.insert(0, {"role": "system", "content": system_prompt})
    replies = [i for i, message in enumerate(chat) if message["role"] == "assistant"]
    trajectory = Trajectory(example.env_id, example.task_id, group=0, success=example.success, score=example.score)
    trajectory.extend(chat_tokens.prompt(chat[: replies[0]], example.tools), sampled=False)
    for turn, index in enumerate(replies):
        history = chat[:index]
        sampled = chat_tokens.reply(history, chat[index], example.tools)
        trajectory.extend(sampled, sampled=True)
        trajectory.turn_ends.append(len(trajectory.token_ids) - 1)
        if turn + 1 < len(replies):
            answer = chat[index + 1 : replies[turn + 1]]
            trajectory.extend(chat_tokens.delta(history, sampled, answer, example.tools), sampled=False)
    return trajectory


def training_trajectories(
    folder: Path | str,
    chat_tokens: ChatTokens,
    system_prompt: str | None,
    action_format: str,
    eval_split: str,
) -> list[Trajectory]:
    """A data set's examples as rollout tokens for the trainer; refuses a data set of another action format
    or holding tasks of ``eval_split`` (the split the trainer evaluates on)."""
    examples = load_examples(folder)
    formats = {example.action_format for example in examples}
    if formats != {action_format}:
        held = ", ".join(sorted(formats))
        raise ValueError(f"{folder} holds {held} episodes; rollout.action_format is {action_format}")
    evaluated = sorted({e.key for e in examples if e.split == eval_split})
    if evaluated:
        raise ValueError(
            f"{folder} holds {len(evaluated)} episodes of the {eval_split} split, which the trainer evaluates on "
            f"(e.g. {evaluated[0]}): never train on what you evaluate"
        )
    prompt = effective_system_prompt(system_prompt, action_format)
    return [example_trajectory(example, chat_tokens, prompt) for example in examples]


def batch_indices(size: int, batch_size: int, seed: int, iteration: int) -> list[int]:
    """The examples of SFT iteration ``iteration``: the next ``batch_size`` of a seeded order, reshuffled each epoch.

    A function of the iteration alone, so a resumed run takes the batches an uninterrupted one does.
    """
    orders: dict[int, list[int]] = {}
    indices = []
    for position in range(iteration * batch_size, (iteration + 1) * batch_size):
        epoch, index = divmod(position, size)
        if epoch not in orders:
            orders[epoch] = list(range(size))
            random.Random(stable_seed(seed, "sft", epoch)).shuffle(orders[epoch])
        indices.append(orders[epoch][index])
    return indices
