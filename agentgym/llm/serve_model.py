"""An OpenAI-compatible server for a local Hugging Face model (``agentgym serve-model``).

It speaks the subset of vLLM's OpenAI API that agent evaluation needs, with the same
JSON shapes: ``POST /v1/chat/completions``, ``POST /v1/completions``, ``GET /v1/models``
and ``GET /health``. Concurrent requests are batched into one generation (``Batcher``).

For RL trainers, as in vLLM: a completion prompt may be token ids, ``logprobs: 0`` returns
each sampled token's logprob, ``return_token_ids: true`` returns the sampled ids
(``choices[i].token_ids``) and the prompt's (``prompt_token_ids``); and LoRA adapters are
hot-loaded with ``POST /v1/load_lora_adapter`` (``{"lora_name", "lora_path"}``) and removed
with ``POST /v1/unload_lora_adapter``, after which requests may name the adapter as their
``model``. Each adapter is merged into its own copy of the base model (needs ``peft``).

Tool calling, as ``vllm serve --enable-auto-tool-choice --tool-call-parser hermes``: a chat
request's ``tools`` are rendered by the model's chat template (``apply_chat_template(...,
tools=...)``), and with ``tool_choice`` ``"auto"`` (the default when tools are given) the
reply's ``<tool_call>`` JSON blocks (the Hermes / Qwen convention) come back as OpenAI
``tool_calls`` with ``finish_reason: "tool_calls"`` (``"length"`` where ``max_tokens`` cut the
reply) (:mod:`agentgym.contract.tool_parsing`);
``"none"`` leaves the text as it is. Messages may carry ``tool_calls`` (arguments as a JSON
string or an object) and ``tool`` results with their ``tool_call_id``.

Vision-language models (a folder whose config has a ``vision_config``; :mod:`agentgym.llm.vision`)
take ``image_url`` content parts with base64 data URLs; ``usage.prompt_tokens`` counts their image
tokens. An image that is not base64, not an image, or too large is a 400 that says which. A
completion prompt of token ids (a trainer's multi-turn rollout) carries its images beside the ids,
in the shape of vLLM's token prompts: ``"multi_modal_data": {"image": [data URL, ...]}``, the ids
already holding each image's placeholder tokens, expanded as the model's processor expands them
(a count that does not match the images' is a 400).

A chat request with ``stream: true`` gets its reply as OpenAI's server-sent chunks while it is sampled
(:mod:`agentgym.llm.streaming`: a delta as text settles, one with the finish reason, the usage when
``stream_options.include_usage`` asks for it, then ``[DONE]``). A streamed reply that may carry tool calls
(``tools`` with ``tool_choice`` ``"auto"``) or asks for logprobs comes as one delta when it is done, the
calls parsed.

With API keys (``--api-key``, ``--api-key-file``, ``$AGENTGYM_API_KEYS``; docs/security.md), every route but
``GET /health`` needs ``Authorization: Bearer KEY`` (what the ``openai:`` policy sends from ``$OPENAI_API_KEY``),
else 401 with an ``AuthenticationError``; without a key the server listens on loopback only, unless allowed.

Not implemented, and answered with a 400: streaming on ``/v1/completions``, ``tool_choice`` ``"required"`` or a
named function, ``n`` > 1, ``top_logprobs``, completion ``logprobs`` above 0 and ``echo``.
Errors are JSON ``{"error": {"message", "type", "param", "code"}}`` with vLLM's types; bad requests get a
4xx, never a traceback. Needs the ``serve`` extra.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, Literal

import torch
import uvicorn
from fastapi import FastAPI
from fastapi import Request as HTTPRequest
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from agentgym.contract.tool_parsing import parse_tool_calls
from agentgym.images import ImageError, decode_image
from agentgym.llm.generation import (
    DEFAULT_MAX_BATCH_TOKENS,
    DEFAULT_PREFIX_CACHE_TOKENS,
    Batcher,
    Completion,
    Generator,
    Quantization,
    Request,
    RequestError,
    SamplingParams,
    TokenListener,
)
from agentgym.llm.models import resolve_model
from agentgym.llm.streaming import StreamedText, stream_chat
from agentgym.llm.vision import VisionGenerator, VisionPrompt, load_generator
from agentgym.serving.auth import (
    ApiKeys,
    BodyLimit,
    Guard,
    Refusal,
    RequestLimits,
    RequestQuotas,
    check_exposure,
)
from agentgym.serving.calls import ProtocolError


class TokenPrompt(tuple):
    """A prompt given as token ids (a completion request's ``prompt: [int, ...]``), with the data URLs of
    the images its placeholder tokens stand for (``multi_modal_data``; vision-language models only)."""

    def __new__(cls, ids: Any, image_urls: list[str] | None = None) -> TokenPrompt:
        prompt = super().__new__(cls, ids)
        prompt.image_urls = list(image_urls or [])
        return prompt


class ServedGenerator(Generator):
    """A ``Generator`` that also takes ``TokenPrompt`` prompts, checked against the vocabulary and context."""

    @classmethod
    def serving(cls, generator: Generator, model: torch.nn.Module | None = None) -> Generator:
        """The served generator of ``generator``'s model (or ``model``, e.g. with a LoRA adapter merged)."""
        model = generator.model if model is None else model
        if isinstance(generator, VisionGenerator):
            return ServedVisionGenerator(model, generator.processor)
        cache = generator.prefix_cache
        return cls(model, generator.tokenizer, prefix_cache_tokens=cache.max_tokens if cache is not None else 0)

    def encode(self, request: Request) -> list[int]:
        if not isinstance(request.prompt, TokenPrompt):
            return super().encode(request)
        if request.prompt.image_urls and not isinstance(self, VisionGenerator):
            raise RequestError("this model takes no images (multi_modal_data): it is not a vision-language model")
        ids = list(request.prompt)
        vocabulary = self.model.get_input_embeddings().num_embeddings
        if not ids:
            raise RequestError("the prompt is empty")
        if any(not 0 <= token < vocabulary for token in ids):
            raise RequestError(f"prompt token ids must be in 0..{vocabulary - 1}")
        self.check_length(ids)
        if self.context_length is None and request.params.max_new_tokens is None:
            raise RequestError("max_tokens is required: the model's context length is unknown")
        return ids


class ServedVisionGenerator(ServedGenerator, VisionGenerator):
    """A ``VisionGenerator`` that also takes ``TokenPrompt`` prompts, with their images beside the ids."""

    def encode(self, request: Request) -> list[int]:
        ids = super().encode(request)
        if not isinstance(request.prompt, TokenPrompt):
            return ids
        urls = request.prompt.image_urls
        placeholders = sum(token == self.processor.image_token_id for token in ids)
        if not urls:
            if placeholders:
                raise RequestError(f"the prompt holds {placeholders} image tokens but no images (multi_modal_data)")
            return ids
        images = []
        for index, url in enumerate(urls):
            try:
                images.append(decode_image(url))
            except ImageError as error:
                raise RequestError(f"multi_modal_data image {index + 1}: {error}") from None
        try:
            inputs = self.processor.image_inputs(images)
        except (ValueError, TypeError) as error:
            raise RequestError(f"the model's processor rejected the images: {error}") from error
        expected = self.processor.image_tokens(inputs)
        if placeholders == 0 or (expected is not None and placeholders != expected):
            wanted = f"{expected}" if expected is not None else "some"
            raise RequestError(
                f"the prompt holds {placeholders} image tokens; its {len(images)} images take {wanted} "
                "(expand each image's placeholder as the model's processor does)"
            )
        return VisionPrompt(ids, self.processor.model_inputs(ids, [inputs]), urls)


#: The largest request body taken (a vision-language model's chats carry screenshots as data URLs).
DEFAULT_MAX_BODY_BYTES = 64 * 2**20

_ERROR_TYPES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    404: "NotFoundError",
    405: "MethodNotAllowedError",
    413: "PayloadTooLargeError",
    429: "RateLimitError",
    500: "InternalServerError",
}


class APIError(Exception):
    """An error answered as OpenAI-style JSON with an HTTP status."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


class TextPart(BaseModel):
    """A text part of a message's content."""

    type: Literal["text"]
    text: str


class ImageURL(BaseModel):
    """The image of an ``image_url`` part: a ``data:image/...;base64,`` URL (remote URLs are not fetched)."""

    url: str
    detail: str | None = None


class ImagePart(BaseModel):
    """An image part of a message's content (vision-language models only)."""

    type: Literal["image_url"]
    image_url: ImageURL


class FunctionCall(BaseModel):
    """The function of a tool call: its name and arguments (a JSON string, or an object)."""

    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolCall(BaseModel):
    """A tool call in an assistant message."""

    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class FunctionTool(BaseModel):
    """The function a tool declares (OpenAI's shape); ``parameters`` is a JSON schema."""

    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Tool(BaseModel):
    """A tool a chat request offers the model."""

    type: Literal["function"] = "function"
    function: FunctionTool


class ChatMessage(BaseModel):
    """A chat message; text parts are joined into one string, unless the content has images."""

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart | ImagePart] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def text(self) -> str:
        """The content as one string."""
        if isinstance(self.content, list):
            return "\n".join(part.text for part in self.content if isinstance(part, TextPart))
        return self.content or ""

    def for_template(self) -> dict[str, Any]:
        """The message as a chat template takes it: content as one string (None beside tool calls),
        or, where it has images, its parts (OpenAI's shape, for the model's processor)."""
        message: dict[str, Any] = {"role": self.role, "content": self.text()}
        if isinstance(self.content, list) and any(isinstance(part, ImagePart) for part in self.content):
            message["content"] = [part.model_dump(exclude_none=True) for part in self.content]
        if self.tool_calls:
            message["content"] = self.text() or None
            message["tool_calls"] = [call.model_dump() for call in self.tool_calls]
        for key in ("tool_call_id", "name"):
            if getattr(self, key) is not None:
                message[key] = getattr(self, key)
        return message


class SamplingRequest(BaseModel):
    """The sampling fields shared by both endpoints; unknown fields are ignored, as in vLLM."""

    model: str | None = None
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    n: int = 1
    stop: str | list[str] | None = None
    seed: int | None = None
    stream: bool = False


class ChatCompletionRequest(SamplingRequest):
    """The body of ``POST /v1/chat/completions``."""

    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = None
    tools: list[Tool] | None = None
    tool_choice: str | dict[str, Any] | None = None
    stream_options: dict[str, Any] | None = None


class CompletionRequest(SamplingRequest):
    """The body of ``POST /v1/completions``; a list of prompts gives one choice each."""

    prompt: str | list[str] | list[int] | list[list[int]]
    echo: bool = False
    logprobs: int | None = None
    return_token_ids: bool = False
    multi_modal_data: dict[str, list[str]] | None = None


class LoadLoraRequest(BaseModel):
    """The body of ``POST /v1/load_lora_adapter`` (vLLM's)."""

    lora_name: str = Field(min_length=1)
    lora_path: str = Field(min_length=1)


class UnloadLoraRequest(BaseModel):
    """The body of ``POST /v1/unload_lora_adapter`` (vLLM's)."""

    lora_name: str = Field(min_length=1)
    lora_int_id: int | None = None


def create_app(
    generator: Generator,
    model_name: str,
    max_batch_size: int = 32,
    batch_wait_ms: float = 5.0,
    api_keys: Sequence[str] = (),
    max_batch_tokens: int | None = DEFAULT_MAX_BATCH_TOKENS,
    quotas: RequestQuotas | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """The server app for ``generator``, answering to the model name ``model_name``; with ``api_keys``, every
    route but ``/health`` needs one (:class:`~agentgym.serving.auth.Guard`). Batching: see :class:`Batcher`.
    Each client's requests count against ``quotas`` (429 over them); a body over ``max_body_bytes`` gets 413.

    The app's ``state.batcher`` batches the base model's requests, ``state.adapters`` maps
    each loaded LoRA adapter's name to its batcher; they stop when the app shuts down.
    """
    served = ServedGenerator.serving(generator)
    batcher = Batcher(served, max_batch_size, batch_wait_ms, max_batch_tokens)
    adapters: dict[str, Batcher] = {}
    created = int(time.time())

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        for adapter in [batcher, *adapters.values()]:
            await adapter.aclose()

    app = FastAPI(title=f"agentgym serve-model: {model_name}", lifespan=lifespan)
    app.state.batcher = batcher
    app.state.adapters = adapters
    # The last added runs first: the key names the client, whose quotas apply, before the body is read.
    app.add_middleware(BodyLimit, max_body_bytes=max_body_bytes, refuse=_limit_response)
    app.add_middleware(RequestLimits, quotas=quotas or RequestQuotas(), render=_refusal_body)
    app.add_middleware(Guard, keys=ApiKeys(api_keys) if api_keys else None, render=_refusal_body)

    @app.exception_handler(APIError)
    async def api_error(_: HTTPRequest, error: APIError) -> JSONResponse:
        return _error_response(error.status, error.message, error.param)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: HTTPRequest, error: RequestValidationError) -> JSONResponse:
        problems = []
        for problem in error.errors():
            where = ".".join(str(part) for part in problem["loc"][1:])
            problems.append(f"{where}: {problem['msg']}" if where else problem["msg"])
        return _error_response(400, "invalid request: " + "; ".join(problems))

    @app.exception_handler(HTTPException)
    async def http_error(_: HTTPRequest, error: HTTPException) -> JSONResponse:
        return _error_response(error.status_code, str(error.detail))

    @app.exception_handler(Exception)
    async def internal_error(_: HTTPRequest, error: Exception) -> JSONResponse:
        return _error_response(500, f"internal error: {type(error).__name__}: {error}")

    async def complete(
        body: SamplingRequest,
        prompt: Any,
        max_tokens: int | None,
        tools: list[dict[str, Any]] | None = None,
        on_tokens: TokenListener | None = None,
    ) -> Completion:
        """Check the request's common fields and run it through the batcher."""
        target = batcher
        if body.model is not None and body.model != model_name:
            if body.model not in adapters:
                raise APIError(404, f"The model `{body.model}` does not exist.", "model")
            target = adapters[body.model]
        if body.n != 1:
            raise APIError(400, "only n=1 is supported", "n")
        stop = [body.stop] if isinstance(body.stop, str) else body.stop or []
        try:
            params = SamplingParams(
                temperature=1.0 if body.temperature is None else body.temperature,
                top_p=1.0 if body.top_p is None else body.top_p,
                max_new_tokens=max_tokens,
                stop=tuple(stop),
                seed=body.seed,
            )
            return await target.submit(Request(prompt, params, tools, on_tokens))
        except RequestError as error:
            raise APIError(400, str(error)) from error

    @app.post("/v1/chat/completions")
    async def chat_completions(body: ChatCompletionRequest) -> dict[str, Any]:
        """Reply to a chat, formatted with the model's chat template."""
        if body.top_logprobs:
            raise APIError(400, "top_logprobs is not supported", "top_logprobs")
        choice = body.tool_choice if body.tool_choice is not None else ("auto" if body.tools else "none")
        if choice not in ("auto", "none"):
            raise APIError(400, 'only tool_choice "auto" and "none" are supported', "tool_choice")
        tools = [tool.model_dump(exclude_none=True) for tool in body.tools] if body.tools else None
        messages = [message.for_template() for message in body.messages]
        max_tokens = body.max_completion_tokens or body.max_tokens
        if body.stream and not body.logprobs and not (tools and choice == "auto"):
            # Token by token; a reply whose tool calls or logprobs are sent comes whole when done (below).
            stop = [body.stop] if isinstance(body.stop, str) else body.stop or []
            decode = partial(served.tokenizer.decode, skip_special_tokens=True)
            return await stream_chat(
                {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": model_name},
                lambda listener: complete(body, messages, max_tokens, tools, listener),
                StreamedText(decode, stop),
                bool((body.stream_options or {}).get("include_usage")),
                lambda completion: _usage([completion]),
            )
        completion = await complete(body, messages, max_tokens, tools)
        logprobs = {"content": _token_logprobs(generator, completion)} if body.logprobs else None
        message: dict[str, Any] = {"role": "assistant", "content": completion.text}
        finish_reason = completion.finish_reason
        if tools and choice == "auto":
            parsed = parse_tool_calls(completion.text)
            if parsed.tool_calls:
                message = {"role": "assistant", "content": parsed.content, "tool_calls": parsed.tool_calls}
                # As vLLM: a reply cut by max_tokens stays "length", so a client can tell a truncated call.
                finish_reason = "tool_calls" if finish_reason == "stop" else finish_reason
        response = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model_name,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": logprobs,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": _usage([completion]),
        }
        if body.stream:
            return _chat_stream(response, bool((body.stream_options or {}).get("include_usage")))
        return response

    @app.post("/v1/completions")
    async def completions(body: CompletionRequest) -> dict[str, Any]:
        """Continue plain-text prompts."""
        if body.stream:
            raise APIError(400, "streaming completions are not supported by this server; send stream=false", "stream")
        if body.echo:
            raise APIError(400, "echo is not supported", "echo")
        if body.logprobs:
            raise APIError(400, "only logprobs=0 (each sampled token's own logprob) is supported", "logprobs")
        if not body.prompt:
            raise APIError(400, "prompt must not be empty", "prompt")
        media = body.multi_modal_data or {}
        if set(media) - {"image"}:
            raise APIError(400, "multi_modal_data takes only 'image' (a list of data URLs)", "multi_modal_data")
        if media.get("image") and not (isinstance(body.prompt, list) and isinstance(body.prompt[0], int)):
            raise APIError(400, "multi_modal_data goes with one prompt of token ids", "multi_modal_data")
        if isinstance(body.prompt, str):
            prompts: list[Any] = [body.prompt]
        elif isinstance(body.prompt[0], int):
            prompts = [TokenPrompt(body.prompt, media.get("image"))]
        elif isinstance(body.prompt[0], list):
            prompts = [TokenPrompt(ids) for ids in body.prompt]
        else:
            prompts = list(body.prompt)
        results = await asyncio.gather(*(complete(body, prompt, body.max_tokens) for prompt in prompts))
        choices = []
        for i, (prompt, result) in enumerate(zip(prompts, results)):
            choice: dict[str, Any] = {"index": i, "text": result.text, "logprobs": None}
            if body.logprobs is not None:
                choice["logprobs"] = _completion_logprobs(generator, result)
            choice["finish_reason"] = result.finish_reason
            if body.return_token_ids:
                choice["token_ids"] = result.token_ids
                choice["prompt_token_ids"] = (
                    list(prompt)
                    if isinstance(prompt, TokenPrompt)
                    else served.encode(Request(prompt, SamplingParams(max_new_tokens=1)))
                )
            choices.append(choice)
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": model_name,
            "choices": choices,
            "usage": _usage(results),
        }

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        """The base model and the loaded LoRA adapters."""
        base = {"id": model_name, "root": model_name, "parent": None}
        entries = [base] + [{"id": name, "root": name, "parent": model_name} for name in adapters]
        common = {"object": "model", "created": created, "owned_by": "agentgym"}
        common["max_model_len"] = generator.context_length
        return {"object": "list", "data": [entry | common for entry in entries]}

    @app.post("/v1/load_lora_adapter")
    async def load_lora_adapter(body: LoadLoraRequest) -> Response:
        """Load a peft LoRA adapter from a folder and serve it under ``lora_name``."""
        if body.lora_name == model_name or body.lora_name in adapters:
            raise APIError(400, f"The lora adapter '{body.lora_name}' has already been loaded.", "lora_name")
        try:
            merged = await asyncio.to_thread(_merge_adapter, generator, body.lora_path)
        except (OSError, ValueError) as error:
            raise APIError(400, f"cannot load the LoRA adapter at {body.lora_path}: {error}", "lora_path") from error
        adapters[body.lora_name] = Batcher(
            ServedGenerator.serving(generator, merged), max_batch_size, batch_wait_ms, max_batch_tokens
        )
        return Response(f"Success: LoRA adapter '{body.lora_name}' added successfully.", media_type="text/plain")

    @app.post("/v1/unload_lora_adapter")
    async def unload_lora_adapter(body: UnloadLoraRequest) -> Response:
        """Stop serving a loaded adapter."""
        adapter = adapters.pop(body.lora_name, None)
        if adapter is None:
            raise APIError(404, f"The lora adapter '{body.lora_name}' cannot be found.", "lora_name")
        await adapter.aclose()
        return Response(f"Success: LoRA adapter '{body.lora_name}' removed successfully.", media_type="text/plain")

    @app.get("/health")
    async def health() -> Response:
        """200 while the server is up (an empty body, as vLLM's)."""
        return Response(status_code=200)

    return app


def serve(
    path: str | Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    device: str = "auto",
    dtype: str | torch.dtype | None = None,
    quantize: Quantization | None = None,
    model_name: str | None = None,
    max_batch_size: int = 32,
    batch_wait_ms: float = 5.0,
    max_batch_tokens: int | None = DEFAULT_MAX_BATCH_TOKENS,
    prefix_cache_tokens: int = DEFAULT_PREFIX_CACHE_TOKENS,
    log_level: str = "info",
    api_keys: Sequence[str] = (),
    allow_unauthenticated: bool = False,
    quotas: RequestQuotas | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> None:
    """Load the model ``path`` (a folder, a GGUF file or a packaged model's name: :func:`resolve_model`) and serve
    it until interrupted.

    ``model_name`` (default: the folder's name, the GGUF file's stem or the packaged model's name) is the
    ``model`` that requests name. ``quantize`` and ``prefix_cache_tokens``: see ``Generator.from_pretrained``;
    ``max_batch_tokens``: see :class:`Batcher`. ``api_keys``, ``quotas``, ``max_body_bytes``: see
    :func:`create_app`; without a key, a ``host``
    beyond loopback is refused (``ValueError``) unless ``allow_unauthenticated``
    (:func:`~agentgym.serving.auth.check_exposure`).
    """
    warning = check_exposure(
        host, api_keys, allow_unauthenticated, exposes="use the model (its compute, its LoRA routes)"
    )
    if warning:
        print(f"agentgym serve-model: {warning}", file=sys.stderr, flush=True)
    source = resolve_model(path)
    generator = load_generator(source.folder, device, dtype, quantize, prefix_cache_tokens)
    app = create_app(
        generator,
        model_name or source.name,
        max_batch_size,
        batch_wait_ms,
        api_keys,
        max_batch_tokens,
        quotas,
        max_body_bytes,
    )
    uvicorn.run(app, host=host, port=port, log_level=log_level)


def _error(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """An error in OpenAI's (and vLLM's) shape."""
    return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "APIError"), "param": param, "code": status}}


def _error_response(status: int, message: str, param: str | None = None) -> JSONResponse:
    return JSONResponse(_error(status, message, param), status_code=status)


def _limit_response(error: ProtocolError) -> JSONResponse:
    return _error_response(error.status, error.message)


def _refusal_body(refusal: Refusal) -> bytes:
    return json.dumps(_error(refusal.status, refusal.message)).encode()


def _chat_stream(response: dict[str, Any], include_usage: bool) -> StreamingResponse:
    """A finished chat completion as OpenAI's ``chat.completion.chunk`` server-sent events."""
    head = {key: response[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = response["choices"][0]
    delta = dict(choice["message"])
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(delta["tool_calls"])]
    chunks = [
        head | {"choices": [{"index": 0, "delta": delta, "logprobs": choice["logprobs"], "finish_reason": None}]},
        head | {"choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}]},
    ]
    if include_usage:
        chunks.append(head | {"choices": [], "usage": response["usage"]})
    events = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return StreamingResponse(iter([events]), media_type="text/event-stream")


def _usage(results: list[Completion]) -> dict[str, Any]:
    prompt_tokens = sum(result.prompt_tokens for result in results)
    completion_tokens = sum(result.completion_tokens for result in results)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        # As OpenAI's API and vLLM report them: the prompt tokens served from the prefix cache.
        "prompt_tokens_details": {"cached_tokens": sum(result.cached_tokens for result in results)},
    }


def _merge_adapter(generator: Generator, path: str) -> torch.nn.Module:
    """A copy of the base model with the peft LoRA adapter in ``path`` merged into its weights."""
    from peft import PeftModel

    if not (Path(path) / "adapter_config.json").is_file():
        raise ValueError("no adapter_config.json there (save the adapter with peft's save_pretrained)")
    model = PeftModel.from_pretrained(copy.deepcopy(generator.model), path)
    return model.merge_and_unload().eval()


def _completion_logprobs(generator: Generator, completion: Completion) -> dict[str, Any]:
    """Completion logprobs in OpenAI's legacy shape for ``logprobs: 0``: as vLLM, each position's
    ``top_logprobs`` holds the ``logprobs + 1`` = 1 best candidates, here the sampled token's own."""
    tokens = [generator.tokenizer.decode([token_id]) for token_id in completion.token_ids]
    offsets, offset = [], 0
    for token in tokens:
        offsets.append(offset)
        offset += len(token)
    top = [{token: logprob} for token, logprob in zip(tokens, completion.logprobs)]
    return {"tokens": tokens, "token_logprobs": completion.logprobs, "top_logprobs": top, "text_offset": offsets}


def _token_logprobs(generator: Generator, completion: Completion) -> list[dict[str, Any]]:
    """Chat logprobs in OpenAI's shape, one entry per sampled token (no alternatives)."""
    entries = []
    for token_id, logprob in zip(completion.token_ids, completion.logprobs):
        token = generator.tokenizer.decode([token_id])
        entries.append({"token": token, "logprob": logprob, "bytes": list(token.encode()), "top_logprobs": []})
    return entries
