"""A tiny randomly initialised chat model, built offline for tests (not a test module).

``build_tiny_model(folder)`` trains a small byte-level BPE tokenizer on the spot, wraps it
with a chat template, creates a 2-layer Llama with random weights, and saves both with
``save_pretrained`` so that ``Generator.from_pretrained(folder)`` loads them like any
model from the hub. The weights are seeded, so the model is the same on every build.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]

#: Roles the chat template knows; any other role makes it raise.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unknown role: ' + message['role']) }}"
    "{% endif %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + eos_token + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)

_CORPUS = [
    "You are in a maze. Move up, down, left or right to reach the goal.",
    "Action: up\nAction: down\nAction: left\nAction: right",
    "The frozen lake is slippery; holes end the episode. Goal at row 3, column 3.",
    "Guess the 5-letter word: crane, slate, audio, pious, fjord. Feedback: G Y . . G",
    "Push the boxes (#, $, @, .) onto the targets! Steps: 0 1 2 3 4 5 6 7 8 9 10 42 100.",
    "search[red running shoes] click[Buy Now] think: I should go left, then up.",
    "Observation: you see a wall to the north, a door to the east, and a key (gold).",
    "Thought: the answer is 12 + 30 = 42; reward = 1.0, done = true? yes/no.",
]


#: A chat template in Qwen2.5's format with tool calls (see the file).
TOOLS_CHAT_TEMPLATE = Path(__file__).with_name("data").joinpath("qwen2_5_tools_template.jinja")


def build_tiny_model(folder: Path, context_length: int = 256, tools: bool = False) -> Path:
    """Build and save the tiny model and its tokenizer in ``folder``; return ``folder``.

    ``tools=True`` gives the tokenizer Qwen2.5's chat format instead (``<|im_start|>``,
    ``<|im_end|>`` as end of turn, ``<tool_call>`` blocks; :data:`TOOLS_CHAT_TEMPLATE`).
    """
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer()
    if tools:
        tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
        tokenizer.add_tokens(["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"])
        tokenizer.eos_token = "<|im_end|>"
        tokenizer.chat_template = TOOLS_CHAT_TEMPLATE.read_text(encoding="utf-8")
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=context_length,
        # Large random weights give peaked next-token distributions, so greedy decoding
        # does not hinge on ties that float rounding could break either way.
        initializer_range=0.2,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _train_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer of a few hundred tokens, trained on ``_CORPUS``."""
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(_CORPUS * 4, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
    )
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIAL_TOKENS[3:]})
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer
