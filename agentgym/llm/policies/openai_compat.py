"""A policy served by any OpenAI-compatible Chat Completions endpoint (vLLM, hosted APIs)."""

from __future__ import annotations

import asyncio
import os
import random
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import httpx

from agentgym.llm.policies.base import (
    Episode,
    Message,
    Policy,
    PromptTooLong,
    Reply,
    drop_oldest_turns,
    droppable_turns,
)

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
#: How many times a request that got no answer within the timeout is sent: a server that slow is busy (or queues
#: requests, as llama.cpp's server does, one at a time), and each resent request joins its line again.
READ_TIMEOUT_ATTEMPTS = 2


#: How servers say a prompt overflows the model's context: vLLM ("maximum context length"), agentgym serve-model
#: ("the model's context length"), llama.cpp's server ("exceed context window").
CONTEXT_OVERFLOW = re.compile(r"context (length|window)", re.IGNORECASE)


class PolicyError(RuntimeError):
    """The model endpoint failed in a way retrying did not fix."""


class ContextOverflow(PolicyError, PromptTooLong):
    """The endpoint refused the prompt as longer than the model's context, with every turn it may leave out left out."""


class OpenAIPolicy(Policy):
    """Chat Completions over HTTP with retries, backoff, timeouts and a concurrency limit.

    When the episode plays native tool calls (``episode.tools``), the request offers them
    (``tools=``, ``tool_choice: "auto"``) and the reply's ``tool_calls`` become its action;
    a vLLM server needs ``--enable-auto-tool-choice --tool-call-parser NAME`` for that.

    ``api_key`` defaults to the ``api_key_env`` environment variable (``OPENAI_API_KEY``);
    with neither, no ``Authorization`` header is sent (vLLM's default). Each request
    carries the episode's seed so that sampling is reproducible where the server honours
    it. Token usage is taken from the response's ``usage``. A prompt the server refuses as longer than the
    model's context (an HTTP 400 that says so) is sent again without its oldest turns, as many as it takes.
    Overloads (429, 5xx) and lost connections are retried ``max_retries`` times with backoff; a request with no
    answer within ``timeout_s`` is sent once more only (``READ_TIMEOUT_ATTEMPTS``).

    Load balancing: ``base_url`` may name several endpoints serving the same model, as a
    list or separated by commas (``openai:MODEL@URL1,URL2``). An episode goes to the endpoint
    with the fewest requests in flight when it first acts and stays there, so that its
    growing prompt hits that server's prefix cache; a request that fails goes to the least
    busy other endpoint on its next try, and the episode stays with that one.
    """

    def __init__(
        self,
        model: str,
        base_url: str | Sequence[str] = "http://127.0.0.1:8000/v1",
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
        urls = base_url.split(",") if isinstance(base_url, str) else base_url
        self.base_urls = [url.strip().rstrip("/") for url in urls if url.strip()]
        if not self.base_urls:
            raise ValueError(f"no endpoint in base_url {base_url!r}")
        self.base_url = ",".join(self.base_urls)
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
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.concurrency = concurrency
        key = api_key or os.environ.get(api_key_env)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )
        self._slots = asyncio.Semaphore(concurrency)
        self._jitter = random.Random()
        #: Requests in flight per endpoint, and the endpoint of each recent episode (oldest first).
        self.in_flight = [0] * len(self.base_urls)
        self._endpoint_of: OrderedDict[str, int] = OrderedDict()
        self._remembered = max(1024, 4 * concurrency)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "backend": "openai", "base_url": self.base_url, "sampling": self.sampling}

    def _endpoint(self, episode_key: str, failed: int | None) -> int:
        """The endpoint for the episode's next request: its own, unless that one just ``failed``."""
        index = self._endpoint_of.get(episode_key)
        if index is None or (index == failed and len(self.base_urls) > 1):
            others = [other for other in range(len(self.base_urls)) if other != failed] or [0]
            index = min(others, key=lambda other: self.in_flight[other])
        self._endpoint_of[episode_key] = index
        self._endpoint_of.move_to_end(episode_key)
        if len(self._endpoint_of) > self._remembered:
            self._endpoint_of.popitem(last=False)
        return index

    async def act(self, messages: list[Message], episode: Episode) -> Reply:
        """The endpoint's reply; a prompt it refuses as too long for the context is sent again without its oldest
        turns (one more each time; the task and the newest turn always stay)."""
        most = droppable_turns(messages)
        count = min(episode.dropped_turns, most)
        while True:
            payload = {
                "model": self.model,
                "messages": drop_oldest_turns(messages, count),
                "seed": episode.seed,
                **self.sampling,
            }
            if episode.tools:
                payload |= {"tools": episode.tools, "tool_choice": "auto"}
            try:
                async with self._slots:
                    data, url = await self._post("/chat/completions", payload, episode.key)
                break
            except ContextOverflow:
                if count >= most:
                    raise
                count += 1
        episode.dropped_turns = count
        try:
            choice = data["choices"][0]
            message = choice["message"]
            text = message.get("content") or ""
            tool_calls = message.get("tool_calls") or None
        except (KeyError, IndexError, TypeError, AttributeError):
            raise PolicyError(f"malformed response from {url}: {str(data)[:300]}") from None
        if tool_calls is not None and not isinstance(tool_calls, list):
            raise PolicyError(f"malformed tool_calls from {url}: {str(tool_calls)[:300]}")
        usage = data.get("usage") or {}
        return Reply(
            text,
            usage.get("prompt_tokens", 0),
            usage.get("completion_tokens", 0),
            tool_calls=tool_calls,
            finish_reason=choice.get("finish_reason"),
            dropped_turns=count,
        )

    async def _post(self, path: str, payload: dict[str, Any], episode_key: str) -> tuple[dict[str, Any], str]:
        """The endpoint's JSON answer and the endpoint's URL, retrying (on other endpoints where there are)."""
        problem, failed, read_timeouts = "", None, 0
        for attempt in range(self.max_retries + 1):
            if read_timeouts == READ_TIMEOUT_ATTEMPTS:
                raise PolicyError(
                    f"{self.base_url}{path}: no answer within {self.timeout_s:g} s, {read_timeouts} times. A server "
                    "that answers one request at a time (llama.cpp's server) keeps each in line behind the others: "
                    "lower `agentgym eval --concurrency` or raise --request-timeout"
                )
            if attempt:
                await asyncio.sleep(self._backoff(attempt))
            index = self._endpoint(episode_key, failed)
            url, failed = self.base_urls[index], index
            self.in_flight[index] += 1
            try:
                response = await self._client.post(f"{url}{path}", json=payload)
            except httpx.TransportError as error:
                problem = f"{url}: {type(error).__name__}: {error}"
                read_timeouts += isinstance(error, httpx.ReadTimeout)
                continue
            finally:
                self.in_flight[index] -= 1
            if response.status_code in RETRYABLE_STATUS:
                problem = f"{url}: HTTP {response.status_code}: {response.text[:300]}"
                continue
            if response.status_code >= 400:
                error = (
                    ContextOverflow
                    if response.status_code == 400 and CONTEXT_OVERFLOW.search(response.text)
                    else PolicyError
                )
                raise error(f"HTTP {response.status_code} from {url}{path}: {response.text[:500]}")
            return response.json(), url
        raise PolicyError(f"{self.base_url}{path} failed after {self.max_retries + 1} attempts; last: {problem}")

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with full jitter, capped at 30 s."""
        return self._jitter.uniform(0, min(30.0, self.backoff_s * 2 ** (attempt - 1)))

    async def aclose(self) -> None:
        await self._client.aclose()
