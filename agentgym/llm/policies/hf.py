"""A policy backed by an in-process Hugging Face transformers model (CPU or GPU): a folder, a GGUF file, or a
model an installed package ships (``hf:smollm2``; see :mod:`agentgym.llm.models`).

Concurrent ``act`` calls (one per running episode) are batched into one generation by a
``Batcher``, which runs the model in a worker thread so the event loop stays free. Each
turn samples with a seed drawn from the episode's ``rng``, so an episode replays the same
way. When the episode plays native tool calls, the chat template renders its tools and the
reply's ``<tool_call>`` blocks become tool calls (:mod:`agentgym.contract.tool_parsing`). Needs the
``hf`` extra.

A vision-language model folder (its config has a ``vision_config``) is loaded with its
processor (:func:`agentgym.llm.vision.load_generator`): chats carrying screenshots as
``image_url`` parts (``ChatWrapper(images=ImageOptions(mode="screenshot"))``) reach it as images.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from agentgym.llm.generation import (
    DEFAULT_MAX_BATCH_TOKENS,
    DEFAULT_PREFIX_CACHE_TOKENS,
    Batcher,
    ContextLengthError,
    Quantization,
    Request,
    SamplingParams,
)
from agentgym.llm.models import resolve_model
from agentgym.llm.policies.base import (
    Episode,
    Message,
    Policy,
    PromptTooLong,
    Reply,
    drop_oldest_turns,
    droppable_turns,
)
from agentgym.llm.vision import VisionGenerator, load_generator


class HFPolicy(Policy):
    """Replies with a causal LM, or a vision-language model, loaded from ``path``: a local folder, a GGUF file
    or a packaged model's name such as ``smollm2`` (:func:`agentgym.llm.models.resolve_model`).

    ``device``, ``dtype`` and ``quantize`` are as in ``Generator.from_pretrained``. Up to
    ``max_batch_size`` concurrent calls share a batch (split where its prompts pad to more than
    ``max_batch_tokens``); the batcher waits at most ``batch_wait_ms`` after the first for more.
    The keys and values of the last ``prefix_cache_tokens`` tokens are kept, so that a turn's prompt runs only
    what follows the previous turn's (0: no prefix cache). ``temperature`` 0 (the default, as for
    ``OpenAIPolicy``) is greedy decoding.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        device: str = "auto",
        dtype: str | torch.dtype | None = None,
        quantize: Quantization | None = None,
        prefix_cache_tokens: int = DEFAULT_PREFIX_CACHE_TOKENS,
        max_batch_size: int = 32,
        batch_wait_ms: float = 5.0,
        max_batch_tokens: int | None = DEFAULT_MAX_BATCH_TOKENS,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_new_tokens: int = 1024,
        stop: Sequence[str] = (),
    ) -> None:
        source = resolve_model(path)
        self.path, self.name = source.folder, source.name
        self.params = SamplingParams(
            temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens, stop=tuple(stop)
        )
        generator = load_generator(source.folder, device, dtype, quantize, prefix_cache_tokens)
        self.quantize = quantize
        self.batcher = Batcher(generator, max_batch_size, batch_wait_ms, max_batch_tokens)

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        """The model's reply to the chat so far (its oldest turns left out where the context cannot hold them)."""
        params = replace(self.params, seed=episode.rng.getrandbits(63))
        messages = self.fitted(messages, episode)
        try:
            completion = await self.batcher.submit(Request(messages, params, episode.tools))
        except ContextLengthError as error:
            raise PromptTooLong(str(error)) from error
        return Reply.parsed(
            completion.text,
            episode.tools,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            token_ids=completion.token_ids,
            logprobs=completion.logprobs,
            finish_reason=completion.finish_reason,
            dropped_turns=episode.dropped_turns,
        )

    def fitted(self, messages: list[Message], episode: Episode) -> list[Message]:
        """``messages`` without as few of their oldest turns as leave ``max_new_tokens`` of room in the model's
        context (counted by its tokenizer; the task and the newest turn always stay); ``episode.dropped_turns``
        is set to how many were left out."""
        generator = self.batcher.generator
        if generator.context_length is None:
            return messages
        budget = generator.context_length - min(self.params.max_new_tokens, generator.context_length // 2)
        most = droppable_turns(messages)
        count = min(episode.dropped_turns, most)
        while True:
            fitted = drop_oldest_turns(messages, count)
            if (
                count >= most
                or _surely_fits(fitted, budget - len(json.dumps(episode.tools or [])))
                or self._tokens(fitted, episode) <= budget
            ):
                episode.dropped_turns = count
                return fitted
            count += 1

    def _tokens(self, messages: list[Message], episode: Episode) -> float:
        """The prompt's length in tokens (infinite when it overflows the context)."""
        try:
            return len(self.batcher.generator.encode(Request(messages, self.params, episode.tools)))
        except ContextLengthError:
            return float("inf")

    def describe(self) -> dict[str, Any]:
        """Name, model folder, device, batching and sampling params."""
        model = self.batcher.generator.model
        return {
            "name": self.name,
            "backend": "hf",
            "path": str(self.path),
            "vision": isinstance(self.batcher.generator, VisionGenerator),
            "device": str(model.device),
            "dtype": str(model.dtype).removeprefix("torch."),
            "quantize": self.quantize,
            "prefix_cache_tokens": cache.max_tokens
            if (cache := self.batcher.generator.prefix_cache) is not None
            else 0,
            "max_batch_size": self.batcher.max_batch_size,
            "batch_wait_ms": self.batcher.batch_wait_ms,
            "max_batch_tokens": self.batcher.max_batch_tokens,
            "temperature": self.params.temperature,
            "top_p": self.params.top_p,
            "max_new_tokens": self.params.max_new_tokens,
            "stop": list(self.params.stop),
        }

    async def aclose(self) -> None:
        """Stop the batcher and its worker thread."""
        await self.batcher.aclose()


def _surely_fits(messages: list[Message], budget: int) -> bool:
    """Whether a text chat surely fits ``budget`` tokens without tokenizing it: a token covers at least one byte
    (byte-level BPE, byte fallback), and a chat template adds a few tokens per message."""
    if not all(isinstance(message.get("content"), str | None) for message in messages):
        return False
    size = sum(
        len((message.get("content") or "").encode()) + len(str(message.get("tool_calls") or "")) for message in messages
    )
    return size + 16 * len(messages) + 64 <= budget
