"""Batched generation (``agentgym.llm.generation``) and the in-process policy (``agentgym.llm.policies.hf``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import torch

from agentgym.llm.generation import Batcher, Completion, Generator, Request, RequestError, SamplingParams
from agentgym.llm.policies.base import Episode
from agentgym.llm.policies.hf import HFPolicy

CHATS = [
    [{"role": "user", "content": "go left"}],
    [
        {"role": "system", "content": "You are in a maze. Move up, down, left or right to reach the goal."},
        {"role": "user", "content": "Observation: a wall to the north. Action?"},
    ],
    [
        {"role": "user", "content": "Guess the 5-letter word."},
        {"role": "assistant", "content": "crane"},
        {"role": "user", "content": "G Y . . G"},
    ],
]
PROMPTS = ["Action: up", "The frozen lake is slippery; holes end the episode. Goal at row"]


def greedy(max_new_tokens: int = 16, **kwargs: object) -> SamplingParams:
    return SamplingParams(temperature=0, max_new_tokens=max_new_tokens, **kwargs)


@pytest.fixture(scope="module")
def generator(tiny_model_path: Path) -> Generator:
    return Generator.from_pretrained(tiny_model_path, device="cpu")


def episode(seed: int) -> Episode:
    # The HF policy reads only the episode's seed and rng, never the env.
    return Episode(key=f"episode-{seed}", seed=seed, env=None)  # type: ignore[arg-type]


def test_batched_greedy_equals_unbatched(generator: Generator) -> None:
    requests = [Request(chat, greedy()) for chat in CHATS] + [Request(prompt, greedy()) for prompt in PROMPTS]
    assert len({len(generator.encode(request)) for request in requests}) > 1, "prompts must need padding"
    batched = generator.generate(requests)
    for request, completion in zip(requests, batched):
        (alone,) = generator.generate([request])
        assert completion.token_ids == alone.token_ids
        assert completion.text == alone.text
        assert completion.logprobs == pytest.approx(alone.logprobs, abs=1e-4)
        assert completion.prompt_tokens == alone.prompt_tokens == len(generator.encode(request))


def test_limit_usage_and_text(generator: Generator) -> None:
    (completion,) = generator.generate([Request(CHATS[0], greedy(7))])
    assert completion.finish_reason == "length"
    assert completion.completion_tokens == len(completion.token_ids) == len(completion.logprobs) == 7
    assert completion.text == generator.tokenizer.decode(completion.token_ids, skip_special_tokens=True)
    chat_text = generator.tokenizer.apply_chat_template(CHATS[0], add_generation_prompt=True, tokenize=False)
    assert completion.prompt_tokens == len(generator.tokenizer(chat_text, add_special_tokens=False).input_ids)


def test_logprobs_are_the_raw_model_logprobs(generator: Generator) -> None:
    prompt = generator.encode(Request(PROMPTS[0]))
    (completion,) = generator.generate_tokens([prompt], [SamplingParams(temperature=0.7, max_new_tokens=1, seed=1)])
    with torch.no_grad():
        logits = generator.model(torch.tensor([prompt])).logits[0, -1]
    expected = torch.log_softmax(logits, dim=-1)[completion.token_ids[0]].item()
    assert completion.logprobs[0] == pytest.approx(expected, abs=1e-5)


def test_stop_string_cuts_the_text(generator: Generator) -> None:
    (full,) = generator.generate([Request(PROMPTS[1], greedy(24))])
    # A later token with plain text of its own makes a stop string the output must contain.
    stop = next(
        text
        for text in (generator.tokenizer.decode([token]) for token in full.token_ids[6:])
        if len(text.strip()) >= 2 and text.isprintable()
    )
    cut = full.text.index(stop)
    stopped, other = generator.generate(
        [Request(PROMPTS[1], greedy(24, stop=("\x00never", stop))), Request(PROMPTS[0], greedy(24))]
    )
    assert stopped.text == full.text[:cut]
    assert stopped.finish_reason == "stop"
    assert stopped.completion_tokens < 24
    assert stopped.token_ids == full.token_ids[: stopped.completion_tokens]
    assert stop in generator.tokenizer.decode(stopped.token_ids)
    assert other.finish_reason == "length" and other.completion_tokens == 24


def test_eos_ends_the_completion_and_is_not_in_the_text(generator: Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    (full,) = generator.generate([Request(CHATS[1], greedy(12))])
    end = next(i for i in range(3, 12) if full.token_ids[i] not in full.token_ids[:i])
    monkeypatch.setattr(generator, "eos_token_ids", frozenset({full.token_ids[end]}))
    (completion,) = generator.generate([Request(CHATS[1], greedy(12))])
    assert completion.finish_reason == "stop"
    assert completion.token_ids == full.token_ids[: end + 1]
    assert completion.text == generator.tokenizer.decode(full.token_ids[:end], skip_special_tokens=True)


def test_seeded_sampling_is_reproducible_in_any_batch(generator: Generator) -> None:
    def sample(seed: int, top_p: float = 1.0) -> SamplingParams:
        return SamplingParams(temperature=1.0, top_p=top_p, max_new_tokens=12, seed=seed)

    alone = generator.generate([Request(PROMPTS[0], sample(7))])[0]
    in_batch = generator.generate([Request(CHATS[1], sample(3)), Request(PROMPTS[0], sample(7))])[1]
    assert alone.token_ids == in_batch.token_ids
    others = [generator.generate([Request(PROMPTS[0], sample(seed))])[0].token_ids for seed in range(3)]
    assert any(tokens != alone.token_ids for tokens in others)
    # A tiny nucleus leaves only the most likely token: sampling becomes greedy.
    (nucleus,) = generator.generate([Request(PROMPTS[0], sample(7, top_p=1e-6))])
    assert nucleus.token_ids == generator.generate([Request(PROMPTS[0], greedy(12))])[0].token_ids


def test_context_length_limits_prompt_and_completion(generator: Generator) -> None:
    assert generator.context_length == 256
    with pytest.raises(RequestError, match="context length"):
        generator.encode(Request("up down " * 200))
    request = Request("left right " * 120, greedy(100))
    (completion,) = generator.generate([request])
    assert completion.prompt_tokens + completion.completion_tokens == 256
    assert completion.finish_reason == "length"


@pytest.mark.parametrize(
    "messages",
    [[{"content": "no role"}], [{"role": "user", "content": None}], [{"role": "narrator", "content": "hi"}]],
    ids=["missing-role", "no-content", "role-the-template-rejects"],
)
def test_bad_messages_raise_request_error(generator: Generator, messages: list[dict]) -> None:
    with pytest.raises(RequestError):
        generator.encode(Request(messages))


def test_batcher_batches_concurrent_requests_and_isolates_bad_ones(
    generator: Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch_sizes: list[int] = []
    generate_tokens = generator.generate_tokens

    def counting(prompts: list[list[int]], params: list[SamplingParams], listeners: list) -> list[Completion]:
        batch_sizes.append(len(prompts))
        return generate_tokens(prompts, params, listeners)

    monkeypatch.setattr(generator, "generate_tokens", counting)
    batcher = Batcher(generator, max_batch_size=3, batch_wait_ms=100)
    requests = [Request(PROMPTS[i % 2] + "!" * i, greedy(4)) for i in range(7)]
    requests.insert(1, Request([{"role": "narrator", "content": "hi"}]))

    async def run() -> list[Completion | BaseException]:
        try:
            return await asyncio.gather(*(batcher.submit(request) for request in requests), return_exceptions=True)
        finally:
            await batcher.aclose()

    results = asyncio.run(run())
    assert isinstance(results[1], RequestError)
    assert [len(result.token_ids) for result in results if isinstance(result, Completion)] == [4] * 7
    assert batch_sizes == [2, 3, 2], "batches of at most 3, the bad request failing alone in the first"
    assert batcher.batches == 3 and batcher.requests == 8


def test_batcher_splits_a_batch_by_its_padded_prompt_tokens(
    generator: Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch whose prompts pad to more than max_batch_tokens runs as smaller generations, shortest first, with
    the completions a whole batch gives."""
    prompt_sets: list[list[int]] = []
    generate_tokens = generator.generate_tokens

    def recording(prompts: list[list[int]], params: list[SamplingParams], listeners: list) -> list[Completion]:
        prompt_sets.append([len(prompt) for prompt in prompts])
        return generate_tokens(prompts, params, listeners)

    requests = [Request(chat, greedy(6)) for chat in CHATS] + [Request(prompt, greedy(6)) for prompt in PROMPTS]
    lengths = [len(generator.encode(request)) for request in requests]
    whole = generator.generate(requests)
    monkeypatch.setattr(generator, "generate_tokens", recording)
    budget = 2 * max(lengths)
    batcher = Batcher(generator, max_batch_size=8, batch_wait_ms=100, max_batch_tokens=budget)

    async def run() -> list[Completion]:
        try:
            return await asyncio.gather(*(batcher.submit(request) for request in requests))
        finally:
            await batcher.aclose()

    results = asyncio.run(run())
    assert [result.token_ids for result in results] == [completion.token_ids for completion in whole]
    assert len(prompt_sets) > 1 and sorted(length for batch in prompt_sets for length in batch) == sorted(lengths)
    assert all(len(batch) * max(batch) <= budget or len(batch) == 1 for batch in prompt_sets)


def test_batcher_keeps_the_event_loop_free(generator: Generator) -> None:
    batcher = Batcher(generator)

    async def run() -> int:
        ticks = 0
        work = asyncio.ensure_future(batcher.submit(Request(PROMPTS[0], greedy(200))))
        while not work.done():
            await asyncio.sleep(0.002)
            ticks += 1
        await work
        await batcher.aclose()
        return ticks

    assert asyncio.run(run()) >= 3


def test_hf_policy_batches_concurrent_acts(tiny_model_path: Path) -> None:
    policy = HFPolicy(tiny_model_path, device="cpu", temperature=0, max_new_tokens=8, batch_wait_ms=50)
    assert policy.name == "tiny-llama"
    described = policy.describe()
    assert described["path"] == str(tiny_model_path.resolve())
    assert (described["temperature"], described["max_new_tokens"], described["device"]) == (0, 8, "cpu")
    chats = [CHATS[i % 3] + [{"role": "user", "content": f"step {i}"}] for i in range(8)]
    generator = policy.batcher.generator

    async def run() -> list:
        return await asyncio.gather(*(policy.act(chat, episode(i)) for i, chat in enumerate(chats)))

    replies = asyncio.run(run())
    assert policy.batcher.requests == 8 and policy.batcher.batches < 8
    for chat, reply in zip(chats, replies):
        (expected,) = generator.generate([Request(chat, greedy(8))])
        assert reply.text == expected.text == generator.tokenizer.decode(reply.token_ids, skip_special_tokens=True)
        assert reply.token_ids == expected.token_ids and len(reply.logprobs) == reply.completion_tokens == 8
        assert reply.prompt_tokens == len(generator.encode(Request(chat)))

    # The policy keeps working from a new event loop, and fails cleanly once closed.
    again = asyncio.run(policy.act(chats[0], episode(0)))
    assert again.token_ids == replies[0].token_ids
    asyncio.run(policy.aclose())
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(policy.act(chats[0], episode(0)))


def test_hf_policy_samples_reproducibly_per_episode(tiny_model_path: Path) -> None:
    policy = HFPolicy(tiny_model_path, device="cpu", temperature=1.0, max_new_tokens=10)

    async def play(seed: int) -> list[list[int] | None]:
        run = episode(seed)
        return [(await policy.act(CHATS[0], run)).token_ids for _ in range(2)]

    first, second, other = asyncio.run(play(5)), asyncio.run(play(5)), asyncio.run(play(6))
    asyncio.run(policy.aclose())
    assert first == second
    assert first[0] != first[1], "each turn draws a new sampling seed"
    assert other != first


def test_batched_sampling_draws_each_token_with_its_probability() -> None:
    """The exponential race over the batch picks tokens as often as softmax(logits / T) says, and top-p cuts the
    tail."""
    from agentgym.llm.generation import _sample

    logits = torch.tensor([2.0, 1.0, 0.0, -1.0]).expand(20_000, 4)
    noise = torch.rand(20_000, 4, generator=torch.Generator().manual_seed(0))
    for temperature in (1.0, 0.5):
        draws = _sample([SamplingParams(temperature=temperature)] * 20_000, logits, noise)
        expected = torch.softmax(logits[0] / temperature, dim=-1)
        observed = torch.bincount(draws, minlength=4).float() / 20_000
        assert torch.allclose(observed, expected, atol=0.012), (temperature, observed, expected)
    # top_p 0.7 keeps the smallest prefix reaching 0.7 of the mass: tokens 0 (0.64) and 1 (0.24), renormalised.
    draws = _sample([SamplingParams(top_p=0.7)] * 20_000, logits, noise)
    observed = torch.bincount(draws, minlength=4).float() / 20_000
    assert observed[2:].sum() == 0
    assert abs(observed[0] - 0.6439 / (0.6439 + 0.2369)) < 0.012
