"""A policy backed by an in-process Hugging Face transformers model (CPU or GPU): a folder, a GGUF file, or a
model an installed package ships (``hf:smollm2``; see :mod:`agentgym.llm.models`).

Concurrent ``act`` calls (one per running episode) are batched into one generation by a
``Batcher``, which runs the model in a worker thread so the event loop stays free. Each
turn samples with a seed drawn from the episode's ``rng``, so an episode replays the same
way. When the episode plays native tool calls, the chat template renders its tools and the
reply's ``<tool_call>`` blocks become tool calls (:mod:`agentgym.tool_parsing`). Needs the
``hf`` extra.

A vision-language model folder (its config has a ``vision_config``) is loaded with its
processor (:func:`agentgym.llm.vision.load_generator`): chats carrying screenshots as
``image_url`` parts (``ChatWrapper(images=ImageOptions(mode="screenshot"))``) reach it as images.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from agentgym.llm.generation import Batcher, Request, SamplingParams
from agentgym.llm.models import resolve_model
from agentgym.llm.policies.base import Episode, Message, Policy, Reply
from agentgym.llm.vision import VisionGenerator, load_generator


class HFPolicy(Policy):
    """Replies with a causal LM, or a vision-language model, loaded from ``path``: a local folder, a GGUF file
    or a packaged model's name such as ``smollm2`` (:func:`agentgym.llm.models.resolve_model`).

    ``device`` and ``dtype`` are as in ``Generator.from_pretrained``. Up to
    ``max_batch_size`` concurrent calls share a batch; the batcher waits at most
    ``batch_wait_ms`` after the first for more. ``temperature`` 0 (the default, as for
    ``OpenAIPolicy``) is greedy decoding.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        device: str = "auto",
        dtype: str | torch.dtype | None = None,
        max_batch_size: int = 32,
        batch_wait_ms: float = 5.0,
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
        self.batcher = Batcher(load_generator(source.folder, device, dtype), max_batch_size, batch_wait_ms)

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        """The model's reply to the chat so far."""
        params = replace(self.params, seed=episode.rng.getrandbits(63))
        completion = await self.batcher.submit(Request(messages, params, episode.tools))
        return Reply.parsed(
            completion.text,
            episode.tools,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            token_ids=completion.token_ids,
            logprobs=completion.logprobs,
        )

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
            "max_batch_size": self.batcher.max_batch_size,
            "batch_wait_ms": self.batcher.batch_wait_ms,
            "temperature": self.params.temperature,
            "top_p": self.params.top_p,
            "max_new_tokens": self.params.max_new_tokens,
            "stop": list(self.params.stop),
        }

    async def aclose(self) -> None:
        """Stop the batcher and its worker thread."""
        await self.batcher.aclose()
