"""A policy served by any OpenAI-compatible Chat Completions endpoint (vLLM, hosted APIs)."""

from __future__ import annotations

import asyncio
import os
import random
from typing import Any

import httpx

from agentgym.policies.base import Episode, Message, Policy, Reply

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}


class PolicyError(RuntimeError):
    """The model endpoint failed in a way retrying did not fix."""


class OpenAIPolicy(Policy):
    """Chat Completions over HTTP with retries, backoff, timeouts and a concurrency limit.

    ``api_key`` defaults to the ``api_key_env`` environment variable (``OPENAI_API_KEY``);
    with neither, no ``Authorization`` header is sent (vLLM's default). Each request
    carries the episode's seed so that sampling is reproducible where the server honours
    it. Token usage is taken from the response's ``usage``.
    """

    def __init__(
        self,
        model: str,
        base_url: str = "http://127.0.0.1:8000/v1",
        *,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float | None = 0.0,
        top_p: float | None = None,
        max_tokens: int | None = 1024,
        stop: list[str] | None = None,
        extra_body: dict[str, Any] | None = None,
        timeout_s: float = 300.0,
        max_retries: int = 6,
        backoff_s: float = 0.5,
        concurrency: int = 256,
    ) -> None:
        self.name = model
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.sampling = {
            key: value
            for key, value in {
                "temperature": temperature,
                "top_p": top_p,
                "max_tokens": max_tokens,
                "stop": stop,
            }.items()
            if value is not None
        } | dict(extra_body or {})
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.concurrency = concurrency
        key = api_key or os.environ.get(api_key_env)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )
        self._slots = asyncio.Semaphore(concurrency)
        self._jitter = random.Random()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "backend": "openai", "base_url": self.base_url, "sampling": self.sampling}

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        payload = {"model": self.model, "messages": messages, "seed": episode.seed, **self.sampling}
        async with self._slots:
            data = await self._post("/chat/completions", payload)
        try:
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise PolicyError(f"malformed response from {self.base_url}: {str(data)[:300]}") from None
        usage = data.get("usage") or {}
        return Reply(text, usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))

    async def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        problem = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(self._backoff(attempt))
            try:
                response = await self._client.post(path, json=payload)
            except httpx.TransportError as error:
                problem = f"{type(error).__name__}: {error}"
                continue
            if response.status_code in RETRYABLE_STATUS:
                problem = f"HTTP {response.status_code}: {response.text[:300]}"
                continue
            if response.status_code >= 400:
                raise PolicyError(f"HTTP {response.status_code} from {self.base_url}{path}: {response.text[:500]}")
            return response.json()
        raise PolicyError(f"{self.base_url}{path} failed after {self.max_retries + 1} attempts; last: {problem}")

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with full jitter, capped at 30 s."""
        return self._jitter.uniform(0, min(30.0, self.backoff_s * 2 ** (attempt - 1)))

    async def aclose(self) -> None:
        await self._client.aclose()
