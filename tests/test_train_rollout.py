"""Token-in/token-out trajectories: the loss mask, the chat template's delta, no re-tokenization."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers import AutoTokenizer  # noqa: E402

from agentgym.train.batch import collate  # noqa: E402
from agentgym.train.rollout import ChatTokens, Sample, chat_env, make_slots, play_episodes  # noqa: E402

SYSTEM = "Reply with one move."


class ScriptedSampler:
    """Returns fixed token ids (and made-up logprobs) for every prompt; records the prompts."""

    context_length = 2048

    def __init__(self, token_ids: list[int]) -> None:
        self.token_ids = token_ids
        self.prompts: list[list[int]] = []

    def sample(self, prompts: list[list[int]], seeds: list[int]) -> list[Sample]:
        self.prompts += [list(prompt) for prompt in prompts]
        return [Sample(list(self.token_ids), [-0.5 - i for i in range(len(self.token_ids))]) for _ in prompts]


@pytest.fixture(scope="module")
def tokenizer(tiny_model_with_long_context_path: Path):
    return AutoTokenizer.from_pretrained(tiny_model_with_long_context_path)


def play(tokenizer, token_ids: list[int], turns: int = 3):
    chat_tokens = ChatTokens(tokenizer, [tokenizer.eos_token_id])
    env = chat_env("FrozenLake-v0", {"size": 4, "hole_probability": 0.0}, SYSTEM)
    sampler = ScriptedSampler(token_ids)
    (slot,) = make_slots([env], [("FrozenLake-v0", 3, 0)], random.Random(0))
    (trajectory,) = play_episodes([slot], sampler, chat_tokens, turns, lambda i, t: t)
    return trajectory, env, sampler


def test_the_loss_mask_covers_exactly_the_sampled_tokens(tokenizer) -> None:
    reply = tokenizer("Action: right", add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
    trajectory, env, sampler = play(tokenizer, reply)
    assert trajectory.turns == 3 and len(env.transcript) == 2 + 2 * 3
    sampled = [i for i, m in enumerate(trajectory.loss_mask) if m]
    assert len(sampled) == 3 * len(reply)
    for end in trajectory.turn_ends:
        turn = list(range(end - len(reply) + 1, end + 1))
        assert [trajectory.token_ids[i] for i in turn] == reply
        assert [trajectory.logprobs[i] for i in turn] == [-0.5 - i for i in range(len(reply))]
        assert all(trajectory.loss_mask[i] for i in turn)
    # Prompt and environment tokens: mask 0 and no logprob.
    assert all(trajectory.logprobs[i] == 0 for i, m in enumerate(trajectory.loss_mask) if not m)
    assert trajectory.loss_mask[: trajectory.turn_ends[0] - len(reply) + 1] == [0] * (
        trajectory.turn_ends[0] - len(reply) + 1
    )
    # Each prompt the sampler saw is the trajectory so far: token in, token out.
    for prompt, end in zip(sampler.prompts, trajectory.turn_ends):
        assert prompt == trajectory.token_ids[: end - len(reply) + 1]


def test_the_trajectory_is_the_chat_template_of_the_conversation(tokenizer) -> None:
    """With replies sampled in their canonical tokens, the ids equal the template's rendering."""
    reply = tokenizer("Action: down", add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
    trajectory, env, _ = play(tokenizer, reply, turns=2)
    # The episode's last observation is not part of the trajectory (nothing acts on it).
    text = tokenizer.apply_chat_template(env.transcript[:-1], tokenize=False)
    rendered = tokenizer(text, add_special_tokens=False).input_ids
    assert trajectory.token_ids == rendered[: len(trajectory.token_ids)]
    assert tokenizer.decode(rendered[len(trajectory.token_ids) :]).strip() == ""  # only the template's "\n" is left


def test_sampled_ids_are_trained_on_even_where_re_tokenizing_would_change_them(tokenizer) -> None:
    """The model spells "right" letter by letter; re-encoding its text would give one merged token."""
    letters = [tokenizer.convert_tokens_to_ids(letter) for letter in "right"]
    reply = letters + [tokenizer.eos_token_id]
    assert tokenizer.decode(reply, skip_special_tokens=True) == "right"
    re_encoded = tokenizer(tokenizer.decode(reply, skip_special_tokens=True), add_special_tokens=False).input_ids
    assert re_encoded != letters, "the tokenizer should merge the letters; the test needs a case that differs"
    trajectory, env, _ = play(tokenizer, reply, turns=2)
    assert env.unwrapped.position == (0, 2)  # the env got the decoded text and moved right twice
    for end in trajectory.turn_ends:
        assert trajectory.token_ids[end - len(reply) + 1 : end + 1] == reply
    # What the update scores is these ids, with their mask, unchanged.
    token_ids, attention, mask, logprobs = collate([trajectory], tokenizer.pad_token_id)
    assert token_ids[0].tolist() == trajectory.token_ids
    assert mask[0].tolist() == trajectory.loss_mask and attention[0].sum() == len(trajectory.token_ids)


def test_a_reply_cut_by_the_token_limit_gets_the_end_of_turn_from_the_template(tokenizer) -> None:
    reply = tokenizer("Action: right", add_special_tokens=False).input_ids  # no end-of-sequence token
    trajectory, _, _ = play(tokenizer, reply, turns=2)
    after_first = trajectory.token_ids[trajectory.turn_ends[0] + 1]
    assert after_first == tokenizer.eos_token_id and trajectory.loss_mask[trajectory.turn_ends[0] + 1] == 0


def test_anchors_and_rewards_per_turn(tokenizer) -> None:
    reply = tokenizer("right", add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
    trajectory, env, _ = play(tokenizer, reply, turns=3)
    assert trajectory.anchors == [env.transcript[i]["content"] for i in (1, 3, 5)]
    assert trajectory.rewards == [0.0, 0.0, 0.0] and not trajectory.success
    assert trajectory.done and trajectory.truncated  # the turn limit ended it
