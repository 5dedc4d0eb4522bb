"""Batched text generation with a Hugging Face causal LM, and a batcher for concurrent callers.

``Generator`` decodes a batch of requests in one padded forward pass per token. Each
request is a chat (messages, formatted with the tokenizer's chat template) or a plain
prompt, with its own sampling params: temperature (0 is greedy), top-p, a token limit,
stop strings and a seed. ``Batcher`` lets many coroutines share one ``Generator``: it
collects concurrent requests into batches and runs them in a worker thread. The
in-process policy (``agentgym.llm.policies.hf``) and the model server (``agentgym.llm.serve_model``)
both sit on it.

Logprobs are the log-softmax of the model's raw logits (temperature 1, before top-p),
like vLLM's default ``raw_logprobs`` mode: they score each sampled token under the model
itself, whatever sampling params the request used.

Needs the ``hf`` extra (torch, transformers).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import warnings
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from jinja2 import TemplateError
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache, PreTrainedModel, PreTrainedTokenizerBase
from transformers.cache_utils import DynamicLayer

from agentgym.contract.tool_parsing import template_messages
from agentgym.images import count_images
from agentgym.llm.prefix_cache import PrefixCache, PrefixHit

FinishReason = Literal["stop", "length"]
#: Weight quantizations a CPU model can be loaded with (:func:`quantize_int8`).
Quantization = Literal["int8"]
#: Called from the generating thread with a request's sampled tokens so far, after each token that does not end it.
TokenListener = Callable[[list[int]], None]


class RequestError(ValueError):
    """A request the model cannot serve as given (bad messages, prompt too long)."""


class ContextLengthError(RequestError):
    """A prompt that leaves no room in the model's context for a single new token."""


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion.

    ``temperature`` 0 is greedy decoding. ``max_new_tokens`` None means up to the
    model's context length. Generation ends at the first stop string (which the text
    leaves out) or end-of-sequence token. The same ``seed`` gives the same sample,
    whatever else is in the batch; None draws a fresh one.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise RequestError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise RequestError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise RequestError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if any(not stop for stop in self.stop):
            raise RequestError("stop strings must not be empty")


@dataclass(frozen=True)
class Request:
    """A chat (a list of ``{"role", "content"}`` messages) or a plain-text prompt.

    ``tools`` (OpenAI function tools) go to the chat template with the chat, which lists
    them where the model expects them; tool-call arguments in the messages may be JSON
    strings (as the OpenAI API sends them) or mappings. ``on_tokens`` follows the
    completion as it is sampled (a server streaming it).
    """

    prompt: str | Sequence[Mapping[str, Any]]
    params: SamplingParams = SamplingParams()
    tools: Sequence[Mapping[str, Any]] | None = None
    on_tokens: TokenListener | None = field(default=None, compare=False)


@dataclass
class Completion:
    """One generated completion.

    ``token_ids`` are all sampled tokens, including the end-of-sequence token or the
    token that completed a stop string, so a trainer sees exactly what was sampled;
    ``logprobs`` has one entry per token. ``text`` is their decoding without the
    end-of-sequence token and other special tokens, cut before the first stop string.
    ``cached_tokens`` of the prompt's tokens came from the prefix cache rather than a forward pass.
    """

    text: str
    token_ids: list[int]
    logprobs: list[float]
    prompt_tokens: int
    finish_reason: FinishReason
    cached_tokens: int = 0

    @property
    def completion_tokens(self) -> int:
        """The number of sampled tokens."""
        return len(self.token_ids)


@dataclass
class _Row:
    """The decoding state of one request in a batch."""

    params: SamplingParams
    limit: int
    rng: torch.Generator | None
    listener: TokenListener | None = None
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    text: str | None = None
    finish_reason: FinishReason | None = None


def resolve_device_and_dtype(device: str, dtype: str | torch.dtype | None) -> tuple[str, str | torch.dtype]:
    """``"auto"`` device -> CUDA if available, else CPU; no dtype -> float32 on CPU, bfloat16 on CUDA; a dtype's
    name -> the ``torch.dtype`` (``"auto"`` stays: keep the checkpoint's)."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype is None:
        dtype = torch.float32 if device == "cpu" else torch.bfloat16
    elif isinstance(dtype, str) and dtype != "auto":
        dtype = getattr(torch, dtype)
    return device, dtype


def quantize_int8(model: PreTrainedModel) -> PreTrainedModel:
    """``model`` (on CPU, in place) with its linear layers' weights in int8 per output channel and their inputs
    quantized on the fly: torch's dynamic quantization, whose x86 kernels run a small model's forward passes
    2-3 times faster than float32 on a CPU, at about a quantised GGUF file's accuracy. Embeddings stay float."""
    if model.device.type != "cpu":
        raise ValueError(f"int8 quantization runs on a CPU; the model is on {model.device}")
    with warnings.catch_warnings():
        # torch 2.10+ announces that quantized tensors will go; its dynamic quantization still runs (see docs).
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        spec = {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}
        return torch.ao.quantization.quantize_dynamic(model, spec, dtype=torch.qint8, inplace=True)


class Generator:
    """A causal LM and its tokenizer, generating for batches of requests.

    ``prefix_cache_tokens`` > 0 keeps the keys and values of that many recent tokens to reuse for prompts that
    start alike (:mod:`agentgym.llm.prefix_cache`; a multi-turn episode's next prompt starts with its last);
    leave it 0 for a model whose weights change (a trainer's), or call ``prefix_cache.clear()`` when they do.
    Not thread-safe: use it from one thread at a time (``Batcher`` runs it in its own).
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        compute_dtype: torch.dtype | None = None,
        prefix_cache_tokens: int = 0,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.device = model.device
        #: The dtype forward passes run in under autocast (e.g. bfloat16 over float32 weights); None: the weights'.
        self.compute_dtype = compute_dtype
        #: Tokens that end a completion (the model's end-of-turn tokens as well as EOS).
        self.eos_token_ids = _eos_token_ids(model, tokenizer)
        self.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos_token_ids)
        #: Tokens never sampled (a vision-language model's image placeholders, which stand for image features).
        self.banned_token_ids: list[int] = []
        #: The most tokens (prompt + completion) the model takes; None if unknown.
        self.context_length: int | None = getattr(model.config, "max_position_embeddings", None)
        self.prefix_cache = PrefixCache(prefix_cache_tokens) if prefix_cache_tokens > 0 else None
        #: The keyword and output field of the model's KV cache: ``cache`` where transformers renamed
        #: ``past_key_values`` (5.2x warns of the old name, which goes in 5.40), else ``past_key_values``.
        self._cache_name = _cache_name(model)

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        device: str = "auto",
        dtype: str | torch.dtype | None = None,
        quantize: Quantization | None = None,
        prefix_cache_tokens: int = 0,
    ) -> Generator:
        """Load a model and tokenizer saved with ``save_pretrained`` in the folder ``path``.

        ``device`` is ``"cpu"``, ``"cuda"`` (or ``"cuda:N"``), or ``"auto"`` (CUDA if
        available). ``dtype`` (a ``torch.dtype`` or its name, e.g. ``"bfloat16"``;
        ``"auto"`` keeps the checkpoint's) defaults to float32 on CPU and bfloat16 on CUDA.
        ``quantize="int8"``: :func:`quantize_int8` (CPU only). ``prefix_cache_tokens``: as for the constructor.
        """
        device, dtype = resolve_device_and_dtype(device, dtype)
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device)
        if quantize == "int8":
            model = quantize_int8(model)
        elif quantize is not None:
            raise ValueError(f"unknown quantization {quantize!r}; expected int8")
        return cls(model, tokenizer, prefix_cache_tokens=prefix_cache_tokens)

    def encode(self, request: Request) -> list[int]:
        """The prompt's token ids; a chat goes through the chat template.

        Raises ``RequestError`` for malformed messages, a chat the template rejects, or a
        prompt that leaves no room in the context for a single new token.
        """
        if isinstance(request.prompt, str):
            ids = self.tokenizer(request.prompt).input_ids
        else:
            ids = self.tokenizer(self._chat_text(request.prompt, request.tools), add_special_tokens=False).input_ids
        if not ids:
            raise RequestError("the prompt is empty")
        if self.context_length is None and request.params.max_new_tokens is None:
            raise RequestError("max_new_tokens is required: the model's context length is unknown")
        self.check_length(ids)
        return ids

    def check_length(self, ids: Sequence[int]) -> None:
        """Raise :class:`ContextLengthError` when the prompt ``ids`` leave no room in the context for a new token."""
        if self.context_length is not None and len(ids) >= self.context_length:
            raise ContextLengthError(
                f"the prompt has {len(ids)} tokens; the model's context length is {self.context_length}"
            )

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        """Generate one completion per request, all in one batch."""
        prompts = [self.encode(request) for request in requests]
        return self.generate_tokens(
            prompts, [request.params for request in requests], [request.on_tokens for request in requests]
        )

    @torch.inference_mode()
    def generate_tokens(
        self,
        prompts: Sequence[list[int]],
        params: Sequence[SamplingParams],
        listeners: Sequence[TokenListener | None] | None = None,
    ) -> list[Completion]:
        """Generate one completion per prompt (token ids), decoding the batch together.

        Prompts are left-padded; each row stops at its own limit, stop string or EOS, and
        the batch stops when every row has. ``listeners`` (one per prompt, or None) follow the rows.
        """
        with autocast(self.device, self.compute_dtype):
            return self._generate_tokens(self._rows(prompts, params, listeners), prompts)

    def _rows(
        self,
        prompts: Sequence[list[int]],
        params: Sequence[SamplingParams],
        listeners: Sequence[TokenListener | None] | None,
    ) -> list[_Row]:
        listeners = listeners or [None] * len(prompts)
        return [
            self._row(len(prompt), row_params, listener)
            for prompt, row_params, listener in zip(prompts, params, listeners)
        ]

    def _generate_tokens(self, rows: list[_Row], prompts: Sequence[list[int]]) -> list[Completion]:
        cache = self.prefix_cache
        hits = [cache.lookup(prompt) for prompt in prompts] if cache is not None else [PrefixHit(0)] * len(rows)
        # Row i: [padding | its cached prefix] (``cached`` wide), then [padding | the rest of its prompt] (``width``).
        cached = max(hit.length for hit in hits)
        rests = [prompt[hit.length :] for prompt, hit in zip(prompts, hits)]
        width = max(len(rest) for rest in rests)
        input_ids = torch.full((len(rows), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(rows), cached + width), dtype=torch.long)
        position_ids = torch.zeros((len(rows), width), dtype=torch.long)
        for i, (rest, hit) in enumerate(zip(rests, hits)):
            input_ids[i, width - len(rest) :] = torch.tensor(rest)
            attention_mask[i, cached - hit.length : cached] = 1
            attention_mask[i, cached + width - len(rest) :] = 1
            position_ids[i, width - len(rest) :] = torch.arange(hit.length, len(prompts[i]))
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids}
        final_cache = self._sample_rows(
            rows, {name: tensor.to(self.device) for name, tensor in inputs.items()}, _batch_cache(hits, cached)
        )
        if cache is not None:
            self._remember(prompts, rows, hits, (cached, width), final_cache)
        completions = self._completions(rows, prompts)
        for completion, hit in zip(completions, hits):
            completion.cached_tokens = hit.length
        return completions

    def _remember(
        self,
        prompts: Sequence[list[int]],
        rows: list[_Row],
        hits: list[PrefixHit],
        layout: tuple[int, int],
        cache: Any,
    ) -> None:
        """Store each row's keys and values (its prompt, then the sampled tokens fed back) in the prefix cache;
        ``layout`` is the batch's (cached, width) as :meth:`_generate_tokens` laid it out."""
        assert self.prefix_cache is not None
        if not all(type(layer) is DynamicLayer for layer in getattr(cache, "layers", [None])):
            self.prefix_cache = None  # sliding windows or another cache layout: positions would not line up
            return
        cached, width = layout
        for i, (prompt, row, hit) in enumerate(zip(prompts, rows, hits)):
            fed = len(row.token_ids) - 1  # the last sampled token was never fed back
            positions = torch.cat(
                [
                    torch.arange(cached - hit.length, cached),
                    torch.arange(cached + width - (len(prompt) - hit.length), cached + width + fed),
                ]
            ).to(self.device)
            layers = [
                (layer.keys[i].index_select(1, positions), layer.values[i].index_select(1, positions))
                for layer in cache.layers
            ]
            self.prefix_cache.store(prompt + row.token_ids[:fed], layers)

    def _sample_rows(self, rows: list[_Row], inputs: dict[str, Any], cache: Any = None) -> Any:
        """Sample every row to its end and return the model's cache: ``inputs`` is the first forward pass's
        (the prompts', after ``cache`` where given); each later pass feeds one token per row, with the attention
        mask and positions grown by one where ``inputs`` has them (positions may be 1-D per row or M-RoPE's
        3 x rows x tokens; without them the model counts positions from its cache)."""
        while True:
            output = self.model(**inputs, **{self._cache_name: cache}, use_cache=True, logits_to_keep=1)
            cache = getattr(output, self._cache_name)
            tokens, logprobs = self._next_tokens(output.logits[:, -1], rows)
            for row, token, logprob in zip(rows, tokens, logprobs):
                if row.finish_reason is None:
                    self._append(row, token, logprob)
            if all(row.finish_reason is not None for row in rows):
                return cache
            # Finished rows are fed padding until the whole batch is done.
            next_ids = [self.pad_token_id if row.finish_reason else token for row, token in zip(rows, tokens)]
            step: dict[str, Any] = {"input_ids": torch.tensor(next_ids, device=self.device)[:, None]}
            if "attention_mask" in inputs:
                mask = inputs["attention_mask"]
                step["attention_mask"] = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=-1)
            if "position_ids" in inputs:
                step["position_ids"] = inputs["position_ids"][..., -1:] + 1
            inputs = step

    def _completions(self, rows: list[_Row], prompts: Sequence[list[int]]) -> list[Completion]:
        return [
            Completion(
                text=row.text if row.text is not None else self._decode(row.token_ids),
                token_ids=row.token_ids,
                logprobs=row.logprobs,
                prompt_tokens=len(prompt),
                finish_reason=row.finish_reason or "length",
            )
            for row, prompt in zip(rows, prompts)
        ]

    def _chat_text(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None) -> str:
        for message in messages:
            if not (isinstance(message, Mapping) and isinstance(message.get("role"), str)):
                raise RequestError(f"a message must have a string role and content, got {message!r}")
            if isinstance(message.get("content"), list) and count_images([message]):
                raise RequestError("this model takes no images: it is a text model, not a vision-language model")
            # Content may be left out only by an assistant message that calls tools.
            if not isinstance(message.get("content"), str) and not (
                message.get("content") is None and message.get("tool_calls")
            ):
                raise RequestError(f"a message must have a string role and content, got {message!r}")
        chat = template_messages(messages)
        try:
            tools_kwarg = {"tools": list(tools)} if tools else {}
            return self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False, **tools_kwarg)
        except TemplateError as error:
            raise RequestError(f"the chat template rejected the messages: {error}") from error

    def _row(self, prompt_tokens: int, params: SamplingParams, listener: TokenListener | None = None) -> _Row:
        limit = params.max_new_tokens
        if self.context_length is not None:
            room = self.context_length - prompt_tokens
            limit = room if limit is None else min(limit, room)
        assert limit is not None, "encode() rejects requests without a limit"
        rng = None
        if params.temperature > 0:
            rng = torch.Generator(device=self.device)
            if params.seed is None:
                rng.seed()
            else:
                rng.manual_seed(params.seed % 2**64)
        return _Row(params=params, limit=limit, rng=rng, listener=listener)

    def _next_tokens(self, logits: torch.Tensor, rows: list[_Row]) -> tuple[list[int], list[float]]:
        """Pick each row's next token (greedy or sampled) and its raw-logit logprob.

        The sampled rows are drawn together (one batched softmax, top-p and draw), with
        each row's noise from its own generator, so a row's sample depends only on its seed.
        Tokens in :attr:`banned_token_ids` are never picked; logprobs stay the raw logits'.
        """
        logits = logits.float()
        if self.banned_token_ids:
            banned = torch.tensor(self.banned_token_ids, device=logits.device)
            choosing = logits.index_fill(-1, banned, float("-inf"))
        else:
            choosing = logits
        tokens = choosing.argmax(dim=-1)
        sampled = [i for i, row in enumerate(rows) if row.finish_reason is None and row.rng is not None]
        if sampled:
            vocabulary = logits.shape[-1]
            noise = torch.stack([torch.rand(vocabulary, generator=rows[i].rng, device=logits.device) for i in sampled])
            choice = _sample([rows[i].params for i in sampled], choosing[sampled], noise)
            tokens[sampled] = choice
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, tokens[:, None])[:, 0]
        return tokens.tolist(), logprobs.tolist()

    def _append(self, row: _Row, token: int, logprob: float) -> None:
        """Add a sampled token to a row and decide whether the row is finished."""
        row.token_ids.append(token)
        row.logprobs.append(logprob)
        if token in self.eos_token_ids:
            row.text, row.finish_reason = self._decode(row.token_ids[:-1]), "stop"
        elif row.params.stop:
            text = self._decode(row.token_ids)
            cut = min((i for i in (text.find(stop) for stop in row.params.stop) if i >= 0), default=-1)
            if cut >= 0:
                row.text, row.finish_reason = text[:cut], "stop"
        if row.finish_reason is None and len(row.token_ids) >= row.limit:
            row.finish_reason = "length"
        if row.finish_reason is None and row.listener is not None:
            row.listener(row.token_ids)

    def _decode(self, token_ids: list[int]) -> str:
        return self.tokenizer.decode(token_ids, skip_special_tokens=True)


def _cache_name(model: PreTrainedModel) -> str:
    """``cache`` if the forward pass of ``model`` (under a PEFT wrapper, its base model) takes it, else
    ``past_key_values``."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def _batch_cache(hits: list[PrefixHit], cached: int) -> DynamicCache | None:
    """A batch's cache holding each row's cached prefix, right-aligned in ``cached`` positions (zeros before, which
    the attention mask hides); None when no row has one."""
    if not cached:
        return None
    template = next(hit.layers for hit in hits if hit.layers is not None)
    layers = []
    for index, (keys, values) in enumerate(template):
        batch_keys = keys.new_zeros((len(hits), keys.shape[0], cached, keys.shape[2]))
        batch_values = values.new_zeros((len(hits), values.shape[0], cached, values.shape[2]))
        for row, hit in enumerate(hits):
            if hit.layers is not None:
                batch_keys[row, :, cached - hit.length :] = hit.layers[index][0]
                batch_values[row, :, cached - hit.length :] = hit.layers[index][1]
        layers.append((batch_keys, batch_values))
    return DynamicCache(layers)


def autocast(device: torch.device, dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
    """``torch.autocast`` to ``dtype`` on ``device``'s kind, or nothing when ``dtype`` is None."""
    return torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()


def _sample(params: Sequence[SamplingParams], logits: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """Sample one token per row with temperature and nucleus (top-p) filtering.

    ``noise`` holds a uniform draw per row and token: the sample is the token with the
    largest ``p / E``, ``E = -log(noise)`` exponential, which picks each token with its
    probability ``p`` (the exponential race, equivalent to a multinomial draw).
    """
    temperature = torch.tensor([row.temperature for row in params], device=logits.device)[:, None]
    probs = torch.softmax(logits / temperature, dim=-1)
    top_p = torch.tensor([row.top_p for row in params], device=logits.device)[:, None]
    if bool((top_p < 1).any()):
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        # Keep the smallest prefix whose mass reaches top_p (the top token always stays).
        sorted_probs[sorted_probs.cumsum(-1) - sorted_probs >= top_p] = 0
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_probs)
    race = probs / -torch.log(noise.clamp(min=torch.finfo(noise.dtype).tiny))
    return race.argmax(dim=-1)


def _eos_token_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> frozenset[int]:
    ids: set[int] = set()
    # A VLM's config may name none itself (Qwen2-VL's in transformers 5.10: its text config does).
    config_eos = getattr(model.config, "eos_token_id", None)
    for source in (model.generation_config.eos_token_id, config_eos, tokenizer.eos_token_id):
        if isinstance(source, int):
            ids.add(source)
        elif source is not None:
            ids.update(source)
    if not ids:
        raise ValueError("the model and tokenizer name no end-of-sequence token")
    return frozenset(ids)


#: The most prompt tokens (rows times the longest prompt, padding included) one forward pass of a batch takes, as
#: vLLM's ``max_num_batched_tokens`` bounds its passes: a batch of long prompts runs as several smaller ones
#: rather than holding every row's activations and cache at once.
DEFAULT_MAX_BATCH_TOKENS = 32_768
#: The tokens whose keys and values ``serve-model`` and the ``hf:`` policy keep for prefix reuse (SmolLM2-135M in
#: float32: 46 KB a token, 1.5 GB in all).
DEFAULT_PREFIX_CACHE_TOKENS = 32_768


class Batcher:
    """Collects concurrent requests into batches for one ``Generator``.

    Coroutines ``await submit(request)``. A background task takes up to
    ``max_batch_size`` queued requests, waiting at most ``batch_wait_ms`` after the first
    for more to arrive, and runs them as one batch in a worker thread, so the event loop
    never blocks on the model; requests that arrive meanwhile form the next batch. A batch
    whose prompts pad to more than ``max_batch_tokens`` (None: no limit) runs as several
    generations (:func:`token_batches`), which bounds the memory of a pass. A
    request with a ``RequestError`` fails alone, not its batch. Use it from one event
    loop at a time.
    """

    def __init__(
        self,
        generator: Generator,
        max_batch_size: int = 32,
        batch_wait_ms: float = 5.0,
        max_batch_tokens: int | None = DEFAULT_MAX_BATCH_TOKENS,
    ) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if max_batch_tokens is not None and max_batch_tokens < 1:
            raise ValueError(f"max_batch_tokens must be None or >= 1, got {max_batch_tokens}")
        self.generator = generator
        self.max_batch_size = max_batch_size
        self.batch_wait_ms = batch_wait_ms
        self.max_batch_tokens = max_batch_tokens
        #: Batches and requests run so far.
        self.batches = 0
        self.requests = 0
        self._queue: deque[tuple[Request, asyncio.Future[Completion]]] = deque()
        self._running: list[tuple[Request, asyncio.Future[Completion]]] = []
        self._arrived = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentgym-generate")
        self._closed = False

    async def submit(self, request: Request) -> Completion:
        """Queue a request and wait for its completion."""
        if self._closed:
            raise RuntimeError("the batcher is closed")
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._arrived = asyncio.Event()
            self._task = loop.create_task(self._run())
        future: asyncio.Future[Completion] = loop.create_future()
        self._queue.append((request, future))
        self._arrived.set()
        return await future

    async def aclose(self) -> None:
        """Stop the batcher: queued and running requests fail, and the worker thread ends."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for _, future in [*self._queue, *self._running]:
            if not future.done():
                future.set_exception(RuntimeError("the batcher was closed"))
        self._queue.clear()
        await asyncio.to_thread(self._executor.shutdown)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._arrived.wait()
            deadline = loop.time() + self.batch_wait_ms / 1000
            while len(self._queue) < self.max_batch_size and (left := deadline - loop.time()) > 0:
                self._arrived.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._arrived.wait(), left)
            size = min(len(self._queue), self.max_batch_size)
            batch = [self._queue.popleft() for _ in range(size)]
            if not self._queue:
                self._arrived.clear()
            # Callers that gave up (cancelled) no longer need their request run.
            self._running = [(request, future) for request, future in batch if not future.done()]
            if self._running:
                await self._run_batch()
            self._running = []

    async def _run_batch(self) -> None:
        requests = [request for request, _ in self._running]
        try:
            results = await asyncio.get_running_loop().run_in_executor(self._executor, self._generate, requests)
        except Exception as error:  # the model failed: every request of the batch fails with it
            results = [error] * len(requests)
        self.batches += 1
        self.requests += len(requests)
        for (_, future), result in zip(self._running, results):
            if future.done():
                continue
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)

    def _generate(self, requests: list[Request]) -> list[Completion | Exception]:
        """Encode each request on its own (a bad one fails alone), then generate the rest in as few batches as
        :attr:`max_batch_tokens` allows."""
        results: list[Completion | Exception | None] = [None] * len(requests)
        prompts: dict[int, list[int]] = {}
        for index, request in enumerate(requests):
            try:
                prompts[index] = self.generator.encode(request)
            except RequestError as error:
                results[index] = error
        indices = list(prompts)
        for chunk in token_batches([len(prompts[index]) for index in indices], self.max_batch_tokens):
            rows = [indices[position] for position in chunk]
            completions = self.generator.generate_tokens(
                [prompts[row] for row in rows],
                [requests[row].params for row in rows],
                [requests[row].on_tokens for row in rows],
            )
            for row, completion in zip(rows, completions):
                results[row] = completion
        return results  # type: ignore[return-value]


def token_batches(lengths: Sequence[int], max_tokens: int | None) -> list[list[int]]:
    """The positions of prompts of ``lengths`` split into batches whose padded prefill (rows times the longest
    prompt) holds at most ``max_tokens`` tokens, shortest prompts first (less padding); a longer prompt goes alone.

    >>> token_batches([5, 1, 3, 8], 10)
    [[1, 2], [0], [3]]
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    if max_tokens is None:
        return [order] if order else []
    batches: list[list[int]] = []
    for position in order:
        # Sorted by length: the newest prompt is the batch's longest.
        if batches and (len(batches[-1]) + 1) * lengths[position] <= max_tokens:
            batches[-1].append(position)
        else:
            batches.append([position])
    return batches
