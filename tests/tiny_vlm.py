"""Tiny randomly initialised vision-language models, built offline for tests (not a test module).

``build_tiny_qwen2_vl(folder)`` saves a Qwen2-VL (real architecture: vision tower with patch
merger, M-RoPE text model) with a few small layers, its tokenizer (Qwen's special tokens,
a ChatML chat template that writes ``<|vision_start|><|image_pad|><|vision_end|>`` per image, as
Qwen2-VL's does) and a ``Qwen2VLImageProcessorPil`` with a small pixel budget.
``build_tiny_llava(folder)`` saves a LLaVA (CLIP vision tower, Llama text model) with its
``LlavaProcessor`` (``CLIPImageProcessorPil``, 28x28 crops: 4 image tokens). Both load with
``AutoModelForImageTextToText.from_pretrained(folder)``, as a user's downloaded folder would.
Weights are seeded, so a build is the same every time. No weights are downloaded: nothing can
be here, so the models are random, and tests check plumbing, not answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tiny_model import _train_tokenizer
from transformers import (
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    Qwen2VLConfig,
    Qwen2VLForConditionalGeneration,
)

#: Qwen2-VL's chat format (ChatML; an image part becomes its vision placeholder).
QWEN_VL_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
#: A LLaVA-style template over the tiny model's role tokens (``<image>`` per image part).
LLAVA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<|' + message['role'] + '|>\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{{ '<image>\n' }}{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ eos_token + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)
QWEN_TOKENS = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]


def _text_config(vocabulary: int, context_length: int, initializer_range: float = 0.2) -> dict:
    return {
        "vocab_size": vocabulary,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": context_length,
        # Large random weights (the default): peaked next-token distributions, so greedy decoding is stable.
        "initializer_range": initializer_range,
    }


def build_tiny_qwen2_vl(
    folder: Path,
    context_length: int = 8192,
    max_pixels: int = 28 * 28 * 64,
    initializer_range: float = 0.2,
    text: dict | None = None,
    vision: dict | None = None,
) -> Path:
    """Save the tiny Qwen2-VL, its tokenizer and image processor in ``folder``; return ``folder``.

    A small ``initializer_range`` gives flat next-token distributions (exploration, for learning runs).
    ``text`` and ``vision`` override the text and vision configs' sizes (larger models of the same
    architecture, as the GPU benchmark builds).
    """
    from transformers.models.qwen2_vl import Qwen2VLImageProcessorPil

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer()
    tokenizer.add_special_tokens(
        {"additional_special_tokens": ["<|system|>", "<|user|>", "<|assistant|>", *QWEN_TOKENS]}
    )
    tokenizer.eos_token = "<|im_end|>"
    tokenizer.chat_template = QWEN_VL_CHAT_TEMPLATE
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in QWEN_TOKENS}
    text = _text_config(len(tokenizer), context_length, initializer_range) | (text or {})
    # M-RoPE splits half of each head's rotary dimensions over time, height and width (Qwen2-VL: 1/4, 3/8, 3/8).
    half = text["hidden_size"] // text["num_attention_heads"] // 2
    section = [half // 4, (half - half // 4) // 2]
    section.append(half - sum(section))
    text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": section}
    text |= {
        "eos_token_id": ids["<|im_end|>"],
        "bos_token_id": tokenizer.bos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    config = Qwen2VLConfig(
        text_config=text,
        vision_config={"depth": 1, "embed_dim": 32, "num_heads": 2, "patch_size": 14, **(vision or {})}
        | {"hidden_size": text["hidden_size"]},
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    torch.manual_seed(0)
    Qwen2VLForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    Qwen2VLImageProcessorPil(min_pixels=28 * 28 * 4, max_pixels=max_pixels).save_pretrained(folder)
    return folder


def build_tiny_llava(folder: Path, context_length: int = 8192, qwen_chat_template: str | None = None) -> Path:
    """Save the tiny LLaVA and its processor in ``folder``; return ``folder``.

    ``qwen_chat_template`` (a Qwen-VL chat template, e.g. TRL's ``qwen3_vl.jinja``, whose tool calls
    TRL parses) gives it Qwen's chat format instead: ``<|im_start|>``/``<|im_end|>`` turns,
    ``<tool_call>`` blocks, and ``<|image_pad|>`` as the image token.
    """
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer()
    image_token, chat_template = "<image>", LLAVA_CHAT_TEMPLATE
    if qwen_chat_template is None:
        tokenizer.add_special_tokens(
            {"additional_special_tokens": ["<|system|>", "<|user|>", "<|assistant|>", "<image>"]}
        )
    else:
        tokenizer.add_special_tokens({"additional_special_tokens": QWEN_TOKENS})
        tokenizer.add_tokens(["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"])
        tokenizer.eos_token = "<|im_end|>"
        image_token, chat_template = "<|image_pad|>", qwen_chat_template
    image_processor = CLIPImageProcessorPil(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=14,
        vision_feature_select_strategy="default",
        chat_template=chat_template,
        image_token=image_token,
        num_additional_image_tokens=1,
    )
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=28,
            patch_size=14,
        ),
        text_config=LlamaConfig(**_text_config(len(tokenizer), context_length)),
        image_token_id=tokenizer.convert_tokens_to_ids(image_token),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def image_only_qwen2_vl_processor(folder: Path, chat_template: str | None = None) -> Any:
    """The tiny Qwen2-VL's ``Qwen2VLProcessor`` (a ``ProcessorMixin``, as TRL requires), built without
    its video processor: transformers builds that with torchvision, which cannot be installed here
    (see the module docstring), and checking the class of a missing one fails the same way."""
    from transformers import AutoTokenizer
    from transformers.models.qwen2_vl import Qwen2VLImageProcessorPil, Qwen2VLProcessor

    class ImageOnlyQwen2VLProcessor(Qwen2VLProcessor):
        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            if argument_name == "video_processor" and argument is None:
                return None
            return super().check_argument_for_proper_class(argument_name, argument)

    tokenizer = AutoTokenizer.from_pretrained(folder, padding_side="left")
    return ImageOnlyQwen2VLProcessor(
        image_processor=Qwen2VLImageProcessorPil.from_pretrained(folder),
        tokenizer=tokenizer,
        video_processor=None,
        chat_template=chat_template or tokenizer.chat_template,
    )
