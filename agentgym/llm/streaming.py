"""Streaming a chat completion as it is sampled: OpenAI's ``chat.completion.chunk`` server-sent events.

``serve-model`` hands the batcher a listener (``Request.on_tokens``) that the generating thread calls after each
sampled token; :func:`stream_chat` turns those calls into content deltas on the event loop. The text of a
partial completion can still change at its end, so :class:`StreamedText` holds back an incomplete character
and anything that may be the start of a stop string: what a client has been sent is always a prefix of the
completion's final text.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from fastapi.responses import StreamingResponse

from agentgym.llm.generation import Completion, TokenListener


class StreamedText:
    """The part of a completion's text that is final while its tokens arrive, as deltas."""

    def __init__(self, decode: Callable[[list[int]], str], stops: Sequence[str] = ()) -> None:
        self.decode = decode
        self.stops = tuple(stops)
        #: The text sent so far.
        self.sent = ""

    def delta(self, token_ids: list[int]) -> str:
        """The text that ``token_ids`` settle beyond what was sent (often ""), now counted as sent."""
        text = self.decode(token_ids).rstrip("\ufffd")  # a character whose bytes have not all arrived
        for stop in self.stops:
            if (at := text.find(stop)) >= 0:
                text = text[:at]
        text = text[: len(text) - self._held_back(text)]
        if not text.startswith(self.sent):
            return ""  # the decoding of earlier tokens changed (rare): wait for the final text
        delta, self.sent = text[len(self.sent) :], text
        return delta

    def rest(self, final_text: str) -> str:
        """What the completion's final text adds to what was sent."""
        rest = final_text[len(self.sent) :] if final_text.startswith(self.sent) else ""
        self.sent += rest
        return rest

    def _held_back(self, text: str) -> int:
        """The length of the longest end of ``text`` that a stop string begins with."""
        return max(
            (size for stop in self.stops for size in range(1, len(stop)) if text.endswith(stop[:size])), default=0
        )


async def stream_chat(
    head: dict[str, Any],
    run: Callable[[TokenListener], Any],
    text: StreamedText,
    include_usage: bool,
    usage: Callable[[Completion], dict[str, Any]],
) -> StreamingResponse:
    """Start ``run(listener)`` (a coroutine returning the ``Completion``) and stream its reply as it is sampled.

    ``head`` holds the chunks' ``id``, ``created`` and ``model``. The request's errors (a prompt too long, an
    unknown model) are raised here, before the response starts, as far as they come before the first token.
    """
    loop = asyncio.get_running_loop()
    updates: asyncio.Queue[list[int]] = asyncio.Queue()

    def listener(token_ids: list[int]) -> None:
        loop.call_soon_threadsafe(updates.put_nowait, list(token_ids))

    task = asyncio.ensure_future(run(listener))
    first = asyncio.ensure_future(updates.get())
    await asyncio.wait({task, first}, return_when=asyncio.FIRST_COMPLETED)
    if task.done() and task.exception() is not None:
        first.cancel()
        raise task.exception()  # type: ignore[misc]
    head = head | {"object": "chat.completion.chunk"}
    return StreamingResponse(
        _events(head, task, first, updates, text, include_usage, usage), media_type="text/event-stream"
    )


async def _events(
    head: dict[str, Any],
    task: asyncio.Future[Completion],
    pending: asyncio.Future[list[int]] | None,
    updates: asyncio.Queue[list[int]],
    text: StreamedText,
    include_usage: bool,
    usage: Callable[[Completion], dict[str, Any]],
) -> AsyncIterator[str]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return _event(head | {"choices": [choice]})

    try:
        yield chunk({"role": "assistant", "content": ""})
        while True:
            pending = pending or asyncio.ensure_future(updates.get())
            done, _ = await asyncio.wait({pending, task}, return_when=asyncio.FIRST_COMPLETED)
            if pending not in done:
                break
            if delta := text.delta(pending.result()):
                yield chunk({"content": delta})
            pending = None
        try:
            completion = task.result()
        except Exception as error:  # the model failed mid-reply: say so in the stream, as OpenAI's API does
            yield _event({"error": {"message": f"{type(error).__name__}: {error}", "type": "InternalServerError"}})
        else:
            if rest := text.rest(completion.text):
                yield chunk({"content": rest})
            yield chunk({}, completion.finish_reason)
            if include_usage:
                yield _event(head | {"choices": [], "usage": usage(completion)})
        yield "data: [DONE]\n\n"
    finally:
        for future in (pending, task):
            if future is not None and not future.done():
                future.cancel()  # the client left: a queued request is dropped before it runs


def _event(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data)}\n\n"
