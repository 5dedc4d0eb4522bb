"""Vision-language models (image-text-to-text) in process: chats with screenshots in, replies out.

:func:`load_generator` loads a model folder the way ``AutoProcessor`` and
``AutoModelForImageTextToText`` load it, and returns a :class:`VisionGenerator` for a VLM
(its ``config.json`` has a ``vision_config``) or a text :class:`~agentgym.llm.generation.Generator`.
A chat's OpenAI-style ``image_url`` parts (base64 data URLs, as
:class:`~agentgym.wrappers.ChatWrapper` emits them) are decoded, rendered by the model's chat
template as its image placeholders, and run through the model's image processor.

Processors: any model whose ``AutoProcessor`` takes ``images=`` (LLaVA-style models, for one).
Qwen2-VL and Qwen2.5-VL folders are driven by their image processor (``Qwen2VLImageProcessorPil``,
no torchvision needed) and tokenizer directly (:class:`QwenVLProcessor`), because transformers'
``Qwen2VLProcessor`` also builds a video processor, which fails without torchvision.

Each request is decoded alone (one row, no padding), so that the model computes its positions
(Qwen's multimodal rotary positions, M-RoPE) from its own inputs; requests still share the
:class:`~agentgym.llm.generation.Batcher`'s queue (batching VLM rows is not done yet).
Needs the ``hf`` extra (Pillow included).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from jinja2 import TemplateError
from transformers import AutoModelForImageTextToText, AutoProcessor, AutoTokenizer, PreTrainedModel

from agentgym.contract.tool_parsing import template_messages
from agentgym.images import ImageError, decode_image, image_url, is_image_part
from agentgym.llm.generation import (
    Completion,
    Generator,
    Quantization,
    Request,
    RequestError,
    SamplingParams,
    TokenListener,
    autocast,
    resolve_device_and_dtype,
)

#: Processor outputs that have one entry per token: rebuilt for a whole sequence by ``model_inputs``.
PER_TOKEN_INPUTS = ("input_ids", "attention_mask", "mm_token_type_ids")
#: The model config fields naming image and video placeholder tokens (never sampled).
PLACEHOLDER_TOKEN_FIELDS = ("image_token_id", "image_token_index", "video_token_id", "video_token_index")
#: Model types driven by :class:`QwenVLProcessor` (image processor and tokenizer, no video processor).
QWEN_VL_MODEL_TYPES = frozenset({"qwen2_vl", "qwen2_5_vl"})


def is_vision_model(path: str | Path) -> bool:
    """Whether the model folder ``path`` holds a vision-language model (its config has a ``vision_config``)."""
    config = Path(path) / "config.json"
    return config.is_file() and "vision_config" in json.loads(config.read_text(encoding="utf-8"))


def load_generator(
    path: str | Path,
    device: str = "auto",
    dtype: str | torch.dtype | None = None,
    quantize: Quantization | None = None,
    prefix_cache_tokens: int = 0,
) -> Generator:
    """A :class:`VisionGenerator` for a VLM folder, else a text ``Generator`` (see ``Generator.from_pretrained``;
    ``quantize`` and the prefix cache are for text models: a VLM's prompts carry images the cache cannot key)."""
    if is_vision_model(path):
        if quantize is not None:
            raise ValueError(f"quantize={quantize!r} is for text models; {path} is a vision-language model")
        return VisionGenerator.from_pretrained(path, device, dtype)
    return Generator.from_pretrained(path, device, dtype, quantize, prefix_cache_tokens)


class VisionPrompt(list):
    """A prompt's token ids (image placeholders expanded) with the model's image inputs (``inputs``) and,
    where known, the images themselves as data URLs (``image_urls``, in order: what a server is sent
    beside the ids to compute the same inputs)."""

    def __init__(self, ids: Sequence[int], inputs: Mapping[str, torch.Tensor], image_urls: Sequence[str] = ()) -> None:
        super().__init__(ids)
        self.inputs = dict(inputs)
        self.image_urls = list(image_urls)


def message_image_urls(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The data URLs of the ``image_url`` parts of ``messages``, in order."""
    return [
        image_url(part)
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if is_image_part(part)
    ]


class VisionProcessor:
    """A VLM's chat template, tokenizer and image processor, through its ``AutoProcessor``."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor
        self.tokenizer = processor.tokenizer

    def render(self, chat: list[dict[str, Any]], tools: Sequence[Mapping[str, Any]] | None) -> str:
        """The chat template's text of ``chat`` (image parts as ``{"type": "image"}``) with a generation prompt."""
        chat = [_parts_content(message) for message in chat]
        kwargs = {"tools": list(tools)} if tools else {}
        return self.processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False, **kwargs)

    def encode(self, text: str, images: list[Any]) -> tuple[list[int], dict[str, torch.Tensor]]:
        """Token ids of ``text`` with each image placeholder expanded, and the images' inputs of the model
        (per-token inputs such as ``mm_token_type_ids`` are left to :meth:`model_inputs`)."""
        features = self.processor(text=[text], images=images or None, return_tensors="pt", add_special_tokens=False)
        ids = features["input_ids"][0].tolist()
        self._token_types = "mm_token_type_ids" in features
        inputs = {key: value for key, value in features.items() if key not in PER_TOKEN_INPUTS}
        return ids, inputs

    def model_inputs(self, ids: Sequence[int], chunks: Sequence[Mapping[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """The model's image inputs for the token ids ``ids``, whose images were encoded in ``chunks``
        (one :meth:`encode` each, in order): the chunks concatenated image by image, and
        ``mm_token_type_ids`` where the model takes them."""
        chunks = [chunk for chunk in chunks if chunk]
        if not chunks:
            return {}
        inputs = {key: torch.cat([chunk[key] for chunk in chunks]) for key in chunks[0]}
        if getattr(self, "_token_types", False) or self.processor is None:
            inputs["mm_token_type_ids"] = (torch.tensor([list(ids)]) == self.image_token_id).long()
        return inputs

    def image_inputs(self, images: list[Any]) -> dict[str, torch.Tensor]:
        """The model's inputs for ``images`` alone (pixel values; Qwen's image grids), as :meth:`encode`
        computes them for a prompt holding these images: for a framework that sends token ids with the
        images beside them (verl's server calls, vLLM's token prompts)."""
        return dict(self.processor.image_processor(images=images, return_tensors="pt"))

    def image_tokens(self, inputs: Mapping[str, torch.Tensor]) -> int | None:
        """How many image tokens a prompt holding the images of ``inputs`` (:meth:`image_inputs`) has,
        where the processor says (Qwen-VL: from the image grids); None where it cannot be told."""
        return None

    @property
    def image_token_id(self) -> int:
        """The id of the token that stands for an image's features."""
        return self.tokenizer.convert_tokens_to_ids(getattr(self.processor, "image_token", "<image>"))

    def save_pretrained(self, folder: str | Path) -> None:
        """Save the processor (tokenizer, image processor, chat template) so that the folder loads again."""
        self.processor.save_pretrained(folder)


class QwenVLProcessor(VisionProcessor):
    """Qwen2-VL / Qwen2.5-VL inputs from the folder's image processor and tokenizer.

    As ``Qwen2VLProcessor`` does: each ``<|image_pad|>`` the chat template writes becomes as many
    as the image has merged patches (``grid_t * grid_h * grid_w / merge_size**2``), and
    ``mm_token_type_ids`` marks them (1) for the model's M-RoPE positions.
    """

    IMAGE_TOKEN = "<|image_pad|>"

    def __init__(self, tokenizer: Any, image_processor: Any, chat_template: str | None = None) -> None:
        self.processor = None
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.chat_template = chat_template or tokenizer.chat_template
        if not self.chat_template:
            raise ValueError("the model folder has no chat template (tokenizer_config.json or chat_template.jinja)")
        self._image_token_id = tokenizer.convert_tokens_to_ids(self.IMAGE_TOKEN)

    @property
    def image_token_id(self) -> int:
        return self._image_token_id

    def image_inputs(self, images: list[Any]) -> dict[str, torch.Tensor]:
        features = self.image_processor(images=images, return_tensors="pt")
        return {"pixel_values": features["pixel_values"], "image_grid_thw": features["image_grid_thw"]}

    def image_tokens(self, inputs: Mapping[str, torch.Tensor]) -> int | None:
        return int(inputs["image_grid_thw"].prod(-1).sum()) // self.image_processor.merge_size**2

    def save_pretrained(self, folder: str | Path) -> None:
        self.tokenizer.save_pretrained(folder)
        self.image_processor.save_pretrained(folder)
        if self.chat_template != self.tokenizer.chat_template:
            (Path(folder) / "chat_template.jinja").write_text(self.chat_template, encoding="utf-8")

    @classmethod
    def from_pretrained(cls, path: str | Path) -> QwenVLProcessor:
        """The tokenizer, image processor and chat template saved in the folder ``path``."""
        # From its module: without torchvision, transformers 5.10 (verl's pin) makes the top-level name a stub.
        from transformers.models.auto.image_processing_auto import AutoImageProcessor

        folder = Path(path)
        template = None
        if (folder / "chat_template.jinja").is_file():
            template = (folder / "chat_template.jinja").read_text(encoding="utf-8")
        elif (folder / "chat_template.json").is_file():
            template = json.loads((folder / "chat_template.json").read_text(encoding="utf-8"))["chat_template"]
        return cls(AutoTokenizer.from_pretrained(folder), AutoImageProcessor.from_pretrained(folder), template)

    def render(self, chat: list[dict[str, Any]], tools: Sequence[Mapping[str, Any]] | None) -> str:
        kwargs = {"tools": list(tools)} if tools else {}
        return self.tokenizer.apply_chat_template(
            chat, chat_template=self.chat_template, add_generation_prompt=True, tokenize=False, **kwargs
        )

    def encode(self, text: str, images: list[Any]) -> tuple[list[int], dict[str, torch.Tensor]]:
        inputs: dict[str, torch.Tensor] = {}
        if text.count(self.IMAGE_TOKEN) != len(images):
            raise RequestError(
                f"the chat template wrote {text.count(self.IMAGE_TOKEN)} image placeholders for {len(images)} images"
            )
        if images:
            inputs = self.image_inputs(images)
            merge = self.image_processor.merge_size**2
            pieces = text.split(self.IMAGE_TOKEN)
            text = pieces[0] + "".join(
                self.IMAGE_TOKEN * (int(grid.prod()) // merge) + piece
                for grid, piece in zip(inputs["image_grid_thw"], pieces[1:])
            )
        return self.tokenizer(text, add_special_tokens=False).input_ids, inputs


def load_processor(path: str | Path) -> VisionProcessor:
    """The processor of the VLM folder ``path`` (Qwen-VL folders: :class:`QwenVLProcessor`)."""
    model_type = json.loads((Path(path) / "config.json").read_text(encoding="utf-8")).get("model_type")
    if model_type in QWEN_VL_MODEL_TYPES:
        return QwenVLProcessor.from_pretrained(path)
    return VisionProcessor(AutoProcessor.from_pretrained(path))


def chat_images(messages: Sequence[Mapping[str, Any]], decode: bool = True) -> tuple[list[dict[str, Any]], list[Any]]:
    """The chat as chat templates take it (``image_url`` parts as ``{"type": "image"}``, tool-call
    arguments as mappings) and its images (PIL, in order; none when not ``decode``);
    :class:`RequestError` for a bad message or image."""
    images: list[Any] = []
    chat = []
    for message in template_messages(messages):
        if not isinstance(message.get("role"), str):
            raise RequestError(f"a message must have a string role, got {message!r}")
        content = message.get("content")
        if isinstance(content, list):
            parts = []
            for index, part in enumerate(content):
                if is_image_part(part) and not decode:
                    parts.append({"type": "image"})
                elif is_image_part(part):
                    try:
                        images.append(decode_image(image_url(part)))
                    except ImageError as error:
                        raise RequestError(f"image {len(images) + 1} (message part {index}): {error}") from None
                    parts.append({"type": "image"})
                elif isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
                    parts.append({"type": "text", "text": part["text"]})
                else:
                    raise RequestError(f"a content part must be text or image_url, got {str(part)[:100]!r}")
            message["content"] = parts
        elif not isinstance(content, str) and not (content is None and message.get("tool_calls")):
            raise RequestError(f"a message must have a string or list content, got {message!r}")
        chat.append(message)
    return chat, images


class VisionGenerator(Generator):
    """A vision-language model and its processor, generating for chats with images (module docstring).

    Plain-text prompts and chats without images work as with a text ``Generator``.
    """

    def __init__(self, model: PreTrainedModel, processor: VisionProcessor, compute_dtype: torch.dtype | None = None):
        super().__init__(model, processor.tokenizer, compute_dtype)
        self.processor = processor
        text_config = model.config.get_text_config()
        self.context_length = getattr(text_config, "max_position_embeddings", None)
        # A sampled image (or video) placeholder would stand for features no image provides.
        placeholders = (getattr(model.config, name, None) for name in PLACEHOLDER_TOKEN_FIELDS)
        self.banned_token_ids = sorted({token for token in placeholders if isinstance(token, int)})
        #: M-RoPE models' (Qwen-VL's) position function: (3, rows, tokens) positions from ids, image grids
        #: and the attention mask; None for models with plain 1-D positions.
        self.rope_index = next(
            (module.get_rope_index for module in model.modules() if hasattr(module, "get_rope_index")), None
        )

    @classmethod
    def from_pretrained(
        cls, path: str | Path, device: str = "auto", dtype: str | torch.dtype | None = None
    ) -> VisionGenerator:
        """Load the VLM and its processor from the folder ``path`` (device and dtype as ``Generator``'s)."""
        device, dtype = resolve_device_and_dtype(device, dtype)
        processor = load_processor(path)
        model = AutoModelForImageTextToText.from_pretrained(path, dtype=dtype).to(device)
        return cls(model, processor)

    def encode(self, request: Request) -> list[int]:
        """The prompt's ids; a chat's images are decoded and processed (a :class:`VisionPrompt`)."""
        if isinstance(request.prompt, str):
            return super().encode(request)
        chat, images = chat_images(request.prompt)
        try:
            text = self.processor.render(chat, request.tools)
        except TemplateError as error:
            raise RequestError(f"the chat template rejected the messages: {error}") from error
        try:
            ids, inputs = self.processor.encode(text, images)
        except (ValueError, TypeError) as error:
            raise RequestError(f"the model's processor rejected the images: {error}") from error
        if not ids:
            raise RequestError("the prompt is empty")
        if self.context_length is None and request.params.max_new_tokens is None:
            raise RequestError("max_new_tokens is required: the model's context length is unknown")
        self.check_length(ids)
        return VisionPrompt(ids, self.processor.model_inputs(ids, [inputs]))

    @torch.inference_mode()
    def generate_tokens(
        self,
        prompts: Sequence[list[int]],
        params: Sequence[SamplingParams],
        listeners: Sequence[TokenListener | None] | None = None,
    ) -> list[Completion]:
        """One completion per prompt, the batch decoded together (prompts left-padded, their images
        concatenated in row order, as a processor batches them)."""
        rows = self._rows(prompts, params, listeners)
        with autocast(self.device, self.compute_dtype):
            self._sample_rows(rows, self.batch_inputs(prompts))
        return self._completions(rows, prompts)

    def batch_inputs(self, prompts: Sequence[list[int]]) -> dict[str, Any]:
        """The first forward pass's inputs for ``prompts``: left-padded ids, attention mask and per-token
        inputs; each image input concatenated over the rows that have it. Positions are passed for
        models with plain 1-D positions; M-RoPE models (Qwen-VL) compute theirs from ids, mask and image grids."""
        width = max(len(prompt) for prompt in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        per_token: dict[str, torch.Tensor] = {}
        images: dict[str, list[torch.Tensor]] = {}
        for row, prompt in enumerate(prompts):
            start = width - len(prompt)
            input_ids[row, start:] = torch.tensor(list(prompt))
            attention_mask[row, start:] = 1
            for key, value in getattr(prompt, "inputs", {}).items():
                if key in PER_TOKEN_INPUTS:
                    padded = per_token.setdefault(key, torch.zeros((len(prompts), width), dtype=value.dtype))
                    padded[row, start:] = value[0]
                else:
                    images.setdefault(key, []).append(value)
        inputs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask, **per_token}
        for key, values in images.items():
            value = torch.cat(values)
            inputs[key] = value.to(self.model.dtype) if value.is_floating_point() else value
        inputs = {key: value.to(self.device) for key, value in inputs.items()}
        positions = (inputs["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        if self.rope_index is None:
            inputs["position_ids"] = positions
        elif "image_grid_thw" in inputs:
            token_types = inputs.get("mm_token_type_ids", torch.zeros_like(inputs["input_ids"]))
            inputs["position_ids"], _ = self.rope_index(
                inputs["input_ids"],
                mm_token_type_ids=token_types,
                image_grid_thw=inputs["image_grid_thw"],
                attention_mask=inputs["attention_mask"],
            )
        else:  # no image in the batch: M-RoPE's three axes are the text positions
            inputs["position_ids"] = positions.expand(3, -1, -1)
        return inputs


def _parts_content(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with string content as one text part, as multimodal chat templates iterate it
    (tool calls and tool results stay as they are)."""
    if isinstance(message.get("content"), str) and message.get("role") != "tool" and not message.get("tool_calls"):
        return {**message, "content": [{"type": "text", "text": message["content"]}]}
    return message
