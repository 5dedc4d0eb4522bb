"""Prefix caching (``agentgym.llm.prefix_cache``) and int8 weights in the generator, the hf: policy and serve-model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import torch
from fastapi.testclient import TestClient

from agentgym.llm.generation import Generator, Request, SamplingParams
from agentgym.llm.policies.base import Episode
from agentgym.llm.policies.hf import HFPolicy
from agentgym.llm.prefix_cache import PrefixCache, bytes_per_token
from agentgym.llm.serve_model import create_app


def layers_for(ids: list[int], layers: int = 2) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Keys and values that encode each token id (so a slice shows which tokens it holds)."""
    values = torch.tensor(ids, dtype=torch.float32)[None, :, None].expand(1, len(ids), 4)
    return [(values.clone(), -values.clone()) for _ in range(layers)]


def test_lookup_finds_the_longest_shared_prefix_and_leaves_a_token_to_run() -> None:
    cache = PrefixCache(max_tokens=100, min_reuse=2)
    cache.store([1, 2, 3, 4, 5], layers_for([1, 2, 3, 4, 5]))
    cache.store([1, 2, 9, 9], layers_for([1, 2, 9, 9]))
    hit = cache.lookup([1, 2, 3, 4, 7, 8])
    assert hit.length == 4
    assert hit.layers is not None and hit.layers[0][0][0, :, 0].tolist() == [1, 2, 3, 4]
    assert hit.layers[1][1][0, :, 0].tolist() == [-1, -2, -3, -4]
    # The whole prompt is stored: its last token still runs, for the logits that start the reply.
    assert cache.lookup([1, 2, 3, 4, 5]).length == 4
    assert cache.lookup([1, 7]).length == 0, "a prefix under min_reuse is not worth reusing"
    assert cache.lookup([5, 1, 2]).length == 0
    assert (cache.hits, cache.looked_up) == (8, 6 + 5 + 2 + 3)


def test_store_replaces_the_entries_it_extends_and_evicts_the_least_recently_used() -> None:
    cache = PrefixCache(max_tokens=10, min_reuse=1)
    cache.store([1, 2, 3], layers_for([1, 2, 3]))
    cache.store([1, 2, 3, 4, 5], layers_for([1, 2, 3, 4, 5]))
    assert (len(cache), cache.tokens) == (1, 5), "the longer sequence covers its prefix"
    cache.store([7, 8, 9], layers_for([7, 8, 9]))
    cache.lookup([1, 2, 3, 4, 0])  # [1..5] is now more recently used than [7, 8, 9]
    cache.store([4, 4, 4], layers_for([4, 4, 4]))  # 11 tokens: the least recently used goes
    assert cache.tokens == 8 and cache.lookup([7, 8, 9, 0]).length == 0
    assert cache.lookup([4, 4, 4, 0]).length == 3  # now [1..5] is the least recently used
    cache.store([6, 6, 6], layers_for([6, 6, 6]))
    assert cache.tokens == 6 and cache.lookup([1, 2, 3, 4, 5, 0]).length == 0
    assert cache.lookup([6, 6, 6, 0]).length == 3
    cache.store(list(range(11)), layers_for(list(range(11))))
    assert cache.lookup([0, 1, 2, 3]).length == 0, "a sequence over the budget is not kept"
    cache.clear()
    assert (len(cache), cache.tokens) == (0, 0)
    assert bytes_per_token(layers_for([1, 2])) == 2 * 2 * 4 * 4


CHAT = [
    {"role": "system", "content": "You are in a maze. Move up, down, left or right to reach the goal."},
    {"role": "user", "content": "Observation: a wall to the north. Action?"},
]


def turns(generator: Generator, chats: list[list[dict]], count: int) -> list[list]:
    """``count`` turns of greedy replies to each chat, each turn's prompt the last one's plus reply and feedback."""
    played = []
    params = SamplingParams(temperature=0, max_new_tokens=8)
    for turn in range(count):
        completions = generator.generate([Request(chat, params) for chat in chats])
        played.append(completions)
        chats = [
            chat + [{"role": "assistant", "content": done.text}, {"role": "user", "content": f"Feedback {turn}."}]
            for chat, done in zip(chats, completions)
        ]
    return played


def test_a_cached_prefix_gives_the_replies_a_full_prefill_gives(tiny_model_path: Path) -> None:
    plain = Generator.from_pretrained(tiny_model_path, device="cpu")
    cached = Generator.from_pretrained(tiny_model_path, device="cpu", prefix_cache_tokens=4096)
    chats = [CHAT, [CHAT[0], {"role": "user", "content": "Observation: open ground. Action?"}]]
    for without, with_cache in zip(turns(plain, chats, 3), turns(cached, chats, 3)):
        for expected, got in zip(without, with_cache):
            assert got.token_ids == expected.token_ids
            assert got.logprobs == pytest.approx(expected.logprobs, abs=1e-4)
            assert got.prompt_tokens == expected.prompt_tokens
    later = turns(cached, chats, 3)[1:]
    assert all(0 < done.cached_tokens < done.prompt_tokens for completions in later for done in completions)
    assert cached.prefix_cache is not None and cached.prefix_cache.hits > 0
    # A batch mixing a cached prompt and a new one decodes each as alone.
    fresh = Request([{"role": "user", "content": "go left"}], SamplingParams(temperature=0, max_new_tokens=8))
    (alone,) = plain.generate([fresh])
    mixed = cached.generate([Request(CHAT, SamplingParams(temperature=0, max_new_tokens=8)), fresh])
    assert mixed[0].cached_tokens > 0 and mixed[1].token_ids == alone.token_ids


def test_int8_weights_replace_the_linear_layers(tiny_model_path: Path) -> None:
    generator = Generator.from_pretrained(tiny_model_path, device="cpu", quantize="int8", prefix_cache_tokens=4096)
    modules = list(generator.model.modules())
    assert any(isinstance(module, torch.ao.nn.quantized.dynamic.Linear) for module in modules)
    assert not any(type(module) is torch.nn.Linear for module in modules)
    (first, second) = turns(generator, [CHAT], 2)
    assert first[0].completion_tokens == 8 and second[0].cached_tokens > 0
    with pytest.raises(ValueError, match="unknown quantization"):
        Generator.from_pretrained(tiny_model_path, device="cpu", quantize="int4")  # type: ignore[arg-type]


def test_hf_policy_and_serve_model_report_the_cached_tokens(tiny_model_path: Path) -> None:
    policy = HFPolicy(tiny_model_path, device="cpu", max_new_tokens=8, prefix_cache_tokens=4096)
    episode = Episode(key="e", seed=0, env=None)  # type: ignore[arg-type]

    async def two_turns() -> list[int]:
        first = await policy.act(list(CHAT), episode)
        follow = [*CHAT, {"role": "assistant", "content": first.text}, {"role": "user", "content": "again"}]
        await policy.act(follow, episode)
        await policy.aclose()
        return [policy.batcher.generator.prefix_cache.hits, policy.describe()["prefix_cache_tokens"]]

    hits, budget = asyncio.run(two_turns())
    assert hits > 0 and budget == 4096
    generator = Generator.from_pretrained(tiny_model_path, device="cpu", prefix_cache_tokens=4096)
    with TestClient(create_app(generator, "tiny", max_batch_tokens=64)) as client:
        assert client.app.state.batcher.max_batch_tokens == 64
        body = {"model": "tiny", "messages": CHAT, "max_tokens": 8, "temperature": 0}
        first = client.post("/v1/chat/completions", json=body).json()
        assert first["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
        body["messages"] = [*CHAT, first["choices"][0]["message"], {"role": "user", "content": "again"}]
        second = client.post("/v1/chat/completions", json=body).json()["usage"]
        assert 0 < second["prompt_tokens_details"]["cached_tokens"] < second["prompt_tokens"]


def test_serve_model_flags_reach_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentgym import cli
    from agentgym.llm import serve_model

    seen: dict = {}
    monkeypatch.setattr(serve_model, "serve", lambda *args, **kwargs: seen.update(kwargs))
    flags = ["serve-model", "smollm2", "--quantize", "int8", "--max-batch-tokens", "0", "--prefix-cache-tokens", "64"]
    assert cli.main(flags) == 0
    assert (seen["quantize"], seen["max_batch_tokens"], seen["prefix_cache_tokens"]) == ("int8", None, 64)
    seen.clear()
    quota_flags = ["--max-requests-per-client", "4", "--request-rate", "2", "--max-body-bytes", "1000"]
    assert cli.main(["serve-model", "smollm2", *quota_flags]) == 0
    quotas = seen["quotas"]
    assert (quotas.per_client, quotas.buckets.rate, seen["max_body_bytes"]) == (4, 2.0, 1000)
    seen.clear()
    assert cli.main(["serve-model", "smollm2"]) == 0
    assert not {"max_batch_tokens", "prefix_cache_tokens", "max_body_bytes"} & set(seen), "serve()'s defaults hold"
